/* Inference for elementwise operators: unary, binary with numpy
 * broadcasting, comparisons, Where, Cast. Known values are evaluated too,
 * with the few symbolic rules exporter shape chains need (x*1, x+0, a
 * dim compared with a negative number). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/infer_internal.h"

/* ---- broadcasting of known values ---------------------------------------- */

static bool bcast_dims(int ra, const int64_t *a, int rb, const int64_t *b,
                       int *ro, int64_t *o)
{
    int r = ra > rb ? ra : rb;
    if (r > OX_MAX_RANK)
        return false;
    for (int i = 0; i < r; i++) {
        int ia = i - (r - ra), ib = i - (r - rb);
        int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
        if (da == db || db == 1)
            o[i] = da;
        else if (da == 1)
            o[i] = db;
        else
            return false;
    }
    *ro = r;
    return true;
}

/* Flat index into a tensor of dims (rank rk) broadcast to out dims. */
static int64_t bcast_src(int64_t flat, int ro, const int64_t *od, int rk, const int64_t *dims)
{
    int64_t src = 0, stride = 1;
    for (int i = ro - 1; i >= 0; i--) {
        int64_t idx = flat % od[i];
        flat /= od[i];
        int j = i - (ro - rk);
        if (j >= 0) {
            if (dims[j] != 1)
                src += idx * stride;
            stride *= dims[j];
        }
    }
    return src;
}

enum { K_ADD, K_SUB, K_MUL, K_DIV, K_MOD, K_FMOD, K_POW, K_EQ, K_LT, K_GT, K_LE, K_GE,
       K_AND, K_OR, K_XOR, K_MAX, K_MIN, K_BAND, K_BOR, K_BXOR, K_NONE };

static int binop_of(const char *op)
{
    static const struct { const char *n; int k; } map[] = {
        { "Add", K_ADD }, { "Sub", K_SUB }, { "Mul", K_MUL }, { "Div", K_DIV },
        { "Mod", K_MOD }, { "Pow", K_POW }, { "Equal", K_EQ }, { "Less", K_LT },
        { "Greater", K_GT }, { "LessOrEqual", K_LE }, { "GreaterOrEqual", K_GE },
        { "And", K_AND }, { "Or", K_OR }, { "Xor", K_XOR }, { "Max", K_MAX },
        { "Min", K_MIN }, { "BitwiseAnd", K_BAND }, { "BitwiseOr", K_BOR },
        { "BitwiseXor", K_BXOR }, { "Sum", K_ADD },
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(map[i].n, op))
            return map[i].k;
    return K_NONE;
}

static bool is_cmp(int k)
{
    return k >= K_EQ && k <= K_XOR;
}

/* Computes one known element; false when undefined (division by zero). */
static bool eval_i(int k, int64_t a, int64_t b, int64_t *r)
{
    switch (k) {
    case K_ADD: *r = (int64_t)((uint64_t)a + (uint64_t)b); return true;
    case K_SUB: *r = (int64_t)((uint64_t)a - (uint64_t)b); return true;
    case K_MUL: *r = (int64_t)((uint64_t)a * (uint64_t)b); return true;
    case K_DIV:
        if (b == 0 || (a == INT64_MIN && b == -1))
            return false;
        *r = a / b;   /* ONNX integer Div truncates like C */
        return true;
    case K_MOD:
        if (b == 0 || (a == INT64_MIN && b == -1))
            return false;
        *r = a % b;
        if (*r != 0 && ((*r < 0) != (b < 0)))
            *r += b;   /* integer Mod takes the divisor's sign */
        return true;
    case K_FMOD:
        if (b == 0 || (a == INT64_MIN && b == -1))
            return false;
        *r = a % b;
        return true;
    case K_POW: {
        double p = pow((double)a, (double)b);
        if (!(p == p) || p > 9.2e18 || p < -9.2e18)
            return false;
        *r = (int64_t)p;
        return true;
    }
    case K_EQ: *r = a == b; return true;
    case K_LT: *r = a < b; return true;
    case K_GT: *r = a > b; return true;
    case K_LE: *r = a <= b; return true;
    case K_GE: *r = a >= b; return true;
    case K_AND: *r = a && b; return true;
    case K_OR: *r = a || b; return true;
    case K_XOR: *r = (!!a) ^ (!!b); return true;
    case K_MAX: *r = a > b ? a : b; return true;
    case K_MIN: *r = a < b ? a : b; return true;
    case K_BAND: *r = a & b; return true;
    case K_BOR: *r = a | b; return true;
    case K_BXOR: *r = a ^ b; return true;
    default: return false;
    }
}

