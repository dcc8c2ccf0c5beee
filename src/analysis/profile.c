/* The data behind `info --profile`: one row per node with its cost, output
 * shapes and memory, sortable by column, printed as an aligned table or
 * converted to JSON for `--json`. */
#include "onnxscope/profile.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

/* Appends "1x3x224x224" (or "?" pieces) for v to buf at *pos. */
static void append_shape(char *buf, size_t len, size_t *pos, const ox_value *v)
{
    char piece[64];
    size_t p = *pos;
#define PUT(s)                                                        \
    do {                                                              \
        size_t l_ = strlen(s);                                        \
        if (p + l_ + 1 < len) {                                       \
            memcpy(buf + p, s, l_);                                   \
            p += l_;                                                  \
            buf[p] = 0;                                               \
        }                                                             \
    } while (0)
    if (!v) {
        PUT("-");
    } else if (v->init) {
        PUT(ox_shape_str(v->init->rank, v->init->dims, piece, sizeof piece));
    } else if (!v->type || v->type->kind != OX_TYPE_TENSOR || !v->type->has_shape ||
               v->type->rank < 0 || (v->type->rank > 0 && !v->type->dims)) {
        PUT("?");
    } else if (v->type->rank == 0) {
        PUT("scalar");
    } else {
        for (int i = 0; i < v->type->rank; i++) {
            const ox_dim *d = &v->type->dims[i];
            if (i)
                PUT("x");
            if (d->value >= 0)
                snprintf(piece, sizeof piece, "%" PRId64, d->value);
            else if (d->param && *d->param)
                snprintf(piece, sizeof piece, "%.40s", d->param);
            else
                snprintf(piece, sizeof piece, "?");
            PUT(piece);
        }
    }
#undef PUT
    *pos = p;
}

static char *shapes_of(const ox_node *n)
{
    char buf[512];
    size_t pos = 0;
    buf[0] = 0;
    for (int i = 0; i < n->n_outputs; i++) {
        if (!n->outputs[i])
            continue;
        if (pos && pos + 3 < sizeof buf) {
            memcpy(buf + pos, ", ", 3);
            pos += 2;
        }
        append_shape(buf, sizeof buf, &pos, n->outputs[i]);
    }
    return xstrdup(buf);
}

ox_status ox_profile_build(const ox_model *m, ox_profile **out, ox_error *err)
{
    if (!out)
        return ox_errorf(err, OX_EINVAL, "no output for the profile");
    *out = NULL;
    if (!m || !m->graph)
        return ox_errorf(err, OX_EINVAL, "model has no graph");
    const ox_graph *g = m->graph;
    ox_profile *p = calloc(1, sizeof *p);
    if (!p)
        return ox_errorf(err, OX_ENOMEM, "out of memory building the profile");
    ox_status st = ox_model_cost_compute(m, &p->model, err);
    if (st != OX_OK) {
        free(p);
        return st;
    }
    p->rows = calloc((size_t)(g->n_nodes ? g->n_nodes : 1), sizeof *p->rows);
    if (!p->rows) {
        free(p);
        return ox_errorf(err, OX_ENOMEM, "out of memory building the profile");
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const ox_node *n = g->nodes[i];
        if (!n)
            continue;
        ox_profile_row *r = &p->rows[p->n_rows++];
        ox_cost c;
        ox_node_cost(n, &c);
        char tmp[256];
        r->node = n;
        r->index = i;
        const char *op = n->op_type ? n->op_type : "?";
        if (n->name && *n->name)
            r->name = xstrdup(n->name);
        else {
            snprintf(tmp, sizeof tmp, "%.200s_%d", op, i);
            r->name = xstrdup(tmp);
        }
        if (n->domain && *n->domain && strcmp(n->domain, "ai.onnx")) {
            snprintf(tmp, sizeof tmp, "%.120s.%.120s", n->domain, op);
            r->op = xstrdup(tmp);
        } else {
            r->op = xstrdup(op);
        }
        r->out_shapes = shapes_of(n);
        if (!r->name || !r->op || !r->out_shapes) {
            ox_profile_free(p);
            return ox_errorf(err, OX_ENOMEM, "out of memory building the profile");
        }
        r->macs = c.macs;
        r->flops = c.flops;
        r->params = c.params;
        r->known = c.known;
        r->upper = c.upper;
        if (c.control != OX_CTRL_NONE) {
            ox_cost_note(&c, tmp, sizeof tmp);
            if (tmp[0] && !(r->note = xstrdup(tmp))) {
                ox_profile_free(p);
                return ox_errorf(err, OX_ENOMEM, "out of memory building the profile");
            }
        }
        r->memory_bytes = c.bytes_written + c.param_bytes;
        r->bytes_read = c.bytes_read;
        r->bytes_written = c.bytes_written;
        r->memory_known = c.bytes_known;
        p->sum_macs += r->macs;
        p->sum_flops += r->flops;
        p->sum_params += r->params;
        p->sum_memory += r->memory_bytes;
    }
    for (int i = 0; i < p->n_rows; i++)
        p->rows[i].macs_pct = p->sum_macs > 0
            ? 100.0 * (double)p->rows[i].macs / (double)p->sum_macs : 0.0;
    *out = p;
    return OX_OK;
}

