/* Private to the evaluation matrix (matrix.c, matrix_acc.c, matrix_notes.c). */
#ifndef ONNXSCOPE_MATRIX_INTERNAL_H
#define ONNXSCOPE_MATRIX_INTERNAL_H

#include "onnxscope/exec.h"
#include "onnxscope/matrix.h"

/* Fills row's accuracy fields: outputs of the strategy (b) against the
 * original's (a), n each, named by names (may hold NULLs). */
ox_status ox__matrix_accuracy(int n, ox_rval *const *a, ox_rval *const *b,
                              const char *const *names, ox_matrix_row *row);

/* Appends one formatted note line to mx (dropped on out of memory). */
void ox__matrix_note(ox_matrix *mx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
