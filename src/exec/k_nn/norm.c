/* Normalization kernels: BatchNormalization, InstanceNormalization,
 * LayerNormalization (ONNX and com.microsoft), GroupNormalization (opset 18
 * per-group and 21 per-channel affine), RMSNormalization and its contrib
 * twin, SkipLayerNormalization, LpNormalization, MeanVarianceNormalization
 * and LRN. Statistics are accumulated in double for stability. */
#include "nn_common.h"
#include "norm_rows.h"

/* Loads an optional per-something parameter, checking its element count. */
static const float *load_param(ox_kernel_ctx *c, const ox_tensor *t, int64_t want,
                               float **tmp, const char *what)
{
    *tmp = NULL;
    if (!t) return NULL;
    if (t->numel != want) {
        NN_FAIL(c, "%s has %lld elements, want %lld", what, (long long)t->numel, (long long)want);
        return NULL;
    }
    return nn_load_f32(c, t, tmp);
}

NN_KERNEL(batch_norm)
{
    const ox_tensor *x = ox_kernel_in(c, 0);
    if (!x || x->rank < 1) return NN_FAIL(c, "missing X");
    if (!nn_is_float_dt(x->dtype)) return NN_FAIL(c, "needs a float input");
    int64_t N = x->dims[0], C = x->rank > 1 ? x->dims[1] : 1;
    int64_t sp = x->rank > 2 ? nn_prod(x->dims + 2, x->rank - 2) : 1;
    float eps = nn_attr_f(c, "epsilon", 1e-5f), mom = nn_attr_f(c, "momentum", 0.9f);
    bool training = c->opset >= 14 && nn_attr_i(c, "training_mode", 0) != 0;
    float *t[5] = {0};
    const float *P[5];
    const char *names[5] = {"X", "scale", "B", "mean", "var"};
    ox_status st = OX_OK;
    float *X = NULL;
    X = (float *)nn_load_f32(c, x, &t[0]);
    P[0] = X;
    if (!X) return NN_ST(c);
    for (int i = 1; i < 5; i++) {
        P[i] = load_param(c, ox_kernel_in(c, i), C, &t[i], names[i]);
        if (!P[i]) { st = NN_ST(c); goto done; }
    }
    double *bm = calloc((size_t)C * 2 + 1, sizeof(double));
    if (!bm) { st = NN_NOMEM(c); goto done; }
    double *bv = bm + C;
    for (int64_t ch = 0; ch < C; ch++) {
        if (training) {
            double s = 0, s2 = 0, cnt = (double)(N * sp);
            for (int64_t n = 0; n < N; n++)
                for (int64_t p = 0; p < sp; p++) s += X[(n * C + ch) * sp + p];
            double m = cnt ? s / cnt : 0;
            for (int64_t n = 0; n < N; n++)
                for (int64_t p = 0; p < sp; p++) {
                    double d = X[(n * C + ch) * sp + p] - m;
                    s2 += d * d;
                }
            bm[ch] = m;
            bv[ch] = cnt ? s2 / cnt : 0;
        } else {
            bm[ch] = P[3][ch];
            bv[ch] = P[4][ch];
        }
    }
    nn_fout o;
    st = nn_fout_new(c, 0, x->dtype, x->rank, x->dims, &o);
    if (st) { free(bm); goto done; }
    for (int64_t n = 0; n < N; n++)
        for (int64_t ch = 0; ch < C; ch++) {
            float a = (float)(P[1][ch] / sqrt(bv[ch] + eps));
            float b = (float)(P[2][ch] - bm[ch] * a);
            const float *xs = X + (n * C + ch) * sp;
            float *ys = o.f + (n * C + ch) * sp;
            for (int64_t p = 0; p < sp; p++) ys[p] = xs[p] * a + b;
        }
    nn_fout_done(&o);
    if (training) {
        int64_t cd[1] = {C};
        for (int k = 1; k <= 2 && k < c->n_out; k++) {
            if (c->node && (c->node->n_outputs <= k || !c->node->outputs[k])) continue;
            nn_fout r;
            ox_dtype dt = ox_kernel_in(c, 2 + k)->dtype;
            if ((st = nn_fout_new(c, k, dt, 1, cd, &r))) break;
            for (int64_t ch = 0; ch < C; ch++)
                r.f[ch] = (float)(P[2 + k][ch] * mom + (k == 1 ? bm[ch] : bv[ch]) * (1 - mom));
            nn_fout_done(&r);
        }
    }
    free(bm);
done:
    for (int i = 0; i < 5; i++) free(t[i]);
    return st;
}

