/* Inference for linear algebra, convolution, pooling, resizing,
 * normalization, recurrent, attention and quantization operators, plus
 * the signal, loss, string and ai.onnx.ml ones. Formulas follow the ONNX
 * operator specification (docs/Operators.md). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/infer_internal.h"

/* ---- MatMul family ------------------------------------------------------------- */

/* numpy matmul of a and b (after optional transposes of the last two dims
 * of each) into a new type with element e. */
static ox_status matmul_shape(ox_infer_node_ctx *c, const ox_type *a, const ox_type *b,
                              bool ta, bool tb, ox_dtype e, int out_idx)
{
    if (!a || !b)
        return ox__set_out(c, out_idx, ox__tt(e, -1));
    if (a->rank < 1 || b->rank < 1)
        return ox__fail(c, "matmul of a scalar");
    int ra = a->rank, rb = b->rank;
    /* Promote 1-D operands as numpy does. */
    ox_dim one = {.value = 1};
    const ox_dim *am, *ak, *bk, *bn;
    if (ra == 1) {
        am = &one;
        ak = &a->dims[0];
    } else {
        am = &a->dims[ra - (ta ? 1 : 2)];
        ak = &a->dims[ra - (ta ? 2 : 1)];
    }
    if (rb == 1) {
        bk = &b->dims[0];
        bn = &one;
    } else {
        bk = &b->dims[rb - (tb ? 1 : 2)];
        bn = &b->dims[rb - (tb ? 2 : 1)];
    }
    if (ak->value >= 0 && bk->value >= 0 && ak->value != bk->value)
        return ox__fail(c, "inner dims differ (%lld vs %lld)", (long long)ak->value,
                        (long long)bk->value);
    int ba = ra > 2 ? ra - 2 : 0, bb = rb > 2 ? rb - 2 : 0;
    int batch = ba > bb ? ba : bb;
    int r = batch + (ra > 1) + (rb > 1);
    ox_type *o = ox__tt(e, r);
    if (!o)
        return OX_ENOMEM;
    if (batch) {
        ox_type *ta_ = ox__tt(e, ba), *tb_ = ox__tt(e, bb), *tr = ox__tt(e, batch);
        for (int i = 0; i < ba; i++)
            ox__dim_copy(ta_, i, &a->dims[i]);
        for (int i = 0; i < bb; i++)
            ox__dim_copy(tb_, i, &b->dims[i]);
        bool ok = ox_infer_broadcast(ta_, tb_, tr);
        for (int i = 0; i < batch; i++)
            ox__dim_copy(o, i, &tr->dims[i]);
        ox_type_free(ta_);
        ox_type_free(tb_);
        ox_type_free(tr);
        if (!ok) {
            ox_type_free(o);
            return ox__fail(c, "batch dims do not broadcast");
        }
    }
    int k = batch;
    if (ra > 1)
        ox__dim_copy(o, k++, am);
    if (rb > 1)
        ox__dim_copy(o, k++, bn);
    return ox__set_out(c, out_idx, o);
}

ox_status ox__infer_matmul(ox_infer_node_ctx *c)
{
    return matmul_shape(c, ox__in_shape(c, 0), ox__in_shape(c, 1), false, false,
                        ox__in_elem(c, 0), 0);
}

ox_status ox__infer_fused_matmul(ox_infer_node_ctx *c)
{
    return matmul_shape(c, ox__in_shape(c, 0), ox__in_shape(c, 1),
                        ox_node_attr_i(c->n, "transA", 0) != 0,
                        ox_node_attr_i(c->n, "transB", 0) != 0, ox__in_elem(c, 0), 0);
}

ox_status ox__infer_int_matmul(ox_infer_node_ctx *c)
{
    return matmul_shape(c, ox__in_shape(c, 0), ox__in_shape(c, 1), false, false,
                        OX_DT_INT32, 0);
}

ox_status ox__infer_qlinear_matmul(ox_infer_node_ctx *c)
{
    ox_dtype e = ox__in_elem(c, 7);
    if (!e)
        e = ox__in_elem(c, 0);
    return matmul_shape(c, ox__in_shape(c, 0), ox__in_shape(c, 3), false, false, e, 0);
}

ox_status ox__infer_gemm(ox_infer_node_ctx *c)
{
    const ox_type *a = ox__in_shape(c, 0), *b = ox__in_shape(c, 1);
    ox_dtype e = ox__in_elem(c, 0);
    ox_type *o = ox__tt(e, 2);
    bool ta = ox_node_attr_i(c->n, "transA", 0) != 0;
    bool tb = ox_node_attr_i(c->n, "transB", 0) != 0;
    if (a && a->rank == 2)
        ox__dim_copy(o, 0, &a->dims[ta ? 1 : 0]);
    if (b && b->rank == 2)
        ox__dim_copy(o, 1, &b->dims[tb ? 0 : 1]);
    if (a && b && a->rank == 2 && b->rank == 2) {
        const ox_dim *ka = &a->dims[ta ? 0 : 1], *kb = &b->dims[tb ? 1 : 0];
        if (ka->value >= 0 && kb->value >= 0 && ka->value != kb->value) {
            ox_type_free(o);
            return ox__fail(c, "inner dims differ");
        }
    }
    return ox__set_out(c, 0, o);
}

/* ---- convolution and pooling ---------------------------------------------------- */

typedef struct {
    int nsp;                       /* spatial dims */
    int64_t k[OX_MAX_RANK], s[OX_MAX_RANK], d[OX_MAX_RANK];
    int64_t pb[OX_MAX_RANK], pe[OX_MAX_RANK];
    int auto_pad;                  /* 0 NOTSET, 1 SAME_UPPER, 2 SAME_LOWER, 3 VALID */
    bool ceil;
} win_params;

