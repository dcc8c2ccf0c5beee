/* The executor's thread pool: persistent workers that pick chunks of one
 * parallel_for at a time from a shared atomic counter. Kept deliberately
 * simple (one job in flight per pool); the speed work of a later issue can
 * replace it behind the same header. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "onnxscope/threadpool.h"

struct ox_thread_pool {
    int n_workers;            /* threads we started (size - 1) */
    pthread_t *threads;
    pthread_mutex_t lock;     /* guards the job fields below and the condvars */
    pthread_cond_t wake;      /* workers wait here for a new generation */
    pthread_cond_t done;      /* the submitter waits here for completion */
    pthread_mutex_t submit;   /* one parallel_for at a time */
    uint64_t generation;
    bool stop;
    /* current job */
    ox_parallel_fn fn;
    void *ctx;
    int64_t n, chunk;
    atomic_llong next;        /* next iteration index to hand out */
    int active;               /* workers still inside the current job */
};

/* Set in worker threads (and in the submitter while it runs chunks) so
 * nested parallel_for calls degrade to serial loops instead of deadlocking. */
static _Thread_local bool tl_in_pool;

static void run_chunks(ox_thread_pool *p)
{
    for (;;) {
        int64_t b = atomic_fetch_add(&p->next, p->chunk);
        if (b >= p->n)
            break;
        int64_t e = b + p->chunk;
        if (e > p->n)
            e = p->n;
        p->fn(p->ctx, b, e);
    }
}

static void *worker_main(void *arg)
{
    ox_thread_pool *p = arg;
    uint64_t seen = 0;
    tl_in_pool = true;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->stop && p->generation == seen)
            pthread_cond_wait(&p->wake, &p->lock);
        if (p->stop)
            break;
        seen = p->generation;
        pthread_mutex_unlock(&p->lock);
        run_chunks(p);
        pthread_mutex_lock(&p->lock);
        if (--p->active == 0)
            pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

ox_thread_pool *ox_thread_pool_new(int threads)
{
    if (threads <= 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        threads = c > 0 ? (int)c : 1;
    }
    if (threads > 256)
        threads = 256;
    ox_thread_pool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    pthread_mutex_init(&p->lock, NULL);
    pthread_mutex_init(&p->submit, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    atomic_init(&p->next, 0);
    if (threads > 1) {
        p->threads = calloc((size_t)threads - 1, sizeof *p->threads);
        if (!p->threads) {
            ox_thread_pool_free(p);
            return NULL;
        }
        for (int i = 0; i < threads - 1; i++) {
            if (pthread_create(&p->threads[i], NULL, worker_main, p) != 0)
                break;
            p->n_workers++;
        }
    }
    return p;
}

void ox_thread_pool_free(ox_thread_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stop = true;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->n_workers; i++)
        pthread_join(p->threads[i], NULL);
    free(p->threads);
    pthread_mutex_destroy(&p->lock);
    pthread_mutex_destroy(&p->submit);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    free(p);
}

int ox_thread_pool_size(const ox_thread_pool *p)
{
    return p ? p->n_workers + 1 : 1;
}

void ox_parallel_for(ox_thread_pool *p, int64_t n, int64_t grain,
                     ox_parallel_fn fn, void *ctx)
{
    if (n <= 0 || !fn)
        return;
    if (grain <= 0)
        grain = 1;
    if (!p || p->n_workers == 0 || tl_in_pool || n < 2 * grain) {
        fn(ctx, 0, n);
        return;
    }
    int64_t size = p->n_workers + 1;
    /* A few chunks per thread balance uneven work without much overhead. */
    int64_t chunk = (n + size * 4 - 1) / (size * 4);
    if (chunk < grain)
        chunk = grain;

    pthread_mutex_lock(&p->submit);
    pthread_mutex_lock(&p->lock);
    p->fn = fn;
    p->ctx = ctx;
    p->n = n;
    p->chunk = chunk;
    atomic_store(&p->next, 0);
    p->active = p->n_workers;
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);

    tl_in_pool = true;
    run_chunks(p);
    tl_in_pool = false;

    pthread_mutex_lock(&p->lock);
    while (p->active > 0)
        pthread_cond_wait(&p->done, &p->lock);
    pthread_mutex_unlock(&p->lock);
    pthread_mutex_unlock(&p->submit);
}
