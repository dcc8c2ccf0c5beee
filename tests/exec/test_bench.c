/* The benchmark library (bench.h) and `onnxscope bench`: ordered latency
 * statistics, iteration counts honoured, the equivalence check (a model
 * against itself and against a copy with a changed weight), cancellation,
 * the JSON contract and the Chrome trace. No timing thresholds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <jansson.h>

#include "onnxscope/bench.h"
#include "onnxscope/io.h"
#include "testutil.h"

static ox_model *load_sample(const char *name)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/samples/%s", ox_test_source(), name);
    ox_model *m = NULL;
    ox_error err = {0};
    if (ox_load(p, NULL, &m, &err) != OX_OK)
        fail_msg("cannot load %s: %s", p, err.msg);
    return m;
}

static void assert_ordered(const ox_bench_stats *s)
{
    assert_true(s->min >= 0);
    assert_true(s->min <= s->p50);
    assert_true(s->p50 <= s->p90);
    assert_true(s->p90 <= s->p99);
    assert_true(s->p99 <= s->max);
    assert_true(s->mean >= s->min && s->mean <= s->max);
    assert_true(s->throughput_per_s > 0);
    assert_true(s->peak_rss_bytes > 0);
}

/* Nearest-rank percentiles (the smallest value with >= p% of the runs at or
 * below it) of 1..10 in scrambled order: p50 = 5, p90 = 9, p99 = 10. */
static void test_stats_nearest_rank(void **state)
{
    (void)state;
    double v[10] = {7, 3, 10, 1, 9, 2, 8, 5, 4, 6};
    ox_bench_stats s = {.iters = 10, .latency_ms = v};
    ox_bench_stats_compute(&s);
    assert_true(s.min == 1 && s.max == 10);
    assert_true(s.p50 == 5 && s.p90 == 9 && s.p99 == 10);
    assert_true(s.mean == 5.5);
    assert_true(s.throughput_per_s > 181.8 && s.throughput_per_s < 181.9);
    assert_true(v[0] == 7);   /* the run-order array is left alone */
}

static void test_iters_and_order(void **state)
{
    (void)state;
    ox_model *m = load_sample("tiny_cnn.onnx");
    ox_bench_config cfg;
    ox_bench_config_init(&cfg);
    cfg.model = m;
    cfg.threads = 1;
    cfg.warmup = 2;
    cfg.iters = 9;
    ox_bench_result r;
    ox_error err = {0};
    assert_int_equal(ox_bench_run(&cfg, &r, &err), OX_OK);
    assert_int_equal(r.a.iters, 9);
    assert_false(r.compared);
    assert_false(r.cancelled);
    assert_ordered(&r.a);
    for (int i = 0; i < r.a.iters; i++)
        assert_true(r.a.latency_ms[i] >= r.a.min && r.a.latency_ms[i] <= r.a.max);
    ox_bench_result_free(&r);
    ox_model_free(m);
}

static void test_compare_self(void **state)
{
    (void)state;
    ox_model *a = load_sample("tiny_cnn.onnx"), *b = load_sample("tiny_cnn.onnx");
    ox_bench_config cfg;
    ox_bench_config_init(&cfg);
    cfg.model = a;
    cfg.compare = b;
    cfg.threads = 2;
    cfg.warmup = 0;
    cfg.iters = 3;
    ox_bench_result r;
    ox_error err = {0};
    assert_int_equal(ox_bench_run(&cfg, &r, &err), OX_OK);
    assert_true(r.compared);
    assert_int_equal(r.a.iters, 3);
    assert_int_equal(r.b.iters, 3);
    assert_ordered(&r.a);
    assert_ordered(&r.b);
    assert_true(r.check.ok);
    assert_true(r.check.max_abs_err == 0);
    assert_true(r.check.max_rel_err == 0);
    assert_true(r.speedup > 0);
    ox_bench_result_free(&r);
    ox_model_free(a);
    ox_model_free(b);
}

/* Saves tiny_cnn with 0.5 added to every element of its first float
 * initializer; returns the path (static buffer). */
