/* Status codes, their messages and the error struct: the one error
 * convention of the library (see include/onnxscope/status.h). */
#include "onnxscope/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *ox_strerror(ox_status st)
{
    switch (st) {
#define X(name, msg) case OX_##name: return msg;
        OX_STATUS_MAP(X)
#undef X
    }
    return "unknown error";
}

ox_status ox_errorf(ox_error *err, ox_status st, const char *fmt, ...)
{
    /* The first error is usually the cause; later ones are consequences. */
    if (!err || st == OX_OK || err->status != OX_OK)
        return st;
    err->status = st;
    if (!fmt) {
        err->msg[0] = '\0';
        return st;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return st;
}

void ox_error_clear(ox_error *err)
{
    if (!err)
        return;
    err->status = OX_OK;
    err->msg[0] = '\0';
}

int ox_status_exit_code(ox_status st)
{
    switch (st) {
    case OX_OK:
        return 0;
    case OX_EIO:
        return 3;
    case OX_EINVAL:
        return 2;
    default:
        return 1;
    }
}
