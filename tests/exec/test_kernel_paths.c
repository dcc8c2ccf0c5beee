/* Every heavy kernel path of the executor against a plain reference (issue
 * 14's acceptance): seeded random models (Conv 1-D/2-D/3-D with odd sizes,
 * groups, depthwise, dilations, strides, asymmetric pads, pointwise and
 * im2col-tiled sizes; ConvTranspose with groups, strides, dilations, pads
 * and output_padding; MatMul of ranks 1-4 with batch broadcasting; Gemm with
 * transA/transB, alpha, beta and every C shape, constant or runtime;
 * channels-last Conv chains of random geometry with fused activations, a
 * NCHW-forcing reader and FusedConv with Z) are run by the executor with
 * oneDNN (where built) and with ONNXSCOPE_NO_DNNL=1 (our kernels: AVX2 SGEMM,
 * depthwise stencil, pointwise GEMM, tiled im2col, threaded items), on 1 and
 * 2 threads, and each result is compared with naive loops here in double
 * precision. Where test_dnnl compares the two executor paths with each
 * other, this test also catches a bug both share. Tolerance per element:
 * 1e-4 of the sum of the absolute products that make it, plus 1e-5. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "run_twice.h"

#include "exec/dnnl_backend.h"
#include "onnxscope/exec.h"
#include "onnxscope/ir.h"

#define OX_TEST_SEED 0x853c49e6748fea9bull
#include "test_rand.h"

/* ---- reference values ----------------------------------------------------------- */

/* A reference tensor: values and, per element, the sum of the absolute terms
 * that made it (the scale of its rounding error). */
typedef struct ref {
    int rank;
    int64_t dims[6], n;
    double *v, *a;
} ref;

static ref ref_new(int rank, const int64_t *dims)
{
    ref r = {.rank = rank, .n = 1};
    for (int i = 0; i < rank; i++)
        r.dims[i] = dims[i], r.n *= dims[i];
    r.v = calloc((size_t)(r.n ? r.n : 1), sizeof(double));
    r.a = calloc((size_t)(r.n ? r.n : 1), sizeof(double));
    assert_non_null(r.v);
    assert_non_null(r.a);
    return r;
}

static ref ref_of(const ox_tensor *t)
{
    ref r = ref_new(t->rank, t->dims);
    const float *d = ox_tensor_data(t);
    for (int64_t i = 0; i < r.n; i++)
        r.v[i] = d[i], r.a[i] = fabs(d[i]);
    return r;
}

static void ref_free(ref *r)
{
    free(r->v);
    free(r->a);
    r->v = r->a = NULL;
}

typedef enum { A_NONE, A_RELU, A_CLIP, A_SIGMOID, A_LEAKY } act_kind;

static double act_apply(act_kind k, double v)
{
    switch (k) {
    case A_RELU: return v > 0 ? v : 0;
    case A_CLIP: return v < -0.5 ? -0.5 : v > 0.75 ? 0.75 : v;
    case A_SIGMOID: return 1 / (1 + exp(-v));
    case A_LEAKY: return v >= 0 ? v : 0.1 * v;
    default: return v;
    }
}

static void ref_act(ref *r, act_kind k)
{
    for (int64_t i = 0; i < r->n; i++)
        r->v[i] = act_apply(k, r->v[i]);
}

/* Convolution geometry, 1-3 spatial dims. */
typedef struct cgeo {
    int nsp;
    int64_t group, k[3], s[3], d[3], pb[3], pe[3], op[3];
} cgeo;

static int64_t conv_out(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe)
{
    return (in + pb + pe - ((k - 1) * d + 1)) / s + 1;
}

/* y = conv(x, w) + b, naive, NCHW. */
static ref ref_conv(const ref *x, const ox_tensor *w, const ox_tensor *b, const cgeo *g)
{
    int nsp = g->nsp;
    int64_t N = x->dims[0], C = x->dims[1], M = w->dims[0], Cg = C / g->group, Mg = M / g->group;
    int64_t od[6] = {N, M}, in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, dl[3] = {1, 1, 1};
    int64_t pb[3] = {0}, out[3] = {1, 1, 1};
    for (int i = 0; i < nsp; i++) {
        int j = 3 - nsp + i;
        in[j] = x->dims[2 + i], k[j] = g->k[i], s[j] = g->s[i], dl[j] = g->d[i], pb[j] = g->pb[i];
        out[j] = od[2 + i] = conv_out(in[j], k[j], s[j], dl[j], g->pb[i], g->pe[i]);
    }
    ref y = ref_new(nsp + 2, od);
    const float *W = ox_tensor_data(w), *B = b ? ox_tensor_data(b) : NULL;
    int64_t insz = in[0] * in[1] * in[2], outsz = out[0] * out[1] * out[2], ksz = k[0] * k[1] * k[2];
    for (int64_t n = 0; n < N; n++)
        for (int64_t m = 0; m < M; m++) {
            int64_t gi = m / Mg;
            for (int64_t o = 0; o < outsz; o++) {
                int64_t oz = o / (out[1] * out[2]), oy = o / out[2] % out[1], ox = o % out[2];
                double acc = B ? B[m] : 0, ab = B ? fabs(B[m]) : 0;
                for (int64_t c = 0; c < Cg; c++)
                    for (int64_t kk = 0; kk < ksz; kk++) {
                        int64_t kz = kk / (k[1] * k[2]), ky = kk / k[2] % k[1], kx = kk % k[2];
                        int64_t iz = oz * s[0] - pb[0] + kz * dl[0];
                        int64_t iy = oy * s[1] - pb[1] + ky * dl[1];
                        int64_t ix = ox * s[2] - pb[2] + kx * dl[2];
                        if (iz < 0 || iz >= in[0] || iy < 0 || iy >= in[1] || ix < 0 || ix >= in[2])
                            continue;
                        int64_t xi = (n * C + gi * Cg + c) * insz + (iz * in[1] + iy) * in[2] + ix;
                        double wv = W[(m * Cg + c) * ksz + kk];
                        acc += x->v[xi] * wv;
                        ab += x->a[xi] * fabs(wv);
                    }
                y.v[(n * M + m) * outsz + o] = acc;
                y.a[(n * M + m) * outsz + o] = ab;
            }
        }
    return y;
}

