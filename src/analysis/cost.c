/* Per-node and per-model cost: MACs, FLOPs, parameters and bytes moved,
 * computed from the static types that shape inference left on the values.
 * The rule for each operator is one row of a table; docs/COST.md explains
 * the conventions and the weights of the non-trivial operations. */
#include "onnxscope/cost.h"
#include "onnxscope/ops.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnxscope/infer.h"
#include "onnxscope/memplan.h"
#include "onnxscope/profile.h"

/* ---- saturating arithmetic ------------------------------------------------
 * Costs of absurd shapes must not wrap around into small numbers. */

static int64_t sat_add(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        return INT64_MAX;
    return r;
}

static int64_t sat_mul(int64_t a, int64_t b)
{
    int64_t r;
    if (a < 0 || b < 0)
        return 0;
    if (__builtin_mul_overflow(a, b, &r))
        return INT64_MAX;
    return r;
}

/* ---- shapes of values ------------------------------------------------------ */

/* Static shape of v: the initializer's dims, or its type's when every dim is
 * known. */
static bool value_shape(const ox_value *v, int *rank, int64_t *dims)
{
    if (!v)
        return false;
    if (v->init) {
        const ox_tensor *t = v->init;
        if (t->rank < 0 || t->rank > OX_MAX_RANK)
            return false;
        *rank = t->rank;
        for (int i = 0; i < t->rank; i++)
            dims[i] = t->dims[i];
        return true;
    }
    const ox_type *ty = v->type;
    if (!ty || ty->kind != OX_TYPE_TENSOR || !ty->has_shape)
        return false;
    if (ty->rank < 0 || ty->rank > OX_MAX_RANK || (ty->rank > 0 && !ty->dims))
        return false;
    for (int i = 0; i < ty->rank; i++) {
        if (ty->dims[i].value < 0)
            return false;
        dims[i] = ty->dims[i].value;
    }
    *rank = ty->rank;
    return true;
}

static ox_dtype value_dtype(const ox_value *v)
{
    if (!v)
        return OX_DT_UNDEFINED;
    if (v->init)
        return v->init->dtype;
    if (v->type && (v->type->kind == OX_TYPE_TENSOR ||
                    v->type->kind == OX_TYPE_SPARSE_TENSOR))
        return v->type->elem;
    /* A Constant's output is typed by its attribute even before inference. */
    const ox_node *p = v->producer;
    if (p && ox_node_is(p, "Constant")) {
        const ox_attr *a = ox_node_attr(p, "value");
        if (a && a->type == OX_ATTR_TENSOR && a->t)
            return a->t->dtype;
        if (ox_node_attr(p, "value_float") || ox_node_attr(p, "value_floats"))
            return OX_DT_FLOAT;
        if (ox_node_attr(p, "value_int") || ox_node_attr(p, "value_ints"))
            return OX_DT_INT64;
    }
    return OX_DT_UNDEFINED;
}

bool ox_value_static_numel(const ox_value *v, int64_t *numel)
{
    int rank;
    int64_t dims[OX_MAX_RANK];
    if (!value_shape(v, &rank, dims))
        return false;
    return ox_shape_numel(rank, dims, numel);
}

bool ox_value_static_bytes(const ox_value *v, int64_t *bytes)
{
    if (!v)
        return false;
    if (v->init && v->init->dtype != OX_DT_STRING) {
        if (v->init->nbytes > (size_t)INT64_MAX)
            return false;
        *bytes = (int64_t)v->init->nbytes;
        return true;
    }
    int64_t n;
    ox_dtype dt = value_dtype(v);
    size_t nb;
    if (!ox_dtype_valid(dt) || dt == OX_DT_STRING || dt == OX_DT_UNDEFINED)
        return false;
    if (!ox_value_static_numel(v, &n) || !ox_dtype_nbytes(dt, n, &nb))
        return false;
    if (nb > (size_t)INT64_MAX)
        return false;
    *bytes = (int64_t)nb;
    return true;
}

/* ---- weights ----------------------------------------------------------------
 * A value is constant when it is computed from initializers and Constant
 * nodes only, through operators that merely move or convert data. Only
 * floating-point constants (and every initializer) count as weights:
 * integer constants built by Constant nodes are shape arithmetic. */

static bool is_const_rec(const ox_value *v, int depth);

static bool node_inputs_const(const ox_node *p, int depth)
{
    for (int i = 0; i < p->n_inputs; i++)
        if (p->inputs[i] && !is_const_rec(p->inputs[i], depth + 1))
            return false;
    return true;
}

static bool is_const_rec(const ox_value *v, int depth)
{
    if (!v)
        return false;
    if (v->init)
        return true;
    /* A graph input may be fed at run time even if it has a default. */
    if (v->is_input || !v->producer || depth > 8)
        return false;
    const ox_node *p = v->producer;
    if (!p->op_type || !(ox_node_is_default_domain(p)))
        return false;
    static const char *const through[] = {
        "Identity", "Cast", "CastLike", "Transpose", "Reshape", "Flatten",
        "Squeeze", "Unsqueeze", "ConstantOfShape", "DequantizeLinear",
        "Expand", NULL,
    };
    if (!strcmp(p->op_type, "Constant"))
        return true;
    for (int i = 0; through[i]; i++)
        if (!strcmp(p->op_type, through[i]))
            return p->n_inputs > 0 && node_inputs_const(p, depth);
    return false;
}

bool ox_value_is_weight(const ox_value *v)
{
    if (!v)
        return false;
    if (v->init)
        return true;
    if (!ox_dtype_is_float(value_dtype(v)))
        return false;
    return is_const_rec(v, 0);
}

/* A node whose outputs are all weights is part of a constant subexpression
 * (folding material); its reads are not counted as the node's parameters. */
static bool node_is_constant_expr(const ox_node *n)
{
    if (n->n_outputs <= 0)
        return false;
    for (int i = 0; i < n->n_outputs; i++)
        if (n->outputs[i] && !ox_value_is_weight(n->outputs[i]))
            return false;
    return true;
}

/* ---- the rule table ---------------------------------------------------------- */

typedef enum {
    K_ZERO,      /* data movement: no arithmetic */
    K_ELEM,      /* w per output element */
    K_VARIADIC,  /* w per output element per extra input (Sum, Max, ...) */
    K_IN,        /* w per element of input 0 (reductions, softmax, norms) */
    K_CONV,      /* w is the index of the weight input, bias follows */
    K_CONVT,
    K_MATMUL,
    K_GEMM,
    K_POOL,      /* w per output element per kernel element */
    K_GPOOL,     /* w per input element */
    K_LRN,
    K_RESIZE,
    K_EINSUM,
    K_RNN,       /* w = number of gates */
    K_ATTENTION,
    K_MHA,
    K_CONTROL,   /* If/Loop/Scan: depends on runtime control flow */
    K_DATA,      /* the work depends on tensor values, not shapes: unknown */
    K_IN1,       /* w per element of input 1 */
    K_ALLOUT,    /* w per element of every output (optimizer steps) */
    K_FFT,       /* DFT/STFT: 5 log2(L) per complex output */
    K_DET,       /* LU: n^3/3 per n x n matrix */
    K_GRID,      /* GridSample: Resize's weights, bilinear by default */
    K_DEFORM,    /* DeformConv: Conv + 4 per sampled input tap */
    K_ROIALIGN,  /* RoiAlign: 5 per sample, sampling_ratio^2 samples a bin */
    K_LINATT,    /* LinearAttention: 4 dk*dv per token and head */
    K_GEMMGELU,  /* GemmFastGelu: MatMul + bias + FastGelu */
    K_AFFINE,    /* AffineGrid: a row of theta . (coords, 1) per output coordinate */
} rule_kind;

typedef struct rule {
    const char *op;
    rule_kind kind;
    int w;
} rule;

#define SIGMOID_W (OX_COST_EXP + OX_COST_ADD + OX_COST_DIV)
#define TANH_W (2 * OX_COST_EXP)
#define SOFTPLUS_W (OX_COST_EXP + OX_COST_LOG + OX_COST_ADD)

