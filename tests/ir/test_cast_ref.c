/* Conformance of the element conversions (float16, bfloat16, float8,
 * float4, int4/int2 packing) against the ONNX backend Cast test data: the
 * expected outputs there come from the ONNX reference implementation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnxscope/io.h"
#include "onnxscope/tensor.h"

static int cases_run;

static bool is_f8(ox_dtype d)
{
    return d == OX_DT_FLOAT8E4M3FN || d == OX_DT_FLOAT8E4M3FNUZ || d == OX_DT_FLOAT8E5M2 ||
           d == OX_DT_FLOAT8E5M2FNUZ;
}

/* Converts like Cast(to=out->dtype, saturate) one element at a time. */
static int check_case(const char *dir, const char *name, bool saturate)
{
    const char *body = name + strlen(saturate ? "test_cast_" : "test_cast_no_saturate_");
    if (strncmp(body, "e8m0_", 5) == 0)
        body += 5;
    const char *sep = strstr(body, "_to_");
    if (!sep)
        return 0;
    char from[32];
    size_t fl = (size_t)(sep - body);
    if (fl >= sizeof from)
        return 0;
    memcpy(from, body, fl);
    from[fl] = '\0';
    ox_dtype src = ox_dtype_from_name(from), dst = ox_dtype_from_name(sep + 4);
    /* String casts and casts to e8m0 (which has a round_mode attribute) are
     * the executor's business, not the element converters'. */
    if (!src || !dst || src == OX_DT_STRING || dst == OX_DT_STRING || dst == OX_DT_FLOAT8E8M0)
        return 0;
    char p_in[1024], p_out[1024];
    snprintf(p_in, sizeof p_in, "%s/%s/test_data_set_0/input_0.pb", dir, name);
    snprintf(p_out, sizeof p_out, "%s/%s/test_data_set_0/output_0.pb", dir, name);
    ox_tensor *in = NULL, *want = NULL;
    ox_error err = {0};
    if (ox_tensor_load_pb(p_in, &in, &err) != OX_OK || ox_tensor_load_pb(p_out, &want, &err) != OX_OK) {
        print_message("%s: cannot load test data: %s\n", name, err.msg);
        ox_tensor_free(in);
        ox_tensor_free(want);
        return 1;
    }
    int bad = 0;
    if (in->dtype != src || want->dtype != dst || in->numel != want->numel) {
        print_message("%s: unexpected test data types\n", name);
        bad = 1;
    }
    ox_tensor *got = bad ? NULL : ox_tensor_new(dst, want->rank, want->dims);
    for (int64_t i = 0; got && i < in->numel; i++) {
        double v = ox_tensor_get_f64(in, i);
        if (is_f8(dst)) {
            uint8_t *d = ox_tensor_mutable_data(got);
            d[i] = ox_f32_to_f8(dst, (float)v, saturate);
        } else if (ox_dtype_is_int(src) && ox_dtype_is_int(dst)) {
            ox_tensor_set_i64(got, i, ox_tensor_get_i64(in, i));
        } else {
            ox_tensor_set_f64(got, i, v);
        }
        double g = ox_tensor_get_f64(got, i), w = ox_tensor_get_f64(want, i);
        bool same = (isnan(g) && isnan(w)) || (g == w && signbit(g) == signbit(w));
        if (!same) {
            if (bad < 5)
                print_message("%s: element %lld: input %.9g -> got %.9g, want %.9g\n", name,
                              (long long)i, v, g, w);
            bad++;
        }
    }
    ox_tensor_free(got);
    ox_tensor_free(in);
    ox_tensor_free(want);
    cases_run++;
    return bad ? 1 : 0;
}

static void test_cast_data(void **state)
{
    (void)state;
    const char *shared = getenv("ONNXSCOPE_SHARED");
    if (!shared) {
        print_message("skipped: ONNXSCOPE_SHARED is not set\n");
        skip();
    }
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/onnx-backend/node", shared);
    DIR *d = opendir(dir);
    if (!d) {
        print_message("skipped: %s not found\n", dir);
        skip();
    }
    int failed = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, "test_cast_no_saturate_", 22) == 0)
            failed += check_case(dir, e->d_name, false);
        else if (strncmp(e->d_name, "test_cast_", 10) == 0)
            failed += check_case(dir, e->d_name, true);
    }
    closedir(d);
    print_message("%d cast cases checked, %d failed\n", cases_run, failed);
    assert_true(cases_run > 20);
    assert_int_equal(failed, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cast_data),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
