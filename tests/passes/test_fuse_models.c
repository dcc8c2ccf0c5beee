/* The fusion levels on the CNNs of ../shared/models (batch left dynamic):
 * at basic/onnx, extended/onnx and all/ort the result passes the checker,
 * keeps no BatchNormalization after a Conv, has only standard ops under
 * --target onnx, computes the reference outputs of both test data sets, and
 * at all/ort has at most the nodes ONNX Runtime 1.30 leaves at its extended
 * level (measured with tools/ort_compare.js; docs/PASSES.md). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "onnxscope/check.h"
#include "onnxscope/exec.h"
#include "onnxscope/io.h"
#include "onnxscope/passes.h"
#include "onnxscope/testdata.h"
#include "testutil.h"

static const struct {
    const char *dir;
    int ort_extended; /* ONNX Runtime's node count at graphOptimizationLevel 'extended' */
} models[] = {
    {"mobilenet_v2_op13", 65},
    {"squeezenet1_1_op17", 39},
    {"shape_chain_cnn_nofold_op13", 8},
    {"shape_chain_cnn_nofold_op17", 8},
};

static const struct {
    ox_pass_level level;
    ox_pass_target target;
} configs[] = {
    {OX_LEVEL_BASIC, OX_TARGET_ONNX},
    {OX_LEVEL_EXTENDED, OX_TARGET_ONNX},
    {OX_LEVEL_ALL, OX_TARGET_ORT},
};

/* Outputs of m on test_data_set_<set> equal the reference ones. */
static bool matches_reference(ox_model *m, const char *base, int set)
{
    ox_error err = {0};
    int ni = m->graph->n_inputs, no = m->graph->n_outputs;
    ox_rval *in[8] = {0}, *exp[8] = {0}, *got[8] = {0};
    assert_true(ni <= 8 && no <= 8);
    bool ok = true;
    for (int k = 0; k < ni; k++) {
        char f[4200];
        snprintf(f, sizeof f, "%s/test_data_set_%d/input_%d.pb", base, set, k);
        assert_int_equal(ox_testdata_load(f, m->graph->inputs[k]->type, &in[k], NULL, &err), OX_OK);
    }
    for (int k = 0; k < no; k++) {
        char f[4200];
        snprintf(f, sizeof f, "%s/test_data_set_%d/output_%d.pb", base, set, k);
        assert_int_equal(ox_testdata_load(f, m->graph->outputs[k]->type, &exp[k], NULL, &err),
                         OX_OK);
    }
    ox_exec *e = NULL;
    if (ox_exec_new(m, NULL, &e, &err) || ox_exec_run(e, ni, in, no, got, &err)) {
        print_message("  exec: %s\n", err.msg);
        ok = false;
    }
    for (int k = 0; k < no; k++) {
        char why[256];
        if (ok && !ox_rval_allclose(got[k], exp[k], 1e-3, 1e-4, why, sizeof why)) {
            print_message("  set %d output %d: %s\n", set, k, why);
            ok = false;
        }
        ox_rval_free(got[k]);
        ox_rval_free(exp[k]);
    }
    for (int k = 0; k < ni; k++)
        ox_rval_free(in[k]);
    ox_exec_free(e);
    return ok;
}

static void test_cnn_levels(void **state)
{
    (void)state;
    const char *shared = ox_test_shared();
    if (!shared) {
        print_message("skipped: ../shared not found\n");
        skip();
    }
    int failures = 0, ran = 0;
    for (size_t i = 0; i < sizeof models / sizeof *models; i++) {
        char base[4096], path[4200];
        snprintf(base, sizeof base, "%s/models/%s", shared, models[i].dir);
        snprintf(path, sizeof path, "%s/model.onnx", base);
        for (size_t c = 0; c < sizeof configs / sizeof *configs; c++) {
            ox_model *m = NULL;
            ox_error err = {0};
            if (ox_load(path, NULL, &m, &err)) {
                print_message("skipped %s: %s\n", path, err.msg);
                break;
            }
            ran++;
            ox_pass_manager *pm = ox_pm_new(configs[c].level, configs[c].target);
            assert_int_equal(ox_pm_run(pm, m, NULL, &err), OX_OK);
            ox_pm_free(pm);
            bool ok = true;
            ox_check_report cr = {0};
            if (ox_check_model(m, &cr)) {
                print_message("  checker: %s\n", cr.n_issues ? cr.issues[0].msg : "?");
                ok = false;
            }
            ox_check_report_free(&cr);
            for (int n = 0; n < m->graph->n_nodes; n++) {
                ox_node *nd = m->graph->nodes[n];
                ox_node *p = nd->n_inputs ? (nd->inputs[0] ? nd->inputs[0]->producer : NULL) : NULL;
                if (ox_node_is(nd, "BatchNormalization") && p &&
                    (ox_node_is(p, "Conv") || ox_node_is(p, "ConvTranspose"))) {
                    print_message("  BatchNormalization '%s' after a Conv\n", nd->name);
                    ok = false;
                }
                if (configs[c].target == OX_TARGET_ONNX && !ox_node_is_default_domain(nd)) {
                    print_message("  contrib op %s under --target onnx\n", nd->op_type);
                    ok = false;
                }
            }
            int nodes = ox_graph_count_nodes(m->graph, true);
            if (configs[c].level == OX_LEVEL_ALL && nodes > models[i].ort_extended) {
                print_message("  %d nodes, ONNX Runtime extended has %d\n", nodes,
                              models[i].ort_extended);
                ok = false;
            }
            ok &= matches_reference(m, base, 0) && matches_reference(m, base, 1);
            print_message("%s %s %s/%s: %d nodes\n", ok ? "ok  " : "FAIL", models[i].dir,
                          ox_pass_level_name(configs[c].level),
                          ox_pass_target_name(configs[c].target), nodes);
            failures += !ok;
            ox_model_free(m);
        }
    }
    if (!ran) {
        print_message("skipped: no CNN models under %s/models\n", shared);
        skip();
    }
    assert_int_equal(failures, 0);
}

