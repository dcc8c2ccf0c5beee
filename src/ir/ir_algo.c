/* Whole-graph algorithms on the IR: redirecting uses (through subgraphs),
 * recomputing use lists, stable topological sort with cycle reporting,
 * and recursive visits. */
#include "ir/ir_internal.h"

#include <stdint.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ptrmap.h"

/* ---- replace uses ------------------------------------------------------------ */

static void set_graph_output(ox_graph *g, int k, ox_value *to)
{
    ox_value *from = g->outputs[k];
    if (from == to)
        return;
    if (from) {
        if (from->graph == g) {
            bool still = false;
            for (int j = 0; j < g->n_outputs; j++)
                if (j != k && g->outputs[j] == from)
                    still = true;
            from->is_output = still;
        } else {
            ox__use_del(from, ox__output_reader(g, from), -1);
        }
    }
    g->outputs[k] = to;
    /* The output keeps the type its file declared: a pass that makes
     * another value the output carries the declaration over. */
    if (to && from && from->decl && !to->decl)
        to->decl = ox_type_clone(from->decl);
    if (to) {
        if (to->graph == g)
            to->is_output = true;
        else {
            ox_node *r = ox__output_reader(g, to);
            if (r)
                ox__use_add(to, r, -1);
        }
    }
}

/* Rewrites reads of `from` inside g's subtree (node inputs and subgraph
 * outputs) to `to`. */
static void rewrite_reads(ox_graph *g, ox_value *from, ox_value *to, int depth)
{
    if (!g || depth > 256)
        return;
    for (int i = 0; i < g->n_nodes; i++) {
        ox_node *c = g->nodes[i];
        for (int k = 0; k < c->n_inputs; k++)
            if (c->inputs[k] == from)
                ox_node_set_input(c, k, to);
        for (int a = 0; a < c->n_attrs; a++) {
            ox_attr *at = &c->attrs[a];
            rewrite_reads(at->g, from, to, depth + 1);
            for (int j = 0; at->graphs && j < at->n; j++)
                rewrite_reads(at->graphs[j], from, to, depth + 1);
        }
    }
    for (int k = 0; k < g->n_outputs; k++)
        if (g->outputs[k] == from)
            set_graph_output(g, k, to);
}

void ox_value_replace_uses(ox_value *from, ox_value *to)
{
    if (!from || !to || from == to)
        return;
    ox_graph *g = from->graph;
    if (from->is_output && g) {
        for (int k = 0; k < g->n_outputs; k++)
            if (g->outputs[k] == from)
                set_graph_output(g, k, to);
        from->is_output = false;
    }
    while (from->n_uses > 0) {
        int before = from->n_uses;
        ox_use u = from->uses[before - 1];
        ox_node *n = u.node;
        if (u.input >= 0) {
            if (n && u.input < n->n_inputs && n->inputs[u.input] == from)
                ox_node_set_input(n, u.input, to);
        } else if (n) {
            for (int a = 0; a < n->n_attrs; a++) {
                ox_attr *at = &n->attrs[a];
                rewrite_reads(at->g, from, to, 0);
                for (int j = 0; at->graphs && j < at->n; j++)
                    rewrite_reads(at->graphs[j], from, to, 0);
            }
        }
        /* A record that matched no real read is stale: drop it so the
         * loop always makes progress. */
        if (from->n_uses == before)
            from->n_uses--;
    }
}

/* ---- relink ------------------------------------------------------------------ */

static void clear_uses_tree(ox_graph *g, int depth)
{
    if (depth > 256)
        return;
    for (int i = 0; i < g->n_values; i++) {
        g->values[i]->n_uses = 0;
        g->values[i]->slot = i;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        ox_node *n = g->nodes[i];
        n->graph = g;
        n->index = i;
        /* Also repairs scope links of subgraphs attached by hand. */
        for (int a = 0; a < n->n_attrs; a++) {
            ox_attr *at = &n->attrs[a];
            int ns = at->graphs ? at->n : 0;
            for (int j = -1; j < ns; j++) {
                ox_graph *sub = j < 0 ? at->g : at->graphs[j];
                if (!sub)
                    continue;
                sub->parent = g;
                sub->owner = n;
                sub->model = g->model;
                clear_uses_tree(sub, depth + 1);
            }
        }
    }
}

