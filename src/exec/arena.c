/* Activation arenas for the executor: per input-shape signature, infer the
 * main graph's shapes on a clone, plan it with ox_memplan (the same plan
 * the cost model reports) and keep one aligned arena; a small LRU cache. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnxscope/infer.h"
#include "onnxscope/memplan.h"
#include "arena.h"

/* Shape-like integer inputs (rank <= 1, this few elements) are keyed by
 * value too: their values may decide shapes (a Reshape target fed at run
 * time), and inference gets them. Token-id tensors are rank 2 and are not. */
#define SIG_VALUE_MAX 8

typedef struct i64vec {
    int64_t *v;
    int n, cap;
} i64vec;

static bool vec_push(i64vec *a, int64_t x)
{
    if (a->n == a->cap) {
        int cap = a->cap ? a->cap * 2 : 32;
        int64_t *nv = realloc(a->v, (size_t)cap * sizeof *nv);
        if (!nv)
            return false;
        a->v = nv;
        a->cap = cap;
    }
    a->v[a->n++] = x;
    return true;
}

static bool keyed_by_value(const ox_tensor *t)
{
    return (t->dtype == OX_DT_INT64 || t->dtype == OX_DT_INT32) && t->rank <= 1 &&
           t->numel <= SIG_VALUE_MAX && ox_tensor_data(t);
}

/* Signature: per graph input, -1 when absent, else dtype, rank, dims and,
 * for small integer tensors, their values. false for non-tensor inputs. */
static bool make_sig(int n_inputs, ox_rval *const *inputs, i64vec *s, bool *ok)
{
    *ok = true;
    if (!vec_push(s, n_inputs))
        return false;
    for (int i = 0; i < n_inputs; i++) {
        const ox_rval *r = inputs[i];
        if (!r) {
            if (!vec_push(s, -1))
                return false;
            continue;
        }
        if (r->kind != OX_RV_TENSOR || !r->t) {
            *ok = false;
            return true;
        }
        const ox_tensor *t = r->t;
        if (!vec_push(s, t->dtype) || !vec_push(s, t->rank))
            return false;
        for (int d = 0; d < t->rank; d++)
            if (!vec_push(s, t->dims[d]))
                return false;
        if (keyed_by_value(t)) {
            if (!vec_push(s, t->numel))
                return false;
            for (int64_t k = 0; k < t->numel; k++)
                if (!vec_push(s, ox_tensor_get_i64(t, k)))
                    return false;
        } else if (!vec_push(s, -1)) {
            return false;
        }
    }
    return true;
}

int64_t *ox_arena_input_sig(int n_inputs, ox_rval *const *inputs, int *n)
{
    i64vec s = {0};
    bool ok;
    if (!make_sig(n_inputs, inputs, &s, &ok) || !ok) {
        free(s.v);
        return NULL;
    }
    *n = s.n;
    return s.v;
}

ox_status ox_arena_infer_inputs(ox_model *cl, int n_inputs, ox_rval *const *inputs,
                                bool *inferred, ox_error *err)
{
    *inferred = false;
    const ox_graph *g = cl->graph;
    if (!g || g->n_inputs != n_inputs)
        return OX_OK;
    ox_shape_override *ov = calloc((size_t)n_inputs + 1, sizeof *ov);
    ox_input_value *iv = calloc((size_t)n_inputs + 1, sizeof *iv);
    int n_ov = 0, n_iv = 0;
    if (!ov || !iv) {
        free(ov);
        free(iv);
        return ox_errorf(err, OX_ENOMEM, "out of memory planning the arena");
    }
    for (int i = 0; i < n_inputs; i++) {
        const ox_value *gv = g->inputs[i];
        if (!inputs[i] || !gv || !gv->name)
            continue;
        if (inputs[i]->kind != OX_RV_TENSOR || !inputs[i]->t)
            goto out;
        const ox_tensor *t = inputs[i]->t;
        ov[n_ov].name = gv->name;
        ov[n_ov].rank = t->rank;
        memcpy(ov[n_ov].dims, t->dims, (size_t)t->rank * sizeof t->dims[0]);
        n_ov++;
        if (keyed_by_value(t)) {
            iv[n_iv].name = gv->name;
            iv[n_iv].value = t;
            n_iv++;
        }
    }
    ox_infer_opts io = {
        .shapes = ov, .n_shapes = n_ov, .input_values = iv, .n_input_values = n_iv,
        .reset = true, .no_value_info = true,
    };
    ox_error ierr = {0};
    *inferred = ox_infer_model(cl, &io, &ierr) == OX_OK;
out:
    free(ov);
    free(iv);
    return OX_OK;
}

