/* Element moves and readers shared by the tensor-manipulation kernels.
 * Everything here works by element index so that packed sub-byte types
 * and strings go through the same code paths as ordinary numbers. */
#include "tk_util.h"

#include <stdlib.h>
#include <string.h>

bool ox_tk_layout_of(ox_dtype dt, ox_tk_layout *l)
{
    memset(l, 0, sizeof *l);
    if (dt == OX_DT_STRING) {
        l->is_string = true;
        return true;
    }
    if (!ox_dtype_valid(dt) || dt == OX_DT_UNDEFINED)
        return false;
    int bits = ox_dtype_bits(dt);
    if (bits <= 0)
        return false;
    l->bits = bits;
    l->es = bits >= 8 ? bits / 8 : 0;
    return true;
}

bool ox_tk_is_numeric(ox_dtype dt)
{
    return dt != OX_DT_STRING && dt != OX_DT_UNDEFINED && ox_dtype_valid(dt);
}

const char *ox_tk_op(const ox_kernel_ctx *c)
{
    return c->node && c->node->op_type ? c->node->op_type : "?";
}

static void set_string(ox_bytes *d, const ox_bytes *s)
{
    char *p = malloc(s->len + 1);
    if (!p)
        return; /* keeps the old value; an OOM here cannot be reported */
    if (s->len && s->data)
        memcpy(p, s->data, s->len);
    p[s->len] = 0;
    free(d->data);
    d->data = p;
    d->len = s->len;
}

static inline unsigned get_bits(const uint8_t *p, int bits, int64_t k)
{
    int64_t bit = k * bits;
    return (p[bit >> 3] >> (bit & 7)) & ((1u << bits) - 1);
}

static inline void put_bits(uint8_t *p, int bits, int64_t k, unsigned v)
{
    int64_t bit = k * bits;
    unsigned mask = ((1u << bits) - 1) << (bit & 7);
    p[bit >> 3] = (uint8_t)((p[bit >> 3] & ~mask) | ((v << (bit & 7)) & mask));
}

void ox_tk_copy(ox_tensor *dst, int64_t di, const ox_tensor *src, int64_t si,
                int64_t n)
{
    ox_tk_layout l;
    if (n <= 0 || !ox_tk_layout_of(dst->dtype, &l))
        return;
    if (l.is_string) {
        for (int64_t k = 0; k < n; k++)
            set_string(&dst->strings[di + k], &src->strings[si + k]);
        return;
    }
    uint8_t *d = ox_tensor_data(dst);
    const uint8_t *s = ox_tensor_data(src);
    if (l.es) {
        memcpy(d + di * l.es, s + si * l.es, (size_t)(n * l.es));
        return;
    }
    for (int64_t k = 0; k < n; k++)
        put_bits(d, l.bits, di + k, get_bits(s, l.bits, si + k));
}

void ox_tk_fill(ox_tensor *dst, int64_t di, int64_t n, const ox_tensor *val,
                int64_t vi)
{
    ox_tk_layout l;
    if (n <= 0 || !ox_tk_layout_of(dst->dtype, &l))
        return;
    if (l.is_string) {
        for (int64_t k = 0; k < n; k++)
            set_string(&dst->strings[di + k], &val->strings[vi]);
        return;
    }
    uint8_t *d = ox_tensor_data(dst);
    const uint8_t *s = ox_tensor_data(val);
    if (!l.es) {
        unsigned v = get_bits(s, l.bits, vi);
        for (int64_t k = 0; k < n; k++)
            put_bits(d, l.bits, di + k, v);
        return;
    }
    const uint8_t *v = s + vi * l.es;
    d += di * l.es;
    bool zero = true;
    for (int b = 0; b < l.es; b++)
        zero = zero && v[b] == 0;
    if (zero) {
        memset(d, 0, (size_t)(n * l.es));
        return;
    }
    /* Doubling memcpy: log(n) calls regardless of element size. */
    memcpy(d, v, (size_t)l.es);
    int64_t done = 1;
    while (done < n) {
        int64_t k = done < n - done ? done : n - done;
        memcpy(d + done * l.es, d, (size_t)(k * l.es));
        done += k;
    }
}

void ox_tk_strides(int rank, const int64_t *dims, int64_t *strides)
{
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        strides[i] = s;
        s *= dims[i];
    }
}

/* Small square tiles: with power-of-two row pitches, taller tiles make the
 * strided side collide in the same cache sets (measured: 8 is ~3x faster
 * than 32 on a 1024x1024 float transpose). */
