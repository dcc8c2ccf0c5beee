/* The model checker: structural rules of the ONNX IR (single assignment,
 * definitions before use, acyclicity, opset imports, initializer types,
 * attribute types against the operator registry). Reports every problem
 * found, not just the first. */
#include "onnxscope/check.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnxscope/ops.h"

/* The IR version proto/onnx.proto describes. */
#define OX_IR_VERSION_MAX 11

static void add_issue(ox_check_report *r, bool warning, const char *fmt, va_list ap)
{
    if (r->n_issues == r->cap) {
        int cap = r->cap ? r->cap * 2 : 16;
        ox_check_issue *ni = realloc(r->issues, (size_t)cap * sizeof *ni);
        if (!ni)
            return;
        r->issues = ni;
        r->cap = cap;
    }
    char buf[640];
    vsnprintf(buf, sizeof buf, fmt, ap);
    char *msg = ox_strdup(buf);
    if (!msg)
        return;
    /* Errors before warnings, each in the order found. */
    int at = warning ? r->n_issues : r->n_errors;
    memmove(&r->issues[at + 1], &r->issues[at],
            (size_t)(r->n_issues - at) * sizeof *r->issues);
    r->issues[at].msg = msg;
    r->issues[at].warning = warning;
    r->n_issues++;
    if (!warning)
        r->n_errors++;
}

void ox_check_report_add(ox_check_report *r, bool warning, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add_issue(r, warning, fmt, ap);
    va_end(ap);
}

static void report(ox_check_report *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void report(ox_check_report *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add_issue(r, false, fmt, ap);
    va_end(ap);
}

void ox_check_report_free(ox_check_report *rep)
{
    for (int i = 0; i < rep->n_issues; i++)
        free(rep->issues[i].msg);
    free(rep->issues);
    memset(rep, 0, sizeof *rep);
}

static const char *nname(const ox_node *n)
{
    return n->name && *n->name ? n->name : "(unnamed)";
}

static bool is_defined(const ox_value *v)
{
    return v->producer || v->init || v->is_input;
}

static bool is_sparse_init(const ox_graph *g, const char *name)
{
    for (; g; g = g->parent)
        for (int i = 0; i < g->n_sparse; i++) {
            const ox_tensor *t = g->sparse_inits[i]->values;
            if (t && t->name && strcmp(t->name, name) == 0)
                return true;
        }
    return false;
}

/* An operator of the default domain that the registry does not know. */
typedef struct unknown_op {
    const char *op;
    int count;
    int since;      /* > 0: known from this opset on (the model's is older) */
} unknown_op;

typedef struct checker {
    const ox_model *m;
    ox_check_report *r;
    bool in_function;
    const ox_function *fn;
    unknown_op *unknown;
    int n_unknown, cap_unknown;
} checker;

static void check_graph(checker *C, const ox_graph *g, const char *gname);

static bool domain_imported(const checker *C, const char *domain)
{
    if (C->fn) {
        for (int i = 0; i < C->fn->n_opsets; i++) {
            const char *d = C->fn->opsets[i].domain;
            if (strcmp(d, domain) == 0 ||
                ((!*domain || !strcmp(domain, "ai.onnx")) && (!*d || !strcmp(d, "ai.onnx"))))
                return true;
        }
    }
    if (ox_model_opset(C->m, domain) >= 0)
        return true;
    for (int i = 0; i < C->m->n_functions; i++)
        if (strcmp(C->m->functions[i].domain, domain) == 0)
            return true;
    return false;
}

/* Parameter idx of a signature ("X:T, W:T, B:T?, args:V..."): 0 required,
 * 1 optional, -1 past the end. A variadic last parameter covers every
 * later index; entries after its first are never required, and ONNX
 * allows empty names in a variadic list. */
static int sig_param(const char *sig, int idx)
{
    if (!sig || !*sig)
        return -1;
    const char *p = sig;
    for (int k = 0;; k++) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        bool opt = memchr(p, '?', len) != NULL;
        bool var = len >= 3 && memmem(p, len, "...", 3) != NULL;
        if (var)
            return k == idx && !opt ? 0 : 1;
        if (k == idx)
            return opt ? 1 : 0;
        if (!e)
            return -1;
        p = e + 1;
    }
}

