/* Geometry and vision kernels: CenterCropPad, Det, NonMaxSuppression,
 * GridSample (N-D linear/nearest, 2-D cubic, PyTorch's padding rules),
 * AffineGrid and Col2Im. Straightforward loops in double precision. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/k_misc/misc.h"
#include "exec/k_tensor/tk_util.h"
#include "exec/rv_util.h"

ox_status ox_misc_center_crop_pad(ox_kernel_ctx *c)
{
    const ox_tensor *x = ox_kernel_in(c, 0), *sh = ox_kernel_in(c, 1);
    if (!x || !sh || sh->rank != 1 || !ox_dtype_is_int(sh->dtype))
        return ox_errorf(c->err, OX_EINVAL, "CenterCropPad needs input and an int shape");
    int r = x->rank;
    int64_t axes[OX_MAX_RANK];
    const int64_t *a;
    int na = ox_node_attr_ints(c->node, "axes", &a);
    if (na < 0) {
        na = r;
        for (int i = 0; i < r; i++)
            axes[i] = i;
    } else {
        if (na > r)
            return ox_errorf(c->err, OX_EINVAL, "too many axes");
        for (int i = 0; i < na; i++) {
            axes[i] = a[i] < 0 ? a[i] + r : a[i];
            if (axes[i] < 0 || axes[i] >= r)
                return ox_errorf(c->err, OX_EINVAL, "axis out of range");
        }
    }
    if (sh->numel != na)
        return ox_errorf(c->err, OX_EINVAL, "shape has %lld entries for %d axes",
                         (long long)sh->numel, na);
    int64_t dims[OX_MAX_RANK], off[OX_MAX_RANK] = {0};
    memcpy(dims, x->dims, sizeof dims);
    for (int i = 0; i < na; i++) {
        int64_t t = ox_tensor_get_i64(sh, i), d = x->dims[axes[i]];
        if (t < 0)
            return ox_errorf(c->err, OX_EINVAL, "negative target size");
        dims[axes[i]] = t;
        off[axes[i]] = t <= d ? (d - t) / 2 : -((t - d) / 2);  /* input = output + off */
    }
    ox_tensor *y = ox_kernel_output(c, 0, x->dtype, r, dims);
    if (!y)
        return c->err->status;
    int64_t idx[OX_MAX_RANK] = {0}, xs[OX_MAX_RANK];
    ox_tk_strides(r, x->dims, xs);
    for (int64_t i = 0; i < y->numel; i++) {
        int64_t src = 0;
        bool ok = true;
        for (int d = 0; d < r; d++) {
            int64_t k = idx[d] + off[d];
            if (k < 0 || k >= x->dims[d]) {
                ok = false;
                break;
            }
            src += k * xs[d];
        }
        if (ok)
            ox_tk_copy(y, i, x, src, 1);
        for (int d = r - 1; d >= 0; d--) {
            if (++idx[d] < dims[d])
                break;
            idx[d] = 0;
        }
    }
    return OX_OK;
}

ox_status ox_misc_det(ox_kernel_ctx *c)
{
    const ox_tensor *x = ox_kernel_in(c, 0);
    if (!x || !ox_dtype_is_float(x->dtype) || x->rank < 2 ||
        x->dims[x->rank - 1] != x->dims[x->rank - 2])
        return ox_errorf(c->err, OX_EINVAL, "Det needs float [*, M, M]");
    int64_t m = x->dims[x->rank - 1];
    if (m > 4096)
        return ox_errorf(c->err, OX_ERANGE, "matrix too large");
    ox_tensor *y = ox_kernel_output(c, 0, x->dtype, x->rank - 2, x->dims);
    double *a = malloc((size_t)(m * m + 1) * sizeof *a);
    if (!y || !a) {
        free(a);
        return y ? ox_errorf(c->err, OX_ENOMEM, "out of memory") : c->err->status;
    }
    for (int64_t b = 0; b < y->numel; b++) {
        for (int64_t i = 0; i < m * m; i++)
            a[i] = ox_misc_getf(x, b * m * m + i);
        double det = 1;
        for (int64_t k = 0; k < m; k++) {
            int64_t p = k;
            for (int64_t i = k + 1; i < m; i++)
                if (fabs(a[i * m + k]) > fabs(a[p * m + k]))
                    p = i;
            if (a[p * m + k] == 0) {
                det = 0;
                break;
            }
            if (p != k) {
                for (int64_t j = 0; j < m; j++) {
                    double t = a[k * m + j];
                    a[k * m + j] = a[p * m + j];
                    a[p * m + j] = t;
                }
                det = -det;
            }
            det *= a[k * m + k];
            for (int64_t i = k + 1; i < m; i++) {
                double f = a[i * m + k] / a[k * m + k];
                for (int64_t j = k; j < m; j++)
                    a[i * m + j] -= f * a[k * m + j];
            }
        }
        ox_tensor_set_f64(y, b, det);
    }
    free(a);
    return OX_OK;
}

