/* The CUDA backend's placement and device memory plan (place.h). No CUDA
 * here: what runs where is decided from the inferred clone's static types
 * and the kernels' stated limits, so it is tested on machines without a
 * GPU. The conditions below are the ones runtime.c relies on. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnxscope/cost.h"
#include "onnxscope/dtype.h"
#include "onnxscope/infer.h"
#include "onnxscope/memplan.h"
#include "core/ptrmap.h"
#include "place.h"
#include "hostshape.h"
#include "contrib.h"
#include "kern.h"
#include "exec/arena.h"
#include "exec/env_flag.h"

static bool is_ms(const ox_node *n)
{
    return n->domain && !strcmp(n->domain, "com.microsoft");
}

static bool static_tensor(const ox_value *v)
{
    const ox_type *t = v ? v->type : NULL;
    if (!t || t->kind != OX_TYPE_TENSOR || !t->has_shape || t->rank > OX_CK_MAX_RANK ||
        t->elem == OX_DT_STRING || t->elem == OX_DT_UNDEFINED)
        return false;
    for (int d = 0; d < t->rank; d++)
        if (t->dims[d].value < 0)
            return false;
    /* Sub-byte types have no element size our copies can move. */
    return ox_dtype_bits(t->elem) >= 8;
}

static ox_dtype elem_of(const ox_value *v)
{
    return v && v->type ? v->type->elem : OX_DT_UNDEFINED;
}

static int rank_of(const ox_value *v)
{
    return v && v->type ? v->type->rank : -1;
}

static int64_t dim_of(const ox_value *v, int d)
{
    return v->type->dims[d].value;
}

static int64_t numel_of(const ox_value *v)
{
    int64_t n = 1;
    for (int d = 0; d < v->type->rank; d++)
        n *= v->type->dims[d].value;
    return n;
}

static bool in_is(const ox_node *n, int i, ox_dtype dt)
{
    return i < n->n_inputs && n->inputs[i] && elem_of(n->inputs[i]) == dt;
}

static bool present(const ox_node *n, int i)
{
    return i < n->n_inputs && n->inputs[i];
}

/* Outputs [from, to) must be unused (the kernels do not write them). */
static bool outputs_unused(const ox_node *n, int from, int to)
{
    for (int i = from; i < n->n_outputs && i < to; i++) {
        const ox_value *v = n->outputs[i];
        if (v && (v->n_uses > 0 || v->is_output))
            return false;
    }
    return true;
}

static bool extra_outputs_unused(const ox_node *n, int from)
{
    return outputs_unused(n, from, n->n_outputs);
}

static const char *const unary_ops[] = {
    "Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Erf", "Neg", "Abs", "Reciprocal",
    "LeakyRelu", "HardSigmoid", "HardSwish", "Floor", "Ceil", NULL,
};
static const char *const binary_ops[] = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", NULL};
static const char *const reshape_ops[] = {"Reshape", "Flatten", "Squeeze", "Unsqueeze",
                                          "Identity", NULL};
static const char *const reduce_ops[] = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin",
                                         "ReduceSumSquare", "ReduceL2", NULL};

static bool in_list(const ox_node *n, const char *const *l)
{
    if (!ox_node_is_default_domain(n))
        return false;
    for (int i = 0; l[i]; i++)
        if (!strcmp(n->op_type, l[i]))
            return true;
    return false;
}

/* Symmetric explicit pads of a 2-D Conv/Pool (NOTSET), or false. */
static bool pads_2d(const ox_node *n, bool allow_asym)
{
    const char *ap = ox_node_attr_s(n, "auto_pad", "NOTSET");
    if (strcmp(ap, "NOTSET") && strcmp(ap, "VALID"))
        return false;
    const int64_t *p;
    int np = ox_node_attr_ints(n, "pads", &p);
    if (np <= 0)   /* -1: absent */
        return true;
    if (np != 4)
        return false;
    return allow_asym || (p[0] == p[2] && p[1] == p[3]);
}

