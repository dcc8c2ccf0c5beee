/* Tests of the cost model, the memory plan and the profile rows: hand-built
 * graphs checked against the formulas of docs/COST.md (no argument), the
 * shared models checked against published and analytical MAC counts
 * ("models"; skipped without ONNXSCOPE_SHARED), and timings ("bench"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include <dirent.h>

#include "onnxscope/cost.h"
#include "onnxscope/infer.h"
#include "onnxscope/io.h"
#include "onnxscope/ir.h"
#include "onnxscope/memplan.h"
#include "onnxscope/profile.h"

/* ---- building graphs ---------------------------------------------------- */

static ox_model *new_model(void)
{
    ox_model *m = ox_model_new();
    assert_non_null(m);
    if (!m->graph)
        m->graph = ox_graph_new(m, NULL);
    assert_non_null(m->graph);
    ox_model_set_opset(m, "", 17);
    return m;
}

/* An activation of the given type (dims -1 = unknown). */
static ox_value *act(ox_graph *g, const char *name, int rank, const int64_t *dims)
{
    ox_value *v = ox_graph_value(g, name);
    assert_non_null(v);
    ox_type_free(v->type);
    v->type = ox_type_new_tensor(OX_DT_FLOAT, rank, dims);
    assert_non_null(v->type);
    return v;
}

static ox_value *input(ox_graph *g, const char *name, int rank, const int64_t *dims)
{
    ox_value *v = act(g, name, rank, dims);
    assert_int_equal(ox_graph_add_input(g, v), OX_OK);
    return v;
}

static ox_value *weight(ox_graph *g, const char *name, int rank, const int64_t *dims)
{
    ox_value *v = ox_graph_value(g, name);
    ox_tensor *t = ox_tensor_new(OX_DT_FLOAT, rank, dims);
    assert_non_null(t);
    assert_int_equal(ox_graph_set_initializer(g, v, t), OX_OK);
    if (!v->type)
        v->type = ox_type_new_tensor(OX_DT_FLOAT, rank, dims);
    return v;
}

static ox_node *node(ox_graph *g, const char *op, int n_in, ox_value *const *in,
                     ox_value *out)
{
    ox_node *n = ox_node_new(g, op, "", NULL, n_in, in, 1, &out);
    assert_non_null(n);
    return n;
}

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})
#define NDIMS(...) (int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t))
#define ACT(g, name, ...) act(g, name, NDIMS(__VA_ARGS__), DIMS(__VA_ARGS__))
#define IN(g, name, ...) input(g, name, NDIMS(__VA_ARGS__), DIMS(__VA_ARGS__))
#define W(g, name, ...) weight(g, name, NDIMS(__VA_ARGS__), DIMS(__VA_ARGS__))

/* ---- per-node conventions ---------------------------------------------- */

static void test_conv(void **state)
{
    (void)state;
    ox_model *m = new_model();
    ox_graph *g = m->graph;
    ox_value *in[3] = {IN(g, "x", 1, 3, 224, 224), W(g, "w", 64, 3, 7, 7), W(g, "b", 64)};
    ox_node *n = node(g, "Conv", 3, in, ACT(g, "y", 1, 64, 112, 112));
    ox_node_set_attr_ints(n, "kernel_shape", 2, DIMS(7, 7));
    ox_cost c;
    ox_node_cost(n, &c);
    assert_true(c.known);
    /* N*Cout*Hout*Wout*(Cin/group)*Kh*Kw */
    int64_t macs = 1LL * 64 * 112 * 112 * 3 * 7 * 7;
    assert_int_equal(c.macs, macs);
    assert_int_equal(c.flops, 2 * macs + 64 * 112 * 112); /* + bias adds */
    assert_int_equal(c.params, 64 * 3 * 7 * 7 + 64);
    assert_int_equal(c.param_bytes, 4 * (64 * 3 * 7 * 7 + 64));
    assert_int_equal(c.bytes_read, 4 * (3 * 224 * 224 + 64 * 3 * 49 + 64));
    assert_int_equal(c.bytes_written, 4 * 64 * 112 * 112);
    ox_model_free(m);
}

static void test_depthwise_and_transpose(void **state)
{
    (void)state;
    ox_model *m = new_model();
    ox_graph *g = m->graph;
    ox_value *in[2] = {IN(g, "x", 2, 32, 56, 56), W(g, "w", 32, 1, 3, 3)};
    ox_node *n = node(g, "Conv", 2, in, ACT(g, "y", 2, 32, 28, 28));
    ox_node_set_attr_i(n, "group", 32);
    ox_cost c;
    ox_node_cost(n, &c);
    assert_true(c.known);
    assert_int_equal(c.macs, 2LL * 32 * 28 * 28 * 1 * 9);
    assert_int_equal(c.flops, 2 * c.macs); /* no bias */

    /* ConvTranspose: every input pixel feeds Cout/group * K outputs. */
    ox_value *tin[2] = {IN(g, "t", 1, 8, 10, 10), W(g, "tw", 8, 4, 3, 3)};
    ox_node *t = node(g, "ConvTranspose", 2, tin, ACT(g, "ty", 1, 4, 12, 12));
    ox_node_cost(t, &c);
    assert_true(c.known);
    assert_int_equal(c.macs, 1LL * 8 * 10 * 10 * 4 * 9);
    ox_model_free(m);
}

static void test_matmul_gemm(void **state)
{
    (void)state;
    ox_model *m = new_model();
    ox_graph *g = m->graph;
    ox_value *in[2] = {IN(g, "a", 2, 4, 8, 16), IN(g, "b", 2, 4, 16, 32)};
    ox_node *n = node(g, "MatMul", 2, in, ACT(g, "y", 2, 4, 8, 32));
    ox_cost c;
    ox_node_cost(n, &c);
    assert_true(c.known);
    assert_int_equal(c.macs, 2LL * 4 * 8 * 32 * 16); /* batch*M*N*K */
    assert_int_equal(c.flops, 2 * c.macs);
    assert_int_equal(c.params, 0); /* both operands are activations */

    /* Gemm with transA: A is [K, M]. */
    ox_value *gin[3] = {IN(g, "ga", 16, 8), W(g, "gb", 16, 10), W(g, "gc", 10)};
    ox_node *gm = node(g, "Gemm", 3, gin, ACT(g, "gy", 8, 10));
    ox_node_set_attr_i(gm, "transA", 1);
    ox_node_cost(gm, &c);
    assert_true(c.known);
    assert_int_equal(c.macs, 8 * 10 * 16);
    assert_int_equal(c.flops, 2 * 8 * 10 * 16 + 8 * 10);
    assert_int_equal(c.params, 16 * 10 + 10);

    /* 1-D x 2-D MatMul: K is the vector's length. */
    ox_value *vin[2] = {IN(g, "v", 16), W(g, "vw", 16, 5)};
    ox_node *vm = node(g, "MatMul", 2, vin, ACT(g, "vy", 5));
    ox_node_cost(vm, &c);
    assert_true(c.known);
    assert_int_equal(c.macs, 5 * 16);
    ox_model_free(m);
}

static void test_elementwise(void **state)
{
    (void)state;
    ox_model *m = new_model();
    ox_graph *g = m->graph;
    ox_value *a = IN(g, "a", 2, 3, 4), *b = IN(g, "b", 4);
    ox_value *in[2] = {a, b};
    ox_cost c;
    ox_node *add = node(g, "Add", 2, in, ACT(g, "s", 2, 3, 4));
    ox_node_cost(add, &c);
    assert_true(c.known);
    assert_int_equal(c.macs, 24);       /* one op per output element */
    assert_int_equal(c.flops, 24);

    ox_value *e_in[1] = {a};
    ox_node *ex = node(g, "Exp", 1, e_in, ACT(g, "e", 2, 3, 4));
    ox_node_cost(ex, &c);
    assert_int_equal(c.macs, 24 * OX_COST_EXP);

    ox_node *dv = node(g, "Div", 2, in, ACT(g, "d", 2, 3, 4));
    ox_node_cost(dv, &c);
    assert_int_equal(c.macs, 24 * OX_COST_DIV);

    ox_value *s_in[3] = {a, a, a};
    ox_node *sum = node(g, "Sum", 3, s_in, ACT(g, "sum", 2, 3, 4));
    ox_node_cost(sum, &c);
    assert_int_equal(c.macs, 2 * 24); /* n-1 adds per element */

    ox_node *sm = node(g, "Softmax", 1, e_in, ACT(g, "sm", 2, 3, 4));
    ox_node_cost(sm, &c);
    assert_int_equal(c.macs, 24 * 21);

    ox_node *rs = node(g, "ReduceMean", 1, e_in, ACT(g, "rm", 2, 3, 1));
    ox_node_cost(rs, &c);
    assert_int_equal(c.macs, 24); /* reductions: input elements */

    ox_node *sh = node(g, "Reshape", 1, e_in, ACT(g, "r", 24));
    ox_node_cost(sh, &c);
    assert_true(c.known);
    assert_int_equal(c.macs, 0);

    ox_value *p_in[1] = {IN(g, "img", 1, 64, 112, 112)};
    ox_node *mp = node(g, "MaxPool", 1, p_in, ACT(g, "pool", 1, 64, 56, 56));
    ox_node_set_attr_ints(mp, "kernel_shape", 2, DIMS(3, 3));
    ox_node_cost(mp, &c);
    assert_true(c.known);
    assert_int_equal(c.macs, 64LL * 56 * 56 * 9);

    ox_node *gap = node(g, "GlobalAveragePool", 1, p_in, ACT(g, "gap", 1, 64, 1, 1));
    ox_node_cost(gap, &c);
    assert_int_equal(c.macs, 64LL * 112 * 112);
    ox_model_free(m);
}

