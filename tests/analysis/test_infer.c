/* Unit tests of shape/type inference on hand-built graphs: symbolic
 * broadcasting, an exporter-style Shape->Gather->Unsqueeze->Concat->Reshape
 * chain (symbolic and with --shape/--dim overrides), Reshape allowzero,
 * Conv/pool arithmetic from the spec formulas, unknown ops, subgraphs with
 * outer-scope values, per-node inference and option parsing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "onnxscope/infer.h"
#include "onnxscope/io.h"
#include "onnxscope/ir.h"
#include "onnxscope/ops.h"

static ox_model *new_model(int64_t opset)
{
    ox_model *m = ox_model_new();
    assert_non_null(m);
    if (!m->graph)
        m->graph = ox_graph_new(m, NULL);
    ox_model_set_opset(m, "", opset);
    return m;
}

/* A graph input; dims < 0 are unknown, syms[i] names a symbol. */
static ox_value *input(ox_graph *g, const char *name, ox_dtype dt, int rank,
                       const int64_t *dims, const char *const *syms)
{
    ox_value *v = ox_graph_value(g, name);
    v->type = ox_type_new_tensor(dt, rank, dims);
    for (int i = 0; syms && i < rank; i++)
        if (syms[i])
            v->type->dims[i].param = ox_strdup(syms[i]);
    assert_int_equal(ox_graph_add_input(g, v), OX_OK);
    return v;
}

static ox_value *const_i64(ox_graph *g, const char *name, int n, const int64_t *vals)
{
    int64_t d = n;
    ox_tensor *t = ox_tensor_new(OX_DT_INT64, 1, &d);
    for (int i = 0; i < n; i++)
        ox_tensor_set_i64(t, i, vals[i]);
    ox_value *v = ox_graph_value(g, name);
    assert_int_equal(ox_graph_set_initializer(g, v, t), OX_OK);
    return v;
}

static ox_node *node1(ox_graph *g, const char *op, int nin, ox_value **in, const char *out)
{
    ox_value *o = ox_graph_value(g, out);
    ox_node *n = ox_node_new(g, op, "", out, nin, in, 1, &o);
    assert_non_null(n);
    return n;
}

static const ox_type *type_of(ox_graph *g, const char *name)
{
    ox_value *v = ox_graph_find(g, name);
    assert_non_null(v);
    return v->type;
}

/* Asserts type string equality, e.g. "float32[batch,3,4]". */
static void assert_type(ox_graph *g, const char *name, const char *want)
{
    char buf[256] = "untyped";
    const ox_type *t = type_of(g, name);
    if (t)
        ox_type_str(t, buf, sizeof buf);
    if (strcmp(buf, want)) {
        printf("value %s: got %s, want %s\n", name, buf, want);
        fail();
    }
}

static void test_broadcast_symbolic(void **state)
{
    (void)state;
    ox_model *m = new_model(17);
    ox_graph *g = m->graph;
    const int64_t da[] = { -1, 3, 1 }, db[] = { 4 }, dc[] = { 1, -1 }, dd[] = { -1, 1 };
    const char *sa[] = { "batch", NULL, NULL }, *sc[] = { NULL, "N" }, *sd[] = { "M", NULL };
    ox_value *a = input(g, "a", OX_DT_FLOAT, 3, da, sa);
    ox_value *b = input(g, "b", OX_DT_FLOAT, 1, db, NULL);
    ox_value *c = input(g, "c", OX_DT_FLOAT, 2, dc, sc);
    ox_value *d = input(g, "d", OX_DT_FLOAT, 2, dd, sd);
    ox_value *ab[] = { a, b }, *cd[] = { c, d };
    node1(g, "Add", 2, ab, "ab");
    node1(g, "Mul", 2, cd, "cd");
    ox_value *cmp[] = { c, c };
    node1(g, "Less", 2, cmp, "lt");
    ox_infer_stats st = { 0 };
    ox_infer_opts o = { 0 };
    o.stats = &st;
    ox_error err = { 0 };
    assert_int_equal(ox_infer_model(m, &o, &err), OX_OK);
    assert_type(g, "ab", "float32[batch,3,4]");
    assert_type(g, "cd", "float32[M,N]");
    assert_type(g, "lt", "bool[1,N]");
    assert_int_equal(st.failed, 0);
    assert_true(ox_graph_find(g, "ab")->has_value_info);
    ox_model_free(m);

    /* Known dims that cannot broadcast are reported, not guessed. */
    m = new_model(17);
    g = m->graph;
    const int64_t d3[] = { 3 }, d4[] = { 4 };
    ox_value *x = input(g, "x", OX_DT_FLOAT, 1, d3, NULL);
    ox_value *y = input(g, "y", OX_DT_FLOAT, 1, d4, NULL);
    ox_value *xy[] = { x, y };
    node1(g, "Add", 2, xy, "bad");
    memset(&st, 0, sizeof st);
    assert_int_equal(ox_infer_model(m, &o, &err), OX_OK);
    assert_int_equal(st.failed, 1);
    assert_type(g, "bad", "float32[?]");
    o.strict = true;
    assert_int_equal(ox_infer_model(m, &o, &err), OX_ESHAPE);
    ox_model_free(m);
}

