/* GELU fusions: the decomposed GELU exporters write, in its erf form
 *     0.5 * x * (1 + Erf(x / sqrt2))          (or x * (1/sqrt2))
 * and its tanh form
 *     0.5 * x * (1 + Tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
 * (x^3 as Pow(x, 3) or Mul(x, Mul(x, x))), the three factors multiplied in
 * any order and nesting, each binary op with its operands either way.
 * Emitted as ONNX Gelu (opset 20; approximate="tanh" for the tanh form) or,
 * under --target ort, com.microsoft Gelu / FastGelu; then, under ort, the
 * bias Add before it goes into BiasGelu / FastGelu's bias input. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes/fuse_util.h"

#define SQRT2 1.4142135623730951
#define SQRT_2_PI 0.7978845608028654
#define TOL 1e-5

typedef struct gelu_match {
    ox_node *nodes[12];
    int nn;
    ox_value *x, *y;
    bool tanh_form;
} gelu_match;

static ox_node *sole_reader(const ox_graph *g, const ox_value *v, const char *op)
{
    if (!ox__fuse_single(v))
        return NULL;
    ox_node *r = v->uses[0].node;
    return r->graph == g && ox_node_is_default_domain(r) && ox_node_is(r, op) &&
                   r->n_inputs == 2 && r->n_outputs == 1
               ? r
               : NULL;
}

/* Mul(u, k) either order with k a scalar constant equal to want; sets u. */
static ox_node *mul_by(const ox_graph *g, const ox_value *v, double want, ox_value **u)
{
    ox_node *m = ox__fuse_prod(g, v, "Mul");
    for (int k = 0; m && m->n_inputs == 2 && k < 2; k++)
        if (ox__fuse_scalar_is(m->inputs[1 - k], want, TOL) && m->inputs[k] &&
            !ox__fuse_const(m->inputs[k])) {
            *u = m->inputs[k];
            return m;
        }
    return NULL;
}

/* From e, the output of the 1 + f(...) Add, up to the product with x and
 * 0.5 in any arrangement: (e*x)*0.5, (e*0.5)*x, e*(x*0.5). */
static bool outer(const ox_graph *g, ox_value *e, gelu_match *m)
{
    ox_node *m1 = sole_reader(g, e, "Mul");
    if (!m1)
        return false;
    ox_value *o = m1->inputs[ox__fuse_other(m1, e)], *u;
    m->nodes[m->nn++] = m1;
    if (o == m->x || ox__fuse_scalar_is(o, 0.5, TOL)) {
        ox_node *m2 = sole_reader(g, m1->outputs[0], "Mul");
        int k = m2 ? ox__fuse_other(m2, m1->outputs[0]) : -1;
        if (k < 0)
            return false;
        ox_value *p = m2->inputs[k];
        if (o == m->x ? !ox__fuse_scalar_is(p, 0.5, TOL) : p != m->x)
            return false;
        m->nodes[m->nn++] = m2;
        m->y = m2->outputs[0];
        return true;
    }
    ox_node *h = mul_by(g, o, 0.5, &u);
    if (!h || u != m->x)
        return false;
    m->nodes[m->nn++] = h;
    m->y = m1->outputs[0];
    return true;
}

/* 1 + t: the Add reading t (either order) with the constant 1. */
static ox_value *plus_one(const ox_graph *g, const ox_value *t, gelu_match *m)
{
    ox_node *a = sole_reader(g, t, "Add");
    int k = a ? ox__fuse_other(a, t) : -1;
    if (k < 0 || !ox__fuse_scalar_is(a->inputs[k], 1, 0))
        return NULL;
    m->nodes[m->nn++] = a;
    return a->outputs[0];
}

/* The erf form around Erf node n. */
static bool match_erf(const ox_graph *g, ox_node *n, gelu_match *m)
{
    if (!ox_node_is(n, "Erf") || n->n_inputs != 1 || n->n_outputs != 1)
        return false;
    ox_node *d = ox__fuse_prod(g, n->inputs[0], "Div");
    if (d && d->n_inputs == 2 && ox__fuse_scalar_is(d->inputs[1], SQRT2, TOL))
        m->x = d->inputs[0];
    else if (!(d = mul_by(g, n->inputs[0], 1 / SQRT2, &m->x)))
        return false;
    m->nodes[m->nn++] = n;
    m->nodes[m->nn++] = d;
    ox_value *e = plus_one(g, n->outputs[0], m);
    return e && outer(g, e, m);
}

/* x^3: Pow(x, 3), Mul(x, Mul(x, x)) or Mul(Mul(x, x), x). */
static bool cube(const ox_graph *g, const ox_value *v, const ox_value *x, gelu_match *m)
{
    ox_node *p = ox__fuse_prod(g, v, NULL);
    if (!p || p->n_inputs != 2 || p->n_outputs != 1)
        return false;
    if (ox_node_is(p, "Pow")) {
        if (p->inputs[0] != x || !ox__fuse_scalar_is(p->inputs[1], 3, 0))
            return false;
        m->nodes[m->nn++] = p;
        return true;
    }
    if (!ox_node_is(p, "Mul"))
        return false;
    for (int k = 0; k < 2; k++) {
        ox_node *sq = p->inputs[k] == x ? ox__fuse_prod(g, p->inputs[1 - k], "Mul") : NULL;
        if (sq && sq->n_inputs == 2 && sq->inputs[0] == x && sq->inputs[1] == x) {
            m->nodes[m->nn++] = p;
            m->nodes[m->nn++] = sq;
            return true;
        }
    }
    return false;
}

