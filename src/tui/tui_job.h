/* Long actions of the TUI in a worker thread (export, apply-all, a step
 * search on a large model, re-inference after a shape change): the event
 * loop keeps answering keys (panel switches, scrolling) while the worker
 * runs, the status line shows what runs with its progress, and Esc stops
 * it. One job at a time.
 *
 * Ownership: a job works only on what it was given (copies of the models,
 * the pass manager); while a job that uses the manager or the models runs
 * (and until an abandoned one ends) the keys that edit the model are
 * refused with a "busy" status instead of touching them. */
#ifndef ONNXSCOPE_TUI_JOB_H
#define ONNXSCOPE_TUI_JOB_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

typedef struct tui tui;
typedef struct tui_job tui_job;

struct tui_job {
    char what[160];           /* "exporting graph to big.svg" */
    bool interruptible;       /* Esc asks run to stop (cancel); else Esc abandons it */
    bool model;               /* uses the pass manager or the shown models */
    void *ctx;
    void (*run)(tui_job *j);              /* worker thread */
    void (*done)(tui *t, tui_job *j);     /* UI thread, after run returned */
    void (*discard)(tui_job *j);          /* frees ctx's results: abandoned (either thread) */
    /* worker -> UI */
    atomic_int progress;      /* 0..1000, -1 unknown */
    atomic_int cancel;        /* set by Esc (interruptible jobs poll it) */
    atomic_int state;         /* 0 running, 1 finished, 2 abandoned */
    pthread_mutex_t mu;
    char note[160];           /* what the worker does now ("trying fuse_casts") */
    pthread_t th;
    atomic_int *bg;           /* abandoned model jobs still running (tui's counter) */
};

/* Starts j (heap-allocated, owned by the job machinery from here). On
 * failure j is discarded and false returned. */
bool tui_job_start(tui *t, tui_job *j);
/* Event loop: a finished job's done() runs here, then typed-ahead keys
 * are flushed. True when the screen should be redrawn. */
bool tui_job_poll(tui *t);
/* Esc: an interruptible job is asked to stop; another is abandoned (the UI
 * goes on at once; its result is discarded when it ends). */
void tui_job_escape(tui *t);
/* Whether an action must wait: any job runs (model = false), or a job
 * that uses the models runs or is still ending in the background. */
bool tui_job_busy(const tui *t, bool model);
/* Worker side. */
void tui_job_note(tui_job *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tui_job_progress(tui_job *j, double frac);
bool tui_job_cancelled(tui_job *j);
/* "exporting graph to x.svg: trying ... (Esc cancels)" and the progress
 * (-1 unknown) for the status line. */
double tui_job_status(tui *t, char *buf, size_t len);
/* At exit: a running job is abandoned (the process ends its thread). */
void tui_job_quit(tui *t);

#endif