/* ---- NonMaxSuppression ---------------------------------------------------- */

typedef struct cand {
    double score;
    int64_t idx;
} cand;

static int cmp_cand(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

static void box_corners(const ox_tensor *bx, int64_t base, bool center, double *o)
{
    double v[4];
    for (int i = 0; i < 4; i++)
        v[i] = ox_misc_getf(bx, base + i);
    if (center) {
        o[0] = v[1] - v[3] / 2; /* y1 */
        o[1] = v[0] - v[2] / 2; /* x1 */
        o[2] = v[1] + v[3] / 2;
        o[3] = v[0] + v[2] / 2;
    } else {
        o[0] = fmin(v[0], v[2]);
        o[1] = fmin(v[1], v[3]);
        o[2] = fmax(v[0], v[2]);
        o[3] = fmax(v[1], v[3]);
    }
}

static double iou(const double *a, const double *b)
{
    double ih = fmin(a[2], b[2]) - fmax(a[0], b[0]);
    double iw = fmin(a[3], b[3]) - fmax(a[1], b[1]);
    if (ih <= 0 || iw <= 0)
        return 0;
    double inter = ih * iw;
    double ua = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter;
    return ua > 0 ? inter / ua : 0;
}

ox_status ox_misc_nms(ox_kernel_ctx *c)
{
    const ox_tensor *bx = ox_kernel_in(c, 0), *sc = ox_kernel_in(c, 1);
    if (!bx || !sc || bx->rank != 3 || bx->dims[2] != 4 || sc->rank != 3 ||
        sc->dims[0] != bx->dims[0] || sc->dims[2] != bx->dims[1])
        return ox_errorf(c->err, OX_EINVAL, "boxes [B,N,4] and scores [B,C,N] expected");
    int64_t max_out = 0;
    double iou_th = 0, score_th = -INFINITY;
    const ox_tensor *t;
    if ((t = ox_kernel_in(c, 2)) && t->numel > 0)
        max_out = ox_tensor_get_i64(t, 0);
    if ((t = ox_kernel_in(c, 3)) && t->numel > 0)
        iou_th = ox_misc_getf(t, 0);
    bool has_score_th = false;
    if ((t = ox_kernel_in(c, 4)) && t->numel > 0) {
        score_th = ox_misc_getf(t, 0);
        has_score_th = true;
    }
    bool center = ox_node_attr_i(c->node, "center_point_box", 0) != 0;
    int64_t B = bx->dims[0], N = bx->dims[1], C = sc->dims[1];
    int64_t cap = 0;
    if (max_out > 0)
        cap = B * C * (max_out < N ? max_out : N);
    int64_t *sel = malloc((size_t)(cap + 1) * 3 * sizeof *sel);
    cand *cs = malloc((size_t)(N + 1) * sizeof *cs);
    double *boxes = malloc((size_t)(N + 1) * 4 * sizeof *boxes);
    int64_t *kept = malloc((size_t)(N + 1) * sizeof *kept);
    if (!sel || !cs || !boxes || !kept) {
        free(sel);
        free(cs);
        free(boxes);
        free(kept);
        return ox_errorf(c->err, OX_ENOMEM, "out of memory");
    }
    int64_t n_sel = 0;
    for (int64_t b = 0; b < B && max_out > 0; b++) {
        for (int64_t i = 0; i < N; i++)
            box_corners(bx, (b * N + i) * 4, center, &boxes[i * 4]);
        for (int64_t k = 0; k < C; k++) {
            int64_t nc = 0;
            for (int64_t i = 0; i < N; i++) {
                double s = ox_misc_getf(sc, (b * C + k) * N + i);
                if (!has_score_th || s > score_th) {
                    cs[nc].score = s;
                    cs[nc].idx = i;
                    nc++;
                }
            }
            qsort(cs, (size_t)nc, sizeof *cs, cmp_cand);
            int64_t nk = 0;
            for (int64_t j = 0; j < nc && nk < max_out; j++) {
                bool keep = true;
                for (int64_t q = 0; q < nk && keep; q++)
                    if (iou(&boxes[cs[j].idx * 4], &boxes[kept[q] * 4]) > iou_th)
                        keep = false;
                if (!keep)
                    continue;
                kept[nk++] = cs[j].idx;
                sel[n_sel * 3] = b;
                sel[n_sel * 3 + 1] = k;
                sel[n_sel * 3 + 2] = cs[j].idx;
                n_sel++;
            }
        }
    }
    int64_t dims[2] = {n_sel, 3};
    ox_tensor *y = ox_kernel_output(c, 0, OX_DT_INT64, 2, dims);
    if (y && n_sel)
        memcpy(ox_tensor_data(y), sel, (size_t)n_sel * 3 * sizeof *sel);
    free(sel);
    free(cs);
    free(boxes);
    free(kept);
    return y ? OX_OK : c->err->status;
}

/* ---- GridSample ----------------------------------------------------------- */

static double unnormalize(double g, int64_t size, bool align)
{
    return align ? (g + 1) / 2 * (double)(size - 1) : ((g + 1) * (double)size - 1) / 2;
}

static double reflect(double v, double twice_lo, double twice_hi)
{
    if (twice_lo == twice_hi)
        return 0;
    double mn = twice_lo / 2, span = (twice_hi - twice_lo) / 2;
    v = fabs(v - mn);
    double extra = fmod(v, span);
    int64_t flips = (int64_t)floor(v / span);
    return flips % 2 == 0 ? extra + mn : span - extra + mn;
}

/* PyTorch's compute_coordinates: padding applied to an unnormalized coordinate. */
static double pad_coord(double v, int64_t size, int pad, bool align)
{
    if (pad == 1) {
        v = fmin(fmax(v, 0), (double)(size - 1));
    } else if (pad == 2) {
        v = align ? reflect(v, 0, 2.0 * (double)(size - 1)) : reflect(v, -1, 2.0 * (double)size - 1);
        v = fmin(fmax(v, 0), (double)(size - 1));
    }
    return v;
}

static double cubic1(double x, double A) { return ((A + 2) * x - (A + 3)) * x * x + 1; }
static double cubic2(double x, double A) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; }