static const char *write_perturbed(void)
{
    static char path[64];
    ox_model *m = load_sample("tiny_cnn.onnx");
    ox_tensor *w = NULL;
    for (int i = 0; i < m->graph->n_values && !w; i++) {
        ox_value *v = m->graph->values[i];
        if (v->init && v->init->dtype == OX_DT_FLOAT && v->init->numel > 1 && v->n_uses > 0)
            w = v->init;
    }
    assert_non_null(w);
    assert_non_null(ox_tensor_mutable_data(w));
    for (int64_t i = 0; i < w->numel; i++)
        ox_tensor_set_f64(w, i, ox_tensor_get_f64(w, i) + 0.5);
    snprintf(path, sizeof path, "/tmp/ox_bench_perturbed_%d.onnx", (int)getpid());
    ox_error err = {0};
    assert_int_equal(ox_save(m, path, NULL, &err), OX_OK);
    ox_model_free(m);
    return path;
}

static void test_compare_different(void **state)
{
    (void)state;
    const char *path = write_perturbed();
    ox_model *a = load_sample("tiny_cnn.onnx"), *b = NULL;
    ox_error err = {0};
    assert_int_equal(ox_load(path, NULL, &b, &err), OX_OK);
    ox_bench_config cfg;
    ox_bench_config_init(&cfg);
    cfg.model = a;
    cfg.compare = b;
    cfg.threads = 1;
    cfg.iters = 2;
    ox_bench_result r;
    assert_int_equal(ox_bench_run(&cfg, &r, &err), OX_OK);
    assert_true(r.compared);
    assert_false(r.check.ok);
    assert_true(r.check.max_abs_err > 0);
    assert_true(r.check.why[0] != 0);
    ox_bench_result_free(&r);
    ox_model_free(a);
    ox_model_free(b);
    unlink(path);
}

/* One output of n values of type dt. */
static ox_rval *vals(ox_dtype dt, int n, const double *v)
{
    int64_t d = n;
    ox_tensor *t = ox_tensor_new(dt, 1, &d);
    assert_non_null(t);
    for (int i = 0; i < n; i++)
        ox_tensor_set_f64(t, i, v[i]);
    return ox_rval_tensor(t);
}

/* The check's float16/bfloat16 floor (ox_check_tolerance, docs/CLI.md
 * "What --check accepts"): 1 vs 1 + 2^-10 (one float16 ulp) is outside
 * 1e-5 + 1e-4*|ref| but inside 1e-3 + 1e-2*|ref|; 1 vs 1 + 2^-5 (four
 * bfloat16 ulps) is inside only bfloat16's 4e-3 + 4e-2*|ref|. */
static void test_compare_half_floor(void **state)
{
    (void)state;
    static const double ref[2] = {1.0, 2.0}, f16[2] = {1.0009765625, 2.0}, bf[2] = {1.03125, 2.0};
    struct {
        ox_dtype dt;
        const double *out;
        bool half_floor, ok;
    } c[] = {
        {OX_DT_FLOAT16, f16, false, false},   /* the float32 tolerance */
        {OX_DT_FLOAT16, f16, true, true},
        {OX_DT_FLOAT, f16, true, false},      /* float32 outputs: no floor */
        {OX_DT_FLOAT16, bf, true, false},     /* outside float16's floor */
        {OX_DT_BFLOAT16, bf, true, true},
        {OX_DT_BFLOAT16, bf, false, false},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        ox_rval *a = vals(c[i].dt, 2, ref), *b = vals(c[i].dt, 2, c[i].out);
        ox_bench_check ck;
        ox_bench_compare_outputs(1, &a, &b, OX_CHECK_RTOL, OX_CHECK_ATOL, c[i].half_floor, &ck);
        if (ck.ok != c[i].ok)
            fail_msg("case %zu: ok %d, want %d (%s)", i, ck.ok, c[i].ok, ck.why);
        assert_true(ck.max_abs_err == c[i].out[0] - 1.0);
        ox_rval_free(a);
        ox_rval_free(b);
    }
    /* --fp16-io: a float16 output against the original's float32 one. */
    double rt = OX_CHECK_RTOL, at = OX_CHECK_ATOL;
    ox_check_tolerance(OX_DT_FLOAT, OX_DT_FLOAT16, &rt, &at);
    assert_true(rt == 1e-2 && at == 1e-3);
    /* A looser tolerance stays. */
    rt = 0.5, at = 0.25;
    ox_check_tolerance(OX_DT_BFLOAT16, OX_DT_BFLOAT16, &rt, &at);
    assert_true(rt == 0.5 && at == 0.25);
    rt = OX_CHECK_RTOL, at = OX_CHECK_ATOL;
    ox_check_tolerance(OX_DT_DOUBLE, OX_DT_DOUBLE, &rt, &at);
    assert_true(rt == OX_CHECK_RTOL && at == OX_CHECK_ATOL);
}

