/* Binary and variadic elementwise kernels with numpy broadcasting:
 * arithmetic, comparisons, logic and bitwise ops, Pow, Mod, PRelu, Where,
 * SwiGLU.
 * Each op has one inner loop per compute type (float, double, int64,
 * uint64); narrower types are widened once per call and narrowed back. */
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

/* The inner loop: four variants (both contiguous, one side scalar, both
 * scalar) so that each is a plain loop the compiler can vectorize. */
#define BIN_INNER(NAME, T, OT, EXPR)                                        \
    OX__EW_CLONES static void NAME(int64_t n, char *const *p, const int64_t *s, void *ud) \
    {                                                                       \
        (void)ud;                                                           \
        OT *o = (OT *)p[0];                                                 \
        const T *a = (const T *)p[1];                                       \
        const T *b = (const T *)p[2];                                       \
        if (s[1] && s[2]) {                                                 \
            for (int64_t i = 0; i < n; i++) {                               \
                T x = a[i], y = b[i];                                       \
                o[i] = (OT)(EXPR);                                          \
            }                                                               \
        } else if (s[1]) {                                                  \
            T y = b[0];                                                     \
            for (int64_t i = 0; i < n; i++) {                               \
                T x = a[i];                                                 \
                o[i] = (OT)(EXPR);                                          \
            }                                                               \
        } else if (s[2]) {                                                  \
            T x = a[0];                                                     \
            for (int64_t i = 0; i < n; i++) {                               \
                T y = b[i];                                                 \
                o[i] = (OT)(EXPR);                                          \
            }                                                               \
        } else {                                                            \
            T x = a[0], y = b[0];                                           \
            OT v = (OT)(EXPR);                                              \
            for (int64_t i = 0; i < n; i++)                                 \
                o[i] = v;                                                   \
        }                                                                   \
    }

/* Signed integer arithmetic wraps (through unsigned) instead of being UB. */
#define WADD(x, y) ((int64_t)((uint64_t)(x) + (uint64_t)(y)))
#define WSUB(x, y) ((int64_t)((uint64_t)(x) - (uint64_t)(y)))
#define WMUL(x, y) ((int64_t)((uint64_t)(x) * (uint64_t)(y)))

static inline int64_t idiv(int64_t x, int64_t y)
{
    if (y == 0)
        return 0;
    if (y == -1)
        return WSUB(0, x);
    return x / y;
}

static inline int64_t imod_c(int64_t x, int64_t y)
{
    if (y == 0 || y == -1)
        return 0;
    return x % y;
}

static inline int64_t imod_py(int64_t x, int64_t y)
{
    int64_t r = imod_c(x, y);
    if (r != 0 && ((r < 0) != (y < 0)))
        r += y;
    return r;
}

static inline double fmod_py(double x, double y)
{
    double r = fmod(x, y);
    if (r != 0 && ((r < 0) != (y < 0)))
        r += y;
    return r;
}

static inline float fmodf_py(float x, float y)
{
    float r = fmodf(x, y);
    if (r != 0 && ((r < 0) != (y < 0)))
        r += y;
    return r;
}

#define FMAX(x, y) (((x) >= (y) || (x) != (x)) ? (x) : (y))
#define FMIN(x, y) (((x) <= (y) || (x) != (x)) ? (x) : (y))
#define IMAX(x, y) ((x) >= (y) ? (x) : (y))
#define IMIN(x, y) ((x) <= (y) ? (x) : (y))

