/* quantize_dynamic: the constant float32 weights of MatMul and Gemm (and
 * Conv, as an option) become symmetric int8, per output channel unless
 * asked otherwise, and the activation feeding them is quantized at run
 * time (uint8, DynamicQuantizeLinear), as ONNX Runtime's dynamic
 * quantization does. Three output forms (docs/PASSES.md):
 *   integer: DynamicQuantizeLinear -> MatMulInteger/ConvInteger -> Cast ->
 *            Mul(activation scale * weight scales) [-> Add bias]
 *   ort:     com.microsoft DynamicQuantizeMatMul(A, Wq, scales[, bias])
 *            (MatMul/Gemm under --target ort, integer format)
 *   qdq:     DequantizeLinear(Wq) and DequantizeLinear(DynamicQuantize-
 *            Linear(A)) feeding the unchanged float op.
 * Each quantized weight is reported with its scales and its error. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnxscope/infer.h"
#include "onnxscope/quantize.h"
#include "passes/fuse_util.h"
#include "passes/quant_math.h"

void ox_quant_opts_default(ox_quant_opts *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->format = OX_QUANT_INTEGER;
    o->min_elems = OX_QUANT_MIN_ELEMS_DEFAULT;
}

bool ox_quant_format_parse(const char *s, ox_quant_format *out)
{
    if (s && !strcmp(s, "integer")) {
        *out = OX_QUANT_INTEGER;
        return true;
    }
    if (s && !strcmp(s, "qdq")) {
        *out = OX_QUANT_QDQ;
        return true;
    }
    return false;
}

const char *ox_quant_format_name(ox_quant_format f)
{
    return f == OX_QUANT_QDQ ? "qdq" : "integer";
}

void ox__quant_entries_free(ox_quant_entry *v, int n)
{
    for (int i = 0; i < n; i++) {
        free(v[i].node);
        free(v[i].op);
        free(v[i].weight);
    }
    free(v);
}

enum { K_MATMUL, K_GEMM, K_CONV };

/* One product to quantize. */
typedef struct site {
    ox_node *n;
    int kind;
    ox_value *a, *wv;
    const ox_tensor *w;
    bool trans_b;       /* Gemm transB: w is [N, K] */
    int64_t C;          /* output channels (scales when per channel) */
} site;

/* The quantized weight: q laid out as the form needs it, its scales. */
typedef struct qw {
    ox_tensor *q;       /* int8 */
    float *scales;      /* C or 1 */
    int64_t n_scales;
    int axis;           /* channel axis of q (QDQ's DequantizeLinear) */
    ox_q_stats st;
} qw;

/* A float tensor's values in an aligned copy (malloc'd; NULL on OOM):
 * initializers view the mapped file at any byte offset. */
static float *f32_copy(const ox_tensor *t)
{
    float *v = malloc((size_t)(t->numel ? t->numel : 1) * sizeof *v);
    if (v && t->numel)
        memcpy(v, ox_tensor_data(t), (size_t)t->numel * sizeof *v);
    return v;
}

static bool f32(const ox_value *v)
{
    return ox__pass_elem(v) == OX_DT_FLOAT;
}

/* Whether node n is a product this pass takes; fills s. */
static bool match(ox_pass_ctx *c, ox_node *n, site *s)
{
    const ox_quant_opts *o = c->quant;
    memset(s, 0, sizeof *s);
    s->n = n;
    if (!ox_node_is_default_domain(n) || n->n_outputs != 1 || !n->outputs[0] ||
        n->n_inputs < 2 || !n->inputs[0] || !n->inputs[1])
        return false;
    if (ox_node_is(n, "MatMul") && n->n_inputs == 2)
        s->kind = K_MATMUL;
    else if (ox_node_is(n, "Gemm"))
        s->kind = K_GEMM;
    else if (ox_node_is(n, "Conv") && o->conv)
        s->kind = K_CONV;
    else
        return false;
    s->a = n->inputs[0];
    s->wv = n->inputs[1];
    s->w = ox__fuse_const(s->wv);
    if (!s->w || s->w->dtype != OX_DT_FLOAT || !ox_tensor_data(s->w) || !f32(s->a) ||
        s->w->numel < (o->min_elems > 0 ? o->min_elems : 1))
        return false;
    if (s->kind == K_CONV) {
        if (s->w->rank < 3)
            return false;
        s->C = s->w->dims[0];
        return true;
    }
    if (s->w->rank != 2)
        return false;
    s->trans_b = s->kind == K_GEMM && ox_node_attr_i(n, "transB", 0);
    s->C = s->trans_b ? s->w->dims[0] : s->w->dims[1];
    return true;
}

