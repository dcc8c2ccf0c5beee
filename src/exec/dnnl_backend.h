/* Executor-private: the oneDNN (DNNL) backend for the heavy float32 ops
 * (Conv, MatMul, Gemm, com.microsoft FusedConv/FusedGemm), with a fused
 * activation epilogue run as a oneDNN post-op. The whole binding to the
 * library lives in dnnl_backend.c; this header does not mention oneDNN, so
 * a build without it (meson -Ddnnl=disabled, or the library missing) gets
 * stubs and every node runs on our own kernels. docs/EXECUTOR.md. */
#ifndef ONNXSCOPE_EXEC_DNNL_BACKEND_H
#define ONNXSCOPE_EXEC_DNNL_BACKEND_H

#include <stdbool.h>

#include "onnxscope/exec.h"
#include "onnxscope/ir.h"

typedef struct ox_dnnl_node ox_dnnl_node;

/* True when the backend is compiled in and ONNXSCOPE_NO_DNNL is unset (or
 * "0"); read at each call so that one process can test both paths. */
bool ox_dnnl_enabled(void);

/* True when `act` (a node of the default domain) can run as a post-op of
 * a oneDNN primitive: Relu, LeakyRelu, Sigmoid, Tanh, HardSigmoid,
 * HardSwish, Clip with constant (initializer) bounds. */
bool ox_dnnl_act_fusable(const ox_node *act);

/* Plan time: the backend's state for node n (NULL when it does not take
 * the op, its attributes or the activation). `act`, when not NULL, is the
 * single consumer of n's output 0 to fuse as a post-op; the executor then
 * skips it. Bit i of const_in says input i is constant for the plan (an
 * initializer, or a value the executor folded at plan time): such weights
 * are packed on first use (and repacked if a run hands other data). */
ox_dnnl_node *ox_dnnl_plan(const ox_node *n, const ox_node *act, unsigned const_in);

/* Runs the node. Returns false, touching nothing, when the backend
 * declines these inputs (dtype, rank, shape it does not take): the caller
 * runs its own kernel (and the fused activation's). Otherwise true, with
 * *st the outcome (outputs set through ox_kernel_output on OX_OK). */
bool ox_dnnl_run(ox_dnnl_node *d, ox_kernel_ctx *c, ox_status *st, bool in_nhwc,
                 bool *out_nhwc);
/* in_nhwc: input 0 holds its NCHW shape's data channels-last (written by a
 * producer with out_nhwc). *out_nhwc: output 0 was written channels-last.
 * A declined NHWC input is the caller's to convert for its own kernel. */

/* A Conv (no Z input) the backend runs: the executor may let its output
 * stay channels-last when every reader is such a node (reading input 0). */
bool ox_dnnl_conv2d_plain(const ox_dnnl_node *d);
void ox_dnnl_set_out_nhwc(ox_dnnl_node *d, bool on);
/* A Conv or FusedConv (Z included) the backend runs: it may read a
 * channels-last input 0. */
bool ox_dnnl_conv_reader(const ox_dnnl_node *d);

/* Plan-time epilogues beyond ox_dnnl_plan's (cnnfuse; EXECUTOR.md "Fused
 * epilogues at plan time"). `act` as for ox_dnnl_plan; act_in[i], when not
 * NULL, is the plan-constant value of the activation's input i (Clip's
 * min/max made by Constant nodes or folded at plan time), which initializers
 * otherwise give. `sum`: a Conv whose output is added to a value of its own
 * shape (a residual Add/Sum): the run hands that value as input 3 (Z) and
 * the primitive adds it as a `sum` post-op before the activation. */
typedef struct ox_dnnl_epilogue {
    const ox_node *act;
    const ox_tensor *act_in[3];
    bool sum;
} ox_dnnl_epilogue;
bool ox_dnnl_act_fusable_ex(const ox_node *act, const ox_tensor *const *act_in);
ox_dnnl_node *ox_dnnl_plan_ex(const ox_node *n, const ox_dnnl_epilogue *ep, unsigned const_in);
/* ox_dnnl_run with z_nhwc: the Z input (input 3) is channels-last. */
bool ox_dnnl_run_ex(ox_dnnl_node *d, ox_kernel_ctx *c, ox_status *st, bool in_nhwc, bool z_nhwc,
                    bool *out_nhwc);
/* A 2-D-capable Conv the backend runs, Z input or not: it may write its
 * output channels-last (ox_dnnl_set_out_nhwc) and read a channels-last Z. */
bool ox_dnnl_conv_any(const ox_dnnl_node *d);
bool ox_dnnl_has_z(const ox_dnnl_node *d);

/* MatMul only: a constant bias row (float32, shape (N), (1, N), ...) added
 * to the product by the primitive itself: the executor fused the Add that
 * read the MatMul's output (plan_dnnl_bias in exec.c). `bias` is held by the
 * plan and outlives d. Returns false (nothing set) for other nodes. */
bool ox_dnnl_set_bias(ox_dnnl_node *d, const ox_tensor *bias);
void ox_dnnl_free(ox_dnnl_node *d);

/* Lazy channel Concat (exec.c, docs/EXECUTOR.md "Lazy channel Concat"):
 * input 0 of the next Conv this thread runs is the concatenation, never
 * written, of these NHWC parts. A group-1 2-D Conv without Z
 * (ox_dnnl_conv_splittable) is linear in its input channels, so it runs as
 * one primitive per part on the matching slice of its weights, each adding
 * into the output (a `sum` post-op; bias and activation on the last).
 * When that path declines, fill(user) writes the concatenation into input
 * 0 first and the node runs as usual. Cleared by each run. */
typedef ox_status (*ox_dnnl_fill_fn)(void *user);
void ox_dnnl_set_parts(const ox_tensor *const *parts, int n, ox_dnnl_fill_fn fill, void *user);
bool ox_dnnl_conv_splittable(const ox_dnnl_node *d);
/* Test hook: Conv runs on parts. */
long ox_dnnl_parts_runs(void);

/* Test hook: primitives executed by this process, and how many of them
 * carried an activation post-op (zeros without oneDNN). */
void ox_dnnl_counts(long *runs, long *with_act);

/* The library and its version for reports ("oneDNN 2.6.3"), or NULL. */
const char *ox_dnnl_version(void);

/* C = alpha * op(A) op(B) + beta * C (row-major) on oneDNN's SGEMM with a
 * team of `threads`; false (nothing done) when the backend is off
 * (ONNXSCOPE_NO_DNNL, or a build without it): the caller runs its own. */
bool ox_dnnl_sgemm(int threads, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                   const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                   float *C, int64_t ldc);

#endif
