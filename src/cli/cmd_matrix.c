/* `onnxscope matrix MODEL`: the evaluation matrix (issue 16) - every
 * optimization strategy x thread count x batch size x device, measured by
 * the bench library and compared with the original model's outputs; a
 * table (text, JSON, CSV or Markdown), a recommendation, tuning notes and
 * optionally a chart. Progress goes to stderr; Ctrl-C stops the sweep and
 * still prints the rows measured so far. */
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/commands.h"
#include "onnxscope/chart.h"
#include "onnxscope/io.h"
#include "onnxscope/matrix.h"
#include "onnxscope/outfile.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: onnxscope matrix MODEL [--strategies LIST] [--threads 1,2]\n"
            "          [--batch 1,4] [--device cpu,cuda] [--iters N] [--warmup W]\n"
            "          [--seed S] [--shape NAME=DIMS] [--dim SYM=VALUE] [--input NAME=FILE.pb]\n"
            "          [--fill NAME=VALUE] [--int-max M] [--default-dim D]\n"
            "          [--max-error E] [--min-cosine C] [--max-memory SIZE] [--no-cache]\n"
            "          [--json | --csv | --markdown] [--chart OUT.svg|OUT.png]\n"
            "For each strategy (default %s) the model is\n"
            "optimized in memory, then timed as `bench` times it (W warm-up, N timed runs;\n"
            "defaults 1 and 20) at every --threads count, --batch size and --device, and\n"
            "its outputs are compared with the original's on the same seeded inputs.\n"
            "A strategy: original (no passes), basic, extended or all (add @ort for the\n"
            "ort target: all@ort), a pass name, fp16 (to_fp16) or int8 (quantize_dynamic);\n"
            "'+' adds passes to it (all+fp16). --batch sets every input's first dim\n"
            "(its symbol, or the dim itself); a model that cannot take the batch, a\n"
            "strategy whose pass this build lacks, a device bench cannot use and a\n"
            "failed optimization each get a row saying why. Columns: p50/p90 ms, runs/s,\n"
            "samples/s, weights, activation arena, peak RSS, max abs/rel error, cosine and\n"
            "SNR (worst output), GFLOP/s and its fraction of the calibrated peak, speedup\n"
            "over the original. The recommendation is the fastest row (smallest batch)\n"
            "within the budget: cosine >= C (default 0.999) and max abs err <= E (default\n"
            "none). Ctrl-C prints the table so far (exit 130).\n",
            ox_matrix_default_strategies);
}

/* ---- Ctrl-C ------------------------------------------------------------------ */

static atomic_int g_cancel;
static struct sigaction g_prev_int, g_prev_term;

/* The first Ctrl-C asks the sweep to stop and print what it has; the
 * handlers that were there before (the temp-file cleanup of
 * ox_cli_cleanup_on_signals) come back, so a second one ends the process
 * as any command's would. */
static void on_interrupt(int sig)
{
    (void)sig;
    atomic_store(&g_cancel, 1);
    sigaction(SIGINT, &g_prev_int, NULL);
    sigaction(SIGTERM, &g_prev_term, NULL);
    static const char msg[] = "\nonnxscope: matrix: interrupted: finishing the table "
                              "(Ctrl-C again to quit)\n";
    ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)w;
}

static void catch_interrupts(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &g_prev_int);
    sigaction(SIGTERM, &sa, &g_prev_term);
    /* An ignored signal (nohup) stays ignored. */
    if (!(g_prev_int.sa_flags & SA_SIGINFO) && g_prev_int.sa_handler == SIG_IGN)
        sigaction(SIGINT, &g_prev_int, NULL);
    if (!(g_prev_term.sa_flags & SA_SIGINFO) && g_prev_term.sa_handler == SIG_IGN)
        sigaction(SIGTERM, &g_prev_term, NULL);
}

static void release_interrupts(void)
{
    if (!atomic_load(&g_cancel)) {
        sigaction(SIGINT, &g_prev_int, NULL);
        sigaction(SIGTERM, &g_prev_term, NULL);
    }
}

