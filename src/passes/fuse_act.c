/* Activation fusions: Relu/Clip merges, the decomposed activations that
 * exporters write (x*sigmoid(x), x*relu6(x+3)/6, clip(x/6+0.5,0,1)) back to
 * Swish/HardSwish/HardSigmoid, and under --target ort the com.microsoft
 * FusedConv/FusedGemm that carry a Conv/Gemm/MatMul's activation. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes/fuse_util.h"

static bool near(double a, double b)
{
    return fabs(a - b) <= 1e-6 * (fabs(b) > 1 ? fabs(b) : 1);
}

/* Drops the matched nodes (all in g; each output but y read only inside
 * the pattern), then makes op(in...) produce y. Constants the dropped nodes
 * read go when nothing else reads them; the intermediate values are pruned
 * at the flush. */
static ox_node *replace(ox_pass_ctx *c, ox_graph *g, ox_node **nodes, int nn, const char *op,
                        const char *domain, int n_in, ox_value *const *in, ox_value *y)
{
    ox_value *consts[16];
    int nc = 0;
    for (int k = 0; k < nn; k++) {
        ox_node *n = nodes[k];
        for (int q = 0; q < n->n_inputs && nc < 16; q++)
            if (n->inputs[q] && ox__fuse_const(n->inputs[q]))
                consts[nc++] = n->inputs[q];
    }
    for (int k = 0; k < nn; k++)
        ox__pass_drop(c, nodes[k]);   /* their outputs but y are pruned */
    ox_node *n = ox__fuse_node(c, g, op, domain, n_in, in, y);
    for (int k = 0; k < nc; k++) {
        bool seen = false; /* the same constant may be read twice */
        for (int j = 0; j < k; j++)
            seen |= consts[j] == consts[k];
        if (!seen)
            ox__fuse_drop_dead(c, consts[k]);
    }
    return n;
}

/* Add(u, b) in g with a constant scalar b (either order); sets u. */
static ox_node *add_const(const ox_graph *g, const ox_value *v, double *b, ox_value **u)
{
    ox_node *a = ox__fuse_prod(g, v, "Add");
    if (!a || a->n_inputs != 2)
        return NULL;
    for (int k = 0; k < 2; k++)
        if (ox__fuse_scalar(a->inputs[1 - k], b) && a->inputs[k] && !ox__fuse_const(a->inputs[k])) {
            *u = a->inputs[k];
            return a;
        }
    return NULL;
}

/* Mul(u, k) (either order) or Div(u, k) in g with a constant scalar: sets
 * u and the factor f (1/k for Div). */
static ox_node *scale_const(const ox_graph *g, const ox_value *v, double *f, ox_value **u)
{
    ox_node *m = ox__fuse_prod(g, v, "Mul");
    bool div = false;
    if (!m) {
        m = ox__fuse_prod(g, v, "Div");
        div = m != NULL;
    }
    if (!m || m->n_inputs != 2)
        return NULL;
    for (int k = 0; k < (div ? 1 : 2); k++) {
        double s;
        if (!ox__fuse_scalar(m->inputs[1 - k], &s) || !m->inputs[k] || ox__fuse_const(m->inputs[k]))
            continue;
        if (div && s == 0)
            return NULL;
        *f = div ? 1.0 / s : s;
        *u = m->inputs[k];
        return m;
    }
    return NULL;
}

/* Clip of v's producer in g with constant bounds; sets them and its input. */
static ox_node *clip_of(const ox_graph *g, const ox_value *v, double *lo, double *hi,
                        ox_value **u)
{
    ox_node *cl = ox__fuse_prod(g, v, "Clip");
    if (!cl || !cl->inputs[0] || cl->n_outputs != 1 || !ox__fuse_clip_bounds(cl, lo, hi))
        return NULL;
    *u = cl->inputs[0];
    return cl;
}

