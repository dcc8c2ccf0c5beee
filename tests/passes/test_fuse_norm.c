/* Unit tests of the normalization fusions (src/passes/fuse_norm.c): the
 * exporter variants of decomposed LayerNorm and RMSNorm, the opset rules
 * per target (and the report's note when a fusion is refused), and
 * SkipLayerNormalization under --target ort. Each firing case also checks
 * idempotence and equal outputs on random inputs (fuse_harness.h). */
#include "fuse_harness.h"

static const int64_t X3[3] = {2, 3, 8};

enum {
    V_MULSQ = 1,     /* Mul(d, d) instead of Pow(d, 2) */
    V_RECIP = 2,     /* d * Reciprocal(sqrt) instead of d / sqrt */
    V_NOSCALE = 4,
    V_NOBIAS = 8,
    V_EPSLEFT = 16,  /* Add(eps, var) */
    V_CONSTNODE = 32, /* epsilon and exponent as Constant nodes */
    V_TWOAXES = 64,  /* normalize over the last two axes */
    V_POSAXES = 128, /* axes written as positive numbers */
    V_DIVONE = 256,  /* d * Div(1, sqrt) */
};

/* ReduceMean of u over the variant's axes (attribute, or input from 18). */
static void mean(ox_model *m, int64_t opset, const char *out, const char *u, int v,
                 const int64_t *axes_override, int n_override)
{
    int64_t ax[2];
    int na;
    if (axes_override) {
        na = n_override;
        memcpy(ax, axes_override, (size_t)na * sizeof *ax);
    } else if (v & V_TWOAXES) {
        na = 2;
        ax[0] = v & V_POSAXES ? 1 : -2;
        ax[1] = v & V_POSAXES ? 2 : -1;
    } else {
        na = 1;
        ax[0] = v & V_POSAXES ? 2 : -1;
    }
    if (opset >= 18) {
        char an[64];
        snprintf(an, sizeof an, "%s_axes", out);
        fh_ints(m, an, na, ax);
        fh_node(m, "ReduceMean", out, u, an, NULL);
    } else {
        ox_node *n = fh_node(m, "ReduceMean", out, u, NULL);
        ox_node_set_attr_ints(n, "axes", na, ax);
    }
}

/* x -> decomposed LayerNorm (or RMSNorm when rms) -> y. axes2: the second
 * ReduceMean's axes when they must differ. */
static ox_model *norm_model(int64_t opset, int v, bool rms, float eps, const int64_t *axes2,
                            int n2)
{
    ox_model *m = fh_model(opset);
    fh_input(m, "in", 3, X3);
    fh_scalar(m, "spread", 3);
    fh_scalar(m, "shift", 0.5f);
    fh_node(m, "Mul", "x0", "in", "spread", NULL);
    fh_node(m, "Add", "x", "x0", "shift", NULL);
    const char *d = "x";
    if (!rms) {
        mean(m, opset, "mu", "x", v, NULL, 0);
        fh_node(m, "Sub", "d", "x", "mu", NULL);
        d = "d";
    }
    if (v & V_CONSTNODE) {
        if (!(v & V_MULSQ))
            fh_const_node(m, "two", 2);
        fh_const_node(m, "eps", eps);
    } else {
        fh_scalar(m, "two", 2);
        fh_scalar(m, "eps", eps);
    }
    if (v & V_MULSQ)
        fh_node(m, "Mul", "sq", d, d, NULL);
    else
        fh_node(m, "Pow", "sq", d, "two", NULL);
    mean(m, opset, "var", "sq", v, axes2, n2);
    if (v & V_EPSLEFT)
        fh_node(m, "Add", "ve", "eps", "var", NULL);
    else
        fh_node(m, "Add", "ve", "var", "eps", NULL);
    fh_node(m, "Sqrt", "sd", "ve", NULL);
    const char *last = (v & (V_NOSCALE | V_NOBIAS)) == (V_NOSCALE | V_NOBIAS) ? "y" : "n";
    if (v & V_RECIP) {
        fh_node(m, "Reciprocal", "rc", "sd", NULL);
        fh_node(m, "Mul", last, "rc", d, NULL);
    } else if (v & V_DIVONE) {
        fh_scalar(m, "one", 1);
        fh_node(m, "Div", "rc", "one", "sd", NULL);
        fh_node(m, "Mul", last, d, "rc", NULL);
    } else {
        fh_node(m, "Div", last, d, "sd", NULL);
    }
    int64_t pd[2] = {3, 8};
    int pr = v & V_TWOAXES ? 2 : 1;
    if (!(v & V_NOSCALE)) {
        fh_init(m, "gamma", pr, pd + 2 - pr, NULL, 0.5, 1.5);
        fh_node(m, "Mul", v & V_NOBIAS ? "y" : "s", "gamma", "n", NULL);
    }
    if (!(v & V_NOBIAS) && !rms) {
        fh_init(m, "beta", pr, pd + 2 - pr, NULL, -0.5, 0.5);
        fh_node(m, "Add", "y", v & V_NOSCALE ? "n" : "s", "beta", NULL);
    }
    return m;
}

static void expect(ox_model *m, const char *pass, ox_pass_target t, const char *op, int n_nodes)
{
    fh_output(m, "y");
    int rw;
    ox_model *o = fh_opt(m, pass, t, &rw);
    assert_true(rw >= 1);
    assert_int_equal(fh_count(o, op), 1);
    if (n_nodes >= 0)
        assert_int_equal(o->graph->n_nodes, n_nodes);
    ox_model_free(o);
    ox_model_free(m);
}

/* The note the pass leaves when it runs on m (NULL if none; freed by the
 * caller). */
