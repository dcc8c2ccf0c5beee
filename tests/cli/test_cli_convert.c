/* `onnxscope convert` and the --opset options of optimize and
 * test-backend: exit codes and usage errors, a refusal as one line naming
 * the operator, the node and the target opset (exit 1, nothing written),
 * a converted model that keeps its declared input/output types, --json,
 * and (with ../shared) an opset-13 BERT raised to 17 by `optimize --opset
 * 17 --level all` getting LayerNormalization fused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "onnxscope/io.h"
#include "onnxscope/ir.h"
#include "testutil.h"

static char tmpdir[64];

static int run(const char *args, char **out)
{
    char cmd[8800];
    snprintf(cmd, sizeof cmd, "'%s' %s", ox_test_bin(), args);
    return ox_test_run(cmd, out);
}

/* x:float[2,3,4] (and z) -> op -> y, at opset `opset`, saved to path. */
static void save_model(const char *path, int opset, const char *op, int n_in, int64_t axis)
{
    ox_model *m = ox_model_new();
    ox_model_set_opset(m, "", opset);
    m->ir_version = 7;
    const int64_t d[3] = {2, 3, 4};
    ox_value *in[2] = {ox_graph_value(m->graph, "x"), ox_graph_value(m->graph, "z")};
    for (int i = 0; i < n_in; i++) {
        in[i]->type = ox_type_new_tensor(OX_DT_FLOAT, 3, d);
        in[i]->decl = ox_type_new_tensor(OX_DT_FLOAT, 3, d);
        ox_graph_add_input(m->graph, in[i]);
    }
    ox_value *y = ox_graph_value(m->graph, "y");
    ox_node *n = ox_node_new(m->graph, op, "", "y", n_in, in, 1, &y);
    if (axis != -100)
        ox_node_set_attr_i(n, "axis", axis);
    y->decl = ox_type_new_tensor(OX_DT_FLOAT, 3, d);
    ox_graph_add_output(m->graph, y);
    ox_error err = {0};
    assert_int_equal(ox_save(m, path, NULL, &err), OX_OK);
    ox_model_free(m);
}

