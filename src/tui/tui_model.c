/* The model side of the TUI, without curses: per-node rows (MACs) of the
 * graph being browsed with their sorted/filtered order, initializer and
 * subgraph lists, the node detail lines, shape overrides that re-run
 * inference, and initializer statistics computed lazily for one tensor. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "onnxscope/profile.h"
#include "onnxscope/quantize.h"
#include "onnxscope/tensor.h"
#include "tui/tui_internal.h"

static void restore_input_types(tui *t, ox_model *m);

const char *tui_node_label(const ox_node *n, char *buf, size_t len)
{
    if (n->name && n->name[0])
        snprintf(buf, len, "%s", n->name);
    else
        snprintf(buf, len, "%s_%d", n->op_type ? n->op_type : "?", n->index);
    return buf;
}

const char *tui_value_type(const ox_value *v, char *buf, size_t len)
{
    if (!v || !v->type)
        return snprintf(buf, len, "?"), buf;
    return ox_type_str(v->type, buf, len);
}

/* "1x64x56x56, 1x10"; '?' for unknown dims. */
const char *tui_out_shapes(const ox_node *n, char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = 0;
    for (int i = 0; i < n->n_outputs && off + 2 < len; i++) {
        const ox_value *v = n->outputs[i];
        if (!v)
            continue;
        if (off)
            off += (size_t)snprintf(buf + off, len - off, ", ");
        const ox_type *ty = v->type;
        if (off >= len)
            break;
        if (!ty || ty->kind != OX_TYPE_TENSOR || !ty->has_shape) {
            off += (size_t)snprintf(buf + off, len - off, "?");
        } else if (ty->rank == 0) {
            off += (size_t)snprintf(buf + off, len - off, "scalar");
        } else {
            for (int d = 0; d < ty->rank && off < len; d++) {
                const ox_dim *dm = &ty->dims[d];
                if (dm->value >= 0)
                    off += (size_t)snprintf(buf + off, len - off, "%s%lld", d ? "x" : "",
                                            (long long)dm->value);
                else
                    off += (size_t)snprintf(buf + off, len - off, "%s%s", d ? "x" : "",
                                            dm->param ? dm->param : "?");
            }
        }
        if (off >= len)
            break;
    }
    return buf;
}

void tui_model_free_views(tui *t)
{
    free(t->diff.dtab);
    t->diff.dtab = NULL;
    t->diff.n_dtab = 0;
    t->diff.dtab_valid = false;
    for (int k = 0; k < TUI_SORT_COUNT; k++) {
        free(t->nodes.perm[k]);
        t->nodes.perm[k] = NULL;
    }
    for (int i = 0; i < t->ov.n_ophist; i++)
        free(t->ov.ophist[i]);
    free(t->ov.ophist);
    t->ov.ophist = NULL;
    t->ov.n_ophist = 0;
    free(t->nodes.rc);
    free(t->nodes.order);
    free(t->init.vals);
    free(t->sg.node);
    free(t->sg.graph);
    free(t->sg.attr);
    t->nodes.rc = NULL;
    t->nodes.order = NULL;
    t->init.vals = NULL;
    t->sg.node = NULL;
    t->sg.graph = NULL;
    t->sg.attr = NULL;
    t->nodes.n_rc = t->nodes.n_order = t->init.n_vals = t->sg.n = 0;
    for (int i = 0; i < t->det.n_lines; i++)
        free(t->det.lines[i].text);
    free(t->det.lines);
    t->det.lines = NULL;
    t->det.n_lines = 0;
}

typedef struct op_count {
    const char *op;
    int n;
} op_count;

static int cmp_opc(const void *a, const void *b)
{
    const op_count *x = a, *y = b;
    if (x->n != y->n)
        return y->n - x->n;
    return strcmp(x->op, y->op);
}

static int cmp_opname(const void *a, const void *b)
{
    const op_count *x = a, *y = b;
    return strcmp(x->op, y->op);
}

/* Op histogram of the browsed graph: sort the op names once (n log n),
 * count runs, then order by count. */
