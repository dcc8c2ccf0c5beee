/* Themes and operator categories: every shipped theme parses, the built-in
 * default equals themes/default.theme, colours convert as xterm defines
 * them, malformed files fail with file:line and leave the default, and ops
 * fall into the categories the ONNX operator list suggests. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnxscope/theme.h"
#include "testutil.h"

static bool style_eq(const ox_style *a, const ox_style *b)
{
    return a->attrs == b->attrs && a->fg.has_rgb == b->fg.has_rgb &&
           a->bg.has_rgb == b->bg.has_rgb && (!a->fg.has_rgb || a->fg.rgb == b->fg.rgb) &&
           (!a->bg.has_rgb || a->bg.rgb == b->bg.rgb) && a->fg.c256 == b->fg.c256 &&
           a->bg.c256 == b->bg.c256 && a->fg.c8 == b->fg.c8 && a->bg.c8 == b->bg.c8;
}

static void test_shipped_themes(void **state)
{
    (void)state;
    const char *src = ox_test_source();
    static const char *const names[] = {"default", "light", "high-contrast", "mono"};
    ox_theme builtin;
    ox_theme_default(&builtin);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/themes/%s.theme", src, names[i]);
        ox_theme t;
        ox_error err = {0};
        if (ox_theme_load_file(path, &t, &err) != OX_OK)
            fail_msg("%s: %s", path, err.msg);
        assert_string_equal(t.name, names[i]);
        if (i == 0)
            for (int s = 0; s < OX_SLOT_COUNT; s++)
                if (!style_eq(&t.slot[s], &builtin.slot[s]))
                    fail_msg("default.theme and the built-in default differ at %s",
                             ox_theme_slot_key((ox_theme_slot)s));
    }
    /* By name, through the search path. */
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/themes", src);
    setenv("ONNXSCOPE_THEMES", dir, 1);
    ox_theme t;
    ox_error err = {0};
    assert_int_equal(ox_theme_load("mono", &t, &err), OX_OK);
    assert_string_equal(t.name, "mono");
    assert_false(t.slot[OX_SLOT_UI_SELECTED].fg.has_rgb);
    assert_true(t.slot[OX_SLOT_UI_SELECTED].attrs & OX_STYLE_REVERSE);
    assert_int_equal(t.slot[OX_SLOT_OP_CONV].fg.c256, -1);   /* terminal default */
    assert_true(t.slot[OX_SLOT_OP_CONV].fg.has_rgb);         /* but white in DOT */
    ox_error_clear(&err);
    assert_int_not_equal(ox_theme_load("no-such-theme", &t, &err), OX_OK);
    assert_non_null(strstr(err.msg, "no-such-theme"));
    assert_string_equal(t.name, "default");
}

static void test_every_key_in_default_file(void **state)
{
    (void)state;
    /* Every shipped file sets every slot, so none silently inherits the
     * default's colours (and users can copy any of them as a start). */
    static const char *const names[] = {"default", "light", "high-contrast", "mono"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/themes/%s.theme", ox_test_source(), names[i]);
        FILE *f = fopen(path, "r");
        assert_non_null(f);
        char *text = calloc(1, 65536);
        assert_non_null(text);
        size_t n = fread(text, 1, 65535, f);
        fclose(f);
        text[n] = '\0';
        for (int s = 0; s < OX_SLOT_COUNT; s++) {
            char key[80];
            snprintf(key, sizeof key, "\n%s =", ox_theme_slot_key((ox_theme_slot)s));
            if (!strstr(text, key))
                fail_msg("%s.theme lacks %s", names[i], key + 1);
        }
        free(text);
    }
}

