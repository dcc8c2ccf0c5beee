/* Resize (opsets 10-19) and the older Upsample. Interpolation is separable:
 * for every resized axis we precompute, per output index, the source
 * indices and weights (nearest, linear, cubic, with antialias and
 * exclude_outside), then apply the axes one at a time. The coordinate maths
 * follows the ONNX reference implementation, which produced the test data. */
#include "tk_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { M_NEAREST, M_LINEAR, M_CUBIC };
enum { CT_HALF_PIXEL, CT_HALF_PIXEL_SYM, CT_PYTORCH_HALF_PIXEL, CT_ALIGN_CORNERS,
       CT_ASYMMETRIC, CT_TF_CROP, CT_TF_HALF_PIXEL_NN };
enum { NM_ROUND_FLOOR, NM_ROUND_CEIL, NM_FLOOR, NM_CEIL, NM_SIMPLE };

typedef struct {
    int mode, ct, nm;
    double a;                 /* cubic coefficient */
    bool exclude_outside, antialias;
    double extrap;
} rs_opts;

/* Per-axis plan: out_len rows of `taps` (source index, weight) pairs. */
typedef struct {
    int64_t in_len, out_len;
    int taps;
    int64_t *src;   /* out_len * taps */
    double *w;      /* out_len * taps */
    bool *outside;  /* tf_crop_and_resize: output index maps outside the input */
    bool identity;
} rs_axis;

static double cubic_w(double x, double A)
{
    x = fabs(x);
    if (x <= 1)
        return ((A + 2) * x - (A + 3)) * x * x + 1;
    if (x < 2)
        return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
    return 0;
}

/* Number of taps for a mode at this scale. */
static int taps_for(const rs_opts *o, double scale)
{
    if (o->mode == M_NEAREST)
        return 2;
    double s = o->antialias && scale < 1 ? scale : 1;
    if (o->mode == M_LINEAR) {
        int64_t start = (int64_t)floor(-1 / s) + 1;
        return (int)(2 - 2 * start);
    }
    int64_t start = (int64_t)floor(-2 / s) + 1;
    return (int)(2 - 2 * start);
}

static void coeffs(const rs_opts *o, double ratio, double scale, int n, double *c)
{
    if (o->mode == M_NEAREST) {
        bool second;
        if (ratio == 1)
            second = true;
        else if (o->nm == NM_ROUND_FLOOR)
            second = ratio > 0.5;
        else if (o->nm == NM_ROUND_CEIL)
            second = ratio >= 0.5;
        else if (o->nm == NM_FLOOR)
            second = false;
        else
            second = true; /* ceil; NM_SIMPLE picks floor/ceil before this */
        c[0] = second ? 0 : 1;
        c[1] = second ? 1 : 0;
        return;
    }
    double s = o->antialias && scale < 1 ? scale : 1;
    int64_t start = 1 - n / 2;
    double sum = 0;
    for (int j = 0; j < n; j++) {
        double arg = ((double)(start + j) - ratio) * s;
        if (o->mode == M_LINEAR) {
            double v = 1 - fabs(arg);
            c[j] = v < 0 ? 0 : (v > 1 ? 1 : v);
        } else {
            c[j] = cubic_w(arg, o->a);
        }
        sum += c[j];
    }
    if (o->antialias && scale < 1 && sum != 0)
        for (int j = 0; j < n; j++)
            c[j] /= sum;
}