static void clear_dangling(ox_graph *g, int depth)
{
    /* Values read inside the tree but in no scope are not reset by
     * clear_uses_tree. */
    if (depth > 256)
        return;
    for (int i = 0; i < g->n_nodes; i++) {
        ox_node *n = g->nodes[i];
        for (int k = 0; k < n->n_inputs; k++) {
            ox_value *v = n->inputs[k];
            if (v && v->graph == NULL)
                v->n_uses = 0;
        }
        for (int a = 0; a < n->n_attrs; a++) {
            ox_attr *at = &n->attrs[a];
            if (at->g)
                clear_dangling(at->g, depth + 1);
            for (int j = 0; at->graphs && j < at->n; j++)
                if (at->graphs[j])
                    clear_dangling(at->graphs[j], depth + 1);
        }
    }
}

static void add_uses_tree(ox_graph *g, int depth)
{
    if (depth > 256)
        return;
    for (int i = 0; i < g->n_nodes; i++) {
        ox_node *n = g->nodes[i];
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k])
                ox__link_input(n, k, n->inputs[k]);
        for (int a = 0; a < n->n_attrs; a++) {
            ox_attr *at = &n->attrs[a];
            if (at->g)
                add_uses_tree(at->g, depth + 1);
            for (int j = 0; at->graphs && j < at->n; j++)
                if (at->graphs[j])
                    add_uses_tree(at->graphs[j], depth + 1);
        }
    }
    for (int k = 0; k < g->n_outputs; k++) {
        ox_value *v = g->outputs[k];
        if (!v)
            continue;
        if (v->graph == g)
            v->is_output = true;
        else {
            ox_node *r = ox__output_reader(g, v);
            if (r)
                ox__use_add(v, r, -1);
        }
    }
}

void ox_graph_relink(ox_graph *g)
{
    if (!g)
        return;
    /* Outer-scope records of a subgraph live on values of enclosing scopes,
     * so rebuild from the root of the scope tree: O(model), exact. */
    int guard = 0;
    while (g->parent && guard++ < 4096)
        g = g->parent;
    clear_uses_tree(g, 0);
    clear_dangling(g, 0);
    add_uses_tree(g, 0);
}

/* ---- topological order ----------------------------------------------------------
 * The one topological order of the library: ox_graph_toposort applies it,
 * the executor's planner, shape inference and `check` read it. Edges come
 * from the node inputs and the reads inside each node's subgraphs, not from
 * the use lists, so it also serves graphs whose links are being rebuilt. */

static void heap_push(int *h, int *n, int x)
{
    int i = (*n)++;
    while (i > 0) {
        int p = (i - 1) / 2;
        if (h[p] <= x)
            break;
        h[i] = h[p];
        i = p;
    }
    h[i] = x;
}

static int heap_pop(int *h, int *n)
{
    int top = h[0];
    int x = h[--(*n)];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && h[c + 1] < h[c])
            c++;
        if (h[c] >= x)
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n > 0)
        h[i] = x;
    return top;
}

static bool is_defined(const ox_value *v)
{
    return v->producer || v->init || v->is_input;
}

/* The value that defines v's name: a subgraph may hold an unproduced
 * placeholder for an outer name (a file whose outer nodes are unsorted). */
static const ox_value *canon_value(const ox_value *v)
{
    if (!v || is_defined(v) || !v->graph || !v->name)
        return v;
    for (const ox_graph *g = v->graph->parent; g; g = g->parent) {
        ox_value *o = ox_graph_find(g, v->name);
        if (o && is_defined(o))
            return o;
    }
    return v;
}

typedef struct topo {
    const ox_graph *g;
    ox_ptrmap pos;      /* node -> position + 1, only when indexes are stale */
    bool use_index;
    int *src, *dst;     /* edges */
    int n_edges, cap_edges;
    bool oom;
} topo;

static int topo_pos(const topo *t, const ox_node *n)
{
    if (t->use_index) {
        int p = n->index;
        return p >= 0 && p < t->g->n_nodes && t->g->nodes[p] == n ? p : -1;
    }
    return (int)(intptr_t)ox_ptrmap_get(&t->pos, n) - 1;
}

