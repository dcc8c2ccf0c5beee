// float16 kernels of the CUDA backend (kern_half.h has the contracts;
// docs/EXECUTOR.md "float16 models on the GPU"). Every element is widened
// to float32 on load, the math is kernels.cu's (kern_ops.cuh), reductions
// accumulate in float32, and each result is rounded once to float16
// (__float2half_rn: round to nearest even), as the CPU executor does for a
// float16 model. Launch shapes follow kernels.cu: grid-stride loops for
// elementwise work, one block of kRow threads per row or output element.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "kern.h"
#include "kern_half.h"

namespace {

#include "kern_ops.cuh"

constexpr int kRow = 256;   // threads per row kernel (a multiple of 32)

unsigned grid_rows(int64_t rows)
{
    return (unsigned)(rows > 65535 * 16 ? 65535 * 16 : rows);
}

int launched(void)
{
    return (int)cudaGetLastError();
}

__device__ __forceinline__ float ld(const __half *p, int64_t i)
{
    return __half2float(p[i]);
}

__device__ __forceinline__ __half st(float v)
{
    return __float2half_rn(v);
}

// Block-wide sum or max of one float per thread (blockDim.x == kRow);
// every thread gets the result. `red` is kRow/32 floats of shared memory.
template <bool Max>
__device__ float block_reduce(float v, float *red)
{
    for (int o = 16; o > 0; o >>= 1) {
        float w = __shfl_xor_sync(0xffffffffu, v, o);
        v = Max ? fmaxf(v, w) : v + w;
    }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();   // red may still be read by the previous call
    if (lane == 0)
        red[warp] = v;
    __syncthreads();
    v = red[0];
    for (int w = 1; w < kRow / 32; w++)
        v = Max ? fmaxf(v, red[w]) : v + red[w];
    return v;
}

// Cast: every type widened to double on load (float16 exactly), stored
// narrowed: float16 by way of float (as the CPU kernel), bool as != 0,
// integers truncated toward zero.
__device__ double load_any(const void *x, int t, int64_t i)
{
    switch (t) {
    case OX_CK_T_F16: return (double)__half2float(((const __half *)x)[i]);
    case OX_CK_T_F32: return (double)((const float *)x)[i];
    case OX_CK_T_F64: return ((const double *)x)[i];
    case OX_CK_T_U8: return (double)((const uint8_t *)x)[i];
    case OX_CK_T_I8: return (double)((const int8_t *)x)[i];
    case OX_CK_T_I32: return (double)((const int32_t *)x)[i];
    case OX_CK_T_I64: return (double)((const int64_t *)x)[i];
    case OX_CK_T_BOOL: return ((const uint8_t *)x)[i] ? 1.0 : 0.0;
    default: return 0.0;
    }
}

__device__ void store_any(void *y, int t, int64_t i, double v)
{
    switch (t) {
    case OX_CK_T_F16: ((__half *)y)[i] = __float2half_rn((float)v); break;
    case OX_CK_T_F32: ((float *)y)[i] = (float)v; break;
    case OX_CK_T_F64: ((double *)y)[i] = v; break;
    case OX_CK_T_U8: ((uint8_t *)y)[i] = (uint8_t)v; break;
    case OX_CK_T_I8: ((int8_t *)y)[i] = (int8_t)v; break;
    case OX_CK_T_I32: ((int32_t *)y)[i] = (int32_t)v; break;
    case OX_CK_T_I64: ((int64_t *)y)[i] = (int64_t)v; break;
    case OX_CK_T_BOOL: ((uint8_t *)y)[i] = v != 0.0; break;
    default: break;
    }
}

__global__ void kh_cast(const void *x, int from, void *y, int to, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        store_any(y, to, i, load_any(x, from, i));
}

// float16 <-> float32 without the double detour (the usual Casts at a
// to_fp16 model's boundaries).
__global__ void kh_to_f32(const __half *x, float *y, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] = __half2float(x[i]);
}

__global__ void kh_from_f32(const float *x, __half *y, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] = __float2half_rn(x[i]);
}

