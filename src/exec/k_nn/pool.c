/* Pooling: MaxPool (with Indices), AveragePool, LpPool, their Global forms,
 * MaxRoiPool and MaxUnpool, for 1 to 3 spatial dimensions. Windows are
 * walked directly (no im2col): pooling is memory-bound anyway. */
#include "nn_common.h"
#include "exec/k_nn/pool_fast.h"
#include "onnxscope/threadpool.h"
#include "exec/env_flag.h"

#define SP 3

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

typedef struct pool_geom {
    int nsp;
    int64_t in[SP], k[SP], s[SP], d[SP], pb[SP], pe[SP], out[SP];
    int64_t in_sz, out_sz;
} pool_geom;

static ox_status pool_geom_init(ox_kernel_ctx *c, const ox_tensor *x, bool dilations_ok,
                                pool_geom *g)
{
    if (!x) return NN_FAIL(c, "missing input");
    int nsp = x->rank - 2;
    if (nsp < 1 || nsp > SP) return nn_fail(c, OX_EUNSUPPORTED, "input rank %d unsupported", x->rank);
    memset(g, 0, sizeof *g);
    g->nsp = nsp;
    int64_t ks[SP], st[SP], dl[SP], pads[2 * SP];
    int nk = nn_attr_ints(c, "kernel_shape", ks, SP);
    int ns = nn_attr_ints(c, "strides", st, SP);
    int nd = dilations_ok ? nn_attr_ints(c, "dilations", dl, SP) : -1;
    int np = nn_attr_ints(c, "pads", pads, 2 * SP);
    if (nk != nsp) return NN_FAIL(c, "kernel_shape must have %d entries", nsp);
    if ((ns >= 0 && ns != nsp) || (nd >= 0 && nd != nsp) || (np >= 0 && np != 2 * nsp) ||
        ns == -2 || nd == -2 || np == -2)
        return NN_FAIL(c, "attribute lengths do not match %d spatial dims", nsp);
    bool ceil_mode = nn_attr_i(c, "ceil_mode", 0) != 0;
    const char *ap = nn_attr_s(c, "auto_pad", "NOTSET");
    for (int i = 0; i < SP; i++) {
        g->in[i] = g->k[i] = g->s[i] = g->d[i] = g->out[i] = 1;
        g->pb[i] = g->pe[i] = 0;
    }
    for (int i = 0; i < nsp; i++) {
        g->in[i] = x->dims[2 + i];
        g->k[i] = ks[i];
        g->s[i] = ns >= 0 ? st[i] : 1;
        g->d[i] = nd >= 0 ? dl[i] : 1;
        const char *why = nn_window_dim(ap, g->in[i], g->k[i], g->s[i], g->d[i], np >= 0,
                                        np >= 0 ? pads[i] : 0, np >= 0 ? pads[i + nsp] : 0,
                                        ceil_mode, &g->pb[i], &g->pe[i], &g->out[i]);
        if (why) return NN_FAIL(c, "%s", why);
    }
    geom_align(nsp, g->in, g->k, g->s, g->d, g->pb, g->pe, g->out);
    g->in_sz = nn_prod(g->in, SP);
    g->out_sz = nn_prod(g->out, SP);
    return OX_OK;
}

enum { P_MAX, P_AVG, P_LP };

/* The fast loops' view of a 1-D or 2-D geometry (false for 3-D). */
static bool pool2d_of(const pool_geom *g, bool avg, bool include_pad, nn_pool2d *f)
{
    if (g->in[0] != 1 || g->out[0] != 1 || g->k[0] != 1 || g->pb[0] != 0)
        return false;
    *f = (nn_pool2d){
        .H = g->in[1], .W = g->in[2], .OH = g->out[1], .OW = g->out[2],
        .kh = g->k[1], .kw = g->k[2], .sh = g->s[1], .sw = g->s[2], .dh = g->d[1], .dw = g->d[2],
        .pt = g->pb[1], .pl = g->pb[2], .peh = g->pe[1], .pew = g->pe[2],
        .avg = avg, .include_pad = include_pad,
    };
    return true;
}

