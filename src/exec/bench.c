/* The benchmark library behind `onnxscope bench` and the TUI's Bench panel:
 * warm-up and timed runs on given or seeded random inputs, latency percentiles, peak
 * RSS, the output equivalence check between two models, and a Chrome trace. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "onnxscope/bench.h"
#include "onnxscope/threadpool.h"
#include "onnxscope/cost.h"
#include "onnxscope/exec.h"
#include "onnxscope/io.h"
#include "onnxscope/outfile.h"
#include "onnxscope/randinput.h"

void ox_bench_config_init(ox_bench_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->warmup = 1;
    cfg->iters = 50;
    cfg->seed = 1;
    cfg->rtol = 1e-3;
    cfg->atol = 1e-4;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted v: the smallest value with at least p%
 * of the runs at or below it, so it is always one of the measured values. */
static double pct(const double *v, int n, double p)
{
    int i = (int)ceil(p / 100.0 * n) - 1;
    if (i < 0)
        i = 0;
    if (i >= n)
        i = n - 1;
    return v[i];
}

void ox_bench_stats_compute(ox_bench_stats *s)
{
    int n = s->iters;
    s->min = s->p50 = s->p90 = s->p99 = s->max = s->mean = s->throughput_per_s = 0;
    if (n <= 0 || !s->latency_ms)
        return;
    double *v = malloc((size_t)n * sizeof *v);
    if (!v)
        return;
    memcpy(v, s->latency_ms, (size_t)n * sizeof *v);
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += v[i];
    s->min = v[0];
    s->max = v[n - 1];
    s->p50 = pct(v, n, 50);
    s->p90 = pct(v, n, 90);
    s->p99 = pct(v, n, 99);
    s->mean = sum / n;
    s->throughput_per_s = s->mean > 0 ? 1000.0 / s->mean : 0;
    free(v);
}

/* Peak RSS of this process. Linux lets us reset the high-water mark
 * (clear_refs 5), so each model's figure is its own and not the maximum of
 * everything the process did before; elsewhere ru_maxrss is the fallback. */
static void rss_reset(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (f) {
        fputs("5", f);
        fclose(f);
    }
}

static int64_t rss_peak(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (f) {
        char line[256];
        long long kb = -1;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "VmHWM: %lld kB", &kb) == 1)
                break;
        fclose(f);
        if (kb >= 0)
            return (int64_t)kb * 1024;
    }
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        return (int64_t)ru.ru_maxrss * 1024;
    return 0;
}

/* ---- equivalence check --------------------------------------------------- */

static void check_fail(ox_bench_check *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Records the first mismatch only: later ones add nothing for the reader. */
static void check_fail(ox_bench_check *c, const char *fmt, ...)
{
    if (!c->ok)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->why, sizeof c->why, fmt, ap);
    va_end(ap);
    c->ok = false;
}

void ox_check_tolerance(ox_dtype a, ox_dtype b, double *rtol, double *atol)
{
    double m = 0;   /* the floor's multiple of float16's */
    if (a == OX_DT_BFLOAT16 || b == OX_DT_BFLOAT16)
        m = 4;
    else if (a == OX_DT_FLOAT16 || b == OX_DT_FLOAT16)
        m = 1;
    if (m > 0) {
        *rtol = fmax(*rtol, m * OX_CHECK_HALF_RTOL);
        *atol = fmax(*atol, m * OX_CHECK_HALF_ATOL);
    }
}

static void compare_tensor(const ox_tensor *x, const ox_tensor *y, const char *what,
                           double rtol, double atol, bool half_floor, ox_bench_check *c)
{
    if (x->dtype != y->dtype) {
        check_fail(c, "%s: dtype %s vs %s", what, ox_dtype_name(x->dtype), ox_dtype_name(y->dtype));
        c->max_abs_err = INFINITY;
        return;
    }
    if (x->rank != y->rank || x->numel != y->numel) {
        check_fail(c, "%s: shape differs (rank %d vs %d)", what, x->rank, y->rank);
        c->max_abs_err = INFINITY;
        return;
    }
    for (int d = 0; d < x->rank; d++)
        if (x->dims[d] != y->dims[d]) {
            check_fail(c, "%s: dim %d differs (%lld vs %lld)", what, d, (long long)x->dims[d], (long long)y->dims[d]);
            c->max_abs_err = INFINITY;
            return;
        }
    if (x->dtype == OX_DT_STRING) {
        if (!ox_tensor_equal(x, y))
            check_fail(c, "%s: strings differ", what);
        return;
    }
    if (half_floor)
        ox_check_tolerance(x->dtype, y->dtype, &rtol, &atol);
    for (int64_t i = 0; i < x->numel; i++) {
        double a = ox_tensor_get_f64(x, i), b = ox_tensor_get_f64(y, i);
        if (isnan(a) && isnan(b))
            continue;
        double d = fabs(b - a);
        if (isnan(d))
            d = INFINITY;   /* NaN on one side only, or inf - inf */
        else if (d == 0)
            continue;
        if (d > c->max_abs_err)
            c->max_abs_err = d;
        if (a != 0 && d / fabs(a) > c->max_rel_err)
            c->max_rel_err = d / fabs(a);
        if (!(d <= atol + rtol * fabs(a)))
            check_fail(c, "%s: element %lld: %.9g vs %.9g", what, (long long)i, a, b);
    }
}

