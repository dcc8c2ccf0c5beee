/* Inputs for running a model: the library form of `run --input/--fill/
 * --random`, shared by bench, optimize --check and the TUI's benchmark.
 * Random index inputs of Gather are kept inside the gathered axis so that
 * runs do not fail; unknown dims are never guessed silently. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "onnxscope/randinput.h"
#include "onnxscope/testdata.h"

uint32_t ox_rand_u32(uint32_t *s)
{
    uint32_t t = (*s += 0x6D2B79F5u);
    t = (t ^ (t >> 15)) * (t | 1u);
    t ^= t + (t ^ (t >> 7)) * (t | 61u);
    return t ^ (t >> 14);
}

static double rand_unit(uint32_t *s)
{
    return ox_rand_u32(s) / 4294967296.0;
}

/* Size of the indexed axis of the tensor that v indexes through Gather, or 0. */
static int64_t gather_bound(const ox_model *m, const ox_value *v)
{
    const ox_graph *g = m->graph;
    int64_t best = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const ox_node *n = g->nodes[i];
        if (!(ox_node_is(n, "Gather") || ox_node_is(n, "GatherElements")) ||
            n->n_inputs < 2 || n->inputs[1] != v || !n->inputs[0])
            continue;
        const ox_value *d = n->inputs[0];
        int64_t axis = ox_node_attr_i(n, "axis", 0);
        int64_t dim = -1;
        if (d->init) {
            if (axis < 0)
                axis += d->init->rank;
            if (axis >= 0 && axis < d->init->rank)
                dim = d->init->dims[axis];
        } else if (d->type && d->type->kind == OX_TYPE_TENSOR && d->type->has_shape) {
            if (axis < 0)
                axis += d->type->rank;
            if (axis >= 0 && axis < d->type->rank)
                dim = d->type->dims[axis].value;
        }
        if (dim > 0 && (best == 0 || dim < best))
            best = dim;
    }
    return best;
}

/* A scalar constant (initializer or Constant node output) equal to 1. */
static bool is_one(const ox_value *v)
{
    const ox_tensor *t = v ? v->init : NULL;
    const ox_node *p = v ? v->producer : NULL;
    if (!t && p && ox_node_is(p, "Constant")) {
        const ox_attr *a = ox_node_attr(p, "value");
        t = a && a->type == OX_ATTR_TENSOR ? a->t : NULL;
    }
    return t && t->numel == 1 && ox_tensor_data(t) && ox_tensor_get_f64(t, 0) == 1.0;
}

/* Whether integer input v is an attention mask: through Cast/Unsqueeze
 * (depth <= 4) it reaches 1 - m (or m - 1), the additive-mask form, or the
 * mask input of com.microsoft Attention / MultiHeadAttention. Real masks
 * hold 0 and 1 (what the attention fusion assumes), so random ones do too. */
static bool mask_like(const ox_value *v, int depth)
{
    for (int i = 0; v && depth < 4 && i < v->n_uses; i++) {
        const ox_node *n = v->uses[i].node;
        int k = v->uses[i].input;
        if (k < 0)
            continue;
        if (!strcmp(n->domain, "com.microsoft") &&
            ((ox_node_is(n, "Attention") && k == 3) ||
             (ox_node_is(n, "MultiHeadAttention") && k == 4)))
            return true;
        if (!ox_node_is_default_domain(n))
            continue;
        if (ox_node_is(n, "Sub") && n->n_inputs == 2 && is_one(n->inputs[1 - k]))
            return true;
        if ((ox_node_is(n, "Cast") || ox_node_is(n, "Unsqueeze")) && k == 0 &&
            n->n_outputs >= 1 && mask_like(n->outputs[0], depth + 1))
            return true;
    }
    return false;
}

/* ---- options -------------------------------------------------------------- */