/* Sorted by op name (binary search). Weights: docs/COST.md. */
static const rule rules[] = {
    {"Abs", K_ELEM, OX_COST_CMP},
    {"Acos", K_ELEM, OX_COST_EXP},
    {"Acosh", K_ELEM, OX_COST_EXP},
    {"Adagrad", K_ALLOUT, 6},
    {"Adam", K_ALLOUT, 5},
    {"Add", K_ELEM, OX_COST_ADD},
    {"AffineGrid", K_AFFINE, 0},
    {"And", K_ELEM, OX_COST_CMP},
    {"ArgMax", K_IN, OX_COST_CMP},
    {"ArgMin", K_IN, OX_COST_CMP},
    {"ArrayFeatureExtractor", K_ZERO, 0},
    {"Asin", K_ELEM, OX_COST_EXP},
    {"Asinh", K_ELEM, OX_COST_EXP},
    {"Atan", K_ELEM, OX_COST_EXP},
    {"Atanh", K_ELEM, OX_COST_EXP},
    {"Attention", K_ATTENTION, 0},
    {"AveragePool", K_POOL, OX_COST_ADD},
    {"BatchNormalization", K_IN, 2},
    {"Bernoulli", K_ELEM, 1},
    {"BiasGelu", K_ELEM, OX_COST_ADD + OX_COST_ERF + 4},
    {"Binarizer", K_ELEM, OX_COST_CMP},
    {"BitCast", K_ZERO, 0},
    {"BitShift", K_ELEM, 1},
    {"BitwiseAnd", K_ELEM, 1},
    {"BitwiseNot", K_ELEM, 1},
    {"BitwiseOr", K_ELEM, 1},
    {"BitwiseXor", K_ELEM, 1},
    {"BlackmanWindow", K_ELEM, OX_COST_TRIG * 2},
    {"Cast", K_ZERO, 0},
    {"CastLike", K_ZERO, 0},
    {"CausalConvWithState", K_CONV, 1},
    {"Ceil", K_ELEM, 1},
    {"Celu", K_ELEM, OX_COST_EXP + 3},
    {"CenterCropPad", K_ZERO, 0},
    {"Clip", K_ELEM, OX_COST_CMP}, /* a clamp: onnx-tool prices ReLU6 as 1 */
    {"Col2Im", K_ZERO, 0},
    {"Compress", K_ZERO, 0},
    {"Concat", K_ZERO, 0},
    {"ConcatFromSequence", K_ZERO, 0},
    {"Constant", K_ZERO, 0},
    {"ConstantOfShape", K_ZERO, 0},
    {"Conv", K_CONV, 1},
    {"ConvInteger", K_CONV, 1},
    {"ConvTranspose", K_CONVT, 1},
    {"Cos", K_ELEM, OX_COST_TRIG},
    {"Cosh", K_ELEM, OX_COST_EXP},
    {"CumProd", K_IN, OX_COST_MUL},
    {"CumSum", K_IN, OX_COST_ADD},
    {"DFT", K_FFT, 0},
    {"DeformConv", K_DEFORM, 1},
    {"DepthToSpace", K_ZERO, 0},
    {"DequantizeLinear", K_ELEM, 2},
    {"Det", K_DET, 0},
    {"Div", K_ELEM, OX_COST_DIV},
    {"Dropout", K_ZERO, 0},
    {"DynamicQuantizeLinear", K_IN, 5},
    {"DynamicQuantizeMatMul", K_MATMUL, 0},
    {"Einsum", K_EINSUM, 0},
    {"Elu", K_ELEM, OX_COST_EXP + 2},
    {"EmbedLayerNormalization", K_ELEM, 9},
    {"Equal", K_ELEM, OX_COST_CMP},
    {"Erf", K_ELEM, OX_COST_ERF},
    {"Exp", K_ELEM, OX_COST_EXP},
    {"Expand", K_ZERO, 0},
    {"EyeLike", K_ZERO, 0},
    {"FastGelu", K_ELEM, TANH_W + 6},
    {"Flatten", K_ZERO, 0},
    {"FlexAttention", K_DATA, 0},
    {"Floor", K_ELEM, 1},
    {"FusedConv", K_CONV, 1},
    {"FusedGemm", K_GEMM, 0},
    {"FusedMatMul", K_MATMUL, 0},
    {"GRU", K_RNN, 3},
    {"Gather", K_ZERO, 0},
    {"GatherElements", K_ZERO, 0},
    {"GatherND", K_ZERO, 0},
    {"Gelu", K_ELEM, OX_COST_ERF + 4},
    {"Gemm", K_GEMM, 0},
    {"GemmFastGelu", K_GEMMGELU, 0},
    {"GlobalAveragePool", K_GPOOL, OX_COST_ADD},
    {"GlobalLpPool", K_GPOOL, 2},
    {"GlobalMaxPool", K_GPOOL, OX_COST_CMP},
    {"Greater", K_ELEM, OX_COST_CMP},
    {"GreaterOrEqual", K_ELEM, OX_COST_CMP},
    {"GridSample", K_GRID, 0},
    {"GroupNormalization", K_IN, 7},
    {"HammingWindow", K_ELEM, OX_COST_TRIG + 2},
    {"HannWindow", K_ELEM, OX_COST_TRIG + 2},
    {"HardSigmoid", K_ELEM, 4},
    {"HardSwish", K_ELEM, 5},
    {"Hardmax", K_IN, OX_COST_CMP},
    {"Identity", K_ZERO, 0},
    {"If", K_CONTROL, 0},
    {"ImageDecoder", K_DATA, 0},
    {"InstanceNormalization", K_IN, 7},
    {"IsInf", K_ELEM, OX_COST_CMP},
    {"IsNaN", K_ELEM, OX_COST_CMP},
    {"LRN", K_LRN, 0},
    {"LSTM", K_RNN, 4},
    {"LabelEncoder", K_ZERO, 0},
    {"LayerNormalization", K_IN, 7},
    {"LeakyRelu", K_ELEM, OX_COST_CMP + OX_COST_MUL},
    {"Less", K_ELEM, OX_COST_CMP},
    {"LessOrEqual", K_ELEM, OX_COST_CMP},
    {"LinearAttention", K_LINATT, 0},
    {"Log", K_ELEM, OX_COST_LOG},
    {"LogSoftmax", K_IN, 20},
    {"Loop", K_CONTROL, 0},
    {"LpNormalization", K_IN, 4},
    {"LpPool", K_POOL, 2},
    {"MatMul", K_MATMUL, 0},
    {"MatMulInteger", K_MATMUL, 0},
    {"Max", K_VARIADIC, OX_COST_CMP},
    {"MaxPool", K_POOL, OX_COST_CMP},
    {"MaxRoiPool", K_DATA, 0},
    {"MaxUnpool", K_ZERO, 0},
    {"Mean", K_VARIADIC, OX_COST_ADD},
    {"MeanVarianceNormalization", K_IN, 5},
    {"MelWeightMatrix", K_ELEM, OX_COST_CMP * 2 + OX_COST_DIV},
    {"Min", K_VARIADIC, OX_COST_CMP},
    {"Mish", K_ELEM, SOFTPLUS_W + TANH_W + OX_COST_MUL},
    {"Mod", K_ELEM, OX_COST_DIV},
    {"Momentum", K_ALLOUT, 2},
    {"Mul", K_ELEM, OX_COST_MUL},
    {"MultiHeadAttention", K_MHA, 0},
    {"Multinomial", K_ZERO, 0},
    {"Neg", K_ELEM, OX_COST_CMP},
    {"NegativeLogLikelihoodLoss", K_IN1, 3},
    {"NonMaxSuppression", K_DATA, 0},
    {"NonZero", K_ZERO, 0},
    {"Not", K_ELEM, OX_COST_CMP},
    {"OneHot", K_ZERO, 0},
    {"Optional", K_ZERO, 0},
    {"OptionalGetElement", K_ZERO, 0},
    {"OptionalHasElement", K_ZERO, 0},
    {"Or", K_ELEM, OX_COST_CMP},
    {"PRelu", K_ELEM, OX_COST_CMP + OX_COST_MUL},
    {"Pad", K_ZERO, 0},
    {"Pow", K_ELEM, OX_COST_POW},
    {"QLinearConv", K_CONV, 3},
    {"QLinearMatMul", K_MATMUL, 0},
    {"QuantizeLinear", K_ELEM, 3},
    {"QuickGelu", K_ELEM, SIGMOID_W + 2},
    {"RMSNormalization", K_IN, 4},
    {"RNN", K_RNN, 1},
    {"RandomNormal", K_ZERO, 0},
    {"RandomNormalLike", K_ZERO, 0},
    {"RandomUniform", K_ZERO, 0},
    {"RandomUniformLike", K_ZERO, 0},
    {"Range", K_ZERO, 0},
    {"Reciprocal", K_ELEM, OX_COST_DIV},
    {"ReduceL1", K_IN, 2},
    {"ReduceL2", K_IN, 2},
    {"ReduceLogSum", K_IN, OX_COST_ADD},
    {"ReduceLogSumExp", K_IN, OX_COST_EXP + OX_COST_ADD},
    {"ReduceMax", K_IN, OX_COST_CMP},
    {"ReduceMean", K_IN, OX_COST_ADD},
    {"ReduceMin", K_IN, OX_COST_CMP},
    {"ReduceProd", K_IN, OX_COST_MUL},
    {"ReduceSum", K_IN, OX_COST_ADD},
    {"ReduceSumSquare", K_IN, 2},
    {"RegexFullMatch", K_ZERO, 0},
    {"Relu", K_ELEM, OX_COST_CMP},
    {"Reshape", K_ZERO, 0},
    {"Resize", K_RESIZE, 0},
    {"ReverseSequence", K_ZERO, 0},
    {"RoiAlign", K_ROIALIGN, 0},
    {"RotaryEmbedding", K_ELEM, 2 * OX_COST_MUL + OX_COST_ADD},
    {"Round", K_ELEM, 1},
    {"STFT", K_FFT, 0},
    {"Scan", K_CONTROL, 0},
    {"Scatter", K_ZERO, 0},
    {"ScatterElements", K_ZERO, 0},
    {"ScatterND", K_ZERO, 0},
    {"Selu", K_ELEM, OX_COST_EXP + 3},
    {"SequenceAt", K_ZERO, 0},
    {"SequenceConstruct", K_ZERO, 0},
    {"SequenceEmpty", K_ZERO, 0},
    {"SequenceErase", K_ZERO, 0},
    {"SequenceInsert", K_ZERO, 0},
    {"SequenceLength", K_ZERO, 0},
    {"SequenceMap", K_DATA, 0},
    {"Shape", K_ZERO, 0},
    {"Shrink", K_ELEM, 2 * OX_COST_CMP},
    {"Sigmoid", K_ELEM, SIGMOID_W},
    {"Sign", K_ELEM, OX_COST_CMP},
    {"SimplifiedLayerNormalization", K_IN, 4},
    {"Sin", K_ELEM, OX_COST_TRIG},
    {"Sinh", K_ELEM, OX_COST_EXP},
    {"Size", K_ZERO, 0},
    {"SkipLayerNormalization", K_IN, 9},
    {"SkipSimplifiedLayerNormalization", K_IN, 6},
    {"Slice", K_ZERO, 0},
    {"Softmax", K_IN, 21},
    {"SoftmaxCrossEntropyLoss", K_IN, 22},
    {"Softplus", K_ELEM, SOFTPLUS_W},
    {"Softsign", K_ELEM, OX_COST_CMP + OX_COST_ADD + OX_COST_DIV},
    {"SpaceToDepth", K_ZERO, 0},
    {"Split", K_ZERO, 0},
    {"SplitToSequence", K_ZERO, 0},
    {"Sqrt", K_ELEM, OX_COST_SQRT},
    {"Squeeze", K_ZERO, 0},
    {"StringConcat", K_ZERO, 0},
    {"StringNormalizer", K_ZERO, 0},
    {"StringSplit", K_ZERO, 0},
    {"Sub", K_ELEM, OX_COST_ADD},
    {"Sum", K_VARIADIC, OX_COST_ADD},
    {"SwiGLU", K_ELEM, SIGMOID_W + 3},
    {"Swish", K_ELEM, SIGMOID_W + 2},
    {"Tan", K_ELEM, 2 * OX_COST_TRIG},
    {"Tanh", K_ELEM, TANH_W},
    {"TensorScatter", K_ZERO, 0},
    {"TfIdfVectorizer", K_DATA, 0},
    {"ThresholdedRelu", K_ELEM, OX_COST_CMP},
    {"Tile", K_ZERO, 0},
    {"TopK", K_IN, OX_COST_CMP},
    {"Transpose", K_ZERO, 0},
    {"TreeEnsemble", K_DATA, 0},
    {"Trilu", K_ZERO, 0},
    {"Unique", K_IN, OX_COST_CMP},
    {"Unsqueeze", K_ZERO, 0},
    {"Upsample", K_RESIZE, 0},
    {"Where", K_ELEM, OX_COST_CMP},
    {"Xor", K_ELEM, OX_COST_CMP},
};