static void compare_rval(const ox_rval *x, const ox_rval *y, const char *what, double rtol,
                         double atol, bool half_floor, ox_bench_check *c)
{
    if (!x || !y) {
        if (x != y) {
            check_fail(c, "%s: present on one side only", what);
            c->max_abs_err = INFINITY;
        }
        return;
    }
    if (x->kind != y->kind || x->n_items != y->n_items) {
        check_fail(c, "%s: kind or item count differs", what);
        c->max_abs_err = INFINITY;
        return;
    }
    if (x->kind == OX_RV_TENSOR || x->kind == OX_RV_MAP) {
        if (!x->t || !y->t) {
            if (x->t != y->t)
                check_fail(c, "%s: tensor on one side only", what);
        } else {
            compare_tensor(x->t, y->t, what, rtol, atol, half_floor, c);
        }
    }
    for (int i = 0; i < x->n_items; i++)
        compare_rval(x->items[i], y->items[i], what, rtol, atol, half_floor, c);
}

void ox_bench_compare_outputs(int n, ox_rval *const *a, ox_rval *const *b, double rtol,
                              double atol, bool half_floor, ox_bench_check *out)
{
    memset(out, 0, sizeof *out);
    out->ok = true;
    for (int k = 0; k < n; k++) {
        char what[32];
        snprintf(what, sizeof what, "output %d", k);
        compare_rval(a[k], b[k], what, rtol, atol, half_floor, out);
    }
}

/* ---- running ------------------------------------------------------------- */

typedef struct job {
    const ox_bench_config *cfg;
    int64_t deadline_ns;      /* from cfg->timeout_s; 0 none */
    int n_models;
    int runs_per_model;       /* warmup + iters: the progress denominator */
} job;

/* The absolute deadline of a budget of s seconds from now (0: none). */
static int64_t deadline_after(double s)
{
    return s > 0 ? ox_exec_clock_ns() + (int64_t)(s * 1e9) : 0;
}

static bool cancelled(const ox_bench_config *cfg)
{
    return cfg->cancel && atomic_load(cfg->cancel) != 0;
}

static void report(const job *j, int which, int done, int total)
{
    if (!j->cfg->progress)
        return;
    double f = ((double)which + (total > 0 ? (double)done / total : 1.0)) / j->n_models;
    j->cfg->progress(j->cfg->user, which, done, total, f > 1 ? 1 : f);
}

/* Applies --shape/--dim to m's input types so the executor plans (and
 * checks inputs) for the requested shapes. Without them the model's own
 * types are inferred through the graph all the same, for the cost model's
 * FLOPs (a static model's cost printed as unknown before); a failure there
 * only leaves the FLOPs unknown, as it would the executor's own checks. */
static ox_status apply_shapes(const ox_bench_config *cfg, ox_model *m, ox_error *err)
{
    if (!cfg->shapes || (cfg->shapes->n_shapes == 0 && cfg->shapes->n_dims == 0)) {
        ox_infer_opts io = {0};
        ox_error ierr = {0};
        if (ox_infer_model(m, &io, &ierr) != OX_OK)
            ox_error_clear(&ierr);
        return OX_OK;
    }
    ox_infer_opts io = *cfg->shapes;
    io.reset = true;
    io.stats = NULL;
    return ox_infer_model(m, &io, err);
}

