/* Inlining calls of model-local functions (FunctionProto).
 *
 * The executor has kernels for operators, not for a model's own functions,
 * and PyTorch 2's dynamo exporter (torch 2.1-2.4) writes every module as a
 * local function called from the main graph: such models failed with "no
 * kernel for pkg.torch::ConvRelu". ox_exec_new runs a clone of them with
 * every call replaced by the function's body (ox_model_inline_functions),
 * the way ONNX Runtime does at load. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnxscope/ir.h"

/* Calls nested deeper than this are taken as recursion (a function that
 * calls itself, directly or not, has no finite inlining). */
#define MAX_INLINE_ROUNDS 64

static const ox_function *find_function(const ox_model *m, const ox_node *n)
{
    for (int i = 0; i < m->n_functions; i++) {
        const ox_function *f = &m->functions[i];
        if (f->name && n->op_type && !strcmp(f->name, n->op_type) &&
            !strcmp(f->domain ? f->domain : "", n->domain ? n->domain : ""))
            return f;
    }
    return NULL;
}

static int64_t fn_opset(const ox_function *f, const char *domain)
{
    for (int i = 0; i < f->n_opsets; i++) {
        const char *d = f->opsets[i].domain ? f->opsets[i].domain : "";
        if (!strcmp(d, "ai.onnx"))
            d = "";
        if (!strcmp(d, domain))
            return f->opsets[i].version;
    }
    return -1;
}

static const ox_attr *find_attr(const ox_attr *a, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (a[i].name && !strcmp(a[i].name, name))
            return &a[i];
    return NULL;
}

/* A body value's counterpart in the caller's graph (created on first use). */
typedef struct vmap {
    ox_value **to;
    bool *set;
} vmap;

static ox_value *mapped(ox_graph *g, const ox_node *call, vmap *vm, const ox_value *v)
{
    if (!v)
        return NULL;
    if (!vm->set[v->slot]) {
        char hint[256];
        snprintf(hint, sizeof hint, "%s/%s", call->name && call->name[0] ? call->name : call->op_type,
                 v->name ? v->name : "v");
        vm->to[v->slot] = ox_graph_new_value(g, hint);
        vm->set[v->slot] = true;
    }
    return vm->to[v->slot];
}

/* Replaces call (in g) by f's body. Body values get fresh names in g; formal
 * inputs and outputs become the call's actual ones (an omitted input stays
 * omitted); attribute references take the call's attribute, else the
 * function's default, else the attribute is left out (as ONNX specifies). */
static ox_status inline_call(ox_graph *g, ox_node *call, const ox_function *f, ox_error *err)
{
    const ox_graph *body = f->body;
    int64_t mine = ox_model_opset(g->model, ""), theirs = fn_opset(f, "");
    if (theirs >= 0 && mine >= 0 && theirs != mine)
        return ox_errorf(err, OX_EUNSUPPORTED,
                         "function %s imports opset %lld of the default domain, the model %lld",
                         f->name, (long long)theirs, (long long)mine);
    int most = 1;
    for (int k = 0; k < body->n_nodes; k++) {
        const ox_node *bn = body->nodes[k];
        most = bn->n_inputs > most ? bn->n_inputs : most;
        most = bn->n_outputs > most ? bn->n_outputs : most;
        for (int a = 0; a < bn->n_attrs; a++)
            /* A subgraph in a body would need its outer-scope names renamed
             * too; not written by the exporters we know of. */
            if (bn->attrs[a].type == OX_ATTR_GRAPH || bn->attrs[a].type == OX_ATTR_GRAPHS)
                return ox_errorf(err, OX_EUNSUPPORTED,
                                 "function %s has a control-flow node (not inlined)", f->name);
    }
    int nv = body->n_values, n_in = call->n_inputs, n_out = call->n_outputs;
    int n_cattrs = call->n_attrs;
    vmap vm = {calloc((size_t)nv + 1, sizeof *vm.to), calloc((size_t)nv + 1, sizeof *vm.set)};
    ox_value **ain = calloc((size_t)n_in + 1, sizeof *ain);
    ox_value **aout = calloc((size_t)n_out + 1, sizeof *aout);
    ox_value **in = calloc((size_t)most, sizeof *in), **out = calloc((size_t)most, sizeof *out);
    /* The call's attributes and name outlive the call node (removed below). */
    ox_attr *cattrs = calloc((size_t)n_cattrs + 1, sizeof *cattrs);
    char *cname = ox_strdup(call->name && call->name[0] ? call->name : call->op_type);
    ox_status st = OX_OK;
    if (!vm.to || !vm.set || !ain || !aout || !in || !out || !cattrs || !cname) {
        st = ox_errorf(err, OX_ENOMEM, "out of memory inlining function %s", f->name);
        n_cattrs = 0;
        goto done;
    }
    for (int i = 0; i < n_cattrs; i++)
        ox_attr_copy(&cattrs[i], &call->attrs[i], g);
    memcpy(ain, call->inputs, (size_t)n_in * sizeof *ain);
    memcpy(aout, call->outputs, (size_t)n_out * sizeof *aout);
    for (int i = 0; i < body->n_inputs; i++) {
        vm.set[body->inputs[i]->slot] = true;
        vm.to[body->inputs[i]->slot] = i < n_in ? ain[i] : NULL;
    }
    ox_node proxy = {.name = cname, .op_type = cname};
    /* Remove the call first: its outputs get their producers from the body. */
    ox_node_remove(call);
    for (int i = 0; i < body->n_outputs && st == OX_OK; i++) {
        ox_value *v = body->outputs[i];
        if (vm.set[v->slot]) {
            /* A formal input passed straight out: an Identity keeps the
             * caller's output produced. */
            ox_value *src = vm.to[v->slot];
            if (i < n_out && aout[i] && !ox_node_new(g, "Identity", "", NULL, 1, &src, 1, &aout[i]))
                st = ox_errorf(err, OX_ENOMEM, "out of memory inlining function %s", f->name);
            continue;
        }
        if (i < n_out && aout[i])
            vm.set[v->slot] = true, vm.to[v->slot] = aout[i];
    }
    for (int k = 0; k < body->n_nodes && st == OX_OK; k++) {
        const ox_node *bn = body->nodes[k];
        for (int i = 0; i < bn->n_inputs; i++)
            in[i] = mapped(g, &proxy, &vm, bn->inputs[i]);
        for (int i = 0; i < bn->n_outputs; i++)
            out[i] = mapped(g, &proxy, &vm, bn->outputs[i]);
        char hint[256];
        snprintf(hint, sizeof hint, "%s/%s", cname,
                 bn->name && bn->name[0] ? bn->name : bn->op_type);
        char *nm = ox_model_unique_node_name(g->model, hint);
        ox_node *nn = nm ? ox_node_new(g, bn->op_type, bn->domain, nm, bn->n_inputs, in,
                                       bn->n_outputs, out) : NULL;
        free(nm);
        if (!nn) {
            st = ox_errorf(err, OX_ENOMEM, "out of memory inlining function %s", f->name);
            break;
        }
        for (int a = 0; a < bn->n_attrs; a++) {
            const ox_attr *at = &bn->attrs[a];
            if (!at->ref_attr_name) {
                ox_node_set_attr(nn, at);
                continue;
            }
            const ox_attr *src = find_attr(cattrs, n_cattrs, at->ref_attr_name);
            if (!src)
                src = find_attr(f->attr_defaults, f->n_attr_defaults, at->ref_attr_name);
            if (!src)
                continue;
            ox_attr tmp = *src;
            tmp.name = at->name;
            tmp.ref_attr_name = NULL;
            ox_node_set_attr(nn, &tmp);
        }
    }
done:
    for (int i = 0; i < n_cattrs; i++)
        ox_attr_free_contents(&cattrs[i]);
    free(cattrs);
    free(cname);
    free(vm.to);
    free(vm.set);
    free(ain);
    free(aout);
    free(in);
    free(out);
    return st;
}

