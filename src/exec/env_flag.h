#ifndef OX_EXEC_ENV_FLAG_H
#define OX_EXEC_ENV_FLAG_H
/* The executor's ONNXSCOPE_* switches (EXECUTOR.md lists them): a variable
 * is on when it is set, non-empty and not "0". */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static inline bool ox__env_on(const char *name)
{
    const char *s = getenv(name);
    return s && s[0] && strcmp(s, "0");
}

#endif
