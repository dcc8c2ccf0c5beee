/* Structural comparison of two models: what a save/load round trip must
 * preserve (nodes, attributes, names, types, tensors byte-equal). Used by
 * the round-trip tests and by `onnxscope diff`-like checks. */
#include "onnxscope/io.h"

#include <stdio.h>
#include <string.h>

static bool streq(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "") == 0;
}

static bool graph_equal(const ox_graph *a, const ox_graph *b, ox_error *err);

static bool bytes_equal(const ox_bytes *a, const ox_bytes *b)
{
    return a->len == b->len && (a->len == 0 || memcmp(a->data, b->data, a->len) == 0);
}

static bool tensor_eq(const ox_tensor *a, const ox_tensor *b, const char *what,
                      ox_error *err)
{
    if (!a || !b) {
        if (a != b)
            ox_errorf(err, OX_EMODEL, "%s: tensor present on one side only", what);
        return a == b;
    }
    if (!ox_tensor_equal(a, b)) {
        ox_errorf(err, OX_EMODEL, "%s: tensors differ", what);
        return false;
    }
    return true;
}

static bool sparse_eq(const ox_sparse *a, const ox_sparse *b, const char *what,
                      ox_error *err)
{
    if (!a || !b)
        return a == b;
    if (a->rank != b->rank || memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->rank)) {
        ox_errorf(err, OX_EMODEL, "%s: sparse shapes differ", what);
        return false;
    }
    return tensor_eq(a->values, b->values, what, err) &&
           tensor_eq(a->indices, b->indices, what, err);
}

static bool attr_equal(const ox_attr *a, const ox_attr *b, const char *where,
                       ox_error *err)
{
    char what[400];
    snprintf(what, sizeof what, "%.200s attribute '%.150s'", where, a->name);
    if (!streq(a->name, b->name) || a->type != b->type ||
        !streq(a->ref_attr_name, b->ref_attr_name) || a->n != b->n) {
        ox_errorf(err, OX_EMODEL, "%s: name, type or length differs", what);
        return false;
    }
    bool ok = true;
    switch (a->type) {
    case OX_ATTR_FLOAT:
        ok = memcmp(&a->f, &b->f, sizeof a->f) == 0;
        break;
    case OX_ATTR_INT:
        ok = a->i == b->i;
        break;
    case OX_ATTR_STRING:
        ok = bytes_equal(&a->s, &b->s);
        break;
    case OX_ATTR_TENSOR:
        return tensor_eq(a->t, b->t, what, err);
    case OX_ATTR_GRAPH:
        if (!a->g || !b->g)
            ok = a->g == b->g;
        else
            return graph_equal(a->g, b->g, err);
        break;
    case OX_ATTR_SPARSE_TENSOR:
        return sparse_eq(a->sparse, b->sparse, what, err);
    case OX_ATTR_TYPE_PROTO:
        ok = (!a->tp && !b->tp) || (a->tp && b->tp && ox_type_equal(a->tp, b->tp));
        break;
    case OX_ATTR_FLOATS:
        ok = a->n == 0 || memcmp(a->floats, b->floats, sizeof(float) * (size_t)a->n) == 0;
        break;
    case OX_ATTR_INTS:
        ok = a->n == 0 || memcmp(a->ints, b->ints, sizeof(int64_t) * (size_t)a->n) == 0;
        break;
    case OX_ATTR_STRINGS:
        for (int i = 0; i < a->n && ok; i++)
            ok = bytes_equal(&a->strings[i], &b->strings[i]);
        break;
    case OX_ATTR_TENSORS:
        for (int i = 0; i < a->n; i++)
            if (!tensor_eq(a->tensors[i], b->tensors[i], what, err))
                return false;
        break;
    case OX_ATTR_GRAPHS:
        for (int i = 0; i < a->n; i++)
            if (!graph_equal(a->graphs[i], b->graphs[i], err))
                return false;
        break;
    case OX_ATTR_SPARSE_TENSORS:
        for (int i = 0; i < a->n; i++)
            if (!sparse_eq(a->sparses[i], b->sparses[i], what, err))
                return false;
        break;
    case OX_ATTR_TYPE_PROTOS:
        for (int i = 0; i < a->n && ok; i++)
            ok = ox_type_equal(a->tps[i], b->tps[i]);
        break;
    default:
        break;
    }
    if (!ok)
        ox_errorf(err, OX_EMODEL, "%s: values differ", what);
    return ok;
}

