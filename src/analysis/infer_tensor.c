/* Inference for shape-manipulating and generator operators (Shape,
 * Reshape, Gather, Slice, Concat, ..., Range, ConstantOfShape, reductions)
 * including evaluation of their known values, which is what resolves an
 * exporter's Shape -> Gather -> Unsqueeze -> Concat -> Reshape chain. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/infer_internal.h"

#define MAXV 4096

/* Reads an int list given as attribute (older opsets) or as input idx.
 * Returns 1 (values in out, count in *n), 0 (absent), -1 (present, value
 * unknown). */
static int get_ints(ox_infer_node_ctx *c, const char *attr, int idx, int64_t *out,
                    int max, int *n)
{
    if (attr) {
        const int64_t *v;
        int cnt = ox_node_attr_ints(c->n, attr, &v);
        if (cnt >= 0) {
            if (cnt > max)
                return -1;
            if (cnt)   /* v is NULL for an empty list */
                memcpy(out, v, (size_t)cnt * sizeof *v);
            *n = cnt;
            return 1;
        }
        if (idx < 0)
            return 0;
    }
    if (idx < 0 || !ox__has_in(c, idx))
        return 0;
    int cnt = ox__in_ints(c, idx, out, max);
    if (cnt < 0)
        return -1;
    *n = cnt;
    return 1;
}

/* Product of dims [from, to) of t into d: known, a lone symbol, or unknown. */
static void prod_dims(const ox_type *t, int from, int to, ox_dim *d)
{
    int64_t p = 1;
    const char *sym = NULL;
    int nsym = 0;
    bool unknown = false;
    for (int i = from; i < to; i++) {
        if (t->dims[i].value >= 0) {
            p = ox__mul(p, t->dims[i].value);
            if (p < 0)
                unknown = true;
        } else if (t->dims[i].param) {
            sym = t->dims[i].param;
            nsym++;
        } else {
            unknown = true;
        }
    }
    d->param = NULL;
    d->denotation = NULL;
    if (!unknown && nsym == 0)
        d->value = p;
    else if (!unknown && nsym == 1 && p == 1) {
        d->value = -1;
        d->param = (char *)sym;  /* borrowed: callers copy through ox__dim_copy */
    } else if (p == 0)
        d->value = 0;
    else
        d->value = -1;
}

/* ---- Shape, Size ---------------------------------------------------------- */

ox_status ox__infer_shape(ox_infer_node_ctx *c)
{
    const ox_type *t = ox__in_shape(c, 0);
    if (!t)
        return ox__set_out(c, 0, ox__tt(OX_DT_INT64, 1));
    int r = t->rank;
    int64_t start = 0, end = r;
    if (c->opset >= 15) {
        start = ox_node_attr_i(c->n, "start", 0);
        end = ox_node_attr_i(c->n, "end", r);
        if (start < 0)
            start += r;
        if (end < 0)
            end += r;
        start = start < 0 ? 0 : start > r ? r : start;
        end = end < 0 ? 0 : end > r ? r : end;
        if (end < start)
            end = start;
    }
    int64_t len = end - start;
    ox_type *o = ox__tt(OX_DT_INT64, 1);
    ox__dim_set(o, 0, len);
    ox__set_out(c, 0, o);
    ox__kv *k = ox__kv_new(OX_DT_INT64, 1, &len);
    for (int64_t i = 0; k && i < len; i++) {
        const ox_dim *d = &t->dims[start + i];
        if (d->value >= 0)
            ox__kv_set_i(k, i, d->value);
        else if (d->param)
            ox__kv_set_sym(k, i, d->param);
    }
    ox__set_kv(c, 0, k);
    return OX_OK;
}

ox_status ox__infer_size(ox_infer_node_ctx *c)
{
    ox__set_out(c, 0, ox__tt(OX_DT_INT64, 0));
    const ox_type *t = ox__in_shape(c, 0);
    if (!t)
        return OX_OK;
    ox_dim d;
    prod_dims(t, 0, t->rank, &d);
    ox__kv *k = ox__kv_new(OX_DT_INT64, 0, NULL);
    if (k && d.value >= 0)
        ox__kv_set_i(k, 0, d.value);
    else if (k && d.param)
        ox__kv_set_sym(k, 0, d.param);
    ox__set_kv(c, 0, k);
    return OX_OK;
}

/* Re-dims a known value (Reshape, Squeeze, Unsqueeze, Flatten, Identity). */
static void kv_redim(ox_infer_node_ctx *c, const ox_type *o)
{
    const ox__kv *k = ox__in_kv(c, 0);
    if (!k || !o || !o->has_shape)
        return;
    int64_t dims[OX_MAX_RANK];
    if (o->rank > OX_MAX_RANK)
        return;
    for (int i = 0; i < o->rank; i++) {
        if (o->dims[i].value < 0)
            return;
        dims[i] = o->dims[i].value;
    }
    ox__kv *n = ox__kv_new(k->dt, o->rank, dims);
    if (!n)
        return;
    if (n->n != k->n) {
        ox__kv_free(n);
        return;
    }
    for (int64_t i = 0; i < k->n; i++)
        ox__kv_copy_elem(n, i, k, i);
    ox__set_kv(c, 0, n);
}

/* ---- Reshape ---------------------------------------------------------------- */

