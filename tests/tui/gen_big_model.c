/* Writes a large model for the TUI's loading test: a chain of Add nodes,
 * each with its own zero-filled float initializer, e.g. 107,000 x 4 KiB =
 * 438 MB; with SYMBOL the input is [SYMBOL, ELEMS] (costs unknown).
 * Usage: gen_big_model OUT.onnx N_NODES ELEMS_PER_INITIALIZER [SYMBOL] */
#include <stdio.h>
#include <stdlib.h>

#include "onnxscope/io.h"
#include "onnxscope/ir.h"

int main(int argc, char **argv)
{
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: gen_big_model OUT.onnx N_NODES ELEMS [SYMBOL]\n");
        return 2;
    }
    int n = atoi(argv[2]);
    int64_t elems = atoll(argv[3]);
    if (n < 1 || elems < 1) {
        fprintf(stderr, "gen_big_model: N_NODES and ELEMS must be positive\n");
        return 2;
    }
    ox_model *m = ox_model_new();
    if (!m)
        return 1;
    m->ir_version = 8;
    ox_model_set_opset(m, "", 17);
    ox_graph *g = m->graph;
    const char *sym = argc == 5 ? argv[4] : NULL;
    ox_value *prev = ox_graph_value(g, "x");
    int64_t xd[2] = {-1, elems};
    prev->type = sym ? ox_type_new_tensor(OX_DT_FLOAT, 2, xd)
                     : ox_type_new_tensor(OX_DT_FLOAT, 1, &elems);
    if (!prev->type)
        return 1;
    if (sym)
        prev->type->dims[0].param = ox_strdup(sym);
    ox_graph_add_input(g, prev);
    char name[32];
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "w%d", i);
        ox_value *w = ox_graph_value(g, name);
        ox_tensor *t = ox_tensor_new(OX_DT_FLOAT, 1, &elems);
        if (!w || !t || ox_graph_set_initializer(g, w, t) != OX_OK)
            return 1;
        snprintf(name, sizeof name, "h%d", i);
        ox_value *in[2] = {prev, w};
        ox_value *out = ox_graph_value(g, name);
        if (!ox_node_new(g, "Add", "", name, 2, in, 1, &out))
            return 1;
        prev = out;
    }
    prev->type = ox_type_clone(g->inputs[0]->type);
    ox_graph_add_output(g, prev);
    ox_error err = {0};
    if (ox_save(m, argv[1], NULL, &err) != OX_OK) {
        fprintf(stderr, "gen_big_model: %s: %s\n", argv[1], err.msg);
        return 1;
    }
    ox_model_free(m);
    return 0;
}
