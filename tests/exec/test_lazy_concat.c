/* The lazy channel Concat (exec.c plan_lazy_concat, docs/EXECUTOR.md "Lazy
 * channel Concat"): a channels-last Concat whose readers take its parts
 * directly (channels-last pooling; a oneDNN group-1 Conv run as one
 * primitive per part) is never copied. Seeded random fire-module-like
 * graphs (a squeeze conv, 2-4 expand convs of random channel counts, 1 to
 * 40 so mostly not multiples of 16, 1x1 or 3x3, Concat on axis 1 or -3,
 * batch 1-3) with these readers of the Concat:
 *   a Conv (1x1 or 3x3), a MaxPool/AveragePool then a Conv, both at once;
 *   a part that is also a graph output (written plain: a copy); a part
 *   with a second reader;
 *   a depthwise Conv reader (cannot take parts: the Concat stays a copy);
 *   the Concat also a graph output (stays a copy); a Conv reader with
 *   many output channels (the split costs more: stays a copy); a Conv
 *   reader whose
 *   weights the run overrides (oneDNN declines it: the Concat is written
 *   on demand, then our kernel runs);
 * each against the same graph with the copy (ONNXSCOPE_NO_LAZY_CONCAT=1)
 * and against our own kernels alone (ONNXSCOPE_NO_DNNL=1), on 1 and 2
 * threads, checking that the lazy path ran (or did not) where expected.
 * A Concat on another axis is planned plain, never lazy (also checked).
 * Without oneDNN nothing is channels-last: the cases compare the plain
 * kernels with themselves and the lazy path never runs. */
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

#include "test_rand.h"

enum mode { PLAIN, COPY, LAZY };

static void set_mode(enum mode md)
{
    unsetenv("ONNXSCOPE_NO_DNNL");
    unsetenv("ONNXSCOPE_NO_LAZY_CONCAT");
    if (md == PLAIN)
        setenv("ONNXSCOPE_NO_DNNL", "1", 1);
    if (md == COPY)
        setenv("ONNXSCOPE_NO_LAZY_CONCAT", "1", 1);
}

/* Within tol of the output's range (sums in another order). */
static void compare(const ox_rval *ref, const ox_rval *got, const char *what)
{
    assert_non_null(ref);
    assert_non_null(got);
    assert_int_equal(ref->t->rank, got->t->rank);
    for (int i = 0; i < ref->t->rank; i++)
        assert_int_equal(ref->t->dims[i], got->t->dims[i]);
    const float *p = ox_tensor_data(ref->t), *q = ox_tensor_data(got->t);
    float scale = 1.0f, tol = 1e-4f;
    for (int64_t i = 0; i < ref->t->numel; i++)
        if (fabsf(p[i]) > scale)
            scale = fabsf(p[i]);
    for (int64_t i = 0; i < ref->t->numel; i++)
        if (!(fabsf(p[i] - q[i]) <= tol * scale + tol * fabsf(p[i])))
            fail_msg("%s: element %lld: reference %.9g, lazy %.9g", what, (long long)i, p[i],
                     q[i]);
}

/* A Conv (pads k/2, group g) with random weights and bias, then Relu when
 * asked; *wv gets the weight value. */
static ox_value *conv(ox_graph *g, const char *name, ox_value *x, int64_t cin, int64_t cout,
                      int64_t k, int64_t group, bool relu, ox_value **wv)
{
    char nm[64];
    int64_t wd[4] = {cout, cin / group, k, k}, bd[1] = {cout};
    snprintf(nm, sizeof nm, "%s_w", name);
    ox_value *w = ox_graph_value(g, nm);
    assert_int_equal(ox_graph_set_initializer(g, w, rand_unit_tensor(4, wd)), OX_OK);
    if (wv)
        *wv = w;
    snprintf(nm, sizeof nm, "%s_b", name);
    ox_value *b = ox_graph_value(g, nm);
    assert_int_equal(ox_graph_set_initializer(g, b, rand_unit_tensor(1, bd)), OX_OK);
    snprintf(nm, sizeof nm, "%s_out", name);
    ox_value *y = ox_graph_value(g, nm), *in[3] = {x, w, b};
    ox_node *n = ox_node_new(g, "Conv", "", name, 3, in, 1, &y);
    if (k > 1) {
        int64_t pads[4] = {k / 2, k / 2, k / 2, k / 2};
        ox_node_set_attr_ints(n, "pads", 4, pads);
    }
    if (group > 1)
        ox_node_set_attr_i(n, "group", group);
    if (!relu)
        return y;
    snprintf(nm, sizeof nm, "%s_relu", name);
    ox_value *r = ox_graph_value(g, nm);
    ox_node_new(g, "Relu", "", nm, 1, &y, 1, &r);
    return r;
}

