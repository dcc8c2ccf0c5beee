/* Conformance of shape/type inference against the ONNX backend test data:
 * for each node/ case whose ops are registered, the inferred type of every
 * output (after stripping the model's own output types) must equal the
 * dtype and shape of test_data_set_0/output_K.pb; >= 97% of cases agree.
 * Also: every value of the shared real models and light/ models gets a
 * fully static shape once the input shapes are fixed. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "onnxscope/infer.h"
#include "onnxscope/io.h"
#include "onnxscope/ir.h"
#include "onnxscope/ops.h"

static const char *shared_dir(void)
{
    const char *s = getenv("ONNXSCOPE_SHARED");
    struct stat st;
    if (!s || stat(s, &st) != 0 || !S_ISDIR(st.st_mode))
        return NULL;
    return s;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted entries of a directory (caller frees). */
static char **list_dir(const char *path, int *n)
{
    *n = 0;
    DIR *d = opendir(path);
    if (!d)
        return NULL;
    char **v = NULL;
    int cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 256;
            char **nv = realloc(v, (size_t)cap * sizeof *v);
            if (!nv)
                break;
            v = nv;
        }
        v[(*n)++] = strdup(e->d_name);
    }
    closedir(d);
    if (v)
        qsort(v, (size_t)*n, sizeof *v, cmp_str);
    return v;
}

