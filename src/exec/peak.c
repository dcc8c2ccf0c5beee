/* The machine's peak FP32 rate (peak.h): each thread runs chains of independent
 * fused multiply-adds in the widest vector ISA the CPU reports, in short
 * chunks, and keeps its best chunk's rate; the peak is the sum over threads.
 * Best-of-chunks rather than the mean because the machine may be shared: a
 * chunk that ran undisturbed shows what the cores can do. */
#include "onnxscope/peak.h"
#include "onnxscope/threadpool.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define OX_PEAK_X86 1
#endif

/* Independent accumulators per chunk iteration (named variables in the
 * vector paths: an array is not kept in registers at -O2): enough to cover FMA latency
 * (4 cycles) times two FMA ports, and few enough to stay in registers. */
#define NACC 12
#define CHUNK_ITERS 20000

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef double (*chunk_fn)(float seed);   /* returns a value to keep the work alive */

#ifdef OX_PEAK_X86
__attribute__((target("avx512f"))) static double chunk_avx512(float seed)
{
    __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
    __m512 c0 = _mm512_set1_ps(seed), c1 = _mm512_set1_ps(seed + 1), c2 = _mm512_set1_ps(seed + 2),
           c3 = _mm512_set1_ps(seed + 3), c4 = _mm512_set1_ps(seed + 4), c5 = _mm512_set1_ps(seed + 5),
           c6 = _mm512_set1_ps(seed + 6), c7 = _mm512_set1_ps(seed + 7), c8 = _mm512_set1_ps(seed + 8),
           c9 = _mm512_set1_ps(seed + 9), c10 = _mm512_set1_ps(seed + 10), c11 = _mm512_set1_ps(seed + 11);
    for (int i = 0; i < CHUNK_ITERS; i++) {
        c0 = _mm512_fmadd_ps(c0, a, b);
        c1 = _mm512_fmadd_ps(c1, a, b);
        c2 = _mm512_fmadd_ps(c2, a, b);
        c3 = _mm512_fmadd_ps(c3, a, b);
        c4 = _mm512_fmadd_ps(c4, a, b);
        c5 = _mm512_fmadd_ps(c5, a, b);
        c6 = _mm512_fmadd_ps(c6, a, b);
        c7 = _mm512_fmadd_ps(c7, a, b);
        c8 = _mm512_fmadd_ps(c8, a, b);
        c9 = _mm512_fmadd_ps(c9, a, b);
        c10 = _mm512_fmadd_ps(c10, a, b);
        c11 = _mm512_fmadd_ps(c11, a, b);
    }
    __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(_mm512_add_ps(c0, c1), _mm512_add_ps(c2, c3)), _mm512_add_ps(_mm512_add_ps(c4, c5), _mm512_add_ps(c6, c7))),
                  _mm512_add_ps(_mm512_add_ps(c8, c9), _mm512_add_ps(c10, c11)));
    return (double)_mm512_reduce_add_ps(s);
}

__attribute__((target("avx2,fma"))) static double chunk_avx2(float seed)
{
    __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
    __m256 c0 = _mm256_set1_ps(seed), c1 = _mm256_set1_ps(seed + 1), c2 = _mm256_set1_ps(seed + 2),
           c3 = _mm256_set1_ps(seed + 3), c4 = _mm256_set1_ps(seed + 4), c5 = _mm256_set1_ps(seed + 5),
           c6 = _mm256_set1_ps(seed + 6), c7 = _mm256_set1_ps(seed + 7), c8 = _mm256_set1_ps(seed + 8),
           c9 = _mm256_set1_ps(seed + 9), c10 = _mm256_set1_ps(seed + 10), c11 = _mm256_set1_ps(seed + 11);
    for (int i = 0; i < CHUNK_ITERS; i++) {
        c0 = _mm256_fmadd_ps(c0, a, b);
        c1 = _mm256_fmadd_ps(c1, a, b);
        c2 = _mm256_fmadd_ps(c2, a, b);
        c3 = _mm256_fmadd_ps(c3, a, b);
        c4 = _mm256_fmadd_ps(c4, a, b);
        c5 = _mm256_fmadd_ps(c5, a, b);
        c6 = _mm256_fmadd_ps(c6, a, b);
        c7 = _mm256_fmadd_ps(c7, a, b);
        c8 = _mm256_fmadd_ps(c8, a, b);
        c9 = _mm256_fmadd_ps(c9, a, b);
        c10 = _mm256_fmadd_ps(c10, a, b);
        c11 = _mm256_fmadd_ps(c11, a, b);
    }
    __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(_mm256_add_ps(c0, c1), _mm256_add_ps(c2, c3)), _mm256_add_ps(_mm256_add_ps(c4, c5), _mm256_add_ps(c6, c7))),
                  _mm256_add_ps(_mm256_add_ps(c8, c9), _mm256_add_ps(c10, c11)));
    float out[8];
    _mm256_storeu_ps(out, s);
    return (double)out[0] + out[7];
}
#endif

