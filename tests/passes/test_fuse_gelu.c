/* Unit tests of the GELU fusions (src/passes/fuse_gelu.c): the erf form
 * with a division by sqrt2 or a multiplication by 1/sqrt2 and the tanh form
 * (Pow or Mul cube), the factors 0.5, x and (1 + f) in every nesting and
 * operand order; Gelu at opset 20, com.microsoft Gelu / FastGelu under
 * --target ort, BiasGelu; must-not-fire cases and the opset note. */
#include "fuse_harness.h"

static const int64_t X3[3] = {2, 3, 8};

enum {
    G_TANH = 1,
    G_MULINV = 2,   /* x * (1/sqrt2) instead of x / sqrt2 */
    G_SWAP = 4,     /* operands of every commutative op swapped */
    G_NEST1 = 8,    /* (e * 0.5) * x */
    G_NEST2 = 16,   /* e * (x * 0.5) */
    G_CUBEMUL = 32, /* x * (x * x) instead of Pow(x, 3) */
    G_BIAS = 64,    /* x = Add(in, bias[8]) */
};

/* Mul a*b with the operands swapped when asked. */
static void mul(ox_model *m, int v, const char *out, const char *a, const char *b)
{
    if (v & G_SWAP)
        fh_node(m, "Mul", out, b, a, NULL);
    else
        fh_node(m, "Mul", out, a, b, NULL);
}

static void add(ox_model *m, int v, const char *out, const char *a, const char *b)
{
    if (v & G_SWAP)
        fh_node(m, "Add", out, b, a, NULL);
    else
        fh_node(m, "Add", out, a, b, NULL);
}

static ox_model *gelu_model(int64_t opset, int v, float k)
{
    ox_model *m = fh_model(opset);
    fh_input(m, "in", 3, X3);
    fh_scalar(m, "spread", 4);
    if (v & G_BIAS) {
        static const int64_t H[1] = {8};
        fh_node(m, "Mul", "x0", "in", "spread", NULL);
        fh_init(m, "bias", 1, H, NULL, -1, 1);
        add(m, v, "x", "x0", "bias");
    } else {
        fh_node(m, "Mul", "x", "in", "spread", NULL);
    }
    fh_scalar(m, "one", 1);
    fh_const_node(m, "half", 0.5f);
    if (v & G_TANH) {
        fh_scalar(m, "c1", 0.044715f);
        fh_scalar(m, "c2", k);
        if (v & G_CUBEMUL) {
            fh_node(m, "Mul", "x2", "x", "x", NULL);
            mul(m, v, "x3", "x", "x2");
        } else {
            fh_scalar(m, "three", 3);
            fh_node(m, "Pow", "x3", "x", "three", NULL);
        }
        mul(m, v, "q", "x3", "c1");
        add(m, v, "s", "x", "q");
        mul(m, v, "t", "s", "c2");
        fh_node(m, "Tanh", "f", "t", NULL);
    } else {
        fh_scalar(m, "c", k);
        if (v & G_MULINV)
            mul(m, v, "u", "x", "c");
        else
            fh_node(m, "Div", "u", "x", "c", NULL);
        fh_node(m, "Erf", "f", "u", NULL);
    }
    add(m, v, "e", "f", "one");
    if (v & G_NEST1) {
        mul(m, v, "h", "e", "half");
        mul(m, v, "y", "h", "x");
    } else if (v & G_NEST2) {
        mul(m, v, "h", "x", "half");
        mul(m, v, "y", "e", "h");
    } else {
        mul(m, v, "h", "x", "e");
        mul(m, v, "y", "h", "half");
    }
    return m;
}

static const float K_ERF = 1.41421356f, K_INV = 0.70710678f, K_TANH = 0.7978845608f;

static float kval(int v)
{
    return v & G_TANH ? K_TANH : v & G_MULINV ? K_INV : K_ERF;
}

static void expect(ox_model *m, const char *passes, ox_pass_target t, const char *op,
                   const char *approx, int n_nodes)
{
    fh_output(m, "y");
    int rw;
    ox_model *o = fh_opt(m, passes, t, &rw);
    assert_true(rw >= 1);
    assert_int_equal(fh_count(o, op), 1);
    assert_int_equal(o->graph->n_nodes, n_nodes);
    for (int i = 0; approx && i < o->graph->n_nodes; i++)
        if (ox_node_is(o->graph->nodes[i], op))
            assert_string_equal(ox_node_attr_s(o->graph->nodes[i], "approximate", "none"), approx);
    ox_model_free(o);
    ox_model_free(m);
}

