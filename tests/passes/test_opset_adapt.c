/* The opset converter's adapters one by one: each builds the smallest
 * model holding the operator at one opset, converts it across the
 * version that changed the operator (up and down), checks the rewritten
 * signature, that our checker accepts the result, and that the executor
 * computes the same outputs before and after on random inputs. Refusals
 * are checked to name the operator, the node and the target opset. */
#include "fuse_harness.h"

#include "onnxscope/opset.h"

static const int64_t d234[3] = {2, 3, 4};

/* Converts a clone of m to `to`: OX_OK, checker-clean, same outputs. */
static ox_model *cv_ok(ox_model *m, int to)
{
    ox_error err = {0};
    assert_int_equal(ox_infer_model(m, NULL, &err), OX_OK);
    ox_model *o = ox_model_clone(m);
    ox_opset_report rep;
    if (ox_opset_convert(o, to, &rep, &err))
        fail_msg("convert to %d: %s", to, err.msg);
    assert_int_equal(ox_model_opset(o, ""), to);
    ox_check_report cr = {0};
    ox_status st = ox_check_model(o, &cr);
    if (st)
        print_error("checker: %s\n", cr.n_issues ? cr.issues[0].msg : "?");
    ox_check_report_free(&cr);
    assert_int_equal(st, OX_OK);
    ox_exec *ea, *eb;
    ox_exec_opts eo = {.threads = 1};
    if (ox_exec_new(m, &eo, &ea, &err))
        fail_msg("exec (original): %s", err.msg);
    if (ox_exec_new(o, &eo, &eb, &err))
        fail_msg("exec (converted): %s", err.msg);
    int ni = m->graph->n_inputs, no = m->graph->n_outputs;
    ox_rval *in[8] = {0}, *ra[8] = {0}, *rb[8] = {0};
    assert_int_equal(ox_random_inputs(m, NULL, 3, 10, in, &err), OX_OK);
    if (ox_exec_run(ea, ni, in, no, ra, &err))
        fail_msg("run (original): %s", err.msg);
    if (ox_exec_run(eb, ni, in, no, rb, &err))
        fail_msg("run (converted): %s", err.msg);
    for (int k = 0; k < no; k++) {
        char why[256];
        assert_string_equal(m->graph->outputs[k]->name, o->graph->outputs[k]->name);
        if (!ox_rval_allclose(rb[k], ra[k], 1e-5, 1e-6, why, sizeof why))
            fail_msg("output %d differs after conversion to %d: %s", k, to, why);
        ox_rval_free(ra[k]);
        ox_rval_free(rb[k]);
    }
    for (int k = 0; k < ni; k++)
        ox_rval_free(in[k]);
    ox_exec_free(ea);
    ox_exec_free(eb);
    return o;
}

/* The conversion to `to` is refused, naming op, node and opset. */
static void cv_refused(ox_model *m, int to, const char *op, const char *node)
{
    ox_error err = {0};
    ox_infer_model(m, NULL, NULL);
    ox_model *o = ox_model_clone(m);
    assert_int_equal(ox_opset_convert(o, to, NULL, &err), OX_EUNSUPPORTED);
    char want[200];
    snprintf(want, sizeof want, "%s node '%s' cannot be converted to opset %d: ", op, node, to);
    if (strncmp(err.msg, want, strlen(want)))
        fail_msg("refusal '%s' does not start with '%s'", err.msg, want);
    assert_null(strchr(err.msg, '\n'));
    ox_model_free(o);
}

static ox_node *first(const ox_model *m, const char *op)
{
    for (int i = 0; i < m->graph->n_nodes; i++)
        if (!strcmp(m->graph->nodes[i]->op_type, op))
            return m->graph->nodes[i];
    fail_msg("no %s node", op);
    return NULL;
}

static ox_model *unary(int opset, const char *op, ox_node **n)
{
    ox_model *m = fh_model(opset);
    fh_input(m, "x", 3, d234);
    *n = fh_node(m, op, "y", "x", NULL);
    fh_output(m, "y");
    return m;
}

/* ---- axes attribute <-> input ---- */

static void test_squeeze_unsqueeze(void **state)
{
    (void)state;
    ox_node *n;
    ox_model *m = fh_model(11);
    const int64_t d[3] = {2, 1, 4};
    fh_input(m, "x", 3, d);
    n = fh_node(m, "Squeeze", "s", "x", NULL);
    int64_t ax = 1;
    ox_node_set_attr_ints(n, "axes", 1, &ax);
    n = fh_node(m, "Unsqueeze", "y", "s", NULL);
    ax = -1;
    ox_node_set_attr_ints(n, "axes", 1, &ax);
    fh_output(m, "y");
    ox_model *up = cv_ok(m, 13);
    assert_int_equal(first(up, "Squeeze")->n_inputs, 2);
    assert_null(ox_node_attr(first(up, "Unsqueeze"), "axes"));
    ox_model *down = cv_ok(up, 11);
    const int64_t *v;
    assert_int_equal(ox_node_attr_ints(first(down, "Squeeze"), "axes", &v), 1);
    assert_int_equal(v[0], 1);
    assert_int_equal(first(down, "Squeeze")->n_inputs, 1);
    /* Below 11 a negative axis is made positive (Unsqueeze: output rank). */
    ox_model *old = cv_ok(m, 9);
    assert_int_equal(ox_node_attr_ints(first(old, "Unsqueeze"), "axes", &v), 1);
    assert_int_equal(v[0], 2);
    ox_model_free(old);
    ox_model_free(down);
    ox_model_free(up);
    ox_model_free(m);
}

