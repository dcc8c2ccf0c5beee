/* libFuzzer harness: what `check` and `info` do with a file: load with
 * keep_going, infer shapes reporting every problem, run the checker; then
 * a strict load, inference as `info` runs it, the cost model and the
 * memory plan of the main graph (which must verify). */
#include <stdlib.h>

#include "fuzz_common.h"
#include "onnxscope/check.h"
#include "onnxscope/cost.h"
#include "onnxscope/infer.h"
#include "onnxscope/io.h"
#include "onnxscope/memplan.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    oxf_dir();
    return 0;
}

static void on_problem(void *ctx, const char *msg)
{
    (void)msg;
    (*(int *)ctx)++;
}

static void check_like(const uint8_t *data, size_t size)
{
    ox_load_opts lo = {.keep_going = true};
    ox_model *m = NULL;
    ox_error err = {0};
    if (ox_load_buffer_opts(data, size, oxf_dir(), &lo, &m, &err) != OX_OK)
        return;
    int problems = 0;
    ox_infer_opts io = {.no_value_info = true, .on_problem = on_problem,
                        .problem_ctx = &problems};
    ox_error ierr = {0};
    ox_infer_model(m, &io, &ierr);
    ox_check_report rep;
    ox_status st = ox_check_model(m, &rep);
    if ((st == OX_OK) != (rep.n_errors == 0))
        oxf_fail("check returned %d with %d error(s)", (int)st, rep.n_errors);
    if (rep.n_errors > 0 && rep.issues[0].warning)
        oxf_fail("check listed a warning before its errors");
    ox_check_report_free(&rep);
    ox_model_free(m);
}

static void info_like(const uint8_t *data, size_t size)
{
    ox_model *m = NULL;
    ox_error err = {0};
    if (ox_load_buffer_opts(data, size, oxf_dir(), NULL, &m, &err) != OX_OK)
        return;
    if (ox_infer_model(m, NULL, &err) == OX_OK) {
        ox_model_cost cost = {0};
        ox_model_cost_compute(m, &cost, &err);
        ox_memplan_opts po;
        ox_memplan_opts_default(&po);
        ox_memplan *plan = NULL;
        if (m->graph && ox_memplan_build(m->graph, &po, &plan, &err) == OX_OK) {
            ox_error verr = {0};
            if (!ox_memplan_verify(plan, &verr))
                oxf_fail("memory plan does not verify: %s", verr.msg);
            ox_memplan_free(plan);
        }
    }
    ox_model_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_like(data, size);
    info_like(data, size);
    return 0;
}
