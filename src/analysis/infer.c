/* The inference engine: walks graphs in node order (subgraphs included),
 * calls each registry entry's inference function, merges results into
 * value types, keeps known values in a side table keyed by value and
 * finally publishes fully known ones as ox_value.known. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/infer_internal.h"
#include "core/ptrmap.h"

/* Deepest subgraph/function-call nesting inference follows. */
#define MAX_DEPTH 64

struct ox__state {
    ox_model *m;
    const ox_infer_opts *opts;
    ox_infer_stats stats;
    bool strict;
    ox_error *err;
    ox_ptrmap known;  /* value -> ox__kv (what is known of its contents) */
    int depth;    /* subgraph nesting, to refuse runaway recursion */
    int dead;     /* > 0 inside an If branch that is known not to run */
    /* Local functions being inferred, outermost first. Each call goes
     * through infer_graph, so depth bounds the stack. */
    const ox_function *calls[MAX_DEPTH + 2];
    int n_calls;
};

/* ---- side table ---------------------------------------------------------- */

static ox__kv **map_slot(ox__state *st, const ox_value *v, bool create)
{
    return (ox__kv **)ox_ptrmap_slot(&st->known, v, create);
}

static void map_put(ox__state *st, const ox_value *v, ox__kv *k)
{
    ox__kv **slot = map_slot(st, v, true);
    if (!slot) {
        ox__kv_free(k);
        return;
    }
    ox__kv_free(*slot);
    *slot = k;
}

static void map_free(ox__state *st)
{
    size_t pos = 0;
    void *val;
    while (ox_ptrmap_next(&st->known, &pos, NULL, &val))
        ox__kv_free(val);
    ox_ptrmap_free(&st->known);
}

/* ---- options --------------------------------------------------------------- */

static bool parse_i64(const char *s, size_t len, int64_t *out)
{
    if (!len || len > 18)
        return false;
    int64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (!isdigit((unsigned char)s[i]))
            return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
}

/* A dim symbol as exporters write them ("batch", "p2o.DynamicDimension.3",
 * "unk__12"): a letter or '_' first, then letters, digits and "_.:-/". */
