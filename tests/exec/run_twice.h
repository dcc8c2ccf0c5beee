/* Test harness shared by the executor fast-path tests (test_dnnl,
 * test_kernel_paths, test_pool_fast): plan m with `threads`, run it twice
 * (the second run uses the arena, cached primitives and packed weights)
 * and leave the second run's outputs in outs[0..n_out). Fails the test on
 * a planning or run error. Include after <cmocka.h>. */
#ifndef OX_TEST_RUN_TWICE_H
#define OX_TEST_RUN_TWICE_H

#include "onnxscope/exec.h"

static inline void run_twice(ox_model *m, ox_tensor *const *inputs, int n_inputs, int threads,
                             int n_out, ox_rval **outs)
{
    ox_exec_opts o = {.threads = threads};
    ox_exec *e = NULL;
    ox_error err = {0};
    if (ox_exec_new(m, &o, &e, &err))
        fail_msg("plan: %s", err.msg);
    ox_rval *in[8];
    assert_true(n_inputs <= 8);
    for (int i = 0; i < n_inputs; i++)
        in[i] = ox_rval_tensor(ox_tensor_share(inputs[i]));
    ox_status st = OX_OK;
    for (int r = 0; r < 2 && st == OX_OK; r++) {
        for (int i = 0; i < n_out; i++) {
            ox_rval_free(outs[i]);
            outs[i] = NULL;
        }
        st = ox_exec_run(e, n_inputs, in, n_out, outs, &err);
    }
    if (st)
        fail_msg("run: %s", err.msg);
    for (int i = 0; i < n_inputs; i++)
        ox_rval_free(in[i]);
    ox_exec_free(e);
}

#endif