ox_cuda_kind ox_cuda_kind_of(const ox_node *n, int64_t opset, const bool *host_in,
                             const ox_cuda_caps *caps, const char **why)
{
    *why = "no CUDA kernel for this op";
    if (n->n_outputs < 1 || !n->outputs[0]) {
        *why = "no output";
        return OX_CK_NONE;
    }
    for (int a = 0; a < n->n_attrs; a++)
        if (n->attrs[a].type == OX_ATTR_GRAPH || n->attrs[a].type == OX_ATTR_GRAPHS) {
            *why = "has a subgraph";
            return OX_CK_NONE;
        }
    for (int i = 0; i < n->n_inputs; i++)
        if (n->inputs[i] && !static_tensor(n->inputs[i])) {
            *why = "an input's shape is not static";
            return OX_CK_NONE;
        }
    const ox_value *y = n->outputs[0], *x = present(n, 0) ? n->inputs[0] : NULL;
    if (!static_tensor(y)) {
        *why = "the output's shape is not static";
        return OX_CK_NONE;
    }
    ox_dtype yt = elem_of(y);
    bool f32 = yt == OX_DT_FLOAT;
    /* Shape arithmetic (small integer results: a Concat of dims, an
     * Unsqueeze of a size) stays on the CPU, where its readers (Reshape,
     * Slice, Expand) want it: on the GPU it would cost an upload per piece. */
    bool small_int = true;
    for (int i = 0; i < n->n_outputs; i++) {
        const ox_value *o = n->outputs[i];
        if (o && (!(elem_of(o) == OX_DT_INT64 || elem_of(o) == OX_DT_INT32) ||
                  !static_tensor(o) || numel_of(o) > 16))
            small_int = false;
    }
    if (small_int) {
        *why = "shape arithmetic (small integer values stay on the CPU)";
        return OX_CK_NONE;
    }

    if (in_list(n, unary_ops) || (ox_node_is(n, "Gelu") && opset >= 20) ||
        (is_ms(n) && !strcmp(n->op_type, "Gelu"))) {
        if (!f32 || !in_is(n, 0, OX_DT_FLOAT)) {
            *why = "float32 only";
            return OX_CK_NONE;
        }
        if (ox_node_is(n, "Gelu") && strcmp(ox_node_attr_s(n, "approximate", "none"), "none")) {
            *why = "tanh-approximate Gelu";
            return OX_CK_NONE;
        }
        return OX_CK_K_UNARY;
    }
    if (ox_node_is(n, "Clip")) {
        if (!f32 || !in_is(n, 0, OX_DT_FLOAT)) {
            *why = "float32 only";
            return OX_CK_NONE;
        }
        for (int i = 1; i < n->n_inputs && i < 3; i++)
            if (present(n, i) && (!host_in[i] || numel_of(n->inputs[i]) != 1)) {
                *why = "bounds not on the host";
                return OX_CK_NONE;
            }
        return OX_CK_K_UNARY;
    }
    if (in_list(n, binary_ops)) {
        if (n->n_inputs != 2 || !f32 || !in_is(n, 0, OX_DT_FLOAT) || !in_is(n, 1, OX_DT_FLOAT)) {
            *why = "float32 with two inputs only";
            return ox_cuda_kind_contrib(n, opset, host_in, caps, why);   /* integers */
        }
        return OX_CK_K_BINARY;
    }
    if (ox_node_is(n, "Where")) {
        if (!in_is(n, 0, OX_DT_BOOL) || ox_dtype_bits(yt) != 32 || !in_is(n, 1, yt) ||
            !in_is(n, 2, yt)) {
            *why = "Where on 32-bit values only";
            return OX_CK_NONE;
        }
        return OX_CK_K_WHERE;
    }
    if (in_list(n, reshape_ops)) {
        if (!x || elem_of(x) != yt || numel_of(x) != numel_of(y)) {
            *why = "size changes";
            return OX_CK_NONE;
        }
        return OX_CK_K_RESHAPE;
    }
    if (ox_node_is(n, "Cast")) {
        static const ox_dtype ok_types[] = {OX_DT_FLOAT, OX_DT_UINT8, OX_DT_INT8, OX_DT_INT32,
                                            OX_DT_INT64, OX_DT_BOOL, OX_DT_DOUBLE};
        bool from = false, to = false;
        for (size_t i = 0; i < sizeof ok_types / sizeof ok_types[0]; i++) {
            from |= elem_of(x) == ok_types[i];
            to |= yt == ok_types[i];
        }
        if (!from || !to) {
            *why = "Cast between these types";
            return OX_CK_NONE;
        }
        return OX_CK_K_CAST;
    }
    if (ox_node_is(n, "Transpose"))
        return rank_of(x) == rank_of(y) ? OX_CK_K_TRANSPOSE : OX_CK_NONE;
    if (ox_node_is(n, "Concat")) {
        for (int i = 0; i < n->n_inputs; i++)
            if (!present(n, i) || elem_of(n->inputs[i]) != yt ||
                rank_of(n->inputs[i]) != rank_of(y)) {
                *why = "mixed inputs";
                return OX_CK_NONE;
            }
        return OX_CK_K_CONCAT;
    }
    if (ox_node_is(n, "Slice")) {
        for (int i = 1; i < n->n_inputs; i++)
            if (present(n, i) && (!host_in[i] || !ox_dtype_is_int(elem_of(n->inputs[i])))) {
                *why = "starts/ends not on the host";
                return OX_CK_NONE;
            }
        if (opset < 10 && n->n_inputs > 1)
            return OX_CK_NONE;
        return rank_of(x) == rank_of(y) ? OX_CK_K_SLICE : OX_CK_NONE;
    }
    if (ox_node_is(n, "Split")) {
        for (int i = 0; i < n->n_outputs; i++)
            if (!n->outputs[i] || !static_tensor(n->outputs[i]) || elem_of(n->outputs[i]) != yt) {
                *why = "an omitted or dynamic output";
                return OX_CK_NONE;
            }
        return OX_CK_K_SPLIT;
    }
    if (ox_node_is(n, "Gather")) {
        if (!(in_is(n, 1, OX_DT_INT64) || in_is(n, 1, OX_DT_INT32)) || elem_of(x) != yt) {
            *why = "indices neither int32 nor int64";
            return OX_CK_NONE;
        }
        return OX_CK_K_GATHER;
    }
    if (ox_node_is(n, "Expand")) {
        if (elem_of(x) != yt || rank_of(x) > rank_of(y))
            return OX_CK_NONE;
        return OX_CK_K_EXPAND;
    }
    if (in_list(n, reduce_ops)) {
        if (!f32 || !in_is(n, 0, OX_DT_FLOAT)) {
            *why = "float32 only";
            return OX_CK_NONE;
        }
        if (present(n, 1) && !host_in[1]) {
            *why = "axes not on the host";
            return OX_CK_NONE;
        }
        return OX_CK_K_REDUCE;
    }
    if (ox_node_is(n, "Softmax") || ox_node_is(n, "LogSoftmax")) {
        if (!f32 || !in_is(n, 0, OX_DT_FLOAT)) {
            *why = "float32 only";
            return OX_CK_NONE;
        }
        return OX_CK_K_SOFTMAX;
    }
    if (ox_node_is(n, "LayerNormalization") ||
        (is_ms(n) && (!strcmp(n->op_type, "SkipLayerNormalization") ||
                      !strcmp(n->op_type, "SimplifiedLayerNormalization") ||
                      !strcmp(n->op_type, "LayerNormalization")))) {
        bool skip = !strcmp(n->op_type, "SkipLayerNormalization");
        for (int i = 0; i < n->n_inputs; i++)
            if (present(n, i) && !in_is(n, i, OX_DT_FLOAT)) {
                *why = "float32 only";
                return OX_CK_NONE;
            }
        /* Mean and inv-std-dev outputs are not written; SkipLayerNormalization's
         * input+skip(+bias) sum (output 3) is. */
        if (!f32 || !outputs_unused(n, 1, skip ? 3 : n->n_outputs)) {
            *why = "mean/inv-std-dev outputs used";
            return OX_CK_NONE;
        }
        int r = rank_of(x);
        int axis = skip ? -1 : (int)ox_node_attr_i(n, "axis", -1);
        if (axis < 0)
            axis += r;
        if (axis < 0 || axis >= r) {
            *why = "bad axis";
            return OX_CK_NONE;
        }
        int64_t cols = 1;
        for (int d = axis; d < r; d++)
            cols *= dim_of(x, d);
        /* gamma/beta (and bias) must hold exactly one row: no broadcasting. */
        int first_param = skip ? 2 : 1;
        for (int i = first_param; i < n->n_inputs; i++)
            if (present(n, i) && numel_of(n->inputs[i]) != cols) {
                *why = "scale/bias broadcast over rows";
                return OX_CK_NONE;
            }
        if (skip && (!present(n, 1) || numel_of(n->inputs[1]) != numel_of(x))) {
            *why = "skip broadcast";
            return OX_CK_NONE;
        }
        if (!present(n, first_param))
            return OX_CK_NONE;
        return OX_CK_K_LAYERNORM;
    }
    if (ox_node_is(n, "BatchNormalization")) {
        if (!f32 || ox_node_attr_i(n, "training_mode", 0) || !extra_outputs_unused(n, 1) ||
            rank_of(x) < 2 || n->n_inputs != 5) {
            *why = "training mode or float32 only";
            return OX_CK_NONE;
        }
        for (int i = 0; i < 5; i++)
            if (!in_is(n, i, OX_DT_FLOAT) || (i > 0 && numel_of(n->inputs[i]) != dim_of(x, 1)))
                return OX_CK_NONE;
        return OX_CK_K_BATCHNORM;
    }
    if (ox_node_is(n, "MatMul")) {
        if (!caps->cublas) {
            *why = "cuBLAS not loaded";
            return OX_CK_NONE;
        }
        const ox_value *b = n->inputs[1];
        if (!f32 || !in_is(n, 0, OX_DT_FLOAT) || !in_is(n, 1, OX_DT_FLOAT) || rank_of(x) < 2 ||
            rank_of(b) < 2) {
            *why = "float32 with ranks >= 2 only";
            return OX_CK_NONE;
        }
        /* Batches: equal, or one side's batch product 1 (stride 0). */
        int64_t ma = dim_of(x, rank_of(x) - 2) * dim_of(x, rank_of(x) - 1);
        int64_t mb = dim_of(b, rank_of(b) - 2) * dim_of(b, rank_of(b) - 1);
        int64_t ba = ma ? numel_of(x) / ma : 1, bb = mb ? numel_of(b) / mb : 1;
        if (ba != bb && ba != 1 && bb != 1) {
            *why = "batch broadcasting";
            return OX_CK_NONE;
        }
        if (ba == bb && ba > 1 && rank_of(x) != rank_of(b)) {
            *why = "batch broadcasting";
            return OX_CK_NONE;
        }
        return OX_CK_K_MATMUL;
    }
    if (ox_node_is(n, "Gemm")) {
        if (!caps->cublas) {
            *why = "cuBLAS not loaded";
            return OX_CK_NONE;
        }
        if (!f32 || !in_is(n, 0, OX_DT_FLOAT) || !in_is(n, 1, OX_DT_FLOAT) || rank_of(x) != 2 ||
            rank_of(n->inputs[1]) != 2 || (present(n, 2) && !in_is(n, 2, OX_DT_FLOAT)) ||
            (present(n, 2) && rank_of(n->inputs[2]) > 2)) {
            *why = "float32 2-D only";
            return OX_CK_NONE;
        }
        return OX_CK_K_GEMM;
    }
    if (ox_node_is(n, "Conv")) {
        if (!caps->cudnn) {
            *why = "cuDNN not loaded";
            return OX_CK_NONE;
        }
        if (!f32 || rank_of(x) != 4 || !in_is(n, 1, OX_DT_FLOAT) || !pads_2d(n, false) ||
            strcmp(ox_node_attr_s(n, "auto_pad", "NOTSET"), "NOTSET")) {
            *why = "2-D float32 with symmetric explicit pads only";
            return OX_CK_NONE;
        }
        return OX_CK_K_CONV;
    }
    if (ox_node_is(n, "MaxPool") || ox_node_is(n, "AveragePool")) {
        const int64_t *k;
        if (!f32 || rank_of(x) != 4 || ox_node_attr_ints(n, "kernel_shape", &k) != 2 ||
            !pads_2d(n, true) || !extra_outputs_unused(n, 1) ||
            strcmp(ox_node_attr_s(n, "auto_pad", "NOTSET"), "NOTSET")) {
            *why = "2-D float32 with explicit pads only";
            return OX_CK_NONE;
        }
        if (ox_node_is(n, "AveragePool") && ox_node_attr_i(n, "ceil_mode", 0) &&
            ox_node_attr_i(n, "count_include_pad", 0)) {
            *why = "ceil_mode with count_include_pad";
            return OX_CK_NONE;
        }
        return OX_CK_K_POOL;
    }
    if (ox_node_is(n, "GlobalAveragePool") || ox_node_is(n, "GlobalMaxPool")) {
        if (!f32 || rank_of(x) < 3)
            return OX_CK_NONE;
        return OX_CK_K_GLOBALPOOL;
    }
    if (is_ms(n) && !strcmp(n->op_type, "Attention")) {
        if (!caps->cublas) {
            *why = "cuBLAS not loaded";
            return OX_CK_NONE;
        }
        const int64_t *q;
        if (!f32 || rank_of(x) != 3 || !in_is(n, 1, OX_DT_FLOAT) || !extra_outputs_unused(n, 1) ||
            ox_node_attr_ints(n, "qkv_hidden_sizes", &q) > 0 || n->n_inputs > 4 ||
            (present(n, 2) && !in_is(n, 2, OX_DT_FLOAT)) ||
            (present(n, 3) && (!in_is(n, 3, OX_DT_INT32) || rank_of(n->inputs[3]) != 2))) {
            *why = "Attention with past, extra inputs or a mask other than (batch, seq)";
            return OX_CK_NONE;
        }
        int64_t heads = ox_node_attr_i(n, "num_heads", 0), h = dim_of(y, 2);
        if (heads <= 0 || h % heads || dim_of(n->inputs[1], 1) != 3 * h) {
            *why = "num_heads does not divide the hidden size";
            return OX_CK_NONE;
        }
        return OX_CK_K_ATTENTION;
    }
    return ox_cuda_kind_contrib(n, opset, host_in, caps, why);   /* contrib_place.c */
}

