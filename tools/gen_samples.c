/* Writes the bundled sample models with the project's own IR API: a tiny
 * CNN and a tiny transformer block written the way the PyTorch exporter
 * writes it (decomposed LayerNorm, erf GELU, Shape/Gather/Unsqueeze/Concat/
 * Reshape chains, dynamic batch and sequence). With --large it writes the
 * 12-layer, hidden-768 transformer (about 440 MB) used by the benchmarks.
 *
 *   gen_samples OUTDIR             -> OUTDIR/tiny_cnn.onnx, OUTDIR/tiny_transformer.onnx
 *   gen_samples --large FILE.onnx  -> the benchmark model
 *   gen_samples --wide N FILE.onnx -> a chain of N cheap nodes (TUI scrolling bench)
 *   gen_samples --chain OP N FILE.onnx -> Relu then N eliminable OP nodes (Identity,
 *                                     Dropout or Cast to float), or Mixed (those and
 *                                     Neg/Abs/Sigmoid that stay): the optimize bench
 *   gen_samples --fuse-chain KIND N FILE.onnx -> N nodes of one fusable pattern
 *                                     repeated (gemm, convbn, silu, hardswish): the
 *                                     fusion bench
 *   gen_samples --transformer LAYERS HIDDEN FILE.onnx -> the same block, any size
 *   gen_samples --if-branch FILE.onnx -> a VAD-style model whose int64 `sr`
 *                                        input picks an If branch (CLI tests) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnxscope/infer.h"
#include "onnxscope/io.h"
#include "onnxscope/ir.h"

/* ---- deterministic random numbers (mulberry32) ------------------------- */

static uint32_t rng_state;

static uint32_t rng_next(void)
{
    uint32_t z = (rng_state += 0x6D2B79F5u);
    z = (z ^ (z >> 15)) * (z | 1u);
    z ^= z + (z ^ (z >> 7)) * (z | 61u);
    return z ^ (z >> 14);
}

static float rng_uniform(float lo, float hi)
{
    return lo + (hi - lo) * (float)(rng_next() / 4294967296.0);
}

/* ---- building blocks -------------------------------------------------------- */

typedef struct builder {
    ox_model *m;
    ox_graph *g;
    int counter;
} builder;

static void die(const char *what)
{
    fprintf(stderr, "gen_samples: %s\n", what);
    exit(1);
}

static ox_value *weight(builder *b, const char *name, int rank, const int64_t *dims,
                        float scale)
{
    ox_tensor *t = ox_tensor_new(OX_DT_FLOAT, rank, dims);
    if (!t)
        die("out of memory");
    float *d = ox_tensor_mutable_data(t);
    for (int64_t i = 0; i < t->numel; i++)
        d[i] = rng_uniform(-scale, scale);
    ox_value *v = ox_graph_value(b->g, name);
    if (!v || ox_graph_set_initializer(b->g, v, t) != OX_OK)
        die("cannot add initializer");
    return v;
}

static ox_value *const_fill(builder *b, const char *name, int rank, const int64_t *dims,
                            float value)
{
    ox_tensor *t = ox_tensor_new(OX_DT_FLOAT, rank, dims);
    if (!t)
        die("out of memory");
    float *d = ox_tensor_mutable_data(t);
    for (int64_t i = 0; i < t->numel; i++)
        d[i] = value;
    ox_value *v = ox_graph_value(b->g, name);
    if (!v || ox_graph_set_initializer(b->g, v, t) != OX_OK)
        die("cannot add initializer");
    return v;
}

static ox_node *node(builder *b, const char *op, const char *name, int n_in,
                     ox_value *const *in, int n_out, ox_value **out)
{
    char vname[160];
    for (int i = 0; i < n_out; i++) {
        snprintf(vname, sizeof vname, "%s_output_%d", name, i);
        out[i] = ox_graph_value(b->g, vname);
    }
    ox_node *n = ox_node_new(b->g, op, "", name, n_in, in, n_out, out);
    if (!n)
        die("cannot add node");
    return n;
}

