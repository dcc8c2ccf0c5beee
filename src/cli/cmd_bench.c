/* `onnxscope bench MODEL`: times a model on seeded random inputs (latency
 * percentiles, throughput, peak RSS), optionally against a second model with
 * an output equivalence check, and writes a per-node Chrome trace on request. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/commands.h"
#include "onnxscope/bench.h"
#include "onnxscope/peak.h"
#include "onnxscope/threadpool.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: onnxscope bench MODEL [--compare OTHER.onnx] [--device cpu|cuda] [--precision fp32|fp16]\n"
            "          [--threads N] [--warmup W] [--iters N] [--seed S]\n"
            "          [--shape NAME=1x3x224x224] [--dim SYM=VALUE] [--default-dim D]\n"
            "          [--input NAME=FILE.pb] [--fill NAME=VALUE] [--int-max M]\n"
            "          [--rtol R] [--atol A] [--json] [--trace FILE.json]\n"
            "          [--max-memory SIZE] [--timeout SECONDS] [--top N] [--no-profile]\n"
            "          [--no-cache]\n"
            "Runs MODEL W times untimed (default 1), then N times timed (default 50) on\n"
            "the --input/--fill values and seeded random data for the other inputs (as\n"
            "`run --random`; unknown dims are an error unless --default-dim) and prints\n"
            "min/p50/p90/p99/max latency, throughput and peak RSS.\n"
            "--compare runs OTHER on the same inputs,\n"
            "prints the speedup (p50 of MODEL / p50 of OTHER) and checks the outputs\n"
            "agree within --atol + --rtol*|x| (defaults 1e-4, 1e-3); exit 1 if not.\n"
            "--threads 0 (default) uses the physical cores. --trace writes one traced run's per-node\n"
            "timings as Chrome trace-event JSON (chrome://tracing, ui.perfetto.dev).\n"
            "--max-memory caps the tensor memory of a run (default 3/4 of RAM; K/M/G\n"
            "suffixes); --timeout stops the whole benchmark after SECONDS (exit 1).\n"
            "Also printed: the cost model's FLOPs over p50 in GFLOP/s ('?' when some\n"
            "node's FLOPs are unknown) and its fraction of this machine's peak at the\n"
            "same thread count (an FMA microbenchmark of about 0.2 s, cached in\n"
            "$XDG_CACHE_HOME/onnxscope/peak.tsv; --no-cache or ONNXSCOPE_RECALIBRATE=1\n"
            "measures again), then the top N (default 10) operator types by time over\n"
            "min(iters, 10) extra profiled runs (--no-profile skips them).\n"
            "--device cuda runs on the GPU the nodes the CUDA backend takes (the rest on\n"
            "the CPU) and prints how many nodes and what share of the FLOPs ran where;\n"
            "exit 4 when no GPU is usable (no toolkit in this build, no driver, no device).\n");
}

static bool parse_int(const char *opt, const char *s, long lo, long *out)
{
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < lo || v > 10000000) {
        ox_cli_error(NULL, "%s %s: expected an integer >= %ld", opt, s, lo);
        return false;
    }
    *out = v;
    return true;
}

static bool parse_double(const char *opt, const char *s, double *out)
{
    char *end = NULL;
    double v = strtod(s, &end);
    if (!*s || *end || !(v >= 0) || isinf(v)) {
        ox_cli_error(NULL, "%s %s: expected a non-negative number", opt, s);
        return false;
    }
    *out = v;
    return true;
}

/* Infinite errors (mismatched shapes, NaN on one side) have no JSON number. */
static json_t *num_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static ox_device json_device;   /* the run's --device, for the JSON objects */

static const char *graph_word(int g)
{
    return g == OX_CUDA_GRAPH_REPLAYED ? "replayed" : g == OX_CUDA_GRAPH_CAPTURED ? "captured" : "off";
}

static json_t *stats_json_base(const char *path, const ox_bench_stats *s, int threads)
{
    return json_pack("{s:s, s:s, s:i, s:i, s:{s:o, s:o, s:o, s:o, s:o, s:o}, s:o, s:I}",
                     "model", path, "device", ox_device_name(json_device), "threads", threads,
                     "iters", s->iters,
                     "latency_ms", "min", json_real(s->min), "p50", json_real(s->p50), "p90",
                     json_real(s->p90), "p99", json_real(s->p99), "max", json_real(s->max),
                     "mean", json_real(s->mean), "throughput_per_s",
                     json_real(s->throughput_per_s), "peak_rss_bytes",
                     (json_int_t)s->peak_rss_bytes);
}