static void build_histogram(tui *t)
{
    op_count *all = calloc((size_t)t->nodes.n_rc + 1, sizeof *all);
    if (!all)
        return;
    for (int i = 0; i < t->nodes.n_rc; i++)
        all[i].op = t->nodes.rc[i].node->op_type ? t->nodes.rc[i].node->op_type : "?";
    qsort(all, (size_t)t->nodes.n_rc, sizeof *all, cmp_opname);
    int n = 0;
    for (int i = 0; i < t->nodes.n_rc; i++) {
        if (n && strcmp(all[n - 1].op, all[i].op) == 0) {
            all[n - 1].n++;
        } else {
            all[n].op = all[i].op;
            all[n].n = 1;
            n++;
        }
    }
    qsort(all, (size_t)n, sizeof *all, cmp_opc);
    t->ov.ophist = calloc((size_t)n + 1, sizeof *t->ov.ophist);
    for (int i = 0; t->ov.ophist && i < n; i++) {
        char buf[160];
        snprintf(buf, sizeof buf, "%.140s %d", all[i].op, all[i].n);
        t->ov.ophist[i] = ox_strdup(buf);
        if (t->ov.ophist[i])
            t->ov.n_ophist++;
    }
    free(all);
}

static tui *sort_ctx;  /* qsort has no context argument; sorting is single-threaded */

static int cmp_rows(const void *a, const void *b)
{
    const tui_row_cache *ra = &sort_ctx->nodes.rc[*(const int *)a];
    const tui_row_cache *rb = &sort_ctx->nodes.rc[*(const int *)b];
    int c = 0;
    switch (sort_ctx->nodes.sort) {
    case TUI_SORT_MACS: c = ra->macs < rb->macs ? 1 : ra->macs > rb->macs ? -1 : 0; break;
    case TUI_SORT_OP: c = strcmp(ra->node->op_type, rb->node->op_type); break;
    case TUI_SORT_NAME:   /* unnamed nodes sort first, by position */
        c = strcmp(ra->node->name ? ra->node->name : "", rb->node->name ? rb->node->name : "");
        break;
    default: break;
    }
    if (c)
        return c;
    return *(const int *)a - *(const int *)b;
}

/* A sorted order is computed the first time its sort key is used after a
 * model change and kept until the next one, so that cycling the sort or
 * changing the filter is a linear pass over 100k rows, not a sort; and a
 * step of the stepper (a model change) sorts nothing while the list is in
 * graph order. */
static void build_perm(tui *t, tui_sort k)
{
    if (k == TUI_SORT_ORDER || t->nodes.perm[k])
        return;
    t->nodes.perm[k] = malloc(((size_t)t->nodes.n_rc + 1) * sizeof *t->nodes.perm[k]);
    if (!t->nodes.perm[k])
        return;
    for (int i = 0; i < t->nodes.n_rc; i++)
        t->nodes.perm[k][i] = i;
    sort_ctx = t;
    tui_sort keep = t->nodes.sort;
    t->nodes.sort = k;
    qsort(t->nodes.perm[k], (size_t)t->nodes.n_rc, sizeof *t->nodes.perm[k], cmp_rows);
    t->nodes.sort = keep;
}

void tui_model_resort(tui *t)
{
    const ox_node *keep = NULL;
    tui_panel *p = &t->panels[TUI_P_NODES];
    if (t->nodes.n_order && p->sel >= 0 && p->sel < t->nodes.n_order)
        keep = t->nodes.rc[t->nodes.order[p->sel]].node;
    t->nodes.n_order = 0;
    build_perm(t, t->nodes.sort);
    const int *perm = t->nodes.sort != TUI_SORT_ORDER ? t->nodes.perm[t->nodes.sort] : NULL;
    bool any = tui_nodes_filtered(t);
    for (int j = 0; j < t->nodes.n_rc; j++) {
        int i = perm ? perm[j] : j;
        if (any && !tui_node_visible(t, t->nodes.rc[i].node))
            continue;
        t->nodes.order[t->nodes.n_order++] = i;
    }
    p->sel = 0;
    p->top = 0;
    if (keep) {
        int r = tui_node_row(t, keep);
        if (r >= 0)
            p->sel = r;
    }
}

bool tui_nodes_filtered(const tui *t)
{
    return tui_filter_active(&t->nodes.filt) || t->nodes.hide_const || t->nodes.changed_only || t->nodes.consumers[0];
}

static bool reads(const ox_node *n, const char *value)
{
    for (int i = 0; i < n->n_inputs; i++)
        if (n->inputs[i] && n->inputs[i]->name && !strcmp(n->inputs[i]->name, value))
            return true;
    return false;
}

bool tui_node_visible(tui *t, const ox_node *n)
{
    if (!tui_filter_match(&t->nodes.filt, n->op_type))
        return false;
    if (t->nodes.hide_const && n->op_type && !strcmp(n->op_type, "Constant"))
        return false;
    if (t->nodes.changed_only && !tui_node_touched(t, n))
        return false;
    if (t->nodes.consumers[0] && !reads(n, t->nodes.consumers))
        return false;
    return true;
}