/* One-output node helper. */
static ox_value *op1(builder *b, const char *op, int n_in, ox_value *const *in,
                     ox_node **out_node)
{
    char name[96];
    snprintf(name, sizeof name, "/%s_%d", op, b->counter++);
    ox_value *o;
    ox_node *n = node(b, op, name, n_in, in, 1, &o);
    if (out_node)
        *out_node = n;
    return o;
}

/* A Constant node holding an int64 vector, as the exporter emits. */
static ox_value *const_i64(builder *b, int n, const int64_t *vals, bool scalar)
{
    int64_t dims[1] = {n};
    ox_tensor *t = ox_tensor_new(OX_DT_INT64, scalar ? 0 : 1, dims);
    if (!t)
        die("out of memory");
    memcpy(ox_tensor_mutable_data(t), vals, sizeof(int64_t) * (size_t)n);
    ox_node *cn;
    ox_value *o = op1(b, "Constant", 0, NULL, &cn);
    ox_node_set_attr_t(cn, "value", t);
    return o;
}

static ox_value *const_f32(builder *b, float v)
{
    ox_tensor *t = ox_tensor_new(OX_DT_FLOAT, 0, NULL);
    if (!t)
        die("out of memory");
    *(float *)ox_tensor_mutable_data(t) = v;
    ox_node *cn;
    ox_value *o = op1(b, "Constant", 0, NULL, &cn);
    ox_node_set_attr_t(cn, "value", t);
    return o;
}

static ox_value *bin(builder *b, const char *op, ox_value *x, ox_value *y)
{
    ox_value *in[2] = {x, y};
    return op1(b, op, 2, in, NULL);
}

static ox_value *un(builder *b, const char *op, ox_value *x)
{
    return op1(b, op, 1, &x, NULL);
}

static void finish(builder *b, const char *path)
{
    ox_error err = {0};
    if (ox_graph_toposort(b->g, &err) != OX_OK)
        die(err.msg);
    /* Inference gives the outputs their (symbolic) shapes and the saved
     * file value_info for every intermediate. */
    ox_infer_opts io = {0};
    if (ox_infer_model(b->m, &io, &err) != OX_OK)
        die(err.msg);
    ox_save_opts so = {0};
    if (ox_save(b->m, path, &so, &err) != OX_OK) {
        fprintf(stderr, "gen_samples: %s: %s\n", path, err.msg);
        exit(3);
    }
    printf("wrote %s (%d nodes)\n", path, b->g->n_nodes);
    ox_model_free(b->m);
}

static void start(builder *b, const char *graph_name, int64_t opset)
{
    memset(b, 0, sizeof *b);
    b->m = ox_model_new();
    if (!b->m)
        die("out of memory");
    b->m->ir_version = opset >= 17 ? 8 : 7;
    free(b->m->producer_name);
    b->m->producer_name = ox_strdup("onnxscope-gen_samples");
    free(b->m->producer_version);
    b->m->producer_version = ox_strdup("1");
    ox_model_set_opset(b->m, "", opset);
    b->g = b->m->graph ? b->m->graph : (b->m->graph = ox_graph_new(b->m, NULL));
    free(b->g->name);
    b->g->name = ox_strdup(graph_name);
}

static ox_value *input(builder *b, const char *name, ox_dtype dt, int rank,
                       const int64_t *dims, const char *const *params)
{
    ox_value *v = ox_graph_value(b->g, name);
    v->type = ox_type_new_tensor(dt, rank, dims);
    for (int i = 0; params && i < rank; i++)
        if (params[i]) {
            v->type->dims[i].value = -1;
            v->type->dims[i].param = ox_strdup(params[i]);
        }
    ox_graph_add_input(b->g, v);
    return v;
}