static void arena_buf_release(ox_buffer *b)
{
    ox_buffer_account(-(int64_t)b->size);
    free(b->data);
    free(b);
}

/* A zeroed, 64-byte aligned buffer (kernels may use aligned vector loads). */
static ox_buffer *arena_buf_new(int64_t bytes)
{
    size_t sz = ((size_t)bytes + OX_MEMPLAN_ALIGN - 1) & ~(size_t)(OX_MEMPLAN_ALIGN - 1);
    ox_buffer *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->data = aligned_alloc(OX_MEMPLAN_ALIGN, sz ? sz : OX_MEMPLAN_ALIGN);
    if (!b->data) {
        free(b);
        return NULL;
    }
    b->refcount = 1;
    b->size = (size_t)bytes;
    b->release = arena_buf_release;
    ox_buffer_account(bytes);   /* counts against the memory ceiling */
    return b;
}

/* Elementwise kernels that read element i of an input of the output's
 * shape only to write element i of the output (src/exec/k_elementwise:
 * unary() and simple_binary()), so output and input may share bytes. */
static const char *const inplace_ops[] = {
    "Relu", "Neg", "Abs", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Erf", "Reciprocal",
    "Add", "Sub", "Mul", "Div",
    /* unary() too (Clip, LeakyRelu, HardSigmoid, HardSwish), and
     * BatchNormalization's inference loop (k_nn/norm.c, y[i] from x[i]): the
     * activations and BNs a oneDNN Conv takes as epilogues are then skip
     * nodes whose value stays in place instead of being copied (exec.c). */
    "Clip", "LeakyRelu", "HardSigmoid", "HardSwish", "BatchNormalization", NULL,
};

/* Kernels whose output is a view of input 0's bytes (src/exec/k_tensor:
 * ox_tk_out_view, Identity's shared value): planned onto input 0's bytes,
 * the view already is its own slot, so the aliasing rule keeps it without a
 * copy (exec.c, ox_exec_stats.arena_views). */
static const char *const view_ops[] = {
    "Reshape", "Squeeze", "Unsqueeze", "Flatten", "Identity", NULL,
};

