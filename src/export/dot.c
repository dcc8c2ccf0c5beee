/* Builds the Graphviz (libcgraph) graph of a model: one DOT node per ONNX
 * node, graph input, graph output and (optionally) initializer, one edge per
 * (producer, consumer input) pair, subgraph bodies as clusters; plus the
 * neighbourhood (--around) and before/after (--diff) views. */
#include "onnxscope/export.h"

#include <cgraph.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/export_internal.h"

/* ---- a small string builder ------------------------------------------- */

typedef struct sb {
    char *p;
    size_t n, cap;
    bool oom;
} sb;

static void sb_putn(sb *s, const char *t, size_t n)
{
    if (s->oom)
        return;
    if (s->n + n + 1 > s->cap) {
        size_t nc = s->cap ? s->cap : 128;
        while (nc < s->n + n + 1)
            nc *= 2;
        char *q = realloc(s->p, nc);
        if (!q) {
            s->oom = true;
            return;
        }
        s->p = q;
        s->cap = nc;
    }
    memcpy(s->p + s->n, t, n);
    s->n += n;
    s->p[s->n] = '\0';
}

static void sb_puts(sb *s, const char *t)
{
    sb_putn(s, t, strlen(t));
}

__attribute__((format(printf, 2, 3)))
static void sb_printf(sb *s, const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    sb_putn(s, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

static const char *sb_str(sb *s)
{
    return s->p && !s->oom ? s->p : "";
}

static void sb_reset(sb *s)
{
    s->n = 0;
    if (s->p)
        s->p[0] = '\0';
}

/* Length of a valid UTF-8 sequence starting at s (0 when invalid). */
static size_t utf8_len(const unsigned char *s)
{
    if (s[0] < 0x80)
        return 1;
    size_t n = (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3
             : (s[0] & 0xf8) == 0xf0 ? 4 : 0;
    if (n == 0 || (n == 2 && s[0] < 0xc2))
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return n;
}

/* Appends user text (names from the model) to a DOT label: invalid UTF-8
 * and control characters become '?' (Graphviz rejects bad UTF-8), and '\'
 * is doubled so that names cannot inject escapes such as \N or \l. At most
 * max bytes are copied, then "..". */
static void sb_text(sb *s, const char *t, size_t max)
{
    if (!t)
        return;
    const unsigned char *u = (const unsigned char *)t;
    size_t used = 0;
    while (*u) {
        size_t l = utf8_len(u);
        if (used + (l ? l : 1) > max) {
            sb_puts(s, "..");
            return;
        }
        if (l == 0 || (l == 1 && (*u < 0x20 || *u == 0x7f))) {
            sb_puts(s, "?");
            u++;
            used++;
            continue;
        }
        if (*u == '\\')
            sb_puts(s, "\\\\");
        else
            sb_putn(s, (const char *)u, l);
        u += l;
        used += l;
    }
}

/* ---- names and labels ----------------------------------------------------- */

const char *ox_export_short_name(const char *name, char *buf, size_t len)
{
    if (!buf || len == 0)
        return "";
    buf[0] = '\0';
    if (!name)
        return buf;
    const size_t keep = 28;
    size_t n = strlen(name);
    if (n <= keep) {
        snprintf(buf, len, "%s", name);
        return buf;
    }
    /* Exporter paths "/encoder/layer.0/attention/self/MatMul": the last two
     * components say the most. */
    const char *cut = name + n;
    int slashes = 0;
    while (cut > name) {
        cut--;
        if (*cut == '/' && ++slashes == 2)
            break;
    }
    if (slashes == 2 && (size_t)(name + n - cut) <= keep) {
        snprintf(buf, len, "..%s", cut);
        return buf;
    }
    /* Otherwise keep both ends, where counters and suffixes live. Cut on
     * UTF-8 boundaries so the result stays valid. */
    size_t head = 12, tail = 14;
    while (head > 0 && ((unsigned char)name[head] & 0xc0) == 0x80)
        head--;
    size_t ts = n - tail;
    while (ts < n && ((unsigned char)name[ts] & 0xc0) == 0x80)
        ts++;
    snprintf(buf, len, "%.*s..%s", (int)head, name, name + ts);
    return buf;
}

static const char *nz(const char *s)
{
    return s ? s : "";
}

/* Short names for the attributes that appear on most conv-like nodes. */
static const char *attr_alias(const char *name)
{
    static const char *const al[][2] = {
        {"kernel_shape", "k"}, {"strides", "s"}, {"pads", "pad"},
        {"dilations", "dil"}, {"group", "g"},
    };
    for (size_t i = 0; i < sizeof al / sizeof al[0]; i++)
        if (strcmp(name, al[i][0]) == 0)
            return al[i][1];
    return name;
}

static void fmt_tensor_brief(sb *s, const ox_tensor *t)
{
    if (!t) {
        sb_puts(s, "?");
        return;
    }
    const char *dn = ox_dtype_valid((int)t->dtype) ? ox_dtype_name(t->dtype) : "?";
    int rank = t->rank < 0 ? 0 : t->rank > OX_MAX_RANK ? OX_MAX_RANK : t->rank;
    /* A scalar with its bytes at hand is more useful as its value. */
    if (t->numel == 1 && t->dtype != OX_DT_STRING && ox_tensor_data(t) &&
        ox_dtype_bits(t->dtype) > 0 && t->nbytes * 8 >= (size_t)ox_dtype_bits(t->dtype)) {
        if (ox_dtype_is_float(t->dtype))
            sb_printf(s, "%s %.6g", dn, ox_tensor_get_f64(t, 0));
        else
            sb_printf(s, "%s %lld", dn, (long long)ox_tensor_get_i64(t, 0));
        return;
    }
    sb_printf(s, "%s[", dn);
    for (int i = 0; i < rank; i++)
        sb_printf(s, "%s%lld", i ? "," : "", (long long)t->dims[i]);
    sb_puts(s, "]");
}

/* Appends "name=value" for attributes worth showing; false when skipped. */
static bool fmt_attr(sb *s, const ox_attr *a)
{
    if (!a->name)
        return false;
    const char *nm = attr_alias(a->name);
    bool x_style = strcmp(a->name, "kernel_shape") == 0 ||
                   strcmp(a->name, "strides") == 0 || strcmp(a->name, "dilations") == 0;
    switch (a->type) {
    case OX_ATTR_INT:
        sb_text(s, nm, 24);
        if (strcmp(a->name, "to") == 0 && ox_dtype_valid((int)a->i))
            sb_printf(s, "=%s", ox_dtype_name((ox_dtype)a->i));
        else
            sb_printf(s, "=%lld", (long long)a->i);
        return true;
    case OX_ATTR_FLOAT:
        sb_text(s, nm, 24);
        sb_printf(s, "=%g", (double)a->f);
        return true;
    case OX_ATTR_STRING:
        sb_text(s, nm, 24);
        sb_puts(s, "=");
        sb_text(s, a->s.data, 20);
        return true;
    case OX_ATTR_INTS: {
        if (a->n < 0 || (a->n > 0 && !a->ints))
            return false;
        sb_text(s, nm, 24);
        sb_puts(s, x_style ? "=" : "=[");
        int shown = a->n < 8 ? a->n : 8;
        for (int i = 0; i < shown; i++)
            sb_printf(s, "%s%lld", i ? (x_style ? "x" : ",") : "", (long long)a->ints[i]);
        if (shown < a->n)
            sb_puts(s, ",..");
        if (!x_style)
            sb_puts(s, "]");
        return true;
    }
    case OX_ATTR_FLOATS: {
        if (a->n < 0 || (a->n > 0 && !a->floats))
            return false;
        sb_text(s, nm, 24);
        sb_puts(s, "=[");
        int shown = a->n < 4 ? a->n : 4;
        for (int i = 0; i < shown; i++)
            sb_printf(s, "%s%g", i ? "," : "", (double)a->floats[i]);
        sb_puts(s, shown < a->n ? ",..]" : "]");
        return true;
    }
    case OX_ATTR_STRINGS:
        sb_text(s, nm, 24);
        sb_printf(s, "=<%d strings>", a->n);
        return true;
    case OX_ATTR_TENSOR:
        sb_text(s, nm, 24);
        sb_puts(s, ": ");
        fmt_tensor_brief(s, a->t);
        return true;
    default:
        /* Graph bodies are drawn as clusters; the rest is too bulky. */
        return false;
    }
}

/* Attributes that only restate the spec's default: group=1, all-zero pads,
 * unit strides and dilations. Leaving them out keeps labels short. */
static bool attr_is_default(const ox_attr *a)
{
    if (!a->name)
        return false;
    if (a->type == OX_ATTR_INT && strcmp(a->name, "group") == 0)
        return a->i == 1;
    if (a->type != OX_ATTR_INTS || a->n < 0 || (a->n > 0 && !a->ints))
        return false;
    int64_t unit = strcmp(a->name, "pads") == 0 ? 0
                 : (strcmp(a->name, "strides") == 0 || strcmp(a->name, "dilations") == 0)
                     ? 1 : -1;
    if (unit < 0)
        return false;
    for (int i = 0; i < a->n; i++)
        if (a->ints[i] != unit)
            return false;
    return true;
}

/* The text of an op node's label, lines separated by DOT's "\n". */
static void op_label(sb *s, const ox_node *n, const char *prefix, bool attrs)
{
    sb_puts(s, prefix);
    const char *dom = nz(n->domain);
    if (*dom && strcmp(dom, "ai.onnx") != 0) {
        sb_text(s, dom, 24);
        sb_puts(s, ":");
    }
    sb_text(s, n->op_type ? n->op_type : "?", 40);
    if (n->name && *n->name && strcmp(n->name, nz(n->op_type)) != 0) {
        char sh[64];
        sb_puts(s, "\\n");
        sb_text(s, ox_export_short_name(n->name, sh, sizeof sh), 48);
    }
    if (!attrs)
        return;
    /* Conv-like geometry first, in the usual order; then the rest as stored. */
    static const char *const first[] = {"kernel_shape", "strides", "pads", "dilations",
                                        "group", "perm", "axis", "axes"};
    const int nf = (int)(sizeof first / sizeof first[0]);
    int shown = 0, skipped = 0;
    for (int pass = 0; pass <= nf; pass++) {
        for (int i = 0; i < n->n_attrs && n->attrs; i++) {
            const ox_attr *a = &n->attrs[i];
            int rank = nf;
            for (int f = 0; f < nf && a->name; f++)
                if (strcmp(a->name, first[f]) == 0)
                    rank = f;
            if (rank != pass || attr_is_default(a))
                continue;
            if (shown == 4) {
                skipped++;
                continue;
            }
            size_t mark = s->n;
            sb_puts(s, "\\n");
            if (fmt_attr(s, a)) {
                shown++;
            } else {
                /* Roll back the line break of a skipped attribute. */
                s->n = mark;
                if (s->p)
                    s->p[mark] = '\0';
            }
        }
    }
    if (skipped)
        sb_printf(s, "\\n+%d more", skipped);
}

/* "float32[1,3,224,224]" for a value, from its type or initializer. */
static const char *value_type_str(const ox_value *v, char *buf, size_t len)
{
    buf[0] = '\0';
    if (v->type && v->type->kind != OX_TYPE_NONE) {
        /* A tensor of unknown element type and no known dim ("?[?,?]")
         * says nothing worth a label. */
        const ox_type *t = v->type;
        bool informative = t->kind != OX_TYPE_TENSOR || t->elem != OX_DT_UNDEFINED;
        for (int i = 0; !informative && t->has_shape && t->dims && i < t->rank; i++)
            informative = t->dims[i].value >= 0 || t->dims[i].param;
        if (informative)
            ox_type_str(v->type, buf, len);
        return buf;
    }
    if (v->init) {
        sb s = {0};
        const ox_tensor *t = v->init;
        int rank = t->rank < 0 ? 0 : t->rank > OX_MAX_RANK ? OX_MAX_RANK : t->rank;
        sb_printf(&s, "%s[", ox_dtype_valid((int)t->dtype) ? ox_dtype_name(t->dtype) : "?");
        for (int i = 0; i < rank; i++)
            sb_printf(&s, "%s%lld", i ? "," : "", (long long)t->dims[i]);
        sb_puts(&s, "]");
        snprintf(buf, len, "%s", sb_str(&s));
        free(s.p);
    }
    return buf;
}

/* ---- the builder ---------------------------------------------------------- */

typedef enum { ST_SAME = 0, ST_ADDED, ST_REMOVED, ST_CHANGED } diff_state;

typedef struct builder {
    Agraph_t *root;
    const ox_export_opts *o;
    ox_theme th;
    ox_export_stats st;
    ox_error *err;
    ox_status status;
    int next_id;
    sb lab;

    exp_model_index ix;     /* the displayed model (the "after" one in a diff) */
    exp_ptrmap node_ag;     /* displayed ox_node* -> Agnode_t* */
    exp_ptrmap value_ag;    /* ox_value* (graph input / initializer) -> Agnode_t* */
    exp_ptrmap graph_ag;    /* ox_graph* -> container (root or cluster) */
    exp_ptrmap graph_idx;   /* ox_graph* -> index + 1 */
    exp_ptrmap output_ag;   /* &g->outputs[k] -> Agnode_t* */

    bool around;
    exp_ptrmap included;    /* displayed ox_node* -> (void *)1, around view */
    const ox_node *centre;

    bool diff;
    exp_model_index bix;    /* the "before" model */
    exp_ptrmap b2a, a2b;    /* node matching */
    exp_ptrmap removed_ag;  /* removed before-node -> Agnode_t* */
} builder;

static bool fail_oom(builder *b)
{
    if (b->status == OX_OK)
        b->status = ox_errorf(b->err, OX_ENOMEM, "out of memory building the graph");
    return false;
}

static void set(void *obj, const char *name, const char *val)
{
    if (obj && val)
        agsafeset(obj, (char *)name, (char *)val, "");
}

static void set_color(void *obj, const char *name, const builder *b, ox_theme_slot slot)
{
    char hex[8];
    const char *h = ox_color_hex(&b->th.slot[slot].fg, hex, sizeof hex);
    if (h)
        set(obj, name, h);
}

static Agnode_t *new_node(builder *b, Agraph_t *container, char prefix)
{
    char id[32];
    snprintf(id, sizeof id, "%c%d", prefix, b->next_id++);
    Agnode_t *n = agnode(container, id, 1);
    if (!n) {
        fail_oom(b);
        return NULL;
    }
    b->st.nodes++;
    return n;
}

static int graph_index(const builder *b, const ox_graph *g)
{
    return (int)(intptr_t)exp_map_get(&b->graph_idx, g) - 1;
}

/* Name of the attribute of owner that holds body g ("then_branch"). */
static const char *body_attr_name(const ox_node *owner, const ox_graph *g)
{
    for (int a = 0; owner && a < owner->n_attrs && owner->attrs; a++) {
        const ox_attr *at = &owner->attrs[a];
        if (at->type == OX_ATTR_GRAPH && at->g == g)
            return nz(at->name);
        if (at->type == OX_ATTR_GRAPHS && at->graphs)
            for (int k = 0; k < at->n; k++)
                if (at->graphs[k] == g)
                    return nz(at->name);
    }
    return "body";
}

/* The DOT container of a displayed graph: the root for the main graph, a
 * cluster (created on first use, inside its owner's container) for bodies. */
static Agraph_t *container(builder *b, const ox_graph *g, int depth)
{
    if (!g || g == b->ix.graphs[0] || depth > 64)
        return b->root;
    Agraph_t *c = exp_map_get(&b->graph_ag, g);
    if (c)
        return c;
    Agraph_t *parent = g->owner ? container(b, g->owner->graph, depth + 1) : b->root;
    char name[48];
    snprintf(name, sizeof name, "cluster_g%d", graph_index(b, g));
    c = agsubg(parent, name, 1);
    if (!c || !exp_map_put(&b->graph_ag, g, c)) {
        fail_oom(b);
        return b->root;
    }
    b->st.clusters++;
    sb s = {0};
    if (g->owner) {
        char sh[64];
        sb_text(&s, nz(g->owner->op_type), 40);
        if (g->owner->name && *g->owner->name) {
            sb_puts(&s, " ");
            sb_text(&s, ox_export_short_name(g->owner->name, sh, sizeof sh), 48);
        }
        sb_puts(&s, " . ");
        sb_text(&s, body_attr_name(g->owner, g), 32);
    } else {
        sb_puts(&s, "subgraph");
    }
    set(c, "label", sb_str(&s));
    free(s.p);
    set(c, "style", "rounded,filled");
    set_color(c, "fillcolor", b, OX_SLOT_GRAPH_CLUSTER);
    set_color(c, "color", b, OX_SLOT_GRAPH_BORDER);
    set(c, "fontsize", "9");
    set(c, "labeljust", "l");
    return c;
}

static bool is_included(const builder *b, const ox_node *n)
{
    return !b->around || exp_map_get(&b->included, n) != NULL;
}

/* True if some included node reads v (directly or as an outer-scope value
 * of one of its bodies). */
static bool used_by_included(const builder *b, const ox_value *v)
{
    if (!b->around)
        return true;
    for (int u = 0; u < v->n_uses && v->uses; u++)
        if (v->uses[u].node && is_included(b, v->uses[u].node) && v->uses[u].input >= 0)
            return true;
    return false;
}

static void style_op(builder *b, Agnode_t *an, const ox_node *n, diff_state ds)
{
    const char *prefix = ds == ST_ADDED ? "+ " : ds == ST_REMOVED ? "- " : "";
    sb_reset(&b->lab);
    op_label(&b->lab, n, prefix, b->o->show_attrs);
    set(an, "label", sb_str(&b->lab));
    if (b->lab.oom)
        fail_oom(b);
    set(an, "ox_kind", "op");
    sb_reset(&b->lab);
    sb_text(&b->lab, nz(n->op_type), 200);
    set(an, "ox_op", sb_str(&b->lab));
    sb_reset(&b->lab);
    sb_text(&b->lab, nz(n->name), 4096);
    set(an, "ox_name", sb_str(&b->lab));
    set(an, "tooltip", sb_str(&b->lab));
    set_color(an, "fillcolor", b, ox_theme_opcat_slot(ox_op_category(n->op_type)));
    switch (ds) {
    case ST_ADDED:
        set(an, "ox_diff", "added");
        set_color(an, "color", b, OX_SLOT_GRAPH_ADDED);
        set(an, "penwidth", "3");
        b->st.added++;
        break;
    case ST_REMOVED:
        set(an, "ox_diff", "removed");
        set(an, "style", "rounded,filled,dashed");
        set_color(an, "fillcolor", b, OX_SLOT_GRAPH_REMOVED);
        set_color(an, "color", b, OX_SLOT_GRAPH_REMOVED);
        set_color(an, "fontcolor", b, OX_SLOT_GRAPH_EDGE);
        b->st.removed++;
        break;
    case ST_CHANGED:
        set(an, "ox_diff", "changed");
        set_color(an, "color", b, OX_SLOT_GRAPH_CHANGED);
        set(an, "penwidth", "2");
        b->st.changed++;
        break;
    default:
        break;
    }
}

static void value_node_label(builder *b, Agnode_t *an, const ox_value *v, const char *kind)
{
    char sh[64], ty[160];
    sb_reset(&b->lab);
    sb_text(&b->lab, ox_export_short_name(nz(v->name), sh, sizeof sh), 48);
    value_type_str(v, ty, sizeof ty);
    if (ty[0]) {
        sb_puts(&b->lab, "\\n");
        sb_text(&b->lab, ty, 80);
    }
    set(an, "label", sb_str(&b->lab));
    set(an, "ox_kind", kind);
    sb_reset(&b->lab);
    sb_text(&b->lab, nz(v->name), 4096);
    set(an, "ox_name", sb_str(&b->lab));
    set(an, "tooltip", sb_str(&b->lab));
}

static void add_edge(builder *b, Agnode_t *from, Agnode_t *to, const ox_value *v,
                     bool removed)
{
    if (!from || !to)
        return;
    Agedge_t *e = agedge(b->root, from, to, NULL, 1);
    if (!e) {
        fail_oom(b);
        return;
    }
    b->st.edges++;
    char ty[160];
    if (v && b->o->show_shapes && value_type_str(v, ty, sizeof ty)[0]) {
        sb_reset(&b->lab);
        sb_text(&b->lab, ty, 80);
        set(e, "label", sb_str(&b->lab));
    }
    if (v) {
        sb_reset(&b->lab);
        sb_text(&b->lab, nz(v->name), 4096);
        set(e, "tooltip", sb_str(&b->lab));
    }
    if (removed) {
        set(e, "style", "dashed");
        set_color(e, "color", b, OX_SLOT_GRAPH_REMOVED);
        set(e, "ox_diff", "removed");
    }
}

/* The DOT node that produces v in the displayed model, or NULL. */
static Agnode_t *source_of(const builder *b, const ox_value *v)
{
    if (!v)
        return NULL;
    if (v->producer)
        return exp_map_get(&b->node_ag, v->producer);
    return exp_map_get(&b->value_ag, v);
}

/* Neighbourhood: breadth-first over producer/consumer links. */
static ox_status select_around(builder *b)
{
    const char *want = b->o->around;
    const ox_node *c = NULL;
    for (int i = 0; i < b->ix.n_nodes && !c; i++)
        if (b->ix.nodes[i]->name && strcmp(b->ix.nodes[i]->name, want) == 0)
            c = b->ix.nodes[i];
    if (!c && *want) {
        char *end;
        long idx = strtol(want, &end, 10);
        const ox_graph *g = b->ix.graphs[0];
        if (*end == '\0' && idx >= 0 && idx < g->n_nodes)
            c = g->nodes[idx];
    }
    /* An unnamed node as `info --profile` and the viewer show it: OP_INDEX
     * (PyTorch and spox leave most nodes unnamed). */
    const char *us = c ? NULL : strrchr(want, '_');
    if (us && us[1]) {
        char *end;
        long idx = strtol(us + 1, &end, 10);
        const ox_graph *g = b->ix.graphs[0];
        if (*end == '\0' && idx >= 0 && idx < g->n_nodes) {
            const ox_node *n = g->nodes[idx];
            if ((!n->name || !*n->name) && n->op_type &&
                strlen(n->op_type) == (size_t)(us - want) &&
                !strncmp(n->op_type, want, (size_t)(us - want)))
                c = n;
        }
    }
    if (!c)
        return ox_errorf(b->err, OX_EINVAL,
                         "--around: no node named '%s' (nor OP_INDEX of an unnamed node, "
                         "nor an index 0..%d of the main graph)", want, b->ix.graphs[0]->n_nodes - 1);
    if (b->o->radius < 0)
        return ox_errorf(b->err, OX_EINVAL, "--radius must be >= 0");
    b->centre = c;
    const ox_node **queue = calloc((size_t)b->ix.n_nodes + 1, sizeof *queue);
    int *dist = calloc((size_t)b->ix.n_nodes + 1, sizeof *dist);
    if (!queue || !dist) {
        free(queue);
        free(dist);
        return ox_errorf(b->err, OX_ENOMEM, "out of memory");
    }
    int qh = 0, qt = 0;
    queue[qt] = c;
    dist[qt++] = 0;
    exp_map_put(&b->included, c, (void *)1);
    while (qh < qt) {
        const ox_node *n = queue[qh];
        int d = dist[qh++];
        if (d >= b->o->radius)
            continue;
        /* Neighbours: producers of inputs, consumers of outputs. */
        int nn = n->n_inputs + n->n_outputs;
        for (int k = 0; k < nn; k++) {
            const ox_value *v = k < n->n_inputs ? (n->inputs ? n->inputs[k] : NULL)
                                                : (n->outputs ? n->outputs[k - n->n_inputs]
                                                              : NULL);
            if (!v)
                continue;
            int cnt = k < n->n_inputs ? 1 : v->n_uses;
            for (int u = 0; u < cnt; u++) {
                const ox_node *m = k < n->n_inputs ? v->producer
                                                   : (v->uses ? v->uses[u].node : NULL);
                if (!m || exp_map_get(&b->included, m))
                    continue;
                if (qt >= b->ix.n_nodes || !exp_map_put(&b->included, m, (void *)1))
                    break;
                queue[qt] = m;
                dist[qt++] = d + 1;
            }
        }
    }
    free(queue);
    free(dist);
    return OX_OK;
}

/* Creates the DOT nodes of one displayed graph (inputs, initializers, ops). */
static void build_graph_nodes(builder *b, ox_graph *g)
{
    for (int k = 0; k < g->n_inputs && g->inputs; k++) {
        ox_value *v = g->inputs[k];
        /* An input that has an initializer is a weight (IR < 4 models list
         * every weight as an input); it is drawn as an initializer. */
        if (!v || v->init || exp_map_get(&b->value_ag, v))
            continue;
        if (!used_by_included(b, v))
            continue;
        Agnode_t *an = new_node(b, container(b, g, 0), 'i');
        if (!an || !exp_map_put(&b->value_ag, v, an)) {
            fail_oom(b);
            return;
        }
        b->st.input_nodes++;
        value_node_label(b, an, v, "input");
        set(an, "shape", "invhouse");
        set(an, "style", "filled");
        set_color(an, "fillcolor", b, OX_SLOT_GRAPH_INPUT);
    }
    if (b->o->show_initializers) {
        for (int k = 0; k < g->n_values && g->values; k++) {
            ox_value *v = g->values[k];
            if (!v || !v->init || exp_map_get(&b->value_ag, v) || !used_by_included(b, v))
                continue;
            Agnode_t *an = new_node(b, container(b, g, 0), 'w');
            if (!an || !exp_map_put(&b->value_ag, v, an)) {
                fail_oom(b);
                return;
            }
            b->st.init_nodes++;
            value_node_label(b, an, v, "initializer");
            set(an, "shape", "box");
            set(an, "style", "filled");
            set(an, "fontsize", "7");
            set(an, "height", "0.2");
            set(an, "margin", "0.04,0.02");
            set_color(an, "fillcolor", b, OX_SLOT_GRAPH_INITIALIZER);
        }
    }
    for (int k = 0; k < g->n_nodes && g->nodes; k++) {
        ox_node *n = g->nodes[k];
        if (!n || !is_included(b, n))
            continue;
        Agnode_t *an = new_node(b, container(b, g, 0), 'n');
        if (!an || !exp_map_put(&b->node_ag, n, an)) {
            fail_oom(b);
            return;
        }
        b->st.op_nodes++;
        diff_state ds = ST_SAME;
        if (b->diff) {
            ox_node *before = exp_map_get(&b->a2b, n);
            ds = !before ? ST_ADDED : exp_node_changed(before, n) ? ST_CHANGED : ST_SAME;
        }
        style_op(b, an, n, ds);
        if (n == b->centre) {
            set(an, "penwidth", "3");
            set(an, "ox_centre", "true");
        }
    }
}

static void build_graph_edges(builder *b, ox_graph *g)
{
    for (int k = 0; k < g->n_nodes && g->nodes; k++) {
        ox_node *n = g->nodes[k];
        Agnode_t *to = n ? exp_map_get(&b->node_ag, n) : NULL;
        if (!to)
            continue;
        for (int i = 0; i < n->n_inputs && n->inputs; i++)
            if (n->inputs[i])
                add_edge(b, source_of(b, n->inputs[i]), to, n->inputs[i], false);
    }
    int gi = graph_index(b, g);
    for (int k = 0; k < g->n_outputs && g->outputs; k++) {
        ox_value *v = g->outputs[k];
        if (!v)
            continue;
        Agnode_t *src = source_of(b, v);
        if (b->around && !src)
            continue;
        char id[48];
        snprintf(id, sizeof id, "o%d_%d", gi, k);
        Agnode_t *an = agnode(container(b, g, 0), id, 1);
        if (!an || !exp_map_put(&b->output_ag, &g->outputs[k], an)) {
            fail_oom(b);
            return;
        }
        b->st.nodes++;
        b->st.output_nodes++;
        value_node_label(b, an, v, "output");
        set(an, "shape", "house");
        set(an, "style", "filled");
        set_color(an, "fillcolor", b, OX_SLOT_GRAPH_OUTPUT);
        add_edge(b, src, an, v, false);
    }
}

/* One dotted edge from each control-flow node to its body's cluster. */
static void build_body_edges(builder *b)
{
    for (int gi = 1; gi < b->ix.n_graphs; gi++) {
        ox_graph *g = b->ix.graphs[gi];
        Agraph_t *c = exp_map_get(&b->graph_ag, g);
        Agnode_t *owner = g->owner ? exp_map_get(&b->node_ag, g->owner) : NULL;
        Agnode_t *first = c ? agfstnode(c) : NULL;
        if (!owner || !first)
            continue;
        Agedge_t *e = agedge(b->root, owner, first, NULL, 1);
        if (!e) {
            fail_oom(b);
            return;
        }
        b->st.edges++;
        b->st.body_edges++;
        set(e, "style", "dotted");
        set(e, "arrowhead", "odiamond");
        set(e, "lhead", agnameof(c));
        set(e, "ox_kind", "body");
    }
}

/* The displayed graph corresponding to a before-model graph: the main graph,
 * or the same body attribute of the matched owner. NULL when none. */
static ox_graph *after_graph_of(builder *b, const ox_graph *bg, int depth)
{
    if (!bg || depth > 64)
        return NULL;
    if (bg == b->bix.graphs[0])
        return b->ix.graphs[0];
    ox_node *owner = bg->owner ? exp_map_get(&b->b2a, bg->owner) : NULL;
    if (!owner)
        return NULL;
    const char *an = body_attr_name(bg->owner, bg);
    for (int a = 0; a < owner->n_attrs && owner->attrs; a++)
        if (owner->attrs[a].type == OX_ATTR_GRAPH && strcmp(nz(owner->attrs[a].name), an) == 0)
            return owner->attrs[a].g;
    return NULL;
}

/* Diff view: removed before-nodes and the edges that touched them. */
static void build_removed(builder *b)
{
    for (int i = 0; i < b->bix.n_nodes; i++) {
        ox_node *n = b->bix.nodes[i];
        if (exp_map_get(&b->b2a, n))
            continue;
        ox_graph *ag = after_graph_of(b, n->graph, 0);
        Agnode_t *an = new_node(b, ag ? container(b, ag, 0) : b->root, 'r');
        if (!an || !exp_map_put(&b->removed_ag, n, an)) {
            fail_oom(b);
            return;
        }
        b->st.op_nodes++;
        style_op(b, an, n, ST_REMOVED);
    }
    for (int i = 0; i < b->bix.n_nodes && b->status == OX_OK; i++) {
        ox_node *n = b->bix.nodes[i];
        Agnode_t *rn = exp_map_get(&b->removed_ag, n);
        Agnode_t *to = rn ? rn : exp_map_get(&b->node_ag, exp_map_get(&b->b2a, n));
        for (int k = 0; k < n->n_inputs && n->inputs && to; k++) {
            ox_value *v = n->inputs[k];
            if (!v)
                continue;
            Agnode_t *from = NULL;
            if (v->producer) {
                Agnode_t *rp = exp_map_get(&b->removed_ag, v->producer);
                if (!rn && !rp)
                    continue;   /* both kept: the after graph has the edge */
                from = rp ? rp
                          : exp_map_get(&b->node_ag, exp_map_get(&b->b2a, v->producer));
            } else if (rn) {
                /* A graph input or weight: the after model's value of the same
                 * name, when it still exists there. */
                ox_graph *ag = after_graph_of(b, v->graph, 0);
                from = ag && v->name ? source_of(b, ox_graph_lookup(ag, v->name)) : NULL;
            }
            add_edge(b, from, to, v, true);
        }
    }
    /* Graph outputs that a removed node used to produce. */
    for (int gi = 0; gi < b->bix.n_graphs; gi++) {
        ox_graph *bg = b->bix.graphs[gi];
        ox_graph *ag = after_graph_of(b, bg, 0);
        for (int k = 0; ag && k < bg->n_outputs && bg->outputs; k++) {
            ox_value *v = bg->outputs[k];
            Agnode_t *rp = v && v->producer ? exp_map_get(&b->removed_ag, v->producer) : NULL;
            if (!rp || !v->name)
                continue;
            for (int j = 0; j < ag->n_outputs && ag->outputs; j++)
                if (ag->outputs[j] && ag->outputs[j]->name &&
                    strcmp(ag->outputs[j]->name, v->name) == 0) {
                    add_edge(b, rp, exp_map_get(&b->output_ag, &ag->outputs[j]), v, true);
                    break;
                }
        }
    }
}

void ox_export_opts_init(ox_export_opts *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->show_shapes = true;
    o->show_attrs = true;
    o->radius = 2;
}

void ox_export_free_graph(struct Agraph_s *g)
{
    if (g)
        agclose(g);
}

static void builder_free(builder *b)
{
    exp_index_free(&b->ix);
    exp_index_free(&b->bix);
    exp_map_free(&b->node_ag);
    exp_map_free(&b->value_ag);
    exp_map_free(&b->graph_ag);
    exp_map_free(&b->graph_idx);
    exp_map_free(&b->output_ag);
    exp_map_free(&b->included);
    exp_map_free(&b->b2a);
    exp_map_free(&b->a2b);
    exp_map_free(&b->removed_ag);
    free(b->lab.p);
}

static void set_defaults(builder *b, const ox_model *m)
{
    Agraph_t *g = b->root;
    const char *rd = b->o->rankdir ? b->o->rankdir : "TB";
    agattr(g, AGRAPH, "rankdir", (char *)rd);
    agattr(g, AGRAPH, "compound", "true");
    agattr(g, AGRAPH, "fontname", "Helvetica");
    agattr(g, AGRAPH, "nodesep", "0.25");
    agattr(g, AGRAPH, "ranksep", "0.35");
    agattr(g, AGRAPH, "labelloc", "t");
    char hex[8];
    const char *h = ox_color_hex(&b->th.slot[OX_SLOT_GRAPH_BACKGROUND].fg, hex, sizeof hex);
    if (h)
        agattr(g, AGRAPH, "bgcolor", (char *)h);
    agattr(g, AGNODE, "shape", "box");
    agattr(g, AGNODE, "style", "rounded,filled");
    agattr(g, AGNODE, "fontname", "Helvetica");
    agattr(g, AGNODE, "fontsize", "10");
    agattr(g, AGNODE, "height", "0.3");
    agattr(g, AGNODE, "margin", "0.08,0.03");
    if ((h = ox_color_hex(&b->th.slot[OX_SLOT_GRAPH_BORDER].fg, hex, sizeof hex)))
        agattr(g, AGNODE, "color", (char *)h);
    if ((h = ox_color_hex(&b->th.slot[OX_SLOT_GRAPH_TEXT].fg, hex, sizeof hex))) {
        agattr(g, AGNODE, "fontcolor", (char *)h);
        agattr(g, AGRAPH, "fontcolor", (char *)h);
    }
    agattr(g, AGEDGE, "fontname", "Helvetica");
    agattr(g, AGEDGE, "fontsize", "8");
    agattr(g, AGEDGE, "arrowsize", "0.6");
    if ((h = ox_color_hex(&b->th.slot[OX_SLOT_GRAPH_EDGE].fg, hex, sizeof hex))) {
        agattr(g, AGEDGE, "color", (char *)h);
        agattr(g, AGEDGE, "fontcolor", (char *)h);
    }
    /* A title: graph name, and the producer for context. */
    sb_reset(&b->lab);
    if (b->diff)
        sb_puts(&b->lab, "diff: ");
    sb_text(&b->lab, m->graph->name && *m->graph->name ? m->graph->name : "graph", 60);
    if (m->producer_name && *m->producer_name) {
        sb_puts(&b->lab, " (");
        sb_text(&b->lab, m->producer_name, 40);
        sb_puts(&b->lab, ")");
    }
    if (b->around) {
        sb_puts(&b->lab, "\\naround ");
        sb_text(&b->lab, b->o->around, 60);
        sb_printf(&b->lab, ", radius %d", b->o->radius);
    }
    agattr(g, AGRAPH, "label", (char *)sb_str(&b->lab));
}

ox_status ox_export_build(const ox_model *m, const ox_export_opts *o,
                          struct Agraph_s **out, ox_export_stats *stats,
                          ox_error *err)
{
    if (stats)
        memset(stats, 0, sizeof *stats);
    if (!out)
        return ox_errorf(err, OX_EINVAL, "no output graph");
    *out = NULL;
    if (!m || !m->graph)
        return ox_errorf(err, OX_EINVAL, "model has no graph");
    ox_export_opts defaults;
    if (!o) {
        ox_export_opts_init(&defaults);
        o = &defaults;
    }
    if (o->rankdir && strcmp(o->rankdir, "TB") != 0 && strcmp(o->rankdir, "LR") != 0 &&
        strcmp(o->rankdir, "BT") != 0 && strcmp(o->rankdir, "RL") != 0)
        return ox_errorf(err, OX_EINVAL, "rankdir must be TB or LR (or BT, RL), not '%s'",
                         o->rankdir);
    if (o->around && o->diff_after)
        return ox_errorf(err, OX_EINVAL, "--around and --diff cannot be combined");
    if (o->diff_after && !o->diff_after->graph)
        return ox_errorf(err, OX_EINVAL, "the diff model has no graph");

    builder b;
    memset(&b, 0, sizeof b);
    b.o = o;
    b.err = err;
    if (o->theme)
        b.th = *o->theme;
    else
        ox_theme_default(&b.th);
    b.diff = o->diff_after != NULL;
    b.around = o->around != NULL;
    /* In the diff view the after model is what is drawn; before-only nodes
     * are added to it. */
    const ox_model *shown = b.diff ? o->diff_after : m;
    ox_status st = exp_index_model(shown, &b.ix, err);
    if (st == OX_OK && b.diff)
        st = exp_index_model(m, &b.bix, err);
    if (st == OX_OK && b.diff)
        st = exp_diff_match(&b.bix, &b.ix, &b.b2a, &b.a2b, err);
    for (int i = 0; st == OX_OK && i < b.ix.n_graphs; i++)
        if (!exp_map_put(&b.graph_idx, b.ix.graphs[i], (void *)(intptr_t)(i + 1)))
            st = ox_errorf(err, OX_ENOMEM, "out of memory");
    if (st == OX_OK && b.around)
        st = select_around(&b);
    if (st != OX_OK) {
        builder_free(&b);
        return st;
    }
    b.root = agopen("onnx", Agdirected, NULL);
    if (!b.root) {
        builder_free(&b);
        return ox_errorf(err, OX_ENOMEM, "cannot create a Graphviz graph");
    }
    set_defaults(&b, shown);
    /* All nodes first (every graph), then edges: an edge may reach into an
     * outer scope whose nodes must already exist. */
    for (int i = 0; i < b.ix.n_graphs && b.status == OX_OK; i++)
        build_graph_nodes(&b, b.ix.graphs[i]);
    for (int i = 0; i < b.ix.n_graphs && b.status == OX_OK; i++)
        build_graph_edges(&b, b.ix.graphs[i]);
    if (b.status == OX_OK)
        build_body_edges(&b);
    if (b.status == OX_OK && b.diff)
        build_removed(&b);
    st = b.status;
    if (st == OX_OK && b.lab.oom)
        st = ox_errorf(err, OX_ENOMEM, "out of memory building labels");
    if (st != OX_OK) {
        agclose(b.root);
        builder_free(&b);
        return st;
    }
    if (stats)
        *stats = b.st;
    *out = b.root;
    builder_free(&b);
    return OX_OK;
}
