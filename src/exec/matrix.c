/* The evaluation matrix (matrix.h): strategies parsed from a list, the batch
 * dim resized through --shape/--dim overrides, each strategy optimized once
 * per batch on a copy of the model, and each (threads, device) cell timed by
 * ox_bench_run (the measurement of `onnxscope bench`) with its first run's
 * outputs compared against the original model's. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/matrix_internal.h"
#include "onnxscope/bench.h"
#include "onnxscope/check.h"
#include "onnxscope/cost.h"
#include "onnxscope/peak.h"

/* The device selection is bench's (ox_device_parse, ox_cuda_probe,
 * ox_bench_config.device): a cuda row says the probe's reason when no GPU
 * is usable. */
#include "onnxscope/device.h"

/* Whether bench runs on device here; the reason in why when not. */
static bool device_ok(const char *device, ox_bench_config *bc, char *why, size_t n)
{
    if (strcmp(device, "cpu") == 0)
        return true;
    ox_device d;
    if (!ox_device_parse(device, &d)) {
        snprintf(why, n, "unknown device");
        return false;
    }
    if (d == OX_DEVICE_CUDA && ox_cuda_probe(why, n) != OX_CUDA_AVAILABLE)
        return false;
    if (bc)
        bc->device = d;
    return true;
}

const char *const ox_matrix_default_strategies = "original,basic,extended,all,fp16,int8";

/* Precision aliases and the pass each one names (passes other helpers
 * build: a build without them gives the row "not available"). */
static const struct {
    const char *alias, *pass;
} aliases[] = {
    {"fp16", "to_fp16"},
    {"int8", "quantize_dynamic"},
};

const char *ox_matrix_status_name(ox_matrix_status s)
{
    switch (s) {
    case OX_MATRIX_OK: return "ok";
    case OX_MATRIX_FAILED: return "failed";
    case OX_MATRIX_UNAVAILABLE: return "unavailable";
    case OX_MATRIX_FIXED_BATCH: return "fixed_batch";
    case OX_MATRIX_NO_DEVICE: return "no_device";
    case OX_MATRIX_CANCELLED: return "cancelled";
    }
    return "?";
}

void ox_matrix_config_init(ox_matrix_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->threads[0] = 1;
    cfg->n_threads = 1;
    cfg->n_batches = 1;   /* batches[0] = 0: the model's own */
    snprintf(cfg->devices[0], sizeof cfg->devices[0], "cpu");
    cfg->n_devices = 1;
    cfg->warmup = 1;
    cfg->iters = 20;
    cfg->seed = 1;
    cfg->max_error = -1;
    cfg->min_cosine = 0.999;
}

static void strategy_free(ox_matrix_strategy *s)
{
    free(s->label);
    free(s->passes);
    free(s->missing);
}

void ox_matrix_config_free(ox_matrix_config *cfg)
{
    for (int i = 0; i < cfg->n_strategies; i++)
        strategy_free(&cfg->strategies[i]);
    free(cfg->strategies);
    cfg->strategies = NULL;
    cfg->n_strategies = 0;
}

/* Appends name to the comma list *list. */
static bool list_add(char **list, const char *name)
{
    size_t old = *list ? strlen(*list) : 0, n = strlen(name);
    char *s = realloc(*list, old + n + 2);
    if (!s)
        return false;
    if (old)
        s[old++] = ',';
    memcpy(s + old, name, n + 1);
    *list = s;
    return true;
}

