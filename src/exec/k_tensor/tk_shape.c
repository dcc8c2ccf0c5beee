/* Kernels that only create values or change shapes: Constant, Identity,
 * Shape, Size, Reshape, Flatten, Squeeze, Unsqueeze, ConstantOfShape, Range,
 * EyeLike. Shape changes share the input bytes instead of copying them. */
#include "tk_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static ox_status set_new(ox_kernel_ctx *c, int i, ox_tensor *t)
{
    if (!t)
        return ox_errorf(c->err, OX_ENOMEM, "%s: out of memory", ox_tk_op(c));
    ox_tensor_set_name(t, NULL); /* a new value, not the attribute/input */
    ox_kernel_set_output(c, i, t);
    return OX_OK;
}

static ox_status sparse_to_dense(ox_kernel_ctx *c, const ox_sparse *sp)
{
    if (!sp || !sp->values || sp->rank < 0 || sp->rank > OX_MAX_RANK)
        return ox_errorf(c->err, OX_EINVAL, "Constant: malformed sparse_value");
    const ox_tensor *v = sp->values, *ix = sp->indices;
    ox_tensor *t = ox_tensor_new(v->dtype, sp->rank, sp->dims);
    if (!t)
        return ox_errorf(c->err, OX_ENOMEM, "Constant: cannot allocate dense tensor");
    int64_t nnz = v->numel;
    int64_t str[OX_MAX_RANK];
    ox_tk_strides(sp->rank, sp->dims, str);
    bool two_d = ix && ix->rank == 2;
    if (nnz > 0 && (!ix || !ox_dtype_is_int(ix->dtype) ||
                    (two_d ? (ix->dims[0] != nnz || ix->dims[1] != sp->rank)
                           : ix->numel != nnz))) {
        ox_tensor_free(t);
        return ox_errorf(c->err, OX_EINVAL, "Constant: sparse indices do not match values");
    }
    for (int64_t k = 0; k < nnz; k++) {
        int64_t lin = 0;
        if (two_d) {
            for (int d = 0; d < sp->rank; d++) {
                int64_t x = ox_tk_i64(ix, k * sp->rank + d);
                if (x < 0 || x >= sp->dims[d]) {
                    lin = -1;
                    break;
                }
                lin += x * str[d];
            }
        } else {
            lin = ox_tk_i64(ix, k);
        }
        if (lin < 0 || lin >= t->numel) {
            ox_tensor_free(t);
            return ox_errorf(c->err, OX_EINVAL, "Constant: sparse index out of range");
        }
        ox_tk_copy(t, lin, v, k, 1);
    }
    ox_kernel_set_output(c, 0, t);
    return OX_OK;
}

ox_status ox_tk_constant(ox_kernel_ctx *c)
{
    const ox_node *n = c->node;
    for (int i = 0; i < n->n_attrs; i++) {
        const ox_attr *a = &n->attrs[i];
        const char *nm = a->name ? a->name : "";
        if (!strcmp(nm, "value") && a->t)
            return set_new(c, 0, ox_tensor_share(a->t));
        if (!strcmp(nm, "sparse_value"))
            return sparse_to_dense(c, a->sparse);
        if (!strcmp(nm, "value_float")) {
            ox_tensor *t = ox_tensor_new(OX_DT_FLOAT, 0, NULL);
            if (t)
                *(float *)ox_tensor_data(t) = a->f;
            return set_new(c, 0, t);
        }
        if (!strcmp(nm, "value_int")) {
            ox_tensor *t = ox_tensor_new(OX_DT_INT64, 0, NULL);
            if (t)
                *(int64_t *)ox_tensor_data(t) = a->i;
            return set_new(c, 0, t);
        }
        if (!strcmp(nm, "value_floats") || !strcmp(nm, "value_ints")) {
            bool f = nm[6] == 'f';
            int64_t d = a->n;
            ox_tensor *t = ox_tensor_new(f ? OX_DT_FLOAT : OX_DT_INT64, 1, &d);
            if (t && d > 0) {
                if (f)
                    memcpy(ox_tensor_data(t), a->floats, sizeof(float) * (size_t)d);
                else
                    memcpy(ox_tensor_data(t), a->ints, sizeof(int64_t) * (size_t)d);
            }
            return set_new(c, 0, t);
        }
        if (!strcmp(nm, "value_string") || !strcmp(nm, "value_strings")) {
            bool one = !strcmp(nm, "value_string");
            int64_t d = one ? 1 : a->n;
            ox_tensor *t = ox_tensor_new(OX_DT_STRING, one ? 0 : 1, &d);
            if (!t)
                return set_new(c, 0, t);
            /* Build a one-string-per-element source to reuse the copier. */
            ox_tensor src = *t;
            src.strings = one ? (ox_bytes *)&a->s : a->strings;
            ox_tk_copy(t, 0, &src, 0, d);
            return set_new(c, 0, t);
        }
    }
    return ox_errorf(c->err, OX_EINVAL, "Constant: no value attribute");
}

