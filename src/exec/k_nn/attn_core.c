/* The attention cores (attn_core.h): a tiled one with an online softmax
 * for the common case, a scalar one for softcap and the QK output modes. */
#include "nn_common.h"
#include "attn_core.h"
#include "attn_fast.h"
#include "exec/env_flag.h"
#include "onnxscope/threadpool.h"

/* Adds the mask terms to the scores of query rows i0 .. i0+mq and global
 * key columns j0 .. j0+nk (row r at S + r*lds); masked scores become -inf. */
static void mask_tile(const attn_args *a, int64_t b, int64_t h, int64_t i0, int64_t mq,
                      int64_t j0, int64_t nk, float *S, int64_t lds)
{
    const attn_mask *mk = &a->mask;
    int64_t kvl = a->kv_len ? a->kv_len[b] : a->T;
    for (int64_t r = 0; r < mq; r++) {
        int64_t i = i0 + r;
        float *row = S + r * lds;
        if (mk->f || mk->u8) {
            int64_t base = b * mk->st[0] + h * mk->st[1] + i * mk->st[2] + j0;
            int64_t nin = mk->cols - j0;
            nin = nin < 0 ? 0 : nin > nk ? nk : nin;
            if (mk->f) ox__attn_row_add(row, mk->f + base, nin);
            else ox__attn_row_keep(row, mk->u8 + base, nin);
            for (int64_t j = nin; j < nk; j++) row[j] = -INFINITY;
        }
        if (a->kbias) ox__attn_row_add(row, a->kbias + b * a->T + j0, nk);
        int64_t lim = kvl - j0; /* first masked column of the tile */
        if (a->causal) {
            int64_t c = i + (a->offset ? a->offset[b] : 0) + 1 - j0;
            if (c < lim) lim = c;
        }
        for (int64_t j = lim < 0 ? 0 : lim; j < nk; j++) row[j] = -INFINITY;
    }
}

typedef struct attn_job {
    const attn_args *a;
    int64_t nqt; /* query tiles per (batch, head) */
    bool failed;
} attn_job;

/* Work items t0 .. t1 of (batch, head, query tile): for each, key tiles of
 * each segment in turn, scores by one GEMM, mask, online softmax (running
 * max m and sum l per row; the output rows so far rescaled when the max
 * grows), then P V accumulated straight into Y, divided by l at the end. */
static void attn_tiles(void *ctx, int64_t t0, int64_t t1)
{
    attn_job *job = ctx;
    const attn_args *a = job->a;
    float *S = nn_scratch(3, (size_t)ATTN_MQ * ATTN_NK + 2 * ATTN_MQ);
    if (!S) {
        job->failed = true;
        return;
    }
    float *m = S + (size_t)ATTN_MQ * ATTN_NK, *l = m + ATTN_MQ;
    int64_t rep = a->Hq / a->Hkv;
    for (int64_t t = t0; t < t1; t++) {
        int64_t bh = t / job->nqt, i0 = (t % job->nqt) * ATTN_MQ;
        int64_t b = bh / a->Hq, h = bh % a->Hq, hk = h / rep;
        int64_t mq = a->Sq - i0 < ATTN_MQ ? a->Sq - i0 : ATTN_MQ;
        const float *Qt = a->Q + b * a->q_st[0] + h * a->q_st[1] + i0 * a->q_st[2];
        float *Yt = a->Y + b * a->y_st[0] + h * a->y_st[1] + i0 * a->y_st[2];
        int64_t ldy = a->y_st[2];
        /* Columns past jlim are masked for every row of the tile: skipped. */
        int64_t jlim = a->T;
        if (a->kv_len && a->kv_len[b] < jlim) jlim = a->kv_len[b] < 0 ? 0 : a->kv_len[b];
        if (a->causal) {
            int64_t c = i0 + mq + (a->offset ? a->offset[b] : 0);
            if (c < jlim) jlim = c < 0 ? 0 : c;
        }
        for (int64_t r = 0; r < mq; r++) {
            m[r] = -INFINITY;
            l[r] = 0;
        }
        bool first = true;
        int64_t g0 = 0;
        for (int s = 0; s < a->nseg; g0 += a->seg[s].len, s++) {
            const attn_seg *sg = &a->seg[s];
            for (int64_t jj = 0; jj < sg->len && g0 + jj < jlim; jj += ATTN_NK) {
                int64_t nk = sg->len - jj < ATTN_NK ? sg->len - jj : ATTN_NK;
                if (jlim - (g0 + jj) < nk) nk = jlim - (g0 + jj);
                const float *Kt = sg->K + b * sg->k_st[0] + hk * sg->k_st[1] + jj * sg->k_st[2];
                const float *Vt = sg->V + b * sg->v_st[0] + hk * sg->v_st[1] + jj * sg->v_st[2];
                nn_sgemm(false, true, mq, nk, a->hs, a->scale, Qt, a->q_st[2], Kt, sg->k_st[2],
                         0.0f, S, ATTN_NK);
                mask_tile(a, b, h, i0, mq, g0 + jj, nk, S, ATTN_NK);
                for (int64_t r = 0; r < mq; r++) {
                    float *row = S + r * ATTN_NK;
                    float mt = ox__attn_row_max(row, nk);
                    if (mt == -INFINITY) { /* nothing visible in this tile */
                        memset(row, 0, (size_t)nk * sizeof(float));
                        continue;
                    }
                    float mn = mt > m[r] ? mt : m[r];
                    if (m[r] != -INFINITY && mn > m[r]) {
                        float corr = expf(m[r] - mn);
                        l[r] *= corr;
                        if (!first) ox__attn_row_scale(Yt + r * ldy, a->vs, corr);
                    }
                    l[r] += ox__attn_row_exp(row, nk, mn);
                    m[r] = mn;
                }
                nn_sgemm(false, false, mq, a->vs, nk, 1.0f, S, ATTN_NK, Vt, sg->v_st[2],
                         first ? 0.0f : 1.0f, Yt, ldy);
                first = false;
            }
        }
        /* A row that saw no visible key yields zeros, not NaN. */
        for (int64_t r = 0; r < mq; r++) {
            float *y = Yt + r * ldy;
            if (first) memset(y, 0, (size_t)a->vs * sizeof(float));
            else ox__attn_row_scale(y, a->vs, l[r] > 0 ? 1.0f / l[r] : 0.0f);
        }
    }
}

