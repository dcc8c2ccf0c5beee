/* Linear quantization: QuantizeLinear / DequantizeLinear with per-tensor,
 * per-axis and blocked (opset 21) scales, to and from 8/16/4/2-bit integers
 * and the float8/float4 formats, and DynamicQuantizeLinear (uint8). */
#include "nn_common.h"

/* float4 e2m1: sign, 2 exponent bits (bias 1), 1 mantissa bit. */
static float f4_to_f32(uint8_t v)
{
    static const float mag[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    float m = mag[v & 7];
    return (v & 8) ? -m : m;
}

/* Nearest e2m1 value, ties to the even code, saturating at 6. */
static uint8_t f32_to_f4(float f)
{
    static const float mag[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    uint8_t sign = (signbit(f) ? 8 : 0);
    if (isnan(f)) return 7 | sign;  /* no NaN in e2m1: saturate */
    float a = fabsf(f);
    int best = 0;
    for (int i = 1; i < 8; i++) {
        float db = fabsf(a - mag[best]), di = fabsf(a - mag[i]);
        if (di < db || (di == db && (i & 1) == 0)) best = i;
    }
    return (uint8_t)(best | sign);
}

static bool is_f8(ox_dtype dt)
{
    return dt == OX_DT_FLOAT8E4M3FN || dt == OX_DT_FLOAT8E4M3FNUZ || dt == OX_DT_FLOAT8E5M2 ||
           dt == OX_DT_FLOAT8E5M2FNUZ;
}

/* Element i of any quantized tensor as float (integers, float8, float4). */
static float q_get(const ox_tensor *t, int64_t i)
{
    const uint8_t *d = ox_tensor_data(t);
    if (is_f8(t->dtype)) return d ? ox_f8_to_f32(t->dtype, d[i]) : 0.0f;
    if (t->dtype == OX_DT_FLOAT4E2M1) return d ? f4_to_f32((uint8_t)((d[i >> 1] >> ((i & 1) * 4)) & 15)) : 0.0f;
    return (float)nn_get_i(t, i);
}

/* Maps element i of x (axis length D, `inner` trailing elements) to the
 * index of its scale: per-tensor, per-axis or blocked. */
typedef struct q_layout {
    int mode; /* 0 tensor, 1 axis, 2 blocked */
    int64_t D, inner, block, Db;
} q_layout;

static ox_status q_layout_init(ox_kernel_ctx *c, const ox_tensor *x, const ox_tensor *s,
                               q_layout *L)
{
    memset(L, 0, sizeof *L);
    if (s->numel == 1 && s->rank <= 1) return OX_OK;
    int axis;
    if (!nn_axis(nn_attr_i(c, "axis", 1), x->rank, &axis)) return NN_FAIL(c, "axis out of range");
    L->D = x->dims[axis];
    L->inner = nn_prod(x->dims + axis + 1, x->rank - axis - 1);
    int64_t bs = nn_attr_i(c, "block_size", 0);
    if (bs > 0) {
        if (s->rank != x->rank) return NN_FAIL(c, "blocked scale must have the input's rank");
        L->mode = 2;
        L->block = bs;
        L->Db = s->dims[axis];
        if ((L->D + bs - 1) / bs != L->Db) return NN_FAIL(c, "scale dim does not match block_size");
        for (int i = 0; i < x->rank; i++)
            if (i != axis && s->dims[i] != x->dims[i]) return NN_FAIL(c, "blocked scale shape mismatch");
        return OX_OK;
    }
    if (s->rank != 1 || s->numel != L->D) return NN_FAIL(c, "per-axis scale must have %lld elements", (long long)L->D);
    L->mode = 1;
    return OX_OK;
}

static int64_t q_index(const q_layout *L, int64_t i)
{
    if (L->mode == 0) return 0;
    int64_t a = (i / L->inner) % L->D;
    if (L->mode == 1) return a;
    int64_t outer = i / (L->inner * L->D);
    return (outer * L->Db + a / L->block) * L->inner + i % L->inner;
}

NN_KERNEL(quantize_linear)
{
    const ox_tensor *x = ox_kernel_in(c, 0), *s = ox_kernel_in(c, 1), *zp = ox_kernel_in(c, 2);
    if (!x || !s) return NN_FAIL(c, "needs x and y_scale");
    if (zp && (zp->numel != s->numel)) return NN_FAIL(c, "zero point and scale shapes differ");
    ox_dtype odt = zp ? zp->dtype : (ox_dtype)nn_attr_i(c, "output_dtype", OX_DT_UINT8);
    if (odt == OX_DT_UNDEFINED) odt = OX_DT_UINT8;
    bool sat = nn_attr_i(c, "saturate", 1) != 0;
    int64_t lo = 0, hi = 0;
    bool f8 = is_f8(odt), f4 = odt == OX_DT_FLOAT4E2M1;
    if (!f8 && !f4 && !nn_q_range(odt, &lo, &hi))
        return NN_FAIL(c, "unsupported output type %s", ox_dtype_name(odt));
    q_layout L;
    ox_status st = q_layout_init(c, x, s, &L);
    if (st) return st;
    float *t0 = NULL, *t1 = NULL;
    const float *X = nn_load_f32(c, x, &t0);
    const float *S = X ? nn_load_f32(c, s, &t1) : NULL;
    ox_tensor *y = S ? nn_out(c, 0, odt, x->rank, x->dims) : NULL;
    if (!y) { free(t0); free(t1); return NN_ST(c); }
    uint8_t *Y = ox_tensor_data(y);
    if (f4 && Y) memset(Y, 0, y->nbytes);
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t k = q_index(&L, i);
        float z = zp ? q_get(zp, k) : 0.0f;
        float v = X[i] / S[k];
        if (f8) {
            Y[i] = ox_f32_to_f8(odt, v + z, sat);
        } else if (f4) {
            uint8_t q = f32_to_f4(v + z);
            Y[i >> 1] |= (uint8_t)(q << ((i & 1) * 4));
        } else {
            nn_set_i(y, i, nn_q_round_sat((double)nearbyintf(v) + (double)z, lo, hi));
        }
    }
    free(t0);
    free(t1);
    return OX_OK;
}

NN_KERNEL(dequantize_linear)
{
    const ox_tensor *x = ox_kernel_in(c, 0), *s = ox_kernel_in(c, 1), *zp = ox_kernel_in(c, 2);
    if (!x || !s) return NN_FAIL(c, "needs x and x_scale");
    if (zp && zp->numel != s->numel) return NN_FAIL(c, "zero point and scale shapes differ");
    if (!nn_is_float_dt(s->dtype)) return NN_FAIL(c, "scale must be a float type");
    ox_dtype odt = (ox_dtype)nn_attr_i(c, "output_dtype", 0);
    if (!odt) odt = s->dtype;
    if (!nn_is_float_dt(odt)) return NN_FAIL(c, "bad output_dtype");
    q_layout L;
    ox_status st = q_layout_init(c, x, s, &L);
    if (st) return st;
    float *t1 = NULL;
    const float *S = nn_load_f32(c, s, &t1);
    if (!S) return NN_ST(c);
    nn_fout o;
    if ((st = nn_fout_new(c, 0, odt, x->rank, x->dims, &o))) { free(t1); return st; }
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t k = q_index(&L, i);
        float z = zp ? q_get(zp, k) : 0.0f;
        o.f[i] = (q_get(x, i) - z) * S[k];
    }
    nn_fout_done(&o);
    free(t1);
    return OX_OK;
}

