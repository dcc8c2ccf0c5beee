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
    atomic_store(&t->bench.progress, (int)(fraction * 1000));
}

/* The worker: the benchmark library does the timing, percentiles and the
 * equivalence check; this only copies the numbers for the panel. */
static void *bench_main(void *arg)
{
    tui *t = arg;
    tui_bench_result *r = &t->bench.res;
    ox_bench_config cfg;
    ox_bench_config_init(&cfg);
    cfg.model = t->bench.a;
    cfg.compare = t->bench.b;
    cfg.iters = t->bench.iters;
    cfg.warmup = t->bench.warmup;
    cfg.threads = t->bench.threads;
    cfg.device = (ox_device)t->bench.device;
    /* The per-operator profile as `onnxscope bench` takes it. */
    cfg.profile_runs = cfg.iters < 10 ? cfg.iters : 10;
    cfg.time_budget_s = BENCH_TIME_BUDGET_S;
    cfg.shapes = NULL;   /* the clones already carry the overridden input types */
    cfg.inputs = &t->bench_inputs;   /* --input/--fill/--int-max/--default-dim */
    cfg.progress = on_progress;
    cfg.user = t;
    cfg.cancel = &t->bench.cancel;
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
    {
        const ox_bench_stats *gs = br.compared ? &br.b : &br.a;
        int64_t fl = gs->flops_on[0] + gs->flops_on[1];
        r->on_gpu = cfg.device == OX_DEVICE_CUDA;
        r->gpu_nodes = gs->nodes_on[1];
        r->cpu_nodes = gs->nodes_on[0];
        r->gpu_flops_share = fl > 0 ? (double)gs->flops_on[1] / (double)fl : -1;
    }
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
    atomic_store(&t->bench.progress, 1000);
    atomic_store(&t->bench.finished, 1);
    return NULL;
}

void tui_bench_start(tui *t)
{
    tui_matrix_hide(t);
    if (t->bench.running) {
        tui_set_status(t, OX_SLOT_UI_WARNING, "a benchmark is already running (Esc cancels)");
        return;
    }
    /* The worker gets private copies, so browsing (and re-inference) on the
     * main thread never races with it. Copies are made and freed here. */
    t->bench.a = ox_model_clone(t->orig);
    t->bench.b = t->cur != t->orig ? ox_model_clone(t->cur) : NULL;
    if (!t->bench.a || (t->cur != t->orig && !t->bench.b)) {
        ox_model_free(t->bench.a);
        ox_model_free(t->bench.b);
        t->bench.a = t->bench.b = NULL;
        tui_set_status(t, OX_SLOT_UI_ERROR, "out of memory");
        return;
    }
    memset(&t->bench.res, 0, sizeof t->bench.res);
    atomic_store(&t->bench.cancel, 0);
    atomic_store(&t->bench.progress, 0);
    atomic_store(&t->bench.finished, 0);
    if (t->bench.iters <= 0)
        t->bench.iters = 50;
    if (pthread_create(&t->bench.thread, NULL, bench_main, t) != 0) {
        ox_model_free(t->bench.a);
        ox_model_free(t->bench.b);
        t->bench.a = t->bench.b = NULL;
        tui_set_status(t, OX_SLOT_UI_ERROR, "cannot start the benchmark thread");
        return;
    }
    t->bench.running = true;
    tui_set_status(t, OX_SLOT_UI_OK, "benchmark running (Esc cancels)");
}

void tui_bench_cancel(tui *t)
{
    if (t->bench.running)
        atomic_store(&t->bench.cancel, 1);
}

