/* Executor-private: the CPU stand-in for the CUDA device (emulate.c), for
 * tests only: ONNXSCOPE_CUDA_EMULATE=1 makes the probe report an emulated
 * device and runtime.c hand every call to these functions. */
#ifndef ONNXSCOPE_EXEC_CUDA_EMULATE_H
#define ONNXSCOPE_EXEC_CUDA_EMULATE_H

#include "onnxscope/exec.h"
#include "place.h"

bool ox_cuda_emu_enabled(void);
ox_status ox_cuda_emu_new(int n_slots, void **out, ox_error *err);
void ox_cuda_emu_free(void *r);
void ox_cuda_emu_configure(void *r, bool fp16, bool graphs);
bool ox_cuda_emu_fp16(const void *r);
ox_status ox_cuda_emu_begin(void *r, const ox_cuda_plan *p, ox_error *err);
ox_status ox_cuda_emu_run_node(void *r, const ox_cuda_plan *p, int k, const int *in_slot,
                               const int *out_slot, ox_rval *const *host_in, ox_error *err);
bool ox_cuda_emu_device_only(const void *r, int s);
ox_status ox_cuda_emu_fetch(void *r, const ox_cuda_plan *p, int s, ox_rval **out,
                            ox_error *err);
void ox_cuda_emu_release(void *r, int s);
ox_status ox_cuda_emu_end(void *r, ox_exec_stats *s, ox_error *err);

#endif
