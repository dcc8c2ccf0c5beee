/* Times the basic pass pipeline alone (not load or save) on one model and
 * reports peak RSS, for bench/passes_bench.sh:
 *   bench_passes MODEL [--dim SYM=V ...] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "onnxscope/io.h"
#include "onnxscope/passes.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_passes MODEL [--dim SYM=V ...]\n");
        return 2;
    }
    ox_infer_opts io = {0};
    ox_error err = {0};
    for (int i = 2; i + 1 < argc; i += 2)
        if (!strcmp(argv[i], "--dim") && ox_infer_opts_add_dim(&io, argv[i + 1], &err)) {
            fprintf(stderr, "%s\n", err.msg);
            return 2;
        }
    ox_model *m = NULL;
    double t0 = now();
    if (ox_load(argv[1], NULL, &m, &err)) {
        fprintf(stderr, "%s: %s\n", argv[1], err.msg);
        return 3;
    }
    double t1 = now();
    ox_pass_manager *pm = ox_pm_new(OX_LEVEL_BASIC, OX_TARGET_ONNX);
    ox_pm_set_infer_opts(pm, &io);
    ox_pass_report rep = {0};
    ox_status st = ox_pm_run(pm, m, &rep, &err);
    double t2 = now();
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("load_s=%.3f pipeline_s=%.3f nodes=%d->%d rounds=%d peak_rss_kib=%ld%s%s\n", t1 - t0,
           t2 - t1, rep.nodes_before, rep.nodes_after, rep.iterations, ru.ru_maxrss,
           st ? " error: " : "", st ? err.msg : "");
    ox_pass_report_free(&rep);
    ox_pm_free(pm);
    ox_model_free(m);
    ox_infer_opts_free(&io);
    return st ? 1 : 0;
}
