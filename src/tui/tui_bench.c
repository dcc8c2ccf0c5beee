/* The Bench panel: runs the original model (and the optimized one when it
 * differs) in a worker thread on seeded random inputs, with progress and
 * cancellation, then shows p50/p90/p99, throughput, the speedup and the
 * largest output difference between the two models (equivalence check). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "onnxscope/exec.h"
#include "onnxscope/randinput.h"
#include "tui/tui_internal.h"

#define BENCH_TIME_BUDGET_S 2.0   /* per model: keeps a run short on big models */

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(const double *v, int n, double p)
{
    if (n <= 0)
        return 0;
    int i = (int)ceil(p / 100.0 * n) - 1;
    if (i < 0)
        i = 0;
    if (i >= n)
        i = n - 1;
    return v[i];
}

typedef struct bench_job {
    tui *t;
    ox_rval **in;
    int n_in;
    ox_rval **out_a;   /* outputs of model a's first run, for the comparison */
} bench_job;

/* Runs m iters times; lat gets each latency; progress covers [p0, p1). */
static int run_model(tui *t, ox_model *m, ox_rval **in, int n_in, ox_rval **keep_out,
                     double *lat, int iters, int p0, int p1, char *msg, size_t ml)
{
    ox_exec *e = NULL;
    ox_error err = {0};
    ox_exec_opts eo = {.threads = 0};
    if (ox_exec_new(m, &eo, &e, &err) != OX_OK) {
        snprintf(msg, ml, "cannot prepare: %.200s", err.msg);
        return -1;
    }
    int no = m->graph->n_outputs;
    ox_rval **out = calloc((size_t)no + 1, sizeof *out);
    if (!out) {
        ox_exec_free(e);
        snprintf(msg, ml, "out of memory");
        return -1;
    }
    int done = 0;
    double start = now_ms();
    /* One warm-up run, whose outputs serve the equivalence check. */
    for (int it = -1; it < iters; it++) {
        if (atomic_load(&t->bench_cancel))
            break;
        double t0 = now_ms();
        if (ox_exec_run(e, n_in, in, no, out, &err) != OX_OK) {
            snprintf(msg, ml, "run failed: %.200s", err.msg);
            done = -1;
            break;
        }
        double t1 = now_ms();
        for (int k = 0; k < no; k++) {
            if (it == -1 && keep_out)
                keep_out[k] = out[k];
            else
                ox_rval_free(out[k]);
            out[k] = NULL;
        }
        if (it >= 0)
            lat[done++] = t1 - t0;
        double frac_it = (double)(it + 2) / (iters + 1);
        double frac_time = (t1 - start) / (BENCH_TIME_BUDGET_S * 1e3);
        double f = frac_it > frac_time ? frac_it : frac_time;
        if (f > 1)
            f = 1;
        atomic_store(&t->bench_progress, p0 + (int)(f * (p1 - p0)));
        if (it >= 2 && t1 - start > BENCH_TIME_BUDGET_S * 1e3)
            break;
    }
    free(out);
    ox_exec_free(e);
    return done;
}

static double max_abs_diff(const ox_rval *a, const ox_rval *b)
{
    if (!a || !b || a->kind != OX_RV_TENSOR || b->kind != OX_RV_TENSOR || !a->t || !b->t)
        return a == b ? 0 : INFINITY;
    const ox_tensor *x = a->t, *y = b->t;
    if (x->numel != y->numel || x->dtype != y->dtype)
        return INFINITY;
    if (x->dtype == OX_DT_STRING)
        return 0;
    double m = 0;
    for (int64_t i = 0; i < x->numel; i++) {
        double d = fabs(ox_tensor_get_f64(x, i) - ox_tensor_get_f64(y, i));
        if (d > m || isnan(d))
            m = isnan(d) ? INFINITY : d;
    }
    return m;
}

