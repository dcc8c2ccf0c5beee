/* Support for the export: an index of every graph and node of a model,
 * and the node matching behind the before/after diff view (by name + op,
 * then by output names). */
#include "export/export_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- model index ----------------------------------------------------------- */

static bool push_graph(exp_model_index *ix, ox_graph *g)
{
    if (ix->n_graphs == ix->cap_graphs) {
        int nc = ix->cap_graphs ? ix->cap_graphs * 2 : 8;
        ox_graph **p = realloc(ix->graphs, (size_t)nc * sizeof *p);
        if (!p)
            return false;
        ix->graphs = p;
        ix->cap_graphs = nc;
    }
    ix->graphs[ix->n_graphs++] = g;
    return true;
}

static bool push_node(exp_model_index *ix, ox_node *n)
{
    if (ix->n_nodes == ix->cap_nodes) {
        int nc = ix->cap_nodes ? ix->cap_nodes * 2 : 64;
        ox_node **p = realloc(ix->nodes, (size_t)nc * sizeof *p);
        if (!p)
            return false;
        ix->nodes = p;
        ix->cap_nodes = nc;
    }
    ix->nodes[ix->n_nodes++] = n;
    return true;
}

/* Walks graphs ourselves (rather than ox_graph_visit) so that depth is
 * bounded and a malformed model whose subgraph points back at an ancestor
 * cannot loop forever. */
static bool index_graph(exp_model_index *ix, ox_graph *g, int depth)
{
    if (!g || depth > 64)
        return true;
    if (exp_map_get(&ix->seen, g))
        return true;
    if (!exp_map_put(&ix->seen, g, (void *)1) || !push_graph(ix, g))
        return false;
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i] && !push_node(ix, g->nodes[i]))
            return false;
    for (int i = 0; i < g->n_nodes; i++) {
        ox_node *n = g->nodes[i];
        if (!n)
            continue;
        for (int a = 0; a < n->n_attrs; a++) {
            ox_attr *at = &n->attrs[a];
            if (at->type == OX_ATTR_GRAPH && !index_graph(ix, at->g, depth + 1))
                return false;
            if (at->type == OX_ATTR_GRAPHS && at->graphs)
                for (int k = 0; k < at->n; k++)
                    if (!index_graph(ix, at->graphs[k], depth + 1))
                        return false;
        }
    }
    return true;
}

ox_status exp_index_model(const ox_model *m, exp_model_index *ix, ox_error *err)
{
    memset(ix, 0, sizeof *ix);
    if (!m || !m->graph)
        return ox_errorf(err, OX_EINVAL, "model has no graph");
    if (!index_graph(ix, m->graph, 0)) {
        exp_index_free(ix);
        return ox_errorf(err, OX_ENOMEM, "out of memory indexing the model");
    }
    return OX_OK;
}

void exp_index_free(exp_model_index *ix)
{
    free(ix->graphs);
    free(ix->nodes);
    exp_map_free(&ix->seen);
    memset(ix, 0, sizeof *ix);
}

/* ---- diff matching ---------------------------------------------------------- */

typedef struct {
    char *key;
    ox_node *node;
    int order;
} keyed;

static int keyed_cmp(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    if (c)
        return c;
    return (x->order > y->order) - (x->order < y->order);
}

static const char *nz(const char *s)
{
    return s ? s : "";
}

/* Key for rule 1 (by_outputs false) or rule 2; NULL when the rule does not
 * apply to this node (no name / no named output) or on OOM. Fields are
 * separated by a control character that names cannot sensibly contain. */
static char *node_key(const ox_node *n, bool by_outputs)
{
    size_t len = strlen(nz(n->op_type)) + strlen(nz(n->domain)) + 4;
    if (!by_outputs) {
        if (!n->name || !*n->name)
            return NULL;
        len += strlen(n->name);
    } else {
        int named = 0;
        for (int i = 0; i < n->n_outputs; i++)
            if (n->outputs && n->outputs[i] && n->outputs[i]->name) {
                len += strlen(n->outputs[i]->name) + 1;
                named++;
            } else {
                len += 1;
            }
        if (!named)
            return NULL;
    }
    char *k = malloc(len + 1);
    if (!k)
        return NULL;
    char *p = k;
    p += sprintf(p, "%s\x1f%s\x1f", nz(n->op_type), nz(n->domain));
    if (!by_outputs) {
        strcpy(p, n->name);
    } else {
        for (int i = 0; i < n->n_outputs; i++) {
            const char *nm = n->outputs && n->outputs[i] ? nz(n->outputs[i]->name) : "";
            size_t l = strlen(nm);
            memcpy(p, nm, l);
            p += l;
            *p++ = '\x1e';
        }
        *p = '\0';
    }
    return k;
}

