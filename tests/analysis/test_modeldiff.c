/* The node matching of modeldiff.h on small built models: by name first,
 * then by position among the leftovers of one op type; what "changed"
 * covers (op, wiring, attributes, same-named weights with other data). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "onnxscope/ir.h"
#include "onnxscope/modeldiff.h"
#include "onnxscope/tensor.h"

static ox_node *op(ox_graph *g, const char *type, const char *name, const char *a,
                   const char *b, const char *out)
{
    ox_value *in[2] = {a ? ox_graph_value(g, a) : NULL, b ? ox_graph_value(g, b) : NULL};
    ox_value *o = ox_graph_value(g, out);
    return ox_node_new(g, type, "", name, b ? 2 : a ? 1 : 0, in, 1, &o);
}

/* x -> Relu(r) -> MatMul(mm, W) -> Add(u1 "" unnamed) -> Sigmoid(s) -> y;
 * w0 is W's first element. */
static ox_model *build(bool rename_relu, float w0, int alpha, bool extra_tanh)
{
    ox_model *m = ox_model_new();
    assert_non_null(m);
    ox_model_set_opset(m, "", 13);
    ox_graph *g = m->graph;
    int64_t wd[2] = {2, 2};
    ox_tensor *w = ox_tensor_new(OX_DT_FLOAT, 2, wd);
    assert_non_null(w);
    ox_tensor_set_f64(w, 0, w0);
    assert_int_equal(ox_graph_set_initializer(g, ox_graph_value(g, "W"), w), OX_OK);
    ox_graph_add_input(g, ox_graph_value(g, "x"));
    assert_non_null(op(g, "Relu", rename_relu ? "relu_renamed" : "r", "x", NULL, "t1"));
    assert_non_null(op(g, "MatMul", "mm", "t1", "W", "t2"));
    assert_non_null(op(g, "Add", "", "t2", "t2", "t3"));
    ox_node *s = op(g, "LeakyRelu", "s", "t3", NULL, extra_tanh ? "t4" : "y");
    assert_non_null(s);
    ox_node_set_attr_i(s, "alpha_i", alpha);
    if (extra_tanh)
        assert_non_null(op(g, "Tanh", "tanh", "t4", NULL, "y"));
    ox_graph_add_output(g, ox_graph_value(g, "y"));
    return m;
}

static void test_same(void **state)
{
    (void)state;
    ox_model *a = build(false, 1.0f, 1, false), *b = build(false, 1.0f, 1, false);
    ox_model_diff d;
    assert_int_equal(ox_model_diff_compute(a, b, &d, NULL), OX_OK);
    assert_int_equal(d.same, 4);
    assert_int_equal(d.changed + d.added + d.removed, 0);
    assert_int_equal(d.by_name, 3);       /* r, mm, s; the unnamed Add by position */
    assert_int_equal(d.by_position, 1);
    assert_int_equal(d.n_items, 0);
    ox_model_diff_free(&d);
    ox_model_free(a);
    ox_model_free(b);
}

static void test_changes(void **state)
{
    (void)state;
    /* B: Relu renamed (paired by position: same, only the name differs),
     * other weights under the same name, another attribute, a Tanh added. */
    ox_model *a = build(false, 1.0f, 1, false), *b = build(true, 2.0f, 3, true);
    ox_model_diff d;
    assert_int_equal(ox_model_diff_compute(a, b, &d, NULL), OX_OK);
    assert_int_equal(d.added, 1);
    assert_int_equal(d.removed, 0);
    assert_int_equal(d.by_position, 2);   /* the Relu and the unnamed Add */
    int seen = 0;
    for (int i = 0; i < d.n_items; i++) {
        const ox_node_diff *it = &d.items[i];
        if (it->kind == OX_NDIFF_ADDED) {
            assert_string_equal(it->b->op_type, "Tanh");
            assert_int_equal(d.kind_b[it->b->index], OX_NDIFF_ADDED);
            seen |= 1;
        } else if (it->kind == OX_NDIFF_CHANGED && !strcmp(it->b->name, "mm")) {
            assert_int_equal(it->what, OX_NDIFF_WEIGHTS);
            seen |= 2;
        } else if (it->kind == OX_NDIFF_CHANGED && !strcmp(it->b->name, "s")) {
            /* its attribute and its output tensor (t4, not y) */
            assert_int_equal(it->what, OX_NDIFF_ATTRS | OX_NDIFF_OUTPUTS);
            assert_int_equal(d.partner_b[it->b->index], it->a->index);
            seen |= 4;
        } else {
            fail_msg("unexpected difference at %s", it->b ? it->b->name : it->a->name);
        }
    }
    assert_int_equal(seen, 7);
    assert_int_equal(d.same, 2);   /* the renamed Relu and the Add */
    char buf[64];
    assert_string_equal(ox_node_diff_what(OX_NDIFF_ATTRS | OX_NDIFF_OUTPUTS, buf, sizeof buf),
                        "outputs, attributes");
    ox_model_diff_free(&d);
    /* The other way round: the Tanh is removed, A's kinds say so. */
    assert_int_equal(ox_model_diff_compute(b, a, &d, NULL), OX_OK);
    assert_int_equal(d.removed, 1);
    assert_int_equal(d.items[0].kind, OX_NDIFF_REMOVED);
    assert_string_equal(d.items[0].a->op_type, "Tanh");
    ox_model_diff_free(&d);
    ox_model_free(a);
    ox_model_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same),
        cmocka_unit_test(test_changes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
