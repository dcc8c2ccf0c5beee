/* Small allocation helpers shared by every module. They never abort: callers
 * check for NULL and report OX_ENOMEM. */
#include "onnxscope/ir.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

char *ox_strdup(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

void *ox_xcalloc(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        return NULL;
    /* calloc(0) may return NULL; callers treat NULL as OOM, so ask for 1. */
    if (n == 0 || size == 0)
        return calloc(1, 1);
    return calloc(n, size);
}
