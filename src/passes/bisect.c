/* ox_pm_bisect: the first pass invocation, then the first rewrite, after
 * which the model's outputs leave the tolerance (include/onnxscope/bisect.h).
 * Replays are exact because the pipeline is deterministic on a clone: same
 * node ids, same names, same fold room. */
#include "onnxscope/bisect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnxscope/bench.h"
#include "onnxscope/exec.h"
#include "passes/pass_internal.h"

typedef struct bctx {
    const ox_model *orig;
    int n_sets, n_in, n_out;
    ox_rval ***in;          /* [set][n_in] */
    ox_rval ***ref;         /* [set][n_out]: the original's outputs */
    double rtol, atol;
    bool half_floor;
    int64_t max_memory;
    ox_bisect_result *r;
    /* the first diverging invocation (phase 1) */
    bool hit;
    int pass, round, inv, rewrites;
    ox_bench_check chk;
} bctx;

static void free_list(ox_rval **v, int n)
{
    for (int i = 0; v && i < n; i++)
        ox_rval_free(v[i]);
    free(v);
}

static void fail(ox_bench_check *chk, const char *what, const char *msg)
{
    if (chk->ok)
        snprintf(chk->why, sizeof chk->why, "%s: %.200s", what, msg);
    chk->ok = false;
}

/* Runs cand on every input set against the reference; true when it
 * diverges (or cannot run). */
static bool diverges(bctx *c, ox_model *cand, ox_bench_check *chk)
{
    memset(chk, 0, sizeof *chk);
    chk->ok = true;
    c->r->models_checked++;
    ox_exec *e = NULL;
    ox_exec_opts eo = {.max_memory = c->max_memory};
    ox_error er = {0};
    if (cand->graph->n_inputs < c->n_in || cand->graph->n_outputs != c->n_out) {
        fail(chk, "the graph's inputs or outputs changed", "");
        return true;
    }
    if (ox_exec_new(cand, &eo, &e, &er) != OX_OK) {
        fail(chk, "the model cannot run", er.msg);
        return true;
    }
    int ni = cand->graph->n_inputs;
    for (int s = 0; s < c->n_sets && chk->ok; s++) {
        /* Inputs borrowed from the set; initializers appended to the input
         * list (before IR 4) run as NULL. */
        ox_rval **in = calloc((size_t)ni + 1, sizeof *in);
        ox_rval **out = calloc((size_t)c->n_out + 1, sizeof *out);
        if (!in || !out) {
            fail(chk, "out of memory", "");
        } else {
            memcpy(in, c->in[s], (size_t)c->n_in * sizeof *in);
            if (ox_exec_run(e, ni, in, c->n_out, out, &er) != OX_OK) {
                fail(chk, "the model fails", er.msg);
            } else {
                ox_bench_check one;
                ox_bench_compare_outputs(c->n_out, c->ref[s], out, c->rtol, c->atol,
                                         c->half_floor, &one);
                if (one.max_abs_err > chk->max_abs_err)
                    chk->max_abs_err = one.max_abs_err;
                if (one.max_rel_err > chk->max_rel_err)
                    chk->max_rel_err = one.max_rel_err;
                if (!one.ok) {
                    chk->ok = false;
                    snprintf(chk->why, sizeof chk->why, "input set %d: %.200s", s, one.why);
                }
            }
        }
        free(in);
        free_list(out, c->n_out);
    }
    ox_exec_free(e);
    return !chk->ok;
}

static bool after_invocation(void *ctx, ox_model *m, int pass, int round, int inv, int rw)
{
    bctx *c = ctx;
    if (!rw || !diverges(c, m, &c->chk))
        return false;
    c->hit = true;
    c->pass = pass;
    c->round = round;
    c->inv = inv;
    c->rewrites = rw;
    return true;
}

