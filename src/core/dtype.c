/* Element types: names, sizes, classification, and exact conversions between
 * float32 and the reduced-precision formats (IEEE half, bfloat16, the four
 * ONNX float8 formats), all with round-to-nearest-even. */
#include "onnxscope/dtype.h"

#include <ctype.h>
#include <math.h>
#include <string.h>
#include <strings.h>

struct dtinfo {
    const char *name;   /* our canonical name */
    const char *onnx;   /* TensorProto.DataType enum name */
    int bits;
};

static const struct dtinfo DT[OX_DT_COUNT] = {
    [OX_DT_UNDEFINED] = {"undefined", "UNDEFINED", 0},
    [OX_DT_FLOAT] = {"float32", "FLOAT", 32},
    [OX_DT_UINT8] = {"uint8", "UINT8", 8},
    [OX_DT_INT8] = {"int8", "INT8", 8},
    [OX_DT_UINT16] = {"uint16", "UINT16", 16},
    [OX_DT_INT16] = {"int16", "INT16", 16},
    [OX_DT_INT32] = {"int32", "INT32", 32},
    [OX_DT_INT64] = {"int64", "INT64", 64},
    [OX_DT_STRING] = {"string", "STRING", 0},
    [OX_DT_BOOL] = {"bool", "BOOL", 8},
    [OX_DT_FLOAT16] = {"float16", "FLOAT16", 16},
    [OX_DT_DOUBLE] = {"float64", "DOUBLE", 64},
    [OX_DT_UINT32] = {"uint32", "UINT32", 32},
    [OX_DT_UINT64] = {"uint64", "UINT64", 64},
    [OX_DT_COMPLEX64] = {"complex64", "COMPLEX64", 64},
    [OX_DT_COMPLEX128] = {"complex128", "COMPLEX128", 128},
    [OX_DT_BFLOAT16] = {"bfloat16", "BFLOAT16", 16},
    [OX_DT_FLOAT8E4M3FN] = {"float8e4m3fn", "FLOAT8E4M3FN", 8},
    [OX_DT_FLOAT8E4M3FNUZ] = {"float8e4m3fnuz", "FLOAT8E4M3FNUZ", 8},
    [OX_DT_FLOAT8E5M2] = {"float8e5m2", "FLOAT8E5M2", 8},
    [OX_DT_FLOAT8E5M2FNUZ] = {"float8e5m2fnuz", "FLOAT8E5M2FNUZ", 8},
    [OX_DT_UINT4] = {"uint4", "UINT4", 4},
    [OX_DT_INT4] = {"int4", "INT4", 4},
    [OX_DT_FLOAT4E2M1] = {"float4e2m1", "FLOAT4E2M1", 4},
    [OX_DT_FLOAT8E8M0] = {"float8e8m0", "FLOAT8E8M0", 8},
    [OX_DT_UINT2] = {"uint2", "UINT2", 2},
    [OX_DT_INT2] = {"int2", "INT2", 2},
};

bool ox_dtype_valid(int dt)
{
    return dt > OX_DT_UNDEFINED && dt < OX_DT_COUNT;
}

const char *ox_dtype_name(ox_dtype dt)
{
    if ((int)dt < 0 || dt >= OX_DT_COUNT)
        return "invalid";
    return DT[dt].name;
}

ox_dtype ox_dtype_from_name(const char *s)
{
    if (!s)
        return OX_DT_UNDEFINED;
    /* Accept our names, the ONNX enum names and common aliases, any case,
     * optionally wrapped as "tensor(float)" like onnxruntime prints them. */
    char buf[32];
    size_t n = strlen(s);
    if (n > 8 && strncasecmp(s, "tensor(", 7) == 0 && s[n - 1] == ')') {
        s += 7;
        n -= 8;
    }
    if (n == 0 || n >= sizeof buf)
        return OX_DT_UNDEFINED;
    memcpy(buf, s, n);
    buf[n] = '\0';
    for (int i = 1; i < OX_DT_COUNT; i++)
        if (strcasecmp(buf, DT[i].name) == 0 || strcasecmp(buf, DT[i].onnx) == 0)
            return (ox_dtype)i;
    static const struct { const char *alias; ox_dtype dt; } AL[] = {
        {"f32", OX_DT_FLOAT}, {"fp32", OX_DT_FLOAT}, {"f16", OX_DT_FLOAT16},
        {"fp16", OX_DT_FLOAT16}, {"half", OX_DT_FLOAT16}, {"f64", OX_DT_DOUBLE},
        {"fp64", OX_DT_DOUBLE}, {"bf16", OX_DT_BFLOAT16}, {"i8", OX_DT_INT8},
        {"u8", OX_DT_UINT8}, {"i16", OX_DT_INT16}, {"u16", OX_DT_UINT16},
        {"i32", OX_DT_INT32}, {"u32", OX_DT_UINT32}, {"i64", OX_DT_INT64},
        {"u64", OX_DT_UINT64}, {"int", OX_DT_INT32}, {"long", OX_DT_INT64},
    };
    for (size_t i = 0; i < sizeof AL / sizeof AL[0]; i++)
        if (strcasecmp(buf, AL[i].alias) == 0)
            return AL[i].dt;
    return OX_DT_UNDEFINED;
}