/* The transformer models: per layer, two LayerNorms (LayerNormalization
 * or SkipLayerNormalization) and a GELU fused under all/ort, nothing of
 * their decomposed forms left; every level computes the reference
 * outputs; --target onnx keeps standard ops. */
static const struct {
    const char *dir;
    int layers;
    int extra_ln; /* LayerNorms outside the layers (embeddings, final) */
    int attention; /* fused attention blocks expected under all/ort */
} tmodels[] = {
    {"bert_l2_h128_nofold_op13", 2, 1, 2},
    {"gpt2_like_l2_h128_nofold_op13", 2, 1, 2},
    {"torch_transformer_encoder_l4_h256_op17", 4, 0, 4},
};

static int count_ops(const ox_model *m, const char *const *ops)
{
    int c = 0;
    for (int i = 0; i < m->graph->n_nodes; i++)
        for (int k = 0; ops[k]; k++)
            c += !strcmp(m->graph->nodes[i]->op_type, ops[k]);
    return c;
}

/* The layer a node belongs to, from its name ("/layers.3/...",
 * "/blocks.1/..."; fused nodes are named after the pattern's scope), or -1. */
static int layer_of(const ox_node *n)
{
    static const char *keys[] = {"layers.", "blocks.", NULL};
    for (int k = 0; n->name && keys[k]; k++) {
        const char *p = strstr(n->name, keys[k]);
        if (p && p[strlen(keys[k])] >= '0' && p[strlen(keys[k])] <= '9')
            return atoi(p + strlen(keys[k]));
    }
    return -1;
}

static bool is_one_of(const ox_node *n, const char *const *ops)
{
    for (int k = 0; ops[k]; k++)
        if (!strcmp(n->op_type, ops[k]))
            return true;
    return false;
}

/* Adds that only a LayerNormalization reads, both operands computed: what
 * ONNX Runtime re-fuses into its slower SkipLayerNormalization, and what
 * residual_sum turns into Sum from --level extended. */
static int residual_adds(const ox_model *m)
{
    int c = 0;
    for (int i = 0; i < m->graph->n_nodes; i++) {
        const ox_node *n = m->graph->nodes[i];
        const ox_value *y = n->n_outputs == 1 ? n->outputs[0] : NULL;
        if (!strcmp(n->op_type, "Add") && ox_node_is_default_domain(n) && n->n_inputs == 2 &&
            !n->inputs[0]->init && !n->inputs[1]->init && y && y->n_uses == 1 &&
            !y->is_output && !strcmp(y->uses[0].node->op_type, "LayerNormalization"))
            c++;
    }
    return c;
}

