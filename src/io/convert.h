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

#endif