ox_status ox_misc_grid_sample(ox_kernel_ctx *c)
{
    const ox_tensor *x = ox_kernel_in(c, 0), *g = ox_kernel_in(c, 1);
    if (!x || !g || !ox_dtype_is_float(x->dtype) || !ox_dtype_is_float(g->dtype) ||
        x->rank < 3 || g->rank != x->rank || g->dims[0] != x->dims[0] ||
        g->dims[g->rank - 1] != x->rank - 2)
        return ox_errorf(c->err, OX_EINVAL, "X [N,C,...] and grid [N,...,S] expected");
    const char *mode = ox_node_attr_s(c->node, "mode", c->opset < 20 ? "bilinear" : "linear");
    const char *pm = ox_node_attr_s(c->node, "padding_mode", "zeros");
    bool align = ox_node_attr_i(c->node, "align_corners", 0) != 0;
    int m = (!strcmp(mode, "nearest")) ? 0 : (!strcmp(mode, "bicubic") || !strcmp(mode, "cubic")) ? 2 : 1;
    int pad = !strcmp(pm, "border") ? 1 : !strcmp(pm, "reflection") ? 2 : 0;
    int S = x->rank - 2;
    if (m == 2 && S != 2)
        return ox_errorf(c->err, OX_EUNSUPPORTED, "cubic mode needs 4-D input");
    int64_t N = x->dims[0], C = x->dims[1];
    int64_t dims[OX_MAX_RANK];
    dims[0] = N;
    dims[1] = C;
    int64_t nout = 1, nin = 1;
    for (int d = 0; d < S; d++) {
        dims[2 + d] = g->dims[1 + d];
        nout *= g->dims[1 + d];
        nin *= x->dims[2 + d];
    }
    ox_tensor *y = ox_kernel_output(c, 0, x->dtype, x->rank, dims);
    if (!y)
        return c->err->status;
    const int64_t *isz = &x->dims[2];
    int64_t istr[OX_MAX_RANK];
    istr[S - 1] = 1;
    for (int d = S - 2; d >= 0; d--)
        istr[d] = istr[d + 1] * isz[d + 1];
    for (int64_t n = 0; n < N; n++)
        for (int64_t o = 0; o < nout; o++) {
            double coord[OX_MAX_RANK];   /* in spatial dim order (d0 = slowest) */
            for (int d = 0; d < S; d++) {
                /* grid's last axis lists x (fastest dim) first */
                double gv = ox_misc_getf(g, (n * nout + o) * S + (S - 1 - d));
                coord[d] = unnormalize(gv, isz[d], align);
            }
            for (int64_t ch = 0; ch < C; ch++) {
                int64_t base = (n * C + ch) * nin;
                double val = 0;
                if (m == 0) {
                    int64_t off = 0;
                    bool ok = true;
                    for (int d = 0; d < S; d++) {
                        double v = nearbyint(pad_coord(coord[d], isz[d], pad, align));
                        if (v < 0 || v >= (double)isz[d]) {
                            ok = false;
                            break;
                        }
                        off += (int64_t)v * istr[d];
                    }
                    val = ok ? ox_misc_getf(x, base + off) : 0;
                } else if (m == 1) {
                    double p[OX_MAX_RANK], fl[OX_MAX_RANK];
                    for (int d = 0; d < S; d++) {
                        p[d] = pad_coord(coord[d], isz[d], pad, align);
                        fl[d] = floor(p[d]);
                    }
                    for (int corner = 0; corner < (1 << S); corner++) {
                        double w = 1;
                        int64_t off = 0;
                        bool ok = true;
                        for (int d = 0; d < S; d++) {
                            int bit = (corner >> d) & 1;
                            double idx = fl[d] + bit;
                            double t = p[d] - fl[d];
                            w *= bit ? t : 1 - t;
                            if (idx < 0 || idx >= (double)isz[d])
                                ok = false;
                            else
                                off += (int64_t)idx * istr[d];
                        }
                        if (ok && w != 0)
                            val += w * ox_misc_getf(x, base + off);
                    }
                } else {
                    const double A = -0.75;
                    double fy = floor(coord[0]), fx = floor(coord[1]);
                    double ty = coord[0] - fy, tx = coord[1] - fx;
                    double wy[4] = {cubic2(ty + 1, A), cubic1(ty, A), cubic1(1 - ty, A), cubic2(2 - ty, A)};
                    double wx[4] = {cubic2(tx + 1, A), cubic1(tx, A), cubic1(1 - tx, A), cubic2(2 - tx, A)};
                    for (int i = 0; i < 4; i++)
                        for (int j = 0; j < 4; j++) {
                            double yy = pad_coord(fy - 1 + i, isz[0], pad, align);
                            double xx = pad_coord(fx - 1 + j, isz[1], pad, align);
                            int64_t iy = (int64_t)yy, ix = (int64_t)xx;
                            if (yy < 0 || xx < 0 || iy >= isz[0] || ix >= isz[1])
                                continue;
                            val += wy[i] * wx[j] * ox_misc_getf(x, base + iy * istr[0] + ix);
                        }
                }
                ox_tensor_set_f64(y, (n * C + ch) * nout + o, val);
            }
        }
    return OX_OK;
}

