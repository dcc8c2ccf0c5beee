/* Signal kernels: Hann/Hamming/Blackman windows, DFT (opset 17 with the
 * axis attribute, 20+ with the axis input), STFT and MelWeightMatrix.
 * Transforms are the direct O(n^2) sums in double: exact enough for the
 * suite and simple; a later speed issue may swap in an FFT. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/k_misc/misc.h"
#include "exec/rv_util.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

static ox_status window(ox_kernel_ctx *c, int kind)
{
    int64_t n;
    if (!ox_rv_scalar_i64(ox_kernel_in(c, 0), &n) || n < 0 || n > (1 << 28))
        return ox_errorf(c->err, OX_EINVAL, "size must be a non-negative scalar");
    bool periodic = ox_node_attr_i(c->node, "periodic", 1) != 0;
    int64_t dt = ox_node_attr_i(c->node, "output_datatype", OX_DT_FLOAT);
    if (!ox_dtype_valid((int)dt) || dt == OX_DT_STRING || dt == OX_DT_UNDEFINED)
        return ox_errorf(c->err, OX_EINVAL, "bad output_datatype");
    ox_tensor *y = ox_kernel_output(c, 0, (ox_dtype)dt, 1, &n);
    if (!y)
        return c->err->status;
    double d = periodic ? (double)n : (double)(n - 1);
    for (int64_t i = 0; i < n; i++) {
        double a = d > 0 ? 2 * M_PI * (double)i / d : 0, v;
        if (kind == 0)
            v = 0.5 - 0.5 * cos(a);
        else if (kind == 1)
            v = 25.0 / 46.0 - (21.0 / 46.0) * cos(a);
        else
            v = 0.42 - 0.5 * cos(a) + 0.08 * cos(2 * a);
        ox_tensor_set_f64(y, i, v);
    }
    return OX_OK;
}

ox_status ox_misc_hann_window(ox_kernel_ctx *c) { return window(c, 0); }
ox_status ox_misc_hamming_window(ox_kernel_ctx *c) { return window(c, 1); }
ox_status ox_misc_blackman_window(ox_kernel_ctx *c) { return window(c, 2); }

/* out[k] = sum_n in[n] * exp(sign * 2 pi i k n / L), k < nk; in has n_in
 * complex samples (zero beyond). */
static void dft1(const double *in, int64_t n_in, int64_t L, int64_t nk, bool inverse,
                 double *out)
{
    double sign = inverse ? 1.0 : -1.0;
    for (int64_t k = 0; k < nk; k++) {
        double re = 0, im = 0;
        for (int64_t n = 0; n < n_in && n < L; n++) {
            double a = sign * 2 * M_PI * (double)((k * n) % L) / (double)L;
            double cr = cos(a), ci = sin(a);
            re += in[2 * n] * cr - in[2 * n + 1] * ci;
            im += in[2 * n] * ci + in[2 * n + 1] * cr;
        }
        if (inverse) {
            re /= (double)L;
            im /= (double)L;
        }
        out[2 * k] = re;
        out[2 * k + 1] = im;
    }
}

