/* The pass registry (the families' tables in pipeline order) and the pass
 * manager: on/off per pass, a bounded fixed point, single steps, and a
 * report built by diffing snapshots of node ids and initializers around
 * each pass invocation, so passes need not account for their own edits. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "onnxscope/cost.h"
#include "onnxscope/infer.h"
#include "onnxscope/memplan.h"
#include "onnxscope/quantize.h"
#include "passes/pass_internal.h"

/* ---- registry ------------------------------------------------------------ */

static const ox_pass *reg_list[128];
static int reg_n;

static void reg_build(void)
{
    /* Order matters for a round: constants first so that folding sees
     * initializers, eliminations and fusions next, cleanup last. */
    const ox_pass *tables[] = {ox__passes_opset, /* opt-in: raise the opset first */
                               ox__passes_fold,         ox__passes_elim,
                               ox__passes_fuse,         ox__passes_fuse_reshape,
                               /* Transformer fusions before the Gemm ones:
                                * those fold GELU's 0.5 into the next
                                * MatMul's weights, breaking the pattern. */
                               ox__passes_fuse_norm,    ox__passes_fuse_gelu,
                               ox__passes_fuse_attn,    ox__passes_fuse_gemm,    ox__passes_fuse_conv,
                               ox__passes_fuse_act,
                               /* After the fusions: they match float MatMuls. */
                               ox__passes_quant,
                               /* Precision last: the fusions see float32, and
                                * so does quantize_dynamic when both are on
                                * (it quantizes float32 weights only); to_fp16
                                * converts what it left float and keeps its
                                * quantization ops in float32. */
                               ox__passes_to_fp16,
                               ox__passes_cleanup};
    int k = 0;
    for (size_t t = 0; t < sizeof tables / sizeof *tables; t++)
        for (const ox_pass *p = tables[t]; p->name && k < 128; p++)
            reg_list[k++] = p;
    reg_n = k;
}

/* Built once, thread-safely (the TUI runs the manager in a worker). */
static const ox_pass *const *registry(int *count)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, reg_build);
    *count = reg_n;
    return reg_list;
}

int ox_pass_count(void)
{
    int n;
    registry(&n);
    return n;
}

const ox_pass *ox_pass_at(int i)
{
    int n;
    const ox_pass *const *l = registry(&n);
    return i >= 0 && i < n ? l[i] : NULL;
}

const ox_pass *ox_pass_find(const char *name)
{
    int n;
    const ox_pass *const *l = registry(&n);
    for (int i = 0; name && i < n; i++)
        if (!strcmp(l[i]->name, name))
            return l[i];
    return NULL;
}

const char *ox_pass_category_name(ox_pass_category c)
{
    static const char *names[] = {"elimination", "folding", "fusion", "precision", "layout",
                                  "conversion"};
    return (unsigned)c < 6 ? names[c] : "?";
}

const char *ox_pass_target_name(ox_pass_target t)
{
    return t == OX_TARGET_ORT ? "ort" : "onnx";
}

const char *ox_pass_level_name(ox_pass_level l)
{
    return l == OX_LEVEL_BASIC ? "basic" : l == OX_LEVEL_EXTENDED ? "extended" : "all";
}

bool ox_pass_level_parse(const char *s, ox_pass_level *out)
{
    for (int l = OX_LEVEL_BASIC; s && l <= OX_LEVEL_ALL; l++)
        if (!strcmp(s, ox_pass_level_name((ox_pass_level)l))) {
            *out = (ox_pass_level)l;
            return true;
        }
    return false;
}

bool ox_pass_target_parse(const char *s, ox_pass_target *out)
{
    if (s && !strcmp(s, "onnx")) {
        *out = OX_TARGET_ONNX;
        return true;
    }
    if (s && !strcmp(s, "ort")) {
        *out = OX_TARGET_ORT;
        return true;
    }
    return false;
}

/* ---- manager ------------------------------------------------------------- */

struct ox_pass_manager {
    int n;
    const ox_pass **passes;
    bool *on;
    const ox_infer_opts *io;
    int64_t fold_limit;
    int64_t fold_room;    /* left of this run's total folding growth */
    int max_iter;
    ox_pass_target target;
    int last_rewrites;    /* of the last ox_pm_step, report or not */
    /* Options of individual passes (ox_pm_set_option), owned strings. */
    char *opt_keys[OX_PM_MAX_OPTIONS], *opt_vals[OX_PM_MAX_OPTIONS];
    int n_opts;
    ox_quant_opts quant;  /* quantize_dynamic's options */
};