bool ox_cuda_input_on_host(ox_cuda_kind kind, int i)
{
    switch (kind) {
    case OX_CK_K_RESHAPE:   /* shape / axes: the plan's output shape is used */
    case OX_CK_K_EXPAND:
    case OX_CK_K_SPLIT:
    case OX_CK_K_SLICE:     /* starts, ends, axes, steps */
    case OX_CK_K_UNARY:     /* Clip's bounds */
    case OX_CK_K_REDUCE:    /* axes */
        return i >= 1;
    default:
        return false;
    }
}

void ox_cuda_plan_free(ox_cuda_plan *p)
{
    if (!p)
        return;
    free(p->kind);
    free(p->why);
    free(p->cnode);
    free(p->slot);
    free(p->sig);
    free(p->half);
    free(p->ep);
    free(p->ep_bias);
    free(p->ep_out);
    for (int k = 0; p->ep_bias_host && k < p->n_nodes; k++)
        ox_tensor_free(p->ep_bias_host[k]);
    free(p->ep_bias_host);
    free(p->flash);
    for (int k = 0; p->pval && k < p->n_slots; k++)
        ox_tensor_free(p->pval[k]);
    free(p->pval);
    free(p->pconst);
    ox_model_free(p->clone);
    free(p);
}

/* ---- decisions taken after placement (docs/EXECUTOR.md "CUDA backend") ---- */

