/* Symmetric int8 quantization arithmetic (see quant_math.h). */
#include <math.h>

#include "passes/quant_math.h"

float ox__q_round_even(float x)
{
    return nearbyintf(x);   /* FE_TONEAREST: ties go to the even neighbour */
}

int8_t ox__q_quant_i8(float x, float s)
{
    float r = ox__q_round_even(x / s);
    if (isnan(r))
        return 0;
    return (int8_t)(r < -127.0f ? -127 : r > 127.0f ? 127 : (int)r);
}

float ox__q_sym_scale(float amax)
{
    /* Dividing in float, as QuantizeLinear's own scale would be stored. */
    return amax > 0.0f && isfinite(amax) ? amax / 127.0f : 1.0f;
}

void ox__q_quantize_sym(const float *w, int64_t outer, int64_t C, int64_t inner, int8_t *q,
                        float *scales, ox_q_stats *st)
{
    st->max_abs_err = 0;
    st->sum_sq = st->sum_sq_err = 0;
    st->scale_min = INFINITY;
    st->scale_max = 0;
    for (int64_t c = 0; c < C; c++) {
        float amax = 0.0f;
        for (int64_t o = 0; o < outer; o++)
            for (int64_t k = 0; k < inner; k++) {
                float a = fabsf(w[(o * C + c) * inner + k]);
                if (a > amax)
                    amax = a;
            }
        float s = ox__q_sym_scale(amax);
        scales[c] = s;
        if (s < st->scale_min)
            st->scale_min = s;
        if (s > st->scale_max)
            st->scale_max = s;
        for (int64_t o = 0; o < outer; o++)
            for (int64_t k = 0; k < inner; k++) {
                int64_t i = (o * C + c) * inner + k;
                q[i] = ox__q_quant_i8(w[i], s);
                /* What DequantizeLinear gives back: q * s in float. */
                double e = fabs((double)w[i] - (double)((float)q[i] * s));
                if (e > st->max_abs_err)
                    st->max_abs_err = e;
                st->sum_sq += (double)w[i] * w[i];
                st->sum_sq_err += e * e;
            }
    }
    if (C <= 0)
        st->scale_min = st->scale_max = 0;
}

double ox__q_snr_db(const ox_q_stats *st)
{
    if (st->sum_sq_err <= 0)
        return HUGE_VAL;
    if (st->sum_sq <= 0)
        return -HUGE_VAL;
    return 10.0 * log10(st->sum_sq / st->sum_sq_err);
}

void ox__q_dynamic_params(const float *x, int64_t n, float *scale, uint8_t *zp)
{
    float mn = 0.0f, mx = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        if (x[i] < mn)
            mn = x[i];
        if (x[i] > mx)
            mx = x[i];
    }
    float s = (mx - mn) / 255.0f;
    float z = s != 0.0f ? ox__q_round_even(0.0f - mn / s) : 0.0f;
    *scale = s;
    *zp = (uint8_t)(z < 0 ? 0 : z > 255 ? 255 : (int)z);
}
