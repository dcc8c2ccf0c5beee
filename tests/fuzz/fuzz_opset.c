/* libFuzzer harness: what `convert` does with a file. Load, infer, then
 * convert a clone to each of several opsets (up and down). Invariants
 * (oxf_fail): a conversion either succeeds or is refused with a message
 * (never out of memory on a small input); a model that passes the checker
 * still passes it after a successful conversion; the converted model
 * saves, loads back, and a second conversion to the same opset changes
 * nothing it reports. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "onnxscope/check.h"
#include "onnxscope/infer.h"
#include "onnxscope/io.h"
#include "onnxscope/opset.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    oxf_dir();
    return 0;
}

static bool checks(const ox_model *m, char *first, size_t len)
{
    ox_check_report rep;
    bool ok = ox_check_model(m, &rep) == OX_OK;
    if (!ok && first)
        snprintf(first, len, "%s", rep.n_issues ? rep.issues[0].msg : "?");
    ox_check_report_free(&rep);
    return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ox_model *m = NULL;
    ox_error err = {0};
    if (ox_load_buffer(data, size, oxf_dir(), &m, &err) != OX_OK)
        return 0;
    ox_infer_model(m, NULL, &err);
    bool valid = checks(m, NULL, 0);
    static const int targets[] = {7, 9, 11, 13, 17, 18, 23};
    for (size_t t = 0; t < sizeof targets / sizeof *targets; t++) {
        ox_model *c = ox_model_clone(m);
        if (!c)
            break;
        ox_error cerr = {0};
        ox_status st = ox_opset_convert(c, targets[t], NULL, &cerr);
        if (st != OX_OK && !cerr.msg[0])
            oxf_fail("opset %d: refused without a message", targets[t]);
        if (st == OX_OK) {
            char why[256];
            if (valid && !checks(c, why, sizeof why))
                oxf_fail("opset %d: the converted model fails the checker: %s", targets[t],
                         why);
            void *buf = NULL;
            size_t len = 0;
            ox_model *back = NULL;
            if (ox_save_buffer(c, &buf, &len, &cerr) == OX_OK) {
                if (ox_load_buffer(buf, len, oxf_dir(), &back, &cerr) != OX_OK)
                    oxf_fail("opset %d: the converted model does not load: %s", targets[t],
                             cerr.msg);
                ox_opset_report rep;
                if (ox_opset_convert(back, targets[t], &rep, &cerr) != OX_OK ||
                    rep.nodes_adapted || rep.nodes_added)
                    oxf_fail("opset %d: converting again changed the model", targets[t]);
                ox_model_free(back);
            }
            free(buf);
        }
        ox_model_free(c);
    }
    ox_model_free(m);
    return 0;
}
