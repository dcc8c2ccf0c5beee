/* Attributes, types and deep copies: node attribute get/set, ox_type
 * helpers, and cloning of graphs and models (tensor bytes shared by
 * reference count, node ids kept so that diffs can match nodes). */
#include "ir/ir_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- types -------------------------------------------------------------- */

ox_type *ox_type_new_tensor(ox_dtype elem, int rank, const int64_t *dims)
{
    ox_type *t = ox__ir_calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->kind = OX_TYPE_TENSOR;
    t->elem = elem;
    if (rank < 0 || rank > 4096)
        return t; /* shape unknown */
    t->has_shape = true;
    t->rank = rank;
    t->dims = ox__ir_xcalloc((size_t)rank, sizeof(ox_dim));
    if (!t->dims) {
        free(t);
        return NULL;
    }
    for (int i = 0; i < rank; i++)
        t->dims[i].value = dims && dims[i] >= 0 ? dims[i] : -1;
    return t;
}

ox_type *ox_type_clone(const ox_type *s)
{
    if (!s)
        return NULL;
    ox_type *t = ox__ir_calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->kind = s->kind;
    t->elem = s->elem;
    t->has_shape = s->has_shape;
    t->rank = s->rank;
    t->denotation = ox__ir_strdup(s->denotation);
    if (s->dims && s->rank > 0) {
        t->dims = ox__ir_xcalloc((size_t)s->rank, sizeof(ox_dim));
        if (!t->dims) {
            ox_type_free(t);
            return NULL;
        }
        for (int i = 0; i < s->rank; i++) {
            t->dims[i].value = s->dims[i].value;
            t->dims[i].declared_neg = s->dims[i].declared_neg;
            t->dims[i].param = ox__ir_strdup(s->dims[i].param);
            t->dims[i].denotation = ox__ir_strdup(s->dims[i].denotation);
        }
    } else if (s->rank > 0) {
        t->rank = 0; /* inconsistent source: no dims array */
        t->has_shape = false;
    }
    if (s->inner && !(t->inner = ox_type_clone(s->inner))) {
        ox_type_free(t);
        return NULL;
    }
    return t;
}

void ox_type_free(ox_type *t)
{
    if (!t)
        return;
    if (t->dims)
        for (int i = 0; i < t->rank; i++) {
            free(t->dims[i].param);
            free(t->dims[i].denotation);
        }
    free(t->dims);
    ox_type_free(t->inner);
    free(t->denotation);
    free(t);
}

bool ox_type_is_static(const ox_type *t)
{
    if (!t || t->kind != OX_TYPE_TENSOR || !t->has_shape)
        return false;
    if (t->rank > 0 && !t->dims)
        return false;
    for (int i = 0; i < t->rank; i++)
        if (t->dims[i].value < 0)
            return false;
    return true;
}

