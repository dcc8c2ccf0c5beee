/* Node-level comparison of two models (modeldiff.h). Names are the
 * strongest identity an exporter or optimizer keeps, so they are matched
 * first; what is left (unnamed nodes, renamed ones) is paired by position
 * among the unmatched nodes of the same op type, which pairs the k-th
 * leftover Conv of A with the k-th leftover Conv of B. */
#include "onnxscope/modeldiff.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strmap.h"
#include "onnxscope/tensor.h"

static bool str_eq(const char *x, const char *y)
{
    return strcmp(x ? x : "", y ? y : "") == 0;
}

static bool bytes_eq(const ox_bytes *x, const ox_bytes *y)
{
    return x->len == y->len && (!x->len || memcmp(x->data, y->data, x->len) == 0);
}

/* Bodies are compared by their node count and op sequence: a deeper
 * comparison would need the matching recursively, which the report does
 * not show. */
static bool graph_eq(const ox_graph *x, const ox_graph *y)
{
    if (!x || !y)
        return x == y;
    if (x->n_nodes != y->n_nodes)
        return false;
    for (int i = 0; i < x->n_nodes; i++)
        if (!str_eq(x->nodes[i]->op_type, y->nodes[i]->op_type))
            return false;
    return true;
}

static bool attr_eq(const ox_attr *x, const ox_attr *y)
{
    if (x->type != y->type || !str_eq(x->ref_attr_name, y->ref_attr_name))
        return false;
    switch (x->type) {
    case OX_ATTR_FLOAT: return memcmp(&x->f, &y->f, sizeof x->f) == 0;
    case OX_ATTR_INT: return x->i == y->i;
    case OX_ATTR_STRING: return bytes_eq(&x->s, &y->s);
    case OX_ATTR_TENSOR: return ox_tensor_equal(x->t, y->t);
    case OX_ATTR_GRAPH: return graph_eq(x->g, y->g);
    case OX_ATTR_TYPE_PROTO: return !x->tp || !y->tp ? x->tp == y->tp : ox_type_equal(x->tp, y->tp);
    default: break;
    }
    if (x->n != y->n)
        return false;
    for (int k = 0; k < x->n; k++) {
        bool e = true;
        switch (x->type) {
        case OX_ATTR_FLOATS: e = memcmp(&x->floats[k], &y->floats[k], sizeof *x->floats) == 0; break;
        case OX_ATTR_INTS: e = x->ints[k] == y->ints[k]; break;
        case OX_ATTR_STRINGS: e = bytes_eq(&x->strings[k], &y->strings[k]); break;
        case OX_ATTR_TENSORS: e = ox_tensor_equal(x->tensors[k], y->tensors[k]); break;
        case OX_ATTR_GRAPHS: e = graph_eq(x->graphs[k], y->graphs[k]); break;
        default: break;   /* sparse and type lists: their count only */
        }
        if (!e)
            return false;
    }
    return true;
}

static const ox_attr *find_attr(const ox_node *n, const char *name)
{
    for (int i = 0; i < n->n_attrs; i++)
        if (str_eq(n->attrs[i].name, name))
            return &n->attrs[i];
    return NULL;
}

static bool values_differ(ox_value *const *x, int nx, ox_value *const *y, int ny)
{
    if (nx != ny)
        return true;
    for (int i = 0; i < nx; i++) {
        if (!x[i] || !y[i]) {
            if (x[i] != y[i])
                return true;
        } else if (!str_eq(x[i]->name, y[i]->name)) {
            return true;
        }
    }
    return false;
}

static unsigned compare_nodes(const ox_node *a, const ox_node *b)
{
    unsigned w = 0;
    if (!str_eq(a->op_type, b->op_type) || !str_eq(a->domain, b->domain))
        w |= OX_NDIFF_OP;
    if (!str_eq(a->name, b->name))
        w |= OX_NDIFF_NAME;
    if (values_differ(a->inputs, a->n_inputs, b->inputs, b->n_inputs))
        w |= OX_NDIFF_INPUTS;
    if (values_differ(a->outputs, a->n_outputs, b->outputs, b->n_outputs))
        w |= OX_NDIFF_OUTPUTS;
    if (a->n_attrs != b->n_attrs) {
        w |= OX_NDIFF_ATTRS;
    } else {
        for (int i = 0; i < a->n_attrs; i++) {
            const ox_attr *o = find_attr(b, a->attrs[i].name);
            if (!o || !attr_eq(&a->attrs[i], o)) {
                w |= OX_NDIFF_ATTRS;
                break;
            }
        }
    }
    /* Same-named weights with other contents (a folded BatchNormalization
     * keeps the Conv's weight name in some optimizers). */
    int n = a->n_inputs < b->n_inputs ? a->n_inputs : b->n_inputs;
    for (int i = 0; i < n; i++) {
        const ox_value *x = a->inputs[i], *y = b->inputs[i];
        if (x && y && x->init && y->init && str_eq(x->name, y->name) &&
            !ox_tensor_equal(x->init, y->init)) {
            w |= OX_NDIFF_WEIGHTS;
            break;
        }
    }
    return w;
}

static ox_status oom(ox_error *err)
{
    return ox_errorf(err, OX_ENOMEM, "model diff: out of memory");
}

