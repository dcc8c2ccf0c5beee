/* Attention fusion (--target ort): the multi-head self-attention block
 * that BERT-style exporters write, to com.microsoft Attention with the
 * three projections packed into one [Din, 3*D] weight (one MatMul instead
 * of three):
 *
 *   q = X Wq + bq;  Q = Transpose(Reshape(q, [0, 0, N, h]), [0, 2, 1, 3])
 *   k = X Wk + bk;  Kt = Transpose(Reshape(k, [0, 0, N, h]), [0, 2, 3, 1])
 *   v = X Wv + bv;  V = Transpose(Reshape(v, [0, 0, N, h]), [0, 2, 1, 3])
 *   P = Softmax(MatMul(Q, Kt) / c [+ M], axis -1)      (or * c, or Q / c)
 *   y = Reshape(Transpose(MatMul(P, V), [0, 2, 1, 3]), [0, 0, N*h])
 *
 * GPT-2 exports write the three projections as one MatMul + Add split in
 * three (kept packed), reshape shapes as Concat(batch, seq, N, h) read from
 * Shape at run time, and the causal mask as
 * Where(Slice(tril constant, 0:S, 0:S), scores, very negative): that
 * becomes Attention's unidirectional=1.
 *
 * PyTorch's nn.MultiheadAttention (nn.TransformerEncoder, batch_first)
 * works sequence-first: Xs = Transpose(X, [1, 0, 2]), qkv = Xs W + b cut
 * in three by Slice, heads split as Reshape(·, [S, B·N, h]) read from
 * Shape at run time and Transpose [1, 0, 2] ([1, 2, 0] for K), the context
 * Transpose [1, 0, 2] back to [S, B·N, h] and then reshaped to [S·B, D]
 * for the output projection. That becomes Transpose(Attention(X, W, b),
 * [1, 0, 2]) ([S, B, D]: the same elements in the same order) when every
 * reader of the context is a Reshape to a shape without 0 entries.
 *
 * The mask M must be the additive form of a 2-D 0/1 mask m:
 * (1 - Cast(Unsqueeze(m, [1, 2]))) * f with f < 0 (or (m' - 1) * -f);
 * it becomes mask_index = Cast(m, int32) with mask_filter_value f, which
 * is the same for 0/1 masks (what exporters feed). Another mask shape
 * leaves the block alone. Every intermediate must be read inside the
 * block only. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes/fuse_util.h"

typedef struct attn_match {
    ox_node *nodes[24];
    int nn;
    ox_value *x, *y, *mask;   /* mask: the 2-D integer mask, or NULL */
    ox_value *w[3], *b[3];    /* q, k, v projections (b may be NULL) */
    int64_t heads, hsize;
    double scale, filter;
    ox_node *split;           /* the packed form: q, k, v = Split(X W + b) */
    int split_out[3];
    ox_value *packed_w, *packed_b;
    bool causal;
    ox_value *causal_len;     /* the slice end of the causal mask: S */
    int64_t causal_m;         /* or, a folded mask, its size (must be S) */
    ox_value *dyn[16];        /* Shape sources of runtime reshape shapes */
    int n_dyn;
    bool seq_first;           /* PyTorch nn.MultiheadAttention: [S, B, H] */
    ox_value *xs;             /* seq-first: Transpose(X, [1, 0, 2]) */
    /* Shape nodes outside the block reading an intermediate for its dims
     * 0/1 only (the runtime reshape shapes): they read xs instead. */
    ox_node *shape_readers[8];
    int n_shape_readers;
    /* The ONNX form (fuse_attention_onnx): the projections stay, their
     * outputs (qkv_in) feed Attention; the additive mask stays as attn_mask. */
    bool onnx;
    ox_value *qkv_in[3], *mask_add;
    ox_node *keep[8];
    int n_keep;
    /* fuse_multihead_attention: K and V may project other inputs (k_x,
     * v_x; the same one or two) than Q (cross-attention), and a branch may
     * have no projection at all (then its source is the head-split value
     * itself, e.g. keys and values computed elsewhere). */
    bool allow_cross;
    ox_value *k_x, *v_x;
    bool raw;                 /* some branch has no projection */
} attn_match;

static bool push(attn_match *a, ox_node *n)
{
    if (a->nn >= 24)
        return false;
    a->nodes[a->nn++] = n;
    return true;
}

/* Mul/Div of v by a scalar constant (either order for Mul): sets u and the
 * factor. */
static ox_node *scaled(const ox_graph *g, const ox_value *v, double *f, ox_value **u)
{
    ox_node *n = ox__fuse_prod(g, v, NULL);
    if (!n || n->n_inputs != 2 || n->n_outputs != 1)
        return NULL;
    double s;
    if (ox_node_is(n, "Div") && ox__fuse_scalar(n->inputs[1], &s) && s != 0) {
        *f = 1.0 / s;
        *u = n->inputs[0];
        return n;
    }
    for (int k = 0; ox_node_is(n, "Mul") && k < 2; k++)
        if (ox__fuse_scalar(n->inputs[1 - k], &s) && !ox__fuse_const(n->inputs[k])) {
            *f = s;
            *u = n->inputs[k];
            return n;
        }
    return NULL;
}

/* Transpose(v) with the given perm; returns its input. */
static ox_value *transposed(const ox_graph *g, const ox_value *v, const int64_t *perm, int r,
                            attn_match *a)
{
    ox_node *t = ox__fuse_prod(g, v, "Transpose");
    const int64_t *p;
    if (!t || t->n_inputs != 1 || ox_node_attr_ints(t, "perm", &p) != r ||
        memcmp(p, perm, (size_t)r * sizeof *p) || !push(a, t))
        return NULL;
    return t->inputs[0];
}

/* A runtime dim: Unsqueeze(Gather(Shape(src), k), [0]) (or the Gather
 * alone when 1-D); records src, whose dim k must be checked against X. */
static bool dyn_dim(const ox_graph *g, const ox_value *v, int k, attn_match *a)
{
    ox_node *u = ox__fuse_prod(g, v, "Unsqueeze");
    int64_t ax[4];
    if (u) {
        if (u->n_inputs < 1 || (u->n_inputs >= 2 ? ox__pass_const_ints(u->inputs[1], ax, 4) != 1
                                                  : ox_node_attr_i(u, "axes", -1) != 0) ||
            (u->n_inputs >= 2 && ax[0] != 0))
            return false;
        v = u->inputs[0];
    }
    ox_node *ga = ox__fuse_prod(g, v, "Gather");
    int64_t idx[1];
    if (!ga || ga->n_inputs != 2 || ox_node_attr_i(ga, "axis", 0) != 0 ||
        ox__pass_const_ints(ga->inputs[1], idx, 1) != 1 || idx[0] != k)
        return false;
    ox_node *sh = ox__fuse_prod(g, ga->inputs[0], "Shape");
    if (!sh || sh->n_inputs != 1 || ox_node_attr_i(sh, "start", 0) != 0 || a->n_dyn >= 16)
        return false;
    a->dyn[a->n_dyn++] = sh->inputs[0];
    return true;
}

