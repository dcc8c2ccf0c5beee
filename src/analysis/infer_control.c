/* Inference for control flow (If, Loop, Scan: bodies are inferred with
 * their outer scope visible), sequences and optionals. Types of sequence
 * elements are the union of what is inserted: dims that differ become
 * unknown. */
#include <stdlib.h>
#include <string.h>

#include "analysis/infer_internal.h"

static ox_type *wrap(ox_type_kind kind, ox_type *inner)
{
    ox_type *t = calloc(1, sizeof *t);
    if (!t) {
        ox_type_free(inner);
        return NULL;
    }
    t->kind = kind;
    t->inner = inner;
    return t;
}

/* Union of two tensor types: what both have in common. */
static ox_type *union_type(const ox_type *a, const ox_type *b)
{
    if (!a)
        return b ? ox_type_clone(b) : NULL;
    if (!b)
        return ox_type_clone(a);
    if (a->kind != b->kind)
        return NULL;
    if (a->kind != OX_TYPE_TENSOR) {
        if (!a->inner || !b->inner)
            return ox_type_clone(a);
        return wrap(a->kind, union_type(a->inner, b->inner));
    }
    ox_dtype e = a->elem == b->elem ? a->elem : OX_DT_UNDEFINED;
    if (!a->has_shape || !b->has_shape || a->rank != b->rank)
        return ox__tt(e, -1);
    ox_type *t = ox__tt(e, a->rank);
    for (int i = 0; t && i < a->rank; i++)
        if (ox__dim_same(&a->dims[i], &b->dims[i]))
            ox__dim_copy(t, i, &a->dims[i]);
    return t;
}

static ox_graph *attr_graph(const ox_node *n, const char *name)
{
    const ox_attr *a = ox_node_attr(n, name);
    return a && a->type == OX_ATTR_GRAPH ? a->g : NULL;
}

static void set_value_type(ox_value *v, ox_type *t)
{
    if (!v) {
        ox_type_free(t);
        return;
    }
    if (!t)
        return;
    ox_type_free(v->type);
    v->type = t;
}

/* Forgets inferred types inside a body before it is inferred again with
 * more general input types (stale dims would otherwise be merged back). */
static void clear_body(ox_graph *g, void *ctx)
{
    (void)ctx;
    for (int i = 0; i < g->n_nodes; i++) {
        ox_node *n = g->nodes[i];
        for (int j = 0; j < n->n_outputs; j++) {
            if (n->outputs[j]) {
                ox_type_free(n->outputs[j]->type);
                n->outputs[j]->type = NULL;
            }
        }
    }
}

static const ox_type *gout_type(const ox_graph *g, int i)
{
    if (!g || i < 0 || i >= g->n_outputs || !g->outputs[i])
        return NULL;
    return g->outputs[i]->type;
}

ox_status ox__infer_if_(ox_infer_node_ctx *c)
{
    ox_graph *tg = attr_graph(c->n, "then_branch"), *eg = attr_graph(c->n, "else_branch");
    if (!tg || !eg)
        return ox__fail(c, "If without both branches");
    const ox__kv *ck = ox__in_kv(c, 0);
    int pick = -1;
    if (ck && ck->n == 1 && ck->known[0])
        pick = ox__kv_get_i(ck, 0) ? 0 : 1;
    ox_status rc = pick == 1 ? ox__infer_dead_subgraph(c, tg) : ox__infer_subgraph(c, tg);
    if (rc == OX_OK)
        rc = pick == 0 ? ox__infer_dead_subgraph(c, eg) : ox__infer_subgraph(c, eg);
    if (rc != OX_OK)
        return rc;
    for (int i = 0; i < c->n->n_outputs; i++) {
        const ox_type *a = gout_type(tg, i), *b = gout_type(eg, i);
        ox_type *t = pick == 0 ? (a ? ox_type_clone(a) : NULL)
                   : pick == 1 ? (b ? ox_type_clone(b) : NULL) : union_type(a, b);
        ox__set_out(c, i, t);
        if (pick >= 0) {
            const ox_graph *bg = pick == 0 ? tg : eg;
            if (i < bg->n_outputs)
                ox__set_kv(c, i, ox__kv_clone(ox__kv_of(c, bg->outputs[i])));
        }
    }
    return OX_OK;
}

