/* Unit tests of the convolution folds (src/passes/fuse_conv.c): each fires
 * on the exporter forms, stays put where folding would change the result,
 * is idempotent, and the folded graph computes the same on random inputs. */
#include "fuse_harness.h"

static const int64_t X4[4] = {2, 4, 7, 7};

/* X (2,4,7,7) -> Conv(4 -> 6, 3x3, pads p, group grp) [-> "c"] with or
 * without bias. */
static ox_model *conv_model(int64_t opset, int pads, int grp, bool bias)
{
    ox_model *m = fh_model(opset);
    fh_input(m, "x", 4, X4);
    int64_t wd[4] = {6, 4 / grp, 3, 3}, bd = 6;
    fh_init(m, "w", 4, wd, NULL, -1, 1);
    if (bias)
        fh_init(m, "b", 1, &bd, NULL, -1, 1);
    ox_node *c = fh_node(m, "Conv", "c", "x", "w", bias ? "b" : NULL, NULL);
    int64_t p[4] = {pads, pads, pads, pads}, k[2] = {3, 3};
    ox_node_set_attr_ints(c, "pads", 4, p);
    ox_node_set_attr_ints(c, "kernel_shape", 2, k);
    ox_node_set_attr_i(c, "group", grp);
    return m;
}

/* BatchNormalization parameters of C channels named <p>s, <p>b, <p>m, <p>v. */
static void bn_params(ox_model *m, const char *p, int64_t C)
{
    char n[4][32];
    for (int k = 0; k < 4; k++)
        snprintf(n[k], sizeof n[k], "%s%c", p, "sbmv"[k]);
    fh_init(m, n[0], 1, &C, NULL, 0.5, 2);
    fh_init(m, n[1], 1, &C, NULL, -1, 1);
    fh_init(m, n[2], 1, &C, NULL, -0.5, 0.5);
    fh_init(m, n[3], 1, &C, NULL, 0.2, 3);
}

static ox_node *bn(ox_model *m, const char *out, const char *in, const char *p)
{
    char n[4][32];
    for (int k = 0; k < 4; k++)
        snprintf(n[k], sizeof n[k], "%s%c", p, "sbmv"[k]);
    ox_node *b = fh_node(m, "BatchNormalization", out, in, n[0], n[1], n[2], n[3], NULL);
    ox_node_set_attr_f(b, "epsilon", 1e-3f);
    return b;
}

static void test_conv_bn(void **state)
{
    (void)state;
    for (int v = 0; v < 3; v++) {
        /* v: with bias, without bias, grouped */
        ox_model *m = conv_model(13, 1, v == 2 ? 2 : 1, v != 1);
        bn_params(m, "n", 6);
        bn(m, "y", "c", "n");
        fh_output(m, "y");
        int rw;
        ox_model *o = fh_opt(m, "fuse_conv_bn", OX_TARGET_ONNX, &rw);
        assert_int_equal(rw, 1);
        assert_int_equal(fh_count(o, "BatchNormalization"), 0);
        assert_int_equal(fh_count(o, "Conv"), 1);
        ox_model_free(o);
        ox_model_free(m);
    }
    /* ConvTranspose (W is (C, M/group, k...)), grouped. */
    ox_model *m = fh_model(13);
    fh_input(m, "x", 4, X4);
    int64_t wd[4] = {4, 3, 3, 3}, bd = 6;
    fh_init(m, "w", 4, wd, NULL, -1, 1);
    fh_init(m, "b", 1, &bd, NULL, -1, 1);
    ox_node_set_attr_i(fh_node(m, "ConvTranspose", "c", "x", "w", "b", NULL), "group", 2);
    bn_params(m, "n", 6);
    bn(m, "y", "c", "n");
    fh_output(m, "y");
    int rw;
    ox_model *o = fh_opt(m, "fuse_conv_bn", OX_TARGET_ONNX, &rw);
    assert_int_equal(rw, 1);
    assert_int_equal(fh_count(o, "BatchNormalization"), 0);
    ox_model_free(o);
    ox_model_free(m);
}

