/* Small helpers shared by the subcommands: uniform error lines, model
 * loading with exit codes, option parsing, number formatting. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "onnxscope/io.h"

void ox_cli_error(const char *file, const char *fmt, ...)
{
    va_list ap;
    fputs("onnxscope: ", stderr);
    if (file)
        fprintf(stderr, "%s: ", file);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

ox_model *ox_cli_load(const char *path, int *exit_code)
{
    ox_model *m = NULL;
    ox_error err = {0};
    ox_status st = ox_load(path, NULL, &m, &err);
    if (st != OX_OK) {
        ox_cli_error(path, "%s", err.msg[0] ? err.msg : ox_strerror(st));
        *exit_code = ox_status_exit_code(st);
        return NULL;
    }
    *exit_code = 0;
    return m;
}

bool ox_cli_add_shape(ox_infer_opts *opts, const char *arg)
{
    ox_error err = {0};
    if (ox_infer_opts_add_shape(opts, arg, &err) != OX_OK) {
        ox_cli_error(NULL, "--shape %s: %s", arg, err.msg);
        return false;
    }
    return true;
}

bool ox_cli_add_dim(ox_infer_opts *opts, const char *arg)
{
    ox_error err = {0};
    if (ox_infer_opts_add_dim(opts, arg, &err) != OX_OK) {
        ox_cli_error(NULL, "--dim %s: %s", arg, err.msg);
        return false;
    }
    return true;
}

const char *ox_cli_si(double v, char *buf, size_t len)
{
    static const char *units[] = {"", " K", " M", " G", " T", " P"};
    int u = 0;
    while (v >= 1000.0 && u < 5) {
        v /= 1000.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%.0f", v);
    else
        snprintf(buf, len, "%.3g%s", v, units[u]);
    return buf;
}

const char *ox_cli_bytes(double v, char *buf, size_t len)
{
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%.0f B", v);
    else
        snprintf(buf, len, "%.1f %s", v, units[u]);
    return buf;
}