static char *note_of(ox_model *m, const char *pass, ox_pass_target t)
{
    ox_pass_manager *pm = ox_pm_new(OX_LEVEL_ALL, t);
    ox_error err = {0};
    ox_pass_report rep = {0};
    assert_int_equal(ox_pm_only(pm, pass, &err), OX_OK);
    assert_int_equal(ox_pm_run(pm, m, &rep, &err), OX_OK);
    const ox_pass_stat *s = ox_pass_report_find(&rep, pass);
    char *r = s && s->note ? strdup(s->note) : NULL;
    if (s)
        assert_int_equal(s->rewrites, 0);
    ox_pass_report_free(&rep);
    ox_pm_free(pm);
    return r;
}

static void test_layernorm_fires(void **state)
{
    (void)state;
    static const int variants[] = {
        0, V_MULSQ, V_RECIP, V_NOSCALE, V_NOBIAS, V_NOSCALE | V_NOBIAS, V_EPSLEFT,
        V_CONSTNODE, V_TWOAXES, V_POSAXES, V_TWOAXES | V_POSAXES, V_DIVONE,
        V_MULSQ | V_RECIP | V_EPSLEFT | V_CONSTNODE,
    };
    for (size_t k = 0; k < sizeof variants / sizeof *variants; k++) {
        int v = variants[k];
        /* Standard op from opset 17 (axes as an input from 18). */
        expect(norm_model(17, v, false, 1e-5f, NULL, 0), "fuse_layernorm", OX_TARGET_ONNX,
               "LayerNormalization", 3);
        expect(norm_model(18, v, false, 1e-12f, NULL, 0), "fuse_layernorm", OX_TARGET_ONNX,
               "LayerNormalization", 3);
        /* ONNX Runtime takes it at opset 13. */
        expect(norm_model(13, v, false, 1e-5f, NULL, 0), "fuse_layernorm", OX_TARGET_ORT,
               "LayerNormalization", 3);
    }
}

/* Under --target ort a model at opset 13..16 is raised to 17 for the
 * standard op (ONNX's checker rejects LayerNormalization below 17), unless
 * it holds an op whose meaning changed since (RoiAlign-16). */
static void test_layernorm_ort_lift(void **state)
{
    (void)state;
    ox_model *m = norm_model(13, 0, false, 1e-5f, NULL, 0);
    fh_output(m, "y");
    int rw;
    ox_model *o = fh_opt(m, "fuse_layernorm", OX_TARGET_ORT, &rw);
    assert_int_equal(fh_count(o, "LayerNormalization"), 1);
    assert_int_equal(ox_model_opset(o, ""), 17);
    assert_true(o->ir_version >= 8);
    ox_model_free(o);
    ox_model_free(m);
    /* A RoiAlign elsewhere: not raised, not fused, a note. */
    m = norm_model(13, 0, false, 1e-5f, NULL, 0);
    fh_output(m, "y");
    static const int64_t F[4] = {1, 1, 4, 4}, R[2] = {1, 4}, I[1] = {1};
    fh_input(m, "feat", 4, F);
    fh_init(m, "rois", 2, R, (const float[]){0, 0, 2, 2}, 0, 0);
    ox_tensor *bi = ox_tensor_new(OX_DT_INT64, 1, I);
    ox_tensor_set_i64(bi, 0, 0);
    ox_graph_set_initializer(m->graph, ox_graph_value(m->graph, "bidx"), bi);
    fh_node(m, "RoiAlign", "roi", "feat", "rois", "bidx", NULL);
    fh_output(m, "roi");
    ox_error err = {0};
    assert_int_equal(ox_infer_model(m, NULL, &err), OX_OK);
    ox_model *c = ox_model_clone(m);
    assert_int_equal(fh_run(c, "fuse_layernorm", OX_TARGET_ORT), 0);
    assert_int_equal(ox_model_opset(c, ""), 13);
    ox_model_free(c);
    ox_model_free(m);
}

