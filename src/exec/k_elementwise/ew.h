/* Internal helpers shared by the elementwise and reduction kernels:
 * numpy broadcasting driven by collapsed strides (computed once per call),
 * "compute types" that narrow formats are widened into, and the general
 * element conversion used by Cast. Not a public API (ox__ prefix). */
#ifndef ONNXSCOPE_EXEC_EW_H
#define ONNXSCOPE_EXEC_EW_H

#include <stdbool.h>
#include <stdint.h>

#include "onnxscope/exec.h"
#include "onnxscope/tensor.h"

#define OX__EW_MAX_OPS 4   /* output + up to 3 inputs (Where) */
/* Elements per parallel chunk: below twice this a call runs serially, so
 * small (shape-computation) tensors never pay for thread hand-off. */
#define OX__EW_GRAIN 32768

/* x86-64: hot loops also get an AVX2 clone, picked at load time when the
 * CPU has it (no FMA contraction, so results match the baseline build). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define OX__EW_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define OX__EW_CLONES
#endif

/* Inner loop over n elements. p[0] is the output, p[1..k] the inputs;
 * s[j] is the element step of operand j along the loop (0 = broadcast
 * scalar, 1 = contiguous; the output always has step 1). */
typedef void (*ox__ew_inner_fn)(int64_t n, char *const *p, const int64_t *s,
                                void *ud);

/* Broadcast shape of k tensors (numpy rules). Returns false if the shapes
 * are incompatible. */
bool ox__bcast_shape(int k, const ox_tensor *const *ts, int *rank,
                     int64_t *dims);

/* Runs fn over the broadcast of k inputs into an output of shape
 * (rank, dims). in_rank/in_dims describe the inputs, ptr[0] the output
 * bytes and ptr[1..k] the input bytes, esz[0..k] their element sizes.
 * Dimensions are collapsed first, so a same-shape call is one fn call
 * (per chunk when pool is given and the output is large; fn must then be
 * safe to call concurrently on disjoint output ranges). */
void ox__bcast_run(int rank, const int64_t *dims, int k, const int *in_rank,
                   const int64_t *const *in_dims, void *const *ptr,
                   const size_t *esz, ox__ew_inner_fn fn, void *ud,
                   ox_thread_pool *pool);

/* The type a kernel computes in for dt: float for float/f16/bf16/f8/f4,
 * double, int64 for signed integers, uint64 for unsigned integers and bool.
 * OX_DT_UNDEFINED for string or unknown. */
ox_dtype ox__compute_type(ox_dtype dt);
size_t ox__dtype_size(ox_dtype dt); /* bytes of one element; 0 if packed/string */

/* Element conversion between any two types (strings are ox_bytes arrays,
 * sub-byte types packed low bits first). Flags: SATURATE applies to float8
 * targets (the Cast default); ROUND_* pick float8e8m0 rounding (default up).
 * Returns OX_EUNSUPPORTED for pairs that cannot be converted. */
#define OX__CVT_SATURATE 1u
#define OX__CVT_ROUND_DOWN 2u
#define OX__CVT_ROUND_NEAREST 4u
ox_status ox__convert(ox_dtype sdt, const void *src, ox_dtype ddt, void *dst,
                      int64_t n, unsigned flags, ox_error *err);

/* Pointer to t's elements as compute type ct. When t is already of type ct
 * that is t's own data; otherwise a converted copy is put in *tmp (caller
 * frees). Returns NULL (with err set) on failure. For empty tensors returns
 * a non-NULL dummy pointer. */
const void *ox__as_type(const ox_tensor *t, ox_dtype ct, void **tmp,
                        ox_error *err);

/* Output data pointer of type ct for out: out's own bytes when its dtype is
 * ct, else a scratch array in *tmp; call ox__finish_out afterwards. */
void *ox__out_as_type(ox_tensor *out, ox_dtype ct, void **tmp, ox_error *err);
ox_status ox__finish_out(ox_tensor *out, ox_dtype ct, void *tmp, ox_error *err);

/* Reads an integer list from a 1-D (or scalar) int32/int64 tensor.
 * Returns count or -1 (err set). *vals is malloc'd by the callee. */
int ox__read_ints(const ox_tensor *t, int64_t **vals, ox_error *err);

/* Kernel-side argument checks. */
ox_status ox__need_inputs(ox_kernel_ctx *c, int n);

/* Elementwise kernels, defined across the files of this folder. */
#define OX__EW_KERNELS(X) \
    X(Abs) X(Neg) X(Reciprocal) X(Floor) X(Ceil) X(Round) X(Sqrt) X(Exp)  \
    X(Log) X(Sin) X(Cos) X(Tan) X(Asin) X(Acos) X(Atan) X(Sinh) X(Cosh)   \
    X(Asinh) X(Acosh) X(Atanh) X(Erf) X(Sign) X(IsNaN) X(IsInf) X(Not)    \
    X(BitwiseNot) X(Relu) X(LeakyRelu) X(Elu) X(Selu) X(Celu) X(Sigmoid)  \
    X(HardSigmoid) X(HardSwish) X(Softplus) X(Softsign) X(Tanh)           \
    X(ThresholdedRelu) X(Mish) X(Gelu) X(Shrink) X(Clip)                  \
    X(Add) X(Sub) X(Mul) X(Div) X(Pow) X(Mod) X(Max) X(Min) X(Sum)        \
    X(Mean) X(BitShift) X(BitwiseAnd) X(BitwiseOr) X(BitwiseXor) X(And)   \
    X(Or) X(Xor) X(Equal) X(Greater) X(GreaterOrEqual) X(Less)            \
    X(LessOrEqual) X(PRelu) X(Where) X(Cast) X(CastLike) X(Swish) X(SwiGLU)

#define OX__DECL_KERNEL(name) ox_status ox__k_##name(ox_kernel_ctx *c);
OX__EW_KERNELS(OX__DECL_KERNEL)

#endif
