/* `onnxscope check`: validate a model and print every problem found. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "onnxscope/check.h"
#include "onnxscope/infer.h"
#include "onnxscope/io.h"

typedef struct problems {
    char **v;
    int n;
} problems;

static void note_problem(void *ctx, const char *msg)
{
    problems *p = ctx;
    char **nv = realloc(p->v, (size_t)(p->n + 1) * sizeof *nv);
    if (!nv)
        return;
    p->v = nv;
    if ((p->v[p->n] = strdup(msg)))
        p->n++;
}

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
     * checks need, and its inconsistencies are errors, as in ONNX's
     * checker with full_check. Its hard errors (a recursive function) are
     * found by the checker itself. */
    problems pr = {0};
    ox_infer_opts io = {.no_value_info = true, .on_problem = note_problem,
                        .problem_ctx = &pr};
    ox_error ierr = {0};
    ox_infer_model(m, &io, &ierr);
    ox_check_report rep;
    st = ox_check_model(m, &rep);
    for (int i = 0; i < pr.n; i++) {
        ox_check_report_add(&rep, false, "shape inference: %s", pr.v[i]);
        free(pr.v[i]);
    }
    free(pr.v);
    if (rep.n_errors)
        st = OX_EMODEL;
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
