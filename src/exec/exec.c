/* The executor core: plans a graph (topological order, a kernel per node,
 * value slots with liveness so buffers are released after their last use)
 * and runs it in frames, one per graph invocation, chained to the frame of
 * the enclosing graph so subgraphs (If/Loop/Scan bodies) see outer values.
 * Main-graph activations go to a planned arena when shapes allow (arena.c,
 * docs/EXECUTOR.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "onnxscope/exec.h"
#include "onnxscope/memplan.h"
#include "onnxscope/ops.h"
#include "onnxscope/profile.h"
#include "arena.h"
#include "dnnl_backend.h"
#include "nhwc_kernels.h"
#include "ew_fuse.h"
#include "gelu_chain.h"
#include "plan_check.h"
#include "cuda/place.h"
#include "cuda/runtime.h"
#include "core/ptrmap.h"
#include "env_flag.h"

/* ---- pointer -> index map (plan-time lookups only) ----------------------- */

/* core/ptrmap.h holding index + 1, so that NULL means absent. */
typedef ox_ptrmap pmap;

static bool pmap_put(pmap *m, const void *k, int v)
{
    return ox_ptrmap_put(m, k, (void *)(intptr_t)(v + 1));
}

static int pmap_get(const pmap *m, const void *k)
{
    return (int)(intptr_t)ox_ptrmap_get(m, k) - 1;
}

static void pmap_free(pmap *m)
{
    ox_ptrmap_free(m);
}

/* ---- plans ------------------------------------------------------------- */

/* Where a value lives at run time: `depth` frames up the scope chain, in
 * `slot` of that frame. depth -1 means "omitted" (optional input). */
typedef struct slot_ref {
    int depth;
    int slot;
} slot_ref;

typedef struct plan_node {
    const ox_node *node;
    ox_kernel_fn fn;
    int64_t opset;
    int n_in, n_out;
    slot_ref *in;
    int *out;             /* slot in this frame, -1 for an omitted output */
    bool *out_needed;     /* consumed later or a graph output */
    int *release;         /* slots whose last use is this node */
    int n_release;
    /* oneDNN runs this node (dnnl_backend.h); when it fused the activation
     * node act_k as a post-op, that node is `skip`: it only hands its
     * input's value on to its output slot. */
    ox_dnnl_node *dnnl;
    int act_k;            /* -1: none */
    bool skip;
    ox_kernel_state *state;  /* the kernel's cache (ox_kernel_ctx.state) */
    /* Our channels-last kernel takes this node when its inputs arrive NHWC
     * (plan_nhwc_ops; nhwc_kernels.h). */
    ox_nhwc_kind nhwc_kind;
    /* Computed once at plan time (all inputs constant): its outputs are
     * plan constants and the node never runs. */
    bool folded;
    /* A Conv's plan-time epilogue chain (BatchNormalization folded, residual
     * sum, activation; see "plan-time Conv epilogues" below), or NULL. A skip
     * node hands on its input skip_in (a residual Add's carried operand). */
    struct conv_chain *chain;
    int skip_in;
    /* Part of a chain a later node computes in one pass (plan_gelu_chains):
     * never runs, its outputs stay empty. */
    bool fused_away;
    /* The kernel writes every element of its outputs (writes_every_element):
     * their arena slots are not zeroed first. */
    bool writes_all;
    /* Lazy channel Concat (plan_lazy_concat): on the Concat, the last plan
     * index through which its parts must stay intact (0: not lazy); on a
     * reader of its output, 1 + the Concat's plan index (0: none). */
    int lazy_last, cat_of;
    int64_t lazy_conv_m;   /* the Concat's Conv readers' largest output channels */
    /* The root of an elementwise group (plan_ew_fuse): its inputs are the
     * group's leaves and it computes the whole group in one pass. */
    struct ox_ew_prog *ew;
} plan_node;

typedef struct ox_plan {
    const ox_graph *graph;
    int n_slots;
    const ox_value **slot_value;
    ox_rval **consts;     /* initializer values, owned by the plan */
    pmap slots;           /* ox_value* -> slot */
    int n_nodes;
    plan_node *nodes;
    int n_inputs;
    int *in_slots;        /* graph inputs */
    int n_outputs;
    slot_ref *out_refs;   /* graph outputs */
    int n_folded;         /* nodes folded at plan time */
    int n_ew_fused;       /* nodes computed inside an elementwise group's pass */
    bool fold_overridable; /* some read an initializer that is a graph input */
    /* Main graph with oneDNN chains: per node, the node its outputs are made
     * with (plan_born; ox_memplan_opts.born), or NULL. */
    int *born;
} ox_plan;

struct ox_exec {
    ox_model *model;
    ox_model *inlined;    /* model is this clone with local functions inlined */
    ox_exec_opts opts;
    ox_thread_pool *pool;
    ox_plan **plans;      /* main graph first, subgraphs as they are met */
    int n_plans, cap_plans;
    /* Activation arenas of the main graph (arena.c, docs/EXECUTOR.md). */
    ox_arena_cache arenas;
    bool arena_ok;        /* main graph runs in file order, arenas allowed */
    int arena_busy;       /* a run holds the arena (atomic): others use the heap */
    ox_exec_stats stats;
    int64_t max_mem;      /* resolved opts.max_memory; INT64_MAX when none */
    /* --device cuda (cuda/place.h, cuda/runtime.h): the runtime and the
     * placement + device memory plan of the last input signature. */
    ox_cuda_rt *cuda;
    ox_cuda_plan *cplan;
    bool cuda_off;        /* the main graph cannot be planned for the GPU */
};

typedef struct frame {
    struct frame *parent;
    const ox_plan *plan;
    ox_rval **vals;
    unsigned char *owned;
    /* Main-graph frames running with an arena: the plan, the node being
     * run with its output array, and the tensors placed for it. */
    const ox_arena_plan *arena;
    const plan_node *cur;
    ox_rval **cur_out;
    ox_tensor *placed[16];
    ox_exec_stats *stats;
    /* Main-graph frame of a CUDA run: where each node runs. */
    const ox_cuda_plan *cplan;
    ox_cuda_rt *cuda;
    /* The caller overrode an initializer some folded node read: folded
     * nodes run like the others in this frame. */
    bool run_folded;
    /* Per slot: the tensor's data is channels-last (NHWC) for its NCHW
     * shape, written by a oneDNN convolution for oneDNN readers only. */
    unsigned char *nhwc;
    /* A Conv chain's output written straight on the slot of its taken node
     * direct_until (chain_direct_slot): skip nodes up to it move it on. */
    const ox_tensor *direct_t;
    int direct_until;
    /* The running call writes every element of what it allocates (a oneDNN
     * primitive, a skip node's copy): its arena slot is not zeroed first. */
    bool fills;
} frame;

/* Largest single tensor a kernel may allocate; guards against absurd
 * shapes in hostile or broken models (override: ONNXSCOPE_MAX_TENSOR_BYTES). */
static size_t max_tensor_bytes(void)
{
    static size_t cached;
    if (!cached) {
        const char *s = getenv("ONNXSCOPE_MAX_TENSOR_BYTES");
        unsigned long long v = s ? strtoull(s, NULL, 10) : 0;
        cached = v ? (size_t)v : ((size_t)8 << 30);
    }
    return cached;
}

int64_t ox_exec_default_max_memory(void)
{
    const char *s = getenv("ONNXSCOPE_MAX_MEMORY");
    long long v = s ? strtoll(s, NULL, 10) : 0;
    if (v > 0)
        return v;
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || psz <= 0)
        return (int64_t)8 << 30;
    return (int64_t)pages / 4 * 3 * psz;
}

int64_t ox_exec_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The run's limits: cancellation, deadline, then the memory ceiling with
 * `extra` bytes about to be allocated. The message names no node: callers
 * are inside one and the frame adds it. */
static ox_status exec_poll(const ox_exec *e, int64_t extra, ox_error *err)
{
    if (e->opts.cancel && atomic_load(e->opts.cancel))
        return ox_errorf(err, OX_ECANCELLED, "cancelled");
    if (e->opts.deadline_ns > 0 && ox_exec_clock_ns() > e->opts.deadline_ns)
        return ox_errorf(err, OX_ETIMEDOUT, "time limit reached");
    int64_t live = ox_buffer_live_bytes();
    if (extra < 0)
        extra = 0;
    if (live > e->max_mem - extra) {
        char a[32], b[32], c[32];
        if (extra)
            return ox_errorf(err, OX_ERANGE,
                             "%s more would bring tensor memory to %s, over the ceiling of "
                             "%s (--max-memory)",
                             ox_fmt_bytes(extra, true, a, sizeof a),
                             ox_fmt_bytes(live + extra, true, b, sizeof b),
                             ox_fmt_bytes(e->max_mem, true, c, sizeof c));
        return ox_errorf(err, OX_ERANGE,
                         "tensor memory reached %s, over the ceiling of %s (--max-memory)",
                         ox_fmt_bytes(live, true, b, sizeof b),
                         ox_fmt_bytes(e->max_mem, true, c, sizeof c));
    }
    return OX_OK;
}

ox_status ox_kernel_poll(ox_kernel_ctx *c, int64_t extra_bytes)
{
    if (!c)
        return OX_OK;
    /* The per-call output cap (plan-time folding's FOLD_MAX_OUT) and the
     * single-tensor limit bind kernels that allocate their own outputs
     * (Resize) as ox_kernel_output binds the others. */
    if (extra_bytes > 0 && ((c->max_output_bytes > 0 && extra_bytes > c->max_output_bytes) ||
                            (uint64_t)extra_bytes > (uint64_t)max_tensor_bytes())) {
        char bb[32];
        return ox_errorf(c->err, OX_ERANGE, "%s of new tensors exceeds the limit",
                         ox_fmt_bytes(extra_bytes, true, bb, sizeof bb));
    }
    if (!c->exec)
        return OX_OK;
    return exec_poll(c->exec, extra_bytes, c->err);
}

static const char *node_label(const ox_node *n)
{
    return (n && n->name && n->name[0]) ? n->name : "(unnamed)";
}

static bool is_defined(const ox_value *v)
{
    return v->producer || v->init || v->is_input;
}

/* The value that actually defines v's name: a subgraph may hold an
 * unproduced placeholder for an outer-scope name. */
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

/* Hops from g up to the graph defining v, or -1 if v is not visible. */
static int scope_depth(const ox_graph *g, const ox_value *v)
{
    int d = 0;
    for (; g; g = g->parent, d++)
        if (g == v->graph)
            return d;
    return -1;
}

static void conv_chain_free(struct conv_chain *c);

static void plan_free(ox_plan *p)
{
    if (!p)
        return;
    if (p->consts)
        for (int i = 0; i < p->n_slots; i++)
            ox_rval_free(p->consts[i]);
    free(p->consts);
    free(p->slot_value);
    pmap_free(&p->slots);
    for (int i = 0; i < p->n_nodes; i++) {
        free(p->nodes[i].in);
        free(p->nodes[i].out);
        free(p->nodes[i].out_needed);
        free(p->nodes[i].release);
        ox_dnnl_free(p->nodes[i].dnnl);
        conv_chain_free(p->nodes[i].chain);
        ox_ew_prog_free(p->nodes[i].ew);
        if (p->nodes[i].state)
            p->nodes[i].state->free(p->nodes[i].state);
    }
    free(p->nodes);
    free(p->in_slots);
    free(p->out_refs);
    free(p->born);
    free(p);
}

/* Collects values of `owner_graph` used from inside subgraph g (at any
 * depth): the implicit inputs of the node that owns g. */
typedef struct vlist {
    const ox_value **v;
    int n, cap;
} vlist;

static bool vlist_push(vlist *l, const ox_value *v)
{
    for (int i = 0; i < l->n; i++)
        if (l->v[i] == v)
            return true;
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 8;
        const ox_value **nv = realloc(l->v, (size_t)cap * sizeof *nv);
        if (!nv)
            return false;
        l->v = nv;
        l->cap = cap;
    }
    l->v[l->n++] = v;
    return true;
}

static bool collect_outer(const ox_graph *g, const ox_graph *owner_graph,
                          vlist *out, int depth)
{
    if (depth > 64)
        return true;
    for (int i = 0; i < g->n_nodes; i++) {
        const ox_node *n = g->nodes[i];
        for (int k = 0; k < n->n_inputs; k++) {
            const ox_value *v = canon_value(n->inputs[k]);
            if (v && v->graph == owner_graph && !vlist_push(out, v))
                return false;
        }
        for (int a = 0; a < n->n_attrs; a++) {
            const ox_attr *at = &n->attrs[a];
            if (at->type == OX_ATTR_GRAPH && at->g &&
                !collect_outer(at->g, owner_graph, out, depth + 1))
                return false;
            if (at->type == OX_ATTR_GRAPHS)
                for (int j = 0; j < at->n; j++)
                    if (at->graphs[j] &&
                        !collect_outer(at->graphs[j], owner_graph, out, depth + 1))
                        return false;
        }
    }
    for (int i = 0; i < g->n_outputs; i++) {
        const ox_value *v = canon_value(g->outputs[i]);
        if (v && v->graph == owner_graph && !vlist_push(out, v))
            return false;
    }
    return true;
}

static bool node_implicit_inputs(const ox_node *n, vlist *out)
{
    for (int a = 0; a < n->n_attrs; a++) {
        const ox_attr *at = &n->attrs[a];
        if (at->type == OX_ATTR_GRAPH && at->g &&
            !collect_outer(at->g, n->graph, out, 0))
            return false;
        if (at->type == OX_ATTR_GRAPHS)
            for (int j = 0; j < at->n; j++)
                if (at->graphs[j] && !collect_outer(at->graphs[j], n->graph, out, 0))
                    return false;
    }
    return true;
}

static ox_plan *find_plan(const ox_exec *e, const ox_graph *g)
{
    for (int i = 0; i < e->n_plans; i++)
        if (e->plans[i]->graph == g)
            return e->plans[i];
    return NULL;
}

static int64_t node_opset(const ox_model *m, const ox_node *n)
{
    int64_t v = ox_model_opset(m, n->domain ? n->domain : "");
    /* A domain the model does not import (seen in hand-made test graphs):
     * take the newest kernel. */
    return v < 0 ? 1000 : v;
}

/* Resolves v, used from graph g, to a slot reference. */
static ox_status ref_for(const ox_exec *e, const ox_graph *g, const ox_plan *self,
                         const ox_value *v, slot_ref *r, ox_error *err)
{
    v = canon_value(v);
    if (!v) {
        r->depth = -1;
        r->slot = -1;
        return OX_OK;
    }
    int d = scope_depth(g, v);
    if (d < 0 || !is_defined(v))
        return ox_errorf(err, OX_EMODEL, "value '%s' is not defined in this scope",
                         v->name ? v->name : "");
    const ox_plan *p = self;
    const ox_graph *pg = g;
    for (int i = 0; i < d; i++)
        pg = pg->parent;
    if (d > 0)
        p = find_plan(e, pg);
    int s = p ? pmap_get(&p->slots, v) : -1;
    if (s < 0)
        return ox_errorf(err, OX_EMODEL, "value '%s' has no slot in its scope",
                         v->name ? v->name : "");
    r->depth = d;
    r->slot = s;
    return OX_OK;
}

/* Hands the heavy float ops to oneDNN and, under the same conditions as a
 * fusion pass would check (the output has one reader, which is a fusable
 * activation of the same graph, and is no graph output), runs that
 * activation as the primitive's post-op: the graph keeps standard ops (the
 * --target onnx form) and the executor fuses the epilogue here. Not with
 * keep_intermediates, where the un-activated value must stay visible. */
/* Channels-last edges (EXECUTOR.md, "Layouts"): a oneDNN convolution whose
 * value (its output, or its fused activation's) is read only by oneDNN
 * convolutions, at input 0, in this graph and is no graph output, writes
 * that value NHWC; the readers take it as is. */
static void plan_nhwc(ox_plan *p)
{
    pmap at = {0};
    for (int k = 0; k < p->n_nodes; k++)
        if (!pmap_put(&at, p->nodes[k].node, k)) {
            pmap_free(&at);
            return;
        }
    for (int k = 0; k < p->n_nodes; k++) {
        plan_node *pn = &p->nodes[k];
        if (!pn->dnnl || !ox_dnnl_conv2d_plain(pn->dnnl) || pn->n_out < 1)
            continue;
        const ox_value *v = pn->node->outputs[0];
        if (pn->act_k >= 0)
            v = p->nodes[pn->act_k].node->outputs[0];
        bool ok = v && !v->is_output && v->n_uses > 0;
        for (int u = 0; ok && u < v->n_uses; u++) {
            int r = v->uses[u].node ? pmap_get(&at, v->uses[u].node) : -1;
            ok = r >= 0 && v->uses[u].input == 0 && p->nodes[r].dnnl &&
                 !p->nodes[r].skip && !p->nodes[r].folded &&
                 ox_dnnl_conv_reader(p->nodes[r].dnnl) && p->nodes[r].in[0].depth == 0;
            for (int i = 1; ok && i < p->nodes[r].n_in; i++)
                ok = p->nodes[r].node->inputs[i] != v;
        }
        if (ok)
            ox_dnnl_set_out_nhwc(pn->dnnl, true);
    }
    pmap_free(&at);
}

/* An NHWC tensor (shape N,C,H,W) as a plain NCHW copy, for a kernel of ours. */
static ox_rval *nhwc_to_plain(const ox_rval *v)
{
    if (!v || v->kind != OX_RV_TENSOR || !v->t || v->t->rank != 4 ||
        v->t->dtype != OX_DT_FLOAT)
        return NULL;
    const ox_tensor *t = v->t;
    ox_tensor *o = ox_tensor_new(OX_DT_FLOAT, 4, t->dims);
    if (!o)
        return NULL;
    const float *src = ox_tensor_data(t);
    float *dst = ox_tensor_data(o);
    int64_t N = t->dims[0], C = t->dims[1], HW = t->dims[2] * t->dims[3];
    for (int64_t n = 0; n < N; n++)
        for (int64_t i = 0; i < HW; i++)
            for (int64_t c = 0; c < C; c++)
                dst[(n * C + c) * HW + i] = src[(n * HW + i) * C + c];
    return ox_rval_tensor(o);
}

