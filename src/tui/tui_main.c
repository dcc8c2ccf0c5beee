/* Entry of `onnxscope [OPTIONS] MODEL`: options, the loading screen (the
 * model loads in a worker thread), the event loop that maps keys through the
 * one key table to actions and routes them to the focused panel, prompts,
 * the generated help screen, mouse, resize, export and save. */
#include <errno.h>
#include <langinfo.h>
#include <locale.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "onnxscope/export.h"
#include "onnxscope/infer.h"
#include "onnxscope/io.h"
#include "tui/tui.h"
#include "tui/tui_internal.h"

/* ---- the key table as data ------------------------------------------------- */

typedef struct key_entry {
    tui_action action;
    int k1, k2;
    const char *keys, *where, *help;
} key_entry;

static const key_entry key_table[] = {
#define X(id, k1, k2, keys, where, help) {TUI_A_##id, k1, k2, keys, where, help},
    TUI_KEYMAP(X)
#undef X
};
#define N_KEYS ((int)(sizeof key_table / sizeof *key_table))

static tui_action key_action(int ch)
{
    if (ch == '\r')
        ch = '\n';
    if (ch == 8)
        ch = KEY_BACKSPACE;
    for (int i = 0; i < N_KEYS; i++)
        if (ch != 0 && (key_table[i].k1 == ch || key_table[i].k2 == ch))
            return key_table[i].action;
    return TUI_A_NONE;
}

static const char *action_name(tui_action a)
{
    static const char *const names[] = {
        "none",
#define X(id, k1, k2, keys, where, help) #id,
        TUI_KEYMAP(X)
#undef X
    };
    return a >= 0 && a < TUI_A_COUNT ? names[a] : "?";
}

/* The key map as a Markdown table: docs/TUI.md embeds this output and the
 * tui test checks that they agree. */
void ox_tui_print_keys(FILE *f)
{
    fprintf(f, "| Keys | Where | Action |\n|---|---|---|\n");
    for (int i = 0; i < N_KEYS; i++)
        fprintf(f, "| `%s` | %s | %s |\n", key_table[i].keys, key_table[i].where,
                key_table[i].help);
}

/* ---- status, switching, prompts --------------------------------------------------- */

static const char *prompt_label(const tui *t)
{
    switch (t->prompt) {
    case TUI_PROMPT_SEARCH: return "search: ";
    case TUI_PROMPT_FILTER: return "filter ops (Conv,Add  !Constant): ";
    case TUI_PROMPT_GOTO: return "go to node #: ";
    case TUI_PROMPT_SHAPE: return "shape: ";
    case TUI_PROMPT_EXPORT: return "export to (.dot .svg .png): ";
    case TUI_PROMPT_SAVE: return "save model to: ";
    case TUI_PROMPT_CONFIRM: return t->confirm_msg;
    case TUI_PROMPT_DIMS: return t->dims_msg;
    default: return "";
    }
}

/* ---- drawing --------------------------------------------------------------------- */

static void list_fix_scroll(tui_panel *p, int rows, int h)
{
    if (rows <= 0) {
        p->sel = p->top = 0;
        return;
    }
    if (p->sel >= rows)
        p->sel = rows - 1;
    if (p->sel < 0)
        p->sel = 0;
    if (h < 1)
        h = 1;
    if (p->sel < p->top)
        p->top = p->sel;
    if (p->sel >= p->top + h)
        p->top = p->sel - h + 1;
    if (p->top > rows - h)
        p->top = rows - h > 0 ? rows - h : 0;
    if (p->top < 0)
        p->top = 0;
}

/* Rows of the list area of a list panel at the current size. */
static int list_height(tui *t, tui_panel *p)
{
    int h = LINES - 2;
    if (p->header)
        h--;
    if (p->footer_lines)
        h -= p->footer_lines(t);
    return h < 1 ? 1 : h;
}

static void draw_list(tui *t, tui_panel *p, int y0, int h, int w)
{
    int rows = p->rows(t);
    int y = y0;
    if (p->header) {
        char hb[512];
        tui_fill(y, 0, w, OX_SLOT_UI_HEADER, t);
        tui_put(y, 0, w, OX_SLOT_UI_HEADER, t, p->header(t, hb, w));
        y++;
        h--;
    }
    int fl = p->footer_lines ? p->footer_lines(t) : 0;
    int lh = h - fl;
    if (lh < 1)
        lh = 1;
    list_fix_scroll(p, rows, lh);
    for (int i = 0; i < lh && p->top + i < rows; i++)
        p->draw_row(t, p->top + i, y + i, w, p->top + i == p->sel);
    if (rows == 0)
        tui_put(y, 1, w - 2, OX_SLOT_UI_DIM, t, "(empty)");
    if (fl && p->draw_footer)
        p->draw_footer(t, y + lh, fl, w);
}

/* Tab label: " 1 Overview " when there is room, "1Overview " at 80 columns. */
static int tab_label(const tui *t, int i, char *buf, size_t len)
{
    static const char digits[] = "1234567890";
    if (COLS >= 96)
        return snprintf(buf, len, " %c %s ", digits[i], t->panels[i].title);
    return snprintf(buf, len, "%c%s ", digits[i], t->panels[i].title);
}

static void draw_tabs(tui *t)
{
    tui_fill(0, 0, COLS, OX_SLOT_UI_TITLE, t);
    int x = 0;
    for (int i = 0; i < TUI_P_COUNT && x < COLS; i++) {
        char lb[32];
        tab_label(t, i, lb, sizeof lb);
        int slot = i == t->cur_panel ? OX_SLOT_UI_SELECTED : OX_SLOT_UI_TITLE;
        x += tui_put(0, x, COLS - x, slot, t, lb);
    }
    const char *base = strrchr(t->path, '/');
    base = base ? base + 1 : t->path;
    /* The panels show the optimized copy after a step or `a`: say so. */
    bool opt = t->cur != t->orig;
    char lbl[900];
    snprintf(lbl, sizeof lbl, "%s%s%s%s", base, opt ? " (optimized)" : "",
             t->base ? " vs " : "", t->base ? tui_base_name(t) : "");
    int bl = tui_utf8_cols(lbl);
    if (x + bl + 2 < COLS)
        tui_put(0, COLS - bl - 1, bl, opt ? OX_SLOT_UI_CHANGED : OX_SLOT_UI_TITLE, t, lbl);
    else if (opt && x + 6 < COLS)
        tui_put(0, COLS - 6, 5, OX_SLOT_UI_CHANGED, t, "[opt]");
}

/* Greedy word wrap of s into at most max lines of w columns (a word
 * longer than a line is cut); returns the lines used. */
