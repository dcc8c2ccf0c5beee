/* `onnxscope optimize MODEL -o OUT`: runs the pass pipeline, checks the
 * result (structure, and with --check N numerics against the original on
 * seeded random inputs) and writes it; text or one JSON object. */
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/commands.h"
#include "onnxscope/bench.h"
#include "onnxscope/bisect.h"
#include "onnxscope/check.h"
#include "onnxscope/cost.h"
#include "onnxscope/exec.h"
#include "onnxscope/io.h"
#include "onnxscope/opset.h"
#include "onnxscope/passes.h"
#include "onnxscope/quantize.h"
#include "onnxscope/randinput.h"


/* quantize_dynamic's entries (docs/CLI.md): which weights went int8 and
 * how much each lost. */
static json_t *quant_json(const ox_pass_report *r)
{
    json_t *arr = json_array();
    for (int i = 0; i < r->n_quant; i++) {
        const ox_quant_entry *e = &r->quant[i];
        json_t *o = json_object();
        json_object_set_new(o, "node", json_string(e->node));
        json_object_set_new(o, "op_type", json_string(e->op));
        json_object_set_new(o, "weight", json_string(e->weight));
        json_object_set_new(o, "form", json_string(e->form));
        json_object_set_new(o, "node_id", json_integer(e->node_id));
        json_object_set_new(o, "elements", json_integer(e->elems));
        json_object_set_new(o, "channels", json_integer(e->channels));
        json_object_set_new(o, "scale_min", json_real(e->scale_min));
        json_object_set_new(o, "scale_max", json_real(e->scale_max));
        json_object_set_new(o, "zero_point", json_integer(e->zero_point));
        json_object_set_new(o, "max_abs_err", json_real(e->max_abs_err));
        json_object_set_new(o, "snr_db", isfinite(e->snr_db) ? json_real(e->snr_db) : json_null());
        json_object_set_new(o, "bytes_before", json_integer(e->bytes_before));
        json_object_set_new(o, "bytes_after", json_integer(e->bytes_after));
        json_array_append_new(arr, o);
    }
    return arr;
}

static void quant_print(const ox_pass_report *r)
{
    for (int i = 0; i < r->n_quant; i++) {
        const ox_quant_entry *e = &r->quant[i];
        char snr[32];
        if (isfinite(e->snr_db))
            snprintf(snr, sizeof snr, "%.1f dB", e->snr_db);
        else
            snprintf(snr, sizeof snr, "exact");
        printf("  int8 %s (%s -> %s): weight %s, %lld scale%s %.3g..%.3g, zero point %d, "
               "max abs err %.3g, SNR %s\n", e->node[0] ? e->node : "?", e->op, e->form,
               e->weight, (long long)e->channels, e->channels == 1 ? "" : "s", e->scale_min,
               e->scale_max, e->zero_point, e->max_abs_err, snr);
    }
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: onnxscope optimize MODEL -o OUT [--level basic|extended|all]\n"
            "          [--passes a,b] [--skip a,b] [--target onnx|ort]\n"
            "          [--shape NAME=1x3x224x224] [--dim SYM=VALUE] [--json] [--force]\n"
            "          [--max-memory SIZE] [--opset N] [--keep-fp32 OP,...] [--fp16-io]\n"
            "          [--device cpu|cuda]\n"
            "          [--quant-format integer|qdq] [--quant-conv] [--quant-per-tensor]\n"
            "          [--quant-min-elems N]\n"
            "          [--check N [--bisect] [--input NAME=FILE.pb] [--fill NAME=VALUE]\n"
            "                     [--int-max M] [--default-dim D]\n"
            "                     [--rtol R] [--atol A] [--min-cosine C]]\n"
            "--check N runs the original and the optimized model on N input sets: the\n"
            "--input/--fill values, the other inputs seeded random; unknown dims are an\n"
            "error unless --default-dim. Outside rtol 1e-4 / atol 1e-5 the output is not\n"
            "written (exit 1) unless --force. --max-memory caps the tensor memory of those\n"
            "runs (default 3/4 of RAM; K/M/G suffixes). --bisect: when the check fails, find\n"
            "the first pass, and in it the first rewrite, whose result diverges, and name\n"
            "the nodes it touched. `onnxscope passes` lists the passes. --opset N first\n"
            "converts the model to default-domain opset N (as `onnxscope convert`), e.g.\n"
            "13 -> 17 so that LayerNormalization can be fused.\n"
            "to_fp16 (opt-in: --passes +to_fp16) converts to float16; --keep-fp32 adds op\n"
            "types to its block list, --fp16-io makes graph inputs/outputs float16 too.\n"
            "With to_fp16 on, --check passes an output within rtol 1e-2 / atol 1e-3 or\n"
            "with cosine similarity >= 0.999 to the original's; with quantize_dynamic on,\n"
            "within the tolerance or with cosine >= 0.99. --rtol, --atol and --min-cosine\n"
            "replace those values (--min-cosine 0: no cosine criterion); the check line\n"
            "says which criterion applied and whose it is. --device cuda runs both\n"
            "models of --check on the GPU (exit 4 when no GPU is usable).\n"
            "--quant-* set the opt-in quantize_dynamic pass (--passes +quantize_dynamic):\n"
            "output form, Conv weights too, one scale per weight, and the smallest weight\n"
            "(elements, default %d) it quantizes.\n", OX_QUANT_MIN_ELEMS_DEFAULT);
}