ox_pass_manager *ox_pm_new(ox_pass_level level, ox_pass_target target)
{
    ox_pass_manager *pm = calloc(1, sizeof *pm);
    int n;
    const ox_pass *const *l = registry(&n);
    if (!pm)
        return NULL;
    pm->passes = calloc((size_t)n + 1, sizeof *pm->passes);
    pm->on = calloc((size_t)n + 1, sizeof *pm->on);
    if (!pm->passes || !pm->on) {
        ox_pm_free(pm);
        return NULL;
    }
    pm->n = n;
    for (int i = 0; i < n; i++) {
        pm->passes[i] = l[i];
        pm->on[i] = l[i]->level <= level && !l[i]->opt_in &&
                    (l[i]->target == OX_TARGET_ONNX || target == OX_TARGET_ORT);
    }
    pm->fold_limit = 1 << 20;
    ox_quant_opts_default(&pm->quant);
    pm->max_iter = 8;
    pm->target = target;
    return pm;
}

void ox_pm_free(ox_pass_manager *pm)
{
    if (!pm)
        return;
    free(pm->passes);
    free(pm->on);
    for (int i = 0; i < pm->n_opts; i++) {
        free(pm->opt_keys[i]);
        free(pm->opt_vals[i]);
    }
    free(pm);
}

ox_status ox_pm_set_option(ox_pass_manager *pm, const char *key, const char *value,
                           ox_error *err)
{
    if (!pm || !key || !*key)
        return ox_errorf(err, OX_EINVAL, "pass option: no key");
    int i = 0;
    while (i < pm->n_opts && strcmp(pm->opt_keys[i], key))
        i++;
    if (i == pm->n_opts && pm->n_opts == OX_PM_MAX_OPTIONS)
        return ox_errorf(err, OX_EINVAL, "pass option '%s': too many options", key);
    char *v = value ? ox_strdup(value) : NULL, *k = NULL;
    if (i == pm->n_opts && !(k = ox_strdup(key))) {
        free(v);
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    }
    if (value && !v) {
        free(k);
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    }
    if (i == pm->n_opts) {
        pm->opt_keys[i] = k;
        pm->opt_vals[i] = NULL;
        pm->n_opts++;
    }
    free(pm->opt_vals[i]);
    pm->opt_vals[i] = v;
    return OX_OK;
}

const char *ox_pm_option(const ox_pass_manager *pm, const char *key)
{
    for (int i = 0; pm && key && i < pm->n_opts; i++)
        if (!strcmp(pm->opt_keys[i], key))
            return pm->opt_vals[i];
    return NULL;
}

int ox_pm_count(const ox_pass_manager *pm)
{
    return pm ? pm->n : 0;
}

const ox_pass *ox_pm_pass(const ox_pass_manager *pm, int i)
{
    return pm && i >= 0 && i < pm->n ? pm->passes[i] : NULL;
}

bool ox_pm_enabled(const ox_pass_manager *pm, int i)
{
    return pm && i >= 0 && i < pm->n && pm->on[i];
}

void ox_pm_enable(ox_pass_manager *pm, int i, bool on)
{
    if (pm && i >= 0 && i < pm->n)
        pm->on[i] = on;
}

int ox_pm_add_pass(ox_pass_manager *pm, const ox_pass *p, int pos)
{
    if (!pm || !p || !p->name || !p->run)
        return -1;
    for (int i = 0; i < pm->n; i++)
        if (!strcmp(pm->passes[i]->name, p->name))
            return -1;
    const ox_pass **np = realloc(pm->passes, ((size_t)pm->n + 2) * sizeof *np);
    if (!np)
        return -1;
    pm->passes = np;
    bool *no = realloc(pm->on, ((size_t)pm->n + 2) * sizeof *no);
    if (!no)
        return -1;
    pm->on = no;
    if (pos < 0 || pos > pm->n)
        pos = pm->n;
    memmove(&pm->passes[pos + 1], &pm->passes[pos], (size_t)(pm->n - pos) * sizeof *np);
    memmove(&pm->on[pos + 1], &pm->on[pos], (size_t)(pm->n - pos) * sizeof *no);
    pm->passes[pos] = p;
    pm->on[pos] = true;
    pm->n++;
    return pos;
}

bool ox_pass_ctx_may_rewrite(const ox_pass_ctx *c)
{
    return c && ox__pass_may(c);
}

void ox_pass_ctx_rewrote(ox_pass_ctx *c)
{
    if (c)
        ox__pass_did(c);
}

/* Applies fn to each pass named in the comma-separated list. */
static ox_status for_list(ox_pass_manager *pm, const char *list, bool on, ox_error *err)
{
    const char *p = list ? list : "";
    while (*p) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        bool found = false;
        for (int i = 0; i < pm->n; i++)
            if (strlen(pm->passes[i]->name) == len && !strncmp(pm->passes[i]->name, p, len)) {
                /* --target onnx promises standard ops whatever is named. */
                if (on && pm->passes[i]->target == OX_TARGET_ORT && pm->target != OX_TARGET_ORT)
                    return ox_errorf(err, OX_EINVAL,
                                     "pass '%.*s' emits com.microsoft ops: it needs --target ort",
                                     (int)len, p);
                pm->on[i] = on;
                found = true;
            }
        /* The matrix's precision aliases are not pass names: say which pass. */
        const char *alias = len == 4 && !strncmp(p, "fp16", 4)   ? "to_fp16"
                            : len == 4 && !strncmp(p, "int8", 4) ? "quantize_dynamic"
                                                                 : NULL;
        if (!found && alias)
            return ox_errorf(err, OX_EINVAL, "unknown pass '%.*s' (`matrix --strategies %.*s` "
                             "is the pass %s: name that)", (int)len, p, (int)len, p, alias);
        if (!found && len)
            return ox_errorf(err, OX_EINVAL, "unknown pass '%.*s' (see `onnxscope passes`)",
                             (int)len, p);
        p += len + (e ? 1 : 0);
    }
    return OX_OK;
}

