/* Helpers shared by the CNN fusion passes: see fuse_util.h. They read
 * constants in either form exporters write (initializer or Constant node)
 * so a fusion does not depend on constant_to_initializer running first. */
#include <math.h>
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
