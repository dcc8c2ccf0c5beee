/* Spec requirements refused when a graph is planned (plan_check.h): an If
 * without both branches, and Resize inputs that ONNX requires where the
 * kernel would otherwise fall back to a default. */
#include "plan_check.h"

#include <stdio.h>
#include <string.h>

/* Bodies are planned on first use, so an If lacking a branch ran (exit 0)
 * whenever the condition chose the other one: refused here, as ONNX
 * requires both branches. */
static ox_status check_if(const ox_node *n, const char *label, ox_error *err)
{
    for (int b = 0; b < 2; b++) {
        const char *bn = b ? "else_branch" : "then_branch";
        const ox_attr *ga = ox_node_attr(n, bn);
        if (!ga || ga->type != OX_ATTR_GRAPH || !ga->g)
            return ox_errorf(err, OX_EMODEL, "node '%s' (If): missing %s", label, bn);
    }
    return OX_OK;
}

/* Resize-11 and -12 (opsets 11, 12) declare roi and scales as required
 * inputs: onnx's checker and ONNX Runtime refuse a model that omits them
 * (an empty tensor is how the spec says "none"; from opset 13 both are
 * optional). With coordinate_transformation_mode tf_crop_and_resize roi
 * "takes effect" and is [start..., end...] over the resized axes, so an
 * empty or short constant roi is refused as ONNX Runtime refuses it when it
 * runs; elsewhere the spec ignores roi, an empty one included. */
static ox_status check_resize(const ox_node *n, int64_t opset, const char *label, ox_error *err)
{
    if (opset < 11)
        return OX_OK;   /* Resize-10: X, scales */
    if (opset < 13)
        for (int i = 1; i <= 2; i++)
            if (i >= n->n_inputs || !n->inputs[i])
                return ox_errorf(err, OX_EMODEL,
                                 "node '%s' (Resize): input %d (%s) is required at opset %lld "
                                 "(optional from 13): give an empty tensor when unused",
                                 label, i, i == 1 ? "roi" : "scales", (long long)opset);
    const char *ct = ox_node_attr_s(n, "coordinate_transformation_mode", "half_pixel");
    if (strcmp(ct, "tf_crop_and_resize") || n->n_inputs < 2 || !n->inputs[1])
        return OX_OK;   /* roi omitted (opset 13+): the whole input, as ONNX Runtime */
    const ox_value *roi = n->inputs[1];
    const ox_tensor *t = ox_value_constant(roi);
    if (!t)
        return OX_OK;   /* computed or overridable: the kernel checks it when it runs */
    /* The resized axes: the axes attribute (opset 18), else X's rank. */
    const int64_t *axes;
    int na = ox_node_attr_ints(n, "axes", &axes);
    const ox_value *x = n->inputs[0];
    if (na < 0 && x && x->type && x->type->kind == OX_TYPE_TENSOR && x->type->has_shape)
        na = x->type->rank;
    if (t->numel == 0 || (na > 0 && t->numel != 2 * (int64_t)na)) {
        char want[32] = "2 x rank";
        if (na > 0)
            snprintf(want, sizeof want, "%d", 2 * na);
        return ox_errorf(err, OX_EMODEL,
                         "node '%s' (Resize): tf_crop_and_resize needs roi of %s values "
                         "(a start and an end per axis), got %lld", label, want,
                         (long long)t->numel);
    }
    return OX_OK;
}

ox_status ox__plan_check_node(const ox_node *n, int64_t opset, const char *label, ox_error *err)
{
    if (!ox_node_is_default_domain(n))
        return OX_OK;
    if (!strcmp(n->op_type, "If"))
        return check_if(n, label, err);
    if (!strcmp(n->op_type, "Resize"))
        return check_resize(n, opset, label, err);
    return OX_OK;
}