static void output(builder *b, ox_value *v, const char *name, ox_dtype dt)
{
    ox_error err = {0};
    if (ox_value_rename(v, name, &err) != OX_OK)
        die(err.msg);
    v->type = ox_type_new_tensor(dt, 0, NULL);
    v->type->has_shape = false;
    ox_graph_add_output(b->g, v);
}

/* ---- tiny CNN ---------------------------------------------------------------- */

static ox_value *conv_bn_relu(builder *b, ox_value *x, int cin, int cout, int idx)
{
    char n[64];
    int64_t wd[4] = {cout, cin, 3, 3}, cd[1] = {cout};
    snprintf(n, sizeof n, "conv%d.weight", idx);
    ox_value *w = weight(b, n, 4, wd, 1.0f / sqrtf((float)(cin * 9)));
    snprintf(n, sizeof n, "conv%d.bias", idx);
    ox_value *bias = weight(b, n, 1, cd, 0.1f);
    ox_value *in[5] = {x, w, bias};
    ox_node *cn;
    ox_value *y = op1(b, "Conv", 3, in, &cn);
    int64_t k[2] = {3, 3}, pads[4] = {1, 1, 1, 1};
    ox_node_set_attr_ints(cn, "kernel_shape", 2, k);
    ox_node_set_attr_ints(cn, "pads", 4, pads);
    ox_value *bn[5];
    bn[0] = y;
    const char *names[4] = {"scale", "bias", "mean", "var"};
    for (int i = 0; i < 4; i++) {
        snprintf(n, sizeof n, "bn%d.%s", idx, names[i]);
        bn[i + 1] = i == 3 ? weight(b, n, 1, cd, 0.2f) : weight(b, n, 1, cd, 0.5f);
    }
    /* Positive variance and a scale around 1. */
    float *var = ox_tensor_mutable_data(bn[4]->init);
    float *sc = ox_tensor_mutable_data(bn[1]->init);
    for (int i = 0; i < cout; i++) {
        var[i] = 0.5f + fabsf(var[i]);
        sc[i] += 1.0f;
    }
    ox_node *bnn;
    y = op1(b, "BatchNormalization", 5, bn, &bnn);
    ox_node_set_attr_f(bnn, "epsilon", 1e-5f);
    y = un(b, "Relu", y);
    ox_node *pn;
    y = op1(b, "MaxPool", 1, &y, &pn);
    int64_t pk[2] = {2, 2};
    ox_node_set_attr_ints(pn, "kernel_shape", 2, pk);
    ox_node_set_attr_ints(pn, "strides", 2, pk);
    return y;
}

static void gen_cnn(const char *path)
{
    builder b;
    rng_state = 1;
    start(&b, "tiny_cnn", 13);
    int64_t idims[4] = {1, 3, 32, 32};
    ox_value *x = input(&b, "input", OX_DT_FLOAT, 4, idims, NULL);
    ox_value *y = conv_bn_relu(&b, x, 3, 8, 1);
    y = conv_bn_relu(&b, y, 8, 16, 2);
    ox_node *fn;
    y = op1(&b, "Flatten", 1, &y, &fn);
    ox_node_set_attr_i(fn, "axis", 1);
    int64_t wd[2] = {10, 16 * 8 * 8}, bd[1] = {10};
    ox_value *in[3] = {y, weight(&b, "fc.weight", 2, wd, 1.0f / 32.0f),
                       weight(&b, "fc.bias", 1, bd, 0.1f)};
    ox_node *gn;
    y = op1(&b, "Gemm", 3, in, &gn);
    ox_node_set_attr_i(gn, "transB", 1);
    output(&b, y, "logits", OX_DT_FLOAT);
    finish(&b, path);
}

/* ---- transformer, exporter style -------------------------------------------- */

typedef struct tf_cfg {
    int layers, hidden, heads, ffn, vocab, max_pos;
} tf_cfg;