/* ---- plan-time Conv epilogues (EXECUTOR.md "Fused epilogues at plan time") ----
 * A default-domain Conv on oneDNN takes, in this order, the nodes that alone
 * read its value: a BatchNormalization with constant parameters (folded into
 * a private copy of the weights and bias), a residual Add or two-input Sum
 * whose other operand exists before the Conv runs (oneDNN's sum post-op, the
 * operand seeding the output), and an activation whose parameters (Clip's
 * bounds) are plan constants of any origin: initializers, Constant nodes,
 * folded values. The taken nodes become skip nodes. The constants baked in
 * are checked at every run: a run that overrides one (IR < 4 initializers are
 * graph inputs) takes the plain path, our Conv and then each taken node's own
 * kernel. A com.microsoft FusedConv with Z gets a chain too, so that its Z may
 * be channels-last (plan_nhwc_chain). */
#define CHAIN_CONSTS 24
#define CHAIN_AFFINE 4   /* BN / per-channel Mul / Add nodes folded in */

static bool slot_const(const ox_plan *p, slot_ref r);

typedef struct conv_chain {
    /* Taken nodes in order (affine ones, the sum, the activation); bn_k is
     * the last affine one, -1 for none (act_k is the plan node's). */
    int taken[CHAIN_AFFINE + 2], n_taken;
    int bn_k, sum_k;
    bool has_z;
    int sum_ci;                 /* the input of node sum_k that carries the value */
    slot_ref z;                 /* the sum's other operand, or FusedConv's input 3 */
    ox_rval *w, *b;             /* BN, Mul, Add folded in (NULL: the Conv's own) */
    int n_fixed;
    slot_ref fixed[CHAIN_CONSTS];   /* plan constants baked in, checked per run */
} conv_chain;

static void conv_chain_free(conv_chain *c)
{
    if (!c)
        return;
    ox_rval_free(c->w);
    ox_rval_free(c->b);
    free(c);
}

/* The plan index of v's only reader (a node after k that no one took yet,
 * reading it in this frame), with the input index; -1 when v has other
 * readers or is a graph output. */
static int sole_reader(const ox_plan *p, int k, const ox_value *v, int *input)
{
    if (!v || v->is_output || v->n_uses != 1 || !v->uses[0].node)
        return -1;
    for (int j = k + 1; j < p->n_nodes; j++) {
        const plan_node *r = &p->nodes[j];
        if (r->node != v->uses[0].node)
            continue;
        int i = v->uses[0].input;
        if (r->skip || r->folded || i < 0 || i >= r->n_in || r->in[i].depth != 0)
            return -1;
        *input = i;
        return j;
    }
    return -1;
}

/* A plan-constant float32 tensor at r, or NULL. */
static const ox_tensor *const_f32(const ox_plan *p, slot_ref r)
{
    if (!slot_const(p, r))
        return NULL;
    const ox_rval *v = p->consts[r.slot];
    return v->kind == OX_RV_TENSOR && v->t && v->t->dtype == OX_DT_FLOAT && ox_tensor_data(v->t)
               ? v->t
               : NULL;
}

static bool chain_fix(conv_chain *c, slot_ref r)
{
    if (r.depth < 0)
        return true;
    if (c->n_fixed == CHAIN_CONSTS)
        return false;
    c->fixed[c->n_fixed++] = r;
    return true;
}

/* Per-output-channel affine epilogue folded into the Conv's weights:
 * value = A[m] * conv(w) + B[m]; w' = w A, b' = B. */
typedef struct affine {
    const ox_tensor *w;
    int64_t M, per;
    float *A, *B;
} affine;

/* t broadcast over a Conv output of rank r along the channel axis only
 * (numel 1 or M, every other dim 1): its data and stride (0 or 1), or NULL. */
static const float *per_channel(const ox_tensor *t, int r, int64_t M, int64_t *stride)
{
    if (!t || t->rank > r || (t->numel != 1 && t->numel != M))
        return NULL;
    for (int j = 0; j < t->rank; j++) {
        int axis = j + r - t->rank;
        if (t->dims[j] != 1 && (axis != 1 || t->dims[j] != M))
            return NULL;
    }
    *stride = t->numel == 1 ? 0 : 1;
    return ox_tensor_data(t);
}

/* Node b, reading the chain's value at input ci, folded into af when it is a
 * BatchNormalization in inference form (only output 0 read) with constant
 * float32 parameters (a = scale / sqrt(var + eps), shift = beta - mean a,
 * computed as the BN kernel does, k_nn/norm.c), or a Mul / Add whose other
 * operand is a per-channel float32 constant (what `optimize` leaves of a BN
 * whose parameters it could not fold). The constants used go to c->fixed. */
static bool fold_affine(const ox_plan *p, int b, int ci, affine *af, conv_chain *c)
{
    const plan_node *bn = &p->nodes[b];
    const ox_node *n = bn->node;
    int r = af->w->rank;
    int64_t M = af->M;
    if (!ox_node_is_default_domain(n) || bn->n_out < 1)
        return false;
    if (!strcmp(n->op_type, "Mul") || !strcmp(n->op_type, "Add")) {
        if (bn->n_in != 2 || ox_node_attr(n, "broadcast"))
            return false;
        int64_t st = 0;
        const float *t = per_channel(const_f32(p, bn->in[1 - ci]), r, M, &st);
        if (!t || !chain_fix(c, bn->in[1 - ci]))
            return false;
        bool mul = n->op_type[0] == 'M';
        for (int64_t m = 0; m < M; m++) {
            if (mul)
                af->A[m] *= t[m * st], af->B[m] *= t[m * st];
            else
                af->B[m] += t[m * st];
        }
        return true;
    }
    if (strcmp(n->op_type, "BatchNormalization") || bn->n_in != 5 || ci != 0)
        return false;
    for (int i = 1; i < n->n_outputs; i++)
        if (n->outputs[i] && (n->outputs[i]->n_uses || n->outputs[i]->is_output))
            return false;
    const ox_attr *tm = ox_node_attr(n, "training_mode");
    if (bn->opset >= 14 && tm && tm->type == OX_ATTR_INT && tm->i)
        return false;
    const ox_attr *sp = ox_node_attr(n, "spatial");
    if (sp && sp->type == OX_ATTR_INT && !sp->i)
        return false;
    const ox_attr *ea = ox_node_attr(n, "epsilon");
    float eps = ea && ea->type == OX_ATTR_FLOAT ? ea->f : 1e-5f;
    const ox_tensor *P[5] = {0};
    for (int i = 1; i < 5; i++)
        if (!(P[i] = const_f32(p, bn->in[i])) || P[i]->numel != M)
            return false;
    for (int i = 1; i < 5; i++)
        if (!chain_fix(c, bn->in[i]))
            return false;
    const float *sc = ox_tensor_data(P[1]), *be = ox_tensor_data(P[2]);
    const float *mu = ox_tensor_data(P[3]), *va = ox_tensor_data(P[4]);
    for (int64_t m = 0; m < M; m++) {
        float a = (float)(sc[m] / sqrt((double)va[m] + eps));
        float sh = (float)(be[m] - (double)mu[m] * a);
        af->A[m] *= a;
        af->B[m] = af->B[m] * a + sh;
    }
    return true;
}

/* The folded weights and bias of af into c->w / c->b. */
static bool affine_finish(const affine *af, conv_chain *c)
{
    int64_t bd[1] = {af->M};
    ox_tensor *nw = ox_tensor_new(OX_DT_FLOAT, af->w->rank, af->w->dims);
    ox_tensor *nb = ox_tensor_new(OX_DT_FLOAT, 1, bd);
    if (!nw || !nb) {
        ox_tensor_free(nw);
        ox_tensor_free(nb);
        return false;
    }
    const float *ws = ox_tensor_data(af->w);
    float *wd = ox_tensor_data(nw), *bo = ox_tensor_data(nb);
    for (int64_t m = 0; m < af->M; m++) {
        for (int64_t j = 0; j < af->per; j++)
            wd[m * af->per + j] = ws[m * af->per + j] * af->A[m];
        bo[m] = af->B[m];
    }
    c->w = ox_rval_tensor(nw);
    c->b = ox_rval_tensor(nb);
    return c->w && c->b;
}

/* Node r, an Add or two-input Sum reading the chain's value at input `ci`:
 * its other operand becomes Z when it exists before Conv k runs (a graph
 * input or a value made earlier in the plan order), is no constant (a
 * broadcast bias, typically) and, where both types are known, has the
 * value's shape. */
static bool take_sum(const ox_plan *p, int k, int r, int ci, const ox_value *cur, conv_chain *c)
{
    const plan_node *rn = &p->nodes[r];
    const ox_node *n = rn->node;
    if (!ox_node_is_default_domain(n) || (strcmp(n->op_type, "Add") && strcmp(n->op_type, "Sum")) ||
        rn->n_in != 2 || rn->n_out != 1 || ox_node_attr(n, "broadcast"))
        return false;
    int oi = 1 - ci;
    const ox_value *zv = n->inputs[oi];
    slot_ref z = rn->in[oi];
    if (!zv || zv == cur || z.depth != 0 || slot_const(p, z))
        return false;
    if (!zv->is_input) {
        int at = -1;
        for (int j = 0; j < k && at < 0; j++)
            for (int o = 0; o < p->nodes[j].n_out; o++)
                if (p->nodes[j].node->outputs[o] == zv)
                    at = j;
        if (at < 0)
            return false;
    }
    const ox_type *a = cur->type, *b = zv->type;
    if (a && b && a->kind == OX_TYPE_TENSOR && b->kind == OX_TYPE_TENSOR && a->has_shape &&
        b->has_shape) {
        if (a->rank != b->rank)
            return false;
        for (int i = 0; i < a->rank; i++)
            if (a->dims[i].value >= 0 && b->dims[i].value >= 0 &&
                a->dims[i].value != b->dims[i].value)
                return false;
    }
    c->has_z = true;
    c->z = z;
    c->sum_ci = ci;
    return true;
}

/* Plans node k with a chain when it is a Conv that takes more than the
 * plain activation epilogue of plan_dnnl (or a FusedConv with Z); false
 * leaves it to plan_dnnl. */
static bool plan_conv_chain(const ox_exec *e, ox_plan *p, int k)
{
    plan_node *pn = &p->nodes[k];
    const ox_node *n = pn->node;
    if (e->opts.keep_intermediates || pn->n_out < 1 || !n->outputs[0] || pn->n_in < 2)
        return false;
    unsigned cmask = 0;
    for (int i = 0; i < pn->n_in && i < 32; i++)
        if (slot_const(p, pn->in[i]))
            cmask |= 1u << i;
    conv_chain c = {.bn_k = -1, .sum_k = -1};
    affine af = {0};
    ox_dnnl_epilogue ep = {0};
    int act_k = -1;
    if (n->domain && !strcmp(n->domain, "com.microsoft") && !strcmp(n->op_type, "FusedConv")) {
        if (pn->n_in < 4 || pn->in[3].depth != 0)
            return false;
        c.has_z = true;
        c.z = pn->in[3];
    } else {
        if (!ox_node_is_default_domain(n) || strcmp(n->op_type, "Conv"))
            return false;
        const ox_value *cur = n->outputs[0];
        int ci = 0, r = sole_reader(p, k, cur, &ci);
        /* Affine nodes: the Conv's weights (and bias) must be constants. */
        af.w = const_f32(p, pn->in[1]);
        const ox_tensor *b0 = pn->n_in > 2 && pn->in[2].depth >= 0 ? const_f32(p, pn->in[2]) : NULL;
        bool bias_ok = pn->n_in < 3 || pn->in[2].depth < 0 || (b0 && af.w && b0->numel == af.w->dims[0]);
        if (r >= 0 && af.w && af.w->rank >= 3 && af.w->dims[0] > 0 && bias_ok &&
            chain_fix(&c, pn->in[1]) && (pn->n_in < 3 || chain_fix(&c, pn->in[2]))) {
            af.M = af.w->dims[0];
            af.per = af.w->numel / af.M;
            af.A = malloc((size_t)af.M * sizeof *af.A);
            af.B = malloc((size_t)af.M * sizeof *af.B);
            for (int64_t m = 0; af.A && af.B && m < af.M; m++)
                af.A[m] = 1.0f, af.B[m] = b0 ? ((const float *)ox_tensor_data(b0))[m] : 0.0f;
            while (af.A && af.B && r >= 0 && c.n_taken < CHAIN_AFFINE &&
                   fold_affine(p, r, ci, &af, &c)) {
                c.bn_k = r;
                c.taken[c.n_taken++] = r;
                p->nodes[r].skip_in = ci;
                cur = p->nodes[r].node->outputs[0];
                r = sole_reader(p, r, cur, &ci);
            }
            if (c.bn_k >= 0 && !affine_finish(&af, &c))
                c.n_taken = 0, c.bn_k = -1, r = -1;
        }
        free(af.A);
        free(af.B);
        if (c.bn_k < 0) {
            ox_rval_free(c.w);
            ox_rval_free(c.b);
            c.w = c.b = NULL;
            c.n_fixed = 0;
            cur = n->outputs[0];
            r = sole_reader(p, k, cur, &ci);
        }
        if (r >= 0 && take_sum(p, k, r, ci, cur, &c)) {
            c.sum_k = r;
            c.taken[c.n_taken++] = r;
            cur = p->nodes[r].node->outputs[0];
            r = sole_reader(p, r, cur, &ci);
        }
        if (r >= 0 && ci == 0 && ox_node_is_default_domain(p->nodes[r].node)) {
            const plan_node *an = &p->nodes[r];
            for (int i = 1; i < an->n_in && i < 3; i++)
                ep.act_in[i] = const_f32(p, an->in[i]);
            if (ox_dnnl_act_fusable_ex(an->node, ep.act_in)) {
                bool ok = true;
                for (int i = 1; i < an->n_in && i < 3; i++)
                    if (ep.act_in[i])
                        ok = ok && chain_fix(&c, an->in[i]);
                if (ok) {
                    act_k = r;
                    ep.act = an->node;
                    c.taken[c.n_taken++] = r;
                }
            }
        }
        /* Nothing beyond what plan_dnnl fuses itself. */
        if (c.bn_k < 0 && c.sum_k < 0 && (act_k < 0 || ox_dnnl_act_fusable(ep.act)))
            return false;
        if (c.bn_k >= 0)
            cmask |= 6u;   /* the folded weights and bias */
        ep.sum = c.sum_k >= 0;
    }
    ox_dnnl_node *d = ox_dnnl_plan_ex(n, &ep, cmask);
    conv_chain *cc = d ? malloc(sizeof *cc) : NULL;
    if (!cc) {
        ox_dnnl_free(d);
        ox_rval_free(c.w);
        ox_rval_free(c.b);
        return false;
    }
    *cc = c;
    pn->dnnl = d;
    pn->chain = cc;
    pn->act_k = act_k;
    for (int j = 0; j < c.n_taken; j++)
        p->nodes[c.taken[j]].skip = true;
    if (c.sum_k >= 0)
        p->nodes[c.sum_k].skip_in = c.sum_ci;
    return true;
}

/* Channels-last through the chains (after plan_nhwc, which leaves values
 * read by a sum's Z or a FusedConv's Z plain): a oneDNN Conv whose final
 * value (after its chain) is read only by oneDNN convolutions at input 0,
 * as the Z of a FusedConv chain, or as the Z of a fused residual sum, writes
 * it NHWC; the Z readers reorder it into their own dst layout. */
static void plan_nhwc_chain(ox_plan *p)
{
    pmap at = {0};
    for (int k = 0; k < p->n_nodes; k++)
        if (!pmap_put(&at, p->nodes[k].node, k)) {
            pmap_free(&at);
            return;
        }
    for (int k = 0; k < p->n_nodes; k++) {
        plan_node *pn = &p->nodes[k];
        if (!pn->dnnl || !ox_dnnl_conv_any(pn->dnnl) || pn->n_out < 1)
            continue;
        const ox_value *v = pn->node->outputs[0];
        const conv_chain *c = pn->chain;
        if (pn->act_k >= 0)
            v = p->nodes[pn->act_k].node->outputs[0];
        else if (c && c->n_taken > 0)
            v = p->nodes[c->taken[c->n_taken - 1]].node->outputs[0];
        bool ok = v && !v->is_output && v->n_uses > 0;
        for (int u = 0; ok && u < v->n_uses; u++) {
            int r = v->uses[u].node ? pmap_get(&at, v->uses[u].node) : -1, i = v->uses[u].input;
            const plan_node *rn = r >= 0 ? &p->nodes[r] : NULL;
            if (!rn || i < 0 || i >= rn->n_in || rn->in[i].depth != 0 || rn->folded) {
                ok = false;
            } else if (!rn->skip && rn->dnnl && ox_dnnl_conv_any(rn->dnnl)) {
                bool zr = rn->chain && rn->chain->has_z && rn->chain->sum_k < 0;
                for (int j = 0; ok && j < rn->n_in; j++)
                    if (rn->node->inputs[j] == v)
                        ok = j == 0 || (j == 3 && zr);
            } else if (rn->skip && i != rn->skip_in) {
                /* The Z of a residual sum fused into an earlier Conv. */
                bool owner = false;
                for (int o = 0; o < r && !owner; o++)
                    owner = p->nodes[o].chain && p->nodes[o].chain->sum_k == r;
                ok = owner;
            } else {
                ok = false;
            }
        }
        if (ok)
            ox_dnnl_set_out_nhwc(pn->dnnl, true);
    }
    pmap_free(&at);
}