ox_status ox_misc_dft(ox_kernel_ctx *c)
{
    const ox_tensor *x = ox_kernel_in(c, 0);
    if (!x || !ox_dtype_is_float(x->dtype) || x->rank < 2)
        return ox_errorf(c->err, OX_EINVAL, "input must be a float tensor of rank >= 2");
    int r = x->rank;
    int64_t cdim = x->dims[r - 1];
    if (cdim != 1 && cdim != 2)
        return ox_errorf(c->err, OX_EINVAL, "last dimension must be 1 or 2");
    int64_t axis;
    if (c->opset < 20) {
        axis = ox_node_attr_i(c->node, "axis", 1);
    } else {
        axis = -2;
        const ox_tensor *at = ox_kernel_in(c, 2);
        if (at && !ox_rv_scalar_i64(at, &axis))
            return ox_errorf(c->err, OX_EINVAL, "axis must be a scalar");
    }
    if (axis < 0)
        axis += r;
    if (axis < 0 || axis >= r - 1)
        return ox_errorf(c->err, OX_EINVAL, "axis out of range");
    bool inverse = ox_node_attr_i(c->node, "inverse", 0) != 0;
    bool onesided = ox_node_attr_i(c->node, "onesided", 0) != 0;
    int64_t N = x->dims[axis], L = N;
    /* Inverse of a one-sided spectrum (irfft): the input holds bins
     * 0..L/2, the rest follows from Hermitian symmetry, output is real. */
    bool irfft = inverse && onesided;
    if (irfft)
        L = 2 * (N - 1);
    const ox_tensor *lt = ox_kernel_in(c, 1);
    if (lt && (!ox_rv_scalar_i64(lt, &L) || L <= 0))
        return ox_errorf(c->err, OX_EINVAL, "dft_length must be positive");
    if (L <= 0 || L > (1 << 24))
        return ox_errorf(c->err, OX_ERANGE, "bad dft_length");
    int64_t nk = irfft ? L : onesided ? L / 2 + 1 : L;
    int64_t oc = irfft ? 1 : 2;
    int64_t dims[OX_MAX_RANK];
    memcpy(dims, x->dims, sizeof dims);
    dims[axis] = nk;
    dims[r - 1] = oc;
    ox_tensor *y = ox_kernel_output(c, 0, x->dtype, r, dims);
    if (!y)
        return c->err->status;
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; i++)
        outer *= x->dims[i];
    for (int i = (int)axis + 1; i < r - 1; i++)
        inner *= x->dims[i];
    int64_t nb = N > L ? N : L;
    double *buf = calloc((size_t)(nb + 1) * 2, sizeof *buf);
    double *res = malloc((size_t)(nk + 1) * 2 * sizeof *res);
    if (!buf || !res) {
        free(buf);
        free(res);
        return ox_errorf(c->err, OX_ENOMEM, "out of memory");
    }
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            for (int64_t n = 0; n < N; n++) {
                int64_t e = ((o * N + n) * inner + i) * cdim;
                buf[2 * n] = ox_misc_getf(x, e);
                buf[2 * n + 1] = cdim == 2 ? ox_misc_getf(x, e + 1) : 0.0;
            }
            int64_t n_in = N;
            if (irfft) {
                for (int64_t k = N; k < L; k++) {
                    int64_t m = L - k;
                    buf[2 * k] = m < N ? buf[2 * m] : 0;
                    buf[2 * k + 1] = m < N ? -buf[2 * m + 1] : 0;
                }
                n_in = L;
            }
            dft1(buf, n_in, L, nk, inverse, res);
            for (int64_t k = 0; k < nk; k++) {
                int64_t e = ((o * nk + k) * inner + i) * oc;
                ox_tensor_set_f64(y, e, res[2 * k]);
                if (oc == 2)
                    ox_tensor_set_f64(y, e + 1, res[2 * k + 1]);
            }
        }
    free(buf);
    free(res);
    return OX_OK;
}

ox_status ox_misc_stft(ox_kernel_ctx *c)
{
    const ox_tensor *x = ox_kernel_in(c, 0), *w = ox_kernel_in(c, 2);
    int64_t step, fl = -1;
    if (!x || !ox_dtype_is_float(x->dtype) || x->rank != 3 ||
        (x->dims[2] != 1 && x->dims[2] != 2))
        return ox_errorf(c->err, OX_EINVAL, "signal must be [batch, length, 1|2]");
    if (!ox_rv_scalar_i64(ox_kernel_in(c, 1), &step) || step <= 0)
        return ox_errorf(c->err, OX_EINVAL, "frame_step must be a positive scalar");
    const ox_tensor *flt = ox_kernel_in(c, 3);
    if (flt && !ox_rv_scalar_i64(flt, &fl))
        return ox_errorf(c->err, OX_EINVAL, "frame_length must be a scalar");
    if (fl < 0 && w)
        fl = w->numel;
    if (fl <= 0 || fl > x->dims[1] || (w && w->numel != fl))
        return ox_errorf(c->err, OX_EINVAL, "bad frame_length or window");
    bool onesided = ox_node_attr_i(c->node, "onesided", 1) != 0;
    int64_t B = x->dims[0], len = x->dims[1], cd = x->dims[2];
    int64_t frames = (len - fl) / step + 1, nk = onesided ? fl / 2 + 1 : fl;
    int64_t dims[4] = {B, frames, nk, 2};
    ox_tensor *y = ox_kernel_output(c, 0, x->dtype, 4, dims);
    if (!y)
        return c->err->status;
    double *buf = malloc((size_t)fl * 2 * sizeof *buf), *res = malloc((size_t)nk * 2 * sizeof *res);
    if (!buf || !res) {
        free(buf);
        free(res);
        return ox_errorf(c->err, OX_ENOMEM, "out of memory");
    }
    for (int64_t b = 0; b < B; b++)
        for (int64_t f = 0; f < frames; f++) {
            for (int64_t n = 0; n < fl; n++) {
                int64_t e = (b * len + f * step + n) * cd;
                double wv = w ? ox_misc_getf(w, n) : 1.0;
                buf[2 * n] = ox_misc_getf(x, e) * wv;
                buf[2 * n + 1] = cd == 2 ? ox_misc_getf(x, e + 1) * wv : 0.0;
            }
            dft1(buf, fl, fl, nk, false, res);
            for (int64_t k = 0; k < nk; k++) {
                int64_t e = ((b * frames + f) * nk + k) * 2;
                ox_tensor_set_f64(y, e, res[2 * k]);
                ox_tensor_set_f64(y, e + 1, res[2 * k + 1]);
            }
        }
    free(buf);
    free(res);
    return OX_OK;
}

