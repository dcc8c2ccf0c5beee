/* ai.onnx.ml kernels present in the backend suite: Binarizer,
 * ArrayFeatureExtractor and LabelEncoder (opsets 1, 2 and 4). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/k_misc/misc.h"
#include "exec/k_tensor/tk_util.h"

ox_status ox_misc_binarizer(ox_kernel_ctx *c)
{
    const ox_tensor *x = ox_kernel_in(c, 0);
    if (!x || x->dtype == OX_DT_STRING || x->dtype == OX_DT_BOOL)
        return ox_errorf(c->err, OX_EINVAL, "numeric input expected");
    double th = ox_node_attr_f(c->node, "threshold", 0.0f);
    ox_tensor *y = ox_kernel_output(c, 0, x->dtype, x->rank, x->dims);
    if (!y)
        return c->err->status;
    for (int64_t i = 0; i < x->numel; i++)
        ox_tensor_set_f64(y, i, ox_misc_getf(x, i) > th ? 1.0 : 0.0);
    return OX_OK;
}

ox_status ox_misc_array_feature_extractor(ox_kernel_ctx *c)
{
    const ox_tensor *x = ox_kernel_in(c, 0), *ix = ox_kernel_in(c, 1);
    if (!x || !ix || x->rank < 1 || !ox_dtype_is_int(ix->dtype))
        return ox_errorf(c->err, OX_EINVAL, "X and int64 indices expected");
    int64_t last = x->dims[x->rank - 1], k = ix->numel;
    int64_t dims[OX_MAX_RANK];
    int rank = x->rank;
    if (rank == 1) {
        dims[0] = 1;
        dims[1] = k;
        rank = 2;
    } else {
        memcpy(dims, x->dims, sizeof dims);
        dims[rank - 1] = k;
    }
    for (int64_t j = 0; j < k; j++) {
        int64_t v = ox_tensor_get_i64(ix, j);
        if (v < 0 || v >= last)
            return ox_errorf(c->err, OX_EINVAL, "index %lld out of range", (long long)v);
    }
    ox_tensor *y = ox_kernel_output(c, 0, x->dtype, rank, dims);
    if (!y)
        return c->err->status;
    int64_t rows = last ? x->numel / last : 0;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < k; j++)
            ox_tk_copy(y, r * k + j, x, r * last + ox_tensor_get_i64(ix, j), 1);
    return OX_OK;
}

/* Keys or values of a LabelEncoder: strings, integers or floats. */
typedef struct lvec {
    int kind;              /* 0 none, 1 string, 2 int, 3 float */
    int n;
    const ox_bytes *s;
    const ox_tensor *t;    /* tensor form (keys_tensor/values_tensor) */
    const int64_t *i;
    const float *f;
} lvec;

static lvec attr_vec(const ox_node *n, const char *prefix)
{
    lvec v = {0};
    char name[64];
    const ox_attr *a;
    snprintf(name, sizeof name, "%s_tensor", prefix);
    if ((a = ox_node_attr(n, name)) && a->type == OX_ATTR_TENSOR && a->t) {
        v.t = a->t;
        v.n = (int)a->t->numel;
        v.kind = a->t->dtype == OX_DT_STRING ? 1 : ox_dtype_is_float(a->t->dtype) ? 3 : 2;
        return v;
    }
    snprintf(name, sizeof name, "%s_strings", prefix);
    if ((a = ox_node_attr(n, name)) && a->type == OX_ATTR_STRINGS) {
        v.kind = 1;
        v.n = a->n;
        v.s = a->strings;
        return v;
    }
    snprintf(name, sizeof name, "%s_int64s", prefix);
    if ((a = ox_node_attr(n, name)) && a->type == OX_ATTR_INTS) {
        v.kind = 2;
        v.n = a->n;
        v.i = a->ints;
        return v;
    }
    snprintf(name, sizeof name, "%s_floats", prefix);
    if ((a = ox_node_attr(n, name)) && a->type == OX_ATTR_FLOATS) {
        v.kind = 3;
        v.n = a->n;
        v.f = a->floats;
    }
    return v;
}