static void free_keyed(keyed *v, int n)
{
    for (int i = 0; i < n; i++)
        free(v[i].key);
    free(v);
}

/* One matching round: pairs still-unmatched before nodes with unmatched
 * after nodes of equal key. */
static ox_status match_round(const exp_model_index *before, const exp_model_index *after,
                             exp_ptrmap *b2a, exp_ptrmap *a2b, bool by_outputs,
                             ox_error *err)
{
    keyed *av = calloc((size_t)after->n_nodes + 1, sizeof *av);
    if (!av)
        return ox_errorf(err, OX_ENOMEM, "out of memory matching nodes");
    int na = 0;
    for (int i = 0; i < after->n_nodes; i++) {
        ox_node *n = after->nodes[i];
        if (exp_map_get(a2b, n))
            continue;
        char *k = node_key(n, by_outputs);
        if (!k)
            continue;
        av[na].key = k;
        av[na].node = n;
        av[na].order = i;
        na++;
    }
    qsort(av, (size_t)na, sizeof *av, keyed_cmp);
    ox_status st = OX_OK;
    for (int i = 0; i < before->n_nodes && st == OX_OK; i++) {
        ox_node *n = before->nodes[i];
        if (exp_map_get(b2a, n))
            continue;
        char *k = node_key(n, by_outputs);
        if (!k)
            continue;
        /* Lower bound of k, then the first candidate not yet taken. */
        int lo = 0, hi = na;
        while (lo < hi) {
            int mid = lo + (hi - lo) / 2;
            if (strcmp(av[mid].key, k) < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (int j = lo; j < na && strcmp(av[j].key, k) == 0; j++) {
            if (exp_map_get(a2b, av[j].node))
                continue;
            if (!exp_map_put(b2a, n, av[j].node) || !exp_map_put(a2b, av[j].node, n))
                st = ox_errorf(err, OX_ENOMEM, "out of memory matching nodes");
            break;
        }
        free(k);
    }
    free_keyed(av, na);
    return st;
}

ox_status exp_diff_match(const exp_model_index *before, const exp_model_index *after,
                         exp_ptrmap *b2a, exp_ptrmap *a2b, ox_error *err)
{
    ox_status st = match_round(before, after, b2a, a2b, false, err);
    if (st == OX_OK)
        st = match_round(before, after, b2a, a2b, true, err);
    return st;
}

static bool attr_equal(const ox_attr *a, const ox_attr *b)
{
    if (strcmp(nz(a->name), nz(b->name)) != 0 || a->type != b->type)
        return false;
    switch (a->type) {
    case OX_ATTR_INT:
        return a->i == b->i;
    case OX_ATTR_FLOAT:
        return a->f == b->f || (a->f != a->f && b->f != b->f);
    case OX_ATTR_STRING:
        return a->s.len == b->s.len &&
               (a->s.len == 0 || (a->s.data && b->s.data &&
                                  memcmp(a->s.data, b->s.data, a->s.len) == 0));
    case OX_ATTR_INTS:
        return a->n == b->n &&
               (a->n <= 0 || (a->ints && b->ints &&
                              memcmp(a->ints, b->ints, (size_t)a->n * sizeof *a->ints) == 0));
    case OX_ATTR_FLOATS:
        return a->n == b->n &&
               (a->n <= 0 || (a->floats && b->floats &&
                              memcmp(a->floats, b->floats,
                                     (size_t)a->n * sizeof *a->floats) == 0));
    case OX_ATTR_TENSOR:
        return (a->t == NULL) == (b->t == NULL) &&
               (!a->t || ox_tensor_equal(a->t, b->t));
    default:
        /* Graphs and the rarer kinds: compared by presence only; their
         * bodies are diffed node by node anyway. */
        return a->n == b->n;
    }
}

bool exp_node_changed(const ox_node *a, const ox_node *b)
{
    if (a->n_inputs != b->n_inputs || a->n_attrs != b->n_attrs)
        return true;
    for (int i = 0; i < a->n_inputs; i++) {
        const ox_value *x = a->inputs ? a->inputs[i] : NULL;
        const ox_value *y = b->inputs ? b->inputs[i] : NULL;
        if ((x == NULL) != (y == NULL))
            return true;
        if (x && strcmp(nz(x->name), nz(y->name)) != 0)
            return true;
    }
    for (int i = 0; i < a->n_attrs; i++) {
        const ox_attr *y = NULL;
        for (int j = 0; j < b->n_attrs; j++)
            if (strcmp(nz(a->attrs[i].name), nz(b->attrs[j].name)) == 0) {
                y = &b->attrs[j];
                break;
            }
        if (!y || !attr_equal(&a->attrs[i], y))
            return true;
    }
    return false;
}
