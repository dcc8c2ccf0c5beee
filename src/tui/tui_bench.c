/* The Bench panel: runs the original model (and the optimized one when it
 * differs) through the benchmark library (bench.h) in a worker thread, with
 * progress and cancellation, then shows p50/p90/p99, throughput, the speedup
 * and the equivalence check's largest output difference. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "onnxscope/exec.h"
#include "onnxscope/bench.h"
#include "tui/tui_internal.h"

#define BENCH_TIME_BUDGET_S 2.0   /* per model: keeps a run short on big models */

static void on_progress(void *user, int which, int done, int total, double fraction)
{
    tui *t = user;
    (void)which;
    (void)done;
    (void)total;
    atomic_store(&t->bench_progress, (int)(fraction * 1000));
}

/* The worker: the benchmark library does the timing, percentiles and the
 * equivalence check; this only copies the numbers for the panel. */
static void *bench_main(void *arg)
{
    tui *t = arg;
    tui_bench_result *r = &t->bench;
    ox_bench_config cfg;
    ox_bench_config_init(&cfg);
    cfg.model = t->bench_a;
    cfg.compare = t->bench_b;
    cfg.iters = t->bench_iters;
    cfg.warmup = t->bench_warmup;
    cfg.threads = t->bench_threads;
    /* The per-operator profile as `onnxscope bench` takes it. */
    cfg.profile_runs = cfg.iters < 10 ? cfg.iters : 10;
    cfg.time_budget_s = BENCH_TIME_BUDGET_S;
    cfg.shapes = NULL;   /* the clones already carry the overridden input types */
    cfg.inputs = &t->bench_inputs;   /* --input/--fill/--int-max/--default-dim */
    cfg.progress = on_progress;
    cfg.user = t;
    cfg.cancel = &t->bench_cancel;
    ox_bench_result br;
    memset(&br, 0, sizeof br);
    ox_error err = {0};
    ox_status st = ox_bench_run(&cfg, &br, &err);
    r->cancelled = st == OX_ECANCELLED || br.cancelled;
    r->ok = st == OX_OK;
    if (st != OX_OK && !r->cancelled)
        snprintf(r->msg, sizeof r->msg, "%.250s", err.msg[0] ? err.msg : ox_strerror(st));
    r->iters = br.a.iters;
    r->p50 = br.a.p50;
    r->p90 = br.a.p90;
    r->p99 = br.a.p99;
    r->mean = br.a.mean;
    r->min = br.a.min;
    r->max = br.a.max;
    r->compared = br.compared;
    r->p50_b = br.b.p50;
    r->p90_b = br.b.p90;
    r->p99_b = br.b.p99;
    r->mean_b = br.b.mean;
    r->speedup = br.speedup;
    r->max_abs_err = br.check.max_abs_err;
    r->check_ok = br.check.ok;
    r->threads = br.threads;
    r->warmup = br.warmup;
    /* Names are borrowed from the models, freed after the join: copy. */
    const ox_bench_stats *ps = br.compared ? &br.b : &br.a;
    r->n_ops_all = ps->n_ops;
    r->profile_runs = ps->profile_runs;
    r->profile_ms = ps->profile_ms;
    for (int i = 0; i < ps->n_ops && i < TUI_BENCH_OPS; i++) {
        if (ps->ops[i].domain && ps->ops[i].domain[0])
            snprintf(r->ops[i].op, sizeof r->ops[i].op, "%s:%s", ps->ops[i].domain,
                     ps->ops[i].op_type);
        else
            snprintf(r->ops[i].op, sizeof r->ops[i].op, "%s", ps->ops[i].op_type);
        r->ops[i].nodes = ps->ops[i].nodes;
        r->ops[i].ms = ps->ops[i].ms;
        r->n_ops = i + 1;
    }
    ox_bench_result_free(&br);
    atomic_store(&t->bench_progress, 1000);
    atomic_store(&t->bench_finished, 1);
    return NULL;
}

