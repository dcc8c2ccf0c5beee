/* The oneDNN paths of the executor (src/exec/dnnl_backend.c) against our
 * own kernels, in one build: every case is a small model (Conv, MatMul,
 * Gemm, FusedConv or FusedGemm, optionally followed by an activation the
 * executor fuses as a post-op) run once with ONNXSCOPE_NO_DNNL=1 and once
 * without, on seeded random shapes and data: odd sizes, groups and
 * depthwise, dilations, asymmetric and SAME pads, 1-D/3-D convolutions,
 * batched MatMul with broadcasting, Gemm transposes, alpha/beta and bias
 * shapes, each fusable activation. Where the build has oneDNN the test also
 * checks that oneDNN ran (and with a post-op when one was fused); without
 * it both runs take our kernels and the comparison is trivially equal. */
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
#include "exec/k_nn/nn_common.h"
#include "onnxscope/exec.h"
#include "onnxscope/ir.h"

#include "test_rand.h"

typedef struct spec {
    const char *op, *domain;
    int xr;
    int64_t xd[6];
    int wr;
    int64_t wd[6];
    bool w_input;         /* weights as a runtime graph input */
    int br;               /* 0: no bias / C */
    int64_t bd[6];
    /* Conv */
    int64_t group;
    int nsp;
    int64_t st[3], dl[3], pads[6];
    bool has_pads;
    const char *auto_pad;
    /* Gemm */
    int ta, tb;
    float alpha, beta;
    /* activation node after the op, or FusedConv/FusedGemm's attribute */
    const char *act;
    float aa, ab;
    bool has_aa, has_ab;
    bool fused_attr;      /* FusedConv/FusedGemm: activation as attribute */
    bool z;               /* FusedConv: Z input (output-shaped) */
    int64_t zd[6];
    int zr;
} spec;