static int wrap_text(const char *s, int w, char lines[][1100], int max)
{
    int n = 0;
    if (w < 10)
        w = 10;
    while (*s && n < max) {
        while (*s == ' ')
            s++;
        size_t len = strlen(s), cut = 0, last_space = 0;
        char tmp[1100];
        /* the longest prefix of at most w columns */
        while (cut < len && cut < sizeof tmp - 1) {
            size_t next = cut + 1;
            while (next < len && ((unsigned char)s[next] & 0xC0) == 0x80)
                next++;
            memcpy(tmp, s, next);
            tmp[next] = 0;
            if (tui_utf8_cols(tmp) > w)
                break;
            if (s[cut] == ' ')
                last_space = cut;
            cut = next;
        }
        if (cut < len && last_space > 0)
            cut = last_space;
        if (n == max - 1 && cut < len)
            cut = len < sizeof tmp - 1 ? len : sizeof tmp - 1;   /* the last line takes the rest (clipped) */
        snprintf(lines[n++], 1100, "%.*s", (int)cut, s);
        s += cut;
    }
    return n;
}

static void draw_status(tui *t)
{
    int y = LINES - 1;
    tui_fill(y, 0, COLS, OX_SLOT_UI_STATUS, t);
    if (t->prompt) {
        int x = tui_put(y, 0, COLS, OX_SLOT_UI_STATUS, t, prompt_label(t));
        int avail = COLS - x - 1;
        const char *s = t->pbuf;
        int cols = tui_utf8_cols(s);
        while (cols > avail && *s) {   /* show the end of a long input */
            s++;
            cols = tui_utf8_cols(s);
        }
        x += tui_put(y, x, avail, OX_SLOT_UI_STATUS, t, s);
        move(y, x);
        curs_set(1);
        return;
    }
    curs_set(0);
    char right[64] = "";
    tui_panel *p = &t->panels[t->cur_panel];
    if (p->rows) {
        int rows = p->rows(t);
        snprintf(right, sizeof right, " %d/%d ", rows ? p->sel + 1 : 0, rows);
    }
    int rw = (int)strlen(right);
    if (!t->status[0] && t->job) {
        /* The running job: what, what now, and a bar when measurable. */
        char jb[400];
        double frac = tui_job_status(t, jb, sizeof jb);
        int bw = 20;   /* "[#####.....] 45%" when measurable and there is room */
        if (frac < 0 || tui_utf8_cols(jb) + 1 + bw + rw > COLS)
            bw = 0;
        tui_put(y, 0, COLS - rw - (bw ? bw + 1 : 0), OX_SLOT_UI_WARNING, t, jb);
        if (bw)
            tui_progress(t, y, COLS - rw - bw, bw, frac);
    } else if (t->status[0] && t->status_slot == OX_SLOT_UI_ERROR &&
               tui_utf8_cols(t->status) > COLS - rw) {
        /* A long error wraps upwards over the panel (up to 6 lines) until
         * the next key, instead of being cut. */
        char lines[6][1100];
        int nl = wrap_text(t->status, COLS - rw - 1, lines, 6);
        for (int i = 0; i < nl; i++) {
            int ly = y - (nl - 1) + i;
            tui_fill(ly, 0, COLS, OX_SLOT_UI_ERROR, t);
            tui_put(ly, 0, i == nl - 1 ? COLS - rw : COLS, OX_SLOT_UI_ERROR, t, lines[i]);
        }
    } else if (t->status[0])
        tui_put(y, 0, COLS - rw, t->status_slot == OX_SLOT_UI_ERROR ? OX_SLOT_UI_ERROR
                                                                    : OX_SLOT_UI_STATUS,
                t, t->status);
    else
        tui_put(y, 0, COLS - rw, OX_SLOT_UI_STATUS, t,
                "? help  q quit  Tab/1-0 panels  / search  x export  w save");
    tui_put(y, COLS - rw, rw, OX_SLOT_UI_STATUS, t, right);
}

static void draw_help(tui *t)
{
    int y0 = 1, h = LINES - 2, w = COLS;
    for (int y = y0; y < y0 + h; y++)
        tui_fill(y, 0, w, OX_SLOT_UI_NORMAL, t);
    tui_put(y0, 1, w - 2, OX_SLOT_UI_HEADER, t,
            "Keys (from the key table; j/k scroll, q/Esc/? close)");
    int max_top = N_KEYS - (h - 2);
    if (t->help_top > max_top)
        t->help_top = max_top > 0 ? max_top : 0;
    if (t->help_top < 0)
        t->help_top = 0;
    for (int i = 0; i < h - 2 && t->help_top + i < N_KEYS; i++) {
        const key_entry *k = &key_table[t->help_top + i];
        tui_putf(y0 + 2 + i, 1, 12, OX_SLOT_UI_HELP, t, "%-11s", k->keys);
        tui_putf(y0 + 2 + i, 13, 15, OX_SLOT_UI_DIM, t, "%-14s", k->where);
        tui_put(y0 + 2 + i, 28, w - 29, OX_SLOT_UI_NORMAL, t, k->help);
    }
}

static void draw(tui *t)
{
    erase();
    if (LINES < 10 || COLS < 40) {
        tui_put(0, 0, COLS, OX_SLOT_UI_ERROR, t, "terminal too small (need 40x10)");
        return;
    }
    draw_tabs(t);
    int y0 = 1, h = LINES - 2, w = COLS;
    if (t->help) {
        draw_help(t);
    } else {
        tui_panel *p = &t->panels[t->cur_panel];
        if (p->rows)
            draw_list(t, p, y0, h, w);
        else if (p->draw)
            p->draw(t, y0, h, w);
    }
    draw_status(t);
}

/* ---- search ---------------------------------------------------------------------- */

static int search_panel(tui *t)
{
    return t->panels[t->cur_panel].match ? t->cur_panel : TUI_P_NODES;
}

static int hidden_matches(tui *t, const char *q);

