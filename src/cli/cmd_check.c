/* `onnxscope check`: validate a model and print every problem found. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "onnxscope/check.h"
#include "onnxscope/io.h"

int ox_cmd_check(int argc, char **argv)
{
    static const struct option longopts[] = {{"help", no_argument, NULL, 'h'},
                                              {"quiet", no_argument, NULL, 'q'},
                                              {NULL, 0, NULL, 0}};
    bool quiet = false;
    int c, rc = 0;
    optind = 1;
    while ((c = ox_cli_getopt(argc, argv, "check", "hq", longopts)) != -1) {
        if (c == 'q') {
            quiet = true;
        } else if (c != 'h') {
            return 2;   /* ox_cli_getopt said why */
        } else {
            fprintf(c == 'h' ? stdout : stderr,
                    "usage: onnxscope check MODEL [--quiet]\n"
                    "  validates single assignment, definitions before use, acyclicity,\n"
                    "  attribute types, opset imports, names, initializer types and\n"
                    "  external data; exit 1 with a report when anything is wrong\n");
            return c == 'h' ? 0 : 2;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "usage: onnxscope check MODEL [--quiet]\n");
        return 2;
    }
    const char *path = argv[optind];
    ox_model *m = ox_cli_load(path, &rc);
    if (!m)
        return rc;
    ox_check_report rep;
    ox_status st = ox_check_model(m, &rep);
    if (st == OX_OK) {
        if (!quiet)
            printf("%s: ok (%d nodes)\n", path, ox_graph_count_nodes(m->graph, true));
    } else {
        for (int i = 0; i < rep.n_issues; i++)
            ox_cli_error(path, "%s", rep.issues[i].msg);
        if (!quiet)
            printf("%s: %d problem%s\n", path, rep.n_issues, rep.n_issues == 1 ? "" : "s");
        rc = 1;
    }
    ox_check_report_free(&rep);
    ox_model_free(m);
    return rc;
}
