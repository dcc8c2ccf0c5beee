/* Colour themes shared by the TUI (ncurses, 8 or 256 colours) and the graph
 * export (DOT hex colours), and the operator categories that both colour by.
 * Themes are plain `key = value` files in themes/ (format in docs/EXPORT.md). */
#ifndef ONNXSCOPE_THEME_H
#define ONNXSCOPE_THEME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "onnxscope/status.h"

/* ---- operator categories ------------------------------------------------ */

/* X(enum suffix, key name used in theme files and reports) */
#define OX_OPCAT_MAP(X)                 \
    X(CONV, "conv")                     \
    X(MATMUL, "matmul")                 \
    X(ACTIVATION, "activation")         \
    X(NORM, "normalization")            \
    X(POOL, "pooling")                  \
    X(ELEMENTWISE, "elementwise")       \
    X(RESHAPE, "reshape")               \
    X(REDUCTION, "reduction")           \
    X(CONTROL, "control")               \
    X(QUANT, "quant")                   \
    X(OTHER, "other")

typedef enum {
#define X(id, name) OX_OPCAT_##id,
    OX_OPCAT_MAP(X)
#undef X
    OX_OPCAT_COUNT
} ox_opcat;

/* Category of an operator by op_type (domain-agnostic, so contrib ops such as
 * FusedConv or QLinearAdd land where a reader expects). Never fails: unknown
 * or NULL op types are OX_OPCAT_OTHER. */
ox_opcat ox_op_category(const char *op_type);
const char *ox_opcat_name(ox_opcat c);   /* "conv", "matmul", ... */

/* ---- colours and styles -------------------------------------------------- */

/* One colour usable everywhere: 24-bit for DOT/true-colour terminals, an
 * xterm-256 index and a basic 8-colour index for ncurses. Whatever the file
 * gave, the other forms are derived (nearest match). */
typedef struct ox_color {
    bool has_rgb;     /* false for `default`: DOT then uses its own default */
    uint32_t rgb;     /* 0xRRGGBB when has_rgb */
    int c256;         /* 0..255, or -1 for the terminal's default colour */
    int c8;           /* 0..7 (COLOR_BLACK..COLOR_WHITE), or -1 (default) */
} ox_color;

enum {
    OX_STYLE_BOLD = 1 << 0,
    OX_STYLE_DIM = 1 << 1,
    OX_STYLE_UNDERLINE = 1 << 2,
    OX_STYLE_REVERSE = 1 << 3,
    OX_STYLE_ITALIC = 1 << 4,
};

typedef struct ox_style {
    ox_color fg, bg;
    unsigned attrs;   /* OX_STYLE_* bits */
} ox_style;

/* Theme slots: UI slots (ui.*) for the TUI, graph slots (graph.*) for the
 * export, and one op.* slot per operator category. For graph and op slots
 * the fg colour is what counts (node fill colour in DOT, text colour in the
 * TUI). X(enum suffix, key in the file) */
#define OX_THEME_SLOT_MAP(X)                          \
    X(UI_NORMAL, "ui.normal")                         \
    X(UI_TITLE, "ui.title")                           \
    X(UI_STATUS, "ui.status")                         \
    X(UI_BORDER, "ui.border")                         \
    X(UI_HEADER, "ui.header")                         \
    X(UI_SELECTED, "ui.selected")                     \
    X(UI_DIM, "ui.dim")                               \
    X(UI_MATCH, "ui.match")                           \
    X(UI_ERROR, "ui.error")                           \
    X(UI_WARNING, "ui.warning")                       \
    X(UI_OK, "ui.ok")                                 \
    X(UI_ADDED, "ui.added")                           \
    X(UI_REMOVED, "ui.removed")                       \
    X(UI_CHANGED, "ui.changed")                       \
    X(UI_HELP, "ui.help")                             \
    X(GRAPH_BACKGROUND, "graph.background")           \
    X(GRAPH_TEXT, "graph.text")                       \
    X(GRAPH_EDGE, "graph.edge")                       \
    X(GRAPH_BORDER, "graph.border")                   \
    X(GRAPH_INPUT, "graph.input")                     \
    X(GRAPH_OUTPUT, "graph.output")                   \
    X(GRAPH_INITIALIZER, "graph.initializer")         \
    X(GRAPH_CLUSTER, "graph.cluster")                 \
    X(GRAPH_ADDED, "graph.added")                     \
    X(GRAPH_REMOVED, "graph.removed")                 \
    X(GRAPH_CHANGED, "graph.changed")                 \
    X(OP_CONV, "op.conv")                             \
    X(OP_MATMUL, "op.matmul")                         \
    X(OP_ACTIVATION, "op.activation")                 \
    X(OP_NORM, "op.normalization")                    \
    X(OP_POOL, "op.pooling")                          \
    X(OP_ELEMENTWISE, "op.elementwise")               \
    X(OP_RESHAPE, "op.reshape")                       \
    X(OP_REDUCTION, "op.reduction")                   \
    X(OP_CONTROL, "op.control")                       \
    X(OP_QUANT, "op.quant")                           \
    X(OP_OTHER, "op.other")

typedef enum {
#define X(id, key) OX_SLOT_##id,
    OX_THEME_SLOT_MAP(X)
#undef X
    OX_SLOT_COUNT
} ox_theme_slot;

typedef struct ox_theme {
    char name[64];
    ox_style slot[OX_SLOT_COUNT];
} ox_theme;

const char *ox_theme_slot_key(ox_theme_slot s);       /* "ui.normal" ... */
/* Slot for a key, or -1 when unknown. */
int ox_theme_slot_from_key(const char *key);
/* The op.* slot for a category / an op_type. */
ox_theme_slot ox_theme_opcat_slot(ox_opcat c);
const ox_style *ox_theme_op_style(const ox_theme *t, const char *op_type);

/* Fills t with the built-in default theme (identical to themes/default.theme). */
void ox_theme_default(ox_theme *t);

/* Parses theme text. Keys absent from the text keep the built-in default.
 * On any error t is reset to the built-in default and err says
 * "<origin>:<line>: <problem>"; returns OX_EPARSE. */
ox_status ox_theme_parse(const char *text, size_t len, const char *origin,
                         ox_theme *t, ox_error *err);
/* Reads and parses a file (OX_EIO when unreadable; t is the default then). */
ox_status ox_theme_load_file(const char *path, ox_theme *t, ox_error *err);
/* Loads a theme by name ("light") or path (contains '/' or ends in ".theme").
 * Names are searched in $ONNXSCOPE_THEMES, ./themes, the source tree and the
 * installed data folder. On failure t holds the default theme and err says
 * why, so callers may warn and carry on. */
ox_status ox_theme_load(const char *name_or_path, ox_theme *t, ox_error *err);

/* Parses one colour: "#rrggbb", "#rgb", a basic name (black, red, green,
 * yellow, blue, magenta, cyan, white, bright-<name>, grey), "default", a
 * number 0..255, or "HEX/TERM" giving the terminal colour explicitly
 * ("#aec7e8/blue", "#aec7e8/75", "#ffffff/default"). */
bool ox_color_parse(const char *s, ox_color *out);
/* "#rrggbb" into buf (8 bytes); NULL for the default colour. */
const char *ox_color_hex(const ox_color *c, char *buf, size_t len);

#endif
