/* The matrix's conclusions: the recommended configuration (the fastest
 * row within the accuracy budget) and tuning notes, each stated only when
 * the measured rows support it (two thread counts, two batch sizes, a lossy
 * strategy, ...). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/matrix_internal.h"

/* Below this many FLOPs per byte moved (cost model) a model streams
 * memory more than it computes: a CPU core does several FLOPs per byte
 * its caches deliver, so extra threads mostly wait on memory. */
#define MEMORY_BOUND_INTENSITY 4.0

void ox__matrix_note(ox_matrix *mx, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char **v = realloc(mx->notes, (size_t)(mx->n_notes + 1) * sizeof *v);
    if (!v)
        return;
    mx->notes = v;
    if ((v[mx->n_notes] = strdup(buf)))
        mx->n_notes++;
}

static bool in_budget(const ox_matrix_config *c, const ox_matrix_row *r)
{
    if (r->status != OX_MATRIX_OK || !r->acc_known || r->acc_mismatch)
        return false;
    if (c->max_error >= 0 && !(r->max_abs_err <= c->max_error))
        return false;
    return isnan(r->cosine) || r->cosine >= c->min_cosine;
}

/* The OK row of (strategy, threads, batch, device), or NULL. */
static const ox_matrix_row *find(const ox_matrix *mx, int s, int threads, int batch,
                                 const char *dev)
{
    for (int i = 0; i < mx->n_rows; i++) {
        const ox_matrix_row *r = &mx->rows[i];
        if (r->status == OX_MATRIX_OK && r->strategy == s && r->threads == threads &&
            r->batch == batch && strcmp(r->device, dev) == 0)
            return r;
    }
    return NULL;
}

static void budget_text(const ox_matrix_config *c, char *buf, size_t n)
{
    if (c->max_error >= 0)
        snprintf(buf, n, "cosine >= %g, max abs err <= %g", c->min_cosine, c->max_error);
    else
        snprintf(buf, n, "cosine >= %g", c->min_cosine);
}

static void fmt_batch(int b, char *buf, size_t n)
{
    if (b > 0)
        snprintf(buf, n, "%d", b);
    else
        snprintf(buf, n, "?");
}

static void recommend(const ox_matrix_config *c, ox_matrix *mx)
{
    /* Latency is compared at the smallest batch measured: a larger batch
     * is slower per run by design; its gain is throughput. */
    int min_batch = -1;
    for (int i = 0; i < mx->n_rows; i++)
        if (in_budget(c, &mx->rows[i]) && (min_batch < 0 || mx->rows[i].batch < min_batch))
            min_batch = mx->rows[i].batch;
    for (int i = 0; i < mx->n_rows; i++) {
        const ox_matrix_row *r = &mx->rows[i];
        if (!in_budget(c, r))
            continue;
        if (r->batch == min_batch &&
            (mx->recommended < 0 || r->p50 < mx->rows[mx->recommended].p50))
            mx->recommended = i;
        if (mx->best_throughput < 0 || r->samples_per_s > mx->rows[mx->best_throughput].samples_per_s)
            mx->best_throughput = i;
    }
    char budget[96];
    budget_text(c, budget, sizeof budget);
    if (mx->recommended < 0) {
        snprintf(mx->recommendation, sizeof mx->recommendation,
                 "no configuration measured within the accuracy budget (%s)", budget);
        return;
    }
    const ox_matrix_row *r = &mx->rows[mx->recommended];
    char b[16], sp[48] = "";
    fmt_batch(r->batch, b, sizeof b);
    if (r->speedup > 0 && !c->strategies[r->strategy].original)
        snprintf(sp, sizeof sp, " (x%.2f vs original)", r->speedup);
    snprintf(mx->recommendation, sizeof mx->recommendation,
             "recommended: %s, %d thread%s, batch %s, %s: p50 %.3f ms%s, max abs err %.3g, "
             "cosine %.6f (fastest within the budget: %s)",
             c->strategies[r->strategy].label, r->threads, r->threads == 1 ? "" : "s", b,
             r->device, r->p50, sp, r->max_abs_err, isnan(r->cosine) ? 1.0 : r->cosine, budget);
}

