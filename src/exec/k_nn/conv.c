/* Convolutions: Conv, ConvTranspose, ConvInteger, QLinearConv and the
 * com.microsoft FusedConv, for 1 to 3 spatial dimensions. Conv lowers each
 * (batch, group) to im2col + SGEMM; ConvTranspose to GEMM + col2im. */
#include "nn_common.h"
#include "onnxscope/threadpool.h"

#define SP 3 /* spatial dims handled; lower ranks are padded with size-1 dims */

typedef struct conv_geom {
    int nsp;                              /* real spatial dims (1..3) */
    int64_t in[SP], k[SP], s[SP], d[SP], pb[SP], pe[SP], out[SP];
    int64_t in_sz, k_sz, out_sz;
} conv_geom;

/* Moves the nsp real spatial entries to the end of a[SP] and fills the
 * front with `fill`: the innermost loops then run over the real last
 * (contiguous) axis instead of a padded size-1 one. */
static void align_right(int nsp, int64_t *a, int64_t fill)
{
    int o = SP - nsp;
    for (int i = SP - 1; i >= 0; i--) a[i] = i >= o ? a[i - o] : fill;
}

static void geom_align(int nsp, int64_t *in, int64_t *k, int64_t *s, int64_t *d, int64_t *pb,
                       int64_t *pe, int64_t *out)
{
    align_right(nsp, in, 1);
    align_right(nsp, k, 1);
    align_right(nsp, s, 1);
    align_right(nsp, d, 1);
    align_right(nsp, pb, 0);
    align_right(nsp, pe, 0);
    align_right(nsp, out, 1);
}

/* Reads kernel_shape/strides/dilations/pads/auto_pad and computes output
 * sizes for Conv-style (transpose = false) ops. ksp = kernel spatial dims from W. */
static ox_status conv_geom_init(ox_kernel_ctx *c, int nsp, const int64_t *xsp,
                                const int64_t *ksp, conv_geom *g)
{
    if (nsp < 1 || nsp > SP) return nn_fail(c, OX_EUNSUPPORTED, "%d spatial dims unsupported", nsp);
    memset(g, 0, sizeof *g);
    g->nsp = nsp;
    int64_t ks[SP], st[SP], dl[SP], pads[2 * SP];
    int nk = nn_attr_ints(c, "kernel_shape", ks, SP);
    int ns = nn_attr_ints(c, "strides", st, SP);
    int nd = nn_attr_ints(c, "dilations", dl, SP);
    int np = nn_attr_ints(c, "pads", pads, 2 * SP);
    if ((nk >= 0 && nk != nsp) || (ns >= 0 && ns != nsp) || (nd >= 0 && nd != nsp) ||
        (np >= 0 && np != 2 * nsp) || nk == -2 || ns == -2 || nd == -2 || np == -2)
        return NN_FAIL(c, "attribute lengths do not match %d spatial dims", nsp);
    const char *ap = nn_attr_s(c, "auto_pad", "NOTSET");
    for (int i = 0; i < SP; i++) {
        g->in[i] = g->k[i] = g->s[i] = g->d[i] = g->out[i] = 1;
        g->pb[i] = g->pe[i] = 0;
    }
    for (int i = 0; i < nsp; i++) {
        g->in[i] = xsp[i];
        g->k[i] = nk >= 0 ? ks[i] : ksp[i];
        if (nk >= 0 && ksp && ks[i] != ksp[i]) return NN_FAIL(c, "kernel_shape does not match W");
        g->s[i] = ns >= 0 ? st[i] : 1;
        g->d[i] = nd >= 0 ? dl[i] : 1;
        const char *why = nn_window_dim(ap, g->in[i], g->k[i], g->s[i], g->d[i], np >= 0,
                                        np >= 0 ? pads[i] : 0, np >= 0 ? pads[i + nsp] : 0,
                                        false, &g->pb[i], &g->pe[i], &g->out[i]);
        if (why) return NN_FAIL(c, "%s", why);
    }
    geom_align(nsp, g->in, g->k, g->s, g->d, g->pb, g->pe, g->out);
    g->in_sz = nn_prod(g->in, SP);
    g->k_sz = nn_prod(g->k, SP);
    g->out_sz = nn_prod(g->out, SP);
    return OX_OK;
}

/* Columns of output rows [r0, r1) (a row = one run of out[2] positions):
 * col[(ci*k_sz + kk) * cols + o] = x[ci, input position of (kk, o)] or 0,
 * cols = (r1 - r0) * out[2]. Row tiles keep the buffer cache-sized. */
