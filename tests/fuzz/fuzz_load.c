/* libFuzzer harness: the loader (protobuf wire checks, conversion to the
 * IR, external data against oxf_dir()), strict and keep_going as `check`
 * loads, then the model's clone, which the TUI and optimize work on. */
#include <stdlib.h>

#include "fuzz_common.h"
#include "onnxscope/io.h"
#include "onnxscope/ir.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    oxf_dir();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (int keep_going = 0; keep_going <= 1; keep_going++) {
        ox_load_opts lo = {.keep_going = keep_going};
        ox_model *m = NULL;
        ox_error err = {0};
        if (ox_load_buffer_opts(data, size, oxf_dir(), &lo, &m, &err) != OX_OK) {
            if (m)
                oxf_fail("load failed (%s) but returned a model", err.msg);
            if (!err.msg[0])
                oxf_fail("load failed without a message");
            continue;
        }
        ox_model *c = ox_model_clone(m);
        if (c) {
            ox_error cerr = {0};
            if (!ox_model_equal(m, c, &cerr))
                oxf_fail("a clone differs from its model: %s", cerr.msg);
            ox_model_free(c);
        }
        ox_model_free(m);
    }
    return 0;
}
