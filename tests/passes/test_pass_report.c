/* The cost deltas of the pass report (ox_pass_stat: MACs/FLOPs, weight
 * bytes, peak activation memory): expected figures are worked out by hand
 * from the rules of docs/COST.md and the memory planner's greedy placement
 * (64-byte aligned), never read back from the program; unknown dims give
 * unknown, never 0; the printed line. */
#include "fuse_harness.h"

#include "onnxscope/cost.h"

/* x (B,3,8,8) -> Conv(3 -> 4, 3x3, pads 1[, bias]) -> c -> BN(4) -> y.
 * B < 0: an unknown batch dim. */
static ox_model *conv_bn_model(int64_t batch, bool bias)
{
    ox_model *m = fh_model(13);
    int64_t xd[4] = {batch, 3, 8, 8}, wd[4] = {4, 3, 3, 3}, c4 = 4;
    fh_input(m, "x", 4, xd);
    fh_init(m, "w", 4, wd, NULL, -1, 1);
    if (bias)
        fh_init(m, "b", 1, &c4, NULL, -1, 1);
    ox_node *c = fh_node(m, "Conv", "c", "x", "w", bias ? "b" : NULL, NULL);
    int64_t p[4] = {1, 1, 1, 1}, k[2] = {3, 3};
    ox_node_set_attr_ints(c, "pads", 4, p);
    ox_node_set_attr_ints(c, "kernel_shape", 2, k);
    fh_init(m, "s", 1, &c4, NULL, 0.5, 2);
    fh_init(m, "sh", 1, &c4, NULL, -1, 1);
    fh_init(m, "mu", 1, &c4, NULL, -0.5, 0.5);
    fh_init(m, "var", 1, &c4, NULL, 0.2, 3);
    fh_node(m, "BatchNormalization", "y", "c", "s", "sh", "mu", "var", NULL);
    fh_output(m, "y");
    return m;
}

/* Runs only `passes` (level all, target onnx) on m with a report. */
static void run_report(ox_model *m, const char *passes, ox_pass_report *rep)
{
    ox_error err = {0};
    ox_pass_manager *pm = ox_pm_new(OX_LEVEL_ALL, OX_TARGET_ONNX);
    assert_int_equal(ox_infer_model(m, NULL, &err), OX_OK);
    assert_int_equal(ox_pm_only(pm, passes, &err), OX_OK);
    assert_int_equal(ox_pm_run(pm, m, rep, &err), OX_OK);
    ox_pm_free(pm);
}

static void test_conv_bn_deltas(void **state)
{
    (void)state;
    for (int bias = 1; bias >= 0; bias--) {
        ox_model *m = conv_bn_model(1, bias);
        ox_pass_report rep = {0};
        run_report(m, "fuse_conv_bn", &rep);
        const ox_pass_stat *s = ox_pass_report_find(&rep, "fuse_conv_bn");
        assert_non_null(s);
        assert_int_equal(s->rewrites, 1);
        assert_true(s->cost_known);
        /* BatchNormalization costs 2 per element of its input (1*4*8*8 =
         * 256): the fold saves 512 MACs, and as many FLOPs, less the 256
         * bias adds the Conv gains when it had no bias. The Conv's own
         * MACs (256 outputs x 27) do not change. */
        assert_int_equal(s->macs_delta, -512);
        assert_int_equal(s->flops_delta, bias ? -512 : -512 + 256);
        /* BN's four 4-float parameters go (64 B); W is replaced by a
         * folded W of the same size; a bias of 4 floats appears if there
         * was none. */
        assert_int_equal(s->weight_bytes_delta, bias ? -64 : -64 + 16);
        /* Peak (aligned sizes x 768 B, c and y 1024 B): before, c lives
         * with x at the Conv and with y at the BN: 2048 B; after, x and y
         * live together: 1792 B. */
        assert_true(s->peak_known);
        assert_int_equal(s->peak_delta, -256);
        ox_pass_report_free(&rep);
        ox_model_free(m);
    }
}

