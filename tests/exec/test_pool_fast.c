/* The fast pooling and channels-last paths (src/exec/k_nn/pool_fast.c,
 * nhwc.c, exec.c plan_nhwc_ops) against the plain kernels, on seeded random
 * shapes and attributes:
 * - MaxPool / AveragePool, 1-D, 2-D (and 3-D, which the fast loop leaves to
 *   the generic one), odd sizes, strides, dilations, asymmetric pads,
 *   auto_pad, ceil_mode, count_include_pad, NaN inputs: the separable NCHW
 *   loop against pool.c's generic loop (ONNXSCOPE_NO_FAST_POOL=1);
 * - convolution chains through pooling, global pooling and channel Concat
 *   (a SqueezeNet fire module) where oneDNN's convolutions write NHWC and
 *   our channels-last kernels carry it on: against our own kernels alone
 *   (ONNXSCOPE_NO_DNNL=1 ONNXSCOPE_NO_FAST_POOL=1) and against the oneDNN
 *   run without channels-last pooling/Concat (ONNXSCOPE_NO_NHWC_OPS=1),
 *   including a Concat input that oneDNN declines at run time (an
 *   overridden weight: mixed layouts, converted), a plain Concat input
 *   (planned NCHW), and a Concat that is also a graph output.
 * Without oneDNN the chain cases compare our kernels with themselves. */
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
#include "exec/nhwc_kernels.h"
#include "onnxscope/exec.h"
#include "onnxscope/ir.h"

#define OX_TEST_SEED 0x2545f4914f6cdd1dull
#include "test_rand.h"

static ox_tensor *rand_tensor(int rank, const int64_t *dims, int nan_per_mille)
{
    ox_tensor *t = ox_tensor_new(OX_DT_FLOAT, rank, dims);
    assert_non_null(t);
    float *d = ox_tensor_data(t);
    for (int64_t i = 0; i < t->numel; i++) {
        d[i] = (float)((int)(rnd() % 2001) - 1000) / 1000.0f;
        if (nan_per_mille && (int)(rnd() % 1000) < nan_per_mille)
            d[i] = NAN;
    }
    return t;
}

enum mode {
    PLAIN,        /* our kernels, generic pooling loops */
    FAST_NCHW,    /* our kernels, fast pooling loops */
    DNNL_NCHW_OPS, /* oneDNN convolutions, pooling/Concat plain (NCHW) */
    FULL,         /* oneDNN and channels-last pooling/Concat */
};

static void set_mode(enum mode md)
{
    unsetenv("ONNXSCOPE_NO_DNNL");
    unsetenv("ONNXSCOPE_NO_FAST_POOL");
    unsetenv("ONNXSCOPE_NO_NHWC_OPS");
    if (md == PLAIN || md == FAST_NCHW)
        setenv("ONNXSCOPE_NO_DNNL", "1", 1);
    if (md == PLAIN)
        setenv("ONNXSCOPE_NO_FAST_POOL", "1", 1);
    if (md == DNNL_NCHW_OPS)
        setenv("ONNXSCOPE_NO_NHWC_OPS", "1", 1);
}

static ox_rval *run_model(ox_model *m, ox_tensor *const *inputs, int n_inputs, int threads,
                          enum mode md, int n_out, ox_rval **outs)
{
    set_mode(md);
    run_twice(m, inputs, n_inputs, threads, n_out, outs);
    set_mode(FULL);
    return outs[0];
}

/* Exact (max pooling: the same element is picked; +0 and -0 compare equal)
 * or within tol; NaN only where the reference has NaN. */
static void compare(const ox_rval *ref, const ox_rval *got, float tol, const char *what)
{
    assert_non_null(ref);
    assert_non_null(got);
    assert_int_equal(ref->t->rank, got->t->rank);
    for (int i = 0; i < ref->t->rank; i++)
        assert_int_equal(ref->t->dims[i], got->t->dims[i]);
    const float *p = ox_tensor_data(ref->t), *q = ox_tensor_data(got->t);
    /* Convolution sums in another order differ by a few ulps of the
     * largest values they add up, not of the (possibly cancelled) result:
     * the absolute part of the tolerance scales with the output's range. */
    float scale = 1.0f;
    for (int64_t i = 0; i < ref->t->numel; i++)
        if (isfinite(p[i]) && fabsf(p[i]) > scale)
            scale = fabsf(p[i]);
    for (int64_t i = 0; i < ref->t->numel; i++) {
        bool ok = isnan(p[i]) ? isnan(q[i])
                              : fabsf(p[i] - q[i]) <= tol * scale + tol * fabsf(p[i]);
        if (!ok)
            fail_msg("%s: element %lld: plain %.9g, fast %.9g", what, (long long)i, p[i], q[i]);
    }
}

