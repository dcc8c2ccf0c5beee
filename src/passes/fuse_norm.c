/* Normalization fusions: the decomposed LayerNorm and RMSNorm that
 * exporters write back to LayerNormalization / RMSNormalization (or ONNX
 * Runtime's SimplifiedLayerNormalization), and under --target ort a
 * residual Add (with a MatMul bias) + LayerNormalization to
 * com.microsoft SkipLayerNormalization.
 *
 * The decomposed forms matched, over the last k axes (axes of both
 * ReduceMeans equal, keepdims=1):
 *   LayerNorm: d = x - ReduceMean(x); v = ReduceMean(Pow(d, 2) | Mul(d, d));
 *              n = d / Sqrt(v + eps) | d * Reciprocal(Sqrt(v + eps))
 *   RMSNorm:   the same with d = x (T5 and Llama exports)
 * then optionally * scale and (LayerNorm) + bias, constants of the
 * normalized shape (or scalars). Every intermediate must be read inside
 * the pattern only. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/fuse_util.h"

typedef struct norm_match {
    ox_node *nodes[12];
    int nn;
    ox_value *x, *y;
    const ox_tensor *scale, *bias; /* constants, or NULL */
    ox_value *scale_v, *bias_v;
    double eps;
    int k;                         /* normalized axes: the last k */
    bool rms;
} norm_match;

/* Parses sd = Sqrt(Add(ReduceMean(Pow(d, 2) | Mul(d, d)), eps)), eps a
 * scalar constant on either side of the Add. Returns d and the axes. */
static ox_value *variance_of(const ox_graph *g, ox_value *sd, norm_match *m, int64_t *ax,
                             int *nax)
{
    ox_node *sq = ox__fuse_prod(g, sd, "Sqrt");
    ox_node *ad = sq && sq->n_inputs == 1 ? ox__fuse_prod(g, sq->inputs[0], "Add") : NULL;
    if (!ad || ad->n_inputs != 2)
        return NULL;
    ox_node *rm = NULL;
    for (int k = 0; k < 2 && !rm; k++)
        if (ox__fuse_scalar(ad->inputs[1 - k], &m->eps))
            rm = ox__fuse_prod(g, ad->inputs[k], "ReduceMean");
    ox_node *p = rm && rm->n_inputs >= 1 ? ox__fuse_prod(g, rm->inputs[0], NULL) : NULL;
    ox_value *d = NULL;
    if (p && ox_node_is(p, "Pow") && p->n_inputs == 2 && ox__fuse_scalar_is(p->inputs[1], 2, 0))
        d = p->inputs[0];
    else if (p && ox_node_is(p, "Mul") && p->n_inputs == 2 && p->inputs[0] == p->inputs[1])
        d = p->inputs[0];
    if (!d || !(m->eps >= 0))
        return NULL;
    *nax = ox__fuse_mean_axes(rm, ox__fuse_rank(d), ax, OX_MAX_RANK);
    if (*nax < 0)
        return NULL;
    m->nodes[m->nn++] = sq;
    m->nodes[m->nn++] = ad;
    m->nodes[m->nn++] = rm;
    m->nodes[m->nn++] = p;
    return d;
}

/* The axes are the last n ones: -n..-1. */
static bool last_axes(const int64_t *ax, int n)
{
    for (int i = 0; i < n; i++)
        if (ax[i] != -n + i)
            return false;
    return true;
}

/* d = Sub(x, ReduceMean(x)) over the axes given; sets x. */
static ox_node *centered(const ox_graph *g, ox_value *d, const int64_t *ax, int nax, ox_value **x,
                         ox_node **mean)
{
    ox_node *sub = ox__fuse_prod(g, d, "Sub");
    if (!sub || sub->n_inputs != 2 || !sub->inputs[0])
        return NULL;
    ox_node *rm = ox__fuse_prod(g, sub->inputs[1], "ReduceMean");
    int64_t ax2[OX_MAX_RANK];
    if (!rm || rm->n_inputs < 1 || rm->inputs[0] != sub->inputs[0] ||
        ox__fuse_mean_axes(rm, ox__fuse_rank(sub->inputs[0]), ax2, OX_MAX_RANK) != nax ||
        memcmp(ax, ax2, (size_t)nax * sizeof *ax))
        return NULL;
    *x = sub->inputs[0];
    *mean = rm;
    return sub;
}

