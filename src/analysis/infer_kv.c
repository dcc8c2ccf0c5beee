/* Known values for shape-value propagation: small numeric tensors whose
 * elements may be known, unknown, or a symbol (a dim_param). Shape
 * arithmetic of exporters is evaluated on these during inference. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/infer_internal.h"

ox__kv *ox__kv_new(ox_dtype dt, int rank, const int64_t *dims)
{
    if (rank < 0 || rank > OX_MAX_RANK)
        return NULL;
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0 || (dims[i] && n > OX__KV_MAX / dims[i]))
            return NULL;
        n *= dims[i];
    }
    if (n > OX__KV_MAX || (ox_dtype_is_float(dt) && n > OX__KV_MAX_FLOAT))
        return NULL;
    ox__kv *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    k->dt = dt;
    k->rank = rank;
    if (rank)
        memcpy(k->dims, dims, (size_t)rank * sizeof *dims);
    k->n = n;
    size_t cnt = n ? (size_t)n : 1;
    k->known = calloc(cnt, 1);
    if (ox_dtype_is_float(dt))
        k->fv = calloc(cnt, sizeof *k->fv);
    else
        k->iv = calloc(cnt, sizeof *k->iv);
    if (!k->known || (!k->fv && !k->iv)) {
        ox__kv_free(k);
        return NULL;
    }
    return k;
}

void ox__kv_free(ox__kv *k)
{
    if (!k)
        return;
    if (k->sym) {
        for (int64_t i = 0; i < k->n; i++)
            free(k->sym[i]);
        free(k->sym);
    }
    free(k->iv);
    free(k->fv);
    free(k->known);
    free(k);
}

bool ox__kv_all_known(const ox__kv *k)
{
    for (int64_t i = 0; i < k->n; i++)
        if (!k->known[i])
            return false;
    return true;
}

bool ox__kv_is_float(const ox__kv *k)
{
    return k->fv != NULL;
}

double ox__kv_get_f(const ox__kv *k, int64_t i)
{
    if (i < 0 || i >= k->n)
        return 0;
    return k->fv ? k->fv[i] : (double)k->iv[i];
}

int64_t ox__kv_get_i(const ox__kv *k, int64_t i)
{
    if (i < 0 || i >= k->n)
        return 0;
    if (k->iv)
        return k->iv[i];
    double d = k->fv[i];
    if (!(d == d) || d > 9.2e18 || d < -9.2e18)
        return 0;
    return (int64_t)d;
}

void ox__kv_set_f(ox__kv *k, int64_t i, double v)
{
    if (i < 0 || i >= k->n)
        return;
    if (k->fv) {
        k->fv[i] = v;
    } else {
        if (!(v == v) || v > 9.2e18 || v < -9.2e18)
            return;
        k->iv[i] = k->dt == OX_DT_BOOL ? (v != 0) : (int64_t)v;
    }
    k->known[i] = 1;
}

void ox__kv_set_i(ox__kv *k, int64_t i, int64_t v)
{
    if (i < 0 || i >= k->n)
        return;
    if (k->fv)
        k->fv[i] = (double)v;
    else
        k->iv[i] = k->dt == OX_DT_BOOL ? (v != 0) : v;
    k->known[i] = 1;
}

void ox__kv_set_sym(ox__kv *k, int64_t i, const char *sym)
{
    if (i < 0 || i >= k->n || !sym || k->fv)
        return;
    if (!k->sym) {
        k->sym = calloc((size_t)k->n, sizeof *k->sym);
        if (!k->sym)
            return;
    }
    free(k->sym[i]);
    k->sym[i] = ox_strdup(sym);
}

void ox__kv_copy_elem(ox__kv *dst, int64_t i, const ox__kv *src, int64_t j)
{
    if (i < 0 || i >= dst->n || j < 0 || j >= src->n)
        return;
    if (src->known[j]) {
        if (src->fv)
            ox__kv_set_f(dst, i, src->fv[j]);
        else
            ox__kv_set_i(dst, i, src->iv[j]);
    } else if (src->sym && src->sym[j]) {
        ox__kv_set_sym(dst, i, src->sym[j]);
    }
}

ox__kv *ox__kv_from_tensor(const ox_tensor *t)
{
    if (!t || t->dtype == OX_DT_STRING || ox_dtype_bits(t->dtype) == 0)
        return NULL;
    if (t->numel > OX__KV_MAX || t->external ||
        (ox_dtype_is_float(t->dtype) && t->numel > OX__KV_MAX_FLOAT))
        return NULL;
    if (t->numel > 0 && !ox_tensor_data(t))
        return NULL;
    ox__kv *k = ox__kv_new(t->dtype, t->rank, t->dims);
    if (!k)
        return NULL;
    for (int64_t i = 0; i < k->n; i++) {
        if (k->fv)
            ox__kv_set_f(k, i, ox_tensor_get_f64(t, i));
        else
            ox__kv_set_i(k, i, ox_tensor_get_i64(t, i));
    }
    return k;
}

ox_tensor *ox__kv_to_tensor(const ox__kv *k)
{
    if (!k || !ox__kv_all_known(k))
        return NULL;
    ox_tensor *t = ox_tensor_new(k->dt, k->rank, k->dims);
    if (!t)
        return NULL;
    for (int64_t i = 0; i < k->n; i++) {
        if (k->fv)
            ox_tensor_set_f64(t, i, k->fv[i]);
        else
            ox_tensor_set_i64(t, i, k->iv[i]);
    }
    return t;
}

ox__kv *ox__kv_clone(const ox__kv *k)
{
    if (!k)
        return NULL;
    ox__kv *n = ox__kv_new(k->dt, k->rank, k->dims);
    for (int64_t i = 0; n && i < k->n; i++)
        ox__kv_copy_elem(n, i, k, i);
    return n;
}