/* ---- progress ---------------------------------------------------------------- */

static bool g_line_open;   /* a progress line waits for its row's result */

static void on_progress(void *user, int row, int total, const char *what)
{
    (void)user;
    fprintf(stderr, "matrix: [%d/%d] %s ...", row + 1, total, what);
    fflush(stderr);
    g_line_open = true;
}

static void on_row(void *user, const ox_matrix_row *r)
{
    (void)user;
    if (!g_line_open)
        return;   /* rows cancelled before they started print nothing */
    g_line_open = false;
    if (r->status == OX_MATRIX_OK)
        fprintf(stderr, " p50 %.3f ms\n", r->p50);
    else
        fprintf(stderr, " %s\n", ox_matrix_status_name(r->status));
}

/* ---- option lists -------------------------------------------------------------- */

static bool parse_int_list(const char *opt, const char *s, int lo, int hi, int *out, int *n)
{
    *n = 0;
    const char *p = s;
    while (*p) {
        char *end = NULL;
        long v = strtol(p, &end, 10);
        if (end == p || (*end && *end != ',') || v < lo || v > hi) {
            ox_cli_error(NULL, "%s %s: expected comma-separated integers in [%d, %d]", opt, s,
                         lo, hi);
            return false;
        }
        if (*n == OX_MATRIX_MAX_LIST) {
            ox_cli_error(NULL, "%s %s: at most %d values", opt, s, OX_MATRIX_MAX_LIST);
            return false;
        }
        for (int i = 0; i < *n; i++)
            if (out[i] == v) {
                ox_cli_error(NULL, "%s %s: %ld given twice", opt, s, v);
                return false;
            }
        out[(*n)++] = (int)v;
        p = *end ? end + 1 : end;
        if (*end && !*p) {
            ox_cli_error(NULL, "%s %s: trailing comma", opt, s);
            return false;
        }
    }
    if (*n == 0) {
        ox_cli_error(NULL, "%s: empty list", opt);
        return false;
    }
    return true;
}

static bool parse_devices(const char *s, ox_matrix_config *cfg)
{
    cfg->n_devices = 0;
    char *copy = strdup(s), *save = NULL;
    bool ok = copy != NULL;
    for (char *it = copy ? strtok_r(copy, ",", &save) : NULL; ok && it;
         it = strtok_r(NULL, ",", &save)) {
        /* cuda is accepted here: its rows say whether bench can use it. */
        if (strcmp(it, "cpu") != 0 && strcmp(it, "cuda") != 0) {
            ox_cli_error(NULL, "--device %s: unknown device '%s' (cpu or cuda)", s, it);
            ok = false;
        } else if (cfg->n_devices == OX_MATRIX_MAX_LIST) {
            ox_cli_error(NULL, "--device %s: too many", s);
            ok = false;
        } else {
            for (int i = 0; i < cfg->n_devices; i++)
                if (strcmp(cfg->devices[i], it) == 0) {
                    ox_cli_error(NULL, "--device %s: '%s' given twice", s, it);
                    ok = false;
                }
            if (ok)
                snprintf(cfg->devices[cfg->n_devices++], sizeof cfg->devices[0], "%s", it);
        }
    }
    free(copy);
    if (ok && cfg->n_devices == 0) {
        ox_cli_error(NULL, "--device: empty list");
        ok = false;
    }
    return ok;
}

/* ---- output ------------------------------------------------------------------ */

static const char *label(const ox_matrix_config *c, const ox_matrix_row *r)
{
    return c->strategies[r->strategy].label;
}

