/* The Nodes panel's op filter: "Conv,Add" keeps those op types, "!Constant"
 * drops one, and both mix ("Conv,!Relu" keeps Convs). Case-insensitive,
 * spaces around terms ignored. No curses (unit-tested on its own). */
#ifndef ONNXSCOPE_TUI_FILTER_H
#define ONNXSCOPE_TUI_FILTER_H

#include <stdbool.h>

#define TUI_FILTER_MAX 16

typedef struct tui_filter {
    char buf[128];                 /* the terms, NUL-separated */
    const char *keep[TUI_FILTER_MAX];
    int n_keep;
    const char *drop[TUI_FILTER_MAX];
    int n_drop;
} tui_filter;

/* Parses spec (NULL or "" = everything passes). Returns false, with a
 * one-line reason in why, for an empty term ("Conv,,Add", "!") or more than
 * TUI_FILTER_MAX terms; f is then unchanged. */
bool tui_filter_parse(tui_filter *f, const char *spec, char *why, int why_len);
bool tui_filter_active(const tui_filter *f);
bool tui_filter_match(const tui_filter *f, const char *op_type);

#endif