/* Reads kernel/strides/dilations/pads; kernel from attr or from W dims. */
static bool read_window(ox_infer_node_ctx *c, int nsp, const ox_type *w, win_params *p)
{
    if (nsp < 0 || nsp > OX_MAX_RANK)
        return false;
    memset(p, 0, sizeof *p);
    p->nsp = nsp;
    const int64_t *v;
    int n = ox_node_attr_ints(c->n, "kernel_shape", &v);
    for (int i = 0; i < nsp; i++) {
        if (n == nsp)
            p->k[i] = v[i];
        else if (w && w->rank == nsp + 2)
            p->k[i] = ox__dimv(w, i + 2);
        else
            p->k[i] = -1;
        p->s[i] = 1;
        p->d[i] = 1;
    }
    /* nsp > 0: an empty list's array is NULL (memcpy(d, NULL, 0) is UB). */
    if ((n = ox_node_attr_ints(c->n, "strides", &v)) == nsp && nsp > 0)
        memcpy(p->s, v, (size_t)nsp * sizeof *v);
    if ((n = ox_node_attr_ints(c->n, "dilations", &v)) == nsp && nsp > 0)
        memcpy(p->d, v, (size_t)nsp * sizeof *v);
    if ((n = ox_node_attr_ints(c->n, "pads", &v)) == 2 * nsp && nsp > 0) {
        memcpy(p->pb, v, (size_t)nsp * sizeof *v);
        memcpy(p->pe, v + nsp, (size_t)nsp * sizeof *v);
    }
    const char *ap = ox_node_attr_s(c->n, "auto_pad", "NOTSET");
    p->auto_pad = !strcmp(ap, "SAME_UPPER") ? 1 : !strcmp(ap, "SAME_LOWER") ? 2
                : !strcmp(ap, "VALID") ? 3 : 0;
    p->ceil = ox_node_attr_i(c->n, "ceil_mode", 0) != 0;
    /* Bounds keep the window arithmetic below free of overflow. */
    const int64_t lim = (int64_t)1 << 31;
    for (int i = 0; i < nsp; i++)
        if (p->s[i] <= 0 || p->d[i] <= 0 || p->s[i] > lim || p->d[i] > lim ||
            p->k[i] < -1 || p->k[i] > lim || p->pb[i] < -lim || p->pb[i] > lim ||
            p->pe[i] < -lim || p->pe[i] > lim)
            return false;
    return true;
}

static int64_t out_dim(const win_params *p, int i, int64_t in)
{
    if (in < 0 || p->k[i] < 0 || in > ((int64_t)1 << 40))
        return -1;
    int64_t s = p->s[i];
    if (p->auto_pad == 1 || p->auto_pad == 2)
        return (in + s - 1) / s;
    int64_t ek = (p->k[i] - 1) * p->d[i] + 1;
    int64_t tot = in + (p->auto_pad == 3 ? 0 : p->pb[i] + p->pe[i]);
    if (tot < ek)
        return 0;
    int64_t num = tot - ek;
    int64_t o = (p->ceil ? (num + s - 1) / s : num / s) + 1;
    /* The last window must start inside the input or left padding. */
    if (p->ceil && (o - 1) * s >= in + p->pb[i])
        o--;
    return o;
}

static ox_status conv_like(ox_infer_node_ctx *c, ox_dtype e, int x_idx, int w_idx)
{
    const ox_type *x = ox__in_shape(c, x_idx), *w = ox__in_shape(c, w_idx);
    if (!x || x->rank < 2)
        return ox__set_out(c, 0, ox__tt(e, x ? x->rank : (w ? w->rank : -1)));
    int nsp = x->rank - 2;
    win_params p;
    if (!read_window(c, nsp, w, &p))
        return ox__fail(c, "bad window attributes");
    ox_type *o = ox__tt(e, x->rank);
    ox__dim_copy(o, 0, &x->dims[0]);
    if (w && w->rank >= 1)
        ox__dim_copy(o, 1, &w->dims[0]);
    for (int i = 0; i < nsp; i++)
        ox__dim_set(o, i + 2, out_dim(&p, i, x->dims[i + 2].value));
    return ox__set_out(c, 0, o);
}

ox_status ox__infer_conv(ox_infer_node_ctx *c)
{
    return conv_like(c, ox__in_elem(c, 0), 0, 1);
}

ox_status ox__infer_deform_conv(ox_infer_node_ctx *c)
{
    return conv_like(c, ox__in_elem(c, 0), 0, 1);
}

ox_status ox__infer_conv_integer(ox_infer_node_ctx *c)
{
    return conv_like(c, OX_DT_INT32, 0, 1);
}

ox_status ox__infer_qlinear_conv(ox_infer_node_ctx *c)
{
    ox_dtype e = ox__in_elem(c, 7);
    return conv_like(c, e ? e : ox__in_elem(c, 0), 0, 3);
}

ox_status ox__infer_conv_transpose(ox_infer_node_ctx *c)
{
    const ox_type *x = ox__in_shape(c, 0), *w = ox__in_shape(c, 1);
    ox_dtype e = ox__in_elem(c, 0);
    if (!x || x->rank < 2)
        return ox__set_out(c, 0, ox__tt(e, -1));
    int nsp = x->rank - 2;
    win_params p;
    if (!read_window(c, nsp, w, &p))
        return ox__fail(c, "bad window attributes");
    ox_type *o = ox__tt(e, x->rank);
    ox__dim_copy(o, 0, &x->dims[0]);
    int64_t g = ox_node_attr_i(c->n, "group", 1);
    if (w && w->rank >= 2 && ox__dim_known(w, 1))
        ox__dim_set(o, 1, ox__mul(ox__dimv(w, 1), g));
    const int64_t *os, *op;
    int nos = ox_node_attr_ints(c->n, "output_shape", &os);
    int nop = ox_node_attr_ints(c->n, "output_padding", &op);
    for (int i = 0; i < nsp; i++) {
        int64_t in = x->dims[i + 2].value, r = -1;
        if (nos == nsp)
            r = os[i];
        else if (nos == nsp + 2)
            r = os[i + 2];
        else if (in >= 0 && p.k[i] >= 0) {
            int64_t opad = nop == nsp ? op[i] : 0;
            const int64_t lim = (int64_t)1 << 31;
            if (in > ((int64_t)1 << 40) || opad < -lim || opad > lim)
                r = -1;
            else if (p.auto_pad == 1 || p.auto_pad == 2)
                r = in * p.s[i];
            else
                r = p.s[i] * (in - 1) + opad + (p.k[i] - 1) * p.d[i] + 1 -
                    (p.auto_pad == 3 ? 0 : p.pb[i] + p.pe[i]);
        }
        ox__dim_set(o, i + 2, r);
    }
    return ox__set_out(c, 0, o);
}

ox_status ox__infer_pool(ox_infer_node_ctx *c)
{
    const ox_type *x = ox__in_shape(c, 0);
    ox_dtype e = ox__in_elem(c, 0);
    if (!x || x->rank < 2) {
        ox__set_out(c, 1, ox__tt(OX_DT_INT64, -1));
        return ox__set_out(c, 0, ox__tt(e, -1));
    }
    int nsp = x->rank - 2;
    win_params p;
    if (!read_window(c, nsp, NULL, &p))
        return ox__fail(c, "bad window attributes");
    ox_type *o = ox__tt_copy(x, e);
    for (int i = 0; i < nsp; i++)
        ox__dim_set(o, i + 2, out_dim(&p, i, x->dims[i + 2].value));
    ox__set_out(c, 1, ox__tt_copy(o, OX_DT_INT64));
    return ox__set_out(c, 0, o);
}

ox_status ox__infer_global_pool(ox_infer_node_ctx *c)
{
    const ox_type *x = ox__in_shape(c, 0);
    ox_dtype e = ox__in_elem(c, 0);
    if (!x)
        return ox__set_out(c, 0, ox__tt(e, -1));
    ox_type *o = ox__tt_copy(x, e);
    for (int i = 2; i < x->rank; i++)
        ox__dim_set(o, i, 1);
    return ox__set_out(c, 0, o);
}