/* x[batch,3,8,8] -> Shape -> Gather(0) -> Unsqueeze(0) -> Concat([-1]) ->
 * Reshape: the result is [batch, 192] (the -1 is solved symbolically). */
static ox_model *shape_chain(int64_t opset)
{
    ox_model *m = new_model(opset);
    ox_graph *g = m->graph;
    const int64_t dx[] = { -1, 3, 8, 8 };
    const char *sx[] = { "batch", NULL, NULL, NULL };
    ox_value *x = input(g, "x", OX_DT_FLOAT, 4, dx, sx);
    ox_value *in1[] = { x };
    ox_node *shp = node1(g, "Shape", 1, in1, "shape");
    const int64_t zero = 0, minus1 = -1;
    ox_value *idx0 = ox_graph_value(g, "idx0");
    ox_tensor *t0 = ox_tensor_new(OX_DT_INT64, 0, NULL);
    ox_tensor_set_i64(t0, 0, 0);
    ox_graph_set_initializer(g, idx0, t0);
    ox_value *gi[] = { shp->outputs[0], idx0 };
    ox_node *ga = node1(g, "Gather", 2, gi, "dim0");
    ox_value *axes = const_i64(g, "axes0", 1, &zero);
    ox_value *ui[] = { ga->outputs[0], axes };
    ox_node *un = node1(g, "Unsqueeze", 2, ui, "dim0_1d");
    ox_value *neg = const_i64(g, "neg1", 1, &minus1);
    ox_value *ci[] = { un->outputs[0], neg };
    ox_node *cc = node1(g, "Concat", 2, ci, "target");
    ox_node_set_attr_i(cc, "axis", 0);
    ox_value *ri[] = { x, cc->outputs[0] };
    ox_node *rs = node1(g, "Reshape", 2, ri, "flat");
    ox_graph_add_output(g, rs->outputs[0]);
    return m;
}

static void test_shape_chain(void **state)
{
    (void)state;
    ox_error err = { 0 };
    ox_model *m = shape_chain(13);
    ox_graph *g = m->graph;
    assert_int_equal(ox_infer_model(m, NULL, &err), OX_OK);
    assert_type(g, "shape", "int64[4]");
    assert_type(g, "dim0", "int64[]");
    assert_type(g, "target", "int64[2]");
    assert_type(g, "flat", "float32[batch,192]");
    /* Partially known values are not published as constants. */
    assert_null(ox_infer_known_value(ox_graph_find(g, "target")));

    /* --dim batch=2 */
    ox_infer_opts o = { 0 };
    assert_int_equal(ox_infer_opts_add_dim(&o, "batch=2", &err), OX_OK);
    assert_int_equal(ox_infer_model(m, &o, &err), OX_OK);
    assert_type(g, "flat", "float32[2,192]");
    ox_infer_opts_free(&o);
    ox_model_free(m);

    /* --shape x=5x3x8x8: the shape values become constants. */
    m = shape_chain(13);
    g = m->graph;
    memset(&o, 0, sizeof o);
    assert_int_equal(ox_infer_opts_add_shape(&o, "x=5x3x8x8", &err), OX_OK);
    assert_int_equal(ox_infer_model(m, &o, &err), OX_OK);
    assert_type(g, "flat", "float32[5,192]");
    const ox_tensor *k = ox_infer_known_value(ox_graph_find(g, "target"));
    assert_non_null(k);
    assert_int_equal(k->numel, 2);
    assert_int_equal(ox_tensor_get_i64(k, 0), 5);
    assert_int_equal(ox_tensor_get_i64(k, 1), -1);
    /* The saved model carries the inferred intermediate shapes. */
    void *buf = NULL;
    size_t len = 0;
    assert_int_equal(ox_save_buffer(m, &buf, &len, &err), OX_OK);
    ox_model *m2 = NULL;
    assert_int_equal(ox_load_buffer(buf, len, NULL, &m2, &err), OX_OK);
    assert_type(m2->graph, "target", "int64[2]");
    free(buf);
    ox_model_free(m2);
    /* Re-running with another shape: known dims are replaced; with reset
     * nothing of the earlier run survives. */
    ox_infer_opts o2 = { 0 };
    assert_int_equal(ox_infer_opts_add_shape(&o2, "x=7x3x8x8", &err), OX_OK);
    o2.reset = true;
    assert_int_equal(ox_infer_model(m, &o2, &err), OX_OK);
    assert_type(g, "flat", "float32[7,192]");
    ox_infer_opts_free(&o2);
    /* An override naming no input is an error. */
    ox_infer_opts bad = { 0 };
    assert_int_equal(ox_infer_opts_add_shape(&bad, "nope=1x2", &err), OX_OK);
    assert_int_equal(ox_infer_model(m, &bad, &err), OX_EINVAL);
    ox_infer_opts_free(&bad);
    ox_infer_opts_free(&o);
    ox_model_free(m);
}