/* y = conv_transpose(x, w) + b: w is [C, M/group, k...]. */
static ref ref_convt(const ref *x, const ox_tensor *w, const ox_tensor *b, const cgeo *g)
{
    int nsp = g->nsp;
    int64_t N = x->dims[0], C = x->dims[1], Mg = w->dims[1], M = Mg * g->group, Cg = C / g->group;
    int64_t od[6] = {N, M}, in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, dl[3] = {1, 1, 1};
    int64_t pb[3] = {0}, out[3] = {1, 1, 1};
    for (int i = 0; i < nsp; i++) {
        int j = 3 - nsp + i;
        in[j] = x->dims[2 + i], k[j] = g->k[i], s[j] = g->s[i], dl[j] = g->d[i], pb[j] = g->pb[i];
        out[j] = od[2 + i] = s[j] * (in[j] - 1) + g->op[i] + (k[j] - 1) * dl[j] + 1 - g->pb[i] - g->pe[i];
    }
    ref y = ref_new(nsp + 2, od);
    const float *W = ox_tensor_data(w), *B = b ? ox_tensor_data(b) : NULL;
    int64_t insz = in[0] * in[1] * in[2], outsz = out[0] * out[1] * out[2], ksz = k[0] * k[1] * k[2];
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++) {
            int64_t gi = c / Cg;
            for (int64_t i = 0; i < insz; i++) {
                int64_t iz = i / (in[1] * in[2]), iy = i / in[2] % in[1], ix = i % in[2];
                double xv = x->v[(n * C + c) * insz + i], xa = x->a[(n * C + c) * insz + i];
                for (int64_t m = 0; m < Mg; m++)
                    for (int64_t kk = 0; kk < ksz; kk++) {
                        int64_t kz = kk / (k[1] * k[2]), ky = kk / k[2] % k[1], kx = kk % k[2];
                        int64_t oz = iz * s[0] - pb[0] + kz * dl[0];
                        int64_t oy = iy * s[1] - pb[1] + ky * dl[1];
                        int64_t ox = ix * s[2] - pb[2] + kx * dl[2];
                        if (oz < 0 || oz >= out[0] || oy < 0 || oy >= out[1] || ox < 0 || ox >= out[2])
                            continue;
                        double wv = W[(c * Mg + m) * ksz + kk];
                        int64_t yi = (n * M + gi * Mg + m) * outsz + (oz * out[1] + oy) * out[2] + ox;
                        y.v[yi] += xv * wv;
                        y.a[yi] += xa * fabs(wv);
                    }
            }
        }
    if (B)
        for (int64_t n = 0; n < N; n++)
            for (int64_t m = 0; m < M; m++)
                for (int64_t o = 0; o < outsz; o++) {
                    y.v[(n * M + m) * outsz + o] += B[m];
                    y.a[(n * M + m) * outsz + o] += fabs(B[m]);
                }
    return y;
}

/* ---- models and runs --------------------------------------------------------------- */

typedef struct mb {
    ox_model *m;
    ox_graph *g;
    ox_tensor *inputs[8];
    int n_in, n_names;
    char names[64][16];
} mb;

static void mb_init(mb *b)
{
    memset(b, 0, sizeof *b);
    b->m = ox_model_new();
    assert_non_null(b->m);
    ox_model_set_opset(b->m, "", 14);
    ox_model_set_opset(b->m, "com.microsoft", 1);
    b->g = b->m->graph ? b->m->graph : ox_graph_new(b->m, NULL);
    b->m->graph = b->g;
}

static ox_value *mb_val(mb *b, const char *hint)
{
    assert_true(b->n_names < 64);
    char *nm = b->names[b->n_names];
    snprintf(nm, 16, "%s%d", hint, b->n_names++);
    return ox_graph_value(b->g, nm);
}

