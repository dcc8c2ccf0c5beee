/* The Passes and Diff panels: a checkbox list over the pass manager
 * (toggle, step one pass, apply all, reset, level presets) that keeps the
 * original model and an optimized clone, and the before/after table with
 * the per-pass report. Nodes the last action touched are marked in Nodes. */
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
    t->cost_orig = t->cost;
    t->size_cur = (int64_t)t->orig->file_size;
}

void tui_passes_free(tui *t)
{
    if (t->have_rep)
        ox_pass_report_free(&t->rep);
    t->have_rep = false;
    ox_pm_free(t->pm);
    t->pm = NULL;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return x < y ? -1 : x > y;
}

bool tui_node_touched(const tui *t, const ox_node *n)
{
    if (!t->have_rep || t->cur == t->orig || !t->rep.n_touched)
        return false;
    return bsearch(&n->id, t->rep.touched, (size_t)t->rep.n_touched, sizeof(int), cmp_int) != NULL;
}

/* After cur changed: back to the main graph, recompute every view. */
static void after_change(tui *t)
{
    t->gdepth = 0;
    t->graph = t->cur->graph;
    t->detail = t->neigh = NULL;
    ox_error err = {0};
    tui_model_refresh(t, &err);
    void *buf = NULL;
    size_t len = 0;
    if (t->cur == t->orig)
        t->size_cur = (int64_t)t->orig->file_size;
    else if (ox_save_buffer(t->cur, &buf, &len, NULL) == OX_OK)
        t->size_cur = (int64_t)len;
    else
        t->size_cur = -1;
    free(buf);
}

/* Shown before a possibly long operation on a big model. */
static void busy(tui *t, const char *what)
{
    tui_set_status(t, OX_SLOT_UI_WARNING, "%s ...", what);
    tui_fill(LINES - 1, 0, COLS, OX_SLOT_UI_STATUS, t);
    tui_put(LINES - 1, 0, COLS, OX_SLOT_UI_STATUS, t, t->status);
    refresh();
}

static void reset_rep(tui *t)
{
    if (t->have_rep)
        ox_pass_report_free(&t->rep);
    memset(&t->rep, 0, sizeof t->rep);
    t->have_rep = false;
}

static void apply_all(tui *t)
{
    if (!t->pm)
        return;
    busy(t, "running the enabled passes");
    ox_model *m = ox_model_clone(t->orig);
    if (!m) {
        tui_set_status(t, OX_SLOT_UI_ERROR, "out of memory");
        return;
    }
    reset_rep(t);
    ox_error err = {0};
    ox_status st = ox_pm_run(t->pm, m, &t->rep, &err);
    t->have_rep = true;
    if (t->cur != t->orig)
        ox_model_free(t->cur);
    t->cur = m;
    t->live = true;
    after_change(t);
    snprintf(t->last_action, sizeof t->last_action, "all enabled passes (%d rounds)",
             t->rep.iterations);
    if (st != OX_OK)
        tui_set_status(t, OX_SLOT_UI_ERROR, "a pass failed: %s", err.msg);
    else
        tui_set_status(t, OX_SLOT_UI_OK, "applied: %d -> %d nodes", t->rep.nodes_before,
                       t->rep.nodes_after);
}

static void step(tui *t)
{
    if (!t->pm)
        return;
    int n = ox_pm_count(t->pm);
    int pick = -1;
    for (int k = 0; k < n; k++) {
        int i = (t->step_next + k) % n;
        if (ox_pm_enabled(t->pm, i)) {
            pick = i;
            break;
        }
    }
    if (pick < 0) {
        tui_set_status(t, OX_SLOT_UI_WARNING, "no pass is enabled");
        return;
    }
    if (t->cur == t->orig) {
        ox_model *m = ox_model_clone(t->orig);
        if (!m) {
            tui_set_status(t, OX_SLOT_UI_ERROR, "out of memory");
            return;
        }
        t->cur = m;
    }
    const ox_pass *p = ox_pm_pass(t->pm, pick);
    busy(t, p->name);
    reset_rep(t);
    ox_error err = {0};
    ox_status st = ox_pm_step(t->pm, t->cur, pick, 0, &t->rep, &err);
    t->have_rep = true;
    t->live = false;
    t->step_next = (pick + 1) % n;
    after_change(t);
    t->panels[TUI_P_PASSES].sel = pick;
    snprintf(t->last_action, sizeof t->last_action, "step: %s", p->name);
    const ox_pass_stat *ps = ox_pass_report_find(&t->rep, p->name);
    if (st != OX_OK)
        tui_set_status(t, OX_SLOT_UI_ERROR, "%s failed: %s", p->name, err.msg);
    else
        tui_set_status(t, OX_SLOT_UI_OK, "step %s: -%d +%d nodes, %d edited", p->name,
                       ps ? ps->nodes_removed : 0, ps ? ps->nodes_added : 0,
                       ps ? ps->nodes_replaced : 0);
}

