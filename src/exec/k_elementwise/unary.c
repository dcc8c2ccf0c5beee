/* Unary elementwise kernels: math functions, activations, predicates and
 * Clip. One loop per compute type; float16/bfloat16 inputs are widened to
 * float once per call, integer inputs of float-only math go through double. */
/* The build's -O2 does not vectorize on GCC 12; these loops are the hot
 * path of elementwise work, so ask for it here. Without trapping math the
 * min/max selects become branch-free; errno from libm is never read. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "no-trapping-math", "no-math-errno")
#endif

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/k_elementwise/ew.h"
#include "exec/k_elementwise/fastmath.h"
#include "onnxscope/threadpool.h"

typedef struct uparams {
    double alpha, beta, gamma, bias, lambd, lo, hi;
    int64_t ilo, ihi;
    uint64_t ulo, uhi;
    bool pos, neg;  /* IsInf */
} uparams;

typedef void (*ox__un_fn)(int64_t n, const void *x, void *y, const uparams *p);

#define UN_INNER(NAME, T, OT, EXPR)                                         \
    OX__EW_CLONES static void NAME(int64_t n, const void *xv, void *yv, const uparams *p) \
    {                                                                       \
        const T *X = (const T *)xv;                                         \
        OT *Y = (OT *)yv;                                                   \
        const T alpha = (T)p->alpha, beta = (T)p->beta, gamma = (T)p->gamma; \
        const T bias = (T)p->bias, lambd = (T)p->lambd;                     \
        (void)alpha; (void)beta; (void)gamma; (void)bias; (void)lambd;      \
        for (int64_t i = 0; i < n; i++) {                                   \
            T x = X[i];                                                     \
            Y[i] = (OT)(EXPR);                                              \
        }                                                                   \
    }

#define FF(NAME, EF, ED)                                                    \
    UN_INNER(NAME##_f32, float, float, EF)                                  \
    UN_INNER(NAME##_f64, double, double, ED)

/* float-only math; integer inputs use the double loop */
FF(reciprocal, 1.0f / x, 1.0 / x)
FF(sqrt, sqrtf(x), sqrt(x))
FF(exp, ox__expf(x), exp(x))
FF(log, logf(x), log(x))
FF(sin, sinf(x), sin(x))
FF(cos, cosf(x), cos(x))
FF(tan, tanf(x), tan(x))
FF(asin, asinf(x), asin(x))
FF(acos, acosf(x), acos(x))
FF(atan, atanf(x), atan(x))
FF(sinh, sinhf(x), sinh(x))
FF(cosh, coshf(x), cosh(x))
FF(asinh, asinhf(x), asinh(x))
FF(acosh, acoshf(x), acosh(x))
FF(atanh, atanhf(x), atanh(x))
FF(erf, ox__erff(x), erf(x))
FF(tanh, ox__tanhf(x), tanh(x))
FF(floor, floorf(x), floor(x))
FF(ceil, ceilf(x), ceil(x))
FF(round, nearbyintf(x), nearbyint(x))
FF(leaky, (x < 0 ? alpha * x : x), (x < 0 ? alpha * x : x))
FF(elu, (x < 0 ? alpha * expm1f(x) : x), (x < 0 ? alpha * expm1(x) : x))
FF(selu, (x <= 0 ? gamma * (alpha * expf(x) - alpha) : gamma * x),
   (x <= 0 ? gamma * (alpha * exp(x) - alpha) : gamma * x))
FF(celu, fmaxf(0.0f, x) + fminf(0.0f, alpha * expm1f(x / alpha)),
   fmax(0.0, x) + fmin(0.0, alpha * expm1(x / alpha)))
FF(sigmoid, 1.0f / (1.0f + ox__expf(-x)), 1.0 / (1.0 + exp(-x)))
FF(hsigmoid, fmaxf(0.0f, fminf(1.0f, alpha * x + beta)),
   fmax(0.0, fmin(1.0, alpha * x + beta)))
FF(hswish, x * fmaxf(0.0f, fminf(1.0f, x / 6.0f + 0.5f)),
   x * fmax(0.0, fmin(1.0, x / 6.0 + 0.5)))
FF(softplus, (x > 0 ? x + log1pf(expf(-x)) : log1pf(expf(x))),
   (x > 0 ? x + log1p(exp(-x)) : log1p(exp(x))))
FF(swish, x / (1.0f + ox__expf(-alpha * x)), x / (1.0 + exp(-alpha * x)))
FF(softsign, x / (1.0f + fabsf(x)), x / (1.0 + fabs(x)))
FF(threlu, (x > alpha ? x : 0.0f), (x > alpha ? x : 0.0))
FF(mish, x * tanhf(x > 0 ? x + log1pf(expf(-x)) : log1pf(expf(x))),
   x * tanh(x > 0 ? x + log1p(exp(-x)) : log1p(exp(x))))
FF(gelu, 0.5f * x * (1.0f + ox__erff(x * 0.70710678118654752f)),
   0.5 * x * (1.0 + erf(x * 0.70710678118654752440)))
FF(gelut, 0.5f * x * (1.0f + ox__tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x))),
   0.5 * x * (1.0 + tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x))))