static void test_reduce_axes(void **state)
{
    (void)state;
    /* ReduceSum changed at 13, the other Reduce ops at 18. */
    const char *ops[2] = {"ReduceSum", "ReduceMean"};
    const int at[2] = {13, 18};
    for (int k = 0; k < 2; k++) {
        ox_node *n;
        ox_model *m = unary(at[k] - 1, ops[k], &n);
        int64_t ax[2] = {0, 2};
        ox_node_set_attr_ints(n, "axes", 2, ax);
        ox_model *up = cv_ok(m, at[k]);
        assert_int_equal(first(up, ops[k])->n_inputs, 2);
        assert_null(ox_node_attr(first(up, ops[k]), "axes"));
        ox_model *down = cv_ok(up, at[k] - 1);
        assert_int_equal(first(down, ops[k])->n_inputs, 1);
        assert_non_null(ox_node_attr(first(down, ops[k]), "axes"));
        ox_model_free(down);
        ox_model_free(up);
        ox_model_free(m);
    }
    /* noop_with_empty_axes and no axes: the identity below 13. */
    ox_node *n;
    ox_model *m = unary(13, "ReduceSum", &n);
    ox_node_set_attr_i(n, "noop_with_empty_axes", 1);
    ox_model *down = cv_ok(m, 12);
    assert_int_equal(fh_count(down, "Identity"), 1);
    ox_model_free(down);
    ox_model_free(m);
    /* axes fed at run time cannot become an attribute. */
    m = fh_model(13);
    fh_input(m, "x", 3, d234);
    const int64_t one = 1;
    ox_value *a = ox_graph_value(m->graph, "axes");
    a->type = ox_type_new_tensor(OX_DT_INT64, 1, &one);
    ox_graph_add_input(m->graph, a);
    fh_node(m, "ReduceSum", "y", "x", "axes", NULL);
    fh_output(m, "y");
    cv_refused(m, 12, "ReduceSum", "y");
    ox_model_free(m);
}

static void test_split(void **state)
{
    (void)state;
    ox_model *m = fh_model(12);
    const int64_t d[2] = {5, 3};
    fh_input(m, "x", 2, d);
    ox_value *outs[2] = {ox_graph_value(m->graph, "a"), ox_graph_value(m->graph, "b")};
    ox_value *x = ox_graph_value(m->graph, "x");
    ox_node *n = ox_node_new(m->graph, "Split", "", "split", 1, &x, 2, outs);
    int64_t sz[2] = {2, 3};
    ox_node_set_attr_ints(n, "split", 2, sz);
    fh_output(m, "a");
    fh_output(m, "b");
    ox_model *up = cv_ok(m, 13);
    assert_int_equal(first(up, "Split")->n_inputs, 2);
    ox_model *down = cv_ok(up, 12);
    assert_non_null(ox_node_attr(first(down, "Split"), "split"));
    ox_model_free(down);
    ox_model_free(up);
    ox_model_free(m);
    /* num_outputs (18) with an uneven split: explicit sizes below 18. */
    m = fh_model(18);
    fh_input(m, "x", 2, d);
    outs[0] = ox_graph_value(m->graph, "a");
    outs[1] = ox_graph_value(m->graph, "b");
    x = ox_graph_value(m->graph, "x");
    n = ox_node_new(m->graph, "Split", "", "split", 1, &x, 2, outs);
    ox_node_set_attr_i(n, "num_outputs", 2);
    fh_output(m, "a");
    fh_output(m, "b");
    down = cv_ok(m, 13);
    assert_null(ox_node_attr(first(down, "Split"), "num_outputs"));
    assert_int_equal(first(down, "Split")->n_inputs, 2);
    ox_model *old = cv_ok(m, 11);
    const int64_t *v;
    assert_int_equal(ox_node_attr_ints(first(old, "Split"), "split", &v), 2);
    assert_int_equal(v[0], 3);
    assert_int_equal(v[1], 2);
    ox_model_free(old);
    ox_model_free(down);
    ox_model_free(m);
}

/* ---- Clip, Pad, Slice, TopK, Dropout ---- */

static void test_clip(void **state)
{
    (void)state;
    ox_node *n;
    ox_model *m = unary(10, "Clip", &n);
    ox_node_set_attr_f(n, "min", -0.25f);
    ox_node_set_attr_f(n, "max", 0.5f);
    ox_model *up = cv_ok(m, 11);
    assert_int_equal(first(up, "Clip")->n_inputs, 3);
    assert_null(ox_node_attr(first(up, "Clip"), "min"));
    ox_model *down = cv_ok(up, 7);
    assert_int_equal(first(down, "Clip")->n_inputs, 1);
    assert_true(ox_node_attr_f(first(down, "Clip"), "max", 0) == 0.5f);
    ox_model_free(down);
    ox_model_free(up);
    ox_model_free(m);
    /* min fed at run time. */
    m = fh_model(13);
    fh_input(m, "x", 3, d234);
    ox_value *lo = ox_graph_value(m->graph, "lo");
    lo->type = ox_type_new_tensor(OX_DT_FLOAT, 0, NULL);
    ox_graph_add_input(m->graph, lo);
    fh_node(m, "Clip", "y", "x", "lo", NULL);
    fh_output(m, "y");
    cv_refused(m, 10, "Clip", "y");
    ox_model_free(m);
}

