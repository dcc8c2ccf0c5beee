/* Broadcasting engine and type plumbing for the elementwise kernels.
 * Shapes are collapsed once per call into (outer dims, one inner run) so that
 * the per-element work is a tight loop the compiler can vectorize. */
#include <stdlib.h>
#include <string.h>

#include "exec/k_elementwise/ew.h"
#include "onnxscope/threadpool.h"

bool ox__bcast_shape(int k, const ox_tensor *const *ts, int *rank,
                     int64_t *dims)
{
    int r = 0;
    for (int j = 0; j < k; j++)
        if (ts[j] && ts[j]->rank > r)
            r = ts[j]->rank;
    if (r > OX_MAX_RANK)
        return false;
    for (int d = 0; d < r; d++) {
        int64_t v = 1;
        bool seen = false;
        for (int j = 0; j < k; j++) {
            if (!ts[j])
                continue;
            int off = r - ts[j]->rank;
            if (d < off)
                continue;
            int64_t e = ts[j]->dims[d - off];
            if (e == 1)
                continue;
            if (!seen || v == 1) {
                v = e;
                seen = true;
            } else if (v != e) {
                return false;
            }
        }
        dims[d] = v;
    }
    *rank = r;
    return true;
}

/* A collapsed broadcast: r dims of sizes cd, element strides st per
 * operand; the last dim is the inner run. */
typedef struct bplan {
    int r, nops;
    int64_t cd[OX_MAX_RANK];
    int64_t st[OX__EW_MAX_OPS][OX_MAX_RANK];
    char *base[OX__EW_MAX_OPS];
    size_t esz[OX__EW_MAX_OPS];
    ox__ew_inner_fn fn;
    void *ud;
} bplan;

/* Runs outer iterations [ob, oe) (r >= 2). */
static void bplan_outer(const bplan *b, int64_t ob, int64_t oe)
{
    int r = b->r, nops = b->nops;
    int64_t idx[OX_MAX_RANK];
    char *p[OX__EW_MAX_OPS];
    int64_t s[OX__EW_MAX_OPS];
    int64_t rem = ob;
    for (int j = 0; j < nops; j++) {
        p[j] = b->base[j];
        s[j] = b->st[j][r - 1];
    }
    for (int d = r - 2; d >= 0; d--) {
        idx[d] = rem % b->cd[d];
        rem /= b->cd[d];
        for (int j = 0; j < nops; j++)
            p[j] += idx[d] * b->st[j][d] * (int64_t)b->esz[j];
    }
    int64_t n = b->cd[r - 1];
    for (int64_t o = ob; o < oe; o++) {
        b->fn(n, p, s, b->ud);
        for (int d = r - 2; d >= 0; d--) {
            idx[d]++;
            for (int j = 0; j < nops; j++)
                p[j] += b->st[j][d] * (int64_t)b->esz[j];
            if (idx[d] < b->cd[d])
                break;
            idx[d] = 0;
            for (int j = 0; j < nops; j++)
                p[j] -= b->st[j][d] * (int64_t)b->esz[j] * b->cd[d];
        }
    }
}

/* Runs elements [ib, ie) of a single inner run (r == 1). */
static void bplan_inner(const bplan *b, int64_t ib, int64_t ie)
{
    char *p[OX__EW_MAX_OPS];
    int64_t s[OX__EW_MAX_OPS];
    for (int j = 0; j < b->nops; j++) {
        s[j] = b->st[j][0];
        p[j] = b->base[j] + ib * s[j] * (int64_t)b->esz[j];
    }
    b->fn(ie - ib, p, s, b->ud);
}

static void par_outer(void *ctx, int64_t b, int64_t e) { bplan_outer(ctx, b, e); }
static void par_inner(void *ctx, int64_t b, int64_t e) { bplan_inner(ctx, b, e); }

