// Our own CUDA kernels for the CUDA backend (kern.h has the contracts;
// docs/EXECUTOR.md "CUDA backend"). Float32 math; copies move raw elements
// of 1, 2, 4 or 8 bytes. Index arithmetic is 64-bit throughout: shapes come
// from models and may exceed 2^31 elements.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include <type_traits>

#include "kern.h"

namespace {

// kThreads, Dims/Strides, grid_for, unary_op, binary_op and the elementwise
// kernels: shared with the float16 kernels (kernels_half.cu).
#include "kern_ops.cuh"

int done(void)
{
    return (int)cudaGetLastError();
}

template <typename T>
__global__ void k_copy(const T *x, T *y, Dims d, int64_t xoff, Strides xs, int64_t yoff,
                       Strides ys, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = i, ix = xoff, iy = yoff;
        for (int k = d.rank - 1; k >= 0; k--) {
            int64_t q = r % d.d[k];
            r /= d.d[k];
            ix += q * xs.s[k];
            iy += q * ys.s[k];
        }
        y[iy] = x[ix];
    }
}

template <typename T, typename I>
__global__ void k_gather(const T *data, const I *idx, T *y, int64_t outer, int64_t axis_len,
                         int64_t inner, int64_t n_idx)
{
    int64_t n = outer * n_idx * inner;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t in = i % inner, j = (i / inner) % n_idx, o = i / (inner * n_idx);
        int64_t k = (int64_t)idx[j];
        if (k < 0)
            k += axis_len;
        y[i] = (k >= 0 && k < axis_len) ? data[(o * axis_len + k) * inner + in] : T(0);
    }
}

// Block-wide reduction of one float per thread (sum or max).
__device__ float block_sum(float v)
{
    __shared__ float sh[32];
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    __syncthreads();
    if (lane == 0)
        sh[w] = v;
    __syncthreads();
    int nw = (blockDim.x + 31) >> 5;
    v = threadIdx.x < nw ? sh[threadIdx.x] : 0.f;
    if (w == 0)
        for (int o = 16; o > 0; o >>= 1)
            v += __shfl_xor_sync(0xffffffffu, v, o);
    __shared__ float res;
    if (threadIdx.x == 0)
        res = v;
    __syncthreads();
    return res;
}

__device__ float block_max(float v)
{
    __shared__ float sh[32];
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    __syncthreads();
    if (lane == 0)
        sh[w] = v;
    __syncthreads();
    int nw = (blockDim.x + 31) >> 5;
    v = threadIdx.x < nw ? sh[threadIdx.x] : -INFINITY;
    if (w == 0)
        for (int o = 16; o > 0; o >>= 1)
            v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    __shared__ float res;
    if (threadIdx.x == 0)
        res = v;
    __syncthreads();
    return res;
}

__device__ float block_min(float v)
{
    return -block_max(-v);
}

// One block per output element.
__global__ void k_reduce(int op, const float *x, float *y, int64_t n_out, Dims kd, Strides ks,
                         Dims rd, Strides rs, int64_t n_red)
{
    for (int64_t j = blockIdx.x; j < n_out; j += gridDim.x) {
        int64_t base = 0, r = j;
        for (int k = kd.rank - 1; k >= 0; k--) {
            base += (r % kd.d[k]) * ks.s[k];
            r /= kd.d[k];
        }
        bool mx = op == OX_CK_RMAX, mn = op == OX_CK_RMIN;
        float acc = mx ? -INFINITY : mn ? INFINITY : 0.f;
        for (int64_t t = threadIdx.x; t < n_red; t += blockDim.x) {
            int64_t off = base, q = t;
            for (int k = rd.rank - 1; k >= 0; k--) {
                off += (q % rd.d[k]) * rs.s[k];
                q /= rd.d[k];
            }
            float v = x[off];
            if (mx)
                acc = fmaxf(acc, v);
            else if (mn)
                acc = fminf(acc, v);
            else if (op == OX_CK_RSUMSQ || op == OX_CK_RL2)
                acc += v * v;
            else
                acc += v;
        }
        float v = mx ? block_max(acc) : mn ? block_min(acc) : block_sum(acc);
        if (threadIdx.x == 0) {
            if (op == OX_CK_RMEAN)
                v /= (float)n_red;
            else if (op == OX_CK_RL2)
                v = sqrtf(v);
            y[j] = v;
        }
        __syncthreads();
    }
}