/* Quantizes s's weight. per-channel layout: MatMul/Gemm [K,N] axis 1,
 * Gemm transB [N,K] axis 0, Conv [M,...] axis 0. With kn the result is
 * laid out [K, N] (a transB weight is transposed) for MatMulInteger and
 * DynamicQuantizeMatMul. */
static bool quantize_weight(const site *s, bool per_tensor, bool kn, qw *out)
{
    const ox_tensor *w = s->w;
    float *W = f32_copy(w);
    if (!W)
        return false;
    int64_t outer, C, inner;
    if (per_tensor) {
        outer = 1, C = 1, inner = w->numel;
    } else if (s->kind == K_CONV || s->trans_b) {
        outer = 1, C = w->dims[0], inner = w->numel / (w->dims[0] ? w->dims[0] : 1);
    } else {
        outer = w->dims[0], C = w->dims[1], inner = 1;
    }
    memset(out, 0, sizeof *out);
    out->scales = malloc((size_t)(C > 0 ? C : 1) * sizeof(float));
    out->q = ox_tensor_new(OX_DT_INT8, w->rank, w->dims);
    if (!out->scales || !out->q) {
        free(out->scales);
        ox_tensor_free(out->q);
        free(W);
        return false;
    }
    out->n_scales = C;
    out->axis = per_tensor ? -1 : (s->kind == K_CONV || s->trans_b) ? 0 : 1;
    int8_t *q = ox_tensor_mutable_data(out->q);
    ox__q_quantize_sym(W, outer, C, inner, q, out->scales, &out->st);
    free(W);
    if (kn && s->trans_b) {
        /* [N, K] -> [K, N] */
        int64_t N = w->dims[0], K = w->dims[1], d[2] = {K, N};
        ox_tensor *t = ox_tensor_new(OX_DT_INT8, 2, d);
        if (!t) {
            free(out->scales);
            ox_tensor_free(out->q);
            return false;
        }
        int8_t *tq = ox_tensor_mutable_data(t);
        for (int64_t i = 0; i < N; i++)
            for (int64_t k = 0; k < K; k++)
                tq[k * N + i] = q[i * K + k];
        ox_tensor_free(out->q);
        out->q = t;
        out->axis = 1;
    }
    return true;
}

/* A float initializer of the given shape holding v (n values). */
static ox_value *f32_init(ox_graph *g, const char *hint, int rank, const int64_t *dims,
                          const void *v, int64_t n)
{
    ox_tensor *t = ox_tensor_new(OX_DT_FLOAT, rank, dims);
    if (!t)
        return NULL;
    if (n)
        memcpy(ox_tensor_mutable_data(t), v, (size_t)n * sizeof(float));
    return ox__pass_new_init(g, hint, t);
}

/* Scales as an initializer: a scalar when there is one, else shaped
 * [C, 1, ...] with `trail` ones (Conv's broadcast against [N, C, H, W]) or
 * [C]. mul multiplies them (Gemm's alpha). */
static ox_value *scale_init(ox_graph *g, const char *hint, const qw *w, int trail, float mul)
{
    int64_t d[OX_MAX_RANK] = {0};
    int r = 0;
    if (w->n_scales > 1) {
        d[r++] = w->n_scales;
        for (int i = 0; i < trail && r < OX_MAX_RANK; i++)
            d[r++] = 1;
    }
    float *v = malloc((size_t)w->n_scales * sizeof *v);
    if (!v)
        return NULL;
    for (int64_t i = 0; i < w->n_scales; i++)
        v[i] = w->scales[i] * mul;
    ox_value *out = f32_init(g, hint, r, d, v, w->n_scales);
    free(v);
    return out;
}