static void note_threads(const ox_matrix_config *c, ox_matrix *mx, const ox_matrix_row *best)
{
    if (c->n_threads < 2)
        return;
    int tlo = c->threads[0], thi = c->threads[0];
    for (int t = 1; t < c->n_threads; t++) {
        tlo = c->threads[t] < tlo ? c->threads[t] : tlo;
        thi = c->threads[t] > thi ? c->threads[t] : thi;
    }
    const ox_matrix_row *lo = find(mx, best->strategy, tlo, best->batch, best->device);
    const ox_matrix_row *hi = find(mx, best->strategy, thi, best->batch, best->device);
    if (!lo || !hi || hi->p50 <= 0 || tlo == thi)
        return;
    double gain = lo->p50 / hi->p50, ideal = (double)thi / tlo;
    char why[160] = "";
    double intensity = hi->flops > 0 && hi->bytes_moved > 0 ? hi->flops / hi->bytes_moved : -1;
    if (gain < 0.7 * ideal) {
        if (intensity >= 0 && intensity < MEMORY_BOUND_INTENSITY)
            snprintf(why, sizeof why, ": memory-bound (cost model: %.2f FLOP per byte moved)",
                     intensity);
        else if (intensity >= 0)
            snprintf(why, sizeof why, ": not memory-bound (%.1f FLOP/byte): too little work "
                     "per node for %d threads", intensity, thi);
        else
            snprintf(why, sizeof why, ": far from the ideal x%.0f", ideal);
    }
    ox__matrix_note(mx, "%d threads buy x%.2f over %d on this model (%s, p50 %.3f -> %.3f ms)%s",
                    thi, gain, tlo, c->strategies[best->strategy].label, lo->p50, hi->p50, why);
}

static void note_batch(const ox_matrix_config *c, ox_matrix *mx, const ox_matrix_row *best)
{
    int blo = -1, bhi = -1;
    for (int i = 0; i < mx->n_rows; i++) {
        const ox_matrix_row *r = &mx->rows[i];
        if (r->status != OX_MATRIX_OK || r->strategy != best->strategy)
            continue;
        if (blo < 0 || r->batch < blo)
            blo = r->batch;
        if (r->batch > bhi)
            bhi = r->batch;
    }
    if (blo <= 0 || bhi <= blo)
        return;
    const ox_matrix_row *lo = find(mx, best->strategy, best->threads, blo, best->device);
    const ox_matrix_row *hi = find(mx, best->strategy, best->threads, bhi, best->device);
    if (!lo || !hi || lo->samples_per_s <= 0)
        return;
    ox__matrix_note(mx, "batch %d gives x%.2f the samples/s of batch %d at x%.2f the latency "
                    "(%s, %d thread%s)", bhi, hi->samples_per_s / lo->samples_per_s, blo,
                    lo->p50 > 0 ? hi->p50 / lo->p50 : 0, c->strategies[best->strategy].label,
                    best->threads, best->threads == 1 ? "" : "s");
}

/* Per strategy: the worst output of a lossy one, those equal up to float
 * rounding, and strategies clearly slower than the original (every timed
 * run slower than the original's p90: beyond a loaded machine's noise), at
 * the recommended row's threads/batch/device. */
