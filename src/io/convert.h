/* Internal: conversions between protobuf-c messages and the IR, shared by
 * the model loader/saver and the test-data readers. */
#ifndef ONNXSCOPE_IO_CONVERT_H
#define ONNXSCOPE_IO_CONVERT_H

#include "onnx.pb-c.h"
#include "onnxscope/ir.h"
#include "io/wire.h"

/* Context for resolving external data: the model folder and a cache of
 * mapped external files (owned by the model through its buffers). */
typedef struct ox_extctx ox_extctx;

/* Maps a whole regular file read-only into a reference-counted buffer. */
ox_status ox_map_file(const char *path, ox_buffer **out, ox_error *err);

/* The file behind a mapping made by ox_map_file. */
typedef struct ox_file_ref {
    const char *path;  /* absolute at mapping time; NULL if unresolved */
    uint64_t dev, ino; /* identity when mapped */
    uint64_t offset;   /* of the queried bytes within the file */
} ox_file_ref;

/* True when b is (a view into) a file mapping and len bytes at data lie in
 * it: fills *ref with the file and the bytes' offset. The mapping is
 * read-only, so those bytes are the file's (len 0 asks only for the file). */
bool ox_buffer_file_ref(const ox_buffer *b, const void *data, size_t len, ox_file_ref *ref);

/* Hands the external data files mapped so far (each one reference) to the
 * caller: *n entries in a malloc'ed array, which may be NULL when none. */
ox_buffer **ox_extctx_take_files(ox_extctx *x, int *n);

ox_extctx *ox_extctx_new(const char *dir);
void ox_extctx_free(ox_extctx *x);

/* Converts a TensorProto. `view` (may be NULL) supplies raw_data bytes that
 * were lifted out of the message and live in `owner`; `ext` (may be NULL)
 * resolves external data, which is refused when NULL. */
ox_status ox_tensor_from_proto(const Onnx__TensorProto *tp,
                               const ox_wire_view *view, ox_buffer *owner,
                               ox_extctx *ext, ox_tensor **out, ox_error *err);
ox_type *ox_type_from_proto(const Onnx__TypeProto *tp, int depth);

/* A bump allocator for building messages to pack; freed in one go. */
typedef struct ox_pool ox_pool;
ox_pool *ox_pool_new(void);
void *ox_pool_alloc(ox_pool *p, size_t size);
char *ox_pool_strdup(ox_pool *p, const char *s);
void ox_pool_free(ox_pool *p);

/* Fills *tp (already initialised) from t. Tensor bytes are referenced, not
 * copied. When ext_loc is non-NULL the data is described as external at
 * (ext_loc, ext_off) instead. */
void ox_tensor_to_proto(ox_pool *p, const ox_tensor *t, Onnx__TensorProto *tp,
                        const char *ext_loc, int64_t ext_off);
Onnx__TypeProto *ox_type_to_proto(ox_pool *p, const ox_type *t);

/* Packs msg into a new file at path with ox_save's file handling (temporary
 * file and rename, devices and FIFOs written in place). */
ox_status ox_save_message(const ProtobufCMessage *msg, const char *path, ox_error *err);

#endif