static bool is_default_domain(const char *d)
{
    return !d || !*d || !strcmp(d, "ai.onnx");
}

static const ox_function *find_function(const ox_model *m, const char *domain,
                                        const char *name)
{
    for (int i = 0; name && i < m->n_functions; i++) {
        const ox_function *f = &m->functions[i];
        const char *fd = f->domain ? f->domain : "";
        if (f->name && !strcmp(f->name, name) &&
            (!strcmp(fd, domain ? domain : "") ||
             (is_default_domain(fd) && is_default_domain(domain))))
            return f;
    }
    return NULL;
}

static void note_unknown(checker *C, const ox_node *n)
{
    for (int i = 0; i < C->n_unknown; i++)
        if (!strcmp(C->unknown[i].op, n->op_type)) {
            C->unknown[i].count++;
            return;
        }
    if (C->n_unknown == C->cap_unknown) {
        int cap = C->cap_unknown ? C->cap_unknown * 2 : 8;
        unknown_op *nu = realloc(C->unknown, (size_t)cap * sizeof *nu);
        if (!nu)
            return;
        C->unknown = nu;
        C->cap_unknown = cap;
    }
    const ox_op_schema *later = ox_op_find("", n->op_type, INT32_MAX);
    C->unknown[C->n_unknown++] = (unknown_op){n->op_type, 1, later ? later->since_version : 0};
}

static const char *count_range(int min, int max, char *buf, size_t len)
{
    if (max < 0)
        snprintf(buf, len, "%d or more", min);
    else if (max == min)
        snprintf(buf, len, "%d", min);
    else
        snprintf(buf, len, "%d to %d", min, max);
    return buf;
}

/* Input/output counts and empty required names against the registry. */
static void check_arity(checker *C, const ox_node *n, const ox_op_schema *s,
                        const char *gname)
{
    ox_op_arity a;
    ox_op_schema_arity(s, &a);
    char want[48];
    if (n->n_inputs < a.min_in || (a.max_in >= 0 && n->n_inputs > a.max_in))
        report(C->r, "%s: node '%s' (%s): has %d input%s, expected %s", gname, nname(n),
               n->op_type, n->n_inputs, n->n_inputs == 1 ? "" : "s",
               count_range(a.min_in, a.max_in, want, sizeof want));
    for (int i = 0; i < n->n_inputs; i++)
        if (!n->inputs[i] && sig_param(s->inputs, i) == 0)
            report(C->r, "%s: node '%s' (%s): input %d is required but empty", gname,
                   nname(n), n->op_type, i);
    if (n->n_outputs == 0)
        return;  /* reported for every node by check_graph */
    if (n->n_outputs < a.min_out || (a.max_out >= 0 && n->n_outputs > a.max_out))
        report(C->r, "%s: node '%s' (%s): has %d output%s, expected %s", gname, nname(n),
               n->op_type, n->n_outputs, n->n_outputs == 1 ? "" : "s",
               count_range(a.min_out, a.max_out, want, sizeof want));
    for (int i = 0; i < n->n_outputs; i++)
        if (!n->outputs[i] && sig_param(s->outputs, i) == 0)
            report(C->r, "%s: node '%s' (%s): output %d is required but empty", gname,
                   nname(n), n->op_type, i);
}

static int value_rank(const ox_value *v)
{
    if (!v)
        return -1;
    if (v->init)
        return v->init->rank;
    if (v->type && v->type->kind == OX_TYPE_TENSOR && v->type->has_shape)
        return v->type->rank;
    return -1;
}

/* Conv/pool attributes sized by the spatial rank (what ONNX's shape
 * inference refuses, and what our kernels would index out of bounds). */
