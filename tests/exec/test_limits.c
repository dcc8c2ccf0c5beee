/* Bounded memory and time in the executor (issue 11): a Loop accumulating
 * a scan output without end is stopped by the memory ceiling, a Loop that
 * never ends by the deadline or the cancel flag (the TUI bench's Esc), a
 * folding kernel by its output cap; and `run`/`bench`/`optimize --check`
 * take --max-memory and --timeout with the exit codes of the contract. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "onnxscope/bench.h"
#include "onnxscope/exec.h"
#include "onnxscope/io.h"
#include "testutil.h"

static ox_value *init_i64(ox_graph *g, const char *name, int rank, int64_t v)
{
    int64_t d[1] = {1};
    ox_tensor *t = ox_tensor_new(OX_DT_INT64, rank, d);
    assert_non_null(t);
    ox_tensor_set_i64(t, 0, v);
    ox_value *val = ox_graph_value(g, name);
    ox_tensor_set_name(t, name);
    assert_int_equal(ox_graph_set_initializer(g, val, t), OX_OK);
    val->type = ox_type_new_tensor(OX_DT_INT64, rank, d);
    return val;
}

static ox_value *init_true(ox_graph *g, const char *name)
{
    ox_tensor *t = ox_tensor_new(OX_DT_BOOL, 0, NULL);
    assert_non_null(t);
    ox_tensor_set_i64(t, 0, 1);
    ox_tensor_set_name(t, name);
    ox_value *v = ox_graph_value(g, name);
    assert_int_equal(ox_graph_set_initializer(g, v, t), OX_OK);
    v->type = ox_type_new_tensor(OX_DT_BOOL, 0, NULL);
    return v;
}

static ox_value *body_input(ox_graph *b, const char *name, ox_dtype dt, int rank,
                            const int64_t *dims)
{
    ox_value *v = ox_graph_value(b, name);
    v->type = ox_type_new_tensor(dt, rank, dims);
    ox_graph_add_input(b, v);
    return v;
}

static void attach_body(ox_node *loop, ox_graph *body)
{
    loop->attrs = calloc(1, sizeof(ox_attr));
    assert_non_null(loop->attrs);
    loop->attrs[0].name = strdup("body");
    loop->attrs[0].type = OX_ATTR_GRAPH;
    loop->attrs[0].g = body;
    loop->n_attrs = 1;
}

/* scan_bomb: Loop(M = 2^40, cond = true) whose body emits a 1 MiB tensor
 * per iteration as a scan output (ConstantOfShape of an outer shape):
 * unbounded, it grows until the machine runs out. forever: Loop with no
 * trip count and a condition that stays true, carrying x. */
static ox_model *loop_model(bool scan_bomb)
{
    ox_model *m = ox_model_new();
    assert_non_null(m);
    m->ir_version = 8;
    ox_model_set_opset(m, "", 13);
    ox_graph *g = m->graph;
    int64_t d1[1] = {1};
    ox_value *ins[3] = {NULL, init_true(g, "cond"), NULL};
    ox_value *out = ox_graph_value(g, "y");
    if (scan_bomb) {
        ins[0] = init_i64(g, "M", 0, (int64_t)1 << 40);
        init_i64(g, "shape", 1, 256 * 1024);
    } else {
        ins[2] = ox_graph_value(g, "x");
        ins[2]->type = ox_type_new_tensor(OX_DT_FLOAT, 1, d1);
        ox_graph_add_input(g, ins[2]);
    }
    ox_node *loop = ox_node_new(g, "Loop", "", "loop", scan_bomb ? 2 : 3, ins, 1, &out);
    assert_non_null(loop);
    ox_graph *b = ox_graph_new(m, g);
    b->owner = loop;
    body_input(b, "i", OX_DT_INT64, 0, NULL);
    ox_value *ci = body_input(b, "cond_in", OX_DT_BOOL, 0, NULL);
    ox_value *co = ox_graph_value(b, "cond_out");
    ox_node_new(b, "Identity", "", "keep_going", 1, &ci, 1, &co);
    ox_graph_add_output(b, co);
    if (scan_bomb) {
        ox_value *shape = ox_graph_lookup(b, "shape");
        ox_value *big = ox_graph_value(b, "big");
        ox_node_new(b, "ConstantOfShape", "", "fill", 1, &shape, 1, &big);
        ox_graph_add_output(b, big);
        out->type = ox_type_new_tensor(OX_DT_FLOAT, 2, (int64_t[]){1, 256 * 1024});
        out->type->dims[0].value = -1;
    } else {
        ox_value *xi = body_input(b, "x_in", OX_DT_FLOAT, 1, d1);
        ox_value *xo = ox_graph_value(b, "x_out");
        ox_node_new(b, "Identity", "", "carry", 1, &xi, 1, &xo);
        ox_graph_add_output(b, xo);
        out->type = ox_type_new_tensor(OX_DT_FLOAT, 1, d1);
    }
    attach_body(loop, b);
    ox_graph_add_output(g, out);
    ox_graph_relink(g);
    return m;
}