static json_t *num(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

/* An error or SNR that is infinite (outputs differ in shape; identical
 * outputs' SNR) is the string "inf" in JSON, which has no infinity. */
static json_t *num_inf(double v)
{
    if (isinf(v))
        return json_string(v > 0 ? "inf" : "-inf");
    return num(v);
}

static json_t *row_json(const ox_matrix_config *c, const ox_matrix_row *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "strategy", json_string(label(c, r)));
    json_object_set_new(o, "threads", json_integer(r->threads));
    json_object_set_new(o, "batch", r->batch > 0 ? json_integer(r->batch) : json_null());
    json_object_set_new(o, "device", json_string(r->device));
    json_object_set_new(o, "status", json_string(ox_matrix_status_name(r->status)));
    json_object_set_new(o, "reason", r->status != OX_MATRIX_OK ? json_string(r->reason)
                                                               : json_null());
    if (r->status != OX_MATRIX_OK)
        return o;
    json_object_set_new(o, "nodes", json_integer(r->nodes));
    json_object_set_new(o, "iters", json_integer(r->iters));
    json_object_set_new(o, "latency_ms", json_pack("{s:o, s:o, s:o, s:o}", "p50", num(r->p50),
                                                   "p90", num(r->p90), "min", num(r->min),
                                                   "mean", num(r->mean)));
    json_object_set_new(o, "runs_per_s", num(r->runs_per_s));
    json_object_set_new(o, "samples_per_s", num(r->samples_per_s));
    json_object_set_new(
        o, "memory",
        json_pack("{s:I, s:o, s:I}", "weights_bytes", (json_int_t)r->weights_bytes,
                  "arena_bytes", r->arena_bytes >= 0 ? json_integer(r->arena_bytes) : json_null(),
                  "peak_rss_bytes", (json_int_t)r->peak_rss_bytes));
    json_t *acc = json_null();
    if (r->acc_known) {
        acc = json_object();
        json_object_set_new(acc, "max_abs_err", num_inf(r->max_abs_err));
        json_object_set_new(acc, "max_rel_err", num_inf(r->max_rel_err));
        json_object_set_new(acc, "cosine", num(r->cosine));
        json_object_set_new(acc, "snr_db", num_inf(r->snr_db));
        json_object_set_new(acc, "shapes_match", json_boolean(!r->acc_mismatch));
        json_object_set_new(acc, "within_check_tolerance", json_boolean(r->within_check));
        json_t *outs = json_array();
        for (int k = 0; k < r->n_outputs; k++) {
            const ox_matrix_out_acc *a = &r->outputs[k];
            json_array_append_new(outs, json_pack("{s:s, s:o, s:o, s:o, s:o}", "name", a->name,
                                                  "max_abs_err", num_inf(a->max_abs_err),
                                                  "max_rel_err", num_inf(a->max_rel_err),
                                                  "cosine", num(a->cosine), "snr_db",
                                                  num_inf(a->snr_db)));
        }
        json_object_set_new(acc, "outputs", outs);
    }
    json_object_set_new(o, "accuracy", acc);
    json_object_set_new(o, "flops", r->flops >= 0 ? json_real(r->flops) : json_null());
    json_object_set_new(o, "gflops", r->gflops >= 0 ? json_real(r->gflops) : json_null());
    json_object_set_new(o, "peak_gflops", r->peak_gflops > 0 ? json_real(r->peak_gflops)
                                                             : json_null());
    json_object_set_new(o, "utilization", r->utilization >= 0 ? json_real(r->utilization)
                                                              : json_null());
    json_object_set_new(o, "speedup", r->speedup > 0 ? json_real(r->speedup) : json_null());
    return o;
}

