/* Devices the executor runs on: the CPU (always) and, in a build with the
 * CUDA toolkit, an NVIDIA GPU (docs/EXECUTOR.md "CUDA backend"). The binary
 * built with CUDA starts anywhere: the driver is looked for only when a
 * caller probes, and every front end probes when `--device cuda` is asked
 * for, reporting the one-line reason and exiting OX_EXIT_NO_DEVICE. */
#ifndef ONNXSCOPE_DEVICE_H
#define ONNXSCOPE_DEVICE_H

#include <stdbool.h>
#include <stddef.h>

typedef enum { OX_DEVICE_CPU = 0, OX_DEVICE_CUDA = 1 } ox_device;

typedef enum {
    OX_CUDA_AVAILABLE = 0,
    OX_CUDA_NOT_BUILT,   /* this binary was built without the CUDA toolkit */
    OX_CUDA_NO_DRIVER,   /* no (or too old a) NVIDIA driver on this machine */
    OX_CUDA_NO_DEVICE,   /* a driver but no usable GPU */
    OX_CUDA_FAILED,      /* the runtime failed otherwise (message says how) */
} ox_cuda_state;

/* Exit code of every command when the device asked for is not available. */
#define OX_EXIT_NO_DEVICE 4

/* Probes once per process (later calls return the cached answer). line
 * gets, when available, the device ("NVIDIA H200, sm_90, 139.8 GiB, driver
 * 13.0") and otherwise the reason ("no CUDA driver on this machine (CUDA
 * error 35: ...)"), without a trailing newline. */
ox_cuda_state ox_cuda_probe(char *line, size_t len);

/* Whether cuBLAS (MatMul, Gemm, Attention) and cuDNN (Conv) could be
 * opened (dlopen, on first call); without one its ops run on the CPU. Both
 * false in a build without CUDA. */
void ox_cuda_libraries(bool *cublas, bool *cudnn);

/* "cpu" / "cuda" (case-sensitive); false for anything else. */
bool ox_device_parse(const char *s, ox_device *out);
const char *ox_device_name(ox_device d);

#endif
