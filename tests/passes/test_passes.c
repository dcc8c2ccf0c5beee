/* Unit tests of the pass manager and the passes on small hand-built graphs:
 * each pass fires where it should, stays put where it must not, keeps
 * graph-output names, is idempotent, and the result computes the same. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnxscope/check.h"
#include "onnxscope/exec.h"
#include "onnxscope/infer.h"
#include "onnxscope/io.h"
#include "onnxscope/passes.h"
#include "onnxscope/randinput.h"

static ox_model *mk(int64_t opset)
{
    ox_model *m = ox_model_new();
    assert_non_null(m);
    ox_model_set_opset(m, "", opset);
    return m;
}

static ox_value *in2(ox_model *m, const char *name, ox_dtype dt, int64_t a, int64_t b)
{
    int64_t d[2] = {a, b};
    ox_value *v = ox_graph_value(m->graph, name);
    v->type = ox_type_new_tensor(dt, 2, d);
    ox_graph_add_input(m->graph, v);
    return v;
}

static ox_node *nd(ox_model *m, const char *op, const char *i0, const char *i1, const char *o)
{
    ox_graph *g = m->graph;
    ox_value *ins[2] = {ox_graph_value(g, i0), i1 ? ox_graph_value(g, i1) : NULL};
    ox_value *out = ox_graph_value(g, o);
    return ox_node_new(g, op, "", o, i1 ? 2 : 1, ins, 1, &out);
}

static void out(ox_model *m, const char *name)
{
    ox_graph_add_output(m->graph, ox_graph_value(m->graph, name));
}

static void init_f(ox_model *m, const char *name, int n, const float *v)
{
    int64_t d = n;
    ox_tensor *t = ox_tensor_new(OX_DT_FLOAT, 1, &d);
    for (int i = 0; i < n; i++)
        ox_tensor_set_f64(t, i, v[i]);
    ox_graph_set_initializer(m->graph, ox_graph_value(m->graph, name), t);
}

static void init_i(ox_model *m, const char *name, int n, const int64_t *v)
{
    int64_t d = n;
    ox_tensor *t = ox_tensor_new(OX_DT_INT64, 1, &d);
    for (int i = 0; i < n; i++)
        ox_tensor_set_i64(t, i, v[i]);
    ox_graph_set_initializer(m->graph, ox_graph_value(m->graph, name), t);
}

static int count_op(const ox_model *m, const char *op)
{
    int c = 0;
    for (int i = 0; i < m->graph->n_nodes; i++)
        c += !strcmp(m->graph->nodes[i]->op_type, op);
    return c;
}

/* Which passes fired in some test case: the last test requires every
 * registered pass to have fired at least once. */
static bool fired[256];

/* Runs only `passes` (comma list) to the fixed point under the shape
 * overrides io (may be NULL); returns rewrites. */
static int run_io(ox_model *m, const char *passes, const ox_infer_opts *io)
{
    ox_pass_manager *pm = ox_pm_new(OX_LEVEL_ALL, OX_TARGET_ONNX);
    ox_error err = {0};
    ox_pass_report rep = {0};
    if (passes)
        assert_int_equal(ox_pm_only(pm, passes, &err), OX_OK);
    ox_pm_set_infer_opts(pm, io);
    assert_int_equal(ox_pm_run(pm, m, &rep, &err), OX_OK);
    int rw = 0;
    for (int i = 0; i < rep.n_passes; i++) {
        rw += rep.passes[i].rewrites;
        const ox_pass *p = ox_pass_find(rep.passes[i].name);
        for (int k = 0; p && rep.passes[i].rewrites > 0 && k < ox_pass_count() && k < 256; k++)
            if (ox_pass_at(k) == p)
                fired[k] = true;
    }
    ox_pass_report_free(&rep);
    ox_pm_free(pm);
    ox_check_report cr = {0};
    ox_status st = ox_check_model(m, &cr);
    if (st)
        print_error("checker: %s\n", cr.n_issues ? cr.issues[0].msg : "?");
    ox_check_report_free(&cr);
    assert_int_equal(st, OX_OK);
    return rw;
}

static int run(ox_model *m, const char *passes)
{
    return run_io(m, passes, NULL);
}

/* Runs the passes on a clone, checks idempotence (a second run changes
 * nothing) and that both models compute the same on random inputs. */
static ox_model *opt_checked(ox_model *m, const char *passes, int *rewrites)
{
    ox_error err = {0};
    assert_int_equal(ox_infer_model(m, NULL, &err), OX_OK);
    ox_model *o = ox_model_clone(m);
    *rewrites = run(o, passes);
    assert_int_equal(run(o, passes), 0);
    ox_exec *ea, *eb;
    ox_exec_opts eo = {.threads = 1};
    assert_int_equal(ox_exec_new(m, &eo, &ea, &err), OX_OK);
    assert_int_equal(ox_exec_new(o, &eo, &eb, &err), OX_OK);
    int ni = m->graph->n_inputs, no = m->graph->n_outputs;
    ox_rval *in[8] = {0}, *ra[8] = {0}, *rb[8] = {0};
    assert_int_equal(ox_random_inputs(m, NULL, 7, 10, in, &err), OX_OK);
    assert_int_equal(ox_exec_run(ea, ni, in, no, ra, &err), OX_OK);
    assert_int_equal(ox_exec_run(eb, ni, in, no, rb, &err), OX_OK);
    for (int k = 0; k < no; k++) {
        char why[256];
        assert_string_equal(m->graph->outputs[k]->name, o->graph->outputs[k]->name);
        assert_true(ox_rval_allclose(rb[k], ra[k], 1e-5, 1e-6, why, sizeof why));
        ox_rval_free(ra[k]);
        ox_rval_free(rb[k]);
    }
    for (int k = 0; k < ni; k++)
        ox_rval_free(in[k]);
    ox_exec_free(ea);
    ox_exec_free(eb);
    return o;
}

static void test_registry(void **state)
{
    (void)state;
    assert_true(ox_pass_count() >= 15);
    for (int i = 0; i < ox_pass_count(); i++) {
        const ox_pass *p = ox_pass_at(i);
        assert_non_null(p->summary);
        assert_ptr_equal(ox_pass_find(p->name), p);
    }
    ox_pass_manager *pm = ox_pm_new(OX_LEVEL_BASIC, OX_TARGET_ONNX);
    ox_error err = {0};
    assert_int_equal(ox_pm_only(pm, "dce,nope", &err), OX_EINVAL);
    assert_int_equal(ox_pm_skip(pm, "dce", &err), OX_OK);
    ox_pm_free(pm);
}