static void check_spatial_attrs(checker *C, const ox_node *n, const char *gname)
{
    static const struct { const char *op; int x, w; } ops[] = {
        {"Conv", 0, 1}, {"ConvTranspose", 0, 1}, {"ConvInteger", 0, 1},
        {"QLinearConv", 0, 3}, {"DeformConv", 0, 1}, {"MaxPool", 0, -1},
        {"AveragePool", 0, -1}, {"LpPool", 0, -1}, {"MaxUnpool", 0, -1},
    };
    if (!is_default_domain(n->domain) || !n->op_type)
        return;
    int k = -1;
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        if (!strcmp(ops[i].op, n->op_type))
            k = (int)i;
    if (k < 0)
        return;
    int rx = ops[k].x < n->n_inputs ? value_rank(n->inputs[ops[k].x]) : -1;
    int rw = ops[k].w >= 0 && ops[k].w < n->n_inputs ? value_rank(n->inputs[ops[k].w]) : -1;
    if (rx >= 0 && rw >= 0 && rx != rw) {
        report(C->r, "%s: node '%s' (%s): the input has rank %d but the weights rank %d",
               gname, nname(n), n->op_type, rx, rw);
        return;
    }
    int r = rx >= 0 ? rx : rw;
    if (r < 0)
        return;
    if (r < 2) {
        report(C->r, "%s: node '%s' (%s): the input has rank %d, at least 2 needed", gname,
               nname(n), n->op_type, r);
        return;
    }
    static const struct { const char *name; int mult; } attrs[] = {
        {"kernel_shape", 1}, {"strides", 1}, {"dilations", 1}, {"pads", 2},
        {"output_padding", 1}, {"output_shape", 1},
    };
    for (size_t i = 0; i < sizeof attrs / sizeof *attrs; i++) {
        const ox_attr *a = ox_node_attr(n, attrs[i].name);
        if (!a || a->type != OX_ATTR_INTS || a->ref_attr_name)
            continue;
        int want = attrs[i].mult * (r - 2);
        if (a->n != want)
            report(C->r, "%s: node '%s' (%s): attribute '%s' has %d value%s, expected %d for "
                   "an input of rank %d", gname, nname(n), n->op_type, a->name, a->n,
                   a->n == 1 ? "" : "s", want, r);
    }
}

static const ox_graph *graph_attr(const ox_node *n, const char *name)
{
    const ox_attr *a = ox_node_attr(n, name);
    return a && a->type == OX_ATTR_GRAPH ? a->g : NULL;
}

/* Bodies of If/Loop/Scan must match the node's inputs and outputs. */
static void check_control_flow(checker *C, const ox_node *n, const char *gname)
{
    if (!is_default_domain(n->domain) || !n->op_type)
        return;
    if (!strcmp(n->op_type, "If")) {
        static const char *br[] = {"then_branch", "else_branch"};
        for (int i = 0; i < 2; i++) {
            const ox_graph *b = graph_attr(n, br[i]);
            if (b && b->n_outputs != n->n_outputs)
                report(C->r, "%s: node '%s' (If): %s has %d output%s, the node %d", gname,
                       nname(n), br[i], b->n_outputs, b->n_outputs == 1 ? "" : "s",
                       n->n_outputs);
        }
    } else if (!strcmp(n->op_type, "Loop")) {
        const ox_graph *b = graph_attr(n, "body");
        if (b && b->n_inputs != n->n_inputs)
            report(C->r, "%s: node '%s' (Loop): the body has %d inputs, expected %d "
                   "(iteration, condition and one per loop-carried value)", gname, nname(n),
                   b->n_inputs, n->n_inputs);
        else if (b && b->n_outputs < n->n_inputs - 1)
            report(C->r, "%s: node '%s' (Loop): the body has %d outputs, expected at least %d "
                   "(condition and one per loop-carried value)", gname, nname(n),
                   b->n_outputs, n->n_inputs - 1);
    } else if (!strcmp(n->op_type, "Scan") && ox_model_opset(C->m, "") >= 9) {
        const ox_graph *b = graph_attr(n, "body");
        if (b && (b->n_inputs != n->n_inputs || b->n_outputs != n->n_outputs))
            report(C->r, "%s: node '%s' (Scan): the body has %d inputs and %d outputs, the "
                   "node %d and %d", gname, nname(n), b->n_inputs, b->n_outputs,
                   n->n_inputs, n->n_outputs);
    }
}