static void test_pad(void **state)
{
    (void)state;
    ox_node *n;
    ox_model *m = unary(10, "Pad", &n);
    int64_t pads[6] = {0, 1, 0, 0, 2, 1};
    ox_node_set_attr_ints(n, "pads", 6, pads);
    ox_node_set_attr_f(n, "value", 1.5f);
    ox_model *up = cv_ok(m, 11);
    assert_int_equal(first(up, "Pad")->n_inputs, 3);
    ox_model *down = cv_ok(up, 10);
    assert_non_null(ox_node_attr(first(down, "Pad"), "pads"));
    assert_true(ox_node_attr_f(first(down, "Pad"), "value", 0) == 1.5f);
    ox_model_free(down);
    ox_model_free(up);
    ox_model_free(m);
    /* axes (18) folded into full-rank pads below 18. */
    m = fh_model(18);
    fh_input(m, "x", 3, d234);
    int64_t p2[2] = {1, 2}, ax = -1;
    fh_ints(m, "pads", 2, p2);
    fh_ints(m, "axes", 1, &ax);
    fh_node(m, "Pad", "y", "x", "pads", "", "axes", NULL);
    fh_output(m, "y");
    down = cv_ok(m, 17);
    assert_int_equal(first(down, "Pad")->n_inputs, 2);
    ox_model_free(down);
    ox_model_free(m);
    /* wrap (19) has no older form. */
    m = unary(19, "Pad", &n);
    ox_node_set_attr_s(n, "mode", "wrap");
    fh_ints(m, "pads", 6, pads);
    ox_node_set_input(n, 1, ox_graph_value(m->graph, "pads"));
    cv_refused(m, 18, "Pad", "y");
    ox_model_free(m);
}

static void test_slice(void **state)
{
    (void)state;
    ox_node *n;
    ox_model *m = unary(9, "Slice", &n);
    int64_t s[2] = {1, 0}, e[2] = {3, -1}, a[2] = {1, -1};
    ox_node_set_attr_ints(n, "starts", 2, s);
    ox_node_set_attr_ints(n, "ends", 2, e);
    ox_node_set_attr_ints(n, "axes", 2, a);
    ox_model *up = cv_ok(m, 10);
    assert_int_equal(first(up, "Slice")->n_inputs, 4);
    ox_model *down = cv_ok(up, 9);
    assert_int_equal(first(down, "Slice")->n_inputs, 1);
    ox_model_free(down);
    ox_model_free(up);
    ox_model_free(m);
    /* A step other than 1 needs 10. */
    m = fh_model(13);
    fh_input(m, "x", 3, d234);
    int64_t st = 2, zero = 0, big = 100;
    fh_ints(m, "s", 1, &zero);
    fh_ints(m, "e", 1, &big);
    fh_ints(m, "a", 1, &zero);
    fh_ints(m, "st", 1, &st);
    fh_node(m, "Slice", "y", "x", "s", "e", "a", "st", NULL);
    fh_output(m, "y");
    cv_refused(m, 9, "Slice", "y");
    ox_model_free(m);
}

static void test_topk(void **state)
{
    (void)state;
    ox_model *m = fh_model(9);
    fh_input(m, "x", 3, d234);
    ox_value *x = ox_graph_value(m->graph, "x");
    ox_value *o[2] = {ox_graph_value(m->graph, "v"), ox_graph_value(m->graph, "i")};
    ox_node *n = ox_node_new(m->graph, "TopK", "", "topk", 1, &x, 2, o);
    ox_node_set_attr_i(n, "k", 2);
    fh_output(m, "v");
    fh_output(m, "i");
    ox_model *up = cv_ok(m, 11);
    assert_int_equal(first(up, "TopK")->n_inputs, 2);
    ox_model *down = cv_ok(up, 9);
    assert_int_equal(ox_node_attr_i(first(down, "TopK"), "k", 0), 2);
    ox_model_free(down);
    ox_model_free(up);
    ox_model_free(m);
    /* largest=0 (11) has no older form. */
    m = fh_model(11);
    fh_input(m, "x", 3, d234);
    int64_t k = 2;
    fh_ints(m, "k", 1, &k);
    ox_value *in[2] = {ox_graph_value(m->graph, "x"), ox_graph_value(m->graph, "k")};
    o[0] = ox_graph_value(m->graph, "v");
    o[1] = ox_graph_value(m->graph, "i");
    n = ox_node_new(m->graph, "TopK", "", "topk", 2, in, 2, o);
    ox_node_set_attr_i(n, "largest", 0);
    fh_output(m, "v");
    cv_refused(m, 10, "TopK", "topk");
    ox_model_free(m);
}

static void test_dropout(void **state)
{
    (void)state;
    ox_node *n;
    ox_model *m = unary(11, "Dropout", &n);
    ox_node_set_attr_f(n, "ratio", 0.25f);
    ox_model *up = cv_ok(m, 12);
    assert_int_equal(first(up, "Dropout")->n_inputs, 2);
    ox_model *down = cv_ok(up, 7);
    assert_true(ox_node_attr_f(first(down, "Dropout"), "ratio", 0) == 0.25f);
    ox_model_free(down);
    ox_model_free(up);
    ox_model_free(m);
    /* A used mask changes type at 10. */
    m = fh_model(9);
    fh_input(m, "x", 3, d234);
    ox_value *x = ox_graph_value(m->graph, "x");
    ox_value *o[2] = {ox_graph_value(m->graph, "y"), ox_graph_value(m->graph, "mask")};
    ox_node_new(m->graph, "Dropout", "", "drop", 1, &x, 2, o);
    fh_output(m, "y");
    fh_output(m, "mask");
    cv_refused(m, 10, "Dropout", "drop");
    ox_model_free(m);
}

/* ---- BatchNormalization, Scatter, Softmax family ---- */

static void test_batchnorm(void **state)
{
    (void)state;
    const int64_t d[4] = {2, 3, 4, 4}, c3 = 3;
    for (int spatial = 1; spatial >= 0; spatial--) {
        ox_model *m = fh_model(8);
        fh_input(m, "x", 4, d);
        fh_init(m, "s", 1, &c3, NULL, 0.5, 1.5);
        fh_init(m, "b", 1, &c3, NULL, -1, 1);
        fh_init(m, "mu", 1, &c3, NULL, -1, 1);
        fh_init(m, "var", 1, &c3, NULL, 0.5, 2);
        ox_node *n = fh_node(m, "BatchNormalization", "y", "x", "s", "b", "mu", "var", NULL);
        ox_node_set_attr_i(n, "spatial", spatial);
        fh_output(m, "y");
        if (spatial) {
            ox_model *up = cv_ok(m, 15);
            assert_null(ox_node_attr(first(up, "BatchNormalization"), "spatial"));
            ox_model *down = cv_ok(up, 7);
            ox_model_free(down);
            ox_model_free(up);
        } else {
            cv_refused(m, 9, "BatchNormalization", "y");
        }
        ox_model_free(m);
    }
}