ox_status ox__infer_reshape(ox_infer_node_ctx *c)
{
    ox_dtype e = ox__in_elem(c, 0);
    const ox_type *in = ox__in_shape(c, 0);
    const ox__kv *sk = NULL;
    int64_t attr_shape[OX_MAX_RANK];
    int n = -1;
    ox__kv *owned = NULL;
    if (c->opset < 5) {
        int cnt;
        if (get_ints(c, "shape", -1, attr_shape, OX_MAX_RANK, &cnt) == 1) {
            int64_t len = cnt;
            owned = ox__kv_new(OX_DT_INT64, 1, &len);
            for (int i = 0; owned && i < cnt; i++)
                ox__kv_set_i(owned, i, attr_shape[i]);
            sk = owned;
        }
    } else {
        sk = ox__in_kv(c, 1);
    }
    if (sk && sk->rank <= 1)
        n = (int)sk->n;
    if (n < 0) {
        const ox_type *st = ox__in_shape(c, 1);
        ox__kv_free(owned);
        if (st && st->rank == 1 && ox__dim_known(st, 0) && ox__dimv(st, 0) <= OX_MAX_RANK)
            return ox__set_out(c, 0, ox__tt(e, (int)ox__dimv(st, 0)));
        return ox__set_out(c, 0, ox__tt(e, -1));
    }
    if (n > OX_MAX_RANK) {
        ox__kv_free(owned);
        return ox__fail(c, "target shape has %d dims", n);
    }
    bool allowzero = c->opset >= 14 && ox_node_attr_i(c->n, "allowzero", 0);
    ox_type *o = ox__tt(e, n);
    if (!o) {
        ox__kv_free(owned);
        return OX_ENOMEM;
    }
    int neg = -1;
    for (int i = 0; i < n; i++) {
        if (sk->known[i]) {
            int64_t v = ox__kv_get_i(sk, i);
            if (v == 0 && !allowzero) {
                if (in && i < in->rank)
                    ox__dim_copy(o, i, &in->dims[i]);
                else if (in) {
                    ox__kv_free(owned);
                    ox_type_free(o);
                    return ox__fail(c, "shape has 0 at %d beyond the input rank", i);
                }
            } else if (v == -1) {
                if (neg >= 0) {
                    ox__kv_free(owned);
                    ox_type_free(o);
                    return ox__fail(c, "more than one -1 in the target shape");
                }
                neg = i;
            } else if (v < -1) {
                ox__kv_free(owned);
                ox_type_free(o);
                return ox__fail(c, "invalid target dim %lld", (long long)v);
            } else {
                ox__dim_set(o, i, v);
            }
        } else if (sk->sym && sk->sym[i]) {
            ox__dim_sym(o, i, sk->sym[i]);
        }
    }
    if (neg >= 0 && in) {
        /* Solve the -1: products of known dims and multisets of symbols
         * on both sides, cancelling symbols that appear on both. */
        int64_t pin = 1, pout = 1;
        const char *sin[OX_MAX_RANK * 4], *sout[OX_MAX_RANK];
        int nin = 0, nout = 0;
        bool unknown = false;
        for (int i = 0; i < in->rank; i++) {
            if (in->dims[i].value >= 0 && ox__mul(pin, in->dims[i].value) >= 0)
                pin *= in->dims[i].value;
            else if (in->dims[i].value >= 0)
                unknown = true;
            else if (in->dims[i].param && nin < OX_MAX_RANK * 4)
                sin[nin++] = in->dims[i].param;
            else
                unknown = true;
        }
        for (int i = 0; i < n; i++) {
            if (i == neg)
                continue;
            if (o->dims[i].value >= 0 && ox__mul(pout, o->dims[i].value) >= 0)
                pout *= o->dims[i].value;
            else if (o->dims[i].value >= 0)
                unknown = true;
            else if (o->dims[i].param)
                sout[nout++] = o->dims[i].param;
            else
                unknown = true;
        }
        for (int a = 0; a < nout; a++) {
            for (int b = 0; b < nin; b++) {
                if (sin[b] && sout[a] && !strcmp(sin[b], sout[a])) {
                    sin[b] = NULL;
                    sout[a] = NULL;
                    break;
                }
            }
        }
        int left_in = 0, left_out = 0;
        const char *lone = NULL;
        for (int b = 0; b < nin; b++)
            if (sin[b]) {
                left_in++;
                lone = sin[b];
            }
        for (int a = 0; a < nout; a++)
            if (sout[a])
                left_out++;
        if (!unknown && !left_out) {
            if (!left_in && pout > 0 && pin % pout == 0)
                ox__dim_set(o, neg, pin / pout);
            else if (!left_in && pout > 0) {
                ox__kv_free(owned);
                ox_type_free(o);
                return ox__fail(c, "cannot reshape %lld elements into the target",
                                (long long)pin);
            } else if (left_in == 1 && pin == pout)
                ox__dim_sym(o, neg, lone);
        }
    }
    if (neg < 0 && in && ox_type_is_static(in) && ox_type_is_static(o)) {
        int64_t pin = 1, pout = 1;
        for (int i = 0; i < in->rank && pin >= 0; i++)
            pin = ox__mul(pin, in->dims[i].value);
        for (int i = 0; i < o->rank && pout >= 0; i++)
            pout = ox__mul(pout, o->dims[i].value);
        if (pin >= 0 && pout >= 0 && pin != pout) {
            ox__kv_free(owned);
            ox_type_free(o);
            return ox__fail(c, "cannot reshape %lld elements into %lld", (long long)pin,
                            (long long)pout);
        }
    }
    ox__kv_free(owned);
    ox__set_out(c, 0, o);
    kv_redim(c, ox__out_type(c, 0));
    return OX_OK;
}

ox_status ox__infer_flatten(ox_infer_node_ctx *c)
{
    const ox_type *in = ox__in_shape(c, 0);
    ox_dtype e = ox__in_elem(c, 0);
    if (!in)
        return ox__set_out(c, 0, ox__tt(e, 2));
    int64_t ax = ox_node_attr_i(c->n, "axis", 1);
    if (ax < 0)
        ax += in->rank;
    if (ax < 0 || ax > in->rank)
        return ox__fail(c, "axis out of range");
    ox_type *o = ox__tt(e, 2);
    ox_dim d;
    prod_dims(in, 0, (int)ax, &d);
    ox__dim_copy(o, 0, &d);
    prod_dims(in, (int)ax, in->rank, &d);
    ox__dim_copy(o, 1, &d);
    ox__set_out(c, 0, o);
    kv_redim(c, o);
    return OX_OK;
}

ox_status ox__infer_squeeze(ox_infer_node_ctx *c)
{
    const ox_type *in = ox__in_shape(c, 0);
    ox_dtype e = ox__in_elem(c, 0);
    int64_t axes[OX_MAX_RANK * 2];
    int na = 0;
    int got = get_ints(c, c->opset < 13 ? "axes" : NULL, c->opset < 13 ? -1 : 1, axes,
                       OX_MAX_RANK * 2, &na);
    if (!in || got < 0)
        return ox__set_out(c, 0, ox__tt(e, -1));
    bool drop[OX_MAX_RANK * 4] = { false };
    if (in->rank > OX_MAX_RANK * 4)
        return ox__set_out(c, 0, ox__tt(e, -1));
    if (got == 0) {
        for (int i = 0; i < in->rank; i++) {
            if (in->dims[i].value < 0)
                return ox__set_out(c, 0, ox__tt(e, -1));
            drop[i] = in->dims[i].value == 1;
        }
    } else {
        for (int j = 0; j < na; j++) {
            int a;
            if (!ox__axis(axes[j], in->rank, &a))
                return ox__fail(c, "axis %lld out of range", (long long)axes[j]);
            if (in->dims[a].value > 1)
                return ox__fail(c, "cannot squeeze dim %d of size %lld", a,
                                (long long)in->dims[a].value);
            drop[a] = true;
        }
    }
    int r = 0;
    for (int i = 0; i < in->rank; i++)
        r += !drop[i];
    ox_type *o = ox__tt(e, r);
    for (int i = 0, k = 0; i < in->rank; i++)
        if (!drop[i])
            ox__dim_copy(o, k++, &in->dims[i]);
    ox__set_out(c, 0, o);
    kv_redim(c, o);
    return OX_OK;
}

ox_status ox__infer_unsqueeze(ox_infer_node_ctx *c)
{
    const ox_type *in = ox__in_shape(c, 0);
    ox_dtype e = ox__in_elem(c, 0);
    int64_t axes[OX_MAX_RANK * 2];
    int na = 0;
    int got = get_ints(c, c->opset < 13 ? "axes" : NULL, c->opset < 13 ? -1 : 1, axes,
                       OX_MAX_RANK * 2, &na);
    if (!in || got <= 0)
        return ox__set_out(c, 0, ox__tt(e, -1));
    int r = in->rank + na;
    if (r > OX_MAX_RANK * 4)
        return ox__fail(c, "rank too large");
    bool ins[OX_MAX_RANK * 4] = { false };
    for (int j = 0; j < na; j++) {
        int a;
        if (!ox__axis(axes[j], r, &a) || ins[a])
            return ox__fail(c, "bad unsqueeze axis %lld", (long long)axes[j]);
        ins[a] = true;
    }
    ox_type *o = ox__tt(e, r);
    for (int i = 0, k = 0; i < r; i++) {
        if (ins[i])
            ox__dim_set(o, i, 1);
        else
            ox__dim_copy(o, i, &in->dims[k++]);
    }
    ox__set_out(c, 0, o);
    kv_redim(c, o);
    return OX_OK;
}

ox_status ox__infer_transpose(ox_infer_node_ctx *c)
{
    const ox_type *in = ox__in_shape(c, 0);
    ox_dtype e = ox__in_elem(c, 0);
    if (!in)
        return ox__set_out(c, 0, ox__tt(e, -1));
    const int64_t *perm;
    int np = ox_node_attr_ints(c->n, "perm", &perm);
    int r = in->rank;
    if (np >= 0 && np != r)
        return ox__fail(c, "perm has %d entries for rank %d", np, r);
    ox_type *o = ox__tt(e, r);
    bool seen[OX_MAX_RANK * 4] = { false };
    for (int i = 0; i < r; i++) {
        int64_t p = np >= 0 ? perm[i] : r - 1 - i;
        int a;
        if (!ox__axis(p, r, &a) || a >= OX_MAX_RANK * 4 || seen[a]) {
            ox_type_free(o);
            return ox__fail(c, "invalid perm");
        }
        seen[a] = true;
        ox__dim_copy(o, i, &in->dims[a]);
    }
    ox__set_out(c, 0, o);
    /* Known values of rank <= 1 are unchanged by a transpose. */
    const ox__kv *k = ox__in_kv(c, 0);
    if (k && k->rank <= 1)
        kv_redim(c, o);
    return OX_OK;
}

