/* Opset conversion: rewrites a model for another version of the default
 * ONNX operator set (7..23, up or down). Operators whose signature changed
 * between the two versions are adapted (an attribute becomes an input or
 * back, a renamed or replaced operator, semantics kept with extra nodes);
 * operators missing at the target are expanded into primitives where the
 * target can express them, and the conversion is refused otherwise.
 * See docs/PASSES.md, "Opset conversion". */
#ifndef ONNXSCOPE_OPSET_H
#define ONNXSCOPE_OPSET_H

#include <stdint.h>

#include "onnxscope/ir.h"
#include "onnxscope/status.h"

/* The opsets the converter reads and writes. */
#define OX_OPSET_MIN 7
#define OX_OPSET_MAX 23

typedef struct ox_opset_report {
    int64_t from, to;       /* default-domain opset before and after */
    int nodes_adapted;      /* nodes whose signature was rewritten in place */
    int nodes_expanded;     /* nodes replaced by other operators */
    int nodes_added;        /* helper nodes added (Flatten, Reshape, ...) */
    int64_t ir_from, ir_to; /* ir_version before and after */
} ox_opset_report;

/* Converts m (in place) to default-domain opset `target`. OX_OK also when
 * the model already has that opset (nothing changes). OX_EUNSUPPORTED when
 * an operator cannot be expressed at the target: the message names the
 * operator, the node and the target opset; m is then partly converted and
 * must be discarded (convert a clone when the original is still needed).
 * OX_EINVAL for a target outside [OX_OPSET_MIN, OX_OPSET_MAX] or a model
 * without a default-domain opset in that range. Graph input and output
 * declarations are kept; the model's opset import and, when needed,
 * ir_version are updated. rep may be NULL. */
ox_status ox_opset_convert(ox_model *m, int64_t target, ox_opset_report *rep, ox_error *err);

#endif