#define TILE 8

/* Copies an n0 x n1 block: element (i,j) from s[i*ss0 + j*ss1] to
 * d[i*ds0 + j*ds1], typed so that the compiler emits plain loads/stores
 * (fixed-size memcpy: the source may be an unaligned view of the file);
 * tiled when reads are strided (transposes) to stay in cache. Full tiles
 * go through tile_T, whose loops have constant bounds and are unrolled:
 * callgrind puts the weight transposes of BERT/GPT-2 at ~4 instructions
 * per element, down from ~10 with variable bounds (GCC -O2 leaves those
 * rolled, with index arithmetic and a branch per element). */
#if defined(__GNUC__) && !defined(__clang__)
#define OX_TK_UNROLL _Pragma("GCC unroll 8")
#else
#define OX_TK_UNROLL
#endif

#define COPY2D(T)                                                            \
    static void tile_##T(T *d, int64_t ds0, int64_t ds1, const T *s,         \
                         int64_t ss0, int64_t ss1)                           \
    {                                                                        \
        if (ds1 == 1 && ss0 == 1) { /* the usual transpose of a matrix */    \
            /* Eight contiguous source rows into a local block, then eight \
             * contiguous output rows out of it: wide loads and stores on \
             * both sides, the shuffle stays in L1. */                       \
            T b[TILE][TILE];                                                 \
            OX_TK_UNROLL                                                     \
            for (int j = 0; j < TILE; j++)                                   \
                memcpy(b[j], s + j * ss1, sizeof b[j]);                      \
            OX_TK_UNROLL                                                     \
            for (int i = 0; i < TILE; i++) {                                 \
                T row[TILE];                                                 \
                OX_TK_UNROLL                                                 \
                for (int j = 0; j < TILE; j++)                               \
                    row[j] = b[j][i];                                        \
                memcpy(d + i * ds0, row, sizeof row);                        \
            }                                                                \
            return;                                                          \
        }                                                                    \
        OX_TK_UNROLL                                                         \
        for (int i = 0; i < TILE; i++) {                                     \
            T *dr = d + i * ds0;                                             \
            const T *sr = s + i * ss0;                                       \
            OX_TK_UNROLL                                                     \
            for (int j = 0; j < TILE; j++)                                   \
                memcpy(dr + j * ds1, sr + j * ss1, sizeof(T));               \
        }                                                                    \
    }                                                                        \
    static void copy2d_##T(T *d, int64_t ds0, int64_t ds1, const T *s,       \
                           int64_t ss0, int64_t ss1, int64_t n0, int64_t n1) \
    {                                                                        \
        if (ds1 == 1 && ss1 == 1) {                                          \
            for (int64_t i = 0; i < n0; i++)                                 \
                memcpy(d + i * ds0, s + i * ss0, (size_t)n1 * sizeof(T));    \
            return;                                                          \
        }                                                                    \
        if (ss1 == 1 || n0 < TILE || n1 < TILE) {                            \
            for (int64_t i = 0; i < n0; i++) {                               \
                T *dr = d + i * ds0;                                         \
                const T *sr = s + i * ss0;                                   \
                for (int64_t j = 0; j < n1; j++)                             \
                    memcpy(dr + j * ds1, sr + j * ss1, sizeof(T));           \
            }                                                                \
            return;                                                          \
        }                                                                    \
        int64_t f0 = n0 - n0 % TILE, f1 = n1 - n1 % TILE;                    \
        for (int64_t i0 = 0; i0 < n0; i0 += TILE) {                          \
            int64_t i1 = i0 + TILE < n0 ? i0 + TILE : n0;                    \
            for (int64_t j0 = 0; j0 < n1; j0 += TILE) {                      \
                if (i0 < f0 && j0 < f1) {                                    \
                    tile_##T(d + i0 * ds0 + j0 * ds1, ds0, ds1,              \
                             s + i0 * ss0 + j0 * ss1, ss0, ss1);             \
                    continue;                                                \
                }                                                            \
                int64_t j1 = j0 + TILE < n1 ? j0 + TILE : n1;                \
                for (int64_t i = i0; i < i1; i++)                            \
                    for (int64_t j = j0; j < j1; j++)                        \
                        memcpy(d + i * ds0 + j * ds1, s + i * ss0 + j * ss1, \
                               sizeof(T));                                   \
            }                                                                \
        }                                                                    \
    }

