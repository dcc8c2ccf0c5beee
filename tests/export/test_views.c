/* The export's special views: --diff (a model against a hand-edited copy:
 * exactly the removed and the added node are marked), the node matching
 * rule for unnamed nodes, --around/--radius neighbourhoods, and the
 * large-graph layout guard. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <cgraph.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnxscope/export.h"
#include "onnxscope/io.h"
#include "testutil.h"

static char tmpdir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/oxviews.XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static ox_model *load_shared(const char *rel)
{
    const char *shared = ox_test_shared();
    if (!shared)
        return NULL;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", shared, rel);
    ox_model *m = NULL;
    ox_error err = {0};
    if (ox_load(path, NULL, &m, &err) != OX_OK)
        fail_msg("%s: %s", path, err.msg);
    return m;
}

/* Exports to DOT, reads it back and lists the ox_name of every op node
 * whose ox_diff attribute equals `state` (joined by '|', in DOT order). */
typedef struct marks {
    char added[4096], removed[4096], changed[8192];
    int n_added, n_removed, n_changed, n_ops, n_centre;
    char ops[8192];
} marks;

static void collect_marks(const char *dotpath, marks *mk)
{
    memset(mk, 0, sizeof *mk);
    FILE *f = fopen(dotpath, "r");
    assert_non_null(f);
    Agraph_t *g = agread(f, NULL);
    fclose(f);
    assert_non_null(g);
    for (Agnode_t *n = agfstnode(g); n; n = agnxtnode(g, n)) {
        char *kind = agget(n, "ox_kind");
        if (!kind || strcmp(kind, "op") != 0)
            continue;
        mk->n_ops++;
        char *name = agget(n, "ox_name");
        char *d = agget(n, "ox_diff");
        char *c = agget(n, "ox_centre");
        if (c && strcmp(c, "true") == 0)
            mk->n_centre++;
        size_t l = strlen(mk->ops);
        snprintf(mk->ops + l, sizeof mk->ops - l, "%s|", name ? name : "");
        if (!d || !*d)
            continue;
        char *dst = NULL;
        size_t cap = 0;
        if (strcmp(d, "added") == 0) {
            dst = mk->added, cap = sizeof mk->added;
            mk->n_added++;
        } else if (strcmp(d, "removed") == 0) {
            dst = mk->removed, cap = sizeof mk->removed;
            mk->n_removed++;
        } else if (strcmp(d, "changed") == 0) {
            dst = mk->changed, cap = sizeof mk->changed;
            mk->n_changed++;
        }
        if (dst) {
            l = strlen(dst);
            snprintf(dst + l, cap - l, "%s|", name ? name : "");
        }
    }
    agclose(g);
}

static void export_diff(const ox_model *before, const ox_model *after, const char *name,
                        marks *mk, ox_export_stats *st)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s.dot", tmpdir, name);
    ox_export_opts o;
    ox_export_opts_init(&o);
    o.diff_after = after;
    ox_error err = {0};
    if (ox_export_dot(before, &o, path, st, &err) != OX_OK)
        fail_msg("diff export: %s", err.msg);
    collect_marks(path, mk);
}

/* A model against itself: nothing is marked. */
static void test_diff_identical(void **state)
{
    (void)state;
    ox_model *a = load_shared("models/mobilenet_v2_op13/model.onnx");
    if (!a) {
        print_message("skipped: ONNXSCOPE_SHARED not set or missing\n");
        skip();
    }
    ox_model *b = ox_model_clone(a);
    assert_non_null(b);
    marks mk;
    ox_export_stats st;
    export_diff(a, b, "same", &mk, &st);
    assert_int_equal(mk.n_added, 0);
    assert_int_equal(mk.n_removed, 0);
    assert_int_equal(mk.n_changed, 0);
    /* The README's count of nodes for this model. */
    assert_int_equal(mk.n_ops, 170);
    ox_model_free(a);
    ox_model_free(b);
}

/* Remove one Identity (its consumers read the initializer directly) and
 * insert one Relu after the first Relu, through the IR editing API; save
 * and reload the copy; the diff marks exactly those two nodes. */
