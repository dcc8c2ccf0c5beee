/* libFuzzer harness: what `optimize` does with a file. Load, infer, then
 * for every level (basic, extended, all) and target (onnx, ort): run the
 * pass pipeline on a clone, check the result, save it and load it back.
 * Invariants (oxf_fail): a model that passes the checker still passes it
 * after the passes; a saved model loads again, and is a fixed point:
 * saving what was loaded and loading that gives an equal model. (The first
 * reload need not equal the in-memory result: the saver writes the
 * declared type of a graph output where inference disagrees with it.)
 * The all/ort result goes through the file writer with external data, the
 * others through memory. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "onnxscope/check.h"
#include "onnxscope/infer.h"
#include "onnxscope/io.h"
#include "onnxscope/passes.h"

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

static void save_reload(const ox_model *opt, bool via_file, const char *cfg)
{
    ox_model *back = NULL;
    ox_error err = {0};
    if (via_file) {
        char out[128], data[140];
        snprintf(out, sizeof out, "%s/out.onnx", oxf_dir());
        snprintf(data, sizeof data, "%s.data", out);
        ox_save_opts so = {.external_threshold = 256, .force_external = true};
        ox_status st = ox_save(opt, out, &so, &err);
        if (st == OX_OK && ox_load(out, NULL, &back, &err) != OX_OK)
            oxf_fail("%s: the saved model does not load: %s", cfg, err.msg);
        unlink(out);
        unlink(data);
        if (st != OX_OK)
            return;
    } else {
        void *buf = NULL;
        size_t len = 0;
        if (ox_save_buffer(opt, &buf, &len, &err) != OX_OK) {
            free(buf);
            return;
        }
        if (ox_load_buffer(buf, len, oxf_dir(), &back, &err) != OX_OK)
            oxf_fail("%s: the saved model does not load: %s", cfg, err.msg);
        free(buf);
    }
    void *buf = NULL;
    size_t len = 0;
    ox_model *again = NULL;
    if (ox_save_buffer(back, &buf, &len, &err) != OX_OK)
        oxf_fail("%s: a reloaded model does not save: %s", cfg, err.msg);
    if (ox_load_buffer(buf, len, oxf_dir(), &again, &err) != OX_OK)
        oxf_fail("%s: a reloaded and saved model does not load: %s", cfg, err.msg);
    ox_error eerr = {0};
    if (!ox_model_equal(back, again, &eerr))
        oxf_fail("%s: save and load are not a fixed point: %s", cfg, eerr.msg);
    free(buf);
    ox_model_free(again);
    ox_model_free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ox_model *m = NULL;
    ox_error err = {0};
    if (ox_load_buffer(data, size, oxf_dir(), &m, &err) != OX_OK)
        return 0;
    if (ox_infer_model(m, NULL, &err) != OX_OK) {
        ox_model_free(m);
        return 0;
    }
    bool valid = checks(m, NULL, 0);
    for (int level = OX_LEVEL_BASIC; level <= OX_LEVEL_ALL; level++) {
        for (int target = OX_TARGET_ONNX; target <= OX_TARGET_ORT; target++) {
            char cfg[64];
            snprintf(cfg, sizeof cfg, "%s/%s", ox_pass_level_name((ox_pass_level)level),
                     ox_pass_target_name((ox_pass_target)target));
            ox_pass_manager *pm = ox_pm_new((ox_pass_level)level, (ox_pass_target)target);
            ox_model *opt = ox_model_clone(m);
            ox_pass_report rep = {0};
            ox_error perr = {0};
            if (pm && opt && ox_pm_run(pm, opt, &rep, &perr) == OX_OK) {
                char why[256];
                if (valid && !checks(opt, why, sizeof why))
                    oxf_fail("%s: the optimized model fails the checker: %s", cfg, why);
                save_reload(opt, level == OX_LEVEL_ALL && target == OX_TARGET_ORT, cfg);
            }
            ox_pass_report_free(&rep);
            ox_model_free(opt);
            ox_pm_free(pm);
        }
    }
    /* The opt-in float16 conversion (issue 15), on top of the basic level. */
    {
        ox_pass_manager *pm = ox_pm_new(OX_LEVEL_BASIC, OX_TARGET_ONNX);
        ox_model *opt = ox_model_clone(m);
        ox_error perr = {0};
        if (pm && opt && ox_pm_only(pm, "+to_fp16", &perr) == OX_OK &&
            ox_pm_run(pm, opt, NULL, &perr) == OX_OK) {
            char why[256];
            if (valid && !checks(opt, why, sizeof why))
                oxf_fail("basic+to_fp16: the optimized model fails the checker: %s", why);
            save_reload(opt, false, "basic+to_fp16");
        }
        ox_model_free(opt);
        ox_pm_free(pm);
    }
    ox_model_free(m);
    return 0;
}