ox_status ox__infer_max_unpool(ox_infer_node_ctx *c)
{
    const ox_type *x = ox__in_shape(c, 0);
    ox_dtype e = ox__in_elem(c, 0);
    if (ox__has_in(c, 2)) {
        ox_type *t = NULL;
        int64_t sh[OX_MAX_RANK];
        int n = ox__in_ints(c, 2, sh, OX_MAX_RANK);
        if (n >= 0) {
            t = ox__tt(e, n);
            for (int i = 0; i < n; i++)
                ox__dim_set(t, i, sh[i]);
        } else {
            t = ox__tt(e, x ? x->rank : -1);
        }
        return ox__set_out(c, 0, t);
    }
    if (!x || x->rank < 2)
        return ox__set_out(c, 0, ox__tt(e, -1));
    win_params p;
    if (!read_window(c, x->rank - 2, NULL, &p))
        return ox__fail(c, "bad window attributes");
    ox_type *o = ox__tt_copy(x, e);
    for (int i = 0; i < p.nsp; i++) {
        int64_t in = x->dims[i + 2].value;
        ox__dim_set(o, i + 2, in >= 0 && p.k[i] >= 0 && in <= ((int64_t)1 << 40)
                                  ? (in - 1) * p.s[i] + p.k[i] - p.pb[i] - p.pe[i] : -1);
    }
    return ox__set_out(c, 0, o);
}

ox_status ox__infer_col2im(ox_infer_node_ctx *c)
{
    const ox_type *x = ox__in_shape(c, 0);
    ox_dtype e = ox__in_elem(c, 0);
    int64_t img[OX_MAX_RANK], blk[OX_MAX_RANK];
    int ni = ox__in_ints(c, 1, img, OX_MAX_RANK);
    int nb = ox__in_ints(c, 2, blk, OX_MAX_RANK);
    if (ni < 0) {
        const ox_type *st = ox__in_shape(c, 1);
        int r = st && ox__dim_known(st, 0) ? (int)ox__dimv(st, 0) + 2 : -1;
        return ox__set_out(c, 0, ox__tt(e, r));
    }
    ox_type *o = ox__tt(e, ni + 2);
    if (x && x->rank == 3) {
        ox__dim_copy(o, 0, &x->dims[0]);
        if (nb == ni && ox__dim_known(x, 1)) {
            int64_t prod = 1;
            for (int i = 0; i < nb; i++)
                prod = prod > 0 ? ox__mul(prod, blk[i]) : -1;
            if (prod > 0)
                ox__dim_set(o, 1, ox__dimv(x, 1) / prod);
        }
    }
    for (int i = 0; i < ni; i++)
        ox__dim_set(o, i + 2, img[i]);
    return ox__set_out(c, 0, o);
}

/* ---- resize -------------------------------------------------------------------- */

static ox_status resize_common(ox_infer_node_ctx *c, int scales_idx, int sizes_idx,
                               const float *attr_scales, int n_attr)
{
    const ox_type *x = ox__in_shape(c, 0);
    ox_dtype e = ox__in_elem(c, 0);
    if (!x)
        return ox__set_out(c, 0, ox__tt(e, -1));
    int r = x->rank;
    ox_type *o = ox__tt_copy(x, e);
    int64_t axes[OX_MAX_RANK * 4];
    const int64_t *av;
    int na = ox_node_attr_ints(c->n, "axes", &av);
    if (na < 0 || na > r) {
        na = r;
        for (int i = 0; i < r && i < OX_MAX_RANK * 4; i++)
            axes[i] = i;
    } else {
        for (int i = 0; i < na; i++) {
            int a;
            if (!ox__axis(av[i], r, &a)) {
                ox_type_free(o);
                return ox__fail(c, "axis out of range");
            }
            axes[i] = a;
        }
    }
    const ox__kv *sz = sizes_idx >= 0 ? ox__in_kv(c, sizes_idx) : NULL;
    const ox__kv *sc = scales_idx >= 0 ? ox__in_kv(c, scales_idx) : NULL;
    if (sz && sz->n == 0)
        sz = NULL;
    if (sc && sc->n == 0)
        sc = NULL;
    if (sz && sz->n == na && ox__kv_all_known(sz)) {
        const char *pol = ox_node_attr_s(c->n, "keep_aspect_ratio_policy", "stretch");
        if (strcmp(pol, "stretch") != 0) {
            double scale = strcmp(pol, "not_larger") == 0 ? 1e300 : 0;
            bool ok = true;
            for (int i = 0; i < na; i++) {
                int64_t in = x->dims[axes[i]].value;
                if (in <= 0) {
                    ok = false;
                    break;
                }
                double s = (double)ox__kv_get_i(sz, i) / (double)in;
                scale = strcmp(pol, "not_larger") == 0 ? fmin(scale, s) : fmax(scale, s);
            }
            for (int i = 0; i < na; i++)
                ox__dim_set(o, (int)axes[i], ok ? ox__d2dim(floor(scale * (double)x->dims[axes[i]].value + 0.5)) : -1);
        } else {
            for (int i = 0; i < na; i++)
                ox__dim_set(o, (int)axes[i], ox__kv_get_i(sz, i));
        }
    } else if ((sc && sc->n == na && ox__kv_all_known(sc)) || n_attr == r) {
        for (int i = 0; i < na; i++) {
            int64_t in = x->dims[axes[i]].value;
            double s = attr_scales ? attr_scales[i] : ox__kv_get_f(sc, i);
            ox__dim_set(o, (int)axes[i], in >= 0 ? ox__d2dim(floor((double)in * s + 1e-9)) : -1);
        }
    } else {
        for (int i = 0; i < r; i++)
            ox__dim_set(o, i, -1);
    }
    return ox__set_out(c, 0, o);
}

ox_status ox__infer_resize(ox_infer_node_ctx *c)
{
    if (c->opset < 11)
        return resize_common(c, 1, -1, NULL, -1);
    return resize_common(c, 2, 3, NULL, -1);
}

ox_status ox__infer_upsample(ox_infer_node_ctx *c)
{
    if (c->opset < 9) {
        const ox_attr *a = ox_node_attr(c->n, "scales");
        if (a && a->floats)
            return resize_common(c, -1, -1, a->floats, a->n);
        return resize_common(c, -1, -1, NULL, -1);
    }
    return resize_common(c, 1, -1, NULL, -1);
}

/* ---- einsum --------------------------------------------------------------------- */

