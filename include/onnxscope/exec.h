/* The executor: runs a graph on given inputs. Runtime values are tensors,
 * sequences of tensors, optionals or maps (ai.onnx.ml). Kernels sit behind
 * one small interface and are looked up per (domain, op_type, opset) after
 * shape and type inference, by the planner. */
#ifndef ONNXSCOPE_EXEC_H
#define ONNXSCOPE_EXEC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "onnxscope/device.h"
#include "onnxscope/ir.h"
#include "onnxscope/tensor.h"
#include "onnxscope/threadpool.h"

typedef enum {
    OX_RV_TENSOR = 0,
    OX_RV_SEQUENCE,
    OX_RV_OPTIONAL,   /* optional: `items` holds 0 (none) or 1 element */
    OX_RV_MAP,        /* keys tensor in `t`, values sequence/tensor in items[0] */
} ox_rval_kind;

typedef struct ox_rval ox_rval;
struct ox_rval {
    ox_rval_kind kind;
    ox_tensor *t;       /* OX_RV_TENSOR (owned) */
    ox_rval **items;    /* sequence elements / optional payload (owned) */
    int n_items;
    int cap_items;      /* allocated entries (ox_rval_seq_push keeps it) */
    ox_type *elem_type; /* element type of an empty sequence/optional, may be NULL */
};

ox_rval *ox_rval_tensor(ox_tensor *t);   /* takes ownership of t */
ox_rval *ox_rval_sequence(void);
ox_rval *ox_rval_optional_none(const ox_type *elem_type);
ox_status ox_rval_seq_push(ox_rval *seq, ox_rval *item);
ox_rval *ox_rval_clone(const ox_rval *v); /* shares tensor bytes */
void ox_rval_free(ox_rval *v);

/* Compares got with an expected value the way the ONNX backend suite does:
 * same kind, dtype and shape; floating types |got-exp| <= atol + rtol*|exp|
 * with NaN equal to NaN; integers, bools and strings exactly. On mismatch
 * writes a one-line reason (first differing element, count) into why. */
bool ox_rval_allclose(const ox_rval *got, const ox_rval *exp, double rtol,
                      double atol, char *why, size_t why_len);

typedef struct ox_exec ox_exec;

/* What a kernel sees. Inputs are read-only; the kernel creates its outputs
 * with ox_kernel_output (which places them in the planned arena when a slot
 * exists) or by setting out[i] itself for non-tensor outputs. */
typedef struct ox_kernel_ctx {
    const ox_node *node;
    int64_t opset;            /* version of the node's domain in the model */
    int n_in;
    ox_rval *const *in;       /* NULL for omitted optional inputs */
    int n_out;
    ox_rval **out;            /* set by the kernel; NULL for omitted outputs */
    ox_exec *exec;            /* for subgraphs (If/Loop/Scan) and scratch */
    ox_thread_pool *pool;     /* may be NULL: run serially (see threadpool.h) */
    ox_error *err;
    void *priv;               /* executor-private: the running scope */
    int64_t max_output_bytes; /* > 0: refuse larger outputs (constant folding) */
    /* The node's cache slot in the executor's plan, or NULL (one-off calls):
     * a kernel may keep data derived from constant inputs there (packed
     * weights) across runs; the plan frees it with its free function. */
    struct ox_kernel_state **state;
} ox_kernel_ctx;

typedef struct ox_kernel_state {
    void (*free)(struct ox_kernel_state *s);
} ox_kernel_state;

typedef ox_status (*ox_kernel_fn)(ox_kernel_ctx *ctx);

/* Input i as a tensor, or NULL when absent or not a tensor. */
const ox_tensor *ox_kernel_in(const ox_kernel_ctx *c, int i);
/* Allocates output i as a tensor of the given type and shape, zero-filled
 * only if the caller asks (kernels normally write every element). */
ox_tensor *ox_kernel_output(ox_kernel_ctx *c, int i, ox_dtype dt, int rank,
                            const int64_t *dims);
/* Sets output i to an existing tensor (takes ownership). */
void ox_kernel_set_output(ox_kernel_ctx *c, int i, ox_tensor *t);
/* For kernels that loop (Loop, Scan): checks the run's cancel flag, its
 * deadline and its memory ceiling, counting extra_bytes about to be
 * allocated. OX_OK to go on; else the status, with c->err saying why. */
ox_status ox_kernel_poll(ox_kernel_ctx *c, int64_t extra_bytes);

typedef struct ox_kernel_entry {
    const char *domain;      /* "" default, "ai.onnx.ml", "com.microsoft" */
    const char *op_type;
    int since_version;       /* applies from this opset up to the next entry's */
    ox_kernel_fn fn;
} ox_kernel_entry;

