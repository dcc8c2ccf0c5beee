/* CUDA Graph bookkeeping of the CUDA backend (graph.h). No CUDA here: the
 * runtime (or the emulated device) does the capturing and the launching. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"

static void tape_clear(ox_cuda_graphs *g)
{
    for (int t = 0; t < g->n_tape; t++)
        for (int i = 0; i < 16; i++)
            ox_rval_free(g->tape[t].param[i]);
    g->n_tape = 0;
}

void ox_cuda_graphs_free(ox_cuda_graphs *g)
{
    tape_clear(g);
    free(g->tape);
    g->tape = NULL;
    g->cap_tape = 0;
}

void ox_cuda_graphs_begin(ox_cuda_graphs *g, const ox_cuda_plan *p, bool *reset)
{
    *reset = false;
    if (g->plan_id != p->id) {
        /* A new signature: the old tape and graph describe another plan. */
        *reset = g->state == OX_CG_READY;
        tape_clear(g);
        g->plan_id = p->id;
        g->state = OX_CG_NONE;
        g->note[0] = 0;
    }
    g->cursor = 0;
    g->launched = false;
    g->used = OX_CUDA_GRAPH_OFF;
    if (!g->allowed || !p->graph_ok) {
        g->mode = OX_CG_EAGER;
        snprintf(g->note, sizeof g->note, "%s",
                 !g->allowed ? "turned off (ONNXSCOPE_CUDA_GRAPHS=0, no_cuda_graphs or "
                               "per-node timing)"
                             : p->graph_why ? p->graph_why : "not allowed by the plan");
        return;
    }
    if (g->state == OX_CG_READY) {
        g->mode = OX_CG_REPLAY;
    } else if (g->state == OX_CG_NONE) {
        g->mode = OX_CG_RECORD;
        tape_clear(g);
        snprintf(g->note, sizeof g->note, "first run of this input signature (recording)");
    } else {
        g->mode = OX_CG_EAGER;   /* FAILED: note says why */
    }
}

static bool params_equal(const ox_rval *a, const ox_rval *b)
{
    if (!a || !b)
        return a == b;
    if (a->kind != OX_RV_TENSOR || b->kind != OX_RV_TENSOR)
        return false;
    const ox_tensor *x = a->t, *y = b->t;
    if (x->dtype != y->dtype || x->rank != y->rank || x->nbytes != y->nbytes)
        return false;
    for (int d = 0; d < x->rank; d++)
        if (x->dims[d] != y->dims[d])
            return false;
    return !x->nbytes || !memcmp(ox_tensor_data(x), ox_tensor_data(y), x->nbytes);
}

static bool record(ox_cuda_graphs *g, const ox_cuda_plan *p, int k, const int *in_slot,
                   const int *out_slot, ox_rval *const *host_in)
{
    const ox_node *n = p->cnode[k];
    if (n->n_inputs > 16 || n->n_outputs > 8)
        return false;
    if (g->n_tape == g->cap_tape) {
        int cap = g->cap_tape ? 2 * g->cap_tape : 64;
        ox_cuda_tape_ent *t = realloc(g->tape, (size_t)cap * sizeof *t);
        if (!t)
            return false;
        g->tape = t;
        g->cap_tape = cap;
    }
    ox_cuda_tape_ent *e = &g->tape[g->n_tape];
    memset(e, 0, sizeof *e);
    e->k = k;
    e->n_in = n->n_inputs;
    e->n_out = n->n_outputs;
    for (int i = 0; i < e->n_in; i++) {
        e->in_slot[i] = in_slot[i];
        if (in_slot[i] >= 0 && ox_cuda_input_on_host((ox_cuda_kind)p->kind[k], i) &&
            host_in[i]) {
            e->param[i] = ox_rval_clone(host_in[i]);
            if (!e->param[i]) {
                for (int j = 0; j < i; j++)
                    ox_rval_free(e->param[j]);
                return false;
            }
        }
    }
    for (int i = 0; i < e->n_out; i++)
        e->out_slot[i] = out_slot[i];
    g->n_tape++;
    return true;
}

int ox_cuda_graphs_node(ox_cuda_graphs *g, const ox_cuda_plan *p, int k, const int *in_slot,
                        const int *out_slot, ox_rval *const *host_in, int *n_catchup)
{
    *n_catchup = 0;
    if (g->mode == OX_CG_RECORD) {
        if (!record(g, p, k, in_slot, out_slot, host_in)) {
            g->mode = OX_CG_EAGER;
            g->state = OX_CG_FAILED;
            snprintf(g->note, sizeof g->note, "out of memory recording the graph");
        }
        return OX_CG_RUN;
    }
    if (g->mode != OX_CG_REPLAY)
        return OX_CG_RUN;
    const ox_cuda_tape_ent *e = g->cursor < g->n_tape ? &g->tape[g->cursor] : NULL;
    bool same = e && e->k == k && !g->launched;
    for (int i = 0; same && i < e->n_in; i++) {
        same = e->in_slot[i] == in_slot[i];
        if (same && e->param[i])
            same = params_equal(e->param[i], host_in[i]);
    }
    for (int i = 0; same && i < e->n_out; i++)
        same = e->out_slot[i] == out_slot[i];
    if (same) {
        g->cursor++;
        return OX_CG_SKIP;
    }
    /* This run differs from the recorded one: it leaves the graph. */
    *n_catchup = g->launched ? 0 : g->cursor;
    g->mode = OX_CG_EAGER;
    snprintf(g->note, sizeof g->note,
             "this run's node %d differs from the recorded one (parameters): ran eagerly", k);
    return OX_CG_CATCHUP;
}

bool ox_cuda_graphs_flush(ox_cuda_graphs *g, int *n_catchup)
{
    *n_catchup = 0;
    if (g->mode != OX_CG_REPLAY || g->launched)
        return false;
    if (g->cursor == g->n_tape) {
        g->launched = true;
        g->used = OX_CUDA_GRAPH_REPLAYED;
        g->note[0] = 0;
        return true;
    }
    *n_catchup = g->cursor;
    g->mode = OX_CG_EAGER;
    snprintf(g->note, sizeof g->note, "flushed before the last GPU node: ran eagerly");
    return false;
}

void ox_cuda_graphs_captured(ox_cuda_graphs *g, bool ok, const char *why)
{
    if (ok) {
        g->state = OX_CG_READY;
        g->used = OX_CUDA_GRAPH_CAPTURED;
        g->note[0] = 0;
    } else {
        g->state = OX_CG_FAILED;
        g->used = OX_CUDA_GRAPH_OFF;
        snprintf(g->note, sizeof g->note, "capture failed: %s", why ? why : "?");
        tape_clear(g);
    }
}

void ox_cuda_graphs_stats(const ox_cuda_graphs *g, ox_exec_stats *s)
{
    s->cuda_graph = g->used;
    snprintf(s->cuda_graph_note, sizeof s->cuda_graph_note, "%s",
             g->used == OX_CUDA_GRAPH_OFF ? g->note : "");
}
