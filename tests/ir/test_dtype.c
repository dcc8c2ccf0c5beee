/* Unit tests for element types, reduced-precision conversions and tensors.
 * Expected bit patterns come from IEEE 754-2008 (binary16), the bfloat16
 * definition (top half of binary32) and the ONNX float8 specification
 * (docs/Operators.md Cast table, onnx/docs/technical/float8.md). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "onnxscope/dtype.h"
#include "onnxscope/tensor.h"

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(ox_dtype_name(OX_DT_FLOAT), "float32");
    assert_string_equal(ox_dtype_name(OX_DT_FLOAT16), "float16");
    assert_string_equal(ox_dtype_name(OX_DT_BFLOAT16), "bfloat16");
    assert_string_equal(ox_dtype_name(OX_DT_INT64), "int64");
    assert_string_equal(ox_dtype_name(OX_DT_BOOL), "bool");
    assert_string_equal(ox_dtype_name(OX_DT_STRING), "string");
    assert_string_equal(ox_dtype_name(OX_DT_COMPLEX64), "complex64");
    assert_string_equal(ox_dtype_name(OX_DT_FLOAT8E4M3FN), "float8e4m3fn");
    assert_string_equal(ox_dtype_name(OX_DT_UINT4), "uint4");
    for (int i = 1; i < OX_DT_COUNT; i++)
        assert_int_equal(ox_dtype_from_name(ox_dtype_name((ox_dtype)i)), i);
    assert_int_equal(ox_dtype_from_name("FLOAT"), OX_DT_FLOAT);
    assert_int_equal(ox_dtype_from_name("double"), OX_DT_DOUBLE);
    assert_int_equal(ox_dtype_from_name("tensor(int64)"), OX_DT_INT64);
    assert_int_equal(ox_dtype_from_name("nonsense"), OX_DT_UNDEFINED);
    assert_int_equal(ox_dtype_from_name(NULL), OX_DT_UNDEFINED);
    assert_false(ox_dtype_valid(0));
    assert_false(ox_dtype_valid(OX_DT_COUNT));
    assert_false(ox_dtype_valid(-3));
    assert_string_equal(ox_dtype_name((ox_dtype)99), "invalid");
}

static void test_sizes(void **state)
{
    (void)state;
    assert_int_equal(ox_dtype_bits(OX_DT_FLOAT), 32);
    assert_int_equal(ox_dtype_bits(OX_DT_COMPLEX128), 128);
    assert_int_equal(ox_dtype_bits(OX_DT_INT4), 4);
    assert_int_equal(ox_dtype_bits(OX_DT_INT2), 2);
    assert_int_equal(ox_dtype_bits(OX_DT_STRING), 0);
    size_t nb;
    assert_true(ox_dtype_nbytes(OX_DT_UINT4, 5, &nb));
    assert_int_equal(nb, 3);
    assert_true(ox_dtype_nbytes(OX_DT_INT2, 5, &nb));
    assert_int_equal(nb, 2);
    assert_true(ox_dtype_nbytes(OX_DT_DOUBLE, 3, &nb));
    assert_int_equal(nb, 24);
    assert_false(ox_dtype_nbytes(OX_DT_DOUBLE, INT64_MAX / 2, &nb));
    assert_false(ox_dtype_nbytes(OX_DT_FLOAT, -1, &nb));
    assert_true(ox_dtype_is_float(OX_DT_BFLOAT16));
    assert_true(ox_dtype_is_float(OX_DT_FLOAT8E5M2));
    assert_false(ox_dtype_is_float(OX_DT_INT8));
    assert_true(ox_dtype_is_int(OX_DT_UINT4));
    assert_false(ox_dtype_is_int(OX_DT_BOOL));
    assert_true(ox_dtype_is_signed(OX_DT_INT4));
    assert_false(ox_dtype_is_signed(OX_DT_UINT64));
}

static float bits_f(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void test_f16(void **state)
{
    (void)state;
    /* IEEE binary16 reference encodings. */
    assert_int_equal(ox_f32_to_f16(1.0f), 0x3c00);
    assert_int_equal(ox_f32_to_f16(-2.0f), 0xc000);
    assert_int_equal(ox_f32_to_f16(65504.0f), 0x7bff);      /* max finite */
    assert_int_equal(ox_f32_to_f16(0.333333343f), 0x3555);
    assert_int_equal(ox_f32_to_f16(6.103515625e-05f), 0x0400); /* min normal */
    assert_int_equal(ox_f32_to_f16(5.9604644775390625e-08f), 0x0001); /* min subnormal */
    assert_int_equal(ox_f32_to_f16(INFINITY), 0x7c00);
    assert_int_equal(ox_f32_to_f16(-INFINITY), 0xfc00);
    assert_int_equal(ox_f32_to_f16(-0.0f), 0x8000);
    uint16_t nan = ox_f32_to_f16(NAN);
    assert_true((nan & 0x7c00) == 0x7c00 && (nan & 0x3ff) != 0);
    /* Round to nearest even at every boundary. */
    assert_int_equal(ox_f32_to_f16(1.0f + 0x1p-11f), 0x3c00);       /* tie -> even */
    assert_int_equal(ox_f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3c02);   /* tie -> even */
    assert_int_equal(ox_f32_to_f16(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);
    assert_int_equal(ox_f32_to_f16(65519.0f), 0x7bff);
    assert_int_equal(ox_f32_to_f16(65520.0f), 0x7c00);              /* rounds to inf */
    assert_int_equal(ox_f32_to_f16(0x1p-25f), 0x0000);              /* tie -> 0 */
    assert_int_equal(ox_f32_to_f16(0x1.8p-25f), 0x0001);
    assert_int_equal(ox_f32_to_f16(0x1.8p-24f), 0x0002);            /* 1.5 ulp tie -> 2 */
    assert_int_equal(ox_f32_to_f16(0x1.ffcp-15f), 0x0400);          /* subnormal tie rounds up to normal */
    /* Decoding is exact and round-trips for every non-NaN pattern. */
    assert_true(ox_f16_to_f32(0x0001) == 0x1p-24f);
    assert_true(ox_f16_to_f32(0x7bff) == 65504.0f);
    assert_true(isinf(ox_f16_to_f32(0x7c00)));
    assert_true(isnan(ox_f16_to_f32(0x7e00)));
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = ox_f16_to_f32((uint16_t)h);
        if (isnan(f))
            continue;
        assert_int_equal(ox_f32_to_f16(f), h);
    }
}

