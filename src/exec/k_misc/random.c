/* Random operators: RandomNormal/RandomUniform (and *Like), Bernoulli and
 * Multinomial. Deterministic: each node draws from a mulberry32 stream seeded
 * by its `seed` attribute (or 0), so repeated runs agree. Their backend
 * cases are reported as skipped, since no reference can match a PRNG. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "exec/k_misc/misc.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

typedef struct rng {
    uint32_t s;
} rng;

static double next_unit(rng *r)
{
    uint32_t t = (r->s += 0x6D2B79F5u);
    t = (t ^ (t >> 15)) * (t | 1u);
    t ^= t + (t ^ (t >> 7)) * (t | 61u);
    return (double)(t ^ (t >> 14)) / 4294967296.0;
}

static double next_normal(rng *r)
{
    double u1 = next_unit(r), u2 = next_unit(r);
    if (u1 < 1e-300)
        u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(2 * M_PI * u2);
}

/* `seed` is a float attribute: a value within int64's range seeds as its
 * integer part (seed=5.0 and seed=5.7 draw alike, as before), anything else
 * (NaN, infinities, |seed| >= 2^63, whose conversion is undefined) by its
 * bits. */
static rng seeded(const ox_node *n)
{
    rng r;
    float s = ox_node_attr_f(n, "seed", 0.0f);
    uint32_t u;
    if (s > -9.2e18f && s < 9.2e18f)
        u = (uint32_t)(int64_t)s;
    else
        memcpy(&u, &s, sizeof u);
    r.s = u ^ 0x9E3779B9u;
    return r;
}

static ox_status fill(ox_kernel_ctx *c, bool normal, int rank, const int64_t *dims,
                      ox_dtype dt)
{
    if (!ox_dtype_is_float(dt))
        return ox_errorf(c->err, OX_EINVAL, "dtype must be a float type");
    ox_tensor *y = ox_kernel_output(c, 0, dt, rank, dims);
    if (!y)
        return c->err->status;
    rng r = seeded(c->node);
    double a = ox_node_attr_f(c->node, normal ? "mean" : "low", 0.0f);
    double b = ox_node_attr_f(c->node, normal ? "scale" : "high", 1.0f);
    for (int64_t i = 0; i < y->numel; i++)
        ox_tensor_set_f64(y, i, normal ? a + b * next_normal(&r) : a + (b - a) * next_unit(&r));
    return OX_OK;
}

static ox_status from_attr_shape(ox_kernel_ctx *c, bool normal)
{
    const int64_t *sh;
    int n = ox_node_attr_ints(c->node, "shape", &sh);
    if (n < 0 || n > OX_MAX_RANK)
        return ox_errorf(c->err, OX_EINVAL, "missing or bad shape attribute");
    return fill(c, normal, n, sh, (ox_dtype)ox_node_attr_i(c->node, "dtype", OX_DT_FLOAT));
}

static ox_status like(ox_kernel_ctx *c, bool normal)
{
    const ox_tensor *x = ox_kernel_in(c, 0);
    if (!x)
        return ox_errorf(c->err, OX_EINVAL, "no input");
    ox_dtype dt = (ox_dtype)ox_node_attr_i(c->node, "dtype", x->dtype);
    return fill(c, normal, x->rank, x->dims, dt);
}

ox_status ox_misc_random_normal(ox_kernel_ctx *c) { return from_attr_shape(c, true); }
ox_status ox_misc_random_uniform(ox_kernel_ctx *c) { return from_attr_shape(c, false); }
ox_status ox_misc_random_normal_like(ox_kernel_ctx *c) { return like(c, true); }
ox_status ox_misc_random_uniform_like(ox_kernel_ctx *c) { return like(c, false); }

ox_status ox_misc_bernoulli(ox_kernel_ctx *c)
{
    const ox_tensor *x = ox_kernel_in(c, 0);
    if (!x || !ox_dtype_is_float(x->dtype))
        return ox_errorf(c->err, OX_EINVAL, "probabilities must be a float tensor");
    ox_dtype dt = (ox_dtype)ox_node_attr_i(c->node, "dtype", x->dtype);
    if (!ox_dtype_valid(dt) || dt == OX_DT_STRING || dt == OX_DT_UNDEFINED)
        return ox_errorf(c->err, OX_EINVAL, "bad dtype");
    ox_tensor *y = ox_kernel_output(c, 0, dt, x->rank, x->dims);
    if (!y)
        return c->err->status;
    rng r = seeded(c->node);
    for (int64_t i = 0; i < x->numel; i++)
        ox_tensor_set_f64(y, i, next_unit(&r) < ox_misc_getf(x, i) ? 1.0 : 0.0);
    return OX_OK;
}

ox_status ox_misc_multinomial(ox_kernel_ctx *c)
{
    const ox_tensor *x = ox_kernel_in(c, 0);
    if (!x || x->rank != 2 || !ox_dtype_is_float(x->dtype))
        return ox_errorf(c->err, OX_EINVAL, "input must be float [batch, classes]");
    int64_t k = ox_node_attr_i(c->node, "sample_size", 1);
    ox_dtype dt = (ox_dtype)ox_node_attr_i(c->node, "dtype", OX_DT_INT32);
    if (k < 0 || (dt != OX_DT_INT32 && dt != OX_DT_INT64))
        return ox_errorf(c->err, OX_EINVAL, "bad sample_size or dtype");
    int64_t B = x->dims[0], C = x->dims[1];
    int64_t dims[2] = {B, k};
    ox_tensor *y = ox_kernel_output(c, 0, dt, 2, dims);
    if (!y)
        return c->err->status;
    rng r = seeded(c->node);
    for (int64_t b = 0; b < B; b++) {
        /* the input holds unnormalized log-probabilities */
        double mx = -INFINITY, tot = 0;
        for (int64_t j = 0; j < C; j++)
            mx = fmax(mx, ox_misc_getf(x, b * C + j));
        for (int64_t j = 0; j < C; j++)
            tot += exp(ox_misc_getf(x, b * C + j) - mx);
        for (int64_t s = 0; s < k; s++) {
            double u = next_unit(&r) * tot, acc = 0;
            int64_t pick = C - 1;
            for (int64_t j = 0; j < C; j++) {
                acc += exp(ox_misc_getf(x, b * C + j) - mx);
                if (u < acc) {
                    pick = j;
                    break;
                }
            }
            ox_tensor_set_i64(y, b * k + s, pick);
        }
    }
    return OX_OK;
}
