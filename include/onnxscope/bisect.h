/* Finding the pass that breaks a model: when the optimized model computes
 * differently from the original (`optimize --check N --bisect`),
 * ox_pm_bisect replays the pipeline exactly as ox_pm_run runs it, runs the
 * model after every pass invocation that rewrote something on the input
 * sets of --check, and stops at the first whose outputs leave the
 * tolerance. It then replays the pipeline up to that invocation and steps
 * the pass one rewrite at a time (passes with single_rewrite) to name the
 * first rewrite after which the outputs diverge, and the nodes that
 * rewrite removed, added or edited. The model is never modified. */
#ifndef ONNXSCOPE_BISECT_H
#define ONNXSCOPE_BISECT_H

#include <stdbool.h>
#include <stdint.h>

#include "onnxscope/passes.h"
#include "onnxscope/randinput.h"

typedef struct ox_bisect_opts {
    const ox_input_opts *inputs;  /* --input/--fill/...; NULL: all random */
    int n_sets;                   /* input sets, seeds 0..n_sets-1 (< 1: 1) */
    double rtol, atol;            /* both 0: 1e-4 / 1e-5 with the float16
                                   * floor, as optimize --check */
    bool half_floor;              /* float16/bfloat16 outputs judged with
                                   * ox_check_tolerance (bench.h) */
    int64_t max_memory;           /* executor ceiling; 0: its default */
} ox_bisect_opts;

typedef enum {
    OX_BISECT_REMOVED = 0,        /* existed before the rewrite */
    OX_BISECT_ADDED,              /* created by it */
    OX_BISECT_EDITED,             /* inputs, outputs or attributes changed */
} ox_bisect_change;

typedef struct ox_bisect_node {
    int id;
    char *name;                   /* "" when the node has none */
    char *op_type;
    ox_bisect_change change;
    bool in_subgraph;             /* not in the main graph */
} ox_bisect_node;

typedef struct ox_bisect_result {
    bool found;                   /* a diverging pass invocation was found */
    const char *pass;             /* its name (the pass's static string) */
    int pass_index;               /* in the manager */
    int round;                    /* 1-based round of the pipeline */
    int pass_rewrites;            /* rewrites of that invocation */
    /* 1-based index of the first rewrite of that invocation after which
     * the outputs diverge; 0 when the pass cannot step one rewrite at a
     * time, or no single step diverged (then nodes lists the whole
     * invocation's changes, or nothing). */
    int rewrite;
    double max_abs_err, max_rel_err;  /* of the first diverging model */
    char why[256];                /* its first mismatch; or why nothing was found */
    ox_bisect_node *nodes;        /* what that rewrite touched, ids ascending
                                   * within removed, then added/edited */
    int n_nodes;
    int models_checked;           /* candidate models run */
} ox_bisect_result;

/* m: the original model (not modified); pm: the pipeline to replay (its
 * passes, levels, overrides). OX_OK with out->found false when every
 * intermediate model agrees. Errors: the original fails on the inputs
 * (the message says so), inputs that cannot be made (ox_inputs_make's
 * statuses), out of memory, a pass failing. Free out with
 * ox_bisect_result_free. */
ox_status ox_pm_bisect(ox_pass_manager *pm, const ox_model *m, const ox_bisect_opts *opts,
                       ox_bisect_result *out, ox_error *err);
void ox_bisect_result_free(ox_bisect_result *r);
/* "removed", "added", "edited". */
const char *ox_bisect_change_name(ox_bisect_change c);

#endif