static uint64_t plan_ids;

static int slot_at(const ox_ptrmap *idx, const ox_value *v)
{
    return v ? (int)(intptr_t)ox_ptrmap_get(idx, v) - 1 : -1;
}

/* The input of a GEMM-class node that is its weight operand (B of
 * MatMul/Gemm, W of Conv and Attention): float16 on the device in an fp16
 * plan; -1 for other kinds. */
static int half_operand(ox_cuda_kind kind)
{
    return kind == OX_CK_K_MATMUL || kind == OX_CK_K_GEMM || kind == OX_CK_K_CONV ||
                   kind == OX_CK_K_ATTENTION
               ? 1
               : -1;
}

/* fp16: every float32 GEMM-class node on the GPU computes with float16
 * operands; a weight is uploaded converted when every GPU node reading it
 * reads it as such an operand (else the node converts a float32 copy per
 * run, which is what activations always get). */
static void plan_fp16(ox_cuda_plan *p, const ox_node *const *nodes, const ox_ptrmap *idx,
                      const ox_cuda_caps *caps)
{
    if (!caps->fp16)
        return;
    for (int k = 0; k < p->n_nodes; k++) {
        int op = half_operand((ox_cuda_kind)p->kind[k]);
        if (op < 0)
            continue;
        const ox_node *cn = p->cnode[k];
        if (elem_of(cn->inputs[0]) == OX_DT_FLOAT && in_is(cn, op, OX_DT_FLOAT)) {
            p->half[k] = 1;
            p->n_half++;
        }
    }
    unsigned char *bad = calloc((size_t)p->n_slots + 1, 1);
    unsigned char *seen = calloc((size_t)p->n_slots + 1, 1);
    if (!bad || !seen) {
        free(bad);
        free(seen);
        return;   /* conversions per run instead: still correct */
    }
    for (int k = 0; k < p->n_nodes; k++) {
        if (!p->kind[k])
            continue;
        for (int i = 0; i < nodes[k]->n_inputs; i++) {
            int s = slot_at(idx, nodes[k]->inputs[i]);
            if (s < 0 || !p->slot[s].weight)
                continue;
            seen[s] = 1;
            if (!p->half[k] || i != half_operand((ox_cuda_kind)p->kind[k]))
                bad[s] = 1;
        }
    }
    for (int s = 0; s < p->n_slots; s++)
        p->slot[s].half = seen[s] && !bad[s] && p->slot[s].is_static &&
                          p->slot[s].dtype == OX_DT_FLOAT;
    free(bad);
    free(seen);
}

/* A value read once, by node `reader` only, and not a graph output. */
static bool single_use_by(const ox_value *v, const ox_node *reader)
{
    if (!v || v->n_uses != 1 || v->is_output)
        return false;
    for (int i = 0; i < reader->n_inputs; i++)
        if (reader->inputs[i] == v)
            return true;
    return false;
}

/* A float32 initializer of n elements shaped (n) or (1, n), not a graph
 * input (a caller cannot replace it): a bias, read from the clone. */
static const ox_tensor *bias_of(const ox_cuda_plan *p, int s, const ox_value *v, int64_t n)
{
    if (s < 0 || !v || !v->name || !p->slot[s].init || !p->slot[s].is_static ||
        p->slot[s].dtype != OX_DT_FLOAT)
        return NULL;
    const ox_value *cv = ox_graph_find(p->clone->graph, v->name);
    if (!cv || !cv->init || cv->init->dtype != OX_DT_FLOAT)
        return NULL;
    const ox_graph *g = p->clone->graph;
    for (int i = 0; i < g->n_inputs; i++)
        if (g->inputs[i] == cv)
            return NULL;
    const ox_cuda_slot *b = &p->slot[s];
    bool ok = (b->rank == 1 && b->dims[0] == n) ||
              (b->rank == 2 && b->dims[0] == 1 && b->dims[1] == n);
    return ok && cv->init->numel == n ? cv->init : NULL;
}

static bool same_shape(const ox_value *a, const ox_value *b)
{
    if (!static_tensor(a) || !static_tensor(b) || rank_of(a) != rank_of(b))
        return false;
    for (int d = 0; d < rank_of(a); d++)
        if (dim_of(a, d) != dim_of(b, d))
            return false;
    return true;
}