static void test_layernorm_must_not(void **state)
{
    (void)state;
    /* Opset 13 under --target onnx: not applied, and the report says why. */
    ox_model *m = norm_model(13, 0, false, 1e-5f, NULL, 0);
    fh_output(m, "y");
    fh_nofire(m, "fuse_layernorm", OX_TARGET_ONNX);
    char *note = note_of(m, "fuse_layernorm", OX_TARGET_ONNX);
    assert_non_null(note);
    assert_string_equal(note, "fuse_layernorm not applied: needs opset 17 (model has 13)");
    free(note);
    ox_model_free(m);
    /* The variance reduced over another axis than the mean. */
    static const int64_t ax1[1] = {1}, ax2[2] = {-2, -1};
    m = norm_model(17, 0, false, 1e-5f, ax1, 1);
    fh_output(m, "y");
    fh_nofire(m, "fuse_layernorm", OX_TARGET_ONNX);
    ox_model_free(m);
    m = norm_model(17, 0, false, 1e-5f, ax2, 2);
    fh_output(m, "y");
    fh_nofire(m, "fuse_layernorm", OX_TARGET_ONNX);
    ox_model_free(m);
    /* Both over a leading axis: LayerNormalization normalizes trailing ones. */
    static const int64_t first[1] = {1};
    m = fh_model(17);
    fh_input(m, "x", 3, X3);
    mean(m, 17, "mu", "x", 0, first, 1);
    fh_node(m, "Sub", "d", "x", "mu", NULL);
    fh_scalar(m, "two", 2);
    fh_scalar(m, "eps", 1e-5f);
    fh_node(m, "Pow", "sq", "d", "two", NULL);
    mean(m, 17, "var", "sq", 0, first, 1);
    fh_node(m, "Add", "ve", "var", "eps", NULL);
    fh_node(m, "Sqrt", "sd", "ve", NULL);
    fh_node(m, "Div", "y", "d", "sd", NULL);
    fh_output(m, "y");
    fh_nofire(m, "fuse_layernorm", OX_TARGET_ONNX);
    ox_model_free(m);
    /* Epsilon added after the Sqrt: (x - mu) / (sqrt(var) + eps). */
    m = fh_model(17);
    fh_input(m, "x", 3, X3);
    mean(m, 17, "mu", "x", 0, NULL, 0);
    fh_node(m, "Sub", "d", "x", "mu", NULL);
    fh_scalar(m, "two", 2);
    fh_scalar(m, "eps", 1e-5f);
    fh_node(m, "Pow", "sq", "d", "two", NULL);
    mean(m, 17, "var", "sq", 0, NULL, 0);
    fh_node(m, "Sqrt", "sd", "var", NULL);
    fh_node(m, "Add", "se", "sd", "eps", NULL);
    fh_node(m, "Div", "y", "d", "se", NULL);
    fh_output(m, "y");
    fh_nofire(m, "fuse_layernorm", OX_TARGET_ONNX);
    ox_model_free(m);
    /* An intermediate (the centred d, the variance) read outside. */
    static const char *leak[] = {"d", "var", "sd"};
    for (int k = 0; k < 3; k++) {
        m = norm_model(17, 0, false, 1e-5f, NULL, 0);
        fh_output(m, "y");
        fh_output(m, leak[k]);
        fh_nofire(m, "fuse_layernorm", OX_TARGET_ONNX);
        ox_model_free(m);
    }
    /* The normalized value read outside too: the LayerNorm fuses without
     * its scale (ones), and the scale's Mul stays. */
    m = norm_model(17, V_NOBIAS, false, 1e-5f, NULL, 0);
    fh_output(m, "y");
    fh_output(m, "n");
    int rw;
    ox_model *o = fh_opt(m, "fuse_layernorm", OX_TARGET_ONNX, &rw);
    assert_int_equal(fh_count(o, "LayerNormalization"), 1);
    assert_int_equal(fh_count(o, "Mul"), 2);
    ox_model_free(o);
    ox_model_free(m);
    /* A Pow exponent other than 2. */
    m = norm_model(17, 0, false, 1e-5f, NULL, 0);
    ox_tensor_set_f64(ox_graph_value(m->graph, "two")->init, 0, 3);
    fh_output(m, "y");
    fh_nofire(m, "fuse_layernorm", OX_TARGET_ONNX);
    ox_model_free(m);
}

static void test_rmsnorm(void **state)
{
    (void)state;
    static const int variants[] = {V_RECIP, 0, V_DIVONE, V_MULSQ, V_NOSCALE | V_NOBIAS,
                                   V_EPSLEFT | V_CONSTNODE};
    for (size_t k = 0; k < sizeof variants / sizeof *variants; k++) {
        int v = variants[k] | V_NOBIAS;
        expect(norm_model(23, v, true, 1e-6f, NULL, 0), "fuse_rmsnorm", OX_TARGET_ONNX,
               "RMSNormalization", 3);
        /* Below 23 under ort only when asked for (the result fails ONNX's
         * checker: SimplifiedLayerNormalization is ONNX Runtime's op). */
        expect(norm_model(13, v, true, 1e-6f, NULL, 0), "fuse_rmsnorm_ort", OX_TARGET_ORT,
               "SimplifiedLayerNormalization", 3);
        ox_model *m = norm_model(13, v, true, 1e-6f, NULL, 0);
        fh_output(m, "y");
        fh_nofire(m, "fuse_rmsnorm", OX_TARGET_ORT);
        ox_model_free(m);
    }
    /* At 23 the opt-in pass leaves the standard form to fuse_rmsnorm. */
    ox_model *m23 = norm_model(23, V_NOBIAS, true, 1e-6f, NULL, 0);
    fh_output(m23, "y");
    fh_nofire(m23, "fuse_rmsnorm_ort", OX_TARGET_ORT);
    ox_model_free(m23);
    /* The default --level all --target ort set: the pattern stays, and the
     * note names the opt-in. */
    m23 = norm_model(13, V_NOBIAS, true, 1e-6f, NULL, 0);
    fh_output(m23, "y");
    char *ortnote = note_of(m23, "fuse_rmsnorm", OX_TARGET_ORT);
    assert_non_null(ortnote);
    assert_string_equal(ortnote,
                        "fuse_rmsnorm not applied: needs opset 23 (model has 13); --passes "
                        "+fuse_rmsnorm_ort emits ONNX Runtime's SimplifiedLayerNormalization, "
                        "which ONNX's checker rejects");
    free(ortnote);
    ox_pass_manager *pm = ox_pm_new(OX_LEVEL_ALL, OX_TARGET_ORT);
    for (int i = 0; i < ox_pm_count(pm); i++)
        if (!strcmp(ox_pm_pass(pm, i)->name, "fuse_rmsnorm_ort")) {
            assert_true(ox_pm_pass(pm, i)->opt_in);
            assert_false(ox_pm_enabled(pm, i));
        }
    ox_error perr = {0};
    ox_pass_report rep = {0};
    assert_int_equal(ox_pm_run(pm, m23, &rep, &perr), OX_OK);
    assert_int_equal(fh_count(m23, "SimplifiedLayerNormalization"), 0);
    assert_int_equal(fh_count(m23, "ReduceMean"), 1);
    ox_pass_report_free(&rep);
    ox_pm_free(pm);
    ox_model_free(m23);
    ox_model *m = norm_model(13, V_RECIP | V_NOBIAS, true, 1e-6f, NULL, 0);
    fh_output(m, "y");
    fh_nofire(m, "fuse_rmsnorm", OX_TARGET_ONNX);
    char *note = note_of(m, "fuse_rmsnorm", OX_TARGET_ONNX);
    assert_non_null(note);
    assert_string_equal(note, "fuse_rmsnorm not applied: needs opset 23 (model has 13)");
    free(note);
    ox_model_free(m);
    /* A LayerNorm is not an RMSNorm of its centred input. */
    m = norm_model(23, 0, false, 1e-5f, NULL, 0);
    fh_output(m, "y");
    fh_nofire(m, "fuse_rmsnorm", OX_TARGET_ONNX);
    ox_model_free(m);
    /* x read by a node outside the pattern is fine; the x^2 read outside
     * is not. */
    m = norm_model(23, V_NOBIAS, true, 1e-6f, NULL, 0);
    fh_output(m, "y");
    fh_output(m, "sq");
    fh_nofire(m, "fuse_rmsnorm", OX_TARGET_ONNX);
    ox_model_free(m);
}

