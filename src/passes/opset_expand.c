/* Expansions: operators the target opset lacks, written with older
 * primitives (LayerNormalization before 17, Gelu before 20,
 * RMSNormalization before 23, Mish before 18, HardSwish before 14, Celu
 * and LessOrEqual/GreaterOrEqual before 12). The node's outputs keep their
 * names; the node itself is removed after the walk. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "passes/opset_internal.h"

static ox_value *bin(ox__cv *c, ox_node *n, const char *op, ox_value *a, ox_value *b)
{
    ox_value *in[2] = {a, b};
    return a && b ? ox__cv_op(c, n, op, 2, in) : NULL;
}

static ox_value *un(ox__cv *c, ox_node *n, const char *op, ox_value *a)
{
    return a ? ox__cv_op(c, n, op, 1, &a) : NULL;
}

/* The node producing value v (made by ox__cv_op). */
static ox_node *prod(ox_value *v)
{
    return v ? v->producer : NULL;
}

/* Hands n's output i to the producer of v (output 0), or refuses. */
static ox_status finish(ox__cv *c, ox_node *n, int i, ox_value *v)
{
    if (!v || !prod(v))
        return ox_errorf(c->err, OX_ENOMEM, "out of memory converting the opset");
    ox__cv_take_output(n, i, prod(v), 0);
    return OX_OK;
}

/* ReduceMean over axes, keepdims, in the target's form (attribute before
 * 18, input from 18). */
static ox_value *reduce_mean(ox__cv *c, ox_node *n, ox_value *x, int k, const int64_t *axes)
{
    ox_node *r;
    if (c->to >= 18) {
        ox_value *in[2] = {x, ox__cv_i64(c, n, "axes", k, axes)};
        r = ox__cv_node(c, n, "ReduceMean", 2, in, 1);
    } else {
        r = ox__cv_node(c, n, "ReduceMean", 1, &x, 1);
        if (r)
            ox_node_set_attr_ints(r, "axes", k, axes);
    }
    return r ? r->outputs[0] : NULL;
}

/* The normalized axes [axis, rank) of a normalization; negative ones when
 * the rank is unknown (allowed from opset 11). Returns the count or -1. */
static int norm_axes(ox__cv *c, ox_node *n, int64_t *axes)
{
    int64_t a = ox_node_attr_i(n, "axis", -1);
    int r = ox__cv_rank(ox__cv_in(n, 0));
    if (r >= 0) {
        if (a < 0)
            a += r;
        if (a < 0 || a >= r)
            return -1;
        for (int64_t i = a; i < r; i++)
            axes[i - a] = i;
        return (int)(r - a);
    }
    if (a >= 0 || c->to < 11 || a < -OX_MAX_RANK)
        return -1;
    for (int64_t i = a; i < 0; i++)
        axes[i - a] = i;
    return (int)-a;
}

static ox_value *cast(ox__cv *c, ox_node *n, ox_value *x, ox_dtype to)
{
    ox_node *p = ox__cv_node(c, n, "Cast", 1, &x, 1);
    if (!p)
        return NULL;
    ox_node_set_attr_i(p, "to", to);
    return p->outputs[0];
}

/* Reduced-precision inputs are normalized in float (stash_type 1). */
static bool low_precision(ox_dtype dt)
{
    return dt == OX_DT_FLOAT16 || dt == OX_DT_BFLOAT16;
}

/* LayerNormalization (17): (X - mean) / sqrt(var + eps) * Scale + B. */
static ox_status expand_layernorm(ox__cv *c, ox_node *n)
{
    int64_t axes[OX_MAX_RANK];
    int k = norm_axes(c, n, axes);
    if (k < 0)
        return ox__cv_refuse(c, n, "the input's rank is unknown");
    ox_value *x = ox__cv_in(n, 0), *scale = ox__cv_in(n, 1), *bias = ox__cv_in(n, 2);
    ox_dtype dt = ox__cv_elem(x);
    bool low = low_precision(dt);
    ox_dtype cdt = low ? OX_DT_FLOAT : dt;
    if (low)
        x = cast(c, n, x, OX_DT_FLOAT);
    ox_value *mean = reduce_mean(c, n, x, k, axes);
    ox_value *d = bin(c, n, "Sub", x, mean);
    ox_value *var = reduce_mean(c, n, bin(c, n, "Mul", d, d), k, axes);
    float eps = ox_node_attr_f(n, "epsilon", 1e-5f);
    ox_value *sd = un(c, n, "Sqrt", bin(c, n, "Add", var, ox__cv_scalar(c, n, "eps", cdt, eps)));
    ox_value *y = bin(c, n, "Div", d, sd);
    if (low)
        y = cast(c, n, y, dt);
    y = bin(c, n, "Mul", y, scale);
    if (bias)
        y = bin(c, n, "Add", y, bias);
    ox_status st = finish(c, n, 0, y);
    if (!st && ox__cv_out(n, 1))
        st = finish(c, n, 1, mean);
    if (!st && ox__cv_out(n, 2))
        st = finish(c, n, 2, un(c, n, "Reciprocal", sd));
    if (!st)
        ox__cv_kill(c, n);
    return st;
}

