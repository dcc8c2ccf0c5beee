/* Executor-private: placement of float16 nodes on the CUDA backend
 * (place_half.c; docs/EXECUTOR.md "float16 models on the GPU"). */
#ifndef ONNXSCOPE_EXEC_CUDA_PLACE_HALF_H
#define ONNXSCOPE_EXEC_CUDA_PLACE_HALF_H

#include <stdbool.h>
#include <stdint.h>

#include "place.h"

/* True when node n reads or writes a float16 tensor. */
bool ox_cuda_node_is_half(const ox_node *n);

/* True when kernel family k has a float16 variant. */
bool ox_cuda_half_family(ox_cuda_kind k);

/* -1 when n touches no float16 tensor (the float32 rules apply); else the
 * kind its float32 twin gets when that family has a float16 variant, or
 * OX_CK_NONE with *why. Called first by ox_cuda_kind_of. */
int ox_cuda_half_kind(const ox_node *n, int64_t opset, const bool *host_in,
                      const ox_cuda_caps *caps, const char **why);

#endif
