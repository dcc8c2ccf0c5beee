/* `onnxscope check`: validate a model and print every problem found. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "onnxscope/check.h"
#include "onnxscope/infer.h"
#include "onnxscope/io.h"

int ox_cmd_check(int argc, char **argv)
{
    static const struct option longopts[] = {{"help", no_argument, NULL, 'h'},
                                              {"quiet", no_argument, NULL, 'q'},
                                              {NULL, 0, NULL, 0}};
    bool quiet = false;
    int c, rc = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "hq", longopts, NULL)) != -1) {
        if (c == 'q') {
            quiet = true;
        } else {
            fprintf(c == 'h' ? stdout : stderr,
                    "usage: onnxscope check MODEL [--quiet]\n"
                    "  validates single assignment, definitions before use, acyclicity,\n"
                    "  operator arity and attribute types and sizes, opset imports,\n"
                    "  names, element types and dims, control-flow bodies, recursive\n"
                    "  functions, initializer types and external data; lists every\n"
                    "  problem found (warnings too) and exits 1 when one is an error\n");
            return c == 'h' ? 0 : 2;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "usage: onnxscope check MODEL [--quiet]\n");
        return 2;
    }
    const char *path = argv[optind];
    /* keep_going: problems the loader would stop at are listed with the rest. */
    ox_load_opts lo = {.keep_going = true};
    ox_model *m = NULL;
    ox_error err = {0};
    ox_status st = ox_load(path, &lo, &m, &err);
    if (st != OX_OK) {
        ox_cli_error(path, "%s", err.msg[0] ? err.msg : ox_strerror(st));
        return ox_status_exit_code(st);
    }
    /* Inference gives intermediate values the ranks that attribute-size
     * checks need; its own inconsistencies become one warning (ours may be
     * stricter than ONNX's in places). Its hard errors (a recursive
     * function) are found by the checker itself. */
    ox_infer_stats stats = {0};
    ox_infer_opts io = {.stats = &stats, .no_value_info = true};
    ox_error ierr = {0};
    ox_infer_model(m, &io, &ierr);
    ox_check_report rep;
    st = ox_check_model(m, &rep);
    if (stats.failed)
        ox_check_report_add(&rep, true, "shape inference found %d inconsistent node%s; first: %s",
                            stats.failed, stats.failed == 1 ? "" : "s", stats.first_problem);
    int n_warn = rep.n_issues - rep.n_errors;
    for (int i = 0; i < rep.n_issues; i++)
        ox_cli_error(path, "%s%s", rep.issues[i].warning ? "warning: " : "", rep.issues[i].msg);
    if (st == OX_OK) {
        if (!quiet)
            printf("%s: ok (%d nodes)%s\n", path, ox_graph_count_nodes(m->graph, true),
                   n_warn ? ", with warnings" : "");
    } else {
        if (!quiet)
            printf("%s: %d error%s, %d warning%s\n", path, rep.n_errors,
                   rep.n_errors == 1 ? "" : "s", n_warn, n_warn == 1 ? "" : "s");
        rc = 1;
    }
    ox_check_report_free(&rep);
    ox_model_free(m);
    return rc;
}
