/* The process's thread policy and the pool data-parallel kernels use.
 * Kernels receive the pool as ctx->pool (NULL means "run serially") and
 * split work with ox_parallel_for; nested calls from inside a worker run
 * serially, so a kernel never has to care who called it.
 *
 * One policy (EXECUTOR.md, "Threads"): `--threads N` (0: the physical
 * cores, ox_threads_default) sizes both this pool and oneDNN's OpenMP team.
 * In a build with OpenMP (the oneDNN build) the pool *is* that OpenMP
 * team, so our loops and oneDNN's primitives run on the same threads and
 * can never oversubscribe the cores; without OpenMP it is a pthread pool. */
#ifndef ONNXSCOPE_THREADPOOL_H
#define ONNXSCOPE_THREADPOOL_H

#include <stdbool.h>
#include <stdint.h>

#include "onnxscope/status.h"

typedef struct ox_thread_pool ox_thread_pool;

/* fn processes the half-open range [begin, end) of a 0..n iteration
 * space; it may be called concurrently on disjoint ranges. */
typedef void (*ox_parallel_fn)(void *ctx, int64_t begin, int64_t end);

/* The default thread count: the physical cores this process may run on
 * (distinct core ids among the CPUs of its affinity mask; SMT siblings
 * count once), or the online CPUs when the topology cannot be read. */
int ox_threads_default(void);

/* The team a parallel region or oneDNN primitive of a pool of `want`
 * threads uses: `want`, unless the load guard (on by default;
 * ONNXSCOPE_THREADS_LOAD_CAP=0 turns it off, read once) caps it by the
 * cores other processes leave free: the machine's busy CPU time minus this
 * process's own, over the last half second or more (read at most twice a
 * second). Never silent: see ox_threads_capped. */
int ox_threads_team(int want);
/* The guard's rule: of ncpu cores, those free when other processes keep
 * `others` cores busy on average (rounded: a core half used counts as free),
 * at least 1 and at most ncpu. */
int ox_threads_free_cores(int ncpu, double others);
/* Whether the load guard is on. */
bool ox_threads_load_cap(void);
/* Since the process started: teams of more than one thread asked for,
 * how many the guard capped, and the smallest team it gave (0: none). */
void ox_threads_capped(long long *teams, long long *capped, int *min_team);
/* "openmp" or "pthread": what backs the pool in this build. */
const char *ox_threads_backend(void);

/* A pool with `threads` workers in total (the calling thread counts as one;
 * threads <= 0 means ox_threads_default()). Returns NULL on failure;
 * callers then simply pass NULL pools around and run serially. */
ox_thread_pool *ox_thread_pool_new(int threads);
void ox_thread_pool_free(ox_thread_pool *p);
/* Workers including the caller; 1 for a NULL pool. */
int ox_thread_pool_size(const ox_thread_pool *p);

/* Runs fn over 0..n in contiguous chunks of at least `grain` iterations
 * (grain <= 0: 1), using the pool's workers and the calling thread, and
 * returns when every chunk is done. With a NULL pool, n below 2*grain, or
 * when called from inside a worker it is a plain fn(ctx, 0, n) call.
 * Calls from different threads on one pool are serialized. */
void ox_parallel_for(ox_thread_pool *p, int64_t n, int64_t grain,
                     ox_parallel_fn fn, void *ctx);

#endif
