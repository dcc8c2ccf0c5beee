/* Declared types survive optimization (issue 10 item 1), checked by ONNX
 * itself: every model of ../shared/models, ../shared/onnx-backend/{simple,
 * pytorch-*,light}, samples/ and our own If/Loop/symbolic-dim models
 * (declared_models.py) is optimized at each level, and the small ones by
 * every pass alone; declared_check.py then compares the declared types of
 * inputs, outputs and body outputs with the original's (kept or refined)
 * and runs onnx.checker.check_model(full_check=True) wherever the
 * original passes it. Needs /usr/bin/python3 with onnx; skips otherwise. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "onnxscope/infer.h"
#include "onnxscope/io.h"
#include "onnxscope/passes.h"
#include "testutil.h"

/* Pass-alone runs are for models up to this size (the rest get levels). */
#define SMALL_MODEL (512 * 1024)

static char tmp[64];

static bool have_python_onnx(void)
{
    return access("/usr/bin/python3", X_OK) == 0 &&
           system("/usr/bin/python3 -c 'import onnx, numpy' >/dev/null 2>&1") == 0;
}

static int py(const char *script, const char *args)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s/tests/passes/%s %s", ox_test_source(), script,
             args);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static int setup(void **state)
{
    (void)state;
    if (!have_python_onnx())
        return 0;
    snprintf(tmp, sizeof tmp, "/tmp/oxdeclXXXXXX");
    if (!mkdtemp(tmp))
        return -1;
    char args[256];
    snprintf(args, sizeof args, "%s", tmp);
    return py("declared_models.py", args) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    if (tmp[0]) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
        if (system(cmd) != 0)
            return -1;
    }
    return 0;
}

/* Runs pm on a copy of m and saves it when `always` or it rewrote
 * something; appends the pair to list. */
static void run_one(const ox_model *m, const char *src, ox_pass_manager *pm, const char *label,
                    bool always, FILE *list, int *n_out, int *failures)
{
    ox_model *o = ox_model_clone(m);
    ox_pass_report rep = {0};
    ox_error err = {0};
    assert_non_null(o);
    if (ox_pm_run(pm, o, &rep, &err) != OX_OK) {
        print_message("FAIL %s [%s]: %s\n", src, label, err.msg);
        (*failures)++;
    } else {
        bool rewrote = false;
        for (int i = 0; i < rep.n_passes; i++)
            rewrote |= rep.passes[i].rewrites > 0;
        if (always || rewrote) {
            char out[128];
            snprintf(out, sizeof out, "%s/o%d.onnx", tmp, (*n_out)++);
            if (ox_save(o, out, NULL, &err) != OX_OK) {
                print_message("FAIL %s [%s]: save: %s\n", src, label, err.msg);
                (*failures)++;
            } else {
                fprintf(list, "%s\t%s\t%s\n", out, src, label);
            }
        }
    }
    ox_pass_report_free(&rep);
    ox_model_free(o);
}

static void test_declared_types(void **state)
{
    (void)state;
    if (!tmp[0]) {
        print_message("python3-onnx (with numpy) absent: declared types not checked\n");
        skip();
    }
    ox_test_paths p = {0};
    char dir[4096];
    /* setup() wrote our own models into tmp. */
    ox_test_find(tmp, NULL, &p);
    snprintf(dir, sizeof dir, "%s/samples", ox_test_source());
    ox_test_find(dir, NULL, &p);
    const char *shared = ox_test_shared();
    if (shared) {
        snprintf(dir, sizeof dir, "%s/models", shared);
        ox_test_find(dir, "model.onnx", &p);
        const char *sub[] = {"simple", "pytorch-converted", "pytorch-operator", NULL};
        for (int s = 0; sub[s]; s++) {
            snprintf(dir, sizeof dir, "%s/onnx-backend/%s", shared, sub[s]);
            ox_test_find(dir, "model.onnx", &p);
        }
        snprintf(dir, sizeof dir, "%s/onnx-backend/light", shared);
        ox_test_find(dir, NULL, &p);
    } else {
        print_message("../shared absent: only our own models and the samples\n");
    }
    char lp[128];
    snprintf(lp, sizeof lp, "%s/list", tmp);
    FILE *list = fopen(lp, "w");
    assert_non_null(list);
    static const struct {
        ox_pass_level level;
        ox_pass_target target;
        const char *label;
    } levels[] = {{OX_LEVEL_BASIC, OX_TARGET_ONNX, "level basic"},
                  {OX_LEVEL_EXTENDED, OX_TARGET_ONNX, "level extended"},
                  {OX_LEVEL_ALL, OX_TARGET_ONNX, "level all"},
                  {OX_LEVEL_ALL, OX_TARGET_ORT, "level all --target ort"}};
    int n_out = 0, failures = 0, n_models = 0, n_small = 0;
    for (int i = 0; i < p.n; i++) {
        ox_model *m = NULL;
        ox_error err = {0};
        if (ox_load(p.v[i], NULL, &m, &err) != OX_OK)
            continue;
        n_models++;
        ox_infer_model(m, NULL, &err);
        for (size_t l = 0; l < sizeof levels / sizeof *levels; l++) {
            ox_pass_manager *pm = ox_pm_new(levels[l].level, levels[l].target);
            run_one(m, p.v[i], pm, levels[l].label, true, list, &n_out, &failures);
            ox_pm_free(pm);
        }
        struct stat sb;
        if (stat(p.v[i], &sb) == 0 && sb.st_size <= SMALL_MODEL) {
            n_small++;
            for (int k = 0; k < ox_pass_count(); k++) {
                const char *name = ox_pass_at(k)->name;
                ox_pass_manager *pm = ox_pm_new(OX_LEVEL_ALL, OX_TARGET_ORT);
                assert_int_equal(ox_pm_only(pm, name, &err), OX_OK);
                char label[128];
                bool noop = !strcmp(name, "unique_node_names");
                /* Renaming nodes changes no value: value_info must stay. */
                snprintf(label, sizeof label, "pass %s%s", name, noop ? ":noop" : "");
                run_one(m, p.v[i], pm, label, noop, list, &n_out, &failures);
                ox_pm_free(pm);
            }
        }
        ox_model_free(m);
    }
    fclose(list);
    print_message("%d models (%d small: every pass alone), %d optimized models to check\n",
                  n_models, n_small, n_out);
    assert_true(n_models >= 5);
    if (py("declared_check.py", lp) != 0)
        failures++;
    ox_test_paths_free(&p);
    assert_int_equal(failures, 0);
}

