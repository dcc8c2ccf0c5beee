/* Shared state of the terminal UI: the application struct, the Panel
 * abstraction (per-panel draw/key handlers returning flags) and the one key
 * table (X-macro) that drives dispatch, the `?` help screen and docs/TUI.md.
 * Only src/tui uses curses; the engine below knows nothing about it. */
#ifndef ONNXSCOPE_TUI_INTERNAL_H
#define ONNXSCOPE_TUI_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <curses.h>

#include "onnxscope/cost.h"
#include "onnxscope/infer.h"
#include "onnxscope/ir.h"
#include "onnxscope/passes.h"
#include "onnxscope/randinput.h"
#include "onnxscope/theme.h"
#include "tui/tui_filter.h"
#include "tui/tui_job.h"
#include "tui/tui_stepper.h"

/* ---- the key table ------------------------------------------------------
 * X(action, key1, key2, keys shown in help, where, help text)
 * key values: a character, a KEY_* code or a control code; 0 = none.
 * `where` names the panel the binding matters in ("global" for all). */
#define TUI_CTRL(c) ((c) & 0x1f)
#define TUI_KEYMAP(X)                                                              \
    X(HELP, '?', KEY_F(1), "? F1", "global", "show this help")                       \
    X(QUIT, 'q', 0, "q", "global", "quit (closes help/prompt first)")                \
    X(NEXT_PANEL, '\t', 0, "Tab", "global", "next panel")                            \
    X(PREV_PANEL, KEY_BTAB, 0, "S-Tab", "global", "previous panel")                  \
    X(PANEL_1, '1', 0, "1", "global", "Overview")                                    \
    X(PANEL_2, '2', 0, "2", "global", "Nodes")                                       \
    X(PANEL_3, '3', 0, "3", "global", "Node detail")                                 \
    X(PANEL_4, '4', 0, "4", "global", "Initializers")                                \
    X(PANEL_5, '5', 0, "5", "global", "Inputs/Outputs")                              \
    X(PANEL_6, '6', 0, "6", "global", "Neighbourhood")                               \
    X(PANEL_7, '7', 0, "7", "global", "Subgraphs")                                   \
    X(PANEL_8, '8', 0, "8", "global", "Passes")                                      \
    X(PANEL_9, '9', 0, "9", "global", "Diff")                                        \
    X(PANEL_0, '0', 0, "0", "global", "Bench")                                       \
    X(UP, 'k', KEY_UP, "k Up", "global", "move up / scroll up (Diff) / previous setting (Bench)")                                  \
    X(DOWN, 'j', KEY_DOWN, "j Down", "global", "move down / scroll down (Diff) / next setting (Bench)")                          \
    X(LEFT, 'h', KEY_LEFT, "h Left", "global", "move left / previous neighbour / scroll left (Diff) / setting -1 (Bench)")     \
    X(RIGHT, 'l', KEY_RIGHT, "l Right", "global", "move right / next neighbour / scroll right (Diff) / setting +1 (Bench)")     \
    X(PGUP, KEY_PPAGE, TUI_CTRL('b'), "PgUp C-b", "global", "page up")               \
    X(PGDN, KEY_NPAGE, TUI_CTRL('f'), "PgDn C-f", "global", "page down")             \
    X(HOME, KEY_HOME, 'g', "Home g", "global", "first row / setting to its least (Bench)")                          \
    X(END, KEY_END, 'G', "End G", "global", "last row")                              \
    X(ENTER, '\n', KEY_ENTER, "Enter", "global", "open / follow the edge / enter")   \
    X(BACK, KEY_BACKSPACE, 127, "Backspace", "global", "go back")                    \
    X(SEARCH, '/', 0, "/", "global", "search node names, op types and tensor names") \
    X(NEXT_MATCH, 'n', 0, "n", "global", "next match")                               \
    X(PREV_MATCH, 'N', 0, "N", "global", "previous match")                           \
    X(SORT, 'o', 0, "o", "Nodes", "cycle sort: order, MACs, op, name")               \
    X(FILTER, 'f', 0, "f", "Nodes", "filter by op type: Conv,Add or !Constant (empty clears)") \
    X(HIDE_CONST, 'H', 0, "H", "Nodes", "hide / show Constant nodes")                \
    X(GOTO, ':', 0, ":", "global", "go to node by index (:644)")                     \
    X(NEIGH, 'v', 0, "v", "Nodes", "neighbourhood of the selected node")             \
    X(RADIUS_UP, '+', '=', "+", "Neighbourhood", "radius +1 (up to 3 steps around the node)") \
    X(RADIUS_DOWN, '-', 0, "-", "Neighbourhood", "radius -1")                        \
    X(EDIT, 'e', 0, "e", "Inputs/Outputs", "edit an input shape (re-infers)")        \
    X(CLEAR, 'c', 0, "c", "Inputs/Outputs", "clear shape overrides")                 \
    X(TOGGLE, ' ', 0, "Space", "Passes", "toggle the selected pass")                 \
    X(STEP, 's', 0, "s", "global", "step: apply the next single rewrite (passes with no match are skipped)") \
    X(STEP_REST, 'S', 0, "S", "global", "apply the rest of the current pass")        \
    X(UNDO, 'u', 0, "u", "global", "undo the last step, apply-all or reset")         \
    X(NEXT_CHANGED, ']', 0, "]", "global", "next node the last step changed")        \
    X(PREV_CHANGED, '[', 0, "[", "global", "previous node the last step changed")    \
    X(CHANGED_ONLY, 'C', 0, "C", "Nodes", "list only the nodes the last step changed (toggle)") \
    X(RESET, 'r', 0, "r", "Passes", "reset to the original model")                   \
    X(APPLY_ALL, 'a', 0, "a", "Passes", "apply all enabled passes")                  \
    X(LEVEL, 'L', 0, "L", "Passes", "cycle level preset: basic, extended, all")      \
    X(BISECT, 'B', 0, "B", "Passes", "bisect: first pass and rewrite changing the outputs") \
    X(BENCH, 'b', 0, "b", "global", "run the benchmark (Bench panel)")               \
    X(MATRIX, 'm', 0, "m", "global", "run the evaluation matrix: strategies x threads (Bench panel)") \
    X(CANCEL, 27, 0, "Esc", "global", "cancel the running job (export, passes, shapes, benchmark) / close a prompt") \
    X(EXPORT, 'x', 0, "x", "global", "export DOT/SVG/PNG (graph, neighbourhood, diff)") \
    X(WRITE, 'w', 0, "w", "global", "save the (optimized) model")                    \
    X(REDRAW, TUI_CTRL('l'), KEY_RESIZE, "C-l", "global", "redraw the screen")

