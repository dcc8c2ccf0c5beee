/* Elimination passes: nodes that compute their input unchanged (Identity,
 * inference Dropout, no-op Cast/Transpose/Reshape/Pad/Slice/Expand/
 * Flatten/Split/Concat), monotone ops feeding ArgMax/ArgMin, and If with a
 * constant condition. Static shapes come from the manager's inference. */
#include <stdlib.h>
#include <string.h>

#include "passes/pass_internal.h"

static bool same_static_shape(const ox_value *a, const ox_value *b)
{
    int64_t da[OX_MAX_RANK], db[OX_MAX_RANK];
    int ra = ox__pass_static_shape(a, da), rb = ox__pass_static_shape(b, db);
    if (ra < 0 || ra != rb)
        return false;
    for (int i = 0; i < ra; i++)
        if (da[i] != db[i])
            return false;
    return ox__pass_elem(a) != OX_DT_UNDEFINED && ox__pass_elem(a) == ox__pass_elem(b);
}

/* Rewrites every node of g for which fn says "output k equals input 0". */
typedef bool (*noop_fn)(const ox_pass_ctx *c, const ox_node *n);

static ox_status bypass_all(ox_pass_ctx *c, ox_graph *g, noop_fn fn)
{
    for (int i = 0; i < g->n_nodes && ox__pass_may(c); i++) {
        ox_node *n = g->nodes[i];
        if (ox__pass_gone(n))
            continue;
        if (n->n_inputs < 1 || !n->inputs[0] || n->n_outputs < 1 || !n->outputs[0] || !fn(c, n))
            continue;
        /* Readers of n come later in the node order and now read n's
         * input: a chain goes in one sweep. */
        if (ox__pass_bypass(c, n, n->inputs[0], n->outputs[0]))
            ox__pass_did(c);
    }
    return OX_OK;
}

static bool is_identity(const ox_pass_ctx *c, const ox_node *n)
{
    (void)c;
    /* Identity of a sequence/optional is fine too: it is still a copy. */
    return ox_node_is(n, "Identity") && n->n_outputs == 1;
}

static ox_status pass_identity(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    (void)err;
    return bypass_all(c, g, is_identity);
}

static bool is_inference_dropout(const ox_pass_ctx *c, const ox_node *n)
{
    if (!ox_node_is(n, "Dropout"))
        return false;
    /* opset < 7 had is_test; 0 there means training. */
    if (ox_model_opset(c->m, "") < 7 && ox_node_attr_i(n, "is_test", 0) == 0)
        return false;
    if (n->n_inputs > 2 && n->inputs[2]) {
        int64_t v[1];
        const ox_tensor *t = ox__pass_const(n->inputs[2]);
        if (!t || t->numel != 1 || ox_tensor_get_i64(t, 0) != 0)
            return false;
        (void)v;
    }
    /* The mask output must be unused (it would be all ones). */
    return !(n->n_outputs > 1 && n->outputs[1] &&
             (n->outputs[1]->n_uses || n->outputs[1]->is_output));
}

static ox_status pass_dropout(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    (void)err;
    return bypass_all(c, g, is_inference_dropout);
}

/* ---- no-op shape/type ops ---------------------------------------------------- */

static bool all_value(const int64_t *v, int n, int64_t x)
{
    for (int i = 0; i < n; i++)
        if (v[i] != x)
            return false;
    return true;
}

