/* float16 models on the CUDA backend (docs/EXECUTOR.md "float16 models on
 * the GPU"): placement of float16 nodes (src/exec/cuda/place_half.c), and
 * on the emulated device (ONNXSCOPE_CUDA_EMULATE=1, any machine) the
 * to_fp16 pass's output of every shared model and the float16 node cases
 * of the ONNX backend suite against the CPU executor. A GPU run of the same
 * comparisons is exec_cuda's business (bench/gpu-check.sh). */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <cmocka.h>

#include "exec/cuda/place.h"
#include "exec/cuda/place_half.h"
#include "onnxscope/device.h"
#include "onnxscope/dtype.h"
#include "onnxscope/exec.h"
#include "onnxscope/io.h"
#include "onnxscope/ir.h"
#include "onnxscope/passes.h"
#include "onnxscope/testdata.h"
#include "testutil.h"

/* The fp16 tolerance of issue 17 (against the CPU executor running the
 * same float16 model) and optimize --check's to_fp16 criterion (against
 * the float32 model). */
#define HALF_RTOL 1e-2
#define HALF_ATOL 1e-3
#define MIN_COSINE 0.999

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static float rndf(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng >> 33) % 20001) / 10000.0f - 1.0f;
}

/* ---- a float16 graph --------------------------------------------------------------- */

static ox_tensor *half_tensor(int rank, const int64_t *dims, float scale)
{
    ox_tensor *t = ox_tensor_new(OX_DT_FLOAT16, rank, dims);
    assert_non_null(t);
    uint16_t *d = ox_tensor_mutable_data(t);
    for (int64_t i = 0; i < t->numel; i++)
        d[i] = ox_f32_to_f16(scale * rndf());
    return t;
}

static ox_value *input(ox_graph *g, const char *name, ox_dtype dt, int rank, const int64_t *dims)
{
    ox_value *v = ox_graph_value(g, name);
    v->type = ox_type_new_tensor(dt, rank, dims);
    assert_int_equal(ox_graph_add_input(g, v), OX_OK);
    return v;
}

static ox_value *init(ox_graph *g, const char *name, ox_tensor *t)
{
    ox_value *v = ox_graph_value(g, name);
    assert_int_equal(ox_graph_set_initializer(g, v, t), OX_OK);
    return v;
}

static ox_node *node(ox_graph *g, const char *op, const char *dom, int nin, ox_value **ins,
                     const char *out)
{
    ox_value *o = ox_graph_value(g, out);
    char name[64];
    snprintf(name, sizeof name, "n%d", g->n_nodes);
    ox_node *n = ox_node_new(g, op, dom, name, nin, ins, 1, &o);
    assert_non_null(n);
    return n;
}

/* x (float32 2x8x16) -> Cast f16 -> MatMul W -> Add b -> Relu -> Softmax ->
 * LayerNormalization -> Transpose -> ReduceMean -> Cast f32 -> y, and a
 * float16 com.microsoft Attention reading the LayerNorm output -> Cast f32
 * -> z. */