ox_status ox__infer_einsum(ox_infer_node_ctx *c)
{
    const char *eq = ox_node_attr_s(c->n, "equation", NULL);
    ox_dtype e = ox__in_elem(c, 0);
    if (!eq)
        return ox__fail(c, "missing equation");
    /* Every '.' must belong to a "..." (the parser below steps over three). */
    for (const char *q = eq; *q; q++) {
        if (*q == '.') {
            if (q[1] != '.' || q[2] != '.')
                return ox__fail(c, "malformed ellipsis in equation");
            q += 2;
        }
    }
    const ox_dim *lab[128];
    bool seen[128] = { false };
    int count[128] = { 0 };
    const ox_dim *ell_by_pos[OX_MAX_RANK * 4] = { NULL };
    int ell_rank = 0;
    for (int i = 0; i < 128; i++)
        lab[i] = NULL;
    const char *p = eq;
    int in = 0;
    bool all_known = true;
    for (;;) {
        const ox_type *t = ox__in_shape(c, in);
        /* Count the letters and whether this term has an ellipsis. */
        const char *q = p;
        int letters = 0;
        bool has_ell = false;
        while (*q && *q != ',' && !(q[0] == '-' && q[1] == '>')) {
            if (*q == '.') {
                has_ell = true;
                q += 3;
                continue;
            }
            if (*q != ' ')
                letters++;
            q++;
        }
        int er = t && has_ell ? t->rank - letters : 0;
        if (!t)
            all_known = false;
        else if (er < 0 || (!has_ell && t->rank != letters))
            return ox__fail(c, "equation does not match input %d", in);
        int d = 0;
        while (*p && *p != ',' && !(p[0] == '-' && p[1] == '>')) {
            if (*p == '.') {
                /* Ellipsis dims broadcast right-aligned across inputs. */
                if (t && er > ell_rank) {
                    for (int j = ell_rank; j < er && j < OX_MAX_RANK * 4; j++)
                        ell_by_pos[j] = NULL;
                    ell_rank = er;
                }
                for (int j = 0; t && j < er; j++) {
                    int pos = er - 1 - j; /* position counted from the right */
                    const ox_dim *dd = &t->dims[d + j];
                    if (pos < OX_MAX_RANK * 4 &&
                        (!ell_by_pos[pos] || ell_by_pos[pos]->value == 1 ||
                         ell_by_pos[pos]->value < 0))
                        ell_by_pos[pos] = dd;
                }
                d += er;
                p += 3;
                continue;
            }
            unsigned char ch = (unsigned char)*p;
            if (ch < 128 && ch != ' ') {
                if (t && d < t->rank && (!lab[ch] || lab[ch]->value < 0 || lab[ch]->value == 1))
                    lab[ch] = &t->dims[d];
                if (!seen[ch])
                    count[ch] = 0;
                seen[ch] = true;
                count[ch]++;
                d++;
            }
            p++;
        }
        in++;
        if (*p != ',')
            break;
        p++;
    }
    if (in != ox__nin(c))
        return ox__fail(c, "equation names %d inputs, node has %d", in, ox__nin(c));
    char out[128];
    int no = 0;
    bool out_ell = false;
    if (p[0] == '-' && p[1] == '>') {
        p += 2;
        bool in_out[128] = { false };
        for (; *p && no < 127; p++) {
            if (*p == '.') {
                if (out_ell)
                    return ox__fail(c, "equation's output has two ellipses");
                out_ell = true;
                out[no++] = '.';
                p += 2;
            } else if (*p != ' ') {
                /* As numpy and the kernel: an output label appears once. */
                unsigned char ch = (unsigned char)*p;
                if (ch < 128) {
                    if (in_out[ch])
                        return ox__fail(c, "output label '%c' repeated in equation", *p);
                    in_out[ch] = true;
                }
                out[no++] = *p;
            }
        }
    } else {
        out_ell = ell_rank > 0;
        if (out_ell)
            out[no++] = '.';
        for (int ch = 0; ch < 128; ch++)
            if (seen[ch] && count[ch] == 1)
                out[no++] = (char)ch;
    }
    if (!all_known)
        return ox__set_out(c, 0, ox__tt(e, -1));
    int r = no + (out_ell ? ell_rank - 1 : 0);
    ox_type *o = ox__tt(e, r);
    int k = 0;
    for (int i = 0; i < no; i++) {
        if (out[i] == '.') {
            for (int j = 0; j < ell_rank; j++)
                ox__dim_copy(o, k++, ell_by_pos[ell_rank - 1 - j]);
        } else {
            unsigned char ch = (unsigned char)out[i];
            ox__dim_copy(o, k++, ch < 128 ? lab[ch] : NULL);
        }
    }
    return ox__set_out(c, 0, o);
}

/* ---- normalization ---------------------------------------------------------------- */

ox_status ox__infer_layer_norm(ox_infer_node_ctx *c)
{
    const ox_type *x = ox__in_shape(c, 0);
    ox_dtype e = ox__in_elem(c, 0);
    bool rms = !strcmp(c->n->op_type, "RMSNormalization");
    ox_dtype ye = rms && ox__in_elem(c, 1) ? ox__in_elem(c, 1) : e;
    ox__set_out(c, 0, ox__tt_copy(x, ye));
    if (rms || c->n->n_outputs < 2)
        return OX_OK;
    ox_dtype st = ox__attr_dtype(c->n, "stash_type", OX_DT_FLOAT);
    if (!x) {
        ox__set_out(c, 1, ox__tt(st, -1));
        return ox__set_out(c, 2, ox__tt(st, -1));
    }
    int a;
    if (!ox__axis(ox_node_attr_i(c->n, "axis", -1), x->rank, &a))
        return ox__fail(c, "axis out of range");
    ox_type *m = ox__tt_copy(x, st);
    for (int i = a; i < x->rank; i++)
        ox__dim_set(m, i, 1);
    ox__set_out(c, 2, ox_type_clone(m));
    return ox__set_out(c, 1, m);
}

ox_status ox__infer_skip_ln_ms(ox_infer_node_ctx *c)
{
    const ox_type *x = ox__in_shape(c, 0);
    ox_dtype e = ox__in_elem(c, 0);
    ox__set_out(c, 0, ox__tt_copy(x, e));
    ox__set_out(c, 3, ox__tt_copy(x, e));
    if (x && x->rank >= 1) {
        ox_type *m = ox__tt_copy(x, OX_DT_FLOAT);
        ox__dim_set(m, x->rank - 1, 1);
        ox__set_out(c, 1, ox_type_clone(m));
        ox__set_out(c, 2, m);
    }
    return OX_OK;
}

/* EmbedLayerNormalization: output and embedding_sum [B, S, H] (ids'
 * shape, the embeddings' width), mask_index int32 [B]. */
