/* Per-kernel-class GFLOP/s of the routes the executor could take, in one
 * process (issue 14 item 1; bench/kernel_bench.sh runs it, docs/PERFORMANCE.md
 * records the figures and why each route is used):
 *   own       the executor on a one-node model with ONNXSCOPE_NO_DNNL=1
 *             (our kernels: AVX2 SGEMM, im2col/direct convolutions, pooling)
 *   OpenBLAS  cblas_sgemm (convolutions: im2col per group + cblas_sgemm;
 *             batched MatMul: one call per batch) when built with OpenBLAS
 *   dnnl_sgemm oneDNN's BLAS-like SGEMM through our binding (ox_dnnl_sgemm,
 *             what our kernels' own GEMMs call when the backend is on), with
 *             the same im2col for convolutions
 *   executor  the executor on the same model as `bench` runs it (oneDNN
 *             primitives where the backend takes the node), and for
 *             shape-preserving convolutions a chain of 4 such nodes (the
 *             edges between them may stay channels-last)
 * Each figure is the median of the timed calls after one warm-up (at least
 * --reps calls and --min-ms of calls). FLOPs: 2*M*N*K per GEMM; for pooling
 * the window reads (out * kh * kw), so its column is "G window reads/s".
 *   kernel_bench [--threads N] [--reps R] [--min-ms MS] [--only SUBSTR] [--cpu-time]
 *   kernel_bench --openblas-core   (the core OpenBLAS picked, for the script)
 * Prints markdown table rows (the script prints the header). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef OX_BENCH_OPENBLAS
#include <cblas.h>
#endif

#include "exec/dnnl_backend.h"
#include "onnxscope/exec.h"
#include "onnxscope/ir.h"
#include "onnxscope/tensor.h"

static int g_threads = 1, g_reps = 10;
static double g_min_ms = 300;
/* --cpu-time: the process's CPU time instead of the wall clock. With one
 * thread on a loaded machine this leaves out the time the kernel waited
 * for a core (it still pays for caches shared with other processes); with
 * more threads it sums them (spinning included), so it is not a scaling
 * measure. */