/* The only reader of v when it is a default-domain node of g reading it
 * once, and v is no graph output. */
static ox_node *sole_reader(const ox_graph *g, const ox_value *v)
{
    if (!ox__fuse_single(v))
        return NULL;
    ox_node *r = v->uses[0].node;
    return r->graph == g && ox_node_is_default_domain(r) && r->n_outputs == 1 ? r : NULL;
}

/* Whether constant t applied elementwise to x equals a parameter of the
 * normalized shape (the last k dims of x, which must be static): t is a
 * scalar, or its dims right-aligned match those dims with only 1s before. */
static bool param_ok(const ox_tensor *t, const ox_value *x, int k)
{
    ox_dtype dt = ox__pass_elem(x);
    if (!t || t->dtype != dt || !ox__fuse_float(dt) || !ox_tensor_data(t))
        return false;
    const ox_type *ty = x->type;
    if (!ty || ty->kind != OX_TYPE_TENSOR || !ty->has_shape || ty->rank < k || t->rank > ty->rank)
        return false;
    for (int i = ty->rank - k; i < ty->rank; i++)
        if (ty->dims[i].value <= 0)
            return false;
    if (t->numel == 1)
        return true;
    for (int j = 0; j < t->rank; j++) {
        int a = ty->rank - t->rank + j; /* the axis of x this dim meets */
        if (a < ty->rank - k ? t->dims[j] != 1 : t->dims[j] != ty->dims[a].value)
            return false;
    }
    return true;
}

/* Matches the normalization whose normalizing node (Div or Mul) is n. */
static bool match_norm(const ox_graph *g, ox_node *n, bool rms, norm_match *m)
{
    memset(m, 0, sizeof *m);
    m->rms = rms;
    if (!ox_node_is_default_domain(n) || n->n_inputs != 2 || n->n_outputs != 1)
        return false;
    ox_value *d = NULL, *sd = NULL;
    m->nodes[m->nn++] = n;
    if (ox_node_is(n, "Div")) {
        d = n->inputs[0];
        sd = n->inputs[1];
    } else if (ox_node_is(n, "Mul")) {
        for (int k = 0; k < 2 && !sd; k++) {
            ox_node *r = ox__fuse_prod(g, n->inputs[k], "Reciprocal");
            ox_node *q = r ? NULL : ox__fuse_prod(g, n->inputs[k], "Div");
            if (r && r->n_inputs == 1)
                sd = r->inputs[0];
            else if (q && q->n_inputs == 2 && ox__fuse_scalar_is(q->inputs[0], 1, 0))
                sd = q->inputs[1];
            else
                continue;
            m->nodes[m->nn++] = r ? r : q;
            d = n->inputs[1 - k];
        }
    }
    if (!d || !sd)
        return false;
    int64_t ax[OX_MAX_RANK];
    int nax;
    if (variance_of(g, sd, m, ax, &nax) != d || !last_axes(ax, nax))
        return false;
    m->k = nax;
    ox_node *sub, *mean;
    sub = centered(g, d, ax, nax, &m->x, &mean);
    if (!rms) {
        if (!sub)
            return false;
        m->nodes[m->nn++] = sub;
        m->nodes[m->nn++] = mean;
    } else {
        if (sub)
            return false; /* a LayerNorm: fuse_layernorm's */
        m->x = d;
    }
    if (ox__fuse_const(m->x) || !ox__fuse_float(ox__pass_elem(m->x)))
        return false;
    /* The normalized dims must be known: the fused parameters are built
     * with that shape (the axes are negative, so nothing above checked x's
     * rank; a fuzzed model had x of rank 0). */
    const ox_type *xt = m->x->type;
    if (!xt || xt->kind != OX_TYPE_TENSOR || !xt->has_shape || xt->rank < m->k || !xt->dims)
        return false;
    for (int i = xt->rank - m->k; i < xt->rank; i++)
        if (xt->dims[i].value <= 0)
            return false;
    /* Scale, then bias (LayerNorm only), each optional. */
    m->y = n->outputs[0];
    ox_node *r = sole_reader(g, m->y);
    for (int step = 0; step < 2 && r; step++) {
        bool mul = ox_node_is(r, "Mul");
        if (!(step == 0 && mul) && !(!rms && ox_node_is(r, "Add")))
            break;
        int o = ox__fuse_other(r, m->y);
        const ox_tensor *t = o >= 0 ? ox__fuse_const(r->inputs[o]) : NULL;
        if (!t || !param_ok(t, m->x, m->k))
            break;
        if (mul) {
            m->scale = t;
            m->scale_v = r->inputs[o];
        } else {
            m->bias = t;
            m->bias_v = r->inputs[o];
        }
        m->nodes[m->nn++] = r;
        m->y = r->outputs[0];
        if (!mul)
            break;
        r = sole_reader(g, m->y);
    }
    return ox__fuse_internal(m->nodes, m->nn, m->y);
}

