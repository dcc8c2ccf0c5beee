/* Unit tests of the executor's activation arena: the arena is used and is
 * as large as a hand-computed memory plan, plans are cached per input-shape
 * signature, views of arena bytes are copied, and results are identical
 * with and without the arena (hand-built chains and the shared models). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "onnxscope/exec.h"
#include "onnxscope/infer.h"
#include "onnxscope/io.h"
#include "onnxscope/memplan.h"
#include "onnxscope/testdata.h"

/* x[N,W] -> Relu -> Neg -> (Reshape to [-1] when `view`) -> Abs -> y.
 * Every step is elementwise, so y = relu(x) (flattened with `view`). */
static ox_model *chain_model(int64_t w, bool view)
{
    ox_model *m = ox_model_new();
    assert_non_null(m);
    ox_model_set_opset(m, "", 13);
    ox_graph *g = m->graph ? m->graph : ox_graph_new(m, NULL);
    m->graph = g;
    ox_value *x = ox_graph_value(g, "x");
    int64_t dims[2] = {-1, w};
    x->type = ox_type_new_tensor(OX_DT_FLOAT, 2, dims);
    assert_int_equal(ox_graph_add_input(g, x), OX_OK);
    ox_value *a = ox_graph_value(g, "a"), *b = ox_graph_value(g, "b");
    ox_value *y = ox_graph_value(g, "y");
    ox_node_new(g, "Relu", "", "relu", 1, &x, 1, &a);
    ox_node_new(g, "Neg", "", "neg", 1, &a, 1, &b);
    if (view) {
        ox_value *shp = ox_graph_value(g, "shp"), *r = ox_graph_value(g, "r");
        int64_t one = 1;
        ox_tensor *t = ox_tensor_new(OX_DT_INT64, 1, &one);
        ox_tensor_set_i64(t, 0, -1);
        assert_int_equal(ox_graph_set_initializer(g, shp, t), OX_OK);
        ox_value *rin[2] = {b, shp};
        ox_node_new(g, "Reshape", "", "reshape", 2, rin, 1, &r);
        ox_node_new(g, "Abs", "", "abs", 1, &r, 1, &y);
    } else {
        ox_node_new(g, "Abs", "", "abs", 1, &b, 1, &y);
    }
    assert_int_equal(ox_graph_add_output(g, y), OX_OK);
    return m;
}

static ox_rval *input(int64_t n, int64_t w, int seed)
{
    int64_t dims[2] = {n, w};
    ox_tensor *t = ox_tensor_new(OX_DT_FLOAT, 2, dims);
    float *d = ox_tensor_data(t);
    for (int64_t i = 0; i < n * w; i++)
        d[i] = (float)((i * 7 + seed) % 13) - 6.0f;
    return ox_rval_tensor(t);
}

static ox_rval *run1(ox_exec *e, ox_rval *in)
{
    ox_rval *out = NULL;
    ox_error err = {0};
    if (ox_exec_run(e, 1, &in, 1, &out, &err))
        fail_msg("run: %s", err.msg);
    return out;
}

static void expect_relu(const ox_rval *in, const ox_rval *out)
{
    assert_int_equal(out->kind, OX_RV_TENSOR);
    assert_int_equal(out->t->numel, in->t->numel);
    const float *x = ox_tensor_data(in->t), *y = ox_tensor_data(out->t);
    for (int64_t i = 0; i < in->t->numel; i++)
        assert_true(y[i] == (x[i] > 0 ? x[i] : 0.0f));
}

static int64_t align64(int64_t b)
{
    return (b + 63) / 64 * 64;
}

/* Chain without views: at every step one input and one output are live
 * (the graph input is the caller's), so the arena is exactly two aligned
 * activations: for N=1, W=1000: 2 * align64(4000) = 2 * 4032 = 8064. */
