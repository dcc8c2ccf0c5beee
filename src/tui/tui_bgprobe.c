/* Idle probing of a large model in a worker thread. On a model above the
 * stepper's probe limit (20,000 nodes) one try of a pass takes 0.1-0.2 s,
 * too long for the idle turn of the event loop, so while the viewer is idle
 * a thread tries the enabled passes not yet known, one after the other, on
 * a private copy of the shown model with a pass manager of its own, and the
 * event loop takes the answers ("no match" in the Passes panel, skipped by
 * `s`) when it ends. It never blocks a key: a key that changes the model
 * tells it to stop after its current try, and its answers are dropped if
 * the model changed meanwhile; a model it is still copying is freed only
 * once the copy is made (tui_free_model_async waits for that). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tui/tui_internal.h"

struct tui_bgprobe {
    pthread_t th;
    atomic_int cancel, finished, cloned;
    ox_pass_manager *pm;       /* own manager: the same passes, enabled alike */
    ox_infer_opts io;          /* own copy of the shape overrides */
    const ox_model *src;       /* the shown model, read until cloned */
    ox_model *copy;            /* src as it was: kept for the next step when nothing changed */
    unsigned version;          /* the stepper's version at the start */
    int n;
    int *order, n_order;       /* the passes to try, from the stepper's position */
    signed char *result;       /* per pass: -1 not tried, 0 no match, 1 match */
    atomic_llong *last_key;    /* the event loop's last key (monotonic ms) */
};

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Idle means idle: while keys come (the last one under KEY_QUIET_MS ago)
 * the probe waits before its next try, so that on a loaded machine it does
 * not take the CPU from the keys' redraws. */
#define KEY_QUIET_MS 300