/* Portable path: what the compiler makes of plain multiply-adds. */
static double chunk_scalar(float seed)
{
    float acc[NACC];
    const float a = 0.999999f, b = 1e-7f;
    for (int k = 0; k < NACC; k++)
        acc[k] = seed + (float)k;
    for (int i = 0; i < CHUNK_ITERS; i++)
        for (int k = 0; k < NACC; k++)
            acc[k] = acc[k] * a + b;
    double s = 0;
    for (int k = 0; k < NACC; k++)
        s += acc[k];
    return s;
}

static chunk_fn pick(const char **isa, int *lanes)
{
#ifdef OX_PEAK_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) {
        *isa = "avx512f";
        *lanes = 16;
        return chunk_avx512;
    }
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        *isa = "avx2+fma";
        *lanes = 8;
        return chunk_avx2;
    }
#endif
    *isa = "scalar";
    *lanes = 1;
    return chunk_scalar;
}

typedef struct worker {
    pthread_t tid;
    chunk_fn fn;
    double flops_per_chunk;
    double seconds;
    double best;           /* FLOP/s of the best chunk */
    double sink;
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    double t_end = now_s() + w->seconds;
    for (int n = 0;; n++) {
        double t0 = now_s();
        w->sink += w->fn((float)n * 1e-3f);
        double t1 = now_s();
        if (t1 > t0 && w->flops_per_chunk / (t1 - t0) > w->best)
            w->best = w->flops_per_chunk / (t1 - t0);
        if (t1 >= t_end && n >= 2)
            break;
    }
    return NULL;
}

double ox_peak_measure(int threads, double seconds, const char **isa_out)
{
    const char *isa;
    int lanes;
    chunk_fn fn = pick(&isa, &lanes);
    if (isa_out)
        *isa_out = isa;
    if (threads < 1)
        threads = 1;
    worker *w = calloc((size_t)threads, sizeof *w);
    if (!w)
        return 0;
    /* FMA = 2 FLOPs (the cost model's convention); the scalar path's
     * multiply + add is 2 as well. */
    double fpc = 2.0 * lanes * NACC * (double)CHUNK_ITERS;
    /* No start barrier: thread start-up skew is microseconds against a
     * 0.2 s window, and each thread's figure is its own best chunk. */
    int started = 0;
    for (int i = 0; i < threads; i++) {
        w[i] = (worker){.fn = fn, .flops_per_chunk = fpc, .seconds = seconds};
        if (i == 0)
            continue;   /* the calling thread is worker 0 */
        if (pthread_create(&w[i].tid, NULL, work, &w[i]) != 0)
            break;
        started++;
    }
    work(&w[0]);
    double total = w[0].best;
    for (int i = 1; i <= started; i++) {
        pthread_join(w[i].tid, NULL);
        total += w[i].best;
    }
    free(w);
    if (started != threads - 1)
        return 0;   /* fewer threads than asked: no figure for this count */
    return total / 1e9;
}

/* ---- cache ------------------------------------------------------------- */

static void cpu_model(char *buf, size_t len)
{
    snprintf(buf, len, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0)
            continue;
        char *p = strchr(line, ':');
        if (!p)
            break;
        p++;
        while (*p == ' ' || *p == '\t')
            p++;
        p[strcspn(p, "\r\n")] = 0;
        /* Tabs would break the cache's columns. */
        for (char *q = p; *q; q++)
            if (*q == '\t')
                *q = ' ';
        if (*p)
            snprintf(buf, len, "%s", p);
        break;
    }
    fclose(f);
}