/* Adds the edge producer(v) -> node i when v is produced in t->g. */
static void topo_edge(topo *t, const ox_value *v, int i)
{
    v = canon_value(v);
    if (!v || !v->producer || v->producer->graph != t->g)
        return;
    int p = topo_pos(t, v->producer);
    if (p < 0 || p == i)
        return;
    if (t->n_edges == t->cap_edges) {
        int nc = t->cap_edges ? t->cap_edges * 2 : 256;
        int *ns = ox__ir_realloc(t->src, (size_t)nc * sizeof *ns);
        if (ns)
            t->src = ns;
        int *nd = ns ? ox__ir_realloc(t->dst, (size_t)nc * sizeof *nd) : NULL;
        if (nd)
            t->dst = nd;
        if (!ns || !nd) {
            t->oom = true;
            return;
        }
        t->cap_edges = nc;
    }
    t->src[t->n_edges] = p;
    t->dst[t->n_edges++] = i;
}

/* Reads of t->g's values anywhere inside subgraph sub make node i depend
 * on their producers. */
static void topo_sub_edges(topo *t, const ox_graph *sub, int i, int depth)
{
    if (!sub || depth > 256)
        return;
    for (int k = 0; k < sub->n_nodes; k++) {
        const ox_node *c = sub->nodes[k];
        for (int j = 0; j < c->n_inputs; j++)
            topo_edge(t, c->inputs[j], i);
        for (int a = 0; a < c->n_attrs; a++) {
            const ox_attr *at = &c->attrs[a];
            topo_sub_edges(t, at->g, i, depth + 1);
            for (int j = 0; at->graphs && j < at->n; j++)
                topo_sub_edges(t, at->graphs[j], i, depth + 1);
        }
    }
    for (int k = 0; k < sub->n_outputs; k++)
        topo_edge(t, sub->outputs[k], i);
}

ox_status ox_graph_topo_order(const ox_graph *g, int *order, ox_node **on_cycle,
                              ox_error *err)
{
    if (on_cycle)
        *on_cycle = NULL;
    if (!g || (g->n_nodes && !order))
        return ox_errorf(err, OX_EINVAL, "topological order: no graph");
    int n = g->n_nodes;
    topo t = {.g = g, .use_index = true};
    for (int i = 0; i < n && t.use_index; i++)
        t.use_index = g->nodes[i]->index == i;
    for (int i = 0; !t.use_index && i < n && !t.oom; i++)
        t.oom = !ox_ptrmap_put(&t.pos, g->nodes[i], (void *)(intptr_t)(i + 1));
    for (int i = 0; i < n && !t.oom; i++) {
        const ox_node *nd = g->nodes[i];
        for (int k = 0; k < nd->n_inputs; k++)
            topo_edge(&t, nd->inputs[k], i);
        for (int a = 0; a < nd->n_attrs; a++) {
            const ox_attr *at = &nd->attrs[a];
            topo_sub_edges(&t, at->g, i, 0);
            for (int j = 0; at->graphs && j < at->n; j++)
                topo_sub_edges(&t, at->graphs[j], i, 0);
        }
    }
    int *indeg = ox__ir_calloc((size_t)n + 1, sizeof *indeg);
    int *start = ox__ir_calloc((size_t)n + 2, sizeof *start);
    int *adj = ox__ir_calloc((size_t)t.n_edges + 1, sizeof *adj);
    int *heap = ox__ir_calloc((size_t)n + 1, sizeof *heap);
    ox_status st = OX_OK;
    if (t.oom || !indeg || !start || !adj || !heap) {
        st = ox_errorf(err, OX_ENOMEM, "topological order: out of memory");
        goto out;
    }
    /* Successor lists (CSR by source). */
    for (int e = 0; e < t.n_edges; e++) {
        start[t.src[e] + 1]++;
        indeg[t.dst[e]]++;
    }
    for (int i = 0; i < n; i++)
        start[i + 1] += start[i];
    for (int e = 0; e < t.n_edges; e++)
        adj[start[t.src[e]]++] = t.dst[e];
    for (int i = n; i > 0; i--)
        start[i] = start[i - 1];
    start[0] = 0;
    /* Kahn's algorithm, smallest stored position first: an already valid
     * order is kept as is. */
    int hn = 0, done = 0;
    for (int i = 0; i < n; i++)
        if (indeg[i] == 0)
            heap_push(heap, &hn, i);
    while (hn > 0) {
        int p = heap_pop(heap, &hn);
        order[done++] = p;
        for (int k = start[p]; k < start[p + 1]; k++)
            if (--indeg[adj[k]] == 0)
                heap_push(heap, &hn, adj[k]);
    }
    if (done < n) {
        /* Walk back through pending predecessors from a pending node: the
         * first node seen twice lies on a cycle. */
        int x = -1;
        for (int i = 0; i < n && x < 0; i++)
            if (indeg[i] > 0)
                x = i;
        /* Predecessor lists (CSR by destination), in the reused arrays. */
        int *seen = heap; /* every entry was popped */
        memset(seen, 0, (size_t)n * sizeof *seen);
        memset(start, 0, (size_t)(n + 2) * sizeof *start);
        for (int e = 0; e < t.n_edges; e++)
            start[t.dst[e] + 1]++;
        for (int i = 0; i < n; i++)
            start[i + 1] += start[i];
        for (int e = 0; e < t.n_edges; e++)
            adj[start[t.dst[e]]++] = t.src[e];
        for (int i = n; i > 0; i--)
            start[i] = start[i - 1];
        start[0] = 0;
        for (int step = 0; x >= 0 && step <= n && !seen[x]; step++) {
            seen[x] = 1;
            int pred = -1;
            for (int k = start[x]; k < start[x + 1] && pred < 0; k++)
                if (indeg[adj[k]] > 0)
                    pred = adj[k];
            if (pred < 0)
                break;
            x = pred;
        }
        ox_node *c = x >= 0 ? g->nodes[x] : NULL;
        if (on_cycle)
            *on_cycle = c;
        if (!c)
            st = ox_errorf(err, OX_EMODEL, "graph has a cycle");
        else
            st = ox_errorf(err, OX_EMODEL, "graph '%s' has a cycle through node '%s' (%s, id %d)",
                           g->name ? g->name : "", c->name && *c->name ? c->name : "?",
                           c->op_type ? c->op_type : "?", c->id);
    }
out:
    free(indeg);
    free(start);
    free(adj);
    free(heap);
    free(t.src);
    free(t.dst);
    ox_ptrmap_free(&t.pos);
    return st;
}