/* Shape(x)[i] as a 1-element vector: Shape -> Gather(i) -> Unsqueeze(0). */
static ox_value *dim_of(builder *b, ox_value *x, int64_t i)
{
    ox_value *s = un(b, "Shape", x);
    ox_value *idx = const_i64(b, 1, &i, true);
    ox_node *gn;
    ox_value *in[2] = {s, idx};
    ox_value *d = op1(b, "Gather", 2, in, &gn);
    ox_node_set_attr_i(gn, "axis", 0);
    int64_t zero = 0;
    ox_value *ax = const_i64(b, 1, &zero, false);
    ox_value *uin[2] = {d, ax};
    return op1(b, "Unsqueeze", 2, uin, NULL);
}

static ox_value *reshape_dyn(builder *b, ox_value *x, ox_value *ref, int n_tail,
                             const int64_t *tail)
{
    ox_value *parts[6];
    parts[0] = dim_of(b, ref, 0);
    parts[1] = dim_of(b, ref, 1);
    for (int i = 0; i < n_tail; i++)
        parts[2 + i] = const_i64(b, 1, &tail[i], false);
    ox_node *cn;
    ox_value *shape = op1(b, "Concat", 2 + n_tail, parts, &cn);
    ox_node_set_attr_i(cn, "axis", 0);
    ox_value *in[2] = {x, shape};
    return op1(b, "Reshape", 2, in, NULL);
}

static ox_value *transpose(builder *b, ox_value *x, const int64_t *perm)
{
    ox_node *tn;
    ox_value *y = op1(b, "Transpose", 1, &x, &tn);
    ox_node_set_attr_ints(tn, "perm", 4, perm);
    return y;
}

static ox_value *layer_norm(builder *b, ox_value *x, int hidden, const char *prefix)
{
    char n[96];
    int64_t axes[1] = {-1}, hd[1] = {hidden};
    ox_node *rn;
    ox_value *mean = op1(b, "ReduceMean", 1, &x, &rn);
    ox_node_set_attr_ints(rn, "axes", 1, axes);
    ox_value *d = bin(b, "Sub", x, mean);
    ox_value *sq = bin(b, "Pow", d, const_f32(b, 2.0f));
    ox_value *var = op1(b, "ReduceMean", 1, &sq, &rn);
    ox_node_set_attr_ints(rn, "axes", 1, axes);
    ox_value *std = un(b, "Sqrt", bin(b, "Add", var, const_f32(b, 1e-12f)));
    ox_value *y = bin(b, "Div", d, std);
    snprintf(n, sizeof n, "%s.weight", prefix);
    ox_value *gamma = const_fill(b, n, 1, hd, 1.0f);
    snprintf(n, sizeof n, "%s.bias", prefix);
    ox_value *beta = weight(b, n, 1, hd, 0.05f);
    return bin(b, "Add", bin(b, "Mul", y, gamma), beta);
}

static ox_value *linear(builder *b, ox_value *x, int in, int out, const char *prefix)
{
    char n[96];
    int64_t wd[2] = {in, out}, bd[1] = {out};
    snprintf(n, sizeof n, "%s.weight", prefix);
    ox_value *w = weight(b, n, 2, wd, 1.0f / sqrtf((float)in));
    snprintf(n, sizeof n, "%s.bias", prefix);
    ox_value *bias = weight(b, n, 1, bd, 0.02f);
    return bin(b, "Add", bin(b, "MatMul", x, w), bias);
}

