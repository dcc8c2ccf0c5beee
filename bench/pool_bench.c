/* Pooling and channel Concat on SqueezeNet 1.1's shapes: our loops
 * (src/exec/k_nn/pool_fast.c; the Concat loop of src/exec/k_nn/nhwc.c)
 * against oneDNN's pooling and concat primitives, NHWC and NCHW, one thread,
 * median of ITERS calls after a warm-up. Built and run by bench/pool_bench.sh.
 * Only for the record in docs/PERFORMANCE.md of why our own kernels run
 * these ops. */
#include <dnnl.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exec/k_nn/pool_fast.h"

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int iters = 200;
static double times[10000];

#define TIME(expr)                                                  \
    ({                                                              \
        for (int w_ = 0; w_ < 5; w_++) { expr; }                    \
        for (int i_ = 0; i_ < iters; i_++) {                        \
            double t0_ = now_us();                                  \
            expr;                                                   \
            times[i_] = now_us() - t0_;                             \
        }                                                           \
        qsort(times, (size_t)iters, sizeof *times, cmp_d);          \
        times[iters / 2];                                           \
    })

#define CHK(x)                                                      \
    do {                                                            \
        if ((x) != dnnl_success) {                                  \
            fprintf(stderr, "%s failed\n", #x);                     \
            exit(1);                                                \
        }                                                           \
    } while (0)

static dnnl_engine_t eng;
static dnnl_stream_t strm;

/* A oneDNN pooling (max 3x3 stride 2) of [1, C, H, W] in layout `tag`. */
static double dnnl_pool(int64_t C, int64_t H, int64_t W, int64_t OH, int64_t OW,
                        dnnl_format_tag_t tag, const float *x, float *y, const char **impl)
{
    dnnl_memory_desc_t sm, dm;
    dnnl_dims_t sd = {1, C, H, W}, dd = {1, C, OH, OW};
    dnnl_dims_t st = {2, 2}, k = {3, 3}, dl = {0, 0}, pl = {0, 0};
    dnnl_dims_t pr = {(OH - 1) * 2 + 3 - H, (OW - 1) * 2 + 3 - W};
    CHK(dnnl_memory_desc_init_by_tag(&sm, 4, sd, dnnl_f32, tag));
    CHK(dnnl_memory_desc_init_by_tag(&dm, 4, dd, dnnl_f32, tag));
    dnnl_pooling_v2_desc_t pd;
    CHK(dnnl_pooling_v2_forward_desc_init(&pd, dnnl_forward_inference, dnnl_pooling_max, &sm,
                                          &dm, st, k, dl, pl, pr));
    dnnl_primitive_desc_t ppd;
    CHK(dnnl_primitive_desc_create(&ppd, &pd, NULL, eng, NULL));
    dnnl_primitive_desc_query(ppd, dnnl_query_impl_info_str, 0, impl);
    dnnl_primitive_t p;
    CHK(dnnl_primitive_create(&p, ppd));
    dnnl_memory_t xm, ym;
    CHK(dnnl_memory_create(&xm, &sm, eng, (void *)x));
    CHK(dnnl_memory_create(&ym, &dm, eng, y));
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_SRC, xm}, {DNNL_ARG_DST, ym}};
    double t = TIME(dnnl_primitive_execute(p, strm, 2, args); dnnl_stream_wait(strm));
    dnnl_primitive_destroy(p);
    dnnl_memory_destroy(xm);
    dnnl_memory_destroy(ym);
    return t;
}

/* A oneDNN concat of two [1, C, H, W] NHWC tensors on the channels. */
static double dnnl_cat(int64_t C, int64_t H, int64_t W, const float *a, const float *b, float *y,
                       const char **impl)
{
    dnnl_memory_desc_t s[2], dm;
    dnnl_dims_t sd = {1, C, H, W}, dd = {1, 2 * C, H, W};
    CHK(dnnl_memory_desc_init_by_tag(&s[0], 4, sd, dnnl_f32, dnnl_nhwc));
    s[1] = s[0];
    CHK(dnnl_memory_desc_init_by_tag(&dm, 4, dd, dnnl_f32, dnnl_nhwc));
    dnnl_primitive_desc_t cpd;
    CHK(dnnl_concat_primitive_desc_create(&cpd, &dm, 2, 1, s, NULL, eng));
    dnnl_primitive_desc_query(cpd, dnnl_query_impl_info_str, 0, impl);
    dnnl_primitive_t p;
    CHK(dnnl_primitive_create(&p, cpd));
    dnnl_memory_t am, bm, ym;
    CHK(dnnl_memory_create(&am, &s[0], eng, (void *)a));
    CHK(dnnl_memory_create(&bm, &s[1], eng, (void *)b));
    CHK(dnnl_memory_create(&ym, &dm, eng, y));
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_MULTIPLE_SRC, am}, {DNNL_ARG_MULTIPLE_SRC + 1, bm},
                               {DNNL_ARG_DST, ym}};
    double t = TIME(dnnl_primitive_execute(p, strm, 3, args); dnnl_stream_wait(strm));
    dnnl_primitive_destroy(p);
    dnnl_memory_destroy(am);
    dnnl_memory_destroy(bm);
    dnnl_memory_destroy(ym);
    return t;
}

