/* The Passes and Diff panels and the stepper's keys: a checkbox list over
 * the pass manager (toggle, step one rewrite or the rest of a pass, undo,
 * apply all, reset, level presets) on top of tui_stepper.c, which owns the
 * optimized copy; the status line, cursor jumps and change marks after a
 * step; the before/after table with the per-pass totals. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "onnxscope/bisect.h"
#include "onnxscope/io.h"
#include "onnxscope/profile.h"
#include "tui/tui_internal.h"

void tui_passes_init(tui *t)
{
    t->level = OX_LEVEL_BASIC;
    t->pm = ox_pm_new(t->level, OX_TARGET_ONNX);
    if (t->pm)
        ox_pm_set_infer_opts(t->pm, &t->iopts);
    tui_stepper_init(&t->st, t->orig);
    t->st.free_model = tui_free_model_async;
    t->cost_orig = t->cost;
    t->diff.size_cur = (int64_t)t->orig->file_size;
    t->diff.size_valid = true;
}

void tui_passes_free(tui *t)
{
    t->st.free_model = NULL;   /* at exit: free here, not in threads nobody waits for */
    tui_stepper_free(&t->st);
    t->cur = t->orig;
    ox_pm_free(t->pm);
    t->pm = NULL;
}

int tui_node_mark(const tui *t, const ox_node *n)
{
    if (tui_compare_marks(t))
        return tui_compare_mark(t, n);
    return tui_stepper_mark(&t->st, n);
}

bool tui_node_touched(const tui *t, const ox_node *n)
{
    return tui_node_mark(t, n) != 0;
}

/* After cur changed: back to the main graph, recompute every view. The
 * file size of cur is computed when the Diff panel needs it. */
static void after_change(tui *t)
{
    t->cur = t->st.cur;
    t->gdepth = 0;
    t->graph = t->cur->graph;
    t->det.node = t->nb.centre = NULL;
    t->diff.dtab_valid = false;
    ox_error err = {0};
    /* A step must not pay for three sorts of 100k rows it may never show. */
    t->nodes.lazy_sorts = true;
    tui_model_refresh(t, &err);
    t->nodes.lazy_sorts = false;
    tui_compare_refresh(t);
    if (t->cur == t->orig) {
        t->diff.size_cur = (int64_t)t->orig->file_size;
        t->diff.size_valid = true;
    } else {
        t->diff.size_valid = false;
    }
}

static void ensure_size(tui *t)
{
    if (t->diff.size_valid)
        return;
    void *buf = NULL;
    size_t len = 0;
    t->diff.size_cur = ox_save_buffer(t->cur, &buf, &len, NULL) == OX_OK ? (int64_t)len : -1;
    free(buf);
    t->diff.size_valid = true;
}

/* Shown before a possibly long operation on a big model. */
static void busy(tui *t, const char *what)
{
    tui_set_status(t, OX_SLOT_UI_WARNING, "%s ...", what);
    tui_fill(LINES - 1, 0, COLS, OX_SLOT_UI_STATUS, t);
    tui_put(LINES - 1, 0, COLS, OX_SLOT_UI_STATUS, t, t->status);
    refresh();
}

/* The Nodes cursor, the detail and the neighbourhood go to the first node
 * the last action added (else the first it edited), in graph order. */
static const ox_node *jump_to_changed(tui *t)
{
    const ox_node *edited = NULL;
    for (int i = 0; i < t->graph->n_nodes; i++) {
        int m = tui_node_mark(t, t->graph->nodes[i]);
        if (m == '+') {
            tui_goto_node(t, t->graph->nodes[i], false);
            return t->graph->nodes[i];
        }
        if (m == '*' && !edited)
            edited = t->graph->nodes[i];
    }
    if (edited) {
        tui_goto_node(t, (ox_node *)edited, false);
        return edited;
    }
    /* Only removals (a Constant turned initializer, a folded Shape): go to
     * where the removed node was, i.e. a reader of what it produced. */
    if (!t->st.have_rep || !t->st.rep.n_removed_ids)
        return NULL;
    const ox_node *gone = tui_stepper_find_id(tui_stepper_before(&t->st), t->st.rep.removed_ids[0]);
    for (int o = 0; gone && o < gone->n_outputs; o++) {
        const ox_value *old = gone->outputs[o];
        const ox_value *v = old && old->name ? ox_graph_find(t->graph, old->name) : NULL;
        for (int u = 0; v && u < v->n_uses; u++)
            if (v->uses[u].node && v->uses[u].node->graph == t->graph) {
                tui_goto_node(t, v->uses[u].node, false);
                return v->uses[u].node;
            }
    }
    if (gone && t->graph->n_nodes) {
        int i = gone->index < t->graph->n_nodes ? gone->index : t->graph->n_nodes - 1;
        tui_goto_node(t, t->graph->nodes[i], false);
        return t->graph->nodes[i];
    }
    return NULL;
}

/* "Conv /conv1" */
static void node_desc(const ox_node *n, char *buf, size_t len)
{
    char lb[256];
    snprintf(buf, len, "%s %s", n->op_type ? n->op_type : "?", tui_node_label(n, lb, sizeof lb));
}

/* The lists of what the last action removed, added and edited, for the
 * Diff panel and the status line (names of removed nodes come from the
 * model before the action). */
