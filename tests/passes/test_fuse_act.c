/* Unit tests of the activation fusions (src/passes/fuse_act.c): the
 * exporter variants of each decomposed activation, Relu/Clip merges, and
 * the com.microsoft FusedConv/FusedGemm forms under --target ort. */
#include "fuse_harness.h"

static const int64_t X2[2] = {4, 6}, X4[4] = {2, 3, 5, 5};

/* A Clip of u with bounds: attributes before opset 11, inputs after. */
static void clip(ox_model *m, int64_t opset, const char *out, const char *u, float lo, float hi)
{
    if (opset < 11) {
        ox_node *c = fh_node(m, "Clip", out, u, NULL);
        ox_node_set_attr_f(c, "min", lo);
        ox_node_set_attr_f(c, "max", hi);
        return;
    }
    char a[64], b[64];
    snprintf(a, sizeof a, "%s_lo", out);
    snprintf(b, sizeof b, "%s_hi", out);
    fh_const_node(m, a, lo);
    fh_scalar(m, b, hi);
    fh_node(m, "Clip", out, u, a, b, NULL);
}

/* The input is scaled so that every activation's kinks are crossed. */
static ox_model *act_model(int64_t opset)
{
    ox_model *m = fh_model(opset);
    fh_input(m, "in", 2, X2);
    fh_scalar(m, "spread", 8);
    fh_node(m, "Mul", "x", "in", "spread", NULL);
    return m;
}

static void expect(ox_model *m, const char *pass, ox_pass_target t, const char *op, int n_nodes)
{
    fh_output(m, "y");
    int rw;
    ox_model *o = fh_opt(m, pass, t, &rw);
    assert_true(rw >= 1);
    assert_int_equal(fh_count(o, op), 1);
    assert_int_equal(o->graph->n_nodes, n_nodes);
    ox_model_free(o);
    ox_model_free(m);
}

static void test_relu_clip(void **state)
{
    (void)state;
    for (int64_t opset = 10; opset <= 13; opset += 3) {
        /* Clip(Relu(x), -1, 6) -> Clip(x, 0, 6) */
        ox_model *m = act_model(opset);
        fh_node(m, "Relu", "r", "x", NULL);
        clip(m, opset, "y", "r", -1, 6);
        expect(m, "fuse_relu_clip", OX_TARGET_ONNX, "Clip", 2);
        /* Relu(Clip(x, -2, 3)) -> Clip(x, 0, 3) */
        m = act_model(opset);
        clip(m, opset, "c", "x", -2, 3);
        fh_node(m, "Relu", "y", "c", NULL);
        expect(m, "fuse_relu_clip", OX_TARGET_ONNX, "Clip", 2);
    }
    /* Must not: Relu(Clip(x, -3, -1)) is 0, not a Clip; Relu read twice. */
    ox_model *m = act_model(13);
    clip(m, 13, "c", "x", -3, -1);
    fh_node(m, "Relu", "y", "c", NULL);
    fh_output(m, "y");
    fh_nofire(m, "fuse_relu_clip", OX_TARGET_ONNX);
    ox_model_free(m);
    m = act_model(13);
    fh_node(m, "Relu", "r", "x", NULL);
    clip(m, 13, "y", "r", 0, 6);
    fh_output(m, "y");
    fh_output(m, "r");
    fh_nofire(m, "fuse_relu_clip", OX_TARGET_ONNX);
    ox_model_free(m);
}