__global__ void k_softmax(const float *x, float *y, int64_t outer, int64_t len, int64_t inner,
                          int lg)
{
    for (int64_t row = blockIdx.x; row < outer * inner; row += gridDim.x) {
        int64_t o = row / inner, in = row % inner;
        const float *xr = x + o * len * inner + in;
        float *yr = y + o * len * inner + in;
        float m = -INFINITY;
        for (int64_t t = threadIdx.x; t < len; t += blockDim.x)
            m = fmaxf(m, xr[t * inner]);
        m = block_max(m);
        float s = 0.f;
        for (int64_t t = threadIdx.x; t < len; t += blockDim.x)
            s += expf(xr[t * inner] - m);
        s = block_sum(s);
        float ls = logf(s);
        for (int64_t t = threadIdx.x; t < len; t += blockDim.x) {
            float v = xr[t * inner] - m;
            yr[t * inner] = lg ? v - ls : expf(v) / s;
        }
        __syncthreads();
    }
}

__global__ void k_layernorm(const float *x, const float *skip, const float *bias,
                            const float *gamma, const float *beta, float *y, float *sum_out,
                            int64_t rows, int64_t cols, float eps, int rms)
{
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const float *xr = x + row * cols;
        const float *sr = skip ? skip + row * cols : nullptr;
        float *yr = y + row * cols;
        // Two passes (mean, then squared deviations): E[h^2] - mean^2 loses
        // digits when the mean is large against the spread.
        float s = 0.f;
        if (!rms) {
            for (int64_t t = threadIdx.x; t < cols; t += blockDim.x)
                s += xr[t] + (sr ? sr[t] : 0.f) + (bias ? bias[t] : 0.f);
            s = block_sum(s);
        }
        float mean = rms ? 0.f : s / (float)cols;
        float s2 = 0.f;
        for (int64_t t = threadIdx.x; t < cols; t += blockDim.x) {
            float h = xr[t] + (sr ? sr[t] : 0.f) + (bias ? bias[t] : 0.f) - mean;
            s2 += h * h;
        }
        s2 = block_sum(s2);
        float inv = rsqrtf(s2 / (float)cols + eps);
        for (int64_t t = threadIdx.x; t < cols; t += blockDim.x) {
            float h = xr[t] + (sr ? sr[t] : 0.f) + (bias ? bias[t] : 0.f);
            if (sum_out)
                sum_out[row * cols + t] = h;
            yr[t] = (h - mean) * inv * gamma[t] + (beta ? beta[t] : 0.f);
        }
        __syncthreads();
    }
}

__global__ void k_batchnorm(const float *x, float *y, const float *scale, const float *bias,
                            const float *mean, const float *var, float eps, int64_t n,
                            int64_t c, int64_t inner)
{
    int64_t total = n * c * inner;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t ch = (i / inner) % c;
        y[i] = (x[i] - mean[ch]) * rsqrtf(var[ch] + eps) * scale[ch] + bias[ch];
    }
}

__global__ void k_bias_act(float *y, const float *bias, int64_t n, int64_t c, int64_t inner,
                           int act, float a, float b)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        float v = y[i] + (bias ? bias[(i / inner) % c] : 0.f);
        y[i] = unary_op(act, v, a, b);
    }
}

__global__ void k_attn_softmax(float *s, const int32_t *mask, int64_t batch, int64_t heads,
                               int64_t sq, int64_t sk, float scale, int causal)
{
    int64_t rows = batch * heads * sq;
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        int64_t q = row % sq, b = row / (sq * heads);
        float *r = s + row * sk;
        float m = -INFINITY;
        for (int64_t t = threadIdx.x; t < sk; t += blockDim.x) {
            bool keep = (!mask || mask[b * sk + t] != 0) && (!causal || t <= q + sk - sq);
            float v = keep ? r[t] * scale : -INFINITY;
            r[t] = v;
            m = fmaxf(m, v);
        }
        m = block_max(m);
        float sum = 0.f;
        for (int64_t t = threadIdx.x; t < sk; t += blockDim.x)
            sum += m == -INFINITY ? 0.f : expf(r[t] - m);
        sum = block_sum(sum);
        for (int64_t t = threadIdx.x; t < sk; t += blockDim.x)
            r[t] = (m == -INFINITY || sum == 0.f) ? 0.f : expf(r[t] - m) / sum;
        __syncthreads();
    }
}

