/* The CUDA backend (docs/EXECUTOR.md "CUDA backend").
 *
 * On every machine (no GPU needed): placement and CPU fallback planning
 * (src/exec/cuda/place.c) on hand-made graphs and on the shared models,
 * the device memory plan (no two live buffers overlap, every buffer in the
 * arena, the arena within the memplan's bounds), and the "no GPU" paths of
 * the library and the CLI (one line, exit 4).
 *
 * With a usable GPU: the CUDA executor against the CPU executor on the
 * shared models and on single-node cases of every kernel family (rtol 1e-3
 * in float32), each checked to have run on the GPU. Without one these
 * print why and skip. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "exec/cuda/graph.h"
#include "exec/cuda/place.h"
#include "onnxscope/dtype.h"
#include "onnxscope/device.h"
#include "onnxscope/exec.h"
#include "onnxscope/io.h"
#include "onnxscope/ir.h"
#include "onnxscope/testdata.h"
#include "testutil.h"

static uint64_t rng = 0x243f6a8885a308d3ull;

static uint32_t rnd(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng >> 33);
}

/* ---- a small graph builder ------------------------------------------------ */

typedef struct gb {
    ox_model *m;
    ox_graph *g;
    ox_rval *in[8];   /* one host value per graph input */
    int n_in;
} gb;

static gb gb_new(int opset)
{
    gb b = {0};
    b.m = ox_model_new();
    assert_non_null(b.m);
    ox_model_set_opset(b.m, "", opset);
    ox_model_set_opset(b.m, "com.microsoft", 1);
    b.g = b.m->graph ? b.m->graph : ox_graph_new(b.m, NULL);
    b.m->graph = b.g;
    return b;
}

static ox_tensor *rand_f(int rank, const int64_t *dims, float lo, float hi)
{
    ox_tensor *t = ox_tensor_new(OX_DT_FLOAT, rank, dims);
    assert_non_null(t);
    float *d = ox_tensor_data(t);
    for (int64_t i = 0; i < t->numel; i++)
        d[i] = lo + (hi - lo) * (float)(rnd() % 10001) / 10000.0f;
    return t;
}

/* t's float32 values rounded through float16 in place (host reference). */
static void round_tensor_half(ox_tensor *t)
{
    float *d = ox_tensor_mutable_data(t);
    for (int64_t i = 0; i < t->numel; i++)
        d[i] = ox_f16_to_f32(ox_f32_to_f16(d[i]));
}

static ox_value *gb_input_t(gb *b, const char *name, ox_tensor *t)
{
    ox_value *v = ox_graph_value(b->g, name);
    v->type = ox_type_new_tensor(t->dtype, t->rank, t->dims);
    assert_int_equal(ox_graph_add_input(b->g, v), OX_OK);
    b->in[b->n_in++] = ox_rval_tensor(t);
    return v;
}

static ox_value *gb_input(gb *b, const char *name, int rank, const int64_t *dims)
{
    return gb_input_t(b, name, rand_f(rank, dims, -1.f, 1.f));
}

static ox_value *gb_init_t(gb *b, const char *name, ox_tensor *t)
{
    ox_value *v = ox_graph_value(b->g, name);
    assert_int_equal(ox_graph_set_initializer(b->g, v, t), OX_OK);
    return v;
}

static ox_value *gb_init(gb *b, const char *name, int rank, const int64_t *dims)
{
    return gb_init_t(b, name, rand_f(rank, dims, -1.f, 1.f));
}

static ox_value *gb_i64(gb *b, const char *name, int n, const int64_t *vals)
{
    int64_t d = n;
    ox_tensor *t = ox_tensor_new(OX_DT_INT64, 1, &d);
    assert_non_null(t);
    memcpy(ox_tensor_data(t), vals, (size_t)n * sizeof *vals);
    return gb_init_t(b, name, t);
}

/* A node reading ins and writing outputs named outs (NULL-terminated). */
static ox_node *gb_node(gb *b, const char *op, const char *dom, int nin, ox_value **ins,
                        const char *o0, const char *o1)
{
    ox_value *outs[2] = {ox_graph_value(b->g, o0), o1 ? ox_graph_value(b->g, o1) : NULL};
    char name[64];
    snprintf(name, sizeof name, "n%d", b->g->n_nodes);
    ox_node *n = ox_node_new(b->g, op, dom, name, nin, ins, o1 ? 2 : 1, outs);
    assert_non_null(n);
    return n;
}

static void gb_output(gb *b, const char *name)
{
    assert_int_equal(ox_graph_add_output(b->g, ox_graph_find(b->g, name)), OX_OK);
}

static void gb_free(gb *b)
{
    for (int i = 0; i < b->n_in; i++)
        ox_rval_free(b->in[i]);
    ox_model_free(b->m);
}

static ox_cuda_plan *plan_of(gb *b, bool cublas, bool cudnn)
{
    ox_cuda_caps caps = {.cublas = cublas, .cudnn = cudnn};
    ox_cuda_plan *p = NULL;
    ox_error err = {0};
    const ox_graph *g = b->g;
    ox_status st = ox_cuda_plan_build(b->m, g->n_nodes, (const ox_node *const *)g->nodes,
                                      g->n_values, (const ox_value *const *)g->values, b->n_in,
                                      b->in, &caps, &p, &err);
    if (st)
        fail_msg("plan: %s", err.msg);
    assert_non_null(p);
    return p;
}

static int slot_of(const gb *b, const char *name)
{
    const ox_value *v = ox_graph_find(b->g, name);
    assert_non_null(v);
    for (int s = 0; s < b->g->n_values; s++)
        if (b->g->values[s] == v)
            return s;
    fail_msg("no slot for %s", name);
    return -1;
}

/* The device memory plan, checked independently of ox_cuda_plan_verify:
 * buffers aligned, inside the arena, and no two with overlapping lifetimes
 * sharing a byte; the arena at least the largest set of buffers live at
 * one step (the memplan's lower bound) and at most all of them. */
static void check_device_plan(const ox_cuda_plan *p)
{
    ox_error err = {0};
    assert_true(ox_cuda_plan_verify(p, &err));
    int64_t sum = 0, biggest = 0;
    for (int a = 0; a < p->n_slots; a++) {
        const ox_cuda_slot *x = &p->slot[a];
        if (x->off < 0)
            continue;
        assert_int_equal(x->off % 64, 0);
        assert_true(x->off + x->nbytes <= p->arena_bytes);
        assert_false(x->weight);
        assert_true(x->is_static);
        sum += (x->nbytes + 63) / 64 * 64;
        if (x->nbytes > biggest)
            biggest = x->nbytes;
        for (int c = a + 1; c < p->n_slots; c++) {
            const ox_cuda_slot *y = &p->slot[c];
            if (y->off < 0 || !x->nbytes || !y->nbytes)
                continue;
            bool live = x->first <= y->last && y->first <= x->last;
            bool share = x->off < y->off + y->nbytes && y->off < x->off + x->nbytes;
            if (live && share)
                fail_msg("slots %d and %d overlap while both live", a, c);
        }
    }
    assert_true(p->arena_bytes >= biggest);
    assert_true(p->arena_bytes >= p->lower_bound);
    /* (An epilogue output whose longer life fits nowhere goes to the end;
     * the fused intermediates it replaces lost their slots.) */
    assert_true(p->arena_bytes - p->ep_extra <= sum + p->ep_freed);
}

/* ---- placement --------------------------------------------------------------- */

/* MatMul, Add, Relu on the GPU; Round (no CUDA kernel) on the CPU with its
 * input copied down and its output copied up for Softmax; Shape on the
 * CPU; a Reshape to a constant shape on the GPU. */
static void test_place_mixed(void **state)
{
    (void)state;
    gb b = gb_new(17);
    int64_t xd[3] = {2, 4, 8}, wd[2] = {8, 8}, bd[1] = {8}, shp[2] = {2, 32};
    ox_value *x = gb_input(&b, "x", 3, xd);
    ox_value *w = gb_init(&b, "w", 2, wd), *bias = gb_init(&b, "bias", 1, bd);
    ox_value *in[3];
    in[0] = x, in[1] = w;
    gb_node(&b, "MatMul", "", 2, in, "a", NULL);
    in[0] = ox_graph_find(b.g, "a"), in[1] = bias;
    gb_node(&b, "Add", "", 2, in, "c", NULL);
    in[0] = ox_graph_find(b.g, "c");
    gb_node(&b, "Relu", "", 1, in, "d", NULL);
    in[0] = ox_graph_find(b.g, "d");
    gb_node(&b, "Round", "", 1, in, "e", NULL);   /* no CUDA kernel */
    in[0] = ox_graph_find(b.g, "e");
    gb_node(&b, "Softmax", "", 1, in, "f", NULL);
    in[0] = ox_graph_find(b.g, "f");
    gb_node(&b, "Shape", "", 1, in, "s", NULL);
    in[0] = ox_graph_find(b.g, "f"), in[1] = gb_i64(&b, "shp", 2, shp);
    gb_node(&b, "Reshape", "", 2, in, "y", NULL);
    gb_output(&b, "y");
    gb_output(&b, "s");

    /* (MatMul + Add + Relu is a GEMM epilogue: test_place_epilogues.) */
    setenv("ONNXSCOPE_CUDA_NO_EPILOGUE", "1", 1);
    ox_cuda_plan *p = plan_of(&b, true, true);
    unsetenv("ONNXSCOPE_CUDA_NO_EPILOGUE");
    static const ox_cuda_kind want[7] = {OX_CK_K_MATMUL,  OX_CK_K_BINARY, OX_CK_K_UNARY,
                                         OX_CK_NONE,      OX_CK_K_SOFTMAX, OX_CK_NONE,
                                         OX_CK_K_RESHAPE};
    for (int k = 0; k < 7; k++)
        if (p->kind[k] != want[k])
            fail_msg("node %d (%s): kind %d, expected %d (%s)", k, b.g->nodes[k]->op_type,
                     p->kind[k], want[k], p->why[k] ? p->why[k] : "");
    assert_non_null(p->why[3]);
    assert_int_equal(p->nodes_on[OX_DEVICE_CUDA], 5);
    assert_int_equal(p->nodes_on[OX_DEVICE_CPU], 2);
    /* The cost model's FLOPs: the MatMul (2*2*4*8*8) and more on the GPU. */
    assert_true(p->flops_on[OX_DEVICE_CUDA] >= 2 * 2 * 4 * 8 * 8);
    /* Host availability: what GPU nodes make must be copied for the CPU. */
    assert_false(p->slot[slot_of(&b, "d")].host);
    assert_true(p->slot[slot_of(&b, "e")].host);
    assert_false(p->slot[slot_of(&b, "f")].host);
    assert_true(p->slot[slot_of(&b, "x")].host);
    assert_true(p->slot[slot_of(&b, "w")].weight);
    assert_int_equal(p->slot[slot_of(&b, "w")].off, -1);
    assert_true(p->slot[slot_of(&b, "x")].off >= 0);   /* inputs are uploaded */
    check_device_plan(p);
    /* A CPU node (Round) between GPU nodes: no CUDA Graph. */
    assert_false(p->graph_ok);
    assert_non_null(strstr(p->graph_why, "a CPU node between GPU nodes reads a GPU value (node "));
    ox_cuda_plan_free(p);

    /* Without cuBLAS the MatMul falls back, and says why. */
    p = plan_of(&b, false, true);
    assert_int_equal(p->kind[0], OX_CK_NONE);
    assert_string_equal(p->why[0], "cuBLAS not loaded");
    assert_true(p->slot[slot_of(&b, "a")].host);
    assert_int_equal(p->kind[1], OX_CK_K_BINARY);
    ox_cuda_plan_free(p);
    gb_free(&b);
}

