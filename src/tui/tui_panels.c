/* The panels of the TUI: each one a table entry of draw and key handlers
 * (list panels only draw the visible rows: a 100k-node graph costs one
 * screenful per frame). Handlers change state and return flags; the main
 * loop decides when to repaint. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "onnxscope/io.h"
#include "onnxscope/profile.h"
#include "tui/tui_internal.h"

static const char *graph_path(tui *t, char *buf, size_t len)
{
    size_t off = (size_t)snprintf(buf, len, "main");
    for (int i = 1; i <= t->gdepth && off < len; i++) {
        const ox_graph *g = i < t->gdepth ? t->gstack[i] : t->graph;
        off += (size_t)snprintf(buf + off, len - off, " > %s", g->name ? g->name : "body");
    }
    return buf;
}

/* ---- Overview --------------------------------------------------------- */

static void overview_draw(tui *t, int y0, int h, int w)
{
    const ox_model *m = t->cur;
    const ox_model_cost *c = &t->cost;
    char a[64], b[64], d[64], e[64], pb[256];
    int y = y0, end = y0 + h;
    int lw = 14;
    int vw = w - lw - 2;
#define ROW(label, ...)                                                \
    do {                                                               \
        if (y < end) {                                                 \
            tui_put(y, 1, lw, OX_SLOT_UI_HEADER, t, label);            \
            tui_putf(y, lw + 1, vw, OX_SLOT_UI_NORMAL, t, __VA_ARGS__); \
        }                                                              \
        y++;                                                           \
    } while (0)
    {
        uint64_t ext = ox_model_external_bytes(m);
        char xb[48] = "";
        if (ext) {
            char e[32];
            snprintf(xb, sizeof xb, " +%s external", ox_fmt_bytes((int64_t)ext, true, e, sizeof e));
        }
        ROW("File", "%s  (%s%s)", t->path, ox_fmt_bytes((int64_t)m->file_size, true, a, sizeof a),
            xb);
    }
    /* Every figure below is of the shown model: say when that is the
     * optimized copy rather than the file. */
    if (t->cur != t->orig && y < end) {
        tui_put(y, 1, lw, OX_SLOT_UI_HEADER, t, "Showing");
        tui_putf(y, lw + 1, vw, OX_SLOT_UI_CHANGED, t,
                 "the optimized copy (%s), not the file: nodes %d -> %d; w saves it",
                 t->st.label, t->orig->graph->n_nodes, m->graph->n_nodes);
        y++;
    }
    if (t->base && y < end) {
        tui_put(y, 1, lw, OX_SLOT_UI_HEADER, t, "Compared with");
        if (t->mdiff_of == t->cur)
            tui_putf(y, lw + 1, vw, OX_SLOT_UI_CHANGED, t,
                     "A %s: %d nodes; %d changed, %d added, %d removed (9 Diff, ] [ go to them)",
                     tui_base_name(t), t->base->graph->n_nodes, t->mdiff.changed, t->mdiff.added,
                     t->mdiff.removed);
        else
            tui_putf(y, lw + 1, vw, OX_SLOT_UI_CHANGED, t, "%s", t->base_path);
        y++;
    }
    ROW("Producer", "%s %s   IR version %lld   model version %lld",
        m->producer_name && m->producer_name[0] ? m->producer_name : "(none)",
        m->producer_version ? m->producer_version : "", (long long)m->ir_version,
        (long long)m->model_version);
    char ops[256];
    size_t off = 0;
    ops[0] = 0;
    for (int i = 0; i < m->n_opsets && off + 40 < sizeof ops; i++)
        off += (size_t)snprintf(ops + off, sizeof ops - off, "%s%s %lld", i ? ", " : "",
                                m->opsets[i].domain && m->opsets[i].domain[0]
                                    ? m->opsets[i].domain : "ai.onnx",
                                (long long)m->opsets[i].version);
    ROW("Opsets", "%s", ops);
    {
        char cb[64] = "";
        if (t->init.n_const)
            snprintf(cb, sizeof cb, " + %d in Constant nodes", t->init.n_const);
        ROW("Graph", "%s   %d nodes (%d with subgraphs)   %d initializers%s",
            graph_path(t, pb, sizeof pb), t->graph->n_nodes, t->ov.n_nodes_rec,
            t->init.n_vals - t->init.n_const, cb);
    }
    ROW("Params", "%s   (%s deduplicated)", ox_fmt_count(c->params, true, a, sizeof a),
        ox_fmt_count(c->params_dedup, true, b, sizeof b));
    ROW("Weights", "%s", ox_fmt_bytes(c->weights_bytes, true, a, sizeof a));
    if (c->known)
        ROW("MACs", "%s   FLOPs %s%s", ox_fmt_model_macs(c, a, sizeof a),
            ox_fmt_model_flops(c, b, sizeof b),
            c->n_upper ? "   (<= : If nodes counted by their larger branch)" : "");
    else if (!strcmp(ox_fmt_model_macs(c, a, sizeof a), "?"))
        ROW("MACs", "?   (%d nodes unknown: set input shapes in panel 5)", c->n_unknown);
    else /* the known part as a lower bound, never a partial sum alone */
        ROW("MACs", "%s   (set input shapes in panel 5)", a);
    ROW("Peak activ.", "%s   memory total %s%s",
        ox_fmt_bytes(c->peak_activation_bytes, c->peak_known, d, sizeof d),
        ox_fmt_bytes(c->memory_bytes, c->peak_known, e, sizeof e),
        c->peak_known ? "" : "   (dynamic shapes: set them in panel 5)");
    y++;
    const ox_graph *g = m->graph;
    for (int i = 0; i < g->n_inputs && y < end - 4; i++) {
        if (g->inputs[i]->init)
            continue;
        ROW(i == 0 ? "Inputs" : "", "%s  %s", g->inputs[i]->name,
            tui_value_type(g->inputs[i], a, sizeof a));
    }
    for (int i = 0; i < g->n_outputs && y < end - 3; i++)
        ROW(i == 0 ? "Outputs" : "", "%s  %s", g->outputs[i]->name,
            tui_value_type(g->outputs[i], a, sizeof a));
    /* Whole "Op count" items per line, wrapped over the remaining lines
     * (the histogram is computed once per refresh, not per frame). */
    if (y < end)
        tui_put(y, 1, lw, OX_SLOT_UI_HEADER, t, "Ops");
    char line[512];
    size_t ll = 0;
    line[0] = 0;
    for (int k = 0; k <= t->ov.n_ophist && y < end; k++) {
        const char *item = k < t->ov.n_ophist ? t->ov.ophist[k] : "";
        int il = (int)strlen(item);
        if (k == t->ov.n_ophist || (ll && (int)(ll + 2 + (size_t)il) > vw)) {
            if (ll)
                tui_put(y++, lw + 1, vw, OX_SLOT_UI_NORMAL, t, line);
            ll = 0;
            line[0] = 0;
            if (k == t->ov.n_ophist)
                break;
        }
        ll += (size_t)snprintf(line + ll, sizeof line - ll, "%s%s", ll ? "  " : "", item);
        if (ll >= sizeof line)
            ll = sizeof line - 1;
    }
    if (y < end && (t->istats.unknown_ops || t->istats.failed))
        tui_putf(y++, 1, w - 2, OX_SLOT_UI_WARNING, t,
                 "inference: %d unknown ops, %d failed%s%s", t->istats.unknown_ops,
                 t->istats.failed, t->istats.first_problem[0] ? ": " : "",
                 t->istats.first_problem);
#undef ROW
}