static clockid_t g_clock = CLOCK_MONOTONIC;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(g_clock, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static uint64_t rng = 0x2545f4914f6cdd1dull;

static float *rand_floats(int64_t n)
{
    float *p = malloc((size_t)n * sizeof *p);
    if (!p) {
        fprintf(stderr, "kernel_bench: out of memory\n");
        exit(1);
    }
    for (int64_t i = 0; i < n; i++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        p[i] = (float)((int)((rng >> 33) % 2001) - 1000) / 1000.0f;
    }
    return p;
}

static ox_tensor *rand_tensor(int rank, const int64_t *dims)
{
    ox_tensor *t = ox_tensor_new(OX_DT_FLOAT, rank, dims);
    if (!t) {
        fprintf(stderr, "kernel_bench: out of memory\n");
        exit(1);
    }
    float *r = rand_floats(t->numel);
    memcpy(ox_tensor_data(t), r, (size_t)t->numel * sizeof *r);
    free(r);
    return t;
}

/* ---- kernel classes ---------------------------------------------------------- */

typedef enum { C_MATMUL, C_CONV, C_MAXPOOL, C_GAP } kclass;

typedef struct kcase {
    const char *name;
    kclass k;
    /* MatMul: batch x M x K times (batch x) K x N; B constant when !b_runtime */
    int64_t batch, M, N, K;
    bool b_runtime;
    /* Conv / pooling (batch 1, NCHW): C -> Mo channels, H x W, kernel kh x kw */
    int64_t C, Mo, H, W, kh, kw, stride, pad, group;
} kcase;

static const kcase cases[] = {
    {"SGEMM 1024^3", C_MATMUL, 0, 1024, 1024, 1024, false},
    {"SGEMM 2048^3", C_MATMUL, 0, 2048, 2048, 2048, false},
    {"SGEMM 128x3072x768 (BERT-base FFN)", C_MATMUL, 0, 128, 3072, 768, false},
    {"GEMV-like 1x3072x768 (M=1 FC)", C_MATMUL, 0, 1, 3072, 768, false},
    {"batched MatMul 12x(128x64 . 64x128) (attention QK^T)", C_MATMUL, 12, 128, 128, 64, true},
    {"Conv 7x7 s2 3->64 224x224 (ResNet stem)", C_CONV, .C = 3, .Mo = 64, .H = 224, .W = 224,
     .kh = 7, .kw = 7, .stride = 2, .pad = 3, .group = 1},
    {"Conv 3x3 64->64 56x56 (ResNet layer1)", C_CONV, .C = 64, .Mo = 64, .H = 56, .W = 56,
     .kh = 3, .kw = 3, .stride = 1, .pad = 1, .group = 1},
    {"Conv 3x3 256->256 14x14 (ResNet layer3)", C_CONV, .C = 256, .Mo = 256, .H = 14, .W = 14,
     .kh = 3, .kw = 3, .stride = 1, .pad = 1, .group = 1},
    {"Conv 1x1 256->64 56x56 (ResNet layer1)", C_CONV, .C = 256, .Mo = 64, .H = 56, .W = 56,
     .kh = 1, .kw = 1, .stride = 1, .pad = 0, .group = 1},
    {"Conv 1x1 1024->1024 14x14", C_CONV, .C = 1024, .Mo = 1024, .H = 14, .W = 14, .kh = 1,
     .kw = 1, .stride = 1, .pad = 0, .group = 1},
    {"Conv 1x1 24->144 56x56 (MobileNetV2 expand)", C_CONV, .C = 24, .Mo = 144, .H = 56,
     .W = 56, .kh = 1, .kw = 1, .stride = 1, .pad = 0, .group = 1},
    {"depthwise 3x3 144 ch 56x56 (MobileNetV2)", C_CONV, .C = 144, .Mo = 144, .H = 56, .W = 56,
     .kh = 3, .kw = 3, .stride = 1, .pad = 1, .group = 144},
    {"MaxPool 3x3 s2 64 ch 112x112 (ResNet stem)", C_MAXPOOL, .C = 64, .Mo = 64, .H = 112,
     .W = 112, .kh = 3, .kw = 3, .stride = 2, .pad = 1},
    {"GlobalAveragePool 2048 ch 7x7 (ResNet head)", C_GAP, .C = 2048, .Mo = 2048, .H = 7,
     .W = 7, .kh = 7, .kw = 7, .stride = 1, .pad = 0},
};

static int64_t out_dim(int64_t in, int64_t k, int64_t s, int64_t p)
{
    return (in + 2 * p - k) / s + 1;
}

static double case_flops(const kcase *c)
{
    if (c->k == C_MATMUL)
        return 2.0 * (c->batch ? c->batch : 1) * c->M * c->N * c->K;
    int64_t oh = out_dim(c->H, c->kh, c->stride, c->pad), ow = out_dim(c->W, c->kw, c->stride, c->pad);
    if (c->k == C_CONV)
        return 2.0 * c->Mo * oh * ow * (c->C / c->group) * c->kh * c->kw;
    return (double)c->Mo * oh * ow * c->kh * c->kw;
}

static bool conv_chainable(const kcase *c)
{
    return c->k == C_CONV && c->C == c->Mo && c->stride == 1 && 2 * c->pad == c->kh - 1 &&
           c->kh == c->kw;
}

/* ---- the executor on a model of `nodes` copies of the case ------------------ */

typedef struct xrun {
    ox_exec *e;
    ox_model *m;
    int n_in;
    ox_rval *in[2];
    bool own;     /* our kernels: their own GEMMs must not call dnnl_sgemm either */
    long dnnl_runs;
} xrun;

static bool xrun_once(void *arg)
{
    xrun *x = arg;
    ox_rval *out = NULL;
    ox_error err = {0};
    long r0, r1, a;
    if (x->own)
        setenv("ONNXSCOPE_NO_DNNL", "1", 1);
    ox_dnnl_counts(&r0, &a);
    ox_status st = ox_exec_run(x->e, x->n_in, x->in, 1, &out, &err);
    ox_dnnl_counts(&r1, &a);
    x->dnnl_runs += r1 - r0;
    if (x->own)
        unsetenv("ONNXSCOPE_NO_DNNL");
    if (st) {
        fprintf(stderr, "kernel_bench: run: %s\n", err.msg);
        return false;
    }
    ox_rval_free(out);
    return true;
}

static ox_model *build_model(const kcase *c, int nodes, ox_tensor **inputs, int *n_in)
{
    ox_model *m = ox_model_new();
    ox_model_set_opset(m, "", 13);
    ox_graph *g = m->graph ? m->graph : ox_graph_new(m, NULL);
    m->graph = g;
    *n_in = 0;
    int64_t xd[4];
    int xr;
    if (c->k == C_MATMUL) {
        xr = c->batch ? 3 : 2;
        int64_t d3[3] = {c->batch, c->M, c->K}, d2[2] = {c->M, c->K};
        memcpy(xd, c->batch ? d3 : d2, sizeof(int64_t) * (size_t)xr);
    } else {
        xr = 4;
        xd[0] = 1, xd[1] = c->C, xd[2] = c->H, xd[3] = c->W;
    }
    ox_value *x = ox_graph_value(g, "x");
    x->type = ox_type_new_tensor(OX_DT_FLOAT, xr, xd);
    ox_graph_add_input(g, x);
    inputs[(*n_in)++] = rand_tensor(xr, xd);
    ox_value *cur = x;
    for (int i = 0; i < nodes; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, i == nodes - 1 ? "y" : "v%d", i);
        ox_value *y = ox_graph_value(g, nm);
        ox_value *ins[3] = {cur, NULL, NULL};
        int nin = 1;
        const char *op = "MatMul";
        if (c->k == C_MATMUL || c->k == C_CONV) {
            snprintf(nm, sizeof nm, "w%d", i);
            ox_value *w = ox_graph_value(g, nm);
            int64_t wd[4];
            int wr;
            if (c->k == C_MATMUL) {
                wr = c->batch ? 3 : 2;
                int64_t d3[3] = {c->batch, c->K, c->N}, d2[2] = {c->K, c->N};
                memcpy(wd, c->batch ? d3 : d2, sizeof(int64_t) * (size_t)wr);
            } else {
                wr = 4;
                wd[0] = c->Mo, wd[1] = c->C / c->group, wd[2] = c->kh, wd[3] = c->kw;
                op = "Conv";
            }
            if (c->b_runtime) {
                w->type = ox_type_new_tensor(OX_DT_FLOAT, wr, wd);
                ox_graph_add_input(g, w);
                inputs[(*n_in)++] = rand_tensor(wr, wd);
            } else {
                ox_graph_set_initializer(g, w, rand_tensor(wr, wd));
            }
            ins[1] = w;
            nin = 2;
            if (c->k == C_CONV) {
                snprintf(nm, sizeof nm, "b%d", i);
                ox_value *b = ox_graph_value(g, nm);
                ox_graph_set_initializer(g, b, rand_tensor(1, &c->Mo));
                ins[2] = b;
                nin = 3;
            }
        } else {
            op = c->k == C_MAXPOOL ? "MaxPool" : "GlobalAveragePool";
        }
        snprintf(nm, sizeof nm, "n%d", i);
        ox_node *n = ox_node_new(g, op, "", nm, nin, ins, 1, &y);
        if (c->k == C_CONV || c->k == C_MAXPOOL) {
            int64_t k[2] = {c->kh, c->kw}, s[2] = {c->stride, c->stride};
            int64_t p[4] = {c->pad, c->pad, c->pad, c->pad};
            ox_node_set_attr_ints(n, "kernel_shape", 2, k);
            ox_node_set_attr_ints(n, "strides", 2, s);
            ox_node_set_attr_ints(n, "pads", 4, p);
            if (c->k == C_CONV)
                ox_node_set_attr_i(n, "group", c->group);
        }
        cur = y;
    }
    ox_graph_add_output(g, cur);
    return m;
}