/* The cache directory (created when make) into buf; false when there is
 * neither XDG_CACHE_HOME nor HOME. */
static bool cache_dir(char *buf, size_t len, bool make)
{
    const char *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
    int n;
    if (x && *x == '/')   /* the XDG spec ignores relative paths */
        n = snprintf(buf, len, "%s", x);
    else if (h && *h)
        n = snprintf(buf, len, "%s/.cache", h);
    else
        return false;
    if (n < 0 || (size_t)n >= len)
        return false;
    if (make)
        mkdir(buf, 0700);   /* EEXIST is fine; failures show at fopen */
    size_t l = strlen(buf);
    if (snprintf(buf + l, len - l, "/onnxscope") >= (int)(len - l))
        return false;
    if (make)
        mkdir(buf, 0700);
    return true;
}

static bool cache_read(const char *path, const char *cpu, const char *isa, int threads,
                       double *gflops)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    char line[512];
    bool found = false;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        char *c1 = strchr(line, '\t');
        if (!c1)
            continue;
        *c1++ = 0;
        char *c2 = strchr(c1, '\t');
        if (!c2)
            continue;
        *c2++ = 0;
        int t;
        double g;
        if (strcmp(line, cpu) != 0 || strcmp(c1, isa) != 0 ||
            sscanf(c2, "%d\t%lf", &t, &g) != 2 || t != threads || !(g > 0))
            continue;
        *gflops = g;   /* the last matching line wins */
        found = true;
    }
    fclose(f);
    return found;
}

/* Rewrites the file without the key's old lines plus the new one, through
 * a temporary file and rename so a concurrent reader never sees half. */
static void cache_write(const char *path, const char *cpu, const char *isa, int threads,
                        double gflops)
{
    char tmp[4200];
    if (snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid()) >= (int)sizeof tmp)
        return;
    FILE *out = fopen(tmp, "w");
    if (!out)
        return;
    FILE *in = fopen(path, "r");
    char line[512], copy[512];
    while (in && fgets(line, sizeof line, in)) {
        snprintf(copy, sizeof copy, "%s", line);
        line[strcspn(line, "\r\n")] = 0;
        char *c1 = strchr(line, '\t'), *c2 = c1 ? strchr(c1 + 1, '\t') : NULL;
        int t;
        if (!c1 || !c2)
            continue;   /* drop malformed lines */
        *c1++ = 0;
        *c2++ = 0;
        if (strcmp(line, cpu) == 0 && strcmp(c1, isa) == 0 && sscanf(c2, "%d", &t) == 1 &&
            t == threads)
            continue;
        fputs(copy, out);
    }
    if (in)
        fclose(in);
    fprintf(out, "%s\t%s\t%d\t%.3f\n", cpu, isa, threads, gflops);
    if (fclose(out) != 0 || rename(tmp, path) != 0)
        remove(tmp);
}

bool ox_peak_get(int threads, bool recalibrate, ox_peak *out)
{
    memset(out, 0, sizeof *out);
    if (threads < 1)
        threads = 1;
    out->threads = threads;
    if (threads > ox_threads_default())
        threads = ox_threads_default();
    out->cores = threads;
    cpu_model(out->cpu, sizeof out->cpu);
    int lanes;
    pick(&out->isa, &lanes);
    const char *env = getenv("ONNXSCOPE_RECALIBRATE");
    if (env && *env && strcmp(env, "0") != 0)
        recalibrate = true;
    char dir[4096], path[4200];
    bool have_dir = cache_dir(dir, sizeof dir, false);
    if (have_dir)
        snprintf(path, sizeof path, "%s/peak.tsv", dir);
    if (have_dir && !recalibrate &&
        cache_read(path, out->cpu, out->isa, threads, &out->gflops)) {
        out->from_cache = true;
        return true;
    }
    out->gflops = ox_peak_measure(threads, 0.2, &out->isa);
    if (!(out->gflops > 0)) {
        out->gflops = 0;
        return false;
    }
    if (cache_dir(dir, sizeof dir, true)) {
        snprintf(path, sizeof path, "%s/peak.tsv", dir);
        cache_write(path, out->cpu, out->isa, threads, out->gflops);
    }
    return true;
}