/* ---- Nodes ------------------------------------------------------------- */

static int nodes_rows(tui *t)
{
    return t->nodes.n_order;
}

/* "index op name shapes MACs %": the op column as wide as the widest op
 * of the graph (up to a quarter of the width), the name and the shapes
 * share the rest (widths measured once per refresh). */
static void nodes_cols(const tui *t, int w, int *op_w, int *name_w, int *shape_w)
{
    int ow = t->nodes.op_w < 2 ? 2 : t->nodes.op_w;
    if (ow > w / 4)
        ow = w / 4 > 8 ? w / 4 : 8;
    *op_w = ow;
    int fixed = 7 + ow + 1 + 9 + 7;
    int rest = w - fixed;
    /* The name gets what it needs, keeping 12 columns for the shapes;
     * shapes take the rest up to 48 columns, then the name again. */
    int nw = t->nodes.name_w < rest - 13 ? t->nodes.name_w : rest - 13;
    if (nw < 8)
        nw = 8;
    int sw = rest - nw - 1;
    if (sw > 48) {
        nw += sw - 48;
        sw = 48;
    }
    *name_w = nw;
    *shape_w = sw;
}

static const char *nodes_header(tui *t, char *buf, int w)
{
    int ow, nw, sw;
    nodes_cols(t, w, &ow, &nw, &sw);
    snprintf(buf, 512, "%6s %-*s %-*s %-*s %8s %6s", "#", ow, "op", nw, "name", sw, "out shape",
             "MACs", "%");
    return buf;
}

static void nodes_draw_row(tui *t, int row, int y, int w, bool sel)
{
    if (row < 0 || row >= t->nodes.n_order)
        return;
    const tui_row_cache *r = &t->nodes.rc[t->nodes.order[row]];
    const ox_node *n = r->node;
    int ow, nw, sw;
    nodes_cols(t, w, &ow, &nw, &sw);
    char lb[256], sb[512], mb[32], pct[16];
    tui_node_label(n, lb, sizeof lb);
    tui_out_shapes(n, sb, sizeof sb);
    ox_fmt_cost(r->macs, 0, r->known, r->upper, 0, mb, sizeof mb);
    /* A share of a partial sum would be wrong: only of a known total. */
    if (t->nodes.sum_known && t->nodes.sum_macs > 0 && r->known)
        snprintf(pct, sizeof pct, "%5.1f", 100.0 * (double)r->macs / (double)t->nodes.sum_macs);
    else
        snprintf(pct, sizeof pct, "-");
    int mark = tui_node_mark(t, n);
    bool touched = mark != 0;
    int base = sel ? OX_SLOT_UI_SELECTED : touched ? OX_SLOT_UI_CHANGED : OX_SLOT_UI_NORMAL;
    if (sel)
        tui_fill(y, 0, w, base, t);
    int opslot = sel ? base : (int)ox_theme_opcat_slot(ox_op_category(n->op_type));
    tui_putf(y, 0, 7, base, t, "%c%5d ", touched ? mark : ' ', n->index);
    tui_put(y, 7, ow, opslot, t, n->op_type);
    tui_put(y, 8 + ow, nw, base, t, lb);
    int x = 8 + ow + nw + 1;
    tui_put(y, x, sw, sel ? base : OX_SLOT_UI_DIM, t, sb);
    x += sw + 1;
    tui_putf(y, x, w - x, base, t, "%8s %6s", mb, pct);
}

static bool nodes_match(tui *t, int row, const char *q)
{
    const char *tensor;
    return tui_node_match(t->nodes.rc[t->nodes.order[row]].node, q, &tensor);
}

static int nodes_key(tui *t, tui_action a)
{
    tui_panel *p = &t->panels[TUI_P_NODES];
    switch (a) {
    case TUI_A_ENTER:
        if (p->sel >= 0 && p->sel < t->nodes.n_order) {
            tui_goto_node(t, t->nodes.rc[t->nodes.order[p->sel]].node, true);
            t->det.n_hist = 0;
            tui_switch(t, TUI_P_DETAIL);
        }
        return TUI_REDRAW;
    case TUI_A_NEIGH:
        if (p->sel >= 0 && p->sel < t->nodes.n_order) {
            tui_goto_node(t, t->nodes.rc[t->nodes.order[p->sel]].node, false);
            tui_switch(t, TUI_P_NEIGH);
        }
        return TUI_REDRAW;
    case TUI_A_CHANGED_ONLY:
        t->nodes.changed_only = !t->nodes.changed_only;
        tui_model_resort(t);
        if (t->nodes.changed_only && tui_compare_marks(t))
            tui_set_status(t, OX_SLOT_UI_OK,
                           "only the %d nodes added or changed since A %s (C shows all)",
                           t->nodes.n_order, tui_base_name(t));
        else if (t->nodes.changed_only)
            tui_set_status(t, OX_SLOT_UI_OK, "only the %d nodes the last action changed (C shows all)",
                           t->nodes.n_order);
        else
            tui_set_status(t, OX_SLOT_UI_OK, "all nodes");
        return TUI_REDRAW;
    case TUI_A_HIDE_CONST:
        t->nodes.hide_const = !t->nodes.hide_const;
        tui_model_resort(t);
        tui_set_status(t, OX_SLOT_UI_OK, "Constant nodes %s (%d of %d nodes listed)",
                       t->nodes.hide_const ? "hidden" : "shown", t->nodes.n_order, t->nodes.n_rc);
        return TUI_REDRAW;
    case TUI_A_SORT:
        t->nodes.sort = (tui_sort)((t->nodes.sort + 1) % TUI_SORT_COUNT);
        tui_model_resort(t);
        p->sel = p->top = 0;   /* a new order starts at its top, not where the node went */
        {
            static const char *const names[] = {"topological order", "MACs (largest first)",
                                                "op type", "name"};
            tui_set_status(t, OX_SLOT_UI_OK, "sorted by %s", names[t->nodes.sort]);
        }
        return TUI_REDRAW;
    default:
        return TUI_UNHANDLED;
    }
}

