/* The fusion stepper (see tui_stepper.h). Every action works on a copy of
 * the shown model and swaps it in on success, so the panels never see a
 * half-rewritten graph and the previous model is the undo entry as is:
 * undo costs no copy, a step costs one (ox_model_clone shares tensor
 * bytes). Passes found to have no match are remembered until the model
 * changes; an idle probe learns the rest on a private copy. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui/tui_stepper.h"

/* Undo history bound: a model copy costs about 600 bytes per node (56 MB
 * for 100k nodes, measured), so 1M nodes in all is about 600 MB: 10 steps
 * back on a 100k-node model, the full 64 on anything under 15k nodes. */
#define UNDO_MAX 64
#define UNDO_MAX_NODES 1000000
/* Above this, idle probing would hold keys for tens of ms per pass: the
 * stepper then learns "no match" only from the passes it tries. */
#define PROBE_MAX_NODES 20000
/* Room for passes a manager has beyond the registry (ox_pm_add_pass): the
 * TUI adds none, embedders and tests a few. */
#define EXTRA_PASSES 64

void tui_stepper_init(tui_stepper *s, ox_model *orig)
{
    memset(s, 0, sizeof *s);
    s->orig = s->cur = orig;
    s->n_passes = ox_pass_count() + EXTRA_PASSES;
    s->known = calloc((size_t)s->n_passes + 1, sizeof *s->known);
    s->matches = calloc((size_t)s->n_passes + 1, sizeof *s->matches);
    s->nth = calloc((size_t)s->n_passes + 1, sizeof *s->nth);
    s->totals = calloc((size_t)s->n_passes + 1, sizeof *s->totals);
    s->max_undo = UNDO_MAX;
    s->max_undo_nodes = UNDO_MAX_NODES;
    s->probe_max_nodes = PROBE_MAX_NODES;
    s->before_next_id = orig ? orig->next_node_id : 0;
    s->cur_nodes = orig ? ox_graph_count_nodes(orig->graph, true) : 0;
    s->last_pass = -1;
}

static void entry_free(tui_stepper *s, tui_undo_entry *e)
{
    if (e->model && e->model != s->orig)
        ox_model_free(e->model);
    if (e->have_rep)
        ox_pass_report_free(&e->rep);
    free(e->totals);
    free(e->nth);
    memset(e, 0, sizeof *e);
}

static void drop_probe(tui_stepper *s)
{
    if (s->free_model && s->probe)
        s->free_model(s->probe);
    else
        ox_model_free(s->probe);
    s->probe = NULL;
}

void tui_stepper_free(tui_stepper *s)
{
    for (int i = 0; i < s->n_undo; i++)
        entry_free(s, &s->undo[i]);
    free(s->undo);
    if (s->cur && s->cur != s->orig)
        ox_model_free(s->cur);
    if (s->have_rep)
        ox_pass_report_free(&s->rep);
    drop_probe(s);
    free(s->known);
    free(s->matches);
    free(s->nth);
    free(s->totals);
    memset(s, 0, sizeof *s);
}

static void changed(tui_stepper *s)
{
    s->cur_nodes = ox_graph_count_nodes(s->cur->graph, true);
    s->version++;
    if (s->version == 0)   /* 0 would read as "known" in known[] after wrapping */
        memset(s->known, 0, (size_t)s->n_passes * sizeof *s->known);
    drop_probe(s);
}

void tui_stepper_touch(tui_stepper *s)
{
    changed(s);
}

static void *dup_mem(const void *p, size_t n)
{
    void *q = malloc(n ? n : 1);
    if (q && n)
        memcpy(q, p, n);
    return q;
}

/* Moves the current state into a new undo entry (cur, rep and the totals
 * now belong to the entry; the caller installs new ones). */
