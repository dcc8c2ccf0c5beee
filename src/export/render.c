/* Writing the built graph: DOT text through libcgraph's agwrite, and
 * SVG/PNG/PDF through libgvc (layout with `dot`). Files are written to a
 * temporary name next to the target and renamed, so a failed or interrupted
 * export never leaves half a file behind. */
#include "onnxscope/export.h"

#include <cgraph.h>
#include <errno.h>
#include <gvc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

ox_export_format ox_export_format_from_path(const char *path)
{
    if (!path)
        return OX_EXPORT_AUTO;
    const char *dot = strrchr(path, '.');
    const char *slash = strrchr(path, '/');
    if (!dot || (slash && dot < slash))
        return OX_EXPORT_AUTO;
    dot++;
    if (strcasecmp(dot, "dot") == 0 || strcasecmp(dot, "gv") == 0)
        return OX_EXPORT_DOT;
    if (strcasecmp(dot, "svg") == 0)
        return OX_EXPORT_SVG;
    if (strcasecmp(dot, "png") == 0)
        return OX_EXPORT_PNG;
    if (strcasecmp(dot, "pdf") == 0)
        return OX_EXPORT_PDF;
    return OX_EXPORT_AUTO;
}

static const char *gv_format(ox_export_format f)
{
    switch (f) {
    case OX_EXPORT_SVG:
        return "svg";
    case OX_EXPORT_PNG:
        return "png";
    case OX_EXPORT_PDF:
        return "pdf";
    case OX_EXPORT_DOT:
        return "dot";
    default:
        return NULL;
    }
}

/* Graphviz reports problems through a global callback; collect the last
 * one so it can go into our error message instead of onto stderr. Not
 * thread-safe, like Graphviz itself. */
static char gv_msg[256];

static int gv_collect(char *msg)
{
    if (msg) {
        size_t n = strlen(gv_msg);
        if (n + 1 < sizeof gv_msg)
            snprintf(gv_msg + n, sizeof gv_msg - n, "%s", msg);
    }
    return 0;
}

static void gv_msg_trim(void)
{
    size_t n = strlen(gv_msg);
    while (n > 0 && (gv_msg[n - 1] == '\n' || gv_msg[n - 1] == ' '))
        gv_msg[--n] = '\0';
}

/* Opens a temporary file next to path; returns its fd and name (caller
 * frees the name). */
static int open_temp(const char *path, char **tmpname, ox_error *err)
{
    size_t n = strlen(path) + 16;
    char *t = malloc(n);
    if (!t) {
        ox_errorf(err, OX_ENOMEM, "out of memory");
        return -1;
    }
    snprintf(t, n, "%s.tmpXXXXXX", path);
    int fd = mkstemp(t);
    if (fd < 0) {
        ox_errorf(err, OX_EIO, "cannot create %s: %s", path, strerror(errno));
        free(t);
        return -1;
    }
    /* mkstemp makes 0600; an export is an ordinary document. */
    fchmod(fd, 0644);
    *tmpname = t;
    return fd;
}

static ox_status finish_temp(char *tmp, const char *path, bool ok, ox_error *err)
{
    ox_status st = OX_OK;
    if (ok && rename(tmp, path) != 0)
        st = ox_errorf(err, OX_EIO, "cannot write %s: %s", path, strerror(errno));
    if (!ok || st != OX_OK)
        unlink(tmp);
    free(tmp);
    return st;
}

static ox_status write_dot(Agraph_t *g, const char *path, ox_error *err)
{
    if (strcmp(path, "-") == 0) {
        if (agwrite(g, stdout) != 0 || fflush(stdout) != 0)
            return ox_errorf(err, OX_EIO, "cannot write DOT to stdout");
        return OX_OK;
    }
    char *tmp = NULL;
    int fd = open_temp(path, &tmp, err);
    if (fd < 0)
        return err ? err->status : OX_EIO;
    FILE *f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        finish_temp(tmp, path, false, err);
        return ox_errorf(err, OX_EIO, "cannot write %s: %s", path, strerror(errno));
    }
    bool ok = agwrite(g, f) == 0;
    ok = (fflush(f) == 0) && ok;
    ok = (fclose(f) == 0) && ok;
    if (!ok) {
        finish_temp(tmp, path, false, err);
        return ox_errorf(err, OX_EIO, "cannot write %s: %s", path, strerror(errno));
    }
    return finish_temp(tmp, path, true, err);
}

ox_status ox_export_dot(const ox_model *m, const ox_export_opts *o,
                        const char *path, ox_export_stats *stats, ox_error *err)
{
    if (stats)
        memset(stats, 0, sizeof *stats);
    if (!path)
        return ox_errorf(err, OX_EINVAL, "no output path");
    Agraph_t *g = NULL;
    ox_status st = ox_export_build(m, o, &g, stats, err);
    if (st != OX_OK)
        return st;
    st = write_dot(g, path, err);
    ox_export_free_graph(g);
    return st;
}

