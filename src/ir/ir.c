/* The graph IR core: lifetime of models, graphs, values and nodes, name
 * lookup across scopes, and the editing primitives that keep producer and
 * consumer links (including implicit outer-scope uses) consistent. */
#include "ir/ir_internal.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strmap.h"

/* ---- allocation --------------------------------------------------------------
 * One wrapper for the IR's allocations, so that tests can make the n-th one
 * fail and check that no edit fails silently (the model's oom flag). */

static atomic_long fail_countdown;
static atomic_long fail_count;

static bool inject_failure(void)
{
    if (atomic_load_explicit(&fail_countdown, memory_order_relaxed) <= 0)
        return false;
    if (atomic_fetch_sub(&fail_countdown, 1) != 1)
        return false;
    atomic_fetch_add(&fail_count, 1);
    return true;
}

void ox_ir_test_fail_after(long n)
{
    atomic_store(&fail_countdown, n > 0 ? n : 0);
}

long ox_ir_test_failures(void)
{
    return atomic_load(&fail_count);
}

void *ox__ir_malloc(size_t n)
{
    return inject_failure() ? NULL : malloc(n);
}

void *ox__ir_calloc(size_t n, size_t size)
{
    return inject_failure() ? NULL : calloc(n, size);
}

void *ox__ir_realloc(void *p, size_t n)
{
    return inject_failure() ? NULL : realloc(p, n);
}

void *ox__ir_xcalloc(size_t n, size_t size)
{
    return inject_failure() ? NULL : ox_xcalloc(n, size);
}

char *ox__ir_strdup(const char *s)
{
    if (!s)
        return NULL;
    return inject_failure() ? NULL : ox_strdup(s);
}

void ox__oom(const ox_graph *g)
{
    if (g && g->model)
        g->model->oom = true;
}

ox_status ox_model_check_oom(const ox_model *m, const char *what, ox_error *err)
{
    if (!m || !m->oom)
        return OX_OK;
    return ox_errorf(err, OX_ENOMEM,
                     "%s: an earlier edit of the model ran out of memory (the graph may be "
                     "inconsistent)", what ? what : "model");
}

/* Grows *arr (element size el) so that it holds at least need entries. */
static bool grow(void **arr, int *cap, int need, size_t el)
{
    if (need <= *cap)
        return true;
    if (need < 0)
        return false;
    int nc = *cap ? *cap : 4;
    while (nc < need) {
        if (nc > (1 << 29))
            return false;
        nc *= 2;
    }
    void *p = ox__ir_realloc(*arr, (size_t)nc * el);
    if (!p)
        return false;
    *arr = p;
    *cap = nc;
    return true;
}

/* ---- name registries ------------------------------------------------------- */

/* A registry update that failed: unique names could collide. Reported on
 * the model by the next primitive that knows it (see take_map_oom). */
static _Thread_local bool map_oom;

static void take_map_oom(const ox_graph *g)
{
    if (map_oom) {
        map_oom = false;
        ox__oom(g);
    }
}

void ox__name_reg(struct ox_strmap *map, const char *name)
{
    if (!map || !name || !*name)
        return;
    uintptr_t c = (uintptr_t)ox_strmap_get(map, name);
    if (!ox_strmap_put(map, name, (void *)(c + 1)))
        map_oom = true;
}

void ox__name_unreg(struct ox_strmap *map, const char *name)
{
    if (!map || !name || !*name)
        return;
    uintptr_t c = (uintptr_t)ox_strmap_get(map, name);
    if (c <= 1)
        ox_strmap_del(map, name);
    else
        ox_strmap_put(map, name, (void *)(c - 1));
}

/* ---- model -------------------------------------------------------------- */

ox_model *ox_model_new(void)
{
    ox_model *m = ox__ir_calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->ir_version = 8;
    /* Name registries are built on first need (see ensure_names): loading
     * and cloning never pay for them. */
    m->graph = ox_graph_new(m, NULL);
    if (!m->graph) {
        ox_model_free(m);
        return NULL;
    }
    return m;
}

static void free_kv(ox_kv *kv, int n)
{
    for (int i = 0; i < n; i++) {
        free(kv[i].key);
        free(kv[i].value);
    }
    free(kv);
}

