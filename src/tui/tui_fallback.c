/* Builds without ncursesw: no viewer (the view command prints the
 * summary instead, src/cli/cmd_view.c). */
#include "tui/tui.h"

bool ox_tui_available(void)
{
    return false;
}

int ox_tui_run(ox_tui_opts *opts)
{
    ox_infer_opts_free(&opts->shapes);
    ox_input_opts_free(&opts->inputs);
    return 1;
}

void ox_tui_print_keys(FILE *f)
{
    fprintf(f, "(built without ncursesw: no viewer)\n");
}