/* The compute rate, its fraction of peak and the operator profile of s. */
static json_t *stats_json(const char *path, const ox_bench_stats *s, int threads,
                          const ox_peak *peak, int top)
{
    json_t *o = stats_json_base(path, s, threads);
    if (!o)
        return NULL;
    if (json_device == OX_DEVICE_CUDA)
        json_object_set_new(
            o, "placement",
            json_pack("{s:i, s:i, s:I, s:I, s:I, s:I}", "gpu_nodes", s->nodes_on[1],
                      "cpu_nodes", s->nodes_on[0], "gpu_flops", (json_int_t)s->flops_on[1],
                      "cpu_flops", (json_int_t)s->flops_on[0], "uploads",
                      (json_int_t)s->h2d_copies, "downloads", (json_int_t)s->d2h_copies));
    if (json_device == OX_DEVICE_CUDA)
        json_object_set_new(json_object_get(o, "placement"), "plan_shape_nodes",
                            json_integer(s->plan_shape_nodes));
    if (json_device == OX_DEVICE_CUDA)
        json_object_set_new(
            o, "cuda",
            json_pack("{s:s, s:s, s:i, s:i, s:i, s:i}", "graph", graph_word(s->cuda_graph),
                      "graph_note", s->cuda_graph_note, "fp16_nodes", s->fp16_nodes,
                      "float16_nodes", s->float16_nodes,
                      "epilogue_nodes", s->epilogue_nodes, "flash_nodes", s->flash_nodes));
    bool known = s->flops >= 0 && s->gflops >= 0;
    json_object_set_new(o, "flops", known ? json_integer((json_int_t)s->flops) : json_null());
    json_object_set_new(o, "gflops", known ? json_real(s->gflops) : json_null());
    json_object_set_new(o, "peak_fraction", known && peak->gflops > 0
                                                ? json_real(s->gflops / peak->gflops)
                                                : json_null());
    if (s->profile_runs > 0) {
        json_t *ops = json_array();
        for (int i = 0; ops && i < s->n_ops && i < top; i++)
            json_array_append_new(
                ops, json_pack("{s:s, s:s, s:i, s:f, s:f}", "op_type", s->ops[i].op_type,
                               "domain", s->ops[i].domain, "nodes", s->ops[i].nodes, "ms",
                               s->ops[i].ms, "fraction",
                               s->profile_ms > 0 ? s->ops[i].ms / s->profile_ms : 0.0));
        json_object_set_new(o, "profile_runs", json_integer(s->profile_runs));
        json_object_set_new(o, "profile_ms", json_real(s->profile_ms));
        json_object_set_new(o, "top_ops", ops);
    }
    return o;
}

static const char *fmt_g(double v, char *buf, size_t len)
{
    if (v < 0)
        snprintf(buf, len, "?");
    else if (v >= 1e9)
        snprintf(buf, len, "%.3g G", v / 1e9);
    else if (v >= 1e6)
        snprintf(buf, len, "%.3g M", v / 1e6);
    else
        snprintf(buf, len, "%.0f ", v);
    return buf;
}

static void print_compute(const char *label, const ox_bench_stats *s, const ox_peak *peak)
{
    char f[32];
    printf("%s: %sFLOP per run (cost model), ", label, fmt_g(s->flops, f, sizeof f));
    if (s->gflops >= 0)
        printf("%.2f GFLOP/s at p50", s->gflops);
    else
        printf("? GFLOP/s at p50 (some node's FLOPs unknown)");
    char frac[32];
    if (s->gflops >= 0 && peak->gflops > 0)
        snprintf(frac, sizeof frac, "%.1f%%", 100 * s->gflops / peak->gflops);
    else
        snprintf(frac, sizeof frac, "?");
    char on[48] = "";
    if (peak->cores > 0 && peak->cores < peak->threads)
        snprintf(on, sizeof on, " on %d core%s", peak->cores, peak->cores == 1 ? "" : "s");
    if (peak->gflops > 0)
        printf(", %s of peak %.1f GFLOP/s (%d thread%s%s, %s, %s)\n", frac, peak->gflops,
               peak->threads, peak->threads == 1 ? "" : "s", on, peak->isa,
               peak->from_cache ? "cached" : "measured now");
    else
        printf(", peak unknown\n");
}