/* The inputs of m: cfg->inputs' files and fills, the rest random. */
static ox_status make_inputs(const ox_bench_config *cfg, const ox_model *m, ox_rval **in,
                             ox_error *err)
{
    ox_input_opts o = {0};
    if (cfg->inputs)
        o = *cfg->inputs;
    o.shapes = cfg->shapes;
    o.no_random = false;
    return ox_inputs_make(m, &o, cfg->seed, in, err);
}

/* Runs m warmup + iters times on in; the outputs of the first run go to
 * keep (when given) for the equivalence check. */
static ox_status run_model(const job *j, int which, ox_model *m, ox_rval *const *in,
                           ox_rval **keep, ox_bench_stats *s, ox_error *err)
{
    const ox_bench_config *cfg = j->cfg;
    ox_exec *e = NULL;
    ox_exec_opts eo = {.threads = cfg->threads, .max_memory = cfg->max_memory, .device = cfg->device,
                       .cancel = cfg->cancel, .deadline_ns = j->deadline_ns};
    eo.fp16 = cfg->fp16;   /* --precision fp16 (CUDA only) */
    int no = m->graph->n_outputs, ni = m->graph->n_inputs;
    int total = j->runs_per_model;
    s->latency_ms = calloc((size_t)cfg->iters + 1, sizeof *s->latency_ms);
    ox_rval **out = calloc((size_t)no + 1, sizeof *out);
    if (!s->latency_ms || !out) {
        free(out);
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    }
    rss_reset();
    ox_status st = ox_exec_new(m, &eo, &e, err);
    if (st) {
        free(out);
        return st;
    }
    int min_timed = cfg->iters < 3 ? cfg->iters : 3;
    double t_start = 0;
    bool first = true;
    report(j, which, 0, total);
    for (int it = -cfg->warmup; it < cfg->iters; it++) {
        if (cancelled(cfg)) {
            st = OX_ECANCELLED;
            ox_errorf(err, st, "cancelled");
            break;
        }
        if (it == 0)
            t_start = now_ms();
        double t0 = now_ms();
        st = ox_exec_run(e, ni, in, no, out, err);
        double t1 = now_ms();
        if (st)
            break;
        for (int k = 0; k < no; k++) {
            if (first && keep)
                keep[k] = out[k];
            else
                ox_rval_free(out[k]);
            out[k] = NULL;
        }
        first = false;
        if (it >= 0)
            s->latency_ms[s->iters++] = t1 - t0;
        int done = it + cfg->warmup + 1;
        if (it >= 0 && cfg->time_budget_s > 0 && s->iters >= min_timed &&
            t1 - t_start > cfg->time_budget_s * 1e3) {
            report(j, which, total, total);
            break;
        }
        report(j, which, done, total);
    }
    s->peak_rss_bytes = rss_peak();
    ox_bench_stats_compute(s);
    ox_exec_stats es;
    ox_exec_get_stats(e, &es);
    for (int d = 0; d < 2; d++) {
        s->nodes_on[d] = es.nodes_on[d];
        s->flops_on[d] = es.flops_on[d];
    }
    s->h2d_copies = es.h2d_copies;
    s->d2h_copies = es.d2h_copies;
    s->cuda_graph = es.cuda_graph;
    memcpy(s->cuda_graph_note, es.cuda_graph_note, sizeof s->cuda_graph_note);
    s->fp16_nodes = es.fp16_nodes;
    s->float16_nodes = es.float16_nodes;
    s->epilogue_nodes = es.epilogue_nodes;
    s->flash_nodes = es.flash_nodes;
    s->plan_shape_nodes = es.plan_shape_nodes;
    free(out);
    ox_exec_free(e);
    return st;
}

/* ---- per-operator profile --------------------------------------------------- */

typedef struct op_prof {
    const ox_graph *top;      /* only its nodes are counted (bodies are inside) */
    ox_bench_op *ops;
    int n, cap;
    bool oom;
    bool counting_nodes;      /* first profiled run: count nodes per type */
} op_prof;

static void op_hook(void *user, const ox_node *n, int64_t t0, int64_t t1)
{
    op_prof *p = user;
    if (n->graph != p->top || p->oom)
        return;
    const char *op = n->op_type ? n->op_type : "?", *dom = n->domain ? n->domain : "";
    int i = 0;
    while (i < p->n && !(strcmp(p->ops[i].op_type, op) == 0 && strcmp(p->ops[i].domain, dom) == 0))
        i++;
    if (i == p->n) {
        if (p->n == p->cap) {
            int cap = p->cap ? p->cap * 2 : 32;
            ox_bench_op *o = realloc(p->ops, (size_t)cap * sizeof *o);
            if (!o) {
                p->oom = true;
                return;
            }
            p->ops = o;
            p->cap = cap;
        }
        p->ops[p->n++] = (ox_bench_op){.op_type = op, .domain = dom};
    }
    if (p->counting_nodes)
        p->ops[i].nodes++;
    p->ops[i].ms += (double)(t1 - t0) / 1e6;
}