ox_status ox_tk_identity(ox_kernel_ctx *c)
{
    if (c->n_in < 1 || !c->in[0] || c->n_out < 1)
        return ox_errorf(c->err, OX_EINVAL, "Identity: missing input");
    if (c->in[0]->kind == OX_RV_TENSOR && c->in[0]->t)
        return set_new(c, 0, ox_tensor_share(c->in[0]->t));
    /* Sequences and optionals pass through as a shared clone. */
    ox_rval *v = ox_rval_clone(c->in[0]);
    if (!v)
        return ox_errorf(c->err, OX_ENOMEM, "Identity: out of memory");
    c->out[0] = v;
    return OX_OK;
}

ox_status ox_tk_shape(ox_kernel_ctx *c)
{
    const ox_tensor *x;
    ox_status st = ox_tk_need(c, 0, &x);
    if (st)
        return st;
    int64_t r = x->rank;
    int64_t s = ox_node_attr_i(c->node, "start", 0);
    int64_t e = ox_node_attr_i(c->node, "end", r);
    if (s < 0)
        s += r;
    if (e < 0)
        e += r;
    s = s < 0 ? 0 : (s > r ? r : s);
    e = e < 0 ? 0 : (e > r ? r : e);
    int64_t n = e > s ? e - s : 0;
    ox_tensor *y;
    if ((st = ox_tk_out(c, 0, OX_DT_INT64, 1, &n, &y)))
        return st;
    int64_t *p = ox_tensor_data(y);
    for (int64_t i = 0; i < n; i++)
        p[i] = x->dims[s + i];
    return OX_OK;
}

ox_status ox_tk_size(ox_kernel_ctx *c)
{
    const ox_tensor *x;
    ox_tensor *y;
    ox_status st = ox_tk_need(c, 0, &x);
    if (st || (st = ox_tk_out(c, 0, OX_DT_INT64, 0, NULL, &y)))
        return st;
    *(int64_t *)ox_tensor_data(y) = x->numel;
    return OX_OK;
}

