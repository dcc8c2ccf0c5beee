/* The cost model: multiply-accumulates, floating-point operations, parameter
 * counts and bytes moved, per node and for a whole model. Conventions (which
 * ops count what, the weights of transcendental ops) are in docs/COST.md.
 * Costs are read from the static value types that shape inference left. */
#ifndef ONNXSCOPE_COST_H
#define ONNXSCOPE_COST_H

#include <stdbool.h>
#include <stdint.h>

#include "onnxscope/ir.h"
#include "onnxscope/status.h"

/* Operation weights in "MAC units" (onnx-tool's scale): one add, multiply or
 * compare is 1; the others approximate their usual polynomial expansions. */
#define OX_COST_ADD 1
#define OX_COST_MUL 1
#define OX_COST_CMP 1
#define OX_COST_DIV 2
#define OX_COST_SQRT 4
#define OX_COST_EXP 16
#define OX_COST_LOG 16
#define OX_COST_ERF 16
#define OX_COST_POW 32
#define OX_COST_TRIG 14

typedef struct ox_cost {
    int64_t macs;          /* multiply-accumulates; other ops in MAC units */
    int64_t flops;         /* 2 per MAC for contractions, 1 per op otherwise */
    int64_t params;        /* elements of the weights this node reads */
    int64_t param_bytes;   /* bytes of those weights */
    int64_t bytes_read;    /* every input tensor, weights included */
    int64_t bytes_written; /* every output tensor */
    bool known;            /* macs/flops exact: every needed dim is known
                            * and the op has a cost rule */
    bool bytes_known;      /* bytes_read/bytes_written exact */
    bool has_rule;         /* false for ops the model does not know */
} ox_cost;

/* Cost of one node from the types of its inputs and outputs. Never fails:
 * a node whose dims are unknown or whose op has no rule reports what it can
 * (possibly 0) with known = false. */
void ox_node_cost(const ox_node *n, ox_cost *out);

/* True when v holds weights: an initializer, or a floating-point value
 * computed only from weights (Constant, ConstantOfShape of a constant shape,
 * Identity/Cast/Transpose/... of a weight). */
bool ox_value_is_weight(const ox_value *v);

typedef struct ox_model_cost {
    int64_t params;            /* elements of every weight tensor */
    int64_t params_dedup;      /* counting byte-identical weights once */
    int64_t weights_bytes;
    int64_t weights_bytes_dedup;
    int64_t macs, flops;       /* sums over the main graph's nodes */
    int64_t bytes_read, bytes_written;
    int64_t peak_activation_bytes;   /* arena size of the memory plan */
    int64_t activation_lower_bound;  /* largest set of simultaneously live bytes */
    int64_t memory_bytes;      /* weights_bytes + peak_activation_bytes */
    uint64_t file_bytes;       /* size of the .onnx file (0 when built in memory) */
    int n_nodes;               /* nodes costed (main graph) */
    int n_unknown;             /* nodes whose macs are not known */
    int n_no_rule;             /* of those: op without a cost rule */
    bool known;                /* macs/flops exact: every node known */
    bool bytes_known;
    bool peak_known;           /* every activation has a static size */
} ox_model_cost;

/* Totals for m's main graph (nodes inside subgraphs are not counted; their
 * cost depends on runtime control flow). Fails only on bad arguments or
 * out of memory. */
ox_status ox_model_cost_compute(const ox_model *m, ox_model_cost *out,
                                ox_error *err);

/* Bytes of a value with a static tensor type; false when not static. */
bool ox_value_static_bytes(const ox_value *v, int64_t *bytes);
/* Elements of a value with a static tensor type; false when not static. */
bool ox_value_static_numel(const ox_value *v, int64_t *numel);

#endif
