/* The interactive terminal UI front end. */
#ifndef ONNXSCOPE_TUI_H
#define ONNXSCOPE_TUI_H

/* Runs the TUI for `onnxscope [OPTIONS] MODEL`; returns the exit code. */
int ox_tui_main(int argc, char **argv);

#endif
