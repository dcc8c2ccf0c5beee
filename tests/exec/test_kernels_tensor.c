/* Unit tests of the tensor-manipulation kernels, called directly through
 * a hand-built ox_kernel_ctx. Expected values come from the examples in the
 * ONNX operator specification (docs/Operators.md) or are derived by hand
 * from its definitions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "onnxscope/exec.h"

#include "kcase.h"

static void attr_ints(kcase *k, const char *name, int n, const int64_t *v)
{
    ox_attr *a = kc_attr(k, name, OX_ATTR_INTS);
    a->ints = (int64_t *)v;
    a->n = n;
}

static ox_tensor *tf(int rank, const int64_t *dims, const float *v)
{
    ox_tensor *t = ox_tensor_new(OX_DT_FLOAT, rank, dims);
    assert_non_null(t);
    if (t->numel)
        memcpy(ox_tensor_data(t), v, sizeof(float) * (size_t)t->numel);
    return t;
}

static ox_tensor *ti(int rank, const int64_t *dims, const int64_t *v)
{
    ox_tensor *t = ox_tensor_new(OX_DT_INT64, rank, dims);
    assert_non_null(t);
    if (t->numel)
        memcpy(ox_tensor_data(t), v, sizeof(int64_t) * (size_t)t->numel);
    return t;
}

static ox_tensor *ti1(int n, const int64_t *v)
{
    int64_t d = n;
    return ti(1, &d, v);
}

static void kc_in(kcase *k, ox_tensor *t)
{
    k->in[k->ctx.n_in++] = t ? ox_rval_tensor(t) : NULL;
}

static ox_status kc_run(kcase *k)
{
    ox_kernel_fn fn = ox_kernel_lookup("", k->node.op_type, k->ctx.opset);
    assert_non_null(fn);
    return fn(&k->ctx);
}

static const ox_tensor *kc_out(kcase *k, int i)
{
    assert_non_null(k->out[i]);
    assert_int_equal(k->out[i]->kind, OX_RV_TENSOR);
    return k->out[i]->t;
}

static void kc_free(kcase *k)
{
    for (int i = 0; i < 8; i++) {
        ox_rval_free(k->in[i]);
        ox_rval_free(k->out[i]);
    }
}

static void expect_shape(const ox_tensor *t, int rank, const int64_t *dims)
{
    assert_int_equal(t->rank, rank);
    for (int i = 0; i < rank; i++)
        assert_int_equal(t->dims[i], dims[i]);
}

static void expect_f(const ox_tensor *t, int64_t n, const float *v)
{
    assert_int_equal(t->dtype, OX_DT_FLOAT);
    assert_int_equal(t->numel, n);
    const float *p = ox_tensor_data(t);
    for (int64_t i = 0; i < n; i++)
        assert_float_equal(p[i], v[i], 1e-5);
}

static void expect_i(const ox_tensor *t, int64_t n, const int64_t *v)
{
    assert_int_equal(t->numel, n);
    for (int64_t i = 0; i < n; i++)
        assert_int_equal(ox_tensor_get_i64(t, i), v[i]);
}

static void test_reshape_zero_and_infer(void **state)
{
    (void)state;
    kcase k;
    kc_init(&k, "Reshape", 14);
    int64_t d[3] = {2, 3, 4}, s[3] = {0, -1, 2};
    float v[24];
    for (int i = 0; i < 24; i++)
        v[i] = (float)i;
    kc_in(&k, tf(3, d, v));
    kc_in(&k, ti1(3, s));
    assert_int_equal(kc_run(&k), OX_OK);
    int64_t e[3] = {2, 6, 2};
    expect_shape(kc_out(&k, 0), 3, e);
    expect_f(kc_out(&k, 0), 24, v);
    kc_free(&k);

    /* Two -1 entries are an error, not a crash. */
    kc_init(&k, "Reshape", 14);
    int64_t bad[2] = {-1, -1};
    kc_in(&k, tf(3, d, v));
    kc_in(&k, ti1(2, bad));
    assert_int_not_equal(kc_run(&k), OX_OK);
    kc_free(&k);
}

static void test_transpose(void **state)
{
    (void)state;
    kcase k;
    kc_init(&k, "Transpose", 13);
    int64_t d[3] = {2, 3, 4}, perm[3] = {1, 2, 0};
    attr_ints(&k, "perm", 3, perm);
    float v[24];
    for (int i = 0; i < 24; i++)
        v[i] = (float)i;
    kc_in(&k, tf(3, d, v));
    assert_int_equal(kc_run(&k), OX_OK);
    const ox_tensor *y = kc_out(&k, 0);
    int64_t e[3] = {3, 4, 2};
    expect_shape(y, 3, e);
    const float *p = ox_tensor_data(y);
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 3; b++)
            for (int c = 0; c < 4; c++)
                assert_float_equal(p[(b * 4 + c) * 2 + a], v[(a * 3 + b) * 4 + c], 0);
    kc_free(&k);

    /* A large 2-D transpose goes through the tiled path. */
    kc_init(&k, "Transpose", 13);
    int64_t d2[2] = {70, 45};
    float *w = malloc(sizeof(float) * 70 * 45);
    for (int i = 0; i < 70 * 45; i++)
        w[i] = (float)i;
    kc_in(&k, tf(2, d2, w));
    assert_int_equal(kc_run(&k), OX_OK);
    p = ox_tensor_data(kc_out(&k, 0));
    for (int i = 0; i < 70; i++)
        for (int j = 0; j < 45; j++)
            assert_float_equal(p[j * 70 + i], w[i * 45 + j], 0);
    free(w);
    kc_free(&k);
}

