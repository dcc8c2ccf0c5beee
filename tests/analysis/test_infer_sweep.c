/* Robustness sweep of shape inference: every registry entry with an
 * inference function runs on nodes with zero outputs, with omitted ("")
 * outputs and with normal ones, under several input and attribute
 * shapes, so new ops are covered automatically. Nothing may crash; run
 * under ASan (tools/sanitize.sh) this catches use-after-free and
 * out-of-bounds reads in the per-op functions and their helpers. Also:
 * recursive local functions and Range's element count at the int64 edges. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "onnxscope/check.h"
#include "onnxscope/infer.h"
#include "onnxscope/ir.h"
#include "onnxscope/ops.h"

enum { IN_UNTYPED, IN_FLOAT4D, IN_CONST_I64, IN_I64_VEC, IN_MODES };
enum { OUT_NONE, OUT_ALL_EMPTY, OUT_FIRST_EMPTY, OUT_NORMAL, OUT_MODES };

static ox_tensor *i64_vec(int n, int64_t v)
{
    int64_t d = n;
    ox_tensor *t = ox_tensor_new(OX_DT_INT64, 1, &d);
    for (int i = 0; t && i < n; i++)
        ox_tensor_set_i64(t, i, v);
    return t;
}

/* A subgraph with no inputs and `nout` outputs, each a Constant. */
static ox_graph *const_body(ox_model *m, ox_graph *scope, ox_node *owner, int nout)
{
    ox_graph *b = ox_graph_new(m, scope);
    b->owner = owner;
    for (int k = 0; k < nout; k++) {
        char name[32];
        snprintf(name, sizeof name, "body_out%d", k);
        ox_value *o = ox_graph_value(b, name);
        ox_node *cn = ox_node_new(b, "Constant", "", name, 0, NULL, 1, &o);
        ox_node_set_attr_t(cn, "value", i64_vec(2, 1));
        ox_graph_add_output(b, o);
    }
    return b;
}

/* Gives every attribute of the schema a plausible value (the default when
 * the table has one), so that the inference function gets past its
 * argument checks; graphs get bodies with `body_outs` outputs. empty:
 * list attributes have no elements (their arrays are NULL, which UBSan
 * catches in a memcpy(dst, NULL, 0)). */
static void synth_attrs(ox_model *m, ox_node *n, const ox_op_schema *s, int body_outs,
                        bool empty)
{
    ox_op_attr_info info;
    for (int k = 0; ox_op_schema_attr(s, k, &info); k++) {
        ox_attr a;
        memset(&a, 0, sizeof a);
        a.name = info.name;
        a.type = info.type;
        int64_t ints[4] = {1, 1, 1, 1};
        float floats[4] = {1, 1, 1, 1};
        ox_graph *gs[2] = {NULL, NULL};
        switch (info.type) {
        case OX_ATTR_INT:
            a.i = info.has_default ? strtoll(info.dflt, NULL, 10) : 1;
            break;
        case OX_ATTR_FLOAT:
            a.f = 1.0f;
            break;
        case OX_ATTR_STRING:
            a.s.data = (char *)(info.has_default ? info.dflt : "");
            a.s.len = strlen(a.s.data);
            break;
        case OX_ATTR_INTS:
            a.n = empty ? 0 : 2;
            a.ints = empty ? NULL : ints;
            break;
        case OX_ATTR_FLOATS:
            a.n = empty ? 0 : 2;
            a.floats = empty ? NULL : floats;
            break;
        case OX_ATTR_TENSOR:
            a.t = i64_vec(2, 1);
            break;
        case OX_ATTR_GRAPH:
            a.g = gs[0] = const_body(m, n->graph, n, body_outs);
            break;
        case OX_ATTR_GRAPHS:
            if (empty)
                break;
            gs[0] = const_body(m, n->graph, n, body_outs);
            gs[1] = const_body(m, n->graph, n, body_outs);
            a.n = 2;
            a.graphs = gs;
            break;
        default:
            continue;
        }
        ox_node_set_attr(n, &a);
        ox_tensor_free(a.t);
        for (int j = 0; j < 2; j++)
            ox_graph_free(gs[j]);
    }
}

