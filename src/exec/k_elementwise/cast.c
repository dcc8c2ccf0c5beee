/* Cast and CastLike, and the general element conversion behind them (also
 * used to widen narrow types into compute types). Native C types convert
 * directly; narrow formats (float16, bfloat16, float8, float4, int4, int2)
 * and strings go through a native intermediate in small stack chunks. */
/* The build's -O2 does not vectorize on GCC 12; these loops are the hot
 * path of elementwise work, so ask for it here. Without trapping math the
 * min/max selects become branch-free; errno from libm is never read. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "no-trapping-math", "no-math-errno")
#endif

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/k_elementwise/ew.h"
#include "exec/k_elementwise/fastmath.h"
#include "onnxscope/threadpool.h"

enum { K_F, K_S, K_U, K_B };

/* Float to integer the way x86 truncating conversions behave: NaN and
 * out-of-range values give the "integer indefinite" value instead of
 * undefined behaviour. */
static inline int64_t f2i(double v)
{
    if (!(v > -9223372036854775808.0 && v < 9223372036854775808.0))
        return INT64_MIN;
    return (int64_t)v;
}

static inline uint64_t f2u(double v)
{
    if (v >= 0 && v < 18446744073709551616.0)
        return (uint64_t)v;
    if (v < 0 && v > -9223372036854775808.0)
        return (uint64_t)(int64_t)v;
    return UINT64_C(0x8000000000000000);
}

#define CV(DT, DK, SK, v)                                                   \
    ((DK) == K_B ? (DT)((v) != 0)                                           \
     : (SK) == K_B ? (DT)((v) != 0)                                         \
     : ((SK) == K_F && (DK) == K_S) ? (DT)f2i((double)(v))                  \
     : ((SK) == K_F && (DK) == K_U) ? (DT)f2u((double)(v))                  \
                                    : (DT)(v))

#define NATIVE_A(X)                                                         \
    X(OX_DT_FLOAT, float, K_F) X(OX_DT_DOUBLE, double, K_F)                 \
    X(OX_DT_INT8, int8_t, K_S) X(OX_DT_INT16, int16_t, K_S)                 \
    X(OX_DT_INT32, int32_t, K_S) X(OX_DT_INT64, int64_t, K_S)               \
    X(OX_DT_UINT8, uint8_t, K_U) X(OX_DT_UINT16, uint16_t, K_U)             \
    X(OX_DT_UINT32, uint32_t, K_U) X(OX_DT_UINT64, uint64_t, K_U)           \
    X(OX_DT_BOOL, uint8_t, K_B)
#define NATIVE_B(X)                                                         \
    X(OX_DT_FLOAT, float, K_F) X(OX_DT_DOUBLE, double, K_F)                 \
    X(OX_DT_INT8, int8_t, K_S) X(OX_DT_INT16, int16_t, K_S)                 \
    X(OX_DT_INT32, int32_t, K_S) X(OX_DT_INT64, int64_t, K_S)               \
    X(OX_DT_UINT8, uint8_t, K_U) X(OX_DT_UINT16, uint16_t, K_U)             \
    X(OX_DT_UINT32, uint32_t, K_U) X(OX_DT_UINT64, uint64_t, K_U)           \
    X(OX_DT_BOOL, uint8_t, K_B)

static bool is_native(ox_dtype dt)
{
    switch (dt) {
#define X(E, T, K) case E:
        NATIVE_A(X)
#undef X
        return true;
    default:
        return false;
    }
}

/* src and dst are native; converts n elements. */
static void native_convert(ox_dtype sdt, const void *src, ox_dtype ddt,
                           void *dst, int64_t n)
{
    if (sdt == ddt && sdt != OX_DT_BOOL) {
        memmove(dst, src, (size_t)n * ox__dtype_size(sdt));
        return;
    }
    switch (sdt) {
#define INNER(DE, DT, DK)                                                   \
    case DE: {                                                              \
        DT *d = dst;                                                        \
        for (int64_t i = 0; i < n; i++)                                     \
            d[i] = CV(DT, DK, sk_, s[i]);                                   \
        return;                                                             \
    }
#define OUTER(SE, ST, SK)                                                   \
    case SE: {                                                              \
        const ST *s = src;                                                  \
        const int sk_ = SK;                                                 \
        switch (ddt) {                                                      \
            NATIVE_B(INNER)                                                 \
        default:                                                            \
            return;                                                         \
        }                                                                   \
    }
        NATIVE_A(OUTER)
#undef OUTER
#undef INNER
    default:
        return;
    }
}