static void print_json(const char *path, const ox_matrix_config *c, const ox_matrix *mx)
{
    json_t *o = json_object(), *rows = json_array(), *notes = json_array(), *st = json_array();
    json_object_set_new(o, "model", json_string(path));
    for (int i = 0; i < c->n_strategies; i++) {
        const ox_matrix_strategy *s = &c->strategies[i];
        json_t *e = json_pack("{s:s}", "name", s->label);
        json_object_set_new(e, "level", s->has_level ? json_string(ox_pass_level_name(s->level))
                                                     : json_null());
        json_object_set_new(e, "target", json_string(ox_pass_target_name(s->target)));
        json_object_set_new(e, "passes", s->passes ? json_string(s->passes) : json_null());
        json_array_append_new(st, e);
    }
    json_object_set_new(o, "strategies", st);
    json_object_set_new(o, "seed", json_integer(c->seed));
    json_object_set_new(o, "warmup", json_integer(c->warmup));
    json_object_set_new(o, "iters", json_integer(c->iters));
    json_object_set_new(o, "budget", json_pack("{s:o, s:f}", "max_error",
                                               c->max_error >= 0 ? json_real(c->max_error)
                                                                 : json_null(),
                                               "min_cosine", c->min_cosine));
    json_object_set_new(o, "complete", json_boolean(!mx->cancelled));
    for (int i = 0; i < mx->n_rows; i++)
        json_array_append_new(rows, row_json(c, &mx->rows[i]));
    json_object_set_new(o, "rows", rows);
    json_object_set_new(o, "recommended",
                        mx->recommended >= 0 ? json_integer(mx->recommended) : json_null());
    json_object_set_new(o, "recommendation", json_string(mx->recommendation));
    for (int i = 0; i < mx->n_notes; i++)
        json_array_append_new(notes, json_string(mx->notes[i]));
    json_object_set_new(o, "notes", notes);
    char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9));
    if (s)
        printf("%s\n", s);
    free(s);
    json_decref(o);
}

static void csv_field(const char *s)
{
    if (!strpbrk(s, ",\"\n")) {
        fputs(s, stdout);
        return;
    }
    putchar('"');
    for (; *s; s++) {
        if (*s == '"')
            putchar('"');
        putchar(*s);
    }
    putchar('"');
}

/* Unknown: an empty field; infinite: "inf". */
static void csv_num(double v, bool known)
{
    if (!known || isnan(v))
        printf(",");
    else if (isinf(v))
        printf(",%sinf", v < 0 ? "-" : "");
    else
        printf(",%.9g", v);
}

static void csv_int(int64_t v, bool known)
{
    if (known)
        printf(",%lld", (long long)v);
    else
        printf(",");
}

static void print_csv(const ox_matrix_config *c, const ox_matrix *mx)
{
    printf("strategy,threads,batch,device,status,reason,nodes,iters,p50_ms,p90_ms,"
           "runs_per_s,samples_per_s,weights_bytes,arena_bytes,peak_rss_bytes,max_abs_err,"
           "max_rel_err,cosine,snr_db,gflops,utilization,speedup\n");
    for (int i = 0; i < mx->n_rows; i++) {
        const ox_matrix_row *r = &mx->rows[i];
        bool ok = r->status == OX_MATRIX_OK;
        csv_field(label(c, r));
        printf(",%d,", r->threads);
        if (r->batch > 0)
            printf("%d", r->batch);
        printf(",%s,%s,", r->device, ox_matrix_status_name(r->status));
        csv_field(ok ? "" : r->reason);
        if (ok)
            printf(",%d,%d", r->nodes, r->iters);
        else
            printf(",,");
        csv_num(r->p50, ok);
        csv_num(r->p90, ok);
        csv_num(r->runs_per_s, ok);
        csv_num(r->samples_per_s, ok);
        csv_int(r->weights_bytes, ok);
        csv_int(r->arena_bytes, ok && r->arena_bytes >= 0);
        csv_int(r->peak_rss_bytes, ok);
        csv_num(r->max_abs_err, ok && r->acc_known);
        csv_num(r->max_rel_err, ok && r->acc_known);
        csv_num(r->cosine, ok && r->acc_known);
        csv_num(r->snr_db, ok && r->acc_known);
        csv_num(r->gflops, ok && r->gflops >= 0);
        csv_num(r->utilization, ok && r->utilization >= 0);
        csv_num(r->speedup, ok && r->speedup > 0);
        printf("\n");
    }
}

static const char *fmt_num(double v, bool known, const char *f, char *buf, size_t n)
{
    if (!known || isnan(v))
        snprintf(buf, n, "?");
    else if (isinf(v))
        snprintf(buf, n, "%sinf", v < 0 ? "-" : "");
    else
        snprintf(buf, n, f, v);
    return buf;
}