/* ---- Concat, Split ------------------------------------------------------------ */

ox_status ox__infer_concat(ox_infer_node_ctx *c)
{
    ox_dtype e = OX_DT_UNDEFINED;
    int r = -1;
    int nin = ox__nin(c);
    for (int i = 0; i < nin; i++) {
        if (!e)
            e = ox__in_elem(c, i);
        if (r < 0)
            r = ox__in_rank(c, i);
    }
    if (r < 0)
        return ox__set_out(c, 0, ox__tt(e, -1));
    int a;
    if (!ox__axis(ox_node_attr_i(c->n, "axis", 0), r, &a))
        return ox__fail(c, "axis out of range");
    ox_type *o = ox__tt(e, r);
    int64_t sum = 0;
    bool sum_known = true;
    const char *sym = NULL;
    int n_nonzero = 0;
    for (int i = 0; i < nin; i++) {
        if (!ox__has_in(c, i))
            continue;
        const ox_type *t = ox__in_shape(c, i);
        if (!t) {
            sum_known = false;
            n_nonzero = 99;
            continue;
        }
        if (t->rank != r) {
            ox_type_free(o);
            return ox__fail(c, "inputs have different ranks");
        }
        for (int k = 0; k < r; k++) {
            if (k == a)
                continue;
            if (o->dims[k].value < 0 && (t->dims[k].value >= 0 || !o->dims[k].param))
                ox__dim_copy(o, k, &t->dims[k]);
        }
        if (t->dims[a].value >= 0) {
            if (ox__add(sum, t->dims[a].value) < 0)
                sum_known = false;
            else
                sum += t->dims[a].value;
            if (t->dims[a].value)
                n_nonzero++;
        } else {
            sum_known = false;
            n_nonzero++;
            sym = t->dims[a].param;
        }
    }
    if (sum_known)
        ox__dim_set(o, a, sum);
    else if (n_nonzero == 1 && sym && sum == 0)
        ox__dim_sym(o, a, sym);
    ox__set_out(c, 0, o);
    /* Known values: concatenation of inputs that all have one. */
    if (sum_known && sum <= MAXV) {
        int64_t dims[OX_MAX_RANK];
        if (r > OX_MAX_RANK)
            return OX_OK;
        for (int k = 0; k < r; k++) {
            if (o->dims[k].value < 0)
                return OX_OK;
            dims[k] = o->dims[k].value;
        }
        ox__kv *out = ox__kv_new(e, r, dims);
        if (!out)
            return OX_OK;
        int64_t outer = 1, inner = 1;
        for (int k = 0; k < a; k++)
            outer *= dims[k];
        for (int k = a + 1; k < r; k++)
            inner *= dims[k];
        int64_t off = 0;
        for (int i = 0; i < nin; i++) {
            if (!ox__has_in(c, i))
                continue;
            const ox__kv *k = ox__in_kv(c, i);
            if (!k || k->rank != r) {
                ox__kv_free(out);
                return OX_OK;
            }
            int64_t da = k->dims[a];
            for (int64_t p = 0; p < outer; p++)
                for (int64_t q = 0; q < da * inner; q++)
                    ox__kv_copy_elem(out, p * sum * inner + off * inner + q, k,
                                     p * da * inner + q);
            off += da;
        }
        ox__set_kv(c, 0, out);
    }
    return OX_OK;
}

ox_status ox__infer_split(ox_infer_node_ctx *c)
{
    const ox_type *in = ox__in_shape(c, 0);
    ox_dtype e = ox__in_elem(c, 0);
    int nout = c->n->n_outputs;
    if (!in) {
        for (int i = 0; i < nout; i++)
            ox__set_out(c, i, ox__tt(e, -1));
        return OX_OK;
    }
    int a;
    if (!ox__axis(ox_node_attr_i(c->n, "axis", 0), in->rank, &a))
        return ox__fail(c, "axis out of range");
    int64_t split[256];
    int ns = 0;
    int got = get_ints(c, c->opset < 13 ? "split" : NULL, c->opset < 13 ? -1 : 1, split, 256,
                       &ns);
    int64_t dim = in->dims[a].value;
    int64_t sizes[256];
    bool known = false;
    if (nout > 256)
        nout = 256;
    if (got == 1 && ns == nout) {
        memcpy(sizes, split, (size_t)ns * sizeof *sizes);
        known = true;
    } else if (got == 0 && dim >= 0 && nout > 0) {
        int64_t num = c->opset >= 18 ? ox_node_attr_i(c->n, "num_outputs", nout) : nout;
        if (num <= 0 || num > ((int64_t)1 << 40))
            num = nout;
        if (c->opset >= 18 && dim <= ((int64_t)1 << 40)) {
            int64_t chunk = (dim + num - 1) / num;
            for (int i = 0; i < nout; i++) {
                int64_t left = dim - chunk * i;
                sizes[i] = left < 0 ? 0 : left < chunk ? left : chunk;
            }
            known = true;
        } else if (dim % nout == 0) {
            for (int i = 0; i < nout; i++)
                sizes[i] = dim / nout;
            known = true;
        }
    }
    for (int i = 0; i < nout; i++) {
        ox_type *o = ox__tt_copy(in, e);
        ox__dim_set(o, a, known ? sizes[i] : -1);
        ox__set_out(c, i, o);
    }
    /* Known 1-D values (a shape split into its dims) split too. */
    const ox__kv *k = ox__in_kv(c, 0);
    if (known && k && k->rank == 1) {
        int64_t off = 0;
        for (int i = 0; i < nout; i++) {
            if (sizes[i] < 0 || sizes[i] > k->n - off)
                break;
            ox__kv *part = ox__kv_new(k->dt, 1, &sizes[i]);
            for (int64_t j = 0; part && j < sizes[i]; j++)
                ox__kv_copy_elem(part, j, k, off + j);
            ox__set_kv(c, i, part);
            off += sizes[i];
        }
    }
    return OX_OK;
}

/* ---- Slice ----------------------------------------------------------------------- */

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

