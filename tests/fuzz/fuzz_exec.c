/* libFuzzer harness: what `run --random` and `bench` do with a file. Load,
 * infer, draw seeded random inputs (unknown dims 1), then run the main
 * graph on one thread three times: twice with the planned arena (the
 * second run reuses the first run's plan and arena, as bench's timed runs
 * do) and once with every value on the heap. Bounded: the memory ceiling
 * is 32 MiB for inputs and runs alike (ONNXSCOPE_MAX_MEMORY), and each run
 * stops after one second (deadline_ns). Invariants: a failed run says why;
 * when every run succeeds and no node is random, the three runs' outputs
 * are identical (bit for bit, NaN equal to NaN): a kernel reading bytes
 * it never wrote, or a plan that lets two live values share bytes, shows
 * as a difference between the arena runs and the heap run. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "onnxscope/exec.h"
#include "onnxscope/infer.h"
#include "onnxscope/io.h"
#include "onnxscope/randinput.h"

#define RUNS 3

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    oxf_dir();
    setenv("ONNXSCOPE_MAX_MEMORY", "33554432", 1);
    return 0;
}

static void note_random(ox_graph *g, void *ctx)
{
    for (int k = 0; k < g->n_nodes; k++)
        if (ox_node_is_random(g->nodes[k]))
            *(bool *)ctx = true;
}

/* Any random op in the main graph, its subgraphs or a local function. */
static bool model_random(ox_model *m)
{
    bool any = false;
    ox_graph_visit(m->graph, note_random, &any);
    for (int f = 0; f < m->n_functions; f++)
        ox_graph_visit(m->functions[f].body, note_random, &any);
    return any;
}

/* One run on a fresh or a reused executor; outs[] gets the outputs. */
static ox_status run_once(ox_exec *e, int n_in, ox_rval **in, int n_out, ox_rval **outs)
{
    ox_error err = {0};
    ox_status st = ox_exec_run(e, n_in, in, n_out, outs, &err);
    if (st != OX_OK && !err.msg[0])
        oxf_fail("a run failed (status %d) without a message", (int)st);
    return st;
}

static ox_exec *make_exec(ox_model *m, bool no_arena)
{
    ox_exec_opts eo = {.threads = 1, .no_arena = no_arena,
                       .deadline_ns = ox_exec_clock_ns() + 1000000000LL};
    ox_exec *e = NULL;
    ox_error err = {0};
    ox_status st = ox_exec_new(m, &eo, &e, &err);
    if (st != OX_OK && !err.msg[0])
        oxf_fail("the executor was refused (status %d) without a message", (int)st);
    return st == OX_OK ? e : NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ox_model *m = NULL;
    ox_error err = {0};
    if (ox_load_buffer_opts(data, size, oxf_dir(), NULL, &m, &err) != OX_OK)
        return 0;
    ox_graph *g = m->graph;
    if (!g || ox_infer_model(m, NULL, &err) != OX_OK || g->n_outputs < 1) {
        ox_model_free(m);
        return 0;
    }
    int n_in = g->n_inputs, n_out = g->n_outputs;
    ox_rval **in = calloc((size_t)n_in + 1, sizeof *in);
    ox_rval **outs = calloc((size_t)RUNS * n_out, sizeof *outs);
    ox_status st[RUNS] = {OX_EINVAL, OX_EINVAL, OX_EINVAL};
    if (!in || !outs || ox_random_inputs(m, NULL, 1, 100, in, &err) != OX_OK)
        goto done;
    ox_exec *e = make_exec(m, false);
    if (e) {
        st[0] = run_once(e, n_in, in, n_out, outs);
        if (st[0] == OX_OK)
            st[1] = run_once(e, n_in, in, n_out, outs + n_out);
        ox_exec_free(e);
    }
    e = st[0] == OX_OK ? make_exec(m, true) : NULL;
    if (e) {
        st[2] = run_once(e, n_in, in, n_out, outs + 2 * n_out);
        ox_exec_free(e);
    }
    if (st[0] == OX_OK && st[1] == OX_OK && st[2] == OX_OK && !model_random(m)) {
        for (int r = 1; r < RUNS; r++)
            for (int o = 0; o < n_out; o++) {
                const ox_rval *a = outs[o], *b = outs[r * n_out + o];
                char why[256];
                if (!a || !b) {
                    if (a != b)
                        oxf_fail("output %d: present in run 1, not in run %d", o, r + 1);
                    continue;
                }
                if (!ox_rval_allclose(b, a, 0.0, 0.0, why, sizeof why))
                    oxf_fail("output %d: run %d (%s) differs from run 1 (arena): %s", o, r + 1,
                             r == 1 ? "arena, reused plan" : "heap", why);
            }
    }
done:
    for (int i = 0; in && i < n_in; i++)
        ox_rval_free(in[i]);
    for (int i = 0; outs && i < RUNS * n_out; i++)
        ox_rval_free(outs[i]);
    free(in);
    free(outs);
    ox_model_free(m);
    return 0;
}
