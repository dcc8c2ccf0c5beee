/* NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: inputs seen as
 * [N, C, D] (D = product of the trailing dims), targets as [N, D]; the
 * classes axis is 1. Computed in double, stored in the input's type. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/k_elementwise/ew.h"

typedef struct loss_args {
    const double *logp;     /* [N, C, D] log-probabilities */
    const int64_t *target;  /* [N, D] */
    const double *weight;   /* [C] or NULL */
    int64_t n, cls, d;
    bool has_ignore;
    int64_t ignore;
} loss_args;

/* Writes the loss into out (type of the inputs): [N, d...] for "none",
 * a scalar otherwise. */
static ox_status nll(ox_kernel_ctx *c, const loss_args *a, ox_dtype dt,
                     int trank, const int64_t *tdims)
{
    const char *red = ox_node_attr_s(c->node, "reduction", "mean");
    int mode = strcmp(red, "none") == 0 ? 0 : strcmp(red, "sum") == 0 ? 1
             : strcmp(red, "mean") == 0 ? 2 : -1;
    if (mode < 0)
        return ox_errorf(c->err, OX_EINVAL, "%s: unknown reduction \"%s\"",
                         c->node->op_type, red);
    int64_t cnt = a->n * a->d;
    double *l = malloc(sizeof(double) * (size_t)(cnt ? cnt : 1));
    if (!l)
        return ox_errorf(c->err, OX_ENOMEM, "%s: out of memory", c->node->op_type);
    double sum = 0, wsum = 0;
    for (int64_t i = 0; i < a->n; i++)
        for (int64_t j = 0; j < a->d; j++) {
            int64_t t = a->target[i * a->d + j];
            if (a->has_ignore && t == a->ignore) {
                l[i * a->d + j] = 0;
                continue;
            }
            if (t < 0 || t >= a->cls) {
                free(l);
                return ox_errorf(c->err, OX_EINVAL, "%s: target %lld out of range [0, %lld)",
                                 c->node->op_type, (long long)t, (long long)a->cls);
            }
            double w = a->weight ? a->weight[t] : 1.0;
            double v = -a->logp[(i * a->cls + t) * a->d + j] * w;
            l[i * a->d + j] = v;
            sum += v;
            wsum += w;
        }
    ox_status st = OX_OK;
    ox_tensor *y = mode == 0 ? ox_kernel_output(c, 0, dt, trank, tdims)
                             : ox_kernel_output(c, 0, dt, 0, NULL);
    if (!y) {
        free(l);
        return ox_errorf(c->err, OX_ENOMEM, "%s: cannot allocate output", c->node->op_type);
    }
    if (mode == 0) {
        if (cnt)
            st = ox__convert(OX_DT_DOUBLE, l, dt, ox_tensor_mutable_data(y), cnt,
                             OX__CVT_SATURATE, c->err);
    } else {
        double v = mode == 1 ? sum : sum / wsum;
        st = ox__convert(OX_DT_DOUBLE, &v, dt, ox_tensor_mutable_data(y), 1,
                         OX__CVT_SATURATE, c->err);
    }
    free(l);
    return st;
}

/* Shared input handling; sce selects the softmax front end. */
static ox_status loss(ox_kernel_ctx *c, bool sce)
{
    const char *op = c->node->op_type;
    ox_status st = ox__need_inputs(c, 2);
    if (st)
        return st;
    const ox_tensor *x = ox_kernel_in(c, 0), *t = ox_kernel_in(c, 1);
    const ox_tensor *w = c->n_in > 2 ? ox_kernel_in(c, 2) : NULL;
    ox_dtype ct = ox__compute_type(x->dtype);
    if (ct != OX_DT_FLOAT && ct != OX_DT_DOUBLE)
        return ox_errorf(c->err, OX_EUNSUPPORTED, "%s: type %s not supported", op,
                         ox_dtype_name(x->dtype));
    if (t->dtype != OX_DT_INT32 && t->dtype != OX_DT_INT64)
        return ox_errorf(c->err, OX_EINVAL, "%s: target must be int32 or int64", op);
    if (x->rank < 2 || t->rank != x->rank - 1 || t->dims[0] != x->dims[0])
        return ox_errorf(c->err, OX_ESHAPE, "%s: input must be [N, C, ...] and target [N, ...]", op);
    loss_args a;
    memset(&a, 0, sizeof a);
    a.n = x->dims[0];
    a.cls = x->dims[1];
    a.d = 1;
    for (int k = 2; k < x->rank; k++) {
        if (t->dims[k - 1] != x->dims[k])
            return ox_errorf(c->err, OX_ESHAPE, "%s: target shape does not match input", op);
        a.d *= x->dims[k];
    }
    if (w && (w->rank != 1 || w->dims[0] != a.cls))
        return ox_errorf(c->err, OX_ESHAPE, "%s: weight must be [C]", op);
    a.has_ignore = ox_node_attr(c->node, "ignore_index") != NULL;
    a.ignore = ox_node_attr_i(c->node, "ignore_index", 0);

    void *tx = NULL, *tt = NULL, *tw = NULL;
    double *lp = NULL;
    const double *px = ox__as_type(x, OX_DT_DOUBLE, &tx, c->err);
    const int64_t *pt = px ? ox__as_type(t, OX_DT_INT64, &tt, c->err) : NULL;
    const double *pw = (pt && w) ? ox__as_type(w, OX_DT_DOUBLE, &tw, c->err) : NULL;
    if (!pt || (w && !pw)) {
        st = c->err && c->err->status ? c->err->status : OX_ENOMEM;
        goto out;
    }
    a.target = pt;
    a.weight = pw;
    if (!sce) {
        a.logp = px;
    } else {
        /* log-softmax over the classes axis */
        int64_t total = x->numel;
        lp = malloc(sizeof(double) * (size_t)(total ? total : 1));
        if (!lp) {
            st = ox_errorf(c->err, OX_ENOMEM, "%s: out of memory", op);
            goto out;
        }
        for (int64_t i = 0; i < a.n; i++)
            for (int64_t j = 0; j < a.d; j++) {
                const double *xl = px + i * a.cls * a.d + j;
                double *yl = lp + i * a.cls * a.d + j;
                double m = -INFINITY;
                for (int64_t k = 0; k < a.cls; k++)
                    if (xl[k * a.d] > m)
                        m = xl[k * a.d];
                double s = 0;
                for (int64_t k = 0; k < a.cls; k++)
                    s += exp(xl[k * a.d] - m);
                double ls = log(s) + m;
                for (int64_t k = 0; k < a.cls; k++)
                    yl[k * a.d] = xl[k * a.d] - ls;
            }
        a.logp = lp;
    }
    st = nll(c, &a, x->dtype, t->rank, t->dims);
    if (!st && sce && c->n_out > 1) {
        ox_tensor *y = ox_kernel_output(c, 1, x->dtype, x->rank, x->dims);
        if (!y)
            st = ox_errorf(c->err, OX_ENOMEM, "%s: cannot allocate log_prob", op);
        else if (x->numel)
            st = ox__convert(OX_DT_DOUBLE, lp, x->dtype, ox_tensor_mutable_data(y),
                             x->numel, OX__CVT_SATURATE, c->err);
    }
out:
    free(tx);
    free(tt);
    free(tw);
    free(lp);
    return st;
}

ox_status ox__k_NegativeLogLikelihoodLoss(ox_kernel_ctx *c) { return loss(c, false); }
ox_status ox__k_SoftmaxCrossEntropyLoss(ox_kernel_ctx *c) { return loss(c, true); }
