/* Executor-private: the CUDA backend's plan for one input signature
 * (docs/EXECUTOR.md "CUDA backend"). Plain C, built with or without the
 * toolkit, so placement and the device memory plan are tested anywhere.
 *
 * For the inputs' shapes the main graph is inferred on a clone (as the CPU
 * arena does); then, node by node in file order, a node goes to the GPU
 * when a CUDA kernel takes it as typed (ox_cuda_kind) and every value it
 * reads or writes has a static shape; otherwise it stays on the CPU and
 * the executor copies what it reads from the GPU (and what a GPU node
 * later reads from it). Device memory: one arena laid out by the same
 * ox_memplan the CPU arena uses (graph inputs included: they are uploaded
 * into their slots), weights in buffers of their own, uploaded once. */
#ifndef ONNXSCOPE_EXEC_CUDA_PLACE_H
#define ONNXSCOPE_EXEC_CUDA_PLACE_H

#include <stdbool.h>
#include <stdint.h>

#include "onnxscope/exec.h"
#include "onnxscope/ir.h"

/* The CUDA kernel family running a node (runtime.c dispatches on it). */
typedef enum {
    OX_CK_NONE = 0,  /* CPU */
    OX_CK_K_UNARY, OX_CK_K_BINARY, OX_CK_K_WHERE, OX_CK_K_RESHAPE, OX_CK_K_TRANSPOSE,
    OX_CK_K_CONCAT, OX_CK_K_SLICE, OX_CK_K_SPLIT, OX_CK_K_GATHER, OX_CK_K_EXPAND,
    OX_CK_K_REDUCE, OX_CK_K_SOFTMAX, OX_CK_K_LAYERNORM, OX_CK_K_BATCHNORM, OX_CK_K_MATMUL,
    OX_CK_K_GEMM, OX_CK_K_CONV, OX_CK_K_POOL, OX_CK_K_GLOBALPOOL, OX_CK_K_ATTENTION,
    OX_CK_K_CAST,
    OX_CK_K_FUSED,   /* folded into an earlier GEMM's epilogue: nothing to launch */
    /* contrib.h: com.microsoft ops of the fusion passes, and Sum */
    OX_CK_K_SUM, OX_CK_K_BIASGELU, OX_CK_K_EMBEDLN, OX_CK_K_MHA, OX_CK_K_FUSEDCONV,
    OX_CK_K_FUSEDGEMM, OX_CK_K_MASKOP,
} ox_cuda_kind;

/* GEMM epilogues (docs/EXECUTOR.md "GEMM epilogues"): what a MatMul/Gemm
 * head applies to its product before the single write, in place of the
 * Add (bias) and activation nodes that followed it. GELU_TANH is the tanh
 * approximation (cuBLASLt's GELU); GELU_ERF the exact one (ONNX Gelu's
 * default), which cuBLASLt has not: BIAS epilogue + our GELU kernel. */
typedef enum {
    OX_EP_NONE = 0, OX_EP_BIAS, OX_EP_RELU_BIAS, OX_EP_GELU_TANH_BIAS, OX_EP_GELU_ERF_BIAS,
} ox_cuda_epilogue;

/* What the runtime offers: cuBLAS (MatMul, Gemm, Attention) and cuDNN
 * (Conv) are optional libraries; without them those nodes stay on the CPU. */
typedef struct ox_cuda_caps {
    bool cublas, cudnn;
    /* Requested modes (ox_exec_opts), not libraries: fp16 operands for
     * the GEMM-class nodes; graphs: a CUDA Graph may be captured. */
    bool fp16, graphs;
} ox_cuda_caps;

typedef struct ox_cuda_slot {
    int64_t off;          /* device arena offset; -1: none */
    int64_t nbytes;       /* exact bytes (static shapes only) */
    int first, last;      /* lifetime in node steps (memplan's) */
    ox_dtype dtype;
    int rank;
    int64_t dims[OX_MAX_RANK];
    bool is_static;       /* dtype, rank and dims known */
    bool weight;          /* initializer or constant-derived: own buffer */
    bool init;            /* an initializer (a caller may override it) */
    bool host;            /* available on the host in every run (not GPU-made) */
    bool half;            /* a weight uploaded converted to float16 (fp16 plans) */
    bool pconst;          /* a plan constant (hostshape.h): its value is pval[s],
                           * uploaded once per plan where a GPU node reads it */
    bool fed;             /* made by a CPU node, read by a GPU node (hostshape.h):
                           * a buffer of its own, uploaded every run */
} ox_cuda_slot;

