/* Requirements of the ONNX spec that the planner checks before anything
 * runs, for nodes whose kernel would otherwise run with a guess where ONNX
 * Runtime and onnx's checker refuse the model (docs/EXECUTOR.md, "Refused
 * when planned"). */
#ifndef ONNXSCOPE_EXEC_PLAN_CHECK_H
#define ONNXSCOPE_EXEC_PLAN_CHECK_H

#include <stdint.h>

#include "onnxscope/ir.h"
#include "onnxscope/status.h"

/* n at its domain's opset: OX_OK, or OX_EMODEL with one line naming the
 * node (label: its name or a stand-in). */
ox_status ox__plan_check_node(const ox_node *n, int64_t opset, const char *label, ox_error *err);

#endif
