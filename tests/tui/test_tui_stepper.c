/* Unit tests of the TUI's fusion stepper (src/tui/tui_stepper.c) without a
 * terminal: one rewrite per step, passes with no match skipped, the rest of
 * a pass, undo (and its memory bound), idle probing, node marks, and that
 * stepping to the end reaches the same graph as running the pipeline. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "onnxscope/passes.h"
#include "onnxscope/tensor.h"
#include "tui/tui_stepper.h"

static ox_node *op(ox_graph *g, const char *type, const char *name, const char *a,
                   const char *b, const char *out)
{
    ox_value *in[2] = {a ? ox_graph_value(g, a) : NULL, b ? ox_graph_value(g, b) : NULL};
    ox_value *o = ox_graph_value(g, out);
    return ox_node_new(g, type, "", name, b ? 2 : a ? 1 : 0, in, 1, &o);
}

/* The model of tests/tui/gen_step_model.c: Constant, two Identity, a
 * Log(Softmax) and a MatMul + Add. */
static ox_model *model(void)
{
    ox_model *m = ox_model_new();
    assert_non_null(m);
    m->ir_version = 8;
    ox_model_set_opset(m, "", 13);
    ox_graph *g = m->graph;
    int64_t xd[2] = {2, 8}, wd[2] = {8, 4}, bd = 4, yd[2] = {2, 4};
    ox_value *x = ox_graph_value(g, "x");
    x->type = ox_type_new_tensor(OX_DT_FLOAT, 2, xd);
    ox_graph_add_input(g, x);
    ox_tensor *w = ox_tensor_new(OX_DT_FLOAT, 2, wd);
    ox_tensor *bias = ox_tensor_new(OX_DT_FLOAT, 1, &bd);
    assert_int_equal(ox_graph_set_initializer(g, ox_graph_value(g, "W"), w), OX_OK);
    ox_node *c = op(g, "Constant", "bias_const", NULL, NULL, "bias");
    assert_non_null(ox_node_set_attr_t(c, "value", bias));
    assert_non_null(op(g, "Identity", "id_in", "x", NULL, "x_id"));
    ox_node *sm = op(g, "Softmax", "softmax", "x_id", NULL, "attn_probs");
    ox_node_set_attr_i(sm, "axis", -1);
    assert_non_null(op(g, "Log", "log", "attn_probs", NULL, "logp"));
    assert_non_null(op(g, "MatMul", "matmul", "logp", "W", "mm"));
    assert_non_null(op(g, "Add", "add_bias", "mm", "bias", "sum"));
    assert_non_null(op(g, "Identity", "id_out", "sum", NULL, "y"));
    ox_value *y = ox_graph_value(g, "y");
    y->type = ox_type_new_tensor(OX_DT_FLOAT, 2, yd);
    ox_graph_add_output(g, y);
    assert_int_equal(ox_graph_toposort(g, NULL), OX_OK);
    return m;
}

static int pass_index(const ox_pass_manager *pm, const char *name)
{
    for (int i = 0; i < ox_pm_count(pm); i++)
        if (!strcmp(ox_pm_pass(pm, i)->name, name))
            return i;
    fail_msg("no pass %s", name);
    return -1;
}

static const char *step_name(tui_stepper *s, ox_pass_manager *pm, bool rest, tui_step_info *in)
{
    ox_error err = {0};
    assert_int_equal(tui_stepper_step(s, pm, rest, in, &err), OX_OK);
    return in->pass >= 0 ? ox_pm_pass(pm, in->pass)->name : "";
}

static int count_op(const ox_model *m, const char *op_type)
{
    int n = 0;
    for (int i = 0; i < m->graph->n_nodes; i++)
        n += !strcmp(m->graph->nodes[i]->op_type, op_type);
    return n;
}