static bool eval_f(int k, double a, double b, double *r)
{
    switch (k) {
    case K_ADD: *r = a + b; return true;
    case K_SUB: *r = a - b; return true;
    case K_MUL: *r = a * b; return true;
    case K_DIV: *r = a / b; return true;
    case K_MOD: case K_FMOD: *r = fmod(a, b); return true;
    case K_POW: *r = pow(a, b); return true;
    case K_EQ: *r = a == b; return true;
    case K_LT: *r = a < b; return true;
    case K_GT: *r = a > b; return true;
    case K_LE: *r = a <= b; return true;
    case K_GE: *r = a >= b; return true;
    case K_MAX: *r = a > b ? a : b; return true;
    case K_MIN: *r = a < b ? a : b; return true;
    default: return false;
    }
}

/* Symbolic rules: a is a symbol (a dim, so >= 0) and b is known, or the
 * reverse when swapped. Returns 1 with *sym set (result is that symbol),
 * 2 with *r set (result known), 0 when nothing follows. */
static int eval_sym(int k, const char *sa, const ox__kv *bk, int64_t bi, bool a_first,
                    const char **sym, int64_t *r)
{
    if (!bk->known[bi] || bk->fv)
        return 0;
    int64_t b = bk->iv[bi];
    switch (k) {
    case K_ADD: if (b == 0) { *sym = sa; return 1; } return 0;
    case K_SUB: if (b == 0 && a_first) { *sym = sa; return 1; } return 0;
    case K_MUL: if (b == 1) { *sym = sa; return 1; }
        if (b == 0) { *r = 0; return 2; } return 0;
    case K_DIV: if (b == 1 && a_first) { *sym = sa; return 1; } return 0;
    case K_EQ: if (b < 0) { *r = 0; return 2; } return 0;
    case K_MAX: if (b <= 0) { *sym = sa; return 1; } return 0;
    case K_MIN: if (b <= 0) { *r = b; return 2; } return 0;
    case K_LT:   /* s < b is false for b <= 0; b < s is true for b < 0 */
        if (a_first && b <= 0) { *r = 0; return 2; }
        if (!a_first && b < 0) { *r = 1; return 2; }
        return 0;
    case K_GE:   /* s >= b is true for b <= 0; b >= s is false for b < 0 */
        if (a_first && b <= 0) { *r = 1; return 2; }
        if (!a_first && b < 0) { *r = 0; return 2; }
        return 0;
    default: return 0;
    }
}

static ox__kv *kv_binary(int k, const ox__kv *a, const ox__kv *b, ox_dtype out_dt)
{
    int ro;
    int64_t od[OX_MAX_RANK];
    if (!bcast_dims(a->rank, a->dims, b->rank, b->dims, &ro, od))
        return NULL;
    ox__kv *o = ox__kv_new(out_dt, ro, od);
    if (!o)
        return NULL;
    bool flt = a->fv || b->fv;
    for (int64_t i = 0; i < o->n; i++) {
        int64_t ia = bcast_src(i, ro, od, a->rank, a->dims);
        int64_t ib = bcast_src(i, ro, od, b->rank, b->dims);
        if (a->known[ia] && b->known[ib]) {
            if (flt) {
                double r;
                if (eval_f(k, ox__kv_get_f(a, ia), ox__kv_get_f(b, ib), &r))
                    ox__kv_set_f(o, i, r);
            } else {
                int64_t r;
                if (eval_i(k, a->iv[ia], b->iv[ib], &r))
                    ox__kv_set_i(o, i, r);
            }
            continue;
        }
        const char *sa = a->sym && !a->known[ia] ? a->sym[ia] : NULL;
        const char *sb = b->sym && !b->known[ib] ? b->sym[ib] : NULL;
        const char *sym = NULL;
        int64_t r = 0;
        int res = 0;
        if (sa && sb) {
            if (!strcmp(sa, sb)) {
                if (k == K_EQ || k == K_LE || k == K_GE) { r = 1; res = 2; }
                else if (k == K_LT || k == K_GT) { r = 0; res = 2; }
                else if (k == K_SUB) { r = 0; res = 2; }
                else if (k == K_DIV) { r = 1; res = 2; }
                else if (k == K_MAX || k == K_MIN) { sym = sa; res = 1; }
            }
        } else if (sa) {
            res = eval_sym(k, sa, b, ib, true, &sym, &r);
        } else if (sb) {
            res = eval_sym(k, sb, a, ia, false, &sym, &r);
        }
        if (res == 1 && !is_cmp(k))
            ox__kv_set_sym(o, i, sym);
        else if (res == 2)
            ox__kv_set_i(o, i, r);
    }
    return o;
}

