/* Which oneDNN implementation a convolution gets for each destination layout,
 * and its time (one thread unless OMP_NUM_THREADS says otherwise): the
 * question behind the lazy channel Concat (docs/EXECUTOR.md). Modes per
 * SqueezeNet 1.1 fire-module shape (1x1 and 3x3, bias + Relu):
 *   0 NHWC -> NHWC (dense)           1 NHWC -> NHWC with channel stride 2C
 *   2 NHWC -> nChw16c                3 nChw16c -> nChw16c
 *   4 any -> any (oneDNN's choice)
 * Build and run (not part of the meson build; needs libdnnl-dev 2.x):
 *   cc -O2 bench/dnnl_dst_probe.c -o /tmp/dnnl_dst_probe -ldnnl && /tmp/dnnl_dst_probe */
#include <dnnl.h>
#include <stdio.h>
#include <time.h>

static dnnl_engine_t eng;
static dnnl_stream_t strm;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void probe(int H, int Ci, int Co, int K, int mode)
{
    dnnl_dims_t xd = {1, Ci, H, H}, yd = {1, Co, H, H}, wd = {Co, Ci, K, K}, bd = {Co};
    dnnl_memory_desc_t x, y, w, b;
    dnnl_format_tag_t stag = dnnl_nhwc, dtag = dnnl_nhwc;
    if (mode == 2)
        dtag = dnnl_nChw16c;
    else if (mode == 3)
        stag = dtag = dnnl_nChw16c;
    else if (mode == 4)
        stag = dtag = dnnl_format_tag_any;
    dnnl_memory_desc_init_by_tag(&x, 4, xd, dnnl_f32, stag);
    if (mode == 1) {
        /* A channel slice of a [1, 2*Co, H, H] NHWC tensor. */
        dnnl_dims_t s = {(dnnl_dim_t)H * H * 2 * Co, 1, (dnnl_dim_t)H * 2 * Co, 2 * Co};
        dnnl_memory_desc_init_by_strides(&y, 4, yd, dnnl_f32, s);
    } else {
        dnnl_memory_desc_init_by_tag(&y, 4, yd, dnnl_f32, dtag);
    }
    dnnl_memory_desc_init_by_tag(&w, 4, wd, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&b, 1, bd, dnnl_f32, dnnl_a);
    dnnl_dims_t s1 = {1, 1}, d0 = {0, 0}, p = {K / 2, K / 2};
    dnnl_convolution_desc_t cd;
    dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference,
                                               dnnl_convolution_direct, &x, &w, &b, &y, s1, d0,
                                               p, p);
    dnnl_primitive_attr_t a;
    dnnl_post_ops_t po;
    dnnl_primitive_attr_create(&a);
    dnnl_post_ops_create(&po);
    dnnl_post_ops_append_eltwise(po, 1.f, dnnl_eltwise_relu, 0, 0);
    dnnl_primitive_attr_set_post_ops(a, po);
    dnnl_primitive_desc_t pd;
    if (dnnl_primitive_desc_create(&pd, &cd, a, eng, NULL) != dnnl_success) {
        printf("H%d %d->%d k%d mode%d: no primitive\n", H, Ci, Co, K, mode);
        return;
    }
    const char *impl = "?";
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    const dnnl_memory_desc_t *sm = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    const dnnl_memory_desc_t *dm = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    const dnnl_memory_desc_t *wm = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    dnnl_primitive_t pr;
    dnnl_primitive_create(&pr, pd);
    dnnl_memory_t ms, md, mw, mb;
    dnnl_memory_create(&ms, sm, eng, DNNL_MEMORY_ALLOCATE);
    dnnl_memory_create(&md, dm, eng, DNNL_MEMORY_ALLOCATE);
    dnnl_memory_create(&mw, wm, eng, DNNL_MEMORY_ALLOCATE);
    dnnl_memory_create(&mb, &b, eng, DNNL_MEMORY_ALLOCATE);
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, ms}, {DNNL_ARG_WEIGHTS, mw}, {DNNL_ARG_BIAS, mb},
                               {DNNL_ARG_DST, md}};
    for (int i = 0; i < 5; i++)
        dnnl_primitive_execute(pr, strm, 4, args);
    dnnl_stream_wait(strm);
    double best = 1e9;
    for (int r = 0; r < 7; r++) {
        double t0 = now();
        for (int i = 0; i < 20; i++)
            dnnl_primitive_execute(pr, strm, 4, args);
        dnnl_stream_wait(strm);
        double t = (now() - t0) / 20;
        best = t < best ? t : best;
    }
    printf("H%d %d->%d k%d mode%d: %-28s %.1f us\n", H, Ci, Co, K, mode, impl, best * 1e6);
    dnnl_memory_destroy(ms);
    dnnl_memory_destroy(md);
    dnnl_memory_destroy(mw);
    dnnl_memory_destroy(mb);
    dnnl_primitive_destroy(pr);
    dnnl_primitive_desc_destroy(pd);
    dnnl_post_ops_destroy(po);
    dnnl_primitive_attr_destroy(a);
}

int main(void)
{
    dnnl_engine_create(&eng, dnnl_cpu, 0);
    dnnl_stream_create(&strm, eng, 0);
    static const int shapes[][3] = {{55, 16, 64}, {27, 32, 128}, {13, 64, 256}};
    for (int s = 0; s < 3; s++)
        for (int k = 1; k <= 3; k += 2)
            for (int m = 0; m < 5; m++)
                probe(shapes[s][0], shapes[s][1], shapes[s][2], k, m);
    return 0;
}
