/* `--device cpu|cuda` and `--precision fp32|fp16` of the executing commands
 * (run, bench, optimize --check): parsing, and the probe that turns an
 * unusable GPU into one line and exit code OX_EXIT_NO_DEVICE before any
 * model is loaded. */
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

int ox_cli_precision(const char *arg)
{
    if (!strcmp(arg, "fp32"))
        return 0;
    if (!strcmp(arg, "fp16")) {
        /* Said plainly rather than silently running float32. */
        ox_cli_error(NULL, "--precision fp16: not implemented yet (the CUDA backend runs "
                     "float32; float16 nodes stay on the CPU)");
        return 2;
    }
    ox_cli_error(NULL, "--precision %s: unknown precision (fp32 or fp16)", arg);
    return 2;
}