static int nodes_footer_lines(tui *t)
{
    (void)t;
    return 1;
}

static void nodes_footer(tui *t, int y0, int h, int w)
{
    (void)h;
    static const char *const names[] = {"order", "MACs", "op", "name"};
    char mb[64];
    char fb[400];
    size_t off = (size_t)snprintf(fb, sizeof fb, "%s", t->nodes.filter[0] ? t->nodes.filter : "");
    if (t->nodes.consumers[0] && off < sizeof fb)
        off += (size_t)snprintf(fb + off, sizeof fb - off, "%sreaders of %s", off ? " " : "",
                                t->nodes.consumers);
    if (t->nodes.hide_const && off < sizeof fb)
        off += (size_t)snprintf(fb + off, sizeof fb - off, "%s!Constant (H)", off ? " " : "");
    if (t->nodes.changed_only && off < sizeof fb)
        off += (size_t)snprintf(fb + off, sizeof fb - off, "%schanged (C)", off ? " " : "");
    tui_putf(y0, 0, w, OX_SLOT_UI_DIM, t, "%d of %d nodes   sort: %s (o)   filter: %s (f)   total MACs %s",
             t->nodes.n_order, t->nodes.n_rc, names[t->nodes.sort], off ? fb : "none",
             ox_fmt_cost(t->nodes.sum_macs, t->nodes.sum_lower, t->nodes.sum_known, t->nodes.sum_upper,
                         t->nodes.sum_unknown, mb, sizeof mb));
}

/* ---- Node detail ---------------------------------------------------------- */

static int detail_rows(tui *t)
{
    return t->det.n_lines;
}

static void detail_draw_row(tui *t, int row, int y, int w, bool sel)
{
    if (row < 0 || row >= t->det.n_lines)
        return;
    const tui_line *l = &t->det.lines[row];
    int slot = sel ? OX_SLOT_UI_SELECTED : l->slot;
    if (sel)
        tui_fill(y, 0, w, slot, t);
    tui_put(y, 0, w, slot, t, l->text);
}

static bool detail_match(tui *t, int row, const char *q)
{
    return strcasestr(t->det.lines[row].text, q) != NULL;
}

static int detail_key(tui *t, tui_action a)
{
    tui_panel *p = &t->panels[TUI_P_DETAIL];
    switch (a) {
    case TUI_A_ENTER:
        if (p->sel >= 0 && p->sel < t->det.n_lines) {
            tui_line *l = &t->det.lines[p->sel];
            if (l->target) {
                tui_goto_node(t, l->target, true);
                return TUI_REDRAW;
            }
            if (l->value && tui_value_tensor(l->value)) {
                for (int i = 0; i < t->init.n_vals; i++)
                    if (t->init.vals[i] == l->value)
                        t->panels[TUI_P_INITS].sel = i;
                tui_switch(t, TUI_P_INITS);
                return TUI_REDRAW;
            }
            tui_set_status(t, OX_SLOT_UI_DIM, "nothing to follow on this line");
        }
        return TUI_REDRAW;
    case TUI_A_BACK:
        if (t->det.n_hist > 0) {
            ox_node *prev = t->det.hist[--t->det.n_hist];
            tui_goto_node(t, prev, false);
            return TUI_REDRAW;
        }
        return TUI_UNHANDLED;
    case TUI_A_NEIGH:
        tui_switch(t, TUI_P_NEIGH);
        return TUI_REDRAW;
    default:
        return TUI_UNHANDLED;
    }
}

/* ---- Initializers --------------------------------------------------------- */

static int inits_rows(tui *t)
{
    return t->init.n_vals;
}

static const char *inits_header(tui *t, char *buf, int w)
{
    (void)t;
    int nw = w - 10 - 22 - 12 - 3;
    snprintf(buf, 512, "%-*s %-10s %-22s %10s", nw, "name", "dtype", "shape", "bytes");
    return buf;
}

static void inits_draw_row(tui *t, int row, int y, int w, bool sel)
{
    if (row < 0 || row >= t->init.n_vals)
        return;
    const ox_value *v = t->init.vals[row];
    const ox_tensor *x = tui_value_tensor(v);
    if (!x)
        return;
    int nw = w - 10 - 22 - 12 - 3;
    char sb[128], bb[32];
    int slot = sel ? OX_SLOT_UI_SELECTED : OX_SLOT_UI_NORMAL;
    if (sel)
        tui_fill(y, 0, w, slot, t);
    /* A weight held by a Constant node says so after its name. */
    tui_putf(y, 0, nw + 1, slot, t, "%-*s ", nw, v->name);
    if (!v->init) {
        int nl = tui_utf8_cols(v->name);
        if (nl + 12 < nw)
            tui_put(y, nl + 1, 11, sel ? slot : OX_SLOT_UI_DIM, t, "(Constant)");
    }
    tui_putf(y, nw + 1, w - nw - 1, slot, t, "%-10s %-22.22s %10s", ox_dtype_name(x->dtype),
             ox_shape_str(x->rank, x->dims, sb, sizeof sb),
             ox_fmt_bytes((int64_t)x->nbytes, true, bb, sizeof bb));
}

static bool inits_match(tui *t, int row, const char *q)
{
    return strcasestr(t->init.vals[row]->name, q) != NULL;
}

/* Enter on an initializer: the Nodes list shows the nodes that read it,
 * the cursor on the first (Enter there opens it; f with nothing clears). */