typedef struct cancel_state {
    atomic_int flag;
    int calls;
    double last_fraction;
    bool monotone;
} cancel_state;

static void cancel_after_two(void *user, int which, int done, int total, double fraction)
{
    cancel_state *c = user;
    (void)which;
    (void)total;
    c->calls++;
    if (fraction < c->last_fraction || fraction < 0 || fraction > 1)
        c->monotone = false;
    c->last_fraction = fraction;
    if (done >= 3)   /* one warm-up and two timed runs */
        atomic_store(&c->flag, 1);
}

static void test_cancel(void **state)
{
    (void)state;
    ox_model *m = load_sample("tiny_cnn.onnx");
    cancel_state cs = {.monotone = true};
    atomic_init(&cs.flag, 0);
    ox_bench_config cfg;
    ox_bench_config_init(&cfg);
    cfg.model = m;
    cfg.threads = 1;
    cfg.iters = 100000;
    cfg.progress = cancel_after_two;
    cfg.user = &cs;
    cfg.cancel = &cs.flag;
    ox_bench_result r;
    ox_error err = {0};
    assert_int_equal(ox_bench_run(&cfg, &r, &err), OX_ECANCELLED);
    assert_true(r.cancelled);
    assert_int_equal(r.a.iters, 2);
    assert_true(cs.monotone);
    assert_true(cs.calls >= 3);
    ox_bench_result_free(&r);
    ox_model_free(m);
}

static void test_bad_config(void **state)
{
    (void)state;
    ox_bench_config cfg;
    ox_bench_config_init(&cfg);
    ox_bench_result r;
    ox_error err = {0};
    assert_int_equal(ox_bench_run(&cfg, &r, &err), OX_EINVAL);   /* no model */
    ox_model *m = load_sample("tiny_cnn.onnx");
    cfg.model = m;
    cfg.iters = 0;
    ox_error_clear(&err);
    assert_int_equal(ox_bench_run(&cfg, &r, &err), OX_EINVAL);
    ox_model_free(m);
}

static int run_cli(const char *args, char **out)
{
    char cmd[8400];
    snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", ox_test_bin(), args);
    return ox_test_run(cmd, out);
}

static void check_stats_json(json_t *o, int iters)
{
    assert_true(json_is_string(json_object_get(o, "device")));
    assert_string_equal(json_string_value(json_object_get(o, "device")), "cpu");
    assert_int_equal(json_integer_value(json_object_get(o, "threads")), 2);
    assert_int_equal(json_integer_value(json_object_get(o, "iters")), iters);
    json_t *l = json_object_get(o, "latency_ms");
    assert_true(json_is_object(l));
    const char *keys[] = {"min", "p50", "p90", "p99", "max"};
    double prev = 0;
    for (int i = 0; i < 5; i++) {
        json_t *x = json_object_get(l, keys[i]);
        assert_true(json_is_number(x));
        assert_true(json_number_value(x) >= prev);
        prev = json_number_value(x);
    }
    assert_true(json_is_number(json_object_get(o, "throughput_per_s")));
    assert_true(json_integer_value(json_object_get(o, "peak_rss_bytes")) > 0);
}