/* A graph input fed with t (kept by the builder). */
static ox_value *mb_input(mb *b, ox_tensor *t)
{
    ox_value *v = mb_val(b, "in");
    v->type = ox_type_new_tensor(OX_DT_FLOAT, t->rank, t->dims);
    assert_int_equal(ox_graph_add_input(b->g, v), OX_OK);
    b->inputs[b->n_in++] = t;
    return v;
}

static ox_value *mb_init_val(mb *b, const ox_tensor *t)
{
    ox_value *v = mb_val(b, "c");
    assert_int_equal(ox_graph_set_initializer(b->g, v, ox_tensor_share(t)), OX_OK);
    return v;
}

static ox_value *mb_act(mb *b, ox_value *x, act_kind k)
{
    if (k == A_NONE)
        return x;
    ox_value *y = mb_val(b, "a");
    if (k == A_CLIP) {
        ox_tensor *lo = ox_tensor_new(OX_DT_FLOAT, 0, NULL), *hi = ox_tensor_new(OX_DT_FLOAT, 0, NULL);
        *(float *)ox_tensor_data(lo) = -0.5f;
        *(float *)ox_tensor_data(hi) = 0.75f;
        ox_value *in[3] = {x, mb_init_val(b, lo), mb_init_val(b, hi)};
        ox_tensor_free(lo);
        ox_tensor_free(hi);
        ox_node_new(b->g, "Clip", "", y->name, 3, in, 1, &y);
        return y;
    }
    const char *op = k == A_RELU ? "Relu" : k == A_SIGMOID ? "Sigmoid" : "LeakyRelu";
    ox_node *n = ox_node_new(b->g, op, "", y->name, 1, &x, 1, &y);
    if (k == A_LEAKY)
        ox_node_set_attr_f(n, "alpha", 0.1f);
    return y;
}

static void set_geo_attrs(ox_node *n, const cgeo *g, bool transpose)
{
    int64_t pads[6];
    for (int i = 0; i < g->nsp; i++)
        pads[i] = g->pb[i], pads[i + g->nsp] = g->pe[i];
    ox_node_set_attr_i(n, "group", g->group);
    ox_node_set_attr_ints(n, "strides", g->nsp, g->s);
    ox_node_set_attr_ints(n, "dilations", g->nsp, g->d);
    ox_node_set_attr_ints(n, "pads", 2 * g->nsp, pads);
    ox_node_set_attr_ints(n, "kernel_shape", g->nsp, g->k);
    if (transpose)
        ox_node_set_attr_ints(n, "output_padding", g->nsp, g->op);
}

static ox_rval *run_model(ox_model *m, ox_tensor *const *inputs, int n_inputs, int threads,
                          bool own)
{
    if (own)
        setenv("ONNXSCOPE_NO_DNNL", "1", 1);
    else
        unsetenv("ONNXSCOPE_NO_DNNL");
    ox_rval *out = NULL;
    run_twice(m, inputs, n_inputs, threads, 1, &out);
    unsetenv("ONNXSCOPE_NO_DNNL");
    return out;
}

static long g_cases, g_dnnl_runs;

/* Runs the model on both paths and thread counts and compares each output
 * with r. With expect_dnnl, a build with oneDNN must have run the model's
 * heavy node(s) there (a primitive that fails to build falls back silently
 * to our kernel, which would leave the fast path untested). */
static void check_model(mb *b, const ref *r, const char *what, bool expect_dnnl)
{
    for (int path = 0; path < 2; path++)
        for (int threads = 1; threads <= 2; threads++) {
            long r0, r1, a;
            ox_dnnl_counts(&r0, &a);
            ox_rval *got = run_model(b->m, b->inputs, b->n_in, threads, path == 0);
            ox_dnnl_counts(&r1, &a);
            if (path == 1) {
                g_dnnl_runs += r1 - r0;
                if (expect_dnnl && ox_dnnl_enabled() && r1 - r0 < 2)
                    fail_msg("%s: oneDNN ran %ld primitives in 2 runs", what, r1 - r0);
            }
            assert_int_equal(got->kind, OX_RV_TENSOR);
            const ox_tensor *t = got->t;
            if (t->rank != r->rank)
                fail_msg("%s: rank %d, want %d", what, t->rank, r->rank);
            for (int i = 0; i < r->rank; i++)
                if (t->dims[i] != r->dims[i])
                    fail_msg("%s: dim %d is %lld, want %lld", what, i, (long long)t->dims[i],
                             (long long)r->dims[i]);
            const float *d = ox_tensor_data(t);
            for (int64_t i = 0; i < r->n; i++) {
                double tol = 1e-4 * r->a[i] + 1e-5;
                if (!(fabs(d[i] - r->v[i]) <= tol))
                    fail_msg("%s (%s, %d thread%s): element %lld: got %.7g, reference %.7g",
                             what, path ? "default path" : "ONNXSCOPE_NO_DNNL=1", threads,
                             threads > 1 ? "s" : "", (long long)i, d[i], r->v[i]);
            }
            ox_rval_free(got);
        }
    g_cases++;
}