typedef enum {
    TUI_A_NONE = 0,
#define X(id, k1, k2, keys, where, help) TUI_A_##id,
    TUI_KEYMAP(X)
#undef X
    TUI_A_COUNT
} tui_action;

/* Handler result flags (htop style): handlers never draw on keys. */
enum {
    TUI_UNHANDLED = 0,
    TUI_HANDLED = 1 << 0,
    TUI_REDRAW = 1 << 1,
    TUI_QUIT = 1 << 2,
};

/* ---- panels ---------------------------------------------------------------- */

typedef struct tui tui;

typedef enum {
    TUI_P_OVERVIEW = 0,
    TUI_P_NODES,
    TUI_P_DETAIL,
    TUI_P_INITS,
    TUI_P_IO,
    TUI_P_NEIGH,
    TUI_P_SUBGRAPHS,
    TUI_P_PASSES,
    TUI_P_DIFF,
    TUI_P_BENCH,
    TUI_P_COUNT
} tui_panel_id;

/* A panel: list panels give rows/draw_row and get scrolling, selection,
 * search and the mouse for free; other panels draw themselves. */
typedef struct tui_panel {
    const char *title;       /* tab label */
    int (*rows)(tui *t);                 /* list panels: row count */
    void (*draw_row)(tui *t, int row, int y, int w, bool sel);
    const char *(*header)(tui *t, char *buf, int w); /* column header or NULL */
    bool (*match)(tui *t, int row, const char *q);  /* search */
    void (*draw)(tui *t, int y0, int h, int w);      /* non-list panels */
    int (*key)(tui *t, tui_action a);                /* panel keys first */
    int (*footer_lines)(tui *t);                     /* lines reserved below the list */
    void (*draw_footer)(tui *t, int y0, int h, int w);
    int sel, top;
} tui_panel;

