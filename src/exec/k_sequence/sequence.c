/* Sequence and optional kernels: SequenceEmpty/Construct/Insert/Erase/At/
 * Length, SplitToSequence, ConcatFromSequence, SequenceMap, Optional,
 * OptionalHasElement, OptionalGetElement. Elements are shared, not copied. */
#include <stdlib.h>
#include <string.h>

#include "exec/rv_util.h"

static ox_status oom(ox_kernel_ctx *c)
{
    return ox_errorf(c->err, OX_ENOMEM, "out of memory");
}

static const ox_rval *seq_in(ox_kernel_ctx *c, int i)
{
    if (i >= c->n_in || !c->in[i] || c->in[i]->kind != OX_RV_SEQUENCE)
        return NULL;
    return c->in[i];
}

static ox_status set_out(ox_kernel_ctx *c, int i, ox_rval *v)
{
    if (!v)
        return oom(c);
    if (i >= c->n_out) {
        ox_rval_free(v);
        return OX_OK;
    }
    ox_rval_free(c->out[i]);
    c->out[i] = v;
    return OX_OK;
}

/* Copy of seq's items (shared tensors) into a new sequence. */
static ox_rval *seq_copy(const ox_rval *seq)
{
    ox_rval *o = ox_rval_clone(seq);
    return o;
}

static ox_status position(ox_kernel_ctx *c, int in_i, int n, bool insert, int *out)
{
    const ox_tensor *p = ox_kernel_in(c, in_i);
    int64_t v;
    if (!p) {
        *out = insert ? n : n - 1;
        if (*out < 0)
            return ox_errorf(c->err, OX_EINVAL, "sequence is empty");
        return OX_OK;
    }
    if (!ox_rv_scalar_i64(p, &v))
        return ox_errorf(c->err, OX_EINVAL, "position must be a scalar");
    int64_t hi = insert ? n : n - 1;
    if (v < -(int64_t)n || v > hi)
        return ox_errorf(c->err, OX_EINVAL, "position %lld out of range for %d items",
                         (long long)v, n);
    if (v < 0)
        v += n;
    *out = (int)v;
    return OX_OK;
}

static ox_status k_seq_empty(ox_kernel_ctx *c)
{
    ox_rval *s = ox_rval_sequence();
    if (!s)
        return oom(c);
    int64_t dt = ox_node_attr_i(c->node, "dtype", OX_DT_FLOAT);
    if (ox_dtype_valid((int)dt))
        s->elem_type = ox_type_new_tensor((ox_dtype)dt, 0, NULL);
    if (s->elem_type)
        s->elem_type->has_shape = false;
    return set_out(c, 0, s);
}

static ox_status k_seq_construct(ox_kernel_ctx *c)
{
    ox_rval *s = ox_rval_sequence();
    if (!s)
        return oom(c);
    for (int i = 0; i < c->n_in; i++) {
        if (!ox_kernel_in(c, i)) {
            ox_rval_free(s);
            return ox_errorf(c->err, OX_EINVAL, "input %d is not a tensor", i);
        }
        ox_rval *it = ox_rval_clone(c->in[i]);
        if (!it || ox_rval_seq_push(s, it)) {
            ox_rval_free(it);
            ox_rval_free(s);
            return oom(c);
        }
    }
    return set_out(c, 0, s);
}

static ox_status k_seq_insert(ox_kernel_ctx *c)
{
    const ox_rval *in = seq_in(c, 0);
    if (!in || !c->in[1])
        return ox_errorf(c->err, OX_EINVAL, "SequenceInsert needs a sequence and a tensor");
    int pos;
    ox_status st = position(c, 2, in->n_items, true, &pos);
    if (st)
        return st;
    ox_rval *s = seq_copy(in);
    ox_rval *it = ox_rval_clone(c->in[1]);
    if (!s || !it || ox_rval_seq_push(s, it)) {
        ox_rval_free(s);
        ox_rval_free(it);
        return oom(c);
    }
    memmove(&s->items[pos + 1], &s->items[pos],
            (size_t)(s->n_items - 1 - pos) * sizeof *s->items);
    s->items[pos] = it;
    return set_out(c, 0, s);
}

static ox_status k_seq_erase(ox_kernel_ctx *c)
{
    const ox_rval *in = seq_in(c, 0);
    if (!in)
        return ox_errorf(c->err, OX_EINVAL, "SequenceErase needs a sequence");
    int pos;
    ox_status st = position(c, 1, in->n_items, false, &pos);
    if (st)
        return st;
    ox_rval *s = seq_copy(in);
    if (!s)
        return oom(c);
    ox_rval_free(s->items[pos]);
    memmove(&s->items[pos], &s->items[pos + 1],
            (size_t)(s->n_items - 1 - pos) * sizeof *s->items);
    s->n_items--;
    return set_out(c, 0, s);
}

