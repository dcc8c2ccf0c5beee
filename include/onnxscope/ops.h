/* The operator registry: one table entry per (domain, op_type, since_version)
 * holding the schema (inputs, outputs, attributes with defaults, type
 * constraints, a one-line summary) and the shape/type inference function.
 * The same table feeds inference, the checker, `--help` and docs/OPERATORS.md. */
#ifndef ONNXSCOPE_OPS_H
#define ONNXSCOPE_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "onnxscope/ir.h"
#include "onnxscope/status.h"

/* Context handed to an inference function (defined in infer.h). */
typedef struct ox_infer_node_ctx ox_infer_node_ctx;
typedef ox_status (*ox_op_infer_fn)(ox_infer_node_ctx *c);

/* Signatures are compact strings so that the table stays readable and one
 * line per operator:
 *   inputs/outputs: "X:T, W:T, B:T?, args:V..."  `?` optional, `...` variadic
 *                   (a variadic parameter is always the last one)
 *   attrs:          "axis:i=0, pads:ints, mode:s=constant, value:t, body:g!"
 *                   types i f s t g ints floats strings tensors graphs
 *                   sparse tp; `=x` default, `!` required, neither: optional
 *   types:          "T: float16|float|double; T1: int64"            */
typedef struct ox_op_schema {
    const char *domain;      /* "" for the default ONNX domain */
    const char *op_type;
    int since_version;       /* valid up to the next entry's since_version */
    const char *inputs;
    const char *outputs;
    const char *attrs;
    const char *types;
    const char *doc;         /* one line */
    ox_op_infer_fn infer;    /* NULL: outputs are left untyped */
} ox_op_schema;

/* Entry with the highest since_version <= opset for (domain, op_type), or
 * NULL. domain NULL, "" and "ai.onnx" all name the default domain. */
const ox_op_schema *ox_op_find(const char *domain, const char *op_type,
                               int64_t opset);
/* Schema for node n under model m's opset imports (NULL if unregistered). */
const ox_op_schema *ox_op_for_node(const ox_model *m, const ox_node *n);

/* Iterates the registry in table order (sorted by domain, op, version).
 * Returns NULL after the last entry: for (i = 0; (s = ox_op_at(i)); i++). */
const ox_op_schema *ox_op_at(int i);
int ox_op_count(void);
typedef void (*ox_op_each_fn)(const ox_op_schema *s, void *ctx);
void ox_op_each(ox_op_each_fn fn, void *ctx);
/* The entry that supersedes s (same domain and op, next version), or NULL. */
const ox_op_schema *ox_op_next_version(const ox_op_schema *s);

/* Arity parsed from the signature strings: max is -1 when variadic. */
typedef struct ox_op_arity {
    int min_in, max_in, min_out, max_out;
} ox_op_arity;
void ox_op_schema_arity(const ox_op_schema *s, ox_op_arity *a);

/* One parsed attribute of a schema's attrs string. */
typedef struct ox_op_attr_info {
    char name[64];
    ox_attr_type type;
    bool required;
    bool has_default;
    char dflt[64];           /* textual default as written in the table */
} ox_op_attr_info;
/* Parses attribute k of s; returns false when k is past the end. */
bool ox_op_schema_attr(const ox_op_schema *s, int k, ox_op_attr_info *out);

/* ---- one op list: the facts other layers attach ---------------------------
 * An op is complete when it has a schema, an inference function for every
 * schema version, a cost rule (src/analysis/cost.c) and a CPU kernel serving
 * every schema version (src/exec). ox_op_facts says which it has;
 * tests/ops/test_ops_complete.c fails for every op (of the registry, of the
 * kernel tables, of the cost rules) lacking one that its exemption does not
 * name. How to add an op: docs/DESIGN.md, "One op list". */
enum {
    OX_OP_SCHEMA = 1,   /* listed in the registry */
    OX_OP_INFER = 2,    /* every schema version has an inference function */
    OX_OP_COST = 4,     /* a cost rule */
    OX_OP_KERNEL = 8,   /* a kernel for the opset of every schema version */
    OX_OP_ALL = 15,
};
unsigned ox_op_facts(const char *domain, const char *op_type);

/* Model-local functions importing another default-domain opset than the
 * model's: where every default-domain operator a body uses (nested
 * subgraphs included) has the same registry entry at both versions (ONNX
 * checker's compatibility rule), the function's import is set to the
 * model's, so that the calls can be inlined. Returns how many functions
 * still differ. Meant for the inlined copies `run` and the cost model make. */
int ox_op_align_function_opsets(ox_model *m);

/* An op allowed to lack some facts (`missing`), and why. */
typedef struct ox_op_exemption {
    const char *domain, *op_type;
    unsigned missing;
    const char *why;
} ox_op_exemption;
/* The exemptions in table order (NULL past the end), and the one for an op. */
const ox_op_exemption *ox_op_exemption_at(int i);
const ox_op_exemption *ox_op_exemption_for(const char *domain, const char *op_type);

#endif