typedef struct {
    uint8_t b[16];
} ox_tk_b16;
COPY2D(uint8_t)
COPY2D(uint16_t)
COPY2D(uint32_t)
COPY2D(uint64_t)
COPY2D(ox_tk_b16)

void ox_tk_copy_nd(ox_tensor *dst, int64_t doff, const int64_t *dstr,
                   const ox_tensor *src, int64_t soff, const int64_t *sstr,
                   int rank, const int64_t *dims)
{
    int64_t n[OX_MAX_RANK + 2], ds[OX_MAX_RANK + 2], ss[OX_MAX_RANK + 2];
    int r = 0;
    /* Drop size-1 dims and merge neighbours that are contiguous in both
     * tensors, so common cases reduce to a few long runs. */
    for (int i = 0; i < rank; i++) {
        if (dims[i] == 0)
            return;
        if (dims[i] == 1)
            continue;
        if (r > 0 && ds[r - 1] == dstr[i] * dims[i] &&
            ss[r - 1] == sstr[i] * dims[i]) {
            n[r - 1] *= dims[i];
            ds[r - 1] = dstr[i];
            ss[r - 1] = sstr[i];
            continue;
        }
        n[r] = dims[i];
        ds[r] = dstr[i];
        ss[r] = sstr[i];
        r++;
    }
    while (r < 2) { /* pad to two dims for the 2-D inner kernel */
        for (int i = r; i > 0; i--) {
            n[i] = n[i - 1];
            ds[i] = ds[i - 1];
            ss[i] = ss[i - 1];
        }
        n[0] = 1;
        ds[0] = ss[0] = 0;
        r++;
    }
    ox_tk_layout l;
    if (!ox_tk_layout_of(dst->dtype, &l))
        return;
    int outer = r - 2;
    int64_t idx[OX_MAX_RANK + 2] = {0};
    int64_t d0 = doff, s0 = soff;
    uint8_t *db = l.is_string ? NULL : ox_tensor_data(dst);
    const uint8_t *sb = l.is_string ? NULL : ox_tensor_data(src);
    int64_t n0 = n[r - 2], n1 = n[r - 1];
    int64_t ds0 = ds[r - 2], ds1 = ds[r - 1], ss0 = ss[r - 2], ss1 = ss[r - 1];
    for (;;) {
        switch (l.es) {
        case 1:
            copy2d_uint8_t(db + d0, ds0, ds1, sb + s0, ss0, ss1, n0, n1);
            break;
        case 2:
            copy2d_uint16_t((uint16_t *)db + d0, ds0, ds1,
                            (const uint16_t *)sb + s0, ss0, ss1, n0, n1);
            break;
        case 4:
            copy2d_uint32_t((uint32_t *)db + d0, ds0, ds1,
                            (const uint32_t *)sb + s0, ss0, ss1, n0, n1);
            break;
        case 8:
            copy2d_uint64_t((uint64_t *)db + d0, ds0, ds1,
                            (const uint64_t *)sb + s0, ss0, ss1, n0, n1);
            break;
        case 16:
            copy2d_ox_tk_b16((ox_tk_b16 *)db + d0, ds0, ds1,
                             (const ox_tk_b16 *)sb + s0, ss0, ss1, n0, n1);
            break;
        default: /* strings and packed types */
            for (int64_t i = 0; i < n0; i++) {
                if (ds1 == 1 && ss1 == 1) {
                    ox_tk_copy(dst, d0 + i * ds0, src, s0 + i * ss0, n1);
                    continue;
                }
                for (int64_t j = 0; j < n1; j++)
                    ox_tk_copy(dst, d0 + i * ds0 + j * ds1, src,
                               s0 + i * ss0 + j * ss1, 1);
            }
            break;
        }
        int k = outer - 1;
        while (k >= 0) {
            idx[k]++;
            d0 += ds[k];
            s0 += ss[k];
            if (idx[k] < n[k])
                break;
            d0 -= ds[k] * n[k];
            s0 -= ss[k] * n[k];
            idx[k] = 0;
            k--;
        }
        if (k < 0)
            break;
    }
}

ox_status ox_tk_axis(ox_kernel_ctx *c, int64_t axis, int rank, int *out)
{
    int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank || rank == 0)
        return ox_errorf(c->err, OX_EINVAL, "%s: axis %lld out of range for rank %d",
                         ox_tk_op(c), (long long)axis, rank);
    *out = (int)a;
    return OX_OK;
}