/* Element-type attributes (Cast 'to', EyeLike/Random* 'dtype'). */
static void check_dtype_attrs(checker *C, const ox_node *n, const char *gname)
{
    if (!is_default_domain(n->domain))
        return;
    static const char *names[] = {"to", "dtype"};
    for (int i = 0; i < 2; i++) {
        const ox_attr *a = ox_node_attr(n, names[i]);
        if (a && a->type == OX_ATTR_INT && !a->ref_attr_name && !ox_dtype_valid((int)a->i))
            report(C->r, "%s: node '%s' (%s): attribute '%s' = %lld is not a valid element type",
                   gname, nname(n), n->op_type, a->name, (long long)a->i);
    }
}

static const char *attr_type_name(ox_attr_type t)
{
    static const char *names[] = {"undefined", "float", "int", "string", "tensor",
                                  "graph", "floats", "ints", "strings", "tensors",
                                  "graphs", "sparse_tensor", "sparse_tensors",
                                  "type_proto", "type_protos"};
    return (unsigned)t < sizeof names / sizeof *names ? names[t] : "?";
}

static void check_attrs(checker *C, const ox_node *n, const char *gname)
{
    for (int i = 0; i < n->n_attrs; i++) {
        const ox_attr *a = &n->attrs[i];
        if (a->type == OX_ATTR_UNDEFINED && !a->ref_attr_name)
            report(C->r, "%s: node '%s' (%s): attribute '%s' has no type", gname,
                   nname(n), n->op_type, a->name);
        if (a->ref_attr_name && !C->in_function)
            report(C->r, "%s: node '%s' (%s): attribute '%s' refers to a function attribute outside a function",
                   gname, nname(n), n->op_type, a->name);
        if (a->type == OX_ATTR_GRAPH && a->g) {
            char sub[256];
            snprintf(sub, sizeof sub, "%s/%s.%s", gname, nname(n), a->name);
            check_graph(C, a->g, sub);
        }
        if (a->type == OX_ATTR_GRAPHS)
            for (int k = 0; k < a->n; k++) {
                char sub[256];
                snprintf(sub, sizeof sub, "%s/%s.%s[%d]", gname, nname(n), a->name, k);
                check_graph(C, a->graphs[k], sub);
            }
    }
    check_spatial_attrs(C, n, gname);
    check_control_flow(C, n, gname);
    check_dtype_attrs(C, n, gname);
    const ox_op_schema *s = ox_op_for_node(C->m, n);
    if (!s) {
        if (n->op_type && *n->op_type && is_default_domain(n->domain) &&
            !find_function(C->m, n->domain, n->op_type))
            note_unknown(C, n);
        return;
    }
    check_arity(C, n, s, gname);
    ox_op_attr_info info;
    for (int k = 0; ox_op_schema_attr(s, k, &info); k++) {
        const ox_attr *a = ox_node_attr(n, info.name);
        if (!a) {
            if (info.required)
                report(C->r, "%s: node '%s' (%s): required attribute '%s' is missing",
                       gname, nname(n), n->op_type, info.name);
            continue;
        }
        if (a->ref_attr_name || a->type == OX_ATTR_UNDEFINED)
            continue;
        if (a->type != info.type)
            report(C->r, "%s: node '%s' (%s): attribute '%s' has type %s, expected %s",
                   gname, nname(n), n->op_type, a->name, attr_type_name(a->type),
                   attr_type_name(info.type));
    }
}

/* A node on a cycle of g, or NULL: the library's topological order
 * (src/ir) fails exactly on cycles. */
