/* to_fp16 (category precision, opt-in): float32 weights and activations to
 * float16. Ops on the block list (onnxconverter-common's default list, plus
 * the pass option "keep-fp32") and ops whose schema fixes float32 stay in
 * float32; Casts appear only where a float16 value meets a float32 reader
 * or the other way round, one per value and graph, and a Cast next to an
 * existing Cast is merged into it or cancels it. Graph inputs and outputs
 * keep float32 unless the option "fp16-io" is set; If/Loop/Scan bodies are
 * converted with float32 interfaces (their owners are unchanged).
 *
 * The pass converts the whole model in its main-graph invocation (the
 * manager visits bodies first, but a body must know which outer values
 * became float16), so invocations on subgraphs do nothing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ptrmap.h"
#include "passes/pass_internal.h"
#include "passes/to_fp16.h"

/* onnxconverter-common's DEFAULT_OP_BLOCK_LIST (float16.py), matched by op
 * type as it does. */
static const char *const default_block[] = {
    "ArrayFeatureExtractor", "Binarizer", "CastMap", "CategoryMapper", "DictVectorizer",
    "FeatureVectorizer", "Imputer", "LabelEncoder", "LinearClassifier", "LinearRegressor",
    "Normalizer", "OneHotEncoder", "RandomUniformLike", "SVMClassifier", "SVMRegressor",
    "Scaler", "TreeEnsembleClassifier", "TreeEnsembleRegressor", "ZipMap",
    "NonMaxSuppression", "TopK", "RoiAlign", "Resize", "Range", "CumSum", "Min", "Max",
    "Upsample", NULL,
};

/* Kept whatever the lists say: schemas that fix float32 for a tensor
 * (quantization scales), ops whose output type is an attribute, control
 * flow (bodies keep float32 interfaces) and sequence/optional ops. */
static const char *const always_kept[] = {
    "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "QLinearConv",
    "QLinearMatMul", "MatMulIntegerToFloat", "DynamicQuantizeMatMul", "ConvInteger",
    "MatMulInteger", "EyeLike", "RandomNormal", "RandomUniform", "RandomNormalLike",
    "Multinomial", "Bernoulli", "CastLike", "If", "Loop", "Scan", "SequenceMap",
    "SequenceConstruct", "SequenceInsert", "SequenceAt", "SequenceErase", "SequenceLength",
    "SequenceEmpty", "SplitToSequence", "ConcatFromSequence", "Optional",
    "OptionalGetElement", "OptionalHasElement", "Constant", "ConstantOfShape", "BitCast",
    /* float32-only schemas (or, MeanVarianceNormalization, a function body
     * typed float32) and output types chosen by attribute */
    "Range", "NonMaxSuppression", "MeanVarianceNormalization", "TfIdfVectorizer",
    "MelWeightMatrix", "BlackmanWindow", "HannWindow", "HammingWindow", NULL,
};

/* Inputs a schema types tensor(float) only, whatever T is, and Resize's
 * roi (crop coordinates lose too much in float16): they stay float32 when
 * the op itself runs in float16 (--keep-fp32 "=..."). */
static bool fixed_f32_input(const ox_node *n, int j)
{
    if (!ox_node_is_default_domain(n))
        return false;
    return ((j == 1 || j == 2) && !strcmp(n->op_type, "Resize")) ||
           (j == 1 && !strcmp(n->op_type, "Upsample"));
}

const char *const *ox__fp16_block_list(void)
{
    return default_block;
}

static bool in_list(const char *const *l, const char *op)
{
    for (int i = 0; op && l[i]; i++)
        if (!strcmp(l[i], op))
            return true;
    return false;
}

bool ox__fp16_default_blocked(const char *op_type)
{
    return in_list(default_block, op_type);
}

/* op in the comma-separated list s (NULL: empty). */
static bool in_csv(const char *s, const char *op)
{
    size_t n = strlen(op);
    while (s && *s) {
        const char *e = strchr(s, ',');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (len == n && !strncmp(s, op, n))
            return true;
        s += len + (e ? 1 : 0);
    }
    return false;
}