static void test_chain_arena(void **state)
{
    (void)state;
    ox_model *m = chain_model(1000, false);
    ox_exec *e = NULL;
    ox_error err = {0};
    ox_exec_opts opts = {.threads = 1};
    assert_int_equal(ox_exec_new(m, &opts, &e, &err), OX_OK);
    ox_exec_stats s;
    ox_exec_get_stats(e, &s);
    assert_false(s.arena_used);

    ox_rval *in = input(1, 1000, 0);
    ox_rval *out = run1(e, in);
    expect_relu(in, out);
    ox_exec_get_stats(e, &s);
    assert_true(s.arena_used);
    assert_int_equal(s.arena_bytes, 2 * align64(4000));
    assert_int_equal(s.arena_bytes, 8064);
    assert_int_equal(s.arena_outputs, 3);   /* a, b, y */
    assert_int_equal(s.heap_outputs, 0);
    assert_int_equal(s.output_copies, 1);   /* y leaves the arena */
    /* In place: a = Relu(x) cannot (x is the caller's). b = Neg(a) cannot
     * take a's bytes (greedy-by-size gave them to y, live with b at step 2),
     * so a moves onto b's bytes the other way round (free during a's life,
     * steps 0-1); then y = Abs(b) takes b's bytes (b dies there): two slots,
     * and the arena stays the memory plan's two activations. */
    assert_int_equal(s.inplace_slots, 2);
    assert_int_equal(s.plans_built, 1);
    assert_int_equal(s.plan_hits, 0);
    ox_rval_free(out);

    /* Same shape: the plan is reused. */
    out = run1(e, in);
    expect_relu(in, out);
    ox_exec_get_stats(e, &s);
    assert_int_equal(s.plans_built, 1);
    assert_int_equal(s.plan_hits, 1);
    ox_rval_free(out);
    ox_rval_free(in);

    /* New batch: a new plan sized for it: 2 * align64(3 * 4000). */
    in = input(3, 1000, 1);
    out = run1(e, in);
    expect_relu(in, out);
    ox_exec_get_stats(e, &s);
    assert_int_equal(s.plans_built, 2);
    assert_int_equal(s.arena_bytes, 2 * align64(12000));
    ox_rval_free(out);
    ox_rval_free(in);

    /* Back to batch 1: still cached. Then five more shapes evict it
     * (the cache keeps the last 4), so batch 1 is planned again. */
    in = input(1, 1000, 2);
    out = run1(e, in);
    ox_exec_get_stats(e, &s);
    assert_int_equal(s.plans_built, 2);
    assert_int_equal(s.plan_hits, 2);
    assert_int_equal(s.arena_bytes, 8064);
    ox_rval_free(out);
    for (int n = 4; n < 9; n++) {
        ox_rval *in2 = input(n, 1000, n);
        ox_rval *o2 = run1(e, in2);
        expect_relu(in2, o2);
        ox_rval_free(o2);
        ox_rval_free(in2);
    }
    out = run1(e, in);
    expect_relu(in, out);
    ox_exec_get_stats(e, &s);
    assert_int_equal(s.plans_built, 8);
    ox_rval_free(out);
    ox_rval_free(in);
    ox_exec_free(e);
    ox_model_free(m);
}

/* The memplan of the inferred graph gives the same size (the arena is the
 * plan's arena_bytes, graph inputs excluded). */
static void test_chain_matches_memplan(void **state)
{
    (void)state;
    ox_model *m = chain_model(333, false);
    ox_shape_override ov = {.name = "x", .rank = 2, .dims = {5, 333}};
    ox_infer_opts io = {.shapes = &ov, .n_shapes = 1, .reset = true};
    ox_model *cl = ox_model_clone(m);
    assert_int_equal(ox_infer_model(cl, &io, NULL), OX_OK);
    ox_memplan_opts mo;
    ox_memplan_opts_default(&mo);
    mo.include_inputs = false;
    ox_memplan *p = NULL;
    assert_int_equal(ox_memplan_build(cl->graph, &mo, &p, NULL), OX_OK);

    ox_exec *e = NULL;
    assert_int_equal(ox_exec_new(m, NULL, &e, NULL), OX_OK);
    ox_rval *in = input(5, 333, 3);
    ox_rval *out = run1(e, in);
    expect_relu(in, out);
    ox_exec_stats s;
    ox_exec_get_stats(e, &s);
    assert_true(s.arena_used);
    assert_int_equal(s.arena_bytes, p->arena_bytes);
    assert_int_equal(s.arena_bytes, 2 * align64(5 * 333 * 4));
    ox_rval_free(out);
    ox_rval_free(in);
    ox_exec_free(e);
    ox_memplan_free(p);
    ox_model_free(cl);
    ox_model_free(m);
}