static ox_model *build(const spec *s, ox_tensor **inputs, int *n_inputs)
{
    ox_model *m = ox_model_new();
    assert_non_null(m);
    ox_model_set_opset(m, "", 14);
    ox_model_set_opset(m, "com.microsoft", 1);
    ox_graph *g = m->graph ? m->graph : ox_graph_new(m, NULL);
    m->graph = g;
    *n_inputs = 0;
    ox_value *x = ox_graph_value(g, "x");
    x->type = ox_type_new_tensor(OX_DT_FLOAT, s->xr, s->xd);
    assert_int_equal(ox_graph_add_input(g, x), OX_OK);
    inputs[(*n_inputs)++] = rand_unit_tensor(s->xr, s->xd);
    ox_value *w = ox_graph_value(g, "w");
    if (s->w_input) {
        w->type = ox_type_new_tensor(OX_DT_FLOAT, s->wr, s->wd);
        assert_int_equal(ox_graph_add_input(g, w), OX_OK);
        inputs[(*n_inputs)++] = rand_unit_tensor(s->wr, s->wd);
    } else {
        assert_int_equal(ox_graph_set_initializer(g, w, rand_unit_tensor(s->wr, s->wd)), OX_OK);
    }
    ox_value *in[4] = {x, w, NULL, NULL};
    int nin = 2;
    if (s->br) {
        ox_value *b = ox_graph_value(g, "b");
        assert_int_equal(ox_graph_set_initializer(g, b, rand_unit_tensor(s->br, s->bd)), OX_OK);
        in[2] = b;
        nin = 3;
    }
    if (s->z) {
        ox_value *z = ox_graph_value(g, "z");
        z->type = ox_type_new_tensor(OX_DT_FLOAT, s->zr, s->zd);
        assert_int_equal(ox_graph_add_input(g, z), OX_OK);
        inputs[(*n_inputs)++] = rand_unit_tensor(s->zr, s->zd);
        in[3] = z;
        nin = 4;
    }
    bool act_node = s->act && !s->fused_attr;
    ox_value *mid = ox_graph_value(g, act_node ? "mid" : "y");
    ox_node *n = ox_node_new(g, s->op, s->domain, "op", nin, in, 1, &mid);
    if (s->nsp) {
        ox_node_set_attr_i(n, "group", s->group);
        ox_node_set_attr_ints(n, "strides", s->nsp, s->st);
        ox_node_set_attr_ints(n, "dilations", s->nsp, s->dl);
        if (s->has_pads)
            ox_node_set_attr_ints(n, "pads", 2 * s->nsp, s->pads);
        if (s->auto_pad)
            ox_node_set_attr_s(n, "auto_pad", s->auto_pad);
    }
    if (!strcmp(s->op, "Gemm") || !strcmp(s->op, "FusedGemm")) {
        ox_node_set_attr_i(n, "transA", s->ta);
        ox_node_set_attr_i(n, "transB", s->tb);
        ox_node_set_attr_f(n, "alpha", s->alpha);
        ox_node_set_attr_f(n, "beta", s->beta);
    }
    if (s->fused_attr) {
        ox_node_set_attr_s(n, "activation", s->act);
        if (!strcmp(s->op, "FusedGemm")) {
            if (s->has_aa)
                ox_node_set_attr_f(n, "activation_alpha", s->aa);
            if (s->has_ab)
                ox_node_set_attr_f(n, "activation_beta", s->ab);
        } else if (s->has_aa) {
            float p[2] = {s->aa, s->ab};
            ox_attr a = {.name = "activation_params", .type = OX_ATTR_FLOATS,
                         .n = s->has_ab ? 2 : 1, .floats = p};
            ox_node_set_attr(n, &a);
        }
    }
    ox_value *y = ox_graph_value(g, "y");
    if (act_node) {
        ox_value *ain[3] = {mid, NULL, NULL};
        int na = 1;
        if (!strcmp(s->act, "Clip")) {
            ox_tensor *lo = ox_tensor_new(OX_DT_FLOAT, 0, NULL);
            ox_tensor *hi = ox_tensor_new(OX_DT_FLOAT, 0, NULL);
            *(float *)ox_tensor_data(lo) = s->aa;
            *(float *)ox_tensor_data(hi) = s->ab;
            ain[1] = ox_graph_value(g, "lo");
            ain[2] = ox_graph_value(g, "hi");
            assert_int_equal(ox_graph_set_initializer(g, ain[1], lo), OX_OK);
            assert_int_equal(ox_graph_set_initializer(g, ain[2], hi), OX_OK);
            na = 3;
        }
        ox_node *an = ox_node_new(g, s->act, "", "act", na, ain, 1, &y);
        if (s->has_aa && strcmp(s->act, "Clip"))
            ox_node_set_attr_f(an, "alpha", s->aa);
        if (s->has_ab && strcmp(s->act, "Clip"))
            ox_node_set_attr_f(an, "beta", s->ab);
    }
    assert_int_equal(ox_graph_add_output(g, y), OX_OK);
    return m;
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

static int n_cases, n_dnnl_cases;

static void check(const spec *s, const char *what)
{
    ox_tensor *inputs[4];
    int n_inputs;
    ox_model *m = build(s, inputs, &n_inputs);
    int threads = (int)(rnd() % 2) + 1;
    ox_rval *ref = run_model(m, inputs, n_inputs, threads, true);
    long r0, a0, r1, a1;
    ox_dnnl_counts(&r0, &a0);
    ox_rval *got = run_model(m, inputs, n_inputs, threads, false);
    ox_dnnl_counts(&r1, &a1);
    assert_int_equal(ref->kind, OX_RV_TENSOR);
    assert_int_equal(got->kind, OX_RV_TENSOR);
    if (ref->t->rank != got->t->rank || ref->t->numel != got->t->numel)
        fail_msg("%s: shapes differ", what);
    for (int i = 0; i < ref->t->rank; i++)
        assert_int_equal(ref->t->dims[i], got->t->dims[i]);
    const float *a = ox_tensor_data(ref->t), *b = ox_tensor_data(got->t);
    for (int64_t i = 0; i < ref->t->numel; i++) {
        float tol = 1e-4f + 1e-4f * fabsf(a[i]);
        if (!(fabsf(a[i] - b[i]) <= tol))
            fail_msg("%s: element %lld: ours %.7g, oneDNN %.7g", what, (long long)i, a[i], b[i]);
    }
    n_cases++;
    unsetenv("ONNXSCOPE_NO_DNNL");
    if (ox_dnnl_enabled()) {
        /* Runtime-weight convolutions stay on our kernel by design. */
        bool expect = !(s->nsp && s->w_input);
        if (expect) {
            if (r1 - r0 != 2)
                fail_msg("%s: oneDNN ran %ld primitives, expected 2", what, r1 - r0);
            if (s->act && a1 - a0 != 2)
                fail_msg("%s: the activation was not fused", what);
            n_dnnl_cases++;
        }
    }
    ox_rval_free(ref);
    ox_rval_free(got);
    for (int i = 0; i < n_inputs; i++)
        ox_tensor_free(inputs[i]);
    ox_model_free(m);
}

/* ---- cases -------------------------------------------------------------------- */

static const char *const acts[] = {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid",
                                   "HardSwish", "Clip"};

static void set_act(spec *s, int i)
{
    s->act = acts[i];
    s->has_aa = s->has_ab = false;
    if (!strcmp(s->act, "LeakyRelu"))
        s->aa = 0.2f, s->has_aa = true;
    if (!strcmp(s->act, "HardSigmoid"))
        s->aa = 0.3f, s->ab = 0.4f, s->has_aa = s->has_ab = true;
    if (!strcmp(s->act, "Clip"))
        s->aa = -0.5f, s->ab = 0.75f, s->has_aa = s->has_ab = true;
}

static spec conv_spec(int nsp, int64_t n, int64_t c, int64_t m, int64_t group, const int64_t *in,
                      const int64_t *k)
{
    spec s = {.op = "Conv", .domain = "", .nsp = nsp, .group = group};
    s.xr = s.wr = nsp + 2;
    s.xd[0] = n, s.xd[1] = c;
    s.wd[0] = m, s.wd[1] = c / group;
    for (int i = 0; i < nsp; i++) {
        s.xd[2 + i] = in[i];
        s.wd[2 + i] = k[i];
        s.st[i] = 1, s.dl[i] = 1;
    }
    return s;
}

static void test_conv_random(void **state)
{
    (void)state;
    for (int it = 0; it < 40; it++) {
        int nsp = it % 8 == 7 ? 3 : it % 8 == 6 ? 1 : 2;
        int64_t group = (int64_t[]){1, 1, 2, 3}[rnd() % 4];
        bool dw = it % 5 == 4;
        int64_t cg = rint_in(1, 5), mg = rint_in(1, 6);
        int64_t c = cg * group, m = mg * group;
        if (dw)
            group = c = m = rint_in(2, 9);
        int64_t in[3], k[3];
        for (int i = 0; i < nsp; i++) {
            in[i] = nsp == 3 ? rint_in(3, 7) : rint_in(5, 17);
            k[i] = rint_in(1, in[i] < 5 ? in[i] : 5);
        }
        spec s = conv_spec(nsp, rint_in(1, 2), c, m, group, in, k);
        s.has_pads = true;
        for (int i = 0; i < nsp; i++) {
            s.st[i] = rint_in(1, 3);
            s.dl[i] = rint_in(1, 2);
            int64_t ek = (k[i] - 1) * s.dl[i] + 1;
            if (ek > in[i])
                s.dl[i] = 1;
            s.pads[i] = rint_in(0, k[i] - 1);          /* asymmetric on purpose */
            s.pads[i + nsp] = rint_in(0, k[i] - 1);
        }
        if (it % 7 == 3) {
            s.has_pads = false;
            s.auto_pad = it % 2 ? "SAME_UPPER" : "SAME_LOWER";
        }
        if (rnd() % 3) {
            s.br = 1;
            s.bd[0] = m;
        }
        if (it % 3 == 0)
            set_act(&s, (int)(rnd() % 7));
        char what[64];
        snprintf(what, sizeof what, "conv case %d", it);
        check(&s, what);
    }
}

static void test_conv_each_act(void **state)
{
    (void)state;
    int64_t in[2] = {9, 11}, k[2] = {3, 3};
    for (int i = 0; i < 7; i++) {
        spec s = conv_spec(2, 1, 6, 10, 2, in, k);
        s.br = 1, s.bd[0] = 10;
        set_act(&s, i);
        check(&s, acts[i]);
        /* FusedConv with the activation as its attribute, and a Z input. */
        spec f = conv_spec(2, 1, 4, 8, 1, in, k);
        f.op = "FusedConv", f.domain = "com.microsoft";
        f.has_pads = true;
        f.pads[0] = f.pads[1] = f.pads[2] = f.pads[3] = 1;
        f.br = 1, f.bd[0] = 8;
        if (strcmp(acts[i], "HardSwish")) {   /* not a FusedConv activation */
            set_act(&f, i);
            f.fused_attr = true;
        }
        f.z = i % 2 == 0;
        f.zr = 4;
        int64_t zd[4] = {1, 8, 9, 11};
        memcpy(f.zd, zd, sizeof zd);
        check(&f, "FusedConv");
    }
    /* Runtime weights: our kernel (the executor must still be right). */
    spec r = conv_spec(2, 1, 3, 4, 1, in, k);
    r.w_input = true;
    set_act(&r, 0);
    check(&r, "runtime-weight conv");
}

static void test_matmul_random(void **state)
{
    (void)state;
    for (int it = 0; it < 30; it++) {
        spec s = {.op = "MatMul", .domain = ""};
        int64_t M = rint_in(1, 37), K = rint_in(1, 45), N = rint_in(1, 29);
        int ra = (int)rint_in(2, 4), rb = it % 3 == 0 ? 2 : (int)rint_in(2, 4);
        int r = ra > rb ? ra : rb;
        int64_t batch[4];
        for (int i = 0; i < r - 2; i++)
            batch[i] = rint_in(1, 3);
        s.xr = ra, s.wr = rb;
        for (int i = 0; i < ra - 2; i++) {
            int64_t bdim = batch[i + (r - ra)];
            s.xd[i] = rnd() % 3 == 0 ? 1 : bdim;    /* broadcast some */
        }
        for (int i = 0; i < rb - 2; i++) {
            int64_t bdim = batch[i + (r - rb)];
            s.wd[i] = rnd() % 3 == 0 ? 1 : bdim;
        }
        s.xd[ra - 2] = M, s.xd[ra - 1] = K;
        s.wd[rb - 2] = K, s.wd[rb - 1] = N;
        s.w_input = it % 2 == 1;
        if (it % 4 == 0)
            set_act(&s, (int)(rnd() % 7));
        char what[64];
        snprintf(what, sizeof what, "matmul case %d", it);
        check(&s, what);
    }
}

static void test_gemm(void **state)
{
    (void)state;
    int it = 0;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int cs = 0; cs < 5; cs++) {
                spec s = {.op = "Gemm", .domain = "", .ta = ta, .tb = tb};
                int64_t M = rint_in(1, 33), K = rint_in(1, 40), N = rint_in(1, 35);
                s.xr = s.wr = 2;
                s.xd[0] = ta ? K : M, s.xd[1] = ta ? M : K;
                s.wd[0] = tb ? N : K, s.wd[1] = tb ? K : N;
                s.alpha = cs == 1 ? 0.5f : 1.0f;
                s.beta = cs == 2 ? 2.0f : 1.0f;
                /* C: none, (N), (1,N), (M,1), (M,N). */
                switch (cs) {
                case 0: break;
                case 1: s.br = 1, s.bd[0] = N; break;
                case 2: s.br = 2, s.bd[0] = 1, s.bd[1] = N; break;
                case 3: s.br = 2, s.bd[0] = M, s.bd[1] = 1; break;
                default: s.br = 2, s.bd[0] = M, s.bd[1] = N; break;
                }
                s.w_input = cs == 3;   /* runtime B with alpha 1 */
                if (it % 3 == 0)
                    set_act(&s, (int)(rnd() % 7));
                char what[64];
                snprintf(what, sizeof what, "gemm ta=%d tb=%d c=%d", ta, tb, cs);
                check(&s, what);
                it++;
            }
    for (int i = 0; i < 7; i++) {
        spec s = {.op = "Gemm", .domain = "", .tb = 1, .alpha = 1, .beta = 1};
        s.xr = s.wr = 2;
        s.xd[0] = 3, s.xd[1] = 17, s.wd[0] = 13, s.wd[1] = 17;
        s.br = 1, s.bd[0] = 13;
        set_act(&s, i);
        check(&s, acts[i]);
        if (!strcmp(acts[i], "HardSwish"))
            continue;
        s.op = "FusedGemm", s.domain = "com.microsoft";
        s.fused_attr = true;
        check(&s, "FusedGemm");
    }
}