static void mb_free(mb *b)
{
    for (int i = 0; i < b->n_in; i++)
        ox_tensor_free(b->inputs[i]);
    ox_model_free(b->m);
}

static act_kind rand_act(void)
{
    static const act_kind k[] = {A_NONE, A_NONE, A_RELU, A_CLIP, A_SIGMOID, A_LEAKY};
    return k[rnd() % 6];
}

/* Random geometry for a convolution of `c` input channels on `in` (nsp dims),
 * with `m` outputs; the output size stays >= 1. */
static cgeo rand_geo(int nsp, const int64_t *in, int64_t c, int64_t *m, bool dw)
{
    cgeo g = {.nsp = nsp, .group = 1};
    if (dw) {
        g.group = c, *m = c * (rnd() % 4 ? 1 : 2);   /* mostly the depthwise stencil */
    } else {
        int64_t cands[4] = {1, 2, 3, 4}, pick = cands[rnd() % 4];
        if (c % pick == 0 && *m % pick == 0)
            g.group = pick;
    }
    for (int i = 0; i < nsp; i++) {
        g.k[i] = rint_in(1, in[i] < 5 ? in[i] : 5);
        g.s[i] = rint_in(1, 3);
        g.d[i] = rint_in(1, 2);
        if ((g.k[i] - 1) * g.d[i] + 1 > in[i])
            g.d[i] = 1;
        g.pb[i] = rint_in(0, g.k[i] - 1);   /* asymmetric on purpose */
        g.pe[i] = rint_in(0, g.k[i] - 1);
    }
    return g;
}

/* ---- Conv --------------------------------------------------------------------------- */

static void conv_case(int it, int nsp, int64_t N, int64_t C, int64_t M, const int64_t *in,
                      bool dw, bool pointwise)
{
    cgeo g = rand_geo(nsp, in, C, &M, dw);
    if (pointwise)
        for (int i = 0; i < nsp; i++)
            g.k[i] = g.s[i] = g.d[i] = 1, g.pb[i] = g.pe[i] = 0;
    int64_t xd[5] = {N, C}, wd[5] = {M, C / g.group};
    for (int i = 0; i < nsp; i++)
        xd[2 + i] = in[i], wd[2 + i] = g.k[i];
    mb b;
    mb_init(&b);
    ox_tensor *X = rand_unit_tensor(nsp + 2, xd), *W = rand_unit_tensor(nsp + 2, wd);
    ox_tensor *B = rnd() % 3 ? rand_unit_tensor(1, &M) : NULL;
    ox_value *ins[3] = {mb_input(&b, X), mb_init_val(&b, W), B ? mb_init_val(&b, B) : NULL};
    ox_value *y = mb_val(&b, "y");
    ox_node *n = ox_node_new(b.g, "Conv", "", "conv", B ? 3 : 2, ins, 1, &y);
    set_geo_attrs(n, &g, false);
    act_kind ak = rand_act();
    y = mb_act(&b, y, ak);
    assert_int_equal(ox_graph_add_output(b.g, y), OX_OK);
    ref rx = ref_of(X);
    ref r = ref_conv(&rx, W, B, &g);
    ref_act(&r, ak);
    char what[160];
    snprintf(what, sizeof what, "conv %d (nsp %d N %lld C %lld M %lld group %lld%s%s)", it, nsp,
             (long long)N, (long long)C, (long long)M, (long long)g.group, dw ? " depthwise" : "",
             pointwise ? " pointwise" : "");
    check_model(&b, &r, what, true);
    ref_free(&rx);
    ref_free(&r);
    ox_tensor_free(W);
    ox_tensor_free(B);
    mb_free(&b);
}

static void test_conv(void **state)
{
    (void)state;
    for (int it = 0; it < 80; it++) {
        int nsp = it % 9 == 8 ? 3 : it % 9 == 7 ? 1 : 2;
        int64_t in[3];
        for (int i = 0; i < nsp; i++)
            in[i] = nsp == 3 ? rint_in(2, 7) : nsp == 1 ? rint_in(1, 40) : rint_in(1, 15);
        /* Some outputs wider than one im2col tile (512 columns). */
        if (it % 6 == 5 && nsp == 2)
            in[0] = rint_in(20, 30), in[1] = rint_in(25, 40);
        if (it % 6 == 5 && nsp == 1)
            in[0] = rint_in(600, 900);
        bool dw = it % 4 == 2, pw = it % 7 == 3;
        conv_case(it, nsp, rint_in(1, 3), rint_in(1, 12), rint_in(1, 13), in, dw, pw);
    }
}

/* ---- ConvTranspose -------------------------------------------------------------------- */