static const ox_bytes *lv_str(const lvec *v, int k)
{
    return v->t ? &v->t->strings[k] : &v->s[k];
}

static double lv_num(const lvec *v, int k)
{
    if (v->t)
        return ox_misc_getf(v->t, k);
    return v->kind == 2 ? (double)v->i[k] : (double)v->f[k];
}

ox_status ox_misc_label_encoder(ox_kernel_ctx *c)
{
    const ox_tensor *x = ox_kernel_in(c, 0);
    if (!x)
        return ox_errorf(c->err, OX_EINVAL, "no input");
    lvec keys, vals;
    ox_dtype out_dt;
    if (c->opset < 2) {
        /* classes_strings: int64 <-> string by position */
        const ox_attr *a = ox_node_attr(c->node, "classes_strings");
        if (!a || a->type != OX_ATTR_STRINGS)
            return ox_errorf(c->err, OX_EINVAL, "missing classes_strings");
        ox_tensor *y;
        if (x->dtype == OX_DT_STRING) {
            y = ox_kernel_output(c, 0, OX_DT_INT64, x->rank, x->dims);
            if (!y)
                return c->err->status;
            int64_t dflt = ox_node_attr_i(c->node, "default_int64", -1);
            for (int64_t i = 0; i < x->numel; i++) {
                int64_t r = dflt;
                for (int k = 0; k < a->n; k++)
                    if (a->strings[k].len == x->strings[i].len &&
                        memcmp(a->strings[k].data, x->strings[i].data, x->strings[i].len) == 0) {
                        r = k;
                        break;
                    }
                ((int64_t *)ox_tensor_data(y))[i] = r;
            }
        } else {
            y = ox_kernel_output(c, 0, OX_DT_STRING, x->rank, x->dims);
            if (!y)
                return c->err->status;
            const char *dflt = ox_node_attr_s(c->node, "default_string", "_Unused");
            for (int64_t i = 0; i < x->numel; i++) {
                int64_t k = ox_tensor_get_i64(x, i);
                const char *s = (k >= 0 && k < a->n) ? a->strings[k].data : dflt;
                size_t l = (k >= 0 && k < a->n) ? a->strings[k].len : strlen(s);
                char *d = malloc(l + 1);
                if (!d)
                    return ox_errorf(c->err, OX_ENOMEM, "out of memory");
                memcpy(d, s, l);
                d[l] = 0;
                free(y->strings[i].data);
                y->strings[i].data = d;
                y->strings[i].len = l;
            }
        }
        return OX_OK;
    }
    keys = attr_vec(c->node, "keys");
    vals = attr_vec(c->node, "values");
    if (!keys.kind || !vals.kind || keys.n != vals.n)
        return ox_errorf(c->err, OX_EINVAL, "keys and values must be given with equal length");
    const ox_attr *dt = ox_node_attr(c->node, "default_tensor");
    if (vals.t)
        out_dt = vals.t->dtype;
    else
        out_dt = vals.kind == 1 ? OX_DT_STRING : vals.kind == 2 ? OX_DT_INT64 : OX_DT_FLOAT;
    ox_tensor *y = ox_kernel_output(c, 0, out_dt, x->rank, x->dims);
    if (!y)
        return c->err->status;
    for (int64_t i = 0; i < x->numel; i++) {
        int hit = -1;
        for (int k = 0; k < keys.n && hit < 0; k++) {
            if (keys.kind == 1) {
                if (x->dtype != OX_DT_STRING)
                    break;
                const ox_bytes *ks = lv_str(&keys, k);
                if (ks->len == x->strings[i].len &&
                    memcmp(ks->data, x->strings[i].data, ks->len) == 0)
                    hit = k;
            } else if (x->dtype != OX_DT_STRING) {
                double xv = ox_misc_getf(x, i), kv = lv_num(&keys, k);
                if (xv == kv || (isnan(xv) && isnan(kv)))
                    hit = k;
            }
        }
        if (out_dt == OX_DT_STRING) {
            const char *s;
            size_t l;
            if (hit >= 0) {
                s = lv_str(&vals, hit)->data;
                l = lv_str(&vals, hit)->len;
            } else if (dt && dt->type == OX_ATTR_TENSOR && dt->t && dt->t->dtype == OX_DT_STRING &&
                       dt->t->numel > 0) {
                s = dt->t->strings[0].data;
                l = dt->t->strings[0].len;
            } else {
                s = ox_node_attr_s(c->node, "default_string", "_Unused");
                l = strlen(s);
            }
            char *d = malloc(l + 1);
            if (!d)
                return ox_errorf(c->err, OX_ENOMEM, "out of memory");
            memcpy(d, s, l);
            d[l] = 0;
            free(y->strings[i].data);
            y->strings[i].data = d;
            y->strings[i].len = l;
        } else {
            double v;
            if (hit >= 0)
                v = lv_num(&vals, hit);
            else if (dt && dt->type == OX_ATTR_TENSOR && dt->t && dt->t->numel > 0 &&
                     dt->t->dtype != OX_DT_STRING)
                v = ox_misc_getf(dt->t, 0);
            else if (ox_dtype_is_float(out_dt))
                v = ox_node_attr_f(c->node, "default_float", -0.0f);
            else
                v = (double)ox_node_attr_i(c->node, "default_int64", -1);
            ox_tensor_set_f64(y, i, v);
        }
    }
    return OX_OK;
}

