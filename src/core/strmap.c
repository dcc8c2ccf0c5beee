/* String -> pointer hash map with owned keys. Linear probing keeps lookups
 * cache-friendly; backward-shift deletion avoids tombstones so maps that see
 * many renames/removals (graph editing) do not degrade. */
#include "core/strmap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct slot {
    char *key;      /* NULL = empty */
    uint64_t hash;
    void *val;
};

struct ox_strmap {
    struct slot *slots;
    size_t cap;     /* power of two, or 0 */
    size_t count;
    bool borrowed; /* keys are not copied or freed */
};

static uint64_t hash_str(const char *s)
{
    /* FNV-1a, then a final mix so that low bits are well distributed. */
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 32;
    return h;
}

struct ox_strmap *ox_strmap_new(void)
{
    return calloc(1, sizeof(struct ox_strmap));
}

struct ox_strmap *ox_strmap_new_borrowed(void)
{
    struct ox_strmap *m = calloc(1, sizeof(struct ox_strmap));
    if (m)
        m->borrowed = true;
    return m;
}

void ox_strmap_free(struct ox_strmap *m)
{
    if (!m)
        return;
    if (!m->borrowed)
        for (size_t i = 0; i < m->cap; i++)
            free(m->slots[i].key);
    free(m->slots);
    free(m);
}

static struct slot *find_slot(const struct ox_strmap *m, const char *key, uint64_t h)
{
    if (!m->cap)
        return NULL;
    size_t mask = m->cap - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        struct slot *s = &m->slots[i];
        if (!s->key)
            return NULL;
        if (s->hash == h && strcmp(s->key, key) == 0)
            return s;
    }
}

void *ox_strmap_get(const struct ox_strmap *m, const char *key)
{
    if (!m || !key)
        return NULL;
    struct slot *s = find_slot(m, key, hash_str(key));
    return s ? s->val : NULL;
}

bool ox_strmap_has(const struct ox_strmap *m, const char *key)
{
    if (!m || !key)
        return false;
    return find_slot(m, key, hash_str(key)) != NULL;
}

static bool grow(struct ox_strmap *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 16;
    if (ncap < m->cap || ncap > SIZE_MAX / sizeof(struct slot))
        return false;
    struct slot *ns = calloc(ncap, sizeof(struct slot));
    if (!ns)
        return false;
    size_t mask = ncap - 1;
    for (size_t i = 0; i < m->cap; i++) {
        struct slot *s = &m->slots[i];
        if (!s->key)
            continue;
        size_t j = s->hash & mask;
        while (ns[j].key)
            j = (j + 1) & mask;
        ns[j] = *s;
    }
    free(m->slots);
    m->slots = ns;
    m->cap = ncap;
    return true;
}

bool ox_strmap_put(struct ox_strmap *m, const char *key, void *val)
{
    if (!m || !key)
        return false;
    uint64_t h = hash_str(key);
    struct slot *s = find_slot(m, key, h);
    if (s) {
        s->val = val;
        return true;
    }
    /* Keep the load factor under 3/4. */
    if ((m->count + 1) * 4 > m->cap * 3 && !grow(m))
        return false;
    char *k = m->borrowed ? (char *)key : strdup(key);
    if (!k)
        return false;
    size_t mask = m->cap - 1;
    size_t i = h & mask;
    while (m->slots[i].key)
        i = (i + 1) & mask;
    m->slots[i].key = k;
    m->slots[i].hash = h;
    m->slots[i].val = val;
    m->count++;
    return true;
}

bool ox_strmap_del(struct ox_strmap *m, const char *key)
{
    if (!m || !key || !m->cap)
        return false;
    struct slot *s = find_slot(m, key, hash_str(key));
    if (!s)
        return false;
    size_t mask = m->cap - 1;
    size_t i = (size_t)(s - m->slots);
    if (!m->borrowed)
        free(s->key);
    s->key = NULL;
    m->count--;
    /* Backward shift: move later entries of the probe run into the hole
     * when their home slot does not lie cyclically in (hole, j]. */
    size_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        struct slot *t = &m->slots[j];
        if (!t->key)
            break;
        size_t home = t->hash & mask;
        bool stay = (i <= j) ? (home > i && home <= j) : (home > i || home <= j);
        if (stay)
            continue;
        m->slots[i] = *t;
        t->key = NULL;
        i = j;
    }
    return true;
}

size_t ox_strmap_count(const struct ox_strmap *m)
{
    return m ? m->count : 0;
}

bool ox_strmap_next(const struct ox_strmap *m, size_t *pos, const char **key,
                    void **val)
{
    if (!m)
        return false;
    while (*pos < m->cap) {
        struct slot *s = &m->slots[(*pos)++];
        if (s->key) {
            if (key)
                *key = s->key;
            if (val)
                *val = s->val;
            return true;
        }
    }
    return false;
}
