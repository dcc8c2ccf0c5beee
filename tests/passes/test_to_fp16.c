/* to_fp16 (src/passes/to_fp16.c): the block list and --keep-fp32, clamping,
 * where Casts go and how they merge, --fp16-io, If bodies, idempotence and
 * ONNX checker-clean declared types; and a kernel sweep: each op converted
 * to float16 end to end (--fp16-io, empty block list) runs on our executor
 * within float16 accuracy of its float32 original. */
#include "fuse_harness.h"

#include <unistd.h>

#include "onnxscope/cost.h"
#include "onnxscope/io.h"
#include "passes/to_fp16.h"
#include "testutil.h"

/* Runs to_fp16 alone with the given options; returns its rewrites. */
static int fp16_run(ox_model *m, const char *keep, bool io16)
{
    ox_pass_manager *pm = ox_pm_new(OX_LEVEL_BASIC, OX_TARGET_ONNX);
    ox_error err = {0};
    ox_pass_report rep = {0};
    assert_int_equal(ox_pm_only(pm, "to_fp16", &err), OX_OK);
    if (keep)
        assert_int_equal(ox_pm_set_option(pm, "keep-fp32", keep, &err), OX_OK);
    if (io16)
        assert_int_equal(ox_pm_set_option(pm, "fp16-io", "1", &err), OX_OK);
    if (ox_pm_run(pm, m, &rep, &err))
        fail_msg("to_fp16: %s", err.msg);
    const ox_pass_stat *s = ox_pass_report_find(&rep, "to_fp16");
    int rw = s ? s->rewrites : 0;
    ox_pass_report_free(&rep);
    ox_pm_free(pm);
    ox_check_report cr = {0};
    ox_status st = ox_check_model(m, &cr);
    if (st)
        fail_msg("checker: %s", cr.n_issues ? cr.issues[0].msg : "?");
    ox_check_report_free(&cr);
    return rw;
}

/* A float16 copy of a float input (for --fp16-io models). */
static ox_rval *to_dt(const ox_rval *v, ox_dtype dt)
{
    if (v->kind != OX_RV_TENSOR || v->t->dtype == dt || v->t->dtype != OX_DT_FLOAT)
        return ox_rval_clone(v);
    ox_tensor *t = ox_tensor_new(dt, v->t->rank, v->t->dims);
    for (int64_t i = 0; i < t->numel; i++)
        ox_tensor_set_f64(t, i, ox_tensor_get_f64(v->t, i));
    return ox_rval_tensor(t);
}

/* Cosine similarity and the largest error relative to the largest
 * reference magnitude. */
static void closeness(const ox_tensor *ref, const ox_tensor *got, double *cos, double *rel)
{
    assert_int_equal(ref->numel, got->numel);
    double dot = 0, na = 0, nb = 0, mx = 0, err = 0;
    for (int64_t i = 0; i < ref->numel; i++) {
        double a = ox_tensor_get_f64(ref, i), b = ox_tensor_get_f64(got, i);
        dot += a * b;
        na += a * a;
        nb += b * b;
        mx = fmax(mx, fabs(a));
        err = fmax(err, fabs(a - b));
    }
    *cos = na > 0 && nb > 0 ? dot / sqrt(na * nb) : (na == nb ? 1 : 0);
    *rel = mx > 0 ? err / mx : err;
}

/* Converts a clone of m (checker, idempotence, output names) and compares
 * its outputs with m's on two random input sets: cosine >= 0.999 and the
 * error within 1e-2 of the largest magnitude. */
static ox_model *fp16_opt(ox_model *m, const char *keep, bool io16, int *rewrites)
{
    ox_error err = {0};
    assert_int_equal(ox_infer_model(m, NULL, &err), OX_OK);
    ox_model *o = ox_model_clone(m);
    int rw = fp16_run(o, keep, io16);
    if (rewrites)
        *rewrites = rw;
    assert_int_equal(fp16_run(o, keep, io16), 0);   /* idempotent */
    ox_exec *ea, *eb;
    ox_exec_opts eo = {.threads = 1};
    assert_int_equal(ox_exec_new(m, &eo, &ea, &err), OX_OK);
    if (ox_exec_new(o, &eo, &eb, &err))
        fail_msg("exec: %s", err.msg);
    int ni = m->graph->n_inputs, no = m->graph->n_outputs;
    assert_true(ni <= 8 && no <= 8);
    for (uint32_t seed = 1; seed <= 2; seed++) {
        ox_rval *in[8] = {0}, *in16[8] = {0}, *ra[8] = {0}, *rb[8] = {0};
        assert_int_equal(ox_random_inputs(m, NULL, seed, 10, in, &err), OX_OK);
        for (int k = 0; k < ni; k++) {
            const ox_type *t = o->graph->inputs[k]->type;
            in16[k] = to_dt(in[k], t ? t->elem : OX_DT_FLOAT);
        }
        assert_int_equal(ox_exec_run(ea, ni, in, no, ra, &err), OX_OK);
        if (ox_exec_run(eb, ni, in16, no, rb, &err))
            fail_msg("run: %s", err.msg);
        for (int k = 0; k < no; k++) {
            assert_string_equal(m->graph->outputs[k]->name, o->graph->outputs[k]->name);
            assert_int_equal(rb[k]->t->dtype, io16 ? OX_DT_FLOAT16 : OX_DT_FLOAT);
            double cos, rel;
            closeness(ra[k]->t, rb[k]->t, &cos, &rel);
            if (cos < 0.999 || rel > 1e-2)
                fail_msg("output %d: cosine %.6f, error %.3g of the largest magnitude", k, cos,
                         rel);
            ox_rval_free(ra[k]);
            ox_rval_free(rb[k]);
        }
        for (int k = 0; k < ni; k++) {
            ox_rval_free(in[k]);
            ox_rval_free(in16[k]);
        }
    }
    ox_exec_free(ea);
    ox_exec_free(eb);
    return o;
}