int ox_dtype_bits(ox_dtype dt)
{
    if ((int)dt < 0 || dt >= OX_DT_COUNT)
        return 0;
    return DT[dt].bits;
}

bool ox_dtype_nbytes(ox_dtype dt, int64_t n, size_t *out)
{
    int bits = ox_dtype_bits(dt);
    if (n < 0)
        return false;
    if (bits == 0) {
        if (out)
            *out = 0;
        return true;
    }
    /* n * bits + 7 must not overflow: bits <= 128. */
    if ((uint64_t)n > (UINT64_MAX - 7) / (uint64_t)bits)
        return false;
    uint64_t b = ((uint64_t)n * (uint64_t)bits + 7) / 8;
    if (b > SIZE_MAX)
        return false;
    if (out)
        *out = (size_t)b;
    return true;
}

bool ox_dtype_is_float(ox_dtype dt)
{
    switch (dt) {
    case OX_DT_FLOAT: case OX_DT_FLOAT16: case OX_DT_DOUBLE: case OX_DT_BFLOAT16:
    case OX_DT_FLOAT8E4M3FN: case OX_DT_FLOAT8E4M3FNUZ: case OX_DT_FLOAT8E5M2:
    case OX_DT_FLOAT8E5M2FNUZ: case OX_DT_FLOAT4E2M1: case OX_DT_FLOAT8E8M0:
        return true;
    default:
        return false;
    }
}

bool ox_dtype_is_int(ox_dtype dt)
{
    switch (dt) {
    case OX_DT_UINT8: case OX_DT_INT8: case OX_DT_UINT16: case OX_DT_INT16:
    case OX_DT_INT32: case OX_DT_INT64: case OX_DT_UINT32: case OX_DT_UINT64:
    case OX_DT_UINT4: case OX_DT_INT4: case OX_DT_UINT2: case OX_DT_INT2:
        return true;
    default:
        return false;
    }
}

bool ox_dtype_is_signed(ox_dtype dt)
{
    /* Signed integers and every float with a sign bit (e8m0 has none). */
    switch (dt) {
    case OX_DT_INT8: case OX_DT_INT16: case OX_DT_INT32: case OX_DT_INT64:
    case OX_DT_INT4: case OX_DT_INT2:
        return true;
    case OX_DT_FLOAT8E8M0:
        return false;
    default:
        return ox_dtype_is_float(dt) || dt == OX_DT_COMPLEX64 || dt == OX_DT_COMPLEX128;
    }
}

/* ---- float16 / bfloat16 ---------------------------------------------- */

static uint32_t f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float u2f(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

float ox_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ff;
    if (e == 0x1f)
        return u2f(sign | 0x7f800000 | (m << 13));
    if (e == 0) {
        if (m == 0)
            return u2f(sign);
        /* Subnormal: value = m * 2^-24, exact in float32. */
        float v = (float)m * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return u2f(sign | ((e + 112) << 23) | (m << 13));
}

uint16_t ox_f32_to_f16(float f)
{
    uint32_t x = f2u(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    x &= 0x7fffffff;
    if (x >= 0x7f800000) {
        if (x == 0x7f800000)
            return sign | 0x7c00;
        return sign | 0x7e00 | (uint16_t)((x >> 13) & 0x3ff); /* quiet NaN */
    }
    uint32_t e = x >> 23;
    if (e < 113) {
        /* Result is subnormal (or zero): round m24 * 2^(e-150) to a
         * multiple of 2^-24. */
        if (e < 102)
            return sign; /* below half the smallest subnormal */
        uint32_t mant = (x & 0x7fffff) | 0x800000;
        uint32_t shift = 126 - e; /* 14..24 */
        uint32_t r = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1)))
            r++;
        return sign | (uint16_t)r;
    }
    if (e > 142)
        return sign | 0x7c00;
    uint32_t h = ((e - 112) << 10) | ((x >> 13) & 0x3ff);
    uint32_t rem = x & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1)))
        h++; /* a carry into the exponent is the correct result, up to inf */
    return sign | (uint16_t)h;
}

