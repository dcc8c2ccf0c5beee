/* Helpers shared by the test programs: locating ../shared and the project
 * tree, collecting model files. */
#ifndef ONNXSCOPE_TESTUTIL_H
#define ONNXSCOPE_TESTUTIL_H

#include <stdbool.h>

/* $ONNXSCOPE_SHARED if it names a folder, else NULL (print why). */
const char *ox_test_shared(void);
/* $ONNXSCOPE_SOURCE (the project root), or "." */
const char *ox_test_source(void);
/* The onnxscope binary ($ONNXSCOPE_BIN) or NULL. */
const char *ox_test_bin(void);

typedef struct ox_test_paths {
    char **v;
    int n, cap;
} ox_test_paths;

/* Appends every file named `name` (e.g. "model.onnx") found under dir,
 * recursively, in sorted order; also every *.onnx directly in dir when
 * name is NULL. */
void ox_test_find(const char *dir, const char *name, ox_test_paths *out);
/* All models of ../shared: onnx-backend/{node,simple,pytorch-*}/ * /model.onnx,
 * onnx-backend/light/ *.onnx and models/ * /model.onnx. */
void ox_test_all_shared_models(const char *shared, ox_test_paths *out);
void ox_test_paths_free(ox_test_paths *p);

/* Runs a shell command, capturing stdout+stderr into *out (malloc'ed);
 * returns the exit status (or -1). */
int ox_test_run(const char *cmd, char **out);

#endif