static void note_strategies(const ox_matrix_config *c, ox_matrix *mx, const ox_matrix_row *best)
{
    char rounding[256] = "";
    double rounding_max = 0;
    const ox_matrix_row *orig = NULL;
    for (int s = 0; s < c->n_strategies && !orig; s++)
        if (c->strategies[s].original)
            orig = find(mx, s, best->threads, best->batch, best->device);
    for (int s = 0; s < c->n_strategies; s++) {
        const ox_matrix_row *r = find(mx, s, best->threads, best->batch, best->device);
        if (!r || c->strategies[s].original)
            continue;
        if (orig && r->acc_known && !r->acc_mismatch && r->max_abs_err == 0 &&
            r->nodes == orig->nodes && r->weights_bytes == orig->weights_bytes)
            ox__matrix_note(mx, "%s leaves this model as it is (same node count and weights, "
                            "identical outputs): its passes found nothing to rewrite",
                            c->strategies[s].label);
        if (r->acc_known && r->acc_mismatch)
            ox__matrix_note(mx, "%s changes the outputs' shapes or types: not a drop-in "
                            "replacement", c->strategies[s].label);
        else if (r->acc_known && r->max_abs_err > 0 && r->within_check) {
            size_t n = strlen(rounding);
            snprintf(rounding + n, sizeof rounding - n, "%s%s", n ? ", " : "",
                     c->strategies[s].label);
            rounding_max = r->max_abs_err > rounding_max ? r->max_abs_err : rounding_max;
        } else if (r->acc_known && r->max_abs_err > 0) {
            int w = -1;
            for (int k = 0; k < r->n_outputs; k++)
                if (!isnan(r->outputs[k].cosine) &&
                    (w < 0 || r->outputs[k].cosine < r->outputs[w].cosine))
                    w = k;
            if (w >= 0)
                ox__matrix_note(mx, "%s loses %.3g%% cosine on output '%s' (SNR %.1f dB, max abs "
                                "err %.3g)%s", c->strategies[s].label,
                                100 * (1 - r->outputs[w].cosine), r->outputs[w].name,
                                r->outputs[w].snr_db, r->outputs[w].max_abs_err,
                                in_budget(c, r) ? "" : ": outside the accuracy budget");
        }
        if (orig && r->min > orig->p90 && r->speedup > 0)
            ox__matrix_note(mx, "%s runs at x%.2f the original's speed here (every run slower "
                            "than the original's p90): its rewrites do not pay on %s",
                            c->strategies[s].label, r->speedup, r->device);
    }
    if (rounding[0])
        ox__matrix_note(mx, "%s: outputs equal the original's up to float rounding (max abs err "
                        "%.3g, within optimize --check's tolerance)", rounding, rounding_max);
}

void ox_matrix_summarize(const ox_matrix_config *c, ox_matrix *mx)
{
    for (int i = 0; i < mx->n_notes; i++)
        free(mx->notes[i]);
    free(mx->notes);
    mx->notes = NULL;
    mx->n_notes = 0;
    mx->recommended = mx->best_throughput = -1;
    mx->recommendation[0] = 0;
    recommend(c, mx);
    int n_cancelled = 0;
    for (int i = 0; i < mx->n_rows; i++)
        n_cancelled += mx->rows[i].status == OX_MATRIX_CANCELLED;
    if (n_cancelled)
        ox__matrix_note(mx, "interrupted: %d of %d row(s) not measured", n_cancelled,
                        mx->total);
    if (mx->recommended < 0)
        return;
    const ox_matrix_row *best = &mx->rows[mx->recommended];
    if (mx->best_throughput >= 0 && mx->best_throughput != mx->recommended) {
        const ox_matrix_row *t = &mx->rows[mx->best_throughput];
        char b[16];
        fmt_batch(t->batch, b, sizeof b);
        ox__matrix_note(mx, "most throughput: %s, %d thread%s, batch %s: %.1f samples/s",
                        c->strategies[t->strategy].label, t->threads,
                        t->threads == 1 ? "" : "s", b, t->samples_per_s);
    }
    note_threads(c, mx, best);
    note_batch(c, mx, best);
    note_strategies(c, mx, best);
    if (best->utilization >= 0)
        ox__matrix_note(mx, "the recommended row reaches %.1f%% of this machine's calibrated "
                        "peak (%.2f of %.1f GFLOP/s)%s", 100 * best->utilization, best->gflops,
                        best->peak_gflops,
                        best->utilization < 0.05 ? ": far from compute-bound; overheads or "
                                                   "memory dominate" : "");
}