static void test_scatter(void **state)
{
    (void)state;
    ox_model *m = fh_model(10);
    const int64_t d[2] = {3, 3}, di[2] = {1, 2};
    fh_input(m, "x", 2, d);
    ox_tensor *t = ox_tensor_new(OX_DT_INT64, 2, di);
    ox_tensor_set_i64(t, 0, 2);
    ox_tensor_set_i64(t, 1, 0);
    ox_value *idx = ox_graph_value(m->graph, "idx");
    ox_graph_set_initializer(m->graph, idx, t);
    fh_init(m, "upd", 2, di, NULL, -1, 1);
    ox_node *n = fh_node(m, "Scatter", "y", "x", "idx", "upd", NULL);
    ox_node_set_attr_i(n, "axis", 1);
    fh_output(m, "y");
    ox_model *up = cv_ok(m, 11);
    assert_int_equal(fh_count(up, "ScatterElements"), 1);
    ox_model *down = cv_ok(up, 9);
    assert_int_equal(fh_count(down, "Scatter"), 1);
    cv_refused(up, 8, "ScatterElements", "y");
    ox_node_set_attr_s(first(up, "ScatterElements"), "reduction", "add");
    ox_model_free(cv_ok(up, 16));
    cv_refused(up, 15, "ScatterElements", "y");
    ox_model_free(down);
    ox_model_free(up);
    ox_model_free(m);
}

static void test_softmax_axis(void **state)
{
    (void)state;
    const char *ops[3] = {"Softmax", "LogSoftmax", "Hardmax"};
    for (int k = 0; k < 3; k++) {
        /* Before 13: coerced to 2-D at axis 1 (over dims 1 and 2). */
        ox_node *n;
        ox_model *m = unary(12, ops[k], &n);
        ox_node_set_attr_i(n, "axis", 1);
        ox_model *up = cv_ok(m, 13);
        assert_int_equal(fh_count(up, "Flatten"), 1);
        assert_int_equal(fh_count(up, "Reshape"), 1);
        ox_model_free(up);
        /* The last axis: only the attribute changes. */
        ox_node_set_attr_i(n, "axis", 2);
        up = cv_ok(m, 13);
        assert_int_equal(up->graph->n_nodes, 1);
        ox_model_free(up);
        ox_model_free(m);
        /* From 13: along axis 1 only; below 13 moved last by Transposes. */
        m = unary(13, ops[k], &n);
        ox_node_set_attr_i(n, "axis", 1);
        ox_model *down = cv_ok(m, 12);
        assert_int_equal(fh_count(down, "Transpose"), 2);
        ox_model_free(down);
        down = cv_ok(m, 7);
        ox_model_free(down);
        ox_model_free(m);
    }
}

/* ---- Resize and Upsample ---- */

static void test_resize_upsample(void **state)
{
    (void)state;
    const int64_t d[4] = {1, 2, 3, 4};
    const float sc[4] = {1, 1, 2, 3};
    for (int v = 7; v <= 9; v += 2) {
        ox_model *m = fh_model(v);
        fh_input(m, "x", 4, d);
        ox_node *n;
        if (v == 7) {
            n = fh_node(m, "Upsample", "y", "x", NULL);
            ox_attr a = {.name = "scales", .type = OX_ATTR_FLOATS, .n = 4, .floats = (float *)sc};
            ox_node_set_attr(n, &a);
        } else {
            const int64_t four = 4;
            fh_init(m, "sc", 1, &four, sc, 0, 0);
            n = fh_node(m, "Upsample", "y", "x", "sc", NULL);
        }
        fh_output(m, "y");
        for (int mode = 0; mode < 2; mode++) {
            ox_node_set_attr_s(n, "mode", mode ? "linear" : "nearest");
            ox_model *r10 = cv_ok(m, 10);
            assert_int_equal(fh_count(r10, "Resize"), 1);
            ox_model *r13 = cv_ok(m, 13);
            assert_string_equal(ox_node_attr_s(first(r13, "Resize"),
                                               "coordinate_transformation_mode", ""),
                                "asymmetric");
            ox_model *back = cv_ok(r13, 8);
            assert_int_equal(fh_count(back, "Upsample"), 1);
            ox_model *r11 = cv_ok(r13, 11);
            assert_int_equal(first(r11, "Resize")->n_inputs, 3);
            ox_model_free(r11);
            ox_model_free(back);
            ox_model_free(r13);
            ox_model_free(r10);
        }
        ox_model_free(m);
    }
    /* half_pixel (the default from 11) has no older form. */
    ox_model *m = fh_model(13);
    fh_input(m, "x", 4, d);
    const int64_t four = 4;
    fh_init(m, "sc", 1, &four, sc, 0, 0);
    fh_node(m, "Resize", "y", "x", "", "sc", NULL);
    fh_output(m, "y");
    cv_refused(m, 10, "Resize", "y");
    ox_model_free(cv_ok(m, 11));
    ox_model_free(m);
}

/* ---- expansions ---- */

static void test_layernorm(void **state)
{
    (void)state;
    const int64_t d4 = 4, d34[2] = {3, 4};
    for (int axis = -1; axis >= -2; axis--) {
        ox_model *m = fh_model(17);
        fh_input(m, "x", 3, d234);
        fh_init(m, "g", axis == -1 ? 1 : 2, axis == -1 ? &d4 : d34, NULL, 0.5, 1.5);
        fh_init(m, "b", axis == -1 ? 1 : 2, axis == -1 ? &d4 : d34, NULL, -1, 1);
        ox_node *n = fh_node(m, "LayerNormalization", "y", "x", "g", "b", NULL);
        ox_node_set_attr_i(n, "axis", axis);
        ox_node_set_attr_f(n, "epsilon", 1e-3f);
        fh_output(m, "y");
        for (int to = 16; to >= 9; to -= 7) {
            ox_model *e = cv_ok(m, to);
            assert_int_equal(fh_count(e, "LayerNormalization"), 0);
            assert_int_equal(fh_count(e, "ReduceMean"), 2);
            ox_model_free(e);
        }
        ox_model_free(m);
    }
}

