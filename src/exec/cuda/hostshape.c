/* Shape arithmetic evaluated on the host at plan time (hostshape.h). No
 * CUDA here: the values come from the CPU kernels (ox_exec_node) on the
 * inferred clone, so what the plan treats as constant is exactly what the
 * CPU executor would compute in every run of this input signature. */
#include <stdlib.h>
#include <string.h>

#include "onnxscope/cost.h"
#include "onnxscope/dtype.h"
#include "hostshape.h"
#include "kern.h"

static bool static_value(const ox_value *v)
{
    const ox_type *t = v ? v->type : NULL;
    if (!t || t->kind != OX_TYPE_TENSOR || !t->has_shape || t->elem == OX_DT_STRING ||
        t->elem == OX_DT_UNDEFINED || ox_dtype_bits(t->elem) < 8)
        return false;
    for (int d = 0; d < t->rank; d++)
        if (t->dims[d].value < 0)
            return false;
    return true;
}

static int64_t value_bytes(const ox_value *v)
{
    int64_t n = 1;
    for (int d = 0; d < v->type->rank; d++)
        n *= v->type->dims[d].value;
    size_t nb = 0;
    return ox_dtype_nbytes(v->type->elem, n, &nb) ? (int64_t)nb : -1;
}

/* Random ops differ per run; subgraphs are not evaluated here. */
static bool deterministic(const ox_node *n)
{
    /* Dropout: random in training mode. */
    return !ox_node_is_random(n) && !ox_node_is(n, "Dropout") && !ox_node_has_subgraph(n);
}

/* The same rule as the arena's signature (arena.c keyed_by_value): small
 * rank <= 1 integer inputs are part of the plan's key, so their values are
 * fixed for the plan; other inputs are not known. */
static bool input_keyed(const ox_tensor *t)
{
    return t && (t->dtype == OX_DT_INT64 || t->dtype == OX_DT_INT32) && t->rank <= 1 &&
           t->numel <= 8 && ox_tensor_data(t);
}

/* Shape (start/end of opset 15) and Size of a static value: its dims. */
static ox_tensor *dims_value(const ox_node *n, const ox_value *x)
{
    int r = x->type->rank;
    if (!strcmp(n->op_type, "Size")) {
        ox_tensor *t = ox_tensor_new(OX_DT_INT64, 0, NULL);
        int64_t c = 1;
        for (int d = 0; d < r; d++)
            c *= x->type->dims[d].value;
        if (t)
            ox_tensor_set_i64(t, 0, c);
        return t;
    }
    int64_t a = ox_node_attr_i(n, "start", 0), b = ox_node_attr_i(n, "end", r);
    if (a < 0)
        a += r;
    if (b < 0)
        b += r;
    a = a < 0 ? 0 : a > r ? r : a;
    b = b < 0 ? 0 : b > r ? r : b;
    int64_t len = b > a ? b - a : 0;
    ox_tensor *t = ox_tensor_new(OX_DT_INT64, 1, &len);
    for (int64_t i = 0; t && i < len; i++)
        ox_tensor_set_i64(t, i, x->type->dims[a + i].value);
    return t;
}

/* out has the dtype and dims inference gave v (else it is not trusted). */
static bool matches(const ox_tensor *t, const ox_value *v)
{
    if (!t || t->dtype != v->type->elem || t->rank != v->type->rank)
        return false;
    for (int d = 0; d < t->rank; d++)
        if (t->dims[d] != v->type->dims[d].value)
            return false;
    return true;
}

static int slot_of(const ox_ptrmap *idx, const ox_value *v)
{
    return v ? (int)(intptr_t)ox_ptrmap_get(idx, v) - 1 : -1;
}

void ox_cuda_plan_feed(ox_cuda_plan *p, const ox_node *const *nodes, const ox_ptrmap *idx)
{
    unsigned char *dev_read = calloc((size_t)p->n_slots + 1, 1);
    if (!dev_read)
        return;   /* out of memory: arena slots, as before (graphs may be refused) */
    for (int k = 0; k < p->n_nodes; k++)
        for (int i = 0; p->kind[k] && p->kind[k] != OX_CK_K_FUSED && i < nodes[k]->n_inputs; i++) {
            int s = slot_of(idx, nodes[k]->inputs[i]);
            if (s >= 0 && !ox_cuda_input_on_host((ox_cuda_kind)p->kind[k], i))
                dev_read[s] = 1;
        }
    for (int k = 0; k < p->n_nodes; k++) {
        if (p->kind[k] || p->pconst[k])
            continue;
        for (int i = 0; i < nodes[k]->n_outputs; i++) {
            int s = slot_of(idx, nodes[k]->outputs[i]);
            ox_cuda_slot *sl = s >= 0 ? &p->slot[s] : NULL;
            if (sl && dev_read[s] && sl->off >= 0 && !sl->weight && !sl->pconst) {
                sl->fed = true;
                sl->off = -1;
            }
        }
    }
    free(dev_read);
}

