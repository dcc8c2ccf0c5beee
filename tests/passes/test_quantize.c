/* quantize_dynamic (src/passes/quantize.c) and the integer kernels it
 * relies on: the quantization arithmetic (symmetric scales, per channel,
 * rounding half to even as ONNX specifies), the three output forms firing
 * and not firing, the numeric equivalence of the forms on random inputs,
 * MatMulInteger / DynamicQuantizeMatMul against a naive reference, and a
 * sweep over the shared transformers (skipped with a reason without
 * ../shared). */
#include <unistd.h>

#include "fuse_harness.h"
#include "onnxscope/io.h"
#include "onnxscope/quantize.h"
#include "passes/quant_math.h"
#include "testutil.h"

/* ---- arithmetic ------------------------------------------------------------ */

static void test_round_half_even(void **state)
{
    (void)state;
    assert_true(ox__q_round_even(0.5f) == 0.0f);
    assert_true(ox__q_round_even(1.5f) == 2.0f);
    assert_true(ox__q_round_even(2.5f) == 2.0f);
    assert_true(ox__q_round_even(-0.5f) == 0.0f);
    assert_true(ox__q_round_even(-1.5f) == -2.0f);
    assert_true(ox__q_round_even(-2.5f) == -2.0f);
    assert_true(ox__q_round_even(2.4999f) == 2.0f);
    /* x / s lands on a tie: 2.5 -> 2, 3.5 -> 4 */
    assert_int_equal(ox__q_quant_i8(0.25f, 0.1f), 2);  /* 2.4999999 in float */
    assert_int_equal(ox__q_quant_i8(2.5f, 1.0f), 2);
    assert_int_equal(ox__q_quant_i8(3.5f, 1.0f), 4);
    assert_int_equal(ox__q_quant_i8(-2.5f, 1.0f), -2);
    /* saturation to the symmetric range */
    assert_int_equal(ox__q_quant_i8(1000.0f, 1.0f), 127);
    assert_int_equal(ox__q_quant_i8(-1000.0f, 1.0f), -127);
}

static void test_scales(void **state)
{
    (void)state;
    assert_true(ox__q_sym_scale(0.0f) == 1.0f);
    assert_true(fabsf(ox__q_sym_scale(1.27f) - 0.01f) < 1e-8f);
    /* W [K=3, N=2], per column: column 0 max 1.27, column 1 max 0.127 */
    const float w[6] = {1.27f, 0.127f, -0.635f, -0.0635f, 0.0f, 0.1f};
    int8_t q[6];
    float s[2];
    ox_q_stats st;
    ox__q_quantize_sym(w, 3, 2, 1, q, s, &st);
    assert_true(fabsf(s[0] - 0.01f) < 1e-8f && fabsf(s[1] - 0.001f) < 1e-9f);
    assert_int_equal(q[0], 127);
    assert_int_equal(q[1], 127);
    assert_int_equal(q[2], -64);   /* -63.5 -> -64 (even) */
    assert_int_equal(q[3], -64);
    assert_int_equal(q[4], 0);
    assert_int_equal(q[5], 100);
    assert_true(st.scale_min == s[1] && st.scale_max == s[0]);
    assert_true(st.max_abs_err <= 0.005 + 1e-7);   /* half a step of column 0 */
    assert_true(ox__q_snr_db(&st) > 30.0);
    /* per tensor: one scale from the largest magnitude */
    ox__q_quantize_sym(w, 1, 1, 6, q, s, &st);
    assert_true(fabsf(s[0] - 0.01f) < 1e-8f);
    assert_int_equal(q[1], 13);    /* 12.7 -> 13 */
    /* exact weights: infinite SNR */
    const float e[2] = {1.0f, -1.0f};
    ox__q_quantize_sym(e, 1, 1, 2, q, s, &st);
    assert_true(st.max_abs_err == 0.0 && isinf(ox__q_snr_db(&st)));
}

static void test_dynamic_params(void **state)
{
    (void)state;
    float s;
    uint8_t zp;
    /* range [-84.5, 170.5]: scale 1, zero point 84.5 -> 84 (ties to even) */
    const float x[3] = {-84.5f, 0.0f, 170.5f};
    ox__q_dynamic_params(x, 3, &s, &zp);
    assert_true(s == 1.0f);
    assert_int_equal(zp, 84);
    /* positive data: the range still includes 0, so the zero point is 0 */
    const float p[2] = {1.0f, 2.55f};
    ox__q_dynamic_params(p, 2, &s, &zp);
    assert_int_equal(zp, 0);
    assert_true(fabsf(s - 0.01f) < 1e-8f);
    const float z[2] = {0, 0};
    ox__q_dynamic_params(z, 2, &s, &zp);
    assert_true(s == 0.0f && zp == 0);
}

/* ---- the pass ---------------------------------------------------------------- */

/* Runs quantize_dynamic alone with options o on m (target t); returns the
 * rewrites; *rep_out (may be NULL) gets the report. The result passes our
 * checker, and a second run changes nothing. */
static int q_run(ox_model *m, const ox_quant_opts *o, ox_pass_target t, ox_pass_report *rep_out)
{
    ox_error err = {0};
    assert_int_equal(ox_infer_model(m, NULL, &err), OX_OK);
    int rw = 0;
    for (int round = 0; round < 2; round++) {
        ox_pass_manager *pm = ox_pm_new(OX_LEVEL_BASIC, t);
        assert_int_equal(ox_pm_only(pm, "quantize_dynamic", &err), OX_OK);
        ox_pm_set_quant_opts(pm, o);
        ox_pass_report rep = {0};
        assert_int_equal(ox_pm_run(pm, m, &rep, &err), OX_OK);
        int r = 0;
        for (int i = 0; i < rep.n_passes; i++)
            r += rep.passes[i].rewrites;
        if (round == 0) {
            rw = r;
            if (rep_out) {
                *rep_out = rep;
                memset(&rep, 0, sizeof rep);
            }
        } else {
            assert_int_equal(r, 0);   /* idempotent */
        }
        ox_pass_report_free(&rep);
        ox_pm_free(pm);
    }
    ox_check_report cr = {0};
    ox_status st = ox_check_model(m, &cr);
    if (st)
        print_error("checker: %s\n", cr.n_issues ? cr.issues[0].msg : "?");
    ox_check_report_free(&cr);
    assert_int_equal(st, OX_OK);
    return rw;
}

