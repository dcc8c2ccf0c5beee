/* The graph IR: Model, Graph (nested for If/Loop/Scan bodies and function
 * bodies), Node, Value, Attribute. Values are named edges with one producer
 * (a node output, a graph input or an initializer) and a list of consumers;
 * the editing API keeps those links consistent. */
#ifndef ONNXSCOPE_IR_H
#define ONNXSCOPE_IR_H

#include <stdbool.h>
#include <stdint.h>

#include "onnxscope/status.h"
#include "onnxscope/tensor.h"

typedef struct ox_model ox_model;
typedef struct ox_graph ox_graph;
typedef struct ox_node ox_node;
typedef struct ox_value ox_value;
typedef struct ox_attr ox_attr;
typedef struct ox_type ox_type;

/* ---- types ---------------------------------------------------------- */

typedef enum {
    OX_TYPE_NONE = 0,     /* type unknown */
    OX_TYPE_TENSOR,
    OX_TYPE_SPARSE_TENSOR,
    OX_TYPE_SEQUENCE,
    OX_TYPE_MAP,
    OX_TYPE_OPTIONAL,
} ox_type_kind;

/* A dimension: a known value (>= 0), a symbol, or unknown. */
typedef struct ox_dim {
    int64_t value;  /* -1 when not known */
    char *param;    /* symbol name or NULL */
    char *denotation;
    /* A negative dim_value the file declared (-1 from some exporters):
     * read as unknown (value -1), as ONNX Runtime reads it; `check` warns;
     * written back as declared while the dim stays unknown and without a
     * symbol (ONNX Runtime's saved models keep it too). 0: none. */
    int64_t declared_neg;
} ox_dim;

struct ox_type {
    ox_type_kind kind;
    ox_dtype elem;        /* tensor/sparse: element type; map: key type */
    bool has_shape;       /* tensor/sparse: shape known (possibly partially) */
    int rank;
    ox_dim *dims;         /* rank entries */
    ox_type *inner;       /* sequence/optional element, map value */
    char *denotation;
};

ox_type *ox_type_new_tensor(ox_dtype elem, int rank, const int64_t *dims);
ox_type *ox_type_clone(const ox_type *t);
void ox_type_free(ox_type *t);
/* True if tensor type with known rank and every dim value known. */
bool ox_type_is_static(const ox_type *t);
/* Formats "float32[1,3,N,?]" into buf. */
const char *ox_type_str(const ox_type *t, char *buf, size_t len);
/* The dims of tensor type t (or of the tensor inside a sequence, optional
 * or map) that the file declared negative and are still unknown: their
 * count; *axis and *value the first's (either may be NULL). */
int ox_type_declared_neg(const ox_type *t, int *axis, int64_t *value);
/* The note `info` and the TUI show after such a type: "(axis 0 declared
 * -1: unknown; see `check`)", "(axes 0, 2 declared negative: unknown; see
 * `check`)", or "" when there is none. Returns buf. */
const char *ox_type_neg_note(const ox_type *t, char *buf, size_t len);
bool ox_type_equal(const ox_type *a, const ox_type *b);
/* Declared types (ox_value.decl) against inferred ones.
 * compatible: nothing contradicts (same kind, element type and rank where
 * both know them, no known dim that differs); a NULL or untyped side is
 * compatible with anything.
 * refine: a copy of decl with only its gaps filled from inf (an unset
 * element type, a missing shape, an anonymous dim); a known dim or a
 * symbol of decl is never replaced, an unknown of inf never replaces a
 * known of decl. decl NULL/untyped gives a copy of inf. The caller frees.
 * Symbols become values only when the user fixes them, which edits decl
 * itself (ox_infer_fix_declared). */
bool ox_type_compatible(const ox_type *decl, const ox_type *inf);
ox_type *ox_type_refine(const ox_type *decl, const ox_type *inf);
/* The type a saved file gives v: for a graph or subgraph input/output the
 * refined declared type; for an intermediate value the refined declared
 * type when compatible with the inferred one, else the inferred one (a
 * pass changed what the value holds); the inferred type when nothing was
 * declared. NULL when neither is known. The caller frees. */
ox_type *ox_value_saved_type(const ox_value *v);

/* ---- attributes ------------------------------------------------------- */