static void test_gelu_rms_and_small_ops(void **state)
{
    (void)state;
    for (int t = 0; t < 2; t++) {
        ox_node *n;
        ox_model *m = unary(20, "Gelu", &n);
        if (t)
            ox_node_set_attr_s(n, "approximate", "tanh");
        ox_model *e = cv_ok(m, 13);
        assert_int_equal(fh_count(e, "Gelu"), 0);
        assert_int_equal(fh_count(e, t ? "Tanh" : "Erf"), 1);
        ox_model_free(e);
        if (!t)
            cv_refused(m, 8, "Gelu", "y");
        ox_model_free(m);
    }
    ox_model *m = fh_model(23);
    fh_input(m, "x", 3, d234);
    const int64_t d4 = 4;
    fh_init(m, "g", 1, &d4, NULL, 0.5, 1.5);
    fh_node(m, "RMSNormalization", "y", "x", "g", NULL);
    fh_output(m, "y");
    ox_model *e = cv_ok(m, 18);
    assert_int_equal(fh_count(e, "RMSNormalization"), 0);
    ox_model_free(e);
    e = cv_ok(m, 13);
    ox_model_free(e);
    ox_model_free(m);
    const struct {
        const char *op;
        int since;
    } small[] = {{"Mish", 18}, {"HardSwish", 14}, {"Celu", 12}};
    for (size_t k = 0; k < sizeof small / sizeof *small; k++) {
        ox_node *n;
        m = unary(small[k].since, small[k].op, &n);
        e = cv_ok(m, small[k].since - 1);
        assert_int_equal(fh_count(e, small[k].op), 0);
        ox_model_free(e);
        ox_model_free(m);
    }
    m = fh_model(12);
    fh_input(m, "x", 3, d234);
    fh_input(m, "z", 3, d234);
    fh_node(m, "LessOrEqual", "y", "x", "z", NULL);
    fh_output(m, "y");
    e = cv_ok(m, 11);
    assert_int_equal(fh_count(e, "Not"), 1);
    ox_model_free(e);
    ox_model_free(m);
}

/* Attention (23) expanded: 4-D with a boolean mask and causal masking;
 * 3-D grouped-query heads with a KV cache (present outputs). */
static void test_attention(void **state)
{
    (void)state;
    ox_model *m = fh_model(23);
    const int64_t dq[4] = {1, 2, 3, 4}, dk[4] = {1, 2, 5, 4}, dm[2] = {3, 5};
    fh_input(m, "q", 4, dq);
    fh_input(m, "k", 4, dk);
    fh_input(m, "v", 4, dk);
    ox_tensor *mt = ox_tensor_new(OX_DT_BOOL, 2, dm);
    for (int i = 0; i < 15; i++)
        ox_tensor_set_i64(mt, i, i % 4 != 1);
    ox_graph_set_initializer(m->graph, ox_graph_value(m->graph, "mask"), mt);
    ox_node *n = fh_node(m, "Attention", "y", "q", "k", "v", "mask", NULL);
    ox_node_set_attr_i(n, "is_causal", 1);
    fh_output(m, "y");
    ox_model *e = cv_ok(m, 22);
    assert_int_equal(fh_count(e, "Attention"), 0);
    assert_int_equal(fh_count(e, "Softmax"), 1);
    ox_model_free(e);
    e = cv_ok(m, 9);
    ox_model_free(e);
    cv_refused(m, 8, "Attention", "y");
    ox_model_free(m);
    m = fh_model(23);
    const int64_t q3[3] = {2, 3, 8}, k3[3] = {2, 3, 4}, past[4] = {2, 1, 2, 4};
    fh_input(m, "q", 3, q3);
    fh_input(m, "k", 3, k3);
    fh_input(m, "v", 3, k3);
    fh_input(m, "pk", 4, past);
    fh_input(m, "pv", 4, past);
    ox_value *in[6], *out[3];
    const char *ins[6] = {"q", "k", "v", "", "pk", "pv"}, *outs[3] = {"y", "pres_k", "pres_v"};
    for (int i = 0; i < 6; i++)
        in[i] = *ins[i] ? ox_graph_value(m->graph, ins[i]) : NULL;
    for (int i = 0; i < 3; i++)
        out[i] = ox_graph_value(m->graph, outs[i]);
    n = ox_node_new(m->graph, "Attention", "", "attn", 6, in, 3, out);
    ox_node_set_attr_i(n, "q_num_heads", 2);
    ox_node_set_attr_i(n, "kv_num_heads", 1);
    ox_node_set_attr_f(n, "softcap", 2.0f);
    for (int i = 0; i < 3; i++)
        fh_output(m, outs[i]);
    e = cv_ok(m, 18);
    assert_int_equal(fh_count(e, "Tile"), 2);
    ox_model_free(e);
    ox_model_free(m);
}

/* ---- smaller signature changes ---- */

