/* The subcommands of the command-line front end. Each takes the arguments
 * after the command name (argv[0] is the command) and returns the process
 * exit code: 0 ok, 1 model or check failed, 2 usage error, 3 I/O error. */
#ifndef ONNXSCOPE_CLI_COMMANDS_H
#define ONNXSCOPE_CLI_COMMANDS_H

#include <getopt.h>
#include <stdio.h>

#include "onnxscope/exec.h"
#include "onnxscope/infer.h"
#include "onnxscope/ir.h"
#include "onnxscope/randinput.h"

int ox_cmd_info(int argc, char **argv);
int ox_cmd_check(int argc, char **argv);
int ox_cmd_run(int argc, char **argv);
int ox_cmd_test_backend(int argc, char **argv);
int ox_cmd_dot(int argc, char **argv);
int ox_cmd_passes(int argc, char **argv);
int ox_cmd_optimize(int argc, char **argv);
int ox_cmd_bench(int argc, char **argv);
/* tui4: two-model comparison and the viewer */
int ox_cmd_diff(int argc, char **argv);
/* `onnxscope [OPTIONS] MODEL [MODEL]`: the viewer (argv[0] is the program) */
int ox_cmd_view(int argc, char **argv);
int ox_cmd_convert(int argc, char **argv);
int ox_cmd_matrix(int argc, char **argv);

/* Helpers shared by the commands (cli_util.c). */

