/* Every model of ../shared loads, passes the checker, and survives
 * save -> load unchanged (structural comparison, tensors byte-equal). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "onnxscope/check.h"
#include "onnxscope/io.h"
#include "testutil.h"

static void test_all_models_roundtrip(void **state)
{
    (void)state;
    const char *shared = ox_test_shared();
    if (!shared)
        skip();
    ox_test_paths paths = {0};
    ox_test_all_shared_models(shared, &paths);
    assert_true(paths.n > 1900);
    int failures = 0, checked = 0;
    char tmpdir[] = "/tmp/oxrtXXXXXX";
    assert_non_null(mkdtemp(tmpdir));
    for (int i = 0; i < paths.n; i++) {
        const char *p = paths.v[i];
        ox_model *a = NULL, *b = NULL;
        ox_error err = {0};
        if (ox_load(p, NULL, &a, &err) != OX_OK) {
            printf("# LOAD FAIL %s: %s\n", p, err.msg);
            failures++;
            continue;
        }
        ox_check_report rep;
        if (ox_check_model(a, &rep) != OX_OK) {
            printf("# CHECK FAIL %s: %s (%d issues)\n", p, rep.issues[0].msg, rep.n_issues);
            failures++;
        }
        ox_check_report_free(&rep);
        /* Large models go through the file writer, small ones through memory. */
        bool via_file = strstr(p, "/models/") != NULL;
        if (via_file) {
            char out[4200];
            snprintf(out, sizeof out, "%s/m.onnx", tmpdir);
            if (ox_save(a, out, NULL, &err) != OX_OK ||
                ox_load(out, NULL, &b, &err) != OX_OK) {
                printf("# SAVE/RELOAD FAIL %s: %s\n", p, err.msg);
                failures++;
                ox_model_free(a);
                continue;
            }
            unlink(out);
        } else {
            void *buf = NULL;
            size_t len = 0;
            if (ox_save_buffer(a, &buf, &len, &err) != OX_OK ||
                ox_load_buffer(buf, len, NULL, &b, &err) != OX_OK) {
                printf("# SAVE/RELOAD FAIL %s: %s\n", p, err.msg);
                failures++;
                free(buf);
                ox_model_free(a);
                continue;
            }
            free(buf);
        }
        ox_error cerr = {0};
        if (!ox_model_equal(a, b, &cerr)) {
            printf("# ROUNDTRIP DIFF %s: %s\n", p, cerr.msg);
            failures++;
        }
        checked++;
        ox_model_free(a);
        ox_model_free(b);
    }
    rmdir(tmpdir);
    printf("# %d models: %d round-tripped, %d failures\n", paths.n, checked, failures);
    ox_test_paths_free(&paths);
    assert_int_equal(failures, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_models_roundtrip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
