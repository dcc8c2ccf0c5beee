/* Unit tests of the attention fusion (src/passes/fuse_attn.c): the BERT
 * self-attention block with its exporter variants (scale as Div or Mul,
 * on the scores or on Q; mask as (1 - m) * -10000 or (m - 1) * 10000 with
 * one or two Unsqueezes; no mask) to com.microsoft Attention, and the
 * cases it must leave alone: a mask of another shape, a float mask, an
 * intermediate read outside, heads that do not match the weights. */
#include "fuse_harness.h"

enum {
    A_MULSCALE = 1,  /* scores * 0.5 instead of / 2 */
    A_QSCALE = 2,    /* the scale applied to Q */
    A_NOMASK = 4,
    A_MASKNEG = 8,   /* (m - 1) * 10000 */
    A_TWOUNSQ = 16,  /* Unsqueeze(Unsqueeze(m, 1), 2) */
    A_NOBIAS = 32,   /* projections without bias */
    /* must-not variants */
    A_BADMASK = 64,  /* Unsqueeze(m, [1]): a [B, 1, S] mask */
    A_FLOATMASK = 128, /* an additive float mask input [B, 1, S, S] */
    A_KNOTRANS = 256,  /* Q K instead of Q K^T (S = head size here) */
    A_SHORTMASK = 512, /* a [B, 1] mask that broadcasts over the keys */
    A_CROSS = 1024,    /* K and V project xkv [B, SKV, H] (cross-attention) */
    /* with A_CROSS: */
    A_VSEP = 2048,     /* V projects another input xv [B, SKV, 12] than K */
    A_RAWKV = 4096,    /* K and V are inputs kin/vin [B, SKV, H], no projection */
    A_VB1 = 8192,      /* xv has batch 1 (MatMul broadcasts it): must not */
};

static const int64_t B = 2, S = 4, H = 8, NH = 2;
static int64_t opset = 13; /* 23 for the ONNX form */

static void unsqueeze(ox_model *m, const char *out, const char *in, int n, const int64_t *ax)
{
    char name[64];
    snprintf(name, sizeof name, "%s_axes", out);
    fh_ints(m, name, n, ax);
    fh_node(m, "Unsqueeze", out, in, name, NULL);
}

/* Q/K/V projection of x, split into heads and transposed by perm. */
static void head(ox_model *m, int v, const char *p, const int64_t *perm, int64_t heads)
{
    char w[32], b[32], mm[32], ad[32], rs[32], sh[32], tr[32];
    bool isq = !strcmp(p, "Q"), vsep = (v & A_VSEP) && !strcmp(p, "V");
    const int64_t WD[2] = {vsep ? 12 : 8, 8}, BD[1] = {8};
    snprintf(w, sizeof w, "W%s", p);
    snprintf(b, sizeof b, "b%s", p);
    snprintf(mm, sizeof mm, "mm%s", p);
    snprintf(ad, sizeof ad, "ad%s", p);
    snprintf(rs, sizeof rs, "rs%s", p);
    snprintf(sh, sizeof sh, "sh%s", p);
    snprintf(tr, sizeof tr, "%s", p);
    const char *pin = v & A_NOBIAS ? mm : ad;
    if ((v & A_RAWKV) && !isq) {
        pin = !strcmp(p, "K") ? "kin" : "vin";
    } else {
        fh_init(m, w, 2, WD, NULL, -0.6, 0.6);
        fh_node(m, "MatMul", mm, vsep ? "xv" : (v & A_CROSS) && !isq ? "xkv" : "x", w, NULL);
        if (!(v & A_NOBIAS)) {
            fh_init(m, b, 1, BD, NULL, -0.5, 0.5);
            fh_node(m, "Add", ad, b, mm, NULL);
        }
    }
    int64_t shape[4] = {0, 0, heads, H / heads};
    fh_ints(m, sh, 4, shape);
    fh_node(m, "Reshape", rs, pin, sh, NULL);
    ox_node *t = fh_node(m, "Transpose", tr, rs, NULL);
    ox_node_set_attr_ints(t, "perm", 4, perm);
}