ox_status ox__infer_embed_ln_ms(ox_infer_node_ctx *c)
{
    const ox_type *ids = ox__in_shape(c, 0), *w = ox__in_shape(c, 2);
    ox_dtype e = ox__in_elem(c, 2);
    if (!ids || ids->rank != 2) {
        ox__set_out(c, 1, ox__tt(OX_DT_INT32, 1));
        ox__set_out(c, 2, ox__tt(e, 3));
        return ox__set_out(c, 0, ox__tt(e, 3));
    }
    ox_type *y = ox__tt(e, 3);
    ox__dim_copy(y, 0, &ids->dims[0]);
    ox__dim_copy(y, 1, &ids->dims[1]);
    if (w && w->rank == 2)
        ox__dim_copy(y, 2, &w->dims[1]);
    else
        ox__dim_set(y, 2, -1);
    ox_type *mi = ox__tt(OX_DT_INT32, 1);
    ox__dim_copy(mi, 0, &ids->dims[0]);
    ox__set_out(c, 1, mi);
    ox__set_out(c, 2, ox_type_clone(y));
    return ox__set_out(c, 0, y);
}

ox_status ox__infer_batch_norm(ox_infer_node_ctx *c)
{
    const ox_type *x = ox__in_shape(c, 0);
    ox__set_out(c, 0, ox__tt_copy(x, ox__in_elem(c, 0)));
    for (int i = 1; i < c->n->n_outputs; i++) {
        int src = c->opset >= 14 ? (i == 1 ? 3 : 4) : (i == 1 || i == 3 ? 3 : 4);
        ox__pass_through(c, i, src);
    }
    return OX_OK;
}

ox_status ox__infer_dropout(ox_infer_node_ctx *c)
{
    const ox_type *x = ox__in_shape(c, 0);
    ox__set_out(c, 0, ox__tt_copy(x, ox__in_elem(c, 0)));
    ox__set_out(c, 1, ox__tt_copy(x, c->opset >= 10 ? OX_DT_BOOL : ox__in_elem(c, 0)));
    const ox__kv *k = ox__in_kv(c, 0);
    if (k) {
        ox__kv *n = ox__kv_new(k->dt, k->rank, k->dims);
        for (int64_t i = 0; n && i < k->n; i++)
            ox__kv_copy_elem(n, i, k, i);
        ox__set_kv(c, 0, n);
    }
    return OX_OK;
}

/* ---- recurrent -------------------------------------------------------------------- */

ox_status ox__infer_rnn(ox_infer_node_ctx *c)
{
    const ox_type *x = ox__in_shape(c, 0), *r = ox__in_shape(c, 2);
    ox_dtype e = ox__in_elem(c, 0);
    bool layout = c->opset >= 14 && ox_node_attr_i(c->n, "layout", 0) != 0;
    const char *dir = ox_node_attr_s(c->n, "direction", "forward");
    int64_t nd = !strcmp(dir, "bidirectional") ? 2 : 1;
    int64_t h = ox_node_attr_i(c->n, "hidden_size", -1);
    if (h < 0 && r && r->rank == 3)
        h = ox__dimv(r, 2);
    ox_dim seq = {.value = -1}, batch = {.value = -1};
    if (x && x->rank == 3) {
        seq = x->dims[layout ? 1 : 0];
        batch = x->dims[layout ? 0 : 1];
    }
    ox_type *y = ox__tt(e, 4);
    ox__dim_copy(y, layout ? 1 : 0, &seq);
    ox__dim_set(y, layout ? 2 : 1, nd);
    ox__dim_copy(y, layout ? 0 : 2, &batch);
    ox__dim_set(y, 3, h);
    ox__set_out(c, 0, y);
    ox_type *yh = ox__tt(e, 3);
    ox__dim_set(yh, layout ? 1 : 0, nd);
    ox__dim_copy(yh, layout ? 0 : 1, &batch);
    ox__dim_set(yh, 2, h);
    ox__set_out(c, 2, ox_type_clone(yh));
    return ox__set_out(c, 1, yh);
}

/* ---- attention ---------------------------------------------------------------- */

ox_status ox__infer_attention(ox_infer_node_ctx *c)
{
    const ox_type *q = ox__in_shape(c, 0), *k = ox__in_shape(c, 1), *v = ox__in_shape(c, 2);
    const ox_type *pk = ox__in_shape(c, 4);
    ox_dtype e = ox__in_elem(c, 0);
    if (!q || !k || !v || q->rank != k->rank || (q->rank != 3 && q->rank != 4)) {
        for (int i = 0; i < c->n->n_outputs; i++)
            ox__set_out(c, i, ox__tt(i == 2 ? ox__in_elem(c, 2) : e, q ? q->rank : -1));
        return OX_OK;
    }
    int64_t qh = ox_node_attr_i(c->n, "q_num_heads", -1);
    int64_t kvh = ox_node_attr_i(c->n, "kv_num_heads", -1);
    ox_dim batch = q->dims[0], sq, skv;
    int64_t hk = -1, hv = -1;
    if (q->rank == 4) {
        qh = ox__dimv(q, 1);
        kvh = ox__dimv(k, 1);
        sq = q->dims[2];
        skv = k->dims[2];
        hk = ox__dimv(k, 3);
        hv = ox__dimv(v, 3);
    } else {
        sq = q->dims[1];
        skv = k->dims[1];
        if (kvh > 0 && ox__dim_known(k, 2))
            hk = ox__dimv(k, 2) / kvh;
        if (kvh > 0 && ox__dim_known(v, 2))
            hv = ox__dimv(v, 2) / kvh;
    }
    ox_type *y = ox__tt(e, q->rank);
    ox__dim_copy(y, 0, &batch);
    if (q->rank == 4) {
        ox__dim_set(y, 1, qh);
        ox__dim_copy(y, 2, &sq);
        ox__dim_set(y, 3, hv);
    } else {
        ox__dim_copy(y, 1, &sq);
        ox__dim_set(y, 2, qh > 0 && hv >= 0 ? ox__mul(qh, hv) : -1);
    }
    ox__set_out(c, 0, y);
    /* present_key/value: past (if any) + current along the sequence axis. */
    int64_t total = skv.value;
    if (pk && pk->rank == 4)
        total = ox__dim_known(pk, 2) && total >= 0 ? ox__dimv(pk, 2) + total : -1;
    for (int i = 1; i <= 2; i++) {
        ox_type *p = ox__tt(i == 2 ? ox__in_elem(c, 2) : e, 4);
        ox__dim_copy(p, 0, &batch);
        ox__dim_set(p, 1, kvh);
        ox__dim_set(p, 2, total);
        ox__dim_set(p, 3, i == 1 ? hk : hv);
        ox__set_out(c, i, p);
    }
    ox_type *qk = ox__tt(e, 4);
    ox__dim_copy(qk, 0, &batch);
    ox__dim_set(qk, 1, qh);
    ox__dim_copy(qk, 2, &sq);
    ox__dim_set(qk, 3, total);
    return ox__set_out(c, 3, qk);
}

