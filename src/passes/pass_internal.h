/* What passes share: the run context (rewrite budget, overrides, fold
 * limit), the pass tables of each family, and small graph helpers that
 * keep graph-output names stable when a node is bypassed. */
#ifndef ONNXSCOPE_PASS_INTERNAL_H
#define ONNXSCOPE_PASS_INTERNAL_H

#include "onnxscope/passes.h"
#include "onnxscope/tensor.h"

struct ox_pass_ctx {
    ox_model *m;
    const ox_infer_opts *io;
    /* The running manager: passes read their options with ox_pm_option. */
    const ox_pass_manager *pm;
    /* The run's target: a fusion whose standard form needs a newer opset
     * than the model's may emit ONNX Runtime's form under ort. */
    ox_pass_target target;
    int64_t fold_limit;
    /* What folding may still add to the model in this manager run, in
     * total (each fold also stays under fold_limit): many small folds
     * cannot add up to a bomb. NULL: no total. */
    int64_t *fold_room;
    int budget;     /* rewrites left in this step; < 0 unlimited */
    int rewrites;   /* rewrites done by the current invocation */
    /* Nodes the pass dropped (ox__pass_drop): detached but still in their
     * graph's node array until ox__pass_flush removes them in one sweep,
     * so k removals cost O(nodes) instead of O(k * nodes). */
    ox_node **dropped;
    int n_dropped, cap_dropped;
    ox_value **stale;  /* values keeping use records of dropped nodes */
    int n_stale, cap_stale;
    /* Constants that lost a reader while their use list still held
     * records of dropped nodes: ox__pass_flush drops those that turn out
     * unread once the records are filtered (ox__pass_drop_const). */
    ox_value **maybe_dead;
    int n_maybe_dead, cap_maybe_dead;
    bool prune;     /* values became garbage: prune them at the flush */
    char *note;     /* ox__pass_note: why a found match was left alone */
    /* quantize_dynamic: its options, and the run's report (NULL: none) to
     * which it appends one entry per weight it quantizes. */
    const struct ox_quant_opts *quant;
    ox_pass_report *rep;
};

/* True while the pass may make another rewrite: budget left, and no edit
 * has run out of memory (m->oom: the IR may be inconsistent, so the pass
 * stops and the manager returns OX_ENOMEM). */
static inline bool ox__pass_may(const ox_pass_ctx *c)
{
    return c->budget != 0 && !c->m->oom;
}
/* Records one rewrite. */
static inline void ox__pass_did(ox_pass_ctx *c)
{
    c->rewrites++;
    if (c->budget > 0)
        c->budget--;
}

/* Sets the pass's note for the report (printf-style; the first note of
 * an invocation wins: one line per pass is enough). */
