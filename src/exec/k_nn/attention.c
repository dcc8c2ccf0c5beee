/* Attention family: ONNX Attention (opset 23/24: GQA, causal with past,
 * boolean or additive masks, softcap, qk_matmul_output modes, KV cache),
 * RotaryEmbedding (opset 23), and the basic forms of com.microsoft
 * Attention and MultiHeadAttention. One scalar core serves all of them. */
#include "nn_common.h"
#include "attn_fast.h"
#include "onnxscope/threadpool.h"

/* Q [B,Hq,Sq,hs], K [B,Hkv,T,hs], V [B,Hkv,T,vs] (contiguous floats). */
typedef struct attn_args {
    int64_t B, Hq, Hkv, Sq, T, hs, vs;
    const float *Q, *K, *V;
    const float *bias;     /* [B,Hq,Sq,T] additive, or NULL */
    bool causal;
    const int64_t *offset; /* per-batch causal offset (j <= i + offset[b]) */
    float scale, softcap;
    float *Y;              /* [B,Hq,Sq,vs] */
    float *qk;             /* [B,Hq,Sq,T] or NULL */
    int qk_mode;
    const float *kbias;    /* [B,T] additive per key (a key padding mask), or
                            * NULL: spares a [B,H,Sq,T] bias for masks that
                            * depend on the key alone */
    /* Optional element strides (batch, head, row) of Q, K, V and Y; all 0
     * means the contiguous head-major layout above. Lets com.microsoft
     * Attention read heads straight out of its [B,S,3*D] projection and
     * write [B,S,D] without head copies. */
    int64_t q_st[3], k_st[3], v_st[3], y_st[3];
} attn_args;

/* Fills zero strides with the contiguous [B,H,S,d] layout. */
static void attn_strides(attn_args *a)
{
    if (a->q_st[2] == 0) {
        a->q_st[0] = a->Hq * a->Sq * a->hs, a->q_st[1] = a->Sq * a->hs, a->q_st[2] = a->hs;
        a->y_st[0] = a->Hq * a->Sq * a->vs, a->y_st[1] = a->Sq * a->vs, a->y_st[2] = a->vs;
        a->k_st[0] = a->Hkv * a->T * a->hs, a->k_st[1] = a->T * a->hs, a->k_st[2] = a->hs;
        a->v_st[0] = a->Hkv * a->T * a->vs, a->v_st[1] = a->T * a->vs, a->v_st[2] = a->vs;
    }
}

typedef struct attn_job {
    const attn_args *a;
    bool failed;
} attn_job;

/* Rows of (batch, head) pairs [b0, b1): each owns its score scratch. */
static void attn_rows(void *ctx, int64_t b0, int64_t b1)
{
    attn_job *job = ctx;
    const attn_args *a = job->a;
    float *s = malloc((size_t)(a->T + 1) * sizeof(float));
    float *raw = malloc((size_t)(a->T + 1) * sizeof(float));
    if (!s || !raw) {
        free(s);
        free(raw);
        job->failed = true;
        return;
    }
    int64_t rep = a->Hq / a->Hkv;
    float sq = sqrtf(a->scale);
    for (int64_t bh = b0; bh < b1; bh++) {
        int64_t b = bh / a->Hq, h = bh % a->Hq, hk = h / rep;
        const float *Kh = a->K + b * a->k_st[0] + hk * a->k_st[1];
        const float *Vh = a->V + b * a->v_st[0] + hk * a->v_st[1];
        for (int64_t i = 0; i < a->Sq; i++) {
            const float *q = a->Q + b * a->q_st[0] + h * a->q_st[1] + i * a->q_st[2];
            const float *bias = a->bias ? a->bias + ((b * a->Hq + h) * a->Sq + i) * a->T : NULL;
            float mx = -INFINITY;
            for (int64_t j = 0; j < a->T; j++) {
                const float *k = Kh + j * a->k_st[2];
                float d = 0;
                /* The reference scales both operands by sqrt(scale). */
                for (int64_t e = 0; e < a->hs; e++) d += (q[e] * sq) * (k[e] * sq);
                if (a->softcap > 0) d = a->softcap * tanhf(d / a->softcap);
                raw[j] = d;
                float v = d + (bias ? bias[j] : 0.0f) + (a->kbias ? a->kbias[b * a->T + j] : 0.0f);
                if (a->causal && j > i + (a->offset ? a->offset[b] : 0)) v = -INFINITY;
                s[j] = v;
                if (v > mx) mx = v;
            }
            float *qo = a->qk ? a->qk + ((b * a->Hq + h) * a->Sq + i) * a->T : NULL;
            if (qo && a->qk_mode <= 1) memcpy(qo, raw, (size_t)a->T * sizeof(float));
            if (qo && a->qk_mode == 2) memcpy(qo, s, (size_t)a->T * sizeof(float));
            double sum = 0;
            for (int64_t j = 0; j < a->T; j++) {
                s[j] = (mx == -INFINITY) ? 0.0f : expf(s[j] - mx);
                sum += s[j];
            }
            /* A fully masked row yields zeros, not NaN. */
            for (int64_t j = 0; j < a->T; j++) s[j] = sum > 0 ? (float)(s[j] / sum) : 0.0f;
            if (qo && a->qk_mode == 3) memcpy(qo, s, (size_t)a->T * sizeof(float));
            float *y = a->Y + b * a->y_st[0] + h * a->y_st[1] + i * a->y_st[2];
            for (int64_t e = 0; e < a->vs; e++) y[e] = 0;
            for (int64_t j = 0; j < a->T; j++) {
                float p = s[j];
                if (p == 0.0f) continue;
                const float *v = Vh + j * a->v_st[2];
                for (int64_t e = 0; e < a->vs; e++) y[e] += p * v[e];
            }
        }
    }
    free(s);
    free(raw);
}

/* The common case (no softcap, no QK output) per (batch, head): the scores
 * of all queries as one GEMM (scale * Q K^T), bias and causal mask added,
 * a vectorized softmax per row, then one GEMM with V. Same results as
 * attn_rows up to float rounding: the scale multiplies the dot product
 * instead of both operands. Scratch: one Sq x T block per worker. */