/* Prints "onnxscope: FILE: message" on stderr. */
void ox_cli_error(const char *file, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Removes live temporary files (ox_tempfiles_remove_all) on SIGINT,
 * SIGTERM and SIGHUP, then runs the handler that was there before (the
 * TUI installs it after ncurses' own) or dies by the signal. A command that
 * installs its own handler for these signals later must call
 * ox_tempfiles_remove_all itself. */
void ox_cli_cleanup_on_signals(void);
/* Loads a model, printing a one-line error and returning NULL on failure;
 * *exit_code receives 1 (bad model) or 3 (I/O). */
ox_model *ox_cli_load(const char *path, int *exit_code);
/* getopt_long with our error lines: an unknown option or a missing
 * argument prints "onnxscope: CMD: unknown option '--x' (see onnxscope CMD
 * --help)" and returns '?' (getopt's own messages would start with argv[0]). */
int ox_cli_getopt(int argc, char **argv, const char *cmd, const char *shortopts,
                  const struct option *longopts);

/* The input options, one table entry each so that every command spells and
 * handles them alike (ox_input_option does the parsing, for the TUI too). */
enum {
    OX_OPT_SHAPE = 0x1000, OX_OPT_DIM, OX_OPT_INPUT, OX_OPT_FILL, OX_OPT_INT_MAX,
    OX_OPT_DEFAULT_DIM,
};
#define OX_CLI_SHAPE_OPTIONS                                       \
    {"shape", required_argument, NULL, OX_OPT_SHAPE},              \
    {"dim", required_argument, NULL, OX_OPT_DIM}
#define OX_CLI_INPUT_OPTIONS                                       \
    {"input", required_argument, NULL, OX_OPT_INPUT},              \
    {"fill", required_argument, NULL, OX_OPT_FILL},                \
    {"int-max", required_argument, NULL, OX_OPT_INT_MAX},          \
    {"default-dim", required_argument, NULL, OX_OPT_DEFAULT_DIM}
/* The measurement options `bench` and `matrix` share: one table entry each
 * (one spelling, one code, one parser: ox_cli_timing_opt). --threads is in
 * the table but each command parses its own (a count for bench, a list for
 * matrix); -j and -n are its short forms in both. */
enum { OX_OPT_NO_CACHE = 0x1100 };
#define OX_CLI_TIMING_OPTIONS                                      \
    {"threads", required_argument, NULL, 'j'},                     \
    {"warmup", required_argument, NULL, 'w'},                      \
    {"iters", required_argument, NULL, 'n'},                       \
    {"seed", required_argument, NULL, 's'},                        \
    {"max-memory", required_argument, NULL, 'M'},                  \
    {"no-cache", no_argument, NULL, OX_OPT_NO_CACHE}
typedef struct ox_cli_timing {
    int *warmup, *iters;      /* --warmup [0, 1e7], --iters [1, 1e7] */
    uint32_t *seed;           /* --seed [0, 2^32 - 1] */
    int64_t *max_memory;      /* --max-memory SIZE */
    bool *no_cache;           /* --no-cache: measure the peak again */
} ox_cli_timing;
/* Handles option c of OX_CLI_TIMING_OPTIONS (not --threads) into t: 1
 * handled, 0 not one of them, -1 malformed (a one-line error was printed;
 * exit 2). */
int ox_cli_timing_opt(int c, const char *arg, const ox_cli_timing *t);
/* Handles option c (an OX_OPT_* code) into shapes / in (either may be NULL
 * when the command takes none of that kind): 1 handled, 0 not an input
 * option, -1 malformed (a one-line error was printed; exit 2). */
int ox_cli_input_opt(int c, const char *arg, ox_infer_opts *shapes, ox_input_opts *in);
/* Checks the options against the loaded model: ox_input_opts_validate(in)
 * (which covers in->shapes), or only shapes when in is NULL. False after printing "onnxscope: PATH: --shape
 * x=1x3: ..." (exit 2). in may be NULL (only shapes are checked). With
 * --default-dim, prints the one note line that says which dims it set. */
bool ox_cli_check_inputs(const char *path, const ox_model *m, const ox_infer_opts *shapes,
                         const ox_input_opts *in);
/* A whole-string integer in [lo, hi] for option opt; false after printing
 * "onnxscope: --threads x: expected an integer in [0, 4096]". */
bool ox_cli_parse_long(const char *opt, const char *s, long lo, long hi, long *out);
/* A whole-string number in [lo, hi] (hi may be INFINITY) for option opt;
 * false after printing "onnxscope: --rtol x: expected a number in [0, inf]". */
bool ox_cli_parse_real(const char *opt, const char *s, double lo, double hi, double *out);
/* "12.3 M", "4.09 G" */
const char *ox_cli_si(double v, char *buf, size_t len);
/* "13.2 MiB" */
const char *ox_cli_bytes(double v, char *buf, size_t len);

/* --max-memory SIZE (K/M/G/T suffixes, powers of 1024) and --timeout
 * SECONDS (> 0); false after printing a usage error (cli_limits.c). */
bool ox_cli_parse_size(const char *opt, const char *arg, int64_t *out);
bool ox_cli_parse_seconds(const char *opt, const char *arg, double *out);
/* The executor deadline of a --timeout (0: none). */
int64_t ox_cli_deadline(double timeout_s);
/* Prints a failed run's error, naming --timeout when it stopped the run. */
void ox_cli_run_error(const char *path, const ox_error *err, double timeout_s);

/* --device cpu|cuda (cli_device.c): 0 with *out set, else the exit code
 * after printing one line: 2 for an unknown device, OX_EXIT_NO_DEVICE (4)
 * when CUDA is asked for and the probe finds no usable GPU (no toolkit in
 * the build, no driver, no device). --precision fp32|fp16: 0 or 2. */
int ox_cli_device(const char *arg, ox_device *out);
int ox_cli_precision(const char *arg, bool *fp16);
/* 2 (with the message) when fp16 is asked for on a device without it. */
int ox_cli_precision_check(ox_device device, bool fp16);

/* The `info --json` object of a model (cmd_info.c); used by optimize. */
typedef struct json_t json_t;
struct ox_model_cost;
json_t *ox_cli_info_json(const ox_model *m, const struct ox_model_cost *c);
/* Weights by element type: "float16 6.65 MiB, int64 88 B" into buf, and as
 * {"float16": bytes, ...} (issue 15). */
const char *ox_cli_dtype_bytes(const struct ox_model_cost *c, char *buf, size_t len);
json_t *ox_cli_dtype_bytes_json(const struct ox_model_cost *c);

#endif