/* A new node of g with one output named from hint (a fresh value, or y
 * when given). */
static ox_node *add_node(ox_pass_ctx *c, ox_graph *g, const char *op, const char *domain,
                         int n_in, ox_value *const *in, ox_value *y, const char *hint)
{
    if (!y)
        y = ox_graph_new_value(g, hint);
    if (!y)
        return NULL;
    return ox__fuse_node_named(c, g, hint, op, domain, n_in, in, y);
}

/* The DynamicQuantizeLinear of a in g (shared with the other products
 * reading a, as ONNX Runtime's quantizer shares it), made when missing.
 * out: y, y_scale, y_zero_point. */
static bool dql_of(ox_pass_ctx *c, ox_graph *g, ox_value *a, ox_value **out)
{
    for (int i = 0; i < a->n_uses; i++) {
        ox_node *u = a->uses[i].node;
        if (u && u->graph == g && a->uses[i].input == 0 && !ox__pass_gone(u) &&
            ox_node_is(u, "DynamicQuantizeLinear") && u->n_outputs == 3 && u->outputs[0] &&
            u->outputs[1] && u->outputs[2]) {
            for (int k = 0; k < 3; k++)
                out[k] = u->outputs[k];
            return true;
        }
    }
    char base[256];
    snprintf(base, sizeof base, "%.200s_quant", a->name ? a->name : "x");
    static const char *const sfx[3] = {"", "_scale", "_zero_point"};
    for (int k = 0; k < 3; k++) {
        char nm[300];
        snprintf(nm, sizeof nm, "%s%s", base, sfx[k]);
        out[k] = ox_graph_new_value(g, nm);
        if (!out[k])
            return false;
    }
    char *name = ox_model_unique_node_name(c->m, base);
    ox_node *n = ox_node_new(g, "DynamicQuantizeLinear", "", name, 1, &a, 3, out);
    free(name);
    return n != NULL;
}

/* DequantizeLinear of a's dynamic quantization (QDQ form), shared. */
static ox_value *dq_act_of(ox_pass_ctx *c, ox_graph *g, ox_value *a)
{
    ox_value *q[3];
    if (!dql_of(c, g, a, q))
        return NULL;
    for (int i = 0; i < q[0]->n_uses; i++) {
        ox_node *u = q[0]->uses[i].node;
        if (u && u->graph == g && !ox__pass_gone(u) && ox_node_is(u, "DequantizeLinear") &&
            u->n_inputs == 3 && u->inputs[0] == q[0] && u->inputs[1] == q[1] &&
            u->inputs[2] == q[2] && u->n_outputs == 1 && u->outputs[0])
            return u->outputs[0];
    }
    char hint[256];
    snprintf(hint, sizeof hint, "%.200s_dequant", a->name ? a->name : "x");
    ox_node *n = add_node(c, g, "DequantizeLinear", "", 3, q, NULL, hint);
    return n ? n->outputs[0] : NULL;
}

static bool push_entry(ox_pass_ctx *c, const site *s, const qw *w, const char *form,
                       int node_id)
{
    ox_pass_report *r = c->rep;
    if (!r)
        return true;
    ox_quant_entry *t = realloc(r->quant, ((size_t)r->n_quant + 1) * sizeof *t);
    if (!t)
        return false;
    r->quant = t;
    ox_quant_entry *e = &t[r->n_quant++];
    memset(e, 0, sizeof *e);
    e->node_id = node_id;
    e->node = ox_strdup(s->n->name ? s->n->name : "");
    e->op = ox_strdup(s->n->op_type);
    e->weight = ox_strdup(s->wv->name ? s->wv->name : "");
    e->form = form;
    e->elems = s->w->numel;
    e->channels = w->n_scales;
    e->scale_min = w->st.scale_min;
    e->scale_max = w->st.scale_max;
    e->zero_point = 0;
    e->max_abs_err = w->st.max_abs_err;
    e->snr_db = ox__q_snr_db(&w->st);
    e->bytes_before = (int64_t)s->w->nbytes;
    e->bytes_after = s->w->numel + w->n_scales * 4;
    return e->node && e->op && e->weight;
}