/* ---- colours (semantic slots only) ------------------------------------------ */

typedef struct tui_row_cache {
    ox_node *node;
    int64_t macs;
    bool known;
    bool upper;     /* macs an upper bound (larger If branch) */
} tui_row_cache;

typedef enum { TUI_SORT_ORDER = 0, TUI_SORT_MACS, TUI_SORT_OP, TUI_SORT_NAME, TUI_SORT_COUNT } tui_sort;

/* A line of the node detail view; target is where Enter goes. */
typedef struct tui_line {
    char *text;
    int slot;         /* ox_theme_slot */
    ox_node *target;
    ox_value *value;  /* for value lines (initializer jump) */
} tui_line;

typedef enum { TUI_PROMPT_NONE = 0, TUI_PROMPT_SEARCH, TUI_PROMPT_FILTER, TUI_PROMPT_SHAPE,
               TUI_PROMPT_EXPORT, TUI_PROMPT_SAVE, TUI_PROMPT_CONFIRM,
               TUI_PROMPT_GOTO, TUI_PROMPT_DIMS } tui_prompt_kind;

#define TUI_BENCH_OPS 12

typedef struct tui_bench_result {
    bool done, ok, cancelled;
    int iters;
    double p50, p90, p99, mean, min, max;   /* ms */
    double p50_b, p90_b, p99_b, mean_b;     /* second model when compared */
    bool compared, check_ok;
    double speedup, max_abs_err;
    int threads, warmup;
    /* The per-operator profile of the last model run (the optimized one
     * when compared): its largest operator types, names copied. */
    char ops_of[64];
    struct { char op[48]; int nodes; double ms; } ops[TUI_BENCH_OPS];
    int n_ops, n_ops_all, profile_runs;
    double profile_ms;
    char msg[256];
} tui_bench_result;

struct tui {
    /* model side */
    char *path;
    ox_model *orig;        /* as loaded */
    ox_model *cur;         /* what is shown: orig, or the optimized copy */
    ox_graph *graph;       /* graph being browsed (main or a subgraph body) */
    ox_graph *gstack[32];
    int gdepth;
    ox_model_cost cost;
    ox_infer_opts iopts;   /* shape overrides, re-applied on edit */
    ox_type **in_types;    /* the file's graph input types (overrides rewrite them) */
    int n_in_types;
    ox_infer_stats istats;
    bool shapes_edited;    /* an input shape was edited this session (undo re-infers) */

    /* node list of the current graph */
    tui_row_cache *rc;
    int n_rc;
    int64_t sum_macs;
    /* The shown graph's total as ox_fmt_cost takes it: known, the lower
     * bound of the known part, unknown nodes, upper bound (If). */
    bool sum_known, sum_upper;
    int64_t sum_lower;
    int sum_unknown;
    int *order;            /* filtered, sorted view: indexes into rc */
    int n_order;
    tui_sort sort;
    int *perm[TUI_SORT_COUNT];   /* row order per sort key, computed on refresh */
    bool lazy_sorts;       /* refresh leaves the sort orders to their first use (a step) */
    char filter[128];      /* the op filter as typed (tui_filter.h syntax) */
    tui_filter filt;       /* ... parsed */
    bool hide_const;       /* H: Constant nodes hidden */
    char consumers[256];   /* Enter on an initializer: list the nodes reading it */
    char **ophist;         /* "Conv 12" items, most frequent first (cached) */
    int n_ophist;
    int n_nodes_rec;       /* nodes of the model, subgraphs included */
    int op_w;              /* widest op type of the browsed graph (Nodes column) */
    int name_w;            /* widest node label of the browsed graph */
    int io_name_w;         /* widest graph input/output name (I/O column) */