typedef struct check_res {
    int runs;
    double max_abs, max_rel;
    double min_cos;       /* lowest cosine similarity of an output (1 when none) */
    int by_cosine;        /* outputs outside rtol/atol that the cosine accepted */
    bool ok;
    char why[256];
} check_res;

/* What --check accepts: |a-b| <= atol + rtol*|b| everywhere, or (min_cos
 * > 0) a cosine similarity of at least min_cos over the output; `from` says
 * whose criteria these are (docs/CLI.md "optimize --check"). */
typedef struct check_tol {
    double rtol, atol, min_cos;
    char from[96];
    bool half_floor;      /* neither --rtol nor --atol: float16 outputs get a float16 tolerance */
} check_tol;

/* The criteria for the passes that run: float rounding for the lossless
 * passes; to_fp16 a float16 tolerance or cosine >= 0.999; quantize_dynamic
 * (int8 products: errors of a step of the activation's scale, spread over
 * the output) cosine >= 0.99, MobileNetV2's 35 quantized Convs keeping
 * 0.9965 (docs/PASSES.md); both: the looser of each. --rtol, --atol and
 * --min-cosine (< 0: not given) replace the value they name. */
static check_tol check_criteria(bool fp16, bool quant, double rtol, double atol, double min_cos)
{
    check_tol t = {.rtol = OX_CHECK_RTOL, .atol = OX_CHECK_ATOL};
    if (fp16) {
        t.rtol = 1e-2;
        t.atol = 1e-3;
        t.min_cos = 0.999;
    }
    if (quant)
        t.min_cos = 0.99;
    t.half_floor = rtol < 0 && atol < 0;
    if (rtol >= 0)
        t.rtol = rtol;
    if (atol >= 0)
        t.atol = atol;
    if (min_cos >= 0)
        t.min_cos = min_cos;
    /* "to_fp16+quantize_dynamic, --atol" */
    snprintf(t.from, sizeof t.from, "%s%s%s%s",
             fp16 && quant ? "to_fp16+quantize_dynamic" : fp16 ? "to_fp16"
                                                        : quant ? "quantize_dynamic" : "default",
             rtol >= 0 ? ", --rtol" : "", atol >= 0 ? ", --atol" : "",
             min_cos >= 0 ? ", --min-cosine" : "");
    return t;
}

static bool float_dt(ox_dtype d)
{
    return d == OX_DT_FLOAT || d == OX_DT_FLOAT16 || d == OX_DT_BFLOAT16 || d == OX_DT_DOUBLE;
}

/* Accumulates the error between two runtime values into r. */
static void compare(const ox_rval *a, const ox_rval *b, const check_tol *tol, check_res *r)
{
    if (!a || !b || a->kind != b->kind) {
        if (a != b) {
            r->ok = false;
            snprintf(r->why, sizeof r->why, "output kinds differ");
        }
        return;
    }
    if (a->kind != OX_RV_TENSOR) {
        if (a->n_items != b->n_items) {
            r->ok = false;
            snprintf(r->why, sizeof r->why, "sequence lengths differ");
            return;
        }
        for (int i = 0; i < a->n_items; i++)
            compare(a->items[i], b->items[i], tol, r);
        return;
    }
    const ox_tensor *x = a->t, *y = b->t;
    /* --fp16-io: a float16 output stands for a float32 one. */
    bool same_dt = x->dtype == y->dtype || (float_dt(x->dtype) && float_dt(y->dtype));
    if (!same_dt || x->rank != y->rank ||
        memcmp(x->dims, y->dims, (size_t)x->rank * sizeof *x->dims)) {
        r->ok = false;
        snprintf(r->why, sizeof r->why, "output types or shapes differ");
        return;
    }
    if (x->dtype == OX_DT_STRING) {
        if (!ox_tensor_equal(x, y)) {
            r->ok = false;
            snprintf(r->why, sizeof r->why, "string outputs differ");
        }
        return;
    }
    bool close = true;
    double dot = 0, nx = 0, ny = 0;
    /* A float16/bfloat16 output: the check's float16 floor (bench.h). */
    double rt = tol->rtol, at = tol->atol;
    if (tol->half_floor)
        ox_check_tolerance(x->dtype, y->dtype, &rt, &at);
    for (int64_t i = 0; i < x->numel; i++) {
        double p = ox_tensor_get_f64(x, i), q = ox_tensor_get_f64(y, i);
        if (isfinite(p) && isfinite(q)) {
            dot += p * q;
            nx += p * p;
            ny += q * q;
        }
        if (isnan(p) && isnan(q))
            continue;
        if (p == q)
            continue;
        double d = fabs(p - q);
        if (isnan(d))
            d = INFINITY;
        double rel = fabs(q) > 0 ? d / fabs(q) : d;
        if (d > r->max_abs)
            r->max_abs = d;
        if (rel > r->max_rel)
            r->max_rel = rel;
        if (!(d <= at + rt * fabs(q)))
            close = false;
    }
    /* Both all zero: identical directions. */
    double cos = nx > 0 && ny > 0 ? dot / sqrt(nx * ny) : (nx == ny ? 1.0 : 0.0);
    if (cos < r->min_cos)
        r->min_cos = cos;
    if (!close && !(tol->min_cos > 0 && cos >= tol->min_cos))
        r->ok = false;
    else if (!close)
        r->by_cosine++;
}

