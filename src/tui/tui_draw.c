/* Drawing helpers of the TUI: theme slots mapped to curses colour pairs
 * (256, 8 or no colours), clipped UTF-8 text output, progress bars and the
 * box-drawing pieces with their ASCII fallbacks. Drawing code names slots only. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tui/tui_internal.h"

/* Attributes used when colours are off (NO_COLOR, vt100, mono): the slot's
 * meaning must survive as reverse/bold/underline. */
static int mono_attr(int slot)
{
    switch (slot) {
    case OX_SLOT_UI_TITLE: return A_REVERSE | A_BOLD;
    case OX_SLOT_UI_STATUS: return A_REVERSE;
    case OX_SLOT_UI_SELECTED: return A_REVERSE;
    case OX_SLOT_UI_HEADER: return A_BOLD;
    case OX_SLOT_UI_DIM: return A_DIM;
    case OX_SLOT_UI_MATCH: return A_UNDERLINE | A_BOLD;
    case OX_SLOT_UI_ERROR: return A_BOLD;
    case OX_SLOT_UI_ADDED: return A_BOLD;
    case OX_SLOT_UI_REMOVED: return A_DIM;
    case OX_SLOT_UI_CHANGED: return A_UNDERLINE;
    case OX_SLOT_UI_HELP: return A_BOLD;
    default: return A_NORMAL;
    }
}

static int style_attr(unsigned a)
{
    int r = 0;
    if (a & OX_STYLE_BOLD)
        r |= A_BOLD;
    if (a & OX_STYLE_DIM)
        r |= A_DIM;
    if (a & OX_STYLE_UNDERLINE)
        r |= A_UNDERLINE;
    if (a & OX_STYLE_REVERSE)
        r |= A_REVERSE;
#ifdef A_ITALIC
    if (a & OX_STYLE_ITALIC)
        r |= A_ITALIC;
#endif
    return r;
}

void tui_colors_init(tui *t)
{
    bool defaults = false;
    if (t->color && has_colors() && start_color() == OK) {
        defaults = use_default_colors() == OK;
    } else {
        t->color = false;
    }
    for (int s = 0; s < OX_SLOT_COUNT; s++) {
        const ox_style *st = &t->theme.slot[s];
        if (!t->color || s >= COLOR_PAIRS - 1) {
            t->attr[s] = mono_attr(s) | (style_attr(st->attrs) & (A_BOLD | A_UNDERLINE));
            continue;
        }
        bool wide = COLORS >= 256;
        int fg = wide ? st->fg.c256 : st->fg.c8;
        int bg = wide ? st->bg.c256 : st->bg.c8;
        if (fg >= COLORS)
            fg = st->fg.c8;
        if (bg >= COLORS)
            bg = st->bg.c8;
        if (!defaults) {
            if (fg < 0)
                fg = COLOR_WHITE;
            if (bg < 0)
                bg = COLOR_BLACK;
        }
        init_pair((short)(s + 1), (short)fg, (short)bg);
        t->attr[s] = COLOR_PAIR(s + 1) | style_attr(st->attrs);
    }
    /* A selection must stay visible even if a theme forgets it. */
    if (!t->color)
        t->attr[OX_SLOT_UI_SELECTED] |= A_REVERSE;
}

int tui_slot_attr(const tui *t, int slot)
{
    if (slot < 0 || slot >= OX_SLOT_COUNT)
        return A_NORMAL;
    return t->attr[slot];
}

int tui_utf8_cols(const char *s)
{
    int n = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80)
            n++;
    return n;
}

int tui_put(int y, int x, int w, int slot, const tui *t, const char *s)
{
    if (w <= 0 || y < 0 || y >= LINES || x >= COLS)
        return 0;
    if (x + w > COLS)
        w = COLS - x;
    char buf[1024];
    size_t bi = 0;
    int cols = 0;
    /* Copy whole code points while they fit; control bytes become '?'. In
     * ASCII mode non-ASCII bytes are shown as '?' once per code point. */
    for (const unsigned char *p = (const unsigned char *)s; *p && bi + 5 < sizeof buf;) {
        unsigned char c = *p;
        int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
        if (cols >= w)
            break;
        bool ok = true;
        for (int k = 1; k < len; k++)
            if ((p[k] & 0xC0) != 0x80)
                ok = false;
        if (c < 0x20 || c == 0x7f || !ok || (len == 1 && c >= 0x80)) {
            buf[bi++] = '?';
            p += 1;
        } else if (len > 1 && t->ascii) {
            buf[bi++] = '?';
            p += len;
        } else {
            memcpy(buf + bi, p, (size_t)len);
            bi += (size_t)len;
            p += len;
        }
        cols++;
    }
    buf[bi] = 0;
    attrset(tui_slot_attr(t, slot));
    mvaddstr(y, x, buf);
    attrset(A_NORMAL);
    return cols;
}

int tui_putf(int y, int x, int w, int slot, const tui *t, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return tui_put(y, x, w, slot, t, buf);
}

void tui_fill(int y, int x, int w, int slot, const tui *t)
{
    if (y < 0 || y >= LINES || w <= 0)
        return;
    if (x + w > COLS)
        w = COLS - x;
    attrset(tui_slot_attr(t, slot));
    mvhline(y, x, ' ', w);
    attrset(A_NORMAL);
}

void tui_progress(tui *t, int y, int x, int w, double frac)
{
    if (w < 10)
        return;
    if (frac < 0)
        frac = 0;
    if (frac > 1)
        frac = 1;
    int inner = w - 7;
    int full = (int)(frac * inner + 0.5);
    char buf[512];
    int n = 0;
    buf[n++] = '[';
    for (int i = 0; i < inner && n < (int)sizeof buf - 12; i++)
        buf[n++] = i < full ? '#' : '.';
    snprintf(buf + n, sizeof buf - (size_t)n, "] %3d%%", (int)(frac * 100 + 0.5));
    tui_put(y, x, w, OX_SLOT_UI_OK, t, buf);
}

const char *tui_hline(const tui *t)
{
    return t->ascii ? "-" : "\xe2\x94\x80";
}

const char *tui_vline(const tui *t)
{
    return t->ascii ? "|" : "\xe2\x94\x82";
}

const char *tui_corner(const tui *t, int which)
{
    static const char *const uni[] = {"\xe2\x94\x8c", "\xe2\x94\x90", "\xe2\x94\x94",
                                      "\xe2\x94\x98", "\xe2\x94\xac", "\xe2\x94\xb4",
                                      "\xe2\x94\xbc"};
    if (which < 0 || which > 6)
        return "+";
    return t->ascii ? "+" : uni[which];
}
