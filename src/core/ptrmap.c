/* Pointer -> pointer hash map (see ptrmap.h). The hash mixes the address
 * bits (allocations are aligned, so the low bits alone repeat); the table
 * is kept at most half full. */
#include "core/ptrmap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static size_t ptr_hash(const void *p, size_t cap)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)x & (cap - 1);
}

void ox_ptrmap_free(ox_ptrmap *m)
{
    if (!m)
        return;
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

static bool grow(ox_ptrmap *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 64;
    const void **nk = calloc(ncap, sizeof *nk);
    void **nv = calloc(ncap, sizeof *nv);
    if (!nk || !nv) {
        free(nk);
        free(nv);
        return false;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->keys[i])
            continue;
        size_t h = ptr_hash(m->keys[i], ncap);
        while (nk[h])
            h = (h + 1) & (ncap - 1);
        nk[h] = m->keys[i];
        nv[h] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = nk;
    m->vals = nv;
    m->cap = ncap;
    return true;
}

void **ox_ptrmap_slot(ox_ptrmap *m, const void *key, bool create)
{
    if (!m || !key)
        return NULL;
    if (m->cap) {
        size_t h = ptr_hash(key, m->cap);
        while (m->keys[h]) {
            if (m->keys[h] == key)
                return &m->vals[h];
            h = (h + 1) & (m->cap - 1);
        }
    }
    if (!create)
        return NULL;
    if ((m->n + 1) * 2 > m->cap && !grow(m))
        return NULL;
    size_t h = ptr_hash(key, m->cap);
    while (m->keys[h])
        h = (h + 1) & (m->cap - 1);
    m->keys[h] = key;
    m->vals[h] = NULL;
    m->n++;
    return &m->vals[h];
}

bool ox_ptrmap_put(ox_ptrmap *m, const void *key, void *val)
{
    void **s = ox_ptrmap_slot(m, key, true);
    if (!s)
        return false;
    *s = val;
    return true;
}

void *ox_ptrmap_get(const ox_ptrmap *m, const void *key)
{
    void **s = ox_ptrmap_slot((ox_ptrmap *)m, key, false);
    return s ? *s : NULL;
}

bool ox_ptrmap_next(const ox_ptrmap *m, size_t *pos, const void **key, void **val)
{
    for (; m && *pos < m->cap; (*pos)++)
        if (m->keys[*pos]) {
            if (key)
                *key = m->keys[*pos];
            if (val)
                *val = m->vals[*pos];
            (*pos)++;
            return true;
        }
    return false;
}