static ox_status run_once(ox_model *m, const ox_exec_opts *eo, ox_error *err)
{
    ox_exec *e = NULL;
    ox_status st = ox_exec_new(m, eo, &e, err);
    assert_int_equal(st, OX_OK);
    ox_rval *in[1] = {NULL}, *out[1] = {NULL};
    int ni = m->graph->n_inputs;
    if (ni) {
        int64_t d[1] = {1};
        in[0] = ox_rval_tensor(ox_tensor_new(OX_DT_FLOAT, 1, d));
    }
    st = ox_exec_run(e, ni, in, 1, out, err);
    ox_rval_free(in[0]);
    ox_rval_free(out[0]);
    ox_exec_free(e);
    return st;
}

static void test_scan_bomb_ceiling(void **state)
{
    (void)state;
    ox_model *m = loop_model(true);
    int64_t before = ox_buffer_live_bytes();
    ox_exec_opts eo = {.threads = 1, .max_memory = before + (64 << 20)};
    ox_error err = {0};
    assert_int_equal(run_once(m, &eo, &err), OX_ERANGE);
    assert_non_null(strstr(err.msg, "node 'loop' (Loop)"));
    assert_non_null(strstr(err.msg, "over the ceiling"));
    assert_non_null(strstr(err.msg, "--max-memory"));
    /* Everything the run held is given back. */
    assert_int_equal(ox_buffer_live_bytes(), before);
    ox_model_free(m);
    assert_true(ox_exec_default_max_memory() > 0);
}

static void test_forever_deadline(void **state)
{
    (void)state;
    ox_model *m = loop_model(false);
    ox_exec_opts eo = {.threads = 1, .deadline_ns = ox_exec_clock_ns() + 200000000};
    ox_error err = {0};
    assert_int_equal(run_once(m, &eo, &err), OX_ETIMEDOUT);
    assert_non_null(strstr(err.msg, "time limit reached"));
    assert_non_null(strstr(err.msg, "iteration"));
    ox_model_free(m);
}

static void *cancel_later(void *arg)
{
    struct timespec ts = {0, 100 * 1000 * 1000};
    nanosleep(&ts, NULL);
    atomic_store((atomic_int *)arg, 1);
    return NULL;
}

static void test_cancel_inside_a_run(void **state)
{
    (void)state;
    /* The TUI's Bench panel: its Esc sets cfg.cancel from the UI thread
     * while the worker is inside one endless run. */
    ox_model *m = loop_model(false);
    atomic_int flag = 0;
    ox_bench_config cfg;
    ox_bench_config_init(&cfg);
    cfg.model = m;
    cfg.threads = 1;
    cfg.cancel = &flag;
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, cancel_later, &flag), 0);
    ox_bench_result r;
    memset(&r, 0, sizeof r);
    ox_error err = {0};
    ox_status st = ox_bench_run(&cfg, &r, &err);
    pthread_join(th, NULL);
    assert_int_equal(st, OX_ECANCELLED);
    assert_true(r.cancelled);
    ox_bench_result_free(&r);
    ox_model_free(m);
}

