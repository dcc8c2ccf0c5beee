/* Attention family: ONNX Attention (opset 23/24: GQA, causal with past,
 * boolean or additive masks, softcap, qk_matmul_output modes, KV cache),
 * RotaryEmbedding (opset 23), and the basic forms of com.microsoft
 * Attention and MultiHeadAttention. The three attention ops only check
 * shapes and describe their operands in place (strides, masks read through
 * broadcast strides) for the shared core, attn_core.c. */
#include "nn_common.h"
#include "attn_core.h"
#include "onnxscope/threadpool.h"

static bool want_out(const ox_kernel_ctx *c, int i)
{
    return i < c->n_out && (!c->node || (c->node->n_outputs > i && c->node->outputs[i]));
}

/* Staging floats on the kernel's own thread: its per-thread scratch (so a
 * steady run allocates nothing) up to 16 MiB, the heap beyond, so that one
 * huge attention does not pin its size for the thread's life. */
enum { STAGE_MAX_FLOATS = 4 << 20 };
typedef struct stage {
    float *p;
    bool heap;
} stage;

static float *stage_get(stage *s, size_t n)
{
    s->heap = n > STAGE_MAX_FLOATS;
    s->p = s->heap ? malloc((n + 1) * sizeof(float)) : nn_scratch(4, n + 1);
    return s->p;
}

static void stage_done(stage *s)
{
    if (s->heap) free(s->p);
    s->p = NULL;
}

/* The strides of a [B, S, H*d] tensor read as heads, or of [B, H, S, d]. */
static void strides3(int64_t *st, int64_t S, int64_t H, int64_t d)
{
    st[0] = S * H * d, st[1] = d, st[2] = H * d;
}

static void strides4(int64_t *st, int64_t S, int64_t H, int64_t d)
{
    st[0] = H * S * d, st[1] = S * d, st[2] = d;
}