/* Parameters a kernel reads on the host (Slice's starts, Clip's bounds)
 * must not come from the GPU: then the node stays on the CPU. */
static void test_place_host_params(void **state)
{
    (void)state;
    gb b = gb_new(13);
    int64_t xd[2] = {4, 6}, one = 1, st[1] = {1}, en[1] = {5}, ax[1] = {1};
    ox_value *x = gb_input(&b, "x", 2, xd);
    ox_value *in[5];
    in[0] = x, in[1] = gb_i64(&b, "st", 1, st), in[2] = gb_i64(&b, "en", 1, en);
    in[3] = gb_i64(&b, "ax", 1, ax);
    gb_node(&b, "Slice", "", 4, in, "a", NULL);   /* constant starts: GPU */
    /* A float bound computed on the GPU (ReduceMax of x), then Clip by it. */
    in[0] = x;
    ox_node *r = gb_node(&b, "ReduceMax", "", 1, in, "hi", NULL);
    ox_node_set_attr_i(r, "keepdims", 0);
    in[0] = ox_graph_find(b.g, "a"), in[1] = gb_init_t(&b, "lo", rand_f(0, &one, -.5f, -.5f));
    in[2] = ox_graph_find(b.g, "hi");
    gb_node(&b, "Clip", "", 3, in, "y", NULL);
    gb_output(&b, "y");
    ox_cuda_plan *p = plan_of(&b, true, true);
    assert_int_equal(p->kind[0], OX_CK_K_SLICE);
    assert_int_equal(p->kind[1], OX_CK_K_REDUCE);
    assert_int_equal(p->kind[2], OX_CK_NONE);
    assert_string_equal(p->why[2], "bounds not on the host");
    check_device_plan(p);
    ox_cuda_plan_free(p);
    gb_free(&b);
}

/* A data-dependent shape (NonZero) ends static planning downstream: those
 * nodes stay on the CPU. Conv needs cuDNN. */
static void test_place_dynamic_and_cudnn(void **state)
{
    (void)state;
    gb b = gb_new(13);
    int64_t xd[4] = {1, 2, 5, 5}, wd[4] = {3, 2, 3, 3};
    ox_value *x = gb_input(&b, "x", 4, xd);
    ox_value *in[3] = {x, gb_init(&b, "w", 4, wd), NULL};
    gb_node(&b, "Conv", "", 2, in, "c", NULL);
    in[0] = ox_graph_find(b.g, "c");
    gb_node(&b, "NonZero", "", 1, in, "nz", NULL);
    in[0] = ox_graph_find(b.g, "nz");
    ox_node *cast = gb_node(&b, "Cast", "", 1, in, "nzf", NULL);
    ox_node_set_attr_i(cast, "to", OX_DT_FLOAT);
    in[0] = ox_graph_find(b.g, "nzf");
    gb_node(&b, "Relu", "", 1, in, "y", NULL);
    gb_output(&b, "y");
    ox_cuda_plan *p = plan_of(&b, true, true);
    if (p->kind[0] != OX_CK_K_CONV)
        fail_msg("Conv on the CPU: %s", p->why[0]);
    assert_int_equal(p->kind[1], OX_CK_NONE);
    assert_int_equal(p->kind[3], OX_CK_NONE);
    assert_non_null(p->why[3]);
    check_device_plan(p);
    ox_cuda_plan_free(p);
    p = plan_of(&b, true, false);
    assert_int_equal(p->kind[0], OX_CK_NONE);
    assert_string_equal(p->why[0], "cuDNN not loaded");
    ox_cuda_plan_free(p);
    gb_free(&b);
}

static const char *const models[] = {
    "bert_l2_h128_nofold_op13", "gpt2_like_l2_h128_nofold_op13", "mobilenet_v2_op13",
    "shape_chain_cnn_nofold_op13", "squeezenet1_1_op17", "torch_transformer_encoder_l4_h256_op17",
};

static ox_model *load_model(const char *shared, const char *name, ox_rval **in, int ds)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/models/%s/test_data_set_%d", shared, name, ds);
    FILE *probe = fopen(path, "r");   /* a bundle may carry fewer models or sets */
    if (!probe) {
        printf("skipped %s set %d: not in %s/models\n", name, ds, shared);
        return NULL;
    }
    fclose(probe);
    snprintf(path, sizeof path, "%s/models/%s/model.onnx", shared, name);
    ox_model *m = NULL;
    ox_error err = {0};
    if (ox_load(path, NULL, &m, &err)) {
        printf("skipped %s: %s\n", name, err.msg);
        return NULL;
    }
    const ox_graph *g = m->graph;
    assert_true(g->n_inputs <= 8);
    for (int i = 0; i < g->n_inputs; i++) {
        snprintf(path, sizeof path, "%s/models/%s/test_data_set_%d/input_%d.pb", shared, name,
                 ds, i);
        if (ox_testdata_load(path, g->inputs[i]->type, &in[i], NULL, &err))
            fail_msg("%s: %s", path, err.msg);
    }
    return m;
}

/* The shared models: a complete plan for their test inputs, the device
 * memory plan checked, the heavy ops on the GPU. */
static void test_place_shared_models(void **state)
{
    (void)state;
    const char *shared = ox_test_shared();
    if (!shared)
        skip();
    int done = 0;
    for (size_t k = 0; k < sizeof models / sizeof models[0]; k++) {
        ox_rval *in[8] = {0};
        ox_model *m = load_model(shared, models[k], in, 0);
        if (!m)
            continue;
        gb b = {.m = m, .g = m->graph, .n_in = m->graph->n_inputs};
        memcpy(b.in, in, sizeof in);
        ox_cuda_plan *p = plan_of(&b, true, true);
        check_device_plan(p);
        int heavy = 0;
        for (int n = 0; n < p->n_nodes; n++) {
            const char *op = b.g->nodes[n]->op_type;
            if (!strcmp(op, "Conv") || !strcmp(op, "MatMul") || !strcmp(op, "Gemm")) {
                heavy++;
                if (!p->kind[n])
                    fail_msg("%s: %s node %d on the CPU: %s", models[k], op, n, p->why[n]);
            }
            if (!strcmp(op, "Constant"))
                assert_int_equal(p->kind[n], OX_CK_NONE);
        }
        int64_t fl = p->flops_on[0] + p->flops_on[1];
        printf("%s: %d GPU / %d CPU nodes, %.2f%% of %lld FLOPs on the GPU, device arena %lld "
               "bytes (lower bound %lld)\n",
               models[k], p->nodes_on[1], p->nodes_on[0],
               fl ? 100.0 * (double)p->flops_on[1] / (double)fl : 0.0, (long long)fl,
               (long long)p->arena_bytes, (long long)p->lower_bound);
        assert_true(heavy > 0);
        assert_int_equal(p->nodes_on[0] + p->nodes_on[1], b.g->n_nodes);
        /* Contractions dominate: nearly all FLOPs on the GPU. */
        assert_true(fl > 0 && (double)p->flops_on[1] >= 0.9 * (double)fl);
        ox_cuda_plan_free(p);
        gb_free(&b);
        done++;
    }
    if (!done)
        skip();
}

/* ---- no GPU -------------------------------------------------------------------- */

static void test_no_gpu_exec(void **state)
{
    (void)state;
    gb b = gb_new(13);
    int64_t d[1] = {4};
    ox_value *in[1] = {gb_input(&b, "x", 1, d)};
    gb_node(&b, "Relu", "", 1, in, "y", NULL);
    gb_output(&b, "y");
    /* Forced: ONNXSCOPE_NO_CUDA hides any GPU. */
    setenv("ONNXSCOPE_NO_CUDA", "1", 1);
    char line[512];
    assert_int_equal(ox_cuda_probe(line, sizeof line), OX_CUDA_NO_DEVICE);
    assert_string_equal(line, "CUDA disabled by ONNXSCOPE_NO_CUDA");
    ox_exec_opts o = {.threads = 1, .device = OX_DEVICE_CUDA};
    ox_exec *e = NULL;
    ox_error err = {0};
    assert_int_equal(ox_exec_new(b.m, &o, &e, &err), OX_EUNSUPPORTED);
    assert_null(e);
    assert_string_equal(err.msg, line);
    unsetenv("ONNXSCOPE_NO_CUDA");
    /* As this machine is: when the probe finds nothing, the executor says
     * the same reason; the CPU executor is unaffected either way. */
    if (ox_cuda_probe(line, sizeof line) != OX_CUDA_AVAILABLE) {
        printf("probe: %s\n", line);
        ox_error_clear(&err);
        assert_int_equal(ox_exec_new(b.m, &o, &e, &err), OX_EUNSUPPORTED);
        assert_string_equal(err.msg, line);
    }
    o.device = OX_DEVICE_CPU;
    assert_int_equal(ox_exec_new(b.m, &o, &e, &err), OX_OK);
    ox_rval *out = NULL;
    assert_int_equal(ox_exec_run(e, 1, b.in, 1, &out, &err), OX_OK);
    ox_exec_stats s;
    ox_exec_get_stats(e, &s);
    assert_int_equal(s.nodes_on[OX_DEVICE_CPU], 1);
    assert_int_equal(s.nodes_on[OX_DEVICE_CUDA], 0);
    ox_rval_free(out);
    ox_exec_free(e);
    gb_free(&b);
}