static int cmp_op(const void *a, const void *b)
{
    const ox_bench_op *x = a, *y = b;
    return x->ms > y->ms ? -1 : x->ms < y->ms;
}

/* The profile's names must outlive the executor: a model calling local
 * functions runs as an inlined clone (src/ir/ir_inline.c) whose strings go
 * with it, so each name is re-pointed at the equal string of m (its main
 * graph or a function body, where every inlined node comes from). */
typedef struct name_find {
    const char *want;
    bool domain;
    const char *found;
} name_find;

static void find_name(ox_graph *g, void *ctx)
{
    name_find *f = ctx;
    for (int k = 0; k < g->n_nodes && !f->found; k++) {
        const char *s = f->domain ? g->nodes[k]->domain : g->nodes[k]->op_type;
        if (s && !strcmp(s, f->want))
            f->found = s;
    }
}

static const char *model_string(const ox_model *m, const char *s, bool domain)
{
    name_find f = {.want = s, .domain = domain};
    if (!s[0])
        return "";
    ox_graph_visit(m->graph, find_name, &f);
    for (int i = 0; i < m->n_functions && !f.found; i++)
        if (m->functions[i].body)
            ox_graph_visit(m->functions[i].body, find_name, &f);
    return f.found ? f.found : "?";
}

/* cfg->profile_runs more runs of m with the per-node hook, in an executor
 * of their own so the timed runs carry no hook. A failure here leaves the
 * profile empty rather than failing the benchmark. */
static void profile_model(const job *j, ox_model *m, ox_rval *const *in, ox_bench_stats *s)
{
    const ox_bench_config *cfg = j->cfg;
    op_prof p = {.top = m->graph};
    ox_exec_opts eo = {.threads = cfg->threads, .max_memory = cfg->max_memory, .device = cfg->device,
                       .cancel = cfg->cancel, .deadline_ns = j->deadline_ns,
                       .node_hook = op_hook, .node_hook_user = &p};
    eo.fp16 = cfg->fp16;   /* --precision fp16 (CUDA only) */
    ox_exec *e = NULL;
    ox_error err = {0};
    int no = m->graph->n_outputs, ni = m->graph->n_inputs;
    ox_rval **out = calloc((size_t)no + 1, sizeof *out);
    if (!out || ox_exec_new(m, &eo, &e, &err) != OX_OK) {
        free(out);
        ox_error_clear(&err);
        return;
    }
    p.top = ox_exec_model(e)->graph;   /* an inlined clone's own graph */
    /* Per profiled run: its wall time and its per-type times (row width
     * fixed by the warm-up run, which meets every main-graph node). */
    int runs = cfg->profile_runs, done = 0, width = 0;
    double *wall = calloc((size_t)runs + 1, sizeof *wall), *rows = NULL;
    if (!wall)
        p.oom = true;
    /* One untimed run first: the new executor's first run allocates. */
    for (int it = -1; it < runs && !cancelled(cfg) && !p.oom; it++) {
        for (int i = 0; i < p.n; i++)
            p.ops[i].ms = 0;
        p.counting_nodes = it == -1;
        double t0 = now_ms();
        ox_status st = ox_exec_run(e, ni, in, no, out, &err);
        double t1 = now_ms();
        for (int k = 0; k < no; k++) {
            ox_rval_free(out[k]);
            out[k] = NULL;
        }
        if (st || p.oom)
            break;
        if (it == -1) {
            width = p.n;
            rows = calloc((size_t)runs * (size_t)(width > 0 ? width : 1), sizeof *rows);
            if (!rows)
                p.oom = true;
            continue;
        }
        if (p.n != width)
            break;   /* a type seen only now: keep the runs so far */
        wall[done] = t1 - t0;
        for (int i = 0; i < width; i++)
            rows[(size_t)done * (size_t)width + (size_t)i] = p.ops[i].ms;
        done++;
    }
    ox_error_clear(&err);
    if (ox_exec_model(e) != m)
        for (int i = 0; i < p.n; i++) {
            p.ops[i].op_type = model_string(m, p.ops[i].op_type, false);
            p.ops[i].domain = model_string(m, p.ops[i].domain, true);
        }
    ox_exec_free(e);
    free(out);
    if (done == 0 || p.oom) {
        free(p.ops);
        free(wall);
        free(rows);
        return;
    }
    /* Each type's fastest time over the runs, and the fastest run: on a
     * shared machine one preempted node would dominate a mean or even a
     * median run. The minima still add up to at most the fastest run (each
     * is at most that run's time for its type). */
    double best = wall[0];
    for (int r = 1; r < done; r++)
        best = wall[r] < best ? wall[r] : best;
    for (int i = 0; i < width; i++) {
        double m = rows[i];
        for (int r = 1; r < done; r++) {
            double v = rows[(size_t)r * (size_t)width + (size_t)i];
            m = v < m ? v : m;
        }
        p.ops[i].ms = m;
    }
    if (p.n > 1)   /* qsort(NULL, 0) is undefined (UBSan) */
        qsort(p.ops, (size_t)p.n, sizeof *p.ops, cmp_op);
    s->ops = p.ops;
    s->n_ops = p.n;
    s->profile_runs = done;
    s->profile_ms = best;
    free(wall);
    free(rows);
}