/* Input sets the bisect key runs the model on (seeds 0..N-1, as
 * `optimize --check 2 --bisect`). */
#define BISECT_SETS 2

/* B: replays the enabled passes on the original and names the first pass,
 * and the rewrite in it, whose result computes differently (ox_pm_bisect);
 * selects that pass. Runs the model a few times per rewriting pass. */
static void bisect(tui *t)
{
    busy(t, "bisecting: running the model after each pass");
    /* The benchmark's --input/--fill/--default-dim, the viewer's shapes. */
    ox_input_opts in = t->bench_inputs;
    in.shapes = &t->iopts;
    ox_bisect_opts o = {.inputs = &in, .n_sets = BISECT_SETS};
    ox_bisect_result r;
    ox_error err = {0};
    if (ox_pm_bisect(t->pm, t->orig, &o, &r, &err) != OX_OK) {
        tui_set_status(t, OX_SLOT_UI_ERROR, "bisect: %s", err.msg);
        return;
    }
    if (!r.found) {
        tui_set_status(t, OX_SLOT_UI_OK, "bisect: %s (%d input sets)", r.why, BISECT_SETS);
        ox_bisect_result_free(&r);
        return;
    }
    char nodes[512] = "";
    size_t k = 0;
    for (int i = 0; i < r.n_nodes && k + 1 < sizeof nodes; i++) {
        int w = snprintf(nodes + k, sizeof nodes - k, "%s%s '%s' (%s)", i ? ", " : "",
                         ox_bisect_change_name(r.nodes[i].change), r.nodes[i].name,
                         r.nodes[i].op_type);
        if (w < 0)
            break;
        k += (size_t)w;
    }
    char step[48] = "";
    if (r.rewrite)
        snprintf(step, sizeof step, ", rewrite %d of %d", r.rewrite, r.pass_rewrites);
    tui_set_status(t, OX_SLOT_UI_ERROR, "bisect: %s (round %d%s) diverges: %s", r.pass,
                   r.round, step, nodes);
    t->panels[TUI_P_PASSES].sel = r.pass_index;
    ox_bisect_result_free(&r);
}

static void reset(tui *t)
{
    if (t->cur != t->orig)
        ox_model_free(t->cur);
    t->cur = t->orig;
    t->live = false;
    t->step_next = 0;
    reset_rep(t);
    t->last_action[0] = 0;
    after_change(t);
    tui_set_status(t, OX_SLOT_UI_OK, "reset to the original model");
}