/* Channels-last through our own kernels (EXECUTOR.md "Layouts"): pooling,
 * global pooling and Concat on the channel axis (nhwc_kernels.h) join the
 * NHWC edges plan_nhwc makes between oneDNN convolutions. A value is
 * channels-last when its producer can write it so (a plain 2-D oneDNN
 * convolution, through its fused activation, or a pooling/Concat node that
 * is channels-last itself) and every reader can read it so (a oneDNN
 * convolution at input 0, or such a node); a pooling/Concat node is
 * channels-last when all its inputs and (global pooling aside) its output
 * are. The last rule couples values, so it is applied until nothing
 * changes. SqueezeNet's fire modules (squeeze conv -> expand convs ->
 * Concat -> MaxPool -> next conv) then never leave NHWC. */
static void plan_nhwc_ops(ox_plan *p)
{
    if (!ox_nhwc_ops_enabled())
        return;
    pmap at = {0};
    unsigned char *cand = calloc((size_t)p->n_slots + 1, 1);
    for (int k = 0; cand && k < p->n_nodes; k++)
        if (!pmap_put(&at, p->nodes[k].node, k)) {
            free(cand);
            cand = NULL;
        }
    if (!cand) {
        pmap_free(&at);
        return;
    }
    for (int k = 0; k < p->n_nodes; k++) {
        plan_node *pn = &p->nodes[k];
        pn->nhwc_kind = OX_NHWC_NONE;
        if (pn->dnnl || pn->skip || pn->folded)
            continue;
        pn->nhwc_kind = ox_nhwc_kind_of(pn->node);
        for (int i = 0; pn->nhwc_kind && i < pn->n_in; i++)
            if (pn->in[i].depth != 0 || !pn->node->inputs[i])
                pn->nhwc_kind = OX_NHWC_NONE;
    }
    /* Candidate values: a channels-last producer, and readers that all take it. */
    for (int k = 0; k < p->n_nodes; k++) {
        plan_node *pn = &p->nodes[k];
        int slot = -1;
        const ox_value *v = NULL;
        if (pn->dnnl && !pn->folded && ox_dnnl_conv2d_plain(pn->dnnl) && pn->n_out >= 1) {
            const plan_node *src = pn->act_k >= 0 ? &p->nodes[pn->act_k] : pn;
            v = src->node->outputs[0];
            slot = src->n_out >= 1 ? src->out[0] : -1;
        } else if (pn->nhwc_kind == OX_NHWC_POOL || pn->nhwc_kind == OX_NHWC_CONCAT) {
            v = pn->node->outputs[0];
            slot = pn->out[0];
        }
        bool ok = v && slot >= 0 && !v->is_output && v->n_uses > 0;
        for (int u = 0; ok && u < v->n_uses; u++) {
            int r = v->uses[u].node ? pmap_get(&at, v->uses[u].node) : -1;
            const plan_node *rn = r >= 0 ? &p->nodes[r] : NULL;
            ok = rn && !rn->skip && !rn->folded && rn->in[v->uses[u].input].depth == 0;
            if (ok && rn->nhwc_kind)
                continue;
            ok = ok && v->uses[u].input == 0 && rn->dnnl && ox_dnnl_conv_reader(rn->dnnl);
            for (int i = 1; ok && i < rn->n_in; i++)
                ok = rn->node->inputs[i] != v;
        }
        if (ok)
            cand[slot] = 1;
    }
    /* A channels-last node needs all its inputs and its output so. */
    for (bool changed = true; changed;) {
        changed = false;
        for (int k = 0; k < p->n_nodes; k++) {
            plan_node *pn = &p->nodes[k];
            if (!pn->nhwc_kind)
                continue;
            int o = pn->out[0] >= 0 ? pn->out[0] : p->n_slots;   /* n_slots: always 0 */
            bool ok = pn->nhwc_kind == OX_NHWC_GLOBAL_POOL || cand[o];
            for (int i = 0; ok && i < pn->n_in; i++)
                ok = cand[pn->in[i].slot];
            if (ok)
                continue;
            pn->nhwc_kind = OX_NHWC_NONE;
            if (pn->out[0] >= 0)
                cand[pn->out[0]] = 0;
            for (int i = 0; i < pn->n_in; i++)
                cand[pn->in[i].slot] = 0;
            changed = true;
        }
    }
    for (int k = 0; k < p->n_nodes; k++) {
        plan_node *pn = &p->nodes[k];
        if (pn->dnnl && !pn->folded && ox_dnnl_conv2d_plain(pn->dnnl) && pn->n_out >= 1) {
            const plan_node *src = pn->act_k >= 0 ? &p->nodes[pn->act_k] : pn;
            if (src->n_out >= 1 && src->out[0] >= 0 && cand[src->out[0]])
                ox_dnnl_set_out_nhwc(pn->dnnl, true);
        }
    }
    free(cand);
    pmap_free(&at);
}


/* Lazy channel Concat (docs/EXECUTOR.md "Lazy channel Concat"): a Concat
 * planned channels-last whose readers all can take its parts directly
 * (a channels-last pooling, or a oneDNN group-1 Conv without Z, reading it
 * at input 0) is not copied: its output slot gets a tensor of the right
 * shape that nothing writes, and those readers read the parts (pooling
 * each into its channel slice of the output, the Conv as one primitive per
 * part summing into its output). Any other use materializes it first
 * (lazy_fill). The parts live until the last reader (last_use). */
/* The arena's memory plan must keep the parts alive as long: each part is
 * listed (ox_arena_keep) with every node that reads the Concat or carries a
 * reader's output on (its fused activation, its chain's taken nodes). */
static int graph_index(const ox_plan *p, const ox_node *n)
{
    const ox_graph *g = p->graph;
    for (int j = 0; j < g->n_nodes; j++)
        if (g->nodes[j] == n)
            return j;
    return -1;
}

/* Plans value v as read by plan node r too (ox_arena_keep); false when it
 * cannot be listed (no name, out of memory). */
static bool keep_value(ox_arena_cache *ac, const ox_plan *p, const ox_value *v, int r)
{
    int idx = graph_index(p, p->nodes[r].node);
    if (idx < 0 || !v || !v->name || !v->name[0])
        return false;
    ox_arena_keep *nk = realloc(ac->keep, (size_t)(ac->n_keep + 1) * sizeof *nk);
    if (!nk)
        return false;
    ac->keep = nk;
    ac->keep[ac->n_keep++] = (ox_arena_keep){v->name, idx};
    return true;
}

static void lazy_keep(ox_arena_cache *ac, const ox_plan *p, const plan_node *cat, int r)
{
    /* A part that cannot be listed: the run-time overlap check then keeps
     * the Concat a copy. */
    for (int i = 0; i < cat->n_in; i++)
        keep_value(ac, p, p->slot_value[cat->in[i].slot], r);
}

static void plan_lazy_concat(ox_plan *p, int *last_use, ox_arena_cache *ac)
{
    if (ox__env_on("ONNXSCOPE_NO_LAZY_CONCAT"))
        return;
    for (int k = 0; k < p->n_nodes; k++) {
        plan_node *pn = &p->nodes[k];
        if (pn->nhwc_kind != OX_NHWC_CONCAT || pn->skip || pn->folded || pn->fused_away ||
            pn->n_in < 2 || pn->n_in > 8 || pn->n_out != 1 || pn->out[0] < 0)
            continue;
        bool ok = true;
        for (int i = 0; ok && i < pn->n_in; i++) {
            ok = pn->in[i].depth == 0 && !p->consts[pn->in[i].slot];
            for (int j = 0; ok && j < i; j++)
                ok = pn->in[j].slot != pn->in[i].slot;
        }
        const ox_value *v = pn->node->outputs[0];
        ok = ok && v && !v->is_output && v->n_uses > 0;
        int last = k, lastr = k;
        int64_t m_max = 0;
        for (int u = 0; ok && u < v->n_uses; u++) {
            int r = -1;
            for (int j = k + 1; j < p->n_nodes && r < 0; j++)
                if (p->nodes[j].node == v->uses[u].node)
                    r = j;
            const plan_node *rn = r >= 0 ? &p->nodes[r] : NULL;
            ok = rn && v->uses[u].input == 0 && !rn->skip && !rn->folded && !rn->fused_away &&
                 rn->in[0].depth == 0 && rn->in[0].slot == pn->out[0] &&
                 (rn->cat_of == 0 || rn->cat_of == k + 1);
            for (int i = 1; ok && i < rn->n_in; i++)
                ok = rn->node->inputs[i] != v;
            ok = ok && ((rn->nhwc_kind == OX_NHWC_POOL && rn->n_in == 1) ||
                        (rn->dnnl && ox_dnnl_conv_splittable(rn->dnnl)));
            if (!ok)
                break;
            if (rn->dnnl) {
                /* Its output channels (the weights' dim 0), for lazy_concat. */
                const ox_rval *w = rn->in[1].depth == 0 ? p->consts[rn->in[1].slot] : NULL;
                ok = w && w->kind == OX_RV_TENSOR && w->t && w->t->rank >= 1;
                if (!ok)
                    break;
                if (w->t->dims[0] > m_max)
                    m_max = w->t->dims[0];
            }
            lastr = r > lastr ? r : lastr;
            /* The reader's output may be placed on a taken node's slot. */
            int end = r > rn->act_k ? r : rn->act_k;
            for (int j = 0; rn->chain && j < rn->chain->n_taken; j++)
                end = rn->chain->taken[j] > end ? rn->chain->taken[j] : end;
            last = end > last ? end : last;
        }
        if (!ok)
            continue;
        pn->lazy_last = last;
        pn->lazy_conv_m = m_max;
        pn->writes_all = true;   /* the copy, when it happens, writes it all */
        for (int u = 0; u < v->n_uses; u++)
            for (int j = k + 1; j < p->n_nodes; j++)
                if (p->nodes[j].node == v->uses[u].node)
                    p->nodes[j].cat_of = k + 1;
        for (int i = 0; i < pn->n_in; i++)
            if (last_use[pn->in[i].slot] < lastr)
                last_use[pn->in[i].slot] = lastr;
        for (int u = 0; ac && u < v->n_uses; u++)
            for (int j = k + 1; j < p->n_nodes; j++) {
                const plan_node *rn = &p->nodes[j];
                if (rn->node != v->uses[u].node)
                    continue;
                lazy_keep(ac, p, pn, j);
                if (rn->act_k >= 0)
                    lazy_keep(ac, p, pn, rn->act_k);
                for (int t = 0; rn->chain && t < rn->chain->n_taken; t++)
                    lazy_keep(ac, p, pn, rn->chain->taken[t]);
            }
    }
}

static void plan_dnnl(const ox_exec *e, ox_plan *p)
{
    for (int k = 0; k < p->n_nodes; k++) {
        plan_node *pn = &p->nodes[k];
        pn->act_k = -1;
        if (pn->skip || pn->folded)
            continue;
        if (plan_conv_chain(e, p, k))
            continue;
        const ox_node *n = pn->node, *act = NULL;
        int act_k = -1;
        const ox_value *v = n->n_outputs >= 1 ? n->outputs[0] : NULL;
        bool plain = !n->domain || !n->domain[0];
        if (!e->opts.keep_intermediates && plain && v && !v->is_output && v->n_uses == 1 &&
            v->uses[0].input == 0 && v->uses[0].node && ox_dnnl_act_fusable(v->uses[0].node) &&
            (!strcmp(n->op_type, "Conv") || !strcmp(n->op_type, "Gemm") ||
             !strcmp(n->op_type, "MatMul"))) {
            for (int j = k + 1; j < p->n_nodes; j++)
                if (p->nodes[j].node == v->uses[0].node) {
                    act_k = j;
                    break;
                }
            /* Its input 0 must be this frame's slot (it is: same graph). */
            if (act_k >= 0 && p->nodes[act_k].in[0].depth == 0)
                act = p->nodes[act_k].node;
            else
                act_k = -1;
        }
        /* Inputs constant for this plan: initializers and folded values. */
        unsigned cmask = 0;
        for (int i = 0; i < pn->n_in && i < 32; i++)
            if (pn->in[i].depth == 0 && p->consts[pn->in[i].slot])
                cmask |= 1u << i;
        pn->dnnl = ox_dnnl_plan(n, act, cmask);
        if (!pn->dnnl && act) {
            act = NULL;
            act_k = -1;
            pn->dnnl = ox_dnnl_plan(n, NULL, cmask);
        }
        if (pn->dnnl && act_k >= 0) {
            pn->act_k = act_k;
            p->nodes[act_k].skip = true;
        }
    }
    if (!e->opts.keep_intermediates && !ox__env_on("ONNXSCOPE_DNNL_NCHW")) {
        plan_nhwc(p);
        plan_nhwc_chain(p);
        plan_nhwc_ops(p);
    }
}

/* Fused chains as one node for the memory plan (ox_memplan_opts.born): a
 * skip node whose handed-on value is the output of the node right before it
 * (folded nodes aside), the chain's head or an earlier skip node, is born
 * with the head. A Conv chain then writes its last value straight into that
 * node's slot (chain_direct_slot), which the plan now keeps off the Conv's
 * input, and a lone fused activation's slot can share its producer's bytes
 * (the in-place rule then sees both alive together): no copy of the
 * activation in run_skip either way (MobileNetV2 as exported: 7 per run).
 * Left NULL when no node is a skip node. */
static void plan_born(ox_plan *p)
{
    int *b = malloc(((size_t)p->n_nodes + 1) * sizeof *b);
    if (!b)
        return;   /* planned as before: copies, never wrong */
    bool any = false;
    for (int k = 0; k < p->n_nodes; k++) {
        const plan_node *pn = &p->nodes[k];
        b[k] = k;
        if (!pn->skip || pn->folded || pn->skip_in >= pn->n_in || pn->in[pn->skip_in].depth)
            continue;
        int j = k - 1;
        while (j >= 0 && p->nodes[j].folded)
            j--;
        if (j >= 0 && p->nodes[j].n_out >= 1 && p->nodes[j].out[0] == pn->in[pn->skip_in].slot) {
            b[k] = b[j];
            any = true;
        }
    }
    free(p->born);
    p->born = any ? b : NULL;
    if (!any)
        free(b);
}

/* Nodes computed inside a later one (members of an elementwise group or
 * of a GELU chain: fused_away) never make their outputs, so the memory plan
 * gives those values no bytes (ox_memplan_opts.born, OX_MEMPLAN_UNMADE):
 * a LayerNorm tail's intermediates otherwise held full-size slots (and kept
 * the in-place rule off), 19 MB of arena where the node-by-node plan needs
 * 13. */
static void plan_unmade(ox_plan *p)
{
    bool any = false;
    for (int k = 0; k < p->n_nodes && !any; k++)
        any = p->nodes[k].fused_away && !p->nodes[k].folded;
    if (!any)
        return;
    if (!p->born) {
        p->born = malloc(((size_t)p->n_nodes + 1) * sizeof *p->born);
        if (!p->born)
            return;   /* planned with their slots: more bytes, never wrong */
        for (int k = 0; k < p->n_nodes; k++)
            p->born[k] = k;
    }
    for (int k = 0; k < p->n_nodes; k++)
        if (p->nodes[k].fused_away && !p->nodes[k].folded)
            p->born[k] = OX_MEMPLAN_UNMADE;
}

/* Plan-time folding (EXECUTOR.md): a main-graph node whose inputs are all
 * constants for the plan (initializers that are not graph inputs, or values
 * folded before it) is run once here with the plain kernels, and its outputs
 * become plan constants: exported models recompute weight Transposes, shape
 * arithmetic and ConstantOfShape weights on every run otherwise, and oneDNN
 * can then pack the folded weights once. Nondeterministic ops and nodes with
 * subgraphs are left alone; an output over FOLD_MAX_OUT bytes or a kernel
 * error leaves the node to run as before (errors then surface at run time). */
#define FOLD_MAX_OUT (64LL << 20)
#define FOLD_MAX_TOTAL (1LL << 30)

static bool foldable_op(const ox_node *n)
{
    /* Dropout: random in training mode. */
    return !ox_node_is_random(n) && !ox_node_is(n, "Dropout") && !ox_node_has_subgraph(n);
}

/* Initializers count even when they are also graph inputs (IR < 4): a run
 * that overrides one runs the folded nodes again (frame.run_folded). */
static bool slot_const(const ox_plan *p, slot_ref r)
{
    return r.depth == 0 && r.slot >= 0 && p->consts[r.slot];
}

static void plan_fold(ox_exec *e, ox_plan *p)
{
    int64_t total = 0;
    for (int k = 0; k < p->n_nodes; k++) {
        plan_node *pn = &p->nodes[k];
        const ox_node *n = pn->node;
        if (pn->n_out < 1 || pn->n_out > 16 || pn->n_in > 16 || !foldable_op(n))
            continue;
        bool ok = true;
        for (int i = 0; i < pn->n_in && ok; i++)
            ok = pn->in[i].depth < 0 || slot_const(p, pn->in[i]);
        for (int i = 0; i < pn->n_out && ok; i++)
            ok = pn->out[i] < 0 || (!p->consts[pn->out[i]] &&
                                    !p->slot_value[pn->out[i]]->is_input);
        for (int i = 0; i < pn->n_in; i++)
            if (pn->in[i].depth == 0 && p->slot_value[pn->in[i].slot]->is_input)
                p->fold_overridable = true;
        if (!ok)
            continue;
        ox_rval *in[16] = {0}, *out[16] = {0};
        for (int i = 0; i < pn->n_in; i++)
            in[i] = pn->in[i].depth < 0 ? NULL : p->consts[pn->in[i].slot];
        ox_error ferr = {0};
        if (ox_exec_node_capped(e->model, n, pn->n_in, in, pn->n_out, out, FOLD_MAX_OUT,
                                &ferr) != OX_OK)
            continue;
        int64_t bytes = 0;
        for (int i = 0; i < pn->n_out; i++) {
            if (!out[i] || out[i]->kind != OX_RV_TENSOR || !out[i]->t)
                ok = ok && pn->out[i] < 0 && !out[i];
            else
                bytes += (int64_t)out[i]->t->nbytes;
        }
        if (!ok || total + bytes > FOLD_MAX_TOTAL) {
            for (int i = 0; i < pn->n_out; i++)
                ox_rval_free(out[i]);
            continue;
        }
        total += bytes;
        for (int i = 0; i < pn->n_out; i++) {
            if (pn->out[i] >= 0) {
                /* Kernels read typed, possibly vectorized data (see the
                 * initializers above): a view at an odd offset gets a copy. */
                const void *d = ox_tensor_data(out[i]->t);
                if (d && ((uintptr_t)d & 15)) {
                    ox_tensor *c = ox_tensor_clone(out[i]->t);
                    if (c) {
                        ox_tensor_free(out[i]->t);
                        out[i]->t = c;
                    }
                }
                p->consts[pn->out[i]] = out[i];
            } else {
                ox_rval_free(out[i]);
            }
        }
        pn->folded = true;
        p->n_folded++;
    }
}