/* The cost model's FLOPs of m (shapes as inferred for this benchmark) and
 * the rate at the median latency. */
static void model_flops(ox_model *m, ox_bench_stats *s)
{
    ox_model_cost c;
    ox_error err = {0};
    s->flops = s->gflops = -1;
    if (ox_model_cost_compute(m, &c, &err) != OX_OK) {
        ox_error_clear(&err);
        return;
    }
    if (!c.known || c.n_upper > 0)
        return;
    s->flops = (double)c.flops;
    if (s->p50 > 0)
        s->gflops = s->flops / (s->p50 * 1e6);
}

/* Inputs for the compare model, matched to the first model's by name (an
 * optimized model may reorder or drop graph inputs). Borrowed pointers. */
static ox_status map_inputs(const ox_model *a, ox_rval *const *in_a, const ox_model *b,
                            ox_rval **in_b, ox_error *err)
{
    const ox_graph *ga = a->graph, *gb = b->graph;
    for (int i = 0; i < gb->n_inputs; i++) {
        const ox_value *v = gb->inputs[i];
        in_b[i] = NULL;
        if (v->init)
            continue;
        int found = -1;
        for (int k = 0; k < ga->n_inputs && found < 0; k++)
            if (ga->inputs[k]->name && v->name && strcmp(ga->inputs[k]->name, v->name) == 0)
                found = k;
        if (found < 0 || !in_a[found]) {
            if (v->n_uses == 0 && !v->is_output)
                continue;   /* unused: the executor accepts it missing */
            return ox_errorf(err, OX_EINVAL,
                             "compare model: input '%s' is not an input of the first model",
                             v->name ? v->name : "");
        }
        in_b[i] = in_a[found];
    }
    return OX_OK;
}

static void free_vals(ox_rval **v, int n)
{
    for (int i = 0; v && i < n; i++)
        ox_rval_free(v[i]);
    free(v);
}

static ox_status check_config(const ox_bench_config *cfg, ox_error *err)
{
    if (!cfg || !cfg->model || !cfg->model->graph)
        return ox_errorf(err, OX_EINVAL, "bench: no model");
    if (cfg->compare && !cfg->compare->graph)
        return ox_errorf(err, OX_EINVAL, "bench: compare model has no graph");
    if (cfg->iters < 1 || cfg->warmup < 0 || cfg->threads < 0)
        return ox_errorf(err, OX_EINVAL, "bench: iters must be >= 1, warmup and threads >= 0");
    return OX_OK;
}