static bool plan_axis(const rs_opts *o, rs_axis *ax, double scale, double roi_s,
                      double roi_e)
{
    int64_t in = ax->in_len, out = ax->out_len;
    int n = taps_for(o, scale);
    if (n < 2 || n > 4096)
        return false;
    ax->taps = n;
    ax->src = malloc(sizeof(int64_t) * (size_t)(out ? out : 1) * (size_t)n);
    ax->w = malloc(sizeof(double) * (size_t)(out ? out : 1) * (size_t)n);
    ax->outside = calloc((size_t)(out ? out : 1), sizeof(bool));
    if (!ax->src || !ax->w || !ax->outside)
        return false;
    double ow = scale * (double)in; /* the reference uses the float width */
    ax->identity = in == out;
    for (int64_t x = 0; x < out; x++) {
        double xo;
        switch (o->ct) {
        case CT_ALIGN_CORNERS:
            xo = ow == 1 ? 0 : (double)x * (double)(in - 1) / (ow - 1);
            break;
        case CT_ASYMMETRIC:
            xo = (double)x / scale;
            break;
        case CT_TF_CROP:
            xo = ow == 1 ? (roi_e - roi_s) * (double)(in - 1) / 2
                         : (double)x * (roi_e - roi_s) * (double)(in - 1) / (ow - 1);
            xo += roi_s * (double)(in - 1);
            if (xo < 0 || xo > (double)(in - 1))
                ax->outside[x] = true;
            break;
        case CT_TF_HALF_PIXEL_NN: /* Resize-11/12 only */
            xo = ((double)x + 0.5) / scale;
            break;
        case CT_PYTORCH_HALF_PIXEL:
            xo = ow == 1 ? -0.5 : ((double)x + 0.5) / scale - 0.5;
            break;
        case CT_HALF_PIXEL_SYM: {
            double adj = (double)out / ow, center = (double)in / 2;
            xo = center * (1 - adj) + ((double)x + 0.5) / scale - 0.5;
            break;
        }
        default:
            xo = ((double)x + 0.5) / scale - 0.5;
            break;
        }
        if (o->mode == M_NEAREST && o->nm == NM_SIMPLE)
            xo = scale < 1 ? ceil(xo) : floor(xo);
        double fl = floor(xo);
        double ratio = xo == fl ? 1 : xo - fl;
        double *c = ax->w + x * n;
        int64_t *s = ax->src + x * n;
        coeffs(o, ratio, scale, n, c);
        /* Taps sit at (xo - ratio) + (j - n/2 + 1), kept within the input
         * padded by n/2 on each side, as the reference's neighbour search. */
        double base = xo - ratio - (double)(n / 2 - 1);
        int64_t pad = n / 2;
        if (base < (double)-pad)
            base = (double)-pad;
        if (base > (double)(in + pad - n))
            base = (double)(in + pad - n);
        int64_t b0 = (int64_t)base;
        double sum = 0;
        for (int j = 0; j < n; j++) {
            int64_t idx = b0 + j;
            if (o->exclude_outside && (idx < 0 || idx >= in))
                c[j] = 0;
            sum += c[j];
            s[j] = idx < 0 ? 0 : (idx >= in ? in - 1 : idx);
        }
        if (o->exclude_outside && sum != 0)
            for (int j = 0; j < n; j++)
                c[j] /= sum;
        for (int j = 0; j < n; j++)
            if (c[j] != 0 && !(s[j] == x && c[j] == 1))
                ax->identity = false;
        if (ax->outside[x])
            ax->identity = false;
    }
    return true;
}

static void free_axes(rs_axis *ax, int r)
{
    for (int i = 0; i < r; i++) {
        free(ax[i].src);
        free(ax[i].w);
        free(ax[i].outside);
    }
}

/* Nearest: one pass of element copies (any dtype). Each output row along
 * the last axis gathers through that axis' index map; a row whose source
 * row equals the previous one (upsampling) is copied from it instead. */