static void test_transpose_int4(void **state)
{
    (void)state;
    /* Packed 4-bit: elements 0..5 of a 2x3 tensor, low nibble first. */
    kcase k;
    kc_init(&k, "Transpose", 13);
    int64_t d[2] = {2, 3};
    ox_tensor *t = ox_tensor_new(OX_DT_UINT4, 2, d);
    assert_non_null(t);
    uint8_t *b = ox_tensor_data(t);
    b[0] = 0x10; /* e0=0 e1=1 */
    b[1] = 0x32; /* e2=2 e3=3 */
    b[2] = 0x54; /* e4=4 e5=5 */
    kc_in(&k, t);
    assert_int_equal(kc_run(&k), OX_OK);
    const ox_tensor *y = kc_out(&k, 0);
    const uint8_t *o = ox_tensor_data(y);
    /* transposed 3x2: [0,3,1,4,2,5] */
    assert_int_equal(o[0], 0x30);
    assert_int_equal(o[1], 0x41);
    assert_int_equal(o[2], 0x52);
    kc_free(&k);
}

/* The byte-type copy paths (row memcpy, unrolled 8x8 tiles, element loop)
 * against an index-by-index reference written straight from the spec:
 * y[j0..jr-1] = x[i] where i_perm[k] = j_k. Random shapes and perms of
 * rank 2-5 for each element size; bytes compared, so NaN patterns count. */