/* Reshape returns a view of its input's arena slot, whose bytes the plan
 * may give to a later value: where the plan cannot put the view's slot on
 * its input's bytes (here: Relu -> Neg -> Reshape -> Abs, every way of
 * sharing needs a third region the memory plan did not leave) the executor
 * copies the view (one copy), and the results equal the heap-only run. */
static void test_views_and_no_arena(void **state)
{
    (void)state;
    ox_model *m = chain_model(257, true);
    ox_exec *ea = NULL, *eh = NULL;
    ox_exec_opts oa = {.threads = 2}, oh = {.threads = 2, .no_arena = true};
    assert_int_equal(ox_exec_new(m, &oa, &ea, NULL), OX_OK);
    assert_int_equal(ox_exec_new(m, &oh, &eh, NULL), OX_OK);
    for (int n = 1; n <= 3; n++) {
        ox_rval *in = input(n, 257, n);
        ox_rval *ya = run1(ea, in), *yh = run1(eh, in);
        expect_relu(in, ya);
        assert_int_equal(ya->t->rank, 1);
        assert_true(ox_tensor_equal(ya->t, yh->t));
        ox_exec_stats s;
        ox_exec_get_stats(ea, &s);
        assert_true(s.arena_used);
        /* The view is either kept on its own slot or copied. */
        assert_true(s.arena_copies + s.arena_views >= 1);
        ox_exec_get_stats(eh, &s);
        assert_false(s.arena_used);
        assert_int_equal(s.arena_outputs, 0);
        ox_rval_free(ya);
        ox_rval_free(yh);
        ox_rval_free(in);
    }
    ox_exec_free(ea);
    ox_exec_free(eh);
    ox_model_free(m);
}

/* x[N,W] -> Relu -> Reshape([-1]) -> Abs -> y: the Reshape's slot can sit on
 * the Relu's bytes (arena.c, view_ops), so its view is kept (no copy) and a
 * steady-state run allocates no tensor buffer on the heap while it runs. */
static void test_view_kept_no_alloc(void **state)
{
    (void)state;
    ox_model *m = ox_model_new();
    assert_non_null(m);
    ox_model_set_opset(m, "", 13);
    ox_graph *g = m->graph ? m->graph : ox_graph_new(m, NULL);
    m->graph = g;
    ox_value *x = ox_graph_value(g, "x"), *a = ox_graph_value(g, "a");
    ox_value *shp = ox_graph_value(g, "shp"), *r = ox_graph_value(g, "r");
    ox_value *y = ox_graph_value(g, "y");
    int64_t dims[2] = {-1, 300}, one = 1;
    x->type = ox_type_new_tensor(OX_DT_FLOAT, 2, dims);
    assert_int_equal(ox_graph_add_input(g, x), OX_OK);
    ox_tensor *t = ox_tensor_new(OX_DT_INT64, 1, &one);
    ox_tensor_set_i64(t, 0, -1);
    assert_int_equal(ox_graph_set_initializer(g, shp, t), OX_OK);
    ox_node_new(g, "Relu", "", "relu", 1, &x, 1, &a);
    ox_value *rin[2] = {a, shp};
    ox_node_new(g, "Reshape", "", "reshape", 2, rin, 1, &r);
    ox_node_new(g, "Abs", "", "abs", 1, &r, 1, &y);
    assert_int_equal(ox_graph_add_output(g, y), OX_OK);
    ox_exec *ea = NULL, *eh = NULL;
    ox_exec_opts oa = {.threads = 1}, oh = {.threads = 1, .no_arena = true};
    assert_int_equal(ox_exec_new(m, &oa, &ea, NULL), OX_OK);
    assert_int_equal(ox_exec_new(m, &oh, &eh, NULL), OX_OK);
    for (int run = 0; run < 3; run++) {
        ox_rval *in = input(4, 300, run);
        ox_rval *ya = run1(ea, in), *yh = run1(eh, in);
        expect_relu(in, ya);
        assert_true(ox_tensor_equal(ya->t, yh->t));
        ox_exec_stats s;
        ox_exec_get_stats(ea, &s);
        assert_true(s.arena_used);
        assert_int_equal(s.arena_views, 1);
        assert_int_equal(s.arena_copies, 0);
        assert_int_equal(s.heap_outputs, 0);
        assert_int_equal(s.heap_allocs, 0);
        assert_int_equal(s.output_copies, 1);   /* y leaves the arena for the caller */
        ox_rval_free(ya);
        ox_rval_free(yh);
        ox_rval_free(in);
    }
    ox_exec_free(ea);
    ox_exec_free(eh);
    ox_model_free(m);
}