ox_status ox_export_render_graph(struct Agraph_s *g, const char *const *paths, int n,
                                 ox_error *err)
{
    if (!g || !paths || n <= 0)
        return ox_errorf(err, OX_EINVAL, "nothing to render");
    for (int i = 0; i < n; i++) {
        ox_export_format f = paths[i] ? ox_export_format_from_path(paths[i])
                                      : OX_EXPORT_AUTO;
        if (f == OX_EXPORT_AUTO)
            return ox_errorf(err, OX_EINVAL,
                             "%s: unknown output format (use .dot, .svg, .png or .pdf)",
                             paths[i] ? paths[i] : "(null)");
    }
    gv_msg[0] = '\0';
    agusererrf old = agseterrf(gv_collect);
    GVC_t *gvc = gvContext();
    if (!gvc) {
        agseterrf(old);
        return ox_errorf(err, OX_ENOMEM, "cannot start Graphviz");
    }
    ox_status st = OX_OK;
    if (gvLayout(gvc, g, "dot") != 0) {
        gv_msg_trim();
        st = ox_errorf(err, OX_EUNSUPPORTED, "Graphviz layout failed%s%s",
                       gv_msg[0] ? ": " : "", gv_msg);
    }
    for (int i = 0; i < n && st == OX_OK; i++) {
        ox_export_format f = ox_export_format_from_path(paths[i]);
        if (f == OX_EXPORT_DOT) {
            /* After layout agwrite includes positions, as `dot -Tdot` does. */
            st = write_dot(g, paths[i], err);
            continue;
        }
        char *tmp = NULL;
        int fd = open_temp(paths[i], &tmp, err);
        if (fd < 0) {
            st = err ? err->status : OX_EIO;
            break;
        }
        close(fd);
        gv_msg[0] = '\0';
        if (gvRenderFilename(gvc, g, gv_format(f), tmp) != 0) {
            gv_msg_trim();
            finish_temp(tmp, paths[i], false, err);
            st = ox_errorf(err, OX_EUNSUPPORTED,
                           "Graphviz cannot render %s%s%s (is the %s plugin installed?)",
                           paths[i], gv_msg[0] ? ": " : "", gv_msg, gv_format(f));
            break;
        }
        struct stat sbuf;
        if (stat(tmp, &sbuf) != 0 || sbuf.st_size == 0) {
            finish_temp(tmp, paths[i], false, err);
            st = ox_errorf(err, OX_EUNSUPPORTED, "Graphviz wrote nothing for %s", paths[i]);
            break;
        }
        st = finish_temp(tmp, paths[i], true, err);
    }
    gvFreeLayout(gvc, g);
    gvFreeContext(gvc);
    agseterrf(old);
    return st;
}

ox_status ox_export_render(const ox_model *m, const ox_export_opts *o,
                           const char *path, ox_export_format fmt,
                           ox_export_stats *stats, ox_error *err)
{
    if (stats)
        memset(stats, 0, sizeof *stats);
    if (!path)
        return ox_errorf(err, OX_EINVAL, "no output path");
    if (fmt == OX_EXPORT_AUTO)
        fmt = ox_export_format_from_path(path);
    if (fmt == OX_EXPORT_AUTO)
        return ox_errorf(err, OX_EINVAL,
                         "%s: unknown output format (use .dot, .svg, .png or .pdf)", path);
    if (fmt == OX_EXPORT_DOT)
        return ox_export_dot(m, o, path, stats, err);
    if (ox_export_format_from_path(path) != fmt)
        return ox_errorf(err, OX_EINVAL, "%s: the extension does not match the format %s",
                         path, gv_format(fmt));
    Agraph_t *g = NULL;
    ox_export_stats local;
    ox_status st = ox_export_build(m, o, &g, &local, err);
    if (st != OX_OK)
        return st;
    if (stats)
        *stats = local;
    int limit = o && o->layout_limit > 0 ? o->layout_limit : OX_EXPORT_LAYOUT_LIMIT;
    if (local.nodes > limit && !(o && o->force)) {
        ox_export_free_graph(g);
        return ox_errorf(err, OX_ERANGE,
                         "the graph has %d nodes (more than %d): laying it out could take "
                         "many minutes. Use --force to lay it out anyway, --around NODE "
                         "--radius R for a neighbourhood, or write .dot text (no layout)",
                         local.nodes, limit);
    }
    const char *paths[1] = {path};
    st = ox_export_render_graph(g, paths, 1, err);
    ox_export_free_graph(g);
    return st;
}
