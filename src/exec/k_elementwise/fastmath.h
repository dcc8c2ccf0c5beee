/* Branch-free float32 exp, erf and tanh that the compiler can vectorize
 * (libm's are scalar calls). Relative error about 1e-7 (a few ulp) over
 * the whole range, NaN and infinities handled; used by the float32 loops of
 * Exp, Sigmoid, Tanh, Erf, Gelu, Softmax and friends. */
#ifndef ONNXSCOPE_EXEC_FASTMATH_H
#define ONNXSCOPE_EXEC_FASTMATH_H

#include <stdint.h>

typedef union {
    float f;
    uint32_t u;
} ox__fbits;

/* exp(x) = 2^n * e^r with n = round(x / ln 2), |r| <= ln2 / 2, e^r by its
 * Taylor series to r^7 (truncation error below 5e-9). 2^n is applied as two
 * factors so that n down to -150 (subnormal results) and up to 129 (inf)
 * need no special case. */
static inline float ox__expf(float x)
{
    float xc = x < -104.0f ? -104.0f : x;
    xc = xc > 89.0f ? 89.0f : xc;
    ox__fbits t;
    t.f = xc * 1.44269504088896341f + 12582912.0f; /* round to integer */
    float n = t.f - 12582912.0f;
    int32_t ni = (int32_t)(t.u - 0x4B400000u);
    float r = xc - n * 0.693145751953125f;         /* ln2, high bits */
    r = r - n * 1.42860682028622680e-06f;         /* ln2, low bits */
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    int32_t n1 = ni / 2, n2 = ni - n1;
    ox__fbits s1, s2;
    s1.u = (uint32_t)(n1 + 127) << 23;
    s2.u = (uint32_t)(n2 + 127) << 23;
    float y = p * s1.f * s2.f;
    return x != x ? x : y;
}

/* erf: x * P(x^2) / Q(x^2) on x clamped to [-4, 4] (erf(4) rounds to 1 in
 * float), a [13/8] rational minimax fit (the coefficients published with
 * XLA's float erf). One division and 12 multiply-adds, one branch-free path:
 * 3.6x faster than the Taylor + erfc-with-exp pair it replaced (that one
 * evaluated both branches per lane), absolute error below 4.5e-7 (was
 * 1.6e-7), relative error below 5e-7 over the float range (PERFORMANCE.md,
 * "Transformer executor round"). */
static inline float ox__erff(float x)
{
    float xc = x < -4.0f ? -4.0f : x;
    xc = xc > 4.0f ? 4.0f : xc;
    float p = xc * xc;
    float a = -2.72614225801306e-10f;
    a = a * p + 2.77068142495902e-08f;
    a = a * p - 2.10102402082508e-06f;
    a = a * p - 5.69250639462346e-05f;
    a = a * p - 7.34990630326855e-04f;
    a = a * p - 2.95459980854025e-03f;
    a = a * p - 1.60960333262415e-02f;
    float b = -1.45660718464996e-05f;
    b = b * p - 2.13374055278905e-04f;
    b = b * p - 1.68282697438203e-03f;
    b = b * p - 7.37332916720468e-03f;
    b = b * p - 1.42647390514189e-02f;
    float y = xc * a / b;
    return x != x ? x : y;
}

/* tanh: odd Taylor series below 0.0625, else 1 - 2 / (e^(2|x|) + 1). */
static inline float ox__tanhf(float x)
{
    float a = x < 0 ? -x : x;
    float x2 = x * x;
    float small = x * (1.0f + x2 * (-1.0f / 3.0f + x2 * (2.0f / 15.0f + x2 * (-17.0f / 315.0f))));
    float e = ox__expf(2.0f * (a < 20.0f ? a : 20.0f));
    float big = 1.0f - 2.0f / (e + 1.0f);
    big = x < 0 ? -big : big;
    float y = a < 0.0625f ? small : big;
    return x != x ? x : y;
}

/* float16 <-> float32, bit-identical to ox_f16_to_f32 / ox_f32_to_f16
 * (round to nearest even, NaN payload kept and quieted) but branch-free. */
static inline float ox__h2f(uint16_t h)
{
    uint32_t em = h & 0x7fffu;
    ox__fbits o;
    o.u = em << 13;
    o.f *= 5.192296858534828e+33f;          /* 2^112: rebias, subnormals exact */
    uint32_t special = 0x7f800000u | ((em & 0x3ffu) << 13);
    o.u = em >= 0x7c00u ? special : o.u;
    o.u |= (uint32_t)(h & 0x8000u) << 16;
    return o.f;
}

static inline uint16_t ox__f2h(float f)
{
    ox__fbits v, d;
    v.f = f;
    uint32_t sign = (v.u >> 16) & 0x8000u;
    uint32_t x = v.u & 0x7fffffffu;
    /* subnormal results: adding 0.5 rounds to a multiple of 2^-24 */
    d.u = x;
    d.f += 0.5f;
    uint32_t sub = d.u - 0x3f000000u;
    uint32_t norm = (x + 0xc8000fffu + ((x >> 13) & 1u)) >> 13; /* -112 << 23 */
    uint32_t nan = 0x7e00u | ((x >> 13) & 0x3ffu);
    uint32_t h = x < 0x38800000u ? sub : norm;
    h = x >= 0x47800000u ? 0x7c00u : h;
    h = x > 0x7f800000u ? nan : h;
    return (uint16_t)(h | sign);
}

#endif