/* True when v is (through Identity nodes) the value target. */
static bool same_through_identity(const ox_value *v, const ox_value *target)
{
    for (int depth = 0; v && depth < 16; depth++) {
        if (v == target)
            return true;
        if (!v->producer || !ox_node_is(v->producer, "Identity") || v->producer->n_inputs < 1)
            return false;
        v = v->producer->inputs[0];
    }
    return false;
}

ox_status ox__infer_loop(ox_infer_node_ctx *c)
{
    ox_graph *body = attr_graph(c->n, "body");
    if (!body)
        return ox__fail(c, "Loop without body");
    int nin = ox__nin(c);
    int ncarry = nin - 2;
    if (ncarry < 0 || body->n_inputs != ncarry + 2 || body->n_outputs < ncarry + 1)
        return ox__fail(c, "body signature does not match the Loop");
    set_value_type(body->inputs[0], ox__tt(OX_DT_INT64, 0));
    set_value_type(body->inputs[1], ox__tt(OX_DT_BOOL, 0));
    for (int i = 0; i < ncarry; i++) {
        const ox_type *t = ox__in_type(c, 2 + i);
        if (t)
            set_value_type(body->inputs[2 + i], ox_type_clone(t));
    }
    ox_status rc = ox__infer_subgraph(c, body);
    if (rc != OX_OK)
        return rc;
    /* A carried value whose type changes in the body is generalized and
     * the body inferred again. */
    bool again = false;
    for (int i = 0; i < ncarry; i++) {
        const ox_type *in = body->inputs[2 + i]->type, *out = gout_type(body, 1 + i);
        if (in && out && !ox_type_equal(in, out)) {
            ox_type *u = union_type(in, out);
            set_value_type(body->inputs[2 + i], u);
            again = true;
        }
    }
    if (again) {
        ox_graph_visit(body, clear_body, NULL);
        rc = ox__infer_subgraph(c, body);
        if (rc != OX_OK)
            return rc;
    }
    for (int i = 0; i < ncarry; i++) {
        const ox_type *t = gout_type(body, 1 + i);
        ox__set_out(c, i, union_type(body->inputs[2 + i]->type, t));
    }
    /* Trip count: known when M is known and the loop cannot stop early
     * (no cond input, or the body passes its cond input straight out). */
    int64_t trips = -1, m;
    /* Without a cond input the body's cond output is ignored (a for loop). */
    bool cond_fixed = !ox__has_in(c, 1);
    if (!cond_fixed && body->outputs[0] &&
        same_through_identity(body->outputs[0], body->inputs[1])) {
        const ox__kv *ck = ox__in_kv(c, 1);
        cond_fixed = ck && ck->n == 1 && ck->known[0] && ox__kv_get_i(ck, 0);
    }
    if (ox__has_in(c, 0) && ox__in_ints(c, 0, &m, 1) == 1 && cond_fixed)
        trips = m < 0 ? 0 : m;
    for (int k = 0; k + 1 + ncarry < body->n_outputs; k++) {
        const ox_type *t = gout_type(body, 1 + ncarry + k);
        if (!t || t->kind != OX_TYPE_TENSOR || !t->has_shape) {
            ox__set_out(c, ncarry + k, ox__tt(t ? t->elem : OX_DT_UNDEFINED, -1));
            continue;
        }
        ox_type *o = ox__tt(t->elem, t->rank + 1);
        ox__dim_set(o, 0, trips);
        for (int j = 0; j < t->rank; j++)
            ox__dim_copy(o, j + 1, &t->dims[j]);
        ox__set_out(c, ncarry + k, o);
    }
    return OX_OK;
}

/* Copy of t without its first `drop` dims. */
static ox_type *drop_leading(const ox_type *t, int drop)
{
    if (!t || t->kind != OX_TYPE_TENSOR || !t->has_shape || t->rank < drop)
        return ox__tt(t ? t->elem : OX_DT_UNDEFINED, -1);
    ox_type *o = ox__tt(t->elem, t->rank - drop);
    for (int i = drop; o && i < t->rank; i++)
        ox__dim_copy(o, i - drop, &t->dims[i]);
    return o;
}