static void test_colours(void **state)
{
    (void)state;
    ox_color c;
    /* xterm-256: 196 is the cube's pure red, 21 pure blue, 231 white,
     * 232..255 the grey ramp 8 + 10k. */
    assert_true(ox_color_parse("#ff0000", &c));
    assert_int_equal(c.c256, 196);
    assert_int_equal(c.c8, 1);
    assert_true(ox_color_parse("#0000ff", &c));
    assert_int_equal(c.c256, 21);
    assert_int_equal(c.c8, 4);
    assert_true(ox_color_parse("#fff", &c));
    assert_int_equal(c.rgb, 0xffffff);
    assert_int_equal(c.c256, 231);
    assert_int_equal(c.c8, 7);
    assert_true(ox_color_parse("#121212", &c));
    assert_int_equal(c.c256, 233);
    assert_int_equal(c.c8, 0);
    assert_true(ox_color_parse("16", &c));
    assert_int_equal(c.rgb, 0x000000);
    assert_true(ox_color_parse("67", &c)); /* 16 + 36*1 + 6*2 + 3 */
    assert_int_equal(c.rgb, 0x5f87af);
    assert_true(ox_color_parse("bright-red", &c));
    assert_int_equal(c.c256, 9);
    assert_int_equal(c.c8, 1);
    assert_true(ox_color_parse("#aec7e8/blue", &c));
    assert_int_equal(c.rgb, 0xaec7e8);
    assert_int_equal(c.c8, 4);
    assert_int_equal(c.c256, 4);
    assert_true(ox_color_parse("default", &c));
    assert_false(c.has_rgb);
    assert_int_equal(c.c8, -1);
    char hex[8];
    assert_null(ox_color_hex(&c, hex, sizeof hex));
    assert_true(ox_color_parse("#AbCdEf", &c));
    assert_string_equal(ox_color_hex(&c, hex, sizeof hex), "#abcdef");
    /* Pastels keep their hue on 8-colour terminals. */
    assert_true(ox_color_parse("#98df8a", &c));
    assert_int_equal(c.c8, 2);
    static const char *const bad[] = {"", "#12", "#gggggg", "purple", "256", "#fff/nope",
                                      "bright-", "-1", "#1234567"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (ox_color_parse(bad[i], &c))
            fail_msg("'%s' should not parse", bad[i]);
}

static void test_malformed(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        const char *want;   /* in the message */
    } cases[] = {
        {"ui.normal = white\nui.title = chartreuse\n", "t.theme:2:"},
        {"ui.normal white\n", "t.theme:1: expected 'key = value'"},
        {"# c\n\nui.nope = red\n", "t.theme:3: unknown key 'ui.nope'"},
        {"ui.title = red on\n", "without a background"},
        {"ui.title = red blinking\n", "unknown attribute 'blinking'"},
        {"ui.title =\n", "empty value"},
        {" = red\n", "missing key"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ox_theme t;
        ox_error err = {0};
        ox_status st = ox_theme_parse(cases[i].text, strlen(cases[i].text), "t.theme", &t,
                                      &err);
        assert_int_equal(st, OX_EPARSE);
        if (!strstr(err.msg, cases[i].want))
            fail_msg("case %zu: message '%s' lacks '%s'", i, err.msg, cases[i].want);
        /* Falls back to the default, not a half-parsed theme. */
        ox_theme d;
        ox_theme_default(&d);
        assert_string_equal(t.name, "default");
        assert_true(style_eq(&t.slot[OX_SLOT_UI_NORMAL], &d.slot[OX_SLOT_UI_NORMAL]));
    }
    /* Comments, blank lines, inline comments and unset keys. */
    const char *ok = "# top\nname = mine\n\n  ui.title = #ff0000 on 21 bold underline  # x\n";
    ox_theme t, d;
    ox_error err = {0};
    assert_int_equal(ox_theme_parse(ok, strlen(ok), "x", &t, &err), OX_OK);
    ox_theme_default(&d);
    assert_string_equal(t.name, "mine");
    assert_int_equal(t.slot[OX_SLOT_UI_TITLE].fg.rgb, 0xff0000);
    assert_int_equal(t.slot[OX_SLOT_UI_TITLE].bg.c256, 21);
    assert_int_equal(t.slot[OX_SLOT_UI_TITLE].attrs, OX_STYLE_BOLD | OX_STYLE_UNDERLINE);
    assert_true(style_eq(&t.slot[OX_SLOT_OP_CONV], &d.slot[OX_SLOT_OP_CONV]));
    /* Windows line ends and a byte-order mark are fine. */
    const char *crlf = "\xef\xbb\xbfname = crlf\r\nui.ok = green bold\r\n";
    assert_int_equal(ox_theme_parse(crlf, strlen(crlf), "x", &t, &err), OX_OK);
    assert_string_equal(t.name, "crlf");
    assert_int_equal(t.slot[OX_SLOT_UI_OK].fg.c8, 2);
    assert_int_equal(t.slot[OX_SLOT_UI_OK].attrs, OX_STYLE_BOLD);
    /* A missing file is an I/O error with the default in place. */
    ox_error_clear(&err);
    assert_int_equal(ox_theme_load_file("/nonexistent/x.theme", &t, &err), OX_EIO);
    assert_string_equal(t.name, "default");
}

static void test_categories(void **state)
{
    (void)state;
    static const struct {
        const char *op;
        ox_opcat cat;
    } cases[] = {
        {"Conv", OX_OPCAT_CONV}, {"ConvTranspose", OX_OPCAT_CONV},
        {"MatMul", OX_OPCAT_MATMUL}, {"Gemm", OX_OPCAT_MATMUL},
        {"Relu", OX_OPCAT_ACTIVATION}, {"Softmax", OX_OPCAT_ACTIVATION},
        {"Clip", OX_OPCAT_ACTIVATION}, {"BatchNormalization", OX_OPCAT_NORM},
        {"LayerNormalization", OX_OPCAT_NORM}, {"MaxPool", OX_OPCAT_POOL},
        {"GlobalAveragePool", OX_OPCAT_POOL}, {"Add", OX_OPCAT_ELEMENTWISE},
        {"Where", OX_OPCAT_ELEMENTWISE}, {"Reshape", OX_OPCAT_RESHAPE},
        {"Shape", OX_OPCAT_RESHAPE}, {"Gather", OX_OPCAT_RESHAPE},
        {"ReduceMean", OX_OPCAT_REDUCTION}, {"ArgMax", OX_OPCAT_REDUCTION},
        {"If", OX_OPCAT_CONTROL}, {"Loop", OX_OPCAT_CONTROL}, {"Scan", OX_OPCAT_CONTROL},
        {"QuantizeLinear", OX_OPCAT_QUANT}, {"QLinearConv", OX_OPCAT_QUANT},
        {"QLinearMatMul", OX_OPCAT_QUANT}, {"MatMulInteger", OX_OPCAT_QUANT},
        {"Constant", OX_OPCAT_OTHER}, {"LSTM", OX_OPCAT_OTHER}, {"", OX_OPCAT_OTHER},
        {NULL, OX_OPCAT_OTHER}, {"conv", OX_OPCAT_OTHER},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (ox_op_category(cases[i].op) != cases[i].cat)
            fail_msg("%s: category %s, expected %s", cases[i].op ? cases[i].op : "NULL",
                     ox_opcat_name(ox_op_category(cases[i].op)), ox_opcat_name(cases[i].cat));
    /* Names are the theme keys' suffixes. */
    for (int c = 0; c < OX_OPCAT_COUNT; c++) {
        char key[64];
        snprintf(key, sizeof key, "op.%s", ox_opcat_name((ox_opcat)c));
        assert_int_equal(ox_theme_slot_from_key(key), (int)ox_theme_opcat_slot((ox_opcat)c));
    }
    ox_theme t;
    ox_theme_default(&t);
    assert_ptr_equal(ox_theme_op_style(&t, "Conv"), &t.slot[OX_SLOT_OP_CONV]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shipped_themes),
        cmocka_unit_test(test_every_key_in_default_file),
        cmocka_unit_test(test_colours),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_categories),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
