/* Writing output files without touching what the user did not name: a
 * regular file is written to a temporary file next to it and renamed into
 * place; a character device or FIFO is written in place (never replaced).
 * Live temporary files are kept in a registry a signal handler can empty. */
#ifndef ONNXSCOPE_OUTFILE_H
#define ONNXSCOPE_OUTFILE_H

#include <stdbool.h>
#include <stddef.h>

#include "onnxscope/status.h"

typedef struct ox_outfile {
    char *name;   /* the path as given, for messages */
    char *path;   /* where the output lands (symbolic links resolved) */
    char *tmp;    /* temporary file, NULL when written in place */
    int fd;
    int slot;     /* temp registry slot, -1 when none */
    bool direct;  /* a character device or FIFO, written in place */
} ox_outfile;

enum {
    /* Refuse character devices and FIFOs too (external data, which is
     * addressed by offset, needs a regular file). */
    OX_OUTFILE_REGULAR_ONLY = 1u << 0,
};

/* Opens path for writing. A regular or new file gets a temporary file in
 * the same folder (registered for signal cleanup) that ox_outfile_commit
 * renames over it; a symbolic link is followed (even a dangling one, as a
 * shell redirection does), so the link is kept and its target replaced. A
 * character device (/dev/null) or a FIFO is opened and written in place; a
 * FIFO nobody reads is an error, never a wait. Directories, block devices
 * and sockets are refused.
 * On error *o holds nothing to release. */
ox_status ox_outfile_open(ox_outfile *o, const char *path, unsigned flags, ox_error *err);
/* Writes all of data (retrying short writes); errors name the file. */
ox_status ox_outfile_write(ox_outfile *o, const void *data, size_t len, ox_error *err);
/* Flushes to disk, closes and renames the temporary file into place (or
 * just closes a direct target). Always releases o; on error the temporary
 * file is removed and the target is untouched. */
ox_status ox_outfile_commit(ox_outfile *o, ox_error *err);
/* Closes o and removes its temporary file; the target is untouched. */
void ox_outfile_abort(ox_outfile *o);

/* The registry of live temporary files. Registering copies the path into a
 * fixed slot (returns the slot, or -1 when all are taken or the path is too
 * long: the file is then simply not cleaned up by a signal). */
int ox_tempfile_register(const char *path);
void ox_tempfile_unregister(int slot);
/* Unlinks every registered temporary file. Async-signal-safe: front ends
 * call it from their SIGINT/SIGTERM/SIGHUP handlers, then die by the
 * signal. */
void ox_tempfiles_remove_all(void);

#endif