/* r -> MatMul(W) + b -> Add(x, .) -> LayerNormalization -> y; pre: the sum
 * is read again (a pre-LN residual). */
static ox_model *skip_model(bool bias, bool pre, int64_t axis, bool skip_bcast)
{
    ox_model *m = fh_model(17);
    fh_input(m, "x", 3, X3);
    static const int64_t R[3] = {1, 3, 8};
    fh_input(m, "r", 3, skip_bcast ? R : X3);
    static const int64_t W[2] = {8, 8}, H[1] = {8};
    fh_init(m, "W", 2, W, NULL, -0.5, 0.5);
    fh_node(m, "MatMul", "p", "r", "W", NULL);
    if (bias) {
        fh_init(m, "b", 1, H, NULL, -0.5, 0.5);
        fh_node(m, "Add", "pb", "b", "p", NULL);
    }
    fh_node(m, "Add", "s", "x", bias ? "pb" : "p", NULL);
    fh_init(m, "gamma", 1, H, NULL, 0.5, 1.5);
    fh_init(m, "beta", 1, H, NULL, -0.5, 0.5);
    ox_node *ln = fh_node(m, "LayerNormalization", "y", "s", "gamma", "beta", NULL);
    ox_node_set_attr_i(ln, "axis", axis);
    ox_node_set_attr_f(ln, "epsilon", 1e-5f);
    if (pre) {
        fh_node(m, "Add", "z", "s", "y", NULL);
        fh_output(m, "z");
    }
    return m;
}

static void test_skip_layernorm(void **state)
{
    (void)state;
    for (int v = 0; v < 4; v++) {
        bool bias = v & 1, pre = v & 2;
        ox_model *m = skip_model(bias, pre, -1, false);
        fh_output(m, "y");
        int rw;
        ox_model *o = fh_opt(m, "fuse_skip_layernorm", OX_TARGET_ORT, &rw);
        assert_int_equal(rw, 1);
        assert_int_equal(fh_count(o, "SkipLayerNormalization"), 1);
        assert_int_equal(fh_count(o, "Add"), pre ? 1 : 0);
        for (int i = 0; i < o->graph->n_nodes; i++) {
            ox_node *n = o->graph->nodes[i];
            if (ox_node_is(n, "SkipLayerNormalization")) {
                assert_int_equal(n->n_inputs, bias ? 5 : 4);
                assert_int_equal(n->n_outputs, pre ? 4 : 1);
            }
        }
        ox_model_free(o);
        ox_model_free(m);
    }
    /* Must not: normalization not over the last axis alone; a skip that
     * broadcasts. */
    ox_model *m = skip_model(true, false, 1, false);
    fh_output(m, "y");
    fh_nofire(m, "fuse_skip_layernorm", OX_TARGET_ORT);
    ox_model_free(m);
    m = skip_model(true, false, -1, true);
    fh_output(m, "y");
    fh_nofire(m, "fuse_skip_layernorm", OX_TARGET_ORT);
    ox_model_free(m);
    /* Decomposed at opset 13 under ort: LayerNorm then SkipLayerNorm. */
    m = norm_model(13, 0, false, 1e-12f, NULL, 0);
    fh_input(m, "r", 3, X3);
    /* x = in*3 + 0.5 becomes a residual sum: replace the shift by r. */
    ox_node *add = ox_graph_value(m->graph, "x")->producer;
    ox_node_set_input(add, 1, ox_graph_value(m->graph, "r"));
    fh_output(m, "y");
    int rw;
    ox_model *o = fh_opt(m, "fuse_layernorm,fuse_skip_layernorm", OX_TARGET_ORT, &rw);
    assert_int_equal(fh_count(o, "SkipLayerNormalization"), 1);
    assert_int_equal(fh_count(o, "ReduceMean"), 0);
    ox_model_free(o);
    ox_model_free(m);
}

/* residual_sum: the Add that only a LayerNormalization reads becomes Sum
 * (ONNX Runtime would re-fuse the pair into its slower
 * SkipLayerNormalization); equal outputs, idempotent (fh_opt). */
