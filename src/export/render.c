/* Writing the built graph: DOT text through libcgraph's agwrite, and
 * SVG/PNG/PDF through libgvc (layout with `dot`), rendered into memory and
 * written by us. Files go through ox_outfile (temporary name + rename; a
 * device or FIFO written in place), so a failed or interrupted export never
 * leaves half a file behind. */
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

#include "onnxscope/io.h"
#include "onnxscope/outfile.h"

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

static ox_status write_dot(Agraph_t *g, const char *path, ox_error *err)
{
    if (strcmp(path, "-") == 0) {
        if (agwrite(g, stdout) != 0 || fflush(stdout) != 0)
            return ox_errorf(err, OX_EIO, "cannot write DOT to stdout");
        return OX_OK;
    }
    ox_outfile out;
    ox_status st = ox_outfile_open(&out, path, 0, err);
    if (st != OX_OK)
        return st;
    /* agwrite wants a FILE: give it a duplicate so the outfile keeps its
     * own descriptor for commit. */
    int fd = dup(out.fd);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        ox_outfile_abort(&out);
        return ox_errorf(err, OX_EIO, "cannot write %s: %s", path, strerror(e));
    }
    errno = 0;
    bool ok = agwrite(g, f) == 0;
    ok = (fflush(f) == 0) && ok;
    int e = errno;
    ok = (fclose(f) == 0) && ok;
    if (!ok) {
        if (!e)
            e = errno;
        ox_outfile_abort(&out);
        return ox_errorf(err, OX_EIO, "cannot write %s: %s", path, e ? strerror(e) : "write error");
    }
    return ox_outfile_commit(&out, err);
}

/* Renders into memory and writes the bytes ourselves: libgvc writing a
 * file itself calls exit() when a write fails (a full disk), leaving its
 * output half-written and no message. */
static ox_status render_file(GVC_t *gvc, Agraph_t *g, ox_export_format f, const char *path,
                             ox_error *err)
{
    ox_outfile out;
    ox_status st = ox_outfile_open(&out, path, 0, err);
    if (st != OX_OK)
        return st;
    char *data = NULL;
    unsigned int len = 0;
    gv_msg[0] = '\0';
    if (gvRenderData(gvc, g, gv_format(f), &data, &len) != 0) {
        gv_msg_trim();
        if (data)
            gvFreeRenderData(data);
        ox_outfile_abort(&out);
        return ox_errorf(err, OX_EUNSUPPORTED,
                         "Graphviz cannot render %s%s%s (is the %s plugin installed?)", path,
                         gv_msg[0] ? ": " : "", gv_msg, gv_format(f));
    }
    if (!data || len == 0) {
        if (data)
            gvFreeRenderData(data);
        ox_outfile_abort(&out);
        return ox_errorf(err, OX_EUNSUPPORTED, "Graphviz wrote nothing for %s", path);
    }
    st = ox_outfile_write(&out, data, len, err);
    gvFreeRenderData(data);
    if (st != OX_OK) {
        ox_outfile_abort(&out);
        return st;
    }
    return ox_outfile_commit(&out, err);
}

/* An export never replaces a model it draws (a model file named x.svg is
 * still a model) or a file such a model reads. */
static ox_status check_outputs(const ox_model *m, const ox_export_opts *o, const char *path,
                               ox_error *err)
{
    if (strcmp(path, "-") == 0)
        return OX_OK;
    ox_status st = ox_model_check_output(m, path, err);
    if (st == OX_OK && o && o->diff_after)
        st = ox_model_check_output(o->diff_after, path, err);
    return st;
}

ox_status ox_export_dot(const ox_model *m, const ox_export_opts *o,
                        const char *path, ox_export_stats *stats, ox_error *err)
{
    if (stats)
        memset(stats, 0, sizeof *stats);
    if (!path)
        return ox_errorf(err, OX_EINVAL, "no output path");
    ox_status st = check_outputs(m, o, path, err);
    if (st != OX_OK)
        return st;
    Agraph_t *g = NULL;
    st = ox_export_build(m, o, &g, stats, err);
    if (st != OX_OK)
        return st;
    st = write_dot(g, path, err);
    ox_export_free_graph(g);
    return st;
}

/* One Graphviz context for the process, created on first use and never
 * freed. Graphviz 2.42's pango plugin keeps a static pointer to the last
 * font name it measured, and that name belongs to the context: after
 * gvFreeContext, the next layout in the same process (the TUI exporting
 * twice, a test rendering several graphs) read freed memory (ASan,
 * export_views). A context is meant to be reused across layouts anyway. */
static GVC_t *shared_gvc(void)
{
    static GVC_t *gvc;
    if (!gvc)
        gvc = gvContext();
    return gvc;
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
    GVC_t *gvc = shared_gvc();
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
        st = render_file(gvc, g, f, paths[i], err);
    }
    gvFreeLayout(gvc, g);
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
    ox_status st = check_outputs(m, o, path, err);
    if (st != OX_OK)
        return st;
    Agraph_t *g = NULL;
    ox_export_stats local;
    st = ox_export_build(m, o, &g, &local, err);
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