/* The scalar a constant bound / activation parameter takes in dtype dt. */
static ox_value *scalar_init(ox_graph *g, const char *hint, ox_dtype dt, double v)
{
    return ox__fuse_new_init(g, hint, dt, 0, NULL, &v);
}

/* Sets a Clip's lower bound (attribute before opset 11, input after). */
static bool clip_set_min(ox_pass_ctx *c, ox_node *cl, double lo, ox_dtype dt)
{
    if (ox_model_opset(c->m, "") < 11)
        return ox_node_set_attr_f(cl, "min", (float)lo) != NULL;
    ox_value *old = ox__fuse_in(cl, 1);
    ox_value *v = scalar_init(cl->graph, "clip_min", dt, lo);
    if (!v)
        return false;
    ox__pass_set_input(c, cl, 1, v);
    ox__fuse_drop_dead(c, old);
    return true;
}

static ox_status pass_relu_clip(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    for (int i = 0; i < g->n_nodes && ox__pass_may(c); i++) {
        ox_node *n = g->nodes[i];
        if (ox__pass_gone(n))
            continue;
        double lo, hi;
        ox_value *x;
        if (ox_node_is(n, "Clip") && n->n_inputs >= 1 && n->inputs[0] && n->n_outputs == 1) {
            /* Clip(Relu(x)) = Clip(x, max(lo, 0), hi). */
            ox_node *r = ox__fuse_prod(g, n->inputs[0], "Relu");
            ox_dtype dt = ox__pass_elem(n->inputs[0]);
            if (!r || !r->inputs[0] || !ox__fuse_single(n->inputs[0]) || !ox__fuse_float(dt) ||
                !ox__fuse_clip_bounds(n, &lo, &hi))
                continue;
            ox_value *mid = n->inputs[0];
            if (lo < 0 && !clip_set_min(c, n, 0.0, dt))
                return ox_errorf(err, OX_ENOMEM, "out of memory");
            ox__pass_set_input(c, n, 0, r->inputs[0]);
            ox__pass_drop(c, r);
            ox__pass_drop_value(c, mid);
        } else if (ox_node_is(n, "Relu") && n->n_inputs == 1 && n->n_outputs == 1) {
            /* Relu(Clip(x, lo, hi)) = Clip(x, max(lo, 0), hi) when hi >= 0. */
            ox_node *cl = clip_of(g, n->inputs[0], &lo, &hi, &x);
            ox_dtype dt = ox__pass_elem(n->inputs[0]);
            if (!cl || !ox__fuse_single(n->inputs[0]) || !(hi >= 0) || !ox__fuse_float(dt))
                continue;
            if (lo < 0 && !clip_set_min(c, cl, 0.0, dt))
                return ox_errorf(err, OX_ENOMEM, "out of memory");
            ox__fuse_retarget(c, cl, n);
        } else {
            continue;
        }
        ox__pass_did(c);
        i--; /* look at node i again: indexes do not move */
    }
    return OX_OK;
}

/* ---- HardSigmoid ------------------------------------------------------------ */

/* Matches v as HardSigmoid of x decomposed: Clip(Add(Mul/Div(x, f), b), 0, 1)
 * or Mul/Div(Clip(Add(x, b), 0, h), 1/h). Sets alpha, beta, x and the
 * nodes (up to 3; the root first). Intermediates must be single-use. */