ox_status ox_tk_reshape(ox_kernel_ctx *c)
{
    const ox_tensor *x;
    ox_status st = ox_tk_need(c, 0, &x);
    if (st)
        return st;
    int64_t shp[OX_MAX_RANK];
    int n = 0;
    if (c->opset < 5) {
        const int64_t *a;
        n = ox_node_attr_ints(c->node, "shape", &a);
        if (n < 0 || n > OX_MAX_RANK)
            return ox_errorf(c->err, OX_EINVAL, "Reshape: bad shape attribute");
        memcpy(shp, a, sizeof(int64_t) * (size_t)n);
    } else {
        const ox_tensor *s;
        if ((st = ox_tk_need(c, 1, &s)) ||
            (st = ox_tk_read_ints(c, s, "shape", shp, OX_MAX_RANK, &n)))
            return st;
    }
    bool allowzero = ox_node_attr_i(c->node, "allowzero", 0) != 0;
    int infer = -1;
    int64_t known = 1;
    for (int i = 0; i < n; i++) {
        if (shp[i] == 0 && !allowzero) {
            if (i >= x->rank)
                return ox_errorf(c->err, OX_ESHAPE, "Reshape: 0 at dim %d beyond input rank", i);
            shp[i] = x->dims[i];
        }
        if (shp[i] == -1) {
            if (infer >= 0)
                return ox_errorf(c->err, OX_ESHAPE, "Reshape: more than one -1");
            infer = i;
            continue;
        }
        if (shp[i] < 0)
            return ox_errorf(c->err, OX_ESHAPE, "Reshape: negative dim %lld",
                             (long long)shp[i]);
        if (shp[i] && known > INT64_MAX / shp[i])
            return ox_errorf(c->err, OX_ESHAPE, "Reshape: shape overflows");
        known *= shp[i];
    }
    if (infer >= 0) {
        if (known == 0 || x->numel % known)
            return ox_errorf(c->err, OX_ESHAPE, "Reshape: cannot infer -1 for %lld elements",
                             (long long)x->numel);
        shp[infer] = x->numel / known;
    }
    return ox_tk_out_view(c, 0, x, n, shp);
}

ox_status ox_tk_flatten(ox_kernel_ctx *c)
{
    const ox_tensor *x;
    ox_status st = ox_tk_need(c, 0, &x);
    if (st)
        return st;
    int64_t axis = ox_node_attr_i(c->node, "axis", 1);
    if (axis < 0)
        axis += x->rank;
    if (axis < 0 || axis > x->rank)
        return ox_errorf(c->err, OX_EINVAL, "Flatten: axis out of range");
    int64_t d[2] = {1, 1};
    for (int i = 0; i < x->rank; i++)
        d[i < axis ? 0 : 1] *= x->dims[i];
    return ox_tk_out_view(c, 0, x, 2, d);
}

/* Axes of Squeeze/Unsqueeze: attribute before opset 13, input after. */
static ox_status read_axes(ox_kernel_ctx *c, int64_t *axes, int *n, bool *given)
{
    *given = false;
    *n = 0;
    if (c->opset < 13) {
        const int64_t *a;
        int k = ox_node_attr_ints(c->node, "axes", &a);
        if (k < 0)
            return OX_OK;
        if (k > OX_MAX_RANK)
            return ox_errorf(c->err, OX_EINVAL, "%s: too many axes", ox_tk_op(c));
        memcpy(axes, a, sizeof(int64_t) * (size_t)k);
        *n = k;
        *given = true;
        return OX_OK;
    }
    const ox_tensor *t = c->n_in > 1 ? ox_kernel_in(c, 1) : NULL;
    if (!t || (t->numel == 0 && !strcmp(ox_tk_op(c), "Squeeze")))
        return OX_OK; /* an empty axes list means "all size-1 dims" */
    *given = true;
    return ox_tk_read_ints(c, t, "axes", axes, OX_MAX_RANK, n);
}

ox_status ox_tk_squeeze(ox_kernel_ctx *c)
{
    const ox_tensor *x;
    int64_t axes[OX_MAX_RANK];
    int n;
    bool given;
    ox_status st = ox_tk_need(c, 0, &x);
    if (st || (st = read_axes(c, axes, &n, &given)))
        return st;
    bool drop[OX_MAX_RANK] = {false};
    if (!given) {
        for (int i = 0; i < x->rank; i++)
            drop[i] = x->dims[i] == 1;
    }
    for (int k = 0; k < n; k++) {
        int a;
        if ((st = ox_tk_axis(c, axes[k], x->rank, &a)))
            return st;
        if (x->dims[a] != 1)
            return ox_errorf(c->err, OX_ESHAPE, "Squeeze: dim %d is %lld, not 1", a,
                             (long long)x->dims[a]);
        drop[a] = true;
    }
    int64_t d[OX_MAX_RANK];
    int r = 0;
    for (int i = 0; i < x->rank; i++)
        if (!drop[i])
            d[r++] = x->dims[i];
    return ox_tk_out_view(c, 0, x, r, d);
}