static const ox_node *find_cycle(const ox_graph *g)
{
    if (g->n_nodes == 0)
        return NULL;
    int *order = malloc((size_t)g->n_nodes * sizeof *order);
    ox_node *bad = NULL;
    if (order && ox_graph_topo_order(g, order, &bad, NULL) != OX_EMODEL)
        bad = NULL;
    free(order);
    return bad;
}

static int cmp_node_name(const void *a, const void *b)
{
    const ox_node *x = *(const ox_node *const *)a, *y = *(const ox_node *const *)b;
    return strcmp(x->name, y->name);
}

/* Negative dim_values the file declared for v (ox_dim.declared_neg): ONNX
 * 1.12's checker does not reject them, ONNX Runtime reads them as unknown
 * and runs any size there, so a warning: the dim is unknown, not -1 wide. */
static void warn_declared_neg(checker *C, const ox_value *v, const char *what, const char *gname)
{
    const ox_type *t = v->decl;
    for (int depth = 0; t && t->inner && depth < 64; depth++)
        t = t->inner;
    for (int d = 0; t && t->has_shape && t->dims && d < t->rank; d++)
        if (t->dims[d].declared_neg < 0)
            ox_check_report_add(C->r, true,
                                "%s: %s '%s' declares dim %lld at axis %d: a negative size, read "
                                "as unknown (as ONNX Runtime does; write a dim_param or leave "
                                "the dim empty)", gname, what, v->name,
                                (long long)t->dims[d].declared_neg, d);
}

static void check_graph(checker *C, const ox_graph *g, const char *gname)
{
    for (int i = 0; i < g->n_inputs; i++)
        warn_declared_neg(C, g->inputs[i], "input", gname);
    for (int i = 0; i < g->n_values; i++)
        if (g->values[i]->has_value_info && !g->values[i]->is_input && !g->values[i]->is_output)
            warn_declared_neg(C, g->values[i], "value_info", gname);
    for (int i = 0; i < g->n_outputs; i++)
        warn_declared_neg(C, g->outputs[i], "output", gname);
    /* Definitions before use, in list order. */
    for (int i = 0; i < g->n_nodes; i++) {
        const ox_node *n = g->nodes[i];
        if (!n->op_type || !*n->op_type)
            report(C->r, "%s: node %d has no op_type", gname, i);
        if (n->n_outputs == 0)
            report(C->r, "%s: node '%s' (%s) has no outputs", gname, nname(n),
                   n->op_type ? n->op_type : "?");
        const char *dom = n->domain ? n->domain : "";
        if (!domain_imported(C, dom))
            report(C->r, "%s: node '%s' (%s): domain '%s' is not imported", gname,
                   nname(n), n->op_type, dom);
        for (int k = 0; k < n->n_inputs; k++) {
            const ox_value *v = n->inputs[k];
            if (!v)
                continue;
            if (!is_defined(v) && !is_sparse_init(v->graph, v->name)) {
                report(C->r, "%s: node '%s' (%s): input '%s' is not defined", gname,
                       nname(n), n->op_type, v->name);
            } else if (v->producer && v->producer->graph == g && v->producer->index >= i) {
                report(C->r, "%s: node '%s' (%s): input '%s' is used before it is produced (nodes not topologically sorted)",
                       gname, nname(n), n->op_type, v->name);
            }
        }
        check_attrs(C, n, gname);
    }
    if (g->n_outputs == 0)
        report(C->r, "%s: the graph has no outputs", gname);
    const ox_node *cyc = find_cycle(g);
    if (cyc)
        report(C->r, "%s: the graph has a cycle through node '%s' (%s)", gname, nname(cyc),
               cyc->op_type);
    for (int i = 0; i < g->n_outputs; i++) {
        const ox_value *v = g->outputs[i];
        if (!is_defined(v) && !is_sparse_init(g, v->name))
            report(C->r, "%s: graph output '%s' is not produced", gname, v->name);
    }
    /* Initializers must agree with any declared type. */
    for (int i = 0; i < g->n_values; i++) {
        const ox_value *v = g->values[i];
        if (!v->init || !v->type || v->type->kind != OX_TYPE_TENSOR)
            continue;
        const ox_type *t = v->type;
        if (t->elem != OX_DT_UNDEFINED && t->elem != v->init->dtype) {
            report(C->r, "%s: initializer '%s' is %s but declared %s", gname, v->name,
                   ox_dtype_name(v->init->dtype), ox_dtype_name(t->elem));
            continue;
        }
        if (!t->has_shape)
            continue;
        bool ok = t->rank == v->init->rank;
        for (int d = 0; ok && d < t->rank; d++)
            if (t->dims[d].value >= 0 && t->dims[d].value != v->init->dims[d])
                ok = false;
        if (!ok) {
            char a[128], b[128];
            report(C->r, "%s: initializer '%s' has shape %s but is declared %s", gname,
                   v->name, ox_shape_str(v->init->rank, v->init->dims, a, sizeof a),
                   ox_type_str(t, b, sizeof b));
        }
    }
    /* Duplicate node names (empty names are allowed). */
    if (g->n_nodes > 1) {
        const ox_node **sorted = malloc(sizeof(*sorted) * (size_t)g->n_nodes);
        if (sorted) {
            int k = 0;
            for (int i = 0; i < g->n_nodes; i++)
                if (g->nodes[i]->name && *g->nodes[i]->name)
                    sorted[k++] = g->nodes[i];
            qsort(sorted, (size_t)k, sizeof *sorted, cmp_node_name);
            for (int i = 1; i < k; i++)
                if (strcmp(sorted[i]->name, sorted[i - 1]->name) == 0 &&
                    (i < 2 || strcmp(sorted[i]->name, sorted[i - 2]->name) != 0))
                    report(C->r, "%s: node name '%s' is used more than once", gname,
                           sorted[i]->name);
            free(sorted);
        }
    }
}