static void test_unknown(void **state)
{
    (void)state;
    ox_model *m = new_model();
    ox_graph *g = m->graph;
    ox_value *x = IN(g, "x", -1, 128);
    ox_value *in[1] = {x};
    ox_node *r = node(g, "Relu", 1, in, ACT(g, "y", -1, 128));
    ox_cost c;
    ox_node_cost(r, &c);
    assert_false(c.known);
    assert_true(c.has_rule);
    assert_false(c.bytes_known);

    ox_value *out = ACT(g, "z", 4);
    ox_node *cu = ox_node_new(g, "MyOp", "com.example", "custom", 1, in, 1, &out);
    assert_non_null(cu);
    ox_node_cost(cu, &c);
    assert_false(c.known);
    assert_false(c.has_rule);
    assert_int_equal(c.macs, 0);

    /* A Conv whose weight shape is unknown cannot be costed. */
    ox_value *wv = ACT(g, "wdyn", -1, 3, 3, 3);
    ox_value *cin[2] = {IN(g, "img", 1, 3, 8, 8), wv};
    ox_node *cv = node(g, "Conv", 2, cin, ACT(g, "cy", 1, -1, 6, 6));
    ox_node_cost(cv, &c);
    assert_false(c.known);

    ox_model_cost mc;
    assert_int_equal(ox_model_cost_compute(m, &mc, NULL), OX_OK);
    assert_false(mc.known);
    assert_int_equal(mc.n_unknown, 3);
    assert_int_equal(mc.n_no_rule, 1);
    assert_false(mc.peak_known);
    ox_model_free(m);
}

static void test_params_dedup(void **state)
{
    (void)state;
    ox_model *m = new_model();
    ox_graph *g = m->graph;
    ox_value *x = IN(g, "x", 1, 16);
    ox_value *w1 = W(g, "w1", 16, 16), *w2 = W(g, "w2", 16, 16), *w3 = W(g, "w3", 16, 16);
    /* w1 and w2 are byte-identical (zeros); w3 differs in one element. */
    ((float *)ox_tensor_mutable_data(w3->init))[5] = 1.0f;
    ox_value *in1[2] = {x, w1};
    ox_value *h1 = ACT(g, "h1", 1, 16);
    node(g, "MatMul", 2, in1, h1);
    ox_value *in2[2] = {h1, w2};
    ox_value *h2 = ACT(g, "h2", 1, 16);
    node(g, "MatMul", 2, in2, h2);
    ox_value *in3[2] = {h2, w3};
    ox_value *y = ACT(g, "y", 1, 16);
    node(g, "MatMul", 2, in3, y);
    assert_int_equal(ox_graph_add_output(g, y), OX_OK);

    ox_model_cost mc;
    assert_int_equal(ox_model_cost_compute(m, &mc, NULL), OX_OK);
    assert_true(mc.known);
    assert_int_equal(mc.params, 3 * 256);
    assert_int_equal(mc.params_dedup, 2 * 256);
    assert_int_equal(mc.weights_bytes, 3 * 1024);
    assert_int_equal(mc.weights_bytes_dedup, 2 * 1024);
    assert_int_equal(mc.macs, 3 * 256);
    assert_int_equal(mc.flops, 2 * 3 * 256);
    assert_true(mc.peak_known);
    /* 64-byte activations, at most two alive at once. */
    assert_int_equal(mc.activation_lower_bound, 128);
    assert_int_equal(mc.peak_activation_bytes, 128);
    assert_int_equal(mc.memory_bytes, 3 * 1024 + 128);

    /* Large weights equal at both ends but not in the middle stay distinct
     * (the hash only samples the ends). */
    ox_value *big1 = W(g, "big1", 4096), *big2 = W(g, "big2", 4096), *big3 = W(g, "big3", 4096);
    ((float *)ox_tensor_mutable_data(big2->init))[2048] = 1.0f;
    (void)big1;
    (void)big3;
    assert_int_equal(ox_model_cost_compute(m, &mc, NULL), OX_OK);
    assert_int_equal(mc.params, 3 * 256 + 3 * 4096);
    assert_int_equal(mc.params_dedup, 2 * 256 + 2 * 4096);
    ox_model_free(m);
}

/* A weight reached through Identity (the exporter's de-duplication) is
 * still the MatMul's parameter; the Identity itself reports none. */
static void test_weight_through_identity(void **state)
{
    (void)state;
    ox_model *m = new_model();
    ox_graph *g = m->graph;
    ox_value *w = W(g, "w", 8, 4);
    ox_value *wi = ACT(g, "w_id", 8, 4);
    ox_value *idin[1] = {w};
    ox_node *id = node(g, "Identity", 1, idin, wi);
    ox_value *in[2] = {IN(g, "x", 2, 8), wi};
    ox_node *mm = node(g, "MatMul", 2, in, ACT(g, "y", 2, 4));
    assert_true(ox_value_is_weight(wi));
    ox_cost c;
    ox_node_cost(id, &c);
    assert_int_equal(c.params, 0);
    ox_node_cost(mm, &c);
    assert_int_equal(c.params, 32);
    /* Weights computed by nodes are not activations... */
    ox_memplan *p = NULL;
    assert_int_equal(ox_memplan_build(g, NULL, &p, NULL), OX_OK);
    assert_null(ox_memplan_find(p, wi));
    assert_non_null(ox_memplan_find(p, mm->outputs[0]));
    ox_memplan_free(p);
    /* ...unless asked for. */
    ox_memplan_opts o;
    ox_memplan_opts_default(&o);
    o.include_constants = true;
    assert_int_equal(ox_memplan_build(g, &o, &p, NULL), OX_OK);
    assert_non_null(ox_memplan_find(p, wi));
    ox_memplan_free(p);
    ox_model_free(m);
}