static const char *fmt_bytes(int64_t v, char *buf, size_t n)
{
    if (v < 0)
        return snprintf(buf, n, "?"), buf;
    return ox_cli_bytes((double)v, buf, n);
}

/* One table row's cells as text (shared by the plain and Markdown tables). */
typedef struct cells {
    char batch[16], p50[24], p90[24], sps[24], w[24], arena[24], rss[24], abs[24], cos[24],
        snr[24], util[24], speed[24];
} cells;

static void row_cells(const ox_matrix_row *r, cells *c)
{
    bool ok = r->status == OX_MATRIX_OK, acc = ok && r->acc_known;
    if (r->batch > 0)
        snprintf(c->batch, sizeof c->batch, "%d", r->batch);
    else
        snprintf(c->batch, sizeof c->batch, "?");
    fmt_num(r->p50, ok, "%.3f", c->p50, sizeof c->p50);
    fmt_num(r->p90, ok, "%.3f", c->p90, sizeof c->p90);
    fmt_num(r->samples_per_s, ok, "%.1f", c->sps, sizeof c->sps);
    fmt_bytes(ok ? r->weights_bytes : -1, c->w, sizeof c->w);
    fmt_bytes(ok ? r->arena_bytes : -1, c->arena, sizeof c->arena);
    fmt_bytes(ok && r->peak_rss_bytes > 0 ? r->peak_rss_bytes : -1, c->rss, sizeof c->rss);
    fmt_num(r->max_abs_err, acc, "%.3g", c->abs, sizeof c->abs);
    fmt_num(r->cosine, acc, "%.6f", c->cos, sizeof c->cos);
    fmt_num(r->snr_db, acc, "%.1f", c->snr, sizeof c->snr);
    fmt_num(100 * r->utilization, ok && r->utilization >= 0, "%.1f%%", c->util, sizeof c->util);
    fmt_num(r->speedup, ok && r->speedup > 0, "x%.2f", c->speed, sizeof c->speed);
}

static void print_text(const char *path, const ox_matrix_config *c, const ox_matrix *mx)
{
    printf("%s: %d strateg%s, %d timed run%s after %d warm-up per row, seed %u%s\n", path,
           c->n_strategies, c->n_strategies == 1 ? "y" : "ies", c->iters,
           c->iters == 1 ? "" : "s", c->warmup, c->seed,
           mx->cancelled ? " (interrupted: partial table)" : "");
    printf("%-16s %3s %5s %-4s %9s %9s %9s %10s %10s %10s %9s %8s %7s %6s %7s  %s\n",
           "strategy", "thr", "batch", "dev", "p50 ms", "p90 ms", "samples/s", "weights",
           "arena", "peak RSS", "max err", "cosine", "SNR dB", "util", "speedup", "status");
    for (int i = 0; i < mx->n_rows; i++) {
        const ox_matrix_row *r = &mx->rows[i];
        cells k;
        row_cells(r, &k);
        if (r->status != OX_MATRIX_OK) {
            printf("%-16.16s %3d %5s %-4s  %s: %s\n", label(c, r), r->threads, k.batch,
                   r->device, ox_matrix_status_name(r->status), r->reason);
            continue;
        }
        printf("%-16.16s %3d %5s %-4s %9s %9s %9s %10s %10s %10s %9s %8s %7s %6s %7s  %s%s\n",
               label(c, r), r->threads, k.batch, r->device, k.p50, k.p90, k.sps, k.w, k.arena,
               k.rss, k.abs, k.cos, k.snr, k.util, k.speed, i == mx->recommended ? "* " : "",
               "ok");
    }
    printf("%s\n", mx->recommendation);
    for (int i = 0; i < mx->n_notes; i++)
        printf("note: %s\n", mx->notes[i]);
}

