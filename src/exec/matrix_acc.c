/* Accuracy of a strategy's outputs against the original model's on the same
 * inputs: max abs/rel error (the bench equivalence check's own figures),
 * cosine similarity and signal-to-noise ratio per float output. Cosine and
 * SNR say how much of the signal survives a lossy precision change (fp16,
 * int8) in a way a max error on one element does not. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/matrix_internal.h"
#include "onnxscope/bench.h"
#include "onnxscope/dtype.h"

typedef struct sums {
    double dot, aa, bb, err2, max_abs, max_rel;
    bool any_float;
    bool mismatch;
} sums;

static void acc_tensor(const ox_tensor *x, const ox_tensor *y, sums *s)
{
    if (!x || !y || x->dtype != y->dtype || x->numel != y->numel || x->rank != y->rank) {
        s->mismatch = true;
        return;
    }
    if (x->dtype == OX_DT_STRING)
        return;
    bool fl = ox_dtype_is_float(x->dtype);
    s->any_float |= fl;
    for (int64_t i = 0; i < x->numel; i++) {
        double a = ox_tensor_get_f64(x, i), b = ox_tensor_get_f64(y, i);
        if (isnan(a) && isnan(b))
            continue;
        double d = fabs(b - a);
        if (isnan(d))
            d = INFINITY;
        if (d > s->max_abs)
            s->max_abs = d;
        if (a != 0 && d / fabs(a) > s->max_rel)
            s->max_rel = d / fabs(a);
        if (fl && isfinite(a) && isfinite(b)) {
            s->dot += a * b;
            s->aa += a * a;
            s->bb += b * b;
            s->err2 += (b - a) * (b - a);
        }
    }
}

static void acc_rval(const ox_rval *x, const ox_rval *y, sums *s)
{
    if (!x || !y) {
        s->mismatch |= x != y;
        return;
    }
    if (x->kind != y->kind || x->n_items != y->n_items) {
        s->mismatch = true;
        return;
    }
    if (x->t || y->t)
        acc_tensor(x->t, y->t, s);
    for (int i = 0; i < x->n_items; i++)
        acc_rval(x->items[i], y->items[i], s);
}

ox_status ox__matrix_accuracy(int n, ox_rval *const *a, ox_rval *const *b,
                              const char *const *names, ox_matrix_row *row)
{
    ox_bench_check ck;
    /* optimize --check's tolerance, float16 floor included: within it, a
     * rewrite only reordered float arithmetic (a fused conv+bn rounds
     * differently, in float16 to 11 bits). */
    ox_bench_compare_outputs(n, a, b, OX_CHECK_RTOL, OX_CHECK_ATOL, true, &ck);
    row->acc_known = true;
    row->within_check = ck.ok;
    row->max_abs_err = ck.max_abs_err;
    row->max_rel_err = ck.max_rel_err;
    row->cosine = NAN;
    row->snr_db = NAN;
    row->outputs = calloc((size_t)n + 1, sizeof *row->outputs);
    if (!row->outputs)
        return OX_ENOMEM;
    row->n_outputs = n;
    for (int k = 0; k < n; k++) {
        sums s = {0};
        acc_rval(a[k], b[k], &s);
        ox_matrix_out_acc *o = &row->outputs[k];
        o->name = strdup(names && names[k] ? names[k] : "");
        o->max_abs_err = s.mismatch ? INFINITY : s.max_abs;
        o->max_rel_err = s.mismatch ? INFINITY : s.max_rel;
        o->cosine = o->snr_db = NAN;
        row->acc_mismatch |= s.mismatch;
        if (s.mismatch || !s.any_float)
            continue;
        /* Two all-zero outputs are the same signal: cosine 1. */
        if (s.aa == 0 && s.bb == 0)
            o->cosine = 1;
        else if (s.aa > 0 && s.bb > 0)
            o->cosine = s.dot / (sqrt(s.aa) * sqrt(s.bb));
        else
            o->cosine = 0;
        if (o->cosine > 1)
            o->cosine = 1;   /* rounding of identical vectors */
        o->snr_db = s.err2 == 0 ? INFINITY : s.aa == 0 ? -INFINITY : 10 * log10(s.aa / s.err2);
        if (isnan(row->cosine) || o->cosine < row->cosine)
            row->cosine = o->cosine;
        if (isnan(row->snr_db) || o->snr_db < row->snr_db)
            row->snr_db = o->snr_db;
    }
    if (row->acc_mismatch) {
        row->max_abs_err = INFINITY;
        row->max_rel_err = INFINITY;
    }
    return OX_OK;
}
