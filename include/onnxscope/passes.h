/* Graph passes and the pass manager. A pass is a standalone unit (name,
 * one-line summary, category, target, level, a run function); the manager
 * holds an ordered list with each pass on or off and runs it to a bounded
 * fixed point, one pass at a time (step) or one rewrite at a time.
 *
 * Typical use (CLI, TUI):
 *     ox_pass_manager *pm = ox_pm_new(OX_LEVEL_BASIC, OX_TARGET_ONNX);
 *     ox_pm_set_infer_opts(pm, &io);          // --shape / --dim (borrowed)
 *     ox_pass_report rep = {0};
 *     st = ox_pm_run(pm, model, &rep, &err);  // edits model in place
 *     ... rep.passes[i].nodes_removed, rep.touched ...
 *     ox_pass_report_free(&rep);
 *     ox_pm_free(pm);
 * The TUI keeps the original model and runs the manager on ox_model_clone(). */
#ifndef ONNXSCOPE_PASSES_H
#define ONNXSCOPE_PASSES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "onnxscope/infer.h"
#include "onnxscope/ir.h"
#include "onnxscope/status.h"

typedef enum {
    OX_PASS_ELIMINATION = 0,
    OX_PASS_FOLDING,
    OX_PASS_FUSION,
    OX_PASS_PRECISION,
    OX_PASS_LAYOUT,
    OX_PASS_CONVERSION,
} ox_pass_category;

typedef enum {
    OX_TARGET_ONNX = 0,   /* emits standard ONNX ops only */
    OX_TARGET_ORT,        /* may emit com.microsoft contrib ops */
} ox_pass_target;

typedef enum {
    OX_LEVEL_BASIC = 0,
    OX_LEVEL_EXTENDED,
    OX_LEVEL_ALL,
} ox_pass_level;

const char *ox_pass_category_name(ox_pass_category c);
const char *ox_pass_target_name(ox_pass_target t);
const char *ox_pass_level_name(ox_pass_level l);
/* Parses "basic"/"extended"/"all" and "onnx"/"ort"; false if unknown. */
bool ox_pass_level_parse(const char *s, ox_pass_level *out);
bool ox_pass_target_parse(const char *s, ox_pass_target *out);

/* What a pass sees while it runs (opaque; the library's passes use
 * src/passes/pass_internal.h). */
typedef struct ox_pass_ctx ox_pass_ctx;
/* For passes outside the library (ox_pm_add_pass): true while the pass may
 * make another rewrite (the step budget is not spent), and recording one
 * rewrite. */
bool ox_pass_ctx_may_rewrite(const ox_pass_ctx *c);
void ox_pass_ctx_rewrote(ox_pass_ctx *c);

/* Runs the pass on ONE graph (the manager visits subgraphs, innermost
 * first); rewrites are counted through the context. */
typedef ox_status (*ox_pass_fn)(ox_pass_ctx *c, ox_graph *g, ox_error *err);

typedef struct ox_pass {
    const char *name;         /* "eliminate_identity" */
    const char *summary;      /* one line */
    ox_pass_category category;
    ox_pass_target target;
    ox_pass_level level;
    bool single_rewrite;      /* honours a budget of one rewrite per step */
    ox_pass_fn run;
    /* Off at every level unless named (--passes, a TUI toggle): a fusion
     * whose result is measured slower on its target runtime. */
    bool opt_in;
} ox_pass;

/* The registry, in default pipeline order. */
int ox_pass_count(void);
const ox_pass *ox_pass_at(int i);
const ox_pass *ox_pass_find(const char *name);

/* What a preset adds, so that front ends can say it (issue 10): the
 * passes enabled at (level, target) but not at the level below with the
 * same target (level_adds), and those enabled at (level, ort) but not at
 * (level, onnx) (target_adds; none for OX_TARGET_ONNX). Fills out with at
 * most max passes (out may be NULL) and returns how many there are. */
int ox_pass_level_adds(ox_pass_level level, ox_pass_target target, const ox_pass **out,
                       int max);
int ox_pass_target_adds(ox_pass_level level, ox_pass_target target, const ox_pass **out,
                        int max);