static void test_conv_bn_nofire(void **state)
{
    (void)state;
    /* The Conv output has a second consumer: it must keep its value. */
    ox_model *m = conv_model(13, 1, 1, true);
    bn_params(m, "n", 6);
    bn(m, "y", "c", "n");
    fh_node(m, "Relu", "r", "c", NULL);
    fh_output(m, "y");
    fh_output(m, "r");
    fh_nofire(m, "fuse_conv_bn", OX_TARGET_ONNX);
    ox_model_free(m);
    /* The Conv output is a graph output. */
    m = conv_model(13, 1, 1, true);
    bn_params(m, "n", 6);
    bn(m, "y", "c", "n");
    fh_output(m, "y");
    fh_output(m, "c");
    fh_nofire(m, "fuse_conv_bn", OX_TARGET_ONNX);
    ox_model_free(m);
    /* Non-constant scale (a graph input). */
    m = conv_model(13, 1, 1, true);
    bn_params(m, "n", 6);
    int64_t c6 = 6;
    fh_input(m, "sc", 1, &c6);
    fh_node(m, "BatchNormalization", "y", "c", "sc", "nb", "nm", "nv", NULL);
    fh_output(m, "y");
    fh_nofire(m, "fuse_conv_bn", OX_TARGET_ONNX);
    ox_model_free(m);
}

static void test_conv_add_mul(void **state)
{
    (void)state;
    /* Per-channel shapes in both operand orders, a scalar, and the bias
     * made when the Conv had none. */
    static const int64_t shapes[3][4] = {{6, 1, 1}, {1, 6, 1, 1}, {1}};
    static const int ranks[3] = {3, 4, 1};
    for (int op = 0; op < 2; op++)
        for (int s = 0; s < 3; s++) {
            ox_model *m = conv_model(13, 1, 1, s != 1);
            fh_init(m, "k", ranks[s], shapes[s], NULL, 0.5, 1.5);
            const char *name = op ? "Mul" : "Add";
            if (s == 1)
                fh_node(m, name, "y", "k", "c", NULL);
            else
                fh_node(m, name, "y", "c", "k", NULL);
            fh_output(m, "y");
            int rw;
            const char *pass = op ? "fuse_conv_mul" : "fuse_conv_add";
            ox_model *o = fh_opt(m, pass, OX_TARGET_ONNX, &rw);
            assert_int_equal(rw, 1);
            assert_int_equal(fh_count(o, name), 0);
            assert_int_equal(o->graph->nodes[0]->n_inputs, 3);
            ox_model_free(o);
            ox_model_free(m);
        }
}

static void test_conv_add_mul_nofire(void **state)
{
    (void)state;
    /* A tensor that varies along a spatial axis is not per-channel. */
    for (int op = 0; op < 2; op++) {
        ox_model *m = conv_model(13, 1, 1, true);
        int64_t d[4] = {1, 1, 1, 7};
        fh_init(m, "k", 4, d, NULL, 0.5, 1.5);
        fh_node(m, op ? "Mul" : "Add", "y", "c", "k", NULL);
        fh_output(m, "y");
        fh_nofire(m, op ? "fuse_conv_mul" : "fuse_conv_add", OX_TARGET_ONNX);
        ox_model_free(m);
        /* A constant of higher rank would broadcast the output up. */
        m = conv_model(13, 1, 1, true);
        int64_t d5[5] = {1, 1, 6, 1, 1};
        fh_init(m, "k", 5, d5, NULL, 0.5, 1.5);
        fh_node(m, op ? "Mul" : "Add", "y", "c", "k", NULL);
        fh_output(m, "y");
        fh_nofire(m, op ? "fuse_conv_mul" : "fuse_conv_add", OX_TARGET_ONNX);
        ox_model_free(m);
        /* A non-constant operand. */
        m = conv_model(13, 1, 1, true);
        int64_t d3[3] = {6, 1, 1};
        fh_input(m, "k", 3, d3);
        fh_node(m, op ? "Mul" : "Add", "y", "c", "k", NULL);
        fh_output(m, "y");
        fh_nofire(m, op ? "fuse_conv_mul" : "fuse_conv_add", OX_TARGET_ONNX);
        ox_model_free(m);
    }
}

/* X -> Pad(pads, value) -> op (kernel 3, no pads) -> y. opset 10 writes
 * the Pad's pads and value as attributes. */