static bool value_ref_equal(const ox_value *a, const ox_value *b)
{
    if (!a || !b)
        return a == b;
    return streq(a->name, b->name);
}

static bool type_eq(const ox_type *a, const ox_type *b)
{
    bool ua = !a || a->kind == OX_TYPE_NONE, ub = !b || b->kind == OX_TYPE_NONE;
    if (ua || ub)
        return ua == ub;
    return ox_type_equal(a, b);
}

static bool node_equal(const ox_node *a, const ox_node *b, ox_error *err)
{
    char where[300];
    snprintf(where, sizeof where, "node '%s' (%s)", a->name ? a->name : "", a->op_type);
    if (!streq(a->name, b->name) || !streq(a->op_type, b->op_type) ||
        !streq(a->domain, b->domain) || !streq(a->overload, b->overload)) {
        ox_errorf(err, OX_EMODEL, "%s: name, op or domain differs from '%s' (%s)", where,
                  b->name ? b->name : "", b->op_type);
        return false;
    }
    if (a->n_inputs != b->n_inputs || a->n_outputs != b->n_outputs ||
        a->n_attrs != b->n_attrs) {
        ox_errorf(err, OX_EMODEL, "%s: input, output or attribute count differs", where);
        return false;
    }
    for (int i = 0; i < a->n_inputs; i++)
        if (!value_ref_equal(a->inputs[i], b->inputs[i])) {
            ox_errorf(err, OX_EMODEL, "%s: input %d differs", where, i);
            return false;
        }
    for (int i = 0; i < a->n_outputs; i++)
        if (!value_ref_equal(a->outputs[i], b->outputs[i])) {
            ox_errorf(err, OX_EMODEL, "%s: output %d differs", where, i);
            return false;
        }
    for (int i = 0; i < a->n_attrs; i++)
        if (!attr_equal(&a->attrs[i], &b->attrs[i], where, err))
            return false;
    return true;
}

static bool graph_equal(const ox_graph *a, const ox_graph *b, ox_error *err)
{
    const char *gn = a->name ? a->name : "";
    if (!streq(a->name, b->name)) {
        ox_errorf(err, OX_EMODEL, "graph names differ: '%s' vs '%s'", gn, b->name ? b->name : "");
        return false;
    }
    if (a->n_nodes != b->n_nodes || a->n_inputs != b->n_inputs ||
        a->n_outputs != b->n_outputs) {
        ox_errorf(err, OX_EMODEL, "graph '%s': node/input/output counts differ (%d/%d/%d vs %d/%d/%d)",
                  gn, a->n_nodes, a->n_inputs, a->n_outputs, b->n_nodes, b->n_inputs,
                  b->n_outputs);
        return false;
    }
    for (int i = 0; i < a->n_inputs; i++)
        if (!value_ref_equal(a->inputs[i], b->inputs[i]) ||
            !type_eq(a->inputs[i]->type, b->inputs[i]->type)) {
            ox_errorf(err, OX_EMODEL, "graph '%s': input %d differs", gn, i);
            return false;
        }
    for (int i = 0; i < a->n_outputs; i++)
        if (!value_ref_equal(a->outputs[i], b->outputs[i]) ||
            !type_eq(a->outputs[i]->type, b->outputs[i]->type)) {
            ox_errorf(err, OX_EMODEL, "graph '%s': output %d differs", gn, i);
            return false;
        }
    for (int i = 0; i < a->n_nodes; i++)
        if (!node_equal(a->nodes[i], b->nodes[i], err))
            return false;
    /* Initializers and value_info by name. */
    int na = 0, nb = 0;
    for (int i = 0; i < a->n_values; i++) {
        const ox_value *va = a->values[i];
        if (!va->init && !va->has_value_info)
            continue;
        if (va->init)
            na++;
        const ox_value *vb = ox_graph_find(b, va->name);
        if (!vb) {
            ox_errorf(err, OX_EMODEL, "graph '%s': value '%s' missing", gn, va->name);
            return false;
        }
        if (va->init && !tensor_eq(va->init, vb->init, va->name, err))
            return false;
        if (va->has_value_info && !va->is_input && !va->is_output &&
            !type_eq(va->type, vb->type)) {
            ox_errorf(err, OX_EMODEL, "graph '%s': value_info of '%s' differs", gn, va->name);
            return false;
        }
    }
    for (int i = 0; i < b->n_values; i++)
        if (b->values[i]->init)
            nb++;
    if (na != nb) {
        ox_errorf(err, OX_EMODEL, "graph '%s': %d vs %d initializers", gn, na, nb);
        return false;
    }
    if (a->n_sparse != b->n_sparse) {
        ox_errorf(err, OX_EMODEL, "graph '%s': sparse initializer counts differ", gn);
        return false;
    }
    for (int i = 0; i < a->n_sparse; i++)
        if (!sparse_eq(a->sparse_inits[i], b->sparse_inits[i], "sparse initializer", err))
            return false;
    return true;
}

