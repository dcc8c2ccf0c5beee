/* Softmax, LogSoftmax, Hardmax, CumSum and CumProd: ops along one axis,
 * seen as (outer, n, inner). Before opset 13 the softmax family flattened
 * the input to 2-D at `axis`; from 13 on it works along that single axis. */
/* The build's -O2 does not vectorize on GCC 12; these loops are the hot
 * path of elementwise work, so ask for it here. Without trapping math the
 * min/max selects become branch-free; errno from libm is never read. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "no-trapping-math", "no-math-errno")
#endif

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/k_elementwise/ew.h"
#include "exec/k_elementwise/fastmath.h"
#include "onnxscope/threadpool.h"

enum { SM_SOFT, SM_LOG, SM_HARD };

/* Split of x around an axis. */
static ox_status axis_split(ox_kernel_ctx *c, const ox_tensor *x, int64_t axis,
                            bool coerce2d, int64_t *outer, int64_t *n,
                            int64_t *inner)
{
    int rank = x->rank;
    if (axis < 0)
        axis += rank;
    if (axis < 0 || axis > rank || (!coerce2d && axis >= rank) ||
        (rank == 0 && !coerce2d))
        return ox_errorf(c->err, OX_EINVAL, "%s: axis out of range for rank %d",
                         c->node->op_type, rank);
    *outer = 1;
    *n = 1;
    *inner = 1;
    for (int d = 0; d < rank; d++) {
        if (d < axis)
            *outer *= x->dims[d];
        else if (d == axis || coerce2d)
            *n *= x->dims[d];
        else
            *inner *= x->dims[d];
    }
    return OX_OK;
}

/* One (outer, inner) line of n elements at stride st, in float or double. */
#define SM_LINE(NAME, T, EXP, LOG)                                          \
    OX__EW_CLONES static void NAME(const T *x, T *y, int64_t n, int64_t st, int kind)     \
    {                                                                       \
        T m = x[0];                                                         \
        int64_t am = 0;                                                     \
        for (int64_t k = 1; k < n; k++)                                     \
            if (x[k * st] > m || (x[k * st] != x[k * st] && m == m)) {      \
                m = x[k * st];                                              \
                am = k;                                                     \
            }                                                               \
        if (kind == SM_HARD) {                                              \
            for (int64_t k = 0; k < n; k++)                                 \
                y[k * st] = k == am ? (T)1 : (T)0;                          \
            return;                                                         \
        }                                                                   \
        if (!isfinite(m))                                                   \
            m = isnan(m) ? m : (m > 0 ? m : 0);                             \
        double s = 0;                                                       \
        if (kind == SM_SOFT) {                                              \
            for (int64_t k = 0; k < n; k++) {                               \
                T e = EXP(x[k * st] - m);                                   \
                y[k * st] = e;                                              \
                s += e;                                                     \
            }                                                               \
            T inv = (T)(1.0 / s);                                           \
            for (int64_t k = 0; k < n; k++)                                 \
                y[k * st] *= inv;                                           \
        } else {                                                            \
            for (int64_t k = 0; k < n; k++)                                 \
                s += EXP(x[k * st] - m);                                    \
            T ls = (T)log(s) + m;                                           \
            for (int64_t k = 0; k < n; k++)                                 \
                y[k * st] = x[k * st] - ls;                                 \
        }                                                                   \
    }
SM_LINE(line_f32, float, ox__expf, logf)
SM_LINE(line_f64, double, exp, log)

/* Softmax of one contiguous float line (inner == 1: the attention case),
 * written so the vectorizer takes every pass: 16 independent lanes for the
 * max and the sum (a plain float reduction is not vectorized without
 * -fassociative-math), the exponentials stored once and scaled in place.
 * Same results as line_f32 within float rounding of the sum: a NaN input
 * is skipped by the max but poisons the sum, so the line is NaN as there. */