/* present = concat(past, new) along the sequence, [B, H, P+L, d]. */
static void write_present(float *dst, const float *past, int64_t P, const float *nw,
                          const int64_t *nst, int64_t B, int64_t H, int64_t L, int64_t d)
{
    size_t f = sizeof(float);
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++) {
            float *o = dst + (b * H + h) * (P + L) * d;
            if (P) memcpy(o, past + (b * H + h) * P * d, (size_t)(P * d) * f);
            for (int64_t j = 0; j < L; j++)
                memcpy(o + (P + j) * d, nw + b * nst[0] + h * nst[1] + j * nst[2], (size_t)d * f);
        }
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
    if (nonpad && nonpad->numel != B) return NN_FAIL(c, "nonpad_kv_seqlen must have %lld entries", (long long)B);
    int64_t md[4] = {1, 1, 1, 1};
    if (mask) {
        if (mask->rank < 1 || mask->rank > 4) return NN_FAIL(c, "attn_mask rank must be 1..4");
        for (int i = 0; i < mask->rank; i++) md[4 - mask->rank + i] = mask->dims[i];
        int64_t full[3] = {B, Hq, Sq};
        for (int i = 0; i < 3; i++)
            if (md[i] != 1 && md[i] != full[i]) return NN_FAIL(c, "attn_mask does not broadcast");
        if (md[3] > T) return NN_FAIL(c, "attn_mask longer than the key sequence");
        if (mask->dtype != OX_DT_BOOL && !nn_is_float_dt(mask->dtype))
            return NN_FAIL(c, "attn_mask must be bool or float");
    }
    float scale = nn_attr_f(c, "scale", 0.0f);
    if (!c->node || !ox_node_attr(c->node, "scale")) scale = 1.0f / sqrtf((float)hs);
    float *tmp[6] = {0};
    int64_t pb_stack[128], *per_b = NULL;
    nn_fout o[4] = {0};
    bool have[4] = {0};
    ox_status st = OX_OK;
    const float *Qf = nn_load_f32(c, q, &tmp[0]);
    const float *Kf = Qf ? nn_load_f32(c, k, &tmp[1]) : NULL;
    const float *Vf = Kf ? nn_load_f32(c, v, &tmp[2]) : NULL;
    const float *PK = (Vf && pk) ? nn_load_f32(c, pk, &tmp[3]) : NULL;
    const float *PV = (PK && pv) ? nn_load_f32(c, pv, &tmp[4]) : NULL;
    const float *MF = (Vf && mask && mask->dtype != OX_DT_BOOL) ? nn_load_f32(c, mask, &tmp[5]) : NULL;
    if (!Vf || (pk && !PV) || (mask && mask->dtype != OX_DT_BOOL && !MF)) { st = NN_ST(c); goto done; }
    attn_args a = {.B = B, .Hq = Hq, .Hkv = Hkv, .Sq = Sq, .T = T, .hs = hs, .vs = vs, .Q = Qf,
                   .causal = nn_attr_i(c, "is_causal", 0) != 0, .scale = scale,
                   .softcap = nn_attr_f(c, "softcap", 0.0f),
                   .qk_mode = (int)nn_attr_i(c, "qk_matmul_output_mode", 0)};
    int64_t kst[3], vst[3];
    if (r3) {
        strides3(a.q_st, Sq, Hq, hs), strides3(kst, L, Hkv, hs), strides3(vst, L, Hkv, vs);
        strides3(a.y_st, Sq, Hq, vs);
    } else {
        strides4(a.q_st, Sq, Hq, hs), strides4(kst, L, Hkv, hs), strides4(vst, L, Hkv, vs);
        strides4(a.y_st, Sq, Hq, vs);
    }
    /* The cache and the new keys are two segments: never concatenated
     * unless present_key/present_value are wanted. */
    if (P) {
        a.seg[a.nseg++] = (attn_seg){PK, PV, P, {Hkv * P * hs, P * hs, hs}, {Hkv * P * vs, P * vs, vs}};
    }
    a.seg[a.nseg++] = (attn_seg){Kf, Vf, L, {kst[0], kst[1], kst[2]}, {vst[0], vst[1], vst[2]}};
    if (mask) {
        a.mask = (attn_mask){MF, MF ? NULL : ox_tensor_data(mask),
                             {md[0] == 1 ? 0 : md[1] * md[2] * md[3], md[1] == 1 ? 0 : md[2] * md[3],
                              md[2] == 1 ? 0 : md[3]},
                             md[3]};
    }
    /* Causal rows end at the cache's end plus their index; with
     * nonpad_kv_seqlen (no cache), at the batch's key length minus Sq. */
    per_b = B <= 64 ? pb_stack : malloc((size_t)(2 * B + 1) * sizeof(int64_t));
    if (!per_b) { st = NN_NOMEM(c); goto done; }
    for (int64_t b = 0; b < B; b++) per_b[b] = P;
    if (nonpad) {
        for (int64_t b = 0; b < B; b++) {
            per_b[B + b] = nn_get_i(nonpad, b);
            if (!pk) per_b[b] = per_b[B + b] - Sq;
        }
        a.kv_len = per_b + B;
    }
    a.offset = per_b;
    int64_t yd[4] = {B, Hq, Sq, vs}, y3[3] = {B, Sq, Hq * vs};
    if ((st = nn_fout_new(c, 0, q->dtype, r3 ? 3 : 4, r3 ? y3 : yd, &o[0]))) goto done;
    have[0] = true;
    a.Y = o[0].f;
    if (want_out(c, 3)) {
        int64_t qd[4] = {B, Hq, Sq, T};
        if ((st = nn_fout_new(c, 3, q->dtype, 4, qd, &o[3]))) goto done;
        have[3] = true;
        a.qk = o[3].f;
    }
    if ((st = ox__attn_run(c, &a))) goto done;
    for (int oi = 1; oi <= 2; oi++) {
        if (!want_out(c, oi)) continue;
        int64_t d = oi == 1 ? hs : vs, od[4] = {B, Hkv, T, d};
        if ((st = nn_fout_new(c, oi, oi == 1 ? k->dtype : v->dtype, 4, od, &o[oi]))) goto done;
        have[oi] = true;
        write_present(o[oi].f, oi == 1 ? PK : PV, P, oi == 1 ? Kf : Vf, oi == 1 ? kst : vst, B, Hkv, L, d);
    }
