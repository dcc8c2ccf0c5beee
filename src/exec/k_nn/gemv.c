/* One-row products (M = 1, A not transposed): y = alpha * a B (+ C already
 * in y, as nn_sgemm prepares it). A batch-1 classifier or decoder step is a
 * matrix-vector product: no GEMM packing pays, and a oneDNN primitive's
 * per-call cost (memory objects, its N padded to a block of 16 or more)
 * was most of a [1, 8192] x [8192, 10] Gemm (39 us against ~5 us here).
 * Both layouts of B read it once, row by row:
 *   B not transposed ([K, N], rows of N): y += a[k] * B[k, :], N-wide
 *   axpy per k; y stays in L1 for N up to several thousand.
 *   B transposed ([N, K], rows of K): y[j] += dot(a, B[j, :]), sums in 16
 *   independent lanes (a float reduction is otherwise left scalar without
 *   reassociation). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "no-trapping-math", "no-math-errno")
#endif

#include "exec/k_elementwise/ew.h"
#include "exec/k_nn/nn_common.h"
#include "onnxscope/threadpool.h"

OX__EW_CLONES static void gemv_n(int64_t N, int64_t K, float alpha, const float *a,
                                 const float *B, int64_t ldb, float *y)
{
    for (int64_t k = 0; k < K; k++) {
        const float s = alpha * a[k];
        const float *b = B + k * ldb;
        for (int64_t j = 0; j < N; j++)
            y[j] += s * b[j];
    }
}

typedef float v16 __attribute__((vector_size(64)));
/* The same vector read from any float address (no alignment, may alias). */
typedef float v16u __attribute__((vector_size(64), aligned(4), may_alias));
#define LD16(p) (*(const v16u *)(p))

/* Sum of the 16 lanes (a macro: a 64-byte vector passed by value changes
 * the ABI between the clones). */
#define HSUM16(v, out)                                                      \
    do {                                                                    \
        float hs_ = 0.0f;                                                   \
        for (int l_ = 0; l_ < 16; l_++)                                     \
            hs_ += (v)[l_];                                                 \
        (out) = hs_;                                                        \
    } while (0)

/* Four rows of B against a at once: each 16-float load of a serves four
 * independent accumulators. */
OX__EW_CLONES static void gemv_t(int64_t N, int64_t K, float alpha, const float *a,
                                 const float *B, int64_t ldb, float *y)
{
    int64_t j = 0, K16 = K / 16 * 16;
    for (; j + 4 <= N; j += 4) {
        const float *b0 = B + j * ldb, *b1 = b0 + ldb, *b2 = b1 + ldb, *b3 = b2 + ldb;
        v16 s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
        for (int64_t k = 0; k < K16; k += 16) {
            v16 av = LD16(a + k);
            s0 += av * LD16(b0 + k);
            s1 += av * LD16(b1 + k);
            s2 += av * LD16(b2 + k);
            s3 += av * LD16(b3 + k);
        }
        float t0, t1, t2, t3;
        HSUM16(s0, t0);
        HSUM16(s1, t1);
        HSUM16(s2, t2);
        HSUM16(s3, t3);
        for (int64_t k = K16; k < K; k++) {
            t0 += a[k] * b0[k];
            t1 += a[k] * b1[k];
            t2 += a[k] * b2[k];
            t3 += a[k] * b3[k];
        }
        y[j] += alpha * t0;
        y[j + 1] += alpha * t1;
        y[j + 2] += alpha * t2;
        y[j + 3] += alpha * t3;
    }
    for (; j < N; j++) {
        const float *b0 = B + j * ldb;
        v16 s0 = {0};
        for (int64_t k = 0; k < K16; k += 16)
            s0 += LD16(a + k) * LD16(b0 + k);
        float t0;
        HSUM16(s0, t0);
        for (int64_t k = K16; k < K; k++)
            t0 += a[k] * b0[k];
        y[j] += alpha * t0;
    }
}

typedef struct gemv_job {
    bool tb;
    int64_t N, K, ldb, block;
    float alpha;
    const float *a, *B;
    float *y;
} gemv_job;

static void gemv_chunk(void *ctx, int64_t b, int64_t e)
{
    const gemv_job *j = ctx;
    int64_t lo = b * j->block, hi = e * j->block;
    if (hi > j->N)
        hi = j->N;
    if (j->tb)
        gemv_t(hi - lo, j->K, j->alpha, j->a, j->B + lo * j->ldb, j->ldb, j->y + lo);
    else
        gemv_n(hi - lo, j->K, j->alpha, j->a, j->B + lo, j->ldb, j->y + lo);
}

void nn_sgemv(struct ox_thread_pool *pool, bool tb, int64_t N, int64_t K, float alpha,
              const float *a, const float *B, int64_t ldb, float *y)
{
    if (N <= 0 || K <= 0 || alpha == 0.0f)
        return;
    int threads = pool ? ox_thread_pool_size(pool) : 1;
    /* Columns over the pool in blocks of 64 (whole cache lines of y and,
     * for the transposed layout, whole rows of B) once there is work for
     * each thread (~64K multiply-adds). */
    gemv_job j = {tb, N, K, ldb, 64, alpha, a, B, y};
    if (threads <= 1 || N * K < 65536LL * threads || N < 128) {
        gemv_chunk(&j, 0, (N + 63) / 64);
        return;
    }
    ox_parallel_for(pool, (N + 63) / 64, 1, gemv_chunk, &j);
}
