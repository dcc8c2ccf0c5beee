/* `onnxscope dot MODEL -o OUT.{dot,svg,png,pdf}`: graph export from the
 * command line, a thin layer over ox_export_dot / ox_export_render that
 * parses options, loads the model(s) and maps errors to exit codes. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "onnxscope/export.h"
#include "onnxscope/infer.h"
#include "onnxscope/io.h"
#include "onnxscope/theme.h"

static void dot_usage(FILE *fp)
{
    fprintf(fp,
        "usage: onnxscope dot MODEL -o OUT.{dot,svg,png,pdf} [options]\n"
        "\n"
        "  -o, --output FILE       output file; the format comes from the extension\n"
        "                          (.dot/.gv text needs no layout; '-' writes DOT to stdout)\n"
        "      --around NODE       only the neighbourhood of NODE (a node name, or an\n"
        "                          index into the main graph's node list)\n"
        "      --radius R          neighbourhood size in producer/consumer steps (default 2)\n"
        "      --diff OTHER.onnx   before/after view: MODEL is before, OTHER after;\n"
        "                          removed nodes greyed and dashed, added ones outlined\n"
        "      --initializers      draw weights as small boxes\n"
        "      --no-initializers   hide weights (default)\n"
        "      --rankdir TB|LR     top-to-bottom (default) or left-to-right\n"
        "      --theme NAME|FILE   colours (themes/NAME.theme; default, light,\n"
        "                          high-contrast, mono)\n"
        "      --no-shapes         no shape/dtype labels on edges\n"
        "      --no-attrs          no attributes in node labels\n"
        "      --no-infer          do not run shape inference for edge labels\n"
        "      --shape NAME=1x3x224x224, --dim SYMBOL=VALUE\n"
        "                          input shapes for the edge labels' inference\n"
        "      --force             lay out graphs above %d nodes (may take minutes)\n"
        "  -h, --help              this help\n"
        "\n"
        "exit codes: 0 ok, 1 bad model, 2 usage error (incl. a graph too large to lay\n"
        "out without --force), 3 I/O error\n",
        OX_EXPORT_LAYOUT_LIMIT);
}

enum {
    OPT_AROUND = 256, OPT_RADIUS, OPT_DIFF, OPT_INITS, OPT_NO_INITS, OPT_RANKDIR,
    OPT_THEME, OPT_FORCE, OPT_NO_SHAPES, OPT_NO_ATTRS, OPT_NO_INFER,
};

/* Shape inference only serves the edge labels, so a failure there is a
 * warning, never a reason to refuse the export. */
static void infer_for_labels(ox_model *m, const ox_infer_opts *io, const char *path)
{
    ox_error err = {0};
    if (ox_infer_model(m, io, &err) != OX_OK)
        ox_cli_error(path, "warning: shape inference failed (%s); edges may lack shapes",
                     err.msg[0] ? err.msg : "unknown reason");
}