static bool symbol_ok(const char *s, size_t len)
{
    if (!len || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
        return false;
    for (size_t i = 1; i < len; i++)
        if (!(isalnum((unsigned char)s[i]) || strchr("_.:-/", s[i])))
            return false;
    return true;
}

/* One dim of a --shape or the value of a --dim: a count in
 * [0, OX_DIM_OVERRIDE_MAX]. Says what is wrong in why. */
static bool parse_dim_value(const char *s, size_t len, int64_t *out, char *why, size_t wn)
{
    size_t digits = 0;
    while (digits < len && isdigit((unsigned char)s[digits]))
        digits++;
    if (len > 1 && s[0] == '-' && digits == 0) {
        size_t k = 1;
        while (k < len && isdigit((unsigned char)s[k]))
            k++;
        if (k == len) {
            snprintf(why, wn, "negative dim %.*s", (int)len, s);
            return false;
        }
    }
    if (!len || digits != len) {
        snprintf(why, wn, "'%.*s' is not a dim count", (int)len, s);
        return false;
    }
    int64_t v;
    if (!parse_i64(s, len, &v) || v > OX_DIM_OVERRIDE_MAX) {
        snprintf(why, wn, "dim %.*s is too large (at most %lld)", (int)len, s,
                 (long long)OX_DIM_OVERRIDE_MAX);
        return false;
    }
    *out = v;
    return true;
}

static void override_free(ox_shape_override *o)
{
    free(o->name);
    for (int i = 0; i < o->rank; i++)
        free(o->params[i]);
}

ox_status ox_infer_opts_add_shape(ox_infer_opts *opts, const char *arg, ox_error *err)
{
    if (!opts || !arg)
        return ox_errorf(err, OX_EINVAL, "missing --shape argument");
    const char *eq = strrchr(arg, '=');
    if (!eq || eq == arg)
        return ox_errorf(err, OX_EINVAL, "expected NAME=DIMS (e.g. input=1x3x224x224)");
    ox_shape_override o;
    memset(&o, 0, sizeof o);
    const char *p = eq + 1;
    if (!*p)
        return ox_errorf(err, OX_EINVAL, "no dims after '=' (use 'scalar' for rank 0)");
    if (strcmp(p, "scalar") != 0) {
        while (*p) {
            /* Dims are separated by ',' or by an 'x' next to a digit or
             * '?' ("1x3", "Nx3", "3xN"); an 'x' inside a symbol such as
             * "max_len" does not split it ("NxM" must be written "N,M"). */
            const char *e = p;
            while (*e && *e != ',') {
                if (*e == 'x' && e > p &&
                    (isdigit((unsigned char)e[-1]) || e[-1] == '?' ||
                     isdigit((unsigned char)e[1]) || e[1] == '?'))
                    break;
                e++;
            }
            size_t len = (size_t)(e - p);
            char why[160];
            if (o.rank >= OX_MAX_RANK) {
                override_free(&o);
                return ox_errorf(err, OX_EINVAL, "more than %d dims", OX_MAX_RANK);
            }
            if (!len) {
                override_free(&o);
                return ox_errorf(err, OX_EINVAL, "empty dim %d", o.rank);
            }
            int64_t v;
            if (isdigit((unsigned char)*p) || *p == '-') {
                if (!parse_dim_value(p, len, &v, why, sizeof why)) {
                    override_free(&o);
                    return ox_errorf(err, OX_EINVAL, "%s", why);
                }
                o.dims[o.rank] = v;
            } else if (len == 1 && *p == '?') {
                o.dims[o.rank] = -1;
            } else if (symbol_ok(p, len)) {
                o.dims[o.rank] = -1;
                if (!(o.params[o.rank] = strndup(p, len))) {
                    override_free(&o);
                    return ox_errorf(err, OX_ENOMEM, "out of memory");
                }
            } else {
                override_free(&o);
                return ox_errorf(err, OX_EINVAL,
                                 "'%.*s' is neither a count, '?' nor a symbol name", (int)len, p);
            }
            o.rank++;
            if (!*e)
                break;
            p = e + 1;
            if (!*p) {
                override_free(&o);
                return ox_errorf(err, OX_EINVAL, "trailing separator");
            }
        }
    }
    o.name = strndup(arg, (size_t)(eq - arg));
    ox_shape_override *ns = realloc(opts->shapes, (size_t)(opts->n_shapes + 1) * sizeof *ns);
    if (!o.name || !ns) {
        override_free(&o);
        if (ns)
            opts->shapes = ns;
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    }
    opts->shapes = ns;
    opts->shapes[opts->n_shapes++] = o;
    return OX_OK;
}

ox_status ox_infer_opts_add_dim(ox_infer_opts *opts, const char *arg, ox_error *err)
{
    if (!opts || !arg)
        return ox_errorf(err, OX_EINVAL, "missing --dim argument");
    const char *eq = strrchr(arg, '=');
    if (!eq || eq == arg || !eq[1])
        return ox_errorf(err, OX_EINVAL, "expected SYMBOL=VALUE (e.g. batch=1)");
    int64_t v;
    char why[160];
    if (!parse_dim_value(eq + 1, strlen(eq + 1), &v, why, sizeof why))
        return ox_errorf(err, OX_EINVAL, "%s", why);
    ox_dim_override *nd = realloc(opts->dims, (size_t)(opts->n_dims + 1) * sizeof *nd);
    if (!nd)
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    opts->dims = nd;
    nd[opts->n_dims].symbol = strndup(arg, (size_t)(eq - arg));
    nd[opts->n_dims].value = v;
    if (!nd[opts->n_dims].symbol)
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    opts->n_dims++;
    return OX_OK;
}

const char *ox_shape_override_format(const ox_shape_override *o, char *buf, size_t len)
{
    if (!buf || !len)
        return "";
    size_t off = (size_t)snprintf(buf, len, "%s=", o->name ? o->name : "");
    if (o->rank == 0 && off < len)
        snprintf(buf + off, len - off, "scalar");
    for (int d = 0; d < o->rank && off < len; d++) {
        /* ',' between two symbols: "NxM" would read back as one symbol. */
        const char *sep = d == 0 ? "" : (o->params[d] && o->params[d - 1]) ? "," : "x";
        if (o->dims[d] >= 0)
            off += (size_t)snprintf(buf + off, len - off, "%s%lld", sep, (long long)o->dims[d]);
        else
            off += (size_t)snprintf(buf + off, len - off, "%s%s", sep,
                                    o->params[d] ? o->params[d] : "?");
    }
    return buf;
}

ox_status ox_shape_override_check(const ox_shape_override *o, const ox_type *declared,
                                  const ox_infer_opts *opts, ox_error *err)
{
    char tb[256];
    if (!declared)
        return OX_OK;
    if (declared->kind != OX_TYPE_TENSOR)
        return ox_errorf(err, OX_EINVAL, "input '%s' is %s, not a tensor", o->name,
                         ox_type_str(declared, tb, sizeof tb));
    if (!declared->has_shape)
        return OX_OK;
    ox_type_str(declared, tb, sizeof tb);
    if (declared->rank != o->rank)
        return ox_errorf(err, OX_EINVAL, "input '%s' is %s (rank %d), not rank %d", o->name, tb,
                         declared->rank, o->rank);
    for (int d = 0; d < o->rank; d++) {
        int64_t have = declared->dims[d].value;
        if (have < 0)
            continue;
        int64_t want = o->dims[d] >= 0 ? o->dims[d] : ox_infer_opts_dim(opts, o->params[d]);
        if (want != have) {
            char wb[80];
            if (o->dims[d] >= 0 || want >= 0)
                snprintf(wb, sizeof wb, "%lld", (long long)want);
            else
                snprintf(wb, sizeof wb, "'%s'", o->params[d] ? o->params[d] : "?");
            return ox_errorf(err, OX_EINVAL,
                             "input '%s' dim %d is fixed at %lld, not %s (%s; only "
                             "symbolic or unknown dims can be set)", o->name, d,
                             (long long)have, wb, tb);
        }
    }
    return OX_OK;
}

/* Appends sym to a ", "-separated list unless present. */
static void add_symbol(char *list, size_t n, const char *sym)
{
    if (!sym)
        return;
    size_t sl = strlen(sym);
    for (const char *p = list; (p = strstr(p, sym)) != NULL; p += sl)
        if ((p == list || p[-1] == ' ') && (p[sl] == ',' || p[sl] == 0))
            return;
    size_t off = strlen(list);
    snprintf(list + off, n - off, "%s%s", off ? ", " : "", sym);
}

static bool type_uses_symbol(const ox_type *t, const char *sym)
{
    while (t && t->kind != OX_TYPE_TENSOR && t->kind != OX_TYPE_SPARSE_TENSOR)
        t = t->inner;
    for (int d = 0; t && t->has_shape && d < t->rank; d++)
        if (t->dims[d].param && !strcmp(t->dims[d].param, sym))
            return true;
    return false;
}

ox_status ox_infer_opts_validate(const ox_infer_opts *opts, const ox_model *m, ox_error *err)
{
    if (!opts || !m || !m->graph)
        return OX_OK;
    const ox_graph *g = m->graph;
    char ab[300];
    for (int i = 0; i < opts->n_shapes; i++) {
        const ox_shape_override *o = &opts->shapes[i];
        ox_shape_override_format(o, ab, sizeof ab);
        const ox_value *v = NULL;
        for (int k = 0; k < g->n_inputs && !v; k++)
            if (g->inputs[k]->name && !strcmp(g->inputs[k]->name, o->name))
                v = g->inputs[k];
        if (!v) {
            char names[200] = "";
            for (int k = 0; k < g->n_inputs; k++)
                if (!g->inputs[k]->init)
                    add_symbol(names, sizeof names, g->inputs[k]->name);
            return ox_errorf(err, OX_EINVAL, "--shape %s: the model has no input '%s' (inputs: %s)",
                             ab, o->name, names[0] ? names : "none");
        }
        for (int k = 0; k < i; k++)
            if (!strcmp(opts->shapes[k].name, o->name))
                return ox_errorf(err, OX_EINVAL, "--shape %s: input '%s' is given twice", ab,
                                 o->name);
        ox_error e2 = {0};
        if (ox_shape_override_check(o, v->type, opts, &e2) != OX_OK)
            return ox_errorf(err, OX_EINVAL, "--shape %s: %s", ab, e2.msg);
    }
    for (int i = 0; i < opts->n_dims; i++) {
        const ox_dim_override *d = &opts->dims[i];
        bool used = false;
        char syms[300] = "";
        for (int k = 0; k < g->n_inputs; k++) {
            const ox_value *v = g->inputs[k];
            bool overridden = false;
            for (int s = 0; s < opts->n_shapes; s++) {
                const ox_shape_override *o = &opts->shapes[s];
                if (strcmp(o->name, v->name ? v->name : ""))
                    continue;
                overridden = true;
                for (int r = 0; r < o->rank; r++) {
                    add_symbol(syms, sizeof syms, o->params[r]);
                    used = used || (o->params[r] && !strcmp(o->params[r], d->symbol));
                }
            }
            if (overridden || v->init)
                continue;
            const ox_type *t = v->type;
            while (t && t->kind != OX_TYPE_TENSOR && t->kind != OX_TYPE_SPARSE_TENSOR)
                t = t->inner;
            for (int r = 0; t && t->has_shape && r < t->rank; r++)
                add_symbol(syms, sizeof syms, t->dims[r].param);
            used = used || type_uses_symbol(v->type, d->symbol);
        }
        for (int k = 0; k < i; k++)
            if (!strcmp(opts->dims[k].symbol, d->symbol))
                return ox_errorf(err, OX_EINVAL, "--dim %s=%lld: '%s' is given twice",
                                 d->symbol, (long long)d->value, d->symbol);
        if (!used)
            return ox_errorf(err, OX_EINVAL, "--dim %s=%lld: no input has a dim named '%s' (%s%s)",
                             d->symbol, (long long)d->value, d->symbol,
                             syms[0] ? "the inputs' symbols: " : "the inputs have no symbolic dims",
                             syms);
    }
    return OX_OK;
}

void ox_infer_opts_free(ox_infer_opts *opts)
{
    if (!opts)
        return;
    for (int i = 0; i < opts->n_shapes; i++) {
        free(opts->shapes[i].name);
        for (int k = 0; k < opts->shapes[i].rank; k++)
            free(opts->shapes[i].params[k]);
    }
    free(opts->shapes);
    for (int i = 0; i < opts->n_dims; i++)
        free(opts->dims[i].symbol);
    free(opts->dims);
    opts->shapes = NULL;
    opts->dims = NULL;
    opts->n_shapes = opts->n_dims = 0;
}

/* ---- type helpers ------------------------------------------------------------ */

ox_type *ox__tt(ox_dtype elem, int rank)
{
    ox_type *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->kind = OX_TYPE_TENSOR;
    t->elem = elem;
    if (rank >= 0 && rank <= OX_MAX_RANK * 4) {
        t->has_shape = true;
        t->rank = rank;
        if (rank) {
            t->dims = calloc((size_t)rank, sizeof *t->dims);
            if (!t->dims) {
                free(t);
                return NULL;
            }
            for (int i = 0; i < rank; i++)
                t->dims[i].value = -1;
        }
    }
    return t;
}

ox_type *ox__tt_copy(const ox_type *src, ox_dtype elem)
{
    ox_type *t;
    if (!src || src->kind != OX_TYPE_TENSOR) {
        if (src && src->kind != OX_TYPE_NONE && !elem)
            return ox_type_clone(src);
        return ox__tt(elem, -1);
    }
    t = ox__tt(elem ? elem : src->elem, src->has_shape ? src->rank : -1);
    if (t && src->has_shape)
        for (int i = 0; i < src->rank; i++)
            ox__dim_copy(t, i, &src->dims[i]);
    return t;
}

void ox__dim_set(ox_type *t, int k, int64_t v)
{
    if (!t || k < 0 || k >= t->rank || !t->dims)
        return;
    free(t->dims[k].param);
    t->dims[k].param = NULL;
    t->dims[k].value = v < 0 ? -1 : v;
}

void ox__dim_sym(ox_type *t, int k, const char *sym)
{
    if (!t || k < 0 || k >= t->rank || !t->dims)
        return;
    free(t->dims[k].param);
    t->dims[k].param = sym ? ox_strdup(sym) : NULL;
    t->dims[k].value = -1;
}

void ox__dim_copy(ox_type *t, int k, const ox_dim *src)
{
    if (!src) {
        ox__dim_set(t, k, -1);
        return;
    }
    if (src->value >= 0)
        ox__dim_set(t, k, src->value);
    else
        ox__dim_sym(t, k, src->param);
}

bool ox__dim_known(const ox_type *t, int k)
{
    return t && t->has_shape && k >= 0 && k < t->rank && t->dims[k].value >= 0;
}

int64_t ox__dimv(const ox_type *t, int k)
{
    return ox__dim_known(t, k) ? t->dims[k].value : -1;
}

bool ox__dim_same(const ox_dim *a, const ox_dim *b)
{
    if (a->value >= 0 && b->value >= 0)
        return a->value == b->value;
    if (a->value < 0 && b->value < 0 && a->param && b->param)
        return !strcmp(a->param, b->param);
    return false;
}

bool ox__axis(int64_t axis, int rank, int *out)
{
    if (axis < -(int64_t)rank || axis >= rank)
        return false;
    *out = (int)(axis < 0 ? axis + rank : axis);
    return true;
}

ox_dtype ox__attr_dtype(const ox_node *n, const char *name, ox_dtype dflt)
{
    int64_t v = ox_node_attr_i(n, name, -12345);
    if (v == -12345 || !ox_dtype_valid((int)v) || v == 0)
        return dflt;
    return (ox_dtype)v;
}

/* Merges one dim pair for broadcasting; false on a conflict. */
static bool bcast_dim(const ox_dim *a, const ox_dim *b, ox_type *out, int k)
{
    if (a->value >= 0 && b->value >= 0) {
        if (a->value == b->value || b->value == 1)
            ox__dim_set(out, k, a->value);
        else if (a->value == 1)
            ox__dim_set(out, k, b->value);
        else
            return false;
        return true;
    }
    if (a->value == 1) {
        ox__dim_copy(out, k, b);
    } else if (b->value == 1) {
        ox__dim_copy(out, k, a);
    } else if (a->value >= 0) {
        ox__dim_set(out, k, a->value);   /* b must be 1 or equal */
    } else if (b->value >= 0) {
        ox__dim_set(out, k, b->value);
    } else if (a->param && b->param && !strcmp(a->param, b->param)) {
        ox__dim_sym(out, k, a->param);
    } else {
        ox__dim_set(out, k, -1);
    }
    return true;
}

bool ox_infer_broadcast(const ox_type *a, const ox_type *b, ox_type *out)
{
    int r = a->rank > b->rank ? a->rank : b->rank;
    if (out->rank != r)
        return false;
    bool ok = true;
    static const ox_dim one = {.value = 1};
    for (int i = 0; i < r; i++) {
        int ia = i - (r - a->rank), ib = i - (r - b->rank);
        const ox_dim *da = ia >= 0 ? &a->dims[ia] : &one;
        const ox_dim *db = ib >= 0 ? &b->dims[ib] : &one;
        if (!bcast_dim(da, db, out, i)) {
            ox__dim_set(out, i, -1);
            ok = false;
        }
    }
    return ok;
}

/* ---- node context helpers -------------------------------------------------------- */

int ox__nin(const ox_infer_node_ctx *c)
{
    return c->n->n_inputs;
}

bool ox__has_in(const ox_infer_node_ctx *c, int i)
{
    return i >= 0 && i < c->n->n_inputs && c->n->inputs[i] != NULL;
}

const ox_type *ox__in_type(const ox_infer_node_ctx *c, int i)
{
    if (!ox__has_in(c, i))
        return NULL;
    const ox_type *t = c->n->inputs[i]->type;
    if (!t || t->kind == OX_TYPE_NONE)
        return NULL;
    return t;
}

const ox_type *ox__in_shape(const ox_infer_node_ctx *c, int i)
{
    const ox_type *t = ox__in_type(c, i);
    if (!t || t->kind != OX_TYPE_TENSOR || !t->has_shape)
        return NULL;
    return t;
}

ox_dtype ox__in_elem(const ox_infer_node_ctx *c, int i)
{
    const ox_type *t = ox__in_type(c, i);
    return t && t->kind == OX_TYPE_TENSOR ? t->elem : OX_DT_UNDEFINED;
}

int ox__in_rank(const ox_infer_node_ctx *c, int i)
{
    const ox_type *t = ox__in_shape(c, i);
    return t ? t->rank : -1;
}

const ox__kv *ox__in_kv(ox_infer_node_ctx *c, int i)
{
    if (!ox__has_in(c, i))
        return NULL;
    return ox__kv_of(c, c->n->inputs[i]);
}

const ox__kv *ox__kv_of(ox_infer_node_ctx *c, const ox_value *v)
{
    if (!v)
        return NULL;
    ox__kv **slot = map_slot(c->st, v, false);
    if (slot && *slot)
        return *slot;
    const ox_tensor *t = v->init ? v->init : v->known;
    if (!t)
        return NULL;
    ox__kv *k = ox__kv_from_tensor(t);
    if (!k)
        return NULL;
    map_put(c->st, v, k);
    slot = map_slot(c->st, v, false);
    return slot ? *slot : NULL;
}

int ox__in_ints(ox_infer_node_ctx *c, int i, int64_t *out, int max)
{
    const ox__kv *k = ox__in_kv(c, i);
    if (!k || k->rank > 1 || k->n > max || !ox__kv_all_known(k))
        return -1;
    for (int64_t j = 0; j < k->n; j++)
        out[j] = ox__kv_get_i(k, j);
    return (int)k->n;
}

/* Replaces dst's contents by src's (src is consumed), keeping dst's
 * address: inference functions may still hold dst. */
static void type_assign(ox_type *dst, ox_type *src)
{
    ox_type tmp = *dst;
    *dst = *src;
    *src = tmp;
    ox_type_free(src);
}

/* Keeps information the model declared where inference knows less
 * (an exporter's value_info can carry dims that need runtime values).
 * Merges into inf in place. */
static void merge_types(ox_type *inf, const ox_type *old)
{
    if (!old || old->kind == OX_TYPE_NONE || old == inf)
        return;
    if (inf->kind == OX_TYPE_NONE) {
        ox_type *t = ox_type_clone(old);
        if (t)
            type_assign(inf, t);
        return;
    }
    if (inf->kind != OX_TYPE_TENSOR || old->kind != OX_TYPE_TENSOR)
        return;
    if (!inf->elem)
        inf->elem = old->elem;
    if (!inf->has_shape && old->has_shape) {
        ox_type *t = ox__tt_copy(old, inf->elem);
        if (t)
            type_assign(inf, t);
    } else if (inf->has_shape && old->has_shape && inf->rank == old->rank) {
        for (int k = 0; k < inf->rank; k++) {
            const ox_dim *d = &inf->dims[k];
            if (d->value < 0 && !d->param)
                ox__dim_copy(inf, k, &old->dims[k]);
            else if (d->value < 0 && d->param && old->dims[k].value >= 0)
                ox__dim_set(inf, k, old->dims[k].value);
        }
    }
}

/* Applies --dim overrides to a type in place. */
int64_t ox_infer_opts_dim(const ox_infer_opts *opts, const char *symbol)
{
    for (int i = 0; opts && symbol && i < opts->n_dims; i++)
        if (strcmp(opts->dims[i].symbol, symbol) == 0)
            return opts->dims[i].value;
    return -1;
}

static void apply_dim_overrides(const ox_infer_opts *o, ox_type *t)
{
    if (!o || !t)
        return;
    if (t->kind == OX_TYPE_TENSOR || t->kind == OX_TYPE_SPARSE_TENSOR) {
        if (!t->has_shape)
            return;
        for (int k = 0; k < t->rank; k++) {
            if (t->dims[k].value >= 0 || !t->dims[k].param)
                continue;
            int64_t v = ox_infer_opts_dim(o, t->dims[k].param);
            if (v >= 0)
                ox__dim_set(t, k, v);
        }
    } else {
        apply_dim_overrides(o, t->inner);
    }
}

/* Takes t and k out of circulation until the running inference function
 * returns (see ox__set_out). When the list cannot grow they are leaked:
 * freeing them could be a use after free. */
static void park(ox_infer_node_ctx *c, ox_type *t, ox__kv *k)
{
    if (!t && !k)
        return;
    if (c->n_parked == c->cap_parked) {
        int cap = c->cap_parked ? c->cap_parked * 2 : 8;
        ox__parked *np = realloc(c->parked, (size_t)cap * sizeof *np);
        if (!np)
            return;
        c->parked = np;
        c->cap_parked = cap;
    }
    c->parked[c->n_parked++] = (ox__parked){t, k};
}

static void unpark_all(ox_infer_node_ctx *c)
{
    for (int i = 0; i < c->n_parked; i++) {
        ox_type_free(c->parked[i].t);
        ox__kv_free(c->parked[i].k);
    }
    free(c->parked);
    c->parked = NULL;
    c->n_parked = c->cap_parked = 0;
}

static ox_value *out_value(const ox_infer_node_ctx *c, int i)
{
    return i >= 0 && i < c->n->n_outputs ? c->n->outputs[i] : NULL;
}

const ox_type *ox__out_type(const ox_infer_node_ctx *c, int i)
{
    const ox_value *v = out_value(c, i);
    return v ? v->type : NULL;
}

ox_status ox__set_out(ox_infer_node_ctx *c, int i, ox_type *t)
{
    ox_value *v = out_value(c, i);
    if (!v || !t) {
        park(c, t, NULL);
        return OX_OK;
    }
    if (t == v->type)
        return OX_OK;
    if (c->st->opts)
        apply_dim_overrides(c->st->opts, t);
    merge_types(t, v->type);
    park(c, v->type, NULL);
    v->type = t;
    return OX_OK;
}

void ox__set_kv(ox_infer_node_ctx *c, int i, ox__kv *k)
{
    ox_value *v = out_value(c, i);
    if (!v || !k) {
        park(c, NULL, k);
        return;
    }
    ox__kv **slot = map_slot(c->st, v, true);
    if (!slot) {
        park(c, NULL, k);
        return;
    }
    if (*slot != k)
        park(c, NULL, *slot);
    *slot = k;
}

ox_status ox__fail(ox_infer_node_ctx *c, const char *fmt, ...)
{
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ox_errorf(c->err, OX_ESHAPE, "node '%s' (%s): %s",
                     c->n->name ? c->n->name : "", c->n->op_type ? c->n->op_type : "?", msg);
}

ox_status ox__pass_through(ox_infer_node_ctx *c, int i, int j)
{
    const ox_type *t = ox__in_type(c, j);
    if (!t)
        return OX_OK;
    return ox__set_out(c, i, ox_type_clone(t));
}

/* ---- graph walk ------------------------------------------------------------------ */

static int64_t opset_for(const ox_model *m, const char *domain)
{
    const char *d = domain && strcmp(domain, "ai.onnx") ? domain : "";
    int64_t v = m ? ox_model_opset(m, d) : -1;
    if (v < 0 && m && !*d)
        v = ox_model_opset(m, "ai.onnx");
    return v < 0 ? INT32_MAX : v;
}

static void note_problem(ox__state *st, const char *msg)
{
    if (st->opts && st->opts->on_problem)
        st->opts->on_problem(st->opts->problem_ctx, msg);
    if (!st->stats.first_problem[0])
        snprintf(st->stats.first_problem, sizeof st->stats.first_problem, "%.250s", msg);
}

static ox_status infer_graph(ox__state *st, ox_graph *g);

static ox_function *find_function(const ox_model *m, const ox_node *n)
{
    for (int i = 0; m && i < m->n_functions; i++) {
        ox_function *f = &m->functions[i];
        if (f->name && n->op_type && !strcmp(f->name, n->op_type) &&
            !strcmp(f->domain ? f->domain : "", n->domain ? n->domain : ""))
            return f;
    }
    return NULL;
}

static ox_status infer_body(ox__state *st, ox_node *n, ox_function *f);

/* A call of a model-local function: its body is inferred with the call's
 * input types and known values (attribute references inside the body are
 * not substituted, so ops that need them stay untyped). */
static ox_status infer_call(ox__state *st, ox_node *n, ox_function *f)
{
    ox_graph *b = f->body;
    if (!b || st->depth > 32)
        return OX_OK;
    /* A function the call stack already runs would reset the body types
     * the outer call still reads: ONNX forbids recursion, and so do we. */
    for (int i = 0; i < st->n_calls; i++) {
        if (st->calls[i] != f)
            continue;
        char path[200];
        size_t off = 0;
        for (int j = i; j < st->n_calls && off < sizeof path; j++)
            off += (size_t)snprintf(path + off, sizeof path - off, "%s -> ",
                                    st->calls[j]->name);
        if (off < sizeof path)
            snprintf(path + off, sizeof path - off, "%s", f->name);
        return ox_errorf(st->err, OX_EMODEL, "function '%s' is recursive (%s)", f->name,
                         path);
    }
    if (st->n_calls >= (int)(sizeof st->calls / sizeof *st->calls))
        return OX_OK;
    st->calls[st->n_calls++] = f;
    ox_status rc = infer_body(st, n, f);
    st->n_calls--;
    return rc;
}

static ox_status infer_body(ox__state *st, ox_node *n, ox_function *f)
{
    ox_graph *b = f->body;
    for (int i = 0; i < b->n_nodes; i++)
        for (int j = 0; j < b->nodes[i]->n_outputs; j++)
            if (b->nodes[i]->outputs[j]) {
                ox_type_free(b->nodes[i]->outputs[j]->type);
                b->nodes[i]->outputs[j]->type = NULL;
            }
    for (int i = 0; i < b->n_inputs; i++) {
        ox_value *formal = b->inputs[i];
        ox_value *actual = i < n->n_inputs ? n->inputs[i] : NULL;
        if (!formal)
            continue;
        ox_type_free(formal->type);
        formal->type = actual && actual->type ? ox_type_clone(actual->type) : NULL;
        ox__kv **slot = actual ? map_slot(st, actual, false) : NULL;
        ox__kv *k = slot && *slot ? ox__kv_clone(*slot)
                  : actual && (actual->init || actual->known)
                        ? ox__kv_from_tensor(actual->init ? actual->init : actual->known)
                        : NULL;
        if (k)
            map_put(st, formal, k);
        else {
            ox__kv **fs = map_slot(st, formal, false);
            if (fs && *fs) {
                ox__kv_free(*fs);
                *fs = NULL;
            }
        }
    }
    ox_status rc = infer_graph(st, b);
    if (rc != OX_OK)
        return rc;
    for (int i = 0; i < n->n_outputs && i < b->n_outputs; i++) {
        ox_value *v = n->outputs[i], *fo = b->outputs[i];
        if (!v || !fo)
            continue;
        ox_type *t = fo->type ? ox_type_clone(fo->type) : NULL;
        if (t) {
            merge_types(t, v->type);
            ox_type_free(v->type);
            v->type = t;
        }
        ox__kv **slot = map_slot(st, fo, false);
        if (slot && *slot)
            map_put(st, v, ox__kv_clone(*slot));
    }
    return OX_OK;
}

static ox_status infer_one(ox__state *st, ox_node *n)
{
    st->stats.nodes++;
    const ox_op_schema *s = ox_op_for_node(st->m, n);
    if (!s || !s->infer) {
        ox_function *f = find_function(st->m, n);
        if (f)
            return infer_call(st, n, f);
        st->stats.unknown_ops++;
        return OX_OK;
    }
    ox_error e;
    ox_error_clear(&e);
    ox_infer_node_ctx c = {
        .st = st, .m = st->m, .n = n, .opset = opset_for(st->m, n->domain),
        .schema = s, .err = &e,
    };
    ox_status rc = s->infer(&c);
    unpark_all(&c);
    if (rc != OX_OK && st->dead) {
        /* Dead code may well be inconsistent for these inputs (the other
         * branch of a rank switch): not a problem of the model. */
        return OX_OK;
    }
    if (rc != OX_OK) {
        st->stats.failed++;
        note_problem(st, e.msg[0] ? e.msg : ox_strerror(rc));
        if (st->strict)
            return ox_errorf(st->err, rc, "%s", e.msg);
    }
    return OX_OK;
}

/* The library's topological order of g (src/ir); NULL when the stored
 * order is already one, or on a cycle (then the stored order is used and
 * later nodes see untyped inputs). */
static ox_node **topo_order(const ox_graph *g)
{
    int n = g->n_nodes;
    int *pos = malloc(((size_t)n + 1) * sizeof *pos);
    if (!pos || ox_graph_topo_order(g, pos, NULL, NULL) != OX_OK) {
        free(pos);
        return NULL;
    }
    ox_node **order = NULL;
    for (int i = 0; i < n; i++)
        if (pos[i] != i) {
            order = malloc((size_t)n * sizeof *order);
            for (int k = 0; order && k < n; k++)
                order[k] = g->nodes[pos[k]];
            break;
        }
    free(pos);
    return order;
}

static ox_status infer_graph(ox__state *st, ox_graph *g)
{
    if (!g)
        return OX_OK;
    if (st->depth > MAX_DEPTH)
        return ox_errorf(st->err, OX_EMODEL, "subgraphs nested too deeply");
    st->depth++;
    ox_status rc = OX_OK;
    ox_node **order = topo_order(g);
    for (int i = 0; i < g->n_nodes && rc == OX_OK; i++)
        rc = infer_one(st, order ? order[i] : g->nodes[i]);
    free(order);
    st->depth--;
    return rc;
}

ox_status ox__infer_subgraph(ox_infer_node_ctx *c, ox_graph *g)
{
    return infer_graph(c->st, g);
}

ox_status ox__infer_dead_subgraph(ox_infer_node_ctx *c, ox_graph *g)
{
    c->st->dead++;
    ox_status rc = infer_graph(c->st, g);
    c->st->dead--;
    return rc;
}

/* ---- model entry points ---------------------------------------------------------- */

static ox_status apply_shape_override(ox__state *st, const ox_shape_override *o)
{
    ox_graph *g = st->m->graph;
    ox_value *v = NULL;
    for (int i = 0; i < g->n_inputs; i++)
        if (g->inputs[i] && g->inputs[i]->name && !strcmp(g->inputs[i]->name, o->name))
            v = g->inputs[i];
    if (!v)
        return ox_errorf(st->err, OX_EINVAL, "--shape: the model has no input named '%s'",
                         o->name);
    /* Not checked against v->type here: a re-run with another override
     * sees the previous override's type. Front ends check the file's
     * types first (ox_infer_opts_validate / ox_shape_override_check). */
    ox_dtype elem = v->type && v->type->kind == OX_TYPE_TENSOR ? v->type->elem : OX_DT_UNDEFINED;
    ox_type *t = ox__tt(elem, o->rank);
    if (!t)
        return ox_errorf(st->err, OX_ENOMEM, "out of memory");
    for (int k = 0; k < o->rank; k++) {
        if (o->dims[k] >= 0)
            ox__dim_set(t, k, o->dims[k]);
        else if (o->params[k])
            ox__dim_sym(t, k, o->params[k]);
    }
    ox_type_free(v->type);
    v->type = t;
    return OX_OK;
}

/* ---- fixing declared types ---------------------------------------------------- */

typedef struct fix_binding {
    char *symbol;   /* owned: a declaration it came from may be replaced */
    int64_t value;
} fix_binding;

typedef struct fix_ctx {
    fix_binding *b;
    int n;
} fix_ctx;

static int64_t fix_lookup(const fix_ctx *f, const char *sym)
{
    for (int i = 0; sym && i < f->n; i++)
        if (f->b[i].symbol && !strcmp(f->b[i].symbol, sym))
            return f->b[i].value;
    return -1;
}

static void fix_type(const fix_ctx *f, ox_type *t, int depth)
{
    if (!t || depth > 64)
        return;
    if ((t->kind == OX_TYPE_TENSOR || t->kind == OX_TYPE_SPARSE_TENSOR) && t->has_shape) {
        for (int k = 0; t->dims && k < t->rank; k++) {
            int64_t v = t->dims[k].value < 0 ? fix_lookup(f, t->dims[k].param) : -1;
            if (v >= 0)
                ox__dim_set(t, k, v);
        }
    }
    fix_type(f, t->inner, depth + 1);
}

static void visit_fix(ox_graph *g, void *ctx)
{
    for (int i = 0; i < g->n_values; i++)
        fix_type(ctx, g->values[i]->decl, 0);
}

ox_status ox_infer_fix_declared(ox_model *m, const ox_infer_opts *opts, ox_error *err)
{
    if (!m || !m->graph || !opts || (!opts->n_shapes && !opts->n_dims))
        return OX_OK;
    ox_graph *g = m->graph;
    fix_ctx f = {0};
    size_t cap = (size_t)opts->n_dims + (size_t)opts->n_shapes * OX_MAX_RANK + 1;
    f.b = calloc(cap, sizeof *f.b);
    if (!f.b)
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    for (int i = 0; i < opts->n_dims; i++)
        f.b[f.n++] = (fix_binding){ox_strdup(opts->dims[i].symbol), opts->dims[i].value};
    ox_status rc = OX_OK;
    for (int i = 0; i < opts->n_shapes && rc == OX_OK; i++) {
        const ox_shape_override *o = &opts->shapes[i];
        ox_value *v = NULL;
        for (int j = 0; j < g->n_inputs; j++)
            if (g->inputs[j]->name && !strcmp(g->inputs[j]->name, o->name))
                v = g->inputs[j];
        if (!v)
            continue;
        const ox_type *d = v->decl ? v->decl : v->type;
        /* A symbol the input declared and the override gives a value. */
        if (d && d->kind == OX_TYPE_TENSOR && d->has_shape && d->rank == o->rank && d->dims)
            for (int k = 0; k < o->rank; k++)
                if (d->dims[k].value < 0 && d->dims[k].param && o->dims[k] >= 0 &&
                    fix_lookup(&f, d->dims[k].param) < 0)
                    f.b[f.n++] = (fix_binding){ox_strdup(d->dims[k].param), o->dims[k]};
        ox_dtype elem = d && d->kind == OX_TYPE_TENSOR ? d->elem : OX_DT_UNDEFINED;
        ox_type *t = ox__tt(elem, o->rank);
        if (!t) {
            rc = ox_errorf(err, OX_ENOMEM, "out of memory");
            break;
        }
        for (int k = 0; k < o->rank; k++) {
            if (o->dims[k] >= 0)
                ox__dim_set(t, k, o->dims[k]);
            else if (o->params[k])
                ox__dim_sym(t, k, o->params[k]);
            else if (d && d->has_shape && d->rank == o->rank && d->dims)
                ox__dim_copy(t, k, &d->dims[k]);  /* "?" keeps what was declared */
        }
        if (d && d->denotation && !t->denotation)
            t->denotation = strdup(d->denotation);
        ox_type_free(v->decl);
        v->decl = t;
    }
    if (rc == OX_OK)
        ox_graph_visit(g, visit_fix, &f);
    for (int i = 0; i < f.n; i++)
        free(f.b[i].symbol);
    free(f.b);
    return rc;
}

static void visit_dim_overrides(ox_graph *g, void *ctx)
{
    ox__state *st = ctx;
    for (int i = 0; i < g->n_values; i++)
        if (g->values[i])
            apply_dim_overrides(st->opts, g->values[i]->type);
}

/* Forgets stale known values and types initializers from their data
 * (the loader may leave an initializer's type to us). */
static void visit_forget(ox_graph *g, void *ctx)
{
    (void)ctx;
    for (int i = 0; i < g->n_values; i++) {
        ox_value *v = g->values[i];
        if (!v)
            continue;
        ox_infer_forget_value(v);
        if (v->init && (!v->type || v->type->kind == OX_TYPE_NONE ||
                        (v->type->kind == OX_TYPE_TENSOR && !v->type->has_shape))) {
            ox_type *t = ox_type_new_tensor(v->init->dtype, v->init->rank, v->init->dims);
            if (t) {
                ox_type_free(v->type);
                v->type = t;
            }
        }
    }
}

static void visit_reset(ox_graph *g, void *ctx)
{
    (void)ctx;
    for (int i = 0; i < g->n_nodes; i++) {
        ox_node *n = g->nodes[i];
        for (int j = 0; j < n->n_outputs; j++) {
            if (n->outputs[j]) {
                ox_type_free(n->outputs[j]->type);
                n->outputs[j]->type = NULL;
            }
        }
    }
}

static void visit_publish(ox_graph *g, void *ctx)
{
    ox__state *st = ctx;
    for (int i = 0; i < g->n_values; i++) {
        ox_value *v = g->values[i];
        if (!v)
            continue;
        if (!v->type || v->type->kind == OX_TYPE_NONE) {
            st->stats.untyped_values++;
            continue;
        }
        if (!v->is_input && !v->is_output && !v->init && v->producer &&
            !(st->opts && st->opts->no_value_info))
            v->has_value_info = true;
        if (v->init || !v->producer)
            continue;
        ox__kv **slot = map_slot(st, v, false);
        if (slot && *slot && ox__kv_all_known(*slot)) {
            ox_tensor_free(v->known);
            v->known = ox__kv_to_tensor(*slot);
        }
    }
}

ox_status ox_infer_model(ox_model *m, const ox_infer_opts *opts, ox_error *err)
{
    if (!m || !m->graph)
        return ox_errorf(err, OX_EINVAL, "no model");
    ox__state st;
    memset(&st, 0, sizeof st);
    st.m = m;
    st.opts = opts;
    st.strict = opts && opts->strict;
    st.err = err;
    ox_status rc = OX_OK;
    if (opts) {
        for (int i = 0; i < opts->n_shapes && rc == OX_OK; i++)
            rc = apply_shape_override(&st, &opts->shapes[i]);
        if (rc != OX_OK)
            return rc;
        if (opts->n_dims)
            ox_graph_visit(m->graph, visit_dim_overrides, &st);
    }
    if (opts && opts->reset)
        ox_graph_visit(m->graph, visit_reset, NULL);
    ox_graph_visit(m->graph, visit_forget, NULL);
    for (int i = 0; opts && i < opts->n_input_values; i++) {
        const ox_input_value *iv = &opts->input_values[i];
        ox_value *v = NULL;
        for (int j = 0; iv->name && j < m->graph->n_inputs; j++)
            if (m->graph->inputs[j] && m->graph->inputs[j]->name &&
                !strcmp(m->graph->inputs[j]->name, iv->name))
                v = m->graph->inputs[j];
        if (!v) {
            map_free(&st);
            return ox_errorf(err, OX_EINVAL, "input value for unknown input '%s'",
                             iv->name ? iv->name : "");
        }
        ox__kv *k = ox__kv_from_tensor(iv->value);
        if (k)
            map_put(&st, v, k);
    }
    rc = infer_graph(&st, m->graph);
    if (rc == OX_OK)
        ox_graph_visit(m->graph, visit_publish, &st);
    /* Which known values and shapes come from an overridable initializer's
     * default (ox_value_constant then gives no constant for them). */
    ox_model_mark_override_deps(m);
    map_free(&st);
    if (opts && opts->stats)
        *opts->stats = st.stats;
    return rc;
}

ox_status ox_infer_node(ox_node *n, ox_error *err)
{
    if (!n || !n->graph)
        return ox_errorf(err, OX_EINVAL, "node has no graph");
    ox__state st;
    memset(&st, 0, sizeof st);
    st.m = n->graph->model;
    st.strict = true;
    st.err = err;
    ox_status rc = infer_one(&st, n);
    for (int i = 0; i < n->n_outputs; i++) {
        ox_value *v = n->outputs[i];
        if (!v)
            continue;
        ox__kv **slot = map_slot(&st, v, false);
        ox_tensor_free(v->known);
        v->known = (slot && *slot) ? ox__kv_to_tensor(*slot) : NULL;
    }
    ox_node_mark_override_deps(n);   /* a known value from a default is no constant */
    map_free(&st);
    return rc;
}

const ox_tensor *ox_infer_known_value(const ox_value *v)
{
    if (!v)
        return NULL;
    return v->init ? v->init : v->known;
}

void ox_infer_forget_value(ox_value *v)
{
    if (!v)
        return;
    ox_tensor_free(v->known);
    v->known = NULL;
}
