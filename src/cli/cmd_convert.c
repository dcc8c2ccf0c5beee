/* `onnxscope convert MODEL -o OUT --opset N`: rewrites a model for another
 * default-domain opset (src/passes/opset_convert.c), checks the result
 * with our checker and writes it. A model the target opset cannot express
 * is refused with one line naming the operator, the node and the opset. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/commands.h"
#include "onnxscope/check.h"
#include "onnxscope/io.h"
#include "onnxscope/opset.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: onnxscope convert MODEL -o OUT --opset N [--json]\n"
            "Rewrites MODEL for default-domain opset N (%d..%d, up or down): operators\n"
            "whose signature changed are adapted, operators N lacks are expanded into\n"
            "primitives where possible. Exit 1 when an operator cannot be expressed at\n"
            "opset N (the line names the operator, the node and N).\n",
            OX_OPSET_MIN, OX_OPSET_MAX);
}

int ox_cmd_convert(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"opset", required_argument, NULL, 'O'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {0, 0, 0, 0},
    };
    const char *out_path = NULL;
    long opset = -1;
    bool json = false;
    optind = 1;
    int c;
    while ((c = ox_cli_getopt(argc, argv, "convert", "o:h", longopts)) != -1) {
        switch (c) {
        case 'o': out_path = optarg; break;
        case 'O':
            if (!ox_cli_parse_long("--opset", optarg, OX_OPSET_MIN, OX_OPSET_MAX, &opset))
                return 2;
            break;
        case 'j': json = true; break;
        case 'h': usage(stdout); return 0;
        default: return 2;
        }
    }
    if (optind != argc - 1) {
        if (optind >= argc)
            ox_cli_error(NULL, "convert: no model given (usage: onnxscope convert MODEL -o OUT "
                         "--opset N)");
        else
            ox_cli_error(NULL, "convert: one model only (got '%s' and '%s')", argv[optind],
                         argv[optind + 1]);
        return 2;
    }
    if (!out_path) {
        ox_cli_error(NULL, "convert: no output given: add -o OUT.onnx");
        return 2;
    }
    if (opset < 0) {
        ox_cli_error(NULL, "convert: no target given: add --opset N (%d..%d)", OX_OPSET_MIN,
                     OX_OPSET_MAX);
        return 2;
    }
    const char *path = argv[optind];
    int rc = 0;
    ox_model *m = ox_cli_load(path, &rc);
    if (!m)
        return rc;
    ox_error err = {0};
    ox_opset_report rep = {0};
    ox_status st = ox_opset_convert(m, opset, &rep, &err);
    if (st) {
        ox_cli_error(path, "%s", err.msg);
        ox_model_free(m);
        return 1;   /* the model cannot be converted (or out of memory) */
    }
    ox_check_report cr = {0};
    if (ox_check_model(m, &cr) != OX_OK) {
        ox_cli_error(path, "the converted model fails the checker: %s",
                     cr.n_issues ? cr.issues[0].msg : "?");
        ox_check_report_free(&cr);
        ox_model_free(m);
        return 1;
    }
    ox_check_report_free(&cr);
    ox_save_opts so = {0};
    if ((st = ox_save(m, out_path, &so, &err)) != OX_OK) {
        ox_cli_error(out_path, "%s", err.msg);
        ox_model_free(m);
        return ox_status_exit_code(st) ? ox_status_exit_code(st) : 3;
    }
    if (json) {
        json_t *o = json_object();
        json_object_set_new(o, "model", json_string(path));
        json_object_set_new(o, "output", json_string(out_path));
        json_object_set_new(o, "opset_from", json_integer(rep.from));
        json_object_set_new(o, "opset_to", json_integer(rep.to));
        json_object_set_new(o, "ir_from", json_integer(rep.ir_from));
        json_object_set_new(o, "ir_to", json_integer(rep.ir_to));
        json_object_set_new(o, "nodes_adapted", json_integer(rep.nodes_adapted));
        json_object_set_new(o, "nodes_expanded", json_integer(rep.nodes_expanded));
        json_object_set_new(o, "nodes_added", json_integer(rep.nodes_added));
        char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        if (s)
            puts(s);
        free(s);
        json_decref(o);
    } else {
        printf("%s: opset %lld -> %lld (ir_version %lld -> %lld): %d node(s) adapted, %d "
               "expanded, %d added\nwrote %s\n",
               path, (long long)rep.from, (long long)rep.to, (long long)rep.ir_from,
               (long long)rep.ir_to, rep.nodes_adapted, rep.nodes_expanded, rep.nodes_added,
               out_path);
    }
    ox_model_free(m);
    return 0;
}