void ox__bcast_run(int rank, const int64_t *dims, int k, const int *in_rank,
                   const int64_t *const *in_dims, void *const *ptr,
                   const size_t *esz, ox__ew_inner_fn fn, void *ud,
                   ox_thread_pool *pool)
{
    int nops = k + 1;
    bplan b;
    int r = 0;
    if (nops > OX__EW_MAX_OPS || rank > OX_MAX_RANK)
        return;
    for (int d = 0; d < rank; d++)
        if (dims[d] == 0)
            return;

    /* element strides per operand over the output dims */
    int64_t full[OX__EW_MAX_OPS][OX_MAX_RANK];
    for (int j = 0; j < nops; j++) {
        int ir = j == 0 ? rank : in_rank[j - 1];
        const int64_t *id = j == 0 ? dims : in_dims[j - 1];
        int off = rank - ir;
        int64_t acc = 1;
        for (int d = rank - 1; d >= 0; d--) {
            if (d < off) {
                full[j][d] = 0;
                continue;
            }
            int64_t e = id[d - off];
            full[j][d] = (e == 1 && dims[d] != 1) ? 0 : acc;
            acc *= e;
        }
    }
    /* drop size-1 dims, then merge neighbours that stay contiguous for
     * every operand */
    for (int d = 0; d < rank; d++) {
        if (dims[d] == 1)
            continue;
        if (r > 0) {
            bool merge = true;
            for (int j = 0; j < nops; j++)
                if (b.st[j][r - 1] != full[j][d] * dims[d]) {
                    merge = false;
                    break;
                }
            if (merge) {
                b.cd[r - 1] *= dims[d];
                for (int j = 0; j < nops; j++)
                    b.st[j][r - 1] = full[j][d];
                continue;
            }
        }
        b.cd[r] = dims[d];
        for (int j = 0; j < nops; j++)
            b.st[j][r] = full[j][d];
        r++;
    }
    if (r == 0) {
        b.cd[0] = 1;
        for (int j = 0; j < nops; j++)
            b.st[j][0] = 1;
        r = 1;
    }
    b.r = r;
    b.nops = nops;
    b.fn = fn;
    b.ud = ud;
    for (int j = 0; j < nops; j++) {
        b.base[j] = (char *)ptr[j];
        b.esz[j] = esz[j];
    }
    int64_t n = b.cd[r - 1];
    if (r == 1) {
        ox_parallel_for(pool, n, OX__EW_GRAIN, par_inner, &b);
        return;
    }
    int64_t outer = 1;
    for (int d = 0; d < r - 1; d++)
        outer *= b.cd[d];
    int64_t grain = OX__EW_GRAIN / n;
    ox_parallel_for(pool, outer, grain > 0 ? grain : 1, par_outer, &b);
}

ox_dtype ox__compute_type(ox_dtype dt)
{
    switch (dt) {
    case OX_DT_DOUBLE:
        return OX_DT_DOUBLE;
    case OX_DT_FLOAT: case OX_DT_FLOAT16: case OX_DT_BFLOAT16:
    case OX_DT_FLOAT8E4M3FN: case OX_DT_FLOAT8E4M3FNUZ:
    case OX_DT_FLOAT8E5M2: case OX_DT_FLOAT8E5M2FNUZ:
    case OX_DT_FLOAT4E2M1: case OX_DT_FLOAT8E8M0:
        return OX_DT_FLOAT;
    case OX_DT_INT8: case OX_DT_INT16: case OX_DT_INT32: case OX_DT_INT64:
    case OX_DT_INT4: case OX_DT_INT2:
        return OX_DT_INT64;
    case OX_DT_UINT8: case OX_DT_UINT16: case OX_DT_UINT32:
    case OX_DT_UINT64: case OX_DT_UINT4: case OX_DT_UINT2: case OX_DT_BOOL:
        return OX_DT_UINT64;
    default:
        return OX_DT_UNDEFINED;
    }
}

size_t ox__dtype_size(ox_dtype dt)
{
    switch (dt) {
    case OX_DT_FLOAT: case OX_DT_INT32: case OX_DT_UINT32:
        return 4;
    case OX_DT_DOUBLE: case OX_DT_INT64: case OX_DT_UINT64:
    case OX_DT_COMPLEX64:
        return 8;
    case OX_DT_COMPLEX128:
        return 16;
    case OX_DT_INT16: case OX_DT_UINT16: case OX_DT_FLOAT16:
    case OX_DT_BFLOAT16:
        return 2;
    case OX_DT_INT8: case OX_DT_UINT8: case OX_DT_BOOL:
    case OX_DT_FLOAT8E4M3FN: case OX_DT_FLOAT8E4M3FNUZ:
    case OX_DT_FLOAT8E5M2: case OX_DT_FLOAT8E5M2FNUZ: case OX_DT_FLOAT8E8M0:
        return 1;
    case OX_DT_STRING:
        return sizeof(ox_bytes);
    default:
        return 0;
    }
}

static uint64_t dummy_elem[2];

/* Element pointer of a tensor, strings included: a dummy for empty
 * tensors, NULL when a non-empty tensor has no bytes (external data that
 * was never loaded). */
static const void *tensor_elems(const ox_tensor *t)
{
    const void *d = t->dtype == OX_DT_STRING ? (const void *)t->strings
                                             : ox_tensor_data(t);
    if (d)
        return d;
    return t->numel == 0 ? (const void *)dummy_elem : NULL;
}

