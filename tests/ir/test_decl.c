/* The keep/refine rule of declared types (ir.h ox_type_refine,
 * ox_type_compatible, ox_value_saved_type), fixing with --shape/--dim
 * (ox_infer_fix_declared), and the declaration's trip through clone, load,
 * save and a pass that replaces a graph output. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "onnxscope/infer.h"
#include "onnxscope/io.h"
#include "onnxscope/ir.h"

/* "float32[batch,?,3]"-style spec: a number, '?' (unknown) or a symbol per
 * dim; "-" for a tensor without a shape; NULL for no type. */
static ox_type *T(ox_dtype elem, const char *spec)
{
    if (!spec)
        return NULL;
    if (!strcmp(spec, "-"))
        return ox_type_new_tensor(elem, -1, NULL);
    char buf[128];
    snprintf(buf, sizeof buf, "%s", spec);
    int rank = 0;
    char *parts[8];
    for (char *s = strtok(buf, ","); s && rank < 8; s = strtok(NULL, ","))
        parts[rank++] = s;
    ox_type *t = ox_type_new_tensor(elem, rank, NULL);
    for (int k = 0; k < rank; k++) {
        if (parts[k][0] >= '0' && parts[k][0] <= '9')
            t->dims[k].value = atoll(parts[k]);
        else if (strcmp(parts[k], "?"))
            t->dims[k].param = strdup(parts[k]);
    }
    return t;
}

static const char *S(const ox_type *t)
{
    static char buf[8][128];
    static int i;
    i = (i + 1) % 8;
    return ox_type_str(t, buf[i], sizeof buf[i]);
}

/* refine(decl, inf) printed. */
static const char *R(ox_type *decl, ox_type *inf)
{
    ox_type *r = ox_type_refine(decl, inf);
    const char *s = S(r);
    ox_type_free(r);
    ox_type_free(decl);
    ox_type_free(inf);
    return s;
}

static void test_refine(void **state)
{
    (void)state;
    const ox_dtype F = OX_DT_FLOAT, U = OX_DT_UNDEFINED;
    /* A symbol the file chose stays, even where inference knows a value. */
    assert_string_equal(R(T(F, "batch,p2o.DynamicDimension.3"), T(F, "2,7")),
                        "float32[batch,p2o.DynamicDimension.3]");
    /* A known dim stays; an unknown or another symbol never replaces it. */
    assert_string_equal(R(T(F, "batch,1"), T(F, "?,?")), "float32[batch,1]");
    assert_string_equal(R(T(F, "batch,1"), T(F, "n,m")), "float32[batch,1]");
    /* An unknown rank never drops the declared shape (the checker's
     * "Field 'shape' ... missing"). */
    assert_string_equal(R(T(F, "batch,1"), T(F, "-")), "float32[batch,1]");
    assert_string_equal(R(T(F, "batch,1"), NULL), "float32[batch,1]");
    /* Gaps are filled: an anonymous dim by a value or a symbol, a missing
     * shape by the inferred one, an unset element type. */
    assert_string_equal(R(T(F, "batch,?,?"), T(F, "?,5,seq")), "float32[batch,5,seq]");
    assert_string_equal(R(T(F, "-"), T(F, "batch,4")), "float32[batch,4]");
    assert_string_equal(R(T(U, "n"), T(F, "3")), "float32[n]");
    /* A contradicting inference does not win over the declaration. */
    assert_string_equal(R(T(F, "batch,3"), T(F, "batch,3,1")), "float32[batch,3]");
    assert_string_equal(R(T(F, "batch,3"), T(OX_DT_INT64, "batch,3")), "float32[batch,3]");
    /* Nothing declared: what inference knows. */
    assert_string_equal(R(NULL, T(F, "2,?")), "float32[2,?]");
    /* Inside a sequence the same rule. */
    ox_type *sd = calloc(1, sizeof *sd), *si = calloc(1, sizeof *si);
    sd->kind = si->kind = OX_TYPE_SEQUENCE;
    sd->inner = T(F, "n,?");
    si->inner = T(F, "4,5");
    assert_string_equal(R(sd, si), "seq(float32[n,5])");
}

static void test_compatible(void **state)
{
    (void)state;
    const ox_dtype F = OX_DT_FLOAT;
    struct {
        const char *decl, *inf;
        ox_dtype ei;
        bool ok;
    } c[] = {
        {"batch,3", "2,3", F, true},     {"batch,3", "batch,4", F, false},
        {"batch,3", "batch,3,1", F, false}, {"batch,3", "-", F, true},
        {"batch,3", "batch,3", OX_DT_INT64, false}, {"-", "1,2", F, true},
        {"n", NULL, F, true},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        ox_type *d = T(F, c[i].decl), *n = T(c[i].ei, c[i].inf);
        if (ox_type_compatible(d, n) != c[i].ok)
            fail_msg("compatible(%s, %s) should be %d", c[i].decl, c[i].inf ? c[i].inf : "NULL",
                     c[i].ok);
        ox_type_free(d);
        ox_type_free(n);
    }
}