static void test_reshape_allowzero(void **state)
{
    (void)state;
    ox_error err = { 0 };
    for (int allow = 0; allow <= 1; allow++) {
        ox_model *m = new_model(14);
        ox_graph *g = m->graph;
        /* allowzero=1: 0 is a real zero-size dim; allowzero=0: 0 copies the
         * input dim and -1 takes the rest. */
        const int64_t d1[] = { 0, 3, 4 }, d0[] = { 2, 3, 4 };
        ox_value *x = input(g, "x", OX_DT_FLOAT, 3, allow ? d1 : d0, NULL);
        const int64_t sh1[] = { 3, 4, 0 }, sh0[] = { 0, -1 };
        ox_value *s = const_i64(g, "s", allow ? 3 : 2, allow ? sh1 : sh0);
        ox_value *in[] = { x, s };
        ox_node *n = node1(g, "Reshape", 2, in, "y");
        ox_node_set_attr_i(n, "allowzero", allow);
        assert_int_equal(ox_infer_model(m, NULL, &err), OX_OK);
        assert_type(g, "y", allow ? "float32[3,4,0]" : "float32[2,12]");
        ox_model_free(m);
    }
}

static void test_conv_pool(void **state)
{
    (void)state;
    ox_error err = { 0 };
    ox_model *m = new_model(13);
    ox_graph *g = m->graph;
    const int64_t dx[] = { 1, 3, 224, 224 };
    ox_value *x = input(g, "x", OX_DT_FLOAT, 4, dx, NULL);
    const int64_t dw[] = { 64, 3, 7, 7 };
    ox_value *w = ox_graph_value(g, "w");
    ox_graph_set_initializer(g, w, ox_tensor_new(OX_DT_FLOAT, 4, dw));
    ox_value *ci[] = { x, w };
    ox_node *conv = node1(g, "Conv", 2, ci, "c");
    const int64_t s2[] = { 2, 2 }, p3[] = { 3, 3, 3, 3 }, k3[] = { 3, 3 }, p1[] = { 1, 1, 1, 1 };
    ox_node_set_attr_ints(conv, "strides", 2, s2);
    ox_node_set_attr_ints(conv, "pads", 4, p3);
    ox_value *pi[] = { conv->outputs[0] };
    ox_node *pool = node1(g, "MaxPool", 1, pi, "p");
    ox_node_set_attr_ints(pool, "kernel_shape", 2, k3);
    ox_node_set_attr_ints(pool, "strides", 2, s2);
    ox_node_set_attr_ints(pool, "pads", 4, p1);
    /* ceil_mode: 5 -> (5 - 2)/2 rounded up + 1 = 3 */
    const int64_t d5[] = { 1, 1, 5, 5 }, k2[] = { 2, 2 };
    ox_value *y = input(g, "y", OX_DT_FLOAT, 4, d5, NULL);
    ox_value *yi[] = { y };
    ox_node *cp = node1(g, "AveragePool", 1, yi, "q");
    ox_node_set_attr_ints(cp, "kernel_shape", 2, k2);
    ox_node_set_attr_ints(cp, "strides", 2, s2);
    ox_node_set_attr_i(cp, "ceil_mode", 1);
    ox_value *gi[] = { pool->outputs[0] };
    node1(g, "GlobalAveragePool", 1, gi, "gap");
    assert_int_equal(ox_infer_model(m, NULL, &err), OX_OK);
    assert_type(g, "c", "float32[1,64,112,112]");
    assert_type(g, "p", "float32[1,64,56,56]");
    assert_type(g, "q", "float32[1,1,3,3]");
    assert_type(g, "gap", "float32[1,64,1,1]");
    ox_model_free(m);
}