static void test_conv_transpose(void **state)
{
    (void)state;
    for (int it = 0; it < 20; it++) {
        int nsp = it % 7 == 6 ? 1 : it % 7 == 5 ? 3 : 2;
        int64_t N = rint_in(1, 2), group = rint_in(1, 3);
        int64_t C = group * rint_in(1, 4), Mg = rint_in(1, 5);
        cgeo g = {.nsp = nsp, .group = group};
        int64_t xd[5] = {N, C}, wd[5] = {C, Mg};
        for (int i = 0; i < nsp; i++) {
            xd[2 + i] = rint_in(1, nsp == 3 ? 4 : 9);
            g.k[i] = wd[2 + i] = rint_in(1, 4);
            g.s[i] = rint_in(1, 3);
            g.d[i] = rint_in(1, 2);
            g.op[i] = rint_in(0, (g.s[i] > g.d[i] ? g.s[i] : g.d[i]) - 1);
            int64_t full = g.s[i] * (xd[2 + i] - 1) + g.op[i] + (g.k[i] - 1) * g.d[i] + 1;
            g.pb[i] = rint_in(0, g.k[i] - 1);
            g.pe[i] = rint_in(0, g.k[i] - 1);
            while (full - g.pb[i] - g.pe[i] < 1)
                g.pe[i] > 0 ? g.pe[i]-- : g.pb[i]--;
        }
        mb b;
        mb_init(&b);
        ox_tensor *X = rand_unit_tensor(nsp + 2, xd), *W = rand_unit_tensor(nsp + 2, wd);
        int64_t M = Mg * group;
        ox_tensor *B = rnd() % 2 ? rand_unit_tensor(1, &M) : NULL;
        ox_value *ins[3] = {mb_input(&b, X), mb_init_val(&b, W), B ? mb_init_val(&b, B) : NULL};
        ox_value *y = mb_val(&b, "y");
        ox_node *n = ox_node_new(b.g, "ConvTranspose", "", "convt", B ? 3 : 2, ins, 1, &y);
        set_geo_attrs(n, &g, true);
        assert_int_equal(ox_graph_add_output(b.g, y), OX_OK);
        ref rx = ref_of(X);
        ref r = ref_convt(&rx, W, B, &g);
        char what[96];
        snprintf(what, sizeof what, "conv_transpose %d (nsp %d group %lld)", it, nsp,
                 (long long)group);
        check_model(&b, &r, what, false);
        ref_free(&rx);
        ref_free(&r);
        ox_tensor_free(W);
        ox_tensor_free(B);
        mb_free(&b);
    }
}

/* ---- MatMul ------------------------------------------------------------------------------ */

static void test_matmul(void **state)
{
    (void)state;
    for (int it = 0; it < 40; it++) {
        int ra = (int)rint_in(1, 4), rb = (int)rint_in(1, 4);
        int64_t M = rint_in(1, 40), K = rint_in(1, 70), N = rint_in(1, 40);
        if (it % 8 == 7)
            M = rint_in(60, 140), K = rint_in(100, 300), N = rint_in(60, 130);
        int r = ra > rb ? ra : rb;
        int64_t batch[2] = {rint_in(1, 3), rint_in(1, 3)};
        int nb = r > 2 ? r - 2 : 0;
        int64_t ad[4], bd[4];
        /* Batch dims right-aligned to the output's, some broadcast (1). */
        for (int i = 0; i < ra - 2; i++)
            ad[i] = rnd() % 3 == 0 ? 1 : batch[nb - (ra - 2) + i];
        for (int i = 0; i < rb - 2; i++)
            bd[i] = rnd() % 3 == 0 ? 1 : batch[nb - (rb - 2) + i];
        if (ra == 1)
            ad[0] = K;
        else
            ad[ra - 2] = M, ad[ra - 1] = K;
        if (rb == 1)
            bd[0] = K;
        else
            bd[rb - 2] = K, bd[rb - 1] = N;
        bool b_const = rnd() % 2;
        mb b;
        mb_init(&b);
        ox_tensor *A = rand_unit_tensor(ra, ad), *Bt = rand_unit_tensor(rb, bd);
        ox_tensor *Bkeep = b_const ? Bt : NULL;
        ox_value *ins[2] = {mb_input(&b, A), b_const ? mb_init_val(&b, Bt) : mb_input(&b, Bt)};
        ox_value *y = mb_val(&b, "y");
        ox_node_new(b.g, "MatMul", "", "mm", 2, ins, 1, &y);
        act_kind ak = ra >= 2 && rb >= 2 && it % 3 == 0 ? rand_act() : A_NONE;
        y = mb_act(&b, y, ak);
        assert_int_equal(ox_graph_add_output(b.g, y), OX_OK);
        /* Output dims: broadcast batch, then M (unless A is 1-D), N (unless B is). */
        int64_t od[4], obatch[2] = {1, 1};
        int orank = 0;
        for (int i = 0; i < nb; i++) {
            int ia = i - (nb - (ra > 2 ? ra - 2 : 0)), ib = i - (nb - (rb > 2 ? rb - 2 : 0));
            int64_t da = ia >= 0 && ra > 2 ? ad[ia] : 1, db = ib >= 0 && rb > 2 ? bd[ib] : 1;
            obatch[i] = od[orank++] = da > db ? da : db;
        }
        if (ra > 1)
            od[orank++] = M;
        if (rb > 1)
            od[orank++] = N;
        int64_t Mr = ra > 1 ? M : 1, Nr = rb > 1 ? N : 1;
        ref rr = ref_new(orank, od);
        const float *pa = ox_tensor_data(A), *pb = ox_tensor_data(Bt);
        for (int64_t b0 = 0; b0 < obatch[0]; b0++)
            for (int64_t b1 = 0; b1 < obatch[1]; b1++) {
                int64_t ob[2] = {b0, b1};
                /* Offsets of this batch in A and B (broadcast dims read index 0). */
                int64_t oa = 0, obb = 0;
                for (int i = 0; i < nb; i++) {
                    int ia = i - (nb - (ra > 2 ? ra - 2 : 0)), ib = i - (nb - (rb > 2 ? rb - 2 : 0));
                    if (ia >= 0 && ra > 2)
                        oa = oa * ad[ia] + (ad[ia] == 1 ? 0 : ob[i]);
                    if (ib >= 0 && rb > 2)
                        obb = obb * bd[ib] + (bd[ib] == 1 ? 0 : ob[i]);
                }
                int64_t oo = nb == 2 ? b0 * obatch[1] + b1 : nb == 1 ? b0 : 0;
                if (nb < 2 && b1)
                    continue;
                if (nb == 0 && b0)
                    continue;
                for (int64_t i = 0; i < Mr; i++)
                    for (int64_t j = 0; j < Nr; j++) {
                        double acc = 0, ab = 0;
                        for (int64_t q = 0; q < K; q++) {
                            double t = (double)pa[oa * Mr * K + i * K + q] * pb[obb * K * Nr + q * Nr + j];
                            acc += t, ab += fabs(t);
                        }
                        rr.v[(oo * Mr + i) * Nr + j] = acc;
                        rr.a[(oo * Mr + i) * Nr + j] = ab;
                    }
            }
        ref_act(&rr, ak);
        char what[96];
        snprintf(what, sizeof what, "matmul %d (ranks %d x %d, M %lld K %lld N %lld, B %s)", it,
                 ra, rb, (long long)M, (long long)K, (long long)N, b_const ? "constant" : "input");
        check_model(&b, &rr, what, ra >= 2 && rb >= 2 && M > 1);   /* one-row: our GEMV */
        ref_free(&rr);
        ox_tensor_free(Bkeep);
        mb_free(&b);
    }
}