static ox_value *make_input(ox_graph *g, int mode, int idx)
{
    char name[32];
    snprintf(name, sizeof name, "in%d", idx);
    ox_value *v = ox_graph_value(g, name);
    static const int64_t d4[4] = {2, 3, 4, 5}, d1[1] = {2};
    switch (mode) {
    case IN_FLOAT4D:
        v->type = ox_type_new_tensor(OX_DT_FLOAT, 4, d4);
        break;
    case IN_CONST_I64:
        ox_graph_set_initializer(g, v, i64_vec(2, 1));
        v->type = ox_type_new_tensor(OX_DT_INT64, 1, d1);
        return v;
    case IN_I64_VEC:
        v->type = ox_type_new_tensor(OX_DT_INT64, 1, d1);
        break;
    default:
        break;
    }
    ox_graph_add_input(g, v);
    return v;
}

/* attrs: 0 none, 1 every schema attribute, 2 the same with empty lists. */
static int run_case(const ox_op_schema *s, int in_mode, int out_mode, int attrs)
{
    ox_op_arity ar;
    ox_op_schema_arity(s, &ar);
    ox_model *m = ox_model_new();
    assert_non_null(m);
    if (!m->graph)
        m->graph = ox_graph_new(m, NULL);
    ox_graph *g = m->graph;
    ox_model_set_opset(m, s->domain, s->since_version);
    if (*s->domain)
        ox_model_set_opset(m, "", 21);
    int nin = ar.min_in > 0 ? ar.min_in : 1;
    if (ar.max_in < 0 || ar.max_in > nin)
        nin++;
    if (nin > 6)
        nin = 6;
    ox_value *in[6];
    for (int i = 0; i < nin; i++)
        in[i] = make_input(g, in_mode, i);
    int nout = out_mode == OUT_NONE ? 0 : (ar.max_out < 0 || ar.max_out > 3 ? 3 : ar.max_out);
    if (out_mode != OUT_NONE && nout < 1)
        nout = 1;
    ox_value *out[3] = {NULL, NULL, NULL};
    for (int i = 0; i < nout; i++) {
        if (out_mode == OUT_ALL_EMPTY || (out_mode == OUT_FIRST_EMPTY && i == 0))
            continue;
        char name[32];
        snprintf(name, sizeof name, "out%d", i);
        out[i] = ox_graph_value(g, name);
        ox_graph_add_output(g, out[i]);
    }
    ox_node *n = ox_node_new(g, s->op_type, s->domain, "n", nin, in, nout, out);
    assert_non_null(n);
    if (attrs)
        synth_attrs(m, n, s, out_mode == OUT_NONE ? 0 : 1, attrs == 2);
    ox_graph_relink(g);
    ox_error err = {0};
    ox_infer_stats stats = {0};
    ox_infer_opts opts = {.stats = &stats};
    ox_infer_model(m, &opts, &err);
    /* The per-node entry point too (passes call it on edited nodes). */
    ox_infer_node(n, &err);
    ox_model_free(m);
    return 1;
}

static void test_sweep_every_op(void **state)
{
    (void)state;
    int cases = 0, ops = 0;
    const ox_op_schema *s;
    for (int i = 0; (s = ox_op_at(i)); i++) {
        if (!s->infer)
            continue;
        ops++;
        for (int im = 0; im < IN_MODES; im++)
            for (int om = 0; om < OUT_MODES; om++)
                for (int a = 0; a < 3; a++)
                    cases += run_case(s, im, om, a);
    }
    printf("# %d registry entries with inference, %d cases\n", ops, cases);
    assert_true(ops > 100);
}

/* ---- recursive local functions ----------------------------------------- */

/* Adds function `name` in domain "local" whose body calls `callee` (also
 * in "local") once: y = callee(x). */
static void add_function(ox_model *m, const char *name, const char *callee)
{
    int k = m->n_functions;
    m->functions = realloc(m->functions, (size_t)(k + 1) * sizeof *m->functions);
    ox_function *f = &m->functions[k];
    memset(f, 0, sizeof *f);
    m->n_functions = k + 1;
    f->name = ox_strdup(name);
    f->domain = ox_strdup("local");
    f->opsets = calloc(2, sizeof *f->opsets);
    f->opsets[0].domain = ox_strdup("");
    f->opsets[0].version = 17;
    f->opsets[1].domain = ox_strdup("local");
    f->opsets[1].version = 1;
    f->n_opsets = 2;
    f->body = ox_graph_new(m, NULL);
    ox_value *x = ox_graph_value(f->body, "x");
    ox_graph_add_input(f->body, x);
    ox_value *y = ox_graph_value(f->body, "y");
    ox_node_new(f->body, callee, "local", "call", 1, &x, 1, &y);
    ox_graph_add_output(f->body, y);
}