static void test_hardsigmoid(void **state)
{
    (void)state;
    for (int v = 0; v < 4; v++) {
        int64_t opset = v == 3 ? 10 : 13;
        ox_model *m = act_model(opset);
        switch (v) {
        case 0: /* clip(x/6 + 0.5, 0, 1) */
            fh_scalar(m, "six", 6);
            fh_scalar(m, "half", 0.5f);
            fh_node(m, "Div", "d", "x", "six", NULL);
            fh_node(m, "Add", "a", "half", "d", NULL);
            clip(m, opset, "y", "a", 0, 1);
            break;
        case 1: /* clip(0.2 * x + 0.5, 0, 1), Constant nodes */
            fh_const_node(m, "k", 0.2f);
            fh_const_node(m, "half", 0.5f);
            fh_node(m, "Mul", "d", "k", "x", NULL);
            fh_node(m, "Add", "a", "d", "half", NULL);
            clip(m, opset, "y", "a", 0, 1);
            break;
        case 2: /* relu6(x + 3) / 6 */
        case 3:
            fh_scalar(m, "three", 3);
            fh_scalar(m, "six", 6);
            fh_node(m, "Add", "a", "x", "three", NULL);
            clip(m, opset, "c", "a", 0, 6);
            fh_node(m, "Div", "y", "c", "six", NULL);
            break;
        }
        expect(m, "fuse_hardsigmoid", OX_TARGET_ONNX, "HardSigmoid", 2);
    }
    /* Must not: an upper bound that is not 1; an intermediate read twice. */
    for (int v = 0; v < 2; v++) {
        ox_model *m = act_model(13);
        fh_scalar(m, "six", 6);
        fh_scalar(m, "half", 0.5f);
        fh_node(m, "Div", "d", "x", "six", NULL);
        fh_node(m, "Add", "a", "d", "half", NULL);
        clip(m, 13, "y", "a", 0, v ? 1 : 2);
        fh_output(m, "y");
        if (v)
            fh_output(m, "a");
        fh_nofire(m, "fuse_hardsigmoid", OX_TARGET_ONNX);
        ox_model_free(m);
    }
}

static void relu6p3(ox_model *m, const char *out)
{
    fh_scalar(m, "three", 3);
    fh_node(m, "Add", "a", "x", "three", NULL);
    clip(m, 14, out, "a", 0, 6);
}

static void test_hardswish(void **state)
{
    (void)state;
    for (int v = 0; v < 4; v++) {
        ox_model *m = act_model(14);
        switch (v) {
        case 0: { /* x * HardSigmoid(x; 1/6, 0.5) (PyTorch before opset 14 style) */
            ox_node *h = fh_node(m, "HardSigmoid", "h", "x", NULL);
            ox_node_set_attr_f(h, "alpha", 1.0f / 6);
            fh_node(m, "Mul", "y", "h", "x", NULL);
            break;
        }
        case 1: /* x * (relu6(x + 3) / 6) */
            relu6p3(m, "c");
            fh_scalar(m, "six", 6);
            fh_node(m, "Div", "h", "c", "six", NULL);
            fh_node(m, "Mul", "y", "x", "h", NULL);
            break;
        case 2: /* x * relu6(x + 3) / 6 (Paddle) */
            relu6p3(m, "c");
            fh_scalar(m, "six", 6);
            fh_node(m, "Mul", "p", "x", "c", NULL);
            fh_node(m, "Div", "y", "p", "six", NULL);
            break;
        case 3: /* (relu6(x + 3) * x) * (1/6) */
            relu6p3(m, "c");
            fh_scalar(m, "sixth", 1.0f / 6);
            fh_node(m, "Mul", "p", "c", "x", NULL);
            fh_node(m, "Mul", "y", "sixth", "p", NULL);
            break;
        }
        expect(m, "fuse_hardswish", OX_TARGET_ONNX, "HardSwish", 2);
    }
    /* Must not: opset 13 (HardSwish is opset 14); x + 2; another x inside. */
    for (int v = 0; v < 3; v++) {
        ox_model *m = act_model(v == 0 ? 13 : 14);
        fh_scalar(m, "three", v == 1 ? 2 : 3);
        if (v == 2) {
            fh_input(m, "z", 2, X2);
            fh_node(m, "Add", "a", "z", "three", NULL);
        } else {
            fh_node(m, "Add", "a", "x", "three", NULL);
        }
        clip(m, 14, "c", "a", 0, 6);
        fh_scalar(m, "six", 6);
        fh_node(m, "Mul", "p", "x", "c", NULL);
        fh_node(m, "Div", "y", "p", "six", NULL);
        fh_output(m, "y");
        fh_nofire(m, "fuse_hardswish", OX_TARGET_ONNX);
        ox_model_free(m);
    }
}

