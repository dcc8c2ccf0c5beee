/* The op filter of the Nodes panel (see tui_filter.h). */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "tui/tui_filter.h"

bool tui_filter_parse(tui_filter *f, const char *spec, char *why, int why_len)
{
    tui_filter n;
    memset(&n, 0, sizeof n);
    if (!spec)
        spec = "";
    if (strlen(spec) >= sizeof n.buf) {
        snprintf(why, (size_t)why_len, "filter too long (at most %d characters)",
                 (int)sizeof n.buf - 1);
        return false;
    }
    snprintf(n.buf, sizeof n.buf, "%s", spec);
    /* Blank spec: no filter. */
    const char *q = n.buf;
    while (*q == ' ')
        q++;
    if (!*q) {
        *f = n;
        f->buf[0] = 0;
        return true;
    }
    /* Split by hand: strtok would merge ",," silently instead of rejecting it. */
    char *s = n.buf;
    char *tok;
    for (;;) {
        char *comma = strchr(s, ',');
        if (comma)
            *comma = 0;
        tok = s;
        while (*tok == ' ')
            tok++;
        char *end = tok + strlen(tok);
        while (end > tok && end[-1] == ' ')
            *--end = 0;
        bool neg = *tok == '!';
        if (neg) {
            tok++;
            while (*tok == ' ')
                tok++;
        }
        if (!*tok) {
            snprintf(why, (size_t)why_len, "empty op name in filter '%s' (use Conv,Add or !Constant)",
                     spec);
            return false;
        }
        if ((neg ? n.n_drop : n.n_keep) >= TUI_FILTER_MAX) {
            snprintf(why, (size_t)why_len, "too many ops in the filter (at most %d of each kind)",
                     TUI_FILTER_MAX);
            return false;
        }
        if (neg)
            n.drop[n.n_drop++] = tok;
        else
            n.keep[n.n_keep++] = tok;
        if (!comma)
            break;
        s = comma + 1;
    }
    /* The pointers point into n.buf: rebase them onto f->buf. */
    *f = n;
    for (int i = 0; i < f->n_keep; i++)
        f->keep[i] = f->buf + (n.keep[i] - n.buf);
    for (int i = 0; i < f->n_drop; i++)
        f->drop[i] = f->buf + (n.drop[i] - n.buf);
    return true;
}

bool tui_filter_active(const tui_filter *f)
{
    return f->n_keep > 0 || f->n_drop > 0;
}

bool tui_filter_match(const tui_filter *f, const char *op_type)
{
    const char *op = op_type ? op_type : "";
    for (int i = 0; i < f->n_drop; i++)
        if (!strcasecmp(op, f->drop[i]))
            return false;
    if (!f->n_keep)
        return true;
    for (int i = 0; i < f->n_keep; i++)
        if (!strcasecmp(op, f->keep[i]))
            return true;
    return false;
}