__global__ void k_pool2d(const float *x, float *y, int64_t n, int64_t c, int64_t h, int64_t w,
                         int64_t oh, int64_t ow, int kh, int kw, int sh, int sw, int ph, int pw,
                         int ph1, int pw1, int dh, int dw, int avg, int count_pad)
{
    int64_t total = n * c * oh * ow;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t ox = i % ow, oy = (i / ow) % oh, nc = i / (ow * oh);
        const float *xp = x + nc * h * w;
        float acc = avg ? 0.f : -INFINITY;
        int cnt = 0;
        for (int ky = 0; ky < kh; ky++) {
            int64_t iy = oy * sh - ph + (int64_t)ky * dh;
            for (int kx = 0; kx < kw; kx++) {
                int64_t ix = ox * sw - pw + (int64_t)kx * dw;
                bool in = iy >= 0 && iy < h && ix >= 0 && ix < w;
                if (in) {
                    float v = xp[iy * w + ix];
                    acc = avg ? acc + v : fmaxf(acc, v);
                    cnt++;
                } else if (count_pad && iy < h + ph1 && ix < w + pw1) {
                    cnt++;
                }
            }
        }
        y[i] = avg ? (cnt ? acc / (float)cnt : 0.f) : acc;
    }
}

template <typename A, typename B>
__global__ void k_cast(const A *x, B *y, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        if constexpr (std::is_same<B, bool>::value)
            y[i] = x[i] != A(0);
        else
            y[i] = (B)x[i];
    }
}

template <typename A>
int cast_to(const A *x, void *y, int to, int64_t n, cudaStream_t s)
{
    unsigned g = grid_for(n);
    switch (to) {
    case OX_CK_T_F32: k_cast<A, float><<<g, kThreads, 0, s>>>(x, (float *)y, n); break;
    case OX_CK_T_U8: k_cast<A, uint8_t><<<g, kThreads, 0, s>>>(x, (uint8_t *)y, n); break;
    case OX_CK_T_I8: k_cast<A, int8_t><<<g, kThreads, 0, s>>>(x, (int8_t *)y, n); break;
    case OX_CK_T_I32: k_cast<A, int32_t><<<g, kThreads, 0, s>>>(x, (int32_t *)y, n); break;
    case OX_CK_T_I64: k_cast<A, int64_t><<<g, kThreads, 0, s>>>(x, (int64_t *)y, n); break;
    case OX_CK_T_BOOL: k_cast<A, bool><<<g, kThreads, 0, s>>>(x, (bool *)y, n); break;
    case OX_CK_T_F64: k_cast<A, double><<<g, kThreads, 0, s>>>(x, (double *)y, n); break;
    default: return (int)cudaErrorInvalidValue;
    }
    return done();
}

template <typename T>
void launch_copy(const void *x, void *y, Dims d, int64_t xoff, Strides xs, int64_t yoff,
                 Strides ys, int64_t n, unsigned g, cudaStream_t s)
{
    k_copy<T><<<g, kThreads, 0, s>>>((const T *)x, (T *)y, d, xoff, xs, yoff, ys, n);
}

__global__ void k_f32_to_f16(const float *x, __half *y, int64_t n)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] = __float2half_rn(x[i]);
}

__global__ void k_f16_to_f32(const __half *x, float *y, int64_t n)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] = __half2float(x[i]);
}

constexpr int kFlashQ = 16;     // queries per block (4 warps x 4 rows)
constexpr int kFlashK = 32;     // keys per tile (one per lane)
constexpr int kFlashD = 128;    // largest head size
constexpr int kFlashRows = kFlashQ / 4;

__device__ float warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