static ox_model *pad_model(int64_t opset, const char *op, const int64_t *pads, float value,
                           bool with_value)
{
    ox_model *m = fh_model(opset);
    fh_input(m, "x", 4, X4);
    ox_node *p;
    if (opset < 11) {
        p = fh_node(m, "Pad", "p", "x", NULL);
        ox_node_set_attr_ints(p, "pads", 8, pads);
        if (with_value)
            ox_node_set_attr_f(p, "value", value);
    } else {
        fh_ints(m, "pads", 8, pads);
        if (with_value)
            fh_scalar(m, "pv", value);
        p = fh_node(m, "Pad", "p", "x", "pads", with_value ? "pv" : NULL, NULL);
    }
    int64_t k[2] = {3, 3};
    ox_node *n;
    if (!strcmp(op, "Conv")) {
        int64_t wd[4] = {5, 4, 3, 3};
        fh_init(m, "w", 4, wd, NULL, -1, 1);
        n = fh_node(m, op, "y", "p", "w", NULL);
    } else {
        n = fh_node(m, op, "y", "p", NULL);
    }
    ox_node_set_attr_ints(n, "kernel_shape", 2, k);
    fh_output(m, "y");
    return m;
}

static void test_pad_conv(void **state)
{
    (void)state;
    const int64_t pads[8] = {0, 0, 1, 2, 0, 0, 2, 1};
    const int64_t chan[8] = {0, 1, 1, 1, 0, 0, 1, 1};
    struct {
        int64_t opset;
        const char *op;
        const int64_t *pads;
        float value;
        bool with_value;
        int attr; /* count_include_pad for AveragePool */
        bool fires;
    } cases[] = {
        {13, "Conv", pads, 0, false, 0, true},
        {13, "Conv", pads, 0, true, 0, true},
        {10, "Conv", pads, 0, false, 0, true},
        {13, "Conv", pads, 0.5f, true, 0, false},   /* nonzero value */
        {13, "Conv", chan, 0, false, 0, false},     /* pads the channel axis */
        {13, "AveragePool", pads, 0, false, 1, true},
        {13, "AveragePool", pads, 0, false, 0, false}, /* padding not counted */
        {13, "MaxPool", pads, -INFINITY, true, 0, true},
        {10, "MaxPool", pads, -INFINITY, true, 0, true},
        {13, "MaxPool", pads, 0, false, 0, false},  /* zeros would win the max */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ox_model *m = pad_model(cases[i].opset, cases[i].op, cases[i].pads, cases[i].value,
                                cases[i].with_value);
        ox_node *n = m->graph->nodes[m->graph->n_nodes - 1];
        if (cases[i].attr)
            ox_node_set_attr_i(n, "count_include_pad", 1);
        if (!cases[i].fires) {
            fh_nofire(m, "fuse_pad_conv", OX_TARGET_ONNX);
            ox_model_free(m);
            continue;
        }
        int rw;
        ox_model *o = fh_opt(m, "fuse_pad_conv", OX_TARGET_ONNX, &rw);
        assert_int_equal(rw, 1);
        assert_int_equal(fh_count(o, "Pad"), 0);
        ox_model_free(o);
        ox_model_free(m);
    }
}

static void test_bn_conv(void **state)
{
    (void)state;
    for (int grp = 1; grp <= 2; grp++) {
        ox_model *m = fh_model(13);
        fh_input(m, "x", 4, X4);
        bn_params(m, "n", 4);
        bn(m, "t", "x", "n");
        int64_t wd[4] = {6, 4 / grp, 3, 3}, bd = 6;
        fh_init(m, "w", 4, wd, NULL, -1, 1);
        fh_init(m, "b", 1, &bd, NULL, -1, 1);
        ox_node_set_attr_i(fh_node(m, "Conv", "y", "t", "w", grp == 1 ? "b" : NULL, NULL),
                           "group", grp);
        fh_output(m, "y");
        int rw;
        ox_model *o = fh_opt(m, "fuse_bn_conv", OX_TARGET_ONNX, &rw);
        assert_int_equal(rw, 1);
        assert_int_equal(fh_count(o, "BatchNormalization"), 0);
        ox_model_free(o);
        ox_model_free(m);
    }
    /* Zero padding of the normalized input cannot be reproduced. */
    ox_model *m = fh_model(13);
    fh_input(m, "x", 4, X4);
    bn_params(m, "n", 4);
    bn(m, "t", "x", "n");
    int64_t wd[4] = {6, 4, 3, 3}, p[4] = {1, 1, 1, 1};
    fh_init(m, "w", 4, wd, NULL, -1, 1);
    ox_node_set_attr_ints(fh_node(m, "Conv", "y", "t", "w", NULL), "pads", 4, p);
    fh_output(m, "y");
    fh_nofire(m, "fuse_bn_conv", OX_TARGET_ONNX);
    ox_model_free(m);
}

