/* Executor-private: activation arenas. For one input-shape signature the
 * main graph is inferred to static shapes, planned with ox_memplan and
 * given one aligned arena; a few signatures are cached (see EXECUTOR.md). */
#ifndef ONNXSCOPE_EXEC_ARENA_H
#define ONNXSCOPE_EXEC_ARENA_H

#include <stdbool.h>
#include <stdint.h>

#include "onnxscope/exec.h"
#include "onnxscope/ir.h"
#include "onnxscope/tensor.h"

#define OX_ARENA_CACHE 4

/* One planned signature. `buf` is NULL when the signature does not make
 * every activation static (then runs with it use the heap). */
typedef struct ox_arena_plan {
    int64_t *sig;         /* the signature (see arena.c) */
    int n_sig;
    ox_buffer *buf;       /* the arena, 64-byte aligned */
    int64_t bytes;        /* arena size = the memplan's arena_bytes */
    int n_slots;          /* executor slots of the main graph */
    int64_t *off;         /* per slot: offset in the arena, -1 = heap */
    int64_t *nbytes;      /* per slot: exact planned bytes */
    ox_dtype *dtype;      /* per slot: planned element type */
    bool *inplace;        /* per slot: shares its input's bytes (no zeroing) */
    int n_inplace;
    uint64_t used;        /* LRU tick */
} ox_arena_plan;

/* A value (by name) the executor reads later than its graph uses say:
 * planned as if node `until` (index in the main graph's node list) read it
 * too (a lazy Concat's parts, exec.c). */
typedef struct ox_arena_keep {
    const char *value;
    int until;
} ox_arena_keep;

typedef struct ox_arena_cache {
    ox_arena_plan *e[OX_ARENA_CACHE];
    int n;
    uint64_t tick;
    int built, hits;      /* cumulative */
    ox_arena_keep *keep;  /* owned by the executor's main plan; may be NULL */
    int n_keep;
} ox_arena_cache;

/* The plan for these inputs (built on first sight of their signature), or
 * *out = NULL when inputs cannot be planned (non-tensor inputs, nodes not
 * in file order, shapes not static, an arena over max_bytes: the caller
 * then uses the heap). slot_value[s] is the value of executor slot s of
 * main graph g. Errors only for out-of-memory. */
ox_status ox_arena_get(ox_arena_cache *c, const ox_model *m, int n_slots,
                       const ox_value *const *slot_value, int n_inputs,
                       ox_rval *const *inputs, int64_t max_bytes,
                       const ox_arena_plan **out, ox_error *err);
/* The same with the executor's fused chains (ox_memplan_opts.born, one
 * entry per main-graph node, n_born of them; NULL: none): a chain's values
 * are planned as made when its first node runs. */
ox_status ox_arena_get_ex(ox_arena_cache *c, const ox_model *m, int n_slots,
                          const ox_value *const *slot_value, int n_inputs,
                          ox_rval *const *inputs, int64_t max_bytes, const int *born,
                          int n_born, const ox_arena_plan **out, ox_error *err);
void ox_arena_cache_free(ox_arena_cache *c);

/* The signature plans are keyed on (per input: dtype, rank, dims and the
 * values of small integer tensors), malloc'd with *n entries; NULL for a
 * non-tensor input or out of memory. The CUDA plan keys on it too. */
int64_t *ox_arena_input_sig(int n_inputs, ox_rval *const *inputs, int *n);

/* Infers cl (a clone) to the inputs' shapes and the values the signature
 * keys on; *inferred false when that fails (the inputs cannot be planned).
 * Errors only for out-of-memory. */
ox_status ox_arena_infer_inputs(ox_model *cl, int n_inputs, ox_rval *const *inputs,
                                bool *inferred, ox_error *err);

/* True when t's bytes lie inside the arena of p. */
bool ox_arena_holds(const ox_arena_plan *p, const ox_tensor *t);

#endif
