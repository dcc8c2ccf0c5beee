/* Benchmarking: times a model (and optionally a second one, usually its
 * optimized copy) on given or seeded random inputs, reports latency percentiles,
 * throughput and peak memory, and checks that both produce the same outputs.
 * UI-free: `onnxscope bench` and the TUI's Bench panel (worker thread) share it.
 *
 * Typical use:
 *     ox_bench_config cfg;
 *     ox_bench_config_init(&cfg);          // defaults: 1 warm-up, 50 iters, seed 1
 *     cfg.model = m; cfg.compare = opt; cfg.threads = 2;
 *     cfg.progress = my_cb; cfg.user = me; cfg.cancel = &flag;
 *     ox_bench_result r = {0};
 *     st = ox_bench_run(&cfg, &r, &err);  // OX_ECANCELLED when flag was set
 *     ... r.a.p50, r.b.p50, r.speedup, r.check.max_abs_err, r.check.ok ...
 *     ox_bench_result_free(&r);
 */
#ifndef ONNXSCOPE_BENCH_H
#define ONNXSCOPE_BENCH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "onnxscope/exec.h"
#include "onnxscope/infer.h"
#include "onnxscope/ir.h"
#include "onnxscope/status.h"

/* Progress: which = 0 for the model, 1 for the compare model; done timed or
 * warm-up runs out of total for that model (total may shrink when a time
 * budget stops it early). fraction is the whole job's progress in [0, 1].
 * Called from the thread running ox_bench_run. */
typedef void (*ox_bench_progress_fn)(void *user, int which, int done, int total,
                                     double fraction);

typedef struct ox_bench_config {
    ox_model *model;          /* required (borrowed; inference may update types) */
    ox_model *compare;        /* optional second model, same inputs (borrowed) */
    int threads;              /* executor threads; 0 = number of cores */
    int warmup;               /* untimed runs first (>= 0) */
    int iters;                /* timed runs (>= 1) */
    double time_budget_s;     /* > 0: stop timing a model after this long (at
                               * least one timed run); 0 = always run iters */
    const ox_infer_opts *shapes;  /* --shape / --dim overrides, may be NULL (borrowed) */
    uint32_t seed;            /* random inputs (randinput.h) */
    const struct ox_input_opts *inputs;  /* --input/--fill/--int-max/--default-dim
                               * (borrowed; its shapes are ignored for
                               * cfg->shapes); NULL: all inputs random,
                               * unknown dims an error */
    double rtol, atol;        /* equivalence: |b-a| <= atol + rtol*|a| per element */
    ox_bench_progress_fn progress;  /* optional */
    void *user;
    atomic_int *cancel;       /* optional: non-zero stops the run in progress
                               * (between nodes and Loop/Scan iterations) */
    int64_t max_memory;       /* executor memory ceiling (ox_exec_opts) */
    double timeout_s;         /* > 0: the whole benchmark (each call) stops
                               * with OX_ETIMEDOUT after this long */
    int profile_runs;         /* > 0: after the timed runs, this many more runs
                               * with per-node timing (untimed for the
                               * latency figures) fill ox_bench_stats.ops;
                               * 0 (the default) skips them */
    ox_device device;         /* OX_DEVICE_CUDA: executors run on the GPU
                               * (ox_exec_opts.device); every model of the
                               * benchmark on the same device */
    /* Optional (matrix, issue 16): model's n_outputs slots that receive the
     * outputs of its first run (the caller frees them with ox_rval_free),
     * for accuracy figures beyond the equivalence check. Ignored with
     * compare. */
    ox_rval **outputs;
    bool fp16;                /* --precision fp16 (ox_exec_opts.fp16; CUDA only) */
} ox_bench_config;

/* Time of one operator type over a run (main-graph nodes: an If/Loop/Scan
 * counts its body's time as its own). */
typedef struct ox_bench_op {
    const char *op_type;      /* borrowed from the model */
    const char *domain;       /* "" for the default domain (borrowed) */
    int nodes;                /* main-graph nodes of this type */
    double ms;                /* its fastest time over the profiled runs */
} ox_bench_op;