/* Every executing command: one line naming the reason, exit 4. */
static void test_no_gpu_cli(void **state)
{
    (void)state;
    const char *bin = ox_test_bin();
    if (!bin) {
        printf("skipped: ONNXSCOPE_BIN is not set\n");
        skip();
    }
    char line[512], forced_line[512];
    setenv("ONNXSCOPE_NO_CUDA", "1", 1);
    ox_cuda_probe(forced_line, sizeof forced_line);
    unsetenv("ONNXSCOPE_NO_CUDA");
    bool have_gpu = ox_cuda_probe(line, sizeof line) == OX_CUDA_AVAILABLE;
    static const char *const cmds[] = {
        "run %s/samples/tiny_cnn.onnx --random --device cuda",
        "bench %s/samples/tiny_cnn.onnx --device cuda",
        "optimize %s/samples/tiny_cnn.onnx -o /tmp/never-written.onnx --check 1 --device cuda",
        "test-backend %s/samples --device cuda",
    };
    for (int forced = 0; forced < 2; forced++) {
        if (!forced && have_gpu)
            continue;
        for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
            char args[1024], cmd[2048], *out = NULL, want[600];
            snprintf(args, sizeof args, cmds[i], ox_test_source());
            snprintf(cmd, sizeof cmd, "%s'%s' %s", forced ? "ONNXSCOPE_NO_CUDA=1 " : "", bin,
                     args);
            int rc = ox_test_run(cmd, &out);
            snprintf(want, sizeof want, "onnxscope: --device cuda: %s\n",
                     forced ? forced_line : line);
            if (rc != OX_EXIT_NO_DEVICE || strcmp(out, want))
                fail_msg("%s: exit %d, output '%s' (expected exit 4 and '%s')", cmd, rc, out,
                         want);
            free(out);
        }
    }
    char cmd[1024], *out = NULL;
    snprintf(cmd, sizeof cmd, "'%s' run %s/samples/tiny_cnn.onnx --device tpu", bin,
             ox_test_source());
    assert_int_equal(ox_test_run(cmd, &out), 2);
    assert_string_equal(out, "onnxscope: --device tpu: unknown device (cpu or cuda)\n");
    free(out);
    snprintf(cmd, sizeof cmd, "'%s' bench %s/samples/tiny_cnn.onnx --precision fp8", bin,
             ox_test_source());
    out = NULL;
    assert_int_equal(ox_test_run(cmd, &out), 2);
    assert_string_equal(out, "onnxscope: --precision fp8: unknown precision (fp32 or fp16)\n");
    free(out);
}

/* ---- on a GPU -------------------------------------------------------------------- */

static bool gpu_or_skip(void)
{
    char line[512];
    if (ox_cuda_probe(line, sizeof line) != OX_CUDA_AVAILABLE) {
        printf("skipped: no usable GPU: %s\n", line);
        return false;
    }
    printf("GPU: %s\n", line);
    return true;
}

/* compare_devices' settings (fp16 runs get the fp16 tolerance) and the
 * GPU executor's stats after each of its runs. */
static bool cmp_fp16, cmp_no_graphs;
static double cmp_rtol = 1e-3, cmp_atol = 1e-4;
static ox_exec_stats cmp_stats[3];

/* Runs m on the CPU and on the GPU (three times: the second run reuses the
 * plan and the uploaded weights, and replays the CUDA Graph the first one
 * captured where the plan allows one; every run is compared) and compares
 * every output. */
static void compare_devices(ox_model *m, ox_rval *const *in, const char *what, int want_gpu)
{
    const ox_graph *g = m->graph;
    ox_exec_opts oc = {.threads = 2}, og = {.threads = 2, .device = OX_DEVICE_CUDA,
                                             .fp16 = cmp_fp16, .no_cuda_graphs = cmp_no_graphs};
    ox_exec *ec = NULL, *eg = NULL;
    ox_error err = {0};
    if (ox_exec_new(m, &oc, &ec, &err) || ox_exec_new(m, &og, &eg, &err))
        fail_msg("%s: %s", what, err.msg);
    ox_rval *rc[8] = {0}, *rg[8] = {0};
    assert_true(g->n_outputs <= 8);
    if (ox_exec_run(ec, g->n_inputs, in, g->n_outputs, rc, &err))
        fail_msg("%s (cpu): %s", what, err.msg);
    for (int r = 0; r < 3; r++) {
        for (int i = 0; i < g->n_outputs; i++) {
            ox_rval_free(rg[i]);
            rg[i] = NULL;
        }
        if (ox_exec_run(eg, g->n_inputs, in, g->n_outputs, rg, &err))
            fail_msg("%s (cuda): %s", what, err.msg);
        ox_exec_get_stats(eg, &cmp_stats[r]);
        for (int i = 0; r < 2 && i < g->n_outputs; i++) {
            char why[256];
            if (!ox_rval_allclose(rg[i], rc[i], cmp_rtol, cmp_atol, why, sizeof why))
                fail_msg("%s output %d (run %d): %s", what, i, r + 1, why);
        }
    }
    ox_exec_stats s;
    ox_exec_get_stats(eg, &s);
    static const char *const gw[3] = {"off", "captured", "replayed"};
    printf("%s: %d GPU / %d CPU nodes, %lld uploads, %lld downloads; %s%d fp16, %d epilogue, "
           "%d tiled attention nodes; CUDA Graph run 1 %s, run 2 %s%s%s\n",
           what, s.nodes_on[1], s.nodes_on[0], (long long)s.h2d_copies, (long long)s.d2h_copies,
           cmp_fp16 ? "fp16: " : "", s.fp16_nodes, s.epilogue_nodes, s.flash_nodes,
           gw[cmp_stats[0].cuda_graph % 3], gw[cmp_stats[1].cuda_graph % 3],
           cmp_stats[1].cuda_graph_note[0] ? ": " : "", cmp_stats[1].cuda_graph_note);
    if (want_gpu >= 0 && s.nodes_on[1] < want_gpu)
        fail_msg("%s: %d nodes on the GPU, expected %d", what, s.nodes_on[1], want_gpu);
    for (int i = 0; i < g->n_outputs; i++) {
        char why[256];
        if (!ox_rval_allclose(rg[i], rc[i], cmp_rtol, cmp_atol, why, sizeof why))
            fail_msg("%s output %d: %s", what, i, why);
        ox_rval_free(rc[i]);
        ox_rval_free(rg[i]);
    }
    ox_exec_free(ec);
    ox_exec_free(eg);
}

static void cmp_reset(void)
{
    cmp_fp16 = cmp_no_graphs = false;
    cmp_rtol = 1e-3;
    cmp_atol = 1e-4;
}

/* compare_devices on both test data sets of every shared model. */
static void compare_shared_models(const char *shared, const char *label)
{
    for (size_t k = 0; k < sizeof models / sizeof models[0]; k++)
        for (int ds = 0; ds < 2; ds++) {
            ox_rval *in[8] = {0};
            ox_model *m = load_model(shared, models[k], in, ds);
            if (!m)
                continue;
            char what[256];
            snprintf(what, sizeof what, "%s%s set %d", label, models[k], ds);
            compare_devices(m, in, what, 1);
            for (int i = 0; i < m->graph->n_inputs; i++)
                ox_rval_free(in[i]);
            ox_model_free(m);
        }
}

static void test_gpu_shared_models(void **state)
{
    (void)state;
    cmp_reset();
    const char *shared = ox_test_shared();
    if (!gpu_or_skip() || !shared)
        skip();
    compare_shared_models(shared, "");
}

/* fp16 on the GPU: the shared models and the GEMM-class node cases within
 * rtol 1e-2 (atol 1e-2: outputs of order one) of the float32 CPU run. */
static void gpu_fp16_cases(void);

static void test_gpu_fp16(void **state)
{
    (void)state;
    cmp_reset();
    const char *shared = ox_test_shared();
    if (!gpu_or_skip())
        skip();
    cmp_fp16 = true;
    cmp_rtol = 1e-2;
    cmp_atol = 1e-2;
    for (size_t k = 0; shared && k < sizeof models / sizeof models[0]; k++) {
        ox_rval *in[8] = {0};
        ox_model *m = load_model(shared, models[k], in, 0);
        if (!m)
            continue;
        char what[256];
        snprintf(what, sizeof what, "fp16 %s", models[k]);
        compare_devices(m, in, what, 1);
        for (int i = 0; i < m->graph->n_inputs; i++)
            ox_rval_free(in[i]);
        ox_model_free(m);
    }
    gpu_fp16_cases();
    cmp_reset();
}

/* One single-node model per kernel family and attribute variant. */
typedef struct ncase {
    const char *name;
    void (*build)(gb *b);
} ncase;

static ox_value *X(gb *b, int rank, int64_t d0, int64_t d1, int64_t d2, int64_t d3)
{
    int64_t d[4] = {d0, d1, d2, d3};
    return gb_input(b, "x", rank, d);
}

static void unary(gb *b, const char *op)
{
    ox_value *in[1] = {X(b, 3, 2, 3, 33, 0)};
    ox_node *n = gb_node(b, op, "", 1, in, "y", NULL);
    if (!strcmp(op, "LeakyRelu"))
        ox_node_set_attr_f(n, "alpha", 0.3f);
    if (!strcmp(op, "HardSigmoid"))
        ox_node_set_attr_f(n, "alpha", 0.4f);
    gb_output(b, "y");
}
static void b_relu(gb *b) { unary(b, "Relu"); }
static void b_sigmoid(gb *b) { unary(b, "Sigmoid"); }
static void b_tanh(gb *b) { unary(b, "Tanh"); }
static void b_erf(gb *b) { unary(b, "Erf"); }
static void b_leaky(gb *b) { unary(b, "LeakyRelu"); }
static void b_hsig(gb *b) { unary(b, "HardSigmoid"); }
static void b_hswish(gb *b) { unary(b, "HardSwish"); }
static void b_abs(gb *b) { unary(b, "Abs"); }

static void binary(gb *b, const char *op, int rb, int64_t b0, int64_t b1, int64_t b2)
{
    int64_t bd[3] = {b0, b1, b2};
    ox_value *in[2] = {X(b, 3, 2, 3, 4, 0), gb_init(b, "b", rb, bd)};
    gb_node(b, op, "", 2, in, "y", NULL);
    gb_output(b, "y");
}
static void b_add_bias(gb *b) { binary(b, "Add", 1, 4, 0, 0); }
static void b_mul_col(gb *b) { binary(b, "Mul", 2, 3, 1, 0); }
static void b_sub_same(gb *b) { binary(b, "Sub", 3, 2, 3, 4); }
static void b_div(gb *b) { binary(b, "Div", 3, 1, 3, 1); }
static void b_max(gb *b) { binary(b, "Max", 1, 1, 0, 0); }

static void b_pow2(gb *b)
{
    int64_t one = 1;
    ox_value *in[2] = {X(b, 2, 5, 7, 0, 0), gb_init_t(b, "p", rand_f(0, &one, 2.f, 2.f))};
    gb_node(b, "Pow", "", 2, in, "y", NULL);
    gb_output(b, "y");
}

