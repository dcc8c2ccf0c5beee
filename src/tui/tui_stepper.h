/* The fusion stepper behind the Passes panel: applies the enabled passes to
 * the optimized copy one rewrite at a time (or the rest of a pass), skips
 * passes that have nothing to rewrite, keeps a bounded undo history and the
 * per-pass totals since the last reset. No curses here: the TUI glue is in
 * tui_passes.c and tests/tui/test_tui_stepper.c drives this on its own.
 *
 * The stepper owns `cur` (the model the panels show: the original, or a
 * private copy edited by the passes) and the report of the last action. */
#ifndef ONNXSCOPE_TUI_STEPPER_H
#define ONNXSCOPE_TUI_STEPPER_H

#include <stdbool.h>
#include <stdint.h>

#include "onnxscope/ir.h"
#include "onnxscope/passes.h"

/* What one pass did since the last reset (steps and apply-all summed). */
typedef struct tui_pass_total {
    int runs, rewrites;
    int nodes_removed, nodes_added, nodes_edited;
    int inits_removed, inits_added;
    int64_t bytes_saved;
    /* The report's cost deltas (after - before, < 0 a saving), summed; an
     * unknown one in any run makes the sum unknown (ox_pass_stat). */
    int64_t macs_delta, peak_delta;
    bool macs_unknown, peak_unknown;
} tui_pass_total;

/* What the last step did (for the status line). */
typedef struct tui_step_info {
    int pass;              /* index of the pass that rewrote; -1 when none did */
    int first, last;       /* its rewrite numbers since the reset (1-based) */
    bool whole;            /* the rest of the pass ran (S) */
    bool no_single;        /* `s` ran the whole pass: it cannot stop after one rewrite */
    int n_skipped;         /* passes found to have no match on the way */
    int skipped[8];        /* the first of them */
    bool none_enabled;
    bool fixed_point;      /* every enabled pass was tried: none had a match */
    bool wrapped;          /* the search went past the last pass to the first */
    bool stopped;          /* on_try asked to stop before a match was found */
    int tried;             /* passes run in this search (not counting known no-match) */
} tui_step_info;

typedef struct tui_undo_entry {
    ox_model *model;       /* cur before the action; NULL = the original */
    ox_pass_report rep;
    bool have_rep;
    tui_pass_total *totals;
    int *nth;
    int cur_pass, round, before_next_id, steps;
    bool from_orig;
    char label[128];
    int nodes;             /* of model, for the memory bound */
} tui_undo_entry;

typedef struct tui_stepper {
    ox_model *orig;        /* borrowed */
    ox_model *cur;         /* orig, or an owned copy */
    int n_passes;          /* the registry's size (every preset lists all) + room for added ones */
    int cur_pass;          /* where `s` looks first */
    int round;             /* times the search wrapped from the last pass to the first */
    unsigned version;      /* bumped whenever cur changes */
    /* Per pass, what is known about it on cur: matches[i] is valid when
     * known[i] == version + 1 (a later change makes it unknown again). */
    unsigned *known;
    bool *matches;
    int *nth;              /* rewrites of each pass since the reset */
    tui_pass_total *totals;
    bool have_totals;
    ox_pass_report rep;    /* of the last action */
    bool have_rep;
    int before_next_id;    /* cur's next_node_id before the last action: newer ids are new nodes */
    bool from_orig;        /* the last action started from the original (apply all) */
    char label[128];       /* "step 3: fuse_conv_bn #2", "all enabled passes (2 rounds)" */
    int steps;             /* actions since the reset */
    /* Undo: the newest entry last. At most max_undo entries holding at most
     * max_undo_nodes nodes in all (the newest is always kept). */
    tui_undo_entry *undo;
    int n_undo, cap_undo;
    int max_undo;
    int64_t max_undo_nodes;
    int undo_dropped;      /* entries dropped for the bound since the reset */
    /* Idle probing: a private copy of cur on which passes are tried to learn
     * which have no match; only while cur has at most probe_max_nodes nodes. */
    ox_model *probe;
    unsigned probe_version;
    int probe_k;           /* passes looked at since the version changed */
    int probe_max_nodes;
    int cur_nodes;         /* of cur, counted once per change (the probe test runs every turn) */
    int last_pass;         /* pass of the last step (-1: none): likely to match again */
    /* Frees the probe's copy when the model changes (NULL: ox_model_free);
     * the TUI frees a large one in a thread. */
    void (*free_model)(ox_model *m);
} tui_stepper;

/* orig is borrowed and must outlive the stepper. */
void tui_stepper_init(tui_stepper *s, ox_model *orig);
void tui_stepper_free(tui_stepper *s);

