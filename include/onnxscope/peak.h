/* This machine's peak single-precision FLOP rate, for `bench`'s "fraction of
 * peak": a short FMA-throughput microbenchmark (about 0.2 s) per thread
 * count, measured once and cached on disk, keyed by CPU model, vector ISA and
 * thread count.
 *
 * Cache file: $XDG_CACHE_HOME/onnxscope/peak.tsv, else ~/.cache/onnxscope/
 * peak.tsv; one line per key: "cpu model<TAB>isa<TAB>threads<TAB>gflops".
 * A missing, unreadable or unwritable cache only means measuring again. */
#ifndef ONNXSCOPE_PEAK_H
#define ONNXSCOPE_PEAK_H

#include <stdbool.h>

typedef struct ox_peak {
    double gflops;         /* > 0 when known */
    int threads;
    int cores;             /* threads measured: min(threads, physical cores) */
    const char *isa;       /* "avx512f", "avx2+fma" or "scalar": the path measured */
    bool from_cache;       /* read from the cache file rather than measured now */
    char cpu[128];         /* CPU model name ("unknown" when /proc/cpuinfo lacks it) */
} ox_peak;

/* The peak for `threads` threads (>= 1), which is that of the physical
 * cores when more threads than cores are asked (out->threads stays the
 * count asked; out->cores says how many were measured): each thread's best
 * chunk is summed, and threads sharing a core each find an undisturbed
 * chunk, so 64 threads on 2 cores summed to 32 cores' peak. recalibrate: measure even when a
 * cached figure exists (and replace it); the environment variable
 * ONNXSCOPE_RECALIBRATE=1 does the same. Returns false only when nothing
 * could be measured (then out->gflops is 0). */
bool ox_peak_get(int threads, bool recalibrate, ox_peak *out);

/* The measurement alone, no cache: threads threads for about seconds each. */
double ox_peak_measure(int threads, double seconds, const char **isa);

#endif
