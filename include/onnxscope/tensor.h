/* Tensors: an element type, a shape and bytes. The bytes live in a
 * reference-counted buffer so that a model, its optimized copy and the
 * executor can share initializers without copying (a buffer can be a view
 * into the mmap of the model file). Numeric data is always held in the
 * raw_data layout of the ONNX spec (little-endian, sub-byte types packed);
 * strings as an array of byte strings. */
#ifndef ONNXSCOPE_TENSOR_H
#define ONNXSCOPE_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "onnxscope/dtype.h"
#include "onnxscope/status.h"

#define OX_MAX_RANK 16

typedef struct ox_buffer ox_buffer;
struct ox_buffer {
    int refcount;
    void *data;
    size_t size;
    /* Called when refcount reaches zero; frees data (and the buffer) as
     * appropriate for how it was made. */
    void (*release)(ox_buffer *b);
    void *owner; /* e.g. the mapping this is a view into */
};

/* Allocates a zero-filled heap buffer (size may be 0). Caller owns one ref. */
ox_buffer *ox_buffer_new(size_t size);
/* A buffer that views memory owned by `owner` (retained through a parent
 * buffer): the view keeps `parent` alive. Caller owns one ref. */
ox_buffer *ox_buffer_view(ox_buffer *parent, void *data, size_t size);
/* Like ox_buffer_view, but memory the creator lets its holder write:
 * ox_tensor_mutable_data writes it in place while the view is held once
 * (the executor's arena slots). */
ox_buffer *ox_buffer_writable_view(ox_buffer *parent, void *data, size_t size);
ox_buffer *ox_buffer_retain(ox_buffer *b);
/* Bytes of tensor memory the process holds now: every live ox_buffer_new
 * buffer plus what owners of other buffers report with ox_buffer_account
 * (the executor's arenas). Thread-safe; the executor's memory ceiling
 * (exec.h, max_memory) compares against it. */
int64_t ox_buffer_live_bytes(void);
void ox_buffer_account(int64_t delta);
/* ox_buffer_new calls so far in the process (thread-safe): the executor's
 * "no allocation during a run" statistic (ox_exec_stats.heap_allocs). */
int64_t ox_buffer_allocs(void);
void ox_buffer_release(ox_buffer *b);

typedef struct ox_bytes {
    size_t len;
    char *data; /* NUL-terminated for convenience; may contain NULs */
} ox_bytes;

/* Where a tensor's bytes live on disk when stored as external data. */
typedef struct ox_external {
    char *location;
    int64_t offset;   /* -1 when absent */
    int64_t length;   /* -1 when absent */
    char *checksum;   /* may be NULL */
} ox_external;

typedef struct ox_tensor {
    char *name;          /* may be NULL or "" */
    ox_dtype dtype;
    int rank;
    int64_t dims[OX_MAX_RANK];
    int64_t numel;       /* product of dims, 1 for rank 0 */
    ox_buffer *buf;      /* numeric data (raw layout); NULL for strings */
    size_t offset;       /* byte offset of element 0 within buf */
    size_t nbytes;       /* byte size of the data */
    ox_bytes *strings;   /* numel entries for OX_DT_STRING, owned */
    ox_external *external; /* set when the data came from (or goes to) an external file */
    char *doc_string;
} ox_tensor;

/* New tensor with zeroed data (strings empty). Returns NULL on overflow or OOM. */
ox_tensor *ox_tensor_new(ox_dtype dt, int rank, const int64_t *dims);
/* New tensor viewing (retaining) buf at offset; nbytes must cover the shape. */
ox_tensor *ox_tensor_new_view(ox_dtype dt, int rank, const int64_t *dims,
                              ox_buffer *buf, size_t offset);
/* Shallow copy sharing the bytes (strings are deep-copied). */
ox_tensor *ox_tensor_share(const ox_tensor *t);
/* Deep copy with private bytes. */
ox_tensor *ox_tensor_clone(const ox_tensor *t);
void ox_tensor_free(ox_tensor *t);
void ox_tensor_set_name(ox_tensor *t, const char *name);

static inline void *ox_tensor_data(const ox_tensor *t)
{
    return t->buf ? (char *)t->buf->data + t->offset : NULL;
}
/* Makes the bytes private (copy-on-write) before a mutation; returns data. */
void *ox_tensor_mutable_data(ox_tensor *t);

/* Product of dims with overflow check; false if it overflows or a dim < 0. */
bool ox_shape_numel(int rank, const int64_t *dims, int64_t *out);
/* Formats "1x3x224x224" (or "scalar") into buf. */
const char *ox_shape_str(int rank, const int64_t *dims, char *buf, size_t len);

/* Reads element i of a numeric tensor as double / int64 (any numeric dtype). */
double ox_tensor_get_f64(const ox_tensor *t, int64_t i);
int64_t ox_tensor_get_i64(const ox_tensor *t, int64_t i);
void ox_tensor_set_f64(ox_tensor *t, int64_t i, double v);
void ox_tensor_set_i64(ox_tensor *t, int64_t i, int64_t v);

/* Byte equality of type, shape and data. */
bool ox_tensor_equal(const ox_tensor *a, const ox_tensor *b);

/* Value statistics for the UI: min/max/mean/std over numeric elements,
 * fraction of zeros, count of NaN/Inf. */
typedef struct ox_tensor_stats {
    double min, max, mean, std, zero_frac;
    int64_t nan_count, inf_count, count;
} ox_tensor_stats;
bool ox_tensor_stats_compute(const ox_tensor *t, ox_tensor_stats *st);

#endif
