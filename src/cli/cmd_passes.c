/* `onnxscope passes`: the pass catalogue (name, category, target, level,
 * summary) from the registry, as a table or one JSON object. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "onnxscope/passes.h"

int ox_cmd_passes(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {0, 0, 0, 0},
    };
    bool json = false;
    optind = 1;
    int c;
    while ((c = ox_cli_getopt(argc, argv, "passes", "h", longopts)) != -1) {
        if (c == 'j') {
            json = true;
        } else if (c == 'h') {
            printf("usage: onnxscope passes [--json]\n");
            return 0;
        } else {
            return 2;   /* ox_cli_getopt said why */
        }
    }
    if (optind != argc) {
        fprintf(stderr, "usage: onnxscope passes [--json]\n");
        return 2;
    }
    if (json) {
        json_t *arr = json_array();
        for (int i = 0; i < ox_pass_count(); i++) {
            const ox_pass *p = ox_pass_at(i);
            json_t *o = json_object();
            json_object_set_new(o, "name", json_string(p->name));
            json_object_set_new(o, "category", json_string(ox_pass_category_name(p->category)));
            json_object_set_new(o, "target", json_string(ox_pass_target_name(p->target)));
            json_object_set_new(o, "level", json_string(ox_pass_level_name(p->level)));
            json_object_set_new(o, "single_rewrite", json_boolean(p->single_rewrite));
            json_object_set_new(o, "opt_in", json_boolean(p->opt_in));
            json_object_set_new(o, "summary", json_string(p->summary));
            json_array_append_new(arr, o);
        }
        json_t *root = json_object();
        json_object_set_new(root, "passes", arr);
        char *s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        if (s)
            puts(s);
        free(s);
        json_decref(root);
        return 0;
    }
    printf("%-28s %-12s %-6s %-9s %s\n", "NAME", "CATEGORY", "TARGET", "LEVEL", "SUMMARY");
    for (int i = 0; i < ox_pass_count(); i++) {
        const ox_pass *p = ox_pass_at(i);
        printf("%-28s %-12s %-6s %-9s %s\n", p->name, ox_pass_category_name(p->category),
               ox_pass_target_name(p->target), ox_pass_level_name(p->level), p->summary);
    }
    return 0;
}