ox_status ox__infer_slice(ox_infer_node_ctx *c)
{
    const ox_type *in = ox__in_shape(c, 0);
    ox_dtype e = ox__in_elem(c, 0);
    if (!in)
        return ox__set_out(c, 0, ox__tt(e, -1));
    int r = in->rank;
    int64_t starts[64], ends[64], axes[64], steps[64];
    int ns = 0, ne = 0, na = 0, nst = 0;
    bool legacy = c->opset < 10;
    int gs = get_ints(c, legacy ? "starts" : NULL, legacy ? -1 : 1, starts, 64, &ns);
    int ge = get_ints(c, legacy ? "ends" : NULL, legacy ? -1 : 2, ends, 64, &ne);
    int ga = get_ints(c, legacy ? "axes" : NULL, legacy ? -1 : 3, axes, 64, &na);
    int gt = legacy ? 0 : get_ints(c, NULL, 4, steps, 64, &nst);
    ox_type *o = ox__tt_copy(in, e);
    if (ga < 0) {
        for (int k = 0; k < r; k++)
            ox__dim_set(o, k, -1);
        return ox__set_out(c, 0, o);
    }
    int cnt = ns;
    if (gs != 1 || ge != 1 || gt < 0) {
        /* Values unknown: the sliced axes lose their size. */
        const ox_type *st = ox__in_shape(c, legacy ? -1 : 1);
        if (ga == 1) {
            for (int j = 0; j < na; j++) {
                int a;
                if (ox__axis(axes[j], r, &a))
                    ox__dim_set(o, a, -1);
            }
        } else if (st && st->rank == 1 && ox__dimv(st, 0) == r) {
            for (int k = 0; k < r; k++)
                ox__dim_set(o, k, -1);
        } else {
            for (int k = 0; k < r; k++)
                ox__dim_set(o, k, -1);
        }
        return ox__set_out(c, 0, o);
    }
    if (ne != cnt || (ga == 1 && na != cnt) || (gt == 1 && nst != cnt)) {
        ox_type_free(o);
        return ox__fail(c, "starts/ends/axes/steps lengths differ");
    }
    int64_t s_eff[OX_MAX_RANK * 4], st_eff[OX_MAX_RANK * 4];
    for (int k = 0; k < r && k < OX_MAX_RANK * 4; k++) {
        s_eff[k] = 0;
        st_eff[k] = 1;
    }
    bool all_dims_known = true;
    for (int j = 0; j < cnt; j++) {
        int a;
        int64_t ax = ga == 1 ? axes[j] : j;
        if (!ox__axis(ax, r, &a)) {
            ox_type_free(o);
            return ox__fail(c, "axis %lld out of range", (long long)ax);
        }
        int64_t step = gt == 1 ? steps[j] : 1;
        if (step == 0) {
            ox_type_free(o);
            return ox__fail(c, "step is 0");
        }
        int64_t dim = in->dims[a].value;
        int64_t s = starts[j], en = ends[j];
        if (dim < 0) {
            all_dims_known = false;
            /* Slicing everything keeps the (symbolic) dim. */
            bool whole = step == 1 && s == 0 && en >= INT32_MAX;
            bool whole_rev = step == -1 && s == -1 && en <= -(int64_t)INT32_MAX;
            if (!(whole || whole_rev))
                ox__dim_set(o, a, -1);
            continue;
        }
        if (s < 0)
            s += dim;
        if (en < 0)
            en += dim;
        int64_t len;
        if (step > 0) {
            s = clamp64(s, 0, dim);
            en = clamp64(en, 0, dim);
            len = en > s ? (en - s - 1) / step + 1 : 0;
        } else {
            s = clamp64(s, 0, dim - 1);
            en = clamp64(en, -1, dim - 1);
            int64_t ns = step == INT64_MIN ? INT64_MAX : -step;
            len = s > en ? (s - en - 1) / ns + 1 : 0;
        }
        ox__dim_set(o, a, len);
        if (a < OX_MAX_RANK * 4) {
            s_eff[a] = s;
            st_eff[a] = step;
        }
    }
    ox__set_out(c, 0, o);
    /* Known values: copy the selected elements. */
    const ox__kv *k = ox__in_kv(c, 0);
    if (k && all_dims_known && k->rank == r && r <= OX_MAX_RANK) {
        int64_t od[OX_MAX_RANK];
        for (int i = 0; i < r; i++)
            od[i] = o->dims[i].value;
        ox__kv *out = ox__kv_new(k->dt, r, od);
        for (int64_t i = 0; out && i < out->n; i++) {
            int64_t rem = i, src = 0, stride = 1;
            for (int d = r - 1; d >= 0; d--) {
                int64_t idx = rem % od[d];
                rem /= od[d];
                src += (s_eff[d] + idx * st_eff[d]) * stride;
                stride *= k->dims[d];
            }
            ox__kv_copy_elem(out, i, k, src);
        }
        ox__set_kv(c, 0, out);
    }
    return OX_OK;
}

/* ---- Gather family ------------------------------------------------------------ */

ox_status ox__infer_gather(ox_infer_node_ctx *c)
{
    const ox_type *d = ox__in_shape(c, 0), *ix = ox__in_shape(c, 1);
    ox_dtype e = ox__in_elem(c, 0);
    if (!d || !ix)
        return ox__set_out(c, 0, ox__tt(e, -1));
    int a;
    if (!ox__axis(ox_node_attr_i(c->n, "axis", 0), d->rank, &a))
        return ox__fail(c, "axis out of range");
    int r = d->rank + ix->rank - 1;
    ox_type *o = ox__tt(e, r);
    int k = 0;
    for (int i = 0; i < a; i++)
        ox__dim_copy(o, k++, &d->dims[i]);
    for (int i = 0; i < ix->rank; i++)
        ox__dim_copy(o, k++, &ix->dims[i]);
    for (int i = a + 1; i < d->rank; i++)
        ox__dim_copy(o, k++, &d->dims[i]);
    ox__set_out(c, 0, o);
    const ox__kv *kd = ox__in_kv(c, 0), *ki = ox__in_kv(c, 1);
    if (kd && ki && ox__kv_all_known(ki) && a < kd->rank &&
        kd->rank + ki->rank - 1 <= OX_MAX_RANK) {
        r = kd->rank + ki->rank - 1;
        int64_t od[OX_MAX_RANK];
        int j = 0;
        for (int i = 0; i < a; i++)
            od[j++] = kd->dims[i];
        for (int i = 0; i < ki->rank; i++)
            od[j++] = ki->dims[i];
        for (int i = a + 1; i < kd->rank; i++)
            od[j++] = kd->dims[i];
        int64_t outer = 1, inner = 1, da = kd->dims[a];
        for (int i = 0; i < a; i++)
            outer *= kd->dims[i];
        for (int i = a + 1; i < kd->rank; i++)
            inner *= kd->dims[i];
        ox__kv *out = ox__kv_new(kd->dt, r, od);
        for (int64_t p = 0; out && p < outer; p++) {
            for (int64_t q = 0; q < ki->n; q++) {
                int64_t idx = ox__kv_get_i(ki, q);
                if (idx < 0)
                    idx += da;
                if (idx < 0 || idx >= da) {
                    ox__kv_free(out);
                    return ox__fail(c, "index %lld out of range", (long long)idx);
                }
                for (int64_t t = 0; t < inner; t++)
                    ox__kv_copy_elem(out, (p * ki->n + q) * inner + t, kd,
                                     (p * da + idx) * inner + t);
            }
        }
        ox__set_kv(c, 0, out);
    }
    return OX_OK;
}

ox_status ox__infer_gather_elements(ox_infer_node_ctx *c)
{
    return ox__set_out(c, 0, ox__tt_copy(ox__in_shape(c, 1), ox__in_elem(c, 0)));
}

ox_status ox__infer_gather_nd(ox_infer_node_ctx *c)
{
    const ox_type *d = ox__in_shape(c, 0), *ix = ox__in_shape(c, 1);
    ox_dtype e = ox__in_elem(c, 0);
    if (!d || !ix || ix->rank < 1 || !ox__dim_known(ix, ix->rank - 1))
        return ox__set_out(c, 0, ox__tt(e, -1));
    int64_t b = ox_node_attr_i(c->n, "batch_dims", 0);
    int64_t last = ox__dimv(ix, ix->rank - 1);
    int64_t r;
    if (b < 0 || b > d->rank || b > ix->rank - 1 || last > d->rank - b)
        return ox__fail(c, "indices do not fit data");
    r = ix->rank - 1 + d->rank - last - b;
    ox_type *o = ox__tt(e, (int)r);
    int k = 0;
    for (int i = 0; i < ix->rank - 1; i++)
        ox__dim_copy(o, k++, &ix->dims[i]);
    for (int64_t i = b + last; i < d->rank; i++)
        ox__dim_copy(o, k++, &d->dims[i]);
    return ox__set_out(c, 0, o);
}

/* ---- Expand, Tile, Pad ------------------------------------------------------------ */

