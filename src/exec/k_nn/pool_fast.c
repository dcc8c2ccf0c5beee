/* Fast 2-D MaxPool / AveragePool loops (pool_fast.h).
 *
 * NCHW: a window's maximum (or sum) is separable, so each output row first
 * combines the window's input rows into one row (contiguous, vectorized),
 * then combines each output column's taps along that row (contiguous for
 * all interior columns, vectorized; picked every stride-th), with the
 * clipped border columns done one by one. The generic loop in pool.c tests
 * every tap against the borders and costs ~9 scalar compares per tap.
 *
 * NHWC: the channels of one pixel are contiguous, so each window tap is a
 * vector operation over C; no scratch and no border special case beyond
 * clipping the window once per output pixel.
 *
 * MaxPool's maximum propagates NaN like the generic loop (a NaN in the
 * window gives NaN). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "no-trapping-math", "no-math-errno")
#endif

#include "exec/k_nn/pool_fast.h"

#include <stdlib.h>
#include <string.h>

#include "exec/k_elementwise/ew.h"

static inline float maxn(float a, float v)
{
    return (v > a || v != v) ? v : a;
}

/* Inlined into each clone of their callers (the callers carry the target
 * clones: a call per window tap through the clone dispatch cost more than
 * the tap itself for 64-channel pixels). */
static inline void row_max(float *restrict y, const float *restrict x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = maxn(y[i], x[i]);
}

static inline void row_add(float *restrict y, const float *restrict x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] += x[i];
}

static inline void row_div(float *restrict y, float d, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = y[i] / d;
}

static inline void row_copy(float *restrict y, const float *restrict x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = x[i];
}

/* y = op(a, b) and y = op(a, b, c), out of place: one pass instead of a
 * copy and one in-place pass per operand (a row of 55-111 floats pays a
 * scalar remainder per pass). a, b, c may alias each other, not y. */
static inline void row_op2(float *restrict y, const float *a, const float *b, int64_t n,
                           bool avg)
{
    if (avg)
        for (int64_t i = 0; i < n; i++)
            y[i] = a[i] + b[i];
    else
        for (int64_t i = 0; i < n; i++)
            y[i] = maxn(a[i], b[i]);
}

static inline void row_op3(float *restrict y, const float *a, const float *b, const float *c,
                           int64_t n, bool avg)
{
    if (avg)
        for (int64_t i = 0; i < n; i++)
            y[i] = (a[i] + b[i]) + c[i];
    else
        for (int64_t i = 0; i < n; i++)
            y[i] = maxn(maxn(a[i], b[i]), c[i]);
}

/* h[i] = max (or sum) over t < k of v[i + t * d], i < n. */
static inline void row_taps(float *restrict h, const float *restrict v, int64_t n,
                                   int64_t k, int64_t d, bool avg)
{
    if (k == 2 || k == 3) {
        if (k == 2)
            row_op2(h, v, v + d, n, avg);
        else
            row_op3(h, v, v + d, v + 2 * d, n, avg);
        return;
    }
    memcpy(h, v, (size_t)n * sizeof *h);
    for (int64_t t = 1; t < k; t++) {
        const float *vt = v + t * d;
        if (avg)
            for (int64_t i = 0; i < n; i++)
                h[i] += vt[i];
        else
            for (int64_t i = 0; i < n; i++)
                h[i] = maxn(h[i], vt[i]);
    }
}

#define STACK_F 4096   /* floats of scratch on the stack */
#define VW 16          /* row passes run over lengths rounded up to this */

static inline int64_t vround(int64_t n)
{
    return (n + VW - 1) / VW * VW;
}

/* Every pass runs over a multiple of VW floats: rows of 55-111 floats
 * otherwise end in a scalar remainder whose NaN-aware compares branch on
 * the data (mispredicted about half the time on real activations). The
 * extra lanes read past the row's end, inside X (checked) or the zeroed
 * scratch, and land in scratch positions nothing reads. */
