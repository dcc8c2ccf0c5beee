/* Unit tests of the matrix-product folds (src/passes/fuse_gemm.c) and of
 * fuse_reshape_shape (src/passes/fuse_reshape.c): fires, must-not-fire,
 * idempotence and numeric equivalence through the executor. */
#include "fuse_harness.h"

static const int64_t A2[2] = {3, 5}, W2[2] = {5, 4};

static void test_matmul_add(void **state)
{
    (void)state;
    static const int64_t cs[4][2] = {{4}, {1, 4}, {3, 1}, {3, 4}};
    static const int cr[4] = {1, 2, 2, 2};
    for (int s = 0; s < 4; s++) {
        ox_model *m = fh_model(13);
        fh_input(m, "a", 2, A2);
        fh_init(m, "w", 2, W2, NULL, -1, 1);
        fh_init(m, "c", cr[s], cs[s], NULL, -1, 1);
        fh_node(m, "MatMul", "mm", "a", "w", NULL);
        if (s & 1)
            fh_node(m, "Add", "y", "c", "mm", NULL);
        else
            fh_node(m, "Add", "y", "mm", "c", NULL);
        fh_output(m, "y");
        int rw;
        ox_model *o = fh_opt(m, "fuse_matmul_add", OX_TARGET_ONNX, &rw);
        assert_int_equal(rw, 1);
        assert_int_equal(fh_count(o, "Gemm"), 1);
        assert_int_equal(o->graph->n_nodes, 1);
        ox_model_free(o);
        ox_model_free(m);
    }
    /* Must not: a 3-D input, a bias that grows the result, a MatMul
     * result read twice. */
    for (int v = 0; v < 3; v++) {
        ox_model *m = fh_model(13);
        int64_t a3[3] = {2, 3, 5}, c3[3] = {2, 3, 4};
        if (v == 0)
            fh_input(m, "a", 3, a3);
        else
            fh_input(m, "a", 2, A2);
        fh_init(m, "w", 2, W2, NULL, -1, 1);
        if (v == 1)
            fh_init(m, "c", 3, c3, NULL, -1, 1);
        else
            fh_init(m, "c", 1, &W2[1], NULL, -1, 1);
        fh_node(m, "MatMul", "mm", "a", "w", NULL);
        fh_node(m, "Add", "y", "mm", "c", NULL);
        fh_output(m, "y");
        if (v == 2)
            fh_output(m, "mm");
        fh_nofire(m, "fuse_matmul_add", OX_TARGET_ONNX);
        ox_model_free(m);
    }
}

static ox_node *bn(ox_model *m, const char *out, const char *in, int64_t C)
{
    fh_init(m, "bs", 1, &C, NULL, 0.5, 2);
    fh_init(m, "bb", 1, &C, NULL, -1, 1);
    fh_init(m, "bm", 1, &C, NULL, -0.5, 0.5);
    fh_init(m, "bv", 1, &C, NULL, 0.2, 3);
    return fh_node(m, "BatchNormalization", out, in, "bs", "bb", "bm", "bv", NULL);
}

static void test_matmul_bn(void **state)
{
    (void)state;
    for (int v = 0; v < 2; v++) {
        ox_model *m = fh_model(13);
        fh_input(m, "a", 2, A2);
        if (v == 0) {
            fh_init(m, "w", 2, W2, NULL, -1, 1);
            fh_node(m, "MatMul", "mm", "a", "w", NULL);
        } else {
            /* Gemm with transB and a row bias. */
            int64_t wt[2] = {4, 5}, c = 4;
            fh_init(m, "w", 2, wt, NULL, -1, 1);
            fh_init(m, "c", 1, &c, NULL, -1, 1);
            ox_node *g = fh_node(m, "Gemm", "mm", "a", "w", "c", NULL);
            ox_node_set_attr_i(g, "transB", 1);
            ox_node_set_attr_f(g, "beta", 0.5f);
        }
        bn(m, "y", "mm", 4);
        fh_output(m, "y");
        int rw;
        ox_model *o = fh_opt(m, "fuse_matmul_bn", OX_TARGET_ONNX, &rw);
        assert_int_equal(rw, 1);
        assert_int_equal(fh_count(o, "BatchNormalization"), 0);
        assert_int_equal(fh_count(o, "Gemm"), 1);
        ox_model_free(o);
        ox_model_free(m);
    }
    /* Weights that are not constant. */
    ox_model *m = fh_model(13);
    fh_input(m, "a", 2, A2);
    fh_input(m, "w", 2, W2);
    fh_node(m, "MatMul", "mm", "a", "w", NULL);
    bn(m, "y", "mm", 4);
    fh_output(m, "y");
    fh_nofire(m, "fuse_matmul_bn", OX_TARGET_ONNX);
    ox_model_free(m);
}

