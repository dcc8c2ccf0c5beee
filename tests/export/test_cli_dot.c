/* `onnxscope dot` end to end through the binary: outputs and the exit-code
 * contract (0 ok, 2 usage incl. the layout guard, 3 I/O), theme fallback,
 * and the --diff summary. Skips while the command is not wired in. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "onnxscope/io.h"
#include "testutil.h"

static char tmpdir[256];
static const char *bin;

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/oxclidot.XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Runs `onnxscope dot ARGS`; returns the exit code, output in *out. */
static int run_dot(const char *args, char **out)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' dot %s", bin, args);
    return ox_test_run(cmd, out);
}

static bool usable(void)
{
    bin = ox_test_bin();
    if (!bin || access(bin, X_OK) != 0) {
        print_message("skipped: ONNXSCOPE_BIN not set or not executable\n");
        return false;
    }
    char *out = NULL;
    int rc = run_dot("--help", &out);
    bool ok = rc == 0 && out && strstr(out, "--around");
    free(out);
    if (!ok)
        print_message("skipped: `onnxscope dot` is not wired into the binary yet\n");
    return ok;
}

static void test_exit_codes(void **state)
{
    (void)state;
    const char *shared = ox_test_shared();
    if (!shared || !usable()) {
        print_message("skipped: needs ONNXSCOPE_SHARED and the binary\n");
        skip();
    }
    char model[1024], args[4096];
    snprintf(model, sizeof model, "%s/models/squeezenet1_1_op17/model.onnx", shared);
    char *out = NULL;

    snprintf(args, sizeof args, "'%s' -o '%s/a.svg'", model, tmpdir);
    assert_int_equal(run_dot(args, &out), 0);
    free(out);
    snprintf(args, sizeof args, "%s/a.svg", tmpdir);
    FILE *f = fopen(args, "r");
    assert_non_null(f);
    char head[256] = {0};
    assert_true(fread(head, 1, sizeof head - 1, f) > 0);
    fclose(f);
    assert_true(strstr(head, "<?xml") != NULL || strstr(head, "<svg") != NULL);

    static const struct {
        const char *fmt;   /* %1$s model, %2$s tmpdir */
        int rc;
        const char *msg;
    } cases[] = {
        {"'%s' -o '%s/a.jpeg'", 2, "unknown output format"},
        {"'%s'", 2, "-o"},
        {"'%s' -o '%s/a.dot' --around 'no such node'", 2, "no such node"},
        {"'%s' -o '%s/a.dot' --rankdir XY", 2, "rankdir"},
        {"'%s' -o '%s/a.dot' --radius 2", 2, "--around"},
        {"'%s' -o '%s/a.dot' --bogus-option", 2, NULL},
        {"'%s.missing' -o '%s/a.svg'", 3, NULL},
        {"'%s' -o '%s/no/such/dir/a.svg'", 3, NULL},
        {"'%s' -o '%s/t.dot' --theme no-such-theme", 0, "using the default theme"},
        {"'%s' -o '%s/t.png' --theme mono --rankdir LR --initializers", 0, "nodes"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char a[4096];
        snprintf(a, sizeof a, cases[i].fmt, model, tmpdir);
        int rc = run_dot(a, &out);
        if (rc != cases[i].rc || (cases[i].msg && (!out || !strstr(out, cases[i].msg))))
            fail_msg("dot %s: exit %d (want %d), output: %s", a, rc, cases[i].rc,
                     out ? out : "");
        free(out);
        out = NULL;
    }
}

/* A 3,000-node model: PNG needs --force (exit 2 with advice), DOT is fine. */
static void test_guard(void **state)
{
    (void)state;
    if (!usable())
        skip();
    ox_model *m = ox_model_new();
    assert_non_null(m);
    ox_graph *g = m->graph;
    int64_t dims[1] = {4};
    ox_value *v = ox_graph_value(g, "x");
    v->type = ox_type_new_tensor(OX_DT_FLOAT, 1, dims);
    ox_graph_add_input(g, v);
    for (int i = 0; i < 3000; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "v%d", i);
        ox_value *o = ox_graph_value(g, nm);
        assert_non_null(ox_node_new(g, "Neg", "", "", 1, &v, 1, &o));
        v = o;
    }
    v->type = ox_type_new_tensor(OX_DT_FLOAT, 1, dims);
    ox_graph_add_output(g, v);
    ox_model_set_opset(m, "", 17);
    char path[512], args[2048];
    snprintf(path, sizeof path, "%s/big.onnx", tmpdir);
    ox_error err = {0};
    if (ox_save(m, path, NULL, &err) != OX_OK)
        fail_msg("save: %s", err.msg);
    ox_model_free(m);
    char *out = NULL;
    snprintf(args, sizeof args, "'%s' -o '%s/big.png'", path, tmpdir);
    int rc = run_dot(args, &out);
    if (rc != 2 || !out || !strstr(out, "--force"))
        fail_msg("big png: exit %d, output %s", rc, out ? out : "");
    free(out);
    snprintf(args, sizeof args, "'%s' -o '%s/big.dot'", path, tmpdir);
    assert_int_equal(run_dot(args, &out), 0);
    assert_non_null(strstr(out, "3002 nodes"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exit_codes),
        cmocka_unit_test(test_guard),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