/* W[3,4] (initializer) -> Transpose -> Wt; x[2,3] -> MatMul(x, Wt^T...) -> y:
 * the Transpose has only constant inputs, so the executor computes it once
 * at plan time; results equal a run without folding. When W is also a graph
 * input (IR < 4 style) it is folded too, and a run that overrides W runs the
 * Transpose again: its result follows the given W. */
static ox_model *fold_model(bool w_is_input)
{
    ox_model *m = ox_model_new();
    assert_non_null(m);
    ox_model_set_opset(m, "", 13);
    ox_graph *g = m->graph ? m->graph : ox_graph_new(m, NULL);
    m->graph = g;
    ox_value *x = ox_graph_value(g, "x"), *w = ox_graph_value(g, "w");
    ox_value *wt = ox_graph_value(g, "wt"), *y = ox_graph_value(g, "y");
    int64_t xd[2] = {2, 4}, wd[2] = {3, 4};
    x->type = ox_type_new_tensor(OX_DT_FLOAT, 2, xd);
    assert_int_equal(ox_graph_add_input(g, x), OX_OK);
    ox_tensor *t = ox_tensor_new(OX_DT_FLOAT, 2, wd);
    float *p = ox_tensor_data(t);
    for (int i = 0; i < 12; i++)
        p[i] = (float)(i % 5) - 2.0f;
    assert_int_equal(ox_graph_set_initializer(g, w, t), OX_OK);
    if (w_is_input) {
        w->type = ox_type_new_tensor(OX_DT_FLOAT, 2, wd);
        assert_int_equal(ox_graph_add_input(g, w), OX_OK);
    }
    ox_node_new(g, "Transpose", "", "tr", 1, &w, 1, &wt);
    ox_value *min[2] = {x, wt};
    ox_node_new(g, "MatMul", "", "mm", 2, min, 1, &y);
    assert_int_equal(ox_graph_add_output(g, y), OX_OK);
    return m;
}