static ox_model *attn_model(int v)
{
    ox_model *m = fh_model(opset);
    int64_t xd[3] = {B, S, H}, fd[4] = {B, 1, S, S}, kd[3] = {B, 6, H};
    int64_t md[2] = {B, v & A_SHORTMASK ? 1 : v & A_CROSS ? 6 : S};
    fh_input(m, "x", 3, xd);
    if ((v & A_CROSS) && !(v & A_RAWKV))
        fh_input(m, "xkv", 3, kd);
    if (v & A_VSEP) {
        int64_t vd[3] = {v & A_VB1 ? 1 : B, 6, 12};
        fh_input(m, "xv", 3, vd);
    }
    if (v & A_RAWKV) {
        fh_input(m, "kin", 3, kd);
        fh_input(m, "vin", 3, kd);
    }
    if (v & A_FLOATMASK) {
        fh_input(m, "M", 4, fd);
    } else if (!(v & A_NOMASK)) {
        ox_value *mk = ox_graph_value(m->graph, "mask");
        mk->type = ox_type_new_tensor(OX_DT_INT64, 2, md);
        ox_graph_add_input(m->graph, mk);
        if (v & A_BADMASK) {
            static const int64_t a1[1] = {1};
            unsqueeze(m, "mu", "mask", 1, a1);
        } else if (v & A_TWOUNSQ) {
            static const int64_t a1[1] = {1}, a2[1] = {2};
            unsqueeze(m, "mu1", "mask", 1, a1);
            unsqueeze(m, "mu", "mu1", 1, a2);
        } else {
            static const int64_t a12[2] = {1, 2};
            unsqueeze(m, "mu", "mask", 2, a12);
        }
        ox_node *c = fh_node(m, "Cast", "mf", "mu", NULL);
        ox_node_set_attr_i(c, "to", OX_DT_FLOAT);
        fh_scalar(m, "one", 1);
        if (v & A_MASKNEG) {
            fh_scalar(m, "big", 10000);
            fh_node(m, "Sub", "ms", "mf", "one", NULL);
            fh_node(m, "Mul", "M", "ms", "big", NULL);
        } else {
            fh_scalar(m, "big", -10000);
            fh_node(m, "Sub", "ms", "one", "mf", NULL);
            fh_node(m, "Mul", "M", "big", "ms", NULL);
        }
    }
    static const int64_t p0213[4] = {0, 2, 1, 3}, p0231[4] = {0, 2, 3, 1};
    head(m, v, "Q", p0213, NH);
    head(m, v, "K", v & A_KNOTRANS ? p0213 : p0231, NH);
    head(m, v, "V", p0213, NH);
    fh_scalar(m, "c", v & A_MULSCALE ? 0.5f : 2.0f);
    const char *sc = v & A_MULSCALE ? "Mul" : "Div";
    if (v & A_QSCALE) {
        fh_node(m, sc, "Qs", "Q", "c", NULL);
        fh_node(m, "MatMul", "sd", "Qs", "K", NULL);
    } else {
        fh_node(m, "MatMul", "qk", "Q", "K", NULL);
        fh_node(m, sc, "sd", "qk", "c", NULL);
    }
    if (v & A_NOMASK) {
        ox_node *s = fh_node(m, "Softmax", "P", "sd", NULL);
        ox_node_set_attr_i(s, "axis", -1);
    } else {
        fh_node(m, "Add", "sm", "sd", "M", NULL);
        ox_node *s = fh_node(m, "Softmax", "P", "sm", NULL);
        ox_node_set_attr_i(s, "axis", -1);
    }
    fh_node(m, "MatMul", "ctx", "P", "V", NULL);
    ox_node *t = fh_node(m, "Transpose", "ct", "ctx", NULL);
    ox_node_set_attr_ints(t, "perm", 4, p0213);
    static const int64_t os[3] = {0, 0, 8};
    fh_ints(m, "oshape", 3, os);
    fh_node(m, "Reshape", "y", "ct", "oshape", NULL);
    fh_output(m, "y");
    return m;
}