NN_KERNEL(instance_norm)
{
    const ox_tensor *x = ox_kernel_in(c, 0);
    if (!x || x->rank < 2) return NN_FAIL(c, "X must have rank >= 2");
    if (!nn_is_float_dt(x->dtype)) return NN_FAIL(c, "needs a float input");
    int64_t N = x->dims[0], C = x->dims[1], sp = nn_prod(x->dims + 2, x->rank - 2);
    float eps = nn_attr_f(c, "epsilon", 1e-5f);
    float *t0 = NULL, *t1 = NULL, *t2 = NULL;
    ox_status st = OX_OK;
    const float *X = nn_load_f32(c, x, &t0);
    const float *S = X ? load_param(c, ox_kernel_in(c, 1), C, &t1, "scale") : NULL;
    const float *B = S ? load_param(c, ox_kernel_in(c, 2), C, &t2, "B") : NULL;
    nn_fout o;
    if (!B) { st = NN_ST(c); goto done; }
    if ((st = nn_fout_new(c, 0, x->dtype, x->rank, x->dims, &o))) goto done;
    for (int64_t n = 0; n < N; n++)
        for (int64_t ch = 0; ch < C; ch++) {
            const float *xs = X + (n * C + ch) * sp;
            float *ys = o.f + (n * C + ch) * sp;
            double s = 0, s2 = 0;
            for (int64_t p = 0; p < sp; p++) s += xs[p];
            double m = sp ? s / (double)sp : 0;
            for (int64_t p = 0; p < sp; p++) s2 += (xs[p] - m) * (xs[p] - m);
            double inv = 1.0 / sqrt((sp ? s2 / (double)sp : 0) + eps);
            for (int64_t p = 0; p < sp; p++) ys[p] = (float)((xs[p] - m) * inv * S[ch] + B[ch]);
        }
    nn_fout_done(&o);
done:
    free(t0); free(t1); free(t2);
    return st;
}

/* True when p's elements are laid out exactly as x's dims from axis on (its
 * dims are x's trailing dims, with leading 1s at most): usable as is. */
static bool ln_param_exact(const ox_tensor *p, const ox_tensor *x, int axis)
{
    int nr = x->rank - axis;
    if (p->rank > x->rank)
        return false;
    for (int i = 0; i < p->rank; i++) {
        int64_t pd = p->dims[p->rank - 1 - i];
        if (i < nr ? pd != x->dims[x->rank - 1 - i] : pd != 1)
            return false;
    }
    return p->numel == nn_prod(x->dims + axis, nr);
}

/* Shared by LayerNormalization, RMSNormalization and the contrib forms:
 * normalizes each row of `inner` elements; scale/bias broadcast over the
 * normalized shape; optional extra outputs mean (idx mean_out) and
 * inverse std (idx inv_out) shaped [outer dims, 1...]. */