__device__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// One block: kFlashQ queries of one (batch, head). Lane j scores key j of
// the tile; lane l owns output dims l, l+32, l+64, l+96. Rows of K and V in
// shared memory are padded by one float so lanes reading "their" key row
// hit distinct banks.
__global__ void __launch_bounds__(128) k_flash_attn(const float *q, const float *k,
                                                    const float *v, const int32_t *mask,
                                                    float *y, int64_t heads, int64_t s, int d,
                                                    float scale, int causal)
{
    __shared__ float ks[kFlashK][kFlashD + 1];
    __shared__ float vs[kFlashK][kFlashD + 1];
    __shared__ float qs[kFlashQ][kFlashD];
    int64_t bh = blockIdx.y, b = bh / heads, h = bh % heads;
    int64_t q0 = (int64_t)blockIdx.x * kFlashQ;
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const float *qb = q + bh * s * d, *kb = k + bh * s * d, *vb = v + bh * s * d;
    for (int i = threadIdx.x; i < kFlashQ * d; i += blockDim.x) {
        int r = i / d, c = i % d;
        qs[r][c] = q0 + r < s ? qb[(q0 + r) * d + c] : 0.f;
    }
    float m[kFlashRows], l[kFlashRows], o[kFlashRows][4];
#pragma unroll
    for (int r = 0; r < kFlashRows; r++) {
        m[r] = -INFINITY;
        l[r] = 0.f;
#pragma unroll
        for (int c = 0; c < 4; c++)
            o[r][c] = 0.f;
    }
    for (int64_t t0 = 0; t0 < s; t0 += kFlashK) {
        __syncthreads();   // the previous tile is consumed (and qs is loaded)
        for (int i = threadIdx.x; i < kFlashK * d; i += blockDim.x) {
            int r = i / d, c = i % d;
            bool in = t0 + r < s;
            ks[r][c] = in ? kb[(t0 + r) * d + c] : 0.f;
            vs[r][c] = in ? vb[(t0 + r) * d + c] : 0.f;
        }
        __syncthreads();
        // Unrolled (no early exit) so that m, l and o stay in registers;
        // the conditions are the same for the whole warp.
#pragma unroll
        for (int r = 0; r < kFlashRows; r++) {
            int qr = warp * kFlashRows + r;
            int64_t qi = q0 + qr, j = t0 + lane;
            if (qi < s) {
                bool keep = j < s && (!mask || mask[b * s + j] != 0) && (!causal || j <= qi);
                float sc = -INFINITY;
                if (keep) {
                    float acc = 0.f;
                    for (int c = 0; c < d; c++)
                        acc += qs[qr][c] * ks[lane][c];
                    sc = acc * scale;
                }
                float mn = fmaxf(m[r], warp_max(sc));
                if (mn != -INFINITY) {   // else every key so far is masked
                    float p = keep ? __expf(sc - mn) : 0.f;
                    float alpha = m[r] == -INFINITY ? 0.f : __expf(m[r] - mn);
                    l[r] = l[r] * alpha + warp_sum(p);
#pragma unroll
                    for (int c = 0; c < 4; c++)
                        o[r][c] *= alpha;
                    for (int jj = 0; jj < kFlashK; jj++) {
                        float pj = __shfl_sync(0xffffffffu, p, jj);
#pragma unroll
                        for (int c = 0; c < 4; c++) {
                            int dd = lane + 32 * c;
                            if (dd < d)
                                o[r][c] += pj * vs[jj][dd];
                        }
                    }
                    m[r] = mn;
                }
            }
        }
    }
#pragma unroll
    for (int r = 0; r < kFlashRows; r++) {
        int64_t qi = q0 + warp * kFlashRows + r;
        if (qi >= s)
            continue;
        float inv = l[r] > 0.f ? 1.f / l[r] : 0.f;
        float *yr = y + ((b * s + qi) * heads + h) * d;
#pragma unroll
        for (int c = 0; c < 4; c++) {
            int dd = lane + 32 * c;
            if (dd < d)
                yr[dd] = o[r][c] * inv;
        }
    }
}

} // namespace

