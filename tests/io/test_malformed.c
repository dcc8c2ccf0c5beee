/* Hostile and broken files: truncations at every 1/16 of real models, bit
 * flips, random bytes, absurd sizes and cyclic graphs must all be rejected
 * (by the loader or the checker) without a crash, hang or huge allocation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "onnx.pb-c.h"
#include "onnxscope/check.h"
#include "onnxscope/io.h"
#include "testutil.h"

static uint32_t seed = 12345;
static uint32_t rnd(void)
{
    seed ^= seed << 13;
    seed ^= seed >> 17;
    seed ^= seed << 5;
    return seed;
}

/* True when the bytes are refused by the loader or by the checker. */
static bool rejected(const void *data, size_t len)
{
    ox_model *m = NULL;
    ox_error err = {0};
    if (ox_load_buffer(data, len, NULL, &m, &err) != OX_OK) {
        assert_true(err.msg[0] != 0); /* a reason is always given */
        return true;
    }
    ox_check_report rep;
    bool bad = ox_check_model(m, &rep) != OX_OK;
    ox_check_report_free(&rep);
    /* Whatever loaded must also save without trouble. */
    void *buf = NULL;
    size_t n = 0;
    if (ox_save_buffer(m, &buf, &n, &err) == OX_OK)
        free(buf);
    ox_model_free(m);
    return bad;
}

static void *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *d = malloc((size_t)n + 1);
    if (fread(d, 1, (size_t)n, f) != (size_t)n) {
        free(d);
        fclose(f);
        return NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return d;
}

static void collect(ox_test_paths *paths)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/samples", ox_test_source());
    ox_test_find(p, NULL, paths);
    const char *shared = getenv("ONNXSCOPE_SHARED");
    if (shared) {
        snprintf(p, sizeof p, "%s/models", shared);
        ox_test_find(p, "model.onnx", paths);
        snprintf(p, sizeof p, "%s/onnx-backend/light", shared);
        ox_test_find(p, NULL, paths);
    }
}

static void test_truncations(void **state)
{
    (void)state;
    ox_test_paths paths = {0};
    collect(&paths);
    if (paths.n == 0)
        skip();
    int cases = 0;
    for (int i = 0; i < paths.n; i++) {
        size_t len;
        uint8_t *d = read_file(paths.v[i], &len);
        assert_non_null(d);
        for (int k = 0; k < 16; k++) {
            size_t cut = len * (size_t)k / 16;
            if (!rejected(d, cut)) {
                printf("# truncation of %s at %zu/%zu accepted\n", paths.v[i], cut, len);
                fail();
            }
            cases++;
        }
        free(d);
    }
    printf("# %d truncations of %d models rejected\n", cases, paths.n);
    ox_test_paths_free(&paths);
}

static void test_bit_flips(void **state)
{
    (void)state;
    ox_test_paths paths = {0};
    collect(&paths);
    if (paths.n == 0)
        skip();
    int flips = 0, refused = 0;
    for (int i = 0; i < paths.n; i++) {
        size_t len;
        uint8_t *d = read_file(paths.v[i], &len);
        assert_non_null(d);
        for (int k = 0; k < 48; k++) {
            /* Flip in the first 4 KiB half of the time: that is where the
             * structure (rather than weight bytes) lives. */
            size_t pos = (k & 1) ? rnd() % len : rnd() % (len < 4096 ? len : 4096);
            uint8_t bit = (uint8_t)(1u << (rnd() % 8));
            d[pos] ^= bit;
            refused += rejected(d, len); /* either outcome is fine; no crash */
            d[pos] ^= bit;
            flips++;
        }
        free(d);
    }
    printf("# %d bit flips: %d refused, %d still valid\n", flips, refused, flips - refused);
    ox_test_paths_free(&paths);
}

static void test_random_bytes(void **state)
{
    (void)state;
    for (int k = 0; k < 300; k++) {
        size_t len = 1 + rnd() % 4096;
        uint8_t *d = malloc(len);
        for (size_t i = 0; i < len; i++)
            d[i] = (uint8_t)rnd();
        assert_true(rejected(d, len));
        free(d);
    }
    assert_true(rejected("", 0));
}