static bool is_noop(const ox_pass_ctx *c, const ox_node *n)
{
    (void)c;
    if (!ox_node_is_default_domain(n) || n->n_outputs < 1)
        return false;
    const ox_value *x = n->inputs[0], *y = n->outputs[0];
    const char *op = n->op_type;
    int64_t buf[OX_MAX_RANK * 2 + 2];
    if (!strcmp(op, "Cast")) {
        ox_dtype to = (ox_dtype)ox_node_attr_i(n, "to", 0);
        return to != OX_DT_UNDEFINED && ox__pass_elem(x) == to;
    }
    if (!strcmp(op, "Transpose")) {
        const int64_t *perm;
        int np = ox_node_attr_ints(n, "perm", &perm);
        int64_t d[OX_MAX_RANK];
        int r = ox__pass_static_shape(x, d);
        if (np < 0) /* default perm reverses: a no-op for rank <= 1 */
            return r >= 0 && r <= 1;
        for (int i = 0; i < np; i++)
            if (perm[i] != i)
                return false;
        return true;
    }
    if (!strcmp(op, "Concat"))
        return n->n_inputs == 1 && n->n_outputs == 1;
    if (!strcmp(op, "Split"))
        return n->n_outputs == 1 && same_static_shape(x, y);
    if (!strcmp(op, "Pad")) {
        const int64_t *pads;
        int np = ox_node_attr_ints(n, "pads", &pads);
        if (np >= 0)
            return all_value(pads, np, 0);
        if (n->n_inputs < 2 || !n->inputs[1])
            return false;
        int k = ox__pass_const_ints(n->inputs[1], buf, OX_MAX_RANK * 2);
        return k >= 0 && all_value(buf, k, 0) && ox__pass_const(n->inputs[1]);
    }
    if (!strcmp(op, "Slice")) {
        if (!same_static_shape(x, y))
            return false;
        /* Same shape and unit (or absent) steps: the identity slice. */
        if (n->n_inputs > 4 && n->inputs[4]) {
            int k = ox__pass_const_ints(n->inputs[4], buf, OX_MAX_RANK * 2);
            return k >= 0 && all_value(buf, k, 1);
        }
        return true;
    }
    if (!strcmp(op, "Reshape") || !strcmp(op, "Expand") || !strcmp(op, "Flatten") ||
        !strcmp(op, "Squeeze") || !strcmp(op, "Unsqueeze") || !strcmp(op, "Tile"))
        return n->n_outputs == 1 && same_static_shape(x, y);
    return false;
}

static ox_status pass_noop(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    (void)err;
    return bypass_all(c, g, is_noop);
}

/* ---- monotone ops before ArgMax / ArgMin ------------------------------------- */

static ox_status pass_argmax_monotone(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    (void)err;
    static const char *strict[] = {"Exp", "Log", "Sigmoid", "Tanh", "Sqrt", NULL};
    for (int i = 0; i < g->n_nodes && ox__pass_may(c); i++) {
        ox_node *a = g->nodes[i];
        if (ox__pass_gone(a))
            continue;
        if (!(ox_node_is(a, "ArgMax") || ox_node_is(a, "ArgMin")) || a->n_inputs < 1 ||
            !a->inputs[0])
            continue;
        ox_value *v = a->inputs[0];
        ox_node *p = v->producer;
        if (!p || p->graph != g || v->is_output || v->n_uses != 1 || p->n_inputs < 1 ||
            !p->inputs[0] || p->n_outputs != 1)
            continue;
        bool ok = false;
        for (int k = 0; strict[k]; k++)
            if (ox_node_is(p, strict[k]))
                ok = true;
        if (ox_node_is(p, "Softmax") || ox_node_is(p, "LogSoftmax")) {
            /* Monotone along its own axis only (opset >= 13 semantics). */
            int64_t d[OX_MAX_RANK];
            int r = ox__pass_static_shape(p->inputs[0], d);
            int64_t sa = ox_node_attr_i(p, "axis", -1), aa = ox_node_attr_i(a, "axis", 0);
            if (r > 0 && ox_model_opset(c->m, "") >= 13) {
                if (sa < 0)
                    sa += r;
                if (aa < 0)
                    aa += r;
                ok = sa == aa;
            }
        }
        if (!ok)
            continue;
        ox__pass_set_input(c, a, 0, p->inputs[0]);
        ox__pass_drop(c, p);
        ox__pass_drop_value(c, v);
        ox__pass_did(c);
        i--; /* a again: its new producer may be monotone too */
    }
    return OX_OK;
}


/* ---- If with a constant condition ---------------------------------------- */

static bool has_subgraphs(const ox_graph *b)
{
    for (int i = 0; i < b->n_nodes; i++)
        for (int a = 0; a < b->nodes[i]->n_attrs; a++)
            if (b->nodes[i]->attrs[a].type == OX_ATTR_GRAPH ||
                b->nodes[i]->attrs[a].type == OX_ATTR_GRAPHS)
                return true;
    return false;
}

/* The copy in g of a value of branch b (recorded in v->user), or v itself
 * when it comes from an outer scope. */
static ox_value *mapped(const ox_graph *b, ox_value *v)
{
    return v && v->graph == b ? v->user : v;
}

/* Moves copies of branch b's initializers and nodes into g, then makes the
 * If node's outputs come from them. Returns false before any edit when the
 * branch is not simple enough (nested subgraphs, inputs, arity). */