void ox_model_free(ox_model *m)
{
    if (!m)
        return;
    ox__graph_destroy(m->graph, false, false);
    for (int i = 0; i < m->n_functions; i++) {
        ox_function *f = &m->functions[i];
        free(f->name);
        free(f->domain);
        free(f->overload);
        free(f->doc_string);
        for (int k = 0; k < f->n_attr_names; k++)
            free(f->attr_names[k]);
        free(f->attr_names);
        for (int k = 0; k < f->n_attr_defaults; k++)
            ox__attr_free(&f->attr_defaults[k], false, false);
        free(f->attr_defaults);
        for (int k = 0; k < f->n_opsets; k++)
            free(f->opsets[k].domain);
        free(f->opsets);
        ox__graph_destroy(f->body, false, false);
        free_kv(f->meta, f->n_meta);
    }
    free(m->functions);
    free(m->producer_name);
    free(m->producer_version);
    free(m->domain);
    free(m->doc_string);
    for (int i = 0; i < m->n_opsets; i++)
        free(m->opsets[i].domain);
    free(m->opsets);
    free_kv(m->meta, m->n_meta);
    for (int i = 0; i < m->n_training_info; i++)
        free(m->training_info[i].data);
    free(m->training_info);
    for (int i = 0; i < m->n_configuration; i++)
        free(m->configuration[i].data);
    free(m->configuration);
    free(m->path);
    free(m->dir);
    ox_buffer_release(m->file_buf);
    for (int i = 0; i < m->n_ext_files; i++)
        ox_buffer_release(m->ext_files[i]);
    free(m->ext_files);
    for (int i = 0; i < m->n_load_issues; i++)
        free(m->load_issues[i]);
    free(m->load_issues);
    ox_strmap_free(m->value_names);
    ox_strmap_free(m->node_names);
    free(m);
}

static bool default_domain(const char *d)
{
    return !d || !*d || strcmp(d, "ai.onnx") == 0;
}

static bool same_domain(const char *a, const char *b)
{
    if (default_domain(a) || default_domain(b))
        return default_domain(a) && default_domain(b);
    return strcmp(a, b) == 0;
}

int64_t ox_model_opset(const ox_model *m, const char *domain)
{
    if (!m)
        return -1;
    for (int i = 0; i < m->n_opsets; i++)
        if (same_domain(m->opsets[i].domain, domain))
            return m->opsets[i].version;
    return -1;
}

void ox_model_set_opset(ox_model *m, const char *domain, int64_t version)
{
    if (!m)
        return;
    for (int i = 0; i < m->n_opsets; i++)
        if (same_domain(m->opsets[i].domain, domain)) {
            m->opsets[i].version = version;
            return;
        }
    ox_opset *p = ox__ir_realloc(m->opsets, (size_t)(m->n_opsets + 1) * sizeof *p);
    if (!p) {
        m->oom = true;
        return;
    }
    m->opsets = p;
    p[m->n_opsets].domain = ox__ir_strdup(domain ? domain : "");
    if (!p[m->n_opsets].domain) {
        m->oom = true;
        return;
    }
    p[m->n_opsets].version = version;
    m->n_opsets++;
}

static void collect_names(ox_graph *g, void *ctx)
{
    ox_model *m = ctx;
    for (int i = 0; i < g->n_values; i++)
        ox__name_reg(m->value_names, g->values[i]->name);
    for (int i = 0; i < g->n_nodes; i++)
        ox__name_reg(m->node_names, g->nodes[i]->name);
}

/* Builds both registries from the model's graph tree; from then on every
 * value/node creation, rename and removal keeps them current. */
static bool ensure_names(ox_model *m)
{
    if (m->value_names && m->node_names)
        return true;
    ox_strmap_free(m->value_names);
    ox_strmap_free(m->node_names);
    m->value_names = ox_strmap_new();
    m->node_names = ox_strmap_new();
    if (!m->value_names || !m->node_names) {
        ox_strmap_free(m->value_names);
        ox_strmap_free(m->node_names);
        m->value_names = m->node_names = NULL;
        return false;
    }
    if (m->graph)
        ox_graph_visit(m->graph, collect_names, m);
    return true;
}

char *ox_model_unique_node_name(ox_model *m, const char *hint)
{
    if (!hint || !*hint)
        hint = "node";
    if (!m)
        return ox__ir_strdup(hint);
    if (!ensure_names(m)) {
        m->oom = true; /* without the registry a name could repeat */
        return ox__ir_strdup(hint);
    }
    if (!ox_strmap_has(m->node_names, hint)) {
        ox__name_reg(m->node_names, hint);
        take_map_oom(m->graph);
        return ox__ir_strdup(hint);
    }
    size_t len = strlen(hint) + 24;
    char *s = ox__ir_malloc(len);
    if (!s) {
        m->oom = true;
        return NULL;
    }
    do {
        snprintf(s, len, "%s_%llu", hint, (unsigned long long)++m->name_counter);
    } while (ox_strmap_has(m->node_names, s));
    /* Registered so that two calls never return the same name even before
     * the first is used. */
    ox__name_reg(m->node_names, s);
    take_map_oom(m->graph);
    return s;
}