/* PyTorch's exported GELU (gelu_chain.h): the Mul reading x and
 * Erf(x / c1) + c2 computes that product itself in one pass, and the Div,
 * Erf and Add before it never run. Only when c1 and c2 are plan constants
 * that no run can override (not graph inputs) and no node of the chain is
 * folded or already taken by another fusion. Memory plans are unaffected:
 * the Mul still reads x (live up to it) and writes its own slot; the chain's
 * intermediates are simply never made. ONNXSCOPE_NO_CHAIN_FUSE=1 turns it
 * off. */
static int plan_index_before(const ox_plan *p, int k, const ox_node *n)
{
    for (int j = k - 1; j >= 0; j--)
        if (p->nodes[j].node == n)
            return j;
    return -1;
}

static bool fixed_const(const ox_plan *p, slot_ref r)
{
    if (r.depth != 0 || !p->consts[r.slot])
        return false;
    const ox_value *v = p->slot_value[r.slot];
    return v && !v->is_input;
}

/* Default-domain kernels that write every element of every output they
 * allocate (the broadcasting elementwise loops, the strided copy of
 * Transpose, MatMul's GEMMs with beta 0): zeroing their arena slot first was
 * ~5 % of the encoder's run (memset in perf). Others keep the zeroed slot. */
static bool writes_every_element(const ox_node *n)
{
    static const char *const ops[] = {"Add", "Sub", "Mul", "Div", "Erf", "Tanh", "Sigmoid",
                                      "Relu", "Neg", "Abs", "Exp", "Sqrt", "Reciprocal",
                                      "Transpose", "MatMul", NULL};
    if (n->domain && n->domain[0])
        return false;
    for (int i = 0; ops[i]; i++)
        if (!strcmp(n->op_type, ops[i]))
            return true;
    return false;
}

static void plan_gelu_chains(ox_plan *p)
{
    for (int k = 0; k < p->n_nodes; k++) {
        plan_node *pn = &p->nodes[k];
        ox_gelu_chain m;
        if (pn->folded || pn->skip || pn->fused_away || pn->n_in != 2 ||
            !ox_gelu_chain_match(pn->node, &m))
            continue;
        int kf = plan_index_before(p, k, m.first), ke = plan_index_before(p, k, m.erf);
        int ka = plan_index_before(p, k, m.add);
        if (kf < 0 || ke < 0 || ka < 0)
            continue;
        plan_node *nf = &p->nodes[kf], *ne = &p->nodes[ke], *na = &p->nodes[ka];
        if (nf->folded || ne->folded || na->folded || nf->skip || ne->skip || na->skip ||
            nf->fused_away || ne->fused_away || na->fused_away)
            continue;
        int ix = m.first->inputs[0] == m.x ? 0 : 1;
        int ic2 = m.add->inputs[0] == m.c2 ? 0 : 1;
        slot_ref rx = nf->in[ix], r1 = nf->in[1 - ix], r2 = na->in[ic2];
        if (!fixed_const(p, r1) || !fixed_const(p, r2))
            continue;
        slot_ref *in = calloc(4, sizeof *in);
        if (!in)
            return;
        in[0] = rx, in[1] = r1, in[2] = r2;
        free(pn->in);
        pn->in = in;
        pn->n_in = 3;
        pn->fn = m.div ? ox_gelu_chain_div : ox_gelu_chain_mul;
        pn->writes_all = true;
        nf->fused_away = ne->fused_away = na->fused_away = true;
    }
}

/* ---- elementwise groups in one pass (ew_fuse.h) ---------------------------- */

static ox_status ew_fused_kernel(ox_kernel_ctx *c)
{
    const frame *f = c->priv;
    if (!f || !f->cur || !f->cur->ew)
        return ox_errorf(c->err, OX_EINVAL, "fused elementwise group without its program");
    return ox_ew_prog_run(c, f->cur->ew);
}

/* A value known not to be float32 (a plan constant's or initializer's
 * dtype, or the type inference or the file gave it): shape arithmetic on
 * int64 would take the group's slow path on every run. */
static bool known_non_float(const ox_plan *p, int slot, const ox_value *v)
{
    const ox_rval *c = slot >= 0 && slot < p->n_slots ? p->consts[slot] : NULL;
    if (c && c->kind == OX_RV_TENSOR && c->t)
        return c->t->dtype != OX_DT_FLOAT;
    if (v && v->init)
        return v->init->dtype != OX_DT_FLOAT;
    return v && v->type && v->type->kind == OX_TYPE_TENSOR && v->type->elem != OX_DT_FLOAT &&
           v->type->elem != OX_DT_UNDEFINED;
}

/* A node a group may take: one of ew_fuse's ops on its own kernel, not
 * already part of another plan-time rewrite (oneDNN primitive or its
 * fused activation, Conv chain, channels-last op, lazy Concat, GELU chain,
 * folded). */
static bool ew_candidate(const ox_plan *p, int k, const int *in_group)
{
    const plan_node *pn = &p->nodes[k];
    if (in_group[k] || pn->folded || pn->skip || pn->fused_away || pn->dnnl || pn->act_k >= 0 ||
        pn->chain || pn->nhwc_kind || pn->lazy_last || pn->cat_of || pn->ew || pn->n_out != 1 ||
        pn->out[0] < 0 || pn->n_in != pn->node->n_inputs || !ox_ew_fusable(pn->node, pn->opset))
        return false;
    if (pn->fn != ox_kernel_lookup("", pn->node->op_type, pn->opset))
        return false;
    for (int i = 0; i < pn->n_in; i++)
        if (pn->in[i].depth != 0 || known_non_float(p, pn->in[i].slot, pn->node->inputs[i]))
            return false;
    return !known_non_float(p, pn->out[0], pn->node->outputs[0]);
}

/* Whether one pass beats the member kernels (PERFORMANCE.md "Elementwise
 * groups", AVX-512 Zen 4 host): it does when a member costs more than a
 * load and a store per element (Div, Pow, Sqrt, Reciprocal, Exp, Log,
 * Tanh, Sigmoid, Erf) or when the output fits the caches; a chain of Adds,
 * Muls, Subs and sign ops on a known output over 4 MiB ran 1.1-1.4x slower
 * in one pass than as in-place kernels (memory-bound either way, and the
 * kernels' in-place passes stay in cache). Unknown sizes group. */
static bool ew_worth(const ox_plan *p, const int *list, int cnt)
{
    static const char *const heavy[] = {"Div", "Pow", "Sqrt", "Reciprocal", "Exp", "Log",
                                        "Tanh", "Sigmoid", "Erf", NULL};
    for (int a = 0; a < cnt; a++)
        for (int h = 0; heavy[h]; h++)
            if (!strcmp(p->nodes[list[a]].node->op_type, heavy[h]))
                return true;
    /* The largest element count any value of the group is known to have
     * (its members' outputs and operands: the output has the largest). */
    for (int a = 0; a < cnt; a++) {
        const ox_node *nd = p->nodes[list[a]].node;
        for (int i = -1; i < nd->n_inputs; i++) {
            const ox_value *v = i < 0 ? nd->outputs[0] : nd->inputs[i];
            const ox_type *t = v ? (v->type ? v->type : v->decl) : NULL;
            if (!t || t->kind != OX_TYPE_TENSOR || !ox_type_is_static(t))
                continue;
            int64_t n = 1;
            for (int d = 0; d < t->rank; d++)
                n = n <= INT64_MAX / (t->dims[d].value + 1) ? n * t->dims[d].value : INT64_MAX;
            if (n > (int64_t)(4u << 20) / 4)
                return false;
        }
    }
    return true;
}

static int ew_member_pos(const int *list, int n, int k)
{
    for (int i = 0; i < n; i++)
        if (list[i] == k)
            return i;
    return -1;
}

/* Groups of elementwise nodes computed by their root in one pass: grown
 * from each root (latest first) through producers whose output only group
 * members read (no graph output, no subgraph reader), up to
 * OX_EW_MAX_MEMBERS nodes and OX_EW_MAX_LEAVES external operands. A Pow's
 * exponent stays an operand (its kernel picks x*x for a one-element 2).
 * The leaves are read when the root runs, so each lives until then
 * (last_use, and ox_arena_keep for the arena's plan). */
static void plan_ew_fuse(ox_plan *p, int *last_use, ox_arena_cache *ac)
{
    int n = p->n_nodes;
    int *prod = malloc(((size_t)p->n_slots + 1) * sizeof *prod);
    int *in_group = calloc((size_t)n + 1, sizeof *in_group);
    unsigned char *sub_read = calloc((size_t)p->n_slots + 1, 1);
    vlist imp = {0};
    if (!prod || !in_group || !sub_read)
        goto out;
    for (int s = 0; s < p->n_slots; s++)
        prod[s] = -1;
    for (int k = 0; k < n; k++) {
        const plan_node *pn = &p->nodes[k];
        for (int i = 0; i < pn->n_out; i++)
            if (pn->out[i] >= 0)
                prod[pn->out[i]] = k;
        imp.n = 0;
        if (ox_node_has_subgraph(pn->node) && !node_implicit_inputs(pn->node, &imp))
            goto out;
        for (int i = 0; i < imp.n; i++) {
            int s = pmap_get(&p->slots, imp.v[i]);
            if (s >= 0)
                sub_read[s] = 1;
        }
    }
    for (int r = n - 1; r >= 0; r--) {
        if (!ew_candidate(p, r, in_group))
            continue;
        int list[OX_EW_MAX_MEMBERS], cnt = 1;
        list[0] = r;
        for (bool grew = true; grew && cnt < OX_EW_MAX_MEMBERS;) {
            grew = false;
            for (int mi = 0; mi < cnt && cnt < OX_EW_MAX_MEMBERS; mi++) {
                const plan_node *m = &p->nodes[list[mi]];
                for (int i = 0; i < m->n_in && cnt < OX_EW_MAX_MEMBERS; i++) {
                    if (i == 1 && ox_node_is(m->node, "Pow"))
                        continue;
                    int s = m->in[i].slot, pk = prod[s];
                    const ox_value *v = p->slot_value[s];
                    if (pk < 0 || ew_member_pos(list, cnt, pk) >= 0 || sub_read[s] || !v ||
                        v->is_output || p->consts[s] || !ew_candidate(p, pk, in_group))
                        continue;
                    bool inside = v->n_uses > 0;
                    for (int u = 0; inside && u < v->n_uses; u++) {
                        bool found = false;
                        for (int j = 0; j < cnt && !found; j++)
                            found = v->uses[u].node == p->nodes[list[j]].node;
                        inside = found;
                    }
                    if (!inside)
                        continue;
                    list[cnt++] = pk;
                    grew = true;
                }
            }
        }
        if (cnt < 2 || !ew_worth(p, list, cnt))
            continue;
        /* Plan order is a topological order. */
        for (int a = 1; a < cnt; a++)
            for (int b = a; b > 0 && list[b - 1] > list[b]; b--) {
                int t = list[b];
                list[b] = list[b - 1];
                list[b - 1] = t;
            }
        ox_ew_member mem[OX_EW_MAX_MEMBERS];
        slot_ref leaves[OX_EW_MAX_LEAVES];
        int nl = 0;
        bool ok = true;
        for (int a = 0; a < cnt && ok; a++) {
            const plan_node *m = &p->nodes[list[a]];
            mem[a] = (ox_ew_member){m->node, m->fn, m->opset, {0, 0}};
            for (int i = 0; i < m->n_in && ok; i++) {
                int pos = ew_member_pos(list, cnt, prod[m->in[i].slot]);
                if (pos >= 0 && prod[m->in[i].slot] >= 0) {
                    mem[a].src[i] = -1 - pos;
                    continue;
                }
                int l = 0;
                while (l < nl && leaves[l].slot != m->in[i].slot)
                    l++;
                if (l == nl) {
                    if (nl == OX_EW_MAX_LEAVES) {
                        ok = false;
                        break;
                    }
                    leaves[nl++] = m->in[i];
                }
                mem[a].src[i] = l;
            }
        }
        /* Every leaf must outlive its last reader until the root runs. */
        for (int l = 0; l < nl && ok; l++) {
            int s = leaves[l].slot;
            const ox_value *v = p->slot_value[s];
            bool planned = v && !v->is_input && !p->consts[s];
            if (planned && last_use[s] < r && !(v->name && v->name[0]))
                ok = false;
        }
        ox_ew_prog *prog = ok ? ox_ew_prog_new(cnt, mem, nl) : NULL;
        slot_ref *in = prog ? calloc((size_t)nl + 1, sizeof *in) : NULL;
        if (!in) {
            ox_ew_prog_free(prog);
            continue;
        }
        for (int l = 0; l < nl; l++) {
            int s = leaves[l].slot;
            const ox_value *v = p->slot_value[s];
            in[l] = leaves[l];
            if (last_use[s] < r) {
                last_use[s] = r;
                if (ac && v && !v->is_input && !p->consts[s])
                    keep_value(ac, p, v, r);
            }
        }
        plan_node *root = &p->nodes[r];
        free(root->in);
        root->in = in;
        root->n_in = nl;
        root->fn = ew_fused_kernel;
        root->ew = prog;
        root->writes_all = true;
        for (int a = 0; a < cnt; a++) {
            in_group[list[a]] = 1;
            if (list[a] != r) {
                p->nodes[list[a]].fused_away = true;
                p->n_ew_fused++;
            }
        }
    }
out:
    free(prod);
    free(in_group);
    free(sub_read);
    free(imp.v);
}

/* A MatMul on oneDNN whose only reader is Add(product, constant row) (the
 * bias of a linear layer as exported): the primitive adds the row itself
 * and the Add becomes a skip node, like a fused activation (act_k). The Add
 * is commutative, so its plan inputs are ordered product first, which the
 * skip node and the declined-at-run-time path (run_kernel: the MatMul's own
 * kernel, then the Add's on its output) both expect. Saves a pass over each
 * product (the encoder's QKV, linear1 and linear2 outputs). */
static void plan_dnnl_bias(const ox_exec *e, ox_plan *p)
{
    if (e->opts.keep_intermediates)
        return;
    for (int k = 0; k < p->n_nodes; k++) {
        plan_node *pn = &p->nodes[k];
        const ox_node *n = pn->node;
        if (!pn->dnnl || pn->act_k >= 0 || pn->skip || pn->folded || pn->fused_away ||
            (n->domain && n->domain[0]) || strcmp(n->op_type, "MatMul") || n->n_outputs != 1)
            continue;
        const ox_value *v = n->outputs[0];
        if (!v || v->is_output || v->n_uses != 1 || !v->uses[0].node)
            continue;
        const ox_node *add = v->uses[0].node;
        if ((add->domain && add->domain[0]) || strcmp(add->op_type, "Add") ||
            add->n_inputs != 2 || add->n_outputs != 1 || add->inputs[0] == add->inputs[1])
            continue;
        int ka = -1;
        for (int j = k + 1; j < p->n_nodes; j++)
            if (p->nodes[j].node == add) {
                ka = j;
                break;
            }
        if (ka < 0)
            continue;
        plan_node *na = &p->nodes[ka];
        if (na->skip || na->folded || na->fused_away || na->n_in != 2)
            continue;
        int iv = add->inputs[0] == v ? 0 : 1;
        slot_ref rb = na->in[1 - iv];
        if (na->in[iv].depth != 0 || !fixed_const(p, rb))
            continue;
        const ox_rval *bv = p->consts[rb.slot];
        if (!bv || bv->kind != OX_RV_TENSOR || !ox_dnnl_set_bias(pn->dnnl, bv->t))
            continue;
        if (iv == 1) {
            slot_ref t = na->in[0];
            na->in[0] = na->in[1];
            na->in[1] = t;
        }
        pn->act_k = ka;
        na->skip = true;
    }
}

static bool fold_disabled(const ox_exec *e)
{
    return e->opts.no_fold || e->opts.keep_intermediates || ox__env_on("ONNXSCOPE_NO_PLAN_FOLD");
}

