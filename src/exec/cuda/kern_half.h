/* float16 variants of our CUDA kernels (kernels_half.cu; docs/EXECUTOR.md
 * "float16 models on the GPU"), called from run_half.inc. Tensors hold
 * IEEE binary16 bits (uint16_t here, __half on the device); every kernel
 * widens to float32, computes in float32 (sums, maxima, means, variances:
 * float accumulators) and rounds the result once to the nearest even
 * float16, as the CPU executor's float16 kernels do. Parameters, shapes
 * and return values as the float32 launchers of kern.h. */
#ifndef ONNXSCOPE_EXEC_CUDA_KERN_HALF_H
#define ONNXSCOPE_EXEC_CUDA_KERN_HALF_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* onnx TensorProto code of float16 (the other codes are kern.h's OX_CK_T_*). */
#define OX_CK_T_F16 10

int ox_ckh_unary(int op, const uint16_t *x, uint16_t *y, int64_t n, float a, float b,
                 void *stream);
int ox_ckh_binary(int op, const uint16_t *a, const uint16_t *b, uint16_t *y, int rank,
                  const int64_t *dims, const int64_t *astr, const int64_t *bstr, int64_t n,
                  void *stream);
/* Where on 2-byte values (float16): y = c ? x : z. */
int ox_ckh_where(const uint8_t *c, const void *x, const void *z, void *y, int rank,
                 const int64_t *dims, const int64_t *cstr, const int64_t *xstr,
                 const int64_t *zstr, int64_t n, void *stream);
/* Cast with float16 on at least one side; the other one of kern.h's
 * OX_CK_T_* (float16 from/to integers goes through float32, as on the CPU). */
int ox_ckh_cast(const void *x, int from, void *y, int to, int64_t n, void *stream);
int ox_ckh_reduce(int op, const uint16_t *x, uint16_t *y, int64_t n_out, int nk,
                  const int64_t *kdims, const int64_t *kstr, int nr, const int64_t *rdims,
                  const int64_t *rstr, int64_t n_red, void *stream);
int ox_ckh_softmax(const uint16_t *x, uint16_t *y, int64_t outer, int64_t len, int64_t inner,
                   int log, void *stream);
int ox_ckh_layernorm(const uint16_t *x, const uint16_t *skip, const uint16_t *bias,
                     const uint16_t *gamma, const uint16_t *beta, uint16_t *y,
                     uint16_t *sum_out, int64_t rows, int64_t cols, float eps, int rms,
                     void *stream);
int ox_ckh_batchnorm(const uint16_t *x, uint16_t *y, const uint16_t *scale,
                     const uint16_t *bias, const uint16_t *mean, const uint16_t *var, float eps,
                     int64_t n, int64_t c, int64_t inner, void *stream);
/* y[i] = act(y[i] + bias[(i / inner) % c]) in float, rounded once. */
int ox_ckh_bias_act(uint16_t *y, const uint16_t *bias, int64_t n, int64_t c, int64_t inner,
                    int act, float a, float b, void *stream);
int ox_ckh_pool2d(const uint16_t *x, uint16_t *y, int64_t n, int64_t c, int64_t h, int64_t w,
                  int64_t oh, int64_t ow, int kh, int kw, int sh, int sw, int ph, int pw,
                  int ph1, int pw1, int dh, int dw, int avg, int count_pad, void *stream);

#ifdef __cplusplus
}
#endif

#endif