static void test_identity(void **state)
{
    (void)state;
    ox_model *m = mk(17);
    in2(m, "x", OX_DT_FLOAT, 2, 3);
    nd(m, "Identity", "x", NULL, "a");
    nd(m, "Relu", "a", NULL, "b");
    nd(m, "Identity", "b", NULL, "y"); /* produces a graph output */
    nd(m, "Identity", "x", NULL, "z"); /* input straight to output: must stay */
    out(m, "y");
    out(m, "z");
    int rw;
    ox_model *o = opt_checked(m, "eliminate_identity", &rw);
    assert_int_equal(rw, 2);
    assert_int_equal(count_op(o, "Identity"), 1);
    assert_ptr_equal(o->graph->outputs[0]->producer->op_type[0], 'R');
    ox_model_free(o);
    ox_model_free(m);
}

static void test_dropout(void **state)
{
    (void)state;
    ox_model *m = mk(13);
    in2(m, "x", OX_DT_FLOAT, 2, 3);
    nd(m, "Dropout", "x", NULL, "a");
    nd(m, "Relu", "a", NULL, "y");
    out(m, "y");
    int rw;
    ox_model *o = opt_checked(m, "eliminate_dropout", &rw);
    assert_int_equal(count_op(o, "Dropout"), 0);
    ox_model_free(o);
    ox_model_free(m);
    /* Training mode must stay. */
    m = mk(13);
    in2(m, "x", OX_DT_FLOAT, 2, 3);
    ox_graph *g = m->graph;
    ox_tensor *t = ox_tensor_new(OX_DT_BOOL, 0, NULL);
    ox_tensor_set_i64(t, 0, 1);
    ox_graph_set_initializer(g, ox_graph_value(g, "train"), t);
    ox_value *ins[3] = {ox_graph_value(g, "x"), NULL, ox_graph_value(g, "train")};
    ox_value *y = ox_graph_value(g, "y");
    ox_node_new(g, "Dropout", "", "d", 3, ins, 1, &y);
    out(m, "y");
    assert_int_equal(run(m, "eliminate_dropout,constant_folding,cse"), 0);
    assert_int_equal(count_op(m, "Dropout"), 1);
    ox_model_free(m);
}

static void test_transpose(void **state)
{
    (void)state;
    ox_model *m = mk(17);
    in2(m, "x", OX_DT_FLOAT, 2, 3);
    int64_t id[2] = {0, 1}, sw[2] = {1, 0};
    ox_node_set_attr_ints(nd(m, "Transpose", "x", NULL, "a"), "perm", 2, id);
    ox_node_set_attr_ints(nd(m, "Transpose", "a", NULL, "b"), "perm", 2, sw);
    nd(m, "Relu", "b", NULL, "y");
    out(m, "y");
    int rw;
    ox_model *o = opt_checked(m, "eliminate_noop", &rw);
    /* The identity perm goes, the real one stays. */
    assert_int_equal(rw, 1);
    assert_int_equal(count_op(o, "Transpose"), 1);
    ox_model_free(o);
    /* Two swaps cancel out. */
    ox_model *m2 = mk(17);
    in2(m2, "x", OX_DT_FLOAT, 2, 3);
    ox_node_set_attr_ints(nd(m2, "Transpose", "x", NULL, "a"), "perm", 2, sw);
    ox_node_set_attr_ints(nd(m2, "Transpose", "a", NULL, "b"), "perm", 2, sw);
    nd(m2, "Relu", "b", NULL, "y");
    out(m2, "y");
    o = opt_checked(m2, "fuse_transposes,eliminate_noop,dce", &rw);
    assert_int_equal(count_op(o, "Transpose"), 0);
    ox_model_free(o);
    ox_model_free(m2);
    ox_model_free(m);
}

static void test_cast(void **state)
{
    (void)state;
    ox_model *m = mk(17);
    in2(m, "x", OX_DT_FLOAT, 2, 3);
    ox_node_set_attr_i(nd(m, "Cast", "x", NULL, "a"), "to", OX_DT_FLOAT);
    ox_node_set_attr_i(nd(m, "Cast", "a", NULL, "y"), "to", OX_DT_INT32); /* changes type */
    out(m, "y");
    int rw;
    ox_model *o = opt_checked(m, "eliminate_noop,dce", &rw);
    assert_int_equal(count_op(o, "Cast"), 1);
    assert_int_equal(ox_node_attr_i(o->graph->nodes[0], "to", 0), OX_DT_INT32);
    ox_model_free(o);
    ox_model_free(m);
}

static void test_fold(void **state)
{
    (void)state;
    ox_model *m = mk(17);
    in2(m, "x", OX_DT_FLOAT, 2, 3);
    float a[3] = {1, 2, 3}, b[3] = {4, 5, 6};
    init_f(m, "ca", 3, a);
    init_f(m, "cb", 3, b);
    nd(m, "Add", "ca", "cb", "s");        /* foldable */
    nd(m, "Mul", "x", "s", "y");
    nd(m, "Sub", "cb", "ca", "z");        /* foldable but a graph output: stays */
    out(m, "y");
    out(m, "z");
    int rw;
    ox_model *o = opt_checked(m, "constant_folding,remove_unused_initializers", &rw);
    assert_int_equal(count_op(o, "Add"), 0);
    assert_int_equal(count_op(o, "Sub"), 1);
    ox_value *s = ox_graph_find(o->graph, "s");
    assert_non_null(s);
    assert_non_null(s->init);
    assert_true(ox_tensor_get_f64(s->init, 2) == 9.0);
    ox_model_free(o);
    ox_model_free(m);
}

static void test_fold_limit(void **state)
{
    (void)state;
    /* Expand to 4 MiB exceeds the 1 MiB growth limit. */
    ox_model *m = mk(17);
    in2(m, "x", OX_DT_FLOAT, 1024, 1024);
    float one[1] = {1};
    int64_t shp[2] = {1024, 1024};
    init_f(m, "c", 1, one);
    init_i(m, "shape", 2, shp);
    nd(m, "Expand", "c", "shape", "e");
    nd(m, "Add", "x", "e", "y");
    out(m, "y");
    ox_error err = {0};
    assert_int_equal(ox_infer_model(m, NULL, &err), OX_OK);
    assert_int_equal(run(m, "constant_folding"), 0);
    assert_int_equal(count_op(m, "Expand"), 1);
    ox_model_free(m);
}

static int64_t init_bytes(const ox_model *m)
{
    int64_t b = 0;
    for (int i = 0; i < m->graph->n_values; i++)
        if (m->graph->values[i]->init)
            b += (int64_t)m->graph->values[i]->init->nbytes;
    return b;
}

