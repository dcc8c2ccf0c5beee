/* Channels-last kernels (exec/nhwc_kernels.h): MaxPool/AveragePool,
 * GlobalAveragePool/GlobalMaxPool and Concat on the channel axis for the
 * NHWC data of NCHW-shaped rank-4 float32 tensors. A SqueezeNet fire module
 * (squeeze conv -> two expand convs -> Concat -> pooling) then stays
 * channels-last from one oneDNN convolution to the next: the Concat of two
 * NHWC tensors along C is, per pixel, two contiguous copies, and pooling is
 * vectorized over C. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "no-trapping-math", "no-math-errno")
#endif

#include "exec/nhwc_kernels.h"

#include <stdatomic.h>

#include "exec/k_elementwise/ew.h"
#include "exec/k_nn/nn_common.h"
#include "exec/k_nn/pool_fast.h"
#include "onnxscope/threadpool.h"
#include "exec/env_flag.h"

static atomic_long g_runs;

long ox_nhwc_runs(void)
{
    return atomic_load(&g_runs);
}

bool ox_nhwc_ops_enabled(void)
{
    return !ox__env_on("ONNXSCOPE_NO_NHWC_OPS");
}

ox_nhwc_kind ox_nhwc_kind_of(const ox_node *n)
{
    if (!n || !ox_node_is_default_domain(n) || n->n_outputs < 1 || !n->outputs[0] || n->n_inputs < 1)
        return OX_NHWC_NONE;
    const char *op = n->op_type;
    if (!strcmp(op, "MaxPool") || !strcmp(op, "AveragePool")) {
        const int64_t *ks;
        /* MaxPool's Indices are NCHW positions: the plain kernel only. */
        if (n->n_outputs > 1 && n->outputs[1] && n->outputs[1]->n_uses + n->outputs[1]->is_output)
            return OX_NHWC_NONE;
        if (ox_node_attr_ints(n, "kernel_shape", &ks) != 2)
            return OX_NHWC_NONE;
        return OX_NHWC_POOL;
    }
    if (!strcmp(op, "GlobalAveragePool") || !strcmp(op, "GlobalMaxPool"))
        return OX_NHWC_GLOBAL_POOL;
    if (!strcmp(op, "Concat")) {
        int64_t axis = ox_node_attr_i(n, "axis", 1);
        return axis == 1 || axis == -3 ? OX_NHWC_CONCAT : OX_NHWC_NONE;
    }
    return OX_NHWC_NONE;
}

static const ox_tensor *in_nhwc(const ox_kernel_ctx *c, int i)
{
    const ox_tensor *t = ox_kernel_in(c, i);
    return t && t->dtype == OX_DT_FLOAT && t->rank == 4 && (ox_tensor_data(t) || !t->numel)
               ? t
               : NULL;
}

/* ---- pooling ----------------------------------------------------------------- */

typedef struct pool_job {
    const nn_pool2d *g;
    int64_t C;
    const float *X;
    float *Y;
} pool_job;

static void pool_rows(void *ctx, int64_t r0, int64_t r1)
{
    const pool_job *j = ctx;
    nn_pool2d_nhwc(j->g, j->C, j->X, j->Y, r0, r1);
}

static ox_status run_pool(ox_kernel_ctx *c, const ox_tensor *x)
{
    nn_pool2d g;
    bool avg = !strcmp(c->node->op_type, "AveragePool");
    ox_status st = nn_pool2d_geom(c, x, avg, &g);
    if (st)
        return st;
    int64_t od[4] = {x->dims[0], x->dims[1], g.OH, g.OW};
    ox_tensor *y = ox_kernel_output(c, 0, OX_DT_FLOAT, 4, od);
    if (!y)
        return NN_ST(c);
    float *Y = ox_tensor_mutable_data(y);
    if (!y->numel)
        return OX_OK;
    if (!Y)
        return NN_NOMEM(c);
    pool_job j = {&g, x->dims[1], ox_tensor_data(x), Y};
    /* About 64 KiB of output per chunk. */
    int64_t row = g.OW * x->dims[1], grain = row ? 1 + 16384 / row : 1;
    ox_parallel_for(c->pool, x->dims[0] * g.OH, grain, pool_rows, &j);
    return OX_OK;
}

/* Global pooling over a channel range [c0, c1) of every image: each pixel's
 * slice of C is contiguous, so a thread's channel range reads contiguous
 * runs; split over channels (a classifier's 1000 x 13 x 13 ran on one
 * thread and did not scale). */
typedef struct global_job {
    bool avg;
    int64_t N, C, HW;
    const float *X;
    float *Y;
} global_job;