static void describe_changes(tui *t, char *brief, size_t blen)
{
    t->diff.n_step_msg = 0;
    brief[0] = 0;
    if (!t->st.have_rep)
        return;
    const ox_pass_report *r = &t->st.rep;
    const ox_model *before = tui_stepper_before(&t->st);
    static const char *const what[3] = {"removed", "added", "edited"};
    char lists[3][160];
    int counts[3] = {0, 0, 0};
    for (int k = 0; k < 3; k++)
        snprintf(lists[k], sizeof lists[k], "%s:", what[k]);
    /* Few ids per step; capped so that an apply-all of 100k nodes stays cheap. */
    for (int i = 0; i < r->n_removed_ids && i < 8; i++) {
        const ox_node *n = tui_stepper_find_id(before, r->removed_ids[i]);
        char d[200];
        if (n)
            node_desc(n, d, sizeof d);
        else
            snprintf(d, sizeof d, "node %d", r->removed_ids[i]);
        size_t l = strlen(lists[0]);
        snprintf(lists[0] + l, sizeof lists[0] - l, "%s %s", counts[0] ? "," : "", d);
        counts[0]++;
    }
    for (int i = 0; i < r->n_touched && counts[1] + counts[2] < 16; i++) {
        const ox_node *n = tui_stepper_find_id(t->cur, r->touched[i]);
        if (!n)
            continue;
        int k = n->id >= t->st.before_next_id ? 1 : 2;
        if (counts[k] >= 8)
            continue;
        char d[200];
        node_desc(n, d, sizeof d);
        size_t l = strlen(lists[k]);
        snprintf(lists[k] + l, sizeof lists[k] - l, "%s %s", counts[k] ? "," : "", d);
        counts[k]++;
    }
    size_t off = 0;
    int totals[3] = {r->n_removed_ids, 0, 0};
    for (int i = 0; i < r->n_touched; i++)
        totals[r->touched[i] >= t->st.before_next_id ? 1 : 2]++;
    for (int k = 0; k < 3; k++) {
        if (!totals[k])
            continue;
        if (totals[k] > counts[k]) {
            size_t l = strlen(lists[k]);
            snprintf(lists[k] + l, sizeof lists[k] - l, " (+%d more)", totals[k] - counts[k]);
        }
        snprintf(t->diff.step_msg[t->diff.n_step_msg++], sizeof t->diff.step_msg[0], "%s", lists[k]);
        if (off < blen)
            off += (size_t)snprintf(brief + off, blen - off, "; %s", lists[k]);
    }
}

/* "MACs -16.38K (575.49K -> 559.10K)", "MACs unchanged", "MACs ? -> ?" */
static void macs_change(const ox_model_cost *a, const ox_model_cost *b, char *buf, size_t len)
{
    char x[64], y[64], d[64];
    ox_fmt_model_macs(a, x, sizeof x);
    ox_fmt_model_macs(b, y, sizeof y);
    if (a->known && b->known && a->macs == b->macs)
        snprintf(buf, len, "MACs unchanged");
    else if (a->known && b->known)
        snprintf(buf, len, "MACs %c%s (%s -> %s)", b->macs < a->macs ? '-' : '+',
                 ox_fmt_count(b->macs < a->macs ? a->macs - b->macs : b->macs - a->macs, true,
                              d, sizeof d),
                 x, y);
    else
        snprintf(buf, len, "MACs %s -> %s", x, y);
}

static void apply_all_status(tui *t, ox_status st, const ox_error *err)
{
    t->live = true;
    after_change(t);
    char brief[8];
    describe_changes(t, brief, sizeof brief);
    if (st != OX_OK)
        tui_set_status(t, OX_SLOT_UI_ERROR, "a pass failed: %s", err->msg);
    else
        tui_set_status(t, OX_SLOT_UI_OK, "applied: %d -> %d nodes", t->st.rep.nodes_before,
                       t->st.rep.nodes_after);
}

/* Above this many nodes (the stepper's probe limit) an action takes long
 * enough to run in a worker thread (tui_job.h): the UI keeps answering. */
static bool big(const tui *t)
{
    return t->st.cur_nodes > t->st.probe_max_nodes ||
           t->orig->graph->n_nodes > t->st.probe_max_nodes;
}

typedef struct all_job {
    ox_pass_manager *pm;
    const ox_model *orig;
    ox_model *m;
    ox_pass_report rep;
    ox_status st;
    ox_error err;
    int n_on;
} all_job;

static bool all_on_pass(void *ctx, int pass, int round)
{
    tui_job *j = ctx;
    all_job *a = j->ctx;
    int k = 0;
    for (int i = 0; i <= pass; i++)
        k += ox_pm_enabled(a->pm, i);
    tui_job_note(j, "round %d, %s (%d of %d; Esc cancels)", round + 1,
                 ox_pm_pass(a->pm, pass)->name, k, a->n_on);
    tui_job_progress(j, a->n_on ? (double)k / a->n_on : 0);
    return !tui_job_cancelled(j);
}

static void all_run(tui_job *j)
{
    all_job *a = j->ctx;
    if (!(a->m = ox_model_clone(a->orig))) {
        a->st = ox_errorf(&a->err, OX_ENOMEM, "out of memory copying the model");
        return;
    }
    a->st = ox_pm_run_cb(a->pm, a->m, &a->rep, all_on_pass, j, &a->err);
}

static void all_discard(tui_job *j)
{
    all_job *a = j->ctx;
    ox_model_free(a->m);
    ox_pass_report_free(&a->rep);
    a->m = NULL;
}

static void all_done(tui *t, tui_job *j)
{
    all_job *a = j->ctx;
    if (a->st == OX_ECANCELLED || !a->m) {
        if (a->st == OX_ECANCELLED)
            tui_set_status(t, OX_SLOT_UI_WARNING, "apply all: cancelled (Esc); the model is unchanged");
        else
            tui_set_status(t, OX_SLOT_UI_ERROR, "apply all: %s", a->err.msg);
        all_discard(j);
        return;
    }
    tui_stepper_apply_all_commit(&t->st, t->pm, a->m, &a->rep);
    apply_all_status(t, a->st, &a->err);
}

static void apply_all(tui *t)
{
    if (!t->pm)
        return;
    if (big(t)) {
        tui_job *j = calloc(1, sizeof *j);
        all_job *a = calloc(1, sizeof *a);
        if (!j || !a) {
            free(j);
            free(a);
            tui_set_status(t, OX_SLOT_UI_ERROR, "out of memory");
            return;
        }
        a->pm = t->pm;
        a->orig = t->orig;
        for (int i = 0; i < ox_pm_count(t->pm); i++)
            a->n_on += ox_pm_enabled(t->pm, i);
        j->ctx = a;
        j->model = true;
        j->interruptible = true;
        snprintf(j->what, sizeof j->what, "applying the enabled passes");
        j->run = all_run;
        j->done = all_done;
        j->discard = all_discard;
        t->status[0] = 0;
        tui_job_start(t, j);
        return;
    }
    busy(t, "running the enabled passes");
    ox_error err = {0};
    ox_status st = tui_stepper_apply_all(&t->st, t->pm, &err);
    apply_all_status(t, st, &err);
}

static int skipped_names(const tui *t, const tui_step_info *in, char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = 0;
    int shown = in->n_skipped < 3 ? in->n_skipped : 3;
    for (int k = 0; k < shown && off < len; k++)
        off += (size_t)snprintf(buf + off, len - off, "%s%s", k ? ", " : "",
                                ox_pm_pass(t->pm, in->skipped[k])->name);
    if (in->n_skipped > shown && off < len)
        snprintf(buf + off, len - off, " +%d", in->n_skipped - shown);
    return in->n_skipped;
}

