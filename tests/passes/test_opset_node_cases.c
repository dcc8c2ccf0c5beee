/* The ONNX backend node cases, converted: every case that passes as stored
 * (our executor, `onnxscope test-backend`) still passes with its stored
 * outputs after `test-backend --opset N` converts it to each of several
 * opsets, up and down, or is skipped because the converter refuses it
 * (the target cannot express it). Prints, per adapted or expanded
 * operator, how many cases holding it passed converted up and down and
 * how many were refused. Skips with a printed reason when ../shared is
 * absent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "onnxscope/io.h"
#include "testutil.h"

/* Targets either side of every signature change the adapters handle. */
static const int targets[] = {7, 9, 10, 11, 12, 13, 16, 17, 18, 20, 23};
#define NT ((int)(sizeof targets / sizeof *targets))

/* The operators with an adapter or an expansion (src/passes/opset_adapt.c,
 * opset_expand.c): the figures are reported for these. */
static const char *const ops[] = {
    "ArgMax", "ArgMin", "Attention", "AveragePool", "BatchNormalization", "Cast", "CastLike", "Celu", "Clip",
    "Compress", "Concat", "Constant", "DFT", "DepthToSpace", "DequantizeLinear", "Dropout",
    "Flatten", "GRU", "Gather", "GatherElements", "GatherND", "Gelu", "Gemm", "GreaterOrEqual",
    "GridSample", "GroupNormalization", "Hardmax", "HardSwish", "LSTM", "LayerNormalization",
    "LessOrEqual", "LogSoftmax", "LpPool", "Max", "MaxPool", "Mean", "Min", "Mish", "OneHot",
    "Pad", "QuantizeLinear", "RMSNormalization", "RNN", "ReduceL1", "ReduceL2", "ReduceLogSum",
    "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum",
    "ReduceSumSquare", "Reshape", "Resize", "RoiAlign", "Scan", "Scatter", "ScatterElements",
    "ScatterND", "Shape", "Slice", "Softmax", "Split", "Squeeze", "Sum", "TopK", "Unsqueeze",
    "Upsample", NULL,
};
#define NOPS ((int)(sizeof ops / sizeof *ops) - 1)

typedef struct kase {
    char *dir;
    int opset;
    bool base_pass;
    unsigned char has[NOPS];
} kase;