/* The executor on the case (nodes copies), planned with our kernels only
 * (own) or the default; false when planning fails. */
static bool exec_setup(xrun *x, const kcase *c, int nodes, bool own)
{
    if (own)
        setenv("ONNXSCOPE_NO_DNNL", "1", 1);
    else
        unsetenv("ONNXSCOPE_NO_DNNL");
    ox_tensor *inputs[2];
    memset(x, 0, sizeof *x);
    x->own = own;
    x->m = build_model(c, nodes, inputs, &x->n_in);
    ox_exec_opts o = {.threads = g_threads};
    ox_error err = {0};
    ox_status st = ox_exec_new(x->m, &o, &x->e, &err);
    unsetenv("ONNXSCOPE_NO_DNNL");
    for (int i = 0; i < x->n_in; i++)
        x->in[i] = ox_rval_tensor(inputs[i]);
    if (st) {
        fprintf(stderr, "kernel_bench: %s: plan: %s\n", c->name, err.msg);
        x->e = NULL;
        return false;
    }
    return true;
}

static void exec_teardown(xrun *x)
{
    for (int i = 0; i < x->n_in; i++)
        ox_rval_free(x->in[i]);
    ox_exec_free(x->e);
    ox_model_free(x->m);
}

/* ---- library SGEMM routes (OpenBLAS, oneDNN's dnnl_sgemm) ------------------- */