ox_tensor *ox__fp16_tensor(const ox_tensor *t, ox_fp16_clamp *cl)
{
    if (!t || t->dtype != OX_DT_FLOAT)
        return NULL;
    ox_tensor *o = ox_tensor_new(OX_DT_FLOAT16, t->rank, t->dims);
    if (!o)
        return NULL;
    const unsigned char *s = ox_tensor_data(t);
    uint16_t *d = ox_tensor_data(o);
    for (int64_t i = 0; i < t->numel && s && d; i++) {
        float f;
        memcpy(&f, s + 4 * i, 4);   /* mapped data need not be aligned */
        if (isfinite(f) && fabsf(f) > (float)OX_FP16_MAX) {
            f = f > 0 ? (float)OX_FP16_MAX : -(float)OX_FP16_MAX;
            if (cl)
                cl->over++;
        } else if (f != 0 && fabsf(f) < (float)(OX_FP16_MIN_POS / 2) * 1.0000001f) {
            /* Would round to zero (2^-25 itself ties to the even 0). */
            f = f > 0 ? (float)OX_FP16_MIN_POS : -(float)OX_FP16_MIN_POS;
            if (cl)
                cl->under++;
        }
        d[i] = ox_f32_to_f16(f);
    }
    return o;
}

/* ---- the conversion ------------------------------------------------------ */

/* K_CONV runs in float16; K_KEEP stays float32; K_CAST is a Cast (reads
 * any type, its `to` decides); K_ANY reads any type and writes no float
 * (Shape, Size): neither needs a Cast in front. */
enum { K_OTHER = 0, K_CONV, K_KEEP, K_CAST, K_ANY };

typedef struct fp16_run {
    ox_pass_ctx *c;
    const char *keep;       /* --keep-fp32 list */
    bool io16;              /* --fp16-io */
    ox_ptrmap lowered;      /* values this run made float16 */
    ox_ptrmap kinds;        /* node -> K_* + 1 */
    ox_fp16_clamp clamp;
    int64_t consts;         /* constants converted */
    int64_t casts;          /* Casts inserted */
    int64_t merged;         /* Casts merged into or cancelled by another */
    int64_t kept;           /* float nodes kept in float32 */
    char kept_ops[160];     /* their op types, for the note */
    bool oom;
} fp16_run;

static bool is_float_tensor(const ox_value *v, ox_dtype dt)
{
    if (!v)
        return false;
    if (v->type && v->type->kind == OX_TYPE_TENSOR)
        return v->type->elem == dt;
    return v->init && v->init->dtype == dt;
}

static bool lowered(const fp16_run *r, const ox_value *v)
{
    return v && ox_ptrmap_get(&r->lowered, v) != NULL;
}

static int kind_of(fp16_run *r, const ox_node *n);

/* A Mul of quantize_dynamic's integer form (quantize.c): the product of
 * DynamicQuantizeLinear's scale with the weight scales, or that scale times
 * the float Cast of a MatMulInteger/ConvInteger int32 sum. Both stay float32
 * when quantize_dynamic ran first: the sums reach 1e5 and more (float16
 * overflows at 65504) and the scale products 1e-7 (float16 subnormals keep a
 * few bits), so only the dequantized result is in float16's range. */
static bool dequant_mul(const ox_node *n, int depth)
{
    if (depth > 2 || !ox_node_is_default_domain(n) || strcmp(n->op_type, "Mul"))
        return false;
    for (int i = 0; i < n->n_inputs; i++) {
        const ox_node *p = n->inputs[i] ? n->inputs[i]->producer : NULL;
        if (!p)
            continue;
        if (!strcmp(p->op_type, "DynamicQuantizeLinear"))
            return true;
        const ox_node *q = !strcmp(p->op_type, "Cast") && p->n_inputs == 1 && p->inputs[0]
                               ? p->inputs[0]->producer : NULL;
        if (q && (!strcmp(q->op_type, "MatMulInteger") || !strcmp(q->op_type, "ConvInteger")))
            return true;
        if (dequant_mul(p, depth + 1))
            return true;
    }
    return false;
}