/* ---- graph -------------------------------------------------------------- */

ox_graph *ox_graph_new(ox_model *m, ox_graph *parent)
{
    ox_graph *g = ox__ir_calloc(1, sizeof *g);
    if (!g)
        return NULL;
    /* Owned keys: a stale entry after a direct v->name edit is wrong but
     * never a dangling pointer. */
    g->index = ox_strmap_new();
    if (!g->index) {
        free(g);
        return NULL;
    }
    g->model = m;
    g->parent = parent;
    return g;
}

void ox_graph_free(ox_graph *g)
{
    if (!g)
        return;
    ox__graph_destroy(g, g->parent != NULL, true);
}

static void value_destroy(ox_value *v)
{
    free(v->name);
    free(v->doc_string);
    ox_type_free(v->type);
    ox_type_free(v->decl);
    ox_tensor_free(v->init);
    ox_tensor_free(v->known);
    free(v->uses);
    free(v);
}

static void node_destroy(ox_node *n, bool unreg)
{
    for (int i = 0; i < n->n_attrs; i++)
        ox__attr_free(&n->attrs[i], false, unreg);
    free(n->attrs);
    free(n->name);
    free(n->op_type);
    free(n->domain);
    free(n->overload);
    free(n->doc_string);
    free(n->inputs);
    free(n->outputs);
    free_kv(n->meta, n->n_meta);
    free(n);
}

void ox__graph_destroy(ox_graph *g, bool detach, bool unreg)
{
    if (!g)
        return;
    if (detach)
        ox__detach_outer(g);
    for (int i = 0; i < g->n_nodes; i++)
        node_destroy(g->nodes[i], unreg);
    free(g->nodes);
    struct ox_strmap *reg = unreg && g->model ? g->model->value_names : NULL;
    for (int i = 0; i < g->n_values; i++) {
        ox__name_unreg(reg, g->values[i]->name);
        value_destroy(g->values[i]);
    }
    free(g->values);
    free(g->inputs);
    free(g->outputs);
    ox_strmap_free(g->index);
    for (int i = 0; i < g->n_sparse; i++) {
        ox_sparse *s = g->sparse_inits[i];
        if (s) {
            ox_tensor_free(s->values);
            ox_tensor_free(s->indices);
            free(s);
        }
        if (g->sparse_names)
            free(g->sparse_names[i]);
    }
    free(g->sparse_inits);
    free(g->sparse_names);
    free_kv(g->meta, g->n_meta);
    free(g->quant_annotations);
    free(g->name);
    free(g->doc_string);
    free(g);
}

ox_value *ox_graph_find(const ox_graph *g, const char *name)
{
    if (!g || !name)
        return NULL;
    return ox_strmap_get(g->index, name);
}

ox_value *ox_graph_lookup(const ox_graph *g, const char *name)
{
    for (; g; g = g->parent) {
        ox_value *v = ox_graph_find(g, name);
        if (v)
            return v;
    }
    return NULL;
}

ox_value *ox__value_new(ox_graph *g, const char *name)
{
    if (!grow((void **)&g->values, &g->cap_values, g->n_values + 1, sizeof(ox_value *))) {
        ox__oom(g);
        return NULL;
    }
    ox_value *v = ox__ir_calloc(1, sizeof *v);
    if (!v) {
        ox__oom(g);
        return NULL;
    }
    v->name = ox__ir_strdup(name);
    if (!v->name || !ox_strmap_put(g->index, v->name, v)) {
        free(v->name);
        free(v);
        ox__oom(g);
        return NULL;
    }
    v->graph = g;
    v->slot = g->n_values;
    g->values[g->n_values++] = v;
    if (g->model)
        ox__name_reg(g->model->value_names, name);
    take_map_oom(g);
    return v;
}

ox_value *ox_graph_value(ox_graph *g, const char *name)
{
    /* "" names an omitted optional input/output: no value. */
    if (!g || !name || !*name)
        return NULL;
    ox_value *v = ox_graph_find(g, name);
    return v ? v : ox__value_new(g, name);
}

static bool name_taken(const ox_graph *g, const char *s)
{
    if (g->model && ensure_names(g->model))
        return ox_strmap_has(g->model->value_names, s);
    return ox_graph_lookup(g, s) != NULL;
}