static void test_fold_concat_bomb(void **state)
{
    (void)state;
    /* c_{k+1} = Concat(c_k, c_k) from 16 bytes, 28 times: 4 GiB if every
     * step folded. Each step frees c_k once (not twice), so growth is the
     * size of c_k and folding stops near the 1 MiB limit. */
    ox_model *m = mk(13);
    float z[4] = {0};
    init_f(m, "c0", 4, z);
    char a[16], b[16];
    for (int k = 0; k < 28; k++) {
        snprintf(a, sizeof a, "c%d", k);
        snprintf(b, sizeof b, "c%d", k + 1);
        ox_node_set_attr_i(nd(m, "Concat", a, a, b), "axis", 0);
    }
    nd(m, "ReduceSum", b, NULL, "y");
    out(m, "y");
    ox_error err = {0};
    assert_int_equal(ox_infer_model(m, NULL, &err), OX_OK);
    assert_true(run(m, NULL) > 0);                 /* every pass, to the fixed point */
    assert_true(init_bytes(m) <= (4 << 20));
    assert_true(count_op(m, "Concat") > 0);        /* the rest stays computed */
    char path[] = "/tmp/oxfoldbombXXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    ox_save_opts so = {0};
    assert_int_equal(ox_save(m, path, &so, &err), OX_OK);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true(st.st_size < (5 << 20));
    char data[64];
    snprintf(data, sizeof data, "%s.data", path);
    assert_int_not_equal(access(data, F_OK), 0);   /* no external data needed */
    unlink(path);
    ox_model_free(m);
}

static void test_fold_total_room(void **state)
{
    (void)state;
    /* 64 Expands of one float to 512 KiB each: every one is under the
     * per-node limit, together 32 MiB; a run adds at most 16 limits. */
    ox_model *m = mk(13);
    float one[1] = {1};
    int64_t shp[1] = {128 * 1024};
    init_f(m, "c", 1, one);
    init_i(m, "shape", 1, shp);
    in2(m, "x", OX_DT_FLOAT, 1, 128 * 1024);
    char e[16], s[16], p[16];
    snprintf(s, sizeof s, "x");
    for (int k = 0; k < 64; k++) {
        snprintf(e, sizeof e, "e%d", k);
        snprintf(p, sizeof p, "s%d", k);
        nd(m, "Expand", "c", "shape", e);
        nd(m, "Add", s, e, p);
        snprintf(s, sizeof s, "%s", p);
    }
    ox_value_rename(ox_graph_find(m->graph, s), "y", NULL);
    out(m, "y");
    ox_error err = {0};
    assert_int_equal(ox_infer_model(m, NULL, &err), OX_OK);
    assert_true(run(m, "constant_folding") > 0);
    assert_true(init_bytes(m) <= (16 << 20) + 64);
    assert_true(count_op(m, "Expand") > 0);
    ox_model_free(m);
}

static void test_cse_dedup(void **state)
{
    (void)state;
    ox_model *m = mk(17);
    in2(m, "x", OX_DT_FLOAT, 2, 3);
    in2(m, "w", OX_DT_FLOAT, 2, 3);
    float a[3] = {1, 2, 3};
    init_f(m, "c1", 3, a);
    init_f(m, "c2", 3, a);
    nd(m, "Add", "x", "w", "p");
    nd(m, "Add", "w", "x", "q");  /* commuted duplicate */
    nd(m, "Mul", "p", "c1", "r");
    nd(m, "Mul", "q", "c2", "s");
    nd(m, "Sub", "r", "s", "y");
    out(m, "y");
    int rw;
    ox_model *o = opt_checked(m, "dedup_initializers,cse,remove_unused_initializers", &rw);
    assert_int_equal(count_op(o, "Add"), 1);
    assert_int_equal(count_op(o, "Mul"), 1);
    ox_model_free(o);
    /* Non-commutative ops with swapped inputs stay apart. */
    ox_model *m2 = mk(17);
    in2(m2, "x", OX_DT_FLOAT, 2, 3);
    in2(m2, "w", OX_DT_FLOAT, 2, 3);
    nd(m2, "Sub", "x", "w", "p");
    nd(m2, "Sub", "w", "x", "q");
    nd(m2, "Add", "p", "q", "y");
    out(m2, "y");
    o = opt_checked(m2, "cse", &rw);
    assert_int_equal(rw, 0);
    ox_model_free(o);
    ox_model_free(m2);
    ox_model_free(m);
}

static void test_reshape_and_shape_chain(void **state)
{
    (void)state;
    /* Shape -> Gather -> Unsqueeze -> Concat -> Reshape with a symbolic
     * batch: folds under --dim batch=2 only. */
    ox_model *m = mk(13);
    int64_t d[2] = {-1, 6};
    ox_value *x = ox_graph_value(m->graph, "x");
    x->type = ox_type_new_tensor(OX_DT_FLOAT, 2, d);
    x->type->dims[0].param = ox_strdup("batch");
    ox_graph_add_input(m->graph, x);
    int64_t zero[1] = {0}, rest[2] = {2, 3};
    init_i(m, "i0", 1, zero);
    init_i(m, "rest", 2, rest);
    nd(m, "Shape", "x", NULL, "s");
    nd(m, "Gather", "s", "i0", "b");
    nd(m, "Concat", "b", "rest", "shape");
    ox_node_set_attr_i(m->graph->nodes[2], "axis", 0);
    nd(m, "Reshape", "x", "shape", "r");
    int64_t flat[2] = {-1, 6};
    init_i(m, "flat", 2, flat);
    nd(m, "Reshape", "r", "flat", "y");
    out(m, "y");
    out(m, "r");
    ox_error err = {0};
    ox_model *o = ox_model_clone(m);
    /* Without the override the chain stays (fuse_reshape_shape would turn
     * the copied batch into a 0 instead: test_fuse_gemm.c). */
    run(o, "constant_to_initializer,fold_shape_chains,constant_folding,fuse_reshapes,dce");
    assert_int_equal(count_op(o, "Shape"), 1);
    ox_model_free(o);
    o = ox_model_clone(m);
    ox_infer_opts io = {0};
    assert_int_equal(ox_infer_opts_add_dim(&io, "batch=2", &err), OX_OK);
    ox_pass_manager *pm = ox_pm_new(OX_LEVEL_BASIC, OX_TARGET_ONNX);
    ox_pm_set_infer_opts(pm, &io);
    ox_pass_report rep = {0};
    assert_int_equal(ox_pm_run(pm, o, &rep, &err), OX_OK);
    assert_int_equal(count_op(o, "Shape"), 0);
    assert_int_equal(count_op(o, "Concat"), 0);
    /* The second Reshape now reads x (fused); it cannot go: it would
     * connect the graph input straight to an output. */
    assert_int_equal(count_op(o, "Reshape"), 2);
    assert_ptr_equal(o->graph->outputs[0]->producer->inputs[0], o->graph->inputs[0]);
    assert_true(rep.n_touched + rep.n_removed_ids > 0);
    assert_true(rep.nodes_after < rep.nodes_before);
    assert_non_null(ox_pass_report_find(&rep, "fold_shape_chains"));
    ox_pass_report_free(&rep);
    /* Stepping a pass changes nothing now: the graph is at a fixed point. */
    for (int i = 0; i < ox_pm_count(pm); i++) {
        /* A precision conversion (to_fp16) changes any float graph. */
        if (ox_pm_pass(pm, i)->category == OX_PASS_PRECISION)
            continue;
        /* upgrade_opset converts any model below opset 17 (this one is 13):
         * a one-way conversion, not a pattern with a fixed point. */
        if (!strcmp(ox_pm_pass(pm, i)->name, "upgrade_opset"))
            continue;
        ox_pass_report r2 = {0};
        assert_int_equal(ox_pm_step(pm, o, i, 0, &r2, &err), OX_OK);
        assert_int_equal(r2.n_passes == 1 ? r2.passes[0].rewrites : 0, 0);
        ox_pass_report_free(&r2);
    }
    ox_pm_free(pm);
    ox_infer_opts_free(&io);
    ox_model_free(o);
    ox_model_free(m);
}

