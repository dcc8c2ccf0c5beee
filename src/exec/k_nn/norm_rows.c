/* The row loop of LayerNormalization / RMSNormalization / SkipLayerNormalization
 * (norm.c): per row, one pass that accumulates sum and sum of squares in
 * double (8 independent lanes, so the vectorizer takes it), then one pass
 * that writes (x - mean) * inv_std * scale + bias in float while the row is
 * still in L1. Rows are split over the thread pool. The variance is
 * E[x^2] - mean^2 in double: float data has 29 bits to spare there, so the
 * cancellation that makes this form unsafe in float does not arise. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "no-trapping-math", "no-math-errno")
#endif

#include <math.h>

#include "exec/k_elementwise/ew.h"
#include "exec/k_nn/norm_rows.h"
#include "onnxscope/threadpool.h"

enum { LN_L = 8 };

OX__EW_CLONES static void ln_row(const float *x, float *y, int64_t n, const float *S,
                                 const float *B, bool rms, float eps, float *mo, float *io)
{
    double s[LN_L] = {0}, q[LN_L] = {0};
    int64_t j = 0;
    for (; j + LN_L <= n; j += LN_L)
        for (int k = 0; k < LN_L; k++) {
            double v = x[j + k];
            s[k] += v;
            q[k] += v * v;
        }
    double ts = 0, tq = 0;
    for (int k = 0; k < LN_L; k++) {
        ts += s[k];
        tq += q[k];
    }
    for (; j < n; j++) {
        double v = x[j];
        ts += v;
        tq += v * v;
    }
    double m = rms || n == 0 ? 0 : ts / (double)n;
    double var = n ? tq / (double)n - m * m : 0;
    if (var < 0)
        var = 0;   /* rounding when every element is equal */
    double inv = 1.0 / sqrt(var + eps);
    const float fm = (float)m, fi = (float)inv;
    if (S && B)
        for (j = 0; j < n; j++)
            y[j] = (x[j] - fm) * fi * S[j] + B[j];
    else if (S)
        for (j = 0; j < n; j++)
            y[j] = (x[j] - fm) * fi * S[j];
    else if (B)
        for (j = 0; j < n; j++)
            y[j] = (x[j] - fm) * fi + B[j];
    else
        for (j = 0; j < n; j++)
            y[j] = (x[j] - fm) * fi;
    if (mo)
        *mo = (float)m;
    if (io)
        *io = (float)inv;
}

typedef struct ln_job {
    const ox__ln_rows_args *a;
} ln_job;

static void ln_range(void *ctx, int64_t b, int64_t e)
{
    const ox__ln_rows_args *a = ((const ln_job *)ctx)->a;
    for (int64_t r = b; r < e; r++)
        ln_row(a->X + r * a->inner, a->Y + r * a->inner, a->inner, a->S, a->B, a->rms, a->eps,
               a->mean ? a->mean + r : NULL, a->inv ? a->inv + r : NULL);
}

void ox__ln_rows(struct ox_thread_pool *pool, const ox__ln_rows_args *a)
{
    ln_job j = {a};
    /* The elementwise kernels' grain: small norms stay on one thread. */
    int64_t grain = a->inner > 0 ? OX__EW_GRAIN / a->inner : 1;
    ox_parallel_for(pool, a->rows, grain > 0 ? grain : 1, ln_range, &j);
}