ox_value *ox_graph_new_value(ox_graph *g, const char *hint)
{
    if (!g)
        return NULL;
    if (!hint || !*hint)
        hint = "v";
    if (!name_taken(g, hint))
        return ox__value_new(g, hint);
    size_t len = strlen(hint) + 24;
    char *s = ox__ir_malloc(len);
    if (!s) {
        ox__oom(g);
        return NULL;
    }
    static uint64_t local_counter; /* only for model-less graphs */
    uint64_t *ctr = g->model ? &g->model->name_counter : &local_counter;
    do {
        snprintf(s, len, "%s_%llu", hint, (unsigned long long)++*ctr);
    } while (name_taken(g, s));
    ox_value *v = ox__value_new(g, s);
    free(s);
    return v;
}

ox_status ox_value_rename(ox_value *v, const char *name, ox_error *err)
{
    if (!v || !v->graph || !name || !*name)
        return ox_errorf(err, OX_EINVAL, "rename: bad value or empty name");
    ox_graph *g = v->graph;
    if (strcmp(v->name, name) == 0)
        return OX_OK;
    if (ox_graph_find(g, name))
        return ox_errorf(err, OX_EINVAL, "rename: '%s' already exists in scope", name);
    char *nn = ox__ir_strdup(name);
    if (!nn || !ox_strmap_put(g->index, nn, v)) {
        free(nn);
        ox__oom(g);
        return ox_errorf(err, OX_ENOMEM, "rename: out of memory");
    }
    ox_strmap_del(g->index, v->name);
    if (g->model) {
        ox__name_unreg(g->model->value_names, v->name);
        ox__name_reg(g->model->value_names, name);
    }
    free(v->name);
    v->name = nn;
    take_map_oom(g);
    return OX_OK;
}

ox_status ox_graph_add_input(ox_graph *g, ox_value *v)
{
    if (!g || !v || v->graph != g)
        return OX_EINVAL;
    ox_value **p = ox__ir_realloc(g->inputs, (size_t)(g->n_inputs + 1) * sizeof *p);
    if (!p) {
        ox__oom(g);
        return OX_ENOMEM;
    }
    g->inputs = p;
    p[g->n_inputs++] = v;
    v->is_input = true;
    return OX_OK;
}

ox_status ox_graph_add_output(ox_graph *g, ox_value *v)
{
    if (!g || !v)
        return OX_EINVAL;
    ox_value **p = ox__ir_realloc(g->outputs, (size_t)(g->n_outputs + 1) * sizeof *p);
    if (!p) {
        ox__oom(g);
        return OX_ENOMEM;
    }
    g->outputs = p;
    p[g->n_outputs++] = v;
    if (v->graph == g) {
        v->is_output = true;
    } else {
        /* A subgraph returning an outer value reads it. */
        ox_node *r = ox__output_reader(g, v);
        if (r)
            ox__use_add(v, r, -1);
    }
    return OX_OK;
}

ox_status ox_graph_set_initializer(ox_graph *g, ox_value *v, ox_tensor *t)
{
    if (!g || !v || v->graph != g) {
        ox_tensor_free(t);
        return OX_EINVAL;
    }
    if (v->init != t)
        ox_tensor_free(v->init);
    v->init = t;
    return OX_OK;
}

static void remove_from_list(ox_value ***list, int *n, ox_value *v)
{
    int k = 0;
    for (int i = 0; i < *n; i++)
        if ((*list)[i] != v)
            (*list)[k++] = (*list)[i];
    *n = k;
}

void ox_graph_remove_value(ox_graph *g, ox_value *v)
{
    if (!g || !v || v->graph != g || v->producer || v->n_uses > 0)
        return;
    int s = v->slot;
    if (s < 0 || s >= g->n_values || g->values[s] != v)
        return;
    if (v->is_input)
        remove_from_list(&g->inputs, &g->n_inputs, v);
    if (v->is_output)
        remove_from_list(&g->outputs, &g->n_outputs, v);
    /* memmove keeps the order of g->values (and so of saved initializers). */
    memmove(&g->values[s], &g->values[s + 1], (size_t)(g->n_values - s - 1) * sizeof(ox_value *));
    g->n_values--;
    for (int i = s; i < g->n_values; i++)
        g->values[i]->slot = i;
    if (ox_strmap_get(g->index, v->name) == v)
        ox_strmap_del(g->index, v->name);
    if (g->model)
        ox__name_unreg(g->model->value_names, v->name);
    value_destroy(v);
}

/* ---- use lists ------------------------------------------------------------- */