static void attn_rows_gemm(void *ctx, int64_t b0, int64_t b1)
{
    attn_job *job = ctx;
    const attn_args *a = job->a;
    float *S = malloc((size_t)(a->Sq * a->T + 1) * sizeof(float));
    if (!S) {
        job->failed = true;
        return;
    }
    int64_t rep = a->Hq / a->Hkv;
    for (int64_t bh = b0; bh < b1; bh++) {
        int64_t b = bh / a->Hq, h = bh % a->Hq, hk = h / rep;
        const float *Qh = a->Q + b * a->q_st[0] + h * a->q_st[1];
        const float *Kh = a->K + b * a->k_st[0] + hk * a->k_st[1];
        const float *Vh = a->V + b * a->v_st[0] + hk * a->v_st[1];
        nn_sgemm(false, true, a->Sq, a->T, a->hs, a->scale, Qh, a->q_st[2], Kh, a->k_st[2], 0.0f,
                 S, a->T);
        for (int64_t i = 0; i < a->Sq; i++) {
            float *row = S + i * a->T;
            if (a->bias) {
                const float *bias = a->bias + ((b * a->Hq + h) * a->Sq + i) * a->T;
                for (int64_t j = 0; j < a->T; j++) row[j] += bias[j];
            }
            if (a->kbias) {
                const float *kb = a->kbias + b * a->T;
                for (int64_t j = 0; j < a->T; j++) row[j] += kb[j];
            }
            if (a->causal) {
                int64_t last = i + (a->offset ? a->offset[b] : 0);
                for (int64_t j = last + 1 > 0 ? last + 1 : 0; j < a->T; j++) row[j] = -INFINITY;
            }
            ox__attn_softmax_row(row, a->T);
        }
        nn_sgemm(false, false, a->Sq, a->vs, a->T, 1.0f, S, a->T, Vh, a->v_st[2], 0.0f,
                 a->Y + b * a->y_st[0] + h * a->y_st[1], a->y_st[2]);
    }
    free(S);
}

static ox_status attn_core(ox_kernel_ctx *c, attn_args *a)
{
    attn_strides(a);
    attn_job job = {a, false};
    bool gemm = !(a->softcap > 0) && !a->qk && a->T > 0 && a->Sq > 0 && a->hs > 0;
    ox_parallel_for(c->pool, a->B * a->Hq, 1, gemm ? attn_rows_gemm : attn_rows, &job);
    return job.failed ? NN_NOMEM(c) : OX_OK;
}

/* [B, S, H*hs] -> [B, H, S, hs] (to4 = true) or back. */
static void heads_split(const float *src, float *dst, int64_t B, int64_t S, int64_t H,
                        int64_t hs, bool to4)
{
    for (int64_t b = 0; b < B; b++)
        for (int64_t s = 0; s < S; s++)
            for (int64_t h = 0; h < H; h++) {
                size_t n = (size_t)hs * sizeof(float);
                if (to4) memcpy(dst + ((b * H + h) * S + s) * hs, src + ((b * S + s) * H + h) * hs, n);
                else memcpy(dst + ((b * S + s) * H + h) * hs, src + ((b * H + h) * S + s) * hs, n);
            }
}

static bool want_out(const ox_kernel_ctx *c, int i)
{
    return i < c->n_out && (!c->node || (c->node->n_outputs > i && c->node->outputs[i]));
}