/* What level/target enable beyond basic/onnx, for front ends to say:
 * adds gets e.g. "--level extended adds 10 passes (fuse_matmul_bn, ...)",
 * none the part of the choice that adds nothing in this combination, and
 * why ("--target ort adds no passes at --level basic (...)"). Each empty
 * when there is nothing to say. */
void ox_pass_preset_note(ox_pass_level level, ox_pass_target target, char *adds, size_t alen,
                         char *none, size_t nlen);

/* ---- reports ---------------------------------------------------------- */

/* Per op type: how many nodes of it a pass removed and added. */
typedef struct ox_pass_op_delta {
    char *op_type;
    int removed, added;
} ox_pass_op_delta;

/* The change made by one pass (summed over every time it ran). */
typedef struct ox_pass_stat {
    const char *name;         /* the pass's static name */
    ox_pass_category category;
    int runs;                 /* times the pass was invoked on the model */
    int rewrites;             /* rewrites it reported */
    int nodes_removed, nodes_added;
    int nodes_replaced;       /* existing nodes edited in place (inputs/attrs) */
    int inits_removed, inits_added;
    int64_t bytes_saved;      /* weight bytes (initializers and Constant
                               * nodes) before - after (may be < 0) */
    ox_pass_op_delta *ops;    /* n_ops entries, owned */
    int n_ops;
    /* Why the pass left a match it found alone (owned; NULL: nothing to
     * say), e.g. "fuse_layernorm not applied: needs opset 17 (model has
     * 13)". The last run's note wins. */
    char *note;
    /* What the pass's rewrites did to the cost model (docs/COST.md), after
     * minus before (< 0: a saving), summed over its invocations. Measured
     * only for invocations that rewrote something: the main-graph nodes
     * it removed, added or edited (a node owning an edited subgraph
     * counts as edited) are costed before and after. Unknown is never 0:
     * cost_known is false as soon as one of those nodes has an unknown
     * cost (unknown dims, no cost rule, an If counted by its larger
     * branch), and then macs_delta/flops_delta mean nothing; likewise
     * peak_known for the peak activation memory (the main graph's memory
     * plan, ox_memplan_build, before or after has a value of unknown
     * size). Weights are what ox_model_cost counts as weights_bytes. */
    int64_t macs_delta, flops_delta;
    bool cost_known;
    int64_t weight_bytes_delta;
    int64_t peak_delta;
    bool peak_known;
} ox_pass_stat;

/* One line a user reads, for a pass that rewrote something:
 *   "fuse_conv_bn: 53 fused, -53 nodes, MACs -1.20M, FLOPs -1.20M,
 *    weights -13.00 KiB, peak -256 B"
 * ("folded", "eliminated" or "rewrites" by category; "?" for an unknown
 * figure). Returns buf. */
const char *ox_pass_stat_line(const ox_pass_stat *s, char *buf, size_t len);
/* A signed delta as that line prints it: "-1.20M", "+640", "0", "?"
 * (bytes: "-13.00 KiB", "+48 B"). */
const char *ox_fmt_delta(int64_t v, bool known, bool bytes, char *buf, size_t len);

typedef struct ox_pass_report {
    ox_pass_stat *passes;     /* one entry per pass that ran, pipeline order */
    int n_passes;
    int iterations;           /* fixed-point rounds run */
    int nodes_before, nodes_after;      /* recursive node counts */
    /* Bytes of weights: initializers and Constant nodes' values (a move
     * between the two changes nothing; bytes_saved likewise). */
    int64_t init_bytes_before, init_bytes_after;
    /* Ids of nodes added or edited (they exist in the result) and of nodes
     * removed (they existed in the input): the TUI marks them. Sorted,
     * without duplicates. */
    int *touched;
    int n_touched;
    int *removed_ids;
    int n_removed_ids;
    /* quantize_dynamic: one entry per weight it quantized, in the order it
     * did them (onnxscope/quantize.h). */
    struct ox_quant_entry *quant;
    int n_quant;
} ox_pass_report;

void ox_pass_report_free(ox_pass_report *r);
/* The stat entry of a pass in r, or NULL. */
const ox_pass_stat *ox_pass_report_find(const ox_pass_report *r, const char *name);

/* ---- the manager ------------------------------------------------------- */

typedef struct ox_pass_manager ox_pass_manager;

