/* Elementwise groups computed in one pass (issue 14 item 3): a connected
 * set of float elementwise nodes whose intermediate values nothing else
 * reads becomes one loop over blocks of the output, reading each external
 * operand once and writing only the group's result. The executor finds the
 * groups at plan time (plan_ew_fuse in exec.c); this module holds the
 * program of one group and runs it.
 *
 * The fused loop does, per element, the float operations the node kernels
 * do, in the same order and with the same functions (unary.c, binary.c), so
 * its results are bit for bit the unfused ones. It takes operands of the
 * output's shape, scalars, rows (an operand whose dims, leading 1s dropped,
 * are the output's trailing dims: a bias or LayerNorm scale) and columns
 * (the output's leading dims, then 1s: a mean kept with keepdims); any other
 * case at run time (other broadcasts, other dtypes, two row or column
 * lengths) runs the member kernels one after the other instead. */
#ifndef ONNXSCOPE_EXEC_EW_FUSE_H
#define ONNXSCOPE_EXEC_EW_FUSE_H

#include <stdbool.h>

#include "onnxscope/exec.h"
#include "onnxscope/ir.h"

enum { OX_EW_MAX_MEMBERS = 16, OX_EW_MAX_LEAVES = 16 };

/* Whether node n (at opset) is one the fused loop computes: Add, Sub, Mul,
 * Div, Pow (opset >= 7) and Relu, Neg, Abs, Exp, Log, Sqrt, Reciprocal,
 * Tanh, Sigmoid, Erf, default domain, all inputs present, one output. */
bool ox_ew_fusable(const ox_node *n, int64_t opset);

/* One member, in an order where every member comes after those it reads:
 * src[i] >= 0 is leaf src[i] (the fused node's input), src[i] < 0 member
 * -1 - src[i]. The last member is the group's root (its output is the
 * fused node's). */
typedef struct ox_ew_member {
    const ox_node *node;
    ox_kernel_fn fn;     /* the member's own kernel (the fallback) */
    int64_t opset;
    int src[2];
} ox_ew_member;

typedef struct ox_ew_prog ox_ew_prog;

/* NULL when out of memory or when the members are not a valid program. */
ox_ew_prog *ox_ew_prog_new(int n_members, const ox_ew_member *m, int n_leaves);
void ox_ew_prog_free(ox_ew_prog *p);
int ox_ew_prog_members(const ox_ew_prog *p);

/* Runs the group as the root's kernel: c->in[0 .. n_leaves) are the
 * leaves, c->node the root, output 0 the group's result. */
ox_status ox_ew_prog_run(ox_kernel_ctx *c, const ox_ew_prog *p);

/* Group runs that took the member kernels (process-wide count, for tests). */
long ox_ew_slow_runs(void);

#endif
