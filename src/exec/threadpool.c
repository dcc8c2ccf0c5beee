/* The process's thread policy and the executor's pool (threadpool.h).
 *
 * With OpenMP (the oneDNN build: Debian's oneDNN runs only on an OpenMP
 * team) the pool is a parallel region of that same team, so a oneDNN
 * primitive and one of our loops always run on the same threads: members
 * still spin-waiting after a primitive are the ones that pick up our next
 * loop instead of competing with a second set of threads for the cores.
 * Without OpenMP it is a small pthread pool: persistent workers that pick
 * chunks of one parallel_for at a time from a shared atomic counter. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "onnxscope/threadpool.h"

/* ---- policy ---------------------------------------------------------- */

static int read_int_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int v = -1;
    if (fscanf(f, "%d", &v) != 1)
        v = -1;
    fclose(f);
    return v;
}

static int physical_cores(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    bool have_set = sched_getaffinity(0, sizeof set, &set) == 0;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int fallback = have_set ? CPU_COUNT(&set) : online > 0 ? (int)online : 1;
    if (fallback < 1)
        fallback = 1;
    /* (package, core) pairs seen so far; SMT siblings share one. */
    enum { MAXC = 1024 };
    static int seen_pkg[MAXC], seen_core[MAXC];
    int n = 0;
    for (int cpu = 0; cpu < CPU_SETSIZE && cpu < MAXC; cpu++) {
        if (have_set && !CPU_ISSET(cpu, &set))
            continue;
        if (!have_set && cpu >= fallback)
            break;
        char path[128];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/core_id", cpu);
        int core = read_int_file(path);
        snprintf(path, sizeof path,
                 "/sys/devices/system/cpu/cpu%d/topology/physical_package_id", cpu);
        int pkg = read_int_file(path);
        if (core < 0 || pkg < 0)
            return fallback;   /* no topology (containers, other systems) */
        bool dup = false;
        for (int i = 0; i < n && !dup; i++)
            dup = seen_pkg[i] == pkg && seen_core[i] == core;
        if (!dup) {
            seen_pkg[n] = pkg;
            seen_core[n] = core;
            n++;
        }
    }
    return n > 0 ? n : fallback;
}

static pthread_once_t g_policy_once = PTHREAD_ONCE_INIT;
static int g_default_threads = 1;
static bool g_load_cap;

static void policy_init(void)
{
    g_default_threads = physical_cores();
    /* On unless set to 0: reported by bench whenever it capped a team. */
    const char *s = getenv("ONNXSCOPE_THREADS_LOAD_CAP");
    g_load_cap = !(s && s[0] == '0' && !s[1]);
}

int ox_threads_default(void)
{
    pthread_once(&g_policy_once, policy_init);
    return g_default_threads;
}

bool ox_threads_load_cap(void)
{
    pthread_once(&g_policy_once, policy_init);
    return g_load_cap;
}

const char *ox_threads_backend(void)
{
#ifdef _OPENMP
    return "openmp";
#else
    return "pthread";
#endif
}

/* The load guard: an OpenMP team spin-waits at its barriers, and on an
 * oversubscribed machine a member waiting for a descheduled one burns the
 * time that one needs (PERFORMANCE.md measured 2-thread runs 10-60x slower
 * than 1 thread at load 10-24 on 2 cores). On by default and never silent:
 * every capped team is counted (ox_threads_capped) and bench reports it.
 *
 * It counts the cores OTHER processes keep busy, from CPU accounting: the
 * machine's busy time in /proc/stat minus this process's own CPU time over
 * the last window of at least half a second. The 1-minute load average it
 * used before counts our own threads (a long 2-thread run on 2 cores
 * pushed it to 2 and then capped itself) and sleepers in uninterruptible
 * waits (this VM idles at load 1.0 with both cores free). */
static atomic_llong g_teams, g_capped;
static atomic_int g_min_team;

void ox_threads_capped(long long *teams, long long *capped, int *min_team)
{
    *teams = atomic_load(&g_teams);
    *capped = atomic_load(&g_capped);
    *min_team = atomic_load(&g_min_team);
}