static void search_step(tui *t, int dir, bool include_current)
{
    if (!t->search[0]) {
        tui_set_status(t, OX_SLOT_UI_WARNING, "no search yet: press /");
        return;
    }
    int pi = search_panel(t);
    tui_panel *p = &t->panels[pi];
    int rows = p->rows(t);
    if (rows <= 0)
        return;
    int start = p->sel;
    int hidden = pi == TUI_P_NODES ? hidden_matches(t, t->search) : 0;
    char hnote[96] = "";
    if (hidden)
        snprintf(hnote, sizeof hnote, " (%d more hidden by the filter: f or H)", hidden);
    for (int k = include_current ? 0 : 1; k <= rows; k++) {
        int r = ((start + dir * k) % rows + rows) % rows;
        if (p->match(t, r, t->search)) {
            p->sel = r;
            tui_switch(t, pi);
            const char *tensor = NULL;
            if (pi == TUI_P_NODES) {
                ox_node *n = t->nodes.rc[t->nodes.order[r]].node;
                tui_node_match(n, t->search, &tensor);
                tui_goto_node(t, n, false);
            }
            tui_set_status(t, OX_SLOT_UI_OK, "/%s: row %d of %d%s%s%s", t->search, r + 1, rows,
                           tensor ? " (tensor " : "", tensor ? tensor : "", tensor ? ")" : "");
            if (hidden) {
                size_t l = strlen(t->status);
                snprintf(t->status + l, sizeof t->status - l, "%s", hnote);
            }
            return;
        }
    }
    if (hidden)
        tui_set_status(t, OX_SLOT_UI_WARNING, "no match for '%s' in the listed nodes: %d hidden by the filter (f or H)",
                       t->search, hidden);
    else
        tui_set_status(t, OX_SLOT_UI_WARNING, "no match for '%s' in %s", t->search, p->title);
}

/* `:644`: the node at that index of the browsed graph. Filters that hide
 * it are cleared (and the status says so). */
static void goto_index(tui *t, const char *s)
{
    while (*s == ' ' || *s == ':' || *s == '#')
        s++;
    char *end = NULL;
    long i = strtol(s, &end, 10);
    while (end && *end == ' ')
        end++;
    if (t->graph->n_nodes == 0) {
        tui_set_status(t, OX_SLOT_UI_WARNING, "this graph has no nodes");
        return;
    }
    if (!*s || !end || *end || i < 0) {
        tui_set_status(t, OX_SLOT_UI_ERROR, "'%s' is not a node index (0..%d)", s,
                       t->graph->n_nodes - 1);
        return;
    }
    if (i >= t->graph->n_nodes) {
        tui_set_status(t, OX_SLOT_UI_ERROR, "no node %ld: this graph has %d nodes (0..%d)", i,
                       t->graph->n_nodes, t->graph->n_nodes - 1);
        return;
    }
    ox_node *n = t->graph->nodes[i];
    bool cleared = false;
    if (!tui_node_visible(t, n)) {
        tui_nodes_clear_filters(t);
        tui_model_resort(t);
        cleared = true;
    }
    tui_goto_node(t, n, t->cur_panel == TUI_P_DETAIL);
    if (t->cur_panel != TUI_P_DETAIL && t->cur_panel != TUI_P_NEIGH)
        tui_switch(t, TUI_P_NODES);
    char lb[256];
    tui_set_status(t, OX_SLOT_UI_OK, "#%ld %s %s%s", i, n->op_type, tui_node_label(n, lb, sizeof lb),
                   cleared ? " (the filters hid it: cleared)" : "");
}

/* Matches of q among the nodes a filter of the Nodes list hides. */
static int hidden_matches(tui *t, const char *q)
{
    if (!tui_nodes_filtered(t))
        return 0;
    int n = 0;
    const char *tensor;
    for (int i = 0; i < t->nodes.n_rc; i++)
        if (!tui_node_visible(t, t->nodes.rc[i].node) && tui_node_match(t->nodes.rc[i].node, q, &tensor))
            n++;
    return n;
}

/* ---- export and save ------------------------------------------------------------------ */

static const char *model_base(const tui *t, char *buf, size_t len)
{
    const char *b = strrchr(t->path, '/');
    b = b ? b + 1 : t->path;
    snprintf(buf, len, "%s", b);
    char *dot = strrchr(buf, '.');
    if (dot && dot != buf)
        *dot = 0;
    return buf;
}

static void export_open(tui *t)
{
    char base[256], def[512];
    model_base(t, base, sizeof base);
    if ((t->cur_panel == TUI_P_NEIGH || t->cur_panel == TUI_P_DETAIL) && t->nb.centre &&
        t->gdepth == 0) {
        t->export_scope = 1;
        snprintf(def, sizeof def, "%s-around-%d.svg", base, t->nb.centre->index);
    } else if (t->cur_panel == TUI_P_DIFF) {
        t->export_scope = 2;
        snprintf(def, sizeof def, "%s-diff.svg", base);
    } else {
        t->export_scope = 0;
        snprintf(def, sizeof def, "%s.svg", base);
    }
    tui_prompt_open(t, TUI_PROMPT_EXPORT, def);
}

/* Export runs in a worker (Graphviz lays out a BERT-base for ~30 s and
 * cannot be interrupted): it renders copies of the models into a temporary
 * file next to the target, renamed into place when it succeeds; Esc
 * abandons it, and the thread removes the temporary file when it ends. */
typedef struct export_job {
    ox_model *m, *after;      /* private copies */
    ox_export_opts o;
    char around[256];
    char path[512], tmp[600];
    const char *what;
    ox_status st;
    ox_error err;
    ox_export_stats stats;
} export_job;

/* Graphviz (libcgraph) keeps global state and is not thread-safe: an
 * export waits for an abandoned one that is still rendering. */
static pthread_mutex_t export_mu = PTHREAD_MUTEX_INITIALIZER;

static void export_run(tui_job *j)
{
    export_job *e = j->ctx;
    if (pthread_mutex_trylock(&export_mu) != 0) {
        tui_job_note(j, "waiting for the cancelled export to end");
        pthread_mutex_lock(&export_mu);
    }
    tui_job_note(j, "rendering (Esc abandons)");
    e->st = ox_export_render(e->m, &e->o, e->tmp, OX_EXPORT_AUTO, &e->stats, &e->err);
    pthread_mutex_unlock(&export_mu);
}

static void export_discard(tui_job *j)
{
    export_job *e = j->ctx;
    unlink(e->tmp);
    ox_model_free(e->m);
    ox_model_free(e->after);
}

static void export_done(tui *t, tui_job *j)
{
    export_job *e = j->ctx;
    if (e->st == OX_OK && rename(e->tmp, e->path) != 0)
        e->st = ox_errorf(&e->err, OX_EIO, "cannot rename %s to %s: %s", e->tmp, e->path,
                          strerror(errno));
    if (e->st != OX_OK)
        tui_set_status(t, OX_SLOT_UI_ERROR, "export failed: %s",
                       e->err.msg[0] ? e->err.msg : ox_strerror(e->st));
    else
        tui_set_status(t, OX_SLOT_UI_OK, "exported %s (%d nodes) to %s", e->what,
                       e->stats.op_nodes, e->path);
    export_discard(j);
}

/* "x.svg" -> "./.x.svg.part-PID-N.svg": same directory (rename stays on
 * one file system), same extension (the format follows it). */
static void export_tmp_name(const char *path, char *tmp, size_t len)
{
    static int seq;
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    const char *dot = strrchr(base, '.');
    snprintf(tmp, len, "%.*s.%s.part-%ld-%d%s", (int)(base - path), path, base, (long)getpid(),
             ++seq, dot ? dot : "");
}