bool nn_fast_pool_enabled(void)
{
    return !ox__env_on("ONNXSCOPE_NO_FAST_POOL");
}

ox_status nn_pool2d_geom(ox_kernel_ctx *c, const ox_tensor *x, bool avg, nn_pool2d *f)
{
    if (!x || x->rank != 4)
        return NN_FAIL(c, "needs a rank-4 input");
    pool_geom g;
    ox_status st = pool_geom_init(c, x, true, &g);
    if (st)
        return st;
    if (!pool2d_of(&g, avg, nn_attr_i(c, "count_include_pad", 0) != 0, f))
        return NN_FAIL(c, "not a 2-D pooling");
    return OX_OK;
}

typedef struct pool_job {
    const pool_geom *g;
    const nn_pool2d *fast;   /* the 2-D fast loop's geometry (pool_fast.c), or NULL */
    const float *X;
    float *Y;
    int64_t *I;
    int kind;
    bool include_pad;
    float p;
    bool col_major;
} pool_job;

/* MaxPool over 1-D/2-D planes without an indices output: the common CNN
 * case. Same result as the generic loop below (first maximum wins, a NaN
 * sticks), but the window is clipped to the input once per output row and
 * column instead of testing every tap. */
static void max_planes_2d(const pool_job *j, int64_t b0, int64_t b1)
{
    const pool_geom *g = j->g;
    int64_t H = g->in[1], W = g->in[2], OH = g->out[1], OW = g->out[2];
    for (int64_t nc = b0; nc < b1; nc++) {
        const float *xc = j->X + nc * g->in_sz;
        float *yc = j->Y + nc * g->out_sz;
        for (int64_t oy = 0; oy < OH; oy++) {
            int64_t iy0 = oy * g->s[1] - g->pb[1];
            for (int64_t ox = 0; ox < OW; ox++) {
                int64_t ix0 = ox * g->s[2] - g->pb[2];
                float acc = 0.0f;
                bool any = false;
                if (iy0 >= 0 && iy0 + (g->k[1] - 1) * g->d[1] < H && ix0 >= 0 &&
                    ix0 + (g->k[2] - 1) * g->d[2] < W) {
                    /* Window inside the plane: no bounds tests, and NaNs only
                     * noted; a window with one takes the exact loop below. */
                    const float *w0 = xc + iy0 * W + ix0;
                    float m = w0[0];
                    bool nan = false;
                    for (int64_t ky = 0; ky < g->k[1]; ky++) {
                        const float *row = w0 + ky * g->d[1] * W;
                        for (int64_t kx = 0; kx < g->k[2]; kx++) {
                            float v = row[kx * g->d[2]];
                            m = v > m ? v : m;
                            nan |= v != v;
                        }
                    }
                    if (!nan) {
                        yc[oy * OW + ox] = m;
                        continue;
                    }
                }
                for (int64_t ky = 0; ky < g->k[1]; ky++) {
                    int64_t iy = iy0 + ky * g->d[1];
                    if (iy < 0 || iy >= H) continue;
                    const float *row = xc + iy * W;
                    for (int64_t kx = 0; kx < g->k[2]; kx++) {
                        int64_t ix = ix0 + kx * g->d[2];
                        if (ix < 0 || ix >= W) continue;
                        float v = row[ix];
                        if (!any || v > acc || (isnan(v) && !isnan(acc))) acc = v;
                        any = true;
                    }
                }
                yc[oy * OW + ox] = acc;
            }
        }
    }
}