ox_status ox__infer_expand(ox_infer_node_ctx *c)
{
    const ox_type *in = ox__in_shape(c, 0);
    ox_dtype e = ox__in_elem(c, 0);
    const ox__kv *sk = ox__in_kv(c, 1);
    if (!sk || sk->rank != 1 || sk->n > OX_MAX_RANK) {
        const ox_type *st = ox__in_shape(c, 1);
        int r = -1;
        if (in && st && st->rank == 1 && ox__dim_known(st, 0)) {
            r = (int)ox__dimv(st, 0);
            if (in->rank > r)
                r = in->rank;
        }
        return ox__set_out(c, 0, ox__tt(e, r));
    }
    ox_type *tt = ox__tt(e, (int)sk->n);
    for (int i = 0; i < sk->n; i++) {
        if (sk->known[i])
            ox__dim_set(tt, i, ox__kv_get_i(sk, i));
        else if (sk->sym && sk->sym[i])
            ox__dim_sym(tt, i, sk->sym[i]);
    }
    if (!in) {
        ox_type_free(tt);
        return ox__set_out(c, 0, ox__tt(e, -1));
    }
    int r = in->rank > tt->rank ? in->rank : tt->rank;
    ox_type *o = ox__tt(e, r);
    /* An unknown target dim next to a known input dim > 1 must equal it;
     * next to 1 or unknown it stays unknown (ox_infer_broadcast would
     * otherwise take the input's 1 for the result). */
    for (int i = 0; i < r; i++) {
        int ia = i - (r - in->rank), ib = i - (r - tt->rank);
        const ox_dim *da = ia >= 0 ? &in->dims[ia] : NULL;
        const ox_dim *db = ib >= 0 ? &tt->dims[ib] : NULL;
        if (!db) {
            ox__dim_copy(o, i, da);
        } else if (!da) {
            ox__dim_copy(o, i, db);
        } else if (db->value >= 0 && da->value >= 0) {
            if (db->value != da->value && db->value != 1 && da->value != 1) {
                ox_type_free(o);
                ox_type_free(tt);
                return ox__fail(c, "shape does not broadcast");
            }
            ox__dim_set(o, i, db->value == 1 ? da->value : db->value);
        } else if (db->value == 1) {
            ox__dim_copy(o, i, da);
        } else if (db->value >= 0) {
            ox__dim_set(o, i, db->value);
        } else if (da->value > 1) {
            ox__dim_set(o, i, da->value);
        } else if (da->value == 1) {
            ox__dim_copy(o, i, db);
        } else if (da->param && db->param && !strcmp(da->param, db->param)) {
            ox__dim_sym(o, i, da->param);
        }
    }
    ox_type_free(tt);
    ox__set_out(c, 0, o);
    const ox__kv *k = ox__in_kv(c, 0);
    if (k && r <= OX_MAX_RANK) {
        int64_t od[OX_MAX_RANK];
        for (int i = 0; i < r; i++) {
            if (o->dims[i].value < 0)
                return OX_OK;
            od[i] = o->dims[i].value;
        }
        ox__kv *out = ox__kv_new(k->dt, r, od);
        for (int64_t i = 0; out && i < out->n; i++) {
            int64_t rem = i, src = 0, stride = 1;
            for (int d = r - 1; d >= 0; d--) {
                int64_t idx = rem % od[d];
                rem /= od[d];
                int j = d - (r - k->rank);
                if (j >= 0) {
                    if (k->dims[j] != 1)
                        src += idx * stride;
                    stride *= k->dims[j];
                }
            }
            ox__kv_copy_elem(out, i, k, src);
        }
        ox__set_kv(c, 0, out);
    }
    return OX_OK;
}

ox_status ox__infer_tile(ox_infer_node_ctx *c)
{
    const ox_type *in = ox__in_shape(c, 0);
    ox_dtype e = ox__in_elem(c, 0);
    if (!in)
        return ox__set_out(c, 0, ox__tt(e, -1));
    int64_t rep[OX_MAX_RANK * 4];
    int n = ox__in_ints(c, 1, rep, OX_MAX_RANK * 4);
    ox_type *o = ox__tt_copy(in, e);
    for (int i = 0; i < in->rank; i++) {
        if (n == in->rank && in->dims[i].value >= 0)
            ox__dim_set(o, i, ox__mul(in->dims[i].value, rep[i]));
        else if (n == in->rank && rep[i] == 1)
            ;
        else
            ox__dim_set(o, i, -1);
    }
    return ox__set_out(c, 0, o);
}

ox_status ox__infer_pad(ox_infer_node_ctx *c)
{
    const ox_type *in = ox__in_shape(c, 0);
    ox_dtype e = ox__in_elem(c, 0);
    if (!in)
        return ox__set_out(c, 0, ox__tt(e, -1));
    int r = in->rank;
    int64_t pads[OX_MAX_RANK * 8], axes[OX_MAX_RANK * 4];
    int np = 0, na = 0;
    bool legacy = c->opset < 11;
    int gp = get_ints(c, legacy ? "pads" : NULL, legacy ? -1 : 1, pads, OX_MAX_RANK * 8, &np);
    int ga = legacy ? 0 : get_ints(c, NULL, 3, axes, OX_MAX_RANK * 4, &na);
    ox_type *o = ox__tt_copy(in, e);
    if (gp != 1 || ga < 0) {
        for (int i = 0; i < r; i++)
            ox__dim_set(o, i, -1);
        return ox__set_out(c, 0, o);
    }
    if (ga == 0) {
        na = r;
        for (int i = 0; i < r; i++)
            axes[i] = i;
    }
    if (np != 2 * na) {
        ox_type_free(o);
        return ox__fail(c, "pads has %d entries for %d axes", np, na);
    }
    for (int j = 0; j < na; j++) {
        int a;
        if (!ox__axis(axes[j], r, &a)) {
            ox_type_free(o);
            return ox__fail(c, "axis out of range");
        }
        int64_t t1, t2;
        if (in->dims[a].value >= 0 &&
            !__builtin_add_overflow(in->dims[a].value, pads[j], &t1) &&
            !__builtin_add_overflow(t1, pads[j + na], &t2))
            ox__dim_set(o, a, t2);
        else if (in->dims[a].value >= 0)
            ox__dim_set(o, a, -1);
        else if (pads[j] != 0 || pads[j + na] != 0)
            ox__dim_set(o, a, -1);
    }
    return ox__set_out(c, 0, o);
}

ox_status ox__infer_center_crop_pad(ox_infer_node_ctx *c)
{
    const ox_type *in = ox__in_shape(c, 0);
    ox_dtype e = ox__in_elem(c, 0);
    if (!in)
        return ox__set_out(c, 0, ox__tt(e, -1));
    int64_t sh[OX_MAX_RANK * 4];
    int ns = ox__in_ints(c, 1, sh, OX_MAX_RANK * 4);
    const int64_t *axes;
    int na = ox_node_attr_ints(c->n, "axes", &axes);
    ox_type *o = ox__tt_copy(in, e);
    if (ns < 0) {
        for (int i = 0; i < in->rank; i++)
            ox__dim_set(o, i, -1);
        return ox__set_out(c, 0, o);
    }
    for (int j = 0; j < ns; j++) {
        int a;
        int64_t ax = na >= 0 ? (j < na ? axes[j] : -999) : j;
        if (!ox__axis(ax, in->rank, &a)) {
            ox_type_free(o);
            return ox__fail(c, "axis out of range");
        }
        ox__dim_set(o, a, sh[j]);
    }
    return ox__set_out(c, 0, o);
}