void tui_nodes_clear_filters(tui *t)
{
    t->nodes.filter[0] = 0;
    tui_filter_parse(&t->nodes.filt, "", NULL, 0);
    t->nodes.hide_const = t->nodes.changed_only = false;
    t->nodes.consumers[0] = 0;
}

bool tui_node_match(const ox_node *n, const char *q, const char **tensor)
{
    *tensor = NULL;
    if ((n->op_type && strcasestr(n->op_type, q)) || (n->name && strcasestr(n->name, q)))
        return true;
    for (int i = 0; i < n->n_outputs; i++)
        if (n->outputs[i] && n->outputs[i]->name && strcasestr(n->outputs[i]->name, q)) {
            *tensor = n->outputs[i]->name;
            return true;
        }
    /* An input matches only when no node of this graph produces it (graph
     * inputs, initializers, outer scope): else its producer is the match,
     * and every reader of a "Relu" output would match "Relu". */
    for (int i = 0; i < n->n_inputs; i++) {
        const ox_value *v = n->inputs[i];
        if (v && v->name && (!v->producer || v->producer->graph != n->graph) &&
            strcasestr(v->name, q)) {
            *tensor = v->name;
            return true;
        }
    }
    return false;
}

int tui_node_row(tui *t, const ox_node *n)
{
    for (int i = 0; i < t->nodes.n_order; i++)
        if (t->nodes.rc[t->nodes.order[i]].node == n)
            return i;
    return -1;
}

/* Appends every (node, attribute graph) pair of g's own nodes. */
static void collect_subgraphs(tui *t, ox_graph *g)
{
    int cap = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        ox_node *n = g->nodes[i];
        for (int a = 0; a < n->n_attrs; a++) {
            ox_attr *at = &n->attrs[a];
            int cnt = at->type == OX_ATTR_GRAPH ? (at->g ? 1 : 0)
                      : at->type == OX_ATTR_GRAPHS ? at->n : 0;
            for (int k = 0; k < cnt; k++) {
                ox_graph *body = at->type == OX_ATTR_GRAPH ? at->g : at->graphs[k];
                if (!body)
                    continue;
                if (t->sg.n == cap) {
                    cap = cap ? cap * 2 : 16;
                    ox_node **nn = realloc(t->sg.node, (size_t)cap * sizeof *nn);
                    if (nn)
                        t->sg.node = nn;
                    ox_graph **gg = realloc(t->sg.graph, (size_t)cap * sizeof *gg);
                    if (gg)
                        t->sg.graph = gg;
                    char **aa = realloc(t->sg.attr, (size_t)cap * sizeof *aa);
                    if (aa)
                        t->sg.attr = aa;
                    if (!nn || !gg || !aa)
                        return;
                }
                t->sg.node[t->sg.n] = n;
                t->sg.graph[t->sg.n] = body;
                t->sg.attr[t->sg.n] = at->name;
                t->sg.n++;
            }
        }
    }
}

