/* ox_pm_bisect on a pipeline with a deliberately wrong rewrite: a test-only
 * pass (added with ox_pm_add_pass) drops every Abs node, which is right for
 * Abs(Relu(x)) and wrong for Abs(Neg(x)). Bisect must name the pass, its
 * second rewrite and the Abs node that rewrite removed. */
#include "fuse_harness.h"

#include "onnxscope/bisect.h"

/* Makes the readers of each Abs read its input, one rewrite per Abs, in
 * graph order; honours the rewrite budget. */
static ox_status drop_abs(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    (void)err;
    for (int i = 0; i < g->n_nodes && ox_pass_ctx_may_rewrite(c); i++) {
        ox_node *n = g->nodes[i];
        if (strcmp(n->op_type, "Abs") || n->n_inputs != 1 || n->n_outputs != 1)
            continue;
        ox_value_replace_uses(n->outputs[0], n->inputs[0]);
        ox_node_remove(n);
        i--;
        ox_pass_ctx_rewrote(c);
    }
    return OX_OK;
}

static const ox_pass drop_abs_pass = {
    .name = "test_drop_abs", .summary = "drop Abs (wrong after Neg)",
    .category = OX_PASS_ELIMINATION, .level = OX_LEVEL_BASIC, .single_rewrite = true,
    .run = drop_abs,
};
/* The same without single steps: bisect can name the pass only. */
static const ox_pass drop_abs_all = {
    .name = "test_drop_abs_all", .summary = "drop Abs, all at once",
    .category = OX_PASS_ELIMINATION, .level = OX_LEVEL_BASIC, .run = drop_abs,
};

/* x (2,8) -> Relu r -> Abs abs1 (harmless) -> Neg neg -> Abs abs2 (its
 * removal changes the result) -> Sigmoid y. */
static ox_model *model(void)
{
    ox_model *m = fh_model(13);
    int64_t d[2] = {2, 8};
    fh_input(m, "x", 2, d);
    fh_node(m, "Relu", "r", "x", NULL);
    fh_node(m, "Abs", "abs1", "r", NULL);
    fh_node(m, "Neg", "neg", "abs1", NULL);
    fh_node(m, "Abs", "abs2", "neg", NULL);
    fh_node(m, "Sigmoid", "y", "abs2", NULL);
    fh_output(m, "y");
    ox_error err = {0};
    assert_int_equal(ox_infer_model(m, NULL, &err), OX_OK);
    return m;
}

static void test_names_pass_rewrite_and_node(void **state)
{
    (void)state;
    ox_model *m = model();
    ox_pass_manager *pm = ox_pm_new(OX_LEVEL_BASIC, OX_TARGET_ONNX);
    /* In the middle of the pipeline, so that passes run after it too. */
    assert_true(ox_pm_add_pass(pm, &drop_abs_pass, 5) == 5);
    assert_int_equal(ox_pm_add_pass(pm, &drop_abs_pass, -1), -1);   /* a name twice */
    ox_bisect_opts o = {.n_sets = 2};
    ox_bisect_result r;
    ox_error err = {0};
    assert_int_equal(ox_pm_bisect(pm, m, &o, &r, &err), OX_OK);
    assert_true(r.found);
    assert_string_equal(r.pass, "test_drop_abs");
    assert_int_equal(r.pass_index, 5);
    assert_int_equal(r.round, 1);
    assert_int_equal(r.pass_rewrites, 2);
    assert_int_equal(r.rewrite, 2);
    assert_true(r.max_abs_err > 0);
    /* The second rewrite removed abs2 and made y's node read neg. */
    int removed = 0, edited = 0;
    for (int i = 0; i < r.n_nodes; i++) {
        if (r.nodes[i].change == OX_BISECT_REMOVED) {
            assert_string_equal(r.nodes[i].name, "abs2");
            assert_string_equal(r.nodes[i].op_type, "Abs");
            removed++;
        } else {
            assert_int_equal(r.nodes[i].change, OX_BISECT_EDITED);
            assert_string_equal(r.nodes[i].name, "y");
            edited++;
        }
    }
    assert_int_equal(removed, 1);
    assert_int_equal(edited, 1);
    ox_bisect_result_free(&r);
    /* The model itself was not touched. */
    assert_int_equal(fh_count(m, "Abs"), 2);
    ox_pm_free(pm);
    ox_model_free(m);
}

static void test_whole_pass_when_no_single_steps(void **state)
{
    (void)state;
    ox_model *m = model();
    ox_pass_manager *pm = ox_pm_new(OX_LEVEL_BASIC, OX_TARGET_ONNX);
    assert_true(ox_pm_add_pass(pm, &drop_abs_all, -1) >= 0);
    ox_bisect_opts o = {.n_sets = 1};
    ox_bisect_result r;
    ox_error err = {0};
    assert_int_equal(ox_pm_bisect(pm, m, &o, &r, &err), OX_OK);
    assert_true(r.found);
    assert_string_equal(r.pass, "test_drop_abs_all");
    assert_int_equal(r.rewrite, 0);
    int abs_removed = 0;
    for (int i = 0; i < r.n_nodes; i++)
        abs_removed += r.nodes[i].change == OX_BISECT_REMOVED &&
                       !strcmp(r.nodes[i].op_type, "Abs");
    assert_int_equal(abs_removed, 2);
    ox_bisect_result_free(&r);
    ox_pm_free(pm);
    ox_model_free(m);
}

static void test_correct_pipeline_finds_nothing(void **state)
{
    (void)state;
    ox_model *m = model();
    ox_pass_manager *pm = ox_pm_new(OX_LEVEL_ALL, OX_TARGET_ORT);
    ox_bisect_opts o = {.n_sets = 2};
    ox_bisect_result r;
    ox_error err = {0};
    assert_int_equal(ox_pm_bisect(pm, m, &o, &r, &err), OX_OK);
    assert_false(r.found);
    assert_null(r.pass);
    assert_int_equal(r.n_nodes, 0);
    assert_true(r.why[0] != 0);
    ox_bisect_result_free(&r);
    /* Bad arguments are errors, not crashes. */
    assert_int_equal(ox_pm_bisect(pm, NULL, &o, &r, &err), OX_EINVAL);
    assert_int_equal(ox_pm_bisect(NULL, m, &o, &r, &err), OX_EINVAL);
    ox_pm_free(pm);
    ox_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_pass_rewrite_and_node),
        cmocka_unit_test(test_whole_pass_when_no_single_steps),
        cmocka_unit_test(test_correct_pipeline_finds_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
