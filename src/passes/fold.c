/* Folding passes: Constant nodes become initializers, values that shape
 * inference computed (shape chains, under --shape/--dim) become
 * initializers, and deterministic nodes whose inputs are all constant are
 * run once by the executor and replaced by their results. */
#include <stdlib.h>
#include <string.h>

#include "onnxscope/exec.h"
#include "passes/pass_internal.h"

/* Replaces node n (index i of g) by its computed outputs: each output value
 * keeps its name and uses and becomes an initializer. vals[k] are taken;
 * NULL entries must be unused outputs. */
static void replace_by_values(ox_pass_ctx *c, ox_graph *g, ox_node *n, ox_tensor **vals)
{
    int no = n->n_outputs;
    ox_value **outs = malloc(((size_t)no + 1) * sizeof *outs);
    if (!outs) {
        for (int k = 0; k < no; k++)
            ox_tensor_free(vals[k]);
        return;
    }
    memcpy(outs, n->outputs, (size_t)no * sizeof *outs);
    ox__pass_drop(c, n);
    for (int k = 0; k < no; k++) {
        ox_value *o = outs[k];
        if (!o) {
            ox_tensor_free(vals[k]);
            continue;
        }
        if (!vals[k]) {
            ox__pass_drop_value(c, o);
            continue;
        }
        ox_tensor_set_name(vals[k], o->name);
        ox_type *ty = ox_type_new_tensor(vals[k]->dtype, vals[k]->rank, vals[k]->dims);
        ox_graph_set_initializer(g, o, vals[k]);
        if (ty) {
            ox_type_free(o->type);
            o->type = ty;
        }
        ox__pass_list_init(g, o);
    }
    free(outs);
}

static bool outputs_are_graph_outputs(const ox_node *n)
{
    for (int k = 0; k < n->n_outputs; k++)
        if (n->outputs[k] && n->outputs[k]->is_output)
            return true;
    return false;
}

static bool outputs_unused(const ox_node *n)
{
    for (int k = 0; k < n->n_outputs; k++)
        if (n->outputs[k] && (n->outputs[k]->n_uses || n->outputs[k]->is_output))
            return false;
    return true;
}

/* Whether a fold growing the model by `growth` bytes fits the per-node
 * limit and what is left of the run's total (see ox_pass_ctx); takes it. */
static bool take_growth(ox_pass_ctx *c, int64_t growth)
{
    if (growth > c->fold_limit)
        return false;
    if (growth <= 0 || !c->fold_room)
        return true;
    if (growth > *c->fold_room)
        return false;
    *c->fold_room -= growth;
    return true;
}

/* ---- Constant -> initializer ------------------------------------------------ */

static ox_tensor *constant_value(const ox_node *n)
{
    if (n->n_attrs != 1)
        return NULL;
    const ox_attr *a = &n->attrs[0];
    int64_t d;
    ox_tensor *t = NULL;
    if (!strcmp(a->name, "value") && a->type == OX_ATTR_TENSOR && a->t)
        return a->t->external ? NULL : ox_tensor_share(a->t);
    if (!strcmp(a->name, "value_float") && a->type == OX_ATTR_FLOAT) {
        t = ox_tensor_new(OX_DT_FLOAT, 0, NULL);
        if (t)
            ox_tensor_set_f64(t, 0, a->f);
    } else if (!strcmp(a->name, "value_int") && a->type == OX_ATTR_INT) {
        t = ox_tensor_new(OX_DT_INT64, 0, NULL);
        if (t)
            ox_tensor_set_i64(t, 0, a->i);
    } else if (!strcmp(a->name, "value_floats") && a->type == OX_ATTR_FLOATS) {
        d = a->n;
        t = ox_tensor_new(OX_DT_FLOAT, 1, &d);
        for (int i = 0; t && i < a->n; i++)
            ox_tensor_set_f64(t, i, a->floats[i]);
    } else if (!strcmp(a->name, "value_ints") && a->type == OX_ATTR_INTS) {
        t = ox__pass_i64_tensor(a->n, a->ints);
    }
    /* value_string(s) and sparse_value stay Constant nodes. */
    return t;
}