/* Pools the (image, channel) planes [b0, b1). */
static void pool_planes(void *ctx, int64_t b0, int64_t b1)
{
    const pool_job *j = ctx;
    const pool_geom *g = j->g;
    if (j->fast && nn_pool2d_nchw(j->fast, j->X, j->Y, b0, b1))
        return;
    if (j->kind == P_MAX && !j->I && g->in[0] == 1 && g->out[0] == 1 && g->k[0] == 1 &&
        g->pb[0] == 0) {
        max_planes_2d(j, b0, b1);
        return;
    }
    int kind = j->kind;
    bool include_pad = j->include_pad, col_major = j->col_major;
    float p = j->p;
    int64_t *I = j->I;
    for (int64_t nc = b0; nc < b1; nc++) {
        const float *xc = j->X + nc * g->in_sz;
        float *yc = j->Y + nc * g->out_sz;
        for (int64_t oz = 0; oz < g->out[0]; oz++)
        for (int64_t oy = 0; oy < g->out[1]; oy++)
        for (int64_t ox = 0; ox < g->out[2]; ox++) {
            float acc = kind == P_MAX ? -INFINITY : 0.0f;
            int64_t best = -1, cnt = 0, cnt_pad = 0;
            for (int64_t kz = 0; kz < g->k[0]; kz++) {
                int64_t iz = oz * g->s[0] - g->pb[0] + kz * g->d[0];
                if (iz >= g->in[0] + g->pe[0]) continue;
                bool vz = iz >= 0 && iz < g->in[0];
                for (int64_t ky = 0; ky < g->k[1]; ky++) {
                    int64_t iy = oy * g->s[1] - g->pb[1] + ky * g->d[1];
                    if (iy >= g->in[1] + g->pe[1]) continue;
                    bool vy = vz && iy >= 0 && iy < g->in[1];
                    for (int64_t kx = 0; kx < g->k[2]; kx++) {
                        int64_t ix = ox * g->s[2] - g->pb[2] + kx * g->d[2];
                        if (ix >= g->in[2] + g->pe[2]) continue;
                        cnt_pad++;
                        if (!vy || ix < 0 || ix >= g->in[2]) continue;
                        int64_t pos = (iz * g->in[1] + iy) * g->in[2] + ix;
                        float v = xc[pos];
                        cnt++;
                        if (kind == P_MAX) {
                            if (best < 0 || v > acc || (isnan(v) && !isnan(acc))) {
                                acc = v;
                                best = pos;
                            }
                        } else if (kind == P_AVG) {
                            acc += v;
                        } else {
                            acc += powf(fabsf(v), p);
                        }
                    }
                }
            }
            int64_t op = (oz * g->out[1] + oy) * g->out[2] + ox;
            if (kind == P_MAX) {
                yc[op] = best < 0 ? 0.0f : acc;
                if (I) {
                    int64_t b = best < 0 ? 0 : best;
                    if (col_major) {
                        /* Column-major over the spatial dims. */
                        int64_t bz = b / (g->in[1] * g->in[2]), by = (b / g->in[2]) % g->in[1],
                                bx = b % g->in[2];
                        b = (bx * g->in[1] + by) * g->in[0] + bz;
                    }
                    I[nc * g->out_sz + op] = nc * g->in_sz + b;
                }
            } else if (kind == P_AVG) {
                int64_t div = include_pad ? cnt_pad : cnt;
                yc[op] = div ? acc / (float)div : 0.0f;
            } else {
                yc[op] = powf(acc, 1.0f / p);
            }
        }
    }
}