void tui_bench_start(tui *t)
{
    tui_matrix_hide(t);
    if (t->bench_running) {
        tui_set_status(t, OX_SLOT_UI_WARNING, "a benchmark is already running (Esc cancels)");
        return;
    }
    /* The worker gets private copies, so browsing (and re-inference) on the
     * main thread never races with it. Copies are made and freed here. */
    t->bench_a = ox_model_clone(t->orig);
    t->bench_b = t->cur != t->orig ? ox_model_clone(t->cur) : NULL;
    if (!t->bench_a || (t->cur != t->orig && !t->bench_b)) {
        ox_model_free(t->bench_a);
        ox_model_free(t->bench_b);
        t->bench_a = t->bench_b = NULL;
        tui_set_status(t, OX_SLOT_UI_ERROR, "out of memory");
        return;
    }
    memset(&t->bench, 0, sizeof t->bench);
    atomic_store(&t->bench_cancel, 0);
    atomic_store(&t->bench_progress, 0);
    atomic_store(&t->bench_finished, 0);
    if (t->bench_iters <= 0)
        t->bench_iters = 50;
    if (pthread_create(&t->bench_thread, NULL, bench_main, t) != 0) {
        ox_model_free(t->bench_a);
        ox_model_free(t->bench_b);
        t->bench_a = t->bench_b = NULL;
        tui_set_status(t, OX_SLOT_UI_ERROR, "cannot start the benchmark thread");
        return;
    }
    t->bench_running = true;
    tui_set_status(t, OX_SLOT_UI_OK, "benchmark running (Esc cancels)");
}

void tui_bench_cancel(tui *t)
{
    if (t->bench_running)
        atomic_store(&t->bench_cancel, 1);
}

/* Called from the main loop: joins a finished worker. */
void tui_bench_poll(tui *t)
{
    if (!t->bench_running || !atomic_load(&t->bench_finished))
        return;
    pthread_join(t->bench_thread, NULL);
    t->bench_running = false;
    ox_model_free(t->bench_a);
    ox_model_free(t->bench_b);
    t->bench_a = t->bench_b = NULL;
    t->bench.done = true;
    if (t->bench.cancelled)
        tui_set_status(t, OX_SLOT_UI_WARNING, "benchmark cancelled");
    else if (t->bench.ok)
        tui_set_status(t, OX_SLOT_UI_OK, "benchmark done: p50 %.3f ms", t->bench.p50);
    else
        tui_set_status(t, OX_SLOT_UI_ERROR, "benchmark failed: %s", t->bench.msg);
}

/* The two rows are named after the files: the model's own and the
 * optimized copy's (its save name once saved). */
static const char *base_name(const char *p)
{
    const char *s = p ? strrchr(p, '/') : NULL;
    return s ? s + 1 : p ? p : "model";
}

static const char *label_b(const tui *t)
{
    return t->saved_name[0] && t->saved_model == t->cur ? base_name(t->saved_name) : "optimized";
}

/* Settings: j/k pick one, h/l change it by one, g sets its least value. */
int tui_bench_key(tui *t, tui_action a)
{
    int *v[3] = {&t->bench_iters, &t->bench_warmup, &t->bench_threads};
    static const int lo[3] = {1, 0, 0}, hi[3] = {100000, 1000, 256};
    int k = t->bench_sel;
    /* The worker reads the settings as it starts: frozen while it runs. */
    if (t->bench_running && (a == TUI_A_LEFT || a == TUI_A_RIGHT || a == TUI_A_HOME))
        return TUI_HANDLED;
    switch (a) {
    case TUI_A_UP: t->bench_sel = (k + 2) % 3; return TUI_REDRAW;
    case TUI_A_DOWN: t->bench_sel = (k + 1) % 3; return TUI_REDRAW;
    case TUI_A_LEFT: *v[k] -= 1; break;
    case TUI_A_RIGHT: *v[k] += 1; break;
    case TUI_A_HOME: *v[k] = lo[k]; break;
    default: return TUI_UNHANDLED;
    }
    if (*v[k] < lo[k])
        *v[k] = lo[k];
    if (*v[k] > hi[k])
        *v[k] = hi[k];
    return TUI_REDRAW;
}

static void draw_settings(tui *t, int y, int w)
{
    char th[32];
    if (t->bench_threads)
        snprintf(th, sizeof th, "%d", t->bench_threads);
    else
        snprintf(th, sizeof th, "auto");
    const char *name[3] = {"runs", "warm-up", "threads"};
    char val[3][32];
    snprintf(val[0], sizeof val[0], "%d", t->bench_iters);
    snprintf(val[1], sizeof val[1], "%d", t->bench_warmup);
    snprintf(val[2], sizeof val[2], "%s", th);
    int x = 2;
    for (int i = 0; i < 3 && x < w - 2; i++) {
        char cell[48];
        snprintf(cell, sizeof cell, " %s %s ", name[i], val[i]);
        x += tui_put(y, x, w - 2 - x, i == t->bench_sel ? OX_SLOT_UI_SELECTED : OX_SLOT_UI_NORMAL,
                     t, cell) + 1;
    }
    if (x < w - 2)
        tui_put(y, x + 1, w - 3 - x, OX_SLOT_UI_DIM, t, "j/k pick, h/l -/+1, g least");
}