NN_KERNEL(attention)
{
    const ox_tensor *q = ox_kernel_in(c, 0), *k = ox_kernel_in(c, 1), *v = ox_kernel_in(c, 2);
    const ox_tensor *mask = ox_kernel_in(c, 3), *pk = ox_kernel_in(c, 4), *pv = ox_kernel_in(c, 5);
    const ox_tensor *nonpad = c->n_in > 6 ? ox_kernel_in(c, 6) : NULL;
    if (!q || !k || !v) return NN_FAIL(c, "needs Q, K and V");
    if (q->rank != k->rank || q->rank != v->rank || (q->rank != 3 && q->rank != 4))
        return NN_FAIL(c, "Q, K, V must all be 3-D or 4-D");
    if (!nn_is_float_dt(q->dtype)) return NN_FAIL(c, "needs float inputs");
    if ((pk == NULL) != (pv == NULL)) return NN_FAIL(c, "past_key and past_value go together");
    bool r3 = q->rank == 3;
    int64_t B = q->dims[0], Hq, Hkv, Sq, L, hs, vs;
    if (r3) {
        Hq = nn_attr_i(c, "q_num_heads", 0);
        Hkv = nn_attr_i(c, "kv_num_heads", 0);
        if (Hq < 1 || Hkv < 1) return NN_FAIL(c, "3-D inputs need q_num_heads and kv_num_heads");
        if (q->dims[2] % Hq || k->dims[2] % Hkv || v->dims[2] % Hkv)
            return NN_FAIL(c, "hidden sizes not divisible by the head counts");
        Sq = q->dims[1]; L = k->dims[1];
        hs = q->dims[2] / Hq; vs = v->dims[2] / Hkv;
        if (k->dims[2] / Hkv != hs) return NN_FAIL(c, "Q and K head sizes differ");
    } else {
        Hq = q->dims[1]; Hkv = k->dims[1]; Sq = q->dims[2]; L = k->dims[2];
        hs = q->dims[3]; vs = v->dims[3];
        if (k->dims[3] != hs || v->dims[1] != Hkv || v->dims[2] != L) return NN_FAIL(c, "K/V shapes mismatch");
    }
    if (k->dims[0] != B || v->dims[0] != B) return NN_FAIL(c, "batch sizes differ");
    if (Hkv < 1 || Hq % Hkv) return NN_FAIL(c, "q heads must be a multiple of kv heads");
    if (r3 && (v->dims[1] != L)) return NN_FAIL(c, "K/V lengths differ");
    int64_t P = 0;
    if (pk) {
        if (pk->rank != 4 || pv->rank != 4 || pk->dims[0] != B || pk->dims[1] != Hkv || pk->dims[3] != hs ||
            pv->dims[0] != B || pv->dims[1] != Hkv || pv->dims[3] != vs || pv->dims[2] != pk->dims[2])
            return NN_FAIL(c, "past_key/past_value shapes mismatch");
        P = pk->dims[2];
    }
    int64_t T = P + L;
    float scale = nn_attr_f(c, "scale", 0.0f);
    if (!c->node || !ox_node_attr(c->node, "scale")) scale = 1.0f / sqrtf((float)hs);
    float *tmp[6] = {0};
    float *Q4 = NULL, *K4 = NULL, *V4 = NULL, *Y4 = NULL, *bias = NULL, *QK = NULL;
    int64_t *off = NULL;
    ox_status st = OX_OK;
    const float *Qf = nn_load_f32(c, q, &tmp[0]);
    const float *Kf = Qf ? nn_load_f32(c, k, &tmp[1]) : NULL;
    const float *Vf = Kf ? nn_load_f32(c, v, &tmp[2]) : NULL;
    const float *PK = (Vf && pk) ? nn_load_f32(c, pk, &tmp[3]) : NULL;
    const float *PV = (PK && pv) ? nn_load_f32(c, pv, &tmp[4]) : NULL;
    if (!Vf || (pk && !PV)) { st = NN_ST(c); goto done; }
    size_t f = sizeof(float);
    Q4 = malloc((size_t)(B * Hq * Sq * hs + 1) * f);
    K4 = malloc((size_t)(B * Hkv * T * hs + 1) * f);
    V4 = malloc((size_t)(B * Hkv * T * vs + 1) * f);
    Y4 = malloc((size_t)(B * Hq * Sq * vs + 1) * f);
    off = calloc((size_t)B + 1, sizeof(int64_t));
    if (!Q4 || !K4 || !V4 || !Y4 || !off) { st = NN_NOMEM(c); goto done; }
    /* Present K/V = concat(past, new) along the sequence axis. */
    {
        float *Kn = r3 ? malloc((size_t)(B * Hkv * L * hs + 1) * f) : NULL;
        float *Vn = r3 ? malloc((size_t)(B * Hkv * L * vs + 1) * f) : NULL;
        if (r3 && (!Kn || !Vn)) { free(Kn); free(Vn); st = NN_NOMEM(c); goto done; }
        if (r3) {
            heads_split(Qf, Q4, B, Sq, Hq, hs, true);
            heads_split(Kf, Kn, B, L, Hkv, hs, true);
            heads_split(Vf, Vn, B, L, Hkv, vs, true);
        } else {
            memcpy(Q4, Qf, (size_t)(B * Hq * Sq * hs) * f);
        }
        const float *kn = r3 ? Kn : Kf, *vn = r3 ? Vn : Vf;
        for (int64_t bh = 0; bh < B * Hkv; bh++) {
            if (P) {
                memcpy(K4 + bh * T * hs, PK + bh * P * hs, (size_t)(P * hs) * f);
                memcpy(V4 + bh * T * vs, PV + bh * P * vs, (size_t)(P * vs) * f);
            }
            memcpy(K4 + (bh * T + P) * hs, kn + bh * L * hs, (size_t)(L * hs) * f);
            memcpy(V4 + (bh * T + P) * vs, vn + bh * L * vs, (size_t)(L * vs) * f);
        }
        free(Kn);
        free(Vn);
    }
    bool causal = nn_attr_i(c, "is_causal", 0) != 0;
    for (int64_t b = 0; b < B; b++) off[b] = P;
    if (nonpad && nonpad->numel != B) { st = NN_FAIL(c, "nonpad_kv_seqlen must have %lld entries", (long long)B); goto done; }
    if (nonpad && !pk)
        for (int64_t b = 0; b < B; b++) off[b] = nn_get_i(nonpad, b) - Sq;
    if (mask || nonpad) {
        int64_t n = B * Hq * Sq * T;
        bias = calloc((size_t)n + 1, f);
        if (!bias) { st = NN_NOMEM(c); goto done; }
        if (mask) {
            if (mask->rank < 1 || mask->rank > 4) { st = NN_FAIL(c, "attn_mask rank must be 1..4"); goto done; }
            int64_t md[4] = {1, 1, 1, 1};
            for (int i = 0; i < mask->rank; i++) md[4 - mask->rank + i] = mask->dims[i];
            int64_t full[4] = {B, Hq, Sq, T};
            for (int i = 0; i < 3; i++)
                if (md[i] != 1 && md[i] != full[i]) { st = NN_FAIL(c, "attn_mask does not broadcast"); goto done; }
            if (md[3] > T) { st = NN_FAIL(c, "attn_mask longer than the key sequence"); goto done; }
            bool isb = mask->dtype == OX_DT_BOOL;
            float *tm = NULL;
            const float *M = isb ? NULL : nn_load_f32(c, mask, &tm);
            if (!isb && !M) { st = NN_ST(c); goto done; }
            const uint8_t *Mb = isb ? ox_tensor_data(mask) : NULL;
            for (int64_t b = 0; b < B; b++)
                for (int64_t h = 0; h < Hq; h++)
                    for (int64_t i = 0; i < Sq; i++)
                        for (int64_t j = 0; j < T; j++) {
                            float val;
                            if (j >= md[3]) val = -INFINITY; /* padded columns */
                            else {
                                int64_t mi = (((md[0] == 1 ? 0 : b) * md[1] + (md[1] == 1 ? 0 : h)) * md[2] +
                                              (md[2] == 1 ? 0 : i)) * md[3] + j;
                                val = isb ? (Mb && Mb[mi] ? 0.0f : -INFINITY) : M[mi];
                            }
                            bias[((b * Hq + h) * Sq + i) * T + j] = val;
                        }
            free(tm);
        }
        if (nonpad)
            for (int64_t b = 0; b < B; b++) {
                int64_t np = nn_get_i(nonpad, b);
                for (int64_t r = 0; r < Hq * Sq; r++)
                    for (int64_t j = np < 0 ? 0 : np; j < T; j++) bias[(b * Hq * Sq + r) * T + j] = -INFINITY;
            }
    }
    bool want_qk = want_out(c, 3);
    if (want_qk && !(QK = malloc((size_t)(B * Hq * Sq * T + 1) * f))) { st = NN_NOMEM(c); goto done; }
    attn_args a = {B, Hq, Hkv, Sq, T, hs, vs, Q4, K4, V4, bias, causal, off, scale,
                   nn_attr_f(c, "softcap", 0.0f), Y4, QK, (int)nn_attr_i(c, "qk_matmul_output_mode", 0)};
    if ((st = attn_core(c, &a))) goto done;
    nn_fout o;
    if (r3) {
        int64_t od[3] = {B, Sq, Hq * vs};
        if ((st = nn_fout_new(c, 0, q->dtype, 3, od, &o))) goto done;
        heads_split(Y4, o.f, B, Sq, Hq, vs, false);
    } else {
        int64_t od[4] = {B, Hq, Sq, vs};
        if ((st = nn_fout_new(c, 0, q->dtype, 4, od, &o))) goto done;
        memcpy(o.f, Y4, (size_t)(B * Hq * Sq * vs) * f);
    }
    nn_fout_done(&o);
    for (int oi = 1; oi <= 3; oi++) {
        if (!want_out(c, oi)) continue;
        int64_t od[4] = {B, oi == 3 ? Hq : Hkv, oi == 3 ? Sq : T, oi == 1 ? hs : oi == 2 ? vs : T};
        if ((st = nn_fout_new(c, oi, q->dtype, 4, od, &o))) goto done;
        memcpy(o.f, oi == 1 ? K4 : oi == 2 ? V4 : QK, (size_t)nn_prod(od, 4) * f);
        nn_fout_done(&o);
    }
done:
    for (int i = 0; i < 6; i++) free(tmp[i]);
    free(Q4); free(K4); free(V4); free(Y4); free(bias); free(QK); free(off);
    return st;
}