static ox_status pool_run(ox_kernel_ctx *c, int kind)
{
    const ox_tensor *x = ox_kernel_in(c, 0);
    pool_geom g;
    ox_status st = pool_geom_init(c, x, true, &g);
    if (st) return st;
    if (kind != P_MAX && !nn_is_float_dt(x->dtype)) return NN_FAIL(c, "needs a float input");
    bool include_pad = nn_attr_i(c, "count_include_pad", 0) != 0;
    float p = (float)nn_attr_i(c, "p", 2);
    bool col_major = nn_attr_i(c, "storage_order", 0) != 0;
    int64_t NC = x->dims[0] * x->dims[1];
    int64_t od[OX_MAX_RANK];
    od[0] = x->dims[0];
    od[1] = x->dims[1];
    for (int i = 0; i < g.nsp; i++) od[2 + i] = g.out[SP - g.nsp + i];
    float *tx = NULL;
    const float *X = nn_load_f32(c, x, &tx);
    if (!X) return NN_ST(c);
    nn_fout o;
    st = nn_fout_new(c, 0, x->dtype, x->rank, od, &o);
    if (st) { free(tx); return st; }
    ox_tensor *idx = NULL;
    if (kind == P_MAX && c->n_out > 1 && (!c->node || (c->node->n_outputs > 1 && c->node->outputs[1]))) {
        idx = nn_out(c, 1, OX_DT_INT64, x->rank, od);
        if (!idx) { nn_fout_drop(&o); free(tx); return NN_ST(c); }
    }
    nn_pool2d f2;
    bool fast = !idx && kind != P_LP && pool2d_of(&g, kind == P_AVG, include_pad, &f2) &&
                nn_fast_pool_enabled();
    f2.planes = NC;
    pool_job j = {&g, fast ? &f2 : NULL, X, o.f, idx ? (int64_t *)ox_tensor_data(idx) : NULL,
                  kind, include_pad, p, col_major};
    ox_parallel_for(c->pool, NC, 1, pool_planes, &j);
    nn_fout_done(&o);
    free(tx);
    return OX_OK;
}

NN_KERNEL(max_pool) { return pool_run(c, P_MAX); }
NN_KERNEL(average_pool) { return pool_run(c, P_AVG); }
NN_KERNEL(lp_pool) { return pool_run(c, P_LP); }

static ox_status global_pool(ox_kernel_ctx *c, int kind)
{
    const ox_tensor *x = ox_kernel_in(c, 0);
    if (!x || x->rank < 2) return NN_FAIL(c, "input must have rank >= 2");
    if (kind != P_MAX && !nn_is_float_dt(x->dtype)) return NN_FAIL(c, "needs a float input");
    int64_t od[OX_MAX_RANK];
    od[0] = x->dims[0];
    od[1] = x->dims[1];
    for (int i = 2; i < x->rank; i++) od[i] = 1;
    int64_t NC = x->dims[0] * x->dims[1], sp = nn_prod(x->dims + 2, x->rank - 2);
    float p = (float)nn_attr_i(c, "p", 2);
    float *tx = NULL;
    const float *X = nn_load_f32(c, x, &tx);
    if (!X) return NN_ST(c);
    nn_fout o;
    ox_status st = nn_fout_new(c, 0, x->dtype, x->rank, od, &o);
    if (st) { free(tx); return st; }
    for (int64_t i = 0; i < NC; i++) {
        const float *xc = X + i * sp;
        double acc = kind == P_MAX ? -INFINITY : 0.0;
        for (int64_t j = 0; j < sp; j++) {
            if (kind == P_MAX) { if (xc[j] > acc || isnan(xc[j])) acc = xc[j]; }
            else if (kind == P_AVG) acc += xc[j];
            else acc += pow(fabs(xc[j]), p);
        }
        o.f[i] = kind == P_MAX ? (float)acc : kind == P_AVG ? (float)(sp ? acc / (double)sp : 0)
                                                          : (float)pow(acc, 1.0 / p);
    }
    nn_fout_done(&o);
    free(tx);
    return OX_OK;
}

NN_KERNEL(global_max_pool) { return global_pool(c, P_MAX); }
NN_KERNEL(global_average_pool) { return global_pool(c, P_AVG); }
NN_KERNEL(global_lp_pool) { return global_pool(c, P_LP); }