/* --dim and --shape fix dims in what `optimize` saves; symbols that nobody
 * fixed stay, and the result passes ONNX's checker. */
static void test_cli_fixing(void **state)
{
    (void)state;
    const char *bin = ox_test_bin();
    if (!tmp[0] || !bin) {
        print_message("python3-onnx or the binary absent\n");
        skip();
    }
    char cmd[4096], *out = NULL;
    snprintf(cmd, sizeof cmd, "%s optimize %s/decl_if.onnx -o %s/fix1.onnx --dim batch=3", bin,
             tmp, tmp);
    assert_int_equal(ox_test_run(cmd, &out), 0);
    free(out);
    snprintf(cmd, sizeof cmd,
             "%s/fix1.onnx x=3,p2o.DynamicDimension.3 c= y=3,p2o.DynamicDimension.3 z=3,1", tmp);
    assert_int_equal(py("declared_check.py --expect", cmd), 0);
    /* A --shape value at a symbol fixes that symbol everywhere. */
    snprintf(cmd, sizeof cmd, "%s optimize %s/decl_if.onnx -o %s/fix2.onnx --shape x=2x7", bin,
             tmp, tmp);
    assert_int_equal(ox_test_run(cmd, &out), 0);
    free(out);
    snprintf(cmd, sizeof cmd, "%s/fix2.onnx x=2,7 y=2,7 z=2,1", tmp);
    assert_int_equal(py("declared_check.py --expect", cmd), 0);
    /* Without overrides the symbols stay, the data-dependent one too. */
    snprintf(cmd, sizeof cmd, "%s optimize %s/decl_nonzero.onnx -o %s/fix3.onnx", bin, tmp, tmp);
    assert_int_equal(ox_test_run(cmd, &out), 0);
    free(out);
    snprintf(cmd, sizeof cmd, "%s/fix3.onnx x=batch,3 t=nnz,2 d=batch,3", tmp);
    assert_int_equal(py("declared_check.py --expect", cmd), 0);
    /* --shape with a "?" keeps the declared symbol at that dim. */
    snprintf(cmd, sizeof cmd,
             "%s optimize %s/decl_constants.onnx -o %s/fix4.onnx --shape x=4x?x16", bin, tmp,
             tmp);
    assert_int_equal(ox_test_run(cmd, &out), 0);
    free(out);
    snprintf(cmd, sizeof cmd, "%s/fix4.onnx x=4,seq,16 m=4,8 r=4,seq,8", tmp);
    assert_int_equal(py("declared_check.py --expect", cmd), 0);
}

/* Weights in Constant nodes are weights (issue 10 item 5): the 16x8 float
 * W (512 B) and the 3 int64 of S (24 B) before and after they become
 * initializers. */
static void test_cli_constant_weights(void **state)
{
    (void)state;
    const char *bin = ox_test_bin();
    if (!tmp[0] || !bin)
        skip();
    char cmd[4096], *out = NULL;
    snprintf(cmd, sizeof cmd,
             "%s optimize %s/decl_constants.onnx -o %s/cw.onnx --passes constant_to_initializer",
             bin, tmp, tmp);
    assert_int_equal(ox_test_run(cmd, &out), 0);
    if (!strstr(out, "weights 536 B -> 536 B"))
        fail_msg("expected 'weights 536 B -> 536 B' in:\n%s", out);
    /* The pass line: moving both saves nothing (the int64 S included). */
    if (!strstr(out, "constant_to_initializer: 2 folded, -2 nodes, MACs 0, FLOPs 0, weights 0 B,"))
        fail_msg("expected constant_to_initializer to save 0 B in:\n%s", out);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_declared_types),
                                       cmocka_unit_test(test_cli_fixing),
                                       cmocka_unit_test(test_cli_constant_weights)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
