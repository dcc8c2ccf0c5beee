/* `onnxscope [OPTIONS] MODEL [MODEL]`: the viewer's front door. Parses the
 * options (the input options with the one helper every command uses),
 * and without a terminal (a pipe, CI) or without ncursesw prints what the
 * viewer would open with: `info` for one model, `diff` for two. Otherwise
 * hands over to ox_tui_run. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "tui/tui.h"

static void view_usage(FILE *f)
{
    fprintf(f,
            "usage: onnxscope [OPTIONS] MODEL\n"
            "       onnxscope [OPTIONS] A.onnx B.onnx   (browse B, the Diff panel compares A with it)\n"
            "Opens the interactive viewer.\n"
            "  --theme NAME|FILE  colour theme: default, light, high-contrast, mono, or a\n"
            "                     user theme from $XDG_CONFIG_HOME/onnxscope/themes/\n"
            "  --ascii            ASCII-only drawing (automatic outside UTF-8 locales)\n"
            "  --no-color         no colours (also when NO_COLOR is set)\n"
            "  --shape NAME=1x3x224x224, --dim SYMBOL=VALUE   input shape overrides\n"
            "  --input NAME=FILE.pb, --fill NAME=VALUE, --int-max M, --default-dim D\n"
            "                     the Bench panel's inputs (as `onnxscope bench`)\n"
            "  --device cpu|cuda  the Bench panel's device at start (checked as `bench`\n"
            "                     does: exit 4 when no GPU is usable)\n"
            "  --help-keys        print the key map as a Markdown table\n"
            "Keys: ? inside the viewer. Set ONNXSCOPE_TUI_TIMING=FILE to log redraw times.\n"
            "Without a terminal it prints `onnxscope info MODEL` (`diff A B` for two).\n");
}

int ox_cmd_view(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"theme", required_argument, NULL, 't'}, {"ascii", no_argument, NULL, 'a'},
        {"no-color", no_argument, NULL, 'C'},    OX_CLI_SHAPE_OPTIONS,
        OX_CLI_INPUT_OPTIONS,                    {"help-keys", no_argument, NULL, 'K'},
        {"device", required_argument, NULL, 'D'},
        {"help", no_argument, NULL, 'h'},        {NULL, 0, NULL, 0}};
    ox_tui_opts o = {0};
    /* --shape/--dim as given, for the info/diff fallback */
    char **fw = calloc((size_t)argc * 2 + 4, sizeof *fw);
    int nfw = 0, c, rc = 0;
    if (!fw) {
        ox_cli_error(NULL, "out of memory");
        return 1;
    }
    optind = 1;
    while ((c = ox_cli_getopt(argc, argv, "view", "h", longopts)) != -1) {
        switch (c) {
        case 't': o.theme = optarg; break;
        case 'a': o.ascii = true; break;
        case 'C': o.no_color = true; break;
        case 'K': ox_tui_print_keys(stdout); goto out;
        case 'D':
            /* Same parsing and probe as bench: one line, exit 4 without a GPU. */
            if ((rc = ox_cli_device(optarg, &o.device)) != 0)
                goto out;
            break;
        case 'h': view_usage(stdout); goto out;
        default:
            if (ox_cli_input_opt(c, optarg, &o.shapes, &o.inputs) <= 0) {
                rc = 2;
                goto out;
            }
            if (c == OX_OPT_SHAPE || c == OX_OPT_DIM) {
                fw[nfw++] = c == OX_OPT_SHAPE ? "--shape" : "--dim";
                fw[nfw++] = optarg;
            }
        }
    }
    if (argc - optind == 2)
        o.base_path = argv[optind++];
    if (optind != argc - 1) {
        if (optind >= argc)
            view_usage(stderr);
        else
            ox_cli_error(NULL, "view: one or two models (got %d: '%s' ...; see onnxscope --help)",
                         argc - optind + (o.base_path ? 1 : 0), argv[optind]);
        rc = 2;
        goto out;
    }
    o.path = argv[optind];
    bool tty = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
    if (!tty || !ox_tui_available()) {
        /* The summary is the useful answer, with the same --shape/--dim
         * (which info/diff check against the model). */
        if (tty)
            ox_cli_error(NULL, "built without ncursesw: printing the summary");
        memmove(fw + 1, fw, (size_t)nfw * sizeof *fw);
        int na = nfw + 1;
        fw[0] = o.base_path ? "diff" : "info";
        if (o.base_path)
            fw[na++] = (char *)o.base_path;
        fw[na++] = (char *)o.path;
        fw[na] = NULL;
        rc = o.base_path ? ox_cmd_diff(na, fw) : ox_cmd_info(na, fw);
        goto out;
    }
    free(fw);
    o.on_terminal_ready = ox_cli_cleanup_on_signals;
    return ox_tui_run(&o);   /* takes the options over */
out:
    free(fw);
    ox_infer_opts_free(&o.shapes);
    ox_input_opts_free(&o.inputs);
    return rc;
}