static int classify(fp16_run *r, const ox_node *n)
{
    const char *d = n->domain ? n->domain : "";
    bool std = !*d || !strcmp(d, "ai.onnx");
    if (std && !strcmp(n->op_type, "Cast"))
        return K_CAST;
    if (std && (!strcmp(n->op_type, "Shape") || !strcmp(n->op_type, "Size")))
        return K_ANY;
    /* ai.onnx.ml schemas are float32 (or double) only. */
    bool known = std || !strcmp(d, "com.microsoft");
    /* "=A,B" replaces the default list, "A,B" adds to it. */
    bool own = r->keep && r->keep[0] == '=';
    if (!known || (!own && in_list(default_block, n->op_type)) ||
        in_list(always_kept, n->op_type) || in_csv(own ? r->keep + 1 : r->keep, n->op_type))
        return K_KEEP;
    for (int i = 0; i < n->n_attrs; i++)
        if (n->attrs[i].type == OX_ATTR_GRAPH || n->attrs[i].type == OX_ATTR_GRAPHS)
            return K_KEEP;
    if (std && dequant_mul(n, 0))
        return K_KEEP;
    /* A model-local function's body is typed for what it was written for. */
    const ox_model *m = n->graph ? n->graph->model : NULL;
    for (int i = 0; m && i < m->n_functions; i++)
        if (!strcmp(m->functions[i].name, n->op_type) &&
            !strcmp(m->functions[i].domain ? m->functions[i].domain : "", d))
            return K_KEEP;
    /* LayerNormalization's Mean/InvStdDev are float32 by schema (U). */
    if (std && !strcmp(n->op_type, "LayerNormalization"))
        for (int k = 1; k < n->n_outputs; k++)
            if (n->outputs[k] && (n->outputs[k]->n_uses || n->outputs[k]->is_output))
                return K_KEEP;
    return K_CONV;
}

static int kind_of(fp16_run *r, const ox_node *n)
{
    void *k = ox_ptrmap_get(&r->kinds, n);
    if (k)
        return (int)(intptr_t)k - 1;
    int v = classify(r, n);
    if (!ox_ptrmap_put(&r->kinds, n, (void *)(intptr_t)(v + 1)))
        r->oom = true;
    return v;
}

/* Every reader of v is a float16 node of v's graph, or reads any type (no
 * subgraph reads, not a graph output), and one is float16: v itself can
 * become float16. */
static bool readers_all_conv(fp16_run *r, const ox_value *v)
{
    if (v->is_output || !v->n_uses)
        return false;
    bool conv = false;
    for (int i = 0; i < v->n_uses; i++) {
        const ox_node *u = v->uses[i].node;
        if (!u || ox__pass_gone(u))
            continue;
        int k = v->uses[i].input < 0 ? K_KEEP : kind_of(r, u);
        if (k == K_ANY)
            continue;
        if (k != K_CONV || fixed_f32_input(u, v->uses[i].input))
            return false;
        conv = true;
    }
    return conv;
}

/* Some reader of v is a float16 node reading it as T. */
static bool any_conv_reader(fp16_run *r, const ox_value *v)
{
    for (int i = 0; i < v->n_uses; i++) {
        const ox_node *u = v->uses[i].node;
        if (u && !ox__pass_gone(u) && v->uses[i].input >= 0 && kind_of(r, u) == K_CONV &&
            !fixed_f32_input(u, v->uses[i].input))
            return true;
    }
    return false;
}

static void set_elem(ox_value *v, ox_dtype dt)
{
    if (v->type && v->type->kind == OX_TYPE_TENSOR)
        v->type->elem = dt;
    else if (!v->type || v->type->kind == OX_TYPE_NONE) {
        ox_type *t = ox_type_new_tensor(dt, 0, NULL);
        if (t) {
            t->has_shape = false;
            ox_type_free(v->type);
            v->type = t;
        }
    }
    if (v->decl && v->decl->kind == OX_TYPE_TENSOR &&
        (v->decl->elem == OX_DT_FLOAT || v->decl->elem == OX_DT_FLOAT16))
        v->decl->elem = dt;
}