static void test_bn_matmul(void **state)
{
    (void)state;
    for (int v = 0; v < 4; v++) {
        /* v: MatMul, Gemm(transB, alpha, beta, C), and must-not: Gemm
         * transA, BN result read twice. */
        ox_model *m = fh_model(13);
        fh_input(m, "x", 2, A2);
        bn(m, "a", "x", 5);
        if (v == 0) {
            fh_init(m, "w", 2, W2, NULL, -1, 1);
            fh_node(m, "MatMul", "y", "a", "w", NULL);
        } else {
            int64_t wt[2] = {4, 5}, c = 4, w3[2] = {3, 4};
            fh_init(m, "w", 2, v == 2 ? w3 : wt, NULL, -1, 1);
            fh_init(m, "c", 1, &c, NULL, -1, 1);
            ox_node *g = fh_node(m, "Gemm", "y", "a", "w", "c", NULL);
            if (v == 2) {
                /* transA: the BN's channels become rows of the result. */
                ox_node_set_attr_i(g, "transA", 1);
            } else {
                ox_node_set_attr_i(g, "transB", 1);
                ox_node_set_attr_f(g, "alpha", 0.5f);
                ox_node_set_attr_f(g, "beta", 2.0f);
            }
        }
        fh_output(m, "y");
        if (v == 3)
            fh_output(m, "a");
        if (v >= 2) {
            fh_nofire(m, "fuse_bn_matmul", OX_TARGET_ONNX);
            ox_model_free(m);
            continue;
        }
        int rw;
        ox_model *o = fh_opt(m, "fuse_bn_matmul", OX_TARGET_ONNX, &rw);
        assert_int_equal(rw, 1);
        assert_int_equal(fh_count(o, "BatchNormalization"), 0);
        assert_int_equal(fh_count(o, "Gemm"), 1);
        ox_model_free(o);
        ox_model_free(m);
    }
}

static void test_transpose_gemm(void **state)
{
    (void)state;
    for (int v = 0; v < 3; v++) {
        ox_model *m = fh_model(13);
        int64_t at[2] = {5, 3}, wt[2] = {4, 5};
        if (v == 0) {
            /* Gemm(Transpose(a), w, c): transA. */
            fh_input(m, "x", 2, at);
            fh_node(m, "Transpose", "a", "x", NULL);
            fh_init(m, "w", 2, W2, NULL, -1, 1);
            fh_init(m, "c", 1, &W2[1], NULL, -1, 1);
            fh_node(m, "Gemm", "y", "a", "w", "c", NULL);
        } else {
            /* MatMul(a, Transpose(x)) -> Gemm transB (x a graph input or
             * a weight). */
            fh_input(m, "a", 2, A2);
            if (v == 1)
                fh_input(m, "x", 2, wt);
            else
                fh_init(m, "x", 2, wt, NULL, -1, 1);
            int64_t perm[2] = {1, 0};
            ox_node_set_attr_ints(fh_node(m, "Transpose", "w", "x", NULL), "perm", 2, perm);
            fh_node(m, "MatMul", "y", "a", "w", NULL);
        }
        fh_output(m, "y");
        int rw;
        ox_model *o = fh_opt(m, "fuse_transpose_gemm", OX_TARGET_ONNX, &rw);
        assert_int_equal(rw, 1);
        assert_int_equal(fh_count(o, "Transpose"), 0);
        assert_int_equal(fh_count(o, "Gemm"), 1);
        assert_int_equal(ox_node_attr_i(o->graph->nodes[0], v ? "transB" : "transA", 0), 1);
        ox_model_free(o);
        ox_model_free(m);
    }
    /* A batch transpose has no standard form; opset 10 Gemm needs C. */
    for (int v = 0; v < 2; v++) {
        ox_model *m = fh_model(v ? 10 : 13);
        int64_t a3[3] = {2, 3, 5}, x3[3] = {2, 4, 5}, perm[3] = {0, 2, 1}, wt[2] = {4, 5};
        if (v == 0) {
            fh_input(m, "a", 3, a3);
            fh_input(m, "x", 3, x3);
            ox_node_set_attr_ints(fh_node(m, "Transpose", "w", "x", NULL), "perm", 3, perm);
        } else {
            fh_input(m, "a", 2, A2);
            fh_input(m, "x", 2, wt);
            fh_node(m, "Transpose", "w", "x", NULL);
        }
        fh_node(m, "MatMul", "y", "a", "w", NULL);
        fh_output(m, "y");
        fh_nofire(m, "fuse_transpose_gemm", OX_TARGET_ONNX);
        ox_model_free(m);
    }
}

