/* The activation memory plan: lifetimes of a graph's values over its node
 * order and offsets in one arena, so that values whose lifetimes do not
 * overlap share bytes. The executor places its tensors with this same plan;
 * the cost model reports its arena size as the peak activation memory. */
#ifndef ONNXSCOPE_MEMPLAN_H
#define ONNXSCOPE_MEMPLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "onnxscope/ir.h"
#include "onnxscope/status.h"

#define OX_MEMPLAN_ALIGN 64

typedef struct ox_memplan_opts {
    bool include_inputs;    /* graph inputs get slots (live from the start) */
    bool include_constants; /* outputs of Constant nodes and other weight
                             * values (ox_value_is_weight) get slots */
    int64_t alignment;      /* power of two; 0 = OX_MEMPLAN_ALIGN */
    /* Optional, one entry per node of the graph (NULL: none): born[i] in
     * [0, i) says node i runs as one with node born[i] (the executor's fused
     * Conv epilogue chains write the chain's last value when the Conv runs),
     * so node i's outputs live from step born[i]; any other value keeps its
     * producer's step. born[i] == OX_MEMPLAN_UNMADE: node i's outputs are
     * never made (the executor computes them inside a later node: an
     * elementwise group's members, a GELU chain's), so they get no slots. */
    const int *born;
} ox_memplan_opts;

enum { OX_MEMPLAN_UNMADE = -2 };

/* Defaults: inputs included, weights computed by nodes (Constant,
 * ConstantOfShape of a constant shape, Identity of an initializer ...)
 * excluded: the executor holds them like initializers. Alignment 64. */
void ox_memplan_opts_default(ox_memplan_opts *o);

typedef struct ox_memplan_slot {
    const ox_value *value;
    int64_t size;      /* bytes, rounded up to the alignment */
    int64_t nbytes;    /* exact bytes of the tensor */
    int64_t offset;    /* in the arena; -1 when the size is not static */
    int first, last;   /* node steps producing / last reading it (inclusive);
                        * graph inputs start at -1, graph outputs end at
                        * n_nodes */
} ox_memplan_slot;

typedef struct ox_memplan {
    const ox_graph *graph;
    ox_memplan_slot *slots;     /* one per planned value, in creation order */
    int n_slots;
    int64_t arena_bytes;        /* peak: size of the arena */
    int64_t lower_bound;        /* max over steps of the live aligned bytes */
    int n_dynamic;              /* values with no static size (offset -1) */
    bool complete;              /* n_dynamic == 0 */
    /* private: lookup index (slot ids sorted by value pointer) */
    int *by_value;
} ox_memplan;

/* Plans g's activations over g->nodes in order (the graph must be
 * topologically sorted). Values planned: node outputs that are not weights
 * and, with include_inputs, graph inputs that are not initializers. Each value
 * lives from its producer's step to the step of its last consumer
 * (consumers inside subgraphs count at their owner node's step); graph
 * outputs live to the end and are never overwritten. Offsets come from the
 * greedy-by-size algorithm: largest first, each placed in the smallest gap
 * among the already placed values whose lifetimes overlap.
 * *out is owned by the caller (ox_memplan_free). opts may be NULL. */
ox_status ox_memplan_build(const ox_graph *g, const ox_memplan_opts *opts,
                           ox_memplan **out, ox_error *err);
void ox_memplan_free(ox_memplan *p);

/* The slot of v, or NULL when v is not planned. O(log n). */
const ox_memplan_slot *ox_memplan_find(const ox_memplan *p, const ox_value *v);

/* Checks that no two slots with overlapping lifetimes overlap in the arena
 * and that every slot fits; returns false and names the pair in err. Used
 * by tests and debug builds. */
bool ox_memplan_verify(const ox_memplan *p, ox_error *err);

#endif