static void b_where(gb *b)
{
    int64_t cd[2] = {1, 6};
    ox_tensor *c = ox_tensor_new(OX_DT_BOOL, 2, cd);
    for (int i = 0; i < 6; i++)
        ((uint8_t *)ox_tensor_data(c))[i] = (uint8_t)(i % 2);
    int64_t zd[1] = {6};
    ox_value *in[3] = {gb_init_t(b, "c", c), X(b, 2, 3, 6, 0, 0), gb_init(b, "z", 1, zd)};
    gb_node(b, "Where", "", 3, in, "y", NULL);
    gb_output(b, "y");
}

static void b_cast_i64(gb *b)
{
    int64_t d[2] = {3, 5};
    ox_tensor *t = ox_tensor_new(OX_DT_INT64, 2, d);
    for (int i = 0; i < 15; i++)
        ((int64_t *)ox_tensor_data(t))[i] = (int64_t)(rnd() % 2001) - 1000;
    ox_value *in[1] = {gb_input_t(b, "x", t)};
    ox_node_set_attr_i(gb_node(b, "Cast", "", 1, in, "y", NULL), "to", OX_DT_FLOAT);
    gb_output(b, "y");
}

static void b_cast_bool(gb *b)
{
    ox_value *in[1] = {X(b, 2, 4, 6, 0, 0)};
    ox_node_set_attr_i(gb_node(b, "Cast", "", 1, in, "y", NULL), "to", OX_DT_BOOL);
    gb_output(b, "y");
}

static void b_transpose(gb *b)
{
    ox_value *in[1] = {X(b, 4, 2, 3, 4, 5)};
    int64_t perm[4] = {0, 2, 3, 1};
    ox_node_set_attr_ints(gb_node(b, "Transpose", "", 1, in, "y", NULL), "perm", 4, perm);
    gb_output(b, "y");
}

static void b_concat(gb *b)
{
    int64_t d2[3] = {2, 5, 4};
    ox_value *in[2] = {X(b, 3, 2, 3, 4, 0), gb_init(b, "c", 3, d2)};
    ox_node_set_attr_i(gb_node(b, "Concat", "", 2, in, "y", NULL), "axis", 1);
    gb_output(b, "y");
}

static void b_slice(gb *b)
{
    int64_t st[2] = {-1, 1}, en[2] = {INT64_MIN, 4}, ax[2] = {2, 0}, sp[2] = {-2, 2};
    ox_value *in[5] = {X(b, 3, 6, 3, 9, 0), gb_i64(b, "st", 2, st), gb_i64(b, "en", 2, en),
                       gb_i64(b, "ax", 2, ax), gb_i64(b, "sp", 2, sp)};
    gb_node(b, "Slice", "", 5, in, "y", NULL);
    gb_output(b, "y");
}

static void b_split(gb *b)
{
    int64_t sp[2] = {2, 5};
    ox_value *in[2] = {X(b, 2, 3, 7, 0, 0), gb_i64(b, "sp", 2, sp)};
    ox_node_set_attr_i(gb_node(b, "Split", "", 2, in, "y", "z"), "axis", 1);
    gb_output(b, "y");
    gb_output(b, "z");
}

static void b_gather(gb *b)
{
    int64_t idx[3] = {2, -1, 0};
    ox_value *in[2] = {X(b, 3, 2, 5, 3, 0), gb_i64(b, "i", 3, idx)};
    ox_node_set_attr_i(gb_node(b, "Gather", "", 2, in, "y", NULL), "axis", 1);
    gb_output(b, "y");
}

static void b_expand(gb *b)
{
    int64_t shp[3] = {2, 3, 4};
    ox_value *in[2] = {X(b, 2, 3, 1, 0, 0), gb_i64(b, "s", 3, shp)};
    gb_node(b, "Expand", "", 2, in, "y", NULL);
    gb_output(b, "y");
}

static void b_reduce_mean(gb *b)
{
    int64_t ax[1] = {-1};
    ox_value *in[1] = {X(b, 3, 2, 3, 50, 0)};
    ox_node_set_attr_ints(gb_node(b, "ReduceMean", "", 1, in, "y", NULL), "axes", 1, ax);
    gb_output(b, "y");
}

static void b_reduce_sum_mid(gb *b)
{
    int64_t ax[2] = {0, 2};
    ox_value *in[1] = {X(b, 4, 3, 4, 5, 6)};
    ox_node *n = gb_node(b, "ReduceMax", "", 1, in, "y", NULL);
    ox_node_set_attr_ints(n, "axes", 2, ax);
    ox_node_set_attr_i(n, "keepdims", 0);
    gb_output(b, "y");
}

static void b_softmax_last(gb *b)
{
    ox_value *in[1] = {X(b, 3, 2, 4, 300, 0)};
    gb_node(b, "Softmax", "", 1, in, "y", NULL);
    gb_output(b, "y");
}

static void b_softmax_mid(gb *b)
{
    ox_value *in[1] = {X(b, 3, 2, 7, 5, 0)};
    ox_node_set_attr_i(gb_node(b, "Softmax", "", 1, in, "y", NULL), "axis", 1);
    gb_output(b, "y");
}

static void b_layernorm(gb *b)
{
    int64_t d[1] = {96};
    ox_value *in[3] = {X(b, 3, 2, 5, 96, 0), gb_init(b, "g", 1, d), gb_init(b, "bb", 1, d)};
    ox_node_set_attr_f(gb_node(b, "LayerNormalization", "", 3, in, "y", NULL), "epsilon",
                       1e-5f);
    gb_output(b, "y");
}

static void b_batchnorm(gb *b)
{
    int64_t d[1] = {3};
    ox_value *in[5] = {X(b, 4, 2, 3, 4, 5), gb_init(b, "s", 1, d), gb_init(b, "bb", 1, d),
                       gb_init(b, "m", 1, d), gb_init_t(b, "v", rand_f(1, d, 0.5f, 2.f))};
    gb_node(b, "BatchNormalization", "", 5, in, "y", NULL);
    gb_output(b, "y");
}

static void b_matmul_2d(gb *b)
{
    int64_t d[2] = {37, 19};
    ox_value *in[2] = {X(b, 2, 23, 37, 0, 0), gb_init(b, "w", 2, d)};
    gb_node(b, "MatMul", "", 2, in, "y", NULL);
    gb_output(b, "y");
}

static void b_matmul_batched(gb *b)
{
    int64_t d[3] = {3, 8, 5};
    ox_value *in[2] = {X(b, 3, 3, 6, 8, 0), gb_init(b, "w", 3, d)};
    gb_node(b, "MatMul", "", 2, in, "y", NULL);
    gb_output(b, "y");
}

static void b_matmul_bcast(gb *b)
{
    int64_t d[2] = {8, 5};
    ox_value *in[2] = {X(b, 4, 2, 3, 6, 8), gb_init(b, "w", 2, d)};
    gb_node(b, "MatMul", "", 2, in, "y", NULL);
    gb_output(b, "y");
}

static void gemm(gb *b, int ta, int tb, int cr)
{
    int64_t ad[2] = {ta ? 9 : 5, ta ? 5 : 9}, bd[2] = {tb ? 7 : 9, tb ? 9 : 7};
    int64_t cd[2] = {cr == 2 ? 5 : 7, cr == 2 ? 1 : 0};
    ox_value *in[3] = {gb_input(b, "x", 2, ad), gb_init(b, "w", 2, bd),
                       cr ? gb_init(b, "c", cr, cd) : NULL};
    ox_node *n = gb_node(b, "Gemm", "", cr ? 3 : 2, in, "y", NULL);
    ox_node_set_attr_i(n, "transA", ta);
    ox_node_set_attr_i(n, "transB", tb);
    ox_node_set_attr_f(n, "alpha", 0.75f);
    ox_node_set_attr_f(n, "beta", 1.5f);
    gb_output(b, "y");
}
static void b_gemm_nn(gb *b) { gemm(b, 0, 0, 1); }
static void b_gemm_tt(gb *b) { gemm(b, 1, 1, 2); }
static void b_gemm_nt_noc(gb *b) { gemm(b, 0, 1, 0); }

static void conv(gb *b, int group, int stride, int pad, int dil)
{
    int64_t wd[4] = {6, 4 / group, 3, 3}, bd[1] = {6};
    ox_value *in[3] = {X(b, 4, 2, 4, 11, 10), gb_init(b, "w", 4, wd), gb_init(b, "bb", 1, bd)};
    ox_node *n = gb_node(b, "Conv", "", 3, in, "y", NULL);
    int64_t st[2] = {stride, stride}, pd[4] = {pad, pad, pad, pad}, dl[2] = {dil, dil};
    ox_node_set_attr_i(n, "group", group);
    ox_node_set_attr_ints(n, "strides", 2, st);
    ox_node_set_attr_ints(n, "pads", 4, pd);
    ox_node_set_attr_ints(n, "dilations", 2, dl);
    gb_output(b, "y");
}
static void b_conv(gb *b) { conv(b, 1, 1, 1, 1); }
static void b_conv_grouped(gb *b) { conv(b, 2, 2, 0, 2); }

static void pool(gb *b, const char *op, int ceil, int count_pad)
{
    ox_value *in[1] = {X(b, 4, 1, 3, 9, 8)};
    ox_node *n = gb_node(b, op, "", 1, in, "y", NULL);
    int64_t k[2] = {3, 2}, st[2] = {2, 2}, pd[4] = {1, 0, 1, 1};
    ox_node_set_attr_ints(n, "kernel_shape", 2, k);
    ox_node_set_attr_ints(n, "strides", 2, st);
    ox_node_set_attr_ints(n, "pads", 4, pd);
    ox_node_set_attr_i(n, "ceil_mode", ceil);
    if (!strcmp(op, "AveragePool"))
        ox_node_set_attr_i(n, "count_include_pad", count_pad);
    gb_output(b, "y");
}
static void b_maxpool(gb *b) { pool(b, "MaxPool", 1, 0); }
static void b_avgpool(gb *b) { pool(b, "AveragePool", 0, 1); }

static void b_gap(gb *b)
{
    ox_value *in[1] = {X(b, 4, 2, 3, 7, 7)};
    gb_node(b, "GlobalAveragePool", "", 1, in, "y", NULL);
    gb_output(b, "y");
}

static void b_skipln(gb *b)
{
    int64_t d[1] = {64}, xd[3] = {2, 3, 64};
    ox_value *in[5] = {X(b, 3, 2, 3, 64, 0), gb_init(b, "s", 3, xd), gb_init(b, "g", 1, d),
                       gb_init(b, "bb", 1, d), gb_init(b, "bias", 1, d)};
    ox_node *n = gb_node(b, "SkipLayerNormalization", "com.microsoft", 5, in, "y", NULL);
    ox_node_set_attr_f(n, "epsilon", 1e-5f);
    gb_output(b, "y");
}