static void test_attention_fires(void **state)
{
    (void)state;
    static const int variants[] = {0, A_MULSCALE, A_QSCALE, A_QSCALE | A_MULSCALE, A_NOMASK,
                                   A_MASKNEG, A_TWOUNSQ, A_NOBIAS,
                                   A_MASKNEG | A_TWOUNSQ | A_MULSCALE};
    for (size_t k = 0; k < sizeof variants / sizeof *variants; k++) {
        int v = variants[k];
        ox_model *m = attn_model(v);
        int rw;
        ox_model *o = fh_opt(m, "fuse_attention", OX_TARGET_ORT, &rw);
        assert_int_equal(rw, 1);
        assert_int_equal(fh_count(o, "Attention"), 1);
        assert_int_equal(fh_count(o, "Softmax"), 0);
        assert_int_equal(fh_count(o, "MatMul"), 0);
        for (int i = 0; i < o->graph->n_nodes; i++) {
            ox_node *n = o->graph->nodes[i];
            if (!ox_node_is(n, "Attention"))
                continue;
            assert_string_equal(n->domain, "com.microsoft");
            assert_int_equal(ox_node_attr_i(n, "num_heads", 0), NH);
            assert_true(fabs(ox_node_attr_f(n, "scale", 0) - 0.5) < 1e-7);
            assert_int_equal(n->n_inputs, v & A_NOMASK ? 3 : 4);
            assert_int_equal(n->inputs[1]->init->dims[1], 3 * H);
        }
        ox_model_free(o);
        ox_model_free(m);
    }
}

static void test_attention_must_not(void **state)
{
    (void)state;
    static const int variants[] = {A_BADMASK, A_FLOATMASK, A_KNOTRANS, A_SHORTMASK};
    for (size_t k = 0; k < sizeof variants / sizeof *variants; k++) {
        ox_model *m = attn_model(variants[k]);
        fh_nofire(m, "fuse_attention", OX_TARGET_ORT);
        ox_model_free(m);
    }
    /* The probabilities (or the scores) read outside the block. */
    static const char *leak[] = {"P", "sd", "Q"};
    for (int k = 0; k < 3; k++) {
        ox_model *m = attn_model(0);
        fh_output(m, leak[k]);
        fh_nofire(m, "fuse_attention", OX_TARGET_ORT);
        ox_model_free(m);
    }
}

/* GPT-2 form: one projection split in three, reshape shapes read from
 * Shape(x) at run time, causal mask as Where(Slice(tril)). bad: 1 = the
 * constant is not lower-triangular, 2 = the slice ends at 1, not S; 3 (a
 * good one) = the mask already folded to a [1, 1, S, S] constant. */