static bool kvs_equal(const ox_kv *a, int na, const ox_kv *b, int nb)
{
    if (na != nb)
        return false;
    for (int i = 0; i < na; i++)
        if (!streq(a[i].key, b[i].key) || !streq(a[i].value, b[i].value))
            return false;
    return true;
}

bool ox_model_equal(const ox_model *a, const ox_model *b, ox_error *err)
{
    if (a->ir_version != b->ir_version || !streq(a->producer_name, b->producer_name) ||
        !streq(a->producer_version, b->producer_version) || !streq(a->domain, b->domain) ||
        a->model_version != b->model_version || !streq(a->doc_string, b->doc_string)) {
        ox_errorf(err, OX_EMODEL, "model header fields differ");
        return false;
    }
    if (a->n_opsets != b->n_opsets) {
        ox_errorf(err, OX_EMODEL, "opset imports differ");
        return false;
    }
    for (int i = 0; i < a->n_opsets; i++)
        if (ox_model_opset(b, a->opsets[i].domain) != a->opsets[i].version) {
            ox_errorf(err, OX_EMODEL, "opset import of '%s' differs", a->opsets[i].domain);
            return false;
        }
    if (!kvs_equal(a->meta, a->n_meta, b->meta, b->n_meta)) {
        ox_errorf(err, OX_EMODEL, "metadata differs");
        return false;
    }
    if (a->n_functions != b->n_functions || a->n_training_info != b->n_training_info) {
        ox_errorf(err, OX_EMODEL, "function or training-info counts differ");
        return false;
    }
    for (int i = 0; i < a->n_functions; i++) {
        const ox_function *fa = &a->functions[i], *fb = &b->functions[i];
        if (!streq(fa->name, fb->name) || !streq(fa->domain, fb->domain) ||
            !graph_equal(fa->body, fb->body, err)) {
            if (err && !err->status)
                ox_errorf(err, OX_EMODEL, "function '%s' differs", fa->name);
            return false;
        }
    }
    for (int i = 0; i < a->n_training_info; i++)
        if (a->training_info[i].len != b->training_info[i].len ||
            memcmp(a->training_info[i].data, b->training_info[i].data,
                   a->training_info[i].len)) {
            ox_errorf(err, OX_EMODEL, "training info %d differs", i);
            return false;
        }
    if (!a->graph || !b->graph)
        return a->graph == b->graph;
    return graph_equal(a->graph, b->graph, err);
}