static int hsig_chain(const ox_graph *g, ox_value *v, double *alpha, double *beta, ox_value **x,
                      ox_node **nodes)
{
    double lo, hi, f, b;
    ox_value *u, *w;
    ox_node *cl = clip_of(g, v, &lo, &hi, &u);
    if (cl && lo == 0 && hi == 1) {
        ox_node *ad = add_const(g, u, &b, &w);
        ox_node *sc = ad && ox__fuse_single(u) ? scale_const(g, w, &f, x) : NULL;
        if (!sc || !ox__fuse_single(w))
            return 0;
        *alpha = f;
        *beta = b;
        nodes[0] = cl;
        nodes[1] = ad;
        nodes[2] = sc;
        return 3;
    }
    ox_node *sc = scale_const(g, v, &f, &u);
    cl = sc ? clip_of(g, u, &lo, &hi, &w) : NULL;
    if (!cl || lo != 0 || !(hi > 0) || !isfinite(hi) || !near(f * hi, 1) || !ox__fuse_single(u))
        return 0;
    ox_node *ad = add_const(g, w, &b, x);
    if (!ad || !ox__fuse_single(w))
        return 0;
    *alpha = f;
    *beta = b * f;
    nodes[0] = sc;
    nodes[1] = cl;
    nodes[2] = ad;
    return 3;
}

static ox_status pass_hardsigmoid(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    if (ox_model_opset(c->m, "") < 6)
        return OX_OK;
    for (int i = 0; i < g->n_nodes && ox__pass_may(c); i++) {
        ox_node *n = g->nodes[i], *nodes[3];
        if (ox__pass_gone(n))
            continue;
        double alpha, beta;
        ox_value *x;
        if (n->n_outputs != 1 || !n->outputs[0] || !ox_node_is_default_domain(n))
            continue;
        int nn = hsig_chain(g, n->outputs[0], &alpha, &beta, &x, nodes);
        if (!nn || !ox__fuse_float(ox__pass_elem(x)))
            continue;
        ox_node *h = replace(c, g, nodes, nn, "HardSigmoid", "", 1, &x, n->outputs[0]);
        if (!h || !ox_node_set_attr_f(h, "alpha", (float)alpha) ||
            !ox_node_set_attr_f(h, "beta", (float)beta))
            return ox_errorf(err, OX_ENOMEM, "out of memory");
        ox__pass_did(c);
        i--; /* look at node i again: indexes do not move */
    }
    return OX_OK;
}

/* ---- HardSwish ----------------------------------------------------------------- */

/* v = HardSigmoid(x; 1/6, 1/2), as the op or decomposed (nodes appended at
 * *nn). */
static bool hsig_std(const ox_graph *g, ox_value *v, ox_value *x, ox_node **nodes, int *nn)
{
    double a, b;
    ox_value *u;
    ox_node *h = ox__fuse_prod(g, v, "HardSigmoid");
    if (h && h->inputs[0] == x && near(ox_node_attr_f(h, "alpha", 0.2f), 1.0 / 6) &&
        near(ox_node_attr_f(h, "beta", 0.5f), 0.5)) {
        nodes[(*nn)++] = h;
        return true;
    }
    int k = hsig_chain(g, v, &a, &b, &u, nodes + *nn);
    if (!k || u != x || !near(a, 1.0 / 6) || !near(b, 0.5))
        return false;
    *nn += k;
    return true;
}

/* v = Clip(Add(x, 3), 0, 6) with single-use intermediates (nodes appended). */
static bool relu6_p3(const ox_graph *g, ox_value *v, ox_value *x, ox_node **nodes, int *nn)
{
    double lo, hi, b;
    ox_value *u, *w;
    ox_node *cl = clip_of(g, v, &lo, &hi, &u);
    ox_node *ad = cl && lo == 0 && hi == 6 && ox__fuse_single(u) ? add_const(g, u, &b, &w) : NULL;
    if (!ad || b != 3 || w != x)
        return false;
    nodes[(*nn)++] = cl;
    nodes[(*nn)++] = ad;
    return true;
}