/* ---- type helpers ----------------------------------------------------------- */

/* Broadcasts the shapes of the listed inputs (absent ones are skipped). */
static ox_type *bcast_inputs(ox_infer_node_ctx *c, const int *idx, int n, ox_dtype elem,
                             bool *conflict)
{
    *conflict = false;
    const ox_type *acc = NULL;
    ox_type *cur = NULL;
    for (int j = 0; j < n; j++) {
        if (!ox__has_in(c, idx[j]))
            continue;
        const ox_type *t = ox__in_shape(c, idx[j]);
        if (!t) {
            ox_type_free(cur);
            return ox__tt(elem, -1);
        }
        if (!acc) {
            cur = ox__tt_copy(t, elem);
            acc = cur;
            continue;
        }
        int r = acc->rank > t->rank ? acc->rank : t->rank;
        ox_type *nt = ox__tt(elem, r);
        if (!nt) {
            ox_type_free(cur);
            return NULL;
        }
        if (!ox_infer_broadcast(acc, t, nt))
            *conflict = true;
        ox_type_free(cur);
        cur = nt;
        acc = cur;
    }
    if (!cur)
        return ox__tt(elem, -1);
    cur->elem = elem;
    return cur;
}

static ox_status finish_bcast(ox_infer_node_ctx *c, ox_type *t, bool conflict)
{
    if (!t)
        return ox_errorf(c->err, OX_ENOMEM, "out of memory");
    ox__set_out(c, 0, t);
    if (conflict)
        return ox__fail(c, "input shapes do not broadcast");
    return OX_OK;
}

/* ---- unary ---------------------------------------------------------------- */

static ox__kv *kv_unary(const char *op, const ox__kv *a)
{
    enum { U_ID, U_NEG, U_ABS, U_NOT, U_SQRT, U_FLOOR, U_CEIL, U_RELU, U_SIGN, U_RECIP,
           U_ROUND, U_EXP, U_LOG, U_NONE } u = U_NONE;
    static const char *names[] = { "Identity", "Neg", "Abs", "Not", "Sqrt", "Floor", "Ceil",
                                   "Relu", "Sign", "Reciprocal", "Round", "Exp", "Log" };
    for (int i = 0; i < U_NONE; i++)
        if (!strcmp(op, names[i]))
            u = i;
    if (u == U_NONE)
        return NULL;
    ox__kv *o = ox__kv_new(a->dt, a->rank, a->dims);
    if (!o)
        return NULL;
    for (int64_t i = 0; i < a->n; i++) {
        if (!a->known[i]) {
            if (a->sym && a->sym[i] && (u == U_ID || u == U_ABS || u == U_RELU ||
                                        u == U_FLOOR || u == U_CEIL || u == U_ROUND))
                ox__kv_set_sym(o, i, a->sym[i]);
            continue;
        }
        if (a->fv) {
            double x = a->fv[i], r;
            switch (u) {
            case U_NEG: r = -x; break;
            case U_ABS: r = fabs(x); break;
            case U_SQRT: r = sqrt(x); break;
            case U_FLOOR: r = floor(x); break;
            case U_CEIL: r = ceil(x); break;
            case U_RELU: r = x > 0 ? x : 0; break;
            case U_SIGN: r = (x > 0) - (x < 0); break;
            case U_RECIP: r = 1.0 / x; break;
            case U_ROUND: r = nearbyint(x); break;
            case U_EXP: r = exp(x); break;
            case U_LOG: r = log(x); break;
            default: r = x; break;
            }
            ox__kv_set_f(o, i, r);
        } else {
            int64_t x = a->iv[i], r;
            switch (u) {
            case U_NEG: r = (int64_t)(0 - (uint64_t)x); break;
            case U_ABS: r = x < 0 ? (int64_t)(0 - (uint64_t)x) : x; break;
            case U_NOT: r = !x; break;
            case U_RELU: r = x > 0 ? x : 0; break;
            case U_SIGN: r = (x > 0) - (x < 0); break;
            case U_SQRT: case U_RECIP: case U_EXP: case U_LOG:
                continue;
            default: r = x; break;
            }
            ox__kv_set_i(o, i, r);
        }
    }
    return o;
}