static void test_more_ops(void **state)
{
    (void)state;
    ox_model *m = new_model();
    ox_graph *g = m->graph;
    ox_cost c;
    /* Einsum: product of the distinct index sizes (b=2, i=3, j=5, k=7). */
    ox_value *ein[2] = {IN(g, "ea", 2, 3, 5), IN(g, "eb", 2, 5, 7)};
    ox_node *es = node(g, "Einsum", 2, ein, ACT(g, "ey", 2, 3, 7));
    ox_node_set_attr_s(es, "equation", "bij,bjk->bik");
    ox_node_cost(es, &c);
    assert_true(c.known);
    assert_int_equal(c.macs, 2 * 3 * 5 * 7);
    ox_node_set_attr_s(es, "equation", "...ij,...jk->...ik");
    ox_node_cost(es, &c);
    assert_true(c.known);
    assert_int_equal(c.macs, 2 * 3 * 5 * 7);

    /* LSTM: seq*batch*dirs*4*H*(I+H) (seq 10, batch 2, I 8, H 16). */
    ox_value *lin[3] = {IN(g, "lx", 10, 2, 8), W(g, "lw", 1, 64, 8), W(g, "lr", 1, 64, 16)};
    ox_node *ls = node(g, "LSTM", 3, lin, ACT(g, "ly", 10, 1, 2, 16));
    ox_node_set_attr_i(ls, "hidden_size", 16);
    ox_node_cost(ls, &c);
    assert_true(c.known);
    assert_int_equal(c.macs, 10LL * 2 * 1 * 4 * 16 * (8 + 16));
    assert_int_equal(c.params, 64 * 8 + 64 * 16);

    /* com.microsoft ops are costed; other domains are not. */
    ox_value *gx = IN(g, "gx", 4, 8);
    ox_value *gout = ACT(g, "gy", 4, 8);
    ox_node *ge = ox_node_new(g, "Gelu", "com.microsoft", NULL, 1, &gx, 1, &gout);
    ox_node_cost(ge, &c);
    assert_true(c.known);
    assert_int_equal(c.macs, 32 * (OX_COST_ERF + 4));
    ox_value *mlout = ACT(g, "ml", 4, 8);
    ox_node *ml = ox_node_new(g, "Normalizer", "ai.onnx.ml", NULL, 1, &gx, 1, &mlout);
    ox_node_cost(ml, &c);
    assert_false(c.has_rule);

    /* A float Constant is a weight; an int64 one is shape arithmetic. */
    ox_value *cf = act(g, "cf", 0, NULL); /* scalar */
    ox_node *k1 = ox_node_new(g, "Constant", "", NULL, 0, NULL, 1, &cf);
    ox_node_set_attr_f(k1, "value_float", 6.0f);
    ox_value *ci = ox_graph_value(g, "ci");
    ci->type = ox_type_new_tensor(OX_DT_INT64, 1, DIMS(2));
    ox_node *k2 = ox_node_new(g, "Constant", "", NULL, 0, NULL, 1, &ci);
    ox_node_set_attr_ints(k2, "value_ints", 2, DIMS(1, 2));
    assert_true(ox_value_is_weight(cf));
    assert_false(ox_value_is_weight(ci));
    ox_value *clin[3] = {gx, NULL, cf};
    ox_node *cl = node(g, "Clip", 3, clin, ACT(g, "cl", 4, 8));
    ox_node_cost(cl, &c);
    assert_int_equal(c.params, 1);
    assert_int_equal(c.macs, 32);

    ox_model_cost mc;
    assert_int_equal(ox_model_cost_compute(m, &mc, NULL), OX_OK);
    /* lw, lr, the float scalar and the int64 Constant: the model's totals
     * count every Constant like an initializer, so that moving one between
     * the two (constant_to_initializer) changes no figure (issue 10). */
    assert_int_equal(mc.params, 64 * 8 + 64 * 16 + 1 + 2);
    assert_int_equal(mc.weights_bytes, (64 * 8 + 64 * 16 + 1) * 4 + 2 * 8);
    ox_model_free(m);
}

/* Rules added so that every registered op has one (issue 12, docs/COST.md);
 * figures computed by hand from the documented weights. */
static void test_rules_of_every_op(void **state)
{
    (void)state;
    ox_model *m = new_model();
    ox_graph *g = m->graph;
    ox_cost c;
    ox_value *x = IN(g, "x", 4, 8);
    ox_node *sw = node(g, "Swish", 1, &x, ACT(g, "sw", 4, 8));
    ox_node_cost(sw, &c);
    assert_true(c.known);
    assert_int_equal(c.macs, 32 * 21);
    ox_value *ab[2] = {x, IN(g, "b", 4, 8)};
    ox_node_cost(node(g, "SwiGLU", 2, ab, ACT(g, "sg", 4, 8)), &c);
    assert_int_equal(c.macs, 32 * 22);
    ox_value *rin[3] = {IN(g, "rx", 1, 2, 4, 8), IN(g, "cos", 4, 4), IN(g, "sin", 4, 4)};
    ox_node_cost(node(g, "RotaryEmbedding", 3, rin, ACT(g, "ry", 1, 2, 4, 8)), &c);
    assert_int_equal(c.macs, 64 * 3);
    ox_value *nin[2] = {x, W(g, "gamma", 8)};
    ox_node_cost(node(g, "RMSNormalization", 2, nin, ACT(g, "rms", 4, 8)), &c);
    assert_int_equal(c.macs, 32 * 4);
    /* Det: three 4 x 4 matrices, 64 / 3 = 21 multiply-adds each. */
    ox_value *dx = IN(g, "dx", 3, 4, 4);
    ox_node_cost(node(g, "Det", 1, &dx, ACT(g, "det", 3)), &c);
    assert_true(c.known);
    assert_int_equal(c.macs, 3 * 21);
    /* DFT-17 over axis 1 of length 16: 16 complex outputs x 5 x log2(16). */
    ox_value *fx = IN(g, "fx", 1, 16, 1);
    ox_node_cost(node(g, "DFT", 1, &fx, ACT(g, "fy", 1, 16, 2)), &c);
    assert_true(c.known);
    assert_int_equal(c.macs, 16 * 5 * 4);
    /* GemmFastGelu: a 4x8 by 8x16 MatMul, then FastGelu (38) per output. */
    ox_value *gin[2] = {x, W(g, "gw", 8, 16)}, *gy = ACT(g, "gy", 4, 16);
    ox_node *gg = ox_node_new(g, "GemmFastGelu", "com.microsoft", NULL, 2, gin, 1, &gy);
    ox_node_cost(gg, &c);
    assert_true(c.known);
    assert_int_equal(c.macs, 4 * 16 * 8);
    assert_int_equal(c.flops, 2 * 4 * 16 * 8 + 64 * 38);
    /* LinearAttention (B, heads, S, d): 4 dk dv per token and head. */
    ox_value *lin[3] = {IN(g, "q", 1, 2, 3, 4), IN(g, "k", 1, 2, 3, 4), IN(g, "v", 1, 2, 3, 5)};
    ox_value *lo[2] = {ACT(g, "lo", 1, 2, 3, 5), ACT(g, "ls", 1, 2, 4, 5)};
    ox_node *la = ox_node_new(g, "LinearAttention", "", NULL, 3, lin, 2, lo);
    ox_node_cost(la, &c);
    assert_true(c.known);
    assert_int_equal(c.macs, 1 * 3 * 2 * 4 * 4 * 5);
    assert_int_equal(c.flops, 2 * c.macs);
    /* GridSample defaults to bilinear: 4 per output element. */
    ox_value *gsin[2] = {IN(g, "gx", 1, 1, 4, 4), IN(g, "grid", 1, 2, 2, 2)};
    ox_node_cost(node(g, "GridSample", 2, gsin, ACT(g, "gs", 1, 1, 2, 2)), &c);
    assert_int_equal(c.macs, 4 * 4);
    /* A rule that says the data decides: a rule, but never a number. */
    ox_value *nms_in[2] = {IN(g, "boxes", 1, 10, 4), IN(g, "scores", 1, 1, 10)};
    ox_value *sel = ox_graph_value(g, "sel");
    sel->type = ox_type_new_tensor(OX_DT_INT64, 2, DIMS(-1, 3));
    ox_node *nms = node(g, "NonMaxSuppression", 2, nms_in, sel);
    ox_node_cost(nms, &c);
    assert_true(c.has_rule);
    assert_false(c.known);
    /* ai.onnx.ml ops the registry lists have rules; a custom homonym none. */
    ox_value *bo = ACT(g, "bo", 4, 8);
    ox_node_cost(ox_node_new(g, "Binarizer", "ai.onnx.ml", NULL, 1, &x, 1, &bo), &c);
    assert_true(c.known);
    assert_int_equal(c.macs, 32);
    ox_value *co = ACT(g, "co", 4, 8);
    ox_node_cost(ox_node_new(g, "Binarizer", "my.custom", NULL, 1, &x, 1, &co), &c);
    assert_false(c.has_rule);
    ox_model_free(m);
}

/* Malformed nodes report unknown costs instead of crashing. */
static void test_bad_nodes(void **state)
{
    (void)state;
    ox_model *m = new_model();
    ox_graph *g = m->graph;
    ox_cost c;
    ox_value *x = IN(g, "x", 1, 3, 8, 8);
    ox_node *cv = node(g, "Conv", 1, &x, ACT(g, "y", 1, 4, 6, 6)); /* no weight */
    ox_node_cost(cv, &c);
    assert_false(c.known);
    ox_value *gin[2] = {x, W(g, "w", 3)};
    ox_node *gm = node(g, "Gemm", 2, gin, ACT(g, "gy", 2, 2)); /* rank-4 A */
    ox_node_cost(gm, &c);
    assert_false(c.known);
    ox_node *mp = node(g, "MaxPool", 1, &x, ACT(g, "mp", 1, 3, 4, 4)); /* no kernel_shape */
    ox_node_cost(mp, &c);
    assert_false(c.known);
    ox_node *es = node(g, "Einsum", 2, gin, ACT(g, "ey", 3));
    ox_node_set_attr_s(es, "equation", "ab,c->abc"); /* ranks do not match */
    ox_node_cost(es, &c);
    assert_false(c.known);
    ox_node *noout = ox_node_new(g, "Relu", "", NULL, 1, &x, 0, NULL);
    ox_node_cost(noout, &c);
    assert_false(c.known);
    /* A sequence-typed output has no static size: the plan is incomplete. */
    ox_value *sq = ox_graph_value(g, "seq");
    sq->type = calloc(1, sizeof *sq->type);
    sq->type->kind = OX_TYPE_SEQUENCE;
    node(g, "SequenceConstruct", 1, &x, sq);
    ox_node_cost(NULL, &c);
    assert_false(c.known);
    ox_memplan *p = NULL;
    assert_int_equal(ox_memplan_build(g, NULL, &p, NULL), OX_OK);
    assert_false(p->complete);
    assert_int_equal(ox_memplan_find(p, sq)->offset, -1);
    assert_true(ox_memplan_verify(p, NULL));
    ox_memplan_free(p);
    ox_memplan_opts o;
    ox_memplan_opts_default(&o);
    o.alignment = 48;
    assert_int_equal(ox_memplan_build(g, &o, &p, NULL), OX_EINVAL);
    assert_int_equal(ox_memplan_build(NULL, NULL, &p, NULL), OX_EINVAL);
    assert_int_equal(ox_model_cost_compute(NULL, NULL, NULL), OX_EINVAL);
    ox_model_free(m);
}