    /* detail */
    ox_node *detail;
    ox_node *hist[64];
    int n_hist;
    tui_line *lines;
    int n_lines;

    /* neighbourhood */
    ox_node *neigh;
    int neigh_sel;         /* index into producers then consumers */
    int neigh_radius;      /* 1..3 (+/-); 0 reads as 1 */

    /* initializers of the current graph */
    ox_value **inits;
    int n_inits;
    const ox_value *stats_for;
    bool stats_ok;
    double st_min, st_max, st_mean, st_std, st_zero;
    int64_t st_nan, st_inf;

    /* subgraphs: (node, graph) pairs of the current graph */
    ox_node **sg_node;
    ox_graph **sg_graph;
    char **sg_attr;
    int n_sg;

    /* UI */
    tui_panel panels[TUI_P_COUNT];
    int cur_panel;
    bool help;
    int help_top;
    bool ascii, color;
    ox_theme theme;
    int attr[OX_SLOT_COUNT];   /* curses attributes per slot */
    char status[1024];     /* long errors wrap over up to 6 lines */
    int status_slot;
    char search[64];
    tui_prompt_kind prompt;
    tui_prompt_kind confirm_for;
    char pbuf[512];
    int plen;
    char pending_path[512];
    char confirm_msg[160];
    char dims_msg[200];    /* the keep/fix question of a save with shape overrides */
    int export_scope;      /* 0 graph, 1 neighbourhood, 2 diff */

    /* passes: the manager, the stepper (owns cur when it is not orig, the
     * last report, the undo history) and the before/after numbers */
    ox_pass_manager *pm;
    ox_pass_level level;
    bool live;             /* cur = all enabled passes: toggles re-run them */
    tui_stepper st;
    char step_msg[4][160]; /* the last step's removed/added/edited nodes (Diff) */
    int n_step_msg;
    bool changed_only;     /* Nodes lists only the nodes the last action changed */
    ox_model_cost cost_orig;
    int64_t size_cur;      /* serialized size of cur (orig: the file size) */
    bool size_valid;       /* size_cur is computed lazily: serializing 100k nodes takes long */
    struct tui_op_delta *dtab;   /* Diff op table, computed once per change */
    int n_dtab;
    bool dtab_valid;
    int diff_top, diff_left;     /* Diff panel scroll offsets (rows, columns) */
    int diff_rows, diff_cols;    /* its content's extent at the last draw */

    /* bench worker */
    pthread_t bench_thread;
    bool bench_running;
    atomic_int bench_cancel;
    atomic_int bench_progress;   /* 0..1000 */
    atomic_int bench_finished;
    ox_model *bench_a, *bench_b;
    tui_bench_result bench;
    struct tui_matrix *matrix;    /* the Bench panel's Matrix view (tui_matrix.c) */
    int bench_iters, bench_warmup, bench_threads;   /* editable in the panel */
    int bench_sel;                /* the setting the cursor is on (0 runs, 1 warm-up, 2 threads) */
    char saved_name[512];         /* where the optimized model was last saved */
    const ox_model *saved_model;  /* ... and which copy (a later step makes another) */
    ox_input_opts bench_inputs;   /* --input/--fill/--int-max/--default-dim */

    /* the worker-thread job (tui_job.h): NULL when none runs */
    tui_job *job;
    atomic_int job_bg;     /* abandoned model jobs still ending */

    /* timing log */
    FILE *timing;
};