bool ox__use_add(ox_value *v, ox_node *n, int input)
{
    if (!v || !n)
        return false;
    if (!grow((void **)&v->uses, &v->cap_uses, v->n_uses + 1, sizeof(ox_use))) {
        /* The use list now misses a reader: say so on the model. */
        ox__oom(v->graph ? v->graph : n->graph);
        return false;
    }
    v->uses[v->n_uses].node = n;
    v->uses[v->n_uses].input = input;
    v->n_uses++;
    return true;
}

bool ox__use_del(ox_value *v, ox_node *n, int input)
{
    if (!v || !n)
        return false;
    /* Search from the end: recently added uses are removed most often. */
    for (int i = v->n_uses - 1; i >= 0; i--) {
        if (v->uses[i].node == n && v->uses[i].input == input) {
            memmove(&v->uses[i], &v->uses[i + 1], (size_t)(v->n_uses - i - 1) * sizeof(ox_use));
            v->n_uses--;
            return true;
        }
    }
    return false;
}

/* The node that stands for n in graph target: n itself, or the node in
 * target whose subgraph (transitively) holds n. */
static ox_node *ancestor_in(ox_node *n, const ox_graph *target)
{
    int guard = 0;
    while (n && n->graph != target) {
        ox_graph *g = n->graph;
        if (!g || ++guard > 4096)
            return NULL;
        n = g->owner;
    }
    return n;
}

static void read_key(ox_node *n, int i, ox_value *v, ox_node **un, int *ui)
{
    if (!v->graph || v->graph == n->graph) {
        *un = n;
        *ui = i;
        return;
    }
    ox_node *a = ancestor_in(n, v->graph);
    *un = a;
    *ui = -1;
}

void ox__link_input(ox_node *n, int i, ox_value *v)
{
    if (!n || !v)
        return;
    ox_node *un;
    int ui;
    read_key(n, i, v, &un, &ui);
    /* Unresolvable outer reads (subgraph not yet attached to its owner)
     * are recorded later by ox_graph_relink / attach. */
    if (un)
        ox__use_add(v, un, ui);
}

void ox__unlink_input(ox_node *n, int i, ox_value *v)
{
    if (!n || !v)
        return;
    ox_node *un;
    int ui;
    read_key(n, i, v, &un, &ui);
    if (un)
        ox__use_del(v, un, ui);
}

ox_node *ox__output_reader(ox_graph *g, ox_value *v)
{
    if (!g || !v || !v->graph || v->graph == g || !g->owner)
        return NULL;
    return ancestor_in(g->owner, v->graph);
}

bool ox__graph_in_tree(const ox_graph *vg, const ox_graph *root)
{
    int guard = 0;
    for (; vg && guard < 4096; vg = vg->parent, guard++)
        if (vg == root)
            return true;
    return false;
}

static void outer_walk(ox_graph *g, ox_graph *root, bool add)
{
    for (int i = 0; i < g->n_nodes; i++) {
        ox_node *c = g->nodes[i];
        for (int k = 0; k < c->n_inputs; k++) {
            ox_value *v = c->inputs[k];
            if (v && !ox__graph_in_tree(v->graph, root)) {
                if (add)
                    ox__link_input(c, k, v);
                else
                    ox__unlink_input(c, k, v);
            }
        }
        for (int a = 0; a < c->n_attrs; a++) {
            ox_attr *at = &c->attrs[a];
            if (at->g)
                outer_walk(at->g, root, add);
            for (int j = 0; at->graphs && j < at->n; j++)
                if (at->graphs[j])
                    outer_walk(at->graphs[j], root, add);
        }
    }
    for (int k = 0; k < g->n_outputs; k++) {
        ox_value *v = g->outputs[k];
        if (v && !ox__graph_in_tree(v->graph, root)) {
            ox_node *r = ox__output_reader(g, v);
            if (r) {
                if (add)
                    ox__use_add(v, r, -1);
                else
                    ox__use_del(v, r, -1);
            }
        }
    }
}

void ox__attach_outer(ox_graph *root)
{
    if (root)
        outer_walk(root, root, true);
}

void ox__detach_outer(ox_graph *root)
{
    if (root)
        outer_walk(root, root, false);
}

/* ---- nodes -------------------------------------------------------------- */