static int inits_key(tui *t, tui_action a)
{
    tui_panel *p = &t->panels[TUI_P_INITS];
    if (a != TUI_A_ENTER || p->sel < 0 || p->sel >= t->init.n_vals)
        return TUI_UNHANDLED;
    const ox_value *v = t->init.vals[p->sel];
    int uses = 0;
    for (int u = 0; u < v->n_uses; u++)
        uses += v->uses[u].node && v->uses[u].node->graph == t->graph;
    if (!uses) {
        tui_set_status(t, OX_SLOT_UI_WARNING, "%s: no node of this graph reads it", v->name);
        return TUI_REDRAW;
    }
    tui_nodes_clear_filters(t);
    snprintf(t->nodes.consumers, sizeof t->nodes.consumers, "%s", v->name);
    tui_model_resort(t);
    t->panels[TUI_P_NODES].sel = t->panels[TUI_P_NODES].top = 0;
    if (t->nodes.n_order)
        tui_goto_node(t, t->nodes.rc[t->nodes.order[0]].node, false);
    tui_switch(t, TUI_P_NODES);
    tui_set_status(t, OX_SLOT_UI_OK, "%s: read by %d node%s (Enter opens one; f + Enter lists all)",
                   v->name, t->nodes.n_order, t->nodes.n_order == 1 ? "" : "s");
    return TUI_REDRAW;
}

static int inits_footer_lines(tui *t)
{
    (void)t;
    return 4;
}

static void inits_footer(tui *t, int y0, int h, int w)
{
    (void)h;
    tui_panel *p = &t->panels[TUI_P_INITS];
    if (p->sel < 0 || p->sel >= t->init.n_vals) {
        tui_put(y0 + 1, 1, w - 2, OX_SLOT_UI_DIM, t, "no initializers in this graph");
        return;
    }
    const ox_value *v = t->init.vals[p->sel];
    tui_compute_stats(t, v);
    const ox_tensor *x = tui_value_tensor(v);
    if (!x)
        return;
    for (int i = 0; i < w; i++)
        tui_put(y0, i, 1, OX_SLOT_UI_BORDER, t, tui_hline(t));
    if (t->init.stats_ok)
        tui_putf(y0 + 1, 1, w - 2, OX_SLOT_UI_NORMAL, t,
                 "min %.6g  max %.6g  mean %.6g  std %.6g  zeros %.1f%%%s", t->init.st_min,
                 t->init.st_max, t->init.st_mean, t->init.st_std, 100.0 * t->init.st_zero,
                 t->init.st_nan || t->init.st_inf ? "  (NaN/Inf present)" : "");
    else
        tui_put(y0 + 1, 1, w - 2, OX_SLOT_UI_DIM, t, "no statistics (empty or non-numeric)");
    char prev[1024];
    size_t off = (size_t)snprintf(prev, sizeof prev, "values: ");
    if (x->dtype == OX_DT_STRING) {
        for (int64_t i = 0; i < x->numel && i < 8 && off + 64 < sizeof prev; i++)
            off += (size_t)snprintf(prev + off, sizeof prev - off, "\"%.20s\" ",
                                    x->strings && x->strings[i].data ? x->strings[i].data : "");
    } else if (ox_tensor_data(x)) {
        for (int64_t i = 0; i < x->numel && i < 16 && off + 32 < sizeof prev; i++)
            off += (size_t)snprintf(prev + off, sizeof prev - off, "%.5g ",
                                    ox_tensor_get_f64(x, i));
        if (x->numel > 16)
            snprintf(prev + off, sizeof prev - off, "...");
    } else {
        snprintf(prev + off, sizeof prev - off, "(data not loaded)");
    }
    tui_put(y0 + 2, 1, w - 2, OX_SLOT_UI_DIM, t, prev);
    tui_putf(y0 + 3, 1, w - 2, OX_SLOT_UI_DIM, t, "%lld elements%s%s",
             (long long)x->numel, x->external ? "   external: " : "",
             x->external && x->external->location ? x->external->location : "");
}

/* ---- Inputs / Outputs --------------------------------------------------------- */

static int io_count_inputs(const tui *t)
{
    int n = 0;
    for (int i = 0; i < t->cur->graph->n_inputs; i++)
        if (!t->cur->graph->inputs[i]->init)
            n++;
    return n;
}

static ox_value *io_value(tui *t, int row, bool *is_in)
{
    const ox_graph *g = t->cur->graph;
    int k = 0;
    for (int i = 0; i < g->n_inputs; i++) {
        if (g->inputs[i]->init)
            continue;
        if (k++ == row) {
            *is_in = true;
            return g->inputs[i];
        }
    }
    row -= k;
    *is_in = false;
    if (row >= 0 && row < g->n_outputs)
        return g->outputs[row];
    return NULL;
}

static int io_rows(tui *t)
{
    return io_count_inputs(t) + t->cur->graph->n_outputs;
}

/* The name column as wide as the widest name, up to a third of the width:
 * the type gets the rest. */
static int io_name_cols(const tui *t, int w)
{
    int nw = t->io.name_w;
    return nw > w / 3 ? w / 3 : nw;
}

static const char *io_header(tui *t, char *buf, int w)
{
    snprintf(buf, 512, "%-4s %-*s %s", "", io_name_cols(t, w), "name", "type");
    return buf;
}

static const ox_shape_override *find_override(const tui *t, const char *name)
{
    for (int i = 0; i < t->iopts.n_shapes; i++)
        if (strcmp(t->iopts.shapes[i].name, name) == 0)
            return &t->iopts.shapes[i];
    return NULL;
}

static void io_draw_row(tui *t, int row, int y, int w, bool sel)
{
    bool in;
    ox_value *v = io_value(t, row, &in);
    if (!v)
        return;
    char tb[1024], note[128];
    int slot = sel ? OX_SLOT_UI_SELECTED : OX_SLOT_UI_NORMAL;
    if (sel)
        tui_fill(y, 0, w, slot, t);
    int nw = io_name_cols(t, w);
    tui_putf(y, 0, 5, slot, t, "%-4s ", in ? "in" : "out");
    tui_put(y, 5, nw, slot, t, v->name);
    /* A dim the file declared negative: '?' and the note `info` prints. */
    ox_type_neg_note(v->type, note, sizeof note);
    tui_putf(y, 6 + nw, w - 6 - nw, slot, t, "%s%s%s%s", tui_value_type(v, tb, sizeof tb),
             in && find_override(t, v->name) ? "   (override)" : "", *note ? "   " : "", note);
}