/* MaxRoiPool (Caffe semantics): rois [R, 5] = (batch, x1, y1, x2, y2). */
NN_KERNEL(max_roi_pool)
{
    const ox_tensor *x = ox_kernel_in(c, 0), *r = ox_kernel_in(c, 1);
    if (!x || !r || x->rank != 4 || r->rank != 2 || r->dims[1] != 5)
        return NN_FAIL(c, "needs X [N,C,H,W] and rois [R,5]");
    if (!nn_is_float_dt(x->dtype)) return NN_FAIL(c, "needs a float input");
    int64_t ps[2];
    if (nn_attr_ints(c, "pooled_shape", ps, 2) != 2 || ps[0] < 1 || ps[1] < 1)
        return NN_FAIL(c, "pooled_shape must have 2 positive entries");
    float scale = nn_attr_f(c, "spatial_scale", 1.0f);
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3], R = r->dims[0];
    int64_t od[4] = {R, C, ps[0], ps[1]};
    float *tx = NULL, *tr = NULL;
    const float *X = nn_load_f32(c, x, &tx);
    const float *RO = X ? nn_load_f32(c, r, &tr) : NULL;
    nn_fout o;
    ox_status st = RO ? nn_fout_new(c, 0, x->dtype, 4, od, &o) : NN_ST(c);
    if (st) { free(tx); free(tr); return st; }
    for (int64_t ri = 0; ri < R; ri++) {
        const float *q = RO + ri * 5;
        int64_t b = (int64_t)q[0];
        int64_t x1 = (int64_t)roundf(q[1] * scale), y1 = (int64_t)roundf(q[2] * scale);
        int64_t x2 = (int64_t)roundf(q[3] * scale), y2 = (int64_t)roundf(q[4] * scale);
        int64_t rh = y2 - y1 + 1 > 1 ? y2 - y1 + 1 : 1, rw = x2 - x1 + 1 > 1 ? x2 - x1 + 1 : 1;
        float bh = (float)rh / (float)ps[0], bw = (float)rw / (float)ps[1];
        for (int64_t ch = 0; ch < C; ch++) {
            float *yc = o.f + (ri * C + ch) * ps[0] * ps[1];
            const float *xc = (b >= 0 && b < N) ? X + (b * C + ch) * H * W : NULL;
            for (int64_t ph = 0; ph < ps[0]; ph++)
                for (int64_t pw = 0; pw < ps[1]; pw++) {
                    int64_t hs = (int64_t)floorf(ph * bh) + y1, he = (int64_t)ceilf((ph + 1) * bh) + y1;
                    int64_t ws = (int64_t)floorf(pw * bw) + x1, we = (int64_t)ceilf((pw + 1) * bw) + x1;
                    hs = hs < 0 ? 0 : hs > H ? H : hs;
                    he = he < 0 ? 0 : he > H ? H : he;
                    ws = ws < 0 ? 0 : ws > W ? W : ws;
                    we = we < 0 ? 0 : we > W ? W : we;
                    float m = -INFINITY;
                    bool any = false;
                    for (int64_t h = hs; xc && h < he; h++)
                        for (int64_t w = ws; w < we; w++) {
                            if (xc[h * W + w] > m) m = xc[h * W + w];
                            any = true;
                        }
                    yc[ph * ps[1] + pw] = any ? m : 0.0f;
                }
        }
    }
    nn_fout_done(&o);
    free(tx);
    free(tr);
    return OX_OK;
}

/* MaxUnpool: scatters X at the flat Indices into a zero tensor of the
 * inferred unpooled shape, then (as the ONNX reference) places that in the
 * top-left corner of output_shape when one is given. */
