/* Executor-private: shape arithmetic evaluated on the host at plan time
 * (hostshape.c; docs/EXECUTOR.md "Shape arithmetic at plan time, graphs for
 * transformers").
 *
 * A CUDA plan is built for one input signature (dtypes, shapes and the
 * values of small integer inputs: ox_arena_input_sig). Every value that
 * depends only on that signature and on constants (Shape, Size, and any
 * deterministic node over such values: the Gather/Unsqueeze/Concat/
 * ConstantOfShape/Range/Expand chains exporters emit for reshapes, position
 * ids and causal masks) is the same in every run of the plan, so it is
 * computed once here, with the CPU kernels, and becomes a constant of the
 * plan: its node does not run (ox_cuda_plan.pconst), a GPU node reading it
 * on the device gets it as a weight uploaded once per plan, and it no
 * longer ties the CPU to the GPU nodes around it (CUDA Graph capture). */
#ifndef ONNXSCOPE_EXEC_CUDA_HOSTSHAPE_H
#define ONNXSCOPE_EXEC_CUDA_HOSTSHAPE_H

#include "onnxscope/exec.h"
#include "core/ptrmap.h"
#include "place.h"

/* Bounds: an output over HOSTSHAPE_MAX_OUT bytes, or a node over
 * HOSTSHAPE_MAX_FLOPS by the cost model, is left to run (such a value is no
 * shape arithmetic); HOSTSHAPE_MAX_TOTAL bounds the values a plan keeps. */
#define HOSTSHAPE_MAX_OUT (1LL << 20)
#define HOSTSHAPE_MAX_TOTAL (32LL << 20)
#define HOSTSHAPE_MAX_FLOPS (1LL << 22)

/* Evaluates the clone g (inferred for these inputs, nodes in executor
 * order) and marks in p: pconst[k] for node k when every output it has is
 * known and it is not constant-derived already (the executor folds those),
 * pval[s] (owned by p) and slot[s].pconst for its output slots. idx maps
 * an executor value to its slot + 1. Out of memory leaves the rest unknown
 * (those nodes then simply run). */
void ox_cuda_plan_hostshape(ox_cuda_plan *p, const ox_graph *g, const ox_node *const *nodes,
                            const ox_ptrmap *idx, int n_inputs, ox_rval *const *inputs);

/* Values a CPU node makes (every run: not plan constants) and a GPU node
 * reads on the device get a buffer of their own outside the arena
 * (slot.fed, uploaded each run before the GPU work that reads them is
 * launched): uploaded into arena bytes, such a value could be overwritten
 * by an earlier GPU node of a CUDA Graph launched after the upload. So a
 * CPU node that reads only host values (CumSum of an attention mask, small
 * integer arithmetic) no longer keeps a graph from being captured. */
void ox_cuda_plan_feed(ox_cuda_plan *p, const ox_node *const *nodes, const ox_ptrmap *idx);

#endif