static void test_diff_hand_edited(void **state)
{
    (void)state;
    ox_model *a = load_shared("models/squeezenet1_1_op17/model.onnx");
    if (!a) {
        print_message("skipped: ONNXSCOPE_SHARED not set or missing\n");
        skip();
    }
    ox_model *b = ox_model_clone(a);
    assert_non_null(b);
    ox_graph *g = b->graph;
    ox_node *ident = NULL, *relu = NULL;
    for (int i = 0; i < g->n_nodes; i++) {
        if (!ident && strcmp(g->nodes[i]->op_type, "Identity") == 0)
            ident = g->nodes[i];
        if (!relu && strcmp(g->nodes[i]->op_type, "Relu") == 0)
            relu = g->nodes[i];
    }
    assert_non_null(ident);
    assert_non_null(relu);
    char removed_name[256];
    snprintf(removed_name, sizeof removed_name, "%s|", ident->name);
    /* Consumers of the Identity now read its input; count them (changed). */
    ox_value *iin = ident->inputs[0], *iout = ident->outputs[0];
    int ident_consumers = iout->n_uses;
    ox_value_replace_uses(iout, iin);
    ox_node_remove(ident);
    ox_graph_remove_value(g, iout);
    /* Relu -> r ==> Relu -> r -> added_relu -> r2 -> (old consumers). */
    ox_value *r = relu->outputs[0];
    int relu_consumers = r->n_uses;
    ox_value *r2 = ox_graph_new_value(g, "added_relu_out");
    assert_non_null(r2);
    ox_value_replace_uses(r, r2);
    ox_node *nn = ox_node_new(g, "Relu", "", "added_relu", 1, &r, 1, &r2);
    assert_non_null(nn);
    ox_error err = {0};
    assert_int_equal(ox_graph_toposort(g, &err), OX_OK);
    char saved[512];
    snprintf(saved, sizeof saved, "%s/edited.onnx", tmpdir);
    if (ox_save(b, saved, NULL, &err) != OX_OK)
        fail_msg("save: %s", err.msg);
    ox_model_free(b);
    b = NULL;
    if (ox_load(saved, NULL, &b, &err) != OX_OK)
        fail_msg("reload: %s", err.msg);

    marks mk;
    ox_export_stats st;
    export_diff(a, b, "edited", &mk, &st);
    assert_int_equal(mk.n_removed, 1);
    assert_string_equal(mk.removed, removed_name);
    assert_int_equal(mk.n_added, 1);
    assert_string_equal(mk.added, "added_relu|");
    /* Changed: the Identity's consumers and the first Relu's consumers now
     * read other values; nothing else. */
    assert_int_equal(mk.n_changed, ident_consumers + relu_consumers);
    assert_int_equal(st.added, 1);
    assert_int_equal(st.removed, 1);
    /* 83 nodes in the README, minus one plus one, plus the removed one. */
    assert_int_equal(mk.n_ops, 84);

    /* And the other way round: before/after swapped swaps the marks. */
    export_diff(b, a, "reversed", &mk, &st);
    assert_int_equal(mk.n_removed, 1);
    assert_string_equal(mk.removed, "added_relu|");
    assert_int_equal(mk.n_added, 1);
    assert_string_equal(mk.added, removed_name);
    ox_model_free(a);
    ox_model_free(b);
}

/* X -> Relu -> a -> Sigmoid|Tanh -> Y with unnamed nodes: rule 2 (op type
 * + output names) matches the Relus; Sigmoid is removed, Tanh added. */
static ox_model *tiny_chain(const char *second_op)
{
    ox_model *m = ox_model_new();
    assert_non_null(m);
    ox_graph *g = m->graph;
    int64_t dims[2] = {1, 4};
    ox_value *x = ox_graph_value(g, "X");
    x->type = ox_type_new_tensor(OX_DT_FLOAT, 2, dims);
    ox_graph_add_input(g, x);
    ox_value *a = ox_graph_value(g, "a");
    ox_value *y = ox_graph_value(g, "Y");
    assert_non_null(ox_node_new(g, "Relu", "", "", 1, &x, 1, &a));
    assert_non_null(ox_node_new(g, second_op, "", "", 1, &a, 1, &y));
    ox_graph_add_output(g, y);
    ox_model_set_opset(m, "", 17);
    return m;
}

static void test_diff_unnamed_by_outputs(void **state)
{
    (void)state;
    ox_model *a = tiny_chain("Sigmoid"), *b = tiny_chain("Tanh");
    marks mk;
    ox_export_stats st;
    export_diff(a, b, "tiny", &mk, &st);
    assert_int_equal(mk.n_ops, 3);
    assert_int_equal(mk.n_added, 1);
    assert_int_equal(mk.n_removed, 1);
    assert_int_equal(mk.n_changed, 0);
    /* Input X, output Y; ops: Relu, Tanh (added), Sigmoid (removed). */
    assert_int_equal(st.nodes, 5);
    /* X->Relu, Relu->Tanh, Tanh->Y; removed: Relu->Sigmoid, Sigmoid->Y. */
    assert_int_equal(st.edges, 5);
    ox_model_free(a);
    ox_model_free(b);
}