/* After a step (synchronous, or a worker's search ended): the status line,
 * the cursor on the rewritten nodes. */
static void step_finish(tui *t, ox_status st, const tui_step_info *inp, const ox_error *errp,
                        const ox_model_cost *beforep)
{
    tui_step_info in = *inp;
    ox_model_cost before = *beforep;
    char skipped[160];
    skipped_names(t, &in, skipped, sizeof skipped);
    if (in.none_enabled) {
        tui_set_status(t, OX_SLOT_UI_WARNING, "no pass is enabled (Space in panel 8)");
        return;
    }
    if (st != OX_OK) {
        tui_set_status(t, OX_SLOT_UI_ERROR,
                       "%s failed: %s (the model is unchanged; Space in panel 8 disables the pass)",
                       in.pass >= 0 ? ox_pm_pass(t->pm, in.pass)->name : "a pass", errp->msg);
        return;
    }
    if (in.stopped) {
        tui_set_status(t, OX_SLOT_UI_WARNING,
                       "stopped (Esc) after trying %d passes: %d have no match, the next s skips them",
                       in.tried, in.n_skipped);
        return;
    }
    if (in.fixed_point) {
        tui_set_status(t, OX_SLOT_UI_WARNING,
                       "no enabled pass has a match: nothing left to rewrite (%d tried)",
                       in.n_skipped);
        return;
    }
    t->live = false;
    after_change(t);
    t->panels[TUI_P_PASSES].sel = in.pass;
    const ox_pass *p = ox_pm_pass(t->pm, in.pass);
    jump_to_changed(t);
    const ox_pass_stat *ps = ox_pass_report_find(&t->st.rep, p->name);
    char mc[160], brief[400], rw[48];
    macs_change(&before, &t->cost, mc, sizeof mc);
    describe_changes(t, brief, sizeof brief);
    if (in.first == in.last)
        snprintf(rw, sizeof rw, "#%d", in.first);
    else
        snprintf(rw, sizeof rw, "#%d-%d", in.first, in.last);
    char skip_note[200] = "";
    if (in.n_skipped)
        snprintf(skip_note, sizeof skip_note, "; skipped %d (no match): %s", in.n_skipped,
                 skipped);
    tui_set_status(t, OX_SLOT_UI_OK, "%s %s%s: -%d +%d ~%d nodes, %s%s%s", p->name, rw,
                   in.no_single ? " (whole pass: it cannot stop after one rewrite)"
                   : in.whole   ? " (rest of the pass)"
                                : "",
                   ps ? ps->nodes_removed : 0, ps ? ps->nodes_added : 0,
                   ps ? ps->nodes_replaced : 0, mc, skip_note, brief);
}

/* A step on a large model: the search runs in a worker (each pass tried
 * takes 0.1-0.2 s at 100k nodes); the status line says which pass is
 * tried and Esc stops the search between passes, keeping what it found. */
typedef struct step_job {
    tui_step_search q;
    ox_model_cost before;
    int candidates;
    /* The rewritten copy's costs, computed in the worker so that the UI
     * thread does not (0.1-0.2 s at 100k nodes). */
    const ox_model *work;
    ox_model_cost cost;
    bool have_cost;
} step_job;

static bool step_on_try(void *ctx, int pass, int tried)
{
    tui_job *j = ctx;
    step_job *sj = j->ctx;
    if (tui_job_cancelled(j))
        return false;
    tui_job_note(j, "trying %s (%d passes tried; Esc stops)", ox_pm_pass(sj->q.pm, pass)->name,
                 tried);
    if (sj->candidates)
        tui_job_progress(j, (double)tried / sj->candidates);
    return true;
}

static void step_run(tui_job *j)
{
    step_job *sj = j->ctx;
    tui_stepper_search_run(&sj->q, step_on_try, j);
    if (sj->q.st == OX_OK && sj->q.have_rep && sj->q.work) {
        tui_job_note(j, "computing costs");
        sj->work = sj->q.work;
        sj->have_cost = ox_model_cost_compute(sj->q.work, &sj->cost, NULL) == OX_OK;
    }
}

static void step_discard(tui_job *j)
{
    step_job *sj = j->ctx;
    tui_stepper_search_free(&sj->q);
}

static void step_done(tui *t, tui_job *j)
{
    step_job *sj = j->ctx;
    tui_step_info in;
    ox_error err = {0};
    ox_status st = tui_stepper_search_end(&t->st, &sj->q, &in, &err);
    if (sj->have_cost && st == OX_OK && t->st.cur == sj->work) {
        t->cost = sj->cost;
        t->cost_preset = sj->work;
    }
    step_finish(t, st, &in, &err, &sj->before);
}

static void step(tui *t, bool rest)
{
    if (!t->pm)
        return;
    ox_model_cost before = t->cost;
    tui_step_info in;
    ox_error err = {0};
    if (big(t)) {
        tui_job *j = calloc(1, sizeof *j);
        step_job *sj = calloc(1, sizeof *sj);
        if (!j || !sj || tui_stepper_search_begin(&t->st, t->pm, rest, &sj->q, &err) != OX_OK) {
            free(j);
            free(sj);
            tui_set_status(t, OX_SLOT_UI_ERROR, "out of memory");
            return;
        }
        sj->before = before;
        for (int i = 0; i < sj->q.n; i++)
            sj->candidates += sj->q.enabled[i] && sj->q.state[i] != 0;
        j->ctx = sj;
        j->model = true;
        j->interruptible = true;
        snprintf(j->what, sizeof j->what, "%s", rest ? "S" : "step");
        j->run = step_run;
        j->done = step_done;
        j->discard = step_discard;
        t->status[0] = 0;
        tui_job_start(t, j);
        return;
    }
    int from = t->st.cur_pass;
    if (from >= 0 && from < ox_pm_count(t->pm))
        busy(t, ox_pm_pass(t->pm, from)->name);
    ox_status st = tui_stepper_step(&t->st, t->pm, rest, &in, &err);
    step_finish(t, st, &in, &err, &before);
}

