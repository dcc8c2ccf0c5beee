/* The pass pipeline on very long chains (issue 11): x -> Relu -> a million
 * Identity (then no-op Cast) nodes -> y must optimize to the Relu alone. Quadratic spots in the passes or the manager would run for
 * an hour; the meson timeout is the only clock (no timing assertion).
 * Identity goes by eliminate_identity, the Cast by eliminate_noop (which
 * needs inferred types). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "onnxscope/infer.h"
#include "onnxscope/passes.h"

/* ASan triples the memory of the IR: a shorter chain there still catches
 * quadratic behaviour (100k nodes would take minutes), in bounded memory. */
#if defined(__SANITIZE_ADDRESS__)
#define CHAIN_NODES 100000
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CHAIN_NODES 100000
#endif
#endif
#ifndef CHAIN_NODES
#define CHAIN_NODES 1000000
#endif

static ox_model *chain(const char *op, int n)
{
    ox_model *m = ox_model_new();
    assert_non_null(m);
    ox_model_set_opset(m, "", 13);
    m->ir_version = 7;
    ox_graph *g = m->graph;
    int64_t d[2] = {1, 16};
    ox_value *x = ox_graph_value(g, "x");
    x->type = ox_type_new_tensor(OX_DT_FLOAT, 2, d);
    ox_graph_add_input(g, x);
    char name[32];
    ox_value *r = ox_graph_value(g, "r");
    assert_non_null(ox_node_new(g, "Relu", "", "relu", 1, &x, 1, &r));
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, i == n - 1 ? "y" : "v%d", i);
        ox_value *o = ox_graph_value(g, name);
        snprintf(name, sizeof name, "n%d", i);
        ox_node *nd = ox_node_new(g, op, "", name, 1, &r, 1, &o);
        assert_non_null(nd);
        if (!strcmp(op, "Cast"))
            ox_node_set_attr_i(nd, "to", OX_DT_FLOAT);
        r = o;
    }
    ox_graph_add_output(g, r);
    return m;
}

static void optimize_chain(const char *op)
{
    ox_model *m = chain(op, CHAIN_NODES);
    assert_int_equal(m->graph->n_nodes, CHAIN_NODES + 1);
    ox_pass_manager *pm = ox_pm_new(OX_LEVEL_BASIC, OX_TARGET_ONNX);
    ox_pass_report rep = {0};
    ox_error err = {0};
    /* With a report: the manager's snapshots and diffs are part of it. */
    assert_int_equal(ox_pm_run(pm, m, &rep, &err), OX_OK);
    assert_int_equal(rep.nodes_before, CHAIN_NODES + 1);
    assert_int_equal(rep.nodes_after, 1);
    assert_int_equal(rep.n_removed_ids, CHAIN_NODES);
    ox_graph *g = m->graph;
    assert_int_equal(g->n_nodes, 1);
    assert_string_equal(g->nodes[0]->op_type, "Relu");
    assert_int_equal(g->n_outputs, 1);
    assert_string_equal(g->outputs[0]->name, "y");    /* the output keeps its name */
    assert_ptr_equal(g->outputs[0]->producer, g->nodes[0]);
    assert_int_equal(g->n_values, 2);                 /* x and y: the rest are gone */
    printf("%s chain of %d nodes: %d -> %d nodes in %d round(s)\n", op, CHAIN_NODES,
           rep.nodes_before, rep.nodes_after, rep.iterations);
    ox_pass_report_free(&rep);
    ox_pm_free(pm);
    ox_model_free(m);
}

static void test_identity_chain(void **state)
{
    (void)state;
    optimize_chain("Identity");
}

static void test_cast_chain(void **state)
{
    (void)state;
    optimize_chain("Cast");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_identity_chain),
        cmocka_unit_test(test_cast_chain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