#define ALL4(OP, EF, ED, EI, EU)                                            \
    BIN_INNER(OP##_f32, float, float, EF)                                   \
    BIN_INNER(OP##_f64, double, double, ED)                                 \
    BIN_INNER(OP##_i64, int64_t, int64_t, EI)                               \
    BIN_INNER(OP##_u64, uint64_t, uint64_t, EU)

ALL4(add, x + y, x + y, WADD(x, y), x + y)
ALL4(sub, x - y, x - y, WSUB(x, y), x - y)
ALL4(mul, x * y, x * y, WMUL(x, y), x * y)
ALL4(div, x / y, x / y, idiv(x, y), (y ? x / y : 0))
ALL4(max, FMAX(x, y), FMAX(x, y), IMAX(x, y), IMAX(x, y))
ALL4(min, FMIN(x, y), FMIN(x, y), IMIN(x, y), IMIN(x, y))
ALL4(modc, fmodf(x, y), fmod(x, y), imod_c(x, y), (y ? x % y : 0))
ALL4(modp, fmodf_py(x, y), fmod_py(x, y), imod_py(x, y), (y ? x % y : 0))
ALL4(prelu, (x < 0 ? x * y : x), (x < 0 ? x * y : x),
     (x < 0 ? WMUL(x, y) : x), ((void)y, x))
BIN_INNER(pow_f32, float, float, powf(x, y))
BIN_INNER(pow_f64, double, double, pow(x, y))
/* Pow with a constant exponent of 2 or 3 (LayerNorm variance, GELU's cube)
 * is a multiplication: exact, and vectorizable unlike powf */
BIN_INNER(sq_f32, float, float, ((void)y, x * x))
BIN_INNER(sq_f64, double, double, ((void)y, x * x))
BIN_INNER(cube_f32, float, float, ((void)y, x * x * x))
BIN_INNER(cube_f64, double, double, ((void)y, x * x * x))
BIN_INNER(band_i64, int64_t, int64_t, x & y)
BIN_INNER(bor_i64, int64_t, int64_t, x | y)
BIN_INNER(bxor_i64, int64_t, int64_t, x ^ y)
BIN_INNER(band_u64, uint64_t, uint64_t, x & y)
BIN_INNER(bor_u64, uint64_t, uint64_t, x | y)
BIN_INNER(bxor_u64, uint64_t, uint64_t, x ^ y)
BIN_INNER(shl_u64, uint64_t, uint64_t, (y >= 64 ? 0 : x << y))
BIN_INNER(shr_u64, uint64_t, uint64_t, (y >= 64 ? 0 : x >> y))
BIN_INNER(and_b, uint8_t, uint8_t, (x != 0) & (y != 0))
BIN_INNER(or_b, uint8_t, uint8_t, (x != 0) | (y != 0))
BIN_INNER(xor_b, uint8_t, uint8_t, (x != 0) ^ (y != 0))

#define CMP4(OP, E)                                                         \
    BIN_INNER(OP##_f32, float, uint8_t, E)                                  \
    BIN_INNER(OP##_f64, double, uint8_t, E)                                 \
    BIN_INNER(OP##_i64, int64_t, uint8_t, E)                                \
    BIN_INNER(OP##_u64, uint64_t, uint8_t, E)
CMP4(eq, x == y)
CMP4(gt, x > y)
CMP4(ge, x >= y)
CMP4(lt, x < y)
CMP4(le, x <= y)

static void eq_str(int64_t n, char *const *p, const int64_t *s, void *ud)
{
    (void)ud;
    uint8_t *o = (uint8_t *)p[0];
    const ox_bytes *a = (const ox_bytes *)p[1];
    const ox_bytes *b = (const ox_bytes *)p[2];
    for (int64_t i = 0; i < n; i++) {
        const ox_bytes *x = &a[i * s[1]], *y = &b[i * s[2]];
        o[i] = x->len == y->len && (x->len == 0 || memcmp(x->data, y->data, x->len) == 0);
    }
}

typedef struct binop {
    const char *name;
    ox__ew_inner_fn f32, f64, i64, u64;
    bool to_bool;      /* comparisons: output is bool */
} binop;

#define OP4(NAME, P) {NAME, P##_f32, P##_f64, P##_i64, P##_u64, false}
#define CMPOP(NAME, P) {NAME, P##_f32, P##_f64, P##_i64, P##_u64, true}

static const binop op_add = OP4("Add", add);
static const binop op_sub = OP4("Sub", sub);
static const binop op_mul = OP4("Mul", mul);
static const binop op_div = OP4("Div", div);
static const binop op_max = OP4("Max", max);
static const binop op_min = OP4("Min", min);
static const binop op_modc = OP4("Mod", modc);
static const binop op_modp = OP4("Mod", modp);
static const binop op_prelu = OP4("PRelu", prelu);
static const binop op_pow = {"Pow", pow_f32, pow_f64, NULL, NULL, false};
static const binop op_sq = {"Pow", sq_f32, sq_f64, NULL, NULL, false};
static const binop op_cube = {"Pow", cube_f32, cube_f64, NULL, NULL, false};
static const binop op_band = {"BitwiseAnd", NULL, NULL, band_i64, band_u64, false};
static const binop op_bor = {"BitwiseOr", NULL, NULL, bor_i64, bor_u64, false};
static const binop op_bxor = {"BitwiseXor", NULL, NULL, bxor_i64, bxor_u64, false};
static const binop op_shl = {"BitShift", NULL, NULL, NULL, shl_u64, false};
static const binop op_shr = {"BitShift", NULL, NULL, NULL, shr_u64, false};
static const binop op_eq = CMPOP("Equal", eq);
static const binop op_gt = CMPOP("Greater", gt);
static const binop op_ge = CMPOP("GreaterOrEqual", ge);
static const binop op_lt = CMPOP("Less", lt);
static const binop op_le = CMPOP("LessOrEqual", le);

static ox__ew_inner_fn pick(const binop *op, ox_dtype ct)
{
    switch (ct) {
    case OX_DT_FLOAT: return op->f32;
    case OX_DT_DOUBLE: return op->f64;
    case OX_DT_INT64: return op->i64;
    case OX_DT_UINT64: return op->u64;
    default: return NULL;
    }
}

/* Computes op(a, b) broadcast into a buffer of compute type ct (or bool),
 * laid out with shape (rank, dims). */
static void run2(const ox_tensor *a, const void *pa, const ox_tensor *b,
                 const void *pb, void *po, size_t osz, size_t isz, int rank,
                 const int64_t *dims, ox__ew_inner_fn fn, void *ud,
                 ox_thread_pool *pool)
{
    int ir[2] = {a->rank, b->rank};
    const int64_t *id[2] = {a->dims, b->dims};
    void *ptr[3] = {po, (void *)pa, (void *)pb};
    size_t esz[3] = {osz, isz, isz};
    ox__bcast_run(rank, dims, 2, ir, id, ptr, esz, fn, ud, pool);
}

/* The common body of a binary kernel. ct_override forces the compute type
 * (Pow on integers); out_dt is the output element type. */
static ox_status binary(ox_kernel_ctx *c, const binop *op, const ox_tensor *a,
                        const ox_tensor *b, ox_dtype ct, ox_dtype out_dt)
{
    int rank;
    int64_t dims[OX_MAX_RANK];
    const ox_tensor *ab[2] = {a, b};
    if (!ox__bcast_shape(2, ab, &rank, dims)) {
        char s1[128], s2[128];
        return ox_errorf(c->err, OX_ESHAPE, "%s: shapes %s and %s do not broadcast",
                         op->name, ox_shape_str(a->rank, a->dims, s1, sizeof s1),
                         ox_shape_str(b->rank, b->dims, s2, sizeof s2));
    }
    ox__ew_inner_fn fn = pick(op, ct);
    if (!fn)
        return ox_errorf(c->err, OX_EUNSUPPORTED, "%s: type %s not supported",
                         op->name, ox_dtype_name(a->dtype));
    ox_tensor *out = ox_kernel_output(c, 0, out_dt, rank, dims);
    if (!out)
        return ox_errorf(c->err, OX_ENOMEM, "%s: cannot allocate output", op->name);
    if (out->numel == 0)
        return OX_OK;
    void *ta = NULL, *tb = NULL, *to = NULL;
    ox_status st = OX_OK;
    const void *pa = ox__as_type(a, ct, &ta, c->err);
    const void *pb = pa ? ox__as_type(b, ct, &tb, c->err) : NULL;
    ox_dtype oct = op->to_bool ? OX_DT_BOOL : ct;
    void *po = pb ? ox__out_as_type(out, oct, &to, c->err) : NULL;
    if (!po) {
        st = c->err && c->err->status ? c->err->status : OX_ENOMEM;
    } else {
        run2(a, pa, b, pb, po, ox__dtype_size(oct), ox__dtype_size(ct), rank,
             dims, fn, NULL, c->pool);
        st = ox__finish_out(out, oct, to, c->err);
        to = NULL;
    }
    free(ta);
    free(tb);
    free(to);
    return st;
}

/* Before opset 7, B broadcasts to A only with broadcast=1, its dims aligned
 * at `axis` (suffix-aligned without it, which numpy rules already do). The
 * view is a shallow struct copy with reshaped dims; nothing frees it. */
static const ox_tensor *legacy_b(const ox_kernel_ctx *c, const ox_tensor *a,
                                 const ox_tensor *b, ox_tensor *view)
{
    if (c->opset >= 7 || !ox_node_attr_i(c->node, "broadcast", 0) ||
        !ox_node_attr(c->node, "axis"))
        return b;
    int64_t axis = ox_node_attr_i(c->node, "axis", 0);
    if (axis < 0)
        axis += a->rank;
    if (axis < 0 || axis + b->rank > a->rank)
        return b;
    *view = *b;
    view->rank = a->rank;
    for (int d = 0; d < a->rank; d++)
        view->dims[d] = (d >= axis && d < axis + b->rank) ? b->dims[d - axis] : 1;
    return view;
}

static ox_status simple_binary(ox_kernel_ctx *c, const binop *op)
{
    ox_status st = ox__need_inputs(c, 2);
    if (st)
        return st;
    const ox_tensor *a = ox_kernel_in(c, 0), *b = ox_kernel_in(c, 1);
    ox_tensor view;
    b = legacy_b(c, a, b, &view);
    ox_dtype ct = ox__compute_type(a->dtype);
    return binary(c, op, a, b, ct, op->to_bool ? OX_DT_BOOL : a->dtype);
}

ox_status ox__k_Add(ox_kernel_ctx *c) { return simple_binary(c, &op_add); }
ox_status ox__k_Sub(ox_kernel_ctx *c) { return simple_binary(c, &op_sub); }
ox_status ox__k_Mul(ox_kernel_ctx *c) { return simple_binary(c, &op_mul); }
ox_status ox__k_Div(ox_kernel_ctx *c) { return simple_binary(c, &op_div); }
ox_status ox__k_Greater(ox_kernel_ctx *c) { return simple_binary(c, &op_gt); }
ox_status ox__k_GreaterOrEqual(ox_kernel_ctx *c) { return simple_binary(c, &op_ge); }
ox_status ox__k_Less(ox_kernel_ctx *c) { return simple_binary(c, &op_lt); }
ox_status ox__k_LessOrEqual(ox_kernel_ctx *c) { return simple_binary(c, &op_le); }
ox_status ox__k_BitwiseAnd(ox_kernel_ctx *c) { return simple_binary(c, &op_band); }
ox_status ox__k_BitwiseOr(ox_kernel_ctx *c) { return simple_binary(c, &op_bor); }
ox_status ox__k_BitwiseXor(ox_kernel_ctx *c) { return simple_binary(c, &op_bxor); }

ox_status ox__k_Mod(ox_kernel_ctx *c)
{
    bool f = ox_node_attr_i(c->node, "fmod", 0) != 0;
    return simple_binary(c, f ? &op_modc : &op_modp);
}

ox_status ox__k_BitShift(ox_kernel_ctx *c)
{
    const char *dir = ox_node_attr_s(c->node, "direction", "");
    if (strcmp(dir, "LEFT") == 0)
        return simple_binary(c, &op_shl);
    if (strcmp(dir, "RIGHT") == 0)
        return simple_binary(c, &op_shr);
    return ox_errorf(c->err, OX_EINVAL, "BitShift: direction must be LEFT or RIGHT");
}

ox_status ox__k_Equal(ox_kernel_ctx *c)
{
    ox_status st = ox__need_inputs(c, 2);
    if (st)
        return st;
    const ox_tensor *a = ox_kernel_in(c, 0), *b = ox_kernel_in(c, 1);
    if (a->dtype != OX_DT_STRING && b->dtype != OX_DT_STRING)
        return simple_binary(c, &op_eq);
    if (a->dtype != b->dtype)
        return ox_errorf(c->err, OX_EINVAL, "Equal: string compared with %s",
                         ox_dtype_name(a->dtype == OX_DT_STRING ? b->dtype : a->dtype));
    int rank;
    int64_t dims[OX_MAX_RANK];
    const ox_tensor *ab[2] = {a, b};
    if (!ox__bcast_shape(2, ab, &rank, dims))
        return ox_errorf(c->err, OX_ESHAPE, "Equal: shapes do not broadcast");
    ox_tensor *out = ox_kernel_output(c, 0, OX_DT_BOOL, rank, dims);
    if (!out)
        return ox_errorf(c->err, OX_ENOMEM, "Equal: cannot allocate output");
    if (out->numel == 0)
        return OX_OK;
    if (!a->strings || !b->strings)
        return ox_errorf(c->err, OX_EINVAL, "Equal: string tensor without data");
    run2(a, a->strings, b, b->strings, ox_tensor_mutable_data(out), 1,
         sizeof(ox_bytes), rank, dims, eq_str, NULL, c->pool);
    return OX_OK;
}

static ox_status logic(ox_kernel_ctx *c, ox__ew_inner_fn fn, const char *name)
{
    ox_status st = ox__need_inputs(c, 2);
    if (st)
        return st;
    const ox_tensor *a = ox_kernel_in(c, 0), *b = ox_kernel_in(c, 1);
    if (a->dtype != OX_DT_BOOL || b->dtype != OX_DT_BOOL)
        return ox_errorf(c->err, OX_EINVAL, "%s: inputs must be bool", name);
    ox_tensor view;
    b = legacy_b(c, a, b, &view);
    int rank;
    int64_t dims[OX_MAX_RANK];
    const ox_tensor *ab[2] = {a, b};
    if (!ox__bcast_shape(2, ab, &rank, dims))
        return ox_errorf(c->err, OX_ESHAPE, "%s: shapes do not broadcast", name);
    ox_tensor *out = ox_kernel_output(c, 0, OX_DT_BOOL, rank, dims);
    if (!out)
        return ox_errorf(c->err, OX_ENOMEM, "%s: cannot allocate output", name);
    if (out->numel == 0)
        return OX_OK;
    const void *pa = ox_tensor_data(a), *pb = ox_tensor_data(b);
    if (!pa || !pb)
        return ox_errorf(c->err, OX_EINVAL, "%s: tensor without data", name);
    run2(a, pa, b, pb, ox_tensor_mutable_data(out), 1, 1, rank, dims, fn, NULL, c->pool);
    return OX_OK;
}

ox_status ox__k_And(ox_kernel_ctx *c) { return logic(c, and_b, "And"); }
ox_status ox__k_Or(ox_kernel_ctx *c) { return logic(c, or_b, "Or"); }
ox_status ox__k_Xor(ox_kernel_ctx *c) { return logic(c, xor_b, "Xor"); }

ox_status ox__k_Pow(ox_kernel_ctx *c)
{
    ox_status st = ox__need_inputs(c, 2);
    if (st)
        return st;
    const ox_tensor *a = ox_kernel_in(c, 0), *b = ox_kernel_in(c, 1);
    ox_tensor view;
    b = legacy_b(c, a, b, &view);
    ox_dtype ct = ox__compute_type(a->dtype);
    /* integer bases are raised in double and truncated back, which is what
     * the reference does for int ** float */
    if (ct == OX_DT_INT64 || ct == OX_DT_UINT64)
        ct = OX_DT_DOUBLE;
    const binop *op = &op_pow;
    if (b->numel == 1 && b->dtype != OX_DT_STRING && ox_tensor_data(b)) {
        double e = ox_tensor_get_f64(b, 0);
        if (e == 2.0)
            op = &op_sq;
        else if (e == 3.0)
            op = &op_cube;
    }
    return binary(c, op, a, b, ct, a->dtype);
}

ox_status ox__k_PRelu(ox_kernel_ctx *c)
{
    ox_status st = ox__need_inputs(c, 2);
    if (st)
        return st;
    const ox_tensor *x = ox_kernel_in(c, 0), *slope = ox_kernel_in(c, 1);
    int rank;
    int64_t dims[OX_MAX_RANK];
    ox_tensor view;
    /* Exporters for opset < 7 give a per-channel slope as [C]: it applies
     * along axis 1 ([C, 1, ..., 1] in today's terms). */
    if (slope->rank == 1 && x->rank >= 2 && slope->dims[0] == x->dims[1] &&
        slope->dims[0] != x->dims[x->rank - 1]) {
        view = *slope;
        view.rank = x->rank - 1;
        for (int d = 1; d < view.rank; d++)
            view.dims[d] = 1;
        slope = &view;
    }
    const ox_tensor *ab[2] = {x, slope};
    bool ok = ox__bcast_shape(2, ab, &rank, dims) && rank == x->rank;
    for (int d = 0; ok && d < rank; d++)
        ok = dims[d] == x->dims[d];
    if (!ok)
        return ox_errorf(c->err, OX_ESHAPE, "PRelu: slope does not broadcast to X");
    return binary(c, &op_prelu, x, slope, ox__compute_type(x->dtype), x->dtype);
}

/* ---- SwiGLU: Swish(A) * B ----------------------------------------------- */

static void swiglu_f32(int64_t n, char *const *p, const int64_t *s, void *ud)
{
    const float al = (float)*(const double *)ud;
    float *o = (float *)p[0];
    const float *a = (const float *)p[1], *b = (const float *)p[2];
    for (int64_t i = 0; i < n; i++) {
        float x = a[i * s[1]];
        o[i] = x / (1.0f + ox__expf(-al * x)) * b[i * s[2]];
    }
}

static void swiglu_f64(int64_t n, char *const *p, const int64_t *s, void *ud)
{
    const double al = *(const double *)ud;
    double *o = (double *)p[0];
    const double *a = (const double *)p[1], *b = (const double *)p[2];
    for (int64_t i = 0; i < n; i++) {
        double x = a[i * s[1]];
        o[i] = x / (1.0 + exp(-al * x)) * b[i * s[2]];
    }
}

ox_status ox__k_SwiGLU(ox_kernel_ctx *c)
{
    ox_status st = ox__need_inputs(c, 2);
    if (st)
        return st;
    const ox_tensor *a = ox_kernel_in(c, 0), *b = ox_kernel_in(c, 1);
    ox_dtype ct = ox__compute_type(a->dtype);
    if (ct != OX_DT_FLOAT && ct != OX_DT_DOUBLE)
        return ox_errorf(c->err, OX_EUNSUPPORTED, "SwiGLU: type %s not supported",
                         ox_dtype_name(a->dtype));
    int rank;
    int64_t dims[OX_MAX_RANK];
    const ox_tensor *ab[2] = {a, b};
    if (!ox__bcast_shape(2, ab, &rank, dims))
        return ox_errorf(c->err, OX_ESHAPE, "SwiGLU: shapes do not broadcast");
    ox_tensor *out = ox_kernel_output(c, 0, a->dtype, rank, dims);
    if (!out)
        return ox_errorf(c->err, OX_ENOMEM, "SwiGLU: cannot allocate output");
    if (out->numel == 0)
        return OX_OK;
    double alpha = ox_node_attr_f(c->node, "alpha", 1.0f);
    void *ta = NULL, *tb = NULL, *to = NULL;
    const void *pa = ox__as_type(a, ct, &ta, c->err);
    const void *pb = pa ? ox__as_type(b, ct, &tb, c->err) : NULL;
    void *po = pb ? ox__out_as_type(out, ct, &to, c->err) : NULL;
    if (!po) {
        st = c->err && c->err->status ? c->err->status : OX_ENOMEM;
    } else {
        run2(a, pa, b, pb, po, ox__dtype_size(ct), ox__dtype_size(ct), rank, dims,
             ct == OX_DT_FLOAT ? swiglu_f32 : swiglu_f64, &alpha, c->pool);
        st = ox__finish_out(out, ct, to, c->err);
        to = NULL;
    }
    free(ta);
    free(tb);
    free(to);
    return st;
}

/* ---- variadic: Sum, Mean, Max, Min -------------------------------------- */

static void copy_inner(int64_t n, char *const *p, const int64_t *s, void *ud)
{
    size_t es = *(const size_t *)ud;
    if (s[1]) {
        memcpy(p[0], p[1], (size_t)n * es);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        memcpy(p[0] + (size_t)i * es, p[1], es);
}

static void scale_f32(float *d, int64_t n, float k)
{
    for (int64_t i = 0; i < n; i++)
        d[i] *= k;
}

static ox_status variadic(ox_kernel_ctx *c, const binop *op, bool mean)
{
    const char *name = op->name;
    if (c->n_in < 1 || c->n_out < 1)
        return ox_errorf(c->err, OX_EINVAL, "%s: needs at least one input", name);
    const ox_tensor *ts[64];
    int k = c->n_in;
    if (k > 64)
        return ox_errorf(c->err, OX_EUNSUPPORTED, "%s: more than 64 inputs", name);
    for (int i = 0; i < k; i++) {
        ts[i] = ox_kernel_in(c, i);
        if (!ts[i])
            return ox_errorf(c->err, OX_EINVAL, "%s: input %d missing", name, i);
    }
    if (k == 2 && !mean)
        return binary(c, op, ts[0], ts[1], ox__compute_type(ts[0]->dtype),
                      ts[0]->dtype);
    int rank;
    int64_t dims[OX_MAX_RANK];
    if (!ox__bcast_shape(k, ts, &rank, dims))
        return ox_errorf(c->err, OX_ESHAPE, "%s: shapes do not broadcast", name);
    ox_dtype dt = ts[0]->dtype;
    ox_dtype ct = ox__compute_type(dt);
    ox__ew_inner_fn fn = pick(op, ct);
    if (!fn)
        return ox_errorf(c->err, OX_EUNSUPPORTED, "%s: type %s not supported",
                         name, ox_dtype_name(dt));
    ox_tensor *out = ox_kernel_output(c, 0, dt, rank, dims);
    if (!out)
        return ox_errorf(c->err, OX_ENOMEM, "%s: cannot allocate output", name);
    if (out->numel == 0)
        return OX_OK;
    void *to = NULL;
    void *po = ox__out_as_type(out, ct, &to, c->err);
    if (!po)
        return c->err && c->err->status ? c->err->status : OX_ENOMEM;
    size_t es = ox__dtype_size(ct);
    ox_status st = OX_OK;
    /* the accumulator has the output shape; fold each input into it */
    ox_tensor acc_shape;
    memset(&acc_shape, 0, sizeof acc_shape);
    acc_shape.rank = rank;
    memcpy(acc_shape.dims, dims, sizeof(int64_t) * (size_t)rank);
    for (int i = 0; i < k && !st; i++) {
        void *tmp = NULL;
        const void *pi = ox__as_type(ts[i], ct, &tmp, c->err);
        if (!pi) {
            st = c->err && c->err->status ? c->err->status : OX_ENOMEM;
            break;
        }
        if (i == 0) {
            int ir[1] = {ts[0]->rank};
            const int64_t *id[1] = {ts[0]->dims};
            void *ptr[2] = {po, (void *)pi};
            size_t esz[2] = {es, es};
            ox__bcast_run(rank, dims, 1, ir, id, ptr, esz, copy_inner, &es, c->pool);
        } else {
            run2(&acc_shape, po, ts[i], pi, po, es, es, rank, dims, fn, NULL, c->pool);
        }
        free(tmp);
    }
    if (!st && mean) {
        int64_t n = out->numel;
        if (ct == OX_DT_FLOAT) {
            scale_f32(po, n, 1.0f / (float)k);
        } else if (ct == OX_DT_DOUBLE) {
            double *d = po;
            for (int64_t i = 0; i < n; i++)
                d[i] /= k;
        } else if (ct == OX_DT_INT64) {
            int64_t *d = po;
            for (int64_t i = 0; i < n; i++)
                d[i] /= k;
        } else {
            uint64_t *d = po;
            for (int64_t i = 0; i < n; i++)
                d[i] /= (uint64_t)k;
        }
    }
    if (st) {
        free(to);
        return st;
    }
    return ox__finish_out(out, ct, to, c->err);
}

ox_status ox__k_Sum(ox_kernel_ctx *c) { return variadic(c, &op_add, false); }
ox_status ox__k_Mean(ox_kernel_ctx *c) { return variadic(c, &op_add, true); }
ox_status ox__k_Max(ox_kernel_ctx *c) { return variadic(c, &op_max, false); }
ox_status ox__k_Min(ox_kernel_ctx *c) { return variadic(c, &op_min, false); }

/* ---- Where ------------------------------------------------------------------ */

#define WHERE_INNER(NAME, T)                                                \
    static void NAME(int64_t n, char *const *p, const int64_t *s, void *ud) \
    {                                                                       \
        (void)ud;                                                           \
        T *o = (T *)p[0];                                                   \
        const uint8_t *cd = (const uint8_t *)p[1];                          \
        const T *x = (const T *)p[2];                                       \
        const T *y = (const T *)p[3];                                       \
        if (s[1] && s[2] && s[3]) {                                         \
            for (int64_t i = 0; i < n; i++)                                 \
                o[i] = cd[i] ? x[i] : y[i];                                 \
        } else {                                                            \
            for (int64_t i = 0; i < n; i++)                                 \
                o[i] = cd[i * s[1]] ? x[i * s[2]] : y[i * s[3]];            \
        }                                                                   \
    }
WHERE_INNER(where8, uint8_t)
WHERE_INNER(where16, uint16_t)
WHERE_INNER(where32, uint32_t)
WHERE_INNER(where64, uint64_t)

typedef struct where_str_ud {
    bool oom;
} where_str_ud;

static void where_str(int64_t n, char *const *p, const int64_t *s, void *ud)
{
    where_str_ud *u = ud;
    ox_bytes *o = (ox_bytes *)p[0];
    const uint8_t *cd = (const uint8_t *)p[1];
    const ox_bytes *x = (const ox_bytes *)p[2];
    const ox_bytes *y = (const ox_bytes *)p[3];
    for (int64_t i = 0; i < n; i++) {
        const ox_bytes *v = cd[i * s[1]] ? &x[i * s[2]] : &y[i * s[3]];
        char *d = malloc(v->len + 1);
        if (!d) {
            u->oom = true;
            continue;
        }
        if (v->len)
            memcpy(d, v->data, v->len);
        d[v->len] = '\0';
        free(o[i].data);
        o[i].data = d;
        o[i].len = v->len;
    }
}

ox_status ox__k_Where(ox_kernel_ctx *c)
{
    ox_status st = ox__need_inputs(c, 3);
    if (st)
        return st;
    const ox_tensor *cond = ox_kernel_in(c, 0), *x = ox_kernel_in(c, 1),
                    *y = ox_kernel_in(c, 2);
    if (cond->dtype != OX_DT_BOOL)
        return ox_errorf(c->err, OX_EINVAL, "Where: condition must be bool");
    if (x->dtype != y->dtype)
        return ox_errorf(c->err, OX_EINVAL, "Where: X is %s but Y is %s",
                         ox_dtype_name(x->dtype), ox_dtype_name(y->dtype));
    const ox_tensor *ts[3] = {cond, x, y};
    int rank;
    int64_t dims[OX_MAX_RANK];
    if (!ox__bcast_shape(3, ts, &rank, dims))
        return ox_errorf(c->err, OX_ESHAPE, "Where: shapes do not broadcast");
    size_t es = ox__dtype_size(x->dtype);
    ox__ew_inner_fn fn;
    where_str_ud ud = {false};
    switch (x->dtype == OX_DT_STRING ? 0 : es) {
    case 0: fn = x->dtype == OX_DT_STRING ? where_str : NULL; break;
    case 1: fn = where8; break;
    case 2: fn = where16; break;
    case 4: fn = where32; break;
    case 8: fn = where64; break;
    default: fn = NULL; break;
    }
    if (!fn)
        return ox_errorf(c->err, OX_EUNSUPPORTED, "Where: type %s not supported",
                         ox_dtype_name(x->dtype));
    ox_tensor *out = ox_kernel_output(c, 0, x->dtype, rank, dims);
    if (!out)
        return ox_errorf(c->err, OX_ENOMEM, "Where: cannot allocate output");
    if (out->numel == 0)
        return OX_OK;
    bool str = x->dtype == OX_DT_STRING;
    const void *pc = ox_tensor_data(cond);
    const void *px = str ? (const void *)x->strings : ox_tensor_data(x);
    const void *py = str ? (const void *)y->strings : ox_tensor_data(y);
    void *po = str ? (void *)out->strings : ox_tensor_mutable_data(out);
    if (!pc || !px || !py || !po)
        return ox_errorf(c->err, OX_EINVAL, "Where: tensor without data");
    int ir[3] = {cond->rank, x->rank, y->rank};
    const int64_t *id[3] = {cond->dims, x->dims, y->dims};
    void *ptr[4] = {po, (void *)pc, (void *)px, (void *)py};
    size_t esz[4] = {es, 1, es, es};
    ox__bcast_run(rank, dims, 3, ir, id, ptr, esz, fn, &ud,
                  x->dtype == OX_DT_STRING ? NULL : c->pool);
    if (ud.oom)
        return ox_errorf(c->err, OX_ENOMEM, "Where: out of memory");
    return OX_OK;
}
