/* Placement of the fusion passes' com.microsoft ops and Sum (contrib.h).
 * No CUDA here; the conditions are those contrib_rt.c and contrib.cu rely
 * on, and what they do not cover stays on the CPU with the reason. */
#include <string.h>
#include <strings.h>

#include "contrib.h"
#include "contrib_kern.h"
#include "kern.h"

static bool is_ms(const ox_node *n, const char *op)
{
    return n->domain && !strcmp(n->domain, "com.microsoft") && !strcmp(n->op_type, op);
}

static bool present(const ox_node *n, int i)
{
    return i < n->n_inputs && n->inputs[i];
}

static ox_dtype elem(const ox_value *v)
{
    return v && v->type ? v->type->elem : OX_DT_UNDEFINED;
}

static int rank(const ox_value *v)
{
    return v && v->type ? v->type->rank : -1;
}

static int64_t dim(const ox_value *v, int d)
{
    return v->type->dims[d].value;
}

static int64_t numel(const ox_value *v)
{
    int64_t n = 1;
    for (int d = 0; d < v->type->rank; d++)
        n *= v->type->dims[d].value;
    return n;
}

static bool f32(const ox_node *n, int i)
{
    return present(n, i) && elem(n->inputs[i]) == OX_DT_FLOAT;
}

static bool index_type(const ox_node *n, int i)
{
    return present(n, i) &&
           (elem(n->inputs[i]) == OX_DT_INT32 || elem(n->inputs[i]) == OX_DT_INT64);
}

static bool used(const ox_node *n, int o)
{
    const ox_value *v = o < n->n_outputs ? n->outputs[o] : NULL;
    return v && (v->n_uses > 0 || v->is_output);
}

static bool same_dims(const ox_value *a, const ox_value *b)
{
    if (rank(a) != rank(b))
        return false;
    for (int d = 0; d < rank(a); d++)
        if (dim(a, d) != dim(b, d))
            return false;
    return true;
}

