/* Declared types against inferred ones: the keep/refine rule that lets a
 * saved model keep the types, shapes and dim names its file declared for
 * graph inputs/outputs, subgraph outputs and value_info, while filling in
 * what inference learned where the file left a gap. */
#include "ir/ir_internal.h"

#include <stdlib.h>
#include <string.h>

static bool untyped(const ox_type *t)
{
    return !t || t->kind == OX_TYPE_NONE;
}

static bool has_dims(const ox_type *t)
{
    return t->has_shape && (t->rank == 0 || t->dims);
}

bool ox_type_compatible(const ox_type *decl, const ox_type *inf)
{
    for (int depth = 0; depth < 64; depth++) {
        if (untyped(decl) || untyped(inf))
            return true;
        if (decl->kind != inf->kind)
            return false;
        if (decl->kind != OX_TYPE_SEQUENCE && decl->kind != OX_TYPE_OPTIONAL &&
            decl->elem && inf->elem && decl->elem != inf->elem)
            return false;
        if (decl->kind == OX_TYPE_TENSOR || decl->kind == OX_TYPE_SPARSE_TENSOR) {
            if (!has_dims(decl) || !has_dims(inf))
                return true;
            if (decl->rank != inf->rank)
                return false;
            for (int k = 0; k < decl->rank; k++)
                if (decl->dims[k].value >= 0 && inf->dims[k].value >= 0 &&
                    decl->dims[k].value != inf->dims[k].value)
                    return false;
            return true;
        }
        decl = decl->inner;
        inf = inf->inner;
    }
    return true;
}

static bool dim_anonymous(const ox_dim *d)
{
    return d->value < 0 && (!d->param || !*d->param);
}

/* Fills t's gaps from inf in place (t is a private copy of the decl). */
static bool fill_gaps(ox_type *t, const ox_type *inf, int depth)
{
    if (untyped(inf) || t->kind != inf->kind || depth > 64)
        return true;
    if (t->kind == OX_TYPE_TENSOR || t->kind == OX_TYPE_SPARSE_TENSOR) {
        if (!t->elem)
            t->elem = inf->elem;
        if (!has_dims(inf))
            return true;
        if (!t->has_shape) {
            /* The file said nothing about the shape: what inference knows
             * is a refinement (ranks and dims, symbols included). */
            free(t->dims);
            t->dims = inf->rank ? ox__ir_xcalloc((size_t)inf->rank, sizeof(ox_dim)) : NULL;
            if (inf->rank && !t->dims)
                return false;
            t->rank = inf->rank;
            t->has_shape = true;
            for (int k = 0; k < inf->rank; k++) {
                t->dims[k].value = inf->dims[k].value;
                t->dims[k].param = ox__ir_strdup(inf->dims[k].param);
            }
            return true;
        }
        if (!has_dims(t) || t->rank != inf->rank)
            return true;
        for (int k = 0; k < t->rank; k++) {
            ox_dim *d = &t->dims[k];
            const ox_dim *s = &inf->dims[k];
            if (!dim_anonymous(d))
                continue;  /* a value or a symbol the file chose stays */
            if (s->value >= 0) {
                d->value = s->value;
            } else if (s->param && *s->param) {
                free(d->param);
                d->param = ox__ir_strdup(s->param);
            }
        }
        return true;
    }
    if (t->kind == OX_TYPE_MAP && !t->elem)
        t->elem = inf->elem;
    if (!t->inner && inf->inner) {
        t->inner = ox_type_clone(inf->inner);
        return t->inner != NULL;
    }
    return !t->inner || fill_gaps(t->inner, inf->inner, depth + 1);
}

ox_type *ox_type_refine(const ox_type *decl, const ox_type *inf)
{
    if (untyped(decl))
        return untyped(inf) ? ox_type_clone(decl) : ox_type_clone(inf);
    ox_type *t = ox_type_clone(decl);
    if (t && !fill_gaps(t, inf, 0)) {
        ox_type_free(t);
        return NULL;
    }
    return t;
}

ox_type *ox_value_saved_type(const ox_value *v)
{
    if (!v)
        return NULL;
    if (untyped(v->decl))
        return ox_type_clone(v->type ? v->type : v->decl);
    if (v->is_input || v->is_output || ox_type_compatible(v->decl, v->type))
        return ox_type_refine(v->decl, v->type);
    return ox_type_clone(v->type);
}