static ox_model *half_graph(ox_rval **in)
{
    ox_model *m = ox_model_new();
    assert_non_null(m);
    ox_model_set_opset(m, "", 17);
    ox_model_set_opset(m, "com.microsoft", 1);
    ox_graph *g = m->graph ? m->graph : ox_graph_new(m, NULL);
    m->graph = g;
    int64_t xd[3] = {2, 8, 16}, wd[2] = {16, 16}, bd[1] = {16}, qd[2] = {16, 48}, qb[1] = {48};
    ox_value *x = input(g, "x", OX_DT_FLOAT, 3, xd);
    ox_value *w = init(g, "w", half_tensor(2, wd, 0.5f));
    ox_value *b = init(g, "b", half_tensor(1, bd, 0.5f));
    ox_value *gam = init(g, "gamma", half_tensor(1, bd, 1.0f));
    ox_value *bet = init(g, "beta", half_tensor(1, bd, 0.2f));
    ox_value *qw = init(g, "qkv_w", half_tensor(2, qd, 0.3f));
    ox_value *qbias = init(g, "qkv_b", half_tensor(1, qb, 0.1f));
    ox_node *c = node(g, "Cast", "", 1, &x, "xh");
    ox_node_set_attr_i(c, "to", OX_DT_FLOAT16);
    ox_value *mm[2] = {ox_graph_find(g, "xh"), w};
    node(g, "MatMul", "", 2, mm, "mm");
    ox_value *ad[2] = {ox_graph_find(g, "mm"), b};
    node(g, "Add", "", 2, ad, "add");
    ox_value *r = ox_graph_find(g, "add");
    node(g, "Relu", "", 1, &r, "relu");
    ox_value *s = ox_graph_find(g, "relu");
    node(g, "Softmax", "", 1, &s, "sm");
    ox_value *ln[3] = {ox_graph_find(g, "sm"), gam, bet};
    node(g, "LayerNormalization", "", 3, ln, "ln");
    ox_value *t = ox_graph_find(g, "ln");
    ox_node *tr = node(g, "Transpose", "", 1, &t, "tr");
    int64_t perm[3] = {0, 2, 1};
    ox_node_set_attr_ints(tr, "perm", 3, perm);
    ox_value *rm = ox_graph_find(g, "tr");
    ox_node *red = node(g, "ReduceMean", "", 1, &rm, "red");
    int64_t ax[1] = {2};
    ox_node_set_attr_ints(red, "axes", 1, ax);
    ox_value *cr = ox_graph_find(g, "red");
    ox_node *c2 = node(g, "Cast", "", 1, &cr, "y");
    ox_node_set_attr_i(c2, "to", OX_DT_FLOAT);
    ox_value *at[3] = {t, qw, qbias};
    ox_node *att = node(g, "Attention", "com.microsoft", 3, at, "att");
    ox_node_set_attr_i(att, "num_heads", 2);
    ox_value *ca = ox_graph_find(g, "att");
    ox_node *c3 = node(g, "Cast", "", 1, &ca, "z");
    ox_node_set_attr_i(c3, "to", OX_DT_FLOAT);
    assert_int_equal(ox_graph_add_output(g, ox_graph_find(g, "y")), OX_OK);
    assert_int_equal(ox_graph_add_output(g, ox_graph_find(g, "z")), OX_OK);
    ox_tensor *xt = ox_tensor_new(OX_DT_FLOAT, 3, xd);
    assert_non_null(xt);
    float *xv = ox_tensor_mutable_data(xt);
    for (int64_t i = 0; i < xt->numel; i++)
        xv[i] = 2.f * rndf();
    in[0] = ox_rval_tensor(xt);
    return m;
}

static bool compare_half(ox_model *m, ox_rval *const *in, const char *what, ox_exec_stats *st,
                         ox_rval **out_cpu);

/* The CNN families in float16: x (float32 1x3x10x10) -> Cast -> Conv (bias,
 * pads) -> BatchNormalization -> LeakyRelu -> MaxPool -> HardSigmoid ->
 * AveragePool (pads, count_include_pad 0) -> GlobalAveragePool -> Flatten ->
 * Gemm (C) -> Where(mask, it, Neg(it)) -> Cast -> y. */
