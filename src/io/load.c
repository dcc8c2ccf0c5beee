/* Loading a .onnx file into the IR: map the file, lift the main graph's
 * initializer payloads out of the byte stream (so they are viewed, never
 * copied), unpack the rest with protobuf-c and convert it. */
#include "onnxscope/io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/convert.h"
#include "io/wire.h"

/* Payloads below this size are copied by protobuf-c: not worth a view. */
#define VIEW_THRESHOLD 256
/* Bounds on nesting, so that a hostile file cannot exhaust the stack of
 * the recursive walkers (our wire walker, protobuf-c's unpacker, the
 * converters, inference and the executor). Messages: every subgraph level
 * costs three (GraphProto, NodeProto, AttributeProto) and a value's type
 * five more, so 256 leaves room for MAX_GRAPH_DEPTH subgraph levels with
 * nested sequence/optional types inside. Both are documented in
 * docs/DESIGN.md; inference uses the same subgraph bound. */
#define MAX_MSG_DEPTH 256
#define MAX_GRAPH_DEPTH 64

typedef struct loader {
    ox_model *m;
    ox_extctx *ext;
    ox_buffer *owner;        /* mapped file, for views */
    const ox_wire_view *views;
    int n_views;
    ox_error *err;
    bool keep_going;         /* ox_load_opts.keep_going */
    /* Progress: items (main-graph initializers and nodes) converted out of
     * n_items, mapped onto [base, 1) of the caller's fraction. */
    const ox_load_opts *opts;
    size_t n_items, done_items;
    double base, last;
} loader;

static void report(loader *L, double frac)
{
    if (!L->opts || !L->opts->progress)
        return;
    /* At most ~200 calls per load, never backwards. */
    if (frac < 1.0 && frac - L->last < 0.005)
        return;
    L->last = frac;
    L->opts->progress(L->opts->progress_ctx, frac);
}

static void item_done(loader *L)
{
    L->done_items++;
    if (L->n_items)
        report(L, L->base + (0.99 - L->base) * (double)L->done_items / (double)L->n_items);
}

static ox_status convert_graph(loader *L, const Onnx__GraphProto *gp, ox_graph *g,
                               bool main_graph, int depth);