/* ---- TfIdfVectorizer ---------------------------------------------------- */

/* Element i of the input or pool as a comparable item. */
static bool item_eq(const ox_tensor *x, int64_t i, const ox_attr *pool_s,
                    const ox_attr *pool_i, int64_t p)
{
    if (x->dtype == OX_DT_STRING) {
        if (!pool_s)
            return false;
        const ox_bytes *a = &x->strings[i], *b = &pool_s->strings[p];
        return a->len == b->len && memcmp(a->data, b->data, a->len) == 0;
    }
    return pool_i && ox_tensor_get_i64(x, i) == pool_i->ints[p];
}

ox_status ox_misc_tfidf(ox_kernel_ctx *c)
{
    const ox_tensor *x = ox_kernel_in(c, 0);
    if (!x || x->rank < 1 || x->rank > 2)
        return ox_errorf(c->err, OX_EINVAL, "X must be [C] or [N, C]");
    int64_t maxg = ox_node_attr_i(c->node, "max_gram_length", 1);
    int64_t ming = ox_node_attr_i(c->node, "min_gram_length", 1);
    int64_t maxskip = ox_node_attr_i(c->node, "max_skip_count", 0);
    const char *mode = ox_node_attr_s(c->node, "mode", "TF");
    const int64_t *counts, *oidx;
    int nc = ox_node_attr_ints(c->node, "ngram_counts", &counts);
    int ni = ox_node_attr_ints(c->node, "ngram_indexes", &oidx);
    const ox_attr *ps = ox_node_attr(c->node, "pool_strings");
    const ox_attr *pi = ox_node_attr(c->node, "pool_int64s");
    const ox_attr *wt = ox_node_attr(c->node, "weights");
    if (ps && ps->type != OX_ATTR_STRINGS)
        ps = NULL;
    if (pi && pi->type != OX_ATTR_INTS)
        pi = NULL;
    if (wt && wt->type != OX_ATTR_FLOATS)
        wt = NULL;
    int64_t pool_n = ps ? ps->n : pi ? pi->n : 0;
    if (nc < 1 || ni < 1 || ming < 1 || maxg < ming || maxg > nc || maxskip < 0 || !pool_n)
        return ox_errorf(c->err, OX_EINVAL, "bad TfIdfVectorizer attributes");
    int64_t nout = 0;
    for (int i = 0; i < ni; i++)
        if (oidx[i] + 1 > nout)
            nout = oidx[i] + 1;
    int64_t rows = x->rank == 2 ? x->dims[0] : 1, C = x->dims[x->rank - 1];
    int64_t dims[2] = {rows, nout};
    ox_tensor *y = x->rank == 2 ? ox_kernel_output(c, 0, OX_DT_FLOAT, 2, dims)
                                : ox_kernel_output(c, 0, OX_DT_FLOAT, 1, &nout);
    if (!y)
        return c->err->status;
    float *out = ox_tensor_data(y);
    for (int64_t r = 0; r < rows; r++) {
        float *o = out + r * nout;
        for (int64_t n = ming; n <= maxg; n++) {
            /* pool range of n-grams and the index of its first gram */
            int64_t beg = counts[n - 1], end = n < nc ? counts[n] : pool_n;
            if (beg < 0 || end > pool_n || beg > end)
                return ox_errorf(c->err, OX_EINVAL, "bad ngram_counts");
            int64_t gram0 = 0;
            for (int64_t j = 1; j < n; j++) {
                int64_t b = counts[j - 1], e = j < nc ? counts[j] : pool_n;
                gram0 += (e - b) / j;
            }
            for (int64_t s = 0; s <= (n == 1 ? 0 : maxskip); s++)
                for (int64_t i = 0; i + (n - 1) * (s + 1) < C; i++)
                    for (int64_t g = 0; beg + (g + 1) * n <= end; g++) {
                        bool eq = true;
                        for (int64_t k = 0; k < n && eq; k++)
                            eq = item_eq(x, r * C + i + k * (s + 1), ps, pi, beg + g * n + k);
                        if (eq && gram0 + g < ni) {
                            int64_t t = oidx[gram0 + g];
                            if (t >= 0 && t < nout)
                                o[t] += 1;
                        }
                    }
        }
        for (int i = 0; i < ni; i++) {
            int64_t t = oidx[i];
            if (t < 0 || t >= nout)
                continue;
            float w = (wt && i < wt->n) ? wt->floats[i] : 1.0f;
            if (!strcmp(mode, "IDF"))
                o[t] = o[t] > 0 ? w : 0;
            else if (!strcmp(mode, "TFIDF"))
                o[t] = o[t] * w;
        }
    }
    return OX_OK;
}