static void test_around(void **state)
{
    (void)state;
    ox_model *m = load_shared("models/shape_chain_cnn_nofold_op13/model.onnx");
    if (!m) {
        print_message("skipped: ONNXSCOPE_SHARED not set or missing\n");
        skip();
    }
    char path[512];
    snprintf(path, sizeof path, "%s/around.dot", tmpdir);
    ox_export_opts o;
    ox_export_opts_init(&o);
    ox_error err = {0};
    ox_export_stats st;
    marks mk;
    /* Radius 1 around the second convolution: its producer (the first
     * ReLU) and its consumer (the second ReLU); weights hidden, so no
     * input or output nodes and two edges. */
    o.around = "/conv2/Conv";
    o.radius = 1;
    assert_int_equal(ox_export_dot(m, &o, path, &st, &err), OX_OK);
    collect_marks(path, &mk);
    assert_int_equal(mk.n_ops, 3);
    assert_string_equal(mk.ops, "/Relu|/conv2/Conv|/Relu_1|");
    assert_int_equal(mk.n_centre, 1);
    assert_int_equal(st.nodes, 3);
    assert_int_equal(st.edges, 2);
    /* Radius 0: the node alone; with initializers its weight and bias. */
    o.radius = 0;
    o.show_initializers = true;
    assert_int_equal(ox_export_dot(m, &o, path, &st, &err), OX_OK);
    assert_int_equal(st.op_nodes, 1);
    assert_int_equal(st.init_nodes, 2);
    assert_int_equal(st.edges, 2);
    /* Radius 1 around the first conv reaches the graph input. */
    o.around = "/conv1/Conv";
    o.radius = 1;
    o.show_initializers = false;
    assert_int_equal(ox_export_dot(m, &o, path, &st, &err), OX_OK);
    assert_int_equal(st.input_nodes, 1);
    assert_int_equal(st.op_nodes, 2);
    /* An index selects from the main graph's node list. */
    char idx[16];
    snprintf(idx, sizeof idx, "%d", 5);
    o.around = idx;
    o.radius = 0;
    assert_int_equal(ox_export_dot(m, &o, path, &st, &err), OX_OK);
    collect_marks(path, &mk);
    char want[512];
    snprintf(want, sizeof want, "%s|", m->graph->nodes[5]->name);
    assert_string_equal(mk.ops, want);
    /* Unknown names are a clear error. */
    o.around = "no such node";
    ox_error_clear(&err);
    assert_int_equal(ox_export_dot(m, &o, path, &st, &err), OX_EINVAL);
    assert_non_null(strstr(err.msg, "no such node"));
    ox_model_free(m);
}

static void test_layout_guard(void **state)
{
    (void)state;
    ox_model *m = load_shared("models/shape_chain_cnn_nofold_op13/model.onnx");
    if (!m) {
        print_message("skipped: ONNXSCOPE_SHARED not set or missing\n");
        skip();
    }
    char svg[512], dot[512];
    snprintf(svg, sizeof svg, "%s/guard.svg", tmpdir);
    snprintf(dot, sizeof dot, "%s/guard.dot", tmpdir);
    ox_export_opts o;
    ox_export_opts_init(&o);
    o.layout_limit = 20;  /* the model has 59 DOT nodes */
    ox_error err = {0};
    ox_export_stats st;
    assert_int_equal(ox_export_render(m, &o, svg, OX_EXPORT_AUTO, &st, &err), OX_ERANGE);
    assert_non_null(strstr(err.msg, "--force"));
    assert_int_not_equal(access(svg, F_OK), 0);
    /* DOT text has no limit; --force lays it out anyway. */
    ox_error_clear(&err);
    assert_int_equal(ox_export_render(m, &o, dot, OX_EXPORT_AUTO, &st, &err), OX_OK);
    o.force = true;
    assert_int_equal(ox_export_render(m, &o, svg, OX_EXPORT_AUTO, &st, &err), OX_OK);
    assert_int_equal(access(svg, F_OK), 0);
    /* Unknown extensions are refused before anything is written. */
    char bad[512];
    snprintf(bad, sizeof bad, "%s/out.jpeg", tmpdir);
    assert_int_equal(ox_export_render(m, &o, bad, OX_EXPORT_AUTO, &st, &err), OX_EINVAL);
    assert_int_equal(ox_export_format_from_path("a/b.PNG"), OX_EXPORT_PNG);
    assert_int_equal(ox_export_format_from_path("a.dir/b"), OX_EXPORT_AUTO);
    ox_model_free(m);
}

