/* Unit tests of the neural-network kernels (src/exec/k_nn) called through a
 * hand-built ox_kernel_ctx. Expected values are the worked examples of the
 * ONNX operator specification, hand-derived values, or naive reference
 * loops written here straight from the operator definitions. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "onnxscope/exec.h"
#include "onnxscope/threadpool.h"

ox_status ox_nn_k_matmul(ox_kernel_ctx *c);
ox_status ox_nn_k_gemm(ox_kernel_ctx *c);
ox_status ox_nn_k_conv(ox_kernel_ctx *c);
ox_status ox_nn_k_conv_transpose(ox_kernel_ctx *c);
ox_status ox_nn_k_max_pool(ox_kernel_ctx *c);
ox_status ox_nn_k_average_pool(ox_kernel_ctx *c);
ox_status ox_nn_k_batch_norm(ox_kernel_ctx *c);
ox_status ox_nn_k_max_roi_pool(ox_kernel_ctx *c);
ox_status ox_nn_k_layer_norm(ox_kernel_ctx *c);
ox_status ox_nn_k_quantize_linear(ox_kernel_ctx *c);
ox_status ox_nn_k_dequantize_linear(ox_kernel_ctx *c);
ox_status ox_nn_k_dynamic_quantize_linear(ox_kernel_ctx *c);
ox_status ox_nn_k_einsum(ox_kernel_ctx *c);
ox_status ox_nn_k_rnn(ox_kernel_ctx *c);
ox_status ox_nn_k_attention(ox_kernel_ctx *c);
ox_status ox_nn_k_fused_conv(ox_kernel_ctx *c);
ox_status ox_nn_k_fused_matmul(ox_kernel_ctx *c);
ox_status ox_nn_k_fused_gemm(ox_kernel_ctx *c);
ox_status ox_nn_k_gemm_fast_gelu(ox_kernel_ctx *c);
ox_status ox_nn_k_skip_layer_norm(ox_kernel_ctx *c);
ox_status ox_nn_k_bias_gelu(ox_kernel_ctx *c);
ox_status ox_nn_k_fast_gelu(ox_kernel_ctx *c);
ox_status ox_nn_k_quick_gelu(ox_kernel_ctx *c);
ox_status ox_nn_k_ms_multihead_attention(ox_kernel_ctx *c);
ox_status ox_nn_k_ms_attention(ox_kernel_ctx *c);
ox_status ox_nn_k_group_norm(ox_kernel_ctx *c);
void ox_nn_sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                 const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                 float *C, int64_t ldc);

#define MAXA 8

typedef struct kcase {
    ox_node node;
    ox_attr attrs[MAXA];
    ox_value vals[8];
    ox_value *outs[8];
    ox_rval *in[8];
    ox_rval *out[8];
    ox_kernel_ctx ctx;
    ox_error err;
} kcase;

static void kc_init(kcase *k, const char *op, int64_t opset, int n_out)
{
    memset(k, 0, sizeof *k);
    k->node.op_type = (char *)op;
    k->node.domain = (char *)"";
    k->node.attrs = k->attrs;
    k->node.n_outputs = n_out;
    k->node.outputs = k->outs;
    for (int i = 0; i < n_out; i++) k->outs[i] = &k->vals[i];
    k->ctx.node = &k->node;
    k->ctx.opset = opset;
    k->ctx.in = k->in;
    k->ctx.out = k->out;
    k->ctx.err = &k->err;
    k->ctx.n_out = n_out;
}

static void kc_free(kcase *k)
{
    for (int i = 0; i < 8; i++) {
        ox_rval_free(k->in[i]);
        ox_rval_free(k->out[i]);
    }
}

static ox_attr *kc_attr(kcase *k, const char *name, ox_attr_type t)
{
    assert_true(k->node.n_attrs < MAXA);
    ox_attr *a = &k->attrs[k->node.n_attrs++];
    a->name = (char *)name;
    a->type = t;
    return a;
}

static void attr_i(kcase *k, const char *name, int64_t v) { kc_attr(k, name, OX_ATTR_INT)->i = v; }
static void attr_f(kcase *k, const char *name, float v) { kc_attr(k, name, OX_ATTR_FLOAT)->f = v; }

static void attr_s(kcase *k, const char *name, const char *s)
{
    ox_attr *a = kc_attr(k, name, OX_ATTR_STRING);
    a->s.data = (char *)s;
    a->s.len = strlen(s);
}

static void attr_ints(kcase *k, const char *name, int n, const int64_t *v)
{
    ox_attr *a = kc_attr(k, name, OX_ATTR_INTS);
    a->n = n;
    a->ints = (int64_t *)v;
}

/* Input i: a tensor of dtype dt with n values given as doubles. */
static void in_t(kcase *k, int i, ox_dtype dt, int rank, const int64_t *dims, const double *v)
{
    ox_tensor *t = ox_tensor_new(dt, rank, dims);
    assert_non_null(t);
    for (int64_t j = 0; j < t->numel; j++) ox_tensor_set_f64(t, j, v[j]);
    k->in[i] = ox_rval_tensor(t);
    if (k->ctx.n_in < i + 1) k->ctx.n_in = i + 1;
}

static void in_f(kcase *k, int i, int rank, const int64_t *dims, const float *v)
{
    ox_tensor *t = ox_tensor_new(OX_DT_FLOAT, rank, dims);
    assert_non_null(t);
    memcpy(ox_tensor_data(t), v, (size_t)t->numel * sizeof(float));
    k->in[i] = ox_rval_tensor(t);
    if (k->ctx.n_in < i + 1) k->ctx.n_in = i + 1;
}

static const ox_tensor *out_t(kcase *k, int i)
{
    assert_non_null(k->out[i]);
    assert_int_equal(k->out[i]->kind, OX_RV_TENSOR);
    return k->out[i]->t;
}

static void expect_vals(const ox_tensor *t, int64_t n, const double *want, double tol)
{
    assert_int_equal(t->numel, n);
    for (int64_t i = 0; i < n; i++) {
        double got = ox_tensor_get_f64(t, i);
        if (fabs(got - want[i]) > tol * (1.0 + fabs(want[i]))) {
            print_error("element %lld: got %g want %g\n", (long long)i, got, want[i]);
            fail();
        }
    }
}

static void expect_f(const ox_tensor *t, int64_t n, const float *want, double tol)
{
    double *w = malloc((size_t)n * sizeof(double));
    for (int64_t i = 0; i < n; i++) w[i] = want[i];
    expect_vals(t, n, w, tol);
    free(w);
}

static float frand(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return (float)((*s >> 8) & 0xFFFF) / 32768.0f - 1.0f;
}

/* ---- GEMM ------------------------------------------------------------------- */

/* The packed SGEMM against a naive double-precision loop, over sizes that
 * exercise full tiles, edge tiles and several K blocks, all transposes. */