static bool push_undo(tui_stepper *s)
{
    if (s->n_undo == s->cap_undo) {
        int nc = s->cap_undo ? s->cap_undo * 2 : 8;
        tui_undo_entry *u = realloc(s->undo, (size_t)nc * sizeof *u);
        if (!u)
            return false;
        s->undo = u;
        s->cap_undo = nc;
    }
    size_t np = (size_t)s->n_passes;
    tui_undo_entry e = {0};
    e.totals = dup_mem(s->totals, np * sizeof *s->totals);
    e.nth = dup_mem(s->nth, np * sizeof *s->nth);
    if (!e.totals || !e.nth) {
        free(e.totals);
        free(e.nth);
        return false;
    }
    e.model = s->cur == s->orig ? NULL : s->cur;
    e.nodes = e.model ? ox_graph_count_nodes(e.model->graph, true) : 0;
    e.rep = s->rep;
    e.have_rep = s->have_rep;
    e.cur_pass = s->cur_pass;
    e.round = s->round;
    e.before_next_id = s->before_next_id;
    e.steps = s->steps;
    e.from_orig = s->from_orig;
    memcpy(e.label, s->label, sizeof e.label);
    s->undo[s->n_undo++] = e;
    memset(&s->rep, 0, sizeof s->rep);
    s->have_rep = false;
    /* The bound: drop the oldest entries, never the newest. */
    int64_t total = 0;
    for (int i = 0; i < s->n_undo; i++)
        total += s->undo[i].nodes;
    int drop = 0;
    while (s->n_undo - drop > 1 &&
           (s->n_undo - drop > s->max_undo || total > s->max_undo_nodes)) {
        total -= s->undo[drop].nodes;
        entry_free(s, &s->undo[drop]);
        drop++;
    }
    if (drop) {
        memmove(s->undo, s->undo + drop, (size_t)(s->n_undo - drop) * sizeof *s->undo);
        s->n_undo -= drop;
        s->undo_dropped += drop;
    }
    return true;
}

ox_model *tui_stepper_undo_target(const tui_stepper *s)
{
    if (s->n_undo == 0)
        return NULL;
    ox_model *m = s->undo[s->n_undo - 1].model;
    return m ? m : s->orig;
}

bool tui_stepper_undo(tui_stepper *s)
{
    ox_model *dropped = NULL;
    bool ok = tui_stepper_undo_keep(s, &dropped);
    ox_model_free(dropped);
    return ok;
}

bool tui_stepper_undo_keep(tui_stepper *s, ox_model **dropped)
{
    *dropped = NULL;
    if (s->n_undo == 0)
        return false;
    tui_undo_entry e = s->undo[--s->n_undo];
    if (s->cur != s->orig)
        *dropped = s->cur;
    s->cur = e.model ? e.model : s->orig;
    if (s->have_rep)
        ox_pass_report_free(&s->rep);
    s->rep = e.rep;
    s->have_rep = e.have_rep;
    free(s->totals);
    s->totals = e.totals;
    free(s->nth);
    s->nth = e.nth;
    s->cur_pass = e.cur_pass;
    s->round = e.round;
    s->before_next_id = e.before_next_id;
    s->steps = e.steps;
    s->from_orig = e.from_orig;
    memcpy(s->label, e.label, sizeof s->label);
    s->have_totals = s->steps > 0;
    s->last_pass = -1;
    changed(s);
    return true;
}

/* Installs m (a new copy) with its report as the result of an action. */
static void commit(tui_stepper *s, ox_model *m, ox_pass_report *rep)
{
    int before = s->cur->next_node_id;
    if (!push_undo(s)) {
        /* No history (out of memory): the step still counts. */
        if (s->cur != s->orig)
            ox_model_free(s->cur);
        if (s->have_rep)
            ox_pass_report_free(&s->rep);
    }
    s->cur = m;
    s->rep = *rep;
    s->have_rep = true;
    s->before_next_id = before;
    s->have_totals = true;
    s->from_orig = false;
    s->steps++;
    changed(s);
}

static void add_stat(tui_pass_total *t, const ox_pass_stat *ps)
{
    t->runs += ps->runs;
    t->rewrites += ps->rewrites;
    t->nodes_removed += ps->nodes_removed;
    t->nodes_added += ps->nodes_added;
    t->nodes_edited += ps->nodes_replaced;
    t->inits_removed += ps->inits_removed;
    t->inits_added += ps->inits_added;
    t->bytes_saved += ps->bytes_saved;
    /* Costs are measured for invocations that rewrote something only. */
    if (ps->rewrites) {
        t->macs_delta += ps->macs_delta;
        t->macs_unknown |= !ps->cost_known;
        t->peak_delta += ps->peak_delta;
        t->peak_unknown |= !ps->peak_known;
    }
}

static int next_enabled(const ox_pass_manager *pm, int from, int n)
{
    for (int k = 0; k < n; k++)
        if (ox_pm_enabled(pm, (from + k) % n))
            return (from + k) % n;
    return -1;
}

ox_status tui_stepper_step(tui_stepper *s, ox_pass_manager *pm, bool rest,
                           tui_step_info *info, ox_error *err)
{
    return tui_stepper_step_cb(s, pm, rest, NULL, NULL, info, err);
}

