/* Executor-private: the CUDA runtime side of the backend (runtime.c): the
 * device, its stream, cuBLAS/cuDNN handles, the device arena, weights and
 * what lives where during a run. Built as stubs without the toolkit
 * (ox_cuda_rt_new then fails with the probe's reason). */
#ifndef ONNXSCOPE_EXEC_CUDA_RUNTIME_H
#define ONNXSCOPE_EXEC_CUDA_RUNTIME_H

#include "onnxscope/exec.h"
#include "place.h"

typedef struct ox_cuda_rt ox_cuda_rt;

/* Probes the device (OX_EUNSUPPORTED with the reason when none is usable),
 * makes a stream and, when their libraries load, cuBLAS and cuDNN handles.
 * n_slots: the main graph's executor slots (weights are cached by slot). */
ox_status ox_cuda_rt_new(int n_slots, ox_cuda_rt **out, ox_error *err);
void ox_cuda_rt_free(ox_cuda_rt *r);
void ox_cuda_rt_caps(const ox_cuda_rt *r, ox_cuda_caps *caps);
/* The executor's modes (ox_exec_opts): fp16 operands for GEMM-class nodes,
 * and whether a CUDA Graph may be captured (false with per-node timing). */
void ox_cuda_rt_configure(ox_cuda_rt *r, bool fp16, bool graphs);
/* The plan's figures for ox_exec_stats (fp16/epilogue/flash nodes, and
 * the graph note when the plan rules graphs out). */
void ox_cuda_plan_stats(const ox_cuda_plan *p, ox_exec_stats *s);

/* Starts a run with plan p: the device arena is grown to p's size and no
 * activation is on the device yet. */
ox_status ox_cuda_run_begin(ox_cuda_rt *r, const ox_cuda_plan *p, ox_error *err);
/* Runs node k of p on the GPU. in_slot/out_slot: the node's executor
 * slots (-1: omitted); host_in[i]: input i's host value when it has one
 * (uploaded when the device has no copy). Outputs stay on the device. */
ox_status ox_cuda_run_node(ox_cuda_rt *r, const ox_cuda_plan *p, int k, const int *in_slot,
                           const int *out_slot, ox_rval *const *host_in, ox_error *err);
/* True when slot s holds this run's value on the device only (a GPU node
 * made it and no CPU copy was taken yet). */
bool ox_cuda_device_only(const ox_cuda_rt *r, int s);
/* Copies slot s to a new host tensor (*out; through pinned memory). */
ox_status ox_cuda_fetch(ox_cuda_rt *r, const ox_cuda_plan *p, int s, ox_rval **out,
                        ox_error *err);
/* Slot s is dead (its device bytes may be reused). */
void ox_cuda_release(ox_cuda_rt *r, int s);
/* Waits for the work queued so far (per-node timing). */
ox_status ox_cuda_sync(ox_cuda_rt *r, ox_error *err);
/* Waits for the run's work (launching the CUDA Graph when the run
 * replays one, capturing one after the first successful run of a plan
 * that allows it); s gets the copies since run_begin and the graph use. */
ox_status ox_cuda_run_end(ox_cuda_rt *r, ox_exec_stats *s, ox_error *err);

#endif