static void test_sgemm_vs_naive(void **state)
{
    (void)state;
    static const int64_t sizes[][3] = {{1, 1, 1}, {3, 5, 7}, {17, 33, 9}, {64, 48, 300},
                                       {130, 17, 257}, {5, 2100, 3}};
    unsigned seed = 1;
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
        for (int tr = 0; tr < 4; tr++) {
            int64_t M = sizes[si][0], N = sizes[si][1], K = sizes[si][2];
            bool ta = tr & 1, tb = tr & 2;
            float *A = malloc((size_t)(M * K) * sizeof(float));
            float *B = malloc((size_t)(K * N) * sizeof(float));
            float *C = malloc((size_t)(M * N) * sizeof(float));
            for (int64_t i = 0; i < M * K; i++) A[i] = frand(&seed);
            for (int64_t i = 0; i < K * N; i++) B[i] = frand(&seed);
            for (int64_t i = 0; i < M * N; i++) C[i] = frand(&seed);
            float *C0 = malloc((size_t)(M * N) * sizeof(float));
            memcpy(C0, C, (size_t)(M * N) * sizeof(float));
            ox_nn_sgemm(ta, tb, M, N, K, 0.5f, A, ta ? M : K, B, tb ? K : N, 2.0f, C, N);
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++) {
                    double s = 0;
                    for (int64_t kk = 0; kk < K; kk++)
                        s += (double)(ta ? A[kk * M + i] : A[i * K + kk]) *
                             (tb ? B[j * K + kk] : B[kk * N + j]);
                    double want = 0.5 * s + 2.0 * C0[i * N + j];
                    assert_true(fabs(C[i * N + j] - want) < 1e-4 * (1 + fabs(want)) * sqrt((double)K));
                }
            free(A); free(B); free(C); free(C0);
        }
}

/* MatMul with numpy broadcasting: [2,1,3,4] x [3,4,2] -> [2,3,3,2], and
 * 1-D operands. */
static void test_matmul_broadcast(void **state)
{
    (void)state;
    int64_t da[4] = {2, 1, 3, 4}, db[3] = {3, 4, 2};
    float A[24], B[24];
    unsigned seed = 7;
    for (int i = 0; i < 24; i++) { A[i] = frand(&seed); B[i] = frand(&seed); }
    kcase k;
    kc_init(&k, "MatMul", 13, 1);
    in_f(&k, 0, 4, da, A);
    in_f(&k, 1, 3, db, B);
    assert_int_equal(ox_nn_k_matmul(&k.ctx), OX_OK);
    const ox_tensor *y = out_t(&k, 0);
    assert_int_equal(y->rank, 4);
    assert_int_equal(y->dims[0], 2);
    assert_int_equal(y->dims[1], 3);
    assert_int_equal(y->dims[2], 3);
    assert_int_equal(y->dims[3], 2);
    double want[36];
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 3; b++)
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 2; j++) {
                    double s = 0;
                    for (int kk = 0; kk < 4; kk++) s += A[a * 12 + i * 4 + kk] * B[b * 8 + kk * 2 + j];
                    want[((a * 3 + b) * 3 + i) * 2 + j] = s;
                }
    expect_vals(y, 36, want, 1e-5);
    kc_free(&k);

    /* [4] x [4] -> scalar */
    int64_t d1[1] = {4};
    float v1[4] = {1, 2, 3, 4}, v2[4] = {5, 6, 7, 8};
    kc_init(&k, "MatMul", 13, 1);
    in_f(&k, 0, 1, d1, v1);
    in_f(&k, 1, 1, d1, v2);
    assert_int_equal(ox_nn_k_matmul(&k.ctx), OX_OK);
    assert_int_equal(out_t(&k, 0)->rank, 0);
    expect_vals(out_t(&k, 0), 1, (double[]){70}, 0);
    kc_free(&k);

    /* Mismatched inner dims is an error, not a crash. */
    int64_t d3[1] = {3};
    kc_init(&k, "MatMul", 13, 1);
    in_f(&k, 0, 1, d1, v1);
    in_f(&k, 1, 1, d3, v2);
    assert_int_not_equal(ox_nn_k_matmul(&k.ctx), OX_OK);
    kc_free(&k);
}

/* Gemm: Y = alpha * A^T * B + beta * C with C broadcast from [1, N]. */
static void test_gemm_attrs(void **state)
{
    (void)state;
    int64_t da[2] = {3, 2}, db[2] = {3, 4}, dc[2] = {1, 4};
    float A[6] = {1, 2, 3, 4, 5, 6}, B[12], C[4] = {1, -1, 2, -2};
    for (int i = 0; i < 12; i++) B[i] = (float)(i % 5) - 2;
    kcase k;
    kc_init(&k, "Gemm", 13, 1);
    attr_i(&k, "transA", 1);
    attr_f(&k, "alpha", 0.25f);
    attr_f(&k, "beta", 3.0f);
    in_f(&k, 0, 2, da, A);
    in_f(&k, 1, 2, db, B);
    in_f(&k, 2, 2, dc, C);
    assert_int_equal(ox_nn_k_gemm(&k.ctx), OX_OK);
    double want[8];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 4; j++) {
            double s = 0;
            for (int kk = 0; kk < 3; kk++) s += A[kk * 2 + i] * B[kk * 4 + j];
            want[i * 4 + j] = 0.25 * s + 3.0 * C[j];
        }
    expect_vals(out_t(&k, 0), 8, want, 1e-6);
    kc_free(&k);
}

/* ---- convolution -------------------------------------------------------------- */

/* Operators.md Conv example: 5x5 input 0..24, 3x3 kernel of ones. */
static void test_conv_spec_example(void **state)
{
    (void)state;
    int64_t dx[4] = {1, 1, 5, 5}, dw[4] = {1, 1, 3, 3};
    float X[25], W[9];
    for (int i = 0; i < 25; i++) X[i] = (float)i;
    for (int i = 0; i < 9; i++) W[i] = 1;
    static const int64_t pads[4] = {1, 1, 1, 1};
    kcase k;
    kc_init(&k, "Conv", 11, 1);
    attr_ints(&k, "pads", 4, pads);
    in_f(&k, 0, 4, dx, X);
    in_f(&k, 1, 4, dw, W);
    assert_int_equal(ox_nn_k_conv(&k.ctx), OX_OK);
    static const float want[25] = {12, 21, 27, 33, 24, 33, 54, 63, 72, 51, 63, 99, 108, 117, 81,
                                   93, 144, 153, 162, 111, 72, 111, 117, 123, 84};
    expect_f(out_t(&k, 0), 25, want, 1e-6);
    kc_free(&k);

    kc_init(&k, "Conv", 11, 1);
    in_f(&k, 0, 4, dx, X);
    in_f(&k, 1, 4, dw, W);
    assert_int_equal(ox_nn_k_conv(&k.ctx), OX_OK);
    static const float want2[9] = {54, 63, 72, 99, 108, 117, 144, 153, 162};
    expect_f(out_t(&k, 0), 9, want2, 1e-6);
    kc_free(&k);
}