NN_KERNEL(rotary_embedding)
{
    const ox_tensor *x = ox_kernel_in(c, 0), *cc = ox_kernel_in(c, 1), *sc = ox_kernel_in(c, 2);
    const ox_tensor *pos = ox_kernel_in(c, 3);
    if (!x || !cc || !sc) return NN_FAIL(c, "needs X, cos_cache and sin_cache");
    if (x->rank != 3 && x->rank != 4) return NN_FAIL(c, "X must be 3-D or 4-D");
    if (!nn_is_float_dt(x->dtype)) return NN_FAIL(c, "needs a float input");
    bool inter = nn_attr_i(c, "interleaved", 0) != 0;
    int64_t B = x->dims[0], S, NH, hs;
    if (x->rank == 4) { NH = x->dims[1]; S = x->dims[2]; hs = x->dims[3]; }
    else {
        S = x->dims[1];
        NH = nn_attr_i(c, "num_heads", 0);
        if (NH < 1 || x->dims[2] % NH) return NN_FAIL(c, "3-D input needs num_heads dividing the hidden size");
        hs = x->dims[2] / NH;
    }
    int64_t rd = nn_attr_i(c, "rotary_embedding_dim", 0);
    if (rd <= 0) rd = hs;
    if (rd > hs || rd % 2) return NN_FAIL(c, "bad rotary_embedding_dim");
    int64_t half = rd / 2;
    if (cc->rank < 2 || sc->rank != cc->rank) return NN_FAIL(c, "cos/sin caches must have rank 2 or 3");
    int64_t cw = cc->dims[cc->rank - 1];
    if (cw < half || sc->numel != cc->numel) return NN_FAIL(c, "cos/sin caches too narrow");
    if (pos) {
        if (pos->numel != B * S || cc->rank != 2) return NN_FAIL(c, "position_ids/cache shapes mismatch");
    } else if (cc->rank != 3 || cc->dims[0] != B || cc->dims[1] != S) {
        return NN_FAIL(c, "cache must be [batch, seq, dim/2] without position_ids");
    }
    float *t0 = NULL, *t1 = NULL, *t2 = NULL;
    ox_status st = OX_OK;
    const float *X = nn_load_f32(c, x, &t0);
    const float *C = X ? nn_load_f32(c, cc, &t1) : NULL;
    const float *Sn = C ? nn_load_f32(c, sc, &t2) : NULL;
    nn_fout o;
    if (!Sn) { st = NN_ST(c); goto done; }
    if ((st = nn_fout_new(c, 0, x->dtype, x->rank, x->dims, &o))) goto done;
    memcpy(o.f, X, (size_t)x->numel * sizeof(float));
    for (int64_t b = 0; b < B; b++)
        for (int64_t s = 0; s < S; s++) {
            int64_t row;
            if (pos) {
                row = nn_get_i(pos, b * S + s);
                if (row < 0 || row >= cc->dims[0]) { nn_fout_drop(&o); st = NN_FAIL(c, "position id out of range"); goto done; }
            } else {
                row = b * S + s;
            }
            const float *cr = C + row * cw, *sr = Sn + row * cw;
            for (int64_t h = 0; h < NH; h++) {
                int64_t base = x->rank == 4 ? ((b * NH + h) * S + s) * hs : ((b * S + s) * NH + h) * hs;
                const float *xi = X + base;
                float *yo = o.f + base;
                for (int64_t e = 0; e < half; e++) {
                    int64_t i1 = inter ? 2 * e : e, i2 = inter ? 2 * e + 1 : e + half;
                    float x1 = xi[i1], x2 = xi[i2];
                    yo[i1] = cr[e] * x1 - sr[e] * x2;
                    yo[i2] = sr[e] * x1 + cr[e] * x2;
                }
            }
        }
    nn_fout_done(&o);
done:
    free(t0); free(t1); free(t2);
    return st;
}

/* com.microsoft MultiHeadAttention, unpacked 3-D query/key/value form with
 * optional bias, key_padding_mask ([B, L] of 0/1) and attention_bias. */