int ox_threads_free_cores(int ncpu, double others)
{
    if (ncpu < 1)
        ncpu = 1;
    if (!(others > 0))   /* also NaN */
        others = 0;
    double f = ncpu - others + 0.5;   /* a core half used by others counts as free */
    return f < 1 ? 1 : f > ncpu ? ncpu : (int)f;
}

/* /proc/stat's first line: busy seconds (user, system, irq, softirq, steal;
 * not nice, whose processes yield to ours, nor idle/iowait). False where
 * there is no /proc/stat. */
static bool read_proc_stat(double *busy_s)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return false;
    unsigned long long v[8] = {0};
    char line[512];
    bool ok = fgets(line, sizeof line, f) && !strncmp(line, "cpu ", 4) &&
              sscanf(line + 4, "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                     &v[3], &v[4], &v[5], &v[6], &v[7]) == 8;
    fclose(f);
    long hz = sysconf(_SC_CLK_TCK);
    if (!ok || hz <= 0)
        return false;
    /* user nice system idle iowait irq softirq steal */
    *busy_s = (double)(v[0] + v[2] + v[5] + v[6] + v[7]) / (double)hz;
    return true;
}

/* The runnable tasks other than the calling thread, from /proc/loadavg's
 * "running/total" field: the median of five reads 0.1 ms apart, so that a
 * kworker's or an exiting process's instant does not count while a busy
 * process, always runnable, does. -1 where unreadable. */
static int others_running(void)
{
    int v[5], n = 0;
    for (int k = 0; k < 5; k++) {
        if (k)
            nanosleep(&(struct timespec){0, 100000}, NULL);
        FILE *f = fopen("/proc/loadavg", "r");
        if (!f)
            return -1;
        double l1, l5, l15;
        int run, total;
        if (fscanf(f, "%lf %lf %lf %d/%d", &l1, &l5, &l15, &run, &total) == 5) {
            int x = run - 1, i = n++;
            for (; i > 0 && v[i - 1] > x; i--)   /* insertion sort */
                v[i] = v[i - 1];
            v[i] = x;
        }
        fclose(f);
    }
    return n ? v[n / 2] : -1;
}

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Free cores now, refreshed at most every half second. Before a first
 * window of 0.1 s exists, the median runnable count (others_running): a
 * single instant's count capped a 20-run SqueezeNet benchmark's first
 * 0.1 s, a third of it, on an idle machine, and counting nothing there ran
 * a 0.06 ms model's whole benchmark on a contended 2-thread team beside one
 * busy process. */
static int free_cores(int want)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static atomic_int cached = 0;
    static double next_check = 0, t0 = -1, busy0, self0;
    if (pthread_mutex_trylock(&lock) != 0) {
        int c = atomic_load(&cached);
        return c > 0 ? c : want;   /* another thread is refreshing it */
    }
    double now = clock_s(CLOCK_MONOTONIC);
    if (now >= next_check) {
        /* The first window closes sooner: until then the runnable count,
         * which also counts niced processes, stands in. */
        next_check = now + (t0 < 0 ? 0.1 : 0.5);
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        int ncpu = n > 0 ? (int)n : want;
        double busy, self = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        int f = want;
        if (read_proc_stat(&busy)) {
            int others;
            if (t0 >= 0 && now - t0 >= 0.1)
                f = ox_threads_free_cores(ncpu, ((busy - busy0) - (self - self0)) / (now - t0));
            else if ((others = others_running()) > 0)
                f = ox_threads_free_cores(ncpu, others);
            t0 = now;
            busy0 = busy;
            self0 = self;
        }
        atomic_store(&cached, f);
    }
    int c = atomic_load(&cached);
    pthread_mutex_unlock(&lock);
    return c > 0 ? c : want;
}

int ox_threads_team(int want)
{
    if (want <= 1)
        return 1;
    atomic_fetch_add(&g_teams, 1);
    if (!ox_threads_load_cap())
        return want;
    int f = free_cores(want);
    if (f >= want)
        return want;
    atomic_fetch_add(&g_capped, 1);
    int m = atomic_load(&g_min_team);
    while ((m == 0 || f < m) && !atomic_compare_exchange_weak(&g_min_team, &m, f))
        ;
    return f;
}