/* 2-D Conv against the definition for one configuration. */
typedef struct conv_cfg {
    int64_t N, C, H, W, M, G, KH, KW, sh, sw, dh, dw, pt, pl, pb, pr;
} conv_cfg;

static void check_conv_direct(const conv_cfg *q)
{
    int64_t dx[4] = {q->N, q->C, q->H, q->W}, dwt[4] = {q->M, q->C / q->G, q->KH, q->KW};
    int64_t db[1] = {q->M};
    size_t nx = (size_t)(q->N * q->C * q->H * q->W), nw = (size_t)(q->M * (q->C / q->G) * q->KH * q->KW);
    float *X = malloc(nx * sizeof(float)), *W = malloc(nw * sizeof(float));
    float *B = malloc((size_t)q->M * sizeof(float));
    unsigned seed = 3;
    for (size_t i = 0; i < nx; i++) X[i] = frand(&seed);
    for (size_t i = 0; i < nw; i++) W[i] = frand(&seed);
    for (int64_t i = 0; i < q->M; i++) B[i] = frand(&seed);
    int64_t strides[2] = {q->sh, q->sw}, dil[2] = {q->dh, q->dw}, pads[4] = {q->pt, q->pl, q->pb, q->pr};
    kcase k;
    kc_init(&k, "Conv", 11, 1);
    attr_i(&k, "group", q->G);
    attr_ints(&k, "strides", 2, strides);
    attr_ints(&k, "dilations", 2, dil);
    attr_ints(&k, "pads", 4, pads);
    in_f(&k, 0, 4, dx, X);
    in_f(&k, 1, 4, dwt, W);
    in_f(&k, 2, 1, db, B);
    assert_int_equal(ox_nn_k_conv(&k.ctx), OX_OK);
    const ox_tensor *y = out_t(&k, 0);
    int64_t OH = (q->H + q->pt + q->pb - ((q->KH - 1) * q->dh + 1)) / q->sh + 1;
    int64_t OW = (q->W + q->pl + q->pr - ((q->KW - 1) * q->dw + 1)) / q->sw + 1;
    assert_int_equal(y->dims[2], OH);
    assert_int_equal(y->dims[3], OW);
    const float *Y = ox_tensor_data(y);
    int64_t Cg = q->C / q->G, Mg = q->M / q->G;
    for (int64_t n = 0; n < q->N; n++)
        for (int64_t m = 0; m < q->M; m++)
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    double s = B[m];
                    int64_t g = m / Mg;
                    for (int64_t ci = 0; ci < Cg; ci++)
                        for (int64_t kh = 0; kh < q->KH; kh++)
                            for (int64_t kw = 0; kw < q->KW; kw++) {
                                int64_t ih = oh * q->sh - q->pt + kh * q->dh;
                                int64_t iw = ow * q->sw - q->pl + kw * q->dw;
                                if (ih < 0 || ih >= q->H || iw < 0 || iw >= q->W) continue;
                                s += X[((n * q->C + g * Cg + ci) * q->H + ih) * q->W + iw] *
                                     W[((m * Cg + ci) * q->KH + kh) * q->KW + kw];
                            }
                    assert_true(fabs(Y[((n * q->M + m) * OH + oh) * OW + ow] - s) < 1e-4);
                }
    kc_free(&k);
    free(X);
    free(W);
    free(B);
}

/* Grouped, depthwise, strided, dilated and asymmetrically padded Conv. */
static void test_conv_vs_direct(void **state)
{
    (void)state;
    static const conv_cfg cfgs[] = {
        {2, 4, 7, 6, 6, 2, 3, 2, 2, 1, 1, 2, 1, 0, 2, 1},   /* grouped */
        {1, 5, 9, 8, 5, 5, 3, 3, 2, 2, 2, 1, 1, 2, 0, 1},   /* depthwise */
        {1, 5, 6, 7, 5, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},   /* depthwise, stride 1 */
        {1, 8, 5, 5, 16, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},  /* pointwise */
        {1, 3, 20, 20, 40, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1}, /* packed GEMM path */
    };
    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) check_conv_direct(&cfgs[i]);

    /* Channel mismatch is reported, not a crash. */
    int64_t dx[4] = {1, 4, 3, 3}, dwt[4] = {2, 3, 1, 1};
    float X[36] = {0}, W[6] = {0};
    kcase k;
    kc_init(&k, "Conv", 11, 1);
    in_f(&k, 0, 4, dx, X);
    in_f(&k, 1, 4, dwt, W);
    assert_int_not_equal(ox_nn_k_conv(&k.ctx), OX_OK);
    kc_free(&k);
}

/* Operators.md ConvTranspose example: 3x3 input 0..8, two 3x3 kernels of ones. */
static void test_conv_transpose_spec(void **state)
{
    (void)state;
    int64_t dx[4] = {1, 1, 3, 3}, dw[4] = {1, 2, 3, 3};
    float X[9], W[18];
    for (int i = 0; i < 9; i++) X[i] = (float)i;
    for (int i = 0; i < 18; i++) W[i] = 1;
    kcase k;
    kc_init(&k, "ConvTranspose", 11, 1);
    in_f(&k, 0, 4, dx, X);
    in_f(&k, 1, 4, dw, W);
    assert_int_equal(ox_nn_k_conv_transpose(&k.ctx), OX_OK);
    static const float one[25] = {0, 1, 3, 3, 2, 3, 8, 15, 12, 7, 9, 21, 36, 27, 15,
                                  9, 20, 33, 24, 13, 6, 13, 21, 15, 8};
    float want[50];
    memcpy(want, one, sizeof one);
    memcpy(want + 25, one, sizeof one);
    const ox_tensor *y = out_t(&k, 0);
    assert_int_equal(y->dims[1], 2);
    expect_f(y, 50, want, 1e-6);
    kc_free(&k);
}

/* ---- pooling -------------------------------------------------------------------- */

