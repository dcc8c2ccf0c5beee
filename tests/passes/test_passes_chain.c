/* The pass pipeline on very long chains (issue 11): x -> Relu -> a million
 * Identity (then no-op Cast) nodes -> y must optimize to the Relu alone. Quadratic spots in the passes or the manager would run for
 * an hour; the meson timeout is the only clock (no timing assertion).
 * Identity goes by eliminate_identity, the Cast by eliminate_noop (which
 * needs inferred types). Then 100k-node chains of fusable patterns under
 * --level all --target ort (the fusion passes drop and flush too). */
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
#include "onnxscope/tensor.h"

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

/* ---- fusable chains (--level all --target ort) ------------------------------ */

#if CHAIN_NODES > 100000
#define FUSE_NODES 100000
#else
#define FUSE_NODES 20000
#endif

static ox_value *fc_node(ox_graph *g, const char *op, int n_in, ox_value *const *in, int *k)
{
    char name[32];
    snprintf(name, sizeof name, "v%d", (*k)++);
    ox_value *o = ox_graph_value(g, name);
    snprintf(name, sizeof name, "n%d", *k);
    ox_node *n = ox_node_new(g, op, "", name, n_in, in, 1, &o);
    assert_non_null(n);
    if (!strcmp(op, "Conv")) {
        int64_t k1[2] = {1, 1};
        ox_node_set_attr_ints(n, "kernel_shape", 2, k1);
    }
    return o;
}

static ox_value *fc_const(ox_graph *g, const char *name, int rank, const int64_t *dims, float v)
{
    ox_tensor *t = ox_tensor_new(OX_DT_FLOAT, rank, dims);
    assert_non_null(t);
    for (int64_t i = 0; i < t->numel; i++)
        ox_tensor_set_f64(t, i, v + (double)(i % 3) / 4);
    ox_value *c = ox_graph_value(g, name);
    assert_int_equal(ox_graph_set_initializer(g, c, t), OX_OK);
    return c;
}

/* About n nodes of one pattern repeated (*units times), every unit reading
 * the same constants (so dropped readers leave deferred use records). */
static ox_model *fuse_chain(const char *kind, int n, int *units)
{
    ox_model *m = ox_model_new();
    assert_non_null(m);
    ox_model_set_opset(m, "", 14);
    m->ir_version = 7;
    ox_graph *g = m->graph;
    bool conv = !strcmp(kind, "convbn");
    int64_t d2[2] = {1, 16}, d4[4] = {1, 4, 2, 2};
    ox_value *x = ox_graph_value(g, "x");
    x->type = ox_type_new_tensor(OX_DT_FLOAT, conv ? 4 : 2, conv ? d4 : d2);
    ox_graph_add_input(g, x);
    int k = 0, per = !strcmp(kind, "silu") ? 2 : !strcmp(kind, "hardswish") ? 4 : 3;
    *units = n / per;
    if (!strcmp(kind, "gemm")) {
        int64_t wd[2] = {16, 16}, bd[1] = {16};
        ox_value *w = fc_const(g, "W", 2, wd, 0.1f), *b = fc_const(g, "B", 1, bd, 0.2f);
        for (int i = 0; i < *units; i++) {
            ox_value *a[2] = {x, w};
            ox_value *s[2] = {fc_node(g, "MatMul", 2, a, &k), b};
            ox_value *r = fc_node(g, "Add", 2, s, &k);
            x = fc_node(g, "Relu", 1, &r, &k);
        }
    } else if (conv) {
        int64_t wd[4] = {4, 4, 1, 1}, cd[1] = {4};
        ox_value *w = fc_const(g, "W", 4, wd, 0.1f);
        ox_value *bn[5] = {NULL, fc_const(g, "s", 1, cd, 1), fc_const(g, "b", 1, cd, 0.1f),
                           fc_const(g, "mean", 1, cd, 0.2f), fc_const(g, "var", 1, cd, 1)};
        for (int i = 0; i < *units; i++) {
            ox_value *a[2] = {x, w};
            bn[0] = fc_node(g, "Conv", 2, a, &k);
            ox_value *r = fc_node(g, "BatchNormalization", 5, bn, &k);
            x = fc_node(g, "Relu", 1, &r, &k);
        }
    } else if (!strcmp(kind, "silu")) {
        for (int i = 0; i < *units; i++) {
            ox_value *mu[2] = {x, fc_node(g, "Sigmoid", 1, &x, &k)};
            x = fc_node(g, "Mul", 2, mu, &k);
        }
    } else {
        ox_value *three = fc_const(g, "three", 0, NULL, 3), *zero = fc_const(g, "zero", 0, NULL, 0),
                 *six = fc_const(g, "six", 0, NULL, 6);
        for (int i = 0; i < *units; i++) {
            ox_value *ad[2] = {x, three};
            ox_value *cl[3] = {fc_node(g, "Add", 2, ad, &k), zero, six};
            ox_value *mu[2] = {x, fc_node(g, "Clip", 3, cl, &k)};
            ox_value *dv[2] = {fc_node(g, "Mul", 2, mu, &k), six};
            x = fc_node(g, "Div", 2, dv, &k);
        }
    }
    ox_graph_add_output(g, x);
    return m;
}

