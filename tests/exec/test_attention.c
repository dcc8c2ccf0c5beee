/* The attention cores (src/exec/k_nn/attn_core.c) through the executor:
 * ONNX Attention (opset 23/24), com.microsoft MultiHeadAttention and
 * com.microsoft Attention on seeded random shapes, against double-precision
 * loops written here from the operator definitions (ONNX's reference:
 * softcap before the mask, a mask shorter than the keys padded with -inf,
 * causal rows ending at i + past length, or at i + nonpad_kv_seqlen[b] - Sq
 * without a cache; a row with no visible key gives zeros). Each case runs
 * the tiled core and the scalar one (ONNXSCOPE_ATTN_SCALAR=1) on one or two
 * threads; the shapes include several query and key tiles (ATTN_MQ = 64,
 * ATTN_NK = 256), a key cache whose boundary falls inside a tile, GQA, odd
 * head sizes and every mask broadcast. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "onnxscope/exec.h"
#include "onnxscope/ir.h"

#define OX_TEST_SEED 0x5eed0a77e4710000ull
#include "test_rand.h"

enum { MAXIO = 8 };

typedef struct graph_io {
    ox_model *m;
    ox_graph *g;
    ox_tensor *in[MAXIO];
    int n_in;
} graph_io;

static void gio_init(graph_io *io, int64_t opset, bool ms)
{
    memset(io, 0, sizeof *io);
    io->m = ox_model_new();
    ox_model_set_opset(io->m, "", opset);
    if (ms) ox_model_set_opset(io->m, "com.microsoft", 1);
    io->g = io->m->graph ? io->m->graph : ox_graph_new(io->m, NULL);
    io->m->graph = io->g;
}

/* A graph input named name holding t (NULL: an absent optional input). */
static ox_value *gio_input(graph_io *io, const char *name, ox_tensor *t)
{
    if (!t) return NULL;
    ox_value *v = ox_graph_value(io->g, name);
    v->type = ox_type_new_tensor(t->dtype, t->rank, t->dims);
    assert_int_equal(ox_graph_add_input(io->g, v), OX_OK);
    io->in[io->n_in++] = t;
    return v;
}

/* Plans, runs twice (the second on the arena) and returns the outputs. */
static void gio_run(graph_io *io, int threads, bool scalar, int n_out, ox_rval **outs)
{
    if (scalar) setenv("ONNXSCOPE_ATTN_SCALAR", "1", 1);
    else unsetenv("ONNXSCOPE_ATTN_SCALAR");
    ox_exec_opts o = {.threads = threads};
    ox_exec *e = NULL;
    ox_error err = {0};
    if (ox_exec_new(io->m, &o, &e, &err)) fail_msg("plan: %s", err.msg);
    ox_rval *in[MAXIO];
    for (int i = 0; i < io->n_in; i++) in[i] = ox_rval_tensor(ox_tensor_share(io->in[i]));
    ox_status st = OX_OK;
    for (int r = 0; r < 2 && st == OX_OK; r++) {
        for (int i = 0; i < n_out; i++) {
            ox_rval_free(outs[i]);
            outs[i] = NULL;
        }
        st = ox_exec_run(e, io->n_in, in, n_out, outs, &err);
    }
    if (st) fail_msg("run: %s", err.msg);
    for (int i = 0; i < io->n_in; i++) ox_rval_free(in[i]);
    ox_exec_free(e);
    unsetenv("ONNXSCOPE_ATTN_SCALAR");
}

static void gio_free(graph_io *io)
{
    for (int i = 0; i < io->n_in; i++) ox_tensor_free(io->in[i]);
    ox_model_free(io->m);
}

static void expect_close(const ox_rval *r, const double *want, int64_t n, const char *what,
                         int cs, bool scalar, int threads)
{
    assert_non_null(r);
    assert_int_equal(r->kind, OX_RV_TENSOR);
    if (r->t->numel != n) fail_msg("case %d %s: %lld elements, want %lld", cs, what,
                                   (long long)r->t->numel, (long long)n);
    const float *g = ox_tensor_data(r->t);
    for (int64_t i = 0; i < n; i++)
        if (!(fabs(g[i] - want[i]) <= 1e-4 + 1e-4 * fabs(want[i])))
            fail_msg("case %d %s (%s core, %d thread(s)): element %lld is %.7g, want %.7g", cs, what,
                     scalar ? "scalar" : "tiled", threads, (long long)i, g[i], want[i]);
}