/* ---- Gemm ------------------------------------------------------------------------------------- */

static void test_gemm(void **state)
{
    (void)state;
    static const float alphas[] = {1.0f, 0.5f, -1.25f}, betas[] = {1.0f, 0.0f, 2.0f};
    for (int it = 0; it < 48; it++) {
        int ta = it & 1, tb = (it >> 1) & 1, cshape = it % 7;
        int64_t M = rint_in(1, 35), K = rint_in(1, 50), N = rint_in(1, 37);
        float alpha = alphas[rnd() % 3], beta = betas[rnd() % 3];
        bool b_const = rnd() % 3 != 0, c_const = rnd() % 3 != 0;
        int64_t ad[2] = {ta ? K : M, ta ? M : K}, bd[2] = {tb ? N : K, tb ? K : N};
        /* C: none, (), (1), (N), (1,N), (M,1), (M,N) */
        int64_t cd[2];
        int cr = 0;
        switch (cshape) {
        case 0: cr = -1; break;
        case 1: cr = 0; break;
        case 2: cr = 1, cd[0] = 1; break;
        case 3: cr = 1, cd[0] = N; break;
        case 4: cr = 2, cd[0] = 1, cd[1] = N; break;
        case 5: cr = 2, cd[0] = M, cd[1] = 1; break;
        default: cr = 2, cd[0] = M, cd[1] = N; break;
        }
        mb b;
        mb_init(&b);
        ox_tensor *A = rand_unit_tensor(2, ad), *Bt = rand_unit_tensor(2, bd);
        ox_tensor *Ct = cr >= 0 ? rand_unit_tensor(cr, cd) : NULL;
        ox_value *ins[3] = {mb_input(&b, A), b_const ? mb_init_val(&b, Bt) : mb_input(&b, Bt), NULL};
        if (Ct)
            ins[2] = c_const ? mb_init_val(&b, Ct) : mb_input(&b, Ct);
        ox_value *y = mb_val(&b, "y");
        ox_node *n = ox_node_new(b.g, "Gemm", "", "gemm", Ct ? 3 : 2, ins, 1, &y);
        ox_node_set_attr_i(n, "transA", ta);
        ox_node_set_attr_i(n, "transB", tb);
        ox_node_set_attr_f(n, "alpha", alpha);
        ox_node_set_attr_f(n, "beta", beta);
        act_kind ak = it % 4 == 1 ? rand_act() : A_NONE;
        y = mb_act(&b, y, ak);
        assert_int_equal(ox_graph_add_output(b.g, y), OX_OK);
        int64_t od[2] = {M, N};
        ref r = ref_new(2, od);
        const float *pa = ox_tensor_data(A), *pb = ox_tensor_data(Bt);
        const float *pc = Ct ? ox_tensor_data(Ct) : NULL;
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double acc = 0, ab = 0;
                for (int64_t q = 0; q < K; q++) {
                    double t = (double)(ta ? pa[q * M + i] : pa[i * K + q]) *
                               (tb ? pb[j * K + q] : pb[q * N + j]);
                    acc += t, ab += fabs(t);
                }
                acc *= alpha, ab *= fabs(alpha);
                if (pc) {
                    int64_t ci = cr == 0 ? 0 : cr == 1 ? (cd[0] == 1 ? 0 : j)
                               : (cd[0] == 1 ? 0 : i) * cd[1] + (cd[1] == 1 ? 0 : j);
                    acc += (double)beta * pc[ci];
                    ab += fabs((double)beta * pc[ci]);
                }
                r.v[i * N + j] = acc;
                r.a[i * N + j] = ab;
            }
        ref_act(&r, ak);
        char what[128];
        snprintf(what, sizeof what, "gemm %d (ta %d tb %d alpha %g beta %g C shape %d%s, B %s)", it,
                 ta, tb, alpha, beta, cshape, Ct ? (c_const ? " constant" : " input") : "",
                 b_const ? "constant" : "input");
        check_model(&b, &r, what, false);
        ref_free(&r);
        if (b_const)
            ox_tensor_free(Bt);
        if (Ct && c_const)
            ox_tensor_free(Ct);
        mb_free(&b);
    }
}

