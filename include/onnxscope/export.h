/* Graph export: builds a Graphviz graph of a model (libcgraph), writes it as
 * DOT text, or lays it out with `dot` and renders SVG/PNG/PDF (libgvc).
 * Used by `onnxscope dot` and by the TUI's export key. */
#ifndef ONNXSCOPE_EXPORT_H
#define ONNXSCOPE_EXPORT_H

#include <stdbool.h>

#include "onnxscope/ir.h"
#include "onnxscope/status.h"
#include "onnxscope/theme.h"

/* Graphviz's graph type, kept opaque so users of this header need no
 * Graphviz headers (it is `Agraph_t` from <graphviz/cgraph.h>). */
struct Agraph_s;

typedef enum {
    OX_EXPORT_AUTO = 0, /* from the file extension */
    OX_EXPORT_DOT,
    OX_EXPORT_SVG,
    OX_EXPORT_PNG,
    OX_EXPORT_PDF,
} ox_export_format;

/* Above this many DOT nodes, layout (SVG/PNG/PDF) needs opts.force. */
#define OX_EXPORT_LAYOUT_LIMIT 2000

typedef struct ox_export_opts {
    bool show_initializers;   /* weights as small boxes (default false) */
    bool show_shapes;         /* shape+dtype labels on edges (default true) */
    bool show_attrs;          /* key attributes in node labels (default true) */
    const char *rankdir;      /* "TB" (default) or "LR" */
    const ox_theme *theme;    /* NULL: the built-in default */
    /* Neighbourhood view: the node named `around` (or, if it is a number and
     * no node has that name, the node at that index of the main graph) and
     * everything within `radius` producer/consumer steps. NULL: whole graph. */
    const char *around;
    int radius;
    /* Diff view: the model passed to the export is the "before" model, this
     * one the "after" model; see docs/EXPORT.md for the matching rule. */
    const ox_model *diff_after;
    bool force;               /* lay out even above layout_limit */
    int layout_limit;         /* 0: OX_EXPORT_LAYOUT_LIMIT */
} ox_export_opts;

void ox_export_opts_init(ox_export_opts *o);

/* What the built graph holds (counted while building it). */
typedef struct ox_export_stats {
    int nodes;           /* DOT nodes in all */
    int edges;           /* DOT edges in all */
    int op_nodes;        /* one per ONNX node shown (incl. subgraph bodies) */
    int input_nodes;     /* graph inputs that are not initializers */
    int output_nodes;    /* one per graph output entry */
    int init_nodes;      /* initializers shown */
    int clusters;        /* subgraph bodies */
    int body_edges;      /* control-flow node -> its body cluster */
    int added, removed, changed;  /* diff view only */
} ox_export_stats;

/* Builds the Graphviz graph for m. *out is the caller's: free it with
 * ox_export_free_graph. stats may be NULL (zeroed on failure). Errors: OX_EINVAL (bad options,
 * --around names no node), OX_ENOMEM. */
ox_status ox_export_build(const ox_model *m, const ox_export_opts *o,
                          struct Agraph_s **out, ox_export_stats *stats,
                          ox_error *err);
void ox_export_free_graph(struct Agraph_s *g);

/* Writes DOT text for m to path ("-" for stdout). No node limit. */
ox_status ox_export_dot(const ox_model *m, const ox_export_opts *o,
                        const char *path, ox_export_stats *stats, ox_error *err);

/* Lays m out with `dot` and renders it to path in fmt (OX_EXPORT_AUTO: by
 * extension; OX_EXPORT_DOT behaves like ox_export_dot). Above the layout
 * limit without o->force it returns OX_ERANGE with a message suggesting
 * --force, --around or .dot output. The file is written atomically. */
ox_status ox_export_render(const ox_model *m, const ox_export_opts *o,
                           const char *path, ox_export_format fmt,
                           ox_export_stats *stats, ox_error *err);

/* Lays out and renders an already built graph to each of n paths (one
 * layout, several files; formats from the extensions). */
ox_status ox_export_render_graph(struct Agraph_s *g, const char *const *paths,
                                 int n, ox_error *err);

/* Format from a path's extension (.dot/.gv, .svg, .png, .pdf), or
 * OX_EXPORT_AUTO when unknown. */
ox_export_format ox_export_format_from_path(const char *path);

/* "Conv_23" style label shortening used in node labels: keeps the last
 * path components of exporter names such as "/layer1/0/conv1/Conv" and cuts
 * the middle of long names. Writes into buf and returns it. */
const char *ox_export_short_name(const char *name, char *buf, size_t len);

#endif
