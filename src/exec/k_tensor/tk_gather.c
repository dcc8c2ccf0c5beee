/* Index-driven kernels: Gather, GatherElements, GatherND, ScatterElements
 * (and the old Scatter), ScatterND, OneHot, NonZero. Every index is checked
 * against its dimension (negative ones count from the end) before use. */
#include "tk_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static ox_status bad_index(ox_kernel_ctx *c, int64_t v, int64_t dim)
{
    return ox_errorf(c->err, OX_ERANGE, "%s: index %lld out of range for dim %lld",
                     ox_tk_op(c), (long long)v, (long long)dim);
}

/* Normalizes a possibly negative index; false when out of range. */
static inline bool norm_index(int64_t *v, int64_t dim)
{
    if (*v < 0)
        *v += dim;
    return *v >= 0 && *v < dim;
}

static ox_status need_int_indices(ox_kernel_ctx *c, const ox_tensor *t)
{
    if (!ox_dtype_is_int(t->dtype))
        return ox_errorf(c->err, OX_EINVAL, "%s: indices must be integers", ox_tk_op(c));
    return OX_OK;
}

static int64_t prod(const int64_t *d, int from, int to)
{
    int64_t p = 1;
    for (int i = from; i < to; i++)
        p *= d[i];
    return p;
}

ox_status ox_tk_gather(ox_kernel_ctx *c)
{
    const ox_tensor *x, *ix;
    ox_status st = ox_tk_need(c, 0, &x);
    if (st || (st = ox_tk_need(c, 1, &ix)) || (st = need_int_indices(c, ix)))
        return st;
    int r = x->rank, axis;
    if ((st = ox_tk_axis(c, ox_node_attr_i(c->node, "axis", 0), r, &axis)))
        return st;
    int q = ix->rank;
    if (r - 1 + q > OX_MAX_RANK)
        return ox_errorf(c->err, OX_ESHAPE, "Gather: output rank too large");
    int64_t od[OX_MAX_RANK];
    int k = 0;
    for (int i = 0; i < axis; i++)
        od[k++] = x->dims[i];
    for (int i = 0; i < q; i++)
        od[k++] = ix->dims[i];
    for (int i = axis + 1; i < r; i++)
        od[k++] = x->dims[i];
    int64_t D = x->dims[axis], ni = ix->numel;
    int64_t outer = prod(x->dims, 0, axis), inner = prod(x->dims, axis + 1, r);
    int64_t *idx = malloc(sizeof(int64_t) * (size_t)(ni ? ni : 1));
    if (!idx)
        return ox_errorf(c->err, OX_ENOMEM, "Gather: out of memory");
    for (int64_t i = 0; i < ni; i++) {
        idx[i] = ox_tk_i64(ix, i);
        if (!norm_index(&idx[i], D)) {
            int64_t v = ox_tk_i64(ix, i);
            free(idx);
            return bad_index(c, v, D);
        }
    }
    ox_tensor *y;
    if ((st = ox_tk_out(c, 0, x->dtype, k, od, &y))) {
        free(idx);
        return st;
    }
    ox_tk_layout l;
    ox_tk_layout_of(x->dtype, &l);
    if (inner == 1 && (l.es == 4 || l.es == 8)) { /* common: gathering scalars */
        const char *s = ox_tensor_data(x);
        char *d = ox_tensor_data(y);
        size_t es = (size_t)l.es;
        for (int64_t o = 0; o < outer; o++)
            for (int64_t i = 0; i < ni; i++)
                memcpy(d + (size_t)(o * ni + i) * es, s + (size_t)(o * D + idx[i]) * es,
                       es == 4 ? 4 : 8);
    } else {
        for (int64_t o = 0; o < outer; o++)
            for (int64_t i = 0; i < ni; i++)
                ox_tk_copy(y, (o * ni + i) * inner, x, (o * D + idx[i]) * inner, inner);
    }
    free(idx);
    return OX_OK;
}