static ox_status layer_norm_core(ox_kernel_ctx *c, const ox_tensor *x, const float *X,
                                 int axis, bool rms, const ox_tensor *sc, const ox_tensor *bi,
                                 float eps, int mean_out, int inv_out)
{
    int64_t outer = nn_prod(x->dims, axis), inner = nn_prod(x->dims + axis, x->rank - axis);
    float *t1 = NULL, *t2 = NULL, *S = NULL, *B = NULL;
    ox_status st = OX_OK;
    const float *s = sc ? nn_load_f32(c, sc, &t1) : NULL;
    const float *b = bi ? nn_load_f32(c, bi, &t2) : NULL;
    if ((sc && !s) || (bi && !b)) { st = NN_ST(c); goto done; }
    /* Expand parameters to the normalized shape, unless they already have
     * it (the usual case: no allocation then). */
    if (s && !ln_param_exact(sc, x, axis) &&
        !(S = nn_expand(c, sc, s, x->rank - axis, x->dims + axis))) { st = NN_ST(c); goto done; }
    if (b && !ln_param_exact(bi, x, axis) &&
        !(B = nn_expand(c, bi, b, x->rank - axis, x->dims + axis))) { st = NN_ST(c); goto done; }
    nn_fout o, om = {0}, oi = {0};
    if ((st = nn_fout_new(c, 0, x->dtype, x->rank, x->dims, &o))) goto done;
    int64_t sd[OX_MAX_RANK];
    for (int i = 0; i < x->rank; i++) sd[i] = i < axis ? x->dims[i] : 1;
    bool want_m = mean_out >= 0 && mean_out < c->n_out &&
                  (!c->node || (c->node->n_outputs > mean_out && c->node->outputs[mean_out]));
    bool want_i = inv_out >= 0 && inv_out < c->n_out &&
                  (!c->node || (c->node->n_outputs > inv_out && c->node->outputs[inv_out]));
    ox_dtype sdt = OX_DT_FLOAT;
    if (c->node && nn_attr_i(c, "stash_type", 1) != 1) sdt = x->dtype;
    if (want_m && (st = nn_fout_new(c, mean_out, sdt, x->rank, sd, &om))) { nn_fout_drop(&o); goto done; }
    if (want_i && (st = nn_fout_new(c, inv_out, sdt, x->rank, sd, &oi))) {
        nn_fout_drop(&o);
        nn_fout_drop(&om);
        goto done;
    }
    ox__ln_rows_args la = {.X = X, .Y = o.f, .rows = outer, .inner = inner,
                           .S = S ? S : s, .B = B ? B : b, .rms = rms, .eps = eps,
                           .mean = want_m ? om.f : NULL, .inv = want_i ? oi.f : NULL};
    ox__ln_rows(c->pool, &la);
    nn_fout_done(&o);
    if (want_m) nn_fout_done(&om);
    if (want_i) nn_fout_done(&oi);
done:
    free(t1); free(t2); free(S); free(B);
    return st;
}

static ox_status layer_norm_op(ox_kernel_ctx *c, bool rms)
{
    const ox_tensor *x = ox_kernel_in(c, 0);
    if (!x || x->rank < 1) return NN_FAIL(c, "missing X");
    if (!nn_is_float_dt(x->dtype)) return NN_FAIL(c, "needs a float input");
    int axis;
    if (!nn_axis(nn_attr_i(c, "axis", -1), x->rank, &axis)) return NN_FAIL(c, "axis out of range");
    float *t0 = NULL;
    const float *X = nn_load_f32(c, x, &t0);
    if (!X) return NN_ST(c);
    ox_status st = layer_norm_core(c, x, X, axis, rms, ox_kernel_in(c, 1),
                                   rms ? NULL : ox_kernel_in(c, 2), nn_attr_f(c, "epsilon", 1e-5f),
                                   rms ? -1 : 1, rms ? 1 : 2);
    free(t0);
    return st;
}

NN_KERNEL(layer_norm) { return layer_norm_op(c, false); }
NN_KERNEL(rms_norm) { return layer_norm_op(c, true); }

/* com.microsoft SkipLayerNormalization: LN(input + skip + bias) over the last
 * axis; outputs output, mean, inv_std_var, input_skip_bias_sum. */
