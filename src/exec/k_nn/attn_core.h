/* The attention core shared by ONNX Attention (opset 23/24) and the
 * com.microsoft Attention / MultiHeadAttention kernels (attention.c):
 * softmax(scale * Q K^T + mask) V per (batch, query head), with GQA head
 * sharing, causal masking, per-batch key lengths and a KV cache given as
 * two key segments (past, new) so that it is never concatenated unless the
 * present outputs are asked for.
 *
 * Two implementations (attn_core.c): the tiled one (the default) computes
 * a tile of queries against a tile of keys at a time with an online
 * softmax, so no more than ATTN_MQ x ATTN_NK scores exist per worker; the
 * scalar one (softcap and the qk_matmul_output modes, which need whole
 * rows) one query row at a time. Neither materializes the mask: it is read
 * in place through broadcast strides. */
#ifndef ONNXSCOPE_EXEC_ATTN_CORE_H
#define ONNXSCOPE_EXEC_ATTN_CORE_H

#include <stdbool.h>
#include <stdint.h>

#include "onnxscope/exec.h"

enum { ATTN_MQ = 64, ATTN_NK = 256 }; /* query rows x key columns per tile */

/* One run of keys and values: rows j of head (b, hk) at
 * K + b*k_st[0] + hk*k_st[1] + j*k_st[2] (element strides), likewise V. */
typedef struct attn_seg {
    const float *K, *V;
    int64_t len;
    int64_t k_st[3], v_st[3];
} attn_seg;

/* Additive float mask or boolean mask (true = attend), read in place:
 * element (b, h, i, j) at st[0]*b + st[1]*h + st[2]*i + j (a zero stride
 * broadcasts); columns j >= cols are masked out (-inf), as ONNX Attention
 * pads a mask shorter than the keys. */
typedef struct attn_mask {
    const float *f;
    const uint8_t *u8;
    int64_t st[3];
    int64_t cols;
} attn_mask;

typedef struct attn_args {
    int64_t B, Hq, Hkv, Sq, T, hs, vs; /* T: total keys, the segments' sum */
    const float *Q;
    int64_t q_st[3];                  /* batch, head, row strides of Q */
    attn_seg seg[2];
    int nseg;
    attn_mask mask;                   /* f == u8 == NULL: none */
    const float *kbias;               /* [B, T] additive per key (padding masks), or NULL */
    const int64_t *kv_len;            /* [B]: keys j >= kv_len[b] masked, or NULL */
    bool causal;
    const int64_t *offset;            /* [B]: causal keeps j <= i + offset[b]; NULL: 0 */
    float scale, softcap;
    float *Y;
    int64_t y_st[3];
    float *qk;                        /* [B, Hq, Sq, T] or NULL (scalar core) */
    int qk_mode;
} attn_args;

/* Runs the attention over c's thread pool: the tiled core unless softcap
 * or a qk output needs the scalar one (or ONNXSCOPE_ATTN_SCALAR=1 asks for
 * it, to compare the two). Y is written, never read before being written. */
ox_status ox__attn_run(ox_kernel_ctx *c, attn_args *a);

#endif