static ox_value *attention(builder *b, ox_value *x, const tf_cfg *c, int layer)
{
    char p[96];
    int hd = c->hidden / c->heads;
    int64_t split[2] = {c->heads, hd};
    int64_t perm_q[4] = {0, 2, 1, 3}, perm_k[4] = {0, 2, 3, 1};
    ox_value *qkv[3];
    const char *nm[3] = {"query", "key", "value"};
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "encoder.layer.%d.attention.self.%s", layer, nm[i]);
        ox_value *h = linear(b, x, c->hidden, c->hidden, p);
        h = reshape_dyn(b, h, x, 2, split);
        qkv[i] = transpose(b, h, i == 1 ? perm_k : perm_q);
    }
    ox_value *scores = bin(b, "MatMul", qkv[0], qkv[1]);
    scores = bin(b, "Div", scores, const_f32(b, sqrtf((float)hd)));
    ox_node *sn;
    ox_value *probs = op1(b, "Softmax", 1, &scores, &sn);
    ox_node_set_attr_i(sn, "axis", -1);
    ox_value *ctx = bin(b, "MatMul", probs, qkv[2]);
    ctx = transpose(b, ctx, perm_q);
    int64_t merged[1] = {c->hidden};
    ctx = reshape_dyn(b, ctx, x, 1, merged);
    snprintf(p, sizeof p, "encoder.layer.%d.attention.output.dense", layer);
    return linear(b, ctx, c->hidden, c->hidden, p);
}

static ox_value *gelu_erf(builder *b, ox_value *x)
{
    ox_value *t = bin(b, "Div", x, const_f32(b, 1.4142135f));
    t = un(b, "Erf", t);
    t = bin(b, "Add", t, const_f32(b, 1.0f));
    t = bin(b, "Mul", x, t);
    return bin(b, "Mul", t, const_f32(b, 0.5f));
}

static void gen_transformer(const char *path, const tf_cfg *c, const char *gname)
{
    builder b;
    rng_state = 2;
    start(&b, gname, 13);
    int64_t idims[2] = {-1, -1};
    const char *params[2] = {"batch", "sequence"};
    ox_value *ids = input(&b, "input_ids", OX_DT_INT64, 2, idims, params);
    int64_t ed[2] = {c->vocab, c->hidden}, pd[2] = {c->max_pos, c->hidden};
    ox_value *emb = weight(&b, "embeddings.word_embeddings.weight", 2, ed, 0.5f);
    ox_value *pos = weight(&b, "embeddings.position_embeddings.weight", 2, pd, 0.1f);
    ox_value *gin[2] = {emb, ids};
    ox_node *gn;
    ox_value *x = op1(&b, "Gather", 2, gin, &gn);
    /* Positions 0..seq-1 sliced from the table, as in the exporter. */
    ox_value *seq = dim_of(&b, ids, 1);
    int64_t zero = 0, one = 0;
    ox_value *sin[4] = {pos, const_i64(&b, 1, &zero, false), seq,
                        const_i64(&b, 1, &one, false)};
    ox_value *pe = op1(&b, "Slice", 4, sin, NULL);
    x = bin(&b, "Add", x, pe);
    x = layer_norm(&b, x, c->hidden, "embeddings.LayerNorm");
    for (int l = 0; l < c->layers; l++) {
        char p[96];
        ox_value *a = attention(&b, x, c, l);
        snprintf(p, sizeof p, "encoder.layer.%d.attention.output.LayerNorm", l);
        x = layer_norm(&b, bin(&b, "Add", a, x), c->hidden, p);
        snprintf(p, sizeof p, "encoder.layer.%d.intermediate.dense", l);
        ox_value *h = gelu_erf(&b, linear(&b, x, c->hidden, c->ffn, p));
        snprintf(p, sizeof p, "encoder.layer.%d.output.dense", l);
        h = linear(&b, h, c->ffn, c->hidden, p);
        snprintf(p, sizeof p, "encoder.layer.%d.output.LayerNorm", l);
        x = layer_norm(&b, bin(&b, "Add", h, x), c->hidden, p);
    }
    output(&b, x, "last_hidden_state", OX_DT_FLOAT);
    finish(&b, path);
}

