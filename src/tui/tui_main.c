/* Entry of `onnxscope MODEL`. The interactive viewer is not built yet:
 * until it is, print the model summary (the `info` command). */
#include "cli/commands.h"
#include "tui/tui.h"

int ox_tui_main(int argc, char **argv)
{
    if (argc != 2)
        return ox_cmd_info(argc, argv); /* prints usage */
    char *args[3] = {"info", argv[1], NULL};
    return ox_cmd_info(2, args);
}