static void print_ops(const char *label, const ox_bench_stats *s, int top)
{
    if (s->profile_runs <= 0)
        return;
    printf("top operator types of %s (fastest of %d profiled run%s each; run %.3f ms):\n", label,
           s->profile_runs, s->profile_runs == 1 ? "" : "s", s->profile_ms);
    printf("  %-28s %6s %10s %7s\n", "op type", "nodes", "ms", "share");
    for (int i = 0; i < s->n_ops && i < top; i++) {
        char name[64];
        if (s->ops[i].domain[0])
            snprintf(name, sizeof name, "%s:%s", s->ops[i].domain, s->ops[i].op_type);
        else
            snprintf(name, sizeof name, "%s", s->ops[i].op_type);
        printf("  %-28.28s %6d %10.3f %6.1f%%\n", name, s->ops[i].nodes, s->ops[i].ms,
               s->profile_ms > 0 ? 100 * s->ops[i].ms / s->profile_ms : 0.0);
    }
    if (s->n_ops > top)
        printf("  (%d more op type%s)\n", s->n_ops - top, s->n_ops - top == 1 ? "" : "s");
}

/* Where the nodes ran (--device cuda). */
static void print_placement(const char *label, const ox_bench_stats *s)
{
    int64_t fl = s->flops_on[0] + s->flops_on[1];
    printf("%s: %d of %d nodes on the GPU, %d on the CPU; %.1f%% of the cost model's FLOPs "
           "on the GPU; %lld uploads, %lld downloads per run\n",
           label, s->nodes_on[1], s->nodes_on[0] + s->nodes_on[1], s->nodes_on[0],
           fl > 0 ? 100.0 * (double)s->flops_on[1] / (double)fl : 0.0,
           (long long)s->h2d_copies, (long long)s->d2h_copies);
    if (s->plan_shape_nodes)
        printf("%s: %d of the CPU nodes are shape arithmetic computed once at plan time\n",
               label, s->plan_shape_nodes);
    printf("%s: %s, %d float16 node(s) of the model, %d GEMM epilogue(s), %d tiled attention "
           "node(s); CUDA Graph %s%s%s\n",
           label, s->fp16_nodes ? "fp16" : "fp32", s->float16_nodes, s->epilogue_nodes,
           s->flash_nodes,
           graph_word(s->cuda_graph), s->cuda_graph_note[0] ? ": " : "", s->cuda_graph_note);
}

static void print_row(const char *label, const ox_bench_stats *s)
{
    char rss[32];
    printf("%-9s %9.3f %9.3f %9.3f %9.3f %9.3f %9.1f %11s\n", label, s->min, s->p50, s->p90,
           s->p99, s->max, s->throughput_per_s,
           ox_cli_bytes((double)s->peak_rss_bytes, rss, sizeof rss));
}