static bool in_list(const ox_node *n, const char *const *ops)
{
    if (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx") != 0)
        return false;
    for (int i = 0; ops[i]; i++)
        if (!strcmp(n->op_type, ops[i]))
            return true;
    /* Two-input Sum runs Add's kernel (variadic() -> binary()); the
     * residual_sum pass writes residual Adds that way. */
    return !strcmp(n->op_type, "Sum") && n->n_inputs == 2;
}

static bool inplace_op(const ox_node *n)
{
    return in_list(n, inplace_ops);
}

/* In-place rule: node k's output o may take the bytes of its input x when
 * the op is in inplace_ops (or view_ops, input 0 only), x is planned, dies at k (so it is no graph input,
 * initializer or output), has o's dtype and size, and no other value live
 * during o's lifetime overlaps those bytes under the offsets chosen so far.
 * off[] (per memplan slot) is updated; inplace[] marks moved outputs. */
/* Whether any planned slot other than a and b, live at some step of
 * [t0, t1], overlaps bytes [b0, b1) under the offsets chosen so far. */
static bool region_clash(const ox_memplan *mp, const int64_t *off, int a, int b, int64_t b0,
                         int64_t b1, int t0, int t1)
{
    for (int t = 0; t < mp->n_slots; t++) {
        const ox_memplan_slot *st = &mp->slots[t];
        if (t == a || t == b || st->offset < 0 || st->first > t1 || st->last < t0)
            continue;
        if (off[t] < b1 && b0 < off[t] + st->size)
            return true;
    }
    return false;
}

/* True when a's producer comes after b's among the first k nodes of g
 * (graph inputs and constants count as made before everything). */
static bool later_made(const ox_graph *g, int k, const ox_value *a, const ox_value *b)
{
    if (!a || !a->producer || a == b)
        return false;
    for (int i = k - 1; i >= 0; i--) {
        if (g->nodes[i] == a->producer)
            return true;
        if (b && g->nodes[i] == b->producer)
            return false;
    }
    return false;
}

static void plan_inplace(const ox_graph *g, const ox_memplan *mp, int64_t *off,
                         bool *inplace, const int *born)
{
    /* from[t]: the slot whose bytes slot t took (-1: none), so a view can
     * move a whole chain (MatMul -> in-place Add -> Reshape) at once. */
    int *from = malloc(((size_t)mp->n_slots + 1) * sizeof *from);
    if (!from)
        return;
    for (int t = 0; t < mp->n_slots; t++)
        from[t] = -1;
    for (int k = 0; k < g->n_nodes; k++) {
        const ox_node *n = g->nodes[k];
        bool view = in_list(n, view_ops);
        if (n->n_outputs != 1 || !n->outputs[0] || (!view && !inplace_op(n)))
            continue;
        const ox_value *o = n->outputs[0];
        const ox_memplan_slot *so = ox_memplan_find(mp, o);
        if (!so || so->offset < 0 || !o->type)
            continue;
        int io = (int)(so - mp->slots);
        /* Of two inputs, the one made last first: a residual Add that the
         * executor fused into the Conv making that input (a sum post-op,
         * exec.c plan_conv_chain) then hands its value on in place. */
        int first_j = 0;
        if (!view && n->n_inputs >= 2 && later_made(g, k, n->inputs[1], n->inputs[0]))
            first_j = 1;
        /* A residual Add fused into a oneDNN Conv's chain (born earlier,
         * ox_memplan_opts.born): its other operand Z first, so that the
         * primitive's sum post-op accumulates into Z's own bytes instead of
         * a copy of Z seeding the output (exec.c chain_direct_slot). */
        if (!view && n->n_inputs >= 2 && born && born[k] >= 0 && born[k] < k)
            first_j ^= 1;
        for (int jj = 0; jj < n->n_inputs && jj < (view ? 1 : 2); jj++) {
            int j = jj ^ first_j;
            const ox_value *x = n->inputs[j];
            const ox_memplan_slot *sx = x ? ox_memplan_find(mp, x) : NULL;
            if (!sx || sx->offset < 0 || sx->last != k || sx->nbytes != so->nbytes ||
                sx->size != so->size || !x->type || x->type->elem != o->type->elem ||
                x->is_input || x->init || x->is_output)
                continue;
            int ix = (int)(sx - mp->slots);
            if (!region_clash(mp, off, io, ix, off[ix], off[ix] + sx->size, k, so->last)) {
                off[io] = off[ix];
                inplace[io] = true;
                from[io] = ix;
                break;
            }
            /* A view the other way round: x, with the chain of values whose
             * bytes it took, moves onto o's bytes when they are free for the
             * chain's whole life (the memplan often gives x's bytes, free
             * after k, to a value living beside o). The same holds for the
             * elementwise ops (x is still written before o, by its producer):
             * a Conv -> Clip whose Clip oneDNN fused then keeps its value in
             * place instead of copying it (exec.c run_skip). */
            int first = sx->first, root = ix;
            bool ok = true;
            while (from[root] >= 0) {
                root = from[root];
                if (mp->slots[root].first < first)
                    first = mp->slots[root].first;
            }
            for (int t = 0; t < mp->n_slots && ok; t++) {
                const ox_memplan_slot *st = &mp->slots[t];
                bool member = t == io;
                for (int c = ix; c >= 0 && !member; c = from[c])
                    member = c == t;
                if (member || st->offset < 0 || st->first > k || st->last < first)
                    continue;
                ok = !(off[t] < off[io] + so->size && off[io] < off[t] + st->size);
            }
            if (ok) {
                for (int c = ix; c >= 0; c = from[c])
                    off[c] = off[io];
                inplace[io] = true;
                from[io] = ix;
                break;
            }
        }
    }
    free(from);
}

static void plan_free(ox_arena_plan *p)
{
    if (!p)
        return;
    free(p->sig);
    ox_buffer_release(p->buf);
    free(p->off);
    free(p->nbytes);
    free(p->dtype);
    free(p->inplace);
    free(p);
}

/* Infers a clone of m for these inputs and fills p's slots and arena.
 * Leaves p->buf NULL (a negative entry) whenever planning is not possible. */
static ox_status plan_build(ox_arena_plan *p, const ox_model *m, int n_slots,
                            const ox_value *const *slot_value, int n_inputs,
                            ox_rval *const *inputs, int64_t max_bytes, const int *born,
                            int n_born, const ox_arena_keep *keep, int n_keep, ox_error *err)
{
    ox_status st = OX_OK;
    ox_model *cl = ox_model_clone(m);
    ox_memplan *mp = NULL;
    int64_t *moff = NULL;
    bool *minp = NULL;
    int *born2 = NULL;   /* born remapped around inserted keep-alive nodes */
    p->n_slots = n_slots;
    p->off = malloc(((size_t)n_slots + 1) * sizeof *p->off);
    p->nbytes = calloc((size_t)n_slots + 1, sizeof *p->nbytes);
    p->dtype = calloc((size_t)n_slots + 1, sizeof *p->dtype);
    if (!cl || !p->off || !p->nbytes || !p->dtype) {
        st = ox_errorf(err, OX_ENOMEM, "out of memory planning the arena");
        goto out;
    }
    bool inferred;
    if ((st = ox_arena_infer_inputs(cl, n_inputs, inputs, &inferred, err)) || !inferred)
        goto out;   /* not plannable: heap */
    /* Values read past their last use (ox_arena_keep): in the clone only, a
     * node of no operator that reads the value, right after node `until`,
     * extends its lifetime (not an extra input of that node: an in-place
     * op could then take the value's bytes, plan_inplace). Targets are
     * resolved before any insertion shifts the indices, and the fused
     * chains' `born` entries (per node index) are remapped after it. */
    int n0 = cl->graph->n_nodes;
    ox_node **orig = n_keep ? malloc(((size_t)n0 + 1) * sizeof *orig) : NULL;
    for (int i = 0; orig && i < n0; i++)
        orig[i] = cl->graph->nodes[i];
    ox_node **kt = orig ? calloc((size_t)n_keep, sizeof *kt) : NULL;
    for (int i = 0; kt && i < n_keep; i++)
        if (keep[i].until >= 0 && keep[i].until < cl->graph->n_nodes)
            kt[i] = cl->graph->nodes[keep[i].until];
    for (int i = 0; kt && i < n_keep; i++) {
        ox_value *kv = ox_graph_find(cl->graph, keep[i].value);
        if (!kv || !kt[i])
            continue;
        ox_node *kn = ox_node_new(cl->graph, "KeepAlive", "onnxscope.internal", "", 1, &kv, 0, NULL);
        int pos = -1;
        for (int j = 0; kn && j < cl->graph->n_nodes && pos < 0; j++)
            if (cl->graph->nodes[j] == kt[i])
                pos = j;
        if (kn && pos >= 0)
            ox_node_move(kn, pos + 1);
    }
    free(kt);
    if (orig && cl->graph->n_nodes != n0 && born && n_born == n0) {
        /* Inserted nodes keep the others' relative order. */
        int *newidx = malloc(((size_t)n0 + 1) * sizeof *newidx);
        born2 = malloc(((size_t)cl->graph->n_nodes + 1) * sizeof *born2);
        if (newidx && born2) {
            for (int i = 0, j = 0; i < cl->graph->n_nodes; i++) {
                born2[i] = -1;
                if (j < n0 && cl->graph->nodes[i] == orig[j])
                    newidx[j++] = i;
            }
            for (int j = 0; j < n0; j++)
                born2[newidx[j]] = born[j] >= 0 && born[j] < n0 ? newidx[born[j]] : born[j];
            born = born2;
            n_born = cl->graph->n_nodes;
        } else {
            born = NULL;   /* no fused-chain lifetimes: a plan still correct */
        }
        free(newidx);
    }
    free(orig);
    const ox_graph *g = cl->graph;
    ox_error ierr = {0};
    ox_memplan_opts mo;
    ox_memplan_opts_default(&mo);
    mo.include_inputs = false;    /* inputs are the caller's memory */
    mo.include_constants = false; /* held like initializers */
    /* The clone has the model's nodes in the same order. */
    mo.born = born && n_born == g->n_nodes ? born : NULL;
    /* An arena over the memory ceiling (a Loop whose static output counts
     * its whole trip count, say) is not allocated: the heap run allocates
     * only what it reaches, under the ceiling's checks. */
    if (ox_memplan_build(g, &mo, &mp, &ierr) != OX_OK || !mp->complete ||
        mp->arena_bytes <= 0 || mp->arena_bytes > max_bytes || !ox_memplan_verify(mp, &ierr))
        goto out;
    moff = malloc(((size_t)mp->n_slots + 1) * sizeof *moff);
    minp = calloc((size_t)mp->n_slots + 1, sizeof *minp);
    p->inplace = calloc((size_t)n_slots + 1, sizeof *p->inplace);
    if (!moff || !minp || !p->inplace) {
        st = ox_errorf(err, OX_ENOMEM, "out of memory planning the arena");
        goto out;
    }
    for (int t = 0; t < mp->n_slots; t++)
        moff[t] = mp->slots[t].offset;
    plan_inplace(g, mp, moff, minp, mo.born);
    for (int s = 0; s < n_slots; s++) {
        p->off[s] = -1;
        const ox_value *v = slot_value[s];
        if (!v || !v->name || !v->name[0])
            continue;
        const ox_value *cv = ox_graph_find(g, v->name);
        const ox_memplan_slot *ms = cv ? ox_memplan_find(mp, cv) : NULL;
        if (!ms || ms->offset < 0 || !cv->type || cv->type->kind != OX_TYPE_TENSOR ||
            cv->type->elem == OX_DT_STRING || cv->type->elem == OX_DT_UNDEFINED ||
            ms->offset + ms->nbytes > mp->arena_bytes)
            continue;
        p->off[s] = moff[ms - mp->slots];
        p->inplace[s] = minp[ms - mp->slots];
        p->n_inplace += p->inplace[s];
        p->nbytes[s] = ms->nbytes;
        p->dtype[s] = cv->type->elem;
    }
    /* No memory for one block of this size: run on the heap, as before. */
    p->buf = arena_buf_new(mp->arena_bytes);
    if (p->buf)
        p->bytes = mp->arena_bytes;
out:
    free(born2);
    free(moff);
    free(minp);
    ox_memplan_free(mp);
    ox_model_free(cl);
    return st;
}

ox_status ox_arena_get(ox_arena_cache *c, const ox_model *m, int n_slots,
                       const ox_value *const *slot_value, int n_inputs,
                       ox_rval *const *inputs, int64_t max_bytes,
                       const ox_arena_plan **out, ox_error *err)
{
    return ox_arena_get_ex(c, m, n_slots, slot_value, n_inputs, inputs, max_bytes, NULL, 0,
                           out, err);
}

ox_status ox_arena_get_ex(ox_arena_cache *c, const ox_model *m, int n_slots,
                          const ox_value *const *slot_value, int n_inputs,
                          ox_rval *const *inputs, int64_t max_bytes, const int *born,
                          int n_born, const ox_arena_plan **out, ox_error *err)
{
    *out = NULL;
    i64vec sig = {0};
    bool ok;
    if (!make_sig(n_inputs, inputs, &sig, &ok)) {
        free(sig.v);
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    }
    if (!ok) {
        free(sig.v);
        return OX_OK;
    }
    c->tick++;
    for (int i = 0; i < c->n; i++) {
        ox_arena_plan *p = c->e[i];
        if (p->n_sig == sig.n && !memcmp(p->sig, sig.v, (size_t)sig.n * sizeof *sig.v)) {
            free(sig.v);
            p->used = c->tick;
            c->hits++;
            *out = p->buf ? p : NULL;
            return OX_OK;
        }
    }
    ox_arena_plan *p = calloc(1, sizeof *p);
    if (!p) {
        free(sig.v);
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    }
    p->sig = sig.v;
    p->n_sig = sig.n;
    ox_status st = plan_build(p, m, n_slots, slot_value, n_inputs, inputs, max_bytes, born,
                              n_born, c->keep, c->n_keep, err);
    if (st) {
        plan_free(p);
        return st;
    }
    p->used = c->tick;
    c->built++;
    if (c->n == OX_ARENA_CACHE) {
        int lru = 0;
        for (int i = 1; i < c->n; i++)
            if (c->e[i]->used < c->e[lru]->used)
                lru = i;
        plan_free(c->e[lru]);
        c->e[lru] = c->e[--c->n];
    }
    c->e[c->n++] = p;
    *out = p->buf ? p : NULL;
    return OX_OK;
}

void ox_arena_cache_free(ox_arena_cache *c)
{
    for (int i = 0; i < c->n; i++)
        plan_free(c->e[i]);
    c->n = 0;
}

bool ox_arena_holds(const ox_arena_plan *p, const ox_tensor *t)
{
    if (!p || !p->buf || !t || !t->buf)
        return false;
    const char *d = ox_tensor_data(t);
    const char *a = p->buf->data;
    return d >= a && d < a + p->buf->size;
}