/* After the history popped: the views, the cursor and the status. */
static void undo_finish(tui *t, const char *label, ox_model *dropped)
{
    tui_free_model_async(dropped);
    t->live = false;
    t->cur = t->st.cur;
    after_change(t);
    char brief[8];
    describe_changes(t, brief, sizeof brief);
    jump_to_changed(t);
    tui_set_status(t, OX_SLOT_UI_OK, "undid %s: nodes %d; %d more to undo", label,
                   t->cur->graph->n_nodes, t->st.n_undo);
}

/* Undo on a large model: the restored copy is re-inferred (when the shapes
 * were edited since it was made) and costed in a worker; the history pops
 * when that is done. Esc abandons it: nothing changes. The copy is in the
 * history, not shown, so the worker may edit it; model keys wait for it. */
typedef struct undo_job {
    const tui *t;           /* read only: the input types and overrides */
    ox_model *target;
    bool reinfer;
    ox_model_cost cost;
    char label[128];
} undo_job;

static void undo_run(tui_job *j)
{
    undo_job *u = j->ctx;
    if (u->reinfer) {
        tui_job_note(j, "inferring shapes (Esc abandons)");
        tui_reinfer_model(u->t, u->target);
    }
    tui_job_note(j, "computing costs (Esc abandons)");
    ox_model_cost_compute(u->target, &u->cost, NULL);
}

static void undo_done(tui *t, tui_job *j)
{
    undo_job *u = j->ctx;
    ox_model *dropped = NULL;
    if (tui_stepper_undo_target(&t->st) != u->target || !tui_stepper_undo_keep(&t->st, &dropped)) {
        tui_set_status(t, OX_SLOT_UI_WARNING, "undo: the history changed meanwhile");
        return;
    }
    t->cost = u->cost;
    t->cost_preset = u->target;
    undo_finish(t, u->label, dropped);
}

static void undo(tui *t)
{
    char label[128];
    snprintf(label, sizeof label, "%s", t->st.label[0] ? t->st.label : "reset");
    ox_model *target = tui_stepper_undo_target(&t->st);
    if (!target) {
        tui_set_status(t, OX_SLOT_UI_WARNING, "nothing to undo%s",
                       t->st.undo_dropped ? " (older steps were dropped to bound memory)" : "");
        return;
    }
    if (big(t)) {
        tui_job *j = calloc(1, sizeof *j);
        undo_job *u = calloc(1, sizeof *u);
        if (!j || !u) {
            free(j);
            free(u);
            tui_set_status(t, OX_SLOT_UI_ERROR, "out of memory");
            return;
        }
        u->t = t;
        u->target = target;
        u->reinfer = t->shapes_edited && target != t->orig;
        snprintf(u->label, sizeof u->label, "%s", label);
        j->ctx = u;
        j->model = true;
        snprintf(j->what, sizeof j->what, "undo %s", label);
        j->run = undo_run;
        j->done = undo_done;
        t->status[0] = 0;
        tui_job_start(t, j);
        return;
    }
    ox_model *dropped = NULL;
    tui_stepper_undo_keep(&t->st, &dropped);
    t->cur = t->st.cur;
    tui_reinfer_cur(t);
    undo_finish(t, label, dropped);
}

/* Input sets the bisect key runs the model on (seeds 0..N-1, as
 * `optimize --check 2 --bisect`). */
#define BISECT_SETS 2

/* B: replays the enabled passes on the original and names the first pass,
 * and the rewrite in it, whose result computes differently (ox_pm_bisect);
 * selects that pass. It runs the model a few times per rewriting pass, in
 * a worker: the panels keep answering; Esc abandons it (the library cannot
 * stop it midway: its result is dropped when it ends, and the keys that
 * change the model wait until then). */
typedef struct bisect_job {
    ox_pass_manager *pm;
    const ox_model *orig;
    ox_input_opts in;       /* borrowed from the viewer (unchanged while it runs) */
    ox_bisect_result r;
    ox_status st;
    ox_error err;
} bisect_job;

static void bisect_run(tui_job *j)
{
    bisect_job *b = j->ctx;
    tui_job_note(j, "running the model after each pass (Esc abandons)");
    ox_bisect_opts o = {.inputs = &b->in, .n_sets = BISECT_SETS};
    b->st = ox_pm_bisect(b->pm, b->orig, &o, &b->r, &b->err);
}

static void bisect_discard(tui_job *j)
{
    bisect_job *b = j->ctx;
    if (b->st == OX_OK)
        ox_bisect_result_free(&b->r);
}

static void bisect_done(tui *t, tui_job *j)
{
    bisect_job *b = j->ctx;
    if (b->st != OX_OK) {
        tui_set_status(t, OX_SLOT_UI_ERROR, "bisect: %s", b->err.msg);
        return;
    }
    ox_bisect_result *r = &b->r;
    if (!r->found) {
        tui_set_status(t, OX_SLOT_UI_OK, "bisect: %s (%d input sets)", r->why, BISECT_SETS);
        ox_bisect_result_free(r);
        return;
    }
    char nodes[512] = "";
    size_t k = 0;
    for (int i = 0; i < r->n_nodes && k + 1 < sizeof nodes; i++) {
        int w = snprintf(nodes + k, sizeof nodes - k, "%s%s '%s' (%s)", i ? ", " : "",
                         ox_bisect_change_name(r->nodes[i].change), r->nodes[i].name,
                         r->nodes[i].op_type);
        if (w < 0)
            break;
        k += (size_t)w;
    }
    char step[48] = "";
    if (r->rewrite)
        snprintf(step, sizeof step, ", rewrite %d of %d", r->rewrite, r->pass_rewrites);
    tui_set_status(t, OX_SLOT_UI_ERROR, "bisect: %s (round %d%s) diverges: %s", r->pass,
                   r->round, step, nodes);
    t->panels[TUI_P_PASSES].sel = r->pass_index;
    ox_bisect_result_free(r);
}

static void bisect(tui *t)
{
    tui_job *j = calloc(1, sizeof *j);
    bisect_job *b = calloc(1, sizeof *b);
    if (!j || !b) {
        free(j);
        free(b);
        tui_set_status(t, OX_SLOT_UI_ERROR, "out of memory");
        return;
    }
    b->pm = t->pm;
    b->orig = t->orig;
    /* The benchmark's --input/--fill/--default-dim, the viewer's shapes. */
    b->in = t->bench_inputs;
    b->in.shapes = &t->iopts;
    b->st = OX_EINVAL;
    j->ctx = b;
    j->model = true;
    snprintf(j->what, sizeof j->what, "bisecting");
    j->run = bisect_run;
    j->done = bisect_done;
    j->discard = bisect_discard;
    t->status[0] = 0;
    tui_job_start(t, j);
}