static ox_status k_seq_at(ox_kernel_ctx *c)
{
    const ox_rval *in = seq_in(c, 0);
    if (!in || !ox_kernel_in(c, 1))
        return ox_errorf(c->err, OX_EINVAL, "SequenceAt needs a sequence and a position");
    int pos;
    ox_status st = position(c, 1, in->n_items, false, &pos);
    if (st)
        return st;
    return set_out(c, 0, ox_rval_clone(in->items[pos]));
}

static ox_status k_seq_length(ox_kernel_ctx *c)
{
    const ox_rval *in = seq_in(c, 0);
    if (!in)
        return ox_errorf(c->err, OX_EINVAL, "SequenceLength needs a sequence");
    ox_tensor *t = ox_kernel_output(c, 0, OX_DT_INT64, 0, NULL);
    if (!t)
        return c->err->status;
    int64_t n = in->n_items;
    memcpy(ox_tensor_data(t), &n, 8);
    return OX_OK;
}

static ox_status k_split_to_seq(ox_kernel_ctx *c)
{
    const ox_tensor *x = ox_kernel_in(c, 0);
    if (!x || x->rank < 1)
        return ox_errorf(c->err, OX_EINVAL, "input must be a tensor of rank >= 1");
    int64_t axis = ox_node_attr_i(c->node, "axis", 0);
    if (axis < 0)
        axis += x->rank;
    if (axis < 0 || axis >= x->rank)
        return ox_errorf(c->err, OX_EINVAL, "axis out of range");
    int64_t keepdims = ox_node_attr_i(c->node, "keepdims", 1);
    int64_t D = x->dims[axis];
    const ox_tensor *sp = ox_kernel_in(c, 1);
    int64_t n_parts;
    int64_t *sizes = NULL;
    bool squeeze = false;
    if (!sp) {
        n_parts = D;
        squeeze = keepdims == 0;
    } else if (sp->rank == 0) {   /* a scalar: equal chunks, the last may be shorter */
        int64_t k;
        if (!ox_rv_scalar_i64(sp, &k) || k <= 0)
            return ox_errorf(c->err, OX_EINVAL, "split must be positive");
        n_parts = (D + k - 1) / k;
    } else {
        n_parts = sp->numel;
    }
    if (n_parts > (1 << 26))
        return ox_errorf(c->err, OX_ERANGE, "too many parts");
    sizes = calloc((size_t)n_parts + 1, sizeof *sizes);
    if (!sizes)
        return oom(c);
    int64_t total = 0;
    for (int64_t i = 0; i < n_parts; i++) {
        if (!sp)
            sizes[i] = 1;
        else if (sp->rank == 0) {
            int64_t k;
            ox_rv_scalar_i64(sp, &k);
            sizes[i] = (i == n_parts - 1) ? D - k * (n_parts - 1) : k;
        } else
            sizes[i] = ox_tensor_get_i64(sp, i);
        if (sizes[i] < 0) {
            free(sizes);
            return ox_errorf(c->err, OX_EINVAL, "negative split size");
        }
        total += sizes[i];
    }
    if (total != D) {
        free(sizes);
        return ox_errorf(c->err, OX_EINVAL, "split sizes sum to %lld, axis has %lld",
                         (long long)total, (long long)D);
    }
    ox_rval *s = ox_rval_sequence();
    if (!s) {
        free(sizes);
        return oom(c);
    }
    int64_t start = 0;
    for (int64_t i = 0; i < n_parts; i++) {
        ox_tensor *t = squeeze ? ox_rv_slice(x, (int)axis, start, c->err)
                               : ox_rv_range(x, (int)axis, start, sizes[i], c->err);
        ox_rval *it = t ? ox_rval_tensor(t) : NULL;
        if (!it || ox_rval_seq_push(s, it)) {
            ox_rval_free(it);
            ox_rval_free(s);
            free(sizes);
            return c->err->status ? c->err->status : oom(c);
        }
        start += sizes[i];
    }
    free(sizes);
    return set_out(c, 0, s);
}

static ox_status k_concat_from_seq(ox_kernel_ctx *c)
{
    const ox_rval *in = seq_in(c, 0);
    if (!in || in->n_items == 0)
        return ox_errorf(c->err, OX_EINVAL, "ConcatFromSequence needs a non-empty sequence");
    int64_t new_axis = ox_node_attr_i(c->node, "new_axis", 0);
    int64_t axis = ox_node_attr_i(c->node, "axis", 0);
    const ox_tensor **items = calloc((size_t)in->n_items, sizeof *items);
    if (!items)
        return oom(c);
    for (int i = 0; i < in->n_items; i++) {
        items[i] = ox_rv_tensor_of(in->items[i]);
        if (!items[i]) {
            free(items);
            return ox_errorf(c->err, OX_EINVAL, "item %d is not a tensor", i);
        }
    }
    int rank = items[0]->rank + (new_axis ? 1 : 0);
    if (axis < 0)
        axis += rank;
    ox_tensor *t = NULL;
    if (axis < 0 || axis >= rank)
        ox_errorf(c->err, OX_EINVAL, "axis out of range");
    else
        t = ox_rv_concat(items, in->n_items, (int)axis, new_axis != 0, c->err);
    free(items);
    if (!t)
        return c->err->status ? c->err->status : OX_EINVAL;
    ox_kernel_set_output(c, 0, t);
    return OX_OK;
}