ox_status ox__infer_depth_to_space(ox_infer_node_ctx *c)
{
    const ox_type *in = ox__in_shape(c, 0);
    ox_dtype e = ox__in_elem(c, 0);
    int64_t b = ox_node_attr_i(c->n, "blocksize", 0);
    if (!in || in->rank != 4 || b <= 0)
        return ox__set_out(c, 0, ox__tt(e, in ? in->rank : -1));
    ox_type *o = ox__tt_copy(in, e);
    int64_t ch = ox__dimv(in, 1), h = ox__dimv(in, 2), w = ox__dimv(in, 3);
    int64_t bb = ox__mul(b, b);
    ox__dim_set(o, 1, ch >= 0 && bb > 0 ? ch / bb : -1);
    ox__dim_set(o, 2, h >= 0 ? ox__mul(h, b) : -1);
    ox__dim_set(o, 3, w >= 0 ? ox__mul(w, b) : -1);
    return ox__set_out(c, 0, o);
}

ox_status ox__infer_space_to_depth(ox_infer_node_ctx *c)
{
    const ox_type *in = ox__in_shape(c, 0);
    ox_dtype e = ox__in_elem(c, 0);
    int64_t b = ox_node_attr_i(c->n, "blocksize", 0);
    if (!in || in->rank != 4 || b <= 0)
        return ox__set_out(c, 0, ox__tt(e, in ? in->rank : -1));
    ox_type *o = ox__tt_copy(in, e);
    int64_t ch = ox__dimv(in, 1), h = ox__dimv(in, 2), w = ox__dimv(in, 3);
    int64_t bb = ox__mul(b, b);
    ox__dim_set(o, 1, ch >= 0 && bb > 0 ? ox__mul(ch, bb) : -1);
    ox__dim_set(o, 2, h >= 0 ? h / b : -1);
    ox__dim_set(o, 3, w >= 0 ? w / b : -1);
    return ox__set_out(c, 0, o);
}

/* ---- generators -------------------------------------------------------------------- */

ox_status ox__infer_constant(ox_infer_node_ctx *c)
{
    const ox_node *n = c->n;
    for (int i = 0; i < n->n_attrs; i++) {
        const ox_attr *a = &n->attrs[i];
        if (!a->name)
            continue;
        ox_type *t = NULL;
        ox__kv *k = NULL;
        if (!strcmp(a->name, "value") && a->t) {
            t = ox__tt(a->t->dtype, a->t->rank);
            for (int d = 0; t && d < a->t->rank; d++)
                ox__dim_set(t, d, a->t->dims[d]);
            k = ox__kv_from_tensor(a->t);
        } else if (!strcmp(a->name, "sparse_value") && a->sparse && a->sparse->values) {
            t = ox__tt(a->sparse->values->dtype, a->sparse->rank);
            for (int d = 0; t && d < a->sparse->rank; d++)
                ox__dim_set(t, d, a->sparse->dims[d]);
        } else if (!strcmp(a->name, "value_float")) {
            t = ox__tt(OX_DT_FLOAT, 0);
            k = ox__kv_new(OX_DT_FLOAT, 0, NULL);
            if (k)
                ox__kv_set_f(k, 0, a->f);
        } else if (!strcmp(a->name, "value_int")) {
            t = ox__tt(OX_DT_INT64, 0);
            k = ox__kv_new(OX_DT_INT64, 0, NULL);
            if (k)
                ox__kv_set_i(k, 0, a->i);
        } else if (!strcmp(a->name, "value_floats") || !strcmp(a->name, "value_ints")) {
            bool f = a->name[6] == 'f';
            int64_t len = a->n;
            t = ox__tt(f ? OX_DT_FLOAT : OX_DT_INT64, 1);
            ox__dim_set(t, 0, len);
            k = ox__kv_new(f ? OX_DT_FLOAT : OX_DT_INT64, 1, &len);
            for (int j = 0; k && j < a->n; j++) {
                if (f && a->floats)
                    ox__kv_set_f(k, j, a->floats[j]);
                else if (!f && a->ints)
                    ox__kv_set_i(k, j, a->ints[j]);
            }
        } else if (!strcmp(a->name, "value_string")) {
            t = ox__tt(OX_DT_STRING, 0);
        } else if (!strcmp(a->name, "value_strings")) {
            t = ox__tt(OX_DT_STRING, 1);
            ox__dim_set(t, 0, a->n);
        } else {
            continue;
        }
        ox__set_out(c, 0, t);
        ox__set_kv(c, 0, k);
        return OX_OK;
    }
    return ox__fail(c, "Constant without a value attribute");
}

/* Output type from a known 1-D shape input (dims may be symbols). */
static ox_type *type_from_shape_input(ox_infer_node_ctx *c, int idx, ox_dtype e)
{
    const ox__kv *sk = ox__in_kv(c, idx);
    if (sk && sk->rank == 1 && sk->n <= OX_MAX_RANK) {
        ox_type *t = ox__tt(e, (int)sk->n);
        for (int i = 0; t && i < sk->n; i++) {
            if (sk->known[i])
                ox__dim_set(t, i, ox__kv_get_i(sk, i));
            else if (sk->sym && sk->sym[i])
                ox__dim_sym(t, i, sk->sym[i]);
        }
        return t;
    }
    const ox_type *st = ox__in_shape(c, idx);
    if (st && st->rank == 1 && ox__dim_known(st, 0) && ox__dimv(st, 0) <= OX_MAX_RANK)
        return ox__tt(e, (int)ox__dimv(st, 0));
    return ox__tt(e, -1);
}

ox_status ox__infer_constant_of_shape(ox_infer_node_ctx *c)
{
    const ox_attr *va = ox_node_attr(c->n, "value");
    ox_dtype e = va && va->t ? va->t->dtype : OX_DT_FLOAT;
    ox__set_out(c, 0, type_from_shape_input(c, 0, e));
    const ox_type *t = ox__out_type(c, 0);
    if (t && t->has_shape && t->rank <= OX_MAX_RANK && ox_type_is_static(t)) {
        int64_t dims[OX_MAX_RANK];
        for (int i = 0; i < t->rank; i++)
            dims[i] = t->dims[i].value;
        ox__kv *k = ox__kv_new(e, t->rank, dims);
        ox__kv *v = va && va->t ? ox__kv_from_tensor(va->t) : NULL;
        for (int64_t i = 0; k && i < k->n; i++) {
            if (v && v->n >= 1)
                ox__kv_copy_elem(k, i, v, 0);
            else
                ox__kv_set_i(k, i, 0);
        }
        ox__kv_free(v);
        ox__set_kv(c, 0, k);
    }
    return OX_OK;
}