static ox_status build_plan(ox_exec *e, const ox_graph *g, ox_plan **out, ox_error *err)
{
    ox_status st = OX_OK;
    ox_plan *p = calloc(1, sizeof *p);
    int *order = NULL, *last_use = NULL;
    vlist imp = {0};
    if (!p)
        return ox_errorf(err, OX_ENOMEM, "out of memory planning graph");
    p->graph = g;

    /* Slots: every value of this scope. */
    p->n_slots = g->n_values;
    p->slot_value = calloc((size_t)p->n_slots + 1, sizeof *p->slot_value);
    p->consts = calloc((size_t)p->n_slots + 1, sizeof *p->consts);
    if (!p->slot_value || !p->consts)
        goto oom;
    for (int i = 0; i < g->n_values; i++) {
        const ox_value *v = g->values[i];
        p->slot_value[i] = v;
        if (!pmap_put(&p->slots, v, i))
            goto oom;
        if (v->init) {
            /* Initializers viewed in the mapped file sit wherever protobuf
             * put them; kernels read typed, possibly vectorized data, so
             * give misaligned ones an aligned private copy (once per plan). */
            const void *d = ox_tensor_data(v->init);
            ox_tensor *t = d && ((uintptr_t)d & 15) ? ox_tensor_clone(v->init)
                                                    : ox_tensor_share(v->init);
            p->consts[i] = t ? ox_rval_tensor(t) : NULL;
            if (!p->consts[i])
                goto oom;
        }
    }
    /* Register now so that nested lookups during this build see the slots. */
    (void)e;

    p->n_inputs = g->n_inputs;
    p->in_slots = calloc((size_t)g->n_inputs + 1, sizeof *p->in_slots);
    if (!p->in_slots)
        goto oom;
    for (int i = 0; i < g->n_inputs; i++) {
        p->in_slots[i] = pmap_get(&p->slots, g->inputs[i]);
        if (p->in_slots[i] < 0) {
            st = ox_errorf(err, OX_EMODEL, "graph input %d is not in its scope", i);
            goto fail;
        }
    }

    /* Order. */
    order = calloc((size_t)g->n_nodes + 1, sizeof *order);
    last_use = malloc(((size_t)p->n_slots + 1) * sizeof *last_use);
    if (!order || !last_use)
        goto oom;
    {
        /* The library's order (src/ir), stable on already sorted files. */
        ox_node *cyc = NULL;
        st = ox_graph_topo_order(g, order, &cyc, err);
        if (st == OX_EMODEL && cyc)
            st = ox_errorf(err, OX_EMODEL, "graph has a cycle through node '%s' (%s)",
                           node_label(cyc), cyc->op_type);
        if (st)
            goto fail;
    }

    p->n_nodes = g->n_nodes;
    p->nodes = calloc((size_t)g->n_nodes + 1, sizeof *p->nodes);
    if (!p->nodes)
        goto oom;
    for (int s = 0; s < p->n_slots; s++)
        last_use[s] = -1;
    for (int k = 0; k < g->n_nodes; k++) {
        const ox_node *n = g->nodes[order[k]];
        plan_node *pn = &p->nodes[k];
        pn->node = n;
        pn->opset = node_opset(e->model, n);
        pn->fn = ox_kernel_lookup(n->domain, n->op_type, pn->opset);
        if (!pn->fn) {
            const char *dom = (n->domain && n->domain[0]) ? n->domain : "ai.onnx";
            if (ox_kernel_exists(n->domain, n->op_type))
                st = ox_errorf(err, OX_EUNSUPPORTED,
                               "no kernel for %s::%s at opset %lld (node '%s')", dom,
                               n->op_type, (long long)pn->opset, node_label(n));
            else
                st = ox_errorf(err, OX_EUNSUPPORTED, "no kernel for %s::%s (node '%s')",
                               dom, n->op_type, node_label(n));
            goto fail;
        }
        /* What ONNX requires that a kernel would run with a guess: an If
         * without both branches, Resize-11's roi (plan_check.c). */
        if ((st = ox__plan_check_node(n, pn->opset, node_label(n), err)))
            goto fail;
        pn->n_in = n->n_inputs;
        pn->n_out = n->n_outputs;
        pn->writes_all = writes_every_element(n);
        pn->in = calloc((size_t)n->n_inputs + 1, sizeof *pn->in);
        pn->out = calloc((size_t)n->n_outputs + 1, sizeof *pn->out);
        pn->out_needed = calloc((size_t)n->n_outputs + 1, sizeof *pn->out_needed);
        if (!pn->in || !pn->out || !pn->out_needed)
            goto oom;
        for (int i = 0; i < n->n_inputs; i++) {
            ox_error sub = {0};
            if (ref_for(e, g, p, n->inputs[i], &pn->in[i], &sub) != OX_OK) {
                st = ox_errorf(err, sub.status, "node '%s' (%s) input %d: %s",
                               node_label(n), n->op_type, i, sub.msg);
                goto fail;
            }
            if (pn->in[i].depth == 0)
                last_use[pn->in[i].slot] = k;
        }
        imp.n = 0;
        if (!node_implicit_inputs(n, &imp))
            goto oom;
        for (int i = 0; i < imp.n; i++) {
            int s = pmap_get(&p->slots, imp.v[i]);
            if (s >= 0)
                last_use[s] = k;
        }
        for (int i = 0; i < n->n_outputs; i++) {
            pn->out[i] = n->outputs[i] ? pmap_get(&p->slots, n->outputs[i]) : -1;
            if (pn->out[i] >= 0 && last_use[pn->out[i]] < k)
                last_use[pn->out[i]] = k;   /* unused outputs die at once */
        }
    }
    /* Graph outputs live to the end. */
    p->n_outputs = g->n_outputs;
    p->out_refs = calloc((size_t)g->n_outputs + 1, sizeof *p->out_refs);
    if (!p->out_refs)
        goto oom;
    for (int i = 0; i < g->n_outputs; i++) {
        ox_error sub = {0};
        if (!g->outputs[i] ||
            ref_for(e, g, p, g->outputs[i], &p->out_refs[i], &sub) != OX_OK) {
            st = ox_errorf(err, OX_EMODEL, "graph output %d ('%s'): %s", i,
                           g->outputs[i] && g->outputs[i]->name ? g->outputs[i]->name : "",
                           sub.msg[0] ? sub.msg : "missing");
            goto fail;
        }
        if (p->out_refs[i].depth == 0)
            last_use[p->out_refs[i].slot] = g->n_nodes;
    }
    /* On the GPU the activations are ours to place: no oneDNN fusion of
     * CPU nodes, whose skip nodes would hand host values around; no
     * plan-time folding either (the CUDA placement runs every node). */
    if (g == e->model->graph && !fold_disabled(e) && e->opts.device != OX_DEVICE_CUDA)
        plan_fold(e, p);
    if (g == e->model->graph && !e->opts.keep_intermediates &&
        e->opts.device != OX_DEVICE_CUDA && !ox__env_on("ONNXSCOPE_NO_CHAIN_FUSE"))
        plan_gelu_chains(p);
    if (ox_dnnl_enabled() && e->opts.device != OX_DEVICE_CUDA) {
        plan_dnnl(e, p);
        if (!ox__env_on("ONNXSCOPE_NO_BIAS_FUSE"))
            plan_dnnl_bias(e, p);
        if (!e->opts.keep_intermediates)
            plan_lazy_concat(p, last_use, g == e->model->graph ? &e->arenas : NULL);
        if (g == e->model->graph && !ox__env_on("ONNXSCOPE_NO_CHAIN_BORN"))
            plan_born(p);
    }
    if (g == e->model->graph && !e->opts.keep_intermediates &&
        e->opts.device != OX_DEVICE_CUDA && !ox__env_on("ONNXSCOPE_NO_CHAIN_FUSE") &&
        !ox__env_on("ONNXSCOPE_NO_EW_FUSE"))
        plan_ew_fuse(p, last_use, &e->arenas);
    if (g == e->model->graph)
        plan_unmade(p);
    /* Release lists, and which outputs someone will read. */
    for (int s = 0; s < p->n_slots; s++) {
        int k = last_use[s];
        if (k >= 0 && k < p->n_nodes)
            p->nodes[k].n_release++;
    }
    for (int k = 0; k < p->n_nodes; k++) {
        plan_node *pn = &p->nodes[k];
        pn->release = calloc((size_t)pn->n_release + 1, sizeof *pn->release);
        if (!pn->release)
            goto oom;
        pn->n_release = 0;
    }
    for (int s = 0; s < p->n_slots; s++) {
        int k = last_use[s];
        if (k >= 0 && k < p->n_nodes) {
            plan_node *pn = &p->nodes[k];
            pn->release[pn->n_release++] = s;
        }
    }
    for (int k = 0; k < p->n_nodes; k++) {
        plan_node *pn = &p->nodes[k];
        for (int i = 0; i < pn->n_out; i++)
            pn->out_needed[i] = pn->out[i] >= 0 && last_use[pn->out[i]] > k;
    }
    goto done;
oom:
    st = ox_errorf(err, OX_ENOMEM, "out of memory planning graph");
fail:
    plan_free(p);
    p = NULL;
done:
    free(order);
    free(last_use);
    free(imp.v);
    *out = p;
    return st;
}

static ox_status get_plan(ox_exec *e, const ox_graph *g, ox_plan **out, ox_error *err)
{
    ox_plan *p = find_plan(e, g);
    if (p) {
        *out = p;
        return OX_OK;
    }
    if (e->n_plans == e->cap_plans) {
        int cap = e->cap_plans ? e->cap_plans * 2 : 8;
        ox_plan **np = realloc(e->plans, (size_t)cap * sizeof *np);
        if (!np)
            return ox_errorf(err, OX_ENOMEM, "out of memory");
        e->plans = np;
        e->cap_plans = cap;
    }
    ox_status st = build_plan(e, g, &p, err);
    if (st)
        return st;
    e->plans[e->n_plans++] = p;
    *out = p;
    return OX_OK;
}

/* ---- kernel helpers ------------------------------------------------------ */

const ox_tensor *ox_kernel_in(const ox_kernel_ctx *c, int i)
{
    if (!c || i < 0 || i >= c->n_in || !c->in[i] || c->in[i]->kind != OX_RV_TENSOR)
        return NULL;
    return c->in[i]->t;
}

/* Output i of the node being run, at its planned arena offset when the
 * frame has an arena and dtype and size match the plan; else NULL (heap).
 * The bytes are zeroed like a fresh heap tensor's. */
/* Element types whose values fill whole bytes (sub-byte types are written
 * by read-modify-write and need the zeroed slot). */
static bool whole_elements(ox_dtype dt)
{
    return dt == OX_DT_FLOAT || dt == OX_DT_DOUBLE || dt == OX_DT_FLOAT16 ||
           dt == OX_DT_BFLOAT16 || dt == OX_DT_INT32 || dt == OX_DT_INT64;
}

static ox_tensor *arena_place(ox_kernel_ctx *c, int i, ox_dtype dt, int rank,
                              const int64_t *dims, size_t bytes)
{
    frame *f = c->priv;
    if (!f || !f->arena || !f->cur || c->node != f->cur->node || c->out != f->cur_out ||
        c->n_out != f->cur->n_out || i >= 16 || dt == OX_DT_STRING || bytes == 0)
        return NULL;
    int s = f->cur->out[i];
    const ox_arena_plan *ap = f->arena;
    if (s < 0 || s >= ap->n_slots || ap->off[s] < 0 || ap->dtype[s] != dt ||
        ap->nbytes[s] != (int64_t)bytes || ap->off[s] + ap->nbytes[s] > ap->bytes)
        return NULL;
    char *data = (char *)ap->buf->data + ap->off[s];
    /* An in-place output's bytes are its input's, still to be read; a kernel
     * that writes every element needs no zeroed slot (whole-byte types). */
    if (!ap->inplace[s] && !((f->cur->writes_all || f->fills) && whole_elements(dt)))
        memset(data, 0, bytes);
    /* A writable view of its own, so that kernels writing through
     * ox_tensor_mutable_data write the slot instead of copying. */
    ox_buffer *b = ox_buffer_writable_view(ap->buf, data, bytes);
    ox_tensor *t = b ? ox_tensor_new_view(dt, rank, dims, b, 0) : NULL;
    ox_buffer_release(b);
    f->placed[i] = t;
    return t;
}

ox_tensor *ox_kernel_output(ox_kernel_ctx *c, int i, ox_dtype dt, int rank,
                            const int64_t *dims)
{
    if (!c || i < 0 || i >= c->n_out) {
        ox_errorf(c ? c->err : NULL, OX_EINVAL, "output index %d out of range", i);
        return NULL;
    }
    if (rank < 0 || rank > OX_MAX_RANK || (rank > 0 && !dims)) {
        ox_errorf(c->err, OX_ESHAPE, "output %d: bad rank %d", i, rank);
        return NULL;
    }
    int64_t numel;
    size_t bytes = 0;
    if (!ox_shape_numel(rank, dims, &numel) ||
        (dt != OX_DT_STRING && !ox_dtype_nbytes(dt, numel, &bytes))) {
        ox_errorf(c->err, OX_ESHAPE, "output %d: invalid shape", i);
        return NULL;
    }
    if (dt == OX_DT_STRING)
        bytes = (size_t)numel * sizeof(ox_bytes);
    if (bytes > max_tensor_bytes() ||
        (c->max_output_bytes > 0 && bytes > (size_t)c->max_output_bytes)) {
        char buf[128], bb[32];
        ox_errorf(c->err, OX_ERANGE, "output %d: %s tensor of %s exceeds the limit",
                  i, ox_shape_str(rank, dims, buf, sizeof buf),
                  ox_fmt_bytes(bytes > (size_t)INT64_MAX ? INT64_MAX : (int64_t)bytes, true, bb,
                               sizeof bb));
        return NULL;
    }
    /* Refused before allocating, so a bomb never touches the memory. */
    if (c->exec && ox_kernel_poll(c, (int64_t)bytes) != OX_OK)
        return NULL;
    ox_tensor *t = arena_place(c, i, dt, rank, dims, bytes);
    if (!t)
        t = ox_tensor_new(dt, rank, dims);
    if (!t) {
        ox_errorf(c->err, OX_ENOMEM, "output %d: out of memory", i);
        return NULL;
    }
    ox_rval *v = ox_rval_tensor(t);
    if (!v) {
        ox_errorf(c->err, OX_ENOMEM, "output %d: out of memory", i);
        return NULL;
    }
    ox_rval_free(c->out[i]);
    c->out[i] = v;
    return t;
}

void ox_kernel_set_output(ox_kernel_ctx *c, int i, ox_tensor *t)
{
    if (!c || i < 0 || i >= c->n_out) {
        ox_tensor_free(t);
        return;
    }
    ox_rval_free(c->out[i]);
    c->out[i] = ox_rval_tensor(t);
}

/* ---- running ------------------------------------------------------------- */

static void frame_free(frame *f)
{
    if (!f->vals)
        return;
    for (int i = 0; i < f->plan->n_slots; i++)
        if (f->owned[i])
            ox_rval_free(f->vals[i]);
    free(f->vals);
    free(f->owned);
    free(f->nhwc);
    f->nhwc = NULL;
    f->vals = NULL;
}

static ox_status frame_init(frame *f, frame *parent, const ox_plan *p, ox_error *err)
{
    memset(f, 0, sizeof *f);
    f->parent = parent;
    f->plan = p;
    f->vals = calloc((size_t)p->n_slots + 1, sizeof *f->vals);
    f->owned = calloc((size_t)p->n_slots + 1, 1);
    f->nhwc = calloc((size_t)p->n_slots + 1, 1);
    if (!f->vals || !f->owned || !f->nhwc) {
        free(f->vals);
        free(f->owned);
        free(f->nhwc);
        f->nhwc = NULL;
        f->vals = NULL;
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    }
    for (int i = 0; i < p->n_slots; i++)
        f->vals[i] = p->consts[i];
    return OX_OK;
}

static ox_rval *frame_get(const frame *f, slot_ref r)
{
    if (r.depth < 0)
        return NULL;
    for (int d = 0; d < r.depth && f; d++)
        f = f->parent;
    if (!f || r.slot < 0 || r.slot >= f->plan->n_slots)
        return NULL;
    return f->vals[r.slot];
}

static void frame_set(frame *f, int slot, ox_rval *v)
{
    if (f->owned[slot])
        ox_rval_free(f->vals[slot]);
    f->vals[slot] = v;
    f->owned[slot] = 1;
}

/* Clock of the optional per-node hook (ox_exec_opts.node_hook). */
static int64_t hook_now_ns(void)
{
    return ox_exec_clock_ns();
}

/* Aliasing rule: a value may hold arena bytes only in its own planned
 * slot. Any tensor inside v (sequence items included) that views other
 * arena bytes (Reshape/Identity/... views, subgraph results, values
 * returned by If/Loop) gets a private heap copy, so reusing a dead slot
 * can never change a live value. `keep` is the tensor placed for v. */
static ox_status arena_detach(const ox_arena_plan *ap, ox_rval *v, const ox_tensor *keep,
                              int *copies)
{
    if (!v)
        return OX_OK;
    if (v->t && v->t != keep && ox_arena_holds(ap, v->t)) {
        ox_tensor *c = ox_tensor_clone(v->t);
        if (!c)
            return OX_ENOMEM;
        ox_tensor_free(v->t);
        v->t = c;
        (*copies)++;
    }
    for (int i = 0; i < v->n_items; i++) {
        ox_status st = arena_detach(ap, v->items[i], NULL, copies);
        if (st)
            return st;
    }
    return OX_OK;
}

/* True when v is a tensor lying exactly on slot s's planned bytes: a view
 * kernel's output whose slot the plan put on its input's bytes (arena.c,
 * view_ops). Such a value holds arena bytes only in its own slot, which is
 * what the aliasing rule asks, so it needs no copy. */
static bool own_slot_view(const ox_arena_plan *ap, int s, const ox_rval *v)
{
    if (!ap || s < 0 || s >= ap->n_slots || ap->off[s] < 0 || !v ||
        v->kind != OX_RV_TENSOR || !v->t || v->n_items)
        return false;
    const ox_tensor *t = v->t;
    return t->dtype == ap->dtype[s] && (int64_t)t->nbytes == ap->nbytes[s] &&
           ox_tensor_data(t) == (const char *)ap->buf->data + ap->off[s];
}

/* A view of other arena bytes (a Reshape whose input lives on, so the
 * in-place rule could not put its slot there) copied into the value's own
 * planned slot instead of onto the heap: the plan reserved those bytes for
 * it, so the run allocates nothing. False (nothing done) when the slot does
 * not fit the tensor exactly. */