static void test_step_one_rewrite(void **state)
{
    (void)state;
    ox_model *m = mk(17);
    in2(m, "x", OX_DT_FLOAT, 2, 3);
    nd(m, "Identity", "x", NULL, "a");
    nd(m, "Identity", "a", NULL, "b");
    nd(m, "Relu", "b", NULL, "y");
    out(m, "y");
    ox_pass_manager *pm = ox_pm_new(OX_LEVEL_BASIC, OX_TARGET_ONNX);
    int k = -1;
    for (int i = 0; i < ox_pm_count(pm); i++)
        if (!strcmp(ox_pm_pass(pm, i)->name, "eliminate_identity"))
            k = i;
    assert_true(k >= 0);
    ox_error err = {0};
    ox_pass_report rep = {0};
    assert_int_equal(ox_pm_step(pm, m, k, 1, &rep, &err), OX_OK);
    assert_int_equal(count_op(m, "Identity"), 1);
    assert_int_equal(rep.n_removed_ids, 1);
    ox_pass_report_free(&rep);
    ox_pm_free(pm);
    ox_model_free(m);
}

static void test_fusions(void **state)
{
    (void)state;
    ox_model *m = mk(13);
    in2(m, "x", OX_DT_FLOAT, 2, 3);
    nd(m, "Softmax", "x", NULL, "s");
    nd(m, "Log", "s", NULL, "l");
    int64_t ax[1] = {1};
    init_i(m, "ax", 1, ax);
    ox_node_set_attr_i(nd(m, "ReduceMax", "l", NULL, "r"), "keepdims", 0);
    ox_node_set_attr_ints(m->graph->nodes[2], "axes", 1, ax);
    nd(m, "Unsqueeze", "r", "ax", "u");
    nd(m, "Exp", "u", NULL, "e");
    nd(m, "ArgMax", "e", NULL, "y");
    out(m, "y");
    int rw;
    ox_model *o = opt_checked(m, NULL, &rw);
    assert_int_equal(count_op(o, "LogSoftmax"), 1);
    assert_int_equal(count_op(o, "Unsqueeze"), 0);
    assert_int_equal(count_op(o, "Exp"), 0);
    ox_model_free(o);
    ox_model_free(m);
}


/* X -> Relu -> Identity -> Y, read only inside both branches of an If. */
static ox_model *if_model(bool const_cond)
{
    ox_model *m = mk(17);
    ox_graph *g = m->graph;
    in2(m, "X", OX_DT_FLOAT, 2, 3);
    ox_value *cond = ox_graph_value(g, "cond");
    if (const_cond) {
        ox_tensor *t = ox_tensor_new(OX_DT_BOOL, 0, NULL);
        ox_tensor_set_i64(t, 0, 1);
        ox_graph_set_initializer(g, cond, t);
    } else {
        cond->type = ox_type_new_tensor(OX_DT_BOOL, 0, NULL);
        ox_graph_add_input(g, cond);
    }
    nd(m, "Relu", "X", NULL, "Y0");
    nd(m, "Identity", "Y0", NULL, "Y");
    ox_value *z = ox_graph_value(g, "Z");
    ox_node *iff = ox_node_new(g, "If", "", "if", 1, &cond, 1, &z);
    ox_graph_add_output(g, z);
    ox_graph *branches[2];
    for (int b = 0; b < 2; b++) {
        ox_graph *t = ox_graph_new(m, g);
        t->owner = iff;
        ox_value *y = ox_graph_value(g, "Y");
        ox_value *ty = ox_graph_value(t, b ? "ey" : "ty");
        ox_node_new(t, b ? "Abs" : "Neg", "", b ? "abs" : "neg", 1, &y, 1, &ty);
        ox_graph_add_output(t, ty);
        branches[b] = t;
    }
    iff->attrs = calloc(2, sizeof(ox_attr));
    iff->attrs[0].name = strdup("then_branch");
    iff->attrs[0].type = OX_ATTR_GRAPH;
    iff->attrs[0].g = branches[0];
    iff->attrs[1].name = strdup("else_branch");
    iff->attrs[1].type = OX_ATTR_GRAPH;
    iff->attrs[1].g = branches[1];
    iff->n_attrs = 2;
    ox_graph_relink(g);
    return m;
}

static void test_if_and_subgraph_reads(void **state)
{
    (void)state;
    /* A value read only by a subgraph is live; the Identity feeding it may
     * go (the subgraph then reads its input). */
    ox_model *m = if_model(false);
    int rw;
    ox_model *o = opt_checked(m, NULL, &rw);
    assert_int_equal(count_op(o, "Relu"), 1);
    assert_int_equal(count_op(o, "If"), 1);
    assert_int_equal(count_op(o, "Identity"), 0);
    ox_model_free(o);
    ox_model_free(m);
    /* A constant condition inlines the then branch. */
    m = if_model(true);
    o = opt_checked(m, NULL, &rw);
    assert_int_equal(count_op(o, "If"), 0);
    assert_int_equal(count_op(o, "Neg"), 1);
    assert_string_equal(o->graph->outputs[0]->name, "Z");
    assert_non_null(o->graph->outputs[0]->producer);
    ox_model_free(o);
    ox_model_free(m);
}