static void test_one_rewrite_per_step(void **state)
{
    (void)state;
    ox_model *m = model();
    ox_pass_manager *pm = ox_pm_new(OX_LEVEL_BASIC, OX_TARGET_ONNX);
    tui_stepper s;
    tui_stepper_init(&s, m);
    tui_step_info in;
    assert_string_equal(step_name(&s, pm, false, &in), "constant_to_initializer");
    assert_int_equal(in.first, 1);
    assert_int_equal(in.n_skipped, 0);
    assert_true(s.cur != m);                       /* the original is never edited */
    assert_int_equal(m->graph->n_nodes, 7);
    assert_int_equal(s.cur->graph->n_nodes, 6);
    /* The Constant pass has no second match: skipped with the two folding
     * passes after it; one Identity goes, not both. */
    assert_string_equal(step_name(&s, pm, false, &in), "eliminate_identity");
    assert_int_equal(in.n_skipped, 3);
    assert_int_equal(in.skipped[0], pass_index(pm, "constant_to_initializer"));
    assert_int_equal(tui_stepper_match(&s, pass_index(pm, "constant_folding")), -1); /* model changed */
    assert_int_equal(in.first, 1);
    assert_int_equal(count_op(s.cur, "Identity"), 1);
    assert_string_equal(step_name(&s, pm, false, &in), "eliminate_identity");
    assert_int_equal(in.first, 2);
    assert_int_equal(count_op(s.cur, "Identity"), 0);
    /* The fusion adds a node: marked '+'; the model before still has its parts. */
    assert_string_equal(step_name(&s, pm, false, &in), "fuse_log_softmax");
    assert_true(in.n_skipped >= 1);
    int plus = 0;
    for (int i = 0; i < s.cur->graph->n_nodes; i++)
        if (tui_stepper_mark(&s, s.cur->graph->nodes[i]) == '+') {
            plus++;
            assert_string_equal(s.cur->graph->nodes[i]->op_type, "LogSoftmax");
        }
    assert_int_equal(plus, 1);
    assert_int_equal(s.rep.n_removed_ids, 2);
    const ox_node *gone = tui_stepper_find_id(tui_stepper_before(&s), s.rep.removed_ids[0]);
    assert_non_null(gone);
    assert_true(!strcmp(gone->op_type, "Softmax") || !strcmp(gone->op_type, "Log"));
    const tui_pass_total *pt = &s.totals[pass_index(pm, "eliminate_identity")];
    assert_int_equal(pt->rewrites, 2);
    assert_int_equal(pt->nodes_removed, 2);
    tui_stepper_free(&s);
    ox_pm_free(pm);
    ox_model_free(m);
}

static void test_rest_undo_reset(void **state)
{
    (void)state;
    ox_model *m = model();
    ox_pass_manager *pm = ox_pm_new(OX_LEVEL_BASIC, OX_TARGET_ONNX);
    tui_stepper s;
    tui_stepper_init(&s, m);
    tui_step_info in;
    assert_false(tui_stepper_undo(&s));            /* nothing yet */
    step_name(&s, pm, false, &in);                 /* the Constant */
    assert_string_equal(step_name(&s, pm, true, &in), "eliminate_identity");
    assert_true(in.whole);
    assert_int_equal(in.first, 1);
    assert_int_equal(in.last, 2);
    assert_int_equal(count_op(s.cur, "Identity"), 0);
    /* S moves on: the next pass is looked at first. */
    assert_int_equal(s.cur_pass, pass_index(pm, "eliminate_identity") + 1);
    ox_model *after_rest = s.cur;
    assert_true(tui_stepper_undo(&s));
    assert_int_equal(count_op(s.cur, "Identity"), 2);
    assert_int_equal(s.totals[pass_index(pm, "eliminate_identity")].rewrites, 0);
    assert_true(s.cur != after_rest);
    assert_true(tui_stepper_reset(&s));
    assert_ptr_equal(s.cur, m);
    assert_true(tui_stepper_undo(&s));             /* the reset is undone */
    assert_int_equal(s.cur->graph->n_nodes, 6);
    assert_true(tui_stepper_undo(&s));
    assert_ptr_equal(s.cur, m);
    assert_false(tui_stepper_undo(&s));
    tui_stepper_free(&s);
    ox_pm_free(pm);
    ox_model_free(m);
}

