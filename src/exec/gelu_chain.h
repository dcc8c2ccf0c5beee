/* GELU as exported by PyTorch (nn.GELU / F.gelu with approximate='none'):
 *
 *     t = x / c1   (or x * c1)      Div / Mul by a scalar constant
 *     e = Erf(t)
 *     a = e + c2                    Add of a scalar constant
 *     m = x * a                     Mul (either operand order)
 *     y = m * 0.5                   (a separate Mul, left alone)
 *
 * Five passes over memory and five nodes' overhead for one activation. The
 * executor (exec.c, plan_gelu_chains) runs the first four as one pass: the
 * `m` Mul node computes m from x directly (same float operations in the
 * same order, so the values are those of the unfused chain) and the Div,
 * Erf and Add nodes no longer run. Only the chain's intermediate values
 * disappear, so memory planning is unchanged: the Mul reads x, which the
 * plan keeps alive up to that node anyway, and writes its own slot. */
#ifndef ONNXSCOPE_EXEC_GELU_CHAIN_H
#define ONNXSCOPE_EXEC_GELU_CHAIN_H

#include <stdbool.h>

#include "onnxscope/exec.h"
#include "onnxscope/ir.h"

typedef struct ox_gelu_chain {
    const ox_node *first;   /* Div or Mul by c1 */
    const ox_node *erf;
    const ox_node *add;
    const ox_value *x, *c1, *c2;
    bool div;               /* first is x / c1 (else x * c1) */
} ox_gelu_chain;

/* Matches the chain ending at `mul` (a default-domain Mul reading x and a):
 * every intermediate (t, e, a) has exactly one reader, the next node of the
 * chain, and is no graph output; c1 and c2 are values other than x. Graph
 * structure only: the caller checks c1/c2 are constants. */
bool ox_gelu_chain_match(const ox_node *mul, ox_gelu_chain *m);

/* The fused kernel, run in place of `mul` with inputs (x, c1, c2): one pass
 * for float32 x with single-element constants of rank <= x's; anything else
 * (other types, broadcasting constants) runs the four original kernels one
 * after the other, so results never depend on which path ran. */
ox_status ox_gelu_chain_div(ox_kernel_ctx *c);
ox_status ox_gelu_chain_mul(ox_kernel_ctx *c);

#endif
