/* Output files for every saver (models, tensors, DOT/SVG/PNG/PDF): temp file
 * plus rename for regular files, in-place writes for character devices and
 * FIFOs, and the registry of live temporary files for signal handlers. */
#include "onnxscope/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- temp registry -------------------------------------------------------- */

/* Fixed storage so the signal handler never reads freed memory. A slot is
 * free (0), being filled (1) or live (2); the handler only touches live
 * ones. Savers hold at most a few temporary files at once. */
#define TEMP_SLOTS 16

static struct {
    int state;
    char path[PATH_MAX];
} temp_slots[TEMP_SLOTS];

int ox_tempfile_register(const char *path)
{
    if (!path || strlen(path) >= PATH_MAX)
        return -1;
    for (int i = 0; i < TEMP_SLOTS; i++) {
        int expect = 0;
        if (__atomic_compare_exchange_n(&temp_slots[i].state, &expect, 1, false,
                                        __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
            memcpy(temp_slots[i].path, path, strlen(path) + 1);
            __atomic_store_n(&temp_slots[i].state, 2, __ATOMIC_RELEASE);
            return i;
        }
    }
    return -1;
}

void ox_tempfile_unregister(int slot)
{
    if (slot >= 0 && slot < TEMP_SLOTS)
        __atomic_store_n(&temp_slots[slot].state, 0, __ATOMIC_RELEASE);
}

void ox_tempfiles_remove_all(void)
{
    int saved = errno;
    for (int i = 0; i < TEMP_SLOTS; i++)
        if (__atomic_load_n(&temp_slots[i].state, __ATOMIC_ACQUIRE) == 2)
            unlink(temp_slots[i].path);
    errno = saved;
}

/* ---- output files --------------------------------------------------------- */

static ox_status open_direct(ox_outfile *o, const char *path, const struct stat *st,
                             ox_error *err)
{
    /* O_NONBLOCK: opening a FIFO without a reader fails (ENXIO) instead of
     * waiting for one forever; writes block again afterwards. */
    int fd = open(path, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENXIO && S_ISFIFO(st->st_mode))
            return ox_errorf(err, OX_EIO, "%s: no process is reading the FIFO", path);
        return ox_errorf(err, OX_EIO, "cannot open %s: %s", path, strerror(errno));
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    o->path = strdup(path);
    if (!o->path) {
        close(fd);
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    }
    o->fd = fd;
    o->direct = true;
    return OX_OK;
}

/* For a path that does not exist: the path itself, or, when it is a
 * dangling symbolic link, the file the link names (created there, as a
 * shell redirection would). NULL with errno set on failure. */
static char *link_target(const char *path)
{
    char *cur = strdup(path);
    for (int hop = 0; cur && hop < 40; hop++) {
        struct stat ls;
        if (lstat(cur, &ls) != 0 || !S_ISLNK(ls.st_mode))
            return cur;
        char buf[PATH_MAX];
        ssize_t n = readlink(cur, buf, sizeof buf - 1);
        if (n <= 0) {
            free(cur);
            return NULL;
        }
        buf[n] = '\0';
        const char *slash = strrchr(cur, '/');
        size_t dl = buf[0] == '/' || !slash ? 0 : (size_t)(slash - cur) + 1;
        char *next = malloc(dl + (size_t)n + 1);
        if (next) {
            memcpy(next, cur, dl);
            memcpy(next + dl, buf, (size_t)n + 1);
        }
        free(cur);
        cur = next;
    }
    if (cur) {
        free(cur);
        errno = ELOOP;
    }
    return NULL;
}

static ox_status open_target(ox_outfile *o, const char *path, unsigned flags, ox_error *err);

ox_status ox_outfile_open(ox_outfile *o, const char *path, unsigned flags, ox_error *err)
{
    memset(o, 0, sizeof *o);
    o->fd = -1;
    o->slot = -1;
    if (!path || !*path)
        return ox_errorf(err, OX_EINVAL, "empty output path");
    ox_status s = open_target(o, path, flags, err);
    if (s != OX_OK)
        return s;
    o->name = strdup(path);
    if (!o->name) {
        ox_outfile_abort(o);
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    }
    return OX_OK;
}

static ox_status open_target(ox_outfile *o, const char *path, unsigned flags, ox_error *err)
{
    struct stat st;
    mode_t mode = 0644;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return ox_errorf(err, OX_EIO, "%s is a directory", path);
        if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
            if (flags & OX_OUTFILE_REGULAR_ONLY)
                return ox_errorf(err, OX_EIO, "%s is not a regular file (refused)", path);
            return open_direct(o, path, &st, err);
        }
        if (!S_ISREG(st.st_mode))
            return ox_errorf(err, OX_EIO,
                             "%s is not a regular file, a character device or a FIFO (refused)",
                             path);
        /* Replace the link's target, not the link (and never a link in /dev
         * such as /dev/stdout redirected to a file). */
        o->path = realpath(path, NULL);
        if (!o->path)
            return ox_errorf(err, OX_EIO, "cannot resolve %s: %s", path, strerror(errno));
        mode = st.st_mode & 0777;
    } else if (errno == ENOENT) {
        o->path = link_target(path);
        if (!o->path)
            return ox_errorf(err, OX_EIO, "cannot write %s: %s", path, strerror(errno));
    } else {
        return ox_errorf(err, OX_EIO, "cannot write %s: %s", path, strerror(errno));
    }
    size_t n = strlen(o->path) + 16;
    o->tmp = malloc(n);
    if (!o->tmp) {
        free(o->path);
        o->path = NULL;
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    }
    snprintf(o->tmp, n, "%s.tmpXXXXXX", o->path);
    /* Block the cleanup signals while the name exists unregistered. */
    sigset_t all, old;
    sigemptyset(&all);
    sigaddset(&all, SIGINT);
    sigaddset(&all, SIGTERM);
    sigaddset(&all, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    o->fd = mkostemp(o->tmp, O_CLOEXEC);
    int e = errno;
    if (o->fd >= 0)
        o->slot = ox_tempfile_register(o->tmp);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (o->fd < 0) {
        ox_status s = ox_errorf(err, OX_EIO, "cannot create a file next to %s: %s", path,
                                strerror(e));
        free(o->tmp);
        free(o->path);
        memset(o, 0, sizeof *o);
        o->fd = -1;
        o->slot = -1;
        return s;
    }
    /* mkstemp makes 0600; an output is an ordinary document (or keeps the
     * mode of the file it replaces). */
    fchmod(o->fd, mode);
    return OX_OK;
}

