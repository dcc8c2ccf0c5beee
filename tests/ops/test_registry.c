/* Tests of the operator registry: version selection (highest
 * since_version <= opset), entries for operators whose semantics changed
 * between opsets, arity and attribute parsing of the signature strings,
 * table invariants, and coverage of every operator used by the ONNX
 * backend node tests (read from ../shared/onnx-backend/INDEX.tsv). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "onnxscope/ops.h"

static int since(const char *dom, const char *op, int64_t opset)
{
    const ox_op_schema *s = ox_op_find(dom, op, opset);
    return s ? s->since_version : -1;
}

static void test_version_selection(void **state)
{
    (void)state;
    assert_int_equal(since("", "Reshape", 4), 1);
    assert_int_equal(since("", "Reshape", 13), 5);
    assert_int_equal(since("", "Reshape", 14), 14);
    assert_int_equal(since("", "Reshape", 21), 14);
    assert_int_equal(since("ai.onnx", "Reshape", 14), 14);
    assert_int_equal(since(NULL, "Reshape", 14), 14);
    /* Standard from 17; below, the ONNX-domain form ONNX Runtime accepts
     * at any opset (what fuse_layernorm emits under --target ort). */
    assert_int_equal(since("", "LayerNormalization", 16), 1);
    assert_int_equal(since("", "LayerNormalization", 17), 17);
    assert_int_equal(since("", "RMSNormalization", 22), -1);
    assert_int_equal(since("", "NoSuchOp", 17), -1);
    assert_int_equal(since("com.microsoft", "FusedConv", 1), 1);
    assert_int_equal(since("com.microsoft", "LayerNormalization", 1), 1);
    assert_int_equal(since("ai.onnx.ml", "LabelEncoder", 3), 2);
    assert_int_equal(since("ai.onnx.ml", "LabelEncoder", 4), 4);
    /* Semantics that moved from attributes to inputs are distinct entries. */
    assert_int_equal(since("", "Squeeze", 12), 1);
    assert_int_equal(since("", "Squeeze", 13), 13);
    assert_int_equal(since("", "Unsqueeze", 13), 13);
    assert_int_equal(since("", "ReduceSum", 12), 11);
    assert_int_equal(since("", "ReduceSum", 13), 13);
    assert_int_equal(since("", "ReduceMean", 17), 13);
    assert_int_equal(since("", "ReduceMean", 18), 18);
    assert_int_equal(since("", "Split", 12), 2);
    assert_int_equal(since("", "Split", 13), 13);
    assert_int_equal(since("", "Split", 18), 18);
    assert_int_equal(since("", "Slice", 9), 1);
    assert_int_equal(since("", "Slice", 10), 10);
    assert_int_equal(since("", "Pad", 10), 2);
    assert_int_equal(since("", "Pad", 11), 11);
    assert_int_equal(since("", "Clip", 10), 1);
    assert_int_equal(since("", "Clip", 11), 11);
    assert_int_equal(since("", "Resize", 10), 10);
    assert_int_equal(since("", "Resize", 11), 11);
    assert_int_equal(since("", "TopK", 9), 1);
    assert_int_equal(since("", "TopK", 10), 10);
    assert_int_equal(since("", "Upsample", 8), 7);
    assert_int_equal(since("", "Upsample", 9), 9);
    /* The attribute/input split is visible in the signatures. */
    const ox_op_schema *s12 = ox_op_find("", "Squeeze", 12), *s13 = ox_op_find("", "Squeeze", 13);
    assert_non_null(strstr(s12->attrs, "axes"));
    assert_null(strstr(s12->inputs, "axes"));
    assert_non_null(strstr(s13->inputs, "axes"));
    assert_ptr_equal(ox_op_next_version(s12), s13);
}