/* The env switch: ONNXSCOPE_NO_DNNL=1 turns the backend off. */
/* A MatMul whose inputs are untyped runs float32, then float16 (our kernel:
 * oneDNN takes float32 only), then float32 again: the primitive cached by
 * shape must not be reused for the float16 run (issue 15). */
static void test_dtype_change(void **state)
{
    (void)state;
    ox_model *m = ox_model_new();
    ox_model_set_opset(m, "", 13);
    m->ir_version = 8;
    ox_graph *g = m->graph;
    ox_value *x = ox_graph_value(g, "x"), *w = ox_graph_value(g, "w"), *y = ox_graph_value(g, "y");
    ox_graph_add_input(g, x);   /* no types: any element type runs */
    ox_graph_add_input(g, w);
    int64_t xd[2] = {4, 8}, wd[2] = {8, 5};
    ox_value *ins[2] = {x, w};
    assert_non_null(ox_node_new(g, "MatMul", "", "mm", 2, ins, 1, &y));
    ox_graph_add_output(g, y);
    ox_tensor *xf = rand_unit_tensor(2, xd), *wf = rand_unit_tensor(2, wd);
    ox_tensor *xh = ox_tensor_new(OX_DT_FLOAT16, 2, xd), *wh = ox_tensor_new(OX_DT_FLOAT16, 2, wd);
    for (int64_t i = 0; i < xf->numel; i++)
        ox_tensor_set_f64(xh, i, ox_tensor_get_f64(xf, i));
    for (int64_t i = 0; i < wf->numel; i++)
        ox_tensor_set_f64(wh, i, ox_tensor_get_f64(wf, i));
    ox_exec *e = NULL;
    ox_exec_opts o = {.threads = 1};
    ox_error err = {0};
    assert_int_equal(ox_exec_new(m, &o, &e, &err), OX_OK);
    ox_rval *ref = NULL, *got = NULL;
    for (int r = 0; r < 3; r++) {
        ox_rval *in[2] = {ox_rval_tensor(ox_tensor_share(r == 1 ? xh : xf)),
                          ox_rval_tensor(ox_tensor_share(r == 1 ? wh : wf))};
        ox_rval *out = NULL;
        if (ox_exec_run(e, 2, in, 1, &out, &err))
            fail_msg("run %d: %s", r, err.msg);
        ox_rval_free(in[0]);
        ox_rval_free(in[1]);
        if (r == 0)
            ref = out;
        else if (r == 1)
            got = out;
        else
            ox_rval_free(out);
    }
    assert_int_equal(got->t->numel, ref->t->numel);
    for (int64_t i = 0; i < ref->t->numel; i++) {
        double a = ox_tensor_get_f64(ref->t, i), b = ox_tensor_get_f64(got->t, i);
        if (!(fabs(a - b) <= 1e-2 + 1e-2 * fabs(a)))
            fail_msg("element %lld: float32 %.6g, float16 %.6g", (long long)i, a, b);
    }
    ox_rval_free(ref);
    ox_rval_free(got);
    ox_tensor_free(xf);
    ox_tensor_free(xh);
    ox_tensor_free(wf);
    ox_tensor_free(wh);
    ox_exec_free(e);
    ox_model_free(m);
}