static ox_tensor *apply_nearest(const ox_tensor *x, rs_axis *ax, int r)
{
    int64_t od[OX_MAX_RANK], xs[OX_MAX_RANK], total = 0;
    for (int a = 0; a < r; a++) {
        od[a] = ax[a].out_len;
        total += od[a];
    }
    ox_tensor *y = ox_tensor_new(x->dtype, r, od);
    if (!y || y->numel == 0)
        return y;
    if (r == 0) {
        ox_tk_copy(y, 0, x, 0, 1);
        return y;
    }
    int64_t *maps = malloc(sizeof(int64_t) * (size_t)total), *map[OX_MAX_RANK];
    if (!maps) {
        ox_tensor_free(y);
        return NULL;
    }
    for (int a = 0, off = 0; a < r; a++) {
        map[a] = maps + off;
        for (int64_t k = 0; k < od[a]; k++)
            map[a][k] = ax[a].w[k * 2] != 0 ? ax[a].src[k * 2] : ax[a].src[k * 2 + 1];
        off += (int)od[a];
    }
    ox_tk_strides(r, x->dims, xs);
    ox_tk_layout l;
    ox_tk_layout_of(x->dtype, &l);
    bool typed = l.es == 1 || l.es == 2 || l.es == 4 || l.es == 8;
    const char *s = typed ? ox_tensor_data(x) : NULL;
    char *d = typed ? ox_tensor_data(y) : NULL;
    size_t es = (size_t)l.es;
    int64_t L = od[r - 1], rows = y->numel / L, prev = -1;
    const int64_t *last = map[r - 1];
    int64_t k[OX_MAX_RANK] = {0};
    for (int64_t row = 0; row < rows; row++) {
        int64_t src = 0, dst = row * L;
        for (int a = 0; a < r - 1; a++)
            src += map[a][k[a]] * xs[a];
        if (src == prev) {
            ox_tk_copy(y, dst, y, dst - L, L);
        } else if (typed) {
            for (int64_t j = 0; j < L; j++)
                memcpy(d + (size_t)(dst + j) * es, s + (size_t)(src + last[j]) * es, es);
        } else {
            for (int64_t j = 0; j < L; j++)
                ox_tk_copy(y, dst + j, x, src + last[j], 1);
        }
        prev = src;
        for (int a = r - 2; a >= 0; a--) {
            if (++k[a] < od[a])
                break;
            k[a] = 0;
        }
    }
    free(maps);
    return y;
}

/* Linear/cubic: weighted sums in float over a float working copy. */
static float *apply_weights(float *buf, int64_t *dims, rs_axis *ax, int r)
{
    for (int a = 0; a < r; a++) {
        if (ax[a].identity)
            continue;
        int64_t outer = 1, inner = 1;
        for (int i = 0; i < a; i++)
            outer *= dims[i];
        for (int i = a + 1; i < r; i++)
            inner *= dims[i];
        int64_t il = dims[a], ol = ax[a].out_len;
        int n = ax[a].taps;
        size_t cnt = (size_t)(outer * ol * inner);
        float *nb = calloc(cnt ? cnt : 1, sizeof(float));
        if (!nb) {
            free(buf);
            return NULL;
        }
        for (int64_t o = 0; o < outer; o++)
            for (int64_t k = 0; k < ol; k++) {
                float *d = nb + (o * ol + k) * inner;
                for (int j = 0; j < n; j++) {
                    float w = (float)ax[a].w[k * n + j];
                    if (w == 0)
                        continue;
                    const float *s = buf + (o * il + ax[a].src[k * n + j]) * inner;
                    for (int64_t i = 0; i < inner; i++)
                        d[i] += w * s[i];
                }
            }
        free(buf);
        buf = nb;
        dims[a] = ol;
    }
    return buf;
}

/* Sets every element whose index is flagged outside on some axis. */
static void apply_extrapolation(ox_tensor *y, rs_axis *ax, int r, double v)
{
    bool any = false;
    for (int a = 0; a < r; a++)
        for (int64_t k = 0; k < ax[a].out_len && !any; k++)
            any = ax[a].outside[k];
    if (!any)
        return;
    int64_t k[OX_MAX_RANK] = {0};
    for (int64_t i = 0; i < y->numel; i++) {
        bool out = false;
        for (int a = 0; a < r && !out; a++)
            out = ax[a].outside[k[a]];
        if (out)
            ox_tensor_set_f64(y, i, v);
        for (int a = r - 1; a >= 0; a--) {
            if (++k[a] < y->dims[a])
                break;
            k[a] = 0;
        }
    }
}