/* Markdown cell text: '|' would end the cell. */
static void md_text(const char *s)
{
    for (; *s; s++) {
        if (*s == '|')
            fputs("\\|", stdout);
        else if (*s != '\n')
            putchar(*s);
    }
}

static void print_markdown(const ox_matrix_config *c, const ox_matrix *mx)
{
    printf("| Strategy | Threads | Batch | Device | p50 ms | p90 ms | Samples/s | Weights | "
           "Arena | Peak RSS | Max abs err | Cosine | SNR dB | Util. | Speedup | Status |\n");
    printf("|---|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|\n");
    for (int i = 0; i < mx->n_rows; i++) {
        const ox_matrix_row *r = &mx->rows[i];
        cells k;
        row_cells(r, &k);
        printf("| ");
        md_text(label(c, r));
        if (r->status != OX_MATRIX_OK) {
            printf(" | %d | %s | %s | | | | | | | | | | | | %s: ", r->threads, k.batch,
                   r->device, ox_matrix_status_name(r->status));
            md_text(r->reason);
            printf(" |\n");
            continue;
        }
        printf(" | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
               r->threads, k.batch, r->device, k.p50, k.p90, k.sps, k.w, k.arena, k.rss, k.abs,
               k.cos, k.snr, k.util, k.speed, i == mx->recommended ? "ok, **recommended**" : "ok");
    }
    printf("\n**");
    md_text(mx->recommendation);
    printf("**\n");
    if (mx->n_notes)
        printf("\n");
    for (int i = 0; i < mx->n_notes; i++) {
        printf("- ");
        md_text(mx->notes[i]);
        printf("\n");
    }
}

/* The chart: one bar group per strategy; latency bars per configuration
 * (threads x batch x device) above, the largest accuracy loss (1 -
 * cosine) over the configurations below. */
static ox_status write_chart(const char *out, const char *path, const ox_matrix_config *c,
                             const ox_matrix *mx, ox_error *err)
{
    int ns = c->n_threads * c->n_batches * c->n_devices, ng = c->n_strategies;
    const char **groups = calloc((size_t)ng, sizeof *groups);
    char **series = calloc((size_t)ns, sizeof *series);
    double *top = malloc((size_t)(ng * ns) * sizeof *top);
    double *bottom = malloc((size_t)ng * sizeof *bottom);
    ox_status st = OX_OK;
    if (!groups || !series || !top || !bottom) {
        st = ox_errorf(err, OX_ENOMEM, "out of memory");
        goto done;
    }
    for (int g = 0; g < ng; g++) {
        groups[g] = c->strategies[g].label;
        bottom[g] = NAN;
    }
    for (int i = 0; i < ng * ns; i++)
        top[i] = NAN;
    /* Series names from the rows' order within a strategy (batch, threads,
     * device), which is the same for every strategy. */
    int k = 0;
    for (int b = 0; b < c->n_batches; b++)
        for (int t = 0; t < c->n_threads; t++)
            for (int d = 0; d < c->n_devices; d++, k++) {
                char buf[96], bb[24] = "";
                if (c->batches[b] > 0)
                    snprintf(bb, sizeof bb, ", batch %d", c->batches[b]);
                snprintf(buf, sizeof buf, "%d thread%s%s%s%s", c->threads[t],
                         c->threads[t] == 1 ? "" : "s", bb, c->n_devices > 1 ? ", " : "",
                         c->n_devices > 1 ? c->devices[d] : "");
                if (!(series[k] = strdup(buf))) {
                    st = ox_errorf(err, OX_ENOMEM, "out of memory");
                    goto done;
                }
            }
    int seen[OX_MATRIX_MAX_LIST * 64] = {0};
    for (int i = 0; i < mx->n_rows; i++) {
        const ox_matrix_row *r = &mx->rows[i];
        int g = r->strategy, s = g < (int)(sizeof seen / sizeof *seen) ? seen[g]++ : 0;
        if (s >= ns || r->status != OX_MATRIX_OK)
            continue;
        top[g * ns + s] = r->p50;
        if (r->acc_known && !isnan(r->cosine)) {
            double loss = 1 - r->cosine;
            loss = loss < 0 ? 0 : loss;
            if (isnan(bottom[g]) || loss > bottom[g])
                bottom[g] = loss;
        }
    }
    char title[512];
    /* The file name, with its folder when that says more (".../gpt2/model.onnx"). */
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (strcmp(base, "model.onnx") == 0 && base > path + 1) {
        const char *p = base - 2;
        while (p > path && *p != '/')
            p--;
        base = *p == '/' ? p + 1 : p;
    }
    snprintf(title, sizeof title, "%s: strategies (p50 latency; accuracy loss vs original)", base);
    ox_chart ch = {.title = title, .n_groups = ng, .groups = groups, .n_series = ns,
                   .series = (const char *const *)series, .top = top,
                   .top_label = "p50 latency (ms)", .bottom = bottom,
                   .bottom_label = "accuracy loss (1 - cosine, worst output and configuration)",
                   .bottom_min_top = 1e-3};
    st = ox_chart_write(&ch, out, err);
done:
    for (int i = 0; series && i < ns; i++)
        free(series[i]);
    free(series);
    free(groups);
    free(top);
    free(bottom);
    return st;
}