static void test_small_changes(void **state)
{
    (void)state;
    ox_node *n;
    /* ArgMax select_last_index (12). */
    ox_model *m = unary(12, "ArgMax", &n);
    ox_node_set_attr_i(n, "select_last_index", 1);
    cv_refused(m, 11, "ArgMax", "y");
    ox_node_set_attr_i(n, "select_last_index", 0);
    ox_model_free(cv_ok(m, 11));
    ox_model_free(m);
    /* Shape start/end (15) become a Slice. */
    m = unary(15, "Shape", &n);
    ox_node_set_attr_i(n, "start", 1);
    ox_model *e = cv_ok(m, 14);
    assert_int_equal(fh_count(e, "Slice"), 1);
    ox_model_free(e);
    e = cv_ok(m, 9);
    assert_int_equal(fh_count(e, "Slice"), 1);
    ox_model_free(e);
    ox_model_free(m);
    /* MaxPool ceil_mode (10). */
    const int64_t d[4] = {1, 2, 5, 5}, k2[2] = {2, 2};
    m = fh_model(12);
    fh_input(m, "x", 4, d);
    n = fh_node(m, "MaxPool", "y", "x", NULL);
    ox_node_set_attr_ints(n, "kernel_shape", 2, k2);
    ox_node_set_attr_i(n, "ceil_mode", 1);
    fh_output(m, "y");
    cv_refused(m, 9, "MaxPool", "y");
    ox_model_free(m);
    /* Gemm without C (11): a zero C below 11. */
    const int64_t d23[2] = {2, 3}, d34[2] = {3, 4};
    m = fh_model(11);
    fh_input(m, "a", 2, d23);
    fh_init(m, "w", 2, d34, NULL, -1, 1);
    fh_node(m, "Gemm", "y", "a", "w", NULL);
    fh_output(m, "y");
    e = cv_ok(m, 9);
    assert_int_equal(first(e, "Gemm")->n_inputs, 3);
    ox_model_free(e);
    ox_model_free(m);
    /* Constant value_ints (12) becomes a value tensor. */
    m = fh_model(12);
    fh_input(m, "x", 3, d234);
    ox_value *cv = ox_graph_value(m->graph, "shape");
    n = ox_node_new(m->graph, "Constant", "", "c", 0, NULL, 1, &cv);
    int64_t shp[2] = {6, 4};
    ox_node_set_attr_ints(n, "value_ints", 2, shp);
    fh_node(m, "Reshape", "y", "x", "shape", NULL);
    fh_output(m, "y");
    e = cv_ok(m, 11);
    assert_non_null(ox_node_attr(first(e, "Constant"), "value"));
    ox_model_free(e);
    ox_model_free(m);
    /* CastLike (15) becomes a Cast to the like input's type. */
    m = fh_model(15);
    fh_input(m, "x", 3, d234);
    ox_tensor *it = ox_tensor_new(OX_DT_INT32, 0, NULL);
    ox_graph_set_initializer(m->graph, ox_graph_value(m->graph, "like"), it);
    fh_node(m, "CastLike", "y", "x", "like", NULL);
    fh_output(m, "y");
    e = cv_ok(m, 13);
    assert_int_equal(ox_node_attr_i(first(e, "Cast"), "to", 0), OX_DT_INT32);
    ox_model_free(e);
    ox_model_free(m);
    /* Concat with a negative axis below 11. */
    m = fh_model(13);
    fh_input(m, "x", 3, d234);
    n = fh_node(m, "Concat", "y", "x", "x", NULL);
    ox_node_set_attr_i(n, "axis", -1);
    fh_output(m, "y");
    e = cv_ok(m, 9);
    assert_int_equal(ox_node_attr_i(first(e, "Concat"), "axis", -1), 2);
    ox_model_free(e);
    ox_model_free(m);
    /* An operator the target lacks. */
    m = fh_model(13);
    fh_input(m, "x", 3, d234);
    fh_input(m, "z", 3, d234);
    fh_node(m, "Mod", "y", "x", "z", NULL);
    fh_output(m, "y");
    cv_refused(m, 9, "Mod", "y");
    ox_model_free(m);
    /* A type the target's schema does not accept (Relu int8 from 14). */
    m = fh_model(14);
    ox_value *xi = ox_graph_value(m->graph, "x");
    xi->type = ox_type_new_tensor(OX_DT_INT8, 3, d234);
    ox_graph_add_input(m->graph, xi);
    fh_node(m, "Relu", "y", "x", NULL);
    fh_output(m, "y");
    cv_refused(m, 13, "Relu", "y");
    ox_model_free(m);
}

/* The adapters of less common operators: attribute values the older
 * opset lacks are refused, renamed modes and moved attributes kept equal. */
