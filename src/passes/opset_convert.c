/* The opset converter's driver: checks the request, walks every graph
 * (subgraphs included) once, gives each default-domain node to its
 * adapter, checks that what remains exists at the target opset with the
 * element types it uses, then updates the opset import and ir_version and
 * re-infers types. Adapters live in opset_adapt.c and opset_expand.c; the
 * opset history they rely on is the generated opset_table.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnxscope/infer.h"
#include "onnxscope/opset.h"
#include "passes/opset_internal.h"
#include "passes/opset_table.h"
#include "passes/pass_internal.h"

/* ---- shared helpers -------------------------------------------------------- */

ox_status ox__cv_refuse(ox__cv *c, const ox_node *n, const char *fmt, ...)
{
    char why[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return ox_errorf(c->err, OX_EUNSUPPORTED, "%s node '%s' cannot be converted to opset %d: %s",
                     n->op_type, n->name && *n->name ? n->name : "(unnamed)", c->to, why);
}

const ox_tensor *ox__cv_const(const ox_value *v)
{
    if (!v)
        return NULL;
    /* Not an overridable initializer's default, nor a value computed from
     * one: moved into an attribute it would ignore what a caller feeds. */
    const ox_tensor *t = ox_value_constant(v);
    if (t)
        return t;
    if (v->init || v->override_dep)
        return NULL;
    /* A Constant node with a tensor value (inference may not have run on
     * this value yet: it was made by an adapter). */
    if (v->producer && ox_node_is(v->producer, "Constant")) {
        const ox_attr *a = ox_node_attr(v->producer, "value");
        if (a && a->type == OX_ATTR_TENSOR)
            return a->t;
    }
    return NULL;
}

/* A Constant's value_int(s) / value_float(s) attribute: inference knows
 * them in the main graph, but function bodies (spox, onnxscript) are not
 * inferred, so the attribute is read here. */
static const ox_attr *const_list_attr(const ox_value *v, bool ints)
{
    if (!v || !v->producer || !ox_node_is(v->producer, "Constant"))
        return NULL;
    const ox_attr *a = ox_node_attr(v->producer, ints ? "value_ints" : "value_floats");
    if (!a)
        a = ox_node_attr(v->producer, ints ? "value_int" : "value_float");
    if (!a || (a->ref_attr_name && a->ref_attr_name[0]))
        return NULL;
    if (a->type != (ints ? OX_ATTR_INTS : OX_ATTR_FLOATS) &&
        a->type != (ints ? OX_ATTR_INT : OX_ATTR_FLOAT))
        return NULL;
    return a;
}

int ox__cv_ints(const ox_value *v, int64_t *out, int cap)
{
    const ox_tensor *t = ox__cv_const(v);
    const ox_attr *a = t ? NULL : const_list_attr(v, true);
    if (a && a->type == OX_ATTR_INT && cap >= 1) {
        out[0] = a->i;
        return 1;
    }
    if (a && a->type == OX_ATTR_INTS && a->n <= cap) {
        for (int i = 0; i < a->n; i++)
            out[i] = a->ints[i];
        return a->n;
    }
    if (!t || t->rank > 1 || t->numel > cap || !ox_dtype_is_int(t->dtype))
        return -1;
    for (int64_t i = 0; i < t->numel; i++)
        out[i] = ox_tensor_get_i64(t, i);
    return (int)t->numel;
}

int ox__cv_floats(const ox_value *v, float *out, int cap)
{
    const ox_tensor *t = ox__cv_const(v);
    const ox_attr *a = t ? NULL : const_list_attr(v, false);
    if (a && a->type == OX_ATTR_FLOAT && cap >= 1) {
        out[0] = a->f;
        return 1;
    }
    if (a && a->type == OX_ATTR_FLOATS && a->n <= cap) {
        for (int i = 0; i < a->n; i++)
            out[i] = a->floats[i];
        return a->n;
    }
    if (!t || t->rank > 1 || t->numel > cap || t->dtype == OX_DT_STRING)
        return -1;
    for (int64_t i = 0; i < t->numel; i++)
        out[i] = (float)ox_tensor_get_f64(t, i);
    return (int)t->numel;
}

int ox__cv_rank(const ox_value *v)
{
    const ox_type *t = v ? v->type : NULL;
    if ((!t || !t->has_shape) && v)
        t = v->decl;
    if (!t || t->kind != OX_TYPE_TENSOR || !t->has_shape)
        return -1;
    return t->rank;
}

int64_t ox__cv_dim(const ox_value *v, int k)
{
    const ox_type *t = v ? v->type : NULL;
    if (!t || t->kind != OX_TYPE_TENSOR || !t->has_shape || k < 0 || k >= t->rank)
        return -1;
    return t->dims[k].value;
}

ox_dtype ox__cv_elem(const ox_value *v)
{
    const ox_type *t = v ? v->type : NULL;
    if ((!t || t->elem == OX_DT_UNDEFINED) && v)
        t = v->decl;
    if (!t || t->kind != OX_TYPE_TENSOR)
        return OX_DT_UNDEFINED;
    return t->elem;
}

bool ox__cv_out_used(const ox_node *n, int i)
{
    const ox_value *v = ox__cv_out(n, i);
    return v && (v->n_uses > 0 || v->is_output);
}

void ox__cv_trim(ox_node *n)
{
    while (n->n_inputs > 0 && !n->inputs[n->n_inputs - 1])
        n->n_inputs--;
    while (n->n_outputs > 1 && !n->outputs[n->n_outputs - 1])
        n->n_outputs--;
}

void ox__cv_rename(ox_node *n, const char *op)
{
    char *s = ox_strdup(op);
    if (!s) {
        n->graph->model->oom = true;
        return;
    }
    free(n->op_type);
    n->op_type = s;
}

static ox_value *new_init(ox_node *n, const char *hint, ox_tensor *t)
{
    char h[96];
    snprintf(h, sizeof h, "%s_%s", n->name && *n->name ? n->name : n->op_type, hint);
    return ox__pass_new_init(n->graph, h, t);
}

ox_value *ox__cv_i64(ox__cv *c, ox_node *n, const char *hint, int count, const int64_t *v)
{
    (void)c;
    return new_init(n, hint, ox__pass_i64_tensor(count, v));
}

ox_value *ox__cv_i64_scalar(ox__cv *c, ox_node *n, const char *hint, int64_t v)
{
    (void)c;
    ox_tensor *t = ox_tensor_new(OX_DT_INT64, 0, NULL);
    if (t)
        ox_tensor_set_i64(t, 0, v);
    return new_init(n, hint, t);
}

ox_value *ox__cv_scalar(ox__cv *c, ox_node *n, const char *hint, ox_dtype dt, double v)
{
    (void)c;
    ox_tensor *t = ox_tensor_new(dt == OX_DT_UNDEFINED ? OX_DT_FLOAT : dt, 0, NULL);
    if (t)
        ox_tensor_set_f64(t, 0, v);
    return new_init(n, hint, t);
}

ox_value *ox__cv_floats_1d(ox__cv *c, ox_node *n, const char *hint, int count, const float *v)
{
    (void)c;
    int64_t d = count;
    ox_tensor *t = ox_tensor_new(OX_DT_FLOAT, 1, &d);
    for (int i = 0; t && i < count; i++)
        ox_tensor_set_f64(t, i, v[i]);
    return new_init(n, hint, t);
}

ox_node *ox__cv_node(ox__cv *c, ox_node *n, const char *op, int nin, ox_value *const *in,
                     int nout)
{
    ox_graph *g = n->graph;
    char hint[128];
    snprintf(hint, sizeof hint, "%s_%s", n->name && *n->name ? n->name : n->op_type, op);
    ox_value *outs[4] = {0};
    for (int i = 0; i < nout && i < 4; i++) {
        outs[i] = ox_graph_new_value(g, hint);
        if (!outs[i])
            return NULL;
    }
    char *name = ox_model_unique_node_name(c->m, hint);
    ox_node *p = ox_node_new(g, op, "", name, nin, in, nout, outs);
    free(name);
    if (p && c->rep)
        c->rep->nodes_added++;
    return p;
}

ox_value *ox__cv_op(ox__cv *c, ox_node *n, const char *op, int nin, ox_value *const *in)
{
    ox_node *p = ox__cv_node(c, n, op, nin, in, 1);
    return p ? p->outputs[0] : NULL;
}

void ox__cv_take_output(ox_node *n, int i, ox_node *p, int j)
{
    ox_value *v = ox__cv_out(n, i);
    if (!v)
        return;
    ox_value *tmp = p->outputs[j];
    ox_node_set_output(n, i, NULL);
    ox_node_set_output(p, j, v);
    if (tmp && tmp != v) {
        /* Helper nodes may already read p's fresh output: they read v now. */
        if (tmp->n_uses)
            ox_value_replace_uses(tmp, v);
        if (!tmp->producer && tmp->n_uses == 0)
            ox_graph_remove_value(p->graph, tmp);
    }
}

void ox__cv_kill(ox__cv *c, ox_node *n)
{
    for (int i = 0; i < n->n_inputs; i++)
        ox_node_set_input(n, i, NULL);
    for (int i = 0; i < n->n_outputs; i++)
        ox_node_set_output(n, i, NULL);
    if (c->n_dead == c->cap_dead) {
        int cap = c->cap_dead ? 2 * c->cap_dead : 16;
        ox_node **d = realloc(c->dead, (size_t)cap * sizeof *d);
        if (!d) {
            c->m->oom = true;
            return;
        }
        c->dead = d;
        c->cap_dead = cap;
    }
    c->dead[c->n_dead++] = n;
    if (c->rep)
        c->rep->nodes_expanded++;
}

void ox__cv_attr_to_input(ox__cv *c, ox_node *n, const char *name, int i)
{
    const int64_t *v;
    int k = ox_node_attr_ints(n, name, &v);
    if (k < 0)
        return;
    ox_value *x = ox__cv_i64(c, n, name, k, v);
    ox_node_remove_attr(n, name);
    ox_node_set_input(n, i, x);
}

ox_status ox__cv_input_to_attr(ox__cv *c, ox_node *n, int i, const char *name)
{
    ox_value *x = ox__cv_in(n, i);
    if (!x)
        return OX_OK;
    int64_t v[OX_MAX_RANK * 2 + 64];
    int k = ox__cv_ints(x, v, (int)(sizeof v / sizeof *v));
    if (k < 0)
        return ox__cv_refuse(c, n, "input '%s' is computed at run time, and opset %d needs "
                             "it as the constant attribute '%s'", x->name, c->to, name);
    if (k > 0)   /* an empty list means the default (all axes) */
        ox_node_set_attr_ints(n, name, k, v);
    ox_node_set_input(n, i, NULL);
    ox__cv_trim(n);
    return OX_OK;
}

ox_status ox__cv_need_s(ox__cv *c, ox_node *n, const char *name, const char *dflt,
                        const char *bad, int since)
{
    const char *s = ox_node_attr_s(n, name, dflt);
    if (c->to < since && s && !strcmp(s, bad))
        return ox__cv_refuse(c, n, "%s='%s' needs opset %d", name, bad, since);
    return OX_OK;
}

ox_status ox__cv_need_i(ox__cv *c, ox_node *n, const char *name, int64_t ok, int since)
{
    if (c->to >= since)
        return OX_OK;
    ox_attr *a = ox_node_attr(n, name);
    if (a && a->type == OX_ATTR_INT && a->i != ok)
        return ox__cv_refuse(c, n, "%s=%lld needs opset %d", name, (long long)a->i, since);
    if (a)
        ox_node_remove_attr(n, name);
    return OX_OK;
}

void ox__cv_count_added(ox__cv *c, int k)
{
    if (c->rep)
        c->rep->nodes_added += k;
}

/* ---- the opset history ---------------------------------------------------- */

static const ox__opset_op *find_op(const char *name)
{
    int lo = 0, hi = ox__opset_n_ops - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        int r = strcmp(ox__opset_ops[mid].name, name);
        if (!r)
            return &ox__opset_ops[mid];
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return NULL;
}

/* The schema version of op at opset v: NULL when the op does not exist
 * there (not yet introduced, or deprecated). */
static const ox__opset_ver *version_at(const ox__opset_op *op, int v)
{
    const ox__opset_ver *best = NULL;
    for (int i = 0; i < op->n_versions; i++)
        if (op->v[i].since <= v)
            best = &op->v[i];
    return best && !best->deprecated ? best : NULL;
}

static const char *dtype_name(ox_dtype dt)
{
    const char *s = ox_dtype_name(dt);
    return s ? s : "?";
}

/* The values of n (inputs, or outputs) against the masks of schema v:
 * a sequence/optional where only tensors are allowed, or an element type
 * the schema does not list, is refused. */
static ox_status check_types(ox__cv *c, ox_node *n, const ox__opset_ver *v, bool outputs)
{
    int count = outputs ? n->n_outputs : n->n_inputs;
    int formals = outputs ? v->n_outputs : v->n_inputs;
    bool var = outputs ? v->out_variadic : v->variadic;
    const uint32_t *masks = outputs ? v->out_types : v->in_types;
    for (int i = 0; i < count; i++) {
        int k = i < formals ? i : var ? formals - 1 : -1;
        ox_value *x = outputs ? n->outputs[i] : n->inputs[i];
        if (k < 0 || !x || !masks[k])
            continue;
        const ox_type *t = x->type && x->type->kind != OX_TYPE_NONE ? x->type : x->decl;
        if (t && t->kind != OX_TYPE_NONE && t->kind != OX_TYPE_TENSOR && (masks[k] & 1u))
            return ox__cv_refuse(c, n, "%s %d is a sequence, map or optional, which %s-%d "
                                 "does not accept", outputs ? "output" : "input", i,
                                 n->op_type, v->since);
        ox_dtype dt = ox__cv_elem(x);
        if (dt == OX_DT_UNDEFINED || (unsigned)dt >= 32)
            continue;
        if (!(masks[k] & (1u << dt)))
            return ox__cv_refuse(c, n, "%s %d is %s, which %s-%d does not accept",
                                 outputs ? "output" : "input", i, dtype_name(dt), n->op_type,
                                 v->since);
    }
    return OX_OK;
}

/* The op must exist at the target and accept the types its inputs and
 * outputs have. */
static ox_status check_node(ox__cv *c, ox_node *n)
{
    const ox__opset_op *op = find_op(n->op_type);
    if (!op)
        return ox__cv_refuse(c, n, "not an operator of the default domain in opsets 1..%d",
                             OX_OPSET_MAX);
    const ox__opset_ver *v = version_at(op, c->to);
    if (!v) {
        if (c->to < op->v[0].since)
            return ox__cv_refuse(c, n, "%s was introduced in opset %d", n->op_type,
                                 op->v[0].since);
        int gone = op->v[0].since;
        for (int i = 0; i < op->n_versions; i++)
            if (op->v[i].deprecated)
                gone = op->v[i].since;
        return ox__cv_refuse(c, n, "%s was removed in opset %d", n->op_type, gone);
    }
    if (v->exact) {
        /* The inputs the target requires, and no more than it has. */
        for (int i = 0; i < v->n_inputs && i < 32; i++)
            if ((v->required & (1u << i)) && (i >= n->n_inputs || !n->inputs[i]))
                return ox__cv_refuse(c, n, "input %d is required by %s-%d", i, n->op_type,
                                     v->since);
        if (!v->variadic && n->n_inputs > v->n_inputs)
            return ox__cv_refuse(c, n, "%s-%d has %d input(s), the node %d", n->op_type,
                                 v->since, v->n_inputs, n->n_inputs);
    }
    ox_status st = check_types(c, n, v, false);
    return st ? st : check_types(c, n, v, true);
}

/* ---- the pass ------------------------------------------------------------ */

/* upgrade_opset: an opt-in pass for front ends whose pass list has no
 * parameters (the TUI): raises a model of opset 7..16 to 17, so that the
 * LayerNormalization fusions apply. It converts the whole model when the
 * manager hands it the main graph (subgraphs come first and are skipped);
 * at 17 or above it does nothing, so it is idempotent. A model the
 * converter refuses is left unchanged (converted on a clone first). */
static ox_status pass_upgrade_opset(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    ox_model *m = g->model;
    int64_t v = ox_model_opset(m, "");
    if (g != m->graph || v < OX_OPSET_MIN || v >= 17 || !ox__pass_may(c))
        return OX_OK;
    ox_model *trial = ox_model_clone(m);
    if (!trial)
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    ox_error e = {0};
    ox_status st = ox__opset_convert_io(trial, 17, c->io, NULL, &e);
    ox_model_free(trial);
    if (st == OX_EUNSUPPORTED) {
        ox__pass_note(c, "upgrade_opset not applied: %s", e.msg);
        return OX_OK;
    }
    if (st)
        return ox_errorf(err, st, "%s", e.msg);
    if ((st = ox__opset_convert_io(m, 17, c->io, NULL, err)))
        return st;
    ox__pass_did(c);
    return OX_OK;
}

const ox_pass ox__passes_opset[] = {
    {"upgrade_opset", "convert a model of opset 7..16 to opset 17 (LayerNormalization fusions "
     "need it)", OX_PASS_CONVERSION, OX_TARGET_ONNX, OX_LEVEL_BASIC, false, pass_upgrade_opset,
     true},
    {0},
};

/* ---- the walk -------------------------------------------------------------- */

static const ox__cv_adapter *find_adapter(const ox__cv_adapter *t, const char *op)
{
    for (; t->op; t++)
        if (!strcmp(t->op, op))
            return t;
    return NULL;
}

/* A hash of what an adapter may change in n (op, inputs, outputs,
 * attribute values), to count the nodes it changed. */
static uint64_t fp_mix(uint64_t h, const void *p, size_t len)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < len; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static uint64_t fingerprint(const ox_node *n)
{
    uint64_t h = 14695981039346656037ull;
    h = fp_mix(h, n->op_type, strlen(n->op_type));
    h = fp_mix(h, &n->n_inputs, sizeof n->n_inputs);
    h = fp_mix(h, n->inputs, (size_t)n->n_inputs * sizeof *n->inputs);
    h = fp_mix(h, n->outputs, (size_t)n->n_outputs * sizeof *n->outputs);
    for (int i = 0; i < n->n_attrs; i++) {
        const ox_attr *a = &n->attrs[i];
        h = fp_mix(h, a->name, strlen(a->name));
        h = fp_mix(h, &a->i, sizeof a->i);
        h = fp_mix(h, &a->f, sizeof a->f);
        if (a->s.data)
            h = fp_mix(h, a->s.data, a->s.len);
        if (a->ints)
            h = fp_mix(h, a->ints, (size_t)a->n * sizeof *a->ints);
        if (a->floats)
            h = fp_mix(h, a->floats, (size_t)a->n * sizeof *a->floats);
    }
    return h;
}

typedef struct graphs {
    ox_graph **g;
    int n, cap;
    bool oom;
} graphs;

static void collect(ox_graph *g, void *ctx)
{
    graphs *l = ctx;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        ox_graph **p = realloc(l->g, (size_t)cap * sizeof *p);
        if (!p) {
            l->oom = true;
            return;
        }
        l->g = p;
        l->cap = cap;
    }
    l->g[l->n++] = g;
}