typedef struct walk {
    ox_graph **graphs;
    int n, cap;
    bool oom;
} walk;

static void collect(ox_graph *g, void *ctx)
{
    walk *w = ctx;
    if (w->n == w->cap) {
        int cap = w->cap ? 2 * w->cap : 16;
        ox_graph **p = realloc(w->graphs, (size_t)cap * sizeof *p);
        if (!p) {
            w->oom = true;
            return;
        }
        w->graphs = p, w->cap = cap;
    }
    w->graphs[w->n++] = g;
}

ox_status ox_model_inline_functions(ox_model *m, ox_error *err)
{
    if (!m || !m->graph || m->n_functions == 0)
        return OX_OK;
    for (int round = 0;; round++) {
        walk w = {0};
        ox_graph_visit(m->graph, collect, &w);
        if (w.oom) {
            free(w.graphs);
            return ox_errorf(err, OX_ENOMEM, "out of memory inlining functions");
        }
        int done = 0;
        ox_status st = OX_OK;
        for (int i = 0; i < w.n && st == OX_OK; i++) {
            ox_graph *g = w.graphs[i];
            bool any = false;
            /* Only the nodes there at the start of the round: the appended
             * body nodes wait for the next one, so recursion is counted. */
            int end = g->n_nodes;
            for (int k = 0; k < end && st == OX_OK;) {
                const ox_function *f = find_function(m, g->nodes[k]);
                if (!f || !f->body) {
                    k++;
                    continue;
                }
                if (round >= MAX_INLINE_ROUNDS) {
                    st = ox_errorf(err, OX_EMODEL,
                                   "function %s calls itself (nested more than %d deep)", f->name,
                                   MAX_INLINE_ROUNDS);
                    break;
                }
                /* The call node goes; its body nodes are appended (k now
                 * names the next node). */
                st = inline_call(g, g->nodes[k], f, err);
                done++, any = true, end--;
            }
            if (st == OX_OK && any)
                st = ox_graph_toposort(g, err);
        }
        free(w.graphs);
        if (st == OX_OK)
            st = ox_model_check_oom(m, "inlining functions", err);
        if (st || !done)
            return st;
        ox_graph_relink(m->graph);
    }
}

bool ox_model_calls_functions(const ox_model *m)
{
    if (!m || !m->graph || m->n_functions == 0)
        return false;
    walk w = {0};
    ox_graph_visit(m->graph, collect, &w);
    bool any = false;
    for (int i = 0; i < w.n && !any; i++)
        for (int k = 0; k < w.graphs[i]->n_nodes && !any; k++)
            any = find_function(m, w.graphs[i]->nodes[k]) != NULL;
    free(w.graphs);
    return any;
}