/* Reshape(v, shape) with shape [0, 0 or -1, d...] (r entries, constant) or
 * Concat(batch, seq, d...) read from Shape at run time; returns its input
 * and the trailing dims. */
static ox_value *reshaped(const ox_graph *g, const ox_value *v, int r, int64_t *dims,
                          attn_match *a)
{
    ox_node *n = ox__fuse_prod(g, v, "Reshape");
    int64_t s[8];
    if (!n || n->n_inputs != 2 || ox_node_attr_i(n, "allowzero", 0))
        return NULL;
    if (ox__pass_const_ints(n->inputs[1], s, 8) == r) {
        /* 0 copies the input's dim; a static one may be written out (a
         * runtime shape folded by inference). */
        const ox_type *t = n->inputs[0] ? n->inputs[0]->type : NULL;
        for (int i = 0; i < 2; i++)
            if (s[i] != 0 && !(i == 1 && s[i] == -1) &&
                !(t && t->has_shape && t->rank > i && t->dims[i].value == s[i]))
                return NULL;
    } else {
        ox_node *cc = ox__fuse_prod(g, n->inputs[1], "Concat");
        if (!cc || cc->n_inputs != r || ox_node_attr_i(cc, "axis", 0) != 0 ||
            !dyn_dim(g, cc->inputs[0], 0, a) || !dyn_dim(g, cc->inputs[1], 1, a))
            return NULL;
        for (int i = 2; i < r; i++)
            if (ox__pass_const_ints(cc->inputs[i], &s[i], 1) != 1)
                return NULL;
    }
    for (int i = 2; i < r; i++) {
        if (s[i] <= 0)
            return NULL;
        dims[i - 2] = s[i];
    }
    return push(a, n) ? n->inputs[0] : NULL;
}

/* v = X W (+ b), W a 2-D float constant, b a 1-D one (either order). */
static bool projection(const ox_graph *g, ox_value *v, int which, attn_match *a)
{
    ox_node *ad = ox__fuse_prod(g, v, "Add"), *mm = NULL;
    ox_value *b = NULL;
    for (int k = 0; ad && ad->n_inputs == 2 && k < 2 && !mm; k++) {
        const ox_tensor *t = ox__fuse_const(ad->inputs[1 - k]);
        mm = t && t->rank == 1 ? ox__fuse_prod(g, ad->inputs[k], "MatMul") : NULL;
        b = ad->inputs[1 - k];
    }
    if (!mm) {
        ad = NULL;
        b = NULL;
        mm = ox__fuse_prod(g, v, "MatMul");
    }
    const ox_tensor *w = mm && mm->n_inputs == 2 ? ox__fuse_const(mm->inputs[1]) : NULL;
    ox_value **src = !a->allow_cross || which == 0 ? &a->x : which == 1 ? &a->k_x : &a->v_x;
    if (!w || w->rank != 2 || w->dtype != OX_DT_FLOAT || !mm->inputs[0] ||
        (*src && mm->inputs[0] != *src) || (ad && !push(a, ad)) || !push(a, mm))
        return false;
    if (b && (ox__fuse_const(b)->dims[0] != w->dims[1] || ox__fuse_const(b)->dtype != w->dtype))
        return false;
    *src = mm->inputs[0];
    a->w[which] = mm->inputs[1];
    a->b[which] = b;
    if (ad)
        a->keep[a->n_keep++] = ad;
    a->keep[a->n_keep++] = mm;
    return true;
}

/* One head-split branch: Transpose(Reshape(proj, [0,0,N,h]), perm). */
static bool branch(const ox_graph *g, const ox_value *v, const int64_t *perm, int which,
                   attn_match *a)
{
    int64_t d[2];
    ox_value *r = transposed(g, v, perm, 4, a);
    ox_value *p = r ? reshaped(g, r, 4, d, a) : NULL;
    if (!p || (a->heads && (d[0] != a->heads || d[1] != a->hsize)))
        return false;
    a->heads = d[0];
    a->hsize = d[1];
    a->qkv_in[which] = p;
    ox_node *sp = ox__fuse_prod(g, p, "Split");
    if (sp) {
        if ((a->split && a->split != sp) || p->producer_output != which)
            return false;
        a->split = sp;
        return true;
    }
    if (a->split)
        return false;
    int nn = a->nn, nk = a->n_keep;
    if (projection(g, p, which, a))
        return true;
    a->nn = nn; /* what a failed projection pushed is no part of the block */
    a->n_keep = nk;
    /* MultiHeadAttention takes any [B, S, D] float tensor as q, k or v. */
    ox_value **src = which == 0 ? &a->x : which == 1 ? &a->k_x : &a->v_x;
    if (!a->allow_cross || ox__fuse_const(p) || ox__fuse_rank(p) != 3 ||
        ox__pass_elem(p) != OX_DT_FLOAT || (*src && *src != p))
        return false;
    *src = p;
    a->w[which] = a->b[which] = NULL;
    a->raw = true;
    return true;
}

/* The packed form: Split(X W + b) on the last axis into three equal parts
 * q, k, v (all its outputs read by the three branches only). */
static bool packed(const ox_graph *g, attn_match *a)
{
    ox_node *sp = a->split;
    int64_t d = a->heads * a->hsize, sz[4];
    int ns = sp->n_inputs >= 2 && sp->inputs[1] ? ox__pass_const_ints(sp->inputs[1], sz, 4) : -1;
    if (ns < 0) {
        const int64_t *p;
        ns = ox_node_attr_ints(sp, "split", &p);
        for (int i = 0; i < ns && i < 4; i++)
            sz[i] = p[i];
    }
    int64_t axis = ox_node_attr_i(sp, "axis", 0);
    int r = ox__fuse_rank(sp->inputs[0]);
    if (sp->n_outputs != 3 || (ns > 0 && (ns != 3 || sz[0] != d || sz[1] != d || sz[2] != d)) ||
        !(axis == -1 || (r > 0 && axis == r - 1)) || !push(a, sp))
        return false;
    ox_value *v = sp->inputs[0], *b = NULL;
    ox_node *ad = ox__fuse_prod(g, v, "Add"), *mm = NULL;
    for (int k = 0; ad && ad->n_inputs == 2 && k < 2 && !mm; k++) {
        const ox_tensor *t = ox__fuse_const(ad->inputs[1 - k]);
        mm = t && t->rank == 1 && t->dims[0] == 3 * d && t->dtype == OX_DT_FLOAT
                 ? ox__fuse_prod(g, ad->inputs[k], "MatMul")
                 : NULL;
        b = ad->inputs[1 - k];
    }
    if (!mm) {
        ad = NULL;
        b = NULL;
        mm = ox__fuse_prod(g, v, "MatMul");
    }
    const ox_tensor *w = mm && mm->n_inputs == 2 ? ox__fuse_const(mm->inputs[1]) : NULL;
    if (!w || w->rank != 2 || w->dims[1] != 3 * d || w->dtype != OX_DT_FLOAT || !mm->inputs[0] ||
        (ad && !push(a, ad)) || !push(a, mm))
        return false;
    a->x = mm->inputs[0];
    a->packed_w = mm->inputs[1];
    a->packed_b = b;
    a->keep[a->n_keep++] = sp;
    if (ad)
        a->keep[a->n_keep++] = ad;
    a->keep[a->n_keep++] = mm;
    return true;
}

