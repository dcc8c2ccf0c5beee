/* Shared helpers of the neural-network kernel family (k_nn): attribute
 * access, float staging of float16/bfloat16/double tensors (kernels compute
 * in float32), and the packed SGEMM used by MatMul, Gemm, Conv and friends. */
#ifndef ONNXSCOPE_K_NN_COMMON_H
#define ONNXSCOPE_K_NN_COMMON_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "onnxscope/exec.h"
#include "onnxscope/ir.h"
#include "onnxscope/tensor.h"

/* Library-internal symbols keep the project prefix in the object files. */
#define nn_fail ox_nn_fail
#define nn_attr_i ox_nn_attr_i
#define nn_attr_f ox_nn_attr_f
#define nn_attr_s ox_nn_attr_s
#define nn_attr_ints ox_nn_attr_ints
#define nn_attr_floats ox_nn_attr_floats
#define nn_is_float_dt ox_nn_is_float_dt
#define nn_load_f32 ox_nn_load_f32
#define nn_fout_new ox_nn_fout_new
#define nn_fout_done ox_nn_fout_done
#define nn_fout_drop ox_nn_fout_drop
#define nn_store_f32 ox_nn_store_f32
#define nn_get_i ox_nn_get_i
#define nn_out ox_nn_out
#define nn_sgemm ox_nn_sgemm
#define nn_igemm ox_nn_igemm
#define nn_sgemm_mt ox_nn_sgemm_mt
#define nn_matmul_shape ox_nn_matmul_shape
#define nn_act_parse ox_nn_act_parse
#define nn_act_apply ox_nn_act_apply
#define nn_set_i ox_nn_set_i
#define nn_expand ox_nn_expand
#define nn_qgemm ox_nn_qgemm
#define nn_qgemm_kp ox_nn_qgemm_kp
#define nn_qgemm_small ox_nn_qgemm_small
#define nn_qgemm_vnni_ok ox_nn_qgemm_vnni_ok
#define nn_qgemm_vnni_pack_b ox_nn_qgemm_vnni_pack_b
#define nn_qgemm_vnni ox_nn_qgemm_vnni
#define nn_qgemm_vnni_lda ox_nn_qgemm_vnni_lda
#define nn_qgemm_u8_rows ox_nn_qgemm_u8_rows
#define nn_qgemm_sub_colsum ox_nn_qgemm_sub_colsum
#define nn_qgemm_dequant ox_nn_qgemm_dequant
#define nn_qgemm_i32 ox_nn_qgemm_i32
#define nn_qgemm_pack_a ox_nn_qgemm_pack_a
#define nn_qgemm_pack_b ox_nn_qgemm_pack_b
#define nn_dyn_quant ox_nn_dyn_quant

/* ---- errors and attributes ------------------------------------------------ */

#define NN_OPNAME(c) ((c)->node && (c)->node->op_type ? (c)->node->op_type : "?")
#define NN_FAIL(c, ...) nn_fail((c), OX_EINVAL, __VA_ARGS__)

/* One spatial dimension of a sliding window (Conv, ConvTranspose's input
 * side, pooling): the output size and the begin/end padding under
 * auto_pad (SAME_UPPER, SAME_LOWER, VALID, NOTSET with explicit pads when
 * has_pads). ceil_mode rounds the output up as pooling's ceil_mode does,
 * keeping the last window starting inside the input or the left pad.
 * Returns NULL, or why the geometry is invalid. */
const char *nn_window_dim(const char *auto_pad, int64_t in, int64_t k, int64_t s, int64_t d,
                          bool has_pads, int64_t pad_b, int64_t pad_e, bool ceil_mode,
                          int64_t *pb, int64_t *pe, int64_t *out);
#define NN_NOMEM(c) nn_fail((c), OX_ENOMEM, "out of memory")
/* The status already recorded (after a helper failed), or OX_ENOMEM. */
#define NN_ST(c) ((c)->err && (c)->err->status ? (c)->err->status : OX_ENOMEM)