static void test_transformer_levels(void **state)
{
    (void)state;
    const char *shared = ox_test_shared();
    if (!shared) {
        print_message("skipped: ../shared not found\n");
        skip();
    }
    static const struct {
        ox_pass_level level;
        ox_pass_target target;
        bool skip_ln; /* the opt-in fuse_skip_layernorm enabled too */
    } tconfigs[] = {
        {OX_LEVEL_BASIC, OX_TARGET_ONNX, false},
        {OX_LEVEL_EXTENDED, OX_TARGET_ONNX, false},
        {OX_LEVEL_ALL, OX_TARGET_ONNX, false},
        {OX_LEVEL_ALL, OX_TARGET_ORT, false},
        {OX_LEVEL_ALL, OX_TARGET_ORT, true},
    };
    static const char *const ln_ops[] = {"LayerNormalization", "SkipLayerNormalization",
                                         "EmbedLayerNormalization", NULL};
    static const char *const embed_ops[] = {"EmbedLayerNormalization", NULL};
    static const char *const gelu_ops[] = {"Gelu", "FastGelu", "BiasGelu", NULL};
    static const char *const attn_ops[] = {"Attention", "MultiHeadAttention", NULL};
    static const char *const left_ops[] = {"ReduceMean", "Erf", "Sqrt", "Pow", NULL};
    int failures = 0, ran = 0;
    for (size_t i = 0; i < sizeof tmodels / sizeof *tmodels; i++) {
        char base[4096], path[4200];
        snprintf(base, sizeof base, "%s/models/%s", shared, tmodels[i].dir);
        snprintf(path, sizeof path, "%s/model.onnx", base);
        for (size_t c = 0; c < sizeof tconfigs / sizeof *tconfigs; c++) {
            ox_model *m = NULL;
            ox_error err = {0};
            if (ox_load(path, NULL, &m, &err)) {
                print_message("skipped %s: %s\n", path, err.msg);
                break;
            }
            ran++;
            ox_pass_manager *pm = ox_pm_new(tconfigs[c].level, tconfigs[c].target);
            for (int k = 0; tconfigs[c].skip_ln && k < ox_pm_count(pm); k++)
                if (!strcmp(ox_pm_pass(pm, k)->name, "fuse_skip_layernorm"))
                    ox_pm_enable(pm, k, true);
            assert_int_equal(ox_pm_run(pm, m, NULL, &err), OX_OK);
            ox_pm_free(pm);
            bool ok = true;
            ox_check_report cr = {0};
            if (ox_check_model(m, &cr)) {
                print_message("  checker: %s\n", cr.n_issues ? cr.issues[0].msg : "?");
                ok = false;
            }
            ox_check_report_free(&cr);
            static const char *const skip_ops[] = {"SkipLayerNormalization", NULL};
            if (tconfigs[c].skip_ln && count_ops(m, skip_ops) < 2 * tmodels[i].layers - 1) {
                print_message("  only %d SkipLayerNormalization\n", count_ops(m, skip_ops));
                ok = false;
            }
            for (int n = 0; n < m->graph->n_nodes; n++)
                if (tconfigs[c].target == OX_TARGET_ONNX &&
                    !ox_node_is_default_domain(m->graph->nodes[n])) {
                    print_message("  contrib op %s under --target onnx\n",
                                  m->graph->nodes[n]->op_type);
                    ok = false;
                }
            if (tconfigs[c].level >= OX_LEVEL_EXTENDED && residual_adds(m)) {
                print_message("  %d residual Add + LayerNormalization pairs left\n",
                              residual_adds(m));
                ok = false;
            }
            /* The encoder's sequence-first layout goes with the attention
             * (fuse_attention, then fuse_token_transpose_gemm). */
            static const char *const tr_ops[] = {"Transpose", NULL};
            if (tconfigs[c].target == OX_TARGET_ORT && strstr(tmodels[i].dir, "torch_") &&
                count_ops(m, tr_ops)) {
                print_message("  %d Transpose left\n", count_ops(m, tr_ops));
                ok = false;
            }
            int L = tmodels[i].layers, ln = count_ops(m, ln_ops), gelu = count_ops(m, gelu_ops);
            int attn = count_ops(m, attn_ops), left = count_ops(m, left_ops);
            if (tconfigs[c].target == OX_TARGET_ORT) {
                if (ln != 2 * L + tmodels[i].extra_ln || gelu != L ||
                    attn != tmodels[i].attention || left) {
                    print_message("  %d layers: %d LayerNorms, %d GELUs, %d attention, %d "
                                  "decomposed ops left\n", L, ln, gelu, attn, left);
                    ok = false;
                }
                /* BERT's embeddings (word + position + segment, LayerNorm)
                 * are one EmbedLayerNormalization. */
                if (strstr(tmodels[i].dir, "bert") && count_ops(m, embed_ops) != 1) {
                    print_message("  %d EmbedLayerNormalization\n", count_ops(m, embed_ops));
                    ok = false;
                }
                /* Per layer: two LayerNorms, one GELU, one attention block. */
                int per[16][3] = {{0}};
                for (int n = 0; n < m->graph->n_nodes; n++) {
                    const ox_node *nd = m->graph->nodes[n];
                    int l = layer_of(nd);
                    if (l < 0 || l >= 16)
                        continue;
                    per[l][0] += is_one_of(nd, ln_ops);
                    per[l][1] += is_one_of(nd, gelu_ops);
                    per[l][2] += is_one_of(nd, attn_ops);
                }
                for (int l = 0; l < L; l++)
                    if (per[l][0] != 2 || per[l][1] != 1 ||
                        per[l][2] != (tmodels[i].attention ? 1 : 0)) {
                        print_message("  layer %d: %d LayerNorms, %d GELU, %d attention\n", l,
                                      per[l][0], per[l][1], per[l][2]);
                        ok = false;
                    }
            }
            ok &= matches_reference(m, base, 0) && matches_reference(m, base, 1);
            print_message("%s %s %s/%s%s: %d nodes, %d LayerNorm, %d GELU, %d attention\n",
                          ok ? "ok  " : "FAIL", tmodels[i].dir,
                          ox_pass_level_name(tconfigs[c].level),
                          ox_pass_target_name(tconfigs[c].target),
                          tconfigs[c].skip_ln ? "+fuse_skip_layernorm" : "",
                          ox_graph_count_nodes(m->graph, true), ln, gelu, attn);
            failures += !ok;
            ox_model_free(m);
        }
    }
    if (!ran) {
        print_message("skipped: no transformer models under %s/models\n", shared);
        skip();
    }
    assert_int_equal(failures, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cnn_levels),
        cmocka_unit_test(test_transformer_levels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
