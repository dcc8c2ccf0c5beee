/* The model checker: structural rules of the ONNX IR (single assignment,
 * definitions before use, acyclicity, opset imports, initializer types,
 * attribute types against the operator registry). Reports every problem
 * found, not just the first. */
#include "onnxscope/check.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnxscope/ops.h"

static void report(ox_check_report *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void report(ox_check_report *r, const char *fmt, ...)
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
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    r->issues[r->n_issues++].msg = ox_strdup(buf);
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

typedef struct checker {
    const ox_model *m;
    ox_check_report *r;
    bool in_function;
    const ox_function *fn;
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
    const ox_op_schema *s = ox_op_for_node(C->m, n);
    if (!s)
        return;
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

static void check_graph(checker *C, const ox_graph *g, const char *gname)
{
    /* Definitions before use, in list order. */
    for (int i = 0; i < g->n_nodes; i++) {
        const ox_node *n = g->nodes[i];
        if (!n->op_type || !*n->op_type)
            report(C->r, "%s: node %d has no op_type", gname, i);
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
        check_graph(&C, f->body, gname);
    }
    return rep->n_issues ? OX_EMODEL : OX_OK;
}