ox_status ox__infer_range(ox_infer_node_ctx *c)
{
    ox_dtype e = ox__in_elem(c, 0);
    ox_type *o = ox__tt(e, 1);
    const ox__kv *a = ox__in_kv(c, 0), *b = ox__in_kv(c, 1), *d = ox__in_kv(c, 2);
    if (a && b && d && a->n == 1 && b->n == 1 && d->n == 1 && a->known[0] && b->known[0] &&
        d->known[0]) {
        double s = ox__kv_get_f(a, 0), l = ox__kv_get_f(b, 0), st = ox__kv_get_f(d, 0);
        if (st == 0) {
            ox_type_free(o);
            return ox__fail(c, "delta is 0");
        }
        int64_t n;
        bool ints = a->iv && b->iv && d->iv;
        if (ints) {
            /* In unsigned arithmetic: limit - start and -delta may not fit
             * an int64 (Range(INT64_MIN, INT64_MAX, 1)). */
            int64_t si = a->iv[0], li = b->iv[0], di = d->iv[0];
            uint64_t span = 0, step = 1;
            if (di > 0 && li > si) {
                span = (uint64_t)li - (uint64_t)si;
                step = (uint64_t)di;
            } else if (di < 0 && li < si) {
                span = (uint64_t)si - (uint64_t)li;
                step = 0 - (uint64_t)di;
            }
            uint64_t cnt = span ? (span - 1) / step + 1 : 0;
            if (cnt > ((uint64_t)1 << 40)) {
                ox_type_free(o);
                return ox__fail(c, "range too long");
            }
            n = (int64_t)cnt;
        } else {
            double q = ceil((l - s) / st);
            n = q > 0 ? ox__d2dim(q) : 0;
            if (n < 0 || n > ((int64_t)1 << 40)) {
                ox_type_free(o);
                return ox__fail(c, "range too long");
            }
        }
        ox__dim_set(o, 0, n);
        ox__kv *k = ox__kv_new(e ? e : a->dt, 1, &n);
        /* Stepping (not start + i * delta): every element lies between
         * start and limit, so no step overflows. */
        int64_t cur = ints ? a->iv[0] : 0;
        for (int64_t i = 0; k && i < n; i++) {
            if (ints && !k->fv) {
                ox__kv_set_i(k, i, cur);
                if (i + 1 < n)
                    cur += d->iv[0];
            } else {
                ox__kv_set_f(k, i, s + (double)i * st);
            }
        }
        ox__set_out(c, 0, o);
        ox__set_kv(c, 0, k);
        return OX_OK;
    }
    /* Range(0, n, 1) with a symbolic n (arange over a sequence length). */
    if (a && b && d && a->n == 1 && b->n == 1 && d->n == 1 && a->known[0] && d->known[0] &&
        !b->known[0] && b->sym && b->sym[0] && ox__kv_get_f(a, 0) == 0 &&
        ox__kv_get_f(d, 0) == 1)
        ox__dim_sym(o, 0, b->sym[0]);
    return ox__set_out(c, 0, o);
}

ox_status ox__infer_eye_like(ox_infer_node_ctx *c)
{
    ox_dtype e = ox__attr_dtype(c->n, "dtype", ox__in_elem(c, 0));
    return ox__set_out(c, 0, ox__tt_copy(ox__in_shape(c, 0), e));
}

ox_status ox__infer_random_like(ox_infer_node_ctx *c)
{
    ox_dtype e = ox__attr_dtype(c->n, "dtype", ox__in_elem(c, 0));
    return ox__set_out(c, 0, ox__tt_copy(ox__in_shape(c, 0), e));
}

/* Multinomial: (batch, sample_size) draws of class indices, int32 by
 * default (dtype). */
ox_status ox__infer_multinomial(ox_infer_node_ctx *c)
{
    const ox_type *x = ox__in_shape(c, 0);
    ox_dtype e = ox__attr_dtype(c->n, "dtype", OX_DT_INT32);
    if (e != OX_DT_INT32 && e != OX_DT_INT64)
        return ox__fail(c, "dtype must be int32 or int64");
    ox_type *o = ox__tt(e, 2);
    if (x && x->rank == 2)
        ox__dim_copy(o, 0, &x->dims[0]);
    ox__dim_set(o, 1, ox_node_attr_i(c->n, "sample_size", 1));
    return ox__set_out(c, 0, o);
}

ox_status ox__infer_bernoulli(ox_infer_node_ctx *c)
{
    return ox__infer_random_like(c);
}

ox_status ox__infer_random(ox_infer_node_ctx *c)
{
    ox_dtype e = ox__attr_dtype(c->n, "dtype", OX_DT_FLOAT);
    const int64_t *sh;
    int n = ox_node_attr_ints(c->n, "shape", &sh);
    if (n < 0)
        return ox__set_out(c, 0, ox__tt(e, -1));
    ox_type *t = ox__tt(e, n);
    for (int i = 0; i < n; i++)
        ox__dim_set(t, i, sh[i]);
    return ox__set_out(c, 0, t);
}

ox_status ox__infer_window(ox_infer_node_ctx *c)
{
    ox_dtype e = ox__attr_dtype(c->n, "output_datatype", OX_DT_FLOAT);
    ox_type *t = ox__tt(e, 1);
    int64_t v;
    if (ox__in_ints(c, 0, &v, 1) == 1)
        ox__dim_set(t, 0, v);
    return ox__set_out(c, 0, t);
}

ox_status ox__infer_mel(ox_infer_node_ctx *c)
{
    ox_dtype e = ox__attr_dtype(c->n, "output_datatype", OX_DT_FLOAT);
    ox_type *t = ox__tt(e, 2);
    int64_t bins, dft;
    if (ox__in_ints(c, 1, &dft, 1) == 1)
        ox__dim_set(t, 0, dft / 2 + 1);
    if (ox__in_ints(c, 0, &bins, 1) == 1)
        ox__dim_set(t, 1, bins);
    return ox__set_out(c, 0, t);
}

ox_status ox__infer_one_hot(ox_infer_node_ctx *c)
{
    const ox_type *ix = ox__in_shape(c, 0);
    ox_dtype e = ox__in_elem(c, 2);
    if (!ix)
        return ox__set_out(c, 0, ox__tt(e, -1));
    int r = ix->rank + 1;
    int a;
    if (!ox__axis(ox_node_attr_i(c->n, "axis", -1), r, &a))
        return ox__fail(c, "axis out of range");
    ox_type *o = ox__tt(e, r);
    const ox__kv *dk = ox__in_kv(c, 1);
    for (int i = 0, k = 0; i < r; i++) {
        if (i == a) {
            if (dk && dk->n == 1 && dk->known[0])
                ox__dim_set(o, i, ox__d2dim(ox__kv_get_f(dk, 0)));
        } else {
            ox__dim_copy(o, i, &ix->dims[k++]);
        }
    }
    return ox__set_out(c, 0, o);
}

ox_status ox__infer_nonzero(ox_infer_node_ctx *c)
{
    ox_type *o = ox__tt(OX_DT_INT64, 2);
    ox__dim_set(o, 0, ox__in_rank(c, 0));
    /* The count of non-zeros is known when the value is. */
    const ox__kv *k = ox__in_kv(c, 0);
    if (k && ox__kv_all_known(k)) {
        int64_t nz = 0;
        for (int64_t i = 0; i < k->n; i++)
            nz += ox__kv_get_f(k, i) != 0;
        ox__dim_set(o, 1, nz);
    }
    return ox__set_out(c, 0, o);
}

ox_status ox__infer_compress(ox_infer_node_ctx *c)
{
    const ox_type *in = ox__in_shape(c, 0);
    ox_dtype e = ox__in_elem(c, 0);
    const ox_attr *ax = ox_node_attr(c->n, "axis");
    const ox__kv *ck = ox__in_kv(c, 1);
    int64_t cnt = -1;
    if (ck && ox__kv_all_known(ck)) {
        cnt = 0;
        for (int64_t i = 0; i < ck->n; i++)
            cnt += ox__kv_get_i(ck, i) != 0;
    }
    if (!ax || !in) {
        ox_type *o = ox__tt(e, 1);
        if (cnt >= 0 && ck && in) {
            /* Only the first numel(input) condition entries count. */
            int64_t total = 1;
            for (int i = 0; i < in->rank && total >= 0; i++)
                total = in->dims[i].value >= 0 ? ox__mul(total, in->dims[i].value) : -1;
            if (total >= 0) {
                cnt = 0;
                for (int64_t i = 0; i < ck->n && i < total; i++)
                    cnt += ox__kv_get_i(ck, i) != 0;
                ox__dim_set(o, 0, cnt);
            }
        }
        return ox__set_out(c, 0, o);
    }
    int a;
    if (!ox__axis(ax->i, in->rank, &a))
        return ox__fail(c, "axis out of range");
    ox_type *o = ox__tt_copy(in, e);
    ox__dim_set(o, a, cnt);
    return ox__set_out(c, 0, o);
}