ox_status ox_pm_only(ox_pass_manager *pm, const char *list, ox_error *err)
{
    if (!pm)
        return ox_errorf(err, OX_EINVAL, "no pass manager");
    bool *save = malloc((size_t)pm->n + 1);
    if (!save)
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    memcpy(save, pm->on, (size_t)pm->n);
    /* "+a,b": those in addition to the level's set (opt-in passes). */
    bool add = list && list[0] == '+';
    if (!add)
        memset(pm->on, 0, (size_t)pm->n * sizeof *pm->on);
    ox_status st = for_list(pm, add ? list + 1 : list, true, err);
    if (st)
        memcpy(pm->on, save, (size_t)pm->n);
    free(save);
    return st;
}

ox_status ox_pm_skip(ox_pass_manager *pm, const char *list, ox_error *err)
{
    if (!pm)
        return ox_errorf(err, OX_EINVAL, "no pass manager");
    return for_list(pm, list, false, err);
}

void ox_pm_set_infer_opts(ox_pass_manager *pm, const ox_infer_opts *io)
{
    if (pm)
        pm->io = io;
}

void ox_pm_set_fold_limit(ox_pass_manager *pm, int64_t bytes)
{
    if (pm)
        pm->fold_limit = bytes < 0 ? 0 : bytes;
}

void ox_pm_set_quant_opts(ox_pass_manager *pm, const ox_quant_opts *o)
{
    if (!pm)
        return;
    if (o)
        pm->quant = *o;
    else
        ox_quant_opts_default(&pm->quant);
}

void ox_pm_set_max_iterations(ox_pass_manager *pm, int n)
{
    if (pm)
        pm->max_iter = n < 1 ? 1 : n;
}

/* ---- snapshots for the report ------------------------------------------- */

enum { COST_NONE = 0, COST_KNOWN, COST_UNKNOWN };

typedef struct snap_node {
    int id;
    int top;            /* id of the main-graph node holding it (its own id
                         * for a main-graph node) */
    const char *op;     /* interned (see intern) */
    uint64_t sig;       /* inputs, outputs and attributes */
    const ox_node *node;  /* valid while this is the model's current snapshot */
    /* Main-graph nodes: ox_node_cost (bodies included), filled lazily: the
     * unchanged nodes of a new snapshot copy it from the previous one. */
    int64_t macs, flops;
    uint8_t cost;       /* COST_* */
} snap_node;

typedef struct snap {
    snap_node *nodes;
    int n, cap;
    int inits;
    int64_t weight_bytes;  /* initializers + weights held by nodes (Constant) */
    int64_t peak;          /* arena of the main graph's memory plan */
    uint8_t peak_state;    /* COST_* */
    const char *op_constant, *op_cos;  /* interned "Constant", "ConstantOfShape" */
    bool oom;
} snap;
static const char *intern_locked(const char *s)
{
    static char **tab;
    static int n, cap;
    for (int i = 0; i < n; i++)
        if (!strcmp(tab[i], s))
            return tab[i];
    if (n == cap) {
        int nc = cap ? cap * 2 : 64;
        char **t = realloc(tab, (size_t)nc * sizeof *t);
        if (!t)
            return "?";
        tab = t;
        cap = nc;
    }
    char *d = ox_strdup(s);
    if (!d)
        return "?";
    tab[n++] = d;
    return d;
}

/* Op names live for the process (a few dozen strings), so snapshots can
 * point at them after the nodes are freed. */
static const char *intern(const char *s)
{
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&mu);
    const char *r = intern_locked(s);
    pthread_mutex_unlock(&mu);
    return r;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0x100000001b3ull;
}

static uint64_t node_sig(const ox_node *n)
{
    uint64_t h = (uint64_t)n->n_inputs;
    for (int i = 0; i < n->n_inputs; i++)
        h = mix(h, (uint64_t)(uintptr_t)n->inputs[i]);
    for (int i = 0; i < n->n_outputs; i++)
        h = mix(h, (uint64_t)(uintptr_t)n->outputs[i]);
    for (int i = 0; i < n->n_attrs; i++) {
        const ox_attr *a = &n->attrs[i];
        h = mix(h, (uint64_t)a->type);
        h = mix(h, (uint64_t)a->i);
        h = mix(h, (uint64_t)a->n);
        for (int k = 0; a->type == OX_ATTR_INTS && k < a->n; k++)
            h = mix(h, (uint64_t)a->ints[k]);
    }
    return h;
}