void ox__pass_note(ox_pass_ctx *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* The manager's pipeline with hooks, for ox_pm_bisect (src/passes/bisect.c):
 * ox__pm_drive runs exactly what ox_pm_run runs, calling after() once per
 * pass invocation (invocations are numbered from 0 over the whole run,
 * rewriting or not); after() returning true, or reaching invocation
 * stop_before (>= 0), stops the run there, with *stopped set (then the
 * model is left as the pipeline had it at that point: no final inference). */
typedef struct ox__pm_hook {
    bool (*after)(void *ctx, ox_model *m, int pass, int round, int invocation, int rewrites);
    int stop_before;    /* < 0: never */
    void *ctx;
} ox__pm_hook;
ox_status ox__pm_drive(ox_pass_manager *pm, ox_model *m, ox_pass_report *rep,
                       const ox__pm_hook *h, bool *stopped, ox_error *err);
/* One invocation of pass i in the middle of a pipeline (no inference
 * before or after, the fold room left as it is), max_rewrites as in
 * ox_pm_step; rep (may be NULL) gets its diff. */
ox_status ox__pm_invoke(ox_pass_manager *pm, ox_model *m, int i, int max_rewrites,
                        ox_pass_report *rep, int *rewrites, ox_error *err);

/* Pass tables of each family, terminated by a zero entry. */
extern const ox_pass ox__passes_cleanup[];
extern const ox_pass ox__passes_fold[];
extern const ox_pass ox__passes_elim[];
extern const ox_pass ox__passes_fuse[];
extern const ox_pass ox__passes_fuse_reshape[];
extern const ox_pass ox__passes_fuse_gemm[];
extern const ox_pass ox__passes_fuse_conv[];
extern const ox_pass ox__passes_fuse_act[];
extern const ox_pass ox__passes_fuse_norm[];
/* fuse_embed.c; listed in fuse_norm.c's table, before fuse_skip_layernorm
 * (which would otherwise take the embedding's LayerNorm). */
ox_status ox__fuse_embed_layernorm(ox_pass_ctx *c, ox_graph *g, ox_error *err);
extern const ox_pass ox__passes_fuse_gelu[];
extern const ox_pass ox__passes_fuse_attn[];
/* to_fp16.c (category precision, opt-in). */
extern const ox_pass ox__passes_to_fp16[];
extern const ox_pass ox__passes_quant[];
/* Frees report entries of quantize_dynamic (quantize.c). */
void ox__quant_entries_free(struct ox_quant_entry *v, int n);
/* opset_convert.c: upgrade_opset (opt-in), first in the pipeline. */
extern const ox_pass ox__passes_opset[];

/* The constant tensor of v when it is a real constant: an initializer that
 * is not also a graph input (those can be overridden at run time). */
const ox_tensor *ox__pass_const(const ox_value *v);
/* Lists a new initializer v of g as a graph input when the model's IR
 * version (< 4) requires it. */
void ox__pass_list_init(ox_graph *g, ox_value *v);
/* The constant as int64 list (any integer dtype, rank <= 1); returns the
 * count or -1 when v is not such a constant. At most cap entries. */
int ox__pass_const_ints(const ox_value *v, int64_t *out, int cap);
/* Static dims of a tensor value; returns rank or -1. */
int ox__pass_static_shape(const ox_value *v, int64_t *dims);
/* Element type of a tensor value, or OX_DT_UNDEFINED. */
ox_dtype ox__pass_elem(const ox_value *v);
/* Consumers of v inside its graph that are real inputs (not subgraph
 * reads), and whether v is read by a subgraph. */
bool ox__pass_read_by_subgraph(const ox_value *v);

/* Removing nodes inside a pass. ox__pass_drop unlinks n at once (inputs,
 * outputs, attributes and subgraphs: nothing reaches it through values any
 * more) and leaves it in place, inert, so indexes do not move and the pass
 * loop simply goes on; loops over g->nodes skip such nodes with
 * ox__pass_gone. ox__pass_drop_value marks a value that has lost its
 * producer and readers for removal. The manager calls ox__pass_flush after
 * each pass on each graph: one sweep removes the nodes and prunes values. */
void ox__pass_drop(ox_pass_ctx *c, ox_node *n);
void ox__pass_drop_value(ox_pass_ctx *c, ox_value *v);
/* ox_node_set_input for passes: when the old input is read by many nodes
 * (a shared weight or constant), its use record of n stays until the flush
 * instead of being searched for in a long use list. */
void ox__pass_set_input(ox_pass_ctx *c, ox_node *n, int i, ox_value *v);
static inline bool ox__pass_gone(const ox_node *n)
{
    return n->n_inputs == 0 && n->n_outputs == 0 && n->n_attrs == 0;
}
void ox__pass_flush(ox_pass_ctx *c, ox_graph *g);
/* v (a constant some dropped or rewired node read) goes when nothing reads
 * it any more and it is neither a graph input nor output: an initializer
 * loses its tensor and is pruned at the flush, the output of a Constant
 * node drops that node. Decided at once when v's use count is exact, else
 * (stale records of dropped readers) at the flush. O(1). */
void ox__pass_drop_const(ox_pass_ctx *c, ox_value *v);
/* Frees the context's lists (after the last flush). */
void ox__pass_ctx_free(ox_pass_ctx *c);

/* Drops node n, whose output `out` is computed equal to `in` (a value
 * visible from n's graph), making every reader of out read in. When out is
 * a graph output its name must survive: then in's producer is made to
 * produce out directly, which needs in to be a node output of the same
 * graph read only by n and not itself a graph output. Returns false (and
 * changes nothing) when that is impossible. Other outputs of n must be
 * unused. */
bool ox__pass_bypass(ox_pass_ctx *c, ox_node *n, ox_value *in, ox_value *out);

/* Makes a new initializer value holding t (takes ownership) in g, named
 * from hint; sets its type. NULL on failure (t freed). */
ox_value *ox__pass_new_init(ox_graph *g, const char *hint, ox_tensor *t);

/* An int64 1-D tensor holding v[0..n). */
ox_tensor *ox__pass_i64_tensor(int n, const int64_t *v);


#endif
