/* The run limits the executing commands share: `--max-memory SIZE` (bytes
 * with an optional K/M/G/T suffix, powers of 1024) and `--timeout SECONDS`,
 * parsed into ox_exec_opts, and the one-line error of a run they stopped. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"

bool ox_cli_parse_size(const char *opt, const char *arg, int64_t *out)
{
    char *end = NULL;
    double v = strtod(arg, &end);
    double mul = 1;
    if (end && *end) {
        switch (*end == 0 ? 0 : (*end | 0x20)) {
        case 'k': mul = 1024.0; break;
        case 'm': mul = 1024.0 * 1024; break;
        case 'g': mul = 1024.0 * 1024 * 1024; break;
        case 't': mul = 1024.0 * 1024 * 1024 * 1024; break;
        default: mul = 0; break;
        }
        end++;
        /* "4G", "4GB" and "4GiB" all mean 4 * 2^30. */
        if (*end == 'i' || *end == 'I')
            end++;
        if (*end == 'b' || *end == 'B')
            end++;
    }
    if (end == arg || !end || *end || mul == 0 || !(v > 0) || v * mul >= 9.2e18) {
        ox_cli_error(NULL, "%s %s: expected a size in bytes > 0, optionally with a K, M, G "
                     "or T suffix", opt, arg);
        return false;
    }
    *out = (int64_t)(v * mul);
    if (*out < 1)
        *out = 1;
    return true;
}

bool ox_cli_parse_seconds(const char *opt, const char *arg, double *out)
{
    char *end = NULL;
    double v = strtod(arg, &end);
    if (end == arg || *end || !(v > 0) || !isfinite(v) || v > 1e9) {
        ox_cli_error(NULL, "%s %s: expected a number of seconds > 0", opt, arg);
        return false;
    }
    *out = v;
    return true;
}

int64_t ox_cli_deadline(double timeout_s)
{
    return timeout_s > 0 ? ox_exec_clock_ns() + (int64_t)(timeout_s * 1e9) : 0;
}

void ox_cli_run_error(const char *path, const ox_error *err, double timeout_s)
{
    const char *msg = err->msg[0] ? err->msg : ox_strerror(err->status);
    if (err->status == OX_ETIMEDOUT)
        ox_cli_error(path, "stopped by --timeout %g: %s", timeout_s, msg);
    else
        ox_cli_error(path, "%s", msg);
}