static void export_do(tui *t, const char *path)
{
    tui_job *j = calloc(1, sizeof *j);
    export_job *e = calloc(1, sizeof *e);
    if (!j || !e) {
        free(j);
        free(e);
        tui_set_status(t, OX_SLOT_UI_ERROR, "export failed: out of memory");
        return;
    }
    j->ctx = e;
    ox_export_opts_init(&e->o);
    e->o.theme = &t->theme;   /* t outlives every job: it is static */
    e->what = "graph";
    const ox_model *src = t->cur;
    if (t->export_scope == 1 && t->nb.centre) {
        if (t->nb.centre->name && t->nb.centre->name[0])
            snprintf(e->around, sizeof e->around, "%s", t->nb.centre->name);
        else
            snprintf(e->around, sizeof e->around, "%d", t->nb.centre->index);
        e->o.around = e->around;
        e->o.radius = t->nb.radius > 0 ? t->nb.radius : 2;
        e->what = "neighbourhood";
    } else if (t->export_scope == 2) {
        src = t->base ? t->base : t->orig;
        e->after = ox_model_clone(t->cur);
        e->o.diff_after = e->after;
        e->what = "diff";
    }
    e->m = ox_model_clone(src);
    if (!e->m || (t->export_scope == 2 && !e->after)) {
        export_discard(j);
        free(e);
        free(j);
        tui_set_status(t, OX_SLOT_UI_ERROR, "export failed: out of memory copying the model");
        return;
    }
    snprintf(e->path, sizeof e->path, "%s", path);
    export_tmp_name(path, e->tmp, sizeof e->tmp);
    snprintf(j->what, sizeof j->what, "exporting %s to %s", e->what, path);
    j->run = export_run;
    j->done = export_done;
    j->discard = export_discard;
    t->status[0] = 0;
    tui_job_start(t, j);
}

static bool same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (stat(a, &sa) != 0 || stat(b, &sb) != 0)
        return false;
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static bool has_overrides(const tui *t)
{
    return t->iopts.n_shapes > 0 || t->iopts.n_dims > 0;
}

/* Writes the model. With shape overrides in effect, fix=true makes them
 * the saved input dims (and every symbol they fix); fix=false keeps the
 * file's symbolic dims, and the inferred value_info is recomputed without
 * the overrides so that it does not claim the looked-at sizes. */
static void save_write(tui *t, const char *path, bool fix)
{
    struct stat sb;
    bool is_input = stat(path, &sb) == 0 && same_file(path, t->path);
    ox_save_opts so = {.overwrite_input = is_input};
    ox_error err = {0};
    ox_model *m = t->cur, *copy = NULL;
    if (has_overrides(t)) {
        copy = ox_model_clone(t->cur);
        if (!copy) {
            tui_set_status(t, OX_SLOT_UI_ERROR, "save failed: out of memory");
            return;
        }
        if (fix) {
            ox_infer_fix_declared(copy, &t->iopts, &err);
        } else {
            ox_graph *g = copy->graph;
            for (int i = 0; i < g->n_inputs; i++) {
                ox_value *v = g->inputs[i];
                if (v->decl) {
                    ox_type_free(v->type);
                    v->type = ox_type_clone(v->decl);
                }
            }
            ox_infer_opts io = {.reset = true};
            ox_infer_model(copy, &io, NULL);
        }
        m = copy;
    }
    ox_status s = err.status ? err.status : ox_save(m, path, &so, &err);
    if (s != OX_OK)
        tui_set_status(t, OX_SLOT_UI_ERROR, "save failed: %s", err.msg[0] ? err.msg : ox_strerror(s));
    else if (t->cur != t->orig)   /* the Bench panel names the optimized row after it */
    {
        snprintf(t->saved_name, sizeof t->saved_name, "%s", path);
        t->saved_model = t->cur;
    }
    if (s == OX_OK)
        tui_set_status(t, OX_SLOT_UI_OK, "saved %s model (%d nodes%s) to %s",
                       t->cur == t->orig ? "the" : "the optimized", m->graph->n_nodes,
                       !copy ? "" : fix ? ", dims fixed" : ", symbolic dims kept", path);
    ox_model_free(copy);
}

static void save_do(tui *t, const char *path, bool confirmed)
{
    struct stat sb;
    bool exists = stat(path, &sb) == 0;
    bool is_input = exists && same_file(path, t->path);
    ox_save_opts so = {.overwrite_input = is_input};
    ox_error err = {0};
    /* The library's rule, before asking: never a file the input reads. */
    if (ox_save_check_targets(t->cur, path, &so, &err) != OX_OK) {
        tui_set_status(t, OX_SLOT_UI_ERROR, "save refused: %s", err.msg);
        return;
    }
    if (exists && !confirmed) {
        snprintf(t->pending_path, sizeof t->pending_path, "%s", path);
        t->confirm_for = TUI_PROMPT_SAVE;
        snprintf(t->confirm_msg, sizeof t->confirm_msg, "%s: overwrite? (y/n) ",
                 is_input ? "this is the input model" : "the file exists");
        tui_prompt_open(t, TUI_PROMPT_CONFIRM, "");
        return;
    }
    if (has_overrides(t)) {
        /* Shapes changed to look at costs are not a decision about the
         * file: ask, keeping the symbols by default. */
        snprintf(t->pending_path, sizeof t->pending_path, "%s", path);
        /* At most 78 columns: the whole question fits an 80-column bar. */
        snprintf(t->dims_msg, sizeof t->dims_msg,
                 "shapes changed%s: Enter/k keep symbolic dims, f fix them ",
                 t->cur != t->orig ? " (passes ran with them)" : "");
        tui_prompt_open(t, TUI_PROMPT_DIMS, "");
        return;
    }
    save_write(t, path, false);
}

/* ---- prompt input ----------------------------------------------------------------------- */