ox_status ox__infer_flex_attention(ox_infer_node_ctx *c)
{
    const ox_type *q = ox__in_shape(c, 0), *v = ox__in_shape(c, 2);
    ox_dtype e = ox__in_elem(c, 0);
    if (!q || !v || q->rank != 4 || v->rank != 4)
        return ox__set_out(c, 0, ox__tt(e, q ? q->rank : -1));
    ox_type *y = ox__tt_copy(q, e);
    ox__dim_copy(y, 3, &v->dims[3]);
    return ox__set_out(c, 0, y);
}

ox_status ox__infer_rotary(ox_infer_node_ctx *c)
{
    return ox__pass_through(c, 0, 0);
}

ox_status ox__infer_swiglu(ox_infer_node_ctx *c)
{
    /* A and B have identical shapes; take whichever is better known. */
    const ox_type *a = ox__in_shape(c, 0), *b = ox__in_shape(c, 1);
    ox_type *o = ox__tt_copy(a ? a : b, ox__in_elem(c, 0));
    if (o && a && b && a->rank == b->rank)
        for (int i = 0; i < a->rank; i++)
            if (a->dims[i].value < 0)
                ox__dim_copy(o, i, &b->dims[i]);
    return ox__set_out(c, 0, o);
}

ox_status ox__infer_causal_conv(ox_infer_node_ctx *c)
{
    /* input [N, C, L...]; weight [C, 1, K...]; the state keeps the last
     * K-1 positions of each spatial axis. */
    const ox_type *x = ox__in_shape(c, 0), *w = ox__in_shape(c, 1);
    ox_dtype e = ox__in_elem(c, 0);
    ox__set_out(c, 0, ox__tt_copy(x, e));
    if (!x || x->rank < 3) {
        if (ox__in_shape(c, 3))
            return ox__pass_through(c, 1, 3);
        return ox__set_out(c, 1, ox__tt(e, x ? x->rank : -1));
    }
    ox_type *s = ox__tt_copy(x, e);
    for (int i = 2; i < x->rank; i++) {
        int64_t k = w && w->rank == x->rank ? ox__dimv(w, i) : -1;
        ox__dim_set(s, i, k >= 1 ? k - 1 : -1);
    }
    return ox__set_out(c, 1, s);
}

ox_status ox__infer_linear_attention(ox_infer_node_ctx *c)
{
    /* query [B, Hq, T, Dk] (or 3-D [B, T, Hq*Dk]); value gives Dv; the state
     * is [B, Hkv, Dk, Dv]. */
    const ox_type *q = ox__in_shape(c, 0), *k = ox__in_shape(c, 1), *v = ox__in_shape(c, 2);
    ox_dtype e = ox__in_elem(c, 0);
    if (!q || !k || !v || q->rank != v->rank || k->rank != q->rank ||
        (q->rank != 3 && q->rank != 4)) {
        ox__set_out(c, 0, ox__tt(e, q ? q->rank : -1));
        if (ox__in_shape(c, 3))
            return ox__pass_through(c, 1, 3);
        return ox__set_out(c, 1, ox__tt(e, 4));
    }
    int64_t qh = ox_node_attr_i(c->n, "q_num_heads", -1);
    int64_t kvh = ox_node_attr_i(c->n, "kv_num_heads", -1);
    int64_t dk = -1, dv = -1;
    ox_type *y = ox__tt_copy(q, e);
    if (q->rank == 4) {
        qh = ox__dimv(q, 1);
        kvh = ox__dimv(k, 1);
        dk = ox__dimv(k, 3);
        dv = ox__dimv(v, 3);
        ox__dim_set(y, 3, dv);
    } else {
        if (kvh > 0 && ox__dim_known(k, 2))
            dk = ox__dimv(k, 2) / kvh;
        if (kvh > 0 && ox__dim_known(v, 2))
            dv = ox__dimv(v, 2) / kvh;
        ox__dim_set(y, 2, qh > 0 && dv >= 0 ? ox__mul(qh, dv) : -1);
    }
    ox__set_out(c, 0, y);
    if (ox__in_shape(c, 3))
        return ox__pass_through(c, 1, 3);
    ox_type *s = ox__tt(e, 4);
    ox__dim_copy(s, 0, &q->dims[0]);
    ox__dim_set(s, 1, kvh);
    ox__dim_set(s, 2, dk);
    ox__dim_set(s, 3, dv);
    return ox__set_out(c, 1, s);
}

ox_status ox__infer_attention_ms(ox_infer_node_ctx *c)
{
    const ox_type *x = ox__in_shape(c, 0), *w = ox__in_shape(c, 1);
    ox_dtype e = ox__in_elem(c, 0);
    if (!x || x->rank != 3)
        return ox__set_out(c, 0, ox__tt(e, x ? x->rank : -1));
    ox_type *o = ox__tt_copy(x, e);
    const int64_t *hs;
    int nh = ox_node_attr_ints(c->n, "qkv_hidden_sizes", &hs);
    if (nh == 3)
        ox__dim_set(o, 2, hs[2]);
    else if (w && w->rank == 2 && ox__dim_known(w, 1))
        ox__dim_set(o, 2, ox__dimv(w, 1) / 3);
    else
        ox__dim_set(o, 2, -1);
    return ox__set_out(c, 0, o);
}

ox_status ox__infer_mha_ms(ox_infer_node_ctx *c)
{
    const ox_type *q = ox__in_shape(c, 0), *v = ox__in_shape(c, 2);
    ox_dtype e = ox__in_elem(c, 0);
    if (!q || q->rank != 3)
        return ox__set_out(c, 0, ox__tt(e, q ? q->rank : -1));
    ox_type *o = ox__tt_copy(q, e);
    if (v && v->rank == 3)
        ox__dim_copy(o, 2, &v->dims[2]);
    else if (v && v->rank == 4) {
        int64_t h = ox_node_attr_i(c->n, "num_heads", -1);
        ox__dim_set(o, 2, h > 0 && ox__dim_known(v, 3) ? ox__mul(h, ox__dimv(v, 3)) : -1);
    }
    return ox__set_out(c, 0, o);
}

/* ---- quantization ------------------------------------------------------------------ */

ox_status ox__infer_quantize(ox_infer_node_ctx *c)
{
    ox_dtype e = ox__in_elem(c, 2);
    if (!e && !ox__has_in(c, 2))
        e = ox__attr_dtype(c->n, "output_dtype", OX_DT_UINT8);
    return ox__set_out(c, 0, ox__tt_copy(ox__in_shape(c, 0), e));
}

ox_status ox__infer_dequantize(ox_infer_node_ctx *c)
{
    ox_dtype e = OX_DT_FLOAT;
    if (c->opset >= 19 && ox__in_elem(c, 1))
        e = ox__in_elem(c, 1);
    if (c->opset >= 23)
        e = ox__attr_dtype(c->n, "output_dtype", e);
    return ox__set_out(c, 0, ox__tt_copy(ox__in_shape(c, 0), e));
}

