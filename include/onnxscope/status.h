/* One error convention for the whole library: functions return an ox_status
 * (0 = OX_OK) and write a human-readable detail into an ox_error the caller owns.
 * The library never exits or aborts; front ends map statuses to exit codes. */
#ifndef ONNXSCOPE_STATUS_H
#define ONNXSCOPE_STATUS_H

#include <stddef.h>

#define OX_STATUS_MAP(X)                                        \
    X(OK, "ok")                                                 \
    X(EINVAL, "invalid argument")                               \
    X(ENOMEM, "out of memory")                                  \
    X(EIO, "I/O error")                                         \
    X(EPARSE, "malformed model")                                \
    X(EMODEL, "invalid model")                                  \
    X(EUNSUPPORTED, "unsupported")                              \
    X(ESHAPE, "shape error")                                    \
    X(ERANGE, "value out of range")                             \
    X(ECANCELLED, "cancelled")                                  \
    X(ETIMEDOUT, "time limit reached")

typedef enum {
#define X(name, msg) OX_##name,
    OX_STATUS_MAP(X)
#undef X
} ox_status;

#define OX_ERROR_MAX 512

typedef struct ox_error {
    ox_status status;
    char msg[OX_ERROR_MAX];
} ox_error;

const char *ox_strerror(ox_status st);

/* Records st and a printf-style detail into err (err may be NULL); returns st
 * so callers can write `return ox_errorf(err, OX_EPARSE, "...")`. The first
 * error recorded wins unless the struct was cleared. */
ox_status ox_errorf(ox_error *err, ox_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void ox_error_clear(ox_error *err);

/* Maps a status to the CLI exit code contract: 0 ok, 1 bad model, 3 I/O. */
int ox_status_exit_code(ox_status st);

#endif