/* The activation node k applies to its input 0, as an epilogue code (NONE
 * when it is none of those cuBLASLt or our bias kernel can fuse). */
static ox_cuda_epilogue act_of(const ox_cuda_plan *p, int k)
{
    const ox_node *n = p->cnode[k];
    if (!p->kind[k] || n->n_outputs != 1)
        return OX_EP_NONE;
    if (ox_node_is(n, "Relu"))
        return OX_EP_RELU_BIAS;
    if (ox_node_is(n, "Gelu") && n->n_inputs == 1) {
        const char *ap = ox_node_attr_s(n, "approximate", "none");
        return ap && !strcmp(ap, "tanh") ? OX_EP_GELU_TANH_BIAS : OX_EP_GELU_ERF_BIAS;
    }
    if (is_ms(n) && !strcmp(n->op_type, "Gelu") && n->n_inputs == 1)
        return OX_EP_GELU_ERF_BIAS;
    if (is_ms(n) && !strcmp(n->op_type, "FastGelu") && n->n_inputs == 1)
        return OX_EP_GELU_TANH_BIAS;
    return OX_EP_NONE;
}

static bool epilogues_off(void)
{
    return ox__env_on("ONNXSCOPE_CUDA_NO_EPILOGUE");
}

/* Slot s at offset off shares no byte with a slot live at the same time. */
static bool fits(const ox_cuda_plan *p, int s, int64_t off)
{
    const ox_cuda_slot *o = &p->slot[s];
    for (int t = 0; t < p->n_slots; t++) {
        const ox_cuda_slot *x = &p->slot[t];
        if (t == s || x->off < 0 || !x->nbytes || x->first > o->last || x->last < o->first)
            continue;
        if (x->off < off + o->nbytes && off < x->off + x->nbytes)
            return false;
    }
    return true;
}

/* Slot s (whose lifetime grew) at the lowest aligned offset where it fits
 * (offset 0 or just past a slot), else at the arena's end: p->ep_extra
 * counts the bytes the arena grew by. */
static void relocate(ox_cuda_plan *p, int s)
{
    ox_cuda_slot *o = &p->slot[s];
    int64_t best = -1;
    for (int t = -1; t < p->n_slots; t++) {
        if (t >= 0 && (p->slot[t].off < 0 || t == s))
            continue;
        int64_t off = t < 0 ? 0 : (p->slot[t].off + p->slot[t].nbytes + 63) / 64 * 64;
        if (off + o->nbytes <= p->arena_bytes && (best < 0 || off < best) && fits(p, s, off))
            best = off;
    }
    if (best < 0) {
        best = (p->arena_bytes + 63) / 64 * 64;
        p->ep_extra += best + o->nbytes - p->arena_bytes;
        p->arena_bytes = best + o->nbytes;
    }
    o->off = best;
}

/* GEMM epilogues: MatMul (2-D float weight B) followed by Add of a bias
 * weight of N, or Gemm with a bias C of N (beta 1), then optionally Relu
 * or Gelu, each intermediate read once by the next node in order: the
 * head writes the last node's output, the others become FUSED. Adjacent
 * nodes only, so nothing runs between the head's write and the slot's
 * planned birth; that slot's lifetime is moved back to the head's step
 * (and the slot to the arena's end when that makes it share live bytes). */
static void plan_epilogues(ox_cuda_plan *p, const ox_node *const *nodes, const ox_ptrmap *idx)
{
    if (epilogues_off())
        return;
    for (int k = 0; k < p->n_nodes; k++) {
        ox_cuda_kind kind = (ox_cuda_kind)p->kind[k];
        const ox_node *cn = p->cnode[k];
        if ((kind != OX_CK_K_MATMUL && kind != OX_CK_K_GEMM) || cn->n_outputs != 1)
            continue;
        const ox_value *y = cn->outputs[0];
        if (!static_tensor(y) || rank_of(y) < 2 || elem_of(y) != OX_DT_FLOAT)
            continue;
        int64_t n = dim_of(y, rank_of(y) - 1);
        int bias = -1, tail = k, slots_dead[2], n_dead = 0;
        const ox_value *t = y;
        const ox_tensor *bt = NULL;
        if (kind == OX_CK_K_GEMM) {
            if (!present(cn, 2) || ox_node_attr_f(cn, "beta", 1.f) != 1.f)
                continue;
            bias = slot_at(idx, nodes[k]->inputs[2]);
            if (!(bt = bias_of(p, bias, nodes[k]->inputs[2], n)))
                continue;
        } else {
            int sb = slot_at(idx, nodes[k]->inputs[1]);
            if (rank_of(cn->inputs[0]) < 2 || sb < 0 || !p->slot[sb].weight ||
                p->slot[sb].rank != 2 || k + 1 >= p->n_nodes)
                continue;
            const ox_node *add = p->cnode[k + 1];
            if (p->kind[k + 1] != OX_CK_K_BINARY || !ox_node_is(add, "Add") || add->n_inputs != 2 ||
                !single_use_by(y, add) || !same_shape(add->outputs[0], y))
                continue;
            int other = add->inputs[0] == y ? 1 : 0;
            bias = slot_at(idx, nodes[k + 1]->inputs[other]);
            if (add->inputs[1 - other] != y ||
                !(bt = bias_of(p, bias, nodes[k + 1]->inputs[other], n)))
                continue;
            tail = k + 1;
            t = add->outputs[0];
        }
        ox_cuda_epilogue ep = OX_EP_BIAS;
        if (tail + 1 < p->n_nodes && single_use_by(t, p->cnode[tail + 1]) &&
            p->cnode[tail + 1]->inputs[0] == t && same_shape(p->cnode[tail + 1]->outputs[0], t)) {
            ox_cuda_epilogue a = act_of(p, tail + 1);
            if (a) {
                ep = a;
                tail++;
            }
        }
        int out = slot_at(idx, nodes[tail]->outputs[0]);
        if (out < 0 || p->slot[out].off < 0)
            continue;
        /* Host kernels (the emulated device, the fallback) read the bias
         * typed: an initializer viewed in the mapped file may sit misaligned. */
        const void *bd = ox_tensor_data(bt);
        ox_tensor *bh = bd && ((uintptr_t)bd & 15) ? ox_tensor_clone(bt) : ox_tensor_share(bt);
        if (!bh)
            continue;   /* out of memory: the chain stays unfused */
        /* The intermediates are never written: no device bytes. */
        for (int j = k; j < tail; j++) {
            int s = slot_at(idx, nodes[j]->outputs[0]);
            if (s >= 0)
                slots_dead[n_dead++] = s;
        }
        for (int i = 0; i < n_dead; i++) {
            if (p->slot[slots_dead[i]].off >= 0)
                p->ep_freed += (p->slot[slots_dead[i]].nbytes + 63) / 64 * 64;
            p->slot[slots_dead[i]].off = -1;
        }
        ox_cuda_slot *o = &p->slot[out];
        if (o->first > k) {
            o->first = k;
            if (!fits(p, out, o->off))
                relocate(p, out);
        }
        p->ep[k] = (unsigned char)ep;
        p->ep_bias[k] = bias;
        p->ep_bias_host[k] = bh;
        p->ep_out[k] = out;
        for (int j = k + 1; j <= tail; j++)
            p->kind[j] = OX_CK_K_FUSED;
        p->n_epilogue++;
        k = tail;
    }
}

