/* Liveness-based arena plan for a graph's activations: lifetimes over the
 * node order, then offsets by the greedy-by-size algorithm (largest value
 * first, into the tightest gap left by overlapping values already placed).
 * The executor's arena and the cost model's peak memory both come from here. */
#include "onnxscope/memplan.h"

#include <stdlib.h>
#include <string.h>

#include "onnxscope/cost.h"

/* Entries of the per-step lists above this count make the plan fall back to
 * giving every value its own bytes: only pathological graphs (thousands of
 * values alive across the whole graph) get there. */
#define MAX_LIVE_ENTRIES ((int64_t)64 * 1024 * 1024)

void ox_memplan_opts_default(ox_memplan_opts *o)
{
    o->include_inputs = true;
    o->include_constants = false;
    o->alignment = OX_MEMPLAN_ALIGN;
    o->born = NULL;
}

void ox_memplan_free(ox_memplan *p)
{
    if (!p)
        return;
    free(p->slots);
    free(p->by_value);
    free(p);
}

/* Sort keys carry what they are sorted by, so that no global context is
 * needed (plans may be built from several threads at once). */
typedef struct key {
    int64_t a, b;
    int id;
} key;

static int cmp_key(const void *pa, const void *pb)
{
    const key *x = pa, *y = pb;
    if (x->a != y->a)
        return x->a < y->a ? -1 : 1;
    if (x->b != y->b)
        return x->b < y->b ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* Pointers ordered as integers; the same order for sorting and searching. */
static int64_t ptr_key(const ox_value *v)
{
    return (int64_t)(uintptr_t)v;
}

const ox_memplan_slot *ox_memplan_find(const ox_memplan *p, const ox_value *v)
{
    if (!p || !v || !p->by_value)
        return NULL;
    int lo = 0, hi = p->n_slots - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        const ox_memplan_slot *s = &p->slots[p->by_value[mid]];
        if (s->value == v)
            return s;
        if (ptr_key(s->value) < ptr_key(v))
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return NULL;
}

/* Step of the node in g that contains the use: a consumer inside a subgraph
 * counts at the step of its owner node in g. -2 when it cannot be found. */
static int use_step(const ox_graph *g, const ox_node *n)
{
    int guard = 0;
    while (n && n->graph != g && guard++ < 64)
        n = (n->graph && n->graph->owner) ? n->graph->owner : NULL;
    if (!n || n->graph != g)
        return -2;
    if (n->index >= 0 && n->index < g->n_nodes && g->nodes[n->index] == n)
        return n->index;
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i] == n)
            return i;
    return -2;
}

static ox_status build_index(ox_memplan *p, ox_error *err)
{
    int n = p->n_slots;
    key *k = malloc((size_t)(n ? n : 1) * sizeof *k);
    p->by_value = malloc((size_t)(n ? n : 1) * sizeof *p->by_value);
    if (!k || !p->by_value) {
        free(k);
        return ox_errorf(err, OX_ENOMEM, "out of memory in the memory plan");
    }
    for (int i = 0; i < n; i++) {
        k[i].a = ptr_key(p->slots[i].value);
        k[i].b = i;
        k[i].id = i;
    }
    qsort(k, (size_t)n, sizeof *k, cmp_key);
    /* Drop repeats (the later slots), then compact the slot array. */
    char *drop = calloc((size_t)(n ? n : 1), 1);
    if (!drop) {
        free(k);
        return ox_errorf(err, OX_ENOMEM, "out of memory in the memory plan");
    }
    for (int i = 1; i < n; i++)
        if (k[i].a == k[i - 1].a)
            drop[k[i].id] = 1;
    int *newid = malloc((size_t)(n ? n : 1) * sizeof *newid);
    if (!newid) {
        free(k);
        free(drop);
        return ox_errorf(err, OX_ENOMEM, "out of memory in the memory plan");
    }
    int w = 0;
    for (int i = 0; i < n; i++) {
        newid[i] = drop[i] ? -1 : w;
        if (!drop[i])
            p->slots[w++] = p->slots[i];
    }
    int m = 0;
    for (int i = 0; i < n; i++)
        if (newid[k[i].id] >= 0)
            p->by_value[m++] = newid[k[i].id];
    p->n_slots = w;
    free(k);
    free(drop);
    free(newid);
    return OX_OK;
}