/* Our kernels' own GEMMs (nn_sgemm, nn_sgemm_mt) go to oneDNN's SGEMM when
 * the backend is on: both routes against a double-precision product on
 * random shapes (odd sizes, transposes, padded leading dimensions, alpha,
 * beta 0 over NaN, beta 1 and 0.5). */
static void test_sgemm_random(void **state)
{
    (void)state;
    for (int cs = 0; cs < 60; cs++) {
        int64_t M = rint_in(1, 70), N = rint_in(1, 70), K = rint_in(1, 90);
        if (cs % 10 == 0)
            M = rint_in(100, 300), N = rint_in(60, 200), K = rint_in(60, 200);
        bool ta = rnd() % 2, tb = rnd() % 2, mt = rnd() % 2;
        int64_t lda = (ta ? M : K) + rint_in(0, 3), ldb = (tb ? K : N) + rint_in(0, 3);
        int64_t ldc = N + rint_in(0, 3);
        float alpha = (rnd() % 2) ? 1.0f : 0.75f;
        float beta = (float[]){0.0f, 1.0f, 0.5f}[rnd() % 3];
        int64_t ad[1] = {(ta ? K : M) * lda}, bd[1] = {(tb ? N : K) * ldb}, cd[1] = {M * ldc};
        ox_tensor *A = rand_unit_tensor(1, ad), *B = rand_unit_tensor(1, bd), *C0 = rand_unit_tensor(1, cd);
        const float *a = ox_tensor_data(A), *b = ox_tensor_data(B), *c0 = ox_tensor_data(C0);
        float *got[2];
        ox_thread_pool *pool = ox_thread_pool_new(2);
        for (int own = 0; own < 2; own++) {
            got[own] = malloc((size_t)cd[0] * sizeof(float));
            memcpy(got[own], c0, (size_t)cd[0] * sizeof(float));
            if (beta == 0.0f)
                for (int64_t i = 0; i < M; i++)
                    got[own][i * ldc] = NAN;   /* beta 0 must not read C */
            if (own)
                setenv("ONNXSCOPE_NO_DNNL", "1", 1);
            if (mt)
                ox_nn_sgemm_mt(pool, ta, tb, M, N, K, alpha, a, lda, b, ldb, beta, got[own], ldc);
            else
                ox_nn_sgemm(ta, tb, M, N, K, alpha, a, lda, b, ldb, beta, got[own], ldc);
            unsetenv("ONNXSCOPE_NO_DNNL");
        }
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double acc = 0;
                for (int64_t k = 0; k < K; k++)
                    acc += (double)(ta ? a[k * lda + i] : a[i * lda + k]) *
                           (double)(tb ? b[j * ldb + k] : b[k * ldb + j]);
                double want = alpha * acc + (beta != 0.0f ? beta * c0[i * ldc + j] : 0.0);
                for (int own = 0; own < 2; own++) {
                    double d = fabs(got[own][i * ldc + j] - want);
                    if (!(d <= 1e-4 + 1e-4 * fabs(want)))
                        fail_msg("sgemm case %d (%s, M=%lld N=%lld K=%lld ta=%d tb=%d beta=%g): "
                                 "[%lld,%lld] %.7g, want %.7g", cs, own ? "ours" : "oneDNN",
                                 (long long)M, (long long)N, (long long)K, ta, tb, beta,
                                 (long long)i, (long long)j, got[own][i * ldc + j], want);
                }
            }
        /* Padding columns stay untouched. */
        for (int own = 0; own < 2; own++) {
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = N; j < ldc; j++)
                    assert_true(got[own][i * ldc + j] == c0[i * ldc + j]);
            free(got[own]);
        }
        ox_thread_pool_free(pool);
        ox_tensor_free(A);
        ox_tensor_free(B);
        ox_tensor_free(C0);
    }
}