#define DEFINE_IM2COL(name, T)                                                          \
    static void name(const conv_geom *g, int64_t channels, const T *x, T *col,          \
                     int64_t r0, int64_t r1)                                            \
    {                                                                                   \
        int64_t cols = (r1 - r0) * g->out[2];                                           \
        for (int64_t ci = 0; ci < channels; ci++) {                                     \
            const T *xc = x + ci * g->in_sz;                                            \
            for (int64_t kz = 0; kz < g->k[0]; kz++)                                    \
            for (int64_t ky = 0; ky < g->k[1]; ky++)                                    \
            for (int64_t kx = 0; kx < g->k[2]; kx++) {                                  \
                T *row = col;                                                           \
                col += cols;                                                            \
                int64_t off = kx * g->d[2] - g->pb[2], sx = g->s[2];                    \
                /* [lo, hi): outputs whose input column is inside. */                   \
                int64_t lo = off < 0 ? (-off + sx - 1) / sx : 0;                        \
                int64_t hi = g->in[2] - off <= 0 ? 0 : (g->in[2] - off - 1) / sx + 1;   \
                if (hi > g->out[2]) hi = g->out[2];                                     \
                if (lo > hi) lo = hi;                                                   \
                for (int64_t rr = r0; rr < r1; rr++) {                                  \
                    int64_t oz = rr / g->out[1], oy = rr % g->out[1];                   \
                    int64_t iz = oz * g->s[0] - g->pb[0] + kz * g->d[0];                \
                    int64_t iy = oy * g->s[1] - g->pb[1] + ky * g->d[1];                \
                    T *r = row + (rr - r0) * g->out[2];                                 \
                    if (iz < 0 || iz >= g->in[0] || iy < 0 || iy >= g->in[1]) {         \
                        for (int64_t ox = 0; ox < g->out[2]; ox++) r[ox] = 0;           \
                        continue;                                                       \
                    }                                                                   \
                    const T *xr = xc + (iz * g->in[1] + iy) * g->in[2];                 \
                    for (int64_t ox = 0; ox < lo; ox++) r[ox] = 0;                      \
                    if (sx == 1)                                                        \
                        memcpy(r + lo, xr + lo + off, (size_t)(hi - lo) * sizeof(T));   \
                    else                                                                \
                        for (int64_t ox = lo; ox < hi; ox++) r[ox] = xr[ox * sx + off]; \
                    for (int64_t ox = hi; ox < g->out[2]; ox++) r[ox] = 0;              \
                }                                                                       \
            }                                                                           \
        }                                                                               \
    }
DEFINE_IM2COL(im2col_f, float)
DEFINE_IM2COL(im2col_i, int32_t)

static bool geom_is_pointwise(const conv_geom *g)
{
    for (int i = 0; i < SP; i++)
        if (g->k[i] != 1 || g->s[i] != 1 || g->pb[i] || g->pe[i]) return false;
    return true;
}

/* Checks X [N, C, sp...] / W [M, C/group, k...] and fills geometry. */
static ox_status conv_check(ox_kernel_ctx *c, const ox_tensor *x, const ox_tensor *w,
                            int64_t group, conv_geom *g)
{
    if (!x || !w) return NN_FAIL(c, "needs X and W");
    if (x->rank < 3 || w->rank != x->rank) return NN_FAIL(c, "X and W must have equal rank >= 3");
    if (group < 1 || x->dims[1] % group || w->dims[0] % group || x->dims[1] / group != w->dims[1])
        return NN_FAIL(c, "channels do not match group %lld", (long long)group);
    return conv_geom_init(c, x->rank - 2, x->dims + 2, w->dims + 2, g);
}

/* y[o] = bias + sum_k w[k] * x[in(o, k)] for one channel, zero padding. */
static void depthwise(const conv_geom *g, const float *x, const float *w, float bias, float *y)
{
    for (int64_t oz = 0; oz < g->out[0]; oz++)
        for (int64_t oy = 0; oy < g->out[1]; oy++) {
            float *yr = y + (oz * g->out[1] + oy) * g->out[2];
            for (int64_t ox = 0; ox < g->out[2]; ox++) yr[ox] = bias;
            for (int64_t kz = 0; kz < g->k[0]; kz++) {
                int64_t iz = oz * g->s[0] - g->pb[0] + kz * g->d[0];
                if (iz < 0 || iz >= g->in[0]) continue;
                for (int64_t ky = 0; ky < g->k[1]; ky++) {
                    int64_t iy = oy * g->s[1] - g->pb[1] + ky * g->d[1];
                    if (iy < 0 || iy >= g->in[1]) continue;
                    const float *xr = x + (iz * g->in[1] + iy) * g->in[2];
                    const float *wr = w + (kz * g->k[1] + ky) * g->k[2];
                    for (int64_t kx = 0; kx < g->k[2]; kx++) {
                        float wv = wr[kx];
                        int64_t off = kx * g->d[2] - g->pb[2];
                        /* Output range whose input column stays inside. */
                        int64_t lo = off < 0 ? (-off + g->s[2] - 1) / g->s[2] : 0;
                        int64_t hi = g->in[2] - off <= 0 ? 0 : (g->in[2] - off - 1) / g->s[2] + 1;
                        if (hi > g->out[2]) hi = g->out[2];
                        if (g->s[2] == 1)
                            for (int64_t ox = lo; ox < hi; ox++) yr[ox] += wv * xr[ox + off];
                        else
                            for (int64_t ox = lo; ox < hi; ox++) yr[ox] += wv * xr[ox * g->s[2] + off];
                    }
                }
            }
        }
}

