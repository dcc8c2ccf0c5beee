/* The Bench panel's Matrix view (issue 16): `m` runs the evaluation matrix
 * (matrix.h: the default strategies at 1 and 2 threads) on a copy of the
 * original model as a worker-thread job (tui_job.h: progress on the status
 * line, Esc stops it after the run in progress and keeps the rows so far),
 * then the Bench panel shows its table, recommendation and notes until `b`
 * starts a plain benchmark again. Self-contained: the panel calls
 * tui_matrix_draw first and tui_bench_start calls tui_matrix_hide. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnxscope/matrix.h"
#include "tui/tui_internal.h"
#include "tui/tui_job.h"

#define MATRIX_ROW_BUDGET_S 1.0   /* per row: keeps the sweep short on big models */

struct tui_matrix {
    bool shown;               /* the Bench panel shows the matrix */
    bool have;                /* a result (possibly partial) is there */
    ox_matrix_config cfg;     /* strategies (labels), lists; model NULL */
    ox_matrix mx;
    char msg[256];            /* error of a failed run */
};

typedef struct matrix_job {
    ox_model *m;              /* the worker's copy */
    ox_matrix_config cfg;
    ox_matrix mx;
    ox_status st;
    ox_error err;
    tui_job *j;
} matrix_job;

static void on_progress(void *user, int row, int total, const char *what)
{
    matrix_job *mj = user;
    tui_job_progress(mj->j, total > 0 ? (double)row / total : 0);
    tui_job_note(mj->j, "[%d/%d] %s (Esc stops, keeps the rows so far)", row + 1, total, what);
}

static void job_run(tui_job *j)
{
    matrix_job *mj = j->ctx;
    mj->j = j;
    mj->cfg.model = mj->m;
    mj->cfg.cancel = &j->cancel;
    mj->cfg.progress = on_progress;
    mj->cfg.user = mj;
    mj->st = ox_matrix_run(&mj->cfg, &mj->mx, &mj->err);
}

static void job_discard(tui_job *j)
{
    matrix_job *mj = j->ctx;
    ox_matrix_free(&mj->mx);
    ox_matrix_config_free(&mj->cfg);
    ox_model_free(mj->m);
    mj->m = NULL;
}

static struct tui_matrix *state(tui *t)
{
    if (!t->matrix)
        t->matrix = calloc(1, sizeof *t->matrix);
    return t->matrix;
}

static void job_done(tui *t, tui_job *j)
{
    matrix_job *mj = j->ctx;
    struct tui_matrix *s = state(t);
    if (!s) {
        job_discard(j);
        return;
    }
    ox_matrix_free(&s->mx);
    ox_matrix_config_free(&s->cfg);
    s->msg[0] = 0;
    s->have = mj->st == OX_OK || mj->st == OX_ECANCELLED;
    if (s->have) {
        /* The result moves into the panel's state. */
        s->cfg = mj->cfg;
        s->cfg.model = NULL;
        s->cfg.cancel = NULL;
        s->mx = mj->mx;
        memset(&mj->cfg, 0, sizeof mj->cfg);
        memset(&mj->mx, 0, sizeof mj->mx);
        if (mj->st == OX_ECANCELLED)
            tui_set_status(t, OX_SLOT_UI_WARNING, "matrix interrupted: partial table");
        else
            tui_set_status(t, OX_SLOT_UI_OK, "matrix done: %d rows", s->mx.n_rows);
    } else {
        snprintf(s->msg, sizeof s->msg, "%.250s", mj->err.msg[0] ? mj->err.msg
                                                                  : ox_strerror(mj->st));
        tui_set_status(t, OX_SLOT_UI_ERROR, "matrix failed: %s", s->msg);
    }
    job_discard(j);
}

void tui_matrix_start(tui *t)
{
    struct tui_matrix *s = state(t);
    if (!s) {
        tui_set_status(t, OX_SLOT_UI_ERROR, "out of memory");
        return;
    }
    if (t->job || t->bench_running) {
        tui_set_status(t, OX_SLOT_UI_WARNING, "wait for the %s to finish (Esc cancels)",
                       t->bench_running ? "benchmark" : "running job");
        return;
    }
    s->shown = true;
    tui_job *j = calloc(1, sizeof *j);
    matrix_job *mj = calloc(1, sizeof *mj);
    if (!j || !mj) {
        free(j);
        free(mj);
        tui_set_status(t, OX_SLOT_UI_ERROR, "out of memory");
        return;
    }
    j->ctx = mj;
    ox_matrix_config_init(&mj->cfg);
    ox_error err = {0};
    /* The original as loaded, with the shapes set in panel 5 (its clone
     * carries the overridden input types, as the Bench panel's does). */
    mj->m = ox_model_clone(t->orig);
    if (!mj->m || ox_matrix_parse_strategies(ox_matrix_default_strategies, &mj->cfg, &err)) {
        job_discard(j);
        free(mj);
        free(j);
        tui_set_status(t, OX_SLOT_UI_ERROR, "matrix: %s", err.msg[0] ? err.msg : "out of memory");
        return;
    }
    mj->cfg.threads[0] = 1;
    mj->cfg.threads[1] = 2;
    mj->cfg.n_threads = 2;
    mj->cfg.iters = t->bench_iters > 0 ? t->bench_iters : 20;
    mj->cfg.warmup = t->bench_warmup;
    mj->cfg.time_budget_s = MATRIX_ROW_BUDGET_S;
    mj->cfg.inputs = &t->bench_inputs;   /* read-only while the job runs */
    snprintf(j->what, sizeof j->what, "evaluation matrix");
    j->interruptible = true;
    j->model = false;   /* works on its own copy */
    j->run = job_run;
    j->done = job_done;
    j->discard = job_discard;
    t->status[0] = 0;
    tui_job_start(t, j);
}