static ox_status skip_norm(ox_kernel_ctx *c, bool rms)
{
    const ox_tensor *x = ox_kernel_in(c, 0), *sk = ox_kernel_in(c, 1);
    const ox_tensor *gamma = ox_kernel_in(c, 2), *beta = rms ? NULL : ox_kernel_in(c, 3);
    const ox_tensor *bias = ox_kernel_in(c, rms ? 3 : 4);
    if (!x || !sk || !gamma || x->rank < 1) return NN_FAIL(c, "needs input, skip and gamma");
    if (!nn_is_float_dt(x->dtype)) return NN_FAIL(c, "needs a float input");
    float *t0 = NULL, *t1 = NULL, *t2 = NULL, *sum = NULL, *SK = NULL;
    ox_status st = OX_OK;
    const float *X = nn_load_f32(c, x, &t0);
    const float *S = X ? nn_load_f32(c, sk, &t1) : NULL;
    const float *Bi = (S && bias) ? nn_load_f32(c, bias, &t2) : NULL;
    if (!S || (bias && !Bi)) { st = NN_ST(c); goto done; }
    /* skip usually has input's shape: read it as is (no expanded copy). */
    bool sk_same = sk->rank == x->rank && sk->numel == x->numel;
    for (int i = 0; sk_same && i < x->rank; i++) sk_same = sk->dims[i] == x->dims[i];
    if (!sk_same && !(SK = nn_expand(c, sk, S, x->rank, x->dims))) { st = NN_ST(c); goto done; }
    const float *SKv = sk_same ? S : SK;
    sum = malloc((size_t)(x->numel + 1) * sizeof(float));
    if (!sum) { st = NN_NOMEM(c); goto done; }
    int64_t H = x->dims[x->rank - 1];
    if (bias && bias->numel != H) { st = NN_FAIL(c, "bias size mismatch"); goto done; }
    /* Row by row: no modulo per element, and the row loops vectorize. */
    for (int64_t r = 0; H > 0 && r < x->numel / H; r++) {
        const float *xr = X + r * H, *sr = SKv + r * H;
        float *o = sum + r * H;
        if (Bi)
            for (int64_t j = 0; j < H; j++) o[j] = xr[j] + sr[j] + Bi[j];
        else
            for (int64_t j = 0; j < H; j++) o[j] = xr[j] + sr[j];
    }
    /* Outputs: output, mean, inv_std_var, input_skip_bias_sum (the
     * simplified form leaves mean unused). */
    st = layer_norm_core(c, x, sum, x->rank - 1, rms, gamma, beta, nn_attr_f(c, "epsilon", 1e-12f),
                         rms ? -1 : 1, 2);
    if (!st && c->n_out > 3 && (!c->node || (c->node->n_outputs > 3 && c->node->outputs[3]))) {
        nn_fout o;
        if (!(st = nn_fout_new(c, 3, x->dtype, x->rank, x->dims, &o))) {
            memcpy(o.f, sum, (size_t)x->numel * sizeof(float));
            nn_fout_done(&o);
        }
    }
done:
    free(t0); free(t1); free(t2); free(sum); free(SK);
    return st;
}

NN_KERNEL(skip_layer_norm) { return skip_norm(c, false); }
NN_KERNEL(skip_simplified_layer_norm) { return skip_norm(c, true); }

/* com.microsoft EmbedLayerNormalization: per token, word[id] + position[pos]
 * (+ segment[seg]) then LayerNorm over the hidden axis; pos is position_ids
 * when given (a [1, S] row broadcasts), else 0..S-1. mask_index is the
 * count of ones per mask row (0 without a mask); embedding_sum the sum. */