/* A channels-last reader after a Conv reader of the Concat (a global pooling
 * or another Conv), so that the reader writes channels-last as in a CNN:
 * the parts path wants an NHWC output (a plain one takes the copy). */
static ox_value *tail(ox_graph *g, const char *name, ox_value *v)
{
    char nm[64];
    snprintf(nm, sizeof nm, "%s_tail", name);
    ox_value *y = ox_graph_value(g, nm);
    ox_node_new(g, rnd() % 2 ? "GlobalAveragePool" : "GlobalMaxPool", "", nm, 1, &v, 1, &y);
    return y;
}

enum reader {
    R_CONV,        /* Concat -> Conv */
    R_POOL,        /* Concat -> MaxPool/AveragePool -> Conv */
    R_BOTH,        /* Concat -> Conv and Concat -> pool -> Conv */
    R_PART_OUT,    /* an expand conv's output is also a graph output */
    R_PART_SHARED, /* an expand conv's output also read by another Conv */
    R_DEPTHWISE,   /* Concat -> depthwise Conv: no parts, a copy */
    R_CAT_OUT,     /* the Concat is also a graph output: a copy */
    R_OVERRIDE,    /* the Conv reader's weights overridden: written on demand */
    R_AXIS2,       /* Concat on H (axis 2): plain, never lazy */
    R_WIDE,        /* Concat -> Conv with (parts - 1) x its channels >= the
                    * Concat's: the split would cost more than the copy */
    N_READERS
};

static const char *const reader_names[] = {"conv", "pool", "conv+pool", "part output",
                                           "shared part", "depthwise", "Concat output",
                                           "overridden reader", "axis 2", "wide reader"};

/* Output channels of a Conv reading the Concat: below Ccat / (parts - 1)
 * (the split pays, lazy_concat in exec.c), or, for R_WIDE, at least that. */
static int64_t reader_m(enum reader rd, int64_t Ccat, int np)
{
    int64_t lim = (Ccat - 1) / (np - 1);
    if (rd == R_WIDE)
        return (Ccat + np - 2) / (np - 1) + rint_in(0, 8);
    return rint_in(1, lim < 1 ? 1 : lim > 20 ? 20 : lim);
}

static int n_cases, n_lazy_cases;

