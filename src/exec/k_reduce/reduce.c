/* Reduce* kernels and ArgMax/ArgMin. The input is walked once in memory
 * order over collapsed groups of reduced/kept dims, so both "reduce the last
 * axes" and "reduce the leading axes" run as contiguous inner loops. Floats
 * accumulate in double, integers in (u)int64. */
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
#include "onnxscope/threadpool.h"

enum { R_SUM, R_PROD, R_MAX, R_MIN, R_ABS, R_SQ, R_EXP };
enum { P_NONE, P_MEAN, P_SQRT, P_LOG, P_LSE };

typedef struct rplan {
    int r;                       /* collapsed groups */
    int64_t cd[OX_MAX_RANK];     /* group sizes */
    bool red[OX_MAX_RANK];       /* group is reduced */
    int64_t ostr[OX_MAX_RANK];   /* output element stride (0 if reduced) */
} rplan;

static void make_plan(int rank, const int64_t *dims, const bool *red, rplan *p)
{
    p->r = 0;
    for (int d = 0; d < rank; d++) {
        if (dims[d] == 1)
            continue;
        if (p->r > 0 && p->red[p->r - 1] == red[d]) {
            p->cd[p->r - 1] *= dims[d];
            continue;
        }
        p->cd[p->r] = dims[d];
        p->red[p->r] = red[d];
        p->r++;
    }
    if (p->r == 0) {
        p->cd[0] = 1;
        p->red[0] = true;
        p->r = 1;
    }
    int64_t s = 1;
    for (int g = p->r - 1; g >= 0; g--) {
        p->ostr[g] = p->red[g] ? 0 : s;
        if (!p->red[g])
            s *= p->cd[g];
    }
}

#define FMAXNAN(a, v) (((v) > (a) || (v) != (v)) ? (v) : (a))
#define FMINNAN(a, v) (((v) < (a) || (v) != (v)) ? (v) : (a))

/* One walk over the input. mx (LogSumExp shift, one per output) is only
 * read for R_EXP. */
#define RED_IMPL(NAME, IT, AT, ABSF, ADD, MUL)                                            \
    static void NAME(const IT *x, AT *acc, const AT *mx, const rplan *pl,   \
                     int op)                                                \
    {                                                                       \
        int r = pl->r;                                                      \
        int64_t n = pl->cd[r - 1];                                          \
        bool ired = pl->red[r - 1];                                         \
        int64_t idx[OX_MAX_RANK] = {0};                                     \
        int64_t outer = 1;                                                  \
        for (int g = 0; g < r - 1; g++)                                     \
            outer *= pl->cd[g];                                             \
        int64_t ooff = 0;                                                   \
        const IT *xp = x;                                                   \
        for (int64_t o = 0; o < outer; o++, xp += n) {                      \
            AT *ap = acc + ooff;                                            \
            if (ired) {                                                     \
                AT a = *ap;                                                 \
                switch (op) {                                               \
                case R_SUM: {                                               \
                    AT a0 = 0, a1 = 0, a2 = 0, a3 = 0;                      \
                    int64_t j = 0;                                          \
                    for (; j + 4 <= n; j += 4) {                            \
                        a0 = ADD(a0, (AT)xp[j]); a1 = ADD(a1, (AT)xp[j + 1]);               \
                        a2 = ADD(a2, (AT)xp[j + 2]); a3 = ADD(a3, (AT)xp[j + 3]);           \
                    }                                                       \
                    for (; j < n; j++) a0 = ADD(a0, (AT)xp[j]);                     \
                    a = ADD(a, ADD(ADD(a0, a1), ADD(a2, a3)));                             \
                    break;                                                  \
                }                                                           \
                case R_PROD: for (int64_t j = 0; j < n; j++) a = MUL(a, (AT)xp[j]); break; \
                case R_MAX: for (int64_t j = 0; j < n; j++) a = FMAXNAN(a, (AT)xp[j]); break; \
                case R_MIN: for (int64_t j = 0; j < n; j++) a = FMINNAN(a, (AT)xp[j]); break; \
                case R_ABS: for (int64_t j = 0; j < n; j++) { AT v = (AT)xp[j]; a = ADD(a, ABSF(v)); } break; \
                case R_SQ: for (int64_t j = 0; j < n; j++) { AT v = (AT)xp[j]; a = ADD(a, MUL(v, v)); } break; \
                case R_EXP: { AT m = mx[ooff]; for (int64_t j = 0; j < n; j++) a += (AT)exp((double)((AT)xp[j] - m)); break; } \
                }                                                           \
                *ap = a;                                                    \
            } else {                                                        \
                switch (op) {                                               \
                case R_SUM: for (int64_t j = 0; j < n; j++) ap[j] = ADD(ap[j], (AT)xp[j]); break; \
                case R_PROD: for (int64_t j = 0; j < n; j++) ap[j] = MUL(ap[j], (AT)xp[j]); break; \
                case R_MAX: for (int64_t j = 0; j < n; j++) ap[j] = FMAXNAN(ap[j], (AT)xp[j]); break; \
                case R_MIN: for (int64_t j = 0; j < n; j++) ap[j] = FMINNAN(ap[j], (AT)xp[j]); break; \
                case R_ABS: for (int64_t j = 0; j < n; j++) { AT v = (AT)xp[j]; ap[j] = ADD(ap[j], ABSF(v)); } break; \
                case R_SQ: for (int64_t j = 0; j < n; j++) { AT v = (AT)xp[j]; ap[j] = ADD(ap[j], MUL(v, v)); } break; \
                case R_EXP: { const AT *m = mx + ooff; for (int64_t j = 0; j < n; j++) ap[j] += (AT)exp((double)((AT)xp[j] - m[j])); break; } \
                }                                                           \
            }                                                               \
            for (int g = r - 2; g >= 0; g--) {                              \
                idx[g]++;                                                   \
                ooff += pl->ostr[g];                                        \
                if (idx[g] < pl->cd[g])                                     \
                    break;                                                  \
                ooff -= pl->ostr[g] * pl->cd[g];                            \
                idx[g] = 0;                                                 \
            }                                                               \
        }                                                                   \
    }