static ox_node *find_op(const ox_graph *g, const char *op)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (!strcmp(g->nodes[i]->op_type, op))
            return g->nodes[i];
    return NULL;
}

static ox_dtype elem(const ox_value *v)
{
    return v && v->type ? v->type->elem : OX_DT_UNDEFINED;
}

static ox_node *cast_node(ox_model *m, const char *in, const char *out, ox_dtype to)
{
    ox_node *n = fh_node(m, "Cast", out, in, NULL);
    ox_node_set_attr_i(n, "to", to);
    return n;
}

static const int64_t d24[] = {2, 4};

/* ---- block list and --keep-fp32 ------------------------------------------ */

static void test_block_list(void **state)
{
    (void)state;
    /* The 28 ops of onnxconverter-common's default list. */
    int n = 0;
    for (const char *const *l = ox__fp16_block_list(); *l; l++)
        n++;
    assert_int_equal(n, 28);
    const char *blocked[] = {"Resize", "TopK", "Range", "CumSum", "Min", "Max", "Upsample",
                             "NonMaxSuppression", "RoiAlign", "RandomUniformLike", "ZipMap",
                             "TreeEnsembleClassifier"};
    for (size_t i = 0; i < sizeof blocked / sizeof *blocked; i++)
        assert_true(ox__fp16_default_blocked(blocked[i]));
    const char *free_ops[] = {"Conv", "MatMul", "Softmax", "LayerNormalization", "Add", "Relu",
                              "Cast"};
    for (size_t i = 0; i < sizeof free_ops / sizeof *free_ops; i++)
        assert_false(ox__fp16_default_blocked(free_ops[i]));

    /* x -> Relu -> Max(., c) -> Relu -> y: Max stays float32 between two
     * Casts, the Relus run in float16. */
    ox_model *m = fh_model(13);
    fh_input(m, "x", 2, d24);
    fh_init(m, "c", 0, NULL, NULL, -0.5, 0.5);
    fh_node(m, "Relu", "a", "x", NULL);
    fh_node(m, "Max", "b", "a", "c", NULL);
    fh_node(m, "Relu", "y", "b", NULL);
    fh_output(m, "y");
    int rw;
    ox_model *o = fp16_opt(m, NULL, false, &rw);
    assert_true(rw > 0);
    ox_node *mx = find_op(o->graph, "Max");
    assert_int_equal(elem(mx->inputs[0]), OX_DT_FLOAT);
    assert_int_equal(elem(mx->inputs[1]), OX_DT_FLOAT);   /* its constant stays float32 */
    assert_int_equal(elem(mx->outputs[0]), OX_DT_FLOAT);
    assert_int_equal(elem(find_op(o->graph, "Relu")->outputs[0]), OX_DT_FLOAT16);
    /* in, before Max, after Max, out */
    assert_int_equal(fh_count(o, "Cast"), 4);
    ox_model_free(o);

    /* --keep-fp32 Relu: everything stays float32, nothing to do. */
    o = fp16_opt(m, "Relu", false, &rw);
    assert_int_equal(rw, 0);
    assert_int_equal(fh_count(o, "Cast"), 0);
    ox_model_free(o);

    /* "=" replaces the default list: Max runs in float16 too. */
    o = fp16_opt(m, "=", false, &rw);
    assert_int_equal(elem(find_op(o->graph, "Max")->outputs[0]), OX_DT_FLOAT16);
    assert_int_equal(elem(find_op(o->graph, "Max")->inputs[1]), OX_DT_FLOAT16);
    assert_int_equal(fh_count(o, "Cast"), 2);
    ox_model_free(o);
    ox_model_free(m);
}

/* ---- clamping -------------------------------------------------------------- */