static void test_usage(void **state)
{
    (void)state;
    char model[128], out[128], args[512];
    snprintf(model, sizeof model, "%s/relu.onnx", tmpdir);
    snprintf(out, sizeof out, "%s/out.onnx", tmpdir);
    save_model(model, 13, "Relu", 1, -100);
    struct {
        const char *fmt;
        int rc;
    } cases[] = {
        {"convert", 2},
        {"convert %s --opset 13", 2},          /* no -o */
        {"convert %s -o %s", 2},               /* no --opset */
        {"convert %s -o %s --opset 6", 2},
        {"convert %s -o %s --opset 24", 2},
        {"convert %s -o %s --opset x", 2},
        {"convert %s %s -o x.onnx --opset 9", 2},
        {"convert /nonexistent/m.onnx -o %s --opset 9", 3},
        {"optimize %s -o %s --opset 99", 2},
        {"test-backend %s --opset 5", 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char cmd[256];
        snprintf(cmd, sizeof cmd, "%s", cases[i].fmt);
        snprintf(args, sizeof args, cmd, model, out);
        char *o = NULL;
        int rc = run(args, &o);
        if (rc != cases[i].rc)
            fail_msg("'%s': exit %d, expected %d: %s", args, rc, cases[i].rc, o);
        assert_non_null(strstr(o, "onnxscope: "));
        free(o);
    }
}

static void test_refusal(void **state)
{
    (void)state;
    char model[128], out[128], args[512];
    snprintf(model, sizeof model, "%s/mod.onnx", tmpdir);
    snprintf(out, sizeof out, "%s/mod9.onnx", tmpdir);
    save_model(model, 13, "Mod", 2, -100);
    snprintf(args, sizeof args, "convert %s -o %s --opset 9", model, out);
    char *o = NULL;
    assert_int_equal(run(args, &o), 1);
    char want[256];
    snprintf(want, sizeof want, "onnxscope: %s: Mod node 'y' cannot be converted to opset 9: "
             "Mod was introduced in opset 10\n", model);
    assert_string_equal(o, want);
    free(o);
    struct stat st;
    assert_int_not_equal(stat(out, &st), 0);
    /* optimize --opset refuses alike. */
    snprintf(args, sizeof args, "optimize %s -o %s --opset 9", model, out);
    assert_int_equal(run(args, &o), 1);
    assert_non_null(strstr(o, "Mod node 'y' cannot be converted to opset 9"));
    free(o);
}

static void test_convert_keeps_declarations(void **state)
{
    (void)state;
    char model[128], out[128], args[512];
    snprintf(model, sizeof model, "%s/softmax.onnx", tmpdir);
    snprintf(out, sizeof out, "%s/softmax13.onnx", tmpdir);
    save_model(model, 12, "Softmax", 1, 1);
    snprintf(args, sizeof args, "convert %s -o %s --opset 13", model, out);
    char *o = NULL;
    assert_int_equal(run(args, &o), 0);
    assert_non_null(strstr(o, "opset 12 -> 13"));
    assert_non_null(strstr(o, "wrote "));
    free(o);
    ox_model *m = NULL;
    ox_error err = {0};
    assert_int_equal(ox_load(out, NULL, &m, &err), OX_OK);
    assert_int_equal(ox_model_opset(m, ""), 13);
    int flatten = 0;
    for (int i = 0; i < m->graph->n_nodes; i++)
        flatten += ox_node_is(m->graph->nodes[i], "Flatten");
    assert_int_equal(flatten, 1);
    char b1[64], b2[64];
    assert_string_equal(ox_type_str(m->graph->inputs[0]->decl, b1, sizeof b1), "float32[2,3,4]");
    assert_string_equal(ox_type_str(m->graph->outputs[0]->decl, b2, sizeof b2), "float32[2,3,4]");
    assert_string_equal(m->graph->outputs[0]->name, "y");
    ox_model_free(m);
    /* --json */
    snprintf(args, sizeof args, "convert %s -o %s --opset 7 --json", out, model);
    assert_int_equal(run(args, &o), 0);
    json_error_t je;
    json_t *j = json_loads(o, 0, &je);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(j, "opset_from")), 13);
    assert_int_equal(json_integer_value(json_object_get(j, "opset_to")), 7);
    assert_true(json_integer_value(json_object_get(j, "nodes_adapted")) >= 1);
    json_decref(j);
    free(o);
}

static int count_op(const char *path, const char *op)
{
    ox_model *m = NULL;
    ox_error err = {0};
    assert_int_equal(ox_load(path, NULL, &m, &err), OX_OK);
    int c = 0;
    for (int i = 0; i < m->graph->n_nodes; i++)
        c += ox_node_is(m->graph->nodes[i], op);
    ox_model_free(m);
    return c;
}

static void test_optimize_raises_bert(void **state)
{
    (void)state;
    const char *shared = ox_test_shared();
    if (!shared) {
        print_message("skipped: ../shared not found\n");
        skip();
    }
    char model[4200], out[128], args[8400];
    snprintf(model, sizeof model, "%s/models/bert_l2_h128_nofold_op13/model.onnx", shared);
    snprintf(out, sizeof out, "%s/bert.onnx", tmpdir);
    char *o = NULL;
    snprintf(args, sizeof args, "optimize %s -o %s --level all --check 1 --default-dim 2", model,
             out);
    assert_int_equal(run(args, &o), 0);
    free(o);
    assert_int_equal(count_op(out, "LayerNormalization"), 0);
    snprintf(args, sizeof args,
             "optimize %s -o %s --level all --opset 17 --check 1 --default-dim 2", model, out);
    assert_int_equal(run(args, &o), 0);
    assert_non_null(strstr(o, "opset 13 -> 17"));
    assert_non_null(strstr(o, "fuse_layernorm: "));
    free(o);
    /* Two per layer and the embeddings' (docs/PASSES.md, test_fuse_models). */
    assert_int_equal(count_op(out, "LayerNormalization"), 5);
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/oxcvtXXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    if (!ox_test_bin()) {
        printf("# skipped: ONNXSCOPE_BIN not set\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_usage),
        cmocka_unit_test(test_refusal),
        cmocka_unit_test(test_convert_keeps_declarations),
        cmocka_unit_test(test_optimize_raises_bert),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
