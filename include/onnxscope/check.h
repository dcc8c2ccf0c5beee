/* The model checker: structural validity of a loaded model. */
#ifndef ONNXSCOPE_CHECK_H
#define ONNXSCOPE_CHECK_H

#include <stdbool.h>

#include "onnxscope/ir.h"

typedef struct ox_check_issue {
    char *msg;       /* "node 'conv1' (Conv): input 'x' is not defined" */
    bool warning;    /* worth knowing, but the model is valid */
} ox_check_issue;

/* Errors come first (issues[0] is an error whenever n_errors > 0), each
 * group in the order found. */
typedef struct ox_check_report {
    ox_check_issue *issues;
    int n_issues, cap;
    int n_errors;
} ox_check_report;

/* Checks m; fills rep (caller frees with ox_check_report_free). Reports
 * every problem found: structure, opset imports, operator arity and
 * attribute types against the registry, attribute sizes against input
 * ranks (Conv/pool), control-flow bodies, recursive functions, and the
 * loader's findings (m->load_issues). Unknown operators of the default
 * domain are a warning. Ranks come from the values' types, so running
 * inference first finds more. Returns OX_OK when there is no error (there
 * may be warnings), OX_EMODEL otherwise. */
ox_status ox_check_model(const ox_model *m, ox_check_report *rep);
/* Appends an issue (front ends add findings of their own, e.g. inference). */
void ox_check_report_add(ox_check_report *rep, bool warning, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void ox_check_report_free(ox_check_report *rep);

#endif