static ox_model *half_cnn_graph(ox_rval **in)
{
    ox_model *m = ox_model_new();
    assert_non_null(m);
    ox_model_set_opset(m, "", 17);
    ox_graph *g = m->graph ? m->graph : ox_graph_new(m, NULL);
    m->graph = g;
    int64_t xd[4] = {1, 3, 10, 10}, wd[4] = {4, 3, 3, 3}, cd[1] = {4}, gd[2] = {4, 6},
            od[1] = {6};
    ox_value *x = input(g, "x", OX_DT_FLOAT, 4, xd);
    ox_tensor *var = half_tensor(1, cd, 1.0f);
    uint16_t *vv = ox_tensor_mutable_data(var);
    for (int i = 0; i < 4; i++)
        vv[i] = ox_f32_to_f16(0.5f + fabsf(ox_f16_to_f32(vv[i])));
    ox_tensor *mask = ox_tensor_new(OX_DT_BOOL, 1, od);
    assert_non_null(mask);
    uint8_t *mv = ox_tensor_mutable_data(mask);
    for (int i = 0; i < 6; i++)
        mv[i] = (uint8_t)(i % 2);
    ox_node *c = node(g, "Cast", "", 1, &x, "xh");
    ox_node_set_attr_i(c, "to", OX_DT_FLOAT16);
    ox_value *cv[3] = {ox_graph_find(g, "xh"), init(g, "w", half_tensor(4, wd, 0.4f)),
                       init(g, "b", half_tensor(1, cd, 0.2f))};
    ox_node *conv = node(g, "Conv", "", 3, cv, "conv");
    int64_t pads[4] = {1, 1, 1, 1};
    ox_node_set_attr_ints(conv, "pads", 4, pads);
    ox_value *bn[5] = {ox_graph_find(g, "conv"), init(g, "scale", half_tensor(1, cd, 1.0f)),
                       init(g, "bias", half_tensor(1, cd, 0.3f)),
                       init(g, "mean", half_tensor(1, cd, 0.2f)), init(g, "var", var)};
    node(g, "BatchNormalization", "", 5, bn, "bn");
    ox_value *v = ox_graph_find(g, "bn");
    ox_node_set_attr_f(node(g, "LeakyRelu", "", 1, &v, "lr"), "alpha", 0.1f);
    v = ox_graph_find(g, "lr");
    ox_node *mp = node(g, "MaxPool", "", 1, &v, "mp");
    int64_t k2[2] = {2, 2}, k3[2] = {3, 3};
    ox_node_set_attr_ints(mp, "kernel_shape", 2, k2);
    ox_node_set_attr_ints(mp, "strides", 2, k2);
    v = ox_graph_find(g, "mp");
    node(g, "HardSigmoid", "", 1, &v, "hs");
    v = ox_graph_find(g, "hs");
    ox_node *ap = node(g, "AveragePool", "", 1, &v, "ap");
    ox_node_set_attr_ints(ap, "kernel_shape", 2, k3);
    ox_node_set_attr_ints(ap, "pads", 4, pads);
    v = ox_graph_find(g, "ap");
    node(g, "GlobalAveragePool", "", 1, &v, "gap");
    v = ox_graph_find(g, "gap");
    node(g, "Flatten", "", 1, &v, "flat");
    ox_value *gm[3] = {ox_graph_find(g, "flat"), init(g, "gw", half_tensor(2, gd, 1.0f)),
                       init(g, "gc", half_tensor(1, od, 0.5f))};
    node(g, "Gemm", "", 3, gm, "gemm");
    v = ox_graph_find(g, "gemm");
    node(g, "Neg", "", 1, &v, "neg");
    ox_value *wh[3] = {init(g, "mask", mask), ox_graph_find(g, "gemm"), ox_graph_find(g, "neg")};
    node(g, "Where", "", 3, wh, "wh");
    v = ox_graph_find(g, "wh");
    ox_node_set_attr_i(node(g, "Cast", "", 1, &v, "y"), "to", OX_DT_FLOAT);
    assert_int_equal(ox_graph_add_output(g, ox_graph_find(g, "y")), OX_OK);
    ox_tensor *xt = ox_tensor_new(OX_DT_FLOAT, 4, xd);
    assert_non_null(xt);
    float *xv = ox_tensor_mutable_data(xt);
    for (int64_t i = 0; i < xt->numel; i++)
        xv[i] = 2.f * rndf();
    in[0] = ox_rval_tensor(xt);
    return m;
}

static void test_half_cnn_placement(void **state)
{
    (void)state;
    ox_rval *in[1] = {0};
    ox_model *m = half_cnn_graph(in);
    const ox_graph *g = m->graph;
    ox_cuda_caps caps = {.cublas = true, .cudnn = true};
    ox_cuda_plan *p = NULL;
    ox_error err = {0};
    if (ox_cuda_plan_build(m, g->n_nodes, (const ox_node *const *)g->nodes, g->n_values,
                           (const ox_value *const *)g->values, 1, in, &caps, &p, &err))
        fail_msg("plan: %s", err.msg);
    assert_non_null(p);
    static const ox_cuda_kind want[] = {
        OX_CK_K_CAST,  OX_CK_K_CONV,       OX_CK_K_BATCHNORM, OX_CK_K_UNARY, OX_CK_K_POOL,
        OX_CK_K_UNARY, OX_CK_K_POOL,       OX_CK_K_GLOBALPOOL, OX_CK_K_RESHAPE, OX_CK_K_GEMM,
        OX_CK_K_UNARY, OX_CK_K_WHERE,      OX_CK_K_CAST,
    };
    assert_int_equal(p->n_nodes, (int)(sizeof want / sizeof want[0]));
    for (int k = 0; k < p->n_nodes; k++)
        if (p->kind[k] != want[k])
            fail_msg("node %d (%s): kind %d, expected %d (%s)", k, g->nodes[k]->op_type,
                     p->kind[k], want[k], p->why[k] ? p->why[k] : "");
    /* Gemm's C (float16, beta 1) is its bias epilogue. */
    assert_int_equal(p->ep[9], OX_EP_BIAS);
    ox_cuda_plan_free(p);
    /* On the emulated device against the CPU executor. */
    ox_exec_stats st;
    assert_true(compare_half(m, in, "float16 CNN graph", &st, NULL));
    assert_int_equal(st.nodes_on[OX_DEVICE_CUDA], 13);
    ox_rval_free(in[0]);
    ox_model_free(m);
}

/* Placement: every float16 node with a half kernel on the GPU (the boundary
 * Casts too); a node mixing float16 and float32 (other than a Cast) on the
 * CPU with its reason. */