static void test_transpose_random_vs_reference(void **state)
{
    (void)state;
    const ox_dtype types[4] = {OX_DT_UINT8, OX_DT_INT16, OX_DT_FLOAT, OX_DT_INT64};
    const size_t sizes[4] = {1, 2, 4, 8};
    uint32_t seed = 12345;
#define RND() (seed = seed * 1103515245u + 12345u, (seed >> 16) & 0x7fff)
    for (int iter = 0; iter < 400; iter++) {
        int ti_ = iter % 4, r = 2 + (int)(RND() % 4);
        size_t es = sizes[ti_];
        int64_t d[5], perm[5];
        for (int i = 0; i < r; i++) {
            /* mostly small dims, sometimes long enough for several tiles */
            d[i] = RND() % 4 == 0 ? 1 : 1 + (int64_t)(RND() % (r <= 3 ? 21 : 7));
            perm[i] = i;
        }
        for (int i = r - 1; i > 0; i--) {
            int j = (int)(RND() % (unsigned)(i + 1));
            int64_t t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        kcase k;
        kc_init(&k, "Transpose", 13);
        attr_ints(&k, "perm", r, perm);
        ox_tensor *x = ox_tensor_new(types[ti_], r, d);
        assert_non_null(x);
        uint8_t *xb = ox_tensor_data(x);
        for (int64_t i = 0; i < x->numel * (int64_t)es; i++)
            xb[i] = (uint8_t)RND();
        kc_in(&k, x);
        assert_int_equal(kc_run(&k), OX_OK);
        const ox_tensor *y = kc_out(&k, 0);
        assert_int_equal(y->dtype, types[ti_]);
        assert_int_equal(y->numel, x->numel);
        int64_t od[5];
        for (int i = 0; i < r; i++)
            od[i] = d[perm[i]];
        expect_shape(y, r, od);
        const uint8_t *yb = ox_tensor_data(y);
        int64_t xs[5], s = 1;
        for (int i = r - 1; i >= 0; i--) {
            xs[i] = s;
            s *= d[i];
        }
        for (int64_t o = 0; o < y->numel; o++) {
            int64_t rem = o, src = 0;
            for (int i = r - 1; i >= 0; i--) {
                src += (rem % od[i]) * xs[perm[i]];
                rem /= od[i];
            }
            assert_memory_equal(yb + o * (int64_t)es, xb + src * (int64_t)es, es);
        }
        kc_free(&k);
    }
#undef RND
}

static void test_slice_spec(void **state)
{
    (void)state;
    float v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    int64_t d[2] = {2, 4};
    kcase k;
    kc_init(&k, "Slice", 13);
    int64_t st[2] = {1, 0}, en[2] = {2, 3}, ax[2] = {0, 1}, sp[2] = {1, 2};
    kc_in(&k, tf(2, d, v));
    kc_in(&k, ti1(2, st));
    kc_in(&k, ti1(2, en));
    kc_in(&k, ti1(2, ax));
    kc_in(&k, ti1(2, sp));
    assert_int_equal(kc_run(&k), OX_OK);
    float e1[2] = {5, 7};
    expect_f(kc_out(&k, 0), 2, e1);
    kc_free(&k);

    kc_init(&k, "Slice", 13);
    int64_t st2[2] = {0, 1}, en2[2] = {-1, 1000};
    kc_in(&k, tf(2, d, v));
    kc_in(&k, ti1(2, st2));
    kc_in(&k, ti1(2, en2));
    assert_int_equal(kc_run(&k), OX_OK);
    float e2[3] = {2, 3, 4};
    expect_f(kc_out(&k, 0), 3, e2);
    kc_free(&k);

    /* Negative step reverses: starts=-1 ends=INT64_MIN steps=-1 on axis 1. */
    kc_init(&k, "Slice", 13);
    int64_t st3[1] = {-1}, en3[1] = {INT64_MIN}, ax3[1] = {1}, sp3[1] = {-1};
    kc_in(&k, tf(2, d, v));
    kc_in(&k, ti1(1, st3));
    kc_in(&k, ti1(1, en3));
    kc_in(&k, ti1(1, ax3));
    kc_in(&k, ti1(1, sp3));
    assert_int_equal(kc_run(&k), OX_OK);
    float e3[8] = {4, 3, 2, 1, 8, 7, 6, 5};
    expect_f(kc_out(&k, 0), 8, e3);
    kc_free(&k);
}

static void test_gather_spec(void **state)
{
    (void)state;
    kcase k;
    kc_init(&k, "Gather", 13);
    float v[6] = {1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f};
    int64_t d[2] = {3, 2}, id[2] = {2, 2}, ix[4] = {0, 1, 1, 2};
    kc_in(&k, tf(2, d, v));
    kc_in(&k, ti(2, id, ix));
    assert_int_equal(kc_run(&k), OX_OK);
    float e[8] = {1.0f, 1.2f, 2.3f, 3.4f, 2.3f, 3.4f, 4.5f, 5.7f};
    int64_t es[3] = {2, 2, 2};
    expect_shape(kc_out(&k, 0), 3, es);
    expect_f(kc_out(&k, 0), 8, e);
    kc_free(&k);

    /* Out-of-range index is an error. */
    kc_init(&k, "Gather", 13);
    int64_t bad[1] = {3};
    kc_in(&k, tf(2, d, v));
    kc_in(&k, ti1(1, bad));
    assert_int_equal(kc_run(&k), OX_ERANGE);
    kc_free(&k);
}

static void test_pad_modes(void **state)
{
    (void)state;
    float v[6] = {1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f};
    int64_t d[2] = {3, 2}, pads[4] = {0, 2, 0, 0};
    const char *modes[2] = {"reflect", "edge"};
    float exp[2][12] = {
        {1.0f, 1.2f, 1.0f, 1.2f, 2.3f, 3.4f, 2.3f, 3.4f, 4.5f, 5.7f, 4.5f, 5.7f},
        {1.0f, 1.0f, 1.0f, 1.2f, 2.3f, 2.3f, 2.3f, 3.4f, 4.5f, 4.5f, 4.5f, 5.7f},
    };
    for (int m = 0; m < 2; m++) {
        kcase k;
        kc_init(&k, "Pad", 13);
        attr_s(&k, "mode", modes[m]);
        kc_in(&k, tf(2, d, v));
        kc_in(&k, ti1(4, pads));
        assert_int_equal(kc_run(&k), OX_OK);
        int64_t e[2] = {3, 4};
        expect_shape(kc_out(&k, 0), 2, e);
        expect_f(kc_out(&k, 0), 12, exp[m]);
        kc_free(&k);
    }
    /* constant with value, both axes, corners included */
    kcase k;
    kc_init(&k, "Pad", 13);
    int64_t p2[4] = {1, 0, 0, 1};
    float cv = 9;
    kc_in(&k, tf(2, d, v));
    kc_in(&k, ti1(4, p2));
    kc_in(&k, tf(0, NULL, &cv));
    assert_int_equal(kc_run(&k), OX_OK);
    float e[12] = {9, 9, 9, 1.0f, 1.2f, 9, 2.3f, 3.4f, 9, 4.5f, 5.7f, 9};
    expect_f(kc_out(&k, 0), 12, e);
    kc_free(&k);
}

static void test_concat_strings(void **state)
{
    (void)state;
    kcase k;
    kc_init(&k, "Concat", 13);
    attr_i(&k, "axis", 0);
    int64_t d = 1, d2 = 2;
    ox_tensor *a = ox_tensor_new(OX_DT_STRING, 1, &d);
    ox_tensor *b = ox_tensor_new(OX_DT_STRING, 1, &d2);
    assert_non_null(a);
    assert_non_null(b);
    const char *s[3] = {"x", "yy", "zzz"};
    ox_tensor *ts[3] = {a, b, b};
    int64_t is[3] = {0, 0, 1};
    for (int i = 0; i < 3; i++) {
        free(ts[i]->strings[is[i]].data);
        ts[i]->strings[is[i]].data = strdup(s[i]);
        ts[i]->strings[is[i]].len = strlen(s[i]);
    }
    kc_in(&k, a);
    kc_in(&k, b);
    assert_int_equal(kc_run(&k), OX_OK);
    const ox_tensor *y = kc_out(&k, 0);
    assert_int_equal(y->numel, 3);
    for (int i = 0; i < 3; i++)
        assert_string_equal(y->strings[i].data, s[i]);
    kc_free(&k);
}

static void test_topk_ties(void **state)
{
    (void)state;
    kcase k;
    kc_init(&k, "TopK", 11);
    k.ctx.n_out = 2;
    float v[6] = {3, 1, 3, 2, 1, 3};
    int64_t d = 6, kk = 3;
    kc_in(&k, tf(1, &d, v));
    kc_in(&k, ti(0, NULL, &kk));
    assert_int_equal(kc_run(&k), OX_OK);
    float ev[3] = {3, 3, 3};
    int64_t ei[3] = {0, 2, 5};
    expect_f(kc_out(&k, 0), 3, ev);
    expect_i(kc_out(&k, 1), 3, ei);
    kc_free(&k);

    kc_init(&k, "TopK", 11);
    k.ctx.n_out = 2;
    attr_i(&k, "largest", 0);
    kc_in(&k, tf(1, &d, v));
    kc_in(&k, ti(0, NULL, &kk));
    assert_int_equal(kc_run(&k), OX_OK);
    float ev2[3] = {1, 1, 2};
    int64_t ei2[3] = {1, 4, 3};
    expect_f(kc_out(&k, 0), 3, ev2);
    expect_i(kc_out(&k, 1), 3, ei2);
    kc_free(&k);
}

static void test_unique_spec(void **state)
{
    (void)state;
    kcase k;
    kc_init(&k, "Unique", 11);
    k.ctx.n_out = 4;
    attr_i(&k, "sorted", 0);
    float v[6] = {2, 1, 1, 3, 4, 3};
    int64_t d = 6;
    kc_in(&k, tf(1, &d, v));
    assert_int_equal(kc_run(&k), OX_OK);
    float ey[4] = {2, 1, 3, 4};
    int64_t ei[4] = {0, 1, 3, 4}, einv[6] = {0, 1, 1, 2, 3, 2}, ec[4] = {1, 2, 2, 1};
    expect_f(kc_out(&k, 0), 4, ey);
    expect_i(kc_out(&k, 1), 4, ei);
    expect_i(kc_out(&k, 2), 6, einv);
    expect_i(kc_out(&k, 3), 4, ec);
    kc_free(&k);

    /* sorted, along axis 0 (spec example 3) */
    kc_init(&k, "Unique", 11);
    k.ctx.n_out = 4;
    attr_i(&k, "axis", 0);
    float m[9] = {1, 0, 0, 1, 0, 0, 2, 3, 4};
    int64_t md[2] = {3, 3};
    kc_in(&k, tf(2, md, m));
    assert_int_equal(kc_run(&k), OX_OK);
    float ey2[6] = {1, 0, 0, 2, 3, 4};
    int64_t ei2[2] = {0, 2}, einv2[3] = {0, 0, 1}, ec2[2] = {2, 1};
    expect_f(kc_out(&k, 0), 6, ey2);
    expect_i(kc_out(&k, 1), 2, ei2);
    expect_i(kc_out(&k, 2), 3, einv2);
    expect_i(kc_out(&k, 3), 2, ec2);
    kc_free(&k);
}

static void test_scatter_nd_spec(void **state)
{
    (void)state;
    kcase k;
    kc_init(&k, "ScatterND", 16);
    float v[8] = {1, 2, 3, 4, 5, 6, 7, 8}, u[4] = {9, 10, 11, 12};
    int64_t d = 8, id[2] = {4, 1}, ix[4] = {4, 3, 1, 7}, ud = 4;
    kc_in(&k, tf(1, &d, v));
    kc_in(&k, ti(2, id, ix));
    kc_in(&k, tf(1, &ud, u));
    assert_int_equal(kc_run(&k), OX_OK);
    float e[8] = {1, 11, 3, 10, 9, 6, 7, 12};
    expect_f(kc_out(&k, 0), 8, e);
    kc_free(&k);
}

static void test_scatter_elements_add(void **state)
{
    (void)state;
    /* spec example: data [[1,2,3,4,5]], indices [[1,1]], updates [[1.1,2.1]],
     * axis 1, reduction add -> [[1, 5.2, 3, 4, 5]] */
    kcase k;
    kc_init(&k, "ScatterElements", 18);
    attr_i(&k, "axis", 1);
    attr_s(&k, "reduction", "add");
    float v[5] = {1, 2, 3, 4, 5}, u[2] = {1.1f, 2.1f};
    int64_t d[2] = {1, 5}, id[2] = {1, 2}, ix[2] = {1, 1};
    kc_in(&k, tf(2, d, v));
    kc_in(&k, ti(2, id, ix));
    kc_in(&k, tf(2, id, u));
    assert_int_equal(kc_run(&k), OX_OK);
    float e[5] = {1, 5.2f, 3, 4, 5};
    expect_f(kc_out(&k, 0), 5, e);
    kc_free(&k);
}

static void test_resize_linear(void **state)
{
    (void)state;
    /* spec example resize_upsample_scales_linear (half_pixel) */
    kcase k;
    kc_init(&k, "Resize", 19);
    attr_s(&k, "mode", "linear");
    float v[4] = {1, 2, 3, 4}, sc[4] = {1, 1, 2, 2};
    int64_t d[4] = {1, 1, 2, 2}, sd = 4;
    kc_in(&k, tf(4, d, v));
    kc_in(&k, NULL);
    kc_in(&k, tf(1, &sd, sc));
    assert_int_equal(kc_run(&k), OX_OK);
    float e[16] = {1, 1.25f, 1.75f, 2, 1.5f, 1.75f, 2.25f, 2.5f,
                   2.5f, 2.75f, 3.25f, 3.5f, 3, 3.25f, 3.75f, 4};
    int64_t es[4] = {1, 1, 4, 4};
    expect_shape(kc_out(&k, 0), 4, es);
    expect_f(kc_out(&k, 0), 16, e);
    kc_free(&k);

    /* nearest, scales [1,1,2,3] (spec resize_upsample_scales_nearest) */
    kc_init(&k, "Resize", 19);
    float sc2[4] = {1, 1, 2, 3};
    kc_in(&k, tf(4, d, v));
    kc_in(&k, NULL);
    kc_in(&k, tf(1, &sd, sc2));
    assert_int_equal(kc_run(&k), OX_OK);
    float e2[24] = {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2,
                    3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4};
    expect_f(kc_out(&k, 0), 24, e2);
    kc_free(&k);
}

static void test_depth_to_space(void **state)
{
    (void)state;
    float v[8];
    for (int i = 0; i < 8; i++)
        v[i] = (float)i;
    int64_t d[4] = {1, 8, 1, 1};
    const char *modes[2] = {"DCR", "CRD"};
    /* out[c'][i][j]: DCR reads channel (i*2+j)*2 + c', CRD reads c'*4 + i*2 + j */
    float e[2][8] = {{0, 2, 4, 6, 1, 3, 5, 7}, {0, 1, 2, 3, 4, 5, 6, 7}};
    for (int m = 0; m < 2; m++) {
        kcase k;
        kc_init(&k, "DepthToSpace", 13);
        attr_i(&k, "blocksize", 2);
        attr_s(&k, "mode", modes[m]);
        kc_in(&k, tf(4, d, v));
        assert_int_equal(kc_run(&k), OX_OK);
        int64_t es[4] = {1, 2, 2, 2};
        expect_shape(kc_out(&k, 0), 4, es);
        expect_f(kc_out(&k, 0), 8, e[m]);
        kc_free(&k);
    }
    /* SpaceToDepth inverts DCR */
    kcase k;
    kc_init(&k, "SpaceToDepth", 13);
    attr_i(&k, "blocksize", 2);
    int64_t sd[4] = {1, 2, 2, 2};
    kc_in(&k, tf(4, sd, e[0]));
    assert_int_equal(kc_run(&k), OX_OK);
    expect_shape(kc_out(&k, 0), 4, d);
    expect_f(kc_out(&k, 0), 8, v);
    kc_free(&k);
}

static void test_misc_small(void **state)
{
    (void)state;
    kcase k;
    /* Tile: [[1,2],[3,4]] x [1,2] */
    kc_init(&k, "Tile", 13);
    float v[4] = {1, 2, 3, 4};
    int64_t d[2] = {2, 2}, rep[2] = {1, 2};
    kc_in(&k, tf(2, d, v));
    kc_in(&k, ti1(2, rep));
    assert_int_equal(kc_run(&k), OX_OK);
    float et[8] = {1, 2, 1, 2, 3, 4, 3, 4};
    expect_f(kc_out(&k, 0), 8, et);
    kc_free(&k);

    /* Expand [3,1] to [2,1,6] */
    kc_init(&k, "Expand", 13);
    float ev[3] = {1, 2, 3};
    int64_t ed[2] = {3, 1}, es[3] = {2, 1, 6};
    kc_in(&k, tf(2, ed, ev));
    kc_in(&k, ti1(3, es));
    assert_int_equal(kc_run(&k), OX_OK);
    int64_t eo[3] = {2, 3, 6};
    expect_shape(kc_out(&k, 0), 3, eo);
    const float *p = ox_tensor_data(kc_out(&k, 0));
    for (int i = 0; i < 36; i++)
        assert_float_equal(p[i], ev[(i / 6) % 3], 0);
    kc_free(&k);

    /* OneHot: indices [0, -1, 7], depth 3, values [0, 5] */
    kc_init(&k, "OneHot", 11);
    int64_t ix[3] = {0, -1, 7}, depth = 3;
    float vals[2] = {0, 5};
    int64_t two = 2;
    kc_in(&k, ti1(3, ix));
    kc_in(&k, ti(0, NULL, &depth));
    kc_in(&k, tf(1, &two, vals));
    assert_int_equal(kc_run(&k), OX_OK);
    float eh[9] = {5, 0, 0, 0, 0, 5, 0, 0, 0};
    expect_f(kc_out(&k, 0), 9, eh);
    kc_free(&k);

    /* NonZero: [[1,0],[1,1]] -> [[0,1,1],[0,0,1]] */
    kc_init(&k, "NonZero", 13);
    float nz[4] = {1, 0, 1, 1};
    kc_in(&k, tf(2, d, nz));
    assert_int_equal(kc_run(&k), OX_OK);
    int64_t enz[6] = {0, 1, 1, 0, 0, 1};
    expect_i(kc_out(&k, 0), 6, enz);
    kc_free(&k);

    /* Split into [1, 3] along axis 0 of a 4-vector */
    kc_init(&k, "Split", 13);
    k.ctx.n_out = 2;
    int64_t four = 4, sp[2] = {1, 3};
    kc_in(&k, tf(1, &four, v));
    kc_in(&k, ti1(2, sp));
    assert_int_equal(kc_run(&k), OX_OK);
    expect_f(kc_out(&k, 0), 1, v);
    expect_f(kc_out(&k, 1), 3, v + 1);
    kc_free(&k);

    /* Trilu lower, k = 0 */
    kc_init(&k, "Trilu", 14);
    attr_i(&k, "upper", 0);
    kc_in(&k, tf(2, d, v));
    assert_int_equal(kc_run(&k), OX_OK);
    float etl[4] = {1, 0, 3, 4};
    expect_f(kc_out(&k, 0), 4, etl);
    kc_free(&k);

    /* Unsqueeze axes [0, 3] on 2x2 -> 1x2x2x1 */
    kc_init(&k, "Unsqueeze", 13);
    int64_t ax[2] = {0, 3};
    kc_in(&k, tf(2, d, v));
    kc_in(&k, ti1(2, ax));
    assert_int_equal(kc_run(&k), OX_OK);
    int64_t eu[4] = {1, 2, 2, 1};
    expect_shape(kc_out(&k, 0), 4, eu);
    kc_free(&k);

    /* Compress along axis 1 with [0, 1] */
    kc_init(&k, "Compress", 11);
    attr_i(&k, "axis", 1);
    int64_t cd = 2;
    ox_tensor *cond = ox_tensor_new(OX_DT_BOOL, 1, &cd);
    ((uint8_t *)ox_tensor_data(cond))[1] = 1;
    kc_in(&k, tf(2, d, v));
    kc_in(&k, cond);
    assert_int_equal(kc_run(&k), OX_OK);
    float ec[2] = {2, 4};
    expect_f(kc_out(&k, 0), 2, ec);
    kc_free(&k);
}

static void test_constant_forms(void **state)
{
    (void)state;
    /* sparse_value: 2x3 with values 5, 7 at linear positions 1 and 5 */
    kcase k;
    kc_init(&k, "Constant", 13);
    ox_sparse sp = {0};
    int64_t two = 2, pos[2] = {1, 5};
    float sv[2] = {5, 7};
    sp.values = tf(1, &two, sv);
    sp.indices = ti1(2, pos);
    sp.rank = 2;
    sp.dims[0] = 2;
    sp.dims[1] = 3;
    kc_attr(&k, "sparse_value", OX_ATTR_SPARSE_TENSOR)->sparse = &sp;
    assert_int_equal(kc_run(&k), OX_OK);
    float e[6] = {0, 5, 0, 0, 0, 7};
    expect_f(kc_out(&k, 0), 6, e);
    kc_free(&k);
    ox_tensor_free(sp.values);
    ox_tensor_free(sp.indices);

    /* value_strings */
    kc_init(&k, "Constant", 13);
    ox_bytes strs[2] = {{2, (char *)"ab"}, {0, (char *)""}};
    ox_attr *a = kc_attr(&k, "value_strings", OX_ATTR_STRINGS);
    a->strings = strs;
    a->n = 2;
    assert_int_equal(kc_run(&k), OX_OK);
    const ox_tensor *y = kc_out(&k, 0);
    assert_int_equal(y->dtype, OX_DT_STRING);
    assert_int_equal(y->numel, 2);
    assert_string_equal(y->strings[0].data, "ab");
    assert_int_equal(y->strings[1].len, 0);
    kc_free(&k);

    /* value_ints */
    kc_init(&k, "Constant", 13);
    int64_t iv[3] = {3, -1, 4};
    a = kc_attr(&k, "value_ints", OX_ATTR_INTS);
    a->ints = iv;
    a->n = 3;
    assert_int_equal(kc_run(&k), OX_OK);
    assert_int_equal(kc_out(&k, 0)->dtype, OX_DT_INT64);
    expect_i(kc_out(&k, 0), 3, iv);
    kc_free(&k);
}

static void test_strings_and_packed(void **state)
{
    (void)state;
    /* Gather rows of a string matrix */
    kcase k;
    kc_init(&k, "Gather", 13);
    int64_t d[2] = {3, 1}, ix[2] = {2, 0};
    ox_tensor *t = ox_tensor_new(OX_DT_STRING, 2, d);
    assert_non_null(t);
    const char *s[3] = {"zero", "one", "two"};
    for (int i = 0; i < 3; i++) {
        free(t->strings[i].data);
        t->strings[i].data = strdup(s[i]);
        t->strings[i].len = strlen(s[i]);
    }
    kc_in(&k, t);
    kc_in(&k, ti1(2, ix));
    assert_int_equal(kc_run(&k), OX_OK);
    assert_string_equal(kc_out(&k, 0)->strings[0].data, "two");
    assert_string_equal(kc_out(&k, 0)->strings[1].data, "zero");
    kc_free(&k);

    /* Edge-pad a packed int4 vector [1, -2, 3] by one on each side */
    kc_init(&k, "Pad", 19);
    attr_s(&k, "mode", "edge");
    int64_t n = 3, pads[2] = {1, 1};
    ox_tensor *q = ox_tensor_new(OX_DT_INT4, 1, &n);
    assert_non_null(q);
    ox_tensor_set_i64(q, 0, 1);
    ox_tensor_set_i64(q, 1, -2);
    ox_tensor_set_i64(q, 2, 3);
    kc_in(&k, q);
    kc_in(&k, ti1(2, pads));
    assert_int_equal(kc_run(&k), OX_OK);
    int64_t e[5] = {1, 1, -2, 3, 3};
    assert_int_equal(kc_out(&k, 0)->dtype, OX_DT_INT4);
    expect_i(kc_out(&k, 0), 5, e);
    /* 5 nibbles: the unused high nibble of the last byte stays zero */
    assert_int_equal(((const uint8_t *)ox_tensor_data(kc_out(&k, 0)))[2] >> 4, 0);
    kc_free(&k);
}

static void expect_error(kcase *k)
{
    ox_status st = kc_run(k);
    assert_int_not_equal(st, OX_OK);
    assert_true(k->err.msg[0] != 0);
    kc_free(k);
}

static void test_bad_inputs(void **state)
{
    (void)state;
    float v[6] = {1, 2, 3, 4, 5, 6};
    int64_t d[2] = {2, 3};
    kcase k;

    kc_init(&k, "GatherElements", 13); /* index 3 on an axis of 3 */
    int64_t ix[6] = {0, 1, 2, 3, 0, 0};
    kc_in(&k, tf(2, d, v));
    attr_i(&k, "axis", 1);
    kc_in(&k, ti(2, d, ix));
    expect_error(&k);

    kc_init(&k, "Concat", 13); /* axis beyond rank */
    attr_i(&k, "axis", 2);
    kc_in(&k, tf(2, d, v));
    expect_error(&k);

    kc_init(&k, "Split", 13); /* sizes do not add up */
    k.ctx.n_out = 2;
    int64_t sp[2] = {1, 3};
    kc_in(&k, tf(2, d, v));
    kc_in(&k, ti1(2, sp));
    expect_error(&k);

    kc_init(&k, "Slice", 13); /* zero step */
    int64_t z[1] = {0}, e[1] = {2};
    kc_in(&k, tf(2, d, v));
    kc_in(&k, ti1(1, z));
    kc_in(&k, ti1(1, e));
    kc_in(&k, ti1(1, z));
    kc_in(&k, ti1(1, z));
    expect_error(&k);

    kc_init(&k, "Expand", 13); /* 3 vs 4 do not broadcast */
    int64_t sh[2] = {2, 4};
    kc_in(&k, tf(2, d, v));
    kc_in(&k, ti1(2, sh));
    expect_error(&k);

    kc_init(&k, "TopK", 11); /* k larger than the axis */
    k.ctx.n_out = 2;
    int64_t kk = 4;
    kc_in(&k, tf(2, d, v));
    kc_in(&k, ti(0, NULL, &kk));
    expect_error(&k);

    kc_init(&k, "ScatterND", 13); /* tuple index out of range */
    int64_t id[2] = {1, 2}, bad[2] = {1, 5};
    int64_t ud = 1;
    float u = 9;
    kc_in(&k, tf(2, d, v));
    kc_in(&k, ti(2, id, bad));
    kc_in(&k, tf(1, &ud, &u));
    expect_error(&k);

    kc_init(&k, "Reshape", 13); /* 6 elements into 4 */
    int64_t s4[2] = {2, 2};
    kc_in(&k, tf(2, d, v));
    kc_in(&k, ti1(2, s4));
    expect_error(&k);

    kc_init(&k, "Transpose", 13); /* repeated axis in perm */
    int64_t perm[2] = {0, 0};
    attr_ints(&k, "perm", 2, perm);
    kc_in(&k, tf(2, d, v));
    expect_error(&k);

    kc_init(&k, "Gather", 13); /* missing indices */
    kc_in(&k, tf(2, d, v));
    expect_error(&k);
}

/* Deterministic random inputs and attributes for every kernel of the table:
 * whatever the kernel answers, it must not crash or leak (run under
 * valgrind/ASan to see the latter). */
static unsigned fz_state = 12345;
static int fz(int n)
{
    fz_state = fz_state * 1103515245u + 12345u;
    return (int)((fz_state >> 8) % (unsigned)n);
}

static ox_tensor *fz_tensor(void)
{
    static const ox_dtype dts[] = {OX_DT_FLOAT, OX_DT_INT64, OX_DT_INT32, OX_DT_UINT8,
                                   OX_DT_STRING, OX_DT_INT4, OX_DT_BOOL, OX_DT_FLOAT16};
    int r = fz(5);
    int64_t d[4];
    for (int i = 0; i < r; i++)
        d[i] = fz(4);
    ox_dtype dt = fz(3) ? (fz(2) ? OX_DT_INT64 : OX_DT_FLOAT) : dts[fz(8)];
    ox_tensor *t = ox_tensor_new(dt, r, d);
    assert_non_null(t);
    for (int64_t i = 0; i < t->numel; i++) {
        if (dt == OX_DT_STRING)
            continue;
        if (ox_dtype_is_float(dt))
            ox_tensor_set_f64(t, i, fz(11) - 5);
        else
            ox_tensor_set_i64(t, i, fz(11) - 5);
    }
    return t;
}

static void test_random_inputs_never_crash(void **state)
{
    (void)state;
    static const char *strs[] = {"constant", "reflect", "edge", "wrap", "nearest", "linear",
                                 "cubic", "add", "mul", "max", "DCR", "CRD", "align_corners",
                                 "tf_crop_and_resize", "half_pixel", "not_larger", "bogus"};
    static const char *names[] = {"axis", "axes", "perm", "k", "upper", "largest", "sorted",
                                  "mode", "reduction", "blocksize", "batch_dims", "start",
                                  "end", "allowzero", "num_outputs", "split", "antialias",
                                  "coordinate_transformation_mode", "nearest_mode",
                                  "exclude_outside", "keep_aspect_ratio_policy", "batch_axis",
                                  "time_axis", "shape", "starts", "ends", "pads", "value",
                                  "dtype", "scales", "to"};
    const int nnames = (int)(sizeof names / sizeof *names);
    static const int64_t opsets[] = {1, 7, 9, 10, 11, 13, 18, 19, 24, 26};
    for (const ox_kernel_entry *e = ox_kernels_tensor; e->op_type; e++) {
        for (int it = 0; it < 300; it++) {
            kcase k;
            kc_init(&k, e->op_type, opsets[fz(10)]);
            int64_t ints[MAXA][5];
            int na = fz(6);
            for (int a = 0; a < na; a++) {
                ox_attr *at = kc_attr(&k, names[fz(nnames)], OX_ATTR_INT);
                switch (fz(4)) {
                case 0:
                    at->i = fz(9) - 4;
                    at->f = (float)at->i;
                    break;
                case 1:
                    at->type = OX_ATTR_INTS;
                    at->n = fz(5);
                    for (int j = 0; j < at->n; j++)
                        ints[a][j] = fz(9) - 4;
                    at->ints = ints[a];
                    break;
                case 2:
                    at->type = OX_ATTR_STRING;
                    at->s.data = (char *)strs[fz(17)];
                    at->s.len = strlen(at->s.data);
                    break;
                default:
                    at->type = OX_ATTR_TENSOR;
                    at->t = fz_tensor();
                    break;
                }
            }
            int nin = fz(6) + 1;
            for (int i = 0; i < nin; i++)
                kc_in(&k, fz(6) ? fz_tensor() : NULL);
            k.ctx.n_out = 1 + fz(4);
            (void)e->fn(&k.ctx);
            kc_free(&k);
            for (int a = 0; a < na; a++)
                if (k.attrs[a].type == OX_ATTR_TENSOR)
                    ox_tensor_free(k.attrs[a].t);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reshape_zero_and_infer),
        cmocka_unit_test(test_transpose),
        cmocka_unit_test(test_transpose_int4),
        cmocka_unit_test(test_transpose_random_vs_reference),
        cmocka_unit_test(test_slice_spec),
        cmocka_unit_test(test_gather_spec),
        cmocka_unit_test(test_pad_modes),
        cmocka_unit_test(test_concat_strings),
        cmocka_unit_test(test_topk_ties),
        cmocka_unit_test(test_unique_spec),
        cmocka_unit_test(test_scatter_nd_spec),
        cmocka_unit_test(test_scatter_elements_add),
        cmocka_unit_test(test_resize_linear),
        cmocka_unit_test(test_depth_to_space),
        cmocka_unit_test(test_misc_small),
        cmocka_unit_test(test_constant_forms),
        cmocka_unit_test(test_strings_and_packed),
        cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_random_inputs_never_crash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