/* Walks every element of `ix` (same rank as the data); for each calls
 * back with the linear position in ix and the data offset of the element
 * with the axis coordinate replaced by the index. */
typedef ox_status (*elem_fn)(ox_kernel_ctx *c, void *ctx, int64_t ipos, int64_t doff);

static ox_status walk_elements(ox_kernel_ctx *c, const int64_t *ddims, int r, int axis,
                               const ox_tensor *ix, elem_fn fn, void *ctx)
{
    int64_t ds[OX_MAX_RANK], k[OX_MAX_RANK] = {0};
    ox_tk_strides(r, ddims, ds);
    int64_t base = 0, D = ddims[axis];
    for (int64_t p = 0; p < ix->numel; p++) {
        int64_t v = ox_tk_i64(ix, p), n = v;
        if (!norm_index(&n, D))
            return bad_index(c, v, D);
        ox_status st = fn(c, ctx, p, base + n * ds[axis]);
        if (st)
            return st;
        for (int j = r - 1; j >= 0; j--) {
            k[j]++;
            if (j != axis)
                base += ds[j];
            if (k[j] < ix->dims[j])
                break;
            if (j != axis)
                base -= ds[j] * k[j];
            k[j] = 0;
        }
    }
    return OX_OK;
}

typedef struct {
    ox_tensor *y;
    const ox_tensor *src;
    int red;
} elem_ctx;

static ox_status gather_elem(ox_kernel_ctx *c, void *vctx, int64_t ipos, int64_t doff)
{
    (void)c;
    elem_ctx *e = vctx;
    ox_tk_copy(e->y, ipos, e->src, doff, 1);
    return OX_OK;
}

static ox_status check_same_rank(ox_kernel_ctx *c, const ox_tensor *x, const ox_tensor *ix,
                                 bool within)
{
    if (ix->rank != x->rank)
        return ox_errorf(c->err, OX_ESHAPE, "%s: indices rank differs from data rank",
                         ox_tk_op(c));
    if (within)
        for (int i = 0; i < x->rank; i++)
            if (ix->dims[i] > x->dims[i] && ix->numel > 0)
                return ox_errorf(c->err, OX_ESHAPE, "%s: indices dim %d exceeds data",
                                 ox_tk_op(c), i);
    return OX_OK;
}

ox_status ox_tk_gather_elements(ox_kernel_ctx *c)
{
    const ox_tensor *x, *ix;
    ox_status st = ox_tk_need(c, 0, &x);
    if (st || (st = ox_tk_need(c, 1, &ix)) || (st = need_int_indices(c, ix)) ||
        (st = check_same_rank(c, x, ix, false)))
        return st;
    int axis;
    if ((st = ox_tk_axis(c, ox_node_attr_i(c->node, "axis", 0), x->rank, &axis)))
        return st;
    for (int i = 0; i < x->rank; i++)
        if (i != axis && ix->dims[i] > x->dims[i] && ix->numel > 0)
            return ox_errorf(c->err, OX_ESHAPE, "GatherElements: indices dim %d exceeds data", i);
    ox_tensor *y;
    if ((st = ox_tk_out(c, 0, x->dtype, ix->rank, ix->dims, &y)))
        return st;
    elem_ctx e = {y, x, 0};
    return walk_elements(c, x->dims, x->rank, axis, ix, gather_elem, &e);
}

enum { RED_NONE, RED_ADD, RED_MUL, RED_MAX, RED_MIN };

static int parse_reduction(const ox_kernel_ctx *c)
{
    const char *s = ox_node_attr_s(c->node, "reduction", "none");
    return !strcmp(s, "none") ? RED_NONE : !strcmp(s, "add") ? RED_ADD
         : !strcmp(s, "mul") ? RED_MUL : !strcmp(s, "max") ? RED_MAX
         : !strcmp(s, "min") ? RED_MIN : -1;
}