/* One (image, group) GEMM per item; workers own their im2col buffer. */
typedef struct conv_job {
    const conv_geom *g;
    const float *X, *W, *B;
    float *Y;
    int64_t C, M, Cg, Mg, group;
    bool pointwise;
    ox_thread_pool *pool; /* for the GEMM itself when items run serially */
    bool failed;
} conv_job;

/* Output columns per im2col tile: the tile ([kdim x ~512] floats) stays
 * in cache and its buffer is reused, instead of a full-image im2col. */
#define TILE_COLS 512

static void conv_items(void *ctx, int64_t b, int64_t e)
{
    conv_job *j = ctx;
    const conv_geom *g = j->g;
    int64_t kdim = j->Cg * g->k_sz, rows = g->out[0] * g->out[1];
    int64_t tile_rows = g->out[2] >= TILE_COLS ? 1 : TILE_COLS / (g->out[2] ? g->out[2] : 1);
    if (tile_rows > rows) tile_rows = rows;
    float *col = NULL;
    if (!j->pointwise) {
        col = nn_scratch(1, (size_t)(kdim * tile_rows * g->out[2] + 1));
        if (!col) { j->failed = true; return; }
    }
    for (int64_t it = b; it < e; it++) {
        int64_t n = it / j->group, gi = it % j->group;
        const float *xg = j->X + (n * j->C + gi * j->Cg) * g->in_sz;
        float *yg = j->Y + (n * j->M + gi * j->Mg) * g->out_sz;
        const float *wg = j->W + gi * j->Mg * kdim;
        if (j->Cg == 1 && j->Mg == 1) {
            /* Depthwise: a direct stencil beats a one-row GEMM. */
            depthwise(g, xg, wg, j->B ? j->B[gi] : 0.0f, yg);
            continue;
        }
        float beta = 0.0f;
        if (j->B) {
            for (int64_t m = 0; m < j->Mg; m++)
                for (int64_t p = 0; p < g->out_sz; p++) yg[m * g->out_sz + p] = j->B[gi * j->Mg + m];
            beta = 1.0f;
        }
        if (j->pointwise) {
            nn_sgemm_mt(j->pool, false, false, j->Mg, g->out_sz, kdim, 1.0f, wg, kdim, xg,
                        g->out_sz, beta, yg, g->out_sz);
            continue;
        }
        for (int64_t r0 = 0; r0 < rows; r0 += tile_rows) {
            int64_t r1 = r0 + tile_rows < rows ? r0 + tile_rows : rows;
            int64_t cols = (r1 - r0) * g->out[2];
            im2col_f(g, j->Cg, xg, col, r0, r1);
            nn_sgemm_mt(j->pool, false, false, j->Mg, cols, kdim, 1.0f, wg, kdim, col, cols, beta,
                        yg + r0 * g->out[2], g->out_sz);
        }
    }
}

/* Float convolution into y (N, M, out...). act may be NULL; z (same shape
 * as y) is added before the activation when given (FusedConv's Z). */
static ox_status conv_run_f(ox_kernel_ctx *c, const ox_tensor *x, const ox_tensor *w,
                            const ox_tensor *b, const ox_tensor *z, const nn_act *act)
{
    int64_t group = nn_attr_i(c, "group", 1);
    conv_geom g;
    ox_status st = conv_check(c, x, w, group, &g);
    if (st) return st;
    if (!nn_is_float_dt(x->dtype) || x->dtype != w->dtype) return NN_FAIL(c, "needs float X and W");
    int64_t N = x->dims[0], C = x->dims[1], M = w->dims[0];
    if (b && b->numel != M) return NN_FAIL(c, "bias has %lld elements, want %lld", (long long)b->numel, (long long)M);
    int64_t od[OX_MAX_RANK];
    od[0] = N;
    od[1] = M;
    for (int i = 0; i < g.nsp; i++) od[2 + i] = g.out[SP - g.nsp + i];
    if (z && (z->rank != x->rank || z->numel != N * M * g.out_sz)) return NN_FAIL(c, "Z shape mismatch");
    float *tx = NULL, *tw = NULL, *tb = NULL, *tz = NULL;
    const float *X = nn_load_f32(c, x, &tx);
    const float *W = X ? nn_load_f32(c, w, &tw) : NULL;
    const float *B = (W && b) ? nn_load_f32(c, b, &tb) : NULL;
    const float *Z = (W && z) ? nn_load_f32(c, z, &tz) : NULL;
    nn_fout o = {0};
    if (!X || !W || (b && !B) || (z && !Z)) { st = NN_ST(c); goto done; }
    st = nn_fout_new(c, 0, x->dtype, x->rank, od, &o);
    if (st) goto done;
    conv_job j = {&g, X, W, B, o.f, C, M, C / group, M / group, group, geom_is_pointwise(&g),
                  NULL, false};
    int threads = ox_thread_pool_size(c->pool);
    int64_t items = N * group;
    if (threads > 1 && items >= threads) {
        /* Enough independent (image, group) items: one per task. */
        ox_parallel_for(c->pool, items, 1, conv_items, &j);
    } else {
        j.pool = c->pool;
        conv_items(&j, 0, items);
    }
    if (j.failed) { st = NN_NOMEM(c); nn_fout_drop(&o); goto done; }
    if (Z || act) {
        int64_t tot = N * M * g.out_sz;
        for (int64_t i = 0; i < tot; i++) {
            float v = o.f[i] + (Z ? Z[i] : 0.0f);
            o.f[i] = act ? nn_act_apply(act, v) : v;
        }
    }
    nn_fout_done(&o);
done:
    free(tx); free(tw); free(tb); free(tz);
    return st;
}