static ox_model *gpt2_model(int bad)
{
    ox_model *m = fh_model(opset);
    int64_t xd[3] = {B, S, H};
    fh_input(m, "x", 3, xd);
    static const int64_t WD[2] = {8, 24}, BD[1] = {24};
    fh_init(m, "W3", 2, WD, NULL, -0.6, 0.6);
    fh_init(m, "b3", 1, BD, NULL, -0.5, 0.5);
    fh_node(m, "MatMul", "mm", "x", "W3", NULL);
    fh_node(m, "Add", "qkv", "mm", "b3", NULL);
    static const int64_t sp[3] = {8, 8, 8};
    fh_ints(m, "sp", 3, sp);
    ox_value *outs[3] = {ox_graph_value(m->graph, "q"), ox_graph_value(m->graph, "k"),
                         ox_graph_value(m->graph, "v")};
    ox_value *sin[2] = {ox_graph_value(m->graph, "qkv"), ox_graph_value(m->graph, "sp")};
    ox_node *spn = ox_node_new(m->graph, "Split", "", "split", 2, sin, 3, outs);
    ox_node_set_attr_i(spn, "axis", 2);
    fh_node(m, "Shape", "shp", "x", NULL);
    ox_tensor *t0 = ox_tensor_new(OX_DT_INT64, 0, NULL), *t1 = ox_tensor_new(OX_DT_INT64, 0, NULL);
    ox_tensor_set_i64(t0, 0, 0);
    ox_tensor_set_i64(t1, 0, 1);
    ox_graph_set_initializer(m->graph, ox_graph_value(m->graph, "i0"), t0);
    ox_graph_set_initializer(m->graph, ox_graph_value(m->graph, "i1"), t1);
    ox_node_set_attr_i(fh_node(m, "Gather", "gb", "shp", "i0", NULL), "axis", 0);
    ox_node_set_attr_i(fh_node(m, "Gather", "gs", "shp", "i1", NULL), "axis", 0);
    static const int64_t zero[1] = {0}, nh[1] = {2}, hs[1] = {4}, hd[1] = {8};
    fh_ints(m, "ax0", 1, zero);
    fh_node(m, "Unsqueeze", "ub", "gb", "ax0", NULL);
    fh_node(m, "Unsqueeze", "us", "gs", "ax0", NULL);
    fh_ints(m, "nh", 1, nh);
    fh_ints(m, "hs", 1, hs);
    fh_ints(m, "hd", 1, hd);
    ox_node_set_attr_i(fh_node(m, "Concat", "shape4", "ub", "us", "nh", "hs", NULL), "axis", 0);
    ox_node_set_attr_i(fh_node(m, "Concat", "shape3", "ub", "us", "hd", NULL), "axis", 0);
    static const int64_t p0213[4] = {0, 2, 1, 3}, p0231[4] = {0, 2, 3, 1};
    const char *names[3] = {"q", "k", "v"};
    for (int i = 0; i < 3; i++) {
        char r[8], t[8];
        snprintf(r, sizeof r, "r%s", names[i]);
        snprintf(t, sizeof t, "T%s", names[i]);
        fh_node(m, "Reshape", r, names[i], "shape4", NULL);
        ox_node_set_attr_ints(fh_node(m, "Transpose", t, r, NULL), "perm", 4, i == 1 ? p0231 : p0213);
    }
    fh_node(m, "MatMul", "qk", "Tq", "Tk", NULL);
    fh_scalar(m, "c", 2);
    fh_node(m, "Div", "sd", "qk", "c", NULL);
    int64_t td[4] = {1, 1, 6, 6};
    ox_tensor *tri = ox_tensor_new(OX_DT_BOOL, 4, td);
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++)
            ox_tensor_set_i64(tri, i * 6 + j, bad == 1 ? j >= i : j <= i);
    ox_graph_set_initializer(m->graph, ox_graph_value(m->graph, "tri"), tri);
    static const int64_t a2[1] = {2}, a3[1] = {3}, one[1] = {1};
    fh_ints(m, "a2", 1, a2);
    fh_ints(m, "a3", 1, a3);
    fh_ints(m, "one1", 1, one);
    const char *end = bad == 2 ? "one1" : "us";
    fh_node(m, "Slice", "sl1", "tri", "ax0", end, "a2", "one1", NULL);
    fh_node(m, "Slice", "cond", "sl1", "ax0", end, "a3", "one1", NULL);
    fh_scalar(m, "neg", -3.4e38f);
    if (bad == 3) { /* the mask folded to a [1, 1, S, S] constant */
        int64_t fd[4] = {1, 1, S, S};
        ox_tensor *tf = ox_tensor_new(OX_DT_BOOL, 4, fd);
        for (int64_t i = 0; i < S; i++)
            for (int64_t j = 0; j < S; j++)
                ox_tensor_set_i64(tf, i * S + j, j <= i);
        ox_graph_set_initializer(m->graph, ox_graph_value(m->graph, "trif"), tf);
        fh_node(m, "Where", "sw", "trif", "sd", "neg", NULL);
    } else {
        fh_node(m, "Where", "sw", "cond", "sd", "neg", NULL);
    }
    ox_node_set_attr_i(fh_node(m, "Softmax", "P", "sw", NULL), "axis", -1);
    fh_node(m, "MatMul", "ctx", "P", "Tv", NULL);
    ox_node_set_attr_ints(fh_node(m, "Transpose", "ct", "ctx", NULL), "perm", 4, p0213);
    fh_node(m, "Reshape", "y", "ct", "shape3", NULL);
    fh_output(m, "y");
    return m;
}

