/* Helpers shared by the tensor-manipulation kernels (src/exec/k_tensor):
 * dtype-agnostic element moves (byte types, packed 2/4-bit types and
 * strings alike), a strided N-D copy engine, and input/attribute readers. */
#ifndef ONNXSCOPE_K_TENSOR_UTIL_H
#define ONNXSCOPE_K_TENSOR_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "onnxscope/exec.h"

/* How elements of a dtype are stored: `es` bytes each (es > 0), packed
 * `bits` < 8 per element (es == 0), or strings. */
typedef struct ox_tk_layout {
    int es;
    int bits;
    bool is_string;
} ox_tk_layout;

bool ox_tk_layout_of(ox_dtype dt, ox_tk_layout *l);

/* Copies n consecutive elements src[si..si+n) to dst[di..di+n). Both
 * tensors must have the same dtype. Strings are deep-copied. */
void ox_tk_copy(ox_tensor *dst, int64_t di, const ox_tensor *src, int64_t si,
                int64_t n);
/* Writes element vi of val into dst[di..di+n) (val has dst's dtype). */
void ox_tk_fill(ox_tensor *dst, int64_t di, int64_t n, const ox_tensor *val,
                int64_t vi);
/* Walks `dims` in row-major order; element at multi-index k is read from
 * src[soff + sum k_j*sstr_j] and written to dst[doff + sum k_j*dstr_j].
 * Strides may be negative or zero (broadcast reads). */
void ox_tk_copy_nd(ox_tensor *dst, int64_t doff, const int64_t *dstr,
                   const ox_tensor *src, int64_t soff, const int64_t *sstr,
                   int rank, const int64_t *dims);

/* Row-major element strides of a shape. */
void ox_tk_strides(int rank, const int64_t *dims, int64_t *strides);

/* Normalizes axis into [0, rank) (negative counts from the end). */
ox_status ox_tk_axis(ox_kernel_ctx *c, int64_t axis, int rank, int *out);

/* Element i of an integer (or any numeric) tensor as int64; fast for the
 * usual int32/int64 index tensors. */
static inline int64_t ox_tk_i64(const ox_tensor *t, int64_t i)
{
    /* memcpy loads: initializers may be unaligned views into the file */
    if (t->dtype == OX_DT_INT64) {
        int64_t v;
        memcpy(&v, (const char *)ox_tensor_data(t) + 8 * i, 8);
        return v;
    }
    if (t->dtype == OX_DT_INT32) {
        int32_t v;
        memcpy(&v, (const char *)ox_tensor_data(t) + 4 * i, 4);
        return v;
    }
    return ox_tensor_get_i64(t, i);
}

/* Reads a 1-D (or scalar) integer tensor into out[0..max). Fails when it
 * holds more than max values or is not an integer tensor. */
ox_status ox_tk_read_ints(ox_kernel_ctx *c, const ox_tensor *t, const char *what,
                          int64_t *out, int max, int *n);
/* Same, into a malloc'ed array (caller frees). */
ox_status ox_tk_read_ints_alloc(ox_kernel_ctx *c, const ox_tensor *t,
                                const char *what, int64_t **out, int64_t *n);

/* Input i as a tensor, failing with a message naming the op when missing. */
ox_status ox_tk_need(ox_kernel_ctx *c, int i, const ox_tensor **out);
/* Allocates output i; fails with OX_ENOMEM when that is impossible. */
ox_status ox_tk_out(ox_kernel_ctx *c, int i, ox_dtype dt, int rank,
                    const int64_t *dims, ox_tensor **out);
/* Output i as a shallow copy of src sharing its bytes, with a new shape
 * (the element count must match). Reshape-like ops use it. */
ox_status ox_tk_out_view(ox_kernel_ctx *c, int i, const ox_tensor *src,
                         int rank, const int64_t *dims);

/* Op name of the running node, for error messages. */
const char *ox_tk_op(const ox_kernel_ctx *c);

/* True for dtypes that hold numbers (not strings, not undefined). */
bool ox_tk_is_numeric(ox_dtype dt);

/* Kernel families in this folder, collected by tk_table.c. */
ox_status ox_tk_constant(ox_kernel_ctx *c);
ox_status ox_tk_identity(ox_kernel_ctx *c);
ox_status ox_tk_shape(ox_kernel_ctx *c);
ox_status ox_tk_size(ox_kernel_ctx *c);
ox_status ox_tk_reshape(ox_kernel_ctx *c);
ox_status ox_tk_flatten(ox_kernel_ctx *c);
ox_status ox_tk_squeeze(ox_kernel_ctx *c);
ox_status ox_tk_unsqueeze(ox_kernel_ctx *c);
ox_status ox_tk_constant_of_shape(ox_kernel_ctx *c);
ox_status ox_tk_range(ox_kernel_ctx *c);
ox_status ox_tk_eyelike(ox_kernel_ctx *c);
ox_status ox_tk_bitcast(ox_kernel_ctx *c);

ox_status ox_tk_transpose(ox_kernel_ctx *c);
ox_status ox_tk_concat(ox_kernel_ctx *c);
ox_status ox_tk_split(ox_kernel_ctx *c);
ox_status ox_tk_slice(ox_kernel_ctx *c);
ox_status ox_tk_tile(ox_kernel_ctx *c);
ox_status ox_tk_expand(ox_kernel_ctx *c);
ox_status ox_tk_pad(ox_kernel_ctx *c);
ox_status ox_tk_depth_to_space(ox_kernel_ctx *c);
ox_status ox_tk_space_to_depth(ox_kernel_ctx *c);
ox_status ox_tk_trilu(ox_kernel_ctx *c);
ox_status ox_tk_reverse_sequence(ox_kernel_ctx *c);
ox_status ox_tk_compress(ox_kernel_ctx *c);

ox_status ox_tk_gather(ox_kernel_ctx *c);
ox_status ox_tk_gather_elements(ox_kernel_ctx *c);
ox_status ox_tk_gather_nd(ox_kernel_ctx *c);
ox_status ox_tk_scatter_elements(ox_kernel_ctx *c);
ox_status ox_tk_scatter_nd(ox_kernel_ctx *c);
ox_status ox_tk_onehot(ox_kernel_ctx *c);
ox_status ox_tk_nonzero(ox_kernel_ctx *c);
ox_status ox_tk_tensor_scatter(ox_kernel_ctx *c);

ox_status ox_tk_topk(ox_kernel_ctx *c);
ox_status ox_tk_unique(ox_kernel_ctx *c);

ox_status ox_tk_resize(ox_kernel_ctx *c);
ox_status ox_tk_upsample(ox_kernel_ctx *c);

#endif
