/* Recurrent layers: RNN, GRU (both linear_before_reset forms) and LSTM
 * (peepholes, input_forget, clip), forward/reverse/bidirectional, variable
 * sequence_lens and both layouts. The input projection of every step is one
 * GEMM up front; each step then does one GEMM with the recurrence weights. */
#include <stdio.h>
#include <strings.h>

#include "nn_common.h"

enum { K_RNN, K_GRU, K_LSTM };

typedef struct rnn_cfg {
    int kind, gates, dirs;
    int64_t S, Bt, I, H;
    float clip;
    bool lbr, input_forget;
    nn_act act[2][3]; /* per direction: f, g, h */
} rnn_cfg;

static float clipv(const rnn_cfg *r, float v)
{
    if (r->clip > 0) v = v < -r->clip ? -r->clip : v > r->clip ? r->clip : v;
    return v;
}

static ox_status parse_acts(ox_kernel_ctx *c, rnn_cfg *r)
{
    int nper = r->kind == K_RNN ? 1 : r->kind == K_GRU ? 2 : 3;
    static const char *dflt[3][3] = {{"Tanh"}, {"Sigmoid", "Tanh"}, {"Sigmoid", "Tanh", "Tanh"}};
    const ox_attr *a = c->node ? ox_node_attr(c->node, "activations") : NULL;
    const float *al = NULL, *be = NULL;
    int nal = nn_attr_floats(c, "activation_alpha", &al);
    int nbe = nn_attr_floats(c, "activation_beta", &be);
    int idx = 0;
    for (int d = 0; d < r->dirs; d++)
        for (int k = 0; k < nper; k++, idx++) {
            const char *name = dflt[r->kind][k];
            char buf[64];
            if (a && a->type == OX_ATTR_STRINGS && a->n > 0) {
                /* A single-direction list is reused for both directions. */
                int j = idx < a->n ? idx : idx % a->n;
                snprintf(buf, sizeof buf, "%s", a->strings[j].data ? a->strings[j].data : "");
                name = buf;
            }
            bool ha = nal > idx, hb = nbe > idx;
            if (!nn_act_parse(name, ha ? al[idx] : 0, hb ? be[idx] : 0, ha, hb, &r->act[d][k]))
                return nn_fail(c, OX_EUNSUPPORTED, "activation '%s' unsupported", name);
        }
    return OX_OK;
}