typedef enum {
    OX_ATTR_UNDEFINED = 0,
    OX_ATTR_FLOAT = 1,
    OX_ATTR_INT = 2,
    OX_ATTR_STRING = 3,
    OX_ATTR_TENSOR = 4,
    OX_ATTR_GRAPH = 5,
    OX_ATTR_FLOATS = 6,
    OX_ATTR_INTS = 7,
    OX_ATTR_STRINGS = 8,
    OX_ATTR_TENSORS = 9,
    OX_ATTR_GRAPHS = 10,
    OX_ATTR_SPARSE_TENSOR = 11,
    OX_ATTR_SPARSE_TENSORS = 12,
    OX_ATTR_TYPE_PROTO = 13,
    OX_ATTR_TYPE_PROTOS = 14,
} ox_attr_type;

/* A sparse tensor: values (1-D) and indices (1-D linearized or 2-D [nnz,rank]). */
typedef struct ox_sparse {
    ox_tensor *values;
    ox_tensor *indices;
    int rank;
    int64_t dims[OX_MAX_RANK];
} ox_sparse;

struct ox_attr {
    char *name;
    ox_attr_type type;
    char *ref_attr_name;  /* function bodies: reference to caller's attribute */
    char *doc_string;
    float f;
    int64_t i;
    ox_bytes s;
    ox_tensor *t;
    ox_graph *g;
    ox_sparse *sparse;
    ox_type *tp;
    int n;                /* element count of the list forms below */
    float *floats;
    int64_t *ints;
    ox_bytes *strings;
    ox_tensor **tensors;
    ox_graph **graphs;
    ox_sparse **sparses;
    ox_type **tps;
};

/* ---- values, nodes, graphs -------------------------------------------- */

/* Every use record's node lives in the value's own graph: a read from
 * inside a subgraph is recorded as {owner, -1}, where owner is the node of
 * the value's graph that (transitively) holds that subgraph, once per read
 * (node input or subgraph output). */
typedef struct ox_use {
    ox_node *node;
    int input;          /* index into node->inputs; -1 for an implicit
                         * (outer-scope) use by a subgraph of node */
} ox_use;

struct ox_value {
    char *name;
    ox_graph *graph;      /* graph whose namespace defines it */
    ox_type *type;        /* may be NULL when unknown */
    /* The type the file declared for it (graph input or output, subgraph
     * input or output, value_info), set by the loader and never touched by
     * inference: type is what inference knows now, decl is the contract
     * the saver keeps (ox_value_saved_type). NULL when none was declared. */
    ox_type *decl;
    ox_node *producer;    /* NULL for graph inputs and initializers */
    int producer_output;
    ox_tensor *init;      /* initializer data, or NULL */
    bool is_input;        /* listed in graph->inputs */
    bool is_output;       /* listed in graph->outputs */
    bool has_value_info;  /* listed in value_info when loaded */
    char *doc_string;
    ox_use *uses;
    int n_uses, cap_uses;
    int mark;             /* scratch for passes/analysis */
    void *user;           /* scratch pointer for analysis */
    /* Constant value propagated by shape inference (infer.h), owned by the
     * value: free it with ox_tensor_free when the value is freed; a clone
     * may share it with ox_tensor_share or leave it NULL. */
    ox_tensor *known;
    /* Set by ox_model_mark_override_deps (inference calls it): the value's
     * contents (override_dep) or its inferred shape (override_shape_dep)
     * depend on an initializer a caller may override (ox_value_overridable),
     * so known and the shape hold what the stored defaults give, not a
     * constant. False on values made since. */
    bool override_dep, override_shape_dep;
    int slot;             /* position in graph->values, kept by the graph */
};

typedef struct ox_kv {
    char *key;
    char *value;
} ox_kv;

struct ox_node {
    int id;               /* unique within the model, stable across edits */
    char *name;
    char *op_type;
    char *domain;         /* "" for the default domain */
    char *overload;
    char *doc_string;
    ox_graph *graph;      /* owning graph */
    int n_inputs, n_outputs;
    ox_value **inputs;    /* NULL entries are omitted optional inputs */
    ox_value **outputs;   /* NULL entries are omitted optional outputs */
    int n_attrs;
    ox_attr *attrs;
    int n_meta;
    ox_kv *meta;
    int index;            /* position in graph->nodes, kept by the graph */
    int mark;             /* scratch */
    void *user;           /* scratch */
};

