/* Vectorized softmax row of the attention kernels (attn_fast.c). */
#ifndef ONNXSCOPE_EXEC_ATTN_FAST_H
#define ONNXSCOPE_EXEC_ATTN_FAST_H

#include <stdint.h>

void ox__attn_softmax_row(float *s, int64_t n);

#endif