int ox_cmd_dot(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"around", required_argument, NULL, OPT_AROUND},
        {"radius", required_argument, NULL, OPT_RADIUS},
        {"diff", required_argument, NULL, OPT_DIFF},
        {"initializers", no_argument, NULL, OPT_INITS},
        {"no-initializers", no_argument, NULL, OPT_NO_INITS},
        {"rankdir", required_argument, NULL, OPT_RANKDIR},
        {"theme", required_argument, NULL, OPT_THEME},
        {"force", no_argument, NULL, OPT_FORCE},
        {"no-shapes", no_argument, NULL, OPT_NO_SHAPES},
        {"no-attrs", no_argument, NULL, OPT_NO_ATTRS},
        {"no-infer", no_argument, NULL, OPT_NO_INFER},
        OX_CLI_SHAPE_OPTIONS,
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    ox_export_opts eo;
    ox_export_opts_init(&eo);
    ox_infer_opts io;
    memset(&io, 0, sizeof io);
    const char *out = NULL, *diff_path = NULL, *theme_name = NULL;
    bool infer = true, radius_given = false;
    int rc = 0;

    optind = 0; /* reset getopt for repeated calls (tests, the TUI) */
    int c;
    while ((c = ox_cli_getopt(argc, argv, "dot", "o:h", longopts)) != -1) {
        switch (c) {
        case 'o':
            out = optarg;
            break;
        case OPT_AROUND:
            eo.around = optarg;
            break;
        case OPT_RADIUS: {
            char *end;
            long r = strtol(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0' || r < 0 || r > 1000000) {
                ox_cli_error(NULL, "--radius: expected a number >= 0, got '%s'", optarg);
                rc = 2;
                goto done;
            }
            eo.radius = (int)r;
            radius_given = true;
            break;
        }
        case OPT_DIFF:
            diff_path = optarg;
            break;
        case OPT_INITS:
            eo.show_initializers = true;
            break;
        case OPT_NO_INITS:
            eo.show_initializers = false;
            break;
        case OPT_RANKDIR:
            if (strcmp(optarg, "TB") != 0 && strcmp(optarg, "LR") != 0) {
                ox_cli_error(NULL, "--rankdir: expected TB or LR, got '%s'", optarg);
                rc = 2;
                goto done;
            }
            eo.rankdir = optarg;
            break;
        case OPT_THEME:
            theme_name = optarg;
            break;
        case OPT_FORCE:
            eo.force = true;
            break;
        case OPT_NO_SHAPES:
            eo.show_shapes = false;
            break;
        case OPT_NO_ATTRS:
            eo.show_attrs = false;
            break;
        case OPT_NO_INFER:
            infer = false;
            break;
        case 'h':
            dot_usage(stdout);
            goto done;
        default:
            if (ox_cli_input_opt(c, optarg, &io, NULL) > 0)
                break;
            rc = 2;
            goto done;
        }
    }
    if (optind != argc - 1) {
        ox_cli_error(NULL, "%s", optind >= argc ? "dot: no model given" : "dot: more than one model given");
        dot_usage(stderr);
        rc = 2;
        goto done;
    }
    if (!out) {
        ox_cli_error(NULL, "dot: -o OUT.{dot,svg,png,pdf} is required");
        rc = 2;
        goto done;
    }
    ox_export_format fmt = strcmp(out, "-") == 0 ? OX_EXPORT_DOT
                                                 : ox_export_format_from_path(out);
    if (fmt == OX_EXPORT_AUTO) {
        ox_cli_error(out, "unknown output format (use .dot, .gv, .svg, .png or .pdf)");
        rc = 2;
        goto done;
    }
    if (radius_given && !eo.around) {
        ox_cli_error(NULL, "--radius needs --around NODE");
        rc = 2;
        goto done;
    }
    if (eo.around && diff_path) {
        ox_cli_error(NULL, "--around and --diff cannot be combined");
        rc = 2;
        goto done;
    }

    ox_theme theme;
    ox_error terr = {0};
    if (ox_theme_load(theme_name, &theme, &terr) != OX_OK)
        ox_cli_error(NULL, "warning: %s; using the default theme", terr.msg);
    eo.theme = &theme;

    const char *model_path = argv[optind];
    ox_model *m = ox_cli_load(model_path, &rc);
    if (!m)
        goto done;
    if (!ox_cli_check_inputs(model_path, m, &io, NULL)) {
        ox_model_free(m);
        rc = 2;
        goto done;
    }
    ox_model *other = NULL;
    if (diff_path) {
        other = ox_cli_load(diff_path, &rc);
        if (!other) {
            ox_model_free(m);
            goto done;
        }
    }
    if (infer) {
        infer_for_labels(m, &io, model_path);
        if (other)
            infer_for_labels(other, &io, diff_path);
    }
    eo.diff_after = other;

    ox_error err = {0};
    ox_export_stats st;
    memset(&st, 0, sizeof st);
    ox_status s = fmt == OX_EXPORT_DOT ? ox_export_dot(m, &eo, out, &st, &err)
                                       : ox_export_render(m, &eo, out, fmt, &st, &err);
    if (s != OX_OK) {
        ox_cli_error(s == OX_EINVAL || s == OX_ERANGE ? NULL : out, "%s",
                     err.msg[0] ? err.msg : ox_strerror(s));
        /* Bad options and the layout guard are the caller's to fix. */
        rc = s == OX_EINVAL || s == OX_ERANGE ? 2 : s == OX_EIO ? 3
                                                   : ox_status_exit_code(s);
        if (rc == 0)
            rc = 1;
    } else if (strcmp(out, "-") != 0) {
        if (diff_path)
            fprintf(stderr, "%s: %d nodes, %d edges (%d added, %d removed, %d changed)\n",
                    out, st.nodes, st.edges, st.added, st.removed, st.changed);
        else
            fprintf(stderr, "%s: %d nodes, %d edges\n", out, st.nodes, st.edges);
    }
    ox_model_free(other);
    ox_model_free(m);
done:
    ox_infer_opts_free(&io);
    return rc;
}