/* Kernel families each provide a table terminated by a zero entry; the
 * registry (src/exec/kernels.c) lists them. */
extern const ox_kernel_entry ox_kernels_elementwise[];
extern const ox_kernel_entry ox_kernels_reduce[];
extern const ox_kernel_entry ox_kernels_nn[];
extern const ox_kernel_entry ox_kernels_tensor[];
extern const ox_kernel_entry ox_kernels_control[];
extern const ox_kernel_entry ox_kernels_sequence[];
extern const ox_kernel_entry ox_kernels_misc[];

/* Highest entry with since_version <= opset, or NULL. */
ox_kernel_fn ox_kernel_lookup(const char *domain, const char *op_type, int64_t opset);
const ox_kernel_entry *ox_kernel_find(const char *domain, const char *op_type,
                                      int64_t opset);
/* True when some opset of (domain, op_type) has a kernel. */
bool ox_kernel_exists(const char *domain, const char *op_type);
/* Every registered entry, sorted by domain, op_type, since_version. */
int ox_kernel_count(void);
const ox_kernel_entry *ox_kernel_at(int i);

/* ---- running graphs ------------------------------------------------------ */

typedef struct ox_exec_opts {
    int threads;              /* 0 = the physical cores (threadpool.h) */
    bool keep_intermediates;  /* for debugging/folding: keep every value */
    /* Optional per-node timing hook (`bench --trace`): called after each
     * node of every graph run (subgraphs too) with its start and end on
     * CLOCK_MONOTONIC in ns. NULL (the default) costs nothing. */
    void (*node_hook)(void *user, const ox_node *n, int64_t start_ns, int64_t end_ns);
    void *node_hook_user;
    /* Allocate every activation on the heap instead of the planned arena
     * (docs/EXECUTOR.md); results are identical, for comparisons. */
    bool no_arena;
    /* Ceiling on the tensor memory the process holds during a run (heap
     * outputs, arenas, Loop/Scan accumulation, sequences: see
     * ox_buffer_live_bytes): a run that would exceed it stops with OX_ERANGE
     * naming the node and the bytes. 0 = ox_exec_default_max_memory(),
     * < 0 = no ceiling. */
    int64_t max_memory;
    /* Optional: once non-zero, runs stop between nodes and Loop/Scan
     * iterations with OX_ECANCELLED (the TUI bench's Esc). */
    atomic_int *cancel;
    /* > 0: runs stop with OX_ETIMEDOUT once ox_exec_clock_ns() passes it. */
    int64_t deadline_ns;
    /* OX_DEVICE_CUDA: main-graph nodes with a CUDA kernel run on the GPU,
     * the others on the CPU with the copies they need (docs/EXECUTOR.md
     * "CUDA backend"); ox_exec_new fails with OX_EUNSUPPORTED and the
     * probe's reason when no GPU is usable. */
    ox_device device;
    /* Do not fold constant-input nodes at plan time (EXECUTOR.md, "Plan-time
     * folding"); also ONNXSCOPE_NO_PLAN_FOLD=1. For comparisons. */
    bool no_fold;
    /* --device cuda only (docs/EXECUTOR.md "CUDA backend", "fp16 and CUDA
     * Graphs"): fp16: MatMul/Gemm/Conv/Attention GEMMs take float16
     * operands (weights converted once on upload) with float32 accumulation
     * and float32 activations; no_cuda_graphs: never capture the run in a
     * CUDA Graph (also ONNXSCOPE_CUDA_GRAPHS=0). Ignored on the CPU. */
    bool fp16;
    bool no_cuda_graphs;
} ox_exec_opts;

/* The default memory ceiling: 3/4 of physical memory (8 GiB when unknown);
 * the environment variable ONNXSCOPE_MAX_MEMORY (bytes) overrides it. */
int64_t ox_exec_default_max_memory(void);
/* CLOCK_MONOTONIC in ns, the clock of deadline_ns and of node_hook. */
int64_t ox_exec_clock_ns(void);