/* ---- pool -------------------------------------------------------------- */

/* Set in workers (and in the submitter while it runs chunks) so nested
 * parallel_for calls degrade to serial loops instead of deadlocking. */
static _Thread_local bool tl_in_pool;

typedef struct job {
    ox_parallel_fn fn;
    void *ctx;
    int64_t n, chunk;
    atomic_llong next;        /* next iteration index to hand out */
} job;

static void run_chunks(job *j)
{
    for (;;) {
        int64_t b = atomic_fetch_add(&j->next, j->chunk);
        if (b >= j->n)
            break;
        int64_t e = b + j->chunk;
        if (e > j->n)
            e = j->n;
        j->fn(j->ctx, b, e);
    }
}

struct ox_thread_pool {
    int size;                 /* threads in total, the caller included */
    pthread_mutex_t submit;   /* one parallel_for at a time */
#ifndef _OPENMP
    int n_workers;            /* threads we started (size - 1) */
    pthread_t *threads;
    pthread_mutex_t lock;     /* guards the fields below and the condvars */
    pthread_cond_t wake;      /* workers wait here for a new generation */
    pthread_cond_t done;      /* the submitter waits here for completion */
    uint64_t generation;
    bool stop;
    job *cur;
    int active;               /* workers still inside the current job */
#endif
};

#ifndef _OPENMP
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
        job *j = p->cur;
        pthread_mutex_unlock(&p->lock);
        run_chunks(j);
        pthread_mutex_lock(&p->lock);
        if (--p->active == 0)
            pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}
#endif

ox_thread_pool *ox_thread_pool_new(int threads)
{
    if (threads <= 0)
        threads = ox_threads_default();
    if (threads > 256)
        threads = 256;
    ox_thread_pool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->size = threads;
    pthread_mutex_init(&p->submit, NULL);
#ifndef _OPENMP
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
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
    p->size = p->n_workers + 1;
#endif
    return p;
}

void ox_thread_pool_free(ox_thread_pool *p)
{
    if (!p)
        return;
#ifndef _OPENMP
    pthread_mutex_lock(&p->lock);
    p->stop = true;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->n_workers; i++)
        pthread_join(p->threads[i], NULL);
    free(p->threads);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
#endif
    pthread_mutex_destroy(&p->submit);
    free(p);
}

int ox_thread_pool_size(const ox_thread_pool *p)
{
    return p ? p->size : 1;
}

void ox_parallel_for(ox_thread_pool *p, int64_t n, int64_t grain,
                     ox_parallel_fn fn, void *ctx)
{
    if (n <= 0 || !fn)
        return;
    if (grain <= 0)
        grain = 1;
    int team = p ? ox_threads_team(p->size) : 1;
    if (team <= 1 || tl_in_pool || n < 2 * grain) {
        fn(ctx, 0, n);
        return;
    }
    /* A few chunks per thread balance uneven work without much overhead. */
    int64_t chunk = (n + (int64_t)team * 4 - 1) / ((int64_t)team * 4);
    if (chunk < grain)
        chunk = grain;
    job j = {.fn = fn, .ctx = ctx, .n = n, .chunk = chunk};
    atomic_init(&j.next, 0);

    pthread_mutex_lock(&p->submit);
#ifdef _OPENMP
#pragma omp parallel num_threads(team)
    {
        tl_in_pool = true;
        run_chunks(&j);
        tl_in_pool = false;
    }
#else
    pthread_mutex_lock(&p->lock);
    p->cur = &j;
    p->active = p->n_workers;
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);

    tl_in_pool = true;
    run_chunks(&j);
    tl_in_pool = false;

    pthread_mutex_lock(&p->lock);
    while (p->active > 0)
        pthread_cond_wait(&p->done, &p->lock);
    pthread_mutex_unlock(&p->lock);
#endif
    pthread_mutex_unlock(&p->submit);
}