/* y[di] = y[di] (op) u[ui] in the element type's arithmetic. */
static void reduce_into(ox_tensor *y, int64_t di, const ox_tensor *u, int64_t ui, int red)
{
    if (red == RED_NONE) {
        ox_tk_copy(y, di, u, ui, 1);
        return;
    }
    if (y->dtype == OX_DT_FLOAT) {
        float *a = (float *)ox_tensor_data(y) + di;
        float b;
        memcpy(&b, (const char *)ox_tensor_data(u) + 4 * ui, 4);
        *a = red == RED_ADD ? *a + b : red == RED_MUL ? *a * b
           : red == RED_MAX ? (b > *a ? b : *a) : (b < *a ? b : *a);
        return;
    }
    if (ox_dtype_is_float(y->dtype)) {
        double a = ox_tensor_get_f64(y, di), b = ox_tensor_get_f64(u, ui);
        a = red == RED_ADD ? a + b : red == RED_MUL ? a * b
          : red == RED_MAX ? fmax(a, b) : fmin(a, b);
        ox_tensor_set_f64(y, di, a);
        return;
    }
    int64_t a = ox_tensor_get_i64(y, di), b = ox_tensor_get_i64(u, ui);
    if (y->dtype == OX_DT_BOOL) /* logical or/and for add/mul */
        a = red == RED_ADD || red == RED_MAX ? (a || b) : (a && b);
    else
        a = red == RED_ADD ? (int64_t)((uint64_t)a + (uint64_t)b)
          : red == RED_MUL ? (int64_t)((uint64_t)a * (uint64_t)b)
          : red == RED_MAX ? (b > a ? b : a) : (b < a ? b : a);
    ox_tensor_set_i64(y, di, a);
}

static ox_status scatter_elem(ox_kernel_ctx *c, void *vctx, int64_t ipos, int64_t doff)
{
    (void)c;
    elem_ctx *e = vctx;
    reduce_into(e->y, doff, e->src, ipos, e->red);
    return OX_OK;
}

ox_status ox_tk_scatter_elements(ox_kernel_ctx *c)
{
    const ox_tensor *x, *ix, *u;
    ox_status st = ox_tk_need(c, 0, &x);
    if (st || (st = ox_tk_need(c, 1, &ix)) || (st = ox_tk_need(c, 2, &u)) ||
        (st = need_int_indices(c, ix)) || (st = check_same_rank(c, x, ix, false)))
        return st;
    int axis, red = parse_reduction(c);
    if (red < 0)
        return ox_errorf(c->err, OX_EINVAL, "%s: unknown reduction", ox_tk_op(c));
    if ((st = ox_tk_axis(c, ox_node_attr_i(c->node, "axis", 0), x->rank, &axis)))
        return st;
    if (u->rank != ix->rank || u->dtype != x->dtype)
        return ox_errorf(c->err, OX_ESHAPE, "%s: updates must match indices", ox_tk_op(c));
    for (int i = 0; i < x->rank; i++)
        if (u->dims[i] != ix->dims[i] || (i != axis && ix->dims[i] > x->dims[i]))
            return ox_errorf(c->err, OX_ESHAPE, "%s: indices/updates shape mismatch",
                             ox_tk_op(c));
    if (red != RED_NONE && !ox_tk_is_numeric(x->dtype))
        return ox_errorf(c->err, OX_EINVAL, "%s: reduction needs numbers", ox_tk_op(c));
    ox_tensor *y;
    if ((st = ox_tk_out(c, 0, x->dtype, x->rank, x->dims, &y)))
        return st;
    ox_tk_copy(y, 0, x, 0, x->numel);
    elem_ctx e = {y, u, red};
    return walk_elements(c, x->dims, x->rank, axis, ix, scatter_elem, &e);
}

/* Resolves the index tuple t of an [.., m] indices tensor to a data offset
 * within one batch (dims from `from`, strides ds). */