/* The schemas added for ops that had a kernel but no schema (issue 12). */
static void test_kernel_only_ops(void **state)
{
    (void)state;
    ox_error err = { 0 };
    ox_model *m = new_model(13);
    ox_model_set_opset(m, "com.microsoft", 1);
    ox_graph *g = m->graph;
    const int64_t dx[] = { 2, 3, 8, 8 }, dr[] = { 5, 5 }, dp[] = { 4, 6 };
    const int64_t dl[] = { 2, 10 }, dh[] = { 2, 7, 16 }, dw[] = { 16, 32 }, dg[] = { 16 };
    ox_value *ri[] = { input(g, "x", OX_DT_FLOAT, 4, dx, NULL),
                       input(g, "rois", OX_DT_FLOAT, 2, dr, NULL) };
    ox_node *mp = node1(g, "MaxRoiPool", 2, ri, "pooled");
    ox_node_set_attr_ints(mp, "pooled_shape", 2, dp);
    ox_value *li[] = { input(g, "logits", OX_DT_FLOAT, 2, dl, NULL) };
    ox_node *mn = node1(g, "Multinomial", 1, li, "draws");
    ox_node_set_attr_i(mn, "sample_size", 3);
    ox_value *h = input(g, "h", OX_DT_FLOAT, 3, dh, NULL), *w = ox_graph_value(g, "w");
    ox_graph_set_initializer(g, w, ox_tensor_new(OX_DT_FLOAT, 2, dw));
    ox_value *gamma = ox_graph_value(g, "gamma");
    ox_graph_set_initializer(g, gamma, ox_tensor_new(OX_DT_FLOAT, 1, dg));
    ox_value *gi[] = { h, w }, *ni[] = { h, gamma }, *si[] = { h, h, gamma };
    ox_value *go = ox_graph_value(g, "gelu"), *no[2] = { ox_graph_value(g, "rms"),
                                                         ox_graph_value(g, "inv") };
    ox_value *so = ox_graph_value(g, "skip");
    assert_non_null(ox_node_new(g, "GemmFastGelu", "com.microsoft", "gfg", 2, gi, 1, &go));
    assert_non_null(ox_node_new(g, "SimplifiedLayerNormalization", "com.microsoft", "sln", 2,
                                ni, 2, no));
    assert_non_null(ox_node_new(g, "SkipSimplifiedLayerNormalization", "com.microsoft", "ssln",
                                3, si, 1, &so));
    assert_int_equal(ox_infer_model(m, NULL, &err), OX_OK);
    assert_type(g, "pooled", "float32[5,3,4,6]");
    assert_type(g, "draws", "int32[2,3]");
    assert_type(g, "gelu", "float32[2,7,32]");
    assert_type(g, "rms", "float32[2,7,16]");
    assert_type(g, "inv", "float32[2,7,1]");
    assert_type(g, "skip", "float32[2,7,16]");
    ox_model_free(m);
}

/* Einsum: a valid equation gets its shape; one whose output repeats a
 * label is refused, as numpy and the kernel refuse it. */
static void test_einsum_output_labels(void **state)
{
    (void)state;
    const char *eqs[] = { "bij,jk->bik", "bij,jk->bbik" };
    for (int e = 0; e < 2; e++) {
        ox_error err = { 0 };
        ox_model *m = new_model(13);
        ox_graph *g = m->graph;
        const int64_t dx[] = { 5, 2, 3 }, dy[] = { 3, 4 };
        ox_value *in[] = { input(g, "x", OX_DT_FLOAT, 3, dx, NULL),
                           input(g, "y", OX_DT_FLOAT, 2, dy, NULL) };
        ox_node *n = node1(g, "Einsum", 2, in, "z");
        ox_node_set_attr_s(n, "equation", eqs[e]);
        ox_infer_opts o = { .strict = true };
        ox_status st = ox_infer_model(m, &o, &err);
        if (e == 0) {
            assert_int_equal(st, OX_OK);
            assert_type(g, "z", "float32[5,2,4]");
        } else {
            assert_int_not_equal(st, OX_OK);
            assert_non_null(strstr(err.msg, "repeated"));
        }
        ox_model_free(m);
    }
}