typedef struct ox_cuda_plan {
    int n_nodes;
    unsigned char *kind;     /* per executor node: ox_cuda_kind, NONE = CPU */
    const char **why;        /* per node on the CPU: why (static text) */
    const ox_node **cnode;   /* per node: its node in the inferred clone */
    int n_slots;
    ox_cuda_slot *slot;      /* per executor slot of the main graph */
    int64_t arena_bytes;     /* device arena (the memplan's arena_bytes) */
    int64_t lower_bound;     /* the memplan's lower bound (tests) */
    int nodes_on[2];         /* CPU, GPU */
    int64_t flops_on[2];
    ox_model *clone;         /* the inferred clone (owns cnode's types) */
    int64_t *sig;            /* the inputs' signature it was built for */
    int n_sig;
    uint64_t id;             /* unique per plan built (the runtime's graph key) */
    /* fp16 plans: per node, its GEMM operands are float16 (runtime.c
     * converts activations per run, weights once on upload). */
    unsigned char *half;
    /* GEMM epilogues: per head node its ox_cuda_epilogue, the slot of the
     * bias and the slot it writes (the last fused node's output; the
     * fused nodes are OX_CK_K_FUSED). -1 where none. */
    unsigned char *ep;
    int *ep_bias, *ep_out;
    ox_tensor **ep_bias_host;   /* the bias initializer (the clone's; a private aligned
                                  * copy when the mapped file left it misaligned) */
    /* Attention nodes run by the tiled (flash) kernel. */
    unsigned char *flash;
    int n_half, n_epilogue, n_flash;
    int64_t ep_extra;        /* arena bytes added for epilogue outputs moved to its end */
    int64_t ep_freed;        /* bytes of fused intermediates (no device slot any more) */
    /* A CUDA Graph may capture the GPU nodes: they form one unbroken run
     * in node order (no CPU node between two GPU nodes). Else why not. */
    bool graph_ok;
    const char *graph_why;
    char graph_why_buf[128];   /* graph_why naming the node that rules graphs out */
    /* Shape arithmetic at plan time (hostshape.h): per node, it does not run
     * (its outputs are the plan's values); per slot, that value (owned). */
    unsigned char *pconst;
    ox_tensor **pval;
    int n_pconst;
} ox_cuda_plan;

/* The float16 bits of a float32 (round to nearest even, as the device's
 * conversion), n elements: the fp16 upload conversion. */
void ox_cuda_to_half(const float *x, uint16_t *y, int64_t n);

/* Threshold of the tiled attention kernel: sequence length at least this
 * (ONNXSCOPE_CUDA_FLASH_MIN overrides; default 128) and head size at most
 * 128, a multiple of 4 (the kernel's per-lane slice). */
bool ox_cuda_use_flash(int64_t seq, int64_t head_size);

/* True when these inputs have the signature p was built for (dtypes,
 * shapes, and the values of small integer inputs, as the CPU arena keys). */
bool ox_cuda_plan_matches(const ox_cuda_plan *p, int n_inputs, ox_rval *const *inputs);

/* Builds the plan for these inputs: `nodes` is the executor's order (it
 * must be the file order, else *out = NULL: everything on the CPU),
 * slot_value[s] the value of executor slot s. *out = NULL also when the
 * graph cannot be inferred to static shapes. Errors only for out of
 * memory. */
ox_status ox_cuda_plan_build(const ox_model *m, int n_nodes, const ox_node *const *nodes,
                             int n_slots, const ox_value *const *slot_value, int n_inputs,
                             ox_rval *const *inputs, const ox_cuda_caps *caps,
                             ox_cuda_plan **out, ox_error *err);
void ox_cuda_plan_free(ox_cuda_plan *p);

/* The kernel family for clone node n (static types), or NONE with *why.
 * host_in[i]: input i is available on the host (needed for the inputs a
 * kernel reads as parameters: Slice's starts, Clip's bounds, axes). */
ox_cuda_kind ox_cuda_kind_of(const ox_node *n, int64_t opset, const bool *host_in,
                             const ox_cuda_caps *caps, const char **why);

/* True when a kernel of this kind reads input i on the host (a parameter:
 * a Reshape's shape, Slice's starts, Clip's bounds, axes) or not at all:
 * such an input is never uploaded and needs no device slot. */
bool ox_cuda_input_on_host(ox_cuda_kind kind, int i);

/* Checks the device memory plan: every planned slot fits the arena and no
 * two slots whose lifetimes overlap share bytes. false + err naming them. */
bool ox_cuda_plan_verify(const ox_cuda_plan *p, ox_error *err);

#endif
