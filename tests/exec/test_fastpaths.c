/* The transformer fast paths of the executor against the plain ones, on
 * random shapes:
 *  - PyTorch's exported GELU chain run as one pass (src/exec/gelu_chain.c)
 *    against the same graph with ONNXSCOPE_NO_CHAIN_FUSE=1: bit for bit
 *    equal (the fused loop does the same float operations in the same
 *    order), both operand orders, Div and Mul forms, broadcasting constants
 *    (the fallback), a chain whose intermediate has a second reader (not
 *    fused), and the count of nodes that ran;
 *  - one-row products (k_nn/gemv.c) against a double-precision reference,
 *    both B layouts, alpha/beta, odd sizes, with and without a pool;
 *  - MatMul whose B has no batch (folded into one 2-D oneDNN product) and
 *    one-row Gemm/MatMul (declined to our loop) against our own kernels
 *    (ONNXSCOPE_NO_DNNL=1), batched ranks 3-5 with broadcasting. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "exec/k_nn/nn_common.h"
#include "onnxscope/exec.h"
#include "onnxscope/ir.h"
#include "onnxscope/threadpool.h"

#define OX_TEST_SEED 0x2545f4914f6cdd1dull
#include "test_rand.h"

static float rfloat(float scale)
{
    return scale * (float)((int)(rnd() % 20001) - 10000) / 10000.0f;
}

static ox_tensor *rand_tensor(int rank, const int64_t *dims, float scale)
{
    ox_tensor *t = ox_tensor_new(OX_DT_FLOAT, rank, dims);
    assert_non_null(t);
    float *d = ox_tensor_data(t);
    for (int64_t i = 0; i < t->numel; i++)
        d[i] = rfloat(scale);
    return t;
}

static ox_tensor *const_tensor(int rank, const int64_t *dims, float v)
{
    ox_tensor *t = ox_tensor_new(OX_DT_FLOAT, rank, dims);
    assert_non_null(t);
    float *d = ox_tensor_data(t);
    for (int64_t i = 0; i < t->numel; i++)
        d[i] = v;
    return t;
}

static int g_nodes_run;

static void count_hook(void *user, const ox_node *n, int64_t t0, int64_t t1)
{
    (void)user, (void)n, (void)t0, (void)t1;
    g_nodes_run++;
}

/* Runs m twice on one executor (the second run is the steady state) and
 * returns output 0 of the second; *nodes: nodes run in that run. */
static ox_rval *run2(ox_model *m, int n_in, ox_tensor *const *inputs, int threads, int *nodes)
{
    ox_exec_opts o = {.threads = threads, .node_hook = count_hook};
    ox_exec *e = NULL;
    ox_error err = {0};
    if (ox_exec_new(m, &o, &e, &err))
        fail_msg("plan: %s", err.msg);
    ox_rval *in[4];
    for (int i = 0; i < n_in; i++)
        in[i] = ox_rval_tensor(ox_tensor_share(inputs[i]));
    ox_rval *out[4] = {0};
    int n_out = m->graph->n_outputs;
    assert_true(n_out <= 4);
    for (int r = 0; r < 2; r++) {
        for (int i = 0; i < 4; i++) {
            ox_rval_free(out[i]);
            out[i] = NULL;
        }
        g_nodes_run = 0;
        if (ox_exec_run(e, n_in, in, n_out, out, &err))
            fail_msg("run: %s", err.msg);
    }
    for (int i = 1; i < 4; i++)
        ox_rval_free(out[i]);
    if (nodes)
        *nodes = g_nodes_run;
    for (int i = 0; i < n_in; i++)
        ox_rval_free(in[i]);
    ox_exec_free(e);
    return out[0];
}

/* ---- GELU chain ------------------------------------------------------------------ */

typedef struct gelu_spec {
    int rank;
    int64_t dims[5];
    bool div;             /* Div by c1 (else Mul by c1) */
    bool c1_first;        /* Mul(c1, x) */
    bool c2_first;        /* Add(c2, erf) */
    bool a_first;         /* Mul(a, x) */
    int c_rank;           /* rank of the constants (1-element); > rank broadcasts */
    bool extra_reader;    /* the Erf output is also a graph output: no fusion */
} gelu_spec;

