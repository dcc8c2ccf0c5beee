/* Internal pointer -> pointer hash map (open addressing, linear probing, no
 * deletion): the one map keyed by IR objects (nodes, values, graphs) used by
 * the executor's planner, shape inference and the export. The struct is
 * public so that it can live inside other structs; zero-initialized is an
 * empty map. NULL keys are not allowed. */
#ifndef ONNXSCOPE_PTRMAP_H
#define ONNXSCOPE_PTRMAP_H

#include <stdbool.h>
#include <stddef.h>

typedef struct ox_ptrmap {
    const void **keys;
    void **vals;
    size_t cap;   /* power of two, 0 when empty */
    size_t n;
} ox_ptrmap;

void ox_ptrmap_free(ox_ptrmap *m);   /* frees the table, not the values */
/* The value slot of key: the existing one, or with create a new one holding
 * NULL. NULL when key is absent (and !create), NULL or on out of memory. */
void **ox_ptrmap_slot(ox_ptrmap *m, const void *key, bool create);
/* Inserts or replaces; false on out of memory or a NULL key. */
bool ox_ptrmap_put(ox_ptrmap *m, const void *key, void *val);
/* The value stored under key, or NULL. */
void *ox_ptrmap_get(const ox_ptrmap *m, const void *key);
/* Iteration: *pos starts at 0; false at the end. */
bool ox_ptrmap_next(const ox_ptrmap *m, size_t *pos, const void **key, void **val);

#endif