static void test_clamping(void **state)
{
    (void)state;
    const float v[] = {1e5f, -7e4f, INFINITY, NAN, 1e-9f, -1e-9f, 0.0f, 1.0f, 65504.0f, 3e-8f};
    int64_t d = 10;
    ox_tensor *t = ox_tensor_new(OX_DT_FLOAT, 1, &d);
    memcpy(ox_tensor_data(t), v, sizeof v);
    ox_fp16_clamp cl = {0};
    ox_tensor *h = ox__fp16_tensor(t, &cl);
    assert_non_null(h);
    assert_int_equal(h->dtype, OX_DT_FLOAT16);
    assert_int_equal(cl.over, 2);
    assert_int_equal(cl.under, 2);   /* 1e-9, -1e-9; 3e-8 > 2^-25 rounds up by itself */
    assert_true(ox_tensor_get_f64(h, 0) == 65504.0);
    assert_true(ox_tensor_get_f64(h, 1) == -65504.0);
    assert_true(isinf(ox_tensor_get_f64(h, 2)));
    assert_true(isnan(ox_tensor_get_f64(h, 3)));
    assert_true(ox_tensor_get_f64(h, 4) == OX_FP16_MIN_POS);
    assert_true(ox_tensor_get_f64(h, 5) == -OX_FP16_MIN_POS);
    assert_true(ox_tensor_get_f64(h, 6) == 0.0);
    assert_true(ox_tensor_get_f64(h, 7) == 1.0);
    assert_true(ox_tensor_get_f64(h, 8) == 65504.0);
    assert_true(ox_tensor_get_f64(h, 9) == OX_FP16_MIN_POS);
    ox_tensor_free(h);
    ox_tensor_free(t);
    assert_null(ox__fp16_tensor(NULL, &cl));

    /* In a model: the weight is converted in place, its big value clamped,
     * and the pass's note counts it. */
    ox_model *m = fh_model(13);
    fh_input(m, "x", 2, d24);
    float w[4] = {1e6f, 0.5f, -0.25f, 2.0f};
    fh_init(m, "w", 1, (int64_t[]){4}, w, 0, 0);
    fh_node(m, "Mul", "y", "x", "w", NULL);
    fh_output(m, "y");
    ox_error err = {0};
    assert_int_equal(ox_infer_model(m, NULL, &err), OX_OK);
    ox_pass_manager *pm = ox_pm_new(OX_LEVEL_BASIC, OX_TARGET_ONNX);
    ox_pass_report rep = {0};
    assert_int_equal(ox_pm_only(pm, "to_fp16", &err), OX_OK);
    assert_int_equal(ox_pm_run(pm, m, &rep, &err), OX_OK);
    const ox_pass_stat *s = ox_pass_report_find(&rep, "to_fp16");
    assert_non_null(s);
    assert_non_null(s->note);
    assert_non_null(strstr(s->note, "1 value(s) clamped to +-65504"));
    assert_true(s->weight_bytes_delta == -8);   /* 16 B of float32 -> 8 B */
    ox_value *wv = ox_graph_find(m->graph, "w");
    assert_int_equal(wv->init->dtype, OX_DT_FLOAT16);
    assert_true(ox_tensor_get_f64(wv->init, 0) == 65504.0);
    ox_pass_report_free(&rep);
    ox_pm_free(pm);
    ox_model_free(m);
}

/* ---- Cast placement and merging ------------------------------------------- */

static void test_casts(void **state)
{
    (void)state;
    /* One Cast per value: x read by two float16 nodes is cast once. */
    ox_model *m = fh_model(13);
    fh_input(m, "x", 2, d24);
    fh_node(m, "Relu", "a", "x", NULL);
    fh_node(m, "Neg", "b", "x", NULL);
    fh_node(m, "Add", "y", "a", "b", NULL);
    fh_output(m, "y");
    ox_model *o = fp16_opt(m, NULL, false, NULL);
    assert_int_equal(fh_count(o, "Cast"), 2);
    ox_model_free(o);
    ox_model_free(m);

    /* A Cast to float of an integer feeding float16 nodes becomes a Cast
     * to float16 (merged): Cast count unchanged but the output's. */
    m = fh_model(13);
    ox_value *i = ox_graph_value(m->graph, "i");
    i->type = ox_type_new_tensor(OX_DT_INT64, 2, d24);
    ox_graph_add_input(m->graph, i);
    cast_node(m, "i", "f", OX_DT_FLOAT);
    fh_init(m, "w", 0, NULL, NULL, 0.5, 1.0);
    fh_node(m, "Mul", "y", "f", "w", NULL);
    fh_output(m, "y");
    o = fp16_opt(m, NULL, false, NULL);
    assert_int_equal(fh_count(o, "Cast"), 2);
    ox_node *c0 = find_op(o->graph, "Cast");
    ox_node *mul = find_op(o->graph, "Mul");
    assert_int_equal(elem(mul->inputs[0]), OX_DT_FLOAT16);
    assert_ptr_equal(mul->inputs[0]->producer->inputs[0], ox_graph_find(o->graph, "i"));
    (void)c0;
    ox_model_free(o);
    ox_model_free(m);

    /* A float16 input cast to float for float16 nodes: the Cast cancels. */
    m = fh_model(13);
    ox_value *h = ox_graph_value(m->graph, "h");
    h->type = ox_type_new_tensor(OX_DT_FLOAT16, 2, d24);
    ox_graph_add_input(m->graph, h);
    cast_node(m, "h", "f", OX_DT_FLOAT);
    fh_node(m, "Relu", "y", "f", NULL);
    fh_output(m, "y");
    ox_error err = {0};
    assert_int_equal(ox_infer_model(m, NULL, &err), OX_OK);
    o = ox_model_clone(m);
    assert_true(fp16_run(o, NULL, false) > 0);
    assert_int_equal(fp16_run(o, NULL, false), 0);
    assert_int_equal(fh_count(o, "Cast"), 1);   /* only the output's */
    assert_ptr_equal(find_op(o->graph, "Relu")->inputs[0], ox_graph_find(o->graph, "h"));
    ox_model_free(o);
    ox_model_free(m);

    /* Shape reads any type: no Cast in front of it. */
    m = fh_model(13);
    fh_input(m, "x", 2, d24);
    fh_node(m, "Shape", "s", "x", NULL);
    fh_node(m, "Reshape", "r", "x", "s", NULL);
    fh_node(m, "Relu", "y", "r", NULL);
    fh_output(m, "y");
    o = fp16_opt(m, NULL, false, NULL);
    assert_ptr_equal(find_op(o->graph, "Shape")->inputs[0], ox_graph_find(o->graph, "x"));
    assert_int_equal(elem(find_op(o->graph, "Reshape")->inputs[0]), OX_DT_FLOAT16);
    assert_int_equal(fh_count(o, "Cast"), 2);
    ox_model_free(o);
    ox_model_free(m);

    /* Two blocked ops in a row share float32 with no Cast between them;
     * a float16 node between them gets one Cast on each side. */
    m = fh_model(13);
    fh_input(m, "x", 2, d24);
    fh_init(m, "c", 0, NULL, NULL, -0.5, 0.5);
    fh_node(m, "Max", "a", "x", "c", NULL);
    fh_node(m, "Min", "b", "a", "c", NULL);
    fh_node(m, "Relu", "y", "b", NULL);
    fh_output(m, "y");
    o = fp16_opt(m, NULL, false, NULL);
    assert_int_equal(fh_count(o, "Cast"), 2);   /* b -> fp16, Relu's -> float */
    assert_ptr_equal(find_op(o->graph, "Min")->inputs[0], find_op(o->graph, "Max")->outputs[0]);
    ox_model_free(o);
    ox_model_free(m);
}