/* softmax over s[0..n) in place; a row with no finite score gives zeros. */
static void ref_softmax(double *s, int64_t n)
{
    double mx = -INFINITY, sum = 0;
    for (int64_t j = 0; j < n; j++) mx = s[j] > mx ? s[j] : mx;
    for (int64_t j = 0; j < n; j++) sum += (s[j] = mx == -INFINITY ? 0 : exp(s[j] - mx));
    for (int64_t j = 0; j < n; j++) s[j] = sum > 0 ? s[j] / sum : 0;
}

static ox_tensor *tensor_f(int rank, const int64_t *d)
{
    return rand_unit_tensor(rank, d);
}

/* ---- ONNX Attention ---------------------------------------------------------- */

static void test_onnx_attention_random(void **state)
{
    (void)state;
    for (int cs = 0; cs < 70; cs++) {
        bool big = cs % 7 == 3;
        bool r3 = rnd() % 2;
        int64_t B = rint_in(1, 2), Hkv = rint_in(1, 3), Hq = Hkv * rint_in(1, 3);
        int64_t Sq = big ? rint_in(65, 140) : rint_in(1, 20);
        int64_t L = big ? rint_in(200, 300) : rint_in(1, 24);
        int64_t P = rnd() % 2 ? (big ? rint_in(10, 90) : rint_in(1, 9)) : 0;
        int64_t hs = rint_in(1, 12), vs = rint_in(1, 12), T = P + L;
        bool causal = rnd() % 3 == 0, softcap = rnd() % 6 == 0, nonpad = rnd() % 4 == 0;
        bool want_present = rnd() % 2, want_qk = !big && rnd() % 5 == 0;
        int qk_mode = want_qk ? (int)(rnd() % 4) : 0;
        int mask_kind = (int)(rnd() % 3); /* 0 none, 1 bool, 2 float */
        float scale_attr = rnd() % 3 == 0 ? 0.05f + (float)(rnd() % 100) / 200.0f : 0.0f;
        graph_io io;
        gio_init(&io, nonpad ? 24 : 23, false);
        int64_t qd[4], kd[4], vd[4];
        if (r3) {
            int64_t a[3] = {B, Sq, Hq * hs}, b[3] = {B, L, Hkv * hs}, c[3] = {B, L, Hkv * vs};
            memcpy(qd, a, sizeof a), memcpy(kd, b, sizeof b), memcpy(vd, c, sizeof c);
        } else {
            int64_t a[4] = {B, Hq, Sq, hs}, b[4] = {B, Hkv, L, hs}, c[4] = {B, Hkv, L, vs};
            memcpy(qd, a, sizeof a), memcpy(kd, b, sizeof b), memcpy(vd, c, sizeof c);
        }
        int rk = r3 ? 3 : 4;
        ox_tensor *Qt = tensor_f(rk, qd), *Kt = tensor_f(rk, kd), *Vt = tensor_f(rk, vd);
        ox_tensor *PKt = NULL, *PVt = NULL, *Mt = NULL, *NPt = NULL;
        if (P) {
            int64_t pk[4] = {B, Hkv, P, hs}, pv[4] = {B, Hkv, P, vs};
            PKt = tensor_f(4, pk), PVt = tensor_f(4, pv);
        }
        /* The mask: rank 1-4, each leading dim broadcast or full, last dim
         * at most T (padded with -inf). */
        int64_t md[4] = {1, 1, 1, 1};
        int mrank = 0;
        if (mask_kind) {
            mrank = (int)rint_in(1, 4);
            int64_t full[3] = {B, Hq, Sq};
            md[3] = rnd() % 4 == 0 ? rint_in(1, T) : T;
            for (int i = 4 - mrank; i < 3; i++) md[i] = rnd() % 2 ? full[i] : 1;
            Mt = ox_tensor_new(mask_kind == 1 ? OX_DT_BOOL : OX_DT_FLOAT, mrank, md + 4 - mrank);
            for (int64_t i = 0; i < Mt->numel; i++) {
                if (mask_kind == 1) ((uint8_t *)ox_tensor_data(Mt))[i] = rnd() % 4 != 0;
                else ((float *)ox_tensor_data(Mt))[i] =
                    rnd() % 8 == 0 ? -INFINITY : -(float)(rnd() % 2000) / 1000.0f;
            }
        }
        if (nonpad) {
            int64_t nd[1] = {B};
            NPt = ox_tensor_new(OX_DT_INT64, 1, nd);
            for (int64_t b = 0; b < B; b++)
                ((int64_t *)ox_tensor_data(NPt))[b] = rnd() % 4 == 0 ? T : rint_in(P ? P : 0, T);
        }
        ox_value *ins[7] = {gio_input(&io, "q", Qt), gio_input(&io, "k", Kt), gio_input(&io, "v", Vt),
                            gio_input(&io, "mask", Mt), gio_input(&io, "pk", PKt),
                            gio_input(&io, "pv", PVt), gio_input(&io, "np", NPt)};
        ox_value *outs[4] = {ox_graph_value(io.g, "y"),
                             want_present ? ox_graph_value(io.g, "present_k") : NULL,
                             want_present ? ox_graph_value(io.g, "present_v") : NULL,
                             want_qk ? ox_graph_value(io.g, "qk") : NULL};
        ox_node *n = ox_node_new(io.g, "Attention", "", "attn", nonpad ? 7 : 6, ins, 4, outs);
        if (r3) {
            ox_node_set_attr_i(n, "q_num_heads", Hq);
            ox_node_set_attr_i(n, "kv_num_heads", Hkv);
        }
        if (causal) ox_node_set_attr_i(n, "is_causal", 1);
        if (softcap) ox_node_set_attr_f(n, "softcap", 1.5f);
        if (want_qk) ox_node_set_attr_i(n, "qk_matmul_output_mode", qk_mode);
        if (scale_attr > 0) ox_node_set_attr_f(n, "scale", scale_attr);
        int n_out = 0;
        for (int i = 0; i < 4; i++)
            if (outs[i]) {
                assert_int_equal(ox_graph_add_output(io.g, outs[i]), OX_OK);
                n_out++;
            }
        /* Reference. */
        const float *Q = ox_tensor_data(Qt), *K = ox_tensor_data(Kt), *V = ox_tensor_data(Vt);
        const float *PK = PKt ? ox_tensor_data(PKt) : NULL, *PV = PVt ? ox_tensor_data(PVt) : NULL;
        double scale = scale_attr > 0 ? scale_attr : 1.0 / sqrt((double)hs);
        double *Y = calloc((size_t)(B * Hq * Sq * vs), sizeof(double));
        double *QK = calloc((size_t)(B * Hq * Sq * T) + 1, sizeof(double));
        double *PKo = calloc((size_t)(B * Hkv * T * hs), sizeof(double));
        double *PVo = calloc((size_t)(B * Hkv * T * vs), sizeof(double));
        double *s = malloc((size_t)T * sizeof(double) + 8);
#define QAT(b, h, i, e) (r3 ? Q[((b) * Sq + (i)) * Hq * hs + (h) * hs + (e)] : Q[(((b) * Hq + (h)) * Sq + (i)) * hs + (e)])
#define KNEW(b, h, j, e) (r3 ? K[((b) * L + (j)) * Hkv * hs + (h) * hs + (e)] : K[(((b) * Hkv + (h)) * L + (j)) * hs + (e)])
#define VNEW(b, h, j, e) (r3 ? V[((b) * L + (j)) * Hkv * vs + (h) * vs + (e)] : V[(((b) * Hkv + (h)) * L + (j)) * vs + (e)])
        for (int64_t b = 0; b < B; b++)
            for (int64_t h = 0; h < Hkv; h++)
                for (int64_t j = 0; j < T; j++) {
                    for (int64_t e = 0; e < hs; e++)
                        PKo[((b * Hkv + h) * T + j) * hs + e] =
                            j < P ? PK[((b * Hkv + h) * P + j) * hs + e] : KNEW(b, h, j - P, e);
                    for (int64_t e = 0; e < vs; e++)
                        PVo[((b * Hkv + h) * T + j) * vs + e] =
                            j < P ? PV[((b * Hkv + h) * P + j) * vs + e] : VNEW(b, h, j - P, e);
                }
        for (int64_t b = 0; b < B; b++) {
            int64_t npb = NPt ? ((const int64_t *)ox_tensor_data(NPt))[b] : T;
            int64_t off = (NPt && !P) ? npb - Sq : P;
            for (int64_t h = 0; h < Hq; h++) {
                int64_t hk = h / (Hq / Hkv);
                for (int64_t i = 0; i < Sq; i++) {
                    double *qk = QK + ((b * Hq + h) * Sq + i) * T;
                    for (int64_t j = 0; j < T; j++) {
                        double d = 0;
                        for (int64_t e = 0; e < hs; e++)
                            d += (double)QAT(b, h, i, e) * PKo[((b * Hkv + hk) * T + j) * hs + e];
                        d *= scale;
                        if (softcap) d = 1.5 * tanh(d / 1.5);
                        if (qk_mode <= 1) qk[j] = d;
                        if (Mt) {
                            if (j >= md[3]) d = -INFINITY;
                            else {
                                int64_t mi = (((md[0] == 1 ? 0 : b) * md[1] + (md[1] == 1 ? 0 : h)) * md[2] +
                                              (md[2] == 1 ? 0 : i)) * md[3] + j;
                                if (mask_kind == 1) d = ((const uint8_t *)ox_tensor_data(Mt))[mi] ? d : -INFINITY;
                                else d += ((const float *)ox_tensor_data(Mt))[mi];
                            }
                        }
                        if (causal && j > i + off) d = -INFINITY;
                        if (j >= npb) d = -INFINITY;
                        s[j] = d;
                        if (qk_mode == 2) qk[j] = d;
                    }
                    ref_softmax(s, T);
                    if (qk_mode == 3) memcpy(qk, s, (size_t)T * sizeof(double));
                    for (int64_t e = 0; e < vs; e++) {
                        double acc = 0;
                        for (int64_t j = 0; j < T; j++) acc += s[j] * PVo[((b * Hkv + hk) * T + j) * vs + e];
                        /* Y in the inputs' layout. */
                        int64_t yi = r3 ? ((b * Sq + i) * Hq + h) * vs + e : (((b * Hq + h) * Sq + i) * vs + e);
                        Y[yi] = acc;
                    }
                }
            }
        }
#undef QAT
#undef KNEW
#undef VNEW
        for (int variant = 0; variant < 2; variant++) {
            bool scalar = variant == 1;
            int threads = (int)rint_in(1, 2);
            ox_rval *r[4] = {0};
            gio_run(&io, threads, scalar, n_out, r);
            int k = 0;
            expect_close(r[k++], Y, B * Hq * Sq * vs, "Y", cs, scalar, threads);
            if (want_present) {
                expect_close(r[k++], PKo, B * Hkv * T * hs, "present_key", cs, scalar, threads);
                expect_close(r[k++], PVo, B * Hkv * T * vs, "present_value", cs, scalar, threads);
            }
            if (want_qk) {
                /* -inf scores compare as equal; NaN never. */
                const float *g = ox_tensor_data(r[k]->t);
                for (int64_t i = 0; i < B * Hq * Sq * T; i++)
                    if (!(g[i] == QK[i] || fabs(g[i] - QK[i]) <= 1e-4 + 1e-4 * fabs(QK[i])))
                        fail_msg("case %d qk mode %d: element %lld is %.7g, want %.7g", cs, qk_mode,
                                 (long long)i, g[i], QK[i]);
            }
            for (int i = 0; i < 4; i++) ox_rval_free(r[i]);
        }
        free(Y), free(QK), free(PKo), free(PVo), free(s);
        gio_free(&io);
    }
}