static void add_issue(ox_model *m, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void add_issue(ox_model *m, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char **ni = realloc(m->load_issues, (size_t)(m->n_load_issues + 1) * sizeof *ni);
    if (!ni)
        return;
    m->load_issues = ni;
    m->load_issues[m->n_load_issues++] = ox_strdup(buf);
}

static const char *nz(const char *s)
{
    return s ? s : "";
}

/* A structural problem that makes the file unrepresentable as it is: a
 * load error, unless keep_going records it (the caller then drops the
 * offending element and returns OX_OK). */
static ox_status problem(loader *L, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static ox_status problem(loader *L, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (!L->keep_going)
        return ox_errorf(L->err, OX_EMODEL, "%s", buf);
    add_issue(L->m, "%s", buf);
    return OX_OK;
}

/* Element types the converter cannot represent (it maps them to
 * "undefined"): recorded for `check`. io: a graph input or output of the
 * main graph, which must name its element type. A negative dim_value loads
 * as unknown (ox_dim.declared_neg) and `check` warns about it (check.c):
 * ONNX Runtime runs such a model. */
static void scan_type(loader *L, const Onnx__TypeProto *tp, const char *gname,
                      const char *what, const char *name, bool io, int depth)
{
    if (!tp || depth > 32)
        return;
    bool has_elem = false;
    int32_t elem = 0;
    switch (tp->value_case) {
    case ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE:
        has_elem = tp->tensor_type->has_elem_type;
        elem = tp->tensor_type->elem_type;
        break;
    case ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE:
        has_elem = tp->sparse_tensor_type->has_elem_type;
        elem = tp->sparse_tensor_type->elem_type;
        break;
    case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE:
        scan_type(L, tp->sequence_type->elem_type, gname, what, name, false, depth + 1);
        return;
    case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE:
        scan_type(L, tp->optional_type->elem_type, gname, what, name, false, depth + 1);
        return;
    case ONNX__TYPE_PROTO__VALUE_MAP_TYPE:
        if (tp->map_type->has_key_type && !ox_dtype_valid(tp->map_type->key_type))
            add_issue(L->m, "%s: %s '%s' has an invalid map key type %d", gname, what, name,
                      (int)tp->map_type->key_type);
        scan_type(L, tp->map_type->value_type, gname, what, name, false, depth + 1);
        return;
    default:
        return;
    }
    if (has_elem && elem != 0 && !ox_dtype_valid(elem))
        add_issue(L->m, "%s: %s '%s' has an invalid element type %d", gname, what, name,
                  (int)elem);
    else if (io && (!has_elem || elem == 0))
        add_issue(L->m, "%s: %s '%s' has no element type", gname, what, name);
}

static ox_kv *convert_kvs(Onnx__StringStringEntryProto *const *e, size_t n, int *out_n)
{
    *out_n = 0;
    if (!n)
        return NULL;
    ox_kv *kv = calloc(n, sizeof *kv);
    if (!kv)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        kv[i].key = ox_strdup(nz(e[i]->key));
        kv[i].value = ox_strdup(nz(e[i]->value));
    }
    *out_n = (int)n;
    return kv;
}

static ox_status convert_sparse(loader *L, const Onnx__SparseTensorProto *sp,
                                ox_sparse **out)
{
    ox_sparse *s = calloc(1, sizeof *s);
    if (!s)
        return ox_errorf(L->err, OX_ENOMEM, "out of memory");
    ox_status st = OX_OK;
    if (sp->n_dims > OX_MAX_RANK) {
        free(s);
        return ox_errorf(L->err, OX_EMODEL, "sparse tensor rank %zu exceeds %d",
                         sp->n_dims, OX_MAX_RANK);
    }
    s->rank = (int)sp->n_dims;
    for (size_t i = 0; i < sp->n_dims; i++)
        s->dims[i] = sp->dims[i];
    if (sp->values)
        st = ox_tensor_from_proto(sp->values, NULL, NULL, L->ext, &s->values, L->err);
    if (st == OX_OK && sp->indices)
        st = ox_tensor_from_proto(sp->indices, NULL, NULL, L->ext, &s->indices, L->err);
    if (st != OX_OK) {
        ox_tensor_free(s->values);
        ox_tensor_free(s->indices);
        free(s);
        return st;
    }
    *out = s;
    return OX_OK;
}

/* Attribute type for IR < 2 files that carry no discriminator. */
static int guess_attr_type(const Onnx__AttributeProto *a)
{
    if (a->has_f) return OX_ATTR_FLOAT;
    if (a->has_i) return OX_ATTR_INT;
    if (a->has_s) return OX_ATTR_STRING;
    if (a->t) return OX_ATTR_TENSOR;
    if (a->g) return OX_ATTR_GRAPH;
    if (a->sparse_tensor) return OX_ATTR_SPARSE_TENSOR;
    if (a->tp) return OX_ATTR_TYPE_PROTO;
    if (a->n_floats) return OX_ATTR_FLOATS;
    if (a->n_ints) return OX_ATTR_INTS;
    if (a->n_strings) return OX_ATTR_STRINGS;
    if (a->n_tensors) return OX_ATTR_TENSORS;
    if (a->n_graphs) return OX_ATTR_GRAPHS;
    if (a->n_sparse_tensors) return OX_ATTR_SPARSE_TENSORS;
    if (a->n_type_protos) return OX_ATTR_TYPE_PROTOS;
    return OX_ATTR_UNDEFINED;
}

static ox_bytes bytes_dup(const ProtobufCBinaryData *b)
{
    ox_bytes r = {0, NULL};
    r.data = malloc(b->len + 1);
    if (!r.data)
        return r;
    if (b->len)
        memcpy(r.data, b->data, b->len);
    r.data[b->len] = 0;
    r.len = b->len;
    return r;
}

/* Converts an attribute; graph attributes become subgraphs of `scope`
 * owned by `owner` (may be NULL for function attribute defaults). */
static ox_status convert_attr(loader *L, const Onnx__AttributeProto *ap, ox_attr *a,
                              ox_graph *scope, ox_node *owner, int depth)
{
    memset(a, 0, sizeof *a);
    a->name = ox_strdup(nz(ap->name));
    if (ap->ref_attr_name && *ap->ref_attr_name)
        a->ref_attr_name = ox_strdup(ap->ref_attr_name);
    if (ap->doc_string && *ap->doc_string)
        a->doc_string = ox_strdup(ap->doc_string);
    int type = ap->has_type ? (int)ap->type : guess_attr_type(ap);
    a->type = (ox_attr_type)type;
    ox_status st = OX_OK;
    switch (type) {
    case OX_ATTR_FLOAT:
        a->f = ap->f;
        break;
    case OX_ATTR_INT:
        a->i = ap->i;
        break;
    case OX_ATTR_STRING:
        a->s = bytes_dup(&ap->s);
        break;
    case OX_ATTR_TENSOR:
        if (ap->t)
            st = ox_tensor_from_proto(ap->t, NULL, NULL, L->ext, &a->t, L->err);
        if (st != OX_OK && L->keep_going && st != OX_ENOMEM) {
            add_issue(L->m, "attribute '%s': %s", nz(ap->name),
                      L->err ? L->err->msg : "invalid tensor");
            st = OX_OK;   /* the attribute is left without a value */
        }
        break;
    case OX_ATTR_SPARSE_TENSOR:
        if (ap->sparse_tensor)
            st = convert_sparse(L, ap->sparse_tensor, &a->sparse);
        break;
    case OX_ATTR_TYPE_PROTO:
        a->tp = ox_type_from_proto(ap->tp, 0);
        break;
    case OX_ATTR_GRAPH:
        if (ap->g) {
            a->g = ox_graph_new(L->m, scope);
            if (!a->g)
                return ox_errorf(L->err, OX_ENOMEM, "out of memory");
            a->g->owner = owner;
            st = convert_graph(L, ap->g, a->g, false, depth + 1);
        }
        break;
    case OX_ATTR_FLOATS:
        a->n = (int)ap->n_floats;
        if (a->n) {
            a->floats = malloc(sizeof(float) * ap->n_floats);
            if (!a->floats)
                return ox_errorf(L->err, OX_ENOMEM, "out of memory");
            memcpy(a->floats, ap->floats, sizeof(float) * ap->n_floats);
        }
        break;
    case OX_ATTR_INTS:
        a->n = (int)ap->n_ints;
        if (a->n) {
            a->ints = malloc(sizeof(int64_t) * ap->n_ints);
            if (!a->ints)
                return ox_errorf(L->err, OX_ENOMEM, "out of memory");
            memcpy(a->ints, ap->ints, sizeof(int64_t) * ap->n_ints);
        }
        break;
    case OX_ATTR_STRINGS:
        a->n = (int)ap->n_strings;
        if (a->n) {
            a->strings = calloc(ap->n_strings, sizeof *a->strings);
            if (!a->strings)
                return ox_errorf(L->err, OX_ENOMEM, "out of memory");
            for (size_t i = 0; i < ap->n_strings; i++)
                a->strings[i] = bytes_dup(&ap->strings[i]);
        }
        break;
    case OX_ATTR_TENSORS:
        a->n = (int)ap->n_tensors;
        if (a->n) {
            a->tensors = calloc(ap->n_tensors, sizeof *a->tensors);
            if (!a->tensors)
                return ox_errorf(L->err, OX_ENOMEM, "out of memory");
            for (size_t i = 0; i < ap->n_tensors && st == OX_OK; i++)
                st = ox_tensor_from_proto(ap->tensors[i], NULL, NULL, L->ext,
                                          &a->tensors[i], L->err);
        }
        break;
    case OX_ATTR_SPARSE_TENSORS:
        a->n = (int)ap->n_sparse_tensors;
        if (a->n) {
            a->sparses = calloc(ap->n_sparse_tensors, sizeof *a->sparses);
            if (!a->sparses)
                return ox_errorf(L->err, OX_ENOMEM, "out of memory");
            for (size_t i = 0; i < ap->n_sparse_tensors && st == OX_OK; i++)
                st = convert_sparse(L, ap->sparse_tensors[i], &a->sparses[i]);
        }
        break;
    case OX_ATTR_TYPE_PROTOS:
        a->n = (int)ap->n_type_protos;
        if (a->n) {
            a->tps = calloc(ap->n_type_protos, sizeof *a->tps);
            if (!a->tps)
                return ox_errorf(L->err, OX_ENOMEM, "out of memory");
            for (size_t i = 0; i < ap->n_type_protos; i++)
                a->tps[i] = ox_type_from_proto(ap->type_protos[i], 0);
        }
        break;
    case OX_ATTR_GRAPHS:
        a->n = (int)ap->n_graphs;
        if (a->n) {
            a->graphs = calloc(ap->n_graphs, sizeof *a->graphs);
            if (!a->graphs)
                return ox_errorf(L->err, OX_ENOMEM, "out of memory");
            for (size_t i = 0; i < ap->n_graphs && st == OX_OK; i++) {
                a->graphs[i] = ox_graph_new(L->m, scope);
                if (!a->graphs[i])
                    return ox_errorf(L->err, OX_ENOMEM, "out of memory");
                a->graphs[i]->owner = owner;
                st = convert_graph(L, ap->graphs[i], a->graphs[i], false, depth + 1);
            }
        }
        break;
    default:
        add_issue(L->m, "attribute '%s' has unknown type %d", nz(ap->name), type);
        a->type = OX_ATTR_UNDEFINED;
        break;
    }
    return st;
}

static ox_status convert_value_info(loader *L, ox_graph *g, const Onnx__ValueInfoProto *vi,
                                    ox_value **out, bool lookup_outer)
{
    const char *name = nz(vi->name);
    ox_value *v = lookup_outer ? ox_graph_lookup(g, name) : NULL;
    if (!v)
        v = ox_graph_value(g, name);
    if (!v)
        return ox_errorf(L->err, OX_ENOMEM, "out of memory");
    if (vi->type) {
        ox_type *t = ox_type_from_proto(vi->type, 0);
        ox_type *d = t ? ox_type_clone(t) : NULL;
        if (t && d) {
            ox_type_free(v->type);
            v->type = t;
            ox_type_free(v->decl);
            v->decl = d;
        } else {
            ox_type_free(t);
        }
    }
    if (vi->doc_string && *vi->doc_string && !v->doc_string)
        v->doc_string = ox_strdup(vi->doc_string);
    *out = v;
    return OX_OK;
}

static ox_status convert_node(loader *L, const Onnx__NodeProto *np, ox_graph *g,
                              int depth)
{
    size_t nin = np->n_input, nout = np->n_output;
    ox_value **in = calloc(nin + 1, sizeof *in);
    ox_value **out = calloc(nout + 1, sizeof *out);
    if (!in || !out) {
        free(in);
        free(out);
        return ox_errorf(L->err, OX_ENOMEM, "out of memory");
    }
    const char *nname = nz(np->name);
    const char *op = nz(np->op_type);
    ox_status st = OX_OK;
    for (size_t i = 0; i < nin; i++) {
        const char *s = nz(np->input[i]);
        if (!*s)
            continue;
        in[i] = ox_graph_lookup(g, s);
        if (!in[i])
            in[i] = ox_graph_value(g, s); /* defined later (unsorted) or undefined */
    }
    for (size_t i = 0; i < nout && st == OX_OK; i++) {
        const char *s = nz(np->output[i]);
        if (!*s)
            continue;
        ox_value *v = ox_graph_find(g, s);
        bool twice = false;
        for (size_t j = 0; j < i && !twice; j++)
            twice = out[j] && strcmp(nz(np->output[j]), s) == 0;
        if (v && (v->producer || v->init || v->is_input))
            st = problem(L, "value '%s' is assigned more than once (again by node '%s' (%s))",
                         s, nname, op);
        else if (twice)
            st = problem(L, "node '%s' (%s) lists output '%s' twice", nname, op, s);
        else {
            out[i] = v ? v : ox_graph_value(g, s);
            if (!out[i])
                st = ox_errorf(L->err, OX_ENOMEM, "out of memory");
            continue;
        }
        if (st != OX_OK)
            break;
        /* keep_going: the second assignment goes to a value of its own, so
         * that the node keeps its arity and nothing else is reported. */
        char alt[300];
        for (int k = 2; k < 1000; k++) {
            snprintf(alt, sizeof alt, "%.250s (assignment %d)", s, k);
            if (!ox_graph_find(g, alt))
                break;
        }
        out[i] = ox_graph_find(g, alt) ? NULL : ox_graph_value(g, alt);
    }
    ox_node *n = NULL;
    if (st == OX_OK) {
        n = ox_node_new(g, op, nz(np->domain), nname, (int)nin, in, (int)nout, out);
        if (!n)
            st = ox_errorf(L->err, OX_ENOMEM, "out of memory");
    }
    free(in);
    free(out);
    if (st != OX_OK)
        return st;
    if (np->overload && *np->overload)
        n->overload = ox_strdup(np->overload);
    if (np->doc_string && *np->doc_string)
        n->doc_string = ox_strdup(np->doc_string);
    n->meta = convert_kvs(np->metadata_props, np->n_metadata_props, &n->n_meta);
    if (np->n_attribute) {
        n->attrs = calloc(np->n_attribute, sizeof *n->attrs);
        if (!n->attrs)
            return ox_errorf(L->err, OX_ENOMEM, "out of memory");
        for (size_t i = 0; i < np->n_attribute && st == OX_OK; i++) {
            st = convert_attr(L, np->attribute[i], &n->attrs[i], g, n, depth);
            n->n_attrs = (int)i + 1;
        }
        for (int i = 0; i < n->n_attrs && st == OX_OK; i++)
            for (int j = 0; j < i; j++)
                if (strcmp(n->attrs[i].name, n->attrs[j].name) == 0) {
                    add_issue(L->m, "node '%s' (%s): attribute '%s' given twice",
                              nname, op, n->attrs[i].name);
                    break;
                }
    }
    return st;
}

static ox_status convert_graph(loader *L, const Onnx__GraphProto *gp, ox_graph *g,
                               bool main_graph, int depth)
{
    if (depth > MAX_GRAPH_DEPTH)
        return ox_errorf(L->err, OX_EPARSE, "subgraphs nested more than %d levels deep",
                         MAX_GRAPH_DEPTH);
    ox_status st = OX_OK;
    const char *gname = gp->name && *gp->name ? gp->name : main_graph ? "main" : "subgraph";
    if (gp->name && *gp->name)
        g->name = ox_strdup(gp->name);
    if (gp->doc_string && *gp->doc_string)
        g->doc_string = ox_strdup(gp->doc_string);
    g->meta = convert_kvs(gp->metadata_props, gp->n_metadata_props, &g->n_meta);

    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *tp = gp->initializer[i];
        const ox_wire_view *view =
            main_graph && (int)i < L->n_views ? &L->views[i] : NULL;
        ox_tensor *t;
        st = ox_tensor_from_proto(tp, view, L->owner, L->ext, &t, L->err);
        if (st != OX_OK && L->keep_going && st != OX_ENOMEM) {
            /* Listed; the value stays defined and typed (as if it were a
             * graph input, for this report only) so that its readers are
             * not reported as reading an undefined or empty value. */
            add_issue(L->m, "%s: initializer '%s': %s", gname, nz(tp->name),
                      L->err ? L->err->msg : "invalid tensor");
            ox_value *v = *nz(tp->name) ? ox_graph_value(g, nz(tp->name)) : NULL;
            if (v && !v->producer && !v->init) {
                v->is_input = true;
                bool sane = tp->n_dims <= OX_MAX_RANK && ox_dtype_valid(tp->data_type);
                for (size_t k = 0; sane && k < tp->n_dims; k++)
                    sane = tp->dims[k] >= 0;
                if (sane && !v->type)
                    v->type = ox_type_new_tensor((ox_dtype)tp->data_type, (int)tp->n_dims,
                                                 tp->dims);
            }
            continue;
        }
        if (st != OX_OK)
            return st;
        const char *name = nz(tp->name);
        ox_value *v = ox_graph_find(g, name);
        if (v && v->init) {
            ox_tensor_free(t);
            st = problem(L, "%s: initializer '%s' is defined twice", gname, name);
            if (st != OX_OK)
                return st;
            continue;
        }
        if (!v)
            v = ox_graph_value(g, name);
        if (!v || ox_graph_set_initializer(g, v, t) != OX_OK) {
            ox_tensor_free(t);
            return ox_errorf(L->err, OX_ENOMEM, "out of memory");
        }
        if (main_graph)
            item_done(L);
    }
    if (gp->n_sparse_initializer) {
        g->sparse_inits = calloc(gp->n_sparse_initializer, sizeof *g->sparse_inits);
        if (!g->sparse_inits)
            return ox_errorf(L->err, OX_ENOMEM, "out of memory");
        for (size_t i = 0; i < gp->n_sparse_initializer; i++) {
            st = convert_sparse(L, gp->sparse_initializer[i], &g->sparse_inits[i]);
            if (st != OX_OK)
                return st;
            g->n_sparse = (int)i + 1;
            const char *nm = g->sparse_inits[i]->values ? g->sparse_inits[i]->values->name : NULL;
            /* A sparse initializer defines a value in this scope. */
            if (nm && *nm && !ox_graph_value(g, nm))
                return ox_errorf(L->err, OX_ENOMEM, "out of memory");
        }
    }
    for (size_t i = 0; i < gp->n_input; i++) {
        ox_value *v;
        const char *name = nz(gp->input[i]->name);
        if (!*name) {
            st = problem(L, "%s: graph input %zu has an empty name", gname, i);
            if (st != OX_OK)
                return st;
            continue;
        }
        if (ox_graph_find(g, name) && ox_graph_find(g, name)->is_input) {
            st = problem(L, "%s: graph input '%s' is listed twice", gname, name);
            if (st != OX_OK)
                return st;
            continue;
        }
        scan_type(L, gp->input[i]->type, gname, "input", name, main_graph, 0);
        st = convert_value_info(L, g, gp->input[i], &v, false);
        if (st != OX_OK)
            return st;
        if (ox_graph_add_input(g, v) != OX_OK)
            return ox_errorf(L->err, OX_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < gp->n_node; i++) {
        st = convert_node(L, gp->node[i], g, depth);
        if (st != OX_OK)
            return st;
        if (main_graph)
            item_done(L);
    }
    for (size_t i = 0; i < gp->n_value_info; i++) {
        ox_value *v;
        const char *name = nz(gp->value_info[i]->name);
        if (!*name) {
            /* Describes nothing: harmless, so never a load error. */
            add_issue(L->m, "%s: value_info %zu has an empty name", gname, i);
            continue;
        }
        scan_type(L, gp->value_info[i]->type, gname, "value_info", name, false, 0);
        st = convert_value_info(L, g, gp->value_info[i], &v, true);
        if (st != OX_OK)
            return st;
        v->has_value_info = true;
    }
    for (size_t i = 0; i < gp->n_output; i++) {
        ox_value *v;
        const char *name = nz(gp->output[i]->name);
        if (!*name) {
            st = problem(L, "%s: graph output %zu has an empty name", gname, i);
            if (st != OX_OK)
                return st;
            continue;
        }
        scan_type(L, gp->output[i]->type, gname, "output", name, main_graph, 0);
        st = convert_value_info(L, g, gp->output[i], &v, true);
        if (st != OX_OK)
            return st;
        if (ox_graph_add_output(g, v) != OX_OK)
            return ox_errorf(L->err, OX_ENOMEM, "out of memory");
    }
    if (gp->n_quantization_annotation) {
        /* Kept verbatim: packed as a sequence of length-prefixed messages. */
        size_t total = 0;
        for (size_t i = 0; i < gp->n_quantization_annotation; i++)
            total += protobuf_c_message_get_packed_size(
                         &gp->quantization_annotation[i]->base) + 10;
        uint8_t *buf = malloc(total);
        if (!buf)
            return ox_errorf(L->err, OX_ENOMEM, "out of memory");
        size_t off = 0;
        for (size_t i = 0; i < gp->n_quantization_annotation; i++) {
            size_t n = protobuf_c_message_get_packed_size(
                &gp->quantization_annotation[i]->base);
            size_t v = n;
            do {
                buf[off++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
                v >>= 7;
            } while (v);
            off += protobuf_c_message_pack(&gp->quantization_annotation[i]->base,
                                           buf + off);
        }
        g->quant_annotations = buf;
        g->quant_annotations_len = off;
    }
    return OX_OK;
}

static ox_status convert_function(loader *L, const Onnx__FunctionProto *fp,
                                  ox_function *f)
{
    f->name = ox_strdup(nz(fp->name));
    f->domain = ox_strdup(nz(fp->domain));
    if (fp->overload && *fp->overload)
        f->overload = ox_strdup(fp->overload);
    if (fp->doc_string && *fp->doc_string)
        f->doc_string = ox_strdup(fp->doc_string);
    f->meta = convert_kvs(fp->metadata_props, fp->n_metadata_props, &f->n_meta);
    if (fp->n_attribute) {
        f->attr_names = calloc(fp->n_attribute, sizeof(char *));
        if (!f->attr_names)
            return ox_errorf(L->err, OX_ENOMEM, "out of memory");
        for (size_t i = 0; i < fp->n_attribute; i++)
            f->attr_names[i] = ox_strdup(nz(fp->attribute[i]));
        f->n_attr_names = (int)fp->n_attribute;
    }
    if (fp->n_opset_import) {
        f->opsets = calloc(fp->n_opset_import, sizeof *f->opsets);
        if (!f->opsets)
            return ox_errorf(L->err, OX_ENOMEM, "out of memory");
        for (size_t i = 0; i < fp->n_opset_import; i++) {
            f->opsets[i].domain = ox_strdup(nz(fp->opset_import[i]->domain));
            f->opsets[i].version = fp->opset_import[i]->version;
        }
        f->n_opsets = (int)fp->n_opset_import;
    }
    f->body = ox_graph_new(L->m, NULL);
    if (!f->body)
        return ox_errorf(L->err, OX_ENOMEM, "out of memory");
    ox_status st = OX_OK;
    if (fp->n_attribute_proto) {
        f->attr_defaults = calloc(fp->n_attribute_proto, sizeof *f->attr_defaults);
        if (!f->attr_defaults)
            return ox_errorf(L->err, OX_ENOMEM, "out of memory");
        for (size_t i = 0; i < fp->n_attribute_proto && st == OX_OK; i++) {
            st = convert_attr(L, fp->attribute_proto[i], &f->attr_defaults[i], f->body,
                              NULL, 1);
            f->n_attr_defaults = (int)i + 1;
        }
    }
    for (size_t i = 0; i < fp->n_input && st == OX_OK; i++) {
        if (!*nz(fp->input[i])) {
            st = problem(L, "function %s: input %zu has an empty name", f->name, i);
            continue;
        }
        ox_value *v = ox_graph_value(f->body, nz(fp->input[i]));
        if (!v || ox_graph_add_input(f->body, v) != OX_OK)
            return ox_errorf(L->err, OX_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < fp->n_node && st == OX_OK; i++)
        st = convert_node(L, fp->node[i], f->body, 1);
    for (size_t i = 0; i < fp->n_value_info && st == OX_OK; i++) {
        ox_value *v;
        if (!*nz(fp->value_info[i]->name))
            continue;
        st = convert_value_info(L, f->body, fp->value_info[i], &v, false);
        if (st == OX_OK)
            v->has_value_info = true;
    }
    for (size_t i = 0; i < fp->n_output && st == OX_OK; i++) {
        if (!*nz(fp->output[i])) {
            st = problem(L, "function %s: output %zu has an empty name", f->name, i);
            continue;
        }
        ox_value *v = ox_graph_value(f->body, nz(fp->output[i]));
        if (!v || ox_graph_add_output(f->body, v) != OX_OK)
            return ox_errorf(L->err, OX_ENOMEM, "out of memory");
    }
    return st;
}

static ox_status pack_blob(const ProtobufCMessage *msg, ox_blob *b, ox_error *err)
{
    b->len = protobuf_c_message_get_packed_size(msg);
    b->data = malloc(b->len ? b->len : 1);
    if (!b->data)
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    protobuf_c_message_pack(msg, b->data);
    return OX_OK;
}

static ox_status convert_model(loader *L, const Onnx__ModelProto *mp)
{
    ox_model *m = L->m;
    ox_status st;
    m->ir_version = mp->has_ir_version ? mp->ir_version : 0;
    m->producer_name = ox_strdup(nz(mp->producer_name));
    m->producer_version = ox_strdup(nz(mp->producer_version));
    m->domain = ox_strdup(nz(mp->domain));
    m->doc_string = ox_strdup(nz(mp->doc_string));
    m->model_version = mp->has_model_version ? mp->model_version : 0;
    for (size_t i = 0; i < mp->n_opset_import; i++) {
        const char *d = nz(mp->opset_import[i]->domain);
        if (ox_model_opset(m, d) >= 0)
            add_issue(m, "opset_import lists domain '%s' twice", *d ? d : "ai.onnx");
        ox_model_set_opset(m, d, mp->opset_import[i]->has_version
                                     ? mp->opset_import[i]->version : 0);
    }
    m->meta = convert_kvs(mp->metadata_props, mp->n_metadata_props, &m->n_meta);
    if (!mp->graph)
        return ox_errorf(L->err, OX_EMODEL, "the model has no graph");
    if (!m->graph) {
        m->graph = ox_graph_new(m, NULL);
        if (!m->graph)
            return ox_errorf(L->err, OX_ENOMEM, "out of memory");
    }
    st = convert_graph(L, mp->graph, m->graph, true, 0);
    if (st != OX_OK)
        return st;
    if (mp->n_functions) {
        m->functions = calloc(mp->n_functions, sizeof *m->functions);
        if (!m->functions)
            return ox_errorf(L->err, OX_ENOMEM, "out of memory");
        for (size_t i = 0; i < mp->n_functions; i++) {
            m->n_functions = (int)i + 1;
            st = convert_function(L, mp->functions[i], &m->functions[i]);
            if (st != OX_OK)
                return st;
        }
    }
    if (mp->n_training_info) {
        m->training_info = calloc(mp->n_training_info, sizeof(ox_blob));
        if (!m->training_info)
            return ox_errorf(L->err, OX_ENOMEM, "out of memory");
        for (size_t i = 0; i < mp->n_training_info; i++) {
            m->n_training_info = (int)i + 1;
            st = pack_blob(&mp->training_info[i]->base, &m->training_info[i], L->err);
            if (st != OX_OK)
                return st;
        }
    }
    if (mp->n_configuration) {
        m->configuration = calloc(mp->n_configuration, sizeof(ox_blob));
        if (!m->configuration)
            return ox_errorf(L->err, OX_ENOMEM, "out of memory");
        for (size_t i = 0; i < mp->n_configuration; i++) {
            m->n_configuration = (int)i + 1;
            st = pack_blob(&mp->configuration[i]->base, &m->configuration[i], L->err);
            if (st != OX_OK)
                return st;
        }
    }
    ox_graph_relink(m->graph);
    return OX_OK;
}

static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return ox_strdup(".");
    if (slash == path)
        return ox_strdup("/");
    size_t n = (size_t)(slash - path);
    char *d = malloc(n + 1);
    if (!d)
        return NULL;
    memcpy(d, path, n);
    d[n] = 0;
    return d;
}

/* Shared by file and memory loading: buf is kept alive by the model.
 * Progress (opts may be NULL): the wire walks and protobuf-c's unpack are
 * the first 20 %, converting the main graph's initializers and nodes the
 * rest; the last call reports 1.0. */
static ox_status load_from_buffer(ox_buffer *buf, const char *dir, const ox_load_opts *opts,
                                  ox_model **out, ox_error *err)
{
    *out = NULL;
    const uint8_t *data = buf->data;
    size_t len = buf->size;
    loader L = {.owner = buf, .err = err, .opts = opts, .last = -1.0};
    report(&L, 0.0);
    if (len == 0)
        return ox_errorf(err, OX_EPARSE, "empty file");
    const char *bad = ox_wire_check(&onnx__model_proto__descriptor, data, len, MAX_MSG_DEPTH);
    if (bad)
        return ox_errorf(err, OX_EPARSE, "%s", bad);
    report(&L, 0.05);
    ox_wire_strip s;
    if (!ox_wire_strip_model(data, len, VIEW_THRESHOLD, &s))
        return ox_errorf(err, OX_EPARSE,
                         "not a valid ONNX model (malformed protobuf wire format)");
    report(&L, 0.10);
    Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, s.len, s.data);
    if (!mp) {
        ox_wire_strip_free(&s);
        return ox_errorf(err, OX_EPARSE, "not a valid ONNX model (protobuf decoding failed)");
    }
    L.base = 0.20;
    report(&L, L.base);
    if (mp->graph)
        L.n_items = mp->graph->n_initializer + mp->graph->n_node;
    ox_model *m = ox_model_new();
    L.m = m;
    L.views = s.views;
    L.n_views = s.n_views;
    L.keep_going = opts && opts->keep_going;
    L.ext = ox_extctx_new(dir);
    ox_status st;
    if (!m || !L.ext) {
        st = ox_errorf(err, OX_ENOMEM, "out of memory");
    } else {
        m->dir = ox_strdup(dir ? dir : ".");
        m->file_buf = ox_buffer_retain(buf);
        m->file_size = len;
        st = convert_model(&L, mp);
    }
    onnx__model_proto__free_unpacked(mp, NULL);
    ox_wire_strip_free(&s);
    if (st == OX_OK)
        m->ext_files = ox_extctx_take_files(L.ext, &m->n_ext_files);
    ox_extctx_free(L.ext); /* tensor views keep their mappings alive */
    if (st != OX_OK) {
        ox_model_free(m);
        return st;
    }
    if (m->ir_version <= 0)
        add_issue(m, "ir_version is missing");
    if (m->n_opsets == 0 && m->ir_version >= 3)
        add_issue(m, "the model imports no opset");
    report(&L, 1.0);
    *out = m;
    return OX_OK;
}

int ox_open_regular(const char *path, ox_error *err)
{
    /* O_NONBLOCK: the open itself must not wait for a FIFO's writer. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        ox_errorf(err, OX_EIO, "cannot open: %s", strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        ox_errorf(err, OX_EIO, "cannot stat: %s", strerror(e));
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        ox_errorf(err, OX_EIO, "not a regular file (%s)",
                  S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISDIR(st.st_mode) ? "a folder"
                  : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device" : "a special file");
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    return fd;
}

ox_status ox_load(const char *path, const ox_load_opts *opts, ox_model **out,
                  ox_error *err)
{
    *out = NULL;
    ox_buffer *buf;
    ox_status st = ox_map_file(path, &buf, err);
    if (st != OX_OK)
        return st;
    char *dir = dir_of(path);
    st = load_from_buffer(buf, dir, opts, out, err);
    ox_buffer_release(buf);
    free(dir);
    if (st == OX_OK)
        (*out)->path = ox_strdup(path);
    return st;
}

ox_status ox_load_buffer(const void *data, size_t len, const char *base_dir,
                         ox_model **out, ox_error *err)
{
    return ox_load_buffer_opts(data, len, base_dir, NULL, out, err);
}

ox_status ox_load_buffer_opts(const void *data, size_t len, const char *base_dir,
                              const ox_load_opts *opts, ox_model **out, ox_error *err)
{
    *out = NULL;
    ox_buffer *buf = ox_buffer_new(len);
    if (!buf)
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    if (len)
        memcpy(buf->data, data, len);
    ox_status st = load_from_buffer(buf, base_dir, opts, out, err);
    ox_buffer_release(buf);
    return st;
}

ox_status ox_tensor_load_pb(const char *path, ox_tensor **out, ox_error *err)
{
    *out = NULL;
    ox_buffer *buf;
    ox_status st = ox_map_file(path, &buf, err);
    if (st != OX_OK)
        return st;
    const char *bad = ox_wire_check(&onnx__tensor_proto__descriptor, buf->data, buf->size, 8);
    if (bad) {
        ox_buffer_release(buf);
        return ox_errorf(err, OX_EPARSE, "malformed TensorProto: %s", bad);
    }
    Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, buf->size, buf->data);
    ox_buffer_release(buf);
    if (!tp)
        return ox_errorf(err, OX_EPARSE, "not a valid TensorProto");
    char *dir = dir_of(path);
    ox_extctx *ext = ox_extctx_new(dir);
    st = ox_tensor_from_proto(tp, NULL, NULL, ext, out, err);
    ox_extctx_free(ext);
    free(dir);
    onnx__tensor_proto__free_unpacked(tp, NULL);
    return st;
}

uint64_t ox_model_external_bytes(const ox_model *m)
{
    uint64_t n = 0;
    for (int i = 0; m && i < m->n_ext_files; i++)
        if (m->ext_files[i])
            n += m->ext_files[i]->size;
    return n;
}
