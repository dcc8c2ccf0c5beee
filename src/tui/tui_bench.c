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
    ox_bench_result_free(&br);
    atomic_store(&t->bench_progress, 1000);
    atomic_store(&t->bench_finished, 1);
    return NULL;
}

void tui_bench_start(tui *t)
{
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

void tui_bench_draw(tui *t, int y0, int h, int w)
{
    (void)h;
    int y = y0 + 1;
    tui_put(y++, 2, w - 4, OX_SLOT_UI_HEADER, t,
            t->bench_inputs.n_src
                ? "Benchmark on the CPU (b starts, Esc cancels); --input/--fill, rest random"
                : "Benchmark on the CPU (b starts, Esc cancels); random inputs, seed 1");
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
    tui_putf(y++, 2, w - 4, OX_SLOT_UI_NORMAL, t, "%-14s %10s %10s %10s %10s %12s", "",
             "p50 ms", "p90 ms", "p99 ms", "mean ms", "runs/s");
    tui_putf(y++, 2, w - 4, OX_SLOT_UI_NORMAL, t, "%-14s %10.3f %10.3f %10.3f %10.3f %12.1f",
             "original", r->p50, r->p90, r->p99, r->mean, r->mean > 0 ? 1000.0 / r->mean : 0);
    if (r->compared) {
        tui_putf(y++, 2, w - 4, OX_SLOT_UI_NORMAL, t,
                 "%-14s %10.3f %10.3f %10.3f %10.3f %12.1f", "optimized", r->p50_b, r->p90_b,
                 r->p99_b, r->mean_b, r->mean_b > 0 ? 1000.0 / r->mean_b : 0);
        y++;
        tui_putf(y++, 2, w - 4, r->check_ok ? OX_SLOT_UI_OK : OX_SLOT_UI_ERROR, t,
                 "speedup x%.2f (p50)   equivalence: max abs error %.3g %s", r->speedup,
                 r->max_abs_err, r->check_ok ? "(ok)" : "(MISMATCH)");
    } else {
        y++;
        tui_put(y++, 2, w - 4, OX_SLOT_UI_DIM, t,
                "speedup: n/a (no optimized model; apply passes in panel 8)");
    }
    tui_putf(y++, 2, w - 4, OX_SLOT_UI_DIM, t, "%d timed runs, min %.3f ms, max %.3f ms, threads %d%s",
             r->iters, r->min, r->max, r->threads, r->threads ? "" : " (one per core)");
}