static ox_status pass_hardswish(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    if (ox_model_opset(c->m, "") < 14)
        return OX_OK;
    for (int i = 0; i < g->n_nodes && ox__pass_may(c); i++) {
        ox_node *n = g->nodes[i], *nodes[6];
        if (ox__pass_gone(n))
            continue;
        int nn = 0;
        ox_value *x = NULL;
        if (n->n_outputs != 1 || !n->outputs[0] || !ox_node_is_default_domain(n))
            continue;
        nodes[nn++] = n;
        if (ox_node_is(n, "Mul") && n->n_inputs == 2) {
            /* x * HardSigmoid(x), the HardSigmoid in any form. */
            for (int k = 0; k < 2 && !x; k++) {
                nn = 1;
                if (ox__fuse_single(n->inputs[1 - k]) &&
                    hsig_std(g, n->inputs[1 - k], n->inputs[k], nodes, &nn))
                    x = n->inputs[k];
            }
        }
        if (!x) {
            /* (x * Clip(x + 3, 0, 6)) / 6, or * (1/6). */
            double f;
            ox_value *u;
            nn = 1;
            ox_node *sc = scale_const(g, n->outputs[0], &f, &u);
            ox_node *mm = sc && near(f, 1.0 / 6) && ox__fuse_single(u) ? ox__fuse_prod(g, u, "Mul")
                                                                       : NULL;
            for (int k = 0; mm && mm->n_inputs == 2 && k < 2 && !x; k++) {
                nn = 1;
                nodes[nn++] = mm;
                if (ox__fuse_single(mm->inputs[1 - k]) &&
                    relu6_p3(g, mm->inputs[1 - k], mm->inputs[k], nodes, &nn))
                    x = mm->inputs[k];
            }
        }
        if (!x || !ox__fuse_float(ox__pass_elem(x)))
            continue;
        if (!replace(c, g, nodes, nn, "HardSwish", "", 1, &x, n->outputs[0]))
            return ox_errorf(err, OX_ENOMEM, "out of memory");
        ox__pass_did(c);
        i--; /* look at node i again: indexes do not move */
    }
    return OX_OK;
}

/* ---- x * sigmoid(alpha x) ----------------------------------------------------- */

/* Mul(x, Sigmoid(x)) or Mul(x, Sigmoid(Mul(x, alpha))), either order. */
static ox_value *silu_match(const ox_graph *g, ox_node *n, double *alpha, ox_node **nodes,
                            int *nn)
{
    if (!ox_node_is(n, "Mul") || n->n_inputs != 2 || n->n_outputs != 1)
        return NULL;
    for (int k = 0; k < 2; k++) {
        ox_value *x = n->inputs[k], *s = n->inputs[1 - k], *u;
        ox_node *sg = ox__fuse_prod(g, s, "Sigmoid");
        if (!sg || !sg->inputs[0] || !ox__fuse_single(s) || x == s)
            continue;
        *nn = 0;
        nodes[(*nn)++] = n;
        nodes[(*nn)++] = sg;
        *alpha = 1;
        if (sg->inputs[0] == x)
            return x;
        ox_node *m = ox__fuse_prod(g, sg->inputs[0], "Mul");
        double f;
        if (m && ox__fuse_single(sg->inputs[0]) && scale_const(g, sg->inputs[0], &f, &u) == m &&
            u == x) {
            *alpha = f;
            nodes[(*nn)++] = m;
            return x;
        }
    }
    return NULL;
}

static ox_status silu(ox_pass_ctx *c, ox_graph *g, ox_error *err, bool ort)
{
    for (int i = 0; i < g->n_nodes && ox__pass_may(c); i++) {
        ox_node *n = g->nodes[i], *nodes[3];
        if (ox__pass_gone(n))
            continue;
        int nn = 0;
        double alpha;
        if (!ox_node_is_default_domain(n))
            continue;
        ox_value *x = silu_match(g, n, &alpha, nodes, &nn);
        if (!x || !ox__fuse_float(ox__pass_elem(x)))
            continue;
        ox_node *s = replace(c, g, nodes, nn, ort ? "QuickGelu" : "Swish",
                             ort ? "com.microsoft" : "", 1, &x, n->outputs[0]);
        if (!s || !ox_node_set_attr_f(s, "alpha", (float)alpha))
            return ox_errorf(err, OX_ENOMEM, "out of memory");
        if (ort && ox_model_opset(c->m, "com.microsoft") < 1)
            ox_model_set_opset(c->m, "com.microsoft", 1);
        ox__pass_did(c);
        i--; /* look at node i again: indexes do not move */
    }
    return OX_OK;
}

