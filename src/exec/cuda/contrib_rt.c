/* Launches of the fusion passes' com.microsoft ops and Sum on the GPU
 * (contrib.h). Plain C over the launchers of kern.h and contrib_kern.h;
 * built with the toolkit only (the kernels exist only then). Shapes are
 * the plan's (contrib_place.c checked them). */
#ifdef OX_HAVE_CUDA
#include <math.h>
#include <string.h>

#include "contrib.h"
#include "contrib_kern.h"
#include "kern.h"

static int64_t count(const ox_cuda_slot *s)
{
    int64_t n = 1;
    for (int d = 0; d < s->rank; d++)
        n *= s->dims[d];
    return n;
}

/* Element strides of x broadcast (numpy, right-aligned) to rank/dims. */
static void bcast(const ox_cuda_slot *x, int rank, const int64_t *dims, int64_t *str)
{
    int64_t st = 1;
    for (int d = rank - 1; d >= 0; d--) {
        int xd = d - (rank - x->rank);
        if (xd < 0) {
            str[d] = 0;
            continue;
        }
        str[d] = x->dims[xd] == 1 && dims[d] != 1 ? 0 : st;
        st *= x->dims[xd];
    }
}

static int run_sum(const ox_cuda_kargs *a)
{
    const ox_cuda_slot *y = a->os[0];
    int r = y->rank;
    int64_t dims[OX_CK_MAX_RANK], ys[OX_CK_MAX_RANK], s0[OX_CK_MAX_RANK], s1[OX_CK_MAX_RANK];
    int64_t n = count(y);
    if (n == 0)
        return 0;
    /* A rank-0 output: one element of rank 1. */
    int rr = r ? r : 1;
    for (int d = 0; d < r; d++)
        dims[d] = y->dims[d];
    if (!r)
        dims[0] = 1;
    bcast(y, r, dims, ys);
    if (!r)
        ys[0] = 1;
    bcast(a->is[0], r, dims, s0);
    if (!r)
        s0[0] = 1;
    if (a->n_in == 1)
        return ox_ck_copy(a->in[0], a->out[0], 4, rr, dims, 0, s0, 0, ys, n, a->stream);
    bcast(a->is[1], r, dims, s1);
    if (!r)
        s1[0] = 1;
    int rc = ox_ck_binary(OX_CK_ADD, a->in[0], a->in[1], a->out[0], rr, dims, s0, s1, n,
                          a->stream);
    /* Then y += x_i, in place: each output element reads its own. */
    for (int i = 2; !rc && i < a->n_in; i++) {
        bcast(a->is[i], r, dims, s1);
        if (!r)
            s1[0] = 1;
        rc = ox_ck_binary(OX_CK_ADD, a->out[0], a->in[i], a->out[0], rr, dims, ys, s1, n,
                          a->stream);
    }
    return rc;
}

static int run_embed(const ox_cuda_kargs *a)
{
    const ox_cuda_slot *ids = a->is[0], *w = a->is[2], *p = a->is[3];
    int64_t b = ids->dims[0], s = ids->dims[1], h = w->dims[1];
    float *sum = a->n_out > 2 && a->out[2] ? a->out[2] : a->out[0];
    const ox_cuda_slot *pid = a->n_in > 8 ? a->is[8] : NULL;
    const void *seg = a->n_in > 1 ? a->in[1] : NULL;
    const void *pidp = pid ? a->in[8] : NULL;
    int rc = ox_ck_embed_sum(a->in[0], ids->dtype == OX_DT_INT32, seg,
                             seg && a->is[1]->dtype == OX_DT_INT32, pidp,
                             pidp && pid->dtype == OX_DT_INT32, pidp && count(pid) == s && b != 1,
                             a->in[2], w->dims[0], a->in[3], p->dims[0],
                             seg ? a->in[4] : NULL, seg ? a->is[4]->dims[0] : 0, sum, b, s, h,
                             a->stream);
    if (!rc)
        rc = ox_ck_layernorm(sum, NULL, NULL, a->in[5], a->in[6], a->out[0], NULL, b * s, h,
                             ox_node_attr_f(a->n, "epsilon", 1e-12f), 0, a->stream);
    if (!rc && a->n_out > 1 && a->out[1]) {
        const void *mask = a->n_in > 7 ? a->in[7] : NULL;
        rc = ox_ck_mask_count(mask, mask && a->is[7]->dtype == OX_DT_INT32, a->out[1], b, s,
                              a->stream);
    }
    return rc;
}