static void test_maxpool_indices_and_avgpool(void **state)
{
    (void)state;
    int64_t dx[4] = {1, 1, 4, 4};
    float X[16];
    for (int i = 0; i < 16; i++) X[i] = (float)(i + 1);
    static const int64_t ks[2] = {2, 2}, st[2] = {2, 2}, pads[4] = {1, 1, 1, 1};
    kcase k;
    kc_init(&k, "MaxPool", 12, 2);
    attr_ints(&k, "kernel_shape", 2, ks);
    attr_ints(&k, "strides", 2, st);
    in_f(&k, 0, 4, dx, X);
    assert_int_equal(ox_nn_k_max_pool(&k.ctx), OX_OK);
    expect_vals(out_t(&k, 0), 4, (double[]){6, 8, 14, 16}, 0);
    expect_vals(out_t(&k, 1), 4, (double[]){5, 7, 13, 15}, 0);
    kc_free(&k);

    /* 3x3 window, stride 2, pads 1: corners see 4 real values of 9 slots. */
    static const int64_t k3[2] = {3, 3};
    for (int inc = 0; inc < 2; inc++) {
        kc_init(&k, "AveragePool", 19, 1);
        attr_ints(&k, "kernel_shape", 2, k3);
        attr_ints(&k, "strides", 2, st);
        attr_ints(&k, "pads", 4, pads);
        attr_i(&k, "count_include_pad", inc);
        in_f(&k, 0, 4, dx, X);
        assert_int_equal(ox_nn_k_average_pool(&k.ctx), OX_OK);
        /* Window at (0,0) covers rows/cols -1..1: values 1,2,5,6. */
        double sum00 = 1 + 2 + 5 + 6;
        double sum01 = 2 + 3 + 4 + 6 + 7 + 8;
        double w0 = inc ? sum00 / 9 : sum00 / 4, w1 = inc ? sum01 / 9 : sum01 / 6;
        const ox_tensor *y = out_t(&k, 0);
        assert_int_equal(y->dims[2], 2);
        assert_true(fabs(ox_tensor_get_f64(y, 0) - w0) < 1e-5);
        assert_true(fabs(ox_tensor_get_f64(y, 1) - w1) < 1e-5);
        kc_free(&k);
    }
}

/* ---- normalization -------------------------------------------------------------- */

static void test_batchnorm_spec(void **state)
{
    (void)state;
    int64_t dx[4] = {1, 2, 1, 3}, dc[1] = {2};
    float X[6] = {-1, 0, 1, 2, 3, 4}, S[2] = {1.0f, 1.5f}, B[2] = {0, 1}, Mn[2] = {0, 3},
          V[2] = {1, 1.5f};
    kcase k;
    kc_init(&k, "BatchNormalization", 15, 1);
    in_f(&k, 0, 4, dx, X);
    in_f(&k, 1, 1, dc, S);
    in_f(&k, 2, 1, dc, B);
    in_f(&k, 3, 1, dc, Mn);
    in_f(&k, 4, 1, dc, V);
    assert_int_equal(ox_nn_k_batch_norm(&k.ctx), OX_OK);
    double want[6];
    for (int i = 0; i < 6; i++) {
        int ch = i / 3;
        want[i] = S[ch] * (X[i] - Mn[ch]) / sqrt(V[ch] + 1e-5) + B[ch];
    }
    expect_vals(out_t(&k, 0), 6, want, 1e-5);
    kc_free(&k);
}

static void test_layernorm_stash(void **state)
{
    (void)state;
    int64_t dx[2] = {2, 4}, ds[1] = {4};
    float X[8] = {1, 2, 3, 4, -2, 0, 2, 4}, S[4] = {1, 2, 1, 2}, B[4] = {0, 0, 1, 1};
    kcase k;
    kc_init(&k, "LayerNormalization", 17, 3);
    attr_f(&k, "epsilon", 0.0f);
    in_f(&k, 0, 2, dx, X);
    in_f(&k, 1, 1, ds, S);
    in_f(&k, 2, 1, ds, B);
    assert_int_equal(ox_nn_k_layer_norm(&k.ctx), OX_OK);
    /* Row 0: mean 2.5, var 1.25; row 1: mean 1, var 5. */
    double inv0 = 1 / sqrt(1.25), inv1 = 1 / sqrt(5.0);
    double want[8];
    for (int i = 0; i < 8; i++) {
        double m = i < 4 ? 2.5 : 1.0, inv = i < 4 ? inv0 : inv1;
        want[i] = (X[i] - m) * inv * S[i % 4] + B[i % 4];
    }
    expect_vals(out_t(&k, 0), 8, want, 1e-5);
    expect_vals(out_t(&k, 1), 2, (double[]){2.5, 1.0}, 1e-6);
    expect_vals(out_t(&k, 2), 2, (double[]){inv0, inv1}, 1e-5);
    assert_int_equal(out_t(&k, 1)->dims[1], 1);
    kc_free(&k);
}

/* ---- quantization ------------------------------------------------------------------- */

static void test_quantize_spec(void **state)
{
    (void)state;
    int64_t dx[1] = {6}, d0[1] = {4};
    kcase k;
    kc_init(&k, "QuantizeLinear", 13, 1);
    in_t(&k, 0, OX_DT_FLOAT, 1, dx, (double[]){0, 2, 3, 1000, -254, -1000});
    in_t(&k, 1, OX_DT_FLOAT, 0, NULL, (double[]){2});
    in_t(&k, 2, OX_DT_UINT8, 0, NULL, (double[]){128});
    assert_int_equal(ox_nn_k_quantize_linear(&k.ctx), OX_OK);
    assert_int_equal(out_t(&k, 0)->dtype, OX_DT_UINT8);
    expect_vals(out_t(&k, 0), 6, (double[]){128, 129, 130, 255, 1, 0}, 0);
    kc_free(&k);

    kc_init(&k, "DequantizeLinear", 13, 1);
    in_t(&k, 0, OX_DT_UINT8, 1, d0, (double[]){0, 3, 128, 255});
    in_t(&k, 1, OX_DT_FLOAT, 0, NULL, (double[]){2});
    in_t(&k, 2, OX_DT_UINT8, 0, NULL, (double[]){128});
    assert_int_equal(ox_nn_k_dequantize_linear(&k.ctx), OX_OK);
    expect_vals(out_t(&k, 0), 4, (double[]){-256, -250, 0, 254}, 0);
    kc_free(&k);

    kc_init(&k, "DynamicQuantizeLinear", 11, 3);
    in_t(&k, 0, OX_DT_FLOAT, 1, dx, (double[]){0, 2, -3, -2.5, 1.34, 0.5});
    assert_int_equal(ox_nn_k_dynamic_quantize_linear(&k.ctx), OX_OK);
    expect_vals(out_t(&k, 0), 6, (double[]){153, 255, 0, 26, 221, 179}, 0);
    expect_vals(out_t(&k, 1), 1, (double[]){5.0 / 255.0}, 1e-6);
    expect_vals(out_t(&k, 2), 1, (double[]){153}, 0);
    kc_free(&k);
}

/* ---- einsum -------------------------------------------------------------------------- */

