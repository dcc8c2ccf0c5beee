/* Attention's softmax row (attention.c's GEMM path): the masked, scaled
 * scores of one query turned into probabilities in place, in passes the
 * vectorizer takes (16-lane max and sum, fastmath.h's exp). A row whose
 * every score is -inf (fully masked) becomes zeros, as in the scalar core. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "no-trapping-math", "no-math-errno")
#endif

#include <math.h>

#include "exec/k_elementwise/ew.h"
#include "exec/k_elementwise/fastmath.h"
#include "exec/k_nn/attn_fast.h"

enum { AL = 16 };

#if defined(__GNUC__)
__attribute__((flatten))
#endif
OX__EW_CLONES void ox__attn_softmax_row(float *s, int64_t n)
{
    float mv[AL], sv[AL];
    for (int j = 0; j < AL; j++) {
        mv[j] = -INFINITY;
        sv[j] = 0;
    }
    int64_t k = 0;
    for (; k + AL <= n; k += AL)
        for (int j = 0; j < AL; j++)
            mv[j] = s[k + j] > mv[j] ? s[k + j] : mv[j];
    float m = -INFINITY;
    for (int j = 0; j < AL; j++)
        m = mv[j] > m ? mv[j] : m;
    for (; k < n; k++)
        m = s[k] > m ? s[k] : m;
    if (m == -INFINITY) {
        for (k = 0; k < n; k++)
            s[k] = 0;
        return;
    }
    for (k = 0; k + AL <= n; k += AL)
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
    for (int j = 0; j < AL; j++)
        sum += sv[j];
    float inv = sum > 0 ? (float)(1.0 / sum) : 0.0f;
    for (k = 0; k < n; k++)
        s[k] *= inv;
}