int ox_cmd_matrix(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"strategies", required_argument, NULL, 'S'},
        OX_CLI_TIMING_OPTIONS,
        {"batch", required_argument, NULL, 'b'},
        {"device", required_argument, NULL, 'd'},
        OX_CLI_SHAPE_OPTIONS,
        OX_CLI_INPUT_OPTIONS,
        {"max-error", required_argument, NULL, 'E'},
        {"min-cosine", required_argument, NULL, 'C'},
        {"json", no_argument, NULL, 'J'},
        {"csv", no_argument, NULL, 'V'},
        {"markdown", no_argument, NULL, 'D'},
        {"chart", required_argument, NULL, 'c'},
        {"help", no_argument, NULL, 'h'},
        {0, 0, 0, 0},
    };
    ox_matrix_config cfg;
    ox_matrix_config_init(&cfg);
    ox_infer_opts io = {0};
    ox_input_opts inputs = {.shapes = &io};
    const char *strategies = ox_matrix_default_strategies, *chart = NULL;
    char format = 't';
    int rc = 0, nformats = 0;
    ox_model *m = NULL;
    ox_matrix mx = {0};
    ox_error err = {0};
    const ox_cli_timing timing = {.warmup = &cfg.warmup, .iters = &cfg.iters, .seed = &cfg.seed,
                                  .max_memory = &cfg.max_memory, .no_cache = &cfg.recalibrate};
    optind = 1;
    int c;
    while ((c = ox_cli_getopt(argc, argv, "matrix", "j:n:h", longopts)) != -1) {
        bool ok = true;
        switch (c) {
        case 'S': strategies = optarg; break;
        case 'j':
            ok = parse_int_list("--threads", optarg, 1, 4096, cfg.threads, &cfg.n_threads);
            break;
        case 'b':
            ok = parse_int_list("--batch", optarg, 1, 1 << 20, cfg.batches, &cfg.n_batches);
            break;
        case 'd': ok = parse_devices(optarg, &cfg); break;
        case 'E': ok = ox_cli_parse_real("--max-error", optarg, 0, INFINITY, &cfg.max_error); break;
        case 'C': ok = ox_cli_parse_real("--min-cosine", optarg, -1, 1, &cfg.min_cosine); break;
        case 'J': format = 'j'; nformats++; break;
        case 'V': format = 'c'; nformats++; break;
        case 'D': format = 'm'; nformats++; break;
        case 'c': chart = optarg; break;
        case 'h': usage(stdout); goto out;
        default: {
            int h = ox_cli_timing_opt(c, optarg, &timing);
            ok = h > 0 || (h == 0 && ox_cli_input_opt(c, optarg, &io, &inputs) > 0);
            break;
        }
        }
        if (!ok) {
            rc = 2;
            goto out;
        }
    }
    if (nformats > 1) {
        ox_cli_error(NULL, "matrix: --json, --csv and --markdown exclude each other");
        rc = 2;
        goto out;
    }
    if (optind != argc - 1) {
        ox_cli_error(NULL, optind >= argc ? "matrix: no model given (usage: onnxscope matrix "
                                            "MODEL [options])"
                                          : "matrix: one model only");
        rc = 2;
        goto out;
    }
    if (ox_matrix_parse_strategies(strategies, &cfg, &err) != OX_OK) {
        ox_cli_error(NULL, "%s", err.msg);
        rc = 2;
        goto out;
    }
    if (chart) {
        const char *dot = strrchr(chart, '.');
        if (!dot || (strcasecmp(dot, ".svg") != 0 && strcasecmp(dot, ".png") != 0)) {
            ox_cli_error(NULL, "--chart %s: the file name must end in .svg or .png", chart);
            rc = 2;
            goto out;
        }
        if (strcasecmp(dot, ".png") == 0 && !ox_chart_png_supported()) {
            ox_cli_error(NULL, "--chart %s: PNG charts need cairo, which this build lacks "
                         "(install libcairo2-dev and rebuild, or write .svg)", chart);
            rc = 2;
            goto out;
        }
    }
    const char *path = argv[optind];
    m = ox_cli_load(path, &rc);
    if (!m)
        goto out;
    /* The chart must not land on the model (or its external data). */
    if (chart && ox_model_check_output(m, chart, &err) != OX_OK) {
        ox_cli_error(chart, "%s", err.msg);
        rc = 2;
        goto out;
    }
    /* Checked with the first batch's overrides: --batch sets the batch
     * dims the model leaves open. */
    {
        ox_infer_opts bo = {0};
        int n_resized = 0;
        if (ox_matrix_batch_opts(m, &io, cfg.batches[0], &bo, &n_resized, &err) != OX_OK) {
            ox_cli_error(NULL, "%s", err.msg);
            rc = 1;
            goto out;
        }
        inputs.shapes = &bo;
        bool ok = ox_cli_check_inputs(path, m, &bo, &inputs);
        inputs.shapes = &io;
        ox_infer_opts_free(&bo);
        if (!ok) {
            rc = 2;
            goto out;
        }
    }
    cfg.model = m;
    cfg.shapes = &io;
    cfg.inputs = &inputs;
    cfg.cancel = &g_cancel;
    cfg.progress = on_progress;
    cfg.on_row = on_row;
    catch_interrupts();
    ox_status st = ox_matrix_run(&cfg, &mx, &err);
    release_interrupts();
    if (st && st != OX_ECANCELLED) {
        ox_cli_error(path, "matrix: %s", err.msg);
        rc = 1;
        goto out;
    }
    switch (format) {
    case 'j': print_json(path, &cfg, &mx); break;
    case 'c':
        print_csv(&cfg, &mx);
        /* CSV is the table alone; the conclusions go where a reader sees them. */
        fprintf(stderr, "matrix: %s\n", mx.recommendation);
        for (int i = 0; i < mx.n_notes; i++)
            fprintf(stderr, "matrix: note: %s\n", mx.notes[i]);
        break;
    case 'm': print_markdown(&cfg, &mx); break;
    default: print_text(path, &cfg, &mx); break;
    }
    fflush(stdout);
    rc = mx.cancelled ? 130 : 0;
    if (chart) {
        ox_error cerr = {0};
        ox_status cs = write_chart(chart, path, &cfg, &mx, &cerr);
        if (cs) {
            ox_cli_error(NULL, "--chart: %s", cerr.msg);
            rc = cs == OX_EIO ? 3 : 1;
        } else {
            fprintf(stderr, "matrix: wrote %s\n", chart);
        }
    }
out:
    ox_matrix_free(&mx);
    ox_matrix_config_free(&cfg);
    ox_model_free(m);
    ox_infer_opts_free(&io);
    ox_input_opts_free(&inputs);
    return rc;
}