ox_status tui_model_refresh(tui *t, ox_error *err)
{
    ox_node *keep_detail = t->det.node;
    tui_model_free_views(t);
    ox_graph *g = t->graph;
    bool preset = t->cost_preset == t->cur;
    t->cost_preset = NULL;
    if (!preset && ox_model_cost_compute(t->cur, &t->cost, err) != OX_OK)
        return err ? err->status : OX_ENOMEM;
    t->nodes.rc = calloc((size_t)g->n_nodes + 1, sizeof *t->nodes.rc);
    t->nodes.order = calloc((size_t)g->n_nodes + 1, sizeof *t->nodes.order);
    if (!t->nodes.rc || !t->nodes.order)
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    t->nodes.sum_macs = t->nodes.sum_lower = 0;
    t->nodes.sum_known = true;
    t->nodes.sum_upper = false;
    t->nodes.sum_unknown = 0;
    t->nodes.op_w = 2;
    t->nodes.name_w = 4;
    for (int i = 0; i < g->n_nodes; i++) {
        ox_cost c;
        ox_node_cost(g->nodes[i], &c);
        /* Column widths follow the content (BatchNormalization is 18). */
        int ow = g->nodes[i]->op_type ? (int)strlen(g->nodes[i]->op_type) : 1;
        if (ow > t->nodes.op_w)
            t->nodes.op_w = ow;
        const char *nm = g->nodes[i]->name;
        int nw = nm && nm[0] ? (int)strlen(nm) : ow + 7;   /* "Op_1234" when unnamed */
        if (nw > t->nodes.name_w)
            t->nodes.name_w = nw;
        t->nodes.rc[i].node = g->nodes[i];
        t->nodes.rc[i].macs = c.macs;
        t->nodes.rc[i].known = c.known;
        t->nodes.rc[i].upper = c.upper;
        t->nodes.sum_macs += c.macs;
        t->nodes.sum_lower += c.macs_min;
        t->nodes.sum_upper = t->nodes.sum_upper || c.upper;
        if (!c.known) {
            t->nodes.sum_known = false;
            t->nodes.sum_unknown++;
        }
    }
    t->nodes.n_rc = g->n_nodes;
    t->io.name_w = 4;
    for (int i = 0; i < g->n_inputs + g->n_outputs; i++) {
        const ox_value *v = i < g->n_inputs ? g->inputs[i] : g->outputs[i - g->n_inputs];
        int nw = v && v->name ? tui_utf8_cols(v->name) : 0;
        if (nw > t->io.name_w)
            t->io.name_w = nw;
    }
    if (!t->nodes.lazy_sorts)   /* opening (off the UI thread), a shape edit: sort now */
        for (int k = TUI_SORT_MACS; k < TUI_SORT_COUNT; k++)
            build_perm(t, (tui_sort)k);
    tui_model_resort(t);
    build_histogram(t);
    t->ov.n_nodes_rec = ox_graph_count_nodes(t->cur->graph, true);
    int ni = 0;
    for (int i = 0; i < g->n_values; i++)
        if (g->values[i]->init)
            ni++;
    int nc = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const ox_value *v = g->nodes[i]->n_outputs > 0 ? g->nodes[i]->outputs[0] : NULL;
        nc += v && !v->init && tui_value_tensor(v);
    }
    t->init.vals = calloc((size_t)ni + (size_t)nc + 1, sizeof *t->init.vals);
    if (!t->init.vals)
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    for (int i = 0; i < g->n_values; i++)
        if (g->values[i]->init)
            t->init.vals[t->init.n_vals++] = g->values[i];
    /* Weights in Constant nodes get the same list, statistics and preview. */
    t->init.n_const = 0;
    for (int i = 0; i < g->n_nodes && t->init.n_const < nc; i++) {
        ox_value *v = g->nodes[i]->n_outputs > 0 ? g->nodes[i]->outputs[0] : NULL;
        if (v && !v->init && tui_value_tensor(v)) {
            t->init.vals[t->init.n_vals++] = v;
            t->init.n_const++;
        }
    }
    t->init.stats_for = NULL;
    collect_subgraphs(t, g);
    /* The detail view survives a refresh only if its node is still here. */
    t->det.node = NULL;
    if (keep_detail)
        for (int i = 0; i < g->n_nodes; i++)
            if (g->nodes[i] == keep_detail)
                t->det.node = keep_detail;
    if (!t->det.node && g->n_nodes > 0)
        t->det.node = g->nodes[0];
    if (t->nb.centre) {
        bool found = false;
        for (int i = 0; i < g->n_nodes && !found; i++)
            found = g->nodes[i] == t->nb.centre;
        if (!found)
            t->nb.centre = NULL;
    }
    if (!t->nb.centre && g->n_nodes > 0)
        t->nb.centre = g->nodes[0];
    t->det.n_hist = 0;
    tui_detail_build(t);
    return OX_OK;
}

static void reinfer(tui *t, ox_error *err)
{
    t->iopts.reset = true;
    memset(&t->istats, 0, sizeof t->istats);
    t->iopts.stats = &t->istats;
    ox_infer_model(t->cur, &t->iopts, err);
    if (t->cur != t->orig)
        ox_infer_model(t->orig, &t->iopts, NULL);
    ox_model_cost_compute(t->orig, &t->cost_orig, NULL);
    tui_compare_reinfer(t);
}

/* Re-inference after a shape change on a large model runs in a worker on
 * copies of the original and the shown model (inference rewrites every
 * type in place, which the panels read while they draw); when it ends the
 * copies replace them. Esc abandons it: the shapes stay as they were. */
typedef struct shape_job {
    ox_model *orig, *cur;     /* copies with the file's input types back */
    ox_infer_opts io;         /* the new overrides */
    ox_infer_stats stats;
    ox_model_cost cost_orig;
    ox_error err;
    char msg[200];
} shape_job;

static void shape_run(tui_job *j)
{
    shape_job *q = j->ctx;
    ox_model *shown = q->cur ? q->cur : q->orig;
    q->io.reset = true;
    q->io.stats = &q->stats;
    tui_job_note(j, "inferring shapes (Esc abandons)");
    ox_infer_model(shown, &q->io, &q->err);
    q->io.stats = NULL;
    if (q->cur)
        ox_infer_model(q->orig, &q->io, NULL);
    tui_job_note(j, "computing costs (Esc abandons)");
    ox_model_cost_compute(q->orig, &q->cost_orig, NULL);
}