/* Keeps an unchanged copy of cur for the next search or probe. */
static void keep_copy(tui_stepper *s, ox_model *work)
{
    if (!work)
        return;
    drop_probe(s);
    s->probe = work;
    s->probe_version = s->version;
}

static void skip(tui_step_info *info, int i)
{
    if (info->n_skipped < (int)(sizeof info->skipped / sizeof *info->skipped))
        info->skipped[info->n_skipped] = i;
    info->n_skipped++;
}

void tui_stepper_search_free(tui_step_search *q)
{
    ox_model_free(q->work);
    if (q->have_rep)
        ox_pass_report_free(&q->rep);
    free(q->state);
    free(q->learnt);
    free(q->enabled);
    memset(q, 0, sizeof *q);
}

ox_status tui_stepper_search_begin(tui_stepper *s, ox_pass_manager *pm, bool rest,
                                   tui_step_search *q, ox_error *err)
{
    memset(q, 0, sizeof *q);
    q->info.pass = -1;
    q->pm = pm;
    q->src = s->cur;
    q->rest = rest;
    q->n = ox_pm_count(pm);
    if (q->n > s->n_passes)
        q->n = s->n_passes;
    q->start = s->cur_pass;
    q->last_pass = s->last_pass;
    q->big = s->cur_nodes > s->probe_max_nodes;
    q->version = s->version;
    q->state = malloc((size_t)q->n + 1);
    q->learnt = calloc((size_t)q->n + 1, sizeof *q->learnt);
    q->enabled = calloc((size_t)q->n + 1, sizeof *q->enabled);
    if (!q->state || !q->learnt || !q->enabled) {
        tui_stepper_search_free(q);
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    }
    for (int i = 0; i < q->n; i++) {
        q->state[i] = (signed char)tui_stepper_match(s, i);
        q->enabled[i] = ox_pm_enabled(pm, i);
    }
    if (next_enabled(pm, 0, q->n) < 0)
        q->info.none_enabled = true;
    /* The idle probe's copy is cur as it is when nothing matched on it. */
    if (s->probe && s->probe_version == s->version) {
        q->work = s->probe;
        s->probe = NULL;
    }
    return OX_OK;
}

/* Touches only q and its copies (and the manager, which nothing else uses
 * meanwhile): the TUI runs this in a worker thread. */
void tui_stepper_search_run(tui_step_search *q, tui_step_try_fn on_try, void *ctx)
{
    tui_step_info *info = &q->info;
    ox_pass_manager *pm = q->pm;
    if (info->none_enabled)
        return;
    int n = q->n;
    for (int k = 0; k < n; k++) {
        int i = (q->start + k) % n;
        if (k > 0 && i == 0)
            info->wrapped = true;
        if (!q->enabled[i])
            continue;
        if (q->state[i] == 0) {
            skip(info, i);
            continue;
        }
        if (on_try && !on_try(ctx, i, info->tried)) {
            info->stopped = true;
            return;
        }
        info->tried++;
        if (!q->work && !(q->work = ox_model_clone(q->src))) {
            q->st = ox_errorf(&q->err, OX_ENOMEM, "out of memory copying the model");
            return;
        }
        /* On a large model a report (snapshots, costs) doubles a try: a pass
         * not known to match is first tried without one, and only when it
         * rewrites is the step redone on a fresh copy with a report. */
        if (q->big && q->state[i] < 0 && i != q->last_pass) {
            q->st = ox_pm_step(pm, q->work, i, q->rest ? 0 : 1, NULL, &q->err);
            if (q->st != OX_OK) {
                info->pass = i;
                return;
            }
            q->learnt[i] = true;
            q->state[i] = ox_pm_last_rewrites(pm) > 0;
            if (!q->state[i]) {
                skip(info, i);
                continue;
            }
            ox_model_free(q->work);
            if (!(q->work = ox_model_clone(q->src))) {
                q->st = ox_errorf(&q->err, OX_ENOMEM, "out of memory copying the model");
                return;
            }
        }
        ox_pass_report rep = {0};
        q->st = ox_pm_step(pm, q->work, i, q->rest ? 0 : 1, &rep, &q->err);
        if (q->st != OX_OK) {
            ox_pass_report_free(&rep);
            info->pass = i;
            return;
        }
        const ox_pass_stat *ps = ox_pass_report_find(&rep, ox_pm_pass(pm, i)->name);
        int rw = ps ? ps->rewrites : 0;
        if (rw == 0) {
            q->learnt[i] = true;
            q->state[i] = 0;
            skip(info, i);
            ox_pass_report_free(&rep);
            continue;   /* work is unchanged: try the next pass on it */
        }
        info->pass = i;
        q->rep = rep;
        q->have_rep = true;
        q->rewrites = rw;
        return;
    }
    info->fixed_point = true;
}