struct ox_graph {
    char *name;
    char *doc_string;
    ox_model *model;
    ox_graph *parent;     /* outer scope for subgraphs, NULL at top */
    ox_node *owner;       /* node holding this subgraph as an attribute */
    ox_node **nodes;
    int n_nodes, cap_nodes;
    ox_value **inputs;
    int n_inputs;
    ox_value **outputs;
    int n_outputs;
    ox_value **values;    /* every value defined in this scope */
    int n_values, cap_values;
    struct ox_strmap *index; /* name -> value */
    ox_sparse **sparse_inits; /* sparse initializers, kept verbatim */
    char **sparse_names;
    int n_sparse;
    ox_kv *meta;
    int n_meta;
    void *quant_annotations; /* packed TensorAnnotation list, kept verbatim */
    size_t quant_annotations_len;
};

typedef struct ox_opset {
    char *domain;
    int64_t version;
} ox_opset;

/* A model-local function (FunctionProto). Its body is a graph whose inputs
 * and outputs are the function's formal parameters. */
typedef struct ox_function {
    char *name, *domain, *overload, *doc_string;
    char **attr_names;
    int n_attr_names;
    ox_attr *attr_defaults;
    int n_attr_defaults;
    ox_opset *opsets;
    int n_opsets;
    ox_graph *body;
    ox_kv *meta;
    int n_meta;
} ox_function;

/* Verbatim, packed protobuf bytes of model parts we do not interpret
 * (training info, device configuration): re-emitted unchanged on save. */
typedef struct ox_blob {
    void *data;
    size_t len;
} ox_blob;

struct ox_model {
    int64_t ir_version;
    char *producer_name, *producer_version, *domain, *doc_string;
    int64_t model_version;
    ox_opset *opsets;
    int n_opsets;
    ox_kv *meta;
    int n_meta;
    ox_graph *graph;
    ox_function *functions;
    int n_functions;
    ox_blob *training_info;
    int n_training_info;
    ox_blob *configuration;
    int n_configuration;
    int next_node_id;
    char *path;           /* file the model came from, or NULL */
    char *dir;            /* its folder, for external data */
    ox_buffer *file_buf;  /* the mapped file, kept alive by tensor views */
    uint64_t file_size;
    /* The external data files it was loaded with (retained even when no
     * tensor uses them any more): a save must never replace one of them. */
    ox_buffer **ext_files;
    int n_ext_files;
    /* Problems the loader tolerated so that `check` can report them
     * (a value assigned twice, an undefined input ...). */
    char **load_issues;
    int n_load_issues;
    /* Private to src/ir: model-wide name registries (name -> use count) that
     * make ox_graph_new_value and ox_model_unique_node_name O(1). */
    struct ox_strmap *value_names;
    struct ox_strmap *node_names;
    uint64_t name_counter;
    /* Sticky: an editing primitive ran out of memory, so use lists, node
     * lists or names may be inconsistent. Set by src/ir, never cleared;
     * ox_model_check_oom reports it, the pass manager and ox_save refuse
     * such a model with OX_ENOMEM. */
    bool oom;
};

/* ---- construction and lifetime ----------------------------------------- */

ox_model *ox_model_new(void);
void ox_model_free(ox_model *m);
/* Deep copy of the IR; tensor bytes are shared by reference. */
ox_model *ox_model_clone(const ox_model *m);
/* Opset version imported for a domain ("" or "ai.onnx" = default), or -1. */
int64_t ox_model_opset(const ox_model *m, const char *domain);
void ox_model_set_opset(ox_model *m, const char *domain, int64_t version);

ox_graph *ox_graph_new(ox_model *m, ox_graph *parent);
void ox_graph_free(ox_graph *g);

/* Finds a value visible from g (searching outer scopes), or NULL. */
ox_value *ox_graph_lookup(const ox_graph *g, const char *name);
/* Finds a value defined in g's own scope, or NULL. */
ox_value *ox_graph_find(const ox_graph *g, const char *name);
/* Returns the value named `name` in g's scope, creating an untyped one.
 * NULL for NULL or "" (the name of an omitted optional input/output). */
ox_value *ox_graph_value(ox_graph *g, const char *name);
/* A fresh value with a name unique in the model, derived from hint (hint
 * itself when free, else hint_N). */
ox_value *ox_graph_new_value(ox_graph *g, const char *hint);
/* Renames a value (the new name must be free in its scope). */
ox_status ox_value_rename(ox_value *v, const char *name, ox_error *err);