void ox_cuda_to_half(const float *x, uint16_t *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = ox_f32_to_f16(x[i]);
}

bool ox_cuda_use_flash(int64_t seq, int64_t head_size)
{
    int64_t min = 128;
    const char *s = getenv("ONNXSCOPE_CUDA_FLASH_MIN");
    if (s && *s) {
        char *end;
        long long v = strtoll(s, &end, 10);
        if (!*end && v >= 0)
            min = v;
    }
    return seq >= min && head_size > 0 && head_size <= 128 && head_size % 4 == 0;
}

static void plan_flash(ox_cuda_plan *p)
{
    for (int k = 0; k < p->n_nodes; k++) {
        if (p->kind[k] != OX_CK_K_ATTENTION)
            continue;
        const ox_node *cn = p->cnode[k];
        int64_t heads = ox_node_attr_i(cn, "num_heads", 1);
        int64_t h = dim_of(cn->outputs[0], 2);
        if (heads > 0 && ox_cuda_use_flash(dim_of(cn->inputs[0], 1), h / heads)) {
            p->flash[k] = 1;
            p->n_flash++;
        }
    }
}

static bool graphs_env_off(void)
{
    const char *s = getenv("ONNXSCOPE_CUDA_GRAPHS");
    return s && (!strcmp(s, "0") || !strcmp(s, "off"));
}

/* A CUDA Graph replays the GPU nodes as one launch, after every node of
 * the run has been seen (uploads done, nothing executed yet): the GPU
 * nodes must form one run in node order, except for CPU nodes that are
 * independent of it: they read only host values (no download mid-graph),
 * have no subgraph, and write nothing a GPU node reads from the arena (a
 * value uploaded before the launch into bytes an earlier GPU node of the
 * graph reuses would be overwritten). Constant-derived weights and shape
 * arithmetic are such nodes. CPU nodes before or after the GPU ones are
 * fine too. */
static void plan_graph(ox_cuda_plan *p, const ox_node *const *nodes, const ox_ptrmap *idx,
                       const ox_cuda_caps *caps)
{
    int first = -1, last = -1;
    for (int k = 0; k < p->n_nodes; k++)
        if (p->kind[k]) {
            if (first < 0)
                first = k;
            last = k;
        }
    p->graph_ok = false;
    if (first < 0) {
        p->graph_why = "no node on the GPU";
        return;
    }
    unsigned char *dev_read = calloc((size_t)p->n_slots + 1, 1);
    if (!dev_read) {
        p->graph_why = "out of memory planning the graph";
        return;
    }
    for (int k = 0; k < p->n_nodes; k++)
        for (int i = 0; p->kind[k] && p->kind[k] != OX_CK_K_FUSED && i < nodes[k]->n_inputs; i++) {
            int s = slot_at(idx, nodes[k]->inputs[i]);
            if (s >= 0 && !ox_cuda_input_on_host((ox_cuda_kind)p->kind[k], i))
                dev_read[s] = 1;
        }
    const char *why = NULL;
    int why_k = -1;
    for (int k = first; k <= last && !why; k++) {
        if (p->kind[k] || p->pconst[k])   /* plan constants do not run */
            continue;
        why_k = k;
        const ox_node *n = nodes[k];
        for (int a = 0; a < n->n_attrs && !why; a++)
            if (n->attrs[a].type == OX_ATTR_GRAPH || n->attrs[a].type == OX_ATTR_GRAPHS)
                why = "a CPU node with a subgraph sits between GPU nodes";
        /* Shape and Size read only the planned dims of a GPU value (the
         * executor downloads nothing for them). */
        bool dims_only = ox_node_is_default_domain(n) && (!strcmp(n->op_type, "Shape") ||
                                           !strcmp(n->op_type, "Size"));
        for (int i = dims_only ? 1 : 0; i < n->n_inputs && !why; i++) {
            int s = slot_at(idx, n->inputs[i]);
            if (s >= 0 && !p->slot[s].host)
                why = "a CPU node between GPU nodes reads a GPU value";
        }
        for (int i = 0; i < n->n_outputs && !why; i++) {
            int s = slot_at(idx, n->outputs[i]);
            if (s >= 0 && p->slot[s].off >= 0 && dev_read[s])
                why = "a CPU node between GPU nodes makes a value a GPU node reads";
        }
    }
    free(dev_read);
    if (why) {
        /* Name the node: the reason is what a user acts on. */
        const ox_node *n = nodes[why_k];
        snprintf(p->graph_why_buf, sizeof p->graph_why_buf, "%s (node %d '%.40s', %s)", why,
                 why_k, n->name ? n->name : "", n->op_type);
        p->graph_why = p->graph_why_buf;
        return;
    }
    if (!caps->graphs || graphs_env_off()) {
        p->graph_why = "turned off (ONNXSCOPE_CUDA_GRAPHS=0, no_cuda_graphs or per-node timing)";
        return;
    }
    p->graph_ok = true;
    p->graph_why = NULL;
}