done:
    for (int i = 0; i < 4; i++)
        if (have[i]) {
            if (st) nn_fout_drop(&o[i]);
            else nn_fout_done(&o[i]);
        }
    for (int i = 0; i < 6; i++) free(tmp[i]);
    if (per_b != pb_stack) free(per_b);
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
    if (bi && bi->numel != 2 * D + Dv) return NN_FAIL(c, "bias size mismatch");
    if (ab && (ab->rank != 4 || ab->dims[2] != S || ab->dims[3] != L ||
               (ab->dims[0] != 1 && ab->dims[0] != B) || (ab->dims[1] != 1 && ab->dims[1] != H)))
        return NN_FAIL(c, "attention_bias shape mismatch");
    if (kpm && !(kpm->rank == 2 && kpm->dims[0] == B && kpm->dims[1] == L))
        return nn_fail(c, OX_EUNSUPPORTED, "only 2-D key_padding_mask is supported");
    int64_t hs = D / H, vs = Dv / H;
    float scale = nn_attr_f(c, "scale", 0.0f);
    if (scale == 0.0f) scale = 1.0f / sqrtf((float)hs);
    float mfv = nn_attr_f(c, "mask_filter_value", -10000.0f);
    float *tmp[5] = {0};
    stage sg = {0};
    nn_fout o;
    ox_status st = OX_OK;
    const float *Qf = nn_load_f32(c, q, &tmp[0]);
    const float *Kf = Qf ? nn_load_f32(c, k, &tmp[1]) : NULL;
    const float *Vf = Kf ? nn_load_f32(c, v, &tmp[2]) : NULL;
    const float *Bf = (Vf && bi) ? nn_load_f32(c, bi, &tmp[3]) : NULL;
    const float *ABf = (Vf && ab) ? nn_load_f32(c, ab, &tmp[4]) : NULL;
    if (!Vf || (bi && !Bf) || (ab && !ABf)) { st = NN_ST(c); goto done; }
    /* Staged: Q, K, V plus their bias (only with a bias), the padding mask
     * as an additive row per key. */
    size_t nq = bi ? (size_t)(B * S * D) : 0, nk = bi ? (size_t)(B * L * D) : 0;
    size_t nv = bi ? (size_t)(B * L * Dv) : 0, nm = kpm ? (size_t)(B * L) : 0;
    float *buf = stage_get(&sg, nq + nk + nv + nm);
    if (!buf) { st = NN_NOMEM(c); goto done; }
    if (bi) {
        float *Qb = buf, *Kb = buf + nq, *Vb = Kb + nk;
        for (size_t i = 0; i < nq; i++) Qb[i] = Qf[i] + Bf[i % (size_t)D];
        for (size_t i = 0; i < nk; i++) Kb[i] = Kf[i] + Bf[D + i % (size_t)D];
        for (size_t i = 0; i < nv; i++) Vb[i] = Vf[i] + Bf[2 * D + i % (size_t)Dv];
        Qf = Qb, Kf = Kb, Vf = Vb;
    }
    float *kbias = kpm ? buf + nq + nk + nv : NULL;
    for (size_t i = 0; i < nm; i++) kbias[i] = nn_get_i(kpm, (int64_t)i) == 0 ? mfv : 0.0f;
    attn_args a = {.B = B, .Hq = H, .Hkv = H, .Sq = S, .T = L, .hs = hs, .vs = vs, .Q = Qf,
                   .q_st = {S * D, hs, D}, .nseg = 1, .kbias = kbias,
                   .causal = nn_attr_i(c, "unidirectional", 0) != 0, .scale = scale,
                   .y_st = {S * Dv, vs, Dv}};
    a.seg[0] = (attn_seg){Kf, Vf, L, {L * D, hs, D}, {L * Dv, vs, Dv}};
    if (ab)
        a.mask = (attn_mask){ABf, NULL,
                             {ab->dims[0] == 1 ? 0 : ab->dims[1] * S * L, ab->dims[1] == 1 ? 0 : S * L, L},
                             L};
    int64_t od[3] = {B, S, Dv};
    if ((st = nn_fout_new(c, 0, q->dtype, 3, od, &o))) goto done;
    a.Y = o.f;
    if ((st = ox__attn_run(c, &a))) nn_fout_drop(&o);
    else nn_fout_done(&o);