ox_status ox_bench_run(const ox_bench_config *cfg, ox_bench_result *r, ox_error *err)
{
    memset(r, 0, sizeof *r);
    ox_status st = check_config(cfg, err);
    if (st)
        return st;
    /* Report what the pool really uses: 0 means the physical cores. */
    r->threads = cfg->threads > 0 ? cfg->threads : ox_threads_default();
    r->warmup = cfg->warmup;
    ox_model *ma = cfg->model, *mb = cfg->compare;
    if ((st = apply_shapes(cfg, ma, err)) || (mb && (st = apply_shapes(cfg, mb, err))))
        return st;
    job j = {.cfg = cfg, .n_models = mb ? 2 : 1, .runs_per_model = cfg->warmup + cfg->iters,
             .deadline_ns = deadline_after(cfg->timeout_s)};
    int ni = ma->graph->n_inputs, no = ma->graph->n_outputs;
    int nib = mb ? mb->graph->n_inputs : 0, nob = mb ? mb->graph->n_outputs : 0;
    ox_rval **in = calloc((size_t)ni + 1, sizeof *in);
    ox_rval **in_b = calloc((size_t)nib + 1, sizeof *in_b);
    ox_rval **oa = calloc((size_t)no + 1, sizeof *oa);
    ox_rval **ob = calloc((size_t)nob + 1, sizeof *ob);
    if (!in || !in_b || !oa || !ob) {
        st = ox_errorf(err, OX_ENOMEM, "out of memory");
        goto out;
    }
    if ((st = make_inputs(cfg, ma, in, err)))
        goto out;
    if (mb && (st = map_inputs(ma, in, mb, in_b, err)))
        goto out;
    st = run_model(&j, 0, ma, in, mb ? oa : cfg->outputs, &r->a, err);
    if (st)
        goto out;
    model_flops(ma, &r->a);
    if (cfg->profile_runs > 0)
        profile_model(&j, ma, in, &r->a);
    if (mb) {
        st = run_model(&j, 1, mb, in_b, ob, &r->b, err);
        if (st)
            goto out;
        model_flops(mb, &r->b);
        if (cfg->profile_runs > 0)
            profile_model(&j, mb, in_b, &r->b);
        r->compared = true;
        r->speedup = r->b.p50 > 0 ? r->a.p50 / r->b.p50 : 0;
        r->speedup_min = r->b.min > 0 ? r->a.min / r->b.min : 0;
        if (no != nob) {
            memset(&r->check, 0, sizeof r->check);
            r->check.max_abs_err = INFINITY;
            snprintf(r->check.why, sizeof r->check.why, "%d outputs vs %d", no, nob);
        } else {
            /* bench's --rtol/--atol (defaults 1e-3 / 1e-4) are taken as given. */
            ox_bench_compare_outputs(no, oa, ob, cfg->rtol, cfg->atol, false, &r->check);
        }
    }
out:
    r->cancelled = st == OX_ECANCELLED;
    free(in_b);   /* borrowed from in */
    free_vals(in, ni);
    free_vals(oa, no);
    free_vals(ob, nob);
    return st;
}

void ox_bench_result_free(ox_bench_result *r)
{
    if (!r)
        return;
    free(r->a.latency_ms);
    free(r->b.latency_ms);
    free(r->a.ops);
    free(r->b.ops);
    r->a.latency_ms = r->b.latency_ms = NULL;
    r->a.ops = r->b.ops = NULL;
    r->a.n_ops = r->b.n_ops = 0;
}

/* ---- Chrome trace -------------------------------------------------------- */

typedef struct trace_ev {
    const ox_node *node;
    int64_t t0, t1;
} trace_ev;

typedef struct trace_buf {
    trace_ev *ev;
    size_t n, cap;
    bool recording;
    bool oom;
} trace_buf;

static void trace_hook(void *user, const ox_node *n, int64_t t0, int64_t t1)
{
    trace_buf *b = user;
    if (!b->recording || b->oom)
        return;
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        trace_ev *ev = realloc(b->ev, cap * sizeof *ev);
        if (!ev) {
            b->oom = true;
            return;
        }
        b->ev = ev;
        b->cap = cap;
    }
    b->ev[b->n++] = (trace_ev){n, t0, t1};
}

/* One "X" (complete) event per node, µs since the run started; nested
 * subgraph nodes fall inside their If/Loop/Scan event, which trace viewers
 * draw as a stack. */