NN_KERNEL(ms_multihead_attention)
{
    const ox_tensor *q = ox_kernel_in(c, 0), *k = ox_kernel_in(c, 1), *v = ox_kernel_in(c, 2);
    const ox_tensor *bi = ox_kernel_in(c, 3), *kpm = ox_kernel_in(c, 4), *ab = ox_kernel_in(c, 5);
    int64_t H = nn_attr_i(c, "num_heads", 0);
    if (!q || !k || !v || q->rank != 3 || k->rank != 3 || v->rank != 3)
        return nn_fail(c, OX_EUNSUPPORTED, "only 3-D query/key/value are supported");
    if (c->n_in > 6 && (ox_kernel_in(c, 6) || ox_kernel_in(c, 7)))
        return nn_fail(c, OX_EUNSUPPORTED, "past key/value are not supported");
    if (!nn_is_float_dt(q->dtype)) return NN_FAIL(c, "needs float inputs");
    int64_t B = q->dims[0], S = q->dims[1], D = q->dims[2], L = k->dims[1], Dv = v->dims[2];
    if (H < 1 || D % H || Dv % H || k->dims[2] != D || v->dims[1] != L || k->dims[0] != B || v->dims[0] != B)
        return NN_FAIL(c, "shapes do not match num_heads");
    int64_t hs = D / H, vs = Dv / H;
    float scale = nn_attr_f(c, "scale", 0.0f);
    if (scale == 0.0f) scale = 1.0f / sqrtf((float)hs);
    float mfv = nn_attr_f(c, "mask_filter_value", -10000.0f);
    size_t f = sizeof(float);
    float *tmp[6] = {0}, *Qb = NULL, *Kb = NULL, *Vb = NULL, *Q4 = NULL, *K4 = NULL, *V4 = NULL,
          *Y4 = NULL, *bias = NULL;
    ox_status st = OX_OK;
    const float *Qf = nn_load_f32(c, q, &tmp[0]);
    const float *Kf = Qf ? nn_load_f32(c, k, &tmp[1]) : NULL;
    const float *Vf = Kf ? nn_load_f32(c, v, &tmp[2]) : NULL;
    const float *Bf = (Vf && bi) ? nn_load_f32(c, bi, &tmp[3]) : NULL;
    const float *ABf = (Vf && ab) ? nn_load_f32(c, ab, &tmp[4]) : NULL;
    if (!Vf || (bi && !Bf) || (ab && !ABf)) { st = NN_ST(c); goto done; }
    if (bi && bi->numel != 2 * D + Dv) { st = NN_FAIL(c, "bias size mismatch"); goto done; }
    Qb = malloc((size_t)(B * S * D + 1) * f); Kb = malloc((size_t)(B * L * D + 1) * f);
    Vb = malloc((size_t)(B * L * Dv + 1) * f); Q4 = malloc((size_t)(B * S * D + 1) * f);
    K4 = malloc((size_t)(B * L * D + 1) * f); V4 = malloc((size_t)(B * L * Dv + 1) * f);
    Y4 = malloc((size_t)(B * S * Dv + 1) * f);
    bias = calloc((size_t)(B * H * S * L + 1), f);
    if (!Qb || !Kb || !Vb || !Q4 || !K4 || !V4 || !Y4 || !bias) { st = NN_NOMEM(c); goto done; }
    for (int64_t i = 0; i < B * S * D; i++) Qb[i] = Qf[i] + (Bf ? Bf[i % D] : 0.0f);
    for (int64_t i = 0; i < B * L * D; i++) Kb[i] = Kf[i] + (Bf ? Bf[D + i % D] : 0.0f);
    for (int64_t i = 0; i < B * L * Dv; i++) Vb[i] = Vf[i] + (Bf ? Bf[2 * D + i % Dv] : 0.0f);
    heads_split(Qb, Q4, B, S, H, hs, true);
    heads_split(Kb, K4, B, L, H, hs, true);
    heads_split(Vb, V4, B, L, H, vs, true);
    if (ab) {
        if (ab->rank != 4 || ab->dims[2] != S || ab->dims[3] != L ||
            (ab->dims[0] != 1 && ab->dims[0] != B) || (ab->dims[1] != 1 && ab->dims[1] != H)) {
            st = NN_FAIL(c, "attention_bias shape mismatch");
            goto done;
        }
    }
    if (kpm && !(kpm->rank == 2 && kpm->dims[0] == B && kpm->dims[1] == L)) {
        st = nn_fail(c, OX_EUNSUPPORTED, "only 2-D key_padding_mask is supported");
        goto done;
    }
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t i = 0; i < S; i++)
                for (int64_t j = 0; j < L; j++) {
                    float val = 0;
                    if (ab) val += ABf[(((ab->dims[0] == 1 ? 0 : b) * ab->dims[1] + (ab->dims[1] == 1 ? 0 : h)) * S + i) * L + j];
                    if (kpm && nn_get_i(kpm, b * L + j) == 0) val += mfv;
                    bias[((b * H + h) * S + i) * L + j] = val;
                }
    attn_args a = {B, H, H, S, L, hs, vs, Q4, K4, V4, bias, nn_attr_i(c, "unidirectional", 0) != 0,
                   NULL, scale, 0.0f, Y4, NULL, 0};
    if ((st = attn_core(c, &a))) goto done;
    int64_t od[3] = {B, S, Dv};
    nn_fout o;
    if ((st = nn_fout_new(c, 0, q->dtype, 3, od, &o))) goto done;
    heads_split(Y4, o.f, B, S, H, vs, false);
    nn_fout_done(&o);
done:
    for (int i = 0; i < 6; i++) free(tmp[i]);
    free(Qb); free(Kb); free(Vb); free(Q4); free(K4); free(V4); free(Y4); free(bias);
    return st;
}

/* com.microsoft Attention: input [B,S,Din] x weights [Din, 3*D] + bias, with
 * optional mask_index (1-D key lengths or 2-D 0/1 mask) and unidirectional. */