/* Called from the main loop: joins a finished worker. */
void tui_bench_poll(tui *t)
{
    if (!t->bench.running || !atomic_load(&t->bench.finished))
        return;
    pthread_join(t->bench.thread, NULL);
    t->bench.running = false;
    ox_model_free(t->bench.a);
    ox_model_free(t->bench.b);
    t->bench.a = t->bench.b = NULL;
    t->bench.res.done = true;
    if (t->bench.res.cancelled)
        tui_set_status(t, OX_SLOT_UI_WARNING, "benchmark cancelled");
    else if (t->bench.res.ok)
        tui_set_status(t, OX_SLOT_UI_OK, "benchmark done: p50 %.3f ms", t->bench.res.p50);
    else
        tui_set_status(t, OX_SLOT_UI_ERROR, "benchmark failed: %s", t->bench.res.msg);
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

/* Settings: j/k pick one, h/l change it by one, g sets its least value;
 * the device (the fourth) flips between cpu and cuda, cuda only when the
 * probe finds a usable GPU (else the status line says why not). */
int tui_bench_key(tui *t, tui_action a)
{
    int *v[4] = {&t->bench.iters, &t->bench.warmup, &t->bench.threads, &t->bench.device};
    static const int lo[4] = {1, 0, 0, 0}, hi[4] = {100000, 1000, 256, 1};
    int k = t->bench.sel;
    /* The worker reads the settings as it starts: frozen while it runs. */
    if (t->bench.running && (a == TUI_A_LEFT || a == TUI_A_RIGHT || a == TUI_A_HOME))
        return TUI_HANDLED;
    if (k == 3 && (a == TUI_A_LEFT || a == TUI_A_RIGHT)) {
        char why[512];
        if (t->bench.device == OX_DEVICE_CPU &&
            ox_cuda_probe(why, sizeof why) != OX_CUDA_AVAILABLE) {
            tui_set_status(t, OX_SLOT_UI_WARNING, "no GPU: %s", why);
            return TUI_REDRAW;
        }
        t->bench.device = t->bench.device == OX_DEVICE_CPU ? OX_DEVICE_CUDA : OX_DEVICE_CPU;
        return TUI_REDRAW;
    }
    switch (a) {
    case TUI_A_UP: t->bench.sel = (k + 3) % 4; return TUI_REDRAW;
    case TUI_A_DOWN: t->bench.sel = (k + 1) % 4; return TUI_REDRAW;
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
    if (t->bench.threads)
        snprintf(th, sizeof th, "%d", t->bench.threads);
    else
        snprintf(th, sizeof th, "auto");
    const char *name[4] = {"runs", "warm-up", "threads", "device"};
    char val[4][32];
    snprintf(val[0], sizeof val[0], "%d", t->bench.iters);
    snprintf(val[1], sizeof val[1], "%d", t->bench.warmup);
    snprintf(val[2], sizeof val[2], "%s", th);
    snprintf(val[3], sizeof val[3], "%s", ox_device_name((ox_device)t->bench.device));
    int x = 2;
    for (int i = 0; i < 4 && x < w - 2; i++) {
        char cell[48];
        snprintf(cell, sizeof cell, " %s %s ", name[i], val[i]);
        x += tui_put(y, x, w - 2 - x, i == t->bench.sel ? OX_SLOT_UI_SELECTED : OX_SLOT_UI_NORMAL,
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
    const char *on = t->bench.device == OX_DEVICE_CUDA ? "GPU" : "CPU";
    tui_putf(y++, 2, w - 4, OX_SLOT_UI_HEADER, t,
             t->bench_inputs.n_src
                 ? "Benchmark on the %s (b starts, Esc cancels); --input/--fill, rest random"
                 : "Benchmark on the %s (b starts, Esc cancels); random inputs, seed 1",
             on);
    draw_settings(t, y++, w);
    /* The GPU row: the device when one is usable, else why not. */
    char gpu[512];
    if (ox_cuda_probe(gpu, sizeof gpu) == OX_CUDA_AVAILABLE)
        tui_putf(y++, 2, w - 4, OX_SLOT_UI_NORMAL, t, "GPU: %s", gpu);
    else
        tui_putf(y++, 2, w - 4, OX_SLOT_UI_DIM, t, "GPU: none (%s)", gpu);
    y++;
    if (t->bench.running) {
        tui_put(y++, 2, w - 4, OX_SLOT_UI_NORMAL, t,
                t->bench.b ? "running original, then optimized ..." : "running ...");
        tui_progress(t, y++, 2, w - 4 < 60 ? w - 4 : 60,
                     atomic_load(&t->bench.progress) / 1000.0);
        return;
    }
    const tui_bench_result *r = &t->bench.res;
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
    if (r->on_gpu) {
        char share[32] = "?";
        if (r->gpu_flops_share >= 0)
            snprintf(share, sizeof share, "%.1f%%", 100 * r->gpu_flops_share);
        tui_putf(y++, 2, w - 4, OX_SLOT_UI_DIM, t,
                 "GPU ran %d of %d nodes (%s of the FLOPs), the CPU %d", r->gpu_nodes,
                 r->gpu_nodes + r->cpu_nodes, share, r->cpu_nodes);
    }
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