/* ---- --fp16-io --------------------------------------------------------------- */

static void test_fp16_io(void **state)
{
    (void)state;
    ox_model *m = fh_model(13);
    ox_value *x = fh_input(m, "x", 2, d24);
    x->decl = ox_type_clone(x->type);
    fh_init(m, "w", 2, (int64_t[]){4, 3}, NULL, -1, 1);
    fh_node(m, "MatMul", "y", "x", "w", NULL);
    fh_output(m, "y");
    ox_model *o = fp16_opt(m, NULL, true, NULL);
    assert_int_equal(fh_count(o, "Cast"), 0);
    assert_int_equal(elem(o->graph->inputs[0]), OX_DT_FLOAT16);
    assert_int_equal(o->graph->inputs[0]->decl->elem, OX_DT_FLOAT16);
    assert_int_equal(elem(o->graph->outputs[0]), OX_DT_FLOAT16);
    ox_type *st = ox_value_saved_type(o->graph->inputs[0]);
    assert_int_equal(st->elem, OX_DT_FLOAT16);
    ox_type_free(st);
    ox_model_free(o);
    ox_model_free(m);
}

/* ---- subgraphs ------------------------------------------------------------- */

/* x -> Relu -> h; If(cond) then: h * w_then, else: Neg(h). The bodies run
 * in float16 and hand float32 to the If. */
static ox_model *if_model(void)
{
    ox_model *m = fh_model(13);
    ox_graph *g = m->graph;
    fh_input(m, "x", 2, d24);
    ox_value *cond = ox_graph_value(g, "cond");
    cond->type = ox_type_new_tensor(OX_DT_BOOL, 0, NULL);
    ox_graph_add_input(g, cond);
    fh_node(m, "Relu", "h", "x", NULL);
    ox_value *z = ox_graph_value(g, "z");
    ox_node *iff = ox_node_new(g, "If", "", "if", 1, &cond, 1, &z);
    ox_graph_add_output(g, z);
    ox_graph *br[2];
    for (int b = 0; b < 2; b++) {
        ox_graph *t = ox_graph_new(m, g);
        t->owner = iff;
        ox_value *h = ox_graph_value(g, "h");
        ox_value *ty = ox_graph_value(t, b ? "ey" : "ty");
        ty->decl = ox_type_new_tensor(OX_DT_FLOAT, 2, d24);
        if (b) {
            ox_node_new(t, "Neg", "", "neg", 1, &h, 1, &ty);
        } else {
            ox_tensor *wt = ox_tensor_new(OX_DT_FLOAT, 1, (int64_t[]){4});
            for (int k = 0; k < 4; k++)
                ox_tensor_set_f64(wt, k, 0.5 + k);
            ox_value *w = ox_graph_value(t, "w_then");
            ox_graph_set_initializer(t, w, wt);
            ox_value *ins[2] = {h, w};
            ox_node_new(t, "Mul", "", "mul", 2, ins, 1, &ty);
        }
        ox_graph_add_output(t, ty);
        br[b] = t;
    }
    iff->attrs = calloc(2, sizeof(ox_attr));
    iff->attrs[0].name = strdup("then_branch");
    iff->attrs[0].type = OX_ATTR_GRAPH;
    iff->attrs[0].g = br[0];
    iff->attrs[1].name = strdup("else_branch");
    iff->attrs[1].type = OX_ATTR_GRAPH;
    iff->attrs[1].g = br[1];
    iff->n_attrs = 2;
    ox_graph_relink(g);
    return m;
}