/* The input set for a model whose float inputs may be float16 where the
 * original's are float32 (--fp16-io): a converted copy; else a share. */
static ox_rval *input_for(const ox_model *b, int i, const ox_rval *v)
{
    const ox_value *gi = i < b->graph->n_inputs ? b->graph->inputs[i] : NULL;
    ox_dtype want = gi && gi->type && gi->type->kind == OX_TYPE_TENSOR ? gi->type->elem
                                                                        : OX_DT_UNDEFINED;
    if (!v || v->kind != OX_RV_TENSOR || !float_dt(want) || !float_dt(v->t->dtype) ||
        v->t->dtype == want)
        return v ? ox_rval_clone(v) : NULL;
    ox_tensor *t = ox_tensor_new(want, v->t->rank, v->t->dims);
    for (int64_t k = 0; t && k < t->numel; k++)
        ox_tensor_set_f64(t, k, ox_tensor_get_f64(v->t, k));
    return t ? ox_rval_tensor(t) : NULL;
}

static ox_status run_once(ox_exec *e, const ox_model *m, ox_rval **in, ox_rval ***out,
                          ox_error *err)
{
    int no = m->graph->n_outputs;
    *out = calloc((size_t)no + 1, sizeof **out);
    if (!*out)
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    return ox_exec_run(e, m->graph->n_inputs, in, no, *out, err);
}

static void free_vals(ox_rval **v, int n)
{
    for (int i = 0; v && i < n; i++)
        ox_rval_free(v[i]);
    free(v);
}

/* Runs both models on n input sets (--input/--fill values, the rest drawn
 * with seeds 0..n-1). */
static ox_status check_models(ox_model *a, ox_model *b, const ox_input_opts *inputs, int n,
                              int64_t max_memory, ox_device device, const check_tol *tol,
                              check_res *r, ox_error *err)
{
    ox_exec *ea = NULL, *eb = NULL;
    ox_exec_opts eo = {.max_memory = max_memory, .device = device};
    r->ok = true;
    r->min_cos = 1;
    ox_status st = ox_exec_new(a, &eo, &ea, err);
    if (!st)
        st = ox_exec_new(b, &eo, &eb, err);
    /* The passes never drop graph inputs; before IR 4 they may append new
     * initializers to the list, which run as NULL (use the initializer). */
    if (!st && (a->graph->n_inputs > b->graph->n_inputs ||
                a->graph->n_outputs != b->graph->n_outputs))
        st = ox_errorf(err, OX_EMODEL, "graph inputs/outputs differ");
    for (int s = 0; !st && s < n; s++) {
        int ni = b->graph->n_inputs;
        ox_rval **in = calloc((size_t)ni + 1, sizeof *in), **oa = NULL, **ob = NULL;
        ox_rval **inb = calloc((size_t)ni + 1, sizeof *inb);
        if (!in || !inb) {
            free(in);
            free(inb);
            st = ox_errorf(err, OX_ENOMEM, "out of memory");
            break;
        }
        st = ox_inputs_make(a, inputs, (uint32_t)s, in, err);
        if (!st && (st = run_once(ea, a, in, &oa, err)) != OX_OK) {
            /* Random data may be invalid for the model (indices, axes,
             * pads fed as inputs): say so rather than blame the passes. */
            char m2[OX_ERROR_MAX];
            snprintf(m2, sizeof m2, "the original model fails on these inputs: %.300s "
                     "(give values with --fill NAME=VALUE or --input NAME=FILE.pb)", err->msg);
            snprintf(err->msg, sizeof err->msg, "%s", m2);
        }
        for (int k = 0; !st && k < ni; k++)
            inb[k] = input_for(b, k, in[k]);
        if (!st && (st = run_once(eb, b, inb, &ob, err)) != OX_OK) {
            char m2[OX_ERROR_MAX];
            snprintf(m2, sizeof m2, "the optimized model fails: %.400s", err->msg);
            snprintf(err->msg, sizeof err->msg, "%s", m2);
        }
        for (int k = 0; !st && k < a->graph->n_outputs; k++)
            compare(oa[k], ob[k], tol, r);
        free_vals(oa, a->graph->n_outputs);
        free_vals(ob, b->graph->n_outputs);
        free_vals(in, ni);
        free_vals(inb, ni);
        if (!st)
            r->runs++;
    }
    ox_exec_free(ea);
    ox_exec_free(eb);
    return st;
}