/* Dim i of a and dim j of b are the same: equal known values or the same
 * symbol. */
static bool same_dim(const ox_value *a, int i, const ox_value *b, int j)
{
    const ox_type *x = a ? a->type : NULL, *y = b ? b->type : NULL;
    if (!x || !y || !x->has_shape || !y->has_shape || i >= x->rank || j >= y->rank)
        return false;
    const ox_dim *p = &x->dims[i], *q = &y->dims[j];
    if (p->value > 0 || q->value > 0)
        return p->value == q->value;
    return p->param && q->param && !strcmp(p->param, q->param);
}

/* Where(cond, scores, very negative) with cond the [0:S, 0:S] corner of a
 * constant lower-triangular [1, 1, M, M] mask: causal attention. Sets the
 * scores and the slice end (checked to be S once X is known). */
static ox_node *causal_where(const ox_graph *g, const ox_value *v, ox_value **scores,
                             attn_match *a)
{
    ox_node *w = ox__fuse_prod(g, v, "Where");
    double c;
    if (!w || w->n_inputs != 3 || !ox__fuse_scalar(w->inputs[2], &c) || !(c <= -1e4))
        return NULL;
    ox_value *cond = w->inputs[0], *end = NULL;
    bool axes_seen[4] = {false};
    const ox_tensor *folded = ox__fuse_const(cond);
    for (int step = 0; step < 2 && !folded; step++) {
        ox_node *sl = ox__fuse_prod(g, cond, "Slice");
        int64_t st[4], ax[4], sp[4];
        int n;
        if (!sl || sl->n_inputs < 4 || (n = ox__pass_const_ints(sl->inputs[1], st, 4)) < 1 ||
            ox__pass_const_ints(sl->inputs[3], ax, 4) != n ||
            (sl->n_inputs >= 5 && sl->inputs[4] &&
             (ox__pass_const_ints(sl->inputs[4], sp, 4) != n)))
            return NULL;
        for (int i = 0; i < n; i++) {
            if (st[i] != 0 || (ax[i] != 2 && ax[i] != 3) ||
                (sl->n_inputs >= 5 && sl->inputs[4] && sp[i] != 1))
                return NULL;
            axes_seen[ax[i]] = true;
        }
        if (n != 1 || (end && sl->inputs[2] != end))
            return NULL; /* one axis per Slice, both ending at the same S */
        end = sl->inputs[2];
        cond = sl->inputs[0];
    }
    const ox_tensor *t = ox__fuse_const(cond);
    if (!t || (!folded && (!axes_seen[2] || !axes_seen[3])) || t->rank != 4 || t->dims[0] != 1 ||
        t->dims[1] != 1 || t->dims[2] != t->dims[3] || t->numel > (1 << 22) ||
        !(t->dtype == OX_DT_BOOL || ox_dtype_is_int(t->dtype) || ox__fuse_float(t->dtype)))
        return NULL;
    int64_t m = t->dims[2];
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < m; j++)
            if ((ox_tensor_get_f64(t, i * m + j) != 0) != (j <= i))
                return NULL;
    a->causal = true;
    a->causal_len = end;
    a->causal_m = folded ? m : 0; /* the constant is the whole mask */
    *scores = w->inputs[1];
    return w;
}

/* Unsqueeze axes (attribute, or a constant input from opset 13). */
static int unsq_axes(const ox_node *u, int64_t *ax)
{
    if (u->n_inputs >= 2)
        return ox__pass_const_ints(u->inputs[1], ax, 4);
    const int64_t *p;
    int n = ox_node_attr_ints(u, "axes", &p);
    for (int i = 0; i < n && i < 4; i++)
        ax[i] = p[i];
    return n > 4 ? -1 : n;
}

/* The additive mask M = (1 - Cast(Unsqueeze(m, [1, 2]))) * f, f < 0, or
 * (Cast(...) - 1) * -f; Cast and Unsqueeze in either order, the Unsqueeze
 * possibly as two (axis 1, then 2). Sets the mask and the filter. */
static bool additive_mask(const ox_graph *g, const ox_value *M, attn_match *a)
{
    double f;
    ox_value *t;
    ox_node *mul = scaled(g, M, &f, &t);
    ox_node *sub = mul ? ox__fuse_prod(g, t, "Sub") : NULL;
    if (!sub || sub->n_inputs != 2)
        return false;
    ox_value *u;
    if (ox__fuse_scalar_is(sub->inputs[0], 1, 0)) {
        u = sub->inputs[1];
    } else if (ox__fuse_scalar_is(sub->inputs[1], 1, 0)) {
        u = sub->inputs[0];
        f = -f;
    } else {
        return false;
    }
    if (!(f < 0))
        return false;
    int unsq = 0;  /* bit 1: axis 1 added, bit 2: axis 2 */
    for (int step = 0; step < 3; step++) {
        ox_node *n = ox__fuse_prod(g, u, NULL);
        int64_t ax[4];
        int na;
        if (n && ox_node_is(n, "Cast") && n->n_inputs == 1) {
            u = n->inputs[0];
        } else if (n && ox_node_is(n, "Unsqueeze") && (na = unsq_axes(n, ax)) > 0) {
            /* Applied outside in: the later Unsqueeze's axes are those of
             * the final shape. */
            int64_t s[2] = {ax[0], na > 1 ? ax[1] : -1};
            if (na == 2 && s[0] == 1 && s[1] == 2 && !unsq)
                unsq = 3;
            else if (na == 1 && s[0] == 2 && !unsq)
                unsq = 2;
            else if (na == 1 && s[0] == 1 && unsq == 2)
                unsq = 3;
            else
                return false;
            u = n->inputs[0];
        } else {
            break;
        }
    }
    ox_dtype dt = ox__pass_elem(u);
    if (unsq != 3 || ox__fuse_rank(u) != 2 || (dt != OX_DT_INT64 && dt != OX_DT_INT32))
        return false;
    a->mask = u;
    a->filter = f;
    return true;
}

