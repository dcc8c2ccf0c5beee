/* `bench`'s compute report: achieved GFLOP/s (cost-model FLOPs over p50),
 * its fraction of the calibrated peak, the peak's cache file, and the top
 * operator types by time. The FLOPs are checked against `info --json`'s
 * cost figure, computed independently of the benchmark. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include <jansson.h>

#include "testutil.h"

static const char *gen_samples;   /* argv[1]: tools/gen_samples */
static char cache[64];            /* XDG_CACHE_HOME of every run here */

static int run(const char *args, char **out)
{
    char cmd[8400];
    snprintf(cmd, sizeof cmd, "XDG_CACHE_HOME='%s' '%s' %s", cache, ox_test_bin(), args);
    return ox_test_run(cmd, out);
}

static json_t *run_json(const char *args)
{
    char *out = NULL;
    assert_int_equal(run(args, &out), 0);
    json_error_t jerr;
    json_t *o = json_loads(out, 0, &jerr);
    if (!o)
        fprintf(stderr, "not JSON: %s\n", out);
    assert_non_null(o);
    free(out);
    return o;
}

static char *sample(const char *name, char *buf, size_t n)
{
    snprintf(buf, n, "%s/samples/%s", ox_test_source(), name);
    return buf;
}

static char *cache_file(char *buf, size_t n)
{
    snprintf(buf, n, "%s/onnxscope/peak.tsv", cache);
    return buf;
}

/* `info --json`'s FLOPs of model m (must be known). */
static json_int_t info_flops_of(const char *m)
{
    char args[2048];
    snprintf(args, sizeof args, "info %s --json", m);
    json_t *info = run_json(args);
    json_t *cost = json_object_get(info, "cost");
    json_t *fl = cost ? json_object_get(cost, "flops") : json_object_get(info, "flops");
    assert_true(json_is_integer(fl));
    json_int_t v = json_integer_value(fl);
    json_decref(info);
    return v;
}

/* Known FLOPs: the figure is info's, gflops = flops / p50, the fraction is
 * gflops / peak, and the top operator times fit in the profiled run. */
static void test_known_flops(void **state)
{
    (void)state;
    char m[512], args[1024];
    sample("tiny_cnn.onnx", m, sizeof m);
    json_int_t info_flops = info_flops_of(m);
    assert_true(info_flops > 0);

    snprintf(args, sizeof args, "bench %s --iters 5 --threads 1 --json", m);
    json_t *o = run_json(args);
    assert_int_equal(json_integer_value(json_object_get(o, "flops")), info_flops);
    double p50 = json_real_value(json_object_get(json_object_get(o, "latency_ms"), "p50"));
    double g = json_real_value(json_object_get(o, "gflops"));
    assert_true(p50 > 0);
    assert_true(fabs(g - (double)info_flops / (p50 * 1e6)) <= 1e-6 * g);
    json_t *peak = json_object_get(o, "peak");
    assert_true(json_is_object(peak));
    double pk = json_real_value(json_object_get(peak, "gflops"));
    assert_true(pk > 0);
    assert_int_equal(json_integer_value(json_object_get(peak, "threads")), 1);
    double fr = json_real_value(json_object_get(o, "peak_fraction"));
    assert_true(fabs(fr - g / pk) <= 1e-6 * fr);

    json_t *ops = json_object_get(o, "top_ops");
    assert_true(json_is_array(ops));
    assert_true(json_array_size(ops) > 0);
    double total = json_real_value(json_object_get(o, "profile_ms")), sum = 0, prev = INFINITY;
    size_t i;
    json_t *op;
    bool conv = false;
    json_array_foreach(ops, i, op) {
        double ms = json_real_value(json_object_get(op, "ms"));
        assert_true(ms >= 0 && ms <= prev);   /* largest first */
        prev = ms;
        sum += ms;
        assert_true(json_integer_value(json_object_get(op, "nodes")) >= 1);
        if (!strcmp(json_string_value(json_object_get(op, "op_type")), "Conv"))
            conv = true;
    }
    assert_true(conv);
    assert_true(sum <= total * (1 + 1e-9));
    json_decref(o);

    /* Text: the same report, ending with the operator table. */
    char *out = NULL;
    snprintf(args, sizeof args, "bench %s --iters 3 --threads 1 --top 2", m);
    assert_int_equal(run(args, &out), 0);
    assert_non_null(strstr(out, "GFLOP/s at p50"));
    assert_non_null(strstr(out, "% of peak "));
    const char *t = strstr(out, "top operator types of model");
    assert_non_null(t);
    assert_non_null(strstr(t, "Conv"));
    assert_non_null(strstr(t, "more op type"));   /* --top 2 leaves some out */
    free(out);
    /* --no-profile: no table, no top_ops. */
    snprintf(args, sizeof args, "bench %s --iters 2 --threads 1 --no-profile", m);
    assert_int_equal(run(args, &out), 0);
    assert_null(strstr(out, "top operator types"));
    free(out);
}