ox_node *ox_node_new(ox_graph *g, const char *op_type, const char *domain,
                     const char *name, int n_in, ox_value *const *in,
                     int n_out, ox_value *const *out)
{
    if (!g || !op_type || n_in < 0 || n_out < 0 || (n_in && !in) || (n_out && !out))
        return NULL;
    if (!grow((void **)&g->nodes, &g->cap_nodes, g->n_nodes + 1, sizeof(ox_node *))) {
        ox__oom(g);
        return NULL;
    }
    ox_node *n = ox__ir_calloc(1, sizeof *n);
    if (!n) {
        ox__oom(g);
        return NULL;
    }
    n->op_type = ox__ir_strdup(op_type);
    n->domain = ox__ir_strdup(domain ? domain : "");
    n->name = ox__ir_strdup(name ? name : "");
    n->inputs = ox__ir_xcalloc((size_t)n_in, sizeof(ox_value *));
    n->outputs = ox__ir_xcalloc((size_t)n_out, sizeof(ox_value *));
    if (!n->op_type || !n->domain || !n->name || !n->inputs || !n->outputs) {
        node_destroy(n, false);
        ox__oom(g);
        return NULL;
    }
    n->graph = g;
    n->id = g->model ? g->model->next_node_id++ : 0;
    n->n_inputs = n_in;
    n->n_outputs = n_out;
    n->index = g->n_nodes;
    g->nodes[g->n_nodes++] = n;
    for (int i = 0; i < n_in; i++) {
        n->inputs[i] = in[i];
        ox__link_input(n, i, in[i]);
    }
    for (int i = 0; i < n_out; i++) {
        n->outputs[i] = out[i];
        if (out[i]) {
            out[i]->producer = n;
            out[i]->producer_output = i;
        }
    }
    if (g->model && name && *name)
        ox__name_reg(g->model->node_names, name);
    take_map_oom(g);
    return n;
}

/* Drops every link of n (subgraphs first, while n still anchors their
 * outer-scope records); n stays in its graph's node array. */
static void node_detach(ox_node *n)
{
    for (int i = 0; i < n->n_attrs; i++)
        ox__attr_free(&n->attrs[i], true, true);
    n->n_attrs = 0;
    for (int i = 0; i < n->n_inputs; i++)
        if (n->inputs[i])
            ox__unlink_input(n, i, n->inputs[i]);
    for (int i = 0; i < n->n_outputs; i++) {
        ox_value *v = n->outputs[i];
        if (v && v->producer == n) {
            v->producer = NULL;
            v->producer_output = 0;
        }
    }
}

static int node_slot(const ox_graph *g, const ox_node *n)
{
    int s = n->index;
    if (s >= 0 && s < g->n_nodes && g->nodes[s] == n)
        return s;
    for (s = 0; s < g->n_nodes; s++)
        if (g->nodes[s] == n)
            return s;
    return -1;
}

void ox_node_remove(ox_node *n)
{
    if (!n)
        return;
    ox_graph *g = n->graph;
    node_detach(n);
    int s = g ? node_slot(g, n) : -1;
    if (s >= 0) {
        /* O(n - s): many removals should use ox_graph_remove_nodes. */
        memmove(&g->nodes[s], &g->nodes[s + 1], (size_t)(g->n_nodes - s - 1) * sizeof(ox_node *));
        g->n_nodes--;
        for (int i = s; i < g->n_nodes; i++)
            g->nodes[i]->index = i;
    }
    node_destroy(n, true);
}

void ox_graph_remove_nodes(ox_graph *g, ox_node *const *nodes, int count)
{
    if (!g || !nodes || count <= 0)
        return;
    int removed = 0;
    for (int k = 0; k < count; k++) {
        ox_node *n = nodes[k];
        if (!n || n->graph != g)
            continue;
        int s = node_slot(g, n);
        if (s < 0)
            continue; /* duplicate in the list, or not in g */
        node_detach(n);
        g->nodes[s] = NULL;
        node_destroy(n, true);
        removed++;
    }
    if (!removed)
        return;
    /* One compaction pass for the whole batch. */
    int j = 0;
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i]) {
            g->nodes[j] = g->nodes[i];
            g->nodes[j]->index = j;
            j++;
        }
    g->n_nodes = j;
}

int ox_graph_prune_values(ox_graph *g)
{
    if (!g)
        return 0;
    struct ox_strmap *reg = g->model ? g->model->value_names : NULL;
    int j = 0, removed = 0;
    for (int i = 0; i < g->n_values; i++) {
        ox_value *v = g->values[i];
        if (!v->producer && v->n_uses == 0 && !v->init && !v->is_input && !v->is_output) {
            if (ox_strmap_get(g->index, v->name) == v)
                ox_strmap_del(g->index, v->name);
            ox__name_unreg(reg, v->name);
            value_destroy(v);
            removed++;
            continue;
        }
        v->slot = j;
        g->values[j++] = v;
    }
    g->n_values = j;
    return removed;
}