static ox_status nd_offset(ox_kernel_ctx *c, const ox_tensor *ix, int64_t t, int64_t m,
                           const int64_t *ddims, const int64_t *ds, int from,
                           int64_t *off)
{
    int64_t o = 0;
    for (int64_t j = 0; j < m; j++) {
        int64_t v = ox_tk_i64(ix, t * m + j), n = v;
        if (!norm_index(&n, ddims[from + j]))
            return bad_index(c, v, ddims[from + j]);
        o += n * ds[from + j];
    }
    *off = o;
    return OX_OK;
}

ox_status ox_tk_gather_nd(ox_kernel_ctx *c)
{
    const ox_tensor *x, *ix;
    ox_status st = ox_tk_need(c, 0, &x);
    if (st || (st = ox_tk_need(c, 1, &ix)) || (st = need_int_indices(c, ix)))
        return st;
    int r = x->rank, q = ix->rank;
    int64_t b = ox_node_attr_i(c->node, "batch_dims", 0);
    if (q < 1 || r < 1 || b < 0 || b >= q || b >= r)
        return ox_errorf(c->err, OX_EINVAL, "GatherND: bad ranks or batch_dims");
    int64_t m = ix->dims[q - 1];
    if (m < 1 || m > r - b)
        return ox_errorf(c->err, OX_ESHAPE, "GatherND: index tuple length %lld invalid",
                         (long long)m);
    for (int i = 0; i < b; i++)
        if (ix->dims[i] != x->dims[i])
            return ox_errorf(c->err, OX_ESHAPE, "GatherND: batch dims differ");
    int64_t od[OX_MAX_RANK];
    int k = 0;
    for (int i = 0; i < q - 1; i++)
        od[k++] = ix->dims[i];
    for (int i = (int)(b + m); i < r; i++) {
        if (k >= OX_MAX_RANK)
            return ox_errorf(c->err, OX_ESHAPE, "GatherND: output rank too large");
        od[k++] = x->dims[i];
    }
    ox_tensor *y;
    if ((st = ox_tk_out(c, 0, x->dtype, k, od, &y)))
        return st;
    int64_t ds[OX_MAX_RANK];
    ox_tk_strides(r, x->dims, ds);
    int64_t inner = prod(x->dims, (int)(b + m), r);
    int64_t nt = m ? ix->numel / m : 0, nb = prod(x->dims, 0, (int)b);
    int64_t per = nb ? nt / nb : 0, bstride = prod(x->dims, (int)b, r);
    for (int64_t t = 0; t < nt; t++) {
        int64_t off;
        if ((st = nd_offset(c, ix, t, m, x->dims, ds, (int)b, &off)))
            return st;
        ox_tk_copy(y, t * inner, x, (per ? t / per : 0) * bstride + off, inner);
    }
    return OX_OK;
}