static void test_attention_gpt2(void **state)
{
    (void)state;
    for (int good = 0; good <= 3; good += 3) {
        ox_model *m = gpt2_model(good);
        int rw;
        ox_model *o = fh_opt(m, "fuse_attention", OX_TARGET_ORT, &rw);
        assert_int_equal(rw, 1);
        assert_int_equal(fh_count(o, "Attention"), 1);
        assert_int_equal(fh_count(o, "Where"), 0);
        assert_int_equal(fh_count(o, "Split"), 0);
        for (int i = 0; i < o->graph->n_nodes; i++)
            if (ox_node_is(o->graph->nodes[i], "Attention")) {
                assert_int_equal(ox_node_attr_i(o->graph->nodes[i], "unidirectional", 0), 1);
                assert_int_equal(o->graph->nodes[i]->n_inputs, 3);
            }
        ox_model_free(o);
        ox_model_free(m);
    }
    for (int bad = 1; bad <= 2; bad++) {
        ox_model *m = gpt2_model(bad);
        fh_nofire(m, "fuse_attention", OX_TARGET_ORT);
        ox_model_free(m);
    }
}

/* PyTorch nn.MultiheadAttention, sequence-first: Slice-cut projection,
 * [S, B*N, h] reshapes read from Shape at run time (K's from Shape of its
 * own slice, as the exporter writes), the context reshaped to [S*B, D] for
 * the output projection. leak: the context also a graph output. */
static ox_model *seq_first_model(bool leak, int64_t op)
{
    ox_model *m = fh_model(op);
    int64_t xd[3] = {B, S, H};
    fh_input(m, "x", 3, xd);
    static const int64_t p102[3] = {1, 0, 2}, p120[3] = {1, 2, 0};
    ox_node_set_attr_ints(fh_node(m, "Transpose", "xs", "x", NULL), "perm", 3, p102);
    static const int64_t WD[2] = {8, 24}, BD[1] = {24}, OD[2] = {8, 8};
    fh_init(m, "W3", 2, WD, NULL, -0.6, 0.6);
    fh_init(m, "b3", 1, BD, NULL, -0.5, 0.5);
    fh_init(m, "Wo", 2, OD, NULL, -0.6, 0.6);
    fh_node(m, "MatMul", "mm", "xs", "W3", NULL);
    fh_node(m, "Add", "qkv", "b3", "mm", NULL);
    static const int64_t c0[1] = {0}, c8[1] = {8}, c16[1] = {16}, c24[1] = {24}, cm1[1] = {-1},
                         c4[1] = {4};
    fh_ints(m, "c0", 1, c0);
    fh_ints(m, "c8", 1, c8);
    fh_ints(m, "c16", 1, c16);
    fh_ints(m, "c24", 1, c24);
    fh_ints(m, "cm1", 1, cm1);
    fh_ints(m, "c4", 1, c4);
    fh_node(m, "Slice", "sq", "qkv", "c0", "c8", "cm1", NULL);
    fh_node(m, "Slice", "sk", "qkv", "c8", "c16", "cm1", NULL);
    fh_node(m, "Slice", "sv", "qkv", "c16", "c24", "cm1", NULL);
    ox_tensor *t0 = ox_tensor_new(OX_DT_INT64, 0, NULL), *t1 = ox_tensor_new(OX_DT_INT64, 0, NULL),
              *t2 = ox_tensor_new(OX_DT_INT64, 0, NULL);
    ox_tensor_set_i64(t0, 0, 0);
    ox_tensor_set_i64(t1, 0, 1);
    ox_tensor_set_i64(t2, 0, 2);
    ox_graph_set_initializer(m->graph, ox_graph_value(m->graph, "i0"), t0);
    ox_graph_set_initializer(m->graph, ox_graph_value(m->graph, "i1"), t1);
    ox_graph_set_initializer(m->graph, ox_graph_value(m->graph, "n2"), t2);
    fh_node(m, "Shape", "shp", "xs", NULL);
    fh_node(m, "Shape", "shk", "sk", NULL);
    fh_node(m, "Gather", "gs", "shp", "i0", NULL);
    fh_node(m, "Gather", "gsk", "shk", "i0", NULL);
    fh_node(m, "Gather", "gb", "shp", "i1", NULL);
    fh_node(m, "Mul", "bn", "gb", "n2", NULL);
    fh_node(m, "Mul", "sb", "gs", "gb", NULL);
    fh_node(m, "Unsqueeze", "us", "gs", "c0", NULL);
    fh_node(m, "Unsqueeze", "usk", "gsk", "c0", NULL);
    fh_node(m, "Unsqueeze", "ubn", "bn", "c0", NULL);
    fh_node(m, "Unsqueeze", "ub", "gb", "c0", NULL);
    fh_node(m, "Unsqueeze", "usb", "sb", "c0", NULL);
    ox_node_set_attr_i(fh_node(m, "Concat", "hs", "us", "ubn", "c4", NULL), "axis", 0);
    ox_node_set_attr_i(fh_node(m, "Concat", "hsk", "usk", "ubn", "c4", NULL), "axis", 0);
    ox_node_set_attr_i(fh_node(m, "Concat", "flat", "usb", "c8", NULL), "axis", 0);
    ox_node_set_attr_i(fh_node(m, "Concat", "back", "us", "ub", "c8", NULL), "axis", 0);
    fh_node(m, "Reshape", "rq", "sq", "hs", NULL);
    fh_node(m, "Reshape", "rk", "sk", "hsk", NULL);
    fh_node(m, "Reshape", "rv", "sv", "hs", NULL);
    ox_node_set_attr_ints(fh_node(m, "Transpose", "tq", "rq", NULL), "perm", 3, p102);
    ox_node_set_attr_ints(fh_node(m, "Transpose", "tk", "rk", NULL), "perm", 3, p120);
    ox_node_set_attr_ints(fh_node(m, "Transpose", "tv", "rv", NULL), "perm", 3, p102);
    fh_scalar(m, "c", 2);
    fh_node(m, "Div", "qs", "tq", "c", NULL);
    fh_node(m, "MatMul", "sc", "qs", "tk", NULL);
    ox_node_set_attr_i(fh_node(m, "Softmax", "P", "sc", NULL), "axis", -1);
    fh_node(m, "MatMul", "ctx", "P", "tv", NULL);
    ox_node_set_attr_ints(fh_node(m, "Transpose", "ct", "ctx", NULL), "perm", 3, p102);
    fh_node(m, "Reshape", "cf", "ct", "flat", NULL);
    fh_node(m, "MatMul", "o", "cf", "Wo", NULL);
    fh_node(m, "Reshape", "ob", "o", "back", NULL);
    ox_node_set_attr_ints(fh_node(m, "Transpose", "y", "ob", NULL), "perm", 3, p102);
    fh_output(m, "y");
    if (leak)
        fh_output(m, "ct");
    return m;
}