enum { SM_L = 16 };
OX__EW_CLONES static void soft_contig_f32(const float *x, float *y, int64_t n)
{
    float mv[SM_L], sv[SM_L];
    for (int j = 0; j < SM_L; j++) {
        mv[j] = -INFINITY;
        sv[j] = 0;
    }
    int64_t k = 0;
    for (; k + SM_L <= n; k += SM_L)
        for (int j = 0; j < SM_L; j++)
            mv[j] = x[k + j] > mv[j] ? x[k + j] : mv[j];
    /* Lanes folded pairwise (a tree, not a chain of 16 dependent steps:
     * rows of 128 spent a quarter of their time in these reductions). */
    for (int w = SM_L / 2; w >= 1; w /= 2)
        for (int j = 0; j < w; j++)
            mv[j] = mv[j + w] > mv[j] ? mv[j + w] : mv[j];
    float m = mv[0];
    for (; k < n; k++)
        m = x[k] > m ? x[k] : m;
    if (!isfinite(m))
        m = m > 0 ? m : 0;   /* all -inf (or NaN): as line_f32 */
    for (k = 0; k + SM_L <= n; k += SM_L)
        for (int j = 0; j < SM_L; j++) {
            float e = ox__expf(x[k + j] - m);
            y[k + j] = e;
            sv[j] += e;
        }
    double s = 0;
    for (; k < n; k++) {
        float e = ox__expf(x[k] - m);
        y[k] = e;
        s += e;
    }
    double dv[SM_L];
    for (int j = 0; j < SM_L; j++)
        dv[j] = sv[j];
    for (int w = SM_L / 2; w >= 1; w /= 2)
        for (int j = 0; j < w; j++)
            dv[j] += dv[j + w];
    s += dv[0];
    float inv = (float)(1.0 / s);
    for (k = 0; k < n; k++)
        y[k] *= inv;
}

typedef struct smpar {
    ox_dtype ct;
    const void *x;
    void *y;
    int64_t n, inner;
    int kind;
} smpar;

/* Lines [b, e) of the outer*inner lines. */
static void smpar_run(void *ctx, int64_t b, int64_t e)
{
    const smpar *p = ctx;
    for (int64_t l = b; l < e; l++) {
        int64_t o = l / p->inner, j = l % p->inner;
        int64_t off = o * p->n * p->inner + j;
        if (p->ct == OX_DT_FLOAT && p->inner == 1 && p->kind == SM_SOFT)
            soft_contig_f32((const float *)p->x + off, (float *)p->y + off, p->n);
        else if (p->ct == OX_DT_FLOAT)
            line_f32((const float *)p->x + off, (float *)p->y + off, p->n,
                     p->inner, p->kind);
        else
            line_f64((const double *)p->x + off, (double *)p->y + off, p->n,
                     p->inner, p->kind);
    }
}

static ox_status softmax_family(ox_kernel_ctx *c, int kind)
{
    ox_status st = ox__need_inputs(c, 1);
    if (st)
        return st;
    const ox_tensor *x = ox_kernel_in(c, 0);
    bool old = c->opset < 13;
    int64_t axis = ox_node_attr_i(c->node, "axis", old ? 1 : -1);
    int64_t outer, n, inner;
    if ((st = axis_split(c, x, axis, old, &outer, &n, &inner)))
        return st;
    ox_dtype ct = ox__compute_type(x->dtype);
    if (ct != OX_DT_FLOAT && ct != OX_DT_DOUBLE)
        return ox_errorf(c->err, OX_EUNSUPPORTED, "%s: type %s not supported",
                         c->node->op_type, ox_dtype_name(x->dtype));
    ox_tensor *y = ox_kernel_output(c, 0, x->dtype, x->rank, x->dims);
    if (!y)
        return ox_errorf(c->err, OX_ENOMEM, "%s: cannot allocate output",
                         c->node->op_type);
    if (x->numel == 0)
        return OX_OK;
    void *tx = NULL, *ty = NULL;
    const void *px = ox__as_type(x, ct, &tx, c->err);
    void *py = px ? ox__out_as_type(y, ct, &ty, c->err) : NULL;
    if (!py) {
        free(tx);
        return c->err && c->err->status ? c->err->status : OX_ENOMEM;
    }
    smpar sp = {ct, px, py, n, inner, kind};
    int64_t grain = OX__EW_GRAIN / (n > 0 ? n : 1);
    ox_parallel_for(c->pool, outer * inner, grain > 0 ? grain : 1, smpar_run, &sp);
    free(tx);
    return ox__finish_out(y, ct, ty, c->err);
}