static ox_status pass_silu(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    /* Swish is standard from opset 24 only; before, the ort form below. */
    return ox_model_opset(c->m, "") >= 24 ? silu(c, g, err, false) : OX_OK;
}

static ox_status pass_silu_ort(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    return ox_model_opset(c->m, "") < 24 ? silu(c, g, err, true) : OX_OK;
}

/* ---- Conv / Gemm / MatMul + activation (com.microsoft) ------------------------ */

/* The activation of node a as ONNX Runtime's fused kernels name it, with its
 * parameters (count returned in *np). gemm: FusedGemm, whose CPU kernel
 * takes no Clip. */
static const char *act_of(const ox_node *a, float *p, int *np, bool gemm)
{
    *np = 0;
    if (!ox_node_is_default_domain(a) || a->n_outputs != 1 || a->n_inputs < 1)
        return NULL;
    /* Static names: the activation node is freed before they are used. */
    static const char *plain[] = {"Relu", "Tanh", "Sigmoid"};
    const char *op = a->op_type;
    for (int k = 0; k < 3; k++)
        if (!strcmp(op, plain[k]))
            return plain[k];
    if (!strcmp(op, "LeakyRelu")) {
        p[(*np)++] = ox_node_attr_f(a, "alpha", 0.01f);
        return "LeakyRelu";
    }
    if (!strcmp(op, "HardSigmoid")) {
        p[(*np)++] = ox_node_attr_f(a, "alpha", 0.2f);
        p[(*np)++] = ox_node_attr_f(a, "beta", 0.5f);
        return "HardSigmoid";
    }
    double lo, hi;
    if (!gemm && !strcmp(op, "Clip") && ox__fuse_clip_bounds(a, &lo, &hi)) {
        /* MLAS clamps with floats; infinite bounds are float's limits. */
        p[(*np)++] = isinf(lo) ? -3.402823466e38f : (float)lo;
        p[(*np)++] = isinf(hi) ? 3.402823466e38f : (float)hi;
        return "Clip";
    }
    return NULL;
}

static ox_status pass_conv_act(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    for (int i = 0; i < g->n_nodes && ox__pass_may(c); i++) {
        ox_node *a = g->nodes[i];
        if (ox__pass_gone(a))
            continue;
        float p[2];
        int np;
        const char *act = act_of(a, p, &np, false);
        ox_node *cv = act ? ox__fuse_prod(g, a->inputs[0], "Conv") : NULL;
        if (!cv || cv->n_outputs != 1 || cv->n_inputs < 2 || !ox__fuse_single(a->inputs[0]) ||
            ox__pass_elem(cv->inputs[0]) != OX_DT_FLOAT)
            continue;
        ox_value *in[3] = {cv->inputs[0], cv->inputs[1], ox__fuse_in(cv, 2)};
        ox_node *nodes[2] = {a, cv};
        ox_attr *attrs = cv->attrs;
        int na = cv->n_attrs;
        cv->attrs = NULL; /* moved onto the new node */
        cv->n_attrs = 0;
        ox_node *f = replace(c, g, nodes, 2, "FusedConv", "com.microsoft", in[2] ? 3 : 2, in,
                             a->outputs[0]);
        for (int k = 0; k < na; k++) {
            if (f)
                ox_node_set_attr(f, &attrs[k]);
            ox_attr_free_contents(&attrs[k]);
        }
        free(attrs);
        ox_attr pa = {.name = "activation_params", .type = OX_ATTR_FLOATS, .n = np, .floats = p};
        if (!f || !ox_node_set_attr_s(f, "activation", act) || (np && !ox_node_set_attr(f, &pa)))
            return ox_errorf(err, OX_ENOMEM, "out of memory");
        if (ox_model_opset(c->m, "com.microsoft") < 1)
            ox_model_set_opset(c->m, "com.microsoft", 1);
        ox__pass_did(c);
        i--; /* look at node i again: indexes do not move */
    }
    return OX_OK;
}