static int prompt_submit(tui *t)
{
    tui_prompt_kind k = t->prompt;
    t->prompt = TUI_PROMPT_NONE;
    char *s = t->pbuf;
    switch (k) {
    case TUI_PROMPT_SEARCH:
        if (!s[0])
            return TUI_REDRAW;
        snprintf(t->search, sizeof t->search, "%.63s", s);
        search_step(t, 1, true);
        break;
    case TUI_PROMPT_FILTER: {
        char why[160];
        if (!tui_filter_parse(&t->nodes.filt, s, why, sizeof why)) {
            tui_set_status(t, OX_SLOT_UI_ERROR, "%s", why);
            break;
        }
        snprintf(t->nodes.filter, sizeof t->nodes.filter, "%.127s", tui_filter_active(&t->nodes.filt) ? s : "");
        if (!t->nodes.filter[0])
            t->nodes.consumers[0] = 0;   /* an empty filter clears the consumer list too */
        tui_model_resort(t);
        if (t->nodes.filter[0])
            tui_set_status(t, OX_SLOT_UI_OK, "filter: %s (%d of %d nodes)", t->nodes.filter, t->nodes.n_order,
                           t->nodes.n_rc);
        else
            tui_set_status(t, OX_SLOT_UI_OK, "filter cleared (%d nodes)", t->nodes.n_order);
        break;
    }
    case TUI_PROMPT_GOTO:
        goto_index(t, s);
        break;
    case TUI_PROMPT_SHAPE: {
        if (t->bench.running || tui_job_busy(t, true)) {
            tui_set_status(t, OX_SLOT_UI_WARNING, "wait for the %s to finish",
                           t->bench.running ? "benchmark" : "running job");
            break;
        }
        ox_error err = {0};
        if (tui_apply_shape(t, t->pending_path, s, &err) != OX_OK)
            tui_set_status(t, OX_SLOT_UI_ERROR, "shape %s: %s", s, err.msg);
        else if (!t->job)
            tui_set_status(t, OX_SLOT_UI_OK, "%s = %s: shapes re-inferred", t->pending_path, s);
        break;
    }
    case TUI_PROMPT_EXPORT:
        if (s[0] && tui_job_busy(t, false))
            tui_set_status(t, OX_SLOT_UI_WARNING, "busy: wait for the running job or Esc it");
        else if (s[0])
            export_do(t, s);
        break;
    case TUI_PROMPT_SAVE:
        if (s[0])
            save_do(t, s, false);
        break;
    case TUI_PROMPT_CONFIRM:
        if (s[0] == 'y' || s[0] == 'Y') {
            char path[512];
            snprintf(path, sizeof path, "%s", t->pending_path);
            save_do(t, path, true);
        } else {
            tui_set_status(t, OX_SLOT_UI_DIM, "not saved");
        }
        break;
    case TUI_PROMPT_DIMS: {
        char path[512];
        snprintf(path, sizeof path, "%s", t->pending_path);
        if (!s[0] || s[0] == 'k' || s[0] == 'K')
            save_write(t, path, false);
        else if (s[0] == 'f' || s[0] == 'F')
            save_write(t, path, true);
        else
            tui_set_status(t, OX_SLOT_UI_DIM, "not saved (k keeps, f fixes the dims)");
        break;
    }
    default: break;
    }
    return TUI_REDRAW;
}

static int prompt_key(tui *t, int ch)
{
    if (ch == 27) {
        t->prompt = TUI_PROMPT_NONE;
        tui_set_status(t, OX_SLOT_UI_DIM, "cancelled");
        return TUI_REDRAW;
    }
    if (ch == '\n' || ch == '\r' || ch == KEY_ENTER)
        return prompt_submit(t);
    if ((t->prompt == TUI_PROMPT_CONFIRM && (ch == 'y' || ch == 'n' || ch == 'Y' || ch == 'N')) ||
        (t->prompt == TUI_PROMPT_DIMS && (ch == 'k' || ch == 'f' || ch == 'K' || ch == 'F'))) {
        t->pbuf[0] = (char)ch;
        t->pbuf[1] = 0;
        return prompt_submit(t);
    }
    if (ch == KEY_BACKSPACE || ch == 127 || ch == 8) {
        /* drop a whole UTF-8 code point */
        while (t->plen > 0 && ((unsigned char)t->pbuf[t->plen - 1] & 0xC0) == 0x80)
            t->plen--;
        if (t->plen > 0)
            t->plen--;
        t->pbuf[t->plen] = 0;
        return TUI_REDRAW;
    }
    if (ch == TUI_CTRL('u')) {
        t->plen = 0;
        t->pbuf[0] = 0;
        return TUI_REDRAW;
    }
    if (ch >= 0x20 && ch < 0x100 && ch != 0x7f && t->plen + 1 < (int)sizeof t->pbuf) {
        t->pbuf[t->plen++] = (char)ch;
        t->pbuf[t->plen] = 0;
    }
    return TUI_REDRAW;
}

/* ---- actions ------------------------------------------------------------------------------ */

static int list_move(tui *t, tui_panel *p, tui_action a)
{
    int rows = p->rows(t);
    int h = list_height(t, p);
    switch (a) {
    case TUI_A_UP: p->sel--; break;
    case TUI_A_DOWN: p->sel++; break;
    case TUI_A_PGUP: p->sel -= h; p->top -= h; break;
    case TUI_A_PGDN: p->sel += h; p->top += h; break;
    case TUI_A_HOME: p->sel = 0; break;
    case TUI_A_END: p->sel = rows - 1; break;
    default: return TUI_UNHANDLED;
    }
    list_fix_scroll(p, rows, h);
    return TUI_REDRAW;
}