#define SABS(v) ((v) < 0 ? 0 - (v) : (v))
#define IABS(v) ((v) < 0 ? (int64_t)(0 - (uint64_t)(v)) : (v))
#define UABS(v) (v)
#define PADD(a, b) ((a) + (b))
#define PMUL(a, b) ((a) * (b))
/* signed integers wrap (through unsigned) instead of overflowing */
#define WADD(a, b) ((int64_t)((uint64_t)(a) + (uint64_t)(b)))
#define WMUL(a, b) ((int64_t)((uint64_t)(a) * (uint64_t)(b)))
RED_IMPL(red_f32, float, double, SABS, PADD, PMUL)
RED_IMPL(red_f64, double, double, SABS, PADD, PMUL)
RED_IMPL(red_i64, int64_t, int64_t, IABS, WADD, WMUL)
RED_IMPL(red_u64, uint64_t, uint64_t, UABS, PADD, PMUL)

typedef struct redop {
    const char *name;
    int op, post;
} redop;

static void fill_init(void *acc, ox_dtype at, int op, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        switch (at) {
        case OX_DT_DOUBLE: {
            double v = op == R_PROD ? 1 : op == R_MAX ? -INFINITY
                     : op == R_MIN ? INFINITY : 0;
            ((double *)acc)[i] = v;
            break;
        }
        case OX_DT_INT64: {
            int64_t v = op == R_PROD ? 1 : op == R_MAX ? INT64_MIN
                      : op == R_MIN ? INT64_MAX : 0;
            ((int64_t *)acc)[i] = v;
            break;
        }
        default: {
            uint64_t v = op == R_PROD ? 1 : op == R_MIN ? UINT64_MAX : 0;
            ((uint64_t *)acc)[i] = v;
            break;
        }
        }
    }
}

static void walk(ox_dtype it, const void *x, void *acc, const void *mx,
                 const rplan *pl, int op)
{
    switch (it) {
    case OX_DT_FLOAT: red_f32(x, acc, mx, pl, op); break;
    case OX_DT_DOUBLE: red_f64(x, acc, mx, pl, op); break;
    case OX_DT_INT64: red_i64(x, acc, mx, pl, op); break;
    default: red_u64(x, acc, mx, pl, op); break;
    }
}

/* [kept, reduced] (e.g. a mean over the last axis): rows are independent,
 * so chunks of rows run in parallel. */
typedef struct rpar {
    ox_dtype it;
    const char *x;
    char *acc;
    const char *mx;
    size_t xs;
    const rplan *pl;
    int op;
} rpar;

static void rpar_run(void *ctx, int64_t b, int64_t e)
{
    const rpar *p = ctx;
    rplan sub = *p->pl;
    int64_t n = sub.cd[1];
    sub.cd[0] = e - b;
    walk(p->it, p->x + b * n * (int64_t)p->xs, p->acc + b * 8,
         p->mx ? p->mx + b * 8 : NULL, &sub, p->op);
}