static ox_quant_opts opts(ox_quant_format f)
{
    ox_quant_opts o;
    ox_quant_opts_default(&o);
    o.format = f;
    return o;
}

/* y = x[4,64] @ W[64,80] (+ a second MatMul on the same x when two). */
static ox_model *mm_model(int64_t opset, bool two, bool const_w)
{
    ox_model *m = fh_model(opset);
    int64_t xd[2] = {4, 64}, wd[2] = {64, 80};
    fh_input(m, "x", 2, xd);
    if (const_w)
        fh_init(m, "W", 2, wd, NULL, -0.5, 0.5);
    else
        fh_input(m, "W", 2, wd);
    fh_node(m, "MatMul", "y", "x", "W", NULL);
    fh_output(m, "y");
    if (two) {
        fh_init(m, "W2", 2, wd, NULL, -2, 2);
        fh_node(m, "MatMul", "y2", "x", "W2", NULL);
        fh_output(m, "y2");
    }
    return m;
}

/* Runs a and b on the same random inputs (seed), returns the largest
 * |a - b| over output k and the largest |a| in *amax. */
static double out_diff(ox_model *a, ox_model *b, int k, uint32_t seed, double *amax,
                       double *cosine)
{
    ox_error err = {0};
    ox_exec *ea, *eb;
    ox_exec_opts eo = {.threads = 1};
    assert_int_equal(ox_exec_new(a, &eo, &ea, &err), OX_OK);
    if (ox_exec_new(b, &eo, &eb, &err))
        fail_msg("exec: %s", err.msg);
    int ni = a->graph->n_inputs, no = a->graph->n_outputs;
    ox_rval *in[8] = {0}, *ra[8] = {0}, *rb[8] = {0};
    assert_int_equal(ox_random_inputs(a, NULL, seed, 10, in, &err), OX_OK);
    assert_int_equal(ox_exec_run(ea, ni, in, no, ra, &err), OX_OK);
    if (ox_exec_run(eb, ni, in, no, rb, &err))
        fail_msg("run: %s", err.msg);
    const ox_tensor *ta = ra[k]->t, *tb = rb[k]->t;
    assert_int_equal(ta->numel, tb->numel);
    double d = 0, m = 0, ab = 0, aa = 0, bb = 0;
    for (int64_t i = 0; i < ta->numel; i++) {
        double x = ox_tensor_get_f64(ta, i), y = ox_tensor_get_f64(tb, i);
        d = fmax(d, fabs(x - y));
        m = fmax(m, fabs(x));
        ab += x * y, aa += x * x, bb += y * y;
    }
    *amax = m;
    if (cosine)
        *cosine = ab / sqrt(aa * bb);
    for (int i = 0; i < 8; i++) {
        ox_rval_free(in[i]);
        ox_rval_free(ra[i]);
        ox_rval_free(rb[i]);
    }
    ox_exec_free(ea);
    ox_exec_free(eb);
    return d;
}

static const ox_node *find_op(const ox_model *m, const char *op)
{
    for (int i = 0; i < m->graph->n_nodes; i++)
        if (!strcmp(m->graph->nodes[i]->op_type, op))
            return m->graph->nodes[i];
    return NULL;
}

static void test_integer_form(void **state)
{
    (void)state;
    ox_model *m = mm_model(13, true, true), *q = NULL;
    ox_error err = {0};
    assert_int_equal(ox_infer_model(m, NULL, &err), OX_OK);
    q = ox_model_clone(m);
    ox_quant_opts o = opts(OX_QUANT_INTEGER);
    ox_pass_report rep = {0};
    assert_int_equal(q_run(q, &o, OX_TARGET_ONNX, &rep), 2);
    assert_int_equal(fh_count(q, "MatMulInteger"), 2);
    assert_int_equal(fh_count(q, "DynamicQuantizeLinear"), 1);  /* shared by both */
    assert_int_equal(fh_count(q, "MatMul"), 0);
    const ox_node *mmi = find_op(q, "MatMulInteger");
    assert_int_equal(mmi->inputs[1]->init->dtype, OX_DT_INT8);
    assert_int_equal(mmi->inputs[1]->init->numel, 64 * 80);
    /* report: one entry per weight, per column, zero point 0 */
    assert_int_equal(rep.n_quant, 2);
    assert_int_equal(rep.quant[0].channels, 80);
    assert_int_equal(rep.quant[0].zero_point, 0);
    assert_string_equal(rep.quant[0].form, "MatMulInteger");
    assert_string_equal(rep.quant[0].weight, "W");
    assert_int_equal(rep.quant[0].bytes_before, 64 * 80 * 4);
    assert_int_equal(rep.quant[0].bytes_after, 64 * 80 + 80 * 4);
    assert_true(rep.quant[0].snr_db > 30 && rep.quant[0].max_abs_err < 0.5 / 127 + 1e-6);
    assert_true(rep.quant[1].scale_max > rep.quant[0].scale_max);   /* W2 is wider */
    ox_pass_report_free(&rep);
    for (int k = 0; k < 2; k++) {
        double amax, cs;
        double d = out_diff(m, q, k, 1, &amax, &cs);
        assert_true(d <= 0.02 * amax);
        assert_true(cs >= 0.999);
    }
    ox_model_free(q);
    ox_model_free(m);
}

/* integer, qdq and ort forms agree: ort bit for bit with integer (same
 * float operations), qdq within float rounding. */