static void test_bn_mul_add(void **state)
{
    (void)state;
    ox_model *m = fh_model(13);
    fh_input(m, "x", 4, X4);
    bn_params(m, "n", 4);
    bn(m, "y", "x", "n");
    fh_output(m, "y");
    int rw;
    ox_model *o = fh_opt(m, "fuse_bn_mul_add", OX_TARGET_ONNX, &rw);
    assert_int_equal(rw, 1);
    assert_int_equal(fh_count(o, "BatchNormalization"), 0);
    assert_int_equal(fh_count(o, "Mul"), 1);
    assert_int_equal(fh_count(o, "Add"), 1);
    ox_model_free(o);
    ox_model_free(m);
}

/* Stepping one rewrite folds one of two BatchNormalizations; the level
 * and target gates enable the folds where docs/PASSES.md says. */
static void test_step_and_levels(void **state)
{
    (void)state;
    ox_model *m = conv_model(13, 1, 1, true);
    bn_params(m, "n", 6);
    bn(m, "t", "c", "n");
    int64_t wd[4] = {6, 6, 1, 1};
    fh_init(m, "w2", 4, wd, NULL, -1, 1);
    fh_node(m, "Conv", "c2", "t", "w2", NULL);
    bn(m, "y", "c2", "n");
    fh_output(m, "y");
    ox_error err = {0};
    assert_int_equal(ox_infer_model(m, NULL, &err), OX_OK);
    ox_pass_manager *pm = ox_pm_new(OX_LEVEL_BASIC, OX_TARGET_ONNX);
    int k = -1;
    for (int i = 0; i < ox_pm_count(pm); i++)
        if (!strcmp(ox_pm_pass(pm, i)->name, "fuse_conv_bn"))
            k = i;
    assert_true(k >= 0 && ox_pm_enabled(pm, k));
    ox_pass_report rep = {0};
    assert_int_equal(ox_pm_step(pm, m, k, 1, &rep, &err), OX_OK);
    assert_int_equal(fh_count(m, "BatchNormalization"), 1);
    assert_int_equal(ox_pass_report_find(&rep, "fuse_conv_bn")->rewrites, 1);
    ox_pass_report_free(&rep);
    ox_pm_free(pm);
    ox_model_free(m);
    /* basic has the ONNX Runtime level-1 folds; the rest needs extended. */
    static const char *basic[] = {"fuse_conv_bn", "fuse_conv_add", "fuse_conv_mul",
                                  "fuse_pad_conv", "fuse_matmul_add"};
    for (size_t i = 0; i < sizeof basic / sizeof *basic; i++)
        assert_int_equal(ox_pass_find(basic[i])->level, OX_LEVEL_BASIC);
    assert_int_equal(ox_pass_find("fuse_bn_conv")->level, OX_LEVEL_EXTENDED);
    assert_int_equal(ox_pass_find("fuse_conv_act")->target, OX_TARGET_ORT);
}

static void test_all_fired(void **state)
{
    (void)state;
    fh_all_fired("fuse_conv_bn,fuse_conv_add,fuse_conv_mul,fuse_pad_conv,fuse_bn_conv,"
                 "fuse_bn_mul_add");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv_bn),
        cmocka_unit_test(test_conv_bn_nofire),
        cmocka_unit_test(test_conv_add_mul),
        cmocka_unit_test(test_conv_add_mul_nofire),
        cmocka_unit_test(test_pad_conv),
        cmocka_unit_test(test_bn_conv),
        cmocka_unit_test(test_bn_mul_add),
        cmocka_unit_test(test_step_and_levels),
        cmocka_unit_test(test_all_fired),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
