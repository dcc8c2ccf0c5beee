/* The evaluation matrix (issue 16): every optimization strategy of a model
 * side by side, over thread counts, batch sizes and devices. For each
 * strategy it optimizes a copy of the model in memory, then for each
 * (threads, batch, device) it times it with the benchmark library (bench.h:
 * the same measurement as `onnxscope bench`), and compares its outputs with
 * the original model's on the same inputs. UI-free: `onnxscope matrix` and
 * the TUI's Matrix view (worker thread) share it.
 *
 * Typical use:
 *     ox_matrix_config cfg; ox_matrix_config_init(&cfg);
 *     cfg.model = m; ox_matrix_parse_strategies("original,basic,fp16", &cfg, &err);
 *     ox_matrix mx = {0};
 *     st = ox_matrix_run(&cfg, &mx, &err);   // OX_ECANCELLED: mx holds a partial table
 *     ... mx.rows[i].p50, mx.rows[i].cosine, mx.recommended, mx.notes ...
 *     ox_matrix_free(&mx); ox_matrix_config_free(&cfg);
 */
#ifndef ONNXSCOPE_MATRIX_H
#define ONNXSCOPE_MATRIX_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "onnxscope/infer.h"
#include "onnxscope/ir.h"
#include "onnxscope/passes.h"
#include "onnxscope/randinput.h"
#include "onnxscope/status.h"

#define OX_MATRIX_MAX_LIST 16   /* entries of --threads / --batch / --device */

/* One strategy: "original" (no passes), a level ("basic", "extended",
 * "all", optionally "@ort" for the target), a pass name, or a precision
 * alias ("fp16" = to_fp16, "int8" = quantize_dynamic); then "+name" for
 * more passes on top ("all+fp16"). */
typedef struct ox_matrix_strategy {
    char *label;              /* as the user wrote it (owned) */
    bool original;            /* no passes at all */
    bool has_level;           /* the first item is a level */
    ox_pass_level level;
    ox_pass_target target;
    char *passes;             /* the passes named (aliases resolved), comma-
                               * separated, or NULL (owned) */
    char *missing;            /* a pass an alias names that this build lacks
                               * (owned; NULL when all are there) */
} ox_matrix_strategy;

typedef enum {
    OX_MATRIX_OK = 0,
    OX_MATRIX_FAILED,         /* optimizing or running failed: reason says why */
    OX_MATRIX_UNAVAILABLE,    /* a pass of the strategy is not in this build */
    OX_MATRIX_FIXED_BATCH,    /* the model's batch dim cannot take this batch */
    OX_MATRIX_NO_DEVICE,      /* bench cannot run on that device here */
    OX_MATRIX_CANCELLED,      /* not measured: the sweep was interrupted */
} ox_matrix_status;

const char *ox_matrix_status_name(ox_matrix_status s);

/* Accuracy of one output against the original's. */
typedef struct ox_matrix_out_acc {
    char *name;               /* owned */
    double max_abs_err, max_rel_err;
    double cosine;            /* NAN: not a float output or all zero */
    double snr_db;            /* INFINITY when identical; NAN when not float */
} ox_matrix_out_acc;

typedef struct ox_matrix_row {
    int strategy;             /* index into cfg->strategies */
    int threads, batch;       /* batch 0: the model's own (no --batch) */
    char device[16];
    ox_matrix_status status;
    char reason[256];         /* why, when status != OK */
    int nodes;                /* main-graph nodes after optimization */
    int iters;
    double p50, p90, min, mean;   /* ms */
    double runs_per_s, samples_per_s;
    int64_t weights_bytes;    /* cost model, after optimization */
    int64_t arena_bytes;      /* activation arena of the memory plan; -1 unknown */
    int64_t peak_rss_bytes;   /* process high-water mark while it ran; 0 unknown */
    double flops, gflops;     /* < 0 unknown (as bench.h) */
    int64_t bytes_moved;      /* cost model bytes read + written; -1 unknown */
    double peak_gflops;       /* the calibrated peak at these threads; 0 unknown */
    double utilization;       /* gflops / peak_gflops; < 0 unknown */
    double speedup;           /* p50 of original / p50 here, same threads,
                               * batch, device; 0 unknown */
    /* Against the original at the same threads, batch and device. */
    bool acc_known;
    bool acc_mismatch;        /* outputs differ in count, type or shape */
    bool within_check;        /* every element within `optimize --check`'s
                               * tolerance (1e-5 + 1e-4 * |original|; a
                               * float16 output 1e-3 + 1e-2 * |original|,
                               * ox_check_tolerance): lossless up to float
                               * rounding */
    double max_abs_err, max_rel_err;
    double cosine;            /* smallest over the float outputs (NAN: none) */
    double snr_db;            /* smallest over the float outputs */
    ox_matrix_out_acc *outputs;
    int n_outputs;
} ox_matrix_row;