typedef bool (*sgemm_fn)(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                         const float *B, int64_t ldb, float *C, int64_t ldc);

#ifdef OX_BENCH_OPENBLAS
static bool blas_sgemm(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                       const float *B, int64_t ldb, float *C, int64_t ldc)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0f, A,
                (int)lda, B, (int)ldb, 0.0f, C, (int)ldc);
    return true;
}
#endif

static bool dnnl_sgemm_route(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                             const float *B, int64_t ldb, float *C, int64_t ldc)
{
    return ox_dnnl_sgemm(g_threads, false, false, M, N, K, 1.0f, A, lda, B, ldb, 0.0f, C, ldc);
}

typedef struct lrun {
    const kcase *c;
    sgemm_fn gemm;
    float *x, *w, *y, *col;
} lrun;

/* NCHW batch-1 im2col of channels [c0, c0+cg): rows (ci, ky, kx), columns
 * the output pixels (row-major), zeros in the padding. */
static void im2col(const kcase *c, const float *x, int64_t c0, int64_t cg, float *col)
{
    int64_t oh = out_dim(c->H, c->kh, c->stride, c->pad), ow = out_dim(c->W, c->kw, c->stride, c->pad);
    for (int64_t ci = 0; ci < cg; ci++)
        for (int64_t ky = 0; ky < c->kh; ky++)
            for (int64_t kx = 0; kx < c->kw; kx++) {
                float *row = col + ((ci * c->kh + ky) * c->kw + kx) * oh * ow;
                const float *src = x + (c0 + ci) * c->H * c->W;
                for (int64_t oy = 0; oy < oh; oy++) {
                    int64_t iy = oy * c->stride - c->pad + ky;
                    for (int64_t ox = 0; ox < ow; ox++) {
                        int64_t ix = ox * c->stride - c->pad + kx;
                        row[oy * ow + ox] = iy >= 0 && iy < c->H && ix >= 0 && ix < c->W
                                                ? src[iy * c->W + ix] : 0.0f;
                    }
                }
            }
}