static void b_attention(gb *b)
{
    int64_t wd[2] = {32, 96}, bd[1] = {96}, md[2] = {2, 5};
    ox_tensor *mask = ox_tensor_new(OX_DT_INT32, 2, md);
    for (int i = 0; i < 10; i++)
        ((int32_t *)ox_tensor_data(mask))[i] = i % 5 != 4;   /* last key masked */
    ox_value *in[4] = {X(b, 3, 2, 5, 32, 0), gb_init(b, "w", 2, wd), gb_init(b, "bb", 1, bd),
                       gb_init_t(b, "mask", mask)};
    ox_node *n = gb_node(b, "Attention", "com.microsoft", 4, in, "y", NULL);
    ox_node_set_attr_i(n, "num_heads", 4);
    gb_output(b, "y");
}

/* GEMM epilogue chains (plan-time fusion; test_place_epilogues). */
static void b_ep_matmul_relu(gb *b)
{
    int64_t wd[2] = {24, 40}, bd[1] = {40};
    ox_value *in[2] = {X(b, 3, 2, 7, 24, 0), gb_init(b, "w", 2, wd)};
    gb_node(b, "MatMul", "", 2, in, "a", NULL);
    in[0] = gb_init(b, "bias", 1, bd), in[1] = ox_graph_find(b->g, "a");   /* Add(bias, a) */
    gb_node(b, "Add", "", 2, in, "c", NULL);
    in[0] = ox_graph_find(b->g, "c");
    gb_node(b, "Relu", "", 1, in, "y", NULL);
    gb_output(b, "y");
}

static void b_ep_gemm_gelu(gb *b)
{
    int64_t ad[2] = {6, 16}, wd[2] = {12, 16}, cd[1] = {12};
    ox_value *in[3] = {gb_input(b, "x", 2, ad), gb_init(b, "w", 2, wd), gb_init(b, "c", 1, cd)};
    ox_node *n = gb_node(b, "Gemm", "", 3, in, "a", NULL);
    ox_node_set_attr_i(n, "transB", 1);
    ox_node_set_attr_f(n, "alpha", 0.5f);
    in[0] = ox_graph_find(b->g, "a");
    gb_node(b, "Gelu", "com.microsoft", 1, in, "y", NULL);
    gb_output(b, "y");
}

static void b_ep_matmul_bias(gb *b)
{
    int64_t wd[2] = {16, 8}, bd[1] = {8};
    ox_value *in[2] = {X(b, 2, 5, 16, 0, 0), gb_init(b, "w", 2, wd)};
    gb_node(b, "MatMul", "", 2, in, "a", NULL);
    in[0] = ox_graph_find(b->g, "a"), in[1] = gb_init(b, "bias", 1, bd);
    gb_node(b, "Add", "", 2, in, "y", NULL);
    gb_output(b, "y");
}

/* Sequence 130 >= the tiled kernel's threshold (128). */
static void b_attention_long(gb *b)
{
    int64_t wd[2] = {32, 96}, bd[1] = {96}, md[2] = {2, 130};
    ox_tensor *mask = ox_tensor_new(OX_DT_INT32, 2, md);
    for (int i = 0; i < 260; i++)
        ((int32_t *)ox_tensor_data(mask))[i] = i % 130 < 120;   /* last keys masked */
    ox_value *in[4] = {X(b, 3, 2, 130, 32, 0), gb_init(b, "w", 2, wd), gb_init(b, "bb", 1, bd),
                       gb_init_t(b, "mask", mask)};
    ox_node *n = gb_node(b, "Attention", "com.microsoft", 4, in, "y", NULL);
    ox_node_set_attr_i(n, "num_heads", 4);
    gb_output(b, "y");
}

static const ncase node_cases[] = {
    {"Relu", b_relu}, {"Sigmoid", b_sigmoid}, {"Tanh", b_tanh}, {"Erf", b_erf},
    {"LeakyRelu", b_leaky}, {"HardSigmoid", b_hsig}, {"HardSwish", b_hswish}, {"Abs", b_abs},
    {"Add bias", b_add_bias}, {"Mul column", b_mul_col}, {"Sub same shape", b_sub_same},
    {"Div broadcast", b_div}, {"Max scalar-like", b_max}, {"Pow 2", b_pow2},
    {"Where", b_where}, {"Cast int64 to float", b_cast_i64}, {"Cast float to bool", b_cast_bool}, {"Transpose", b_transpose}, {"Concat", b_concat},
    {"Slice negative steps", b_slice}, {"Split", b_split}, {"Gather negative index", b_gather},
    {"Expand", b_expand}, {"ReduceMean last", b_reduce_mean},
    {"ReduceMax two axes", b_reduce_sum_mid}, {"Softmax last", b_softmax_last},
    {"Softmax axis 1", b_softmax_mid}, {"LayerNormalization", b_layernorm},
    {"BatchNormalization", b_batchnorm}, {"MatMul 2-D", b_matmul_2d},
    {"MatMul batched", b_matmul_batched}, {"MatMul broadcast B", b_matmul_bcast},
    {"Gemm NN + C row", b_gemm_nn}, {"Gemm TT + C column", b_gemm_tt},
    {"Gemm NT no C", b_gemm_nt_noc}, {"Conv", b_conv}, {"Conv grouped strided dilated",
    b_conv_grouped}, {"MaxPool ceil", b_maxpool}, {"AveragePool pads counted", b_avgpool},
    {"GlobalAveragePool", b_gap}, {"SkipLayerNormalization", b_skipln},
    {"Attention masked", b_attention},
    {"MatMul+Add+Relu epilogue", b_ep_matmul_relu}, {"Gemm+C+Gelu epilogue", b_ep_gemm_gelu},
    {"MatMul+Add epilogue", b_ep_matmul_bias}, {"Attention long (tiled)", b_attention_long},
};

static void gpu_fp16_cases(void)
{
    static const char *const names[] = {"MatMul 2-D", "MatMul batched", "Gemm NN + C row",
                                        "Gemm TT + C column", "Conv",
                                        "Conv grouped strided dilated",
                                        "Attention masked", "MatMul+Add+Relu epilogue",
                                        "Gemm+C+Gelu epilogue", "Attention long (tiled)"};
    for (size_t i = 0; i < sizeof node_cases / sizeof node_cases[0]; i++)
        for (size_t j = 0; j < sizeof names / sizeof names[0]; j++)
            if (!strcmp(node_cases[i].name, names[j])) {
                gb b = gb_new(17);
                node_cases[i].build(&b);
                char what[128];
                snprintf(what, sizeof what, "fp16 %s", node_cases[i].name);
                compare_devices(b.m, b.in, what, b.g->n_nodes);
                gb_free(&b);
            }
}

static void test_gpu_nodes(void **state)
{
    (void)state;
    cmp_reset();
    if (!gpu_or_skip())
        skip();
    for (size_t i = 0; i < sizeof node_cases / sizeof node_cases[0]; i++) {
        gb b = gb_new(17);
        node_cases[i].build(&b);
        compare_devices(b.m, b.in, node_cases[i].name, b.g->n_nodes);
        gb_free(&b);
    }
}

/* The same cases planned on this machine: each is placed on the GPU (what
 * the GPU test then checks numerically), so a placement regression shows
 * here even where no GPU is. */
static void test_place_node_cases(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof node_cases / sizeof node_cases[0]; i++) {
        gb b = gb_new(17);
        node_cases[i].build(&b);
        ox_cuda_plan *p = plan_of(&b, true, true);
        for (int k = 0; k < p->n_nodes; k++)
            if (!p->kind[k])
                fail_msg("%s: node %d on the CPU: %s", node_cases[i].name, k, p->why[k]);
        check_device_plan(p);
        ox_cuda_plan_free(p);
        gb_free(&b);
    }
}

/* ---- the emulated device (ONNXSCOPE_CUDA_EMULATE=1, every machine) ----------
 * Everything of a CUDA run but the CUDA kernels: placement, the device
 * arena laid out by the device memory plan (poisoned where no live value
 * is), uploads, downloads and residency. Results must equal the CPU run. */

static void test_emulated_nodes(void **state)
{
    (void)state;
    setenv("ONNXSCOPE_CUDA_EMULATE", "1", 1);
    for (size_t i = 0; i < sizeof node_cases / sizeof node_cases[0]; i++) {
        gb b = gb_new(17);
        node_cases[i].build(&b);
        compare_devices(b.m, b.in, node_cases[i].name, b.g->n_nodes);
        gb_free(&b);
    }
    unsetenv("ONNXSCOPE_CUDA_EMULATE");
}

static void test_emulated_mixed(void **state)
{
    (void)state;
    /* The placement test's graph: GPU -> CPU (Round) -> GPU -> CPU (Shape). */
    gb b = gb_new(17);
    int64_t xd[3] = {2, 4, 8}, wd[2] = {8, 8}, bd[1] = {8}, shp[2] = {2, 32};
    ox_value *in[3] = {gb_input(&b, "x", 3, xd), gb_init(&b, "w", 2, wd), NULL};
    gb_node(&b, "MatMul", "", 2, in, "a", NULL);
    in[0] = ox_graph_find(b.g, "a"), in[1] = gb_init(&b, "bias", 1, bd);
    gb_node(&b, "Add", "", 2, in, "c", NULL);
    in[0] = ox_graph_find(b.g, "c");
    gb_node(&b, "Round", "", 1, in, "e", NULL);   /* no CUDA kernel */
    in[0] = ox_graph_find(b.g, "e");
    gb_node(&b, "Softmax", "", 1, in, "f", NULL);
    in[0] = ox_graph_find(b.g, "f");
    gb_node(&b, "Shape", "", 1, in, "s", NULL);
    in[0] = ox_graph_find(b.g, "f"), in[1] = gb_i64(&b, "shp", 2, shp);
    gb_node(&b, "Reshape", "", 2, in, "y", NULL);
    gb_output(&b, "y");
    gb_output(&b, "s");
    gb_output(&b, "c");   /* a GPU value that is also read by the CPU */
    setenv("ONNXSCOPE_CUDA_EMULATE", "1", 1);
    ox_exec_opts o = {.threads = 1, .device = OX_DEVICE_CUDA};
    ox_exec *e = NULL;
    ox_error err = {0};
    if (ox_exec_new(b.m, &o, &e, &err))
        fail_msg("%s", err.msg);
    ox_rval *out[3] = {0};
    for (int r = 0; r < 2; r++) {
        for (int i = 0; i < 3; i++) {
            ox_rval_free(out[i]);
            out[i] = NULL;
        }
        if (ox_exec_run(e, 1, b.in, 3, out, &err))
            fail_msg("%s", err.msg);
    }
    ox_exec_stats s;
    ox_exec_get_stats(e, &s);
    assert_int_equal(s.nodes_on[OX_DEVICE_CUDA], 4);
    assert_int_equal(s.nodes_on[OX_DEVICE_CPU], 2);
    /* Up: x (weights were uploaded by the first run), e. Down: c (for
     * Round; the graph output then needs no second copy) and y; Shape gets
     * f's planned dims without a download. */
    assert_int_equal(s.h2d_copies, 2);
    assert_int_equal(s.d2h_copies, 2);
    assert_true(s.device_arena_bytes > 0);
    ox_exec_free(e);
    unsetenv("ONNXSCOPE_CUDA_EMULATE");
    ox_rval *ref[3] = {0};
    ox_exec_opts oc = {.threads = 1};
    if (ox_exec_new(b.m, &oc, &e, &err) || ox_exec_run(e, 1, b.in, 3, ref, &err))
        fail_msg("%s", err.msg);
    for (int i = 0; i < 3; i++) {
        char why[256];
        if (!ox_rval_allclose(out[i], ref[i], 1e-5, 1e-6, why, sizeof why))
            fail_msg("output %d: %s", i, why);
        ox_rval_free(out[i]);
        ox_rval_free(ref[i]);
    }
    ox_exec_free(e);
    gb_free(&b);
}