static void test_squeezes(void **state)
{
    (void)state;
    for (int opset = 11; opset <= 13; opset += 2) {
        ox_model *m = mk(opset);
        in2(m, "x", OX_DT_FLOAT, 2, 3);
        int64_t a0[1] = {0}, a2[1] = {2}, m1[1] = {-4};
        ox_node *u1 = nd(m, "Unsqueeze", "x", opset >= 13 ? "a0" : NULL, "u1");
        ox_node *u2 = nd(m, "Unsqueeze", "u1", opset >= 13 ? "a2" : NULL, "u2");
        ox_node *s1 = nd(m, "Squeeze", "u2", opset >= 13 ? "m1" : NULL, "s1");
        nd(m, "Relu", "s1", NULL, "y");
        if (opset >= 13) {
            init_i(m, "a0", 1, a0);
            init_i(m, "a2", 1, a2);
            init_i(m, "m1", 1, m1);
        } else {
            ox_node_set_attr_ints(u1, "axes", 1, a0);
            ox_node_set_attr_ints(u2, "axes", 1, a2);
            ox_node_set_attr_ints(s1, "axes", 1, m1);
        }
        out(m, "y");
        out(m, "u2");
        int rw;
        ox_model *o = opt_checked(m, "fuse_squeezes,dce,remove_unused_initializers", &rw);
        /* u2 = Unsqueeze(x, [0, 2]); the Squeeze of it at -4 (= 0) does not
         * undo it, so one Unsqueeze and the Squeeze stay. */
        assert_int_equal(count_op(o, "Unsqueeze"), 1);
        assert_int_equal(count_op(o, "Squeeze"), 1);
        ox_model_free(o);
        ox_model_free(m);
    }
    /* Unsqueeze then Squeeze of the same axis cancel. */
    ox_model *m = mk(13);
    in2(m, "x", OX_DT_FLOAT, 2, 3);
    int64_t a1[1] = {1};
    init_i(m, "a1", 1, a1);
    nd(m, "Unsqueeze", "x", "a1", "u");
    nd(m, "Squeeze", "u", "a1", "s");
    nd(m, "Relu", "s", NULL, "y");
    out(m, "y");
    int rw;
    ox_model *o = opt_checked(m, "fuse_squeezes,dce", &rw);
    assert_int_equal(count_op(o, "Unsqueeze") + count_op(o, "Squeeze"), 0);
    ox_model_free(o);
    ox_model_free(m);
}


static void test_slices(void **state)
{
    (void)state;
    ox_model *m = mk(13);
    in2(m, "x", OX_DT_FLOAT, 4, 6);
    int64_t s0[1] = {1}, e0[1] = {3}, a0[1] = {0}, s1[1] = {2}, e1[1] = {-1}, a1[1] = {-1};
    init_i(m, "s0", 1, s0);
    init_i(m, "e0", 1, e0);
    init_i(m, "a0", 1, a0);
    init_i(m, "s1", 1, s1);
    init_i(m, "e1", 1, e1);
    init_i(m, "a1", 1, a1);
    ox_graph *g = m->graph;
    ox_value *i1[4] = {ox_graph_value(g, "x"), ox_graph_value(g, "s0"), ox_graph_value(g, "e0"),
                       ox_graph_value(g, "a0")};
    ox_value *o1 = ox_graph_value(g, "p");
    ox_node_new(g, "Slice", "", "sl1", 4, i1, 1, &o1);
    ox_value *i2[4] = {o1, ox_graph_value(g, "s1"), ox_graph_value(g, "e1"),
                       ox_graph_value(g, "a1")};
    ox_value *o2 = ox_graph_value(g, "q");
    ox_node_new(g, "Slice", "", "sl2", 4, i2, 1, &o2);
    /* Same axis twice: must not merge by concatenation. */
    ox_value *i3[4] = {o2, ox_graph_value(g, "s0"), ox_graph_value(g, "e0"),
                       ox_graph_value(g, "a0")};
    ox_value *o3 = ox_graph_value(g, "y");
    ox_node_new(g, "Slice", "", "sl3", 4, i3, 1, &o3);
    out(m, "y");
    int rw;
    ox_model *o = opt_checked(m, "fuse_slices,dce", &rw);
    assert_int_equal(rw, 2); /* one fusion, then the first Slice is dead */
    assert_int_equal(count_op(o, "Slice"), 2);
    ox_model_free(o);
    ox_model_free(m);
}

static ox_node *find_op(const ox_model *m, const char *op)
{
    for (int i = 0; i < m->graph->n_nodes; i++)
        if (!strcmp(m->graph->nodes[i]->op_type, op))
            return m->graph->nodes[i];
    return NULL;
}

/* Names of a model's top-level nodes, in order, joined by ','. */
static void node_names(const ox_model *m, char *buf, size_t cap)
{
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < m->graph->n_nodes && at < cap; i++)
        at += (size_t)snprintf(buf + at, cap - at, "%s%s", i ? "," : "",
                               m->graph->nodes[i]->name);
}

static void test_constant_to_initializer(void **state)
{
    (void)state;
    ox_model *m = mk(17);
    ox_graph *g = m->graph;
    in2(m, "x", OX_DT_FLOAT, 2, 3);
    /* c = Constant(value=[1,2,3]) feeds a Mul: becomes an initializer. */
    int64_t d3 = 3;
    ox_tensor *t = ox_tensor_new(OX_DT_FLOAT, 1, &d3);
    for (int i = 0; i < 3; i++)
        ox_tensor_set_f64(t, i, 1.5 * (i + 1));
    ox_value *c = ox_graph_value(g, "c");
    ox_node_set_attr_t(ox_node_new(g, "Constant", "", "const_c", 0, NULL, 1, &c), "value", t);
    nd(m, "Mul", "x", "c", "y");
    /* k = Constant(value_int=7) is a graph output: stays a node. */
    ox_value *k = ox_graph_value(g, "k");
    ox_node_set_attr_i(ox_node_new(g, "Constant", "", "const_k", 0, NULL, 1, &k), "value_int", 7);
    out(m, "y");
    out(m, "k");
    int rw;
    ox_model *o = opt_checked(m, "constant_to_initializer", &rw);
    assert_int_equal(rw, 1);
    assert_int_equal(count_op(o, "Constant"), 1);
    ox_value *cv = ox_graph_find(o->graph, "c");
    assert_non_null(cv);
    assert_non_null(cv->init);
    assert_null(cv->producer);
    assert_int_equal(cv->init->dtype, OX_DT_FLOAT);
    assert_int_equal(cv->init->rank, 1);
    assert_int_equal(cv->init->dims[0], 3);
    assert_true(ox_tensor_get_f64(cv->init, 2) == 4.5);
    /* The Mul still reads the value named c. */
    assert_ptr_equal(o->graph->outputs[0]->producer->inputs[1], cv);
    assert_string_equal(o->graph->outputs[1]->name, "k");
    assert_non_null(o->graph->outputs[1]->producer);
    assert_string_equal(o->graph->outputs[1]->producer->op_type, "Constant");
    ox_model_free(o);
    /* Moving bytes from a Constant node to an initializer saves nothing:
     * the report counts Constant nodes' values as weights (12 bytes of
     * floats and the 8-byte value_int before and after). */
    {
        ox_model *o2 = ox_model_clone(m);
        ox_pass_manager *pm = ox_pm_new(OX_LEVEL_BASIC, OX_TARGET_ONNX);
        ox_pass_report rep = {0};
        ox_error err = {0};
        assert_int_equal(ox_pm_only(pm, "constant_to_initializer", &err), OX_OK);
        assert_int_equal(ox_pm_run(pm, o2, &rep, &err), OX_OK);
        assert_int_equal(rep.init_bytes_before, 12 + 8);
        assert_int_equal(rep.init_bytes_after, 12 + 8);
        const ox_pass_stat *ps = ox_pass_report_find(&rep, "constant_to_initializer");
        assert_non_null(ps);
        assert_int_equal(ps->rewrites, 1);
        assert_int_equal(ps->bytes_saved, 0);
        ox_pass_report_free(&rep);
        ox_pm_free(pm);
        ox_model_free(o2);
    }
    ox_model_free(m);

    /* A Constant read only inside a subgraph keeps its name: the branch
     * still resolves it after the node became an initializer. */
    m = if_model(false);
    g = m->graph;
    ox_value *s = ox_graph_value(g, "sc");
    ox_node_set_attr_f(ox_node_new(g, "Constant", "", "const_sc", 0, NULL, 1, &s), "value_float",
                       2.0f);
    ox_node *iff = find_op(m, "If");
    assert_non_null(iff);
    ox_graph *then = ox_node_attr(iff, "then_branch")->g;
    /* The then branch becomes ty = Add(Y, sc). */
    ox_node *neg = then->nodes[0];
    free(neg->op_type);
    neg->op_type = strdup("Add");
    ox_node_set_input(neg, 1, s);
    ox_graph_relink(g);
    o = opt_checked(m, "constant_to_initializer,dce", &rw);
    assert_int_equal(rw, 1);
    assert_int_equal(count_op(o, "Constant"), 0);
    ox_value *sv = ox_graph_find(o->graph, "sc");
    assert_non_null(sv);
    assert_non_null(sv->init);
    assert_true(ox_tensor_get_f64(sv->init, 0) == 2.0);
    ox_node *add = ox_node_attr(find_op(o, "If"), "then_branch")->g->nodes[0];
    assert_ptr_equal(add->inputs[1], sv);
    ox_model_free(o);
    ox_model_free(m);
}