static bool lrun_once(void *arg)
{
    lrun *l = arg;
    const kcase *c = l->c;
    if (c->k == C_MATMUL) {
        int64_t nb = c->batch ? c->batch : 1;
        for (int64_t b = 0; b < nb; b++)
            if (!l->gemm(c->M, c->N, c->K, l->x + b * c->M * c->K, c->K,
                         l->w + b * c->K * c->N, c->N, l->y + b * c->M * c->N, c->N))
                return false;
        return true;
    }
    int64_t oh = out_dim(c->H, c->kh, c->stride, c->pad), ow = out_dim(c->W, c->kw, c->stride, c->pad);
    int64_t cg = c->C / c->group, mg = c->Mo / c->group, kk = cg * c->kh * c->kw;
    for (int64_t g = 0; g < c->group; g++) {
        const float *cols = l->x + g * cg * c->H * c->W;
        if (!(c->kh == 1 && c->kw == 1 && c->stride == 1 && c->pad == 0)) {
            im2col(c, l->x, g * cg, cg, l->col);
            cols = l->col;
        }
        if (!l->gemm(mg, oh * ow, kk, l->w + g * mg * kk, kk, cols, oh * ow,
                     l->y + g * mg * oh * ow, oh * ow))
            return false;
    }
    /* the bias, as the executor's Conv has one */
    for (int64_t o = 0; o < c->Mo; o++)
        for (int64_t i = 0; i < oh * ow; i++)
            l->y[o * oh * ow + i] += 0.5f;
    return true;
}

static void lib_setup(lrun *l, const kcase *c, sgemm_fn gemm)
{
    memset(l, 0, sizeof *l);
    l->c = c, l->gemm = gemm;
    int64_t nb = c->batch ? c->batch : 1;
    if (c->k == C_MATMUL) {
        l->x = rand_floats(nb * c->M * c->K);
        l->w = rand_floats(nb * c->K * c->N);
        l->y = rand_floats(nb * c->M * c->N);
    } else {
        int64_t oh = out_dim(c->H, c->kh, c->stride, c->pad), ow = out_dim(c->W, c->kw, c->stride, c->pad);
        int64_t cg = c->C / c->group;
        l->x = rand_floats(c->C * c->H * c->W);
        l->w = rand_floats(c->Mo * cg * c->kh * c->kw);
        l->y = rand_floats(c->Mo * oh * ow);
        l->col = rand_floats(cg * c->kh * c->kw * oh * ow);
    }
}

static void lib_teardown(lrun *l)
{
    free(l->x), free(l->w), free(l->y), free(l->col);
}

/* ---- timing: the routes of a case interleaved, call by call ------------------ */

enum { R_OWN, R_BLAS, R_DSGEMM, R_EXEC, R_CHAIN, NR };

typedef struct route {
    bool on;
    bool (*fn)(void *);
    void *arg;
    double t[1000];
    int n;
    double med;   /* median ms, < 0 when the route is off or failed */
} route;

/* One warm-up call each, then rounds of one call per route until every
 * route has --reps calls and the rounds took --min-ms times the routes; a
 * load change between routes then hits all of them alike. */
static void time_routes(route *r)
{
    for (int k = 0; k < NR; k++) {
        r[k].med = -1;
        if (r[k].on && !r[k].fn(r[k].arg))
            r[k].on = false;
    }
    int on = 0;
    for (int k = 0; k < NR; k++)
        on += r[k].on;
    double start = now_ms();
    for (int n = 0; n < 1000 && (n < g_reps || now_ms() - start < g_min_ms * on); n++)
        for (int k = 0; k < NR; k++) {
            if (!r[k].on)
                continue;
            double t0 = now_ms();
            if (!r[k].fn(r[k].arg)) {
                r[k].on = false;
                continue;
            }
            r[k].t[r[k].n++] = now_ms() - t0;
        }
    for (int k = 0; k < NR; k++)
        if (r[k].on && r[k].n) {
            qsort(r[k].t, (size_t)r[k].n, sizeof(double), cmp_d);
            r[k].med = r[k].t[r[k].n / 2];
        }
}

/* ---- output -------------------------------------------------------------------- */