static void lower(fp16_run *r, ox_value *v)
{
    set_elem(v, OX_DT_FLOAT16);
    ox_tensor_free(v->known);   /* inference propagates it again */
    v->known = NULL;
    if (!ox_ptrmap_put(&r->lowered, v, (void *)1))
        r->oom = true;
}

/* A new value named from v with v's shape and element type dt. */
static ox_value *new_like(ox_graph *g, const ox_value *v, const char *suffix, ox_dtype dt)
{
    char hint[256];
    snprintf(hint, sizeof hint, "%.200s_%s", v->name ? v->name : "v", suffix);
    ox_value *w = ox_graph_new_value(g, hint);
    if (!w)
        return NULL;
    ox_type *t = v->type && v->type->kind == OX_TYPE_TENSOR ? ox_type_clone(v->type)
                                                              : ox_type_new_tensor(dt, 0, NULL);
    if (t) {
        if (!(v->type && v->type->kind == OX_TYPE_TENSOR))
            t->has_shape = false;
        t->elem = dt;
        ox_type_free(w->type);
        w->type = t;
    }
    return w;
}

/* Cast(x -> to) into a new value of g; NULL on OOM. */
static ox_value *add_cast(fp16_run *r, ox_graph *g, ox_value *x, ox_dtype to, const char *sfx)
{
    ox_value *y = new_like(g, x, sfx, to);
    char *name = ox_model_unique_node_name(r->c->m, "Cast");
    ox_node *n = y && name ? ox_node_new(g, "Cast", "", name, 1, &x, 1, &y) : NULL;
    free(name);
    if (!n || !ox_node_set_attr_i(n, "to", to)) {
        r->oom = true;
        return NULL;
    }
    r->casts++;
    ox__pass_did(r->c);
    return y;
}

/* The float16 form of v for a float16 reader in g: a converted copy of a
 * constant, the input of a Cast that produced v (merged or cancelled), or
 * a new Cast. cache: per graph. */
static ox_value *as_fp16(fp16_run *r, ox_graph *g, ox_value *v, ox_ptrmap *cache)
{
    ox_value *w = ox_ptrmap_get(cache, v);
    if (w)
        return w;
    const ox_tensor *t = ox__pass_const(v);
    if (t && t->dtype == OX_DT_FLOAT) {
        ox_tensor *h = ox__fp16_tensor(t, &r->clamp);
        char hint[256];
        snprintf(hint, sizeof hint, "%.200s_fp16", v->name);
        w = h ? ox__pass_new_init(g, hint, h) : NULL;
        if (w) {
            r->consts++;
            ox__pass_did(r->c);
        }
    } else {
        ox_node *p = v->producer;
        ox_value *x = p && ox_node_is(p, "Cast") && p->n_inputs == 1 ? p->inputs[0] : NULL;
        if (x && is_float_tensor(x, OX_DT_FLOAT16)) {
            w = x;                       /* fp16 -> float -> fp16 */
            r->merged++;
            ox__pass_did(r->c);
        } else if (x && x->type && x->type->kind == OX_TYPE_TENSOR &&
                   x->type->elem != OX_DT_UNDEFINED && x->type->elem != OX_DT_STRING) {
            w = add_cast(r, g, x, OX_DT_FLOAT16, "fp16");   /* x -> fp16 directly */
            if (w)
                r->merged++;
        } else {
            w = add_cast(r, g, v, OX_DT_FLOAT16, "fp16");
        }
    }
    if (!w || !ox_ptrmap_put(cache, v, w))
        r->oom = true;
    return w;
}

/* The float32 form of a value this run lowered, for a float32 reader. */
static ox_value *as_fp32(fp16_run *r, ox_graph *g, ox_value *v, ox_ptrmap *cache)
{
    ox_value *w = ox_ptrmap_get(cache, v);
    if (w)
        return w;
    ox_node *p = v->producer;
    ox_value *x = p && ox_node_is(p, "Cast") && p->n_inputs == 1 ? p->inputs[0] : NULL;
    if (x && is_float_tensor(x, OX_DT_FLOAT)) {
        w = x;                           /* float -> fp16 -> float */
        r->merged++;
        ox__pass_did(r->c);
    } else {
        w = add_cast(r, g, v, OX_DT_FLOAT, "fp32");
    }
    if (!w || !ox_ptrmap_put(cache, v, w))
        r->oom = true;
    return w;
}