static void free_list(char **v, int n)
{
    for (int i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

typedef struct {
    bool all_registered;
    char missing[128];
} reg_ctx;

static void check_registered(ox_graph *g, void *ctx)
{
    reg_ctx *r = ctx;
    for (int i = 0; i < g->n_nodes; i++) {
        if (!ox_op_for_node(g->model, g->nodes[i])) {
            if (r->all_registered)
                snprintf(r->missing, sizeof r->missing, "%s::%s", g->nodes[i]->domain,
                         g->nodes[i]->op_type);
            r->all_registered = false;
        }
    }
}

/* Forgets every node output's type so that only inference provides it. */
static void strip_types(ox_graph *g, void *ctx)
{
    (void)ctx;
    for (int i = 0; i < g->n_nodes; i++) {
        ox_node *n = g->nodes[i];
        for (int j = 0; j < n->n_outputs; j++) {
            if (n->outputs[j]) {
                ox_type_free(n->outputs[j]->type);
                n->outputs[j]->type = NULL;
            }
        }
    }
}

/* Graph inputs that are fed by test data (initializer inputs are not). */
static int real_inputs(ox_graph *g, ox_value **out, int max)
{
    int n = 0;
    for (int i = 0; i < g->n_inputs && n < max; i++)
        if (g->inputs[i] && !g->inputs[i]->init)
            out[n++] = g->inputs[i];
    return n;
}

/* Sets input shapes from test_data_set_0/input_K.pb; files that are not
 * plain tensors (sequences, optionals) leave the declared type. With
 * vals, the tensors are also returned as known input values (caller
 * frees them). */
static int set_inputs(ox_model *m, const char *dir, ox_input_value *vals, int max)
{
    ox_value *ins[64];
    int n = real_inputs(m->graph, ins, 64), nv = 0;
    for (int k = 0; k < n; k++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/test_data_set_0/input_%d.pb", dir, k);
        ox_tensor *t = NULL;
        ox_error err;
        ox_error_clear(&err);
        if (ox_tensor_load_pb(p, &t, &err) != OX_OK || !t)
            continue;
        ox_type *ty = ox_type_new_tensor(t->dtype, t->rank, t->dims);
        if (ty) {
            ox_type_free(ins[k]->type);
            ins[k]->type = ty;
        }
        if (vals && nv < max) {
            vals[nv].name = ins[k]->name;
            vals[nv].value = t;
            nv++;
        } else {
            ox_tensor_free(t);
        }
    }
    return nv;
}

typedef struct {
    int agree, disagree, skipped_unregistered, skipped_nontensor, load_failed;
} tally;

/* Compares the inferred output types with the expected tensors. Returns
 * 1 agree, 0 disagree (why in buf), -1 nothing comparable. */
static int compare_outputs(ox_model *m, const char *dir, char *why, size_t wl)
{
    int compared = 0;
    ox_graph *g = m->graph;
    for (int k = 0; k < g->n_outputs; k++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/test_data_set_0/output_%d.pb", dir, k);
        ox_tensor *t = NULL;
        ox_error err;
        ox_error_clear(&err);
        if (ox_tensor_load_pb(p, &t, &err) != OX_OK || !t)
            continue;   /* a sequence/optional/map: not a TensorProto */
        compared++;
        const ox_type *ty = g->outputs[k] ? g->outputs[k]->type : NULL;
        char got[256], exp[256];
        ox_type *et = ox_type_new_tensor(t->dtype, t->rank, t->dims);
        ox_type_str(et, exp, sizeof exp);
        if (ty)
            ox_type_str(ty, got, sizeof got);
        else
            snprintf(got, sizeof got, "untyped");
        bool ok = ty && ty->kind == OX_TYPE_TENSOR && ty->elem == t->dtype &&
                  ty->has_shape && ty->rank == t->rank;
        for (int d = 0; ok && d < t->rank; d++)
            ok = ty->dims[d].value == t->dims[d];
        ox_type_free(et);
        ox_tensor_free(t);
        if (!ok) {
            snprintf(why, wl, "output %d: inferred %s, expected %s", k, got, exp);
            return 0;
        }
    }
    return compared ? 1 : -1;
}

/* Runs one case: 1 agree, 0 disagree (why), -1 nothing comparable,
 * -2 unregistered op (why), -3 load failure (why). */
static int run_case(const char *dir, bool with_values, char *why, size_t wl)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    ox_model *m = NULL;
    ox_error err;
    ox_error_clear(&err);
    if (ox_load(path, NULL, &m, &err) != OX_OK) {
        snprintf(why, wl, "%s", err.msg);
        return -3;
    }
    reg_ctx rc = { true, "" };
    ox_graph_visit(m->graph, check_registered, &rc);
    if (!rc.all_registered) {
        snprintf(why, wl, "%s", rc.missing);
        ox_model_free(m);
        return -2;
    }
    ox_graph_visit(m->graph, strip_types, NULL);
    ox_input_value vals[64];
    int nv = set_inputs(m, dir, with_values ? vals : NULL, 64);
    ox_infer_stats stats;
    memset(&stats, 0, sizeof stats);
    ox_infer_opts opts;
    memset(&opts, 0, sizeof opts);
    opts.stats = &stats;
    opts.input_values = vals;
    opts.n_input_values = nv;
    ox_error_clear(&err);
    ox_status st = ox_infer_model(m, &opts, &err);
    int r = st == OX_OK ? compare_outputs(m, dir, why, wl) : 0;
    if (st != OX_OK)
        snprintf(why, wl, "inference failed: %s", err.msg);
    else if (r == 0 && stats.first_problem[0]) {
        size_t l = strlen(why);
        snprintf(why + l, wl - l, " | %s", stats.first_problem);
    }
    for (int i = 0; i < nv; i++)
        ox_tensor_free((ox_tensor *)vals[i].value);
    ox_model_free(m);
    return r;
}

/* Two modes: from the input shapes only (what static inference can know),
 * and with the values of the test inputs as known values (about one case
 * in six feeds shape-determining data such as `shape`, `axes`, `k`,
 * `repeats` or `sizes` as a graph input). The 97% gate applies to the
 * second; the first is reported and held above a floor. */
/* Runs every case of one folder in both modes; prints per-case lines
 * when verbose. */
static void run_folder(const char *root, bool verbose, tally *ts, tally *tv)
{
    int n;
    char **cases = list_dir(root, &n);
    if (!cases) {
        printf("%s not readable\n", root);
        return;
    }
    for (int i = 0; i < n; i++) {
        char dir[4200], why_s[700] = "", why_v[700] = "";
        snprintf(dir, sizeof dir, "%s/%s", root, cases[i]);
        int rs = run_case(dir, false, why_s, sizeof why_s);
        int rv = run_case(dir, true, why_v, sizeof why_v);
        tally *ta[2] = { ts, tv };
        int rr[2] = { rs, rv };
        for (int k = 0; k < 2; k++) {
            switch (rr[k]) {
            case 1: ta[k]->agree++; break;
            case 0: ta[k]->disagree++; break;
            case -1: ta[k]->skipped_nontensor++; break;
            case -2: ta[k]->skipped_unregistered++; break;
            default: ta[k]->load_failed++; break;
            }
        }
        if (!verbose)
            continue;
        if (rv == 0)
            printf("DISAGREE %s: %s\n", cases[i], why_v);
        else if (rs == 0)
            printf("NEEDS-INPUT-VALUES %s: %s\n", cases[i], why_s);
        else if (rv == -2)
            printf("UNREGISTERED %s: %s\n", cases[i], why_v);
        else if (rv == -3)
            printf("LOADFAIL %s: %s\n", cases[i], why_v);
    }
    free_list(cases, n);
}

static void test_backend_node(void **state)
{
    (void)state;
    const char *sh = shared_dir();
    if (!sh) {
        printf("skipped: ONNXSCOPE_SHARED not set or missing\n");
        skip();
    }
    char root[4096];
    /* The other backend folders (whole small networks) are reported only. */
    static const char *const others[] = { "simple", "pytorch-converted", "pytorch-operator" };
    for (size_t k = 0; k < sizeof others / sizeof others[0]; k++) {
        tally os = { 0 }, ov = { 0 };
        snprintf(root, sizeof root, "%s/onnx-backend/%s", sh, others[k]);
        run_folder(root, false, &os, &ov);
        printf("%s: shapes only %d/%d agree, with input values %d/%d agree\n", others[k],
               os.agree, os.agree + os.disagree, ov.agree, ov.agree + ov.disagree);
    }
    tally ts = { 0 }, tv = { 0 };
    snprintf(root, sizeof root, "%s/onnx-backend/node", sh);
    run_folder(root, true, &ts, &tv);
    int tot_s = ts.agree + ts.disagree, tot_v = tv.agree + tv.disagree;
    double pct_s = tot_s ? 100.0 * ts.agree / tot_s : 0;
    double pct_v = tot_v ? 100.0 * tv.agree / tot_v : 0;
    printf("shape inference (input shapes only): %d agree, %d disagree (%.2f%%)\n",
           ts.agree, ts.disagree, pct_s);
    printf("shape inference (input shapes and values): %d agree, %d disagree (%.2f%%), "
           "%d skipped (unregistered op), %d skipped (non-tensor outputs), "
           "%d failed to load\n", tv.agree, tv.disagree, pct_v, tv.skipped_unregistered,
           tv.skipped_nontensor, tv.load_failed);
    assert_true(tot_v > 0);
    assert_true(pct_v >= 97.0);
    assert_true(pct_s >= 80.0);
}

/* ---- static shapes for real models ---------------------------------------------- */

typedef struct {
    int values, nonstatic;
    const char *model;
} static_ctx;

static void count_static(ox_graph *g, void *ctx)
{
    static_ctx *s = ctx;
    for (int i = 0; i < g->n_values; i++) {
        ox_value *v = g->values[i];
        if (!v || (!v->producer && !v->is_input && !v->init))
            continue;
        s->values++;
        if (!v->type || !ox_type_is_static(v->type)) {
            char buf[256] = "untyped";
            if (v->type)
                ox_type_str(v->type, buf, sizeof buf);
            if (s->nonstatic < 5)
                printf("  %s: value '%s' is %s\n", s->model, v->name, buf);
            s->nonstatic++;
        }
    }
}

/* Compares graph output k's inferred type with a reference tensor file. */
static bool output_matches(ox_model *m, int k, const char *pb)
{
    ox_tensor *t = NULL;
    ox_error err = { 0 };
    if (k >= m->graph->n_outputs || ox_tensor_load_pb(pb, &t, &err) != OX_OK || !t) {
        printf("  %s: cannot read reference: %s\n", pb, err.msg);
        return false;
    }
    const ox_type *ty = m->graph->outputs[k]->type;
    bool ok = ty && ty->kind == OX_TYPE_TENSOR && ty->elem == t->dtype && ty->has_shape &&
              ty->rank == t->rank;
    for (int d = 0; ok && d < t->rank; d++)
        ok = ty->dims[d].value == t->dims[d];
    if (!ok)
        printf("  %s: output %d does not match the reference\n", pb, k);
    ox_tensor_free(t);
    return ok;
}

static void check_model_static(const char *path, const char *data_dir, int *bad)
{
    ox_model *m = NULL;
    ox_error err;
    ox_error_clear(&err);
    if (ox_load(path, NULL, &m, &err) != OX_OK) {
        printf("  %s: load failed: %s\n", path, err.msg);
        (*bad)++;
        return;
    }
    ox_graph_visit(m->graph, strip_types, NULL);
    if (data_dir)
        set_inputs(m, data_dir, NULL, 0);
    ox_infer_opts opts;
    memset(&opts, 0, sizeof opts);
    assert_int_equal(ox_infer_model(m, &opts, &err), OX_OK);
    static_ctx s = { 0, 0, path };
    ox_graph_visit(m->graph, count_static, &s);
    /* The outputs must also be right: test_data_set_0/output_K.pb for the
     * real models, <name>_output_0.pb next to a light model. */
    bool outs_ok = true;
    char ref[4400];
    if (data_dir) {
        for (int k = 0; k < m->graph->n_outputs; k++) {
            snprintf(ref, sizeof ref, "%s/test_data_set_0/output_%d.pb", data_dir, k);
            outs_ok = output_matches(m, k, ref) && outs_ok;
        }
    } else {
        size_t l = strlen(path);
        if (l > 5 && l < sizeof ref - 20) {
            snprintf(ref, sizeof ref, "%.*s_output_0.pb", (int)(l - 5), path);
            outs_ok = output_matches(m, 0, ref);
        }
    }
    printf("  %s: %d values, %d not static, outputs %s\n", path, s.values, s.nonstatic,
           outs_ok ? "match the reference" : "DIFFER");
    if (s.nonstatic || !outs_ok)
        (*bad)++;
    ox_model_free(m);
}

static void test_static_models(void **state)
{
    (void)state;
    const char *sh = shared_dir();
    if (!sh) {
        printf("skipped: ONNXSCOPE_SHARED not set or missing\n");
        skip();
    }
    int bad = 0, checked = 0;
    char root[4096];
    snprintf(root, sizeof root, "%s/models", sh);
    int n;
    char **v = list_dir(root, &n);
    for (int i = 0; v && i < n; i++) {
        char dir[4200], path[4300];
        snprintf(dir, sizeof dir, "%s/%s", root, v[i]);
        snprintf(path, sizeof path, "%s/model.onnx", dir);
        struct stat st;
        if (stat(path, &st) != 0)
            continue;
        check_model_static(path, dir, &bad);
        checked++;
    }
    free_list(v, n);
    snprintf(root, sizeof root, "%s/onnx-backend/light", sh);
    v = list_dir(root, &n);
    for (int i = 0; v && i < n; i++) {
        size_t l = strlen(v[i]);
        if (l < 5 || strcmp(v[i] + l - 5, ".onnx"))
            continue;
        char path[4300];
        snprintf(path, sizeof path, "%s/%s", root, v[i]);
        check_model_static(path, NULL, &bad);
        checked++;
    }
    free_list(v, n);
    printf("static shapes: %d models checked, %d with non-static values\n", checked, bad);
    assert_true(checked > 0);
    assert_int_equal(bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backend_node),
        cmocka_unit_test(test_static_models),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