static void test_subgraph(void **state)
{
    (void)state;
    ox_model *m = if_model();
    ox_model *o = fp16_opt(m, NULL, false, NULL);
    ox_node *iff = find_op(o->graph, "If");
    assert_int_equal(elem(iff->outputs[0]), OX_DT_FLOAT);
    assert_int_equal(elem(find_op(o->graph, "Relu")->outputs[0]), OX_DT_FLOAT16);
    for (int b = 0; b < 2; b++) {
        ox_graph *body = ox_node_attr(iff, b ? "else_branch" : "then_branch")->g;
        ox_node *op = find_op(body, b ? "Neg" : "Mul");
        assert_non_null(op);
        assert_int_equal(elem(op->inputs[0]), OX_DT_FLOAT16);   /* the outer h, as is */
        assert_int_equal(elem(op->outputs[0]), OX_DT_FLOAT16);
        if (!b)
            assert_int_equal(op->inputs[1]->init->dtype, OX_DT_FLOAT16);   /* body weight */
        /* The body's output stays float32 through one Cast. */
        assert_int_equal(elem(body->outputs[0]), OX_DT_FLOAT);
        assert_int_equal(body->outputs[0]->decl->elem, OX_DT_FLOAT);
        assert_non_null(find_op(body, "Cast"));
    }
    ox_model_free(o);
    ox_model_free(m);
}

/* x -> Relu -> h; Loop 3 times: v <- v * h + w_body, v starting at x. The
 * body runs in float16 between its float32 carried value's Casts. */
static void test_loop(void **state)
{
    (void)state;
    ox_model *m = fh_model(13);
    ox_graph *g = m->graph;
    fh_input(m, "x", 2, d24);
    fh_node(m, "Relu", "h", "x", NULL);
    fh_ints(m, "trip", 1, (int64_t[]){3});
    ox_value *cond0 = ox_graph_value(g, "cond0");
    ox_tensor *ct = ox_tensor_new(OX_DT_BOOL, 0, NULL);
    ox_tensor_set_i64(ct, 0, 1);
    ox_graph_set_initializer(g, cond0, ct);
    ox_value *lin[3] = {ox_graph_value(g, "trip"), cond0, ox_graph_value(g, "x")};
    ox_value *z = ox_graph_value(g, "z");
    ox_node *loop = ox_node_new(g, "Loop", "", "loop", 3, lin, 1, &z);
    ox_graph_add_output(g, z);
    ox_graph *b = ox_graph_new(m, g);
    b->owner = loop;
    ox_value *it = ox_graph_value(b, "it"), *ci = ox_graph_value(b, "ci"),
             *v = ox_graph_value(b, "v");
    it->decl = ox_type_new_tensor(OX_DT_INT64, 0, NULL);
    ci->decl = ox_type_new_tensor(OX_DT_BOOL, 0, NULL);
    v->decl = ox_type_new_tensor(OX_DT_FLOAT, 2, d24);
    it->type = ox_type_clone(it->decl);
    ci->type = ox_type_clone(ci->decl);
    v->type = ox_type_clone(v->decl);
    ox_graph_add_input(b, it);
    ox_graph_add_input(b, ci);
    ox_graph_add_input(b, v);
    ox_tensor *wt = ox_tensor_new(OX_DT_FLOAT, 1, (int64_t[]){4});
    for (int k = 0; k < 4; k++)
        ox_tensor_set_f64(wt, k, 0.25 * k);
    ox_value *w = ox_graph_value(b, "w_body");
    ox_graph_set_initializer(b, w, wt);
    ox_value *h = ox_graph_value(g, "h"), *p = ox_graph_value(b, "p"),
             *vo = ox_graph_value(b, "vo"), *co = ox_graph_value(b, "co");
    vo->decl = ox_type_new_tensor(OX_DT_FLOAT, 2, d24);
    ox_value *mi[2] = {v, h}, *ai[2] = {p, w};
    ox_node_new(b, "Mul", "", "mul", 2, mi, 1, &p);
    ox_node_new(b, "Add", "", "add", 2, ai, 1, &vo);
    ox_node_new(b, "Identity", "", "idc", 1, &ci, 1, &co);
    ox_graph_add_output(b, co);
    ox_graph_add_output(b, vo);
    loop->attrs = calloc(1, sizeof(ox_attr));
    loop->attrs[0].name = strdup("body");
    loop->attrs[0].type = OX_ATTR_GRAPH;
    loop->attrs[0].g = b;
    loop->n_attrs = 1;
    ox_graph_relink(g);
    ox_model *o = fp16_opt(m, NULL, false, NULL);
    ox_graph *ob = ox_node_attr(find_op(o->graph, "Loop"), "body")->g;
    ox_node *mul = find_op(ob, "Mul"), *add = find_op(ob, "Add");
    assert_int_equal(elem(mul->inputs[0]), OX_DT_FLOAT16);   /* a Cast of v */
    assert_int_equal(elem(mul->inputs[1]), OX_DT_FLOAT16);   /* the outer h */
    assert_int_equal(elem(add->outputs[0]), OX_DT_FLOAT16);
    assert_int_equal(add->inputs[1]->init->dtype, OX_DT_FLOAT16);
    assert_int_equal(elem(ob->inputs[2]), OX_DT_FLOAT);      /* interface unchanged */
    assert_int_equal(elem(ob->outputs[1]), OX_DT_FLOAT);
    /* Main: x -> float16 for Relu (the Loop reads x as is, and h is read
     * by the body only). Body: v -> float16, vo_fp16 -> vo. */
    assert_int_equal(fh_count(o, "Cast"), 1);
    int body_casts = 0;
    for (int k = 0; k < ob->n_nodes; k++)
        body_casts += ox_node_is(ob->nodes[k], "Cast");
    assert_int_equal(body_casts, 2);
    ox_model_free(o);
    ox_model_free(m);
}