static void global_chans(void *ctx, int64_t c0, int64_t c1)
{
    const global_job *j = ctx;
    enum { CB = 256 };
    double acc[CB];
    for (int64_t n = 0; n < j->N; n++) {
        const float *xn = j->X + n * j->HW * j->C;
        float *yn = j->Y + n * j->C;
        for (int64_t b0 = c0; b0 < c1; b0 += CB) {
            int64_t b1 = b0 + CB < c1 ? b0 + CB : c1, nb = b1 - b0;
            if (j->avg) {
                /* The plain kernel sums in double; so does this (per channel). */
                for (int64_t ch = 0; ch < nb; ch++)
                    acc[ch] = 0.0;
                for (int64_t p = 0; p < j->HW; p++)
                    for (int64_t ch = 0; ch < nb; ch++)
                        acc[ch] += xn[p * j->C + b0 + ch];
                for (int64_t ch = 0; ch < nb; ch++)
                    yn[b0 + ch] = (float)(j->HW ? acc[ch] / (double)j->HW : 0.0);
            } else if (j->HW == 0) {
                for (int64_t ch = b0; ch < b1; ch++)
                    yn[ch] = -INFINITY;   /* the plain kernel's empty maximum */
            } else {
                memcpy(yn + b0, xn + b0, (size_t)nb * sizeof *yn);
                for (int64_t p = 1; p < j->HW; p++)
                    for (int64_t ch = b0; ch < b1; ch++) {
                        float v = xn[p * j->C + ch], m = yn[ch];
                        yn[ch] = (v > m || v != v) ? v : m;
                    }
            }
        }
    }
}

static ox_status run_global(ox_kernel_ctx *c, const ox_tensor *x)
{
    bool avg = !strcmp(c->node->op_type, "GlobalAveragePool");
    int64_t N = x->dims[0], C = x->dims[1], HW = x->dims[2] * x->dims[3];
    int64_t od[4] = {N, C, 1, 1};
    ox_tensor *y = ox_kernel_output(c, 0, OX_DT_FLOAT, 4, od);
    if (!y)
        return NN_ST(c);
    float *Y = ox_tensor_mutable_data(y);
    if (!y->numel)
        return OX_OK;
    if (!Y)
        return NN_NOMEM(c);
    global_job j = {avg, N, C, HW, ox_tensor_data(x), Y};
    /* Chunks of 64 channels (whole cache lines per pixel), at least about
     * 16K inputs each. */
    int64_t per = N * HW > 0 ? 16384 / (N * HW) : C;
    int64_t grain = per < 64 ? 64 : (per + 63) / 64 * 64;
    ox_parallel_for(c->pool, C, grain, global_chans, &j);
    return OX_OK;
}

/* ---- Concat on C ------------------------------------------------------------- */

typedef struct cat_job {
    int n;
    const float *const *x;
    const int64_t *cs;     /* channels per input */
    int64_t C;             /* output channels */
    float *Y;
} cat_job;

static void cat_pixels(void *ctx, int64_t p0, int64_t p1)
{
    const cat_job *j = ctx;
    for (int64_t p = p0; p < p1; p++) {
        float *y = j->Y + p * j->C;
        for (int i = 0; i < j->n; i++) {
            memcpy(y, j->x[i] + p * j->cs[i], (size_t)j->cs[i] * sizeof *y);
            y += j->cs[i];
        }
    }
}

static ox_status run_concat(ox_kernel_ctx *c)
{
    enum { MAXIN = 64 };
    const float *xs[MAXIN];
    int64_t cs[MAXIN];
    const ox_tensor *x0 = in_nhwc(c, 0);
    int64_t od[4] = {x0->dims[0], 0, x0->dims[2], x0->dims[3]};
    for (int i = 0; i < c->n_in; i++) {
        const ox_tensor *x = in_nhwc(c, i);
        if (x->dims[0] != od[0] || x->dims[2] != od[2] || x->dims[3] != od[3])
            return nn_fail(c, OX_ESHAPE, "Concat: input %d differs in a dim other than 1", i);
        xs[i] = ox_tensor_data(x);
        cs[i] = x->dims[1];
        od[1] += cs[i];
    }
    ox_tensor *y = ox_kernel_output(c, 0, OX_DT_FLOAT, 4, od);
    if (!y)
        return NN_ST(c);
    float *Y = ox_tensor_mutable_data(y);
    if (!y->numel)
        return OX_OK;
    if (!Y)
        return NN_NOMEM(c);
    cat_job j = {c->n_in, xs, cs, od[1], Y};
    int64_t grain = od[1] ? 1 + 16384 / od[1] : 1;
    ox_parallel_for(c->pool, od[0] * od[2] * od[3], grain, cat_pixels, &j);
    return OX_OK;
}

bool ox_nhwc_run(ox_nhwc_kind k, ox_kernel_ctx *c, ox_status *st)
{
    *st = OX_OK;
    if (!c->node || c->n_in < 1)
        return false;
    if (k == OX_NHWC_CONCAT) {
        if (c->n_in > 64)
            return false;
        for (int i = 0; i < c->n_in; i++)
            if (!in_nhwc(c, i))
                return false;
        *st = run_concat(c);
        atomic_fetch_add(&g_runs, 1);
        return true;
    }
    const ox_tensor *x = in_nhwc(c, 0);
    if (!x || c->n_in != 1)
        return false;
    if (k == OX_NHWC_POOL)
        *st = run_pool(c, x);
    else if (k == OX_NHWC_GLOBAL_POOL)
        *st = run_global(c, x);
    else
        return false;
    atomic_fetch_add(&g_runs, 1);
    return true;
}