/* The parameter as LayerNormalization wants it: the constant itself when
 * its shape is the normalized shape, else a new initializer of that shape
 * (a scalar repeated, or leading 1s dropped); ones when absent. */
static ox_value *param_value(ox_graph *g, const norm_match *m, const ox_tensor *t, ox_value *v,
                             double fill, const char *hint)
{
    const ox_type *ty = m->x->type;
    int64_t dims[OX_MAX_RANK], n = 1;
    for (int i = 0; i < m->k; i++) {
        dims[i] = ty->dims[ty->rank - m->k + i].value;
        n *= dims[i];
    }
    if (t && t->rank == m->k && t->numel == n)
        return v;
    double *buf = malloc((size_t)n * sizeof *buf);
    if (!buf)
        return NULL;
    for (int64_t i = 0; i < n; i++)
        buf[i] = !t ? fill : ox_tensor_get_f64(t, t->numel == 1 ? 0 : i);
    ox_value *r = ox__fuse_new_init(g, hint, ox__pass_elem(m->x), m->k, dims, buf);
    free(buf);
    return r;
}

/* Replaces the match by op(x, scale[, bias]) with axis and epsilon. */
static bool emit_norm(ox_pass_ctx *c, ox_graph *g, norm_match *m, const char *op)
{
    ox_value *in[3];
    int nin = 2;
    in[0] = m->x;
    in[1] = param_value(g, m, m->scale, m->scale_v, 1.0, "ln_scale");
    if (!in[1])
        return false;
    if (m->bias) {
        in[2] = param_value(g, m, m->bias, m->bias_v, 0.0, "ln_bias");
        if (!in[2])
            return false;
        nin = 3;
    }
    ox_value *y = m->y;
    char site[256];
    ox__fuse_site_name(y->producer, op, site, sizeof site);
    ox__fuse_drop_all(c, m->nodes, m->nn);
    ox_node *f = ox__fuse_node_named(c, g, site, op, "", nin, in, y);
    return f && ox_node_set_attr_i(f, "axis", -m->k) &&
           ox_node_set_attr_f(f, "epsilon", (float)m->eps);
}

static void find_roialign(ox_graph *g, void *ctx)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (ox_node_is(g->nodes[i], "RoiAlign") && ox_node_is_default_domain(g->nodes[i]))
            *(bool *)ctx = true;
}

/* Whether the model means the same at opset 17 as at its opset 13..16:
 * from 14 to 17 ONNX changed operators only by new types, new ops and new
 * attributes whose defaults keep the old behaviour, except RoiAlign-16
 * (coordinate_transformation_mode now defaults to half_pixel). */
static bool liftable_to_17(ox_model *m)
{
    bool roi = false;
    ox_graph_visit(m->graph, find_roialign, &roi);
    return ox_model_opset(m, "") >= 13 && !roi;
}