/* ---- recursive local functions ---------------------------------------- */

typedef struct calls {
    const ox_model *m;
    int *callees;
    int n, cap;
} calls;

static void collect_calls(ox_graph *g, void *ctx)
{
    calls *c = ctx;
    for (int i = 0; i < g->n_nodes; i++) {
        const ox_node *n = g->nodes[i];
        const ox_function *f = find_function(c->m, n->domain, n->op_type);
        if (!f)
            continue;
        if (c->n == c->cap) {
            int cap = c->cap ? c->cap * 2 : 8;
            int *nc = realloc(c->callees, (size_t)cap * sizeof *nc);
            if (!nc)
                return;
            c->callees = nc;
            c->cap = cap;
        }
        c->callees[c->n++] = (int)(f - c->m->functions);
    }
}

/* ONNX forbids a function that calls itself, directly or through others
 * (inference would follow it forever). Depth-first search over the call
 * graph with an explicit stack: a hostile file may chain many functions. */
static void check_recursion(checker *C)
{
    const ox_model *m = C->m;
    int nf = m->n_functions;
    if (nf == 0)
        return;
    calls *edges = calloc((size_t)nf, sizeof *edges);
    char *color = calloc((size_t)nf, 1);   /* 0 new, 1 on the stack, 2 done */
    int *stack = malloc((size_t)nf * sizeof *stack);
    int *next = calloc((size_t)nf, sizeof *next);
    if (!edges || !color || !stack || !next)
        goto out;
    for (int i = 0; i < nf; i++) {
        edges[i].m = m;
        if (m->functions[i].body)
            ox_graph_visit(m->functions[i].body, collect_calls, &edges[i]);
    }
    for (int root = 0; root < nf; root++) {
        if (color[root])
            continue;
        int sp = 0;
        stack[sp++] = root;
        color[root] = 1;
        while (sp) {
            int f = stack[sp - 1];
            if (next[f] >= edges[f].n) {
                color[f] = 2;
                sp--;
                continue;
            }
            int g = edges[f].callees[next[f]++];
            if (color[g] == 0) {
                color[g] = 1;
                stack[sp++] = g;
            } else if (color[g] == 1) {
                char path[300];
                size_t off = 0;
                int from = sp - 1;
                while (from > 0 && stack[from] != g)
                    from--;
                for (int k = from; k < sp && off < sizeof path; k++)
                    off += (size_t)snprintf(path + off, sizeof path - off, "%s -> ",
                                            m->functions[stack[k]].name);
                if (off < sizeof path)
                    snprintf(path + off, sizeof path - off, "%s", m->functions[g].name);
                report(C->r, "function '%s' is recursive (%s)", m->functions[g].name, path);
            }
        }
    }
out:
    for (int i = 0; edges && i < nf; i++)
        free(edges[i].callees);
    free(edges);
    free(color);
    free(stack);
    free(next);
}

