/* Shared by tests/passes/test_fuse_*.c: building small float graphs with
 * seeded random weights, and running a fusion pass with the checks every
 * fusion must pass: the checker accepts the result, a second run rewrites
 * nothing (idempotence), graph output names survive, and the executor
 * computes the same outputs on random inputs. Header-only (static). */
#ifndef ONNXSCOPE_TEST_FUSE_HARNESS_H
#define ONNXSCOPE_TEST_FUSE_HARNESS_H

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "onnxscope/check.h"
#include "onnxscope/exec.h"
#include "onnxscope/infer.h"
#include "onnxscope/passes.h"
#include "onnxscope/randinput.h"

static uint32_t fh_seed = 12345;

static inline double fh_rand(void)
{
    fh_seed = fh_seed * 1664525u + 1013904223u;
    return (double)(fh_seed >> 8) / (double)(1u << 24) * 2.0 - 1.0; /* [-1, 1) */
}

static inline ox_model *fh_model(int64_t opset)
{
    ox_model *m = ox_model_new();
    assert_non_null(m);
    ox_model_set_opset(m, "", opset);
    m->ir_version = opset >= 21 ? 10 : 8;
    return m;
}

/* A float graph input of the given shape. */
static inline ox_value *fh_input(ox_model *m, const char *name, int rank, const int64_t *dims)
{
    ox_value *v = ox_graph_value(m->graph, name);
    v->type = ox_type_new_tensor(OX_DT_FLOAT, rank, dims);
    ox_graph_add_input(m->graph, v);
    return v;
}

/* A float initializer: values from vals when given, else random in
 * [lo, hi). */
static inline ox_value *fh_init(ox_model *m, const char *name, int rank, const int64_t *dims,
                         const float *vals, double lo, double hi)
{
    ox_tensor *t = ox_tensor_new(OX_DT_FLOAT, rank, dims);
    assert_non_null(t);
    for (int64_t i = 0; i < t->numel; i++)
        ox_tensor_set_f64(t, i, vals ? vals[i] : lo + (fh_rand() + 1) / 2 * (hi - lo));
    ox_value *v = ox_graph_value(m->graph, name);
    assert_int_equal(ox_graph_set_initializer(m->graph, v, t), OX_OK);
    return v;
}

static inline ox_value *fh_scalar(ox_model *m, const char *name, float v)
{
    return fh_init(m, name, 0, NULL, &v, 0, 0);
}

static inline ox_value *fh_ints(ox_model *m, const char *name, int n, const int64_t *v)
{
    int64_t d = n;
    ox_tensor *t = ox_tensor_new(OX_DT_INT64, 1, &d);
    for (int i = 0; i < n; i++)
        ox_tensor_set_i64(t, i, v[i]);
    ox_value *val = ox_graph_value(m->graph, name);
    assert_int_equal(ox_graph_set_initializer(m->graph, val, t), OX_OK);
    return val;
}

/* A Constant node producing a float scalar (the other form exporters use). */
static inline void fh_const_node(ox_model *m, const char *name, float v)
{
    ox_tensor *t = ox_tensor_new(OX_DT_FLOAT, 0, NULL);
    ox_tensor_set_f64(t, 0, v);
    ox_value *o = ox_graph_value(m->graph, name);
    ox_node *n = ox_node_new(m->graph, "Constant", "", name, 0, NULL, 1, &o);
    ox_node_set_attr_t(n, "value", t);
}

/* Node op(inputs...) -> out; inputs are names ("" = omitted), ended by NULL. */
static inline ox_node *fh_node(ox_model *m, const char *op, const char *out, ...)
{
    ox_value *in[8];
    int n = 0;
    va_list ap;
    va_start(ap, out);
    for (const char *s; n < 8 && (s = va_arg(ap, const char *));)
        in[n++] = *s ? ox_graph_value(m->graph, s) : NULL;
    va_end(ap);
    ox_value *o = ox_graph_value(m->graph, out);
    ox_node *nd = ox_node_new(m->graph, op, "", out, n, in, 1, &o);
    assert_non_null(nd);
    return nd;
}

static inline void fh_output(ox_model *m, const char *name)
{
    ox_graph_add_output(m->graph, ox_graph_value(m->graph, name));
}