static ox_status rnn_run(ox_kernel_ctx *c, int kind)
{
    rnn_cfg r;
    memset(&r, 0, sizeof r);
    r.kind = kind;
    r.gates = kind == K_RNN ? 1 : kind == K_GRU ? 3 : 4;
    const ox_tensor *x = ox_kernel_in(c, 0), *w = ox_kernel_in(c, 1), *rr = ox_kernel_in(c, 2);
    const ox_tensor *b = ox_kernel_in(c, 3), *sl = ox_kernel_in(c, 4), *h0 = ox_kernel_in(c, 5);
    const ox_tensor *c0 = kind == K_LSTM ? ox_kernel_in(c, 6) : NULL;
    const ox_tensor *pp = kind == K_LSTM ? ox_kernel_in(c, 7) : NULL;
    if (!x || !w || !rr) return NN_FAIL(c, "needs X, W and R");
    if (x->rank != 3 || w->rank != 3 || rr->rank != 3) return NN_FAIL(c, "X, W, R must be 3-D");
    if (!nn_is_float_dt(x->dtype)) return NN_FAIL(c, "needs float inputs");
    int layout = (int)nn_attr_i(c, "layout", 0);
    const char *dir = nn_attr_s(c, "direction", "forward");
    r.dirs = !strcmp(dir, "bidirectional") ? 2 : 1;
    bool reverse_only = !strcmp(dir, "reverse");
    if (!reverse_only && r.dirs == 1 && strcmp(dir, "forward")) return NN_FAIL(c, "bad direction '%s'", dir);
    r.S = layout ? x->dims[1] : x->dims[0];
    r.Bt = layout ? x->dims[0] : x->dims[1];
    r.I = x->dims[2];
    r.H = nn_attr_i(c, "hidden_size", rr->dims[2]);
    r.clip = nn_attr_f(c, "clip", 0.0f);
    r.lbr = nn_attr_i(c, "linear_before_reset", 0) != 0;
    r.input_forget = nn_attr_i(c, "input_forget", 0) != 0;
    int64_t G = r.gates, H = r.H, S = r.S, Bt = r.Bt, I = r.I, D = r.dirs;
    if (w->dims[0] != D || w->dims[1] != G * H || w->dims[2] != I || rr->dims[0] != D ||
        rr->dims[1] != G * H || rr->dims[2] != H)
        return NN_FAIL(c, "W/R shapes do not match hidden_size %lld", (long long)H);
    if (b && b->numel != D * 2 * G * H) return NN_FAIL(c, "B has a wrong size");
    if (h0 && h0->numel != D * Bt * H) return NN_FAIL(c, "initial_h has a wrong size");
    if (c0 && c0->numel != D * Bt * H) return NN_FAIL(c, "initial_c has a wrong size");
    if (pp && pp->numel != D * 3 * H) return NN_FAIL(c, "P has a wrong size");
    if (sl && sl->numel != Bt) return NN_FAIL(c, "sequence_lens has a wrong size");
    ox_status st = parse_acts(c, &r);
    if (st) return st;

    float *tmp[7] = {0};
    const float *X = nn_load_f32(c, x, &tmp[0]);
    const float *W = X ? nn_load_f32(c, w, &tmp[1]) : NULL;
    const float *R = W ? nn_load_f32(c, rr, &tmp[2]) : NULL;
    const float *Bv = (R && b) ? nn_load_f32(c, b, &tmp[3]) : NULL;
    const float *H0 = (R && h0) ? nn_load_f32(c, h0, &tmp[4]) : NULL;
    const float *C0 = (R && c0) ? nn_load_f32(c, c0, &tmp[5]) : NULL;
    const float *P = (R && pp) ? nn_load_f32(c, pp, &tmp[6]) : NULL;
    float *X0 = NULL, *XW = NULL, *HR = NULL, *Hc = NULL, *Cc = NULL, *Y0 = NULL, *Yh = NULL,
          *Yc = NULL, *RH = NULL;
    if (!R || (b && !Bv) || (h0 && !H0) || (c0 && !C0) || (pp && !P)) { st = NN_ST(c); goto done; }
    size_t f = sizeof(float);
    X0 = malloc((size_t)(S * Bt * I + 1) * f);
    XW = malloc((size_t)(S * Bt * G * H + 1) * f);
    HR = malloc((size_t)(Bt * G * H + 1) * f);
    RH = malloc((size_t)(Bt * H + 1) * f);
    Hc = malloc((size_t)(Bt * H + 1) * f);
    Cc = malloc((size_t)(Bt * H + 1) * f);
    Y0 = calloc((size_t)(S * D * Bt * H + 1), f);
    Yh = calloc((size_t)(D * Bt * H + 1), f);
    Yc = calloc((size_t)(D * Bt * H + 1), f);
    if (!X0 || !XW || !HR || !RH || !Hc || !Cc || !Y0 || !Yh || !Yc) { st = NN_NOMEM(c); goto done; }
    /* X in [S, B, I] order. */
    for (int64_t s = 0; s < S; s++)
        for (int64_t bb = 0; bb < Bt; bb++)
            memcpy(X0 + (s * Bt + bb) * I, X + (layout ? (bb * S + s) : (s * Bt + bb)) * I, (size_t)I * f);
    for (int64_t d = 0; d < D; d++) {
        bool rev = reverse_only || d == 1;
        const float *Wd = W + d * G * H * I, *Rd = R + d * G * H * H;
        const float *Wb = Bv ? Bv + d * 2 * G * H : NULL, *Rb = Bv ? Wb + G * H : NULL;
        nn_act *A = r.act[d];
        /* XW = X0 * W^T (+ Wb, and Rb except the GRU candidate gate under lbr
         * where Rb sits inside the reset product). */
        nn_sgemm_mt(c->pool, false, true, S * Bt, G * H, I, 1.0f, X0, I, Wd, I, 0.0f, XW, G * H);
        if (Wb)
            for (int64_t i = 0; i < S * Bt; i++)
                for (int64_t j = 0; j < G * H; j++) {
                    bool in_h = kind == K_GRU && j >= 2 * H;
                    XW[i * G * H + j] += Wb[j] + (in_h ? 0.0f : Rb[j]);
                }
        for (int64_t bb = 0; bb < Bt; bb++)
            for (int64_t k = 0; k < H; k++) {
                int64_t hi = layout ? (bb * D + d) * H + k : (d * Bt + bb) * H + k;
                Hc[bb * H + k] = H0 ? H0[hi] : 0.0f;
                Cc[bb * H + k] = C0 ? C0[hi] : 0.0f;
            }
        const float *Pi = P ? P + d * 3 * H : NULL, *Po = Pi ? Pi + H : NULL, *Pf = Pi ? Pi + 2 * H : NULL;
        for (int64_t step = 0; step < S; step++) {
            int64_t t = rev ? S - 1 - step : step;
            /* HR = H_prev * R^T over all gates (for GRU without lbr the
             * candidate part is recomputed below from r * H_prev). */
            nn_sgemm(false, true, Bt, G * H, H, 1.0f, Hc, H, Rd, H, 0.0f, HR, G * H);
            float *gz = NULL;
            if (kind == K_GRU && !r.lbr) {
                /* Need r first: compute r and z, then (r * H) * Rh^T. */
                for (int64_t bb = 0; bb < Bt; bb++) {
                    const float *xw = XW + (t * Bt + bb) * G * H, *hr = HR + bb * G * H;
                    for (int64_t k = 0; k < H; k++) {
                        float rg = nn_act_apply(&A[0], clipv(&r, xw[H + k] + hr[H + k]));
                        RH[bb * H + k] = rg * Hc[bb * H + k];
                    }
                }
                gz = HR; /* reuse: candidate recurrent term goes to the h slot */
                for (int64_t bb = 0; bb < Bt; bb++)
                    for (int64_t k = 0; k < H; k++) {
                        float s = 0;
                        const float *rh = RH + bb * H, *rw = Rd + (2 * H + k) * H;
                        for (int64_t j = 0; j < H; j++) s += rh[j] * rw[j];
                        gz[bb * G * H + 2 * H + k] = s;
                    }
            }
            for (int64_t bb = 0; bb < Bt; bb++) {
                int64_t len = sl ? nn_get_i(sl, bb) : S;
                if (t >= len) continue; /* padded step: state and output stay */
                const float *xw = XW + (t * Bt + bb) * G * H, *hr = HR + bb * G * H;
                float *hc = Hc + bb * H, *cc = Cc + bb * H;
                for (int64_t k = 0; k < H; k++) {
                    float hn;
                    if (kind == K_RNN) {
                        hn = nn_act_apply(&A[0], clipv(&r, xw[k] + hr[k]));
                    } else if (kind == K_GRU) {
                        float z = nn_act_apply(&A[0], clipv(&r, xw[k] + hr[k]));
                        float rg = nn_act_apply(&A[0], clipv(&r, xw[H + k] + hr[H + k]));
                        float rb = Rb ? Rb[2 * H + k] : 0.0f;
                        float pre = r.lbr ? xw[2 * H + k] + rg * (hr[2 * H + k] + rb)
                                          : xw[2 * H + k] + hr[2 * H + k] + rb;
                        float hh = nn_act_apply(&A[1], clipv(&r, pre));
                        hn = (1.0f - z) * hh + z * hc[k];
                    } else {
                        float cp = cc[k];
                        float ig = nn_act_apply(&A[0], clipv(&r, xw[k] + hr[k] + (Pi ? Pi[k] * cp : 0)));
                        float fg = r.input_forget ? 1.0f - ig
                                 : nn_act_apply(&A[0], clipv(&r, xw[2 * H + k] + hr[2 * H + k] + (Pf ? Pf[k] * cp : 0)));
                        float cg = nn_act_apply(&A[1], clipv(&r, xw[3 * H + k] + hr[3 * H + k]));
                        float cn = fg * cp + ig * cg;
                        float og = nn_act_apply(&A[0], clipv(&r, xw[H + k] + hr[H + k] + (Po ? Po[k] * cn : 0)));
                        cc[k] = cn;
                        hn = og * nn_act_apply(&A[2], cn);
                    }
                    RH[bb * H + k] = hn;
                }
            }
            for (int64_t bb = 0; bb < Bt; bb++) {
                int64_t len = sl ? nn_get_i(sl, bb) : S;
                if (t >= len) continue;
                memcpy(Hc + bb * H, RH + bb * H, (size_t)H * f);
                memcpy(Y0 + ((t * D + d) * Bt + bb) * H, RH + bb * H, (size_t)H * f);
            }
        }
        memcpy(Yh + d * Bt * H, Hc, (size_t)(Bt * H) * f);
        memcpy(Yc + d * Bt * H, Cc, (size_t)(Bt * H) * f);
    }
    /* Outputs in the requested layout. */
    for (int oi = 0; oi < (kind == K_LSTM ? 3 : 2) && oi < c->n_out; oi++) {
        if (c->node && (c->node->n_outputs <= oi || !c->node->outputs[oi])) continue;
        int64_t od[4];
        int rank;
        if (oi == 0) {
            rank = 4;
            if (layout) { od[0] = Bt; od[1] = S; od[2] = D; od[3] = H; }
            else { od[0] = S; od[1] = D; od[2] = Bt; od[3] = H; }
        } else {
            rank = 3;
            if (layout) { od[0] = Bt; od[1] = D; od[2] = H; }
            else { od[0] = D; od[1] = Bt; od[2] = H; }
        }
        nn_fout o;
        if ((st = nn_fout_new(c, oi, x->dtype, rank, od, &o))) goto done;
        if (oi == 0) {
            for (int64_t s = 0; s < S; s++)
                for (int64_t d = 0; d < D; d++)
                    for (int64_t bb = 0; bb < Bt; bb++) {
                        int64_t dst = layout ? ((bb * S + s) * D + d) * H : ((s * D + d) * Bt + bb) * H;
                        memcpy(o.f + dst, Y0 + ((s * D + d) * Bt + bb) * H, (size_t)H * f);
                    }
        } else {
            const float *src = oi == 1 ? Yh : Yc;
            for (int64_t d = 0; d < D; d++)
                for (int64_t bb = 0; bb < Bt; bb++) {
                    int64_t dst = layout ? (bb * D + d) * H : (d * Bt + bb) * H;
                    memcpy(o.f + dst, src + (d * Bt + bb) * H, (size_t)H * f);
                }
        }
        nn_fout_done(&o);
    }
done:
    for (int i = 0; i < 7; i++) free(tmp[i]);
    free(X0); free(XW); free(HR); free(RH); free(Hc); free(Cc); free(Y0); free(Yh); free(Yc);
    return st;
}

NN_KERNEL(rnn) { return rnn_run(c, K_RNN); }
NN_KERNEL(gru) { return rnn_run(c, K_GRU); }
NN_KERNEL(lstm) { return rnn_run(c, K_LSTM); }