ox_status ox__infer_dynamic_quantize(ox_infer_node_ctx *c)
{
    ox__set_out(c, 0, ox__tt_copy(ox__in_shape(c, 0), OX_DT_UINT8));
    ox__set_out(c, 1, ox__tt(OX_DT_FLOAT, 0));
    return ox__set_out(c, 2, ox__tt(OX_DT_UINT8, 0));
}

/* ---- detection and sampling -------------------------------------------------------- */

ox_status ox__infer_nms(ox_infer_node_ctx *c)
{
    ox_type *o = ox__tt(OX_DT_INT64, 2);
    ox__dim_set(o, 1, 3);
    return ox__set_out(c, 0, o);
}

ox_status ox__infer_roi_align(ox_infer_node_ctx *c)
{
    const ox_type *x = ox__in_shape(c, 0), *r = ox__in_shape(c, 1);
    ox_type *o = ox__tt(ox__in_elem(c, 0), 4);
    if (r && r->rank == 2)
        ox__dim_copy(o, 0, &r->dims[0]);
    if (x && x->rank == 4)
        ox__dim_copy(o, 1, &x->dims[1]);
    ox__dim_set(o, 2, ox_node_attr_i(c->n, "output_height", 1));
    ox__dim_set(o, 3, ox_node_attr_i(c->n, "output_width", 1));
    return ox__set_out(c, 0, o);
}

/* MaxRoiPool: (num_rois, C, pooled_shape[0], pooled_shape[1]). */
ox_status ox__infer_max_roi_pool(ox_infer_node_ctx *c)
{
    const ox_type *x = ox__in_shape(c, 0), *r = ox__in_shape(c, 1);
    const int64_t *ps;
    int np = ox_node_attr_ints(c->n, "pooled_shape", &ps);
    if (np != 2)
        return ox__fail(c, "pooled_shape must have 2 values");
    ox_type *o = ox__tt(ox__in_elem(c, 0), 4);
    if (r && r->rank == 2)
        ox__dim_copy(o, 0, &r->dims[0]);
    if (x && x->rank == 4)
        ox__dim_copy(o, 1, &x->dims[1]);
    ox__dim_set(o, 2, ps[0]);
    ox__dim_set(o, 3, ps[1]);
    return ox__set_out(c, 0, o);
}

ox_status ox__infer_grid_sample(ox_infer_node_ctx *c)
{
    const ox_type *x = ox__in_shape(c, 0), *g = ox__in_shape(c, 1);
    ox_dtype e = ox__in_elem(c, 0);
    if (!x || !g || g->rank < 3 || x->rank != g->rank)
        return ox__set_out(c, 0, ox__tt(e, x ? x->rank : -1));
    ox_type *o = ox__tt(e, x->rank);
    ox__dim_copy(o, 0, &x->dims[0]);
    ox__dim_copy(o, 1, &x->dims[1]);
    for (int i = 2; i < x->rank; i++)
        ox__dim_copy(o, i, &g->dims[i - 1]);
    return ox__set_out(c, 0, o);
}

ox_status ox__infer_affine_grid(ox_infer_node_ctx *c)
{
    ox_dtype e = ox__in_elem(c, 0);
    int64_t sz[OX_MAX_RANK];
    int n = ox__in_ints(c, 1, sz, OX_MAX_RANK);
    if (n < 3) {
        const ox_type *st = ox__in_shape(c, 1);
        int r = st && ox__dim_known(st, 0) ? (int)ox__dimv(st, 0) : -1;
        return ox__set_out(c, 0, ox__tt(e, r));
    }
    /* size [N, C, D1..Dk] -> grid [N, D1..Dk, k] */
    ox_type *o = ox__tt(e, n);
    ox__dim_set(o, 0, sz[0]);
    for (int i = 2; i < n; i++)
        ox__dim_set(o, i - 1, sz[i]);
    ox__dim_set(o, n - 1, n - 2);
    return ox__set_out(c, 0, o);
}

/* ---- signal ------------------------------------------------------------------------ */

ox_status ox__infer_dft(ox_infer_node_ctx *c)
{
    const ox_type *x = ox__in_shape(c, 0);
    ox_dtype e = ox__in_elem(c, 0);
    if (!x || x->rank < 2)
        return ox__set_out(c, 0, ox__tt(e, x ? x->rank : -1));
    int64_t ax = c->opset >= 20 ? -2 : ox_node_attr_i(c->n, "axis", 1);
    if (c->opset >= 20 && ox__has_in(c, 2)) {
        if (ox__in_ints(c, 2, &ax, 1) != 1)
            return ox__set_out(c, 0, ox__tt(e, x->rank));
    }
    int a;
    /* The last dim holds (real, imag) and is not a signal axis. */
    if (ax < 0)
        ax += x->rank;
    if (ax < 0 || ax >= x->rank - 1)
        return ox__fail(c, "axis out of range");
    a = (int)ax;
    ox_type *o = ox__tt_copy(x, e);
    int64_t n = ox__dimv(x, a);
    if (ox__has_in(c, 1)) {
        int64_t l;
        n = ox__in_ints(c, 1, &l, 1) == 1 ? l : -1;
    }
    bool onesided = ox_node_attr_i(c->n, "onesided", 0) != 0;
    bool inverse = ox_node_attr_i(c->n, "inverse", 0) != 0;
    if (onesided && inverse) {
        /* Inverse of a one-sided spectrum: a real signal of dft_length
         * (default 2*(n-1)) samples. */
        if (!ox__has_in(c, 1) && n >= 0)
            n = n >= 1 ? ox__mul(2, n - 1) : -1;
        ox__dim_set(o, a, n);
        ox__dim_set(o, x->rank - 1, 1);
        return ox__set_out(c, 0, o);
    }
    ox__dim_set(o, a, n >= 0 ? (onesided ? n / 2 + 1 : n) : -1);
    ox__dim_set(o, x->rank - 1, 2);
    return ox__set_out(c, 0, o);
}

ox_status ox__infer_stft(ox_infer_node_ctx *c)
{
    const ox_type *x = ox__in_shape(c, 0), *w = ox__in_shape(c, 2);
    ox_dtype e = ox__in_elem(c, 0);
    ox_type *o = ox__tt(e, 4);
    int64_t step = -1, flen = -1;
    if (ox__in_ints(c, 1, &step, 1) != 1)
        step = -1;
    if (ox__has_in(c, 3)) {
        if (ox__in_ints(c, 3, &flen, 1) != 1)
            flen = -1;
    } else if (w && w->rank == 1) {
        flen = ox__dimv(w, 0);
    }
    if (x && x->rank >= 2) {
        ox__dim_copy(o, 0, &x->dims[0]);
        int64_t len = ox__dimv(x, 1);
        if (len >= 0 && step > 0 && flen > 0 && len >= flen)
            ox__dim_set(o, 1, (len - flen) / step + 1);
    }
    if (flen > 0)
        ox__dim_set(o, 2, ox_node_attr_i(c->n, "onesided", 1) ? flen / 2 + 1 : flen);
    ox__dim_set(o, 3, 2);
    return ox__set_out(c, 0, o);
}