NN_KERNEL(embed_layer_norm)
{
    const ox_tensor *ids = ox_kernel_in(c, 0), *seg = ox_kernel_in(c, 1);
    const ox_tensor *W = ox_kernel_in(c, 2), *P = ox_kernel_in(c, 3), *T = ox_kernel_in(c, 4);
    const ox_tensor *gamma = ox_kernel_in(c, 5), *beta = ox_kernel_in(c, 6);
    const ox_tensor *mask = ox_kernel_in(c, 7), *pid = ox_kernel_in(c, 8);
    if (!ids || !W || !P || !gamma || !beta || ids->rank != 2 || W->rank != 2 || P->rank != 2)
        return NN_FAIL(c, "needs 2-D input_ids, word and position embeddings, gamma, beta");
    if (!nn_is_float_dt(W->dtype)) return NN_FAIL(c, "needs float embeddings");
    int64_t B = ids->dims[0], S = ids->dims[1], H = W->dims[1];
    if (P->dims[1] != H || (T && (T->rank != 2 || T->dims[1] != H)) || (seg && !T) ||
        (seg && seg->numel != ids->numel) || (mask && mask->numel != ids->numel))
        return NN_FAIL(c, "embedding widths or input shapes do not match");
    if (pid && pid->numel != ids->numel && pid->numel != S)
        return NN_FAIL(c, "position_ids must be [B, S] or [1, S]");
    float *tw = NULL, *tp = NULL, *tt = NULL, *sum = NULL;
    ox_status st = OX_OK;
    const float *Wf = nn_load_f32(c, W, &tw);
    const float *Pf = Wf ? nn_load_f32(c, P, &tp) : NULL;
    const float *Tf = (Pf && T) ? nn_load_f32(c, T, &tt) : NULL;
    if (!Pf || (T && !Tf)) { st = NN_ST(c); goto done; }
    if (!(sum = malloc((size_t)(B * S * H + 1) * sizeof *sum))) { st = NN_NOMEM(c); goto done; }
    for (int64_t b = 0; b < B; b++)
        for (int64_t s = 0; s < S; s++) {
            int64_t k = b * S + s;
            int64_t w = nn_get_i(ids, k);
            int64_t p = pid ? nn_get_i(pid, pid->numel == S ? s : k) : s;
            int64_t g = seg ? nn_get_i(seg, k) : 0;
            if (w < 0 || w >= W->dims[0] || p < 0 || p >= P->dims[0] ||
                (seg && (g < 0 || g >= T->dims[0]))) {
                st = NN_FAIL(c, "index out of range at token %lld", (long long)k);
                goto done;
            }
            float *o = sum + k * H;
            for (int64_t j = 0; j < H; j++)
                o[j] = Wf[w * H + j] + Pf[p * H + j] + (seg ? Tf[g * H + j] : 0.0f);
        }
    int64_t yd[3] = {B, S, H};
    ox_tensor xs = {.dtype = W->dtype, .rank = 3, .dims = {B, S, H}, .numel = B * S * H};
    st = layer_norm_core(c, &xs, sum, 2, false, gamma, beta, nn_attr_f(c, "epsilon", 1e-12f), -1,
                         -1);
    if (!st && c->n_out > 1 && (!c->node || (c->node->n_outputs > 1 && c->node->outputs[1]))) {
        ox_tensor *mi = nn_out(c, 1, OX_DT_INT32, 1, &B);
        if (!mi) { st = NN_ST(c); goto done; }
        for (int64_t b = 0; b < B; b++) {
            int64_t n = 0;
            for (int64_t s = 0; mask && s < S; s++)
                n += nn_get_i(mask, b * S + s) != 0;
            nn_set_i(mi, b, n);
        }
    }
    if (!st && c->n_out > 2 && (!c->node || (c->node->n_outputs > 2 && c->node->outputs[2]))) {
        nn_fout o;
        if (!(st = nn_fout_new(c, 2, W->dtype, 3, yd, &o))) {
            memcpy(o.f, sum, (size_t)(B * S * H) * sizeof(float));
            nn_fout_done(&o);
        }
    }
done:
    free(tw); free(tp); free(tt); free(sum);
    return st;
}