/* The original's outputs on every input set. */
static ox_status make_reference(bctx *c, const ox_bisect_opts *o, ox_error *err)
{
    c->in = calloc((size_t)c->n_sets, sizeof *c->in);
    c->ref = calloc((size_t)c->n_sets, sizeof *c->ref);
    if (!c->in || !c->ref)
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    ox_exec *e = NULL;
    ox_exec_opts eo = {.max_memory = c->max_memory};
    /* The executor wants a mutable model; it does not change it. */
    ox_status st = ox_exec_new((ox_model *)c->orig, &eo, &e, err);
    for (int s = 0; !st && s < c->n_sets; s++) {
        c->in[s] = calloc((size_t)c->n_in + 1, sizeof **c->in);
        c->ref[s] = calloc((size_t)c->n_out + 1, sizeof **c->ref);
        if (!c->in[s] || !c->ref[s]) {
            st = ox_errorf(err, OX_ENOMEM, "out of memory");
            break;
        }
        st = ox_inputs_make(c->orig, o->inputs, (uint32_t)s, c->in[s], err);
        if (st)
            break;
        st = ox_exec_run(e, c->n_in, c->in[s], c->n_out, c->ref[s], err);
        if (st) {
            char msg[OX_ERROR_MAX];
            snprintf(msg, sizeof msg, "the original model fails on these inputs: %.300s",
                     err->msg);
            snprintf(err->msg, sizeof err->msg, "%s", msg);
        }
    }
    ox_exec_free(e);
    return st;
}

typedef struct lookup {
    const int *ids;
    int n;
    const ox_node **found;
} lookup;

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static void lookup_graph(ox_graph *g, void *ctx)
{
    lookup *l = ctx;
    for (int i = 0; i < g->n_nodes; i++) {
        const int *p = bsearch(&g->nodes[i]->id, l->ids, (size_t)l->n, sizeof *l->ids, cmp_int);
        if (p)
            l->found[p - l->ids] = g->nodes[i];
    }
}

/* The nodes with ids[0..n) (sorted) in m, NULL where absent. */
static const ox_node **find_nodes(const ox_model *m, const int *ids, int n)
{
    lookup l = {ids, n, calloc((size_t)n + 1, sizeof *l.found)};
    if (l.found && n)
        ox_graph_visit(m->graph, lookup_graph, &l);
    return l.found;
}

static bool add_node(ox_bisect_result *r, const ox_node *n, ox_bisect_change ch)
{
    ox_bisect_node *t = realloc(r->nodes, ((size_t)r->n_nodes + 1) * sizeof *t);
    if (!t)
        return false;
    r->nodes = t;
    t[r->n_nodes] = (ox_bisect_node){
        .id = n->id, .name = ox_strdup(n->name ? n->name : ""),
        .op_type = ox_strdup(n->op_type ? n->op_type : ""), .change = ch,
        .in_subgraph = n->graph && n->graph->owner};
    r->n_nodes++;
    return true;
}

/* What one step changed: removed nodes as they were in `before`, added and
 * edited ones as they are in `after`. */
static void record_nodes(ox_bisect_result *r, const ox_model *before, const ox_model *after,
                         const ox_pass_report *rep)
{
    const ox_node **gone = find_nodes(before, rep->removed_ids, rep->n_removed_ids);
    const ox_node **now = find_nodes(after, rep->touched, rep->n_touched);
    const ox_node **was = find_nodes(before, rep->touched, rep->n_touched);
    for (int i = 0; gone && i < rep->n_removed_ids; i++)
        if (gone[i])
            add_node(r, gone[i], OX_BISECT_REMOVED);
    for (int i = 0; now && was && i < rep->n_touched; i++)
        if (now[i])
            add_node(r, now[i], was[i] ? OX_BISECT_EDITED : OX_BISECT_ADDED);
    free(gone);
    free(now);
    free(was);
}

/* Phase 2: from the state just before the diverging invocation, one
 * rewrite at a time. */