static void reset(tui *t)
{
    t->live = false;
    if (tui_stepper_reset(&t->st))
        after_change(t);
    t->diff.n_step_msg = 0;
    tui_set_status(t, OX_SLOT_UI_OK, "reset to the original model (u undoes)");
}

/* Changed nodes in the Nodes list order, from the cursor: dir +1 / -1. */
static void goto_changed(tui *t, int dir)
{
    tui_panel *p = &t->panels[TUI_P_NODES];
    int n = t->nodes.n_order;
    for (int k = 1; k <= n; k++) {
        int r = ((p->sel + dir * k) % n + n) % n;
        ox_node *nd = t->nodes.rc[t->nodes.order[r]].node;
        if (tui_node_touched(t, nd)) {
            tui_goto_node(t, nd, false);
            p->sel = r;
            if (t->cur_panel != TUI_P_DETAIL && t->cur_panel != TUI_P_NEIGH)
                tui_switch(t, TUI_P_NODES);
            char lb[256];
            tui_set_status(t, OX_SLOT_UI_OK, "%c %s %s (row %d of %d)", tui_node_mark(t, nd),
                           nd->op_type, tui_node_label(nd, lb, sizeof lb), r + 1, n);
            return;
        }
    }
    tui_set_status(t, OX_SLOT_UI_WARNING, "no changed node in this list%s",
                   t->st.have_rep ? "" : " (no step yet: s in any panel)");
}

bool tui_passes_idle_pending(tui *t)
{
    return t->pm && !t->bench.running && !tui_job_busy(t, true) &&
           tui_stepper_probe_pending(&t->st, t->pm);
}

bool tui_passes_idle(tui *t)
{
    if (t->bench.running || !t->pm)
        return false;
    return tui_stepper_probe_one(&t->st, t->pm) && t->cur_panel == TUI_P_PASSES;
}

int tui_passes_key(tui *t, tui_action a)
{
    bool model_action = a == TUI_A_TOGGLE || a == TUI_A_STEP || a == TUI_A_STEP_REST ||
                        a == TUI_A_UNDO || a == TUI_A_RESET || a == TUI_A_APPLY_ALL ||
                        a == TUI_A_LEVEL || a == TUI_A_BISECT;
    if (a == TUI_A_NEXT_CHANGED || a == TUI_A_PREV_CHANGED) {
        goto_changed(t, a == TUI_A_NEXT_CHANGED ? 1 : -1);
        return TUI_REDRAW;
    }
    if (!t->pm) {
        if (model_action) {
            tui_set_status(t, OX_SLOT_UI_ERROR, "the pass manager could not start");
            return TUI_REDRAW;
        }
        return TUI_UNHANDLED;
    }
    if (t->bench.running && model_action) {
        tui_set_status(t, OX_SLOT_UI_WARNING, "wait for the benchmark to finish");
        return TUI_REDRAW;
    }
    tui_panel *p = &t->panels[TUI_P_PASSES];
    switch (a) {
    case TUI_A_TOGGLE:
    case TUI_A_ENTER: {
        if (t->cur_panel != TUI_P_PASSES)
            return TUI_UNHANDLED;
        int i = p->sel;
        if (i < 0 || i >= ox_pm_count(t->pm))
            return TUI_REDRAW;
        ox_pm_enable(t->pm, i, !ox_pm_enabled(t->pm, i));
        if (t->live)
            apply_all(t);
        else
            tui_set_status(t, OX_SLOT_UI_OK, "%s %s", ox_pm_pass(t->pm, i)->name,
                           ox_pm_enabled(t->pm, i) ? "enabled" : "disabled");
        return TUI_REDRAW;
    }
    case TUI_A_STEP: step(t, false); return TUI_REDRAW;
    case TUI_A_STEP_REST: step(t, true); return TUI_REDRAW;
    case TUI_A_UNDO: undo(t); return TUI_REDRAW;
    case TUI_A_APPLY_ALL: apply_all(t); return TUI_REDRAW;
    case TUI_A_BISECT: bisect(t); return TUI_REDRAW;
    case TUI_A_RESET: reset(t); return TUI_REDRAW;
    case TUI_A_LEVEL: {
        t->level = (ox_pass_level)((t->level + 1) % 3);
        ox_pass_manager *pm = ox_pm_new(t->level, OX_TARGET_ONNX);
        if (pm) {
            ox_pm_free(t->pm);
            t->pm = pm;
            ox_pm_set_infer_opts(t->pm, &t->iopts);
        }
        if (t->live)
            apply_all(t);
        /* Say what the preset adds; the TUI's target is onnx, so `all`
         * adds nothing over `extended` here, and it says so. */
        char adds[256], none[256];
        ox_pass_preset_note(t->level, OX_TARGET_ONNX, adds, sizeof adds, none, sizeof none);
        if (none[0])
            tui_set_status(t, OX_SLOT_UI_WARNING,
                           "level preset: %s: adds nothing here (its passes emit com.microsoft "
                           "ops; the TUI keeps standard ONNX)", ox_pass_level_name(t->level));
        else
            tui_set_status(t, OX_SLOT_UI_OK, "level preset: %s%s%s", ox_pass_level_name(t->level),
                           adds[0] ? ": " : "", adds);
        return TUI_REDRAW;
    }
    default: return TUI_UNHANDLED;
    }
}

int tui_passes_rows(tui *t)
{
    return t->pm ? ox_pm_count(t->pm) : 0;
}

const char *tui_passes_header(tui *t, char *buf, int w)
{
    (void)w;
    snprintf(buf, 512, "     %-27s %-12s %-6s  level %s%s", "pass", "category", "target",
             ox_pass_level_name(t->level), t->live ? "  (live: Space re-runs)" : "");
    return buf;
}

/* "-3+1~2": what the pass did since the reset (steps and apply-all). */
static bool total_str(const tui_pass_total *pt, char *buf, size_t len)
{
    buf[0] = 0;
    if (!pt->nodes_removed && !pt->nodes_added && !pt->nodes_edited && !pt->inits_removed &&
        !pt->inits_added && !pt->rewrites)
        return false;
    snprintf(buf, len, " -%d+%d~%d", pt->nodes_removed, pt->nodes_added, pt->nodes_edited);
    return true;
}

/* '>' marks the pass `s` works on; passes known to have no match on the
 * shown model are greyed with "no match" (the stepper skips them). */