ox_status ox_misc_affine_grid(ox_kernel_ctx *c)
{
    const ox_tensor *th = ox_kernel_in(c, 0), *sz = ox_kernel_in(c, 1);
    if (!th || !sz || !ox_dtype_is_float(th->dtype) || sz->rank != 1 ||
        (sz->numel != 4 && sz->numel != 5))
        return ox_errorf(c->err, OX_EINVAL, "theta and size [N,C,(D,)H,W] expected");
    int S = (int)sz->numel - 2;
    int64_t N = ox_tensor_get_i64(sz, 0);
    if (th->rank != 3 || th->dims[0] != N || th->dims[1] != S || th->dims[2] != S + 1)
        return ox_errorf(c->err, OX_EINVAL, "theta must be [N,%d,%d]", S, S + 1);
    bool align = ox_node_attr_i(c->node, "align_corners", 0) != 0;
    int64_t dims[OX_MAX_RANK], sp[3];
    dims[0] = N;
    int64_t npts = 1;
    for (int d = 0; d < S; d++) {
        sp[d] = ox_tensor_get_i64(sz, 2 + d);
        if (sp[d] < 0)
            return ox_errorf(c->err, OX_EINVAL, "negative size");
        dims[1 + d] = sp[d];
        npts *= sp[d];
    }
    dims[1 + S] = S;
    ox_tensor *y = ox_kernel_output(c, 0, th->dtype, S + 2, dims);
    if (!y)
        return c->err->status;
    for (int64_t n = 0; n < N; n++)
        for (int64_t p = 0; p < npts; p++) {
            double base[4];
            int64_t rem = p;
            /* base coords in x, y, (z) order: x is the fastest spatial dim */
            for (int d = S - 1; d >= 0; d--) {
                int64_t i = rem % sp[d];
                rem /= sp[d];
                double v;
                if (align)
                    v = sp[d] > 1 ? -1 + 2.0 * (double)i / (double)(sp[d] - 1) : 0;
                else
                    v = (2.0 * (double)i + 1) / (double)sp[d] - 1;
                base[S - 1 - d] = v;
            }
            base[S] = 1;
            for (int r = 0; r < S; r++) {
                double acc = 0;
                for (int k = 0; k <= S; k++)
                    acc += ox_misc_getf(th, (n * S + r) * (S + 1) + k) * base[k];
                ox_tensor_set_f64(y, (n * npts + p) * S + r, acc);
            }
        }
    return OX_OK;
}