/* Every unit fuses into one `fused` node; the constants left are the
 * `inits` that the fused nodes still read (all the shared ones go when the
 * last reader does, even though a thousand readers left them at once). */
static void optimize_fuse_chain(const char *kind, const char *fused, int inits)
{
    int units;
    ox_model *m = fuse_chain(kind, FUSE_NODES, &units);
    int nodes = m->graph->n_nodes;
    ox_value *y = m->graph->outputs[0];
    ox_pass_manager *pm = ox_pm_new(OX_LEVEL_ALL, OX_TARGET_ORT);
    ox_pass_report rep = {0};
    ox_error err = {0};
    assert_int_equal(ox_pm_run(pm, m, &rep, &err), OX_OK);
    ox_graph *g = m->graph;
    assert_int_equal(rep.nodes_before, nodes);
    assert_int_equal(g->n_nodes, units);
    for (int i = 0; i < g->n_nodes; i++)
        assert_string_equal(g->nodes[i]->op_type, fused);
    /* A chain: node i reads node i - 1, the last one produces y. */
    for (int i = 1; i < g->n_nodes; i++)
        assert_ptr_equal(g->nodes[i]->inputs[0]->producer, g->nodes[i - 1]);
    assert_ptr_equal(g->outputs[0], y);
    assert_ptr_equal(y->producer, g->nodes[g->n_nodes - 1]);
    int n_init = 0;
    for (int i = 0; i < g->n_values; i++)
        n_init += g->values[i]->init != NULL;
    assert_int_equal(n_init, inits);
    /* x, y, the initializers and one value between two units. */
    assert_int_equal(g->n_values, 2 + inits + units - 1);
    printf("%s chain of %d nodes: %d -> %d nodes (%s) in %d round(s)\n", kind, nodes,
           rep.nodes_before, rep.nodes_after, fused, rep.iterations);
    ox_pass_report_free(&rep);
    ox_pm_free(pm);
    ox_model_free(m);
}

static void test_fuse_gemm_chain(void **state)
{
    (void)state;
    optimize_fuse_chain("gemm", "FusedGemm", 2);
}

static void test_fuse_convbn_chain(void **state)
{
    (void)state;
    /* Every fold makes the same weights and bias: dedup keeps one pair. */
    optimize_fuse_chain("convbn", "FusedConv", 2);
}

static void test_fuse_silu_chain(void **state)
{
    (void)state;
    optimize_fuse_chain("silu", "QuickGelu", 0);
}

static void test_fuse_hardswish_chain(void **state)
{
    (void)state;
    optimize_fuse_chain("hardswish", "HardSwish", 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_identity_chain),
        cmocka_unit_test(test_cast_chain),
        cmocka_unit_test(test_fuse_gemm_chain),
        cmocka_unit_test(test_fuse_convbn_chain),
        cmocka_unit_test(test_fuse_silu_chain),
        cmocka_unit_test(test_fuse_hardswish_chain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