/* ---- TreeEnsemble (ai.onnx.ml 5) ------------------------------------------- */

static const ox_tensor *tattr(const ox_node *n, const char *name)
{
    const ox_attr *a = ox_node_attr(n, name);
    return (a && a->type == OX_ATTR_TENSOR) ? a->t : NULL;
}

static int ints_attr(const ox_node *n, const char *name, const int64_t **v)
{
    int k = ox_node_attr_ints(n, name, v);
    return k < 0 ? 0 : k;
}

ox_status ox_misc_tree_ensemble(ox_kernel_ctx *c)
{
    const ox_node *nd = c->node;
    const ox_tensor *x = ox_kernel_in(c, 0);
    if (!x || x->rank != 2 || !ox_dtype_is_float(x->dtype))
        return ox_errorf(c->err, OX_EINVAL, "X must be a float [N, F] tensor");
    const int64_t *feat, *tnode, *fnode, *tleaf, *fleaf, *roots, *ltarget, *mvt;
    int nn = ints_attr(nd, "nodes_featureids", &feat);
    int n_t = ints_attr(nd, "nodes_truenodeids", &tnode);
    int n_f = ints_attr(nd, "nodes_falsenodeids", &fnode);
    int n_tl = ints_attr(nd, "nodes_trueleafs", &tleaf);
    int n_fl = ints_attr(nd, "nodes_falseleafs", &fleaf);
    int nr = ints_attr(nd, "tree_roots", &roots);
    int nl = ints_attr(nd, "leaf_targetids", &ltarget);
    int nm = ints_attr(nd, "nodes_missing_value_tracks_true", &mvt);
    const ox_tensor *splits = tattr(nd, "nodes_splits"), *modes = tattr(nd, "nodes_modes"),
                    *lw = tattr(nd, "leaf_weights"), *memb = tattr(nd, "membership_values");
    int64_t n_targets = ox_node_attr_i(nd, "n_targets", 1);
    int64_t agg = ox_node_attr_i(nd, "aggregate_function", 1);
    int64_t post = ox_node_attr_i(nd, "post_transform", 0);
    if (nn == 0 || n_t != nn || n_f != nn || n_tl != nn || n_fl != nn || !splits ||
        splits->numel != nn || !lw || lw->numel != nl || n_targets <= 0 || nr == 0 ||
        (modes && modes->numel != nn))
        return ox_errorf(c->err, OX_EINVAL, "inconsistent TreeEnsemble attributes");
    if (post != 0)
        return ox_errorf(c->err, OX_EUNSUPPORTED, "post_transform %lld", (long long)post);
    /* Start of each MEMBER node's set inside membership_values (NaN-separated). */
    int64_t *mstart = calloc((size_t)nn + 1, sizeof *mstart);
    if (!mstart)
        return ox_errorf(c->err, OX_ENOMEM, "out of memory");
    int64_t mpos = 0;
    for (int i = 0; i < nn; i++) {
        mstart[i] = -1;
        if (modes && ox_tensor_get_i64(modes, i) == 6 && memb) {
            mstart[i] = mpos;
            while (mpos < memb->numel && !isnan(ox_misc_getf(memb, mpos)))
                mpos++;
            mpos++;
        }
    }
    int64_t N = x->dims[0], F = x->dims[1];
    int64_t dims[2] = {N, n_targets};
    ox_tensor *y = ox_kernel_output(c, 0, x->dtype, 2, dims);
    double *acc = calloc((size_t)n_targets + 1, sizeof *acc);
    bool *seen = calloc((size_t)n_targets + 1, sizeof *seen);
    ox_status st = OX_OK;
    if (!y || !acc || !seen) {
        st = y ? ox_errorf(c->err, OX_ENOMEM, "out of memory") : c->err->status;
        goto out;
    }
    for (int64_t r = 0; r < N; r++) {
        for (int64_t t = 0; t < n_targets; t++) {
            acc[t] = 0;
            seen[t] = false;
        }
        for (int tr = 0; tr < nr; tr++) {
            int64_t node = roots[tr];
            int64_t leaf = -1;
            for (int steps = 0; steps <= nn && leaf < 0; steps++) {
                if (node < 0 || node >= nn || feat[node] < 0 || feat[node] >= F) {
                    st = ox_errorf(c->err, OX_EINVAL, "bad tree node %lld", (long long)node);
                    goto out;
                }
                double v = ox_misc_getf(x, r * F + feat[node]);
                double s = ox_misc_getf(splits, node);
                int mode = modes ? (int)ox_tensor_get_i64(modes, node) : 0;
                bool cond;
                if (isnan(v) && node < nm && mvt[node]) {
                    cond = true;
                } else {
                    switch (mode) {
                    case 0: cond = v <= s; break;
                    case 1: cond = v < s; break;
                    case 2: cond = v >= s; break;
                    case 3: cond = v > s; break;
                    case 4: cond = v == s; break;
                    case 5: cond = v != s; break;
                    default:
                        cond = false;
                        for (int64_t k = mstart[node]; memb && k >= 0 && k < memb->numel; k++) {
                            double mv = ox_misc_getf(memb, k);
                            if (isnan(mv))
                                break;
                            if (mv == v) {
                                cond = true;
                                break;
                            }
                        }
                    }
                }
                int64_t next = cond ? tnode[node] : fnode[node];
                if (cond ? tleaf[node] : fleaf[node])
                    leaf = next;
                else
                    node = next;
            }
            if (leaf < 0 || leaf >= nl || ltarget[leaf] < 0 || ltarget[leaf] >= n_targets) {
                st = ox_errorf(c->err, OX_EINVAL, "bad tree leaf");
                goto out;
            }
            int64_t t = ltarget[leaf];
            double w = ox_misc_getf(lw, leaf);
            if (agg == 2)
                acc[t] = seen[t] ? fmin(acc[t], w) : w;
            else if (agg == 3)
                acc[t] = seen[t] ? fmax(acc[t], w) : w;
            else
                acc[t] += w;
            seen[t] = true;
        }
        for (int64_t t = 0; t < n_targets; t++)
            ox_tensor_set_f64(y, r * n_targets + t, agg == 0 ? acc[t] / nr : acc[t]);
    }
out:
    free(mstart);
    free(acc);
    free(seen);
    return st;
}
