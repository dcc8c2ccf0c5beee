/* Entry of `onnxscope MODEL` in builds without ncursesw: print the model
 * summary (the `info` command) instead of the interactive viewer. */
#include <stdio.h>

#include "cli/commands.h"
#include "tui/tui.h"

int ox_tui_main(int argc, char **argv)
{
    if (argc != 2)
        return ox_cmd_info(argc, argv); /* prints usage */
    fprintf(stderr, "onnxscope: built without ncursesw: printing the summary\n");
    char *args[3] = {"info", argv[1], NULL};
    return ox_cmd_info(2, args);
}