/* simplified: fuse_rmsnorm_ort, the opt-in ONNX Runtime form below 23. */
static ox_status fuse_norms(ox_pass_ctx *c, ox_graph *g, ox_error *err, bool rms,
                            bool simplified)
{
    int64_t opset = ox_model_opset(c->m, "");
    int64_t need = rms ? 23 : 17;
    const char *op = rms ? "RMSNormalization" : "LayerNormalization";
    bool lift = false;
    if (simplified) {
        /* At 23 and above fuse_rmsnorm emits the standard op. */
        if (opset >= 23 || c->target != OX_TARGET_ORT)
            return OX_OK;
        op = "SimplifiedLayerNormalization";
    } else if (opset < need) {
        /* Under --target ort: LayerNormalization by raising opset 13..16 to
         * 17 (ONNX Runtime also takes it in the ONNX domain at any opset,
         * but ONNX's checker does not). The RMS form has no standard op
         * before 23 and 13 -> 23 is too far to raise safely; ONNX Runtime's
         * SimplifiedLayerNormalization lives in the ONNX domain, where
         * ONNX's checker rejects it (and ONNX Runtime rejects it in
         * com.microsoft), so it is the opt-in fuse_rmsnorm_ort. */
        if (c->target == OX_TARGET_ORT && !rms && liftable_to_17(c->m))
            lift = true;
        else
            op = NULL;
    }
    for (int i = 0; i < g->n_nodes && ox__pass_may(c); i++) {
        ox_node *n = g->nodes[i];
        norm_match m;
        if (ox__pass_gone(n) || !match_norm(g, n, rms, &m))
            continue;
        if (!op) {
            if (rms && c->target == OX_TARGET_ORT)
                ox__pass_note(c,
                              "fuse_rmsnorm not applied: needs opset 23 (model has %lld); "
                              "--passes +fuse_rmsnorm_ort emits ONNX Runtime's "
                              "SimplifiedLayerNormalization, which ONNX's checker rejects",
                              (long long)opset);
            else
                ox__pass_note(c, "%s not applied: needs opset %lld (model has %lld)",
                              rms ? "fuse_rmsnorm" : "fuse_layernorm", (long long)need,
                              (long long)opset);
            return OX_OK;
        }
        if (lift && ox_model_opset(c->m, "") < 17) {
            ox_model_set_opset(c->m, "", 17);
            if (c->m->ir_version < 8)
                c->m->ir_version = 8; /* what opset 17 needs */
        }
        if (!emit_norm(c, g, &m, op))
            return ox_errorf(err, OX_ENOMEM, "out of memory");
        ox__pass_did(c);
    }
    return OX_OK;
}

static ox_status pass_layernorm(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    return fuse_norms(c, g, err, false, false);
}

static ox_status pass_rmsnorm(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    return fuse_norms(c, g, err, true, false);
}

static ox_status pass_rmsnorm_ort(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    return fuse_norms(c, g, err, true, true);
}

/* ---- fp16 Casts around a normalization --------------------------------- */

/* Mixed-precision exports (torch autocast, fp16 conversion tools that keep
 * normalizations in float32) write Cast(x16 -> float) -> LayerNorm ->
 * Cast(-> float16). Once fuse_layernorm / fuse_rmsnorm made that middle
 * one node, the whole is one normalization in float16: LayerNormalization
 * (17), RMSNormalization (23) and SimplifiedLayerNormalization compute the
 * statistics in stash_type (float32 by default) whatever T is, so the only
 * change is that scale and bias are held and applied in float16 (about
 * one float16 ulp of the output's magnitude; docs/PASSES.md). A float16 Mul [+ Add] by
 * constants of the normalized shape right after the Cast back (exporters
 * that keep only the statistics in float32) becomes the scale [and bias]
 * when the float32 node had none of its own. */

static bool half_dt(ox_dtype dt)
{
    return dt == OX_DT_FLOAT16 || dt == OX_DT_BFLOAT16;
}

/* A constant float32 parameter whose values fit in float16. */
static bool fits_half(const ox_value *v)
{
    const ox_tensor *t = v ? ox__fuse_const(v) : NULL;
    if (!t || t->dtype != OX_DT_FLOAT || !ox_tensor_data(t))
        return false;
    for (int64_t i = 0; i < t->numel; i++)
        if (!(fabs(ox_tensor_get_f64(t, i)) <= 65504.0))
            return false;
    return true;
}

/* A constant all ones (or absent: the default scale). */
static bool all_ones(const ox_value *v)
{
    const ox_tensor *t = v ? ox__fuse_const(v) : NULL;
    if (!v)
        return true;
    if (!t || !ox_tensor_data(t))
        return false;
    for (int64_t i = 0; i < t->numel; i++)
        if (ox_tensor_get_f64(t, i) != 1.0)
            return false;
    return true;
}

/* Constant v converted to dtype dt as a new initializer. */
static ox_value *to_dtype(ox_graph *g, const ox_value *v, ox_dtype dt, const char *hint)
{
    const ox_tensor *t = ox__fuse_const(v);
    double *buf = ox__fuse_f64(t);
    if (!buf)
        return NULL;
    ox_value *r = ox__fuse_new_init(g, hint, dt, t->rank, t->dims, buf);
    free(buf);
    return r;
}