NN_KERNEL(group_norm)
{
    const ox_tensor *x = ox_kernel_in(c, 0), *sc = ox_kernel_in(c, 1), *bi = ox_kernel_in(c, 2);
    if (!x || !sc || !bi || x->rank < 2) return NN_FAIL(c, "needs X (rank >= 2), scale and bias");
    if (!nn_is_float_dt(x->dtype)) return NN_FAIL(c, "needs a float input");
    int64_t G = nn_attr_i(c, "num_groups", -1);
    int64_t N = x->dims[0], C = x->dims[1], sp = nn_prod(x->dims + 2, x->rank - 2);
    if (G < 1 || C % G) return NN_FAIL(c, "num_groups %lld does not divide %lld channels", (long long)G, (long long)C);
    /* Opset 18 has per-group scale/bias, opset 21 per-channel. */
    bool per_channel = sc->numel == C && (c->opset >= 21 || sc->numel != G);
    if (sc->numel != (per_channel ? C : G) || bi->numel != sc->numel)
        return NN_FAIL(c, "scale/bias sizes do not match");
    float eps = nn_attr_f(c, "epsilon", 1e-5f);
    float *t0 = NULL, *t1 = NULL, *t2 = NULL;
    ox_status st = OX_OK;
    const float *X = nn_load_f32(c, x, &t0);
    const float *S = X ? nn_load_f32(c, sc, &t1) : NULL;
    const float *B = S ? nn_load_f32(c, bi, &t2) : NULL;
    nn_fout o;
    if (!B) { st = NN_ST(c); goto done; }
    if ((st = nn_fout_new(c, 0, x->dtype, x->rank, x->dims, &o))) goto done;
    int64_t cg = C / G, gsz = cg * sp;
    for (int64_t n = 0; n < N; n++)
        for (int64_t g = 0; g < G; g++) {
            const float *xs = X + (n * C + g * cg) * sp;
            float *ys = o.f + (n * C + g * cg) * sp;
            double m = 0, v = 0;
            for (int64_t i = 0; i < gsz; i++) m += xs[i];
            m = gsz ? m / (double)gsz : 0;
            for (int64_t i = 0; i < gsz; i++) v += (xs[i] - m) * (xs[i] - m);
            double inv = 1.0 / sqrt((gsz ? v / (double)gsz : 0) + eps);
            for (int64_t i = 0; i < gsz; i++) {
                int64_t ch = g * cg + i / (sp ? sp : 1);
                float a = per_channel ? S[ch] : S[g], b = per_channel ? B[ch] : B[g];
                ys[i] = (float)((xs[i] - m) * inv * a + b);
            }
        }
    nn_fout_done(&o);
done:
    free(t0); free(t1); free(t2);
    return st;
}

NN_KERNEL(lp_norm)
{
    const ox_tensor *x = ox_kernel_in(c, 0);
    if (!x || x->rank < 1) return NN_FAIL(c, "missing X");
    if (!nn_is_float_dt(x->dtype)) return NN_FAIL(c, "needs a float input");
    int axis;
    if (!nn_axis(nn_attr_i(c, "axis", -1), x->rank, &axis)) return NN_FAIL(c, "axis out of range");
    int64_t p = nn_attr_i(c, "p", 2);
    if (p != 1 && p != 2) return NN_FAIL(c, "p must be 1 or 2");
    int64_t outer = nn_prod(x->dims, axis), len = x->dims[axis];
    int64_t inner = nn_prod(x->dims + axis + 1, x->rank - axis - 1);
    float *t0 = NULL;
    const float *X = nn_load_f32(c, x, &t0);
    if (!X) return NN_ST(c);
    nn_fout o;
    ox_status st = nn_fout_new(c, 0, x->dtype, x->rank, x->dims, &o);
    if (st) { free(t0); return st; }
    for (int64_t a = 0; a < outer; a++)
        for (int64_t b = 0; b < inner; b++) {
            const float *xs = X + a * len * inner + b;
            float *ys = o.f + a * len * inner + b;
            double nrm = 0;
            for (int64_t k = 0; k < len; k++)
                nrm += p == 1 ? fabs(xs[k * inner]) : (double)xs[k * inner] * xs[k * inner];
            if (p == 2) nrm = sqrt(nrm);
            for (int64_t k = 0; k < len; k++)
                ys[k * inner] = nrm == 0 ? 0.0f : (float)(xs[k * inner] / nrm);
        }
    nn_fout_done(&o);
    free(t0);
    return OX_OK;
}

