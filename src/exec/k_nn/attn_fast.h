/* Vectorized row loops of the tiled attention core (attn_fast.c). */
#ifndef ONNXSCOPE_EXEC_ATTN_FAST_H
#define ONNXSCOPE_EXEC_ATTN_FAST_H

#include <stdint.h>

/* The largest of s[0..n), -inf for n == 0 (NaNs are skipped). */
float ox__attn_row_max(const float *s, int64_t n);
/* s[k] = exp(s[k] - m) in place; returns their sum. */
float ox__attn_row_exp(float *s, int64_t n, float m);
/* row[k] += src[k]. */
void ox__attn_row_add(float *row, const float *src, int64_t n);
/* row[k] = -inf where keep[k] is 0 (branch-free: a random mask defeats
 * branch prediction). */
void ox__attn_row_keep(float *row, const uint8_t *keep, int64_t n);
/* y[k] *= f. */
void ox__attn_row_scale(float *y, int64_t n, float f);

#endif