static void test_unknown_op(void **state)
{
    (void)state;
    ox_error err = { 0 };
    ox_model *m = new_model(17);
    ox_graph *g = m->graph;
    const int64_t dx[] = { 2, 2 };
    ox_value *x = input(g, "x", OX_DT_FLOAT, 2, dx, NULL);
    ox_value *o = ox_graph_value(g, "custom_out");
    ox_value *in[] = { x };
    ox_node *n = ox_node_new(g, "MyOp", "my.domain", "my", 1, in, 1, &o);
    assert_non_null(n);
    ox_value *ri[] = { o };
    node1(g, "Relu", 1, ri, "r");
    ox_infer_stats st = { 0 };
    ox_infer_opts opts = { 0 };
    opts.stats = &st;
    assert_int_equal(ox_infer_model(m, &opts, &err), OX_OK);
    assert_int_equal(st.unknown_ops, 1);
    assert_null(o->type);
    assert_null(type_of(g, "r"));
    assert_int_equal(g->n_nodes, 2); /* kept */
    ox_model_free(m);
}

static void test_if_outer_scope(void **state)
{
    (void)state;
    ox_error err = { 0 };
    ox_model *m = new_model(16);
    ox_graph *g = m->graph;
    const int64_t dx[] = { 4, 5 };
    ox_value *x = input(g, "x", OX_DT_FLOAT, 2, dx, NULL);
    ox_value *c = input(g, "c", OX_DT_BOOL, 0, NULL, NULL);
    ox_value *out = ox_graph_value(g, "res");
    ox_node *iff = ox_node_new(g, "If", "", "if", 1, &c, 1, &out);
    ox_graph *br[2];
    const char *ops[2] = { "Relu", "Neg" };
    for (int b = 0; b < 2; b++) {
        br[b] = ox_graph_new(m, g);
        ox_value *in[] = { x };  /* outer-scope value */
        char name[16];
        snprintf(name, sizeof name, "b%d", b);
        ox_value *o = ox_graph_value(br[b], name);
        ox_node_new(br[b], ops[b], "", name, 1, in, 1, &o);
        ox_graph_add_output(br[b], o);
    }
    ox_attr a;
    memset(&a, 0, sizeof a);
    a.name = "then_branch";
    a.type = OX_ATTR_GRAPH;
    a.g = br[0];
    ox_node_set_attr(iff, &a);
    a.name = "else_branch";
    a.g = br[1];
    ox_node_set_attr(iff, &a);
    ox_graph_free(br[0]);
    ox_graph_free(br[1]);
    ox_graph_relink(g);
    assert_int_equal(ox_infer_model(m, NULL, &err), OX_OK);
    assert_type(g, "res", "float32[4,5]");
    ox_model_free(m);
}

static void test_infer_node(void **state)
{
    (void)state;
    ox_error err = { 0 };
    ox_model *m = new_model(13);
    ox_graph *g = m->graph;
    const int64_t dx[] = { 2, 3, 4 };
    ox_value *x = input(g, "x", OX_DT_FLOAT, 3, dx, NULL);
    const int64_t perm[] = { 2, 0, 1 };
    ox_value *in[] = { x };
    ox_node *t = node1(g, "Transpose", 1, in, "t");
    ox_node_set_attr_ints(t, "perm", 3, perm);
    assert_int_equal(ox_infer_node(t, &err), OX_OK);
    assert_type(g, "t", "float32[4,2,3]");
    /* Constant values propagate through per-node inference too. */
    ox_value *si[] = { t->outputs[0] };
    ox_node *s = node1(g, "Shape", 1, si, "s");
    assert_int_equal(ox_infer_node(s, &err), OX_OK);
    const ox_tensor *k = ox_infer_known_value(s->outputs[0]);
    assert_non_null(k);
    assert_int_equal(ox_tensor_get_i64(k, 0), 4);
    assert_int_equal(ox_tensor_get_i64(k, 2), 3);
    ox_model_free(m);
}

