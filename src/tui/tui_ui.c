/* The UI state every panel may set: the status line, the focused panel
 * and the prompt. Panels call these rather than into tui_main.c (the event
 * loop), which only reads the state back when it draws. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tui/tui_internal.h"

void tui_set_status(tui *t, int slot, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->status, sizeof t->status, fmt, ap);
    va_end(ap);
    t->status_slot = slot;
}

void tui_switch(tui *t, int panel)
{
    if (panel >= 0 && panel < TUI_P_COUNT)
        t->cur_panel = panel;
}

void tui_prompt_open(tui *t, tui_prompt_kind k, const char *initial)
{
    t->prompt = k;
    snprintf(t->pbuf, sizeof t->pbuf, "%s", initial ? initial : "");
    t->plen = (int)strlen(t->pbuf);
}

/* Freeing 100k nodes takes ~0.3 s: a dropped copy goes to a thread. The
 * count lets the exit wait for them (a model half freed at exit would
 * read as a leak to LeakSanitizer). */
static atomic_int frees_pending;

static void *free_main(void *arg)
{
    tui_bgprobe_wait_unread(arg);   /* an idle probe may still be copying it */
    ox_model_free(arg);
    atomic_fetch_sub(&frees_pending, 1);
    return NULL;
}

void tui_free_model_wait(void)
{
    while (atomic_load(&frees_pending) > 0) {
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

void tui_free_model_async(ox_model *m)
{
    if (!m)
        return;
    pthread_t th;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    atomic_fetch_add(&frees_pending, 1);
    if (pthread_create(&th, &at, free_main, m) != 0) {
        atomic_fetch_sub(&frees_pending, 1);
        tui_bgprobe_wait_unread(m);
        ox_model_free(m);
    }
    pthread_attr_destroy(&at);
}