OX__EW_CLONES bool nn_pool2d_nchw(const nn_pool2d *g, const float *X, float *Y, int64_t p0,
                                  int64_t p1)
{
    const int64_t H = g->H, W = g->W, OH = g->OH, OW = g->OW;
    const bool avg = g->avg;
    /* Interior output columns: every tap inside [0, W). */
    int64_t span = (g->kw - 1) * g->dw;
    int64_t ox_lo = (g->pl + g->sw - 1) / g->sw;
    int64_t last = W - 1 - span + g->pl;   /* largest interior ox * sw */
    int64_t ox_hi = last >= 0 ? last / g->sw : -1;
    if (ox_hi > OW - 1)
        ox_hi = OW - 1;
    const int64_t Wp = vround(W);
    /* vm: the window's rows combined; the column pass reads it up to
     * x0 + vround(L) + span <= W + VW + span. hm: the column pass's output. */
    size_t vm_n = (size_t)(Wp + 2 * VW + span), n_buf = vm_n + (size_t)(Wp + VW);
    float sbuf[STACK_F];
    float *buf = n_buf <= STACK_F ? sbuf : malloc(n_buf * sizeof(float));
    if (!buf)
        return false;
    memset(buf, 0, n_buf * sizeof(float));
    float *vm = buf, *hm = buf + vm_n;
    const float *x_end = g->planes > 0 ? X + g->planes * H * W : NULL;
    for (int64_t p = p0; p < p1; p++) {
        const float *xc = X + p * H * W;
        float *yc = Y + p * OH * OW;
        for (int64_t oy = 0; oy < OH; oy++) {
            float *yr = yc + oy * OW;
            int64_t iy0 = oy * g->sh - g->pt, nr = 0, nrp = 0;
            const float *lastrow = NULL;
            for (int64_t ky = 0; ky < g->kh; ky++) {
                int64_t iy = iy0 + ky * g->dh;
                if (iy >= H + g->peh)
                    continue;
                nrp++;
                if (iy >= 0 && iy < H) {
                    nr++;
                    lastrow = xc + iy * W;
                }
            }
            if (nr == 0) {
                memset(yr, 0, (size_t)OW * sizeof *yr);
                continue;
            }
            /* Rows come in increasing order: the last one reads furthest. */
            int64_t Wv = x_end && lastrow + Wp <= x_end ? Wp : W;
            const float *first = NULL, *second = NULL;
            int64_t seen = 0;
            for (int64_t ky = 0; ky < g->kh; ky++) {
                int64_t iy = iy0 + ky * g->dh;
                if (iy < 0 || iy >= H)
                    continue;
                const float *row = xc + iy * W;
                if (seen == 0)
                    first = row;
                else if (seen == 1)
                    second = row;
                else if (seen == 2)
                    row_op3(vm, first, second, row, Wv, avg);
                else if (avg)
                    row_add(vm, row, Wv);
                else
                    row_max(vm, row, Wv);
                seen++;
            }
            if (nr == 1)
                row_copy(vm, first, Wv);
            else if (nr == 2)
                row_op2(vm, first, second, Wv, avg);
            const float *v = vm;
            if (ox_hi >= ox_lo) {
                int64_t x0 = ox_lo * g->sw - g->pl, L = (ox_hi - ox_lo) * g->sw + 1;
                int64_t n_out = ox_hi - ox_lo + 1, Lp = vround(L);
                row_taps(hm, v + x0, Lp, g->kw, g->dw, avg);
                if (avg)
                    row_div(hm, (float)((g->include_pad ? nrp : nr) * g->kw), Lp);
                if (g->sw == 1)
                    memcpy(yr + ox_lo, hm, (size_t)n_out * sizeof *yr);
                else
                    for (int64_t i = 0; i < n_out; i++)
                        yr[ox_lo + i] = hm[i * g->sw];
            }
            for (int64_t ox = 0; ox < OW; ox++) {
                if (ox >= ox_lo && ox <= ox_hi) {
                    ox = ox_hi;   /* done above */
                    continue;
                }
                int64_t ix0 = ox * g->sw - g->pl, nc = 0, ncp = 0;
                float acc = 0.0f;
                for (int64_t kx = 0; kx < g->kw; kx++) {
                    int64_t ix = ix0 + kx * g->dw;
                    if (ix >= W + g->pew)
                        continue;
                    ncp++;
                    if (ix < 0 || ix >= W)
                        continue;
                    acc = nc == 0 ? v[ix] : avg ? acc + v[ix] : maxn(acc, v[ix]);
                    nc++;
                }
                if (avg) {
                    int64_t div = g->include_pad ? nrp * ncp : nr * nc;
                    yr[ox] = div ? acc / (float)div : 0.0f;
                } else {
                    yr[ox] = nc ? acc : 0.0f;
                }
            }
        }
    }
    if (buf != sbuf)
        free(buf);
    return true;
}

OX__EW_CLONES void nn_pool2d_nhwc(const nn_pool2d *g, int64_t C, const float *X, float *Y,
                                  int64_t r0, int64_t r1)
{
    nn_pool2d_nhwc_ys(g, C, X, Y, C, r0, r1);
}

/* ys: floats between output pixels (C, or more when Y is a channel slice
 * of a wider NHWC tensor: a lazy Concat's part, exec.c). */
OX__EW_CLONES void nn_pool2d_nhwc_ys(const nn_pool2d *g, int64_t C, const float *X, float *Y,
                                     int64_t ys, int64_t r0, int64_t r1)
{
    const int64_t H = g->H, W = g->W, OH = g->OH, OW = g->OW;
    for (int64_t r = r0; r < r1; r++) {
        int64_t n = r / OH, oy = r % OH;
        int64_t iy0 = oy * g->sh - g->pt, nrp = 0;
        for (int64_t ky = 0; ky < g->kh; ky++)
            nrp += iy0 + ky * g->dh < H + g->peh;
        const float *xn = X + n * H * W * C;
        for (int64_t ox = 0; ox < OW; ox++) {
            float *y = Y + (r * OW + ox) * ys;
            int64_t ix0 = ox * g->sw - g->pl, taps = 0, ncp = 0;
            for (int64_t kx = 0; kx < g->kw; kx++)
                ncp += ix0 + kx * g->dw < W + g->pew;
            for (int64_t ky = 0; ky < g->kh; ky++) {
                int64_t iy = iy0 + ky * g->dh;
                if (iy < 0 || iy >= H)
                    continue;
                for (int64_t kx = 0; kx < g->kw; kx++) {
                    int64_t ix = ix0 + kx * g->dw;
                    if (ix < 0 || ix >= W)
                        continue;
                    const float *x = xn + (iy * W + ix) * C;
                    if (taps == 0)
                        row_copy(y, x, C);
                    else if (g->avg)
                        row_add(y, x, C);
                    else
                        row_max(y, x, C);
                    taps++;
                }
            }
            if (taps == 0)
                memset(y, 0, (size_t)C * sizeof *y);
            else if (g->avg)
                row_div(y, (float)(g->include_pad ? nrp * ncp : taps), C);
        }
    }
}