static void test_emulated_shared_models(void **state)
{
    (void)state;
    const char *shared = ox_test_shared();
    if (!shared)
        skip();
    setenv("ONNXSCOPE_CUDA_EMULATE", "1", 1);
    compare_shared_models(shared, "emulated ");
    unsetenv("ONNXSCOPE_CUDA_EMULATE");
}

/* ---- plan-time decisions (docs/EXECUTOR.md "fp16, epilogues, graphs") -------- */

/* Which nodes get a GEMM epilogue: each chain head's code, its bias and
 * output slots, the fused nodes; and the chains that must not fuse. */
static void test_place_epilogues(void **state)
{
    (void)state;
    struct {
        void (*build)(gb *b);
        int head, tail, ep;
        const char *bias, *out;
    } ok[] = {
        {b_ep_matmul_relu, 0, 2, OX_EP_RELU_BIAS, "bias", "y"},
        {b_ep_gemm_gelu, 0, 1, OX_EP_GELU_ERF_BIAS, "c", "y"},
        {b_ep_matmul_bias, 0, 1, OX_EP_BIAS, "bias", "y"},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        gb b = gb_new(17);
        ok[i].build(&b);
        ox_cuda_plan *p = plan_of(&b, true, true);
        assert_int_equal(p->ep[ok[i].head], ok[i].ep);
        assert_int_equal(p->ep_bias[ok[i].head], slot_of(&b, ok[i].bias));
        assert_int_equal(p->ep_out[ok[i].head], slot_of(&b, ok[i].out));
        assert_non_null(p->ep_bias_host[ok[i].head]);
        for (int k = ok[i].head + 1; k <= ok[i].tail; k++)
            assert_int_equal(p->kind[k], OX_CK_K_FUSED);
        assert_int_equal(p->n_epilogue, 1);
        /* The fused intermediates get no device bytes; the output lives
         * from the head's step, overlapping nothing live then. */
        for (int k = ok[i].head; k < ok[i].tail; k++) {
            const ox_value *v = b.g->nodes[k]->outputs[0];
            assert_int_equal(p->slot[slot_of(&b, v->name)].off, -1);
        }
        assert_int_equal(p->slot[slot_of(&b, ok[i].out)].first, ok[i].head);
        check_device_plan(p);
        ox_cuda_plan_free(p);
        /* Turned off: no epilogue, the nodes run as they are. */
        setenv("ONNXSCOPE_CUDA_NO_EPILOGUE", "1", 1);
        p = plan_of(&b, true, true);
        unsetenv("ONNXSCOPE_CUDA_NO_EPILOGUE");
        assert_int_equal(p->n_epilogue, 0);
        for (int k = 0; k < p->n_nodes; k++)
            assert_true(p->kind[k] != OX_CK_NONE && p->kind[k] != OX_CK_K_FUSED);
        ox_cuda_plan_free(p);
        gb_free(&b);
    }

    /* Not fused: the product read twice; an activation (not a weight) as
     * "bias"; a Gemm with beta != 1; the Add's output a graph output (the
     * Relu then stays a node of its own). */
    int64_t xd[2] = {4, 8}, wd[2] = {8, 6}, bd[1] = {6};
    gb b = gb_new(17);
    ox_value *in[3] = {gb_input(&b, "x", 2, xd), gb_init(&b, "w", 2, wd), NULL};
    gb_node(&b, "MatMul", "", 2, in, "a", NULL);
    in[0] = ox_graph_find(b.g, "a"), in[1] = gb_init(&b, "bias", 1, bd);
    gb_node(&b, "Add", "", 2, in, "c", NULL);
    in[0] = ox_graph_find(b.g, "c");
    gb_node(&b, "Relu", "", 1, in, "d", NULL);
    gb_output(&b, "d");
    gb_output(&b, "a");   /* the product has a second reader */
    ox_cuda_plan *p = plan_of(&b, true, true);
    assert_int_equal(p->n_epilogue, 0);
    ox_cuda_plan_free(p);
    gb_free(&b);

    b = gb_new(17);
    int64_t rd[2] = {4, 6};
    in[0] = gb_input(&b, "x", 2, xd), in[1] = gb_init(&b, "w", 2, wd);
    gb_node(&b, "MatMul", "", 2, in, "a", NULL);
    in[0] = ox_graph_find(b.g, "a"), in[1] = gb_input(&b, "r", 2, rd);   /* not a weight */
    gb_node(&b, "Add", "", 2, in, "y", NULL);
    gb_output(&b, "y");
    p = plan_of(&b, true, true);
    assert_int_equal(p->n_epilogue, 0);
    ox_cuda_plan_free(p);
    gb_free(&b);

    b = gb_new(17);
    int64_t ad[2] = {6, 16}, gw[2] = {16, 12}, cd[1] = {12};
    in[0] = gb_input(&b, "x", 2, ad), in[1] = gb_init(&b, "w", 2, gw);
    in[2] = gb_init(&b, "c", 1, cd);
    ox_node *n = gb_node(&b, "Gemm", "", 3, in, "a", NULL);
    ox_node_set_attr_f(n, "beta", 0.5f);
    gb_output(&b, "a");
    p = plan_of(&b, true, true);
    assert_int_equal(p->n_epilogue, 0);
    ox_cuda_plan_free(p);
    gb_free(&b);

    b = gb_new(17);
    in[0] = gb_input(&b, "x", 2, xd), in[1] = gb_init(&b, "w", 2, wd);
    gb_node(&b, "MatMul", "", 2, in, "a", NULL);
    in[0] = ox_graph_find(b.g, "a"), in[1] = gb_init(&b, "bias", 1, bd);
    gb_node(&b, "Add", "", 2, in, "c", NULL);
    in[0] = ox_graph_find(b.g, "c");
    gb_node(&b, "Relu", "", 1, in, "d", NULL);
    gb_output(&b, "d");
    gb_output(&b, "c");
    p = plan_of(&b, true, true);
    assert_int_equal(p->ep[0], OX_EP_BIAS);
    assert_int_equal(p->kind[1], OX_CK_K_FUSED);
    assert_int_equal(p->kind[2], OX_CK_K_UNARY);
    assert_int_equal(p->ep_out[0], slot_of(&b, "c"));
    check_device_plan(p);
    ox_cuda_plan_free(p);
    gb_free(&b);
}

/* When a CUDA Graph may be captured: every GPU node in one unbroken run,
 * the mode asked for, ONNXSCOPE_CUDA_GRAPHS not 0. */
static void test_place_graphs(void **state)
{
    (void)state;
    gb b = gb_new(17);
    b_ep_matmul_relu(&b);
    ox_value *in[1] = {ox_graph_find(b.g, "y")};
    gb_node(&b, "Softmax", "", 1, in, "z", NULL);
    gb_output(&b, "z");
    ox_cuda_caps caps = {.cublas = true, .cudnn = true, .graphs = true};
    ox_cuda_plan *p = NULL;
    ox_error err = {0};
    const ox_graph *g = b.g;
#define PLAN()                                                                                   \
    do {                                                                                         \
        ox_cuda_plan_free(p);                                                                    \
        p = NULL;                                                                                \
        assert_int_equal(ox_cuda_plan_build(b.m, g->n_nodes, (const ox_node *const *)g->nodes,   \
                                            g->n_values, (const ox_value *const *)g->values,     \
                                            b.n_in, b.in, &caps, &p, &err),                      \
                         OX_OK);                                                                 \
    } while (0)
    PLAN();
    assert_true(p->graph_ok);
    assert_null(p->graph_why);
    uint64_t id = p->id;
    PLAN();
    assert_true(p->id != id);   /* every plan its own graph key */
    caps.graphs = false;
    PLAN();
    assert_false(p->graph_ok);
    assert_non_null(strstr(p->graph_why, "turned off"));
    caps.graphs = true;
    setenv("ONNXSCOPE_CUDA_GRAPHS", "0", 1);
    PLAN();
    unsetenv("ONNXSCOPE_CUDA_GRAPHS");
    assert_false(p->graph_ok);
    /* Without cuBLAS the head is a CPU node before GPU ones: still one run. */
    caps.cublas = false;
    PLAN();
    assert_int_equal(p->kind[0], OX_CK_NONE);
    assert_true(p->graph_ok);
#undef PLAN
    ox_cuda_plan_free(p);
    gb_free(&b);
}

/* The graph bookkeeping (graph.c) driven directly: record, capture,
 * replay with the launch at the flush, a run whose parameters differ
 * (catch-up), a flush before the last node, a new plan. */