/* ---- single pooling nodes, NCHW ------------------------------------------------ */

typedef struct pool_spec {
    bool avg;
    int nsp;
    int64_t xd[5], k[3], s[3], d[3], pads[6];
    const char *auto_pad;
    bool has_pads, has_d, ceil, include_pad;
} pool_spec;

/* Random attributes valid for the input (padded input holds the window,
 * pads below the window). */
static void rand_pool(pool_spec *p, int nsp, bool avg, int64_t C, int64_t lo, int64_t hi,
                      const int64_t *fixed)
{
    memset(p, 0, sizeof *p);
    p->avg = avg;
    p->nsp = nsp;
    p->xd[0] = rint_in(1, 2);
    p->xd[1] = C;
    p->has_d = rnd() % 2;
    p->ceil = rnd() % 2;
    p->include_pad = avg && rnd() % 2;
    int ap = (int)(rnd() % 6);
    p->auto_pad = ap == 0 ? "SAME_UPPER" : ap == 1 ? "SAME_LOWER" : ap == 2 ? "VALID" : NULL;
    p->has_pads = !p->auto_pad && rnd() % 4 != 0;
    for (int i = 0; i < nsp; i++) {
        for (;;) {
            int64_t in = fixed ? fixed[i] : rint_in(lo, hi), k = rint_in(1, 4);
            int64_t d = p->has_d ? rint_in(1, 2) : 1, ek = (k - 1) * d + 1;
            int64_t pb = p->has_pads ? rint_in(0, k - 1) : 0;
            int64_t pe = p->has_pads ? rint_in(0, k - 1) : 0;
            if (p->auto_pad && !strcmp(p->auto_pad, "VALID"))
                pb = pe = 0;
            bool same = p->auto_pad && strncmp(p->auto_pad, "SAME", 4) == 0;
            if (!same && in + pb + pe < ek)
                continue;   /* the padded input must hold the window */
            p->xd[2 + i] = in;
            p->k[i] = k;
            p->d[i] = d;
            p->s[i] = rint_in(1, 3);
            p->pads[i] = pb;
            p->pads[i + nsp] = pe;
            break;
        }
    }
}

static void set_pool_attrs(ox_node *n, const pool_spec *p)
{
    ox_node_set_attr_ints(n, "kernel_shape", p->nsp, p->k);
    ox_node_set_attr_ints(n, "strides", p->nsp, p->s);
    if (p->has_d)
        ox_node_set_attr_ints(n, "dilations", p->nsp, p->d);
    if (p->has_pads)
        ox_node_set_attr_ints(n, "pads", 2 * p->nsp, p->pads);
    if (p->auto_pad)
        ox_node_set_attr_s(n, "auto_pad", p->auto_pad);
    ox_node_set_attr_i(n, "ceil_mode", p->ceil);
    if (p->avg)
        ox_node_set_attr_i(n, "count_include_pad", p->include_pad);
}

static ox_model *new_model(void)
{
    ox_model *m = ox_model_new();
    assert_non_null(m);
    ox_model_set_opset(m, "", 19);   /* AveragePool's dilations */
    ox_graph *g = m->graph ? m->graph : ox_graph_new(m, NULL);
    m->graph = g;
    return m;
}