void ox_profile_free(ox_profile *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->n_rows; i++) {
        free(p->rows[i].name);
        free(p->rows[i].op);
        free(p->rows[i].out_shapes);
        free(p->rows[i].note);
    }
    free(p->rows);
    free(p);
}

static const char *const col_names[OX_PCOL_COUNT] = {
    "index", "name", "op", "shapes", "macs", "flops", "params", "memory",
};

const char *ox_profile_col_name(ox_profile_col c)
{
    return (c >= 0 && c < OX_PCOL_COUNT) ? col_names[c] : "?";
}

bool ox_profile_col_from_name(const char *s, ox_profile_col *out)
{
    if (!s)
        return false;
    for (int i = 0; i < OX_PCOL_COUNT; i++)
        if (!strcasecmp(s, col_names[i])) {
            *out = (ox_profile_col)i;
            return true;
        }
    if (!strcmp(s, "%") || !strcasecmp(s, "pct")) {
        *out = OX_PCOL_MACS;
        return true;
    }
    if (!strcasecmp(s, "shape") || !strcasecmp(s, "output")) {
        *out = OX_PCOL_SHAPES;
        return true;
    }
    return false;
}

static int cmp_i64(int64_t a, int64_t b)
{
    return (a > b) - (a < b);
}

static int row_cmp(const ox_profile_row *a, const ox_profile_row *b,
                   ox_profile_col col)
{
    switch (col) {
    case OX_PCOL_NAME:
        return strcmp(a->name, b->name);
    case OX_PCOL_OP:
        return strcmp(a->op, b->op);
    case OX_PCOL_SHAPES:
        return strcmp(a->out_shapes, b->out_shapes);
    case OX_PCOL_MACS:
        return cmp_i64(a->macs, b->macs);
    case OX_PCOL_FLOPS:
        return cmp_i64(a->flops, b->flops);
    case OX_PCOL_PARAMS:
        return cmp_i64(a->params, b->params);
    case OX_PCOL_MEMORY:
        return cmp_i64(a->memory_bytes, b->memory_bytes);
    default:
        return 0;
    }
}

void ox_profile_sort(ox_profile *p, ox_profile_col col, bool descending)
{
    if (!p || p->n_rows < 2)
        return;
    /* Merge sort: stable, so ties stay in node order, and no qsort
     * context is needed for the column. */
    int n = p->n_rows;
    ox_profile_row *tmp = malloc((size_t)n * sizeof *tmp);
    if (!tmp)
        return;
    ox_profile_row *src = p->rows, *dst = tmp;
    for (int width = 1; width < n; width *= 2) {
        for (int lo = 0; lo < n; lo += 2 * width) {
            int mid = lo + width < n ? lo + width : n;
            int hi = lo + 2 * width < n ? lo + 2 * width : n;
            int i = lo, j = mid, k = lo;
            while (i < mid && j < hi) {
                int c = row_cmp(&src[i], &src[j], col);
                if (c == 0)
                    c = cmp_i64(src[i].index, src[j].index) * (descending ? -1 : 1);
                if (descending)
                    c = -c;
                dst[k++] = c <= 0 ? src[i++] : src[j++];
            }
            while (i < mid)
                dst[k++] = src[i++];
            while (j < hi)
                dst[k++] = src[j++];
        }
        ox_profile_row *t = src;
        src = dst;
        dst = t;
    }
    if (src != p->rows)
        memcpy(p->rows, src, (size_t)n * sizeof *tmp);
    free(tmp);
}

const char *ox_fmt_count(int64_t n, bool known, char *buf, size_t len)
{
    if (!known) {
        snprintf(buf, len, "?");
        return buf;
    }
    static const char suf[] = " KMGTPE";
    double v = (double)n;
    int k = 0;
    while (v >= 1000.0 && k < 6) {
        v /= 1000.0;
        k++;
    }
    if (k == 0)
        snprintf(buf, len, "%" PRId64, n);
    else
        snprintf(buf, len, "%.2f%c", v, suf[k]);
    return buf;
}