static json_t *trace_json(const trace_buf *b, int64_t run_t0, const ox_bench_config *cfg)
{
    json_t *root = json_object(), *evs = json_array();
    if (!root || !evs) {
        json_decref(root);
        json_decref(evs);
        return NULL;
    }
    json_object_set_new(root, "traceEvents", evs);
    json_object_set_new(root, "displayTimeUnit", json_string("ms"));
    json_t *meta = json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}", "name", "process_name", "ph", "M",
                             "pid", 1, "tid", 1, "args", "name", "onnxscope bench");
    if (meta)
        json_array_append_new(evs, meta);
    for (size_t i = 0; i < b->n; i++) {
        const ox_node *n = b->ev[i].node;
        const char *op = n->op_type ? n->op_type : "?";
        const char *name = n->name && n->name[0] ? n->name : op;
        json_t *e = json_pack("{s:s, s:s, s:s, s:f, s:f, s:i, s:i, s:{s:s, s:s, s:i}}",
                              "name", name, "cat", op, "ph", "X",
                              "ts", (double)(b->ev[i].t0 - run_t0) / 1e3,
                              "dur", (double)(b->ev[i].t1 - b->ev[i].t0) / 1e3,
                              "pid", 1, "tid", 1, "args", "op_type", op, "domain",
                              n->domain ? n->domain : "", "node_id", n->id);
        if (e)
            json_array_append_new(evs, e);
    }
    json_object_set_new(root, "otherData",
                        json_pack("{s:i, s:i}", "threads", cfg->threads, "nodes_timed",
                                  (json_int_t)b->n));
    return root;
}

ox_status ox_bench_trace(const ox_bench_config *cfg, const char *path, ox_error *err)
{
    ox_status st = check_config(cfg, err);
    if (st)
        return st;
    if (!path)
        return ox_errorf(err, OX_EINVAL, "bench: no trace path");
    /* Before running: never over a model (`--trace m.onnx`) or its data. */
    if ((st = ox_model_check_output(cfg->model, path, err)) ||
        (st = ox_model_check_output(cfg->compare, path, err)))
        return st;
    ox_model *m = cfg->model;
    if ((st = apply_shapes(cfg, m, err)))
        return st;
    trace_buf buf = {0};
    ox_exec_opts eo = {.threads = cfg->threads, .node_hook = trace_hook,
                       .node_hook_user = &buf, .max_memory = cfg->max_memory, .device = cfg->device,
                       .cancel = cfg->cancel, .deadline_ns = deadline_after(cfg->timeout_s)};
    eo.fp16 = cfg->fp16;   /* --precision fp16 (CUDA only) */
    ox_exec *e = NULL;
    int ni = m->graph->n_inputs, no = m->graph->n_outputs;
    ox_rval **in = calloc((size_t)ni + 1, sizeof *in);
    ox_rval **out = calloc((size_t)no + 1, sizeof *out);
    json_t *root = NULL;
    if (!in || !out) {
        st = ox_errorf(err, OX_ENOMEM, "out of memory");
        goto done;
    }
    if ((st = make_inputs(cfg, m, in, err)))
        goto done;
    if ((st = ox_exec_new(m, &eo, &e, err)))
        goto done;
    /* Warm-up runs first so the traced run shows steady-state timings. */
    for (int it = 0; it <= cfg->warmup; it++) {
        if (cancelled(cfg)) {
            st = ox_errorf(err, OX_ECANCELLED, "cancelled");
            goto done;
        }
        buf.recording = it == cfg->warmup;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int64_t run_t0 = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
        if ((st = ox_exec_run(e, ni, in, no, out, err)))
            goto done;
        for (int k = 0; k < no; k++) {
            ox_rval_free(out[k]);
            out[k] = NULL;
        }
        if (buf.recording) {
            if (buf.oom) {
                st = ox_errorf(err, OX_ENOMEM, "out of memory recording the trace");
                goto done;
            }
            root = trace_json(&buf, run_t0, cfg);
        }
    }
    if (!root) {
        st = ox_errorf(err, OX_ENOMEM, "out of memory building the trace");
        goto done;
    }
    /* Through ox_outfile (temp + rename, FIFOs without a reader refused)
     * rather than json_dump_file, which truncates the target in place. */
    char *text = json_dumps(root, JSON_COMPACT | JSON_REAL_PRECISION(12));
    ox_outfile of;
    if (!text)
        st = ox_errorf(err, OX_ENOMEM, "out of memory writing the trace");
    else if ((st = ox_outfile_open(&of, path, 0, err)) == OX_OK) {
        st = ox_outfile_write(&of, text, strlen(text), err);
        if (st == OX_OK)
            st = ox_outfile_commit(&of, err);
        else
            ox_outfile_abort(&of);
    }
    free(text);
done:
    json_decref(root);
    ox_exec_free(e);
    free_vals(in, ni);
    free_vals(out, no);
    free(buf.ev);
    return st;
}
