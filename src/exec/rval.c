/* Runtime values of the executor: tensors, sequences, optionals and maps.
 * A value owns its tensor and items; clones share tensor bytes through the
 * buffer reference count, so passing values around never copies data. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnxscope/exec.h"

ox_rval *ox_rval_tensor(ox_tensor *t)
{
    if (!t)
        return NULL;
    ox_rval *v = calloc(1, sizeof *v);
    if (!v) {
        ox_tensor_free(t);
        return NULL;
    }
    v->kind = OX_RV_TENSOR;
    v->t = t;
    return v;
}

ox_rval *ox_rval_sequence(void)
{
    ox_rval *v = calloc(1, sizeof *v);
    if (v)
        v->kind = OX_RV_SEQUENCE;
    return v;
}

ox_rval *ox_rval_optional_none(const ox_type *elem_type)
{
    ox_rval *v = calloc(1, sizeof *v);
    if (!v)
        return NULL;
    v->kind = OX_RV_OPTIONAL;
    if (elem_type)
        v->elem_type = ox_type_clone(elem_type);
    return v;
}

ox_status ox_rval_seq_push(ox_rval *seq, ox_rval *item)
{
    if (!seq || !item || seq->kind == OX_RV_TENSOR)
        return OX_EINVAL;
    if (seq->n_items >= seq->cap_items) {
        /* cap_items may lag n_items when a kernel filled items itself. */
        if (seq->n_items >= (1 << 28))
            return OX_ENOMEM;
        int cap = seq->n_items < 4 ? 8 : seq->n_items * 2;
        ox_rval **items = realloc(seq->items, (size_t)cap * sizeof *items);
        if (!items)
            return OX_ENOMEM;
        seq->items = items;
        seq->cap_items = cap;
    }
    seq->items[seq->n_items++] = item;
    return OX_OK;
}

ox_rval *ox_rval_clone(const ox_rval *v)
{
    if (!v)
        return NULL;
    ox_rval *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->kind = v->kind;
    if (v->t) {
        c->t = ox_tensor_share(v->t);
        if (!c->t)
            goto fail;
    }
    if (v->elem_type) {
        c->elem_type = ox_type_clone(v->elem_type);
        if (!c->elem_type)
            goto fail;
    }
    for (int i = 0; i < v->n_items; i++) {
        ox_rval *it = ox_rval_clone(v->items[i]);
        if (!it || ox_rval_seq_push(c, it) != OX_OK) {
            ox_rval_free(it);
            goto fail;
        }
    }
    return c;
fail:
    ox_rval_free(c);
    return NULL;
}

void ox_rval_free(ox_rval *v)
{
    if (!v)
        return;
    ox_tensor_free(v->t);
    for (int i = 0; i < v->n_items; i++)
        ox_rval_free(v->items[i]);
    free(v->items);
    ox_type_free(v->elem_type);
    free(v);
}

/* ---- comparison ------------------------------------------------------------ */

static bool close_enough(double g, double x, double rtol, double atol)
{
    if (isnan(x) || isnan(g))
        return isnan(x) && isnan(g);
    if (isinf(x) || isinf(g))
        return g == x;
    return fabs(g - x) <= atol + rtol * fabs(x);
}