typedef struct ox_bench_stats {
    int iters;                /* timed runs done */
    double *latency_ms;       /* iters entries in run order (owned by the result) */
    double min, p50, p90, p99, max, mean;   /* ms; nearest-rank percentiles */
    double throughput_per_s;  /* 1000 / mean */
    int64_t peak_rss_bytes;   /* process peak resident set while this model ran
                               * (reset before it where Linux allows); 0 unknown */
    /* The cost model's FLOPs of one run (cost.h) and flops / p50 in GFLOP/s;
     * both < 0 when the cost model does not know every node's FLOPs (or only
     * an upper bound, an If counted by its larger branch). */
    double flops, gflops;
    /* With cfg->profile_runs: time per operator type (its minimum over the
     * profiled runs), largest first (owned;
     * the sum of ms is at most profile_ms, the rest being the executor's
     * own time between nodes). */
    ox_bench_op *ops;
    int n_ops;
    int profile_runs;         /* profiled runs done */
    double profile_ms;        /* the fastest profiled run's wall time */
    /* Placement of the last timed run (ox_exec_stats): main-graph nodes and
     * cost-model FLOPs per device (index ox_device), transfers per run. */
    int nodes_on[2];
    int64_t flops_on[2];
    int64_t h2d_copies, d2h_copies;
    /* CUDA Graph use and plan figures of the last timed run (ox_exec_stats). */
    int cuda_graph;
    char cuda_graph_note[160];
    int fp16_nodes, epilogue_nodes, flash_nodes;
    int float16_nodes;      /* ox_exec_stats.float16_nodes */
    int plan_shape_nodes;   /* ox_exec_stats.plan_shape_nodes */
} ox_bench_stats;

typedef struct ox_bench_check {
    double max_abs_err;       /* over all elements of all outputs */
    double max_rel_err;       /* |b-a| / |a| over elements with a != 0 */
    bool ok;                  /* every element within atol + rtol*|a|, and the
                               * outputs agree in count, kind, dtype and shape */
    char why[256];            /* first mismatch when !ok */
} ox_bench_check;

typedef struct ox_bench_result {
    int threads;              /* threads the executor used (0 resolved to the
                               * number of online CPUs, as the pool does) */
    int warmup;
    ox_bench_stats a;         /* model */
    ox_bench_stats b;         /* compare model, when compared */
    bool compared;
    double speedup;           /* a.p50 / b.p50 (> 1: the compare model is faster) */
    double speedup_min;       /* a.min / b.min: steadier on a busy machine */
    ox_bench_check check;     /* valid when compared */
    bool cancelled;
} ox_bench_result;

/* Defaults: threads 0, warmup 1, iters 50, seed 1, rtol 1e-3,
 * atol 1e-4, no budget, no callbacks. */
void ox_bench_config_init(ox_bench_config *cfg);

/* Runs the benchmark. On OX_OK r is complete; on OX_ECANCELLED r->cancelled
 * is set and r holds what was measured so far (free it all the same); on
 * other errors err says which model failed. Thread-safe for distinct configs
 * and models. Free r with ox_bench_result_free. */
ox_status ox_bench_run(const ox_bench_config *cfg, ox_bench_result *r, ox_error *err);
void ox_bench_result_free(ox_bench_result *r);

/* Fills min/p50/p90/p99/max/mean/throughput from s->latency_ms[0..iters). */
void ox_bench_stats_compute(ox_bench_stats *s);

/* The equivalence check's tolerance for lossless rewrites (float rounding):
 * `optimize --check`, `--bisect` and the matrix's lossless rows. */
#define OX_CHECK_RTOL 1e-4
#define OX_CHECK_ATOL 1e-5

/* The floor of the equivalence check for float16 and bfloat16 outputs:
 * each reordered operation (a BatchNorm folded into float16 weights) rounds
 * to 11 (8) significant bits, so the lossless 1e-4 / 1e-5 fails every
 * optimized float16 model; they get to_fp16's tolerance instead, bfloat16
 * four times it (docs/CLI.md "optimize --check"). */
#define OX_CHECK_HALF_RTOL 1e-2
#define OX_CHECK_HALF_ATOL 1e-3

/* The tolerance to judge an output with whose element types are a and b
 * (the two sides; equal unless --fp16-io): *rtol / *atol raised to the
 * float16 (bfloat16) floor when either side is float16 (bfloat16), else
 * left alone. The one place `optimize --check`, `--bisect` and `matrix`
 * take it from; a caller whose user gave --rtol/--atol does not call it. */
void ox_check_tolerance(ox_dtype a, ox_dtype b, double *rtol, double *atol);

/* Compares two output lists as the equivalence check does (a is the
 * reference); n outputs each, entries may be NULL. half_floor: each output
 * is judged with ox_check_tolerance(its dtypes) from rtol/atol; false:
 * rtol/atol exactly (user-given values, bench --compare). */
void ox_bench_compare_outputs(int n, ox_rval *const *a, ox_rval *const *b,
                              double rtol, double atol, bool half_floor,
                              ox_bench_check *out);

/* Runs cfg->model once (after cfg->warmup untimed runs) with the executor's
 * per-node hook and writes a Chrome trace-event JSON (chrome://tracing,
 * Perfetto) of per-node timings to path. OX_EIO when path can't be written. */
ox_status ox_bench_trace(const ox_bench_config *cfg, const char *path, ox_error *err);

#endif