static ox_model *gelu_model(const gelu_spec *s)
{
    ox_model *m = ox_model_new();
    assert_non_null(m);
    ox_model_set_opset(m, "", 17);
    ox_graph *g = m->graph ? m->graph : ox_graph_new(m, NULL);
    m->graph = g;
    ox_value *x = ox_graph_value(g, "x");
    x->type = ox_type_new_tensor(OX_DT_FLOAT, s->rank, s->dims);
    assert_int_equal(ox_graph_add_input(g, x), OX_OK);
    int64_t cd[6] = {1, 1, 1, 1, 1, 1};
    ox_value *c1 = ox_graph_value(g, "c1"), *c2 = ox_graph_value(g, "c2");
    ox_value *c3 = ox_graph_value(g, "c3");
    assert_int_equal(ox_graph_set_initializer(
                         g, c1, const_tensor(s->c_rank, cd, s->div ? 1.4142135f : 0.70710677f)),
                     OX_OK);
    assert_int_equal(ox_graph_set_initializer(g, c2, const_tensor(s->c_rank, cd, 1.0f)), OX_OK);
    assert_int_equal(ox_graph_set_initializer(g, c3, const_tensor(0, cd, 0.5f)), OX_OK);
    ox_value *t = ox_graph_value(g, "t"), *e = ox_graph_value(g, "e");
    ox_value *a = ox_graph_value(g, "a"), *mm = ox_graph_value(g, "m");
    ox_value *y = ox_graph_value(g, "y");
    ox_value *in[2];
    in[0] = s->c1_first && !s->div ? c1 : x;
    in[1] = s->c1_first && !s->div ? x : c1;
    ox_node_new(g, s->div ? "Div" : "Mul", "", "first", 2, in, 1, &t);
    in[0] = t;
    ox_node_new(g, "Erf", "", "erf", 1, in, 1, &e);
    in[0] = s->c2_first ? c2 : e;
    in[1] = s->c2_first ? e : c2;
    ox_node_new(g, "Add", "", "add", 2, in, 1, &a);
    in[0] = s->a_first ? a : x;
    in[1] = s->a_first ? x : a;
    ox_node_new(g, "Mul", "", "mul", 2, in, 1, &mm);
    in[0] = mm, in[1] = c3;
    ox_node_new(g, "Mul", "", "half", 2, in, 1, &y);
    assert_int_equal(ox_graph_add_output(g, y), OX_OK);
    if (s->extra_reader)
        assert_int_equal(ox_graph_add_output(g, e), OX_OK);
    return m;
}

static void test_gelu_chain(void **state)
{
    (void)state;
    int fused_cases = 0;
    for (int it = 0; it < 48; it++) {
        gelu_spec s = {0};
        s.rank = (int)rint_in(1, 4);
        for (int i = 0; i < s.rank; i++)
            s.dims[i] = rint_in(1, i == s.rank - 1 ? 70 : 9);
        s.div = it % 2 == 0;
        s.c1_first = (it / 2) % 2;
        s.c2_first = (it / 4) % 2;
        s.a_first = (it / 8) % 2;
        s.c_rank = it % 5 == 0 ? s.rank + 1 : it % 3 == 0 ? 1 : 0;
        s.extra_reader = it % 7 == 3;
        if (it == 1) {   /* one large enough for the thread pool's chunks */
            s.rank = 2, s.dims[0] = 128, s.dims[1] = 1031;
        }
        ox_model *m = gelu_model(&s);
        ox_tensor *x = rand_tensor(s.rank, s.dims, 6.0f);
        float *xd = ox_tensor_data(x);
        /* The special values go through both paths too. */
        if (x->numel > 3) {
            xd[0] = NAN, xd[1] = INFINITY, xd[2] = -INFINITY, xd[3] = 0.0f;
        }
        int threads = (int)(it % 2) + 1, n_fast = 0, n_plain = 0;
        /* The GELU chain alone (an elementwise group would take the
         * extra-reader cases, tests/exec/test_ew_fuse.c). */
        setenv("ONNXSCOPE_NO_EW_FUSE", "1", 1);
        ox_rval *fast = run2(m, 1, &x, threads, &n_fast);
        setenv("ONNXSCOPE_NO_CHAIN_FUSE", "1", 1);
        ox_rval *plain = run2(m, 1, &x, threads, &n_plain);
        unsetenv("ONNXSCOPE_NO_CHAIN_FUSE");
        unsetenv("ONNXSCOPE_NO_EW_FUSE");
        assert_int_equal(fast->kind, OX_RV_TENSOR);
        assert_int_equal(plain->kind, OX_RV_TENSOR);
        assert_int_equal(fast->t->rank, plain->t->rank);
        assert_int_equal(fast->t->numel, plain->t->numel);
        const float *a = ox_tensor_data(fast->t), *b = ox_tensor_data(plain->t);
        for (int64_t i = 0; i < fast->t->numel; i++)
            if (memcmp(&a[i], &b[i], sizeof(float)) && !(isnan(a[i]) && isnan(b[i])))
                fail_msg("gelu case %d element %lld: fused %.9g, plain %.9g", it, (long long)i,
                         a[i], b[i]);
        /* 5 nodes unfused; the Div, Erf and Add do not run when fused. */
        assert_int_equal(n_plain, 5);
        assert_int_equal(n_fast, s.extra_reader ? 5 : 2);
        fused_cases += n_fast == 2;
        ox_rval_free(fast);
        ox_rval_free(plain);
        ox_tensor_free(x);
        ox_model_free(m);
    }
    printf("# %d of 48 GELU chains fused, all bit-equal to the plain nodes\n", fused_cases);
}

