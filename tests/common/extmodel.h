/* Writing test models whose initializers live in an external data file at
 * chosen offsets (protobuf-c directly, not our saver), for the save tests. */
#ifndef ONNXSCOPE_TEST_EXTMODEL_H
#define ONNXSCOPE_TEST_EXTMODEL_H

#include <stdbool.h>

/* Writes the model at path: n <= 8 float initializers t0..t(n-1) of lens[i]
 * elements stored in `loc` (relative to the model's folder) at byte offsets
 * offs[i]; graph inputs x_i of the same shape and outputs y_i = x_i + t_i,
 * so nothing folds and every tensor stays used. Returns false on failure. */
bool ox_test_write_ext_model(const char *path, const char *loc, int n, const long *offs,
                             const long *lens);

#endif