NN_KERNEL(mvn)
{
    const ox_tensor *x = ox_kernel_in(c, 0);
    if (!x || x->rank < 1) return NN_FAIL(c, "missing X");
    if (!nn_is_float_dt(x->dtype)) return NN_FAIL(c, "needs a float input");
    int64_t ax[OX_MAX_RANK];
    int na = nn_attr_ints(c, "axes", ax, OX_MAX_RANK);
    bool red[OX_MAX_RANK] = {0};
    if (na < 0) {
        if (x->rank != 4) return NN_FAIL(c, "default axes need a 4-D input");
        red[0] = red[2] = red[3] = true;
    } else {
        for (int i = 0; i < na; i++) {
            int a;
            if (!nn_axis(ax[i], x->rank, &a)) return NN_FAIL(c, "axis out of range");
            red[a] = true;
        }
    }
    /* Map each element to its statistics slot (row-major over kept dims). */
    int64_t kstride[OX_MAX_RANK], nslots = 1, cnt = 1;
    for (int i = x->rank - 1; i >= 0; i--) {
        kstride[i] = red[i] ? 0 : nslots;
        if (!red[i]) nslots *= x->dims[i];
        else cnt *= x->dims[i];
    }
    float *t0 = NULL;
    const float *X = nn_load_f32(c, x, &t0);
    if (!X) return NN_ST(c);
    double *acc = calloc((size_t)nslots * 2 + 1, sizeof(double));
    int64_t *slot = malloc((size_t)(x->numel + 1) * sizeof(int64_t));
    nn_fout o;
    ox_status st = (!acc || !slot) ? NN_NOMEM(c) : nn_fout_new(c, 0, x->dtype, x->rank, x->dims, &o);
    if (st) { free(acc); free(slot); free(t0); return st; }
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t r = i, s = 0;
        for (int k = x->rank - 1; k >= 0; k--) {
            s += (r % x->dims[k]) * kstride[k];
            r /= x->dims[k];
        }
        slot[i] = s;
        acc[s] += X[i];
        acc[nslots + s] += (double)X[i] * X[i];
    }
    for (int64_t s = 0; s < nslots; s++) {
        double m = acc[s] / (double)cnt, m2 = acc[nslots + s] / (double)cnt;
        acc[s] = m;
        acc[nslots + s] = sqrt(fmax(m2 - m * m, 0.0)) + 1e-9;
    }
    for (int64_t i = 0; i < x->numel; i++)
        o.f[i] = (float)((X[i] - acc[slot[i]]) / acc[nslots + slot[i]]);
    nn_fout_done(&o);
    free(acc); free(slot); free(t0);
    return OX_OK;
}

NN_KERNEL(lrn)
{
    const ox_tensor *x = ox_kernel_in(c, 0);
    if (!x || x->rank < 2) return NN_FAIL(c, "X must have rank >= 2");
    if (!nn_is_float_dt(x->dtype)) return NN_FAIL(c, "needs a float input");
    int64_t size = nn_attr_i(c, "size", 0);
    if (size < 1) return NN_FAIL(c, "size must be positive");
    float alpha = nn_attr_f(c, "alpha", 1e-4f), beta = nn_attr_f(c, "beta", 0.75f);
    float bias = nn_attr_f(c, "bias", 1.0f);
    int64_t N = x->dims[0], C = x->dims[1], sp = nn_prod(x->dims + 2, x->rank - 2);
    int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
    float *t0 = NULL;
    const float *X = nn_load_f32(c, x, &t0);
    if (!X) return NN_ST(c);
    nn_fout o;
    ox_status st = nn_fout_new(c, 0, x->dtype, x->rank, x->dims, &o);
    if (st) { free(t0); return st; }
    for (int64_t n = 0; n < N; n++)
        for (int64_t ch = 0; ch < C; ch++)
            for (int64_t p = 0; p < sp; p++) {
                double s = 0;
                for (int64_t k = ch - lo; k <= ch + hi; k++) {
                    if (k < 0 || k >= C) continue;
                    double v = X[(n * C + k) * sp + p];
                    s += v * v;
                }
                int64_t i = (n * C + ch) * sp + p;
                o.f[i] = (float)(X[i] / pow(bias + alpha / (double)size * s, beta));
            }
    nn_fout_done(&o);
    free(t0);
    return OX_OK;
}
