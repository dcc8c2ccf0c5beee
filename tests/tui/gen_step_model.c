/* Writes the small model of the stepper tests: every basic pass it wakes
 * has a known number of rewrites, and node names differ from tensor names
 * (so that a search by tensor name is a real test):
 *   x[2,8] -> Identity(id_in) -> Softmax(softmax) -> Log(log)
 *          -> MatMul(matmul, W[8,4]) -> Add(add_bias, Constant bias_const)
 *          -> Identity(id_out) -> y[2,4]
 * constant_to_initializer: 1, eliminate_identity: 2, fuse_log_softmax: 1,
 * fuse_matmul_add: 1 (MatMul + Add -> Gemm).
 * With --const-weights W is a Constant node too (every weight in Constant
 * nodes, as a Paddle export has them): the Initializers panel's test.
 * Usage: gen_step_model OUT.onnx [--const-weights] */
#include <string.h>
#include <stdio.h>

#include "onnxscope/io.h"
#include "onnxscope/ir.h"
#include "onnxscope/tensor.h"

static ox_node *op(ox_graph *g, const char *type, const char *name, const char *a,
                   const char *b, const char *out)
{
    ox_value *in[2] = {a ? ox_graph_value(g, a) : NULL, b ? ox_graph_value(g, b) : NULL};
    ox_value *o = ox_graph_value(g, out);
    return ox_node_new(g, type, "", name, b ? 2 : a ? 1 : 0, in, 1, &o);
}

int main(int argc, char **argv)
{
    bool cw = argc == 3 && strcmp(argv[2], "--const-weights") == 0;
    if (argc != 2 && !cw) {
        fprintf(stderr, "usage: gen_step_model OUT.onnx [--const-weights]\n");
        return 2;
    }
    ox_model *m = ox_model_new();
    if (!m)
        return 1;
    m->ir_version = 8;
    ox_model_set_opset(m, "", 13);
    ox_graph *g = m->graph;
    int64_t xd[2] = {2, 8}, wd[2] = {8, 4}, bd = 4, yd[2] = {2, 4};
    ox_value *x = ox_graph_value(g, "x");
    x->type = ox_type_new_tensor(OX_DT_FLOAT, 2, xd);
    ox_graph_add_input(g, x);
    ox_tensor *w = ox_tensor_new(OX_DT_FLOAT, 2, wd);
    ox_tensor *bias = ox_tensor_new(OX_DT_FLOAT, 1, &bd);
    if (!x->type || !w || !bias)
        return 1;
    for (int i = 0; i < 32; i++)
        ox_tensor_set_f64(w, i, (i % 7) * 0.125 - 0.375);
    for (int i = 0; i < 4; i++)
        ox_tensor_set_f64(bias, i, 0.5 * i);
    if (cw) {
        ox_node *wc = op(g, "Constant", "W_const", NULL, NULL, "W");
        if (!wc || !ox_node_set_attr_t(wc, "value", w))
            return 1;
    } else if (ox_graph_set_initializer(g, ox_graph_value(g, "W"), w) != OX_OK) {
        return 1;
    }
    ox_node *c = op(g, "Constant", "bias_const", NULL, NULL, "bias");
    if (!c || !ox_node_set_attr_t(c, "value", bias))
        return 1;
    ox_node *sm = op(g, "Softmax", "softmax", "x_id", NULL, "attn_probs");
    if (!op(g, "Identity", "id_in", "x", NULL, "x_id") || !sm ||
        !op(g, "Log", "log", "attn_probs", NULL, "logp") ||
        !op(g, "MatMul", "matmul", "logp", "W", "mm") ||
        !op(g, "Add", "add_bias", "mm", "bias", "sum") ||
        !op(g, "Identity", "id_out", "sum", NULL, "y"))
        return 1;
    ox_node_set_attr_i(sm, "axis", -1);
    ox_value *y = ox_graph_value(g, "y");
    y->type = ox_type_new_tensor(OX_DT_FLOAT, 2, yd);
    ox_graph_add_output(g, y);
    ox_error err = {0};
    if (ox_graph_toposort(g, &err) != OX_OK || ox_save(m, argv[1], NULL, &err) != OX_OK) {
        fprintf(stderr, "gen_step_model: %s: %s\n", argv[1], err.msg);
        return 1;
    }
    ox_model_free(m);
    return 0;
}