static void test_arity_and_attrs(void **state)
{
    (void)state;
    ox_op_arity a;
    ox_op_schema_arity(ox_op_find("", "Conv", 13), &a);
    assert_int_equal(a.min_in, 2);
    assert_int_equal(a.max_in, 3);
    assert_int_equal(a.min_out, 1);
    assert_int_equal(a.max_out, 1);
    ox_op_schema_arity(ox_op_find("", "Concat", 13), &a);
    assert_int_equal(a.min_in, 1);
    assert_int_equal(a.max_in, -1);
    ox_op_schema_arity(ox_op_find("", "Constant", 13), &a);
    assert_int_equal(a.min_in, 0);
    assert_int_equal(a.max_in, 0);
    ox_op_schema_arity(ox_op_find("", "LSTM", 14), &a);
    assert_int_equal(a.min_in, 3);
    assert_int_equal(a.max_in, 8);
    assert_int_equal(a.min_out, 0);
    assert_int_equal(a.max_out, 3);

    const ox_op_schema *conv = ox_op_find("", "Conv", 13);
    ox_op_attr_info ai;
    bool found_group = false, found_ks = false;
    for (int k = 0; ox_op_schema_attr(conv, k, &ai); k++) {
        if (!strcmp(ai.name, "group")) {
            found_group = true;
            assert_int_equal(ai.type, OX_ATTR_INT);
            assert_true(ai.has_default);
            assert_string_equal(ai.dflt, "1");
        }
        if (!strcmp(ai.name, "kernel_shape")) {
            found_ks = true;
            assert_int_equal(ai.type, OX_ATTR_INTS);
            assert_false(ai.has_default);
        }
    }
    assert_true(found_group && found_ks);
    /* A list default with commas stays one attribute. */
    const ox_op_schema *mvn = ox_op_find("", "MeanVarianceNormalization", 13);
    assert_true(ox_op_schema_attr(mvn, 0, &ai));
    assert_string_equal(ai.name, "axes");
    assert_string_equal(ai.dflt, "[0,2,3]");
    assert_false(ox_op_schema_attr(mvn, 1, &ai));
    const ox_op_schema *unsq = ox_op_find("", "Unsqueeze", 11);
    assert_true(ox_op_schema_attr(unsq, 0, &ai));
    assert_true(ai.required);
}

static void test_table_invariants(void **state)
{
    (void)state;
    int n = ox_op_count();
    assert_true(n > 250);
    const ox_op_schema *prev = NULL, *s;
    for (int i = 0; (s = ox_op_at(i)); i++) {
        assert_non_null(s->doc);
        assert_true(strlen(s->doc) > 0);
        assert_non_null(s->infer);
        assert_true(s->since_version >= 1);
        if (prev && !strcmp(prev->domain, s->domain) && !strcmp(prev->op_type, s->op_type))
            assert_true(prev->since_version < s->since_version);
        else if (prev)
            assert_true(strcmp(prev->domain, s->domain) < 0 ||
                        (!strcmp(prev->domain, s->domain) &&
                         strcmp(prev->op_type, s->op_type) < 0));
        /* Every attribute entry parses. */
        ox_op_attr_info ai;
        for (int k = 0; ox_op_schema_attr(s, k, &ai); k++)
            assert_int_not_equal(ai.type, OX_ATTR_UNDEFINED);
        prev = s;
    }
    assert_int_equal(n, n); /* ox_op_at stops exactly at the count */
    assert_null(ox_op_at(n));
}

static void test_backend_coverage(void **state)
{
    (void)state;
    const char *sh = getenv("ONNXSCOPE_SHARED");
    char path[4096];
    snprintf(path, sizeof path, "%s/onnx-backend/INDEX.tsv", sh ? sh : "");
    FILE *f = sh ? fopen(path, "r") : NULL;
    if (!f) {
        printf("skipped: %s not readable\n", path);
        skip();
    }
    char line[8192];
    int checked = 0, missing = 0;
    while (fgets(line, sizeof line, f)) {
        /* folder, case, ir, opsets, nodes, data_sets, pb_files, bytes, ops */
        char *cols[9] = { 0 };
        int nc = 0;
        char *save = NULL;
        for (char *t = strtok_r(line, "\t\n", &save); t && nc < 9; t = strtok_r(NULL, "\t\n", &save))
            cols[nc++] = t;
        if (nc < 9 || strcmp(cols[0], "node"))
            continue;
        char *save2 = NULL;
        for (char *op = strtok_r(cols[8], " ", &save2); op; op = strtok_r(NULL, " ", &save2)) {
            const char *dom = "";
            char *sep = strstr(op, "::");
            if (sep) {
                *sep = 0;
                dom = op;
                op = sep + 2;
            }
            checked++;
            if (!ox_op_find(dom, op, INT32_MAX)) {
                printf("not registered: %s::%s (%s)\n", dom, op, cols[1]);
                missing++;
            }
        }
    }
    fclose(f);
    printf("%d operator uses checked, %d not registered\n", checked, missing);
    assert_true(checked > 0);
    assert_int_equal(missing, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_selection),
        cmocka_unit_test(test_arity_and_attrs),
        cmocka_unit_test(test_table_invariants),
        cmocka_unit_test(test_backend_coverage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