/* M added to scores s broadcasts without growing it: rank <= 4, each dim 1
 * or s's, and its query dim s's (not 1). */
static bool mask_fits(const ox_value *M, const ox_value *s)
{
    const ox_type *m = M ? M->type : NULL, *t = s ? s->type : NULL;
    if (!m || !t || !m->has_shape || !t->has_shape || m->rank > 4 || t->rank != 4 ||
        !ox__fuse_float(m->elem))
        return false;
    for (int i = 0; i < m->rank; i++) {
        int j = t->rank - m->rank + i;
        if (m->dims[i].value != 1 && !same_dim(M, i, s, j))
            return false;
    }
    /* ONNX Runtime 1.30 wants the query dim written out, not broadcast. */
    return m->rank >= 2 && same_dim(M, m->rank - 2, s, 2);
}

static bool match_attn(const ox_graph *g, ox_node *sm, attn_match *a, int64_t opset, bool onnx,
                       bool cross)
{
    memset(a, 0, sizeof *a);
    a->onnx = onnx;
    a->allow_cross = cross;
    int64_t axis = ox_node_attr_i(sm, "axis", opset >= 13 ? -1 : 1);
    if (!ox_node_is(sm, "Softmax") || !ox_node_is_default_domain(sm) || sm->n_inputs != 1 ||
        sm->n_outputs != 1 || (axis != -1 && axis != 3) || !push(a, sm))
        return false;
    /* Scores [+ mask]. */
    ox_value *s = sm->inputs[0];
    ox_node *add = ox__fuse_prod(g, s, "Add");
    ox_node *wh = add ? NULL : causal_where(g, s, &s, a);
    if (wh && !push(a, wh))
        return false;
    if (add && add->n_inputs == 2 && onnx) {
        /* Any additive mask that broadcasts over the scores: attn_mask. */
        int k;
        for (k = 0; k < 2; k++) {
            ox_node *p = ox__fuse_prod(g, add->inputs[k], NULL);
            if (p && (ox_node_is(p, "MatMul") || ox_node_is(p, "Div") || ox_node_is(p, "Mul")) &&
                mask_fits(add->inputs[1 - k], add->inputs[k]))
                break;
        }
        if (k == 2 || !push(a, add))
            return false;
        a->mask_add = add->inputs[1 - k];
        s = add->inputs[k];
    } else if (add && add->n_inputs == 2) {
        int k;
        for (k = 0; k < 2; k++)
            if (additive_mask(g, add->inputs[1 - k], a))
                break;
        if (k == 2 || !push(a, add))
            return false; /* a mask of another form */
        s = add->inputs[k];
    }
    a->scale = 1;
    ox_value *u;
    double f;
    ox_node *sc = scaled(g, s, &f, &u);
    if (sc) {
        a->scale = f;
        s = u;
        push(a, sc);
    }
    ox_node *qk = ox__fuse_prod(g, s, "MatMul");
    if (!qk || qk->n_inputs != 2 || !push(a, qk))
        return false;
    ox_value *q = qk->inputs[0];
    if (!sc && (sc = scaled(g, q, &f, &u))) { /* the scale applied to Q */
        a->scale = f;
        q = u;
        push(a, sc);
    }
    static const int64_t p0213[4] = {0, 2, 1, 3}, p0231[4] = {0, 2, 3, 1};
    if (!branch(g, q, p0213, 0, a) || !branch(g, qk->inputs[1], p0231, 1, a))
        return false;
    /* P V, then the heads merged back. */
    ox_value *p = sm->outputs[0];
    ox_node *pv = ox__fuse_single(p) ? p->uses[0].node : NULL;
    if (!pv || !ox_node_is(pv, "MatMul") || pv->graph != g || pv->inputs[0] != p ||
        pv->n_inputs != 2 || !push(a, pv) || !branch(g, pv->inputs[1], p0213, 2, a))
        return false;
    ox_value *c = pv->outputs[0];
    ox_node *tr = ox__fuse_single(c) ? c->uses[0].node : NULL;
    const int64_t *perm;
    if (!tr || !ox_node_is(tr, "Transpose") || tr->graph != g ||
        ox_node_attr_ints(tr, "perm", &perm) != 4 || memcmp(perm, p0213, sizeof p0213) ||
        !push(a, tr))
        return false;
    ox_node *rs = ox__fuse_single(tr->outputs[0]) ? tr->outputs[0]->uses[0].node : NULL;
    int64_t hd;
    if (!rs || !ox_node_is(rs, "Reshape") || rs->graph != g ||
        reshaped(g, rs->outputs[0], 3, &hd, a) != tr->outputs[0] ||
        hd != a->heads * a->hsize)
        return false;
    a->y = rs->outputs[0];
    if (a->split) {
        if (!packed(g, a))
            return false;
    } else {
        /* Same projection sizes (cross-attention: K and V may project
         * inputs of another width than Q's). Without a projection the
         * head split fixed the width already. */
        const ox_tensor *w0 = a->w[0] ? ox__fuse_const(a->w[0]) : NULL;
        for (int k = 0; k < 3; k++) {
            const ox_tensor *wk = a->w[k] ? ox__fuse_const(a->w[k]) : NULL;
            if (wk && (wk->dims[1] != hd ||
                       (!a->allow_cross && w0 && wk->dims[0] != w0->dims[0])))
                return false;
        }
    }
    /* Runtime shapes read batch and sequence from a tensor whose first
     * two dims are X's; the causal mask ends at X's sequence length. */
    /* Cross-attention: K and V from k_x and v_x of the same batch (MatMul
     * would broadcast a batch of 1); no packed Split, no causal mask (both
     * need one sequence). K and V have the same length: P V would not run
     * otherwise. A runtime shape may read its sequence from any of the
     * inputs: a Reshape the original runs without error has the right one
     * (B and N h fix the rest). */
    ox_value *kv = a->k_x ? a->k_x : a->x;
    if (a->allow_cross) {
        ox_value *src[2] = {kv, a->v_x ? a->v_x : a->x};
        for (int k = 0; k < 2; k++)
            if (src[k] != a->x &&
                (a->split || a->causal || ox__fuse_rank(src[k]) != 3 ||
                 ox__pass_elem(src[k]) != OX_DT_FLOAT || !same_dim(src[k], 0, a->x, 0)))
                return false;
    }
    ox_value *vx = a->v_x ? a->v_x : a->x;
    for (int i = 0; i < a->n_dyn; i++)
        if (!same_dim(a->dyn[i], 0, a->x, 0) ||
            !(same_dim(a->dyn[i], 1, a->x, 1) || same_dim(a->dyn[i], 1, kv, 1) ||
              same_dim(a->dyn[i], 1, vx, 1)))
            return false;
    /* mask_index is [batch, key sequence]: a mask that broadcasts instead
     * ([B, 1]) has no Attention form. */
    if (a->mask && (!same_dim(a->mask, 0, a->x, 0) || !same_dim(a->mask, 1, kv, 1)))
        return false;
    if (a->causal) {
        int nd = a->n_dyn;
        int64_t e[1];
        const ox_type *xt = a->x->type;
        bool ok = a->causal_m ? xt && xt->has_shape && xt->rank == 3 &&
                                    xt->dims[1].value == a->causal_m
                  : ox__pass_const_ints(a->causal_len, e, 1) == 1
                      ? xt && xt->has_shape && xt->rank == 3 && xt->dims[1].value == e[0]
                      : dyn_dim(g, a->causal_len, 1, a) && same_dim(a->dyn[nd], 1, a->x, 1);
        if (!ok)
            return false;
    }
    return ox__fuse_rank(a->x) == 3 && ox__pass_elem(a->x) == OX_DT_FLOAT &&
           ox__fuse_internal(a->nodes, a->nn, a->y);
}