/* Stepping to the end gives what one pipeline run gives. */
static void test_steps_reach_the_pipeline_result(void **state)
{
    (void)state;
    ox_model *m = model();
    ox_pass_manager *pm = ox_pm_new(OX_LEVEL_BASIC, OX_TARGET_ONNX);
    tui_stepper s;
    tui_stepper_init(&s, m);
    tui_step_info in;
    int steps = 0;
    for (;;) {
        step_name(&s, pm, false, &in);
        if (in.fixed_point)
            break;
        assert_true(++steps < 50);
    }
    assert_int_equal(steps, 5);   /* Constant, 2 Identity, LogSoftmax, Gemm */
    ox_model *ref = ox_model_clone(m);
    assert_int_equal(ox_pm_run(pm, ref, NULL, NULL), OX_OK);
    assert_int_equal(s.cur->graph->n_nodes, ref->graph->n_nodes);
    assert_int_equal(count_op(s.cur, "Gemm"), count_op(ref, "Gemm"));
    assert_int_equal(count_op(s.cur, "LogSoftmax"), 1);
    /* Every enabled pass is now known to have no match. */
    for (int i = 0; i < ox_pm_count(pm); i++)
        if (ox_pm_enabled(pm, i))
            assert_int_equal(tui_stepper_match(&s, i), 0);
    ox_model_free(ref);
    tui_stepper_free(&s);
    ox_pm_free(pm);
    ox_model_free(m);
}

static void test_probe_and_undo_bound(void **state)
{
    (void)state;
    ox_model *m = model();
    ox_pass_manager *pm = ox_pm_new(OX_LEVEL_BASIC, OX_TARGET_ONNX);
    tui_stepper s;
    tui_stepper_init(&s, m);
    int probes = 0;
    while (tui_stepper_probe_pending(&s, pm)) {
        assert_true(tui_stepper_probe_one(&s, pm));
        assert_true(++probes <= ox_pm_count(pm));
    }
    assert_int_equal(m->graph->n_nodes, 7);        /* probes run on a copy */
    assert_int_equal(tui_stepper_match(&s, pass_index(pm, "constant_to_initializer")), 1);
    assert_int_equal(tui_stepper_match(&s, pass_index(pm, "eliminate_identity")), 1);
    assert_int_equal(tui_stepper_match(&s, pass_index(pm, "eliminate_dropout")), 0);
    assert_int_equal(tui_stepper_match(&s, pass_index(pm, "fuse_conv_bn")), 0);
    /* A large model is not probed (keys would wait). */
    s.probe_max_nodes = 3;
    tui_stepper_touch(&s);
    assert_false(tui_stepper_probe_pending(&s, pm));
    /* At most two undo entries. */
    s.max_undo = 2;
    tui_step_info in;
    for (int k = 0; k < 4; k++)
        step_name(&s, pm, false, &in);
    assert_int_equal(s.n_undo, 2);
    assert_int_equal(s.undo_dropped, 2);
    assert_true(tui_stepper_undo(&s));
    assert_true(tui_stepper_undo(&s));
    assert_false(tui_stepper_undo(&s));
    assert_int_equal(s.cur->graph->n_nodes, 5);    /* after the first two steps */
    tui_stepper_free(&s);
    ox_pm_free(pm);
    ox_model_free(m);
}

static void test_apply_all_then_step(void **state)
{
    (void)state;
    ox_model *m = model();
    ox_pass_manager *pm = ox_pm_new(OX_LEVEL_BASIC, OX_TARGET_ONNX);
    tui_stepper s;
    tui_stepper_init(&s, m);
    assert_int_equal(tui_stepper_apply_all(&s, pm, NULL), OX_OK);
    assert_int_equal(s.totals[pass_index(pm, "eliminate_identity")].nodes_removed, 2);
    assert_ptr_equal(tui_stepper_before(&s), m);
    tui_step_info in;
    step_name(&s, pm, false, &in);
    assert_true(in.fixed_point);                   /* nothing left after a full run */
    assert_true(tui_stepper_undo(&s));
    assert_ptr_equal(s.cur, m);
    tui_stepper_free(&s);
    ox_pm_free(pm);
    ox_model_free(m);
}

/* Steps to the end (the third one an S); records (pass, first, last,
 * skipped) per step. */