NN_KERNEL(ms_attention)
{
    const ox_tensor *x = ox_kernel_in(c, 0), *w = ox_kernel_in(c, 1), *bi = ox_kernel_in(c, 2);
    const ox_tensor *mi = ox_kernel_in(c, 3);
    int64_t H = nn_attr_i(c, "num_heads", 0);
    if (!x || !w || x->rank != 3 || w->rank != 2 || w->dims[0] != x->dims[2])
        return NN_FAIL(c, "needs input [B,S,Din] and weights [Din, 3*D]");
    if (c->n_in > 4 && ox_kernel_in(c, 4)) return nn_fail(c, OX_EUNSUPPORTED, "past state is not supported");
    for (int i = 6; i < c->n_in; i++)
        if (ox_kernel_in(c, i)) return nn_fail(c, OX_EUNSUPPORTED, "input %d is not supported", i);
    const ox_tensor *ab = c->n_in > 5 ? ox_kernel_in(c, 5) : NULL;
    if (!nn_is_float_dt(x->dtype)) return NN_FAIL(c, "needs float inputs");
    int64_t qkvs[3];
    int nq = nn_attr_ints(c, "qkv_hidden_sizes", qkvs, 3);
    int64_t B = x->dims[0], S = x->dims[1], Din = x->dims[2], Wn = w->dims[1];
    if (nq != 3) { qkvs[0] = qkvs[1] = qkvs[2] = Wn / 3; }
    int64_t Dq = qkvs[0], Dk = qkvs[1], Dv = qkvs[2];
    if (Dq + Dk + Dv != Wn || H < 1 || Dq % H || Dv % H || Dq != Dk) return NN_FAIL(c, "bad hidden sizes");
    if (bi && bi->numel != Wn) return NN_FAIL(c, "bias size mismatch");
    int64_t hs = Dq / H, vs = Dv / H;
    float scale = nn_attr_f(c, "scale", 0.0f);
    if (scale == 0.0f) scale = 1.0f / sqrtf((float)hs);
    float mfv = nn_attr_f(c, "mask_filter_value", -10000.0f);
    size_t f = sizeof(float);
    float *t0 = NULL, *t1 = NULL, *t2 = NULL, *P = NULL, *bias = NULL, *kbias = NULL;
    ox_status st = OX_OK;
    const float *X = nn_load_f32(c, x, &t0);
    const float *W = X ? nn_load_f32(c, w, &t1) : NULL;
    const float *Bf = (W && bi) ? nn_load_f32(c, bi, &t2) : NULL;
    if (!W || (bi && !Bf)) { st = NN_ST(c); goto done; }
    P = malloc((size_t)(B * S * Wn + 1) * f);
    /* A full [B,H,S,S] bias only for attention_bias; mask_index masks keys
     * per batch, a [B,S] additive row. */
    if (ab) bias = calloc((size_t)(B * H * S * S + 1), f);
    if (mi) kbias = calloc((size_t)(B * S + 1), f);
    if (!P || (ab && !bias) || (mi && !kbias)) {
        st = NN_NOMEM(c);
        goto done;
    }
    /* The projection [B*S, Q|K|V] plus its bias; the heads are then read in
     * place from it (strides), never copied out. */
    nn_sgemm_mt(c->pool, false, false, B * S, Wn, Din, 1.0f, X, Din, W, Wn, 0.0f, P, Wn);
    if (Bf)
        for (int64_t r = 0; r < B * S; r++) {
            float *pr = P + r * Wn;
            for (int64_t e = 0; e < Wn; e++) pr[e] += Bf[e];
        }
    if (ab) {
        /* attention_bias [B or 1, H or 1, S, S] is added to the scores. */
        if (ab->rank != 4 || (ab->dims[0] != 1 && ab->dims[0] != B) ||
            (ab->dims[1] != 1 && ab->dims[1] != H) || ab->dims[2] != S || ab->dims[3] != S) {
            st = NN_FAIL(c, "attention_bias shape mismatch");
            goto done;
        }
        float *tab = NULL;
        const float *AB = nn_load_f32(c, ab, &tab);
        if (!AB) { st = NN_ST(c); goto done; }
        for (int64_t b = 0; b < B; b++)
            for (int64_t h = 0; h < H; h++)
                for (int64_t i = 0; i < S * S; i++)
                    bias[(b * H + h) * S * S + i] +=
                        AB[((ab->dims[0] == 1 ? 0 : b) * ab->dims[1] + (ab->dims[1] == 1 ? 0 : h)) * S * S + i];
        free(tab);
    }
    if (mi) {
        for (int64_t b = 0; b < B; b++)
            for (int64_t j = 0; j < S; j++) {
                bool masked;
                if (mi->rank == 1 && mi->numel >= B) masked = j >= nn_get_i(mi, b);
                else if (mi->rank == 2 && mi->dims[0] == B && mi->dims[1] == S) masked = nn_get_i(mi, b * S + j) == 0;
                else { st = nn_fail(c, OX_EUNSUPPORTED, "mask_index form unsupported"); goto done; }
                if (masked) kbias[b * S + j] = mfv;
            }
    }
    int64_t od[3] = {B, S, Dv};
    nn_fout o;
    if ((st = nn_fout_new(c, 0, x->dtype, 3, od, &o))) goto done;
    attn_args a = {B, H, H, S, S, hs, vs, P, P + Dq, P + Dq + Dk, bias,
                   nn_attr_i(c, "unidirectional", 0) != 0, NULL, scale, 0.0f, o.f, NULL, 0, kbias,
                   .q_st = {S * Wn, hs, Wn}, .k_st = {S * Wn, hs, Wn}, .v_st = {S * Wn, vs, Wn},
                   .y_st = {S * Dv, vs, Dv}};
    st = attn_core(c, &a);
    if (st) nn_fout_drop(&o);
    else nn_fout_done(&o);
done:
    free(t0); free(t1); free(t2); free(P); free(bias); free(kbias);
    return st;
}

/* LinearAttention (opset 27): recurrent state S [B, Hkv, dk, dv] updated per
 * step by the linear, gated, delta or gated_delta rule; queries read S
 * with GQA head sharing. Inputs: query, key, value, past_state, decay,
 * beta, erase_gate (3-D [B, T, heads*dim] activations). */