static ox_status run_resize(ox_kernel_ctx *c, const ox_tensor *x, const rs_opts *o,
                            const double *scales, const int64_t *out_len,
                            const double *roi)
{
    int r = x->rank;
    rs_axis ax[OX_MAX_RANK];
    memset(ax, 0, sizeof ax);
    ox_status st = OX_OK;
    int64_t total;
    if (!ox_shape_numel(r, out_len, &total) || total > ((int64_t)1 << 34))
        return ox_errorf(c->err, OX_ESHAPE, "%s: output too large", ox_tk_op(c));
    /* The output (and, interpolating, float staging of the same size) is
     * allocated here, not by ox_kernel_output: the --max-memory ceiling is
     * checked first, so a small input with huge scales is refused before
     * any byte is touched (it used to fill gigabytes, then be refused). */
    size_t out_bytes = 0;
    if (x->dtype != OX_DT_STRING && !ox_dtype_nbytes(x->dtype, total, &out_bytes))
        return ox_errorf(c->err, OX_ESHAPE, "%s: output too large", ox_tk_op(c));
    int64_t need = (int64_t)out_bytes + (o->mode == M_NEAREST ? 0 : total * (int64_t)sizeof(float));
    if ((st = ox_kernel_poll(c, need)) != OX_OK)
        return st;
    for (int a = 0; a < r; a++) {
        ax[a].in_len = x->dims[a];
        ax[a].out_len = out_len[a];
        if (out_len[a] < 0 || (x->dims[a] == 0 && out_len[a] > 0) || !(scales[a] > 1e-6) ||
            !(scales[a] < 1e9)) {
            st = ox_errorf(c->err, OX_EINVAL, "%s: bad scale or size on axis %d",
                           ox_tk_op(c), a);
            goto out;
        }
        if (!plan_axis(o, &ax[a], scales[a], roi ? roi[a] : 0, roi ? roi[r + a] : 1)) {
            st = ox_errorf(c->err, OX_ENOMEM, "%s: cannot plan axis %d", ox_tk_op(c), a);
            goto out;
        }
    }
    ox_tensor *y;
    if (o->mode == M_NEAREST) {
        y = apply_nearest(x, ax, r);
    } else {
        if (!ox_tk_is_numeric(x->dtype)) {
            st = ox_errorf(c->err, OX_EINVAL, "%s: interpolation needs numbers", ox_tk_op(c));
            goto out;
        }
        float *buf = malloc(sizeof(float) * (size_t)(x->numel ? x->numel : 1));
        if (buf) {
            if (x->dtype == OX_DT_FLOAT)
                memcpy(buf, ox_tensor_data(x), sizeof(float) * (size_t)x->numel);
            else
                for (int64_t i = 0; i < x->numel; i++)
                    buf[i] = (float)ox_tensor_get_f64(x, i);
        }
        int64_t dims[OX_MAX_RANK];
        memcpy(dims, x->dims, sizeof(int64_t) * (size_t)r);
        buf = buf ? apply_weights(buf, dims, ax, r) : NULL;
        y = buf ? ox_tensor_new(x->dtype, r, out_len) : NULL;
        if (y) {
            if (x->dtype == OX_DT_FLOAT)
                memcpy(ox_tensor_data(y), buf, sizeof(float) * (size_t)y->numel);
            else
                for (int64_t i = 0; i < y->numel; i++)
                    ox_tensor_set_f64(y, i, buf[i]);
        }
        free(buf);
    }
    if (!y) {
        st = ox_errorf(c->err, OX_ENOMEM, "%s: out of memory", ox_tk_op(c));
        goto out;
    }
    if (o->ct == CT_TF_CROP && ox_tk_is_numeric(y->dtype))
        apply_extrapolation(y, ax, r, o->extrap);
    ox_kernel_set_output(c, 0, y);
out:
    free_axes(ax, r);
    return st;
}

static int parse_ct(const char *s)
{
    static const char *names[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
                                  "align_corners", "asymmetric", "tf_crop_and_resize"};
    for (int i = 0; i < 6; i++)
        if (!strcmp(s, names[i]))
            return i;
    if (!strcmp(s, "tf_half_pixel_for_nn"))
        return CT_TF_HALF_PIXEL_NN;
    return -1;
}

static int parse_mode(const char *s)
{
    if (!strcmp(s, "nearest"))
        return M_NEAREST;
    if (!strcmp(s, "linear") || !strcmp(s, "bilinear") || !strcmp(s, "trilinear"))
        return M_LINEAR;
    if (!strcmp(s, "cubic") || !strcmp(s, "bicubic"))
        return M_CUBIC;
    return -1;
}

/* Reads a float tensor (scales/roi) into doubles. */
static ox_status read_floats(ox_kernel_ctx *c, const ox_tensor *t, const char *what,
                             double *out, int max, int *n)
{
    if (!ox_dtype_is_float(t->dtype) || t->numel > max)
        return ox_errorf(c->err, OX_EINVAL, "%s: bad %s tensor", ox_tk_op(c), what);
    for (int64_t i = 0; i < t->numel; i++)
        out[i] = ox_tensor_get_f64(t, i);
    *n = (int)t->numel;
    return OX_OK;
}