int ox_cmd_bench(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"compare", required_argument, NULL, 'c'},
        {"device", required_argument, NULL, 'd'},
        {"precision", required_argument, NULL, 'p'},
        OX_CLI_TIMING_OPTIONS,
        OX_CLI_SHAPE_OPTIONS,
        OX_CLI_INPUT_OPTIONS,
        {"rtol", required_argument, NULL, 'r'},
        {"atol", required_argument, NULL, 'a'},
        {"json", no_argument, NULL, 'J'},
        {"trace", required_argument, NULL, 't'},
        {"timeout", required_argument, NULL, 'T'},
        {"top", required_argument, NULL, 'P'},
        {"no-profile", no_argument, NULL, 'N'},
        {"help", no_argument, NULL, 'h'},
        {0, 0, 0, 0},
    };
    ox_bench_config cfg;
    ox_bench_config_init(&cfg);
    ox_infer_opts io = {0};
    ox_input_opts inputs = {.shapes = &io};
    const char *compare_path = NULL, *trace_path = NULL;
    bool json = false, no_profile = false, no_cache = false;
    int rc = 0, top = 10;
    ox_peak peak = {0};
    long v;
    ox_model *m = NULL, *mb = NULL;
    ox_bench_result r = {0};
    const ox_cli_timing timing = {.warmup = &cfg.warmup, .iters = &cfg.iters, .seed = &cfg.seed,
                                  .max_memory = &cfg.max_memory, .no_cache = &no_cache};
    optind = 1;
    int c;
    while ((c = ox_cli_getopt(argc, argv, "bench", "j:n:h", longopts)) != -1) {
        switch (c) {
        case 'c': compare_path = optarg; break;
        case 'd':
            if ((rc = ox_cli_device(optarg, &cfg.device)) != 0)
                goto out;
            break;
        case 'p':
            if ((rc = ox_cli_precision(optarg, &cfg.fp16)) != 0)
                goto out;
            break;
        case 'j':
            if (!ox_cli_parse_long("--threads", optarg, 0, 4096, &v)) {
                rc = 2;
                goto out;
            }
            cfg.threads = (int)v;
            break;
        case 'r':
            if (!parse_double("--rtol", optarg, &cfg.rtol)) {
                rc = 2;
                goto out;
            }
            break;
        case 'a':
            if (!parse_double("--atol", optarg, &cfg.atol)) {
                rc = 2;
                goto out;
            }
            break;
        case 'J': json = true; break;
        case 't': trace_path = optarg; break;
        case 'T':
            if (!ox_cli_parse_seconds("--timeout", optarg, &cfg.timeout_s)) {
                rc = 2;
                goto out;
            }
            break;
        case 'P':
            if (!parse_int("--top", optarg, 1, &v)) {
                rc = 2;
                goto out;
            }
            top = (int)v;
            break;
        case 'N': no_profile = true; break;
        case 'h': usage(stdout); goto out;
        default: {
            int h = ox_cli_timing_opt(c, optarg, &timing);
            if (h > 0 || (h == 0 && ox_cli_input_opt(c, optarg, &io, &inputs) > 0))
                break;
            rc = 2;
            goto out;
        }
        }
    }
    if (optind != argc - 1) {
        if (optind >= argc)
            ox_cli_error(NULL, "bench: no model given (usage: onnxscope bench MODEL [options])");
        else
            ox_cli_error(NULL, "bench: one model only (got '%s' and '%s'; --compare takes the "
                         "second)", argv[optind], argv[optind + 1]);
        rc = 2;
        goto out;
    }
    if ((rc = ox_cli_precision_check(cfg.device, cfg.fp16)) != 0)
        goto out;
    const char *path = argv[optind];
    m = ox_cli_load(path, &rc);
    if (!m)
        goto out;
    if (compare_path && !(mb = ox_cli_load(compare_path, &rc)))
        goto out;
    if (!ox_cli_check_inputs(path, m, &io, &inputs)) {
        rc = 2;
        goto out;
    }
    cfg.model = m;
    cfg.compare = mb;
    cfg.shapes = &io;
    cfg.inputs = &inputs;
    if (!no_profile)
        cfg.profile_runs = cfg.iters < 10 ? cfg.iters : 10;
    ox_error err = {0};
    ox_status st = ox_bench_run(&cfg, &r, &err);
    if (st) {
        ox_cli_run_error(path, &err, cfg.timeout_s);
        /* Usage errors were caught above; EINVAL here is the model's. */
        rc = st == OX_EINVAL || st == OX_ENOMEM ? 1 : ox_status_exit_code(st);
        goto out;
    }
    if (trace_path) {
        ox_error_clear(&err);
        st = ox_bench_trace(&cfg, trace_path, &err);
        if (st) {
            ox_cli_run_error(st == OX_EIO ? NULL : path, &err, cfg.timeout_s);
            rc = ox_status_exit_code(st);
            goto out;
        }
    }
    int threads = r.threads;   /* resolved: never "0" */
    json_device = cfg.device;
    ox_peak_get(threads, no_cache, &peak);   /* peak.gflops 0 when it failed */
    if (r.compared && !r.check.ok)
        rc = 1;
    if (json) {
        json_t *o = stats_json(path, &r.a, threads, &peak, top);
        if (!o) {
            ox_cli_error(NULL, "out of memory");
            rc = 1;
            goto out;
        }
        json_object_set_new(o, "warmup", json_integer(cfg.warmup));
        {
            double la[1] = {-1};
            if (getloadavg(la, 1) != 1)
                la[0] = -1;
            long long teams, capped;
            int min_team;
            ox_threads_capped(&teams, &capped, &min_team);
            json_object_set_new(o, "thread_policy",
                                json_pack("{s:s, s:i, s:b, s:f, s:I, s:I, s:i}", "pool",
                                          ox_threads_backend(), "default_threads",
                                          ox_threads_default(), "load_guard",
                                          ox_threads_load_cap(), "load_avg", la[0],
                                          "parallel_sections", (json_int_t)teams,
                                          "capped_sections", (json_int_t)capped,
                                          "min_team", min_team));
        }
        json_object_set_new(o, "seed", json_integer(cfg.seed));
        if (r.compared) {
            json_object_set_new(o, "compare",
                                stats_json(compare_path, &r.b, threads, &peak, top));
            json_object_set_new(o, "speedup", json_real(r.speedup));
            json_object_set_new(o, "speedup_min", json_real(r.speedup_min));
            json_t *ck = json_pack("{s:o, s:o, s:b, s:f, s:f}", "max_abs_err",
                                   num_or_null(r.check.max_abs_err), "max_rel_err",
                                   num_or_null(r.check.max_rel_err), "ok", r.check.ok,
                                   "rtol", cfg.rtol, "atol", cfg.atol);
            if (ck && !r.check.ok)
                json_object_set_new(ck, "why", json_string(r.check.why));
            json_object_set_new(o, "check", ck);
        }
        if (trace_path)
            json_object_set_new(o, "trace", json_string(trace_path));
        json_object_set_new(
            o, "peak",
            peak.gflops > 0
                ? json_pack("{s:f, s:i, s:i, s:s, s:s, s:b}", "gflops", peak.gflops,
                            "threads", peak.threads, "cores", peak.cores, "isa", peak.isa,
                            "cpu", peak.cpu, "cached", peak.from_cache)
                : json_null());
        char *s =
            json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9));
        if (s)
            printf("%s\n", s);
        free(s);
        json_decref(o);
        goto out;
    }
    if (cfg.device == OX_DEVICE_CUDA) {
        char gpu[512];
        ox_cuda_probe(gpu, sizeof gpu);
        printf("%s: cuda (%s) with %d CPU thread%s, %d timed run%s after %d warm-up, seed %u\n",
               path, gpu, threads, threads == 1 ? "" : "s", r.a.iters, r.a.iters == 1 ? "" : "s",
               cfg.warmup, cfg.seed);
    } else {
        printf("%s: cpu, %d thread%s, %d timed run%s after %d warm-up, seed %u\n", path,
               threads, threads == 1 ? "" : "s", r.a.iters, r.a.iters == 1 ? "" : "s",
               cfg.warmup, cfg.seed);
    }
    {
        /* The thread policy in force and how busy the machine was: latency on
         * a shared machine means little without it (EXECUTOR.md, "Threads"). */
        double la[1] = {-1};
        if (getloadavg(la, 1) != 1)
            la[0] = -1;
        printf("threads: %d on the %s pool, default %d (physical cores); load average %.2f\n",
               threads, ox_threads_backend(), ox_threads_default(), la[0]);
        long long teams, capped;
        int min_team;
        ox_threads_capped(&teams, &capped, &min_team);
        if (capped)
            printf("load guard: %lld of %lld parallel sections ran on fewer threads (down to "
                   "%d) because other processes kept cores busy "
                   "(ONNXSCOPE_THREADS_LOAD_CAP=0: always %d)\n",
                   capped, teams, min_team, threads);
    }
    printf("%-9s %9s %9s %9s %9s %9s %9s %11s\n", "ms", "min", "p50", "p90", "p99", "max",
           "runs/s", "peak RSS");
    print_row("model", &r.a);
    if (r.compared) {
        print_row("compare", &r.b);
        printf("speedup x%.3f (p50 model / p50 compare), x%.3f (min / min)\n", r.speedup,
               r.speedup_min);
        printf("outputs: max abs err %.3g, max rel err %.3g: %s%s%s\n", r.check.max_abs_err,
               r.check.max_rel_err, r.check.ok ? "ok" : "MISMATCH",
               r.check.ok ? "" : " - ", r.check.ok ? "" : r.check.why);
    }
    if (trace_path)
        printf("trace: %s\n", trace_path);
    if (cfg.device == OX_DEVICE_CUDA) {
        print_placement("placement (model)", &r.a);
        if (r.compared)
            print_placement("placement (compare)", &r.b);
    }
    print_compute("model", &r.a, &peak);
    if (r.compared)
        print_compute("compare", &r.b, &peak);
    print_ops("model", &r.a, top);
    if (r.compared)
        print_ops("compare", &r.b, top);
out:
    ox_bench_result_free(&r);
    ox_model_free(m);
    ox_model_free(mb);
    ox_infer_opts_free(&io);
    ox_input_opts_free(&inputs);
    return rc;
}