static ox_model *recursive_model(bool direct)
{
    ox_model *m = ox_model_new();
    if (!m->graph)
        m->graph = ox_graph_new(m, NULL);
    ox_model_set_opset(m, "", 17);
    ox_model_set_opset(m, "local", 1);
    m->ir_version = 8;
    if (direct) {
        add_function(m, "f", "f");
    } else {
        add_function(m, "f", "g");
        add_function(m, "g", "f");
    }
    static const int64_t d[1] = {3};
    ox_graph *g = m->graph;
    ox_value *x = ox_graph_value(g, "x");
    x->type = ox_type_new_tensor(OX_DT_FLOAT, 1, d);
    ox_graph_add_input(g, x);
    ox_value *y = ox_graph_value(g, "y");
    ox_node_new(g, "f", "local", "top", 1, &x, 1, &y);
    ox_graph_add_output(g, y);
    return m;
}

static void test_recursive_function(void **state)
{
    (void)state;
    for (int direct = 0; direct < 2; direct++) {
        ox_model *m = recursive_model(direct);
        ox_error err = {0};
        assert_int_equal(ox_infer_model(m, NULL, &err), OX_EMODEL);
        printf("# %s\n", err.msg);
        assert_non_null(strstr(err.msg, "recursive"));
        assert_non_null(strstr(err.msg, direct ? "f -> f" : "f -> g -> f"));
        ox_check_report rep;
        assert_int_equal(ox_check_model(m, &rep), OX_EMODEL);
        bool found = false;
        for (int i = 0; i < rep.n_issues; i++)
            found |= strstr(rep.issues[i].msg, "recursive") != NULL;
        assert_true(found);
        ox_check_report_free(&rep);
        ox_model_free(m);
    }
}

/* ---- Range at the int64 edges (UBSan: signed overflow) -------------------- */

static void range_case(int64_t start, int64_t limit, int64_t delta, const char *want)
{
    ox_model *m = ox_model_new();
    if (!m->graph)
        m->graph = ox_graph_new(m, NULL);
    ox_model_set_opset(m, "", 17);
    ox_graph *g = m->graph;
    int64_t vals[3] = {start, limit, delta};
    ox_value *in[3];
    for (int i = 0; i < 3; i++) {
        char name[8];
        snprintf(name, sizeof name, "r%d", i);
        in[i] = ox_graph_value(g, name);
        ox_tensor *t = ox_tensor_new(OX_DT_INT64, 0, NULL);
        ox_tensor_set_i64(t, 0, vals[i]);
        ox_graph_set_initializer(g, in[i], t);
    }
    ox_value *y = ox_graph_value(g, "y");
    ox_node_new(g, "Range", "", "range", 3, in, 1, &y);
    ox_graph_add_output(g, y);
    ox_error err = {0};
    ox_infer_model(m, NULL, &err);
    char buf[128] = "untyped";
    if (y->type)
        ox_type_str(y->type, buf, sizeof buf);
    if (strcmp(buf, want)) {
        printf("Range(%lld, %lld, %lld): got %s, want %s\n", (long long)start,
               (long long)limit, (long long)delta, buf, want);
        fail();
    }
    ox_model_free(m);
}

static void test_range_edges(void **state)
{
    (void)state;
    range_case(INT64_MIN, INT64_MAX, 1, "untyped");   /* too long: refused */
    range_case(INT64_MAX, INT64_MIN, INT64_MIN, "int64[2]");
    range_case(INT64_MIN, INT64_MAX, INT64_MAX, "int64[3]");
    range_case(-5, 5, 3, "int64[4]");
    range_case(5, -5, -3, "int64[4]");
    range_case(5, 5, 1, "int64[0]");
    range_case(0, 10, -1, "int64[0]");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sweep_every_op),
        cmocka_unit_test(test_recursive_function),
        cmocka_unit_test(test_range_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
