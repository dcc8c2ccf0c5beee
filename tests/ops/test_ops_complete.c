/* One op list (issue 12 item 3): every op of the registry has a schema,
 * shape inference for every schema version, a cost rule and a CPU kernel
 * for every schema version; every kernel and every cost rule belongs to a
 * registered op. An op may lack a fact only when its exemption
 * (src/ops/facts.c) names exactly that fact, and an exemption that is no
 * longer needed fails too, so the list stays short. Each gap is printed on
 * its own line, saying which table to fill (docs/DESIGN.md "One op list"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "onnxscope/cost.h"
#include "onnxscope/exec.h"
#include "onnxscope/ops.h"

static const char *where[] = {
    "a schema in src/ops/registry.c",
    "an inference function for every schema version (src/analysis/infer_*.c)",
    "a cost rule in src/analysis/cost.c (rules[], docs/COST.md)",
    "a CPU kernel for every schema version (src/exec/k_*)",
};

static const char *dom(const char *d)
{
    return d && *d ? d : "ai.onnx";
}

/* Prints what op lacks beyond its exemption, and a stale exemption;
 * returns the number of problems. */
static int check_op(const char *domain, const char *op)
{
    unsigned have = ox_op_facts(domain, op);
    const ox_op_exemption *ex = ox_op_exemption_for(domain, op);
    unsigned allowed = ex ? ex->missing : 0;
    int bad = 0;
    for (int k = 0; k < 4; k++) {
        unsigned f = 1u << k;
        if (!(have & f) && !(allowed & f)) {
            printf("%s:%s lacks %s\n", dom(domain), op, where[k]);
            bad++;
        } else if ((have & f) && (allowed & f)) {
            printf("%s:%s now has %s: drop that from its exemption in src/ops/facts.c\n",
                   dom(domain), op, where[k]);
            bad++;
        }
    }
    return bad;
}

static void test_registry_ops_complete(void **state)
{
    (void)state;
    int bad = 0, ops = 0;
    const ox_op_schema *s, *prev = NULL;
    for (int i = 0; (s = ox_op_at(i)); prev = s, i++) {
        if (prev && !strcmp(prev->domain, s->domain) && !strcmp(prev->op_type, s->op_type))
            continue;
        ops++;
        bad += check_op(s->domain, s->op_type);
    }
    printf("%d registered ops, %d gaps\n", ops, bad);
    assert_true(ops > 200);
    assert_int_equal(bad, 0);
}

/* Does some registry domain list op? (cost rules are keyed by op_type) */
static bool registered_anywhere(const char *op)
{
    const ox_op_schema *s;
    for (int i = 0; (s = ox_op_at(i)); i++)
        if (!strcmp(s->op_type, op))
            return true;
    return false;
}

static void test_kernels_have_schemas(void **state)
{
    (void)state;
    int bad = 0;
    const ox_kernel_entry *k;
    for (int i = 0; (k = ox_kernel_at(i)); i++)
        if (!ox_op_find(k->domain, k->op_type, INT64_MAX)) {
            printf("kernel %s:%s (since %d) has no schema: add %s\n", dom(k->domain),
                   k->op_type, k->since_version, where[0]);
            bad++;
        }
    assert_true(ox_kernel_count() > 200);
    assert_int_equal(bad, 0);
}

static void test_cost_rules_have_schemas(void **state)
{
    (void)state;
    int bad = 0, n = 0;
    const char *op;
    for (int i = 0; (op = ox_cost_rule_at(i)); i++, n++) {
        if (i && strcmp(ox_cost_rule_at(i - 1), op) >= 0) {
            printf("cost rules out of order at %s (the table is binary-searched)\n", op);
            bad++;
        }
        if (!registered_anywhere(op)) {
            printf("cost rule %s has no schema: add %s\n", op, where[0]);
            bad++;
        }
    }
    assert_true(n > 200);
    assert_int_equal(bad, 0);
}

static void test_exemptions_are_justified(void **state)
{
    (void)state;
    const ox_op_exemption *e;
    int n = 0;
    for (int i = 0; (e = ox_op_exemption_at(i)); i++, n++) {
        /* An exemption covers a registered op, names a fact it lacks (never
         * the schema: an op without one is not on the list) and says why. */
        assert_non_null(ox_op_find(e->domain, e->op_type, INT64_MAX));
        assert_true(e->missing && !(e->missing & ~(unsigned)OX_OP_ALL));
        assert_false(e->missing & OX_OP_SCHEMA);
        assert_true(e->why && strlen(e->why) > 20);
        assert_ptr_equal(ox_op_exemption_for(e->domain, e->op_type), e);
    }
    /* Short by design: a longer list means work to do, not to excuse. */
    assert_true(n <= 8);
}

/* The join itself: facts of a complete op, an exempt op and an unknown op. */
static void test_facts(void **state)
{
    (void)state;
    assert_int_equal(ox_op_facts("", "Conv"), OX_OP_ALL);
    assert_int_equal(ox_op_facts("ai.onnx", "Relu"), OX_OP_ALL);
    assert_int_equal(ox_op_facts("com.microsoft", "FusedGemm"), OX_OP_ALL);
    assert_int_equal(ox_op_facts("", "ImageDecoder"), OX_OP_ALL & ~(unsigned)OX_OP_KERNEL);
    assert_int_equal(ox_op_facts("", "NoSuchOp"), 0);
    assert_int_equal(ox_op_facts("my.custom", "Conv"), 0);
    /* A cost rule serves a registered op of another domain only. */
    assert_true(ox_cost_rule_exists("ai.onnx.ml", "Binarizer"));
    assert_false(ox_cost_rule_exists("my.custom", "Binarizer"));
    assert_true(ox_cost_rule_exists("com.microsoft", "Relu"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_registry_ops_complete),
        cmocka_unit_test(test_kernels_have_schemas),
        cmocka_unit_test(test_cost_rules_have_schemas),
        cmocka_unit_test(test_exemptions_are_justified),
        cmocka_unit_test(test_facts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