static void test_forms_agree(void **state)
{
    (void)state;
    ox_model *m = mm_model(13, false, true);
    ox_error err = {0};
    assert_int_equal(ox_infer_model(m, NULL, &err), OX_OK);
    ox_model *qi = ox_model_clone(m), *qq = ox_model_clone(m), *qo = ox_model_clone(m);
    ox_quant_opts oi = opts(OX_QUANT_INTEGER), oq = opts(OX_QUANT_QDQ);
    assert_int_equal(q_run(qi, &oi, OX_TARGET_ONNX, NULL), 1);
    assert_int_equal(q_run(qq, &oq, OX_TARGET_ONNX, NULL), 1);
    assert_int_equal(q_run(qo, &oi, OX_TARGET_ORT, NULL), 1);
    /* qdq: the MatMul stays, reading two DequantizeLinear; per-axis weights */
    assert_int_equal(fh_count(qq, "MatMul"), 1);
    assert_int_equal(fh_count(qq, "DequantizeLinear"), 2);
    assert_int_equal(fh_count(qq, "DynamicQuantizeLinear"), 1);
    const ox_node *mm = find_op(qq, "MatMul");
    const ox_node *wdq = mm->inputs[1]->producer;
    assert_string_equal(wdq->op_type, "DequantizeLinear");
    assert_int_equal(ox_node_attr_i(wdq, "axis", -5), 1);
    /* ort: one contrib node, its opset imported */
    const ox_node *dq = find_op(qo, "DynamicQuantizeMatMul");
    assert_non_null(dq);
    assert_string_equal(dq->domain, "com.microsoft");
    assert_int_equal(ox_model_opset(qo, "com.microsoft"), 1);
    assert_int_equal(qo->graph->n_nodes, 1);
    for (uint32_t seed = 1; seed <= 3; seed++) {
        double amax;
        assert_true(out_diff(qi, qo, 0, seed, &amax, NULL) == 0.0);
        assert_true(out_diff(qi, qq, 0, seed, &amax, NULL) <= 1e-5 * amax + 1e-6);
    }
    ox_model_free(qi);
    ox_model_free(qq);
    ox_model_free(qo);
    ox_model_free(m);
}

/* The packed weights cached in the plan across runs give what a fresh
 * executor gives. */
static void test_cached_weights(void **state)
{
    (void)state;
    ox_model *m = mm_model(13, true, true);
    ox_quant_opts o = opts(OX_QUANT_INTEGER);
    for (int t = 0; t < 2; t++) {
        ox_model *q = ox_model_clone(m);
        assert_int_equal(q_run(q, &o, t ? OX_TARGET_ORT : OX_TARGET_ONNX, NULL), 2);
        ox_error err = {0};
        ox_exec_opts eo = {.threads = 1};
        ox_exec *kept;
        assert_int_equal(ox_exec_new(q, &eo, &kept, &err), OX_OK);
        for (uint32_t seed = 1; seed <= 3; seed++) {
            ox_exec *fresh;
            assert_int_equal(ox_exec_new(q, &eo, &fresh, &err), OX_OK);
            ox_rval *in[8] = {0}, *ra[8] = {0}, *rb[8] = {0};
            assert_int_equal(ox_random_inputs(q, NULL, seed, 10, in, &err), OX_OK);
            assert_int_equal(ox_exec_run(kept, 1, in, 2, ra, &err), OX_OK);
            assert_int_equal(ox_exec_run(fresh, 1, in, 2, rb, &err), OX_OK);
            for (int k = 0; k < 2; k++)
                assert_true(ox_tensor_equal(ra[k]->t, rb[k]->t));
            for (int k = 0; k < 8; k++) {
                ox_rval_free(in[k]);
                ox_rval_free(ra[k]);
                ox_rval_free(rb[k]);
            }
            ox_exec_free(fresh);
        }
        ox_exec_free(kept);
        ox_model_free(q);
    }
    ox_model_free(m);
}

/* Split over threads, the integer products give the same bits. */
static void test_threads(void **state)
{
    (void)state;
    ox_model *m = fh_model(13);
    int64_t xd[2] = {64, 256}, wd[2] = {256, 512};
    fh_input(m, "x", 2, xd);
    fh_init(m, "W", 2, wd, NULL, -1, 1);
    fh_node(m, "MatMul", "y", "x", "W", NULL);
    fh_output(m, "y");
    ox_quant_opts o = opts(OX_QUANT_INTEGER);
    for (int t = 0; t < 2; t++) {
        ox_model *q = ox_model_clone(m);
        assert_int_equal(q_run(q, &o, t ? OX_TARGET_ORT : OX_TARGET_ONNX, NULL), 1);
        ox_error err = {0};
        ox_exec *e1, *e2;
        ox_exec_opts o1 = {.threads = 1}, o2 = {.threads = 2};
        assert_int_equal(ox_exec_new(q, &o1, &e1, &err), OX_OK);
        assert_int_equal(ox_exec_new(q, &o2, &e2, &err), OX_OK);
        for (int novnni = 0; novnni < 2; novnni++) {
            if (novnni)
                setenv("ONNXSCOPE_NO_VNNI", "1", 1);
            ox_rval *in[8] = {0}, *ra[8] = {0}, *rb[8] = {0};
            assert_int_equal(ox_random_inputs(q, NULL, 5, 10, in, &err), OX_OK);
            assert_int_equal(ox_exec_run(e1, 1, in, 1, ra, &err), OX_OK);
            assert_int_equal(ox_exec_run(e2, 1, in, 1, rb, &err), OX_OK);
            assert_true(ox_tensor_equal(ra[0]->t, rb[0]->t));
            ox_rval_free(in[0]);
            ox_rval_free(ra[0]);
            ox_rval_free(rb[0]);
            unsetenv("ONNXSCOPE_NO_VNNI");
        }
        ox_exec_free(e1);
        ox_exec_free(e2);
        ox_model_free(q);
    }
    ox_model_free(m);
}

/* Under --target ort a bias Add after the MatMul goes into
 * DynamicQuantizeMatMul's bias input; same outputs as the standard form. */
static void test_ort_bias(void **state)
{
    (void)state;
    ox_model *m = fh_model(13);
    int64_t xd[3] = {2, 3, 64}, wd[2] = {64, 80}, bd[1] = {80};
    fh_input(m, "x", 3, xd);
    fh_init(m, "W", 2, wd, NULL, -1, 1);
    fh_init(m, "b", 1, bd, NULL, -1, 1);
    fh_node(m, "MatMul", "mm", "x", "W", NULL);
    fh_node(m, "Add", "y", "b", "mm", NULL);
    fh_output(m, "y");
    ox_error err = {0};
    assert_int_equal(ox_infer_model(m, NULL, &err), OX_OK);
    ox_model *qi = ox_model_clone(m), *qo = ox_model_clone(m);
    ox_quant_opts o = opts(OX_QUANT_INTEGER);
    assert_int_equal(q_run(qi, &o, OX_TARGET_ONNX, NULL), 1);
    assert_int_equal(q_run(qo, &o, OX_TARGET_ORT, NULL), 1);
    assert_int_equal(qo->graph->n_nodes, 1);
    const ox_node *d = find_op(qo, "DynamicQuantizeMatMul");
    assert_int_equal(d->n_inputs, 5);
    assert_string_equal(d->inputs[4]->name, "b");
    assert_string_equal(d->outputs[0]->name, "y");
    for (uint32_t seed = 1; seed <= 2; seed++) {
        double amax, cs;
        assert_true(out_diff(qi, qo, 0, seed, &amax, NULL) == 0.0);
        double dd = out_diff(m, qo, 0, seed, &amax, &cs);
        assert_true(dd <= 0.02 * amax && cs >= 0.999);
    }
    ox_model_free(qi);
    ox_model_free(qo);
    ox_model_free(m);
}