/* The name of n's first attribute that refers to the caller's (function
 * bodies only), or NULL. */
static const char *ref_attr(const ox_node *n)
{
    for (int i = 0; i < n->n_attrs; i++)
        if (n->attrs[i].ref_attr_name && n->attrs[i].ref_attr_name[0])
            return n->attrs[i].name;
    return NULL;
}

static ox_status convert_graph(ox__cv *c, ox_graph *g)
{
    int count = g->n_nodes;
    ox_node **snap = malloc((size_t)(count ? count : 1) * sizeof *snap);
    if (!snap)
        return ox_errorf(c->err, OX_ENOMEM, "out of memory converting the opset");
    if (count)   /* an empty graph has no node array */
        memcpy(snap, g->nodes, (size_t)count * sizeof *snap);
    c->n_dead = 0;
    ox_status st = OX_OK;
    for (int i = 0; i < count && !st; i++) {
        ox_node *n = snap[i];
        if (!ox_node_is_default_domain(n))
            continue;
        int before = c->n_dead;
        /* copied: the adapter may free the attribute */
        char ref[64] = "";
        if (ref_attr(n))
            snprintf(ref, sizeof ref, "%s", ref_attr(n));
        const ox__cv_adapter *a = find_adapter(ox__cv_adapters, n->op_type);
        const ox__cv_adapter *e = find_adapter(ox__cv_expansions, n->op_type);
        /* Adapters and expansions read input 0 (every operator they serve
         * but Constant, and Scan-8 whose sequence_lens is optional,
         * requires it): a malformed node is refused. */
        if ((a || e) && (n->n_inputs == 0 || !n->inputs[0]) && !ox_node_is(n, "Constant") &&
            !ox_node_is(n, "Scan")) {
            st = ox__cv_refuse(c, n, "its first input is missing");
            continue;
        }
        if (a) {
            /* Counted as adapted when its signature changed. */
            uint64_t before_fp = fingerprint(n);
            st = a->fn(c, n);
            /* In a function body an attribute may be the caller's
             * (ref_attr_name): its value is not known here, so a node
             * whose rewrite would read it is refused, never guessed. */
            if (!st && ref[0] && (c->n_dead != before || fingerprint(n) != before_fp))
                st = ox__cv_refuse(c, n, "attribute '%s' refers to the calling node's "
                                   "attribute, unknown inside the function", ref);
            if (!st && c->rep && c->n_dead == before && fingerprint(n) != before_fp)
                c->rep->nodes_adapted++;
        }
        if (st || c->n_dead != before)
            continue;
        /* An operator the target lacks: its expansion, else a refusal. */
        const ox__opset_op *op = find_op(n->op_type);
        if (e && (!op || !version_at(op, c->to))) {
            st = ref[0] ? ox__cv_refuse(c, n, "attribute '%s' refers to the calling node's "
                                     "attribute, unknown inside the function", ref)
                     : e->fn(c, n);
            continue;
        }
        st = check_node(c, n);
    }
    if (!st && c->m->oom)
        st = ox_errorf(c->err, OX_ENOMEM, "out of memory converting the opset");
    if (!st) {
        ox_graph_remove_nodes(g, c->dead, c->n_dead);
        c->n_dead = 0;
        st = ox_graph_toposort(g, c->err);
        ox_graph_prune_values(g);
    }
    free(snap);
    return st;
}