ox_status ox_graph_add_input(ox_graph *g, ox_value *v);
ox_status ox_graph_add_output(ox_graph *g, ox_value *v);
/* Makes v an initializer holding t (takes ownership of t). */
ox_status ox_graph_set_initializer(ox_graph *g, ox_value *v, ox_tensor *t);
/* Removes a value that has no producer and no uses from its scope (also
 * from the graph's input/output lists); does nothing otherwise. O(values
 * of g): prefer ox_graph_prune_values for many. */
void ox_graph_remove_value(ox_graph *g, ox_value *v);

/* ---- nodes ------------------------------------------------------------ */

/* Creates a node appended at the end of g (call ox_graph_toposort or insert
 * at a position with ox_node_move). inputs/outputs may contain NULL. */
ox_node *ox_node_new(ox_graph *g, const char *op_type, const char *domain,
                     const char *name, int n_in, ox_value *const *in,
                     int n_out, ox_value *const *out);
/* Removes and frees a node; its outputs lose their producer (they stay in
 * the scope as unproduced values until removed). */
void ox_node_remove(ox_node *n);
/* Removes and frees many nodes of g in one pass: O(nodes of g) in total,
 * where calling ox_node_remove for each costs O(nodes of g) per call.
 * NULLs, duplicates and nodes of other graphs in the list are ignored. */
void ox_graph_remove_nodes(ox_graph *g, ox_node *const *nodes, int count);
/* Removes every value of g's own scope that has no producer, no uses, no
 * initializer and is neither a graph input nor output; returns the count. */
int ox_graph_prune_values(ox_graph *g);
/* Replaces input i (updating consumer lists). v may be NULL. An index at or
 * past n_inputs grows the list, filling the gap with NULL (same for
 * ox_node_set_output). */
void ox_node_set_input(ox_node *n, int i, ox_value *v);
void ox_node_set_output(ox_node *n, int i, ox_value *v);
/* Moves n to position pos in its graph's node list. */
void ox_node_move(ox_node *n, int pos);

ox_attr *ox_node_attr(const ox_node *n, const char *name);
int64_t ox_node_attr_i(const ox_node *n, const char *name, int64_t dflt);
float ox_node_attr_f(const ox_node *n, const char *name, float dflt);
/* Returns the string attribute or dflt. */
const char *ox_node_attr_s(const ox_node *n, const char *name, const char *dflt);
/* Returns the count and points *out at the ints, or -1 if absent. */
int ox_node_attr_ints(const ox_node *n, const char *name, const int64_t **out);
/* Adds or replaces an attribute (the node takes a deep copy of a). */
ox_attr *ox_node_set_attr(ox_node *n, const ox_attr *a);
ox_attr *ox_node_set_attr_i(ox_node *n, const char *name, int64_t v);
ox_attr *ox_node_set_attr_f(ox_node *n, const char *name, float v);
ox_attr *ox_node_set_attr_s(ox_node *n, const char *name, const char *s);
ox_attr *ox_node_set_attr_ints(ox_node *n, const char *name, int count, const int64_t *v);
/* Takes ownership of t. */
ox_attr *ox_node_set_attr_t(ox_node *n, const char *name, ox_tensor *t);
void ox_node_remove_attr(ox_node *n, const char *name);
bool ox_node_is_default_domain(const ox_node *n);
/* True if op_type matches and domain is default. */
bool ox_node_is(const ox_node *n, const char *op_type);
/* An ONNX random op (RandomNormal/Uniform[Like], Multinomial, Bernoulli):
 * its outputs differ from run to run, so it is never folded. */
bool ox_node_is_random(const ox_node *n);
/* A node with a graph attribute (If, Loop, Scan...). */
bool ox_node_has_subgraph(const ox_node *n);

/* An initializer a caller may override: listed as a graph input too, from
 * IR 4 on (PyTorch's keep_initializers_as_inputs; before IR 4 every
 * initializer is listed and is a constant). Its data is a default. */
bool ox_value_overridable(const ox_value *v);
/* v's contents when they are a constant no caller can change: a
 * non-overridable initializer's data, or inference's known value when it
 * depends on no overridable initializer (override_dep); NULL otherwise.
 * What every reader of a constant (passes, constant lists, the planner's
 * checks) takes, so that a fed value is never replaced by the default. */