static void test_residual_sum(void **state)
{
    (void)state;
    for (int bias = 0; bias < 2; bias++) {
        ox_model *m = skip_model(bias, false, -1, false);
        fh_output(m, "y");
        int rw;
        ox_model *o = fh_opt(m, "residual_sum", OX_TARGET_ONNX, &rw);
        assert_int_equal(rw, 1);
        assert_int_equal(fh_count(o, "Sum"), 1);
        assert_int_equal(fh_count(o, "Add"), bias ? 1 : 0); /* the bias Add stays */
        assert_int_equal(fh_count(o, "LayerNormalization"), 1);
        ox_model_free(o);
        ox_model_free(m);
    }
    /* A skip that broadcasts: Sum broadcasts the same way. */
    ox_model *m = skip_model(true, false, -1, true);
    fh_output(m, "y");
    int rw;
    ox_model *o = fh_opt(m, "residual_sum", OX_TARGET_ORT, &rw);
    assert_int_equal(fh_count(o, "Sum"), 1);
    ox_model_free(o);
    ox_model_free(m);
    /* Must not: the sum is read again (pre-LN residual: ONNX Runtime does
     * not fuse that one either), or is a graph output. */
    m = skip_model(true, true, -1, false);
    fh_output(m, "y");
    fh_nofire(m, "residual_sum", OX_TARGET_ONNX);
    ox_model_free(m);
    m = skip_model(true, false, -1, false);
    fh_output(m, "y");
    fh_output(m, "s");
    fh_nofire(m, "residual_sum", OX_TARGET_ORT);
    ox_model_free(m);
    /* Must not: an Add of a constant (LayerNorm's own bias pattern, a
     * shift) is no residual. */
    m = norm_model(17, 0, false, 1e-5f, NULL, 0);
    fh_output(m, "y");
    int r2 = fh_run(m, "fuse_layernorm", OX_TARGET_ONNX);
    assert_int_equal(r2, 1);
    fh_nofire(m, "residual_sum", OX_TARGET_ORT);
    ox_model_free(m);
    /* fuse_skip_layernorm also takes a Sum residual_sum wrote earlier (a
     * model optimized again with +fuse_skip_layernorm). */
    m = skip_model(true, false, -1, false);
    fh_output(m, "y");
    ox_error err = {0};
    assert_int_equal(ox_infer_model(m, NULL, &err), OX_OK);
    assert_int_equal(fh_run(m, "residual_sum", OX_TARGET_ONNX), 1);
    o = fh_opt(m, "fuse_skip_layernorm", OX_TARGET_ORT, &rw);
    assert_int_equal(fh_count(o, "SkipLayerNormalization"), 1);
    assert_int_equal(fh_count(o, "Sum"), 0);
    ox_model_free(o);
    ox_model_free(m);
    /* With +fuse_skip_layernorm the pair becomes SkipLayerNormalization
     * (it runs first), no Sum is left. */
    m = skip_model(true, false, -1, false);
    fh_output(m, "y");
    o = fh_opt(m, "fuse_skip_layernorm,residual_sum", OX_TARGET_ORT, &rw);
    assert_int_equal(fh_count(o, "SkipLayerNormalization"), 1);
    assert_int_equal(fh_count(o, "Sum"), 0);
    ox_model_free(o);
    ox_model_free(m);
    /* A decomposed LayerNorm (opset 13, --target onnx: it stays so) read
     * from a residual Add: ONNX Runtime fuses it to LayerNormalization and
     * then the pair, so the Add becomes Sum here too. */
    m = norm_model(13, 0, false, 1e-5f, NULL, 0);
    fh_input(m, "r", 3, X3);
    ox_node *sh = ox_graph_value(m->graph, "x")->producer;
    ox_node_set_input(sh, 1, ox_graph_value(m->graph, "r"));
    fh_output(m, "y");
    o = fh_opt(m, "fuse_layernorm,residual_sum", OX_TARGET_ONNX, &rw);
    assert_int_equal(rw, 1);
    assert_int_equal(fh_count(o, "Sum"), 1);
    assert_int_equal(fh_count(o, "ReduceMean"), 2);
    ox_model_free(o);
    ox_model_free(m);
    /* ... but not when the sum is read by a third node. */
    m = norm_model(13, 0, false, 1e-5f, NULL, 0);
    fh_input(m, "r", 3, X3);
    sh = ox_graph_value(m->graph, "x")->producer;
    ox_node_set_input(sh, 1, ox_graph_value(m->graph, "r"));
    fh_node(m, "Relu", "xr", "x", NULL);
    fh_output(m, "y");
    fh_output(m, "xr");
    fh_nofire(m, "residual_sum", OX_TARGET_ONNX);
    ox_model_free(m);
    /* Standard ONNX: at extended under either target, not opt-in. */
    const ox_pass *p = ox_pass_find("residual_sum");
    assert_non_null(p);
    assert_int_equal(p->target, OX_TARGET_ONNX);
    assert_int_equal(p->level, OX_LEVEL_EXTENDED);
    assert_false(p->opt_in);
}

/* One rewrite per step: the TUI steps a single fusion. */
static void test_single_step(void **state)
{
    (void)state;
    ox_model *m = norm_model(17, 0, false, 1e-5f, NULL, 0);
    fh_output(m, "y");
    /* A second, independent LayerNorm on the output. */
    ox_error err = {0};
    assert_int_equal(ox_infer_model(m, NULL, &err), OX_OK);
    ox_pass_manager *pm = ox_pm_new(OX_LEVEL_ALL, OX_TARGET_ONNX);
    int idx = -1;
    for (int i = 0; i < ox_pm_count(pm); i++)
        if (!strcmp(ox_pm_pass(pm, i)->name, "fuse_layernorm"))
            idx = i;
    assert_true(idx >= 0);
    assert_true(ox_pm_pass(pm, idx)->single_rewrite);
    ox_pass_report rep = {0};
    assert_int_equal(ox_pm_step(pm, m, idx, 1, &rep, &err), OX_OK);
    assert_int_equal(rep.passes[0].rewrites, 1);
    ox_pass_report_free(&rep);
    ox_pm_free(pm);
    ox_model_free(m);
}

/* fuse_skip_layernorm is opt-in: off at every level, added with "+". */
static void test_opt_in(void **state)
{
    (void)state;
    ox_pass_manager *pm = ox_pm_new(OX_LEVEL_ALL, OX_TARGET_ORT);
    int skip = -1, ln = -1;
    for (int i = 0; i < ox_pm_count(pm); i++) {
        if (!strcmp(ox_pm_pass(pm, i)->name, "fuse_skip_layernorm"))
            skip = i;
        if (!strcmp(ox_pm_pass(pm, i)->name, "fuse_layernorm"))
            ln = i;
    }
    assert_true(skip >= 0 && ln >= 0);
    assert_true(ox_pm_pass(pm, skip)->opt_in);
    assert_false(ox_pm_enabled(pm, skip));
    assert_true(ox_pm_enabled(pm, ln));
    ox_error err = {0};
    assert_int_equal(ox_pm_only(pm, "+fuse_skip_layernorm", &err), OX_OK);
    assert_true(ox_pm_enabled(pm, skip));
    assert_true(ox_pm_enabled(pm, ln));
    assert_int_equal(ox_pm_only(pm, "+no_such_pass", &err), OX_EINVAL);
    ox_pm_free(pm);
}