/* Scan-8: a leading optional sequence_lens input and a batch axis in
 * front of every state and scan input; scan axis is 1. */
static ox_status infer_scan8(ox_infer_node_ctx *c, ox_graph *body)
{
    int nin = ox__nin(c) - 1;
    int64_t m = ox_node_attr_i(c->n, "num_scan_inputs", -1);
    if (nin < 0 || m < 0 || m > nin || body->n_inputs != nin)
        return ox__fail(c, "body signature does not match the Scan");
    int nstate = nin - (int)m;
    ox_dim batch = {.value = -1}, seq = {.value = -1};
    for (int i = 0; i < nin; i++) {
        const ox_type *t = ox__in_shape(c, 1 + i);
        set_value_type(body->inputs[i], drop_leading(t, i < nstate ? 1 : 2));
        if (t && t->rank >= 1 && batch.value < 0 && !batch.param)
            batch = t->dims[0];
        if (t && i >= nstate && t->rank >= 2 && seq.value < 0 && !seq.param)
            seq = t->dims[1];
    }
    ox_status rc = ox__infer_subgraph(c, body);
    if (rc != OX_OK)
        return rc;
    for (int k = 0; k < c->n->n_outputs && k < body->n_outputs; k++) {
        const ox_type *t = gout_type(body, k);
        if (!t || t->kind != OX_TYPE_TENSOR || !t->has_shape) {
            ox__set_out(c, k, ox__tt(t ? t->elem : OX_DT_UNDEFINED, -1));
            continue;
        }
        int extra = k < nstate ? 1 : 2;
        ox_type *o = ox__tt(t->elem, t->rank + extra);
        ox__dim_copy(o, 0, &batch);
        if (extra == 2)
            ox__dim_copy(o, 1, &seq);
        for (int i = 0; i < t->rank; i++)
            ox__dim_copy(o, i + extra, &t->dims[i]);
        ox__set_out(c, k, o);
    }
    return OX_OK;
}

ox_status ox__infer_scan(ox_infer_node_ctx *c)
{
    ox_graph *body = attr_graph(c->n, "body");
    if (!body)
        return ox__fail(c, "Scan without body");
    if (c->opset < 9)
        return infer_scan8(c, body);
    int nin = ox__nin(c);
    int64_t m = ox_node_attr_i(c->n, "num_scan_inputs", -1);
    if (m < 0 || m > nin)
        return ox__fail(c, "bad num_scan_inputs");
    int nstate = nin - (int)m;
    if (body->n_inputs != nin)
        return ox__fail(c, "body has %d inputs, Scan has %d", body->n_inputs, nin);
    const int64_t *in_axes, *out_axes;
    int n_in_axes = ox_node_attr_ints(c->n, "scan_input_axes", &in_axes);
    int n_out_axes = ox_node_attr_ints(c->n, "scan_output_axes", &out_axes);
    for (int i = 0; i < nstate; i++) {
        const ox_type *t = ox__in_type(c, i);
        if (t)
            set_value_type(body->inputs[i], ox_type_clone(t));
    }
    int64_t iters = -1;
    for (int j = 0; j < m; j++) {
        const ox_type *t = ox__in_shape(c, nstate + j);
        if (!t)
            continue;
        int a;
        if (!ox__axis(n_in_axes > j ? in_axes[j] : 0, t->rank, &a))
            return ox__fail(c, "scan input axis out of range");
        if (j == 0 || iters < 0)
            iters = ox__dimv(t, a);
        ox_type *s = ox__tt(t->elem, t->rank - 1);
        for (int i = 0, k = 0; i < t->rank; i++)
            if (i != a)
                ox__dim_copy(s, k++, &t->dims[i]);
        set_value_type(body->inputs[nstate + j], s);
    }
    ox_status rc = ox__infer_subgraph(c, body);
    if (rc != OX_OK)
        return rc;
    for (int i = 0; i < nstate; i++)
        ox__set_out(c, i, union_type(ox__in_type(c, i), gout_type(body, i)));
    for (int k = 0; nstate + k < body->n_outputs; k++) {
        const ox_type *t = gout_type(body, nstate + k);
        if (!t || t->kind != OX_TYPE_TENSOR || !t->has_shape) {
            ox__set_out(c, nstate + k, ox__tt(t ? t->elem : OX_DT_UNDEFINED, -1));
            continue;
        }
        int r = t->rank + 1, a;
        if (!ox__axis(n_out_axes > k ? out_axes[k] : 0, r, &a))
            return ox__fail(c, "scan output axis out of range");
        ox_type *o = ox__tt(t->elem, r);
        for (int i = 0, j = 0; i < r; i++) {
            if (i == a)
                ox__dim_set(o, i, iters);
            else
                ox__dim_copy(o, i, &t->dims[j++]);
        }
        ox__set_out(c, nstate + k, o);
    }
    return OX_OK;
}