ox_status ox_tk_read_ints(ox_kernel_ctx *c, const ox_tensor *t, const char *what,
                          int64_t *out, int max, int *n)
{
    if (!t || !ox_dtype_is_int(t->dtype) || t->rank > 1)
        return ox_errorf(c->err, OX_EINVAL, "%s: %s must be a 1-D integer tensor",
                         ox_tk_op(c), what);
    if (t->numel > max)
        return ox_errorf(c->err, OX_EINVAL, "%s: %s has %lld values, at most %d allowed",
                         ox_tk_op(c), what, (long long)t->numel, max);
    for (int64_t i = 0; i < t->numel; i++)
        out[i] = ox_tk_i64(t, i);
    *n = (int)t->numel;
    return OX_OK;
}

ox_status ox_tk_read_ints_alloc(ox_kernel_ctx *c, const ox_tensor *t,
                                const char *what, int64_t **out, int64_t *n)
{
    if (!t || !ox_dtype_is_int(t->dtype) || t->rank > 1)
        return ox_errorf(c->err, OX_EINVAL, "%s: %s must be a 1-D integer tensor",
                         ox_tk_op(c), what);
    int64_t *v = malloc(sizeof *v * (size_t)(t->numel ? t->numel : 1));
    if (!v)
        return ox_errorf(c->err, OX_ENOMEM, "%s: out of memory", ox_tk_op(c));
    for (int64_t i = 0; i < t->numel; i++)
        v[i] = ox_tk_i64(t, i);
    *out = v;
    *n = t->numel;
    return OX_OK;
}

ox_status ox_tk_need(ox_kernel_ctx *c, int i, const ox_tensor **out)
{
    const ox_tensor *t = i < c->n_in ? ox_kernel_in(c, i) : NULL;
    if (!t)
        return ox_errorf(c->err, OX_EINVAL, "%s: input %d is missing or not a tensor",
                         ox_tk_op(c), i);
    if (t->dtype != OX_DT_STRING && t->numel > 0 && !ox_tensor_data(t))
        return ox_errorf(c->err, OX_EINVAL, "%s: input %d has no data",
                         ox_tk_op(c), i);
    *out = t;
    return OX_OK;
}

ox_status ox_tk_out(ox_kernel_ctx *c, int i, ox_dtype dt, int rank,
                    const int64_t *dims, ox_tensor **out)
{
    int64_t numel;
    if (i >= c->n_out)
        return ox_errorf(c->err, OX_EINVAL, "%s: output %d not declared",
                         ox_tk_op(c), i);
    if (rank < 0 || rank > OX_MAX_RANK || !ox_shape_numel(rank, dims, &numel))
        return ox_errorf(c->err, OX_ESHAPE, "%s: invalid output shape",
                         ox_tk_op(c));
    ox_tensor *t = ox_kernel_output(c, i, dt, rank, dims);
    if (!t)
        return ox_errorf(c->err, OX_ENOMEM, "%s: cannot allocate output %d",
                         ox_tk_op(c), i);
    /* Packed types are written a few bits at a time: clear the bytes so
     * the padding bits of the last byte are deterministic. */
    ox_tk_layout l;
    if (ox_tk_layout_of(dt, &l) && !l.is_string && !l.es && t->nbytes && ox_tensor_data(t))
        memset(ox_tensor_data(t), 0, t->nbytes);
    *out = t;
    return OX_OK;
}

ox_status ox_tk_out_view(ox_kernel_ctx *c, int i, const ox_tensor *src,
                         int rank, const int64_t *dims)
{
    int64_t numel;
    if (rank < 0 || rank > OX_MAX_RANK || !ox_shape_numel(rank, dims, &numel) ||
        numel != src->numel)
        return ox_errorf(c->err, OX_ESHAPE, "%s: cannot view %lld elements as the "
                         "requested shape", ox_tk_op(c), (long long)src->numel);
    if (i >= c->n_out)
        return ox_errorf(c->err, OX_EINVAL, "%s: output %d not declared",
                         ox_tk_op(c), i);
    ox_tensor *t = ox_tensor_share(src);
    if (!t)
        return ox_errorf(c->err, OX_ENOMEM, "%s: out of memory", ox_tk_op(c));
    ox_tensor_set_name(t, NULL); /* the output is a new value, not src */
    t->rank = rank;
    for (int k = 0; k < rank; k++)
        t->dims[k] = dims[k];
    t->numel = numel;
    ox_kernel_set_output(c, i, t);
    return OX_OK;
}