/* ---- channels-last chains ------------------------------------------------------------------------ */

/* x -> Conv1 [-> act] -> Conv2 [-> act] -> ... -> ConvK, random geometry per
 * node (groups, depthwise, strides, dilations, asymmetric pads, 1x1), so
 * the edges between oneDNN convolutions may stay channels-last. Either the
 * first value is also read by a non-convolution (ReduceMean over H, W,
 * whose 1x1-projected result is added to the output), or the last node is
 * FusedConv (Relu) whose Z is a 1x1 convolution of the first value. */
static void test_nhwc_chains(void **state)
{
    (void)state;
    for (int it = 0; it < 24; it++) {
        int64_t N = rint_in(1, 2), C = rint_in(1, 12), in[2] = {rint_in(4, 14), rint_in(4, 14)};
        int nconv = (int)rint_in(2, 4);
        bool fused_z = it % 3 == 1, side_reader = it % 3 == 2;
        mb b;
        mb_init(&b);
        int64_t xd[4] = {N, C, in[0], in[1]};
        ox_tensor *X = rand_unit_tensor(4, xd);
        ox_value *cur = mb_input(&b, X);
        ref rcur = ref_of(X);
        ref rfirst = {0};
        ox_value *first = NULL;
        ox_tensor *keep[16];
        int nkeep = 0;
        for (int k = 0; k < nconv; k++) {
            int64_t c = rcur.dims[1], m = rint_in(1, 14), sp[2] = {rcur.dims[2], rcur.dims[3]};
            bool dw = rnd() % 4 == 0;
            cgeo g = rand_geo(2, sp, c, &m, dw);
            if (rnd() % 4 == 0)
                for (int i = 0; i < 2; i++)
                    g.k[i] = g.s[i] = g.d[i] = 1, g.pb[i] = g.pe[i] = 0;
            for (int i = 0; i < 2; i++)   /* keep the chain from shrinking to nothing */
                if (g.s[i] > 1 && conv_out(sp[i], g.k[i], g.s[i], g.d[i], g.pb[i], g.pe[i]) < 3)
                    g.s[i] = 1;
            int64_t wd[4] = {m, c / g.group, g.k[0], g.k[1]};
            ox_tensor *W = keep[nkeep++] = rand_unit_tensor(4, wd);
            ox_tensor *B = keep[nkeep++] = rand_unit_tensor(1, &m);
            bool last = k == nconv - 1;
            ox_value *y = mb_val(&b, "v");
            if (last && fused_z) {
                /* Z: a 1x1 convolution of the first conv's value to this node's output shape;
                 * the shapes must agree, so only when the spatial size did not change. */
                int64_t o0 = conv_out(sp[0], g.k[0], g.s[0], g.d[0], g.pb[0], g.pe[0]);
                int64_t o1 = conv_out(sp[1], g.k[1], g.s[1], g.d[1], g.pb[1], g.pe[1]);
                if (first && rfirst.dims[2] == o0 && rfirst.dims[3] == o1) {
                    int64_t zwd[4] = {m, rfirst.dims[1], 1, 1};
                    ox_tensor *ZW = keep[nkeep++] = rand_unit_tensor(4, zwd);
                    ox_value *z = mb_val(&b, "z");
                    ox_value *zi[2] = {first, mb_init_val(&b, ZW)};
                    ox_node_new(b.g, "Conv", "", z->name, 2, zi, 1, &z);
                    cgeo pw = {.nsp = 2, .group = 1, .k = {1, 1}, .s = {1, 1}, .d = {1, 1}};
                    ref rz = ref_conv(&rfirst, ZW, NULL, &pw);
                    ox_value *fi[4] = {cur, mb_init_val(&b, W), mb_init_val(&b, B), z};
                    ox_node *fn = ox_node_new(b.g, "FusedConv", "com.microsoft", y->name, 4, fi, 1, &y);
                    set_geo_attrs(fn, &g, false);
                    ox_node_set_attr_s(fn, "activation", "Relu");
                    ref rn = ref_conv(&rcur, W, B, &g);
                    for (int64_t i = 0; i < rn.n; i++)
                        rn.v[i] = act_apply(A_RELU, rn.v[i] + rz.v[i]), rn.a[i] += rz.a[i];
                    ref_free(&rz);
                    ref_free(&rcur);
                    rcur = rn;
                    cur = y;
                    break;
                }
            }
            ox_value *ci[3] = {cur, mb_init_val(&b, W), mb_init_val(&b, B)};
            ox_node *n = ox_node_new(b.g, "Conv", "", y->name, 3, ci, 1, &y);
            set_geo_attrs(n, &g, false);
            ref rn = ref_conv(&rcur, W, B, &g);
            act_kind ak = last ? A_NONE : rand_act();
            y = mb_act(&b, y, ak);
            ref_act(&rn, ak);
            ref_free(&rcur);
            rcur = rn;
            cur = y;
            if (k == 0) {
                first = y;
                rfirst = ref_new(rn.rank, rn.dims);
                memcpy(rfirst.v, rn.v, (size_t)rn.n * sizeof(double));
                memcpy(rfirst.a, rn.a, (size_t)rn.n * sizeof(double));
            }
        }
        if (side_reader && first && first != cur) {
            /* The first value also read by ReduceMean over H, W (not a
             * convolution: it must see NCHW), then a 1x1 Conv to the
             * output's channels, added with broadcasting. */
            ox_value *mean = mb_val(&b, "mean"), *proj = mb_val(&b, "proj"), *y = mb_val(&b, "sum");
            ox_node *rn = ox_node_new(b.g, "ReduceMean", "", mean->name, 1, &first, 1, &mean);
            int64_t axes[2] = {2, 3};
            ox_node_set_attr_ints(rn, "axes", 2, axes);
            int64_t pwd[4] = {rcur.dims[1], rfirst.dims[1], 1, 1};
            ox_tensor *PW = keep[nkeep++] = rand_unit_tensor(4, pwd);
            ox_value *pi[2] = {mean, mb_init_val(&b, PW)};
            ox_node_new(b.g, "Conv", "", proj->name, 2, pi, 1, &proj);
            ox_value *ai[2] = {cur, proj};
            ox_node_new(b.g, "Add", "", y->name, 2, ai, 1, &y);
            int64_t md[4] = {rfirst.dims[0], rfirst.dims[1], 1, 1};
            ref rm = ref_new(4, md);
            int64_t hw = rfirst.dims[2] * rfirst.dims[3];
            for (int64_t i = 0; i < rm.n; i++) {
                for (int64_t p = 0; p < hw; p++)
                    rm.v[i] += rfirst.v[i * hw + p] / (double)hw, rm.a[i] += rfirst.a[i * hw + p] / (double)hw;
            }
            cgeo pw = {.nsp = 2, .group = 1, .k = {1, 1}, .s = {1, 1}, .d = {1, 1}};
            ref rp = ref_conv(&rm, PW, NULL, &pw);
            int64_t ohw = rcur.dims[2] * rcur.dims[3];
            for (int64_t i = 0; i < rcur.n; i++)
                rcur.v[i] += rp.v[i / ohw], rcur.a[i] += rp.a[i / ohw];
            ref_free(&rm);
            ref_free(&rp);
            cur = y;
        }
        assert_int_equal(ox_graph_add_output(b.g, cur), OX_OK);
        char what[96];
        snprintf(what, sizeof what, "nhwc chain %d (%d convs, C %lld, %lldx%lld%s%s)", it, nconv,
                 (long long)C, (long long)in[0], (long long)in[1], fused_z ? ", FusedConv Z" : "",
                 side_reader ? ", NCHW side reader" : "");
        check_model(&b, &rcur, what, true);
        ref_free(&rcur);
        ref_free(&rfirst);
        for (int i = 0; i < nkeep; i++)
            ox_tensor_free(keep[i]);
        mb_free(&b);
    }
}

static void test_summary(void **state)
{
    (void)state;
    printf("# %ld models checked on both paths and 1-2 threads; oneDNN ran %ld primitives%s\n",
           g_cases, g_dnnl_runs, ox_dnnl_enabled() ? "" : " (built without oneDNN)");
    /* The default path must have used oneDNN where the build has it. */
    if (ox_dnnl_enabled())
        assert_true(g_dnnl_runs > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv),
        cmocka_unit_test(test_conv_transpose),
        cmocka_unit_test(test_matmul),
        cmocka_unit_test(test_gemm),
        cmocka_unit_test(test_nhwc_chains),
        cmocka_unit_test(test_summary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