/* ---- fuse_norm_cast: float16 Casts around the normalization ----------- */

enum {
    C_TAIL16 = 1,   /* scale and bias in float16 after the Cast back */
    C_XSHARED = 2,  /* the float32 x is read again (a residual in float32) */
    C_BACK32 = 4,   /* the Cast back goes to double: not a float16 island */
    C_BIGSCALE = 8, /* a scale beyond float16's range */
};

static ox_node *cast_to(ox_model *m, const char *out, const char *in, ox_dtype to)
{
    ox_node *n = fh_node(m, "Cast", out, in, NULL);
    ox_node_set_attr_i(n, "to", to);
    return n;
}

/* A constant of dtype dt with values on a 1/64 grid (exact in float16, so
 * holding the parameters in float16 loses nothing and the outputs compare
 * tightly). */
static void grid_init(ox_model *m, const char *name, ox_dtype dt, int64_t n, double lo,
                      double big)
{
    ox_tensor *t = ox_tensor_new(dt, 1, &n);
    for (int64_t i = 0; i < n; i++)
        ox_tensor_set_f64(t, i, big ? big : lo + floor((fh_rand() + 1) * 32) / 64);
    assert_int_equal(ox_graph_set_initializer(m->graph, ox_graph_value(m->graph, name), t), OX_OK);
}

/* h (float16) -> Cast float -> decomposed LayerNorm/RMSNorm -> Cast float16
 * -> y, the parameters on the float32 side unless C_TAIL16. */
static ox_model *cast_model(int64_t opset, bool rms, int v)
{
    ox_model *m = fh_model(opset);
    ox_value *h = ox_graph_value(m->graph, "h");
    h->type = ox_type_new_tensor(OX_DT_FLOAT16, 3, X3);
    ox_graph_add_input(m->graph, h);
    cast_to(m, "x", "h", OX_DT_FLOAT);
    const char *d = "x";
    if (!rms) {
        mean(m, opset, "mu", "x", 0, NULL, 0);
        fh_node(m, "Sub", "d", "x", "mu", NULL);
        d = "d";
    }
    fh_scalar(m, "two", 2);
    fh_scalar(m, "eps", 1e-5f);
    fh_node(m, "Pow", "sq", d, "two", NULL);
    mean(m, opset, "var", "sq", 0, NULL, 0);
    fh_node(m, "Add", "ve", "var", "eps", NULL);
    fh_node(m, "Sqrt", "sd", "ve", NULL);
    fh_node(m, "Div", "n", d, "sd", NULL);
    ox_dtype back = v & C_BACK32 ? OX_DT_DOUBLE : OX_DT_FLOAT16;
    if (v & C_TAIL16) {
        cast_to(m, "n16", "n", back);
        grid_init(m, "gamma", back, 8, 0.5, 0);
        fh_node(m, "Mul", rms ? "y" : "s", "n16", "gamma", NULL);
        if (!rms) {
            grid_init(m, "beta", back, 8, -0.5, 0);
            fh_node(m, "Add", "y", "s", "beta", NULL);
        }
    } else {
        grid_init(m, "gamma", OX_DT_FLOAT, 8, 0.5, v & C_BIGSCALE ? 1e6 : 0);
        fh_node(m, "Mul", rms ? "b" : "s", "n", "gamma", NULL);
        if (!rms) {
            grid_init(m, "beta", OX_DT_FLOAT, 8, -0.5, 0);
            fh_node(m, "Add", "b", "s", "beta", NULL);
        }
        cast_to(m, "y", "b", back);
    }
    fh_output(m, "y");
    if (v & C_XSHARED) {
        fh_node(m, "Relu", "x2", "x", NULL);
        fh_output(m, "x2");
    }
    return m;
}

/* Optimizes a clone with `passes`, checks idempotence and that the outputs
 * match the original's on random inputs within float16 rounding (one ulp:
 * the decomposed float32 statistics and the fused kernel's round apart). */
static ox_model *opt_half(ox_model *m, const char *passes, ox_pass_target t)
{
    ox_error err = {0};
    assert_int_equal(ox_infer_model(m, NULL, &err), OX_OK);
    ox_model *o = ox_model_clone(m);
    assert_true(fh_run(o, passes, t) >= 2);
    assert_int_equal(fh_run(o, passes, t), 0);
    ox_exec *ea, *eb;
    ox_exec_opts eo = {.threads = 1};
    assert_int_equal(ox_exec_new(m, &eo, &ea, &err), OX_OK);
    if (ox_exec_new(o, &eo, &eb, &err))
        fail_msg("exec: %s", err.msg);
    int ni = m->graph->n_inputs, no = m->graph->n_outputs;
    for (uint32_t seed = 1; seed <= 2; seed++) {
        ox_rval *in[2] = {0}, *ra[2] = {0}, *rb[2] = {0};
        assert_int_equal(ox_random_inputs(m, NULL, seed, 10, in, &err), OX_OK);
        assert_int_equal(ox_exec_run(ea, ni, in, no, ra, &err), OX_OK);
        assert_int_equal(ox_exec_run(eb, ni, in, no, rb, &err), OX_OK);
        for (int k = 0; k < no; k++) {
            char why[256];
            if (!ox_rval_allclose(rb[k], ra[k], 2e-3, 2e-3, why, sizeof why))
                fail_msg("output %d differs: %s", k, why);
            ox_rval_free(ra[k]);
            ox_rval_free(rb[k]);
        }
        for (int k = 0; k < ni; k++)
            ox_rval_free(in[k]);
    }
    ox_exec_free(ea);
    ox_exec_free(eb);
    return o;
}