/* One strategy "item[+item...]" into s. */
static ox_status parse_one(const char *text, ox_matrix_strategy *s, ox_error *err)
{
    memset(s, 0, sizeof *s);
    s->label = strdup(text);
    char *copy = strdup(text);
    if (!s->label || !copy) {
        free(copy);
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    }
    ox_status st = OX_OK;
    char *save = NULL;
    int k = 0;
    for (char *it = strtok_r(copy, "+", &save); it && !st; it = strtok_r(NULL, "+", &save), k++) {
        if (k == 0 && strcmp(it, "original") == 0) {
            s->original = true;
            continue;
        }
        if (s->original) {
            st = ox_errorf(err, OX_EINVAL, "--strategies %s: 'original' runs no passes: "
                           "nothing can follow it", text);
            break;
        }
        if (k == 0) {
            char *at = strchr(it, '@');
            if (at)
                *at = 0;
            ox_pass_level lv;
            if (ox_pass_level_parse(it, &lv)) {
                s->has_level = true;
                s->level = lv;
                if (at && !ox_pass_target_parse(at + 1, &s->target))
                    st = ox_errorf(err, OX_EINVAL, "--strategies %s: unknown target '%s' "
                                   "(onnx or ort)", text, at + 1);
                continue;
            }
            if (at) {
                st = ox_errorf(err, OX_EINVAL, "--strategies %s: '@target' follows a level "
                               "(basic, extended, all)", text);
                break;
            }
        }
        const char *pass = it;
        bool alias = false;
        for (size_t a = 0; a < sizeof aliases / sizeof *aliases; a++)
            if (strcmp(it, aliases[a].alias) == 0) {
                pass = aliases[a].pass;
                alias = true;
            }
        if (!ox_pass_find(pass)) {
            if (!alias) {
                st = ox_errorf(err, OX_EINVAL, "--strategies %s: unknown level or pass '%s' "
                               "(levels: original, basic, extended, all; aliases: fp16, int8; "
                               "passes: onnxscope passes)", text, it);
                break;
            }
            if (!s->missing && !(s->missing = strdup(pass)))
                st = ox_errorf(err, OX_ENOMEM, "out of memory");
        }
        if (!st && !list_add(&s->passes, pass))
            st = ox_errorf(err, OX_ENOMEM, "out of memory");
    }
    if (!st && k == 0)
        st = ox_errorf(err, OX_EINVAL, "--strategies: empty strategy in '%s'", text);
    free(copy);
    return st;
}

ox_status ox_matrix_parse_strategies(const char *list, ox_matrix_config *cfg, ox_error *err)
{
    ox_matrix_config_free(cfg);
    if (!list || !*list)
        return ox_errorf(err, OX_EINVAL, "--strategies: empty list");
    char *copy = strdup(list);
    int cap = 1;
    for (const char *p = list; *p; p++)
        cap += *p == ',';
    ox_matrix_strategy *v = calloc((size_t)cap, sizeof *v);
    if (!copy || !v) {
        free(copy);
        free(v);
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    }
    cfg->strategies = v;
    ox_status st = OX_OK;
    char *save = NULL;
    for (char *it = strtok_r(copy, ",", &save); it && !st; it = strtok_r(NULL, ",", &save)) {
        for (int i = 0; i < cfg->n_strategies && !st; i++)
            if (strcmp(v[i].label, it) == 0)
                st = ox_errorf(err, OX_EINVAL, "--strategies: '%s' given twice", it);
        if (!st)
            st = parse_one(it, &v[cfg->n_strategies++], err);
    }
    if (!st && cfg->n_strategies == 0)
        st = ox_errorf(err, OX_EINVAL, "--strategies: empty list");
    free(copy);
    if (st)
        ox_matrix_config_free(cfg);
    return st;
}

/* ---- batch ----------------------------------------------------------------- */