static bool io_match(tui *t, int row, const char *q)
{
    bool in;
    ox_value *v = io_value(t, row, &in);
    return v && strcasestr(v->name, q);
}

static int io_footer_lines(tui *t)
{
    (void)t;
    return 3;
}

static void io_footer(tui *t, int y0, int h, int w)
{
    (void)h;
    for (int i = 0; i < w; i++)
        tui_put(y0, i, 1, OX_SLOT_UI_BORDER, t, tui_hline(t));
    tui_put(y0 + 1, 1, w - 2, OX_SLOT_UI_DIM, t,
            "e: edit the selected input's shape (e.g. 4x3x224x224, N for a symbol)");
    char mb[64], pb[32];
    tui_putf(y0 + 2, 1, w - 2, OX_SLOT_UI_DIM, t, "c: clear overrides   MACs %s   peak %s",
             ox_fmt_model_macs(&t->cost, mb, sizeof mb),
             ox_fmt_bytes(t->cost.peak_activation_bytes, t->cost.peak_known, pb, sizeof pb));
}

static int io_key(tui *t, tui_action a)
{
    tui_panel *p = &t->panels[TUI_P_IO];
    bool in;
    switch (a) {
    case TUI_A_EDIT:
    case TUI_A_ENTER: {
        ox_value *v = io_value(t, p->sel, &in);
        if (!v || !in) {
            tui_set_status(t, OX_SLOT_UI_WARNING, "only graph inputs have editable shapes");
            return TUI_REDRAW;
        }
        char sb[256] = "";
        size_t off = 0;
        const ox_type *ty = v->type;
        if (ty && ty->kind == OX_TYPE_TENSOR && ty->has_shape) {
            for (int d = 0; d < ty->rank && off + 24 < sizeof sb; d++) {
                if (ty->dims[d].value >= 0)
                    off += (size_t)snprintf(sb + off, sizeof sb - off, "%s%lld", d ? "x" : "",
                                            (long long)ty->dims[d].value);
                else
                    off += (size_t)snprintf(sb + off, sizeof sb - off, "%s%s", d ? "x" : "",
                                            ty->dims[d].param ? ty->dims[d].param : "?");
            }
            if (ty->rank == 0)
                snprintf(sb, sizeof sb, "scalar");
        }
        snprintf(t->pending_path, sizeof t->pending_path, "%s", v->name);
        tui_prompt_open(t, TUI_PROMPT_SHAPE, sb);
        return TUI_REDRAW;
    }
    case TUI_A_CLEAR: {
        ox_error err = {0};
        tui_clear_shapes(t, &err);
        if (!t->job)
            tui_set_status(t, OX_SLOT_UI_OK, "shape overrides cleared");
        return TUI_REDRAW;
    }
    default:
        return TUI_UNHANDLED;
    }
}

/* ---- Neighbourhood ---------------------------------------------------------- */

#define NB_MAX 64

static int neigh_lists(tui *t, ox_node **prod, int *np, ox_node **cons, int *nc)
{
    *np = *nc = 0;
    ox_node *n = t->nb.centre;
    if (!n)
        return 0;
    for (int i = 0; i < n->n_inputs; i++) {
        ox_value *v = n->inputs[i];
        if (!v || !v->producer || v->producer->graph != n->graph)
            continue;
        bool dup = false;
        for (int k = 0; k < *np; k++)
            dup |= prod[k] == v->producer;
        if (!dup && *np < NB_MAX)
            prod[(*np)++] = v->producer;
    }
    for (int i = 0; i < n->n_outputs; i++) {
        ox_value *v = n->outputs[i];
        if (!v)
            continue;
        for (int u = 0; u < v->n_uses; u++) {
            ox_node *c = v->uses[u].node;
            if (!c || c->graph != n->graph)
                continue;
            bool dup = false;
            for (int k = 0; k < *nc; k++)
                dup |= cons[k] == c;
            if (!dup && *nc < NB_MAX)
                cons[(*nc)++] = c;
        }
    }
    return *np + *nc;
}

/* ---- the layered view: radius 1-3 ----
 * Layer 0 is the centre node, layer -k its producers k steps up, +k its
 * consumers k steps down (each node at its first distance, at most
 * LAYER_MAX per layer). A node is one line, `[op name]`; between two
 * layers three rows: stubs under the upper nodes with the shape of what
 * they pass down, the bus (corners at its ends, tees where a stub joins),
 * stubs into the lower nodes. When that is too tall the last row goes. */
#define LAYER_MAX 16
#define RADIUS_MAX 3

typedef struct nb_layer {
    ox_node *n[LAYER_MAX];
    int cnt, more;        /* nodes kept, nodes left out */
    int col[LAYER_MAX];   /* connection column of each */
} nb_layer;

static bool nb_seen(nb_layer *L, int nl, const ox_node *x)
{
    for (int l = 0; l < nl; l++)
        for (int i = 0; i < L[l].cnt; i++)
            if (L[l].n[i] == x)
                return true;
    return false;
}

static void nb_add(nb_layer *L, int nl, int li, ox_node *x)
{
    if (nb_seen(L, nl, x))
        return;
    if (L[li].cnt < LAYER_MAX)
        L[li].n[L[li].cnt++] = x;
    else
        L[li].more++;
}

/* Layers [0 .. 2r]: index r is the centre. */
static void nb_layers(ox_node *centre, int r, nb_layer *L)
{
    int nl = 2 * r + 1;
    memset(L, 0, (size_t)nl * sizeof *L);
    L[r].n[L[r].cnt++] = centre;
    for (int k = 1; k <= r; k++) {
        nb_layer *from = &L[r - k + 1], *up = &L[r - k];
        for (int i = 0; i < from->cnt; i++) {
            ox_node *n = from->n[i];
            for (int j = 0; j < n->n_inputs; j++) {
                ox_value *v = n->inputs[j];
                if (v && v->producer && v->producer->graph == n->graph)
                    nb_add(L, nl, r - k, v->producer);
            }
        }
        (void)up;
        from = &L[r + k - 1];
        for (int i = 0; i < from->cnt; i++) {
            ox_node *n = from->n[i];
            for (int o = 0; o < n->n_outputs; o++) {
                ox_value *v = n->outputs[o];
                for (int u = 0; v && u < v->n_uses; u++) {
                    ox_node *c = v->uses[u].node;
                    if (c && c->graph == n->graph)
                        nb_add(L, nl, r + k, c);
                }
            }
        }
    }
}