static void test_transpose_matmul_ort(void **state)
{
    (void)state;
    int64_t a3[3] = {2, 3, 5}, x3[3] = {2, 4, 5}, perm[3] = {0, 2, 1};
    ox_model *m = fh_model(13);
    fh_input(m, "a", 3, a3);
    fh_input(m, "x", 3, x3);
    ox_node_set_attr_ints(fh_node(m, "Transpose", "w", "x", NULL), "perm", 3, perm);
    fh_node(m, "MatMul", "y", "a", "w", NULL);
    fh_output(m, "y");
    int rw;
    ox_model *o = fh_opt(m, "fuse_transpose_matmul", OX_TARGET_ORT, &rw);
    assert_int_equal(rw, 1);
    assert_int_equal(fh_count(o, "FusedMatMul"), 1);
    assert_int_equal(fh_count(o, "Transpose"), 0);
    assert_int_equal(ox_model_opset(o, "com.microsoft"), 1);
    ox_model_free(o);
    /* Off under --target onnx, even at level all. */
    ox_pass_manager *pm = ox_pm_new(OX_LEVEL_ALL, OX_TARGET_ONNX);
    for (int i = 0; i < ox_pm_count(pm); i++)
        if (ox_pm_pass(pm, i)->target == OX_TARGET_ORT)
            assert_false(ox_pm_enabled(pm, i));
    ox_error err = {0};
    assert_int_equal(ox_pm_only(pm, "fuse_transpose_matmul", &err), OX_EINVAL);
    assert_non_null(strstr(err.msg, "--target ort"));
    ox_pm_free(pm);
    ox_model_free(m);
    /* Not a perm that moves the batch axis. */
    m = fh_model(13);
    int64_t x3b[3] = {5, 2, 4}, pb[3] = {1, 2, 0};
    fh_input(m, "a", 3, a3);
    fh_input(m, "x", 3, x3b);
    ox_node_set_attr_ints(fh_node(m, "Transpose", "w", "x", NULL), "perm", 3, pb);
    fh_node(m, "MatMul", "y", "a", "w", NULL);
    fh_output(m, "y");
    fh_nofire(m, "fuse_transpose_matmul", OX_TARGET_ORT);
    ox_model_free(m);
}