ox_status ox__infer_unary(ox_infer_node_ctx *c)
{
    const ox_type *t = ox__in_type(c, 0);
    if (!t)
        return OX_OK;
    ox__set_out(c, 0, ox_type_clone(t));
    const ox__kv *k = ox__in_kv(c, 0);
    if (k && t->kind == OX_TYPE_TENSOR)
        ox__set_kv(c, 0, kv_unary(c->n->op_type, k));
    return OX_OK;
}

ox_status ox__infer_unary_bool(ox_infer_node_ctx *c)
{
    const ox_type *t = ox__in_type(c, 0);
    if (!t)
        return ox__set_out(c, 0, ox__tt(OX_DT_BOOL, -1));
    return ox__set_out(c, 0, ox__tt_copy(t, OX_DT_BOOL));
}

ox_status ox__infer_cum(ox_infer_node_ctx *c)
{
    return ox__pass_through(c, 0, 0);
}

ox_status ox__infer_trilu(ox_infer_node_ctx *c)
{
    return ox__pass_through(c, 0, 0);
}

ox_status ox__infer_mean_var_norm(ox_infer_node_ctx *c)
{
    return ox__pass_through(c, 0, 0);
}

ox_status ox__infer_lp_norm(ox_infer_node_ctx *c)
{
    return ox__pass_through(c, 0, 0);
}

ox_status ox__infer_group_norm(ox_infer_node_ctx *c)
{
    return ox__pass_through(c, 0, 0);
}

ox_status ox__infer_reverse_sequence(ox_infer_node_ctx *c)
{
    return ox__pass_through(c, 0, 0);
}

ox_status ox__infer_binarizer(ox_infer_node_ctx *c)
{
    return ox__pass_through(c, 0, 0);
}

ox_status ox__infer_scatter(ox_infer_node_ctx *c)
{
    return ox__pass_through(c, 0, 0);
}

ox_status ox__infer_tensor_scatter(ox_infer_node_ctx *c)
{
    return ox__pass_through(c, 0, 0);
}

/* ---- binary ----------------------------------------------------------------- */

static ox_status binary_common(ox_infer_node_ctx *c, ox_dtype elem, int nin)
{
    int idx[64];
    if (nin > 64)
        nin = 64;
    for (int i = 0; i < nin; i++)
        idx[i] = i;
    bool conflict = false;
    ox_type *t;
    if (c->opset < 7 && ox_node_attr_i(c->n, "broadcast", 0) && nin == 2) {
        /* Legacy broadcast: B fits into A; the result has A's shape. */
        t = ox__tt_copy(ox__in_shape(c, 0), elem);
    } else {
        t = bcast_inputs(c, idx, nin, elem, &conflict);
    }
    ox_status rc = finish_bcast(c, t, conflict);
    if (nin >= 2) {
        int k = binop_of(c->n->op_type);
        if (k == K_MOD && ox_node_attr_i(c->n, "fmod", 0))
            k = K_FMOD;
        const ox__kv *a = ox__in_kv(c, 0);
        if (k != K_NONE && a) {
            ox__kv *acc = NULL;
            const ox__kv *cur = a;
            for (int i = 1; i < nin && cur; i++) {
                const ox__kv *b = ox__in_kv(c, i);
                ox__kv *nk = b ? kv_binary(k, cur, b, elem ? elem : a->dt) : NULL;
                ox__kv_free(acc);
                acc = nk;
                cur = nk;
            }
            if (acc)
                ox__set_kv(c, 0, acc);
        }
    }
    return rc;
}

ox_status ox__infer_binary(ox_infer_node_ctx *c)
{
    return binary_common(c, ox__in_elem(c, 0), 2);
}

ox_status ox__infer_compare(ox_infer_node_ctx *c)
{
    return binary_common(c, OX_DT_BOOL, 2);
}

ox_status ox__infer_logical(ox_infer_node_ctx *c)
{
    return binary_common(c, OX_DT_BOOL, 2);
}

ox_status ox__infer_variadic(ox_infer_node_ctx *c)
{
    ox_dtype e = OX_DT_UNDEFINED;
    for (int i = 0; i < ox__nin(c) && !e; i++)
        e = ox__in_elem(c, i);
    /* Max/Min/Sum values are evaluated; Mean has no binop (K_NONE). */
    return binary_common(c, e, ox__nin(c));
}

ox_status ox__infer_string_concat(ox_infer_node_ctx *c)
{
    return binary_common(c, OX_DT_STRING, 2);
}