static void test_cli_json(void **state)
{
    (void)state;
    const char *perturbed = write_perturbed();
    char args[8192], *out = NULL;
    snprintf(args, sizeof args,
             "bench %s/samples/tiny_cnn.onnx --compare %s/samples/tiny_cnn.onnx "
             "--threads 2 --warmup 1 --iters 4 --json",
             ox_test_source(), ox_test_source());
    assert_int_equal(run_cli(args, &out), 0);
    json_error_t je;
    json_t *o = json_loads(out, 0, &je);
    if (!o)
        fail_msg("not JSON (%s): %s", je.text, out);
    check_stats_json(o, 4);
    json_t *cmp = json_object_get(o, "compare");
    assert_true(json_is_object(cmp));
    check_stats_json(cmp, 4);
    assert_true(json_is_number(json_object_get(o, "speedup")));
    json_t *ck = json_object_get(o, "check");
    assert_true(json_is_true(json_object_get(ck, "ok")));
    assert_true(json_number_value(json_object_get(ck, "max_abs_err")) == 0);
    assert_true(json_number_value(json_object_get(ck, "max_rel_err")) == 0);
    json_decref(o);
    free(out);

    /* A different model: the check fails, exit 1, JSON still printed. */
    snprintf(args, sizeof args,
             "bench %s/samples/tiny_cnn.onnx --compare %s --threads 2 --iters 2 --json",
             ox_test_source(), perturbed);
    out = NULL;
    assert_int_equal(run_cli(args, &out), 1);
    o = json_loads(out, 0, &je);
    if (!o)
        fail_msg("not JSON (%s): %s", je.text, out);
    ck = json_object_get(o, "check");
    assert_true(json_is_false(json_object_get(ck, "ok")));
    assert_true(json_number_value(json_object_get(ck, "max_abs_err")) > 0);
    json_decref(o);
    free(out);
    unlink(perturbed);
}

static void test_cli_errors(void **state)
{
    (void)state;
    char args[8192], *out = NULL;
    /* No GPU (hidden by ONNXSCOPE_NO_CUDA): one line and exit 4; more in
     * test_cuda.c. */
    snprintf(args, sizeof args, "bench %s/samples/tiny_cnn.onnx --device cuda",
             ox_test_source());
    setenv("ONNXSCOPE_NO_CUDA", "1", 1);
    assert_int_equal(run_cli(args, &out), 4);
    unsetenv("ONNXSCOPE_NO_CUDA");
    assert_non_null(strstr(out, "onnxscope: --device cuda: "));
    free(out);
    out = NULL;
    snprintf(args, sizeof args, "bench %s/samples/tiny_cnn.onnx --iters 0", ox_test_source());
    assert_int_equal(run_cli(args, &out), 2);
    free(out);
    out = NULL;
    snprintf(args, sizeof args, "bench %s/samples/tiny_cnn.onnx --shape nosuch=1x2",
             ox_test_source());
    assert_int_equal(run_cli(args, &out), 2);
    free(out);
    out = NULL;
    assert_int_equal(run_cli("bench /nonexistent/model.onnx", &out), 3);
    free(out);
}

static void test_cli_trace(void **state)
{
    (void)state;
    char trace[64], args[8192], *out = NULL;
    snprintf(trace, sizeof trace, "/tmp/ox_bench_trace_%d.json", (int)getpid());
    snprintf(args, sizeof args, "bench %s/samples/tiny_cnn.onnx --iters 1 --trace %s",
             ox_test_source(), trace);
    assert_int_equal(run_cli(args, &out), 0);
    free(out);
    json_error_t je;
    json_t *o = json_load_file(trace, 0, &je);
    if (!o)
        fail_msg("trace not JSON: %s", je.text);
    json_t *ev = json_object_get(o, "traceEvents");
    assert_true(json_is_array(ev));
    ox_model *m = load_sample("tiny_cnn.onnx");
    int complete = 0;
    for (size_t i = 0; i < json_array_size(ev); i++) {
        json_t *e = json_array_get(ev, i);
        if (strcmp(json_string_value(json_object_get(e, "ph")), "X") != 0)
            continue;
        complete++;
        assert_true(json_is_string(json_object_get(e, "name")));
        assert_true(json_number_value(json_object_get(e, "ts")) >= 0);
        assert_true(json_number_value(json_object_get(e, "dur")) >= 0);
    }
    /* tiny_cnn has no subgraphs: one event per node. */
    assert_int_equal(complete, m->graph->n_nodes);
    ox_model_free(m);
    json_decref(o);
    unlink(trace);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stats_nearest_rank),
        cmocka_unit_test(test_iters_and_order),
        cmocka_unit_test(test_compare_self),
        cmocka_unit_test(test_compare_different),
        cmocka_unit_test(test_compare_half_floor),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_bad_config),
        cmocka_unit_test(test_cli_json),
        cmocka_unit_test(test_cli_errors),
        cmocka_unit_test(test_cli_trace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