/* A long chain of cheap nodes, for list-scrolling benchmarks. */
static void gen_wide(const char *path, int n)
{
    builder b;
    rng_state = 3;
    start(&b, "chain", 13);
    int64_t dims[2] = {1, 16};
    ox_value *x = input(&b, "x", OX_DT_FLOAT, 2, dims, NULL);
    const char *ops[4] = {"Relu", "Neg", "Abs", "Sigmoid"};
    for (int i = 0; i < n; i++)
        x = un(&b, ops[i % 4], x);
    output(&b, x, "y", OX_DT_FLOAT);
    finish(&b, path);
}

/* x -> Relu -> N x OP -> y, where every OP computes its input unchanged:
 * `optimize` should leave the Relu alone (bench/chain_bench.sh). Mixed
 * keeps half the chain, so every rewriting pass sees a long graph. */
static void gen_chain(const char *path, const char *op, int n)
{
    builder b;
    start(&b, "chain", 13);
    int64_t dims[2] = {1, 16};
    ox_value *x = input(&b, "x", OX_DT_FLOAT, 2, dims, NULL);
    x = un(&b, "Relu", x);
    /* Mixed: Identity, Neg, Dropout, Abs, no-op Cast, Sigmoid in turn, so
     * that three passes rewrite and half the nodes stay. */
    static const char *mixed[6] = {"Identity", "Neg", "Dropout", "Abs", "Cast", "Sigmoid"};
    for (int i = 0; i < n; i++) {
        ox_node *nd;
        const char *o = strcmp(op, "Mixed") ? op : mixed[i % 6];
        x = op1(&b, o, 1, &x, &nd);
        if (!strcmp(o, "Cast"))
            ox_node_set_attr_i(nd, "to", OX_DT_FLOAT);
    }
    output(&b, x, "y", OX_DT_FLOAT);
    finish(&b, path);
}

/* An initializer of dims filled by fill(i) (shared by every unit of a chain:
 * a million private weights would weigh more than the graph). */
static ox_value *const_fn(builder *b, const char *name, int rank, const int64_t *dims,
                          float (*fill)(int64_t))
{
    ox_value *v = const_fill(b, name, rank, dims, 0.0f);
    float *d = ox_tensor_mutable_data(v->init);
    for (int64_t i = 0; i < v->init->numel; i++)
        d[i] = fill(i);
    return v;
}

static float fill_w(int64_t i) { return (float)((i * 7 % 13) - 6) / 16.0f; }
static float fill_small(int64_t i) { return (float)(i % 5) / 10.0f - 0.2f; }
static float fill_one(int64_t i) { return 1.0f + (float)(i % 3) / 8.0f; }

/* N nodes of one fusable pattern repeated along a chain (the fusion bench,
 * bench/chain_bench.sh): under `optimize --level all --target ort`
 *   gemm      MatMul + Add(bias) + Relu   -> FusedGemm     (3 nodes a unit)
 *   convbn    Conv + BatchNormalization + Relu -> FusedConv (3 nodes a unit)
 *   silu      x * Sigmoid(x)              -> QuickGelu     (2 nodes a unit)
 *   hardswish x * Clip(x + 3, 0, 6) / 6   -> HardSwish     (4 nodes a unit)
 * Weights and constants are shared by every unit, so one constant is read
 * by every unit (the use lists the passes must not scan per rewrite). */