static bool plannable(const ox_value *v)
{
    /* Initializers are weights, not activations. */
    return v && !v->init;
}

static ox_status push_slot(ox_memplan *p, int *cap, const ox_value *v,
                           int first, ox_error *err)
{
    if (p->n_slots == *cap) {
        int nc = *cap ? *cap * 2 : 64;
        ox_memplan_slot *ns = realloc(p->slots, (size_t)nc * sizeof *ns);
        if (!ns)
            return ox_errorf(err, OX_ENOMEM, "out of memory in the memory plan");
        p->slots = ns;
        *cap = nc;
    }
    ox_memplan_slot *s = &p->slots[p->n_slots++];
    memset(s, 0, sizeof *s);
    s->value = v;
    s->first = first;
    s->last = first;
    s->offset = -1;
    return OX_OK;
}

static int64_t align_up(int64_t x, int64_t a)
{
    if (x > INT64_MAX - a)
        return -1;
    return (x + a - 1) & ~(a - 1);
}

/* Steps run from -1 (graph inputs) to n_nodes (graph outputs): index
 * step + 1 into arrays of n_nodes + 2 entries. */

static ox_status place_greedy(ox_memplan *p, int n_steps, ox_error *err)
{
    int n = p->n_slots;
    key *order = malloc((size_t)(n ? n : 1) * sizeof *order);
    int64_t *count = calloc((size_t)n_steps + 1, sizeof *count);
    if (!order || !count) {
        free(order);
        free(count);
        return ox_errorf(err, OX_ENOMEM, "out of memory in the memory plan");
    }
    int m = 0;
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        ox_memplan_slot *s = &p->slots[i];
        if (s->size < 0)
            continue;
        if (s->size == 0) {
            s->offset = 0; /* empty tensors need no bytes */
            continue;
        }
        /* Placement order: size descending, then earlier start, then id. */
        order[m].a = -s->size;
        order[m].b = s->first;
        order[m++].id = i;
        for (int t = s->first + 1; t <= s->last + 1; t++)
            count[t]++;
        total += s->last - s->first + 1;
    }

    if (total > MAX_LIVE_ENTRIES) {
        /* Pathological lifetimes: no reuse, every value its own bytes. */
        int64_t off = 0;
        for (int k = 0; k < m; k++) {
            p->slots[order[k].id].offset = off;
            off += p->slots[order[k].id].size;
        }
        p->arena_bytes = off;
        free(order);
        free(count);
        return OX_OK;
    }

    /* live[start[t] .. start[t] + fill[t]) holds the placed slots alive at t. */
    int64_t *start = malloc(((size_t)n_steps + 1) * sizeof *start);
    int *live = malloc((size_t)(total ? total : 1) * sizeof *live);
    int *fill = calloc((size_t)n_steps + 1, sizeof *fill);
    int *stamp = malloc((size_t)(n ? n : 1) * sizeof *stamp);
    key *cand = malloc((size_t)(n ? n : 1) * sizeof *cand);
    if (!start || !live || !fill || !stamp || !cand) {
        free(order); free(count); free(start); free(live); free(fill);
        free(stamp); free(cand);
        return ox_errorf(err, OX_ENOMEM, "out of memory in the memory plan");
    }
    int64_t acc = 0;
    for (int t = 0; t <= n_steps; t++) {
        start[t] = acc;
        acc += count[t];
    }
    for (int i = 0; i < n; i++)
        stamp[i] = -1;

    qsort(order, (size_t)m, sizeof *order, cmp_key);

    int64_t arena = 0;
    for (int k = 0; k < m; k++) {
        ox_memplan_slot *s = &p->slots[order[k].id];
        int nc = 0;
        for (int t = s->first + 1; t <= s->last + 1; t++) {
            for (int j = 0; j < fill[t]; j++) {
                int id = live[start[t] + j];
                if (stamp[id] != k) {
                    stamp[id] = k;
                    cand[nc].a = p->slots[id].offset;
                    cand[nc].b = 0;
                    cand[nc++].id = id;
                }
            }
        }
        qsort(cand, (size_t)nc, sizeof *cand, cmp_key);
        /* Best fit: the smallest gap between overlapping values that holds
         * s; otherwise right after the highest of them. */
        int64_t prev_end = 0, best = -1, best_gap = INT64_MAX;
        for (int j = 0; j < nc; j++) {
            const ox_memplan_slot *o = &p->slots[cand[j].id];
            int64_t gap = o->offset - prev_end;
            if (gap >= s->size && gap < best_gap) {
                best = prev_end;
                best_gap = gap;
            }
            if (o->offset + o->size > prev_end)
                prev_end = o->offset + o->size;
        }
        s->offset = best >= 0 ? best : prev_end;
        if (s->offset + s->size > arena)
            arena = s->offset + s->size;
        for (int t = s->first + 1; t <= s->last + 1; t++)
            live[start[t] + fill[t]++] = order[k].id;
    }
    p->arena_bytes = arena;
    free(order); free(count); free(start); free(live); free(fill);
    free(stamp); free(cand);
    return OX_OK;
}