static ox_dtype elem_of(const ox_value *v)
{
    return v->init ? v->init->dtype : v->type ? v->type->elem : OX_DT_UNDEFINED;
}

static void expect_half(int64_t opset, bool rms, int v, ox_pass_target t, const char *op,
                        int n_nodes)
{
    ox_model *m = cast_model(opset, rms, v);
    const char *ps = !rms ? "fuse_layernorm,fuse_norm_cast"
                     : opset < 23 ? "fuse_rmsnorm_ort,fuse_norm_cast"
                                  : "fuse_rmsnorm,fuse_norm_cast";
    ox_model *o = opt_half(m, ps, t);
    assert_int_equal(fh_count(o, op), 1);
    assert_int_equal(o->graph->n_nodes, n_nodes);
    for (int i = 0; i < o->graph->n_nodes; i++) {
        ox_node *n = o->graph->nodes[i];
        if (!strcmp(n->op_type, op)) {
            assert_int_equal(elem_of(n->inputs[0]), OX_DT_FLOAT16);
            for (int k = 1; k < n->n_inputs; k++)
                assert_int_equal(elem_of(n->inputs[k]), OX_DT_FLOAT16);
            assert_int_equal(n->n_inputs, rms ? 2 : 3);
        }
    }
    ox_model_free(o);
    ox_model_free(m);
}

static void test_norm_cast(void **state)
{
    (void)state;
    for (int v = 0; v <= C_TAIL16; v++) {
        expect_half(17, false, v, OX_TARGET_ONNX, "LayerNormalization", 1);
        expect_half(13, false, v, OX_TARGET_ORT, "LayerNormalization", 1);
        expect_half(23, true, v, OX_TARGET_ONNX, "RMSNormalization", 1);
        expect_half(13, true, v, OX_TARGET_ORT, "SimplifiedLayerNormalization", 1);
    }
    /* The float32 x read elsewhere: its Cast stays (Cast, Relu, LN). */
    expect_half(17, false, C_XSHARED, OX_TARGET_ONNX, "LayerNormalization", 3);
}

static void test_norm_cast_must_not(void **state)
{
    (void)state;
    /* Casting back to double: the middle is not a float16 island. The
     * float32 fusion happens, the Casts stay. */
    ox_model *m = cast_model(17, false, C_BACK32);
    ox_error err = {0};
    assert_int_equal(ox_infer_model(m, NULL, &err), OX_OK);
    assert_int_equal(fh_run(m, "fuse_layernorm", OX_TARGET_ONNX), 1);
    fh_nofire(m, "fuse_norm_cast", OX_TARGET_ONNX);
    ox_model_free(m);
    /* A scale float16 cannot hold. */
    m = cast_model(17, false, C_BIGSCALE);
    assert_int_equal(ox_infer_model(m, NULL, &err), OX_OK);
    assert_int_equal(fh_run(m, "fuse_layernorm", OX_TARGET_ONNX), 1);
    fh_nofire(m, "fuse_norm_cast", OX_TARGET_ONNX);
    ox_model_free(m);
    /* Opset 16 under --target onnx: no LayerNormalization to start from,
     * so the Casts and the decomposed pattern stay as they are. */
    m = cast_model(16, false, 0);
    fh_nofire(m, "fuse_layernorm,fuse_norm_cast", OX_TARGET_ONNX);
    ox_model_free(m);
}

/* ---- fuse_embed_layernorm ---------------------------------------------- */

enum {
    E_SEG = 1,       /* a segment (token type) Gather */
    E_CONSTPOS = 2,  /* positions as a constant [1, S] row (shapes folded) */
    E_BADPOS = 4,    /* positions 1..S: not what the op computes */
    E_AXIS1 = 8,     /* the LayerNorm over axes 1..2 */
    E_SWAP = 16,     /* Add operands the other way round */
};

static const int64_t IDS[2] = {2, 5};

static ox_value *int_input(ox_model *m, const char *name)
{
    ox_value *v = ox_graph_value(m->graph, name);
    v->type = ox_type_new_tensor(OX_DT_INT64, 2, IDS);
    ox_graph_add_input(m->graph, v);
    return v;
}

