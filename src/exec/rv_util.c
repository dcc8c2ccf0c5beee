/* Slicing and concatenation helpers shared by the control-flow and
 * sequence kernels (see rv_util.h). */
#include <string.h>

#include "exec/rv_util.h"
#include "exec/k_tensor/tk_util.h"

static int64_t prod(const int64_t *d, int from, int to)
{
    int64_t p = 1;
    for (int i = from; i < to; i++)
        p *= d[i];
    return p;
}

ox_tensor *ox_rv_slice(const ox_tensor *t, int axis, int64_t idx, ox_error *err)
{
    if (axis < 0 || axis >= t->rank || idx < 0 || idx >= t->dims[axis]) {
        ox_errorf(err, OX_EINVAL, "slice index %lld out of range on axis %d",
                  (long long)idx, axis);
        return NULL;
    }
    int64_t dims[OX_MAX_RANK];
    for (int i = 0, k = 0; i < t->rank; i++)
        if (i != axis)
            dims[k++] = t->dims[i];
    ox_tensor *o = ox_tensor_new(t->dtype, t->rank - 1, dims);
    if (!o) {
        ox_errorf(err, OX_ENOMEM, "out of memory");
        return NULL;
    }
    int64_t outer = prod(t->dims, 0, axis), inner = prod(t->dims, axis + 1, t->rank);
    int64_t D = t->dims[axis];
    for (int64_t j = 0; j < outer && inner > 0; j++)
        ox_tk_copy(o, j * inner, t, (j * D + idx) * inner, inner);
    return o;
}

ox_tensor *ox_rv_range(const ox_tensor *t, int axis, int64_t start, int64_t len,
                       ox_error *err)
{
    if (axis < 0 || axis >= t->rank || start < 0 || len < 0 || start > t->dims[axis] ||
        len > t->dims[axis] - start) {
        ox_errorf(err, OX_EINVAL, "range [%lld, +%lld) out of bounds on axis %d",
                  (long long)start, (long long)len, axis);
        return NULL;
    }
    int64_t dims[OX_MAX_RANK];
    memcpy(dims, t->dims, sizeof dims);
    dims[axis] = len;
    ox_tensor *o = ox_tensor_new(t->dtype, t->rank, dims);
    if (!o) {
        ox_errorf(err, OX_ENOMEM, "out of memory");
        return NULL;
    }
    int64_t outer = prod(t->dims, 0, axis), inner = prod(t->dims, axis + 1, t->rank);
    int64_t D = t->dims[axis];
    for (int64_t j = 0; j < outer && inner * len > 0; j++)
        ox_tk_copy(o, j * len * inner, t, (j * D + start) * inner, len * inner);
    return o;
}

ox_tensor *ox_rv_concat(const ox_tensor *const *items, int n, int axis, bool new_axis,
                        ox_error *err)
{
    if (n <= 0 || !items[0]) {
        ox_errorf(err, OX_EINVAL, "nothing to concatenate");
        return NULL;
    }
    const ox_tensor *r = items[0];
    int orank = r->rank + (new_axis ? 1 : 0);
    if (orank > OX_MAX_RANK || axis < 0 || axis >= orank || (!new_axis && r->rank == 0)) {
        ox_errorf(err, OX_EINVAL, "axis %d out of range for rank %d", axis, orank);
        return NULL;
    }
    int64_t total = 0;
    for (int k = 0; k < n; k++) {
        const ox_tensor *t = items[k];
        if (!t || t->dtype != r->dtype || t->rank != r->rank) {
            ox_errorf(err, OX_ESHAPE, "item %d: dtype or rank differs", k);
            return NULL;
        }
        for (int d = 0; d < r->rank; d++)
            if ((new_axis || d != axis) && t->dims[d] != r->dims[d]) {
                ox_errorf(err, OX_ESHAPE, "item %d: dim %d is %lld, expected %lld", k, d,
                          (long long)t->dims[d], (long long)r->dims[d]);
                return NULL;
            }
        total += new_axis ? 1 : t->dims[axis];
    }
    int64_t dims[OX_MAX_RANK];
    for (int d = 0, s = 0; d < orank; d++) {
        if (new_axis && d == axis)
            dims[d] = n;
        else
            dims[d] = r->dims[s++];
    }
    if (!new_axis)
        dims[axis] = total;
    ox_tensor *o = ox_tensor_new(r->dtype, orank, dims);
    if (!o) {
        ox_errorf(err, OX_ENOMEM, "out of memory");
        return NULL;
    }
    /* In item coordinates: outer = dims before axis; each item contributes
     * a contiguous block of prod(item dims from axis) per outer index. */
    int64_t outer = prod(r->dims, 0, axis);
    int64_t pos = 0;
    for (int64_t j = 0; j < outer; j++)
        for (int k = 0; k < n; k++) {
            const ox_tensor *t = items[k];
            int64_t inner = prod(t->dims, axis, t->rank);
            if (inner > 0)
                ox_tk_copy(o, pos, t, j * inner, inner);
            pos += inner;
        }
    return o;
}

bool ox_rv_scalar_i64(const ox_tensor *t, int64_t *out)
{
    if (!t || t->numel != 1 || t->dtype == OX_DT_STRING || !ox_tensor_data(t))
        return false;
    if (ox_dtype_is_float(t->dtype))
        *out = (int64_t)ox_tensor_get_f64(t, 0);
    else
        *out = ox_tensor_get_i64(t, 0);
    return true;
}
