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

#include "exec/dnnl_backend.h"
#include "onnxscope/exec.h"
#include "onnxscope/ir.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng >> 33);
}

static int64_t rint_in(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rnd() % (uint32_t)(hi - lo + 1));
}

static ox_tensor *rand_tensor(int rank, const int64_t *dims)
{
    ox_tensor *t = ox_tensor_new(OX_DT_FLOAT, rank, dims);
    assert_non_null(t);
    float *d = ox_tensor_data(t);
    for (int64_t i = 0; i < t->numel; i++)
        d[i] = (float)((int)(rnd() % 2001) - 1000) / 1000.0f;
    return t;
}

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
    inputs[(*n_inputs)++] = rand_tensor(s->xr, s->xd);
    ox_value *w = ox_graph_value(g, "w");
    if (s->w_input) {
        w->type = ox_type_new_tensor(OX_DT_FLOAT, s->wr, s->wd);
        assert_int_equal(ox_graph_add_input(g, w), OX_OK);
        inputs[(*n_inputs)++] = rand_tensor(s->wr, s->wd);
    } else {
        assert_int_equal(ox_graph_set_initializer(g, w, rand_tensor(s->wr, s->wd)), OX_OK);
    }
    ox_value *in[4] = {x, w, NULL, NULL};
    int nin = 2;
    if (s->br) {
        ox_value *b = ox_graph_value(g, "b");
        assert_int_equal(ox_graph_set_initializer(g, b, rand_tensor(s->br, s->bd)), OX_OK);
        in[2] = b;
        nin = 3;
    }
    if (s->z) {
        ox_value *z = ox_graph_value(g, "z");
        z->type = ox_type_new_tensor(OX_DT_FLOAT, s->zr, s->zd);
        assert_int_equal(ox_graph_add_input(g, z), OX_OK);
        inputs[(*n_inputs)++] = rand_tensor(s->zr, s->zd);
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
    ox_exec_opts o = {.threads = threads};
    ox_exec *e = NULL;
    ox_error err = {0};
    if (ox_exec_new(m, &o, &e, &err))
        fail_msg("plan: %s", err.msg);
    ox_rval *in[4];
    for (int i = 0; i < n_inputs; i++)
        in[i] = ox_rval_tensor(ox_tensor_share(inputs[i]));
    ox_rval *out = NULL;
    ox_status st = OX_OK;
    /* Twice: the second run uses the cached primitive and packed weights. */
    for (int r = 0; r < 2 && st == OX_OK; r++) {
        ox_rval_free(out);
        out = NULL;
        st = ox_exec_run(e, n_inputs, in, 1, &out, &err);
    }
    if (st)
        fail_msg("run: %s", err.msg);
    for (int i = 0; i < n_inputs; i++)
        ox_rval_free(in[i]);
    ox_exec_free(e);
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
    ox_tensor *xf = rand_tensor(2, xd), *wf = rand_tensor(2, wd);
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
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_switch),
        cmocka_unit_test(test_conv_random),
        cmocka_unit_test(test_conv_each_act),
        cmocka_unit_test(test_matmul_random),
        cmocka_unit_test(test_gemm),
        cmocka_unit_test(test_dtype_change),
        cmocka_unit_test(test_summary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