static bool ensure_slots(ox_value ***arr, int *n, int need)
{
    if (need <= *n)
        return true;
    ox_value **p = ox__ir_realloc(*arr, (size_t)need * sizeof *p);
    if (!p)
        return false;
    for (int i = *n; i < need; i++)
        p[i] = NULL;
    *arr = p;
    *n = need;
    return true;
}

void ox_node_set_input(ox_node *n, int i, ox_value *v)
{
    if (!n || i < 0 || i > 65535)
        return;
    if (i >= n->n_inputs && !ensure_slots(&n->inputs, &n->n_inputs, i + 1)) {
        ox__oom(n->graph);
        return;
    }
    ox_value *old = n->inputs[i];
    if (old == v)
        return;
    if (old)
        ox__unlink_input(n, i, old);
    n->inputs[i] = v;
    if (v)
        ox__link_input(n, i, v);
}

void ox_node_set_output(ox_node *n, int i, ox_value *v)
{
    if (!n || i < 0 || i > 65535)
        return;
    if (i >= n->n_outputs && !ensure_slots(&n->outputs, &n->n_outputs, i + 1)) {
        ox__oom(n->graph);
        return;
    }
    ox_value *old = n->outputs[i];
    if (old && old != v && old->producer == n && old->producer_output == i) {
        old->producer = NULL;
        old->producer_output = 0;
    }
    n->outputs[i] = v;
    if (v) {
        v->producer = n;
        v->producer_output = i;
    }
}

void ox_node_move(ox_node *n, int pos)
{
    if (!n || !n->graph)
        return;
    ox_graph *g = n->graph;
    int s = n->index;
    if (s < 0 || s >= g->n_nodes || g->nodes[s] != n)
        return;
    if (pos < 0)
        pos = 0;
    if (pos >= g->n_nodes)
        pos = g->n_nodes - 1;
    if (pos == s)
        return;
    if (pos < s)
        memmove(&g->nodes[pos + 1], &g->nodes[pos], (size_t)(s - pos) * sizeof(ox_node *));
    else
        memmove(&g->nodes[s], &g->nodes[s + 1], (size_t)(pos - s) * sizeof(ox_node *));
    g->nodes[pos] = n;
    int lo = pos < s ? pos : s, hi = pos < s ? s : pos;
    for (int i = lo; i <= hi; i++)
        g->nodes[i]->index = i;
}

bool ox_node_is_default_domain(const ox_node *n)
{
    return n && default_domain(n->domain);
}

bool ox_node_is(const ox_node *n, const char *op_type)
{
    return n && op_type && n->op_type && default_domain(n->domain) &&
           strcmp(n->op_type, op_type) == 0;
}

bool ox_node_is_random(const ox_node *n)
{
    static const char *const ops[] = {"RandomNormal", "RandomUniform", "RandomNormalLike",
                                      "RandomUniformLike", "Multinomial", "Bernoulli", NULL};
    for (int i = 0; ops[i]; i++)
        if (ox_node_is(n, ops[i]))
            return true;
    return false;
}

bool ox_value_overridable(const ox_value *v)
{
    return v && v->init && v->is_input &&
           !(v->graph && v->graph->model && v->graph->model->ir_version < 4);
}

const ox_tensor *ox_value_constant(const ox_value *v)
{
    if (!v)
        return NULL;
    if (v->init)
        return ox_value_overridable(v) ? NULL : v->init;
    return v->override_dep ? NULL : v->known;
}

/* Whether shape inference can have read v's contents for n's output
 * shapes: what its known-value table holds (integers up to 4096 elements,
 * an integer value of unknown size counting as a shape list, anything with
 * a known value); float contents only where they size the output (Resize
 * and Upsample scales, Range), not a Conv bias or a BatchNorm scale. */
static bool contents_readable(const ox_node *n, const ox_value *v)
{
    bool float_sizes = ox_node_is(n, "Resize") || ox_node_is(n, "Upsample") ||
                       ox_node_is(n, "Range");
    if (v->known && (float_sizes || !ox_dtype_is_float(v->known->dtype)))
        return true;
    const ox_type *t = v->type;
    ox_dtype dt = v->init ? v->init->dtype : t && t->kind == OX_TYPE_TENSOR ? t->elem
                                                                           : OX_DT_UNDEFINED;
    int64_t cnt = v->init ? v->init->numel : -1;
    if (!v->init && t && t->kind == OX_TYPE_TENSOR && ox_type_is_static(t)) {
        cnt = 1;
        for (int i = 0; i < t->rank && cnt <= 4096; i++)
            cnt *= t->dims[i].value;
    }
    if (ox_dtype_is_float(dt))
        return float_sizes && cnt >= 0 && cnt <= 64;
    return cnt < 0 || cnt <= 4096;   /* integers, bool; unknown: assume so */
}