/* Seq-first head split: Reshape(p, Concat(S, B * N, h)) with S and B read
 * from Shape at run time; sets the heads and returns p. */
static ox_value *sf_reshaped(const ox_graph *g, const ox_value *v, attn_match *a)
{
    ox_node *n = ox__fuse_prod(g, v, "Reshape");
    ox_node *cc = n && n->n_inputs == 2 ? ox__fuse_prod(g, n->inputs[1], "Concat") : NULL;
    int64_t h;
    if (!cc || cc->n_inputs != 3 || ox_node_attr_i(n, "allowzero", 0) ||
        !dyn_dim(g, cc->inputs[0], 0, a) || ox__pass_const_ints(cc->inputs[2], &h, 1) != 1 ||
        h <= 0)
        return NULL;
    /* B * N: Unsqueeze(Mul(Gather(Shape(src), 1), N)), either order. */
    ox_node *u = ox__fuse_prod(g, cc->inputs[1], "Unsqueeze");
    ox_node *mul = u && u->n_inputs >= 1 ? ox__fuse_prod(g, u->inputs[0], "Mul") : NULL;
    int64_t ax[4], nh = 0;
    if (!mul || mul->n_inputs != 2 || u->n_inputs < 2 ||
        ox__pass_const_ints(u->inputs[1], ax, 4) != 1 || ax[0] != 0)
        return NULL;
    bool ok = false;
    for (int k = 0; k < 2 && !ok; k++) {
        ox_value *cst = mul->inputs[1 - k];
        ox_node *ga = ox__fuse_prod(g, mul->inputs[k], "Gather");
        int64_t idx;
        ox_node *sh = ga && ga->n_inputs == 2 ? ox__fuse_prod(g, ga->inputs[0], "Shape") : NULL;
        if (sh && ox__pass_const_ints(cst, &nh, 1) == 1 && nh > 0 &&
            ox__pass_const_ints(ga->inputs[1], &idx, 1) == 1 && idx == 1 &&
            ox_node_attr_i(ga, "axis", 0) == 0 && a->n_dyn < 16) {
            a->dyn[a->n_dyn++] = sh->inputs[0];
            ok = true;
        }
    }
    if (!ok || (a->heads && (a->heads != nh || a->hsize != h)) || !push(a, n))
        return NULL;
    a->heads = nh;
    a->hsize = h;
    return n->inputs[0];
}

/* Part `which` of qkv cut by Slice on the last axis: [which*D, (which+1)*D). */
static ox_value *sf_slice(const ox_graph *g, const ox_value *v, int which, attn_match *a)
{
    ox_node *sl = ox__fuse_prod(g, v, "Slice");
    int64_t st, en, ax, sp = 1, d = a->heads * a->hsize;
    if (!sl || sl->n_inputs < 4 || ox__pass_const_ints(sl->inputs[1], &st, 1) != 1 ||
        ox__pass_const_ints(sl->inputs[2], &en, 1) != 1 ||
        ox__pass_const_ints(sl->inputs[3], &ax, 1) != 1 ||
        (sl->n_inputs >= 5 && sl->inputs[4] && ox__pass_const_ints(sl->inputs[4], &sp, 1) != 1))
        return NULL;
    int r = ox__fuse_rank(sl->inputs[0]);
    if (st != which * d || en != (which + 1) * d || sp != 1 ||
        !(ax == -1 || (r > 0 && ax == r - 1)) || !push(a, sl))
        return NULL;
    return sl->inputs[0];
}

/* r = Shape(v) read only by Gathers of index 0 or 1, and v's dims 0 and 1
 * are xs's. */
static bool shape_dims01(const ox_node *r, const ox_value *v, const attn_match *a)
{
    if (!ox_node_is(r, "Shape") || r->n_inputs != 1 || r->n_outputs != 1 || !r->outputs[0] ||
        r->outputs[0]->is_output || ox_node_attr_i(r, "start", 0) != 0 ||
        ox_node_attr(r, "end") || !same_dim(v, 0, a->xs, 0) || !same_dim(v, 1, a->xs, 1))
        return false;
    const ox_value *o = r->outputs[0];
    for (int i = 0; i < o->n_uses; i++) {
        const ox_node *ga = o->uses[i].node;
        int64_t idx;
        if (o->uses[i].input != 0 || !ox_node_is(ga, "Gather") || ga->n_inputs != 2 ||
            ox_node_attr_i(ga, "axis", 0) != 0 || ox__pass_const_ints(ga->inputs[1], &idx, 1) != 1 ||
            (idx != 0 && idx != 1))
            return false;
    }
    return true;
}