static void cell(char *buf, size_t n, double flops, double ms)
{
    if (ms <= 0)
        snprintf(buf, n, "-");
    else
        snprintf(buf, n, "%.1f", flops / (ms * 1e6));
}

int main(int argc, char **argv)
{
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            g_threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            g_reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--min-ms") && i + 1 < argc)
            g_min_ms = atof(argv[++i]);
        else if (!strcmp(argv[i], "--only") && i + 1 < argc)
            only = argv[++i];
        else if (!strcmp(argv[i], "--cpu-time"))
            g_clock = CLOCK_PROCESS_CPUTIME_ID;
        else if (!strcmp(argv[i], "--openblas-core")) {
#ifdef OX_BENCH_OPENBLAS
            puts(openblas_get_corename());
            return 0;
#else
            return 1;
#endif
        }
        else {
            fprintf(stderr, "usage: kernel_bench [--threads N] [--reps R] [--min-ms MS] "
                            "[--only SUBSTR] [--cpu-time] [--openblas-core]\n");
            return 2;
        }
    }
    if (g_threads < 1 || g_reps < 1 || g_reps > 1000) {
        fprintf(stderr, "kernel_bench: --threads and --reps (1-1000) must be positive\n");
        return 2;
    }
#ifdef OX_BENCH_OPENBLAS
    openblas_set_num_threads(g_threads);
#endif
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const kcase *c = &cases[i];
        if (only && !strstr(c->name, only))
            continue;
        double fl = case_flops(c);
        static route r[NR];
        memset(r, 0, sizeof r);
        xrun xo, xe, xc;
        lrun lb, ld;
        bool lib = c->k == C_MATMUL || c->k == C_CONV;
        r[R_OWN] = (route){.on = exec_setup(&xo, c, 1, true), .fn = xrun_once, .arg = &xo};
#ifdef OX_BENCH_OPENBLAS
        if (lib) {
            lib_setup(&lb, c, blas_sgemm);
            r[R_BLAS] = (route){.on = true, .fn = lrun_once, .arg = &lb};
        }
#endif
        if (lib && ox_dnnl_enabled()) {
            lib_setup(&ld, c, dnnl_sgemm_route);
            r[R_DSGEMM] = (route){.on = true, .fn = lrun_once, .arg = &ld};
        }
        r[R_EXEC] = (route){.on = exec_setup(&xe, c, 1, false), .fn = xrun_once, .arg = &xe};
        if (conv_chainable(c))
            r[R_CHAIN] = (route){.on = exec_setup(&xc, c, 4, false), .fn = xrun_once, .arg = &xc};
        time_routes(r);
        double own = r[R_OWN].med, blas = r[R_BLAS].med, dsg = r[R_DSGEMM].med;
        double ex = r[R_EXEC].med, chain = r[R_CHAIN].med;
        bool ex_dnnl = xe.dnnl_runs > 0;
        exec_teardown(&xo);
        exec_teardown(&xe);
        if (conv_chainable(c))
            exec_teardown(&xc);
        if (r[R_BLAS].arg)
            lib_teardown(&lb);
        if (r[R_DSGEMM].arg)
            lib_teardown(&ld);
        char s[5][32];
        cell(s[0], sizeof s[0], fl, own);
        cell(s[1], sizeof s[1], fl, blas);
        cell(s[2], sizeof s[2], fl, dsg);
        cell(s[3], sizeof s[3], fl, ex);
        cell(s[4], sizeof s[4], 4 * fl, chain);
        double best = blas > 0 && (dsg <= 0 || blas < dsg) ? blas : dsg;
        char ratio[32] = "-";
        if (best > 0 && ex > 0)
            snprintf(ratio, sizeof ratio, "%.0f %%", 100.0 * best / ex);
        printf("| %s | %d | %s | %s | %s | %s (%s, %.3f ms) | %s | %s |\n", c->name, g_threads,
               s[0], s[1], s[2], s[3], ex_dnnl ? "oneDNN" : "own", ex, s[4], ratio);
        fflush(stdout);
    }
    return 0;
}