ox_status ox_memplan_build(const ox_graph *g, const ox_memplan_opts *opts,
                           ox_memplan **out, ox_error *err)
{
    if (!out)
        return ox_errorf(err, OX_EINVAL, "no output for the memory plan");
    *out = NULL;
    if (!g)
        return ox_errorf(err, OX_EINVAL, "no graph to plan");
    ox_memplan_opts o;
    if (opts)
        o = *opts;
    else
        ox_memplan_opts_default(&o);
    if (o.alignment <= 0)
        o.alignment = OX_MEMPLAN_ALIGN;
    if (o.alignment & (o.alignment - 1))
        return ox_errorf(err, OX_EINVAL, "alignment %lld is not a power of two",
                         (long long)o.alignment);

    ox_memplan *p = calloc(1, sizeof *p);
    if (!p)
        return ox_errorf(err, OX_ENOMEM, "out of memory in the memory plan");
    p->graph = g;
    int cap = 0;
    ox_status st = OX_OK;
    int n_nodes = g->n_nodes;

    if (o.include_inputs)
        for (int i = 0; i < g->n_inputs && st == OX_OK; i++)
            if (plannable(g->inputs[i]))
                st = push_slot(p, &cap, g->inputs[i], -1, err);
    for (int i = 0; i < n_nodes && st == OX_OK; i++) {
        const ox_node *nd = g->nodes[i];
        if (!nd)
            continue;
        if (!o.include_constants && ox_node_is(nd, "Constant"))
            continue;
        if (o.born && o.born[i] == OX_MEMPLAN_UNMADE)
            continue;
        for (int j = 0; j < nd->n_outputs && st == OX_OK; j++) {
            const ox_value *v = nd->outputs[j];
            /* Constant subexpressions (ConstantOfShape weights, Identity of
             * an initializer) are weights: counted there, not here. */
            if (!plannable(v) || (!o.include_constants && ox_value_is_weight(v)))
                continue;
            int b = o.born && o.born[i] >= 0 && o.born[i] < i ? o.born[i] : i;
            st = push_slot(p, &cap, v, b, err);
        }
    }
    if (st != OX_OK) {
        ox_memplan_free(p);
        return st;
    }

    /* Index by value pointer; a value listed twice (a graph input that is
     * also produced, a node writing one name twice) keeps its first slot. */
    st = build_index(p, err);
    if (st != OX_OK) {
        ox_memplan_free(p);
        return st;
    }

    /* Lifetimes and sizes. */
    for (int i = 0; i < p->n_slots; i++) {
        ox_memplan_slot *s = &p->slots[i];
        const ox_value *v = s->value;
        for (int u = 0; u < v->n_uses; u++) {
            int t = use_step(g, v->uses[u].node);
            if (t == -2)
                t = n_nodes; /* unknown consumer: keep it alive */
            if (t > s->last)
                s->last = t;
            /* A read before the producer means the order is not
             * topological: reserve the bytes over both rather than plan
             * an overlap. */
            if (t < s->first)
                s->first = t;
        }
        if (v->is_output)
            s->last = n_nodes;
        int64_t b;
        if (ox_value_static_bytes(v, &b)) {
            s->nbytes = b;
            s->size = align_up(b, o.alignment);
        } else {
            s->nbytes = -1;
            s->size = -1;
        }
        if (s->size < 0) {
            s->size = -1;
            s->nbytes = -1;
            p->n_dynamic++;
        }
    }
    p->complete = p->n_dynamic == 0;

    /* Lower bound: the most aligned bytes alive at any one step. */
    int n_steps = n_nodes + 2;
    int64_t *delta = calloc((size_t)n_steps + 1, sizeof *delta);
    if (!delta) {
        ox_memplan_free(p);
        return ox_errorf(err, OX_ENOMEM, "out of memory in the memory plan");
    }
    for (int i = 0; i < p->n_slots; i++) {
        const ox_memplan_slot *s = &p->slots[i];
        if (s->size <= 0)
            continue;
        delta[s->first + 1] += s->size;
        delta[s->last + 2] -= s->size;
    }
    int64_t live = 0;
    for (int t = 0; t < n_steps; t++) {
        live += delta[t];
        if (live > p->lower_bound)
            p->lower_bound = live;
    }
    free(delta);

    st = place_greedy(p, n_steps, err);
    if (st != OX_OK) {
        ox_memplan_free(p);
        return st;
    }
    *out = p;
    return OX_OK;
}