ox_status ox_misc_col2im(ox_kernel_ctx *c)
{
    const ox_tensor *x = ox_kernel_in(c, 0), *is = ox_kernel_in(c, 1), *bs = ox_kernel_in(c, 2);
    if (!x || !is || !bs || x->rank != 3 || is->numel != bs->numel || is->numel < 1 ||
        is->numel > 8 || !ox_dtype_is_float(x->dtype))
        return ox_errorf(c->err, OX_EINVAL, "Col2Im: bad inputs");
    int S = (int)is->numel;
    int64_t img[8], blk[8], dil[8], pads[16], str[8], nb[8];
    const int64_t *a;
    int na;
    for (int d = 0; d < S; d++) {
        img[d] = ox_tensor_get_i64(is, d);
        blk[d] = ox_tensor_get_i64(bs, d);
        dil[d] = 1;
        str[d] = 1;
        pads[d] = pads[d + S] = 0;
    }
    if ((na = ox_node_attr_ints(c->node, "dilations", &a)) == S)
        memcpy(dil, a, (size_t)S * sizeof *a);
    if ((na = ox_node_attr_ints(c->node, "strides", &a)) == S)
        memcpy(str, a, (size_t)S * sizeof *a);
    if ((na = ox_node_attr_ints(c->node, "pads", &a)) == 2 * S)
        memcpy(pads, a, (size_t)(2 * S) * sizeof *a);
    int64_t K = 1, L = 1;
    for (int d = 0; d < S; d++) {
        if (img[d] <= 0 || blk[d] <= 0 || dil[d] <= 0 || str[d] <= 0)
            return ox_errorf(c->err, OX_EINVAL, "Col2Im: non-positive size");
        nb[d] = (img[d] + pads[d] + pads[d + S] - (dil[d] * (blk[d] - 1) + 1)) / str[d] + 1;
        K *= blk[d];
        L *= nb[d];
    }
    int64_t N = x->dims[0];
    if (x->dims[1] % K != 0 || x->dims[2] != L)
        return ox_errorf(c->err, OX_ESHAPE, "Col2Im: input shape does not match blocks");
    int64_t C = x->dims[1] / K, npix = 1;
    int64_t dims[OX_MAX_RANK];
    dims[0] = N;
    dims[1] = C;
    for (int d = 0; d < S; d++) {
        dims[2 + d] = img[d];
        npix *= img[d];
    }
    ox_tensor *y = ox_kernel_output(c, 0, x->dtype, S + 2, dims);
    double *acc = calloc((size_t)npix + 1, sizeof *acc);
    if (!y || !acc) {
        free(acc);
        return y ? ox_errorf(c->err, OX_ENOMEM, "out of memory") : c->err->status;
    }
    for (int64_t n = 0; n < N; n++)
        for (int64_t ch = 0; ch < C; ch++) {
            memset(acc, 0, (size_t)npix * sizeof *acc);
            for (int64_t k = 0; k < K; k++)
                for (int64_t l = 0; l < L; l++) {
                    int64_t kr = k, lr = l, pix = 0;
                    bool ok = true;
                    int64_t kd[8], ld[8];
                    for (int d = S - 1; d >= 0; d--) {
                        kd[d] = kr % blk[d];
                        kr /= blk[d];
                        ld[d] = lr % nb[d];
                        lr /= nb[d];
                    }
                    for (int d = 0; d < S; d++) {
                        int64_t p = ld[d] * str[d] - pads[d] + kd[d] * dil[d];
                        if (p < 0 || p >= img[d]) {
                            ok = false;
                            break;
                        }
                        pix = pix * img[d] + p;
                    }
                    if (ok)
                        acc[pix] += ox_misc_getf(x, ((n * C + ch) * K + k) * L + l);
                }
            for (int64_t p = 0; p < npix; p++)
                ox_tensor_set_f64(y, (n * C + ch) * npix + p, acc[p]);
        }
    free(acc);
    return OX_OK;
}