/* ---- kernel sweep: each op end to end in float16 ---------------------------- */

typedef struct kcase {
    const char *name;
    void (*build)(ox_model *m);
    int64_t opset;
} kcase;

static const int64_t d_img[] = {1, 3, 6, 6}, d_seq[] = {2, 5, 8};

static void b_conv(ox_model *m)
{
    fh_input(m, "x", 4, d_img);
    fh_init(m, "W", 4, (int64_t[]){4, 3, 3, 3}, NULL, -0.5, 0.5);
    fh_init(m, "B", 1, (int64_t[]){4}, NULL, -0.5, 0.5);
    ox_node *n = fh_node(m, "Conv", "y", "x", "W", "B", NULL);
    ox_node_set_attr_ints(n, "pads", 4, (int64_t[]){1, 1, 1, 1});
    fh_output(m, "y");
}
static void b_convt(ox_model *m)
{
    fh_input(m, "x", 4, d_img);
    fh_init(m, "W", 4, (int64_t[]){3, 2, 3, 3}, NULL, -0.5, 0.5);
    fh_node(m, "ConvTranspose", "y", "x", "W", NULL);
    fh_output(m, "y");
}
static void b_matmul(ox_model *m)
{
    fh_input(m, "x", 3, d_seq);
    fh_init(m, "W", 2, (int64_t[]){8, 6}, NULL, -1, 1);
    fh_node(m, "MatMul", "y", "x", "W", NULL);
    fh_output(m, "y");
}
static void b_gemm(ox_model *m)
{
    fh_input(m, "x", 2, (int64_t[]){3, 8});
    fh_init(m, "W", 2, (int64_t[]){5, 8}, NULL, -1, 1);
    fh_init(m, "C", 1, (int64_t[]){5}, NULL, -1, 1);
    ox_node *n = fh_node(m, "Gemm", "y", "x", "W", "C", NULL);
    ox_node_set_attr_i(n, "transB", 1);
    fh_output(m, "y");
}
static void b_layernorm(ox_model *m)
{
    fh_input(m, "x", 3, d_seq);
    fh_init(m, "s", 1, (int64_t[]){8}, NULL, 0.5, 1.5);
    fh_init(m, "b", 1, (int64_t[]){8}, NULL, -0.5, 0.5);
    fh_node(m, "LayerNormalization", "y", "x", "s", "b", NULL);
    fh_output(m, "y");
}
static void b_softmax(ox_model *m)
{
    fh_input(m, "x", 3, d_seq);
    fh_node(m, "Softmax", "y", "x", NULL);
    fh_output(m, "y");
}
static void b_gelu(ox_model *m)
{
    fh_input(m, "x", 3, d_seq);
    fh_node(m, "Gelu", "y", "x", NULL);
    fh_output(m, "y");
}
static void b_unary(ox_model *m)
{
    /* Elementwise chain: Abs, Sqrt, Exp, Log, Erf, Tanh, Sigmoid, Neg, Relu. */
    const char *ops[] = {"Abs", "Sqrt", "Exp", "Log", "Erf", "Tanh", "Sigmoid", "Neg", "Relu"};
    fh_input(m, "x", 3, d_seq);
    const char *prev = "x";
    char names[9][8];
    for (int i = 0; i < 9; i++) {
        snprintf(names[i], sizeof names[i], i == 8 ? "y" : "u%d", i);
        fh_node(m, ops[i], names[i], prev, NULL);
        prev = names[i];
    }
    fh_output(m, "y");
}
static void b_binary(ox_model *m)
{
    fh_input(m, "x", 3, d_seq);
    fh_init(m, "c", 1, (int64_t[]){8}, NULL, 0.5, 1.5);
    fh_node(m, "Add", "a", "x", "c", NULL);
    fh_node(m, "Mul", "b", "a", "c", NULL);
    fh_node(m, "Sub", "d", "b", "x", NULL);
    fh_node(m, "Div", "e", "d", "c", NULL);
    fh_init(m, "two", 0, NULL, (float[]){2.0f}, 0, 0);
    fh_node(m, "Pow", "y", "e", "two", NULL);
    fh_output(m, "y");
}
static void b_clip_where(ox_model *m)
{
    fh_input(m, "x", 3, d_seq);
    fh_init(m, "lo", 0, NULL, (float[]){-0.5f}, 0, 0);
    fh_init(m, "hi", 0, NULL, (float[]){0.5f}, 0, 0);
    fh_node(m, "Clip", "c", "x", "lo", "hi", NULL);
    fh_node(m, "Greater", "g", "x", "lo", NULL);
    fh_node(m, "Where", "y", "g", "c", "x", NULL);
    fh_output(m, "y");
}
static void b_reduce(ox_model *m)
{
    fh_input(m, "x", 3, d_seq);
    fh_node(m, "ReduceMean", "a", "x", NULL);
    fh_node(m, "ReduceMax", "b", "x", NULL);
    fh_node(m, "Add", "y", "a", "b", NULL);
    fh_output(m, "y");
}
static void b_pool(ox_model *m)
{
    fh_input(m, "x", 4, d_img);
    ox_node *n = fh_node(m, "MaxPool", "a", "x", NULL);
    ox_node_set_attr_ints(n, "kernel_shape", 2, (int64_t[]){2, 2});
    n = fh_node(m, "AveragePool", "b", "a", NULL);
    ox_node_set_attr_ints(n, "kernel_shape", 2, (int64_t[]){2, 2});
    fh_node(m, "GlobalAveragePool", "y", "b", NULL);
    fh_output(m, "y");
}
static void b_batchnorm(ox_model *m)
{
    fh_input(m, "x", 4, d_img);
    fh_init(m, "s", 1, (int64_t[]){3}, NULL, 0.5, 1.5);
    fh_init(m, "b", 1, (int64_t[]){3}, NULL, -0.5, 0.5);
    fh_init(m, "mu", 1, (int64_t[]){3}, NULL, -0.5, 0.5);
    fh_init(m, "var", 1, (int64_t[]){3}, NULL, 0.5, 1.5);
    fh_node(m, "BatchNormalization", "a", "x", "s", "b", "mu", "var", NULL);
    fh_node(m, "InstanceNormalization", "y", "a", "s", "b", NULL);
    fh_output(m, "y");
}
static void b_resize(ox_model *m)
{
    fh_input(m, "x", 4, d_img);
    fh_init(m, "scales", 1, (int64_t[]){4}, (float[]){1, 1, 2, 2}, 0, 0);
    ox_node *n = fh_node(m, "Resize", "y", "x", "", "scales", NULL);
    ox_node_set_attr_s(n, "mode", "linear");
    fh_output(m, "y");
}
static void b_minmax_topk(ox_model *m)
{
    fh_input(m, "x", 3, d_seq);
    fh_init(m, "c", 0, NULL, (float[]){0.1f}, 0, 0);
    fh_node(m, "Max", "a", "x", "c", NULL);
    fh_node(m, "Min", "b", "a", "x", NULL);
    fh_ints(m, "axis", 1, (int64_t[]){2});
    ox_value *in[2] = {ox_graph_value(m->graph, "b"), NULL};
    in[1] = ox_graph_value(m->graph, "k");
    int64_t one = 1;
    ox_tensor *k = ox_tensor_new(OX_DT_INT64, 1, &one);
    ox_tensor_set_i64(k, 0, 3);
    ox_graph_set_initializer(m->graph, in[1], k);
    ox_value *out[2] = {ox_graph_value(m->graph, "y"), ox_graph_value(m->graph, "idx")};
    ox_node_new(m->graph, "TopK", "", "topk", 2, in, 2, out);
    fh_node(m, "CumSum", "z", "b", "axis", NULL);
    fh_output(m, "y");
    fh_output(m, "z");
}
static void b_movement(ox_model *m)
{
    fh_input(m, "x", 3, d_seq);
    ox_node *n = fh_node(m, "Transpose", "t", "x", NULL);
    ox_node_set_attr_ints(n, "perm", 3, (int64_t[]){0, 2, 1});
    fh_ints(m, "shape", 2, (int64_t[]){2, 40});
    fh_node(m, "Reshape", "r", "t", "shape", NULL);
    n = fh_node(m, "Concat", "c", "r", "r", NULL);
    ox_node_set_attr_i(n, "axis", 1);
    fh_ints(m, "idx", 3, (int64_t[]){0, 5, 79});
    n = fh_node(m, "Gather", "y", "c", "idx", NULL);
    ox_node_set_attr_i(n, "axis", 1);
    fh_output(m, "y");
}