static int rule_cmp(const void *key, const void *elem)
{
    return strcmp((const char *)key, ((const rule *)elem)->op);
}

#define N_RULES ((int)(sizeof rules / sizeof rules[0]))

static const rule *rule_for(const char *domain, const char *op_type)
{
    if (!op_type)
        return NULL;
    /* Rules are keyed by op_type. They describe the default domain and the
     * com.microsoft contrib ops; in another domain (ai.onnx.ml, the
     * training and preview domains) a rule applies only to an op the
     * registry lists there, so a custom domain's homonym gets none. */
    const char *d = domain ? domain : "";
    if (*d && strcmp(d, "ai.onnx") && strcmp(d, "com.microsoft") &&
        !ox_op_find(d, op_type, INT64_MAX))
        return NULL;
    return bsearch(op_type, rules, N_RULES, sizeof rules[0], rule_cmp);
}

static const rule *find_rule(const ox_node *n)
{
    return rule_for(n->domain, n->op_type);
}

bool ox_cost_rule_exists(const char *domain, const char *op_type)
{
    return rule_for(domain, op_type) != NULL;
}

const char *ox_cost_rule_at(int i)
{
    return i >= 0 && i < N_RULES ? rules[i].op : NULL;
}

/* ---- per-kind computations ----------------------------------------------------
 * Each returns false when a needed dim is unknown; *macs and *extra (FLOPs
 * that are not part of a multiply-accumulate, e.g. bias adds) are set
 * otherwise. `contraction` says whether a MAC is worth two FLOPs. */

typedef struct calc {
    int64_t macs;
    int64_t extra_flops;  /* single ops beyond 2*macs for contractions */
    bool contraction;
} calc;

static const ox_value *in_at(const ox_node *n, int i)
{
    return (i >= 0 && i < n->n_inputs) ? n->inputs[i] : NULL;
}

static const ox_value *out_at(const ox_node *n, int i)
{
    return (i >= 0 && i < n->n_outputs) ? n->outputs[i] : NULL;
}

static bool numel_of(const ox_value *v, int64_t *n)
{
    return ox_value_static_numel(v, n);
}

static bool calc_conv(const ox_node *n, int widx, bool transpose, calc *c)
{
    int wr;
    int64_t wd[OX_MAX_RANK], nout, nin;
    if (!value_shape(in_at(n, widx), &wr, wd) || wr < 2)
        return false;
    int64_t per = wd[1];
    for (int i = 2; i < wr; i++)
        per = sat_mul(per, wd[i]);
    if (!numel_of(out_at(n, 0), &nout))
        return false;
    if (transpose) {
        /* Every input pixel scatters into Cout/group * K outputs. */
        if (!numel_of(in_at(n, 0), &nin))
            return false;
        c->macs = sat_mul(nin, per);
    } else {
        c->macs = sat_mul(nout, per);
    }
    c->contraction = true;
    int bidx = !strcmp(n->op_type, "QLinearConv") ? 8 : 2;
    if (!strcmp(n->op_type, "ConvInteger"))
        bidx = -1;
    if (bidx >= 0 && in_at(n, bidx))
        c->extra_flops = nout;
    if (!strcmp(n->op_type, "FusedConv"))
        c->extra_flops = sat_add(c->extra_flops, nout); /* the activation */
    return true;
}

static bool calc_matmul(const ox_node *n, calc *c)
{
    int ar;
    int64_t ad[OX_MAX_RANK], nout;
    if (!value_shape(in_at(n, 0), &ar, ad) || ar < 1)
        return false;
    if (!numel_of(out_at(n, 0), &nout))
        return false;
    int64_t k = ad[ar - 1];
    if (ar >= 2 && !strcmp(n->op_type, "FusedMatMul") &&
        ox_node_attr_i(n, "transA", 0))
        k = ad[ar - 2];
    c->macs = sat_mul(nout, k);
    c->contraction = true;
    return true;
}

static bool calc_gemm(const ox_node *n, calc *c)
{
    int ar;
    int64_t ad[OX_MAX_RANK], nout;
    if (!value_shape(in_at(n, 0), &ar, ad) || ar != 2)
        return false;
    if (!numel_of(out_at(n, 0), &nout))
        return false;
    int64_t k = ox_node_attr_i(n, "transA", 0) ? ad[0] : ad[1];
    c->macs = sat_mul(nout, k);
    c->contraction = true;
    if (in_at(n, 2))
        c->extra_flops = nout; /* + beta * C */
    if (!strcmp(n->op_type, "FusedGemm") && ox_node_attr_s(n, "activation", "")[0])
        c->extra_flops = sat_add(c->extra_flops, nout); /* the activation */
    return true;
}

static bool calc_pool(const ox_node *n, int w, calc *c)
{
    const int64_t *ks;
    int nk = ox_node_attr_ints(n, "kernel_shape", &ks);
    int64_t nout;
    if (nk < 0 || !numel_of(out_at(n, 0), &nout))
        return false;
    int64_t k = 1;
    for (int i = 0; i < nk; i++)
        k = sat_mul(k, ks[i]);
    c->macs = sat_mul(sat_mul(nout, k), w);
    return true;
}

/* ---- rules of the less common operators (docs/COST.md) ------------------ */

/* Input i as a one-element integer constant (initializer or a value
 * inference computed). */