/* Id of the main-graph node whose subgraphs (at any depth) hold g, or -1
 * when g is the main graph. */
static int top_id(const ox_graph *g)
{
    const ox_node *o = NULL;
    for (int guard = 0; g && g->owner && guard < 256; guard++) {
        o = g->owner;
        g = o->graph;
    }
    return o ? o->id : -1;
}

static void snap_graph(ox_graph *g, void *ctx)
{
    snap *s = ctx;
    int top = top_id(g);
    for (int i = 0; i < g->n_nodes; i++) {
        if (s->n == s->cap) {
            int nc = s->cap ? s->cap * 2 : 256;
            snap_node *t = realloc(s->nodes, (size_t)nc * sizeof *t);
            if (!t) {
                s->oom = true;
                return;
            }
            s->nodes = t;
            s->cap = nc;
        }
        const ox_node *n = g->nodes[i];
        const char *op = intern(n->op_type ? n->op_type : "");
        s->nodes[s->n++] = (snap_node){.id = n->id, .top = top < 0 ? n->id : top, .op = op,
                                       .sig = node_sig(n), .node = n};
        /* Interned: a pointer compare picks the nodes that can hold weights. */
        if (op == s->op_constant || op == s->op_cos)
            s->weight_bytes += ox_node_weight_bytes(n);
    }
    for (int i = 0; i < g->n_values; i++)
        if (g->values[i]->init) {
            s->inits++;
            s->weight_bytes += (int64_t)g->values[i]->init->nbytes;
        }
}

