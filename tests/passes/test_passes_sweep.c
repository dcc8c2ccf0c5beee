/* Robustness sweep of the pass pipeline: for every pair of operator types
 * the passes match (producer A, consumer B), graphs where A has no inputs,
 * where B has no outputs, where both have an omitted ("") first output,
 * and a plain A -> B chain, each run through the whole pipeline (all/ort
 * and basic/onnx) and the checker. Nothing may crash: under ASan
 * (tools/sanitize.sh --ci) this catches the out-of-bounds reads of
 * inputs[0]/outputs[0] that malformed models caused in the fusions
 * (tests/fuzz/regress/passes holds the first ones found). When a pass
 * starts matching a new op type, add it to `ops`. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "onnxscope/check.h"
#include "onnxscope/infer.h"
#include "onnxscope/ir.h"
#include "onnxscope/passes.h"

/* The quoted op names in the .c files of src/passes, plus two reductions. */
static const char *const ops[] = {
    "Add", "And", "ArgMax", "ArgMin", "AveragePool", "BatchNormalization", "Bernoulli", "Cast",
    "Clip", "Concat", "Constant", "ConstantOfShape", "Conv", "ConvTranspose", "Div", "Dropout",
    "Equal", "Exp", "Expand", "Flatten", "Gather", "Gemm", "HardSigmoid", "HardSwish",
    "Identity", "If", "LeakyRelu", "Log", "LogSoftmax", "MatMul", "Max", "MaxPool", "Mean",
    "Min", "Mul", "Multinomial", "Or", "Pad", "RandomNormal", "RandomNormalLike",
    "RandomUniform", "RandomUniformLike", "ReduceSum", "ReduceMean", "Relu", "Reshape", "Shape",
    "Sigmoid", "Slice", "Softmax", "Split", "Sqrt", "Squeeze", "Sum", "Swish", "Tanh", "Tile",
    "Transpose", "Unsqueeze", "Xor", "Erf", "Gelu", "LayerNormalization", "Pow",
    "RMSNormalization", "Reciprocal", "RoiAlign", "Sub", "Where",
    /* com.microsoft (the last N_MS entries) */
    "Attention", "BiasGelu", "FastGelu", "SimplifiedLayerNormalization",
    "SkipLayerNormalization", "FusedConv", "FusedGemm", "FusedMatMul", "QuickGelu",
};
enum { N_OPS = sizeof ops / sizeof ops[0], N_MS = 9 };
enum { V_NO_INPUTS, V_NO_OUTPUTS, V_EMPTY_OUTPUT, V_CHAIN, V_COUNT };

static const char *domain_of(int k)
{
    return k >= N_OPS - N_MS ? "com.microsoft" : "";
}

static ox_model *build(int a, int b, int variant)
{
    ox_model *m = ox_model_new();
    assert_non_null(m);
    ox_model_set_opset(m, "", 13);
    ox_model_set_opset(m, "com.microsoft", 1);
    ox_graph *g = m->graph;
    int64_t d[4] = {2, 3, 4, 5}, one = 1;
    ox_value *in = ox_graph_value(g, "in");
    in->type = ox_type_new_tensor(OX_DT_FLOAT, 4, d);
    ox_graph_add_input(g, in);
    ox_value *c = ox_graph_value(g, "c");
    ox_tensor *t = ox_tensor_new(OX_DT_INT64, 1, &one);
    ox_tensor_set_i64(t, 0, 1);
    ox_graph_set_initializer(g, c, t);
    ox_value *x = ox_graph_value(g, "x"), *y = ox_graph_value(g, "y");
    ox_value *a3[3] = {in, c, c}, *b3[3] = {x, c, c};
    ox_value *ax[2] = {NULL, x}, *by[2] = {NULL, y};
    const char *A = ops[a], *B = ops[b];
    switch (variant) {
    case V_NO_INPUTS:
        ox_node_new(g, A, domain_of(a), "a", 0, NULL, 1, &x);
        ox_node_new(g, B, domain_of(b), "b", 3, b3, 1, &y);
        break;
    case V_NO_OUTPUTS:
        ox_node_new(g, A, domain_of(a), "a", 3, a3, 1, &x);
        ox_node_new(g, B, domain_of(b), "b", 2, b3, 0, NULL);
        ox_node_new(g, "Identity", "", "id", 1, &x, 1, &y);
        break;
    case V_EMPTY_OUTPUT:
        ox_node_new(g, A, domain_of(a), "a", 3, a3, 2, ax);
        ox_node_new(g, B, domain_of(b), "b", 3, b3, 2, by);
        break;
    default:
        ox_node_new(g, A, domain_of(a), "a", 1, &in, 1, &x);
        ox_node_new(g, B, domain_of(b), "b", 1, &x, 1, &y);
        break;
    }
    ox_graph_add_output(g, y);
    return m;
}

static void test_pairs(void **state)
{
    (void)state;
    static const struct {
        ox_pass_level level;
        ox_pass_target target;
    } cfg[] = {{OX_LEVEL_ALL, OX_TARGET_ORT}, {OX_LEVEL_BASIC, OX_TARGET_ONNX}};
    int runs = 0, ok = 0;
    for (int a = 0; a < N_OPS; a++)
        for (int b = 0; b < N_OPS; b++)
            for (int v = 0; v < V_COUNT; v++)
                for (size_t k = 0; k < sizeof cfg / sizeof cfg[0]; k++) {
                    ox_model *m = build(a, b, v);
                    ox_error err = {0};
                    ox_infer_model(m, NULL, &err);
                    ox_pass_manager *pm = ox_pm_new(cfg[k].level, cfg[k].target);
                    assert_non_null(pm);
                    ox_error perr = {0};
                    if (ox_pm_run(pm, m, NULL, &perr) == OX_OK)
                        ok++;
                    ox_check_report rep;
                    ox_check_model(m, &rep);
                    ox_check_report_free(&rep);
                    ox_pm_free(pm);
                    ox_model_free(m);
                    runs++;
                }
    print_message("%d pipeline runs over %d op pairs, %d completed\n", runs, N_OPS * N_OPS, ok);
    assert_int_equal(runs, N_OPS * N_OPS * V_COUNT * 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pairs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