/* Every registered pass in registry order; enabled when pass->level <=
 * level, the pass's target is allowed by target (onnx allows onnx
 * passes only, ort allows both) and the pass is not opt_in. Returns NULL
 * on OOM. */
ox_pass_manager *ox_pm_new(ox_pass_level level, ox_pass_target target);
void ox_pm_free(ox_pass_manager *pm);

int ox_pm_count(const ox_pass_manager *pm);
const ox_pass *ox_pm_pass(const ox_pass_manager *pm, int i);
bool ox_pm_enabled(const ox_pass_manager *pm, int i);
void ox_pm_enable(ox_pass_manager *pm, int i, bool on);
/* Adds pass p (borrowed: it must outlive pm) to this manager only, at
 * position pos (< 0 or past the end: last), enabled. For tests (a pass
 * with a deliberate bug for ox_pm_bisect) and embedders; the registry is
 * unchanged. Returns the pass's index, or -1 (no name or run function, a
 * name already in pm, out of memory). */
int ox_pm_add_pass(ox_pass_manager *pm, const ox_pass *p, int pos);
/* Enables exactly the comma-separated passes in list (--passes), or with
 * a leading '+' enables them on top of the current set (opt-in passes);
 * ox_pm_skip disables them (--skip). OX_EINVAL names an unknown pass. */
ox_status ox_pm_only(ox_pass_manager *pm, const char *list, ox_error *err);
ox_status ox_pm_skip(ox_pass_manager *pm, const char *list, ox_error *err);

/* Options of individual passes, by key (copied; value NULL removes one;
 * a later call replaces the value): to_fp16 reads "keep-fp32" (comma-
 * separated op types kept in float32) and "fp16-io" (graph inputs and
 * outputs become float16 too). At most OX_PM_MAX_OPTIONS keys. */
#define OX_PM_MAX_OPTIONS 16
ox_status ox_pm_set_option(ox_pass_manager *pm, const char *key, const char *value,
                           ox_error *err);
/* The option's value, or NULL when unset. */
const char *ox_pm_option(const ox_pass_manager *pm, const char *key);

/* Shape overrides used by the inference the passes rely on (borrowed: it
 * must outlive the runs). NULL = none. */
void ox_pm_set_infer_opts(ox_pass_manager *pm, const ox_infer_opts *io);
/* Most bytes a constant fold may add to the model (default 1 MiB). */
void ox_pm_set_fold_limit(ox_pass_manager *pm, int64_t bytes);
/* Rounds of the fixed point (default 8). */
void ox_pm_set_max_iterations(ox_pass_manager *pm, int n);

/* Runs every enabled pass in order, repeating until a round changes
 * nothing or the round limit is reached. Edits m in place; fills rep
 * (may be NULL; free with ox_pass_report_free). On error m is still a
 * valid model (the failing pass's partial work kept). */
ox_status ox_pm_run(ox_pass_manager *pm, ox_model *m, ox_pass_report *rep,
                    ox_error *err);
/* ox_pm_run calling on_pass(ctx, pass, round) after each pass invocation
 * (pass: its index; round: 0-based), for progress; on_pass returning false
 * stops the run there and it returns OX_ECANCELLED with m partly optimized
 * (a caller that cancels discards it). The TUI runs `a` in a worker thread
 * with this and Esc cancels between passes. */
typedef bool (*ox_pm_pass_fn)(void *ctx, int pass, int round);
ox_status ox_pm_run_cb(ox_pass_manager *pm, ox_model *m, ox_pass_report *rep,
                       ox_pm_pass_fn on_pass, void *ctx, ox_error *err);
/* Runs pass i once over the model (all graphs), enabled or not.
 * max_rewrites > 0 stops after that many rewrites where the pass supports
 * it (ox_pass.single_rewrite), else the pass runs to completion once. */
ox_status ox_pm_step(ox_pass_manager *pm, ox_model *m, int i, int max_rewrites,
                     ox_pass_report *rep, ox_error *err);
/* Rewrites made by the last ox_pm_step, also when it had no report (a
 * report costs the model's snapshots and costs: the TUI's stepper finds
 * passes with no match without one). */
int ox_pm_last_rewrites(const ox_pass_manager *pm);

#endif