static void test_silu(void **state)
{
    (void)state;
    /* Opset 24: standard Swish. */
    ox_model *m = act_model(24);
    fh_node(m, "Sigmoid", "s", "x", NULL);
    fh_node(m, "Mul", "y", "s", "x", NULL);
    expect(m, "fuse_silu", OX_TARGET_ONNX, "Swish", 2);
    /* Below: keeps x*Sigmoid(x) under onnx, QuickGelu under ort, with the
     * alpha of Sigmoid(x * alpha). */
    for (int v = 0; v < 2; v++) {
        m = act_model(13);
        if (v) {
            fh_scalar(m, "alpha", 1.702f);
            fh_node(m, "Mul", "xa", "x", "alpha", NULL);
            fh_node(m, "Sigmoid", "s", "xa", NULL);
        } else {
            fh_node(m, "Sigmoid", "s", "x", NULL);
        }
        fh_node(m, "Mul", "y", "x", "s", NULL);
        fh_output(m, "y");
        fh_nofire(m, "fuse_silu", OX_TARGET_ONNX);
        int rw;
        ox_model *o = fh_opt(m, "fuse_silu_ort", OX_TARGET_ORT, &rw);
        assert_int_equal(rw, 1);
        assert_int_equal(fh_count(o, "QuickGelu"), 1);
        float a = ox_node_attr_f(o->graph->nodes[o->graph->n_nodes - 1], "alpha", 0);
        assert_true(fabsf(a - (v ? 1.702f : 1.0f)) < 1e-6f);
        ox_model_free(o);
        ox_model_free(m);
    }
    /* Must not: the Sigmoid is read elsewhere too. */
    m = act_model(24);
    fh_node(m, "Sigmoid", "s", "x", NULL);
    fh_node(m, "Mul", "y", "s", "x", NULL);
    fh_output(m, "y");
    fh_output(m, "s");
    fh_nofire(m, "fuse_silu", OX_TARGET_ONNX);
    ox_model_free(m);
}

/* Conv(x) -> act -> y, for the ORT fused forms. */
static ox_model *conv_act(const char *act)
{
    ox_model *m = fh_model(13);
    fh_input(m, "x", 4, X4);
    int64_t wd[4] = {4, 3, 3, 3}, bd = 4, k[2] = {3, 3}, p[4] = {1, 1, 1, 1};
    fh_init(m, "w", 4, wd, NULL, -1, 1);
    fh_init(m, "b", 1, &bd, NULL, -1, 1);
    ox_node *c = fh_node(m, "Conv", "c", "x", "w", "b", NULL);
    ox_node_set_attr_ints(c, "kernel_shape", 2, k);
    ox_node_set_attr_ints(c, "pads", 4, p);
    if (!strcmp(act, "Clip")) {
        clip(m, 13, "y", "c", -0.5f, 1.5f);
    } else {
        ox_node *a = fh_node(m, act, "y", "c", NULL);
        if (!strcmp(act, "LeakyRelu"))
            ox_node_set_attr_f(a, "alpha", 0.1f);
        if (!strcmp(act, "HardSigmoid"))
            ox_node_set_attr_f(a, "alpha", 0.3f);
    }
    return m;
}

static void test_conv_act(void **state)
{
    (void)state;
    static const char *acts[] = {"Relu", "Tanh", "Sigmoid", "LeakyRelu", "Clip", "HardSigmoid"};
    for (size_t i = 0; i < sizeof acts / sizeof *acts; i++) {
        ox_model *m = conv_act(acts[i]);
        expect(m, "fuse_conv_act", OX_TARGET_ORT, "FusedConv", 1);
    }
    /* Must not: an activation ORT's FusedConv lacks; the Conv read twice. */
    ox_model *m = conv_act("Elu");
    fh_output(m, "y");
    fh_nofire(m, "fuse_conv_act", OX_TARGET_ORT);
    ox_model_free(m);
    m = conv_act("Relu");
    fh_output(m, "y");
    fh_output(m, "c");
    fh_nofire(m, "fuse_conv_act", OX_TARGET_ORT);
    ox_model_free(m);
}