float ox_bf16_to_f32(uint16_t h)
{
    return u2f((uint32_t)h << 16);
}

uint16_t ox_f32_to_bf16(float f)
{
    uint32_t x = f2u(f);
    if ((x & 0x7fffffff) > 0x7f800000)
        return (uint16_t)((x >> 16) | 0x40); /* keep NaN a (quiet) NaN */
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

/* ---- float8 ------------------------------------------------------------ */

struct f8fmt {
    int mbits, bias;
    int max_code;  /* largest finite magnitude code (without sign) */
    bool uz;       /* no negative zero; 0x80 is the only NaN */
    bool inf;      /* has infinities (e5m2) */
};

static bool f8_format(ox_dtype dt, struct f8fmt *f)
{
    switch (dt) {
    case OX_DT_FLOAT8E4M3FN:
        *f = (struct f8fmt){3, 7, 0x7e, false, false};
        return true;
    case OX_DT_FLOAT8E4M3FNUZ:
        *f = (struct f8fmt){3, 8, 0x7f, true, false};
        return true;
    case OX_DT_FLOAT8E5M2:
        *f = (struct f8fmt){2, 15, 0x7b, false, true};
        return true;
    case OX_DT_FLOAT8E5M2FNUZ:
        *f = (struct f8fmt){2, 16, 0x7f, true, false};
        return true;
    default:
        return false;
    }
}

float ox_f8_to_f32(ox_dtype dt, uint8_t v)
{
    struct f8fmt F;
    if (!f8_format(dt, &F))
        return NAN;
    bool neg = v & 0x80;
    int mag = v & 0x7f;
    if (F.uz) {
        if (v == 0x80)
            return NAN;
    } else if (F.inf) {
        if (mag > 0x7c)
            return NAN;
        if (mag == 0x7c)
            return neg ? -INFINITY : INFINITY;
    } else if (mag == 0x7f) {
        return NAN;
    }
    int e = mag >> F.mbits, m = mag & ((1 << F.mbits) - 1);
    float r;
    if (e == 0)
        r = ldexpf((float)m, 1 - F.bias - F.mbits);
    else
        r = ldexpf((float)(m | (1 << F.mbits)), e - F.bias - F.mbits);
    return neg ? -r : r;
}

uint8_t ox_f32_to_f8(ox_dtype dt, float f, bool saturate)
{
    struct f8fmt F;
    if (!f8_format(dt, &F))
        return 0;
    uint8_t sign = (f2u(f) >> 24) & 0x80;
    uint8_t nan = F.uz ? 0x80 : (uint8_t)(sign | 0x7f);
    uint8_t over = saturate ? (uint8_t)(sign | F.max_code)
                            : (F.inf ? (uint8_t)(sign | 0x7c) : nan);
    if (isnan(f))
        return nan;
    if (isinf(f))
        return over;
    double a = fabs((double)f);
    int code;
    if (a == 0) {
        code = 0;
    } else {
        int ex;
        frexp(a, &ex); /* a = fr * 2^ex, fr in [0.5, 1) */
        int E = ex - 1;
        if (E < 1 - F.bias) {
            /* Subnormal: count units of 2^(1-bias-mbits); rint rounds to
             * nearest even in the default mode, and a result of 2^mbits is
             * exactly the smallest normal code. */
            code = (int)rint(ldexp(a, F.bias - 1 + F.mbits));
        } else {
            double q = rint(ldexp(a, F.mbits - E)); /* in [2^mbits, 2^(mbits+1)] */
            int qi = (int)q;
            if (qi == (2 << F.mbits)) {
                qi >>= 1;
                E++;
            }
            long c = ((long)(E + F.bias) << F.mbits) | (qi & ((1 << F.mbits) - 1));
            code = c > 0x7f ? 0x80 : (int)c;
        }
    }
    if (code > F.max_code)
        return over;
    if (code == 0 && F.uz)
        return 0; /* no negative zero in the fnuz formats */
    return (uint8_t)(sign | code);
}