int tui_passes_key(tui *t, tui_action a)
{
    if (!t->pm) {
        if (a == TUI_A_TOGGLE || a == TUI_A_STEP || a == TUI_A_RESET || a == TUI_A_APPLY_ALL ||
            a == TUI_A_LEVEL || a == TUI_A_BISECT) {
            tui_set_status(t, OX_SLOT_UI_ERROR, "the pass manager could not start");
            return TUI_REDRAW;
        }
        return TUI_UNHANDLED;
    }
    if (t->bench_running && (a == TUI_A_TOGGLE || a == TUI_A_STEP || a == TUI_A_RESET ||
                             a == TUI_A_APPLY_ALL || a == TUI_A_LEVEL || a == TUI_A_BISECT)) {
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
    case TUI_A_STEP: step(t); return TUI_REDRAW;
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
        t->step_next = 0;
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
    snprintf(buf, 512, "    %-28s %-12s %-6s  level %s%s", "pass", "category", "target",
             ox_pass_level_name(t->level), t->live ? "  (live: Space re-runs)" : "");
    return buf;
}

void tui_passes_draw_row(tui *t, int row, int y, int w, bool sel)
{
    if (!t->pm || row < 0 || row >= ox_pm_count(t->pm))
        return;
    const ox_pass *p = ox_pm_pass(t->pm, row);
    bool on = ox_pm_enabled(t->pm, row);
    int slot = sel ? OX_SLOT_UI_SELECTED : on ? OX_SLOT_UI_NORMAL : OX_SLOT_UI_DIM;
    if (sel)
        tui_fill(y, 0, w, slot, t);
    const ox_pass_stat *ps = t->have_rep ? ox_pass_report_find(&t->rep, p->name) : NULL;
    char res[48] = "";
    if (ps && (ps->nodes_removed || ps->nodes_added || ps->nodes_replaced || ps->inits_removed))
        snprintf(res, sizeof res, " -%d+%d~%d", ps->nodes_removed, ps->nodes_added,
                 ps->nodes_replaced);
    int x = tui_putf(y, 0, w, slot, t, "[%c] %-28s %-12s %-6s", on ? 'x' : ' ', p->name,
                     ox_pass_category_name(p->category), ox_pass_target_name(p->target));
    if (res[0])
        x += tui_put(y, x, w - x, sel ? slot : OX_SLOT_UI_CHANGED, t, res);
    tui_putf(y, x, w - x, sel ? slot : OX_SLOT_UI_DIM, t, "  %s", p->summary);
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
        tui_put(y0 + 1, 1, w - 2, OX_SLOT_UI_DIM, t, "showing the original model");
    else
        tui_putf(y0 + 1, 1, w - 2, OX_SLOT_UI_OK, t,
                 "%s: nodes %d -> %d   MACs %s -> %s", t->last_action,
                 t->orig->graph->n_nodes, t->cur->graph->n_nodes,
                 ox_fmt_model_macs(&t->cost_orig, a, sizeof a),
                 ox_fmt_model_macs(&t->cost, b, sizeof b));
    tui_put(y0 + 2, 1, w - 2, OX_SLOT_UI_DIM, t,
            "Space toggle  s step  a apply all  r reset  L level  B bisect  9 diff  w save");
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
    free(t->dtab);
    t->dtab = NULL;
    t->n_dtab = 0;
    t->dtab_valid = true;
    op_delta *tab = calloc(OPTAB_SIZE, sizeof *tab);
    if (!tab)
        return;
    int n = 0;
    count_ops(t->orig->graph, tab, &n, false);
    count_ops(t->cur->graph, tab, &n, true);
    int k = 0;
    for (int i = 0; i < OPTAB_SIZE; i++)
        if (tab[i].op)
            tab[k++] = tab[i];
    qsort(tab, (size_t)k, sizeof *tab, cmp_delta);
    t->dtab = tab;
    t->n_dtab = k;
}

static void diff_line(tui *t, int y, int w, const char *label, const char *b, const char *a,
                      bool changed)
{
    tui_putf(y, 2, w - 4, changed ? OX_SLOT_UI_CHANGED : OX_SLOT_UI_NORMAL, t,
             "%-20s %14s %14s", label, b, a);
}

void tui_diff_draw(tui *t, int y0, int h, int w)
{
    char a[64], b[64];
    const ox_model_cost *co = &t->cost_orig, *cn = &t->cost;
    int y = y0, end = y0 + h;
    tui_putf(y++, 2, w - 4, OX_SLOT_UI_HEADER, t, "Diff: original -> %s",
             t->cur == t->orig ? "original (no pass applied yet: 8, then a or s)"
                               : t->last_action);
    tui_putf(y++, 2, w - 4, OX_SLOT_UI_HEADER, t, "%-20s %14s %14s", "", "before", "after");
    int nb = t->orig->graph->n_nodes, na = t->cur->graph->n_nodes;
    snprintf(a, sizeof a, "%d", nb);
    snprintf(b, sizeof b, "%d", na);
    diff_line(t, y++, w, "nodes", a, b, na != nb);
    diff_line(t, y++, w, "params", ox_fmt_count(co->params, true, a, sizeof a),
              ox_fmt_count(cn->params, true, b, sizeof b), co->params != cn->params);
    diff_line(t, y++, w, "weights", ox_fmt_bytes(co->weights_bytes, true, a, sizeof a),
              ox_fmt_bytes(cn->weights_bytes, true, b, sizeof b),
              co->weights_bytes != cn->weights_bytes);
    diff_line(t, y++, w, "MACs", ox_fmt_model_macs(co, a, sizeof a),
              ox_fmt_model_macs(cn, b, sizeof b), strcmp(a, b) != 0);
    diff_line(t, y++, w, "FLOPs", ox_fmt_model_flops(co, a, sizeof a),
              ox_fmt_model_flops(cn, b, sizeof b), strcmp(a, b) != 0);
    diff_line(t, y++, w, "peak activations",
              ox_fmt_bytes(co->peak_activation_bytes, co->peak_known, a, sizeof a),
              ox_fmt_bytes(cn->peak_activation_bytes, cn->peak_known, b, sizeof b),
              co->peak_activation_bytes != cn->peak_activation_bytes);
    diff_line(t, y++, w, "file size", ox_fmt_bytes((int64_t)t->orig->file_size, true, a, sizeof a),
              ox_fmt_bytes(t->size_cur, t->size_cur >= 0, b, sizeof b),
              (int64_t)t->orig->file_size != t->size_cur);
    if (y < end)
        y++;
    /* Op counts, largest change first; then the per-pass report. */
    if (!t->dtab_valid)
        build_dtab(t);
    op_delta *tab = t->dtab;
    int n = t->n_dtab;
    int half = w / 2;
    int tw = w < 100 ? w - 4 : half - 3;
    int ytab = y;
    if (y < end)
        tui_putf(y++, 2, tw, OX_SLOT_UI_HEADER, t, "%-18s %6s %6s %6s", "op", "before",
                 "after", "delta");
    for (int i = 0; i < n && y < end; i++) {
        int d = tab[i].after - tab[i].before;
        tui_putf(y++, 2, tw, d ? (d < 0 ? OX_SLOT_UI_REMOVED : OX_SLOT_UI_ADDED)
                                     : OX_SLOT_UI_DIM,
                 t, "%-18.18s %6d %6d %+6d", tab[i].op, tab[i].before, tab[i].after, d);
    }
    /* the pass report beside the op table (below it when narrow) */
    int x = half, yr = ytab;
    if (w < 100) {
        x = 2;
        yr = y + (y < end ? 1 : 0);
    }
    if (!t->have_rep || yr >= end)
        return;
    tui_putf(yr++, x, w - x - 1, OX_SLOT_UI_HEADER, t, "%-26s %5s %5s %5s %10s %9s %10s",
             "pass", "-nodes", "+nodes", "edits", "bytes saved", "MACs", "peak");
    for (int i = 0; i < t->rep.n_passes && yr < end; i++) {
        const ox_pass_stat *ps = &t->rep.passes[i];
        if (!ps->nodes_removed && !ps->nodes_added && !ps->nodes_replaced && !ps->bytes_saved &&
            !ps->inits_removed && !ps->inits_added)
            continue;
        /* The deltas print '?' when unknown (docs/PASSES.md, "Report fields");
         * bytes in B/KiB/MiB, signed. */
        char macs[32], peak[32], sb[32];
        tui_putf(yr++, x, w - x - 1, OX_SLOT_UI_NORMAL, t, "%-26.26s %5d %5d %5d %10s %9s %10s",
                 ps->name, ps->nodes_removed, ps->nodes_added, ps->nodes_replaced,
                 ox_fmt_bytes(ps->bytes_saved, true, sb, sizeof sb),
                 ox_fmt_delta(ps->macs_delta, ps->cost_known, false, macs, sizeof macs),
                 ox_fmt_delta(ps->peak_delta, ps->peak_known, true, peak, sizeof peak));
    }
}