/* Gemm's C for the integer forms: the value to add after the product
 * (NULL: none), made beta * C when beta is not 1. False when it cannot
 * be expressed (a non-constant C scaled by beta). */
static bool gemm_bias(ox_graph *g, const site *s, ox_value **bias)
{
    *bias = NULL;
    ox_value *cv = ox__fuse_in(s->n, 2);
    float beta = ox_node_attr_f(s->n, "beta", 1.0f);
    if (!cv || beta == 0.0f)
        return true;
    if (beta == 1.0f) {
        *bias = cv;
        return f32(cv);
    }
    const ox_tensor *ct = ox__fuse_const(cv);
    if (!ct || ct->dtype != OX_DT_FLOAT || !ox_tensor_data(ct))
        return false;
    float *v = malloc((size_t)(ct->numel ? ct->numel : 1) * sizeof *v);
    if (!v)
        return false;
    memcpy(v, ox_tensor_data(ct), (size_t)ct->numel * sizeof *v);
    for (int64_t i = 0; i < ct->numel; i++)
        v[i] *= beta;
    *bias = f32_init(g, "gemm_bias", ct->rank, ct->dims, v, ct->numel);
    free(v);
    return *bias != NULL;
}

static void free_qw(qw *w)
{
    free(w->scales);
    ox_tensor_free(w->q);
    w->scales = NULL;
    w->q = NULL;
}

/* QDQ form: the float op stays and reads dequantized operands. */
static int rewrite_qdq(ox_pass_ctx *c, ox_graph *g, const site *s, bool per_axis_ok)
{
    qw w;
    bool per_tensor = c->quant->per_tensor || !per_axis_ok;
    if (!quantize_weight(s, per_tensor, false, &w))
        return -1;
    char hint[256];
    snprintf(hint, sizeof hint, "%.200s_quantized", s->wv->name ? s->wv->name : "w");
    ox_value *wq = ox__pass_new_init(g, hint, w.q);
    w.q = NULL;
    snprintf(hint, sizeof hint, "%.200s_scale", s->wv->name ? s->wv->name : "w");
    ox_value *ws = wq ? scale_init(g, hint, &w, 0, 1.0f) : NULL;
    int64_t zd = w.n_scales;
    ox_tensor *zt = ox_tensor_new(OX_DT_INT8, w.n_scales > 1 ? 1 : 0, &zd);
    if (zt)
        memset(ox_tensor_mutable_data(zt), 0, (size_t)w.n_scales);
    snprintf(hint, sizeof hint, "%.200s_zero_point", s->wv->name ? s->wv->name : "w");
    ox_value *wz = ws ? ox__pass_new_init(g, hint, zt) : (ox_tensor_free(zt), NULL);
    ox_value *adq = wz ? dq_act_of(c, g, s->a) : NULL;
    ox_value *in[3] = {wq, ws, wz};
    snprintf(hint, sizeof hint, "%.200s_dequant", s->wv->name ? s->wv->name : "w");
    ox_node *dq = adq ? add_node(c, g, "DequantizeLinear", "", 3, in, NULL, hint) : NULL;
    if (!dq || (w.axis >= 0 && !ox_node_set_attr_i(dq, "axis", w.axis))) {
        free_qw(&w);
        return -1;
    }
    ox_value *old = s->wv;
    ox__pass_set_input(c, s->n, 0, adq);
    ox__pass_set_input(c, s->n, 1, dq->outputs[0]);
    /* The report reads the float weight: before it may be freed. */
    bool ok = push_entry(c, s, &w, "QDQ", s->n->id);
    ox__fuse_drop_dead(c, old);
    free_qw(&w);
    return ok ? 1 : -1;
}

