/* Executor-private: the com.microsoft ops the fusion passes emit, and Sum,
 * on the GPU (docs/EXECUTOR.md "Contrib ops and MultiHeadAttention on the
 * GPU"): placement (contrib_place.c, plain C, always built) and launches
 * (contrib_rt.c, kernels in contrib.cu; with the toolkit only).
 *
 * FusedConv and FusedGemm run as Conv and Gemm (runtime.c's runners, with
 * their conditions) and then their activation in place; Sum, BiasGelu and
 * FastGelu, EmbedLayerNormalization and MultiHeadAttention (through a tiled
 * flash-attention kernel reading the heads in place) have kernels of
 * their own. A node outside what a kernel covers stays on the CPU with the
 * reason. */
#ifndef ONNXSCOPE_EXEC_CUDA_CONTRIB_H
#define ONNXSCOPE_EXEC_CUDA_CONTRIB_H

#include <stdbool.h>
#include <stdint.h>

#include "onnxscope/ir.h"
#include "place.h"

/* The kind for n (static types; called by ox_cuda_kind_of for the ops it
 * does not know), or OX_CK_NONE with *why (left as it was for other ops). */
ox_cuda_kind ox_cuda_kind_contrib(const ox_node *n, int64_t opset, const bool *host_in,
                                  const ox_cuda_caps *caps, const char **why);

/* The activation of a FusedConv/FusedGemm as a unary kernel code (kern.h)
 * and its parameters; false when not one the kernels have. "" gives
 * OX_CK_IDENTITY. */
bool ox_cuda_fused_act(const ox_node *n, int *code, float *a, float *b);

/* What a launch of contrib_rt.c gets from runtime.c: the clone's node,
 * device pointers and planned slots of its inputs and outputs (NULL:
 * omitted), the stream. */
typedef struct ox_cuda_kargs {
    ox_cuda_kind kind;
    const ox_node *n;
    int n_in, n_out;
    const void *in[16];
    const ox_cuda_slot *is[16];
    void *out[8];
    const ox_cuda_slot *os[8];
    void *stream;
} ox_cuda_kargs;

/* Enqueues the node's kernels; the launch's cudaError_t (0: success).
 * FusedConv/FusedGemm: only the activation (y = act(y + z), z the Z input
 * of FusedConv or NULL), after runtime.c ran the Conv/Gemm. */
int ox_cuda_contrib_launch(const ox_cuda_kargs *a);

#endif