static bool const_int_in(const ox_node *n, int i, int64_t *out)
{
    const ox_value *v = in_at(n, i);
    const ox_tensor *t = v ? (v->init ? v->init : v->known) : NULL;
    if (!t || t->numel != 1 || !ox_dtype_is_int(t->dtype) || !ox_tensor_data(t))
        return false;
    *out = ox_tensor_get_i64(t, 0);
    return true;
}

static int64_t ceil_log2(int64_t x)
{
    int64_t k = 0;
    while (k < 62 && ((int64_t)1 << k) < x)
        k++;
    return k;
}

/* Radix-2 FFT count: 5 N log2 N real operations for N complex points, so
 * 5 log2(L) per complex output (the trailing dim of 2). L: DFT's
 * dft_length or the input's length on the axis; STFT's frame_length or
 * the window's length. */
static bool calc_fft(const ox_node *n, calc *c)
{
    int64_t nout, d[OX_MAX_RANK], L = -1;
    int r;
    if (!numel_of(out_at(n, 0), &nout))
        return false;
    if (!strcmp(n->op_type, "STFT")) {
        if (!const_int_in(n, 3, &L) && value_shape(in_at(n, 2), &r, d) && r == 1)
            L = d[0];
    } else if (!const_int_in(n, 1, &L) && value_shape(in_at(n, 0), &r, d)) {
        /* DFT-17: attribute axis (1); DFT-20: input 2 (-2 when absent). */
        const ox_model *m = n->graph ? n->graph->model : NULL;
        int64_t axis = ox_node_attr_i(n, "axis", 1);
        if (m && ox_model_opset(m, "") >= 20) {
            axis = -2;
            if (in_at(n, 2) && !const_int_in(n, 2, &axis))
                return false;
        }
        if (axis < 0)
            axis += r;
        if (axis >= 0 && axis < r)
            L = d[axis];
    }
    if (L < 1)
        return false;
    c->macs = sat_mul(sat_mul(nout / 2, 5), ceil_log2(L));
    return true;
}

/* LU factorization: n^3 / 3 multiply-adds per n x n matrix. */
static bool calc_det(const ox_node *n, calc *c)
{
    int r;
    int64_t d[OX_MAX_RANK];
    if (!value_shape(in_at(n, 0), &r, d) || r < 2)
        return false;
    int64_t batch = 1, m = d[r - 1];
    for (int i = 0; i < r - 2; i++)
        batch = sat_mul(batch, d[i]);
    c->macs = sat_mul(batch, sat_mul(m, m) * m / 3);
    return true;
}

/* Resize's weights per output element: 4 (bi)linear, the default, 8
 * (bi)cubic, 0 nearest. */
static bool calc_grid(const ox_node *n, calc *c)
{
    int64_t nout;
    if (!numel_of(out_at(n, 0), &nout))
        return false;
    const char *mode = ox_node_attr_s(n, "mode", "linear");
    int w = 4;
    if (!strcmp(mode, "cubic") || !strcmp(mode, "bicubic"))
        w = 8;
    else if (!strcmp(mode, "nearest"))
        w = 0;
    c->macs = sat_mul(nout, w);
    return true;
}

/* Conv's count, plus the bilinear sampling of every input tap at its
 * offset (4 multiply-adds; one tap per input channel, kernel element and
 * output position, shared by the output channels of its group). */
static bool calc_deform(const ox_node *n, int widx, calc *c)
{
    int wr;
    int64_t wd[OX_MAX_RANK];
    if (!calc_conv(n, widx, false, c) || !value_shape(in_at(n, widx), &wr, wd) || wd[0] < 1)
        return false;
    int64_t group = ox_node_attr_i(n, "group", 1);
    int64_t per_group = wd[0] / (group > 0 ? group : 1);
    if (per_group < 1)
        per_group = 1;
    c->extra_flops = sat_add(c->extra_flops, sat_mul(c->macs / per_group, 4));
    return true;
}

/* Each output bin averages sampling_ratio^2 bilinear samples (4 weights
 * and an add each). An adaptive ratio (0) depends on each RoI's size: a
 * value known only at run time. */
static bool calc_roialign(const ox_node *n, calc *c)
{
    int64_t nout, sr = ox_node_attr_i(n, "sampling_ratio", 0);
    if (sr <= 0 || !numel_of(out_at(n, 0), &nout))
        return false;
    c->macs = sat_mul(nout, sat_mul(sat_mul(sr, sr), 5));
    return true;
}

/* Per token and query head: decay the dk x dv state, read it with the key,
 * write the update's outer product and read it with the query: 4 dk dv
 * multiply-adds. query/key/value are (B, S, heads*d) or (B, heads, S, d). */
static bool calc_linatt(const ox_node *n, calc *c)
{
    int qr, vr;
    int64_t qd[OX_MAX_RANK], vd[OX_MAX_RANK];
    if (!value_shape(in_at(n, 0), &qr, qd) || !value_shape(in_at(n, 2), &vr, vd) || qr != vr)
        return false;
    int64_t b, s, hq, dk, dv;
    if (qr == 4) {
        b = qd[0];
        hq = qd[1];
        s = qd[2];
        dk = qd[3];
        dv = vd[3];
    } else if (qr == 3) {
        hq = ox_node_attr_i(n, "q_num_heads", 0);
        int64_t hkv = ox_node_attr_i(n, "kv_num_heads", hq);
        if (hq < 1 || hkv < 1)
            return false;
        b = qd[0];
        s = qd[1];
        dk = qd[2] / hq;
        dv = vd[2] / hkv;
    } else {
        return false;
    }
    c->macs = sat_mul(sat_mul(sat_mul(b, s), hq), sat_mul(4, sat_mul(dk, dv)));
    c->contraction = true;
    return true;
}

/* com.microsoft GemmFastGelu(X, W, bias?): a MatMul, the bias add and a
 * FastGelu per output element. */
static bool calc_gemm_gelu(const ox_node *n, calc *c)
{
    int64_t nout;
    if (!calc_matmul(n, c) || !numel_of(out_at(n, 0), &nout))
        return false;
    c->extra_flops = sat_add(c->extra_flops,
                             sat_mul(nout, TANH_W + 6 + (in_at(n, 2) ? OX_COST_ADD : 0)));
    return true;
}

static bool calc_lrn(const ox_node *n, calc *c)
{
    int64_t nout;
    if (!numel_of(out_at(n, 0), &nout))
        return false;
    int64_t size = ox_node_attr_i(n, "size", 1);
    if (size < 0)
        size = 0;
    /* Sum of squares over the window, scale and bias, a power, a divide. */
    int64_t per = sat_add(size * OX_COST_MUL,
                          OX_COST_MUL + OX_COST_ADD + OX_COST_POW + OX_COST_DIV);
    c->macs = sat_mul(nout, per);
    return true;
}

static bool calc_resize(const ox_node *n, calc *c)
{
    int64_t nout;
    if (!numel_of(out_at(n, 0), &nout))
        return false;
    const char *mode = ox_node_attr_s(n, "mode", "nearest");
    int w = 0;
    if (!strcmp(mode, "linear") || !strcmp(mode, "bilinear"))
        w = 4;
    else if (!strcmp(mode, "cubic"))
        w = 8;
    c->macs = sat_mul(nout, w);
    return true;
}

/* onnx-tool's Einsum rule: the product of the sizes of every distinct index
 * letter (each combination is one multiply-accumulate). */
static bool calc_einsum(const ox_node *n, calc *c)
{
    const char *eq = ox_node_attr_s(n, "equation", NULL);
    if (!eq)
        return false;
    int64_t size[128];
    for (int i = 0; i < 128; i++)
        size[i] = -1;
    int64_t ell = 1;
    const char *p = eq;
    for (int in = 0; in < n->n_inputs && *p && strncmp(p, "->", 2); in++) {
        int rank;
        int64_t d[OX_MAX_RANK];
        if (!value_shape(in_at(n, in), &rank, d))
            return false;
        /* Count letters of this term to know how many dims '...' covers. */
        int letters = 0;
        bool has_ell = false;
        const char *q = p;
        for (; *q && *q != ',' && strncmp(q, "->", 2); q++) {
            if (*q == '.')
                has_ell = true;
            else if ((unsigned char)*q < 128 && *q != ' ')
                letters++;
        }
        int ne = has_ell ? rank - letters : 0;
        if (ne < 0 || (!has_ell && letters != rank))
            return false;
        int axis = 0;
        for (; p < q; p++) {
            unsigned char ch = (unsigned char)*p;
            if (ch == ' ')
                continue;
            if (ch == '.') {
                if (!strncmp(p, "...", 3)) {
                    int64_t e = 1;
                    for (int k = 0; k < ne && axis < rank; k++)
                        e = sat_mul(e, d[axis++]);
                    if (e > ell)
                        ell = e;
                    p += 2;
                }
                continue;
            }
            if (ch >= 128 || axis >= rank)
                return false;
            int64_t v = d[axis++];
            if (size[ch] < v) /* broadcast: a 1 against the real size */
                size[ch] = v;
        }
        if (*p == ',')
            p++;
    }
    int64_t macs = ell;
    for (int i = 0; i < 128; i++)
        if (size[i] >= 0)
            macs = sat_mul(macs, size[i]);
    c->macs = macs;
    c->contraction = n->n_inputs > 1;
    return true;
}

