/* Whole-graph algorithms on the IR: redirecting uses (through subgraphs),
 * recomputing use lists, stable topological sort with cycle reporting,
 * and recursive visits. */
#include "ir/ir_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* ---- toposort ------------------------------------------------------------------ */

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

/* Consumer of use u of v (produced in g) that depends on v, or NULL. */
static ox_node *edge_target(const ox_graph *g, const ox_value *v, const ox_use *u)
{
    ox_node *c = u->node;
    if (!c || c->graph != g || c->index < 0 || c->index >= g->n_nodes || g->nodes[c->index] != c)
        return NULL;
    if (u->input >= 0 && (u->input >= c->n_inputs || c->inputs[u->input] != v))
        return NULL;
    return c;
}

/* Does any read inside sub (recursively) touch a value of g produced by a
 * node still pending (indeg > 0)? Returns that producer. */
static ox_node *pending_outer_pred(ox_graph *sub, const ox_graph *g, const int *indeg, int depth)
{
    if (!sub || depth > 256)
        return NULL;
    for (int i = 0; i < sub->n_nodes; i++) {
        ox_node *c = sub->nodes[i];
        for (int k = 0; k < c->n_inputs; k++) {
            ox_value *v = c->inputs[k];
            if (v && v->graph == g && v->producer && v->producer->graph == g &&
                indeg[v->producer->index] > 0)
                return v->producer;
        }
        for (int a = 0; a < c->n_attrs; a++) {
            ox_attr *at = &c->attrs[a];
            ox_node *p = pending_outer_pred(at->g, g, indeg, depth + 1);
            for (int j = 0; !p && at->graphs && j < at->n; j++)
                p = pending_outer_pred(at->graphs[j], g, indeg, depth + 1);
            if (p)
                return p;
        }
    }
    for (int k = 0; k < sub->n_outputs; k++) {
        ox_value *v = sub->outputs[k];
        if (v && v->graph == g && v->producer && v->producer->graph == g &&
            indeg[v->producer->index] > 0)
            return v->producer;
    }
    return NULL;
}

static ox_node *pending_pred(ox_graph *g, ox_node *x, const int *indeg)
{
    for (int k = 0; k < x->n_inputs; k++) {
        ox_value *v = x->inputs[k];
        if (v && v->producer && v->producer->graph == g && indeg[v->producer->index] > 0)
            return v->producer;
    }
    for (int a = 0; a < x->n_attrs; a++) {
        ox_attr *at = &x->attrs[a];
        ox_node *p = pending_outer_pred(at->g, g, indeg, 0);
        for (int j = 0; !p && at->graphs && j < at->n; j++)
            p = pending_outer_pred(at->graphs[j], g, indeg, 0);
        if (p)
            return p;
    }
    return NULL;
}

static ox_status report_cycle(ox_graph *g, const int *indeg, ox_error *err)
{
    int n = g->n_nodes;
    int *seen = ox__ir_calloc((size_t)n, sizeof(int));
    ox_node *x = NULL;
    for (int i = 0; i < n; i++)
        if (indeg[i] > 0) {
            x = g->nodes[i];
            break;
        }
    /* Walk back through pending predecessors; the first node seen twice
     * lies on a cycle. */
    for (int step = 1; x && seen && step <= n + 1; step++) {
        if (seen[x->index])
            break;
        seen[x->index] = step;
        ox_node *p = pending_pred(g, x, indeg);
        if (!p)
            break;
        x = p;
    }
    free(seen);
    if (!x)
        return ox_errorf(err, OX_EMODEL, "graph has a cycle");
    return ox_errorf(err, OX_EMODEL, "graph '%s' has a cycle through node '%s' (%s, id %d)",
                     g->name ? g->name : "", x->name && *x->name ? x->name : "?",
                     x->op_type ? x->op_type : "?", x->id);
}

ox_status ox_graph_toposort(ox_graph *g, ox_error *err)
{
    if (!g)
        return ox_errorf(err, OX_EINVAL, "toposort: no graph");
    int n = g->n_nodes;
    if (n <= 1)
        return OX_OK;
    for (int i = 0; i < n; i++)
        g->nodes[i]->index = i;
    int *indeg = ox__ir_calloc((size_t)n, sizeof(int));
    int *heap = ox__ir_calloc((size_t)n, sizeof(int));
    ox_node **order = ox__ir_calloc((size_t)n, sizeof(ox_node *));
    if (!indeg || !heap || !order) {
        free(indeg);
        free(heap);
        free(order);
        return ox_errorf(err, OX_ENOMEM, "toposort: out of memory");
    }
    for (int i = 0; i < n; i++) {
        ox_node *p = g->nodes[i];
        for (int k = 0; k < p->n_outputs; k++) {
            ox_value *v = p->outputs[k];
            if (!v || v->producer != p)
                continue;
            for (int u = 0; u < v->n_uses; u++) {
                ox_node *c = edge_target(g, v, &v->uses[u]);
                if (c)
                    indeg[c->index]++;
            }
        }
    }
    int hn = 0, done = 0;
    for (int i = 0; i < n; i++)
        if (indeg[i] == 0)
            heap_push(heap, &hn, i);
    /* Smallest current index first: an already valid order is kept as is. */
    while (hn > 0) {
        ox_node *p = g->nodes[heap_pop(heap, &hn)];
        order[done++] = p;
        for (int k = 0; k < p->n_outputs; k++) {
            ox_value *v = p->outputs[k];
            if (!v || v->producer != p)
                continue;
            for (int u = 0; u < v->n_uses; u++) {
                ox_node *c = edge_target(g, v, &v->uses[u]);
                if (c && --indeg[c->index] == 0)
                    heap_push(heap, &hn, c->index);
            }
        }
    }
    ox_status st = OX_OK;
    if (done < n) {
        st = report_cycle(g, indeg, err);
    } else {
        memcpy(g->nodes, order, (size_t)n * sizeof(ox_node *));
        for (int i = 0; i < n; i++)
            g->nodes[i]->index = i;
    }
    free(indeg);
    free(heap);
    free(order);
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
