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

#include <cgraph.h>
#include <jansson.h>

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

/* Adds n to hist[op][what] (a JSON object used as a two-level histogram). */
static void hist_add(json_t *hist, const char *op, const char *what, long n)
{
    if (n == 0)
        return;
    json_t *e = json_object_get(hist, op);
    if (!e) {
        e = json_object();
        json_object_set_new(hist, op, e);
    }
    long cur = (long)json_integer_value(json_object_get(e, what));
    json_object_set_new(e, what, json_integer(cur + n));
}

/* Histogram of ox_diff=added / removed op nodes in a DOT file, by ox_op. */
static json_t *diff_marks(const char *path, int *added, int *removed)
{
    *added = *removed = 0;
    json_t *hist = json_object();
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    Agraph_t *g = agread(f, NULL);
    fclose(f);
    assert_non_null(g);
    for (Agnode_t *n = agfstnode(g); n; n = agnxtnode(g, n)) {
        char *d = agget(n, "ox_diff");
        char *op = agget(n, "ox_op");
        if (!d || !op)
            continue;
        if (strcmp(d, "added") == 0) {
            (*added)++;
            hist_add(hist, op, "added", 1);
        } else if (strcmp(d, "removed") == 0) {
            (*removed)++;
            hist_add(hist, op, "removed", 1);
        }
    }
    agclose(g);
    return hist;
}

/* The acceptance check of issue 6: `dot --diff` between a model and its
 * optimized version marks exactly as many removed and added nodes as the
 * optimizer's pass report (optimize --json: sums of nodes_removed and
 * nodes_added over passes) says, for every model of ../shared/models. */
static void test_diff_matches_pass_report(void **state)
{
    (void)state;
    const char *shared = ox_test_shared();
    if (!shared || !usable())
        skip();
    char cmd[4096];
    char *out = NULL;
    snprintf(cmd, sizeof cmd, "'%s' optimize --help", bin);
    if (ox_test_run(cmd, &out) != 0) {
        free(out);
        print_message("skipped: `onnxscope optimize` not available\n");
        skip();
    }
    free(out);
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/models", shared);
    ox_test_paths p = {0};
    ox_test_find(dir, "model.onnx", &p);
    assert_true(p.n > 0);
    static const char *const levels[] = {"basic", "all"};
    int compared = 0;
    for (int i = 0; i < p.n; i++) {
        for (size_t l = 0; l < sizeof levels / sizeof levels[0]; l++) {
            char opt[512], dot[512];
            snprintf(opt, sizeof opt, "%s/opt%d.onnx", tmpdir, i);
            snprintf(dot, sizeof dot, "%s/diff%d.dot", tmpdir, i);
            /* Grouped: ox_test_run appends 2>&1, and stderr notes (e.g.
             * that --level all adds nothing under --target onnx) are not
             * JSON. */
            snprintf(cmd, sizeof cmd,
                     "{ '%s' optimize '%s' -o '%s' --level %s --json 2>/dev/null; }", bin,
                     p.v[i], opt, levels[l]);
            if (ox_test_run(cmd, &out) != 0)
                fail_msg("optimize failed on %s: %s", p.v[i], out ? out : "");
            json_error_t jerr;
            json_t *root = json_loads(out, 0, &jerr);
            free(out);
            out = NULL;
            if (!root)
                fail_msg("optimize --json on %s: %s", p.v[i], jerr.text);
            long removed = 0, added = 0;
            json_t *passes = json_object_get(root, "passes");
            assert_true(json_is_array(passes));
            json_t *want = json_object();
            size_t k;
            json_t *ps;
            json_array_foreach(passes, k, ps) {
                removed += (long)json_integer_value(json_object_get(ps, "nodes_removed"));
                added += (long)json_integer_value(json_object_get(ps, "nodes_added"));
                const char *op;
                json_t *oc;
                json_object_foreach(json_object_get(ps, "ops"), op, oc) {
                    hist_add(want, op, "removed",
                             (long)json_integer_value(json_object_get(oc, "removed")));
                    hist_add(want, op, "added",
                             (long)json_integer_value(json_object_get(oc, "added")));
                }
            }
            json_decref(root);
            char args[2048];
            snprintf(args, sizeof args, "'%s' --diff '%s' -o '%s' --no-infer", p.v[i], opt, dot);
            if (run_dot(args, &out) != 0)
                fail_msg("dot --diff failed on %s: %s", p.v[i], out ? out : "");
            free(out);
            out = NULL;
            int da, dr;
            json_t *got = diff_marks(dot, &da, &dr);
            if (da != added || dr != removed)
                fail_msg("%s (--level %s): diff marks %d added / %d removed, the pass report "
                         "says %ld / %ld", p.v[i], levels[l], da, dr, added, removed);
            /* And by op type, as far as the report breaks it down. */
            if (json_object_size(want) > 0 && !json_equal(got, want)) {
                char *a = json_dumps(got, JSON_SORT_KEYS | JSON_COMPACT);
                char *b = json_dumps(want, JSON_SORT_KEYS | JSON_COMPACT);
                fail_msg("%s (--level %s): marked by op %s, report by op %s", p.v[i],
                         levels[l], a, b);
            }
            json_decref(got);
            json_decref(want);
            print_message("%-60s %-5s removed %4d added %3d (= pass report)\n", p.v[i],
                          levels[l], dr, da);
            compared++;
        }
    }
    assert_int_equal(compared, 2 * p.n);
    ox_test_paths_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exit_codes),
        cmocka_unit_test(test_guard),
        cmocka_unit_test(test_diff_matches_pass_report),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