/* A static model whose weights come from ConstantOfShape nodes (the
 * backend suite's light models): bench's FLOPs are info's too, with no
 * --shape/--dim given (they printed as unknown: nothing was inferred). */
static void test_flops_without_shapes(void **state)
{
    (void)state;
    const char *sh = ox_test_shared();
    char m[1024], args[2048];
    snprintf(m, sizeof m, "%s/onnx-backend/light/light_resnet50.onnx", sh ? sh : "");
    if (!sh || access(m, R_OK) != 0) {
        printf("skipped: %s not found (../shared absent)\n", m);
        skip();
    }
    json_int_t info_flops = info_flops_of(m);
    assert_true(info_flops > 8000000000LL);   /* ResNet-50: 4.1 G multiply-adds */
    snprintf(args, sizeof args, "bench %s --iters 1 --warmup 0 --threads 1 --no-profile --json", m);
    json_t *o = run_json(args);
    assert_true(json_is_integer(json_object_get(o, "flops")));
    assert_int_equal(json_integer_value(json_object_get(o, "flops")), info_flops);
    json_decref(o);
}

/* The If model is costed by its larger branch only: no exact FLOPs, so no
 * rate: null in JSON, '?' in text. */
static void test_unknown_flops(void **state)
{
    (void)state;
    char m[256], cmd[1024], args[1024];
    snprintf(m, sizeof m, "%s/if_branch.onnx", cache);
    snprintf(cmd, sizeof cmd, "'%s' --if-branch '%s'", gen_samples, m);
    assert_int_equal(ox_test_run(cmd, NULL), 0);
    snprintf(args, sizeof args, "bench %s --iters 2 --threads 1 --fill sr=16000 --json", m);
    json_t *o = run_json(args);
    assert_true(json_is_null(json_object_get(o, "flops")));
    assert_true(json_is_null(json_object_get(o, "gflops")));
    assert_true(json_is_null(json_object_get(o, "peak_fraction")));
    assert_true(json_is_object(json_object_get(o, "peak")));
    json_decref(o);
    char *out = NULL;
    snprintf(args, sizeof args, "bench %s --iters 2 --threads 1 --fill sr=16000", m);
    assert_int_equal(run(args, &out), 0);
    assert_non_null(strstr(out, "? GFLOP/s"));
    free(out);
}

/* The first run at a thread count measures and writes the cache; the next
 * reads it back (same figure); --no-cache measures again and rewrites the
 * key's line instead of adding one. */