/* ---- sequences ------------------------------------------------------------------- */

static const ox_type *seq_elem(ox_infer_node_ctx *c, int i)
{
    const ox_type *t = ox__in_type(c, i);
    if (!t || t->kind != OX_TYPE_SEQUENCE)
        return NULL;
    return t->inner;
}

ox_status ox__infer_sequence_construct(ox_infer_node_ctx *c)
{
    ox_type *u = NULL;
    for (int i = 0; i < ox__nin(c); i++) {
        const ox_type *t = ox__in_type(c, i);
        ox_type *n = i == 0 ? (t ? ox_type_clone(t) : NULL) : union_type(u, t);
        ox_type_free(u);
        u = n;
        if (!t)
            break;
    }
    return ox__set_out(c, 0, wrap(OX_TYPE_SEQUENCE, u ? u : ox__tt(OX_DT_UNDEFINED, -1)));
}

ox_status ox__infer_sequence_empty(ox_infer_node_ctx *c)
{
    ox_dtype e = ox__attr_dtype(c->n, "dtype", OX_DT_FLOAT);
    return ox__set_out(c, 0, wrap(OX_TYPE_SEQUENCE, ox__tt(e, -1)));
}

ox_status ox__infer_sequence_at(ox_infer_node_ctx *c)
{
    const ox_type *e = seq_elem(c, 0);
    return ox__set_out(c, 0, e ? ox_type_clone(e) : NULL);
}

ox_status ox__infer_sequence_insert(ox_infer_node_ctx *c)
{
    const ox_type *e = seq_elem(c, 0), *t = ox__in_type(c, 1);
    ox_type *u;
    /* An empty sequence's element type has no shape: take the tensor's. */
    if (e && t && e->kind == OX_TYPE_TENSOR && !e->has_shape) {
        const ox_type *in = ox__in_type(c, 0);
        bool empty_producer = c->n->inputs[0]->producer &&
                              ox_node_is(c->n->inputs[0]->producer, "SequenceEmpty");
        u = empty_producer || !in ? ox_type_clone(t) : union_type(e, t);
    } else {
        u = union_type(e, t);
    }
    return ox__set_out(c, 0, wrap(OX_TYPE_SEQUENCE, u ? u : ox__tt(OX_DT_UNDEFINED, -1)));
}

ox_status ox__infer_sequence_erase(ox_infer_node_ctx *c)
{
    return ox__pass_through(c, 0, 0);
}

ox_status ox__infer_sequence_length(ox_infer_node_ctx *c)
{
    return ox__set_out(c, 0, ox__tt(OX_DT_INT64, 0));
}