static void test_short_name(void **state)
{
    (void)state;
    char buf[64];
    assert_string_equal(ox_export_short_name("conv1", buf, sizeof buf), "conv1");
    assert_string_equal(
        ox_export_short_name("/encoder/layer.0/attention/self/MatMul_1", buf, sizeof buf),
        "../self/MatMul_1");
    const char *longname = "a_very_long_node_name_without_any_slashes_at_all_123";
    ox_export_short_name(longname, buf, sizeof buf);
    assert_true(strlen(buf) <= 28);
    assert_non_null(strstr(buf, ".."));
    assert_int_equal(strncmp(buf, longname, 12), 0);
    assert_non_null(strstr(longname, strstr(buf, "..") + 2));
}

/* Names with quotes, backslashes (DOT escapes like \\N), newlines and
 * invalid UTF-8 must give DOT that libcgraph and `dot` accept. */
static void test_hostile_names(void **state)
{
    (void)state;
    ox_model *m = ox_model_new();
    assert_non_null(m);
    ox_graph *g = m->graph;
    ox_value *x = ox_graph_value(g, "in\"put\\N");
    ox_graph_add_input(g, x);
    ox_value *y = ox_graph_value(g, "out\\l\n{}<>");
    assert_non_null(ox_node_new(g, "Weird\"Op", "my.domain", "bad\xff\xfename\n\\G\"",
                                1, &x, 1, &y));
    ox_graph_add_output(g, y);
    char path[512], svg[512];
    snprintf(path, sizeof path, "%s/hostile.dot", tmpdir);
    snprintf(svg, sizeof svg, "%s/hostile.svg", tmpdir);
    ox_error err = {0};
    ox_export_stats st;
    assert_int_equal(ox_export_dot(m, NULL, path, &st, &err), OX_OK);
    marks mk;
    collect_marks(path, &mk);
    assert_int_equal(mk.n_ops, 1);
    assert_non_null(strstr(mk.ops, "bad??name?"));
    assert_int_equal(st.nodes, 3);
    assert_int_equal(st.edges, 2);
    if (access("/usr/bin/dot", X_OK) == 0) {
        char cmd[1200];
        snprintf(cmd, sizeof cmd, "/usr/bin/dot -Tsvg '%s' -o /dev/null", path);
        assert_int_equal(system(cmd), 0);
    }
    assert_int_equal(ox_export_render(m, NULL, svg, OX_EXPORT_AUTO, &st, &err), OX_OK);
    if (access("/usr/bin/xmllint", X_OK) == 0) {
        char cmd[1200];
        snprintf(cmd, sizeof cmd, "/usr/bin/xmllint --noout '%s'", svg);
        assert_int_equal(system(cmd), 0);
    }
    ox_model_free(m);
}

/* A 5,000-node chain: DOT text is written quickly; layout is refused
 * without force at the default limit of 2,000 nodes. */
static void test_large_graph_guard(void **state)
{
    (void)state;
    ox_model *m = ox_model_new();
    assert_non_null(m);
    ox_graph *g = m->graph;
    ox_value *v = ox_graph_value(g, "x");
    ox_graph_add_input(g, v);
    for (int i = 0; i < 5000; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "v%d", i);
        ox_value *o = ox_graph_value(g, nm);
        snprintf(nm, sizeof nm, "relu%d", i);
        assert_non_null(ox_node_new(g, "Relu", "", nm, 1, &v, 1, &o));
        v = o;
    }
    ox_graph_add_output(g, v);
    char dot[512], png[512];
    snprintf(dot, sizeof dot, "%s/big.dot", tmpdir);
    snprintf(png, sizeof png, "%s/big.png", tmpdir);
    ox_error err = {0};
    ox_export_stats st;
    assert_int_equal(ox_export_render(m, NULL, dot, OX_EXPORT_AUTO, &st, &err), OX_OK);
    assert_int_equal(st.nodes, 5002);
    assert_int_equal(st.edges, 5001);
    assert_int_equal(ox_export_render(m, NULL, png, OX_EXPORT_AUTO, &st, &err), OX_ERANGE);
    assert_non_null(strstr(err.msg, "5002 nodes"));
    assert_int_not_equal(access(png, F_OK), 0);
    ox_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_diff_identical),
        cmocka_unit_test(test_diff_hand_edited),
        cmocka_unit_test(test_diff_unnamed_by_outputs),
        cmocka_unit_test(test_around),
        cmocka_unit_test(test_layout_guard),
        cmocka_unit_test(test_short_name),
        cmocka_unit_test(test_hostile_names),
        cmocka_unit_test(test_large_graph_guard),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