NN_KERNEL(max_unpool)
{
    const ox_tensor *x = ox_kernel_in(c, 0), *ind = ox_kernel_in(c, 1), *osh = ox_kernel_in(c, 2);
    if (!x || !ind || ind->numel != x->numel) return NN_FAIL(c, "needs X and matching Indices");
    int nsp = x->rank - 2;
    if (nsp < 1) return NN_FAIL(c, "input rank must be >= 3");
    int64_t inf[OX_MAX_RANK], od[OX_MAX_RANK];
    int64_t ks[OX_MAX_RANK], st[OX_MAX_RANK], pads[2 * OX_MAX_RANK];
    if (nn_attr_ints(c, "kernel_shape", ks, OX_MAX_RANK) != nsp)
        return NN_FAIL(c, "kernel_shape must have %d entries", nsp);
    int ns = nn_attr_ints(c, "strides", st, OX_MAX_RANK);
    int np = nn_attr_ints(c, "pads", pads, 2 * OX_MAX_RANK);
    inf[0] = x->dims[0];
    inf[1] = x->dims[1];
    for (int i = 0; i < nsp; i++) {
        int64_t s = ns == nsp ? st[i] : 1;
        inf[2 + i] = (x->dims[2 + i] - 1) * s + ks[i] - (np == 2 * nsp ? pads[i] + pads[i + nsp] : 0);
        if (inf[2 + i] < 0) return NN_FAIL(c, "negative output size");
    }
    if (osh) {
        if (osh->numel != x->rank) return NN_FAIL(c, "output_shape must have %d entries", x->rank);
        for (int i = 0; i < x->rank; i++) {
            od[i] = nn_get_i(osh, i);
            if (od[i] < inf[i]) return NN_FAIL(c, "output_shape smaller than the unpooled shape");
        }
    } else {
        memcpy(od, inf, sizeof(int64_t) * (size_t)x->rank);
    }
    size_t esz = (size_t)ox_dtype_bits(x->dtype) / 8;
    if (!esz || ox_dtype_bits(x->dtype) % 8) return NN_FAIL(c, "unsupported type");
    int64_t ninf = nn_prod(inf, x->rank);
    char *tmp = calloc((size_t)(ninf + 1), esz);
    if (!tmp) return NN_NOMEM(c);
    const char *X = ox_tensor_data(x);
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t j = nn_get_i(ind, i);
        if (j < 0 || j >= ninf) { free(tmp); return NN_FAIL(c, "index %lld out of range", (long long)j); }
        memcpy(tmp + (size_t)j * esz, X + (size_t)i * esz, esz);
    }
    ox_tensor *y = nn_out(c, 0, x->dtype, x->rank, od);
    if (!y) { free(tmp); return NN_ST(c); }
    char *Y = ox_tensor_data(y);
    if (y->numel) memset(Y, 0, (size_t)y->numel * esz);
    for (int64_t i = 0; i < ninf; i++) {
        int64_t r = i, o = 0, mul = 1;
        for (int k = x->rank - 1; k >= 0; k--) {
            o += (r % inf[k]) * mul;
            r /= inf[k];
            mul *= od[k];
        }
        memcpy(Y + (size_t)o * esz, tmp + (size_t)i * esz, esz);
    }
    free(tmp);
    return OX_OK;
}

/* RoiAlign: bilinear samples on a regular grid inside each bin, averaged
 * (avg) or maxed over the per-corner weighted values (max), as the ONNX
 * reference does. rois [R, 4] = (x1, y1, x2, y2), batch_indices [R]. */