/* ---- memory plan --------------------------------------------------------- */

/* A chain x -> r0 -> r1 -> ... -> r{n-1} (output) of equal sizes: two
 * buffers suffice, and the plan must find exactly that. */
static void test_plan_chain(void **state)
{
    (void)state;
    ox_model *m = new_model();
    ox_graph *g = m->graph;
    ox_value *prev = IN(g, "x", 256);
    char name[32];
    ox_value *vals[10];
    for (int i = 0; i < 10; i++) {
        snprintf(name, sizeof name, "r%d", i);
        vals[i] = ACT(g, name, 256);
        ox_value *in[1] = {prev};
        node(g, "Relu", 1, in, vals[i]);
        prev = vals[i];
    }
    assert_int_equal(ox_graph_add_output(g, prev), OX_OK);
    ox_memplan *p = NULL;
    ox_error err = {0};
    assert_int_equal(ox_memplan_build(g, NULL, &p, &err), OX_OK);
    assert_int_equal(p->n_slots, 11);
    assert_true(p->complete);
    assert_int_equal(p->lower_bound, 2 * 1024);
    assert_int_equal(p->arena_bytes, p->lower_bound); /* peak == max live set */
    assert_true(ox_memplan_verify(p, &err));
    /* Buffers are reused: r0 and r2 share bytes. */
    const ox_memplan_slot *s0 = ox_memplan_find(p, vals[0]);
    const ox_memplan_slot *s2 = ox_memplan_find(p, vals[2]);
    assert_non_null(s0);
    assert_non_null(s2);
    assert_int_equal(s0->offset, s2->offset);
    assert_int_equal(s0->first, 0);
    assert_int_equal(s0->last, 1);
    /* The output lives to the end. */
    const ox_memplan_slot *so = ox_memplan_find(p, vals[9]);
    assert_int_equal(so->last, g->n_nodes);
    assert_null(ox_memplan_find(p, NULL));
    /* verify catches two live values sharing bytes: r0 and r1 are both
     * alive at step 1. */
    ox_memplan_slot *s1 = (ox_memplan_slot *)ox_memplan_find(p, vals[1]);
    int64_t keep = s1->offset;
    s1->offset = s0->offset;
    assert_false(ox_memplan_verify(p, &err));
    assert_non_null(strstr(err.msg, "share bytes"));
    s1->offset = keep;
    ox_memplan_free(p);
    ox_model_free(m);
}

/* Outputs are never overwritten: an output produced early stays reserved
 * while the rest of the graph runs. Also a skip connection and a
 * diamond, alignment and unequal sizes. */
static void test_plan_outputs_and_skips(void **state)
{
    (void)state;
    ox_model *m = new_model();
    ox_graph *g = m->graph;
    ox_value *x = IN(g, "x", 100);             /* 400 B -> 448 aligned */
    ox_value *a = ACT(g, "a", 1000);           /* early output */
    ox_value *in_x[1] = {x};
    node(g, "Relu", 1, in_x, a);
    assert_int_equal(ox_graph_add_output(g, a), OX_OK);
    ox_value *prev = a;
    ox_value *skip = a;
    char name[32];
    for (int i = 0; i < 20; i++) {
        snprintf(name, sizeof name, "c%d", i);
        ox_value *v = ACT(g, name, 300 + 37 * (i % 5));
        ox_value *in[1] = {prev};
        node(g, "Sigmoid", 1, in, v);
        prev = v;
    }
    ox_value *jn = ACT(g, "join", 1000);
    ox_value *in_j[2] = {skip, prev};
    node(g, "Add", 2, in_j, jn);
    ox_value *y = ACT(g, "y", 1000);
    ox_value *in_y[1] = {jn};
    node(g, "Relu", 1, in_y, y);
    assert_int_equal(ox_graph_add_output(g, y), OX_OK);

    ox_memplan *p = NULL;
    ox_error err = {0};
    assert_int_equal(ox_memplan_build(g, NULL, &p, &err), OX_OK);
    assert_true(ox_memplan_verify(p, &err));
    assert_true(p->arena_bytes >= p->lower_bound);
    const ox_memplan_slot *sa = ox_memplan_find(p, a);
    assert_int_equal(sa->last, g->n_nodes);
    for (int i = 0; i < p->n_slots; i++) {
        const ox_memplan_slot *s = &p->slots[i];
        assert_int_equal(s->offset % OX_MEMPLAN_ALIGN, 0);
        assert_int_equal(s->size % OX_MEMPLAN_ALIGN, 0);
        assert_true(s->size >= s->nbytes);
        if (s == sa)
            continue;
        /* Nothing alive with `a` may touch its bytes. */
        bool overlap_t = s->first <= sa->last && sa->first <= s->last;
        bool overlap_b = s->offset < sa->offset + sa->size && sa->offset < s->offset + s->size;
        assert_false(overlap_t && overlap_b);
    }
    /* Without graph inputs, x has no slot. */
    ox_memplan_opts o;
    ox_memplan_opts_default(&o);
    o.include_inputs = false;
    ox_memplan *q = NULL;
    assert_int_equal(ox_memplan_build(g, &o, &q, &err), OX_OK);
    assert_null(ox_memplan_find(q, x));
    assert_non_null(ox_memplan_find(p, x));
    assert_int_equal(q->n_slots, p->n_slots - 1);
    ox_memplan_free(q);
    ox_memplan_free(p);
    ox_model_free(m);
}

/* ox_memplan_opts.born: node 2 runs as one with node 1 (a fused chain), so
 * its output lives from step 1 and may no longer take the bytes of node 1's
 * input, which it can without (those die at step 1). */
static void test_plan_born(void **state)
{
    (void)state;
    ox_model *m = new_model();
    ox_graph *g = m->graph;
    ox_value *x = IN(g, "x", 256);
    ox_value *a = ACT(g, "a", 256), *b = ACT(g, "b", 256), *c = ACT(g, "c", 256);
    ox_value *y = ACT(g, "y", 256);
    ox_value *ix[1] = {x}, *ia[1] = {a}, *ib[1] = {b}, *ic[1] = {c};
    node(g, "Relu", 1, ix, a);   /* 0 */
    node(g, "Neg", 1, ia, b);    /* 1: the chain's head */
    node(g, "Abs", 1, ib, c);    /* 2: fused into node 1 */
    node(g, "Neg", 1, ic, y);    /* 3 */
    assert_int_equal(ox_graph_add_output(g, y), OX_OK);
    ox_memplan_opts o;
    ox_memplan_opts_default(&o);
    o.include_inputs = false;
    ox_memplan *p = NULL, *q = NULL;
    ox_error err = {0};
    assert_int_equal(ox_memplan_build(g, &o, &p, &err), OX_OK);
    int born[4] = {0, 1, 1, 3};   /* entries >= their index mean none */
    o.born = born;
    assert_int_equal(ox_memplan_build(g, &o, &q, &err), OX_OK);
    assert_true(ox_memplan_verify(p, &err));
    assert_true(ox_memplan_verify(q, &err));
    const ox_memplan_slot *pa = ox_memplan_find(p, a), *pc = ox_memplan_find(p, c);
    const ox_memplan_slot *qa = ox_memplan_find(q, a), *qc = ox_memplan_find(q, c);
    const ox_memplan_slot *qb = ox_memplan_find(q, b), *qy = ox_memplan_find(q, y);
    assert_int_equal(pc->first, 2);
    assert_int_equal(pa->offset, pc->offset);   /* without: a's bytes reused */
    assert_int_equal(qc->first, 1);
    assert_int_equal(qc->last, 3);
    assert_int_not_equal(qa->offset, qc->offset);
    assert_int_equal(qb->first, 1);             /* the head's own output: as before */
    assert_int_equal(qy->first, 3);
    assert_true(q->arena_bytes >= q->lower_bound);
    ox_memplan_free(p);
    ox_memplan_free(q);
    ox_model_free(m);
}