static void test_bf16(void **state)
{
    (void)state;
    assert_int_equal(ox_f32_to_bf16(1.0f), 0x3f80);
    assert_int_equal(ox_f32_to_bf16(-2.0f), 0xc000);
    assert_int_equal(ox_f32_to_bf16(3.14159274f), 0x4049);
    assert_int_equal(ox_f32_to_bf16(bits_f(0x3f808000)), 0x3f80); /* tie -> even */
    assert_int_equal(ox_f32_to_bf16(bits_f(0x3f818000)), 0x3f82); /* tie -> even */
    assert_int_equal(ox_f32_to_bf16(bits_f(0x3f808001)), 0x3f81);
    assert_int_equal(ox_f32_to_bf16(bits_f(0x7f7fffff)), 0x7f80);  /* max float rounds to inf */
    assert_int_equal(ox_f32_to_bf16(INFINITY), 0x7f80);
    uint16_t nan = ox_f32_to_bf16(bits_f(0x7f800001)); /* signalling NaN stays NaN */
    assert_true(isnan(ox_bf16_to_f32(nan)));
    assert_true(ox_bf16_to_f32(0x3f80) == 1.0f);
    assert_true(ox_bf16_to_f32(0x4049) == bits_f(0x40490000));
}

static void test_f8_known(void **state)
{
    (void)state;
    /* E4M3FN: bias 7, max 448 = S.1111.110, NaN = S.1111.111, no inf. */
    assert_int_equal(ox_f32_to_f8(OX_DT_FLOAT8E4M3FN, 1.0f, true), 0x38);
    assert_int_equal(ox_f32_to_f8(OX_DT_FLOAT8E4M3FN, -1.0f, true), 0xb8);
    assert_int_equal(ox_f32_to_f8(OX_DT_FLOAT8E4M3FN, 448.0f, true), 0x7e);
    assert_int_equal(ox_f32_to_f8(OX_DT_FLOAT8E4M3FN, 0x1p-9f, true), 0x01);
    assert_int_equal(ox_f32_to_f8(OX_DT_FLOAT8E4M3FN, 0x1p-6f, true), 0x08);
    assert_int_equal(ox_f32_to_f8(OX_DT_FLOAT8E4M3FN, 1000.0f, true), 0x7e);
    assert_int_equal(ox_f32_to_f8(OX_DT_FLOAT8E4M3FN, 1000.0f, false), 0x7f);
    assert_int_equal(ox_f32_to_f8(OX_DT_FLOAT8E4M3FN, -INFINITY, true), 0xfe);
    assert_int_equal(ox_f32_to_f8(OX_DT_FLOAT8E4M3FN, INFINITY, false), 0x7f);
    assert_int_equal(ox_f32_to_f8(OX_DT_FLOAT8E4M3FN, NAN, true) & 0x7f, 0x7f);
    assert_int_equal(ox_f32_to_f8(OX_DT_FLOAT8E4M3FN, -0.0f, true), 0x80);
    assert_int_equal(ox_f32_to_f8(OX_DT_FLOAT8E4M3FN, 464.0f, false), 0x7e); /* tie -> even (448) */
    assert_int_equal(ox_f32_to_f8(OX_DT_FLOAT8E4M3FN, 1.0625f, true), 0x38); /* tie -> even */
    assert_int_equal(ox_f32_to_f8(OX_DT_FLOAT8E4M3FN, 1.1875f, true), 0x3a); /* tie -> even */
    assert_true(ox_f8_to_f32(OX_DT_FLOAT8E4M3FN, 0x7e) == 448.0f);
    assert_true(isnan(ox_f8_to_f32(OX_DT_FLOAT8E4M3FN, 0xff)));
    assert_true(ox_f8_to_f32(OX_DT_FLOAT8E4M3FN, 0x01) == 0x1p-9f);
    /* E4M3FNUZ: bias 8, max 240, 0x80 is the only NaN, no -0. */
    assert_int_equal(ox_f32_to_f8(OX_DT_FLOAT8E4M3FNUZ, 1.0f, true), 0x40);
    assert_int_equal(ox_f32_to_f8(OX_DT_FLOAT8E4M3FNUZ, 240.0f, true), 0x7f);
    assert_int_equal(ox_f32_to_f8(OX_DT_FLOAT8E4M3FNUZ, 1e4f, true), 0x7f);
    assert_int_equal(ox_f32_to_f8(OX_DT_FLOAT8E4M3FNUZ, 1e4f, false), 0x80);
    assert_int_equal(ox_f32_to_f8(OX_DT_FLOAT8E4M3FNUZ, -0.0f, true), 0x00);
    assert_int_equal(ox_f32_to_f8(OX_DT_FLOAT8E4M3FNUZ, NAN, true), 0x80);
    assert_int_equal(ox_f32_to_f8(OX_DT_FLOAT8E4M3FNUZ, 0x1p-10f, true), 0x01);
    assert_true(isnan(ox_f8_to_f32(OX_DT_FLOAT8E4M3FNUZ, 0x80)));
    assert_true(ox_f8_to_f32(OX_DT_FLOAT8E4M3FNUZ, 0xff) == -240.0f);
    /* E5M2: bias 15, max 57344 = S.11110.11, inf = S.11111.00. */
    assert_int_equal(ox_f32_to_f8(OX_DT_FLOAT8E5M2, 1.0f, true), 0x3c);
    assert_int_equal(ox_f32_to_f8(OX_DT_FLOAT8E5M2, 57344.0f, true), 0x7b);
    assert_int_equal(ox_f32_to_f8(OX_DT_FLOAT8E5M2, 1e6f, true), 0x7b);
    assert_int_equal(ox_f32_to_f8(OX_DT_FLOAT8E5M2, 1e6f, false), 0x7c);
    assert_int_equal(ox_f32_to_f8(OX_DT_FLOAT8E5M2, -INFINITY, false), 0xfc);
    assert_int_equal(ox_f32_to_f8(OX_DT_FLOAT8E5M2, INFINITY, true), 0x7b);
    assert_int_equal(ox_f32_to_f8(OX_DT_FLOAT8E5M2, 0x1p-16f, true), 0x01);
    assert_true(isinf(ox_f8_to_f32(OX_DT_FLOAT8E5M2, 0x7c)));
    assert_true(isnan(ox_f8_to_f32(OX_DT_FLOAT8E5M2, 0x7d)));
    /* E5M2FNUZ: bias 16, max 57344 = 0x7f, 0x80 NaN. */
    assert_int_equal(ox_f32_to_f8(OX_DT_FLOAT8E5M2FNUZ, 1.0f, true), 0x40);
    assert_int_equal(ox_f32_to_f8(OX_DT_FLOAT8E5M2FNUZ, 57344.0f, true), 0x7f);
    assert_int_equal(ox_f32_to_f8(OX_DT_FLOAT8E5M2FNUZ, INFINITY, false), 0x80);
    assert_int_equal(ox_f32_to_f8(OX_DT_FLOAT8E5M2FNUZ, 0x1p-17f, true), 0x01);
    assert_true(isnan(ox_f8_to_f32(OX_DT_FLOAT8E5M2FNUZ, 0x80)));
    /* Wrong dtype: no crash. */
    assert_true(isnan(ox_f8_to_f32(OX_DT_FLOAT, 0)));
    assert_int_equal(ox_f32_to_f8(OX_DT_INT8, 1.0f, true), 0);
}