void tui_passes_draw_row(tui *t, int row, int y, int w, bool sel)
{
    if (!t->pm || row < 0 || row >= ox_pm_count(t->pm))
        return;
    const ox_pass *p = ox_pm_pass(t->pm, row);
    bool on = ox_pm_enabled(t->pm, row);
    bool nomatch = tui_stepper_match(&t->st, row) == 0;
    int slot = sel ? OX_SLOT_UI_SELECTED : on && !nomatch ? OX_SLOT_UI_NORMAL : OX_SLOT_UI_DIM;
    if (sel)
        tui_fill(y, 0, w, slot, t);
    char res[48] = "";
    if (row < t->st.n_passes)
        total_str(&t->st.totals[row], res, sizeof res);
    int x = tui_putf(y, 0, w, slot, t, "%c[%c] %-27s %-12s %-6s",
                     row == t->st.cur_pass ? '>' : ' ', on ? 'x' : ' ', p->name,
                     ox_pass_category_name(p->category), ox_pass_target_name(p->target));
    if (res[0])
        x += tui_put(y, x, w - x, sel ? slot : OX_SLOT_UI_CHANGED, t, res);
    if (nomatch)
        x += tui_put(y, x, w - x, slot, t, " no match");
    /* A pass that left a match alone says why in place of its summary. */
    const ox_pass_stat *ps = ox_pass_report_find(&t->st.rep, p->name);
    tui_putf(y, x, w - x, sel ? slot : OX_SLOT_UI_DIM, t, "  %s%s",
             ps && ps->note ? ps->note : p->summary, p->single_rewrite ? "" : " (runs whole)");
}

bool tui_passes_match(tui *t, int row, const char *q)
{
    const ox_pass *p = ox_pm_pass(t->pm, row);
    return p && (strcasestr(p->name, q) || strcasestr(p->summary, q));
}

int tui_passes_footer_lines(tui *t)
{
    (void)t;
    return 3;
}

void tui_passes_footer(tui *t, int y0, int h, int w)
{
    (void)h;
    for (int i = 0; i < w; i++)
        tui_put(y0, i, 1, OX_SLOT_UI_BORDER, t, tui_hline(t));
    char a[64], b[64];
    if (t->cur == t->orig)
        tui_putf(y0 + 1, 1, w - 2, OX_SLOT_UI_DIM, t, "showing the original model%s",
                 t->st.n_undo ? "   (u undoes the reset)" : "   (s steps one rewrite)");
    else
        tui_putf(y0 + 1, 1, w - 2, OX_SLOT_UI_OK, t,
                 "%s: nodes %d -> %d   MACs %s -> %s%s", t->st.label,
                 t->orig->graph->n_nodes, t->cur->graph->n_nodes,
                 ox_fmt_model_macs(&t->cost_orig, a, sizeof a),
                 ox_fmt_model_macs(&t->cost, b, sizeof b),
                 t->st.round ? "   (wrapped: a later round)" : "");
    tui_put(y0 + 2, 1, w - 2, OX_SLOT_UI_DIM, t,
            "Space toggle  s step  S rest  u undo  a all  r reset  L level  B bisect");
}

/* ---- Diff ------------------------------------------------------------------ */

typedef struct tui_op_delta {
    const char *op;
    int before, after;
} op_delta;

static int cmp_delta(const void *a, const void *b)
{
    const op_delta *x = a, *y = b;
    int dx = abs(x->after - x->before), dy = abs(y->after - y->before);
    if (dx != dy)
        return dy - dx;
    return strcmp(x->op, y->op);
}

#define OPTAB_SIZE 2048   /* open addressing; more distinct ops than this are not shown */