static bool is_norm_op(const ox_node *n)
{
    return ox_node_is(n, "LayerNormalization") || ox_node_is(n, "RMSNormalization") ||
           ox_node_is(n, "SimplifiedLayerNormalization");
}

static ox_status pass_norm_cast(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    for (int i = 0; i < g->n_nodes && ox__pass_may(c); i++) {
        ox_node *back = g->nodes[i];
        if (ox__pass_gone(back) || !ox_node_is(back, "Cast") ||
            !ox_node_is_default_domain(back) || back->n_inputs != 1 || back->n_outputs != 1)
            continue;
        ox_dtype dt = (ox_dtype)ox_node_attr_i(back, "to", 0);
        ox_value *v = back->inputs[0];
        ox_node *ln = half_dt(dt) ? ox__fuse_prod(g, v, NULL) : NULL;
        if (!ln || !is_norm_op(ln) || ln->n_inputs < 1 || !ox__fuse_only_out0(ln) ||
            !ox__fuse_single(v) || ox_node_attr_i(ln, "stash_type", 1) != 1 ||
            ox__pass_elem(v) != OX_DT_FLOAT)
            continue;
        bool rms = !ox_node_is(ln, "LayerNormalization");
        ox_value *x32 = ln->inputs[0];
        ox_node *fwd = ox__fuse_prod(g, x32, "Cast");
        ox_value *scale = ox__fuse_in(ln, 1), *bias = rms ? NULL : ox__fuse_in(ln, 2);
        if (!fwd || fwd->n_inputs != 1 || !fwd->inputs[0] || ox__pass_elem(fwd->inputs[0]) != dt ||
            ox_node_attr_i(fwd, "to", 0) != OX_DT_FLOAT || !scale || !fits_half(scale) ||
            (bias && !fits_half(bias)))
            continue;
        norm_match m;
        memset(&m, 0, sizeof m);
        m.x = fwd->inputs[0];
        int r = ox__fuse_rank(m.x);
        int64_t axis = ox_node_attr_i(ln, "axis", -1);
        m.k = r > 0 ? (int)(axis < 0 ? -axis : r - axis) : 0;
        m.nodes[m.nn++] = ln;
        m.nodes[m.nn++] = back;
        m.y = back->outputs[0];
        const ox_tensor *pt[2] = {NULL, NULL};
        ox_value *pv[2] = {NULL, NULL};
        /* A float16 scale [and bias] after the Cast back. */
        ox_node *rd = r > 0 && m.k >= 1 && m.k <= r && all_ones(scale) && !bias
                          ? sole_reader(g, m.y)
                          : NULL;
        for (int step = 0; step < 2 && rd; step++) {
            bool mul = ox_node_is(rd, "Mul");
            if (!(step == 0 && mul) && !(step == 1 && !rms && ox_node_is(rd, "Add")))
                break;
            int o = ox__fuse_other(rd, m.y);
            const ox_tensor *t = o >= 0 ? ox__fuse_const(rd->inputs[o]) : NULL;
            if (!t || !param_ok(t, m.x, m.k))
                break;
            pt[step] = t;
            pv[step] = rd->inputs[o];
            m.nodes[m.nn++] = rd;
            m.y = rd->outputs[0];
            rd = mul ? sole_reader(g, m.y) : NULL;
        }
        /* The Cast in stays when something else reads the float32 x. */
        if (ox__fuse_single(x32))
            m.nodes[m.nn++] = fwd;
        if (!ox__fuse_internal(m.nodes, m.nn, m.y))
            continue;
        ox_value *s16 = pt[0] ? param_value(g, &m, pt[0], pv[0], 1.0, "ln_scale")
                              : to_dtype(g, scale, dt, "ln_scale");
        ox_value *b16 = pt[1]  ? param_value(g, &m, pt[1], pv[1], 0.0, "ln_bias")
                        : bias ? to_dtype(g, bias, dt, "ln_bias")
                               : NULL;
        if (!s16 || ((pt[1] || bias) && !b16))
            return ox_errorf(err, OX_ENOMEM, "out of memory");
        ox_value *in[3] = {m.x, s16, b16};
        char site[256], op[64];
        ox__fuse_site_name(ln, ln->op_type, site, sizeof site);
        snprintf(op, sizeof op, "%s", ln->op_type);
        float eps = ox_node_attr_f(ln, "epsilon", 1e-5f);
        ox__fuse_drop_all(c, m.nodes, m.nn);
        ox_node *f = ox__fuse_node_named(c, g, site, op, "", b16 ? 3 : 2, in, m.y);
        if (!f || !ox_node_set_attr_i(f, "axis", axis) || !ox_node_set_attr_f(f, "epsilon", eps))
            return ox_errorf(err, OX_ENOMEM, "out of memory");
        ox_infer_forget_value(m.y);
        ox__pass_did(c);
    }
    return OX_OK;
}