static void lazy_case(enum reader rd, int threads)
{
    int64_t N = rint_in(1, 3), C = rint_in(1, 12), H = rint_in(4, 15), W = rint_in(4, 15);
    ox_model *m = ox_model_new();
    assert_non_null(m);
    ox_model_set_opset(m, "", 17);
    ox_graph *g = m->graph ? m->graph : ox_graph_new(m, NULL);
    m->graph = g;
    int64_t xd[4] = {N, C, H, W};
    ox_value *x = ox_graph_value(g, "x");
    x->type = ox_type_new_tensor(OX_DT_FLOAT, 4, xd);
    assert_int_equal(ox_graph_add_input(g, x), OX_OK);
    ox_tensor *inputs[2] = {rand_unit_tensor(4, xd), NULL};
    int n_in = 1;
    int64_t S = rint_in(1, 24);
    ox_value *sq = conv(g, "sq", x, C, S, 1, 1, true, NULL);
    int np = (int)rint_in(2, 4);
    ox_value *parts[4];
    int64_t Ccat = 0;
    for (int i = 0; i < np; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "e%d", i);
        int64_t E = rnd() % 4 ? rint_in(1, 40) : 16 * rint_in(1, 2);
        parts[i] = conv(g, nm, sq, S, E, rnd() % 2 ? 3 : 1, 1, rnd() % 4 != 0, NULL);
        Ccat += E;
    }
    ox_value *cat = ox_graph_value(g, "cat");
    ox_node *cn = ox_node_new(g, "Concat", "", "cat", np, parts, 1, &cat);
    ox_node_set_attr_i(cn, "axis", rd == R_AXIS2 ? 2 : rnd() % 2 ? 1 : -3);
    ox_value *outs[3];
    int n_out = 0;
    if (rd == R_AXIS2) {
        /* Same channels on every part for a Concat on H: rebuild with equal E. */
        ox_model_free(m);
        ox_tensor_free(inputs[0]);
        m = ox_model_new();
        ox_model_set_opset(m, "", 17);
        g = m->graph;
        x = ox_graph_value(g, "x");
        x->type = ox_type_new_tensor(OX_DT_FLOAT, 4, xd);
        assert_int_equal(ox_graph_add_input(g, x), OX_OK);
        inputs[0] = rand_unit_tensor(4, xd);
        sq = conv(g, "sq", x, C, S, 1, 1, true, NULL);
        int64_t E = rint_in(1, 40);
        for (int i = 0; i < np; i++) {
            char nm[16];
            snprintf(nm, sizeof nm, "e%d", i);
            parts[i] = conv(g, nm, sq, S, E, 1, 1, true, NULL);
        }
        cat = ox_graph_value(g, "cat");
        cn = ox_node_new(g, "Concat", "", "cat", np, parts, 1, &cat);
        ox_node_set_attr_i(cn, "axis", 2);
        Ccat = E;
    }
    if (rd == R_CONV || rd == R_BOTH || rd == R_PART_OUT || rd == R_PART_SHARED ||
        rd == R_CAT_OUT || rd == R_AXIS2 || rd == R_WIDE)
        outs[n_out++] = tail(g, "rc", conv(g, "rc", cat, Ccat, reader_m(rd, Ccat, np), rnd() % 2 ? 3 : 1,
                                           1, true, NULL));
    if (rd == R_POOL || rd == R_BOTH) {
        ox_value *pv = ox_graph_value(g, "pooled");
        bool avg = rnd() % 2;
        ox_node *pn = ox_node_new(g, avg ? "AveragePool" : "MaxPool", "", "pool", 1, &cat, 1, &pv);
        int64_t k2[2] = {3, 3}, s2[2] = {2, 2};
        ox_node_set_attr_ints(pn, "kernel_shape", 2, k2);
        ox_node_set_attr_ints(pn, "strides", 2, s2);
        ox_node_set_attr_i(pn, "ceil_mode", 1);
        outs[n_out++] = tail(g, "rp", conv(g, "rp", pv, Ccat, rint_in(1, 20), 1, 1, true, NULL));
    }
    if (rd == R_PART_OUT)
        outs[n_out++] = parts[rnd() % (uint32_t)np];
    if (rd == R_PART_SHARED) {
        int i = (int)(rnd() % (uint32_t)np);
        /* The part's channels: its conv's weight dims. */
        char nm[16];
        snprintf(nm, sizeof nm, "e%d_w", i);
        int64_t Ei = ox_graph_find(g, nm)->init->dims[0];
        outs[n_out++] = conv(g, "r2", parts[i], Ei, rint_in(1, 20), 1, 1, true, NULL);
    }
    if (rd == R_DEPTHWISE)
        outs[n_out++] = conv(g, "dw", cat, Ccat, Ccat, 3, Ccat, true, NULL);
    if (rd == R_CAT_OUT)
        outs[n_out++] = cat;
    if (rd == R_OVERRIDE) {
        ox_value *w = NULL;
        int64_t M = reader_m(rd, Ccat, np);
        outs[n_out++] = conv(g, "rc", cat, Ccat, M, 1, 1, true, &w);
        /* IR < 4 style: the weight initializer is also a graph input, and
         * the run gives another tensor: oneDNN declines that node. */
        int64_t wd[4] = {M, Ccat, 1, 1};
        w->type = ox_type_new_tensor(OX_DT_FLOAT, 4, wd);
        assert_int_equal(ox_graph_add_input(g, w), OX_OK);
        inputs[n_in++] = rand_unit_tensor(4, wd);
    }
    for (int i = 0; i < n_out; i++)
        assert_int_equal(ox_graph_add_output(g, outs[i]), OX_OK);
    ox_rval *r[3] = {0}, *c[3] = {0}, *l[3] = {0};
    set_mode(PLAIN);
    run_twice(m, inputs, n_in, threads, n_out, r);
    set_mode(COPY);
    run_twice(m, inputs, n_in, threads, n_out, c);
    long lz0, fl0, pp0, lz1, fl1, pp1, dp0 = ox_dnnl_parts_runs();
    ox_nhwc_lazy_counts(&lz0, &fl0, &pp0);
    set_mode(LAZY);
    run_twice(m, inputs, n_in, threads, n_out, l);
    ox_nhwc_lazy_counts(&lz1, &fl1, &pp1);
    long dp = ox_dnnl_parts_runs() - dp0;
    for (int i = 0; i < n_out; i++) {
        char what[200];
        snprintf(what, sizeof what, "%s (N=%lld C=%lld H=%lld W=%lld S=%lld parts=%d Ccat=%lld, "
                 "%d threads) output %d", reader_names[rd], (long long)N, (long long)C,
                 (long long)H, (long long)W, (long long)S, np, (long long)Ccat, threads, i);
        compare(r[i], l[i], what);
        compare(c[i], l[i], what);
        ox_rval_free(r[i]);
        ox_rval_free(c[i]);
        ox_rval_free(l[i]);
    }
    n_cases++;
    n_lazy_cases += lz1 > lz0;
    if (ox_dnnl_enabled()) {
        /* A part that is a graph output is written plain (NCHW), so its
         * Concat is not channels-last and copies as before. */
        bool lazy = rd != R_DEPTHWISE && rd != R_CAT_OUT && rd != R_AXIS2 && rd != R_PART_OUT &&
                    rd != R_WIDE;
        if (lazy != (lz1 > lz0))
            fail_msg("%s: lazy Concat %s", reader_names[rd], lazy ? "did not run" : "ran");
        /* Conv readers on parts: two runs per reader, none when overridden. */
        bool conv_reader = rd == R_CONV || rd == R_BOTH || rd == R_PART_SHARED;
        assert_true(conv_reader ? dp >= 2 : dp == 0);
        if (rd == R_POOL || rd == R_BOTH)
            assert_true(pp1 - pp0 >= 2);
        if (rd == R_OVERRIDE)
            assert_true(fl1 - fl0 >= 2);   /* written on demand, each run */
        else
            assert_true(fl1 == fl0);
    } else {
        assert_true(lz1 == lz0 && dp == 0);
    }
    for (int i = 0; i < n_in; i++)
        ox_tensor_free(inputs[i]);
    ox_model_free(m);
}