/* Lowest ir_version that may carry opset v (onnx/helper.py's table). */
static int64_t ir_for_opset(int64_t v)
{
    static const int ir[] = {0, 3, 3, 3, 3, 3, 3, 3, 3, 4, 5, 6, 7, 7, 7, 8, 8, 8, 8, 9, 9, 10,
                             10, 11};
    return v >= 0 && v < (int64_t)(sizeof ir / sizeof *ir) ? ir[v] : 11;
}

ox_status ox_opset_convert(ox_model *m, int64_t target, ox_opset_report *rep, ox_error *err)
{
    return ox__opset_convert_io(m, target, NULL, rep, err);
}

ox_status ox__opset_convert_io(ox_model *m, int64_t target, const ox_infer_opts *shapes,
                               ox_opset_report *rep, ox_error *err)
{
    if (rep)
        memset(rep, 0, sizeof *rep);
    if (!m || !m->graph)
        return ox_errorf(err, OX_EINVAL, "no model");
    if (target < OX_OPSET_MIN || target > OX_OPSET_MAX)
        return ox_errorf(err, OX_EINVAL, "--opset %lld: the converter handles opsets %d to %d",
                         (long long)target, OX_OPSET_MIN, OX_OPSET_MAX);
    int64_t from = ox_model_opset(m, "");
    if (from < 0)
        return ox_errorf(err, OX_EINVAL, "the model imports no default-domain opset");
    if (from < OX_OPSET_MIN || from > OX_OPSET_MAX)
        return ox_errorf(err, OX_EINVAL, "the model has opset %lld; the converter reads "
                         "opsets %d to %d", (long long)from, OX_OPSET_MIN, OX_OPSET_MAX);
    if (rep) {
        rep->from = from;
        rep->to = target;
        rep->ir_from = rep->ir_to = m->ir_version;
    }
    if (from == target)
        return OX_OK;
    ox_status st = ox_model_check_oom(m, "opset conversion", err);
    if (st)
        return st;
    /* Ranks, element types and constants computed from shapes, at the
     * source opset: adapters need them. Problems are not errors here
     * (check reports them); the conversion refuses what it cannot see. */
    ox_infer_opts io = {.no_value_info = true};
    if (shapes) {
        io.shapes = shapes->shapes;
        io.n_shapes = shapes->n_shapes;
        io.dims = shapes->dims;
        io.n_dims = shapes->n_dims;
    }
    ox_infer_model(m, &io, NULL);
    /* A newer opset needs a newer IR (set first: from IR 4 on, the
     * constants adapters add need not be listed as graph inputs). Going
     * down, the IR comes down to what the target opset came with (never
     * below 4) so that older tools read the result. */
    int64_t ir = ir_for_opset(target);
    if (m->ir_version < ir)
        m->ir_version = ir;
    else if (target < from && m->ir_version > ir) {
        int64_t floor = m->ir_version >= 4 ? 4 : m->ir_version;
        if (m->n_functions > 0 && floor < 8)
            floor = 8;   /* model-local functions came with IR 8 */
        m->ir_version = ir > floor ? ir : floor;
    }
    if (rep)
        rep->ir_to = m->ir_version;
    ox__cv c = {.m = m, .from = (int)from, .to = (int)target, .err = err, .rep = rep};
    graphs l = {0};
    ox_graph_visit(m->graph, collect, &l);
    if (l.oom)
        st = ox_errorf(err, OX_ENOMEM, "out of memory converting the opset");
    int first_new = m->next_node_id;
    for (int i = 0; i < l.n && !st; i++)
        st = convert_graph(&c, l.g[i]);
    /* Model-local functions (PyTorch 2 dynamo, onnxscript) import the
     * default domain themselves: their bodies are converted from their own
     * opset and their import set to the target, or the result would mix
     * opsets (which the executor's inlining refuses). */
    for (int f = 0; f < m->n_functions && !st; f++) {
        ox_function *fn = &m->functions[f];
        ox_opset *imp = NULL;
        for (int k = 0; k < fn->n_opsets; k++)
            if (!fn->opsets[k].domain || !fn->opsets[k].domain[0] ||
                !strcmp(fn->opsets[k].domain, "ai.onnx"))
                imp = &fn->opsets[k];
        if (!imp || !fn->body || imp->version == target)
            continue;
        if (imp->version < OX_OPSET_MIN || imp->version > OX_OPSET_MAX) {
            st = ox_errorf(err, OX_EINVAL, "function %s has opset %lld; the converter reads "
                           "opsets %d to %d", fn->name, (long long)imp->version, OX_OPSET_MIN,
                           OX_OPSET_MAX);
            break;
        }
        int before = l.n;
        ox_graph_visit(fn->body, collect, &l);
        if (l.oom) {
            st = ox_errorf(err, OX_ENOMEM, "out of memory converting the opset");
            break;
        }
        c.from = (int)imp->version;
        for (int i = before; i < l.n && !st; i++)
            st = convert_graph(&c, l.g[i]);
        imp->version = target;
    }
    c.from = (int)from;
    free(c.dead);
    if (st) {
        free(l.g);
        return st;
    }
    ox_model_set_opset(m, "", target);
    ox_graph_relink(m->graph);
    /* The nodes adapters added, typed at the target, meet its schemas too
     * (an expansion's Less on int16 does not exist at opset 7). */
    ox_infer_model(m, &io, NULL);
    for (int i = 0; i < l.n && !st; i++)
        for (int k = 0; k < l.g[i]->n_nodes && !st; k++) {
            ox_node *n = l.g[i]->nodes[k];
            if (n->id >= first_new && ox_node_is_default_domain(n))
                st = check_node(&c, n);
        }
    free(l.g);
    if (st)
        return st;
    return ox_model_check_oom(m, "opset conversion", err);
}