ox_status tui_stepper_search_end(tui_stepper *s, tui_step_search *q, tui_step_info *info,
                                 ox_error *err)
{
    *info = q->info;
    /* What the search learnt holds for cur as long as it did not change. */
    if (s->version == q->version)
        for (int i = 0; i < q->n; i++)
            if (q->learnt[i]) {
                s->known[i] = s->version + 1;
                s->matches[i] = q->state[i] > 0;
            }
    if (q->st != OX_OK) {
        if (err)
            *err = q->err;
        ox_status st = q->st;
        tui_stepper_search_free(q);
        return st;
    }
    if (!q->have_rep) {
        /* Nothing rewrote: the copy is still cur, keep it for the next try. */
        if (s->version == q->version)
            keep_copy(s, q->work);
        else
            ox_model_free(q->work);
        q->work = NULL;
        tui_stepper_search_free(q);
        return OX_OK;
    }
    int i = info->pass, n = q->n;
    const ox_pass *p = ox_pm_pass(q->pm, i);
    s->last_pass = i;
    info->whole = q->rest;
    info->no_single = !q->rest && !p->single_rewrite;
    info->first = s->nth[i] + 1;
    const ox_pass_stat *ps = ox_pass_report_find(&q->rep, p->name);
    commit(s, q->work, &q->rep);
    q->work = NULL;
    q->have_rep = false;
    s->nth[i] += q->rewrites;
    info->last = s->nth[i];
    /* ps points into the report's heap array, which commit moved to s->rep. */
    if (ps)
        add_stat(&s->totals[i], ps);
    if (info->wrapped)
        s->round++;
    if (q->rest || info->no_single) {
        s->cur_pass = (i + 1) % n;
        if (s->cur_pass == 0)
            s->round++;
    } else {
        s->cur_pass = i;
    }
    if (info->first == info->last)
        snprintf(s->label, sizeof s->label, "step %d: %s #%d", s->steps, p->name, info->first);
    else
        snprintf(s->label, sizeof s->label, "step %d: %s #%d-%d", s->steps, p->name,
                 info->first, info->last);
    tui_stepper_search_free(q);
    return OX_OK;
}

ox_status tui_stepper_step_cb(tui_stepper *s, ox_pass_manager *pm, bool rest,
                              tui_step_try_fn on_try, void *ctx, tui_step_info *info,
                              ox_error *err)
{
    tui_step_search q;
    ox_status st = tui_stepper_search_begin(s, pm, rest, &q, err);
    if (st != OX_OK) {
        memset(info, 0, sizeof *info);
        info->pass = -1;
        return st;
    }
    tui_stepper_search_run(&q, on_try, ctx);
    return tui_stepper_search_end(s, &q, info, err);
}

ox_status tui_stepper_apply_all(tui_stepper *s, ox_pass_manager *pm, ox_error *err)
{
    ox_model *m = ox_model_clone(s->orig);
    if (!m)
        return ox_errorf(err, OX_ENOMEM, "out of memory copying the model");
    ox_pass_report rep = {0};
    ox_status st = ox_pm_run(pm, m, &rep, err);
    tui_stepper_apply_all_commit(s, pm, m, &rep);
    return st;
}

void tui_stepper_apply_all_commit(tui_stepper *s, ox_pass_manager *pm, ox_model *m,
                                  ox_pass_report *rep)
{
    commit(s, m, rep);
    /* The result is relative to the original, not to the previous cur. */
    s->before_next_id = s->orig->next_node_id;
    s->from_orig = true;
    memset(s->totals, 0, (size_t)s->n_passes * sizeof *s->totals);
    memset(s->nth, 0, (size_t)s->n_passes * sizeof *s->nth);
    int n = ox_pm_count(pm);
    for (int i = 0; i < n && i < s->n_passes; i++) {
        const ox_pass_stat *ps = ox_pass_report_find(&s->rep, ox_pm_pass(pm, i)->name);
        if (ps) {
            add_stat(&s->totals[i], ps);
            s->nth[i] = ps->rewrites;
        }
    }
    s->cur_pass = 0;
    s->round = 0;
    s->steps = 1;
    s->last_pass = -1;
    snprintf(s->label, sizeof s->label, "all enabled passes (%d rounds)", s->rep.iterations);
}

