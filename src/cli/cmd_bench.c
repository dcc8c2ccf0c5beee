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

static void usage(FILE *f)
{
    fprintf(f,
            "usage: onnxscope bench MODEL [--compare OTHER.onnx] [--device cpu|cuda]\n"
            "          [--threads N] [--warmup W] [--iters N] [--seed S]\n"
            "          [--shape NAME=1x3x224x224] [--dim SYM=VALUE] [--default-dim D]\n"
            "          [--input NAME=FILE.pb] [--fill NAME=VALUE] [--int-max M]\n"
            "          [--rtol R] [--atol A] [--json] [--trace FILE.json]\n"
            "Runs MODEL W times untimed (default 1), then N times timed (default 50) on\n"
            "the --input/--fill values and seeded random data for the other inputs (as\n"
            "`run --random`; unknown dims are an error unless --default-dim) and prints\n"
            "min/p50/p90/p99/max latency, throughput and peak RSS.\n"
            "--compare runs OTHER on the same inputs,\n"
            "prints the speedup (p50 of MODEL / p50 of OTHER) and checks the outputs\n"
            "agree within --atol + --rtol*|x| (defaults 1e-4, 1e-3); exit 1 if not.\n"
            "--threads 0 uses every core. --trace writes one traced run's per-node\n"
            "timings as Chrome trace-event JSON (chrome://tracing, ui.perfetto.dev).\n");
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

static json_t *stats_json(const char *path, const ox_bench_stats *s, int threads)
{
    return json_pack("{s:s, s:s, s:i, s:i, s:{s:o, s:o, s:o, s:o, s:o, s:o}, s:o, s:I}",
                     "model", path, "device", "cpu", "threads", threads, "iters", s->iters,
                     "latency_ms", "min", json_real(s->min), "p50", json_real(s->p50), "p90",
                     json_real(s->p90), "p99", json_real(s->p99), "max", json_real(s->max),
                     "mean", json_real(s->mean), "throughput_per_s",
                     json_real(s->throughput_per_s), "peak_rss_bytes",
                     (json_int_t)s->peak_rss_bytes);
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
        {"threads", required_argument, NULL, 'j'},
        {"warmup", required_argument, NULL, 'w'},
        {"iters", required_argument, NULL, 'n'},
        {"seed", required_argument, NULL, 's'},
        OX_CLI_SHAPE_OPTIONS,
        OX_CLI_INPUT_OPTIONS,
        {"rtol", required_argument, NULL, 'r'},
        {"atol", required_argument, NULL, 'a'},
        {"json", no_argument, NULL, 'J'},
        {"trace", required_argument, NULL, 't'},
        {"help", no_argument, NULL, 'h'},
        {0, 0, 0, 0},
    };
    ox_bench_config cfg;
    ox_bench_config_init(&cfg);
    ox_infer_opts io = {0};
    ox_input_opts inputs = {.shapes = &io};
    const char *compare_path = NULL, *trace_path = NULL;
    bool json = false;
    int rc = 0;
    long v;
    ox_model *m = NULL, *mb = NULL;
    ox_bench_result r = {0};
    optind = 1;
    int c;
    while ((c = ox_cli_getopt(argc, argv, "bench", "j:n:h", longopts)) != -1) {
        switch (c) {
        case 'c': compare_path = optarg; break;
        case 'd':
            if (strcmp(optarg, "cuda") == 0) {
                ox_cli_error("cuda", "not built with CUDA support");
                rc = 2;
                goto out;
            }
            if (strcmp(optarg, "cpu") != 0) {
                ox_cli_error(NULL, "--device %s: unknown device (cpu or cuda)", optarg);
                rc = 2;
                goto out;
            }
            break;
        case 'j':
            if (!parse_int("--threads", optarg, 0, &v)) {
                rc = 2;
                goto out;
            }
            cfg.threads = (int)v;
            break;
        case 'w':
            if (!parse_int("--warmup", optarg, 0, &v)) {
                rc = 2;
                goto out;
            }
            cfg.warmup = (int)v;
            break;
        case 'n':
            if (!parse_int("--iters", optarg, 1, &v)) {
                rc = 2;
                goto out;
            }
            cfg.iters = (int)v;
            break;
        case 's':
            if (!parse_int("--seed", optarg, 0, &v)) {
                rc = 2;
                goto out;
            }
            cfg.seed = (uint32_t)v;
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
        case 'h': usage(stdout); goto out;
        default:
            if (ox_cli_input_opt(c, optarg, &io, &inputs) > 0)
                break;
            rc = 2;
            goto out;
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
    ox_error err = {0};
    ox_status st = ox_bench_run(&cfg, &r, &err);
    if (st) {
        ox_cli_error(path, "%s", err.msg);
        /* Usage errors were caught above; EINVAL here is the model's. */
        rc = st == OX_EINVAL || st == OX_ENOMEM ? 1 : ox_status_exit_code(st);
        goto out;
    }
    if (trace_path) {
        ox_error_clear(&err);
        st = ox_bench_trace(&cfg, trace_path, &err);
        if (st) {
            ox_cli_error(st == OX_EIO ? NULL : path, "%s", err.msg);
            rc = ox_status_exit_code(st);
            goto out;
        }
    }
    int threads = r.threads;   /* resolved: never "0" */
    if (r.compared && !r.check.ok)
        rc = 1;
    if (json) {
        json_t *o = stats_json(path, &r.a, threads);
        if (!o) {
            ox_cli_error(NULL, "out of memory");
            rc = 1;
            goto out;
        }
        json_object_set_new(o, "warmup", json_integer(cfg.warmup));
        json_object_set_new(o, "seed", json_integer(cfg.seed));
        if (r.compared) {
            json_object_set_new(o, "compare", stats_json(compare_path, &r.b, threads));
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
        char *s =
            json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9));
        if (s)
            printf("%s\n", s);
        free(s);
        json_decref(o);
        goto out;
    }
    printf("%s: cpu, %d thread%s, %d timed run%s after %d warm-up, seed %u\n", path, threads,
           threads == 1 ? "" : "s", r.a.iters, r.a.iters == 1 ? "" : "s", cfg.warmup,
           cfg.seed);
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
out:
    ox_bench_result_free(&r);
    ox_model_free(m);
    ox_model_free(mb);
    ox_infer_opts_free(&io);
    ox_input_opts_free(&inputs);
    return rc;
}