static void test_attention_seq_first(void **state)
{
    (void)state;
    ox_model *m = seq_first_model(false, 13);
    int rw;
    ox_model *o = fh_opt(m, "fuse_attention", OX_TARGET_ORT, &rw);
    assert_int_equal(rw, 1);
    assert_int_equal(fh_count(o, "Attention"), 1);
    assert_int_equal(fh_count(o, "Softmax"), 0);
    assert_int_equal(fh_count(o, "Slice"), 0);
    ox_model_free(o);
    ox_model_free(m);
    m = seq_first_model(true, 13);
    fh_nofire(m, "fuse_attention", OX_TARGET_ORT);
    ox_model_free(m);
    /* The standard form at opset 23: the packed projection reads x
     * (batch-first), a Split gives q, k, v, and Attention's output is
     * transposed back to [S, B, D]. */
    m = seq_first_model(false, 23);
    o = fh_opt(m, "fuse_attention_onnx", OX_TARGET_ONNX, &rw);
    assert_int_equal(rw, 1);
    assert_int_equal(fh_count(o, "Attention"), 1);
    assert_int_equal(fh_count(o, "Softmax"), 0);
    assert_int_equal(fh_count(o, "Slice"), 0);
    assert_int_equal(fh_count(o, "Split"), 1);
    for (int i = 0; i < o->graph->n_nodes; i++) {
        ox_node *n = o->graph->nodes[i];
        if (ox_node_is(n, "Attention")) {
            assert_string_equal(n->domain, "");
            assert_int_equal(ox_node_attr_i(n, "q_num_heads", 0), NH);
            assert_int_equal(n->n_inputs, 3);
            assert_string_equal(n->inputs[0]->producer->op_type, "Split");
        }
        if (ox_node_is(n, "MatMul") && ox_node_is(n->outputs[0]->uses[0].node, "Add"))
            assert_string_equal(n->inputs[0]->name, "x"); /* batch-first */
    }
    ox_model_free(o);
    ox_model_free(m);
    m = seq_first_model(true, 23);
    fh_nofire(m, "fuse_attention_onnx", OX_TARGET_ONNX);
    ox_model_free(m);
    /* Below 23: the note. */
    m = seq_first_model(false, 17);
    fh_nofire(m, "fuse_attention_onnx", OX_TARGET_ONNX);
    ox_model_free(m);
}