static const kcase kcases[] = {
    {"Conv", b_conv, 13},
    {"ConvTranspose", b_convt, 13},
    {"MatMul", b_matmul, 13},
    {"Gemm", b_gemm, 13},
    {"LayerNormalization", b_layernorm, 17},
    {"Softmax", b_softmax, 13},
    {"Gelu", b_gelu, 20},
    {"unary chain", b_unary, 13},
    {"binary chain", b_binary, 13},
    {"Clip/Greater/Where", b_clip_where, 13},
    {"ReduceMean/ReduceMax", b_reduce, 13},
    {"MaxPool/AveragePool/GlobalAveragePool", b_pool, 13},
    {"BatchNormalization/InstanceNormalization", b_batchnorm, 13},
    {"Resize", b_resize, 13},
    {"Max/Min/TopK/CumSum", b_minmax_topk, 13},
    {"Transpose/Reshape/Concat/Gather", b_movement, 13},
};

static void test_kernel_sweep(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof kcases / sizeof *kcases; i++) {
        print_message("# %s\n", kcases[i].name);
        ox_model *m = fh_model(kcases[i].opset);
        kcases[i].build(m);
        /* Nothing blocked, float16 in and out: every node runs float16. */
        ox_model *o = fp16_opt(m, "=", true, NULL);
        assert_int_equal(fh_count(o, "Cast"), 0);
        for (int k = 0; k < o->graph->n_nodes; k++) {
            const ox_node *n = o->graph->nodes[k];
            for (int j = 0; j < n->n_outputs; j++)
                if (elem(n->outputs[j]) == OX_DT_FLOAT)
                    fail_msg("%s: %s still produces float32", kcases[i].name, n->op_type);
        }
        ox_model_free(o);
        ox_model_free(m);
    }
}