static void test_plan_fold(void **state)
{
    (void)state;
    for (int wi = 0; wi < 2; wi++) {
        ox_model *m = fold_model(wi);
        ox_exec *ef = NULL, *en = NULL;
        ox_exec_opts of = {.threads = 1}, on = {.threads = 1, .no_fold = true};
        assert_int_equal(ox_exec_new(m, &of, &ef, NULL), OX_OK);
        assert_int_equal(ox_exec_new(m, &on, &en, NULL), OX_OK);
        ox_rval *in = input(2, 4, 5);
        ox_rval *yf = run1(ef, in), *yn = run1(en, in);
        assert_true(ox_tensor_equal(yf->t, yn->t));
        /* y[i][j] = sum_k x[i][k] * w[j][k], computed by hand */
        const float *xp = ox_tensor_data(in->t), *yp = ox_tensor_data(yf->t);
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++) {
                float acc = 0;
                for (int k = 0; k < 4; k++)
                    acc += xp[i * 4 + k] * ((float)((j * 4 + k) % 5) - 2.0f);
                assert_true(yp[i * 3 + j] == acc);
            }
        ox_exec_stats s;
        ox_exec_get_stats(ef, &s);
        assert_int_equal(s.folded_nodes, 1);
        ox_exec_get_stats(en, &s);
        assert_int_equal(s.folded_nodes, 0);
        if (wi) {
            /* Override W (input 1) with 2*W: y doubles, in both executors. */
            int64_t wd[2] = {3, 4};
            ox_tensor *w2 = ox_tensor_new(OX_DT_FLOAT, 2, wd);
            float *p = ox_tensor_data(w2);
            for (int i = 0; i < 12; i++)
                p[i] = 2.0f * ((float)(i % 5) - 2.0f);
            ox_rval *ins[2] = {in, ox_rval_tensor(w2)}, *y2f = NULL, *y2n = NULL;
            assert_int_equal(ox_exec_run(ef, 2, ins, 1, &y2f, NULL), OX_OK);
            assert_int_equal(ox_exec_run(en, 2, ins, 1, &y2n, NULL), OX_OK);
            assert_true(ox_tensor_equal(y2f->t, y2n->t));
            const float *a = ox_tensor_data(yf->t), *b = ox_tensor_data(y2f->t);
            for (int i = 0; i < 6; i++)
                assert_true(b[i] == 2.0f * a[i]);
            /* and without the override again: the folded W^T */
            ox_rval *y3 = run1(ef, in);
            assert_true(ox_tensor_equal(y3->t, yf->t));
            ox_rval_free(y3);
            ox_rval_free(y2f);
            ox_rval_free(y2n);
            ox_rval_free(ins[1]);
        }
        ox_rval_free(yf);
        ox_rval_free(yn);
        ox_rval_free(in);
        ox_exec_free(ef);
        ox_exec_free(en);
        ox_model_free(m);
    }
}

/* The shared PyTorch models, both data sets: arena results are byte-equal
 * to heap results and close to the reference outputs. */
static const char *const models[] = {
    "bert_l2_h128_nofold_op13", "gpt2_like_l2_h128_nofold_op13", "mobilenet_v2_op13",
    "shape_chain_cnn_nofold_op13", "shape_chain_cnn_nofold_op17", "squeezenet1_1_op17",
    "torch_transformer_encoder_l4_h256_op17",
};