/* The tanh form around Tanh node n. */
static bool match_tanh(const ox_graph *g, ox_node *n, gelu_match *m)
{
    if (!ox_node_is(n, "Tanh") || n->n_inputs != 1 || n->n_outputs != 1)
        return false;
    ox_value *s, *q;
    ox_node *ms = mul_by(g, n->inputs[0], SQRT_2_PI, &s);
    ox_node *ad = ms ? ox__fuse_prod(g, s, "Add") : NULL;
    if (!ad || ad->n_inputs != 2)
        return false;
    m->nodes[m->nn++] = n;
    m->nodes[m->nn++] = ms;
    m->nodes[m->nn++] = ad;
    for (int k = 0; k < 2 && !m->x; k++) {
        int nn = m->nn;
        ox_node *mq = mul_by(g, ad->inputs[1 - k], 0.044715, &q);
        if (mq && ad->inputs[k] && cube(g, q, ad->inputs[k], m)) {
            m->x = ad->inputs[k];
            m->nodes[m->nn++] = mq;
        } else {
            m->nn = nn;
        }
    }
    if (!m->x)
        return false;
    ox_value *e = plus_one(g, n->outputs[0], m);
    m->tanh_form = true;
    return e && outer(g, e, m);
}

static bool match_gelu(const ox_graph *g, ox_node *n, gelu_match *m)
{
    memset(m, 0, sizeof *m);
    if (!ox_node_is_default_domain(n))
        return false;
    if (!match_erf(g, n, m)) {
        memset(m, 0, sizeof *m);
        if (!match_tanh(g, n, m))
            return false;
    }
    return !ox__fuse_const(m->x) && ox__fuse_float(ox__pass_elem(m->x)) &&
           ox__fuse_internal(m->nodes, m->nn, m->y);
}

static ox_status pass_gelu(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    int64_t opset = ox_model_opset(c->m, "");
    bool ort = c->target == OX_TARGET_ORT;
    for (int i = 0; i < g->n_nodes && ox__pass_may(c); i++) {
        ox_node *n = g->nodes[i];
        gelu_match m;
        if (ox__pass_gone(n) || !match_gelu(g, n, &m))
            continue;
        if (!ort && opset < 20) {
            ox__pass_note(c, "fuse_gelu not applied: needs opset 20 (model has %lld)",
                          (long long)opset);
            return OX_OK;
        }
        ox_value *x = m.x, *y = m.y;
        const char *op = ort && m.tanh_form ? "FastGelu" : "Gelu";
        char site[256];
        ox__fuse_site_name(y->producer, op, site, sizeof site);
        ox__fuse_drop_all(c, m.nodes, m.nn);
        ox_node *f = ox__fuse_node_named(c, g, site, op, ort ? "com.microsoft" : "", 1, &x, y);
        if (!f || (!ort && m.tanh_form && !ox_node_set_attr_s(f, "approximate", "tanh")))
            return ox_errorf(err, OX_ENOMEM, "out of memory");
        if (ort && ox_model_opset(c->m, "com.microsoft") < 1)
            ox_model_set_opset(c->m, "com.microsoft", 1);
        ox__pass_did(c);
    }
    return OX_OK;
}

/* com.microsoft Gelu(Add(a, bias)) -> BiasGelu(a, bias); FastGelu(Add(a,
 * bias)) -> FastGelu(a, bias): bias a 1-D constant over a's last axis. */
static ox_status pass_bias_gelu(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    for (int i = 0; i < g->n_nodes && ox__pass_may(c); i++) {
        ox_node *n = g->nodes[i];
        if (ox__pass_gone(n) || strcmp(n->domain, "com.microsoft") || n->n_inputs != 1 ||
            n->n_outputs != 1 || (strcmp(n->op_type, "Gelu") && strcmp(n->op_type, "FastGelu")))
            continue;
        ox_node *ad = ox__fuse_prod(g, n->inputs[0], "Add");
        if (!ad || ad->n_inputs != 2 || ad->n_outputs != 1 || !ox__fuse_single(n->inputs[0]))
            continue;
        for (int k = 0; k < 2; k++) {
            ox_value *a = ad->inputs[k], *b = ad->inputs[1 - k];
            const ox_tensor *t = ox__fuse_const(b);
            int r = ox__fuse_rank(a);
            if (!t || !a || ox__fuse_const(a) || t->rank != 1 || r < 1 || !a->type ||
                a->type->dims[r - 1].value != t->dims[0] || t->dtype != ox__pass_elem(a))
                continue;
            bool fast = !strcmp(n->op_type, "FastGelu");
            ox_value *y = n->outputs[0], *in[2] = {a, b};
            ox_node *nodes[2] = {n, ad};
            const char *op = fast ? "FastGelu" : "BiasGelu";
            char site[256];
            ox__fuse_site_name(n, op, site, sizeof site);
            ox__fuse_drop_all(c, nodes, 2);
            if (!ox__fuse_node_named(c, g, site, op, "com.microsoft", 2, in, y))
                return ox_errorf(err, OX_ENOMEM, "out of memory");
            ox__pass_did(c);
            break;
        }
    }
    return OX_OK;
}

const ox_pass ox__passes_fuse_gelu[] = {
    {"fuse_gelu",
     "0.5*x*(1+Erf(x/sqrt2)) and the tanh form -> Gelu (opset 20); com.microsoft Gelu / "
     "FastGelu under --target ort",
     OX_PASS_FUSION, OX_TARGET_ONNX, OX_LEVEL_EXTENDED, true, pass_gelu},
    {"fuse_bias_gelu", "Add(x, bias) + com.microsoft Gelu/FastGelu -> BiasGelu / FastGelu(x, bias)",
     OX_PASS_FUSION, OX_TARGET_ORT, OX_LEVEL_ALL, true, pass_bias_gelu},
    {0},
};