/* What the last ox_exec_run did with memory (docs/EXECUTOR.md). */
typedef struct ox_exec_stats {
    bool arena_used;        /* the run placed activations in an arena */
    int64_t arena_bytes;    /* its size: the memory plan's arena_bytes */
    int arena_outputs;      /* node outputs placed in the arena */
    int heap_outputs;       /* node outputs on the heap (no slot, mismatch,
                             * non-tensor, or a kernel's own view) */
    int arena_copies;       /* views of arena bytes copied to the heap
                             * (aliasing rule) */
    int slot_copies;        /* views of arena bytes copied into the view's
                             * own planned slot instead (no allocation;
                             * counted in arena_outputs) */
    int output_copies;      /* graph outputs copied out of the arena */
    int inplace_slots;      /* outputs planned onto their input's bytes */
    int plans_built;        /* signatures planned so far (this executor) */
    int folded_nodes;       /* main-graph nodes computed once at plan time */
    int ew_fused_nodes;     /* main-graph nodes computed inside the one pass of
                             * an elementwise group's root (plan_ew_fuse) */
    int arena_views;        /* view outputs (Reshape...) kept on their own
                             * planned slot, which is their input's bytes */
    int64_t heap_allocs;    /* tensor buffers allocated on the heap while the
                             * run went (process-wide count: ox_buffer_allocs);
                             * 0 in a steady-state arena run of a static model */
    int plan_hits;          /* runs that reused a cached plan */
    /* Placement of the last run's main-graph nodes (index: ox_device) and
     * the cost model's FLOPs of those nodes (0 when unknown). Without a
     * device plan every node counts as CPU. */
    int nodes_on[2];
    int64_t flops_on[2];
    int64_t device_arena_bytes; /* the device memory plan's arena (CUDA) */
    int64_t h2d_copies, d2h_copies; /* transfers of the last run */
    /* CUDA: how the last run used a CUDA Graph (OX_CUDA_GRAPH_*), why not
     * ("" when it was used), and nodes planned with float16 operands, with a
     * GEMM epilogue (bias/activation fused), with the tiled attention. */
    int cuda_graph;
    char cuda_graph_note[160];
    int fp16_nodes, epilogue_nodes, flash_nodes;
    /* CUDA: GPU nodes computing in float16 because the model's tensors are
     * float16 (a to_fp16 model), where fp16_nodes counts --precision fp16's. */
    int float16_nodes;
    /* CUDA: nodes whose values the plan computed on the host for these input
     * shapes (shape arithmetic; they do not run, counted in nodes_on[CPU]). */
    int plan_shape_nodes;
    /* Skip nodes (activations and residual Adds fused into their producer)
     * that had to copy the value into their own slot instead of handing it
     * on (the memory plan gave the two different bytes). */
    int skip_copies;
} ox_exec_stats;

/* ox_exec_stats.cuda_graph */
enum { OX_CUDA_GRAPH_OFF = 0, OX_CUDA_GRAPH_CAPTURED = 1, OX_CUDA_GRAPH_REPLAYED = 2 };

/* Prepares an executor for m's main graph: topological order, a kernel per
 * node (OX_EUNSUPPORTED naming the node when one is missing), value
 * lifetimes. Kernels size outputs from their actual inputs, so inference is
 * not required and any input shape works. m must outlive the executor. */
ox_status ox_exec_new(ox_model *m, const ox_exec_opts *opts, ox_exec **out,
                      ox_error *err);
void ox_exec_free(ox_exec *e);
/* Runs the main graph. inputs are given in graph-input order (initializer
 * inputs may be NULL to use the initializer). outputs receive new values
 * in graph-output order (caller frees each with ox_rval_free). */
ox_status ox_exec_run(ox_exec *e, int n_inputs, ox_rval *const *inputs,
                      int n_outputs, ox_rval **outputs, ox_error *err);
/* Runs a subgraph g with the given input values, resolving outer-scope
 * names through `scope` (used by If/Loop/Scan kernels). */
typedef struct ox_scope ox_scope;
ox_status ox_exec_subgraph(ox_kernel_ctx *c, const ox_graph *g, int n_inputs,
                           ox_rval *const *inputs, int n_outputs,
                           ox_rval **outputs);

/* Memory statistics of the last run (zeros before any run). */
void ox_exec_get_stats(const ox_exec *e, ox_exec_stats *out);

/* The model an executor runs, and its pool (NULL when single-threaded). */
const ox_model *ox_exec_model(const ox_exec *e);
ox_thread_pool *ox_exec_pool(const ox_exec *e);

/* Runs a single node on constant inputs (constant folding). */
ox_status ox_exec_node(const ox_model *m, const ox_node *n, int n_in,
                       ox_rval *const *in, int n_out, ox_rval **out,
                       ox_error *err);
/* The same, refusing (OX_ERANGE) any output tensor over max_output_bytes
 * (> 0) before allocating it: folding never builds what it would reject. */
ox_status ox_exec_node_capped(const ox_model *m, const ox_node *n, int n_in,
                              ox_rval *const *in, int n_out, ox_rval **out,
                              int64_t max_output_bytes, ox_error *err);

#endif