static void test_lazy_concat_random(void **state)
{
    (void)state;
    for (int i = 0; i < N_READERS * 8; i++)
        lazy_case((enum reader)(i % N_READERS), 1 + (i / N_READERS) % 2);
    set_mode(LAZY);
    printf("# %d graphs compared, %d with a lazy Concat (oneDNN %s)\n", n_cases, n_lazy_cases,
           ox_dnnl_enabled() ? "on" : "not built");
}

/* Channels-last global pooling split over channels (k_nn/nhwc.c
 * run_global): wide outputs (65-700 channels, several chunks, batch 1-3)
 * on 1 and 2 threads against our plain kernels. */
static void test_global_pool_split(void **state)
{
    (void)state;
    for (int i = 0; i < 16; i++) {
        int64_t N = rint_in(1, 3), C = rint_in(1, 8), H = rint_in(1, 14), W = rint_in(1, 14);
        int64_t M = rint_in(65, 700);
        ox_model *m = ox_model_new();
        assert_non_null(m);
        ox_model_set_opset(m, "", 17);
        ox_graph *g = m->graph; /* ox_model_new made it */
        int64_t xd[4] = {N, C, H, W};
        ox_value *x = ox_graph_value(g, "x");
        x->type = ox_type_new_tensor(OX_DT_FLOAT, 4, xd);
        assert_int_equal(ox_graph_add_input(g, x), OX_OK);
        ox_value *y = tail(g, "gp", conv(g, "c", x, C, M, rnd() % 2 ? 3 : 1, 1, true, NULL));
        assert_int_equal(ox_graph_add_output(g, y), OX_OK);
        ox_tensor *in = rand_unit_tensor(4, xd);
        ox_rval *r[1] = {0}, *l[1] = {0};
        int threads = 1 + i % 2;
        set_mode(PLAIN);
        run_twice(m, &in, 1, threads, 1, r);
        set_mode(LAZY);
        run_twice(m, &in, 1, threads, 1, l);
        char what[128];
        snprintf(what, sizeof what, "global pool N=%lld M=%lld H=%lld W=%lld, %d threads",
                 (long long)N, (long long)M, (long long)H, (long long)W, threads);
        compare(r[0], l[0], what);
        ox_rval_free(r[0]);
        ox_rval_free(l[0]);
        ox_tensor_free(in);
        ox_model_free(m);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lazy_concat_random),
        cmocka_unit_test(test_global_pool_split),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