NN_KERNEL(conv)
{
    return conv_run_f(c, ox_kernel_in(c, 0), ox_kernel_in(c, 1), ox_kernel_in(c, 2), NULL, NULL);
}

/* com.microsoft FusedConv: Conv + optional Z + activation. */
NN_KERNEL(fused_conv)
{
    const char *an = nn_attr_s(c, "activation", "");
    const float *ap = NULL;
    int na = nn_attr_floats(c, "activation_params", &ap);
    nn_act act;
    if (!nn_act_parse(an, na >= 1 ? ap[0] : 0, na >= 2 ? ap[1] : 0, na >= 1, na >= 2, &act))
        return nn_fail(c, OX_EUNSUPPORTED, "activation '%s' unsupported", an);
    return conv_run_f(c, ox_kernel_in(c, 0), ox_kernel_in(c, 1), ox_kernel_in(c, 2),
                      ox_kernel_in(c, 3), an[0] ? &act : NULL);
}

/* ---- ConvTranspose ------------------------------------------------------------ */

NN_KERNEL(conv_transpose)
{
    const ox_tensor *x = ox_kernel_in(c, 0), *w = ox_kernel_in(c, 1), *b = ox_kernel_in(c, 2);
    if (!x || !w) return NN_FAIL(c, "needs X and W");
    if (x->rank < 3 || w->rank != x->rank) return NN_FAIL(c, "X and W must have equal rank >= 3");
    if (!nn_is_float_dt(x->dtype) || x->dtype != w->dtype) return NN_FAIL(c, "needs float X and W");
    int nsp = x->rank - 2;
    if (nsp > SP) return nn_fail(c, OX_EUNSUPPORTED, "%d spatial dims unsupported", nsp);
    int64_t group = nn_attr_i(c, "group", 1);
    int64_t N = x->dims[0], C = x->dims[1];
    if (group < 1 || C % group || w->dims[0] != C) return NN_FAIL(c, "channels do not match W/group");
    int64_t Mg = w->dims[1], M = Mg * group;
    if (b && b->numel != M) return NN_FAIL(c, "bias size mismatch");
    conv_geom g;
    memset(&g, 0, sizeof g);
    g.nsp = nsp;
    int64_t ks[SP], st_[SP], dl[SP], pads[2 * SP], op[SP], osh[OX_MAX_RANK];
    int nk = nn_attr_ints(c, "kernel_shape", ks, SP);
    int ns = nn_attr_ints(c, "strides", st_, SP);
    int nd = nn_attr_ints(c, "dilations", dl, SP);
    int np = nn_attr_ints(c, "pads", pads, 2 * SP);
    int no = nn_attr_ints(c, "output_padding", op, SP);
    int nos = nn_attr_ints(c, "output_shape", osh, OX_MAX_RANK);
    if ((ns >= 0 && ns != nsp) || (nd >= 0 && nd != nsp) || (np >= 0 && np != 2 * nsp) ||
        (no >= 0 && no != nsp) || (nk >= 0 && nk != nsp) || (nos >= 0 && nos != nsp && nos != nsp + 2))
        return NN_FAIL(c, "attribute lengths do not match %d spatial dims", nsp);
    const char *ap = nn_attr_s(c, "auto_pad", "NOTSET");
    for (int i = 0; i < SP; i++) {
        g.in[i] = g.k[i] = g.s[i] = g.d[i] = g.out[i] = 1;
        g.pb[i] = g.pe[i] = 0;
    }
    for (int i = 0; i < nsp; i++) {
        g.in[i] = x->dims[2 + i];
        g.k[i] = w->dims[2 + i];
        g.s[i] = ns >= 0 ? st_[i] : 1;
        g.d[i] = nd >= 0 ? dl[i] : 1;
        if (g.s[i] < 1 || g.d[i] < 1) return NN_FAIL(c, "bad stride/dilation");
        int64_t opad = no >= 0 ? op[i] : 0;
        int64_t natural = g.s[i] * (g.in[i] - 1) + opad + (g.k[i] - 1) * g.d[i] + 1;
        /* As the ONNX reference: pads are derived only under SAME_* without
         * explicit pads; otherwise output_shape just crops or extends. */
        bool same = !strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER");
        int64_t want = nos >= 0 ? osh[nos - nsp + i] : -1;
        if (same && np < 0) {
            if (want < 0) want = g.in[i] * g.s[i];
            int64_t tot = natural - want;
            g.pb[i] = !strcmp(ap, "SAME_UPPER") ? tot / 2 : tot - tot / 2;
            g.pe[i] = tot - g.pb[i];
            g.out[i] = want;
        } else {
            if (np >= 0) { g.pb[i] = pads[i]; g.pe[i] = pads[i + nsp]; }
            g.out[i] = want >= 0 ? want : natural - g.pb[i] - g.pe[i];
        }
        if (g.out[i] < 0) return NN_FAIL(c, "negative output size");
    }
    geom_align(nsp, g.in, g.k, g.s, g.d, g.pb, g.pe, g.out);
    g.in_sz = nn_prod(g.in, SP);
    g.k_sz = nn_prod(g.k, SP);
    g.out_sz = nn_prod(g.out, SP);
    int64_t od[OX_MAX_RANK];
    od[0] = N;
    od[1] = M;
    for (int i = 0; i < nsp; i++) od[2 + i] = g.out[SP - g.nsp + i];

    ox_status st = OX_OK;
    float *tx = NULL, *tw = NULL, *tb = NULL, *col = NULL;
    const float *X = nn_load_f32(c, x, &tx);
    const float *W = X ? nn_load_f32(c, w, &tw) : NULL;
    const float *B = (W && b) ? nn_load_f32(c, b, &tb) : NULL;
    nn_fout o = {0};
    if (!X || !W || (b && !B)) { st = NN_ST(c); goto done; }
    st = nn_fout_new(c, 0, x->dtype, x->rank, od, &o);
    if (st) goto done;
    int64_t Cg = C / group, rows = Mg * g.k_sz;
    col = malloc((size_t)(rows * g.in_sz > 0 ? rows * g.in_sz : 1) * sizeof(float));
    if (!col) { st = NN_NOMEM(c); nn_fout_drop(&o); goto done; }
    for (int64_t n = 0; n < N; n++) {
        for (int64_t gi = 0; gi < group; gi++) {
            /* col[Mg*k_sz, in_sz] = W_g^T [Mg*k_sz, Cg] * X_g [Cg, in_sz] */
            nn_sgemm_mt(c->pool, true, false, rows, g.in_sz, Cg, 1.0f, W + gi * Cg * rows, rows,
                        X + (n * C + gi * Cg) * g.in_sz, g.in_sz, 0.0f, col, g.in_sz);
            float *yg = o.f + (n * M + gi * Mg) * g.out_sz;
            for (int64_t m = 0; m < Mg; m++) {
                float bv = B ? B[gi * Mg + m] : 0.0f;
                float *ym = yg + m * g.out_sz;
                for (int64_t p = 0; p < g.out_sz; p++) ym[p] = bv;
                const float *cm = col + m * g.k_sz * g.in_sz;
                for (int64_t kz = 0; kz < g.k[0]; kz++)
                for (int64_t ky = 0; ky < g.k[1]; ky++)
                for (int64_t kx = 0; kx < g.k[2]; kx++, cm += g.in_sz) {
                    for (int64_t iz = 0; iz < g.in[0]; iz++) {
                        int64_t oz = iz * g.s[0] - g.pb[0] + kz * g.d[0];
                        if (oz < 0 || oz >= g.out[0]) continue;
                        for (int64_t iy = 0; iy < g.in[1]; iy++) {
                            int64_t oy = iy * g.s[1] - g.pb[1] + ky * g.d[1];
                            if (oy < 0 || oy >= g.out[1]) continue;
                            const float *cr = cm + (iz * g.in[1] + iy) * g.in[2];
                            float *yr = ym + (oz * g.out[1] + oy) * g.out[2];
                            for (int64_t ix = 0; ix < g.in[2]; ix++) {
                                int64_t ox = ix * g.s[2] - g.pb[2] + kx * g.d[2];
                                if (ox >= 0 && ox < g.out[2]) yr[ox] += cr[ix];
                            }
                        }
                    }
                }
            }
        }
    }
    nn_fout_done(&o);
done:
    free(tx); free(tw); free(tb); free(col);
    return st;
}

