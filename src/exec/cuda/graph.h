/* Executor-private: the CUDA Graph bookkeeping of the CUDA backend
 * (graph.c; docs/EXECUTOR.md "CUDA Graphs"), shared by the real runtime
 * and the emulated device, plain C so it is tested on any machine.
 *
 * Per plan: the first run (RECORD) runs eagerly and records a tape of its
 * GPU node calls (slots, and copies of the parameters read on the host);
 * after it succeeded the runtime captures the tape into a graph (the real
 * one re-issues every node on a capturing stream; nothing executes then,
 * so a failed capture loses no work). Later runs (REPLAY) only do the
 * bookkeeping per node (uploads of inputs, residency) and launch the graph
 * once at the first flush (a download, a sync, the run's end). A node that
 * does not match the tape (other parameters) makes the run CATCH UP: the
 * nodes skipped so far are re-issued eagerly and the run goes on eagerly. */
#ifndef ONNXSCOPE_EXEC_CUDA_GRAPH_H
#define ONNXSCOPE_EXEC_CUDA_GRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include "onnxscope/exec.h"
#include "place.h"

typedef struct ox_cuda_tape_ent {
    int k, n_in, n_out;
    int in_slot[16], out_slot[8];
    ox_rval *param[16];   /* inputs read on the host (clones); NULL otherwise */
} ox_cuda_tape_ent;

enum { OX_CG_NONE = 0, OX_CG_READY, OX_CG_FAILED };        /* per plan */
enum { OX_CG_EAGER = 0, OX_CG_RECORD, OX_CG_REPLAY };      /* per run */
enum { OX_CG_RUN = 0, OX_CG_SKIP, OX_CG_CATCHUP };         /* per node */

typedef struct ox_cuda_graphs {
    bool allowed;          /* ox_cuda_rt_configure */
    uint64_t plan_id;      /* plan the tape and state belong to */
    int state;             /* OX_CG_NONE / READY / FAILED */
    int mode;              /* this run */
    int cursor;            /* REPLAY: tape entries seen this run */
    bool launched;         /* REPLAY: the graph was launched this run */
    int used;              /* this run: OX_CUDA_GRAPH_* */
    ox_cuda_tape_ent *tape;
    int n_tape, cap_tape;
    char note[160];        /* why no graph ("" when one was used) */
} ox_cuda_graphs;

void ox_cuda_graphs_free(ox_cuda_graphs *g);
/* Start of a run with plan p. *reset: the previous plan's graph (if any)
 * must be dropped by the caller. */
void ox_cuda_graphs_begin(ox_cuda_graphs *g, const ox_cuda_plan *p, bool *reset);
/* Node k of the run is about to run: OX_CG_RUN (eagerly; recorded in a
 * RECORD run), OX_CG_SKIP (bookkeeping only: the graph does the work), or
 * OX_CG_CATCHUP (re-issue tape entries [0, *n_catchup) eagerly, then run
 * this node eagerly: the run left the graph). */
int ox_cuda_graphs_node(ox_cuda_graphs *g, const ox_cuda_plan *p, int k, const int *in_slot,
                        const int *out_slot, ox_rval *const *host_in, int *n_catchup);
/* A flush point (download, sync, run end): true when the graph must be
 * launched now (REPLAY with every node seen, not launched yet); when a
 * REPLAY run is flushed before its last node, *n_catchup entries must be
 * re-issued eagerly (the run goes on eagerly). */
bool ox_cuda_graphs_flush(ox_cuda_graphs *g, int *n_catchup);
/* After a successful RECORD run: the caller captured (ok) or failed with
 * why. */
void ox_cuda_graphs_captured(ox_cuda_graphs *g, bool ok, const char *why);
/* The run's figures for ox_exec_stats. */
void ox_cuda_graphs_stats(const ox_cuda_graphs *g, ox_exec_stats *s);

#endif