static void test_f8_roundtrip(void **state)
{
    (void)state;
    const ox_dtype dts[] = {OX_DT_FLOAT8E4M3FN, OX_DT_FLOAT8E4M3FNUZ, OX_DT_FLOAT8E5M2,
                            OX_DT_FLOAT8E5M2FNUZ};
    for (int d = 0; d < 4; d++) {
        float prev = -INFINITY;
        for (int c = 0; c < 256; c++) {
            float f = ox_f8_to_f32(dts[d], (uint8_t)c);
            if (isnan(f))
                continue;
            uint8_t back = ox_f32_to_f8(dts[d], f, false);
            if (f == 0 && c == 0x80) /* -0 encodes to itself where it exists */
                assert_int_equal(back, dts[d] == OX_DT_FLOAT8E4M3FN || dts[d] == OX_DT_FLOAT8E5M2 ? 0x80 : 0);
            else
                assert_int_equal(back, c);
            /* Positive codes are monotonic. */
            if (c < 0x80 && !isinf(f)) {
                assert_true(f > prev || c == 0);
                prev = f;
            }
        }
    }
}

static void test_tensor_elems(void **state)
{
    (void)state;
    int64_t dims[1] = {4};
    ox_tensor *t = ox_tensor_new(OX_DT_INT4, 1, dims);
    assert_non_null(t);
    assert_int_equal(t->nbytes, 2);
    ox_tensor_set_i64(t, 0, 1);
    ox_tensor_set_i64(t, 1, -2);
    ox_tensor_set_i64(t, 2, 7);
    ox_tensor_set_i64(t, 3, -8);
    const uint8_t *d = ox_tensor_data(t);
    /* ONNX packs int4 with element 0 in the low nibble. */
    assert_int_equal(d[0], 0xe1);
    assert_int_equal(d[1], 0x87);
    assert_int_equal(ox_tensor_get_i64(t, 1), -2);
    assert_int_equal(ox_tensor_get_i64(t, 3), -8);
    ox_tensor_set_i64(t, 2, 100); /* wraps to the low 4 bits, like Cast */
    assert_int_equal(ox_tensor_get_i64(t, 2), 4);
    ox_tensor_set_i64(t, 2, 9);
    assert_int_equal(ox_tensor_get_i64(t, 2), -7);
    assert_int_equal(ox_tensor_get_i64(t, 4), 0); /* out of range: no crash */
    assert_true(isnan(ox_tensor_get_f64(t, -1)));
    ox_tensor_free(t);

    int64_t d3[1] = {3};
    t = ox_tensor_new(OX_DT_UINT4, 1, d3);
    ox_tensor_set_i64(t, 0, 15);
    ox_tensor_set_i64(t, 1, 3);
    ox_tensor_set_i64(t, 2, 9);
    d = ox_tensor_data(t);
    assert_int_equal(d[0], 0x3f);
    assert_int_equal(d[1], 0x09);
    ox_tensor_free(t);

    const ox_dtype all[] = {OX_DT_FLOAT, OX_DT_UINT8, OX_DT_INT8, OX_DT_UINT16, OX_DT_INT16,
                            OX_DT_INT32, OX_DT_INT64, OX_DT_FLOAT16, OX_DT_DOUBLE,
                            OX_DT_UINT32, OX_DT_UINT64, OX_DT_BFLOAT16, OX_DT_FLOAT8E4M3FN,
                            OX_DT_FLOAT8E4M3FNUZ, OX_DT_FLOAT8E5M2, OX_DT_FLOAT8E5M2FNUZ,
                            OX_DT_COMPLEX64, OX_DT_COMPLEX128, OX_DT_UINT4, OX_DT_INT4,
                            OX_DT_UINT2, OX_DT_FLOAT4E2M1, OX_DT_FLOAT8E8M0};
    int64_t d5[1] = {5};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) {
        t = ox_tensor_new(all[k], 1, d5);
        assert_non_null(t);
        ox_tensor_set_f64(t, 3, 2.0);
        assert_true(ox_tensor_get_f64(t, 3) == 2.0);
        assert_int_equal(ox_tensor_get_i64(t, 3), 2);
        if (all[k] != OX_DT_FLOAT8E8M0) /* e8m0 has no zero */
            assert_true(ox_tensor_get_f64(t, 2) == 0.0);
        ox_tensor_set_i64(t, 4, 1);
        assert_true(ox_tensor_get_f64(t, 4) == 1.0);
        ox_tensor_free(t);
    }
    t = ox_tensor_new(OX_DT_FLOAT16, 1, d5);
    ox_tensor_set_f64(t, 0, 1.0);
    uint16_t h;
    memcpy(&h, ox_tensor_data(t), 2);
    assert_int_equal(h, 0x3c00);
    /* Just above the tie 1 + 2^-11: a double->float->half chain would round
     * to the tie and then to even (0x3c00); correct RNE gives 0x3c01. */
    ox_tensor_set_f64(t, 1, 1.0 + 0x1p-11 + 0x1p-40);
    memcpy(&h, (char *)ox_tensor_data(t) + 2, 2);
    assert_int_equal(h, 0x3c01);
    ox_tensor_free(t);
}