static void test_half_placement(void **state)
{
    (void)state;
    ox_rval *in[1] = {0};
    ox_model *m = half_graph(in);
    const ox_graph *g = m->graph;
    ox_cuda_caps caps = {.cublas = true, .cudnn = true};
    ox_cuda_plan *p = NULL;
    ox_error err = {0};
    if (ox_cuda_plan_build(m, g->n_nodes, (const ox_node *const *)g->nodes, g->n_values,
                           (const ox_value *const *)g->values, 1, in, &caps, &p, &err))
        fail_msg("plan: %s", err.msg);
    assert_non_null(p);
    static const ox_cuda_kind want[] = {
        OX_CK_K_CAST,   OX_CK_K_MATMUL,    OX_CK_K_FUSED,     OX_CK_K_FUSED,
        OX_CK_K_SOFTMAX, OX_CK_K_LAYERNORM, OX_CK_K_TRANSPOSE, OX_CK_K_REDUCE,
        OX_CK_K_CAST,   OX_CK_K_ATTENTION, OX_CK_K_CAST,
    };
    assert_int_equal(p->n_nodes, (int)(sizeof want / sizeof want[0]));
    for (int k = 0; k < p->n_nodes; k++)
        if (p->kind[k] != want[k])
            fail_msg("node %d (%s): kind %d, expected %d (%s)", k, g->nodes[k]->op_type,
                     p->kind[k], want[k], p->why[k] ? p->why[k] : "");
    /* Add(float16, float32): no kernel reads both (the node is made up:
     * no inference runs on it). */
    const ox_node *add = p->cnode[2];   /* the inferred clone's: typed (the Add) */
    ox_value a32 = *add->inputs[1];
    ox_type t32 = *a32.type;
    t32.elem = OX_DT_FLOAT;
    a32.type = &t32;
    ox_value *mixed_in[2] = {add->inputs[0], &a32};
    ox_node mixed = *add;
    mixed.inputs = mixed_in;
    bool host[2] = {true, true};
    const char *why = NULL;
    assert_int_equal(ox_cuda_half_kind(&mixed, 17, host, &caps, &why), OX_CK_NONE);
    assert_string_equal(why, "float16 mixed with another float type");
    /* A node without float16 values is not place_half.c's (-1). */
    ox_value a0 = *add->inputs[0], y32 = *add->outputs[0];
    ox_type t0 = *a0.type, ty = *y32.type;
    t0.elem = ty.elem = OX_DT_FLOAT;
    a0.type = &t0;
    y32.type = &ty;
    ox_value *f32_in[2] = {&a0, &a32}, *f32_out[1] = {&y32};
    ox_node f32 = *add;
    f32.inputs = f32_in;
    f32.outputs = f32_out;
    assert_int_equal(ox_cuda_half_kind(&f32, 17, host, &caps, &why), -1);
    assert_int_equal(ox_cuda_kind_of(&f32, 17, host, &caps, &why), OX_CK_K_BINARY);
    assert_int_equal(ox_cuda_kind_of(add, 17, host, &caps, &why), OX_CK_K_BINARY);
    /* The float16 slots have 2-byte elements in the device plan. */
    for (int s = 0; s < p->n_slots; s++)
        if (g->values[s] && !strcmp(g->values[s]->name, "mm")) {
            assert_int_equal(p->slot[s].dtype, OX_DT_FLOAT16);
            assert_int_equal(p->slot[s].nbytes, 2 * 8 * 16 * 2);
        }
    /* MatMul + Add(float16 bias) + Relu: one GEMM epilogue head writing the
     * Relu's value; no fp16-operand conversion on float16 nodes. */
    assert_int_equal(p->n_epilogue, 1);
    assert_int_equal(p->ep[1], OX_EP_RELU_BIAS);
    assert_int_equal(p->ep_bias_host[1]->dtype, OX_DT_FLOAT16);
    assert_int_equal(p->n_half, 0);
    ox_error verr = {0};
    assert_true(ox_cuda_plan_verify(p, &verr));
    ox_cuda_plan_free(p);
    ox_rval_free(in[0]);
    ox_model_free(m);
}

/* ---- the emulated device against the CPU executor -------------------------------- */

/* false: the real GPU (test_half_gpu_shared_models), else the emulated one. */
static bool use_emulation = true;

static void set_emulate(bool on)
{
    if (!use_emulation)
        return;
    if (on)
        setenv("ONNXSCOPE_CUDA_EMULATE", "1", 1);
    else
        unsetenv("ONNXSCOPE_CUDA_EMULATE");
}

/* Runs m on the CPU executor and twice on the (emulated) CUDA executor
 * (the second run reuses the plan and the uploaded weights), compares every
 * output within the fp16 tolerance, returns the GPU executor's stats and
 * the CPU outputs (out_cpu may be NULL). false when the CPU run fails
 * (the caller skips the case); a CUDA failure fails the test. */