/* ---- RoiAlign -------------------------------------------------------------- */

ox_status ox_misc_roi_align(ox_kernel_ctx *c)
{
    const ox_tensor *x = ox_kernel_in(c, 0), *rois = ox_kernel_in(c, 1),
                    *bi = ox_kernel_in(c, 2);
    if (!x || !rois || !bi || x->rank != 4 || rois->rank != 2 || rois->dims[1] != 4 ||
        bi->numel != rois->dims[0] || !ox_dtype_is_float(x->dtype))
        return ox_errorf(c->err, OX_EINVAL, "X [N,C,H,W], rois [R,4], batch_indices [R]");
    bool avg = strcmp(ox_node_attr_s(c->node, "mode", "avg"), "max") != 0;
    int64_t ph_n = ox_node_attr_i(c->node, "output_height", 1);
    int64_t pw_n = ox_node_attr_i(c->node, "output_width", 1);
    int64_t sr = ox_node_attr_i(c->node, "sampling_ratio", 0);
    double scale = ox_node_attr_f(c->node, "spatial_scale", 1.0f);
    bool half = c->opset >= 16 &&
                strcmp(ox_node_attr_s(c->node, "coordinate_transformation_mode", "half_pixel"),
                       "half_pixel") == 0;
    if (ph_n <= 0 || pw_n <= 0 || sr < 0)
        return ox_errorf(c->err, OX_EINVAL, "bad output size or sampling_ratio");
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3], R = rois->dims[0];
    int64_t dims[4] = {R, C, ph_n, pw_n};
    ox_tensor *y = ox_kernel_output(c, 0, x->dtype, 4, dims);
    if (!y)
        return c->err->status;
    double off = half ? 0.5 : 0.0;
    for (int64_t r = 0; r < R; r++) {
        int64_t b = ox_tensor_get_i64(bi, r);
        if (b < 0 || b >= N)
            return ox_errorf(c->err, OX_EINVAL, "batch index out of range");
        double sw = ox_misc_getf(rois, r * 4) * scale - off;
        double sh = ox_misc_getf(rois, r * 4 + 1) * scale - off;
        double ew = ox_misc_getf(rois, r * 4 + 2) * scale - off;
        double eh = ox_misc_getf(rois, r * 4 + 3) * scale - off;
        double rw = ew - sw, rh = eh - sh;
        if (!half) {
            rw = fmax(rw, 1.0);
            rh = fmax(rh, 1.0);
        }
        double bh = rh / (double)ph_n, bw = rw / (double)pw_n;
        int64_t gh = sr > 0 ? sr : (int64_t)ceil(rh / (double)ph_n);
        int64_t gw = sr > 0 ? sr : (int64_t)ceil(rw / (double)pw_n);
        double count = (double)(gh * gw > 1 ? gh * gw : 1);
        for (int64_t ch = 0; ch < C; ch++) {
            int64_t base = (b * C + ch) * H * W;
            for (int64_t ph = 0; ph < ph_n; ph++)
                for (int64_t pw = 0; pw < pw_n; pw++) {
                    double acc = 0, mx = -INFINITY;
                    bool any = false;
                    for (int64_t iy = 0; iy < gh; iy++) {
                        double yy = sh + (double)ph * bh + ((double)iy + 0.5) * bh / (double)gh;
                        for (int64_t ix = 0; ix < gw; ix++) {
                            double xx = sw + (double)pw * bw + ((double)ix + 0.5) * bw / (double)gw;
                            double v = 0;
                            if (!(yy < -1.0 || yy > (double)H || xx < -1.0 || xx > (double)W)) {
                                double ty = fmax(yy, 0), tx = fmax(xx, 0);
                                int64_t yl = (int64_t)ty, xl = (int64_t)tx, yh, xh;
                                if (yl >= H - 1) {
                                    yh = yl = H - 1;
                                    ty = (double)yl;
                                } else {
                                    yh = yl + 1;
                                }
                                if (xl >= W - 1) {
                                    xh = xl = W - 1;
                                    tx = (double)xl;
                                } else {
                                    xh = xl + 1;
                                }
                                double ly = ty - (double)yl, lx = tx - (double)xl;
                                double hy = 1 - ly, hx = 1 - lx;
                                double v1 = hy * hx * ox_misc_getf(x, base + yl * W + xl);
                                double v2 = hy * lx * ox_misc_getf(x, base + yl * W + xh);
                                double v3 = ly * hx * ox_misc_getf(x, base + yh * W + xl);
                                double v4 = ly * lx * ox_misc_getf(x, base + yh * W + xh);
                                if (avg)
                                    v = v1 + v2 + v3 + v4;
                                else
                                    v = fmax(fmax(v1, v2), fmax(v3, v4));
                            }
                            acc += v;
                            if (!any || v > mx)
                                mx = v;
                            any = true;
                        }
                    }
                    ox_tensor_set_f64(y, ((r * C + ch) * ph_n + ph) * pw_n + pw,
                                      avg ? acc / count : (any ? mx : 0));
                }
        }
    }
    return OX_OK;
}