static int global_key(tui *t, tui_action a, int ch)
{
    tui_panel *p = &t->panels[t->cur_panel];
    (void)ch;
    switch (a) {
    case TUI_A_QUIT: return TUI_QUIT;
    case TUI_A_HELP: t->help = true; t->help_top = 0; return TUI_REDRAW;
    case TUI_A_NEXT_PANEL: tui_switch(t, (t->cur_panel + 1) % TUI_P_COUNT); return TUI_REDRAW;
    case TUI_A_PREV_PANEL:
        tui_switch(t, (t->cur_panel + TUI_P_COUNT - 1) % TUI_P_COUNT);
        return TUI_REDRAW;
    case TUI_A_PANEL_1: case TUI_A_PANEL_2: case TUI_A_PANEL_3: case TUI_A_PANEL_4:
    case TUI_A_PANEL_5: case TUI_A_PANEL_6: case TUI_A_PANEL_7: case TUI_A_PANEL_8:
    case TUI_A_PANEL_9: case TUI_A_PANEL_0:
        tui_switch(t, a - TUI_A_PANEL_1);
        return TUI_REDRAW;
    case TUI_A_UP: case TUI_A_DOWN: case TUI_A_PGUP: case TUI_A_PGDN:
    case TUI_A_HOME: case TUI_A_END:
        if (p->rows)
            return list_move(t, p, a);
        return TUI_HANDLED;
    case TUI_A_SEARCH: tui_prompt_open(t, TUI_PROMPT_SEARCH, ""); return TUI_REDRAW;
    case TUI_A_NEXT_MATCH: search_step(t, 1, false); return TUI_REDRAW;
    case TUI_A_PREV_MATCH: search_step(t, -1, false); return TUI_REDRAW;
    case TUI_A_FILTER:
        tui_switch(t, TUI_P_NODES);
        tui_prompt_open(t, TUI_PROMPT_FILTER, t->nodes.filter);
        return TUI_REDRAW;
    case TUI_A_GOTO: tui_prompt_open(t, TUI_PROMPT_GOTO, ""); return TUI_REDRAW;
    case TUI_A_BENCH:
        tui_switch(t, TUI_P_BENCH);
        tui_bench_start(t);
        return TUI_REDRAW;
    case TUI_A_MATRIX:
        tui_switch(t, TUI_P_BENCH);
        tui_matrix_start(t);
        return TUI_REDRAW;
    case TUI_A_CANCEL:
        if (t->bench.running) {
            tui_bench_cancel(t);
            tui_set_status(t, OX_SLOT_UI_WARNING, "cancelling the benchmark ...");
        }
        return TUI_REDRAW;
    case TUI_A_EXPORT: export_open(t); return TUI_REDRAW;
    case TUI_A_WRITE: {
        char base[256], def[512];
        model_base(t, base, sizeof base);
        const char *slash = strrchr(t->path, '/');
        snprintf(def, sizeof def, "%.*s%s-opt.onnx", slash ? (int)(slash - t->path + 1) : 0,
                 t->path, base);
        tui_prompt_open(t, TUI_PROMPT_SAVE, def);
        return TUI_REDRAW;
    }
    case TUI_A_BACK:
        if (t->gdepth > 0) {
            t->graph = t->gstack[--t->gdepth];
            t->det.node = t->nb.centre = NULL;
            ox_error err = {0};
            tui_model_refresh(t, &err);
            tui_set_status(t, OX_SLOT_UI_OK, "left the subgraph");
        }
        return TUI_REDRAW;
    case TUI_A_NEIGH: tui_switch(t, TUI_P_NEIGH); return TUI_REDRAW;
    /* Stepping works from every panel: the Nodes cursor and the
     * neighbourhood follow the rewritten nodes wherever one looks. */
    case TUI_A_STEP: case TUI_A_STEP_REST: case TUI_A_UNDO:
    case TUI_A_NEXT_CHANGED: case TUI_A_PREV_CHANGED:
        return tui_passes_key(t, a);
    case TUI_A_TOGGLE: case TUI_A_RESET: case TUI_A_APPLY_ALL:
    case TUI_A_LEVEL: case TUI_A_BISECT:
        tui_set_status(t, OX_SLOT_UI_DIM, "pass keys work in panels 8 (Passes) and 9 (Diff)");
        return TUI_REDRAW;
    case TUI_A_REDRAW: clearok(curscr, TRUE); return TUI_REDRAW;
    default: return TUI_UNHANDLED;
    }
}

static int handle_mouse(tui *t)
{
    MEVENT ev;
    if (getmouse(&ev) != OK)
        return TUI_HANDLED;
    tui_panel *p = &t->panels[t->cur_panel];
    if (ev.bstate & BUTTON4_PRESSED) {
        if (p->rows) {
            p->sel -= 3;
            list_fix_scroll(p, p->rows(t), list_height(t, p));
        }
        return TUI_REDRAW;
    }
#ifdef BUTTON5_PRESSED
    if (ev.bstate & BUTTON5_PRESSED) {
        if (p->rows) {
            p->sel += 3;
            list_fix_scroll(p, p->rows(t), list_height(t, p));
        }
        return TUI_REDRAW;
    }
#endif
    if (!(ev.bstate & (BUTTON1_CLICKED | BUTTON1_PRESSED | BUTTON1_DOUBLE_CLICKED)))
        return TUI_HANDLED;
    if (ev.y == 0) {
        /* tabs: same widths as draw_tabs */
        int x = 0;
        for (int i = 0; i < TUI_P_COUNT; i++) {
            char lb[32];
            int wdt = tab_label(t, i, lb, sizeof lb);
            if (ev.x >= x && ev.x < x + wdt) {
                tui_switch(t, i);
                break;
            }
            x += wdt;
        }
        return TUI_REDRAW;
    }
    if (p->rows) {
        int row = p->top + ev.y - 1 - (p->header ? 1 : 0);
        if (row >= 0 && row < p->rows(t) && ev.y - 1 - (p->header ? 1 : 0) < list_height(t, p)) {
            p->sel = row;
            if ((ev.bstate & BUTTON1_DOUBLE_CLICKED) && p->key)
                return p->key(t, TUI_A_ENTER) | TUI_REDRAW;
        }
    }
    return TUI_REDRAW;
}

/* Keys that edit or run the shown model: refused while a job owns it
 * (the UI keeps answering the others). */
static bool model_key(const tui *t, tui_action a)
{
    switch (a) {
    case TUI_A_STEP: case TUI_A_STEP_REST: case TUI_A_UNDO: case TUI_A_TOGGLE:
    case TUI_A_RESET: case TUI_A_APPLY_ALL: case TUI_A_LEVEL: case TUI_A_BISECT:
    case TUI_A_EDIT: case TUI_A_CLEAR: case TUI_A_BENCH:
        return true;
    case TUI_A_ENTER:
        return t->cur_panel == TUI_P_PASSES || t->cur_panel == TUI_P_IO;
    default:
        return false;
    }
}

static int handle_key(tui *t, int ch)
{
    if (ch == KEY_MOUSE)
        return handle_mouse(t);
    if (ch == KEY_RESIZE)
        return TUI_REDRAW;
    if (t->prompt)
        return prompt_key(t, ch);
    tui_action a = key_action(ch);
    if (t->help) {
        if (a == TUI_A_QUIT || a == TUI_A_HELP || ch == 27 || a == TUI_A_BACK)
            t->help = false;
        else if (a == TUI_A_DOWN)
            t->help_top++;
        else if (a == TUI_A_UP)
            t->help_top--;
        else if (a == TUI_A_PGDN)
            t->help_top += LINES - 4;
        else if (a == TUI_A_PGUP)
            t->help_top -= LINES - 4;
        return TUI_REDRAW;
    }
    if (a == TUI_A_NONE)
        return TUI_HANDLED;
    t->status[0] = 0;
    if (a == TUI_A_CANCEL && t->job) {
        tui_job_escape(t);
        return TUI_REDRAW;
    }
    if (model_key(t, a))
        tui_bgprobe_settle(t);
    if (model_key(t, a) && tui_job_busy(t, true)) {
        char jb[300];
        tui_job_status(t, jb, sizeof jb);
        tui_set_status(t, OX_SLOT_UI_WARNING, "busy (the model is in use): %s",
                       t->job ? jb : "a cancelled job is still ending");
        return TUI_REDRAW;
    }
    if (a == TUI_A_EXPORT && tui_job_busy(t, false)) {
        tui_set_status(t, OX_SLOT_UI_WARNING, "busy: one job at a time (Esc cancels it)");
        return TUI_REDRAW;
    }
    tui_panel *p = &t->panels[t->cur_panel];
    if (p->key) {
        int r = p->key(t, a);
        if (r)
            return r;
    }
    return global_key(t, a, ch);
}