static void test_einsum(void **state)
{
    (void)state;
    int64_t da[2] = {2, 3}, db[2] = {3, 2}, dd[2] = {3, 3};
    float A[6] = {1, 2, 3, 4, 5, 6}, B[6] = {1, 0, -1, 2, 0.5f, 1}, D[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    kcase k;
    kc_init(&k, "Einsum", 12, 1);
    attr_s(&k, "equation", "ij,jk->ik");
    in_f(&k, 0, 2, da, A);
    in_f(&k, 1, 2, db, B);
    assert_int_equal(ox_nn_k_einsum(&k.ctx), OX_OK);
    expect_vals(out_t(&k, 0), 4, (double[]){1 - 2 + 1.5, 4 + 3, 4 - 5 + 3, 10 + 6}, 1e-6);
    kc_free(&k);

    kc_init(&k, "Einsum", 12, 1);
    attr_s(&k, "equation", "ii->i");
    in_f(&k, 0, 2, dd, D);
    assert_int_equal(ox_nn_k_einsum(&k.ctx), OX_OK);
    expect_vals(out_t(&k, 0), 3, (double[]){1, 5, 9}, 0);
    kc_free(&k);

    /* Implicit output lists the labels in alphabetical order: a transpose. */
    kc_init(&k, "Einsum", 12, 1);
    attr_s(&k, "equation", "ji");
    in_f(&k, 0, 2, da, A);
    assert_int_equal(ox_nn_k_einsum(&k.ctx), OX_OK);
    assert_int_equal(out_t(&k, 0)->dims[0], 3);
    expect_vals(out_t(&k, 0), 6, (double[]){1, 4, 2, 5, 3, 6}, 0);
    kc_free(&k);

    /* Batched contraction with a permuted output (the GEMM path): b i j , b k j -> k b i. */
    int64_t d3a[3] = {2, 3, 4}, d3b[3] = {2, 5, 4};
    float P[24], Q[40];
    unsigned seed = 11;
    for (int i = 0; i < 24; i++) P[i] = frand(&seed);
    for (int i = 0; i < 40; i++) Q[i] = frand(&seed);
    kc_init(&k, "Einsum", 12, 1);
    attr_s(&k, "equation", "bij,bkj->kbi");
    in_f(&k, 0, 3, d3a, P);
    in_f(&k, 1, 3, d3b, Q);
    assert_int_equal(ox_nn_k_einsum(&k.ctx), OX_OK);
    double want[30];
    for (int kk = 0; kk < 5; kk++)
        for (int b = 0; b < 2; b++)
            for (int i = 0; i < 3; i++) {
                double acc = 0;
                for (int j = 0; j < 4; j++) acc += P[(b * 3 + i) * 4 + j] * Q[(b * 5 + kk) * 4 + j];
                want[(kk * 2 + b) * 3 + i] = acc;
            }
    assert_int_equal(out_t(&k, 0)->dims[0], 5);
    expect_vals(out_t(&k, 0), 30, want, 1e-5);
    kc_free(&k);

    kc_init(&k, "Einsum", 12, 1);
    attr_s(&k, "equation", "ij,jk->ik,");
    in_f(&k, 0, 2, da, A);
    in_f(&k, 1, 2, db, B);
    assert_int_not_equal(ox_nn_k_einsum(&k.ctx), OX_OK);
    kc_free(&k);

    /* A label repeated in the output is refused (it overflowed the GEMM
     * route's output permutation: fuzz_exec). */
    kc_init(&k, "Einsum", 12, 1);
    attr_s(&k, "equation", "bij,bkj->bbki");
    in_f(&k, 0, 3, d3a, P);
    in_f(&k, 1, 3, d3b, Q);
    assert_int_not_equal(ox_nn_k_einsum(&k.ctx), OX_OK);
    kc_free(&k);
}

/* ---- recurrent ------------------------------------------------------------------------- */

/* RNN with hidden size 1 and tanh: h_t = tanh(w x_t + r h_{t-1} + wb + rb). */
static void test_rnn_two_steps(void **state)
{
    (void)state;
    int64_t dx[3] = {2, 1, 1}, dw[3] = {1, 1, 1}, dbias[2] = {1, 2};
    float X[2] = {1.0f, -0.5f}, W[1] = {0.5f}, R[1] = {0.25f}, B[2] = {0.1f, -0.2f};
    kcase k;
    kc_init(&k, "RNN", 14, 2);
    attr_i(&k, "hidden_size", 1);
    in_f(&k, 0, 3, dx, X);
    in_f(&k, 1, 3, dw, W);
    in_f(&k, 2, 3, dw, R);
    in_f(&k, 3, 2, dbias, B);
    assert_int_equal(ox_nn_k_rnn(&k.ctx), OX_OK);
    double h1 = tanh(0.5 * 1.0 + 0.1 - 0.2), h2 = tanh(0.5 * -0.5 + 0.25 * h1 + 0.1 - 0.2);
    expect_vals(out_t(&k, 0), 2, (double[]){h1, h2}, 1e-6);
    expect_vals(out_t(&k, 1), 1, (double[]){h2}, 1e-6);
    assert_int_equal(out_t(&k, 0)->rank, 4);
    kc_free(&k);
}

/* ---- attention ------------------------------------------------------------------------- */

/* Causal 4-D attention with one head of size 2, against the definition. */
static void test_attention_causal(void **state)
{
    (void)state;
    int64_t d[4] = {1, 1, 3, 2};
    float Q[6] = {1, 0, 0, 1, 1, 1}, K[6] = {1, 1, 0, 2, -1, 0}, V[6] = {1, 2, 3, 4, 5, 6};
    kcase k;
    kc_init(&k, "Attention", 23, 1);
    attr_i(&k, "is_causal", 1);
    in_f(&k, 0, 4, d, Q);
    in_f(&k, 1, 4, d, K);
    in_f(&k, 2, 4, d, V);
    assert_int_equal(ox_nn_k_attention(&k.ctx), OX_OK);
    double want[6];
    for (int i = 0; i < 3; i++) {
        double s[3], mx = -1e30, sum = 0;
        for (int j = 0; j <= i; j++) {
            s[j] = (Q[i * 2] * K[j * 2] + Q[i * 2 + 1] * K[j * 2 + 1]) / sqrt(2.0);
            if (s[j] > mx) mx = s[j];
        }
        for (int j = 0; j <= i; j++) sum += (s[j] = exp(s[j] - mx));
        for (int e = 0; e < 2; e++) {
            double y = 0;
            for (int j = 0; j <= i; j++) y += s[j] / sum * V[j * 2 + e];
            want[i * 2 + e] = y;
        }
    }
    expect_vals(out_t(&k, 0), 6, want, 1e-5);
    kc_free(&k);
}


/* ---- com.microsoft fused ops ------------------------------------------------------ */

static void attr_floats(kcase *k, const char *name, int n, const float *v)
{
    ox_attr *a = kc_attr(k, name, OX_ATTR_FLOATS);
    a->n = n;
    a->floats = (float *)v;
}

/* FusedConv = Conv, + Z, then the named activation (Clip with params). */
static void test_fused_conv(void **state)
{
    (void)state;
    int64_t dx[4] = {1, 1, 2, 2}, dw[4] = {2, 1, 1, 1}, db[1] = {2};
    float X[4] = {-2, -0.5f, 0.5f, 3}, W[2] = {1, -2}, B[2] = {0.5f, 0}, Z[8] = {0, 0, 0, 0, 1, 1, 1, 1};
    static const float clip[2] = {-1.0f, 2.0f};
    kcase k;
    kc_init(&k, "FusedConv", 1, 1);
    attr_s(&k, "activation", "Clip");
    attr_floats(&k, "activation_params", 2, clip);
    in_f(&k, 0, 4, dx, X);
    in_f(&k, 1, 4, dw, W);
    in_f(&k, 2, 1, db, B);
    int64_t dz[4] = {1, 2, 2, 2};
    in_f(&k, 3, 4, dz, Z);
    assert_int_equal(ox_nn_k_fused_conv(&k.ctx), OX_OK);
    double want[8];
    for (int m = 0; m < 2; m++)
        for (int p = 0; p < 4; p++) {
            double v = X[p] * W[m] + B[m] + Z[m * 4 + p];
            want[m * 4 + p] = v < -1 ? -1 : v > 2 ? 2 : v;
        }
    expect_vals(out_t(&k, 0), 8, want, 1e-6);
    kc_free(&k);

    kc_init(&k, "FusedConv", 1, 1);
    attr_s(&k, "activation", "NoSuchActivation");
    in_f(&k, 0, 4, dx, X);
    in_f(&k, 1, 4, dw, W);
    assert_int_not_equal(ox_nn_k_fused_conv(&k.ctx), OX_OK);
    kc_free(&k);
}

/* FusedMatMul: alpha * A^T * B^T. */
static void test_fused_matmul(void **state)
{
    (void)state;
    int64_t da[2] = {3, 2}, db[2] = {4, 3};
    float A[6] = {1, 2, 3, 4, 5, 6}, B[12];
    for (int i = 0; i < 12; i++) B[i] = (float)i - 5;
    kcase k;
    kc_init(&k, "FusedMatMul", 1, 1);
    attr_i(&k, "transA", 1);
    attr_i(&k, "transB", 1);
    attr_f(&k, "alpha", -2.0f);
    in_f(&k, 0, 2, da, A);
    in_f(&k, 1, 2, db, B);
    assert_int_equal(ox_nn_k_fused_matmul(&k.ctx), OX_OK);
    double want[8];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 4; j++) {
            double s = 0;
            for (int kk = 0; kk < 3; kk++) s += A[kk * 2 + i] * B[j * 3 + kk];
            want[i * 4 + j] = -2.0 * s;
        }
    expect_vals(out_t(&k, 0), 8, want, 1e-6);
    kc_free(&k);
}