/* `s` (rest = false): one rewrite of the current pass, or the next enabled
 * pass that has a match; `S` (rest = true): the rest of that pass, then the
 * stepper moves to the next pass. cur is replaced by a new copy on success
 * (the old one goes to the undo history). A failing pass leaves cur as it
 * was. */
ox_status tui_stepper_step(tui_stepper *s, ox_pass_manager *pm, bool rest,
                           tui_step_info *info, ox_error *err);
/* The same, calling on_try before each pass it tries (tried: passes tried
 * so far in this search): returning false stops the search there, with
 * info->stopped set and cur unchanged (what was learnt is kept). On a
 * 100k-node model one try takes ~0.1-0.2 s: the TUI shows progress and
 * lets Esc stop a long search. */
typedef bool (*tui_step_try_fn)(void *ctx, int pass, int tried);
ox_status tui_stepper_step_cb(tui_stepper *s, ox_pass_manager *pm, bool rest,
                              tui_step_try_fn on_try, void *ctx, tui_step_info *info,
                              ox_error *err);
/* A step in three parts, for a worker thread: begin (the UI thread)
 * copies what the search needs from the stepper (and takes the idle
 * probe's copy); run touches only q, its copies and the manager (nothing
 * else may use pm or change the stepper meanwhile, but cur may be read);
 * end (the UI thread) keeps what was learnt and commits the rewrite, as
 * tui_stepper_step_cb, which is the three in a row. search_free discards
 * a search (cancelled). */
typedef struct tui_step_search {
    ox_pass_manager *pm;
    const ox_model *src;   /* cur at begin */
    bool rest, big;
    int n, start, last_pass;
    unsigned version;
    signed char *state;    /* per pass: -1 unknown, 0 no match, 1 match */
    bool *learnt;          /* state found by this search */
    bool *enabled;
    ox_model *work;        /* the copy the passes run on */
    tui_step_info info;
    ox_status st;
    ox_error err;
    ox_pass_report rep;    /* of the rewriting pass */
    bool have_rep;
    int rewrites;
} tui_step_search;
ox_status tui_stepper_search_begin(tui_stepper *s, ox_pass_manager *pm, bool rest,
                                   tui_step_search *q, ox_error *err);
void tui_stepper_search_run(tui_step_search *q, tui_step_try_fn on_try, void *ctx);
ox_status tui_stepper_search_end(tui_stepper *s, tui_step_search *q, tui_step_info *info,
                                 ox_error *err);
void tui_stepper_search_free(tui_step_search *q);
/* Runs every enabled pass on a copy of the original to a fixed point. The
 * model is kept even when a pass fails (err says which). */
ox_status tui_stepper_apply_all(tui_stepper *s, ox_pass_manager *pm, ox_error *err);
/* Its second half: installs m, a copy of the original the enabled passes
 * ran on (in a worker thread), with their report (moved into s). */
void tui_stepper_apply_all_commit(tui_stepper *s, ox_pass_manager *pm, ox_model *m,
                                  ox_pass_report *rep);
/* Back to the original (undoable). False when already there with no history. */
bool tui_stepper_reset(tui_stepper *s);
/* Undoes the last step, apply-all or reset. False when the history is empty. */
bool tui_stepper_undo(tui_stepper *s);
/* The same, handing the copy it drops to *dropped (NULL when none) instead
 * of freeing it: freeing 100k nodes takes ~0.3 s, which the TUI does in a
 * thread of its own. */
bool tui_stepper_undo_keep(tui_stepper *s, ox_model **dropped);
/* The model an undo would show (NULL when the history is empty). */
ox_model *tui_stepper_undo_target(const tui_stepper *s);
/* cur was edited outside the stepper (input shapes re-inferred). */
void tui_stepper_touch(tui_stepper *s);

/* 1: the pass has a match on cur, 0: it has none, -1: not known yet. */
int tui_stepper_match(const tui_stepper *s, int pass);
/* Whether an idle probe has work left, and doing one (tries one pass on a
 * private copy). Returns true when it learnt something. */
bool tui_stepper_probe_pending(const tui_stepper *s, const ox_pass_manager *pm);
bool tui_stepper_probe_one(tui_stepper *s, ox_pass_manager *pm);

/* How the last action changed node n of cur: '+' added, '*' edited, 0 not. */
int tui_stepper_mark(const tui_stepper *s, const ox_node *n);
/* The node of `model` with this id (main graph and bodies), or NULL. */
ox_node *tui_stepper_find_id(const ox_model *model, int id);
/* The model as it was before the last action (the original when none). */
const ox_model *tui_stepper_before(const tui_stepper *s);

#endif