static void test_gelu_fires(void **state)
{
    (void)state;
    for (int v = 0; v < 64; v++) {
        if ((v & G_NEST1) && (v & G_NEST2))
            continue;
        if ((v & G_TANH) ? (v & G_MULINV) : (v & G_CUBEMUL))
            continue; /* the bit means nothing for this form */
        bool tanh_ = v & G_TANH;
        expect(gelu_model(20, v, kval(v)), "fuse_gelu", OX_TARGET_ONNX, "Gelu",
               tanh_ ? "tanh" : "none", 2);
        expect(gelu_model(13, v, kval(v)), "fuse_gelu", OX_TARGET_ORT,
               tanh_ ? "FastGelu" : "Gelu", NULL, 2);
    }
}

static void test_bias_gelu(void **state)
{
    (void)state;
    for (int v = 0; v < 2; v++) {
        int w = G_BIAS | (v ? G_TANH : 0);
        expect(gelu_model(13, w, kval(w)), "fuse_gelu,fuse_bias_gelu", OX_TARGET_ORT,
               v ? "FastGelu" : "BiasGelu", NULL, 2);
        w |= G_SWAP;
        expect(gelu_model(13, w, kval(w)), "fuse_gelu,fuse_bias_gelu", OX_TARGET_ORT,
               v ? "FastGelu" : "BiasGelu", NULL, 2);
    }
    /* The biased sum read elsewhere: Gelu only. */
    ox_model *m = gelu_model(13, G_BIAS, K_ERF);
    fh_output(m, "y");
    fh_output(m, "x");
    int rw;
    ox_model *o = fh_opt(m, "fuse_gelu,fuse_bias_gelu", OX_TARGET_ORT, &rw);
    assert_int_equal(fh_count(o, "Gelu"), 1);
    assert_int_equal(fh_count(o, "BiasGelu"), 0);
    ox_model_free(o);
    ox_model_free(m);
}

static void test_gelu_must_not(void **state)
{
    (void)state;
    /* Another constant than sqrt2 / sqrt(2/pi). */
    for (int v = 0; v < 2; v++) {
        ox_model *m = gelu_model(20, v ? G_TANH : 0, 1.7320508f);
        fh_output(m, "y");
        fh_nofire(m, "fuse_gelu", OX_TARGET_ONNX);
        ox_model_free(m);
    }
    /* An intermediate read outside the pattern. */
    static const char *leak[] = {"u", "f", "e", "h"};
    for (int k = 0; k < 4; k++) {
        ox_model *m = gelu_model(20, 0, K_ERF);
        fh_output(m, "y");
        fh_output(m, leak[k]);
        fh_nofire(m, "fuse_gelu", OX_TARGET_ONNX);
        ox_model_free(m);
    }
    /* Multiplied by another x: 0.5 * x0 * (1 + erf(x / sqrt2)). */
    ox_model *m = gelu_model(20, 0, K_ERF);
    fh_input(m, "x_other", 3, X3);
    ox_node *h = ox_graph_value(m->graph, "h")->producer;
    ox_node_set_input(h, 0, ox_graph_value(m->graph, "x_other"));
    fh_output(m, "y");
    fh_nofire(m, "fuse_gelu", OX_TARGET_ONNX);
    ox_model_free(m);
    /* Opset 13 under --target onnx: a note, no rewrite. */
    m = gelu_model(13, 0, K_ERF);
    fh_output(m, "y");
    fh_nofire(m, "fuse_gelu", OX_TARGET_ONNX);
    ox_pass_manager *pm = ox_pm_new(OX_LEVEL_ALL, OX_TARGET_ONNX);
    ox_error err = {0};
    ox_pass_report rep = {0};
    assert_int_equal(ox_pm_only(pm, "fuse_gelu", &err), OX_OK);
    assert_int_equal(ox_pm_run(pm, m, &rep, &err), OX_OK);
    const ox_pass_stat *s = ox_pass_report_find(&rep, "fuse_gelu");
    assert_non_null(s);
    assert_non_null(s->note);
    assert_string_equal(s->note, "fuse_gelu not applied: needs opset 20 (model has 13)");
    ox_pass_report_free(&rep);
    ox_pm_free(pm);
    ox_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gelu_fires),
        cmocka_unit_test(test_bias_gelu),
        cmocka_unit_test(test_gelu_must_not),
    };
    int r = cmocka_run_group_tests(tests, NULL, NULL);
    if (!r)
        fh_all_fired("fuse_gelu,fuse_bias_gelu");
    return r;
}