static ox_status pass_constant_to_init(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    (void)err;
    for (int i = 0; i < g->n_nodes && ox__pass_may(c); i++) {
        ox_node *n = g->nodes[i];
        if (ox__pass_gone(n))
            continue;
        if (!ox_node_is(n, "Constant") || n->n_outputs != 1 || !n->outputs[0] ||
            n->outputs[0]->is_output)
            continue;
        ox_tensor *t = constant_value(n);
        if (!t)
            continue;
        replace_by_values(c, g, n, &t);
        ox__pass_did(c);
    }
    return OX_OK;
}

/* ---- shape-chain values ------------------------------------------------------ */

static ox_status pass_fold_shape_values(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    (void)err;
    for (int i = 0; i < g->n_nodes && ox__pass_may(c); i++) {
        ox_node *n = g->nodes[i];
        if (ox__pass_gone(n))
            continue;
        if (n->n_outputs < 1 || outputs_are_graph_outputs(n) || outputs_unused(n) ||
            ox_node_is_random(n) || ox_node_has_subgraph(n) || ox_node_is(n, "Constant"))
            continue;
        bool ok = true;
        int64_t bytes = 0;
        for (int k = 0; k < n->n_outputs && ok; k++) {
            ox_value *o = n->outputs[k];
            if (!o || (!o->n_uses && !o->is_output))
                continue;
            /* A value computed from an initializer a caller may override
             * (IR >= 4, listed as a graph input) is no constant: inference
             * knows its stored value, not the fed one (to_fp16's Cast of a
             * fed BN scale folded to the default, docs/PASSES.md). */
            const ox_tensor *kt = ox_value_constant(o);
            if (!kt || kt->dtype == OX_DT_STRING)
                ok = false;
            else
                bytes += (int64_t)o->known->nbytes;
        }
        if (!ok || n->n_outputs > 16 || !take_growth(c, bytes))
            continue;
        ox_tensor *vals[16] = {0};
        for (int k = 0; k < n->n_outputs; k++) {
            ox_value *o = n->outputs[k];
            if (o && (o->n_uses || o->is_output))
                vals[k] = ox_tensor_share(o->known);
        }
        replace_by_values(c, g, n, vals);
        ox__pass_did(c);
    }
    return OX_OK;
}

/* ---- constant folding with the executor ------------------------------------ */

static int64_t static_bytes(const ox_value *v)
{
    int64_t dims[OX_MAX_RANK], numel;
    size_t b;
    int r = ox__pass_static_shape(v, dims);
    ox_dtype dt = ox__pass_elem(v);
    if (r < 0 || dt == OX_DT_UNDEFINED || dt == OX_DT_STRING || !ox_shape_numel(r, dims, &numel) ||
        !ox_dtype_nbytes(dt, numel, &b))
        return -1;
    return (int64_t)b;
}

static bool only_reader(const ox_value *v, const ox_node *n)
{
    if (v->is_output)
        return false;
    for (int i = 0; i < v->n_uses; i++)
        if (v->uses[i].node != n)
            return false;
    return true;
}

/* True when input k of n repeats an earlier input. */
static bool read_before(const ox_node *n, int k)
{
    for (int j = 0; j < k; j++)
        if (n->inputs[j] == n->inputs[k])
            return true;
    return false;
}