/* Conv + Add(z) + activation -> FusedConv with Z (a residual block's
 * end): z must have the Conv output's exact shape (FusedConv adds it
 * without broadcasting). */
static ox_status pass_conv_add_act(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    for (int i = 0; i < g->n_nodes && ox__pass_may(c); i++) {
        ox_node *a = g->nodes[i];
        if (ox__pass_gone(a))
            continue;
        float p[2];
        int np;
        const char *act = act_of(a, p, &np, false);
        ox_node *add = act ? ox__fuse_prod(g, a->inputs[0], "Add") : NULL;
        if (!add || add->n_inputs != 2 || add->n_outputs != 1 || !ox__fuse_single(a->inputs[0]))
            continue;
        for (int k = 0; k < 2; k++) {
            ox_value *cy = add->inputs[k], *z = add->inputs[1 - k];
            ox_node *cv = ox__fuse_prod(g, cy, "Conv");
            int64_t dc[OX_MAX_RANK], dz[OX_MAX_RANK];
            int rc = ox__pass_static_shape(cy, dc), rz = ox__pass_static_shape(z, dz);
            bool same = cy->type && z->type && ox_type_equal(cy->type, z->type) &&
                        cy->type->has_shape;
            if (!same && rc >= 0 && rc == rz)
                same = !memcmp(dc, dz, (size_t)rc * sizeof *dc);
            if (!cv || cv->n_outputs != 1 || cv->n_inputs < 2 || !ox__fuse_single(cy) || !same ||
                cy == z || ox__pass_elem(cy) != OX_DT_FLOAT || ox__pass_elem(z) != OX_DT_FLOAT)
                continue;
            ox_value *in[4] = {cv->inputs[0], cv->inputs[1], ox__fuse_in(cv, 2), z};
            ox_node *nodes[3] = {a, add, cv};
            ox_attr *attrs = cv->attrs;
            int na = cv->n_attrs;
            cv->attrs = NULL;
            cv->n_attrs = 0;
            ox_node *f = replace(c, g, nodes, 3, "FusedConv", "com.microsoft", 4, in,
                                 a->outputs[0]);
            for (int q = 0; q < na; q++) {
                if (f)
                    ox_node_set_attr(f, &attrs[q]);
                ox_attr_free_contents(&attrs[q]);
            }
            free(attrs);
            ox_attr pa = {.name = "activation_params", .type = OX_ATTR_FLOATS, .n = np, .floats = p};
            if (!f || !ox_node_set_attr_s(f, "activation", act) || (np && !ox_node_set_attr(f, &pa)))
                return ox_errorf(err, OX_ENOMEM, "out of memory");
            if (ox_model_opset(c->m, "com.microsoft") < 1)
                ox_model_set_opset(c->m, "com.microsoft", 1);
            ox__pass_did(c);
            i--; /* look at node i again: indexes do not move */
            break;
        }
    }
    return OX_OK;
}