/* ---- one-row products ------------------------------------------------------------ */

static void test_gemv_random(void **state)
{
    (void)state;
    ox_thread_pool *pool = ox_thread_pool_new(2);
    for (int it = 0; it < 60; it++) {
        bool tb = it % 2;
        int64_t N = it < 4 ? 1000 + it : rint_in(1, 300), K = it < 4 ? 513 : rint_in(1, 300);
        int64_t ldb = (tb ? K : N) + (it % 3 == 0 ? rint_in(1, 5) : 0);
        float alpha = it % 4 == 0 ? rfloat(2.0f) : 1.0f;
        float beta = it % 5 == 0 ? 0.0f : it % 5 == 1 ? 1.0f : rfloat(1.5f);
        float *a = malloc((size_t)K * sizeof *a);
        float *B = malloc((size_t)(tb ? N : K) * (size_t)ldb * sizeof *B);
        float *c0 = malloc((size_t)N * sizeof *c0), *c = malloc((size_t)N * sizeof *c);
        assert_true(a && B && c0 && c);
        for (int64_t i = 0; i < K; i++)
            a[i] = rfloat(1.0f);
        for (int64_t i = 0; i < (tb ? N : K) * ldb; i++)
            B[i] = rfloat(1.0f);
        for (int64_t j = 0; j < N; j++)
            c0[j] = rfloat(1.0f);
        if (beta == 0.0f)
            c0[0] = NAN;   /* beta 0 ignores C, NaN included */
        for (int pass = 0; pass < 2; pass++) {
            memcpy(c, c0, (size_t)N * sizeof *c);
            if (pass == 0)
                nn_sgemm(false, tb, 1, N, K, alpha, a, K, B, ldb, beta, c, N);
            else
                nn_sgemm_mt(pool, false, tb, 1, N, K, alpha, a, K, B, ldb, beta, c, N);
            for (int64_t j = 0; j < N; j++) {
                double s = 0, sa = 0;
                for (int64_t k = 0; k < K; k++) {
                    double p = (double)a[k] * (tb ? B[j * ldb + k] : B[k * ldb + j]);
                    s += p;
                    sa += fabs(p);
                }
                double want = alpha * s + (beta == 0.0f ? 0.0 : beta * (double)c0[j]);
                double tol = 1e-5 * (fabs(alpha) * sa + (beta == 0.0f ? 0.0 : fabs(beta * (double)c0[j]))) + 1e-6;
                if (!(fabs(c[j] - want) <= tol))
                    fail_msg("gemv case %d (N %lld K %lld tb %d pass %d) col %lld: %.9g vs %.9g",
                             it, (long long)N, (long long)K, tb, pass, (long long)j, c[j], want);
            }
        }
        free(a), free(B), free(c0), free(c);
    }
    ox_thread_pool_free(pool);
}

/* ---- MatMul / Gemm through the executor: oneDNN vs our kernels ------------------- */