/* Whether `lo` reads an output of `hi`. */
static bool nb_edge(const ox_node *hi, const ox_node *lo)
{
    for (int j = 0; j < lo->n_inputs; j++)
        if (lo->inputs[j] && lo->inputs[j]->producer == hi)
            return true;
    return false;
}

/* Box pieces by the directions a junction joins: up, down, left, right. */
static const char *nb_piece(const tui *t, bool up, bool down, bool left, bool right)
{
    if (t->ascii)
        return (left || right) && (up || down) ? "+" : (left || right) ? "-" : "|";
    static const char *const tab[16] = {
        /* udlr */ " ", "\xe2\x94\x80", "\xe2\x94\x80", "\xe2\x94\x80",
        /* d */ "\xe2\x94\x82", "\xe2\x94\x8c", "\xe2\x94\x90", "\xe2\x94\xac",
        /* u */ "\xe2\x94\x82", "\xe2\x94\x94", "\xe2\x94\x98", "\xe2\x94\xb4",
        /* ud */ "\xe2\x94\x82", "\xe2\x94\x9c", "\xe2\x94\xa4", "\xe2\x94\xbc",
    };
    return tab[(up ? 8 : 0) | (down ? 4 : 0) | (left ? 2 : 0) | (right ? 1 : 0)];
}

/* One layer on line y: each node centred in an equal slot; records the
 * connection columns. sel_node is highlighted. */
/* The last step's mark of a node of the model before it: '-' removed,
 * '*' edited (kept, rewritten). */
static int before_mark(const tui *t, const ox_node *n)
{
    if (tui_compare_marks(t))
        return tui_compare_base_mark(t, n);
    const ox_pass_report *r = &t->st.rep;
    if (!t->st.have_rep)
        return 0;
    for (int i = 0; i < r->n_removed_ids; i++)
        if (r->removed_ids[i] == n->id)
            return '-';
    for (int i = 0; i < r->n_touched; i++)
        if (r->touched[i] == n->id)
            return '*';
    return 0;
}

static void nb_draw_layer(tui *t, int y, int xo, int w, nb_layer *L, const ox_node *sel_node,
                          bool centre, bool draw, bool before)
{
    int cnt = L->cnt;
    int slot_w = cnt ? w / cnt : w;
    int show = cnt;
    if (slot_w < 14) {   /* too many for the width: keep what fits, say how many not */
        show = w / 14 > 1 ? w / 14 - 1 : 1;
        if (show > cnt)
            show = cnt;
        slot_w = w / (show + 1);
    }
    for (int i = 0; i < cnt; i++)
        L->col[i] = -1;
    for (int i = 0; i < show; i++) {
        const ox_node *n = L->n[i];
        char lb[256], text[320];
        int mark = before ? before_mark(t, n) : tui_node_mark(t, n);
        snprintf(text, sizeof text, "[%s%s %s]", mark == '+' ? "+ " : mark == '-' ? "- " : mark ? "* " : "",
                 n->op_type ? n->op_type : "?", tui_node_label(n, lb, sizeof lb));
        int tw = tui_utf8_cols(text);
        int room = slot_w - 1;
        if (centre)
            room = w - 2;
        if (tw > room) {
            /* keep the closing bracket visible */
            int keep = room - 1;
            char cut[sizeof text - 1];   /* room for the "]" appended below */
            size_t cl = strlen(text) < sizeof cut - 1 ? strlen(text) : sizeof cut - 1;
            memcpy(cut, text, cl);
            cut[cl] = 0;
            while ((int)strlen(cut) > 0 && tui_utf8_cols(cut) > keep)
                cut[strlen(cut) - 1] = 0;
            snprintf(text, sizeof text, "%s]", cut);
            tw = tui_utf8_cols(text);
        }
        int mid = centre ? w / 2 : i * slot_w + slot_w / 2;
        int x = mid - tw / 2;
        if (x < 0)
            x = 0;
        L->col[i] = xo + x + tw / 2;
        int sl = n == sel_node ? OX_SLOT_UI_SELECTED
                 : mark == '-' ? OX_SLOT_UI_REMOVED
                 : centre      ? OX_SLOT_UI_HEADER
                               : (int)ox_theme_opcat_slot(ox_op_category(n->op_type));
        if (draw)
            tui_put(y, xo + x, tw, sl, t, text);
    }
    if (draw && (show < cnt || L->more))
        tui_putf(y, xo + show * slot_w, w - show * slot_w, OX_SLOT_UI_DIM, t, "+%d more",
                 cnt - show + L->more);
}

/* The rows between layer A (above) and B (below) from line y: returns the
 * rows used (rows = 3, or 2 without the lower stubs). */
static int nb_draw_links(tui *t, int y, int xo, int w, const nb_layer *A, const nb_layer *B,
                         int rows)
{
    w += xo;   /* columns are absolute */
    bool up[512] = {0}, down[512] = {0};
    int lo = w, hi = -1;
    for (int i = 0; i < A->cnt; i++) {
        if (A->col[i] < 0 || A->col[i] >= w || A->col[i] >= 512)
            continue;
        bool linked = false;
        for (int k = 0; k < B->cnt && !linked; k++)
            linked = B->col[k] >= 0 && nb_edge(A->n[i], B->n[k]);
        if (!linked)
            continue;
        int c = A->col[i];
        up[c] = true;
        lo = c < lo ? c : lo;
        hi = c > hi ? c : hi;
        /* stub and the shape passed down */
        char sb[200];
        tui_put(y, c, 1, OX_SLOT_UI_BORDER, t, tui_vline(t));
        tui_putf(y, c + 2, w - c - 3 > 24 ? 24 : w - c - 3, OX_SLOT_UI_DIM, t, "%s",
                 tui_out_shapes(A->n[i], sb, sizeof sb));
    }
    for (int k = 0; k < B->cnt; k++) {
        if (B->col[k] < 0 || B->col[k] >= w || B->col[k] >= 512)
            continue;
        bool linked = false;
        for (int i = 0; i < A->cnt && !linked; i++)
            linked = A->col[i] >= 0 && nb_edge(A->n[i], B->n[k]);
        if (!linked)
            continue;
        int c = B->col[k];
        down[c] = true;
        lo = c < lo ? c : lo;
        hi = c > hi ? c : hi;
        if (rows == 3)
            tui_put(y + 2, c, 1, OX_SLOT_UI_BORDER, t, tui_vline(t));
    }
    for (int c = lo; c <= hi; c++)
        tui_put(y + 1, c, 1, OX_SLOT_UI_BORDER, t, nb_piece(t, up[c], down[c], c > lo, c < hi));
    return rows;
}