static void test_unknown_dims_stay_unknown(void **state)
{
    (void)state;
    ox_model *m = conv_bn_model(-1, true);
    ox_pass_report rep = {0};
    run_report(m, "fuse_conv_bn", &rep);
    const ox_pass_stat *s = ox_pass_report_find(&rep, "fuse_conv_bn");
    assert_non_null(s);
    assert_int_equal(s->rewrites, 1);
    /* The batch dim is unknown: the MACs and the peak are not 0 but unknown;
     * the weights do not depend on it. */
    assert_false(s->cost_known);
    assert_false(s->peak_known);
    assert_int_equal(s->weight_bytes_delta, -64);
    char line[256];
    ox_pass_stat_line(s, line, sizeof line);
    assert_string_equal(line, "fuse_conv_bn: 1 fused, -1 nodes, MACs ?, FLOPs ?, "
                              "weights -64 B, peak ?");
    ox_pass_report_free(&rep);
    ox_model_free(m);
}

/* A lone BatchNormalization becomes Mul + Add through a new intermediate
 * value that the pass leaves untyped: the manager types it, so the
 * figures are known: Mul and Add cost 1 per element each, as much as BN. */
static void test_new_values_costed(void **state)
{
    (void)state;
    ox_model *m = fh_model(13);
    int64_t xd[4] = {1, 4, 5, 5}, c4 = 4;
    fh_input(m, "x", 4, xd);
    fh_init(m, "s", 1, &c4, NULL, 0.5, 2);
    fh_init(m, "sh", 1, &c4, NULL, -1, 1);
    fh_init(m, "mu", 1, &c4, NULL, -0.5, 0.5);
    fh_init(m, "var", 1, &c4, NULL, 0.2, 3);
    fh_node(m, "Relu", "r", "x", NULL);
    fh_node(m, "BatchNormalization", "n", "r", "s", "sh", "mu", "var", NULL);
    fh_node(m, "Relu", "y", "n", NULL);
    fh_output(m, "y");
    ox_pass_report rep = {0};
    run_report(m, "fuse_bn_mul_add", &rep);
    const ox_pass_stat *s = ox_pass_report_find(&rep, "fuse_bn_mul_add");
    assert_non_null(s);
    assert_int_equal(s->rewrites, 1);
    assert_int_equal(s->nodes_added - s->nodes_removed, 1);
    assert_true(s->cost_known);
    assert_int_equal(s->macs_delta, 0);
    assert_int_equal(s->flops_delta, 0);
    /* Four 4-float parameters become a 4-float scale and a 4-float shift
     * (per-channel, shaped (4,1,1)). */
    assert_int_equal(s->weight_bytes_delta, -64 + 32);
    assert_true(s->peak_known);
    ox_pass_report_free(&rep);
    ox_model_free(m);
}

/* A pass that changed nothing reports zeros that are known (the truth),
 * and the sum of the deltas of a run is the change of the model's totals
 * (ox_model_cost_compute before and after). */
static void test_totals_add_up(void **state)
{
    (void)state;
    ox_model *m = conv_bn_model(2, false);
    ox_error err = {0};
    assert_int_equal(ox_infer_model(m, NULL, &err), OX_OK);
    ox_model_cost before, after;
    assert_int_equal(ox_model_cost_compute(m, &before, &err), OX_OK);
    ox_pass_report rep = {0};
    run_report(m, "fuse_conv_bn,eliminate_identity,dce", &rep);
    assert_int_equal(ox_model_cost_compute(m, &after, &err), OX_OK);
    int64_t macs = 0, flops = 0, w = 0, peak = 0;
    for (int i = 0; i < rep.n_passes; i++) {
        const ox_pass_stat *s = &rep.passes[i];
        assert_true(s->cost_known && s->peak_known);
        if (!s->rewrites)
            assert_true(!s->macs_delta && !s->flops_delta && !s->weight_bytes_delta &&
                        !s->peak_delta);
        macs += s->macs_delta;
        flops += s->flops_delta;
        w += s->weight_bytes_delta;
        peak += s->peak_delta;
    }
    assert_int_equal(macs, after.macs - before.macs);
    assert_int_equal(flops, after.flops - before.flops);
    assert_int_equal(w, after.weights_bytes - before.weights_bytes);
    assert_int_equal(peak, after.peak_activation_bytes - before.peak_activation_bytes);
    ox_pass_report_free(&rep);
    ox_model_free(m);
}

/* An edit inside a Loop body changes the Loop's cost (trips x body): the
 * Loop is costed again. x (4,16) -> Loop(M = 10) whose body computes
 * Relu(v) twice and adds them: cse merges the Relu pair, saving
 * 10 x 64 compares. */
