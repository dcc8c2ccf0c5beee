/* Helpers the passes share: reading constants and static shapes, making
 * initializers, and bypassing a node without renaming a graph output. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/pass_internal.h"

const ox_tensor *ox__pass_const(const ox_value *v)
{
    /* An initializer, not an overridable one (ox_value_overridable: listed
     * as a graph input from IR 4 on). */
    return v && v->init ? ox_value_constant(v) : NULL;
}

void ox__pass_list_init(ox_graph *g, ox_value *v)
{
    if (g && !g->parent && g->model && g->model->ir_version < 4 && !v->is_input)
        ox_graph_add_input(g, v);
}

int ox__pass_const_ints(const ox_value *v, int64_t *out, int cap)
{
    /* Inference's value of an overridable initializer, or of anything
     * computed from one (a Cast or Concat of it feeding a Reshape's shape),
     * is the default, not what a caller feeds: no constant. */
    const ox_tensor *t = ox_value_constant(v);
    if (!t || t->rank > 1 || !ox_dtype_is_int(t->dtype) || ox_dtype_bits(t->dtype) < 8 ||
        t->numel > cap || !ox_tensor_data(t))
        return -1;
    for (int64_t i = 0; i < t->numel; i++)
        out[i] = ox_tensor_get_i64(t, i);
    return (int)t->numel;
}

int ox__pass_static_shape(const ox_value *v, int64_t *dims)
{
    /* A shape inference computed from an overridable initializer's default
     * (a Reshape to a fed shape) is not static: the feed decides it. */
    if (v && v->override_shape_dep)
        return -1;
    if (v && v->init) {
        for (int i = 0; i < v->init->rank; i++)
            dims[i] = v->init->dims[i];
        return v->init->rank;
    }
    if (!v || !ox_type_is_static(v->type) || v->type->rank > OX_MAX_RANK)
        return -1;
    for (int i = 0; i < v->type->rank; i++)
        dims[i] = v->type->dims[i].value;
    return v->type->rank;
}

ox_dtype ox__pass_elem(const ox_value *v)
{
    if (v && v->init)
        return v->init->dtype;
    if (!v || !v->type || v->type->kind != OX_TYPE_TENSOR)
        return OX_DT_UNDEFINED;
    return v->type->elem;
}

bool ox__pass_read_by_subgraph(const ox_value *v)
{
    for (int i = 0; v && i < v->n_uses; i++)
        if (v->uses[i].input < 0)
            return true;
    return false;
}

static bool push_ptr(void ***v, int *n, int *cap, void *p)
{
    if (*n == *cap) {
        int nc = *cap ? *cap * 2 : 64;
        void **t = realloc(*v, (size_t)nc * sizeof *t);
        if (!t)
            return false;
        *v = t;
        *cap = nc;
    }
    (*v)[(*n)++] = p;
    return true;
}

/* Unlinking a reader searches the value's use list, so a value read by
 * more nodes than this keeps the records of its dropped readers until one
 * filtering sweep at the flush. Until then those records count as uses:
 * checks on use counts can only become more cautious. */
#define DEFER_USES 16

void ox__pass_drop(ox_pass_ctx *c, ox_node *n)
{
    if (!n || ox__pass_gone(n))
        return;
    if (!push_ptr((void ***)&c->dropped, &c->n_dropped, &c->cap_dropped, n)) {
        /* Out of memory: n is detached below but stays in the array, so
         * the model is marked like any failed edit (the pass stops, the
         * manager and ox_save refuse it). Freeing n here instead could
         * leave deferred use records (ox__pass_set_input) pointing at it. */
        c->m->oom = true;
    }
    /* Subgraphs first, while n still anchors their outer-scope reads. */
    while (n->n_attrs)
        ox_node_remove_attr(n, n->attrs[n->n_attrs - 1].name);
    for (int i = 0; i < n->n_inputs; i++) {
        ox_value *v = n->inputs[i];
        if (v && v->graph == n->graph && v->n_uses > DEFER_USES &&
            push_ptr((void ***)&c->stale, &c->n_stale, &c->cap_stale, v))
            n->inputs[i] = NULL;   /* its record goes at the flush */
        else
            ox_node_set_input(n, i, NULL);
    }
    for (int i = 0; i < n->n_outputs; i++)
        if (n->outputs[i] && n->outputs[i]->producer == n)
            ox_node_set_output(n, i, NULL);
    n->n_inputs = n->n_outputs = 0;   /* ox__pass_gone from now on */
    c->prune = true;
}

void ox__pass_set_input(ox_pass_ctx *c, ox_node *n, int i, ox_value *v)
{
    ox_value *old = n && i >= 0 && i < n->n_inputs ? n->inputs[i] : NULL;
    if (old && old != v && old->graph == n->graph && old->n_uses > DEFER_USES &&
        push_ptr((void ***)&c->stale, &c->n_stale, &c->cap_stale, old))
        n->inputs[i] = NULL;   /* its record goes at the flush */
    ox_node_set_input(n, i, v);
}

void ox__pass_drop_value(ox_pass_ctx *c, ox_value *v)
{
    (void)v;
    c->prune = true;
}

/* Drops v now: it is unread, no graph input or output. */
static void drop_unread_const(ox_pass_ctx *c, ox_value *v)
{
    ox_node *p = v->producer;
    if (v->init) {
        /* Without its tensor it is garbage for the pruning sweep. */
        ox_graph_set_initializer(v->graph, v, NULL);
        ox__pass_drop_value(c, v);
    } else if (p && p->graph == v->graph && ox_node_is(p, "Constant") && p->n_outputs == 1) {
        ox__pass_drop(c, p);
        ox__pass_drop_value(c, v);
    }
}