/* ---- integer convolutions --------------------------------------------------------- */

/* int32 convolution of (x - x_zp) and (w - w_zp[m]); *out is N*M*out_sz
 * int32 values (caller frees); od receives the output shape. */
static ox_status conv_run_i(ox_kernel_ctx *c, const ox_tensor *x, const ox_tensor *xzp,
                            const ox_tensor *w, const ox_tensor *wzp, int64_t *od,
                            int32_t **out)
{
    *out = NULL;
    int64_t group = nn_attr_i(c, "group", 1);
    conv_geom g;
    ox_status st = conv_check(c, x, w, group, &g);
    if (st) return st;
    if ((x->dtype != OX_DT_UINT8 && x->dtype != OX_DT_INT8) ||
        (w->dtype != OX_DT_UINT8 && w->dtype != OX_DT_INT8))
        return NN_FAIL(c, "X and W must be int8/uint8");
    int64_t N = x->dims[0], C = x->dims[1], M = w->dims[0];
    od[0] = N;
    od[1] = M;
    for (int i = 0; i < g.nsp; i++) od[2 + i] = g.out[SP - g.nsp + i];
    int64_t Cg = C / group, Mg = M / group, kdim = Cg * g.k_sz;
    int32_t *X = malloc((size_t)(x->numel + 1) * sizeof(int32_t));
    int32_t *W = malloc((size_t)(w->numel + 1) * sizeof(int32_t));
    int32_t *col = malloc((size_t)(kdim * g.out_sz + 1) * sizeof(int32_t));
    int32_t *Y = malloc((size_t)(N * M * g.out_sz + 1) * sizeof(int32_t));
    if (!X || !W || !col || !Y) {
        free(X); free(W); free(col); free(Y);
        return NN_NOMEM(c);
    }
    /* Padding must contribute (x_zp - x_zp) = 0, so subtract before im2col. */
    int64_t xz = xzp && xzp->numel ? nn_get_i(xzp, 0) : 0;
    for (int64_t i = 0; i < x->numel; i++) X[i] = (int32_t)(nn_get_i(x, i) - xz);
    int64_t per_m = w->numel / (M ? M : 1);
    for (int64_t i = 0; i < w->numel; i++) {
        int64_t m = i / (per_m ? per_m : 1), wz = 0;
        if (wzp && wzp->numel == 1) wz = nn_get_i(wzp, 0);
        else if (wzp && wzp->numel == M) wz = nn_get_i(wzp, m);
        W[i] = (int32_t)(nn_get_i(w, i) - wz);
    }
    for (int64_t n = 0; n < N; n++)
        for (int64_t gi = 0; gi < group; gi++) {
            im2col_i(&g, Cg, X + (n * C + gi * Cg) * g.in_sz, col, 0, g.out[0] * g.out[1]);
            /* Few output channels per group (depthwise): the plain loop;
             * else the packed int16 kernel (qgemm.c). */
            if (Mg < 4 || !nn_qgemm_i32(c->pool, Mg, g.out_sz, kdim, W + gi * Mg * kdim, col,
                                        Y + (n * M + gi * Mg) * g.out_sz))
                nn_igemm(Mg, g.out_sz, kdim, W + gi * Mg * kdim, col,
                         Y + (n * M + gi * Mg) * g.out_sz);
        }
    free(X); free(W); free(col);
    *out = Y;
    return OX_OK;
}

