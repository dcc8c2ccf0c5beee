/* The model checker: structural validity of a loaded model. */
#ifndef ONNXSCOPE_CHECK_H
#define ONNXSCOPE_CHECK_H

#include "onnxscope/ir.h"

typedef struct ox_check_issue {
    char *msg;       /* "node 'conv1' (Conv): input 'x' is not defined" */
} ox_check_issue;

typedef struct ox_check_report {
    ox_check_issue *issues;
    int n_issues, cap;
} ox_check_report;

/* Checks m; fills rep (caller frees with ox_check_report_free). Returns
 * OX_OK when no issue was found, OX_EMODEL otherwise. */
ox_status ox_check_model(const ox_model *m, ox_check_report *rep);
void ox_check_report_free(ox_check_report *rep);

#endif