static bool compare_half(ox_model *m, ox_rval *const *in, const char *what, ox_exec_stats *st,
                         ox_rval **out_cpu)
{
    const ox_graph *g = m->graph;
    ox_exec_opts oc = {.threads = 1}, og = {.threads = 1, .device = OX_DEVICE_CUDA};
    ox_exec *ec = NULL, *eg = NULL;
    ox_error err = {0};
    ox_rval *rc[8] = {0}, *rg[8] = {0};
    assert_true(g->n_outputs <= 8);
    if (ox_exec_new(m, &oc, &ec, &err) ||
        ox_exec_run(ec, g->n_inputs, in, g->n_outputs, rc, &err)) {
        printf("%s: CPU executor: %s (case skipped)\n", what, err.msg);
        ox_exec_free(ec);
        for (int i = 0; i < 8; i++)
            ox_rval_free(rc[i]);
        return false;
    }
    set_emulate(true);
    if (ox_exec_new(m, &og, &eg, &err))
        fail_msg("%s (cuda): %s", what, err.msg);
    for (int r = 0; r < 2; r++) {
        for (int i = 0; i < g->n_outputs; i++) {
            ox_rval_free(rg[i]);
            rg[i] = NULL;
        }
        if (ox_exec_run(eg, g->n_inputs, in, g->n_outputs, rg, &err))
            fail_msg("%s (cuda run %d): %s", what, r + 1, err.msg);
        for (int i = 0; i < g->n_outputs; i++) {
            char why[256];
            if (!ox_rval_allclose(rg[i], rc[i], HALF_RTOL, HALF_ATOL, why, sizeof why))
                fail_msg("%s output %d (run %d): %s", what, i, r + 1, why);
        }
    }
    set_emulate(false);
    ox_exec_get_stats(eg, st);
    for (int i = 0; i < g->n_outputs; i++) {
        ox_rval_free(rg[i]);
        if (out_cpu)
            out_cpu[i] = rc[i];
        else
            ox_rval_free(rc[i]);
    }
    ox_exec_free(ec);
    ox_exec_free(eg);
    return true;
}

static void test_half_emulated_graph(void **state)
{
    (void)state;
    ox_rval *in[1] = {0};
    ox_model *m = half_graph(in);
    ox_exec_stats st;
    assert_true(compare_half(m, in, "float16 graph", &st, NULL));
    assert_int_equal(st.nodes_on[OX_DEVICE_CUDA], 11);
    assert_int_equal(st.nodes_on[OX_DEVICE_CPU], 0);
    assert_int_equal(st.epilogue_nodes, 1);
    ox_rval_free(in[0]);
    ox_model_free(m);
}

static const char *const models[] = {
    "bert_l2_h128_nofold_op13", "gpt2_like_l2_h128_nofold_op13", "mobilenet_v2_op13",
    "shape_chain_cnn_nofold_op13", "shape_chain_cnn_nofold_op17", "squeezenet1_1_op17",
    "torch_transformer_encoder_l4_h256_op17",
};

static ox_model *load_with_inputs(const char *dir, ox_rval **in)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    ox_model *m = NULL;
    ox_error err = {0};
    if (ox_load(path, NULL, &m, &err)) {
        printf("skipped %s: %s\n", path, err.msg);
        return NULL;
    }
    const ox_graph *g = m->graph;
    if (g->n_inputs > 8) {
        ox_model_free(m);
        return NULL;
    }
    for (int i = 0; i < g->n_inputs; i++) {
        snprintf(path, sizeof path, "%s/test_data_set_0/input_%d.pb", dir, i);
        if (ox_testdata_load(path, g->inputs[i]->type, &in[i], NULL, &err)) {
            printf("skipped %s: %s\n", path, err.msg);
            for (int j = 0; j < i; j++)
                ox_rval_free(in[j]);
            ox_model_free(m);
            return NULL;
        }
    }
    return m;
}

/* Smallest cosine similarity over the float outputs (float16 widened). */
static double cosine_of(const ox_rval *a, const ox_rval *b)
{
    if (!a || !b || a->kind != OX_RV_TENSOR || b->kind != OX_RV_TENSOR ||
        a->t->numel != b->t->numel)
        return -2;
    double ab = 0, aa = 0, bb = 0;
    for (int64_t i = 0; i < a->t->numel; i++) {
        double x = ox_tensor_get_f64(a->t, i), y = ox_tensor_get_f64(b->t, i);
        ab += x * y;
        aa += x * x;
        bb += y * y;
    }
    if (aa == 0 && bb == 0)
        return 1;
    return ab / sqrt(aa * bb);
}