static void pool_case(int nsp, bool avg, int nan_pm)
{
    pool_spec p;
    rand_pool(&p, nsp, avg, rint_in(1, 5), 1, 17, NULL);
    ox_model *m = new_model();
    ox_graph *g = m->graph;
    ox_value *x = ox_graph_value(g, "x"), *y = ox_graph_value(g, "y");
    x->type = ox_type_new_tensor(OX_DT_FLOAT, 2 + nsp, p.xd);
    assert_int_equal(ox_graph_add_input(g, x), OX_OK);
    ox_node *n = ox_node_new(g, avg ? "AveragePool" : "MaxPool", "", "pool", 1, &x, 1, &y);
    set_pool_attrs(n, &p);
    assert_int_equal(ox_graph_add_output(g, y), OX_OK);
    ox_tensor *X = rand_tensor(2 + nsp, p.xd, nan_pm);
    int threads = (int)(rnd() % 2) + 1;
    ox_rval *r[1] = {0}, *f[1] = {0};
    run_model(m, &X, 1, threads, PLAIN, 1, r);
    run_model(m, &X, 1, threads, FAST_NCHW, 1, f);
    char what[256];
    snprintf(what, sizeof what,
             "%s %dD x=[%lld,%lld,%lld,%lld] k=%lld,%lld s=%lld,%lld d=%lld,%lld pads=%lld,%lld,%lld,%lld "
             "auto_pad=%s ceil=%d include_pad=%d",
             avg ? "AveragePool" : "MaxPool", nsp, (long long)p.xd[0], (long long)p.xd[1],
             (long long)p.xd[2], (long long)(nsp > 1 ? p.xd[3] : 0), (long long)p.k[0],
             (long long)p.k[1], (long long)p.s[0], (long long)p.s[1], (long long)p.d[0],
             (long long)p.d[1], (long long)p.pads[0], (long long)p.pads[1],
             (long long)p.pads[2], (long long)p.pads[3], p.auto_pad ? p.auto_pad : "-", p.ceil,
             p.include_pad);
    compare(r[0], f[0], avg ? 1e-6f : 0.0f, what);
    ox_rval_free(r[0]);
    ox_rval_free(f[0]);
    ox_tensor_free(X);
    ox_model_free(m);
}

static void test_pool_nchw_random(void **state)
{
    (void)state;
    for (int i = 0; i < 400; i++)
        pool_case(1 + (i % 7 == 6) + (i % 3 != 0), i % 2 == 1, i % 5 == 0 ? 50 : 0);
}

/* Wide rows (past the fast loop's stack scratch) and a 3-D pooling. */
static void test_pool_nchw_wide(void **state)
{
    (void)state;
    for (int i = 0; i < 6; i++) {
        pool_spec p;
        rand_pool(&p, i < 4 ? 1 : 3, i % 2, 2, i < 4 ? 1500 : 3, i < 4 ? 3000 : 9, NULL);
        ox_model *m = new_model();
        ox_graph *g = m->graph;
        ox_value *x = ox_graph_value(g, "x"), *y = ox_graph_value(g, "y");
        x->type = ox_type_new_tensor(OX_DT_FLOAT, 2 + p.nsp, p.xd);
        assert_int_equal(ox_graph_add_input(g, x), OX_OK);
        ox_node *n = ox_node_new(g, p.avg ? "AveragePool" : "MaxPool", "", "pool", 1, &x, 1, &y);
        set_pool_attrs(n, &p);
        assert_int_equal(ox_graph_add_output(g, y), OX_OK);
        ox_tensor *X = rand_tensor(2 + p.nsp, p.xd, 0);
        ox_rval *r[1] = {0}, *f[1] = {0};
        run_model(m, &X, 1, 2, PLAIN, 1, r);
        run_model(m, &X, 1, 2, FAST_NCHW, 1, f);
        compare(r[0], f[0], p.avg ? 1e-6f : 0.0f, p.avg ? "wide AveragePool" : "wide MaxPool");
        ox_rval_free(r[0]);
        ox_rval_free(f[0]);
        ox_tensor_free(X);
        ox_model_free(m);
    }
}

/* ---- convolution chains through channels-last pooling and Concat ------------------ */

static int n_chain_cases, n_nhwc_cases;

static ox_value *conv(ox_graph *g, ox_tensor **keep, int *nkeep, const char *name, ox_value *x,
                      int64_t cin, int64_t cout, int64_t k, bool relu)
{
    char nm[64];
    int64_t wd[4] = {cout, cin, k, k}, bd[1] = {cout};
    snprintf(nm, sizeof nm, "%s_w", name);
    ox_value *w = ox_graph_value(g, nm);
    ox_tensor *wt = rand_tensor(4, wd, 0);
    keep[(*nkeep)++] = ox_tensor_share(wt);
    assert_int_equal(ox_graph_set_initializer(g, w, wt), OX_OK);
    snprintf(nm, sizeof nm, "%s_b", name);
    ox_value *b = ox_graph_value(g, nm);
    assert_int_equal(ox_graph_set_initializer(g, b, rand_tensor(1, bd, 0)), OX_OK);
    snprintf(nm, sizeof nm, "%s_out", name);
    ox_value *y = ox_graph_value(g, nm), *in[3] = {x, w, b};
    ox_node *n = ox_node_new(g, "Conv", "", name, 3, in, 1, &y);
    if (k > 1) {
        int64_t pads[4] = {k / 2, k / 2, k / 2, k / 2};
        ox_node_set_attr_ints(n, "pads", 4, pads);
    }
    if (!relu)
        return y;
    snprintf(nm, sizeof nm, "%s_relu", name);
    ox_value *r = ox_graph_value(g, nm);
    ox_node_new(g, "Relu", "", nm, 1, &y, 1, &r);
    return r;
}