/* SkipLayerNormalization: LN(x + skip + bias) * gamma + beta, and the sum. */
static void test_skip_layer_norm(void **state)
{
    (void)state;
    int64_t dx[2] = {1, 4}, dh[1] = {4};
    float X[4] = {1, 2, 3, 4}, S[4] = {0.5f, -1, 0, 2}, G[4] = {1, 2, 0.5f, 1}, Be[4] = {0, 1, 0, -1},
          Bi[4] = {0.5f, 0, 1, -2};
    kcase k;
    kc_init(&k, "SkipLayerNormalization", 1, 4);
    k.node.domain = (char *)"com.microsoft";
    attr_f(&k, "epsilon", 1e-5f);
    in_f(&k, 0, 2, dx, X);
    in_f(&k, 1, 2, dx, S);
    in_f(&k, 2, 1, dh, G);
    in_f(&k, 3, 1, dh, Be);
    in_f(&k, 4, 1, dh, Bi);
    assert_int_equal(ox_nn_k_skip_layer_norm(&k.ctx), OX_OK);
    double sum[4], m = 0, v = 0, want[4];
    for (int i = 0; i < 4; i++) { sum[i] = X[i] + S[i] + Bi[i]; m += sum[i] / 4; }
    for (int i = 0; i < 4; i++) v += (sum[i] - m) * (sum[i] - m) / 4;
    for (int i = 0; i < 4; i++) want[i] = (sum[i] - m) / sqrt(v + 1e-5) * G[i] + Be[i];
    expect_vals(out_t(&k, 0), 4, want, 1e-5);
    expect_vals(out_t(&k, 3), 4, sum, 1e-6);
    kc_free(&k);
}

