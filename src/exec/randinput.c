/* Seeded random inputs for running a model without test data: the library
 * form of `run --random`, shared with the TUI's benchmark. Index inputs of
 * Gather are kept inside the gathered axis so that runs do not fail. */
#include <stdio.h>
#include <string.h>

#include "onnxscope/randinput.h"

uint32_t ox_rand_u32(uint32_t *s)
{
    uint32_t t = (*s += 0x6D2B79F5u);
    t = (t ^ (t >> 15)) * (t | 1u);
    t ^= t + (t ^ (t >> 7)) * (t | 61u);
    return t ^ (t >> 14);
}

static double rand_unit(uint32_t *s)
{
    return ox_rand_u32(s) / 4294967296.0;
}

/* Size of the indexed axis of the tensor that v indexes through Gather, or 0. */
static int64_t gather_bound(const ox_model *m, const ox_value *v)
{
    const ox_graph *g = m->graph;
    int64_t best = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const ox_node *n = g->nodes[i];
        if (!(ox_node_is(n, "Gather") || ox_node_is(n, "GatherElements")) ||
            n->n_inputs < 2 || n->inputs[1] != v || !n->inputs[0])
            continue;
        const ox_value *d = n->inputs[0];
        int64_t axis = ox_node_attr_i(n, "axis", 0);
        int64_t dim = -1;
        if (d->init) {
            if (axis < 0)
                axis += d->init->rank;
            if (axis >= 0 && axis < d->init->rank)
                dim = d->init->dims[axis];
        } else if (d->type && d->type->kind == OX_TYPE_TENSOR && d->type->has_shape) {
            if (axis < 0)
                axis += d->type->rank;
            if (axis >= 0 && axis < d->type->rank)
                dim = d->type->dims[axis].value;
        }
        if (dim > 0 && (best == 0 || dim < best))
            best = dim;
    }
    return best;
}

ox_tensor *ox_random_input(const ox_model *m, const ox_value *v, const ox_infer_opts *io,
                           uint32_t *seed, int64_t int_max, ox_error *err)
{
    const ox_type *t = v ? v->type : NULL;
    if (!t || t->kind != OX_TYPE_TENSOR || t->elem == OX_DT_UNDEFINED) {
        ox_errorf(err, OX_EUNSUPPORTED, "input '%s' is not a typed tensor", v ? v->name : "?");
        return NULL;
    }
    int rank = t->has_shape ? t->rank : 0;
    int64_t dims[OX_MAX_RANK];
    const ox_shape_override *ov = NULL;
    for (int i = 0; io && i < io->n_shapes; i++)
        if (strcmp(io->shapes[i].name, v->name) == 0)
            ov = &io->shapes[i];
    if (ov)
        rank = ov->rank;
    if (rank < 0 || rank > OX_MAX_RANK) {
        ox_errorf(err, OX_ERANGE, "input '%s': rank too large", v->name);
        return NULL;
    }
    for (int d = 0; d < rank; d++) {
        int64_t x;
        if (ov)
            x = ov->dims[d] >= 0 ? ov->dims[d] : ox_infer_opts_dim(io, ov->params[d]);
        else
            x = t->dims[d].value >= 0 ? t->dims[d].value : ox_infer_opts_dim(io, t->dims[d].param);
        dims[d] = x >= 0 ? x : 1;   /* unknown dims default to 1 */
    }
    ox_tensor *x = ox_tensor_new(t->elem, rank, dims);
    if (!x) {
        ox_errorf(err, OX_ENOMEM, "input '%s': cannot allocate", v->name);
        return NULL;
    }
    int64_t bound = ox_dtype_is_int(t->elem) ? gather_bound(m, v) : 0;
    if (bound <= 0)
        bound = int_max > 0 ? int_max : 1;
    for (int64_t i = 0; i < x->numel; i++) {
        if (ox_dtype_is_float(t->elem) || t->elem == OX_DT_COMPLEX64 ||
            t->elem == OX_DT_COMPLEX128)
            ox_tensor_set_f64(x, i, -1.0 + 2.0 * rand_unit(seed));
        else if (t->elem == OX_DT_BOOL)
            ox_tensor_set_i64(x, i, ox_rand_u32(seed) & 1);
        else if (t->elem == OX_DT_STRING)
            break;
        else
            ox_tensor_set_i64(x, i, (int64_t)(rand_unit(seed) * (double)bound));
    }
    return x;
}

ox_status ox_random_inputs(const ox_model *m, const ox_infer_opts *io, uint32_t seed,
                           int64_t int_max, ox_rval **in, ox_error *err)
{
    if (!m || !m->graph || !in)
        return ox_errorf(err, OX_EINVAL, "no model");
    const ox_graph *g = m->graph;
    for (int i = 0; i < g->n_inputs; i++)
        in[i] = NULL;
    for (int i = 0; i < g->n_inputs; i++) {
        if (g->inputs[i]->init)
            continue;
        ox_tensor *x = ox_random_input(m, g->inputs[i], io, &seed, int_max, err);
        if (x)
            in[i] = ox_rval_tensor(x);
        if (!in[i]) {
            if (x == NULL && err && err->status == OX_OK)
                ox_errorf(err, OX_ENOMEM, "out of memory");
            for (int k = 0; k < i; k++) {
                ox_rval_free(in[k]);
                in[k] = NULL;
            }
            return err ? err->status : OX_ENOMEM;
        }
    }
    return OX_OK;
}
