/* Helpers shared by the CNN fusion passes: see fuse_util.h. They read
 * constants in either form exporters write (initializer or Constant node)
 * so a fusion does not depend on constant_to_initializer running first. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/fuse_util.h"

ox_node *ox__fuse_prod(const ox_graph *g, const ox_value *v, const char *op)
{
    const ox_node *p = v ? v->producer : NULL;
    /* Every fusion rewrites through the producer's input 0 and output 0, so
     * a producer lacking either (only a malformed model has one) is never a
     * match: callers then need no bounds checks of their own for those. */
    if (!p || p->graph != g || !ox_node_is_default_domain(p) || p->n_inputs < 1 ||
        !p->inputs[0] || p->n_outputs < 1)
        return NULL;
    return !op || !strcmp(v->producer->op_type, op) ? v->producer : NULL;
}

bool ox__fuse_single(const ox_value *v)
{
    return v && v->n_uses == 1 && v->uses[0].input >= 0 && !v->is_output;
}

bool ox__fuse_only_out0(const ox_node *n)
{
    if (n->n_outputs < 1 || !n->outputs[0])
        return false;
    for (int k = 1; k < n->n_outputs; k++)
        if (n->outputs[k] && (n->outputs[k]->n_uses || n->outputs[k]->is_output))
            return false;
    return true;
}

const ox_tensor *ox__fuse_const(const ox_value *v)
{
    const ox_tensor *t = ox__pass_const(v);
    if (t)
        return ox_tensor_data(t) ? t : NULL;
    ox_node *p = v ? v->producer : NULL;
    if (!p || p->graph != v->graph || !ox_node_is(p, "Constant") || p->n_outputs != 1)
        return NULL;
    const ox_attr *a = ox_node_attr(p, "value");
    return a && a->type == OX_ATTR_TENSOR && a->t && ox_tensor_data(a->t) ? a->t : NULL;
}

bool ox__fuse_scalar(const ox_value *v, double *out)
{
    const ox_tensor *t = ox__fuse_const(v);
    if (!t || t->numel != 1 || !(ox__fuse_float(t->dtype) || ox_dtype_is_int(t->dtype)))
        return false;
    *out = ox_tensor_get_f64(t, 0);
    return true;
}

bool ox__fuse_float(ox_dtype dt)
{
    return dt == OX_DT_FLOAT || dt == OX_DT_DOUBLE || dt == OX_DT_FLOAT16 || dt == OX_DT_BFLOAT16;
}

bool ox__fuse_per_channel(const ox_tensor *t, int r, int ax, int64_t C, double *out)
{
    if (!t || !ox__fuse_float(t->dtype) || t->rank > r || ax < 0 || ax >= r)
        return false;
    int chan = -1;
    for (int j = 0; j < t->rank; j++) {
        int a = r - t->rank + j;
        if (t->dims[j] == 1)
            continue;
        if (a != ax || t->dims[j] != C)
            return false;
        chan = j;
    }
    for (int64_t k = 0; k < C; k++)
        out[k] = ox_tensor_get_f64(t, chan >= 0 ? k : 0);
    return true;
}

ox_value *ox__fuse_new_init(ox_graph *g, const char *hint, ox_dtype dt, int rank,
                            const int64_t *dims, const double *v)
{
    ox_tensor *t = ox_tensor_new(dt, rank, dims);
    for (int64_t i = 0; t && i < t->numel; i++)
        ox_tensor_set_f64(t, i, v[i]);
    return ox__pass_new_init(g, hint, t);
}

double *ox__fuse_f64(const ox_tensor *t)
{
    double *d = malloc((size_t)(t->numel > 0 ? t->numel : 1) * sizeof *d);
    for (int64_t i = 0; d && i < t->numel; i++)
        d[i] = ox_tensor_get_f64(t, i);
    return d;
}

void ox__fuse_drop_dead(ox_pass_ctx *c, ox_value *v)
{
    ox__pass_drop_const(c, v);
}

void ox__fuse_retarget(ox_pass_ctx *c, ox_node *keep, ox_node *last)
{
    ox_value *y = last->outputs[0], *mid = keep->outputs[0];
    ox__pass_drop(c, last);
    ox_node_set_output(keep, 0, y);
    ox_infer_forget_value(y);
    if (mid && !mid->n_uses && !mid->is_output)
        ox__pass_drop_value(c, mid);
}

/* Reads an inference-mode BatchNormalization with constant parameters of
 * C channels into y = x * s + t. */
bool ox__fuse_bn(const ox_node *bn, int64_t C, double *s, double *t)
{
    if (bn->n_inputs != 5 || !ox__fuse_only_out0(bn) || ox_node_attr_i(bn, "training_mode", 0) ||
        ox_node_attr_i(bn, "spatial", 1) != 1)
        return false;
    const ox_tensor *p[4];
    for (int k = 0; k < 4; k++) {
        p[k] = ox__fuse_const(bn->inputs[k + 1]);
        if (!p[k] || p[k]->numel != C || p[k]->rank != 1 || !ox__fuse_float(p[k]->dtype))
            return false;
    }
    double eps = ox_node_attr_f(bn, "epsilon", 1e-5f);
    for (int64_t c = 0; c < C; c++) {
        double var = ox_tensor_get_f64(p[3], c);
        if (!(var + eps > 0))
            return false;
        s[c] = ox_tensor_get_f64(p[0], c) / sqrt(var + eps);
        t[c] = ox_tensor_get_f64(p[1], c) - ox_tensor_get_f64(p[2], c) * s[c];
    }
    return true;
}

