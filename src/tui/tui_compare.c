/* Two models in the viewer (`onnxscope A.onnx B.onnx`): A is the base, B is
 * browsed (it is t->orig, so stepping, undo and save work on it as on any
 * model) and the Diff panel compares A with the shown model (modeldiff.h
 * matches the nodes). While the shown model is B as loaded, the nodes the
 * comparison found added or changed carry the marks a step gives ('+', '*'),
 * so `]`/`[`, `C` and the neighbourhood's before/after work on them; after
 * a step the marks are the step's again, and the Diff panel compares A with
 * the stepped copy. */
#include <stdlib.h>
#include <string.h>

#include "onnxscope/io.h"
#include "tui/tui_internal.h"

ox_status tui_compare_load(tui *t, ox_error *err)
{
    ox_load_opts lo = {0};
    ox_error le = {0};
    ox_status st = ox_load(t->base_path, &lo, &t->base, &le);
    if (st != OX_OK)
        return ox_errorf(err, st, "%s: %s", t->base_path, le.msg[0] ? le.msg : ox_strerror(st));
    const ox_graph *g = t->base->graph;
    t->base_in = calloc((size_t)g->n_inputs + 1, sizeof *t->base_in);
    if (!t->base_in)
        return ox_errorf(err, OX_ENOMEM, "%s: out of memory", t->base_path);
    t->n_base_in = g->n_inputs;
    for (int i = 0; i < g->n_inputs; i++)
        t->base_in[i] = g->inputs[i]->type ? ox_type_clone(g->inputs[i]->type) : NULL;
    tui_compare_reinfer(t);
    tui_compare_refresh(t);
    return OX_OK;
}

/* With the viewer's overrides; a shape the base does not accept leaves
 * its dims unknown (costs '?') rather than stopping the viewer. */
void tui_compare_reinfer(tui *t)
{
    if (!t->base)
        return;
    ox_graph *g = t->base->graph;
    for (int i = 0; i < t->n_base_in && i < g->n_inputs; i++) {
        ox_type_free(g->inputs[i]->type);
        g->inputs[i]->type = t->base_in[i] ? ox_type_clone(t->base_in[i]) : NULL;
    }
    ox_infer_opts io = t->iopts;
    io.stats = NULL;
    io.reset = true;
    if (ox_infer_opts_validate(&io, t->base, NULL) == OX_OK)
        ox_infer_model(t->base, &io, NULL);
    else
        ox_infer_model(t->base, NULL, NULL);
    memset(&t->cost_base, 0, sizeof t->cost_base);
    ox_model_cost_compute(t->base, &t->cost_base, NULL);
}

void tui_compare_refresh(tui *t)
{
    if (!t->base || t->mdiff_of == t->cur)
        return;
    ox_model_diff_free(&t->mdiff);
    t->mdiff_of = NULL;
    if (ox_model_diff_compute(t->base, t->cur, &t->mdiff, NULL) == OX_OK)
        t->mdiff_of = t->cur;
    else
        ox_model_diff_free(&t->mdiff);
}

void tui_compare_free(tui *t)
{
    ox_model_diff_free(&t->mdiff);
    t->mdiff_of = NULL;
    ox_model_free(t->base);
    t->base = NULL;
    for (int i = 0; i < t->n_base_in; i++)
        ox_type_free(t->base_in[i]);
    free(t->base_in);
    t->base_in = NULL;
    t->n_base_in = 0;
}

bool tui_compare_marks(const tui *t)
{
    return t->base && t->cur == t->orig && t->mdiff_of == t->cur;
}

int tui_compare_mark(const tui *t, const ox_node *n)
{
    if (!n || n->graph != t->cur->graph || n->index < 0 || n->index >= t->mdiff.n_b)
        return 0;
    switch (t->mdiff.kind_b[n->index]) {
    case OX_NDIFF_ADDED: return '+';
    case OX_NDIFF_CHANGED: return '*';
    default: return 0;
    }
}

int tui_compare_base_mark(const tui *t, const ox_node *n)
{
    if (!n || !t->base || n->graph != t->base->graph || n->index < 0 || n->index >= t->mdiff.n_a)
        return 0;
    switch (t->mdiff.kind_a[n->index]) {
    case OX_NDIFF_REMOVED: return '-';
    case OX_NDIFF_CHANGED: return '*';
    default: return 0;
    }
}

ox_node *tui_compare_partner(const tui *t, const ox_node *n)
{
    if (!tui_compare_marks(t) || !n || n->graph != t->cur->graph || n->index < 0 ||
        n->index >= t->mdiff.n_b)
        return NULL;
    int i = t->mdiff.partner_b[n->index];
    return i >= 0 && i < t->base->graph->n_nodes ? t->base->graph->nodes[i] : NULL;
}

const char *tui_base_name(const tui *t)
{
    if (!t->base_path)
        return "";
    const char *b = strrchr(t->base_path, '/');
    return b ? b + 1 : t->base_path;
}
