/* Conformance: runs `onnxscope test-backend` over a folder of ../shared and
 * checks the pass count against a floor given on the command line
 * (raised as kernels land), and optionally that nothing failed.
 * usage: test_conformance SUBDIR MIN_PASSED MAX_FAILED [extra test-backend args] */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"

static int g_argc;
static char **g_argv;

static void test_suite(void **state)
{
    (void)state;
    const char *shared = ox_test_shared();
    const char *bin = ox_test_bin();
    if (!shared || !bin) {
        printf("# skipped: %s\n", shared ? "onnxscope binary not known" : "no ../shared");
        skip();
    }
    const char *sub = g_argv[1];
    int min_passed = atoi(g_argv[2]);
    int max_failed = atoi(g_argv[3]);
    char cmd[4096];
    int k = snprintf(cmd, sizeof cmd, "'%s' test-backend '%s/%s'", bin, shared, sub);
    for (int i = 4; i < g_argc && k < (int)sizeof cmd - 64; i++)
        k += snprintf(cmd + k, sizeof cmd - (size_t)k, " '%s'", g_argv[i]);
    char *out = NULL;
    int rc = ox_test_run(cmd, &out);
    assert_non_null(out);
    fputs(out, stdout);
    /* The last line is the summary. */
    size_t len = strlen(out);
    while (len > 0 && out[len - 1] == '\n')
        out[--len] = 0;
    const char *last = strrchr(out, '\n');
    last = last ? last + 1 : out;
    int passed = -1, failed = -1, skipped = -1;
    assert_int_equal(sscanf(last, "%d passed, %d failed, %d skipped", &passed, &failed,
                            &skipped), 3);
    printf("# %s: %d passed (floor %d), %d failed (ceiling %d), %d skipped, exit %d\n",
           sub, passed, min_passed, failed, max_failed, skipped, rc);
    assert_true(passed >= min_passed);
    assert_true(failed <= max_failed);
    assert_int_equal(rc, failed ? 1 : 0);
    free(out);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s SUBDIR MIN_PASSED MAX_FAILED [args]\n", argv[0]);
        return 2;
    }
    g_argc = argc;
    g_argv = argv;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_suite),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
