/* The subcommands of the command-line front end. Each takes the arguments
 * after the command name (argv[0] is the command) and returns the process
 * exit code: 0 ok, 1 model or check failed, 2 usage error, 3 I/O error. */
#ifndef ONNXSCOPE_CLI_COMMANDS_H
#define ONNXSCOPE_CLI_COMMANDS_H

#include <stdio.h>

#include "onnxscope/exec.h"
#include "onnxscope/infer.h"
#include "onnxscope/ir.h"

int ox_cmd_info(int argc, char **argv);
int ox_cmd_check(int argc, char **argv);
int ox_cmd_run(int argc, char **argv);
int ox_cmd_test_backend(int argc, char **argv);
int ox_cmd_dot(int argc, char **argv);
int ox_cmd_passes(int argc, char **argv);
int ox_cmd_optimize(int argc, char **argv);
int ox_cmd_bench(int argc, char **argv);

/* Helpers shared by the commands (cli_util.c). */

/* Prints "onnxscope: FILE: message" on stderr. */
void ox_cli_error(const char *file, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Loads a model, printing a one-line error and returning NULL on failure;
 * *exit_code receives 1 (bad model) or 3 (I/O). */
ox_model *ox_cli_load(const char *path, int *exit_code);
/* Handles --shape / --dim option arguments into opts; returns false (after
 * printing) on a malformed argument. */
bool ox_cli_add_shape(ox_infer_opts *opts, const char *arg);
bool ox_cli_add_dim(ox_infer_opts *opts, const char *arg);
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

/* The `info --json` object of a model (cmd_info.c); used by optimize. */
typedef struct json_t json_t;
struct ox_model_cost;
json_t *ox_cli_info_json(const ox_model *m, const struct ox_model_cost *c);

#endif