/* Gemm with transB, alpha, beta and a row bias, in every form. */
static void test_gemm(void **state)
{
    (void)state;
    ox_model *m = fh_model(13);
    int64_t xd[2] = {5, 96}, wd[2] = {72, 96}, cd[1] = {72};
    fh_input(m, "x", 2, xd);
    fh_init(m, "W", 2, wd, NULL, -1, 1);
    fh_init(m, "C", 1, cd, NULL, -1, 1);
    ox_node *g = fh_node(m, "Gemm", "y", "x", "W", "C", NULL);
    ox_node_set_attr_i(g, "transB", 1);
    ox_node_set_attr_f(g, "alpha", 0.5f);
    ox_node_set_attr_f(g, "beta", 2.0f);
    fh_output(m, "y");
    ox_error err = {0};
    assert_int_equal(ox_infer_model(m, NULL, &err), OX_OK);
    ox_quant_opts oi = opts(OX_QUANT_INTEGER), oq = opts(OX_QUANT_QDQ);
    struct { const ox_quant_opts *o; ox_pass_target t; const char *op; } forms[] = {
        {&oi, OX_TARGET_ONNX, "MatMulInteger"},
        {&oq, OX_TARGET_ONNX, "Gemm"},
        {&oi, OX_TARGET_ORT, "DynamicQuantizeMatMul"},
    };
    for (int f = 0; f < 3; f++) {
        ox_model *q = ox_model_clone(m);
        ox_pass_report rep = {0};
        assert_int_equal(q_run(q, forms[f].o, forms[f].t, &rep), 1);
        assert_non_null(find_op(q, forms[f].op));
        assert_int_equal(rep.quant[0].channels, 72);
        ox_pass_report_free(&rep);
        double amax, cs;
        double d = out_diff(m, q, 0, 7, &amax, &cs);
        if (d > 0.02 * amax || cs < 0.999)
            fail_msg("form %d: max diff %g of %g, cosine %g", f, d, amax, cs);
        ox_model_free(q);
    }
    ox_model_free(m);
}

static void test_conv(void **state)
{
    (void)state;
    ox_model *m = fh_model(13);
    int64_t xd[4] = {1, 16, 10, 10}, wd[4] = {32, 16, 3, 3}, bd[1] = {32};
    fh_input(m, "x", 4, xd);
    fh_init(m, "W", 4, wd, NULL, -1, 1);
    fh_init(m, "B", 1, bd, NULL, -1, 1);
    ox_node *c = fh_node(m, "Conv", "y", "x", "W", "B", NULL);
    int64_t pads[4] = {1, 1, 1, 1};
    ox_node_set_attr_ints(c, "pads", 4, pads);
    fh_output(m, "y");
    ox_error err = {0};
    assert_int_equal(ox_infer_model(m, NULL, &err), OX_OK);
    ox_quant_opts o = opts(OX_QUANT_INTEGER);
    ox_model *q = ox_model_clone(m);
    assert_int_equal(q_run(q, &o, OX_TARGET_ONNX, NULL), 0);   /* Conv is opt-in */
    o.conv = true;
    ox_pass_report rep = {0};
    assert_int_equal(q_run(q, &o, OX_TARGET_ONNX, &rep), 1);
    assert_non_null(find_op(q, "ConvInteger"));
    assert_int_equal(rep.quant[0].channels, 32);
    ox_pass_report_free(&rep);
    double amax, cs;
    double d = out_diff(m, q, 0, 3, &amax, &cs);
    if (d > 0.02 * amax || cs < 0.999)
        fail_msg("conv: max diff %g of %g, cosine %g", d, amax, cs);
    ox_model_free(q);
    q = ox_model_clone(m);
    ox_quant_opts oq = opts(OX_QUANT_QDQ);
    oq.conv = true;
    assert_int_equal(q_run(q, &oq, OX_TARGET_ONNX, NULL), 1);
    const ox_node *cv = find_op(q, "Conv");
    assert_int_equal(ox_node_attr_i(cv->inputs[1]->producer, "axis", -5), 0);
    d = out_diff(m, q, 0, 3, &amax, &cs);
    assert_true(d <= 0.02 * amax && cs >= 0.999);
    ox_model_free(q);
    ox_model_free(m);
}

static void test_not_firing(void **state)
{
    (void)state;
    ox_quant_opts o = opts(OX_QUANT_INTEGER);
    /* weight smaller than the threshold (64*80 = 5120 elements) */
    ox_model *m = mm_model(13, false, true);
    o.min_elems = 5121;
    assert_int_equal(q_run(m, &o, OX_TARGET_ONNX, NULL), 0);
    o.min_elems = 5120;
    assert_int_equal(q_run(m, &o, OX_TARGET_ONNX, NULL), 1);
    ox_model_free(m);
    /* non-constant weight */
    o = opts(OX_QUANT_INTEGER);
    m = mm_model(13, false, false);
    assert_int_equal(q_run(m, &o, OX_TARGET_ONNX, NULL), 0);
    ox_model_free(m);
    /* opset 10 has no DynamicQuantizeLinear: left alone with a note */
    m = mm_model(10, false, true);
    ox_pass_report rep = {0};
    assert_int_equal(q_run(m, &o, OX_TARGET_ONNX, &rep), 0);
    const ox_pass_stat *s = ox_pass_report_find(&rep, "quantize_dynamic");
    assert_non_null(s);
    assert_non_null(s->note);
    assert_non_null(strstr(s->note, "opset 11"));
    ox_pass_report_free(&rep);
    ox_model_free(m);
    /* opset 11-12: QDQ falls back to one scale (no per-axis DequantizeLinear) */
    m = mm_model(12, false, true);
    o = opts(OX_QUANT_QDQ);
    assert_int_equal(q_run(m, &o, OX_TARGET_ONNX, &rep), 1);
    assert_int_equal(rep.quant[0].channels, 1);
    ox_pass_report_free(&rep);
    ox_model_free(m);
    /* per tensor on request */
    m = mm_model(13, false, true);
    o = opts(OX_QUANT_INTEGER);
    o.per_tensor = true;
    assert_int_equal(q_run(m, &o, OX_TARGET_ONNX, &rep), 1);
    assert_int_equal(rep.quant[0].channels, 1);
    ox_pass_report_free(&rep);
    ox_model_free(m);
    /* not in any level: the default pipeline leaves MatMul alone */
    m = mm_model(13, false, true);
    ox_error err = {0};
    ox_pass_manager *pm = ox_pm_new(OX_LEVEL_ALL, OX_TARGET_ORT);
    assert_int_equal(ox_pm_run(pm, m, NULL, &err), OX_OK);
    assert_int_equal(fh_count(m, "MatMul"), 1);
    ox_pm_free(pm);
    ox_model_free(m);
}

