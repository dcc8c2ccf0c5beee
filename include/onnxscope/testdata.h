/* Test-data files of the ONNX backend suite: a serialized TensorProto,
 * SequenceProto, OptionalProto or MapProto (onnx-data.proto) per input or
 * output. The file does not say which; the graph's declared type does. */
#ifndef ONNXSCOPE_TESTDATA_H
#define ONNXSCOPE_TESTDATA_H

#include <stddef.h>

#include "onnxscope/exec.h"

/* Reads path as a value of `type` (NULL or a tensor type: TensorProto).
 * *out is a new value (caller frees with ox_rval_free); *name, when not
 * NULL, receives the name stored in the file (malloc'ed, may be NULL).
 * Errors: OX_EIO (unreadable), OX_EPARSE (malformed). */
ox_status ox_testdata_load(const char *path, const ox_type *type, ox_rval **out,
                           char **name, ox_error *err);
ox_status ox_testdata_load_buffer(const void *data, size_t len, const ox_type *type,
                                  ox_rval **out, char **name, ox_error *err);

/* Writes v in the same format (tensor: TensorProto; sequence: SequenceProto;
 * optional: OptionalProto), named `name` (may be NULL). */
ox_status ox_testdata_save(const ox_rval *v, const char *name, const char *path,
                           ox_error *err);

#endif
