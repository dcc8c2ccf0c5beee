/* The registry is the one op list; the other layers attach their facts to
 * its (domain, op_type) keys: the cost rule (src/analysis/cost.c) and the
 * CPU kernel (src/exec, indexed by src/exec/kernels.c). This file joins
 * them for one op and keeps the short, justified list of ops allowed to
 * lack a fact. tests/ops/test_ops_complete.c checks every op against it,
 * both ways (docs/DESIGN.md, "One op list"). */
#include <string.h>

#include "onnxscope/cost.h"
#include "onnxscope/exec.h"
#include "onnxscope/ops.h"

/* Keep this list short: each entry says why the op cannot have the fact. */
static const ox_op_exemption exemptions[] = {
    {"", "ImageDecoder", OX_OP_KERNEL,
     "decoding JPEG/PNG/BMP/WebP/TIFF needs image codec libraries, which onnxscope does "
     "not depend on; `run` refuses such a model with a \"no kernel\" error"},
    {NULL, NULL, 0, NULL},
};

const ox_op_exemption *ox_op_exemption_at(int i)
{
    int n = (int)(sizeof exemptions / sizeof exemptions[0]) - 1;
    return i >= 0 && i < n ? &exemptions[i] : NULL;
}

static bool same_domain(const char *a, const char *b)
{
    a = a && strcmp(a, "ai.onnx") ? a : "";
    b = b && strcmp(b, "ai.onnx") ? b : "";
    return !strcmp(a, b);
}

const ox_op_exemption *ox_op_exemption_for(const char *domain, const char *op_type)
{
    for (int i = 0; op_type && exemptions[i].op_type; i++)
        if (same_domain(exemptions[i].domain, domain) && !strcmp(exemptions[i].op_type, op_type))
            return &exemptions[i];
    return NULL;
}

unsigned ox_op_facts(const char *domain, const char *op_type)
{
    unsigned have = 0;
    const ox_op_schema *s = ox_op_find(domain, op_type, INT64_MAX);
    if (!s)
        return ox_kernel_exists(domain, op_type) ? OX_OP_KERNEL : 0;
    have |= OX_OP_SCHEMA | OX_OP_INFER | OX_OP_KERNEL;
    /* Every version the registry knows needs its inference function and a
     * kernel that serves its opset. */
    while (s->since_version > 0) {
        const ox_op_schema *p = ox_op_find(domain, op_type, s->since_version - 1);
        if (!p || p == s)
            break;
        s = p;
    }
    for (; s; s = ox_op_next_version(s)) {
        if (!s->infer)
            have &= ~(unsigned)OX_OP_INFER;
        if (!ox_kernel_find(domain, op_type, s->since_version))
            have &= ~(unsigned)OX_OP_KERNEL;
    }
    if (ox_cost_rule_exists(domain, op_type))
        have |= OX_OP_COST;
    return have;
}