static uint32_t hash_str(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* Counts op types of a graph into the hash table (one pass, O(nodes)). */
static void count_ops(const ox_graph *g, op_delta *tab, int *n, bool after)
{
    for (int i = 0; i < g->n_nodes; i++) {
        const char *op = g->nodes[i]->op_type ? g->nodes[i]->op_type : "?";
        uint32_t h = hash_str(op) & (OPTAB_SIZE - 1);
        for (int probe = 0; probe < OPTAB_SIZE; probe++, h = (h + 1) & (OPTAB_SIZE - 1)) {
            if (!tab[h].op) {
                if (*n >= OPTAB_SIZE / 2)
                    break;
                tab[h].op = op;
                (*n)++;
            } else if (strcmp(tab[h].op, op) != 0) {
                continue;
            }
            if (after)
                tab[h].after++;
            else
                tab[h].before++;
            break;
        }
    }
}

static void build_dtab(tui *t)
{
    free(t->diff.dtab);
    t->diff.dtab = NULL;
    t->diff.n_dtab = 0;
    t->diff.dtab_valid = true;
    op_delta *tab = calloc(OPTAB_SIZE, sizeof *tab);
    if (!tab)
        return;
    int n = 0;
    count_ops((t->base ? t->base : t->orig)->graph, tab, &n, false);
    count_ops(t->cur->graph, tab, &n, true);
    int k = 0;
    for (int i = 0; i < OPTAB_SIZE; i++)
        if (tab[i].op)
            tab[k++] = tab[i];
    qsort(tab, (size_t)k, sizeof *tab, cmp_delta);
    t->diff.dtab = tab;
    t->diff.n_dtab = k;
}

/* The Diff panel is laid out on a virtual page (rows from 0, columns from
 * the panel's left edge) and shown through a window at t->diff.top /
 * t->diff.left, so every row and column is reachable at 80x24. */
typedef struct dview {
    tui *t;
    int y0, h, w;     /* the window on the screen */
    int rows, cols;   /* the page's extent so far */
} dview;

static void dput(dview *v, int row, int x, int slot, const char *s)
{
    int len = (int)strlen(s);
    if (row + 1 > v->rows)
        v->rows = row + 1;
    if (x + len > v->cols)
        v->cols = x + len;
    int sy = row - v->t->diff.top;
    if (sy < 0 || sy >= v->h)
        return;
    int sx = x - v->t->diff.left;
    if (sx < 0) {
        if (-sx >= len)
            return;
        s += -sx;   /* the page is ASCII apart from names, shown as they cut */
        sx = 0;
    }
    if (sx < v->w)
        tui_put(v->y0 + sy, sx, v->w - sx, slot, v->t, s);
}

static void dputf(dview *v, int row, int x, int slot, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    dput(v, row, x, slot, buf);
}

static void diff_line(dview *v, int y, const char *label, const char *b, const char *a,
                      bool changed)
{
    dputf(v, y, 2, changed ? OX_SLOT_UI_CHANGED : OX_SLOT_UI_NORMAL, "%-20s %14s %14s", label,
          b, a);
}

/* The per-pass table since the reset (it fills as you step) and what the
 * last action removed, added and edited; returns the next free row. */
static int diff_passes(dview *v, int yr, int x)
{
    tui *t = v->t;
    /* Bytes saved as the report counts them; MACs and peak are the
     * report's deltas (after - before, < 0 a saving; '?' when unknown:
     * docs/PASSES.md, "Report fields"). */
    dputf(v, yr++, x, OX_SLOT_UI_HEADER, "%-26s %3s %6s %6s %5s %11s %9s %10s", "pass", "rw",
          "-nodes", "+nodes", "edits", "bytes saved", "MACs", "peak");
    int np = t->pm ? ox_pm_count(t->pm) : 0;
    for (int i = 0; i < np && i < t->st.n_passes; i++) {
        const tui_pass_total *pt = &t->st.totals[i];
        if (!pt->rewrites && !pt->nodes_removed && !pt->nodes_added && !pt->nodes_edited &&
            !pt->bytes_saved && !pt->inits_removed && !pt->inits_added)
            continue;
        char macs[32], peak[32], sb[32];
        dputf(v, yr++, x, OX_SLOT_UI_NORMAL, "%-26.26s %3d %6d %6d %5d %11s %9s %10s",
              ox_pm_pass(t->pm, i)->name, pt->rewrites, pt->nodes_removed, pt->nodes_added,
              pt->nodes_edited, ox_fmt_bytes(pt->bytes_saved, true, sb, sizeof sb),
              ox_fmt_delta(pt->macs_delta, !pt->macs_unknown, false, macs, sizeof macs),
              ox_fmt_delta(pt->peak_delta, !pt->peak_unknown, true, peak, sizeof peak));
    }
    if (t->diff.n_step_msg)
        dputf(v, yr++, x, OX_SLOT_UI_HEADER, "last: %s", t->st.label);
    for (int k = 0; k < t->diff.n_step_msg; k++)
        dput(v, yr++, x, t->diff.step_msg[k][0] == 'r'   ? OX_SLOT_UI_REMOVED
                         : t->diff.step_msg[k][0] == 'a' ? OX_SLOT_UI_ADDED
                                                    : OX_SLOT_UI_CHANGED,
             t->diff.step_msg[k]);
    return yr;
}

/* Two models: the nodes only A has, those only B has and the changed
 * pairs, the first DIFF_LIST of each (the Nodes list has them all: C). */
#define DIFF_LIST 500

static int diff_nodes(dview *v, int yr)
{
    tui *t = v->t;
    const ox_model_diff *d = &t->mdiff;
    static const struct { ox_ndiff_kind k; const char *title; int slot; char mark; } kinds[] = {
        {OX_NDIFF_REMOVED, "removed (only in A)", OX_SLOT_UI_REMOVED, '-'},
        {OX_NDIFF_ADDED, "added (only in B)", OX_SLOT_UI_ADDED, '+'},
        {OX_NDIFF_CHANGED, "changed", OX_SLOT_UI_CHANGED, '*'},
    };
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
        int total = kinds[k].k == OX_NDIFF_REMOVED ? d->removed
                    : kinds[k].k == OX_NDIFF_ADDED ? d->added
                                                   : d->changed;
        if (!total)
            continue;
        dputf(v, yr++, 2, OX_SLOT_UI_HEADER, "%s: %d", kinds[k].title, total);
        int shown = 0;
        for (int i = 0; i < d->n_items; i++) {
            const ox_node_diff *it = &d->items[i];
            if (it->kind != kinds[k].k)
                continue;
            if (shown == DIFF_LIST) {
                dputf(v, yr++, 4, OX_SLOT_UI_DIM, "... %d more", total - shown);
                break;
            }
            shown++;
            const ox_node *n = it->b ? it->b : it->a;
            char lb[256], wb[96] = "";
            if (it->kind == OX_NDIFF_CHANGED) {
                char x[80];
                snprintf(wb, sizeof wb, "  [%s]", ox_node_diff_what(it->what, x, sizeof x));
            }
            dputf(v, yr++, 2, kinds[k].slot, "%c #%-6d %-18s %s%s", kinds[k].mark, n->index,
                  n->op_type ? n->op_type : "?", tui_node_label(n, lb, sizeof lb), wb);
        }
    }
    return yr;
}

static void diff_clamp(tui *t, int h, int w)
{
    if (t->diff.top > t->diff.rows - h)
        t->diff.top = t->diff.rows - h;
    if (t->diff.top < 0)
        t->diff.top = 0;
    if (t->diff.left > t->diff.cols - w)
        t->diff.left = t->diff.cols - w;
    if (t->diff.left < 0)
        t->diff.left = 0;
}