/* Every shared model after the to_fp16 pass: the emulated CUDA run equals
 * the CPU run of the same model within rtol 1e-2 / atol 1e-3, is within
 * optimize --check's cosine of the float32 model, keeps at least the
 * float32 model's GPU nodes (the boundary Casts join them) and no more
 * FLOPs on the CPU, and copies no more than the float32 plan does (one
 * download more at most). */
static void half_shared_models(const char *shared);
static void half_backend_nodes(const char *shared);

static void test_half_emulated_shared_models(void **state)
{
    (void)state;
    const char *shared = ox_test_shared();
    if (!shared)
        skip();
    use_emulation = true;
    half_shared_models(shared);
}

/* On a GPU (bench/gpu-check.sh): the half kernels themselves, on the
 * float16 graph, the float16 backend node cases and the to_fp16 models. */
static void test_half_gpu_shared_models(void **state)
{
    (void)state;
    char line[512];
    const char *shared = ox_test_shared();
    if (ox_cuda_probe(line, sizeof line) != OX_CUDA_AVAILABLE) {
        printf("skipped: no usable GPU: %s\n", line);
        skip();
    }
    if (!shared)
        skip();
    printf("GPU: %s\n", line);
    use_emulation = false;
    ox_rval *in[1] = {0};
    ox_model *m = half_graph(in);
    ox_exec_stats st;
    assert_true(compare_half(m, in, "GPU float16 graph", &st, NULL));
    assert_int_equal(st.nodes_on[OX_DEVICE_CUDA], 11);
    ox_rval_free(in[0]);
    ox_model_free(m);
    m = half_cnn_graph(in);
    assert_true(compare_half(m, in, "GPU float16 CNN graph", &st, NULL));
    assert_int_equal(st.nodes_on[OX_DEVICE_CUDA], 13);
    ox_rval_free(in[0]);
    ox_model_free(m);
    half_backend_nodes(shared);
    half_shared_models(shared);
    use_emulation = true;
}

/* m32 and m16 (the same model before and after to_fp16) on these inputs:
 * each on the (emulated) GPU against the CPU executor, m16's outputs
 * within optimize --check's cosine of m32's, at least m32's GPU nodes and
 * no more CPU FLOPs, no more copies (one download more at most). */
static void check_pair(const char *label, ox_model *m32, ox_model *m16, ox_rval *const *in)
{
    ox_exec_stats s32, s16;
    ox_rval *ref[8] = {0}, *got[8] = {0};
    char what[300];
    snprintf(what, sizeof what, "%s float32", label);
    assert_true(compare_half(m32, in, what, &s32, ref));
    snprintf(what, sizeof what, "%s to_fp16", label);
    assert_true(compare_half(m16, in, what, &s16, got));
    int half_nodes = 0;
    const ox_graph *g = m16->graph;
    for (int n = 0; n < g->n_nodes; n++) {
        const ox_node *nd = g->nodes[n];
        for (int i = 0; i < nd->n_outputs; i++)
            if (nd->outputs[i] && nd->outputs[i]->type &&
                nd->outputs[i]->type->elem == OX_DT_FLOAT16) {
                half_nodes++;
                break;
            }
    }
    double cmin = 1;
    for (int i = 0; i < g->n_outputs; i++) {
        double c = cosine_of(got[i], ref[i]);
        if (c < cmin)
            cmin = c;
        ox_rval_free(got[i]);
        ox_rval_free(ref[i]);
    }
    double f32 = s32.flops_on[0] + s32.flops_on[1], f16 = s16.flops_on[0] + s16.flops_on[1];
    printf("%s: float32 %d GPU / %d CPU nodes, %.2f%% of the FLOPs on the GPU, %lld up / %lld "
           "down; to_fp16 (%d float16 nodes) %d GPU / %d CPU nodes, %.2f%% of the FLOPs on the "
           "GPU, %lld up / %lld down; cosine to float32 %.6f\n",
           label, s32.nodes_on[1], s32.nodes_on[0], f32 > 0 ? 100.0 * s32.flops_on[1] / f32 : 0,
           (long long)s32.h2d_copies, (long long)s32.d2h_copies, half_nodes, s16.nodes_on[1],
           s16.nodes_on[0], f16 > 0 ? 100.0 * s16.flops_on[1] / f16 : 0,
           (long long)s16.h2d_copies, (long long)s16.d2h_copies, cmin);
    if (cmin < MIN_COSINE)
        fail_msg("%s: cosine %.6f to the float32 outputs (< %.3f)", label, cmin, MIN_COSINE);
    if (half_nodes == 0)
        fail_msg("%s: to_fp16 made no float16 node", label);
    /* The report's count of the model's own float16 nodes on the GPU
     * (not --precision fp16's): none in float32, and in float16 at least one
     * and no more than the model's float16 nodes or the GPU's nodes. */
    printf("%s: %d float16 node(s) of the model on the GPU\n", label, s16.float16_nodes);
    if (s32.float16_nodes != 0 || s16.float16_nodes < 1 || s16.float16_nodes > g->n_nodes ||
        s16.float16_nodes > s16.nodes_on[1])
        fail_msg("%s: float16 nodes on the GPU reported %d (float32 plan %d), model has %d, "
                 "%d GPU nodes", label, s16.float16_nodes, s32.float16_nodes, half_nodes,
                 s16.nodes_on[1]);
    /* Everything the float32 plan had on the GPU stays there. */
    if (s16.nodes_on[1] < s32.nodes_on[1])
        fail_msg("%s: %d nodes on the GPU in float16, %d in float32", label, s16.nodes_on[1],
                 s32.nodes_on[1]);
    if (s16.flops_on[0] > s32.flops_on[0])
        fail_msg("%s: more FLOPs on the CPU in float16 (%lld, float32 %lld)", label,
                 (long long)s16.flops_on[0], (long long)s32.flops_on[0]);
    if (s16.d2h_copies > s32.d2h_copies + 1 || s16.h2d_copies > s32.h2d_copies + 2)
        fail_msg("%s: float16 copies %lld up / %lld down, float32 %lld / %lld", label,
                 (long long)s16.h2d_copies, (long long)s16.d2h_copies,
                 (long long)s32.h2d_copies, (long long)s32.d2h_copies);
}