/* Nodes stored out of order are still inferred producers first. */
static void test_unsorted(void **state)
{
    (void)state;
    ox_error err = { 0 };
    ox_model *m = new_model(13);
    ox_graph *g = m->graph;
    const int64_t dx[] = { 2, 5 };
    ox_value *x = input(g, "x", OX_DT_FLOAT, 2, dx, NULL);
    ox_value *a = ox_graph_value(g, "a");
    ox_value *ai[] = { a };
    node1(g, "Neg", 1, ai, "b");      /* consumer first */
    ox_value *xi[] = { x };
    ox_value *ao[] = { a };
    ox_node_new(g, "Relu", "", "a", 1, xi, 1, ao);
    assert_int_equal(ox_infer_model(m, NULL, &err), OX_OK);
    assert_type(g, "b", "float32[2,5]");
    assert_string_equal(g->nodes[0]->op_type, "Neg"); /* order untouched */
    ox_model_free(m);
}

/* A call of a model-local function is typed by inferring its body. */
static void test_local_function(void **state)
{
    (void)state;
    ox_error err = { 0 };
    ox_model *m = new_model(17);
    ox_graph *g = m->graph;
    m->functions = calloc(1, sizeof *m->functions);
    assert_non_null(m->functions);
    m->n_functions = 1;
    ox_function *f = &m->functions[0];
    f->name = ox_strdup("Flat");
    f->domain = ox_strdup("local");
    f->body = ox_graph_new(m, NULL);
    ox_value *fx = ox_graph_value(f->body, "X");
    ox_graph_add_input(f->body, fx);
    ox_value *fy = ox_graph_value(f->body, "Y");
    ox_node *fl = ox_node_new(f->body, "Flatten", "", "fl", 1, &fx, 1, &fy);
    ox_node_set_attr_i(fl, "axis", 2);
    ox_graph_add_output(f->body, fy);
    const int64_t dx[] = { 2, 3, 4, 5 };
    ox_value *x = input(g, "x", OX_DT_FLOAT, 4, dx, NULL);
    ox_value *y = ox_graph_value(g, "y");
    ox_node_new(g, "Flat", "local", "call", 1, &x, 1, &y);
    ox_infer_stats st = { 0 };
    ox_infer_opts o = { 0 };
    o.stats = &st;
    assert_int_equal(ox_infer_model(m, &o, &err), OX_OK);
    assert_type(g, "y", "float32[6,20]");
    assert_int_equal(st.unknown_ops, 0);
    ox_model_free(m);
}

static void test_opts_parse(void **state)
{
    (void)state;
    ox_error err = { 0 };
    ox_infer_opts o = { 0 };
    assert_int_equal(ox_infer_opts_add_shape(&o, "input=1x3x224x224", &err), OX_OK);
    assert_int_equal(ox_infer_opts_add_shape(&o, "ids=Nx128", &err), OX_OK);
    assert_int_equal(ox_infer_opts_add_shape(&o, "s=scalar", &err), OX_OK);
    assert_int_equal(ox_infer_opts_add_shape(&o, "a=b=2x?", &err), OX_OK);
    assert_int_equal(o.n_shapes, 4);
    assert_string_equal(o.shapes[0].name, "input");
    assert_int_equal(o.shapes[0].rank, 4);
    assert_int_equal(o.shapes[0].dims[3], 224);
    assert_int_equal(o.shapes[1].dims[0], -1);
    assert_string_equal(o.shapes[1].params[0], "N");
    assert_int_equal(o.shapes[2].rank, 0);
    assert_string_equal(o.shapes[3].name, "a=b");
    assert_int_equal(o.shapes[3].dims[1], -1);
    assert_null(o.shapes[3].params[1]);
    assert_int_equal(ox_infer_opts_add_shape(&o, "t=max_lenx128", &err), OX_OK);
    assert_int_equal(o.shapes[4].rank, 2);
    assert_string_equal(o.shapes[4].params[0], "max_len");
    assert_int_equal(o.shapes[4].dims[1], 128);
    assert_int_equal(ox_infer_opts_add_shape(&o, "u=N,M,3", &err), OX_OK);
    assert_int_equal(o.shapes[5].rank, 3);
    assert_string_equal(o.shapes[5].params[1], "M");
    assert_int_equal(ox_infer_opts_add_shape(&o, "noequals", &err), OX_EINVAL);
    assert_int_equal(ox_infer_opts_add_shape(&o, "x=1x", &err), OX_EINVAL);
    assert_int_equal(ox_infer_opts_add_dim(&o, "batch=4", &err), OX_OK);
    assert_int_equal(o.dims[0].value, 4);
    assert_int_equal(ox_infer_opts_add_dim(&o, "batch=x", &err), OX_EINVAL);
    assert_int_equal(ox_infer_opts_add_dim(&o, "=3", &err), OX_EINVAL);
    ox_infer_opts_free(&o);
}