static void test_body_edit_recosts_owner(void **state)
{
    (void)state;
    ox_model *m = fh_model(13);
    int64_t xd[2] = {4, 16};
    ox_value *x = fh_input(m, "x", 2, xd);
    ox_tensor *t = ox_tensor_new(OX_DT_INT64, 0, NULL);
    ox_tensor_set_i64(t, 0, 10);
    ox_value *mv = ox_graph_value(m->graph, "ten");
    assert_int_equal(ox_graph_set_initializer(m->graph, mv, t), OX_OK);
    ox_graph *b = ox_graph_new(m, m->graph);
    ox_value *i = ox_graph_value(b, "i"), *c = ox_graph_value(b, "cin"),
             *v = ox_graph_value(b, "v");
    ox_graph_add_input(b, i);
    ox_graph_add_input(b, c);
    ox_graph_add_input(b, v);
    ox_value *r[2] = {ox_graph_value(b, "r1"), ox_graph_value(b, "r2")};
    ox_node_new(b, "Relu", "", "r1", 1, &v, 1, &r[0]);
    ox_node_new(b, "Relu", "", "r2", 1, &v, 1, &r[1]);
    ox_value *q = ox_graph_value(b, "q");
    ox_node_new(b, "Add", "", "q", 2, r, 1, &q);
    ox_graph_add_output(b, c);
    ox_graph_add_output(b, q);
    ox_value *in[3] = {mv, NULL, x};
    ox_value *o = ox_graph_value(m->graph, "y");
    ox_node *loop = ox_node_new(m->graph, "Loop", "", "loop", 3, in, 1, &o);
    ox_attr a;
    memset(&a, 0, sizeof a);
    a.name = (char *)"body";
    a.type = OX_ATTR_GRAPH;
    a.g = b;
    assert_non_null(ox_node_set_attr(loop, &a));
    ox_graph_free(b);
    fh_output(m, "y");
    ox_pass_report rep = {0};
    run_report(m, "cse", &rep);
    const ox_pass_stat *s = ox_pass_report_find(&rep, "cse");
    assert_non_null(s);
    assert_int_equal(s->rewrites, 1);
    assert_int_equal(s->nodes_removed, 1);
    assert_true(s->cost_known);
    assert_int_equal(s->macs_delta, -640);
    assert_int_equal(s->flops_delta, -640);
    ox_pass_report_free(&rep);
    ox_model_free(m);
}

static void test_stat_line(void **state)
{
    (void)state;
    ox_pass_stat s = {.name = "fuse_conv_bn", .category = OX_PASS_FUSION, .rewrites = 53,
                      .nodes_removed = 53, .macs_delta = -1200000, .flops_delta = -2400000,
                      .cost_known = true, .weight_bytes_delta = -13 * 1024, .peak_known = true};
    char line[256], b[32];
    assert_string_equal(ox_pass_stat_line(&s, line, sizeof line),
                        "fuse_conv_bn: 53 fused, -53 nodes, MACs -1.20M, FLOPs -2.40M, "
                        "weights -13.00 KiB, peak 0 B");
    s = (ox_pass_stat){.name = "constant_to_initializer", .category = OX_PASS_FOLDING,
                       .rewrites = 2, .nodes_removed = 2, .nodes_added = 3, .macs_delta = 640,
                       .flops_delta = 7, .cost_known = true, .weight_bytes_delta = 48,
                       .peak_delta = 5, .peak_known = false};
    assert_string_equal(ox_pass_stat_line(&s, line, sizeof line),
                        "constant_to_initializer: 2 folded, +1 nodes, MACs +640, FLOPs +7, "
                        "weights +48 B, peak ?");
    assert_string_equal(ox_fmt_delta(0, true, false, b, sizeof b), "0");
    assert_string_equal(ox_fmt_delta(-5, false, true, b, sizeof b), "?");
    assert_string_equal(ox_fmt_delta(-1536, true, true, b, sizeof b), "-1.50 KiB");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv_bn_deltas),
        cmocka_unit_test(test_unknown_dims_stay_unknown),
        cmocka_unit_test(test_new_values_costed),
        cmocka_unit_test(test_totals_add_up),
        cmocka_unit_test(test_body_edit_recosts_owner),
        cmocka_unit_test(test_stat_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