/* ---- com.microsoft MultiHeadAttention --------------------------------------- */

static void test_ms_mha_random(void **state)
{
    (void)state;
    for (int cs = 0; cs < 30; cs++) {
        bool big = cs % 6 == 2;
        int64_t B = rint_in(1, 2), H = rint_in(1, 4), hs = rint_in(1, 10), vs = rint_in(1, 10);
        int64_t S = big ? rint_in(65, 130) : rint_in(1, 20), L = big ? rint_in(257, 330) : rint_in(1, 20);
        int64_t D = H * hs, Dv = H * vs;
        bool use_bias = rnd() % 2, use_kpm = rnd() % 2, use_ab = rnd() % 2, uni = rnd() % 3 == 0;
        graph_io io;
        gio_init(&io, 17, true);
        int64_t qd[3] = {B, S, D}, kd[3] = {B, L, D}, vd[3] = {B, L, Dv}, bd[1] = {2 * D + Dv};
        int64_t ad[4] = {rnd() % 2 ? B : 1, rnd() % 2 ? H : 1, S, L}, pd[2] = {B, L};
        ox_tensor *Qt = tensor_f(3, qd), *Kt = tensor_f(3, kd), *Vt = tensor_f(3, vd);
        ox_tensor *Bt = use_bias ? tensor_f(1, bd) : NULL, *ABt = use_ab ? tensor_f(4, ad) : NULL;
        ox_tensor *KP = NULL;
        if (use_kpm) {
            KP = ox_tensor_new(OX_DT_INT32, 2, pd);
            for (int64_t i = 0; i < B * L; i++) ((int32_t *)ox_tensor_data(KP))[i] = rnd() % 4 != 0;
        }
        ox_value *ins[6] = {gio_input(&io, "q", Qt), gio_input(&io, "k", Kt), gio_input(&io, "v", Vt),
                            gio_input(&io, "bias", Bt), gio_input(&io, "kpm", KP), gio_input(&io, "ab", ABt)};
        ox_value *y = ox_graph_value(io.g, "y");
        ox_node *n = ox_node_new(io.g, "MultiHeadAttention", "com.microsoft", "mha", 6, ins, 1, &y);
        ox_node_set_attr_i(n, "num_heads", H);
        if (uni) ox_node_set_attr_i(n, "unidirectional", 1);
        assert_int_equal(ox_graph_add_output(io.g, y), OX_OK);
        const float *Q = ox_tensor_data(Qt), *K = ox_tensor_data(Kt), *V = ox_tensor_data(Vt);
        const float *bi = Bt ? ox_tensor_data(Bt) : NULL, *AB = ABt ? ox_tensor_data(ABt) : NULL;
        double *Y = calloc((size_t)(B * S * Dv), sizeof(double)), *s = malloc((size_t)L * sizeof(double));
        for (int64_t b = 0; b < B; b++)
            for (int64_t h = 0; h < H; h++)
                for (int64_t i = 0; i < S; i++) {
                    for (int64_t j = 0; j < L; j++) {
                        double d = 0;
                        for (int64_t e = 0; e < hs; e++)
                            d += ((double)Q[(b * S + i) * D + h * hs + e] + (bi ? bi[h * hs + e] : 0)) *
                                 ((double)K[(b * L + j) * D + h * hs + e] + (bi ? bi[D + h * hs + e] : 0));
                        d /= sqrt((double)hs);
                        if (AB) d += AB[(((ad[0] == 1 ? 0 : b) * ad[1] + (ad[1] == 1 ? 0 : h)) * S + i) * L + j];
                        if (KP && !((const int32_t *)ox_tensor_data(KP))[b * L + j]) d += -10000.0;
                        if (uni && j > i) d = -INFINITY;
                        s[j] = d;
                    }
                    ref_softmax(s, L);
                    for (int64_t e = 0; e < vs; e++) {
                        double acc = 0;
                        for (int64_t j = 0; j < L; j++)
                            acc += s[j] * ((double)V[(b * L + j) * Dv + h * vs + e] + (bi ? bi[2 * D + h * vs + e] : 0));
                        Y[(b * S + i) * Dv + h * vs + e] = acc;
                    }
                }
        for (int variant = 0; variant < 2; variant++) {
            int threads = (int)rint_in(1, 2);
            ox_rval *r = NULL;
            gio_run(&io, threads, variant == 1, 1, &r);
            expect_close(r, Y, B * S * Dv, "MultiHeadAttention", cs, variant == 1, threads);
            ox_rval_free(r);
        }
        free(Y), free(s);
        gio_free(&io);
    }
}

