/* Internal interface between the inference engine (infer.c) and the per-op
 * inference functions (infer_*.c) that the registry (src/ops) points at.
 * Not installed; names use the ox__ prefix. */
#ifndef ONNXSCOPE_INFER_INTERNAL_H
#define ONNXSCOPE_INFER_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "onnxscope/infer.h"
#include "onnxscope/ir.h"
#include "onnxscope/ops.h"

/* Largest tensor whose value we keep and compute on: shape arithmetic
 * only needs a few elements, and bigger constants would cost memory. */
#define OX__KV_MAX 4096
/* Floating values are kept only when tiny (scales, Range bounds, scalar
 * constants): larger ones are weights, which are not shape arithmetic. */
#define OX__KV_MAX_FLOAT 64

/* A (possibly partially) known value of a small numeric tensor. Integer
 * and bool elements live in iv, floating ones in fv. An element is known
 * when known[k]; an unknown integer element may still carry a symbol
 * (a Shape of [batch,3] gives {batch, 3}). */
typedef struct ox__kv {
    ox_dtype dt;
    int rank;
    int64_t dims[OX_MAX_RANK];
    int64_t n;
    int64_t *iv;
    double *fv;
    uint8_t *known;
    char **sym;      /* n entries or NULL */
} ox__kv;

ox__kv *ox__kv_new(ox_dtype dt, int rank, const int64_t *dims);
void ox__kv_free(ox__kv *k);
bool ox__kv_all_known(const ox__kv *k);
bool ox__kv_is_float(const ox__kv *k);
double ox__kv_get_f(const ox__kv *k, int64_t i);
int64_t ox__kv_get_i(const ox__kv *k, int64_t i);
/* Writes element i: as double or int64 per the kv dtype (converting). */
void ox__kv_set_f(ox__kv *k, int64_t i, double v);
void ox__kv_set_i(ox__kv *k, int64_t i, int64_t v);
void ox__kv_set_sym(ox__kv *k, int64_t i, const char *sym);
/* Copies element j of src into element i of dst (value, known, symbol). */
void ox__kv_copy_elem(ox__kv *dst, int64_t i, const ox__kv *src, int64_t j);
ox__kv *ox__kv_from_tensor(const ox_tensor *t);
ox__kv *ox__kv_clone(const ox__kv *k);
ox_tensor *ox__kv_to_tensor(const ox__kv *k);

typedef struct ox__state ox__state;

/* A type or known value the setters took out of circulation while an
 * inference function runs; freed when it returns (see ox__set_out). */
typedef struct ox__parked {
    ox_type *t;
    ox__kv *k;
} ox__parked;

struct ox_infer_node_ctx {
    ox__state *st;
    const ox_model *m;
    ox_node *n;
    int64_t opset;
    const ox_op_schema *schema;
    ox_error *err;
    ox__parked *parked;   /* owned by the engine, see ox__set_out */
    int n_parked, cap_parked;
};

/* Checked dim arithmetic: attributes may hold any int64, and a wrapped
 * result would be a wrong dim. Overflow gives -1 (unknown). */
static inline int64_t ox__add(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_add_overflow(a, b, &r) ? -1 : r;
}
static inline int64_t ox__sub(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_sub_overflow(a, b, &r) ? -1 : r;
}
static inline int64_t ox__mul(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_mul_overflow(a, b, &r) ? -1 : r;
}
/* A double as a dim: -1 unless finite and in [0, 2^62]. */
static inline int64_t ox__d2dim(double d)
{
    return d == d && d >= 0 && d <= 4.6e18 ? (int64_t)d : -1;
}

/* ---- helpers for inference functions ----------------------------------- */

int ox__nin(const ox_infer_node_ctx *c);           /* node->n_inputs */
bool ox__has_in(const ox_infer_node_ctx *c, int i);  /* present (non-empty) */
const ox_type *ox__in_type(const ox_infer_node_ctx *c, int i); /* NULL if unknown */
/* Tensor input with known rank, else NULL. */
const ox_type *ox__in_shape(const ox_infer_node_ctx *c, int i);
ox_dtype ox__in_elem(const ox_infer_node_ctx *c, int i);
int ox__in_rank(const ox_infer_node_ctx *c, int i);   /* -1 unknown */
/* Known (possibly partial) value of input i, or NULL. */
const ox__kv *ox__in_kv(ox_infer_node_ctx *c, int i);
/* Known value of any value visible to the node (subgraph outputs). */
const ox__kv *ox__kv_of(ox_infer_node_ctx *c, const ox_value *v);
/* Fully known integer values of a 1-D/0-D input: returns count or -1. */
int ox__in_ints(ox_infer_node_ctx *c, int i, int64_t *out, int max);