/* Integer forms of MatMul/Gemm: MatMulInteger + Cast + Mul [+ Add], or
 * DynamicQuantizeMatMul under --target ort. Returns 1 done, 0 not
 * expressible (left alone), -1 out of memory. */
static int rewrite_matmul(ox_pass_ctx *c, ox_graph *g, const site *s, bool ort)
{
    bool gemm = s->kind == K_GEMM;
    if (gemm && (ox_node_attr_i(s->n, "transA", 0) || ox__fuse_rank(s->a) != 2))
        return 0;
    float alpha = gemm ? ox_node_attr_f(s->n, "alpha", 1.0f) : 1.0f;
    ox_value *bias = NULL, *dq_bias = NULL;
    if (gemm) {
        ox_value *cv = ox__fuse_in(s->n, 2);
        const ox_tensor *ct = cv ? ox__fuse_const(cv) : NULL;
        float beta = ox_node_attr_f(s->n, "beta", 1.0f);
        /* A row bias goes into DynamicQuantizeMatMul's bias input. */
        if (ort && ct && beta != 0.0f && ct->dtype == OX_DT_FLOAT && ct->numel == s->C &&
            ox_tensor_data(ct) && (ct->rank == 1 || (ct->rank == 2 && ct->dims[0] == 1))) {
            float *v = malloc((size_t)s->C * sizeof *v);
            if (!v)
                return -1;
            memcpy(v, ox_tensor_data(ct), (size_t)s->C * sizeof *v);
            for (int64_t i = 0; i < s->C; i++)
                v[i] *= beta;
            int64_t d = s->C;
            dq_bias = f32_init(g, "bias", 1, &d, v, s->C);
            free(v);
            if (!dq_bias)
                return -1;
        } else if (!gemm_bias(g, s, &bias)) {
            return 0;
        }
    }
    qw w;
    if (!quantize_weight(s, c->quant->per_tensor, true, &w))
        return -1;
    char hint[256];
    const char *wn = s->wv->name ? s->wv->name : "w";
    snprintf(hint, sizeof hint, "%.200s_quantized", wn);
    ox_value *wq = ox__pass_new_init(g, hint, w.q);
    w.q = NULL;
    snprintf(hint, sizeof hint, "%.200s_scale", wn);
    ox_value *ws = wq ? scale_init(g, hint, &w, 0, alpha) : NULL;
    if (!ws) {
        free_qw(&w);
        return -1;
    }
    ox_value *y = s->n->outputs[0], *a = s->a, *old = s->wv;
    ox_value *cin = ox__fuse_in(s->n, 2);
    /* DynamicQuantizeMatMul takes the bias Add that follows a MatMul (a
     * 1-D constant of N floats), as ONNX Runtime's fusion does. */
    ox_node *badd = NULL;
    if (ort && s->kind == K_MATMUL && ox__fuse_single(y)) {
        ox_node *u = y->uses[0].node;
        int k = y->uses[0].input;
        const ox_tensor *bt = NULL;
        if (u && u->graph == g && !ox__pass_gone(u) && ox_node_is(u, "Add") &&
            ox_node_is_default_domain(u) && u->n_inputs == 2 && u->n_outputs == 1 &&
            u->outputs[0] && (k == 0 || k == 1))
            bt = ox__fuse_const(u->inputs[1 - k]);
        if (bt && bt->dtype == OX_DT_FLOAT && bt->rank == 1 && bt->numel == s->C &&
            ox_tensor_data(bt)) {
            badd = u;
            dq_bias = u->inputs[1 - k];
        }
    }
    char site_name[256];
    snprintf(site_name, sizeof site_name, "%.240s", s->n->name ? s->n->name : "");
    ox__pass_drop(c, s->n);
    if (badd) {
        ox_value *yo = badd->outputs[0];
        ox__pass_drop(c, badd);
        ox__pass_drop_value(c, y);
        y = yo;
    }
    ox_infer_forget_value(y);
    ox_node *prod = NULL;
    const char *form;
    ox_value *tmp = bias ? NULL : y;
    const char *sn = site_name[0] ? site_name : "matmul";
    char h_cast[256], h_scale[256], h_deq[256], h_bias[256];
    snprintf(h_cast, sizeof h_cast, "%.200s_cast", sn);
    snprintf(h_scale, sizeof h_scale, "%.200s_scale", sn);
    snprintf(h_deq, sizeof h_deq, "%.200s_dequant", sn);
    snprintf(h_bias, sizeof h_bias, "%.200s_bias", sn);
    snprintf(hint, sizeof hint, "%.200s_quant", sn);
    if (ort) {
        form = "DynamicQuantizeMatMul";
        ox_value *in[5] = {a, wq, ws, NULL, dq_bias};
        prod = add_node(c, g, "DynamicQuantizeMatMul", "com.microsoft", dq_bias ? 5 : 3, in,
                        tmp, hint);
        if (prod && ox_model_opset(c->m, "com.microsoft") < 1)
            ox_model_set_opset(c->m, "com.microsoft", 1);
    } else {
        form = "MatMulInteger";
        ox_value *q[3];
        if (!dql_of(c, g, a, q)) {
            free_qw(&w);
            return -1;
        }
        ox_value *in[3] = {q[0], wq, q[2]};
        prod = add_node(c, g, "MatMulInteger", "", 3, in, NULL, hint);
        ox_node *cast = prod ? add_node(c, g, "Cast", "", 1, prod->outputs, NULL, h_cast) : NULL;
        if (cast)
            ox_node_set_attr_i(cast, "to", OX_DT_FLOAT);
        ox_value *sin[2] = {q[1], ws};
        ox_node *sc = cast ? add_node(c, g, "Mul", "", 2, sin, NULL, h_scale) : NULL;
        ox_value *min[2] = {cast ? cast->outputs[0] : NULL, sc ? sc->outputs[0] : NULL};
        ox_node *mul = sc ? add_node(c, g, "Mul", "", 2, min, tmp, h_deq) : NULL;
        if (!mul)
            prod = NULL;
        else
            tmp = mul->outputs[0];
    }
    if (prod && bias) {
        if (ort)
            tmp = prod->outputs[0];
        ox_value *ain[2] = {tmp, bias};
        if (!add_node(c, g, "Add", "", 2, ain, y, h_bias))
            prod = NULL;
    }
    if (!prod) {
        free_qw(&w);
        return -1;
    }
    bool ok = push_entry(c, s, &w, form, prod->id);
    ox__fuse_drop_dead(c, old);
    if (cin && cin != bias)
        ox__fuse_drop_dead(c, cin);
    free_qw(&w);
    return ok ? 1 : -1;
}

