/* Executor-private: our own kernels that read and write channels-last
 * (NHWC) data of NCHW-shaped rank-4 tensors, so that a value written NHWC
 * by a oneDNN convolution can flow through pooling and a channel Concat to
 * the next convolution without a layout change (docs/EXECUTOR.md,
 * "Layouts"). The tensors keep their NCHW shape; only the byte order
 * differs. Implemented in k_nn/nhwc.c; no oneDNN needed, but only the
 * oneDNN backend writes NHWC values. */
#ifndef ONNXSCOPE_EXEC_NHWC_KERNELS_H
#define ONNXSCOPE_EXEC_NHWC_KERNELS_H

#include <stdbool.h>

#include "onnxscope/exec.h"
#include "onnxscope/ir.h"

typedef enum {
    OX_NHWC_NONE = 0,
    OX_NHWC_POOL,         /* MaxPool (no Indices), AveragePool, 2-D: NHWC in, NHWC out */
    OX_NHWC_GLOBAL_POOL,  /* GlobalAveragePool/GlobalMaxPool: NHWC in, [N,C,1,1] out (plain) */
    OX_NHWC_CONCAT,       /* Concat on axis 1 (or -3): every input NHWC, NHWC out */
} ox_nhwc_kind;

/* Plan time: which channels-last kernel could run node n (its attributes;
 * shapes and types are checked at run time). */
ox_nhwc_kind ox_nhwc_kind_of(const ox_node *n);

/* Runs the node with every input channels-last. Returns false, touching
 * nothing, when it declines the inputs (type, rank): the caller converts
 * them and runs the plain kernel. Otherwise true with *st the outcome. */
bool ox_nhwc_run(ox_nhwc_kind k, ox_kernel_ctx *c, ox_status *st);

/* Test hook: nodes this process ran on these kernels. */
long ox_nhwc_runs(void);

/* ONNXSCOPE_NO_NHWC_OPS=1: the planner keeps NHWC edges to convolutions
 * only (as before these kernels), for comparison. */
bool ox_nhwc_ops_enabled(void);

/* Lazy channel Concat (exec.c plan_lazy_concat, docs/EXECUTOR.md "Lazy
 * channel Concat"): its NHWC parts stay in their own slots and readers take
 * them directly. ox_nhwc_pool_parts runs a planned channels-last pooling
 * node whose input 0 is such a Concat on the parts (each pooled into its
 * channel slice of the output); false, touching nothing, when it declines.
 * ox_nhwc_concat_into writes the concatenation into y (materializing it for
 * a reader that cannot take parts); false when the shapes do not fit. */
bool ox_nhwc_pool_parts(ox_kernel_ctx *c, const ox_tensor *const *parts, int n, ox_status *st);
bool ox_nhwc_concat_into(ox_thread_pool *pool, const ox_tensor *const *parts, int n, ox_tensor *y);
/* Test hooks: Concats left lazy, materialized later, pools run on parts. */
void ox_nhwc_lazy_counts(long *lazy, long *filled, long *pool_parts);
void ox_nhwc_count_lazy(void);

#endif