void tui_diff_draw(tui *t, int y0, int h, int w)
{
    char a[64], b[64];
    /* Two models: A (the base) against the shown model. */
    const ox_model *before = t->base ? t->base : t->orig;
    const ox_model_cost *co = t->base ? &t->cost_base : &t->cost_orig, *cn = &t->cost;
    /* The last row of the window says where the page continues. */
    int vh = h > 2 ? h - 1 : h;
    diff_clamp(t, vh, w);
    dview v = {.t = t, .y0 = y0, .h = vh, .w = w};
    int y = 0;
    if (t->base) {
        const char *bn = strrchr(t->path, '/');
        bn = bn ? bn + 1 : t->path;
        dputf(&v, y++, 2, OX_SLOT_UI_HEADER, "Diff: A %s -> B %s%s%s", tui_base_name(t), bn,
              t->cur == t->orig ? "" : " after ", t->cur == t->orig ? "" : t->st.label);
        dputf(&v, y++, 2, OX_SLOT_UI_HEADER, "%-20s %14s %14s", "", "A", "B");
    } else {
        dputf(&v, y++, 2, OX_SLOT_UI_HEADER, "Diff: original -> %s",
              t->cur == t->orig ? "original (no pass applied yet: 8, then a or s)" : t->st.label);
        dputf(&v, y++, 2, OX_SLOT_UI_HEADER, "%-20s %14s %14s", "", "before", "after");
    }
    int nb = before->graph->n_nodes, na = t->cur->graph->n_nodes;
    snprintf(a, sizeof a, "%d", nb);
    snprintf(b, sizeof b, "%d", na);
    diff_line(&v, y++, "nodes", a, b, na != nb);
    diff_line(&v, y++, "params", ox_fmt_count(co->params, true, a, sizeof a),
              ox_fmt_count(cn->params, true, b, sizeof b), co->params != cn->params);
    diff_line(&v, y++, "weights", ox_fmt_bytes(co->weights_bytes, true, a, sizeof a),
              ox_fmt_bytes(cn->weights_bytes, true, b, sizeof b),
              co->weights_bytes != cn->weights_bytes);
    /* Weights by element type when a pass changed the split (issue 15:
     * to_fp16 moves float32 to float16); no extra rows otherwise. */
    bool dt_changed = memcmp(co->weights_bytes_by_dtype, cn->weights_bytes_by_dtype,
                             sizeof co->weights_bytes_by_dtype) != 0;
    for (int d = 0; d < OX_DT_COUNT && dt_changed; d++) {
        int64_t x = co->weights_bytes_by_dtype[d], z = cn->weights_bytes_by_dtype[d];
        if (!x && !z)
            continue;
        char label[32];
        snprintf(label, sizeof label, "  %s", ox_dtype_name((ox_dtype)d));
        diff_line(&v, y++, label, ox_fmt_bytes(x, true, a, sizeof a),
                  ox_fmt_bytes(z, true, b, sizeof b), x != z);
    }
    diff_line(&v, y++, "MACs", ox_fmt_model_macs(co, a, sizeof a),
              ox_fmt_model_macs(cn, b, sizeof b), strcmp(a, b) != 0);
    diff_line(&v, y++, "FLOPs", ox_fmt_model_flops(co, a, sizeof a),
              ox_fmt_model_flops(cn, b, sizeof b), strcmp(a, b) != 0);
    diff_line(&v, y++, "peak activations",
              ox_fmt_bytes(co->peak_activation_bytes, co->peak_known, a, sizeof a),
              ox_fmt_bytes(cn->peak_activation_bytes, cn->peak_known, b, sizeof b),
              co->peak_activation_bytes != cn->peak_activation_bytes);
    ensure_size(t);
    diff_line(&v, y, "file size", ox_fmt_bytes((int64_t)before->file_size, true, a, sizeof a),
              ox_fmt_bytes(t->diff.size_cur, t->diff.size_cur >= 0, b, sizeof b),
              (int64_t)before->file_size != t->diff.size_cur);
    /* The size change, on the same row (issue 15). */
    if (t->diff.size_cur >= 0 && before->file_size > 0 &&
        (int64_t)before->file_size != t->diff.size_cur)
        dputf(&v, y, 2 + 20 + 1 + 14 + 1 + 14, OX_SLOT_UI_CHANGED, " %+.1f%%",
              100.0 * ((double)t->diff.size_cur - (double)before->file_size) /
                  (double)before->file_size);
    y++;
    if (t->base && t->mdiff_of == t->cur) {
        const ox_model_diff *d = &t->mdiff;
        dputf(&v, y++, 2, OX_SLOT_UI_NORMAL,
              "nodes: %d same, %d changed, %d added, %d removed (matched %d by name, %d by "
              "position and op)",
              d->same, d->changed, d->added, d->removed, d->by_name, d->by_position);
        if (tui_compare_marks(t))
            dput(&v, y++, 2, OX_SLOT_UI_DIM,
                 "] [ go to the next/previous added (+) or changed (*) node, C lists them (Nodes)");
    }
    y++;
    /* Narrow: the per-pass table comes first (it is what stepping
     * changes), the op counts below it; wide: side by side. */
    bool wide = w >= 100;
    if (!wide && t->st.have_totals)
        y = diff_passes(&v, y, 2) + 1;
    if (!t->diff.dtab_valid)
        build_dtab(t);
    int ytab = y;
    dputf(&v, y++, 2, OX_SLOT_UI_HEADER, "%-18s %6s %6s %6s", "op", t->base ? "A" : "before",
          t->base ? "B" : "after", "delta");
    /* Op counts, largest change first. */
    for (int i = 0; i < t->diff.n_dtab; i++) {
        const op_delta *d = &t->diff.dtab[i];
        int dd = d->after - d->before;
        dputf(&v, y++, 2, dd ? (dd < 0 ? OX_SLOT_UI_REMOVED : OX_SLOT_UI_ADDED) : OX_SLOT_UI_DIM,
              "%-18.18s %6d %6d %+6d", d->op, d->before, d->after, dd);
    }
    if (wide && t->st.have_totals)
        diff_passes(&v, ytab, w / 2);
    if (t->base && t->mdiff_of == t->cur)
        diff_nodes(&v, v.rows + 1);
    t->diff.rows = v.rows;
    t->diff.cols = v.cols + 1;
    if (vh < h) {
        bool below = t->diff.top + vh < v.rows, right = t->diff.left + w < t->diff.cols;
        if (below || right || t->diff.top || t->diff.left)
            tui_putf(y0 + vh, 2, w - 4, OX_SLOT_UI_DIM, t,
                     "rows %d-%d of %d%s, col %d%s: j/k g/G PgDn h/l scroll",
                     t->diff.top + 1, t->diff.top + vh < v.rows ? t->diff.top + vh : v.rows,
                     v.rows, below ? " (more below)" : "", t->diff.left + 1,
                     right ? " (more right)" : "");
    }
}

/* Scroll keys of the Diff panel (the key table's movement keys). */
int tui_diff_scroll(tui *t, tui_action a, int h)
{
    int page = h > 3 ? h - 2 : 1;
    switch (a) {
    case TUI_A_UP: t->diff.top--; break;
    case TUI_A_DOWN: t->diff.top++; break;
    case TUI_A_PGUP: t->diff.top -= page; break;
    case TUI_A_PGDN: t->diff.top += page; break;
    case TUI_A_HOME: t->diff.top = 0; t->diff.left = 0; break;
    case TUI_A_END: t->diff.top = t->diff.rows; break;
    case TUI_A_LEFT: t->diff.left -= 8; break;
    case TUI_A_RIGHT: t->diff.left += 8; break;
    default: return TUI_UNHANDLED;
    }
    diff_clamp(t, h > 2 ? h - 1 : h, COLS);
    return TUI_REDRAW;
}