static bool arena_slot_copy(const ox_arena_plan *ap, int s, ox_rval *v)
{
    if (!ap || s < 0 || s >= ap->n_slots || ap->off[s] < 0 || !v || v->kind != OX_RV_TENSOR ||
        !v->t || v->n_items || !ox_arena_holds(ap, v->t))
        return false;
    ox_tensor *t = v->t;
    if (t->dtype != ap->dtype[s] || (int64_t)t->nbytes != ap->nbytes[s] || t->nbytes == 0 ||
        ap->off[s] + ap->nbytes[s] > ap->bytes)
        return false;
    char *data = (char *)ap->buf->data + ap->off[s];
    ox_buffer *b = ox_buffer_writable_view(ap->buf, data, t->nbytes);
    ox_tensor *c = b ? ox_tensor_new_view(t->dtype, t->rank, t->dims, b, 0) : NULL;
    ox_buffer_release(b);
    if (!c)
        return false;
    /* Planned bytes never overlap a value live beside this one; memmove
     * all the same, in case a dying input shared part of them. */
    memmove(data, ox_tensor_data(t), t->nbytes);
    ox_tensor_free(t);
    v->t = c;
    return true;
}

/* True when tensor t lies in the arena and overlaps [b0, b1). */
static bool arena_overlaps(const ox_arena_plan *ap, const ox_rval *v, const char *b0,
                           const char *b1)
{
    if (!v || v->kind != OX_RV_TENSOR || !v->t || !ox_arena_holds(ap, v->t))
        return false;
    const char *d = ox_tensor_data(v->t);
    return d < b1 && b0 < d + v->t->nbytes;
}

/* The slot a chain's oneDNN run may write straight into, or -1: when the
 * taken nodes are the ones right after the Conv (nothing else, folded nodes
 * aside, runs before
 * the value reaches the last of them), the last taken node's output slot
 * whose planned bytes do not overlap the Conv's input or Z (the only values
 * alive then that die before those slots' lives start), trying the last
 * node's first. The skip nodes then hand the value on without copies
 * (run_skip) where the memory plan gave the values of the chain other bytes
 * and the in-place rule could not join them. */
static int chain_direct_slot(const frame *f, const plan_node *pn, const ox_rval *x,
                             const ox_rval *z)
{
    const conv_chain *c = pn->chain;
    const ox_arena_plan *ap = f->arena;
    int k = (int)(pn - f->plan->nodes), last = k;
    for (int j = 0; j < c->n_taken; j++) {
        /* Folded nodes between them never run (their values are constants,
         * off the arena, even in a run_folded frame). */
        for (int i = last + 1; i < c->taken[j]; i++)
            if (!f->plan->nodes[i].folded)
                return -1;
        last = c->taken[j];
    }
    if (!ap || last == k || pn->n_out != 1)
        return -1;
    for (int j = c->n_taken - 1; j >= 0; j--) {
        if (f->plan->nodes[c->taken[j]].n_out < 1)
            continue;
        int s = f->plan->nodes[c->taken[j]].out[0];
        if (s < 0 || s >= ap->n_slots || ap->off[s] < 0)
            continue;
        const char *b0 = (const char *)ap->buf->data + ap->off[s], *b1 = b0 + ap->nbytes[s];
        /* Z exactly on those bytes (the residual Add planned in place on it,
         * so ox_kernel_output does not zero them) is fine: oneDNN's sum
         * post-op accumulates into dst, which then already holds Z
         * (dnnl_backend.c skips the seeding copy). */
        bool z_same = z && z->kind == OX_RV_TENSOR && z->t && ap->inplace[s] &&
                      (const char *)ox_tensor_data(z->t) == b0 &&
                      (int64_t)z->t->nbytes == ap->nbytes[s];
        if (!arena_overlaps(ap, x, b0, b1) && (z_same || !arena_overlaps(ap, z, b0, b1)))
            return s;
    }
    return -1;
}

/* A node planned with a Conv epilogue chain (plan_conv_chain): oneDNN with
 * the folded weights, Z and the post-ops when the baked-in constants are
 * still the run's; else our Conv on NCHW inputs and then each taken node's
 * own kernel, so results never depend on which path ran. */
static ox_status lazy_fill_inputs(ox_exec *e, frame *f, const plan_node *pn);

static ox_status run_chain(ox_exec *e, frame *f, const plan_node *pn, ox_kernel_ctx *ctx)
{
    const conv_chain *c = pn->chain;
    ox_status st = OX_OK;
    bool in_nhwc = f->nhwc && pn->n_in > 0 && pn->in[0].depth == 0 && f->nhwc[pn->in[0].slot];
    bool z_nhwc = f->nhwc && c->has_z && c->z.depth == 0 && f->nhwc[c->z.slot];
    if (f->nhwc)
        for (int i = 0; i < pn->n_out; i++)
            if (pn->out[i] >= 0)
                f->nhwc[pn->out[i]] = 0;
    bool intact = true;
    for (int i = 0; i < c->n_fixed && intact; i++)
        intact = frame_get(f, c->fixed[i]) == f->plan->consts[c->fixed[i].slot];
    if (intact) {
        ox_rval *din[4] = {0};
        for (int i = 0; i < ctx->n_in && i < 4; i++)
            din[i] = ctx->in[i];
        if (c->w)
            din[1] = c->w, din[2] = c->b;
        if (c->has_z)
            din[3] = frame_get(f, c->z);
        ox_kernel_ctx dc = *ctx;
        dc.in = din;
        dc.n_in = c->has_z ? 4 : ctx->n_in > 3 ? 4 : c->w ? 3 : ctx->n_in;
        bool out_nhwc = false, ran;
        int direct = f->cur == pn ? chain_direct_slot(f, pn, din[0], din[3]) : -1;
        if (direct >= 0) {
            /* ox_kernel_output places output 0 on the last taken node's slot. */
            plan_node tmp = *pn;
            tmp.out = &direct;
            f->cur = &tmp;
            f->fills = true;
            ran = ox_dnnl_run_ex(pn->dnnl, &dc, &st, in_nhwc, z_nhwc, &out_nhwc);
            f->fills = false;
            f->cur = pn;
            f->direct_t = NULL;
            if (ran && st == OX_OK && f->placed[0] && ctx->out[0] && ctx->out[0]->t == f->placed[0]) {
                f->direct_t = f->placed[0];
                for (int j = 0; j < c->n_taken; j++)
                    if (f->plan->nodes[c->taken[j]].out[0] == direct)
                        f->direct_until = c->taken[j];
            }
        } else {
            f->fills = true;   /* a primitive writes its whole dst */
            ran = ox_dnnl_run_ex(pn->dnnl, &dc, &st, in_nhwc, z_nhwc, &out_nhwc);
            f->fills = false;
        }
        if (ran) {
            if (out_nhwc && pn->out[0] >= 0)
                f->nhwc[pn->out[0]] = 1;
            return st;
        }
    }
    /* Our kernels read NCHW: channels-last inputs converted first. */
    ox_rval **in = (ox_rval **)ctx->in;   /* run_frame's own array */
    if (st == OX_OK && (st = lazy_fill_inputs(e, f, pn)))
        return ox_errorf(ctx->err, st, "lazy Concat: cannot write its output");
    ox_rval *saved[4] = {0}, *plain[4] = {0};
    for (int i = 0; f->nhwc && i < pn->n_in && st == OX_OK; i++)
        if (pn->in[i].depth == 0 && f->nhwc[pn->in[i].slot]) {
            if (i != 0 && i != 3)
                st = ox_errorf(ctx->err, OX_EINVAL, "channels-last value read by input %d", i);
            else if (!(plain[i] = nhwc_to_plain(in[i])))
                st = ox_errorf(ctx->err, OX_ENOMEM, "out of memory");
            else
                saved[i] = in[i], in[i] = plain[i];
        }
    if (st == OX_OK)
        st = pn->fn(ctx);
    for (int i = 0; i < 4; i++)
        if (plain[i]) {
            in[i] = saved[i];
            ox_rval_free(plain[i]);
        }
    for (int j = 0; j < c->n_taken && st == OX_OK; j++) {
        const plan_node *an = &f->plan->nodes[c->taken[j]];
        ox_rval *ain[8] = {0}, *aout[8] = {0}, *zp = NULL;
        if (an->n_in > 8 || an->n_out > 8)
            return ox_errorf(ctx->err, OX_EINVAL, "fused node has too many inputs");
        for (int i = 0; i < an->n_in; i++)
            ain[i] = frame_get(f, an->in[i]);
        ain[an->skip_in] = ctx->out[0];
        if (c->taken[j] == c->sum_k && f->nhwc) {
            int oi = 1 - an->skip_in;
            if (an->in[oi].depth == 0 && f->nhwc[an->in[oi].slot]) {
                if (!(zp = nhwc_to_plain(ain[oi])))
                    return ox_errorf(ctx->err, OX_ENOMEM, "out of memory");
                ain[oi] = zp;
            }
        }
        ox_kernel_ctx ac = {
            .node = an->node, .opset = an->opset, .n_in = an->n_in, .in = ain,
            .n_out = an->n_out, .out = aout, .exec = e, .pool = e->pool,
            .err = ctx->err, .priv = NULL,
        };
        st = an->fn(&ac);
        ox_rval_free(zp);
        if (st == OX_OK && !aout[0])
            st = ox_errorf(ctx->err, OX_EINVAL, "fused node produced no value");
        for (int i = 1; i < an->n_out; i++)
            ox_rval_free(aout[i]);
        if (st) {
            ox_rval_free(aout[0]);
            break;
        }
        ox_rval_free(ctx->out[0]);
        ctx->out[0] = aout[0];
        f->placed[0] = NULL;   /* the placed tensor is gone */
    }
    return st;
}

/* A pooling/Concat node planned channels-last (plan_nhwc_ops): when every
 * input arrived NHWC, our channels-last kernel runs it and its output is
 * NHWC too (global pooling's [N,C,1,1] is the same either way: plain).
 * False when an input is plain (a producer that declined at run time) or
 * the kernel declines: the plain kernel runs, after conversion. */
static bool run_nhwc_op(frame *f, const plan_node *pn, ox_kernel_ctx *ctx, ox_status *st)
{
    for (int i = 0; i < pn->n_in; i++)
        if (pn->in[i].depth != 0 || !f->nhwc[pn->in[i].slot])
            return false;
    if (!ox_nhwc_run(pn->nhwc_kind, ctx, st))
        return false;
    if (*st == OX_OK && pn->nhwc_kind != OX_NHWC_GLOBAL_POOL && pn->n_out >= 1 && pn->out[0] >= 0)
        f->nhwc[pn->out[0]] = 1;
    return true;
}

/* A node's kernel: oneDNN's when the plan gave it one and it takes these
 * inputs, else ours followed by the activation oneDNN would have fused. */
static ox_status run_kernel(ox_exec *e, frame *f, const plan_node *pn, ox_kernel_ctx *ctx)
{
    ox_status st;
    if (pn->chain)
        return run_chain(e, f, pn, ctx);
    bool in_nhwc = f->nhwc && pn->n_in > 0 && pn->in[0].depth == 0 && f->nhwc[pn->in[0].slot];
    if (f->nhwc)
        for (int i = 0; i < pn->n_out; i++)
            if (pn->out[i] >= 0)
                f->nhwc[pn->out[i]] = 0;
    bool out_nhwc = false;
    if (pn->nhwc_kind && f->nhwc && run_nhwc_op(f, pn, ctx, &st))
        return st;
    /* A primitive writes its whole dst: no zeroing of the slot first. */
    f->fills = pn->dnnl != NULL;
    bool dran = pn->dnnl && ox_dnnl_run(pn->dnnl, ctx, &st, in_nhwc, &out_nhwc);
    f->fills = false;
    if (dran) {
        if (out_nhwc && pn->out[0] >= 0)
            f->nhwc[pn->out[0]] = 1;
        return st;
    }
    /* Our kernels read NCHW: a channels-last input (its oneDNN or
     * channels-last reader declined it at run time) is converted first. */
    if ((st = lazy_fill_inputs(e, f, pn)))
        return ox_errorf(ctx->err, st, "lazy Concat: cannot write its output");
    enum { MAXCV = 64 };
    ox_rval *plain[MAXCV], *saved[MAXCV];
    int n_cv = 0;
    ox_status cst = OX_OK;
    for (int i = 0; f->nhwc && i < pn->n_in; i++)
        if (pn->in[i].depth == 0 && f->nhwc[pn->in[i].slot]) {
            ox_rval *pv = n_cv < MAXCV ? nhwc_to_plain(ctx->in[i]) : NULL;
            if (!pv) {
                cst = ox_errorf(ctx->err, OX_ENOMEM, "channels-last input %d: out of memory", i);
                break;
            }
            plain[n_cv] = pv;
            saved[n_cv++] = ctx->in[i];
            ((ox_rval **)ctx->in)[i] = pv;   /* run_frame's own array */
        }
    st = cst ? cst : pn->fn(ctx);
    for (int i = 0, c = 0; c < n_cv && i < pn->n_in; i++)
        if (ctx->in[i] == plain[c]) {
            ((ox_rval **)ctx->in)[i] = saved[c];
            ox_rval_free(plain[c++]);
        }
    if (st || !pn->dnnl || pn->act_k < 0)
        return st;
    const plan_node *an = &f->plan->nodes[pn->act_k];
    ox_rval *ain[8] = {0}, *aout[4] = {0};
    if (an->n_in > 8 || an->n_out > 4)
        return ox_errorf(ctx->err, OX_EINVAL, "fused activation has too many inputs");
    ain[0] = ctx->out[0];
    for (int i = 1; i < an->n_in; i++)
        ain[i] = frame_get(f, an->in[i]);
    ox_kernel_ctx ac = {
        .node = an->node, .opset = an->opset, .n_in = an->n_in, .in = ain,
        .n_out = an->n_out, .out = aout, .exec = e, .pool = e->pool,
        .err = ctx->err, .priv = NULL,
    };
    st = an->fn(&ac);
    if (st == OX_OK && !aout[0])
        st = ox_errorf(ctx->err, OX_EINVAL, "fused activation produced no value");
    for (int i = 1; i < an->n_out; i++)
        ox_rval_free(aout[i]);
    if (st) {
        ox_rval_free(aout[0]);
        return st;
    }
    ox_rval_free(ctx->out[0]);
    ctx->out[0] = aout[0];
    f->placed[0] = NULL;   /* the placed tensor is gone */
    return OX_OK;
}

/* A fused activation node: its producer already applied it, so the value
 * moves to this node's output slot. It stays where it is unless it sits in
 * an arena region that this slot does not share (that region is reused once
 * the input slot dies): then a heap copy. */
static ox_status run_skip(ox_exec *e, frame *f, const plan_node *pn, ox_error *err)
{
    int64_t t0 = e->opts.node_hook ? hook_now_ns() : 0;
    int s_in = pn->in[pn->skip_in].slot, s_out = pn->n_out >= 1 ? pn->out[0] : -1;
    ox_rval *v = pn->in[pn->skip_in].depth == 0 ? f->vals[s_in] : NULL;
    if (!v)
        return ox_errorf(err, OX_EINVAL, "node '%s' (%s): fused input has no value",
                         node_label(pn->node), pn->node->op_type);
    if (s_out >= 0 && f->nhwc)
        f->nhwc[s_out] = f->nhwc[s_in];
    if (s_out >= 0) {
        const ox_arena_plan *ap = f->arena;
        bool in_arena = ap && v->kind == OX_RV_TENSOR && v->t && ox_arena_holds(ap, v->t);
        bool shared = in_arena && s_in < ap->n_slots && s_out < ap->n_slots &&
                      ap->off[s_in] >= 0 && ap->off[s_out] == ap->off[s_in];
        /* A Conv chain's output written straight on the slot of a later
         * taken node (chain_direct_slot): moved on as is up to that node. */
        if (in_arena && v->t == f->direct_t && pn - f->plan->nodes <= f->direct_until)
            shared = true;
        if (f->owned[s_in] && (!in_arena || shared)) {
            f->vals[s_in] = f->plan->consts[s_in];
            f->owned[s_in] = 0;
            frame_set(f, s_out, v);
        } else if (v->kind == OX_RV_TENSOR && v->t && v->t->dtype != OX_DT_STRING) {
            /* Copy into this slot's own planned bytes (or the heap). */
            ox_rval *out[16] = {0};
            ox_error kerr = {0};
            ox_kernel_ctx ctx = {
                .node = pn->node, .opset = pn->opset, .n_in = pn->n_in, .n_out = pn->n_out,
                .out = out, .exec = e, .pool = e->pool, .err = &kerr, .priv = f,
            };
            if (pn->n_out > 16)
                return ox_errorf(err, OX_EINVAL, "too many outputs");
            f->cur = pn;
            f->cur_out = out;
            f->fills = true;   /* the memcpy below writes every byte */
            ox_tensor *t = ox_kernel_output(&ctx, 0, v->t->dtype, v->t->rank, v->t->dims);
            f->fills = false;
            f->cur = NULL;
            f->cur_out = NULL;
            void *dst = t ? ox_tensor_mutable_data(t) : NULL;
            if (!t || (!dst && v->t->nbytes)) {
                ox_rval_free(out[0]);
                return ox_errorf(err, kerr.status ? kerr.status : OX_ENOMEM, "node '%s' (%s): %s",
                                 node_label(pn->node), pn->node->op_type,
                                 kerr.msg[0] ? kerr.msg : "out of memory");
            }
            if (v->t->nbytes)
                memcpy(dst, ox_tensor_data(v->t), v->t->nbytes);
            frame_set(f, s_out, out[0]);
            if (f->stats)
                f->stats->skip_copies++;
        } else {
            ox_rval *c = ox_rval_clone(v);
            if (!c)
                return ox_errorf(err, OX_ENOMEM, "out of memory");
            frame_set(f, s_out, c);
        }
    }
    if (e->opts.node_hook)
        e->opts.node_hook(e->opts.node_hook_user, pn->node, t0, hook_now_ns());
    return OX_OK;
}