bool ox__fuse_clip_bounds(const ox_node *clip, double *lo, double *hi)
{
    *lo = -INFINITY;
    *hi = INFINITY;
    if (clip->n_inputs <= 1) {
        const ox_attr *a = ox_node_attr(clip, "min"), *b = ox_node_attr(clip, "max");
        if (a && a->type == OX_ATTR_FLOAT)
            *lo = a->f;
        if (b && b->type == OX_ATTR_FLOAT)
            *hi = b->f;
        return true;
    }
    ox_value *a = ox__fuse_in(clip, 1), *b = ox__fuse_in(clip, 2);
    if (a && !ox__fuse_scalar(a, lo))
        return false;
    if (b && !ox__fuse_scalar(b, hi))
        return false;
    return true;
}

int ox__fuse_other(const ox_node *n, const ox_value *v)
{
    if (n->n_inputs != 2)
        return -1;
    if (n->inputs[0] == v)
        return 1;
    if (n->inputs[1] == v)
        return 0;
    return -1;
}

ox_node *ox__fuse_node(ox_pass_ctx *c, ox_graph *g, const char *op, const char *domain,
                       int n_in, ox_value *const *in, ox_value *y)
{
    char *name = ox_model_unique_node_name(c->m, op);
    ox_node *n = ox_node_new(g, op, domain, name, n_in, in, 1, &y);
    free(name);
    if (n)
        ox_infer_forget_value(y);
    return n;
}

int ox__fuse_rank(const ox_value *v)
{
    if (v && v->init)
        return v->init->rank;
    return v && v->type && v->type->kind == OX_TYPE_TENSOR && v->type->has_shape ? v->type->rank
                                                                                 : -1;
}

bool ox__fuse_internal(ox_node *const *nodes, int nn, const ox_value *y)
{
    for (int k = 0; k < nn; k++) {
        const ox_node *n = nodes[k];
        for (int o = 0; o < n->n_outputs; o++) {
            const ox_value *v = n->outputs[o];
            if (!v || v == y)
                continue;
            if (v->is_output)
                return false;
            for (int u = 0; u < v->n_uses; u++) {
                bool in = false;
                for (int j = 0; j < nn && !in; j++)
                    in = v->uses[u].node == nodes[j];
                if (v->uses[u].input < 0 || !in)
                    return false;
            }
        }
    }
    return true;
}

void ox__fuse_drop_all(ox_pass_ctx *c, ox_node *const *nodes, int nn)
{
    ox_node *consts[32];
    int nc = 0;
    for (int k = 0; k < nn; k++)
        for (int q = 0; q < nodes[k]->n_inputs; q++) {
            ox_value *v = nodes[k]->inputs[q];
            ox_node *p = v ? v->producer : NULL;
            if (p && p->graph == nodes[k]->graph && ox_node_is(p, "Constant") && nc < 32)
                consts[nc++] = p;
        }
    for (int k = 0; k < nn; k++)
        ox__pass_drop(c, nodes[k]);
    for (int k = 0; k < nc; k++) {
        ox_node *p = consts[k];
        if (ox__pass_gone(p) || p->n_outputs != 1 || !p->outputs[0])
            continue;
        const ox_value *v = p->outputs[0];
        if (!v->n_uses && !v->is_output)
            ox__pass_drop(c, p);
    }
}

int ox__fuse_mean_axes(const ox_node *rm, int r, int64_t *ax, int cap)
{
    if (!rm || ox_node_attr_i(rm, "keepdims", 1) != 1 || rm->n_outputs != 1)
        return -1;
    int n;
    const int64_t *a;
    int64_t tmp[OX_MAX_RANK];
    if (rm->n_inputs >= 2 && rm->inputs[1]) {
        n = ox__pass_const_ints(rm->inputs[1], tmp, OX_MAX_RANK);
        if (n < 0) {
            const ox_tensor *t = ox__fuse_const(rm->inputs[1]);
            if (!t || t->rank > 1 || !ox_dtype_is_int(t->dtype) || t->numel > OX_MAX_RANK)
                return -1;
            n = (int)t->numel;
            for (int i = 0; i < n; i++)
                tmp[i] = ox_tensor_get_i64(t, i);
        }
        a = tmp;
    } else {
        n = ox_node_attr_ints(rm, "axes", &a);
    }
    if (n <= 0 || n > cap)
        return -1;
    for (int i = 0; i < n; i++) {
        int64_t x = a[i];
        if (x >= 0) {
            if (r < 0 || x >= r)
                return -1;
            x -= r;
        } else if (r >= 0 && x < -r) {
            return -1;
        }
        ax[i] = x;
    }
    for (int i = 1; i < n; i++) /* insertion sort: n is tiny */
        for (int j = i; j > 0 && ax[j - 1] > ax[j]; j--) {
            int64_t t = ax[j];
            ax[j] = ax[j - 1];
            ax[j - 1] = t;
        }
    return n;
}

bool ox__fuse_scalar_is(const ox_value *v, double want, double tol)
{
    double s;
    return ox__fuse_scalar(v, &s) && fabs(s - want) <= tol * (fabs(want) > 1 ? fabs(want) : 1);
}

void ox__fuse_site_name(const ox_node *site, const char *op, char *buf, size_t n)
{
    const char *nm = site && site->name ? site->name : "";
    const char *slash = strrchr(nm, '/');
    if (slash && slash > nm)
        snprintf(buf, n, "%.*s/%s", (int)(slash - nm), nm, op);
    else
        snprintf(buf, n, "%s", op);
}

ox_node *ox__fuse_node_named(ox_pass_ctx *c, ox_graph *g, const char *hint, const char *op,
                             const char *domain, int n_in, ox_value *const *in, ox_value *y)
{
    char *name = ox_model_unique_node_name(c->m, hint && *hint ? hint : op);
    ox_node *n = ox_node_new(g, op, domain, name, n_in, in, 1, &y);
    free(name);
    if (n)
        ox_infer_forget_value(y);
    return n;
}
