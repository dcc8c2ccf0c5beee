/* Placement of float16 nodes (docs/EXECUTOR.md "float16 models on the
 * GPU"): a node touching a float16 tensor (the to_fp16 pass's output) goes
 * to the GPU when its float32 twin would (the same node with every float16
 * value read as float32: the kernels' structural limits, ranks, attributes
 * and parameter rules are the same); run_half.inc runs it with a half
 * kernel (kernels_half.cu) or widened around the float32 one. Kept separate from place.c so
 * the float32 rules stay in one place and are not repeated per type. */
#include <stdlib.h>
#include <string.h>

#include "onnxscope/dtype.h"
#include "place.h"
#include "place_half.h"

/* Every family runs float16 (run_half.inc): its own half runner, the
 * type-blind data movement, or the float32 runner on widened copies
 * (Attention, and any family added later). FUSED never comes out of
 * ox_cuda_kind_of. */
bool ox_cuda_half_family(ox_cuda_kind k)
{
    return k != OX_CK_NONE && k != OX_CK_K_FUSED;
}

static ox_dtype elem(const ox_value *v)
{
    return v && v->type && v->type->kind == OX_TYPE_TENSOR ? v->type->elem : OX_DT_UNDEFINED;
}

bool ox_cuda_node_is_half(const ox_node *n)
{
    for (int i = 0; i < n->n_inputs; i++)
        if (elem(n->inputs[i]) == OX_DT_FLOAT16)
            return true;
    for (int i = 0; i < n->n_outputs; i++)
        if (elem(n->outputs[i]) == OX_DT_FLOAT16)
            return true;
    return false;
}

/* A shallow copy of v whose float16 type reads float32 (dims shared). */
static const ox_value *twin_value(const ox_value *v, ox_value *vs, ox_type *ts)
{
    if (!v || elem(v) != OX_DT_FLOAT16)
        return v;
    *vs = *v;
    *ts = *v->type;
    ts->elem = OX_DT_FLOAT;
    vs->type = ts;
    return vs;
}

#define TWIN_MAX 16

int ox_cuda_half_kind(const ox_node *n, int64_t opset, const bool *host_in,
                      const ox_cuda_caps *caps, const char **why)
{
    if (!ox_cuda_node_is_half(n))
        return -1;
    bool is_cast = ox_node_is(n, "Cast");
    /* Mixed float16/float32 floats (other than a Cast's two sides) have no
     * kernel: each half kernel reads and writes float16 only. */
    for (int i = 0; !is_cast && i < n->n_inputs + n->n_outputs; i++) {
        const ox_value *v = i < n->n_inputs ? n->inputs[i] : n->outputs[i - n->n_inputs];
        if (elem(v) == OX_DT_FLOAT || elem(v) == OX_DT_DOUBLE || elem(v) == OX_DT_BFLOAT16) {
            *why = "float16 mixed with another float type";
            return OX_CK_NONE;
        }
    }
    if (n->n_inputs > TWIN_MAX || n->n_outputs > TWIN_MAX) {
        *why = "too many inputs";
        return OX_CK_NONE;
    }
    ox_value vs[2 * TWIN_MAX];
    ox_type ts[2 * TWIN_MAX];
    ox_value *ins[TWIN_MAX], *outs[TWIN_MAX];
    for (int i = 0; i < n->n_inputs; i++)
        ins[i] = (ox_value *)twin_value(n->inputs[i], &vs[i], &ts[i]);
    for (int i = 0; i < n->n_outputs; i++)
        outs[i] = (ox_value *)twin_value(n->outputs[i], &vs[TWIN_MAX + i], &ts[TWIN_MAX + i]);
    ox_node twin = *n;
    twin.inputs = ins;
    twin.outputs = outs;
    ox_cuda_kind k = ox_cuda_kind_of(&twin, opset, host_in, caps, why);
    if (k == OX_CK_NONE) {
        if (*why && !strcmp(*why, "float32 only"))
            *why = "no float16 kernel for these types";
        return OX_CK_NONE;
    }
    if (!ox_cuda_half_family(k)) {
        *why = "no float16 runner for this op";
        return OX_CK_NONE;
    }
    /* (A Cast between float16 and a type of the float32 Cast kernel:
     * ox_ckh_cast converts through float.) */
    return k;
}