/* A long chain with a few long skips plans in milliseconds. */
static void test_plan_large(void **state)
{
    (void)state;
    ox_model *m = new_model();
    ox_graph *g = m->graph;
    enum { N = 100000 };
    ox_value *prev = IN(g, "x", 64);
    ox_value *keep = prev;
    char name[32];
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "v%d", i);
        ox_value *v = ACT(g, name, 64 + (i % 7) * 16);
        ox_value *in[2] = {prev, keep};
        node(g, "Add", 2, in, v);
        if (i % 1000 == 0)
            keep = v; /* skip connections spanning 1000 steps */
        prev = v;
    }
    assert_int_equal(ox_graph_add_output(g, prev), OX_OK);
    /* Best of three: the machine may be busy with other builds. */
    ox_memplan *p = NULL;
    double ms = 1e9, cpu_ms = 1e9;
    for (int rep = 0; rep < 3; rep++) {
        struct timespec t0, t1, c0, c1;
        ox_memplan_free(p);
        p = NULL;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
        assert_int_equal(ox_memplan_build(g, NULL, &p, NULL), OX_OK);
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double t = (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
                   (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
        double c = (double)(c1.tv_sec - c0.tv_sec) * 1e3 +
                   (double)(c1.tv_nsec - c0.tv_nsec) / 1e6;
        if (t < ms)
            ms = t;
        if (c < cpu_ms)
            cpu_ms = c;
    }
    printf("memplan: %d values planned in %.1f ms (%.1f ms CPU), arena %lld B, "
           "lower bound %lld B\n", p->n_slots, ms, cpu_ms, (long long)p->arena_bytes,
           (long long)p->lower_bound);
    assert_true(ox_memplan_verify(p, NULL));
    /* Generous for a busy 2-core machine; valgrind runs set the variable. */
    if (!getenv("ONNXSCOPE_NO_TIMING"))
        assert_true(ms < 2000.0);
    /* Greedy-by-size stays close to the bound on such graphs. */
    assert_true(p->arena_bytes <= 2 * p->lower_bound);
    ox_memplan_free(p);
    ox_model_free(m);
}

/* ---- profile ------------------------------------------------------------- */

static void test_profile(void **state)
{
    (void)state;
    ox_model *m = new_model();
    ox_graph *g = m->graph;
    ox_value *cin[2] = {IN(g, "x", 1, 3, 32, 32), W(g, "w", 8, 3, 3, 3)};
    ox_value *c = ACT(g, "c", 1, 8, 30, 30);
    ox_node *conv = ox_node_new(g, "Conv", "", "conv1", 2, cin, 1, &c);
    assert_non_null(conv);
    ox_value *rin[1] = {c};
    ox_value *r = ACT(g, "r", 1, 8, 30, 30);
    node(g, "Relu", 1, rin, r);
    ox_value *fin[1] = {r};
    ox_value *f = ACT(g, "f", 1, 7200);
    node(g, "Flatten", 1, fin, f);
    assert_int_equal(ox_graph_add_output(g, f), OX_OK);

    ox_profile *p = NULL;
    assert_int_equal(ox_profile_build(m, &p, NULL), OX_OK);
    assert_int_equal(p->n_rows, 3);
    assert_string_equal(p->rows[0].name, "conv1");
    assert_string_equal(p->rows[0].out_shapes, "1x8x30x30");
    assert_string_equal(p->rows[1].name, "Relu_1"); /* unnamed nodes */
    int64_t conv_macs = 8LL * 30 * 30 * 27;
    assert_int_equal(p->sum_macs, conv_macs + 7200);
    assert_int_equal(p->model.macs, p->sum_macs);

    ox_profile_col col;
    assert_true(ox_profile_col_from_name("params", &col));
    assert_int_equal(col, OX_PCOL_PARAMS);
    assert_false(ox_profile_col_from_name("nope", &col));
    ox_profile_sort(p, OX_PCOL_MACS, false);
    assert_string_equal(p->rows[0].op, "Flatten");
    assert_string_equal(p->rows[2].op, "Conv");
    ox_profile_sort(p, OX_PCOL_MACS, true);
    assert_string_equal(p->rows[0].op, "Conv");
    double pct = 100.0 * (double)conv_macs / (double)(conv_macs + 7200);
    assert_true(p->rows[0].macs_pct > pct - 1e-9 && p->rows[0].macs_pct < pct + 1e-9);
    ox_profile_sort(p, OX_PCOL_INDEX, false);
    assert_int_equal(p->rows[1].index, 1);
    ox_profile_sort(p, OX_PCOL_NAME, false);
    assert_string_equal(p->rows[0].name, "Flatten_2");

    char *buf = NULL;
    size_t len = 0;
    FILE *f2 = open_memstream(&buf, &len);
    ox_profile_print(f2, p, 0);
    fclose(f2);
    assert_non_null(strstr(buf, "conv1"));
    assert_non_null(strstr(buf, "total"));
    free(buf);

    json_t *j = ox_profile_to_json(p);
    assert_non_null(j);
    assert_int_equal(json_array_size(json_object_get(j, "nodes")), 3);
    json_t *tot = json_object_get(j, "totals");
    assert_int_equal(json_integer_value(json_object_get(tot, "macs")), conv_macs + 7200);
    json_decref(j);

    char nb[32];
    assert_string_equal(ox_fmt_count(4089000000LL, true, nb, sizeof nb), "4.09G");
    assert_string_equal(ox_fmt_count(12, false, nb, sizeof nb), "?");
    assert_string_equal(ox_fmt_bytes(1536, true, nb, sizeof nb), "1.50 KiB");
    ox_profile_free(p);
    ox_model_free(m);
}


/* ---- control flow ------------------------------------------------------------ */

static ox_value *typed_input(ox_graph *g, const char *name, ox_dtype dt, int rank,
                             const int64_t *dims)
{
    ox_value *v = ox_graph_value(g, name);
    assert_non_null(v);
    v->type = ox_type_new_tensor(dt, rank, dims);
    assert_int_equal(ox_graph_add_input(g, v), OX_OK);
    return v;
}

static ox_value *scalar_init(ox_graph *g, const char *name, ox_dtype dt, int64_t val)
{
    ox_value *v = ox_graph_value(g, name);
    ox_tensor *t = ox_tensor_new(dt, 0, NULL);
    assert_non_null(t);
    ox_tensor_set_i64(t, 0, val);
    assert_int_equal(ox_graph_set_initializer(g, v, t), OX_OK);
    return v;
}

/* Attaches body (a copy: the node owns it) as graph attribute name. */
static ox_graph *attach(ox_node *n, const char *name, ox_graph *body)
{
    ox_attr a;
    memset(&a, 0, sizeof a);
    a.name = (char *)name;
    a.type = OX_ATTR_GRAPH;
    a.g = body;
    assert_non_null(ox_node_set_attr(n, &a));
    ox_graph_free(body);
    return ox_node_attr(n, name)->g;
}

static ox_node *op2(ox_graph *g, const char *op, ox_value *a, ox_value *b, const char *out)
{
    ox_value *in[2] = {a, b};
    ox_value *o = ox_graph_value(g, out);
    ox_node *n = ox_node_new(g, op, "", out, b ? 2 : 1, in, 1, &o);
    assert_non_null(n);
    return n;
}

/* A Loop body: (i, cond, v) -> (cond_out, v*v + v); cond_out is cond, or
 * i < lim when lim is given. 128 MACs per iteration on [4,16] (+1 for Less). */
static ox_graph *loop_body(ox_model *m, ox_graph *g, ox_value *lim)
{
    ox_graph *b = ox_graph_new(m, g);
    ox_value *i = ox_graph_value(b, "i"), *c = ox_graph_value(b, "cin"),
             *v = ox_graph_value(b, "v");
    ox_graph_add_input(b, i);
    ox_graph_add_input(b, c);
    ox_graph_add_input(b, v);
    ox_value *p = op2(b, "Mul", v, v, "p")->outputs[0];
    ox_value *q = op2(b, "Add", p, v, "q")->outputs[0];
    ox_value *co = lim ? op2(b, "Less", i, lim, "cout")->outputs[0] : c;
    ox_graph_add_output(b, co);
    ox_graph_add_output(b, q);
    return b;
}

/* If / Loop / Scan built with the IR API; expected MACs by hand. */
static void test_control_flow(void **state)
{
    (void)state;
    ox_model *m = new_model();
    ox_graph *g = m->graph;
    ox_value *x = typed_input(g, "x", OX_DT_FLOAT, 2, DIMS(4, 16));
    ox_value *c = typed_input(g, "c", OX_DT_BOOL, 0, NULL);
    ox_value *nm = typed_input(g, "n", OX_DT_INT64, 0, NULL);
    ox_value *s0 = typed_input(g, "s0", OX_DT_FLOAT, 1, DIMS(16));
    ox_value *xs = typed_input(g, "xs", OX_DT_FLOAT, 2, DIMS(7, 16));
    ox_value *w1 = W(g, "w1", 16, 32), *w2 = W(g, "w2", 16, 8);
    ox_value *cf = scalar_init(g, "cf", OX_DT_BOOL, 0);
    ox_value *ct = scalar_init(g, "ct", OX_DT_BOOL, 1);
    ox_value *ten = scalar_init(g, "ten", OX_DT_INT64, 10);
    ox_value *five = scalar_init(g, "five", OX_DT_INT64, 5);
    ox_value *lim = scalar_init(g, "lim", OX_DT_INT64, 3);

    /* If on an input: then MatMul x.w1 (4*32*16 = 2048), else x.w2 (512). */
    ox_node *ifs[2];
    ox_value *conds[2] = {c, cf};
    for (int k = 0; k < 2; k++) {
        char name[16];
        snprintf(name, sizeof name, "if%d", k);
        ox_value *o = ox_graph_value(g, name);
        ifs[k] = ox_node_new(g, "If", "", name, 1, &conds[k], 1, &o);
        for (int b = 0; b < 2; b++) {
            ox_graph *br = ox_graph_new(m, g);
            snprintf(name, sizeof name, "br%d_%d", k, b);
            ox_graph_add_output(br, op2(br, "MatMul", x, b ? w2 : w1, name)->outputs[0]);
            attach(ifs[k], b ? "else_branch" : "then_branch", br);
        }
    }
    /* Loops: M = 10 and no cond (10 x 128); M an input (unknown); M = 5
     * with a computed condition (unknown, at most 5). */
    ox_value *loop_m[3] = {ten, nm, five};
    ox_node *loops[3];
    for (int k = 0; k < 3; k++) {
        char name[16];
        snprintf(name, sizeof name, "loop%d", k);
        ox_value *in[3] = {loop_m[k], k == 2 ? ct : NULL, x};
        ox_value *o = ox_graph_value(g, name);
        loops[k] = ox_node_new(g, "Loop", "", name, 3, in, 1, &o);
        attach(loops[k], "body", loop_body(m, g, k == 2 ? lim : NULL));
    }
    /* Scan over 7 rows of [7,16]: Add (16) + Tanh (32*16) per row. */
    ox_value *sin_[2] = {s0, xs};
    ox_value *sout[2] = {ox_graph_value(g, "s_final"), ox_graph_value(g, "ys")};
    ox_node *scan = ox_node_new(g, "Scan", "", "scan", 2, sin_, 2, sout);
    ox_node_set_attr_i(scan, "num_scan_inputs", 1);
    {
        ox_graph *b = ox_graph_new(m, g);
        ox_value *s = ox_graph_value(b, "s"), *xt = ox_graph_value(b, "xt");
        ox_graph_add_input(b, s);
        ox_graph_add_input(b, xt);
        ox_value *a = op2(b, "Add", s, xt, "a")->outputs[0];
        ox_value *t = op2(b, "Tanh", a, NULL, "t")->outputs[0];
        ox_graph_add_output(b, t);
        ox_graph_add_output(b, a);
        attach(scan, "body", b);
    }
    ox_graph_relink(g);
    ox_error err = {0};
    assert_int_equal(ox_infer_model(m, NULL, &err), OX_OK);

    ox_cost cc;
    char buf[160];
    ox_node_cost(ifs[0], &cc);
    assert_true(cc.known);
    assert_int_equal(cc.control, OX_CTRL_IF_MAX);
    assert_int_equal(cc.branch, 0);
    assert_int_equal(cc.macs, 2048);
    assert_int_equal(cc.flops, 4096);
    assert_int_equal(cc.macs_min, 512);
    assert_true(cc.upper);
    assert_non_null(strstr(ox_cost_note(&cc, buf, sizeof buf), "larger branch (then_branch)"));
    assert_string_equal(ox_fmt_node_macs(&cc, buf, sizeof buf), "<= 2.05K");

    ox_node_cost(ifs[1], &cc); /* cond is a constant false: else runs */
    assert_true(cc.known);
    assert_int_equal(cc.control, OX_CTRL_IF_TAKEN);
    assert_int_equal(cc.branch, 1);
    assert_int_equal(cc.macs, 512);
    assert_false(cc.upper);
    assert_string_equal(ox_fmt_node_macs(&cc, buf, sizeof buf), "512");

    ox_node_cost(loops[0], &cc);
    assert_true(cc.known);
    assert_int_equal(cc.control, OX_CTRL_LOOP);
    assert_int_equal(cc.trips, 10);
    assert_int_equal(cc.iter_macs, 128);
    assert_int_equal(cc.macs, 1280);
    assert_int_equal(cc.flops, 1280);
    assert_string_equal(ox_cost_note(&cc, buf, sizeof buf), "10 iterations x 128 MACs");

    ox_node_cost(loops[1], &cc);
    assert_false(cc.known);
    assert_int_equal(cc.control, OX_CTRL_LOOP_UNKNOWN);
    assert_int_equal(cc.macs, 0);
    assert_int_equal(cc.iter_macs, 128);
    assert_true(cc.iter_known);
    assert_string_equal(ox_cost_note(&cc, buf, sizeof buf),
                        "trip count not constant: 128 MACs per iteration");
    assert_string_equal(ox_fmt_node_macs(&cc, buf, sizeof buf), "?");

    ox_node_cost(loops[2], &cc);
    assert_false(cc.known);
    assert_int_equal(cc.trips_max, 5);
    assert_int_equal(cc.iter_macs, 129); /* + Less on scalars */
    assert_non_null(strstr(ox_cost_note(&cc, buf, sizeof buf), "at most 5"));

    ox_node_cost(scan, &cc);
    assert_true(cc.known);
    assert_int_equal(cc.control, OX_CTRL_SCAN);
    assert_int_equal(cc.trips, 7);
    assert_int_equal(cc.iter_macs, 16 + 32 * 16);
    assert_int_equal(cc.macs, 7 * (16 + 32 * 16));

    /* Totals: two unknown loops; the lower bound counts If0's smaller branch. */
    ox_model_cost mc;
    assert_int_equal(ox_model_cost_compute(m, &mc, NULL), OX_OK);
    assert_false(mc.known);
    assert_int_equal(mc.n_unknown, 2);
    assert_int_equal(mc.n_upper, 1);
    assert_int_equal(mc.macs_lower, 512 + 512 + 1280 + 7 * 528);
    assert_string_equal(ox_fmt_model_macs(&mc, buf, sizeof buf), ">= 6.00K (2 nodes unknown)");

    /* Without the unknown loops: an upper bound ("<="), exact elsewhere. */
    ox_node *gone[2] = {loops[1], loops[2]};
    ox_graph_remove_nodes(g, gone, 2);
    assert_int_equal(ox_model_cost_compute(m, &mc, NULL), OX_OK);
    assert_true(mc.known);
    assert_int_equal(mc.macs, 2048 + 512 + 1280 + 7 * 528);
    assert_string_equal(ox_fmt_model_macs(&mc, buf, sizeof buf), "<= 7.54K");

    /* The profile says how each control-flow node was counted. */
    ox_profile *p = NULL;
    assert_int_equal(ox_profile_build(m, &p, NULL), OX_OK);
    char *txt = NULL;
    size_t tl = 0;
    FILE *f = open_memstream(&txt, &tl);
    assert_non_null(f);
    ox_profile_print(f, p, 0);
    fclose(f);
    assert_non_null(strstr(txt, "if0: larger branch (then_branch) counted"));
    assert_non_null(strstr(txt, "loop0: 10 iterations x 128 MACs"));
    assert_non_null(strstr(txt, "scan: scan length 7 x 528 MACs"));
    free(txt);
    ox_profile_free(p);
    ox_model_free(m);
}

static void test_fmt_cost(void **state)
{
    (void)state;
    char b[64];
    /* Unknown is never a number: nothing known is "?", a known part is a
     * lower bound with the count of unknown nodes. */
    assert_string_equal(ox_fmt_cost(0, 0, false, false, 5, b, sizeof b), "?");
    assert_string_equal(ox_fmt_cost(1500, 1500, false, false, 1, b, sizeof b),
                        ">= 1.50K (1 node unknown)");
    assert_string_equal(ox_fmt_cost(0, 0, true, false, 0, b, sizeof b), "0");
    assert_string_equal(ox_fmt_cost(4090000000LL, 0, true, false, 0, b, sizeof b), "4.09G");
    assert_string_equal(ox_fmt_cost(2000, 100, true, true, 0, b, sizeof b), "<= 2.00K");
}

/* ---- shared models -------------------------------------------------------- */

static const char *shared_dir(void)
{
    const char *d = getenv("ONNXSCOPE_SHARED");
    if (!d || !*d)
        return NULL;
    return d;
}

/* Loads shared/rel and infers shapes with every input fixed to `shape`
 * (e.g. "1x3x224x224"). NULL (and a printed reason) when absent. */
static ox_model *load_inferred(const char *rel, const char *shape)
{
    const char *d = shared_dir();
    char path[4096];
    if (!d) {
        printf("skip: ONNXSCOPE_SHARED is not set\n");
        return NULL;
    }
    snprintf(path, sizeof path, "%s/%s", d, rel);
    FILE *f = fopen(path, "rb");
    if (!f) {
        printf("skip: %s is absent\n", path);
        return NULL;
    }
    fclose(f);
    ox_model *m = NULL;
    ox_error err = {0};
    ox_status st = ox_load(path, NULL, &m, &err);
    if (st != OX_OK)
        fail_msg("loading %s: %s", path, err.msg);
    ox_infer_opts o = {0};
    ox_graph *g = m->graph;
    /* Every runtime input gets the shape (the transformers' inputs all
     * share [batch, sequence]). */
    for (int i = 0; shape && i < g->n_inputs; i++) {
        if (g->inputs[i]->init)
            continue;
        char arg[512];
        snprintf(arg, sizeof arg, "%s=%s", g->inputs[i]->name, shape);
        if (ox_infer_opts_add_shape(&o, arg, &err) != OX_OK)
            fail_msg("--shape %s: %s", arg, err.msg);
    }
    st = ox_infer_model(m, &o, &err);
    ox_infer_opts_free(&o);
    if (st != OX_OK)
        fail_msg("inferring %s: %s", path, err.msg);
    return m;
}

typedef struct op_sums {
    int64_t contraction; /* Conv, ConvTranspose, MatMul, Gemm */
    int64_t total;
    int unknown;
    int64_t total_flops;
} op_sums;

static op_sums sum_model(const ox_model *m)
{
    op_sums s = {0};
    const ox_graph *g = m->graph;
    for (int i = 0; i < g->n_nodes; i++) {
        const ox_node *n = g->nodes[i];
        ox_cost c;
        ox_node_cost(n, &c);
        if (!c.known) {
            s.unknown++;
            printf("  unknown cost: %s (%s)\n", n->name ? n->name : "?", n->op_type);
        }
        if (ox_node_is(n, "Conv") || ox_node_is(n, "ConvTranspose") ||
            ox_node_is(n, "MatMul") || ox_node_is(n, "Gemm"))
            s.contraction += c.macs;
        s.total += c.macs;
        s.total_flops += c.flops;
    }
    return s;
}

static void check_within(const char *what, double got, double want, double rel)
{
    double e = got / want - 1.0;
    printf("%s: %.6g (reference %.6g, %+.3f%%)\n", what, got, want, 100.0 * e);
    if (e > rel || e < -rel)
        fail_msg("%s: %.6g is not within %.2f%% of %.6g", what, got, 100 * rel, want);
}

static void check_model_totals(const ox_model *m, const op_sums *s)
{
    ox_model_cost mc;
    ox_error err = {0};
    assert_int_equal(ox_model_cost_compute(m, &mc, &err), OX_OK);
    assert_int_equal(mc.macs, s->total);
    assert_int_equal(mc.flops, s->total_flops);
    assert_true(mc.known);
    assert_true(mc.peak_known);
    assert_true(mc.peak_activation_bytes >= mc.activation_lower_bound);
    assert_true(mc.params_dedup <= mc.params);
    assert_true(mc.file_bytes > 0);
    printf("  params %lld (dedup %lld), weights %lld B, peak activations %lld B "
           "(bound %lld B)\n", (long long)mc.params, (long long)mc.params_dedup,
           (long long)mc.weights_bytes, (long long)mc.peak_activation_bytes,
           (long long)mc.activation_lower_bound);
    ox_memplan *p = NULL;
    assert_int_equal(ox_memplan_build(m->graph, NULL, &p, &err), OX_OK);
    assert_true(ox_memplan_verify(p, &err));
    ox_memplan_free(p);
}

static void test_resnet50(void **state)
{
    (void)state;
    ox_model *m = load_inferred("onnx-backend/light/light_resnet50.onnx", "1x3x224x224");
    if (!m)
        skip();
    op_sums s = sum_model(m);
    assert_int_equal(s.unknown, 0);
    /* The published ResNet-50 figure (onnx-tool, torchvision): 4.089 GMACs. */
    check_within("resnet50 Conv+Gemm MACs", (double)s.contraction, 4.089e9, 0.005);
    check_within("resnet50 all-op MACs", (double)s.total, 4.089e9, 0.03);
    check_model_totals(m, &s);
    ox_model_free(m);
}

static void test_mobilenet_v2(void **state)
{
    (void)state;
    ox_model *m = load_inferred("models/mobilenet_v2_op13/model.onnx", "1x3x224x224");
    if (!m)
        skip();
    op_sums s = sum_model(m);
    assert_int_equal(s.unknown, 0);
    check_within("mobilenet_v2 Conv+Gemm MACs", (double)s.contraction, 0.3008e9, 0.005);
    check_within("mobilenet_v2 all-op MACs", (double)s.total, 0.3008e9, 0.03);
    check_model_totals(m, &s);
    /* torchvision MobileNetV2 has 3,504,872 parameters, 34,112 of them
     * BatchNorm weights and biases over 17,056 channels. Folding BN into
     * the convolutions replaces those two per channel by one conv bias,
     * and the export adds 35 Clips x 2 float scalar Constants (0 and 6),
     * which deduplicate to two values. */
    ox_model_cost mc;
    assert_int_equal(ox_model_cost_compute(m, &mc, NULL), OX_OK);
    assert_int_equal(mc.params, 3504872 - 17056 + 70);
    assert_int_equal(mc.params_dedup, mc.params - 68);
    ox_model_free(m);
}

/* Per transformer layer (sequence S, hidden H, FFN F):
 *   Q, K, V and output projections 4*S*H*H, attention scores and context
 *   2*S*S*H (summed over heads), FFN 2*S*H*F;
 * plus the model's head. */
static int64_t layer_macs(int64_t s, int64_t h, int64_t f)
{
    return 4 * s * h * h + 2 * s * s * h + 2 * s * h * f;
}

static void check_transformer(const char *rel, const char *shape, const char *what,
                              int64_t expect)
{
    ox_model *m = load_inferred(rel, shape);
    if (!m)
        skip();
    op_sums s = sum_model(m);
    assert_int_equal(s.unknown, 0);
    check_within(what, (double)s.contraction, (double)expect, 1e-9);
    /* The rest (softmax, GELU, LayerNorm, residual adds) is a minority. */
    assert_true(s.total > s.contraction);
    assert_true(s.total < 2 * s.contraction);
    check_model_totals(m, &s);
    ox_model_free(m);
}

static void test_bert(void **state)
{
    (void)state;
    /* 2 layers, S=128, H=128, F=512, and the pooler's H*H on one token. */
    check_transformer("models/bert_l2_h128_nofold_op13/model.onnx", "1x128", "bert MatMul MACs",
                      2 * layer_macs(128, 128, 512) + 128 * 128);
}

static void test_gpt2(void **state)
{
    (void)state;
    /* 2 blocks, S=64, H=128, F=4H, and the tied LM head S*H*V (V=1000). */
    check_transformer("models/gpt2_like_l2_h128_nofold_op13/model.onnx", "1x64",
                      "gpt2 MatMul/Gemm MACs",
                      2 * layer_macs(64, 128, 512) + 64LL * 128 * 1000);
}

static void test_encoder(void **state)
{
    (void)state;
    /* 4 layers, S=128, H=256, F=1024; no head. */
    check_transformer("models/torch_transformer_encoder_l4_h256_op17/model.onnx", "1x128",
                      "encoder MatMul MACs", 4 * layer_macs(128, 256, 1024));
}

/* Without overrides the batch dim stays symbolic: totals are unknown, and
 * the contraction MACs are not guessed. */
static void test_symbolic_unknown(void **state)
{
    (void)state;
    ox_model *m = load_inferred("models/bert_l2_h128_nofold_op13/model.onnx", NULL);
    if (!m)
        skip();
    ox_model_cost mc;
    assert_int_equal(ox_model_cost_compute(m, &mc, NULL), OX_OK);
    assert_false(mc.known);
    assert_false(mc.peak_known);
    assert_true(mc.n_unknown > 0);
    assert_int_equal(mc.n_no_rule, 0);
    /* Parameters do not depend on the input shape. */
    ox_model *fixed = load_inferred("models/bert_l2_h128_nofold_op13/model.onnx", "1x128");
    ox_model_cost fc;
    assert_int_equal(ox_model_cost_compute(fixed, &fc, NULL), OX_OK);
    assert_true(fc.known);
    assert_true(mc.params > 0);
    assert_int_equal(mc.params, fc.params);
    assert_int_equal(mc.params_dedup, fc.params_dedup);
    ox_model_free(fixed);
    for (int i = 0; i < m->graph->n_nodes; i++) {
        const ox_node *n = m->graph->nodes[i];
        ox_cost c;
        ox_node_cost(n, &c);
        if (ox_node_is(n, "MatMul") && ox_value_is_weight(n->inputs[1]) == false)
            assert_false(c.known); /* attention products depend on batch */
    }
    ox_model_free(m);
}

/* Every model of onnx-backend/{node,simple,pytorch-*}: cost and plan never
 * crash, the plan verifies, and a value read inside a subgraph stays alive
 * until the step of the node that owns the subgraph. */
static int owner_step(const ox_graph *g, const ox_node *n)
{
    while (n && n->graph != g)
        n = n->graph ? n->graph->owner : NULL;
    return n ? n->index : -1;
}

static void check_backend_dir(const char *dir, int *n_models, int *n_outer)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[4096 + 512];
        snprintf(path, sizeof path, "%s/%.256s/model.onnx", dir, e->d_name);
        ox_model *m = NULL;
        ox_error err = {0};
        if (ox_load(path, NULL, &m, &err) != OX_OK)
            continue;
        ox_infer_model(m, NULL, &err);
        ox_model_cost mc;
        assert_int_equal(ox_model_cost_compute(m, &mc, &err), OX_OK);
        ox_profile *p = NULL;
        assert_int_equal(ox_profile_build(m, &p, &err), OX_OK);
        ox_profile_free(p);
        ox_memplan *plan = NULL;
        assert_int_equal(ox_memplan_build(m->graph, NULL, &plan, &err), OX_OK);
        if (!ox_memplan_verify(plan, &err))
            fail_msg("%s: %s", path, err.msg);
        const ox_graph *g = m->graph;
        for (int i = 0; i < plan->n_slots; i++) {
            const ox_memplan_slot *s = &plan->slots[i];
            for (int u = 0; u < s->value->n_uses; u++) {
                const ox_node *un = s->value->uses[u].node;
                if (!un || (un->graph == g && s->value->uses[u].input >= 0))
                    continue;
                int t = owner_step(g, un);
                assert_true(t >= 0);
                assert_true(s->last >= t);
                (*n_outer)++;
            }
        }
        ox_memplan_free(plan);
        ox_model_free(m);
        (*n_models)++;
    }
    closedir(d);
}