ox_status nn_fail(ox_kernel_ctx *c, ox_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

int64_t nn_attr_i(const ox_kernel_ctx *c, const char *name, int64_t dflt);
float nn_attr_f(const ox_kernel_ctx *c, const char *name, float dflt);
const char *nn_attr_s(const ox_kernel_ctx *c, const char *name, const char *dflt);
/* Copies up to max ints into out; returns the count, or -1 when absent,
 * or -2 when the attribute holds more than max. */
int nn_attr_ints(const ox_kernel_ctx *c, const char *name, int64_t *out, int max);
/* Float list attribute: count or -1 when absent (out may be NULL). */
int nn_attr_floats(const ox_kernel_ctx *c, const char *name, const float **out);

/* ---- dtype staging ---------------------------------------------------------- */

bool nn_is_float_dt(ox_dtype dt); /* float, float16, bfloat16, double */

/* Returns t's elements as float32. For float32 tensors this is the data
 * itself; otherwise a malloc'ed copy put in *tmp (caller frees *tmp).
 * NULL on OOM or unsupported dtype (error recorded). */
const float *nn_load_f32(ox_kernel_ctx *c, const ox_tensor *t, float **tmp);

/* An output written as float32 and converted on finish. */
typedef struct nn_fout {
    ox_tensor *t;
    float *f;
    bool tmp;
} nn_fout;

/* Allocates output i of dtype dt; o->f points to rank/dims floats. */
ox_status nn_fout_new(ox_kernel_ctx *c, int i, ox_dtype dt, int rank,
                      const int64_t *dims, nn_fout *o);
/* Converts staged floats to the output dtype and frees the staging. */
void nn_fout_done(nn_fout *o);
/* Frees the staging without converting (error path). */
void nn_fout_drop(nn_fout *o);

/* Stores n floats into a tensor of any numeric dtype starting at element 0. */
void nn_store_f32(ox_tensor *t, const float *src, int64_t n);

/* Integer view of an integer tensor's element i (int4/uint4 handled). */
int64_t nn_get_i(const ox_tensor *t, int64_t i);

/* Thin wrapper so kernels can allocate a tensor output and report OOM. */
ox_tensor *nn_out(ox_kernel_ctx *c, int i, ox_dtype dt, int rank, const int64_t *dims);

/* Broadcasts t (values f, as from nn_load_f32) to rank/dims with numpy
 * right-aligned rules; returns a malloc'ed array of prod(dims) floats, or
 * NULL with an error recorded when the shapes do not broadcast. */
float *nn_expand(ox_kernel_ctx *c, const ox_tensor *t, const float *f, int rank,
                 const int64_t *dims);

/* ---- GEMM ------------------------------------------------------------------- */

/* C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C (row-major with leading
 * dimensions; beta == 0 ignores C's old contents, NaN included). */
void nn_sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
              float alpha, const float *A, int64_t lda, const float *B,
              int64_t ldb, float beta, float *C, int64_t ldc);

/* nn_sgemm split over the pool's threads along the larger of M and N
 * (pool may be NULL: runs serially). */
struct ox_thread_pool;
/* One-row product y += alpha * a B (gemv.c): B is [K, N] with row stride
 * ldb, or [N, K] when tb. y holds C's contribution already. Threads over N. */
#define nn_sgemv ox_nn_sgemv
void nn_sgemv(struct ox_thread_pool *pool, bool tb, int64_t N, int64_t K, float alpha,
              const float *a, const float *B, int64_t ldb, float *y);
void nn_sgemm_mt(struct ox_thread_pool *pool, bool trans_a, bool trans_b, int64_t M,
                 int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                 const float *B, int64_t ldb, float beta, float *C, int64_t ldc);

/* Per-thread scratch buffer `slot` (0: GEMM packed B, 1: convolution
 * im2col tiles, 2: GEMM packed A, 3: attention score tiles, 4: attention
 * staging on the kernel's own thread) of at least nfloats floats, 64-byte
 * aligned, kept for the thread's life and freed when it exits. Fresh pages
 * cost a page fault each (tens of us on virtual machines), so per-call
 * malloc/free of big buffers dominated small GEMMs. NULL when out of
 * memory. A buffer stays valid until the same thread asks for the same
 * slot again. */
#define NN_SCRATCH_SLOTS 5
float *nn_scratch(int slot, size_t nfloats);

/* Integer GEMM for the quantized ops: C[M,N] (int32) = sum_k (A-za)(B-zb),
 * A and B given as int32 already offset-corrected by the caller. */
void nn_igemm(int64_t M, int64_t N, int64_t K, const int32_t *A,
              const int32_t *B, int32_t *C);

/* Exact 8-bit products (qgemm.c): A and B as int16 minus their zero
 * points. pack_a: M rows of K (int8/uint8 tensor a from element off; zp
 * scalar or per row; NULL: 0) padded to nn_qgemm_kp(K); pack_b: K x N
 * (zp scalar or per column) into 16-column panels. nn_qgemm: C[M,N] int32
 * = A x B, split over the pool (NULL: serial). The arrays are malloc'ed. */
int64_t nn_qgemm_kp(int64_t K);
int16_t *nn_qgemm_pack_a(const ox_tensor *a, int64_t off, int64_t M, int64_t K,
                         const ox_tensor *zp);
int16_t *nn_qgemm_pack_b(const ox_tensor *b, int64_t off, int64_t K, int64_t N,
                         const ox_tensor *zp);
struct ox_thread_pool;
void nn_qgemm(struct ox_thread_pool *pool, int64_t M, int64_t N, int64_t K, const int16_t *A,
              const int16_t *Bp, int32_t *C);
/* The same product for a few rows of A, reading B (int8/uint8 from element
 * off, K x N) in place: no packing (M = 1 decoding). */
void nn_qgemm_small(int64_t M, int64_t N, int64_t K, const int16_t *A, const ox_tensor *b,
                    int64_t off, const ox_tensor *zp, int32_t *C);
