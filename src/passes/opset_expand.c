/* Expansions: operators the target opset lacks, written with older
 * primitives (LayerNormalization before 17, Gelu before 20,
 * RMSNormalization and Attention before 23, Mish before 18, CastLike
 * before 15, HardSwish before 14, Celu and LessOrEqual/GreaterOrEqual
 * before 12). The node's outputs keep their
 * names; the node itself is removed after the walk. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "passes/opset_internal.h"
#include "passes/pass_internal.h"

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
    if (r > OX_MAX_RANK)
        return -1;
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


/* ---- Attention (23) ---------------------------------------------------------- */

static ox_value *transpose(ox__cv *c, ox_node *n, ox_value *x, int r, const int64_t *perm)
{
    ox_node *t = ox__cv_node(c, n, "Transpose", 1, &x, 1);
    if (!t)
        return NULL;
    ox_node_set_attr_ints(t, "perm", r, perm);
    return t->outputs[0];
}

static ox_value *reshape(ox__cv *c, ox_node *n, ox_value *x, int r, const int64_t *shape)
{
    return bin(c, n, "Reshape", x, ox__cv_i64(c, n, "shape", r, shape));
}

static ox_value *unsqueeze(ox__cv *c, ox_node *n, ox_value *x, int64_t axis)
{
    if (c->to >= 13)
        return bin(c, n, "Unsqueeze", x, ox__cv_i64(c, n, "axes", 1, &axis));
    ox_node *u = ox__cv_node(c, n, "Unsqueeze", 1, &x, 1);
    if (!u)
        return NULL;
    ox_node_set_attr_ints(u, "axes", 1, &axis);
    return u->outputs[0];
}

/* [B, S, H*D] -> [B, H, S, D]. */
static ox_value *split_heads(ox__cv *c, ox_node *n, ox_value *x, int64_t heads)
{
    static const int64_t perm[4] = {0, 2, 1, 3};
    int64_t shape[4] = {0, 0, heads, -1};
    return transpose(c, n, reshape(c, n, x, 4, shape), 4, perm);
}

/* Each of the kv heads repeated `rep` times in place ([h0, h0, h1, h1 ...]):
 * [B, Hkv, T, D] -> [B, Hkv*rep, T, D], D known. */
static ox_value *repeat_heads(ox__cv *c, ox_node *n, ox_value *x, int64_t rep, int64_t hq,
                              int64_t d)
{
    int64_t reps[5] = {1, 1, rep, 1, 1};
    ox_value *t = bin(c, n, "Tile", unsqueeze(c, n, x, 2), ox__cv_i64(c, n, "reps", 5, reps));
    int64_t shape[4] = {0, hq, -1, d};
    return reshape(c, n, t, 4, shape);
}

/* Attention-23 with primitives: scores = (Q sqrt(s)) (K sqrt(s))^T, softcap,
 * plus the mask bias (a boolean mask as 0 / -inf) and the causal bias,
 * softmax over the keys, times V. Needs the ranks, the head size, and for
 * a causal mask the query and key lengths. The fourth output
 * (qk_matmul_output) is refused. */