/* nhwc.c's Concat loop: per pixel, each input's channels. */
static void our_cat(int64_t C, int64_t HW, const float *a, const float *b, float *y)
{
    for (int64_t p = 0; p < HW; p++) {
        memcpy(y + p * 2 * C, a + p * C, (size_t)C * sizeof *y);
        memcpy(y + p * 2 * C + C, b + p * C, (size_t)C * sizeof *y);
    }
}

int main(int argc, char **argv)
{
    if (argc > 1)
        iters = atoi(argv[1]) > 0 && atoi(argv[1]) <= 10000 ? atoi(argv[1]) : 200;
    omp_set_num_threads(1);
    CHK(dnnl_engine_create(&eng, dnnl_cpu, 0));
    CHK(dnnl_stream_create(&strm, eng, dnnl_stream_default_flags));
    printf("| op (SqueezeNet 1.1 shape) | ours NHWC us | oneDNN NHWC us | ours NCHW us "
           "| oneDNN NCHW us | oneDNN impl (NHWC / NCHW) |\n");
    printf("|---|---|---|---|---|---|\n");
    static const int64_t pools[3][3] = {{64, 111, 111}, {128, 55, 55}, {256, 27, 27}};
    for (int s = 0; s < 3; s++) {
        int64_t C = pools[s][0], H = pools[s][1], W = pools[s][2];
        nn_pool2d g = {.H = H, .W = W, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .dh = 1, .dw = 1,
                       .planes = C};
        g.OH = (H - 3 + 1) / 2 + 1;   /* ceil_mode */
        g.OW = (W - 3 + 1) / 2 + 1;
        if ((g.OH - 1) * 2 >= H)
            g.OH--;
        if ((g.OW - 1) * 2 >= W)
            g.OW--;
        size_t n = (size_t)(C * H * W), m = (size_t)(C * g.OH * g.OW);
        float *x = aligned_alloc(64, n * 4), *y = aligned_alloc(64, m * 4);
        for (size_t i = 0; i < n; i++)
            x[i] = (float)(rand() % 1000) / 1000.0f;
        const char *i1 = "?", *i2 = "?";
        double on = TIME(nn_pool2d_nhwc(&g, C, x, y, 0, g.OH));
        double dn = dnnl_pool(C, H, W, g.OH, g.OW, dnnl_nhwc, x, y, &i1);
        double oc = TIME(nn_pool2d_nchw(&g, x, y, 0, C));
        double dc = dnnl_pool(C, H, W, g.OH, g.OW, dnnl_nchw, x, y, &i2);
        printf("| MaxPool 3x3/2 [1,%lld,%lld,%lld] | %.1f | %.1f | %.1f | %.1f | %s / %s |\n",
               (long long)C, (long long)H, (long long)W, on, dn, oc, dc, i1, i2);
        free(x);
        free(y);
    }
    static const int64_t cats[3][3] = {{64, 55, 55}, {128, 27, 27}, {256, 13, 13}};
    for (int s = 0; s < 3; s++) {
        int64_t C = cats[s][0], H = cats[s][1], W = cats[s][2];
        size_t n = (size_t)(C * H * W);
        float *a = aligned_alloc(64, n * 4), *b = aligned_alloc(64, n * 4);
        float *y = aligned_alloc(64, 2 * n * 4);
        for (size_t i = 0; i < n; i++)
            a[i] = b[i] = (float)i;
        const char *i1 = "?";
        double oc = TIME(our_cat(C, H * W, a, b, y));
        double dc = dnnl_cat(C, H, W, a, b, y, &i1);
        printf("| Concat 2 x [1,%lld,%lld,%lld] on C | %.1f | %.1f | - | - | %s |\n", (long long)C,
               (long long)H, (long long)W, oc, dc, i1);
        free(a);
        free(b);
        free(y);
    }
    return 0;
}