NN_KERNEL(conv_integer)
{
    const ox_tensor *x = ox_kernel_in(c, 0), *w = ox_kernel_in(c, 1);
    int64_t od[OX_MAX_RANK];
    int32_t *Y;
    ox_status st = conv_run_i(c, x, ox_kernel_in(c, 2), w, ox_kernel_in(c, 3), od, &Y);
    if (st) return st;
    ox_tensor *y = nn_out(c, 0, OX_DT_INT32, x->rank, od);
    if (!y) { free(Y); return NN_ST(c); }
    memcpy(ox_tensor_data(y), Y, (size_t)y->numel * sizeof(int32_t));
    free(Y);
    return OX_OK;
}

/* QLinearConv: x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B (int32). */
NN_KERNEL(qlinear_conv)
{
    const ox_tensor *x = ox_kernel_in(c, 0), *xs = ox_kernel_in(c, 1), *w = ox_kernel_in(c, 3);
    const ox_tensor *ws = ox_kernel_in(c, 4), *ys = ox_kernel_in(c, 6), *yzp = ox_kernel_in(c, 7);
    const ox_tensor *b = ox_kernel_in(c, 8);
    if (!xs || !ws || !ys) return NN_FAIL(c, "missing scales");
    int64_t od[OX_MAX_RANK];
    int32_t *Y;
    ox_status st = conv_run_i(c, x, ox_kernel_in(c, 2), w, ox_kernel_in(c, 5), od, &Y);
    if (st) return st;
    int64_t M = od[1], N = od[0], sp = 1;
    for (int i = 2; i < x->rank; i++) sp *= od[i];
    ox_dtype odt = yzp ? yzp->dtype : x->dtype;
    int64_t lo, hi;
    if (!nn_q_range(odt, &lo, &hi)) { free(Y); return NN_FAIL(c, "bad output type"); }
    if (b && b->numel != M) { free(Y); return NN_FAIL(c, "bias size mismatch"); }
    ox_tensor *y = nn_out(c, 0, odt, x->rank, od);
    if (!y) { free(Y); return NN_ST(c); }
    double xsv = ox_tensor_get_f64(xs, 0), ysv = ox_tensor_get_f64(ys, 0);
    int64_t z = yzp ? nn_get_i(yzp, 0) : 0;
    for (int64_t n = 0; n < N; n++)
        for (int64_t m = 0; m < M; m++) {
            double wsv = ox_tensor_get_f64(ws, ws->numel == M ? m : 0);
            float mult = (float)(xsv * wsv / ysv);
            int64_t bias = b ? nn_get_i(b, m) : 0;
            for (int64_t p = 0; p < sp; p++) {
                int64_t k = (n * M + m) * sp + p;
                float v = (float)(Y[k] + bias) * mult;
                nn_set_i(y, k, nn_q_round_sat((double)v + (double)z, lo, hi));
            }
        }
    free(Y);
    return OX_OK;
}