static int cmp_snap(const void *a, const void *b)
{
    const snap_node *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

static void take_snap(ox_model *m, snap *s)
{
    s->n = 0;
    s->inits = 0;
    s->weight_bytes = 0;
    s->peak_state = COST_NONE;
    s->op_constant = intern("Constant");
    s->op_cos = intern("ConstantOfShape");
    ox_graph_visit(m->graph, snap_graph, s);
    if (s->n > 1)
        qsort(s->nodes, (size_t)s->n, sizeof *s->nodes, cmp_snap);
}

/* Appends to a report list; capacity doubles at powers of two (the lists
 * carry no capacity field), so a run removing a million nodes does not
 * reallocate a million times. */
static bool push_id(int **v, int *n, int id)
{
    if (*n == 0 || (*n >= 16 && !(*n & (*n - 1)))) {
        size_t cap = *n < 16 ? 16 : (size_t)*n * 2;
        int *t = realloc(*v, cap * sizeof **v);
        if (!t)
            return false;
        *v = t;
    }
    (*v)[(*n)++] = id;
    return true;
}

static void op_delta(ox_pass_stat *st, const char *op, int removed, int added)
{
    for (int i = 0; i < st->n_ops; i++)
        if (!strcmp(st->ops[i].op_type, op)) {
            st->ops[i].removed += removed;
            st->ops[i].added += added;
            return;
        }
    ox_pass_op_delta *t = realloc(st->ops, ((size_t)st->n_ops + 1) * sizeof *t);
    if (!t)
        return;
    st->ops = t;
    st->ops[st->n_ops++] = (ox_pass_op_delta){ox_strdup(op), removed, added};
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static void uniq(int *v, int *n)
{
    if (*n < 2)
        return;
    qsort(v, (size_t)*n, sizeof *v, cmp_int);
    int k = 1;
    for (int i = 1; i < *n; i++)
        if (v[i] != v[k - 1])
            v[k++] = v[i];
    *n = k;
}

/* ---- cost deltas --------------------------------------------------------- */

static void cost_of(snap_node *e)
{
    ox_cost c;
    ox_node_cost(e->node, &c);
    e->macs = c.macs;
    e->flops = c.flops;
    /* A larger-branch bound is not a figure a difference can be taken of. */
    e->cost = c.known && !c.upper ? COST_KNOWN : COST_UNKNOWN;
}

static void peak_of(ox_model *m, snap *s)
{
    ox_memplan *p = NULL;
    ox_error e = {0};
    s->peak_state = COST_UNKNOWN;
    if (ox_memplan_build(m->graph, NULL, &p, &e) == OX_OK && p) {
        s->peak = p->arena_bytes;
        s->peak_state = p->complete ? COST_KNOWN : COST_UNKNOWN;
    }
    ox_memplan_free(p);
}

/* Costs what s (the model's current snapshot) does not know yet: every
 * main-graph node the first time, later only those still unknown (a fresh
 * inference may have typed them). */
static void refresh_costs(ox_model *m, snap *s)
{
    for (int i = 0; i < s->n; i++)
        if (s->nodes[i].top == s->nodes[i].id && s->nodes[i].cost != COST_KNOWN)
            cost_of(&s->nodes[i]);
    if (s->peak_state != COST_KNOWN)
        peak_of(m, s);
}

typedef struct delta {
    int64_t macs, flops;
    bool known;
    int *dirty;         /* main-graph nodes whose bodies changed */
    int n_dirty;
} delta;

static int64_t sat(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        return b > 0 ? INT64_MAX : INT64_MIN;
    return r;
}

static void delta_add(delta *d, const snap_node *e, int sign)
{
    if (e->cost != COST_KNOWN) {
        d->known = false;
        return;
    }
    d->macs = sat(d->macs, sign * e->macs);
    d->flops = sat(d->flops, sign * e->flops);
}

static const snap_node *snap_find(const snap *s, int id)
{
    snap_node key = {.id = id};
    return s->n ? bsearch(&key, s->nodes, (size_t)s->n, sizeof key, cmp_snap) : NULL;
}

/* The cost change of one invocation: b's main-graph nodes that are new or
 * edited get costed (the others copy a's figure), removed ones subtract
 * a's, and a main-graph node whose subgraph changed is costed again. */
static void cost_change(snap_node *ea, snap_node *eb, delta *d)
{
    const snap_node *e = ea ? ea : eb;
    if (e->top != e->id) {
        push_id(&d->dirty, &d->n_dirty, e->top);
        if (eb && ea && eb->top != ea->top)
            push_id(&d->dirty, &d->n_dirty, eb->top);
        return;
    }
    if (eb) {
        cost_of(eb);
        delta_add(d, eb, 1);
    }
    if (ea)
        delta_add(d, ea, -1);
}

/* Adds the difference between snapshots a (before) and b (after) of m. */
static void diff_into(ox_pass_report *r, ox_pass_stat *st, const snap *a, snap *b,
                      ox_model *m)
{
    delta d = {.known = true};
    int i = 0, j = 0;
    while (i < a->n || j < b->n) {
        if (j >= b->n || (i < a->n && a->nodes[i].id < b->nodes[j].id)) {
            st->nodes_removed++;
            op_delta(st, a->nodes[i].op, 1, 0);
            push_id(&r->removed_ids, &r->n_removed_ids, a->nodes[i].id);
            cost_change(&a->nodes[i], NULL, &d);
            i++;
        } else if (i >= a->n || b->nodes[j].id < a->nodes[i].id) {
            st->nodes_added++;
            op_delta(st, b->nodes[j].op, 0, 1);
            push_id(&r->touched, &r->n_touched, b->nodes[j].id);
            cost_change(NULL, &b->nodes[j], &d);
            j++;
        } else {
            if (a->nodes[i].sig != b->nodes[j].sig) {
                st->nodes_replaced++;
                push_id(&r->touched, &r->n_touched, b->nodes[j].id);
                cost_change(&a->nodes[i], &b->nodes[j], &d);
            } else {
                b->nodes[j].macs = a->nodes[i].macs;
                b->nodes[j].flops = a->nodes[i].flops;
                b->nodes[j].cost = a->nodes[i].cost;
            }
            i++;
            j++;
        }
    }
    uniq(d.dirty, &d.n_dirty);
    for (int k = 0; k < d.n_dirty; k++) {
        const snap_node *ea = snap_find(a, d.dirty[k]);
        snap_node *eb = (snap_node *)snap_find(b, d.dirty[k]);
        /* New, removed or edited itself: already counted above. */
        if (ea && eb && ea->sig == eb->sig) {
            cost_of(eb);
            delta_add(&d, eb, 1);
            delta_add(&d, ea, -1);
        }
    }
    free(d.dirty);
    st->macs_delta = sat(st->macs_delta, d.macs);
    st->flops_delta = sat(st->flops_delta, d.flops);
    st->cost_known = st->cost_known && d.known;
    st->weight_bytes_delta += b->weight_bytes - a->weight_bytes;
    peak_of(m, b);
    if (a->peak_state == COST_KNOWN && b->peak_state == COST_KNOWN)
        st->peak_delta += b->peak - a->peak;
    else
        st->peak_known = false;
    if (b->inits < a->inits)
        st->inits_removed += a->inits - b->inits;
    else
        st->inits_added += b->inits - a->inits;
    /* Weights as the cost model counts them (Constant nodes included), so
     * that moving data between Constant nodes and initializers saves 0. */
    st->bytes_saved += a->weight_bytes - b->weight_bytes;
}

static ox_pass_stat *stat_for(ox_pass_report *r, const ox_pass *p)
{
    for (int i = 0; i < r->n_passes; i++)
        if (r->passes[i].name == p->name)
            return &r->passes[i];
    ox_pass_stat *t = realloc(r->passes, ((size_t)r->n_passes + 1) * sizeof *t);
    if (!t)
        return NULL;
    r->passes = t;
    memset(&t[r->n_passes], 0, sizeof *t);
    t[r->n_passes].name = p->name;
    t[r->n_passes].category = p->category;
    t[r->n_passes].cost_known = true;
    t[r->n_passes].peak_known = true;
    return &t[r->n_passes++];
}

void ox_pass_report_free(ox_pass_report *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->n_passes; i++) {
        for (int k = 0; k < r->passes[i].n_ops; k++)
            free(r->passes[i].ops[k].op_type);
        free(r->passes[i].ops);
        free(r->passes[i].note);
    }
    ox__quant_entries_free(r->quant, r->n_quant);
    free(r->passes);
    free(r->touched);
    free(r->removed_ids);
    memset(r, 0, sizeof *r);
}

const ox_pass_stat *ox_pass_report_find(const ox_pass_report *r, const char *name)
{
    for (int i = 0; r && name && i < r->n_passes; i++)
        if (!strcmp(r->passes[i].name, name))
            return &r->passes[i];
    return NULL;
}

/* ---- running ------------------------------------------------------------- */

/* Collects the graphs of the model innermost first, so that a pass that
 * inlines or drops a subgraph in the parent runs after its children. */
typedef struct glist {
    ox_graph **v;
    int n, cap;
    bool oom;
} glist;

static void collect(ox_graph *g, void *ctx)
{
    glist *l = ctx;
    if (l->n == l->cap) {
        int nc = l->cap ? l->cap * 2 : 16;
        ox_graph **t = realloc(l->v, (size_t)nc * sizeof *t);
        if (!t) {
            l->oom = true;
            return;
        }
        l->v = t;
        l->cap = nc;
    }
    l->v[l->n++] = g;
}

/* Sorts every graph again (the passes append new nodes at the end). */
static ox_status sort_all(ox_model *m, ox_error *err)
{
    glist l = {0};
    ox_graph_visit(m->graph, collect, &l);
    ox_status st = l.oom ? ox_errorf(err, OX_ENOMEM, "out of memory") : OX_OK;
    for (int i = 0; !st && i < l.n; i++)
        st = ox_graph_toposort(l.v[i], err);
    free(l.v);
    return st;
}

/* Types the outputs of the nodes a pass created (ids from `from` on) that
 * it left untyped, from their inputs (ox_infer_node), parents first: the
 * later passes of the round and the report's costs then see them without
 * a whole inference per pass (the next round still starts with one). */
static void infer_new_graph(ox_graph *g, void *ctx)
{
    int from = *(const int *)ctx;
    for (int i = 0; i < g->n_nodes; i++) {
        ox_node *n = g->nodes[i];
        if (n->id < from)
            continue;
        bool untyped = false;
        for (int k = 0; k < n->n_outputs; k++) {
            const ox_value *v = n->outputs[k];
            untyped |= v && (!v->type || v->type->kind == OX_TYPE_NONE);
        }
        if (untyped) {
            ox_error e = {0};
            ox_infer_node(n, &e);   /* what it cannot type stays untyped */
        }
    }
}

static ox_status run_pass(ox_pass_manager *pm, ox_model *m, const ox_pass *p, int budget,
                          ox_pass_report *rep, int *rewrites, char **note, ox_error *err)
{
    int first_new = m->next_node_id;
    ox_pass_ctx c = {.m = m, .io = pm->io, .pm = pm, .target = pm->target,
                     .fold_limit = pm->fold_limit, .fold_room = &pm->fold_room, .budget = budget,
                     .quant = &pm->quant, .rep = rep};
    glist l = {0};
    ox_graph_visit(m->graph, collect, &l);
    if (l.oom) {
        free(l.v);
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    }
    ox_status st = OX_OK;
    /* What depends on an overridable initializer, for this graph as it is
     * now (ox_value_constant: the passes never take its default). */
    ox_model_mark_override_deps(m);
    /* Parents come first in the visit order: walk it backwards. A parent
     * pass may free subgraphs listed before it, never those after. */
    for (int i = l.n - 1; i >= 0 && !st && ox__pass_may(&c); i--) {
        st = p->run(&c, l.v[i], err);
        ox__pass_flush(&c, l.v[i]);
    }
    ox__pass_ctx_free(&c);
    free(l.v);
    *note = c.note;
    if (!st)
        st = ox_model_check_oom(m, p->name, err);
    if (!st && c.rewrites) {
        ox_graph_relink(m->graph);
        st = sort_all(m, err);
    }
    if (!st && c.rewrites)
        ox_graph_visit(m->graph, infer_new_graph, &first_new);
    *rewrites = c.rewrites;
    return st;
}

static void add_init_bytes(ox_graph *g, void *ctx)
{
    int64_t *sum = ctx;
    for (int i = 0; i < g->n_values; i++)
        if (g->values[i]->init)
            *sum += (int64_t)g->values[i]->init->nbytes;
}

/* A run's folding may add 16 fold limits, or as much as the weights
 * already weigh when that is more (dequantizing folds). */
static void reset_fold_room(ox_pass_manager *pm, ox_model *m)
{
    int64_t w = 0;
    ox_graph_visit(m->graph, add_init_bytes, &w);
    int64_t lim = pm->fold_limit > INT64_MAX / 16 ? INT64_MAX : pm->fold_limit * 16;
    pm->fold_room = w > lim ? w : lim;
}

static void fill_declared(ox_graph *g, void *ctx)
{
    (void)ctx;
    for (int i = 0; i < g->n_values; i++) {
        ox_value *v = g->values[i];
        if ((v->is_output || v->is_input) && v->decl && v->decl->kind != OX_TYPE_NONE &&
            (!v->type || v->type->kind == OX_TYPE_NONE)) {
            ox_type *t = ox_type_clone(v->decl);
            if (t) {
                ox_type_free(v->type);
                v->type = t;
            }
        }
    }
}

static ox_status infer(ox_pass_manager *pm, ox_model *m, ox_error *err)
{
    ox_infer_opts o = {0};
    if (pm->io)
        o = *pm->io;
    o.reset = true;
    o.strict = false;
    o.stats = NULL;
    ox_error ierr = {0};
    /* Reset forgets the types of node outputs, graph outputs included; an
     * op that inference does not know would leave them untyped, and later
     * inference and passes read them: put back what the file declared, or
     * for outputs of a model built in memory (no declaration), what they
     * had before. */
    ox_graph *g = m->graph;
    ox_type **keep = calloc((size_t)g->n_outputs + 1, sizeof *keep);
    for (int i = 0; keep && i < g->n_outputs; i++)
        keep[i] = g->outputs[i]->type && !g->outputs[i]->decl
                      ? ox_type_clone(g->outputs[i]->type) : NULL;
    ox_status st = ox_infer_model(m, &o, &ierr);
    for (int i = 0; keep && i < g->n_outputs; i++) {
        ox_value *v = g->outputs[i];
        if (keep[i] && (!v->type || v->type->kind == OX_TYPE_NONE)) {
            ox_type_free(v->type);
            v->type = keep[i];
            keep[i] = NULL;
        }
        ox_type_free(keep[i]);
    }
    free(keep);
    ox_graph_visit(m->graph, fill_declared, NULL);
    /* An override naming no input is the caller's mistake; other trouble
     * only makes the passes that need types do less. */
    if (st == OX_EINVAL)
        return ox_errorf(err, st, "%s", ierr.msg);
    return OX_OK;
}

/* *a is a snapshot of the model as it is now (with a report); it is kept
 * so: a pass that rewrote nothing needs no new one, so a run takes one
 * snapshot per rewriting pass, not two per pass. */
static ox_status invoke(ox_pass_manager *pm, ox_model *m, const ox_pass *p, int budget,
                        ox_pass_report *rep, snap *a, snap *b, int *rewrites, ox_error *err)
{
    char *note = NULL;
    ox_status st = run_pass(pm, m, p, budget, rep, rewrites, &note, err);
    if (rep) {
        ox_pass_stat *s = stat_for(rep, p);
        if (s) {
            s->runs++;
            s->rewrites += *rewrites;
            if (note) {
                free(s->note);
                s->note = note;
                note = NULL;
            }
        }
        if (*rewrites) {
            take_snap(m, b);
            if (s)
                diff_into(rep, s, a, b, m);
            snap t = *a;
            *a = *b;
            *b = t;
        }
    }
    free(note);
    return st;
}

/* b: a snapshot of the model as it is now. */
static void finish(ox_pass_report *rep, snap *b)
{
    if (!rep)
        return;
    rep->nodes_after = b->n;
    rep->init_bytes_after = b->weight_bytes;
    /* A node added then removed in the same run is neither. */
    uniq(rep->touched, &rep->n_touched);
    uniq(rep->removed_ids, &rep->n_removed_ids);
    int k = 0;
    for (int i = 0; i < rep->n_touched; i++) {
        snap_node key = {.id = rep->touched[i]};
        if (b->n && bsearch(&key, b->nodes, (size_t)b->n, sizeof key, cmp_snap))
            rep->touched[k++] = rep->touched[i];
    }
    rep->n_touched = k;
}

/* A value_info entry needs a type: drop the listing of values that the
 * final inference left untyped (their producer may have changed) and that
 * the file did not type either. */
static void drop_untyped_info(ox_graph *g, void *ctx)
{
    (void)ctx;
    for (int i = 0; i < g->n_values; i++) {
        ox_value *v = g->values[i];
        if (v->has_value_info && (!v->type || v->type->kind == OX_TYPE_NONE) &&
            (!v->decl || v->decl->kind == OX_TYPE_NONE))
            v->has_value_info = false;
    }
}

ox_status ox__pm_drive(ox_pass_manager *pm, ox_model *m, ox_pass_report *rep,
                       const ox__pm_hook *h, bool *stopped, ox_error *err)
{
    if (stopped)
        *stopped = false;
    if (!pm || !m || !m->graph)
        return ox_errorf(err, OX_EINVAL, "no model");
    if (m->oom)
        return ox_model_check_oom(m, "optimize", err);
    snap a = {0}, b = {0};
    ox_status st = OX_OK;
    bool stop = false;
    int inv = 0;
    reset_fold_room(pm, m);
    if (rep) {
        take_snap(m, &a);
        rep->nodes_before = a.n;
        rep->init_bytes_before = a.weight_bytes;
    }
    for (int it = 0; it < pm->max_iter && !st && !stop; it++) {
        st = infer(pm, m, err);
        if (st)
            break;
        if (rep) {
            rep->iterations++;
            refresh_costs(m, &a);
        }
        int total = 0;
        for (int i = 0; i < pm->n && !st && !stop; i++) {
            if (!pm->on[i])
                continue;
            if (h && h->stop_before >= 0 && inv >= h->stop_before) {
                stop = true;
                break;
            }
            int rw = 0;
            st = invoke(pm, m, pm->passes[i], -1, rep, &a, &b, &rw, err);
            total += rw;
            if (!st && h && h->after && h->after(h->ctx, m, i, it, inv, rw))
                stop = true;
            inv++;
        }
        if (!total)
            break;
    }
    if (!st && !stop)
        st = infer(pm, m, err);
    if (!stop)
        ox_graph_visit(m->graph, drop_untyped_info, NULL);
    if (stopped)
        *stopped = stop;
    finish(rep, &a);
    free(a.nodes);
    free(b.nodes);
    return st;
}

ox_status ox_pm_run(ox_pass_manager *pm, ox_model *m, ox_pass_report *rep, ox_error *err)
{
    return ox__pm_drive(pm, m, rep, NULL, NULL, err);
}

typedef struct run_cb {
    ox_pm_pass_fn fn;
    void *ctx;
} run_cb;

static bool run_cb_after(void *ctx, ox_model *m, int pass, int round, int inv, int rewrites)
{
    run_cb *c = ctx;
    (void)m;
    (void)inv;
    (void)rewrites;
    return !c->fn(c->ctx, pass, round);
}

ox_status ox_pm_run_cb(ox_pass_manager *pm, ox_model *m, ox_pass_report *rep,
                       ox_pm_pass_fn on_pass, void *ctx, ox_error *err)
{
    if (!on_pass)
        return ox_pm_run(pm, m, rep, err);
    run_cb c = {on_pass, ctx};
    ox__pm_hook h = {.after = run_cb_after, .stop_before = -1, .ctx = &c};
    bool stopped = false;
    ox_status st = ox__pm_drive(pm, m, rep, &h, &stopped, err);
    if (st == OX_OK && stopped)
        return ox_errorf(err, OX_ECANCELLED, "cancelled");
    return st;
}

ox_status ox__pm_invoke(ox_pass_manager *pm, ox_model *m, int i, int max_rewrites,
                        ox_pass_report *rep, int *rewrites, ox_error *err)
{
    *rewrites = 0;
    if (!pm || !m || !m->graph || i < 0 || i >= pm->n)
        return ox_errorf(err, OX_EINVAL, "no such pass");
    const ox_pass *p = pm->passes[i];
    snap a = {0}, b = {0};
    if (rep) {
        take_snap(m, &a);
        refresh_costs(m, &a);
        rep->nodes_before = a.n;
        rep->init_bytes_before = a.weight_bytes;
    }
    int budget = max_rewrites > 0 && p->single_rewrite ? max_rewrites : -1;
    ox_status st = invoke(pm, m, p, budget, rep, &a, &b, rewrites, err);
    finish(rep, &a);
    free(a.nodes);
    free(b.nodes);
    return st;
}

ox_status ox_pm_step(ox_pass_manager *pm, ox_model *m, int i, int max_rewrites,
                     ox_pass_report *rep, ox_error *err)
{
    if (pm)
        pm->last_rewrites = 0;
    if (!pm || !m || !m->graph || i < 0 || i >= pm->n)
        return ox_errorf(err, OX_EINVAL, "no such pass");
    if (m->oom)
        return ox_model_check_oom(m, "optimize", err);
    const ox_pass *p = pm->passes[i];
    snap a = {0}, b = {0};
    int rw = 0;
    reset_fold_room(pm, m);
    ox_status st = infer(pm, m, err);
    if (rep) {
        take_snap(m, &a);
        refresh_costs(m, &a);
    }
    if (!st) {
        if (rep) {
            rep->nodes_before = a.n;
            rep->init_bytes_before = a.weight_bytes;
            rep->iterations = 1;
        }
        int budget = max_rewrites > 0 && p->single_rewrite ? max_rewrites : -1;
        st = invoke(pm, m, p, budget, rep, &a, &b, &rw, err);
    }
    if (!st && rw)
        st = infer(pm, m, err);
    pm->last_rewrites = rw;
    ox_graph_visit(m->graph, drop_untyped_info, NULL);
    finish(rep, &a);
    free(a.nodes);
    free(b.nodes);
    return st;
}

int ox_pm_last_rewrites(const ox_pass_manager *pm)
{
    return pm ? pm->last_rewrites : 0;
}