extern "C" {

int ox_ck_f32_to_f16(const float *x, uint16_t *y, int64_t n, void *stream)
{
    if (n <= 0)
        return 0;
    k_f32_to_f16<<<grid_for(n), kThreads, 0, (cudaStream_t)stream>>>(x, (__half *)y, n);
    return done();
}

int ox_ck_f16_to_f32(const uint16_t *x, float *y, int64_t n, void *stream)
{
    if (n <= 0)
        return 0;
    k_f16_to_f32<<<grid_for(n), kThreads, 0, (cudaStream_t)stream>>>((const __half *)x, y, n);
    return done();
}

int ox_ck_flash_attn(const float *q, const float *k, const float *v, const int32_t *mask,
                     float *y, int64_t batch, int64_t heads, int64_t s, int64_t d, float scale,
                     int causal, void *stream)
{
    if (batch * heads * s <= 0 || d <= 0)
        return 0;
    if (d > kFlashD || batch * heads > 65535)
        return (int)cudaErrorInvalidValue;
    dim3 grid((unsigned)((s + kFlashQ - 1) / kFlashQ), (unsigned)(batch * heads));
    k_flash_attn<<<grid, 128, 0, (cudaStream_t)stream>>>(q, k, v, mask, y, heads, s, (int)d,
                                                         scale, causal);
    return done();
}

int ox_ck_unary(int op, const float *x, float *y, int64_t n, float a, float b, void *stream)
{
    if (n <= 0)
        return 0;
    k_unary<float><<<grid_for(n), kThreads, 0, (cudaStream_t)stream>>>(op, x, y, n, a, b);
    return done();
}

int ox_ck_binary(int op, const float *a, const float *b, float *y, int rank,
                 const int64_t *dims, const int64_t *astr, const int64_t *bstr, int64_t n,
                 void *stream)
{
    if (n <= 0)
        return 0;
    // Contiguous same-shape operands take the flat kernel.
    bool flat = true;
    int64_t c = 1;
    for (int k = rank - 1; k >= 0; k--) {
        if (dims[k] != 1 && (astr[k] != c || bstr[k] != c))
            flat = false;
        c *= dims[k];
    }
    if (flat) {
        k_binary_flat<float><<<grid_for(n), kThreads, 0, (cudaStream_t)stream>>>(op, a, b, y, n);
    } else {
        k_binary<float><<<grid_for(n), kThreads, 0, (cudaStream_t)stream>>>(
            op, a, b, y, make_dims(rank, dims), make_str(rank, astr), make_str(rank, bstr), n);
    }
    return done();
}

int ox_ck_where(const uint8_t *c, const void *x, const void *z, void *y, int rank,
                const int64_t *dims, const int64_t *cstr, const int64_t *xstr,
                const int64_t *zstr, int64_t n, void *stream)
{
    if (n <= 0)
        return 0;
    k_where<uint32_t><<<grid_for(n), kThreads, 0, (cudaStream_t)stream>>>(
        c, (const uint32_t *)x, (const uint32_t *)z, (uint32_t *)y, make_dims(rank, dims),
        make_str(rank, cstr), make_str(rank, xstr), make_str(rank, zstr), n);
    return done();
}

int ox_ck_copy(const void *x, void *y, int elem, int rank, const int64_t *dims, int64_t xoff,
               const int64_t *xstr, int64_t yoff, const int64_t *ystr, int64_t n, void *stream)
{
    if (n <= 0)
        return 0;
    cudaStream_t s = (cudaStream_t)stream;
    Dims d = make_dims(rank, dims);
    Strides xs = make_str(rank, xstr), ys = make_str(rank, ystr);
    unsigned g = grid_for(n);
    switch (elem) {
    case 1: launch_copy<uint8_t>(x, y, d, xoff, xs, yoff, ys, n, g, s); break;
    case 2: launch_copy<uint16_t>(x, y, d, xoff, xs, yoff, ys, n, g, s); break;
    case 4: launch_copy<uint32_t>(x, y, d, xoff, xs, yoff, ys, n, g, s); break;
    case 8: launch_copy<uint64_t>(x, y, d, xoff, xs, yoff, ys, n, g, s); break;
    default: return (int)cudaErrorInvalidValue;
    }
    return done();
}

int ox_ck_cast(const void *x, int from, void *y, int to, int64_t n, void *stream)
{
    if (n <= 0)
        return 0;
    cudaStream_t s = (cudaStream_t)stream;
    switch (from) {
    case OX_CK_T_F32: return cast_to((const float *)x, y, to, n, s);
    case OX_CK_T_U8: return cast_to((const uint8_t *)x, y, to, n, s);
    case OX_CK_T_I8: return cast_to((const int8_t *)x, y, to, n, s);
    case OX_CK_T_I32: return cast_to((const int32_t *)x, y, to, n, s);
    case OX_CK_T_I64: return cast_to((const int64_t *)x, y, to, n, s);
    case OX_CK_T_BOOL: return cast_to((const bool *)x, y, to, n, s);
    case OX_CK_T_F64: return cast_to((const double *)x, y, to, n, s);
    default: return (int)cudaErrorInvalidValue;
    }
}

int ox_ck_gather(const void *data, const void *idx, int idx32, void *y, int elem, int64_t outer,
                 int64_t axis_len, int64_t inner, int64_t n_idx, void *stream)
{
    int64_t n = outer * n_idx * inner;
    if (n <= 0)
        return 0;
    cudaStream_t s = (cudaStream_t)stream;
    unsigned g = grid_for(n);
#define OX_GATHER(T)                                                                         \
    do {                                                                                     \
        if (idx32)                                                                           \
            k_gather<T, int32_t><<<g, kThreads, 0, s>>>((const T *)data, (const int32_t *)idx, \
                                                        (T *)y, outer, axis_len, inner, n_idx); \
        else                                                                                 \
            k_gather<T, int64_t><<<g, kThreads, 0, s>>>((const T *)data, (const int64_t *)idx, \
                                                        (T *)y, outer, axis_len, inner, n_idx); \
    } while (0)
    switch (elem) {
    case 1: OX_GATHER(uint8_t); break;
    case 2: OX_GATHER(uint16_t); break;
    case 4: OX_GATHER(uint32_t); break;
    case 8: OX_GATHER(uint64_t); break;
    default: return (int)cudaErrorInvalidValue;
    }
#undef OX_GATHER
    return done();
}

int ox_ck_reduce(int op, const float *x, float *y, int64_t n_out, int nk, const int64_t *kdims,
                 const int64_t *kstr, int nr, const int64_t *rdims, const int64_t *rstr,
                 int64_t n_red, void *stream)
{
    if (n_out <= 0)
        return 0;
    unsigned g = (unsigned)(n_out > 65535 * 16 ? 65535 * 16 : n_out);
    k_reduce<<<g, kThreads, 0, (cudaStream_t)stream>>>(op, x, y, n_out, make_dims(nk, kdims),
                                                       make_str(nk, kstr), make_dims(nr, rdims),
                                                       make_str(nr, rstr), n_red);
    return done();
}

int ox_ck_softmax(const float *x, float *y, int64_t outer, int64_t len, int64_t inner, int log,
                  void *stream)
{
    int64_t rows = outer * inner;
    if (rows <= 0 || len <= 0)
        return 0;
    unsigned g = (unsigned)(rows > 65535 * 16 ? 65535 * 16 : rows);
    int t = len >= 256 ? 256 : len > 64 ? 128 : 32;
    k_softmax<<<g, t, 0, (cudaStream_t)stream>>>(x, y, outer, len, inner, log);
    return done();
}

int ox_ck_layernorm(const float *x, const float *skip, const float *bias, const float *gamma,
                    const float *beta, float *y, float *sum_out, int64_t rows, int64_t cols,
                    float eps, int rms, void *stream)
{
    if (rows <= 0 || cols <= 0)
        return 0;
    unsigned g = (unsigned)(rows > 65535 * 16 ? 65535 * 16 : rows);
    int t = cols >= 256 ? 256 : cols > 64 ? 128 : 32;
    k_layernorm<<<g, t, 0, (cudaStream_t)stream>>>(x, skip, bias, gamma, beta, y, sum_out, rows,
                                                   cols, eps, rms);
    return done();
}

int ox_ck_batchnorm(const float *x, float *y, const float *scale, const float *bias,
                    const float *mean, const float *var, float eps, int64_t n, int64_t c,
                    int64_t inner, void *stream)
{
    int64_t total = n * c * inner;
    if (total <= 0)
        return 0;
    k_batchnorm<<<grid_for(total), kThreads, 0, (cudaStream_t)stream>>>(x, y, scale, bias, mean,
                                                                        var, eps, n, c, inner);
    return done();
}

int ox_ck_bias_act(float *y, const float *bias, int64_t n, int64_t c, int64_t inner, int act,
                   float a, float b, void *stream)
{
    if (n <= 0)
        return 0;
    k_bias_act<<<grid_for(n), kThreads, 0, (cudaStream_t)stream>>>(y, bias, n, c, inner, act, a,
                                                                   b);
    return done();
}

int ox_ck_attn_softmax(float *s, const int32_t *mask, int64_t batch, int64_t heads, int64_t sq,
                       int64_t sk, float scale, int causal, void *stream)
{
    int64_t rows = batch * heads * sq;
    if (rows <= 0 || sk <= 0)
        return 0;
    unsigned g = (unsigned)(rows > 65535 * 16 ? 65535 * 16 : rows);
    int t = sk >= 256 ? 256 : sk > 64 ? 128 : 32;
    k_attn_softmax<<<g, t, 0, (cudaStream_t)stream>>>(s, mask, batch, heads, sq, sk, scale,
                                                      causal);
    return done();
}

int ox_ck_pool2d(const float *x, float *y, int64_t n, int64_t c, int64_t h, int64_t w, int64_t oh,
                 int64_t ow, int kh, int kw, int sh, int sw, int ph, int pw, int ph1, int pw1,
                 int dh, int dw, int avg, int count_pad, void *stream)
{
    int64_t total = n * c * oh * ow;
    if (total <= 0)
        return 0;
    k_pool2d<<<grid_for(total), kThreads, 0, (cudaStream_t)stream>>>(
        x, y, n, c, h, w, oh, ow, kh, kw, sh, sw, ph, pw, ph1, pw1, dh, dw, avg, count_pad);
    return done();
}

} // extern "C"