static ox_model *mm_model(const char *op, int ra, const int64_t *da, int rb, const int64_t *db,
                          bool b_const, ox_tensor **inputs, int *n_in, int tb)
{
    ox_model *m = ox_model_new();
    assert_non_null(m);
    ox_model_set_opset(m, "", 14);
    ox_graph *g = m->graph ? m->graph : ox_graph_new(m, NULL);
    m->graph = g;
    *n_in = 0;
    ox_value *x = ox_graph_value(g, "x"), *w = ox_graph_value(g, "w");
    x->type = ox_type_new_tensor(OX_DT_FLOAT, ra, da);
    assert_int_equal(ox_graph_add_input(g, x), OX_OK);
    inputs[(*n_in)++] = rand_tensor(ra, da, 1.0f);
    if (b_const) {
        assert_int_equal(ox_graph_set_initializer(g, w, rand_tensor(rb, db, 1.0f)), OX_OK);
    } else {
        w->type = ox_type_new_tensor(OX_DT_FLOAT, rb, db);
        assert_int_equal(ox_graph_add_input(g, w), OX_OK);
        inputs[(*n_in)++] = rand_tensor(rb, db, 1.0f);
    }
    ox_value *in[3] = {x, w, NULL}, *y = ox_graph_value(g, "y");
    int nin = 2;
    if (!strcmp(op, "Gemm")) {
        int64_t n = tb ? db[0] : db[1];
        in[2] = ox_graph_value(g, "c");
        assert_int_equal(ox_graph_set_initializer(g, in[2], rand_tensor(1, &n, 1.0f)), OX_OK);
        nin = 3;
    }
    ox_node *n = ox_node_new(g, op, "", "op", nin, in, 1, &y);
    if (!strcmp(op, "Gemm"))
        ox_node_set_attr_i(n, "transB", tb);
    assert_int_equal(ox_graph_add_output(g, y), OX_OK);
    return m;
}

static void compare_paths(ox_model *m, int n_in, ox_tensor *const *inputs, const char *what)
{
    setenv("ONNXSCOPE_NO_DNNL", "1", 1);
    ox_rval *ref = run2(m, n_in, inputs, 2, NULL);
    unsetenv("ONNXSCOPE_NO_DNNL");
    ox_rval *got = run2(m, n_in, inputs, (int)(rnd() % 2) + 1, NULL);
    assert_int_equal(ref->t->rank, got->t->rank);
    for (int i = 0; i < ref->t->rank; i++)
        assert_int_equal(ref->t->dims[i], got->t->dims[i]);
    const float *a = ox_tensor_data(ref->t), *b = ox_tensor_data(got->t);
    for (int64_t i = 0; i < ref->t->numel; i++) {
        float tol = 1e-4f + 1e-4f * fabsf(a[i]);
        if (!(fabsf(a[i] - b[i]) <= tol))
            fail_msg("%s: element %lld: ours %.7g, fast path %.7g", what, (long long)i, a[i],
                     b[i]);
    }
    ox_rval_free(ref);
    ox_rval_free(got);
}

static void test_matmul_rows(void **state)
{
    (void)state;
    for (int it = 0; it < 40; it++) {
        int ra = (int)rint_in(3, 5), rb = it % 3 == 0 ? 2 : (int)rint_in(2, ra);
        int64_t da[6], db[6];
        int64_t M = it % 4 == 0 ? 1 : rint_in(1, 40), K = rint_in(1, 67), N = rint_in(1, 53);
        for (int i = 0; i < ra - 2; i++)
            da[i] = it % 5 == 0 ? 1 : rint_in(1, 7);
        /* B has no batch: a 2-D weight or leading 1s (the folded case); a
         * few with a real batch keep the batched primitive. */
        for (int i = 0; i < rb - 2; i++)
            db[i] = it % 6 == 5 ? da[i + (ra - rb)] : 1;
        da[ra - 2] = M, da[ra - 1] = K;
        db[rb - 2] = K, db[rb - 1] = N;
        ox_tensor *inputs[2];
        int n_in = 0;
        ox_model *m = mm_model("MatMul", ra, da, rb, db, it % 2 == 0, inputs, &n_in, 0);
        char what[64];
        snprintf(what, sizeof what, "matmul rows case %d", it);
        compare_paths(m, n_in, inputs, what);
        for (int i = 0; i < n_in; i++)
            ox_tensor_free(inputs[i]);
        ox_model_free(m);
    }
}

/* MatMul -> Add(constant row) with the bias fused into the oneDNN
 * primitive (exec.c plan_dnnl_bias), either Add operand order, against our
 * kernels; rows of rank above the product's or full [M, N] biases decline
 * the fusion at run time and must still give the unfused result. */