static void test_fold_shape_chains(void **state)
{
    (void)state;
    /* Static shapes: s = Shape(x) is known, so it becomes an initializer;
     * sh = Shape(x) is a graph output and keeps its producer. */
    ox_model *m = mk(17);
    in2(m, "x", OX_DT_FLOAT, 2, 3);
    in2(m, "w", OX_DT_FLOAT, 3, 2);
    nd(m, "Shape", "x", NULL, "s");
    nd(m, "Reshape", "w", "s", "y");
    nd(m, "Shape", "w", NULL, "sh");
    out(m, "y");
    out(m, "sh");
    int rw;
    ox_model *o = opt_checked(m, "fold_shape_chains", &rw);
    assert_int_equal(rw, 1);
    assert_int_equal(count_op(o, "Shape"), 1);
    assert_int_equal(count_op(o, "Reshape"), 1);
    ox_value *s = ox_graph_find(o->graph, "s");
    assert_non_null(s);
    assert_non_null(s->init);
    assert_int_equal(s->init->dtype, OX_DT_INT64);
    assert_int_equal(s->init->dims[0], 2);
    assert_int_equal(ox_tensor_get_i64(s->init, 0), 2);
    assert_int_equal(ox_tensor_get_i64(s->init, 1), 3);
    assert_string_equal(o->graph->outputs[1]->name, "sh");
    assert_string_equal(o->graph->outputs[1]->producer->op_type, "Shape");
    ox_model_free(o);
    ox_model_free(m);

    /* A symbolic dim: without an override nothing is known, so the chain
     * stays; with --dim batch=2 it folds (idempotently). */
    m = mk(13);
    int64_t d[2] = {-1, 6};
    ox_value *x = ox_graph_value(m->graph, "x");
    x->type = ox_type_new_tensor(OX_DT_FLOAT, 2, d);
    x->type->dims[0].param = ox_strdup("batch");
    ox_graph_add_input(m->graph, x);
    int64_t zero[1] = {0}, rest[2] = {2, 3};
    init_i(m, "i0", 1, zero);
    init_i(m, "rest", 2, rest);
    nd(m, "Shape", "x", NULL, "s");
    nd(m, "Gather", "s", "i0", "b");
    ox_node_set_attr_i(nd(m, "Concat", "b", "rest", "shape"), "axis", 0);
    nd(m, "Reshape", "x", "shape", "y");
    out(m, "y");
    o = ox_model_clone(m);
    assert_int_equal(run(o, "fold_shape_chains"), 0);
    assert_int_equal(count_op(o, "Shape"), 1);
    assert_int_equal(count_op(o, "Gather"), 1);
    assert_int_equal(count_op(o, "Concat"), 1);
    ox_model_free(o);
    ox_error err = {0};
    ox_infer_opts io = {0};
    assert_int_equal(ox_infer_opts_add_dim(&io, "batch=2", &err), OX_OK);
    o = ox_model_clone(m);
    assert_true(run_io(o, "fold_shape_chains,dce,remove_unused_initializers", &io) > 0);
    assert_int_equal(run_io(o, "fold_shape_chains,dce,remove_unused_initializers", &io), 0);
    assert_int_equal(count_op(o, "Shape") + count_op(o, "Gather") + count_op(o, "Concat"), 0);
    assert_int_equal(o->graph->n_nodes, 1);
    ox_value *sh = ox_graph_find(o->graph, "shape");
    assert_non_null(sh);
    assert_non_null(sh->init);
    assert_int_equal(sh->init->dims[0], 3);
    assert_int_equal(ox_tensor_get_i64(sh->init, 0), 2);
    assert_int_equal(ox_tensor_get_i64(sh->init, 1), 2);
    assert_int_equal(ox_tensor_get_i64(sh->init, 2), 3);
    ox_model_free(o);
    ox_infer_opts_free(&io);
    ox_model_free(m);

    /* sx = Shape(X) read only inside a branch: it folds under its own name,
     * and the branch still reads it. */
    m = if_model(false);
    nd(m, "Shape", "X", NULL, "sx");
    ox_graph *then = ox_node_attr(find_op(m, "If"), "then_branch")->g;
    ox_node *neg = then->nodes[0];
    free(neg->op_type);
    neg->op_type = strdup("Reshape"); /* ty = Reshape(Y, sx) */
    ox_node_set_input(neg, 1, ox_graph_value(m->graph, "sx"));
    ox_graph_relink(m->graph);
    o = opt_checked(m, "fold_shape_chains,dce", &rw);
    assert_int_equal(count_op(o, "Shape"), 0);
    ox_value *sx = ox_graph_find(o->graph, "sx");
    assert_non_null(sx);
    assert_non_null(sx->init);
    then = ox_node_attr(find_op(o, "If"), "then_branch")->g;
    assert_ptr_equal(then->nodes[0]->inputs[1], sx);
    ox_model_free(o);
    ox_model_free(m);
}