static void test_exec_node_capped(void **state)
{
    (void)state;
    /* ConstantOfShape to 4 MiB: refused under a 1 MiB cap before it is
     * allocated, fine without. */
    ox_model *m = ox_model_new();
    ox_model_set_opset(m, "", 13);
    ox_value *s = init_i64(m->graph, "s", 1, 1 << 20);
    ox_value *o = ox_graph_value(m->graph, "o");
    ox_node *n = ox_node_new(m->graph, "ConstantOfShape", "", "fill", 1, &s, 1, &o);
    ox_rval *in[1] = {ox_rval_tensor(ox_tensor_share(s->init))}, *out[1] = {NULL};
    ox_error err = {0};
    assert_int_equal(ox_exec_node_capped(m, n, 1, in, 1, out, 1 << 20, &err), OX_ERANGE);
    assert_null(out[0]);
    ox_error_clear(&err);
    assert_int_equal(ox_exec_node(m, n, 1, in, 1, out, &err), OX_OK);
    assert_int_equal(out[0]->t->nbytes, 4 << 20);
    ox_rval_free(out[0]);
    ox_rval_free(in[0]);
    ox_model_free(m);
}

/* ---- the command line ---------------------------------------------------- */

static int cli(const char *bin, const char *args, char **out)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' %s", bin, args);
    return ox_test_run(cmd, out);
}

static void expect(const char *bin, const char *args, int rc, const char *needle)
{
    char *out = NULL;
    int got = cli(bin, args, &out);
    if (got != rc || (needle && (!out || !strstr(out, needle))))
        print_error("%s -> %d (want %d, '%s'):\n%s\n", args, got, rc, needle ? needle : "",
                    out ? out : "");
    assert_int_equal(got, rc);
    if (needle)
        assert_non_null(strstr(out, needle));
    free(out);
}

static void test_cli(void **state)
{
    (void)state;
    const char *bin = ox_test_bin();
    if (!bin) {
        printf("skipped: ONNXSCOPE_BIN not set\n");
        return;
    }
    char dir[] = "/tmp/oxlimitsXXXXXX";
    assert_non_null(mkdtemp(dir));
    char bomb[256], forever[256], args[1024];
    snprintf(bomb, sizeof bomb, "%s/scan_bomb.onnx", dir);
    snprintf(forever, sizeof forever, "%s/forever.onnx", dir);
    ox_save_opts so = {0};
    ox_error err = {0};
    ox_model *m = loop_model(true);
    assert_int_equal(ox_save(m, bomb, &so, &err), OX_OK);
    ox_model_free(m);
    m = loop_model(false);
    assert_int_equal(ox_save(m, forever, &so, &err), OX_OK);
    ox_model_free(m);

    snprintf(args, sizeof args, "run '%s' --max-memory 64M", bomb);
    expect(bin, args, 1, "over the ceiling of 64.00 MiB (--max-memory)");
    snprintf(args, sizeof args, "bench '%s' --max-memory 64m --iters 1 --warmup 0", bomb);
    expect(bin, args, 1, "--max-memory");
    snprintf(args, sizeof args, "optimize '%s' -o '%s/o.onnx' --check 1 --max-memory 65536K",
             bomb, dir);
    expect(bin, args, 1, "--max-memory");
    snprintf(args, sizeof args, "run '%s' --random --timeout 1", forever);
    expect(bin, args, 1, "stopped by --timeout 1");
    snprintf(args, sizeof args, "bench '%s' --timeout 0.5", forever);
    expect(bin, args, 1, "stopped by --timeout 0.5");
    /* Usage errors. */
    snprintf(args, sizeof args, "run '%s' --random --timeout 0", forever);
    expect(bin, args, 2, "--timeout 0");
    snprintf(args, sizeof args, "run '%s' --random --max-memory 12Q", forever);
    expect(bin, args, 2, "--max-memory 12Q");
    snprintf(args, sizeof args, "bench '%s' --max-memory -5", forever);
    expect(bin, args, 2, "--max-memory");

    snprintf(args, sizeof args, "rm -rf '%s'", dir);
    assert_int_equal(system(args), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scan_bomb_ceiling),
        cmocka_unit_test(test_forever_deadline),
        cmocka_unit_test(test_cancel_inside_a_run),
        cmocka_unit_test(test_exec_node_capped),
        cmocka_unit_test(test_cli),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