static bool match_seq_first(const ox_graph *g, ox_node *sm, attn_match *a, int64_t opset)
{
    memset(a, 0, sizeof *a);
    a->seq_first = true;
    int64_t axis = ox_node_attr_i(sm, "axis", opset >= 13 ? -1 : 1);
    if (!ox_node_is(sm, "Softmax") || !ox_node_is_default_domain(sm) || sm->n_inputs != 1 ||
        sm->n_outputs != 1 || (axis != -1 && axis != 2) || !push(a, sm))
        return false;
    ox_value *s = sm->inputs[0], *u;
    double f;
    a->scale = 1;
    ox_node *sc = scaled(g, s, &f, &u);
    if (sc) {
        a->scale = f;
        s = u;
        push(a, sc);
    }
    ox_node *qk = ox__fuse_prod(g, s, "MatMul");
    if (!qk || qk->n_inputs != 2 || !push(a, qk))
        return false;
    ox_value *q = qk->inputs[0];
    if (!sc && (sc = scaled(g, q, &f, &u))) {
        a->scale = f;
        q = u;
        push(a, sc);
    }
    static const int64_t p102[3] = {1, 0, 2}, p120[3] = {1, 2, 0};
    ox_value *p = sm->outputs[0];
    ox_node *pv = ox__fuse_single(p) ? p->uses[0].node : NULL;
    if (!pv || !ox_node_is(pv, "MatMul") || pv->graph != g || pv->inputs[0] != p ||
        pv->n_inputs != 2 || !push(a, pv))
        return false;
    ox_value *br[3] = {q, qk->inputs[1], pv->inputs[1]}, *qkv = NULL;
    for (int k = 0; k < 3; k++) {
        ox_value *r = transposed(g, br[k], k == 1 ? p120 : p102, 3, a);
        ox_value *pre = r ? sf_reshaped(g, r, a) : NULL;
        ox_value *src = pre ? sf_slice(g, pre, k, a) : NULL;
        if (!src || (qkv && src != qkv))
            return false;
        qkv = src;
    }
    /* qkv = Xs W + b, Xs = Transpose(X, [1, 0, 2]). */
    ox_value *b = NULL;
    ox_node *ad = ox__fuse_prod(g, qkv, "Add"), *mm = NULL;
    int64_t d = a->heads * a->hsize;
    for (int k = 0; ad && ad->n_inputs == 2 && k < 2 && !mm; k++) {
        const ox_tensor *t = ox__fuse_const(ad->inputs[1 - k]);
        mm = t && t->rank == 1 && t->dims[0] == 3 * d && t->dtype == OX_DT_FLOAT
                 ? ox__fuse_prod(g, ad->inputs[k], "MatMul")
                 : NULL;
        b = ad->inputs[1 - k];
    }
    if (!mm) {
        ad = NULL;
        b = NULL;
        mm = ox__fuse_prod(g, qkv, "MatMul");
    }
    const ox_tensor *w = mm && mm->n_inputs == 2 ? ox__fuse_const(mm->inputs[1]) : NULL;
    ox_node *tx = mm ? ox__fuse_prod(g, mm->inputs[0], "Transpose") : NULL;
    const int64_t *perm;
    if (!w || w->rank != 2 || w->dims[1] != 3 * d || w->dtype != OX_DT_FLOAT || !tx ||
        tx->n_inputs != 1 || ox_node_attr_ints(tx, "perm", &perm) != 3 ||
        memcmp(perm, p102, sizeof p102) || (ad && !push(a, ad)) || !push(a, mm))
        return false;
    a->xs = mm->inputs[0];
    a->x = tx->inputs[0];
    a->packed_w = mm->inputs[1];
    a->packed_b = b;
    /* The context back to [S, B*N, h], read only by Reshapes that do not
     * copy its dims (0 entries). */
    ox_value *cv = pv->outputs[0];
    ox_node *tr = ox__fuse_single(cv) ? cv->uses[0].node : NULL;
    if (!tr || !ox_node_is(tr, "Transpose") || tr->graph != g ||
        ox_node_attr_ints(tr, "perm", &perm) != 3 || memcmp(perm, p102, sizeof p102) ||
        !push(a, tr))
        return false;
    a->y = tr->outputs[0];
    if (a->y->is_output || !a->y->n_uses)
        return false;
    for (int i = 0; i < a->y->n_uses; i++) {
        ox_node *r = a->y->uses[i].node;
        int64_t sh[8];
        int ns;
        if (a->y->uses[i].input != 0 || !ox_node_is(r, "Reshape") || r->n_inputs != 2)
            return false;
        ox_node *cc = ox__fuse_prod(g, r->inputs[1], "Concat");
        if ((ns = ox__pass_const_ints(r->inputs[1], sh, 8)) >= 0) {
            for (int k = 0; k < ns; k++)
                if (sh[k] == 0)
                    return false;
        } else if (cc) {
            for (int k = 0; k < cc->n_inputs; k++) {
                int64_t e;
                if (ox__pass_const_ints(cc->inputs[k], &e, 1) == 1 && e == 0)
                    return false;
            }
        } else {
            return false;
        }
    }
    for (int i = 0; i < a->n_dyn; i++)
        if (!same_dim(a->dyn[i], 0, a->xs, 0) || !same_dim(a->dyn[i], 1, a->xs, 1))
            return false;
    if (ox__fuse_rank(a->x) != 3 || ox__pass_elem(a->x) != OX_DT_FLOAT)
        return false;
    /* Every intermediate read inside the block, or by a Shape whose dims 0
     * and 1 only are used (xs has the same ones). */
    for (int q = 0; q < a->nn; q++)
        for (int o = 0; o < a->nodes[q]->n_outputs; o++) {
            ox_value *v = a->nodes[q]->outputs[o];
            if (!v || v == a->y)
                continue;
            if (v->is_output)
                return false;
            for (int i = 0; i < v->n_uses; i++) {
                ox_node *r = v->uses[i].node;
                bool in = false;
                for (int j = 0; j < a->nn && !in; j++)
                    in = a->nodes[j] == r;
                if (v->uses[i].input < 0)
                    return false;
                if (in)
                    continue;
                if (!shape_dims01(r, v, a) || a->n_shape_readers >= 8)
                    return false;
                a->shape_readers[a->n_shape_readers++] = r;
            }
        }
    return true;
}

/* The mask as Attention's mask_index wants it: int32, one Cast per mask
 * shared by every layer. */
static ox_value *mask_index(ox_pass_ctx *c, ox_graph *g, ox_value *m)
{
    if (ox__pass_elem(m) == OX_DT_INT32)
        return m;
    for (int i = 0; i < m->n_uses; i++) {
        ox_node *n = m->uses[i].node;
        if (m->uses[i].input == 0 && n->graph == g && ox_node_is(n, "Cast") &&
            ox_node_attr_i(n, "to", 0) == OX_DT_INT32 && n->n_outputs == 1 && n->outputs[0])
            return n->outputs[0];
    }
    ox_value *v = ox_graph_new_value(g, "mask_index");
    if (!v)
        return NULL;
    ox_node *n = ox__fuse_node(c, g, "Cast", "", 1, &m, v);
    return n && ox_node_set_attr_i(n, "to", OX_DT_INT32) ? v : NULL;
}