static void test_matmul_bias(void **state)
{
    (void)state;
    for (int it = 0; it < 32; it++) {
        int ra = (int)rint_in(2, 4);
        int64_t da[4], db[2], M = rint_in(1, 33), K = rint_in(1, 50), N = rint_in(1, 45);
        for (int i = 0; i < ra - 2; i++)
            da[i] = rint_in(1, 4);
        da[ra - 2] = M, da[ra - 1] = K;
        db[0] = K, db[1] = N;
        ox_tensor *inputs[2];
        int n_in = 0;
        ox_model *m = ox_model_new();
        assert_non_null(m);
        ox_model_set_opset(m, "", 14);
        ox_graph *g = m->graph ? m->graph : ox_graph_new(m, NULL);
        m->graph = g;
        ox_value *x = ox_graph_value(g, "x"), *w = ox_graph_value(g, "w");
        x->type = ox_type_new_tensor(OX_DT_FLOAT, ra, da);
        assert_int_equal(ox_graph_add_input(g, x), OX_OK);
        inputs[n_in++] = rand_tensor(ra, da, 1.0f);
        if (it % 4 != 3) {
            assert_int_equal(ox_graph_set_initializer(g, w, rand_tensor(2, db, 1.0f)), OX_OK);
        } else {
            w->type = ox_type_new_tensor(OX_DT_FLOAT, 2, db);
            assert_int_equal(ox_graph_add_input(g, w), OX_OK);
            inputs[n_in++] = rand_tensor(2, db, 1.0f);
        }
        ox_value *prod = ox_graph_value(g, "prod"), *y = ox_graph_value(g, "y");
        ox_value *in[2] = {x, w};
        ox_node_new(g, "MatMul", "", "mm", 2, in, 1, &prod);
        int64_t bd[5] = {1, 1, 1, 1, 1};
        int br = it % 8 == 7 ? ra + 1 : it % 3 == 0 ? 2 : 1;
        bd[br - 1] = N;
        if (it % 8 == 6) {   /* a full [M, N] bias: not a row */
            br = 2, bd[0] = M, bd[1] = N;
        }
        ox_value *bias = ox_graph_value(g, "bias");
        assert_int_equal(ox_graph_set_initializer(g, bias, rand_tensor(br, bd, 1.0f)), OX_OK);
        in[0] = it % 2 ? bias : prod;
        in[1] = it % 2 ? prod : bias;
        ox_node_new(g, "Add", "", "add", 2, in, 1, &y);
        assert_int_equal(ox_graph_add_output(g, y), OX_OK);
        char what[64];
        snprintf(what, sizeof what, "matmul bias case %d", it);
        compare_paths(m, n_in, inputs, what);
        for (int i = 0; i < n_in; i++)
            ox_tensor_free(inputs[i]);
        ox_model_free(m);
    }
}

static void test_one_row_gemm(void **state)
{
    (void)state;
    for (int it = 0; it < 24; it++) {
        int tb = it % 2;
        int64_t K = it < 2 ? 8192 : rint_in(1, 700), N = it < 2 ? 10 : rint_in(1, 40);
        int64_t da[2] = {1, K}, db[2] = {tb ? N : K, tb ? K : N};
        ox_tensor *inputs[2];
        int n_in = 0;
        ox_model *m = mm_model(it % 3 == 2 ? "MatMul" : "Gemm", 2, da, 2, db, it % 4 != 3, inputs,
                               &n_in, it % 3 == 2 ? 0 : tb);
        if (it % 3 == 2 && tb) {   /* MatMul has no transB: use B as [K, N] */
            ox_model_free(m);
            for (int i = 0; i < n_in; i++)
                ox_tensor_free(inputs[i]);
            db[0] = K, db[1] = N;
            m = mm_model("MatMul", 2, da, 2, db, it % 4 != 3, inputs, &n_in, 0);
        }
        char what[64];
        snprintf(what, sizeof what, "one-row case %d", it);
        compare_paths(m, n_in, inputs, what);
        for (int i = 0; i < n_in; i++)
            ox_tensor_free(inputs[i]);
        ox_model_free(m);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gelu_chain),
        cmocka_unit_test(test_gemv_random),
        cmocka_unit_test(test_matmul_rows),
        cmocka_unit_test(test_one_row_gemm),
        cmocka_unit_test(test_matmul_bias),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