static ox_model *embed_model(int v)
{
    ox_model *m = fh_model(17);
    int_input(m, "ids");
    int64_t wd[2] = {50, 8}, pd[2] = {16, 8}, td[2] = {3, 8}, h = 8;
    fh_init(m, "W", 2, wd, NULL, -1, 1);
    fh_init(m, "P", 2, pd, NULL, -1, 1);
    if (v & E_CONSTPOS) {
        int64_t pos[5] = {0, 1, 2, 3, 4}, d2[2] = {1, 5};
        ox_tensor *t = ox_tensor_new(OX_DT_INT64, 2, d2);
        for (int i = 0; i < 5; i++)
            ox_tensor_set_i64(t, i, pos[i] + (v & E_BADPOS ? 1 : 0));
        assert_int_equal(ox_graph_set_initializer(m->graph, ox_graph_value(m->graph, "pos"), t),
                         OX_OK);
    } else {
        int64_t one = 1, zero = 0, st = v & E_BADPOS ? 1 : 0;
        ox_tensor *k = ox_tensor_new(OX_DT_INT64, 0, NULL);
        ox_tensor_set_i64(k, 0, 1);
        assert_int_equal(ox_graph_set_initializer(m->graph, ox_graph_value(m->graph, "k1"), k),
                         OX_OK);
        fh_node(m, "Shape", "shape", "ids", NULL);
        fh_node(m, "Gather", "slen", "shape", "k1", NULL);
        ox_tensor *a = ox_tensor_new(OX_DT_INT64, 0, NULL), *b = ox_tensor_new(OX_DT_INT64, 0, NULL);
        ox_tensor_set_i64(a, 0, st);
        ox_tensor_set_i64(b, 0, one);
        ox_graph_set_initializer(m->graph, ox_graph_value(m->graph, "r0"), a);
        ox_graph_set_initializer(m->graph, ox_graph_value(m->graph, "r1"), b);
        if (v & E_BADPOS) {
            fh_node(m, "Add", "slen1", "slen", "r0", NULL);
            fh_node(m, "Range", "rng", "r0", "slen1", "r1", NULL);
        } else {
            fh_node(m, "Range", "rng", "r0", "slen", "r1", NULL);
        }
        fh_ints(m, "ax0", 1, &zero);
        fh_node(m, "Unsqueeze", "pos", "rng", "ax0", NULL);
    }
    fh_node(m, "Gather", "we", "W", "ids", NULL);
    fh_node(m, "Gather", "pe", "P", "pos", NULL);
    if (v & E_SWAP)
        fh_node(m, "Add", "e1", "pe", "we", NULL);
    else
        fh_node(m, "Add", "e1", "we", "pe", NULL);
    const char *sum = "e1";
    if (v & E_SEG) {
        int_input(m, "seg");
        fh_init(m, "T", 2, td, NULL, -1, 1);
        fh_node(m, "Gather", "te", "T", "seg", NULL);
        fh_node(m, "Add", "e2", v & E_SWAP ? "te" : "e1", v & E_SWAP ? "e1" : "te", NULL);
        sum = "e2";
    }
    if (v & E_AXIS1) {
        int64_t d2[2] = {5, 8};
        fh_init(m, "gamma", 2, d2, NULL, 0.5, 1.5);
        fh_init(m, "beta", 2, d2, NULL, -0.5, 0.5);
    } else {
        fh_init(m, "gamma", 1, &h, NULL, 0.5, 1.5);
        fh_init(m, "beta", 1, &h, NULL, -0.5, 0.5);
    }
    ox_node *ln = fh_node(m, "LayerNormalization", "y", sum, "gamma", "beta", NULL);
    ox_node_set_attr_i(ln, "axis", v & E_AXIS1 ? 1 : -1);
    ox_node_set_attr_f(ln, "epsilon", 1e-12f);
    fh_output(m, "y");
    return m;
}

static void test_embed_layernorm(void **state)
{
    (void)state;
    static const int fire[] = {0, E_SEG, E_CONSTPOS, E_SEG | E_CONSTPOS, E_SEG | E_SWAP};
    for (size_t k = 0; k < sizeof fire / sizeof *fire; k++) {
        ox_model *m = embed_model(fire[k]);
        int rw;
        ox_model *o = fh_opt(m, "fuse_embed_layernorm", OX_TARGET_ORT, &rw);
        assert_int_equal(rw, 1);
        assert_int_equal(fh_count(o, "EmbedLayerNormalization"), 1);
        assert_int_equal(fh_count(o, "LayerNormalization"), 0);
        /* The Range chain's Gather(Shape) is left dead for the cleanup. */
        assert_int_equal(fh_count(o, "Add"), 0);
        assert_int_equal(fh_count(o, "Gather"), fire[k] & E_CONSTPOS ? 0 : 1);
        /* int64 ids and segment ids become int32, one Cast each. */
        assert_int_equal(fh_count(o, "Cast"), fire[k] & E_SEG ? 2 : 1);
        ox_model_free(o);
        ox_model_free(m);
    }
    /* Positions that are not 0..S-1, a LayerNorm over more than the hidden
     * axis. */
    static const int nofire[] = {E_BADPOS, E_BADPOS | E_CONSTPOS, E_AXIS1};
    for (size_t k = 0; k < sizeof nofire / sizeof *nofire; k++) {
        ox_model *m = embed_model(nofire[k]);
        fh_nofire(m, "fuse_embed_layernorm", OX_TARGET_ORT);
        ox_model_free(m);
    }
    /* A model residual_sum already wrote (the embedding sum as Sum). */
    ox_model *m = embed_model(E_SEG);
    ox_error err = {0};
    assert_int_equal(ox_infer_model(m, NULL, &err), OX_OK);
    assert_int_equal(fh_run(m, "residual_sum", OX_TARGET_ONNX), 1);
    assert_int_equal(fh_count(m, "Sum"), 1);
    int rw;
    ox_model *o = fh_opt(m, "fuse_embed_layernorm", OX_TARGET_ORT, &rw);
    assert_int_equal(fh_count(o, "EmbedLayerNormalization"), 1);
    assert_int_equal(fh_count(o, "Sum"), 0);
    ox_model_free(o);
    ox_model_free(m);
    /* A contrib op: only under --target ort. */
    assert_int_equal(ox_pass_find("fuse_embed_layernorm")->target, OX_TARGET_ORT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layernorm_fires),
        cmocka_unit_test(test_layernorm_ort_lift),
        cmocka_unit_test(test_layernorm_must_not),
        cmocka_unit_test(test_rmsnorm),
        cmocka_unit_test(test_skip_layernorm),
        cmocka_unit_test(test_residual_sum),
        cmocka_unit_test(test_single_step),
        cmocka_unit_test(test_opt_in),
        cmocka_unit_test(test_norm_cast),
        cmocka_unit_test(test_norm_cast_must_not),
        cmocka_unit_test(test_embed_layernorm),
    };
    int r = cmocka_run_group_tests(tests, NULL, NULL);
    if (!r)
        fh_all_fired("fuse_layernorm,fuse_rmsnorm,fuse_skip_layernorm,fuse_norm_cast,fuse_embed_layernorm,"
                     "fuse_rmsnorm_ort,residual_sum");
    return r;
}