static void test_more_adapters(void **state)
{
    (void)state;
    ox_node *n;
    ox_model *e;
    /* DepthToSpace mode (11). */
    const int64_t d4[4] = {1, 8, 2, 2};
    ox_model *m = fh_model(13);
    fh_input(m, "x", 4, d4);
    n = fh_node(m, "DepthToSpace", "y", "x", NULL);
    ox_node_set_attr_i(n, "blocksize", 2);
    ox_node_set_attr_s(n, "mode", "CRD");
    fh_output(m, "y");
    cv_refused(m, 10, "DepthToSpace", "y");
    ox_node_set_attr_s(n, "mode", "DCR");
    e = cv_ok(m, 10);
    assert_null(ox_node_attr(first(e, "DepthToSpace"), "mode"));
    ox_model_free(e);
    ox_model_free(m);
    /* Reshape allowzero (14). */
    m = fh_model(14);
    fh_input(m, "x", 3, d234);
    int64_t shp[2] = {0, 12};
    fh_ints(m, "shape", 2, shp);
    n = fh_node(m, "Reshape", "y", "x", "shape", NULL);
    ox_node_set_attr_i(n, "allowzero", 1);
    fh_output(m, "y");
    cv_refused(m, 13, "Reshape", "y");
    ox_model_free(m);
    m = fh_model(14);
    fh_input(m, "x", 3, d234);
    shp[0] = 2;
    fh_ints(m, "shape", 2, shp);
    n = fh_node(m, "Reshape", "y", "x", "shape", NULL);
    ox_node_set_attr_i(n, "allowzero", 1);
    fh_output(m, "y");
    e = cv_ok(m, 13);
    assert_null(ox_node_attr(first(e, "Reshape"), "allowzero"));
    ox_model_free(e);
    ox_model_free(m);
    /* Cast saturate (19) dropped below. */
    m = unary(19, "Cast", &n);
    ox_node_set_attr_i(n, "to", OX_DT_FLOAT);
    ox_node_set_attr_i(n, "saturate", 1);
    e = cv_ok(m, 18);
    assert_null(ox_node_attr(first(e, "Cast"), "saturate"));
    ox_model_free(e);
    ox_model_free(m);
    /* AveragePool dilations (19). */
    const int64_t d5[4] = {1, 1, 5, 5}, k2[2] = {2, 2}, dl[2] = {2, 2};
    m = fh_model(19);
    fh_input(m, "x", 4, d5);
    n = fh_node(m, "AveragePool", "y", "x", NULL);
    ox_node_set_attr_ints(n, "kernel_shape", 2, k2);
    ox_node_set_attr_ints(n, "dilations", 2, dl);
    fh_output(m, "y");
    cv_refused(m, 18, "AveragePool", "y");
    ox_model_free(m);
    /* QuantizeLinear with a per-axis scale (13). */
    m = fh_model(13);
    fh_input(m, "x", 3, d234);
    const int64_t three = 3;
    fh_init(m, "s", 1, &three, NULL, 0.5, 1);
    n = fh_node(m, "QuantizeLinear", "y", "x", "s", NULL);
    ox_node_set_attr_i(n, "axis", 1);
    fh_output(m, "y");
    cv_refused(m, 12, "QuantizeLinear", "y");
    ox_model_free(m);
    /* ScatterND reduction (16). */
    m = fh_model(16);
    fh_input(m, "x", 3, d234);
    int64_t idx1[1] = {1};
    const int64_t di[2] = {1, 1}, du[3] = {1, 3, 4};
    ox_tensor *it = ox_tensor_new(OX_DT_INT64, 2, di);
    ox_tensor_set_i64(it, 0, idx1[0]);
    ox_graph_set_initializer(m->graph, ox_graph_value(m->graph, "idx"), it);
    fh_init(m, "upd", 3, du, NULL, -1, 1);
    n = fh_node(m, "ScatterND", "y", "x", "idx", "upd", NULL);
    ox_node_set_attr_s(n, "reduction", "add");
    fh_output(m, "y");
    cv_refused(m, 15, "ScatterND", "y");
    ox_node_set_attr_s(n, "reduction", "none");
    e = cv_ok(m, 13);
    assert_null(ox_node_attr(first(e, "ScatterND"), "reduction"));
    ox_model_free(e);
    ox_model_free(m);
    /* Max of different shapes has no broadcasting at 7. */
    m = fh_model(8);
    fh_input(m, "x", 3, d234);
    const int64_t d4b = 4;
    fh_input(m, "z", 1, &d4b);
    fh_node(m, "Max", "y", "x", "z", NULL);
    fh_output(m, "y");
    cv_refused(m, 7, "Max", "y");
    ox_model_free(m);
    /* OneHot's negative axis counts the output's rank below 11. */
    m = fh_model(11);
    const int64_t d2 = 2;
    ox_value *ind = ox_graph_value(m->graph, "ind");
    ind->type = ox_type_new_tensor(OX_DT_INT64, 1, &d2);
    ox_graph_add_input(m->graph, ind);
    int64_t depth = 3;
    fh_ints(m, "depth", 1, &depth);
    const float vals[2] = {0, 1};
    fh_init(m, "vals", 1, &d2, vals, 0, 0);
    n = fh_node(m, "OneHot", "y", "ind", "depth", "vals", NULL);
    ox_node_set_attr_i(n, "axis", -2);
    fh_output(m, "y");
    e = cv_ok(m, 9);
    assert_int_equal(ox_node_attr_i(first(e, "OneHot"), "axis", -1), 0);
    ox_model_free(e);
    ox_model_free(m);
    /* GroupNormalization: scale per group (18) <-> per channel (21). */
    const int64_t dg[4] = {2, 4, 3, 3}, g2 = 2;
    m = fh_model(18);
    fh_input(m, "x", 4, dg);
    fh_init(m, "s", 1, &g2, NULL, 0.5, 1.5);
    fh_init(m, "b", 1, &g2, NULL, -1, 1);
    n = fh_node(m, "GroupNormalization", "y", "x", "s", "b", NULL);
    ox_node_set_attr_i(n, "num_groups", 2);
    fh_output(m, "y");
    e = cv_ok(m, 21);
    const ox_tensor *sc = first(e, "GroupNormalization")->inputs[1]->init;
    assert_non_null(sc);
    assert_int_equal(sc->numel, 4);
    ox_model *back = cv_ok(e, 18);
    assert_int_equal(first(back, "GroupNormalization")->inputs[1]->init->numel, 2);
    ox_model_free(back);
    ox_model_free(e);
    ox_model_free(m);
    /* DFT: axis attribute (17) <-> input (20). */
    const int64_t dd[3] = {2, 8, 1};
    m = fh_model(17);
    fh_input(m, "x", 3, dd);
    n = fh_node(m, "DFT", "y", "x", NULL);
    ox_node_set_attr_i(n, "axis", 1);
    fh_output(m, "y");
    e = cv_ok(m, 20);
    assert_int_equal(first(e, "DFT")->n_inputs, 3);
    back = cv_ok(e, 17);
    assert_int_equal(ox_node_attr_i(first(back, "DFT"), "axis", 0), 1);
    ox_model_free(back);
    ox_model_free(e);
    ox_model_free(m);
    /* GridSample modes renamed at 20. */
    const int64_t dx[4] = {1, 1, 3, 3}, dgr[4] = {1, 2, 2, 2};
    m = fh_model(16);
    fh_input(m, "x", 4, dx);
    fh_init(m, "grid", 4, dgr, NULL, -1, 1);
    n = fh_node(m, "GridSample", "y", "x", "grid", NULL);
    ox_node_set_attr_s(n, "mode", "bilinear");
    fh_output(m, "y");
    e = cv_ok(m, 20);
    assert_string_equal(ox_node_attr_s(first(e, "GridSample"), "mode", ""), "linear");
    back = cv_ok(e, 16);
    assert_string_equal(ox_node_attr_s(first(back, "GridSample"), "mode", ""), "bilinear");
    ox_model_free(back);
    ox_model_free(e);
    ox_model_free(m);
    /* RNN layout (14). */
    m = fh_model(14);
    const int64_t dxr[3] = {2, 3, 4}, dw[3] = {1, 5, 4}, dr[3] = {1, 5, 5};
    fh_input(m, "x", 3, dxr);
    fh_init(m, "W", 3, dw, NULL, -1, 1);
    fh_init(m, "R", 3, dr, NULL, -1, 1);
    n = fh_node(m, "RNN", "y", "x", "W", "R", NULL);
    ox_node_set_attr_i(n, "hidden_size", 5);
    ox_node_set_attr_i(n, "layout", 1);
    fh_output(m, "y");
    cv_refused(m, 13, "RNN", "y");
    ox_model_free(m);
}