ox_status ox__infer_split_to_sequence(ox_infer_node_ctx *c)
{
    const ox_type *x = ox__in_shape(c, 0);
    ox_dtype e = ox__in_elem(c, 0);
    if (!x)
        return ox__set_out(c, 0, wrap(OX_TYPE_SEQUENCE, ox__tt(e, -1)));
    int a;
    if (!ox__axis(ox_node_attr_i(c->n, "axis", 0), x->rank, &a))
        return ox__fail(c, "axis out of range");
    ox_type *t;
    if (!ox__has_in(c, 1)) {
        if (ox_node_attr_i(c->n, "keepdims", 1)) {
            t = ox__tt_copy(x, e);
            ox__dim_set(t, a, 1);
        } else {
            t = ox__tt(e, x->rank - 1);
            for (int i = 0, k = 0; i < x->rank; i++)
                if (i != a)
                    ox__dim_copy(t, k++, &x->dims[i]);
        }
    } else {
        t = ox__tt_copy(x, e);
        const ox__kv *sk = ox__in_kv(c, 1);
        int64_t d = ox__dimv(x, a);
        bool same = false;
        int64_t v = -1;
        if (sk && ox__kv_all_known(sk) && sk->n >= 1) {
            v = ox__kv_get_i(sk, 0);
            same = true;
            for (int64_t i = 1; i < sk->n; i++)
                same = same && ox__kv_get_i(sk, i) == v;
            if (sk->rank == 0)
                same = d >= 0 && v > 0 && d % v == 0;
        }
        ox__dim_set(t, a, same ? v : -1);
    }
    return ox__set_out(c, 0, wrap(OX_TYPE_SEQUENCE, t));
}

ox_status ox__infer_concat_from_sequence(ox_infer_node_ctx *c)
{
    const ox_type *e = seq_elem(c, 0);
    if (!e || e->kind != OX_TYPE_TENSOR || !e->has_shape)
        return ox__set_out(c, 0, ox__tt(e ? e->elem : OX_DT_UNDEFINED, -1));
    bool newax = ox_node_attr_i(c->n, "new_axis", 0) != 0;
    int r = e->rank + (newax ? 1 : 0);
    int a;
    if (!ox__axis(ox_node_attr_i(c->n, "axis", 0), r, &a))
        return ox__fail(c, "axis out of range");
    ox_type *o = ox__tt(e->elem, r);
    for (int i = 0, k = 0; i < r; i++) {
        if (newax && i == a)
            continue;
        if (i != a)
            ox__dim_copy(o, i, &e->dims[k]);
        k++;
    }
    return ox__set_out(c, 0, o);
}

ox_status ox__infer_sequence_map(ox_infer_node_ctx *c)
{
    ox_graph *body = attr_graph(c->n, "body");
    if (!body)
        return ox__fail(c, "SequenceMap without body");
    for (int i = 0; i < body->n_inputs && i < ox__nin(c); i++) {
        const ox_type *t = ox__in_type(c, i);
        if (t && t->kind == OX_TYPE_SEQUENCE && t->inner)
            set_value_type(body->inputs[i], ox_type_clone(t->inner));
        else if (t && i > 0)
            set_value_type(body->inputs[i], ox_type_clone(t));
    }
    ox_status rc = ox__infer_subgraph(c, body);
    if (rc != OX_OK)
        return rc;
    for (int i = 0; i < c->n->n_outputs; i++) {
        const ox_type *t = gout_type(body, i);
        ox__set_out(c, i, wrap(OX_TYPE_SEQUENCE, t ? ox_type_clone(t)
                                                   : ox__tt(OX_DT_UNDEFINED, -1)));
    }
    return OX_OK;
}

/* ---- optionals -------------------------------------------------------------------- */

ox_status ox__infer_optional(ox_infer_node_ctx *c)
{
    const ox_type *t = ox__in_type(c, 0);
    if (t)
        return ox__set_out(c, 0, wrap(OX_TYPE_OPTIONAL, ox_type_clone(t)));
    const ox_attr *a = ox_node_attr(c->n, "type");
    if (a && a->tp)
        return ox__set_out(c, 0, wrap(OX_TYPE_OPTIONAL, ox_type_clone(a->tp)));
    return OX_OK;
}

ox_status ox__infer_optional_get(ox_infer_node_ctx *c)
{
    const ox_type *t = ox__in_type(c, 0);
    if (!t)
        return OX_OK;
    if (t->kind == OX_TYPE_OPTIONAL)
        return ox__set_out(c, 0, t->inner ? ox_type_clone(t->inner) : NULL);
    return ox__set_out(c, 0, ox_type_clone(t));
}

ox_status ox__infer_optional_has(ox_infer_node_ctx *c)
{
    return ox__set_out(c, 0, ox__tt(OX_DT_BOOL, 0));
}