/* RMSNormalization (23): X / sqrt(mean(X^2) + eps) * scale. */
static ox_status expand_rmsnorm(ox__cv *c, ox_node *n)
{
    int64_t axes[OX_MAX_RANK];
    int k = norm_axes(c, n, axes);
    if (k < 0)
        return ox__cv_refuse(c, n, "the input's rank is unknown");
    ox_value *x = ox__cv_in(n, 0), *scale = ox__cv_in(n, 1);
    ox_dtype dt = ox__cv_elem(x);
    bool low = low_precision(dt);
    ox_dtype cdt = low ? OX_DT_FLOAT : dt;
    if (low)
        x = cast(c, n, x, OX_DT_FLOAT);
    ox_value *ms = reduce_mean(c, n, bin(c, n, "Mul", x, x), k, axes);
    float eps = ox_node_attr_f(n, "epsilon", 1e-5f);
    ox_value *rs = un(c, n, "Sqrt", bin(c, n, "Add", ms, ox__cv_scalar(c, n, "eps", cdt, eps)));
    ox_value *y = bin(c, n, "Div", x, rs);
    if (low)
        y = cast(c, n, y, dt);
    ox_status st = finish(c, n, 0, bin(c, n, "Mul", y, scale));
    if (!st)
        ox__cv_kill(c, n);
    return st;
}

/* Gelu (20): 0.5 x (1 + erf(x / sqrt 2)), or its tanh approximation
 * 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
static ox_status expand_gelu(ox__cv *c, ox_node *n)
{
    ox_value *x = ox__cv_in(n, 0);
    ox_dtype dt = ox__cv_elem(x);
    bool tanh_form = !strcmp(ox_node_attr_s(n, "approximate", "none"), "tanh");
    if (!tanh_form && c->to < 9)
        return ox__cv_refuse(c, n, "the exact form needs Erf (opset 9)");
    ox_value *inner;
    if (tanh_form) {
        ox_value *x3 = bin(c, n, "Mul", x, bin(c, n, "Mul", x, x));
        ox_value *p = bin(c, n, "Add", x,
                          bin(c, n, "Mul", x3, ox__cv_scalar(c, n, "k", dt, 0.044715)));
        inner = un(c, n, "Tanh",
                   bin(c, n, "Mul", p, ox__cv_scalar(c, n, "c", dt, sqrt(2.0 / M_PI))));
    } else {
        inner = un(c, n, "Erf", bin(c, n, "Div", x, ox__cv_scalar(c, n, "sqrt2", dt, M_SQRT2)));
    }
    ox_value *one = bin(c, n, "Add", inner, ox__cv_scalar(c, n, "one", dt, 1.0));
    ox_value *hx = bin(c, n, "Mul", x, ox__cv_scalar(c, n, "half", dt, 0.5));
    ox_status st = finish(c, n, 0, bin(c, n, "Mul", hx, one));
    if (!st)
        ox__cv_kill(c, n);
    return st;
}

/* Mish (18): x * tanh(softplus(x)). */
static ox_status expand_mish(ox__cv *c, ox_node *n)
{
    ox_value *x = ox__cv_in(n, 0);
    ox_status st = finish(c, n, 0, bin(c, n, "Mul", x, un(c, n, "Tanh", un(c, n, "Softplus", x))));
    if (!st)
        ox__cv_kill(c, n);
    return st;
}

/* HardSwish (14): x * HardSigmoid(x; alpha 1/6, beta 0.5). */
static ox_status expand_hardswish(ox__cv *c, ox_node *n)
{
    ox_value *x = ox__cv_in(n, 0);
    ox_node *h = ox__cv_node(c, n, "HardSigmoid", 1, &x, 1);
    if (!h)
        return OX_ENOMEM;
    ox_node_set_attr_f(h, "alpha", 1.0f / 6.0f);
    ox_node_set_attr_f(h, "beta", 0.5f);
    ox_status st = finish(c, n, 0, bin(c, n, "Mul", x, h->outputs[0]));
    if (!st)
        ox__cv_kill(c, n);
    return st;
}

/* Celu (12): alpha * Elu(x / alpha). */
static ox_status expand_celu(ox__cv *c, ox_node *n)
{
    ox_value *x = ox__cv_in(n, 0);
    ox_dtype dt = ox__cv_elem(x);
    double alpha = ox_node_attr_f(n, "alpha", 1.0f);
    ox_value *e = un(c, n, "Elu", bin(c, n, "Div", x, ox__cv_scalar(c, n, "alpha", dt, alpha)));
    ox_status st = finish(c, n, 0, bin(c, n, "Mul", e, ox__cv_scalar(c, n, "alpha", dt, alpha)));
    if (!st)
        ox__cv_kill(c, n);
    return st;
}

/* LessOrEqual / GreaterOrEqual (12): Not(Greater) / Not(Less). */
static ox_status expand_cmp_eq(ox__cv *c, ox_node *n)
{
    const char *op = !strcmp(n->op_type, "LessOrEqual") ? "Greater" : "Less";
    ox_status st = finish(c, n, 0,
                          un(c, n, "Not", bin(c, n, op, ox__cv_in(n, 0), ox__cv_in(n, 1))));
    if (!st)
        ox__cv_kill(c, n);
    return st;
}

const ox__cv_adapter ox__cv_expansions[] = {
    {"Celu", expand_celu},
    {"Gelu", expand_gelu},
    {"GreaterOrEqual", expand_cmp_eq},
    {"HardSwish", expand_hardswish},
    {"LayerNormalization", expand_layernorm},
    {"LessOrEqual", expand_cmp_eq},
    {"Mish", expand_mish},
    {"RMSNormalization", expand_rmsnorm},
    {NULL, NULL},
};
