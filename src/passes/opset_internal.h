/* What the opset converter's files share: the conversion context, the
 * adapter table, and small builders for the nodes and constants adapters
 * add. Adapters rewrite one node from the semantics of opset `from` to
 * those of opset `to` (either direction) and refuse through ox__cv_refuse. */
#ifndef ONNXSCOPE_PASSES_OPSET_INTERNAL_H
#define ONNXSCOPE_PASSES_OPSET_INTERNAL_H

#include <stdbool.h>

#include "onnxscope/infer.h"
#include "onnxscope/opset.h"
#include "onnxscope/ir.h"

typedef struct ox__cv {
    ox_model *m;
    int from, to;
    ox_error *err;
    ox_opset_report *rep;
    /* Nodes replaced by an adapter: removed after the graph's walk, so
     * the walk's snapshot of the node list stays valid. */
    ox_node **dead;
    int n_dead, cap_dead;
} ox__cv;

/* ox_opset_convert with the --shape/--dim overrides of a pass run
 * (shapes may be NULL). */
ox_status ox__opset_convert_io(ox_model *m, int64_t target, const ox_infer_opts *shapes,
                               ox_opset_report *rep, ox_error *err);

/* Crossing opset boundary b upwards (from < b <= to) or downwards. */
static inline bool ox__cv_up(const ox__cv *c, int b) { return c->from < b && c->to >= b; }
static inline bool ox__cv_down(const ox__cv *c, int b) { return c->from >= b && c->to < b; }

/* Records the refusal "OP node 'NAME' cannot be converted to opset N:
 * why" and returns OX_EUNSUPPORTED. */
ox_status ox__cv_refuse(ox__cv *c, const ox_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* An adapter: rewrites n for c->to. Returns OX_OK (n may have been
 * replaced: ox__cv_kill), or an error. */
typedef ox_status (*ox__cv_fn)(ox__cv *c, ox_node *n);
typedef struct ox__cv_adapter {
    const char *op;
    ox__cv_fn fn;
} ox__cv_adapter;
/* Adapters by op type (opset_adapt.c, opset_expand.c), NULL-terminated. */
extern const ox__cv_adapter ox__cv_adapters[];
extern const ox__cv_adapter ox__cv_expansions[];

/* ---- reading nodes ---- */
/* The constant behind v (initializer, Constant node or a value shape
 * inference computed), or NULL. */
const ox_tensor *ox__cv_const(const ox_value *v);
/* v's constant as integers; the count, or -1 when not a constant. */
int ox__cv_ints(const ox_value *v, int64_t *out, int cap);
/* v's constant as floats; the count, or -1. */
int ox__cv_floats(const ox_value *v, float *out, int cap);
/* The rank of v when inference knows it, else -1. */
int ox__cv_rank(const ox_value *v);
/* Dim k of v when known, else -1. */
int64_t ox__cv_dim(const ox_value *v, int k);
/* Element type of v (OX_DT_UNDEFINED when unknown). */
ox_dtype ox__cv_elem(const ox_value *v);
/* The input i of n or NULL when absent. */
static inline ox_value *ox__cv_in(const ox_node *n, int i)
{
    return i < n->n_inputs ? n->inputs[i] : NULL;
}
static inline ox_value *ox__cv_out(const ox_node *n, int i)
{
    return i < n->n_outputs ? n->outputs[i] : NULL;
}
/* True when output i exists and something reads it (or it is a graph output). */
bool ox__cv_out_used(const ox_node *n, int i);

/* ---- editing nodes ---- */
/* Drops trailing absent inputs/outputs. */
void ox__cv_trim(ox_node *n);
/* Renames n's op type. */
void ox__cv_rename(ox_node *n, const char *op);
/* New constants in n's graph. */
ox_value *ox__cv_i64(ox__cv *c, ox_node *n, const char *hint, int count, const int64_t *v);
ox_value *ox__cv_i64_scalar(ox__cv *c, ox_node *n, const char *hint, int64_t v);
/* A scalar (rank 0) or [count] tensor of element type dt. */
ox_value *ox__cv_scalar(ox__cv *c, ox_node *n, const char *hint, ox_dtype dt, double v);
ox_value *ox__cv_floats_1d(ox__cv *c, ox_node *n, const char *hint, int count, const float *v);
/* A new node in n's graph (appended; the graph is sorted after the walk)
 * reading in[0..nin) and writing one fresh value, which it returns (NULL
 * on OOM). */
ox_value *ox__cv_op(ox__cv *c, ox_node *n, const char *op, int nin, ox_value *const *in);
/* Same, returning the node (outputs fresh values). */
ox_node *ox__cv_node(ox__cv *c, ox_node *n, const char *op, int nin, ox_value *const *in,
                     int nout);
/* Moves n's output i to be produced by node p's output j (n loses it). */
void ox__cv_take_output(ox_node *n, int i, ox_node *p, int j);
/* n is replaced: detached and removed after the walk. */
void ox__cv_kill(ox__cv *c, ox_node *n);
/* Moves attribute `name` of n (ints) into input i as an int64 constant;
 * no-op when absent. */
void ox__cv_attr_to_input(ox__cv *c, ox_node *n, const char *name, int i);
/* Moves constant input i of n into ints attribute `name` (refuses when
 * the input is computed at run time). */
ox_status ox__cv_input_to_attr(ox__cv *c, ox_node *n, int i, const char *name);
/* Refuses when string attribute `name` equals `bad` (what the target
 * lacks), or int attribute differs from `ok`. */
ox_status ox__cv_need_s(ox__cv *c, ox_node *n, const char *name, const char *dflt,
                        const char *bad, int since);
ox_status ox__cv_need_i(ox__cv *c, ox_node *n, const char *name, int64_t ok, int since);
/* The one output of value-producing helper nodes: the last node added. */
void ox__cv_count_added(ox__cv *c, int k);

#endif