/* Loop with a known trip count and no cond input: the scan output gets
 * the trip count as its leading dim; the body sees outer values. */
static void test_loop(void **state)
{
    (void)state;
    ox_error err = { 0 };
    ox_model *m = new_model(16);
    ox_graph *g = m->graph;
    const int64_t dx[] = { 3 };
    ox_value *x = input(g, "x", OX_DT_FLOAT, 1, dx, NULL);
    ox_value *trip = ox_graph_value(g, "trip");
    ox_tensor *tt = ox_tensor_new(OX_DT_INT64, 0, NULL);
    ox_tensor_set_i64(tt, 0, 7);
    ox_graph_set_initializer(g, trip, tt);
    ox_graph *body = ox_graph_new(m, g);
    ox_value *it = ox_graph_value(body, "it"), *cin = ox_graph_value(body, "cin");
    ox_graph_add_input(body, it);
    ox_graph_add_input(body, cin);
    ox_value *cout = ox_graph_value(body, "cout"), *sc = ox_graph_value(body, "sc");
    ox_node_new(body, "Identity", "", "idc", 1, &cin, 1, &cout);
    ox_value *xin[] = { x };
    ox_node_new(body, "Relu", "", "r", 1, xin, 1, &sc);
    ox_graph_add_output(body, cout);
    ox_graph_add_output(body, sc);
    ox_value *lin[] = { trip, NULL };
    ox_value *lout = ox_graph_value(g, "scan");
    ox_node *loop = ox_node_new(g, "Loop", "", "loop", 2, lin, 1, &lout);
    ox_attr a;
    memset(&a, 0, sizeof a);
    a.name = "body";
    a.type = OX_ATTR_GRAPH;
    a.g = body;
    ox_node_set_attr(loop, &a);
    ox_graph_free(body);
    ox_graph_relink(g);
    assert_int_equal(ox_infer_model(m, NULL, &err), OX_OK);
    assert_type(g, "scan", "float32[7,3]");
    ox_model_free(m);
}


/* ---- robustness: every registered op on random, often invalid inputs ----- */

static uint32_t rng_state = 12345;
static uint32_t rnd(uint32_t n)
{
    /* xorshift32: deterministic across runs */
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return n ? rng_state % n : 0;
}

static int64_t rnd_int(void)
{
    static const int64_t pick[] = { -3, -2, -1, 0, 1, 1, 2, 2, 3, 4, 7, 100, INT64_MAX,
                                    INT64_MIN, 1 << 20 };
    return pick[rnd(sizeof pick / sizeof pick[0])];
}

static ox_type *rnd_type(void)
{
    static const ox_dtype dts[] = { OX_DT_FLOAT, OX_DT_INT64, OX_DT_BOOL, OX_DT_INT32,
                                    OX_DT_FLOAT16, OX_DT_STRING, OX_DT_UINT8 };
    int rank = (int)rnd(6) - (rnd(8) == 0 ? 1 : 0);  /* sometimes unknown rank */
    ox_type *t = ox_type_new_tensor(dts[rnd(sizeof dts / sizeof dts[0])], rank, NULL);
    for (int i = 0; t && i < rank; i++) {
        switch (rnd(5)) {
        case 0: t->dims[i].value = -1; break;
        case 1: t->dims[i].value = -1; t->dims[i].param = ox_strdup(rnd(2) ? "N" : "M"); break;
        default: t->dims[i].value = (int64_t)rnd(9); break;
        }
    }
    return t;
}

static ox_tensor *rnd_tensor(void)
{
    int rank = (int)rnd(3);
    int64_t dims[2] = { (int64_t)rnd(5), (int64_t)rnd(4) };
    ox_tensor *t = ox_tensor_new(rnd(3) ? OX_DT_INT64 : OX_DT_FLOAT, rank, dims);
    for (int64_t i = 0; t && i < t->numel; i++)
        ox_tensor_set_i64(t, i, rnd_int() % 1000);
    return t;
}

