/* libFuzzer harness: the theme file parser (src/export/theme.c) and the
 * colour parser it uses, with the text as given (not NUL-terminated) and
 * each line as a colour. A parsed theme's colours print and parse back. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "onnxscope/theme.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

static void roundtrip(const ox_color *c)
{
    char hex[8];
    if (!ox_color_hex(c, hex, sizeof hex))
        return;
    ox_color back;
    if (!ox_color_parse(hex, &back))
        oxf_fail("colour '%s' printed by ox_color_hex does not parse", hex);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ox_theme t;
    ox_error err = {0};
    if (ox_theme_parse((const char *)data, size, "fuzz", &t, &err) == OX_OK) {
        for (int i = 0; i < OX_SLOT_COUNT; i++) {
            roundtrip(&t.slot[i].fg);
            roundtrip(&t.slot[i].bg);
        }
        ox_theme_op_style(&t, "Conv");
    } else if (!err.msg[0]) {
        oxf_fail("theme parse failed without a message");
    }
    /* Each line on its own as a colour (NUL-terminated copies). */
    size_t start = 0;
    for (size_t i = 0; i <= size; i++) {
        if (i < size && data[i] != '\n')
            continue;
        size_t n = i - start;
        char *s = malloc(n + 1);
        if (s) {
            memcpy(s, data + start, n);
            s[n] = 0;
            ox_color c;
            if (ox_color_parse(s, &c))
                roundtrip(&c);
            free(s);
        }
        start = i + 1;
    }
    return 0;
}