static int gen_fuse_chain(const char *path, const char *kind, int n)
{
    builder b;
    rng_state = 5;
    start(&b, "fuse_chain", 14);
    int per = !strcmp(kind, "silu") ? 2 : !strcmp(kind, "hardswish") ? 4 : 3;
    int units = n / per > 0 ? n / per : 1;
    bool conv = !strcmp(kind, "convbn");
    int64_t xd4[4] = {1, 4, 2, 2}, xd2[2] = {1, 16};
    ox_value *x = input(&b, "x", OX_DT_FLOAT, conv ? 4 : 2, conv ? xd4 : xd2, NULL);
    if (!strcmp(kind, "gemm")) {
        int64_t wd[2] = {16, 16}, bd[1] = {16};
        ox_value *w = const_fn(&b, "W", 2, wd, fill_w), *bias = const_fn(&b, "B", 1, bd, fill_small);
        for (int i = 0; i < units; i++)
            x = un(&b, "Relu", bin(&b, "Add", bin(&b, "MatMul", x, w), bias));
    } else if (conv) {
        int64_t wd[4] = {4, 4, 1, 1}, cd[1] = {4};
        ox_value *w = const_fn(&b, "W", 4, wd, fill_w);
        ox_value *bn[5] = {NULL, const_fn(&b, "bn_scale", 1, cd, fill_one),
                           const_fn(&b, "bn_bias", 1, cd, fill_small),
                           const_fn(&b, "bn_mean", 1, cd, fill_small),
                           const_fn(&b, "bn_var", 1, cd, fill_one)};
        int64_t k[2] = {1, 1};
        for (int i = 0; i < units; i++) {
            ox_value *in[2] = {x, w};
            ox_node *cn;
            bn[0] = op1(&b, "Conv", 2, in, &cn);
            ox_node_set_attr_ints(cn, "kernel_shape", 2, k);
            x = un(&b, "Relu", op1(&b, "BatchNormalization", 5, bn, NULL));
        }
    } else if (!strcmp(kind, "silu")) {
        for (int i = 0; i < units; i++)
            x = bin(&b, "Mul", x, un(&b, "Sigmoid", x));
    } else if (!strcmp(kind, "hardswish")) {
        int64_t none[1] = {0};
        ox_value *three = const_fill(&b, "three", 0, none, 3.0f);
        ox_value *zero = const_fill(&b, "zero", 0, none, 0.0f);
        ox_value *six = const_fill(&b, "six", 0, none, 6.0f);
        for (int i = 0; i < units; i++) {
            ox_value *cin[3] = {bin(&b, "Add", x, three), zero, six};
            x = bin(&b, "Div", bin(&b, "Mul", x, op1(&b, "Clip", 3, cin, NULL)), six);
        }
    } else {
        return 2;
    }
    output(&b, x, "y", OX_DT_FLOAT);
    finish(&b, path);
    return 0;
}

/* A voice-activity-detector shape: audio x float32[1,512] and the sample
 * rate sr (int64 scalar). If(sr == 16000) frames x as [1,2,256] and
 * averages each frame; the else branch is the 8 kHz path, which frames
 * [1,2,128] and so fails on 512 samples. A random sr takes the else
 * branch, so running it needs `--fill sr=16000`. */
