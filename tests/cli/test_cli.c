/* The command-line contract: exit codes, one-line errors naming the file,
 * and `info --json` agreeing with ../shared/models/README.md. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <jansson.h>

#include "testutil.h"

static int run(const char *args, char **out)
{
    char cmd[8400];
    snprintf(cmd, sizeof cmd, "'%s' %s", ox_test_bin(), args);
    return ox_test_run(cmd, out);
}

static void write_bytes(const char *path, const void *d, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    if (n)
        assert_int_equal(fwrite(d, 1, n, f), n);
    fclose(f);
}

/* stderr must be exactly one line "onnxscope: FILE: ..." */
static void assert_one_line_error(const char *out, const char *file)
{
    char prefix[512];
    snprintf(prefix, sizeof prefix, "onnxscope: %s: ", file);
    assert_true(strncmp(out, prefix, strlen(prefix)) == 0);
    const char *nl = strchr(out, '\n');
    assert_non_null(nl);
    assert_true(nl[1] == 0);
}

static void test_bad_files(void **state)
{
    (void)state;
    char *out = NULL;
    /* Missing file: I/O error. */
    assert_int_equal(run("check /nonexistent/model.onnx 2>&1", &out), 3);
    assert_one_line_error(out, "/nonexistent/model.onnx");
    free(out);

    char dir[] = "/tmp/oxcliXXXXXX";
    assert_non_null(mkdtemp(dir));
    char p[256], args[512];
    /* Empty file, random bytes, a truncated real model: bad model (1). */
    snprintf(p, sizeof p, "%s/empty.onnx", dir);
    write_bytes(p, "", 0);
    snprintf(args, sizeof args, "info %s", p);
    assert_int_equal(run(args, &out), 1);
    assert_one_line_error(out, p);
    assert_non_null(strstr(out, "empty"));
    free(out);

    snprintf(p, sizeof p, "%s/random.onnx", dir);
    uint8_t junk[777];
    uint32_t s = 7;
    for (size_t i = 0; i < sizeof junk; i++) {
        s = s * 1103515245u + 12345u;
        junk[i] = (uint8_t)(s >> 16);
    }
    write_bytes(p, junk, sizeof junk);
    snprintf(args, sizeof args, "check %s", p);
    assert_int_equal(run(args, &out), 1);
    assert_one_line_error(out, p);
    free(out);

    /* A directory is not a model. */
    snprintf(args, sizeof args, "info %s", dir);
    assert_int_equal(run(args, &out), 3);
    free(out);

    /* Usage errors: exit 2. */
    assert_int_equal(run("info", &out), 2);
    free(out);
    assert_int_equal(run("info --no-such-option x.onnx", &out), 2);
    free(out);

    snprintf(args, sizeof args, "rm -rf %s", dir);
    assert_int_equal(system(args), 0);
}

static void test_check_samples(void **state)
{
    (void)state;
    const char *names[] = {"tiny_cnn.onnx", "tiny_transformer.onnx"};
    for (int i = 0; i < 2; i++) {
        char args[1024], *out = NULL;
        snprintf(args, sizeof args, "check %s/samples/%s", ox_test_source(), names[i]);
        assert_int_equal(run(args, &out), 0);
        assert_non_null(strstr(out, ": ok"));
        free(out);
    }
}

/* Parses "Constant×70, Conv×52, ..." from the README row of `folder`, and
 * the node count column. */
static bool readme_row(const char *readme, const char *folder, int *nodes, json_t *hist)
{
    char key[256];
    snprintf(key, sizeof key, "| `%s/` |", folder);
    const char *row = strstr(readme, key);
    if (!row)
        return false;
    const char *end = strchr(row, '\n');
    /* Columns: folder | source | opset/IR | nodes | histogram | ... */
    const char *c = row;
    for (int col = 0; col < 3; col++)
        c = strchr(c + 1, '|');
    *nodes = atoi(c + 1);
    const char *h = strchr(c + 1, '|') + 1;
    const char *hend = strchr(h, '|');
    if (hend > end)
        return false;
    while (h < hend) {
        while (h < hend && (*h == ' ' || *h == ','))
            h++;
        const char *x = strstr(h, "\xc3\x97"); /* U+00D7 */
        if (!x || x > hend)
            break;
        char op[64];
        snprintf(op, sizeof op, "%.*s", (int)(x - h), h);
        json_object_set_new(hist, op, json_integer(atoi(x + 2)));
        h = x + 2;
        while (h < hend && *h != ',')
            h++;
    }
    return true;
}

static void test_info_json_matches_readme(void **state)
{
    (void)state;
    const char *shared = ox_test_shared();
    if (!shared)
        skip();
    char path[4096];
    snprintf(path, sizeof path, "%s/models/README.md", shared);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char readme[1 << 16];
    size_t n = fread(readme, 1, sizeof readme - 1, f);
    readme[n] = 0;
    fclose(f);
    const char *models[] = {"mobilenet_v2_op13", "squeezenet1_1_op17",
                            "shape_chain_cnn_nofold_op13", "shape_chain_cnn_nofold_op17",
                            "bert_l2_h128_nofold_op13", "gpt2_like_l2_h128_nofold_op13",
                            "torch_transformer_encoder_l4_h256_op17"};
    for (size_t i = 0; i < sizeof models / sizeof *models; i++) {
        int nodes = 0;
        json_t *hist = json_object();
        assert_true(readme_row(readme, models[i], &nodes, hist));
        assert_true(json_object_size(hist) >= 5);
        char args[4200], *out = NULL;
        snprintf(args, sizeof args, "info --json %s/models/%s/model.onnx", shared, models[i]);
        assert_int_equal(run(args, &out), 0);
        json_error_t jerr;
        json_t *o = json_loads(out, 0, &jerr);
        assert_non_null(o);
        assert_int_equal(json_integer_value(json_object_get(o, "nodes")), nodes);
        json_t *got = json_object_get(o, "op_histogram");
        const char *op;
        json_t *cnt;
        json_object_foreach(hist, op, cnt) {
            json_t *g = json_object_get(got, op);
            if (!g || json_integer_value(g) != json_integer_value(cnt))
                printf("# %s: %s expected %lld got %lld\n", models[i], op,
                       (long long)json_integer_value(cnt), g ? (long long)json_integer_value(g) : -1LL);
            assert_non_null(g);
            assert_int_equal(json_integer_value(g), json_integer_value(cnt));
        }
        printf("# %s: %d nodes, %zu ops of the README histogram agree\n", models[i], nodes,
               json_object_size(hist));
        json_decref(o);
        json_decref(hist);
        free(out);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_check_samples),
        cmocka_unit_test(test_info_json_matches_readme),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