/* ---- command line -------------------------------------------------------------- */

static void test_cli(void **state)
{
    (void)state;
    const char *bin = ox_test_bin();
    if (!bin) {
        print_message("# skipped: ONNXSCOPE_BIN is not set\n");
        skip();
    }
    char dir[] = "/tmp/oxquantXXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128], cmd[1024], *out = NULL;
    snprintf(path, sizeof path, "%s/m.onnx", dir);
    ox_model *m = mm_model(13, false, true);
    ox_error err = {0};
    ox_save_opts so = {0};
    assert_int_equal(ox_save(m, path, &so, &err), OX_OK);
    ox_model_free(m);
    /* JSON: one entry, per column, its error */
    snprintf(cmd, sizeof cmd, "%s optimize %s -o %s/q.onnx --passes +quantize_dynamic --json", bin,
             path, dir);
    assert_int_equal(ox_test_run(cmd, &out), 0);
    assert_non_null(strstr(out, "\"quantization\""));
    assert_non_null(strstr(out, "\"form\": \"MatMulInteger\""));
    assert_non_null(strstr(out, "\"channels\": 80"));
    assert_non_null(strstr(out, "\"snr_db\""));
    free(out);
    /* text: the int8 line; qdq and ort forms */
    snprintf(cmd, sizeof cmd, "%s optimize %s -o %s/q.onnx --passes +quantize_dynamic "
             "--quant-format qdq --quant-per-tensor", bin, path, dir);
    assert_int_equal(ox_test_run(cmd, &out), 0);
    assert_non_null(strstr(out, "int8 "));
    assert_non_null(strstr(out, "(MatMul -> QDQ): weight W, 1 scale "));
    free(out);
    snprintf(cmd, sizeof cmd, "%s optimize %s -o %s/q.onnx --passes +quantize_dynamic "
             "--target ort", bin, path, dir);
    assert_int_equal(ox_test_run(cmd, &out), 0);
    assert_non_null(strstr(out, "-> DynamicQuantizeMatMul"));
    free(out);
    /* the threshold leaves it float */
    snprintf(cmd, sizeof cmd, "%s optimize %s -o %s/q.onnx --passes +quantize_dynamic "
             "--quant-min-elems 100000", bin, path, dir);
    assert_int_equal(ox_test_run(cmd, &out), 0);
    assert_null(strstr(out, "int8 "));
    free(out);
    /* usage errors, and an option without the pass */
    snprintf(cmd, sizeof cmd, "%s optimize %s -o %s/q.onnx --quant-format int4", bin, path, dir);
    assert_int_equal(ox_test_run(cmd, &out), 2);
    assert_non_null(strstr(out, "onnxscope: --quant-format: expected integer or qdq"));
    free(out);
    snprintf(cmd, sizeof cmd, "%s optimize %s -o %s/q.onnx --quant-min-elems -3", bin, path, dir);
    assert_int_equal(ox_test_run(cmd, &out), 2);
    free(out);
    snprintf(cmd, sizeof cmd, "%s optimize %s -o %s/q.onnx --quant-conv", bin, path, dir);
    assert_int_equal(ox_test_run(cmd, &out), 0);
    assert_non_null(strstr(out, "--quant-conv has no effect: quantize_dynamic is not enabled"));
    free(out);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(ox_test_run(cmd, NULL), 0);
}

/* optimize --check on a quantized model: checked with quantize_dynamic's
 * criteria (no --force needed), the line and the JSON saying which one
 * applied; --rtol/--atol/--min-cosine replace them; usage errors. */