static ox_status pass_gemm_act(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    for (int i = 0; i < g->n_nodes && ox__pass_may(c); i++) {
        ox_node *a = g->nodes[i];
        if (ox__pass_gone(a))
            continue;
        float p[2];
        int np;
        const char *act = act_of(a, p, &np, true);
        ox_node *gm = act ? ox__fuse_prod(g, a->inputs[0], "Gemm") : NULL;
        if (act && !gm) {
            /* A 2-D MatMul is a Gemm without C. */
            gm = ox__fuse_prod(g, a->inputs[0], "MatMul");
            if (gm && (gm->n_inputs != 2 || ox__fuse_rank(gm->inputs[0]) != 2 ||
                       ox__fuse_rank(gm->inputs[1]) != 2))
                gm = NULL;
        }
        if (!gm || gm->n_outputs != 1 || gm->n_inputs < 2 || !ox__fuse_single(a->inputs[0]) ||
            ox__pass_elem(gm->inputs[0]) != OX_DT_FLOAT)
            continue;
        ox_value *in[3] = {gm->inputs[0], gm->inputs[1], ox__fuse_in(gm, 2)};
        ox_node *nodes[2] = {a, gm};
        ox_attr *attrs = gm->attrs;
        int na = gm->n_attrs;
        gm->attrs = NULL;
        gm->n_attrs = 0;
        ox_node *f = replace(c, g, nodes, 2, "FusedGemm", "com.microsoft", in[2] ? 3 : 2, in,
                             a->outputs[0]);
        for (int k = 0; k < na; k++) {
            if (f)
                ox_node_set_attr(f, &attrs[k]);
            ox_attr_free_contents(&attrs[k]);
        }
        free(attrs);
        if (!f || !ox_node_set_attr_s(f, "activation", act) ||
            (np > 0 && !ox_node_set_attr_f(f, "activation_alpha", p[0])) ||
            (np > 1 && !ox_node_set_attr_f(f, "activation_beta", p[1])))
            return ox_errorf(err, OX_ENOMEM, "out of memory");
        if (ox_model_opset(c->m, "com.microsoft") < 1)
            ox_model_set_opset(c->m, "com.microsoft", 1);
        ox__pass_did(c);
        i--; /* look at node i again: indexes do not move */
    }
    return OX_OK;
}

const ox_pass ox__passes_fuse_act[] = {
    {"fuse_relu_clip", "merge Relu into an adjacent Clip (the lower bound becomes max(min, 0))",
     OX_PASS_FUSION, OX_TARGET_ONNX, OX_LEVEL_EXTENDED, true, pass_relu_clip},
    {"fuse_hardsigmoid", "clip(x*a+b, 0, 1) or relu6(x+3)/6 -> HardSigmoid (opset 6)",
     OX_PASS_FUSION, OX_TARGET_ONNX, OX_LEVEL_EXTENDED, true, pass_hardsigmoid},
    {"fuse_hardswish", "x*HardSigmoid(x), x*relu6(x+3)/6 -> HardSwish (opset 14)",
     OX_PASS_FUSION, OX_TARGET_ONNX, OX_LEVEL_EXTENDED, true, pass_hardswish},
    {"fuse_silu", "x*Sigmoid(a*x) -> Swish (standard from opset 24)", OX_PASS_FUSION,
     OX_TARGET_ONNX, OX_LEVEL_EXTENDED, true, pass_silu},
    {"fuse_silu_ort", "x*Sigmoid(a*x) -> com.microsoft QuickGelu(alpha=a) below opset 24",
     OX_PASS_FUSION, OX_TARGET_ORT, OX_LEVEL_ALL, true, pass_silu_ort},
    {"fuse_conv_act", "Conv + Relu/Tanh/Sigmoid/LeakyRelu/Clip/HardSigmoid -> FusedConv",
     OX_PASS_FUSION, OX_TARGET_ORT, OX_LEVEL_ALL, true, pass_conv_act},
    {"fuse_conv_add_act", "Conv + Add(same-shape z) + activation -> FusedConv with Z",
     OX_PASS_FUSION, OX_TARGET_ORT, OX_LEVEL_ALL, true, pass_conv_add_act},
    {"fuse_gemm_act", "Gemm/2-D MatMul + Relu/Tanh/Sigmoid/LeakyRelu/HardSigmoid -> FusedGemm",
     OX_PASS_FUSION, OX_TARGET_ORT, OX_LEVEL_ALL, true, pass_gemm_act},
    {0},
};
