/* A small pthread pool for data-parallel kernels. Kernels receive it as
 * ctx->pool (NULL means "run serially") and split work with
 * ox_parallel_for; nested calls from inside a worker run serially, so a
 * kernel never has to care who called it. */
#ifndef ONNXSCOPE_THREADPOOL_H
#define ONNXSCOPE_THREADPOOL_H

#include <stdint.h>

#include "onnxscope/status.h"

typedef struct ox_thread_pool ox_thread_pool;

/* fn processes the half-open range [begin, end) of a 0..n iteration
 * space; it may be called concurrently on disjoint ranges. */
typedef void (*ox_parallel_fn)(void *ctx, int64_t begin, int64_t end);

/* A pool with `threads` workers in total (the calling thread counts as one;
 * threads <= 0 means the number of online CPUs). Returns NULL on failure;
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