/* Output setters: take ownership of t / k (NULL allowed). Contract that
 * makes them safe to call anywhere in an inference function: nothing the
 * function can still hold is freed before it returns. t stays valid (it
 * becomes the output's type, merged in place with the declared type and
 * --dim overrides, so reading t afterwards sees what was stored); a type
 * or value it replaces, and t or k for an absent output (i past the
 * node's outputs, or an omitted optional output ""), are parked and
 * freed after the function returns. Absent outputs are thus no-op sinks. */
ox_status ox__set_out(ox_infer_node_ctx *c, int i, ox_type *t);
void ox__set_kv(ox_infer_node_ctx *c, int i, ox__kv *k);
/* Current type of output i, or NULL (absent output or untyped). */
const ox_type *ox__out_type(const ox_infer_node_ctx *c, int i);
/* Records an inconsistency (returns OX_ESHAPE). */
ox_status ox__fail(ox_infer_node_ctx *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Type builders. rank < 0 makes a tensor of unknown rank. */
ox_type *ox__tt(ox_dtype elem, int rank);
ox_type *ox__tt_copy(const ox_type *src, ox_dtype elem); /* elem 0: same */
void ox__dim_set(ox_type *t, int k, int64_t v);        /* v < 0: unknown */
void ox__dim_copy(ox_type *t, int k, const ox_dim *src);
void ox__dim_sym(ox_type *t, int k, const char *sym);
bool ox__dim_known(const ox_type *t, int k);
int64_t ox__dimv(const ox_type *t, int k);          /* -1 unknown */
/* Output i as a copy of input j's type (unknown if j unknown). */
ox_status ox__pass_through(ox_infer_node_ctx *c, int i, int j);
/* Normalizes axis into [0, rank); false when out of range. */
bool ox__axis(int64_t axis, int rank, int *out);
/* Dims equal (both known and equal, or same symbol). */
bool ox__dim_same(const ox_dim *a, const ox_dim *b);

/* Evaluates a subgraph body with the current outer scope (If/Loop/Scan);
 * body inputs must have been typed by the caller. */
ox_status ox__infer_subgraph(ox_infer_node_ctx *c, ox_graph *g);
/* Same for a body known not to run: its inconsistencies are not reported. */
ox_status ox__infer_dead_subgraph(ox_infer_node_ctx *c, ox_graph *g);
/* The type proto attribute on a node converted to dtype (for Cast etc). */
ox_dtype ox__attr_dtype(const ox_node *n, const char *name, ox_dtype dflt);

/* ---- inference functions referenced by the registry ---------------------- */
#define OX__INFER_FNS(X) \
    X(unary) X(unary_bool) X(binary) X(compare) X(logical) X(variadic) \
    X(where) X(cast) X(castlike) X(shape) X(size) X(reshape) X(flatten) \
    X(squeeze) X(unsqueeze) X(transpose) X(concat) X(split) X(slice) \
    X(gather) X(gather_elements) X(gather_nd) X(expand) X(tile) X(pad) \
    X(constant) X(constant_of_shape) X(range) X(eye_like) X(one_hot) \
    X(nonzero) X(compress) X(topk) X(argreduce) X(reduce) X(matmul) \
    X(gemm) X(conv) X(conv_transpose) X(pool) X(global_pool) X(resize) \
    X(upsample) X(depth_to_space) X(space_to_depth) X(einsum) \
    X(layer_norm) X(batch_norm) X(dropout) X(rnn) X(if_) X(loop) X(scan) \
    X(sequence_construct) X(sequence_empty) X(sequence_at) \
    X(sequence_insert) X(sequence_erase) X(sequence_length) \
    X(split_to_sequence) X(concat_from_sequence) X(sequence_map) \
    X(optional) X(optional_get) X(optional_has) X(quantize) \
    X(dequantize) X(dynamic_quantize) X(qlinear_matmul) X(qlinear_conv) \
    X(int_matmul) X(conv_integer) X(nms) X(roi_align) X(grid_sample) \
    X(affine_grid) X(col2im) X(center_crop_pad) X(unique) X(det) \
    X(bitcast) X(nll_loss) X(sce_loss) X(tfidf) X(string_normalizer) \
    X(string_concat) X(string_split) X(regex_full_match) X(dft) X(stft) \
    X(window) X(mel) X(max_unpool) X(random_like) X(bernoulli) \
    X(random) X(image_decoder) X(attention) X(rotary) X(mha_ms) \
    X(attention_ms) X(skip_ln_ms) X(label_encoder) X(tree_ensemble) \
    X(array_feature_extractor) X(binarizer) X(training_opt) \
    X(tensor_scatter) X(causal_conv) X(linear_attention) X(swiglu) \
    X(flex_attention) X(gelu_bias) X(fused_matmul) X(scatter) \
    X(mean_var_norm) X(group_norm) X(lp_norm) X(reverse_sequence) \
    X(cum) X(trilu) X(deform_conv) X(max_roi_pool) X(multinomial)

#define X(name) ox_status ox__infer_##name(ox_infer_node_ctx *c);
OX__INFER_FNS(X)
#undef X

#endif