/* com.microsoft Attention (the strided core reading heads out of the
 * projection, on oneDNN's or our GEMM) against a plain double-precision
 * reference: random B, S, heads, head size, bias, 2-D padding mask_index
 * and unidirectional. */
static void test_ms_attention_random(void **state)
{
    (void)state;
    for (int cs = 0; cs < 24; cs++) {
        int64_t Bn = rint_in(1, 2), S = rint_in(1, 37), H = rint_in(1, 4), hs = rint_in(1, 12);
        int64_t D = H * hs, Din = rint_in(1, 40);
        bool uni = rnd() % 3 == 0, use_mask = rnd() % 2, use_bias = rnd() % 4 != 0;
        ox_model *m = ox_model_new();
        ox_model_set_opset(m, "", 14);
        ox_model_set_opset(m, "com.microsoft", 1);
        ox_graph *g = m->graph ? m->graph : ox_graph_new(m, NULL);
        m->graph = g;
        int64_t xd[3] = {Bn, S, Din}, wd[2] = {Din, 3 * D}, bd[1] = {3 * D}, md[2] = {Bn, S};
        ox_value *x = ox_graph_value(g, "x"), *w = ox_graph_value(g, "w");
        ox_value *bv = ox_graph_value(g, "b"), *mv = ox_graph_value(g, "mask");
        ox_value *y = ox_graph_value(g, "y");
        x->type = ox_type_new_tensor(OX_DT_FLOAT, 3, xd);
        assert_int_equal(ox_graph_add_input(g, x), OX_OK);
        ox_tensor *X = rand_unit_tensor(3, xd), *W = rand_unit_tensor(2, wd), *Bt = rand_unit_tensor(1, bd);
        assert_int_equal(ox_graph_set_initializer(g, w, ox_tensor_share(W)), OX_OK);
        assert_int_equal(ox_graph_set_initializer(g, bv, ox_tensor_share(Bt)), OX_OK);
        ox_tensor *Mk = ox_tensor_new(OX_DT_INT32, 2, md);
        int32_t *mk = ox_tensor_data(Mk);
        for (int64_t i = 0; i < Bn * S; i++)
            mk[i] = (i % S) == 0 || rnd() % 4 != 0;   /* key 0 always visible */
        assert_int_equal(ox_graph_set_initializer(g, mv, ox_tensor_share(Mk)), OX_OK);
        ox_value *ins[4] = {x, w, use_bias ? bv : NULL, use_mask ? mv : NULL};
        ox_node *n = ox_node_new(g, "Attention", "com.microsoft", "attn", 4, ins, 1, &y);
        ox_node_set_attr_i(n, "num_heads", H);
        if (uni)
            ox_node_set_attr_i(n, "unidirectional", 1);
        assert_int_equal(ox_graph_add_output(g, y), OX_OK);
        const float *xp = ox_tensor_data(X), *wp = ox_tensor_data(W), *bp = ox_tensor_data(Bt);
        ox_rval *r[2];
        for (int own = 0; own < 2; own++)
            r[own] = run_model(m, &X, 1, (int)(rnd() % 2) + 1, own);
        /* Reference: P = X W + b; per head softmax(Q K^T / sqrt(hs) + mask) V. */
        double *P = malloc((size_t)(Bn * S * 3 * D) * sizeof(double));
        for (int64_t i = 0; i < Bn * S; i++)
            for (int64_t j = 0; j < 3 * D; j++) {
                double acc = use_bias ? bp[j] : 0.0;
                for (int64_t k = 0; k < Din; k++)
                    acc += (double)xp[i * Din + k] * wp[k * 3 * D + j];
                P[i * 3 * D + j] = acc;
            }
        double *sc = malloc((size_t)S * sizeof(double));
        for (int64_t b = 0; b < Bn; b++)
            for (int64_t h = 0; h < H; h++)
                for (int64_t i = 0; i < S; i++) {
                    double mx = -INFINITY, sum = 0;
                    for (int64_t j = 0; j < S; j++) {
                        double d = 0;
                        for (int64_t e = 0; e < hs; e++)
                            d += P[(b * S + i) * 3 * D + h * hs + e] *
                                 P[(b * S + j) * 3 * D + D + h * hs + e];
                        d /= sqrt((double)hs);
                        if (use_mask && !mk[b * S + j])
                            d += -10000.0;
                        if (uni && j > i)
                            d = -INFINITY;
                        sc[j] = d;
                        if (d > mx)
                            mx = d;
                    }
                    for (int64_t j = 0; j < S; j++)
                        sum += (sc[j] = exp(sc[j] - mx));
                    for (int64_t e = 0; e < hs; e++) {
                        double acc = 0;
                        for (int64_t j = 0; j < S; j++)
                            acc += sc[j] / sum * P[(b * S + j) * 3 * D + 2 * D + h * hs + e];
                        for (int own = 0; own < 2; own++) {
                            float got = ((const float *)ox_tensor_data(r[own]->t))
                                [(b * S + i) * D + h * hs + e];
                            if (!(fabs(got - acc) <= 1e-4 + 1e-4 * fabs(acc)))
                                fail_msg("attention case %d (%s, B=%lld S=%lld H=%lld hs=%lld "
                                         "Din=%lld uni=%d mask=%d): [%lld,%lld,%lld] %.7g, "
                                         "want %.7g", cs, own ? "ours" : "oneDNN GEMMs",
                                         (long long)Bn, (long long)S, (long long)H,
                                         (long long)hs, (long long)Din, uni, use_mask,
                                         (long long)b, (long long)i, (long long)(h * hs + e),
                                         got, acc);
                        }
                    }
                }
        free(sc);
        free(P);
        for (int own = 0; own < 2; own++)
            ox_rval_free(r[own]);
        ox_tensor_free(X);
        ox_tensor_free(W);
        ox_tensor_free(Bt);
        ox_tensor_free(Mk);
        ox_model_free(m);
    }
}