bool ox_memplan_verify(const ox_memplan *p, ox_error *err)
{
    if (!p)
        return false;
    int n = p->n_slots;
    int n_steps = (p->graph ? p->graph->n_nodes : 0) + 2;
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        const ox_memplan_slot *s = &p->slots[i];
        if (s->size <= 0)
            continue;
        if (s->offset < 0 || s->offset + s->size > p->arena_bytes ||
            s->nbytes > s->size || s->first < -1 || s->last >= n_steps - 1 ||
            s->first > s->last) {
            ox_errorf(err, OX_ERANGE, "value '%s' does not fit the arena",
                      s->value && s->value->name ? s->value->name : "?");
            return false;
        }
        total += s->last - s->first + 1;
    }
    /* Per step, the live slots sorted by offset must not overlap: a sweep
     * over time, proportional to the sum of the lifetimes. */
    int64_t *start = calloc((size_t)n_steps + 1, sizeof *start);
    int *fill = calloc((size_t)n_steps + 1, sizeof *fill);
    key *live = malloc((size_t)(total ? total : 1) * sizeof *live);
    if (!start || !fill || !live) {
        free(start); free(fill); free(live);
        ox_errorf(err, OX_ENOMEM, "out of memory verifying the memory plan");
        return false;
    }
    for (int i = 0; i < n; i++) {
        const ox_memplan_slot *s = &p->slots[i];
        if (s->size > 0)
            for (int t = s->first + 1; t <= s->last + 1; t++)
                start[t + 1]++;
    }
    for (int t = 1; t <= n_steps; t++)
        start[t] += start[t - 1];
    for (int i = 0; i < n; i++) {
        const ox_memplan_slot *s = &p->slots[i];
        if (s->size <= 0)
            continue;
        for (int t = s->first + 1; t <= s->last + 1; t++) {
            key *k = &live[start[t] + fill[t]++];
            k->a = s->offset;
            k->b = s->size;
            k->id = i;
        }
    }
    bool ok = true;
    for (int t = 0; t < n_steps && ok; t++) {
        key *k = live + start[t];
        qsort(k, (size_t)fill[t], sizeof *k, cmp_key);
        int64_t end = 0;
        int end_id = -1;
        for (int j = 0; j < fill[t]; j++) {
            if (k[j].a < end) {
                const ox_memplan_slot *x = &p->slots[end_id], *y = &p->slots[k[j].id];
                ox_errorf(err, OX_ERANGE, "values '%s' and '%s' share bytes while both alive",
                          x->value && x->value->name ? x->value->name : "?",
                          y->value && y->value->name ? y->value->name : "?");
                ok = false;
                break;
            }
            if (k[j].a + k[j].b > end) {
                end = k[j].a + k[j].b;
                end_id = k[j].id;
            }
        }
    }
    free(start);
    free(fill);
    free(live);
    return ok;
}
