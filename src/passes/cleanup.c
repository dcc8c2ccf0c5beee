/* Cleanup passes: dead code elimination, common subexpression elimination
 * (commutative-aware), deduplication of identical initializers, removal of
 * unused initializers, and unique node names. */
#include <stdlib.h>
#include <string.h>

#include "core/strmap.h"
#include "passes/pass_internal.h"

/* ---- dead code ------------------------------------------------------------- */

static ox_status pass_dce(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    (void)err;
    ox_node **dead = malloc(((size_t)g->n_nodes + 1) * sizeof *dead);
    if (!dead)
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    int nd = 0;
    for (int i = 0; i < g->n_nodes; i++)
        g->nodes[i]->mark = 0;
    /* Reverse topological order: every consumer is decided before its
     * producer. A node without outputs is kept (nothing to judge by). */
    for (int i = g->n_nodes - 1; i >= 0; i--) {
        ox_node *n = g->nodes[i];
        bool live = n->n_outputs == 0;
        for (int k = 0; k < n->n_outputs && !live; k++) {
            ox_value *o = n->outputs[k];
            if (!o)
                continue;
            if (o->is_output)
                live = true;
            for (int u = 0; u < o->n_uses && !live; u++)
                if (!o->uses[u].node || o->uses[u].node->graph != g || o->uses[u].node->mark)
                    live = true;
        }
        n->mark = live;
        if (!live)
            dead[nd++] = n;
    }
    /* With a budget, remove the dead node nearest the outputs only. */
    if (c->budget > 0 && nd > c->budget)
        nd = c->budget;
    /* Dropped, not removed: a value read by many dead nodes loses their
     * records in one sweep at the flush. */
    for (int k = 0; k < nd; k++) {
        ox__pass_drop(c, dead[k]);
        ox__pass_did(c);
    }
    free(dead);
    return OX_OK;
}

/* ---- unused initializers ---------------------------------------------------- */

static ox_status pass_unused_inits(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    (void)err;
    for (int i = 0; i < g->n_values && ox__pass_may(c); i++) {
        ox_value *v = g->values[i];
        if (!v->init || v->n_uses || v->is_output || v->is_input || v->producer)
            continue;
        /* Without its tensor it is garbage for the one pruning sweep at
         * the flush (removing values one by one is O(values) each). */
        ox_graph_set_initializer(g, v, NULL);
        ox__pass_drop_value(c, v);
        ox__pass_did(c);
    }
    return OX_OK;
}

/* ---- identical initializers ------------------------------------------------- */

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* A hash over shape, type and a sample of the bytes: reading every byte of
 * a 400 MB model would cost more than the whole pipeline may take, and
 * candidates are compared in full anyway. */
static uint64_t tensor_hash(const ox_tensor *t)
{
    uint64_t h = 0xcbf29ce484222325ull;
    h = fnv(h, &t->dtype, sizeof t->dtype);
    h = fnv(h, &t->rank, sizeof t->rank);
    h = fnv(h, t->dims, (size_t)t->rank * sizeof *t->dims);
    h = fnv(h, &t->nbytes, sizeof t->nbytes);
    const unsigned char *d = ox_tensor_data(t);
    if (!d || !t->nbytes)
        return h;
    if (t->nbytes <= 256)
        return fnv(h, d, t->nbytes);
    /* 16 samples: each touches (and maps) a page of the file. */
    for (int k = 0; k < 16; k++) {
        size_t off = (t->nbytes - 8) / 15 * (size_t)k;
        h = fnv(h, d + off, 8);
    }
    return h;
}

typedef struct hv {
    uint64_t h;
    ox_value *v;
} hv;

static int cmp_hv(const void *a, const void *b)
{
    const hv *x = a, *y = b;
    if (x->h != y->h)
        return x->h < y->h ? -1 : 1;
    return (x->v->slot > y->v->slot) - (x->v->slot < y->v->slot);
}

static ox_status pass_dedup_inits(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    hv *a = malloc(((size_t)g->n_values + 1) * sizeof *a);
    if (!a)
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    int n = 0;
    for (int i = 0; i < g->n_values; i++) {
        ox_value *v = g->values[i];
        if (v->init && !v->is_input && !v->is_output && v->n_uses &&
            v->init->dtype != OX_DT_STRING && !v->init->external)
            a[n++] = (hv){tensor_hash(v->init), v};
    }
    qsort(a, (size_t)n, sizeof *a, cmp_hv);
    ox_value **gone = malloc(((size_t)n + 1) * sizeof *gone);
    int ng = 0;
    for (int i = 0; gone && i < n && ox__pass_may(c);) {
        int j = i + 1;
        while (j < n && a[j].h == a[i].h)
            j++;
        for (int k = i + 1; k < j && ox__pass_may(c); k++) {
            if (!a[k].v)
                continue;
            /* Compare with every earlier survivor of the bucket. */
            for (int q = i; q < k; q++)
                if (a[q].v && ox_tensor_equal(a[q].v->init, a[k].v->init)) {
                    ox_value_replace_uses(a[k].v, a[q].v);
                    gone[ng++] = a[k].v;
                    a[k].v = NULL;
                    ox__pass_did(c);
                    break;
                }
        }
        i = j;
    }
    for (int k = 0; k < ng; k++) {
        ox_graph_set_initializer(g, gone[k], NULL);  /* pruned at the flush */
        ox__pass_drop_value(c, gone[k]);
    }
    free(gone);
    free(a);
    return OX_OK;
}

