/* The pass helpers that keep passes linear (src/passes/pass_util.c): a
 * dropped node or a rewired input leaves its use record on a widely read
 * value until the flush, which must leave exactly the records a
 * recomputation gives (also for a reader rewired away and back again), and
 * a shared constant whose last reader went must go at the flush. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "onnxscope/tensor.h"
#include "passes/pass_internal.h"

#define READERS 20  /* more than the 16 uses below which records are exact */

static ox_value *scalar(ox_graph *g, const char *name, float v)
{
    ox_tensor *t = ox_tensor_new(OX_DT_FLOAT, 0, NULL);
    assert_non_null(t);
    ox_tensor_set_f64(t, 0, v);
    ox_value *c = ox_graph_value(g, name);
    assert_int_equal(ox_graph_set_initializer(g, c, t), OX_OK);
    return c;
}

/* x + w read by READERS Add nodes, each output a graph output. */
static ox_model *fan_out(ox_node **adds, ox_value **w, ox_value **w2)
{
    ox_model *m = ox_model_new();
    assert_non_null(m);
    ox_model_set_opset(m, "", 13);
    m->ir_version = 7;
    ox_graph *g = m->graph;
    int64_t d[1] = {4};
    ox_value *x = ox_graph_value(g, "x");
    x->type = ox_type_new_tensor(OX_DT_FLOAT, 1, d);
    ox_graph_add_input(g, x);
    *w = scalar(g, "w", 1);
    *w2 = scalar(g, "w2", 2);
    for (int i = 0; i < READERS; i++) {
        char name[16];
        snprintf(name, sizeof name, "y%d", i);
        ox_value *y = ox_graph_value(g, name), *in[2] = {x, *w};
        adds[i] = ox_node_new(g, "Add", "", name, 2, in, 1, &y);
        assert_non_null(adds[i]);
        ox_graph_add_output(g, y);
    }
    return m;
}

/* v's records are exactly the node inputs of g that read it, once each. */
static void assert_uses_exact(ox_graph *g, ox_value *v)
{
    int want = 0;
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i]->n_inputs; k++)
            if (g->nodes[i]->inputs[k] == v) {
                want++;
                int found = 0;
                for (int u = 0; u < v->n_uses; u++)
                    found += v->uses[u].node == g->nodes[i] && v->uses[u].input == k;
                assert_int_equal(found, 1);
            }
    assert_int_equal(v->n_uses, want);
}

static void test_deferred_records(void **state)
{
    (void)state;
    ox_node *adds[READERS];
    ox_value *w, *w2;
    ox_model *m = fan_out(adds, &w, &w2);
    ox_graph *g = m->graph;
    ox_pass_ctx c = {.m = m, .budget = -1};
    ox__pass_set_input(&c, adds[0], 1, w2);   /* away */
    ox__pass_set_input(&c, adds[1], 1, w2);   /* away and back */
    ox__pass_set_input(&c, adds[1], 1, w);
    ox__pass_drop(&c, adds[2]);
    assert_true(ox__pass_gone(adds[2]));
    assert_ptr_equal(adds[0]->inputs[1], w2);
    /* Until the flush the records of the old readers are still counted. */
    assert_true(w->n_uses > READERS - 2);
    ox__pass_drop_const(&c, w);   /* still read: must stay */
    ox__pass_flush(&c, g);
    assert_int_equal(g->n_nodes, READERS - 1);
    assert_ptr_equal(adds[1]->inputs[1], w);
    assert_uses_exact(g, w);
    assert_uses_exact(g, w2);
    assert_int_equal(w->n_uses, READERS - 2);
    assert_non_null(ox_graph_find(g, "w"));
    assert_non_null(w->init);
    ox__pass_ctx_free(&c);
    ox_model_free(m);
}

static void test_shared_constant_goes_with_last_reader(void **state)
{
    (void)state;
    ox_node *adds[READERS];
    ox_value *w, *w2;
    ox_model *m = fan_out(adds, &w, &w2);
    ox_graph *g = m->graph;
    ox_pass_ctx c = {.m = m, .budget = -1};
    /* Every reader moves to w2 (half by rewiring, half by replacement). */
    for (int i = 0; i < READERS; i++) {
        if (i % 2) {
            ox__pass_set_input(&c, adds[i], 1, w2);
        } else {
            ox_value *in[2] = {adds[i]->inputs[0], w2}, *y = adds[i]->outputs[0];
            ox__pass_drop(&c, adds[i]);
            assert_non_null(ox_node_new(g, "Add", "", NULL, 2, in, 1, &y));
        }
        ox__pass_drop_const(&c, w);
    }
    ox__pass_flush(&c, g);
    assert_int_equal(g->n_nodes, READERS);
    assert_null(ox_graph_find(g, "w"));   /* pruned at the flush */
    assert_uses_exact(g, w2);
    assert_int_equal(w2->n_uses, READERS);
    for (int i = 0; i < g->n_nodes; i++)
        assert_ptr_equal(g->nodes[i]->inputs[1], w2);
    ox__pass_ctx_free(&c);
    ox_model_free(m);
}

/* Below the threshold the count is exact and the constant goes at once. */
static void test_few_readers_exact(void **state)
{
    (void)state;
    ox_model *m = ox_model_new();
    assert_non_null(m);
    ox_graph *g = m->graph;
    ox_value *x = ox_graph_value(g, "x"), *w = scalar(g, "w", 1), *w2 = scalar(g, "w2", 2);
    ox_graph_add_input(g, x);
    ox_value *y = ox_graph_value(g, "y"), *in[2] = {x, w};
    ox_node *n = ox_node_new(g, "Add", "", "add", 2, in, 1, &y);
    ox_graph_add_output(g, y);
    ox_pass_ctx c = {.m = m, .budget = -1};
    ox__pass_set_input(&c, n, 1, w2);
    assert_int_equal(w->n_uses, 0);
    ox__pass_drop_const(&c, w);
    assert_null(w->init);               /* its tensor is gone already */
    ox__pass_flush(&c, g);
    assert_null(ox_graph_find(g, "w"));
    assert_int_equal(w2->n_uses, 1);
    ox__pass_ctx_free(&c);
    ox_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deferred_records),
        cmocka_unit_test(test_shared_constant_goes_with_last_reader),
        cmocka_unit_test(test_few_readers_exact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