/* ---- loading ------------------------------------------------------------------------------------ */

typedef struct loader {
    tui *t;
    atomic_int progress;   /* 0..1000 */
    atomic_int phase;      /* 0 load, 1 infer, 2 costs, 3 done */
    ox_status status;
    ox_error err;
    double load_ms, total_ms;
} loader;

static double mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void load_progress(void *ctx, double frac)
{
    loader *l = ctx;
    atomic_store(&l->progress, (int)(frac * 1000));
}

static void *load_main(void *arg)
{
    loader *l = arg;
    tui *t = l->t;
    double t0 = mono_ms();
    ox_load_opts lo = {.progress = load_progress, .progress_ctx = l};
    l->status = ox_load(t->path, &lo, &t->orig, &l->err);
    l->load_ms = mono_ms() - t0;
    if (l->status == OX_OK) {
        atomic_store(&l->phase, 1);
        t->cur = t->orig;
        t->graph = t->orig->graph;
        t->iopts.stats = &t->istats;
        tui_save_input_types(t);
        ox_error ie = {0};
        if (ox_infer_opts_validate(&t->iopts, t->orig, &ie) != OX_OK ||
            (ox_infer_model(t->orig, &t->iopts, &ie) != OX_OK && ie.status == OX_EINVAL)) {
            l->status = ie.status;
            l->err = ie;
        }
        atomic_store(&l->phase, 2);
        if (l->status == OX_OK)
            l->status = tui_model_refresh(t, &l->err);
        if (l->status == OX_OK && t->base_path)
            l->status = tui_compare_load(t, &l->err);
    }
    l->total_ms = mono_ms() - t0;
    atomic_store(&l->phase, 3);
    return NULL;
}

static void draw_loading(tui *t, loader *l)
{
    erase();
    static const char *const phases[] = {"loading", "inferring shapes", "computing costs", "done"};
    /* One bar over the whole opening: the loader's own fraction fills the
     * first 60 %, inference and costs (no finer progress) the rest. */
    static const double start[] = {0.0, 0.6, 0.8, 1.0};
    int ph = atomic_load(&l->phase);
    if (ph < 0 || ph > 3)
        ph = 0;
    double frac = ph == 0 ? start[1] * atomic_load(&l->progress) / 1000.0 : start[ph];
    int y = LINES / 2 - 2;
    int w = COLS - 8 < 70 ? COLS - 8 : 70;
    int x = (COLS - w) / 2;
    tui_putf(y, x, w, OX_SLOT_UI_HEADER, t, "onnxscope: %s", t->path);
    tui_putf(y + 1, x, w, OX_SLOT_UI_NORMAL, t, "%s ...", phases[ph]);
    tui_progress(t, y + 2, x, w, frac);
    tui_put(LINES - 1, 0, COLS, OX_SLOT_UI_DIM, t, "q quits when loading ends");
    refresh();
}

static void draw_error(tui *t, const char *title, const char *msg)
{
    erase();
    int y = LINES / 2 - 3;
    int w = COLS - 4;
    tui_put(y, 2, w, OX_SLOT_UI_ERROR, t, title);
    /* wrap the message */
    const char *p = msg;
    int line = 0;
    while (*p && line < 6) {
        int len = (int)strlen(p);
        int take = len < w ? len : w;
        char buf[512];
        snprintf(buf, sizeof buf, "%.*s", take, p);
        tui_put(y + 2 + line, 2, w, OX_SLOT_UI_NORMAL, t, buf);
        p += take;
        line++;
    }
    tui_put(y + 4 + line, 2, w, OX_SLOT_UI_DIM, t,
            "Check the path, or run `onnxscope check FILE` for details. Press q to quit.");
    refresh();
}

/* ---- options ------------------------------------------------------------------------------------- */

/* Theme lookup: a user theme in $XDG_CONFIG_HOME/onnxscope/themes/NAME.theme
 * (default ~/.config) wins over the shipped ones. */
static void load_theme(tui *t, const char *name, char *warn, size_t wn)
{
    ox_theme_default(&t->theme);
    if (!name)
        name = getenv("ONNXSCOPE_THEME");
    if (!name || !name[0])
        return;
    ox_error err = {0};
    if (!strchr(name, '/') && !strstr(name, ".theme")) {
        char path[1024];
        const char *xdg = getenv("XDG_CONFIG_HOME");
        const char *home = getenv("HOME");
        if (xdg && xdg[0])
            snprintf(path, sizeof path, "%s/onnxscope/themes/%s.theme", xdg, name);
        else if (home)
            snprintf(path, sizeof path, "%s/.config/onnxscope/themes/%s.theme", home, name);
        else
            path[0] = 0;
        if (path[0] && access(path, R_OK) == 0) {
            if (ox_theme_load_file(path, &t->theme, &err) != OX_OK)
                snprintf(warn, wn, "using the default theme: %s", err.msg);
            return;
        }
    }
    if (ox_theme_load(name, &t->theme, &err) != OX_OK)
        snprintf(warn, wn, "using the default theme: %s", err.msg);
}

static void tui_free(tui *t)
{
    tui_bgprobe_quit(t);
    tui_job_quit(t);
    tui_free_model_wait();
    tui_matrix_free(t);
    if (t->bench.running) {
        tui_bench_cancel(t);
        pthread_join(t->bench.thread, NULL);
        t->bench.running = false;
        ox_model_free(t->bench.a);
        ox_model_free(t->bench.b);
    }
    tui_model_free_views(t);
    if (atomic_load(&t->job_bg) > 0) {
        /* An abandoned job (bisect, apply-all) still reads the manager
         * and the models: leave them to the process's exit. */
        if (t->timing)
            fclose(t->timing);
        return;
    }
    tui_compare_free(t);
    tui_passes_free(t);
    tui_free_input_types(t);
    if (t->cur != t->orig)
        ox_model_free(t->cur);
    ox_model_free(t->orig);
    ox_infer_opts_free(&t->iopts);
    ox_input_opts_free(&t->bench_inputs);
    if (t->timing)
        fclose(t->timing);
}

bool ox_tui_available(void)
{
    return true;
}