static ox_status expand_attention(ox__cv *c, ox_node *n)
{
    ox_value *q = ox__cv_in(n, 0), *k = ox__cv_in(n, 1), *v = ox__cv_in(n, 2);
    ox_value *mask = ox__cv_in(n, 3), *pk = ox__cv_in(n, 4), *pv = ox__cv_in(n, 5);
    int r = ox__cv_rank(q);
    if (r != 3 && r != 4)
        return ox__cv_refuse(c, n, "the rank of Q is unknown");
    if (ox__cv_rank(k) != r || ox__cv_rank(v) != r)
        return ox__cv_refuse(c, n, "Q, K and V ranks differ or are unknown");
    if (n->n_inputs > 6)
        return ox__cv_refuse(c, n, "inputs past the sixth have no expansion");
    int64_t qk_mode = ox_node_attr_i(n, "qk_matmul_output_mode", 0);
    if (qk_mode < 0 || qk_mode > 3)
        return ox__cv_refuse(c, n, "unknown qk_matmul_output_mode %lld", (long long)qk_mode);
    if ((pk == NULL) != (pv == NULL))
        return ox__cv_refuse(c, n, "past_key and past_value go together");
    if (c->to < 9)
        return ox__cv_refuse(c, n, "the expansion needs Where and IsNaN (opset 9)");
    ox_dtype dt = ox__cv_elem(q);
    /* Sequence lengths, from the inputs as given (before any reshape). */
    int64_t q_len = ox__cv_dim(q, r - 2), new_len = ox__cv_dim(k, r - 2);
    int64_t past_len = pk ? ox__cv_dim(pk, 2) : 0;
    int64_t total_len = new_len >= 0 && past_len >= 0 ? new_len + past_len : -1;
    int64_t hq = ox_node_attr_i(n, "q_num_heads", 0), hkv = ox_node_attr_i(n, "kv_num_heads", 0);
    int64_t dq;   /* head size of Q and K */
    if (r == 3) {
        int64_t hid = ox__cv_dim(q, 2);
        if (hq <= 0 || hkv <= 0 || hid <= 0 || hid % hq)
            return ox__cv_refuse(c, n, "3-D inputs need q_num_heads, kv_num_heads and a known "
                                 "hidden size");
        dq = hid / hq;
        q = split_heads(c, n, q, hq);
        k = split_heads(c, n, k, hkv);
        v = split_heads(c, n, v, hkv);
    } else {
        hq = ox__cv_dim(q, 1);
        hkv = ox__cv_dim(k, 1);
        dq = ox__cv_dim(q, 3);
        if (hq <= 0 || hkv <= 0 || dq <= 0)
            return ox__cv_refuse(c, n, "the head counts and head size must be known");
    }
    if (hq % hkv)
        return ox__cv_refuse(c, n, "q_num_heads is not a multiple of kv_num_heads");
    /* present = concat(past, new) along the sequence. */
    ox_value *kk = k, *vv = v;
    if (pk) {
        ox_value *ink[2] = {pk, k}, *inv[2] = {pv, v};
        ox_node *ck = ox__cv_node(c, n, "Concat", 2, ink, 1);
        ox_node *cvn = ox__cv_node(c, n, "Concat", 2, inv, 1);
        if (!ck || !cvn)
            return OX_ENOMEM;
        ox_node_set_attr_i(ck, "axis", 2);
        ox_node_set_attr_i(cvn, "axis", 2);
        kk = ck->outputs[0];
        vv = cvn->outputs[0];
    }
    ox_value *present_k = kk, *present_v = vv;
    int64_t dv = r == 3 ? -1 : ox__cv_dim(v, 3);
    if (hq != hkv) {
        if (r == 3) {
            int64_t hid = ox__cv_dim(ox__cv_in(n, 2), 2);
            dv = hid > 0 ? hid / hkv : -1;
        }
        if (dv <= 0)
            return ox__cv_refuse(c, n, "grouped heads need V's head size known");
        kk = repeat_heads(c, n, kk, hq / hkv, hq, dq);
        vv = repeat_heads(c, n, vv, hq / hkv, hq, dv);
    }
    double scale = ox_node_attr(n, "scale") ? ox_node_attr_f(n, "scale", 1.0f) : 1.0 / sqrt((double)dq);
    ox_value *sq = ox__cv_scalar(c, n, "sqrt_scale", dt, sqrt(scale));
    static const int64_t kt[4] = {0, 1, 3, 2};
    ox_value *s = bin(c, n, "MatMul", bin(c, n, "Mul", q, sq),
                      transpose(c, n, bin(c, n, "Mul", kk, sq), 4, kt));
    float cap = ox_node_attr_f(n, "softcap", 0.0f);
    if (cap > 0) {
        ox_value *cv = ox__cv_scalar(c, n, "softcap", dt, cap);
        s = bin(c, n, "Mul", un(c, n, "Tanh", bin(c, n, "Div", s, cv)), cv);
    }
    ox_value *qk_out = s;   /* modes 0 and 1: the (softcapped) product */
    bool masked = false;
    if (mask) {
        int64_t ml = ox__cv_dim(mask, ox__cv_rank(mask) - 1);
        if (ml > 0 && total_len > 0 && ml != total_len)
            return ox__cv_refuse(c, n, "a mask shorter than the keys (padded) has no expansion");
        ox_value *bias = mask;
        if (ox__cv_elem(mask) == OX_DT_BOOL) {
            ox_value *in[3] = {mask, ox__cv_scalar(c, n, "zero", dt, 0.0),
                               ox__cv_scalar(c, n, "neg_inf", dt, -INFINITY)};
            bias = ox__cv_op(c, n, "Where", 3, in);
        }
        s = bin(c, n, "Add", s, bias);
        masked = true;
    }
    if (ox_node_attr_i(n, "is_causal", 0)) {
        int64_t sql = q_len, tl = total_len, past = past_len;
        if (sql <= 0 || tl <= 0 || past < 0 || sql * tl > ((int64_t)1 << 22))
            return ox__cv_refuse(c, n, "a causal mask needs the query and key lengths known");
        int64_t d2[2] = {sql, tl};
        ox_tensor *t = ox_tensor_new(dt == OX_DT_UNDEFINED ? OX_DT_FLOAT : dt, 2, d2);
        if (!t)
            return OX_ENOMEM;
        for (int64_t i = 0; i < sql; i++)
            for (int64_t j = 0; j < tl; j++)
                ox_tensor_set_f64(t, i * tl + j, j > i + past ? -INFINITY : 0.0);
        s = bin(c, n, "Add", s, ox__pass_new_init(n->graph, "causal_bias", t));
        masked = true;
    }
    if (qk_mode == 2)
        qk_out = s;
    ox_node *sm = ox__cv_node(c, n, "Softmax", 1, &s, 1);
    if (!sm)
        return OX_ENOMEM;
    ox_node_set_attr_i(sm, "axis", 3);   /* the last: the same before and from 13 */
    ox_value *p = sm->outputs[0];
    if (masked) {
        /* A fully masked row gives zeros (the kernel's and the reference's
         * rule), not the NaN of a softmax over -inf. */
        ox_value *in[3] = {un(c, n, "IsNaN", p), ox__cv_scalar(c, n, "zero", dt, 0.0), p};
        p = ox__cv_op(c, n, "Where", 3, in);
    }
    if (qk_mode == 3)
        qk_out = p;
    ox_value *y = bin(c, n, "MatMul", p, vv);
    if (r == 3) {
        static const int64_t back[4] = {0, 2, 1, 3};
        int64_t shape[3] = {0, 0, -1};
        y = reshape(c, n, transpose(c, n, y, 4, back), 3, shape);
    }
    ox_status st = finish(c, n, 0, y);
    if (!st && ox__cv_out(n, 1))
        st = finish(c, n, 1, un(c, n, "Identity", present_k));
    if (!st && ox__cv_out(n, 2))
        st = finish(c, n, 2, un(c, n, "Identity", present_v));
    if (!st && ox__cv_out(n, 3))
        st = finish(c, n, 3, un(c, n, "Identity", qk_out));
    if (!st)
        ox__cv_kill(c, n);
    return st;
}

/* CastLike (15): a Cast to the element type of the second input. */
static ox_status expand_castlike(ox__cv *c, ox_node *n)
{
    ox_dtype to = ox__cv_elem(ox__cv_in(n, 1));
    if (to == OX_DT_UNDEFINED)
        return ox__cv_refuse(c, n, "the target type (of input 1) is unknown");
    ox_value *x = ox__cv_in(n, 0);
    ox_node *p = ox__cv_node(c, n, "Cast", 1, &x, 1);
    if (!p)
        return OX_ENOMEM;
    ox_node_set_attr_i(p, "to", to);
    ox_status st = finish(c, n, 0, p->outputs[0]);
    if (!st)
        ox__cv_kill(c, n);
    return st;
}

const ox__cv_adapter ox__cv_expansions[] = {
    {"Attention", expand_attention},
    {"CastLike", expand_castlike},
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