/* AVX-512 VNNI path for uint8 A x int8 B (true when the CPU has it and
 * neither ONNXSCOPE_NO_SIMD_QGEMM nor ONNXSCOPE_NO_VNNI is set): raw sums
 * sum_k a b, zero points left to the caller. pack_b: B (K x N) into 32-column
 * panels, colsum[j] = sum_k b. A rows are read with stride nn_qgemm_vnni_lda(K)
 * bytes, zero padded. */
bool nn_qgemm_vnni_ok(ox_dtype ta, ox_dtype tb);
int8_t *nn_qgemm_vnni_pack_b(const int8_t *b, int64_t K, int64_t N, int32_t *colsum);
int64_t nn_qgemm_vnni_lda(int64_t K);
void nn_qgemm_vnni(struct ox_thread_pool *pool, int64_t M, int64_t N, int64_t K,
                   const uint8_t *A, const int8_t *Bp, int32_t *C);
/* Vectorized helpers: copy M rows of K bytes to stride lda with their sums;
 * Y[j] -= za * colsum[j]; out = float(Y) * mul[j] (+ bias[j]). */
void nn_qgemm_u8_rows(const uint8_t *src, int64_t M, int64_t K, int64_t lda, uint8_t *dst,
                      int32_t *rowsum);
void nn_qgemm_sub_colsum(int32_t *Y, int64_t N, int32_t za, const int32_t *colsum);
void nn_qgemm_dequant(const int32_t *Y, int64_t rows, int64_t N, const float *mul,
                      const float *bias, float *out);
/* C = A x B for int32 operands within int16 (8-bit minus zero points), on
 * the packed kernel; false when out of memory. */
bool nn_qgemm_i32(struct ox_thread_pool *pool, int64_t M, int64_t N, int64_t K,
                  const int32_t *A, const int32_t *B, int32_t *C);
/* DynamicQuantizeLinear of x[0..n) (quant.c): y (may be NULL), scale and
 * zero point as ONNX defines them (round half to even). */
void nn_dyn_quant(const float *x, int64_t n, uint8_t *y, float *scale, uint8_t *zp);

/* Broadcasting batched matmul of float arrays with numpy semantics; ranks
 * must already be >= 2 (callers handle 1-D operands). Output shape written
 * to out_dims (rank out_rank = max(ra, rb)). */
ox_status nn_matmul_shape(ox_kernel_ctx *c, int ra, const int64_t *da, int rb,
                          const int64_t *db, int *out_rank, int64_t *out_dims);

/* ---- shape helpers ------------------------------------------------------------ */

static inline int64_t nn_prod(const int64_t *d, int n)
{
    int64_t p = 1;
    for (int i = 0; i < n; i++) p *= d[i];
    return p;
}

/* Normalises a possibly negative axis; -1 ... returns false when out of range. */
static inline bool nn_axis(int64_t axis, int rank, int *out)
{
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) return false;
    *out = (int)axis;
    return true;
}

/* Activation functions by ONNX name (RNN family, FusedConv). */
typedef struct nn_act {
    int kind;
    float alpha, beta;
} nn_act;
bool nn_act_parse(const char *name, float alpha, float beta, bool has_alpha,
                  bool has_beta, nn_act *out);
float nn_act_apply(const nn_act *a, float x);

/* ---- quantization helpers --------------------------------------------------- */

/* Representable range of an integer quantized type; false if not one. */
static inline bool nn_q_range(ox_dtype dt, int64_t *lo, int64_t *hi)
{
    switch (dt) {
    case OX_DT_UINT8: *lo = 0; *hi = 255; return true;
    case OX_DT_INT8: *lo = -128; *hi = 127; return true;
    case OX_DT_UINT16: *lo = 0; *hi = 65535; return true;
    case OX_DT_INT16: *lo = -32768; *hi = 32767; return true;
    case OX_DT_UINT4: *lo = 0; *hi = 15; return true;
    case OX_DT_INT4: *lo = -8; *hi = 7; return true;
    case OX_DT_UINT2: *lo = 0; *hi = 3; return true;
    case OX_DT_INT2: *lo = -2; *hi = 1; return true;
    case OX_DT_INT32: *lo = INT32_MIN; *hi = INT32_MAX; return true;
    default: return false;
    }
}

/* Rounds half to even (the ONNX quantization rule) and saturates. */
static inline int64_t nn_q_round_sat(double v, int64_t lo, int64_t hi)
{
    if (isnan(v)) return 0;
    double r = nearbyint(v);
    if (r < (double)lo) return lo;
    if (r > (double)hi) return hi;
    return (int64_t)r;
}

/* Writes integer v at element i of an integer tensor (sub-byte packed). */
void nn_set_i(ox_tensor *t, int64_t i, int64_t v);

/* Kernel definitions: every kernel is listed once in nn_kernels.h. */
#include "nn_kernels.h"
#define NN_DECL(dom, op, ver, fn) ox_status ox_nn_k_##fn(ox_kernel_ctx *c);
NN_KERNEL_LIST(NN_DECL)
#undef NN_DECL
#define NN_KERNEL(fn) ox_status ox_nn_k_##fn(ox_kernel_ctx *c)

#endif