static bool inline_branch(ox_pass_ctx *c, ox_graph *g, ox_node *n, ox_graph *b)
{
    if (b->n_inputs || b->n_outputs != n->n_outputs || has_subgraphs(b) || b->n_sparse)
        return false;
    for (int i = 0; i < b->n_values; i++)
        b->values[i]->user = NULL;
    for (int i = 0; i < b->n_values; i++) {
        ox_value *v = b->values[i];
        if (!v->init && !v->producer)
            continue;
        ox_value *nv = v->init ? ox__pass_new_init(g, v->name, ox_tensor_share(v->init))
                               : ox_graph_new_value(g, v->name);
        if (!nv)
            return false; /* only new, unused values exist so far */
        if (!v->init && v->type)
            nv->type = ox_type_clone(v->type);
        v->user = nv;
    }
    for (int i = 0; i < b->n_nodes; i++) {
        ox_node *bn = b->nodes[i];
        ox_value *ins[64], *outs[64];
        if (bn->n_inputs > 64 || bn->n_outputs > 64)
            return false;
        for (int k = 0; k < bn->n_inputs; k++)
            ins[k] = mapped(b, bn->inputs[k]);
        for (int k = 0; k < bn->n_outputs; k++)
            outs[k] = mapped(b, bn->outputs[k]);
        char *name = ox_model_unique_node_name(c->m, bn->name && *bn->name ? bn->name
                                                                         : bn->op_type);
        ox_node *nn = ox_node_new(g, bn->op_type, bn->domain, name, bn->n_inputs, ins,
                                  bn->n_outputs, outs);
        free(name);
        if (!nn)
            return false;
        for (int a = 0; a < bn->n_attrs; a++)
            ox_node_set_attr(nn, &bn->attrs[a]);
    }
    ox_value *src[64], *dst[64];
    int no = n->n_outputs;
    if (no > 64)
        return false;
    for (int k = 0; k < no; k++) {
        src[k] = mapped(b, b->outputs[k]);
        dst[k] = n->outputs[k];
    }
    ox__pass_drop(c, n); /* frees b */
    for (int k = 0; k < no; k++) {
        ox_value *s = src[k], *o = dst[k];
        if (!o)
            continue;
        bool reused = false;
        for (int j = 0; j < no; j++)
            reused |= j != k && src[j] == s;
        if (s && s->graph == g && s->producer && !s->n_uses && !s->is_output && !reused) {
            /* The copied producer makes the If output directly. */
            ox_node_set_output(s->producer, s->producer_output, o);
            ox__pass_drop_value(c, s);
        } else if (s) {
            char *name = ox_model_unique_node_name(c->m, "Identity");
            ox_node_new(g, "Identity", "", name, 1, &s, 1, &o);
            free(name);
        }
    }
    return true;
}

static ox_status pass_if_const(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    (void)err;
    for (int i = 0; i < g->n_nodes && ox__pass_may(c); i++) {
        ox_node *n = g->nodes[i];
        if (ox__pass_gone(n))
            continue;
        if (!ox_node_is(n, "If") || n->n_inputs < 1 || !n->inputs[0])
            continue;
        /* Not a condition computed from an overridable initializer. */
        const ox_tensor *t = ox_value_constant(n->inputs[0]);
        if (!t || t->numel != 1 || !ox_tensor_data(t) || t->dtype == OX_DT_STRING)
            continue;
        ox_attr *a = ox_node_attr(n, ox_tensor_get_f64(t, 0) != 0 ? "then_branch"
                                                                    : "else_branch");
        if (!a || a->type != OX_ATTR_GRAPH || !a->g)
            continue;
        /* The copied nodes go to the end of g, where this loop meets them
         * (branches with subgraphs are not inlined: no If among them). */
        if (inline_branch(c, g, n, a->g))
            ox__pass_did(c);
    }
    return OX_OK;
}

const ox_pass ox__passes_elim[] = {
    {"eliminate_identity", "remove Identity nodes", OX_PASS_ELIMINATION, OX_TARGET_ONNX,
     OX_LEVEL_BASIC, true, pass_identity},
    {"eliminate_dropout", "remove Dropout in inference mode", OX_PASS_ELIMINATION,
     OX_TARGET_ONNX, OX_LEVEL_BASIC, true, pass_dropout},
    {"eliminate_noop",
     "remove no-op Cast/Transpose/Reshape/Pad/Slice/Expand/Flatten/Split/Concat/Squeeze",
     OX_PASS_ELIMINATION, OX_TARGET_ONNX, OX_LEVEL_BASIC, true, pass_noop},
    {"eliminate_monotone_argmax", "drop strictly monotone ops feeding ArgMax/ArgMin",
     OX_PASS_ELIMINATION, OX_TARGET_ONNX, OX_LEVEL_BASIC, true, pass_argmax_monotone},
    {"inline_constant_if", "replace If with a constant condition by the chosen branch",
     OX_PASS_ELIMINATION, OX_TARGET_ONNX, OX_LEVEL_BASIC, true, pass_if_const},
    {0},
};