ox_status ox_model_diff_compute(const ox_model *ma, const ox_model *mb, ox_model_diff *d,
                                ox_error *err)
{
    memset(d, 0, sizeof *d);
    const ox_graph *ga = ma->graph, *gb = mb->graph;
    int na = ga->n_nodes, nb = gb->n_nodes;
    d->n_a = na;
    d->n_b = nb;
    d->kind_a = calloc((size_t)na + 1, 1);
    d->kind_b = calloc((size_t)nb + 1, 1);
    d->partner_a = malloc(((size_t)na + 1) * sizeof *d->partner_a);
    d->partner_b = malloc(((size_t)nb + 1) * sizeof *d->partner_b);
    int *next = malloc(((size_t)nb + 1) * sizeof *next);
    int *heads = malloc(((size_t)nb + 1) * 2 * sizeof *heads);
    struct ox_strmap *names = ox_strmap_new_borrowed();
    struct ox_strmap *ops = ox_strmap_new_borrowed();
    ox_status st = OX_OK;
    if (!d->kind_a || !d->kind_b || !d->partner_a || !d->partner_b || !next || !heads ||
        !names || !ops) {
        st = oom(err);
        goto out;
    }
    for (int i = 0; i < na; i++)
        d->partner_a[i] = -1;
    for (int j = 0; j < nb; j++)
        d->partner_b[j] = -1;
    /* 1. By name: the first node of B with each name (a repeated name is
     * left to the positional pass). */
    for (int j = 0; j < nb; j++) {
        const char *nm = gb->nodes[j]->name;
        if (nm && nm[0] && !ox_strmap_has(names, nm) &&
            !ox_strmap_put(names, nm, (void *)(intptr_t)(j + 1))) {
            st = oom(err);
            goto out;
        }
    }
    for (int i = 0; i < na; i++) {
        const char *nm = ga->nodes[i]->name;
        if (!nm || !nm[0])
            continue;
        int j = (int)(intptr_t)ox_strmap_get(names, nm) - 1;
        if (j >= 0 && d->partner_b[j] < 0) {
            d->partner_a[i] = j;
            d->partner_b[j] = i;
            d->by_name++;
        }
    }
    /* 2. The rest by position among the unmatched nodes of each op type:
     * per op a queue (head, tail) of B's leftovers in order. */
    int n_ops = 0;
    for (int j = 0; j < nb; j++) {
        next[j] = -1;
        if (d->partner_b[j] >= 0)
            continue;
        const char *op = gb->nodes[j]->op_type ? gb->nodes[j]->op_type : "";
        int k = (int)(intptr_t)ox_strmap_get(ops, op) - 1;
        if (k < 0) {
            k = n_ops++;
            if (!ox_strmap_put(ops, op, (void *)(intptr_t)(k + 1))) {
                st = oom(err);
                goto out;
            }
            heads[2 * k] = j;
        } else {
            next[heads[2 * k + 1]] = j;
        }
        heads[2 * k + 1] = j;
    }
    for (int i = 0; i < na; i++) {
        if (d->partner_a[i] >= 0)
            continue;
        const char *op = ga->nodes[i]->op_type ? ga->nodes[i]->op_type : "";
        int k = (int)(intptr_t)ox_strmap_get(ops, op) - 1;
        if (k < 0 || heads[2 * k] < 0)
            continue;
        int j = heads[2 * k];
        heads[2 * k] = next[j];
        d->partner_a[i] = j;
        d->partner_b[j] = i;
        d->by_position++;
    }
    /* 3. Classify, and list the differences. */
    d->items = calloc((size_t)na + (size_t)nb + 1, sizeof *d->items);
    if (!d->items) {
        st = oom(err);
        goto out;
    }
    for (int i = 0; i < na; i++)
        if (d->partner_a[i] < 0) {
            d->kind_a[i] = OX_NDIFF_REMOVED;
            d->items[d->n_items++] = (ox_node_diff){OX_NDIFF_REMOVED, ga->nodes[i], NULL, 0};
            d->removed++;
        }
    for (int j = 0; j < nb; j++) {
        const ox_node *b = gb->nodes[j];
        if (d->partner_b[j] < 0) {
            d->kind_b[j] = OX_NDIFF_ADDED;
            d->items[d->n_items++] = (ox_node_diff){OX_NDIFF_ADDED, NULL, b, 0};
            d->added++;
        }
    }
    for (int j = 0; j < nb; j++) {
        if (d->partner_b[j] < 0)
            continue;
        const ox_node *a = ga->nodes[d->partner_b[j]], *b = gb->nodes[j];
        unsigned w = compare_nodes(a, b);
        /* A node paired by position under another name is only changed
         * when something else differs too (renaming alone is not shown). */
        if (!(w & ~(unsigned)OX_NDIFF_NAME)) {
            d->same++;
            continue;
        }
        d->kind_a[a->index] = d->kind_b[j] = OX_NDIFF_CHANGED;
        d->items[d->n_items++] = (ox_node_diff){OX_NDIFF_CHANGED, a, b, w};
        d->changed++;
    }
out:
    free(next);
    free(heads);
    ox_strmap_free(names);
    ox_strmap_free(ops);
    return st;
}

void ox_model_diff_free(ox_model_diff *d)
{
    if (!d)
        return;
    free(d->items);
    free(d->kind_a);
    free(d->kind_b);
    free(d->partner_a);
    free(d->partner_b);
    memset(d, 0, sizeof *d);
}

const char *ox_node_diff_what(unsigned what, char *buf, size_t len)
{
    static const struct { unsigned bit; const char *name; } names[] = {
        {OX_NDIFF_OP, "op"},           {OX_NDIFF_INPUTS, "inputs"}, {OX_NDIFF_OUTPUTS, "outputs"},
        {OX_NDIFF_ATTRS, "attributes"}, {OX_NDIFF_WEIGHTS, "weights"}, {OX_NDIFF_NAME, "name"},
    };
    size_t o = 0;
    if (len)
        buf[0] = 0;
    for (size_t k = 0; k < sizeof names / sizeof *names; k++)
        if (what & names[k].bit) {
            int r = snprintf(buf + o, o < len ? len - o : 0, "%s%s", o ? ", " : "", names[k].name);
            if (r > 0)
                o += (size_t)r;
        }
    return buf;
}
