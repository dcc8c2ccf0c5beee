/* Shape and type inference over a whole model (nested subgraphs included),
 * with symbolic dimensions and shape-value propagation: small integer
 * tensors computed from shapes (Shape -> Gather -> Concat -> Reshape ...)
 * are evaluated, symbolically where needed, so that exporter shape chains
 * resolve to static shapes once the input dims are known. */
#ifndef ONNXSCOPE_INFER_H
#define ONNXSCOPE_INFER_H

#include <stdbool.h>
#include <stdint.h>

#include "onnxscope/ir.h"
#include "onnxscope/ops.h"
#include "onnxscope/status.h"
#include "onnxscope/tensor.h"

/* --shape NAME=1x3x224x224 : a dim may also be a symbol ("Nx3x224x224") or
 * "?" for unknown; "NAME=scalar" gives rank 0. Dims are separated by ','
 * or by an 'x' next to a digit or '?', so "max_lenx128" is [max_len,128]
 * and two symbols need a comma ("N,M"). */
typedef struct ox_shape_override {
    char *name;
    int rank;
    int64_t dims[OX_MAX_RANK];   /* -1: symbol or unknown */
    char *params[OX_MAX_RANK];   /* symbol names (owned) or NULL */
} ox_shape_override;

/* --dim SYMBOL=VALUE : every dim_param SYMBOL becomes VALUE. */
typedef struct ox_dim_override {
    char *symbol;
    int64_t value;
} ox_dim_override;

/* Data of a graph input known ahead of running (borrowed). Shapes that
 * depend on input values (a `shape`, `axes`, `k` or `sizes` input fed at
 * run time) then resolve too; the executor's planner uses this. */
typedef struct ox_input_value {
    const char *name;
    const ox_tensor *value;
} ox_input_value;

typedef struct ox_infer_stats {
    int nodes;            /* nodes visited, subgraphs included */
    int unknown_ops;      /* nodes with no registry entry (outputs untyped) */
    int failed;           /* nodes whose inference reported an inconsistency */
    int untyped_values;   /* values left without a type at the end */
    char first_problem[256];
} ox_infer_stats;

typedef struct ox_infer_opts {
    ox_shape_override *shapes;
    int n_shapes;
    ox_dim_override *dims;
    int n_dims;
    /* Return OX_ESHAPE on the first inconsistency instead of recording it
     * in stats and going on (the default keeps going: a bad node leaves
     * its outputs as well typed as possible). */
    bool strict;
    /* Do not mark intermediate values has_value_info (saved models then
     * carry no inferred value_info). */
    bool no_value_info;
    /* Forget the types of all node outputs first (graph inputs and
     * initializers keep theirs). By default types already present
     * (value_info from the file, or an earlier inference) fill in dims
     * that inference cannot determine; after editing a graph or changing
     * overrides such types may be stale, so passes and re-runs set this. */
    bool reset;
    const ox_input_value *input_values;  /* optional, small tensors are used */
    int n_input_values;
    ox_infer_stats *stats;   /* optional out */
    /* Optional: called with every inconsistency found (not only the first
     * that stats keeps); `check` lists them. Not called in dead branches. */
    void (*on_problem)(void *ctx, const char *msg);
    void *problem_ctx;
} ox_infer_opts;

/* Largest dim a --shape or --dim may give (larger is a typo, not a model). */
#define OX_DIM_OVERRIDE_MAX ((int64_t)1 << 31)

/* Parse "NAME=1x3x224x224" / "SYM=VALUE" and append to opts (which owns
 * the copies; release with ox_infer_opts_free). OX_EINVAL on bad syntax:
 * a dim must be a count in [0, OX_DIM_OVERRIDE_MAX], '?', or a symbol
 * (letter or '_' first, then letters, digits, "_.:-/"). The message does
 * not name the option (the caller prefixes "--shape ARG: "). */
ox_status ox_infer_opts_add_shape(ox_infer_opts *opts, const char *arg,
                                  ox_error *err);
ox_status ox_infer_opts_add_dim(ox_infer_opts *opts, const char *arg,
                                ox_error *err);
/* "x=1x3x224x224", "ids=N,M", "s=scalar": the override as an argument. */
const char *ox_shape_override_format(const ox_shape_override *o, char *buf, size_t len);
/* Checks o against the declared type of its input (NULL: nothing known):
 * a tensor, the same rank when declared, and static dims unchanged (a
 * symbol counts with the value opts' --dim gives it). Symbolic and unknown
 * dims may be set. OX_EINVAL with "input 'x' is float32[1,3,224,224]
 * (rank 4), not rank 2". */
ox_status ox_shape_override_check(const ox_shape_override *o, const ox_type *declared,
                                  const ox_infer_opts *opts, ox_error *err);
/* Checks every override of opts against m's graph inputs (call it after
 * loading, before inference): each --shape names an input, once, and
 * passes ox_shape_override_check; each --dim names a symbol that an input
 * uses (declared, or in that input's --shape), once. OX_EINVAL with a
 * message that starts with the option: "--dim seq=8: no input has a dim
 * named 'seq' (the inputs' symbols: batch, len)". */
ox_status ox_infer_opts_validate(const ox_infer_opts *opts, const ox_model *m,
                                 ox_error *err);
void ox_infer_opts_free(ox_infer_opts *opts);
/* The value a --dim override gives `symbol`, or -1 (opts or symbol may be NULL). */
int64_t ox_infer_opts_dim(const ox_infer_opts *opts, const char *symbol);

/* Makes the user's --shape/--dim choices part of m's declared types
 * (ox_value.decl), so that a saved model declares the fixed dims: each
 * --shape replaces the declared shape of its graph input (the element
 * type stays), and every symbol fixed by --dim, or by a --shape value at
 * a dim the input declared with that symbol, becomes its value in every
 * declared type of the model (outputs, subgraphs, value_info). Symbols
 * nobody fixed stay. Without this call a saved model keeps the file's
 * symbolic dims. */
ox_status ox_infer_fix_declared(ox_model *m, const ox_infer_opts *opts, ox_error *err);

/* Infers value->type for every value of m (graph inputs keep the model's
 * types, changed by opts overrides). Intermediate values get
 * has_value_info so that a saved model carries the result. Values of ops
 * not in the registry stay untyped. Also records v->known (see below).
 * opts may be NULL. Errors: OX_EINVAL for an override naming no input,
 * OX_ESHAPE (strict only) for inconsistent shapes. */
ox_status ox_infer_model(ox_model *m, const ox_infer_opts *opts, ox_error *err);

/* Infers the outputs of one node from its inputs' current types and known
 * values (for passes that create or edit nodes). The node's graph must
 * belong to a model (for the opset). Unregistered ops return OX_OK and
 * leave outputs untouched. */
ox_status ox_infer_node(ox_node *n, ox_error *err);

/* The constant value propagated for v (initializer data, a Constant, or a
 * small integer tensor computed from shapes), or NULL. Owned by v. */
const ox_tensor *ox_infer_known_value(const ox_value *v);
/* Drops v's known value (passes that rewrite the producer call this). */
void ox_infer_forget_value(ox_value *v);

/* Numpy-style broadcast of two shapes with symbolic dims: writes the
 * result (rank max(ra, rb)) into out, whose dims the caller frees with
 * the type. Returns false when known dims conflict. */
bool ox_infer_broadcast(const ox_type *a, const ox_type *b, ox_type *out);

#endif