static void test_backend_models(void **state)
{
    (void)state;
    const char *d = shared_dir();
    if (!d) {
        printf("skip: ONNXSCOPE_SHARED is not set\n");
        skip();
    }
    static const char *const sub[] = {"node", "simple", "pytorch-converted",
                                      "pytorch-operator"};
    int n_models = 0, n_outer = 0;
    for (size_t i = 0; i < sizeof sub / sizeof sub[0]; i++) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/onnx-backend/%s", d, sub[i]);
        check_backend_dir(dir, &n_models, &n_outer);
    }
    printf("backend models costed and planned: %d (outer-scope reads checked: %d)\n",
           n_models, n_outer);
    if (n_models == 0)
        skip();
    assert_true(n_outer > 0); /* test_if, test_loop11 ... read outer values */
}

/* ---- timing (bench/cost_bench.sh) -------------------------------------------
 * Inference plus cost (model totals with the memory plan, and the profile
 * rows) on each shared model: best of `reps` runs, load time excluded. */

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int run_bench(int reps, const char *extra)
{
    static const struct {
        const char *rel, *shape;
    } list[] = {
        {"models/bert_l2_h128_nofold_op13/model.onnx", "1x128"},
        {"models/gpt2_like_l2_h128_nofold_op13/model.onnx", "1x64"},
        {"models/torch_transformer_encoder_l4_h256_op17/model.onnx", "1x128"},
        {"models/mobilenet_v2_op13/model.onnx", "1x3x224x224"},
        {"onnx-backend/light/light_resnet50.onnx", "1x3x224x224"},
        {"onnx-backend/light/light_densenet121.onnx", "1x3x224x224"},
    };
    const char *d = shared_dir();
    if (!d) {
        printf("skip: ONNXSCOPE_SHARED is not set\n");
        return 0;
    }
    printf("%-58s %6s %10s %10s %12s\n", "model", "nodes", "infer ms", "cost ms",
           "us per node");
    size_t n_list = sizeof list / sizeof list[0];
    for (size_t k = 0; k < n_list + (extra != NULL); k++) {
        char path[4096];
        if (k == n_list) /* an extra model (bench/cost_bench.sh), batch 1, sequence 128 */
            snprintf(path, sizeof path, "%s", extra);
        else
            snprintf(path, sizeof path, "%s/%s", d, list[k].rel);
        const char *rel = k == n_list ? extra : list[k].rel;
        const char *shape = k == n_list ? "1x128" : list[k].shape;
        ox_model *base = NULL;
        ox_error err = {0};
        if (ox_load(path, NULL, &base, &err) != OX_OK) {
            printf("%-58s load failed: %s\n", rel, err.msg);
            continue;
        }
        double best_inf = 1e9, best_cost = 1e9;
        for (int r = 0; r < reps; r++) {
            ox_model *m = ox_model_clone(base);
            if (!m)
                return 1;
            ox_infer_opts o = {0};
            for (int i = 0; i < m->graph->n_inputs; i++) {
                if (m->graph->inputs[i]->init)
                    continue;
                char arg[512];
                snprintf(arg, sizeof arg, "%s=%s", m->graph->inputs[i]->name,
                         shape);
                ox_infer_opts_add_shape(&o, arg, &err);
            }
            double t0 = now_ms();
            ox_infer_model(m, &o, &err);
            double t1 = now_ms();
            ox_model_cost mc;
            ox_profile *p = NULL;
            ox_model_cost_compute(m, &mc, &err);
            ox_profile_build(m, &p, &err);
            double t2 = now_ms();
            ox_profile_free(p);
            ox_infer_opts_free(&o);
            ox_model_free(m);
            if (t1 - t0 < best_inf)
                best_inf = t1 - t0;
            if (t2 - t1 < best_cost)
                best_cost = t2 - t1;
        }
        int nn = base->graph->n_nodes;
        printf("%-58s %6d %10.2f %10.2f %12.2f\n", rel, nn, best_inf, best_cost,
               nn ? 1e3 * (best_inf + best_cost) / nn : 0.0);
        ox_model_free(base);
    }
    return 0;
}