/* onnxscope optimize MODEL -o OUT ARGS with the inputs' shapes; NULL (and
 * why printed) when the binary is not there or fails. */
static ox_model *optimized(const char *model, const ox_graph *g, ox_rval *const *in,
                           const char *out, const char *args)
{
    const char *bin = ox_test_bin();
    if (!bin) {
        printf("skipped: no onnxscope binary (ONNXSCOPE_BIN)\n");
        return NULL;
    }
    char cmd[4096], *o = NULL;
    int len = snprintf(cmd, sizeof cmd, "'%s' optimize '%s' -o '%s' %s", bin, model, out, args);
    for (int i = 0; i < g->n_inputs && len < (int)sizeof cmd - 200; i++) {
        const ox_tensor *t = in[i]->t;
        len += snprintf(cmd + len, sizeof cmd - (size_t)len, " --shape '%s=", g->inputs[i]->name);
        for (int d = 0; d < t->rank; d++)
            len += snprintf(cmd + len, sizeof cmd - (size_t)len, "%s%lld", d ? "x" : "",
                            (long long)t->dims[d]);
        len += snprintf(cmd + len, sizeof cmd - (size_t)len, "'");
    }
    int rc = ox_test_run(cmd, &o);
    if (rc)
        fail_msg("%s: exit %d: %s", cmd, rc, o ? o : "");
    free(o);
    ox_model *m = NULL;
    ox_error err = {0};
    if (ox_load(out, NULL, &m, &err))
        fail_msg("%s: %s", out, err.msg);
    return m;
}

static void half_shared_models(const char *shared)
{
    int done = 0;
    for (size_t k = 0; k < sizeof models / sizeof models[0]; k++) {
        char dir[1024];
        snprintf(dir, sizeof dir, "%s/models/%s", shared, models[k]);
        ox_rval *in[8] = {0};
        ox_model *m = load_with_inputs(dir, in);
        if (!m)
            continue;
        ox_model *h = ox_model_clone(m);
        assert_non_null(h);
        ox_pass_manager *pm = ox_pm_new(OX_LEVEL_BASIC, OX_TARGET_ONNX);
        ox_error err = {0};
        assert_non_null(pm);
        if (ox_pm_only(pm, "to_fp16", &err) || ox_pm_run(pm, h, NULL, &err))
            fail_msg("%s: to_fp16: %s", models[k], err.msg);
        ox_pm_free(pm);
        check_pair(models[k], m, h, in);
        ox_model_free(h);
        for (int i = 0; i < m->graph->n_inputs; i++)
            ox_rval_free(in[i]);
        ox_model_free(m);
        done++;
    }
    if (!done)
        printf("skipped: none of the shared models is there\n");
}

/* The fused models of the precision work: optimize --level all --target
 * ort (Attention, SkipLayerNormalization, BiasGelu, FusedGemm ...), then the
 * same plus to_fp16, for the inputs' shapes (the CLI, as a user runs it). */
