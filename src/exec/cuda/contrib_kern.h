/* CUDA kernels of the com.microsoft ops the fusion passes emit
 * (contrib.cu; docs/EXECUTOR.md "Contrib ops and MultiHeadAttention on the
 * GPU"), called from contrib_rt.c. As kern.h: launchers enqueue on
 * `stream` and return the launch's cudaError_t as an int (0 = success);
 * float32 math, the CPU kernels' semantics (src/exec/k_nn). */
#ifndef ONNXSCOPE_EXEC_CUDA_CONTRIB_KERN_H
#define ONNXSCOPE_EXEC_CUDA_CONTRIB_KERN_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* y = gelu(x + bias[i % h]) (bias may be NULL); form 0: the exact erf
 * form (BiasGelu), 1: the tanh approximation (FastGelu), 2: QuickGelu
 * v * sigmoid(alpha * v). */
int ox_ck_bias_gelu(const float *x, const float *bias, float *y, int64_t n, int64_t h,
                    int form, float alpha, void *stream);

/* EmbedLayerNormalization's sum: row t = b * s + i of y (h floats) is
 * word[ids[t]] + pos[p] + seg[segs[t]] (seg NULL: none), p = pid[t] (pid
 * of b * s entries), pid[i] (pid_row: a [1, s] row) or i (pid NULL).
 * Indices are int32 when the matching *32 flag is set, else int64; an
 * index out of range gives a zero term (the planner only places the node
 * where the CPU kernel would have failed on the same values otherwise). */
int ox_ck_embed_sum(const void *ids, int ids32, const void *seg, int seg32, const void *pid,
                    int pid32, int pid_row, const float *word, int64_t n_word, const float *pos,
                    int64_t n_pos, const float *segw, int64_t n_seg, float *y, int64_t b,
                    int64_t s, int64_t h, void *stream);

/* mask_index: y[b] = number of non-zero entries of mask row b (s of them,
 * int32 when mask32, else int64); mask NULL: zeros. */
int ox_ck_mask_count(const void *mask, int mask32, int32_t *y, int64_t b, int64_t s,
                     void *stream);

/* MultiHeadAttention with flash-attention style tiling, reading the heads
 * straight out of q (b, sq, heads * hs), k (b, sk, heads * hs), v (b, sk,
 * heads * vs) and writing y (b, sq, heads * vs); hs, vs <= 128. bias (may
 * be NULL): 2 * heads * hs + heads * vs floats added to q, k, v. Scores:
 * scale * q.k, + mfv where kpm (int32 (b, sk), may be NULL) is 0, + ab
 * (attention_bias (ab_b, ab_h, sq, sk) with ab_b in {1, b}, ab_h in {1,
 * heads}; may be NULL); causal: key j > query i is excluded. Online softmax
 * (running max and sum per query), keys and values in tiles of 32 in
 * shared memory: no sq x sk scores exist. */
int ox_ck_mha(const float *q, const float *k, const float *v, const float *bias,
              const int32_t *kpm, const float *ab, int64_t ab_b, int64_t ab_h, float *y,
              int64_t b, int64_t heads, int64_t sq, int64_t sk, int64_t hs, int64_t vs,
              float scale, float mfv, int causal, void *stream);

/* Elementwise ops of masks and integer arithmetic (numpy broadcasting by
 * strides, as ox_ck_binary): comparisons of float32/int32/int64/bool
 * operands to bool, the logical ops of bools, and integer Add/Sub/Mul
 * (wrapping, as the CPU kernels). `dt`: onnx TensorProto code of the
 * operands (OX_CK_T_* of kern.h). */
enum { OX_CK_EQ = 0, OX_CK_LT, OX_CK_LE, OX_CK_GT, OX_CK_GE, OX_CK_AND, OX_CK_OR, OX_CK_XOR,
       OX_CK_NOT, OX_CK_IADD, OX_CK_ISUB, OX_CK_IMUL };
int ox_ck_mask_op(int op, int dt, const void *a, const void *b, void *y, int rank,
                  const int64_t *dims, const int64_t *astr, const int64_t *bstr, int64_t n,
                  void *stream);

#ifdef __cplusplus
}
#endif

#endif