/* ---- SkipLayerNormalization (com.microsoft) ---------------------------- */

/* a and b have the same known shape (equal types, or equal static dims). */
static bool same_shape(const ox_value *a, const ox_value *b)
{
    int64_t da[OX_MAX_RANK], db[OX_MAX_RANK];
    int ra = ox__pass_static_shape(a, da), rb = ox__pass_static_shape(b, db);
    if (ra >= 0 && ra == rb)
        return !memcmp(da, db, (size_t)ra * sizeof *da);
    if (!a->type || !b->type || !a->type->has_shape || !ox_type_equal(a->type, b->type))
        return false;
    for (int i = 0; i < a->type->rank; i++)
        if (a->type->dims[i].value < 0 && !a->type->dims[i].param)
            return false; /* two unknown dims need not be equal */
    return true;
}

/* A 1-D constant of h elements of dtype dt. */
static bool vec_h(const ox_value *v, int64_t h, ox_dtype dt)
{
    const ox_tensor *t = v ? ox__fuse_const(v) : NULL;
    return t && t->rank == 1 && t->dims[0] == h && t->dtype == dt;
}

static ox_status pass_skip_layernorm(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    for (int i = 0; i < g->n_nodes && ox__pass_may(c); i++) {
        ox_node *ln = g->nodes[i];
        if (!ox_node_is(ln, "LayerNormalization") || !ox_node_is_default_domain(ln) ||
            ln->n_inputs < 2 || !ox__fuse_only_out0(ln))
            continue;
        ox_node *add = ox__fuse_prod(g, ln->inputs[0], NULL);
        ox_value *s = ln->inputs[0];
        /* Also residual_sum's two-input Sum (a model it already wrote). */
        if (add && !ox_node_is(add, "Add") && !ox_node_is(add, "Sum"))
            add = NULL;
        int r = ox__fuse_rank(s);
        ox_dtype dt = ox__pass_elem(s);
        if (!add || add->n_inputs != 2 || add->n_outputs != 1 || (r != 2 && r != 3) ||
            !s->type || s->type->dims[r - 1].value <= 0 || ox__pass_read_by_subgraph(s) ||
            (dt != OX_DT_FLOAT && dt != OX_DT_FLOAT16))
            continue;
        int64_t h = s->type->dims[r - 1].value, axis = ox_node_attr_i(ln, "axis", -1);
        ox_value *gamma = ln->inputs[1], *beta = ox__fuse_in(ln, 2);
        ox_value *a = add->inputs[0], *b = add->inputs[1];
        if ((axis != -1 && axis != r - 1) || !vec_h(gamma, h, dt) || (beta && !vec_h(beta, h, dt)) ||
            !a || !b || ox__fuse_const(a) || ox__fuse_const(b) || !same_shape(a, s) ||
            !same_shape(b, s))
            continue;
        /* The bias of the projection feeding the residual (Add(MatMul,
         * bias), read only here) goes into the fused node's bias input. */
        ox_node *nodes[3] = {ln, add, NULL};
        int nn = 2;
        ox_value *bias = NULL;
        for (int k = 0; k < 2 && !bias; k++) {
            ox_value *v = add->inputs[k];
            ox_node *ba = ox__fuse_prod(g, v, "Add");
            if (!ba || ba->n_inputs != 2 || !ox__fuse_single(v))
                continue;
            for (int q = 0; q < 2 && !bias; q++)
                if (vec_h(ba->inputs[1 - q], h, dt) && ba->inputs[q] &&
                    !ox__fuse_const(ba->inputs[q]) && same_shape(ba->inputs[q], s)) {
                    bias = ba->inputs[1 - q];
                    if (k == 0)
                        a = ba->inputs[q];
                    else
                        b = ba->inputs[q];
                    nodes[nn++] = ba;
                }
        }
        /* The sum itself stays available (pre-LN blocks read it again) as
         * output 3, input_skip_bias_sum. */
        bool keep_sum = s->n_uses > 1 || s->is_output;
        ox_value *y = ln->outputs[0];
        ox_value *in[5] = {a, b, gamma, beta, bias};
        float eps = ox_node_attr_f(ln, "epsilon", 1e-5f);
        char site[256];
        ox__fuse_site_name(ln, "SkipLayerNormalization", site, sizeof site);
        ox__fuse_drop_all(c, nodes, nn);
        ox_value *outs[4] = {y, NULL, NULL, keep_sum ? s : NULL};
        char *name = ox_model_unique_node_name(c->m, site);
        ox_node *f = ox_node_new(g, "SkipLayerNormalization", "com.microsoft", name,
                                 bias ? 5 : beta ? 4 : 3, in, keep_sum ? 4 : 1, outs);
        free(name);
        if (!f || !ox_node_set_attr_f(f, "epsilon", eps))
            return ox_errorf(err, OX_ENOMEM, "out of memory");
        ox_infer_forget_value(y);
        if (keep_sum)
            ox_infer_forget_value(s);
        if (ox_model_opset(c->m, "com.microsoft") < 1)
            ox_model_set_opset(c->m, "com.microsoft", 1);
        ox__pass_did(c);
    }
    return OX_OK;
}