static void test_cli_check(void **state)
{
    (void)state;
    const char *bin = ox_test_bin();
    if (!bin) {
        print_message("# skipped: ONNXSCOPE_BIN is not set\n");
        skip();
    }
    char dir[] = "/tmp/oxqcheckXXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128], q[160], cmd[1024], *out = NULL;
    snprintf(path, sizeof path, "%s/m.onnx", dir);
    snprintf(q, sizeof q, "%s/q.onnx", dir);
    ox_model *m = mm_model(13, true, true);
    ox_error err = {0};
    ox_save_opts so = {0};
    assert_int_equal(ox_save(m, path, &so, &err), OX_OK);
    ox_model_free(m);
    /* int8 products are off by more than 1e-4 relative, close in direction:
     * accepted by the cosine, written without --force. */
    snprintf(cmd, sizeof cmd, "%s optimize %s -o %s --passes +quantize_dynamic --check 2", bin,
             path, q);
    assert_int_equal(ox_test_run(cmd, &out), 0);
    assert_non_null(strstr(out, ": ok (by cosine >= 0.99, criteria of quantize_dynamic)"));
    assert_non_null(strstr(out, "wrote "));
    free(out);
    assert_int_equal(access(q, R_OK), 0);
    snprintf(cmd, sizeof cmd, "%s optimize %s -o %s --passes +quantize_dynamic --check 2 --json",
             bin, path, q);
    assert_int_equal(ox_test_run(cmd, &out), 0);
    assert_non_null(strstr(out, "\"min_cosine_accepted\": 0.98999"));   /* 0.99 in %.17g */
    assert_non_null(strstr(out, "\"criteria_of\": \"quantize_dynamic\""));
    assert_non_null(strstr(out, "\"accepted_by\": \"cosine\""));
    free(out);
    /* --min-cosine 0 leaves the float tolerance alone: fails, not written */
    unlink(q);
    snprintf(cmd, sizeof cmd, "%s optimize %s -o %s --passes +quantize_dynamic --check 2 "
             "--min-cosine 0", bin, path, q);
    assert_int_equal(ox_test_run(cmd, &out), 1);
    assert_non_null(strstr(out, ": FAILED (rtol 0.0001 / atol 1e-05, criteria of "
                                "quantize_dynamic, --min-cosine)"));
    assert_non_null(strstr(out, "not written"));
    free(out);
    assert_int_not_equal(access(q, F_OK), 0);
    /* ... and an --atol wider than any int8 error here (|x| < 1, |W| <= 2,
     * K = 64: each product is off by at most 64 steps) accepts it by the
     * tolerance */
    snprintf(cmd, sizeof cmd, "%s optimize %s -o %s --passes +quantize_dynamic --check 2 "
             "--min-cosine 0 --atol 10 --json", bin, path, q);
    assert_int_equal(ox_test_run(cmd, &out), 0);
    assert_non_null(strstr(out, "\"atol\": 10"));
    assert_non_null(strstr(out, "\"accepted_by\": \"tolerance\""));
    assert_non_null(strstr(out, "\"criteria_of\": \"quantize_dynamic, --atol, --min-cosine\""));
    free(out);
    /* lossless passes: the default tolerance; --rtol 0 --atol 0 asks for
     * identical outputs, which they give */
    snprintf(cmd, sizeof cmd, "%s optimize %s -o %s --check 2 --rtol 0 --atol 0", bin, path, q);
    assert_int_equal(ox_test_run(cmd, &out), 0);
    assert_non_null(strstr(out, "max abs err 0, max rel err 0: ok (rtol 0 / atol 0, criteria of "
                                "default, --rtol, --atol)"));
    free(out);
    snprintf(cmd, sizeof cmd, "%s optimize %s -o %s --check 1", bin, path, q);
    assert_int_equal(ox_test_run(cmd, &out), 0);
    assert_non_null(strstr(out, ": ok (rtol 0.0001 / atol 1e-05, criteria of default)"));
    free(out);
    /* both lossy passes: both criteria (this model is all quantized
     * products: to_fp16 finds nothing left to convert, test_with_fp16
     * checks what it converts) */
    snprintf(cmd, sizeof cmd, "%s optimize %s -o %s --passes +quantize_dynamic,to_fp16 "
             "--check 2 --json", bin, path, q);
    assert_int_equal(ox_test_run(cmd, &out), 0);
    assert_non_null(strstr(out, "\"criteria_of\": \"to_fp16+quantize_dynamic\""));
    assert_non_null(strstr(out, "\"quantization\""));
    assert_non_null(strstr(out, "\"name\": \"to_fp16\""));
    assert_non_null(strstr(out, "\"ok\": true"));
    free(out);
    /* usage errors: exit 2, one line naming the option */
    static const char *const bad[][2] = {
        {"--check 1 --rtol x", "--rtol x: expected a number in [0, inf]"},
        {"--check 1 --atol -1", "--atol -1: expected a number in [0, inf]"},
        {"--check 1 --min-cosine 2", "--min-cosine 2: expected a number in [0, 1]"},
        {"--atol 1e-3", "optimize: --atol sets what --check N accepts; add --check"},
        {"--passes int8", "unknown pass 'int8' (`matrix --strategies int8` is the pass "
                          "quantize_dynamic: name that)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(cmd, sizeof cmd, "%s optimize %s -o %s %s", bin, path, q, bad[i][0]);
        assert_int_equal(ox_test_run(cmd, &out), 2);
        if (!strstr(out, bad[i][1]))
            fail_msg("%s: got %s", bad[i][0], out);
        free(out);
    }
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(ox_test_run(cmd, NULL), 0);
}

/* quantize_dynamic and to_fp16 together (the matrix's int8 after fp16, or
 * `--passes +quantize_dynamic,to_fp16`): quantization runs first and finds
 * the float32 weights whatever order the list names them in; to_fp16 then
 * converts what is left (the Relu) and keeps the dequantization in float32:
 * MatMulInteger's int32 sums over K = 1024 pass 65504 (float16's largest),
 * and the scale products sit in float16's subnormals. */
static void test_with_fp16(void **state)
{
    (void)state;
    ox_model *m = fh_model(13);
    int64_t xd[2] = {4, 1024}, wd[2] = {1024, 64};
    fh_input(m, "x", 2, xd);
    fh_init(m, "W", 2, wd, NULL, -1, 1);
    fh_node(m, "MatMul", "h", "x", "W", NULL);
    fh_node(m, "Relu", "y", "h", NULL);
    fh_output(m, "y");
    ox_error err = {0};
    assert_int_equal(ox_infer_model(m, NULL, &err), OX_OK);
    for (int order = 0; order < 2; order++) {
        ox_model *q = ox_model_clone(m);
        ox_pass_manager *pm = ox_pm_new(OX_LEVEL_BASIC, OX_TARGET_ONNX);
        assert_int_equal(ox_pm_only(pm, order ? "to_fp16,quantize_dynamic"
                                              : "quantize_dynamic,to_fp16", &err), OX_OK);
        ox_quant_opts o = opts(OX_QUANT_INTEGER);
        ox_pm_set_quant_opts(pm, &o);
        ox_pass_report rep = {0};
        assert_int_equal(ox_pm_run(pm, q, &rep, &err), OX_OK);
        assert_int_equal(rep.n_quant, 1);   /* it saw W in float32 */
        ox_pass_report_free(&rep);
        ox_pm_free(pm);
        const ox_node *mmi = find_op(q, "MatMulInteger");
        assert_non_null(mmi);
        assert_int_equal(mmi->inputs[1]->init->dtype, OX_DT_INT8);
        assert_int_equal(fh_count(q, "MatMul"), 0);
        /* float16 where it is safe: the Relu; float32 for the dequantization */
        const ox_node *relu = find_op(q, "Relu");
        assert_int_equal(relu->inputs[0]->type->elem, OX_DT_FLOAT16);
        for (int i = 0; i < q->graph->n_nodes; i++) {
            const ox_node *n = q->graph->nodes[i];
            if (!strcmp(n->op_type, "Mul"))
                assert_int_equal(n->outputs[0]->type->elem, OX_DT_FLOAT);
        }
        ox_check_report cr = {0};
        assert_int_equal(ox_check_model(q, &cr), OX_OK);
        ox_check_report_free(&cr);
        double amax, cs;
        double d = out_diff(m, q, 0, 1, &amax, &cs);
        if (!(d <= 0.02 * amax && cs >= 0.999))
            fail_msg("order %d: max diff %g of %g, cosine %g", order, d, amax, cs);
        ox_model_free(q);
    }
    ox_model_free(m);
}

/* ---- kernels ------------------------------------------------------------------- */

typedef struct kc {
    ox_node node;
    ox_value vals[1];
    ox_value *outs[1];
    ox_rval *in[8];
    ox_rval *out[1];
    ox_kernel_ctx ctx;
    ox_error err;
} kc;

static ox_tensor *rand_q(ox_dtype dt, int rank, const int64_t *d, uint32_t *seed)
{
    ox_tensor *t = ox_tensor_new(dt, rank, d);
    for (int64_t i = 0; i < t->numel; i++) {
        *seed = *seed * 1664525u + 1013904223u;
        int v = (int)(*seed >> 24);   /* 0..255 */
        ox_tensor_set_i64(t, i, dt == OX_DT_INT8 ? v - 128 : v);
    }
    return t;
}

/* MatMulInteger against a naive int64 reference: odd sizes, batches,
 * scalar / per-row / per-column zero points, both operand signs, and the
 * scalar path (ONNXSCOPE_NO_SIMD_QGEMM). */
static void test_matmul_integer_kernel(void **state)
{
    (void)state;
    ox_kernel_fn fn = ox_kernel_lookup("", "MatMulInteger", 10);
    assert_non_null(fn);
    struct { int ra; int64_t da[3]; int rb; int64_t db[3]; ox_dtype ta, tb; int zpa, zpb; } cases[] = {
        {2, {7, 33}, 2, {33, 37}, OX_DT_UINT8, OX_DT_INT8, 1, 0},
        {3, {3, 5, 64}, 2, {64, 48}, OX_DT_UINT8, OX_DT_INT8, 1, 2},
        {2, {9, 17}, 2, {17, 16}, OX_DT_INT8, OX_DT_UINT8, 2, 1},
        {3, {2, 4, 31}, 3, {2, 31, 19}, OX_DT_UINT8, OX_DT_UINT8, 1, 1},
        {2, {130, 300}, 2, {300, 70}, OX_DT_UINT8, OX_DT_INT8, 1, 2},
        {2, {37, 259}, 2, {259, 65}, OX_DT_UINT8, OX_DT_INT8, 2, 2},
        {3, {2, 6, 130}, 3, {2, 130, 40}, OX_DT_UINT8, OX_DT_INT8, 1, 1},
        /* fewer than 4 rows: B read in place (no packing) */
        {2, {1, 50}, 2, {50, 33}, OX_DT_UINT8, OX_DT_INT8, 1, 2},
        {2, {3, 20}, 2, {20, 17}, OX_DT_UINT8, OX_DT_UINT8, 2, 2},
        {3, {2, 1, 9}, 2, {9, 40}, OX_DT_INT8, OX_DT_INT8, 0, 1},
    };
    uint32_t seed = 99;
    /* 0: scalar; 1: AVX2 pmaddwd (no VNNI); 2: VNNI where the CPU has it */
    for (int simd = 0; simd < 3; simd++) {
        unsetenv("ONNXSCOPE_NO_SIMD_QGEMM");
        unsetenv("ONNXSCOPE_NO_VNNI");
        if (simd == 0)
            setenv("ONNXSCOPE_NO_SIMD_QGEMM", "1", 1);
        else if (simd == 1)
            setenv("ONNXSCOPE_NO_VNNI", "1", 1);
        for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
            kc k;
            memset(&k, 0, sizeof k);
            k.node.op_type = (char *)"MatMulInteger";
            k.node.domain = (char *)"";
            k.node.n_outputs = 1;
            k.node.outputs = k.outs;
            k.outs[0] = &k.vals[0];
            k.ctx.node = &k.node;
            k.ctx.opset = 13;
            k.ctx.in = k.in;
            k.ctx.out = k.out;
            k.ctx.err = &k.err;
            k.ctx.n_out = 1;
            k.ctx.n_in = 4;
            ox_tensor *a = rand_q(cases[ci].ta, cases[ci].ra, cases[ci].da, &seed);
            ox_tensor *b = rand_q(cases[ci].tb, cases[ci].rb, cases[ci].db, &seed);
            int64_t M = cases[ci].da[cases[ci].ra - 2], K = cases[ci].da[cases[ci].ra - 1];
            int64_t N = cases[ci].db[cases[ci].rb - 1];
            int64_t za = cases[ci].zpa == 2 ? M : 1, zb = cases[ci].zpb == 2 ? N : 1;
            ox_tensor *az = cases[ci].zpa ? rand_q(cases[ci].ta, 1, &za, &seed) : NULL;
            ox_tensor *bz = cases[ci].zpb ? rand_q(cases[ci].tb, 1, &zb, &seed) : NULL;
            k.in[0] = ox_rval_tensor(ox_tensor_clone(a));
            k.in[1] = ox_rval_tensor(ox_tensor_clone(b));
            k.in[2] = az ? ox_rval_tensor(ox_tensor_clone(az)) : NULL;
            k.in[3] = bz ? ox_rval_tensor(ox_tensor_clone(bz)) : NULL;
            /* run 0: no plan slot; runs 1, 2: B marked an initializer with a
             * slot, so the second run reads the packed copy kept by the first. */
            ox_value vb = {0}, vz = {0};
            ox_value *ins[4] = {NULL, &vb, NULL, bz ? &vz : NULL};
            vb.init = b;
            vz.init = bz;
            ox_kernel_state *slot = NULL;
            for (int run = 0; run < 3; run++) {
            if (run == 1) {
                k.node.n_inputs = 4;
                k.node.inputs = ins;
                k.ctx.state = &slot;
            }
            ox_rval_free(k.out[0]);
            k.out[0] = NULL;
            if (fn(&k.ctx))
                fail_msg("case %zu: %s", ci, k.err.msg);
            const ox_tensor *y = k.out[0]->t;
            int64_t batch = y->numel / (M * N);
            bool bbatch = cases[ci].rb == 3;
            for (int64_t bi = 0; bi < batch; bi++)
                for (int64_t i = 0; i < M; i++)
                    for (int64_t j = 0; j < N; j++) {
                        int64_t acc = 0;
                        for (int64_t q = 0; q < K; q++) {
                            int64_t av = ox_tensor_get_i64(a, (bi * M + i) * K + q) -
                                         (az ? ox_tensor_get_i64(az, az->numel > 1 ? i : 0) : 0);
                            int64_t bv = ox_tensor_get_i64(b, ((bbatch ? bi : 0) * K + q) * N + j) -
                                         (bz ? ox_tensor_get_i64(bz, bz->numel > 1 ? j : 0) : 0);
                            acc += av * bv;
                        }
                        int64_t got = ox_tensor_get_i64(y, (bi * M + i) * N + j);
                        if (got != acc)
                            fail_msg("case %zu simd %d run %d: [%lld,%lld,%lld] %lld != %lld", ci,
                                     simd, run, (long long)bi, (long long)i, (long long)j,
                                     (long long)got, (long long)acc);
                    }
            }
            assert_non_null(slot);   /* the packed B was kept */
            slot->free(slot);
            for (int i = 0; i < 4; i++)
                ox_rval_free(k.in[i]);
            ox_rval_free(k.out[0]);
            ox_tensor_free(a);
            ox_tensor_free(b);
            ox_tensor_free(az);
            ox_tensor_free(bz);
        }
    }
    unsetenv("ONNXSCOPE_NO_SIMD_QGEMM");
    unsetenv("ONNXSCOPE_NO_VNNI");
}