static int run_seq(bool large, int seq[16][4])
{
    ox_model *m = model();
    ox_pass_manager *pm = ox_pm_new(OX_LEVEL_BASIC, OX_TARGET_ONNX);
    tui_stepper s;
    tui_stepper_init(&s, m);
    if (large)
        s.probe_max_nodes = 0;   /* every model counts as large */
    tui_step_info in;
    int n = 0;
    for (;;) {
        step_name(&s, pm, n == 2, &in);
        if (in.fixed_point)
            break;
        assert_true(n < 16);
        /* a step redone with a report has a complete one */
        assert_true(s.have_rep && s.rep.n_touched + s.rep.n_removed_ids > 0);
        seq[n][0] = in.pass;
        seq[n][1] = in.first;
        seq[n][2] = in.last;
        seq[n][3] = in.n_skipped;
        n++;
    }
    tui_stepper_free(&s);
    ox_pm_free(pm);
    ox_model_free(m);
    return n;
}

/* The large-model path (passes not known to match are tried without a
 * report first, the step redone with one) takes the same steps. */
static void test_large_model_path_same_steps(void **state)
{
    (void)state;
    int small[16][4], large[16][4];
    int n = run_seq(false, small);
    assert_int_equal(run_seq(true, large), n);
    assert_true(n >= 4);
    for (int k = 0; k < n; k++)
        for (int j = 0; j < 4; j++)
            assert_int_equal(small[k][j], large[k][j]);
}

static void *search_thread(void *arg)
{
    tui_stepper_search_run(arg, NULL, NULL);
    return NULL;
}

/* The TUI's worker path: begin, run in another thread, end; the stepper
 * is untouched until end, and the steps are those of tui_stepper_step;
 * apply-all in two halves gives the pipeline's result. */
static void test_search_in_a_thread(void **state)
{
    (void)state;
    ox_model *m = model();
    ox_pass_manager *pm = ox_pm_new(OX_LEVEL_BASIC, OX_TARGET_ONNX);
    tui_stepper s;
    tui_stepper_init(&s, m);
    static const char *const expect[] = {"constant_to_initializer", "eliminate_identity",
                                         "eliminate_identity", "fuse_log_softmax"};
    for (int k = 0; k < 4; k++) {
        tui_step_search q;
        ox_error err = {0};
        assert_int_equal(tui_stepper_search_begin(&s, pm, false, &q, &err), OX_OK);
        ox_model *before = s.cur;
        int steps = s.steps;
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, search_thread, &q), 0);
        pthread_join(th, NULL);
        assert_ptr_equal(s.cur, before);          /* nothing committed by run */
        assert_int_equal(s.steps, steps);
        tui_step_info in;
        assert_int_equal(tui_stepper_search_end(&s, &q, &in, &err), OX_OK);
        assert_string_equal(ox_pm_pass(pm, in.pass)->name, expect[k]);
        assert_int_equal(s.steps, steps + 1);
    }
    /* A search discarded (Esc on an abandoned job) leaves no trace. */
    tui_step_search q;
    ox_error err = {0};
    assert_int_equal(tui_stepper_search_begin(&s, pm, false, &q, &err), OX_OK);
    tui_stepper_search_run(&q, NULL, NULL);
    int steps = s.steps;
    tui_stepper_search_free(&q);
    assert_int_equal(s.steps, steps);
    /* Apply-all: a copy run elsewhere, then the commit half. */
    ox_model *c = ox_model_clone(m);
    ox_pass_report rep = {0};
    assert_int_equal(ox_pm_run_cb(pm, c, &rep, NULL, NULL, &err), OX_OK);
    int n_after = c->graph->n_nodes;
    tui_stepper_apply_all_commit(&s, pm, c, &rep);
    assert_ptr_equal(s.cur, c);
    assert_int_equal(s.cur->graph->n_nodes, n_after);
    assert_true(s.from_orig);
    tui_stepper_free(&s);
    ox_pm_free(pm);
    ox_model_free(m);
}

static bool cancel_at_second(void *ctx, int pass, int round)
{
    (void)pass;
    (void)round;
    return ++*(int *)ctx < 2;
}

/* ox_pm_run_cb: called per pass, stops when asked with OX_ECANCELLED. */
static void test_run_cb_cancels(void **state)
{
    (void)state;
    ox_model *m = model();
    ox_pass_manager *pm = ox_pm_new(OX_LEVEL_BASIC, OX_TARGET_ONNX);
    int calls = 0;
    ox_error err = {0};
    assert_int_equal(ox_pm_run_cb(pm, m, NULL, cancel_at_second, &calls, &err), OX_ECANCELLED);
    assert_int_equal(calls, 2);
    ox_pm_free(pm);
    ox_model_free(m);
}