/* x[batch, D] -> Relu -> h -> Relu -> y, y an output declared [batch, D],
 * h declared by value_info [batch, D]. */
static ox_model *small_model(void)
{
    ox_model *m = ox_model_new();
    ox_model_set_opset(m, "", 13);
    ox_graph *g = m->graph;
    ox_value *x = ox_graph_value(g, "x"), *h = ox_graph_value(g, "h"),
             *y = ox_graph_value(g, "y");
    x->type = T(OX_DT_FLOAT, "batch,D");
    x->decl = ox_type_clone(x->type);
    h->decl = T(OX_DT_FLOAT, "batch,D");
    h->has_value_info = true;
    y->decl = T(OX_DT_FLOAT, "batch,D");
    ox_graph_add_input(g, x);
    ox_node_new(g, "Relu", "", "r1", 1, &x, 1, &h);
    ox_node_new(g, "Relu", "", "r2", 1, &h, 1, &y);
    ox_graph_add_output(g, y);
    return m;
}

static void test_saved_type(void **state)
{
    (void)state;
    ox_model *m = small_model();
    ox_value *h = ox_graph_find(m->graph, "h"), *y = ox_graph_find(m->graph, "y");
    /* Inference with the input fixed to [2,7]: the file's symbols stay. */
    h->type = T(OX_DT_FLOAT, "2,7");
    y->type = T(OX_DT_FLOAT, "2,7");
    ox_type *t = ox_value_saved_type(y);
    assert_string_equal(S(t), "float32[batch,D]");
    ox_type_free(t);
    /* An output keeps its declaration even against a contradicting
     * inference; an intermediate value whose content a pass changed
     * (here: rank 3 now) is saved as inferred. */
    ox_type_free(y->type);
    y->type = T(OX_DT_FLOAT, "2,7,1");
    ox_type_free(h->type);
    h->type = T(OX_DT_FLOAT, "2,7,1");
    t = ox_value_saved_type(y);
    assert_string_equal(S(t), "float32[batch,D]");
    ox_type_free(t);
    t = ox_value_saved_type(h);
    assert_string_equal(S(t), "float32[2,7,1]");
    ox_type_free(t);
    ox_model_free(m);
}

static void test_fix_declared(void **state)
{
    (void)state;
    ox_model *m = small_model();
    ox_infer_opts io = {0};
    assert_int_equal(ox_infer_opts_add_dim(&io, "batch=3", NULL), OX_OK);
    assert_int_equal(ox_infer_fix_declared(m, &io, NULL), OX_OK);
    assert_string_equal(S(ox_graph_find(m->graph, "x")->decl), "float32[3,D]");
    assert_string_equal(S(ox_graph_find(m->graph, "h")->decl), "float32[3,D]");
    assert_string_equal(S(ox_graph_find(m->graph, "y")->decl), "float32[3,D]");
    ox_infer_opts_free(&io);
    ox_model_free(m);
    /* --shape x=2x? fixes batch (declared at dim 0) and keeps D. */
    m = small_model();
    memset(&io, 0, sizeof io);
    assert_int_equal(ox_infer_opts_add_shape(&io, "x=2x?", NULL), OX_OK);
    assert_int_equal(ox_infer_fix_declared(m, &io, NULL), OX_OK);
    assert_string_equal(S(ox_graph_find(m->graph, "x")->decl), "float32[2,D]");
    assert_string_equal(S(ox_graph_find(m->graph, "y")->decl), "float32[2,D]");
    ox_infer_opts_free(&io);
    ox_model_free(m);
}

static void test_decl_travels(void **state)
{
    (void)state;
    ox_model *m = small_model();
    /* Clone. */
    ox_model *c = ox_model_clone(m);
    assert_string_equal(S(ox_graph_find(c->graph, "y")->decl), "float32[batch,D]");
    ox_model_free(c);
    /* Save and load: the file's declarations come back as decl. */
    void *buf = NULL;
    size_t len = 0;
    ox_graph_find(m->graph, "y")->type = T(OX_DT_FLOAT, "-");
    assert_int_equal(ox_save_buffer(m, &buf, &len, NULL), OX_OK);
    ox_model *l = NULL;
    assert_int_equal(ox_load_buffer(buf, len, NULL, &l, NULL), OX_OK);
    free(buf);
    assert_string_equal(S(ox_graph_find(l->graph, "y")->decl), "float32[batch,D]");
    assert_string_equal(S(ox_graph_find(l->graph, "h")->decl), "float32[batch,D]");
    /* A pass that makes another value the graph output carries the
     * declaration over. */
    ox_value *y = ox_graph_find(l->graph, "y"), *h = ox_graph_find(l->graph, "h");
    ox_type_free(h->decl);
    h->decl = NULL;
    ox_value_replace_uses(y, h);
    assert_ptr_equal(l->graph->outputs[0], h);
    assert_string_equal(S(h->decl), "float32[batch,D]");
    ox_model_free(l);
    ox_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refine),          cmocka_unit_test(test_compatible),
        cmocka_unit_test(test_saved_type),      cmocka_unit_test(test_fix_declared),
        cmocka_unit_test(test_decl_travels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