int main(int argc, char **argv)
{
    const struct CMUnitTest unit[] = {
        cmocka_unit_test(test_conv),
        cmocka_unit_test(test_depthwise_and_transpose),
        cmocka_unit_test(test_matmul_gemm),
        cmocka_unit_test(test_elementwise),
        cmocka_unit_test(test_unknown),
        cmocka_unit_test(test_params_dedup),
        cmocka_unit_test(test_weight_through_identity),
        cmocka_unit_test(test_more_ops),
        cmocka_unit_test(test_rules_of_every_op),
        cmocka_unit_test(test_bad_nodes),
        cmocka_unit_test(test_plan_chain),
        cmocka_unit_test(test_plan_outputs_and_skips),
        cmocka_unit_test(test_plan_large),
        cmocka_unit_test(test_plan_born),
        cmocka_unit_test(test_profile),
        cmocka_unit_test(test_control_flow),
        cmocka_unit_test(test_fmt_cost),
    };
    const struct CMUnitTest models[] = {
        cmocka_unit_test(test_resnet50),
        cmocka_unit_test(test_mobilenet_v2),
        cmocka_unit_test(test_bert),
        cmocka_unit_test(test_gpt2),
        cmocka_unit_test(test_encoder),
        cmocka_unit_test(test_symbolic_unknown),
        cmocka_unit_test(test_backend_models),
    };
    if (argc > 1 && !strcmp(argv[1], "bench"))
        return run_bench(argc > 2 ? atoi(argv[2]) : 5, argc > 3 ? argv[3] : NULL);
    if (argc > 1 && !strcmp(argv[1], "models"))
        return cmocka_run_group_tests_name("cost_models", models, NULL, NULL);
    return cmocka_run_group_tests_name("cost_unit", unit, NULL, NULL);
}
