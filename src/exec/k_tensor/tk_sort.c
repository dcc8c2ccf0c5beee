/* Kernels that order values: TopK (ties go to the lower index) and Unique
 * (sorted or in order of first occurrence, optionally of slices along an
 * axis). Values are compared as long double, which holds every int64 and
 * uint64 exactly, or as byte strings. */
#include "tk_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* All elements of x as sortable keys (NULL for strings or on OOM). */
static long double *keys_of(const ox_tensor *x)
{
    long double *k = malloc(sizeof *k * (size_t)(x->numel ? x->numel : 1));
    if (!k)
        return NULL;
    if (x->dtype == OX_DT_FLOAT) {
        const char *p = ox_tensor_data(x);
        for (int64_t i = 0; i < x->numel; i++) {
            float f;
            memcpy(&f, p + 4 * i, 4);
            k[i] = f;
        }
    } else if (x->dtype == OX_DT_UINT64) {
        const char *p = ox_tensor_data(x);
        for (int64_t i = 0; i < x->numel; i++) {
            uint64_t u;
            memcpy(&u, p + 8 * i, 8);
            k[i] = (long double)u;
        }
    } else if (ox_dtype_is_float(x->dtype)) {
        for (int64_t i = 0; i < x->numel; i++)
            k[i] = ox_tensor_get_f64(x, i);
    } else {
        for (int64_t i = 0; i < x->numel; i++)
            k[i] = (long double)ox_tensor_get_i64(x, i);
    }
    return k;
}

/* NaN sorts above everything (as numpy does), equal NaNs are equal. */
static int cmp_ld(long double a, long double b)
{
    bool na = isnan(a), nb = isnan(b);
    if (na || nb)
        return na - nb;
    return (a > b) - (a < b);
}

typedef struct {
    const long double *keys;
    int64_t base, stride;
    bool largest;
} topk_ctx;

static int topk_cmp(const void *pa, const void *pb, void *vctx)
{
    const topk_ctx *t = vctx;
    int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    int c = cmp_ld(t->keys[t->base + a * t->stride], t->keys[t->base + b * t->stride]);
    if (t->largest)
        c = -c;
    return c ? c : (a > b) - (a < b);
}

ox_status ox_tk_topk(ox_kernel_ctx *c)
{
    const ox_tensor *x;
    ox_status st = ox_tk_need(c, 0, &x);
    if (st)
        return st;
    if (!ox_tk_is_numeric(x->dtype))
        return ox_errorf(c->err, OX_EINVAL, "TopK: input must be numeric");
    int r = x->rank, axis;
    if ((st = ox_tk_axis(c, ox_node_attr_i(c->node, "axis", -1), r, &axis)))
        return st;
    int64_t k;
    if (c->opset < 10) {
        k = ox_node_attr_i(c->node, "k", -1);
    } else {
        const ox_tensor *kt;
        if ((st = ox_tk_need(c, 1, &kt)))
            return st;
        if (kt->numel != 1 || !ox_dtype_is_int(kt->dtype))
            return ox_errorf(c->err, OX_EINVAL, "TopK: K must hold one integer");
        k = ox_tk_i64(kt, 0);
    }
    int64_t D = x->dims[axis];
    if (k < 0 || k > D)
        return ox_errorf(c->err, OX_EINVAL, "TopK: k=%lld outside [0, %lld]", (long long)k,
                         (long long)D);
    bool largest = ox_node_attr_i(c->node, "largest", 1) != 0;
    int64_t od[OX_MAX_RANK];
    memcpy(od, x->dims, sizeof(int64_t) * (size_t)r);
    od[axis] = k;
    ox_tensor *v, *ix;
    if ((st = ox_tk_out(c, 0, x->dtype, r, od, &v)) ||
        (c->n_out > 1 && (st = ox_tk_out(c, 1, OX_DT_INT64, r, od, &ix))))
        return st;
    if (c->n_out < 2)
        ix = NULL;
    int64_t inner = 1, outer = 1;
    for (int i = 0; i < axis; i++)
        outer *= x->dims[i];
    for (int i = axis + 1; i < r; i++)
        inner *= x->dims[i];
    long double *keys = keys_of(x);
    int64_t *ord = malloc(sizeof(int64_t) * (size_t)(D ? D : 1));
    if (!keys || !ord) {
        free(keys);
        free(ord);
        return ox_errorf(c->err, OX_ENOMEM, "TopK: out of memory");
    }
    int64_t *ip = ix ? ox_tensor_data(ix) : NULL;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            topk_ctx t = {keys, o * D * inner + i, inner, largest};
            for (int64_t j = 0; j < D; j++)
                ord[j] = j;
            qsort_r(ord, (size_t)D, sizeof *ord, topk_cmp, &t);
            for (int64_t j = 0; j < k; j++) {
                int64_t dpos = o * k * inner + j * inner + i;
                ox_tk_copy(v, dpos, x, t.base + ord[j] * inner, 1);
                if (ip)
                    ip[dpos] = ord[j];
            }
        }
    free(keys);
    free(ord);
    return OX_OK;
}

typedef struct {
    const ox_tensor *x;
    const long double *keys; /* NULL for strings */
    int64_t inner, D;        /* slice j = elements {o*D*inner + j*inner + i} */
    int64_t outer;
} uniq_ctx;