/* ---- common subexpressions ----------------------------------------------------- */

static bool commutative(const ox_node *n)
{
    static const char *ops[] = {"Add", "Mul", "Max", "Min", "Sum", "Mean", "And", "Or", "Xor",
                                "Equal", NULL};
    if (!ox_node_is_default_domain(n))
        return false;
    for (int i = 0; ops[i]; i++)
        if (!strcmp(n->op_type, ops[i]))
            return true;
    return false;
}

static bool attr_equal(const ox_attr *a, const ox_attr *b)
{
    if (strcmp(a->name, b->name) || a->type != b->type)
        return false;
    if (a->ref_attr_name || b->ref_attr_name)
        return false;
    switch (a->type) {
    case OX_ATTR_INT: return a->i == b->i;
    case OX_ATTR_FLOAT: return memcmp(&a->f, &b->f, sizeof a->f) == 0;
    case OX_ATTR_STRING:
        return a->s.len == b->s.len && (!a->s.len || !memcmp(a->s.data, b->s.data, a->s.len));
    case OX_ATTR_INTS:
        return a->n == b->n && (!a->n || !memcmp(a->ints, b->ints, (size_t)a->n * 8));
    case OX_ATTR_FLOATS:
        return a->n == b->n && (!a->n || !memcmp(a->floats, b->floats, (size_t)a->n * 4));
    case OX_ATTR_STRINGS:
        if (a->n != b->n)
            return false;
        for (int i = 0; i < a->n; i++)
            if (a->strings[i].len != b->strings[i].len ||
                (a->strings[i].len &&
                 memcmp(a->strings[i].data, b->strings[i].data, a->strings[i].len)))
                return false;
        return true;
    case OX_ATTR_TENSOR: return a->t && b->t && ox_tensor_equal(a->t, b->t);
    default: return false;
    }
}

static const ox_attr *find_attr(const ox_node *n, const char *name)
{
    for (int i = 0; i < n->n_attrs; i++)
        if (!strcmp(n->attrs[i].name, name))
            return &n->attrs[i];
    return NULL;
}

static bool same_inputs(const ox_node *a, const ox_node *b)
{
    if (a->n_inputs != b->n_inputs)
        return false;
    if (!commutative(a)) {
        for (int i = 0; i < a->n_inputs; i++)
            if (a->inputs[i] != b->inputs[i])
                return false;
        return true;
    }
    /* Multiset equality (inputs are few). */
    bool used[64] = {0};
    if (a->n_inputs > 64)
        return false;
    for (int i = 0; i < a->n_inputs; i++) {
        bool f = false;
        for (int j = 0; j < b->n_inputs && !f; j++)
            if (!used[j] && b->inputs[j] == a->inputs[i])
                used[j] = f = true;
        if (!f)
            return false;
    }
    return true;
}

static bool node_equal(const ox_node *a, const ox_node *b)
{
    if (strcmp(a->op_type, b->op_type) || strcmp(a->domain ? a->domain : "",
                                                 b->domain ? b->domain : "") ||
        a->n_outputs != b->n_outputs || a->n_attrs != b->n_attrs || !same_inputs(a, b))
        return false;
    for (int i = 0; i < a->n_attrs; i++) {
        const ox_attr *o = find_attr(b, a->attrs[i].name);
        if (!o || !attr_equal(&a->attrs[i], o))
            return false;
    }
    return true;
}

static uint64_t node_hash(const ox_node *n)
{
    uint64_t h = fnv(0xcbf29ce484222325ull, n->op_type, strlen(n->op_type));
    uint64_t acc = 0;
    for (int i = 0; i < n->n_inputs; i++) {
        uint64_t p = (uint64_t)(uintptr_t)n->inputs[i] * 0x9e3779b97f4a7c15ull;
        /* Order-free sum for commutative ops. */
        acc = commutative(n) ? acc + p : (acc ^ p) * 0x100000001b3ull;
    }
    h ^= acc;
    return fnv(h, &n->n_attrs, sizeof n->n_attrs);
}