static const ox_type *input_type(const ox_value *v)
{
    return v->decl ? v->decl : v->type;
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* The first dim of t when the model fixes it (a number, no symbol), else -1. */
static int64_t fixed_dim0(const ox_type *t)
{
    if (!t || t->kind != OX_TYPE_TENSOR || !t->has_shape || t->rank < 1 || t->dims[0].param)
        return -1;
    return t->dims[0].value;
}

static bool add_shape(ox_infer_opts *o, const ox_shape_override *src)
{
    ox_shape_override *v = realloc(o->shapes, (size_t)(o->n_shapes + 1) * sizeof *v);
    if (!v)
        return false;
    o->shapes = v;
    ox_shape_override *d = &v[o->n_shapes];
    memset(d, 0, sizeof *d);
    d->name = strdup(src->name);
    d->rank = src->rank;
    for (int k = 0; k < src->rank; k++) {
        d->dims[k] = src->dims[k];
        d->params[k] = dup_or_null(src->params[k]);
    }
    o->n_shapes++;
    return d->name != NULL;
}

static bool add_dim(ox_infer_opts *o, const char *sym, int64_t value)
{
    for (int i = 0; i < o->n_dims; i++)
        if (strcmp(o->dims[i].symbol, sym) == 0) {
            o->dims[i].value = value;
            return true;
        }
    ox_dim_override *v = realloc(o->dims, (size_t)(o->n_dims + 1) * sizeof *v);
    if (!v)
        return false;
    o->dims = v;
    v[o->n_dims].symbol = strdup(sym);
    v[o->n_dims].value = value;
    return v[o->n_dims++].symbol != NULL;
}

static const ox_shape_override *user_shape(const ox_infer_opts *u, const char *name)
{
    for (int i = 0; u && name && i < u->n_shapes; i++)
        if (strcmp(u->shapes[i].name, name) == 0)
            return &u->shapes[i];
    return NULL;
}

/* The user's overrides with every graph input's first dim set to batch
 * (matrix.h); a --shape the user gave keeps its other dims. */
ox_status ox_matrix_batch_opts(const ox_model *m, const ox_infer_opts *user, int batch,
                               ox_infer_opts *o, int *n_resized, ox_error *err)
{
    memset(o, 0, sizeof *o);
    *n_resized = 0;
    bool ok = true;
    const ox_graph *g = m->graph;
    for (int i = 0; ok && user && i < user->n_dims; i++)
        ok = add_dim(o, user->dims[i].symbol, user->dims[i].value);
    for (int i = 0; ok && user && i < user->n_shapes; i++) {
        if (batch > 0 && user->shapes[i].rank >= 1)
            continue;   /* resized below */
        ok = add_shape(o, &user->shapes[i]);
    }
    for (int i = 0; ok && i < g->n_inputs; i++) {
        const ox_value *v = g->inputs[i];
        if (v->init || !v->name)
            continue;
        const ox_shape_override *us = user_shape(user, v->name);
        const ox_type *t = input_type(v);
        if (fixed_dim0(t) >= 0) {
            /* A fixed first dim cannot be overridden (the executor keeps
             * the declared dims): batch_fits says so. */
            if (us && batch > 0)
                ok = add_shape(o, us);
            continue;
        }
        if (us) {
            if (us->rank < 1)
                continue;
            (*n_resized)++;
            if (batch <= 0)
                continue;
            ox_shape_override s = *us;
            s.dims[0] = batch;
            s.params[0] = NULL;
            ok = add_shape(o, &s);
            continue;
        }
        if (!t || t->kind != OX_TYPE_TENSOR || !t->has_shape || t->rank < 1)
            continue;
        (*n_resized)++;
        if (batch <= 0)
            continue;
        if (t->dims[0].param) {
            ok = add_dim(o, t->dims[0].param, batch);
            continue;
        }
        if (t->rank > OX_MAX_RANK)
            continue;
        ox_shape_override s = {.name = v->name, .rank = t->rank};
        for (int k = 0; k < t->rank; k++) {
            s.dims[k] = t->dims[k].value;
            s.params[k] = t->dims[k].param;
        }
        s.dims[0] = batch;
        s.params[0] = NULL;
        ok = add_shape(o, &s);
    }
    if (!ok) {
        ox_infer_opts_free(o);
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    }
    return OX_OK;
}

/* The model's own first dim (the batch column without --batch): the first
 * input with a known first dim, else 0. */
static int model_batch(const ox_model *m, const ox_infer_opts *user)
{
    for (int i = 0; i < m->graph->n_inputs; i++) {
        const ox_value *v = m->graph->inputs[i];
        if (v->init)
            continue;
        const ox_shape_override *us = user_shape(user, v->name);
        if (us && us->rank >= 1 && us->dims[0] > 0)
            return (int)us->dims[0];
        const ox_type *t = input_type(v);
        if (t && t->kind == OX_TYPE_TENSOR && t->has_shape && t->rank >= 1) {
            if (t->dims[0].value > 0)
                return (int)t->dims[0].value;
            for (int k = 0; user && t->dims[0].param && k < user->n_dims; k++)
                if (strcmp(user->dims[k].symbol, t->dims[0].param) == 0)
                    return (int)user->dims[k].value;
        }
    }
    return 0;
}

/* Whether the model takes this batch: strict shape inference with the
 * resized inputs must pass wherever it passes with the user's overrides
 * alone (a Reshape to a hard-coded [1, ...] fails it). */
static bool batch_fits(const ox_model *m, const ox_infer_opts *user, const ox_infer_opts *bo,
                       int n_resized, int batch, char *why, size_t n)
{
    for (int i = 0; i < m->graph->n_inputs; i++) {
        const ox_value *v = m->graph->inputs[i];
        int64_t d0 = v->init ? -1 : fixed_dim0(input_type(v));
        if (d0 >= 0 && d0 != batch) {
            char ty[96];
            snprintf(why, n, "batch fixed: input '%.60s' is %s (its first dim is not symbolic)",
                     v->name ? v->name : "", ox_type_str(input_type(v), ty, sizeof ty));
            return false;
        }
    }
    if (n_resized == 0 && batch != model_batch(m, user)) {
        snprintf(why, n, "batch fixed: no graph input has a batch (first) dim to resize");
        return false;
    }
    if (n_resized == 0)
        return true;
    ox_model *c = ox_model_clone(m);
    if (!c) {
        snprintf(why, n, "out of memory");
        return false;
    }
    ox_infer_opts io = *bo;
    io.strict = true;
    io.reset = true;
    io.stats = NULL;
    ox_error err = {0};
    bool fits = ox_infer_model(c, &io, &err) == OX_OK;
    ox_model_free(c);
    if (fits)
        return true;
    char msg[OX_ERROR_MAX];
    snprintf(msg, sizeof msg, "%s", err.msg);
    ox_error_clear(&err);
    /* Inconsistent already without the batch: not the batch's fault. */
    if ((c = ox_model_clone(m))) {
        ox_infer_opts u = {0};
        if (user)
            u = *user;
        u.strict = true;
        u.reset = true;
        u.stats = NULL;
        bool base_ok = ox_infer_model(c, &u, &err) == OX_OK;
        ox_error_clear(&err);
        ox_model_free(c);
        if (!base_ok)
            return true;
    }
    snprintf(why, n, "batch fixed: the model does not take batch %d (%.180s)", batch, msg);
    return false;
}

/* ---- running ----------------------------------------------------------------- */

typedef struct ref_out {
    ox_rval **v;              /* the original's outputs, or NULL */
    bool tried;               /* a reference run was attempted */
    double p50;               /* the original's row p50 (0: no row) */
} ref_out;

typedef struct sweep {
    const ox_matrix_config *cfg;
    ox_matrix *mx;
    int n_out;
    const char **out_names;
    ref_out *refs;            /* [batch][threads][device] */
    ox_infer_opts *bopts;     /* per batch */
    char (*bfixed)[256];      /* per batch: "" or why the batch does not fit */
    double peaks[OX_MATRIX_MAX_LIST];   /* per threads index; -1 not asked yet */
} sweep;

static bool is_cancelled(const ox_matrix_config *cfg)
{
    return cfg->cancel && atomic_load(cfg->cancel) != 0;
}

static bool pm_cb(void *ctx, int pass, int round)
{
    (void)pass;
    (void)round;
    return !is_cancelled(ctx);
}

static void free_outs(ox_rval **v, int n)
{
    for (int i = 0; v && i < n; i++)
        ox_rval_free(v[i]);
    free(v);
}

static ref_out *ref_at(sweep *sw, int b, int t, int d)
{
    const ox_matrix_config *c = sw->cfg;
    return &sw->refs[((size_t)b * (size_t)c->n_threads + (size_t)t) * (size_t)c->n_devices +
                     (size_t)d];
}

static void bench_cfg(const sweep *sw, int b, int t, int d, ox_bench_config *bc)
{
    const ox_matrix_config *c = sw->cfg;
    ox_bench_config_init(bc);
    bc->threads = c->threads[t];
    bc->warmup = c->warmup;
    bc->iters = c->iters;
    bc->time_budget_s = c->time_budget_s;
    bc->seed = c->seed;
    bc->shapes = &sw->bopts[b];
    bc->inputs = c->inputs;
    bc->max_memory = c->max_memory;
    bc->cancel = c->cancel;
    char why[512];
    device_ok(c->devices[d], bc, why, sizeof why);   /* sets bc->device */
}

/* The original's outputs at (b, t, d) when no "original" row made them:
 * one untimed run. */
static ox_rval **reference(sweep *sw, int b, int t, int d)
{
    ref_out *r = ref_at(sw, b, t, d);
    if (r->v || r->tried)
        return r->v;
    r->tried = true;
    ox_model *m = ox_model_clone(sw->cfg->model);
    ox_rval **outs = calloc((size_t)sw->n_out + 1, sizeof *outs);
    if (!m || !outs) {
        ox_model_free(m);
        free(outs);
        return NULL;
    }
    ox_bench_config bc;
    bench_cfg(sw, b, t, d, &bc);
    bc.model = m;
    bc.warmup = 0;
    bc.iters = 1;
    bc.outputs = outs;
    ox_bench_result res = {0};
    ox_error err = {0};
    if (ox_bench_run(&bc, &res, &err) == OX_OK)
        r->v = outs;
    else
        free_outs(outs, sw->n_out);
    ox_error_clear(&err);
    ox_bench_result_free(&res);
    ox_model_free(m);
    return r->v;
}

static double peak_at(sweep *sw, int t)
{
    if (sw->peaks[t] < 0) {
        ox_peak p = {0};
        sw->peaks[t] = ox_peak_get(sw->cfg->threads[t], sw->cfg->recalibrate, &p) ? p.gflops : 0;
    }
    return sw->peaks[t];
}

static void row_fail(ox_matrix_row *row, ox_matrix_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void row_fail(ox_matrix_row *row, ox_matrix_status s, const char *fmt, ...)
{
    row->status = s;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(row->reason, sizeof row->reason, fmt, ap);
    va_end(ap);
}

static void describe(const ox_matrix_config *c, const ox_matrix_row *row, char *buf, size_t n)
{
    char b[32] = "model's";
    if (row->batch > 0)
        snprintf(b, sizeof b, "%d", row->batch);
    snprintf(buf, n, "%s, %d thread%s, batch %s, %s", c->strategies[row->strategy].label,
             row->threads, row->threads == 1 ? "" : "s", b, row->device);
}

/* Times one cell and compares its outputs. */
static void measure(sweep *sw, int si, int b, int t, int d, ox_model *opt,
                    const ox_model_cost *cost, ox_matrix_row *row)
{
    const ox_matrix_config *c = sw->cfg;
    char why[512];
    if (!device_ok(c->devices[d], NULL, why, sizeof why)) {
        row_fail(row, OX_MATRIX_NO_DEVICE, "%s: %s", c->devices[d], why);
        return;
    }
    ox_rval **outs = calloc((size_t)sw->n_out + 1, sizeof *outs);
    if (!outs) {
        row_fail(row, OX_MATRIX_FAILED, "out of memory");
        return;
    }
    ox_bench_config bc;
    bench_cfg(sw, b, t, d, &bc);
    bc.model = opt;
    bc.outputs = outs;
    ox_bench_result res = {0};
    ox_error err = {0};
    ox_status st = ox_bench_run(&bc, &res, &err);
    if (st == OX_ECANCELLED) {
        row_fail(row, OX_MATRIX_CANCELLED, "interrupted");
    } else if (st) {
        row_fail(row, OX_MATRIX_FAILED, "run: %.230s", err.msg);
    } else {
        row->status = OX_MATRIX_OK;
        row->iters = res.a.iters;
        row->p50 = res.a.p50;
        row->p90 = res.a.p90;
        row->min = res.a.min;
        row->mean = res.a.mean;
        row->runs_per_s = res.a.throughput_per_s;
        row->samples_per_s = res.a.throughput_per_s * (row->batch > 0 ? row->batch : 1);
        row->peak_rss_bytes = res.a.peak_rss_bytes;
        row->flops = res.a.flops;
        row->gflops = res.a.gflops;
        row->peak_gflops = peak_at(sw, t);
        row->utilization = row->gflops >= 0 && row->peak_gflops > 0
                               ? row->gflops / row->peak_gflops : -1;
        row->weights_bytes = cost->weights_bytes;
        row->arena_bytes = cost->peak_known ? cost->peak_activation_bytes : -1;
        row->bytes_moved = cost->bytes_known ? cost->bytes_read + cost->bytes_written : -1;
        ref_out *r = ref_at(sw, b, t, d);
        if (c->strategies[si].original) {
            /* The reference of every other row in this cell. */
            free_outs(r->v, sw->n_out);
            r->v = outs;
            r->tried = true;
            r->p50 = row->p50;
            outs = NULL;
            ox__matrix_accuracy(sw->n_out, r->v, r->v, sw->out_names, row);
        } else {
            ox_rval **ref = reference(sw, b, t, d);
            if (ref)
                ox__matrix_accuracy(sw->n_out, ref, outs, sw->out_names, row);
        }
        row->speedup = r->p50 > 0 && row->p50 > 0 ? r->p50 / row->p50 : 0;
    }
    ox_error_clear(&err);
    ox_bench_result_free(&res);
    free_outs(outs, sw->n_out);
}

/* Optimizes a copy of the model for strategy s at batch b; NULL with the
 * reason in why on failure. */
static ox_model *optimize(sweep *sw, const ox_matrix_strategy *s, int b, char *why, size_t n,
                          bool *cancelled)
{
    ox_model *m = ox_model_clone(sw->cfg->model);
    if (!m) {
        snprintf(why, n, "out of memory");
        return NULL;
    }
    ox_error err = {0};
    if (!s->original) {
        ox_pass_manager *pm = s->has_level ? ox_pm_new(s->level, s->target)
                                           : ox_pm_new(OX_LEVEL_BASIC, OX_TARGET_ONNX);
        ox_status st = pm ? OX_OK : OX_ENOMEM;
        if (!st && s->passes) {
            /* After a level: on top of it; alone: exactly those passes. */
            char *list = malloc(strlen(s->passes) + 2);
            if (!list)
                st = OX_ENOMEM;
            else {
                snprintf(list, strlen(s->passes) + 2, "%s%s", s->has_level ? "+" : "",
                         s->passes);
                st = ox_pm_only(pm, list, &err);
                free(list);
            }
        }
        if (!st) {
            ox_pm_set_infer_opts(pm, &sw->bopts[b]);
            st = ox_pm_run_cb(pm, m, NULL, pm_cb, (void *)sw->cfg, &err);
        }
        ox_pm_free(pm);
        if (st) {
            *cancelled = st == OX_ECANCELLED;
            snprintf(why, n, "optimize: %.230s", st == OX_ENOMEM ? "out of memory" : err.msg);
            ox_error_clear(&err);
            ox_model_free(m);
            return NULL;
        }
        ox_check_report cr = {0};
        if (ox_check_model(m, &cr) != OX_OK) {
            snprintf(why, n, "the optimized model fails the checker: %.200s",
                     cr.n_issues ? cr.issues[0].msg : "?");
            ox_check_report_free(&cr);
            ox_model_free(m);
            return NULL;
        }
        ox_check_report_free(&cr);
    }
    ox_infer_opts io = sw->bopts[b];
    io.reset = true;
    io.stats = NULL;
    if (ox_infer_model(m, &io, &err) != OX_OK) {
        snprintf(why, n, "shape inference: %.230s", err.msg);
        ox_error_clear(&err);
        ox_model_free(m);
        return NULL;
    }
    return m;
}

static ox_status sweep_init(sweep *sw, const ox_matrix_config *c, ox_matrix *mx, ox_error *err)
{
    memset(sw, 0, sizeof *sw);
    sw->cfg = c;
    sw->mx = mx;
    const ox_graph *g = c->model->graph;
    sw->n_out = g->n_outputs;
    size_t ncell = (size_t)c->n_batches * (size_t)c->n_threads * (size_t)c->n_devices;
    sw->out_names = calloc((size_t)sw->n_out + 1, sizeof *sw->out_names);
    sw->refs = calloc(ncell, sizeof *sw->refs);
    sw->bopts = calloc((size_t)c->n_batches, sizeof *sw->bopts);
    sw->bfixed = calloc((size_t)c->n_batches, sizeof *sw->bfixed);
    if (!sw->out_names || !sw->refs || !sw->bopts || !sw->bfixed)
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    for (int k = 0; k < sw->n_out; k++)
        sw->out_names[k] = g->outputs[k]->name;
    for (int t = 0; t < OX_MATRIX_MAX_LIST; t++)
        sw->peaks[t] = -1;
    for (int b = 0; b < c->n_batches; b++) {
        int n_resized = 0;
        ox_status st = ox_matrix_batch_opts(c->model, c->shapes, c->batches[b], &sw->bopts[b], &n_resized,
                                  err);
        if (st)
            return st;
        if (c->batches[b] > 0)
            batch_fits(c->model, c->shapes, &sw->bopts[b], n_resized, c->batches[b],
                       sw->bfixed[b], sizeof sw->bfixed[b]);
    }
    return OX_OK;
}

static void sweep_free(sweep *sw)
{
    const ox_matrix_config *c = sw->cfg;
    if (sw->refs) {
        size_t ncell = (size_t)c->n_batches * (size_t)c->n_threads * (size_t)c->n_devices;
        for (size_t i = 0; i < ncell; i++)
            free_outs(sw->refs[i].v, sw->n_out);
    }
    for (int b = 0; sw->bopts && b < c->n_batches; b++)
        ox_infer_opts_free(&sw->bopts[b]);
    free(sw->refs);
    free(sw->bopts);
    free(sw->bfixed);
    free(sw->out_names);
}

static ox_status check_cfg(const ox_matrix_config *c, ox_error *err)
{
    if (!c || !c->model || !c->model->graph)
        return ox_errorf(err, OX_EINVAL, "matrix: no model");
    if (c->n_strategies < 1 || c->n_threads < 1 || c->n_batches < 1 || c->n_devices < 1 ||
        c->n_threads > OX_MATRIX_MAX_LIST || c->n_batches > OX_MATRIX_MAX_LIST ||
        c->n_devices > OX_MATRIX_MAX_LIST || c->iters < 1 || c->warmup < 0)
        return ox_errorf(err, OX_EINVAL, "matrix: empty or oversized list, or iters < 1");
    return OX_OK;
}

ox_status ox_matrix_run(const ox_matrix_config *c, ox_matrix *mx, ox_error *err)
{
    memset(mx, 0, sizeof *mx);
    mx->recommended = mx->best_throughput = -1;
    ox_status st = check_cfg(c, err);
    if (st)
        return st;
    int per = c->n_batches * c->n_threads * c->n_devices;
    mx->total = c->n_strategies * per;
    mx->rows = calloc((size_t)mx->total, sizeof *mx->rows);
    if (!mx->rows)
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    sweep sw;
    if ((st = sweep_init(&sw, c, mx, err))) {
        sweep_free(&sw);
        return st;
    }
    /* The original first: its outputs are every other row's reference. */
    int *order = calloc((size_t)c->n_strategies, sizeof *order), n_order = 0;
    if (!order) {
        sweep_free(&sw);
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    }
    for (int s = 0; s < c->n_strategies; s++)
        if (c->strategies[s].original)
            order[n_order++] = s;
    for (int s = 0; s < c->n_strategies; s++)
        if (!c->strategies[s].original)
            order[n_order++] = s;
    for (int oi = 0; oi < n_order; oi++) {
        int si = order[oi];
        const ox_matrix_strategy *s = &c->strategies[si];
        for (int b = 0; b < c->n_batches; b++) {
            ox_model *opt = NULL;
            ox_model_cost cost = {0};
            char why[256] = "";
            bool opt_cancelled = false;
            int own_batch = c->batches[b] > 0 ? c->batches[b] : model_batch(c->model, c->shapes);
            for (int t = 0; t < c->n_threads; t++)
                for (int d = 0; d < c->n_devices; d++) {
                    ox_matrix_row *row = &mx->rows[mx->n_rows];
                    row->strategy = si;
                    row->threads = c->threads[t];
                    row->batch = own_batch;
                    snprintf(row->device, sizeof row->device, "%s", c->devices[d]);
                    row->arena_bytes = row->bytes_moved = -1;
                    row->flops = row->gflops = row->utilization = -1;
                    row->cosine = row->snr_db = NAN;
                    char what[256];
                    describe(c, row, what, sizeof what);
                    if (c->progress && !is_cancelled(c))
                        c->progress(c->user, mx->n_rows, mx->total, what);
                    if (is_cancelled(c) || opt_cancelled) {
                        row_fail(row, OX_MATRIX_CANCELLED, "interrupted");
                    } else if (sw.bfixed[b][0]) {
                        row_fail(row, OX_MATRIX_FIXED_BATCH, "%s", sw.bfixed[b]);
                    } else if (s->missing) {
                        row_fail(row, OX_MATRIX_UNAVAILABLE, "not available in this build "
                                 "(no pass %s)", s->missing);
                    } else {
                        if (!opt && !why[0]) {
                            opt = optimize(&sw, s, b, why, sizeof why, &opt_cancelled);
                            ox_error cerr = {0};
                            if (opt && ox_model_cost_compute(opt, &cost, &cerr) != OX_OK)
                                cost.weights_bytes = 0;
                            ox_error_clear(&cerr);
                        }
                        if (opt_cancelled)
                            row_fail(row, OX_MATRIX_CANCELLED, "interrupted");
                        else if (!opt)
                            row_fail(row, OX_MATRIX_FAILED, "%s", why);
                        else {
                            row->nodes = ox_graph_count_nodes(opt->graph, false);
                            measure(&sw, si, b, t, d, opt, &cost, row);
                        }
                    }
                    mx->n_rows++;
                    if (row->status == OX_MATRIX_CANCELLED)
                        mx->cancelled = true;
                    if (c->on_row)
                        c->on_row(c->user, row);
                }
            ox_model_free(opt);
        }
    }
    /* A reference from the original's row came after rows that needed it
     * only when the original is missing: nothing to patch. Speedups of rows
     * measured before the original's (none: it runs first) stay. */
    free(order);
    sweep_free(&sw);
    ox_matrix_summarize(c, mx);
    return mx->cancelled ? OX_ECANCELLED : OX_OK;
}

void ox_matrix_free(ox_matrix *mx)
{
    for (int i = 0; mx->rows && i < mx->n_rows; i++) {
        for (int k = 0; k < mx->rows[i].n_outputs; k++)
            free(mx->rows[i].outputs[k].name);
        free(mx->rows[i].outputs);
    }
    free(mx->rows);
    for (int i = 0; i < mx->n_notes; i++)
        free(mx->notes[i]);
    free(mx->notes);
    memset(mx, 0, sizeof *mx);
    mx->recommended = mx->best_throughput = -1;
}