static bool emit_packed(ox_pass_ctx *c, ox_graph *g, attn_match *a)
{
    ox_value *in[3] = {a->x, a->packed_w, a->packed_b};
    if (!in[2]) {
        int64_t n = ox__fuse_const(a->packed_w)->dims[1];
        double *z = calloc((size_t)n, sizeof *z);
        in[2] = z ? ox__fuse_new_init(g, "qkv_bias", OX_DT_FLOAT, 1, &n, z) : NULL;
        free(z);
        if (!in[2])
            return false;
    }
    ox_value *y = a->y, *ao = y;
    if (a->seq_first && !(ao = ox_graph_new_value(g, "attention_out")))
        return false;
    for (int i = 0; i < a->n_shape_readers; i++)
        ox_node_set_input(a->shape_readers[i], 0, a->xs);
    char site[256];
    ox__fuse_site_name(y->producer, "Attention", site, sizeof site);
    ox__fuse_drop_all(c, a->nodes, a->nn);
    ox_node *f = ox__fuse_node_named(c, g, site, "Attention", "com.microsoft", 3, in, ao);
    if (a->seq_first) {
        /* [B, S, D] -> [S, B, D]: the context's element order. */
        static const int64_t p102[3] = {1, 0, 2};
        ox_node *t = ox__fuse_node(c, g, "Transpose", "", 1, &ao, y);
        if (!t || !ox_node_set_attr_ints(t, "perm", 3, p102))
            return false;
    }
    if (!f || !ox_node_set_attr_i(f, "num_heads", a->heads) ||
        !ox_node_set_attr_f(f, "scale", (float)a->scale) ||
        (a->causal && !ox_node_set_attr_i(f, "unidirectional", 1)))
        return false;
    if (ox_model_opset(c->m, "com.microsoft") < 1)
        ox_model_set_opset(c->m, "com.microsoft", 1);
    return true;
}

static bool emit(ox_pass_ctx *c, ox_graph *g, attn_match *a)
{
    if (a->packed_w)
        return emit_packed(c, g, a);
    const ox_tensor *w[3], *b[3];
    for (int k = 0; k < 3; k++) {
        w[k] = ox__fuse_const(a->w[k]);
        b[k] = a->b[k] ? ox__fuse_const(a->b[k]) : NULL;
    }
    int64_t din = w[0]->dims[0], d = w[0]->dims[1];
    double *pw = malloc((size_t)(din * 3 * d) * sizeof *pw), *pb = malloc((size_t)(3 * d) * sizeof *pb);
    if (!pw || !pb) {
        free(pw);
        free(pb);
        return false;
    }
    for (int64_t r = 0; r < din; r++)
        for (int k = 0; k < 3; k++)
            for (int64_t j = 0; j < d; j++)
                pw[r * 3 * d + k * d + j] = ox_tensor_get_f64(w[k], r * d + j);
    for (int k = 0; k < 3; k++)
        for (int64_t j = 0; j < d; j++)
            pb[k * d + j] = b[k] ? ox_tensor_get_f64(b[k], j) : 0.0;
    int64_t wd[2] = {din, 3 * d}, bd[1] = {3 * d};
    ox_value *in[4] = {a->x, ox__fuse_new_init(g, "qkv_weight", OX_DT_FLOAT, 2, wd, pw),
                       ox__fuse_new_init(g, "qkv_bias", OX_DT_FLOAT, 1, bd, pb), NULL};
    free(pw);
    free(pb);
    if (!in[1] || !in[2])
        return false;
    if (a->mask && !(in[3] = mask_index(c, g, a->mask)))
        return false;
    ox_value *y = a->y;
    char site[256];
    ox__fuse_site_name(y->producer, "Attention", site, sizeof site);
    ox__fuse_drop_all(c, a->nodes, a->nn);
    ox_node *f = ox__fuse_node_named(c, g, site, "Attention", "com.microsoft", a->mask ? 4 : 3,
                                     in, y);
    if (!f || !ox_node_set_attr_i(f, "num_heads", a->heads) ||
        !ox_node_set_attr_f(f, "scale", (float)a->scale))
        return false;
    if (a->mask && !ox_node_set_attr_f(f, "mask_filter_value", (float)a->filter))
        return false;
    if (a->causal && !ox_node_set_attr_i(f, "unidirectional", 1))
        return false;
    if (ox_model_opset(c->m, "com.microsoft") < 1)
        ox_model_set_opset(c->m, "com.microsoft", 1);
    return true;
}

static ox_status pass_attention(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    int64_t opset = ox_model_opset(c->m, "");
    for (int i = 0; i < g->n_nodes && ox__pass_may(c); i++) {
        ox_node *n = g->nodes[i];
        attn_match a;
        if (ox__pass_gone(n) ||
            (!match_attn(g, n, &a, opset, false, false) && !match_seq_first(g, n, &a, opset)))
            continue;
        if (!emit(c, g, &a))
            return ox_errorf(err, OX_ENOMEM, "out of memory");
        ox__pass_did(c);
    }
    return OX_OK;
}

/* The standard form: the projections stay and feed Attention(q, k, v
 * [, attn_mask]) with 3-D inputs. */
static bool emit_onnx(ox_pass_ctx *c, ox_graph *g, attn_match *a)
{
    ox_node *drop[24];
    int nd = 0;
    for (int i = 0; i < a->nn; i++) {
        bool keep = false;
        for (int k = 0; k < a->n_keep && !keep; k++)
            keep = a->keep[k] == a->nodes[i];
        if (!keep)
            drop[nd++] = a->nodes[i];
    }
    ox_value *in[4] = {a->qkv_in[0], a->qkv_in[1], a->qkv_in[2], a->mask_add}, *y = a->y;
    char site[256];
    ox__fuse_site_name(y->producer, "Attention", site, sizeof site);
    ox__fuse_drop_all(c, drop, nd);
    ox_node *f = ox__fuse_node_named(c, g, site, "Attention", "", a->mask_add ? 4 : 3, in, y);
    return f && ox_node_set_attr_i(f, "q_num_heads", a->heads) &&
           ox_node_set_attr_i(f, "kv_num_heads", a->heads) &&
           ox_node_set_attr_f(f, "scale", (float)a->scale) &&
           (!a->causal || ox_node_set_attr_i(f, "is_causal", 1));
}

/* The sequence-first block (PyTorch nn.MultiheadAttention) in the standard
 * form: the packed projection reads X itself instead of Xs = Transpose(X)
 * (X W + b is [B, S, 3D], batch-first), a Split cuts it into the 3-D q, k,
 * v that Attention takes, and Attention's [B, S, D] output is transposed
 * to [S, B, D], the element order of the context that the block's readers
 * (Reshapes without 0 entries) expect. */