const void *ox__as_type(const ox_tensor *t, ox_dtype ct, void **tmp,
                        ox_error *err)
{
    *tmp = NULL;
    const void *src = tensor_elems(t);
    if (!src) {
        ox_errorf(err, OX_EINVAL, "tensor '%s' has no data",
                  t->name ? t->name : "");
        return NULL;
    }
    if (t->dtype == ct || t->numel == 0)
        return src;
    size_t es = ox__dtype_size(ct);
    if (es == 0 || (uint64_t)t->numel > SIZE_MAX / es) {
        ox_errorf(err, OX_EUNSUPPORTED, "cannot widen %s to %s",
                  ox_dtype_name(t->dtype), ox_dtype_name(ct));
        return NULL;
    }
    void *b = malloc((size_t)t->numel * es);
    if (!b) {
        ox_errorf(err, OX_ENOMEM, "out of memory (%lld elements)",
                  (long long)t->numel);
        return NULL;
    }
    if (ox__convert(t->dtype, src, ct, b, t->numel, OX__CVT_SATURATE, err)) {
        free(b);
        return NULL;
    }
    *tmp = b;
    return b;
}

void *ox__out_as_type(ox_tensor *out, ox_dtype ct, void **tmp, ox_error *err)
{
    *tmp = NULL;
    if (out->dtype == ct) {
        if (ct == OX_DT_STRING)
            return out->strings ? (void *)out->strings : (void *)dummy_elem;
        void *d = out->numel ? ox_tensor_mutable_data(out) : NULL;
        return d ? d : (void *)dummy_elem;
    }
    if (out->numel == 0)
        return dummy_elem;
    size_t es = ox__dtype_size(ct);
    if (es == 0 || (uint64_t)out->numel > SIZE_MAX / es) {
        ox_errorf(err, OX_EUNSUPPORTED, "bad compute type");
        return NULL;
    }
    void *b = malloc((size_t)out->numel * es);
    if (!b) {
        ox_errorf(err, OX_ENOMEM, "out of memory (%lld elements)",
                  (long long)out->numel);
        return NULL;
    }
    *tmp = b;
    return b;
}

ox_status ox__finish_out(ox_tensor *out, ox_dtype ct, void *tmp, ox_error *err)
{
    if (!tmp)
        return OX_OK;
    ox_status st = OX_OK;
    if (out->numel > 0) {
        void *d = out->dtype == OX_DT_STRING ? (void *)out->strings
                                             : ox_tensor_mutable_data(out);
        if (!d)
            st = ox_errorf(err, OX_ENOMEM, "output has no data");
        else
            st = ox__convert(ct, tmp, out->dtype, d, out->numel, OX__CVT_SATURATE, err);
    }
    free(tmp);
    return st;
}

int ox__read_ints(const ox_tensor *t, int64_t **vals, ox_error *err)
{
    *vals = NULL;
    if (!t)
        return 0;
    if (t->dtype != OX_DT_INT64 && t->dtype != OX_DT_INT32) {
        ox_errorf(err, OX_EINVAL, "expected an int32/int64 tensor, got %s",
                  ox_dtype_name(t->dtype));
        return -1;
    }
    if (t->rank > 1 || t->numel > (1 << 20)) {
        ox_errorf(err, OX_EINVAL, "expected a 1-D integer list");
        return -1;
    }
    int n = (int)t->numel;
    int64_t *v = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    if (!v) {
        ox_errorf(err, OX_ENOMEM, "out of memory");
        return -1;
    }
    const void *d = ox_tensor_data(t);
    if (!d && n > 0) {
        free(v);
        ox_errorf(err, OX_EINVAL, "integer list tensor has no data");
        return -1;
    }
    for (int i = 0; i < n; i++)
        v[i] = t->dtype == OX_DT_INT64 ? ((const int64_t *)d)[i]
                                       : ((const int32_t *)d)[i];
    *vals = v;
    return n;
}

ox_status ox__need_inputs(ox_kernel_ctx *c, int n)
{
    const char *op = c->node && c->node->op_type ? c->node->op_type : "?";
    if (c->n_in < n)
        return ox_errorf(c->err, OX_EINVAL, "%s: needs %d inputs, got %d", op,
                         n, c->n_in);
    for (int i = 0; i < n; i++)
        if (!ox_kernel_in(c, i))
            return ox_errorf(c->err, OX_EINVAL, "%s: input %d missing or not a tensor",
                             op, i);
    if (c->n_out < 1)
        return ox_errorf(c->err, OX_EINVAL, "%s: no output", op);
    return OX_OK;
}