/* x86-64-v3 clones round with roundss inline instead of a libm call per
 * element (the baseline ISA has no SSE4.1 rounding). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define DQ_CLONES __attribute__((target_clones("arch=x86-64-v3", "default"), optimize("O3")))
#else
#define DQ_CLONES
#endif

static void dq_minmax_c(const float *X, int64_t n, float *mn_out, float *mx_out)
{
    float mn = 0.0f, mx = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        mn = X[i] < mn ? X[i] : mn;
        mx = X[i] > mx ? X[i] : mx;
    }
    *mn_out = mn;
    *mx_out = mx;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
/* minps(x, m) is exactly `x < m ? x : m` (a NaN x leaves m), so the lanes
 * compute what the scalar loop does; min and max are exact in any order.
 * (The compiler does not vectorize the ternary reduction itself.) */
__attribute__((target("avx2"))) static void dq_minmax_avx2(const float *X, int64_t n,
                                                           float *mn_out, float *mx_out)
{
    __m256 mn = _mm256_setzero_ps(), mx = mn;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 x = _mm256_loadu_ps(X + i);
        mn = _mm256_min_ps(x, mn);
        mx = _mm256_max_ps(x, mx);
    }
    float a[8], b[8], lo, hi;
    _mm256_storeu_ps(a, mn);
    _mm256_storeu_ps(b, mx);
    dq_minmax_c(X + i, n - i, &lo, &hi);
    for (int k = 0; k < 8; k++) {
        lo = a[k] < lo ? a[k] : lo;
        hi = b[k] > hi ? b[k] : hi;
    }
    *mn_out = lo;
    *mx_out = hi;
}
#endif