__global__ void __launch_bounds__(kRow) kh_reduce(int op, const __half *x, __half *y,
                                                  int64_t n_out, Dims kd, Strides ks, Dims rd,
                                                  Strides rs, int64_t n_red)
{
    __shared__ float red[kRow / 32];
    bool mx = op == OX_CK_RMAX, mn = op == OX_CK_RMIN;
    for (int64_t j = blockIdx.x; j < n_out; j += gridDim.x) {
        int64_t base = 0, r = j;
        for (int k = kd.rank - 1; k >= 0; k--) {
            base += (r % kd.d[k]) * ks.s[k];
            r /= kd.d[k];
        }
        float acc = mx ? -INFINITY : mn ? -INFINITY : 0.f;   // min as -max(-x)
        for (int64_t t = threadIdx.x; t < n_red; t += blockDim.x) {
            int64_t off = base, q = t;
            for (int k = rd.rank - 1; k >= 0; k--) {
                off += (q % rd.d[k]) * rs.s[k];
                q /= rd.d[k];
            }
            float v = ld(x, off);
            if (mx)
                acc = fmaxf(acc, v);
            else if (mn)
                acc = fmaxf(acc, -v);
            else if (op == OX_CK_RSUMSQ || op == OX_CK_RL2)
                acc += v * v;
            else
                acc += v;
        }
        float v = (mx || mn) ? block_reduce<true>(acc, red) : block_reduce<false>(acc, red);
        if (threadIdx.x == 0) {
            if (mn)
                v = -v;
            else if (op == OX_CK_RMEAN)
                v /= (float)n_red;
            else if (op == OX_CK_RL2)
                v = sqrtf(v);
            y[j] = st(v);
        }
    }
}

__global__ void __launch_bounds__(kRow) kh_softmax(const __half *x, __half *y, int64_t outer,
                                                   int64_t len, int64_t inner, int lg)
{
    __shared__ float red[kRow / 32];
    for (int64_t row = blockIdx.x; row < outer * inner; row += gridDim.x) {
        int64_t o = row / inner, in = row % inner;
        const __half *xr = x + o * len * inner + in;
        __half *yr = y + o * len * inner + in;
        float m = -INFINITY;
        for (int64_t t = threadIdx.x; t < len; t += blockDim.x)
            m = fmaxf(m, ld(xr, t * inner));
        m = block_reduce<true>(m, red);
        float s = 0.f;
        for (int64_t t = threadIdx.x; t < len; t += blockDim.x)
            s += expf(ld(xr, t * inner) - m);
        s = block_reduce<false>(s, red);
        float ls = logf(s);
        for (int64_t t = threadIdx.x; t < len; t += blockDim.x) {
            float v = ld(xr, t * inner) - m;
            yr[t * inner] = st(lg ? v - ls : expf(v) / s);
        }
    }
}

__device__ __forceinline__ float ln_in(const __half *xr, const __half *sr, const __half *bias,
                                       int64_t t)
{
    return ld(xr, t) + (sr ? ld(sr, t) : 0.f) + (bias ? ld(bias, t) : 0.f);
}

// Two passes in float (mean, then squared deviations), as kernels.cu.
__global__ void __launch_bounds__(kRow) kh_layernorm(const __half *x, const __half *skip,
                                                     const __half *bias, const __half *gamma,
                                                     const __half *beta, __half *y,
                                                     __half *sum_out, int64_t rows,
                                                     int64_t cols, float eps, int rms)
{
    __shared__ float red[kRow / 32];
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const __half *xr = x + row * cols;
        const __half *sr = skip ? skip + row * cols : nullptr;
        __half *yr = y + row * cols;
        float s = 0.f;
        if (!rms) {
            for (int64_t t = threadIdx.x; t < cols; t += blockDim.x)
                s += ln_in(xr, sr, bias, t);
            s = block_reduce<false>(s, red);
        }
        float mean = rms ? 0.f : s / (float)cols;
        float s2 = 0.f;
        for (int64_t t = threadIdx.x; t < cols; t += blockDim.x) {
            float h = ln_in(xr, sr, bias, t) - mean;
            s2 += h * h;
        }
        s2 = block_reduce<false>(s2, red);
        float inv = rsqrtf(s2 / (float)cols + eps);
        for (int64_t t = threadIdx.x; t < cols; t += blockDim.x) {
            float h = ln_in(xr, sr, bias, t);
            if (sum_out)
                sum_out[row * cols + t] = st(h);
            yr[t] = st((h - mean) * inv * ld(gamma, t) + (beta ? ld(beta, t) : 0.f));
        }
    }
}