static bool tensor_allclose(const ox_tensor *g, const ox_tensor *x, double rtol,
                            double atol, char *why, size_t n)
{
    char b1[96], b2[96];
    if (g->dtype != x->dtype) {
        snprintf(why, n, "dtype %s, expected %s", ox_dtype_name(g->dtype),
                 ox_dtype_name(x->dtype));
        return false;
    }
    bool same = g->rank == x->rank;
    for (int d = 0; same && d < g->rank; d++)
        same = g->dims[d] == x->dims[d];
    if (!same) {
        snprintf(why, n, "shape %s, expected %s", ox_shape_str(g->rank, g->dims, b1, sizeof b1),
                 ox_shape_str(x->rank, x->dims, b2, sizeof b2));
        return false;
    }
    int64_t bad = 0, first = -1;
    double fg = 0, fx = 0;
    if (x->dtype == OX_DT_STRING) {
        for (int64_t i = 0; i < x->numel; i++) {
            const ox_bytes *a = &g->strings[i], *b = &x->strings[i];
            if (a->len != b->len || (a->len && memcmp(a->data, b->data, a->len) != 0)) {
                if (first < 0) {
                    first = i;
                    snprintf(why, n, "element %lld: \"%.30s\", expected \"%.30s\"",
                             (long long)i, a->data ? a->data : "", b->data ? b->data : "");
                }
                bad++;
            }
        }
        if (bad && strlen(why) + 32 < n)
            snprintf(why + strlen(why), n - strlen(why), " (%lld differ)", (long long)bad);
        return bad == 0;
    }
    const void *gd = ox_tensor_data(g), *xd = ox_tensor_data(x);
    if (x->numel == 0)
        return true;
    if (!gd || !xd) {
        snprintf(why, n, "missing data");
        return false;
    }
    if (x->dtype == OX_DT_FLOAT) {
        const float *a = gd, *b = xd;
        for (int64_t i = 0; i < x->numel; i++)
            if (!close_enough(a[i], b[i], rtol, atol)) {
                if (first < 0) {
                    first = i;
                    fg = a[i];
                    fx = b[i];
                }
                bad++;
            }
    } else if (ox_dtype_is_float(x->dtype) || x->dtype == OX_DT_COMPLEX64 ||
               x->dtype == OX_DT_COMPLEX128) {
        if (x->dtype == OX_DT_COMPLEX64 || x->dtype == OX_DT_COMPLEX128) {
            bool dbl = x->dtype == OX_DT_COMPLEX128;
            for (int64_t i = 0; i < 2 * x->numel; i++) {
                double a = dbl ? ((const double *)gd)[i] : ((const float *)gd)[i];
                double b = dbl ? ((const double *)xd)[i] : ((const float *)xd)[i];
                if (!close_enough(a, b, rtol, atol)) {
                    if (first < 0) {
                        first = i / 2;
                        fg = a;
                        fx = b;
                    }
                    bad++;
                }
            }
        } else {
            for (int64_t i = 0; i < x->numel; i++) {
                double a = ox_tensor_get_f64(g, i), b = ox_tensor_get_f64(x, i);
                if (!close_enough(a, b, rtol, atol)) {
                    if (first < 0) {
                        first = i;
                        fg = a;
                        fx = b;
                    }
                    bad++;
                }
            }
        }
    } else {
        size_t nb = 0;
        if (!ox_dtype_nbytes(x->dtype, x->numel, &nb) || memcmp(gd, xd, nb) == 0)
            return true;
        for (int64_t i = 0; i < x->numel; i++) {
            int64_t a = ox_tensor_get_i64(g, i), b = ox_tensor_get_i64(x, i);
            if (a != b) {
                if (first < 0) {
                    first = i;
                    snprintf(why, n, "element %lld: %lld, expected %lld", (long long)i,
                             (long long)a, (long long)b);
                }
                bad++;
            }
        }
        if (!bad) /* packed padding bits only */
            return true;
        if (strlen(why) + 32 < n)
            snprintf(why + strlen(why), n - strlen(why), " (%lld of %lld differ)",
                     (long long)bad, (long long)x->numel);
        return false;
    }
    if (bad)
        snprintf(why, n, "element %lld: %.9g, expected %.9g (%lld of %lld differ)",
                 (long long)first, fg, fx, (long long)bad, (long long)x->numel);
    return bad == 0;
}

bool ox_rval_allclose(const ox_rval *got, const ox_rval *exp, double rtol,
                      double atol, char *why, size_t why_len)
{
    char dummy[8];
    if (!why || why_len == 0) {
        why = dummy;
        why_len = sizeof dummy;
    }
    why[0] = 0;
    if (!got || !exp) {
        snprintf(why, why_len, "%s", got ? "unexpected value" : "no value");
        return !got && !exp;
    }
    static const char *kinds[] = {"tensor", "sequence", "optional", "map"};
    if (got->kind != exp->kind) {
        snprintf(why, why_len, "%s, expected %s", kinds[got->kind & 3], kinds[exp->kind & 3]);
        return false;
    }
    if (got->kind == OX_RV_TENSOR || got->kind == OX_RV_MAP) {
        if (!got->t || !exp->t) {
            snprintf(why, why_len, "missing tensor");
            return false;
        }
        if (!tensor_allclose(got->t, exp->t, rtol, atol, why, why_len))
            return false;
        if (got->kind == OX_RV_TENSOR)
            return true;
    }
    if (got->n_items != exp->n_items) {
        snprintf(why, why_len, "%s of %d items, expected %d", kinds[got->kind & 3],
                 got->n_items, exp->n_items);
        return false;
    }
    for (int i = 0; i < got->n_items; i++) {
        char sub[400];
        if (!ox_rval_allclose(got->items[i], exp->items[i], rtol, atol, sub, sizeof sub)) {
            snprintf(why, why_len, "item %d: %s", i, sub);
            return false;
        }
    }
    return true;
}