bool ox_cuda_fused_act(const ox_node *n, int *code, float *a, float *b)
{
    const char *an = ox_node_attr_s(n, "activation", "");
    /* FusedConv: activation_params; FusedGemm: activation_alpha/beta. */
    const ox_attr *ap = ox_node_attr(n, "activation_params");
    int np = ap && ap->type == OX_ATTR_FLOATS ? ap->n : 0;
    const ox_attr *aa = ox_node_attr(n, "activation_alpha");
    const ox_attr *ab = ox_node_attr(n, "activation_beta");
    bool ha = np >= 1 || aa, hb = np >= 2 || ab;
    float va = np >= 1 ? ap->floats[0] : aa ? aa->f : 0.f;
    float vb = np >= 2 ? ap->floats[1] : ab ? ab->f : 0.f;
    static const struct {
        const char *name;
        int code;
        float a, b;
    } tab[] = {
        {"", OX_CK_IDENTITY, 0, 0},           {"Relu", OX_CK_RELU, 0, 0},
        {"Tanh", OX_CK_TANH, 0, 0},           {"Sigmoid", OX_CK_SIGMOID, 0, 0},
        {"LeakyRelu", OX_CK_LEAKYRELU, 0.01f, 0},
        {"HardSigmoid", OX_CK_HARDSIGMOID, 0.2f, 0.5f},
        {"Clip", OX_CK_CLIP, -__builtin_inff(), __builtin_inff()},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (!strcasecmp(an, tab[i].name)) {
            *code = tab[i].code;
            *a = ha ? va : tab[i].a;
            *b = hb ? vb : tab[i].b;
            return true;
        }
    return false;
}

/* n seen as the plain op it extends (FusedConv as Conv, FusedGemm as Gemm),
 * so the Conv/Gemm conditions of ox_cuda_kind_of apply unchanged. */
static ox_cuda_kind as_plain(const ox_node *n, const char *op, int n_inputs, int64_t opset,
                             const bool *host_in, const ox_cuda_caps *caps, const char **why)
{
    ox_node tmp = *n;
    tmp.op_type = (char *)op;
    tmp.domain = (char *)"";
    tmp.n_inputs = n->n_inputs < n_inputs ? n->n_inputs : n_inputs;
    return ox_cuda_kind_of(&tmp, opset, host_in, caps, why);
}

static ox_cuda_kind mha_kind(const ox_node *n, const char **why)
{
    const ox_value *y = n->outputs[0];
    if (!f32(n, 0) || !f32(n, 1) || !f32(n, 2) || rank(n->inputs[0]) != 3 ||
        rank(n->inputs[1]) != 3 || rank(n->inputs[2]) != 3 || elem(y) != OX_DT_FLOAT) {
        *why = "MultiHeadAttention: packed or 4-D query/key/value, or not float32";
        return OX_CK_NONE;
    }
    if (present(n, 6) || present(n, 7) || used(n, 1) || used(n, 2)) {
        *why = "MultiHeadAttention: past or present key/value";
        return OX_CK_NONE;
    }
    const ox_value *q = n->inputs[0], *k = n->inputs[1], *v = n->inputs[2];
    int64_t b = dim(q, 0), sq = dim(q, 1), d = dim(q, 2), sk = dim(k, 1), dv = dim(v, 2);
    int64_t heads = ox_node_attr_i(n, "num_heads", 0);
    if (heads <= 0 || d % heads || dv % heads || dim(k, 0) != b || dim(v, 0) != b ||
        dim(k, 2) != d || dim(v, 1) != sk) {
        *why = "MultiHeadAttention: shapes do not match num_heads";
        return OX_CK_NONE;
    }
    if (d / heads > 128 || dv / heads > 128 || b * heads > 65535) {
        *why = "MultiHeadAttention: head size over 128 (the tiled kernel's limit)";
        return OX_CK_NONE;
    }
    if (present(n, 3) && (!f32(n, 3) || numel(n->inputs[3]) != 2 * d + dv)) {
        *why = "MultiHeadAttention: bias not float32 of 2 * hidden + v_hidden";
        return OX_CK_NONE;
    }
    if (present(n, 4) && (elem(n->inputs[4]) != OX_DT_INT32 || rank(n->inputs[4]) != 2 ||
                          dim(n->inputs[4], 0) != b || dim(n->inputs[4], 1) != sk)) {
        *why = "MultiHeadAttention: key_padding_mask other than int32 (batch, kv_sequence)";
        return OX_CK_NONE;
    }
    if (present(n, 5)) {
        const ox_value *ab = n->inputs[5];
        if (!f32(n, 5) || rank(ab) != 4 || (dim(ab, 0) != 1 && dim(ab, 0) != b) ||
            (dim(ab, 1) != 1 && dim(ab, 1) != heads) || dim(ab, 2) != sq || dim(ab, 3) != sk) {
            *why = "MultiHeadAttention: attention_bias other than float32 (1|batch, 1|heads, "
                   "q_sequence, kv_sequence)";
            return OX_CK_NONE;
        }
    }
    if (rank(y) != 3 || dim(y, 0) != b || dim(y, 1) != sq || dim(y, 2) != dv) {
        *why = "MultiHeadAttention: output shape";
        return OX_CK_NONE;
    }
    return OX_CK_K_MHA;
}

static ox_cuda_kind embed_kind(const ox_node *n, const char **why)
{
    *why = "EmbedLayerNormalization: types or shapes the kernel does not take";
    if (!index_type(n, 0) || rank(n->inputs[0]) != 2 || !f32(n, 2) || !f32(n, 3) ||
        !f32(n, 5) || !f32(n, 6) || rank(n->inputs[2]) != 2 || rank(n->inputs[3]) != 2 ||
        elem(n->outputs[0]) != OX_DT_FLOAT)
        return OX_CK_NONE;
    const ox_value *ids = n->inputs[0];
    int64_t h = dim(n->inputs[2], 1), s = dim(ids, 1);
    if (dim(n->inputs[3], 1) != h || numel(n->inputs[5]) != h || numel(n->inputs[6]) != h ||
        rank(n->outputs[0]) != 3 || numel(n->outputs[0]) != numel(ids) * h)
        return OX_CK_NONE;
    if (present(n, 1) && (!index_type(n, 1) || numel(n->inputs[1]) != numel(ids) ||
                          !f32(n, 4) || rank(n->inputs[4]) != 2 || dim(n->inputs[4], 1) != h))
        return OX_CK_NONE;
    if (present(n, 7) && (!index_type(n, 7) || numel(n->inputs[7]) != numel(ids)))
        return OX_CK_NONE;
    if (present(n, 8) && (!index_type(n, 8) || (numel(n->inputs[8]) != numel(ids) &&
                                                numel(n->inputs[8]) != s)))
        return OX_CK_NONE;
    if (used(n, 1) && (elem(n->outputs[1]) != OX_DT_INT32 || numel(n->outputs[1]) != dim(ids, 0)))
        return OX_CK_NONE;
    if (used(n, 2) && (elem(n->outputs[2]) != OX_DT_FLOAT || !same_dims(n->outputs[2], n->outputs[0])))
        return OX_CK_NONE;
    return OX_CK_K_EMBEDLN;
}

/* Comparisons, logical ops and integer Add/Sub/Mul (attention masks and
 * position ids computed from input values): operands of one type. */
static int mask_op(const ox_node *n)
{
    static const char *const ops[] = {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual",
                                      "And", "Or", "Xor", "Not", "Add", "Sub", "Mul", NULL};
    if (!ox_node_is_default_domain(n))
        return -1;
    for (int i = 0; ops[i]; i++)
        if (!strcmp(n->op_type, ops[i]))
            return i;
    return -1;
}

static ox_cuda_kind mask_kind(const ox_node *n, int op, const char **why)
{
    const ox_value *y = n->outputs[0];
    int nin = op == OX_CK_NOT ? 1 : 2;
    ox_dtype t = present(n, 0) ? elem(n->inputs[0]) : OX_DT_UNDEFINED;
    bool ok = n->n_inputs == nin && rank(y) <= OX_CK_MAX_RANK;
    for (int i = 0; ok && i < nin; i++)
        ok = present(n, i) && elem(n->inputs[i]) == t && rank(n->inputs[i]) <= rank(y);
    if (op >= OX_CK_IADD)
        ok = ok && (t == OX_DT_INT32 || t == OX_DT_INT64) && elem(y) == t;
    else if (op >= OX_CK_AND)
        ok = ok && t == OX_DT_BOOL && elem(y) == OX_DT_BOOL;
    else
        ok = ok && elem(y) == OX_DT_BOOL &&
             (t == OX_DT_FLOAT || t == OX_DT_INT32 || t == OX_DT_INT64 ||
              (op == OX_CK_EQ && t == OX_DT_BOOL));
    if (!ok) {
        *why = op >= OX_CK_IADD ? "float32, int32 or int64 with two inputs of one type only"
                                : "operand types the mask kernels do not take";
        return OX_CK_NONE;
    }
    return OX_CK_K_MASKOP;
}

ox_cuda_kind ox_cuda_kind_contrib(const ox_node *n, int64_t opset, const bool *host_in,
                                  const ox_cuda_caps *caps, const char **why)
{
    const ox_value *y = n->outputs[0];
    int mop = mask_op(n);
    if (mop >= 0)
        return mask_kind(n, mop, why);
    if (ox_node_is(n, "Sum")) {
        if (n->n_inputs < 1 || n->n_inputs > 16 || elem(y) != OX_DT_FLOAT ||
            rank(y) > OX_CK_MAX_RANK) {
            *why = "Sum: float32 only";
            return OX_CK_NONE;
        }
        for (int i = 0; i < n->n_inputs; i++)
            if (!f32(n, i) || rank(n->inputs[i]) > rank(y)) {
                *why = "Sum: float32 only";
                return OX_CK_NONE;
            }
        return OX_CK_K_SUM;
    }
    if (is_ms(n, "QuickGelu")) {
        if (!f32(n, 0) || elem(y) != OX_DT_FLOAT || n->n_inputs != 1) {
            *why = "float32 only";
            return OX_CK_NONE;
        }
        return OX_CK_K_BIASGELU;
    }
    if (is_ms(n, "BiasGelu") || is_ms(n, "FastGelu")) {
        bool bias = present(n, 1);
        if (!f32(n, 0) || elem(y) != OX_DT_FLOAT || (bias && !f32(n, 1)) ||
            (!bias && is_ms(n, "BiasGelu")) || rank(n->inputs[0]) < 1 ||
            (bias && numel(n->inputs[1]) != dim(n->inputs[0], rank(n->inputs[0]) - 1))) {
            *why = "float32 with a bias of the last dimension only";
            return OX_CK_NONE;
        }
        return OX_CK_K_BIASGELU;
    }
    if (is_ms(n, "FusedConv") || is_ms(n, "FusedGemm")) {
        bool conv = is_ms(n, "FusedConv");
        int code;
        float a, b;
        if (!ox_cuda_fused_act(n, &code, &a, &b)) {
            *why = "an activation the CUDA kernels do not have";
            return OX_CK_NONE;
        }
        if (conv && present(n, 3) && (!f32(n, 3) || !same_dims(n->inputs[3], y))) {
            *why = "FusedConv: Z of another shape than the output";
            return OX_CK_NONE;
        }
        if (!conv && n->n_inputs > 3) {
            *why = "FusedGemm: extra inputs";
            return OX_CK_NONE;
        }
        ox_cuda_kind k = as_plain(n, conv ? "Conv" : "Gemm", 3, opset, host_in, caps, why);
        if (k != (conv ? OX_CK_K_CONV : OX_CK_K_GEMM))
            return OX_CK_NONE;
        return conv ? OX_CK_K_FUSEDCONV : OX_CK_K_FUSEDGEMM;
    }
    if (is_ms(n, "EmbedLayerNormalization"))
        return embed_kind(n, why);
    if (is_ms(n, "MultiHeadAttention"))
        return mha_kind(n, why);
    return OX_CK_NONE;
}