/* RNN/GRU/LSTM: per time step, batch row and direction, `gates` matrix
 * products of [input + hidden] x hidden, plus the gate nonlinearities. */
static bool calc_rnn(const ox_node *n, int gates, calc *c)
{
    int xr, wr;
    int64_t xd[OX_MAX_RANK], wd[OX_MAX_RANK];
    if (!value_shape(in_at(n, 0), &xr, xd) || xr != 3)
        return false;
    if (!value_shape(in_at(n, 1), &wr, wd) || wr != 3)
        return false;
    int64_t hidden = ox_node_attr_i(n, "hidden_size", wd[1] / (gates ? gates : 1));
    /* [seq, batch, in] or, with layout=1, [batch, seq, in]: same product. */
    int64_t steps = sat_mul(xd[0], xd[1]);
    int64_t dirs = wd[0];
    int64_t per_step = sat_mul(sat_mul(gates, hidden), sat_add(xd[2], hidden));
    c->macs = sat_mul(sat_mul(steps, dirs), per_step);
    c->contraction = true;
    int64_t act = sat_mul(sat_mul(steps, dirs), sat_mul(gates, hidden));
    c->extra_flops = sat_mul(act, SIGMOID_W + 2);
    return true;
}

static int64_t softmax_cost(int64_t elems)
{
    return sat_mul(elems, 21);
}

/* ONNX Attention (opset 23+; the same op_type as com.microsoft's): Q, K,
 * V as (B, heads, S, d) or (B, S, heads*d) with q_num_heads/kv_num_heads;
 * past_key (input 4) adds its length to K's. Q.K^T and P.V per query head
 * (grouped-query heads share K/V, not the work), the softmax on the
 * scores. */
static bool calc_onnx_attention(const ox_node *n, calc *c)
{
    int qr, kr, vr, pr;
    int64_t qd[OX_MAX_RANK], kd[OX_MAX_RANK], vd[OX_MAX_RANK], pd[OX_MAX_RANK];
    if (!value_shape(in_at(n, 0), &qr, qd) || !value_shape(in_at(n, 1), &kr, kd) ||
        !value_shape(in_at(n, 2), &vr, vd) || qr != kr || qr != vr)
        return false;
    int64_t b, hq, s, l, dk, dv;
    if (qr == 4) {
        b = qd[0];
        hq = qd[1];
        s = qd[2];
        dk = qd[3];
        l = kd[2];
        dv = vd[3];
    } else if (qr == 3) {
        hq = ox_node_attr_i(n, "q_num_heads", 0);
        int64_t hkv = ox_node_attr_i(n, "kv_num_heads", 0);
        if (hq < 1 || hkv < 1)
            return false;
        b = qd[0];
        s = qd[1];
        dk = qd[2] / hq;
        l = kd[1];
        dv = vd[2] / hkv;
    } else {
        return false;
    }
    if (in_at(n, 4)) {   /* past_key: (B, kv_heads, P, d) */
        if (!value_shape(in_at(n, 4), &pr, pd) || pr != 4)
            return false;
        l = sat_add(l, pd[2]);
    }
    int64_t rows = sat_mul(sat_mul(b, hq), s);
    c->macs = sat_add(sat_mul(sat_mul(rows, l), dk), sat_mul(sat_mul(rows, l), dv));
    c->contraction = true;
    c->extra_flops = softmax_cost(sat_mul(rows, l));
    return true;
}

/* com.microsoft Attention: input [B,S,Hin] x weights [Hin, 3*H] for Q, K
 * and V, then Q.K^T and P.V over all heads, and the softmax. */
static bool calc_attention(const ox_node *n, calc *c)
{
    if (ox_node_is_default_domain(n))
        return calc_onnx_attention(n, c);
    int xr, wr;
    int64_t xd[OX_MAX_RANK], wd[OX_MAX_RANK];
    if (!value_shape(in_at(n, 0), &xr, xd) || xr != 3)
        return false;
    if (!value_shape(in_at(n, 1), &wr, wd) || wr != 2)
        return false;
    int64_t b = xd[0], s = xd[1], hin = xd[2], h3 = wd[1];
    int64_t heads = ox_node_attr_i(n, "num_heads", 1);
    if (heads < 1)
        heads = 1;
    int64_t h = h3 / 3;
    int64_t proj = sat_mul(sat_mul(b, s), sat_mul(hin, h3));
    int64_t attn = sat_mul(2, sat_mul(sat_mul(b, s), sat_mul(s, h)));
    c->macs = sat_add(proj, attn);
    c->contraction = true;
    c->extra_flops = sat_add(softmax_cost(sat_mul(sat_mul(b, heads), sat_mul(s, s))),
                             sat_mul(sat_mul(b, s), h3)); /* bias */
    return true;
}

static bool calc_mha(const ox_node *n, calc *c)
{
    int qr, kr;
    int64_t qd[OX_MAX_RANK], kd[OX_MAX_RANK];
    if (!value_shape(in_at(n, 0), &qr, qd) || qr != 3)
        return false;
    if (!value_shape(in_at(n, 1), &kr, kd) || kr != 3)
        return false;
    int64_t heads = ox_node_attr_i(n, "num_heads", 1);
    if (heads < 1)
        heads = 1;
    int64_t b = qd[0], s = qd[1], d = qd[2], l = kd[1];
    c->macs = sat_mul(2, sat_mul(sat_mul(b, s), sat_mul(l, d)));
    c->contraction = true;
    c->extra_flops = softmax_cost(sat_mul(sat_mul(b, heads), sat_mul(s, l)));
    return true;
}

/* ---- control flow -------------------------------------------------------------
 * Bodies are costed node by node (recursively). A body's cost per run is
 * known when every one of its nodes is; docs/COST.md "Control flow". */

/* Subgraphs nested deeper than this are not costed (the loader refuses
 * deeper files anyway). */
#define MAX_BODY_DEPTH 64

static void node_cost(const ox_node *n, ox_cost *out, int depth);

typedef struct body_cost {
    int64_t macs, flops, macs_min, flops_min;
    bool known, upper;
} body_cost;

static void graph_cost(const ox_graph *g, body_cost *b, int depth)
{
    memset(b, 0, sizeof *b);
    b->known = g != NULL && depth <= MAX_BODY_DEPTH;
    if (!b->known)
        return;
    for (int i = 0; i < g->n_nodes; i++) {
        ox_cost c;
        node_cost(g->nodes[i], &c, depth + 1);
        b->macs = sat_add(b->macs, c.macs);
        b->flops = sat_add(b->flops, c.flops);
        b->macs_min = sat_add(b->macs_min, c.macs_min);
        b->flops_min = sat_add(b->flops_min, c.flops_min);
        b->known = b->known && c.known;
        b->upper = b->upper || c.upper;
    }
}

static const ox_graph *body_attr(const ox_node *n, const char *name)
{
    const ox_attr *a = ox_node_attr(n, name);
    return a && a->type == OX_ATTR_GRAPH ? a->g : NULL;
}

/* The constant scalar value of v (initializer, Constant, or a value shape
 * inference propagated), as an integer; false when not known. */
static bool known_scalar(const ox_value *v, int64_t *out)
{
    if (!v || (v->is_input && !v->known))
        return false; /* a graph input with a default can be fed another value */
    const ox_tensor *t = v->known ? v->known : v->init;
    if (!t || t->numel != 1 || t->dtype == OX_DT_STRING || !ox_tensor_data(t))
        return false;
    *out = ox_tensor_get_i64(t, 0);
    return true;
}

static void set_scaled(ox_cost *out, const body_cost *b, int64_t trips)
{
    out->macs = sat_mul(b->macs, trips);
    out->flops = sat_mul(b->flops, trips);
    out->macs_min = sat_mul(b->macs_min, trips);
    out->flops_min = sat_mul(b->flops_min, trips);
    out->upper = b->upper;
}