/* ---- keeping Add + LayerNormalization apart for ONNX Runtime ---------- */

/* ONNX Runtime's extended level (part of its default) fuses an Add whose
 * only reader is a LayerNormalization (after its own LayerNormFusion, also
 * a decomposed one) into com.microsoft SkipLayerNormalization, and its CPU
 * kernel (1.30) is slower than the pair it replaces (docs/PASSES.md). On
 * an export it rarely gets the chance, because the residual's shape is
 * unknown to it behind runtime Reshapes; once our folds and fusions made
 * every shape known, it takes every residual. Its matcher looks for op
 * type Add only, so the Add becomes Sum: the same for two inputs
 * (multidirectional broadcast from opset 8), run by the same elementwise
 * loop in ONNX Runtime and in our executor, standard ONNX either way. */

/* s is read exactly by the head of a decomposed LayerNorm: ReduceMean(s)
 * and Sub(s, that mean). */
static bool read_by_ln_head(const ox_graph *g, const ox_value *s)
{
    if (s->n_uses != 2 || s->is_output)
        return false;
    ox_node *rm = NULL, *sub = NULL;
    for (int k = 0; k < 2; k++) {
        ox_node *r = s->uses[k].node;
        if (r->graph != g || !ox_node_is_default_domain(r))
            return false;
        if (ox_node_is(r, "ReduceMean") && s->uses[k].input == 0)
            rm = r;
        else if (ox_node_is(r, "Sub") && s->uses[k].input == 0 && r->n_inputs == 2)
            sub = r;
    }
    return rm && sub && rm->n_outputs == 1 && sub->inputs[1] == rm->outputs[0];
}

/* The residual sum a normalization reads: LayerNormalization's input, or
 * the x of a decomposed LayerNorm whose mean node is n. */
static ox_value *normalized_input(const ox_graph *g, const ox_node *n)
{
    if (ox_node_is(n, "LayerNormalization") && n->n_inputs >= 1 && n->inputs[0] &&
        ox__fuse_single(n->inputs[0]))
        return n->inputs[0];
    if (ox_node_is(n, "ReduceMean") && n->n_inputs >= 1 && n->inputs[0] &&
        read_by_ln_head(g, n->inputs[0]))
        return n->inputs[0];
    return NULL;
}