static void test_fuse_concats(void **state)
{
    (void)state;
    /* Concat(Concat(x, w, axis 1), v, axis 1) = Concat(x, w, v, axis 1). */
    ox_model *m = mk(13);
    in2(m, "x", OX_DT_FLOAT, 2, 3);
    in2(m, "w", OX_DT_FLOAT, 2, 1);
    in2(m, "v", OX_DT_FLOAT, 2, 2);
    ox_node_set_attr_i(nd(m, "Concat", "x", "w", "c1"), "axis", 1);
    ox_node_set_attr_i(nd(m, "Concat", "v", "c1", "y"), "axis", 1);
    out(m, "y");
    int rw;
    ox_model *o = opt_checked(m, "fuse_concats", &rw);
    assert_int_equal(rw, 1);
    assert_int_equal(count_op(o, "Concat"), 1);
    ox_node *c = o->graph->nodes[0];
    assert_int_equal(c->n_inputs, 3);
    assert_string_equal(c->inputs[0]->name, "v");
    assert_string_equal(c->inputs[1]->name, "x");
    assert_string_equal(c->inputs[2]->name, "w");
    assert_string_equal(c->outputs[0]->name, "y");
    assert_null(ox_graph_find(o->graph, "c1"));
    ox_model_free(o);
    ox_model_free(m);

    /* Different axes must stay. */
    m = mk(13);
    in2(m, "x", OX_DT_FLOAT, 2, 3);
    in2(m, "w", OX_DT_FLOAT, 2, 3);
    in2(m, "v", OX_DT_FLOAT, 4, 2);
    ox_node_set_attr_i(nd(m, "Concat", "x", "w", "c1"), "axis", 0);
    ox_node_set_attr_i(nd(m, "Concat", "c1", "v", "y"), "axis", 1);
    out(m, "y");
    o = opt_checked(m, "fuse_concats", &rw);
    assert_int_equal(rw, 0);
    assert_int_equal(count_op(o, "Concat"), 2);
    ox_model_free(o);
    ox_model_free(m);

    /* The inner Concat is also a graph output: it must stay. */
    m = mk(13);
    in2(m, "x", OX_DT_FLOAT, 2, 3);
    in2(m, "w", OX_DT_FLOAT, 2, 3);
    ox_node_set_attr_i(nd(m, "Concat", "x", "w", "c1"), "axis", 1);
    ox_node_set_attr_i(nd(m, "Concat", "c1", "x", "y"), "axis", 1);
    out(m, "y");
    out(m, "c1");
    o = opt_checked(m, "fuse_concats", &rw);
    assert_int_equal(rw, 0);
    assert_int_equal(count_op(o, "Concat"), 2);
    ox_model_free(o);
    ox_model_free(m);

    /* A chain and a branch: c_k = Concat(c_{k-1}, w) 50 deep, and
     * y = Concat(v, c_49, d) with d = Concat(x, w): one Concat of
     * v, x, w x 50, x, w in order, in one sweep from the root. */
    m = mk(13);
    in2(m, "x", OX_DT_FLOAT, 2, 3);
    in2(m, "w", OX_DT_FLOAT, 2, 1);
    in2(m, "v", OX_DT_FLOAT, 2, 2);
    ox_node_set_attr_i(nd(m, "Concat", "x", "w", "c0"), "axis", 1);
    char a[16], b[16];
    for (int k = 1; k < 50; k++) {
        snprintf(a, sizeof a, "c%d", k - 1);
        snprintf(b, sizeof b, "c%d", k);
        ox_node_set_attr_i(nd(m, "Concat", a, "w", b), "axis", 1);
    }
    ox_node_set_attr_i(nd(m, "Concat", "x", "w", "d"), "axis", 1);
    ox_graph *g = m->graph;
    ox_value *ins[3] = {ox_graph_value(g, "v"), ox_graph_value(g, b), ox_graph_value(g, "d")};
    ox_value *y = ox_graph_value(g, "y");
    ox_node_set_attr_i(ox_node_new(g, "Concat", "", "y", 3, ins, 1, &y), "axis", 1);
    out(m, "y");
    o = opt_checked(m, "fuse_concats", &rw);
    assert_int_equal(rw, 51);
    assert_int_equal(count_op(o, "Concat"), 1);
    ox_node *cc = o->graph->nodes[0];
    assert_int_equal(cc->n_inputs, 54);
    assert_string_equal(cc->inputs[0]->name, "v");
    assert_string_equal(cc->inputs[1]->name, "x");
    for (int k = 2; k < 52; k++)
        assert_string_equal(cc->inputs[k]->name, "w");
    assert_string_equal(cc->inputs[52]->name, "x");
    assert_string_equal(cc->inputs[53]->name, "w");
    ox_model_free(o);
    ox_model_free(m);
}

static void test_cse_keeps_read_extra_output(void **state)
{
    (void)state;
    /* Two Dropouts of x; only the second has its mask, which is read:
     * merging it into the first would leave the mask unproduced. */
    ox_model *m = mk(13);
    in2(m, "x", OX_DT_FLOAT, 2, 3);
    ox_graph *g = m->graph;
    ox_value *x = ox_graph_value(g, "x");
    ox_value *o1[2] = {ox_graph_value(g, "a"), NULL};
    ox_value *o2[2] = {ox_graph_value(g, "b"), ox_graph_value(g, "mask")};
    ox_node_new(g, "Dropout", "", "d1", 1, &x, 2, o1);
    ox_node_new(g, "Dropout", "", "d2", 1, &x, 2, o2);
    nd(m, "Add", "a", "b", "s");
    nd(m, "Cast", "mask", NULL, "mf");
    ox_node_set_attr_i(g->nodes[g->n_nodes - 1], "to", OX_DT_FLOAT);
    nd(m, "Mul", "s", "mf", "y");
    out(m, "y");
    int rw;
    ox_model *o = opt_checked(m, "cse", &rw);
    assert_int_equal(rw, 0);
    assert_int_equal(count_op(o, "Dropout"), 2);
    ox_model_free(o);
    ox_model_free(m);
}

static void test_fuse_casts(void **state)
{
    (void)state;
    /* int32 -> int64 is lossless: Cast(Cast(x, int64), float) reads x. */
    ox_model *m = mk(17);
    in2(m, "x", OX_DT_INT32, 2, 3);
    ox_node_set_attr_i(nd(m, "Cast", "x", NULL, "a"), "to", OX_DT_INT64);
    ox_node_set_attr_i(nd(m, "Cast", "a", NULL, "y"), "to", OX_DT_FLOAT);
    out(m, "y");
    int rw;
    ox_model *o = opt_checked(m, "fuse_casts,dce", &rw);
    assert_int_equal(rw, 2); /* the fusion, then the dead first Cast */
    assert_int_equal(count_op(o, "Cast"), 1);
    ox_node *c = o->graph->nodes[0];
    assert_string_equal(c->inputs[0]->name, "x");
    assert_string_equal(c->outputs[0]->name, "y");
    assert_int_equal(ox_node_attr_i(c, "to", 0), OX_DT_FLOAT);
    ox_model_free(o);
    ox_model_free(m);

    /* Narrowing first casts must stay: int64 -> int8 -> int64 wraps, and
     * float -> int32 -> float truncates. */
    m = mk(17);
    in2(m, "x", OX_DT_INT64, 2, 3);
    in2(m, "f", OX_DT_FLOAT, 2, 3);
    ox_node_set_attr_i(nd(m, "Cast", "x", NULL, "a"), "to", OX_DT_INT8);
    ox_node_set_attr_i(nd(m, "Cast", "a", NULL, "y"), "to", OX_DT_INT64);
    ox_node_set_attr_i(nd(m, "Cast", "f", NULL, "b"), "to", OX_DT_INT32);
    ox_node_set_attr_i(nd(m, "Cast", "b", NULL, "z"), "to", OX_DT_FLOAT);
    out(m, "y");
    out(m, "z");
    o = opt_checked(m, "fuse_casts,dce", &rw);
    assert_int_equal(rw, 0);
    assert_int_equal(count_op(o, "Cast"), 4);
    assert_string_equal(o->graph->outputs[0]->producer->inputs[0]->name, "a");
    assert_string_equal(o->graph->outputs[1]->producer->inputs[0]->name, "b");
    ox_model_free(o);
    ox_model_free(m);
}