static void test_peak_cache(void **state)
{
    (void)state;
    char m[512], args[1024], f[256];
    sample("tiny_cnn.onnx", m, sizeof m);
    /* Seed the cache with a figure no machine measures, for 2 threads. */
    json_t *o;
    snprintf(args, sizeof args, "bench %s --iters 1 --threads 2 --no-profile --json", m);
    o = run_json(args);
    json_t *peak = json_object_get(o, "peak");
    assert_false(json_is_true(json_object_get(peak, "cached")));
    char cpu[256], isa[32];
    snprintf(cpu, sizeof cpu, "%s", json_string_value(json_object_get(peak, "cpu")));
    snprintf(isa, sizeof isa, "%s", json_string_value(json_object_get(peak, "isa")));
    json_decref(o);
    struct stat st;
    assert_int_equal(stat(cache_file(f, sizeof f), &st), 0);

    FILE *fp = fopen(f, "w");
    assert_non_null(fp);
    fprintf(fp, "other cpu\t%s\t2\t1.5\n%s\t%s\t2\t12345.5\n", isa, cpu, isa);
    fclose(fp);
    o = run_json(args);
    peak = json_object_get(o, "peak");
    assert_true(json_is_true(json_object_get(peak, "cached")));
    assert_true(json_real_value(json_object_get(peak, "gflops")) == 12345.5);
    json_decref(o);

    snprintf(args, sizeof args, "bench %s --iters 1 --threads 2 --no-profile --json --no-cache", m);
    o = run_json(args);
    peak = json_object_get(o, "peak");
    assert_false(json_is_true(json_object_get(peak, "cached")));
    assert_true(json_real_value(json_object_get(peak, "gflops")) != 12345.5);
    json_decref(o);
    /* Rewritten in place: the other key kept, ours replaced. */
    fp = fopen(f, "r");
    assert_non_null(fp);
    char line[512];
    int lines = 0, ours = 0;
    while (fgets(line, sizeof line, fp)) {
        lines++;
        if (strncmp(line, cpu, strlen(cpu)) == 0 && line[strlen(cpu)] == '\t') {
            ours++;
            assert_null(strstr(line, "12345.5"));
        }
    }
    fclose(fp);
    assert_int_equal(lines, 2);
    assert_int_equal(ours, 1);
}

/* More threads than cores: the peak is the cores' (the same cache key as
 * a run on exactly those cores), not a sum over threads sharing them; and
 * an absurd thread count is a usage error, not a hang. */
static void test_peak_oversubscribed(void **state)
{
    (void)state;
    char m[512], args[1024];
    sample("tiny_cnn.onnx", m, sizeof m);
    snprintf(args, sizeof args, "bench %s --iters 1 --threads 64 --no-profile --json", m);
    json_t *o = run_json(args);
    json_t *peak = json_object_get(o, "peak");
    assert_int_equal(json_integer_value(json_object_get(peak, "threads")), 64);
    json_int_t cores = json_integer_value(json_object_get(peak, "cores"));
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    assert_true(cores >= 1 && cores <= 64 && (online < 1 || cores <= online));
    double g64 = json_real_value(json_object_get(peak, "gflops"));
    json_decref(o);
    snprintf(args, sizeof args, "bench %s --iters 1 --threads %d --no-profile --json", m,
             (int)cores);
    o = run_json(args);
    peak = json_object_get(o, "peak");
    assert_true(json_is_true(json_object_get(peak, "cached")));
    /* (the cache keeps three decimals) */
    assert_true(fabs(json_real_value(json_object_get(peak, "gflops")) - g64) <= 1e-3);
    json_decref(o);
    char *out = NULL;
    snprintf(args, sizeof args, "bench %s --iters 1 --threads 100000 --no-profile", m);
    assert_int_equal(run(args, &out), 2);
    assert_non_null(strstr(out, "--threads 100000"));
    free(out);
}

int main(int argc, char **argv)
{
    if (argc < 2 || !ox_test_bin()) {
        printf("SKIP: usage: test_cli_bench GEN_SAMPLES (with ONNXSCOPE_BIN set)\n");
        return 77;
    }
    gen_samples = argv[1];
    snprintf(cache, sizeof cache, "/tmp/oxpeakXXXXXX");
    if (!mkdtemp(cache))
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_flops),
        cmocka_unit_test(test_unknown_flops),
        cmocka_unit_test(test_flops_without_shapes),
        cmocka_unit_test(test_peak_cache),
        cmocka_unit_test(test_peak_oversubscribed),  /* after: it fills the cache */
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache);
    if (system(cmd) != 0)
        rc = rc ? rc : 1;
    return rc;
}