static void release_after(const ox_exec *e, frame *f, const plan_node *pn)
{
    if (e->opts.keep_intermediates)
        return;
    for (int r = 0; r < pn->n_release; r++) {
        int s = pn->release[r];
        if (f->cuda)
            ox_cuda_release(f->cuda, s);
        if (f->owned[s]) {
            ox_rval_free(f->vals[s]);
            f->owned[s] = 0;
        }
        f->vals[s] = f->plan->consts[s];
    }
}


/* ---- lazy channel Concat at run time (plan_lazy_concat) ---------------------- */

/* f->nhwc bit 2: the slot holds a lazy Concat's output, not written yet. */
#define NHWC_UNFILLED 2

typedef struct lazy_fill_ctx {
    ox_exec *e;
    frame *f;
    const plan_node *cat;
} lazy_fill_ctx;

static int lazy_parts(const frame *f, const plan_node *cat, const ox_tensor **parts)
{
    for (int i = 0; i < cat->n_in; i++) {
        const ox_rval *v = frame_get(f, cat->in[i]);
        if (!v || v->kind != OX_RV_TENSOR || !v->t)
            return -1;
        parts[i] = v->t;
    }
    return cat->n_in;
}

/* Writes the Concat's output now (a reader that needs the concatenation). */
static ox_status lazy_fill(ox_exec *e, frame *f, const plan_node *cat)
{
    int s = cat->out[0];
    if (!(f->nhwc[s] & NHWC_UNFILLED))
        return OX_OK;
    const ox_tensor *parts[8];
    ox_rval *y = f->vals[s];
    f->nhwc[s] &= (unsigned char)~NHWC_UNFILLED;
    if (lazy_parts(f, cat, parts) < 0 || !y || !y->t ||
        !ox_nhwc_concat_into(e->pool, parts, cat->n_in, y->t))
        return OX_EINVAL;
    return OX_OK;
}

static ox_status lazy_fill_cb(void *user)
{
    lazy_fill_ctx *lc = user;
    return lazy_fill(lc->e, lc->f, lc->cat);
}

/* Materializes every unfilled lazy Concat node pn reads (our kernels). */
static ox_status lazy_fill_inputs(ox_exec *e, frame *f, const plan_node *pn)
{
    for (int i = 0; f->nhwc && i < pn->n_in; i++) {
        if (pn->in[i].depth != 0 || !(f->nhwc[pn->in[i].slot] & NHWC_UNFILLED))
            continue;
        for (int k = 0; k < f->plan->n_nodes; k++) {
            const plan_node *c = &f->plan->nodes[k];
            if (c->lazy_last && c->out[0] == pn->in[i].slot) {
                ox_status st = lazy_fill(e, f, c);
                if (st)
                    return st;
            }
        }
    }
    return OX_OK;
}

/* The lazy Concat itself: true when left unwritten (its output is a tensor
 * of the right shape, marked unfilled). Only when every part arrived NHWC
 * and, in an arena, no node up to lazy_last writes bytes of a part. */
static bool lazy_concat(frame *f, const plan_node *pn, ox_kernel_ctx *ctx, ox_status *st)
{
    const ox_tensor *parts[8];
    if (!f->nhwc || lazy_parts(f, pn, parts) < 0)
        return false;
    int64_t od[4] = {parts[0]->dims[0], 0, parts[0]->dims[2], parts[0]->dims[3]};
    for (int i = 0; i < pn->n_in; i++) {
        const ox_tensor *x = parts[i];
        if (!(f->nhwc[pn->in[i].slot] & 1) || x->dtype != OX_DT_FLOAT || x->rank != 4 ||
            x->dims[0] != od[0] || x->dims[2] != od[2] || x->dims[3] != od[3])
            return false;
        od[1] += x->dims[1];
    }
    /* A Conv reader on n parts writes its output n times (the later parts
     * add to it): worth it while those extra (n - 1) outputs are smaller
     * than the Concat, whose copy they replace. SqueezeNet's squeeze convs
     * (16-64 channels from 128-512) are; its classifier (1000 from 512) is
     * not: 1.28 -> 1.43 ms on 2 threads in a fire module ending in it
     * (docs/PERFORMANCE.md). Spatial sizes taken as equal (pads "same"). */
    if ((int64_t)(pn->n_in - 1) * pn->lazy_conv_m >= od[1])
        return false;
    const ox_arena_plan *ap = f->arena;
    int k = (int)(pn - f->plan->nodes);
    for (int m = k + 1; ap && m <= pn->lazy_last && m < f->plan->n_nodes; m++) {
        const plan_node *mn = &f->plan->nodes[m];
        for (int o = 0; o < mn->n_out; o++) {
            int s = mn->out[o];
            if (s < 0 || s >= ap->n_slots || ap->off[s] < 0)
                continue;
            const char *b0 = (const char *)ap->buf->data + ap->off[s], *b1 = b0 + ap->nbytes[s];
            for (int i = 0; i < pn->n_in; i++)
                if (arena_overlaps(ap, frame_get(f, pn->in[i]), b0, b1))
                    return false;
        }
    }
    ox_tensor *y = ox_kernel_output(ctx, 0, OX_DT_FLOAT, 4, od);
    if (!y) {
        *st = ctx->err && ctx->err->status ? ctx->err->status : OX_ENOMEM;
        return true;
    }
    f->nhwc[pn->out[0]] = 1 | NHWC_UNFILLED;
    ox_nhwc_count_lazy();
    *st = OX_OK;
    return true;
}

/* run_kernel, with the lazy Concat's two sides: the Concat, and a reader
 * of an unfilled one (parts to its channels-last pooling or its oneDNN
 * Conv; anything else materializes it first). */
static ox_status run_lazy(ox_exec *e, frame *f, const plan_node *pn, ox_kernel_ctx *ctx)
{
    ox_status st = OX_OK;
    if (pn->lazy_last && lazy_concat(f, pn, ctx, &st))
        return st;
    const plan_node *cat = pn->cat_of ? &f->plan->nodes[pn->cat_of - 1] : NULL;
    if (!cat || !f->nhwc || !(f->nhwc[cat->out[0]] & NHWC_UNFILLED)) {
        if ((st = lazy_fill_inputs(e, f, pn)))
            return ox_errorf(ctx->err, st, "lazy Concat: cannot write its output");
        return run_kernel(e, f, pn, ctx);
    }
    const ox_tensor *parts[8];
    int n = lazy_parts(f, cat, parts);
    if (n > 0 && pn->nhwc_kind == OX_NHWC_POOL) {
        if (ox_nhwc_pool_parts(ctx, parts, n, &st)) {
            if (st == OX_OK && pn->out[0] >= 0)
                f->nhwc[pn->out[0]] = 1;
            return st;
        }
    } else if (n > 0 && pn->dnnl) {
        lazy_fill_ctx lc = {e, f, cat};
        ox_dnnl_set_parts(parts, n, lazy_fill_cb, &lc);
        st = run_kernel(e, f, pn, ctx);
        ox_dnnl_set_parts(NULL, 0, NULL, NULL);
        return st;
    }
    if ((st = lazy_fill(e, f, cat)))
        return ox_errorf(ctx->err, st, "lazy Concat: cannot write its output");
    return run_kernel(e, f, pn, ctx);
}

/* Copies slot s of a CUDA run to the host when only the device has it. */
static ox_status cuda_to_host(frame *f, int s, ox_error *err)
{
    if (!f->cuda || !ox_cuda_device_only(f->cuda, s))
        return OX_OK;
    ox_rval *v = NULL;
    ox_status st = ox_cuda_fetch(f->cuda, f->cplan, s, &v, err);
    if (st)
        return st;
    frame_set(f, s, v);
    return OX_OK;
}

/* A node of a CUDA run: on the GPU when the plan placed it there (its
 * outputs then stay on the device); else the values it reads that only the
 * device has are copied to the host first (all of them when the node has a
 * subgraph, which may read any outer value). *done: the GPU ran it. */
static ox_status cuda_node(ox_exec *e, frame *f, int k, const plan_node *pn, bool *done,
                           ox_error *err)
{
    *done = false;
    const ox_cuda_plan *cp = f->cplan;
    if (cp->pconst[k]) {
        /* Shape arithmetic the plan computed for these input shapes. */
        for (int i = 0; i < pn->n_out; i++) {
            int s = pn->out[i];
            ox_tensor *t = s >= 0 && cp->pval[s] ? ox_tensor_share(cp->pval[s]) : NULL;
            ox_rval *v = t ? ox_rval_tensor(t) : NULL;
            if (s >= 0 && cp->pval[s] && !v)
                return ox_errorf(err, OX_ENOMEM, "out of memory");
            if (v)
                frame_set(f, s, v);
        }
        *done = true;
        return OX_OK;
    }
    if (!cp->kind[k]) {
        bool sub = false;
        for (int a = 0; a < pn->node->n_attrs; a++)
            sub |= pn->node->attrs[a].type == OX_ATTR_GRAPH ||
                   pn->node->attrs[a].type == OX_ATTR_GRAPHS;
        for (int s = 0; sub && s < f->plan->n_slots; s++) {
            ox_status st = cuda_to_host(f, s, err);
            if (st)
                return st;
        }
        /* Shape and Size read only the dims: the planned shape with zeroed
         * bytes stands in (no download; a later reader of the data still
         * downloads it, as the slot stays device-only). */
        const char *op = pn->node->op_type;
        bool dims_only = (!pn->node->domain || !pn->node->domain[0]) &&
                         (!strcmp(op, "Shape") || !strcmp(op, "Size"));
        for (int i = 0; i < pn->n_in; i++)
            if (pn->in[i].depth == 0) {
                int s = pn->in[i].slot;
                if (dims_only && i == 0 && ox_cuda_device_only(f->cuda, s) &&
                    cp->slot[s].is_static) {
                    ox_tensor *t = ox_tensor_new(cp->slot[s].dtype, cp->slot[s].rank,
                                                 cp->slot[s].dims);
                    ox_rval *v = t ? ox_rval_tensor(t) : NULL;
                    if (!v)
                        return ox_errorf(err, OX_ENOMEM, "out of memory");
                    frame_set(f, s, v);
                    continue;
                }
                ox_status st = cuda_to_host(f, s, err);
                if (st)
                    return st;
            }
        return OX_OK;
    }
    int in_slot[16], out_slot[8];
    ox_rval *host[16];
    if (pn->n_in > 16 || pn->n_out > 8)
        return ox_errorf(err, OX_EINVAL, "node '%s' (%s): too many inputs for the GPU",
                         node_label(pn->node), pn->node->op_type);
    for (int i = 0; i < pn->n_in; i++) {
        in_slot[i] = pn->in[i].depth == 0 ? pn->in[i].slot : -1;
        host[i] = frame_get(f, pn->in[i]);
    }
    for (int i = 0; i < pn->n_out; i++)
        out_slot[i] = pn->out[i];
    int64_t t0 = e->opts.node_hook ? hook_now_ns() : 0;
    ox_error kerr = {0};
    ox_status st = exec_poll(e, 0, &kerr);
    if (!st)
        st = ox_cuda_run_node(f->cuda, cp, k, in_slot, out_slot, host, &kerr);
    if (e->opts.node_hook) {
        /* Kernels run asynchronously: a timed node waits for its own. */
        if (!st)
            st = ox_cuda_sync(f->cuda, &kerr);
        e->opts.node_hook(e->opts.node_hook_user, pn->node, t0, hook_now_ns());
    }
    if (st == OX_ECANCELLED || st == OX_ETIMEDOUT)
        return ox_errorf(err, st, "%s", kerr.msg);
    if (st)
        return ox_errorf(err, st, "node '%s' (%s) on the GPU: %s", node_label(pn->node),
                         pn->node->op_type, kerr.msg);
    /* A host value a slot held before (an earlier run's) is stale now. */
    for (int i = 0; i < pn->n_out; i++)
        if (pn->out[i] >= 0 && f->owned[pn->out[i]]) {
            ox_rval_free(f->vals[pn->out[i]]);
            f->vals[pn->out[i]] = NULL;
            f->owned[pn->out[i]] = 0;
        }
    *done = true;
    return OX_OK;
}

static ox_status run_frame(ox_exec *e, frame *f, ox_error *err)
{
    const ox_plan *p = f->plan;
    ox_rval *in_small[16], *out_small[16];
    for (int k = 0; k < p->n_nodes; k++) {
        const plan_node *pn = &p->nodes[k];
        if ((pn->folded && !f->run_folded) || pn->fused_away) {
            release_after(e, f, pn);
            continue;
        }
        if (f->cplan) {
            bool done = false;
            ox_status st = cuda_node(e, f, k, pn, &done, err);
            if (st)
                return st;
            if (done) {
                release_after(e, f, pn);
                continue;
            }
        }
        if (pn->skip) {
            ox_status st = run_skip(e, f, pn, err);
            if (st)
                return st;
            release_after(e, f, pn);
            continue;
        }
        ox_rval **in = pn->n_in <= 16 ? in_small : calloc((size_t)pn->n_in, sizeof *in);
        ox_rval **out = pn->n_out <= 16 ? out_small : calloc((size_t)pn->n_out, sizeof *out);
        if (!in || !out) {
            if (in != in_small)
                free(in);
            if (out != out_small)
                free(out);
            return ox_errorf(err, OX_ENOMEM, "out of memory");
        }
        for (int i = 0; i < pn->n_in; i++) {
            in[i] = frame_get(f, pn->in[i]);
            if (!in[i] && pn->in[i].depth >= 0) {
                /* (A fused root's inputs are its group's operands.) */
                const ox_value *v = pn->in[i].depth == 0 ? p->slot_value[pn->in[i].slot]
                                    : i < pn->node->n_inputs ? pn->node->inputs[i] : NULL;
                ox_status st = ox_errorf(err, OX_EINVAL,
                                         "node '%s' (%s): input '%s' has no value",
                                         node_label(pn->node), pn->node->op_type,
                                         v && v->name ? v->name : "");
                if (in != in_small)
                    free(in);
                if (out != out_small)
                    free(out);
                return st;
            }
        }
        for (int i = 0; i < pn->n_out; i++)
            out[i] = NULL;
        ox_error kerr = {0};
        ox_kernel_ctx ctx = {
            .node = pn->node, .opset = pn->opset, .n_in = pn->n_in, .in = in,
            .n_out = pn->n_out, .out = out, .exec = e, .pool = e->pool,
            .err = &kerr, .priv = f, .state = &((plan_node *)pn)->state,
        };
        f->cur = pn;
        f->cur_out = out;
        memset(f->placed, 0, sizeof f->placed);
        int64_t hook_t0 = e->opts.node_hook ? hook_now_ns() : 0;
        ox_status st = run_lazy(e, f, pn, &ctx);
        /* The first error recorded is the cause (a kernel reports a refused
         * allocation as "cannot allocate": the ceiling said why). */
        if (st && kerr.status)
            st = kerr.status;
        if (e->opts.node_hook)
            e->opts.node_hook(e->opts.node_hook_user, pn->node, hook_t0, hook_now_ns());
        /* Between nodes: cancel, deadline and the ceiling (what this
         * node allocated outside ox_kernel_output counts here). */
        if (st == OX_OK)
            st = exec_poll(e, 0, &kerr);
        if (st == OX_OK) {
            for (int i = 0; i < pn->n_out; i++) {
                if (pn->out_needed[i] && !out[i]) {
                    st = ox_errorf(&kerr, OX_EINVAL, "kernel produced no value for output %d", i);
                    break;
                }
                /* A kernel must not hand an input back as its output. */
                for (int j = 0; j < pn->n_in && out[i]; j++)
                    if (out[i] == in[j]) {
                        out[i] = ox_rval_clone(in[j]);
                        if (!out[i])
                            st = ox_errorf(&kerr, OX_ENOMEM, "out of memory");
                    }
            }
            for (int i = 0; f->arena && st == OX_OK && i < pn->n_out; i++) {
                const ox_tensor *mine = i < 16 ? f->placed[i] : NULL;
                if (!out[i])
                    continue;
                if (mine && out[i]->t == mine) {
                    f->stats->arena_outputs++;
                } else if (own_slot_view(f->arena, pn->out[i], out[i])) {
                    f->stats->arena_views++;   /* a view planned onto its input */
                    continue;
                } else if (!mine && arena_slot_copy(f->arena, pn->out[i], out[i])) {
                    f->stats->arena_outputs++;
                    f->stats->slot_copies++;
                    continue;
                } else {
                    f->stats->heap_outputs++;
                }
                if (arena_detach(f->arena, out[i], mine, &f->stats->arena_copies))
                    st = ox_errorf(&kerr, OX_ENOMEM, "out of memory");
            }
        }
        f->cur = NULL;
        f->cur_out = NULL;
        if (st != OX_OK) {
            for (int i = 0; i < pn->n_out; i++)
                ox_rval_free(out[i]);
            if (in != in_small)
                free(in);
            if (out != out_small)
                free(out);
            if (st == OX_ECANCELLED)
                return ox_errorf(err, st, "%s", kerr.msg);
            return ox_errorf(err, st, "node '%s' (%s): %s", node_label(pn->node),
                             pn->node->op_type, kerr.msg[0] ? kerr.msg : ox_strerror(st));
        }
        for (int i = 0; i < pn->n_out; i++) {
            if (pn->out[i] >= 0)
                frame_set(f, pn->out[i], out[i]);
            else
                ox_rval_free(out[i]);
        }
        if (in != in_small)
            free(in);
        if (out != out_small)
            free(out);
        release_after(e, f, pn);
    }
    return OX_OK;
}

