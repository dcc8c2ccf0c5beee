/* Internal string -> pointer hash map (open addressing, linear probing,
 * backward-shift deletion). Used for name lookup in graphs and for the
 * model-wide name registries; keys are copied and owned by the map unless
 * it was made with ox_strmap_new_borrowed. */
#ifndef ONNXSCOPE_STRMAP_H
#define ONNXSCOPE_STRMAP_H

#include <stdbool.h>
#include <stddef.h>

struct ox_strmap;

struct ox_strmap *ox_strmap_new(void);
/* A map that borrows its keys: each key string must stay alive and unchanged
 * while it is in the map (saves a copy per entry for graph name indexes). */
struct ox_strmap *ox_strmap_new_borrowed(void);
void ox_strmap_free(struct ox_strmap *m);
/* Returns the value stored under key, or NULL. */
void *ox_strmap_get(const struct ox_strmap *m, const char *key);
bool ox_strmap_has(const struct ox_strmap *m, const char *key);
/* Inserts or replaces; returns false on OOM (map unchanged). */
bool ox_strmap_put(struct ox_strmap *m, const char *key, void *val);
/* Removes key; returns true if it was present. */
bool ox_strmap_del(struct ox_strmap *m, const char *key);
size_t ox_strmap_count(const struct ox_strmap *m);
/* Iteration: *pos starts at 0; returns false at the end. */
bool ox_strmap_next(const struct ox_strmap *m, size_t *pos, const char **key,
                    void **val);

#endif