static int cmp_elem(const uniq_ctx *u, int64_t a, int64_t b)
{
    if (u->keys)
        return cmp_ld(u->keys[a], u->keys[b]);
    const ox_bytes *x = &u->x->strings[a], *y = &u->x->strings[b];
    size_t n = x->len < y->len ? x->len : y->len;
    int c = n ? memcmp(x->data, y->data, n) : 0;
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

static int cmp_slice(const uniq_ctx *u, int64_t a, int64_t b)
{
    for (int64_t o = 0; o < u->outer; o++)
        for (int64_t i = 0; i < u->inner; i++) {
            int64_t base = o * u->D * u->inner + i;
            int c = cmp_elem(u, base + a * u->inner, base + b * u->inner);
            if (c)
                return c;
        }
    return 0;
}

static int uniq_cmp(const void *pa, const void *pb, void *vctx)
{
    int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    int c = cmp_slice(vctx, a, b);
    return c ? c : (a > b) - (a < b);
}

typedef struct {
    int64_t first, count;
} group;

static int group_by_first(const void *pa, const void *pb)
{
    const group *a = pa, *b = pb;
    return (a->first > b->first) - (a->first < b->first);
}

ox_status ox_tk_unique(ox_kernel_ctx *c)
{
    const ox_tensor *x;
    ox_status st = ox_tk_need(c, 0, &x);
    if (st)
        return st;
    if (x->dtype == OX_DT_UNDEFINED || !ox_dtype_valid(x->dtype))
        return ox_errorf(c->err, OX_EINVAL, "Unique: bad element type");
    const ox_attr *aa = ox_node_attr(c->node, "axis");
    bool sorted = ox_node_attr_i(c->node, "sorted", 1) != 0;
    uniq_ctx u = {x, NULL, 1, x->numel, 1};
    int axis = -1;
    if (aa) {
        if ((st = ox_tk_axis(c, aa->i, x->rank, &axis)))
            return st;
        u.D = x->dims[axis];
        for (int i = 0; i < axis; i++)
            u.outer *= x->dims[i];
        for (int i = axis + 1; i < x->rank; i++)
            u.inner *= x->dims[i];
    }
    long double *keys = NULL;
    if (x->dtype != OX_DT_STRING && !(keys = keys_of(x)))
        return ox_errorf(c->err, OX_ENOMEM, "Unique: out of memory");
    u.keys = keys;
    int64_t D = u.D;
    int64_t *ord = malloc(sizeof(int64_t) * (size_t)(D ? D : 1));
    int64_t *inv = malloc(sizeof(int64_t) * (size_t)(D ? D : 1));
    group *g = malloc(sizeof(group) * (size_t)(D ? D : 1));
    int64_t *rank_of = malloc(sizeof(int64_t) * (size_t)(D ? D : 1));
    if (!ord || !inv || !g || !rank_of) {
        st = ox_errorf(c->err, OX_ENOMEM, "Unique: out of memory");
        goto out;
    }
    for (int64_t j = 0; j < D; j++)
        ord[j] = j;
    qsort_r(ord, (size_t)D, sizeof *ord, uniq_cmp, &u);
    int64_t ng = 0;
    for (int64_t j = 0; j < D; j++) {
        if (j == 0 || cmp_slice(&u, ord[j - 1], ord[j]) != 0) {
            g[ng].first = ord[j]; /* stable: the smallest position comes first */
            g[ng].count = 0;
            ng++;
        }
        g[ng - 1].count++;
        inv[ord[j]] = ng - 1; /* group id in sorted order, remapped below */
    }
    if (!sorted) {
        /* Renumber groups by first occurrence. */
        for (int64_t k = 0; k < ng; k++)
            rank_of[k] = g[k].first;
        qsort(g, (size_t)ng, sizeof *g, group_by_first);
        /* rank_of[sorted id] -> position of its first occurrence; map that
         * position to the new id through a scan of the reordered groups. */
        int64_t *pos2new = ord; /* ord is free now: reuse as position -> id */
        for (int64_t k = 0; k < ng; k++)
            pos2new[g[k].first] = k;
        for (int64_t j = 0; j < D; j++)
            inv[j] = pos2new[rank_of[inv[j]]];
    }
    int64_t od[OX_MAX_RANK];
    int r;
    if (axis >= 0) {
        r = x->rank;
        memcpy(od, x->dims, sizeof(int64_t) * (size_t)r);
        od[axis] = ng;
    } else {
        r = 1;
        od[0] = ng;
    }
    ox_tensor *y, *t;
    if ((st = ox_tk_out(c, 0, x->dtype, r, od, &y)))
        goto out;
    for (int64_t k = 0; k < ng; k++)
        for (int64_t o = 0; o < u.outer; o++)
            ox_tk_copy(y, (o * ng + k) * u.inner, x, (o * D + g[k].first) * u.inner, u.inner);
    const ox_value *const *outs = (const ox_value *const *)c->node->outputs;
    for (int oi = 1; oi < c->n_out && oi < 4; oi++) {
        if (outs && !outs[oi])
            continue;
        int64_t n = oi == 2 ? D : ng;
        if ((st = ox_tk_out(c, oi, OX_DT_INT64, 1, &n, &t)))
            goto out;
        int64_t *p = ox_tensor_data(t);
        for (int64_t k = 0; k < n; k++)
            p[k] = oi == 1 ? g[k].first : oi == 2 ? inv[k] : g[k].count;
    }
out:
    free(keys);
    free(ord);
    free(inv);
    free(g);
    free(rank_of);
    return st;
}