static void mark_all(ox_graph *g, void *ctx)
{
    (void)ctx;
    for (int i = 0; i < g->n_values; i++)
        if (g->values[i])
            g->values[i]->override_dep = g->values[i]->override_shape_dep = true;
}

static bool has_overridable(const ox_graph *g)
{
    for (int i = 0; i < g->n_inputs; i++)
        if (ox_value_overridable(g->inputs[i]))
            return true;
    return false;
}

/* Marks n's outputs from its inputs (ox_model_mark_override_deps' rules);
 * any: the model has an overridable initializer (a node with a subgraph
 * then depends on one). True when a mark was added. */
static bool node_marks(ox_node *n, bool any)
{
    bool val = false, shp = false;
    if (ox_node_has_subgraph(n)) {
        val = shp = any;
    } else if ((ox_node_is(n, "Shape") || ox_node_is(n, "Size")) && n->n_inputs > 0 &&
               n->inputs[0]) {
        val = shp = n->inputs[0]->override_shape_dep;
    } else {
        for (int i = 0; i < n->n_inputs; i++) {
            const ox_value *x = n->inputs[i];
            if (!x)
                continue;
            val |= x->override_dep || x->override_shape_dep;
            shp |= x->override_shape_dep || (x->override_dep && contents_readable(n, x));
        }
    }
    bool added = false;
    for (int j = 0; j < n->n_outputs; j++) {
        ox_value *o = n->outputs[j];
        if (o && ((val && !o->override_dep) || (shp && !o->override_shape_dep))) {
            o->override_dep |= val;
            o->override_shape_dep |= shp;
            added = true;
        }
    }
    return added;
}

void ox_node_mark_override_deps(ox_node *n)
{
    if (!n)
        return;
    const ox_graph *g = n->graph;
    while (g && g->parent)
        g = g->parent;
    node_marks(n, g && has_overridable(g));
}

static void clear_marks(ox_graph *g, void *ctx)
{
    (void)ctx;
    for (int i = 0; i < g->n_values; i++)
        if (g->values[i])
            g->values[i]->override_dep = g->values[i]->override_shape_dep = false;
}

static void mark_graph(ox_graph *g, bool any)
{
    for (int i = 0; i < g->n_values; i++) {
        ox_value *v = g->values[i];
        if (!v)
            continue;
        v->override_dep = ox_value_overridable(v);
        v->override_shape_dep = v->override_dep && !ox_type_is_static(v->decl ? v->decl : v->type);
    }
    if (!any)
        return;
    int *order = malloc(((size_t)g->n_nodes + 1) * sizeof *order);
    bool sorted = order && ox_graph_topo_order(g, order, NULL, NULL) == OX_OK;
    /* A fixed point when unsorted (a cycle, out of memory): monotone. */
    for (bool changed = true; changed;) {
        changed = false;
        for (int k = 0; k < g->n_nodes; k++) {
            ox_node *n = g->nodes[sorted ? order[k] : k];
            if (ox_node_has_subgraph(n)) {
                for (int a = 0; a < n->n_attrs; a++) {
                    if (n->attrs[a].type == OX_ATTR_GRAPH && n->attrs[a].g)
                        ox_graph_visit(n->attrs[a].g, mark_all, NULL);
                    for (int j = 0; n->attrs[a].type == OX_ATTR_GRAPHS && j < n->attrs[a].n; j++)
                        ox_graph_visit(n->attrs[a].graphs[j], mark_all, NULL);
                }
            }
            changed |= node_marks(n, true) && !sorted;
        }
    }
    free(order);
}

void ox_model_mark_override_deps(ox_model *m)
{
    if (!m || !m->graph)
        return;
    /* Every graph cleared, then the main graph marked (subgraphs of its
     * nodes all marked when there is an overridable initializer). */
    ox_graph_visit(m->graph, clear_marks, NULL);
    mark_graph(m->graph, has_overridable(m->graph));
}

bool ox_node_has_subgraph(const ox_node *n)
{
    for (int a = 0; n && a < n->n_attrs; a++)
        if (n->attrs[a].type == OX_ATTR_GRAPH || n->attrs[a].type == OX_ATTR_GRAPHS)
            return true;
    return false;
}