static void shape_discard(tui_job *j)
{
    shape_job *q = j->ctx;
    ox_model_free(q->orig);
    ox_model_free(q->cur);
    ox_infer_opts_free(&q->io);
    q->orig = q->cur = NULL;
}

static void shape_done(tui *t, tui_job *j)
{
    shape_job *q = j->ctx;
    ox_model *old_orig = t->orig, *old_cur = t->cur;
    /* The stepper's history refers to the original as "orig" (NULL) and
     * holds its own copies otherwise: swapping the two is enough. */
    t->orig = t->st.orig = q->orig;
    t->cur = t->st.cur = q->cur ? q->cur : q->orig;
    q->orig = q->cur = NULL;
    /* In threads: an idle probe may still be copying one, and freeing 100k
     * nodes takes ~0.3 s. */
    if (old_cur != old_orig)
        tui_free_model_async(old_cur);
    tui_free_model_async(old_orig);
    ox_infer_opts_free(&t->iopts);
    t->iopts = q->io;
    memset(&q->io, 0, sizeof q->io);
    t->istats = q->stats;
    t->iopts.stats = &t->istats;
    t->iopts.reset = true;
    t->cost_orig = q->cost_orig;
    tui_compare_reinfer(t);   /* the base (if any): in this thread, it is small or rare */
    t->shapes_edited = true;
    tui_stepper_touch(&t->st);
    t->gdepth = 0;
    t->graph = t->cur->graph;
    t->det.node = t->nb.centre = NULL;
    t->det.n_hist = 0;
    t->init.stats_for = NULL;
    t->diff.dtab_valid = false;
    ox_error e3 = {0};
    tui_model_refresh(t, &e3);
    if (q->err.status)
        tui_set_status(t, OX_SLOT_UI_ERROR, "%s: %s", q->msg, q->err.msg);
    else
        tui_set_status(t, OX_SLOT_UI_OK, "%s: shapes re-inferred", q->msg);
    shape_discard(j);
}

/* Installs the overrides `fresh` (moved) and re-infers: at once on a small
 * model, in a worker (t->job set) on a large one. */
static ox_status shapes_install(tui *t, ox_infer_opts *fresh, const char *msg, ox_error *err)
{
    int max = t->st.probe_max_nodes;
    if (t->st.cur_nodes > max || t->orig->graph->n_nodes > max) {
        tui_job *j = calloc(1, sizeof *j);
        shape_job *q = calloc(1, sizeof *q);
        if (j && q) {
            q->orig = ox_model_clone(t->orig);
            q->cur = t->cur != t->orig ? ox_model_clone(t->cur) : NULL;
        }
        if (!j || !q || !q->orig || (t->cur != t->orig && !q->cur)) {
            if (q) {
                ox_model_free(q->orig);
                ox_model_free(q->cur);
            }
            free(j);
            free(q);
            ox_infer_opts_free(fresh);
            return ox_errorf(err, OX_ENOMEM, "out of memory copying the model");
        }
        restore_input_types(t, q->orig);
        if (q->cur)
            restore_input_types(t, q->cur);
        q->io = *fresh;
        memset(fresh, 0, sizeof *fresh);
        snprintf(q->msg, sizeof q->msg, "%s", msg);
        j->ctx = q;
        j->model = true;
        snprintf(j->what, sizeof j->what, "%s", msg);
        j->run = shape_run;
        j->done = shape_done;
        j->discard = shape_discard;
        t->status[0] = 0;
        tui_job_start(t, j);
        return OX_OK;
    }
    ox_infer_opts_free(&t->iopts);
    t->iopts = *fresh;
    memset(fresh, 0, sizeof *fresh);
    restore_input_types(t, t->orig);
    if (t->cur != t->orig)
        restore_input_types(t, t->cur);
    ox_error e2 = {0};
    reinfer(t, &e2);
    t->shapes_edited = true;
    tui_stepper_touch(&t->st);   /* types changed: pass matches may have too */
    ox_status st = e2.status;
    if (st != OX_OK && err)
        *err = e2;
    ox_error e3 = {0};
    tui_model_refresh(t, &e3);
    return st;
}