static int neigh_radius(const tui *t)
{
    return t->nb.radius < 1 ? 1 : t->nb.radius > RADIUS_MAX ? RADIUS_MAX : t->nb.radius;
}

/* The layered view of `centre` in columns [xo, xo + w) from line y0, h
 * lines high (before: a node of the model before the last step). */
static void nb_view(tui *t, ox_node *centre, const ox_node *sel, int r, int y0, int h, int xo,
                    int w, bool before)
{
    nb_layer L[2 * RADIUS_MAX + 1];
    nb_layers(centre, r, L);
    /* Drop empty outer layers (a node near the inputs or outputs). */
    int first = 0, last = 2 * r;
    while (first < r && L[first].cnt == 0)
        first++;
    while (last > r && L[last].cnt == 0)
        last--;
    int nlay = last - first + 1;
    int rows = 3;
    int need = 1 + nlay + (nlay - 1) * rows;
    if (need > h) {
        rows = 2;
        need = 1 + nlay + (nlay - 1) * rows;
    }
    if (need > h) {
        tui_putf(y0, xo + 1, w - 2, OX_SLOT_UI_WARNING, t,
                 "radius %d needs %d rows: '-' for a smaller radius, or a taller window", r, need);
        return;
    }
    int y = y0;
    if (first == r)
        tui_put(y, xo + 1, w - 2, OX_SLOT_UI_DIM, t, "(no producers: graph inputs and initializers only)");
    y++;
    /* Columns first: the links between two layers need both. */
    for (int l = first; l <= last; l++)
        nb_draw_layer(t, y, xo, w, &L[l], sel, l == r, false, before);
    for (int l = first; l <= last; l++) {
        nb_draw_layer(t, y, xo, w, &L[l], sel, l == r, true, before);
        y++;
        if (l < last)
            y += nb_draw_links(t, y, xo, w, &L[l], &L[l + 1], rows);
    }
    if (y < y0 + h && last == r)
        tui_put(y++, xo + 1, w - 2, OX_SLOT_UI_DIM, t, "(no consumers: graph outputs only)");
    char sb[256];
    if (y < y0 + h)
        tui_putf(y, xo + 1, w - 2, OX_SLOT_UI_DIM, t, "out: %s",
                 tui_out_shapes(centre, sb, sizeof sb));
}

/* The node of the model before the last step to put beside `n` when the
 * step changed n: n itself (same id) when it was edited, else the first
 * node the step removed. NULL: no before/after view. */
static ox_node *before_centre(tui *t, const ox_node *n)
{
    if (tui_compare_marks(t))   /* two models: A's node matched with this changed one */
        return tui_node_mark(t, n) == '*' && t->gdepth == 0 ? tui_compare_partner(t, n) : NULL;
    if (!tui_node_mark(t, n) || t->st.from_orig || t->gdepth > 0)
        return NULL;
    const ox_model *b = tui_stepper_before(&t->st);
    ox_node *same = tui_stepper_find_id(b, n->id);
    if (same)
        return same;
    const ox_pass_report *r = &t->st.rep;
    for (int i = 0; i < r->n_removed_ids; i++) {
        ox_node *x = tui_stepper_find_id(b, r->removed_ids[i]);
        if (x && x->graph == b->graph)
            return x;
    }
    return NULL;
}

static void neigh_draw(tui *t, int y0, int h, int w)
{
    ox_node *prod[NB_MAX], *cons[NB_MAX];
    int np, nc;
    if (!t->nb.centre) {
        tui_put(y0 + 1, 2, w - 4, OX_SLOT_UI_DIM, t, "empty graph");
        return;
    }
    int total = neigh_lists(t, prod, &np, cons, &nc);
    const ox_node *sel = NULL;
    if (t->nb.sel >= 0 && t->nb.sel < total)
        sel = t->nb.sel < np ? prod[t->nb.sel] : cons[t->nb.sel - np];
    int r = neigh_radius(t);
    ox_node *bc = before_centre(t, t->nb.centre);
    if (!bc) {
        tui_putf(y0, 1, w - 2, OX_SLOT_UI_HEADER, t,
                 "radius %d (+/-)  producers above, consumers below; arrows, Enter recentres", r);
        nb_view(t, t->nb.centre, sel, r, y0 + 1, h - 1, 0, w, false);
        return;
    }
    /* The step just taken: before on the left, after on the right. */
    int half = w / 2;
    if (tui_compare_marks(t)) {
        tui_putf(y0, 1, half - 2, OX_SLOT_UI_HEADER, t, "A %s", tui_base_name(t));
        tui_putf(y0, half + 1, w - half - 2, OX_SLOT_UI_HEADER, t, "B (radius %d, +/-)", r);
    } else {
        tui_putf(y0, 1, half - 2, OX_SLOT_UI_HEADER, t, "before %s", t->st.label);
        tui_putf(y0, half + 1, w - half - 2, OX_SLOT_UI_HEADER, t, "after (radius %d, +/-)", r);
    }
    for (int y = y0; y < y0 + h; y++)
        tui_put(y, half - 1, 1, OX_SLOT_UI_BORDER, t, tui_vline(t));
    nb_view(t, bc, NULL, r, y0 + 1, h - 1, 0, half - 1, true);
    nb_view(t, t->nb.centre, sel, r, y0 + 1, h - 1, half, w - half, false);
}