static void report_unknown_ops(checker *C)
{
    if (!C->n_unknown)
        return;
    char buf[512];
    size_t off = 0;
    for (int i = 0; i < C->n_unknown && off < sizeof buf; i++) {
        const unknown_op *u = &C->unknown[i];
        char since[48] = "";
        if (u->since > 0)
            snprintf(since, sizeof since, "; known from opset %d", u->since);
        off += (size_t)snprintf(buf + off, sizeof buf - off, "%s%s (%d node%s%s)",
                                i ? ", " : "", u->op, u->count, u->count == 1 ? "" : "s",
                                since);
    }
    ox_check_report_add(C->r, true,
                        "operator%s of the default domain unknown at the model's opset "
                        "(outputs left untyped): %s",
                        C->n_unknown == 1 ? "" : "s", buf);
}

/* The newest default-domain opset the registry has a definition from. */
static int newest_known_opset(void)
{
    int newest = 0;
    const ox_op_schema *s;
    for (int i = 0; (s = ox_op_at(i)); i++)
        if ((!s->domain || !*s->domain) && s->since_version > newest)
            newest = s->since_version;
    return newest;
}

/* A model stamped with an opset newer than any definition we have would
 * be run with the older semantics of any operator that changed since: a
 * warning says so (ONNX Runtime refuses such models outright). The same
 * for an IR version newer than proto/onnx.proto describes (fields it
 * added are not read). */
static void report_future_versions(checker *C)
{
    int64_t v = ox_model_opset(C->m, "");
    if (v < 0)
        v = ox_model_opset(C->m, "ai.onnx");
    int newest = newest_known_opset();
    if (newest > 0 && v > newest)
        ox_check_report_add(C->r, true,
                            "default-domain opset %lld is newer than the newest onnxscope knows "
                            "(%d): operators are read with their opset-%d definitions",
                            (long long)v, newest, newest);
    if (C->m->ir_version > OX_IR_VERSION_MAX)
        ox_check_report_add(C->r, true,
                            "ir_version %lld is newer than onnxscope reads (%d): fields added "
                            "since are ignored", (long long)C->m->ir_version, OX_IR_VERSION_MAX);
}

ox_status ox_check_model(const ox_model *m, ox_check_report *rep)
{
    memset(rep, 0, sizeof *rep);
    checker C = {.m = m, .r = rep};
    for (int i = 0; i < m->n_load_issues; i++)
        report(rep, "%s", m->load_issues[i]);
    if (m->graph)
        check_graph(&C, m->graph, m->graph->name && *m->graph->name ? m->graph->name : "main");
    for (int i = 0; i < m->n_functions; i++) {
        const ox_function *f = &m->functions[i];
        char gname[256];
        snprintf(gname, sizeof gname, "function %s", f->name);
        C.in_function = true;
        C.fn = f;
        if (f->body)
            check_graph(&C, f->body, gname);
    }
    check_recursion(&C);
    report_unknown_ops(&C);
    report_future_versions(&C);
    free(C.unknown);
    return rep->n_errors ? OX_EMODEL : OX_OK;
}