static ox_status k_seq_map(ox_kernel_ctx *c)
{
    const ox_attr *a = ox_node_attr(c->node, "body");
    const ox_graph *body = (a && a->type == OX_ATTR_GRAPH) ? a->g : NULL;
    const ox_rval *s0 = seq_in(c, 0);
    if (!body || !s0)
        return ox_errorf(c->err, OX_EINVAL, "SequenceMap needs a body and a sequence");
    int n = s0->n_items;
    for (int i = 1; i < c->n_in; i++)
        if (c->in[i] && c->in[i]->kind == OX_RV_SEQUENCE && c->in[i]->n_items != n)
            return ox_errorf(c->err, OX_EINVAL, "input sequences differ in length");
    if (body->n_inputs != c->n_in || body->n_outputs < c->n_out)
        return ox_errorf(c->err, OX_EMODEL, "SequenceMap body signature does not match");
    ox_status st = OX_OK;
    ox_rval **bin = calloc((size_t)c->n_in + 1, sizeof *bin);
    ox_rval **bout = calloc((size_t)c->n_out + 1, sizeof *bout);
    if (!bin || !bout) {
        free(bin);
        free(bout);
        return oom(c);
    }
    for (int k = 0; k < c->n_out; k++) {
        ox_rval *o = ox_rval_sequence();
        if (!o) {
            st = oom(c);
            goto out;
        }
        set_out(c, k, o);
    }
    for (int i = 0; i < n && !st; i++) {
        for (int j = 0; j < c->n_in; j++) {
            ox_rval *v = c->in[j];
            bin[j] = (v && v->kind == OX_RV_SEQUENCE) ? v->items[i] : v;
        }
        st = ox_exec_subgraph(c, body, c->n_in, bin, c->n_out, bout);
        for (int k = 0; k < c->n_out && !st; k++) {
            if (ox_rval_seq_push(c->out[k], bout[k]))
                st = oom(c);
            else
                bout[k] = NULL;
        }
        for (int k = 0; k < c->n_out; k++) {
            ox_rval_free(bout[k]);
            bout[k] = NULL;
        }
    }
out:
    free(bin);
    free(bout);
    return st;
}

static ox_status k_optional(ox_kernel_ctx *c)
{
    const ox_attr *ta = ox_node_attr(c->node, "type");
    const ox_type *tp = (ta && ta->type == OX_ATTR_TYPE_PROTO) ? ta->tp : NULL;
    if (c->n_in > 0 && c->in[0]) {
        ox_rval *o = ox_rval_optional_none(tp);
        ox_rval *it = ox_rval_clone(c->in[0]);
        if (!o || !it || ox_rval_seq_push(o, it)) {
            ox_rval_free(o);
            ox_rval_free(it);
            return oom(c);
        }
        return set_out(c, 0, o);
    }
    if (!tp)
        return ox_errorf(c->err, OX_EINVAL, "empty Optional needs the type attribute");
    return set_out(c, 0, ox_rval_optional_none(tp));
}

static ox_status k_opt_has(ox_kernel_ctx *c)
{
    const ox_rval *v = c->n_in > 0 ? c->in[0] : NULL;
    bool has = v && (v->kind != OX_RV_OPTIONAL || v->n_items > 0);
    ox_tensor *t = ox_kernel_output(c, 0, OX_DT_BOOL, 0, NULL);
    if (!t)
        return c->err->status;
    *(uint8_t *)ox_tensor_data(t) = has;
    return OX_OK;
}

static ox_status k_opt_get(ox_kernel_ctx *c)
{
    const ox_rval *v = c->n_in > 0 ? c->in[0] : NULL;
    if (!v)
        return ox_errorf(c->err, OX_EINVAL, "no input");
    if (v->kind != OX_RV_OPTIONAL)
        return set_out(c, 0, ox_rval_clone(v));
    if (v->n_items == 0 || !v->items[0])
        return ox_errorf(c->err, OX_EINVAL, "optional has no element");
    return set_out(c, 0, ox_rval_clone(v->items[0]));
}

const ox_kernel_entry ox_kernels_sequence[] = {
    {"", "SequenceEmpty", 11, k_seq_empty},
    {"", "SequenceConstruct", 11, k_seq_construct},
    {"", "SequenceInsert", 11, k_seq_insert},
    {"", "SequenceErase", 11, k_seq_erase},
    {"", "SequenceAt", 11, k_seq_at},
    {"", "SequenceLength", 11, k_seq_length},
    {"", "SplitToSequence", 11, k_split_to_seq},
    {"", "ConcatFromSequence", 11, k_concat_from_seq},
    {"", "SequenceMap", 17, k_seq_map},
    {"", "Optional", 15, k_optional},
    {"", "OptionalHasElement", 15, k_opt_has},
    {"", "OptionalGetElement", 15, k_opt_get},
    {0},
};