static void test_targets_and_report(void **state)
{
    (void)state;
    ox_node *n;
    ox_model *m = unary(13, "Relu", &n);
    ox_error err = {0};
    assert_int_equal(ox_opset_convert(m, 6, NULL, &err), OX_EINVAL);
    assert_int_equal(ox_opset_convert(m, 24, NULL, &err), OX_EINVAL);
    ox_opset_report rep;
    assert_int_equal(ox_opset_convert(m, 13, &rep, &err), OX_OK);
    assert_int_equal(rep.from, 13);
    assert_int_equal(rep.to, 13);
    assert_int_equal(ox_opset_convert(m, 21, &rep, &err), OX_OK);
    assert_int_equal(m->ir_version, 10);
    assert_int_equal(rep.ir_to, 10);
    assert_int_equal(ox_opset_convert(m, 9, &rep, &err), OX_OK);
    assert_int_equal(m->ir_version, 4);
    ox_model_free(m);
}

/* The opt-in pass upgrade_opset: raises 7..16 to 17 once (idempotent),
 * leaves 17 alone, and leaves a model it cannot convert unchanged with a
 * note. */
static void test_upgrade_pass(void **state)
{
    (void)state;
    ox_node *n;
    ox_model *m = unary(11, "ReduceSum", &n);
    int64_t ax = 1;
    ox_node_set_attr_ints(n, "axes", 1, &ax);
    int rw;
    ox_model *o = fh_opt(m, "upgrade_opset", OX_TARGET_ONNX, &rw);
    assert_int_equal(rw, 1);
    assert_int_equal(ox_model_opset(o, ""), 17);
    assert_int_equal(first(o, "ReduceSum")->n_inputs, 2);
    ox_model_free(o);
    ox_model_free(m);
    /* Opset 8 Scan cannot become Scan-9: refused, nothing changes. */
    m = fh_model(8);
    fh_input(m, "x", 3, d234);
    ox_graph *body = ox_graph_new(m, m->graph);
    ox_value *x = ox_graph_value(m->graph, "x"), *y = ox_graph_value(m->graph, "y");
    n = ox_node_new(m->graph, "Scan", "", "scan", 1, &x, 1, &y);
    body->owner = n;
    ox_value *bi = ox_graph_value(body, "bi"), *bo = ox_graph_value(body, "bo");
    bi->type = ox_type_new_tensor(OX_DT_FLOAT, 2, d234 + 1);
    ox_graph_add_input(body, bi);
    ox_node_new(body, "Identity", "", "id", 1, &bi, 1, &bo);
    ox_graph_add_output(body, bo);
    ox_attr a = {.name = "body", .type = OX_ATTR_GRAPH, .g = body};
    ox_node_set_attr(n, &a);
    ox_graph_free(body);
    ox_node_set_attr_i(n, "num_scan_inputs", 1);
    fh_output(m, "y");
    ox_graph_relink(m->graph);
    ox_pass_manager *pm = ox_pm_new(OX_LEVEL_BASIC, OX_TARGET_ONNX);
    ox_error err = {0};
    ox_pass_report rep = {0};
    assert_int_equal(ox_pm_only(pm, "upgrade_opset", &err), OX_OK);
    assert_int_equal(ox_pm_run(pm, m, &rep, &err), OX_OK);
    assert_int_equal(ox_model_opset(m, ""), 8);
    const ox_pass_stat *st = ox_pass_report_find(&rep, "upgrade_opset");
    assert_non_null(st);
    assert_non_null(st->note);
    assert_non_null(strstr(st->note, "Scan node 'scan' cannot be converted to opset 17"));
    ox_pass_report_free(&rep);
    ox_pm_free(pm);
    ox_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_squeeze_unsqueeze),
        cmocka_unit_test(test_reduce_axes),
        cmocka_unit_test(test_split),
        cmocka_unit_test(test_clip),
        cmocka_unit_test(test_pad),
        cmocka_unit_test(test_slice),
        cmocka_unit_test(test_topk),
        cmocka_unit_test(test_dropout),
        cmocka_unit_test(test_batchnorm),
        cmocka_unit_test(test_scatter),
        cmocka_unit_test(test_softmax_axis),
        cmocka_unit_test(test_resize_upsample),
        cmocka_unit_test(test_layernorm),
        cmocka_unit_test(test_gelu_rms_and_small_ops),
        cmocka_unit_test(test_attention),
        cmocka_unit_test(test_small_changes),
        cmocka_unit_test(test_more_adapters),
        cmocka_unit_test(test_targets_and_report),
        cmocka_unit_test(test_upgrade_pass),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