ox_status ox_misc_mel_weight_matrix(ox_kernel_ctx *c)
{
    int64_t bins, dft_len, rate;
    if (!ox_rv_scalar_i64(ox_kernel_in(c, 0), &bins) ||
        !ox_rv_scalar_i64(ox_kernel_in(c, 1), &dft_len) ||
        !ox_rv_scalar_i64(ox_kernel_in(c, 2), &rate) || !ox_kernel_in(c, 3) ||
        !ox_kernel_in(c, 4) || bins <= 0 || dft_len <= 0 || rate <= 0 || bins > (1 << 16) ||
        dft_len > (1 << 24))
        return ox_errorf(c->err, OX_EINVAL, "bad MelWeightMatrix inputs");
    double lo = ox_misc_getf(ox_kernel_in(c, 3), 0), hi = ox_misc_getf(ox_kernel_in(c, 4), 0);
    int64_t dt = ox_node_attr_i(c->node, "output_datatype", OX_DT_FLOAT);
    if (!ox_dtype_valid((int)dt) || dt == OX_DT_STRING || dt == OX_DT_UNDEFINED)
        return ox_errorf(c->err, OX_EINVAL, "bad output_datatype");
    int64_t nspec = dft_len / 2 + 1;
    int64_t dims[2] = {nspec, bins};
    ox_tensor *y = ox_kernel_output(c, 0, (ox_dtype)dt, 2, dims);
    int64_t *fb = malloc((size_t)(bins + 2) * sizeof *fb);
    if (!y || !fb) {
        free(fb);
        return y ? ox_errorf(c->err, OX_ENOMEM, "out of memory") : c->err->status;
    }
    double lm = 2595.0 * log10(1 + lo / 700.0), hm = 2595.0 * log10(1 + hi / 700.0);
    double mstep = (hm - lm) / (double)(bins + 2);  /* as the reference does */
    for (int64_t i = 0; i < bins + 2; i++) {
        double f = 700.0 * (pow(10.0, ((double)i * mstep + lm) / 2595.0) - 1.0);
        fb[i] = (int64_t)floor((double)(dft_len + 1) * f / (double)rate);
    }
    for (int64_t i = 0; i < bins; i++) {
        int64_t l = fb[i], ce = fb[i + 1], h = fb[i + 2];
        if (ce - l == 0) {
            if (ce >= 0 && ce < nspec)
                ox_tensor_set_f64(y, ce * bins + i, 1.0);
        } else {
            for (int64_t j = l; j <= ce; j++)
                if (j >= 0 && j < nspec)
                    ox_tensor_set_f64(y, j * bins + i, (double)(j - l) / (double)(ce - l));
        }
        if (h - ce > 0)
            for (int64_t j = ce; j < h; j++)
                if (j >= 0 && j < nspec)
                    ox_tensor_set_f64(y, j * bins + i, (double)(h - j) / (double)(h - ce));
    }
    free(fb);
    return OX_OK;
}