static ox_status pass_constant_folding(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    (void)err;
    for (int i = 0; i < g->n_nodes && ox__pass_may(c); i++) {
        ox_node *n = g->nodes[i];
        if (ox__pass_gone(n))
            continue;
        if (n->n_inputs < 1 || n->n_outputs < 1 || n->n_outputs > 16 ||
            outputs_are_graph_outputs(n) || outputs_unused(n) || ox_node_is_random(n) ||
            ox_node_has_subgraph(n) || ox_node_is(n, "Constant") || !n->op_type)
            continue;
        /* Training-mode Dropout draws random masks. */
        if (ox_node_is(n, "Dropout") && n->n_inputs > 2 && n->inputs[2])
            continue;
        /* Quantized weights stay quantized (QDQ form, quantize_dynamic),
         * as ONNX Runtime keeps them: folding would make them float again. */
        if (ox_node_is(n, "DequantizeLinear"))
            continue;
        bool ok = true;
        int64_t freed = 0;
        for (int k = 0; k < n->n_inputs && ok; k++) {
            ox_value *v = n->inputs[k];
            if (!v)
                continue;
            const ox_tensor *t = ox__pass_const(v);
            if (!t || t->external)
                ok = false;
            else if (only_reader(v, n) && !read_before(n, k))
                freed += (int64_t)t->nbytes;  /* once per value: Concat(x, x) frees x once */
        }
        if (!ok || !ox_kernel_lookup(n->domain, n->op_type, ox_model_opset(c->m, n->domain)))
            continue;
        /* Refuse before running when inference already knows the result
         * is too big (Tile/Expand/ConstantOfShape). */
        int64_t est = 0;
        for (int k = 0; k < n->n_outputs && est >= 0; k++) {
            int64_t b = n->outputs[k] ? static_bytes(n->outputs[k]) : 0;
            est = b < 0 ? -1 : est + b;
        }
        if (est >= 0 && (est - freed > c->fold_limit ||
                         (c->fold_room && est - freed > *c->fold_room)))
            continue;
        ox_rval *in[64] = {0}, *out[16] = {0};
        if (n->n_inputs > 64)
            continue;
        for (int k = 0; k < n->n_inputs && ok; k++)
            if (n->inputs[k]) {
                ox_tensor *t = ox_tensor_share(n->inputs[k]->init);
                in[k] = t ? ox_rval_tensor(t) : NULL;
                ok = in[k] != NULL;
            }
        ox_error ferr = {0};
        /* Capped: with no size from inference the kernel itself must not
         * build an output the limit would reject. */
        int64_t cap = c->fold_limit < INT64_MAX - freed - 1 ? c->fold_limit + freed + 1 : 0;
        if (ok && ox_exec_node_capped(c->m, n, n->n_inputs, in, n->n_outputs, out, cap,
                                      &ferr) != OX_OK)
            ok = false;
        for (int k = 0; k < n->n_inputs; k++)
            ox_rval_free(in[k]);
        ox_tensor *vals[16] = {0};
        int64_t bytes = 0;
        for (int k = 0; k < n->n_outputs && ok; k++) {
            ox_value *o = n->outputs[k];
            if (!o || (!o->n_uses && !o->is_output))
                continue;
            if (!out[k] || out[k]->kind != OX_RV_TENSOR || !out[k]->t)
                ok = false;
            else
                bytes += (int64_t)out[k]->t->nbytes;
        }
        if (ok && !take_growth(c, bytes - freed))
            ok = false;
        for (int k = 0; k < n->n_outputs; k++) {
            ox_value *o = n->outputs[k];
            if (ok && out[k] && o && (o->n_uses || o->is_output)) {
                vals[k] = out[k]->t;
                out[k]->t = NULL;
            }
            ox_rval_free(out[k]);
        }
        if (!ok) {
            for (int k = 0; k < n->n_outputs; k++)
                ox_tensor_free(vals[k]);
            continue;
        }
        replace_by_values(c, g, n, vals);
        ox__pass_did(c);
    }
    return OX_OK;
}

const ox_pass ox__passes_fold[] = {
    {"constant_to_initializer", "turn Constant nodes into initializers", OX_PASS_FOLDING,
     OX_TARGET_ONNX, OX_LEVEL_BASIC, true, pass_constant_to_init},
    {"fold_shape_chains",
     "replace values computed from static shapes (Shape/Gather/Concat chains) by constants",
     OX_PASS_FOLDING, OX_TARGET_ONNX, OX_LEVEL_BASIC, true, pass_fold_shape_values},
    {"constant_folding",
     "run deterministic nodes whose inputs are all constant (growth limit 1 MiB)",
     OX_PASS_FOLDING, OX_TARGET_ONNX, OX_LEVEL_BASIC, true, pass_constant_folding},
    {0},
};