/* ---- com.microsoft Attention ----------------------------------------------- */

static void test_ms_attention_random(void **state)
{
    (void)state;
    for (int cs = 0; cs < 30; cs++) {
        bool big = cs % 6 == 4;
        int64_t B = rint_in(1, 2), H = rint_in(1, 3), hs = rint_in(1, 9), vs = rint_in(1, 9);
        int64_t S = big ? rint_in(257, 300) : rint_in(1, 30), Din = rint_in(1, 16);
        bool sizes = rnd() % 2; /* qkv_hidden_sizes with a value size of its own */
        if (!sizes) vs = hs;
        int64_t D = H * hs, Dv = H * vs, Wn = 2 * D + Dv;
        int mi_kind = (int)(rnd() % 3); /* none, 1-D key lengths, 2-D 0/1 */
        bool use_ab = rnd() % 2, uni = rnd() % 3 == 0;
        graph_io io;
        gio_init(&io, 17, true);
        int64_t xd[3] = {B, S, Din}, wd[2] = {Din, Wn}, bd[1] = {Wn};
        int64_t ad[4] = {rnd() % 2 ? B : 1, rnd() % 2 ? H : 1, S, S};
        ox_tensor *Xt = tensor_f(3, xd), *Wt = tensor_f(2, wd), *Bt = tensor_f(1, bd);
        ox_tensor *ABt = use_ab ? tensor_f(4, ad) : NULL, *MI = NULL;
        if (mi_kind == 1) {
            int64_t d1[1] = {B};
            MI = ox_tensor_new(OX_DT_INT32, 1, d1);
            for (int64_t b = 0; b < B; b++) ((int32_t *)ox_tensor_data(MI))[b] = (int32_t)rint_in(1, S);
        } else if (mi_kind == 2) {
            int64_t d2[2] = {B, S};
            MI = ox_tensor_new(OX_DT_INT32, 2, d2);
            for (int64_t i = 0; i < B * S; i++) ((int32_t *)ox_tensor_data(MI))[i] = rnd() % 4 != 0;
        }
        ox_value *ins[6] = {gio_input(&io, "x", Xt), gio_input(&io, "w", Wt), gio_input(&io, "b", Bt),
                            gio_input(&io, "mi", MI), NULL, gio_input(&io, "ab", ABt)};
        ox_value *y = ox_graph_value(io.g, "y");
        ox_node *n = ox_node_new(io.g, "Attention", "com.microsoft", "att", 6, ins, 1, &y);
        ox_node_set_attr_i(n, "num_heads", H);
        if (uni) ox_node_set_attr_i(n, "unidirectional", 1);
        if (sizes) {
            int64_t qs[3] = {D, D, Dv};
            ox_node_set_attr_ints(n, "qkv_hidden_sizes", 3, qs);
        }
        assert_int_equal(ox_graph_add_output(io.g, y), OX_OK);
        const float *X = ox_tensor_data(Xt), *W = ox_tensor_data(Wt), *bi = ox_tensor_data(Bt);
        const float *AB = ABt ? ox_tensor_data(ABt) : NULL;
        double *P = malloc((size_t)(B * S * Wn) * sizeof(double));
        for (int64_t r = 0; r < B * S; r++)
            for (int64_t c = 0; c < Wn; c++) {
                double acc = bi[c];
                for (int64_t k = 0; k < Din; k++) acc += (double)X[r * Din + k] * W[k * Wn + c];
                P[r * Wn + c] = acc;
            }
        double *Y = calloc((size_t)(B * S * Dv), sizeof(double)), *s = malloc((size_t)S * sizeof(double));
        for (int64_t b = 0; b < B; b++)
            for (int64_t h = 0; h < H; h++)
                for (int64_t i = 0; i < S; i++) {
                    for (int64_t j = 0; j < S; j++) {
                        double d = 0;
                        for (int64_t e = 0; e < hs; e++)
                            d += P[(b * S + i) * Wn + h * hs + e] * P[(b * S + j) * Wn + D + h * hs + e];
                        d /= sqrt((double)hs);
                        if (AB) d += AB[(((ad[0] == 1 ? 0 : b) * ad[1] + (ad[1] == 1 ? 0 : h)) * S + i) * S + j];
                        if (mi_kind == 1 && j >= ((const int32_t *)ox_tensor_data(MI))[b]) d += -10000.0;
                        if (mi_kind == 2 && !((const int32_t *)ox_tensor_data(MI))[b * S + j]) d += -10000.0;
                        if (uni && j > i) d = -INFINITY;
                        s[j] = d;
                    }
                    ref_softmax(s, S);
                    for (int64_t e = 0; e < vs; e++) {
                        double acc = 0;
                        for (int64_t j = 0; j < S; j++) acc += s[j] * P[(b * S + j) * Wn + 2 * D + h * vs + e];
                        Y[(b * S + i) * Dv + h * vs + e] = acc;
                    }
                }
        for (int variant = 0; variant < 2; variant++) {
            int threads = (int)rint_in(1, 2);
            ox_rval *r = NULL;
            gio_run(&io, threads, variant == 1, 1, &r);
            expect_close(r, Y, B * S * Dv, "com.microsoft Attention", cs, variant == 1, threads);
            ox_rval_free(r);
        }
        free(P), free(Y), free(s);
        gio_free(&io);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_onnx_attention_random),
        cmocka_unit_test(test_ms_mha_random),
        cmocka_unit_test(test_ms_attention_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