/* v (a graph output produced by a node of g) keeps type `outer`; its
 * producer writes a new value of type `inner` instead, which its other
 * readers read, and a Cast makes v from it. Returns the new value. */
static ox_value *boundary(fp16_run *r, ox_graph *g, ox_value *v, ox_dtype inner,
                          ox_dtype outer)
{
    ox_node *p = v->producer;
    ox_value *u = new_like(g, v, inner == OX_DT_FLOAT16 ? "fp16" : "fp32", inner);
    if (!p || !u) {
        r->oom = !u;
        return NULL;
    }
    ox_node_set_output(p, v->producer_output, u);
    /* Node readers move to u (a copy: set_input edits v's use list). */
    int n = v->n_uses;
    ox_use *uses = n ? malloc((size_t)n * sizeof *uses) : NULL;
    if (n && !uses) {
        r->oom = true;
        return NULL;
    }
    if (n)
        memcpy(uses, v->uses, (size_t)n * sizeof *uses);
    for (int i = 0; i < n; i++)
        if (uses[i].input >= 0 && uses[i].node && !ox__pass_gone(uses[i].node) &&
            uses[i].node->inputs[uses[i].input] == v)
            ox__pass_set_input(r->c, uses[i].node, uses[i].input, u);
    free(uses);
    char *name = ox_model_unique_node_name(r->c->m, "Cast");
    ox_node *cn = name ? ox_node_new(g, "Cast", "", name, 1, &u, 1, &v) : NULL;
    free(name);
    if (!cn || !ox_node_set_attr_i(cn, "to", outer)) {
        r->oom = true;
        return NULL;
    }
    set_elem(v, outer);
    r->casts++;
    ox__pass_did(r->c);
    return u;
}

static void note_kept(fp16_run *r, const ox_node *n)
{
    r->kept++;
    size_t len = strlen(r->kept_ops);
    char key[80];
    snprintf(key, sizeof key, "%s,", n->op_type);
    /* Each op type once ("Range,Resize,"). */
    const char *s = r->kept_ops;
    size_t kl = strlen(key);
    while (*s) {
        if (!strncmp(s, key, kl))
            return;
        const char *e = strchr(s, ',');
        s = e ? e + 1 : s + strlen(s);
    }
    if (len + kl < sizeof r->kept_ops)
        memcpy(r->kept_ops + len, key, kl + 1);
}

/* Retargets node n (Cast to float, Constant or ConstantOfShape of float)
 * to produce float16 when every reader of its output is a float16 node. */
static void retarget(fp16_run *r, ox_node *n)
{
    ox_value *v = n->n_outputs == 1 ? n->outputs[0] : NULL;
    if (!v || !is_float_tensor(v, OX_DT_FLOAT) || !readers_all_conv(r, v))
        return;
    if (ox_node_is(n, "Cast")) {
        ox_value *x = n->n_inputs == 1 ? n->inputs[0] : NULL;
        if (!x || ox_node_attr_i(n, "to", 0) != OX_DT_FLOAT)
            return;
        if (is_float_tensor(x, OX_DT_FLOAT16) && ox__pass_bypass(r->c, n, x, v)) {
            r->merged++;     /* Cast(fp16 -> float16): nothing left to do */
            ox__pass_did(r->c);
            return;
        }
        ox_node_set_attr_i(n, "to", OX_DT_FLOAT16);
    } else {
        const char *an = "value";   /* value_float(s) stay: a Cast reads them */
        ox_attr *a = ox_node_attr(n, an);
        ox_tensor *h = NULL;
        if (a && a->type == OX_ATTR_TENSOR && a->t && a->t->dtype == OX_DT_FLOAT)
            h = ox__fp16_tensor(a->t, &r->clamp);
        else if (!a && ox_node_is(n, "ConstantOfShape"))
            h = ox_tensor_new(OX_DT_FLOAT16, 1, (const int64_t[]){1});   /* 0.0 */
        if (!h)
            return;
        if (!ox_node_set_attr_t(n, an, h)) {
            r->oom = true;
            return;
        }
        r->consts++;
    }
    lower(r, v);
    ox__pass_did(r->c);
}