static void test_conv_add_act(void **state)
{
    (void)state;
    /* Residual block end: Relu(Conv(x) + z), z another input of the
     * Conv output's shape, either Add order. */
    int64_t zd[4] = {2, 4, 5, 5};
    for (int v = 0; v < 4; v++) {
        ox_model *m = conv_act("Relu");
        ox_node *relu = m->graph->nodes[m->graph->n_nodes - 1];
        if (v == 2) {
            int64_t bd[4] = {1, 4, 1, 1};
            fh_init(m, "z", 4, bd, NULL, -1, 1); /* broadcasts: not a Z */
        } else {
            fh_input(m, "z", 4, zd);
        }
        if (v == 1)
            fh_node(m, "Add", "s", "z", "c", NULL);
        else
            fh_node(m, "Add", "s", "c", "z", NULL);
        ox_node_set_input(relu, 0, ox_graph_value(m->graph, "s"));
        ox_node_move(relu, m->graph->n_nodes - 1);
        fh_output(m, "y");
        if (v == 3)
            fh_output(m, "s"); /* the sum is read elsewhere */
        if (v >= 2) {
            fh_nofire(m, "fuse_conv_add_act", OX_TARGET_ORT);
            ox_model_free(m);
            continue;
        }
        int rw;
        ox_model *o = fh_opt(m, "fuse_conv_add_act", OX_TARGET_ORT, &rw);
        assert_int_equal(rw, 1);
        assert_int_equal(o->graph->n_nodes, 1);
        assert_int_equal(o->graph->nodes[0]->n_inputs, 4);
        ox_model_free(o);
        ox_model_free(m);
    }
}

static void test_gemm_act(void **state)
{
    (void)state;
    static const int64_t W[2] = {6, 5};
    for (int v = 0; v < 3; v++) {
        ox_model *m = act_model(13);
        fh_init(m, "w", 2, W, NULL, -1, 1);
        if (v == 2) {
            fh_node(m, "MatMul", "g", "x", "w", NULL);
        } else {
            fh_init(m, "c", 1, &W[1], NULL, -1, 1);
            ox_node_set_attr_f(fh_node(m, "Gemm", "g", "x", "w", "c", NULL), "alpha", 0.5f);
        }
        ox_node *a = fh_node(m, v == 1 ? "LeakyRelu" : v ? "HardSigmoid" : "Relu", "y", "g",
                             NULL);
        if (v == 1)
            ox_node_set_attr_f(a, "alpha", 0.2f);
        expect(m, "fuse_gemm_act", OX_TARGET_ORT, "FusedGemm", 2);
    }
    /* Must not: Clip (ORT's FusedGemm has no Clip). */
    ox_model *m = act_model(13);
    fh_init(m, "w", 2, W, NULL, -1, 1);
    fh_node(m, "Gemm", "g", "x", "w", NULL);
    clip(m, 13, "y", "g", 0, 6);
    fh_output(m, "y");
    fh_nofire(m, "fuse_gemm_act", OX_TARGET_ORT);
    ox_model_free(m);
}

static void test_all_fired(void **state)
{
    (void)state;
    fh_all_fired("fuse_relu_clip,fuse_hardsigmoid,fuse_hardswish,fuse_silu,fuse_silu_ort,"
                 "fuse_conv_act,fuse_conv_add_act,fuse_gemm_act");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_relu_clip),
        cmocka_unit_test(test_hardsigmoid),
        cmocka_unit_test(test_hardswish),
        cmocka_unit_test(test_silu),
        cmocka_unit_test(test_conv_act),
        cmocka_unit_test(test_conv_add_act),
        cmocka_unit_test(test_gemm_act),
        cmocka_unit_test(test_all_fired),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