ox_status tui_apply_shape(tui *t, const char *input, const char *shape, ox_error *err)
{
    char arg[600];
    snprintf(arg, sizeof arg, "%s=%s", input, shape);
    /* Replace an earlier override of the same input. */
    ox_infer_opts fresh = {0};
    for (int i = 0; i < t->iopts.n_shapes; i++) {
        if (strcmp(t->iopts.shapes[i].name, input) == 0)
            continue;
        char old[600];
        ox_shape_override_format(&t->iopts.shapes[i], old, sizeof old);
        ox_infer_opts_add_shape(&fresh, old, NULL);
    }
    for (int i = 0; i < t->iopts.n_dims; i++) {
        char old[300];
        snprintf(old, sizeof old, "%s=%lld", t->iopts.dims[i].symbol,
                 (long long)t->iopts.dims[i].value);
        ox_infer_opts_add_dim(&fresh, old, NULL);
    }
    if (ox_infer_opts_add_shape(&fresh, arg, err) != OX_OK) {
        ox_infer_opts_free(&fresh);
        return err->status;
    }
    /* The same check as every command's --shape, against the file's type
     * (the graph input's current type carries the previous override). */
    const ox_graph *g = t->orig->graph;
    for (int i = 0; i < g->n_inputs && i < t->n_in_types; i++)
        if (g->inputs[i]->name && !strcmp(g->inputs[i]->name, input) &&
            ox_shape_override_check(&fresh.shapes[fresh.n_shapes - 1], t->in_types[i], &fresh,
                                    err) != OX_OK) {
            ox_infer_opts_free(&fresh);
            return err->status;
        }
    char msg[200];
    snprintf(msg, sizeof msg, "%.90s = %.90s", input, shape);
    return shapes_install(t, &fresh, msg, err);
}

void tui_save_input_types(tui *t)
{
    const ox_graph *g = t->orig->graph;
    t->in_types = calloc((size_t)g->n_inputs + 1, sizeof *t->in_types);
    if (!t->in_types)
        return;
    t->n_in_types = g->n_inputs;
    for (int i = 0; i < g->n_inputs; i++)
        t->in_types[i] = g->inputs[i]->type ? ox_type_clone(g->inputs[i]->type) : NULL;
}

void tui_free_input_types(tui *t)
{
    for (int i = 0; i < t->n_in_types; i++)
        ox_type_free(t->in_types[i]);
    free(t->in_types);
    t->in_types = NULL;
    t->n_in_types = 0;
}

/* Puts the file's input types back on m's graph inputs (matched by name). */
static void restore_input_types(tui *t, ox_model *m)
{
    const ox_graph *o = t->orig->graph;
    for (int i = 0; i < t->n_in_types && i < o->n_inputs; i++) {
        ox_value *v = m == t->orig ? o->inputs[i] : ox_graph_find(m->graph, o->inputs[i]->name);
        if (!v || !v->is_input)
            continue;
        ox_type_free(v->type);
        v->type = t->in_types[i] ? ox_type_clone(t->in_types[i]) : NULL;
    }
}

/* After an undo: the restored copy was inferred with the shape overrides of
 * its time; put the file's input types back and infer with today's. */
void tui_reinfer_cur(tui *t)
{
    if (!t->shapes_edited || t->cur == t->orig)
        return;
    restore_input_types(t, t->cur);
    t->iopts.reset = true;
    t->iopts.stats = NULL;
    ox_infer_model(t->cur, &t->iopts, NULL);
    t->iopts.stats = &t->istats;
}

void tui_reinfer_model(const tui *t, ox_model *m)
{
    const ox_graph *o = t->orig->graph;
    for (int i = 0; i < t->n_in_types && i < o->n_inputs; i++) {
        ox_value *v = ox_graph_find(m->graph, o->inputs[i]->name);
        if (!v || !v->is_input)
            continue;
        ox_type_free(v->type);
        v->type = t->in_types[i] ? ox_type_clone(t->in_types[i]) : NULL;
    }
    ox_infer_opts io = t->iopts;
    io.reset = true;
    io.stats = NULL;
    ox_infer_model(m, &io, NULL);
}

void tui_clear_shapes(tui *t, ox_error *err)
{
    ox_infer_opts none = {0};
    shapes_install(t, &none, "shape overrides cleared", err);
}

