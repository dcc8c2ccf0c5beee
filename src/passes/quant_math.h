/* The arithmetic of symmetric int8 weight quantization, apart from the
 * graph rewriting so that unit tests check it directly. ONNX's
 * QuantizeLinear: y = saturate(round(x / scale) + zero_point), rounding
 * half to even. */
#ifndef ONNXSCOPE_QUANT_MATH_H
#define ONNXSCOPE_QUANT_MATH_H

#include <stdint.h>

/* Round half to even (the current rounding mode must be the default
 * to-nearest, as it is unless a program changes it). */
float ox__q_round_even(float x);

/* One int8 value of x at scale s (zero point 0): saturate(round(x / s))
 * to [-127, 127] (the symmetric range: -128 would make the scale
 * asymmetric). */
int8_t ox__q_quant_i8(float x, float s);

/* The symmetric scale of a channel whose largest magnitude is amax:
 * amax / 127, and 1 when amax is 0 (all zeros quantize to 0). */
float ox__q_sym_scale(float amax);

typedef struct ox_q_stats {
    double max_abs_err;
    double sum_sq, sum_sq_err;   /* for the SNR */
    float scale_min, scale_max;
} ox_q_stats;

/* Quantizes w viewed as [outer, C, inner] with one scale per index of the
 * middle axis (C = 1: per tensor): q (numel int8), scales (C floats).
 * Fills st. */
void ox__q_quantize_sym(const float *w, int64_t outer, int64_t C, int64_t inner, int8_t *q,
                        float *scales, ox_q_stats *st);

/* SNR in dB of the stats; HUGE_VAL when the error is 0. */
double ox__q_snr_db(const ox_q_stats *st);

/* DynamicQuantizeLinear's parameters for data x[0..n): scale =
 * (max(0, max x) - min(0, min x)) / 255, zero point = saturate(round(0 -
 * min/scale)) in [0, 255]; scale 0 (x all 0) gives zero point 0. */
void ox__q_dynamic_params(const float *x, int64_t n, float *scale, uint8_t *zp);

#endif