done:
    for (int i = 0; i < 5; i++) free(tmp[i]);
    stage_done(&sg);
    return st;
}

/* com.microsoft Attention: input [B,S,Din] x weights [Din, 3*D] + bias, with
 * optional mask_index (1-D key lengths or 2-D 0/1 mask), attention_bias and
 * unidirectional. The heads are read in place from the projection. */
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
    /* attention_bias [B or 1, H or 1, S, S] is added to the scores. */
    if (ab && (ab->rank != 4 || (ab->dims[0] != 1 && ab->dims[0] != B) ||
               (ab->dims[1] != 1 && ab->dims[1] != H) || ab->dims[2] != S || ab->dims[3] != S))
        return NN_FAIL(c, "attention_bias shape mismatch");
    if (mi && !(mi->rank == 1 && mi->numel >= B) && !(mi->rank == 2 && mi->dims[0] == B && mi->dims[1] == S))
        return nn_fail(c, OX_EUNSUPPORTED, "mask_index form unsupported");
    int64_t hs = Dq / H, vs = Dv / H;
    float scale = nn_attr_f(c, "scale", 0.0f);
    if (scale == 0.0f) scale = 1.0f / sqrtf((float)hs);
    float mfv = nn_attr_f(c, "mask_filter_value", -10000.0f);
    float *t0 = NULL, *t1 = NULL, *t2 = NULL, *t3 = NULL;
    stage sg = {0};
    nn_fout o;
    ox_status st = OX_OK;
    const float *X = nn_load_f32(c, x, &t0);
    const float *W = X ? nn_load_f32(c, w, &t1) : NULL;
    const float *Bf = (W && bi) ? nn_load_f32(c, bi, &t2) : NULL;
    const float *AB = (W && ab) ? nn_load_f32(c, ab, &t3) : NULL;
    if (!W || (bi && !Bf) || (ab && !AB)) { st = NN_ST(c); goto done; }
    /* Staged: the projection [B*S, Q|K|V] with its bias, and mask_index as
     * an additive row per key ([B, S]). */
    size_t np = (size_t)(B * S * Wn), nm = mi ? (size_t)(B * S) : 0;
    float *P = stage_get(&sg, np + nm);
    if (!P) { st = NN_NOMEM(c); goto done; }
    nn_sgemm_mt(c->pool, false, false, B * S, Wn, Din, 1.0f, X, Din, W, Wn, 0.0f, P, Wn);
    if (Bf)
        for (int64_t r = 0; r < B * S; r++) {
            float *pr = P + r * Wn;
            for (int64_t e = 0; e < Wn; e++) pr[e] += Bf[e];
        }
    float *kbias = mi ? P + np : NULL;
    for (int64_t b = 0; mi && b < B; b++)
        for (int64_t j = 0; j < S; j++) {
            bool masked = mi->rank == 1 ? j >= nn_get_i(mi, b) : nn_get_i(mi, b * S + j) == 0;
            kbias[b * S + j] = masked ? mfv : 0.0f;
        }
    attn_args a = {.B = B, .Hq = H, .Hkv = H, .Sq = S, .T = S, .hs = hs, .vs = vs, .Q = P,
                   .q_st = {S * Wn, hs, Wn}, .nseg = 1, .kbias = kbias,
                   .causal = nn_attr_i(c, "unidirectional", 0) != 0, .scale = scale,
                   .y_st = {S * Dv, vs, Dv}};
    a.seg[0] = (attn_seg){P + Dq, P + Dq + Dk, S, {S * Wn, hs, Wn}, {S * Wn, vs, Wn}};
    if (ab)
        a.mask = (attn_mask){AB, NULL,
                             {ab->dims[0] == 1 ? 0 : ab->dims[1] * S * S, ab->dims[1] == 1 ? 0 : S * S, S},
                             S};
    int64_t od[3] = {B, S, Dv};
    if ((st = nn_fout_new(c, 0, x->dtype, 3, od, &o))) goto done;
    a.Y = o.f;
    if ((st = ox__attn_run(c, &a))) nn_fout_drop(&o);
    else nn_fout_done(&o);
done:
    free(t0); free(t1); free(t2); free(t3);
    stage_done(&sg);
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