/* The standard form at opset 23: the projections stay, the mask (any
 * additive float mask that broadcasts) becomes attn_mask; a note below 23. */
static void test_attention_onnx(void **state)
{
    (void)state;
    opset = 23;
    static const int variants[] = {A_NOMASK, A_FLOATMASK, A_MULSCALE | A_NOMASK,
                                   A_QSCALE | A_FLOATMASK, A_NOBIAS | A_FLOATMASK,
                                   /* cross-attention: Attention takes q, k, v apart */
                                   A_CROSS | A_NOMASK, A_CROSS | A_VSEP | A_NOMASK,
                                   A_CROSS | A_RAWKV | A_NOMASK};
    for (size_t k = 0; k < sizeof variants / sizeof *variants; k++) {
        int v = variants[k];
        ox_model *m = attn_model(v);
        int rw;
        ox_model *o = fh_opt(m, "fuse_attention_onnx", OX_TARGET_ONNX, &rw);
        assert_int_equal(rw, 1);
        assert_int_equal(fh_count(o, "Attention"), 1);
        assert_int_equal(fh_count(o, "Softmax"), 0);
        assert_int_equal(fh_count(o, "MatMul"), v & A_RAWKV ? 1 : 3);
        for (int i = 0; i < o->graph->n_nodes; i++) {
            ox_node *n = o->graph->nodes[i];
            if (!ox_node_is(n, "Attention"))
                continue;
            assert_string_equal(n->domain, "");
            assert_int_equal(ox_node_attr_i(n, "q_num_heads", 0), NH);
            assert_int_equal(n->n_inputs, v & A_NOMASK ? 3 : 4);
        }
        ox_model_free(o);
        ox_model_free(m);
    }
    ox_model *m = gpt2_model(0);
    int rw;
    ox_model *o = fh_opt(m, "fuse_attention_onnx", OX_TARGET_ONNX, &rw);
    assert_int_equal(rw, 1);
    assert_int_equal(fh_count(o, "Attention"), 1);
    assert_int_equal(fh_count(o, "Split"), 1);
    for (int i = 0; i < o->graph->n_nodes; i++)
        if (ox_node_is(o->graph->nodes[i], "Attention"))
            assert_int_equal(ox_node_attr_i(o->graph->nodes[i], "is_causal", 0), 1);
    ox_model_free(o);
    ox_model_free(m);
    /* Must not: a [B, 1, 1, S] mask (the spec broadcasts it over the
     * queries, ONNX Runtime 1.30 refuses to); K not transposed; a causal
     * constant that is not lower-triangular. */
    m = attn_model(0);
    fh_nofire(m, "fuse_attention_onnx", OX_TARGET_ONNX);
    ox_model_free(m);
    m = attn_model(A_KNOTRANS);
    fh_nofire(m, "fuse_attention_onnx", OX_TARGET_ONNX);
    ox_model_free(m);
    m = gpt2_model(1);
    fh_nofire(m, "fuse_attention_onnx", OX_TARGET_ONNX);
    ox_model_free(m);
    /* Below opset 23: not applied, with a note. */
    opset = 13;
    m = attn_model(A_NOMASK);
    ox_error err = {0};
    assert_int_equal(ox_infer_model(m, NULL, &err), OX_OK);
    ox_pass_manager *pm = ox_pm_new(OX_LEVEL_ALL, OX_TARGET_ONNX);
    ox_pass_report rep = {0};
    assert_int_equal(ox_pm_only(pm, "fuse_attention_onnx", &err), OX_OK);
    assert_int_equal(ox_pm_run(pm, m, &rep, &err), OX_OK);
    const ox_pass_stat *st = ox_pass_report_find(&rep, "fuse_attention_onnx");
    assert_non_null(st);
    assert_int_equal(st->rewrites, 0);
    assert_non_null(st->note);
    assert_string_equal(st->note, "fuse_attention_onnx not applied: needs opset 23 (model has 13)");
    ox_pass_report_free(&rep);
    ox_pm_free(pm);
    ox_model_free(m);
}

