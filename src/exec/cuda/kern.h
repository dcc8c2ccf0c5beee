/* Our own CUDA kernels (kernels.cu), called from runtime.c through these
 * plain C launchers. Every launcher enqueues on `stream` (a cudaStream_t
 * passed as void *, so this header needs no CUDA header) and returns the
 * launch's cudaError_t as an int (0 = success). Shapes and strides are in
 * elements; `OX_CK_MAX_RANK` bounds every index decomposition (the planner
 * keeps anything higher on the CPU). */
#ifndef ONNXSCOPE_EXEC_CUDA_KERN_H
#define ONNXSCOPE_EXEC_CUDA_KERN_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OX_CK_MAX_RANK 8

/* Elementwise operators of one input (a, b: attribute parameters). */
enum {
    OX_CK_IDENTITY = 0, OX_CK_RELU, OX_CK_SIGMOID, OX_CK_TANH, OX_CK_EXP, OX_CK_LOG,
    OX_CK_SQRT, OX_CK_ERF, OX_CK_NEG, OX_CK_ABS, OX_CK_RECIPROCAL,
    OX_CK_CLIP,        /* min(max(x, a), b) */
    OX_CK_LEAKYRELU,   /* x < 0 ? a*x : x */
    OX_CK_GELU,        /* exact: x/2 (1 + erf(x/sqrt 2)) */
    OX_CK_HARDSIGMOID, /* max(0, min(1, a*x + b)) */
    OX_CK_HARDSWISH,   /* x * max(0, min(1, x/6 + 1/2)) */
    OX_CK_FLOOR, OX_CK_CEIL,
    OX_CK_GELU_TANH,   /* x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
    OX_CK_N_UNARY
};

/* Elementwise operators of two inputs (numpy broadcasting by strides). */
enum {
    OX_CK_ADD = 0, OX_CK_SUB, OX_CK_MUL, OX_CK_DIV, OX_CK_POW, OX_CK_MAX, OX_CK_MIN,
    OX_CK_N_BINARY
};

/* Element types of Cast (onnx TensorProto codes). */
enum { OX_CK_T_F32 = 1, OX_CK_T_U8 = 2, OX_CK_T_I8 = 3, OX_CK_T_I32 = 6, OX_CK_T_I64 = 7,
       OX_CK_T_BOOL = 9, OX_CK_T_F64 = 11 };

/* Cast of n elements between the types above (float to integer truncates
 * toward zero, to bool is != 0), as the CPU kernel does. */
int ox_ck_cast(const void *x, int from, void *y, int to, int64_t n, void *stream);

/* Reductions. */
enum { OX_CK_RSUM = 0, OX_CK_RMEAN, OX_CK_RMAX, OX_CK_RMIN, OX_CK_RSUMSQ, OX_CK_RL2 };

int ox_ck_unary(int op, const float *x, float *y, int64_t n, float a, float b, void *stream);

/* y[i] = op(a[i . astr], b[i . bstr]) over the output index i of `dims`
 * (rank entries); a stride 0 broadcasts. */
int ox_ck_binary(int op, const float *a, const float *b, float *y, int rank,
                 const int64_t *dims, const int64_t *astr, const int64_t *bstr, int64_t n,
                 void *stream);

/* Where: y = c ? x : z, 4-byte elements, broadcasting by strides. */
int ox_ck_where(const uint8_t *c, const void *x, const void *z, void *y, int rank,
                const int64_t *dims, const int64_t *cstr, const int64_t *xstr,
                const int64_t *zstr, int64_t n, void *stream);

/* The general strided copy behind Transpose, Slice, Concat, Split,
 * Expand and broadcast fills: for every index i of `dims`,
 * y[yoff + i . ystr] = x[xoff + i . xstr], elements of `elem` bytes (1, 2,
 * 4 or 8). */
int ox_ck_copy(const void *x, void *y, int elem, int rank, const int64_t *dims,
               int64_t xoff, const int64_t *xstr, int64_t yoff, const int64_t *ystr,
               int64_t n, void *stream);

/* Gather along an axis: data viewed as (outer, axis_len, inner), indices
 * (n_idx of int64, or int32 when idx32) wrap when negative; an index out of
 * range yields zeros (the planner only places Gather where the CPU kernel
 * would not have failed on the same values: see runtime.c). */
int ox_ck_gather(const void *data, const void *idx, int idx32, void *y, int elem,
                 int64_t outer, int64_t axis_len, int64_t inner, int64_t n_idx,
                 void *stream);

/* Reduction of x over the axes not kept: every output element j (kept
 * index decomposed by kdims/kstr) reduces over the nr-dim box rdims/rstr. */
int ox_ck_reduce(int op, const float *x, float *y, int64_t n_out, int nk,
                 const int64_t *kdims, const int64_t *kstr, int nr, const int64_t *rdims,
                 const int64_t *rstr, int64_t n_red, void *stream);

/* Softmax (or LogSoftmax) of x viewed as (outer, len, inner) along len. */
int ox_ck_softmax(const float *x, float *y, int64_t outer, int64_t len, int64_t inner,
                  int log, void *stream);

/* Layer normalization of rows of `cols` floats: y = (h - mean) / sqrt(var +
 * eps) * gamma + beta with h = x + skip + bias (skip, bias, beta may be
 * NULL). rms: no mean subtraction (SimplifiedLayerNormalization).
 * sum_out (may be NULL) receives h (SkipLayerNormalization's 4th output). */
int ox_ck_layernorm(const float *x, const float *skip, const float *bias,
                    const float *gamma, const float *beta, float *y, float *sum_out,
                    int64_t rows, int64_t cols, float eps, int rms, void *stream);

/* Inference BatchNormalization over NC(spatial) with `inner` = spatial size. */
int ox_ck_batchnorm(const float *x, float *y, const float *scale, const float *bias,
                    const float *mean, const float *var, float eps, int64_t n, int64_t c,
                    int64_t inner, void *stream);

/* Epilogue: y[i] = act(y[i] + bias[(i / inner) % c]) (bias may be NULL),
 * act one of the unary operators above with its parameters. */
int ox_ck_bias_act(float *y, const float *bias, int64_t n, int64_t c, int64_t inner,
                   int act, float a, float b, void *stream);

/* Attention scores in place: rows of sk scores of (batch, heads, sq) get
 * scale, the key mask (int32 (batch, sk), 0 = masked; may be NULL), the
 * causal mask when `causal` (query q sees keys <= q + sk - sq), then a
 * softmax. */
int ox_ck_attn_softmax(float *s, const int32_t *mask, int64_t batch, int64_t heads,
                       int64_t sq, int64_t sk, float scale, int causal, void *stream);

/* Pooling over NCHW into the (oh, ow) the plan gives (so ceil mode too):
 * pads ph/pw at the start, ph1/pw1 at the end; max (avg = 0) or average
 * with (count_pad) or without the pad positions counted. */
int ox_ck_pool2d(const float *x, float *y, int64_t n, int64_t c, int64_t h, int64_t w,
                 int64_t oh, int64_t ow, int kh, int kw, int sh, int sw, int ph, int pw,
                 int ph1, int pw1, int dh, int dw, int avg, int count_pad, void *stream);

/* float32 <-> float16 (IEEE binary16 bits; round to nearest even, as
 * ox_cuda_to_half on the host): the fp16 operands of GEMMs and Conv. */
int ox_ck_f32_to_f16(const float *x, uint16_t *y, int64_t n, void *stream);
int ox_ck_f16_to_f32(const uint16_t *x, float *y, int64_t n, void *stream);

/* Attention with flash-attention style tiling: q, k, v (batch, heads, s,
 * d) contiguous, d <= 128 and a multiple of 4; per block 16 queries of one
 * (batch, head), keys and values in tiles of 32 in shared memory, an
 * online softmax (running max and sum, rescaled per tile), so the s x s
 * scores never exist. Masks as ox_ck_attn_softmax (a query whose keys are
 * all masked gets zeros). Writes y as (batch, s, heads, d). */
int ox_ck_flash_attn(const float *q, const float *k, const float *v, const int32_t *mask,
                     float *y, int64_t batch, int64_t heads, int64_t s, int64_t d, float scale,
                     int causal, void *stream);

#ifdef __cplusplus
}
#endif

#endif