static void convert_graph(fp16_run *r, ox_graph *g, bool main);

static void convert_graph(fp16_run *r, ox_graph *g, bool main)
{
    ox_ptrmap c16 = {0}, c32 = {0};
    bool io16 = main && r->io16;
    int n0 = g->n_nodes;
    /* Graph inputs (main graph, --fp16-io) that a float16 node reads (one
     * read only by float32 ops, e.g. Resize's roi, keeps its precision). */
    for (int i = 0; io16 && i < g->n_inputs; i++) {
        ox_value *v = g->inputs[i];
        if (v && !v->init && is_float_tensor(v, OX_DT_FLOAT) && any_conv_reader(r, v)) {
            lower(r, v);
            ox__pass_did(r->c);
        }
    }
    /* Initializers all of whose readers are float16 nodes: in place. */
    for (int i = 0; i < g->n_values; i++) {
        ox_value *v = g->values[i];
        const ox_tensor *t = ox__pass_const(v);
        if (!t || t->dtype != OX_DT_FLOAT || !readers_all_conv(r, v))
            continue;
        ox_tensor *h = ox__fp16_tensor(t, &r->clamp);
        if (!h) {
            r->oom = true;
            break;
        }
        ox_tensor_set_name(h, v->name);
        if (ox_graph_set_initializer(g, v, h) != OX_OK) {
            r->oom = true;
            break;
        }
        lower(r, v);
        r->consts++;
        ox__pass_did(r->c);
    }
    /* Outputs, in graph order so that a Cast sees whether its input is
     * already float16. */
    for (int i = 0; i < n0 && !r->oom; i++) {
        ox_node *n = g->nodes[i];
        if (ox__pass_gone(n))
            continue;
        int k = kind_of(r, n);
        if (k == K_CAST || (k == K_KEEP && (ox_node_is(n, "Constant") ||
                                            ox_node_is(n, "ConstantOfShape")) &&
                                           !in_csv(r->keep, n->op_type) &&
                                           !(r->keep && in_csv(r->keep + 1, n->op_type)))) {
            retarget(r, n);
            continue;
        }
        if (k != K_CONV)
            continue;
        bool ln = ox_node_is(n, "LayerNormalization");
        for (int o = 0; o < n->n_outputs && !r->oom; o++) {
            ox_value *v = n->outputs[o];
            if (!v || !is_float_tensor(v, OX_DT_FLOAT) || (ln && o > 0))
                continue;
            if (v->is_output && !io16) {
                ox_value *u = boundary(r, g, v, OX_DT_FLOAT16, OX_DT_FLOAT);
                if (u && !ox_ptrmap_put(&r->lowered, u, (void *)1))
                    r->oom = true;
                if (u && !ox_ptrmap_put(&c32, u, v))   /* its float32 twin */
                    r->oom = true;
                continue;
            }
            lower(r, v);
            ox__pass_did(r->c);
        }
    }
    /* --fp16-io: float32 outputs of kept nodes get a Cast to float16. */
    for (int i = 0; io16 && i < g->n_outputs && !r->oom; i++) {
        ox_value *v = g->outputs[i];
        if (v && v->producer && is_float_tensor(v, OX_DT_FLOAT) && !lowered(r, v))
            boundary(r, g, v, OX_DT_FLOAT, OX_DT_FLOAT16);
    }
    /* Inputs: float16 nodes read float16, float32 nodes read float32. */
    for (int i = 0; i < n0 && !r->oom; i++) {
        ox_node *n = g->nodes[i];
        if (ox__pass_gone(n))
            continue;
        int k = kind_of(r, n);
        if (k == K_CONV) {
            for (int j = 0; j < n->n_inputs && !r->oom; j++) {
                ox_value *v = n->inputs[j];
                if (v && fixed_f32_input(n, j) && lowered(r, v)) {
                    ox_value *w = as_fp32(r, g, v, &c32);
                    if (w)
                        ox__pass_set_input(r->c, n, j, w);
                    continue;
                }
                if (!v || !is_float_tensor(v, OX_DT_FLOAT) || fixed_f32_input(n, j))
                    continue;
                ox_value *w = as_fp16(r, g, v, &c16);
                if (w)
                    ox__pass_set_input(r->c, n, j, w);
            }
        } else if (k == K_KEEP) {
            bool any = false;
            for (int j = 0; j < n->n_inputs && !r->oom; j++) {
                ox_value *v = n->inputs[j];
                any |= is_float_tensor(v, OX_DT_FLOAT) || lowered(r, v);
                if (!v || !lowered(r, v))
                    continue;
                ox_value *w = as_fp32(r, g, v, &c32);
                if (w)
                    ox__pass_set_input(r->c, n, j, w);
            }
            if (any)
                note_kept(r, n);
        }
    }
    /* A body's outputs keep float32 (the owner's outputs are unchanged):
     * one that is an outer value this run lowered reads a Cast. */
    for (int i = 0; !main && i < g->n_outputs && !r->oom; i++) {
        ox_value *v = g->outputs[i];
        if (!v || !lowered(r, v) || v->graph == g)
            continue;
        ox_value *w = as_fp32(r, g, v, &c32);
        if (w) {
            g->outputs[i] = w;
            w->is_output = true;
            bool still = false;
            for (int k = 0; k < g->n_outputs; k++)
                still |= g->outputs[k] == v;
            v->is_output = still;
        }
    }
    ox_ptrmap_free(&c16);
    ox_ptrmap_free(&c32);
    /* Bodies, after their owner's graph: they read its values as they are
     * now. */
    for (int i = 0; i < n0 && !r->oom; i++) {
        ox_node *n = g->nodes[i];
        for (int a = 0; !ox__pass_gone(n) && a < n->n_attrs; a++) {
            ox_attr *at = &n->attrs[a];
            if (at->type == OX_ATTR_GRAPH && at->g)
                convert_graph(r, at->g, false);
            for (int k = 0; at->type == OX_ATTR_GRAPHS && k < at->n; k++)
                if (at->graphs[k])
                    convert_graph(r, at->graphs[k], false);
        }
    }
}