void ox_cuda_plan_hostshape(ox_cuda_plan *p, const ox_graph *g, const ox_node *const *nodes,
                            const ox_ptrmap *idx, int n_inputs, ox_rval *const *inputs)
{
    ox_ptrmap known = {0};   /* clone value -> ox_tensor * (owned here) */
    int64_t total = 0;
    /* Graph inputs the signature fixes, and their initializer when not given. */
    for (int i = 0; i < g->n_inputs && i < n_inputs; i++) {
        const ox_value *gv = g->inputs[i];
        const ox_tensor *t = inputs[i] && inputs[i]->kind == OX_RV_TENSOR ? inputs[i]->t : NULL;
        const ox_tensor *src = input_keyed(t) ? t : !inputs[i] && gv ? gv->init : NULL;
        ox_tensor *c = src ? ox_tensor_share(src) : NULL;
        if (c && !ox_ptrmap_put(&known, gv, c))
            ox_tensor_free(c);
    }
    for (int k = 0; k < g->n_nodes; k++) {
        const ox_node *cn = g->nodes[k];
        if (!deterministic(cn) || cn->n_outputs < 1 || cn->n_inputs > 16 || cn->n_outputs > 8)
            continue;
        bool ok = true, dims_only = ox_node_is_default_domain(cn) &&
                                    (!strcmp(cn->op_type, "Shape") ||
                                     !strcmp(cn->op_type, "Size"));
        int64_t bytes = 0;
        for (int i = 0; ok && i < cn->n_outputs; i++) {
            const ox_value *o = cn->outputs[i];
            if (!o)
                continue;
            int64_t b = static_value(o) ? value_bytes(o) : -1;
            ok = b >= 0 && b <= HOSTSHAPE_MAX_OUT;
            bytes += b;
        }
        if (!ok || total + bytes > HOSTSHAPE_MAX_TOTAL)
            continue;
        ox_rval *in[16] = {0}, *out[8] = {0};
        if (dims_only) {
            if (cn->n_inputs < 1 || !static_value(cn->inputs[0]))
                continue;
            ox_tensor *t = dims_value(cn, cn->inputs[0]);
            out[0] = t ? ox_rval_tensor(t) : NULL;
            ok = out[0] != NULL;
        } else {
            for (int i = 0; ok && i < cn->n_inputs; i++) {
                const ox_value *v = cn->inputs[i];
                if (!v)
                    continue;
                const ox_tensor *t = ox_ptrmap_get(&known, v);
                if (!t && v->init) {
                    /* An initializer that is no graph input: a constant. */
                    bool is_input = false;
                    for (int j = 0; j < g->n_inputs; j++)
                        is_input |= g->inputs[j] == v;
                    t = is_input ? NULL : v->init;
                }
                ox_tensor *c = t ? ox_tensor_share(t) : NULL;
                in[i] = c ? ox_rval_tensor(c) : NULL;
                ok = in[i] != NULL;
            }
            ox_cost c;
            ox_node_cost(cn, &c);
            if (ok && c.known && c.flops > HOSTSHAPE_MAX_FLOPS)
                ok = false;
            if (ok) {
                ox_error err = {0};
                ok = ox_exec_node_capped(p->clone, cn, cn->n_inputs, in, cn->n_outputs, out,
                                         HOSTSHAPE_MAX_OUT, &err) == OX_OK;
            }
        }
        for (int i = 0; ok && i < cn->n_outputs; i++)
            if (cn->outputs[i])
                ok = out[i] && out[i]->kind == OX_RV_TENSOR && matches(out[i]->t, cn->outputs[i]);
        /* Known values; node k is a plan constant unless the executor folds
         * it already (every output a weight slot: constant-derived). */
        bool all_weights = true;
        for (int i = 0; ok && i < cn->n_outputs; i++) {
            if (!cn->outputs[i])
                continue;
            ox_tensor *t = ox_tensor_share(out[i]->t);
            if (!t || !ox_ptrmap_put(&known, cn->outputs[i], t)) {
                ox_tensor_free(t);
                ok = false;
                break;
            }
            total += (int64_t)t->nbytes;
            int s = slot_of(idx, nodes[k]->outputs[i]);
            if (s >= 0 && !p->slot[s].weight)
                all_weights = false;
        }
        if (ok && !all_weights) {
            for (int i = 0; i < cn->n_outputs; i++) {
                int s = slot_of(idx, nodes[k]->outputs[i]);
                if (s < 0 || !cn->outputs[i] || p->pval[s])
                    continue;
                p->pval[s] = ox_tensor_share(out[i]->t);
                p->slot[s].pconst = p->pval[s] != NULL;
                ok &= p->slot[s].pconst;
            }
            p->pconst[k] = ok;
            p->n_pconst += ok;
        }
        for (int i = 0; i < 16; i++)
            ox_rval_free(in[i]);
        for (int i = 0; i < 8; i++)
            ox_rval_free(out[i]);
    }
    size_t pos = 0;
    const void *key;
    void *val;
    while (ox_ptrmap_next(&known, &pos, &key, &val))
        ox_tensor_free(val);
    ox_ptrmap_free(&known);
}
