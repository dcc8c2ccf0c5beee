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

/* h[i] = max (or sum) over t < k of v[i + t * d], i < n. */
static inline void row_taps(float *restrict h, const float *restrict v, int64_t n,
                                   int64_t k, int64_t d, bool avg)
{
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

#define STACK_W 1024

OX__EW_CLONES bool nn_pool2d_nchw(const nn_pool2d *g, const float *X, float *Y, int64_t p0, int64_t p1)
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
    float sbuf[2 * STACK_W];
    float *buf = W <= STACK_W ? sbuf : malloc(2 * (size_t)W * sizeof(float));
    if (!buf)
        return false;
    float *vm = buf, *hm = buf + W;
    for (int64_t p = p0; p < p1; p++) {
        const float *xc = X + p * H * W;
        float *yc = Y + p * OH * OW;
        for (int64_t oy = 0; oy < OH; oy++) {
            float *yr = yc + oy * OW;
            int64_t iy0 = oy * g->sh - g->pt, nr = 0, nrp = 0;
            const float *first = NULL;
            for (int64_t ky = 0; ky < g->kh; ky++) {
                int64_t iy = iy0 + ky * g->dh;
                if (iy >= H + g->peh)
                    continue;
                nrp++;
                if (iy < 0 || iy >= H)
                    continue;
                const float *row = xc + iy * W;
                if (nr == 0) {
                    first = row;
                } else {
                    if (nr == 1)
                        memcpy(vm, first, (size_t)W * sizeof *vm);
                    if (avg)
                        row_add(vm, row, W);
                    else
                        row_max(vm, row, W);
                }
                nr++;
            }
            if (nr == 0) {
                memset(yr, 0, (size_t)OW * sizeof *yr);
                continue;
            }
            const float *v = nr == 1 ? first : vm;
            if (ox_hi >= ox_lo) {
                int64_t x0 = ox_lo * g->sw - g->pl, L = (ox_hi - ox_lo) * g->sw + 1;
                int64_t n_out = ox_hi - ox_lo + 1;
                if (g->sw == 1) {
                    row_taps(yr + ox_lo, v + x0, L, g->kw, g->dw, avg);
                } else {
                    row_taps(hm, v + x0, L, g->kw, g->dw, avg);
                    for (int64_t i = 0; i < n_out; i++)
                        yr[ox_lo + i] = hm[i * g->sw];
                }
                if (avg)
                    row_div(yr + ox_lo, (float)((g->include_pad ? nrp : nr) * g->kw), n_out);
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

OX__EW_CLONES void nn_pool2d_nhwc(const nn_pool2d *g, int64_t C, const float *X, float *Y, int64_t r0,
                    int64_t r1)
{
    const int64_t H = g->H, W = g->W, OH = g->OH, OW = g->OW;
    for (int64_t r = r0; r < r1; r++) {
        int64_t n = r / OH, oy = r % OH;
        int64_t iy0 = oy * g->sh - g->pt, nrp = 0;
        for (int64_t ky = 0; ky < g->kh; ky++)
            nrp += iy0 + ky * g->dh < H + g->peh;
        const float *xn = X + n * H * W * C;
        for (int64_t ox = 0; ox < OW; ox++) {
            float *y = Y + (r * OW + ox) * C;
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