static bool cost_if(const ox_node *n, ox_cost *out, int depth)
{
    body_cost br[2];
    graph_cost(body_attr(n, "then_branch"), &br[0], depth);
    graph_cost(body_attr(n, "else_branch"), &br[1], depth);
    int64_t cond;
    if (known_scalar(in_at(n, 0), &cond)) {
        /* Only the branch that runs counts. */
        const body_cost *b = &br[cond ? 0 : 1];
        out->control = OX_CTRL_IF_TAKEN;
        out->branch = cond ? 0 : 1;
        out->iter_macs = b->macs;
        out->iter_flops = b->flops;
        out->iter_known = b->known;
        if (!b->known)
            return false;
        set_scaled(out, b, 1);
        return true;
    }
    out->control = OX_CTRL_IF_MAX;
    out->branch = br[1].macs > br[0].macs ? 1 : 0;
    const body_cost *hi = &br[out->branch], *lo = &br[1 - out->branch];
    out->iter_macs = hi->macs;
    out->iter_flops = hi->flops;
    out->iter_known = br[0].known && br[1].known;
    if (!out->iter_known)
        return false;
    set_scaled(out, hi, 1);
    out->macs_min = lo->macs_min;
    out->flops_min = lo->flops_min;
    /* Equal branches make the figure exact. */
    out->upper = hi->upper || lo->upper || hi->macs != lo->macs_min ||
                 hi->flops != lo->flops_min;
    return true;
}

/* Loop: the body runs `trips` times when that number is fixed before the
 * loop starts: M is a constant and the loop cannot stop early (no cond
 * input, or a known cond input that the body passes straight out). */
static bool cost_loop(const ox_node *n, ox_cost *out, int depth)
{
    const ox_graph *body = body_attr(n, "body");
    body_cost b;
    graph_cost(body, &b, depth);
    out->iter_macs = b.macs;
    out->iter_flops = b.flops;
    out->iter_known = b.known;
    out->trips = out->trips_max = -1;
    int64_t m = -1, cond = 1;
    bool has_m = in_at(n, 0) != NULL, has_cond = in_at(n, 1) != NULL;
    if (has_m && known_scalar(in_at(n, 0), &m))
        out->trips_max = m < 0 ? 0 : m;
    bool cond_known = !has_cond || known_scalar(in_at(n, 1), &cond);
    bool cond_passed = !has_cond;
    if (has_cond && body && body->n_outputs > 0 && body->n_inputs > 1) {
        const ox_value *co = body->outputs[0];
        /* cond_out = cond_in, directly or through Identity nodes */
        for (int hop = 0; co && hop < 8; hop++) {
            if (co == body->inputs[1]) {
                cond_passed = true;
                break;
            }
            if (!co->producer || !ox_node_is(co->producer, "Identity") ||
                co->producer->n_inputs < 1)
                break;
            co = co->producer->inputs[0];
        }
    }
    if (cond_known && !cond)
        out->trips = 0;   /* the condition is false before the first iteration */
    else if (out->trips_max >= 0 && cond_known && cond_passed)
        out->trips = out->trips_max;
    if (out->trips < 0) {
        out->control = OX_CTRL_LOOP_UNKNOWN;
        return false;
    }
    out->control = OX_CTRL_LOOP;
    if (!b.known && out->trips > 0)
        return false;
    set_scaled(out, &b, out->trips);
    return true;
}

/* Scan: the body runs once per slice along the scan axis (Scan-8: once per
 * batch row and step). */
static bool cost_scan(const ox_node *n, ox_cost *out, int depth)
{
    body_cost b;
    graph_cost(body_attr(n, "body"), &b, depth);
    out->iter_macs = b.macs;
    out->iter_flops = b.flops;
    out->iter_known = b.known;
    out->trips = out->trips_max = -1;
    out->control = OX_CTRL_SCAN_UNKNOWN;
    int64_t m = ox_node_attr_i(n, "num_scan_inputs", -1);
    const ox_model *model = n->graph ? n->graph->model : NULL;
    int64_t opset = model ? ox_model_opset(model, "") : -1;
    bool scan8 = opset >= 0 && opset < 9;
    int first = n->n_inputs - (int)m;  /* the first scan input */
    if (m < 1 || first < (scan8 ? 1 : 0))
        return false;
    const int64_t *axes;
    int n_axes = ox_node_attr_ints(n, "scan_input_axes", &axes);
    for (int j = 0; j < m && out->trips < 0; j++) {
        int rank;
        int64_t d[OX_MAX_RANK];
        if (!value_shape(in_at(n, first + j), &rank, d))
            continue;
        if (scan8) {
            if (rank >= 2)
                out->trips = sat_mul(d[0], d[1]);
            continue;
        }
        int64_t ax = j < n_axes ? axes[j] : 0;
        if (ax < 0)
            ax += rank;
        if (ax >= 0 && ax < rank)
            out->trips = d[ax];
    }
    if (out->trips < 0)
        return false;
    out->control = OX_CTRL_SCAN;
    if (!b.known && out->trips > 0)
        return false;
    set_scaled(out, &b, out->trips);
    return true;
}

const char *ox_cost_note(const ox_cost *c, char *buf, size_t len)
{
    char a[32], b[32];
    if (!buf || !len)
        return "";
    buf[0] = 0;
    if (!c)
        return buf;
    static const char *const branch[] = {"then_branch", "else_branch"};
    const char *it = c->iter_known ? ox_fmt_count(c->iter_macs, true, a, sizeof a) : "?";
    switch (c->control) {
    case OX_CTRL_NONE:
        break;
    case OX_CTRL_IF_TAKEN:
        snprintf(buf, len, "condition known: only %s runs", branch[c->branch & 1]);
        break;
    case OX_CTRL_IF_MAX:
        if (c->iter_known)
            snprintf(buf, len, "larger branch (%s) counted%s", branch[c->branch & 1],
                     c->upper ? ": an upper bound" : "");
        else
            snprintf(buf, len, "a branch has unknown dims");
        break;
    case OX_CTRL_LOOP:
        snprintf(buf, len, "%" PRId64 " iterations x %s MACs", c->trips, it);
        break;
    case OX_CTRL_LOOP_UNKNOWN:
        if (c->trips_max >= 0)
            snprintf(buf, len, "trip count not constant (at most %" PRId64 "): %s MACs per iteration",
                     c->trips_max, it);
        else
            snprintf(buf, len, "trip count not constant: %s MACs per iteration", it);
        break;
    case OX_CTRL_SCAN:
        snprintf(buf, len, "scan length %s x %s MACs",
                 ox_fmt_count(c->trips, true, b, sizeof b), it);
        break;
    case OX_CTRL_SCAN_UNKNOWN:
        snprintf(buf, len, "scan length unknown: %s MACs per iteration", it);
        break;
    }
    return buf;
}

/* ---- ox_node_cost ------------------------------------------------------------ */

void ox_node_cost(const ox_node *n, ox_cost *out)
{
    node_cost(n, out, 0);
}