static void add_line(tui *t, int *cap, int slot, ox_node *target, ox_value *v,
                     const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static void add_line(tui *t, int *cap, int slot, ox_node *target, ox_value *v,
                     const char *fmt, ...)
{
    if (t->det.n_lines == *cap) {
        int nc = *cap ? *cap * 2 : 32;
        tui_line *nl = realloc(t->det.lines, (size_t)nc * sizeof *nl);
        if (!nl)
            return;
        t->det.lines = nl;
        *cap = nc;
    }
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    tui_line *l = &t->det.lines[t->det.n_lines];
    l->text = ox_strdup(buf);
    if (!l->text)
        return;
    l->slot = slot;
    l->target = target;
    l->value = v;
    t->det.n_lines++;
}

static void attr_str(const ox_attr *a, char *buf, size_t len)
{
    size_t off = 0;
    switch (a->type) {
    case OX_ATTR_FLOAT: snprintf(buf, len, "%g", (double)a->f); break;
    case OX_ATTR_INT: snprintf(buf, len, "%lld", (long long)a->i); break;
    case OX_ATTR_STRING: snprintf(buf, len, "\"%.*s\"", (int)(a->s.len > 200 ? 200 : a->s.len),
                                  a->s.data ? a->s.data : ""); break;
    case OX_ATTR_INTS:
    case OX_ATTR_FLOATS:
        off += (size_t)snprintf(buf, len, "[");
        for (int i = 0; i < a->n && off + 24 < len; i++) {
            if (a->type == OX_ATTR_INTS)
                off += (size_t)snprintf(buf + off, len - off, "%s%lld", i ? "," : "",
                                        (long long)a->ints[i]);
            else
                off += (size_t)snprintf(buf + off, len - off, "%s%g", i ? "," : "",
                                        (double)a->floats[i]);
        }
        snprintf(buf + off, len - off, "%s]", off + 24 >= len ? "..." : "");
        break;
    case OX_ATTR_TENSOR:
        if (a->t) {
            char sb[128];
            snprintf(buf, len, "tensor %s[%s]", ox_dtype_name(a->t->dtype),
                     ox_shape_str(a->t->rank, a->t->dims, sb, sizeof sb));
        } else {
            snprintf(buf, len, "tensor");
        }
        break;
    case OX_ATTR_GRAPH: snprintf(buf, len, "graph (%d nodes)", a->g ? a->g->n_nodes : 0); break;
    case OX_ATTR_GRAPHS: snprintf(buf, len, "%d graphs", a->n); break;
    case OX_ATTR_STRINGS: snprintf(buf, len, "%d strings", a->n); break;
    default: snprintf(buf, len, "(type %d)", (int)a->type); break;
    }
}

void tui_detail_build(tui *t)
{
    for (int i = 0; i < t->det.n_lines; i++)
        free(t->det.lines[i].text);
    free(t->det.lines);
    t->det.lines = NULL;
    t->det.n_lines = 0;
    int cap = 0;
    ox_node *n = t->det.node;
    if (!n)
        return;
    char lb[256], tb[256], ab[512];
    ox_cost c;
    ox_node_cost(n, &c);
    char mb[32];
    add_line(t, &cap, OX_SLOT_UI_HEADER, NULL, NULL, "#%d  %s  %s%s%s", n->index, n->op_type,
             tui_node_label(n, lb, sizeof lb), n->domain && n->domain[0] ? "  domain " : "",
             n->domain ? n->domain : "");
    add_line(t, &cap, OX_SLOT_UI_NORMAL, NULL, NULL, "MACs %s   params %lld   category %s",
             ox_fmt_node_macs(&c, mb, sizeof mb), (long long)c.params,
             ox_opcat_name(ox_op_category(n->op_type)));
    if (c.control != OX_CTRL_NONE)
        add_line(t, &cap, OX_SLOT_UI_DIM, NULL, NULL, "  cost: %s", ox_cost_note(&c, ab, sizeof ab));
    add_line(t, &cap, OX_SLOT_UI_HEADER, NULL, NULL, "Inputs (Enter follows to the producer)");
    for (int i = 0; i < n->n_inputs; i++) {
        ox_value *v = n->inputs[i];
        if (!v) {
            add_line(t, &cap, OX_SLOT_UI_DIM, NULL, NULL, "  in%d  (omitted)", i);
            continue;
        }
        const char *from = v->init ? "initializer" : v->is_input ? "graph input" : NULL;
        if (v->producer)
            add_line(t, &cap, OX_SLOT_UI_NORMAL, v->producer, v, "  in%d  %s  %s  <- %s %s", i,
                     v->name, tui_value_type(v, tb, sizeof tb), v->producer->op_type,
                     tui_node_label(v->producer, lb, sizeof lb));
        else
            add_line(t, &cap, OX_SLOT_UI_NORMAL, NULL, v, "  in%d  %s  %s  (%s)", i, v->name,
                     tui_value_type(v, tb, sizeof tb), from ? from : "outer scope");
    }
    add_line(t, &cap, OX_SLOT_UI_HEADER, NULL, NULL, "Outputs (Enter follows to a consumer)");
    for (int i = 0; i < n->n_outputs; i++) {
        ox_value *v = n->outputs[i];
        if (!v)
            continue;
        add_line(t, &cap, OX_SLOT_UI_NORMAL, NULL, v, "  out%d %s  %s%s", i, v->name,
                 tui_value_type(v, tb, sizeof tb), v->is_output ? "  (graph output)" : "");
        for (int u = 0; u < v->n_uses; u++) {
            ox_node *cn = v->uses[u].node;
            if (!cn)
                continue;
            add_line(t, &cap, OX_SLOT_UI_NORMAL, cn, v, "        -> %s %s", cn->op_type,
                     tui_node_label(cn, lb, sizeof lb));
        }
    }
    if (n->n_attrs) {
        add_line(t, &cap, OX_SLOT_UI_HEADER, NULL, NULL, "Attributes");
        for (int i = 0; i < n->n_attrs; i++) {
            attr_str(&n->attrs[i], ab, sizeof ab);
            add_line(t, &cap, OX_SLOT_UI_NORMAL, NULL, NULL, "  %s = %s", n->attrs[i].name, ab);
        }
    }
    /* What quantize_dynamic did to this node's weight, from the last
     * action's report (docs/TUI.md). */
    for (int i = 0; t->st.have_rep && i < t->st.rep.n_quant; i++) {
        const ox_quant_entry *e = &t->st.rep.quant[i];
        if (e->node_id != n->id)
            continue;
        char b1[32], b2[32];
        add_line(t, &cap, OX_SLOT_UI_HEADER, NULL, NULL, "Quantization (quantize_dynamic, was %s%s%s)",
                 e->op, e->node[0] ? " " : "", e->node);
        add_line(t, &cap, OX_SLOT_UI_NORMAL, NULL, NULL,
                 "  weight %s: int8, %lld scale%s %.3g..%.3g, zero point %d", e->weight,
                 (long long)e->channels, e->channels == 1 ? "" : "s", e->scale_min, e->scale_max,
                 e->zero_point);
        if (e->snr_db < 1e300)
            snprintf(b1, sizeof b1, "%.1f dB", e->snr_db);
        else
            snprintf(b1, sizeof b1, "exact");
        snprintf(b2, sizeof b2, "%.3g", e->max_abs_err);
        add_line(t, &cap, OX_SLOT_UI_NORMAL, NULL, NULL,
                 "  max abs err %s, SNR %s, %lld -> %lld bytes", b2, b1,
                 (long long)e->bytes_before, (long long)e->bytes_after);
    }
    if (n->doc_string && n->doc_string[0])
        add_line(t, &cap, OX_SLOT_UI_DIM, NULL, NULL, "doc: %.300s", n->doc_string);
}

void tui_goto_node(tui *t, ox_node *n, bool push)
{
    if (!n)
        return;
    if (push && t->det.node && t->det.node != n) {
        if (t->det.n_hist == (int)(sizeof t->det.hist / sizeof *t->det.hist)) {
            memmove(t->det.hist, t->det.hist + 1, sizeof t->det.hist - sizeof *t->det.hist);
            t->det.n_hist--;
        }
        t->det.hist[t->det.n_hist++] = t->det.node;
    }
    t->det.node = n;
    t->nb.centre = n;
    t->nb.sel = 0;
    tui_detail_build(t);
    tui_panel *p = &t->panels[TUI_P_DETAIL];
    p->sel = 0;
    p->top = 0;
    /* The first followable line is the natural place for the cursor. */
    for (int i = 0; i < t->det.n_lines; i++)
        if (t->det.lines[i].target) {
            p->sel = i;
            break;
        }
    int r = tui_node_row(t, n);
    if (r >= 0)
        t->panels[TUI_P_NODES].sel = r;
}

const ox_tensor *tui_value_tensor(const ox_value *v)
{
    if (!v)
        return NULL;
    if (v->init)
        return v->init;
    const ox_node *p = v->producer;
    if (!p || !p->op_type || strcmp(p->op_type, "Constant") != 0 || (p->domain && p->domain[0]))
        return NULL;
    const ox_attr *a = ox_node_attr(p, "value");
    if (a && a->type == OX_ATTR_TENSOR && a->t)
        return a->t;
    /* value_float(s)/value_int(s)/value_string(s): what inference folded */
    return v->known;
}

void tui_compute_stats(tui *t, const ox_value *v)
{
    if (t->init.stats_for == v)
        return;
    t->init.stats_for = v;
    ox_tensor_stats st;
    memset(&st, 0, sizeof st);
    const ox_tensor *x = tui_value_tensor(v);
    t->init.stats_ok = x && x->dtype != OX_DT_STRING && x->numel > 0 &&
                       ox_tensor_stats_compute(x, &st);
    t->init.st_min = st.min;
    t->init.st_max = st.max;
    t->init.st_mean = st.mean;
    t->init.st_std = st.std;
    t->init.st_zero = st.zero_frac;
    t->init.st_nan = st.nan_count;
    t->init.st_inf = st.inf_count;
}
