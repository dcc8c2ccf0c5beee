/* Unit tests of the Nodes panel's op filter (src/tui/tui_filter.c):
 * several ops, negation, both mixed, case, spaces, and the rejected forms. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tui/tui_filter.h"

static void test_keep_and_drop(void **state)
{
    (void)state;
    tui_filter f;
    char why[160];
    assert_true(tui_filter_parse(&f, "Conv,Add", why, sizeof why));
    assert_true(tui_filter_active(&f));
    assert_true(tui_filter_match(&f, "Conv"));
    assert_true(tui_filter_match(&f, "add"));      /* case-insensitive */
    assert_false(tui_filter_match(&f, "Relu"));
    assert_false(tui_filter_match(&f, "ConvTranspose"));   /* whole names, not prefixes */
    assert_true(tui_filter_parse(&f, "!Constant", why, sizeof why));
    assert_false(tui_filter_match(&f, "Constant"));
    assert_true(tui_filter_match(&f, "Conv"));
    assert_true(tui_filter_parse(&f, " Conv , ! Relu ,!Constant ", why, sizeof why));
    assert_int_equal(f.n_keep, 1);
    assert_int_equal(f.n_drop, 2);
    assert_string_equal(f.drop[0], "Relu");
    assert_true(tui_filter_match(&f, "Conv"));
    assert_false(tui_filter_match(&f, "Relu"));
    assert_false(tui_filter_match(&f, "Add"));
}

static void test_empty_and_bad(void **state)
{
    (void)state;
    tui_filter f;
    char why[160];
    assert_true(tui_filter_parse(&f, "  ", why, sizeof why));
    assert_false(tui_filter_active(&f));
    assert_true(tui_filter_match(&f, "Anything"));
    assert_true(tui_filter_parse(&f, "Conv", why, sizeof why));
    why[0] = 0;
    assert_false(tui_filter_parse(&f, "Conv,,Add", why, sizeof why));
    assert_non_null(strstr(why, "empty op name"));
    assert_false(tui_filter_parse(&f, "!", why, sizeof why));
    /* A rejected filter leaves the previous one in place. */
    assert_true(tui_filter_match(&f, "Conv"));
    assert_false(tui_filter_match(&f, "Add"));
    char many[128] = "";
    for (int i = 0; i < 20; i++)
        strcat(many, "A,");
    strcat(many, "B");
    assert_false(tui_filter_parse(&f, many, why, sizeof why));
    assert_non_null(strstr(why, "too many"));
    char longs[200];
    memset(longs, 'x', sizeof longs - 1);
    longs[sizeof longs - 1] = 0;
    assert_false(tui_filter_parse(&f, longs, why, sizeof why));
    assert_non_null(strstr(why, "too long"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keep_and_drop),
        cmocka_unit_test(test_empty_and_bad),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