/* Progress: row done (0-based) of total, about to be measured (done ==
 * index of the row starting) with a short description. Called from the
 * thread running ox_matrix_run. */
typedef void (*ox_matrix_progress_fn)(void *user, int row, int total, const char *what);
/* Called after each row is filled (measured or not). */
typedef void (*ox_matrix_row_fn)(void *user, const ox_matrix_row *row);

typedef struct ox_matrix_config {
    ox_model *model;          /* required (borrowed; never modified) */
    ox_matrix_strategy *strategies;   /* owned (ox_matrix_parse_strategies) */
    int n_strategies;
    int threads[OX_MATRIX_MAX_LIST], n_threads;   /* default {1} */
    int batches[OX_MATRIX_MAX_LIST], n_batches;   /* default {0}: as the model */
    char devices[OX_MATRIX_MAX_LIST][16];
    int n_devices;                                /* default {"cpu"} */
    int warmup, iters;        /* per row (defaults 1, 20) */
    double time_budget_s;     /* > 0: a row stops timing after this long (at
                               * least 3 runs; bench.h's time_budget_s) */
    uint32_t seed;
    const ox_infer_opts *shapes;        /* --shape/--dim (borrowed, may be NULL) */
    const ox_input_opts *inputs;        /* --input/--fill ... (borrowed, may be NULL) */
    int64_t max_memory;
    double max_error;         /* accuracy budget: max abs err (< 0: none) */
    double min_cosine;        /* accuracy budget (default 0.999) */
    bool recalibrate;         /* measure the peak again (bench --no-cache) */
    atomic_int *cancel;       /* optional */
    ox_matrix_progress_fn progress;
    ox_matrix_row_fn on_row;
    void *user;
} ox_matrix_config;

void ox_matrix_config_init(ox_matrix_config *cfg);
void ox_matrix_config_free(ox_matrix_config *cfg);   /* the strategies */

/* Parses a comma-separated strategy list into cfg->strategies (replacing
 * them). OX_EINVAL naming the item for an unknown level, target or pass;
 * an alias whose pass is missing is not an error (its rows say so). */
ox_status ox_matrix_parse_strategies(const char *list, ox_matrix_config *cfg, ox_error *err);
/* The default list: original, basic, extended, all, fp16, int8. */
extern const char *const ox_matrix_default_strategies;

typedef struct ox_matrix {
    ox_matrix_row *rows;      /* strategy-major, then batch, threads, device */
    int n_rows;               /* rows filled (all of them unless cancelled) */
    int total;                /* rows planned */
    bool cancelled;
    int recommended;          /* index of the recommended row, -1 none */
    int best_throughput;      /* index of the row with most samples/s within
                               * the budget, -1 none */
    char **notes;             /* tuning notes, one line each (owned) */
    int n_notes;
    char recommendation[512]; /* the recommendation line ("" none) */
} ox_matrix;

/* Runs the whole sweep. OX_OK: every row filled (a row may still be
 * FAILED/UNAVAILABLE...); OX_ECANCELLED: cfg->cancel was set, the rows
 * not measured are CANCELLED and the table (and recommendation) covers
 * the rest. Other errors: bad config or out of memory. */
ox_status ox_matrix_run(const ox_matrix_config *cfg, ox_matrix *mx, ox_error *err);
/* Recomputes the recommendation and notes from the rows (ox_matrix_run
 * calls it; exposed for front ends that change the budget). */
void ox_matrix_summarize(const ox_matrix_config *cfg, ox_matrix *mx);
void ox_matrix_free(ox_matrix *mx);

/* The overrides a row at batch runs with: user's (may be NULL) plus every
 * graph input's first dim set to batch (its symbol through a --dim, an
 * unnamed unknown first dim through a --shape; a first dim the model fixes
 * to a number is left alone: such a model has a fixed batch); batch <= 0
 * copies user's. *n_resized: inputs resized. Free with ox_infer_opts_free. */
ox_status ox_matrix_batch_opts(const ox_model *m, const ox_infer_opts *user, int batch,
                               ox_infer_opts *out, int *n_resized, ox_error *err);

#endif