bool ox_cuda_plan_matches(const ox_cuda_plan *p, int n_inputs, ox_rval *const *inputs)
{
    int n = 0;
    int64_t *s = ox_arena_input_sig(n_inputs, inputs, &n);
    bool eq = s && p && n == p->n_sig && !memcmp(s, p->sig, (size_t)n * sizeof *s);
    free(s);
    return eq;
}

ox_status ox_cuda_plan_build(const ox_model *m, int n_nodes, const ox_node *const *nodes,
                             int n_slots, const ox_value *const *slot_value, int n_inputs,
                             ox_rval *const *inputs, const ox_cuda_caps *caps,
                             ox_cuda_plan **out, ox_error *err)
{
    *out = NULL;
    const ox_graph *mg = m->graph;
    if (!mg || mg->n_nodes != n_nodes)
        return OX_OK;
    for (int k = 0; k < n_nodes; k++)
        if (nodes[k] != mg->nodes[k])
            return OX_OK;   /* the memory plan follows the file order */
    ox_cuda_plan *p = calloc(1, sizeof *p);
    ox_memplan *mp = NULL;
    bool *host_in = NULL;
    if (!p)
        return ox_errorf(err, OX_ENOMEM, "out of memory planning the CUDA run");
    p->clone = ox_model_clone(m);
    p->n_nodes = n_nodes;
    p->n_slots = n_slots;
    p->kind = calloc((size_t)n_nodes + 1, 1);
    p->why = calloc((size_t)n_nodes + 1, sizeof *p->why);
    p->cnode = calloc((size_t)n_nodes + 1, sizeof *p->cnode);
    p->slot = calloc((size_t)n_slots + 1, sizeof *p->slot);
    p->half = calloc((size_t)n_nodes + 1, 1);
    p->ep = calloc((size_t)n_nodes + 1, 1);
    p->ep_bias = malloc(((size_t)n_nodes + 1) * sizeof *p->ep_bias);
    p->ep_out = malloc(((size_t)n_nodes + 1) * sizeof *p->ep_out);
    p->flash = calloc((size_t)n_nodes + 1, 1);
    p->ep_bias_host = calloc((size_t)n_nodes + 1, sizeof *p->ep_bias_host);
    p->pconst = calloc((size_t)n_nodes + 1, 1);
    p->pval = calloc((size_t)n_slots + 1, sizeof *p->pval);
    p->id = __atomic_add_fetch(&plan_ids, 1, __ATOMIC_RELAXED);
    p->graph_why = "no node on the GPU";
    int max_in = 1;
    for (int k = 0; k < n_nodes; k++)
        if (nodes[k]->n_inputs > max_in)
            max_in = nodes[k]->n_inputs;
    host_in = calloc((size_t)max_in + 1, sizeof *host_in);
    p->sig = ox_arena_input_sig(n_inputs, inputs, &p->n_sig);
    if (!p->clone || !p->kind || !p->why || !p->cnode || !p->slot || !host_in || !p->half ||
        !p->ep || !p->ep_bias || !p->ep_out || !p->flash || !p->ep_bias_host || !p->pconst ||
        !p->pval)
        goto oom;
    for (int k = 0; k < n_nodes; k++)
        p->ep_bias[k] = p->ep_out[k] = -1;
    if (!p->sig)
        goto none;
    bool inferred;
    ox_error ierr = {0};
    if (ox_arena_infer_inputs(p->clone, n_inputs, inputs, &inferred, &ierr) || !inferred)
        goto none;
    const ox_graph *g = p->clone->graph;
    if (g->n_nodes != n_nodes)
        goto none;
    ox_memplan_opts mo;
    ox_memplan_opts_default(&mo);
    mo.include_inputs = true;     /* uploaded into their own slots */
    mo.include_constants = false; /* weights: buffers of their own */
    ox_error merr = {0};
    if (ox_memplan_build(g, &mo, &mp, &merr) != OX_OK)
        goto none;
    p->arena_bytes = mp->arena_bytes;
    p->lower_bound = mp->lower_bound;
    /* Slots: the clone's value of the same name gives the static type. */
    for (int s = 0; s < n_slots; s++) {
        ox_cuda_slot *sl = &p->slot[s];
        sl->off = -1;
        sl->host = true;
        const ox_value *v = slot_value[s];
        const ox_value *cv = v && v->name && v->name[0] ? ox_graph_find(g, v->name) : NULL;
        if (!cv)
            continue;
        sl->weight = cv->init || ox_value_is_weight(cv);
        sl->init = cv->init != NULL;
        if (static_tensor(cv)) {
            sl->is_static = true;
            sl->dtype = cv->type->elem;
            sl->rank = cv->type->rank;
            for (int d = 0; d < sl->rank; d++)
                sl->dims[d] = cv->type->dims[d].value;
            size_t nb = 0;
            if (ox_dtype_nbytes(sl->dtype, numel_of(cv), &nb))
                sl->nbytes = (int64_t)nb;
        }
        const ox_memplan_slot *ms = ox_memplan_find(mp, cv);
        if (ms && ms->offset >= 0 && sl->is_static && !sl->weight) {
            sl->off = ms->offset;
            sl->first = ms->first;
            sl->last = ms->last;
            if (ms->nbytes != sl->nbytes)
                sl->off = -1;
        }
    }
    /* Placement in order: a value is on the host in every run unless a GPU
     * node makes it (the executor copies it down when a CPU node reads it). */
    ox_ptrmap idx = {0};
    for (int s = 0; s < n_slots; s++)
        if (slot_value[s] && !ox_ptrmap_put(&idx, slot_value[s], (void *)(intptr_t)(s + 1))) {
            ox_ptrmap_free(&idx);
            goto oom;
        }
    /* Values fixed by the input signature: computed now, read as weights
     * (own buffer, uploaded once per plan) by the GPU nodes. */
    ox_cuda_plan_hostshape(p, g, nodes, &idx, n_inputs, inputs);
    for (int s = 0; s < n_slots; s++)
        if (p->slot[s].pconst) {
            p->slot[s].weight = true;
            p->slot[s].off = -1;
        }
    for (int k = 0; k < n_nodes; k++) {
        const ox_node *n = nodes[k], *cn = g->nodes[k];
        p->cnode[k] = cn;
        const char *why = NULL;
        ox_cuda_kind kind = OX_CK_NONE;
        bool weights_only = n->n_outputs > 0;
        for (int i = 0; i < n->n_outputs; i++) {
            int s = n->outputs[i] ? (int)(intptr_t)ox_ptrmap_get(&idx, n->outputs[i]) - 1 : -1;
            if (s >= 0 && !p->slot[s].weight)
                weights_only = false;
        }
        if (p->pconst[k]) {
            why = "shape arithmetic (computed on the host at plan time for these input shapes)";
        } else if (weights_only) {
            why = "constant-derived (computed on the CPU, uploaded once)";
        } else if (strcmp(cn->op_type, n->op_type) || n->n_inputs != cn->n_inputs ||
                   n->n_outputs != cn->n_outputs) {
            why = "clone differs";
        } else {
            bool ok = true;
            for (int i = 0; i < n->n_inputs; i++) {
                int s = n->inputs[i] ? (int)(intptr_t)ox_ptrmap_get(&idx, n->inputs[i]) - 1 : -1;
                host_in[i] = s < 0 || p->slot[s].host;
                if (s < 0 && n->inputs[i])
                    ok = false;   /* an outer-scope value: main graph has none */
            }
            for (int i = 0; i < n->n_outputs; i++) {
                int s = n->outputs[i] ? (int)(intptr_t)ox_ptrmap_get(&idx, n->outputs[i]) - 1
                                      : -1;
                if (s >= 0 && p->slot[s].off < 0 &&
                    (n->outputs[i]->n_uses > 0 || n->outputs[i]->is_output))
                    ok = false;
            }
            int64_t opset = ox_model_opset(m, n->domain ? n->domain : "");
            if (opset < 0)
                opset = 1000;
            if (ok)
                kind = ox_cuda_kind_of(cn, opset, host_in, caps, &why);
            /* An activation the kernel reads on the GPU needs its device
             * slot; parameters read on the host (a Reshape's shape, Slice's
             * starts, ...) do not. */
            for (int i = 0; kind && i < n->n_inputs; i++) {
                int s = n->inputs[i] ? (int)(intptr_t)ox_ptrmap_get(&idx, n->inputs[i]) - 1 : -1;
                if (s >= 0 && !ox_cuda_input_on_host(kind, i) && !p->slot[s].weight &&
                    p->slot[s].off < 0) {
                    kind = OX_CK_NONE;
                    ok = false;
                }
            }
            if (!ok)
                why = "a value without a device slot (dynamic size)";
        }
        p->kind[k] = (unsigned char)kind;
        p->why[k] = kind ? NULL : why;
        int dev = kind ? 1 : 0;
        p->nodes_on[dev]++;
        ox_cost c;
        ox_node_cost(cn, &c);
        if (c.known && c.flops > 0)
            p->flops_on[dev] += c.flops;
        if (kind)
            for (int i = 0; i < n->n_outputs; i++) {
                int s = n->outputs[i] ? (int)(intptr_t)ox_ptrmap_get(&idx, n->outputs[i]) - 1
                                      : -1;
                if (s >= 0)
                    p->slot[s].host = false;
            }
    }
    ox_cuda_plan_feed(p, nodes, &idx);   /* hostshape.c */
    plan_fp16(p, nodes, &idx, caps);
    plan_epilogues(p, nodes, &idx);
    plan_flash(p);
    plan_graph(p, nodes, &idx, caps);
    ox_ptrmap_free(&idx);
    ox_memplan_free(mp);
    free(host_in);
    *out = p;
    return OX_OK;
none:
    /* Not plannable for the GPU: a plan that keeps every node on the CPU. */
    ox_memplan_free(mp);
    free(host_in);
    for (int k = 0; k < n_nodes; k++) {
        p->kind[k] = OX_CK_NONE;
        p->why[k] = "shapes not static for these inputs";
    }
    p->nodes_on[0] = n_nodes;
    p->nodes_on[1] = 0;
    p->flops_on[0] = p->flops_on[1] = 0;
    p->arena_bytes = 0;
    for (int s = 0; s < n_slots; s++)
        p->slot[s].off = -1;
    *out = p;
    return OX_OK;
oom:
    ox_memplan_free(mp);
    free(host_in);
    ox_cuda_plan_free(p);
    return ox_errorf(err, OX_ENOMEM, "out of memory planning the CUDA run");
}

bool ox_cuda_plan_verify(const ox_cuda_plan *p, ox_error *err)
{
    for (int a = 0; a < p->n_slots; a++) {
        const ox_cuda_slot *x = &p->slot[a];
        if (x->off < 0)
            continue;
        if (x->off + x->nbytes > p->arena_bytes) {
            ox_errorf(err, OX_EINVAL, "slot %d [%lld, +%lld) passes the arena of %lld", a,
                      (long long)x->off, (long long)x->nbytes, (long long)p->arena_bytes);
            return false;
        }
        for (int b = a + 1; b < p->n_slots; b++) {
            const ox_cuda_slot *y = &p->slot[b];
            if (y->off < 0 || x->nbytes == 0 || y->nbytes == 0)
                continue;
            bool live = x->first <= y->last && y->first <= x->last;
            bool bytes = x->off < y->off + y->nbytes && y->off < x->off + x->nbytes;
            if (live && bytes) {
                ox_errorf(err, OX_EINVAL, "slots %d and %d are live together and share bytes",
                          a, b);
                return false;
            }
        }
    }
    return true;
}