/* ConvInteger + Cast + Mul [+ Add bias]. */
static int rewrite_conv(ox_pass_ctx *c, ox_graph *g, const site *s)
{
    ox_value *bv = ox__fuse_in(s->n, 2);
    const ox_tensor *bt = bv ? ox__fuse_const(bv) : NULL;
    if (bv && (!bt || bt->dtype != OX_DT_FLOAT || bt->numel != s->C || !ox_tensor_data(bt)))
        return 0;
    qw w;
    if (!quantize_weight(s, c->quant->per_tensor, false, &w))
        return -1;
    int trail = s->w->rank - 2;
    char hint[256];
    const char *wn = s->wv->name ? s->wv->name : "w";
    snprintf(hint, sizeof hint, "%.200s_quantized", wn);
    ox_value *wq = ox__pass_new_init(g, hint, w.q);
    w.q = NULL;
    snprintf(hint, sizeof hint, "%.200s_scale", wn);
    ox_value *ws = wq ? scale_init(g, hint, &w, trail, 1.0f) : NULL;
    ox_value *bias = NULL;
    if (ws && bt) {
        int64_t d[OX_MAX_RANK] = {s->C};
        for (int i = 0; i < trail; i++)
            d[1 + i] = 1;
        bias = f32_init(g, "conv_bias", 1 + trail, d, ox_tensor_data(bt), s->C);
    }
    ox_value *q[3];
    if (!ws || (bt && !bias) || !dql_of(c, g, s->a, q)) {
        free_qw(&w);
        return -1;
    }
    ox_value *y = s->n->outputs[0], *old = s->wv;
    const char *sn = s->n->name && *s->n->name ? s->n->name : "conv";
    char h_cast[256], h_scale[256], h_deq[256], h_bias[256];
    snprintf(h_cast, sizeof h_cast, "%.200s_cast", sn);
    snprintf(h_scale, sizeof h_scale, "%.200s_scale", sn);
    snprintf(h_deq, sizeof h_deq, "%.200s_dequant", sn);
    snprintf(h_bias, sizeof h_bias, "%.200s_bias", sn);
    snprintf(hint, sizeof hint, "%.200s_quant", sn);
    ox_value *in[3] = {q[0], wq, q[2]};
    ox_node *prod = add_node(c, g, "ConvInteger", "", 3, in, NULL, hint);
    /* The geometry attributes carry over unchanged. */
    for (int i = 0; prod && i < s->n->n_attrs; i++)
        if (!ox_node_set_attr(prod, &s->n->attrs[i]))
            prod = NULL;
    ox__pass_drop(c, s->n);
    ox_infer_forget_value(y);
    ox_node *cast = prod ? add_node(c, g, "Cast", "", 1, prod->outputs, NULL, h_cast) : NULL;
    if (cast)
        ox_node_set_attr_i(cast, "to", OX_DT_FLOAT);
    ox_value *sin[2] = {q[1], ws};
    ox_node *sc = cast ? add_node(c, g, "Mul", "", 2, sin, NULL, h_scale) : NULL;
    ox_value *min[2] = {cast ? cast->outputs[0] : NULL, sc ? sc->outputs[0] : NULL};
    ox_node *mul = sc ? add_node(c, g, "Mul", "", 2, min, bias ? NULL : y, h_deq) : NULL;
    ox_value *ain[2] = {mul ? mul->outputs[0] : NULL, bias};
    bool ok = mul && (!bias || add_node(c, g, "Add", "", 2, ain, y, h_bias));
    if (ok) {
        ok = push_entry(c, s, &w, "ConvInteger", prod->id);
        ox__fuse_drop_dead(c, old);
        if (bv)
            ox__fuse_drop_dead(c, bv);
    }
    free_qw(&w);
    return ok ? 1 : -1;
}