int ox_tui_run(ox_tui_opts *o)
{
    static tui T;   /* large; static keeps it off the stack */
    tui *t = &T;
    memset(t, 0, sizeof *t);
    int rc = 0;
    t->path = (char *)o->path;
    t->base_path = o->base_path;
    t->iopts = o->shapes;          /* taken over */
    t->bench_inputs = o->inputs;
    memset(&o->shapes, 0, sizeof o->shapes);
    memset(&o->inputs, 0, sizeof o->inputs);
    const char *theme = o->theme;
    bool ascii = o->ascii, nocolor = o->no_color;
    setlocale(LC_ALL, "");
    const char *cs = nl_langinfo(CODESET);
    t->ascii = ascii || !cs || strcmp(cs, "UTF-8") != 0;
    const char *nc = getenv("NO_COLOR");
    t->color = !nocolor && !(nc && nc[0]);
    char warn[600] = "";
    load_theme(t, theme, warn, sizeof warn);
    if (theme && strcmp(theme, "mono") == 0)
        t->color = false;
    const char *tf = getenv("ONNXSCOPE_TUI_TIMING");
    if (tf && tf[0])
        t->timing = fopen(tf, "a");
    const char *bi = getenv("ONNXSCOPE_TUI_BENCH_ITERS");
    t->bench.iters = bi ? atoi(bi) : 50;
    t->bench.warmup = 1;   /* as `onnxscope bench` */
    t->bench.device = (int)o->device;   /* --device (cmd_view.c probed it) */
    tui_panels_init(t);

    if (!initscr()) {
        fprintf(stderr, "onnxscope: cannot initialise the terminal\n");
        ox_infer_opts_free(&t->iopts);
        ox_input_opts_free(&t->bench_inputs);
        return 1;
    }
    /* After initscr, so that ncurses' own handlers (which restore the
     * terminal) are in place to be chained. */
    if (o->on_terminal_ready)
        o->on_terminal_ready();
    set_escdelay(25);
    cbreak();
    noecho();
    keypad(stdscr, TRUE);
    /* Terminals (and tmux) send these whatever TERM's terminfo says; a
     * TERM=xterm or vt100 entry that lacks them would otherwise turn Home
     * into Esc [ 1 ~ and jump to panel 1. */
    static const struct { const char *seq; int key; } extra_keys[] = {
        {"\033[1~", KEY_HOME}, {"\033[4~", KEY_END}, {"\033[H", KEY_HOME},
        {"\033[F", KEY_END}, {"\033OH", KEY_HOME}, {"\033OF", KEY_END},
        {"\033[5~", KEY_PPAGE}, {"\033[6~", KEY_NPAGE}, {"\033[A", KEY_UP},
        {"\033[B", KEY_DOWN}, {"\033[C", KEY_RIGHT}, {"\033[D", KEY_LEFT},
        {"\033OA", KEY_UP}, {"\033OB", KEY_DOWN}, {"\033OC", KEY_RIGHT},
        {"\033OD", KEY_LEFT}, {"\033[Z", KEY_BTAB}, {"\033[3~", KEY_DC},
    };
    for (size_t i = 0; i < sizeof extra_keys / sizeof *extra_keys; i++)
        if (key_defined(extra_keys[i].seq) == 0)
            define_key(extra_keys[i].seq, extra_keys[i].key);
    curs_set(0);
    mousemask(ALL_MOUSE_EVENTS, NULL);
    mouseinterval(200);
    tui_colors_init(t);

    loader l;
    memset(&l, 0, sizeof l);
    l.t = t;
    pthread_t th;
    bool quit_after = false;
    if (pthread_create(&th, NULL, load_main, &l) != 0) {
        endwin();
        fprintf(stderr, "onnxscope: cannot start the loader thread\n");
        return 1;
    }
    timeout(50);
    while (atomic_load(&l.phase) != 3) {
        draw_loading(t, &l);
        int ch = getch();
        if (ch == 'q')
            quit_after = true;
    }
    pthread_join(th, NULL);
    double loaded_at = mono_ms();
    if (t->timing)
        fprintf(t->timing, "load_ms %.1f\n", l.total_ms);
    if (l.status != OX_OK) {
        char title[600];
        snprintf(title, sizeof title, "Cannot open %s: %s", t->path, ox_strerror(l.status));
        timeout(-1);
        while (!quit_after) {
            draw_error(t, title, l.err.msg[0] ? l.err.msg : ox_strerror(l.status));
            int ch = getch();
            if (ch == 'q' || ch == 27 || ch == '\n' || ch == '\r')
                break;
        }
        endwin();
        fprintf(stderr, "onnxscope: %s: %s\n", t->path, l.err.msg[0] ? l.err.msg : ox_strerror(l.status));
        rc = ox_status_exit_code(l.status);
        tui_free(t);
        return rc ? rc : 1;
    }
    tui_passes_init(t);
    if (warn[0])
        tui_set_status(t, OX_SLOT_UI_WARNING, "%s", warn);
    else if (t->istats.unknown_ops)
        tui_set_status(t, OX_SLOT_UI_WARNING, "%d nodes of unknown ops (their outputs are untyped)",
                       t->istats.unknown_ops);
    draw(t);
    refresh();
    if (t->timing) {
        fprintf(t->timing, "first_screen_ms %.2f\n", mono_ms() - loaded_at);
        fflush(t->timing);
    }
    while (!quit_after) {
        /* A large model is probed in a worker when idle (tui_bgprobe.c). */
        if (tui_bgprobe_tick(t)) {
            draw(t);
            refresh();
        }
        /* Idle time finds out which passes have no match (one pass per
         * turn, small models only): a key is never kept waiting longer. */
        bool idle = !t->job && tui_passes_idle_pending(t);
        timeout(idle ? 0 : t->job ? 50 : t->bench.running || tui_bgprobe_running(t) ? 100 : -1);
        int ch = getch();
        double k0 = mono_ms();
        int flags = TUI_REDRAW;
        if (ch != ERR) {
            tui_bgprobe_key(t);
            flags = handle_key(t, ch);
        }
        else if (idle)
            flags = tui_passes_idle(t) ? TUI_REDRAW : 0;
        tui_bench_poll(t);
        double p0 = mono_ms();
        if (tui_job_poll(t)) {
            flags |= TUI_REDRAW;
            /* What a finished job costs the UI thread (its done()). */
            if (t->timing) {
                fprintf(t->timing, "job_done_ms %.1f\n", mono_ms() - p0);
                fflush(t->timing);
            }
        }
        if (flags & TUI_QUIT)
            break;
        if (!(flags & TUI_REDRAW) && ch == ERR && !t->bench.running && !t->job)
            continue;
        draw(t);
        refresh();
        if (t->timing && ch != ERR) {
            tui_action a = key_action(ch);
            fprintf(t->timing, "key %s redraw_ms %.3f\n", action_name(a), mono_ms() - k0);
            fflush(t->timing);
        }
    }
    endwin();
    tui_free(t);
    return rc;
}