static const float *seg_row(const attn_args *a, bool value, int64_t b, int64_t hk, int64_t j)
{
    int s = 0;
    while (s + 1 < a->nseg && j >= a->seg[s].len) j -= a->seg[s++].len;
    const attn_seg *sg = &a->seg[s];
    const int64_t *st = value ? sg->v_st : sg->k_st;
    return (value ? sg->V : sg->K) + b * st[0] + hk * st[1] + j * st[2];
}

/* Rows of (batch, head) pairs b0 .. b1, one query at a time over all T
 * keys: softcap (d = softcap * tanh(d / softcap)) before the mask, and the
 * qk_matmul_output modes (0/1: the capped product, 2: plus the mask,
 * 3: the probabilities). */
static void attn_rows(void *ctx, int64_t b0, int64_t b1)
{
    attn_job *job = ctx;
    const attn_args *a = job->a;
    float *s = nn_scratch(3, 2 * (size_t)a->T + 2);
    if (!s) {
        job->failed = true;
        return;
    }
    float *raw = s + a->T + 1;
    int64_t rep = a->Hq / a->Hkv;
    float sq = sqrtf(a->scale);
    for (int64_t bh = b0; bh < b1; bh++) {
        int64_t b = bh / a->Hq, h = bh % a->Hq, hk = h / rep;
        for (int64_t i = 0; i < a->Sq; i++) {
            const float *q = a->Q + b * a->q_st[0] + h * a->q_st[1] + i * a->q_st[2];
            for (int64_t j = 0; j < a->T; j++) {
                const float *k = seg_row(a, false, b, hk, j);
                float d = 0;
                /* The reference scales both operands by sqrt(scale). */
                for (int64_t e = 0; e < a->hs; e++) d += (q[e] * sq) * (k[e] * sq);
                if (a->softcap > 0) d = a->softcap * tanhf(d / a->softcap);
                raw[j] = s[j] = d;
            }
            mask_tile(a, b, h, i, 1, 0, a->T, s, a->T);
            float mx = ox__attn_row_max(s, a->T);
            float *qo = a->qk ? a->qk + ((b * a->Hq + h) * a->Sq + i) * a->T : NULL;
            if (qo && a->qk_mode <= 1) memcpy(qo, raw, (size_t)a->T * sizeof(float));
            if (qo && a->qk_mode == 2) memcpy(qo, s, (size_t)a->T * sizeof(float));
            double sum = 0;
            for (int64_t j = 0; j < a->T; j++) {
                s[j] = (mx == -INFINITY) ? 0.0f : expf(s[j] - mx);
                sum += s[j];
            }
            for (int64_t j = 0; j < a->T; j++) s[j] = sum > 0 ? (float)(s[j] / sum) : 0.0f;
            if (qo && a->qk_mode == 3) memcpy(qo, s, (size_t)a->T * sizeof(float));
            float *y = a->Y + b * a->y_st[0] + h * a->y_st[1] + i * a->y_st[2];
            for (int64_t e = 0; e < a->vs; e++) y[e] = 0;
            for (int64_t j = 0; j < a->T; j++) {
                float p = s[j];
                if (p == 0.0f) continue;
                const float *v = seg_row(a, true, b, hk, j);
                for (int64_t e = 0; e < a->vs; e++) y[e] += p * v[e];
            }
        }
    }
}

ox_status ox__attn_run(ox_kernel_ctx *c, attn_args *a)
{
    if (a->Hkv < 1 || a->Hq % a->Hkv) return NN_FAIL(c, "q heads must be a multiple of kv heads");
    if (a->B <= 0 || a->Hq <= 0 || a->Sq <= 0 || a->vs <= 0) return OX_OK;
    bool scalar = a->softcap > 0 || a->qk || ox__env_on("ONNXSCOPE_ATTN_SCALAR");
    attn_job job = {a, (a->Sq + ATTN_MQ - 1) / ATTN_MQ, false};
    if (scalar) ox_parallel_for(c->pool, a->B * a->Hq, 1, attn_rows, &job);
    else ox_parallel_for(c->pool, a->B * a->Hq * job.nqt, 1, attn_tiles, &job);
    return job.failed ? NN_NOMEM(c) : OX_OK;
}