FF(shrink, (x < -lambd ? x + bias : x > lambd ? x - bias : 0),
   (x < -lambd ? x + bias : x > lambd ? x - bias : 0))

/* ops that also have integer loops */
#define WNEG(x) ((int64_t)(0 - (uint64_t)(x)))
#define ALL4(NAME, EF, ED, EI, EU)                                          \
    FF(NAME, EF, ED)                                                        \
    UN_INNER(NAME##_i64, int64_t, int64_t, EI)                              \
    UN_INNER(NAME##_u64, uint64_t, uint64_t, EU)
ALL4(abs, fabsf(x), fabs(x), (x < 0 ? WNEG(x) : x), x)
ALL4(neg, -x, -x, WNEG(x), 0 - x)
ALL4(sign, (x > 0 ? 1.0f : x < 0 ? -1.0f : x), (x > 0 ? 1.0 : x < 0 ? -1.0 : x),
     (x > 0) - (x < 0), (x > 0))
ALL4(relu, (x < 0 ? 0.0f : x), (x < 0 ? 0.0 : x), (x < 0 ? 0 : x), x)
UN_INNER(bnot_i64, int64_t, int64_t, ~x)
UN_INNER(bnot_u64, uint64_t, uint64_t, ~x)
UN_INNER(not_b, uint8_t, uint8_t, !x)
UN_INNER(isnan_f32, float, uint8_t, isnan(x))
UN_INNER(isnan_f64, double, uint8_t, isnan(x))
UN_INNER(isinf_f32, float, uint8_t,
         isinf(x) && ((x > 0 && p->pos) || (x < 0 && p->neg)))
UN_INNER(isinf_f64, double, uint8_t,
         isinf(x) && ((x > 0 && p->pos) || (x < 0 && p->neg)))
UN_INNER(clip_f32, float, float,
         (x < (float)p->lo ? (float)p->lo : x) > (float)p->hi ? (float)p->hi
         : (x < (float)p->lo ? (float)p->lo : x))
UN_INNER(clip_f64, double, double,
         (x < p->lo ? p->lo : x) > p->hi ? p->hi : (x < p->lo ? p->lo : x))
UN_INNER(clip_i64, int64_t, int64_t,
         (x < p->ilo ? p->ilo : x) > p->ihi ? p->ihi : (x < p->ilo ? p->ilo : x))
UN_INNER(clip_u64, uint64_t, uint64_t,
         (x < p->ulo ? p->ulo : x) > p->uhi ? p->uhi : (x < p->ulo ? p->ulo : x))
/* integers are already whole */
UN_INNER(ident_i64, int64_t, int64_t, x)
UN_INNER(ident_u64, uint64_t, uint64_t, x)

/* Parallel chunks of one unary loop. */
typedef struct upar {
    ox__un_fn fn;
    const char *x;
    char *y;
    size_t xs, ys;
    const uparams *p;
} upar;

static void upar_run(void *ctx, int64_t b, int64_t e)
{
    const upar *u = ctx;
    u->fn(e - b, u->x + b * (int64_t)u->xs, u->y + b * (int64_t)u->ys, u->p);
}

typedef struct unop {
    const char *name;
    ox__un_fn f32, f64, i64, u64;
    bool to_bool;
} unop;

#define F2(NAME, P) {NAME, P##_f32, P##_f64, NULL, NULL, false}
#define F4(NAME, P) {NAME, P##_f32, P##_f64, P##_i64, P##_u64, false}

/* The common body: widen, run one loop, narrow. */
static ox_status unary(ox_kernel_ctx *c, const unop *op, const uparams *pr)
{
    ox_status st = ox__need_inputs(c, 1);
    if (st)
        return st;
    const ox_tensor *x = ox_kernel_in(c, 0);
    ox_dtype ct = ox__compute_type(x->dtype);
    ox__un_fn fn = NULL;
    switch (ct) {
    case OX_DT_FLOAT: fn = op->f32; break;
    case OX_DT_DOUBLE: fn = op->f64; break;
    case OX_DT_INT64: fn = op->i64; break;
    case OX_DT_UINT64: fn = op->u64; break;
    default: break;
    }
    if (!fn && (ct == OX_DT_INT64 || ct == OX_DT_UINT64) && op->f64) {
        ct = OX_DT_DOUBLE;
        fn = op->f64;
    }
    if (!fn)
        return ox_errorf(c->err, OX_EUNSUPPORTED, "%s: type %s not supported",
                         op->name, ox_dtype_name(x->dtype));
    ox_dtype odt = op->to_bool ? OX_DT_BOOL : x->dtype;
    ox_tensor *y = ox_kernel_output(c, 0, odt, x->rank, x->dims);
    if (!y)
        return ox_errorf(c->err, OX_ENOMEM, "%s: cannot allocate output", op->name);
    if (x->numel == 0)
        return OX_OK;
    void *tx = NULL, *ty = NULL;
    const void *px = ox__as_type(x, ct, &tx, c->err);
    ox_dtype oct = op->to_bool ? OX_DT_BOOL : ct;
    void *py = px ? ox__out_as_type(y, oct, &ty, c->err) : NULL;
    if (!py) {
        free(tx);
        return c->err && c->err->status ? c->err->status : OX_ENOMEM;
    }
    upar u = {fn, px, py, ox__dtype_size(ct), ox__dtype_size(oct), pr};
    ox_parallel_for(c->pool, x->numel, OX__EW_GRAIN, upar_run, &u);
    free(tx);
    return ox__finish_out(y, oct, ty, c->err);
}

static ox_status run_op(ox_kernel_ctx *c, const unop *op)
{
    uparams p;
    memset(&p, 0, sizeof p);
    return unary(c, op, &p);
}

#define SIMPLE(KNAME, OPNAME, INIT)                                         \
    ox_status ox__k_##KNAME(ox_kernel_ctx *c)                               \
    {                                                                       \
        static const unop op = INIT;                                        \
        return run_op(c, &op);                                              \
    }

SIMPLE(Reciprocal, "Reciprocal", F2("Reciprocal", reciprocal))
SIMPLE(Sqrt, "Sqrt", F2("Sqrt", sqrt))
SIMPLE(Exp, "Exp", F2("Exp", exp))
SIMPLE(Log, "Log", F2("Log", log))
SIMPLE(Sin, "Sin", F2("Sin", sin))
SIMPLE(Cos, "Cos", F2("Cos", cos))
SIMPLE(Tan, "Tan", F2("Tan", tan))
SIMPLE(Asin, "Asin", F2("Asin", asin))
SIMPLE(Acos, "Acos", F2("Acos", acos))
SIMPLE(Atan, "Atan", F2("Atan", atan))
SIMPLE(Sinh, "Sinh", F2("Sinh", sinh))
SIMPLE(Cosh, "Cosh", F2("Cosh", cosh))
SIMPLE(Asinh, "Asinh", F2("Asinh", asinh))
SIMPLE(Acosh, "Acosh", F2("Acosh", acosh))
SIMPLE(Atanh, "Atanh", F2("Atanh", atanh))
SIMPLE(Erf, "Erf", F2("Erf", erf))
SIMPLE(Tanh, "Tanh", F2("Tanh", tanh))
SIMPLE(Sigmoid, "Sigmoid", F2("Sigmoid", sigmoid))
SIMPLE(Softplus, "Softplus", F2("Softplus", softplus))
SIMPLE(Softsign, "Softsign", F2("Softsign", softsign))
SIMPLE(HardSwish, "HardSwish", F2("HardSwish", hswish))
SIMPLE(Mish, "Mish", F2("Mish", mish))
SIMPLE(Abs, "Abs", F4("Abs", abs))
SIMPLE(Neg, "Neg", F4("Neg", neg))
SIMPLE(Sign, "Sign", F4("Sign", sign))
SIMPLE(Relu, "Relu", F4("Relu", relu))
SIMPLE(Floor, "Floor", ((unop){"Floor", floor_f32, floor_f64, ident_i64, ident_u64, false}))
SIMPLE(Ceil, "Ceil", ((unop){"Ceil", ceil_f32, ceil_f64, ident_i64, ident_u64, false}))
SIMPLE(Round, "Round", ((unop){"Round", round_f32, round_f64, ident_i64, ident_u64, false}))
SIMPLE(BitwiseNot, "BitwiseNot", ((unop){"BitwiseNot", NULL, NULL, bnot_i64, bnot_u64, false}))
SIMPLE(IsNaN, "IsNaN", ((unop){"IsNaN", isnan_f32, isnan_f64, NULL, NULL, true}))

ox_status ox__k_Not(ox_kernel_ctx *c)
{
    ox_status st = ox__need_inputs(c, 1);
    if (st)
        return st;
    const ox_tensor *x = ox_kernel_in(c, 0);
    if (x->dtype != OX_DT_BOOL)
        return ox_errorf(c->err, OX_EINVAL, "Not: input must be bool");
    ox_tensor *y = ox_kernel_output(c, 0, OX_DT_BOOL, x->rank, x->dims);
    if (!y)
        return ox_errorf(c->err, OX_ENOMEM, "Not: cannot allocate output");
    if (x->numel == 0)
        return OX_OK;
    uparams p;
    memset(&p, 0, sizeof p);
    const void *px = ox_tensor_data(x);
    void *py = ox_tensor_mutable_data(y);
    if (!px || !py)
        return ox_errorf(c->err, OX_EINVAL, "Not: tensor without data");
    not_b(x->numel, px, py, &p);
    return OX_OK;
}

ox_status ox__k_IsInf(ox_kernel_ctx *c)
{
    static const unop op = {"IsInf", isinf_f32, isinf_f64, NULL, NULL, true};
    uparams p;
    memset(&p, 0, sizeof p);
    p.pos = ox_node_attr_i(c->node, "detect_positive", 1) != 0;
    p.neg = ox_node_attr_i(c->node, "detect_negative", 1) != 0;
    return unary(c, &op, &p);
}

static ox_status with_alpha(ox_kernel_ctx *c, const unop *op, double alpha,
                            double beta)
{
    uparams p;
    memset(&p, 0, sizeof p);
    p.alpha = ox_node_attr_f(c->node, "alpha", (float)alpha);
    p.beta = ox_node_attr_f(c->node, "beta", (float)beta);
    return unary(c, op, &p);
}

ox_status ox__k_LeakyRelu(ox_kernel_ctx *c)
{
    static const unop op = F2("LeakyRelu", leaky);
    return with_alpha(c, &op, 0.01, 0);
}

ox_status ox__k_Elu(ox_kernel_ctx *c)
{
    static const unop op = F2("Elu", elu);
    return with_alpha(c, &op, 1.0, 0);
}

ox_status ox__k_Celu(ox_kernel_ctx *c)
{
    static const unop op = F2("Celu", celu);
    return with_alpha(c, &op, 1.0, 0);
}

ox_status ox__k_ThresholdedRelu(ox_kernel_ctx *c)
{
    static const unop op = F2("ThresholdedRelu", threlu);
    return with_alpha(c, &op, 1.0, 0);
}

ox_status ox__k_HardSigmoid(ox_kernel_ctx *c)
{
    static const unop op = F2("HardSigmoid", hsigmoid);
    return with_alpha(c, &op, 0.2, 0.5);
}

ox_status ox__k_Swish(ox_kernel_ctx *c)
{
    static const unop op = F2("Swish", swish);
    return with_alpha(c, &op, 1.0, 0);
}

ox_status ox__k_Selu(ox_kernel_ctx *c)
{
    static const unop op = F2("Selu", selu);
    uparams p;
    memset(&p, 0, sizeof p);
    p.alpha = ox_node_attr_f(c->node, "alpha", 1.67326319217681884765625f);
    p.gamma = ox_node_attr_f(c->node, "gamma", 1.05070102214813232421875f);
    return unary(c, &op, &p);
}

ox_status ox__k_Shrink(ox_kernel_ctx *c)
{
    static const unop op = F2("Shrink", shrink);
    uparams p;
    memset(&p, 0, sizeof p);
    p.bias = ox_node_attr_f(c->node, "bias", 0.0f);
    p.lambd = ox_node_attr_f(c->node, "lambd", 0.5f);
    return unary(c, &op, &p);
}

ox_status ox__k_Gelu(ox_kernel_ctx *c)
{
    static const unop none = F2("Gelu", gelu);
    static const unop tanh_ = F2("Gelu", gelut);
    const char *a = ox_node_attr_s(c->node, "approximate", "none");
    if (strcmp(a, "tanh") == 0)
        return run_op(c, &tanh_);
    if (strcmp(a, "none") != 0)
        return ox_errorf(c->err, OX_EINVAL, "Gelu: unknown approximate=\"%s\"", a);
    return run_op(c, &none);
}

/* Reads a scalar bound input (opset >= 11) into the params. */
static ox_status clip_bound(ox_kernel_ctx *c, int i, ox_dtype ct, uparams *p,
                            bool is_min)
{
    const ox_tensor *t = c->n_in > i ? ox_kernel_in(c, i) : NULL;
    if (!t)
        return OX_OK;
    if (t->numel != 1)
        return ox_errorf(c->err, OX_EINVAL, "Clip: %s must be a scalar",
                         is_min ? "min" : "max");
    void *tmp = NULL;
    const void *v = ox__as_type(t, ct, &tmp, c->err);
    if (!v)
        return c->err && c->err->status ? c->err->status : OX_ENOMEM;
    switch (ct) {
    case OX_DT_FLOAT: *(is_min ? &p->lo : &p->hi) = *(const float *)v; break;
    case OX_DT_DOUBLE: *(is_min ? &p->lo : &p->hi) = *(const double *)v; break;
    case OX_DT_INT64: *(is_min ? &p->ilo : &p->ihi) = *(const int64_t *)v; break;
    default: *(is_min ? &p->ulo : &p->uhi) = *(const uint64_t *)v; break;
    }
    free(tmp);
    return OX_OK;
}

ox_status ox__k_Clip(ox_kernel_ctx *c)
{
    static const unop op = F4("Clip", clip);
    ox_status st = ox__need_inputs(c, 1);
    if (st)
        return st;
    const ox_tensor *x = ox_kernel_in(c, 0);
    ox_dtype ct = ox__compute_type(x->dtype);
    uparams p;
    memset(&p, 0, sizeof p);
    p.lo = -INFINITY;
    p.hi = INFINITY;
    p.ilo = INT64_MIN;
    p.ihi = INT64_MAX;
    p.ulo = 0;
    p.uhi = UINT64_MAX;
    if (c->opset < 11) {
        p.lo = ox_node_attr_f(c->node, "min", -INFINITY);
        p.hi = ox_node_attr_f(c->node, "max", INFINITY);
    } else {
        if ((st = clip_bound(c, 1, ct, &p, true)) ||
            (st = clip_bound(c, 2, ct, &p, false)))
            return st;
    }
    return unary(c, &op, &p);
}
