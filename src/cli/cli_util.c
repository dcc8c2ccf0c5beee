/* Small helpers shared by the subcommands: uniform error lines, model
 * loading with exit codes, option parsing, number formatting. */
#include <errno.h>
#include <jansson.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "onnxscope/cost.h"
#include "onnxscope/io.h"
#include "onnxscope/outfile.h"

/* ---- temporary files on fatal signals ---------------------------------- */

static const int cleanup_signals[] = {SIGINT, SIGTERM, SIGHUP};
#define N_CLEANUP_SIGNALS (int)(sizeof cleanup_signals / sizeof *cleanup_signals)
static struct sigaction prev_actions[N_CLEANUP_SIGNALS];

static void on_fatal_signal(int sig, siginfo_t *si, void *uc)
{
    ox_tempfiles_remove_all();
    for (int i = 0; i < N_CLEANUP_SIGNALS; i++) {
        if (cleanup_signals[i] != sig)
            continue;
        const struct sigaction *p = &prev_actions[i];
        if ((p->sa_flags & SA_SIGINFO) && p->sa_sigaction) {
            p->sa_sigaction(sig, si, uc);
            return;
        }
        if (!(p->sa_flags & SA_SIGINFO) && p->sa_handler != SIG_DFL &&
            p->sa_handler != SIG_IGN) {
            p->sa_handler(sig);
            return;
        }
    }
    /* Die by the signal, so the parent sees what happened; it is blocked
     * while we run and delivered when we return. */
    signal(sig, SIG_DFL);
    raise(sig);
}

void ox_cli_cleanup_on_signals(void)
{
    static bool installed;
    if (installed)
        return; /* the previous actions must not become ourselves */
    installed = true;
    for (int i = 0; i < N_CLEANUP_SIGNALS; i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_fatal_signal;
        sa.sa_flags = SA_SIGINFO;
        sigemptyset(&sa.sa_mask);
        for (int j = 0; j < N_CLEANUP_SIGNALS; j++)
            sigaddset(&sa.sa_mask, cleanup_signals[j]);
        if (sigaction(cleanup_signals[i], &sa, &prev_actions[i]) != 0)
            continue;
        /* An ignored signal (nohup) stays ignored. */
        if (!(prev_actions[i].sa_flags & SA_SIGINFO) && prev_actions[i].sa_handler == SIG_IGN)
            sigaction(cleanup_signals[i], &prev_actions[i], NULL);
    }
}

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

int ox_cli_getopt(int argc, char **argv, const char *cmd, const char *shortopts,
                  const struct option *longopts)
{
    char so[64];
    snprintf(so, sizeof so, ":%s", shortopts);   /* ':' reports a missing argument */
    opterr = 0;
    int c = getopt_long(argc, argv, so, longopts, NULL);
    if (c != '?' && c != ':')
        return c;
    const char *arg = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
    char shortbuf[3] = {'-', (char)optopt, 0};
    /* For an unknown short option in a cluster ("-xq"), argv[optind-1] is
     * the cluster; name the letter instead. */
    if (c == '?' && optopt && (arg[0] != '-' || arg[1] != '-'))
        arg = shortbuf;
    if (c == ':')
        ox_cli_error(cmd, "option '%s' needs an argument (see onnxscope %s --help)", arg, cmd);
    else
        ox_cli_error(cmd, "unknown option '%s' (see onnxscope %s --help)", arg, cmd);
    return '?';
}

int ox_cli_input_opt(int c, const char *arg, ox_infer_opts *shapes, ox_input_opts *in)
{
    static const char *const names[] = {"shape", "dim", "input", "fill", "int-max",
                                        "default-dim"};
    if (c < OX_OPT_SHAPE || c > OX_OPT_DEFAULT_DIM)
        return 0;
    ox_error err = {0};
    if (ox_input_option(shapes, in, names[c - OX_OPT_SHAPE], arg, &err) != OX_OK) {
        ox_cli_error(NULL, "%s", err.msg);
        return -1;
    }
    return 1;
}

bool ox_cli_check_inputs(const char *path, const ox_model *m, const ox_infer_opts *shapes,
                         const ox_input_opts *in)
{
    ox_error err = {0};
    ox_status st = in ? ox_input_opts_validate(in, m, &err)
                      : ox_infer_opts_validate(shapes, m, &err);
    if (st != OX_OK) {
        ox_cli_error(path, "%s", err.msg);
        return false;
    }
    char buf[400];
    if (in && ox_input_opts_defaulted(in, m, buf, sizeof buf) > 0)
        fprintf(stderr, "onnxscope: note: --default-dim %lld set %s\n",
                (long long)in->default_dim, buf);
    return true;
}

bool ox_cli_parse_long(const char *opt, const char *s, long lo, long hi, long *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno || v < lo || v > hi) {
        ox_cli_error(NULL, "%s %s: expected an integer in [%ld, %ld]", opt, s, lo, hi);
        return false;
    }
    *out = v;
    return true;
}

int ox_cli_timing_opt(int c, const char *arg, const ox_cli_timing *t)
{
    long v = 0;
    switch (c) {
    case 'w':
        if (!ox_cli_parse_long("--warmup", arg, 0, 10000000, &v))
            return -1;
        *t->warmup = (int)v;
        return 1;
    case 'n':
        if (!ox_cli_parse_long("--iters", arg, 1, 10000000, &v))
            return -1;
        *t->iters = (int)v;
        return 1;
    case 's':
        if (!ox_cli_parse_long("--seed", arg, 0, 4294967295L, &v))
            return -1;
        *t->seed = (uint32_t)v;
        return 1;
    case 'M':
        return ox_cli_parse_size("--max-memory", arg, t->max_memory) ? 1 : -1;
    case OX_OPT_NO_CACHE:
        *t->no_cache = true;
        return 1;
    }
    return 0;
}

bool ox_cli_parse_real(const char *opt, const char *s, double lo, double hi, double *out)
{
    char *end = NULL;
    double v = strtod(s, &end);
    if (!*s || *end || !(v >= lo && v <= hi)) {
        ox_cli_error(NULL, "%s %s: expected a number in [%g, %g]", opt, s, lo, hi);
        return false;
    }
    *out = v;
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
    const char *sign = v < 0 ? "-" : "";
    if (v < 0)
        v = -v;
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%s%.0f B", sign, v);
    else
        snprintf(buf, len, "%s%.1f %s", sign, v, units[u]);
    return buf;
}

const char *ox_cli_dtype_bytes(const struct ox_model_cost *c, char *buf, size_t len)
{
    size_t pos = 0;
    if (len)
        buf[0] = 0;
    for (int d = 0; d < OX_DT_COUNT && pos < len; d++) {
        if (!c->weights_bytes_by_dtype[d])
            continue;
        char b[32];
        int w = snprintf(buf + pos, len - pos, "%s%s %s", pos ? ", " : "",
                         ox_dtype_name((ox_dtype)d),
                         ox_cli_bytes((double)c->weights_bytes_by_dtype[d], b, sizeof b));
        pos += w > 0 ? (size_t)w : 0;
    }
    return buf;
}

json_t *ox_cli_dtype_bytes_json(const struct ox_model_cost *c)
{
    json_t *o = json_object();
    for (int d = 0; d < OX_DT_COUNT; d++)
        if (c->weights_bytes_by_dtype[d])
            json_object_set_new(o, ox_dtype_name((ox_dtype)d),
                                json_integer(c->weights_bytes_by_dtype[d]));
    return o;
}