static void test_matmul_scale(void **state)
{
    (void)state;
    for (int v = 0; v < 6; v++) {
        ox_model *m = fh_model(13);
        fh_input(m, "a", 2, A2);
        fh_init(m, "w", 2, W2, NULL, -1, 1);
        switch (v) {
        case 4: /* a per-column vector after a MatMul */
        case 5: {
            int64_t kd[2] = {1, 4};
            fh_init(m, "k", v == 4 ? 1 : 2, v == 4 ? &W2[1] : kd, NULL, 0.5, 2);
            fh_node(m, "MatMul", "mm", "a", "w", NULL);
            fh_node(m, v == 4 ? "Mul" : "Div", "y", v == 4 ? "k" : "mm", v == 4 ? "mm" : "k",
                    NULL);
            break;
        }
        case 0: /* MatMul -> Div by an initializer */
            fh_scalar(m, "k", 4);
            fh_node(m, "MatMul", "mm", "a", "w", NULL);
            fh_node(m, "Div", "y", "mm", "k", NULL);
            break;
        case 1: /* Mul by a Constant node -> MatMul */
            fh_const_node(m, "k", 0.5f);
            fh_node(m, "Mul", "s", "k", "a", NULL);
            fh_node(m, "MatMul", "y", "s", "w", NULL);
            break;
        case 2: /* Gemm with C -> Mul: alpha and beta */
            fh_scalar(m, "k", 3);
            fh_init(m, "c", 1, &W2[1], NULL, -1, 1);
            fh_node(m, "Gemm", "g", "a", "w", "c", NULL);
            fh_node(m, "Mul", "y", "g", "k", NULL);
            break;
        case 3: /* Div -> Gemm: alpha */
            fh_scalar(m, "k", 8);
            fh_node(m, "Div", "s", "a", "k", NULL);
            fh_node(m, "Gemm", "y", "s", "w", NULL);
            break;
        }
        fh_output(m, "y");
        int rw;
        ox_model *o = fh_opt(m, "fuse_matmul_scale", OX_TARGET_ONNX, &rw);
        assert_int_equal(rw, 1);
        assert_int_equal(fh_count(o, "Mul") + fh_count(o, "Div"), 0);
        ox_model_free(o);
        ox_model_free(m);
    }
    /* Must not: a vector along the rows, no constant operand, k / x. */
    for (int v = 0; v < 3; v++) {
        ox_model *m = fh_model(13);
        fh_input(m, "a", 2, A2);
        if (v == 1)
            fh_input(m, "w", 2, W2);
        else
            fh_init(m, "w", 2, W2, NULL, -1, 1);
        fh_node(m, "MatMul", "mm", "a", "w", NULL);
        int64_t rows[2] = {3, 1};
        if (v == 0)
            fh_init(m, "k", 2, rows, NULL, 1, 2);
        else
            fh_scalar(m, "k", 2);
        if (v == 2)
            fh_node(m, "Div", "y", "k", "mm", NULL);
        else
            fh_node(m, "Mul", "y", "mm", "k", NULL);
        fh_output(m, "y");
        fh_nofire(m, "fuse_matmul_scale", OX_TARGET_ONNX);
        ox_model_free(m);
    }
    /* Must not: the last * 0.5 of an unfused GELU (x * (1 + Erf(x / c)))
     * * 0.5 -> MatMul, which ONNX Runtime fuses only while it is there;
     * the same scale after a plain product does fold. */
    for (int gelu = 0; gelu < 2; gelu++) {
        ox_model *m = fh_model(13);
        fh_input(m, "a", 2, A2);
        static const int64_t W5[2] = {5, 4};
        fh_init(m, "w", 2, W5, NULL, -1, 1);
        fh_scalar(m, "r2", 1.4142135f);
        fh_scalar(m, "one", 1);
        fh_scalar(m, "half", 0.5f);
        fh_node(m, "Div", "d", "a", "r2", NULL);
        fh_node(m, gelu ? "Erf" : "Neg", "e", "d", NULL);
        fh_node(m, "Add", "e1", "e", "one", NULL);
        fh_node(m, "Mul", "xe", "a", "e1", NULL);
        fh_node(m, "Mul", "h", "xe", "half", NULL);
        fh_node(m, "MatMul", "y", "h", "w", NULL);
        fh_output(m, "y");
        if (gelu) {
            fh_nofire(m, "fuse_matmul_scale", OX_TARGET_ONNX);
        } else {
            int rw;
            ox_model *o = fh_opt(m, "fuse_matmul_scale", OX_TARGET_ONNX, &rw);
            assert_int_equal(rw, 1);
            ox_model_free(o);
        }
        ox_model_free(m);
    }
}