static void *bench_main(void *arg)
{
    bench_job *job = arg;
    tui *t = job->t;
    tui_bench_result *r = &t->bench;
    int iters = t->bench_iters;
    double *la = calloc((size_t)iters + 1, sizeof *la);
    double *lb = calloc((size_t)iters + 1, sizeof *lb);
    int no = t->bench_a->graph->n_outputs;
    ox_rval **oa = calloc((size_t)no + 1, sizeof *oa);
    ox_rval **ob = calloc((size_t)no + 1, sizeof *ob);
    r->ok = false;
    if (!la || !lb || !oa || !ob) {
        snprintf(r->msg, sizeof r->msg, "out of memory");
        goto out;
    }
    int split = t->bench_b ? 500 : 1000;
    int na = run_model(t, t->bench_a, job->in, job->n_in, oa, la, iters, 0, split, r->msg,
                       sizeof r->msg);
    if (na <= 0)
        goto out;
    qsort(la, (size_t)na, sizeof *la, cmp_d);
    double sum = 0;
    for (int i = 0; i < na; i++)
        sum += la[i];
    r->iters = na;
    r->p50 = pct(la, na, 50);
    r->p90 = pct(la, na, 90);
    r->p99 = pct(la, na, 99);
    r->min = la[0];
    r->max = la[na - 1];
    r->mean = sum / na;
    if (t->bench_b && t->bench_b->graph->n_outputs == no) {
        int nb = run_model(t, t->bench_b, job->in, job->n_in, ob, lb, iters, 500, 1000, r->msg,
                           sizeof r->msg);
        if (nb <= 0)
            goto out;
        qsort(lb, (size_t)nb, sizeof *lb, cmp_d);
        sum = 0;
        for (int i = 0; i < nb; i++)
            sum += lb[i];
        r->p50_b = pct(lb, nb, 50);
        r->p90_b = pct(lb, nb, 90);
        r->p99_b = pct(lb, nb, 99);
        r->mean_b = sum / nb;
        r->compared = true;
        r->max_abs_err = 0;
        for (int k = 0; k < no; k++) {
            double d = max_abs_diff(oa[k], ob[k]);
            if (d > r->max_abs_err)
                r->max_abs_err = d;
        }
    }
    r->ok = !atomic_load(&t->bench_cancel);
out:
    r->cancelled = atomic_load(&t->bench_cancel) != 0;
    for (int k = 0; oa && k < no; k++)
        ox_rval_free(oa[k]);
    for (int k = 0; ob && k < no; k++)
        ox_rval_free(ob[k]);
    free(oa);
    free(ob);
    free(la);
    free(lb);
    for (int i = 0; i < job->n_in; i++)
        ox_rval_free(job->in[i]);
    free(job->in);
    free(job);
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
    ox_error err = {0};
    int ni = t->orig->graph->n_inputs;
    bench_job *job = calloc(1, sizeof *job);
    ox_rval **in = calloc((size_t)ni + 1, sizeof *in);
    if (!job || !in) {
        free(job);
        free(in);
        tui_set_status(t, OX_SLOT_UI_ERROR, "out of memory");
        return;
    }
    if (ox_random_inputs(t->orig, &t->iopts, 1, 100, in, &err) != OX_OK) {
        free(job);
        free(in);
        tui_set_status(t, OX_SLOT_UI_ERROR, "bench: %s", err.msg);
        return;
    }
    /* The worker gets private copies, so browsing (and re-inference) on the
     * main thread never races with it. Copies are made and freed here. */
    t->bench_a = ox_model_clone(t->orig);
    t->bench_b = t->cur != t->orig ? ox_model_clone(t->cur) : NULL;
    if (!t->bench_a) {
        for (int i = 0; i < ni; i++)
            ox_rval_free(in[i]);
        free(in);
        free(job);
        tui_set_status(t, OX_SLOT_UI_ERROR, "out of memory");
        return;
    }
    job->t = t;
    job->in = in;
    job->n_in = ni;
    memset(&t->bench, 0, sizeof t->bench);
    atomic_store(&t->bench_cancel, 0);
    atomic_store(&t->bench_progress, 0);
    atomic_store(&t->bench_finished, 0);
    if (t->bench_iters <= 0)
        t->bench_iters = 50;
    if (pthread_create(&t->bench_thread, NULL, bench_main, job) != 0) {
        for (int i = 0; i < ni; i++)
            ox_rval_free(in[i]);
        free(in);
        free(job);
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
            "Benchmark on the CPU (b starts, Esc cancels); random inputs, seed 1");
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
        tui_putf(y++, 2, w - 4, OX_SLOT_UI_OK, t, "speedup x%.2f (p50)   max abs error %.3g",
                 r->p50_b > 0 ? r->p50 / r->p50_b : 0, r->max_abs_err);
    } else {
        y++;
        tui_put(y++, 2, w - 4, OX_SLOT_UI_DIM, t,
                "speedup: n/a (no optimized model; apply passes in panel 8)");
    }
    tui_putf(y++, 2, w - 4, OX_SLOT_UI_DIM, t, "%d timed runs, min %.3f ms, max %.3f ms",
             r->iters, r->min, r->max);
}
