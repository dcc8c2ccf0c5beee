/* Helpers the CNN fusion passes (fuse_conv.c, fuse_gemm.c, fuse_act.c)
 * share: matching a producer, reading constants whether they are
 * initializers or Constant nodes, per-channel broadcast checks, making
 * weights, and retargeting a fused node onto the pattern's final output. */
#ifndef ONNXSCOPE_FUSE_UTIL_H
#define ONNXSCOPE_FUSE_UTIL_H

#include "passes/pass_internal.h"

/* The producer of v when it lives in graph g, has the default domain and
 * op type op (NULL: any op), and has an input 0 and an output; else NULL. */
ox_node *ox__fuse_prod(const ox_graph *g, const ox_value *v, const char *op);
/* v is read by exactly one node input, by no subgraph, and is not a graph
 * output: a fusion may make it disappear. */
bool ox__fuse_single(const ox_value *v);
/* Only output 0 of n is used (BatchNormalization's training outputs...). */
bool ox__fuse_only_out0(const ox_node *n);
/* The tensor of a real constant: an initializer that cannot be overridden,
 * or the value of a Constant node in the same graph. NULL otherwise. */
const ox_tensor *ox__fuse_const(const ox_value *v);
/* A constant with one element (any rank), as double. */
bool ox__fuse_scalar(const ox_value *v, double *out);
/* float, double, float16 or bfloat16: the types whose weights we rewrite. */
bool ox__fuse_float(ox_dtype dt);
/* Whether constant t, broadcast against a rank-r result, scales channel
 * axis ax (of size C) only: every dim 1 except that axis (1 or C), and
 * rank <= r. Fills out[0..C) (a scalar is repeated). */
bool ox__fuse_per_channel(const ox_tensor *t, int r, int ax, int64_t C, double *out);
/* A new initializer in g of dtype dt and the given shape holding v. */
ox_value *ox__fuse_new_init(ox_graph *g, const char *hint, ox_dtype dt, int rank,
                            const int64_t *dims, const double *v);
/* A whole tensor as doubles (malloc'd; NULL on OOM). */
double *ox__fuse_f64(const ox_tensor *t);
/* Drops v when nothing reads it any more: an initializer (not a graph
 * input/output) or the output of a Constant node (the node goes too); see
 * ox__pass_drop_const. Nodes and values go in the flush after the pass
 * (docs/PASSES.md "Cost on long graphs"), never one by one. */
void ox__fuse_drop_dead(ox_pass_ctx *c, ox_value *v);
/* Drops node last (a single-output node whose output y survives) and
 * makes output 0 of keep produce y instead of keep's old output, which must
 * be read by last only; the old output is pruned at the flush. */
void ox__fuse_retarget(ox_pass_ctx *c, ox_node *keep, ox_node *last);
/* Input k of n, or NULL. */
static inline ox_value *ox__fuse_in(const ox_node *n, int k)
{
    return k < n->n_inputs ? n->inputs[k] : NULL;
}
/* Clip bounds (attributes before opset 11, constant inputs after); an absent
 * bound is -inf/+inf. False when a bound is not constant. */
bool ox__fuse_clip_bounds(const ox_node *clip, double *lo, double *hi);
/* The index of the input of binary node n that is not v (0 or 1), or -1
 * when v is not one of its two inputs. */
int ox__fuse_other(const ox_node *n, const ox_value *v);
/* Reads an inference-mode BatchNormalization (only output 0 used) with
 * constant parameters of C channels into y = x * s + t. */
bool ox__fuse_bn(const ox_node *bn, int64_t C, double *s, double *t);
/* Rank of a tensor value (initializer or typed), or -1. */
int ox__fuse_rank(const ox_value *v);
/* A new single-output node of g named from hint; y must be unproduced. */
ox_node *ox__fuse_node(ox_pass_ctx *c, ox_graph *g, const char *op, const char *domain,
                       int n_in, ox_value *const *in, ox_value *y);

/* The name a fused node takes after the pattern's last node `site`: its
 * scope (the name up to the last '/') and op, e.g. "/layers.0/ln1/Add_1"
 * -> "/layers.0/ln1/LayerNormalization", so users (and tests) see which
 * layer a fused node came from; just op when site has no scope. */
void ox__fuse_site_name(const ox_node *site, const char *op, char *buf, size_t n);
/* ox__fuse_node with a name hint (made unique). */
ox_node *ox__fuse_node_named(ox_pass_ctx *c, ox_graph *g, const char *hint, const char *op,
                             const char *domain, int n_in, ox_value *const *in, ox_value *y);

/* Every output of the matched nodes other than y is read by matched nodes
 * only (not a graph output, not read by a subgraph), and no matched node
 * has another used output: dropping them all and producing y from a new
 * node loses nothing. */
bool ox__fuse_internal(ox_node *const *nodes, int nn, const ox_value *y);
/* Drops the matched nodes with ox__pass_drop (O(1) each) and then the
 * Constant nodes that fed them and are read by nothing else. Initializers
 * they leave unread go with remove_unused_initializers. Duplicates in
 * nodes are allowed. */
void ox__fuse_drop_all(ox_pass_ctx *c, ox_node *const *nodes, int nn);
/* ReduceMean axes (attribute, or constant input from opset 18) with
 * keepdims=1, as negative axes sorted ascending, given the input rank r
 * (-1: unknown, then the axes must be negative). Returns the count, or -1
 * when they are absent, not constant, or keepdims is 0. */
int ox__fuse_mean_axes(const ox_node *rm, int r, int64_t *ax, int cap);
/* v's constant is a scalar equal to want within a relative tolerance tol. */
bool ox__fuse_scalar_is(const ox_value *v, double want, double tol);

#endif