static void test_shared_models(void **state)
{
    unsetenv("ONNXSCOPE_NO_EW_FUSE");   /* the models as they run by default */
    (void)state;
    const char *shared = getenv("ONNXSCOPE_SHARED");
    if (!shared) {
        printf("skipped: ONNXSCOPE_SHARED is not set\n");
        skip();
    }
    char path[1024];
    int ran = 0;
    for (size_t k = 0; k < sizeof models / sizeof models[0]; k++) {
        snprintf(path, sizeof path, "%s/models/%s/model.onnx", shared, models[k]);
        ox_model *m = NULL;
        ox_error err = {0};
        if (ox_load(path, NULL, &m, &err)) {
            printf("skipped %s: %s\n", models[k], err.msg);
            continue;
        }
        ox_exec *ea = NULL, *eh = NULL;
        ox_exec_opts oa = {.threads = 2}, oh = {.threads = 2, .no_arena = true};
        if (ox_exec_new(m, &oa, &ea, &err) || ox_exec_new(m, &oh, &eh, &err))
            fail_msg("%s: %s", models[k], err.msg);
        const ox_graph *g = m->graph;
        for (int ds = 0; ds < 2; ds++) {
            ox_rval *in[8] = {0}, *oa_[8] = {0}, *oh_[8] = {0};
            assert_true(g->n_inputs <= 8 && g->n_outputs <= 8);
            for (int i = 0; i < g->n_inputs; i++) {
                snprintf(path, sizeof path, "%s/models/%s/test_data_set_%d/input_%d.pb",
                         shared, models[k], ds, i);
                if (ox_testdata_load(path, g->inputs[i]->type, &in[i], NULL, &err))
                    fail_msg("%s: %s", path, err.msg);
            }
            if (ox_exec_run(ea, g->n_inputs, in, g->n_outputs, oa_, &err) ||
                ox_exec_run(eh, g->n_inputs, in, g->n_outputs, oh_, &err))
                fail_msg("%s: %s", models[k], err.msg);
            ox_exec_stats s;
            ox_exec_get_stats(ea, &s);
            printf("%s set %d: arena %lld bytes, %d outputs in the arena, %d on the heap, "
                   "%d view copies, %d slot copies, %d views kept, %d in-place slots, %d folded, %lld heap allocs, "
                   "%d skip copies\n", models[k], ds,
                   (long long)s.arena_bytes, s.arena_outputs, s.heap_outputs, s.arena_copies,
                   s.slot_copies, s.arena_views, s.inplace_slots, s.folded_nodes, (long long)s.heap_allocs,
                   s.skip_copies);
            assert_true(s.arena_used);
            assert_true(s.arena_outputs > 0);
            /* Every model folds its constant-input nodes (weight Transposes,
             * ConstantOfShape, shape constants). No run allocates a tensor
             * buffer except, at most, one per graph output (the caller's:
             * BERT's one-row pooler, whose oneDNN Gemm declines at run
             * time, makes its Tanh output on the heap). Views of arena
             * values (Reshapes of values that live on, shape arithmetic) are
             * copied into their own slots, never onto the heap. */
            assert_true(s.folded_nodes > 0);
            if (s.heap_allocs > g->n_outputs)
                fail_msg("%s: %lld heap allocations in a run", models[k], (long long)s.heap_allocs);
            assert_int_equal(s.arena_copies, 0);
            if (strstr(models[k], "mobilenet") || strstr(models[k], "squeezenet") ||
                strstr(models[k], "gpt2") || strstr(models[k], "encoder"))
                assert_int_equal(s.heap_allocs, 0);
            /* Fused activations hand their value on without a copy: the
             * memory plan sees each oneDNN chain as one node (plan_born). */
            assert_int_equal(s.skip_copies, 0);
            for (int i = 0; i < g->n_outputs; i++) {
                snprintf(path, sizeof path, "%s/models/%s/test_data_set_%d/output_%d.pb",
                         shared, models[k], ds, i);
                ox_rval *ref = NULL;
                if (ox_testdata_load(path, g->outputs[i]->type, &ref, NULL, &err))
                    fail_msg("%s: %s", path, err.msg);
                char why[256];
                assert_true(ox_tensor_equal(oa_[i]->t, oh_[i]->t));
                if (!ox_rval_allclose(oa_[i], ref, 1e-3, 1e-5, why, sizeof why))
                    fail_msg("%s output %d: %s", models[k], i, why);
                ox_rval_free(ref);
                ox_rval_free(oa_[i]);
                ox_rval_free(oh_[i]);
            }
            for (int i = 0; i < g->n_inputs; i++)
                ox_rval_free(in[i]);
            ran++;
        }
        ox_exec_free(ea);
        ox_exec_free(eh);
        ox_model_free(m);
    }
    if (!ran) {
        printf("skipped: no shared model could be loaded\n");
        skip();
    }
}

int main(void)
{
    /* These count slots, copies and in-place moves node by node: the
     * elementwise groups (tests/exec/test_ew_fuse.c) would compute the
     * chains in one pass. */
    setenv("ONNXSCOPE_NO_EW_FUSE", "1", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chain_arena),
        cmocka_unit_test(test_chain_matches_memplan),
        cmocka_unit_test(test_views_and_no_arena),
        cmocka_unit_test(test_view_kept_no_alloc),
        cmocka_unit_test(test_plan_fold),
        cmocka_unit_test(test_shared_models),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