static int find_case(kase *cs, int n, const char *dir)
{
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2, r = strcmp(cs[mid].dir, dir);
        if (!r)
            return mid;
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

/* Runs test-backend over the node folder (with `extra` options) and calls
 * back per result line: kind 'P', 'S' or 'F', the case folder, the reason. */
static void sweep(const char *bin, const char *node_dir, const char *extra,
                  void (*fn)(void *ctx, char kind, const char *dir, const char *why), void *ctx)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' test-backend '%s' --verbose %s", bin, node_dir, extra);
    char *out = NULL;
    ox_test_run(cmd, &out);
    assert_non_null(out);
    for (char *save = NULL, *line = strtok_r(out, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        char kind = 0;
        if (!strncmp(line, "PASS ", 5))
            kind = 'P';
        else if (!strncmp(line, "SKIP ", 5))
            kind = 'S';
        else if (!strncmp(line, "FAIL ", 5))
            kind = 'F';
        if (!kind)
            continue;
        char *dir = line + 5, *why = "";
        char *end = kind == 'P' ? strstr(dir, " (") : strstr(dir, ": ");
        if (end) {
            *end = 0;
            why = end + 2;
        }
        fn(ctx, kind, dir, why);
    }
    free(out);
}

typedef struct sweep_ctx {
    kase *cs;
    int n;
    int target;
    int failures;
    /* per op: passed converted up / down, refused up / down */
    int up[NOPS], down[NOPS], ref_up[NOPS], ref_down[NOPS];
    int pass_total, refused_total;
} sweep_ctx;

static void on_base(void *ctx, char kind, const char *dir, const char *why)
{
    (void)why;
    sweep_ctx *s = ctx;
    int i = find_case(s->cs, s->n, dir);
    if (i >= 0)
        s->cs[i].base_pass = kind == 'P';
}

static void on_converted(void *ctx, char kind, const char *dir, const char *why)
{
    sweep_ctx *s = ctx;
    int i = find_case(s->cs, s->n, dir);
    if (i < 0 || !s->cs[i].base_pass || s->cs[i].opset == s->target)
        return;
    bool up = s->target > s->cs[i].opset;
    /* Outside what the converter reads (opsets 7..23, default domain). */
    if (s->cs[i].opset < 7 || s->cs[i].opset > 23)
        return;
    if (kind == 'F' || (kind == 'S' && strncmp(why, "convert to opset", 16))) {
        print_message("FAIL %s -> opset %d: %s\n", dir, s->target, why);
        s->failures++;
        return;
    }
    if (kind == 'P')
        s->pass_total++;
    else
        s->refused_total++;
    for (int k = 0; k < NOPS; k++) {
        if (!s->cs[i].has[k])
            continue;
        if (kind == 'P')
            (up ? s->up : s->down)[k]++;
        else
            (up ? s->ref_up : s->ref_down)[k]++;
    }
}

static int cmp_case(const void *a, const void *b)
{
    return strcmp(((const kase *)a)->dir, ((const kase *)b)->dir);
}

static void test_node_cases(void **state)
{
    (void)state;
    const char *shared = ox_test_shared(), *bin = ox_test_bin();
    if (!shared || !bin) {
        print_message("skipped: ../shared or the onnxscope binary not found\n");
        skip();
    }
    char node_dir[4096];
    snprintf(node_dir, sizeof node_dir, "%s/onnx-backend/node", shared);
    ox_test_paths ps = {0};
    ox_test_find(node_dir, "model.onnx", &ps);
    if (!ps.n) {
        print_message("skipped: no node cases under %s\n", node_dir);
        skip();
    }
    kase *cs = calloc((size_t)ps.n, sizeof *cs);
    assert_non_null(cs);
    int n = 0;
    for (int i = 0; i < ps.n; i++) {
        ox_model *m = NULL;
        ox_error err = {0};
        if (ox_load(ps.v[i], NULL, &m, &err))
            continue;
        kase *k = &cs[n++];
        k->dir = strdup(ps.v[i]);
        *strrchr(k->dir, '/') = 0;
        k->opset = (int)ox_model_opset(m, "");
        for (int j = 0; j < m->graph->n_nodes; j++)
            for (int o = 0; o < NOPS; o++)
                if (ox_node_is(m->graph->nodes[j], ops[o]))
                    k->has[o] = 1;
        ox_model_free(m);
    }
    ox_test_paths_free(&ps);
    qsort(cs, (size_t)n, sizeof *cs, cmp_case);
    sweep_ctx s = {.cs = cs, .n = n};
    sweep(bin, node_dir, "", on_base, &s);
    int base = 0;
    for (int i = 0; i < n; i++)
        base += cs[i].base_pass;
    print_message("%d node cases, %d pass as stored\n", n, base);
    for (int t = 0; t < NT; t++) {
        char extra[32];
        snprintf(extra, sizeof extra, "--opset %d", targets[t]);
        s.target = targets[t];
        int p0 = s.pass_total, r0 = s.refused_total;
        sweep(bin, node_dir, extra, on_converted, &s);
        print_message("opset %2d: %d passed converted, %d refused\n", targets[t],
                      s.pass_total - p0, s.refused_total - r0);
    }
    print_message("%-20s %8s %8s %8s %8s\n", "op", "up ok", "down ok", "up ref", "down ref");
    for (int k = 0; k < NOPS; k++)
        if (s.up[k] + s.down[k] + s.ref_up[k] + s.ref_down[k])
            print_message("%-20s %8d %8d %8d %8d\n", ops[k], s.up[k], s.down[k], s.ref_up[k],
                          s.ref_down[k]);
    print_message("total: %d case conversions passed, %d refused, %d failed\n", s.pass_total,
                  s.refused_total, s.failures);
    for (int i = 0; i < n; i++)
        free(cs[i].dir);
    free(cs);
    assert_int_equal(s.failures, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_node_cases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