ox_status ox__infer_gelu_bias(ox_infer_node_ctx *c)
{
    return binary_common(c, ox__in_elem(c, 0), ox__nin(c) < 2 ? 1 : 2);
}

ox_status ox__infer_where(ox_infer_node_ctx *c)
{
    int idx[3] = { 0, 1, 2 };
    ox_dtype e = ox__in_elem(c, 1);
    if (!e)
        e = ox__in_elem(c, 2);
    bool conflict;
    ox_type *t = bcast_inputs(c, idx, 3, e, &conflict);
    ox_status rc = finish_bcast(c, t, conflict);
    const ox__kv *kc = ox__in_kv(c, 0), *kx = ox__in_kv(c, 1), *ky = ox__in_kv(c, 2);
    if (kc && kx && ky) {
        int r1, ro;
        int64_t d1[OX_MAX_RANK], od[OX_MAX_RANK];
        if (bcast_dims(kc->rank, kc->dims, kx->rank, kx->dims, &r1, d1) &&
            bcast_dims(r1, d1, ky->rank, ky->dims, &ro, od)) {
            ox__kv *o = ox__kv_new(kx->dt, ro, od);
            for (int64_t i = 0; o && i < o->n; i++) {
                int64_t ic = bcast_src(i, ro, od, kc->rank, kc->dims);
                if (!kc->known[ic])
                    continue;
                if (ox__kv_get_i(kc, ic))
                    ox__kv_copy_elem(o, i, kx, bcast_src(i, ro, od, kx->rank, kx->dims));
                else
                    ox__kv_copy_elem(o, i, ky, bcast_src(i, ro, od, ky->rank, ky->dims));
            }
            ox__set_kv(c, 0, o);
        }
    }
    return rc;
}

/* ---- casts ------------------------------------------------------------------- */

static void cast_kv(ox_infer_node_ctx *c, ox_dtype to)
{
    const ox__kv *k = ox__in_kv(c, 0);
    if (!k || to == OX_DT_STRING || !ox_dtype_valid(to) || ox_dtype_bits(to) == 0)
        return;
    ox__kv *o = ox__kv_new(to, k->rank, k->dims);
    if (!o)
        return;
    bool to_int = !ox_dtype_is_float(to);
    for (int64_t i = 0; i < k->n; i++) {
        if (k->known[i]) {
            double f = ox__kv_get_f(k, i);
            if (to_int && k->fv)
                f = trunc(f);
            if (k->fv || o->fv)
                ox__kv_set_f(o, i, f);
            else
                ox__kv_set_i(o, i, k->iv[i]);
        } else if (k->sym && k->sym[i] && to_int && to != OX_DT_BOOL) {
            ox__kv_set_sym(o, i, k->sym[i]);
        }
    }
    ox__set_kv(c, 0, o);
}

ox_status ox__infer_cast(ox_infer_node_ctx *c)
{
    ox_dtype to = ox__attr_dtype(c->n, "to", OX_DT_UNDEFINED);
    if (!to)
        return ox__fail(c, "missing or invalid 'to' attribute");
    ox__set_out(c, 0, ox__tt_copy(ox__in_shape(c, 0), to));
    cast_kv(c, to);
    return OX_OK;
}

ox_status ox__infer_castlike(ox_infer_node_ctx *c)
{
    ox_dtype to = ox__in_elem(c, 1);
    ox__set_out(c, 0, ox__tt_copy(ox__in_shape(c, 0), to));
    if (to)
        cast_kv(c, to);
    return OX_OK;
}

ox_status ox__infer_bitcast(ox_infer_node_ctx *c)
{
    ox_dtype to = ox__attr_dtype(c->n, "to", OX_DT_UNDEFINED);
    ox_dtype from = ox__in_elem(c, 0);
    const ox_type *t = ox__in_shape(c, 0);
    if (!to)
        return ox__fail(c, "missing or invalid 'to' attribute");
    int bf = from ? ox_dtype_bits(from) : 0, bt = ox_dtype_bits(to);
    if (!t || !bf || bf == bt)
        return ox__set_out(c, 0, ox__tt_copy(t, to));
    /* Different widths: the last dim absorbs the ratio. */
    ox_type *o = ox__tt_copy(t, to);
    if (o && o->rank > 0 && ox__dim_known(t, t->rank - 1) && bt)
    {
        int64_t bits = ox__mul(ox__dimv(t, t->rank - 1), bf);
        ox__dim_set(o, o->rank - 1, bits >= 0 ? bits / bt : -1);
    }
    return ox__set_out(c, 0, o);
}