static json_t *stat_json(const ox_pass_stat *s)
{
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(s->name));
    json_object_set_new(o, "runs", json_integer(s->runs));
    json_object_set_new(o, "rewrites", json_integer(s->rewrites));
    json_object_set_new(o, "nodes_removed", json_integer(s->nodes_removed));
    json_object_set_new(o, "nodes_added", json_integer(s->nodes_added));
    json_object_set_new(o, "nodes_replaced", json_integer(s->nodes_replaced));
    json_object_set_new(o, "initializers_removed", json_integer(s->inits_removed));
    json_object_set_new(o, "initializers_added", json_integer(s->inits_added));
    json_object_set_new(o, "bytes_saved", json_integer(s->bytes_saved));
    json_t *ops = json_object();
    for (int k = 0; k < s->n_ops; k++) {
        json_t *d = json_object();
        json_object_set_new(d, "removed", json_integer(s->ops[k].removed));
        json_object_set_new(d, "added", json_integer(s->ops[k].added));
        json_object_set_new(ops, s->ops[k].op_type, d);
    }
    json_object_set_new(o, "ops", ops);
    json_object_set_new(o, "category", json_string(ox_pass_category_name(s->category)));
    /* Unknown is null, never 0. */
    json_object_set_new(o, "macs_delta", s->cost_known ? json_integer(s->macs_delta) : json_null());
    json_object_set_new(o, "flops_delta",
                        s->cost_known ? json_integer(s->flops_delta) : json_null());
    json_object_set_new(o, "weight_bytes_delta", json_integer(s->weight_bytes_delta));
    json_object_set_new(o, "peak_activation_delta",
                        s->peak_known ? json_integer(s->peak_delta) : json_null());
    if (s->note)
        json_object_set_new(o, "note", json_string(s->note));
    return o;
}

static json_t *bisect_json(const ox_bisect_result *b, bool ran)
{
    json_t *o = json_object();
    json_object_set_new(o, "found", json_boolean(b->found));
    if (!ran) {
        json_object_set_new(o, "reason", json_string("outputs agree: nothing to bisect"));
        return o;
    }
    if (b->found) {
        json_object_set_new(o, "pass", json_string(b->pass));
        json_object_set_new(o, "round", json_integer(b->round));
        json_object_set_new(o, "pass_rewrites", json_integer(b->pass_rewrites));
        json_object_set_new(o, "rewrite", b->rewrite ? json_integer(b->rewrite) : json_null());
        json_object_set_new(o, "max_abs_err", json_real(b->max_abs_err));
        json_object_set_new(o, "max_rel_err", json_real(b->max_rel_err));
        json_t *arr = json_array();
        for (int i = 0; i < b->n_nodes; i++) {
            json_t *n = json_object();
            json_object_set_new(n, "id", json_integer(b->nodes[i].id));
            json_object_set_new(n, "name", json_string(b->nodes[i].name));
            json_object_set_new(n, "op_type", json_string(b->nodes[i].op_type));
            json_object_set_new(n, "change",
                                json_string(ox_bisect_change_name(b->nodes[i].change)));
            json_array_append_new(arr, n);
        }
        json_object_set_new(o, "nodes", arr);
    }
    json_object_set_new(o, "reason", json_string(b->why));
    json_object_set_new(o, "models_checked", json_integer(b->models_checked));
    return o;
}

/* The bisect result as text: where, then one line per node. */
static void bisect_print(const ox_bisect_result *b, bool ran)
{
    if (!ran) {
        printf("bisect: outputs agree: nothing to bisect\n");
        return;
    }
    if (!b->found) {
        printf("bisect: no pass found: %s (%d model(s) checked)\n", b->why,
               b->models_checked);
        return;
    }
    if (b->rewrite)
        printf("bisect: first diverging pass %s (round %d), rewrite %d of %d: %s\n", b->pass,
               b->round, b->rewrite, b->pass_rewrites, b->why);
    else
        printf("bisect: first diverging pass %s (round %d, %d rewrite(s)): %s\n", b->pass,
               b->round, b->pass_rewrites, b->why);
    for (int i = 0; i < b->n_nodes; i++)
        printf("  %-7s node '%s' (%s)%s\n", ox_bisect_change_name(b->nodes[i].change),
               b->nodes[i].name, b->nodes[i].op_type,
               b->nodes[i].in_subgraph ? " in a subgraph" : "");
}

static bool pass_on(const ox_pass_manager *pm, const char *name)
{
    for (int i = 0; i < ox_pm_count(pm); i++)
        if (!strcmp(ox_pm_pass(pm, i)->name, name))
            return ox_pm_enabled(pm, i);
    return false;
}