ox_status ox_outfile_write(ox_outfile *o, const void *data, size_t len, ox_error *err)
{
    const char *p = data;
    while (len > 0) {
        ssize_t w = write(o->fd, p, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return ox_errorf(err, OX_EIO, "writing %s: %s", o->name, strerror(errno));
        }
        if (w == 0)
            return ox_errorf(err, OX_EIO, "writing %s: %s", o->name, strerror(ENOSPC));
        p += w;
        len -= (size_t)w;
    }
    return OX_OK;
}

static void outfile_release(ox_outfile *o)
{
    free(o->name);
    free(o->path);
    free(o->tmp);
    memset(o, 0, sizeof *o);
    o->fd = -1;
    o->slot = -1;
}

void ox_outfile_abort(ox_outfile *o)
{
    if (o->fd >= 0)
        close(o->fd);
    if (o->tmp)
        unlink(o->tmp);
    ox_tempfile_unregister(o->slot);
    outfile_release(o);
}

ox_status ox_outfile_commit(ox_outfile *o, ox_error *err)
{
    ox_status st = OX_OK;
    /* fsync before rename, or a crash can leave an empty file in place of
     * the old one; devices and FIFOs have nothing to sync. */
    if (!o->direct && fsync(o->fd) != 0)
        st = ox_errorf(err, OX_EIO, "writing %s: %s", o->name, strerror(errno));
    if (close(o->fd) != 0 && st == OX_OK)
        st = ox_errorf(err, OX_EIO, "writing %s: %s", o->name, strerror(errno));
    o->fd = -1;
    if (st == OX_OK && o->tmp && rename(o->tmp, o->path) != 0)
        st = ox_errorf(err, OX_EIO, "cannot rename to %s: %s", o->name, strerror(errno));
    else if (st == OX_OK && o->tmp) {
        free(o->tmp); /* renamed: nothing left to remove */
        o->tmp = NULL;
    }
    ox_outfile_abort(o);
    return st;
}