/* ---- DeformConv (2-D) ---------------------------------------------------------- */

/* Bilinear sample of a [H, W] plane with zeros outside. */
static float bilinear(const float *x, int64_t H, int64_t W, float h, float w)
{
    if (!(h > -1.0f && h < (float)H && w > -1.0f && w < (float)W)) return 0.0f;
    int64_t h0 = (int64_t)floorf(h), w0 = (int64_t)floorf(w);
    float lh = h - (float)h0, lw = w - (float)w0;
    float v = 0.0f;
    for (int dy = 0; dy < 2; dy++)
        for (int dx = 0; dx < 2; dx++) {
            int64_t y = h0 + dy, xx = w0 + dx;
            if (y < 0 || y >= H || xx < 0 || xx >= W) continue;
            float wt = (dy ? lh : 1.0f - lh) * (dx ? lw : 1.0f - lw);
            v += wt * x[y * W + xx];
        }
    return v;
}

/* Deformable convolution: im2col samples each kernel tap at its learned
 * offset (optionally scaled by the mask), then the usual grouped GEMM. */
NN_KERNEL(deform_conv)
{
    const ox_tensor *x = ox_kernel_in(c, 0), *w = ox_kernel_in(c, 1), *off = ox_kernel_in(c, 2);
    const ox_tensor *b = ox_kernel_in(c, 3), *mk = ox_kernel_in(c, 4);
    int64_t group = nn_attr_i(c, "group", 1), og = nn_attr_i(c, "offset_group", 1);
    conv_geom g;
    ox_status st = conv_check(c, x, w, group, &g);
    if (st) return st;
    if (x->rank != 4) return nn_fail(c, OX_EUNSUPPORTED, "only 2-D DeformConv is supported");
    if (!nn_is_float_dt(x->dtype)) return NN_FAIL(c, "needs float inputs");
    int64_t N = x->dims[0], C = x->dims[1], M = w->dims[0], H = g.in[1], W = g.in[2];
    int64_t KH = g.k[1], KW = g.k[2], OH = g.out[1], OW = g.out[2], KK = KH * KW;
    if (og < 1 || C % og) return NN_FAIL(c, "offset_group must divide the channels");
    if (!off || off->rank != 4 || off->dims[0] != N || off->dims[1] != og * 2 * KK ||
        off->dims[2] != OH || off->dims[3] != OW)
        return NN_FAIL(c, "offset shape mismatch");
    if (mk && (mk->numel != N * og * KK * OH * OW)) return NN_FAIL(c, "mask shape mismatch");
    if (b && b->numel != M) return NN_FAIL(c, "bias size mismatch");
    float *t[5] = {0}, *col = NULL;
    const float *X = nn_load_f32(c, x, &t[0]);
    const float *Wt = X ? nn_load_f32(c, w, &t[1]) : NULL;
    const float *O = Wt ? nn_load_f32(c, off, &t[2]) : NULL;
    const float *B = (O && b) ? nn_load_f32(c, b, &t[3]) : NULL;
    const float *MK = (O && mk) ? nn_load_f32(c, mk, &t[4]) : NULL;
    nn_fout o = {0};
    if (!O || (b && !B) || (mk && !MK)) { st = NN_ST(c); goto done; }
    int64_t od[4] = {N, M, OH, OW};
    if ((st = nn_fout_new(c, 0, x->dtype, 4, od, &o))) goto done;
    int64_t Cg = C / group, Mg = M / group, kdim = Cg * KK, P = OH * OW, cpo = C / og;
    col = malloc((size_t)(kdim * P + 1) * sizeof(float));
    if (!col) { st = NN_NOMEM(c); nn_fout_drop(&o); goto done; }
    for (int64_t n = 0; n < N; n++)
        for (int64_t gi = 0; gi < group; gi++) {
            for (int64_t ci = 0; ci < Cg; ci++) {
                int64_t ch = gi * Cg + ci, ogi = ch / cpo;
                const float *xp = X + (n * C + ch) * H * W;
                const float *op = O + (n * og + ogi) * 2 * KK * P;
                const float *mp = MK ? MK + (n * og + ogi) * KK * P : NULL;
                for (int64_t kh = 0; kh < KH; kh++)
                    for (int64_t kw = 0; kw < KW; kw++) {
                        int64_t kk = kh * KW + kw;
                        float *row = col + (ci * KK + kk) * P;
                        for (int64_t oh = 0; oh < OH; oh++)
                            for (int64_t ow = 0; ow < OW; ow++) {
                                int64_t p = oh * OW + ow;
                                float hh = (float)(oh * g.s[1] - g.pb[1] + kh * g.d[1]) + op[(2 * kk) * P + p];
                                float ww = (float)(ow * g.s[2] - g.pb[2] + kw * g.d[2]) + op[(2 * kk + 1) * P + p];
                                float v = bilinear(xp, H, W, hh, ww);
                                row[p] = mp ? v * mp[kk * P + p] : v;
                            }
                    }
            }
            float *yg = o.f + (n * M + gi * Mg) * P;
            for (int64_t m = 0; m < Mg; m++)
                for (int64_t p = 0; p < P; p++) yg[m * P + p] = B ? B[gi * Mg + m] : 0.0f;
            nn_sgemm_mt(c->pool, false, false, Mg, P, kdim, 1.0f, Wt + gi * Mg * kdim, kdim, col, P,
                        1.0f, yg, P);
        }
    nn_fout_done(&o);
done:
    for (int i = 0; i < 5; i++) free(t[i]);
    free(col);
    return st;
}

