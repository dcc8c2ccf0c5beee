/* The CUDA backend's plan-time shape arithmetic, CUDA Graph capture of
 * transformers and the fusion passes' com.microsoft ops on the GPU
 * (docs/EXECUTOR.md "Shape arithmetic at plan time, graphs for
 * transformers" and "Contrib ops and MultiHeadAttention on the GPU").
 *
 * Everything runs on the emulated device (ONNXSCOPE_CUDA_EMULATE=1: the
 * placement, device memory plan, uploads, residency and graph tape of a
 * real run, with the CPU kernels computing): every run's outputs against
 * the CPU executor (rtol 1e-3), three runs each, so the graph is captured
 * and then replayed. Where a GPU is usable the same tests run a second
 * time on it (group "gpu"): that checks the CUDA kernels themselves
 * (bench/gpu-check.sh runs this program there). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "exec/cuda/place.h"
#include "onnxscope/device.h"
#include "onnxscope/exec.h"
#include "onnxscope/io.h"
#include "onnxscope/ir.h"
#include "onnxscope/passes.h"
#include "onnxscope/testdata.h"
#include "testutil.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng >> 33);
}

/* ---- a small graph builder (as test_cuda.c's) ------------------------------ */

typedef struct gb {
    ox_model *m;
    ox_graph *g;
    ox_rval *in[8];
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

static ox_tensor *rand_f(int rank, const int64_t *dims)
{
    ox_tensor *t = ox_tensor_new(OX_DT_FLOAT, rank, dims);
    assert_non_null(t);
    float *d = ox_tensor_data(t);
    for (int64_t i = 0; i < t->numel; i++)
        d[i] = -1.f + 2.f * (float)(rnd() % 10001) / 10000.0f;
    return t;
}

/* An integer tensor with values in [0, hi) (int32 or int64). */
static ox_tensor *rand_i(ox_dtype dt, int rank, const int64_t *dims, int64_t hi)
{
    ox_tensor *t = ox_tensor_new(dt, rank, dims);
    assert_non_null(t);
    for (int64_t i = 0; i < t->numel; i++)
        ox_tensor_set_i64(t, i, (int64_t)(rnd() % (uint32_t)hi));
    return t;
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
    return gb_input_t(b, name, rand_f(rank, dims));
}

static ox_value *gb_init_t(gb *b, const char *name, ox_tensor *t)
{
    ox_value *v = ox_graph_value(b->g, name);
    assert_int_equal(ox_graph_set_initializer(b->g, v, t), OX_OK);
    return v;
}

static ox_value *gb_init(gb *b, const char *name, int rank, const int64_t *dims)
{
    return gb_init_t(b, name, rand_f(rank, dims));
}

static ox_value *gb_i64(gb *b, const char *name, int rank, int n, const int64_t *vals)
{
    int64_t d = n;
    ox_tensor *t = ox_tensor_new(OX_DT_INT64, rank, rank ? &d : NULL);
    assert_non_null(t);
    memcpy(ox_tensor_data(t), vals, (size_t)n * sizeof *vals);
    return gb_init_t(b, name, t);
}

static ox_node *gb_node(gb *b, const char *op, const char *dom, int nin, ox_value **ins,
                        int nout, const char *const *outs)
{
    ox_value *o[8] = {0};
    for (int i = 0; i < nout; i++)
        o[i] = outs[i] ? ox_graph_value(b->g, outs[i]) : NULL;
    char name[64];
    snprintf(name, sizeof name, "n%d", b->g->n_nodes);
    ox_node *n = ox_node_new(b->g, op, dom, name, nin, ins, nout, o);
    assert_non_null(n);
    return n;
}

/* One output named o. */
static ox_node *gb_op(gb *b, const char *op, const char *dom, int nin, ox_value **ins,
                      const char *o)
{
    return gb_node(b, op, dom, nin, ins, 1, &o);
}

static ox_value *V(gb *b, const char *name)
{
    ox_value *v = ox_graph_find(b->g, name);
    assert_non_null(v);
    return v;
}

static void gb_output(gb *b, const char *name)
{
    assert_int_equal(ox_graph_add_output(b->g, V(b, name)), OX_OK);
}

static void gb_free(gb *b)
{
    for (int i = 0; i < b->n_in; i++)
        ox_rval_free(b->in[i]);
    ox_model_free(b->m);
}

/* Input i's dims become symbols (an exporter's dynamic axes). */
static void symbolic(gb *b, int i, const char *const *names)
{
    ox_type *t = b->g->inputs[i]->type;
    for (int d = 0; d < t->rank; d++)
        if (names[d]) {
            t->dims[d].value = -1;
            t->dims[d].param = strdup(names[d]);
        }
}

static ox_cuda_plan *plan_of(gb *b)
{
    ox_cuda_caps caps = {.cublas = true, .cudnn = true, .graphs = true};
    ox_cuda_plan *p = NULL;
    ox_error err = {0};
    const ox_graph *g = b->g;
    if (ox_cuda_plan_build(b->m, g->n_nodes, (const ox_node *const *)g->nodes, g->n_values,
                           (const ox_value *const *)g->values, b->n_in, b->in, &caps, &p, &err))
        fail_msg("plan: %s", err.msg);
    assert_non_null(p);
    return p;
}

static int node_at(const gb *b, const char *op)
{
    for (int k = 0; k < b->g->n_nodes; k++)
        if (!strcmp(b->g->nodes[k]->op_type, op))
            return k;
    fail_msg("no %s node", op);
    return -1;
}

/* ---- runs on the emulated device --------------------------------------------- */

static ox_exec_stats st[3];

/* m on the CPU once and on the emulated GPU three times, every GPU run's
 * outputs against the CPU's (rtol 1e-3, atol 1e-4); st[] gets the GPU
 * runs' stats. eg: an executor to reuse (NULL: a new one, freed here). */
static void compare_runs(ox_model *m, ox_rval *const *in, const char *what, ox_exec *eg)
{
    const ox_graph *g = m->graph;
    ox_exec_opts oc = {.threads = 1}, og = {.threads = 1, .device = OX_DEVICE_CUDA};
    ox_exec *ec = NULL, *own = NULL;
    ox_error err = {0};
    if (ox_exec_new(m, &oc, &ec, &err) || (!eg && ox_exec_new(m, &og, &own, &err)))
        fail_msg("%s: %s", what, err.msg);
    if (!eg)
        eg = own;
    assert_true(g->n_outputs <= 8);
    ox_rval *rc[8] = {0};
    if (ox_exec_run(ec, g->n_inputs, in, g->n_outputs, rc, &err))
        fail_msg("%s (cpu): %s", what, err.msg);
    for (int r = 0; r < 3; r++) {
        ox_rval *rg[8] = {0};
        if (ox_exec_run(eg, g->n_inputs, in, g->n_outputs, rg, &err))
            fail_msg("%s (cuda, run %d): %s", what, r + 1, err.msg);
        ox_exec_get_stats(eg, &st[r]);
        for (int i = 0; i < g->n_outputs; i++) {
            char why[256];
            if (!ox_rval_allclose(rg[i], rc[i], 1e-3, 1e-4, why, sizeof why))
                fail_msg("%s output %d (run %d): %s", what, i, r + 1, why);
            ox_rval_free(rg[i]);
        }
    }
    for (int i = 0; i < g->n_outputs; i++)
        ox_rval_free(rc[i]);
    ox_exec_free(ec);
    ox_exec_free(own);
}

static void assert_replayed(const char *what)
{
    if (st[0].cuda_graph != OX_CUDA_GRAPH_CAPTURED || st[1].cuda_graph != OX_CUDA_GRAPH_REPLAYED ||
        st[2].cuda_graph != OX_CUDA_GRAPH_REPLAYED)
        fail_msg("%s: CUDA Graph runs %d %d %d (%s)", what, st[0].cuda_graph, st[1].cuda_graph,
                 st[2].cuda_graph, st[1].cuda_graph_note);
}

static int setup(void **state)
{
    (void)state;
    setenv("ONNXSCOPE_CUDA_EMULATE", "1", 1);
    return 0;
}

static int setup_gpu(void **state)
{
    (void)state;
    unsetenv("ONNXSCOPE_CUDA_EMULATE");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unsetenv("ONNXSCOPE_CUDA_EMULATE");
    return 0;
}

/* ---- shape arithmetic at plan time ------------------------------------------- */

/* An exporter's reshape and position arithmetic on symbolic dims, both
 * styles: PyTorch 1.x Shape -> Gather -> Unsqueeze -> Concat for the batch,
 * PyTorch 2.x Shape(start, end) for the sequence; Range over the length
 * (position ids), ConstantOfShape of a runtime shape, and a scalar derived
 * from the length that a GPU node reads (its value differs between two
 * signatures of equal sizes: the per-plan upload must follow). */
static gb shape_model(int64_t batch, int64_t seq)
{
    gb b = gb_new(17);
    int64_t xd[3] = {batch, seq, 8}, wd[2] = {8, 8};
    ox_value *in[4];
    gb_input(&b, "x", 3, xd);
    static const char *const names[3] = {"batch", "seq", NULL};
    symbolic(&b, 0, names);
    gb_init(&b, "W", 2, wd);
    in[0] = V(&b, "x"), in[1] = V(&b, "W");
    gb_op(&b, "MatMul", "", 2, in, "y");                       /* GPU */
    in[0] = V(&b, "y");
    gb_op(&b, "Shape", "", 1, in, "sh");
    int64_t zero = 0, one = 1, two = 2, four = 4, ax0 = 0;
    in[0] = V(&b, "sh"), in[1] = gb_i64(&b, "i0", 0, 1, &zero);
    gb_op(&b, "Gather", "", 2, in, "bsz");
    in[0] = V(&b, "bsz"), in[1] = gb_i64(&b, "ax", 1, 1, &ax0);
    gb_op(&b, "Unsqueeze", "", 2, in, "bu");
    in[0] = V(&b, "y");
    ox_node *sn = gb_op(&b, "Shape", "", 1, in, "su");          /* [seq] */
    ox_node_set_attr_i(sn, "start", 1);
    ox_node_set_attr_i(sn, "end", 2);
    in[0] = V(&b, "bu"), in[1] = V(&b, "su"), in[2] = gb_i64(&b, "c2", 1, 1, &two),
    in[3] = gb_i64(&b, "c4", 1, 1, &four);
    ox_node *cn = gb_op(&b, "Concat", "", 4, in, "shp");
    ox_node_set_attr_i(cn, "axis", 0);
    in[0] = V(&b, "y"), in[1] = V(&b, "shp");
    gb_op(&b, "Reshape", "", 2, in, "r");                      /* GPU (b, s, 2, 4) */
    int64_t perm[4] = {0, 2, 1, 3};
    in[0] = V(&b, "r");
    ox_node *tn = gb_op(&b, "Transpose", "", 1, in, "t");      /* (b, 2, s, 4) */
    ox_node_set_attr_ints(tn, "perm", 4, perm);
    /* Position ids: Range(0, seq) as floats shaped (1, 1, seq, 1). */
    in[0] = V(&b, "su"), in[1] = V(&b, "ax");
    gb_op(&b, "Squeeze", "", 2, in, "slen");
    in[0] = gb_i64(&b, "r0", 0, 1, &zero), in[1] = V(&b, "slen"),
    in[2] = gb_i64(&b, "r1", 0, 1, &one);
    gb_op(&b, "Range", "", 3, in, "pos");
    in[0] = V(&b, "pos");
    ox_node *cast = gb_op(&b, "Cast", "", 1, in, "posf");
    ox_node_set_attr_i(cast, "to", OX_DT_FLOAT);
    int64_t pshape[4] = {1, 1, -1, 1};
    in[0] = V(&b, "posf"), in[1] = gb_i64(&b, "pshape", 1, 4, pshape);
    gb_op(&b, "Reshape", "", 2, in, "pu");
    in[0] = V(&b, "t"), in[1] = V(&b, "pu");
    gb_op(&b, "Add", "", 2, in, "z");                          /* GPU, pu uploaded per plan */
    /* ConstantOfShape of the runtime shape of z (0.5 everywhere). */
    in[0] = V(&b, "z");
    gb_op(&b, "Shape", "", 1, in, "zsh");
    in[0] = V(&b, "zsh");
    ox_node *cs = gb_op(&b, "ConstantOfShape", "", 1, in, "half");
    int64_t one_d = 1;
    ox_tensor *hv = ox_tensor_new(OX_DT_FLOAT, 1, &one_d);
    ((float *)ox_tensor_data(hv))[0] = 0.5f;
    ox_node_set_attr_t(cs, "value", hv);
    in[0] = V(&b, "z"), in[1] = V(&b, "half");
    gb_op(&b, "Mul", "", 2, in, "z2");
    /* A scalar of the length: z2 / float(seq). */
    in[0] = V(&b, "slen");
    ox_node *c2 = gb_op(&b, "Cast", "", 1, in, "slenf");
    ox_node_set_attr_i(c2, "to", OX_DT_FLOAT);
    in[0] = V(&b, "z2"), in[1] = V(&b, "slenf");
    gb_op(&b, "Div", "", 2, in, "z3");
    in[0] = V(&b, "z3");
    gb_op(&b, "Relu", "", 1, in, "out");
    gb_output(&b, "out");
    return b;
}

/* The plan: shape nodes computed at plan time, the rest on the GPU, one
 * graph; runs replay; another signature rebuilds the plan and captures
 * anew; two signatures with the same sizes but another length each get
 * their own value of the length scalar. */
static void test_shape_at_plan_time(void **state)
{
    (void)state;
    gb b = shape_model(2, 5);
    ox_cuda_plan *p = plan_of(&b);
    static const char *const host_ops[] = {"Shape", "Gather", "Unsqueeze", "Concat", "Squeeze",
                                           "Range", "Cast", "ConstantOfShape", NULL};
    static const char *const gpu_ops[] = {"MatMul", "Reshape", "Transpose", "Add", "Mul", "Div",
                                          "Relu", NULL};
    for (int k = 0; k < b.g->n_nodes; k++) {
        const char *op = b.g->nodes[k]->op_type;
        bool host = false, gpu = false;
        for (int i = 0; host_ops[i]; i++)
            host |= !strcmp(op, host_ops[i]);
        for (int i = 0; gpu_ops[i]; i++)
            gpu |= !strcmp(op, gpu_ops[i]);
        /* The Reshape of the positions reads only plan values: plan time too. */
        if (!strcmp(b.g->nodes[k]->outputs[0]->name, "pu"))
            host = true, gpu = false;
        if (host) {
            if (!p->pconst[k] || p->kind[k])
                fail_msg("node %d (%s) not computed at plan time", k, op);
            assert_non_null(strstr(p->why[k], "plan time"));
        }
        if (gpu && !p->kind[k])
            fail_msg("node %d (%s) on the CPU: %s", k, op, p->why[k]);
    }
    assert_int_equal(p->nodes_on[1], 7);
    assert_true(p->graph_ok);
    ox_cuda_plan_free(p);

    ox_exec_opts og = {.threads = 1, .device = OX_DEVICE_CUDA};
    ox_exec *eg = NULL;
    ox_error err = {0};
    if (ox_exec_new(b.m, &og, &eg, &err))
        fail_msg("%s", err.msg);
    compare_runs(b.m, b.in, "shape model 2x5", eg);
    assert_replayed("shape model 2x5");
    assert_int_equal(st[2].plan_shape_nodes, 12);
    assert_int_equal(st[2].h2d_copies, 1);   /* x only: plan values were uploaded once */
    /* Other signatures on the same executor: 1x10 and 10x1 have x's bytes
     * of 2x5 but other lengths (the scalar and positions differ). */
    const int64_t sig[3][2] = {{1, 10}, {10, 1}, {2, 5}};
    for (int i = 0; i < 3; i++) {
        int64_t xd[3] = {sig[i][0], sig[i][1], 8};
        ox_rval *x = ox_rval_tensor(rand_f(3, xd));
        char what[64];
        snprintf(what, sizeof what, "shape model %lldx%lld", (long long)sig[i][0],
                 (long long)sig[i][1]);
        compare_runs(b.m, &x, what, eg);
        assert_replayed(what);
        ox_rval_free(x);
    }
    ox_exec_free(eg);
    gb_free(&b);
}

/* A CPU node that reads a GPU value between GPU nodes (CumSum has no CUDA
 * kernel, and its input is computed, not a shape): the plan refuses a
 * graph and names the node; runs stay eager and correct. */
static void test_value_dependent_refuses(void **state)
{
    (void)state;
    gb b = gb_new(17);
    int64_t xd[2] = {4, 8}, ax = 1;
    ox_value *in[2];
    gb_input(&b, "x", 2, xd);
    in[0] = V(&b, "x");
    gb_op(&b, "Relu", "", 1, in, "a");
    in[0] = V(&b, "a"), in[1] = gb_i64(&b, "axis", 0, 1, &ax);
    gb_op(&b, "CumSum", "", 2, in, "c");
    in[0] = V(&b, "c");
    gb_op(&b, "Sigmoid", "", 1, in, "out");
    gb_output(&b, "out");
    ox_cuda_plan *p = plan_of(&b);
    assert_false(p->graph_ok);
    assert_string_equal(p->graph_why,
                        "a CPU node between GPU nodes reads a GPU value (node 1 'n1', CumSum)");
    ox_cuda_plan_free(p);
    compare_runs(b.m, b.in, "value-dependent CPU node", NULL);
    for (int r = 0; r < 3; r++) {
        assert_int_equal(st[r].cuda_graph, OX_CUDA_GRAPH_OFF);
        assert_non_null(strstr(st[r].cuda_graph_note, "reads a GPU value (node 1 'n1', CumSum)"));
    }
    gb_free(&b);
}

/* A mask and position values computed from input values by comparisons,
 * logical ops, integer arithmetic and a CumSum (position ids from an
 * attention mask, as Hugging Face exports have them): the elementwise ops
 * run on the GPU (with seq 6, their 12-element integer results stay on the
 * CPU by the small-integer rule), CumSum on the CPU reads only a host
 * input, and the values CPU nodes make for GPU nodes get buffers of their
 * own: the graph holds either way. */
static void mask_model(int64_t seq)
{
    gb b = gb_new(17);
    int64_t d[2] = {2, seq}, zero = 0, one = 1, two = 2, four = 4, ed[2] = {2 * seq + 1, 1};
    gb_input_t(&b, "ids", rand_i(OX_DT_INT64, 2, d, 5));
    gb_input_t(&b, "mask", rand_i(OX_DT_INT64, 2, d, 2));
    gb_input(&b, "x", 2, d);
    ox_value *in[2];
    in[0] = V(&b, "ids"), in[1] = gb_i64(&b, "zero", 0, 1, &zero);
    gb_op(&b, "Equal", "", 2, in, "eq");
    in[0] = V(&b, "eq");
    gb_op(&b, "Not", "", 1, in, "ne");
    in[0] = V(&b, "ids"), in[1] = gb_i64(&b, "four", 0, 1, &four);
    gb_op(&b, "Less", "", 2, in, "lt");
    in[0] = V(&b, "ne"), in[1] = V(&b, "lt");
    gb_op(&b, "And", "", 2, in, "keep");
    in[0] = V(&b, "x"), in[1] = gb_init(&b, "thr", 0, NULL);
    gb_op(&b, "Greater", "", 2, in, "pos");
    in[0] = V(&b, "keep"), in[1] = V(&b, "pos");
    gb_op(&b, "Xor", "", 2, in, "mix");
    in[0] = V(&b, "ids"), in[1] = gb_i64(&b, "one", 0, 1, &one);
    gb_op(&b, "Add", "", 2, in, "ip");
    in[0] = V(&b, "ip"), in[1] = gb_i64(&b, "two", 1, 1, &two);
    gb_op(&b, "Mul", "", 2, in, "ip2");
    in[0] = V(&b, "ip2"), in[1] = V(&b, "ids");
    gb_op(&b, "Sub", "", 2, in, "ip3");
    in[0] = V(&b, "ip3");
    ox_node *c1 = gb_op(&b, "Cast", "", 1, in, "pf");
    ox_node_set_attr_i(c1, "to", OX_DT_FLOAT);
    in[0] = V(&b, "mix");
    ox_node *c2 = gb_op(&b, "Cast", "", 1, in, "mf");
    ox_node_set_attr_i(c2, "to", OX_DT_FLOAT);
    /* Position ids: CumSum(mask) * mask (a CPU node reading a host input). */
    in[0] = V(&b, "mask"), in[1] = gb_i64(&b, "axis", 0, 1, &one);
    gb_op(&b, "CumSum", "", 2, in, "cs");
    in[0] = V(&b, "cs"), in[1] = V(&b, "mask");
    gb_op(&b, "Mul", "", 2, in, "pid");
    in[0] = gb_init(&b, "emb", 2, ed), in[1] = V(&b, "pid");
    gb_op(&b, "Gather", "", 2, in, "pe");                  /* (2, seq, 1) */
    int64_t sq[1] = {2};
    in[0] = V(&b, "pe"), in[1] = gb_i64(&b, "sqax", 1, 1, sq);
    gb_op(&b, "Squeeze", "", 2, in, "pe2");
    in[0] = V(&b, "x"), in[1] = V(&b, "mf");
    gb_op(&b, "Mul", "", 2, in, "y");
    in[0] = V(&b, "y"), in[1] = V(&b, "pf");
    gb_op(&b, "Add", "", 2, in, "y2");
    in[0] = V(&b, "y2"), in[1] = V(&b, "pe2");
    gb_op(&b, "Add", "", 2, in, "out");
    gb_output(&b, "out");
    ox_cuda_plan *p = plan_of(&b);
    for (int k = 0; k < b.g->n_nodes; k++) {
        const char *op = b.g->nodes[k]->op_type;
        bool cpu = !strcmp(op, "CumSum") ||
                   (seq <= 8 && b.g->nodes[k]->outputs[0]->name[0] == 'i') ||  /* ip, ip2, ip3 */
                   (seq <= 8 && !strcmp(b.g->nodes[k]->outputs[0]->name, "pid"));
        if (!cpu && !p->kind[k])
            fail_msg("seq %lld: node %d (%s) on the CPU: %s", (long long)seq, k, op, p->why[k]);
        if (cpu && p->kind[k])
            fail_msg("seq %lld: node %d (%s) on the GPU", (long long)seq, k, op);
    }
    if (!p->graph_ok)
        fail_msg("seq %lld: no graph: %s", (long long)seq, p->graph_why);
    ox_cuda_plan_free(p);
    char what[64];
    snprintf(what, sizeof what, "mask ops, seq %lld", (long long)seq);
    compare_runs(b.m, b.in, what, NULL);
    assert_replayed(what);
    gb_free(&b);
}

static void test_mask_ops(void **state)
{
    (void)state;
    mask_model(10);
    mask_model(6);
}

/* ---- MultiHeadAttention ----------------------------------------------------- */

typedef struct mha_case {
    const char *what;
    int64_t b, sq, sk, d, heads;
    bool kpm, kpm64, bias, ab, causal, past;
    const char *why;   /* NULL: on the GPU; else the CPU reason's text */
} mha_case;

static gb mha_model(const mha_case *c)
{
    gb b = gb_new(17);
    int64_t qd[3] = {c->b, c->sq, c->d}, kd[3] = {c->b, c->sk, c->d};
    int64_t wd[2] = {c->d, c->d};
    ox_value *in[8] = {0};
    /* Projections on the GPU feed the attention, as the fusion leaves them. */
    gb_input(&b, "xq", 3, qd);
    gb_input(&b, "xkv", 3, kd);
    gb_init(&b, "Wq", 2, wd);
    gb_init(&b, "Wk", 2, wd);
    gb_init(&b, "Wv", 2, wd);
    in[0] = V(&b, "xq"), in[1] = V(&b, "Wq");
    gb_op(&b, "MatMul", "", 2, in, "q");
    in[0] = V(&b, "xkv"), in[1] = V(&b, "Wk");
    gb_op(&b, "MatMul", "", 2, in, "k");
    in[1] = V(&b, "Wv");
    gb_op(&b, "MatMul", "", 2, in, "v");
    int n = 3;
    in[0] = V(&b, "q"), in[1] = V(&b, "k"), in[2] = V(&b, "v");
    if (c->bias) {
        int64_t bd = 3 * c->d;
        in[3] = gb_init(&b, "bias", 1, &bd);
        n = 4;
    }
    if (c->kpm) {
        int64_t md[2] = {c->b, c->sk};
        ox_tensor *m = rand_i(c->kpm64 ? OX_DT_INT64 : OX_DT_INT32, 2, md, 2);
        ox_tensor_set_i64(m, 0, 1);   /* a key kept in every row of batch 0 */
        in[4] = gb_input_t(&b, "kpm", m);
        n = 5;
    }
    if (c->ab) {
        int64_t abd[4] = {1, c->heads, c->sq, c->sk};
        in[5] = gb_init(&b, "ab", 4, abd);
        n = 6;
    }
    if (c->past) {
        int64_t pd[4] = {c->b, c->heads, 2, c->d / c->heads};
        in[6] = gb_input(&b, "pk", 4, pd);
        in[7] = gb_input(&b, "pv", 4, pd);
        n = 8;
    }
    ox_node *mn = gb_op(&b, "MultiHeadAttention", "com.microsoft", n, in, "att");
    ox_node_set_attr_i(mn, "num_heads", c->heads);
    if (c->causal)
        ox_node_set_attr_i(mn, "unidirectional", 1);
    in[0] = V(&b, "att");
    gb_op(&b, "Relu", "", 1, in, "out");
    gb_output(&b, "out");
    return b;
}

static void test_mha(void **state)
{
    (void)state;
    static const mha_case cases[] = {
        {"cross-attention, key padding mask", 2, 5, 7, 16, 2, true, false, false, false, false,
         false, NULL},
        {"self-attention, causal, bias, attention_bias", 2, 6, 6, 16, 4, false, false, true, true,
         true, false, NULL},
        {"long cross-attention (several key tiles)", 1, 40, 70, 32, 2, true, false, false, false,
         false, false, NULL},
        {"int64 key padding mask", 2, 5, 7, 16, 2, true, true, false, false, false, false,
         "key_padding_mask other than int32"},
        {"head size 160", 1, 4, 4, 160, 1, false, false, false, false, false, false,
         "head size over 128"},
        {"past key/value", 1, 4, 4, 16, 2, false, false, false, false, false, true,
         "past or present key/value"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const mha_case *c = &cases[i];
        gb b = mha_model(c);
        ox_cuda_plan *p = plan_of(&b);
        int k = node_at(&b, "MultiHeadAttention");
        if (c->why) {
            assert_int_equal(p->kind[k], OX_CK_NONE);
            if (!strstr(p->why[k], c->why))
                fail_msg("%s: reason '%s'", c->what, p->why[k]);
        } else if (p->kind[k] != OX_CK_K_MHA) {
            fail_msg("%s: on the CPU: %s", c->what, p->why[k]);
        }
        ox_cuda_plan_free(p);
        if (!c->past) {   /* the CPU kernel has no past either */
            compare_runs(b.m, b.in, c->what, NULL);
            if (!c->why)
                assert_replayed(c->what);
        }
        gb_free(&b);
    }
}

/* ---- the other contrib ops ---------------------------------------------------- */

static void test_contrib_ops(void **state)
{
    (void)state;
    for (int c = 0; c < 10; c++) {
        gb b = gb_new(17);
        ox_value *in[9] = {0};
        int64_t xd[3] = {2, 4, 8}, h = 8;
        const char *op = NULL;
        ox_cuda_kind want = OX_CK_NONE;
        const char *why = NULL;
        if (c == 0) {   /* Sum with broadcasting */
            int64_t zd[3] = {1, 4, 1};
            in[0] = gb_input(&b, "x", 3, xd), in[1] = gb_init(&b, "y", 1, &h),
            in[2] = gb_init(&b, "z", 3, zd);
            gb_op(&b, "Sum", "", 3, in, "s"), op = "Sum", want = OX_CK_K_SUM;
        } else if (c == 1 || c == 2) {   /* BiasGelu, FastGelu with a bias */
            in[0] = gb_input(&b, "x", 3, xd), in[1] = gb_init(&b, "bias", 1, &h);
            op = c == 1 ? "BiasGelu" : "FastGelu", want = OX_CK_K_BIASGELU;
            gb_op(&b, op, "com.microsoft", 2, in, "s");
        } else if (c == 3) {   /* FusedGemm + LeakyRelu */
            int64_t ad[2] = {4, 8}, bd[2] = {8, 6}, cd = 6;
            in[0] = gb_input(&b, "x", 2, ad), in[1] = gb_init(&b, "B", 2, bd),
            in[2] = gb_init(&b, "C", 1, &cd);
            ox_node *n = gb_op(&b, "FusedGemm", "com.microsoft", 3, in, "s");
            ox_node_set_attr_s(n, "activation", "LeakyRelu");
            ox_node_set_attr_f(n, "activation_alpha", 0.2f);
            op = "FusedGemm", want = OX_CK_K_FUSEDGEMM;
        } else if (c == 4 || c == 5) {   /* FusedConv + Relu with Z; + Elu: CPU */
            int64_t x4[4] = {1, 3, 6, 6}, wd[4] = {4, 3, 3, 3}, bd = 4, zd[4] = {1, 4, 4, 4};
            in[0] = gb_input(&b, "x", 4, x4), in[1] = gb_init(&b, "W", 4, wd),
            in[2] = gb_init(&b, "B", 1, &bd), in[3] = gb_init(&b, "Z", 4, zd);
            ox_node *n = gb_op(&b, "FusedConv", "com.microsoft", 4, in, "s");
            ox_node_set_attr_s(n, "activation", c == 4 ? "Relu" : "Elu");
            op = "FusedConv";
            want = c == 4 ? OX_CK_K_FUSEDCONV : OX_CK_NONE;
            why = c == 4 ? NULL : "an activation the CUDA kernels do not have";
        } else if (c == 6) {   /* EmbedLayerNormalization with segments and a mask */
            int64_t id[2] = {2, 5}, wd[2] = {10, 8}, pd[2] = {6, 8}, sd[2] = {2, 8};
            gb_input_t(&b, "ids", rand_i(OX_DT_INT32, 2, id, 10));
            gb_input_t(&b, "seg", rand_i(OX_DT_INT32, 2, id, 2));
            gb_input_t(&b, "mask", rand_i(OX_DT_INT32, 2, id, 2));
            in[0] = V(&b, "ids"), in[1] = V(&b, "seg"), in[2] = gb_init(&b, "word", 2, wd),
            in[3] = gb_init(&b, "pos", 2, pd), in[4] = gb_init(&b, "segw", 2, sd),
            in[5] = gb_init(&b, "gamma", 1, &h), in[6] = gb_init(&b, "beta", 1, &h),
            in[7] = V(&b, "mask");
            static const char *const outs[2] = {"s", "mi"};
            gb_node(&b, "EmbedLayerNormalization", "com.microsoft", 8, in, 2, outs);
            gb_output(&b, "mi");
            op = "EmbedLayerNormalization", want = OX_CK_K_EMBEDLN;
        } else if (c == 8) {   /* EmbedLayerNormalization: position_ids [1, S], no segments */
            int64_t id[2] = {2, 5}, pd1[2] = {1, 5}, wd[2] = {10, 8}, pd[2] = {6, 8};
            gb_input_t(&b, "ids", rand_i(OX_DT_INT64, 2, id, 10));
            gb_input_t(&b, "pid", rand_i(OX_DT_INT64, 2, pd1, 6));
            in[0] = V(&b, "ids"), in[1] = NULL, in[2] = gb_init(&b, "word", 2, wd),
            in[3] = gb_init(&b, "pos", 2, pd), in[4] = NULL, in[5] = gb_init(&b, "gamma", 1, &h),
            in[6] = gb_init(&b, "beta", 1, &h), in[7] = NULL, in[8] = V(&b, "pid");
            static const char *const outs[3] = {"s", NULL, "esum"};
            gb_node(&b, "EmbedLayerNormalization", "com.microsoft", 9, in, 3, outs);
            gb_output(&b, "esum");
            op = "EmbedLayerNormalization", want = OX_CK_K_EMBEDLN;
        } else if (c == 9) {   /* QuickGelu */
            in[0] = gb_input(&b, "x", 3, xd);
            ox_node *n = gb_op(&b, "QuickGelu", "com.microsoft", 1, in, "s");
            ox_node_set_attr_f(n, "alpha", 1.5f);
            op = "QuickGelu", want = OX_CK_K_BIASGELU;
        } else {   /* FastGelu without a bias */
            in[0] = gb_input(&b, "x", 3, xd);
            gb_op(&b, "FastGelu", "com.microsoft", 1, in, "s");
            op = "FastGelu", want = OX_CK_K_BIASGELU;
        }
        in[0] = V(&b, "s");
        gb_op(&b, "Tanh", "", 1, in, "out");
        gb_output(&b, "out");
        ox_cuda_plan *p = plan_of(&b);
        int k = node_at(&b, op);
        if (p->kind[k] != want)
            fail_msg("%s: kind %d, want %d (%s)", op, p->kind[k], want,
                     p->why[k] ? p->why[k] : "");
        if (why)
            assert_string_equal(p->why[k], why);
        ox_cuda_plan_free(p);
        compare_runs(b.m, b.in, op, NULL);
        if (want)
            assert_replayed(op);
        gb_free(&b);
    }
}

/* ---- the shared models, as exported and optimized ------------------------------ */

static const char *const models[] = {
    "bert_l2_h128_nofold_op13", "gpt2_like_l2_h128_nofold_op13",
    "torch_transformer_encoder_l4_h256_op17", "mobilenet_v2_op13",
    "shape_chain_cnn_nofold_op13", "squeezenet1_1_op17",
};

static ox_model *load(const char *shared, const char *name, bool optimize, ox_rval **in)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/models/%s/model.onnx", shared, name);
    ox_model *m = NULL;
    ox_error err = {0};
    if (ox_load(path, NULL, &m, &err)) {
        printf("skipped %s: %s\n", name, err.msg);
        return NULL;
    }
    if (optimize) {   /* optimize --level all --target ort */
        ox_pass_manager *pm = ox_pm_new(OX_LEVEL_ALL, OX_TARGET_ORT);
        assert_non_null(pm);
        if (ox_pm_run(pm, m, NULL, &err))
            fail_msg("optimize %s: %s", name, err.msg);
        ox_pm_free(pm);
    }
    const ox_graph *g = m->graph;
    assert_true(g->n_inputs <= 8);
    for (int i = 0; i < g->n_inputs; i++) {
        snprintf(path, sizeof path, "%s/models/%s/test_data_set_0/input_%d.pb", shared, name, i);
        if (ox_testdata_load(path, g->inputs[i]->type, &in[i], NULL, &err))
            fail_msg("%s: %s", path, err.msg);
    }
    return m;
}

/* Every shared model, as exported and optimized: captured, then replayed,
 * each run equal to the CPU executor. Optimized transformers run every
 * node on the GPU except the shape arithmetic the plan computed. */
static void test_shared_models(void **state)
{
    (void)state;
    const char *shared = ox_test_shared();
    if (!shared)
        skip();
    for (size_t k = 0; k < sizeof models / sizeof models[0]; k++)
        for (int opt = 0; opt < 2; opt++) {
            ox_rval *in[8] = {0};
            ox_model *m = load(shared, models[k], opt, in);
            if (!m)
                continue;
            char what[256];
            snprintf(what, sizeof what, "%s%s", models[k], opt ? " (optimized)" : "");
            compare_runs(m, in, what, NULL);
            const ox_exec_stats *s = &st[2];
            int64_t fl = s->flops_on[0] + s->flops_on[1];
            printf("%s: %d GPU / %d CPU nodes (%d of them computed at plan time), %.2f%% of the "
                   "FLOPs on the GPU, %lld uploads, %lld downloads per run; graph run 1 %d, run "
                   "2 %d\n",
                   what, s->nodes_on[1], s->nodes_on[0], s->plan_shape_nodes,
                   fl ? 100.0 * (double)s->flops_on[1] / (double)fl : 0.0,
                   (long long)s->h2d_copies, (long long)s->d2h_copies, st[0].cuda_graph,
                   st[1].cuda_graph);
            assert_replayed(what);
            if (opt && k < 3)
                assert_int_equal(s->nodes_on[0], s->plan_shape_nodes);
            for (int i = 0; i < m->graph->n_inputs; i++)
                ox_rval_free(in[i]);
            ox_model_free(m);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shape_at_plan_time),
        cmocka_unit_test(test_value_dependent_refuses),
        cmocka_unit_test(test_mask_ops),
        cmocka_unit_test(test_mha),
        cmocka_unit_test(test_contrib_ops),
        cmocka_unit_test(test_shared_models),
    };
    int failed = cmocka_run_group_tests_name("emulated", tests, setup, teardown);
    char line[512];
    unsetenv("ONNXSCOPE_CUDA_EMULATE");
    if (ox_cuda_probe(line, sizeof line) != OX_CUDA_AVAILABLE) {
        printf("GPU group skipped: no usable GPU: %s\n", line);
        return failed;
    }
    printf("GPU: %s\n", line);
    return failed + cmocka_run_group_tests_name("gpu", tests, setup_gpu, teardown);
}