bool tui_stepper_reset(tui_stepper *s)
{
    if (s->cur == s->orig && !s->have_rep && !s->have_totals)
        return false;
    if (!push_undo(s)) {
        if (s->cur != s->orig)
            ox_model_free(s->cur);
        if (s->have_rep)
            ox_pass_report_free(&s->rep);
        s->have_rep = false;
    }
    s->cur = s->orig;
    s->before_next_id = s->orig->next_node_id;
    memset(s->totals, 0, (size_t)s->n_passes * sizeof *s->totals);
    memset(s->nth, 0, (size_t)s->n_passes * sizeof *s->nth);
    s->have_totals = false;
    s->cur_pass = 0;
    s->round = 0;
    s->steps = 0;
    s->label[0] = 0;
    s->last_pass = -1;
    changed(s);
    return true;
}

int tui_stepper_match(const tui_stepper *s, int pass)
{
    if (pass < 0 || pass >= s->n_passes || s->known[pass] != s->version + 1)
        return -1;
    return s->matches[pass] ? 1 : 0;
}

static int cur_nodes_small(const tui_stepper *s)
{
    return s->cur_nodes <= s->probe_max_nodes;
}

/* The next pass the probe should try, from the stepper's position on. */
static int probe_next(const tui_stepper *s, const ox_pass_manager *pm, int *k)
{
    int n = ox_pm_count(pm);
    if (n > s->n_passes)
        n = s->n_passes;
    for (; *k < n; (*k)++) {
        int i = (s->cur_pass + *k) % n;
        if (ox_pm_enabled(pm, i) && tui_stepper_match(s, i) < 0)
            return i;
    }
    return -1;
}

bool tui_stepper_probe_pending(const tui_stepper *s, const ox_pass_manager *pm)
{
    if (!pm || !s->cur)
        return false;
    int k = s->probe_version == s->version ? s->probe_k : 0;
    return probe_next(s, pm, &k) >= 0 && cur_nodes_small(s);
}

bool tui_stepper_probe_one(tui_stepper *s, ox_pass_manager *pm)
{
    if (!tui_stepper_probe_pending(s, pm))
        return false;
    if (s->probe_version != s->version) {
        drop_probe(s);
        s->probe_version = s->version;
        s->probe_k = 0;
    }
    int i = probe_next(s, pm, &s->probe_k);
    if (i < 0)
        return false;
    s->probe_k++;
    if (!s->probe && !(s->probe = ox_model_clone(s->cur)))
        return false;
    /* Only match or not: no report (its snapshots and costs). */
    ox_error err = {0};
    ox_status st = ox_pm_step(pm, s->probe, i, 1, NULL, &err);
    bool hit = st != OX_OK || ox_pm_last_rewrites(pm) > 0;
    /* A failing pass counts as a match: stepping onto it shows the error. */
    s->known[i] = s->version + 1;
    s->matches[i] = hit;
    if (hit)
        drop_probe(s);   /* the copy was rewritten: no longer cur */
    return true;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int tui_stepper_mark(const tui_stepper *s, const ox_node *n)
{
    if (!s->have_rep || s->cur == s->orig || !s->rep.n_touched || !n)
        return 0;
    if (!bsearch(&n->id, s->rep.touched, (size_t)s->rep.n_touched, sizeof(int), cmp_int))
        return 0;
    return n->id >= s->before_next_id ? '+' : '*';
}

typedef struct find_ctx {
    int id;
    ox_node *found;
} find_ctx;

static void find_in(ox_graph *g, void *ctx)
{
    find_ctx *f = ctx;
    for (int i = 0; i < g->n_nodes && !f->found; i++)
        if (g->nodes[i]->id == f->id)
            f->found = g->nodes[i];
}

ox_node *tui_stepper_find_id(const ox_model *model, int id)
{
    find_ctx f = {id, NULL};
    if (model && model->graph)
        ox_graph_visit(model->graph, find_in, &f);
    return f.found;
}

const ox_model *tui_stepper_before(const tui_stepper *s)
{
    if (s->from_orig)
        return s->orig;
    if (s->n_undo && s->undo[s->n_undo - 1].model)
        return s->undo[s->n_undo - 1].model;
    return s->orig;
}
