/* The loop of the com.microsoft GELU family (act.c): float math the
 * vectorizer takes (fastmath.h's erf/tanh/exp, about 1e-7 relative error)
 * instead of libm's scalar double calls, rows of the bias width over the
 * thread pool. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "no-trapping-math", "no-math-errno")
#endif

#include "exec/k_elementwise/ew.h"
#include "exec/k_elementwise/fastmath.h"
#include "exec/k_nn/gelu_rows.h"
#include "onnxscope/threadpool.h"

/* flatten: four uses of the erf would otherwise leave it an out-of-line
 * scalar call, which stops the vectorizer. */
#if defined(__GNUC__)
#define GELU_FLATTEN __attribute__((flatten))
#else
#define GELU_FLATTEN
#endif

GELU_FLATTEN OX__EW_CLONES static void gelu_span(const float *x, float *y, int64_t n, const float *b,
                                    int kind, float alpha)
{
    if (kind == OX__GELU_ERF) {
        if (b)
            for (int64_t j = 0; j < n; j++) {
                float v = x[j] + b[j];
                y[j] = 0.5f * v * (1.0f + ox__erff(v * 0.70710678118654752f));
            }
        else
            for (int64_t j = 0; j < n; j++) {
                float v = x[j];
                y[j] = 0.5f * v * (1.0f + ox__erff(v * 0.70710678118654752f));
            }
    } else if (kind == OX__GELU_TANH) {
        for (int64_t j = 0; j < n; j++) {
            float v = x[j] + (b ? b[j] : 0.0f);
            y[j] = 0.5f * v *
                   (1.0f + ox__tanhf(0.79788456080286536f * (v + 0.044715f * v * v * v)));
        }
    } else {
        for (int64_t j = 0; j < n; j++) {
            float v = x[j] + (b ? b[j] : 0.0f);
            y[j] = v / (1.0f + ox__expf(-alpha * v));
        }
    }
}

typedef struct gelu_job {
    const float *X, *B;
    float *Y;
    int64_t n, w;
    int kind;
    float alpha;
} gelu_job;

static void gelu_range(void *ctx, int64_t b, int64_t e)
{
    const gelu_job *j = ctx;
    for (int64_t r = b; r < e; r++) {
        int64_t off = r * j->w, len = j->n - off < j->w ? j->n - off : j->w;
        gelu_span(j->X + off, j->Y + off, len, j->B, j->kind, j->alpha);
    }
}

void ox__gelu_rows(struct ox_thread_pool *pool, const float *X, float *Y, int64_t n,
                   const float *B, int64_t bn, int kind, float alpha)
{
    if (n <= 0)
        return;
    /* Spans of the bias width (the bias restarts at each), else 4096. */
    int64_t w = B && bn > 0 ? bn : 4096;
    gelu_job j = {X, B && bn > 0 ? B : NULL, Y, n, w, kind, alpha};
    int64_t rows = (n + w - 1) / w, grain = OX__EW_GRAIN / w;
    ox_parallel_for(pool, rows, grain > 0 ? grain : 1, gelu_range, &j);
}
