/* `--device cpu|cuda` and `--precision fp32|fp16` of the executing commands
 * (run, bench, optimize --check): parsing, and the probe that turns an
 * unusable GPU into one line and exit code OX_EXIT_NO_DEVICE before any
 * model is loaded. --precision fp16 is taken with --device cuda only
 * (docs/EXECUTOR.md "fp16"). */
#include <string.h>

#include "cli/commands.h"
#include "onnxscope/device.h"

int ox_cli_device(const char *arg, ox_device *out)
{
    if (!ox_device_parse(arg, out)) {
        ox_cli_error(NULL, "--device %s: unknown device (cpu or cuda)", arg);
        return 2;
    }
    if (*out == OX_DEVICE_CUDA) {
        char why[512];
        if (ox_cuda_probe(why, sizeof why) != OX_CUDA_AVAILABLE) {
            ox_cli_error(NULL, "--device cuda: %s", why);
            return OX_EXIT_NO_DEVICE;
        }
    }
    return 0;
}

int ox_cli_precision(const char *arg, bool *fp16)
{
    if (!strcmp(arg, "fp32") || !strcmp(arg, "fp16")) {
        *fp16 = !strcmp(arg, "fp16");
        return 0;
    }
    ox_cli_error(NULL, "--precision %s: unknown precision (fp32 or fp16)", arg);
    return 2;
}

int ox_cli_precision_check(ox_device device, bool fp16)
{
    /* fp16 is a mode of the CUDA backend (float16 GEMM/Conv operands with
     * float32 accumulation); the CPU executor computes in float32. Refused
     * rather than silently running float32. */
    if (fp16 && device != OX_DEVICE_CUDA) {
        ox_cli_error(NULL, "--precision fp16: needs --device cuda (the CPU executor computes in "
                     "float32; for a float16 model on the CPU convert it with `onnxscope optimize "
                     "MODEL --passes +to_fp16 -o OUT.onnx`)");
        return 2;
    }
    return 0;
}