enum chain_kind {
    CH_POOL,       /* conv -> relu -> pool -> conv */
    CH_GLOBAL,     /* conv -> relu -> global pool (output) */
    CH_FIRE,       /* squeeze -> expand 1x1 / 3x3 -> Concat -> MaxPool -> conv */
    CH_FIRE_OVERRIDE, /* the 3x3 expand's weights overridden by the run */
    CH_FIRE_PLAIN_IN, /* a third Concat input that no convolution made */
    CH_FIRE_CAT_OUT,  /* the Concat is also a graph output */
};

/* large: SqueezeNet-sized (56x56, 128 Concat channels), so that pooling and
 * Concat split over the pool's threads (small cases run in one chunk). */
static void chain_case(enum chain_kind kind, bool large)
{
    int64_t N = rint_in(1, 2), C = rint_in(1, 12), H = rint_in(3, 14), W = rint_in(3, 14);
    if (large)
        N = 1, C = 16, H = 56, W = 57;
    ox_model *m = new_model();
    ox_graph *g = m->graph;
    int64_t xd[4] = {N, C, H, W};
    ox_value *x = ox_graph_value(g, "x");
    x->type = ox_type_new_tensor(OX_DT_FLOAT, 4, xd);
    assert_int_equal(ox_graph_add_input(g, x), OX_OK);
    ox_tensor *keep[16];
    int nkeep = 0, n_in = 1, n_out = 1;
    ox_tensor *inputs[3] = {rand_tensor(4, xd, 0), NULL, NULL};
    ox_value *out = NULL, *out2 = NULL;
    int64_t M = large ? 16 : rint_in(1, 24);
    ox_value *a = conv(g, keep, &nkeep, "c1", x, C, M, rnd() % 2 ? 3 : 1, true);
    if (kind == CH_POOL) {
        pool_spec p;
        int64_t hw[2] = {H, W};
        rand_pool(&p, 2, rnd() % 2, M, 1, 1, hw);
        ox_value *pv = ox_graph_value(g, "pooled");
        ox_node *n = ox_node_new(g, p.avg ? "AveragePool" : "MaxPool", "", "pool", 1, &a, 1, &pv);
        set_pool_attrs(n, &p);
        out = conv(g, keep, &nkeep, "c2", pv, M, rint_in(1, 16), 1, false);
    } else if (kind == CH_GLOBAL) {
        out = ox_graph_value(g, "gp");
        ox_node_new(g, rnd() % 2 ? "GlobalAveragePool" : "GlobalMaxPool", "", "gp", 1, &a, 1,
                    &out);
    } else {
        int64_t E1 = large ? 64 : rint_in(1, 20), E3 = large ? 64 : rint_in(1, 20);
        ox_value *e1 = conv(g, keep, &nkeep, "e1", a, M, E1, 1, true);
        ox_value *e3 = conv(g, keep, &nkeep, "e3", a, M, E3, 3, true);
        ox_value *cin[3] = {e1, e3, NULL};
        int ncat = 2;
        int64_t Ccat = E1 + E3;
        if (kind == CH_FIRE_OVERRIDE) {
            /* IR < 4 style: e3's weights are also a graph input the run
             * overrides; oneDNN declines that node, whose output is then
             * plain beside e1's channels-last one. */
            ox_value *w = ox_graph_value(g, "e3_w");
            int64_t wd[4] = {E3, M, 3, 3};
            w->type = ox_type_new_tensor(OX_DT_FLOAT, 4, wd);
            assert_int_equal(ox_graph_add_input(g, w), OX_OK);
            inputs[n_in++] = rand_tensor(4, wd, 0);
        }
        if (kind == CH_FIRE_PLAIN_IN) {
            int64_t zd[4] = {N, rint_in(1, 6), H, W};
            ox_value *z = ox_graph_value(g, "z"), *zr = ox_graph_value(g, "zr");
            z->type = ox_type_new_tensor(OX_DT_FLOAT, 4, zd);
            assert_int_equal(ox_graph_add_input(g, z), OX_OK);
            inputs[n_in++] = rand_tensor(4, zd, 0);
            ox_node_new(g, "Relu", "", "zrelu", 1, &z, 1, &zr);
            cin[ncat++] = zr;
            Ccat += zd[1];
        }
        ox_value *cat = ox_graph_value(g, "cat");
        ox_node *cn = ox_node_new(g, "Concat", "", "cat", ncat, cin, 1, &cat);
        ox_node_set_attr_i(cn, "axis", rnd() % 2 ? 1 : -3);
        ox_value *mp = ox_graph_value(g, "mp");
        ox_node *pn = ox_node_new(g, "MaxPool", "", "mp", 1, &cat, 1, &mp);
        int64_t k2[2] = {3, 3}, s2[2] = {2, 2};
        ox_node_set_attr_ints(pn, "kernel_shape", 2, k2);
        ox_node_set_attr_ints(pn, "strides", 2, s2);
        ox_node_set_attr_i(pn, "ceil_mode", 1);
        out = conv(g, keep, &nkeep, "c2", mp, Ccat, rint_in(1, 16), 1, true);
        if (kind == CH_FIRE_CAT_OUT) {
            out2 = cat;
            n_out = 2;
        }
    }
    assert_int_equal(ox_graph_add_output(g, out), OX_OK);
    if (out2)
        assert_int_equal(ox_graph_add_output(g, out2), OX_OK);
    int threads = large ? 2 : (int)(rnd() % 2) + 1;
    ox_rval *r[2] = {0}, *n1[2] = {0}, *f[2] = {0};
    run_model(m, inputs, n_in, threads, PLAIN, n_out, r);
    run_model(m, inputs, n_in, threads, DNNL_NCHW_OPS, n_out, n1);
    long before = ox_nhwc_runs();
    run_model(m, inputs, n_in, threads, FULL, n_out, f);
    long ran = ox_nhwc_runs() - before;
    static const char *names[] = {"pool", "global pool", "fire", "fire, overridden expand",
                                  "fire, plain Concat input", "fire, Concat output"};
    char what[160];
    for (int i = 0; i < n_out; i++) {
        snprintf(what, sizeof what, "%s chain (N=%lld C=%lld H=%lld W=%lld M=%lld) output %d",
                 names[kind], (long long)N, (long long)C, (long long)H, (long long)W,
                 (long long)M, i);
        compare(r[i], f[i], 1e-4f, what);
        compare(n1[i], f[i], 1e-4f, what);
        ox_rval_free(r[i]);
        ox_rval_free(n1[i]);
        ox_rval_free(f[i]);
    }
    n_chain_cases++;
    if (ran > 0)
        n_nhwc_cases++;
    /* Where a channels-last kernel must have run (oneDNN present). */
    if (ox_dnnl_enabled() && (kind == CH_POOL || kind == CH_GLOBAL || kind == CH_FIRE))
        assert_true(ran > 0);
    if (kind == CH_FIRE_PLAIN_IN)
        assert_true(ran == 0);   /* the Concat (and so the MaxPool) stays plain */
    for (int i = 0; i < n_in; i++)
        ox_tensor_free(inputs[i]);
    for (int i = 0; i < nkeep; i++)
        ox_tensor_free(keep[i]);
    ox_model_free(m);
}

static void test_nhwc_chains(void **state)
{
    (void)state;
    for (int i = 0; i < 60; i++)
        chain_case((enum chain_kind)(i % 6), false);
    /* Two threads even on a loaded machine (meson sets
     * ONNXSCOPE_THREADS_LOAD_CAP=0 for this test). */
    for (int i = 0; i < 6; i++)
        chain_case((enum chain_kind)i, true);
    printf("# %d chains compared, %d ran channels-last pooling/Concat (oneDNN %s)\n",
           n_chain_cases, n_nhwc_cases, ox_dnnl_enabled() ? "on" : "not built");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pool_nchw_random),
        cmocka_unit_test(test_pool_nchw_wide),
        cmocka_unit_test(test_nhwc_chains),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