/* GELU variants from their formulas. */
static void test_gelu_family(void **state)
{
    (void)state;
    int64_t dx[2] = {2, 3}, db[1] = {3};
    float X[6] = {-3, -1, -0.25f, 0, 0.5f, 2}, B[3] = {0.1f, -0.2f, 0.3f};
    double we[6], wt[6], wq[6];
    for (int i = 0; i < 6; i++) {
        double v = X[i] + B[i % 3];
        we[i] = 0.5 * v * (1 + erf(v / sqrt(2.0)));
        wt[i] = 0.5 * v * (1 + tanh(sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
        wq[i] = X[i] / (1 + exp(-1.702 * X[i]));
    }
    kcase k;
    kc_init(&k, "BiasGelu", 1, 1);
    in_f(&k, 0, 2, dx, X);
    in_f(&k, 1, 1, db, B);
    assert_int_equal(ox_nn_k_bias_gelu(&k.ctx), OX_OK);
    expect_vals(out_t(&k, 0), 6, we, 1e-6);
    kc_free(&k);
    kc_init(&k, "FastGelu", 1, 1);
    in_f(&k, 0, 2, dx, X);
    in_f(&k, 1, 1, db, B);
    assert_int_equal(ox_nn_k_fast_gelu(&k.ctx), OX_OK);
    expect_vals(out_t(&k, 0), 6, wt, 1e-6);
    kc_free(&k);
    kc_init(&k, "QuickGelu", 1, 1);
    in_f(&k, 0, 2, dx, X);
    assert_int_equal(ox_nn_k_quick_gelu(&k.ctx), OX_OK);
    expect_vals(out_t(&k, 0), 6, wq, 1e-6);
    kc_free(&k);
}

/* com.microsoft MultiHeadAttention with 2 heads of size 1 and a padding
 * mask: each head is a scalar softmax-weighted average. */
static void test_ms_mha(void **state)
{
    (void)state;
    int64_t dq[3] = {1, 1, 2}, dk[3] = {1, 3, 2}, dm[2] = {1, 3};
    float Q[2] = {1, -1}, K[6] = {1, 0, 0, 1, 2, 2}, V[6] = {1, 10, 2, 20, 3, 30};
    kcase k;
    kc_init(&k, "MultiHeadAttention", 1, 1);
    attr_i(&k, "num_heads", 2);
    in_f(&k, 0, 3, dq, Q);
    in_f(&k, 1, 3, dk, K);
    in_f(&k, 2, 3, dk, V);
    in_t(&k, 4, OX_DT_INT32, 2, dm, (double[]){1, 1, 0});
    assert_int_equal(ox_nn_k_ms_multihead_attention(&k.ctx), OX_OK);
    double want[2];
    for (int h = 0; h < 2; h++) {
        double s[3], mx = -1e30, sum = 0, y = 0;
        for (int j = 0; j < 3; j++) {
            s[j] = Q[h] * K[j * 2 + h] + (j == 2 ? -10000.0 : 0.0);
            if (s[j] > mx) mx = s[j];
        }
        for (int j = 0; j < 3; j++) sum += (s[j] = exp(s[j] - mx));
        for (int j = 0; j < 3; j++) y += s[j] / sum * V[j * 2 + h];
        want[h] = y;
    }
    expect_vals(out_t(&k, 0), 2, want, 1e-5);
    kc_free(&k);
}


/* com.microsoft Attention with identity projections (Q = K = V = input),
 * one head, unidirectional: row 0 sees itself only, row 1 both rows. */
static void test_ms_attention(void **state)
{
    (void)state;
    int64_t dx[3] = {1, 2, 2}, dw[2] = {2, 6};
    float X[4] = {1, 2, -1, 0.5f};
    float W[12] = {1, 0, 1, 0, 1, 0, 0, 1, 0, 1, 0, 1};
    kcase k;
    kc_init(&k, "Attention", 1, 1);
    attr_i(&k, "num_heads", 1);
    attr_i(&k, "unidirectional", 1);
    in_f(&k, 0, 3, dx, X);
    in_f(&k, 1, 2, dw, W);
    assert_int_equal(ox_nn_k_ms_attention(&k.ctx), OX_OK);
    double s0 = (X[2] * X[0] + X[3] * X[1]) / sqrt(2.0), s1 = (X[2] * X[2] + X[3] * X[3]) / sqrt(2.0);
    double mx = s0 > s1 ? s0 : s1, e0 = exp(s0 - mx), e1 = exp(s1 - mx);
    double p0 = e0 / (e0 + e1), p1 = e1 / (e0 + e1);
    double want[4] = {X[0], X[1], p0 * X[0] + p1 * X[2], p0 * X[1] + p1 * X[3]};
    expect_vals(out_t(&k, 0), 4, want, 1e-5);
    kc_free(&k);
}

/* GroupNormalization: opset 18 takes per-group scale, opset 21 per-channel. */
static void test_group_norm_versions(void **state)
{
    (void)state;
    int64_t dx[3] = {1, 4, 2};
    float X[8] = {1, 3, 2, 6, -1, 1, 0, 4};
    /* Groups {c0,c1} = 1,3,2,6 (mean 3, var 3.5) and {c2,c3} = -1,1,0,4 (mean 1, var 3.5). */
    double inv = 1 / sqrt(3.5 + 1e-5);
    for (int ver = 18; ver <= 21; ver += 3) {
        kcase k;
        kc_init(&k, "GroupNormalization", ver, 1);
        attr_i(&k, "num_groups", 2);
        int64_t ds[1] = {ver == 18 ? 2 : 4};
        float S18[2] = {2, 3}, B18[2] = {0, 1}, S21[4] = {1, 2, 3, 4}, B21[4] = {0, 0, 1, 1};
        in_f(&k, 0, 3, dx, X);
        in_f(&k, 1, 1, ds, ver == 18 ? S18 : S21);
        in_f(&k, 2, 1, ds, ver == 18 ? B18 : B21);
        assert_int_equal(ox_nn_k_group_norm(&k.ctx), OX_OK);
        double want[8];
        for (int i = 0; i < 8; i++) {
            int ch = i / 2, g = ch / 2;
            double m = g ? 1 : 3;
            double sc = ver == 18 ? S18[g] : S21[ch], b = ver == 18 ? B18[g] : B21[ch];
            want[i] = (X[i] - m) * inv * sc + b;
        }
        expect_vals(out_t(&k, 0), 8, want, 1e-5);
        kc_free(&k);
    }
}



/* FusedGemm (LeakyRelu) and GemmFastGelu from their definitions. */
static void test_fused_gemm_family(void **state)
{
    (void)state;
    int64_t da[2] = {2, 3}, db[2] = {3, 2}, dbias[1] = {2};
    float A[6] = {1, -2, 3, -4, 5, -6}, B[6] = {0.5f, -1, 1, 0.25f, -0.5f, 2}, bias[2] = {0.1f, -0.3f};
    double mm[4];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            double s = 0;
            for (int kk = 0; kk < 3; kk++) s += A[i * 3 + kk] * B[kk * 2 + j];
            mm[i * 2 + j] = s;
        }
    kcase k;
    kc_init(&k, "FusedGemm", 1, 1);
    attr_s(&k, "activation", "LeakyRelu");
    attr_f(&k, "activation_alpha", 0.1f);
    in_f(&k, 0, 2, da, A);
    in_f(&k, 1, 2, db, B);
    assert_int_equal(ox_nn_k_fused_gemm(&k.ctx), OX_OK);
    double want[4];
    for (int i = 0; i < 4; i++) want[i] = mm[i] >= 0 ? mm[i] : 0.1 * mm[i];
    expect_vals(out_t(&k, 0), 4, want, 1e-5);
    kc_free(&k);

    kc_init(&k, "GemmFastGelu", 1, 1);
    in_f(&k, 0, 2, da, A);
    in_f(&k, 1, 2, db, B);
    in_f(&k, 2, 1, dbias, bias);
    assert_int_equal(ox_nn_k_gemm_fast_gelu(&k.ctx), OX_OK);
    for (int i = 0; i < 4; i++) {
        double v = mm[i] + bias[i % 2];
        want[i] = 0.5 * v * (1 + tanh(sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
    }
    expect_vals(out_t(&k, 0), 4, want, 1e-5);
    kc_free(&k);
}


/* The thread-pool paths (split GEMM, per-image conv items, per-head
 * attention) give the serial results. */
static void run_pair(ox_kernel_fn fn, const char *op, int64_t opset, int nin, const int *ranks,
                     const int64_t (*dims)[4], ox_thread_pool *pool)
{
    kcase k[2];
    unsigned seed = 99;
    for (int v = 0; v < 2; v++) {
        kc_init(&k[v], op, opset, 1);
        if (!strcmp(op, "Conv")) {
            static const int64_t pads[4] = {1, 1, 1, 1};
            attr_ints(&k[v], "pads", 4, pads);
        }
        k[v].ctx.pool = v ? pool : NULL;
        seed = 99;
        for (int i = 0; i < nin; i++) {
            ox_tensor *t = ox_tensor_new(OX_DT_FLOAT, ranks[i], dims[i]);
            assert_non_null(t);
            float *d = ox_tensor_data(t);
            for (int64_t j = 0; j < t->numel; j++) d[j] = frand(&seed);
            k[v].in[i] = ox_rval_tensor(t);
        }
        k[v].ctx.n_in = nin;
        assert_int_equal(fn(&k[v].ctx), OX_OK);
    }
    const ox_tensor *a = out_t(&k[0], 0), *b = out_t(&k[1], 0);
    assert_int_equal(a->numel, b->numel);
    const float *x = ox_tensor_data(a), *y = ox_tensor_data(b);
    for (int64_t i = 0; i < a->numel; i++) assert_true(fabsf(x[i] - y[i]) <= 1e-5f * (1 + fabsf(x[i])));
    kc_free(&k[0]);
    kc_free(&k[1]);
}

static void test_threaded_matches_serial(void **state)
{
    (void)state;
    ox_thread_pool *pool = ox_thread_pool_new(3);
    if (!pool) skip();
    static const int r2[2] = {2, 2}, r4[3] = {4, 4, 4};
    static const int64_t mm[2][4] = {{200, 150}, {150, 130}};
    run_pair(ox_nn_k_matmul, "MatMul", 13, 2, r2, mm, pool);
    static const int64_t cv1[2][4] = {{1, 16, 32, 32}, {32, 16, 3, 3}};
    run_pair(ox_nn_k_conv, "Conv", 11, 2, r4, cv1, pool);
    static const int64_t cv2[2][4] = {{4, 8, 16, 16}, {8, 8, 3, 3}};
    run_pair(ox_nn_k_conv, "Conv", 11, 2, r4, cv2, pool);
    static const int64_t at[3][4] = {{2, 4, 16, 8}, {2, 4, 16, 8}, {2, 4, 16, 8}};
    run_pair(ox_nn_k_attention, "Attention", 23, 3, r4, at, pool);
    ox_thread_pool_free(pool);
}


/* MaxRoiPool over a 4x4 ramp: a whole-image ROI pooled 2x2 takes each
 * quadrant's bottom-right value; a half-scale ROI reads the top-left. */
static void test_max_roi_pool(void **state)
{
    (void)state;
    int64_t dx[4] = {1, 1, 4, 4}, dr[2] = {2, 5};
    float X[16];
    for (int i = 0; i < 16; i++) X[i] = (float)i;
    float R[10] = {0, 0, 0, 3, 3, 0, 0, 0, 2, 2};
    static const int64_t ps[2] = {2, 2};
    kcase k;
    kc_init(&k, "MaxRoiPool", 1, 1);
    attr_ints(&k, "pooled_shape", 2, ps);
    in_f(&k, 0, 4, dx, X);
    in_f(&k, 1, 2, dr, R);
    assert_int_equal(ox_nn_k_max_roi_pool(&k.ctx), OX_OK);
    /* ROI 2 spans rows/cols 0..2 (3 wide): bins [0,2) and [1,3). */
    expect_vals(out_t(&k, 0), 8, (double[]){5, 7, 13, 15, 5, 6, 9, 10}, 0);
    kc_free(&k);
}

/* ---- robustness -------------------------------------------------------------------- */

/* Every kernel of the table fed random, mostly inconsistent inputs and
 * attributes must return (an error or a result) without crashing or
 * touching memory it does not own (run under valgrind/ASan to see). */
static void test_random_inputs_no_crash(void **state)
{
    (void)state;
    static const ox_dtype dts[] = {OX_DT_FLOAT, OX_DT_FLOAT16, OX_DT_INT64, OX_DT_UINT8,
                                   OX_DT_INT8, OX_DT_BOOL, OX_DT_INT32};
    static const int64_t ints_a[] = {1, 1, 1, 1, 1, 1}, ints_b[] = {2, 0, 3, 2, 1, 1},
                         ints_c[] = {-1, 5, 2, 1, 0, 7};
    const int64_t *ints[3] = {ints_a, ints_b, ints_c};
    static const char *names[] = {"kernel_shape", "strides", "pads", "dilations", "axes",
                                  "pooled_shape", "output_shape", "output_padding"};
    unsigned seed = 12345;
    /* NN_FUZZ_TRIALS raises the count for a longer local run. */
    const char *env = getenv("NN_FUZZ_TRIALS");
    int trials = env ? atoi(env) : 60;
    for (const ox_kernel_entry *e = ox_kernels_nn; e->op_type; e++) {
        for (int trial = 0; trial < trials; trial++) {
            kcase k;
            kc_init(&k, e->op_type, e->since_version + (trial % 3), 4);
            k.node.domain = (char *)e->domain;
            int nin = (int)((seed = seed * 1103515245u + 12345u) >> 16) % 9;
            for (int i = 0; i < nin; i++) {
                seed = seed * 1103515245u + 12345u;
                if ((seed >> 16) % 7 == 0) continue; /* omitted optional input */
                int rank = (int)((seed >> 8) % 5);
                int64_t dims[4];
                for (int d = 0; d < rank; d++) {
                    seed = seed * 1103515245u + 12345u;
                    dims[d] = (int64_t)((seed >> 16) % 4);
                }
                ox_dtype dt = trial % 60 < 30 ? OX_DT_FLOAT : dts[(seed >> 20) % 7];
                ox_tensor *t = ox_tensor_new(dt, rank, dims);
                assert_non_null(t);
                for (int64_t j = 0; j < t->numel; j++) ox_tensor_set_f64(t, j, (double)((j * 7 + trial) % 5) - 1);
                k.in[i] = ox_rval_tensor(t);
                k.ctx.n_in = i + 1;
            }
            if (trial % 2) {
                for (int a = 0; a < 4; a++) {
                    seed = seed * 1103515245u + 12345u;
                    attr_ints(&k, names[(seed >> 16) % 8], (int)((seed >> 8) % 5), ints[(seed >> 4) % 3]);
                }
                attr_i(&k, "group", trial % 3);
                attr_i(&k, "num_heads", trial % 4);
                attr_i(&k, "hidden_size", trial % 3);
                attr_s(&k, "equation", trial % 4 ? "ij,jk->ik" : "...i,i...->");
            }
            (void)e->fn(&k.ctx);
            kc_free(&k);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sgemm_vs_naive),
        cmocka_unit_test(test_matmul_broadcast),
        cmocka_unit_test(test_gemm_attrs),
        cmocka_unit_test(test_conv_spec_example),
        cmocka_unit_test(test_conv_vs_direct),
        cmocka_unit_test(test_conv_transpose_spec),
        cmocka_unit_test(test_maxpool_indices_and_avgpool),
        cmocka_unit_test(test_batchnorm_spec),
        cmocka_unit_test(test_layernorm_stash),
        cmocka_unit_test(test_quantize_spec),
        cmocka_unit_test(test_einsum),
        cmocka_unit_test(test_rnn_two_steps),
        cmocka_unit_test(test_attention_causal),
        cmocka_unit_test(test_fused_conv),
        cmocka_unit_test(test_fused_matmul),
        cmocka_unit_test(test_skip_layer_norm),
        cmocka_unit_test(test_gelu_family),
        cmocka_unit_test(test_ms_mha),
        cmocka_unit_test(test_ms_attention),
        cmocka_unit_test(test_group_norm_versions),
        cmocka_unit_test(test_fused_gemm_family),
        cmocka_unit_test(test_max_roi_pool),
        cmocka_unit_test(test_threaded_matches_serial),
        cmocka_unit_test(test_random_inputs_no_crash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