/* Moves or clones the graph outputs of a finished frame into outputs. */
static ox_status take_outputs(frame *f, int n_outputs, ox_rval **outputs, ox_error *err)
{
    const ox_plan *p = f->plan;
    for (int i = 0; i < n_outputs; i++)
        outputs[i] = NULL;
    for (int i = 0; i < n_outputs && i < p->n_outputs; i++) {
        slot_ref r = p->out_refs[i];
        ox_rval *v = frame_get(f, r);
        if (!v) {
            const ox_value *gv = p->graph->outputs[i];
            for (int j = 0; j < i; j++) {
                ox_rval_free(outputs[j]);
                outputs[j] = NULL;
            }
            return ox_errorf(err, OX_EINVAL, "graph output '%s' was not computed",
                             gv && gv->name ? gv->name : "");
        }
        if (r.depth == 0 && f->owned[r.slot]) {
            outputs[i] = v;           /* hand over; the frame keeps a borrowed pointer */
            f->owned[r.slot] = 0;
        } else {
            outputs[i] = ox_rval_clone(v);
            if (!outputs[i]) {
                for (int j = 0; j < i; j++) {
                    ox_rval_free(outputs[j]);
                    outputs[j] = NULL;
                }
                return ox_errorf(err, OX_ENOMEM, "out of memory");
            }
        }
    }
    return OX_OK;
}

/* Checks a caller-supplied tensor against the declared input type. */
static ox_status check_input(const ox_value *v, const ox_rval *r, ox_error *err)
{
    const ox_type *t = v->type;
    if (!t || !r)
        return OX_OK;
    if (t->kind == OX_TYPE_TENSOR) {
        if (r->kind != OX_RV_TENSOR)
            return ox_errorf(err, OX_EINVAL, "input '%s' expects a tensor", v->name);
        if (t->elem != OX_DT_UNDEFINED && r->t->dtype != t->elem)
            return ox_errorf(err, OX_EINVAL, "input '%s' expects %s, got %s", v->name,
                             ox_dtype_name(t->elem), ox_dtype_name(r->t->dtype));
        if (t->has_shape) {
            if (t->rank != r->t->rank)
                return ox_errorf(err, OX_EINVAL, "input '%s' expects rank %d, got %d",
                                 v->name, t->rank, r->t->rank);
            for (int d = 0; d < t->rank; d++)
                if (t->dims[d].value >= 0 && t->dims[d].value != r->t->dims[d])
                    return ox_errorf(err, OX_EINVAL,
                                     "input '%s' dim %d expects %lld, got %lld", v->name,
                                     d, (long long)t->dims[d].value,
                                     (long long)r->t->dims[d]);
        }
    } else if (t->kind == OX_TYPE_SEQUENCE && r->kind != OX_RV_SEQUENCE) {
        return ox_errorf(err, OX_EINVAL, "input '%s' expects a sequence", v->name);
    }
    return OX_OK;
}

ox_status ox_exec_new(ox_model *m, const ox_exec_opts *opts, ox_exec **out,
                      ox_error *err)
{
    *out = NULL;
    if (!m || !m->graph)
        return ox_errorf(err, OX_EINVAL, "no model");
    ox_exec *e = calloc(1, sizeof *e);
    if (!e)
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    /* A model calling its own local functions (PyTorch 2's dynamo export)
     * runs as a clone with the calls inlined (src/ir/ir_inline.c): kernels
     * exist for operators only. The caller's model stays as it was. */
    if (ox_model_calls_functions(m)) {
        ox_model *c = ox_model_clone(m);
        if (c)   /* a function at another opset whose operators are the same */
            ox_op_align_function_opsets(c);
        ox_status ist = c ? ox_model_inline_functions(c, err)
                          : ox_errorf(err, OX_ENOMEM, "out of memory");
        if (ist) {
            ox_model_free(c);
            free(e);
            return ist;
        }
        e->inlined = m = c;
    }
    e->model = m;
    if (opts)
        e->opts = *opts;
    e->max_mem = e->opts.max_memory > 0   ? e->opts.max_memory
                 : e->opts.max_memory < 0 ? INT64_MAX
                                          : ox_exec_default_max_memory();
    ox_plan *p;
    ox_status st = get_plan(e, m->graph, &p, err);
    if (st) {
        ox_exec_free(e);
        return st;
    }
    if (e->opts.device == OX_DEVICE_CUDA && !e->opts.keep_intermediates) {
        st = ox_cuda_rt_new(p->n_slots, &e->cuda, err);
        if (st) {
            ox_exec_free(e);
            return st;
        }
        ox_cuda_rt_configure(e->cuda, e->opts.fp16,
                             !e->opts.no_cuda_graphs && !e->opts.node_hook);
    }
    /* The memory plan follows the file's node order: arenas only when the
     * executor runs that same order. A CUDA run keeps host values on the
     * heap (the device has its own arena). */
    e->arena_ok = !e->opts.no_arena && !e->opts.keep_intermediates && !e->cuda;
    for (int k = 0; k < p->n_nodes && e->arena_ok; k++)
        if (p->nodes[k].node != m->graph->nodes[k])
            e->arena_ok = false;
    int threads = e->opts.threads;
    if (threads != 1) {
        e->pool = ox_thread_pool_new(threads);  /* NULL is fine: serial */
    }
    *out = e;
    return OX_OK;
}

void ox_exec_free(ox_exec *e)
{
    if (!e)
        return;
    for (int i = 0; i < e->n_plans; i++)
        plan_free(e->plans[i]);
    free(e->plans);
    ox_thread_pool_free(e->pool);
    ox_arena_cache_free(&e->arenas);
    free(e->arenas.keep);
    ox_cuda_plan_free(e->cplan);
    ox_cuda_rt_free(e->cuda);
    ox_model_free(e->inlined);
    free(e);
}

/* A CUDA run: the plan for these inputs (rebuilt when their signature
 * changes), node counts and FLOPs per device in the stats. Runs giving
 * fewer inputs than the graph has, or a graph the planner cannot take,
 * run on the CPU. */
static ox_status cuda_begin(ox_exec *e, frame *f, int n_inputs, ox_rval *const *inputs,
                            ox_error *err)
{
    const ox_plan *p = e->plans[0];
    e->stats = (ox_exec_stats){0};
    e->stats.nodes_on[0] = p->n_nodes;
    e->stats.nodes_on[1] = 0;
    e->stats.flops_on[0] = e->stats.flops_on[1] = 0;
    e->stats.device_arena_bytes = 0;
    if (e->cuda_off || n_inputs != p->graph->n_inputs)
        return OX_OK;
    if (!e->cplan || !ox_cuda_plan_matches(e->cplan, n_inputs, inputs)) {
        ox_cuda_plan_free(e->cplan);
        e->cplan = NULL;
        const ox_node **order = malloc(((size_t)p->n_nodes + 1) * sizeof *order);
        if (!order)
            return ox_errorf(err, OX_ENOMEM, "out of memory");
        for (int k = 0; k < p->n_nodes; k++)
            order[k] = p->nodes[k].node;
        ox_cuda_caps caps;
        ox_cuda_rt_caps(e->cuda, &caps);
        ox_status st = ox_cuda_plan_build(e->model, p->n_nodes, order, p->n_slots,
                                          p->slot_value, n_inputs, inputs, &caps, &e->cplan, err);
        free(order);
        if (st)
            return st;
        if (!e->cplan) {
            e->cuda_off = true;   /* not in file order: never plannable */
            return OX_OK;
        }
        /* ONNXSCOPE_CUDA_VERBOSE=1: where each node runs, and why not the GPU. */
        const char *vb = getenv("ONNXSCOPE_CUDA_VERBOSE");
        if (vb && *vb && strcmp(vb, "0"))
            for (int k = 0; k < p->n_nodes; k++)
                fprintf(stderr, "cuda: node %d '%s' (%s): %s%s\n", k, node_label(p->nodes[k].node),
                        p->nodes[k].node->op_type, e->cplan->kind[k] ? "GPU" : "CPU: ",
                        e->cplan->kind[k] ? "" : e->cplan->why[k] ? e->cplan->why[k] : "");
    }
    e->stats.nodes_on[0] = e->cplan->nodes_on[0];
    e->stats.nodes_on[1] = e->cplan->nodes_on[1];
    e->stats.flops_on[0] = e->cplan->flops_on[0];
    e->stats.flops_on[1] = e->cplan->flops_on[1];
    ox_cuda_plan_stats(e->cplan, &e->stats);
    if (!e->cplan->nodes_on[1])
        return OX_OK;
    ox_status st = ox_cuda_run_begin(e->cuda, e->cplan, err);
    if (st)
        return st;
    e->stats.device_arena_bytes = e->cplan->arena_bytes;
    f->cplan = e->cplan;
    f->cuda = e->cuda;
    return OX_OK;
}

ox_status ox_exec_run(ox_exec *e, int n_inputs, ox_rval *const *inputs,
                      int n_outputs, ox_rval **outputs, ox_error *err)
{
    if (!e)
        return ox_errorf(err, OX_EINVAL, "no executor");
    for (int i = 0; i < n_outputs; i++)
        outputs[i] = NULL;
    const ox_plan *p = e->plans[0];
    const ox_graph *g = p->graph;
    if (n_inputs > g->n_inputs)
        return ox_errorf(err, OX_EINVAL, "%d inputs given, the graph has %d", n_inputs,
                         g->n_inputs);
    if (n_outputs > g->n_outputs)
        return ox_errorf(err, OX_EINVAL, "%d outputs asked, the graph has %d", n_outputs,
                         g->n_outputs);
    frame f;
    bool hold = false;
    ox_status st = frame_init(&f, NULL, p, err);
    if (st)
        return st;
    for (int i = 0; i < g->n_inputs; i++) {
        ox_rval *v = i < n_inputs ? inputs[i] : NULL;
        if (v) {
            st = check_input(g->inputs[i], v, err);
            if (st)
                goto out;
            f.vals[p->in_slots[i]] = v;   /* borrowed */
            if (p->consts[p->in_slots[i]] && p->fold_overridable)
                f.run_folded = true;      /* an initializer overridden */
        } else if (!p->consts[p->in_slots[i]]) {
            /* Allowed only when nothing reads it: the planner would fail
             * the node later with a clear message otherwise. */
            const ox_value *gv = g->inputs[i];
            if (gv->n_uses > 0 || gv->is_output) {
                st = ox_errorf(err, OX_EINVAL, "input '%s' was not given", gv->name);
                goto out;
            }
        }
    }
    /* One run at a time uses the arena; a concurrent run takes the heap. */
    hold = e->arena_ok && !__atomic_exchange_n(&e->arena_busy, 1, __ATOMIC_ACQUIRE);
    if (hold) {
        e->stats = (ox_exec_stats){.plans_built = e->arenas.built,
                                   .plan_hits = e->arenas.hits};
        /* Plans are keyed by every graph input: runs giving fewer use the heap. */
        if (n_inputs == g->n_inputs)
            st = ox_arena_get_ex(&e->arenas, e->model, p->n_slots, p->slot_value,
                                 g->n_inputs, inputs, e->max_mem - ox_buffer_live_bytes(),
                                 p->born, p->born ? p->n_nodes : 0, &f.arena, err);
        if (st)
            goto out;
        f.stats = &e->stats;
        e->stats.arena_used = f.arena != NULL;
        e->stats.arena_bytes = f.arena ? f.arena->bytes : 0;
        e->stats.inplace_slots = f.arena ? f.arena->n_inplace : 0;
        e->stats.plans_built = e->arenas.built;
        e->stats.plan_hits = e->arenas.hits;
        if (f.arena && (st = exec_poll(e, 0, err)) != OX_OK) {
            char b[32];
            ox_error_clear(err);
            st = ox_errorf(err, st, "activation arena of %s: tensor memory over the ceiling "
                           "(--max-memory)", ox_fmt_bytes(f.arena->bytes, true, b, sizeof b));
            goto out;
        }
    }
    /* One CUDA run at a time per executor (the same flag as the arena's,
     * which a CUDA executor does not use); a concurrent run takes the CPU. */
    if (e->cuda && !__atomic_exchange_n(&e->arena_busy, 1, __ATOMIC_ACQUIRE)) {
        hold = true;
        if ((st = cuda_begin(e, &f, n_inputs, inputs, err)) != OX_OK)
            goto out;
    }
    int64_t allocs0 = ox_buffer_allocs();
    st = run_frame(e, &f, err);
    if (hold) {
        e->stats.heap_allocs = ox_buffer_allocs() - allocs0;
        e->stats.folded_nodes = p->n_folded;
        e->stats.ew_fused_nodes = p->n_ew_fused;
    }
    /* Graph outputs the GPU made come to the host. */
    for (int i = 0; !st && f.cuda && i < n_outputs && i < p->n_outputs; i++)
        if (p->out_refs[i].depth == 0)
            st = cuda_to_host(&f, p->out_refs[i].slot, err);
    if (f.cuda) {
        ox_error eerr = {0};
        ox_status est = ox_cuda_run_end(e->cuda, &e->stats, &eerr);
        if (!st && est)
            st = ox_errorf(err, est, "%s", eerr.msg);
    }
    if (!st)
        st = take_outputs(&f, n_outputs, outputs, err);
    if (!f.cplan) {
        e->stats.nodes_on[0] = p->n_nodes;   /* all on the CPU */
        e->stats.nodes_on[1] = 0;
    }
    /* Graph outputs belong to the caller: copy them out of the arena. */
    for (int i = 0; !st && f.arena && i < n_outputs; i++)
        if (arena_detach(f.arena, outputs[i], NULL, &e->stats.output_copies))
            st = ox_errorf(err, OX_ENOMEM, "out of memory");
    if (st && f.arena)
        for (int i = 0; i < n_outputs; i++) {
            ox_rval_free(outputs[i]);
            outputs[i] = NULL;
        }
out:
    frame_free(&f);
    if (hold)
        __atomic_store_n(&e->arena_busy, 0, __ATOMIC_RELEASE);
    return st;
}

void ox_exec_get_stats(const ox_exec *e, ox_exec_stats *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof *out);
    if (e)
        *out = e->stats;
}

ox_status ox_exec_subgraph(ox_kernel_ctx *c, const ox_graph *g, int n_inputs,
                           ox_rval *const *inputs, int n_outputs,
                           ox_rval **outputs)
{
    for (int i = 0; i < n_outputs; i++)
        outputs[i] = NULL;
    if (!c || !g)
        return ox_errorf(c ? c->err : NULL, OX_EINVAL, "no subgraph");
    if (!c->exec || !c->priv)
        return ox_errorf(c->err, OX_EUNSUPPORTED,
                         "subgraphs run only inside an executor");
    frame *parent = c->priv;
    if (g->parent && g->parent != parent->plan->graph)
        return ox_errorf(c->err, OX_EMODEL, "subgraph does not belong to this node's graph");
    if (n_inputs > g->n_inputs)
        return ox_errorf(c->err, OX_EINVAL, "subgraph takes %d inputs, %d given",
                         g->n_inputs, n_inputs);
    if (n_outputs > g->n_outputs)
        return ox_errorf(c->err, OX_EINVAL, "subgraph has %d outputs, %d asked",
                         g->n_outputs, n_outputs);
    ox_plan *p;
    ox_status st = get_plan(c->exec, g, &p, c->err);
    if (st)
        return st;
    frame f;
    st = frame_init(&f, g->parent ? parent : NULL, p, c->err);
    if (st)
        return st;
    for (int i = 0; i < n_inputs; i++)
        if (inputs[i])
            f.vals[p->in_slots[i]] = inputs[i];  /* borrowed */
    st = run_frame(c->exec, &f, c->err);
    if (!st)
        st = take_outputs(&f, n_outputs, outputs, c->err);
    frame_free(&f);
    return st;
}

ox_status ox_exec_node(const ox_model *m, const ox_node *n, int n_in,
                       ox_rval *const *in, int n_out, ox_rval **out,
                       ox_error *err)
{
    return ox_exec_node_capped(m, n, n_in, in, n_out, out, 0, err);
}

ox_status ox_exec_node_capped(const ox_model *m, const ox_node *n, int n_in,
                              ox_rval *const *in, int n_out, ox_rval **out,
                              int64_t max_output_bytes, ox_error *err)
{
    for (int i = 0; i < n_out; i++)
        out[i] = NULL;
    if (!m || !n)
        return ox_errorf(err, OX_EINVAL, "no node");
    int64_t opset = node_opset(m, n);
    ox_kernel_fn fn = ox_kernel_lookup(n->domain, n->op_type, opset);
    if (!fn)
        return ox_errorf(err, OX_EUNSUPPORTED, "no kernel for %s (node '%s')", n->op_type,
                         node_label(n));
    ox_error kerr = {0};
    ox_kernel_ctx ctx = {
        .node = n, .opset = opset, .n_in = n_in, .in = in, .n_out = n_out,
        .out = out, .exec = NULL, .pool = NULL, .err = &kerr, .priv = NULL,
        .max_output_bytes = max_output_bytes,
    };
    ox_status st = fn(&ctx);
    if (st && kerr.status)
        st = kerr.status;
    for (int i = 0; st == OX_OK && i < n_out; i++)
        for (int j = 0; j < n_in && out[i]; j++)
            if (out[i] == in[j]) {
                out[i] = ox_rval_clone(in[j]);
                if (!out[i])
                    st = ox_errorf(&kerr, OX_ENOMEM, "out of memory");
            }
    if (st) {
        for (int i = 0; i < n_out; i++) {
            ox_rval_free(out[i]);
            out[i] = NULL;
        }
        return ox_errorf(err, st, "node '%s' (%s): %s", node_label(n), n->op_type,
                         kerr.msg[0] ? kerr.msg : ox_strerror(st));
    }
    return OX_OK;
}

const ox_model *ox_exec_model(const ox_exec *e)
{
    return e ? e->model : NULL;
}

ox_thread_pool *ox_exec_pool(const ox_exec *e)
{
    return e ? e->pool : NULL;
}