/* Appends printf output at *pos, never overflowing buf. */
static void app(char *buf, size_t len, size_t *pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void app(char *buf, size_t len, size_t *pos, const char *fmt, ...)
{
    if (*pos >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(buf + *pos, len - *pos, fmt, ap);
    va_end(ap);
    if (w > 0)
        *pos += (size_t)w;
    if (*pos >= len)
        *pos = len - 1;
}

static void type_str(const ox_type *t, char *buf, size_t len, size_t *pos, int depth)
{
    if (!t || depth > 32) {
        app(buf, len, pos, "?");
        return;
    }
    switch (t->kind) {
    case OX_TYPE_TENSOR:
    case OX_TYPE_SPARSE_TENSOR:
        if (t->kind == OX_TYPE_SPARSE_TENSOR)
            app(buf, len, pos, "sparse(");
        app(buf, len, pos, "%s", t->elem == OX_DT_UNDEFINED ? "?" : ox_dtype_name(t->elem));
        if (t->has_shape) {
            app(buf, len, pos, "[");
            for (int i = 0; i < t->rank && t->dims; i++) {
                const ox_dim *d = &t->dims[i];
                const char *sep = i ? "," : "";
                if (d->value >= 0)
                    app(buf, len, pos, "%s%lld", sep, (long long)d->value);
                else if (d->param && *d->param)
                    app(buf, len, pos, "%s%s", sep, d->param);
                else
                    app(buf, len, pos, "%s?", sep);
            }
            app(buf, len, pos, "]");
        }
        if (t->kind == OX_TYPE_SPARSE_TENSOR)
            app(buf, len, pos, ")");
        break;
    case OX_TYPE_SEQUENCE:
        app(buf, len, pos, "seq(");
        type_str(t->inner, buf, len, pos, depth + 1);
        app(buf, len, pos, ")");
        break;
    case OX_TYPE_OPTIONAL:
        app(buf, len, pos, "optional(");
        type_str(t->inner, buf, len, pos, depth + 1);
        app(buf, len, pos, ")");
        break;
    case OX_TYPE_MAP:
        app(buf, len, pos, "map(%s,", ox_dtype_name(t->elem));
        type_str(t->inner, buf, len, pos, depth + 1);
        app(buf, len, pos, ")");
        break;
    default:
        app(buf, len, pos, "?");
        break;
    }
}

const char *ox_type_str(const ox_type *t, char *buf, size_t len)
{
    if (!buf || !len)
        return "";
    buf[0] = '\0';
    size_t pos = 0;
    type_str(t, buf, len, &pos, 0);
    return buf;
}

int ox_type_declared_neg(const ox_type *t, int *axis, int64_t *value)
{
    for (int depth = 0; t && t->inner && depth < 64; depth++)
        t = t->inner;   /* sequence, optional, map: the tensor inside */
    int n = 0;
    for (int i = 0; t && t->has_shape && t->dims && i < t->rank; i++) {
        const ox_dim *d = &t->dims[i];
        if (d->declared_neg >= 0 || d->value >= 0 || (d->param && *d->param))
            continue;
        if (n++ == 0) {
            if (axis)
                *axis = i;
            if (value)
                *value = d->declared_neg;
        }
    }
    return n;
}

const char *ox_type_neg_note(const ox_type *t, char *buf, size_t len)
{
    if (!buf || !len)
        return "";
    buf[0] = 0;
    int axis = 0;
    int64_t v = 0;
    int n = ox_type_declared_neg(t, &axis, &v);
    if (n == 1) {
        snprintf(buf, len, "(axis %d declared %lld: unknown; see `check`)", axis, (long long)v);
    } else if (n > 1) {
        size_t pos = 0;
        app(buf, len, &pos, "(axes");
        for (int depth = 0; t->inner && depth < 64; depth++)
            t = t->inner;
        for (int i = 0, k = 0; i < t->rank; i++)
            if (t->dims[i].declared_neg < 0 && t->dims[i].value < 0 &&
                !(t->dims[i].param && *t->dims[i].param))
                app(buf, len, &pos, "%s %d", k++ ? "," : "", i);
        app(buf, len, &pos, " declared negative: unknown; see `check`)");
    }
    return buf;
}

static bool str_eq(const char *a, const char *b)
{
    if (!a || !b)
        return (!a || !*a) && (!b || !*b);
    return strcmp(a, b) == 0;
}

bool ox_type_equal(const ox_type *a, const ox_type *b)
{
    if (a == b)
        return true;
    if (!a || !b)
        return false;
    if (a->kind != b->kind || a->elem != b->elem || a->has_shape != b->has_shape)
        return false;
    if (a->has_shape) {
        if (a->rank != b->rank)
            return false;
        for (int i = 0; i < a->rank; i++) {
            const ox_dim *x = a->dims ? &a->dims[i] : NULL, *y = b->dims ? &b->dims[i] : NULL;
            if (!x || !y)
                return x == y;
            if (x->value != y->value || !str_eq(x->param, y->param))
                return false;
        }
    }
    if (!!a->inner != !!b->inner)
        return false;
    return !a->inner || ox_type_equal(a->inner, b->inner);
}

/* ---- attributes ----------------------------------------------------------- */

static void sparse_free(ox_sparse *s)
{
    if (!s)
        return;
    ox_tensor_free(s->values);
    ox_tensor_free(s->indices);
    free(s);
}

static ox_sparse *sparse_copy(const ox_sparse *s)
{
    if (!s)
        return NULL;
    ox_sparse *d = ox__ir_calloc(1, sizeof *d);
    if (!d)
        return NULL;
    *d = *s;
    d->values = ox_tensor_share(s->values);
    d->indices = ox_tensor_share(s->indices);
    if ((s->values && !d->values) || (s->indices && !d->indices)) {
        sparse_free(d);
        return NULL;
    }
    return d;
}

void ox__attr_free(ox_attr *a, bool detach, bool unreg)
{
    if (!a)
        return;
    free(a->name);
    free(a->ref_attr_name);
    free(a->doc_string);
    free(a->s.data);
    ox_tensor_free(a->t);
    ox__graph_destroy(a->g, detach, unreg);
    sparse_free(a->sparse);
    ox_type_free(a->tp);
    free(a->floats);
    free(a->ints);
    if (a->strings)
        for (int i = 0; i < a->n; i++)
            free(a->strings[i].data);
    free(a->strings);
    if (a->tensors)
        for (int i = 0; i < a->n; i++)
            ox_tensor_free(a->tensors[i]);
    free(a->tensors);
    if (a->graphs)
        for (int i = 0; i < a->n; i++)
            ox__graph_destroy(a->graphs[i], detach, unreg);
    free(a->graphs);
    if (a->sparses)
        for (int i = 0; i < a->n; i++)
            sparse_free(a->sparses[i]);
    free(a->sparses);
    if (a->tps)
        for (int i = 0; i < a->n; i++)
            ox_type_free(a->tps[i]);
    free(a->tps);
    memset(a, 0, sizeof *a);
}

void ox_attr_free_contents(ox_attr *a)
{
    ox__attr_free(a, true, true);
}

static bool bytes_copy(ox_bytes *d, const ox_bytes *s)
{
    d->len = s->len;
    d->data = ox__ir_malloc(s->len + 1);
    if (!d->data)
        return false;
    if (s->len && s->data)
        memcpy(d->data, s->data, s->len);
    d->data[s->len] = '\0';
    return true;
}

static void *memdup(const void *p, size_t n)
{
    if (!p || !n)
        return NULL;
    void *d = ox__ir_malloc(n);
    if (d)
        memcpy(d, p, n);
    return d;
}

bool ox__attr_copy(ox_attr *dst, const ox_attr *src, ox_graph *parent_scope,
                   ox_node *owner, bool keep_ids)
{
    memset(dst, 0, sizeof *dst);
    if (!src)
        return false;
    ox_model *m = parent_scope ? parent_scope->model : NULL;
    dst->type = src->type;
    dst->f = src->f;
    dst->i = src->i;
    dst->n = src->n > 0 ? src->n : 0;
    bool ok = true;
    if (src->name && !(dst->name = ox__ir_strdup(src->name)))
        ok = false;
    if (src->ref_attr_name && !(dst->ref_attr_name = ox__ir_strdup(src->ref_attr_name)))
        ok = false;
    if (src->doc_string && !(dst->doc_string = ox__ir_strdup(src->doc_string)))
        ok = false;
    if (src->s.data && !bytes_copy(&dst->s, &src->s))
        ok = false;
    if (src->t && !(dst->t = ox_tensor_share(src->t)))
        ok = false;
    if (src->g && !(dst->g = ox__graph_clone(src->g, m, parent_scope, owner, keep_ids)))
        ok = false;
    if (src->sparse && !(dst->sparse = sparse_copy(src->sparse)))
        ok = false;
    if (src->tp && !(dst->tp = ox_type_clone(src->tp)))
        ok = false;
    size_t n = (size_t)dst->n;
    if (src->floats && n && !(dst->floats = memdup(src->floats, n * sizeof(float))))
        ok = false;
    if (src->ints && n && !(dst->ints = memdup(src->ints, n * sizeof(int64_t))))
        ok = false;
    if (src->strings && n) {
        if (!(dst->strings = ox__ir_xcalloc(n, sizeof(ox_bytes))))
            ok = false;
        for (size_t i = 0; ok && i < n; i++)
            if (!bytes_copy(&dst->strings[i], &src->strings[i]))
                ok = false;
    }
    if (src->tensors && n) {
        if (!(dst->tensors = ox__ir_xcalloc(n, sizeof(ox_tensor *))))
            ok = false;
        for (size_t i = 0; ok && i < n; i++)
            if (src->tensors[i] && !(dst->tensors[i] = ox_tensor_share(src->tensors[i])))
                ok = false;
    }
    if (src->graphs && n) {
        if (!(dst->graphs = ox__ir_xcalloc(n, sizeof(ox_graph *))))
            ok = false;
        for (size_t i = 0; ok && i < n; i++)
            if (src->graphs[i] &&
                !(dst->graphs[i] = ox__graph_clone(src->graphs[i], m, parent_scope, owner, keep_ids)))
                ok = false;
    }
    if (src->sparses && n) {
        if (!(dst->sparses = ox__ir_xcalloc(n, sizeof(ox_sparse *))))
            ok = false;
        for (size_t i = 0; ok && i < n; i++)
            if (src->sparses[i] && !(dst->sparses[i] = sparse_copy(src->sparses[i])))
                ok = false;
    }
    if (src->tps && n) {
        if (!(dst->tps = ox__ir_xcalloc(n, sizeof(ox_type *))))
            ok = false;
        for (size_t i = 0; ok && i < n; i++)
            if (src->tps[i] && !(dst->tps[i] = ox_type_clone(src->tps[i])))
                ok = false;
    }
    if (!ok)
        ox__attr_free(dst, true, true);
    return ok;
}

void ox_attr_copy(ox_attr *dst, const ox_attr *src, ox_graph *parent_scope)
{
    if (dst)
        ox__attr_copy(dst, src, parent_scope, NULL, false);
}

ox_attr *ox_node_attr(const ox_node *n, const char *name)
{
    if (!n || !name)
        return NULL;
    for (int i = 0; i < n->n_attrs; i++)
        if (n->attrs[i].name && strcmp(n->attrs[i].name, name) == 0)
            return &n->attrs[i];
    return NULL;
}

int64_t ox_node_attr_i(const ox_node *n, const char *name, int64_t dflt)
{
    ox_attr *a = ox_node_attr(n, name);
    return a && a->type == OX_ATTR_INT ? a->i : dflt;
}

float ox_node_attr_f(const ox_node *n, const char *name, float dflt)
{
    ox_attr *a = ox_node_attr(n, name);
    if (a && a->type == OX_ATTR_FLOAT)
        return a->f;
    /* Some exporters write integral floats as ints; accept them. */
    if (a && a->type == OX_ATTR_INT)
        return (float)a->i;
    return dflt;
}

const char *ox_node_attr_s(const ox_node *n, const char *name, const char *dflt)
{
    ox_attr *a = ox_node_attr(n, name);
    return a && a->type == OX_ATTR_STRING && a->s.data ? a->s.data : dflt;
}

int ox_node_attr_ints(const ox_node *n, const char *name, const int64_t **out)
{
    ox_attr *a = ox_node_attr(n, name);
    if (!a || a->type != OX_ATTR_INTS)
        return -1;
    if (out)
        *out = a->ints;
    return a->n;
}

/* A failed attribute edit: the node lacks what the caller asked for. */
static ox_attr *attr_oom(ox_node *n)
{
    ox__oom(n->graph);
    return NULL;
}

/* Installs *a (already owned) under its name, replacing an older one. */
static ox_attr *install_attr(ox_node *n, ox_attr *a)
{
    ox_attr *old = ox_node_attr(n, a->name);
    if (old) {
        ox__attr_free(old, true, true);
        *old = *a;
        return old;
    }
    ox_attr *p = ox__ir_realloc(n->attrs, (size_t)(n->n_attrs + 1) * sizeof *p);
    if (!p) {
        ox__attr_free(a, true, true);
        return attr_oom(n);
    }
    n->attrs = p;
    p[n->n_attrs] = *a;
    return &p[n->n_attrs++];
}

ox_attr *ox_node_set_attr(ox_node *n, const ox_attr *a)
{
    if (!n || !a || !a->name)
        return NULL;
    /* Subgraph copies are built with n as owner, so their reads of outer
     * values are recorded as implicit uses by n while they are built. */
    ox_attr c;
    if (!ox__attr_copy(&c, a, n->graph, n, false))
        return attr_oom(n);
    return install_attr(n, &c);
}

static ox_attr *new_named(ox_attr *a, const char *name, ox_attr_type type)
{
    memset(a, 0, sizeof *a);
    a->type = type;
    a->name = ox__ir_strdup(name);
    return a->name ? a : NULL;
}

ox_attr *ox_node_set_attr_i(ox_node *n, const char *name, int64_t v)
{
    ox_attr a;
    if (!n || !name)
        return NULL;
    if (!new_named(&a, name, OX_ATTR_INT))
        return attr_oom(n);
    a.i = v;
    return install_attr(n, &a);
}

ox_attr *ox_node_set_attr_f(ox_node *n, const char *name, float v)
{
    ox_attr a;
    if (!n || !name)
        return NULL;
    if (!new_named(&a, name, OX_ATTR_FLOAT))
        return attr_oom(n);
    a.f = v;
    return install_attr(n, &a);
}

ox_attr *ox_node_set_attr_s(ox_node *n, const char *name, const char *s)
{
    ox_attr a;
    if (!n || !name)
        return NULL;
    if (!new_named(&a, name, OX_ATTR_STRING))
        return attr_oom(n);
    ox_bytes b = {s ? strlen(s) : 0, (char *)(s ? s : "")};
    if (!bytes_copy(&a.s, &b)) {
        free(a.name);
        return attr_oom(n);
    }
    return install_attr(n, &a);
}

ox_attr *ox_node_set_attr_ints(ox_node *n, const char *name, int count, const int64_t *v)
{
    ox_attr a;
    if (!n || !name || count < 0 || (count && !v))
        return NULL;
    if (!new_named(&a, name, OX_ATTR_INTS))
        return attr_oom(n);
    a.n = count;
    a.ints = ox__ir_xcalloc((size_t)count, sizeof(int64_t));
    if (!a.ints) {
        free(a.name);
        return attr_oom(n);
    }
    if (count)
        memcpy(a.ints, v, (size_t)count * sizeof(int64_t));
    return install_attr(n, &a);
}

ox_attr *ox_node_set_attr_t(ox_node *n, const char *name, ox_tensor *t)
{
    ox_attr a;
    if (!n || !name) {
        ox_tensor_free(t);
        return NULL;
    }
    if (!new_named(&a, name, OX_ATTR_TENSOR)) {
        ox_tensor_free(t);
        return attr_oom(n);
    }
    a.t = t;
    return install_attr(n, &a);
}

void ox_node_remove_attr(ox_node *n, const char *name)
{
    ox_attr *a = ox_node_attr(n, name);
    if (!a)
        return;
    int i = (int)(a - n->attrs);
    ox__attr_free(a, true, true);
    memmove(&n->attrs[i], &n->attrs[i + 1], (size_t)(n->n_attrs - i - 1) * sizeof(ox_attr));
    n->n_attrs--;
}

/* ---- cloning ------------------------------------------------------------- */

static ox_kv *kv_copy(const ox_kv *s, int n)
{
    if (!s || n <= 0)
        return NULL;
    ox_kv *d = ox__ir_xcalloc((size_t)n, sizeof *d);
    if (!d)
        return NULL;
    for (int i = 0; i < n; i++) {
        d[i].key = ox__ir_strdup(s[i].key);
        d[i].value = ox__ir_strdup(s[i].value);
    }
    return d;
}

/* Maps a source value to its counterpart seen from the clone graph c of
 * source graph s: walk both parent chains in step up to v's scope. */
static ox_value *map_value(ox_graph *c, const ox_graph *s, const ox_value *v)
{
    if (!v)
        return NULL;
    ox_graph *cg = c;
    const ox_graph *sg = s;
    while (sg && cg && sg != v->graph) {
        sg = sg->parent;
        cg = cg->parent;
    }
    ox_value *r = NULL;
    if (sg && cg)
        r = ox_graph_find(cg, v->name);
    if (!r)
        r = ox_graph_lookup(c, v->name);
    if (!r) /* dangling reference in the source: keep it as an unproduced value */
        r = ox_graph_value(c, v->name);
    return r;
}

ox_graph *ox__graph_clone(const ox_graph *src, ox_model *m, ox_graph *parent,
                          ox_node *owner, bool keep_ids)
{
    if (!src)
        return NULL;
    ox_graph *g = ox_graph_new(m, parent);
    if (!g)
        return NULL;
    g->owner = owner;
    g->name = ox__ir_strdup(src->name);
    g->doc_string = ox__ir_strdup(src->doc_string);
    g->meta = kv_copy(src->meta, src->n_meta);
    g->n_meta = g->meta ? src->n_meta : 0;
    if (src->quant_annotations && src->quant_annotations_len) {
        g->quant_annotations = memdup(src->quant_annotations, src->quant_annotations_len);
        if (g->quant_annotations)
            g->quant_annotations_len = src->quant_annotations_len;
    }
    if (src->n_sparse > 0) {
        g->sparse_inits = ox__ir_xcalloc((size_t)src->n_sparse, sizeof(ox_sparse *));
        g->sparse_names = ox__ir_xcalloc((size_t)src->n_sparse, sizeof(char *));
        if (!g->sparse_inits || !g->sparse_names)
            goto fail;
        g->n_sparse = src->n_sparse;
        for (int i = 0; i < src->n_sparse; i++) {
            g->sparse_inits[i] = sparse_copy(src->sparse_inits ? src->sparse_inits[i] : NULL);
            g->sparse_names[i] = ox__ir_strdup(src->sparse_names ? src->sparse_names[i] : NULL);
        }
    }
    for (int i = 0; i < src->n_values; i++) {
        const ox_value *sv = src->values[i];
        ox_value *v = ox__value_new(g, sv->name);
        if (!v)
            goto fail;
        v->is_input = sv->is_input;
        v->is_output = sv->is_output;
        v->has_value_info = sv->has_value_info;
        v->doc_string = ox__ir_strdup(sv->doc_string);
        if (sv->type && !(v->type = ox_type_clone(sv->type)))
            goto fail;
        if (sv->decl && !(v->decl = ox_type_clone(sv->decl)))
            goto fail;
        if (sv->init && !(v->init = ox_tensor_share(sv->init)))
            goto fail;
        if (sv->known)
            v->known = ox_tensor_share(sv->known);
        v->override_dep = sv->override_dep;
        v->override_shape_dep = sv->override_shape_dep;
    }
    if (src->n_inputs > 0) {
        g->inputs = ox__ir_xcalloc((size_t)src->n_inputs, sizeof(ox_value *));
        if (!g->inputs)
            goto fail;
        for (int i = 0; i < src->n_inputs; i++)
            g->inputs[i] = map_value(g, src, src->inputs[i]);
        g->n_inputs = src->n_inputs;
    }
    for (int i = 0; i < src->n_nodes; i++) {
        const ox_node *sn = src->nodes[i];
        ox_value *stack_in[8], *stack_out[8];
        ox_value **in = sn->n_inputs <= 8 ? stack_in : ox__ir_xcalloc((size_t)sn->n_inputs, sizeof *in);
        ox_value **out = sn->n_outputs <= 8 ? stack_out : ox__ir_xcalloc((size_t)sn->n_outputs, sizeof *out);
        ox_node *n = NULL;
        if (in && out) {
            for (int k = 0; k < sn->n_inputs; k++)
                in[k] = map_value(g, src, sn->inputs[k]);
            for (int k = 0; k < sn->n_outputs; k++)
                out[k] = map_value(g, src, sn->outputs[k]);
            n = ox_node_new(g, sn->op_type, sn->domain, sn->name, sn->n_inputs, in,
                            sn->n_outputs, out);
        }
        if (in != stack_in)
            free(in);
        if (out != stack_out)
            free(out);
        if (!n)
            goto fail;
        if (keep_ids)
            n->id = sn->id;
        n->overload = ox__ir_strdup(sn->overload);
        n->doc_string = ox__ir_strdup(sn->doc_string);
        n->meta = kv_copy(sn->meta, sn->n_meta);
        n->n_meta = n->meta ? sn->n_meta : 0;
        if (sn->n_attrs > 0) {
            n->attrs = ox__ir_xcalloc((size_t)sn->n_attrs, sizeof(ox_attr));
            if (!n->attrs)
                goto fail;
            for (int k = 0; k < sn->n_attrs; k++) {
                if (!ox__attr_copy(&n->attrs[n->n_attrs], &sn->attrs[k], g, n, keep_ids))
                    goto fail;
                n->n_attrs++;
            }
        }
    }
    /* Outputs last: the subgraph-output records need owner links in place. */
    for (int i = 0; i < src->n_outputs; i++) {
        ox_value *v = map_value(g, src, src->outputs[i]);
        if (v && ox_graph_add_output(g, v) != OX_OK)
            goto fail;
    }
    return g;
fail:
    ox__graph_destroy(g, true, true);
    return NULL;
}

static bool blobs_copy(ox_blob **dst, int *nd, const ox_blob *src, int n)
{
    *dst = NULL;
    *nd = 0;
    if (!src || n <= 0)
        return true;
    *dst = ox__ir_xcalloc((size_t)n, sizeof(ox_blob));
    if (!*dst)
        return false;
    for (int i = 0; i < n; i++) {
        (*dst)[i].data = memdup(src[i].data, src[i].len);
        (*dst)[i].len = (*dst)[i].data ? src[i].len : 0;
    }
    *nd = n;
    return true;
}

ox_model *ox_model_clone(const ox_model *s)
{
    if (!s)
        return NULL;
    ox_model *m = ox_model_new();
    if (!m)
        return NULL;
    ox__graph_destroy(m->graph, false, true);
    m->graph = NULL;
    m->ir_version = s->ir_version;
    m->producer_name = ox__ir_strdup(s->producer_name);
    m->producer_version = ox__ir_strdup(s->producer_version);
    m->domain = ox__ir_strdup(s->domain);
    m->doc_string = ox__ir_strdup(s->doc_string);
    m->model_version = s->model_version;
    for (int i = 0; i < s->n_opsets; i++)
        ox_model_set_opset(m, s->opsets[i].domain, s->opsets[i].version);
    m->meta = kv_copy(s->meta, s->n_meta);
    m->n_meta = m->meta ? s->n_meta : 0;
    m->path = ox__ir_strdup(s->path);
    m->dir = ox__ir_strdup(s->dir);
    m->file_buf = ox_buffer_retain(s->file_buf);
    m->file_size = s->file_size;
    if (s->n_ext_files > 0) {
        m->ext_files = ox_xcalloc((size_t)s->n_ext_files, sizeof *m->ext_files);
        if (!m->ext_files)
            goto fail;
        for (int i = 0; i < s->n_ext_files; i++)
            m->ext_files[i] = ox_buffer_retain(s->ext_files[i]);
        m->n_ext_files = s->n_ext_files;
    }
    m->name_counter = s->name_counter;
    if (!blobs_copy(&m->training_info, &m->n_training_info, s->training_info, s->n_training_info) ||
        !blobs_copy(&m->configuration, &m->n_configuration, s->configuration, s->n_configuration))
        goto fail;
    if (s->n_load_issues > 0) {
        m->load_issues = ox__ir_xcalloc((size_t)s->n_load_issues, sizeof(char *));
        if (!m->load_issues)
            goto fail;
        for (int i = 0; i < s->n_load_issues; i++)
            m->load_issues[i] = ox__ir_strdup(s->load_issues[i]);
        m->n_load_issues = s->n_load_issues;
    }
    if (s->graph && !(m->graph = ox__graph_clone(s->graph, m, NULL, NULL, true)))
        goto fail;
    if (s->n_functions > 0) {
        m->functions = ox__ir_xcalloc((size_t)s->n_functions, sizeof(ox_function));
        if (!m->functions)
            goto fail;
        m->n_functions = s->n_functions;
        for (int i = 0; i < s->n_functions; i++) {
            const ox_function *sf = &s->functions[i];
            ox_function *f = &m->functions[i];
            f->name = ox__ir_strdup(sf->name);
            f->domain = ox__ir_strdup(sf->domain);
            f->overload = ox__ir_strdup(sf->overload);
            f->doc_string = ox__ir_strdup(sf->doc_string);
            if (sf->n_attr_names > 0 && (f->attr_names = ox__ir_xcalloc((size_t)sf->n_attr_names, sizeof(char *)))) {
                for (int k = 0; k < sf->n_attr_names; k++)
                    f->attr_names[k] = ox__ir_strdup(sf->attr_names[k]);
                f->n_attr_names = sf->n_attr_names;
            }
            if (sf->n_attr_defaults > 0 &&
                (f->attr_defaults = ox__ir_xcalloc((size_t)sf->n_attr_defaults, sizeof(ox_attr)))) {
                for (int k = 0; k < sf->n_attr_defaults; k++)
                    if (ox__attr_copy(&f->attr_defaults[f->n_attr_defaults], &sf->attr_defaults[k], NULL, NULL, true))
                        f->n_attr_defaults++;
            }
            if (sf->n_opsets > 0 && (f->opsets = ox__ir_xcalloc((size_t)sf->n_opsets, sizeof(ox_opset)))) {
                for (int k = 0; k < sf->n_opsets; k++) {
                    f->opsets[k].domain = ox__ir_strdup(sf->opsets[k].domain);
                    f->opsets[k].version = sf->opsets[k].version;
                }
                f->n_opsets = sf->n_opsets;
            }
            f->meta = kv_copy(sf->meta, sf->n_meta);
            f->n_meta = f->meta ? sf->n_meta : 0;
            if (sf->body && !(f->body = ox__graph_clone(sf->body, m, NULL, NULL, true)))
                goto fail;
        }
    }
    m->next_node_id = s->next_node_id;
    m->oom = m->oom || s->oom; /* a copy of an inconsistent IR is one too */
    return m;
fail:
    ox_model_free(m);
    return NULL;
}