/* ---- shared transformers ----------------------------------------------------------- */

static double cosine(const ox_tensor *a, const ox_tensor *b)
{
    double ab = 0, aa = 0, bb = 0;
    for (int64_t i = 0; i < a->numel; i++) {
        double x = ox_tensor_get_f64(a, i), y = ox_tensor_get_f64(b, i);
        ab += x * y, aa += x * x, bb += y * y;
    }
    return ab / sqrt(aa * bb);
}

/* Every form on each shared transformer: MatMul weights a quarter of their
 * size (int8 plus a float scale per column), outputs' cosine similarity to
 * the stored fp32 outputs at least 0.99. */
static void test_shared_transformers(void **state)
{
    (void)state;
    const char *shared = ox_test_shared();
    static const char *const names[] = {"bert_l2_h128_nofold_op13", "gpt2_like_l2_h128_nofold_op13",
                                        "torch_transformer_encoder_l4_h256_op17"};
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/models/%s", shared ? shared : "", names[0]);
    if (!shared || access(dir, R_OK)) {
        print_message("# skipped: %s not found (the shared models are not checked out)\n",
                      dir);
        skip();
    }
    for (size_t mi = 0; mi < sizeof names / sizeof *names; mi++) {
        for (int form = 0; form < 3; form++) {
            char path[1200];
            snprintf(path, sizeof path, "%s/models/%s/model.onnx", shared, names[mi]);
            ox_error err = {0};
            ox_model *m = NULL;
            assert_int_equal(ox_load(path, NULL, &m, &err), OX_OK);
            ox_quant_opts o = opts(form == 1 ? OX_QUANT_QDQ : OX_QUANT_INTEGER);
            ox_pass_manager *pm = ox_pm_new(OX_LEVEL_BASIC, form == 2 ? OX_TARGET_ORT : OX_TARGET_ONNX);
            assert_int_equal(ox_pm_only(pm, "+quantize_dynamic", &err), OX_OK);
            ox_pm_set_quant_opts(pm, &o);
            ox_pass_report rep = {0};
            assert_int_equal(ox_pm_run(pm, m, &rep, &err), OX_OK);
            int64_t wb = 0, wa = 0;
            for (int i = 0; i < rep.n_quant; i++) {
                assert_string_equal(rep.quant[i].op, rep.quant[i].op);   /* set */
                wb += rep.quant[i].bytes_before;
                wa += rep.quant[i].bytes_after;
            }
            assert_true(rep.n_quant >= 8);
            if (wa * 4 > wb * 1.03)
                fail_msg("%s form %d: %d weights %lld -> %lld bytes", names[mi], form, rep.n_quant,
                         (long long)wb, (long long)wa);
            ox_pass_report_free(&rep);
            ox_pm_free(pm);
            /* run on test_data_set_0 */
            ox_exec *e;
            ox_exec_opts eo = {.threads = 1};
            if (ox_exec_new(m, &eo, &e, &err))
                fail_msg("%s: %s", names[mi], err.msg);
            int ni = m->graph->n_inputs, no = m->graph->n_outputs;
            ox_rval *in[8] = {0}, *out[8] = {0};
            for (int i = 0; i < ni; i++) {
                char p[1300];
                snprintf(p, sizeof p, "%s/models/%s/test_data_set_0/input_%d.pb", shared,
                         names[mi], i);
                ox_tensor *t = NULL;
                assert_int_equal(ox_tensor_load_pb(p, &t, &err), OX_OK);
                in[i] = ox_rval_tensor(t);
            }
            if (ox_exec_run(e, ni, in, no, out, &err))
                fail_msg("%s form %d: %s", names[mi], form, err.msg);
            for (int k = 0; k < no; k++) {
                char p[1300];
                snprintf(p, sizeof p, "%s/models/%s/test_data_set_0/output_%d.pb", shared,
                         names[mi], k);
                ox_tensor *ref = NULL;
                assert_int_equal(ox_tensor_load_pb(p, &ref, &err), OX_OK);
                double c = cosine(out[k]->t, ref);
                print_message("# %s form %d output %d: cosine %.5f\n", names[mi], form, k, c);
                assert_true(c >= 0.99);
                ox_tensor_free(ref);
            }
            for (int i = 0; i < 8; i++) {
                ox_rval_free(in[i]);
                ox_rval_free(out[i]);
            }
            ox_exec_free(e);
            ox_model_free(m);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_half_even),
        cmocka_unit_test(test_scales),
        cmocka_unit_test(test_dynamic_params),
        cmocka_unit_test(test_integer_form),
        cmocka_unit_test(test_forms_agree),
        cmocka_unit_test(test_cached_weights),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_ort_bias),
        cmocka_unit_test(test_gemm),
        cmocka_unit_test(test_conv),
        cmocka_unit_test(test_not_firing),
        cmocka_unit_test(test_cli),
        cmocka_unit_test(test_with_fp16),
        cmocka_unit_test(test_cli_check),
        cmocka_unit_test(test_matmul_integer_kernel),
        cmocka_unit_test(test_shared_transformers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
