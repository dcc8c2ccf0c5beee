/* The interactive terminal UI, as the CLI's view command starts it
 * (src/cli/cmd_view.c parses `onnxscope [OPTIONS] MODEL [MODEL]`, handles
 * the no-terminal fallback, then calls ox_tui_run). The TUI does not call
 * into the CLI. */
#ifndef ONNXSCOPE_TUI_H
#define ONNXSCOPE_TUI_H

#include <stdbool.h>
#include <stdio.h>

#include "onnxscope/infer.h"
#include "onnxscope/device.h"
#include "onnxscope/randinput.h"

typedef struct ox_tui_opts {
    const char *path;          /* the model shown */
    const char *base_path;     /* two models: A, compared with path; NULL for one */
    const char *theme;         /* --theme NAME|FILE, NULL: $ONNXSCOPE_THEME or the default */
    bool ascii, no_color;
    /* --shape/--dim and --input/--fill/--int-max/--default-dim, parsed by
     * the caller; ox_tui_run takes them over (and frees them). */
    ox_infer_opts shapes;
    ox_input_opts inputs;
    /* Called once the terminal is set up, so that handlers installed there
     * (the CLI's temporary-file cleanup) chain to ncurses' own. */
    void (*on_terminal_ready)(void);
    /* --device: the Bench panel's device at start (the caller probed it). */
    ox_device device;
} ox_tui_opts;

/* False in builds without ncursesw (the caller prints the summary). */
bool ox_tui_available(void);
/* Runs the viewer on a terminal; returns the process exit code. */
int ox_tui_run(ox_tui_opts *opts);
/* The key map as a Markdown table (docs/TUI.md embeds it). */
void ox_tui_print_keys(FILE *f);

#endif