void tui_matrix_hide(tui *t)
{
    if (t->matrix)
        t->matrix->shown = false;
}

void tui_matrix_free(tui *t)
{
    if (!t->matrix)
        return;
    ox_matrix_free(&t->matrix->mx);
    ox_matrix_config_free(&t->matrix->cfg);
    free(t->matrix);
    t->matrix = NULL;
}

static void fmt(double v, bool known, const char *f, char *buf, size_t n)
{
    if (!known || isnan(v))
        snprintf(buf, n, "?");
    else if (isinf(v))
        snprintf(buf, n, "inf");
    else
        snprintf(buf, n, f, v);
}

/* Draws the Matrix view in the Bench panel; false when it is not shown
 * (the panel draws the benchmark). */
bool tui_matrix_draw(tui *t, int y0, int h, int w)
{
    struct tui_matrix *s = t->matrix;
    if (!s || !s->shown)
        return false;
    int y = y0 + 1, end = y0 + h;
    tui_put(y++, 2, w - 4, OX_SLOT_UI_HEADER, t,
            "Evaluation matrix: strategies x threads 1,2 on the CPU (m runs, b benchmark, "
            "Esc stops)");
    y++;
    if (t->job && strcmp(t->job->what, "evaluation matrix") == 0) {
        char st[300];
        double p = tui_job_status(t, st, sizeof st);
        tui_put(y++, 2, w - 4, OX_SLOT_UI_NORMAL, t, st);
        tui_progress(t, y++, 2, w - 4 < 60 ? w - 4 : 60, p < 0 ? 0 : p);
        return true;
    }
    if (!s->have) {
        tui_put(y++, 2, w - 4, s->msg[0] ? OX_SLOT_UI_ERROR : OX_SLOT_UI_DIM, t,
                s->msg[0] ? s->msg : "no matrix yet: press m");
        return true;
    }
    const ox_matrix *mx = &s->mx;
    tui_putf(y++, 2, w - 4, OX_SLOT_UI_HEADER, t, "%-12s %3s %9s %9s %10s %9s %9s %6s %7s  %s",
             "strategy", "thr", "p50 ms", "p90 ms", "samples/s", "max err", "cosine", "util",
             "speedup", "status");
    for (int i = 0; i < mx->n_rows && y < end - 2; i++) {
        const ox_matrix_row *r = &mx->rows[i];
        const char *label = s->cfg.strategies[r->strategy].label;
        if (r->status != OX_MATRIX_OK) {
            tui_putf(y++, 2, w - 4, OX_SLOT_UI_DIM, t, "%-12.12s %3d  %s: %s", label,
                     r->threads, ox_matrix_status_name(r->status), r->reason);
            continue;
        }
        char p50[24], p90[24], sps[24], err[24], cos[24], util[24], sp[24];
        bool acc = r->acc_known;
        fmt(r->p50, true, "%.3f", p50, sizeof p50);
        fmt(r->p90, true, "%.3f", p90, sizeof p90);
        fmt(r->samples_per_s, true, "%.1f", sps, sizeof sps);
        fmt(r->max_abs_err, acc, "%.3g", err, sizeof err);
        fmt(r->cosine, acc, "%.6f", cos, sizeof cos);
        fmt(100 * r->utilization, r->utilization >= 0, "%.1f%%", util, sizeof util);
        fmt(r->speedup, r->speedup > 0, "x%.2f", sp, sizeof sp);
        tui_putf(y++, 2, w - 4, i == mx->recommended ? OX_SLOT_UI_OK : OX_SLOT_UI_NORMAL, t,
                 "%-12.12s %3d %9s %9s %10s %9s %9.9s %6s %7s  %s", label, r->threads, p50, p90,
                 sps, err, cos, util, sp, i == mx->recommended ? "ok (recommended)" : "ok");
    }
    if (y < end)
        tui_put(y++, 2, w - 4, mx->recommended >= 0 ? OX_SLOT_UI_OK : OX_SLOT_UI_WARNING, t,
                mx->recommendation);
    for (int i = 0; i < mx->n_notes && y < end; i++)
        tui_putf(y++, 2, w - 4, OX_SLOT_UI_DIM, t, "note: %s", mx->notes[i]);
    return true;
}