int ox_cmd_optimize(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"level", required_argument, NULL, 'l'},
        {"passes", required_argument, NULL, 'p'},
        {"skip", required_argument, NULL, 'k'},
        {"target", required_argument, NULL, 't'},
        OX_CLI_SHAPE_OPTIONS,
        OX_CLI_INPUT_OPTIONS,
        {"check", required_argument, NULL, 'c'},
        {"json", no_argument, NULL, 'j'},
        {"force", no_argument, NULL, 'f'},
        {"max-memory", required_argument, NULL, 'M'},
        {"bisect", no_argument, NULL, 'B'},
        {"device", required_argument, NULL, 'D'},
        {"keep-fp32", required_argument, NULL, 'K'},
        {"fp16-io", no_argument, NULL, 'F'},
        {"quant-format", required_argument, NULL, 'Q'},
        {"quant-conv", no_argument, NULL, 'C'},
        {"quant-per-tensor", no_argument, NULL, 'T'},
        {"quant-min-elems", required_argument, NULL, 'E'},
        {"opset", required_argument, NULL, 'O'},
        {"rtol", required_argument, NULL, 'r'},
        {"atol", required_argument, NULL, 'a'},
        {"min-cosine", required_argument, NULL, 'm'},
        {"help", no_argument, NULL, 'h'},
        {0, 0, 0, 0},
    };
    ox_infer_opts io = {0};
    ox_input_opts inputs = {.shapes = &io};
    double rtol = -1, atol = -1, min_cos = -1;   /* < 0: the passes' criteria */
    const char *tol_opt = NULL;   /* one of them given (they need --check) */
    bool inputs_given = false;
    const char *out_path = NULL, *only = NULL, *skip = NULL, *keep32 = NULL;
    bool fp16_io = false;
    ox_pass_level level = OX_LEVEL_BASIC;
    ox_pass_target target = OX_TARGET_ONNX;
    bool level_given = false;
    int n_check = 0, rc = 0;
    int64_t max_memory = 0;
    ox_device device = OX_DEVICE_CPU;
    bool json = false, force = false, bisect = false;
    ox_quant_opts qo;
    ox_quant_opts_default(&qo);
    const char *quant_opt = NULL;   /* a --quant-* option given (to warn) */
    long opset = -1;
    optind = 1;
    int c;
    while ((c = ox_cli_getopt(argc, argv, "optimize", "o:h", longopts)) != -1) {
        switch (c) {
        case 'o': out_path = optarg; break;
        case 'l':
            level_given = true;
            if (!ox_pass_level_parse(optarg, &level)) {
                ox_cli_error(NULL, "--level: expected basic, extended or all");
                rc = 2;
            }
            break;
        case 't':
            if (!ox_pass_target_parse(optarg, &target)) {
                ox_cli_error(NULL, "--target: expected onnx or ort");
                rc = 2;
            }
            break;
        case 'p': only = optarg; break;
        case 'k': skip = optarg; break;
        case 'c': {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (*end || v < 0 || v > 1000) {
                ox_cli_error(NULL, "--check: expected a count 0..1000");
                rc = 2;
            }
            n_check = (int)v;
            break;
        }
        case 'j': json = true; break;
        case 'f': force = true; break;
        case 'B': bisect = true; break;
        case 'D': {
            int drc = ox_cli_device(optarg, &device);
            if (drc) {
                ox_infer_opts_free(&io);
                ox_input_opts_free(&inputs);
                return drc;
            }
            break;
        }
        case 'K':
            if (strspn(optarg + (*optarg == '='),
                       "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_,") !=
                    strlen(optarg + (*optarg == '=')) || !*optarg) {
                ox_cli_error(NULL, "--keep-fp32: expected op types separated by commas "
                             "(a leading '=' replaces the default block list)");
                rc = 2;
            }
            keep32 = optarg;
            break;
        case 'F': fp16_io = true; break;
        case 'Q':
            quant_opt = "--quant-format";
            if (!ox_quant_format_parse(optarg, &qo.format)) {
                ox_cli_error(NULL, "--quant-format: expected integer or qdq");
                rc = 2;
            }
            break;
        case 'C': quant_opt = "--quant-conv"; qo.conv = true; break;
        case 'T': quant_opt = "--quant-per-tensor"; qo.per_tensor = true; break;
        case 'E': {
            char *end;
            long long v = strtoll(optarg, &end, 10);
            quant_opt = "--quant-min-elems";
            if (!*optarg || *end || v < 0) {
                ox_cli_error(NULL, "--quant-min-elems: expected a count >= 0");
                rc = 2;
            }
            qo.min_elems = v;
            break;
        }
        case 'O':
            if (!ox_cli_parse_long("--opset", optarg, OX_OPSET_MIN, OX_OPSET_MAX, &opset))
                rc = 2;
            break;
        case 'M':
            if (!ox_cli_parse_size("--max-memory", optarg, &max_memory))
                rc = 2;
            break;
        case 'r':
            tol_opt = "--rtol";
            if (!ox_cli_parse_real("--rtol", optarg, 0, INFINITY, &rtol))
                rc = 2;
            break;
        case 'a':
            tol_opt = "--atol";
            if (!ox_cli_parse_real("--atol", optarg, 0, INFINITY, &atol))
                rc = 2;
            break;
        case 'm':
            tol_opt = "--min-cosine";
            if (!ox_cli_parse_real("--min-cosine", optarg, 0, 1, &min_cos))
                rc = 2;
            break;
        case 'h':
            usage(stdout);
            ox_infer_opts_free(&io);
            ox_input_opts_free(&inputs);
            return 0;
        default: {
            int h = ox_cli_input_opt(c, optarg, &io, &inputs);
            if (h <= 0)
                rc = 2;
            inputs_given |= c != OX_OPT_SHAPE && c != OX_OPT_DIM;
            break;
        }
        }
        if (rc)
            break;
    }
    if (!rc && optind != argc - 1) {
        if (optind >= argc)
            ox_cli_error(NULL, "optimize: no model given (usage: onnxscope optimize MODEL -o OUT)");
        else
            ox_cli_error(NULL, "optimize: one model only (got '%s' and '%s')", argv[optind],
                         argv[optind + 1]);
        rc = 2;
    }
    if (!rc && !out_path) {
        ox_cli_error(NULL, "optimize: no output given: add -o OUT.onnx (the input is never "
                     "overwritten)");
        rc = 2;
    }
    if (!rc && bisect && n_check == 0) {
        ox_cli_error(NULL, "optimize: --bisect compares outputs: it needs --check N");
        rc = 2;
    }
    if (!rc && tol_opt && n_check == 0) {
        ox_cli_error(NULL, "optimize: %s sets what --check N accepts; add --check", tol_opt);
        rc = 2;
    }
    if (!rc && inputs_given && n_check == 0) {
        ox_cli_error(NULL, "optimize: --input/--fill/--int-max/--default-dim only feed --check N; "
                     "add --check");
        rc = 2;
    }
    if (rc) {
        ox_infer_opts_free(&io);
        ox_input_opts_free(&inputs);
        return rc;
    }
    /* Say what the preset adds (issue 10): a level or target that adds
     * nothing here must not look like it ran something more. */
    char note[512] = "", none[512] = "";
    if (only && level_given && level != OX_LEVEL_BASIC)
        ox_cli_error(NULL, "--level %s has no effect with --passes (it runs exactly the passes "
                     "named)", ox_pass_level_name(level));
    if (!only) {
        ox_pass_preset_note(level, target, note, sizeof note, none, sizeof none);
        if (none[0])
            ox_cli_error(NULL, "%s", none);
    }
    const char *path = argv[optind];
    ox_model *m = ox_cli_load(path, &rc), *opt = NULL, *conv = NULL;
    ox_pass_manager *pm = NULL;
    ox_pass_report rep = {0};
    check_res chk = {0};
    check_tol tol = check_criteria(false, false, rtol, atol, min_cos);
    ox_bisect_result bis = {0};
    bool bisected = false;
    ox_error err = {0};
    ox_model_cost cb = {0}, ca = {0};
    if (!m) {
        ox_infer_opts_free(&io);
        ox_input_opts_free(&inputs);
        return rc;
    }
    if (!ox_cli_check_inputs(path, m, &io, n_check > 0 ? &inputs : NULL)) {
        rc = 2;
        goto out;
    }
    if (ox_infer_model(m, &io, &err) != OX_OK) {
        ox_cli_error(path, "shape inference: %s", err.msg);
        rc = 1;
        goto out;
    }
    ox_model_cost_compute(m, &cb, &err);
    pm = ox_pm_new(level, target);
    opt = ox_model_clone(m);
    if (!pm || !opt) {
        ox_cli_error(NULL, "out of memory");
        rc = 1;
        goto out;
    }
    if ((only && ox_pm_only(pm, only, &err)) || (skip && ox_pm_skip(pm, skip, &err))) {
        ox_cli_error(NULL, "%s", err.msg);
        rc = 2;
        goto out;
    }
    if ((keep32 || fp16_io) && !pass_on(pm, "to_fp16"))
        ox_cli_error(NULL, "--keep-fp32/--fp16-io have no effect without to_fp16 (add "
                     "--passes +to_fp16)");
    if ((keep32 && ox_pm_set_option(pm, "keep-fp32", keep32, &err)) ||
        (fp16_io && ox_pm_set_option(pm, "fp16-io", "1", &err))) {
        ox_cli_error(NULL, "%s", err.msg);
        rc = 1;
        goto out;
    }
    /* Lossy passes the user asked for are checked with their criteria. */
    tol = check_criteria(pass_on(pm, "to_fp16"), pass_on(pm, "quantize_dynamic"), rtol, atol,
                         min_cos);
    ox_pm_set_infer_opts(pm, &io);
    ox_pm_set_quant_opts(pm, &qo);
    if (quant_opt) {
        const ox_pass *qp = ox_pass_find("quantize_dynamic");
        bool on = false;
        for (int i = 0; i < ox_pm_count(pm); i++)
            on |= ox_pm_pass(pm, i) == qp && ox_pm_enabled(pm, i);
        if (!on)
            ox_cli_error(NULL, "%s has no effect: quantize_dynamic is not enabled (add --passes "
                         "+quantize_dynamic)", quant_opt);
    }
    /* --opset: convert first, so that the passes see the target's ops
     * (bisecting then starts from the converted model too). */
    ox_opset_report orep = {0};
    if (opset > 0) {
        if (ox_opset_convert(opt, opset, &orep, &err) != OX_OK) {
            ox_cli_error(path, "%s", err.msg);
            rc = 1;
            goto out;
        }
        if (bisect && !(conv = ox_model_clone(opt))) {
            ox_cli_error(NULL, "out of memory");
            rc = 1;
            goto out;
        }
    }
    if (ox_pm_run(pm, opt, &rep, &err) != OX_OK) {
        ox_cli_error(path, "optimize: %s", err.msg);
        rc = 1;
        goto out;
    }
    /* The passes may have specialized the graph to --shape/--dim: the
     * saved model declares those dims (symbols nobody fixed stay). */
    if (ox_infer_fix_declared(opt, &io, &err) != OX_OK) {
        ox_cli_error(NULL, "%s", err.msg);
        rc = 1;
        goto out;
    }
    ox_check_report cr = {0};
    if (ox_check_model(opt, &cr) != OX_OK) {
        ox_cli_error(path, "optimized model fails the checker: %s",
                     cr.n_issues ? cr.issues[0].msg : "?");
        ox_check_report_free(&cr);
        rc = 1;
        goto out;
    }
    ox_check_report_free(&cr);
    ox_model_cost_compute(opt, &ca, &err);
    bool write = true;
    if (n_check > 0) {
        ox_error cerr = {0};
        ox_status cst = check_models(m, opt, &inputs, n_check, max_memory, device, &tol, &chk,
                                      &cerr);
        if (cst != OX_OK) {
            ox_cli_error(path, "--check: %s", cerr.msg);
            chk.ok = false;
            snprintf(chk.why, sizeof chk.why, "%.200s", cerr.msg);
        }
        if (cst == OX_EIO) {   /* an --input file: nothing was checked */
            rc = 3;
            goto out;
        }
        if (!chk.ok) {
            rc = 1;
            write = force;
        }
        if (!chk.ok && bisect) {
            ox_bisect_opts bo = {.inputs = &inputs, .n_sets = n_check, .rtol = tol.rtol,
                                 .atol = tol.atol, .half_floor = tol.half_floor,
                                 .max_memory = max_memory};
            ox_error berr = {0};
            if (ox_pm_bisect(pm, conv ? conv : m, &bo, &bis, &berr) != OX_OK) {
                ox_cli_error(path, "--bisect: %s", berr.msg);
                snprintf(bis.why, sizeof bis.why, "%.200s", berr.msg);
            }
            bisected = true;
        }
    }
    int64_t out_bytes = -1;
    if (write) {
        ox_save_opts so = {0};
        ox_error serr = {0};
        ox_status st = ox_save(opt, out_path, &so, &serr);
        if (st != OX_OK) {
            ox_cli_error(out_path, "%s", serr.msg);
            rc = ox_status_exit_code(st) ? ox_status_exit_code(st) : 3;
            goto out;
        }
        struct stat sb;
        if (stat(out_path, &sb) == 0 && S_ISREG(sb.st_mode))
            out_bytes = (int64_t)sb.st_size;
    }
    bool dt_changed = memcmp(cb.weights_bytes_by_dtype, ca.weights_bytes_by_dtype,
                             sizeof cb.weights_bytes_by_dtype) != 0;
    if (json) {
        json_t *o = json_object();
        json_object_set_new(o, "model", json_string(path));
        json_object_set_new(o, "output", write ? json_string(out_path) : json_null());
        json_object_set_new(o, "level", json_string(ox_pass_level_name(level)));
        json_object_set_new(o, "target", json_string(ox_pass_target_name(target)));
        if (opset > 0)
            json_object_set_new(o, "opset", json_integer(opset));
        if (!only) {
            const ox_pass *v[64];
            json_t *la = json_array(), *ta = json_array();
            int nl = ox_pass_level_adds(level, target, v, 64);
            for (int i = 0; i < nl && i < 64; i++)
                json_array_append_new(la, json_string(v[i]->name));
            int nt = ox_pass_target_adds(level, target, v, 64);
            for (int i = 0; i < nt && i < 64; i++)
                json_array_append_new(ta, json_string(v[i]->name));
            json_object_set_new(o, "level_adds", la);
            json_object_set_new(o, "target_adds", ta);
        }
        json_object_set_new(o, "before", ox_cli_info_json(m, &cb));
        json_object_set_new(o, "after", ox_cli_info_json(opt, &ca));
        /* Size change (issue 15): the written file against the input's. */
        json_object_set_new(o, "output_bytes", out_bytes >= 0 ? json_integer(out_bytes)
                                                              : json_null());
        json_object_set_new(o, "size_ratio", out_bytes >= 0 && m->file_size
                                                 ? json_real((double)out_bytes /
                                                             (double)m->file_size)
                                                 : json_null());
        json_object_set_new(o, "iterations", json_integer(rep.iterations));
        json_t *arr = json_array();
        for (int i = 0; i < rep.n_passes; i++)
            json_array_append_new(arr, stat_json(&rep.passes[i]));
        json_object_set_new(o, "passes", arr);
        if (rep.n_quant)
            json_object_set_new(o, "quantization", quant_json(&rep));
        if (n_check > 0) {
            json_t *k = json_object();
            json_object_set_new(k, "runs", json_integer(chk.runs));
            json_object_set_new(k, "max_abs_err", json_real(chk.max_abs));
            json_object_set_new(k, "max_rel_err", json_real(chk.max_rel));
            json_object_set_new(k, "min_cosine", json_real(chk.min_cos));
            json_object_set_new(k, "rtol", json_real(tol.rtol));
            json_object_set_new(k, "atol", json_real(tol.atol));
            json_object_set_new(k, "min_cosine_accepted",
                                tol.min_cos > 0 ? json_real(tol.min_cos) : json_null());
            json_object_set_new(k, "criteria_of", json_string(tol.from));
            json_object_set_new(k, "accepted_by",
                                !chk.ok ? json_null()
                                        : json_string(chk.by_cosine ? "cosine" : "tolerance"));
            json_object_set_new(k, "ok", json_boolean(chk.ok));
            if (!chk.ok && chk.why[0])
                json_object_set_new(k, "reason", json_string(chk.why));
            json_object_set_new(o, "check", k);
        }
        if (bisect)
            json_object_set_new(o, "bisect", bisect_json(&bis, bisected));
        char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        if (s)
            puts(s);
        free(s);
        json_decref(o);
    } else {
        char b1[32], b2[32];
        printf("%s: nodes %d -> %d, weights %s -> %s, %d round(s)\n", path, rep.nodes_before,
               rep.nodes_after, ox_cli_bytes((double)rep.init_bytes_before, b1, sizeof b1),
               ox_cli_bytes((double)rep.init_bytes_after, b2, sizeof b2), rep.iterations);
        if (dt_changed) {
            char d1[512], d2[512];
            printf("  weights by dtype: %s -> %s\n", ox_cli_dtype_bytes(&cb, d1, sizeof d1),
                   ox_cli_dtype_bytes(&ca, d2, sizeof d2));
        }
        if (note[0])
            printf("  %s\n", note);
        if (opset > 0 && orep.from != orep.to)
            printf("  opset %lld -> %lld: %d node(s) adapted, %d expanded, %d added\n",
                   (long long)orep.from, (long long)orep.to, orep.nodes_adapted,
                   orep.nodes_expanded, orep.nodes_added);
        for (int i = 0; i < rep.n_passes; i++) {
            if (rep.passes[i].note)
                printf("  note: %s\n", rep.passes[i].note);
            char line[512];
            if (rep.passes[i].rewrites)
                printf("  %s\n", ox_pass_stat_line(&rep.passes[i], line, sizeof line));
        }
        char cosbuf[64] = "", crit[256];
        if (tol.min_cos > 0)   /* a lossy pass's criteria: say how close */
            snprintf(cosbuf, sizeof cosbuf, ", min cosine %.6f", chk.min_cos);
        /* Which criterion applied, and whose it is. */
        if (chk.ok && chk.by_cosine)
            snprintf(crit, sizeof crit, " (by cosine >= %g, criteria of %s)", tol.min_cos,
                     tol.from);
        else if (tol.min_cos > 0)
            snprintf(crit, sizeof crit, " (rtol %g / atol %g or cosine >= %g, criteria of %s)",
                     tol.rtol, tol.atol, tol.min_cos, tol.from);
        else
            snprintf(crit, sizeof crit, " (rtol %g / atol %g, criteria of %s)", tol.rtol,
                     tol.atol, tol.from);
        quant_print(&rep);
        if (n_check > 0)
            printf("check: %d run(s), max abs err %.3g, max rel err %.3g%s: %s%s%s%s\n",
                   chk.runs, chk.max_abs, chk.max_rel, cosbuf, chk.ok ? "ok" : "FAILED", crit,
                   chk.ok || !chk.why[0] ? "" : " - ", chk.ok ? "" : chk.why);
        if (bisect)
            bisect_print(&bis, bisected);
        if (write && out_bytes >= 0 && m->file_size && dt_changed) {
            char s1[32], s2[32];
            printf("file size %s -> %s (%.1f %%)\n", ox_cli_bytes((double)m->file_size, s1, sizeof s1),
                   ox_cli_bytes((double)out_bytes, s2, sizeof s2),
                   100.0 * (double)out_bytes / (double)m->file_size);
        }
        if (write)
            printf("wrote %s\n", out_path);
        else
            printf("not written (use --force)\n");
    }
out:
    ox_bisect_result_free(&bis);
    ox_pass_report_free(&rep);
    ox_pm_free(pm);
    ox_model_free(opt);
    ox_model_free(conv);
    ox_model_free(m);
    ox_infer_opts_free(&io);
    ox_input_opts_free(&inputs);
    return rc;
}