/* ---- narrow formats ------------------------------------------------------ */

static float e8m0_to_f32(uint8_t v)
{
    if (v == 0xFF)
        return NAN;
    return ldexpf(1.0f, (int)v - 127);
}

static uint8_t f32_to_e8m0(float f, unsigned flags)
{
    if (isnan(f))
        return 0xFF;
    if (isinf(f))
        return (flags & OX__CVT_SATURATE) ? 0xFE : 0xFF;
    uint32_t bits;
    memcpy(&bits, &f, 4);
    bits &= 0x7FFFFFFFu;
    int e = (int)(bits >> 23);
    uint32_t m = bits & 0x7FFFFFu;
    int code;
    if (e == 0) {
        /* subnormal float: below 2^-126, code 0 stands for 2^-127 */
        if (flags & OX__CVT_ROUND_DOWN)
            code = 0;
        else if (flags & OX__CVT_ROUND_NEAREST)
            code = m > 0x600000u ? 1 : 0;
        else
            code = m > 0x400000u ? 1 : 0;
    } else {
        code = e;
        if (flags & OX__CVT_ROUND_DOWN)
            ;
        else if (flags & OX__CVT_ROUND_NEAREST)
            code += m >= 0x400000u ? 1 : 0;
        else
            code += m != 0 ? 1 : 0;
    }
    if (code > 254)
        return (flags & OX__CVT_SATURATE) ? 0xFE : 0xFF;
    return (uint8_t)code;
}