static void gen_if_branch(const char *path)
{
    builder b;
    start(&b, "if_branch", 13);
    int64_t xd[2] = {1, 512};
    ox_value *x = input(&b, "x", OX_DT_FLOAT, 2, xd, NULL);
    ox_value *sr = input(&b, "sr", OX_DT_INT64, 0, NULL, NULL);
    int64_t k16 = 16000;
    ox_value *cond = bin(&b, "Equal", sr, const_i64(&b, 1, &k16, true));
    ox_value *y = ox_graph_value(b.g, "y");
    ox_node *iff = ox_node_new(b.g, "If", "", "sr_is_16k", 1, &cond, 1, &y);
    if (!iff)
        die("out of memory");
    static const char *const names[2] = {"then_branch", "else_branch"};
    ox_graph *branches[2];
    for (int br = 0; br < 2; br++) {
        ox_graph *sub = ox_graph_new(b.m, b.g);
        if (!sub)
            die("out of memory");
        sub->owner = iff;
        sub->name = ox_strdup(br ? "sr_8k" : "sr_16k");
        builder bb = b;
        bb.g = sub;
        int64_t shape[3] = {1, 2, br ? 128 : 256};
        ox_value *rin[2] = {x, const_i64(&bb, 3, shape, false)};
        ox_value *frames = op1(&bb, "Reshape", 2, rin, NULL);
        ox_node *rm;
        ox_value *mean = op1(&bb, "ReduceMean", 1, &frames, &rm);
        int64_t axis = 2;
        ox_node_set_attr_ints(rm, "axes", 1, &axis);
        ox_node_set_attr_i(rm, "keepdims", 0);
        ox_error err = {0};
        if (ox_value_rename(mean, br ? "y_8k" : "y_16k", &err) != OX_OK)
            die(err.msg);
        int64_t od[2] = {1, 2};
        mean->type = ox_type_new_tensor(OX_DT_FLOAT, 2, od);
        ox_graph_add_output(sub, mean);
        branches[br] = sub;
        b.counter = bb.counter;
    }
    iff->attrs = calloc(2, sizeof(ox_attr));
    if (!iff->attrs)
        die("out of memory");
    for (int br = 0; br < 2; br++) {
        iff->attrs[br].name = ox_strdup(names[br]);
        iff->attrs[br].type = OX_ATTR_GRAPH;
        iff->attrs[br].g = branches[br];
    }
    iff->n_attrs = 2;
    int64_t yd[2] = {1, 2};
    y->type = ox_type_new_tensor(OX_DT_FLOAT, 2, yd);
    ox_graph_add_output(b.g, y);
    ox_graph_relink(b.g);
    finish(&b, path);
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--if-branch")) {
        gen_if_branch(argv[2]);
        return 0;
    }
    if (argc == 3 && !strcmp(argv[1], "--large")) {
        tf_cfg c = {12, 768, 12, 3072, 30522, 512};
        gen_transformer(argv[2], &c, "large_transformer");
        return 0;
    }
    if (argc == 5 && !strcmp(argv[1], "--transformer")) {
        int layers = atoi(argv[2]), hidden = atoi(argv[3]);
        if (layers < 1 || hidden < 8 || hidden % 4) {
            fprintf(stderr, "gen_samples: --transformer LAYERS HIDDEN (HIDDEN a multiple of 4)\n");
            return 2;
        }
        tf_cfg c = {layers, hidden, 4, 4 * hidden, 1000, 512};
        gen_transformer(argv[4], &c, "transformer");
        return 0;
    }
    if (argc == 5 && !strcmp(argv[1], "--chain")) {
        const char *op = argv[2];
        int n = atoi(argv[3]);
        if (n < 0 || (strcmp(op, "Identity") && strcmp(op, "Dropout") && strcmp(op, "Cast") &&
                      strcmp(op, "Mixed"))) {
            fprintf(stderr, "gen_samples: --chain Identity|Dropout|Cast|Mixed N FILE\n");
            return 2;
        }
        gen_chain(argv[4], op, n);
        return 0;
    }
    if (argc == 5 && !strcmp(argv[1], "--fuse-chain")) {
        int n = atoi(argv[3]);
        if (n < 1 || gen_fuse_chain(argv[4], argv[2], n)) {
            fprintf(stderr, "gen_samples: --fuse-chain gemm|convbn|silu|hardswish N FILE\n");
            return 2;
        }
        return 0;
    }
    if (argc == 4 && !strcmp(argv[1], "--wide")) {
        gen_wide(argv[3], atoi(argv[2]));
        return 0;
    }
    if (argc != 2) {
        fprintf(stderr, "usage: gen_samples OUTDIR | --large FILE | --wide N FILE |\n"
                        "                   --transformer LAYERS HIDDEN FILE | --if-branch FILE |\n"
                        "                   --chain Identity|Dropout|Cast|Mixed N FILE |\n"
                        "                   --fuse-chain gemm|convbn|silu|hardswish N FILE\n");
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/tiny_cnn.onnx", argv[1]);
    gen_cnn(path);
    tf_cfg c = {1, 64, 4, 256, 1000, 128};
    snprintf(path, sizeof path, "%s/tiny_transformer.onnx", argv[1]);
    gen_transformer(path, &c, "tiny_transformer");
    return 0;
}
