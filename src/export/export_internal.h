/* Private helpers shared by the files of src/export: the pointer map, the
 * model index and the node matching used by the diff view. Not part of the
 * public API. */
#ifndef ONNXSCOPE_EXPORT_INTERNAL_H
#define ONNXSCOPE_EXPORT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "core/ptrmap.h"

#include "onnxscope/ir.h"
#include "onnxscope/status.h"

/* The library's pointer map (core/ptrmap.h), NULL keys not allowed. */
typedef ox_ptrmap exp_ptrmap;

static inline void exp_map_init(exp_ptrmap *m)
{
    memset(m, 0, sizeof *m);
}

static inline void exp_map_free(exp_ptrmap *m)
{
    ox_ptrmap_free(m);
}

/* Returns false on OOM. Replaces an existing value. */
static inline bool exp_map_put(exp_ptrmap *m, const void *key, void *val)
{
    return ox_ptrmap_put(m, key, val);
}

static inline void *exp_map_get(const exp_ptrmap *m, const void *key)
{
    return ox_ptrmap_get(m, key);
}

/* Every graph of a model (main graph first, then nested bodies, parents
 * before children) and every node of those graphs. */
typedef struct exp_model_index {
    ox_graph **graphs;
    int n_graphs, cap_graphs;
    ox_node **nodes;
    int n_nodes, cap_nodes;
    exp_ptrmap seen;   /* graphs already indexed */
} exp_model_index;

ox_status exp_index_model(const ox_model *m, exp_model_index *ix, ox_error *err);
void exp_index_free(exp_model_index *ix);

/* Diff matching (the rule is documented in docs/EXPORT.md):
 *  1. a before-node and an after-node match when op_type, domain and a
 *     non-empty name are equal (first unmatched candidate in graph order);
 *  2. still-unmatched nodes match when op_type, domain and the list of
 *     output names are equal (and at least one output is named).
 * Fills b2a (before node -> after node) and a2b; unmatched nodes are absent. */
ox_status exp_diff_match(const exp_model_index *before, const exp_model_index *after,
                         exp_ptrmap *b2a, exp_ptrmap *a2b, ox_error *err);
/* True when two matched nodes differ in their input names or attributes. */
bool exp_node_changed(const ox_node *a, const ox_node *b);

#endif