ox_status ox_tk_resize(ox_kernel_ctx *c)
{
    const ox_tensor *x;
    ox_status st = ox_tk_need(c, 0, &x);
    if (st)
        return st;
    int r = x->rank;
    rs_opts o = {0};
    o.mode = parse_mode(ox_node_attr_s(c->node, "mode", "nearest"));
    bool v10 = c->opset < 11;
    o.ct = v10 ? CT_ASYMMETRIC
               : parse_ct(ox_node_attr_s(c->node, "coordinate_transformation_mode",
                                         "half_pixel"));
    const char *nm = ox_node_attr_s(c->node, "nearest_mode", "round_prefer_floor");
    o.nm = v10 ? NM_SIMPLE : !strcmp(nm, "round_prefer_floor") ? NM_ROUND_FLOOR
         : !strcmp(nm, "round_prefer_ceil") ? NM_ROUND_CEIL : !strcmp(nm, "floor") ? NM_FLOOR
         : !strcmp(nm, "ceil") ? NM_CEIL : -1;
    o.a = ox_node_attr_f(c->node, "cubic_coeff_a", -0.75f);
    o.exclude_outside = ox_node_attr_i(c->node, "exclude_outside", 0) != 0;
    o.antialias = ox_node_attr_i(c->node, "antialias", 0) != 0;
    o.extrap = ox_node_attr_f(c->node, "extrapolation_value", 0.0f);
    if (o.mode < 0 || o.ct < 0 || o.nm < 0)
        return ox_errorf(c->err, OX_EINVAL, "Resize: unknown mode attribute");
    const char *kp = ox_node_attr_s(c->node, "keep_aspect_ratio_policy", "stretch");
    int policy = !strcmp(kp, "stretch") ? 0 : !strcmp(kp, "not_larger") ? 1
               : !strcmp(kp, "not_smaller") ? 2 : -1;
    if (policy < 0)
        return ox_errorf(c->err, OX_EINVAL, "Resize: unknown keep_aspect_ratio_policy");

    int64_t axes[OX_MAX_RANK];
    int na = r;
    const int64_t *aa;
    int k = ox_node_attr_ints(c->node, "axes", &aa);
    if (k >= 0) {
        if (k > r)
            return ox_errorf(c->err, OX_EINVAL, "Resize: too many axes");
        na = k;
        for (int i = 0; i < k; i++) {
            int a;
            if ((st = ox_tk_axis(c, aa[i], r, &a)))
                return st;
            axes[i] = a;
        }
    } else {
        for (int i = 0; i < r; i++)
            axes[i] = i;
    }
    const ox_tensor *roi_t = NULL, *sc_t = NULL, *sz_t = NULL;
    if (v10) {
        sc_t = c->n_in > 1 ? ox_kernel_in(c, 1) : NULL;
    } else {
        roi_t = c->n_in > 1 ? ox_kernel_in(c, 1) : NULL;
        sc_t = c->n_in > 2 ? ox_kernel_in(c, 2) : NULL;
        sz_t = c->n_in > 3 ? ox_kernel_in(c, 3) : NULL;
    }
    if (sc_t && sc_t->numel == 0)
        sc_t = NULL;
    if (sz_t && sz_t->numel == 0)
        sz_t = NULL;
    /* An empty roi means none, except where it takes effect: tf_crop_and_
     * resize needs its 2 x axes values (refused as ONNX Runtime does; a
     * constant one already when planned, plan_check.c). */
    if (roi_t && roi_t->numel == 0 && o.ct == CT_TF_CROP)
        return ox_errorf(c->err, OX_EINVAL, "Resize: tf_crop_and_resize needs roi of %d values, "
                         "got 0", 2 * na);
    if (roi_t && roi_t->numel == 0)
        roi_t = NULL;
    if (!!sc_t == !!sz_t)
        return ox_errorf(c->err, OX_EINVAL, "Resize: exactly one of scales and sizes is needed");
    double scales[OX_MAX_RANK], roi[2 * OX_MAX_RANK], buf[2 * OX_MAX_RANK];
    int64_t out[OX_MAX_RANK];
    for (int i = 0; i < r; i++) {
        scales[i] = 1;
        out[i] = x->dims[i];
        roi[i] = 0;
        roi[r + i] = 1;
    }
    int n;
    if (roi_t && o.ct == CT_TF_CROP) {
        if ((st = read_floats(c, roi_t, "roi", buf, 2 * OX_MAX_RANK, &n)))
            return st;
        if (n != 2 * na)
            return ox_errorf(c->err, OX_EINVAL, "Resize: roi needs %d values", 2 * na);
        for (int i = 0; i < na; i++) {
            roi[axes[i]] = buf[i];
            roi[r + axes[i]] = buf[na + i];
        }
    }
    if (sc_t) {
        if ((st = read_floats(c, sc_t, "scales", buf, OX_MAX_RANK, &n)))
            return st;
        if (n != na)
            return ox_errorf(c->err, OX_EINVAL, "Resize: scales needs %d values", na);
        for (int i = 0; i < na; i++) {
            int a = (int)axes[i];
            scales[a] = buf[i];
            double v = buf[i] * (double)x->dims[a];
            if (!(v >= 0) || v > 1e12)
                return ox_errorf(c->err, OX_EINVAL, "Resize: bad scale %g", buf[i]);
            out[a] = (int64_t)floor(v);
        }
    } else {
        int64_t sz[OX_MAX_RANK];
        if ((st = ox_tk_read_ints(c, sz_t, "sizes", sz, OX_MAX_RANK, &n)))
            return st;
        if (n != na)
            return ox_errorf(c->err, OX_EINVAL, "Resize: sizes needs %d values", na);
        double pick = policy == 1 ? INFINITY : -INFINITY;
        for (int i = 0; i < na; i++) {
            int a = (int)axes[i];
            if (sz[i] < 0 || x->dims[a] == 0)
                return ox_errorf(c->err, OX_EINVAL, "Resize: bad size");
            scales[a] = (double)sz[i] / (double)x->dims[a];
            out[a] = sz[i];
            if (policy == 1 && scales[a] < pick)
                pick = scales[a];
            if (policy == 2 && scales[a] > pick)
                pick = scales[a];
        }
        if (policy)
            for (int i = 0; i < na; i++) {
                int a = (int)axes[i];
                scales[a] = pick;
                out[a] = (int64_t)(pick * (double)x->dims[a] + 0.5);
            }
    }
    return run_resize(c, x, &o, scales, out, o.ct == CT_TF_CROP ? roi : NULL);
}