NN_KERNEL(linear_attention)
{
    const ox_tensor *q = ox_kernel_in(c, 0), *k = ox_kernel_in(c, 1), *v = ox_kernel_in(c, 2);
    const ox_tensor *ps = ox_kernel_in(c, 3), *dc = ox_kernel_in(c, 4), *be = ox_kernel_in(c, 5);
    const ox_tensor *eg = ox_kernel_in(c, 6);
    const char *rule = nn_attr_s(c, "update_rule", "gated_delta");
    bool gating = !strcmp(rule, "gated") || !strcmp(rule, "gated_delta");
    bool delta = !strcmp(rule, "delta") || !strcmp(rule, "gated_delta");
    if (!gating && !delta && strcmp(rule, "linear")) return NN_FAIL(c, "bad update_rule '%s'", rule);
    int64_t Hq = nn_attr_i(c, "q_num_heads", 0), Hk = nn_attr_i(c, "kv_num_heads", 0);
    if (Hq < 1 || Hk < 1 || Hq % Hk) return NN_FAIL(c, "q_num_heads must be a multiple of kv_num_heads");
    if (!q || !k || !v || q->rank != 3 || k->rank != 3 || v->rank != 3) return NN_FAIL(c, "query/key/value must be 3-D");
    if (!nn_is_float_dt(q->dtype)) return NN_FAIL(c, "needs float inputs");
    if (gating != (dc != NULL) || delta != (be != NULL) || (eg && !delta))
        return NN_FAIL(c, "inputs do not match update_rule '%s'", rule);
    int64_t B = q->dims[0], T = q->dims[1];
    if (q->dims[2] % Hq || v->dims[2] % Hk) return NN_FAIL(c, "hidden sizes not divisible by heads");
    int64_t dk = q->dims[2] / Hq, dv = v->dims[2] / Hk, G = Hq / Hk;
    if (k->dims[0] != B || k->dims[1] != T || k->dims[2] != Hk * dk || v->dims[0] != B || v->dims[1] != T)
        return NN_FAIL(c, "key/value shapes mismatch");
    if (ps && (ps->rank != 4 || ps->dims[0] != B || ps->dims[1] != Hk || ps->dims[2] != dk || ps->dims[3] != dv))
        return NN_FAIL(c, "past_state shape mismatch");
    if ((dc && dc->rank != 3) || (be && be->rank != 3)) return NN_FAIL(c, "decay and beta must be 3-D");
    int64_t dlast = dc ? dc->dims[2] : 0, blast = be ? be->dims[2] : 0;
    if (dc && (dc->rank != 3 || dc->dims[0] != B || dc->dims[1] != T || (dlast != Hk && dlast != Hk * dk)))
        return NN_FAIL(c, "decay shape mismatch");
    if (be && (be->rank != 3 || be->dims[0] != B || be->dims[1] != T || (blast != Hk && blast != 1)))
        return NN_FAIL(c, "beta shape mismatch");
    if (eg && (eg->rank != 3 || eg->numel != B * T * Hk * dk)) return NN_FAIL(c, "erase_gate shape mismatch");
    float scale = nn_attr_f(c, "scale", 0.0f);
    if (scale == 0.0f) scale = 1.0f / sqrtf((float)dk);
    float *t[7] = {0}, *S = NULL, *ve = NULL;
    ox_status st = OX_OK;
    const float *Q = nn_load_f32(c, q, &t[0]);
    const float *K = Q ? nn_load_f32(c, k, &t[1]) : NULL;
    const float *V = K ? nn_load_f32(c, v, &t[2]) : NULL;
    const float *PS = (V && ps) ? nn_load_f32(c, ps, &t[3]) : NULL;
    const float *D = (V && dc) ? nn_load_f32(c, dc, &t[4]) : NULL;
    const float *BE = (V && be) ? nn_load_f32(c, be, &t[5]) : NULL;
    const float *EG = (V && eg) ? nn_load_f32(c, eg, &t[6]) : NULL;
    nn_fout o = {0}, so = {0};
    if (!V || (ps && !PS) || (dc && !D) || (be && !BE) || (eg && !EG)) { st = NN_ST(c); goto done; }
    int64_t sn = B * Hk * dk * dv;
    S = malloc((size_t)(sn + 1) * sizeof(float));
    ve = malloc((size_t)(dv + 1) * sizeof(float));
    if (!S || !ve) { st = NN_NOMEM(c); goto done; }
    if (PS) memcpy(S, PS, (size_t)sn * sizeof(float));
    else memset(S, 0, (size_t)sn * sizeof(float));
    int64_t od[3] = {B, T, Hq * dv};
    if ((st = nn_fout_new(c, 0, q->dtype, 3, od, &o))) goto done;
    for (int64_t b = 0; b < B; b++)
        for (int64_t ti = 0; ti < T; ti++) {
            int64_t bt = b * T + ti;
            for (int64_t h = 0; h < Hk; h++) {
                float *Sh = S + (b * Hk + h) * dk * dv;
                const float *kt = K + bt * Hk * dk + h * dk;
                const float *vt = V + bt * Hk * dv + h * dv;
                if (gating) {
                    for (int64_t d = 0; d < dk; d++) {
                        float g = expf(dlast == Hk ? D[bt * Hk + h] : D[bt * Hk * dk + h * dk + d]);
                        for (int64_t m = 0; m < dv; m++) Sh[d * dv + m] *= g;
                    }
                }
                for (int64_t m = 0; m < dv; m++) ve[m] = vt[m];
                if (delta) {
                    float bv = BE[bt * blast + (blast == 1 ? 0 : h)];
                    for (int64_t m = 0; m < dv; m++) {
                        float r = 0;
                        for (int64_t d = 0; d < dk; d++) {
                            float ke = kt[d] * (EG ? EG[bt * Hk * dk + h * dk + d] : 1.0f);
                            r += Sh[d * dv + m] * ke;
                        }
                        ve[m] = bv * (vt[m] - r);
                    }
                }
                for (int64_t d = 0; d < dk; d++)
                    for (int64_t m = 0; m < dv; m++) Sh[d * dv + m] += kt[d] * ve[m];
            }
            for (int64_t h = 0; h < Hq; h++) {
                const float *Sh = S + (b * Hk + h / G) * dk * dv;
                const float *qt = Q + bt * Hq * dk + h * dk;
                float *y = o.f + bt * Hq * dv + h * dv;
                for (int64_t m = 0; m < dv; m++) {
                    float acc = 0;
                    for (int64_t d = 0; d < dk; d++) acc += qt[d] * Sh[d * dv + m];
                    y[m] = scale * acc;
                }
            }
        }
    nn_fout_done(&o);
    if (want_out(c, 1)) {
        int64_t sd[4] = {B, Hk, dk, dv};
        if ((st = nn_fout_new(c, 1, ps ? ps->dtype : q->dtype, 4, sd, &so))) goto done;
        memcpy(so.f, S, (size_t)sn * sizeof(float));
        nn_fout_done(&so);
    }
done:
    for (int i = 0; i < 7; i++) free(t[i]);
    free(S);
    free(ve);
    return st;
}

