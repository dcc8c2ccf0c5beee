/* Row engine of the com.microsoft GELU family (gelu_rows.c). */
#ifndef ONNXSCOPE_EXEC_GELU_ROWS_H
#define ONNXSCOPE_EXEC_GELU_ROWS_H

#include <stdint.h>

struct ox_thread_pool;

enum { OX__GELU_ERF, OX__GELU_TANH, OX__GELU_QUICK };

/* Y[i] = gelu(X[i] + B[i % bn]) for n elements (B may be NULL); Y may be X.
 * QUICK: v * sigmoid(alpha * v). */
void ox__gelu_rows(struct ox_thread_pool *pool, const float *X, float *Y, int64_t n,
                   const float *B, int64_t bn, int kind, float alpha);

#endif
