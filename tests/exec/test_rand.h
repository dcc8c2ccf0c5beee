/* Seeded random numbers for the executor fast-path tests (test_dnnl,
 * test_kernel_paths, test_lazy_concat, test_fastpaths, test_pool_fast):
 * a 64-bit LCG, so each test's cases are the same on every machine. Define
 * OX_TEST_SEED before including to give a test its own sequence. Include
 * after <cmocka.h>. */
#ifndef OX_TEST_RAND_H
#define OX_TEST_RAND_H

#include <stdint.h>

#include "onnxscope/ir.h"

#ifndef OX_TEST_SEED
#define OX_TEST_SEED 0x9e3779b97f4a7c15ull
#endif

static uint64_t rng = OX_TEST_SEED;

static inline uint32_t rnd(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng >> 33);
}

static inline int64_t rint_in(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rnd() % (uint32_t)(hi - lo + 1));
}

/* A float tensor of values in [-1, 1] in steps of 1/1000. */
static inline ox_tensor *rand_unit_tensor(int rank, const int64_t *dims)
{
    ox_tensor *t = ox_tensor_new(OX_DT_FLOAT, rank, dims);
    assert_non_null(t);
    float *d = ox_tensor_data(t);
    for (int64_t i = 0; i < t->numel; i++)
        d[i] = (float)((int)(rnd() % 2001) - 1000) / 1000.0f;
    return t;
}

#endif