static void set_rnd_attr(ox_node *n, const ox_op_attr_info *a)
{
    static const char *strs[] = { "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID", "none",
                                  "bidirectional", "reverse", "DCR", "CRD", "mean", "nearest",
                                  "linear", "not_larger", "not_smaller", "ij,jk->ik",
                                  "...ii->...i", "i,i", "..", ".", "->", "abc", "" };
    if (rnd(4) == 0 || a->type == OX_ATTR_GRAPH || a->type == OX_ATTR_GRAPHS)
        return;   /* absent */
    switch (a->type) {
    case OX_ATTR_INT:
        ox_node_set_attr_i(n, a->name, rnd_int());
        break;
    case OX_ATTR_FLOAT:
        ox_node_set_attr_f(n, a->name, (float)rnd_int());
        break;
    case OX_ATTR_STRING:
        ox_node_set_attr_s(n, a->name, strs[rnd(sizeof strs / sizeof strs[0])]);
        break;
    case OX_ATTR_INTS: {
        int64_t v[8];
        int cnt = (int)rnd(9);
        for (int i = 0; i < cnt; i++)
            v[i] = rnd_int();
        ox_node_set_attr_ints(n, a->name, cnt, v);
        break;
    }
    case OX_ATTR_TENSOR: {
        ox_tensor *t = rnd_tensor();
        if (t)
            ox_node_set_attr_t(n, a->name, t);
        break;
    }
    default:
        break;
    }
}

static void fuzz_schema(const ox_op_schema *s)
{
    ox_model *m = new_model(s->since_version);
    if (*s->domain)
        ox_model_set_opset(m, s->domain, s->since_version);
    ox_graph *g = m->graph;
    ox_op_arity ar;
    ox_op_schema_arity(s, &ar);
    int nin = ar.max_in < 0 ? ar.min_in + (int)rnd(4) : ar.min_in + (int)rnd((uint32_t)(ar.max_in - ar.min_in + 1));
    int nout = ar.max_out < 0 ? 1 + (int)rnd(3) : (ar.max_out ? ar.max_out : 1);
    ox_value *in[16] = { NULL }, *out[8] = { NULL };
    if (nin > 16)
        nin = 16;
    if (nout > 8)
        nout = 8;
    for (int i = 0; i < nin; i++) {
        if (rnd(10) == 0)
            continue;   /* omitted (optional or not) */
        char name[32];
        snprintf(name, sizeof name, "in%d", i);
        in[i] = ox_graph_value(g, name);
        if (rnd(3) == 0) {
            ox_tensor *t = rnd_tensor();
            ox_graph_set_initializer(g, in[i], t);
        } else {
            in[i]->type = rnd_type();
            ox_graph_add_input(g, in[i]);
        }
    }
    for (int i = 0; i < nout; i++) {
        char name[32];
        snprintf(name, sizeof name, "out%d", i);
        out[i] = ox_graph_value(g, name);
    }
    ox_node *n = ox_node_new(g, s->op_type, s->domain, "fuzz", nin, in, nout, out);
    assert_non_null(n);
    ox_op_attr_info a;
    for (int k = 0; ox_op_schema_attr(s, k, &a); k++)
        set_rnd_attr(n, &a);
    ox_error err = { 0 };
    /* Any status is fine; crashing or reading out of bounds is not. */
    (void)ox_infer_model(m, NULL, &err);
    ox_error_clear(&err);
    (void)ox_infer_node(n, &err);
    ox_model_free(m);
}

static void test_fuzz_all_ops(void **state)
{
    (void)state;
    const ox_op_schema *s;
    int runs = 0;
    for (int i = 0; (s = ox_op_at(i)); i++) {
        for (int r = 0; r < 40; r++) {
            fuzz_schema(s);
            runs++;
        }
    }
    printf("%d random nodes inferred without a crash\n", runs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_broadcast_symbolic),
        cmocka_unit_test(test_shape_chain),
        cmocka_unit_test(test_reshape_allowzero),
        cmocka_unit_test(test_conv_pool),
        cmocka_unit_test(test_kernel_only_ops),
        cmocka_unit_test(test_unknown_op),
        cmocka_unit_test(test_if_outer_scope),
        cmocka_unit_test(test_infer_node),
        cmocka_unit_test(test_unsorted),
        cmocka_unit_test(test_local_function),
        cmocka_unit_test(test_opts_parse),
        cmocka_unit_test(test_loop),
        cmocka_unit_test(test_einsum_output_labels),
        cmocka_unit_test(test_fuzz_all_ops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