static void test_unique_node_names(void **state)
{
    (void)state;
    /* Two nodes named "dup" and one unnamed: the first "dup" keeps its
     * name, the others get fresh, distinct, non-empty ones. */
    ox_model *m = mk(17);
    ox_graph *g = m->graph;
    in2(m, "x", OX_DT_FLOAT, 2, 3);
    ox_value *x = ox_graph_value(g, "x"), *a = ox_graph_value(g, "a"),
             *b = ox_graph_value(g, "b"), *y = ox_graph_value(g, "y");
    ox_node_new(g, "Relu", "", "dup", 1, &x, 1, &a);
    ox_node_new(g, "Neg", "", "dup", 1, &a, 1, &b);
    ox_node_new(g, "Abs", "", "", 1, &b, 1, &y);
    out(m, "y");
    int rw;
    ox_model *o = opt_checked(m, "unique_node_names", &rw);
    assert_int_equal(rw, 2);
    assert_int_equal(o->graph->n_nodes, 3);
    assert_string_equal(o->graph->nodes[0]->name, "dup");
    for (int i = 0; i < 3; i++) {
        assert_true(o->graph->nodes[i]->name[0] != 0);
        for (int j = 0; j < i; j++)
            assert_string_not_equal(o->graph->nodes[i]->name, o->graph->nodes[j]->name);
    }
    ox_model_free(o);
    ox_model_free(m);

    /* Already unique names are left exactly as they are. */
    m = mk(17);
    in2(m, "x", OX_DT_FLOAT, 2, 3);
    nd(m, "Relu", "x", NULL, "a");
    nd(m, "Neg", "a", NULL, "y");
    out(m, "y");
    o = opt_checked(m, "unique_node_names", &rw);
    assert_int_equal(rw, 0);
    char names[64];
    node_names(o, names, sizeof names);
    assert_string_equal(names, "a,y");
    ox_model_free(o);
    ox_model_free(m);

    /* Names are unique model-wide: a main-graph node named like a node of
     * a branch is renamed once; the branch reads are untouched. */
    m = if_model(false);
    free(m->graph->nodes[0]->name);
    m->graph->nodes[0]->name = strdup("neg"); /* the Relu; "neg" is in then */
    o = opt_checked(m, "unique_node_names", &rw);
    assert_int_equal(rw, 1);
    ox_graph *then = ox_node_attr(find_op(o, "If"), "then_branch")->g;
    assert_string_not_equal(o->graph->nodes[0]->name, then->nodes[0]->name);
    assert_int_equal(run(o, "unique_node_names"), 0);
    ox_model_free(o);
    ox_model_free(m);
}

/* Passes whose cases live in tests/passes/test_fuse_*.c (each of those
 * checks that its own passes fired). */
static bool tested_elsewhere(const char *name)
{
    static const char *names[] = {
        "fuse_conv_bn", "fuse_conv_add", "fuse_conv_mul", "fuse_pad_conv", "fuse_bn_conv",
        "fuse_bn_mul_add", "fuse_matmul_add", "fuse_matmul_bn", "fuse_bn_matmul",
        "fuse_transpose_gemm", "fuse_matmul_scale", "fuse_transpose_matmul",
        "fuse_reshape_shape", "fuse_relu_clip", "fuse_hardsigmoid", "fuse_hardswish",
        "fuse_silu", "fuse_silu_ort", "fuse_conv_act", "fuse_conv_add_act", "fuse_gemm_act",
        "fuse_layernorm", "fuse_rmsnorm", "fuse_skip_layernorm", "fuse_norm_cast", "fuse_embed_layernorm", "fuse_gelu", "fuse_bias_gelu",
        "fuse_attention", "fuse_attention_onnx", "fuse_multihead_attention",
        "fuse_rmsnorm_ort", "residual_sum", "fuse_token_transpose_gemm",
        "to_fp16", /* tests/passes/test_to_fp16.c */
        "quantize_dynamic", /* tests/passes/test_quantize.c */
        "upgrade_opset", /* tests/passes/test_opset_adapt.c */
        NULL};
    for (int i = 0; names[i]; i++)
        if (!strcmp(names[i], name))
            return true;
    return false;
}

/* Runs last: each registered pass fired in at least one case above. */
static void test_every_pass_fired(void **state)
{
    (void)state;
    int missing = 0;
    for (int k = 0; k < ox_pass_count(); k++)
        if (!fired[k] && !tested_elsewhere(ox_pass_at(k)->name)) {
            print_message("# pass '%s' never fired in a unit test\n", ox_pass_at(k)->name);
            missing++;
        }
    assert_int_equal(missing, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_registry),
        cmocka_unit_test(test_identity),
        cmocka_unit_test(test_dropout),
        cmocka_unit_test(test_transpose),
        cmocka_unit_test(test_cast),
        cmocka_unit_test(test_fold),
        cmocka_unit_test(test_fold_limit),
        cmocka_unit_test(test_fold_concat_bomb),
        cmocka_unit_test(test_fold_total_room),
        cmocka_unit_test(test_cse_dedup),
        cmocka_unit_test(test_reshape_and_shape_chain),
        cmocka_unit_test(test_step_one_rewrite),
        cmocka_unit_test(test_fusions),
        cmocka_unit_test(test_slices),
        cmocka_unit_test(test_squeezes),
        cmocka_unit_test(test_if_and_subgraph_reads),
        cmocka_unit_test(test_constant_to_initializer),
        cmocka_unit_test(test_fold_shape_chains),
        cmocka_unit_test(test_fuse_concats),
        cmocka_unit_test(test_cse_keeps_read_extra_output),
        cmocka_unit_test(test_fuse_casts),
        cmocka_unit_test(test_unique_node_names),
        cmocka_unit_test(test_every_pass_fired),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