void tui_bench_draw(tui *t, int y0, int h, int w)
{
    if (tui_matrix_draw(t, y0, h, w))
        return;
    int end = y0 + h;
    int y = y0 + 1;
    tui_put(y++, 2, w - 4, OX_SLOT_UI_HEADER, t,
            t->bench_inputs.n_src
                ? "Benchmark on the CPU (b starts, Esc cancels); --input/--fill, rest random"
                : "Benchmark on the CPU (b starts, Esc cancels); random inputs, seed 1");
    draw_settings(t, y++, w);
    y++;
    if (t->bench_running) {
        tui_put(y++, 2, w - 4, OX_SLOT_UI_NORMAL, t,
                t->bench_b ? "running original, then optimized ..." : "running ...");
        tui_progress(t, y++, 2, w - 4 < 60 ? w - 4 : 60,
                     atomic_load(&t->bench_progress) / 1000.0);
        return;
    }
    const tui_bench_result *r = &t->bench;
    if (!r->done) {
        tui_put(y++, 2, w - 4, OX_SLOT_UI_DIM, t, "no result yet: press b");
        return;
    }
    if (!r->ok) {
        tui_put(y++, 2, w - 4, r->cancelled ? OX_SLOT_UI_WARNING : OX_SLOT_UI_ERROR, t,
                r->cancelled ? "cancelled" : r->msg);
        return;
    }
    tui_putf(y++, 2, w - 4, OX_SLOT_UI_NORMAL, t, "%-22s %9s %9s %9s %9s %10s", "",
             "p50 ms", "p90 ms", "p99 ms", "mean ms", "runs/s");
    tui_putf(y++, 2, w - 4, OX_SLOT_UI_NORMAL, t, "%-22.22s %9.3f %9.3f %9.3f %9.3f %10.1f",
             base_name(t->path), r->p50, r->p90, r->p99, r->mean,
             r->mean > 0 ? 1000.0 / r->mean : 0);
    if (r->compared) {
        tui_putf(y++, 2, w - 4, OX_SLOT_UI_NORMAL, t,
                 "%-22.22s %9.3f %9.3f %9.3f %9.3f %10.1f", label_b(t), r->p50_b, r->p90_b,
                 r->p99_b, r->mean_b, r->mean_b > 0 ? 1000.0 / r->mean_b : 0);
        tui_putf(y++, 2, w - 4, r->check_ok ? OX_SLOT_UI_OK : OX_SLOT_UI_ERROR, t,
                 "speedup x%.2f (p50)   equivalence: max abs error %.3g %s", r->speedup,
                 r->max_abs_err, r->check_ok ? "(ok)" : "(MISMATCH)");
    } else {
        tui_put(y++, 2, w - 4, OX_SLOT_UI_DIM, t,
                "speedup: n/a (no optimized model; apply passes in panel 8)");
    }
    tui_putf(y++, 2, w - 4, OX_SLOT_UI_DIM, t,
             "%d timed runs after %d warm-up, min %.3f ms, max %.3f ms, threads %d", r->iters,
             r->warmup, r->min, r->max, r->threads);
    if (r->profile_runs <= 0 || y + 2 > end)
        return;
    /* The library's per-operator profile (as `onnxscope bench` prints it). */
    y++;
    tui_putf(y++, 2, w - 4, OX_SLOT_UI_HEADER, t,
             "operator types of %s (fastest of %d profiled runs; run %.3f ms)",
             r->compared ? label_b(t) : base_name(t->path), r->profile_runs, r->profile_ms);
    tui_putf(y++, 2, w - 4, OX_SLOT_UI_HEADER, t, "%-28s %6s %10s %6s", "op", "nodes", "ms",
             "share");
    for (int i = 0; i < r->n_ops && y < end; i++) {
        if (y == end - 1 && i < r->n_ops_all - 1) {
            tui_putf(y++, 2, w - 4, OX_SLOT_UI_DIM, t, "(+%d more operator types)",
                     r->n_ops_all - i);
            break;
        }
        tui_putf(y++, 2, w - 4, OX_SLOT_UI_NORMAL, t, "%-28.28s %6d %10.3f %5.1f%%",
                 r->ops[i].op, r->ops[i].nodes, r->ops[i].ms,
                 r->profile_ms > 0 ? 100 * r->ops[i].ms / r->profile_ms : 0.0);
    }
}
