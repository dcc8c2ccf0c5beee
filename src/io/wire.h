/* Internal: protobuf wire-format helpers for the loader (see wire.c). */
#ifndef ONNXSCOPE_IO_WIRE_H
#define ONNXSCOPE_IO_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

/* Checks what protobuf-c cannot: message nesting deeper than max_depth
 * (its unpacker recurses) and NUL bytes in a TensorProto's external_data
 * entries (its strings would be cut there). Returns NULL when fine, else
 * the problem. Malformed bytes are left for protobuf-c to reject. */
const char *ox_wire_check(const ProtobufCMessageDescriptor *d, const void *data, size_t len,
                          int max_depth);
/* ox_wire_check(...) == NULL. */
bool ox_wire_depth_ok(const ProtobufCMessageDescriptor *d, const void *data,
                      size_t len, int max_depth);

typedef struct ox_wire_view {
    const uint8_t *data; /* raw_data payload inside the original buffer, or NULL */
    size_t len;
} ox_wire_view;

/* A copy of a ModelProto with the raw_data of main-graph initializers of at
 * least `threshold` bytes removed; views[i] says where initializer i's
 * raw_data was (NULL data when kept inline). */
typedef struct ox_wire_strip {
    uint8_t *data;
    size_t len;
    ox_wire_view *views;
    int n_views, cap_views;
} ox_wire_strip;

bool ox_wire_strip_model(const void *data, size_t len, size_t threshold,
                         ox_wire_strip *s);
void ox_wire_strip_free(ox_wire_strip *s);

#endif