const char *ox_fmt_bytes(int64_t n, bool known, char *buf, size_t len)
{
    if (!known) {
        snprintf(buf, len, "?");
        return buf;
    }
    static const char *const suf[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    /* Signed: a pass may add bytes (a negative saving). */
    const char *sign = n < 0 ? "-" : "";
    double v = n < 0 ? -(double)n : (double)n;
    int k = 0;
    while (v >= 1024.0 && k < 6) {
        v /= 1024.0;
        k++;
    }
    if (k == 0)
        snprintf(buf, len, "%s%.0f B", sign, v);
    else
        snprintf(buf, len, "%s%.2f %s", sign, v, suf[k]);
    return buf;
}

/* Terminal columns of the UTF-8 code point at s (its length in *n): 2 for
 * the East Asian wide and fullwidth blocks, else 1. Names come from model
 * files (Paddle2ONNX, spox and hand-made models carry non-ASCII ones). */
static int cp_cols(const char *s, int *n)
{
    const unsigned char *p = (const unsigned char *)s;
    unsigned c = p[0];
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    for (int k = 1; k < len; k++)
        if ((p[k] & 0xC0) != 0x80)
            len = 1;   /* not UTF-8: one byte, one column */
    *n = len;
    if (len == 1)
        return 1;
    unsigned cp = len == 2 ? c & 0x1F : len == 3 ? c & 0x0F : c & 0x07;
    for (int k = 1; k < len; k++)
        cp = cp << 6 | (p[k] & 0x3F);
    bool wide = (cp >= 0x1100 && cp <= 0x115F) || (cp >= 0x2E80 && cp <= 0xA4CF) ||
                (cp >= 0xAC00 && cp <= 0xD7A3) || (cp >= 0xF900 && cp <= 0xFAFF) ||
                (cp >= 0xFE30 && cp <= 0xFE4F) || (cp >= 0xFF00 && cp <= 0xFF60) ||
                (cp >= 0xFFE0 && cp <= 0xFFE6) || (cp >= 0x1F300 && cp <= 0x1F64F) ||
                (cp >= 0x20000 && cp <= 0x3FFFD);
    return wide ? 2 : 1;
}

static int str_cols(const char *s)
{
    int cols = 0, n;
    for (; *s; s += n)
        cols += cp_cols(s, &n);
    return cols;
}

int ox_text_cols(const char *s)
{
    return s ? str_cols(s) : 0;
}

/* Shortens s to at most w columns, keeping both ends ("a...z") and whole
 * UTF-8 code points. */
static const char *clip(const char *s, int w, char *buf, size_t len)
{
    int l = (int)strlen(s);
    if (str_cols(s) <= w || w < 5 || (size_t)w * 4 + 4 > len)
        return s;
    int head = (w - 3) / 2, tail = w - 3 - head, cols = 0, n;
    const char *h = s;
    while (*h && cols + cp_cols(h, &n) <= head) {
        cols += cp_cols(h, &n);
        h += n;
    }
    /* The tail: the shortest suffix starting on a code point that fits. */
    const char *t = s + l;
    for (const char *q = h; *q; q += n) {
        if (str_cols(q) <= tail) {
            t = q;
            break;
        }
        cp_cols(q, &n);
    }
    snprintf(buf, len, "%.*s...%s", (int)(h - s), s, t);
    return buf;
}

/* s left-aligned in w columns (printf's %-Ns pads bytes, not columns). */
static void put_col(FILE *f, const char *s, int w)
{
    int pad = w - str_cols(s);
    fprintf(f, "%s%*s", s, pad > 0 ? pad : 0, "");
}

void ox_profile_print(FILE *f, const ox_profile *p, int max_rows)
{
    if (!f || !p)
        return;
    char a[64], b[64], c[64], d[160], e[160], s[160];
    fprintf(f, "%5s  %-32s %-20s %-24s %10s %7s %10s %11s\n", "#", "name", "op",
            "output shape", "MACs", "%", "params", "memory");
    int n = max_rows > 0 && max_rows < p->n_rows ? max_rows : p->n_rows;
    for (int i = 0; i < n; i++) {
        const ox_profile_row *r = &p->rows[i];
        char pct[16];
        if (r->known)
            snprintf(pct, sizeof pct, "%.2f", r->macs_pct);
        else
            snprintf(pct, sizeof pct, "?");
        fprintf(f, "%5d  ", r->index);
        put_col(f, clip(r->name, 32, e, sizeof e), 32);
        fputc(' ', f);
        put_col(f, clip(r->op, 20, s, sizeof s), 20);
        fputc(' ', f);
        put_col(f, clip(r->out_shapes, 24, d, sizeof d), 24);
        fprintf(f, " %10s %7s %10s %11s\n",
                ox_fmt_cost(r->macs, 0, r->known, r->upper, 0, a, sizeof a), pct,
                ox_fmt_count(r->params, true, b, sizeof b),
                ox_fmt_bytes(r->memory_bytes, r->memory_known, c, sizeof c));
    }
    if (n < p->n_rows)
        fprintf(f, "%5s  (%d more rows)\n", "...", p->n_rows - n);
    const ox_model_cost *mc = &p->model;
    fprintf(f, "%5s  %-32s %-20s %-24s %10s %7s %10s %11s\n", "", "total", "", "",
            ox_fmt_model_macs(mc, a, sizeof a), mc->known ? "100.00" : "?",
            ox_fmt_count(mc->params, true, b, sizeof b),
            ox_fmt_bytes(mc->memory_bytes, mc->peak_known, c, sizeof c));
    fprintf(f, "FLOPs %s, params %s (%s deduplicated), weights %s, "
            "peak activations %s",
            ox_fmt_model_flops(mc, a, sizeof a),
            ox_fmt_count(mc->params, true, b, sizeof b),
            ox_fmt_count(mc->params_dedup, true, d, sizeof d),
            ox_fmt_bytes(mc->weights_bytes, true, c, sizeof c),
            ox_fmt_bytes(mc->peak_activation_bytes, mc->peak_known, e, sizeof e));
    if (mc->n_unknown)
        fprintf(f, "; %d node(s) with unknown cost", mc->n_unknown);
    if (mc->n_upper)
        fprintf(f, "; <= : %d If node(s) counted by their larger branch", mc->n_upper);
    fputc('\n', f);
    /* How each control-flow node was counted (also rows not printed). */
    for (int i = 0; i < p->n_rows; i++)
        if (p->rows[i].note)
            fprintf(f, "  #%d %s: %s\n", p->rows[i].index, p->rows[i].name, p->rows[i].note);
}

static json_t *num_or_null(int64_t v, bool known)
{
    return known ? json_integer((json_int_t)v) : json_null();
}

json_t *ox_profile_to_json(const ox_profile *p)
{
    if (!p)
        return NULL;
    json_t *root = json_object();
    json_t *nodes = json_array();
    json_t *tot = json_object();
    if (!root || !nodes || !tot) {
        json_decref(root);
        json_decref(nodes);
        json_decref(tot);
        return NULL;
    }
    for (int i = 0; i < p->n_rows; i++) {
        const ox_profile_row *r = &p->rows[i];
        json_t *o = json_object();
        if (!o)
            break;
        json_object_set_new(o, "index", json_integer(r->index));
        json_object_set_new(o, "name", json_string(r->name));
        json_object_set_new(o, "op", json_string(r->op));
        json_object_set_new(o, "output_shapes", json_string(r->out_shapes));
        json_object_set_new(o, "macs", num_or_null(r->macs, r->known));
        json_object_set_new(o, "flops", num_or_null(r->flops, r->known));
        json_object_set_new(o, "macs_pct", r->known ? json_real(r->macs_pct) : json_null());
        json_object_set_new(o, "params", json_integer((json_int_t)r->params));
        json_object_set_new(o, "memory_bytes", num_or_null(r->memory_bytes, r->memory_known));
        json_object_set_new(o, "bytes_read", num_or_null(r->bytes_read, r->memory_known));
        json_object_set_new(o, "bytes_written", num_or_null(r->bytes_written, r->memory_known));
        json_object_set_new(o, "known", json_boolean(r->known));
        if (r->upper)
            json_object_set_new(o, "upper_bound", json_true());
        if (r->note)
            json_object_set_new(o, "cost_note", json_string(r->note));
        json_array_append_new(nodes, o);
    }
    const ox_model_cost *mc = &p->model;
    json_object_set_new(tot, "macs", num_or_null(mc->macs, mc->known));
    json_object_set_new(tot, "flops", num_or_null(mc->flops, mc->known));
    json_object_set_new(tot, "params", json_integer((json_int_t)mc->params));
    json_object_set_new(tot, "params_dedup", json_integer((json_int_t)mc->params_dedup));
    json_object_set_new(tot, "weights_bytes", json_integer((json_int_t)mc->weights_bytes));
    json_object_set_new(tot, "peak_activation_bytes",
                        num_or_null(mc->peak_activation_bytes, mc->peak_known));
    json_object_set_new(tot, "memory_bytes", num_or_null(mc->memory_bytes, mc->peak_known));
    json_object_set_new(tot, "unknown_nodes", json_integer(mc->n_unknown));
    json_object_set_new(tot, "macs_lower_bound", json_integer((json_int_t)mc->macs_lower));
    json_object_set_new(tot, "upper_bound_nodes", json_integer(mc->n_upper));
    json_object_set_new(root, "nodes", nodes);
    json_object_set_new(root, "totals", tot);
    return root;
}