ox_status ox_tk_scatter_nd(ox_kernel_ctx *c)
{
    const ox_tensor *x, *ix, *u;
    ox_status st = ox_tk_need(c, 0, &x);
    if (st || (st = ox_tk_need(c, 1, &ix)) || (st = ox_tk_need(c, 2, &u)) ||
        (st = need_int_indices(c, ix)))
        return st;
    int r = x->rank, q = ix->rank, red = parse_reduction(c);
    if (red < 0)
        return ox_errorf(c->err, OX_EINVAL, "ScatterND: unknown reduction");
    if (q < 1 || r < 1)
        return ox_errorf(c->err, OX_ESHAPE, "ScatterND: bad ranks");
    int64_t m = ix->dims[q - 1];
    if (m < 1 || m > r || u->dtype != x->dtype || u->rank != q - 1 + r - m)
        return ox_errorf(c->err, OX_ESHAPE, "ScatterND: indices/updates do not fit data");
    for (int i = 0; i < q - 1; i++)
        if (u->dims[i] != ix->dims[i])
            return ox_errorf(c->err, OX_ESHAPE, "ScatterND: updates shape mismatch");
    for (int i = 0; i < r - m; i++)
        if (u->dims[q - 1 + i] != x->dims[m + i])
            return ox_errorf(c->err, OX_ESHAPE, "ScatterND: updates shape mismatch");
    if (red != RED_NONE && !ox_tk_is_numeric(x->dtype))
        return ox_errorf(c->err, OX_EINVAL, "ScatterND: reduction needs numbers");
    ox_tensor *y;
    if ((st = ox_tk_out(c, 0, x->dtype, r, x->dims, &y)))
        return st;
    ox_tk_copy(y, 0, x, 0, x->numel);
    int64_t ds[OX_MAX_RANK];
    ox_tk_strides(r, x->dims, ds);
    int64_t inner = prod(x->dims, (int)m, r), nt = ix->numel / m;
    for (int64_t t = 0; t < nt; t++) {
        int64_t off;
        if ((st = nd_offset(c, ix, t, m, x->dims, ds, 0, &off)))
            return st;
        if (red == RED_NONE) {
            ox_tk_copy(y, off, u, t * inner, inner);
        } else {
            for (int64_t j = 0; j < inner; j++)
                reduce_into(y, off + j, u, t * inner + j, red);
        }
    }
    return OX_OK;
}

ox_status ox_tk_onehot(ox_kernel_ctx *c)
{
    const ox_tensor *ix, *dt, *vals;
    ox_status st = ox_tk_need(c, 0, &ix);
    if (st || (st = ox_tk_need(c, 1, &dt)) || (st = ox_tk_need(c, 2, &vals)))
        return st;
    if (dt->numel != 1 || !ox_tk_is_numeric(dt->dtype) || vals->numel != 2 ||
        !ox_tk_is_numeric(ix->dtype))
        return ox_errorf(c->err, OX_EINVAL, "OneHot: depth must be a scalar and values hold 2");
    double dd = ox_tensor_get_f64(dt, 0);
    if (!(dd >= 1) || dd > 1e9)
        return ox_errorf(c->err, OX_EINVAL, "OneHot: bad depth");
    int64_t depth = (int64_t)dd;
    int q = ix->rank, axis;
    if (q + 1 > OX_MAX_RANK)
        return ox_errorf(c->err, OX_ESHAPE, "OneHot: rank too large");
    if ((st = ox_tk_axis(c, ox_node_attr_i(c->node, "axis", -1), q + 1, &axis)))
        return st;
    int64_t od[OX_MAX_RANK];
    for (int i = 0, j = 0; i <= q; i++)
        od[i] = i == axis ? depth : ix->dims[j++];
    ox_tensor *y;
    if ((st = ox_tk_out(c, 0, vals->dtype, q + 1, od, &y)))
        return st;
    ox_tk_fill(y, 0, y->numel, vals, 0);
    int64_t inner = prod(ix->dims, axis, q), outer = prod(ix->dims, 0, axis);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            double v = ox_tensor_get_f64(ix, o * inner + i);
            if (!(fabs(v) < 1e18))
                continue; /* NaN/huge: out of range, row stays "off" */
            int64_t k = (int64_t)v; /* float indices truncate like a cast */
            if (k < 0)
                k += depth;
            if (k < 0 || k >= depth)
                continue;
            ox_tk_copy(y, (o * depth + k) * inner + i, vals, 1, 1);
        }
    return OX_OK;
}

static bool is_nonzero(const ox_tensor *x, const ox_tk_layout *l, int64_t i)
{
    if (ox_dtype_is_float(x->dtype))
        return ox_tensor_get_f64(x, i) != 0;
    if (!l->es)
        return ox_tensor_get_i64(x, i) != 0;
    const uint8_t *p = (const uint8_t *)ox_tensor_data(x) + i * l->es;
    for (int b = 0; b < l->es; b++)
        if (p[b])
            return true;
    return false;
}