NN_KERNEL(roi_align)
{
    const ox_tensor *x = ox_kernel_in(c, 0), *r = ox_kernel_in(c, 1), *bi = ox_kernel_in(c, 2);
    if (!x || !r || !bi || x->rank != 4 || r->rank != 2 || r->dims[1] != 4 || bi->numel != r->dims[0])
        return NN_FAIL(c, "needs X [N,C,H,W], rois [R,4] and batch_indices [R]");
    if (!nn_is_float_dt(x->dtype)) return NN_FAIL(c, "needs a float input");
    const char *ctm = nn_attr_s(c, "coordinate_transformation_mode",
                                c->opset >= 16 ? "half_pixel" : "output_half_pixel");
    bool half = !strcmp(ctm, "half_pixel");
    bool mx = !strcmp(nn_attr_s(c, "mode", "avg"), "max");
    int64_t OH = nn_attr_i(c, "output_height", 1), OW = nn_attr_i(c, "output_width", 1);
    int64_t sr = nn_attr_i(c, "sampling_ratio", 0);
    float scale = nn_attr_f(c, "spatial_scale", 1.0f);
    if (OH < 1 || OW < 1) return NN_FAIL(c, "output size must be positive");
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3], R = r->dims[0];
    int64_t od[4] = {R, C, OH, OW};
    float *tx = NULL, *tr = NULL;
    const float *X = nn_load_f32(c, x, &tx);
    const float *RO = X ? nn_load_f32(c, r, &tr) : NULL;
    nn_fout o;
    ox_status st = RO ? nn_fout_new(c, 0, x->dtype, 4, od, &o) : NN_ST(c);
    if (st) { free(tx); free(tr); return st; }
    float off = half ? 0.5f : 0.0f;
    for (int64_t ri = 0; ri < R && !st; ri++) {
        int64_t b = nn_get_i(bi, ri);
        if (b < 0 || b >= N || H < 1 || W < 1) { st = NN_FAIL(c, "batch index %lld out of range", (long long)b); break; }
        const float *q = RO + ri * 4;
        float sw = q[0] * scale - off, sh = q[1] * scale - off;
        float rw = q[2] * scale - off - sw, rh = q[3] * scale - off - sh;
        if (!half) { rw = fmaxf(rw, 1.0f); rh = fmaxf(rh, 1.0f); }
        float bh = rh / (float)OH, bw = rw / (float)OW;
        int64_t gh = sr > 0 ? sr : (int64_t)ceilf(rh / (float)OH);
        int64_t gw = sr > 0 ? sr : (int64_t)ceilf(rw / (float)OW);
        if (gh < 0) gh = 0;
        if (gw < 0) gw = 0;
        float count = (float)(gh * gw > 1 ? gh * gw : 1);
        for (int64_t ch = 0; ch < C; ch++) {
            const float *xc = X + (b * C + ch) * H * W;
            float *yc = o.f + (ri * C + ch) * OH * OW;
            for (int64_t ph = 0; ph < OH; ph++)
                for (int64_t pw = 0; pw < OW; pw++) {
                    float acc = 0.0f;
                    bool first = true;
                    for (int64_t iy = 0; iy < gh; iy++) {
                        float y = sh + (float)ph * bh + ((float)iy + 0.5f) * bh / (float)gh;
                        for (int64_t ix = 0; ix < gw; ix++) {
                            float xx = sw + (float)pw * bw + ((float)ix + 0.5f) * bw / (float)gw;
                            float v1 = 0, v2 = 0, v3 = 0, v4 = 0;
                            if (!(y < -1.0f || y > (float)H || xx < -1.0f || xx > (float)W)) {
                                float yy = fmaxf(y, 0.0f), xv = fmaxf(xx, 0.0f);
                                int64_t yl = (int64_t)yy, xl = (int64_t)xv, yh, xh;
                                if (yl >= H - 1) { yh = yl = H - 1; yy = (float)yl; } else yh = yl + 1;
                                if (xl >= W - 1) { xh = xl = W - 1; xv = (float)xl; } else xh = xl + 1;
                                float ly = yy - (float)yl, lx = xv - (float)xl, hy = 1 - ly, hx = 1 - lx;
                                v1 = hy * hx * xc[yl * W + xl];
                                v2 = hy * lx * xc[yl * W + xh];
                                v3 = ly * hx * xc[yh * W + xl];
                                v4 = ly * lx * xc[yh * W + xh];
                            }
                            if (!mx) acc += v1 + v2 + v3 + v4;
                            else {
                                float v = fmaxf(fmaxf(v1, v2), fmaxf(v3, v4));
                                acc = first ? v : fmaxf(acc, v);
                                first = false;
                            }
                        }
                    }
                    yc[ph * OW + pw] = mx ? acc : acc / count;
                }
        }
    }
    if (st) nn_fout_drop(&o);
    else nn_fout_done(&o);
    free(tx);
    free(tr);
    return st;
}