ox_status ox_tk_upsample(ox_kernel_ctx *c)
{
    const ox_tensor *x;
    ox_status st = ox_tk_need(c, 0, &x);
    if (st)
        return st;
    int r = x->rank;
    rs_opts o = {0};
    o.mode = parse_mode(ox_node_attr_s(c->node, "mode", "nearest"));
    o.ct = CT_ASYMMETRIC;
    o.nm = NM_SIMPLE;
    if (o.mode < 0 || o.mode == M_CUBIC)
        return ox_errorf(c->err, OX_EINVAL, "Upsample: unsupported mode");
    double scales[OX_MAX_RANK];
    int n;
    if (c->opset < 9) {
        const ox_attr *a = ox_node_attr(c->node, "scales");
        if (!a || a->type != OX_ATTR_FLOATS || !a->floats || a->n != r)
            return ox_errorf(c->err, OX_EINVAL, "Upsample: scales attribute must have %d values", r);
        for (int i = 0; i < r; i++)
            scales[i] = a->floats[i];
    } else {
        const ox_tensor *s;
        if ((st = ox_tk_need(c, 1, &s)) ||
            (st = read_floats(c, s, "scales", scales, OX_MAX_RANK, &n)))
            return st;
        if (n != r)
            return ox_errorf(c->err, OX_EINVAL, "Upsample: scales must have %d values", r);
    }
    int64_t out[OX_MAX_RANK];
    for (int i = 0; i < r; i++) {
        double v = scales[i] * (double)x->dims[i];
        if (!(v >= 0) || v > 1e12)
            return ox_errorf(c->err, OX_EINVAL, "Upsample: bad scale");
        out[i] = (int64_t)floor(v);
    }
    return run_resize(c, x, &o, scales, out, NULL);
}