static ox_status pass_quantize_dynamic(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    ox_quant_opts dflt;
    if (!c->quant) {
        ox_quant_opts_default(&dflt);
        c->quant = &dflt;
    }
    int64_t opset = ox_model_opset(c->m, "");
    bool qdq = c->quant->format == OX_QUANT_QDQ;
    bool ort = !qdq && c->target == OX_TARGET_ORT;
    ox_status st = OX_OK;
    for (int i = 0; i < g->n_nodes && ox__pass_may(c) && !st; i++) {
        ox_node *n = g->nodes[i];
        site s;
        if (ox__pass_gone(n) || !match(c, n, &s))
            continue;
        if (opset < 11) {
            /* DynamicQuantizeLinear is opset 11. */
            ox__pass_note(c, "quantize_dynamic not applied: needs opset 11 (model has %lld)",
                          (long long)opset);
            break;
        }
        int r;
        if (qdq)
            r = rewrite_qdq(c, g, &s, opset >= 13);   /* per-axis DequantizeLinear: 13 */
        else if (s.kind == K_CONV)
            r = rewrite_conv(c, g, &s);
        else
            r = rewrite_matmul(c, g, &s, ort);
        if (r < 0)
            st = ox_errorf(err, OX_ENOMEM, "out of memory");
        else if (r > 0)
            ox__pass_did(c);
    }
    if (c->quant == &dflt)
        c->quant = NULL;
    return st;
}

const ox_pass ox__passes_quant[] = {
    {"quantize_dynamic",
     "constant MatMul/Gemm (and Conv) weights to int8 per channel, activations quantized at "
     "run time (opt-in)",
     OX_PASS_PRECISION, OX_TARGET_ONNX, OX_LEVEL_BASIC, true, pass_quantize_dynamic, true},
    {0},
};