static ox_status pass_residual_sum(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    if (ox_model_opset(c->m, "") < 8)
        return OX_OK;
    for (int i = 0; i < g->n_nodes && ox__pass_may(c); i++) {
        ox_node *ln = g->nodes[i];
        if (ox__pass_gone(ln) || !ox_node_is_default_domain(ln))
            continue;
        ox_value *s = normalized_input(g, ln);
        ox_node *add = s ? ox__fuse_prod(g, s, "Add") : NULL;
        ox_dtype dt = s ? ox__pass_elem(s) : OX_DT_UNDEFINED;
        if (!add || !ox_node_is_default_domain(add) || add->n_inputs != 2 ||
            add->n_outputs != 1 || ox__pass_read_by_subgraph(s) ||
            !add->inputs[0] || !add->inputs[1] || ox__fuse_const(add->inputs[0]) ||
            ox__fuse_const(add->inputs[1]) ||
            !(dt == OX_DT_FLOAT || dt == OX_DT_FLOAT16 || dt == OX_DT_DOUBLE ||
              (dt == OX_DT_BFLOAT16 && ox_model_opset(c->m, "") >= 13)))
            continue;
        ox_value *in[2] = {add->inputs[0], add->inputs[1]};
        char site[256];
        ox__fuse_site_name(add, "Sum", site, sizeof site);
        ox_node *one[1] = {add};
        ox__fuse_drop_all(c, one, 1);
        if (!ox__fuse_node_named(c, g, site, "Sum", "", 2, in, s))
            return ox_errorf(err, OX_ENOMEM, "out of memory");
        ox__pass_did(c);
    }
    return OX_OK;
}

const ox_pass ox__passes_fuse_norm[] = {
    {"fuse_layernorm",
     "ReduceMean/Sub/Pow|Mul/ReduceMean/Add eps/Sqrt/Div|Reciprocal [*scale] [+bias] -> "
     "LayerNormalization (opset 17; any opset under --target ort)",
     OX_PASS_FUSION, OX_TARGET_ONNX, OX_LEVEL_EXTENDED, true, pass_layernorm},
    /* Opt-in: SimplifiedLayerNormalization is an ONNX-domain op that only
     * ONNX Runtime knows, so the model no longer passes ONNX's checker. */
    {"fuse_rmsnorm_ort",
     "below opset 23, the RMSNorm pattern -> ONNX Runtime's SimplifiedLayerNormalization "
     "(ONNX domain; the model fails ONNX's checker; opt-in: --passes)",
     OX_PASS_FUSION, OX_TARGET_ORT, OX_LEVEL_ALL, true, pass_rmsnorm_ort, true},
    {"fuse_rmsnorm",
     "x / Sqrt(ReduceMean(x^2) + eps) [*scale] (T5/Llama) -> RMSNormalization (opset 23)",
     OX_PASS_FUSION, OX_TARGET_ONNX, OX_LEVEL_EXTENDED, true, pass_rmsnorm},
    {"fuse_norm_cast",
     "Cast(x16 -> float) + LayerNormalization | RMSNormalization | "
     "SimplifiedLayerNormalization + Cast(-> float16) [*scale16] [+bias16] -> the same "
     "normalization in float16",
     OX_PASS_FUSION, OX_TARGET_ONNX, OX_LEVEL_EXTENDED, true, pass_norm_cast},
    {"fuse_embed_layernorm",
     "Gather(word, ids) + Gather(position, 0..S-1) [+ Gather(segment, seg)] + "
     "LayerNormalization -> com.microsoft EmbedLayerNormalization",
     OX_PASS_FUSION, OX_TARGET_ORT, OX_LEVEL_ALL, true, ox__fuse_embed_layernorm},
    /* Opt-in: ONNX Runtime 1.30's CPU SkipLayerNormalization kernel
     * measures about 3x slower than LayerNormalization + Add on the same
     * data (docs/PASSES.md), so by default the pair stays as it is. */
    {"fuse_skip_layernorm",
     "residual Add [+ projection bias] + LayerNormalization -> com.microsoft "
     "SkipLayerNormalization (opt-in: --passes)",
     OX_PASS_FUSION, OX_TARGET_ORT, OX_LEVEL_ALL, true, pass_skip_layernorm, true},
    /* After fuse_skip_layernorm, which takes the pairs when asked to. */
    {"residual_sum",
     "a residual Add read only by a LayerNormalization (or a decomposed one) -> Sum, which ONNX "
     "Runtime does not re-fuse into its slower CPU SkipLayerNormalization",
     OX_PASS_CONVERSION, OX_TARGET_ONNX, OX_LEVEL_EXTENDED, true, pass_residual_sum},
    {0},
};
