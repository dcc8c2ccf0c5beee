/* The cost model: multiply-accumulates, floating-point operations, parameter
 * counts and bytes moved, per node and for a whole model. Conventions (which
 * ops count what, the weights of transcendental ops) are in docs/COST.md.
 * Costs are read from the static value types that shape inference left. */
#ifndef ONNXSCOPE_COST_H
#define ONNXSCOPE_COST_H

#include <stdbool.h>
#include <stddef.h>
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

/* How a control-flow node's cost was read from its bodies. */
typedef enum {
    OX_CTRL_NONE = 0,      /* not a control-flow node */
    OX_CTRL_IF_TAKEN,      /* If whose condition is known: the branch that runs */
    OX_CTRL_IF_MAX,        /* If: the larger branch (an upper bound) */
    OX_CTRL_LOOP,          /* Loop: one iteration x a constant trip count */
    OX_CTRL_LOOP_UNKNOWN,  /* Loop whose trip count is not constant: unknown */
    OX_CTRL_SCAN,          /* Scan: one iteration x the scan length */
    OX_CTRL_SCAN_UNKNOWN,  /* Scan whose length is not static: unknown */
} ox_cost_control;

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
    /* The smallest cost the node can have: equal to macs/flops except for
     * an If counted by its larger branch (then the smaller branch). */
    int64_t macs_min, flops_min;
    bool upper;            /* macs/flops are an upper bound (larger If branch,
                            * here or in a body) */
    /* Control flow (If, Loop, Scan; bodies are costed recursively). */
    ox_cost_control control;
    int branch;            /* If: 0 then_branch, 1 else_branch counted */
    int64_t trips;         /* Loop/Scan: iterations counted, -1 unknown */
    int64_t trips_max;     /* Loop: the constant maximum trip count, or -1 */
    int64_t iter_macs, iter_flops; /* one body iteration (If: branch counted) */
    bool iter_known;
} ox_cost;

/* Cost of one node from the types of its inputs and outputs. Never fails:
 * a node whose dims are unknown or whose op has no rule reports what it can
 * (possibly 0) with known = false. If, Loop and Scan are costed from their
 * bodies (docs/COST.md, "Control flow"). */
void ox_node_cost(const ox_node *n, ox_cost *out);
/* One line on how a control-flow node was costed ("larger branch
 * (else_branch) counted", "12 iterations x 1.20M MACs", "trip count
 * unknown: 1.20M MACs per iteration"); "" for other nodes. */
const char *ox_cost_note(const ox_cost *c, char *buf, size_t len);

/* The cost rule table as the op list (src/ops, ox_op_facts) sees it: a
 * rule is keyed by op_type and serves the default and com.microsoft
 * domains (other domains have none). ox_cost_rule_at enumerates the rules'
 * op types (NULL past the end). */
bool ox_cost_rule_exists(const char *domain, const char *op_type);
const char *ox_cost_rule_at(int i);

/* True when v holds weights: an initializer, or a floating-point value
 * computed only from weights (Constant, ConstantOfShape of a constant shape,
 * Identity/Cast/Transpose/... of a weight). */
bool ox_value_is_weight(const ox_value *v);

/* Bytes of the weights node n itself holds, as ox_model_cost's
 * weights_bytes counts them: a Constant's tensor (value, value_float(s),
 * value_int(s); any element type, like initializers), a ConstantOfShape of static
 * size whose output is a weight; 0 for any other node. Initializers are
 * counted by their values, not here. */
int64_t ox_node_weight_bytes(const ox_node *n);

typedef struct ox_model_cost {
    int64_t params;            /* elements of every weight tensor */
    int64_t params_dedup;      /* counting byte-identical weights once */
    int64_t weights_bytes;
    int64_t weights_bytes_dedup;
    /* weights_bytes split by element type (index: ox_dtype); the entries
     * sum to weights_bytes. `info` and `optimize` show them (issue 15). */
    int64_t weights_bytes_by_dtype[OX_DT_COUNT];
    int64_t macs, flops;       /* sums over the main graph's nodes */
    int64_t bytes_read, bytes_written;
    int64_t peak_activation_bytes;   /* arena size of the memory plan */
    int64_t activation_lower_bound;  /* largest set of simultaneously live bytes */
    int64_t memory_bytes;      /* weights_bytes + peak_activation_bytes */
    uint64_t file_bytes;       /* size of the .onnx file (0 when built in memory) */
    int n_nodes;               /* nodes costed (main graph) */
    int n_unknown;             /* nodes whose macs are not known */
    int n_no_rule;             /* of those: op without a cost rule */
    int n_upper;               /* If nodes counted by their larger branch */
    /* Sums of every known node's smallest cost (If: its smaller branch): a
     * lower bound of the model's cost when some nodes are unknown. */
    int64_t macs_lower, flops_lower;
    bool known;                /* macs/flops known: every node known (an upper
                                * bound when n_upper > 0) */
    bool bytes_known;
    bool peak_known;           /* every activation has a static size */
} ox_model_cost;

/* Totals for m's main graph (If/Loop/Scan include their bodies as
 * ox_node_cost counts them). Fails only on bad arguments or out of memory. */
ox_status ox_model_cost_compute(const ox_model *m, ox_model_cost *out,
                                ox_error *err);

/* The one format of every printed MAC/FLOP figure (CLI and TUI):
 *   "4.09G"                     known
 *   "<= 4.09G"                  known, but an If counted by its larger branch
 *   ">= 1.20M (3 nodes unknown)" some nodes unknown: the known part, a
 *                               lower bound
 *   "?"                         nothing known
 * Unknown is never printed as a number. */
const char *ox_fmt_model_macs(const ox_model_cost *c, char *buf, size_t len);
const char *ox_fmt_model_flops(const ox_model_cost *c, char *buf, size_t len);
/* Per node: "1.20M", "<= 1.20M" or "?". */
const char *ox_fmt_node_macs(const ox_cost *c, char *buf, size_t len);
/* The general form behind the three above. */
const char *ox_fmt_cost(int64_t value, int64_t lower, bool known, bool upper,
                        int n_unknown, char *buf, size_t len);

/* Bytes of a value with a static tensor type; false when not static. */
bool ox_value_static_bytes(const ox_value *v, int64_t *bytes);
/* Elements of a value with a static tensor type; false when not static. */
bool ox_value_static_numel(const ox_value *v, int64_t *numel);

#endif