__global__ void kh_batchnorm(const __half *x, __half *y, const __half *scale,
                             const __half *bias, const __half *mean, const __half *var,
                             float eps, int64_t n, int64_t c, int64_t inner)
{
    int64_t total = n * c * inner;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t ch = (i / inner) % c;
        y[i] = st((ld(x, i) - ld(mean, ch)) * rsqrtf(ld(var, ch) + eps) * ld(scale, ch) +
                  ld(bias, ch));
    }
}

__global__ void kh_bias_act(__half *y, const __half *bias, int64_t n, int64_t c, int64_t inner,
                            int act, float a, float b)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        float v = ld(y, i) + (bias ? ld(bias, (i / inner) % c) : 0.f);
        y[i] = st(unary_op(act, v, a, b));
    }
}

__global__ void kh_pool2d(const __half *x, __half *y, int64_t n, int64_t c, int64_t h, int64_t w,
                          int64_t oh, int64_t ow, int kh, int kw, int sh, int sw, int ph, int pw,
                          int ph1, int pw1, int dh, int dw, int avg, int count_pad)
{
    int64_t total = n * c * oh * ow;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t ox = i % ow, oy = (i / ow) % oh, nc = i / (ow * oh);
        const __half *xp = x + nc * h * w;
        float acc = avg ? 0.f : -INFINITY;
        int cnt = 0;
        for (int ky = 0; ky < kh; ky++) {
            int64_t iy = oy * sh - ph + (int64_t)ky * dh;
            for (int kx = 0; kx < kw; kx++) {
                int64_t ix = ox * sw - pw + (int64_t)kx * dw;
                if (iy >= 0 && iy < h && ix >= 0 && ix < w) {
                    float v = ld(xp, iy * w + ix);
                    acc = avg ? acc + v : fmaxf(acc, v);
                    cnt++;
                } else if (count_pad && iy < h + ph1 && ix < w + pw1) {
                    cnt++;
                }
            }
        }
        y[i] = st(avg ? (cnt ? acc / (float)cnt : 0.f) : acc);
    }
}

} // namespace