static ox_status step_rewrites(ox_pass_manager *pm, bctx *c, ox_error *err)
{
    ox_bisect_result *r = c->r;
    ox_model *m = ox_model_clone(c->orig);
    if (!m)
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    ox__pm_hook h = {.stop_before = c->inv};
    bool stopped = false;
    ox_status st = ox__pm_drive(pm, m, NULL, &h, &stopped, err);
    if (!st && !stopped)
        st = ox_errorf(err, OX_EINVAL, "bisect: the replay did not reach the pass again");
    bool single = ox_pm_pass(pm, c->pass)->single_rewrite;
    /* A pass that keeps finding rewrites one at a time beyond twice what
     * the invocation did is not converging: stop there. */
    int limit = single ? 2 * c->rewrites + 8 : 1;
    for (int j = 1; !st && j <= limit; j++) {
        ox_model *before = ox_model_clone(m);
        ox_pass_report rep = {0};
        int rw = 0;
        if (!before) {
            st = ox_errorf(err, OX_ENOMEM, "out of memory");
            break;
        }
        st = ox__pm_invoke(pm, m, c->pass, single ? 1 : 0, &rep, &rw, err);
        ox_bench_check chk;
        bool done = st || rw == 0;
        if (!done && diverges(c, m, &chk)) {
            r->rewrite = single ? j : 0;
            r->max_abs_err = chk.max_abs_err;
            r->max_rel_err = chk.max_rel_err;
            snprintf(r->why, sizeof r->why, "%s", chk.why);
            record_nodes(r, before, m, &rep);
            done = true;
        }
        ox_pass_report_free(&rep);
        ox_model_free(before);
        if (done)
            break;
    }
    if (!st && single && !r->rewrite)
        snprintf(r->why, sizeof r->why,
                 "%.200s (no single rewrite of the pass diverges on its own)", c->chk.why);
    ox_model_free(m);
    return st;
}

ox_status ox_pm_bisect(ox_pass_manager *pm, const ox_model *m, const ox_bisect_opts *opts,
                       ox_bisect_result *out, ox_error *err)
{
    if (!out)
        return ox_errorf(err, OX_EINVAL, "bisect: no result");
    memset(out, 0, sizeof *out);
    if (!pm || !m || !m->graph)
        return ox_errorf(err, OX_EINVAL, "bisect: no model");
    ox_bisect_opts o = {0};
    if (opts)
        o = *opts;
    bctx c = {
        .orig = m, .n_sets = o.n_sets < 1 ? 1 : o.n_sets, .n_in = m->graph->n_inputs,
        .n_out = m->graph->n_outputs, .rtol = o.rtol, .atol = o.atol,
        .half_floor = o.half_floor, .max_memory = o.max_memory, .r = out,
    };
    if (c.rtol == 0 && c.atol == 0) {
        c.rtol = OX_CHECK_RTOL;
        c.atol = OX_CHECK_ATOL;
        c.half_floor = true;
    }
    ox_status st = make_reference(&c, &o, err);
    ox_model *a = NULL;
    if (!st && !(a = ox_model_clone(m)))
        st = ox_errorf(err, OX_ENOMEM, "out of memory");
    if (!st) {
        ox__pm_hook h = {.after = after_invocation, .stop_before = -1, .ctx = &c};
        st = ox__pm_drive(pm, a, NULL, &h, NULL, err);
    }
    ox_model_free(a);
    if (!st && !c.hit)
        snprintf(out->why, sizeof out->why,
                 "every pass's result agrees with the original on these inputs");
    if (!st && c.hit) {
        out->found = true;
        out->pass = ox_pm_pass(pm, c.pass)->name;
        out->pass_index = c.pass;
        out->round = c.round + 1;
        out->pass_rewrites = c.rewrites;
        out->max_abs_err = c.chk.max_abs_err;
        out->max_rel_err = c.chk.max_rel_err;
        snprintf(out->why, sizeof out->why, "%s", c.chk.why);
        st = step_rewrites(pm, &c, err);
    }
    for (int s = 0; s < c.n_sets; s++) {
        if (c.in)
            free_list(c.in[s], c.n_in);
        if (c.ref)
            free_list(c.ref[s], c.n_out);
    }
    free(c.in);
    free(c.ref);
    return st;
}

void ox_bisect_result_free(ox_bisect_result *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->n_nodes; i++) {
        free(r->nodes[i].name);
        free(r->nodes[i].op_type);
    }
    free(r->nodes);
    memset(r, 0, sizeof *r);
}

const char *ox_bisect_change_name(ox_bisect_change c)
{
    return c == OX_BISECT_REMOVED ? "removed" : c == OX_BISECT_ADDED ? "added" : "edited";
}