static void node_cost(const ox_node *n, ox_cost *out, int depth)
{
    memset(out, 0, sizeof *out);
    if (!n)
        return;

    /* Bytes moved and parameters do not depend on a rule. */
    out->bytes_known = true;
    bool params_owner = !node_is_constant_expr(n);
    for (int i = 0; i < n->n_inputs; i++) {
        const ox_value *v = n->inputs[i];
        int64_t b, e;
        if (!v)
            continue;
        if (ox_value_static_bytes(v, &b))
            out->bytes_read = sat_add(out->bytes_read, b);
        else
            out->bytes_known = false;
        if (!params_owner || !ox_value_is_weight(v))
            continue;
        /* A value read twice by one node is still one weight. */
        bool seen = false;
        for (int j = 0; j < i && !seen; j++)
            seen = n->inputs[j] == v;
        if (!seen && ox_value_static_numel(v, &e)) {
            out->params = sat_add(out->params, e);
            if (ox_value_static_bytes(v, &b))
                out->param_bytes = sat_add(out->param_bytes, b);
        }
    }
    for (int i = 0; i < n->n_outputs; i++) {
        const ox_value *v = n->outputs[i];
        int64_t b;
        if (!v)
            continue;
        if (ox_value_static_bytes(v, &b))
            out->bytes_written = sat_add(out->bytes_written, b);
        else
            out->bytes_known = false;
    }

    const rule *r = find_rule(n);
    if (!r)
        return;
    out->has_rule = true;

    calc c = {0, 0, false};
    bool ok = false;
    int64_t e;
    switch (r->kind) {
    case K_ZERO:
        ok = true;
        break;
    case K_ELEM:
        ok = numel_of(out_at(n, 0), &e);
        if (ok)
            c.macs = sat_mul(e, r->w);
        break;
    case K_VARIADIC: {
        int present = 0;
        for (int i = 0; i < n->n_inputs; i++)
            present += n->inputs[i] != NULL;
        ok = numel_of(out_at(n, 0), &e);
        if (ok)
            c.macs = sat_mul(sat_mul(e, r->w), present > 1 ? present - 1 : 1);
        break;
    }
    case K_IN:
    case K_GPOOL:
        ok = numel_of(in_at(n, 0), &e);
        if (ok)
            c.macs = sat_mul(e, r->w);
        break;
    case K_CONV:
        ok = calc_conv(n, r->w, false, &c);
        break;
    case K_CONVT:
        ok = calc_conv(n, r->w, true, &c);
        break;
    case K_MATMUL:
        ok = calc_matmul(n, &c);
        break;
    case K_GEMM:
        ok = calc_gemm(n, &c);
        break;
    case K_POOL:
        ok = calc_pool(n, r->w, &c);
        break;
    case K_LRN:
        ok = calc_lrn(n, &c);
        break;
    case K_RESIZE:
        ok = calc_resize(n, &c);
        break;
    case K_EINSUM:
        ok = calc_einsum(n, &c);
        break;
    case K_RNN:
        ok = calc_rnn(n, r->w, &c);
        break;
    case K_ATTENTION:
        ok = calc_attention(n, &c);
        break;
    case K_MHA:
        ok = calc_mha(n, &c);
        break;
    case K_DATA:
        break;  /* unknown from shapes alone: known stays false */
    case K_IN1:
        ok = numel_of(in_at(n, 1), &e);
        if (ok)
            c.macs = sat_mul(e, r->w);
        break;
    case K_ALLOUT:
        ok = true;
        for (int i = 0; i < n->n_outputs && ok; i++)
            if (out_at(n, i)) {
                ok = numel_of(out_at(n, i), &e);
                c.macs = sat_add(c.macs, sat_mul(e, r->w));
            }
        break;
    case K_FFT:
        ok = calc_fft(n, &c);
        break;
    case K_DET:
        ok = calc_det(n, &c);
        break;
    case K_GRID:
        ok = calc_grid(n, &c);
        break;
    case K_DEFORM:
        ok = calc_deform(n, r->w, &c);
        break;
    case K_ROIALIGN:
        ok = calc_roialign(n, &c);
        break;
    case K_LINATT:
        ok = calc_linatt(n, &c);
        break;
    case K_AFFINE: {
        /* Output (N, [D,] H, W, k): each coordinate is a k+1 dot product. */
        int orank;
        int64_t od[OX_MAX_RANK];
        ok = value_shape(out_at(n, 0), &orank, od) && orank >= 1 && numel_of(out_at(n, 0), &e);
        if (ok)
            c.macs = sat_mul(e, od[orank - 1] + 1);
        break;
    }
    case K_GEMMGELU:
        ok = calc_gemm_gelu(n, &c);
        break;
    case K_CONTROL:
        /* Costs (and bounds) come from the bodies, set on out directly. */
        if (!strcmp(n->op_type, "If"))
            out->known = cost_if(n, out, depth);
        else if (!strcmp(n->op_type, "Loop"))
            out->known = cost_loop(n, out, depth);
        else
            out->known = cost_scan(n, out, depth);
        if (!out->known) {
            out->macs = out->flops = out->macs_min = out->flops_min = 0;
            out->upper = false;
        }
        return;
    }
    if (!ok)
        return;
    out->known = true;
    out->macs = c.macs;
    out->flops = sat_add(c.contraction ? sat_mul(c.macs, 2) : c.macs,
                         c.extra_flops);
    out->macs_min = out->macs;
    out->flops_min = out->flops;
}

/* ---- model totals ------------------------------------------------------------ */

/* One weight for deduplication: its identity is its dtype, shape and bytes
 * (for ConstantOfShape: the fill value stands in for the bytes). */
typedef struct witem {
    ox_dtype dt;
    int rank;
    const int64_t *dims;
    int64_t dims_buf[OX_MAX_RANK];
    const void *data;
    size_t len;
    int64_t numel;
    int64_t nbytes;
    bool fill;          /* data is a fill value, not the whole tensor */
    uint64_t hash;
} witem;

typedef struct wlist {
    witem *v;
    int n, cap;
    bool oom;
} wlist;

static witem *wlist_push(wlist *l)
{
    if (l->n == l->cap) {
        int nc = l->cap ? l->cap * 2 : 64;
        witem *nv = realloc(l->v, (size_t)nc * sizeof *nv);
        if (!nv) {
            l->oom = true;
            return NULL;
        }
        l->v = nv;
        l->cap = nc;
    }
    witem *w = &l->v[l->n++];
    memset(w, 0, sizeof *w);
    return w;
}

static void add_tensor_item(wlist *l, const ox_tensor *t)
{
    if (!t)
        return;
    witem *w = wlist_push(l);
    if (!w)
        return;
    w->dt = t->dtype;
    w->rank = t->rank;
    w->dims = t->dims;
    w->numel = t->numel;
    w->nbytes = t->nbytes > (size_t)INT64_MAX ? INT64_MAX : (int64_t)t->nbytes;
    /* Strings and tensors without resident bytes are never deduplicated. */
    w->data = t->dtype == OX_DT_STRING ? NULL : ox_tensor_data(t);
    w->len = w->data ? t->nbytes : 0;
}

typedef struct collect_ctx {
    wlist *l;
} collect_ctx;

int64_t ox_node_weight_bytes(const ox_node *n)
{
    if (!n || n->n_outputs < 1 || !n->outputs[0] || !n->op_type || n->op_type[0] != 'C')
        return 0;
    const ox_value *o = n->outputs[0];
    /* The same cases as collect_graph below. */
    if (ox_node_is(n, "Constant")) {
        /* Any element type, like initializers (moving one saves 0). */
        const ox_attr *a = ox_node_attr(n, "value");
        if (a && a->type == OX_ATTR_TENSOR && a->t)
            return a->t->nbytes > (size_t)INT64_MAX ? INT64_MAX : (int64_t)a->t->nbytes;
        if ((a = ox_node_attr(n, "value_float")) || (a = ox_node_attr(n, "value_floats")))
            return (a->type == OX_ATTR_FLOAT ? 1 : (int64_t)a->n) * 4;
        if ((a = ox_node_attr(n, "value_int")) || (a = ox_node_attr(n, "value_ints")))
            return (a->type == OX_ATTR_INT ? 1 : (int64_t)a->n) * 8;
        return 0;
    }
    int64_t b;
    if (ox_node_is(n, "ConstantOfShape") && ox_value_is_weight(o) &&
        ox_value_static_bytes(o, &b))
        return b;
    return 0;
}

static void collect_graph(ox_graph *g, void *vctx)
{
    collect_ctx *ctx = vctx;
    for (int i = 0; i < g->n_values; i++) {
        const ox_value *v = g->values[i];
        if (v && v->init)
            add_tensor_item(ctx->l, v->init);
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const ox_node *n = g->nodes[i];
        if (!n || n->n_outputs < 1 || !n->outputs[0])
            continue;
        const ox_value *o = n->outputs[0];
        if (ox_node_is(n, "Constant")) {
            /* Any Constant counts, integer ones too, as initializers do:
             * moving a value between the two changes no figure. */
            const ox_attr *a = ox_node_attr(n, "value");
            if (a && a->type == OX_ATTR_TENSOR && a->t) {
                add_tensor_item(ctx->l, a->t);
            } else if ((a = ox_node_attr(n, "value_float")) ||
                       (a = ox_node_attr(n, "value_floats"))) {
                witem *w = wlist_push(ctx->l);
                if (!w)
                    return;
                w->dt = OX_DT_FLOAT;
                bool scalar = a->type == OX_ATTR_FLOAT;
                w->rank = scalar ? 0 : 1;
                w->dims_buf[0] = scalar ? 1 : a->n;
                w->dims = w->dims_buf;
                w->numel = scalar ? 1 : a->n;
                w->nbytes = w->numel * 4;
                w->data = scalar ? (const void *)&a->f : (const void *)a->floats;
                w->len = w->data ? (size_t)w->numel * sizeof(float) : 0;
            } else if ((a = ox_node_attr(n, "value_int")) ||
                       (a = ox_node_attr(n, "value_ints"))) {
                witem *w = wlist_push(ctx->l);
                if (!w)
                    return;
                w->dt = OX_DT_INT64;
                bool scalar = a->type == OX_ATTR_INT;
                w->rank = scalar ? 0 : 1;
                w->dims_buf[0] = scalar ? 1 : a->n;
                w->dims = w->dims_buf;
                w->numel = scalar ? 1 : a->n;
                w->nbytes = w->numel * 8;
                w->data = scalar ? (const void *)&a->i : (const void *)a->ints;
                w->len = w->data ? (size_t)w->numel * sizeof(int64_t) : 0;
            }
        } else if (ox_node_is(n, "ConstantOfShape") && ox_value_is_weight(o)) {
            int64_t e, b;
            witem *w;
            if (!ox_value_static_numel(o, &e) || !ox_value_static_bytes(o, &b))
                continue;
            if (!(w = wlist_push(ctx->l)))
                return;
            w->dt = value_dtype(o);
            value_shape(o, &w->rank, w->dims_buf);
            w->dims = w->dims_buf;
            w->numel = e;
            w->nbytes = b;
            w->fill = true;
            const ox_attr *a = ox_node_attr(n, "value");
            if (a && a->type == OX_ATTR_TENSOR && a->t && a->t->dtype != OX_DT_STRING) {
                w->data = ox_tensor_data(a->t);
                w->len = w->data ? a->t->nbytes : 0;
            } else {
                static const float zero = 0.0f; /* the default fill */
                w->data = &zero;
                w->len = sizeof zero;
            }
        }
    }
}