ox_status ox__k_Softmax(ox_kernel_ctx *c) { return softmax_family(c, SM_SOFT); }
ox_status ox__k_LogSoftmax(ox_kernel_ctx *c) { return softmax_family(c, SM_LOG); }
ox_status ox__k_Hardmax(ox_kernel_ctx *c) { return softmax_family(c, SM_HARD); }

#define CUM_IMPL(NAME, T, AT)                                               \
    static void NAME(const T *x, T *y, int64_t outer, int64_t n,            \
                     int64_t inner, bool excl, bool rev, bool prod)         \
    {                                                                       \
        for (int64_t o = 0; o < outer; o++)                                 \
            for (int64_t j = 0; j < inner; j++) {                           \
                const T *xl = x + o * n * inner + j;                        \
                T *yl = y + o * n * inner + j;                              \
                AT s = prod ? 1 : 0;                                        \
                for (int64_t t = 0; t < n; t++) {                           \
                    int64_t k = rev ? n - 1 - t : t;                        \
                    AT v = (AT)xl[k * inner];                               \
                    if (excl) {                                             \
                        yl[k * inner] = (T)s;                               \
                        s = prod ? s * v : s + v;                           \
                    } else {                                                \
                        s = prod ? s * v : s + v;                           \
                        yl[k * inner] = (T)s;                               \
                    }                                                       \
                }                                                           \
            }                                                               \
    }
CUM_IMPL(cum_f32, float, double)
CUM_IMPL(cum_f64, double, double)
CUM_IMPL(cum_i64, int64_t, uint64_t)
CUM_IMPL(cum_u64, uint64_t, uint64_t)

static ox_status cumulative(ox_kernel_ctx *c, bool prod)
{
    ox_status st = ox__need_inputs(c, 2);
    if (st)
        return st;
    const ox_tensor *x = ox_kernel_in(c, 0), *at = ox_kernel_in(c, 1);
    int64_t *axes = NULL;
    int na = ox__read_ints(at, &axes, c->err);
    if (na < 0)
        return c->err && c->err->status ? c->err->status : OX_EINVAL;
    if (na != 1) {
        free(axes);
        return ox_errorf(c->err, OX_EINVAL, "%s: axis must hold one value",
                         c->node->op_type);
    }
    int64_t axis = axes[0];
    free(axes);
    int64_t outer, n, inner;
    if ((st = axis_split(c, x, axis, false, &outer, &n, &inner)))
        return st;
    bool excl = ox_node_attr_i(c->node, "exclusive", 0) != 0;
    bool rev = ox_node_attr_i(c->node, "reverse", 0) != 0;
    ox_dtype ct = ox__compute_type(x->dtype);
    if (ct == OX_DT_UNDEFINED)
        return ox_errorf(c->err, OX_EUNSUPPORTED, "%s: type %s not supported",
                         c->node->op_type, ox_dtype_name(x->dtype));
    ox_tensor *y = ox_kernel_output(c, 0, x->dtype, x->rank, x->dims);
    if (!y)
        return ox_errorf(c->err, OX_ENOMEM, "%s: cannot allocate output",
                         c->node->op_type);
    if (x->numel == 0)
        return OX_OK;
    void *tx = NULL, *ty = NULL;
    const void *px = ox__as_type(x, ct, &tx, c->err);
    void *py = px ? ox__out_as_type(y, ct, &ty, c->err) : NULL;
    if (!py) {
        free(tx);
        return c->err && c->err->status ? c->err->status : OX_ENOMEM;
    }
    switch (ct) {
    case OX_DT_FLOAT: cum_f32(px, py, outer, n, inner, excl, rev, prod); break;
    case OX_DT_DOUBLE: cum_f64(px, py, outer, n, inner, excl, rev, prod); break;
    case OX_DT_INT64: cum_i64(px, py, outer, n, inner, excl, rev, prod); break;
    default: cum_u64(px, py, outer, n, inner, excl, rev, prod); break;
    }
    free(tx);
    return ox__finish_out(y, ct, ty, c->err);
}

ox_status ox__k_CumSum(ox_kernel_ctx *c) { return cumulative(c, false); }
ox_status ox__k_CumProd(ox_kernel_ctx *c) { return cumulative(c, true); }