static void wait_quiet(tui_bgprobe *b)
{
    while (!atomic_load(&b->cancel) && now_ms() - atomic_load(b->last_key) < KEY_QUIET_MS) {
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

static void bgp_free(tui_bgprobe *b)
{
    ox_model_free(b->copy);
    ox_pm_free(b->pm);
    ox_infer_opts_free(&b->io);
    free(b->order);
    free(b->result);
    free(b);
}

/* The model a probe is copying: nobody may free it until the copy is made
 * (tui_bgprobe_wait_unread). One viewer per process, so one global. */
static _Atomic(const ox_model *) g_reading;

void tui_bgprobe_wait_unread(const ox_model *m)
{
    while (m && atomic_load(&g_reading) == m) {
        struct timespec ts = {0, 2 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

static void *bgp_main(void *arg)
{
    tui_bgprobe *b = arg;
    b->copy = ox_model_clone(b->src);
    atomic_store(&g_reading, NULL);
    atomic_store(&b->cloned, 1);
    ox_model *work = NULL;
    for (int k = 0; b->copy && k < b->n_order && !atomic_load(&b->cancel); k++) {
        int i = b->order[k];
        wait_quiet(b);
        if (atomic_load(&b->cancel))
            break;
        if (!work && !(work = ox_model_clone(b->copy)))
            break;
        ox_error err = {0};
        ox_status st = ox_pm_step(b->pm, work, i, 1, NULL, &err);
        /* A failing pass counts as a match: stepping onto it shows the error. */
        bool hit = st != OX_OK || ox_pm_last_rewrites(b->pm) > 0;
        b->result[i] = hit;
        if (hit) {   /* rewritten: no longer the shown model */
            ox_model_free(work);
            work = NULL;
        }
    }
    ox_model_free(work);
    /* Stopped (the model changes): the copy is of no use; free it here
     * rather than in the UI thread (0.3 s at 100k nodes). */
    if (atomic_load(&b->cancel)) {
        ox_model_free(b->copy);
        b->copy = NULL;
    }
    atomic_store(&b->finished, 1);
    return NULL;
}

/* The overrides as their arguments again: the worker must not borrow the
 * viewer's, which a shape edit frees. */
static bool copy_opts(const ox_infer_opts *from, ox_infer_opts *to)
{
    memset(to, 0, sizeof *to);
    for (int i = 0; i < from->n_shapes; i++) {
        char a[600];
        ox_shape_override_format(&from->shapes[i], a, sizeof a);
        if (ox_infer_opts_add_shape(to, a, NULL) != OX_OK)
            return false;
    }
    for (int i = 0; i < from->n_dims; i++) {
        char a[300];
        snprintf(a, sizeof a, "%s=%lld", from->dims[i].symbol, (long long)from->dims[i].value);
        if (ox_infer_opts_add_dim(to, a, NULL) != OX_OK)
            return false;
    }
    return true;
}

static bool wanted(const tui *t)
{
    const tui_stepper *s = &t->st;
    if (!t->pm || t->bgp || t->job || t->bench.running || tui_job_busy(t, true) ||
        s->cur_nodes <= s->probe_max_nodes || t->bgp_tried == s->version + 1)
        return false;
    int n = ox_pm_count(t->pm) < s->n_passes ? ox_pm_count(t->pm) : s->n_passes;
    for (int i = 0; i < n; i++)
        if (ox_pm_enabled(t->pm, i) && tui_stepper_match(s, i) < 0)
            return true;
    return false;
}

static void start(tui *t)
{
    tui_stepper *s = &t->st;
    t->bgp_tried = s->version + 1;   /* one probe per version of the model */
    tui_bgprobe *b = calloc(1, sizeof *b);
    if (!b)
        return;
    b->pm = ox_pm_new(t->level, OX_TARGET_ONNX);
    b->n = ox_pm_count(t->pm) < s->n_passes ? ox_pm_count(t->pm) : s->n_passes;
    b->order = calloc((size_t)b->n + 1, sizeof *b->order);
    b->result = malloc((size_t)b->n + 1);
    bool ok = b->pm && b->order && b->result && ox_pm_count(b->pm) == ox_pm_count(t->pm) &&
              copy_opts(&t->iopts, &b->io);
    /* The same registry order, so that pass indexes agree. */
    for (int i = 0; ok && i < ox_pm_count(t->pm); i++)
        ok = ox_pm_pass(b->pm, i) == ox_pm_pass(t->pm, i);
    if (!ok) {
        bgp_free(b);
        return;
    }
    ox_pm_set_infer_opts(b->pm, &b->io);
    for (int i = 0; i < ox_pm_count(t->pm); i++)
        ox_pm_enable(b->pm, i, ox_pm_enabled(t->pm, i));
    for (int k = 0; k < b->n; k++) {
        int i = (s->cur_pass + k) % b->n;
        b->result[i] = -1;
        if (ox_pm_enabled(t->pm, i) && tui_stepper_match(s, i) < 0)
            b->order[b->n_order++] = i;
    }
    b->src = t->cur;
    b->version = s->version;
    b->last_key = &t->last_key_ms;
    atomic_store(&g_reading, b->src);
    if (pthread_create(&b->th, NULL, bgp_main, b) != 0) {
        atomic_store(&g_reading, NULL);
        bgp_free(b);
        return;
    }
    t->bgp = b;
}

/* Takes a finished probe's answers; true when the Passes panel changed. */
static bool collect(tui *t)
{
    tui_bgprobe *b = t->bgp;
    pthread_join(b->th, NULL);
    t->bgp = NULL;
    tui_stepper *s = &t->st;
    bool learnt = false;
    if (s->version == b->version && t->cur == b->src) {
        for (int i = 0; i < b->n && i < s->n_passes; i++)
            if (b->result[i] >= 0) {
                s->known[i] = s->version + 1;
                s->matches[i] = b->result[i] > 0;
                learnt = true;
            }
        /* The copy is the shown model untouched: the next step starts on it. */
        if (!s->probe && b->copy) {
            s->probe = b->copy;
            s->probe_version = s->version;
            b->copy = NULL;
        }
    }
    tui_free_model_async(b->copy);
    b->copy = NULL;
    bgp_free(b);
    /* Learnt something: passes still unknown (stopped early, or enabled
     * since) may be probed on the next idle turn; learnt nothing (no copy,
     * stale): not again for this version. */
    if (learnt)
        t->bgp_tried = 0;
    return learnt;
}

bool tui_bgprobe_tick(tui *t)
{
    bool redraw = false;
    if (t->bgp && t->st.version != t->bgp->version)
        atomic_store(&t->bgp->cancel, 1);   /* its answers are stale */
    if (t->bgp && atomic_load(&t->bgp->finished))
        redraw = collect(t) && t->cur_panel == TUI_P_PASSES;
    if (wanted(t))
        start(t);
    return redraw;
}

bool tui_bgprobe_running(const tui *t)
{
    return t->bgp != NULL;
}

void tui_bgprobe_settle(tui *t)
{
    /* Stop after the current try. The key goes on at once: what it does to
     * the shown model while the worker may still be copying it is to
     * replace it (other copies read it too, which is safe) or to free it,
     * and frees of models go through tui_free_model_async, which waits for
     * the copy to be made (tui_bgprobe_wait_unread). */
    if (t->bgp)
        atomic_store(&t->bgp->cancel, 1);
}

void tui_bgprobe_key(tui *t)
{
    atomic_store(&t->last_key_ms, now_ms());
}

void tui_bgprobe_quit(tui *t)
{
    if (!t->bgp)
        return;
    atomic_store(&t->bgp->cancel, 1);
    pthread_join(t->bgp->th, NULL);
    bgp_free(t->bgp);
    t->bgp = NULL;
}