/* ---- CausalConvWithState (opset 27) -------------------------------------------- */

/* Depthwise causal 1-D convolution over [past_state | input] with an
 * optional fused SiLU; present_state is the last k-1 padded positions. */
NN_KERNEL(causal_conv_with_state)
{
    const ox_tensor *x = ox_kernel_in(c, 0), *w = ox_kernel_in(c, 1), *b = ox_kernel_in(c, 2);
    const ox_tensor *ps = ox_kernel_in(c, 3);
    const char *act = nn_attr_s(c, "activation", "none");
    bool silu = !strcmp(act, "silu") || !strcmp(act, "swish");
    if (!silu && strcmp(act, "none")) return NN_FAIL(c, "unsupported activation '%s'", act);
    if (!x || !w || x->rank != 3 || w->rank != 3) return NN_FAIL(c, "input and weight must be 3-D");
    if (!nn_is_float_dt(x->dtype)) return NN_FAIL(c, "needs float inputs");
    int64_t B = x->dims[0], C = x->dims[1], L = x->dims[2], K = w->dims[2];
    if (w->dims[0] != C || w->dims[1] != 1 || K < 1) return NN_FAIL(c, "weight must be [C, 1, k]");
    if (b && b->numel != C) return NN_FAIL(c, "bias size mismatch");
    if (ps && (ps->rank != 3 || ps->dims[0] != B || ps->dims[1] != C || ps->dims[2] != K - 1))
        return NN_FAIL(c, "past_state must be [B, C, k-1]");
    int64_t PL = L + K - 1;
    float *t[4] = {0}, *pad = NULL;
    ox_status st = OX_OK;
    const float *X = nn_load_f32(c, x, &t[0]);
    const float *W = X ? nn_load_f32(c, w, &t[1]) : NULL;
    const float *Bv = (W && b) ? nn_load_f32(c, b, &t[2]) : NULL;
    const float *P = (W && ps) ? nn_load_f32(c, ps, &t[3]) : NULL;
    nn_fout o = {0}, s = {0};
    if (!W || (b && !Bv) || (ps && !P)) { st = NN_ST(c); goto done; }
    pad = malloc((size_t)(B * C * PL + 1) * sizeof(float));
    if (!pad) { st = NN_NOMEM(c); goto done; }
    for (int64_t r = 0; r < B * C; r++) {
        float *row = pad + r * PL;
        for (int64_t i = 0; i < K - 1; i++) row[i] = P ? P[r * (K - 1) + i] : 0.0f;
        memcpy(row + K - 1, X + r * L, (size_t)L * sizeof(float));
    }
    int64_t od[3] = {B, C, L}, sd[3] = {B, C, K - 1};
    if ((st = nn_fout_new(c, 0, x->dtype, 3, od, &o))) goto done;
    for (int64_t r = 0; r < B * C; r++) {
        int64_t ch = r % C;
        const float *row = pad + r * PL, *wk = W + ch * K;
        for (int64_t i = 0; i < L; i++) {
            float acc = Bv ? Bv[ch] : 0.0f;
            for (int64_t k = 0; k < K; k++) acc += row[i + k] * wk[k];
            o.f[r * L + i] = silu ? acc / (1.0f + expf(-acc)) : acc;
        }
    }
    nn_fout_done(&o);
    if (c->n_out > 1 && (!c->node || (c->node->n_outputs > 1 && c->node->outputs[1]))) {
        if ((st = nn_fout_new(c, 1, ps ? ps->dtype : x->dtype, 3, sd, &s))) goto done;
        for (int64_t r = 0; r < B * C; r++)
            for (int64_t i = 0; i < K - 1; i++) s.f[r * (K - 1) + i] = pad[r * PL + PL - (K - 1) + i];
        nn_fout_done(&s);
    }
done:
    for (int i = 0; i < 4; i++) free(t[i]);
    free(pad);
    return st;
}