/* Channels-last edges (exec.c plan_nhwc): Conv -> Relu -> Conv(3x3) ->
 * Conv(1x1) with the first value also read by a fourth Conv, their sum the
 * output, on random sizes: the convolutions reading another's output take
 * it NHWC; results equal our kernels'. With `override`, the second Conv's
 * weights are also a graph input (IR < 4 style) that the run overrides:
 * oneDNN declines that node, which then reads its NHWC input converted
 * back to NCHW (run_kernel). */
static void nhwc_case(bool override, bool fused_z)
{
    int64_t N = rint_in(1, 2), C = rint_in(1, 20), H = rint_in(3, 12), W = rint_in(3, 12);
    int64_t M1 = rint_in(1, 24), M2 = rint_in(1, 24), M3 = rint_in(1, 24);
    ox_model *m = ox_model_new();
    ox_model_set_opset(m, "", 14);
    ox_model_set_opset(m, "com.microsoft", 1);
    ox_graph *g = m->graph ? m->graph : ox_graph_new(m, NULL);
    m->graph = g;
    int64_t xd[4] = {N, C, H, W};
    int64_t w1d[4] = {M1, C, 1, 1}, w2d[4] = {M2, M1, 3, 3}, w3d[4] = {M3, M2, 1, 1};
    int64_t w4d[4] = {M3, M1, 1, 1};
    ox_value *x = ox_graph_value(g, "x"), *y = ox_graph_value(g, "y");
    x->type = ox_type_new_tensor(OX_DT_FLOAT, 4, xd);
    assert_int_equal(ox_graph_add_input(g, x), OX_OK);
    const int64_t *wds[4] = {w1d, w2d, w3d, w4d};
    ox_value *w[4];
    ox_tensor *wt[4];
    for (int i = 0; i < 4; i++) {
        char nm[8];
        snprintf(nm, sizeof nm, "w%d", i);
        w[i] = ox_graph_value(g, nm);
        wt[i] = rand_unit_tensor(4, wds[i]);
        assert_int_equal(ox_graph_set_initializer(g, w[i], ox_tensor_share(wt[i])), OX_OK);
    }
    if (override) {
        w[1]->type = ox_type_new_tensor(OX_DT_FLOAT, 4, w2d);
        assert_int_equal(ox_graph_add_input(g, w[1]), OX_OK);
    }
    ox_value *a = ox_graph_value(g, "a"), *ar = ox_graph_value(g, "ar");
    ox_value *b = ox_graph_value(g, "b"), *c3 = ox_graph_value(g, "c3");
    ox_value *c4 = ox_graph_value(g, "c4");
    ox_value *i1[2] = {x, w[0]}, *i2[2] = {ar, w[1]}, *i3[2] = {b, w[2]}, *i4[2] = {ar, w[3]};
    ox_node_new(g, "Conv", "", "c1", 2, i1, 1, &a);
    ox_node_new(g, "Relu", "", "relu", 1, &a, 1, &ar);
    ox_node *n2 = ox_node_new(g, "Conv", "", "c2", 2, i2, 1, &b);
    int64_t pads[4] = {1, 1, 1, 1};
    ox_node_set_attr_ints(n2, "pads", 4, pads);
    ox_node_new(g, "Conv", "", "c4", 2, i4, 1, &c4);
    if (fused_z) {
        /* y = FusedConv(b, w2, Z = c4): a channels-last input with a plain Z
         * seeding the sum post-op (reordered into the primitive's layout). */
        ox_value *fz[4] = {b, w[2], NULL, c4};
        ox_node *fn = ox_node_new(g, "FusedConv", "com.microsoft", "fc3", 4, fz, 1, &y);
        ox_node_set_attr_s(fn, "activation", "Relu");
    } else {
        ox_node_new(g, "Conv", "", "c3", 2, i3, 1, &c3);
        ox_value *ai[2] = {c3, c4};
        ox_node_new(g, "Add", "", "add", 2, ai, 1, &y);
    }
    assert_int_equal(ox_graph_add_output(g, y), OX_OK);
    ox_tensor *X = rand_unit_tensor(4, xd);
    ox_tensor *inputs[2] = {X, override ? rand_unit_tensor(4, w2d) : NULL};
    int threads = (int)(rnd() % 2) + 1;
    ox_rval *ref = run_model(m, inputs, override ? 2 : 1, threads, true);
    ox_rval *got = run_model(m, inputs, override ? 2 : 1, threads, false);
    assert_int_equal(ref->t->numel, got->t->numel);
    const float *p = ox_tensor_data(ref->t), *q = ox_tensor_data(got->t);
    for (int64_t i = 0; i < ref->t->numel; i++)
        if (!(fabsf(p[i] - q[i]) <= 1e-4f + 1e-4f * fabsf(p[i])))
            fail_msg("nhwc chain (N=%lld C=%lld H=%lld W=%lld M=%lld,%lld,%lld, override %d): "
                     "element %lld: ours %.7g, oneDNN %.7g (FusedConv Z %d)", (long long)N, (long long)C,
                     (long long)H, (long long)W, (long long)M1, (long long)M2, (long long)M3,
                     override, (long long)i, p[i], q[i], fused_z);
    ox_rval_free(ref);
    ox_rval_free(got);
    ox_tensor_free(X);
    if (inputs[1])
        ox_tensor_free(inputs[1]);
    for (int i = 0; i < 4; i++)
        ox_tensor_free(wt[i]);
    ox_model_free(m);
}

static void test_nhwc_chain(void **state)
{
    (void)state;
    for (int i = 0; i < 20; i++)
        nhwc_case(i % 4 == 3, i % 4 == 1 || i % 5 == 4);
}

