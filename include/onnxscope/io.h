/* Loading and saving .onnx files. Loading maps the file and views
 * initializer bytes in place; external data is resolved relative to the
 * model's folder and refused when it would escape it. Saving is atomic. */
#ifndef ONNXSCOPE_IO_H
#define ONNXSCOPE_IO_H

#include <stdbool.h>
#include <stddef.h>

#include "onnxscope/ir.h"

typedef struct ox_load_opts {
    /* Optional: called from the loading thread with a fraction in [0, 1]
     * that never decreases (at most a few hundred calls; 1.0 last, on
     * success only). It may not call back into the loader. */
    void (*progress)(void *ctx, double frac);
    void *progress_ctx;
    /* For `check`: record structural problems that are otherwise load
     * errors (a value or initializer defined twice, a graph input listed
     * twice or without a name, tensor data that cannot be read) in
     * m->load_issues and load the rest, so
     * that every problem can be reported. The model then differs from the
     * file (the duplicate is dropped): use it for reporting only. */
    bool keep_going;
} ox_load_opts;

/* Loads path into a new model (*out, caller frees with ox_model_free).
 * opts may be NULL. External data is always resolved: mapping it is
 * cheap (bytes are read on first use) and a missing file is an error
 * here rather than later.
 * Errors: OX_EIO (missing/unreadable file), OX_EPARSE (not a valid ONNX
 * protobuf), OX_EMODEL (structurally invalid). err->msg names the problem
 * without the file name; front ends prefix it. */
ox_status ox_load(const char *path, const ox_load_opts *opts, ox_model **out,
                  ox_error *err);
/* Opens path read-only (close-on-exec) when it is a regular file; a FIFO,
 * device or folder is refused with OX_EIO "not a regular file" without
 * blocking (opening a FIFO for reading waits for a writer). Returns the
 * descriptor, or -1 with err set. Every reader of user-named files uses it. */
int ox_open_regular(const char *path, ox_error *err);
/* Bytes of the external data files m was loaded with (0 when none): the
 * model's size beyond the .onnx file (`info`: "+2.5 GiB external"). */
uint64_t ox_model_external_bytes(const ox_model *m);
/* Loads from memory (copied); external data relative to base_dir (may be NULL). */
ox_status ox_load_buffer(const void *data, size_t len, const char *base_dir,
                         ox_model **out, ox_error *err);
/* The same with load options (opts may be NULL): the fuzz harnesses load
 * from memory the way `check` loads a file (keep_going). */
ox_status ox_load_buffer_opts(const void *data, size_t len, const char *base_dir,
                              const ox_load_opts *opts, ox_model **out, ox_error *err);

typedef struct ox_save_opts {
    bool overwrite_input;     /* allow writing over m->path */
    size_t external_threshold;/* tensors >= this many bytes go external (0 = only if needed) */
    const char *external_name;/* external file name, default "<out>.data" */
    bool force_external;      /* write every tensor >= threshold externally */
} ox_save_opts;

/* Writes m to path atomically (temp file + rename; see onnxscope/outfile.h
 * for devices, FIFOs and symbolic links). When the serialized model would
 * exceed 2 GiB, or the model came with external data, large tensors go to an
 * external data file next to path ("<out>.data"), copied file to file from
 * the input's external data where unchanged. Refuses (OX_EIO) to create or
 * replace the input model or any file it references; see
 * ox_save_check_targets. */
ox_status ox_save(const ox_model *m, const char *path, const ox_save_opts *opts,
                  ox_error *err);
/* The rule ox_save applies before writing anything, for front ends that
 * want to ask before overwriting: OX_OK when neither path nor the external
 * data file saving m there would write is m's own file (unless
 * opts->overwrite_input) or an external data file m was loaded with or views,
 * compared by device and inode and by resolved path. */
ox_status ox_save_check_targets(const ox_model *m, const char *path, const ox_save_opts *opts,
                                ox_error *err);
/* The same rule for any other output (exports): OX_EIO when writing path
 * would replace m's own file or a file m reads external data from. */
ox_status ox_model_check_output(const ox_model *m, const char *path, ox_error *err);
/* Serializes to a malloc'ed buffer (no external data). */
ox_status ox_save_buffer(const ox_model *m, void **data, size_t *len, ox_error *err);

/* Reads a serialized TensorProto (.pb test data) into a tensor. */
ox_status ox_tensor_load_pb(const char *path, ox_tensor **out, ox_error *err);
ox_status ox_tensor_save_pb(const ox_tensor *t, const char *path, ox_error *err);

/* Structural equality of two models (nodes, attributes, names, tensors
 * byte-equal, types); on difference writes where into err and returns false. */
bool ox_model_equal(const ox_model *a, const ox_model *b, ox_error *err);

#endif