/* ---- lazy channel Concat (exec.c, plan_lazy_concat) ---------------------------- */

static atomic_long g_lazy, g_filled, g_pool_parts;

void ox_nhwc_lazy_counts(long *lazy, long *filled, long *pool_parts)
{
    *lazy = atomic_load(&g_lazy);
    *filled = atomic_load(&g_filled);
    *pool_parts = atomic_load(&g_pool_parts);
}

void ox_nhwc_count_lazy(void)
{
    atomic_fetch_add(&g_lazy, 1);
}

/* True when parts are n float32 rank-4 NHWC tensors that differ in dim 1
 * only; *C gets the sum of their channels. */
static bool parts_ok(const ox_tensor *const *parts, int n, int64_t *C)
{
    *C = 0;
    if (n < 1 || n > 64)
        return false;
    for (int i = 0; i < n; i++) {
        const ox_tensor *x = parts[i];
        if (!x || x->dtype != OX_DT_FLOAT || x->rank != 4 || (!ox_tensor_data(x) && x->numel) ||
            x->dims[0] != parts[0]->dims[0] || x->dims[2] != parts[0]->dims[2] ||
            x->dims[3] != parts[0]->dims[3])
            return false;
        *C += x->dims[1];
    }
    return true;
}

bool ox_nhwc_concat_into(ox_thread_pool *pool, const ox_tensor *const *parts, int n, ox_tensor *y)
{
    const float *xs[64];
    int64_t cs[64], C;
    if (!parts_ok(parts, n, &C) || !y || y->dtype != OX_DT_FLOAT || y->rank != 4 ||
        y->dims[1] != C || y->numel != parts[0]->numel / (parts[0]->dims[1] ? parts[0]->dims[1] : 1) * C)
        return false;
    float *Y = ox_tensor_mutable_data(y);
    if (!y->numel)
        return true;
    if (!Y)
        return false;
    for (int i = 0; i < n; i++)
        xs[i] = ox_tensor_data(parts[i]), cs[i] = parts[i]->dims[1];
    cat_job j = {n, xs, cs, C, Y};
    ox_parallel_for(pool, y->dims[0] * y->dims[2] * y->dims[3], C ? 1 + 16384 / C : 1, cat_pixels, &j);
    atomic_fetch_add(&g_filled, 1);
    return true;
}

typedef struct pool_parts_job {
    const nn_pool2d *g;
    int n;
    const float *const *x;
    const int64_t *cs, *co;   /* channels and output channel offset per part */
    int64_t C;
    float *Y;
} pool_parts_job;

static void pool_parts_rows(void *ctx, int64_t r0, int64_t r1)
{
    const pool_parts_job *j = ctx;
    for (int i = 0; i < j->n; i++)
        nn_pool2d_nhwc_ys(j->g, j->cs[i], j->x[i], j->Y + j->co[i], j->C, r0, r1);
}

bool ox_nhwc_pool_parts(ox_kernel_ctx *c, const ox_tensor *const *parts, int n, ox_status *st)
{
    *st = OX_OK;
    int64_t C;
    const ox_tensor *x = ox_kernel_in(c, 0);
    if (!c->node || c->n_in != 1 || ox_nhwc_kind_of(c->node) != OX_NHWC_POOL || !x ||
        !parts_ok(parts, n, &C) || x->rank != 4 || x->dims[1] != C || x->dims[0] != parts[0]->dims[0] ||
        x->dims[2] != parts[0]->dims[2] || x->dims[3] != parts[0]->dims[3])
        return false;
    nn_pool2d g;
    bool avg = !strcmp(c->node->op_type, "AveragePool");
    /* The geometry from the (unfilled) concatenation: only its shape is read. */
    if ((*st = nn_pool2d_geom(c, x, avg, &g)))
        return true;
    int64_t od[4] = {x->dims[0], C, g.OH, g.OW};
    ox_tensor *y = ox_kernel_output(c, 0, OX_DT_FLOAT, 4, od);
    if (!y) {
        *st = NN_ST(c);
        return true;
    }
    float *Y = ox_tensor_mutable_data(y);
    if (!y->numel)
        return true;
    if (!Y) {
        *st = NN_NOMEM(c);
        return true;
    }
    const float *xs[64];
    int64_t cs[64], co[64], off = 0;
    for (int i = 0; i < n; i++) {
        xs[i] = ox_tensor_data(parts[i]);
        cs[i] = parts[i]->dims[1];
        co[i] = off;
        off += cs[i];
    }
    pool_parts_job j = {&g, n, xs, cs, co, C, Y};
    int64_t row = g.OW * C, grain = row ? 1 + 16384 / row : 1;
    ox_parallel_for(c->pool, x->dims[0] * g.OH, grain, pool_parts_rows, &j);
    atomic_fetch_add(&g_runs, 1);
    atomic_fetch_add(&g_pool_parts, 1);
    return true;
}