static void walk_par(ox_thread_pool *pool, ox_dtype it, const void *x,
                     void *acc, const void *mx, const rplan *pl, int op)
{
    if (pool && pl->r == 2 && !pl->red[0] && pl->red[1]) {
        rpar p = {it, x, acc, mx, ox__dtype_size(it), pl, op};
        int64_t grain = OX__EW_GRAIN / pl->cd[1];
        ox_parallel_for(pool, pl->cd[0], grain > 0 ? grain : 1, rpar_run, &p);
        return;
    }
    walk(it, x, acc, mx, pl, op);
}

/* Normalizes the axes to reduce into red[]; *all_empty when none given. */
static ox_status get_axes(ox_kernel_ctx *c, const ox_tensor *x, bool *red,
                          bool *none_given)
{
    int64_t *axes = NULL;
    int n = 0;
    bool own = false;
    const ox_tensor *at = c->n_in > 1 ? ox_kernel_in(c, 1) : NULL;
    if (at) {
        n = ox__read_ints(at, &axes, c->err);
        if (n < 0)
            return c->err && c->err->status ? c->err->status : OX_EINVAL;
        own = true;
    } else {
        const int64_t *a = NULL;
        n = ox_node_attr_ints(c->node, "axes", &a);
        if (n < 0)
            n = 0;
        axes = (int64_t *)a;
    }
    *none_given = n == 0;
    for (int d = 0; d < x->rank; d++)
        red[d] = false;
    ox_status st = OX_OK;
    for (int i = 0; i < n; i++) {
        int64_t a = axes[i];
        if (a < 0)
            a += x->rank;
        if (a < 0 || a >= x->rank) {
            st = ox_errorf(c->err, OX_EINVAL, "%s: axis %lld out of range for rank %d",
                           c->node->op_type, (long long)axes[i], x->rank);
            break;
        }
        red[a] = true;
    }
    if (own)
        free(axes);
    return st;
}

static ox_status reduce(ox_kernel_ctx *c, const redop *ro)
{
    if (c->n_in < 1 || !ox_kernel_in(c, 0) || c->n_out < 1)
        return ox_errorf(c->err, OX_EINVAL, "%s: missing input", ro->name);
    const ox_tensor *x = ox_kernel_in(c, 0);
    bool red[OX_MAX_RANK];
    bool none;
    ox_status st = get_axes(c, x, red, &none);
    if (st)
        return st;
    bool keep = ox_node_attr_i(c->node, "keepdims", 1) != 0;
    if (none) {
        if (ox_node_attr_i(c->node, "noop_with_empty_axes", 0)) {
            ox_tensor *y = ox_tensor_share(x);
            if (!y)
                return ox_errorf(c->err, OX_ENOMEM, "%s: out of memory", ro->name);
            ox_kernel_set_output(c, 0, y);
            return OX_OK;
        }
        for (int d = 0; d < x->rank; d++)
            red[d] = true;
    }
    int orank = 0;
    int64_t odims[OX_MAX_RANK];
    int64_t count = 1;
    for (int d = 0; d < x->rank; d++) {
        if (red[d])
            count *= x->dims[d];
        if (!red[d])
            odims[orank++] = x->dims[d];
        else if (keep)
            odims[orank++] = 1;
    }
    ox_dtype ct = ox__compute_type(x->dtype);
    if (ct == OX_DT_UNDEFINED)
        return ox_errorf(c->err, OX_EUNSUPPORTED, "%s: type %s not supported",
                         ro->name, ox_dtype_name(x->dtype));
    /* nonlinear finishing on integers is done in double, then truncated */
    if ((ro->post == P_SQRT || ro->post == P_LOG || ro->post == P_LSE) &&
        ct != OX_DT_FLOAT)
        ct = OX_DT_DOUBLE;
    ox_dtype at = (ct == OX_DT_FLOAT || ct == OX_DT_DOUBLE) ? OX_DT_DOUBLE : ct;
    ox_tensor *y = ox_kernel_output(c, 0, x->dtype, orank, odims);
    if (!y)
        return ox_errorf(c->err, OX_ENOMEM, "%s: cannot allocate output", ro->name);
    int64_t on = y->numel;
    if (on == 0)
        return OX_OK;
    void *tx = NULL;
    double *mx = NULL;
    const void *px = ox__as_type(x, ct, &tx, c->err);
    void *acc = px ? malloc((size_t)on * 8) : NULL;
    if (!acc) {
        free(tx);
        return c->err && c->err->status ? c->err->status
                                        : ox_errorf(c->err, OX_ENOMEM, "out of memory");
    }
    rplan pl;
    make_plan(x->rank, x->dims, red, &pl);
    bool empty = x->numel == 0;
    if (ro->post == P_LSE) {
        mx = malloc((size_t)on * sizeof(double));
        if (!mx) {
            free(tx);
            free(acc);
            return ox_errorf(c->err, OX_ENOMEM, "out of memory");
        }
        fill_init(mx, OX_DT_DOUBLE, R_MAX, on);
        if (!empty)
            walk_par(c->pool, ct, px, mx, NULL, &pl, R_MAX);
        for (int64_t i = 0; i < on; i++)
            if (!isfinite(mx[i]))
                mx[i] = 0;
    }
    fill_init(acc, at, ro->op, on);
    if (!empty)
        walk_par(c->pool, ct, px, acc, mx, &pl, ro->op);
    if (ro->post != P_NONE) {
        for (int64_t i = 0; i < on; i++) {
            if (at == OX_DT_DOUBLE) {
                double *a = acc;
                switch (ro->post) {
                case P_MEAN: a[i] = a[i] / (double)count; break;
                case P_SQRT: a[i] = sqrt(a[i]); break;
                case P_LOG: a[i] = log(a[i]); break;
                case P_LSE: a[i] = log(a[i]) + mx[i]; break;
                }
            } else if (at == OX_DT_INT64) {
                int64_t *a = acc;
                a[i] = count ? a[i] / count : 0;
            } else {
                uint64_t *a = acc;
                a[i] = count ? a[i] / (uint64_t)count : 0;
            }
        }
    }
    free(tx);
    free(mx);
    void *dst = ox_tensor_mutable_data(y);
    st = dst ? ox__convert(at, acc, y->dtype, dst, on, OX__CVT_SATURATE, c->err)
             : ox_errorf(c->err, OX_ENOMEM, "%s: output without data", ro->name);
    free(acc);
    return st;
}

