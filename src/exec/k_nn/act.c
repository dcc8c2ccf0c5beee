/* Dropout and the com.microsoft GELU family (Gelu, FastGelu, BiasGelu,
 * QuickGelu) that the fusion passes emit; the ONNX Gelu lives with the
 * elementwise kernels. */
#include "nn_common.h"
#include "gelu_rows.h"

/* Dropout: identity at inference (mask of ones). In training mode with a
 * non-zero ratio the mask comes from a seeded xorshift generator, so results
 * are reproducible for a given seed but do not match other runtimes. */
NN_KERNEL(dropout)
{
    const ox_tensor *x = ox_kernel_in(c, 0);
    if (!x) return NN_FAIL(c, "missing data");
    float ratio = nn_attr_f(c, "ratio", 0.5f);
    bool training = false;
    if (c->opset >= 12) {
        const ox_tensor *r = ox_kernel_in(c, 1), *tm = ox_kernel_in(c, 2);
        ratio = r && r->numel ? (float)ox_tensor_get_f64(r, 0) : 0.5f;
        training = tm && tm->numel && nn_get_i(tm, 0) != 0;
    }
    if (training && (ratio < 0 || ratio >= 1)) return NN_FAIL(c, "ratio must be in [0, 1)");
    bool want_mask = c->n_out > 1 && (!c->node || (c->node->n_outputs > 1 && c->node->outputs[1]));
    bool random = training && ratio > 0;
    ox_tensor *mask = NULL;
    if (want_mask) {
        mask = nn_out(c, 1, c->opset >= 10 ? OX_DT_BOOL : x->dtype, x->rank, x->dims);
        if (!mask) return NN_ST(c);
    }
    if (!random) {
        ox_tensor *y = ox_tensor_share(x);
        if (!y) return NN_NOMEM(c);
        ox_kernel_set_output(c, 0, y);
        for (int64_t i = 0; mask && i < mask->numel; i++) {
            if (mask->dtype == OX_DT_BOOL) ((uint8_t *)ox_tensor_data(mask))[i] = 1;
            else ox_tensor_set_f64(mask, i, 1.0);
        }
        return OX_OK;
    }
    if (!nn_is_float_dt(x->dtype)) return NN_FAIL(c, "needs a float input");
    uint64_t s = (uint64_t)nn_attr_i(c, "seed", 0x9E3779B97F4A7C15LL);
    if (!s) s = 0x9E3779B97F4A7C15ULL;
    float *t0 = NULL;
    const float *X = nn_load_f32(c, x, &t0);
    if (!X) return NN_ST(c);
    nn_fout o;
    ox_status st = nn_fout_new(c, 0, x->dtype, x->rank, x->dims, &o);
    if (st) { free(t0); return st; }
    float keep = 1.0f / (1.0f - ratio);
    for (int64_t i = 0; i < x->numel; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        bool k = (double)(s >> 11) / 9007199254740992.0 >= ratio;
        o.f[i] = k ? X[i] * keep : 0.0f;
        if (mask) {
            if (mask->dtype == OX_DT_BOOL) ((uint8_t *)ox_tensor_data(mask))[i] = k;
            else ox_tensor_set_f64(mask, i, k);
        }
    }
    nn_fout_done(&o);
    free(t0);
    return OX_OK;
}

enum { G_ERF = OX__GELU_ERF, G_TANH = OX__GELU_TANH, G_QUICK = OX__GELU_QUICK };

/* y = gelu(x + bias) with bias broadcast over the last axis. */
static ox_status gelu_run(ox_kernel_ctx *c, int kind, const ox_tensor *bias, float alpha)
{
    const ox_tensor *x = ox_kernel_in(c, 0);
    if (!x) return NN_FAIL(c, "missing X");
    if (!nn_is_float_dt(x->dtype)) return NN_FAIL(c, "needs a float input");
    float *t0 = NULL, *t1 = NULL;
    const float *X = nn_load_f32(c, x, &t0);
    const float *B = (X && bias) ? nn_load_f32(c, bias, &t1) : NULL;
    if (!X || (bias && !B)) { free(t0); return NN_ST(c); }
    int64_t bn = bias ? bias->numel : 0;
    if (bias && (x->rank < 1 || bn != x->dims[x->rank - 1])) {
        free(t0); free(t1);
        return NN_FAIL(c, "bias must match the last dimension");
    }
    nn_fout o;
    ox_status st = nn_fout_new(c, 0, x->dtype, x->rank, x->dims, &o);
    if (st) { free(t0); free(t1); return st; }
    ox__gelu_rows(c->pool, X, o.f, x->numel, B, bn, kind, alpha);
    nn_fout_done(&o);
    free(t0); free(t1);
    return OX_OK;
}

NN_KERNEL(ms_gelu) { return gelu_run(c, G_ERF, NULL, 0); }
NN_KERNEL(bias_gelu) { return gelu_run(c, G_ERF, ox_kernel_in(c, 1), 0); }
NN_KERNEL(fast_gelu) { return gelu_run(c, G_TANH, ox_kernel_in(c, 1), 0); }
NN_KERNEL(quick_gelu) { return gelu_run(c, G_QUICK, NULL, nn_attr_f(c, "alpha", 1.702f)); }
