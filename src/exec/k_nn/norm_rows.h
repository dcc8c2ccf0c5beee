/* Row engine of the layer-norm family (norm_rows.c). */
#ifndef ONNXSCOPE_EXEC_NORM_ROWS_H
#define ONNXSCOPE_EXEC_NORM_ROWS_H

#include <stdbool.h>
#include <stdint.h>

struct ox_thread_pool;

typedef struct ox__ln_rows_args {
    const float *X;    /* rows x inner, contiguous */
    float *Y;          /* same shape; may be X itself (each row's statistics
                        * are complete before it is written) */
    int64_t rows, inner;
    const float *S, *B; /* inner elements each, or NULL */
    bool rms;          /* RMSNorm: no mean subtracted */
    float eps;
    float *mean, *inv; /* rows elements each, or NULL */
} ox__ln_rows_args;

void ox__ln_rows(struct ox_thread_pool *pool, const ox__ln_rows_args *a);

#endif