/* Plan-time Conv epilogue chains (exec.c plan_conv_chain, EXECUTOR.md "Fused
 * epilogues at plan time"): zc = Conv1x1(x) first, then y = Conv3x3(x) ->
 * [BatchNormalization] -> [Add/Sum with zc, either operand order] -> [Relu or
 * Clip] -> Conv1x1 (the output), on random sizes; instead of the BN also a
 * Mul and an Add by per-channel constants (folded the same way). The chain's weights, BN
 * parameters and Clip bounds come from initializers or Constant nodes. The chain must run on
 * oneDNN with its post-ops (BN folded into the weights, the residual as a
 * sum post-op whose Z, zc, is channels-last) and equal our kernels' result;
 * with `override` the BN scale is also a graph input (IR < 4) that the run
 * overrides, so the chain takes the plain path: our Conv, then each node's
 * own kernel, with zc converted back from channels-last. */
static ox_value *const_value(ox_graph *g, const char *name, ox_tensor *t, bool node)
{
    ox_value *v = ox_graph_value(g, name);
    if (!node) {
        assert_int_equal(ox_graph_set_initializer(g, v, t), OX_OK);
        return v;
    }
    char nm[40];
    snprintf(nm, sizeof nm, "const_%s", name);
    ox_node *n = ox_node_new(g, "Constant", "", nm, 0, NULL, 1, &v);
    ox_node_set_attr_t(n, "value", t);
    return v;
}

static ox_tensor *scalar_f(float f)
{
    ox_tensor *t = ox_tensor_new(OX_DT_FLOAT, 0, NULL);
    *(float *)ox_tensor_data(t) = f;
    return t;
}

static void chain_case(int bn, int sum, int act, bool const_nodes, bool override)
{
    int64_t N = rint_in(1, 2), C = rint_in(1, 12), H = rint_in(2, 9), W = rint_in(2, 9);
    int64_t M = rint_in(1, 20), M2 = rint_in(1, 8);
    ox_model *m = ox_model_new();
    ox_model_set_opset(m, "", 14);
    ox_graph *g = m->graph ? m->graph : ox_graph_new(m, NULL);
    m->graph = g;
    int64_t xd[4] = {N, C, H, W}, w0d[4] = {M, C, 1, 1}, w1d[4] = {M, C, 3, 3};
    int64_t w2d[4] = {M2, M, 1, 1}, md[1] = {M};
    ox_value *x = ox_graph_value(g, "x"), *y = ox_graph_value(g, "y");
    x->type = ox_type_new_tensor(OX_DT_FLOAT, 4, xd);
    assert_int_equal(ox_graph_add_input(g, x), OX_OK);
    ox_value *w0 = const_value(g, "w0", rand_unit_tensor(4, w0d), false);
    /* The chain's weights from a Constant node too (folded at plan time,
     * then packed by oneDNN like an initializer). */
    ox_value *w1 = const_value(g, "w1", rand_unit_tensor(4, w1d), const_nodes);
    ox_value *w2 = const_value(g, "w2", rand_unit_tensor(4, w2d), false);
    ox_value *b1 = const_value(g, "b1", rand_unit_tensor(1, md), false);
    ox_value *zc = ox_graph_value(g, "zc"), *cur = ox_graph_value(g, "c1");
    ox_value *i0[2] = {x, w0}, *i1[3] = {x, w1, b1};
    ox_node_new(g, "Conv", "", "conv_z", 2, i0, 1, &zc);
    ox_node *c1 = ox_node_new(g, "Conv", "", "conv", 3, i1, 1, &cur);
    int64_t pads[4] = {1, 1, 1, 1};
    ox_node_set_attr_ints(c1, "pads", 4, pads);
    ox_tensor *scale_t = NULL;
    if (bn == 2) {
        /* What `optimize` leaves of a BN it could not fold: Mul by a (M,1,1)
         * constant, then Add of a (1,M,1,1) one as the first operand. */
        int64_t sd[3] = {M, 1, 1}, td[4] = {1, M, 1, 1};
        ox_value *o1 = ox_graph_value(g, "mul_out"), *o2 = ox_graph_value(g, "add_out_c");
        ox_value *mi[2] = {cur, const_value(g, "mul_s", rand_unit_tensor(3, sd), const_nodes)};
        ox_node_new(g, "Mul", "", "mul", 2, mi, 1, &o1);
        ox_value *ai[2] = {const_value(g, "add_t", rand_unit_tensor(4, td), const_nodes), o1};
        ox_node_new(g, "Add", "", "add_c", 2, ai, 1, &o2);
        cur = o2;
    } else if (bn) {
        ox_tensor *var = rand_unit_tensor(1, md);
        float *vp = ox_tensor_data(var);
        for (int64_t i = 0; i < M; i++)
            vp[i] = fabsf(vp[i]) + 0.1f;
        scale_t = rand_unit_tensor(1, md);
        ox_value *bi[5] = {cur, const_value(g, "bn_s", ox_tensor_share(scale_t), const_nodes && !override),
                           const_value(g, "bn_b", rand_unit_tensor(1, md), const_nodes),
                           const_value(g, "bn_m", rand_unit_tensor(1, md), const_nodes),
                           const_value(g, "bn_v", var, const_nodes)};
        if (override) {
            bi[1]->type = ox_type_new_tensor(OX_DT_FLOAT, 1, md);
            assert_int_equal(ox_graph_add_input(g, bi[1]), OX_OK);
        }
        ox_value *o = ox_graph_value(g, "bn_out");
        ox_node *bnn = ox_node_new(g, "BatchNormalization", "", "bn", 5, bi, 1, &o);
        ox_node_set_attr_f(bnn, "epsilon", 1e-3f);
        cur = o;
    }
    if (sum) {
        ox_value *o = ox_graph_value(g, "sum_out");
        ox_value *si[2] = {sum == 2 ? zc : cur, sum == 2 ? cur : zc};
        ox_node_new(g, sum == 3 ? "Sum" : "Add", "", "residual", 2, si, 1, &o);
        cur = o;
    } else {
        /* zc still read: by the output Conv's sibling Add below. */
    }
    if (act) {
        ox_value *o = ox_graph_value(g, "act_out");
        if (act == 1) {
            ox_node_new(g, "Relu", "", "relu", 1, &cur, 1, &o);
        } else {
            ox_value *ai[3] = {cur, const_value(g, "lo", scalar_f(-0.25f), const_nodes),
                               const_value(g, "hi", scalar_f(0.5f), const_nodes)};
            ox_node_new(g, "Clip", "", "clip", 3, ai, 1, &o);
        }
        cur = o;
    }
    ox_value *i2[2] = {cur, w2};
    if (sum) {
        ox_node_new(g, "Conv", "", "conv_out", 2, i2, 1, &y);
    } else {
        ox_value *yc = ox_graph_value(g, "yc"), *w3 = const_value(g, "w3", rand_unit_tensor(4, w2d), false);
        ox_value *i3[2] = {zc, w3}, *ai[2] = {NULL, NULL};
        ox_node_new(g, "Conv", "", "conv_out", 2, i2, 1, &yc);
        ox_value *yz = ox_graph_value(g, "yz");
        ox_node_new(g, "Conv", "", "conv_zout", 2, i3, 1, &yz);
        ai[0] = yc, ai[1] = yz;
        ox_node_new(g, "Add", "", "add_out", 2, ai, 1, &y);
    }
    assert_int_equal(ox_graph_add_output(g, y), OX_OK);
    ox_tensor *X = rand_unit_tensor(4, xd);
    ox_tensor *inputs[2] = {X, NULL};
    if (override) {
        /* The run's own scale: other data than the initializer. */
        inputs[1] = rand_unit_tensor(1, md);
    }
    int threads = (int)(rnd() % 2) + 1;
    ox_rval *ref = run_model(m, inputs, override ? 2 : 1, threads, true);
    long r0, a0, r1, a1;
    ox_dnnl_counts(&r0, &a0);
    ox_rval *got = run_model(m, inputs, override ? 2 : 1, threads, false);
    ox_dnnl_counts(&r1, &a1);
    char what[160];
    snprintf(what, sizeof what,
             "chain bn %d sum %d act %d const nodes %d override %d (N=%lld C=%lld H=%lld W=%lld M=%lld)",
             bn, sum, act, const_nodes, override, (long long)N, (long long)C, (long long)H,
             (long long)W, (long long)M);
    assert_int_equal(ref->t->numel, got->t->numel);
    const float *p = ox_tensor_data(ref->t), *q = ox_tensor_data(got->t);
    for (int64_t i = 0; i < ref->t->numel; i++)
        if (!(fabsf(p[i] - q[i]) <= 1e-4f + 2e-4f * fabsf(p[i])))
            fail_msg("%s: element %lld: ours %.7g, oneDNN %.7g", what, (long long)i, p[i], q[i]);
    if (ox_dnnl_enabled()) {
        /* Two runs: conv_z, the chain's conv (on oneDNN unless overridden),
         * conv_out (+ conv_zout). Post-ops: the chain's, when it has one. */
        long convs = 2 * (3 + (sum ? 0 : 1) - (override ? 1 : 0));
        if (r1 - r0 != convs)
            fail_msg("%s: oneDNN ran %ld primitives, expected %ld", what, r1 - r0, convs);
        if (act && !override && a1 - a0 != 2)
            fail_msg("%s: the activation was not fused (%ld)", what, a1 - a0);
        n_dnnl_cases++;
    }
    n_cases++;
    ox_rval_free(ref);
    ox_rval_free(got);
    ox_tensor_free(X);
    ox_tensor_free(inputs[1]);
    ox_tensor_free(scale_t);
    ox_model_free(m);
}