/* ---- weights by dtype: the cost model, `info` and `optimize` (item 4) ---- */

static void test_dtype_report(void **state)
{
    (void)state;
    ox_model *m = fh_model(13);
    fh_input(m, "x", 2, d24);
    fh_init(m, "w", 2, (int64_t[]){4, 3}, NULL, -1, 1);   /* 48 B */
    fh_node(m, "MatMul", "a", "x", "w", NULL);
    fh_ints(m, "shape", 2, (int64_t[]){3, 2});             /* 16 B */
    fh_node(m, "Reshape", "y", "a", "shape", NULL);
    fh_output(m, "y");
    ox_error err = {0};
    assert_int_equal(ox_infer_model(m, NULL, &err), OX_OK);
    ox_model_cost c = {0};
    assert_int_equal(ox_model_cost_compute(m, &c, &err), OX_OK);
    assert_int_equal(c.weights_bytes, 64);
    assert_int_equal(c.weights_bytes_by_dtype[OX_DT_FLOAT], 48);
    assert_int_equal(c.weights_bytes_by_dtype[OX_DT_INT64], 16);
    ox_model *o = ox_model_clone(m);
    fp16_run(o, NULL, false);
    assert_int_equal(ox_model_cost_compute(o, &c, &err), OX_OK);
    assert_int_equal(c.weights_bytes, 40);
    assert_int_equal(c.weights_bytes_by_dtype[OX_DT_FLOAT], 0);
    assert_int_equal(c.weights_bytes_by_dtype[OX_DT_FLOAT16], 24);
    assert_int_equal(c.weights_bytes_by_dtype[OX_DT_INT64], 16);
    ox_model_free(o);

    /* The CLI says the same (text and JSON). */
    const char *bin = ox_test_bin();
    if (!bin) {
        print_message("onnxscope binary absent: CLI part skipped\n");
        ox_model_free(m);
        return;
    }
    char dir[] = "/tmp/ox_fp16cli_XXXXXX", path[256], out[256], cmd[1024];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/m.onnx", dir);
    snprintf(out, sizeof out, "%s/o.onnx", dir);
    assert_int_equal(ox_save(m, path, NULL, &err), OX_OK);
    char *text = NULL;
    snprintf(cmd, sizeof cmd, "%s optimize %s -o %s --passes to_fp16", bin, path, out);
    assert_int_equal(ox_test_run(cmd, &text), 0);
    if (!strstr(text, "weights by dtype: float32 48 B, int64 16 B -> int64 16 B, float16 24 B") ||
        !strstr(text, "file size ") || !strstr(text, "note: to_fp16: 1 constant(s) converted"))
        fail_msg("optimize output:\n%s", text);
    free(text);
    snprintf(cmd, sizeof cmd, "%s optimize %s -o %s --passes to_fp16 --json", bin, path, out);
    assert_int_equal(ox_test_run(cmd, &text), 0);
    if (!strstr(text, "\"float32\": 48") || !strstr(text, "\"float16\": 24") ||
        !strstr(text, "\"size_ratio\": ") || !strstr(text, "\"output_bytes\": "))
        fail_msg("optimize --json output:\n%s", text);
    free(text);
    snprintf(cmd, sizeof cmd, "%s info %s", bin, out);
    assert_int_equal(ox_test_run(cmd, &text), 0);
    if (!strstr(text, "weights by dtype: int64 16 B, float16 24 B"))
        fail_msg("info output:\n%s", text);
    free(text);
    /* --keep-fp32 needs op types; a bad list is a usage error. */
    snprintf(cmd, sizeof cmd, "%s optimize %s -o %s --passes to_fp16 --keep-fp32 'a b'", bin,
             path, out);
    assert_int_equal(ox_test_run(cmd, &text), 2);
    assert_non_null(strstr(text, "--keep-fp32"));
    free(text);
    unlink(out);
    unlink(path);
    rmdir(dir);
    ox_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_block_list),   cmocka_unit_test(test_clamping),
        cmocka_unit_test(test_casts),        cmocka_unit_test(test_fp16_io),
        cmocka_unit_test(test_subgraph),     cmocka_unit_test(test_loop),
        cmocka_unit_test(test_kernel_sweep), cmocka_unit_test(test_dtype_report),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