static inline int fh_count(const ox_model *m, const char *op)
{
    int c = 0;
    for (int i = 0; i < m->graph->n_nodes; i++)
        c += !strcmp(m->graph->nodes[i]->op_type, op);
    return c;
}

/* Which passes fired (by registry index), for the every-pass check. */
static bool fh_fired[256];

/* Runs exactly `passes` at level all with target t; returns rewrites. */
static inline int fh_run(ox_model *m, const char *passes, ox_pass_target t)
{
    ox_pass_manager *pm = ox_pm_new(OX_LEVEL_ALL, t);
    ox_error err = {0};
    ox_pass_report rep = {0};
    assert_int_equal(ox_pm_only(pm, passes, &err), OX_OK);
    assert_int_equal(ox_pm_run(pm, m, &rep, &err), OX_OK);
    int rw = 0;
    for (int i = 0; i < rep.n_passes; i++) {
        rw += rep.passes[i].rewrites;
        for (int k = 0; rep.passes[i].rewrites && k < ox_pass_count() && k < 256; k++)
            if (!strcmp(ox_pass_at(k)->name, rep.passes[i].name))
                fh_fired[k] = true;
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

/* Optimizes a clone of m with `passes` (target t), asserts idempotence
 * and equal outputs on random inputs (two seeds); returns the clone. */
static inline ox_model *fh_opt(ox_model *m, const char *passes, ox_pass_target t, int *rewrites)
{
    ox_error err = {0};
    assert_int_equal(ox_infer_model(m, NULL, &err), OX_OK);
    ox_model *o = ox_model_clone(m);
    *rewrites = fh_run(o, passes, t);
    assert_int_equal(fh_run(o, passes, t), 0);
    ox_exec *ea, *eb;
    ox_exec_opts eo = {.threads = 1};
    assert_int_equal(ox_exec_new(m, &eo, &ea, &err), OX_OK);
    if (ox_exec_new(o, &eo, &eb, &err))
        fail_msg("exec: %s", err.msg);
    int ni = m->graph->n_inputs, no = m->graph->n_outputs;
    assert_true(ni <= 8 && no <= 8);
    for (uint32_t seed = 1; seed <= 2; seed++) {
        ox_rval *in[8] = {0}, *ra[8] = {0}, *rb[8] = {0};
        assert_int_equal(ox_random_inputs(m, NULL, seed, 10, in, &err), OX_OK);
        assert_int_equal(ox_exec_run(ea, ni, in, no, ra, &err), OX_OK);
        assert_int_equal(ox_exec_run(eb, ni, in, no, rb, &err), OX_OK);
        for (int k = 0; k < no; k++) {
            char why[256];
            assert_string_equal(m->graph->outputs[k]->name, o->graph->outputs[k]->name);
            if (!ox_rval_allclose(rb[k], ra[k], 1e-4, 1e-5, why, sizeof why))
                fail_msg("output %d differs: %s", k, why);
            ox_rval_free(ra[k]);
            ox_rval_free(rb[k]);
        }
        for (int k = 0; k < ni; k++)
            ox_rval_free(in[k]);
    }
    ox_exec_free(ea);
    ox_exec_free(eb);
    return o;
}

/* Asserts that the pass changes nothing on m (a must-not-fire case); the
 * model stays valid. */
static inline void fh_nofire(ox_model *m, const char *passes, ox_pass_target t)
{
    ox_error err = {0};
    assert_int_equal(ox_infer_model(m, NULL, &err), OX_OK);
    ox_model *o = ox_model_clone(m);
    int rw = fh_run(o, passes, t);
    if (rw)
        fail_msg("%s fired %d time(s) where it must not", passes, rw);
    ox_model_free(o);
}

/* Every pass named in the comma list fired in some case above. */
static inline void fh_all_fired(const char *list)
{
    int missing = 0;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *s = strtok(buf, ","); s; s = strtok(NULL, ",")) {
        bool ok = false;
        for (int k = 0; k < ox_pass_count() && k < 256; k++)
            ok |= fh_fired[k] && !strcmp(ox_pass_at(k)->name, s);
        if (!ok) {
            print_message("# pass '%s' never fired\n", s);
            missing++;
        }
    }
    assert_int_equal(missing, 0);
}

#endif