ox_status ox_tk_unsqueeze(ox_kernel_ctx *c)
{
    const ox_tensor *x;
    int64_t axes[OX_MAX_RANK];
    int n;
    bool given;
    ox_status st = ox_tk_need(c, 0, &x);
    if (st || (st = read_axes(c, axes, &n, &given)))
        return st;
    int r = x->rank + n;
    if (!given || r > OX_MAX_RANK)
        return ox_errorf(c->err, OX_EINVAL, "Unsqueeze: missing axes or rank too large");
    bool ins[OX_MAX_RANK] = {false};
    for (int k = 0; k < n; k++) {
        int a;
        if ((st = ox_tk_axis(c, axes[k], r, &a)))
            return st;
        if (ins[a])
            return ox_errorf(c->err, OX_EINVAL, "Unsqueeze: repeated axis %d", a);
        ins[a] = true;
    }
    int64_t d[OX_MAX_RANK];
    for (int i = 0, j = 0; i < r; i++)
        d[i] = ins[i] ? 1 : x->dims[j++];
    return ox_tk_out_view(c, 0, x, r, d);
}

ox_status ox_tk_constant_of_shape(ox_kernel_ctx *c)
{
    const ox_tensor *s;
    int64_t d[OX_MAX_RANK];
    int n;
    ox_status st = ox_tk_need(c, 0, &s);
    if (st || (st = ox_tk_read_ints(c, s, "shape", d, OX_MAX_RANK, &n)))
        return st;
    for (int i = 0; i < n; i++)
        if (d[i] < 0)
            return ox_errorf(c->err, OX_ESHAPE, "ConstantOfShape: negative dim");
    const ox_attr *a = ox_node_attr(c->node, "value");
    const ox_tensor *v = a ? a->t : NULL;
    if (v && v->numel != 1)
        return ox_errorf(c->err, OX_EINVAL, "ConstantOfShape: value must hold one element");
    ox_tensor *y;
    if ((st = ox_tk_out(c, 0, v ? v->dtype : OX_DT_FLOAT, n, d, &y)))
        return st;
    if (v) {
        ox_tk_fill(y, 0, y->numel, v, 0);
    } else if (y->numel) {
        memset(ox_tensor_data(y), 0, y->nbytes);
    }
    return OX_OK;
}

ox_status ox_tk_range(ox_kernel_ctx *c)
{
    const ox_tensor *s, *l, *d;
    ox_status st;
    if ((st = ox_tk_need(c, 0, &s)) || (st = ox_tk_need(c, 1, &l)) ||
        (st = ox_tk_need(c, 2, &d)))
        return st;
    ox_dtype dt = s->dtype;
    if (s->numel != 1 || l->numel != 1 || d->numel != 1 || l->dtype != dt ||
        d->dtype != dt || !ox_tk_is_numeric(dt) || dt == OX_DT_BOOL)
        return ox_errorf(c->err, OX_EINVAL, "Range: inputs must be numeric scalars of one type");
    ox_tensor *y;
    int64_t n;
    if (ox_dtype_is_float(dt)) {
        double a = ox_tensor_get_f64(s, 0), b = ox_tensor_get_f64(l, 0),
               e = ox_tensor_get_f64(d, 0);
        double cnt = e != 0 ? ceil((b - a) / e) : -1;
        if (!(cnt >= 0) && e != 0)
            cnt = 0;
        if (e == 0 || !isfinite(cnt) || cnt > 1e12)
            return ox_errorf(c->err, OX_EINVAL, "Range: bad delta or too many elements");
        n = (int64_t)cnt;
        if ((st = ox_tk_out(c, 0, dt, 1, &n, &y)))
            return st;
        if (dt == OX_DT_FLOAT) {
            float *p = ox_tensor_data(y);
            for (int64_t i = 0; i < n; i++)
                p[i] = (float)(a + (double)i * e);
        } else {
            for (int64_t i = 0; i < n; i++)
                ox_tensor_set_f64(y, i, a + (double)i * e);
        }
    } else {
        int64_t a = ox_tensor_get_i64(s, 0), b = ox_tensor_get_i64(l, 0),
                e = ox_tensor_get_i64(d, 0);
        if (e == 0)
            return ox_errorf(c->err, OX_EINVAL, "Range: delta is zero");
        /* ceil((b - a) / e) in integers without overflow on sane inputs */
        double span = ((double)b - (double)a) / (double)e;
        if (span > 1e12 || fabs((double)b - (double)a) > 9e18)
            return ox_errorf(c->err, OX_EINVAL, "Range: too many elements");
        int64_t diff = b - a;
        n = diff / e + ((diff % e) != 0 && ((diff < 0) == (e < 0)) ? 1 : 0);
        if (n < 0)
            n = 0;
        if ((st = ox_tk_out(c, 0, dt, 1, &n, &y)))
            return st;
        for (int64_t i = 0; i < n; i++)
            ox_tensor_set_i64(y, i, a + i * e);
    }
    return OX_OK;
}