static bool emit_onnx_sf(ox_pass_ctx *c, ox_graph *g, attn_match *a)
{
    int64_t d = a->heads * a->hsize, n3 = 3;
    double sizes[3] = {(double)d, (double)d, (double)d};
    ox_value *split = ox__fuse_new_init(g, "qkv_split", OX_DT_INT64, 1, &n3, sizes);
    ox_value *proj = ox_graph_new_value(g, "qkv_proj"), *ao = ox_graph_new_value(g, "attention_out");
    ox_value *qkv[3] = {ox_graph_new_value(g, "q"), ox_graph_new_value(g, "k"),
                        ox_graph_new_value(g, "v")};
    ox_value *pb = a->packed_b ? ox_graph_new_value(g, "qkv_proj_bias") : proj;
    if (!split || !proj || !ao || !qkv[0] || !qkv[1] || !qkv[2] || !pb)
        return false;
    for (int i = 0; i < a->n_shape_readers; i++)
        ox__pass_set_input(c, a->shape_readers[i], 0, a->xs);
    ox_value *y = a->y;
    char site[256];
    ox__fuse_site_name(y->producer, "Attention", site, sizeof site);
    ox__fuse_drop_all(c, a->nodes, a->nn);
    ox_value *mm_in[2] = {a->x, a->packed_w}, *add_in[2] = {proj, a->packed_b};
    if (!ox__fuse_node(c, g, "MatMul", "", 2, mm_in, proj) ||
        (a->packed_b && !ox__fuse_node(c, g, "Add", "", 2, add_in, pb)))
        return false;
    ox_value *sp_in[2] = {pb, split};
    char *name = ox_model_unique_node_name(c->m, "qkv_split");
    ox_node *sp = name ? ox_node_new(g, "Split", "", name, 2, sp_in, 3, qkv) : NULL;
    free(name);
    if (!sp || !ox_node_set_attr_i(sp, "axis", -1))
        return false;
    ox_node *f = ox__fuse_node_named(c, g, site, "Attention", "", 3, qkv, ao);
    static const int64_t p102[3] = {1, 0, 2};
    ox_node *t = ox__fuse_node(c, g, "Transpose", "", 1, &ao, y);
    return f && t && ox_node_set_attr_ints(t, "perm", 3, p102) &&
           ox_node_set_attr_i(f, "q_num_heads", a->heads) &&
           ox_node_set_attr_i(f, "kv_num_heads", a->heads) &&
           ox_node_set_attr_f(f, "scale", (float)a->scale);
}

static ox_status pass_attention_onnx(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    int64_t opset = ox_model_opset(c->m, "");
    for (int i = 0; i < g->n_nodes && ox__pass_may(c); i++) {
        ox_node *n = g->nodes[i];
        attn_match a;
        bool sf = false;
        if (ox__pass_gone(n))
            continue;
        if (!match_attn(g, n, &a, opset, true, true)) {
            if (!match_seq_first(g, n, &a, opset))
                continue;
            sf = true;
        }
        if (opset < 23) {
            ox__pass_note(c, "fuse_attention_onnx not applied: needs opset 23 (model has %lld)",
                          (long long)opset);
            return OX_OK;
        }
        if (!(sf ? emit_onnx_sf(c, g, &a) : emit_onnx(c, g, &a)))
            return ox_errorf(err, OX_ENOMEM, "out of memory");
        ox__pass_did(c);
    }
    return OX_OK;
}

/* Cross-attention (Q from one input, K and V from another), which the
 * packed Attention cannot express: com.microsoft MultiHeadAttention on the
 * projections' outputs, which stay; the 0/1 mask over the keys becomes
 * key_padding_mask (int32) with mask_filter_value, exact for 0/1 masks as
 * for Attention. Self-attention is left to fuse_attention (one packed
 * MatMul instead of three). */
static bool emit_mha(ox_pass_ctx *c, ox_graph *g, attn_match *a)
{
    ox_node *drop[24];
    int nd = 0;
    for (int i = 0; i < a->nn; i++) {
        bool keep = false;
        for (int k = 0; k < a->n_keep && !keep; k++)
            keep = a->keep[k] == a->nodes[i];
        if (!keep)
            drop[nd++] = a->nodes[i];
    }
    ox_value *mi = a->mask ? mask_index(c, g, a->mask) : NULL;
    if (a->mask && !mi)
        return false;
    ox_value *in[5] = {a->qkv_in[0], a->qkv_in[1], a->qkv_in[2], NULL, mi}, *y = a->y;
    char site[256];
    ox__fuse_site_name(y->producer, "MultiHeadAttention", site, sizeof site);
    ox__fuse_drop_all(c, drop, nd);
    ox_node *f = ox__fuse_node_named(c, g, site, "MultiHeadAttention", "com.microsoft",
                                     mi ? 5 : 3, in, y);
    if (ox_model_opset(c->m, "com.microsoft") < 1)
        ox_model_set_opset(c->m, "com.microsoft", 1);
    return f && ox_node_set_attr_i(f, "num_heads", a->heads) &&
           ox_node_set_attr_f(f, "scale", (float)a->scale) &&
           (!a->mask || ox_node_set_attr_f(f, "mask_filter_value", (float)a->filter));
}

static ox_status pass_multihead_attention(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    int64_t opset = ox_model_opset(c->m, "");
    for (int i = 0; i < g->n_nodes && ox__pass_may(c); i++) {
        ox_node *n = g->nodes[i];
        attn_match a;
        /* Self-attention with its three projections on one input is
         * fuse_attention's (one packed MatMul instead of three). */
        if (ox__pass_gone(n) || !match_attn(g, n, &a, opset, false, true) ||
            (!a.raw && (!a.k_x || a.k_x == a.x) && (!a.v_x || a.v_x == a.x)))
            continue;
        if (!emit_mha(c, g, &a))
            return ox_errorf(err, OX_ENOMEM, "out of memory");
        ox__pass_did(c);
    }
    return OX_OK;
}

const ox_pass ox__passes_fuse_attn[] = {
    {"fuse_attention",
     "Q/K/V MatMul+Add (or one cut in three), head split (batch- or sequence-first), scaled QK^T "
     "[+ 0/1 mask | causal Where], Softmax, V, head merge -> com.microsoft Attention, packed QKV",
     OX_PASS_FUSION, OX_TARGET_ORT, OX_LEVEL_ALL, true, pass_attention},
    {"fuse_multihead_attention",
     "cross-attention (Q from one input, K/V from one or two others, or unprojected), the "
     "BERT-form block otherwise -> "
     "com.microsoft MultiHeadAttention on the projections, 0/1 mask as key_padding_mask",
     OX_PASS_FUSION, OX_TARGET_ORT, OX_LEVEL_ALL, true, pass_multihead_attention},
    /* After the ort form: under --target ort a block it fused is gone. */
    {"fuse_attention_onnx",
     "the same blocks (batch- or sequence-first, cross-attention; any additive mask that "
     "broadcasts) -> Attention (opset 23) on the projections",
     OX_PASS_FUSION, OX_TARGET_ONNX, OX_LEVEL_EXTENDED, true, pass_attention_onnx},
    {0},
};