static void test_graph_tape(void **state)
{
    (void)state;
    gb b = gb_new(13);
    int64_t xd[2] = {4, 6}, st[1] = {1}, en[1] = {5}, ax[1] = {1};
    ox_value *in[4] = {gb_input(&b, "x", 2, xd), gb_i64(&b, "st", 1, st), gb_i64(&b, "en", 1, en),
                       gb_i64(&b, "ax", 1, ax)};
    gb_node(&b, "Slice", "", 4, in, "a", NULL);
    in[0] = ox_graph_find(b.g, "a");
    gb_node(&b, "Relu", "", 1, in, "y", NULL);
    gb_output(&b, "y");
    ox_cuda_plan *p = plan_of(&b, true, true);
    p->graph_ok = true;
    p->graph_why = NULL;
    ox_cuda_graphs g = {.allowed = true};
    int sl0[4] = {slot_of(&b, "x"), slot_of(&b, "st"), slot_of(&b, "en"), slot_of(&b, "ax")};
    int so0[1] = {slot_of(&b, "a")}, sl1[1] = {slot_of(&b, "a")}, so1[1] = {slot_of(&b, "y")};
    int64_t other = 2;
    ox_tensor *t_st = ox_tensor_new(OX_DT_INT64, 1, (int64_t[]){1});
    ox_tensor *t_st2 = ox_tensor_new(OX_DT_INT64, 1, (int64_t[]){1});
    *(int64_t *)ox_tensor_data(t_st) = 1;
    *(int64_t *)ox_tensor_data(t_st2) = other;
    ox_rval *h_st = ox_rval_tensor(t_st), *h_st2 = ox_rval_tensor(t_st2);
    ox_rval *h0[4] = {b.in[0], h_st, h_st, h_st}, *h0b[4] = {b.in[0], h_st2, h_st, h_st};
    ox_rval *h1[1] = {NULL};
    bool reset;
    int n = 0;
    ox_exec_stats s = {0};
    /* Run 1 records. */
    ox_cuda_graphs_begin(&g, p, &reset);
    assert_false(reset);
    assert_int_equal(g.mode, OX_CG_RECORD);
    assert_int_equal(ox_cuda_graphs_node(&g, p, 0, sl0, so0, h0, &n), OX_CG_RUN);
    assert_int_equal(ox_cuda_graphs_node(&g, p, 1, sl1, so1, h1, &n), OX_CG_RUN);
    assert_int_equal(g.n_tape, 2);
    assert_non_null(g.tape[0].param[1]);   /* Slice's starts, copied */
    assert_null(g.tape[0].param[0]);        /* the data: on the device */
    assert_false(ox_cuda_graphs_flush(&g, &n));
    assert_int_equal(n, 0);
    ox_cuda_graphs_captured(&g, true, NULL);
    ox_cuda_graphs_stats(&g, &s);
    assert_int_equal(s.cuda_graph, OX_CUDA_GRAPH_CAPTURED);
    /* Run 2 replays: nodes skipped, the launch at the flush. */
    ox_cuda_graphs_begin(&g, p, &reset);
    assert_int_equal(g.mode, OX_CG_REPLAY);
    assert_int_equal(ox_cuda_graphs_node(&g, p, 0, sl0, so0, h0, &n), OX_CG_SKIP);
    assert_int_equal(ox_cuda_graphs_node(&g, p, 1, sl1, so1, h1, &n), OX_CG_SKIP);
    assert_true(ox_cuda_graphs_flush(&g, &n));
    assert_false(ox_cuda_graphs_flush(&g, &n));   /* once per run */
    ox_cuda_graphs_stats(&g, &s);
    assert_int_equal(s.cuda_graph, OX_CUDA_GRAPH_REPLAYED);
    assert_string_equal(s.cuda_graph_note, "");
    /* Run 3: other starts at node 0: catch up on nothing, eager. */
    ox_cuda_graphs_begin(&g, p, &reset);
    assert_int_equal(ox_cuda_graphs_node(&g, p, 0, sl0, so0, h0b, &n), OX_CG_CATCHUP);
    assert_int_equal(n, 0);
    assert_int_equal(ox_cuda_graphs_node(&g, p, 1, sl1, so1, h1, &n), OX_CG_RUN);
    assert_false(ox_cuda_graphs_flush(&g, &n));
    ox_cuda_graphs_stats(&g, &s);
    assert_int_equal(s.cuda_graph, OX_CUDA_GRAPH_OFF);
    assert_non_null(strstr(s.cuda_graph_note, "differs"));
    /* Run 4: a flush after node 0 only: node 0 is re-issued, eager on. */
    ox_cuda_graphs_begin(&g, p, &reset);
    assert_int_equal(ox_cuda_graphs_node(&g, p, 0, sl0, so0, h0, &n), OX_CG_SKIP);
    assert_false(ox_cuda_graphs_flush(&g, &n));
    assert_int_equal(n, 1);
    assert_int_equal(ox_cuda_graphs_node(&g, p, 1, sl1, so1, h1, &n), OX_CG_RUN);
    /* A failed capture: eager from then on, saying why. */
    ox_cuda_plan *p2 = plan_of(&b, true, true);
    p2->graph_ok = true;
    ox_cuda_graphs_begin(&g, p2, &reset);
    assert_true(reset);   /* the old plan's graph goes */
    assert_int_equal(g.mode, OX_CG_RECORD);
    ox_cuda_graphs_captured(&g, false, "operation not permitted when stream is capturing");
    ox_cuda_graphs_begin(&g, p2, &reset);
    assert_int_equal(g.mode, OX_CG_EAGER);
    ox_cuda_graphs_stats(&g, &s);
    assert_non_null(strstr(s.cuda_graph_note, "capture failed: operation not permitted"));
    ox_cuda_graphs_free(&g);
    ox_rval_free(h_st);
    ox_rval_free(h_st2);
    ox_cuda_plan_free(p);
    ox_cuda_plan_free(p2);
    gb_free(&b);
}

/* The fp16 upload conversion against the compiler's _Float16 (IEEE
 * binary16, round to nearest even), on hand-picked bit patterns and on
 * random values over the whole float16 range and beyond. */
static void test_fp16_conversion(void **state)
{
    (void)state;
    static const struct {
        float f;
        uint16_t h;
    } fixed[] = {
        {0.f, 0x0000},      {-0.f, 0x8000},     {1.f, 0x3c00},        {-2.f, 0xc000},
        {65504.f, 0x7bff},  {65520.f, 0x7c00},  {1e6f, 0x7c00},       {0.1f, 0x2e66},
        {5.960464477539063e-8f, 0x0001},         {2.98023223876953125e-8f, 0x0000}, /* tie: even */
        {1.0009765625f, 0x3c01},                 {1.00048828125f, 0x3c00}, /* tie: even */
        {1.00146484375f, 0x3c02}, /* tie: odd rounds up */ {6.103515625e-05f, 0x0400},
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        uint16_t h;
        ox_cuda_to_half(&fixed[i].f, &h, 1);
        if (h != fixed[i].h)
            fail_msg("%.10g -> 0x%04x, expected 0x%04x", (double)fixed[i].f, h, fixed[i].h);
    }
    float inf = INFINITY, nan = NAN;
    uint16_t h;
    ox_cuda_to_half(&inf, &h, 1);
    assert_int_equal(h, 0x7c00);
    ox_cuda_to_half(&nan, &h, 1);
    assert_true((h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0);
#if defined(__FLT16_MAX__)
    enum { N = 200000 };
    float *x = malloc(N * sizeof *x);
    uint16_t *y = malloc(N * sizeof *y);
    assert_non_null(x);
    assert_non_null(y);
    for (int i = 0; i < N; i++) {
        /* log-uniform magnitudes 2^-26 .. 2^17, both signs */
        double e = -26.0 + 43.0 * (double)(rnd() % 1000003) / 1000003.0;
        x[i] = (float)(ldexp(1.0 + (double)(rnd() % 8388608) / 8388608.0, (int)floor(e)) *
                       ((rnd() & 1) ? -1 : 1));
    }
    ox_cuda_to_half(x, y, N);
    for (int i = 0; i < N; i++) {
        _Float16 r = (_Float16)x[i];
        uint16_t want;
        memcpy(&want, &r, 2);
        if (y[i] != want)
            fail_msg("%.10g -> 0x%04x, _Float16 gives 0x%04x", (double)x[i], y[i], want);
    }
    free(x);
    free(y);
#else
    printf("skipped the _Float16 comparison: this compiler has no _Float16\n");
#endif
}

/* fp16 plans: which nodes take float16 operands, which weights are
 * uploaded converted. */
static void test_place_fp16(void **state)
{
    (void)state;
    gb b = gb_new(17);
    int64_t xd[2] = {8, 8}, wd[2] = {8, 8}, cd[4] = {1, 2, 6, 6}, kd[4] = {3, 2, 3, 3};
    ox_value *w = gb_init(&b, "w", 2, wd);
    ox_value *in[3] = {gb_input(&b, "x", 2, xd), w, NULL};
    gb_node(&b, "MatMul", "", 2, in, "a", NULL);
    in[0] = ox_graph_find(b.g, "a"), in[1] = w;   /* w read again as an Add operand */
    gb_node(&b, "Add", "", 2, in, "c", NULL);
    in[0] = ox_graph_find(b.g, "c"), in[1] = gb_init(&b, "w2", 2, wd);
    gb_node(&b, "MatMul", "", 2, in, "y", NULL);
    in[0] = gb_input(&b, "img", 4, cd), in[1] = gb_init(&b, "k", 4, kd);
    gb_node(&b, "Conv", "", 2, in, "z", NULL);
    gb_output(&b, "y");
    gb_output(&b, "z");
    ox_cuda_caps caps = {.cublas = true, .cudnn = true, .fp16 = true};
    ox_cuda_plan *p = NULL;
    ox_error err = {0};
    const ox_graph *g = b.g;
    assert_int_equal(ox_cuda_plan_build(b.m, g->n_nodes, (const ox_node *const *)g->nodes,
                                        g->n_values, (const ox_value *const *)g->values, b.n_in,
                                        b.in, &caps, &p, &err),
                     OX_OK);
    assert_int_equal(p->half[0], 1);
    assert_int_equal(p->half[1], 0);   /* Add: float32 */
    assert_int_equal(p->half[2], 1);
    assert_int_equal(p->half[3], 1);   /* Conv */
    assert_int_equal(p->n_half, 3);
    assert_false(p->slot[slot_of(&b, "w")].half);   /* also an Add operand */
    assert_true(p->slot[slot_of(&b, "w2")].half);
    assert_true(p->slot[slot_of(&b, "k")].half);
    assert_false(p->slot[slot_of(&b, "x")].half);   /* activations: per run */
    ox_cuda_plan_free(p);
    p = plan_of(&b, true, true);   /* fp32 */
    assert_int_equal(p->n_half, 0);
    assert_false(p->slot[slot_of(&b, "w2")].half);
    ox_cuda_plan_free(p);
    gb_free(&b);
}

static void test_place_flash(void **state)
{
    (void)state;
    assert_true(ox_cuda_use_flash(128, 64));
    assert_false(ox_cuda_use_flash(127, 64));
    assert_true(ox_cuda_use_flash(4096, 128));
    assert_false(ox_cuda_use_flash(4096, 160));   /* more than a block's lanes hold */
    assert_false(ox_cuda_use_flash(4096, 30));    /* not a multiple of 4 */
    setenv("ONNXSCOPE_CUDA_FLASH_MIN", "0", 1);
    assert_true(ox_cuda_use_flash(5, 8));
    unsetenv("ONNXSCOPE_CUDA_FLASH_MIN");
    gb b = gb_new(17);
    b_attention(&b);   /* sequence 5: the simple kernel */
    ox_cuda_plan *p = plan_of(&b, true, true);
    assert_int_equal(p->n_flash, 0);
    ox_cuda_plan_free(p);
    gb_free(&b);
    b = gb_new(17);
    b_attention_long(&b);
    p = plan_of(&b, true, true);
    assert_int_equal(p->flash[0], 1);
    assert_int_equal(p->n_flash, 1);
    ox_cuda_plan_free(p);
    gb_free(&b);
}

/* ---- the emulated device: fp16, epilogues and graphs end to end ------------ */

/* fp16 on the emulated device: within the fp16 tolerance of the float32
 * CPU run, and equal (float32 tolerance) to the CPU run of the same model
 * whose input and weights were rounded to float16 first: the operands are
 * rounded, nothing else. */
static void test_emulated_fp16(void **state)
{
    (void)state;
    setenv("ONNXSCOPE_CUDA_EMULATE", "1", 1);
    static const ncase cases[] = {
        {"MatMul 2-D", b_matmul_2d}, {"Gemm NN + C row", b_gemm_nn}, {"Conv", b_conv},
        {"MatMul+Add+Relu epilogue", b_ep_matmul_relu}, {"Attention masked", b_attention},
    };
    /* rtol 1e-2 (the fp16 tolerance), atol 1e-2: outputs of order one
     * near zero carry the absolute error of a float16 dot product. */
    cmp_fp16 = true;
    cmp_rtol = 1e-2;
    cmp_atol = 1e-2;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gb b = gb_new(17);
        cases[i].build(&b);
        compare_devices(b.m, b.in, cases[i].name, b.g->n_nodes);
        assert_true(cmp_stats[2].fp16_nodes >= 1);
        /* The rounded-operand reference. */
        ox_rval *out[2] = {0}, *ref[2] = {0};
        ox_exec_opts og = {.threads = 1, .device = OX_DEVICE_CUDA, .fp16 = true};
        ox_exec_opts oc = {.threads = 1};
        ox_exec *e = NULL;
        ox_error err = {0};
        if (ox_exec_new(b.m, &og, &e, &err) || ox_exec_run(e, b.n_in, b.in, 1, out, &err))
            fail_msg("%s: %s", cases[i].name, err.msg);
        ox_exec_free(e);
        ox_tensor *x = b.in[0]->t;
        round_tensor_half(x);
        const ox_graph *g = b.g;
        ox_value *w = g->nodes[0]->n_inputs > 1 ? g->nodes[0]->inputs[1] : NULL;
        if (w && w->init)
            round_tensor_half(w->init);
        if (ox_exec_new(b.m, &oc, &e, &err) || ox_exec_run(e, b.n_in, b.in, 1, ref, &err))
            fail_msg("%s: %s", cases[i].name, err.msg);
        char why[256];
        if (!ox_rval_allclose(out[0], ref[0], 1e-4, 1e-5, why, sizeof why))
            fail_msg("%s: fp16 run differs from the rounded-operand reference: %s",
                     cases[i].name, why);
        ox_rval_free(out[0]);
        ox_rval_free(ref[0]);
        ox_exec_free(e);
        gb_free(&b);
    }
    cmp_fp16 = false;
    cmp_rtol = 1e-3;
    cmp_atol = 1e-4;
    unsetenv("ONNXSCOPE_CUDA_EMULATE");
}