static void dq_minmax(const float *X, int64_t n, float *mn_out, float *mx_out)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (__builtin_cpu_supports("avx2")) {
        dq_minmax_avx2(X, n, mn_out, mx_out);
        return;
    }
#endif
    dq_minmax_c(X, n, mn_out, mx_out);
}

DQ_CLONES
static void dq_apply(const float *X, int64_t n, float scale, float zp, uint8_t *Y)
{
    for (int64_t i = 0; i < n; i++) {
        /* Integer-valued floats add exactly below 2^24; anything larger
         * saturates anyway. !(r >= 0) also sends NaN to 0. */
        float r = nearbyintf(X[i] / scale) + zp;
        r = !(r >= 0.0f) ? 0.0f : r > 255.0f ? 255.0f : r;
        Y[i] = (uint8_t)r;
    }
}

void nn_dyn_quant(const float *X, int64_t n, uint8_t *Y, float *scale_out, uint8_t *zp_out)
{
    float mn, mx;
    dq_minmax(X, n, &mn, &mx);
    float scale = (mx - mn) / 255.0f;
    float zpf = scale != 0.0f ? nearbyintf(0.0f - mn / scale) : 0.0f;
    int64_t zp = zpf < 0 ? 0 : zpf > 255 ? 255 : (int64_t)zpf;
    if (Y && scale != 0.0f)
        dq_apply(X, n, scale, (float)zp, Y);
    else if (Y)
        memset(Y, (int)zp, (size_t)n);
    *scale_out = scale;
    *zp_out = (uint8_t)zp;
}

NN_KERNEL(dynamic_quantize_linear)
{
    const ox_tensor *x = ox_kernel_in(c, 0);
    if (!x || !nn_is_float_dt(x->dtype)) return NN_FAIL(c, "needs a float input");
    float *t0 = NULL;
    const float *X = nn_load_f32(c, x, &t0);
    if (!X) return NN_ST(c);
    ox_tensor *y = nn_out(c, 0, OX_DT_UINT8, x->rank, x->dims);
    ox_tensor *ys = y ? nn_out(c, 1, OX_DT_FLOAT, 0, NULL) : NULL;
    ox_tensor *yz = ys ? nn_out(c, 2, OX_DT_UINT8, 0, NULL) : NULL;
    if (!yz) { free(t0); return NN_ST(c); }
    nn_dyn_quant(X, x->numel, ox_tensor_data(y), (float *)ox_tensor_data(ys),
                 (uint8_t *)ox_tensor_data(yz));
    free(t0);
    return OX_OK;
}