ox_status ox__infer_image_decoder(ox_infer_node_ctx *c)
{
    ox_type *o = ox__tt(OX_DT_UINT8, 3);
    const char *pf = ox_node_attr_s(c->n, "pixel_format", "RGB");
    ox__dim_set(o, 2, !strcmp(pf, "Grayscale") ? 1 : 3);
    return ox__set_out(c, 0, o);
}

/* ---- losses ------------------------------------------------------------------------ */

ox_status ox__infer_nll_loss(ox_infer_node_ctx *c)
{
    ox_dtype e = ox__in_elem(c, 0);
    const char *red = ox_node_attr_s(c->n, "reduction", "mean");
    if (!strcmp(red, "none"))
        return ox__set_out(c, 0, ox__tt_copy(ox__in_shape(c, 1), e));
    return ox__set_out(c, 0, ox__tt(e, 0));
}

ox_status ox__infer_sce_loss(ox_infer_node_ctx *c)
{
    ox__infer_nll_loss(c);
    return ox__set_out(c, 1, ox__tt_copy(ox__in_shape(c, 0), ox__in_elem(c, 0)));
}

/* ---- text and ai.onnx.ml ------------------------------------------------------------- */

ox_status ox__infer_tfidf(ox_infer_node_ctx *c)
{
    const ox_type *x = ox__in_shape(c, 0);
    const int64_t *ix;
    int n = ox_node_attr_ints(c->n, "ngram_indexes", &ix);
    int64_t width = -1;
    for (int i = 0; i < n; i++)
        if (ix[i] >= 0 && ix[i] < INT32_MAX && ix[i] + 1 > width)
            width = ix[i] + 1;
    if (!x)
        return ox__set_out(c, 0, ox__tt(OX_DT_FLOAT, -1));
    ox_type *o = ox__tt(OX_DT_FLOAT, x->rank <= 1 ? 1 : 2);
    if (x->rank == 2)
        ox__dim_copy(o, 0, &x->dims[0]);
    ox__dim_set(o, o->rank - 1, width);
    return ox__set_out(c, 0, o);
}

ox_status ox__infer_string_normalizer(ox_infer_node_ctx *c)
{
    const ox_type *x = ox__in_shape(c, 0);
    ox_type *o = ox__tt_copy(x, OX_DT_STRING);
    const ox_attr *sw = ox_node_attr(c->n, "stopwords");
    if (o && o->has_shape && o->rank >= 1 && sw && sw->n > 0)
        ox__dim_set(o, o->rank - 1, -1);
    return ox__set_out(c, 0, o);
}

ox_status ox__infer_string_split(ox_infer_node_ctx *c)
{
    const ox_type *x = ox__in_shape(c, 0);
    if (!x) {
        ox__set_out(c, 0, ox__tt(OX_DT_STRING, -1));
        return ox__set_out(c, 1, ox__tt(OX_DT_INT64, -1));
    }
    ox_type *y = ox__tt(OX_DT_STRING, x->rank + 1);
    for (int i = 0; i < x->rank; i++)
        ox__dim_copy(y, i, &x->dims[i]);
    ox__set_out(c, 0, y);
    return ox__set_out(c, 1, ox__tt_copy(x, OX_DT_INT64));
}

ox_status ox__infer_regex_full_match(ox_infer_node_ctx *c)
{
    return ox__set_out(c, 0, ox__tt_copy(ox__in_shape(c, 0), OX_DT_BOOL));
}

ox_status ox__infer_label_encoder(ox_infer_node_ctx *c)
{
    ox_dtype e = OX_DT_UNDEFINED;
    const ox_attr *vt = ox_node_attr(c->n, "values_tensor");
    if (vt && vt->t)
        e = vt->t->dtype;
    else if (ox_node_attr(c->n, "values_strings"))
        e = OX_DT_STRING;
    else if (ox_node_attr(c->n, "values_int64s"))
        e = OX_DT_INT64;
    else if (ox_node_attr(c->n, "values_floats"))
        e = OX_DT_FLOAT;
    return ox__set_out(c, 0, ox__tt_copy(ox__in_shape(c, 0), e));
}

ox_status ox__infer_tree_ensemble(ox_infer_node_ctx *c)
{
    const ox_type *x = ox__in_shape(c, 0);
    ox_type *o = ox__tt(ox__in_elem(c, 0), 2);
    if (x && x->rank >= 1)
        ox__dim_copy(o, 0, &x->dims[0]);
    ox__dim_set(o, 1, ox_node_attr_i(c->n, "n_targets", -1));
    return ox__set_out(c, 0, o);
}

ox_status ox__infer_array_feature_extractor(ox_infer_node_ctx *c)
{
    const ox_type *x = ox__in_shape(c, 0), *y = ox__in_shape(c, 1);
    ox_dtype e = ox__in_elem(c, 0);
    if (!x || !y)
        return ox__set_out(c, 0, ox__tt(e, -1));
    ox_dim cnt;
    int64_t p = 1;
    bool known = true;
    for (int i = 0; i < y->rank; i++) {
        if (y->dims[i].value < 0)
            known = false;
        else
            p = p >= 0 ? ox__mul(p, y->dims[i].value) : -1;
    }
    cnt.value = known && p >= 0 ? p : -1;
    cnt.param = NULL;
    cnt.denotation = NULL;
    if (x->rank <= 1) {
        ox_type *o = ox__tt(e, 2);
        ox__dim_set(o, 0, 1);
        ox__dim_copy(o, 1, &cnt);
        return ox__set_out(c, 0, o);
    }
    ox_type *o = ox__tt_copy(x, e);
    ox__dim_copy(o, x->rank - 1, &cnt);
    return ox__set_out(c, 0, o);
}

ox_status ox__infer_training_opt(ox_infer_node_ctx *c)
{
    /* Inputs R, T, then groups of N tensors (X, G, then optimizer state);
     * outputs are X_new followed by the new state groups. */
    int groups = !strcmp(c->n->op_type, "Adam") ? 4 : 3;
    int n = (ox__nin(c) - 2) / groups;
    if (n <= 0)
        return OX_OK;
    for (int j = 0; j < c->n->n_outputs; j++) {
        int g = j / n, idx = j % n;
        int src = 2 + (g == 0 ? 0 : g + 1) * n + idx;
        ox__pass_through(c, j, src);
    }
    return OX_OK;
}