/* tui_draw.c */
void tui_colors_init(tui *t);
int tui_slot_attr(const tui *t, int slot);
/* Writes s at (y,x) clipped to w columns (UTF-8 aware); returns columns used. */
int tui_put(int y, int x, int w, int slot, const tui *t, const char *s);
int tui_putf(int y, int x, int w, int slot, const tui *t, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
void tui_fill(int y, int x, int w, int slot, const tui *t);
void tui_progress(tui *t, int y, int x, int w, double frac);
const char *tui_hline(const tui *t);  /* box-drawing pieces, ASCII in ascii mode */
const char *tui_vline(const tui *t);
const char *tui_corner(const tui *t, int which); /* 0 tl 1 tr 2 bl 3 br 4 tee-down 5 tee-up 6 cross */
int tui_utf8_cols(const char *s);

/* tui_model.c: model-side state derived for the views */
ox_status tui_model_refresh(tui *t, ox_error *err);  /* costs, rows, inits, subgraphs */
void tui_model_resort(tui *t);
void tui_model_free_views(tui *t);
ox_status tui_apply_shape(tui *t, const char *input, const char *shape, ox_error *err);
void tui_clear_shapes(tui *t, ox_error *err);
void tui_reinfer_cur(tui *t);   /* after an undo, with today's shape overrides */
void tui_save_input_types(tui *t);
void tui_free_input_types(tui *t);
const char *tui_node_label(const ox_node *n, char *buf, size_t len);
const char *tui_out_shapes(const ox_node *n, char *buf, size_t len);
const char *tui_value_type(const ox_value *v, char *buf, size_t len);
void tui_detail_build(tui *t);
void tui_goto_node(tui *t, ox_node *n, bool push);
int tui_node_row(tui *t, const ox_node *n); /* position in the order, or -1 */
bool tui_node_visible(tui *t, const ox_node *n); /* passes the filters of the Nodes list */
bool tui_nodes_filtered(const tui *t);        /* any filter of the Nodes list is on */
/* Node n matches search q by op type, name, an output tensor's name or the
 * name of an input no node of its graph produces (then *tensor names it). */
bool tui_node_match(const ox_node *n, const char *q, const char **tensor);
void tui_nodes_clear_filters(tui *t);
void tui_compute_stats(tui *t, const ox_value *v);

/* tui_passes.c */
void tui_passes_init(tui *t);
void tui_passes_free(tui *t);
bool tui_node_touched(const tui *t, const ox_node *n);
int tui_node_mark(const tui *t, const ox_node *n);   /* '+' added, '*' edited, 0 */
bool tui_passes_idle_pending(tui *t);
bool tui_passes_idle(tui *t);                          /* one probe; true: redraw */
int tui_passes_key(tui *t, tui_action a);
int tui_passes_rows(tui *t);
void tui_passes_draw_row(tui *t, int row, int y, int w, bool sel);
const char *tui_passes_header(tui *t, char *buf, int w);
bool tui_passes_match(tui *t, int row, const char *q);
int tui_passes_footer_lines(tui *t);
void tui_passes_footer(tui *t, int y0, int h, int w);
void tui_diff_draw(tui *t, int y0, int h, int w);
int tui_diff_scroll(tui *t, tui_action a, int h);

/* tui_panels.c */
void tui_panels_init(tui *t);

/* tui_bench.c */
void tui_bench_start(tui *t);
void tui_bench_cancel(tui *t);
void tui_bench_poll(tui *t);
void tui_bench_draw(tui *t, int y0, int h, int w);
int tui_bench_key(tui *t, tui_action a);

/* tui_matrix.c: the Bench panel's Matrix view */
void tui_matrix_start(tui *t);
void tui_matrix_hide(tui *t);
bool tui_matrix_draw(tui *t, int y0, int h, int w);
void tui_matrix_free(tui *t);

/* tui_main.c */
void tui_set_status(tui *t, int slot, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void tui_switch(tui *t, int panel);
void tui_prompt_open(tui *t, tui_prompt_kind k, const char *initial);

#endif