ox_status ox__infer_unique(ox_infer_node_ctx *c)
{
    const ox_type *in = ox__in_shape(c, 0);
    ox_dtype e = ox__in_elem(c, 0);
    const ox_attr *ax = ox_node_attr(c->n, "axis");
    ox_type *y;
    int a = -1;
    if (ax && in && ox__axis(ax->i, in->rank, &a)) {
        y = ox__tt_copy(in, e);
        ox__dim_set(y, a, -1);
    } else {
        y = ox__tt(e, ax ? -1 : 1);
    }
    /* With a known value the number of unique elements/slices is known. */
    const ox__kv *k = ox__in_kv(c, 0);
    int64_t nuniq = -1;
    if (k && ox__kv_all_known(k) && k->n <= 1024 && (!ax || a >= 0)) {
        int64_t outer = 1, len = k->n, inner = 1;
        if (ax) {
            len = k->dims[a];
            for (int i = 0; i < a; i++)
                outer *= k->dims[i];
            for (int i = a + 1; i < k->rank; i++)
                inner *= k->dims[i];
        }
        nuniq = 0;
        for (int64_t s1 = 0; s1 < len; s1++) {
            bool dup = false;
            for (int64_t s2 = 0; s2 < s1 && !dup; s2++) {
                bool eq = true;
                for (int64_t p = 0; p < outer && eq; p++)
                    for (int64_t q = 0; q < inner && eq; q++)
                        eq = ox__kv_get_f(k, (p * len + s1) * inner + q) ==
                             ox__kv_get_f(k, (p * len + s2) * inner + q);
                dup = eq;
            }
            nuniq += !dup;
        }
        ox__dim_set(y, ax ? a : 0, nuniq);
    }
    ox__set_out(c, 0, y);
    ox_type *ix1 = ox__tt(OX_DT_INT64, 1);
    ox__dim_set(ix1, 0, nuniq);
    ox__set_out(c, 1, ox_type_clone(ix1));
    ox__set_out(c, 3, ix1);
    ox_type *inv = ox__tt(OX_DT_INT64, 1);
    if (in && a >= 0)
        ox__dim_copy(inv, 0, &in->dims[a]);
    else if (in && !ax) {
        ox_dim d;
        prod_dims(in, 0, in->rank, &d);
        ox__dim_copy(inv, 0, &d);
    }
    return ox__set_out(c, 2, inv);
}

/* ---- reductions ---------------------------------------------------------------- */

ox_status ox__infer_topk(ox_infer_node_ctx *c)
{
    const ox_type *in = ox__in_shape(c, 0);
    ox_dtype e = ox__in_elem(c, 0);
    if (!in) {
        ox__set_out(c, 0, ox__tt(e, -1));
        return ox__set_out(c, 1, ox__tt(OX_DT_INT64, -1));
    }
    int a;
    if (!ox__axis(ox_node_attr_i(c->n, "axis", -1), in->rank, &a))
        return ox__fail(c, "axis out of range");
    int64_t k = -1;
    if (c->opset < 10)
        k = ox_node_attr_i(c->n, "k", -1);
    else if (ox__in_ints(c, 1, &k, 1) != 1)
        k = -1;
    ox_type *o = ox__tt_copy(in, e);
    ox__dim_set(o, a, k);
    ox_type *ix = ox__tt_copy(o, OX_DT_INT64);
    ox__set_out(c, 0, o);
    return ox__set_out(c, 1, ix);
}

ox_status ox__infer_argreduce(ox_infer_node_ctx *c)
{
    const ox_type *in = ox__in_shape(c, 0);
    if (!in)
        return ox__set_out(c, 0, ox__tt(OX_DT_INT64, -1));
    int a;
    if (!ox__axis(ox_node_attr_i(c->n, "axis", 0), in->rank, &a))
        return ox__fail(c, "axis out of range");
    bool keep = ox_node_attr_i(c->n, "keepdims", 1) != 0;
    ox_type *o = ox__tt(OX_DT_INT64, keep ? in->rank : in->rank - 1);
    for (int i = 0, k = 0; i < in->rank; i++) {
        if (i == a) {
            if (keep)
                ox__dim_set(o, k++, 1);
        } else {
            ox__dim_copy(o, k++, &in->dims[i]);
        }
    }
    return ox__set_out(c, 0, o);
}

ox_status ox__infer_reduce(ox_infer_node_ctx *c)
{
    const ox_type *in = ox__in_shape(c, 0);
    ox_dtype e = ox__in_elem(c, 0);
    bool keep = ox_node_attr_i(c->n, "keepdims", 1) != 0;
    bool from_input = c->schema && strstr(c->schema->inputs, "axes") != NULL;
    int64_t axes[OX_MAX_RANK * 4];
    int na = 0;
    int got = get_ints(c, from_input ? NULL : "axes", from_input ? 1 : -1, axes,
                       OX_MAX_RANK * 4, &na);
    if (!in)
        return ox__set_out(c, 0, ox__tt(e, -1));
    if (got < 0)
        return ox__set_out(c, 0, ox__tt(e, keep ? in->rank : -1));
    if (got == 1 && na == 0)
        got = 0;
    if (got == 0 && from_input && ox_node_attr_i(c->n, "noop_with_empty_axes", 0))
        return ox__pass_through(c, 0, 0);
    bool red[OX_MAX_RANK * 4] = { false };
    if (in->rank > OX_MAX_RANK * 4)
        return ox__set_out(c, 0, ox__tt(e, -1));
    for (int i = 0; i < in->rank; i++)
        red[i] = got == 0;
    for (int j = 0; j < na; j++) {
        int a;
        if (!ox__axis(axes[j], in->rank, &a))
            return ox__fail(c, "axis %lld out of range", (long long)axes[j]);
        red[a] = true;
    }
    int r = 0;
    for (int i = 0; i < in->rank; i++)
        r += keep || !red[i];
    ox_type *o = ox__tt(e, r);
    for (int i = 0, k = 0; i < in->rank; i++) {
        if (red[i]) {
            if (keep)
                ox__dim_set(o, k++, 1);
        } else {
            ox__dim_copy(o, k++, &in->dims[i]);
        }
    }
    ox__set_out(c, 0, o);
    /* Known values: full reductions of a 1-D value (ReduceProd of a shape
     * slice is how exporters compute a flattened size). */
    const ox__kv *k = ox__in_kv(c, 0);
    if (k && k->rank == 1 && ox__kv_all_known(k) && red[0]) {
        const char *op = c->n->op_type;
        bool prod = !strcmp(op, "ReduceProd"), sum = !strcmp(op, "ReduceSum");
        bool mx = !strcmp(op, "ReduceMax"), mn = !strcmp(op, "ReduceMin");
        if (prod || sum || mx || mn) {
            double acc = prod ? 1 : 0;
            for (int64_t i = 0; i < k->n; i++) {
                double v = ox__kv_get_f(k, i);
                if (prod)
                    acc *= v;
                else if (sum)
                    acc += v;
                else if (i == 0 || (mx ? v > acc : v < acc))
                    acc = v;
            }
            if ((mx || mn) && k->n == 0)
                return OX_OK;
            int64_t one = 1;
            ox__kv *out = ox__kv_new(k->dt, keep ? 1 : 0, &one);
            if (out)
                ox__kv_set_f(out, 0, acc);
            ox__set_kv(c, 0, out);
        }
    }
    return OX_OK;
}

ox_status ox__infer_det(ox_infer_node_ctx *c)
{
    const ox_type *in = ox__in_shape(c, 0);
    ox_dtype e = ox__in_elem(c, 0);
    if (!in || in->rank < 2)
        return ox__set_out(c, 0, ox__tt(e, -1));
    ox_type *o = ox__tt(e, in->rank - 2);
    for (int i = 0; i < in->rank - 2; i++)
        ox__dim_copy(o, i, &in->dims[i]);
    return ox__set_out(c, 0, o);
}