/* Reshape(x, Concat(Unsqueeze(Gather(Shape(x), i)), [-1])). */
static ox_model *reshape_model(int64_t gather_index, bool two)
{
    ox_model *m = fh_model(13);
    int64_t xd[3] = {2, 3, 4}, zero = 0, neg = -1;
    fh_input(m, "x", 3, xd);
    fh_node(m, "Shape", "s", "x", NULL);
    ox_tensor *t = ox_tensor_new(OX_DT_INT64, 0, NULL);
    ox_tensor_set_i64(t, 0, gather_index);
    ox_graph_set_initializer(m->graph, ox_graph_value(m->graph, "i"), t);
    fh_node(m, "Gather", "g", "s", "i", NULL);
    fh_ints(m, "ax", 1, &zero);
    fh_node(m, "Unsqueeze", "u", "g", "ax", NULL);
    int64_t rest[2] = {3, -1};
    if (two)
        fh_ints(m, "rest", 2, rest);
    else
        fh_ints(m, "rest", 1, &neg);
    ox_node_set_attr_i(fh_node(m, "Concat", "shape", "u", "rest", NULL), "axis", 0);
    fh_node(m, "Reshape", "y", "x", "shape", NULL);
    fh_output(m, "y");
    return m;
}

static void test_reshape_shape(void **state)
{
    (void)state;
    for (int two = 0; two < 2; two++) {
        ox_model *m = reshape_model(0, two);
        int rw;
        ox_model *o = fh_opt(m, "fuse_reshape_shape,dce", OX_TARGET_ONNX, &rw);
        assert_true(rw >= 1);
        assert_int_equal(o->graph->n_nodes, 1);
        assert_int_equal(o->graph->nodes[0]->inputs[1]->init->numel, two ? 3 : 2);
        ox_model_free(o);
        ox_model_free(m);
    }
    ox_model *m;
    /* Dim 1 of x placed at position 0 is not a copy. */
    m = reshape_model(1, false);
    fh_nofire(m, "fuse_reshape_shape", OX_TARGET_ONNX);
    ox_model_free(m);
}

/* x [B, S, 4] -> Transpose([1,0,2]) -> Reshape([-1, 4]) -> Gemm(W, C) ->
 * Reshape([S, B, 5]) -> Transpose([1,0,2]) -> y [B, S, 5]: PyTorch's
 * sequence-first output projection. bias: 0 none, 1 [5], 2 [1, 5], 3 a
 * scalar. dyn: batch and sequence symbolic, the second shape read from
 * Shape at run time. swap: the second Reshape restores [B, S] (not the
 * token order it flattened): must not fire. */
static ox_model *token_model(bool tb, int bias, bool dyn, bool swap, float alpha)
{
    ox_model *m = fh_model(13);
    static const int64_t X[3] = {2, 3, 4}, WN[2] = {5, 4}, WT[2] = {4, 5}, B1[1] = {5},
                         B2[2] = {1, 5}, P102[3] = {1, 0, 2};
    ox_value *x = fh_input(m, "x", 3, X);
    if (dyn) {
        x->type->dims[0].value = -1;
        x->type->dims[0].param = ox_strdup("batch");
        x->type->dims[1].value = -1;
        x->type->dims[1].param = ox_strdup("seq");
    }
    ox_node_set_attr_ints(fh_node(m, "Transpose", "xt", "x", NULL), "perm", 3, P102);
    static const int64_t flat[2] = {-1, 4}, back[3] = {3, 2, 5}, bad[3] = {2, 3, 5};
    fh_ints(m, "flat", 2, flat);
    fh_node(m, "Reshape", "r1", "xt", "flat", NULL);
    fh_init(m, "W", 2, tb ? WN : WT, NULL, -1, 1);
    if (bias == 1)
        fh_init(m, "C", 1, B1, NULL, -1, 1);
    else if (bias == 2)
        fh_init(m, "C", 2, B2, NULL, -1, 1);
    else if (bias == 3)
        fh_scalar(m, "C", 0.25f);
    ox_node *gm = fh_node(m, "Gemm", "g", "r1", "W", bias ? "C" : NULL, NULL);
    ox_node_set_attr_i(gm, "transB", tb);
    if (alpha != 1.0f)
        ox_node_set_attr_f(gm, "alpha", alpha);
    if (dyn) {
        static const int64_t i0[1] = {0}, i1[1] = {1}, n5[1] = {5};
        fh_ints(m, "i0", 1, i0);
        fh_ints(m, "i1", 1, i1);
        fh_ints(m, "n5", 1, n5);
        fh_node(m, "Shape", "shp", "xt", NULL);
        fh_node(m, "Gather", "s0", "shp", swap ? "i1" : "i0", NULL);
        fh_node(m, "Gather", "s1", "shp", swap ? "i0" : "i1", NULL);
        ox_node_set_attr_i(fh_node(m, "Concat", "back", "s0", "s1", "n5", NULL), "axis", 0);
    } else {
        fh_ints(m, "back", 3, swap ? bad : back);
    }
    fh_node(m, "Reshape", "r2", "g", "back", NULL);
    ox_node_set_attr_ints(fh_node(m, "Transpose", "y", "r2", NULL), "perm", 3, P102);
    fh_output(m, "y");
    return m;
}