static ox_status add_src(ox_input_opts *in, const char *opt, const char *arg, ox_error *err)
{
    bool fill = strcmp(opt, "fill") == 0;
    const char *eq = strchr(arg, '=');
    if (fill && (!eq || eq == arg || !eq[1]))
        return ox_errorf(err, OX_EINVAL, "--fill %s: expected NAME=VALUE (e.g. sr=16000)", arg);
    if (!fill && (!*arg || (eq && (eq == arg || !eq[1]))))
        return ox_errorf(err, OX_EINVAL, "--input %s: expected NAME=FILE.pb or FILE.pb", arg);
    ox_input_src s = {0};
    if (eq)
        s.name = strndup(arg, (size_t)(eq - arg));
    char *val = strdup(eq ? eq + 1 : arg);
    if (fill)
        s.fill = val;
    else
        s.file = val;
    ox_input_src *ns = realloc(in->src, (size_t)(in->n_src + 1) * sizeof *ns);
    if (!val || (eq && !s.name) || !ns) {
        free(s.name);
        free(val);
        if (ns)
            in->src = ns;
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    }
    in->src = ns;
    in->src[in->n_src++] = s;
    return OX_OK;
}

static bool parse_count(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || errno || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

ox_status ox_input_option(ox_infer_opts *shapes, ox_input_opts *in, const char *opt,
                          const char *arg, ox_error *err)
{
    if (!opt || !arg)
        return ox_errorf(err, OX_EINVAL, "missing option argument");
    ox_error e2 = {0};
    if (shapes && !strcmp(opt, "shape")) {
        if (ox_infer_opts_add_shape(shapes, arg, &e2) != OX_OK)
            return ox_errorf(err, e2.status, "--shape %s: %s", arg, e2.msg);
        return OX_OK;
    }
    if (shapes && !strcmp(opt, "dim")) {
        if (ox_infer_opts_add_dim(shapes, arg, &e2) != OX_OK)
            return ox_errorf(err, e2.status, "--dim %s: %s", arg, e2.msg);
        return OX_OK;
    }
    if (!in)
        return ox_errorf(err, OX_EUNSUPPORTED, "--%s is not handled here", opt);
    if (!strcmp(opt, "input") || !strcmp(opt, "fill"))
        return add_src(in, opt, arg, err);
    if (!strcmp(opt, "int-max")) {
        if (!parse_count(arg, 1, INT64_MAX, &in->int_max))
            return ox_errorf(err, OX_EINVAL, "--int-max %s: expected an integer >= 1", arg);
        return OX_OK;
    }
    if (!strcmp(opt, "default-dim")) {
        if (!parse_count(arg, 0, OX_DIM_OVERRIDE_MAX, &in->default_dim))
            return ox_errorf(err, OX_EINVAL, "--default-dim %s: expected a count 0..%lld", arg,
                             (long long)OX_DIM_OVERRIDE_MAX);
        in->has_default_dim = true;
        return OX_OK;
    }
    return ox_errorf(err, OX_EUNSUPPORTED, "--%s is not handled here", opt);
}

void ox_input_opts_free(ox_input_opts *in)
{
    if (!in)
        return;
    for (int i = 0; i < in->n_src; i++) {
        free(in->src[i].name);
        free(in->src[i].file);
        free(in->src[i].fill);
    }
    free(in->src);
    in->src = NULL;
    in->n_src = 0;
}

/* ---- which source feeds which input ---------------------------------------- */

/* which[i] = index into in->src for graph input i, or -1. Named sources
 * first, then positional files to the inputs left, in order. OX_EINVAL for
 * an unknown name, a name given twice, or more files than inputs. */
static ox_status assign_sources(const ox_input_opts *in, const ox_graph *g, int *which,
                                ox_error *err)
{
    for (int i = 0; i < g->n_inputs; i++)
        which[i] = -1;
    for (int s = 0; in && s < in->n_src; s++) {
        const ox_input_src *src = &in->src[s];
        const char *opt = src->fill ? "fill" : "input";
        const char *val = src->fill ? src->fill : src->file;
        if (!src->name)
            continue;
        int k = -1;
        for (int i = 0; i < g->n_inputs && k < 0; i++)
            if (g->inputs[i]->name && !strcmp(g->inputs[i]->name, src->name))
                k = i;
        if (k < 0) {
            char names[200] = "";
            size_t off = 0;
            for (int i = 0; i < g->n_inputs && off < sizeof names; i++)
                if (!g->inputs[i]->init)
                    off += (size_t)snprintf(names + off, sizeof names - off, "%s%s",
                                            off ? ", " : "", g->inputs[i]->name);
            return ox_errorf(err, OX_EINVAL, "--%s %s=%s: the model has no input '%s' (inputs: %s)",
                             opt, src->name, val, src->name, names[0] ? names : "none");
        }
        if (which[k] >= 0)
            return ox_errorf(err, OX_EINVAL, "--%s %s=%s: input '%s' is already given", opt,
                             src->name, val, src->name);
        which[k] = s;
    }
    int next = 0;
    for (int s = 0; in && s < in->n_src; s++) {
        if (in->src[s].name)
            continue;
        while (next < g->n_inputs && (which[next] >= 0 || g->inputs[next]->init))
            next++;
        if (next >= g->n_inputs)
            return ox_errorf(err, OX_EINVAL, "--input %s: more input files than the model has inputs",
                             in->src[s].file);
        which[next++] = s;
    }
    return OX_OK;
}

/* The shape an input is filled or drawn with: its --shape, else its
 * declared type, symbols through --dim, unknown dims --default-dim.
 * OX_EINVAL names the dim. */
static ox_status resolve_shape(const ox_input_opts *in, const ox_value *v, int *rank,
                               int64_t *dims, ox_error *err)
{
    const ox_infer_opts *io = in ? in->shapes : NULL;
    const ox_type *t = v->type;
    const ox_shape_override *ov = NULL;
    for (int i = 0; io && i < io->n_shapes; i++)
        if (!strcmp(io->shapes[i].name, v->name))
            ov = &io->shapes[i];
    if (!ov && (!t || !t->has_shape))
        return ox_errorf(err, OX_EINVAL,
                         "input '%s' has no declared shape: give it with --shape %s=DIMS",
                         v->name, v->name);
    *rank = ov ? ov->rank : t->rank;
    if (*rank < 0 || *rank > OX_MAX_RANK)
        return ox_errorf(err, OX_EINVAL, "input '%s': rank too large", v->name);
    for (int d = 0; d < *rank; d++) {
        const char *sym = ov ? ov->params[d] : t->dims[d].param;
        int64_t x = ov ? ov->dims[d] : t->dims[d].value;
        if (x < 0)
            x = ox_infer_opts_dim(io, sym);
        if (x < 0 && in && in->has_default_dim)
            x = in->default_dim;
        if (x < 0) {
            if (sym)
                return ox_errorf(err, OX_EINVAL,
                                 "input '%s' dim %d ('%s') is unknown: set it with --dim %s=N "
                                 "or --shape %s=DIMS (or --default-dim N)",
                                 v->name, d, sym, sym, v->name);
            return ox_errorf(err, OX_EINVAL,
                             "input '%s' dim %d is unknown: set it with --shape %s=DIMS "
                             "(or --default-dim N)", v->name, d, v->name);
        }
        dims[d] = x;
    }
    return OX_OK;
}

/* Parses a --fill value for element type dt into *f (floats) or *i. */
static bool parse_fill(const char *s, ox_dtype dt, double *f, int64_t *i, char *why, size_t wn)
{
    char *end = NULL;
    errno = 0;
    if (dt == OX_DT_BOOL) {
        if (!strcasecmp(s, "true") || !strcmp(s, "1"))
            *i = 1;
        else if (!strcasecmp(s, "false") || !strcmp(s, "0"))
            *i = 0;
        else {
            snprintf(why, wn, "expected true, false, 1 or 0 for bool");
            return false;
        }
        return true;
    }
    if (ox_dtype_is_float(dt) || dt == OX_DT_COMPLEX64 || dt == OX_DT_COMPLEX128) {
        *f = strtod(s, &end);
        if (!*s || *end || (errno == ERANGE && isinf(*f))) {
            snprintf(why, wn, "expected a number for %s", ox_dtype_name(dt));
            return false;
        }
        return true;
    }
    if (ox_dtype_is_int(dt)) {
        long long v = strtoll(s, &end, 10);
        int bits = ox_dtype_bits(dt);
        bool sgn = ox_dtype_is_signed(dt);
        long long lo = sgn ? (bits >= 64 ? INT64_MIN : -(1LL << (bits - 1))) : 0;
        long long hi = bits >= 64 ? INT64_MAX : sgn ? (1LL << (bits - 1)) - 1 : (1LL << bits) - 1;
        if (!*s || *end || errno == ERANGE || v < lo || v > hi) {
            snprintf(why, wn, "expected an integer in [%lld, %lld] for %s", lo, hi,
                     ox_dtype_name(dt));
            return false;
        }
        *i = v;
        return true;
    }
    snprintf(why, wn, "%s inputs cannot be filled (use --input FILE.pb)", ox_dtype_name(dt));
    return false;
}

static const ox_type *tensor_type(const ox_value *v, ox_error *err)
{
    const ox_type *t = v->type;
    if (!t || t->kind != OX_TYPE_TENSOR || t->elem == OX_DT_UNDEFINED) {
        ox_errorf(err, OX_EINVAL, "input '%s' is not a typed tensor: give it with --input %s=FILE.pb",
                  v->name, v->name);
        return NULL;
    }
    return t;
}

ox_status ox_input_opts_validate(const ox_input_opts *in, const ox_model *m, ox_error *err)
{
    if (!m || !m->graph)
        return ox_errorf(err, OX_EINVAL, "no model");
    if (in && in->shapes) {
        ox_status st = ox_infer_opts_validate(in->shapes, m, err);
        if (st)
            return st;
    }
    if (!in)
        return OX_OK;
    const ox_graph *g = m->graph;
    int *which = calloc((size_t)g->n_inputs + 1, sizeof *which);
    if (!which)
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    ox_status st = assign_sources(in, g, which, err);
    for (int i = 0; !st && i < g->n_inputs; i++) {
        const ox_value *v = g->inputs[i];
        const ox_input_src *src = which[i] >= 0 ? &in->src[which[i]] : NULL;
        if (src && src->file)
            continue;
        if (!src && v->init)
            continue;
        if (!src && in->no_random) {
            st = ox_errorf(err, OX_EINVAL,
                           "input '%s' not given (use --input %s=FILE.pb, --fill %s=VALUE or --random)",
                           v->name, v->name, v->name);
            break;
        }
        const ox_type *t = tensor_type(v, err);
        if (!t) {
            st = OX_EINVAL;
            break;
        }
        if (src && src->fill) {
            char why[160];
            double f;
            int64_t x;
            if (!parse_fill(src->fill, t->elem, &f, &x, why, sizeof why)) {
                st = ox_errorf(err, OX_EINVAL, "--fill %s=%s: %s", src->name, src->fill, why);
                break;
            }
        }
        int rank;
        int64_t dims[OX_MAX_RANK];
        st = resolve_shape(in, v, &rank, dims, err);
    }
    free(which);
    return st;
}

int ox_input_opts_defaulted(const ox_input_opts *in, const ox_model *m, char *buf, size_t n)
{
    if (buf && n)
        buf[0] = 0;
    if (!in || !in->has_default_dim || !m || !m->graph)
        return 0;
    const ox_graph *g = m->graph;
    int *which = calloc((size_t)g->n_inputs + 1, sizeof *which);
    if (!which || assign_sources(in, g, which, NULL) != OX_OK) {
        free(which);
        return 0;
    }
    int count = 0;
    size_t off = 0;
    const ox_infer_opts *io = in->shapes;
    for (int i = 0; i < g->n_inputs; i++) {
        const ox_value *v = g->inputs[i];
        if ((which[i] >= 0 && in->src[which[i]].file) || (which[i] < 0 && v->init))
            continue;
        const ox_type *t = v->type;
        const ox_shape_override *ov = NULL;
        for (int s = 0; io && s < io->n_shapes; s++)
            if (!strcmp(io->shapes[s].name, v->name))
                ov = &io->shapes[s];
        if (!ov && (!t || t->kind != OX_TYPE_TENSOR || !t->has_shape))
            continue;
        int rank = ov ? ov->rank : t->rank;
        for (int d = 0; d < rank && d < OX_MAX_RANK; d++) {
            const char *sym = ov ? ov->params[d] : t->dims[d].param;
            int64_t x = ov ? ov->dims[d] : t->dims[d].value;
            if (x >= 0 || ox_infer_opts_dim(io, sym) >= 0)
                continue;
            count++;
            if (buf && off < n)
                off += (size_t)snprintf(buf + off, n - off, "%s%s dim %d%s%s%s",
                                        count > 1 ? ", " : "", v->name, d, sym ? " ('" : "",
                                        sym ? sym : "", sym ? "')" : "");
        }
    }
    free(which);
    return count;
}

/* ---- making the values ------------------------------------------------------- */

/* Refuses an input larger than the memory ceiling before allocating it: a
 * declared dim of 2^40 asked calloc for 246 TB, which ASan (or a strict
 * overcommit policy) turns into an abort instead of this one-line error. */
static bool input_fits(const ox_value *v, ox_dtype dt, int rank, const int64_t *dims,
                       ox_error *err)
{
    double bytes = ox_dtype_bits(dt) / 8.0, cap = (double)ox_exec_default_max_memory();
    for (int d = 0; d < rank; d++)
        bytes *= (double)dims[d];
    if (bytes <= cap)
        return true;
    ox_errorf(err, OX_ENOMEM, "input '%s': %.4g GiB, over the memory ceiling of %.4g GiB",
              v->name, bytes / 1073741824.0, cap / 1073741824.0);
    return false;
}

static ox_tensor *random_tensor(const ox_model *m, const ox_value *v, const ox_type *t, int rank,
                                const int64_t *dims, uint32_t *seed, int64_t int_max,
                                ox_error *err)
{
    if (!input_fits(v, t->elem, rank, dims, err))
        return NULL;
    ox_tensor *x = ox_tensor_new(t->elem, rank, dims);
    if (!x) {
        ox_errorf(err, OX_ENOMEM, "input '%s': cannot allocate", v->name);
        return NULL;
    }
    int64_t bound = ox_dtype_is_int(t->elem) ? gather_bound(m, v) : 0;
    if (bound <= 0 && ox_dtype_is_int(t->elem) && mask_like(v, 0))
        bound = 2;
    if (bound <= 0)
        bound = int_max > 0 ? int_max : 100;
    for (int64_t i = 0; i < x->numel; i++) {
        if (ox_dtype_is_float(t->elem) || t->elem == OX_DT_COMPLEX64 ||
            t->elem == OX_DT_COMPLEX128)
            ox_tensor_set_f64(x, i, -1.0 + 2.0 * rand_unit(seed));
        else if (t->elem == OX_DT_BOOL)
            ox_tensor_set_i64(x, i, ox_rand_u32(seed) & 1);
        else if (t->elem == OX_DT_STRING)
            break;
        else
            ox_tensor_set_i64(x, i, (int64_t)(rand_unit(seed) * (double)bound));
    }
    return x;
}

static ox_tensor *fill_tensor(const ox_value *v, const ox_type *t, int rank, const int64_t *dims,
                              const char *text, ox_error *err)
{
    char why[160];
    double f = 0;
    int64_t i64 = 0;
    if (!parse_fill(text, t->elem, &f, &i64, why, sizeof why)) {
        ox_errorf(err, OX_EINVAL, "--fill %s=%s: %s", v->name, text, why);
        return NULL;
    }
    if (!input_fits(v, t->elem, rank, dims, err))
        return NULL;
    ox_tensor *x = ox_tensor_new(t->elem, rank, dims);
    if (!x) {
        ox_errorf(err, OX_ENOMEM, "input '%s': cannot allocate", v->name);
        return NULL;
    }
    bool fl = ox_dtype_is_float(t->elem) || t->elem == OX_DT_COMPLEX64 ||
              t->elem == OX_DT_COMPLEX128;
    for (int64_t k = 0; k < x->numel; k++) {
        if (fl)
            ox_tensor_set_f64(x, k, f);
        else
            ox_tensor_set_i64(x, k, i64);
    }
    return x;
}

/* A loaded --input file must agree with the input's --shape (the executor
 * checks it against the declared type). */
static ox_status check_file_shape(const ox_input_opts *in, const ox_value *v, const ox_rval *r,
                                  const char *file, ox_error *err)
{
    const ox_infer_opts *io = in->shapes;
    if (!r || r->kind != OX_RV_TENSOR || !r->t)
        return OX_OK;
    for (int s = 0; io && s < io->n_shapes; s++) {
        const ox_shape_override *o = &io->shapes[s];
        if (strcmp(o->name, v->name))
            continue;
        bool ok = o->rank == r->t->rank;
        for (int d = 0; ok && d < o->rank; d++) {
            int64_t want = o->dims[d] >= 0 ? o->dims[d] : ox_infer_opts_dim(io, o->params[d]);
            ok = want < 0 || want == r->t->dims[d];
        }
        if (!ok) {
            char a[128], b[300];
            return ox_errorf(err, OX_EINVAL, "--input %s=%s: the file holds [%s], not --shape %s",
                             v->name, file, ox_shape_str(r->t->rank, r->t->dims, a, sizeof a),
                             ox_shape_override_format(o, b, sizeof b));
        }
    }
    return OX_OK;
}

ox_status ox_inputs_make(const ox_model *m, const ox_input_opts *in_opts, uint32_t seed,
                         ox_rval **in, ox_error *err)
{
    if (!m || !m->graph || !in)
        return ox_errorf(err, OX_EINVAL, "no model");
    const ox_graph *g = m->graph;
    ox_input_opts none = {0};
    const ox_input_opts *o = in_opts ? in_opts : &none;
    for (int i = 0; i < g->n_inputs; i++)
        in[i] = NULL;
    int *which = calloc((size_t)g->n_inputs + 1, sizeof *which);
    if (!which)
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    ox_status st = assign_sources(o, g, which, err);
    for (int i = 0; !st && i < g->n_inputs; i++) {
        const ox_value *v = g->inputs[i];
        const ox_input_src *src = which[i] >= 0 ? &o->src[which[i]] : NULL;
        if (!src && v->init)
            continue;
        if (src && src->file) {
            ox_error e2 = {0};
            st = ox_testdata_load(src->file, v->type, &in[i], NULL, &e2);
            if (st && strstr(e2.msg, src->file))
                ox_errorf(err, st, "--input %s: %s", src->name ? src->name : src->file, e2.msg);
            else if (st)
                ox_errorf(err, st, "--input %s: %s: %s", src->name ? src->name : src->file,
                          src->file, e2.msg);
            else
                st = check_file_shape(o, v, in[i], src->file, err);
            continue;
        }
        if (!src && o->no_random) {
            st = ox_errorf(err, OX_EINVAL,
                           "input '%s' not given (use --input %s=FILE.pb, --fill %s=VALUE or --random)",
                           v->name, v->name, v->name);
            break;
        }
        const ox_type *t = tensor_type(v, err);
        int rank = 0;
        int64_t dims[OX_MAX_RANK];
        if (!t) {
            st = OX_EINVAL;
            break;
        }
        if ((st = resolve_shape(o, v, &rank, dims, err)))
            break;
        ox_tensor *x = src ? fill_tensor(v, t, rank, dims, src->fill, err)
                           : random_tensor(m, v, t, rank, dims, &seed, o->int_max, err);
        if (!x || !(in[i] = ox_rval_tensor(x))) {
            if (x == NULL && err && err->status == OX_OK)
                ox_errorf(err, OX_ENOMEM, "out of memory");
            st = err ? err->status : OX_ENOMEM;
            if (st == OX_OK)
                st = OX_ENOMEM;
        }
    }
    free(which);
    if (st)
        for (int i = 0; i < g->n_inputs; i++) {
            ox_rval_free(in[i]);
            in[i] = NULL;
        }
    return st;
}

ox_status ox_random_inputs(const ox_model *m, const ox_infer_opts *io, uint32_t seed,
                           int64_t int_max, ox_rval **in, ox_error *err)
{
    ox_input_opts o = {.shapes = io, .int_max = int_max, .has_default_dim = true,
                       .default_dim = 1};
    return ox_inputs_make(m, &o, seed, in, err);
}