ox_status ox_tk_nonzero(ox_kernel_ctx *c)
{
    const ox_tensor *x;
    ox_status st = ox_tk_need(c, 0, &x);
    if (st)
        return st;
    ox_tk_layout l;
    if (!ox_tk_layout_of(x->dtype, &l) || l.is_string)
        return ox_errorf(c->err, OX_EINVAL, "NonZero: unsupported element type");
    int64_t cnt = 0;
    for (int64_t i = 0; i < x->numel; i++)
        cnt += is_nonzero(x, &l, i);
    int64_t od[2] = {x->rank, cnt};
    ox_tensor *y;
    if ((st = ox_tk_out(c, 0, OX_DT_INT64, 2, od, &y)))
        return st;
    int64_t *p = ox_tensor_data(y), k[OX_MAX_RANK] = {0}, j = 0;
    for (int64_t i = 0; i < x->numel; i++) {
        if (is_nonzero(x, &l, i)) {
            for (int d = 0; d < x->rank; d++)
                p[d * cnt + j] = k[d];
            j++;
        }
        for (int d = x->rank - 1; d >= 0; d--) {
            if (++k[d] < x->dims[d])
                break;
            k[d] = 0;
        }
    }
    return OX_OK;
}

ox_status ox_tk_tensor_scatter(ox_kernel_ctx *c)
{
    const ox_tensor *x, *u;
    ox_status st = ox_tk_need(c, 0, &x);
    if (st || (st = ox_tk_need(c, 1, &u)))
        return st;
    const ox_tensor *wi = c->n_in > 2 ? ox_kernel_in(c, 2) : NULL;
    int r = x->rank, axis;
    if ((st = ox_tk_axis(c, ox_node_attr_i(c->node, "axis", -2), r, &axis)))
        return st;
    if (axis == 0)
        return ox_errorf(c->err, OX_EINVAL, "TensorScatter: axis 0 is the batch axis");
    bool circular = !strcmp(ox_node_attr_s(c->node, "mode", "linear"), "circular");
    if (u->rank != r || u->dtype != x->dtype)
        return ox_errorf(c->err, OX_ESHAPE, "TensorScatter: update must match past_cache");
    for (int i = 0; i < r; i++)
        if (i != axis && u->dims[i] != x->dims[i])
            return ox_errorf(c->err, OX_ESHAPE, "TensorScatter: update dim %d differs", i);
    int64_t B = x->dims[0], M = x->dims[axis], S = u->dims[axis];
    if (S > M)
        return ox_errorf(c->err, OX_ESHAPE, "TensorScatter: update longer than the cache");
    if (wi && (wi->numel != B || !ox_dtype_is_int(wi->dtype)))
        return ox_errorf(c->err, OX_EINVAL, "TensorScatter: write_indices must hold %lld ints",
                         (long long)B);
    ox_tensor *y;
    if ((st = ox_tk_out(c, 0, x->dtype, r, x->dims, &y)))
        return st;
    ox_tk_copy(y, 0, x, 0, x->numel);
    /* Rows along the axis are contiguous blocks of `inner` elements. */
    int64_t inner = prod(x->dims, axis + 1, r), outer = prod(x->dims, 0, axis);
    int64_t per_batch = B ? outer / B : 0;
    for (int64_t o = 0; o < outer; o++) {
        int64_t b = per_batch ? o / per_batch : 0;
        int64_t w = wi ? ox_tk_i64(wi, b) : 0;
        for (int64_t s = 0; s < S; s++) {
            int64_t pos = w + s;
            if (circular)
                pos = M ? ((pos % M) + M) % M : 0;
            if (pos < 0 || pos >= M)
                return bad_index(c, pos, M);
            ox_tk_copy(y, (o * M + pos) * inner, u, (o * S + s) * inner, inner);
        }
    }
    return OX_OK;
}