static bool stop_after_one(void *ctx, int pass, int tried)
{
    (void)pass;
    ++*(int *)ctx;
    return tried < 1;
}

/* The TUI's Esc: a search stopped between passes keeps cur and what it
 * learnt. */
static void test_stop_between_tries(void **state)
{
    (void)state;
    ox_model *m = model();
    ox_pass_manager *pm = ox_pm_new(OX_LEVEL_BASIC, OX_TARGET_ONNX);
    tui_stepper s;
    tui_stepper_init(&s, m);
    tui_step_info in;
    step_name(&s, pm, false, &in);                 /* the Constant */
    ox_model *before = s.cur;
    int calls = 0;
    assert_int_equal(tui_stepper_step_cb(&s, pm, false, stop_after_one, &calls, &in, NULL), OX_OK);
    assert_true(in.stopped);
    assert_int_equal(calls, 2);
    assert_int_equal(in.tried, 1);
    assert_int_equal(in.pass, -1);
    assert_ptr_equal(s.cur, before);
    assert_int_equal(s.cur->graph->n_nodes, 6);
    assert_int_equal(tui_stepper_match(&s, pass_index(pm, "constant_to_initializer")), 0);
    /* The next search skips what was learnt and goes on. */
    assert_string_equal(step_name(&s, pm, false, &in), "eliminate_identity");
    assert_int_equal(in.skipped[0], pass_index(pm, "constant_to_initializer"));
    tui_stepper_free(&s);
    ox_pm_free(pm);
    ox_model_free(m);
}

/* A pass outside the library that ignores the rewrite budget: marks every
 * Identity node with an attribute, one rewrite each. */
static ox_status mark_identities(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    (void)err;
    for (int i = 0; i < g->n_nodes; i++)
        if (!strcmp(g->nodes[i]->op_type, "Identity") && !ox_node_attr(g->nodes[i], "seen")) {
            ox_node_set_attr_i(g->nodes[i], "seen", 1);
            ox_pass_ctx_rewrote(c);
        }
    return OX_OK;
}

/* `s` on a pass without single_rewrite runs it whole and says so. */
static void test_pass_without_single_rewrite(void **state)
{
    (void)state;
    ox_model *m = model();
    ox_pass_manager *pm = ox_pm_new(OX_LEVEL_BASIC, OX_TARGET_ONNX);
    static const ox_pass mark = {"mark_identities", "test: mark Identity nodes",
                                 OX_PASS_CONVERSION, OX_TARGET_ONNX, OX_LEVEL_BASIC, false,
                                 mark_identities};
    int at = ox_pm_add_pass(pm, &mark, 0);
    assert_int_equal(at, 0);
    assert_int_equal(ox_pm_only(pm, "mark_identities", NULL), OX_OK);
    tui_stepper s;
    tui_stepper_init(&s, m);
    tui_step_info in;
    assert_string_equal(step_name(&s, pm, false, &in), "mark_identities");
    assert_true(in.no_single);
    assert_int_equal(in.first, 1);
    assert_int_equal(in.last, 2);                 /* both Identity nodes in one step */
    assert_int_equal(s.totals[at].nodes_edited, 2);
    assert_int_equal(s.cur_pass, at + 1);         /* a whole pass moves the stepper on */
    step_name(&s, pm, false, &in);
    assert_true(in.fixed_point);
    tui_stepper_free(&s);
    ox_pm_free(pm);
    ox_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_rewrite_per_step),
        cmocka_unit_test(test_rest_undo_reset),
        cmocka_unit_test(test_steps_reach_the_pipeline_result),
        cmocka_unit_test(test_probe_and_undo_bound),
        cmocka_unit_test(test_apply_all_then_step),
        cmocka_unit_test(test_stop_between_tries),
        cmocka_unit_test(test_pass_without_single_rewrite),
        cmocka_unit_test(test_large_model_path_same_steps),
        cmocka_unit_test(test_search_in_a_thread),
        cmocka_unit_test(test_run_cb_cancels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