/* A model around one initializer with the given dims and raw bytes. */
static uint8_t *model_with_tensor(const int64_t *dims, size_t nd, size_t raw, size_t *len)
{
    static uint8_t zeros[64];
    Onnx__TensorProto t = ONNX__TENSOR_PROTO__INIT, *tp = &t;
    t.n_dims = nd;
    t.dims = (int64_t *)dims;
    t.has_data_type = 1;
    t.data_type = 1;
    t.name = "w";
    t.has_raw_data = 1;
    t.raw_data.len = raw;
    t.raw_data.data = zeros;
    Onnx__GraphProto g = ONNX__GRAPH_PROTO__INIT;
    g.n_initializer = 1;
    g.initializer = &tp;
    Onnx__OperatorSetIdProto os = ONNX__OPERATOR_SET_ID_PROTO__INIT, *osp = &os;
    os.has_version = 1;
    os.version = 13;
    Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
    m.has_ir_version = 1;
    m.ir_version = 8;
    m.n_opset_import = 1;
    m.opset_import = &osp;
    m.graph = &g;
    *len = onnx__model_proto__get_packed_size(&m);
    uint8_t *buf = malloc(*len);
    onnx__model_proto__pack(&m, buf);
    return buf;
}

static void test_absurd_sizes(void **state)
{
    (void)state;
    size_t len;
    int64_t huge[2] = {(int64_t)1 << 40, (int64_t)1 << 40};
    uint8_t *b = model_with_tensor(huge, 2, 16, &len);
    ox_model *m = NULL;
    ox_error err = {0};
    ox_error_clear(&err);
    assert_int_equal(ox_load_buffer(b, len, NULL, &m, &err), OX_EMODEL);
    free(b);
    int64_t big[1] = {(int64_t)1 << 50};
    b = model_with_tensor(big, 1, 16, &len);
    ox_error_clear(&err);
    assert_int_equal(ox_load_buffer(b, len, NULL, &m, &err), OX_EMODEL);
    assert_non_null(strstr(err.msg, "raw_data"));
    free(b);
    int64_t neg[1] = {-4};
    b = model_with_tensor(neg, 1, 16, &len);
    ox_error_clear(&err);
    assert_int_equal(ox_load_buffer(b, len, NULL, &m, &err), OX_EMODEL);
    free(b);
    int64_t ok[1] = {4};
    b = model_with_tensor(ok, 1, 16, &len);
    ox_error_clear(&err);
    assert_int_equal(ox_load_buffer(b, len, NULL, &m, &err), OX_OK);
    ox_model_free(m);
    free(b);
}

static void test_cycle_and_double_assignment(void **state)
{
    (void)state;
    /* a: Relu(y) -> x ; b: Relu(x) -> y : a cycle. */
    char *in_a[1] = {"y"}, *out_a[1] = {"x"}, *in_b[1] = {"x"}, *out_b[1] = {"y"};
    Onnx__NodeProto na = ONNX__NODE_PROTO__INIT, nb = ONNX__NODE_PROTO__INIT;
    na.name = "a";
    na.op_type = "Relu";
    na.n_input = 1;
    na.input = in_a;
    na.n_output = 1;
    na.output = out_a;
    nb = na;
    nb.name = "b";
    nb.input = in_b;
    nb.output = out_b;
    Onnx__NodeProto *nodes[2] = {&na, &nb};
    Onnx__GraphProto g = ONNX__GRAPH_PROTO__INIT;
    g.n_node = 2;
    g.node = nodes;
    Onnx__OperatorSetIdProto os = ONNX__OPERATOR_SET_ID_PROTO__INIT, *osp = &os;
    os.has_version = 1;
    os.version = 13;
    Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
    m.has_ir_version = 1;
    m.ir_version = 8;
    m.n_opset_import = 1;
    m.opset_import = &osp;
    m.graph = &g;
    size_t len = onnx__model_proto__get_packed_size(&m);
    uint8_t *buf = malloc(len);
    onnx__model_proto__pack(&m, buf);
    ox_model *mm = NULL;
    ox_error err = {0};
    assert_int_equal(ox_load_buffer(buf, len, NULL, &mm, &err), OX_OK);
    ox_check_report rep;
    assert_int_equal(ox_check_model(mm, &rep), OX_EMODEL);
    bool saw_cycle = false;
    for (int i = 0; i < rep.n_issues; i++)
        if (strstr(rep.issues[i].msg, "cycle"))
            saw_cycle = true;
    assert_true(saw_cycle);
    ox_check_report_free(&rep);
    assert_int_equal(ox_graph_toposort(mm->graph, &err), OX_EMODEL);
    ox_model_free(mm);
    free(buf);

    /* Both nodes write x: refused at load. */
    nb.output = out_a;
    nb.input = in_a;
    na.input = in_b;
    len = onnx__model_proto__get_packed_size(&m);
    buf = malloc(len);
    onnx__model_proto__pack(&m, buf);
    ox_error_clear(&err);
    assert_int_equal(ox_load_buffer(buf, len, NULL, &mm, &err), OX_EMODEL);
    assert_non_null(strstr(err.msg, "more than once"));
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_truncations),
        cmocka_unit_test(test_bit_flips),
        cmocka_unit_test(test_random_bytes),
        cmocka_unit_test(test_absurd_sizes),
        cmocka_unit_test(test_cycle_and_double_assignment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