const ox_tensor *ox_value_constant(const ox_value *v);
/* Marks override_dep / override_shape_dep on every value of m (subgraphs
 * included): an overridable initializer's contents, and its shape unless
 * its declared type is static (a feed must match it); through a node, the
 * outputs' contents depend on whatever the inputs' do, Shape and Size
 * outputs only on the input's shape; the outputs' shapes on the inputs'
 * shapes and on the contents of inputs inference can read (integer lists,
 * small floats, known values). Values in subgraphs of a model with any
 * overridable initializer are all marked (conservative). */
void ox_model_mark_override_deps(ox_model *m);
/* The same for the outputs of one node from its inputs' marks (a node a
 * pass made and ox_infer_node typed); marks are only ever added. */
void ox_node_mark_override_deps(ox_node *n);

void ox_attr_free_contents(ox_attr *a);
void ox_attr_copy(ox_attr *dst, const ox_attr *src, ox_graph *parent_scope);

/* ---- editing ------------------------------------------------------------ */

/* Redirects every use of `from` (including outer-scope uses inside
 * subgraphs, and graph-output listing) to `to`. */
void ox_value_replace_uses(ox_value *from, ox_value *to);
/* Refreshes outer-scope use records for subgraphs of n (call after editing
 * a subgraph's body). Rebuilds every use list (and the parent/owner links of
 * subgraphs, node indexes, value slots) of the scope tree containing g from
 * the node inputs and graph outputs: O(model).
 * Outer-scope reads are recorded as a use {node, -1} on the outer value by
 * the node that lives in the value's own graph and (transitively) holds the
 * reading subgraph, once per read. A subgraph should get its owner
 * (g->owner = node) before nodes are added to it; a loader that attaches
 * subgraphs afterwards calls ox_graph_relink(m->graph) once at the end. */
void ox_graph_relink(ox_graph *g);

/* The library's one topological order of g's nodes, without changing g:
 * order[k] (n_nodes entries) is the position in g->nodes of the k-th node.
 * Stable: among ready nodes the one stored first comes first, so a valid
 * stored order comes back unchanged. Edges are node inputs and the reads
 * inside a node's subgraphs (any depth) of values produced in g; use lists
 * are not consulted. On a cycle returns OX_EMODEL naming a node on it (also
 * in *on_cycle when not NULL). */
ox_status ox_graph_topo_order(const ox_graph *g, int *order, ox_node **on_cycle,
                              ox_error *err);
/* Sorts g's nodes into ox_graph_topo_order's order. On a cycle returns
 * OX_EMODEL naming a node on it and leaves the order unchanged. */
ox_status ox_graph_toposort(ox_graph *g, ox_error *err);

/* Visits g and every nested subgraph (depth-first, parents first). */
typedef void (*ox_graph_visit_fn)(ox_graph *g, void *ctx);
void ox_graph_visit(ox_graph *g, ox_graph_visit_fn fn, void *ctx);
/* Counts nodes of g including nested subgraphs. */
int ox_graph_count_nodes(const ox_graph *g, bool recursive);

/* Model-wide unique node name derived from hint; malloc'ed, caller frees.
 * The name is reserved: later calls never return it again. */
char *ox_model_unique_node_name(ox_model *m, const char *hint);

/* Replaces every call of a model-local function (main graph and bodies,
 * nested calls too) by the function's body, in place (src/ir/ir_inline.c;
 * the executor runs an inlined clone). OX_EUNSUPPORTED for a function
 * importing another default-domain opset than the model or holding a
 * control-flow node; OX_EMODEL for recursion. */
ox_status ox_model_inline_functions(ox_model *m, ox_error *err);
/* Whether some node of m (any depth) calls one of its local functions. */
bool ox_model_calls_functions(const ox_model *m);

/* OX_OK, or OX_ENOMEM (with a message naming `what`) when an edit of m ran
 * out of memory earlier (m->oom). */
ox_status ox_model_check_oom(const ox_model *m, const char *what, ox_error *err);

/* Test hook: the n-th allocation made by src/ir from now fails (n >= 1;
 * 0 disarms). ox_ir_test_failures counts the failures injected so far. */
void ox_ir_test_fail_after(long n);
long ox_ir_test_failures(void);

/* ---- small helpers -------------------------------------------------------- */

char *ox_strdup(const char *s);  /* NULL-safe; aborts never: returns NULL on OOM */
void *ox_xcalloc(size_t n, size_t size); /* returns NULL on overflow/OOM */

#endif