static int run_mha(const ox_cuda_kargs *a)
{
    const ox_cuda_slot *q = a->is[0], *k = a->is[1], *v = a->is[2];
    int64_t heads = ox_node_attr_i(a->n, "num_heads", 1);
    int64_t hs = q->dims[2] / heads, vs = v->dims[2] / heads;
    float scale = ox_node_attr_f(a->n, "scale", 0.f);
    if (scale == 0.f)
        scale = 1.f / sqrtf((float)hs);
    const ox_cuda_slot *ab = a->n_in > 5 ? a->is[5] : NULL;
    const void *abp = ab ? a->in[5] : NULL;
    return ox_ck_mha(a->in[0], a->in[1], a->in[2], a->n_in > 3 ? a->in[3] : NULL,
                     a->n_in > 4 ? a->in[4] : NULL, abp, abp ? ab->dims[0] : 1,
                     abp ? ab->dims[1] : 1, a->out[0], q->dims[0], heads, q->dims[1],
                     k->dims[1], hs, vs, scale,
                     ox_node_attr_f(a->n, "mask_filter_value", -10000.f),
                     ox_node_attr_i(a->n, "unidirectional", 0) != 0, a->stream);
}

static int run_mask(const ox_cuda_kargs *a)
{
    static const char *const ops[] = {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual",
                                      "And", "Or", "Xor", "Not", "Add", "Sub", "Mul", NULL};
    int op = -1;
    for (int i = 0; ops[i] && op < 0; i++)
        if (!strcmp(a->n->op_type, ops[i]))
            op = i;
    const ox_cuda_slot *y = a->os[0];
    int64_t n = count(y), dims[OX_CK_MAX_RANK], s0[OX_CK_MAX_RANK], s1[OX_CK_MAX_RANK];
    if (n == 0)
        return 0;
    int r = y->rank ? y->rank : 1;
    for (int d = 0; d < y->rank; d++)
        dims[d] = y->dims[d];
    if (!y->rank)
        dims[0] = 1, s0[0] = s1[0] = 0;
    bcast(a->is[0], y->rank, dims, s0);
    if (a->n_in > 1)
        bcast(a->is[1], y->rank, dims, s1);
    return ox_ck_mask_op(op, a->is[0]->dtype, a->in[0], a->n_in > 1 ? a->in[1] : NULL, a->out[0],
                         r, dims, s0, a->n_in > 1 ? s1 : NULL, n, a->stream);
}

int ox_cuda_contrib_launch(const ox_cuda_kargs *a)
{
    switch (a->kind) {
    case OX_CK_K_SUM:
        return run_sum(a);
    case OX_CK_K_BIASGELU: {
        const ox_cuda_slot *x = a->is[0];
        const void *bias = a->n_in > 1 ? a->in[1] : NULL;
        int form = !strcmp(a->n->op_type, "FastGelu")    ? 1
                   : !strcmp(a->n->op_type, "QuickGelu") ? 2
                                                         : 0;
        return ox_ck_bias_gelu(a->in[0], form == 2 ? NULL : bias, a->out[0], count(x),
                               x->rank ? x->dims[x->rank - 1] : 1, form,
                               ox_node_attr_f(a->n, "alpha", 1.702f), a->stream);
    }
    case OX_CK_K_EMBEDLN:
        return run_embed(a);
    case OX_CK_K_MASKOP:
        return run_mask(a);
    case OX_CK_K_MHA:
        return run_mha(a);
    case OX_CK_K_FUSEDCONV:
    case OX_CK_K_FUSEDGEMM: {
        int code;
        float pa, pb;
        int64_t n = count(a->os[0]);
        int rc = 0;
        if (!ox_cuda_fused_act(a->n, &code, &pa, &pb))
            return 1;   /* cudaErrorInvalidValue: the planner checked it */
        const void *z = a->kind == OX_CK_K_FUSEDCONV && a->n_in > 3 ? a->in[3] : NULL;
        if (z) {
            int64_t one = 1;
            rc = ox_ck_binary(OX_CK_ADD, a->out[0], z, a->out[0], 1, &n, &one, &one, n,
                              a->stream);
        }
        if (!rc && code != OX_CK_IDENTITY)
            rc = ox_ck_unary(code, a->out[0], a->out[0], n, pa, pb, a->stream);
        return rc;
    }
    default:
        return 1;
    }
}
#else
typedef int ox_cuda_contrib_rt_unused;   /* ISO C: no empty translation unit */
#endif