/* A prefilter, not an identity: the hash covers the dims and at most the
 * first and last 4 KiB of the bytes, so that hundreds of MB of weights are
 * not read; items with equal hashes are then compared byte for byte. */
static uint64_t mix_bytes(uint64_t h, const unsigned char *p, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t x;
        memcpy(&x, p + i, 8);
        h = (h ^ x) * 0x100000001b3ULL;
        h ^= h >> 29;
    }
    for (; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ULL;
    return h;
}

static uint64_t hash_item(const witem *w)
{
    enum { SAMPLE = 4096 };
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)w->dt ^ ((uint64_t)w->fill << 8);
    for (int i = 0; i < w->rank; i++)
        h = (h ^ (uint64_t)w->dims[i]) * 1099511628211ULL;
    const unsigned char *p = w->data;
    if (w->len <= 2 * SAMPLE)
        return mix_bytes(h, p, w->len);
    h = mix_bytes(h, p, SAMPLE);
    return mix_bytes(h, p + w->len - SAMPLE, SAMPLE);
}

static bool item_equal(const witem *a, const witem *b)
{
    if (a->dt != b->dt || a->rank != b->rank || a->fill != b->fill ||
        a->len != b->len || !a->data || !b->data)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i])
            return false;
    return memcmp(a->data, b->data, a->len) == 0;
}

static int cmp_size_then_hash(const void *pa, const void *pb)
{
    const witem *a = pa, *b = pb;
    if (a->nbytes != b->nbytes)
        return a->nbytes < b->nbytes ? -1 : 1;
    if (a->hash != b->hash)
        return a->hash < b->hash ? -1 : 1;
    return 0;
}

static void dedup_totals(wlist *l, ox_model_cost *mc)
{
    /* Only items whose byte size collides with another need hashing. */
    if (l->n > 1)   /* l->v is NULL for a model without weights */
        qsort(l->v, (size_t)l->n, sizeof *l->v, cmp_size_then_hash);
    for (int i = 0; i < l->n;) {
        int j = i + 1;
        while (j < l->n && l->v[j].nbytes == l->v[i].nbytes)
            j++;
        if (j - i > 1) {
            for (int k = i; k < j; k++)
                l->v[k].hash = l->v[k].data ? hash_item(&l->v[k]) : (uint64_t)k;
            qsort(l->v + i, (size_t)(j - i), sizeof *l->v, cmp_size_then_hash);
        }
        i = j;
    }
    for (int i = 0; i < l->n; i++) {
        bool dup = false;
        /* Compare against earlier items with the same size and hash. */
        for (int k = i - 1; k >= 0 && l->v[k].nbytes == l->v[i].nbytes &&
                            l->v[k].hash == l->v[i].hash; k--) {
            if (item_equal(&l->v[k], &l->v[i])) {
                dup = true;
                break;
            }
        }
        if (!dup) {
            mc->params_dedup = sat_add(mc->params_dedup, l->v[i].numel);
            mc->weights_bytes_dedup = sat_add(mc->weights_bytes_dedup, l->v[i].nbytes);
        }
    }
}

/* Calls of model-local functions (PyTorch 2 dynamo: one per module) have
 * no rule of their own, and their bodies' shapes depend on each call: the
 * MAC/FLOP totals are taken from a clone with the calls inlined and
 * inferred (the types m already has, --shape overrides included, carry
 * over), when that knows more. Per-node rows keep the call unknown. */
static void cost_calls_inlined(const ox_model *m, ox_model_cost *out)
{
    ox_model *c = ox_model_clone(m);
    ox_error err = {0};
    ox_model_cost ic;
    ox_infer_opts io = {.no_value_info = true};
    if (c)
        ox_op_align_function_opsets(c);
    if (c && ox_model_inline_functions(c, &err) == OX_OK &&
        ox_infer_model(c, &io, &err) == OX_OK && !ox_model_calls_functions(c) &&
        ox_model_cost_compute(c, &ic, &err) == OX_OK && ic.n_unknown < out->n_unknown) {
        out->macs = ic.macs;
        out->flops = ic.flops;
        out->macs_lower = ic.macs_lower;
        out->flops_lower = ic.flops_lower;
        out->n_upper = ic.n_upper;
        out->known = ic.known;
        out->n_unknown = ic.n_unknown;
        out->n_no_rule = ic.n_no_rule;
        out->bytes_read = ic.bytes_read;
        out->bytes_written = ic.bytes_written;
        out->bytes_known = ic.bytes_known;
    }
    ox_model_free(c);
}

ox_status ox_model_cost_compute(const ox_model *m, ox_model_cost *out,
                                ox_error *err)
{
    if (!out)
        return ox_errorf(err, OX_EINVAL, "no output for the model cost");
    memset(out, 0, sizeof *out);
    if (!m || !m->graph)
        return ox_errorf(err, OX_EINVAL, "model has no graph");
    const ox_graph *g = m->graph;
    out->file_bytes = m->file_size;
    out->known = true;
    out->bytes_known = true;

    for (int i = 0; i < g->n_nodes; i++) {
        ox_cost c;
        ox_node_cost(g->nodes[i], &c);
        out->n_nodes++;
        out->macs = sat_add(out->macs, c.macs);
        out->flops = sat_add(out->flops, c.flops);
        out->bytes_read = sat_add(out->bytes_read, c.bytes_read);
        out->bytes_written = sat_add(out->bytes_written, c.bytes_written);
        out->macs_lower = sat_add(out->macs_lower, c.macs_min);
        out->flops_lower = sat_add(out->flops_lower, c.flops_min);
        if (c.upper)
            out->n_upper++;
        if (!c.known) {
            out->known = false;
            out->n_unknown++;
            if (!c.has_rule)
                out->n_no_rule++;
        }
        if (!c.bytes_known)
            out->bytes_known = false;
    }

    if (out->n_unknown > 0 && ox_model_calls_functions(m))
        cost_calls_inlined(m, out);

    wlist l = {0};
    collect_ctx cctx = {&l};
    ox_graph_visit((ox_graph *)g, collect_graph, &cctx);
    if (l.oom) {
        free(l.v);
        return ox_errorf(err, OX_ENOMEM, "out of memory counting weights");
    }
    for (int i = 0; i < l.n; i++) {
        out->params = sat_add(out->params, l.v[i].numel);
        out->weights_bytes = sat_add(out->weights_bytes, l.v[i].nbytes);
        unsigned dt = (unsigned)l.v[i].dt < OX_DT_COUNT ? (unsigned)l.v[i].dt : 0;
        out->weights_bytes_by_dtype[dt] = sat_add(out->weights_bytes_by_dtype[dt],
                                                   l.v[i].nbytes);
    }
    dedup_totals(&l, out);
    free(l.v);

    ox_memplan *plan = NULL;
    ox_status st = ox_memplan_build(g, NULL, &plan, err);
    if (st != OX_OK)
        return st;
    out->peak_activation_bytes = plan->arena_bytes;
    out->activation_lower_bound = plan->lower_bound;
    out->peak_known = plan->complete;
    out->memory_bytes = sat_add(out->weights_bytes, out->peak_activation_bytes);
    ox_memplan_free(plan);
    return OX_OK;
}

/* ---- formatting ----------------------------------------------------------------- */

const char *ox_fmt_cost(int64_t value, int64_t lower, bool known, bool upper,
                        int n_unknown, char *buf, size_t len)
{
    char v[32];
    if (!buf || !len)
        return "";
    if (known)
        snprintf(buf, len, "%s%s", upper ? "<= " : "", ox_fmt_count(value, true, v, sizeof v));
    else if (lower > 0 && n_unknown > 0)
        snprintf(buf, len, ">= %s (%d node%s unknown)", ox_fmt_count(lower, true, v, sizeof v),
                 n_unknown, n_unknown == 1 ? "" : "s");
    else
        snprintf(buf, len, "?");
    return buf;
}

const char *ox_fmt_model_macs(const ox_model_cost *c, char *buf, size_t len)
{
    return ox_fmt_cost(c->macs, c->macs_lower, c->known, c->n_upper > 0, c->n_unknown,
                       buf, len);
}

const char *ox_fmt_model_flops(const ox_model_cost *c, char *buf, size_t len)
{
    return ox_fmt_cost(c->flops, c->flops_lower, c->known, c->n_upper > 0, c->n_unknown,
                       buf, len);
}

const char *ox_fmt_node_macs(const ox_cost *c, char *buf, size_t len)
{
    return ox_fmt_cost(c->macs, 0, c->known, c->upper, 0, buf, len);
}