static void test_tensor_cow(void **state)
{
    (void)state;
    int64_t dims[2] = {2, 3};
    ox_tensor *a = ox_tensor_new(OX_DT_FLOAT, 2, dims);
    assert_non_null(a);
    assert_int_equal(a->numel, 6);
    assert_int_equal(a->nbytes, 24);
    for (int i = 0; i < 6; i++)
        ox_tensor_set_f64(a, i, i);
    void *pa = ox_tensor_data(a);
    /* Sole owner: mutation happens in place. */
    assert_ptr_equal(ox_tensor_mutable_data(a), pa);
    ox_tensor *b = ox_tensor_share(a);
    assert_ptr_equal(b->buf, a->buf);
    assert_int_equal(a->buf->refcount, 2);
    ox_tensor_set_f64(b, 0, 42.0);
    assert_ptr_not_equal(b->buf, a->buf);
    assert_true(ox_tensor_get_f64(a, 0) == 0.0);
    assert_true(ox_tensor_get_f64(b, 0) == 42.0);
    assert_int_equal(a->buf->refcount, 1);
    assert_false(ox_tensor_equal(a, b));
    ox_tensor_set_f64(b, 0, 0.0);
    assert_true(ox_tensor_equal(a, b));
    ox_tensor *c = ox_tensor_clone(a);
    assert_ptr_not_equal(c->buf, a->buf);
    assert_true(ox_tensor_equal(a, c));

    /* A view into a parent buffer is never written in place. */
    ox_buffer *parent = ox_buffer_new(64);
    float one = 1.0f;
    memcpy((char *)parent->data + 8, &one, 4);
    ox_buffer *view = ox_buffer_view(parent, parent->data, parent->size);
    int64_t d1[1] = {2};
    ox_tensor *v = ox_tensor_new_view(OX_DT_FLOAT, 1, d1, view, 8);
    assert_non_null(v);
    assert_true(ox_tensor_get_f64(v, 0) == 1.0);
    ox_tensor_set_f64(v, 0, 5.0);
    float back;
    memcpy(&back, (char *)parent->data + 8, 4);
    assert_true(back == 1.0f);
    assert_true(ox_tensor_get_f64(v, 0) == 5.0);
    assert_null(ox_tensor_new_view(OX_DT_FLOAT, 1, d1, view, 60)); /* past the end */
    ox_buffer_release(view);
    ox_buffer_release(parent);
    ox_tensor_free(v);

    ox_tensor_stats st;
    assert_true(ox_tensor_stats_compute(a, &st));
    assert_true(st.min == 0 && st.max == 5);
    assert_true(fabs(st.mean - 2.5) < 1e-12);
    assert_true(fabs(st.zero_frac - 1.0 / 6) < 1e-12);
    ox_tensor_set_f64(a, 1, NAN);
    ox_tensor_set_f64(a, 2, INFINITY);
    assert_true(ox_tensor_stats_compute(a, &st));
    assert_int_equal(st.nan_count, 1);
    assert_int_equal(st.inf_count, 1);

    char buf[64];
    assert_string_equal(ox_shape_str(2, dims, buf, sizeof buf), "2x3");
    assert_string_equal(ox_shape_str(0, NULL, buf, sizeof buf), "scalar");
    int64_t bad[2] = {-1, 3};
    assert_null(ox_tensor_new(OX_DT_FLOAT, 2, bad));
    int64_t huge[2] = {INT64_MAX, 4};
    assert_null(ox_tensor_new(OX_DT_FLOAT, 2, huge));
    assert_null(ox_tensor_new(OX_DT_FLOAT, OX_MAX_RANK + 1, dims));

    ox_tensor *s = ox_tensor_new(OX_DT_STRING, 1, d1);
    assert_non_null(s);
    assert_string_equal(s->strings[1].data, "");
    ox_tensor *s2 = ox_tensor_share(s);
    assert_true(ox_tensor_equal(s, s2));
    ox_tensor_free(s2);
    ox_tensor_free(s);
    ox_tensor_free(a);
    ox_tensor_free(b);
    ox_tensor_free(c);
}

static void test_status(void **state)
{
    (void)state;
    ox_error err = {0};
    assert_int_equal(ox_errorf(&err, OX_EPARSE, "bad %d", 7), OX_EPARSE);
    assert_string_equal(err.msg, "bad 7");
    ox_errorf(&err, OX_EIO, "second");
    assert_int_equal(err.status, OX_EPARSE); /* first error wins */
    ox_error_clear(&err);
    assert_int_equal(err.status, OX_OK);
    assert_int_equal(ox_errorf(NULL, OX_EIO, "x"), OX_EIO);
    assert_string_equal(ox_strerror(OX_ENOMEM), "out of memory");
    assert_int_equal(ox_status_exit_code(OX_OK), 0);
    assert_int_equal(ox_status_exit_code(OX_EMODEL), 1);
    assert_int_equal(ox_status_exit_code(OX_EIO), 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_f16),
        cmocka_unit_test(test_bf16),
        cmocka_unit_test(test_f8_known),
        cmocka_unit_test(test_f8_roundtrip),
        cmocka_unit_test(test_tensor_elems),
        cmocka_unit_test(test_tensor_cow),
        cmocka_unit_test(test_status),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