static void test_conv_chains(void **state)
{
    (void)state;
    for (int i = 0; i < 72; i++) {
        int bn = i % 3, sum = (i / 3) % 4, act = (i / 12) % 3;
        if (!bn && !sum && act != 2)
            continue;   /* plan_dnnl's own epilogue (test_conv_each_act) */
        chain_case(bn, sum, act, i % 3 == 1, false);
    }
    /* An overridden BN parameter: the chain's plain path. */
    for (int i = 0; i < 6; i++)
        chain_case(1, i % 4, i % 3, false, true);
}

static void test_switch(void **state)
{
    (void)state;
    setenv("ONNXSCOPE_NO_DNNL", "1", 1);
    assert_false(ox_dnnl_enabled());
    unsetenv("ONNXSCOPE_NO_DNNL");
    if (!ox_dnnl_enabled())
        printf("# built without oneDNN: both runs used our kernels\n");
    else
        printf("# %s\n", ox_dnnl_version());
}

static void test_summary(void **state)
{
    (void)state;
    printf("# %d cases compared, %d of them on oneDNN\n", n_cases, n_dnnl_cases);
    assert_true(n_cases > 100);
}

int main(void)
{
    /* Every case here is checked to run on oneDNN: one-row products would
     * otherwise take our matrix-vector loop by design (test_fastpaths
     * compares that one with the plain kernels). */
    setenv("ONNXSCOPE_NO_GEMV", "1", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_switch),
        cmocka_unit_test(test_conv_random),
        cmocka_unit_test(test_conv_each_act),
        cmocka_unit_test(test_matmul_random),
        cmocka_unit_test(test_gemm),
        cmocka_unit_test(test_dtype_change),
        cmocka_unit_test(test_sgemm_random),
        cmocka_unit_test(test_nhwc_chain),
        cmocka_unit_test(test_conv_chains),
        cmocka_unit_test(test_ms_attention_random),
        cmocka_unit_test(test_summary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
