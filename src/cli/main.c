/* onnxscope's entry point: dispatches to a subcommand, or opens the TUI
 * when given only a model path. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"

typedef struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"info", ox_cmd_info, "summary of a model: graph, opsets, ops, params, cost"},
    {"check", ox_cmd_check, "validate a model; exit 1 with a report on errors"},
    {"passes", ox_cmd_passes, "list the optimization passes"},
    {"optimize", ox_cmd_optimize, "optimize a model with the pass pipeline"},
    {"dot", ox_cmd_dot, "export the graph as DOT/SVG/PNG/PDF"},
    {"run", ox_cmd_run, "run a model on given or random inputs"},
    {"bench", ox_cmd_bench, "time a model (optionally against another) on random inputs"},
    {"matrix", ox_cmd_matrix, "compare optimization strategies x threads x batch sizes"},
    {"test-backend", ox_cmd_test_backend, "run ONNX backend test cases"},
    /* tui4 */
    {"diff", ox_cmd_diff, "compare two models: totals and the nodes removed/added/changed"},
    {"view", ox_cmd_view, "the interactive viewer (what `onnxscope MODEL [MODEL]` runs)"},
    {"convert", ox_cmd_convert, "convert a model to another opset (7..23)"},
};

static void usage(FILE *fp)
{
    fprintf(fp, "usage: onnxscope [OPTIONS] MODEL    open the interactive viewer\n"
                "       onnxscope [OPTIONS] A B      the viewer on B, its Diff panel comparing A\n"
                "       onnxscope COMMAND [ARGS...]  (COMMAND --help for its options)\n\n"
                "viewer options: --theme NAME|FILE, --ascii, --no-color, --shape NAME=DIMS,\n"
                "                --dim SYMBOL=VALUE, --help-keys (onnxscope MODEL --help)\n\n"
                "commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        fprintf(fp, "  %-14s %s\n", commands[i].name, commands[i].summary);
    fprintf(fp, "\nexit codes: 0 ok, 1 model or check failed, 2 usage error, 3 I/O error\n");
}

/* Levenshtein distance, capped: enough to catch "optimise", "bnech". */
static int edit_distance(const char *a, const char *b)
{
    int la = (int)strlen(a), lb = (int)strlen(b);
    if (la > 40 || lb > 40)
        return 99;
    int d[41][41];
    for (int i = 0; i <= la; i++)
        d[i][0] = i;
    for (int j = 0; j <= lb; j++)
        d[0][j] = j;
    for (int i = 1; i <= la; i++)
        for (int j = 1; j <= lb; j++) {
            int c = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < c)
                c = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < c)
                c = d[i][j - 1] + 1;
            d[i][j] = c;
        }
    return d[la][lb];
}

/* A first argument that is no command, no existing file and not path-like
 * ("optimise") is a mistyped command, not a model to open. */
static bool looks_like_command(const char *a)
{
    return a[0] != '-' && !strchr(a, '/') && !strchr(a, '.') && access(a, F_OK) != 0;
}

int main(int argc, char **argv)
{
    /* getopt names argv[0] in its messages; ours all start "onnxscope:". */
    argv[0] = "onnxscope";
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("onnxscope %s\n", ONNXSCOPE_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (!strcmp(argv[1], commands[i].name)) {
            ox_cli_cleanup_on_signals();
            return commands[i].fn(argc - 1, argv + 1);
        }
    if (looks_like_command(argv[1])) {
        const char *best = NULL;
        int bd = 3;
        for (size_t i = 0; i < sizeof commands / sizeof *commands; i++) {
            int d = edit_distance(argv[1], commands[i].name);
            if (d < bd) {
                bd = d;
                best = commands[i].name;
            }
        }
        if (best)
            fprintf(stderr, "onnxscope: unknown command '%s' (did you mean %s?)\n", argv[1], best);
        else
            fprintf(stderr, "onnxscope: unknown command '%s' (commands: see onnxscope --help)\n",
                    argv[1]);
        return 2;
    }
    return ox_cmd_view(argc, argv);
}
