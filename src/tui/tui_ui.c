/* The UI state every panel may set: the status line, the focused panel
 * and the prompt. Panels call these rather than into tui_main.c (the event
 * loop), which only reads the state back when it draws. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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