/* CUDA Graphs on the emulated device: the first run records and captures,
 * later runs replay (every run compared with the CPU inside
 * compare_devices), new input values with the same shapes replay too, and
 * the mixed graph or no_cuda_graphs run eagerly and say why. */
static void test_emulated_graphs(void **state)
{
    (void)state;
    setenv("ONNXSCOPE_CUDA_EMULATE", "1", 1);
    gb b = gb_new(17);
    b_ep_matmul_relu(&b);
    ox_value *in[2] = {ox_graph_find(b.g, "y"), NULL};
    gb_node(&b, "Softmax", "", 1, in, "z", NULL);
    int64_t shp[2] = {14, 40};
    in[0] = ox_graph_find(b.g, "z"), in[1] = gb_i64(&b, "shp", 2, shp);
    gb_node(&b, "Reshape", "", 2, in, "r", NULL);
    gb_output(&b, "r");
    compare_devices(b.m, b.in, "graph", b.g->n_nodes);
    assert_int_equal(cmp_stats[0].cuda_graph, OX_CUDA_GRAPH_CAPTURED);
    assert_int_equal(cmp_stats[1].cuda_graph, OX_CUDA_GRAPH_REPLAYED);
    assert_int_equal(cmp_stats[2].cuda_graph, OX_CUDA_GRAPH_REPLAYED);
    assert_int_equal(cmp_stats[2].epilogue_nodes, 1);
    /* Other values, same shapes: replayed with this run's upload. */
    ox_exec_opts og = {.threads = 1, .device = OX_DEVICE_CUDA}, oc = {.threads = 1};
    ox_exec *eg = NULL, *ec = NULL;
    ox_error err = {0};
    if (ox_exec_new(b.m, &og, &eg, &err) || ox_exec_new(b.m, &oc, &ec, &err))
        fail_msg("%s", err.msg);
    for (int r = 0; r < 3; r++) {
        float *x = ox_tensor_data(b.in[0]->t);
        for (int64_t i = 0; i < b.in[0]->t->numel; i++)
            x[i] = (float)((int)(rnd() % 2001) - 1000) / 500.f;
        ox_rval *o1 = NULL, *o2 = NULL;
        if (ox_exec_run(eg, 1, b.in, 1, &o1, &err) || ox_exec_run(ec, 1, b.in, 1, &o2, &err))
            fail_msg("%s", err.msg);
        ox_exec_stats s;
        ox_exec_get_stats(eg, &s);
        assert_int_equal(s.cuda_graph, r ? OX_CUDA_GRAPH_REPLAYED : OX_CUDA_GRAPH_CAPTURED);
        char why[256];
        if (!ox_rval_allclose(o1, o2, 1e-5, 1e-6, why, sizeof why))
            fail_msg("run %d: %s", r, why);
        ox_rval_free(o1);
        ox_rval_free(o2);
    }
    ox_exec_free(eg);
    ox_exec_free(ec);
    cmp_no_graphs = true;
    compare_devices(b.m, b.in, "graph off", b.g->n_nodes);
    cmp_no_graphs = false;
    assert_int_equal(cmp_stats[1].cuda_graph, OX_CUDA_GRAPH_OFF);
    assert_non_null(strstr(cmp_stats[1].cuda_graph_note, "turned off"));
    gb_free(&b);
    unsetenv("ONNXSCOPE_CUDA_EMULATE");
}

/* The CLI on the emulated device: run names it, bench reports placement. */
static void test_emulated_cli(void **state)
{
    (void)state;
    const char *bin = ox_test_bin();
    if (!bin)
        skip();
    char cmd[2048], *out = NULL;
    snprintf(cmd, sizeof cmd,
             "ONNXSCOPE_CUDA_EMULATE=1 '%s' run %s/samples/tiny_cnn.onnx --random --device cuda",
             bin, ox_test_source());
    assert_int_equal(ox_test_run(cmd, &out), 0);
    assert_non_null(strstr(out, "device: cuda (emulated CUDA device"));
    assert_non_null(strstr(out, " nodes on the GPU ("));
    free(out);
    out = NULL;
    snprintf(cmd, sizeof cmd,
             "ONNXSCOPE_CUDA_EMULATE=1 '%s' bench %s/samples/tiny_cnn.onnx --device cuda "
             "--iters 2 --no-profile --json",
             bin, ox_test_source());
    assert_int_equal(ox_test_run(cmd, &out), 0);
    assert_non_null(strstr(out, "\"device\": \"cuda\""));
    assert_non_null(strstr(out, "\"gpu_nodes\""));
    assert_non_null(strstr(out, "\"graph\": \"replayed\""));
    free(out);
    out = NULL;
    /* fp16: run on the (emulated) GPU, refused on the CPU with exit 2. */
    snprintf(cmd, sizeof cmd,
             "ONNXSCOPE_CUDA_EMULATE=1 '%s' bench %s/samples/tiny_cnn.onnx --device cuda "
             "--precision fp16 --iters 2 --no-profile 2>&1",
             bin, ox_test_source());
    assert_int_equal(ox_test_run(cmd, &out), 0);
    assert_non_null(strstr(out, "placement (model): fp16,"));
    free(out);
    out = NULL;
    snprintf(cmd, sizeof cmd, "'%s' run %s/samples/tiny_cnn.onnx --random --precision fp16 2>&1",
             bin, ox_test_source());
    assert_int_equal(ox_test_run(cmd, &out), 2);
    assert_non_null(strstr(out, "--precision fp16: needs --device cuda"));
    free(out);
    out = NULL;
    /* The viewer's --device: validated as bench's (exit 2 unknown, 4 no GPU). */
    snprintf(cmd, sizeof cmd, "'%s' %s/samples/tiny_cnn.onnx --device tpu </dev/null 2>&1", bin,
             ox_test_source());
    assert_int_equal(ox_test_run(cmd, &out), 2);
    assert_non_null(strstr(out, "--device tpu: unknown device"));
    free(out);
    out = NULL;
    snprintf(cmd, sizeof cmd,
             "ONNXSCOPE_NO_CUDA=1 '%s' %s/samples/tiny_cnn.onnx --device cuda </dev/null 2>&1",
             bin, ox_test_source());
    assert_int_equal(ox_test_run(cmd, &out), 4);
    assert_non_null(strstr(out, "--device cuda: CUDA disabled by ONNXSCOPE_NO_CUDA"));
    free(out);
    out = NULL;
    snprintf(cmd, sizeof cmd,
             "ONNXSCOPE_CUDA_EMULATE=1 '%s' %s/samples/tiny_cnn.onnx --device cuda </dev/null",
             bin, ox_test_source());
    assert_int_equal(ox_test_run(cmd, &out), 0);   /* no terminal: the summary */
    assert_non_null(strstr(out, "tiny_cnn.onnx"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_place_mixed),
        cmocka_unit_test(test_place_host_params),
        cmocka_unit_test(test_place_dynamic_and_cudnn),
        cmocka_unit_test(test_place_node_cases),
        cmocka_unit_test(test_place_shared_models),
        cmocka_unit_test(test_no_gpu_exec),
        cmocka_unit_test(test_no_gpu_cli),
        cmocka_unit_test(test_emulated_mixed),
        cmocka_unit_test(test_emulated_nodes),
        cmocka_unit_test(test_emulated_shared_models),
        cmocka_unit_test(test_emulated_cli),
        cmocka_unit_test(test_place_epilogues),
        cmocka_unit_test(test_place_graphs),
        cmocka_unit_test(test_graph_tape),
        cmocka_unit_test(test_fp16_conversion),
        cmocka_unit_test(test_place_fp16),
        cmocka_unit_test(test_place_flash),
        cmocka_unit_test(test_emulated_fp16),
        cmocka_unit_test(test_emulated_graphs),
        cmocka_unit_test(test_gpu_nodes),
        cmocka_unit_test(test_gpu_shared_models),
        cmocka_unit_test(test_gpu_fp16),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
