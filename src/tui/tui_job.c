/* Worker-thread jobs of the TUI (see tui_job.h). A job's life: started by
 * a key in the UI thread, run() in its thread, then either done() in the
 * UI thread (finished) or discard() wherever it is last (abandoned by Esc:
 * the thread is detached and cleans up after itself when it ends). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tui/tui_internal.h"

enum { JOB_RUNNING = 0, JOB_FINISHED = 1, JOB_ABANDONED = 2 };

static void job_free(tui_job *j)
{
    pthread_mutex_destroy(&j->mu);
    free(j->ctx);
    free(j);
}

/* Test hook: with ONNXSCOPE_TUI_JOB_GATE=FILE a job's thread, its work
 * done, waits until FILE exists before it reports, so that a test sees the
 * job running for as long as it needs, on any machine. */
static void gate_wait(void)
{
    const char *g = getenv("ONNXSCOPE_TUI_JOB_GATE");
    if (!g || !g[0])
        return;
    while (access(g, F_OK) != 0) {
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

static void *job_main(void *arg)
{
    tui_job *j = arg;
    j->run(j);
    gate_wait();
    int expected = JOB_RUNNING;
    if (!atomic_compare_exchange_strong(&j->state, &expected, JOB_FINISHED)) {
        /* Abandoned meanwhile: nobody waits for the result. */
        if (j->discard)
            j->discard(j);
        if (j->model && j->bg)
            atomic_fetch_sub(j->bg, 1);
        job_free(j);
    }
    return NULL;
}

bool tui_job_start(tui *t, tui_job *j)
{
    pthread_mutex_init(&j->mu, NULL);
    atomic_store(&j->progress, -1);
    atomic_store(&j->cancel, 0);
    atomic_store(&j->state, JOB_RUNNING);
    j->bg = &t->job_bg;
    if (pthread_create(&j->th, NULL, job_main, j) != 0) {
        if (j->discard)
            j->discard(j);
        job_free(j);
        tui_set_status(t, OX_SLOT_UI_ERROR, "cannot start a worker thread");
        return false;
    }
    t->job = j;
    return true;
}

bool tui_job_poll(tui *t)
{
    tui_job *j = t->job;
    if (!j || atomic_load(&j->state) != JOB_FINISHED)
        return false;
    pthread_join(j->th, NULL);
    t->job = NULL;
    j->done(t, j);
    job_free(j);
    /* Keys typed while the job ran were answered then or refused: none is
     * replayed now. */
    flushinp();
    return true;
}

void tui_job_escape(tui *t)
{
    tui_job *j = t->job;
    if (!j)
        return;
    atomic_store(&j->cancel, 1);
    if (j->interruptible) {
        tui_job_note(j, "stopping after the current step ...");
        return;
    }
    char what[160];
    snprintf(what, sizeof what, "%s", j->what);
    if (j->model)
        atomic_fetch_add(&t->job_bg, 1);
    t->job = NULL;
    int expected = JOB_RUNNING;
    if (atomic_compare_exchange_strong(&j->state, &expected, JOB_ABANDONED)) {
        pthread_detach(j->th);   /* job_main frees it */
    } else {
        /* It finished just now: discard here. */
        pthread_join(j->th, NULL);
        if (j->discard)
            j->discard(j);
        if (j->model)
            atomic_fetch_sub(&t->job_bg, 1);
        job_free(j);
    }
    tui_set_status(t, OX_SLOT_UI_WARNING, "cancelled: %s (its result is discarded)", what);
}

bool tui_job_busy(const tui *t, bool model)
{
    if (t->job && (!model || t->job->model))
        return true;
    return model && atomic_load(&((tui *)t)->job_bg) > 0;
}

void tui_job_note(tui_job *j, const char *fmt, ...)
{
    pthread_mutex_lock(&j->mu);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(j->note, sizeof j->note, fmt, ap);
    va_end(ap);
    pthread_mutex_unlock(&j->mu);
}

void tui_job_progress(tui_job *j, double frac)
{
    if (frac < 0)
        frac = 0;
    if (frac > 1)
        frac = 1;
    atomic_store(&j->progress, (int)(frac * 1000));
}

bool tui_job_cancelled(tui_job *j)
{
    return atomic_load(&j->cancel) != 0;
}

double tui_job_status(tui *t, char *buf, size_t len)
{
    tui_job *j = t->job;
    if (!j) {
        buf[0] = 0;
        return -1;
    }
    pthread_mutex_lock(&j->mu);
    if (j->note[0])
        snprintf(buf, len, "%s: %s", j->what, j->note);
    else
        snprintf(buf, len, "%s ... (Esc cancels)", j->what);
    pthread_mutex_unlock(&j->mu);
    int p = atomic_load(&j->progress);
    return p < 0 ? -1 : p / 1000.0;
}

void tui_job_quit(tui *t)
{
    tui_job *j = t->job;
    if (!j)
        return;
    if (j->interruptible) {
        /* Stops between passes: wait, so that its copies are freed. */
        atomic_store(&j->cancel, 1);
        pthread_join(j->th, NULL);
        if (j->discard)
            j->discard(j);
        job_free(j);
        t->job = NULL;
        return;
    }
    tui_job_escape(t);
}