ox_status ox_tk_eyelike(ox_kernel_ctx *c)
{
    const ox_tensor *x;
    ox_status st = ox_tk_need(c, 0, &x);
    if (st)
        return st;
    if (x->rank != 2)
        return ox_errorf(c->err, OX_ESHAPE, "EyeLike: input must be 2-D");
    int64_t dt = ox_node_attr_i(c->node, "dtype", x->dtype);
    if (!ox_dtype_valid((int)dt) || !ox_tk_is_numeric((ox_dtype)dt))
        return ox_errorf(c->err, OX_EINVAL, "EyeLike: bad dtype %lld", (long long)dt);
    int64_t k = ox_node_attr_i(c->node, "k", 0);
    ox_tensor *y = ox_tensor_new((ox_dtype)dt, 2, x->dims);
    if (!y)
        return ox_errorf(c->err, OX_ENOMEM, "EyeLike: out of memory");
    for (int64_t i = 0; i < x->dims[0]; i++) {
        int64_t j = i + k;
        if (j >= 0 && j < x->dims[1]) {
            if (ox_dtype_is_float((ox_dtype)dt))
                ox_tensor_set_f64(y, i * x->dims[1] + j, 1.0);
            else
                ox_tensor_set_i64(y, i * x->dims[1] + j, 1);
        }
    }
    ox_kernel_set_output(c, 0, y);
    return OX_OK;
}

ox_status ox_tk_bitcast(ox_kernel_ctx *c)
{
    const ox_tensor *x;
    ox_status st = ox_tk_need(c, 0, &x);
    if (st)
        return st;
    int64_t to = ox_node_attr_i(c->node, "to", 0);
    if (!ox_dtype_valid((int)to) || to == OX_DT_UNDEFINED || to == OX_DT_STRING ||
        x->dtype == OX_DT_STRING)
        return ox_errorf(c->err, OX_EINVAL, "BitCast: bad target type %lld", (long long)to);
    if (ox_dtype_bits((ox_dtype)to) != ox_dtype_bits(x->dtype))
        return ox_errorf(c->err, OX_EUNSUPPORTED,
                         "BitCast: %s and %s differ in width", ox_dtype_name(x->dtype),
                         ox_dtype_name((ox_dtype)to));
    /* Same width: the bytes are the answer; share them under the new type. */
    ox_tensor *y = ox_tensor_share(x);
    if (!y)
        return ox_errorf(c->err, OX_ENOMEM, "BitCast: out of memory");
    y->dtype = (ox_dtype)to;
    ox_tensor_set_name(y, NULL);
    ox_kernel_set_output(c, 0, y);
    return OX_OK;
}