extern "C" {

int ox_ckh_unary(int op, const uint16_t *x, uint16_t *y, int64_t n, float a, float b,
                 void *stream)
{
    if (n <= 0)
        return 0;
    k_unary<__half><<<grid_for(n), kThreads, 0, (cudaStream_t)stream>>>(op, (const __half *)x,
                                                               (__half *)y, n, a, b);
    return launched();
}

int ox_ckh_binary(int op, const uint16_t *a, const uint16_t *b, uint16_t *y, int rank,
                  const int64_t *dims, const int64_t *astr, const int64_t *bstr, int64_t n,
                  void *stream)
{
    if (n <= 0)
        return 0;
    bool flat = true;
    int64_t c = 1;
    for (int k = rank - 1; k >= 0; k--) {
        if (dims[k] != 1 && (astr[k] != c || bstr[k] != c))
            flat = false;
        c *= dims[k];
    }
    cudaStream_t s = (cudaStream_t)stream;
    if (flat)
        k_binary_flat<__half><<<grid_for(n), kThreads, 0, s>>>(op, (const __half *)a, (const __half *)b,
                                                      (__half *)y, n);
    else
        k_binary<__half><<<grid_for(n), kThreads, 0, s>>>(op, (const __half *)a, (const __half *)b,
                                                 (__half *)y, make_dims(rank, dims),
                                                 make_str(rank, astr), make_str(rank, bstr),
                                                 n);
    return launched();
}

int ox_ckh_where(const uint8_t *c, const void *x, const void *z, void *y, int rank,
                 const int64_t *dims, const int64_t *cstr, const int64_t *xstr,
                 const int64_t *zstr, int64_t n, void *stream)
{
    if (n <= 0)
        return 0;
    k_where<uint16_t><<<grid_for(n), kThreads, 0, (cudaStream_t)stream>>>(
        c, (const uint16_t *)x, (const uint16_t *)z, (uint16_t *)y, make_dims(rank, dims),
        make_str(rank, cstr), make_str(rank, xstr), make_str(rank, zstr), n);
    return launched();
}

int ox_ckh_cast(const void *x, int from, void *y, int to, int64_t n, void *stream)
{
    if (n <= 0)
        return 0;
    cudaStream_t s = (cudaStream_t)stream;
    if (from == OX_CK_T_F16 && to == OX_CK_T_F32)
        kh_to_f32<<<grid_for(n), kThreads, 0, s>>>((const __half *)x, (float *)y, n);
    else if (from == OX_CK_T_F32 && to == OX_CK_T_F16)
        kh_from_f32<<<grid_for(n), kThreads, 0, s>>>((const float *)x, (__half *)y, n);
    else
        kh_cast<<<grid_for(n), kThreads, 0, s>>>(x, from, y, to, n);
    return launched();
}

int ox_ckh_reduce(int op, const uint16_t *x, uint16_t *y, int64_t n_out, int nk,
                  const int64_t *kdims, const int64_t *kstr, int nr, const int64_t *rdims,
                  const int64_t *rstr, int64_t n_red, void *stream)
{
    if (n_out <= 0)
        return 0;
    kh_reduce<<<grid_rows(n_out), kRow, 0, (cudaStream_t)stream>>>(
        op, (const __half *)x, (__half *)y, n_out, make_dims(nk, kdims), make_str(nk, kstr),
        make_dims(nr, rdims), make_str(nr, rstr), n_red);
    return launched();
}

int ox_ckh_softmax(const uint16_t *x, uint16_t *y, int64_t outer, int64_t len, int64_t inner,
                   int log, void *stream)
{
    int64_t rows = outer * inner;
    if (rows <= 0 || len <= 0)
        return 0;
    kh_softmax<<<grid_rows(rows), kRow, 0, (cudaStream_t)stream>>>(
        (const __half *)x, (__half *)y, outer, len, inner, log);
    return launched();
}

int ox_ckh_layernorm(const uint16_t *x, const uint16_t *skip, const uint16_t *bias,
                     const uint16_t *gamma, const uint16_t *beta, uint16_t *y,
                     uint16_t *sum_out, int64_t rows, int64_t cols, float eps, int rms,
                     void *stream)
{
    if (rows <= 0 || cols <= 0)
        return 0;
    kh_layernorm<<<grid_rows(rows), kRow, 0, (cudaStream_t)stream>>>(
        (const __half *)x, (const __half *)skip, (const __half *)bias, (const __half *)gamma,
        (const __half *)beta, (__half *)y, (__half *)sum_out, rows, cols, eps, rms);
    return launched();
}

int ox_ckh_batchnorm(const uint16_t *x, uint16_t *y, const uint16_t *scale,
                     const uint16_t *bias, const uint16_t *mean, const uint16_t *var, float eps,
                     int64_t n, int64_t c, int64_t inner, void *stream)
{
    int64_t total = n * c * inner;
    if (total <= 0)
        return 0;
    kh_batchnorm<<<grid_for(total), kThreads, 0, (cudaStream_t)stream>>>(
        (const __half *)x, (__half *)y, (const __half *)scale, (const __half *)bias,
        (const __half *)mean, (const __half *)var, eps, n, c, inner);
    return launched();
}

int ox_ckh_bias_act(uint16_t *y, const uint16_t *bias, int64_t n, int64_t c, int64_t inner,
                    int act, float a, float b, void *stream)
{
    if (n <= 0)
        return 0;
    kh_bias_act<<<grid_for(n), kThreads, 0, (cudaStream_t)stream>>>(
        (__half *)y, (const __half *)bias, n, c, inner, act, a, b);
    return launched();
}

int ox_ckh_pool2d(const uint16_t *x, uint16_t *y, int64_t n, int64_t c, int64_t h, int64_t w,
                  int64_t oh, int64_t ow, int kh, int kw, int sh, int sw, int ph, int pw,
                  int ph1, int pw1, int dh, int dw, int avg, int count_pad, void *stream)
{
    int64_t total = n * c * oh * ow;
    if (total <= 0)
        return 0;
    kh_pool2d<<<grid_for(total), kThreads, 0, (cudaStream_t)stream>>>(
        (const __half *)x, (__half *)y, n, c, h, w, oh, ow, kh, kw, sh, sw, ph, pw, ph1, pw1,
        dh, dw, avg, count_pad);
    return launched();
}

} // extern "C"