/* Cross-attention: com.microsoft MultiHeadAttention on the projections;
 * neither pass takes the other's blocks. */
static void test_multihead_attention(void **state)
{
    (void)state;
    static const int variants[] = {A_CROSS, A_CROSS | A_NOMASK, A_CROSS | A_QSCALE | A_MULSCALE,
                                   A_CROSS | A_MASKNEG | A_TWOUNSQ, A_CROSS | A_NOBIAS,
                                   A_CROSS | A_VSEP, A_CROSS | A_VSEP | A_NOMASK | A_NOBIAS,
                                   A_CROSS | A_RAWKV, A_CROSS | A_RAWKV | A_NOMASK};
    for (size_t k = 0; k < sizeof variants / sizeof *variants; k++) {
        int v = variants[k];
        ox_model *m = attn_model(v);
        int rw;
        ox_model *o = fh_opt(m, "fuse_multihead_attention", OX_TARGET_ORT, &rw);
        assert_int_equal(rw, 1);
        assert_int_equal(fh_count(o, "MultiHeadAttention"), 1);
        assert_int_equal(fh_count(o, "Softmax"), 0);
        /* the projections stay */
        assert_int_equal(fh_count(o, "MatMul"), v & A_RAWKV ? 1 : 3);
        for (int i = 0; i < o->graph->n_nodes; i++) {
            ox_node *n = o->graph->nodes[i];
            if (!ox_node_is(n, "MultiHeadAttention"))
                continue;
            assert_string_equal(n->domain, "com.microsoft");
            assert_int_equal(ox_node_attr_i(n, "num_heads", 0), NH);
            assert_true(fabs(ox_node_attr_f(n, "scale", 0) - 0.5) < 1e-7);
            assert_int_equal(n->n_inputs, v & A_NOMASK ? 3 : 5);
        }
        ox_model_free(o);
        fh_nofire(m, "fuse_attention", OX_TARGET_ORT);
        ox_model_free(m);
    }
    /* Self-attention is fuse_attention's (packed); a [B, 1] mask has no
     * key_padding_mask form. */
    ox_model *m = attn_model(0);
    fh_nofire(m, "fuse_multihead_attention", OX_TARGET_ORT);
    ox_model_free(m);
    m = attn_model(A_CROSS | A_SHORTMASK);
    fh_nofire(m, "fuse_multihead_attention", OX_TARGET_ORT);
    ox_model_free(m);
    /* V of batch 1 broadcast by MatMul over K's batch: not MHA's form. */
    m = attn_model(A_CROSS | A_VSEP | A_VB1 | A_NOMASK);
    fh_nofire(m, "fuse_multihead_attention", OX_TARGET_ORT);
    ox_model_free(m);
    /* fuse_attention packs projections of one input only. */
    m = attn_model(A_CROSS | A_VSEP);
    fh_nofire(m, "fuse_attention", OX_TARGET_ORT);
    ox_model_free(m);
    m = attn_model(A_CROSS | A_RAWKV);
    fh_nofire(m, "fuse_attention", OX_TARGET_ORT);
    ox_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_attention_fires),
        cmocka_unit_test(test_attention_must_not),
        cmocka_unit_test(test_attention_gpt2),
        cmocka_unit_test(test_attention_seq_first),
        cmocka_unit_test(test_attention_onnx),
        cmocka_unit_test(test_multihead_attention),
    };
    int r = cmocka_run_group_tests(tests, NULL, NULL);
    if (!r)
        fh_all_fired("fuse_attention,fuse_attention_onnx,fuse_multihead_attention");
    return r;
}