ox_status ox_graph_toposort(ox_graph *g, ox_error *err)
{
    if (!g)
        return ox_errorf(err, OX_EINVAL, "toposort: no graph");
    int n = g->n_nodes;
    if (n <= 1)
        return OX_OK;
    int *order = ox__ir_calloc((size_t)n, sizeof *order);
    ox_node **nodes = ox__ir_calloc((size_t)n, sizeof *nodes);
    if (!order || !nodes) {
        free(order);
        free(nodes);
        return ox_errorf(err, OX_ENOMEM, "toposort: out of memory");
    }
    ox_status st = ox_graph_topo_order(g, order, NULL, err);
    if (st == OX_OK) {
        for (int i = 0; i < n; i++)
            nodes[i] = g->nodes[order[i]];
        memcpy(g->nodes, nodes, (size_t)n * sizeof *nodes);
        for (int i = 0; i < n; i++)
            g->nodes[i]->index = i;
    }
    free(order);
    free(nodes);
    return st;
}

/* ---- visits ------------------------------------------------------------------ */

static void visit(ox_graph *g, ox_graph_visit_fn fn, void *ctx, int depth)
{
    if (!g || depth > 256)
        return;
    fn(g, ctx);
    /* Index loop re-reads n_nodes: fn may edit g. */
    for (int i = 0; i < g->n_nodes; i++) {
        ox_node *n = g->nodes[i];
        for (int a = 0; a < n->n_attrs; a++) {
            ox_attr *at = &n->attrs[a];
            if (at->g)
                visit(at->g, fn, ctx, depth + 1);
            for (int j = 0; at->graphs && j < at->n; j++)
                if (at->graphs[j])
                    visit(at->graphs[j], fn, ctx, depth + 1);
        }
    }
}

void ox_graph_visit(ox_graph *g, ox_graph_visit_fn fn, void *ctx)
{
    if (g && fn)
        visit(g, fn, ctx, 0);
}

static int count_nodes(const ox_graph *g, int depth)
{
    if (!g || depth > 256)
        return 0;
    int c = g->n_nodes;
    for (int i = 0; i < g->n_nodes; i++) {
        const ox_node *n = g->nodes[i];
        for (int a = 0; a < n->n_attrs; a++) {
            const ox_attr *at = &n->attrs[a];
            c += count_nodes(at->g, depth + 1);
            for (int j = 0; at->graphs && j < at->n; j++)
                c += count_nodes(at->graphs[j], depth + 1);
        }
    }
    return c;
}

int ox_graph_count_nodes(const ox_graph *g, bool recursive)
{
    if (!g)
        return 0;
    return recursive ? count_nodes(g, 0) : g->n_nodes;
}