void ox__pass_drop_const(ox_pass_ctx *c, ox_value *v)
{
    if (!v || v->is_output || v->is_input)
        return;
    if (v->n_uses > DEFER_USES) {
        /* The count may include records of dropped readers: decide at the
         * flush, once they are filtered. */
        push_ptr((void ***)&c->maybe_dead, &c->n_maybe_dead, &c->cap_maybe_dead, v);
        return;
    }
    if (!v->n_uses)
        drop_unread_const(c, v);
}

void ox__pass_ctx_free(ox_pass_ctx *c)
{
    free(c->dropped);
    free(c->stale);
    free(c->maybe_dead);
    c->dropped = NULL;
    c->stale = NULL;
    c->maybe_dead = NULL;
    c->n_dropped = c->n_stale = c->n_maybe_dead = 0;
    c->cap_dropped = c->cap_stale = c->cap_maybe_dead = 0;
}

static int cmp_ptr(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;
    return (x > y) - (x < y);
}

void ox__pass_flush(ox_pass_ctx *c, ox_graph *g)
{
    /* Stale records first, while the dropped nodes still exist: a record
     * {node, k} of a node input is right only while node->inputs[k] is v
     * (a dropped node has no inputs left, a rewired one reads another
     * value). Each kept record blanks its slot for the rest of the sweep, so
     * that a reader rewired away and back again keeps one record, not two;
     * the slots get v back afterwards. */
    if (c->n_stale > 1)
        qsort(c->stale, (size_t)c->n_stale, sizeof *c->stale, cmp_ptr);
    for (int i = 0; i < c->n_stale; i++) {
        ox_value *v = c->stale[i];
        if (i && v == c->stale[i - 1])
            continue;
        int k = 0;
        for (int u = 0; u < v->n_uses; u++) {
            ox_node *n = v->uses[u].node;
            int in = v->uses[u].input;
            if (in >= 0 && !(in < n->n_inputs && n->inputs[in] == v))
                continue;
            if (in >= 0)
                n->inputs[in] = NULL;
            v->uses[k++] = v->uses[u];
        }
        for (int u = 0; u < k; u++)
            if (v->uses[u].input >= 0)
                v->uses[u].node->inputs[v->uses[u].input] = v;
        v->n_uses = k;
    }
    c->n_stale = 0;
    /* Constants whose count was inexact: decide now, before the node sweep
     * (a dead Constant node joins the dropped list). */
    if (c->n_maybe_dead > 1)
        qsort(c->maybe_dead, (size_t)c->n_maybe_dead, sizeof *c->maybe_dead, cmp_ptr);
    for (int i = 0; i < c->n_maybe_dead; i++) {
        ox_value *v = c->maybe_dead[i];
        if ((i && v == c->maybe_dead[i - 1]) || v->n_uses || v->is_output || v->is_input)
            continue;
        drop_unread_const(c, v);
    }
    c->n_maybe_dead = 0;
    int k = 0;
    for (int i = 0; i < c->n_dropped; i++) {
        ox_node *n = c->dropped[i];
        if (n->graph == g)
            c->dropped[k++] = n;
        else  /* not expected: a pass edits the graph it was given */
            ox_graph_remove_nodes(n->graph, &n, 1);
    }
    if (k)
        ox_graph_remove_nodes(g, c->dropped, k);
    if (c->prune)
        ox_graph_prune_values(g);
    c->n_dropped = 0;
    c->prune = false;
}

bool ox__pass_bypass(ox_pass_ctx *c, ox_node *n, ox_value *in, ox_value *out)
{
    if (!n || !in || !out || in == out || out->producer != n)
        return false;
    ox_graph *g = n->graph;
    for (int k = 0; k < n->n_outputs; k++) {
        ox_value *o = n->outputs[k];
        if (o && o != out && (o->n_uses || o->is_output))
            return false;
    }
    if (!out->is_output) {
        ox_value_replace_uses(out, in);
        ox__pass_drop(c, n);
        ox__pass_drop_value(c, out);
        return true;
    }
    /* out names a graph output: keep the name by making in's producer
     * produce out directly. */
    if (in->graph != g || !in->producer || in->is_output || in->is_input || in->init)
        return false;
    for (int i = 0; i < in->n_uses; i++)
        if (in->uses[i].node != n)
            return false;
    ox_node *p = in->producer;
    int k = in->producer_output;
    ox__pass_drop(c, n);
    ox_node_set_output(p, k, out);
    if (!out->type && in->type)
        out->type = ox_type_clone(in->type);
    ox_infer_forget_value(out);
    ox__pass_drop_value(c, in);
    return true;
}

ox_value *ox__pass_new_init(ox_graph *g, const char *hint, ox_tensor *t)
{
    if (!t)
        return NULL;
    ox_value *v = ox_graph_new_value(g, hint && *hint ? hint : "const");
    if (!v) {
        ox_tensor_free(t);
        return NULL;
    }
    ox_tensor_set_name(t, v->name);
    ox_type *ty = ox_type_new_tensor(t->dtype, t->rank, t->dims);
    if (ox_graph_set_initializer(g, v, t) != OX_OK) {
        ox_type_free(ty);
        return NULL;
    }
    ox_type_free(v->type);
    v->type = ty;
    ox__pass_list_init(g, v);
    return v;
}

ox_tensor *ox__pass_i64_tensor(int n, const int64_t *v)
{
    int64_t d = n;
    ox_tensor *t = ox_tensor_new(OX_DT_INT64, 1, &d);
    for (int i = 0; t && i < n; i++)
        ox_tensor_set_i64(t, i, v[i]);
    return t;
}

void ox__pass_note(ox_pass_ctx *c, const char *fmt, ...)
{
    if (c->note)
        return;
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    c->note = ox_strdup(buf);
}
