/* Opset conversion on real models (issue 15.3 acceptance): every model of
 * ../shared/models converted 13 -> 17 -> 13 (an opset-17 model 17 -> 13 ->
 * 17) and to 21 and back, and the light backend models 9 -> 13, compute
 * what the originals compute on the same inputs (our executor, both runs),
 * pass our checker, and the shared models still match their stored
 * outputs. Skips with a printed reason when ../shared is absent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "onnxscope/check.h"
#include "onnxscope/exec.h"
#include "onnxscope/io.h"
#include "onnxscope/opset.h"
#include "onnxscope/randinput.h"
#include "onnxscope/testdata.h"
#include "testutil.h"

#define MAXIO 64

/* Runs m on in; outputs into out (n_outputs entries). */
static bool run(ox_model *m, ox_rval **in, ox_rval **out)
{
    ox_exec *e = NULL;
    ox_error err = {0};
    bool ok = ox_exec_new(m, NULL, &e, &err) == OX_OK &&
              ox_exec_run(e, m->graph->n_inputs, in, m->graph->n_outputs, out, &err) == OX_OK;
    if (!ok)
        print_message("  exec: %s\n", err.msg);
    ox_exec_free(e);
    return ok;
}

/* Converts a clone of m along chain[] and compares its outputs on in with
 * ref (the original's). */
static bool convert_and_compare(const ox_model *m, const int *chain, int n, ox_rval **in,
                                ox_rval **ref, const char *label)
{
    ox_model *c = ox_model_clone(m);
    assert_non_null(c);
    ox_error err = {0};
    bool ok = true;
    char path[64] = "";
    for (int i = 0; i < n && ok; i++) {
        snprintf(path + strlen(path), sizeof path - strlen(path), " -> %d", chain[i]);
        if (ox_opset_convert(c, chain[i], NULL, &err)) {
            print_message("  %s%s: %s\n", label, path, err.msg);
            ok = false;
        }
    }
    ox_check_report cr = {0};
    if (ok && ox_check_model(c, &cr)) {
        print_message("  %s%s: checker: %s\n", label, path, cr.n_issues ? cr.issues[0].msg : "?");
        ok = false;
    }
    ox_check_report_free(&cr);
    int no = c->graph->n_outputs;
    ox_rval *got[MAXIO] = {0};
    if (ok)
        ok = run(c, in, got);
    for (int k = 0; ok && k < no; k++) {
        char why[256];
        if (!ox_rval_allclose(got[k], ref[k], 1e-5, 1e-6, why, sizeof why)) {
            print_message("  %s%s: output %d: %s\n", label, path, k, why);
            ok = false;
        }
    }
    for (int k = 0; k < no; k++)
        ox_rval_free(got[k]);
    print_message("%s %s opset %lld%s\n", ok ? "ok  " : "FAIL", label,
                  (long long)ox_model_opset(m, ""), path);
    ox_model_free(c);
    return ok;
}

static void test_shared_models(void **state)
{
    (void)state;
    const char *shared = ox_test_shared();
    if (!shared) {
        print_message("skipped: ../shared not found\n");
        skip();
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/models", shared);
    ox_test_paths ps = {0};
    ox_test_find(dir, "model.onnx", &ps);
    if (!ps.n) {
        print_message("skipped: no models under %s\n", dir);
        skip();
    }
    int failures = 0;
    for (int i = 0; i < ps.n; i++) {
        ox_model *m = NULL;
        ox_error err = {0};
        assert_int_equal(ox_load(ps.v[i], NULL, &m, &err), OX_OK);
        char base[4096];
        snprintf(base, sizeof base, "%s", ps.v[i]);
        *strrchr(base, '/') = 0;
        const char *label = strrchr(base, '/') + 1;
        int ni = m->graph->n_inputs, no = m->graph->n_outputs;
        assert_true(ni <= MAXIO && no <= MAXIO);
        ox_rval *in[MAXIO] = {0}, *ref[MAXIO] = {0}, *exp[MAXIO] = {0};
        for (int k = 0; k < ni; k++) {
            char f[4200];
            snprintf(f, sizeof f, "%s/test_data_set_0/input_%d.pb", base, k);
            assert_int_equal(ox_testdata_load(f, m->graph->inputs[k]->type, &in[k], NULL, &err),
                             OX_OK);
        }
        assert_true(run(m, in, ref));
        /* The original run matches the stored outputs (so the converted
         * runs, equal to it, do too). */
        for (int k = 0; k < no; k++) {
            char f[4200], why[256];
            snprintf(f, sizeof f, "%s/test_data_set_0/output_%d.pb", base, k);
            assert_int_equal(ox_testdata_load(f, m->graph->outputs[k]->type, &exp[k], NULL, &err),
                             OX_OK);
            if (!ox_rval_allclose(ref[k], exp[k], 1e-3, 1e-4, why, sizeof why)) {
                print_message("  %s: original output %d: %s\n", label, k, why);
                failures++;
            }
            ox_rval_free(exp[k]);
        }
        int op = (int)ox_model_opset(m, "");
        int up[2] = {17, op}, down[2] = {13, op}, later[2] = {21, op};
        if (op < 17)
            failures += !convert_and_compare(m, up, 2, in, ref, label);
        else
            failures += !convert_and_compare(m, down, 2, in, ref, label);
        failures += !convert_and_compare(m, later, 1, in, ref, label);
        failures += !convert_and_compare(m, later, 2, in, ref, label);
        for (int k = 0; k < ni; k++)
            ox_rval_free(in[k]);
        for (int k = 0; k < no; k++)
            ox_rval_free(ref[k]);
        ox_model_free(m);
    }
    ox_test_paths_free(&ps);
    assert_int_equal(failures, 0);
}

/* The light backend models (opset 9, weights as ConstantOfShape) 9 -> 13:
 * seeded random data for the input that has no initializer. */
static void test_light_models(void **state)
{
    (void)state;
    const char *shared = ox_test_shared();
    if (!shared) {
        print_message("skipped: ../shared not found\n");
        skip();
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/onnx-backend/light", shared);
    ox_test_paths ps = {0};
    ox_test_find(dir, NULL, &ps);
    if (!ps.n) {
        print_message("skipped: no models under %s\n", dir);
        skip();
    }
    int failures = 0;
    for (int i = 0; i < ps.n; i++) {
        ox_model *m = NULL;
        ox_error err = {0};
        assert_int_equal(ox_load(ps.v[i], NULL, &m, &err), OX_OK);
        int ni = m->graph->n_inputs, no = m->graph->n_outputs;
        ox_rval *in[1024] = {0}, *ref[MAXIO] = {0};
        assert_true(ni <= 1024 && no <= MAXIO);
        assert_int_equal(ox_random_inputs(m, NULL, 7, 0, in, &err), OX_OK);
        assert_true(run(m, in, ref));
        int chain[1] = {13};
        failures += !convert_and_compare(m, chain, 1, in, ref, strrchr(ps.v[i], '/') + 1);
        for (int k = 0; k < ni; k++)
            ox_rval_free(in[k]);
        for (int k = 0; k < no; k++)
            ox_rval_free(ref[k]);
        ox_model_free(m);
    }
    ox_test_paths_free(&ps);
    assert_int_equal(failures, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shared_models),
        cmocka_unit_test(test_light_models),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