/* Runs a one-in/one-out modifier subgraph (FlexAttention score_mod,
 * mask_mod, prob_mod) over the whole [B,H,Lq,Lk] tensor held in f, in
 * place. The subgraph sees the tensor in the op's element type dt. A
 * boolean result is a mask: false positions become -inf. */
static ox_status run_mod(ox_kernel_ctx *c, const char *attr, ox_dtype dt, const int64_t *dims,
                         float *f)
{
    const ox_attr *a = c->node ? ox_node_attr(c->node, attr) : NULL;
    if (!a || a->type != OX_ATTR_GRAPH || !a->g) return OX_OK;
    ox_tensor *t = ox_tensor_new(dt, 4, dims);
    if (!t) return NN_NOMEM(c);
    nn_store_f32(t, f, t->numel);
    ox_rval *in = ox_rval_tensor(t), *out = NULL;
    if (!in) { ox_tensor_free(t); return NN_NOMEM(c); }
    ox_status st = ox_exec_subgraph(c, a->g, 1, &in, 1, &out);
    ox_rval_free(in);
    if (st) { ox_rval_free(out); return st; }
    const ox_tensor *r = out && out->kind == OX_RV_TENSOR ? out->t : NULL;
    if (!r || r->numel != nn_prod(dims, 4)) {
        ox_rval_free(out);
        return NN_FAIL(c, "%s must return a tensor of the scores' shape", attr);
    }
    if (r->dtype == OX_DT_BOOL) {
        const uint8_t *m = ox_tensor_data(r);
        for (int64_t i = 0; i < r->numel; i++) if (!m[i]) f[i] = -INFINITY;
    } else {
        float *tmp = NULL;
        const float *v = nn_load_f32(c, r, &tmp);
        if (!v) { ox_rval_free(out); return NN_ST(c); }
        memcpy(f, v, (size_t)r->numel * sizeof(float));
        free(tmp);
    }
    ox_rval_free(out);
    return OX_OK;
}

/* ai.onnx.preview FlexAttention: softmax(mod(Q K^T * scale)) V with optional
 * score_mod / mask_mod / prob_mod subgraphs; K/V heads are shared by
 * groups of query heads (GQA). */
NN_KERNEL(flex_attention)
{
    const ox_tensor *q = ox_kernel_in(c, 0), *k = ox_kernel_in(c, 1), *v = ox_kernel_in(c, 2);
    if (!q || !k || !v || q->rank != 4 || k->rank != 4 || v->rank != 4) return NN_FAIL(c, "Q, K, V must be 4-D");
    if (!nn_is_float_dt(q->dtype)) return NN_FAIL(c, "needs float inputs");
    int64_t B = q->dims[0], Hq = q->dims[1], Lq = q->dims[2], E = q->dims[3];
    int64_t Hk = k->dims[1], Lk = k->dims[2], Ev = v->dims[3];
    if (k->dims[0] != B || v->dims[0] != B || k->dims[3] != E || v->dims[1] != Hk || v->dims[2] != Lk ||
        Hk < 1 || Hq % Hk)
        return NN_FAIL(c, "Q/K/V shapes mismatch");
    float scale = 1.0f / sqrtf((float)E);
    if (c->node && ox_node_attr(c->node, "scale")) scale = nn_attr_f(c, "scale", scale);
    float *t[3] = {0}, *S = NULL;
    ox_status st = OX_OK;
    const float *Q = nn_load_f32(c, q, &t[0]);
    const float *K = Q ? nn_load_f32(c, k, &t[1]) : NULL;
    const float *V = K ? nn_load_f32(c, v, &t[2]) : NULL;
    nn_fout o = {0};
    if (!V) { st = NN_ST(c); goto done; }
    int64_t sd[4] = {B, Hq, Lq, Lk};
    S = malloc((size_t)(B * Hq * Lq * Lk + 1) * sizeof(float));
    if (!S) { st = NN_NOMEM(c); goto done; }
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < Hq; h++) {
            const float *Kh = K + (b * Hk + h / (Hq / Hk)) * Lk * E;
            for (int64_t i = 0; i < Lq; i++) {
                const float *qi = Q + ((b * Hq + h) * Lq + i) * E;
                float *si = S + ((b * Hq + h) * Lq + i) * Lk;
                for (int64_t j = 0; j < Lk; j++) {
                    float d = 0;
                    for (int64_t e = 0; e < E; e++) d += qi[e] * Kh[j * E + e];
                    si[j] = d * scale;
                }
            }
        }
    if ((st = run_mod(c, "score_mod", q->dtype, sd, S))) goto done;
    if ((st = run_mod(c, "mask_mod", q->dtype, sd, S))) goto done;
    for (int64_t r = 0; r < B * Hq * Lq; r++) {
        float *si = S + r * Lk, mx = -INFINITY;
        double sum = 0;
        for (int64_t j = 0; j < Lk; j++) if (si[j] > mx) mx = si[j];
        for (int64_t j = 0; j < Lk; j++) {
            si[j] = mx == -INFINITY ? 0.0f : expf(si[j] - mx);
            sum += si[j];
        }
        for (int64_t j = 0; j < Lk; j++) si[j] = sum > 0 ? (float)(si[j] / sum) : 0.0f;
    }
    if ((st = run_mod(c, "prob_mod", q->dtype, sd, S))) goto done;
    int64_t od[4] = {B, Hq, Lq, Ev};
    if ((st = nn_fout_new(c, 0, q->dtype, 4, od, &o))) goto done;
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < Hq; h++) {
            const float *Vh = V + (b * Hk + h / (Hq / Hk)) * Lk * Ev;
            for (int64_t i = 0; i < Lq; i++) {
                const float *si = S + ((b * Hq + h) * Lq + i) * Lk;
                float *y = o.f + ((b * Hq + h) * Lq + i) * Ev;
                for (int64_t e = 0; e < Ev; e++) y[e] = 0;
                for (int64_t j = 0; j < Lk; j++)
                    for (int64_t e = 0; e < Ev; e++) y[e] += si[j] * Vh[j * Ev + e];
            }
        }
    nn_fout_done(&o);
done:
    for (int i = 0; i < 3; i++) free(t[i]);
    free(S);
    return st;
}