static const float f4_values[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

static float f4_to_f32(unsigned v)
{
    float m = f4_values[v & 7];
    return (v & 8) ? -m : m;
}

/* Round to nearest, ties to even code; saturates to +-6. NaN has no
 * encoding: the ONNX reference data maps it to 0x8 (negative zero). */
static unsigned f32_to_f4(float f)
{
    if (isnan(f))
        return 0x8;
    unsigned s = signbit(f) ? 8u : 0u;
    float a = fabsf(f);
    unsigned c;
    if (a <= 0.25f) c = 0;
    else if (a < 0.75f) c = 1;
    else if (a <= 1.25f) c = 2;
    else if (a < 1.75f) c = 3;
    else if (a <= 2.5f) c = 4;
    else if (a < 3.5f) c = 5;
    else if (a <= 5.0f) c = 6;
    else c = 7;
    return s | c;
}

static int sub_bits(ox_dtype dt)
{
    switch (dt) {
    case OX_DT_INT4: case OX_DT_UINT4: case OX_DT_FLOAT4E2M1:
        return 4;
    case OX_DT_INT2: case OX_DT_UINT2:
        return 2;
    default:
        return 0;
    }
}

static unsigned get_bits(const uint8_t *p, int64_t i, int bits)
{
    int per = 8 / bits;
    return (p[i / per] >> ((i % per) * bits)) & ((1u << bits) - 1);
}

static void set_bits(uint8_t *p, int64_t i, int bits, unsigned v)
{
    int per = 8 / bits;
    int sh = (int)(i % per) * bits;
    unsigned mask = ((1u << bits) - 1) << sh;
    p[i / per] = (uint8_t)((p[i / per] & ~mask) | ((v << sh) & mask));
}

/* Intermediate native type used when reading from sdt (for writing to ddt). */
static ox_dtype decode_type(ox_dtype sdt, ox_dtype ddt)
{
    if (is_native(sdt))
        return sdt;
    switch (sdt) {
    case OX_DT_INT4: case OX_DT_INT2: case OX_DT_UINT4: case OX_DT_UINT2:
        return OX_DT_INT64;
    case OX_DT_STRING:
        if (ddt == OX_DT_UINT64)
            return OX_DT_UINT64;
        if (ox_dtype_is_int(ddt))
            return OX_DT_INT64;
        return OX_DT_DOUBLE;
    default:
        return OX_DT_FLOAT; /* the float-like narrow formats */
    }
}

static ox_dtype encode_type(ox_dtype ddt, ox_dtype mid)
{
    if (is_native(ddt))
        return ddt;
    switch (ddt) {
    case OX_DT_INT4: case OX_DT_INT2: case OX_DT_UINT4: case OX_DT_UINT2:
        return mid == OX_DT_UINT64 ? OX_DT_UINT64 : OX_DT_INT64;
    case OX_DT_STRING:
        return mid;
    default:
        return OX_DT_FLOAT;
    }
}

static ox_status parse_string(const ox_bytes *b, ox_dtype mid, void *out,
                              ox_error *err)
{
    const char *s = b->data ? b->data : "";
    char *end = NULL;
    errno = 0;
    if (mid == OX_DT_INT64 || mid == OX_DT_UINT64) {
        long long v = 0;
        unsigned long long u = 0;
        if (mid == OX_DT_INT64)
            v = strtoll(s, &end, 10);
        else
            u = strtoull(s, &end, 10);
        while (end && (*end == ' ' || *end == '\t' || *end == '\n'))
            end++;
        if (end && end != s && *end == '\0') {
            if (mid == OX_DT_INT64)
                *(int64_t *)out = v;
            else
                *(uint64_t *)out = u;
            return OX_OK;
        }
        /* "1.5" or "1e3" into an integer: go through double */
    }
    double d = strtod(s, &end);
    while (end && (*end == ' ' || *end == '\t' || *end == '\n'))
        end++;
    if (!end || end == s || *end != '\0')
        return ox_errorf(err, OX_EINVAL, "Cast: cannot parse \"%.40s\" as a number",
                         s);
    if (mid == OX_DT_INT64)
        *(int64_t *)out = f2i(d);
    else if (mid == OX_DT_UINT64)
        *(uint64_t *)out = f2u(d);
    else
        *(double *)out = d;
    return OX_OK;
}

/* Shortest text that reads back to the same value, as numpy prints it. */
static void format_float(double v, int maxprec, bool is_f32, char *buf,
                         size_t len)
{
    if (isnan(v)) {
        snprintf(buf, len, "NaN");
        return;
    }
    if (isinf(v)) {
        snprintf(buf, len, v < 0 ? "-INF" : "INF");
        return;
    }
    for (int p = 1; p <= maxprec; p++) {
        snprintf(buf, len, "%.*g", p, v);
        double back = strtod(buf, NULL);
        if (is_f32 ? (float)back == (float)v : back == v)
            return;
    }
}

static ox_status set_string(ox_bytes *b, const char *s)
{
    size_t l = strlen(s);
    char *d = malloc(l + 1);
    if (!d)
        return OX_ENOMEM;
    memcpy(d, s, l + 1);
    free(b->data);
    b->data = d;
    b->len = l;
    return OX_OK;
}

/* Reads elements [i0, i0+n) of src (type sdt) into mid (type m). */
static ox_status decode(ox_dtype sdt, const void *src, int64_t i0, int64_t n,
                        ox_dtype m, void *mid, ox_error *err)
{
    int bits = sub_bits(sdt);
    if (is_native(sdt)) {
        native_convert(sdt, (const char *)src + i0 * (int64_t)ox__dtype_size(sdt),
                       m, mid, n);
        return OX_OK;
    }
    if (sdt == OX_DT_STRING) {
        const ox_bytes *s = (const ox_bytes *)src + i0;
        size_t es = ox__dtype_size(m);
        for (int64_t i = 0; i < n; i++) {
            ox_status st = parse_string(&s[i], m, (char *)mid + i * (int64_t)es, err);
            if (st)
                return st;
        }
        return OX_OK;
    }
    if (bits && sdt != OX_DT_FLOAT4E2M1) {
        int64_t *o = mid;
        for (int64_t i = 0; i < n; i++) {
            unsigned v = get_bits(src, i0 + i, bits);
            if (sdt == OX_DT_INT4 || sdt == OX_DT_INT2)
                o[i] = (v & (1u << (bits - 1))) ? (int64_t)v - (1 << bits) : (int64_t)v;
            else
                o[i] = v;
        }
        return OX_OK;
    }
    float *o = mid;
    const uint8_t *b8 = src;
    const uint16_t *b16 = src;
    for (int64_t i = 0; i < n; i++) {
        int64_t k = i0 + i;
        switch (sdt) {
        case OX_DT_FLOAT16: o[i] = ox__h2f(b16[k]); break;
        case OX_DT_BFLOAT16: o[i] = ox_bf16_to_f32(b16[k]); break;
        case OX_DT_FLOAT8E8M0: o[i] = e8m0_to_f32(b8[k]); break;
        case OX_DT_FLOAT4E2M1: o[i] = f4_to_f32(get_bits(src, k, 4)); break;
        case OX_DT_FLOAT8E4M3FN: case OX_DT_FLOAT8E4M3FNUZ:
        case OX_DT_FLOAT8E5M2: case OX_DT_FLOAT8E5M2FNUZ:
            o[i] = ox_f8_to_f32(sdt, b8[k]);
            break;
        default:
            return ox_errorf(err, OX_EUNSUPPORTED, "cannot convert from %s",
                             ox_dtype_name(sdt));
        }
    }
    return OX_OK;
}

/* Writes mid (type m) into elements [i0, i0+n) of dst (type ddt). */
static ox_status encode(ox_dtype m, const void *mid, ox_dtype ddt, void *dst,
                        int64_t i0, int64_t n, unsigned flags, ox_error *err)
{
    int bits = sub_bits(ddt);
    if (is_native(ddt)) {
        native_convert(m, mid, ddt, (char *)dst + i0 * (int64_t)ox__dtype_size(ddt), n);
        return OX_OK;
    }
    if (ddt == OX_DT_STRING) {
        ox_bytes *d = (ox_bytes *)dst + i0;
        char buf[64];
        for (int64_t i = 0; i < n; i++) {
            switch (m) {
            case OX_DT_FLOAT:
                format_float(((const float *)mid)[i], 9, true, buf, sizeof buf);
                break;
            case OX_DT_DOUBLE:
                format_float(((const double *)mid)[i], 17, false, buf, sizeof buf);
                break;
            case OX_DT_BOOL:
                snprintf(buf, sizeof buf, "%s", ((const uint8_t *)mid)[i] ? "True" : "False");
                break;
            case OX_DT_UINT64: case OX_DT_UINT32: case OX_DT_UINT16: case OX_DT_UINT8: {
                uint64_t u = 0;
                native_convert(m, (const char *)mid + i * (int64_t)ox__dtype_size(m),
                               OX_DT_UINT64, &u, 1);
                snprintf(buf, sizeof buf, "%llu", (unsigned long long)u);
                break;
            }
            default: {
                int64_t v = 0;
                native_convert(m, (const char *)mid + i * (int64_t)ox__dtype_size(m),
                               OX_DT_INT64, &v, 1);
                snprintf(buf, sizeof buf, "%lld", (long long)v);
                break;
            }
            }
            if (set_string(&d[i], buf))
                return ox_errorf(err, OX_ENOMEM, "out of memory");
        }
        return OX_OK;
    }
    if (bits && ddt != OX_DT_FLOAT4E2M1) {
        /* like any integer narrowing (and the ONNX reference data): the
         * value truncates toward zero, then keeps its low bits */
        const int64_t *v = mid;
        for (int64_t i = 0; i < n; i++)
            set_bits(dst, i0 + i, bits, (unsigned)((uint64_t)v[i] & ((1u << bits) - 1)));
        return OX_OK;
    }
    const float *f = mid;
    uint8_t *b8 = dst;
    uint16_t *b16 = dst;
    for (int64_t i = 0; i < n; i++) {
        int64_t k = i0 + i;
        switch (ddt) {
        case OX_DT_FLOAT16: b16[k] = ox__f2h(f[i]); break;
        case OX_DT_BFLOAT16: b16[k] = ox_f32_to_bf16(f[i]); break;
        case OX_DT_FLOAT8E8M0: b8[k] = f32_to_e8m0(f[i], flags); break;
        case OX_DT_FLOAT4E2M1: set_bits(dst, k, 4, f32_to_f4(f[i])); break;
        case OX_DT_FLOAT8E4M3FN: case OX_DT_FLOAT8E4M3FNUZ:
        case OX_DT_FLOAT8E5M2: case OX_DT_FLOAT8E5M2FNUZ:
            b8[k] = ox_f32_to_f8(ddt, f[i], (flags & OX__CVT_SATURATE) != 0);
            break;
        default:
            return ox_errorf(err, OX_EUNSUPPORTED, "cannot convert to %s",
                             ox_dtype_name(ddt));
        }
    }
    return OX_OK;
}

OX__EW_CLONES static void h2f_loop(const uint16_t *s, float *d, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        d[i] = ox__h2f(s[i]);
}

OX__EW_CLONES static void f2h_loop(const float *s, uint16_t *d, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        d[i] = ox__f2h(s[i]);
}

ox_status ox__convert(ox_dtype sdt, const void *src, ox_dtype ddt, void *dst,
                      int64_t n, unsigned flags, ox_error *err)
{
    if (n <= 0)
        return OX_OK;
    if (sdt == OX_DT_COMPLEX64 || sdt == OX_DT_COMPLEX128 ||
        ddt == OX_DT_COMPLEX64 || ddt == OX_DT_COMPLEX128 ||
        sdt == OX_DT_UNDEFINED || ddt == OX_DT_UNDEFINED ||
        !ox_dtype_valid(sdt) || !ox_dtype_valid(ddt))
        return ox_errorf(err, OX_EUNSUPPORTED, "cannot convert %s to %s",
                         ox_dtype_name(sdt), ox_dtype_name(ddt));
    if (is_native(sdt) && is_native(ddt)) {
        native_convert(sdt, src, ddt, dst, n);
        return OX_OK;
    }
    /* float16 <-> float: the widening/narrowing of every float16 kernel */
    if (sdt == OX_DT_FLOAT16 && ddt == OX_DT_FLOAT) {
        h2f_loop(src, dst, n);
        return OX_OK;
    }
    if (sdt == OX_DT_FLOAT && ddt == OX_DT_FLOAT16) {
        f2h_loop(src, dst, n);
        return OX_OK;
    }
    if (sdt == OX_DT_STRING && ddt == OX_DT_STRING) {
        const ox_bytes *s = src;
        ox_bytes *d = dst;
        for (int64_t i = 0; i < n; i++) {
            char *c = malloc(s[i].len + 1);
            if (!c)
                return ox_errorf(err, OX_ENOMEM, "out of memory");
            if (s[i].len)
                memcpy(c, s[i].data, s[i].len);
            c[s[i].len] = '\0';
            free(d[i].data);
            d[i].data = c;
            d[i].len = s[i].len;
        }
        return OX_OK;
    }
    if (sdt == ddt && sub_bits(sdt) == 0 && ox__dtype_size(sdt)) {
        memmove(dst, src, (size_t)n * ox__dtype_size(sdt));
        return OX_OK;
    }
    ox_dtype m1 = decode_type(sdt, ddt);
    ox_dtype m2 = encode_type(ddt, m1);
    enum { CHUNK = 256 };
    uint64_t b1[CHUNK], b2[CHUNK];
    for (int64_t i0 = 0; i0 < n; i0 += CHUNK) {
        int64_t k = n - i0 < CHUNK ? n - i0 : CHUNK;
        ox_status st = decode(sdt, src, i0, k, m1, b1, err);
        if (st)
            return st;
        const void *mid = b1;
        if (m1 != m2) {
            native_convert(m1, b1, m2, b2, k);
            mid = b2;
        }
        st = encode(m2, mid, ddt, dst, i0, k, flags, err);
        if (st)
            return st;
    }
    return OX_OK;
}

/* ---- kernels -------------------------------------------------------------- */

typedef struct cpar {
    ox_dtype sdt;
    const void *src;
    ox_dtype ddt;
    void *dst;
    unsigned flags;
    ox_status st;   /* set (racily, to the same value) when a chunk fails */
    int64_t n;
} cpar;

static void cpar_run(void *ctx, int64_t b, int64_t e)
{
    cpar *p = ctx;
    int64_t i0 = b * 8, i1 = e * 8 < p->n ? e * 8 : p->n;
    if (i1 <= i0)
        return;
    /* offsets in whole bytes: 8 elements of any packed type fill whole bytes */
    int64_t sb = p->sdt == OX_DT_STRING ? (int64_t)sizeof(ox_bytes) * 8 : ox_dtype_bits(p->sdt);
    int64_t db = p->ddt == OX_DT_STRING ? (int64_t)sizeof(ox_bytes) * 8 : ox_dtype_bits(p->ddt);
    const char *s = (const char *)p->src + i0 * sb / 8;
    char *d = (char *)p->dst + i0 * db / 8;
    if (ox__convert(p->sdt, s, p->ddt, d, i1 - i0, p->flags, NULL))
        p->st = OX_EUNSUPPORTED;
}

static ox_status cast_to(ox_kernel_ctx *c, ox_dtype to)
{
    const ox_tensor *x = ox_kernel_in(c, 0);
    if (!ox_dtype_valid(to) || to == OX_DT_UNDEFINED)
        return ox_errorf(c->err, OX_EINVAL, "Cast: bad target type %d", (int)to);
    unsigned flags = 0;
    if (ox_node_attr_i(c->node, "saturate", 1))
        flags |= OX__CVT_SATURATE;
    const char *rm = ox_node_attr_s(c->node, "round_mode", "up");
    if (strcmp(rm, "down") == 0)
        flags |= OX__CVT_ROUND_DOWN;
    else if (strcmp(rm, "nearest") == 0)
        flags |= OX__CVT_ROUND_NEAREST;
    if (x->dtype == to && to != OX_DT_STRING) {
        ox_tensor *y = ox_tensor_share(x);
        if (!y)
            return ox_errorf(c->err, OX_ENOMEM, "Cast: out of memory");
        ox_kernel_set_output(c, 0, y);
        return OX_OK;
    }
    ox_tensor *y = ox_kernel_output(c, 0, to, x->rank, x->dims);
    if (!y)
        return ox_errorf(c->err, OX_ENOMEM, "Cast: cannot allocate output");
    if (x->numel == 0)
        return OX_OK;
    const void *src = x->dtype == OX_DT_STRING ? (const void *)x->strings
                                               : ox_tensor_data(x);
    void *dst = to == OX_DT_STRING ? (void *)y->strings : ox_tensor_mutable_data(y);
    if (!src || !dst)
        return ox_errorf(c->err, OX_EINVAL, "Cast: tensor without data");
    if (x->dtype == OX_DT_STRING || x->numel < 2 * OX__EW_GRAIN)
        return ox__convert(x->dtype, src, to, dst, x->numel, flags, c->err);
    /* numeric sources cannot fail per element: convert chunks in parallel,
     * each a whole number of bytes for the packed types */
    cpar p = {x->dtype, src, to, dst, flags, OX_OK, x->numel};
    ox_parallel_for(c->pool, (x->numel + 7) / 8, OX__EW_GRAIN / 8, cpar_run, &p);
    if (p.st)
        return ox__convert(x->dtype, src, to, dst, x->numel, flags, c->err);
    return OX_OK;
}

ox_status ox__k_Cast(ox_kernel_ctx *c)
{
    ox_status st = ox__need_inputs(c, 1);
    if (st)
        return st;
    const ox_attr *to = ox_node_attr(c->node, "to");
    if (!to)
        return ox_errorf(c->err, OX_EINVAL, "Cast: missing attribute 'to'");
    if (to->type == OX_ATTR_STRING) {
        /* opset 1-5 named the type ("FLOAT", "INT64", ...) */
        static const char *const names[] = {
            "UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32",
            "INT64", "STRING", "BOOL", "FLOAT16", "DOUBLE", "UINT32", "UINT64"};
        for (int i = 1; i < (int)(sizeof names / sizeof names[0]); i++)
            if (to->s.data && strcmp(to->s.data, names[i]) == 0)
                return cast_to(c, (ox_dtype)i);
        return ox_errorf(c->err, OX_EINVAL, "Cast: unknown type name \"%.40s\"",
                         to->s.data ? to->s.data : "");
    }
    if (to->i <= 0 || to->i >= OX_DT_COUNT)
        return ox_errorf(c->err, OX_EINVAL, "Cast: bad target type %lld",
                         (long long)to->i);
    return cast_to(c, (ox_dtype)to->i);
}

ox_status ox__k_CastLike(ox_kernel_ctx *c)
{
    ox_status st = ox__need_inputs(c, 2);
    if (st)
        return st;
    return cast_to(c, ox_kernel_in(c, 1)->dtype);
}