static ox_status pass_to_fp16(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    if (g != c->m->graph || !ox__pass_may(c))
        return OX_OK;
    if (ox_model_opset(c->m, "") < 0) {
        /* The boundary Casts would need the default domain. */
        ox__pass_note(c, "to_fp16 not applied: the model does not import the default ONNX "
                      "domain (its Casts would need it)");
        return OX_OK;
    }
    fp16_run r = {.c = c};
    const char *io = ox_pm_option(c->pm, "fp16-io");
    r.keep = ox_pm_option(c->pm, "keep-fp32");
    r.io16 = io && strcmp(io, "0") && strcmp(io, "false");
    int before = c->rewrites;
    convert_graph(&r, g, true);
    ox_ptrmap_free(&r.lowered);
    ox_ptrmap_free(&r.kinds);
    if (r.oom)
        return ox_errorf(err, OX_ENOMEM, "to_fp16: out of memory");
    if (c->rewrites > before) {
        size_t kl = strlen(r.kept_ops);
        if (kl)
            r.kept_ops[kl - 1] = 0;
        ox__pass_note(c,
                      "to_fp16: %lld constant(s) converted, %lld value(s) clamped to +-65504, "
                      "%lld tiny value(s) raised to +-2^-24, %lld Cast(s) inserted, %lld "
                      "merged or cancelled, %lld node(s) kept in float32%s%s%s",
                      (long long)r.consts, (long long)r.clamp.over, (long long)r.clamp.under,
                      (long long)r.casts, (long long)r.merged, (long long)r.kept,
                      r.kept ? " (" : "", r.kept_ops, r.kept ? ")" : "");
    }
    return OX_OK;
}

const ox_pass ox__passes_to_fp16[] = {
    {"to_fp16",
     "float32 weights and activations to float16 (block list and --keep-fp32 kept in float32, "
     "constants clamped, Casts at the boundaries; opt-in)",
     OX_PASS_PRECISION, OX_TARGET_ONNX, OX_LEVEL_BASIC, false, pass_to_fp16, true},
    {0},
};
