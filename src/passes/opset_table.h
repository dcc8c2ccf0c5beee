/* The opset history of the default-domain operators (generated table,
 * src/passes/opset_table.c from tools/gen_opset_table.py): at which opset
 * versions each operator's schema changed, whether a version deprecated it,
 * and the element types its inputs accept per version. The opset converter
 * reads it to know whether an operator exists at the target opset and
 * whether the types a node uses are allowed there. */
#ifndef ONNXSCOPE_PASSES_OPSET_TABLE_H
#define ONNXSCOPE_PASSES_OPSET_TABLE_H

#include <stdint.h>

#define OX__OPSET_MAX_VERSIONS 12
#define OX__OPSET_MAX_INPUTS 10
#define OX__OPSET_MAX_OUTPUTS 6

typedef struct ox__opset_ver {
    int since;               /* opset version of this schema */
    int deprecated;          /* 1: the operator is gone from this version on */
    int n_inputs;            /* formal inputs */
    int variadic;            /* 1: the last formal input repeats */
    /* Bit k: element type k allowed; bit 0: only plain tensors allowed
     * (no sequence, map, optional); 0: not checked. */
    uint32_t in_types[OX__OPSET_MAX_INPUTS];
    int n_outputs, out_variadic;
    uint32_t out_types[OX__OPSET_MAX_OUTPUTS];
    uint32_t required;       /* bit i: formal input i must be present */
    int exact;               /* 1: the formals above are this version's (opsets up
                              * to 17); 0: copied from the version before */
} ox__opset_ver;

typedef struct ox__opset_op {
    const char *name;
    int n_versions;
    ox__opset_ver v[OX__OPSET_MAX_VERSIONS];
} ox__opset_op;

extern const ox__opset_op ox__opset_ops[];
extern const int ox__opset_n_ops;

#endif