static void test_half_emulated_fused_models(void **state)
{
    (void)state;
    const char *shared = ox_test_shared();
    if (!shared)
        skip();
    if (!ox_test_bin()) {
        printf("skipped: no onnxscope binary (ONNXSCOPE_BIN) to optimize with\n");
        skip();
    }
    use_emulation = true;
    char tmpl[] = "/tmp/ox_cuda_half_XXXXXX";
    const char *tmp = mkdtemp(tmpl);
    assert_non_null(tmp);
    for (size_t k = 0; k < sizeof models / sizeof models[0]; k++) {
        char dir[1024], src[1100], o32[1100], o16[1100];
        snprintf(dir, sizeof dir, "%s/models/%s", shared, models[k]);
        ox_rval *in[8] = {0};
        ox_model *m = load_with_inputs(dir, in);
        if (!m)
            continue;
        snprintf(src, sizeof src, "%s/model.onnx", dir);
        snprintf(o32, sizeof o32, "%s/%s.fused.onnx", tmp, models[k]);
        snprintf(o16, sizeof o16, "%s/%s.fused_fp16.onnx", tmp, models[k]);
        ox_model *f32 = optimized(src, m->graph, in, o32, "--level all --target ort");
        ox_model *f16 = optimized(src, m->graph, in, o16, "--level all --target ort "
                                                          "--passes +to_fp16");
        char label[300];
        snprintf(label, sizeof label, "%s fused", models[k]);
        if (f32 && f16)
            check_pair(label, f32, f16, in);
        ox_model_free(f32);
        ox_model_free(f16);
        remove(o32);
        remove(o16);
        for (int i = 0; i < m->graph->n_inputs; i++)
            ox_rval_free(in[i]);
        ox_model_free(m);
    }
    rmdir(tmp);
}

/* The float16 node cases of the ONNX backend suite: every one the CPU
 * executor runs gives the same outputs on the emulated device; those with
 * a half kernel (Cast to/from float16, Max/Min, the expanded Celu/SwiGLU
 * chains) run at least one node on the GPU. */
static void test_half_backend_nodes(void **state)
{
    (void)state;
    const char *shared = ox_test_shared();
    if (!shared)
        skip();
    use_emulation = true;
    half_backend_nodes(shared);
}

/* Cases with a node the half kernels take (tools/gpu_bundle.sh carries
 * them to the GPU machine): where present, they must run one there. */
static bool must_use_gpu(const char *name)
{
    static const char *const l[] = {
        "test_cast_FLOAT16_to_FLOAT", "test_cast_FLOAT_to_FLOAT16", "test_cast_FLOAT16_to_DOUBLE",
        "test_cast_DOUBLE_to_FLOAT16", "test_max_float16", "test_min_float16",
        "test_celu_float16_expanded", "test_swiglu_float16_expanded",
        "test_range_float16_type_positive_delta_expanded",
    };
    for (size_t i = 0; i < sizeof l / sizeof l[0]; i++)
        if (!strcmp(name, l[i]))
            return true;
    return false;
}

static void half_backend_nodes(const char *shared)
{
    char root[1024];
    snprintf(root, sizeof root, "%s/onnx-backend/node", shared);
    DIR *d = opendir(root);
    if (!d) {
        printf("skipped: no %s\n", root);
        return;
    }
    struct dirent *e;
    char *names[512];
    int n = 0;
    while ((e = readdir(d)) && n < 512)
        if (strcasestr(e->d_name, "float16") && !strcasestr(e->d_name, "bfloat16"))
            names[n++] = strdup(e->d_name);
    closedir(d);
    int ran = 0, on_gpu = 0;
    for (int i = 0; i < n; i++) {
        char dir[1400];
        snprintf(dir, sizeof dir, "%s/%s", root, names[i]);
        ox_rval *in[8] = {0};
        ox_model *m = load_with_inputs(dir, in);
        if (m) {
            ox_exec_stats st;
            if (compare_half(m, in, names[i], &st, NULL)) {
                ran++;
                if (st.nodes_on[1] > 0)
                    on_gpu++;
                else if (must_use_gpu(names[i]))
                    fail_msg("%s: no node on the GPU", names[i]);
                printf("%s: %d GPU / %d CPU nodes\n", names[i], st.nodes_on[1], st.nodes_on[0]);
            }
            for (int j = 0; j < m->graph->n_inputs; j++)
                ox_rval_free(in[j]);
            ox_model_free(m);
        }
        free(names[i]);
    }
    printf("float16 backend node cases: %d run, %d with GPU nodes\n", ran, on_gpu);
    if (!ran)
        return;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_half_placement),
        cmocka_unit_test(test_half_cnn_placement),
        cmocka_unit_test(test_half_emulated_graph),
        cmocka_unit_test(test_half_emulated_shared_models),
        cmocka_unit_test(test_half_emulated_fused_models),
        cmocka_unit_test(test_half_backend_nodes),
        cmocka_unit_test(test_half_gpu_shared_models),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
