/* Internal helpers of the control-flow and sequence kernels: slicing one
 * index or a range along an axis, and concatenating/stacking tensors.
 * Element moves go through the tensor family's ox_tk_copy, so every dtype
 * (strings and packed types included) works. */
#ifndef ONNXSCOPE_EXEC_RV_UTIL_H
#define ONNXSCOPE_EXEC_RV_UTIL_H

#include "onnxscope/exec.h"

/* t[..., idx, ...] along axis (rank drops by one). NULL + err on failure. */
ox_tensor *ox_rv_slice(const ox_tensor *t, int axis, int64_t idx, ox_error *err);
/* t[..., start:start+len, ...] along axis (rank kept). */
ox_tensor *ox_rv_range(const ox_tensor *t, int axis, int64_t start, int64_t len,
                       ox_error *err);
/* Concatenates n tensors along axis, or stacks them along a new axis
 * (new_axis: axis counts in the output rank). n must be at least 1. */
ox_tensor *ox_rv_concat(const ox_tensor *const *items, int n, int axis, bool new_axis,
                        ox_error *err);
/* The tensor payload of an input that may be a tensor; NULL otherwise. */
static inline const ox_tensor *ox_rv_tensor_of(const ox_rval *v)
{
    return (v && v->kind == OX_RV_TENSOR) ? v->t : NULL;
}
/* Scalar (or 1-element) integer/bool input as int64; false if not. */
bool ox_rv_scalar_i64(const ox_tensor *t, int64_t *out);

#endif
