/* Row loops of the tiled attention core (attn_core.c) in passes the
 * vectorizer takes: 16-lane max and sum (a float reduction is otherwise
 * left scalar without -fassociative-math), fastmath.h's exp. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "no-trapping-math", "no-math-errno")
#endif

#include <math.h>

#include "exec/k_elementwise/ew.h"
#include "exec/k_elementwise/fastmath.h"
#include "exec/k_nn/attn_fast.h"

enum { AL = 16 };

OX__EW_CLONES float ox__attn_row_max(const float *s, int64_t n)
{
    float mv[AL];
    for (int j = 0; j < AL; j++) mv[j] = -INFINITY;
    int64_t k = 0;
    for (; k + AL <= n; k += AL)
        for (int j = 0; j < AL; j++) mv[j] = s[k + j] > mv[j] ? s[k + j] : mv[j];
    float m = -INFINITY;
    for (int j = 0; j < AL; j++) m = mv[j] > m ? mv[j] : m;
    for (; k < n; k++) m = s[k] > m ? s[k] : m;
    return m;
}

#if defined(__GNUC__)
__attribute__((flatten))
#endif
OX__EW_CLONES float ox__attn_row_exp(float *s, int64_t n, float m)
{
    float sv[AL];
    for (int j = 0; j < AL; j++) sv[j] = 0;
    int64_t k = 0;
    for (; k + AL <= n; k += AL)
        for (int j = 0; j < AL; j++) {
            float e = ox__expf(s[k + j] - m);
            s[k + j] = e;
            sv[j] += e;
        }
    double sum = 0;
    for (; k < n; k++) {
        float e = ox__expf(s[k] - m);
        s[k] = e;
        sum += e;
    }
    for (int j = 0; j < AL; j++) sum += sv[j];
    return (float)sum;
}

OX__EW_CLONES void ox__attn_row_scale(float *y, int64_t n, float f)
{
    for (int64_t k = 0; k < n; k++) y[k] *= f;
}

OX__EW_CLONES void ox__attn_row_add(float *row, const float *src, int64_t n)
{
    for (int64_t k = 0; k < n; k++) row[k] += src[k];
}

OX__EW_CLONES void ox__attn_row_keep(float *row, const uint8_t *keep, int64_t n)
{
    for (int64_t k = 0; k < n; k++) row[k] = keep[k] ? row[k] : -INFINITY;
}
