/* Node-level comparison of two models (two exports of one network, or a
 * model and an optimizer's output): the nodes of the two main graphs are
 * matched by name first, then the rest by position among the unmatched
 * nodes of the same op type; matched pairs that differ are "changed", the
 * unmatched ones "removed" (only in A) or "added" (only in B). Used by
 * `onnxscope diff` and the TUI's two-model Diff panel (docs/CLI.md, "diff"). */
#ifndef ONNXSCOPE_MODELDIFF_H
#define ONNXSCOPE_MODELDIFF_H

#include <stdbool.h>

#include "onnxscope/ir.h"
#include "onnxscope/status.h"

/* What differs between two matched nodes (a bit set). */
enum {
    OX_NDIFF_OP = 1 << 0,      /* op type or domain */
    OX_NDIFF_INPUTS = 1 << 1,  /* input count or tensor names */
    OX_NDIFF_OUTPUTS = 1 << 2, /* output count or tensor names */
    OX_NDIFF_ATTRS = 1 << 3,   /* attribute set or values (bodies: node count and ops) */
    OX_NDIFF_WEIGHTS = 1 << 4, /* an initializer input of the same name holds other data */
    OX_NDIFF_NAME = 1 << 5,    /* matched by position: the names differ */
};

typedef enum { OX_NDIFF_SAME = 0, OX_NDIFF_CHANGED, OX_NDIFF_ADDED, OX_NDIFF_REMOVED } ox_ndiff_kind;

typedef struct ox_node_diff {
    ox_ndiff_kind kind;
    const ox_node *a, *b;  /* a NULL when added, b NULL when removed */
    unsigned what;         /* OX_NDIFF_* bits, changed only */
} ox_node_diff;

typedef struct ox_model_diff {
    /* Every difference: the removed nodes in A's order, then the added and
     * the changed ones in B's order. */
    ox_node_diff *items;
    int n_items;
    int same, changed, added, removed;
    int by_name, by_position;   /* how the matched pairs were found */
    /* Per node of each main graph (by node->index): its ox_ndiff_kind, and
     * the index of its partner in the other graph (-1 when none). */
    unsigned char *kind_a, *kind_b;
    int *partner_a, *partner_b;
    int n_a, n_b;
} ox_model_diff;

/* Compares the main graphs of a and b into d (which the caller frees with
 * ox_model_diff_free, also after an error). O(nodes) plus the bytes of
 * same-named initializers compared. */
ox_status ox_model_diff_compute(const ox_model *a, const ox_model *b, ox_model_diff *d,
                                ox_error *err);
void ox_model_diff_free(ox_model_diff *d);
/* "op, weights" for a set of OX_NDIFF_* bits. */
const char *ox_node_diff_what(unsigned what, char *buf, size_t len);

#endif