static void test_token_transpose_gemm(void **state)
{
    (void)state;
    for (int v = 0; v < 16; v++) {
        bool tb = v & 1, dyn = v & 8;
        int bias = (v >> 1) & 3;
        ox_model *m = token_model(tb, bias, dyn, false, 1.0f);
        int rw;
        /* dyn: the Shape chain (and the first Transpose it reads) is left
         * unread; dce takes it. */
        ox_model *o = fh_opt(m, dyn ? "fuse_token_transpose_gemm,dce" : "fuse_token_transpose_gemm",
                             OX_TARGET_ONNX, &rw);
        assert_int_equal(rw, dyn ? 1 + 5 : 1);
        assert_int_equal(fh_count(o, "Transpose"), 0);
        assert_int_equal(fh_count(o, "Shape"), 0);
        assert_int_equal(fh_count(o, "Gemm"), 0);
        assert_int_equal(fh_count(o, "MatMul"), 1);
        assert_int_equal(fh_count(o, "Add"), bias ? 1 : 0);
        assert_int_equal(fh_count(o, "Reshape"), 0);
        ox_model_free(o);
        ox_model_free(m);
    }
    /* Must not: the rows come back in another order than they went; alpha
     * not 1; an intermediate read elsewhere. */
    ox_model *m = token_model(true, 1, false, true, 1.0f);
    fh_nofire(m, "fuse_token_transpose_gemm", OX_TARGET_ONNX);
    ox_model_free(m);
    m = token_model(true, 1, true, true, 1.0f);
    fh_nofire(m, "fuse_token_transpose_gemm", OX_TARGET_ONNX);
    ox_model_free(m);
    m = token_model(true, 1, false, false, 0.5f);
    fh_nofire(m, "fuse_token_transpose_gemm", OX_TARGET_ONNX);
    ox_model_free(m);
    m = token_model(false, 0, false, false, 1.0f);
    fh_output(m, "g");
    fh_nofire(m, "fuse_token_transpose_gemm", OX_TARGET_ONNX);
    ox_model_free(m);
}

static void test_all_fired(void **state)
{
    (void)state;
    fh_all_fired("fuse_matmul_add,fuse_matmul_bn,fuse_bn_matmul,fuse_transpose_gemm,fuse_matmul_scale,"
                 "fuse_transpose_matmul,fuse_reshape_shape,fuse_token_transpose_gemm");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matmul_add),
        cmocka_unit_test(test_matmul_bn),
        cmocka_unit_test(test_bn_matmul),
        cmocka_unit_test(test_transpose_gemm),
        cmocka_unit_test(test_transpose_matmul_ort),
        cmocka_unit_test(test_matmul_scale),
        cmocka_unit_test(test_reshape_shape),
        cmocka_unit_test(test_token_transpose_gemm),
        cmocka_unit_test(test_all_fired),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