#define RK(NAME, OP, POST)                                                  \
    static ox_status k_##NAME(ox_kernel_ctx *c)                             \
    {                                                                       \
        static const redop ro = {#NAME, OP, POST};                          \
        return reduce(c, &ro);                                              \
    }
RK(ReduceSum, R_SUM, P_NONE)
RK(ReduceMean, R_SUM, P_MEAN)
RK(ReduceMax, R_MAX, P_NONE)
RK(ReduceMin, R_MIN, P_NONE)
RK(ReduceProd, R_PROD, P_NONE)
RK(ReduceL1, R_ABS, P_NONE)
RK(ReduceL2, R_SQ, P_SQRT)
RK(ReduceLogSum, R_SUM, P_LOG)
RK(ReduceLogSumExp, R_EXP, P_LSE)
RK(ReduceSumSquare, R_SQ, P_NONE)

/* ---- ArgMax / ArgMin --------------------------------------------------------- */

#define ARG_IMPL(NAME, T)                                                   \
    static void NAME(const T *x, int64_t *out, T *best, int64_t outer,      \
                     int64_t n, int64_t inner, bool is_max, bool last)      \
    {                                                                       \
        for (int64_t o = 0; o < outer; o++) {                               \
            const T *xo = x + o * n * inner;                                \
            int64_t *yo = out + o * inner;                                  \
            for (int64_t j = 0; j < inner; j++) {                           \
                best[j] = xo[j];                                            \
                yo[j] = 0;                                                  \
            }                                                               \
            for (int64_t k = 1; k < n; k++) {                               \
                const T *xk = xo + k * inner;                               \
                for (int64_t j = 0; j < inner; j++) {                       \
                    T v = xk[j], b = best[j];                               \
                    bool better = is_max ? (last ? v >= b : v > b)          \
                                         : (last ? v <= b : v < b);         \
                    if (better) {                                           \
                        best[j] = v;                                        \
                        yo[j] = k;                                          \
                    }                                                       \
                }                                                           \
            }                                                               \
        }                                                                   \
    }
ARG_IMPL(arg_f32, float)
ARG_IMPL(arg_f64, double)
ARG_IMPL(arg_i64, int64_t)
ARG_IMPL(arg_u64, uint64_t)

static ox_status argreduce(ox_kernel_ctx *c, bool is_max)
{
    const char *name = is_max ? "ArgMax" : "ArgMin";
    if (c->n_in < 1 || !ox_kernel_in(c, 0) || c->n_out < 1)
        return ox_errorf(c->err, OX_EINVAL, "%s: missing input", name);
    const ox_tensor *x = ox_kernel_in(c, 0);
    int64_t axis = ox_node_attr_i(c->node, "axis", 0);
    bool keep = ox_node_attr_i(c->node, "keepdims", 1) != 0;
    bool last = ox_node_attr_i(c->node, "select_last_index", 0) != 0;
    int rank = x->rank;
    if (axis < 0)
        axis += rank;
    if (axis < 0 || axis >= (rank ? rank : 1) || rank == 0)
        return ox_errorf(c->err, OX_EINVAL, "%s: axis out of range for rank %d",
                         name, rank);
    int64_t outer = 1, inner = 1, n = x->dims[axis];
    int orank = 0;
    int64_t odims[OX_MAX_RANK];
    for (int d = 0; d < rank; d++) {
        if (d < axis)
            outer *= x->dims[d];
        else if (d > axis)
            inner *= x->dims[d];
        if (d != axis)
            odims[orank++] = x->dims[d];
        else if (keep)
            odims[orank++] = 1;
    }
    if (n == 0 && outer * inner > 0)
        return ox_errorf(c->err, OX_EINVAL, "%s: reducing an empty axis", name);
    ox_tensor *y = ox_kernel_output(c, 0, OX_DT_INT64, orank, odims);
    if (!y)
        return ox_errorf(c->err, OX_ENOMEM, "%s: cannot allocate output", name);
    if (y->numel == 0)
        return OX_OK;
    ox_dtype ct = ox__compute_type(x->dtype);
    if (ct == OX_DT_UNDEFINED)
        return ox_errorf(c->err, OX_EUNSUPPORTED, "%s: type %s not supported",
                         name, ox_dtype_name(x->dtype));
    void *tx = NULL;
    const void *px = ox__as_type(x, ct, &tx, c->err);
    void *best = px ? malloc((size_t)inner * 8) : NULL;
    int64_t *out = ox_tensor_mutable_data(y);
    if (!best || !out) {
        free(tx);
        free(best);
        return c->err && c->err->status ? c->err->status
                                        : ox_errorf(c->err, OX_ENOMEM, "out of memory");
    }
    switch (ct) {
    case OX_DT_FLOAT: arg_f32(px, out, best, outer, n, inner, is_max, last); break;
    case OX_DT_DOUBLE: arg_f64(px, out, best, outer, n, inner, is_max, last); break;
    case OX_DT_INT64: arg_i64(px, out, best, outer, n, inner, is_max, last); break;
    default: arg_u64(px, out, best, outer, n, inner, is_max, last); break;
    }
    free(tx);
    free(best);
    return OX_OK;
}

static ox_status k_ArgMax(ox_kernel_ctx *c) { return argreduce(c, true); }
static ox_status k_ArgMin(ox_kernel_ctx *c) { return argreduce(c, false); }

ox_status ox__k_CumSum(ox_kernel_ctx *c);
ox_status ox__k_Softmax(ox_kernel_ctx *c);
ox_status ox__k_LogSoftmax(ox_kernel_ctx *c);
ox_status ox__k_Hardmax(ox_kernel_ctx *c);
ox_status ox__k_CumProd(ox_kernel_ctx *c);
ox_status ox__k_NegativeLogLikelihoodLoss(ox_kernel_ctx *c);
ox_status ox__k_SoftmaxCrossEntropyLoss(ox_kernel_ctx *c);

#define E(op, since, fn) {"", #op, since, fn},
const ox_kernel_entry ox_kernels_reduce[] = {
    E(ReduceSum, 1, k_ReduceSum) E(ReduceMean, 1, k_ReduceMean)
    E(ReduceMax, 1, k_ReduceMax) E(ReduceMin, 1, k_ReduceMin)
    E(ReduceProd, 1, k_ReduceProd) E(ReduceL1, 1, k_ReduceL1)
    E(ReduceL2, 1, k_ReduceL2) E(ReduceLogSum, 1, k_ReduceLogSum)
    E(ReduceLogSumExp, 1, k_ReduceLogSumExp)
    E(ReduceSumSquare, 1, k_ReduceSumSquare)
    E(ArgMax, 1, k_ArgMax) E(ArgMin, 1, k_ArgMin)
    E(CumSum, 11, ox__k_CumSum) E(CumProd, 26, ox__k_CumProd)
    E(Softmax, 1, ox__k_Softmax) E(LogSoftmax, 1, ox__k_LogSoftmax)
    E(Hardmax, 1, ox__k_Hardmax)
    E(NegativeLogLikelihoodLoss, 12, ox__k_NegativeLogLikelihoodLoss)
    E(SoftmaxCrossEntropyLoss, 12, ox__k_SoftmaxCrossEntropyLoss)
    {0, 0, 0, 0},
};