static bool cse_candidate(const ox_node *n)
{
    if (ox_node_is_random(n) || n->n_outputs < 1 || !n->op_type)
        return false;
    for (int a = 0; a < n->n_attrs; a++)
        if (n->attrs[a].type == OX_ATTR_GRAPH || n->attrs[a].type == OX_ATTR_GRAPHS)
            return false;
    /* Dropout in training mode is random. */
    if (ox_node_is(n, "Dropout") && n->n_inputs > 2 && n->inputs[2])
        return false;
    for (int k = 0; k < n->n_outputs; k++)
        if (n->outputs[k] && n->outputs[k]->is_output)
            return false;
    return true;
}

static ox_status pass_cse(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    size_t cap = 16;
    while (cap < (size_t)g->n_nodes * 2)
        cap *= 2;
    ox_node **tab = calloc(cap, sizeof *tab);
    if (!tab)
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    for (int i = 0; i < g->n_nodes && ox__pass_may(c); i++) {
        ox_node *n = g->nodes[i];
        if (!cse_candidate(n))
            continue;
        size_t p = node_hash(n) & (cap - 1);
        ox_node *same = NULL;
        while (tab[p]) {
            if (node_equal(tab[p], n)) {
                same = tab[p];
                break;
            }
            p = (p + 1) & (cap - 1);
        }
        if (!same) {
            tab[p] = n;
            continue;
        }
        /* An output n has and `same` omits keeps n when someone reads it. */
        bool keep = false;
        for (int k = 0; k < n->n_outputs; k++)
            keep |= n->outputs[k] && !same->outputs[k] && n->outputs[k]->n_uses;
        if (keep)
            continue;
        for (int k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] && same->outputs[k])
                ox_value_replace_uses(n->outputs[k], same->outputs[k]);
        ox__pass_drop(c, n);
        ox__pass_did(c);
    }
    free(tab);
    return OX_OK;
}

/* ---- node names ------------------------------------------------------------ */

typedef struct names_ctx {
    struct ox_strmap *seen;
    ox_pass_ctx *c;
    bool oom;
} names_ctx;

static void name_graph(ox_graph *g, void *p)
{
    names_ctx *x = p;
    for (int i = 0; i < g->n_nodes && !x->oom; i++) {
        ox_node *n = g->nodes[i];
        if (n->name && *n->name && !ox_strmap_has(x->seen, n->name)) {
            if (!ox_strmap_put(x->seen, n->name, n))
                x->oom = true;
            continue;
        }
        if (!ox__pass_may(x->c))
            return;
        char *nm = ox_model_unique_node_name(x->c->m, n->name && *n->name ? n->name : n->op_type);
        /* The registry may not know names that the loader kept as-is. */
        while (nm && ox_strmap_has(x->seen, nm)) {
            char *again = ox_model_unique_node_name(x->c->m, nm);
            free(nm);
            nm = again;
        }
        if (!nm) {
            x->oom = true;
            return;
        }
        free(n->name);
        n->name = nm;
        if (!ox_strmap_put(x->seen, n->name, n))
            x->oom = true;
        ox__pass_did(x->c);
    }
}

static ox_status pass_unique_names(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    /* Names are unique model-wide: do the whole model once, at the top. */
    if (g->parent)
        return OX_OK;
    names_ctx x = {ox_strmap_new_borrowed(), c, false};
    if (!x.seen)
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    ox_graph_visit(g, name_graph, &x);
    ox_strmap_free(x.seen);
    return x.oom ? ox_errorf(err, OX_ENOMEM, "out of memory") : OX_OK;
}

const ox_pass ox__passes_cleanup[] = {
    {"cse", "merge identical nodes reading the same inputs (commutative-aware)",
     OX_PASS_ELIMINATION, OX_TARGET_ONNX, OX_LEVEL_BASIC, true, pass_cse},
    {"dedup_initializers", "merge byte-identical initializers", OX_PASS_ELIMINATION,
     OX_TARGET_ONNX, OX_LEVEL_BASIC, true, pass_dedup_inits},
    {"dce", "remove nodes whose outputs nothing reads", OX_PASS_ELIMINATION, OX_TARGET_ONNX,
     OX_LEVEL_BASIC, true, pass_dce},
    {"remove_unused_initializers", "drop initializers that nothing reads",
     OX_PASS_ELIMINATION, OX_TARGET_ONNX, OX_LEVEL_BASIC, true, pass_unused_inits},
    {"unique_node_names", "give every node a unique, non-empty name", OX_PASS_CONVERSION,
     OX_TARGET_ONNX, OX_LEVEL_BASIC, true, pass_unique_names},
    {0},
};