static int neigh_key(tui *t, tui_action a)
{
    ox_node *prod[NB_MAX], *cons[NB_MAX];
    int np, nc;
    int total = neigh_lists(t, prod, &np, cons, &nc);
    switch (a) {
    case TUI_A_RADIUS_UP:
    case TUI_A_RADIUS_DOWN: {
        int r = neigh_radius(t) + (a == TUI_A_RADIUS_UP ? 1 : -1);
        t->nb.radius = r < 1 ? 1 : r > RADIUS_MAX ? RADIUS_MAX : r;
        tui_set_status(t, OX_SLOT_UI_OK, "neighbourhood radius %d (1-%d)", t->nb.radius,
                       RADIUS_MAX);
        return TUI_REDRAW;
    }
    case TUI_A_LEFT:
    case TUI_A_UP:
        if (total)
            t->nb.sel = (t->nb.sel + total - 1) % total;
        return TUI_REDRAW;
    case TUI_A_RIGHT:
    case TUI_A_DOWN:
        if (total)
            t->nb.sel = (t->nb.sel + 1) % total;
        return TUI_REDRAW;
    case TUI_A_ENTER:
        if (t->nb.sel >= 0 && t->nb.sel < total) {
            ox_node *to = t->nb.sel < np ? prod[t->nb.sel] : cons[t->nb.sel - np];
            tui_goto_node(t, to, true);
        }
        return TUI_REDRAW;
    case TUI_A_BACK:
        if (t->det.n_hist > 0) {
            tui_goto_node(t, t->det.hist[--t->det.n_hist], false);
            return TUI_REDRAW;
        }
        return TUI_UNHANDLED;
    default:
        return TUI_UNHANDLED;
    }
}

/* ---- Subgraphs ---------------------------------------------------------------- */

static int sg_rows(tui *t)
{
    return t->sg.n;
}

static const char *sg_header(tui *t, char *buf, int w)
{
    (void)w;
    char pb[256];
    snprintf(buf, 512, "in %s:  node / attribute / body (Enter enters, Backspace leaves)",
             graph_path(t, pb, sizeof pb));
    return buf;
}

static void sg_draw_row(tui *t, int row, int y, int w, bool sel)
{
    if (row < 0 || row >= t->sg.n)
        return;
    char lb[256];
    int slot = sel ? OX_SLOT_UI_SELECTED : OX_SLOT_UI_NORMAL;
    if (sel)
        tui_fill(y, 0, w, slot, t);
    tui_putf(y, 0, w, slot, t, "%-10.10s %-24.24s %-10.10s %-20.20s %6d nodes", t->sg.node[row]->op_type,
             tui_node_label(t->sg.node[row], lb, sizeof lb), t->sg.attr[row],
             t->sg.graph[row]->name ? t->sg.graph[row]->name : "", t->sg.graph[row]->n_nodes);
}

static bool sg_match(tui *t, int row, const char *q)
{
    return strcasestr(t->sg.node[row]->op_type, q) ||
           (t->sg.node[row]->name && strcasestr(t->sg.node[row]->name, q));
}

static int sg_key(tui *t, tui_action a)
{
    tui_panel *p = &t->panels[TUI_P_SUBGRAPHS];
    if (a == TUI_A_ENTER && p->sel >= 0 && p->sel < t->sg.n) {
        if (t->gdepth + 1 >= (int)(sizeof t->gstack / sizeof *t->gstack))
            return TUI_REDRAW;
        t->gstack[t->gdepth++] = t->graph;
        t->graph = t->sg.graph[p->sel];
        t->det.node = NULL;
        t->nb.centre = NULL;
        ox_error err = {0};
        tui_model_refresh(t, &err);
        for (int i = 0; i < TUI_P_COUNT; i++)
            if (i != TUI_P_SUBGRAPHS)
                t->panels[i].sel = t->panels[i].top = 0;
        p->sel = p->top = 0;
        char pb[256];
        tui_set_status(t, OX_SLOT_UI_OK, "entered %s", graph_path(t, pb, sizeof pb));
        return TUI_REDRAW;
    }
    return TUI_UNHANDLED;
}

static int diff_key(tui *t, tui_action a)
{
    if (a == TUI_A_TOGGLE || a == TUI_A_ENTER)
        return TUI_UNHANDLED;
    int r = tui_diff_scroll(t, a, LINES - 2);
    return r ? r : tui_passes_key(t, a);
}

void tui_panels_init(tui *t)
{
    tui_panel *p = t->panels;
    p[TUI_P_OVERVIEW] = (tui_panel){.title = "Overview", .draw = overview_draw};
    p[TUI_P_NODES] = (tui_panel){.title = "Nodes", .rows = nodes_rows,
                                 .draw_row = nodes_draw_row, .header = nodes_header,
                                 .match = nodes_match, .key = nodes_key,
                                 .footer_lines = nodes_footer_lines,
                                 .draw_footer = nodes_footer};
    p[TUI_P_DETAIL] = (tui_panel){.title = "Detail", .rows = detail_rows,
                                  .draw_row = detail_draw_row, .match = detail_match,
                                  .key = detail_key};
    p[TUI_P_INITS] = (tui_panel){.title = "Inits", .rows = inits_rows,
                                 .draw_row = inits_draw_row, .header = inits_header,
                                 .match = inits_match, .key = inits_key,
                                 .footer_lines = inits_footer_lines,
                                 .draw_footer = inits_footer};
    p[TUI_P_IO] = (tui_panel){.title = "I/O", .rows = io_rows, .draw_row = io_draw_row,
                              .header = io_header, .match = io_match, .key = io_key,
                              .footer_lines = io_footer_lines, .draw_footer = io_footer};
    p[TUI_P_NEIGH] = (tui_panel){.title = "Neigh", .draw = neigh_draw, .key = neigh_key};
    p[TUI_P_SUBGRAPHS] = (tui_panel){.title = "Subgr", .rows = sg_rows,
                                     .draw_row = sg_draw_row, .header = sg_header,
                                     .match = sg_match, .key = sg_key};
    p[TUI_P_PASSES] = (tui_panel){.title = "Passes", .rows = tui_passes_rows,
                                  .draw_row = tui_passes_draw_row,
                                  .header = tui_passes_header, .match = tui_passes_match,
                                  .key = tui_passes_key,
                                  .footer_lines = tui_passes_footer_lines,
                                  .draw_footer = tui_passes_footer};
    p[TUI_P_DIFF] = (tui_panel){.title = "Diff", .draw = tui_diff_draw, .key = diff_key};
    p[TUI_P_BENCH] = (tui_panel){.title = "Bench", .draw = tui_bench_draw, .key = tui_bench_key};
}
