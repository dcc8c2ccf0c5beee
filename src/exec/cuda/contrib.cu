// CUDA kernels of the com.microsoft ops the fusion passes emit
// (contrib_kern.h has the contracts; docs/EXECUTOR.md "Contrib ops and
// MultiHeadAttention on the GPU"). Float32 math, 64-bit index arithmetic.
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include <type_traits>

#include "contrib_kern.h"

namespace {

constexpr int kThreads = 256;

unsigned grid_for(int64_t n)
{
    int64_t b = (n + kThreads - 1) / kThreads;
    if (b < 1)
        b = 1;
    return (unsigned)(b > 65535 * 16 ? 65535 * 16 : b);   // grid-stride loops cover the rest
}

int done(void)
{
    return (int)cudaGetLastError();
}

__device__ __forceinline__ int64_t index_at(const void *p, int is32, int64_t i)
{
    return is32 ? (int64_t)((const int32_t *)p)[i] : ((const int64_t *)p)[i];
}

__global__ void k_bias_gelu(const float *x, const float *bias, float *y, int64_t n, int64_t h,
                            int form, float alpha)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        float v = x[i] + (bias ? bias[i % h] : 0.f);
        if (form == 2) {
            y[i] = v / (1.f + expf(-alpha * v));
            continue;
        }
        float t = form ? tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v))
                       : erff(v * 0.7071067811865476f);
        y[i] = 0.5f * v * (1.f + t);
    }
}

__global__ void k_embed_sum(const void *ids, int ids32, const void *seg, int seg32,
                            const void *pid, int pid32, int pid_row, const float *word,
                            int64_t n_word, const float *pos, int64_t n_pos, const float *segw,
                            int64_t n_seg, float *y, int64_t rows, int64_t s, int64_t h)
{
    int64_t n = rows * h;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t t = i / h, c = i % h;
        int64_t w = index_at(ids, ids32, t);
        int64_t p = pid ? index_at(pid, pid32, pid_row ? t % s : t) : t % s;
        float acc = 0.f;
        if (w >= 0 && w < n_word)
            acc += word[w * h + c];
        if (p >= 0 && p < n_pos)
            acc += pos[p * h + c];
        if (seg) {
            int64_t g = index_at(seg, seg32, t);
            if (g >= 0 && g < n_seg)
                acc += segw[g * h + c];
        }
        y[i] = acc;
    }
}

__global__ void k_mask_count(const void *mask, int mask32, int32_t *y, int64_t b, int64_t s)
{
    for (int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; r < b;
         r += (int64_t)gridDim.x * blockDim.x) {
        int32_t c = 0;
        for (int64_t j = 0; mask && j < s; j++)
            c += index_at(mask, mask32, r * s + j) != 0;
        y[r] = c;
    }
}

constexpr int kMhaQ = 16;     // queries per block (4 warps x 4 rows)
constexpr int kMhaK = 32;     // keys per tile (one per lane)
constexpr int kMhaD = 128;    // largest head size
constexpr int kMhaRows = kMhaQ / 4;

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

struct MhaArgs {
    const float *q, *k, *v, *bias, *ab;
    const int32_t *kpm;
    float *y;
    int64_t heads, sq, sk, ab_b, ab_h;
    int hs, vs;
    float scale, mfv;
    int causal;
};

// One block: kMhaQ queries of one (batch, head). Lane j scores key j of the
// tile; lane l owns output dims l, l+32, l+64, l+96. K and V rows in shared
// memory are padded by one float so lanes reading "their" key row hit
// distinct banks. Masks are additive (mfv, attention_bias) as in the CPU
// kernel; only the causal mask and the tile's tail exclude keys.
__global__ void __launch_bounds__(128) k_mha(MhaArgs a)
{
    __shared__ float ks[kMhaK][kMhaD + 1];
    __shared__ float vsm[kMhaK][kMhaD + 1];
    __shared__ float qs[kMhaQ][kMhaD];
    int64_t bh = blockIdx.y, b = bh / a.heads, h = bh % a.heads;
    int64_t q0 = (int64_t)blockIdx.x * kMhaQ;
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int64_t dq = a.heads * a.hs, dv = a.heads * a.vs;
    const float *qb = a.bias ? a.bias + h * a.hs : nullptr;
    const float *kb = a.bias ? a.bias + dq + h * a.hs : nullptr;
    const float *vb = a.bias ? a.bias + 2 * dq + h * a.vs : nullptr;
    for (int i = threadIdx.x; i < kMhaQ * a.hs; i += blockDim.x) {
        int r = i / a.hs, c = i % a.hs;
        int64_t qi = q0 + r;
        qs[r][c] = qi < a.sq ? a.q[(b * a.sq + qi) * dq + h * a.hs + c] + (qb ? qb[c] : 0.f)
                             : 0.f;
    }
    const float *abr = nullptr;
    if (a.ab)
        abr = a.ab + ((a.ab_b == 1 ? 0 : b) * a.ab_h + (a.ab_h == 1 ? 0 : h)) * a.sq * a.sk;
    float m[kMhaRows], l[kMhaRows], o[kMhaRows][4];
#pragma unroll
    for (int r = 0; r < kMhaRows; r++) {
        m[r] = -INFINITY;
        l[r] = 0.f;
#pragma unroll
        for (int c = 0; c < 4; c++)
            o[r][c] = 0.f;
    }
    for (int64_t t0 = 0; t0 < a.sk; t0 += kMhaK) {
        __syncthreads();   // the previous tile is consumed (and qs is loaded)
        int wmax = a.hs > a.vs ? a.hs : a.vs;
        for (int i = threadIdx.x; i < kMhaK * wmax; i += blockDim.x) {
            int r = i / wmax, c = i % wmax;
            int64_t j = t0 + r;
            bool in = j < a.sk;
            if (c < a.hs)
                ks[r][c] = in ? a.k[(b * a.sk + j) * dq + h * a.hs + c] + (kb ? kb[c] : 0.f) : 0.f;
            if (c < a.vs)
                vsm[r][c] = in ? a.v[(b * a.sk + j) * dv + h * a.vs + c] + (vb ? vb[c] : 0.f)
                               : 0.f;
        }
        __syncthreads();
        // Unrolled (no early exit) so that m, l and o stay in registers; the
        // conditions are the same for the whole warp.
#pragma unroll
        for (int r = 0; r < kMhaRows; r++) {
            int qr = warp * kMhaRows + r;
            int64_t qi = q0 + qr, j = t0 + lane;
            if (qi < a.sq) {
                bool keep = j < a.sk && (!a.causal || j <= qi);
                float sc = -INFINITY;
                if (keep) {
                    float acc = 0.f;
                    for (int c = 0; c < a.hs; c++)
                        acc += qs[qr][c] * ks[lane][c];
                    sc = acc * a.scale;
                    if (a.kpm && a.kpm[b * a.sk + j] == 0)
                        sc += a.mfv;
                    if (abr)
                        sc += abr[qi * a.sk + j];
                }
                float mn = fmaxf(m[r], warp_max(sc));
                if (mn != -INFINITY) {   // else every key so far is excluded
                    float p = keep ? __expf(sc - mn) : 0.f;
                    float alpha = m[r] == -INFINITY ? 0.f : __expf(m[r] - mn);
                    l[r] = l[r] * alpha + warp_sum(p);
#pragma unroll
                    for (int c = 0; c < 4; c++)
                        o[r][c] *= alpha;
                    for (int jj = 0; jj < kMhaK; jj++) {
                        float pj = __shfl_sync(0xffffffffu, p, jj);
#pragma unroll
                        for (int c = 0; c < 4; c++) {
                            int dd = lane + 32 * c;
                            if (dd < a.vs)
                                o[r][c] += pj * vsm[jj][dd];
                        }
                    }
                    m[r] = mn;
                }
            }
        }
    }
#pragma unroll
    for (int r = 0; r < kMhaRows; r++) {
        int64_t qi = q0 + warp * kMhaRows + r;
        if (qi >= a.sq)
            continue;
        float inv = l[r] > 0.f ? 1.f / l[r] : 0.f;
        float *yr = a.y + (b * a.sq + qi) * dv + h * a.vs;
#pragma unroll
        for (int c = 0; c < 4; c++) {
            int dd = lane + 32 * c;
            if (dd < a.vs)
                yr[dd] = o[r][c] * inv;
        }
    }
}

struct MaskDims {
    int rank;
    int64_t d[8], as[8], bs[8];
};

template <typename T>
__device__ __forceinline__ bool cmp_op(int op, T a, T b)
{
    switch (op) {
    case OX_CK_EQ: return a == b;
    case OX_CK_LT: return a < b;
    case OX_CK_LE: return a <= b;
    case OX_CK_GT: return a > b;
    default: return a >= b;
    }
}

// Comparisons and logical ops write bool (one byte, 0/1); IADD/ISUB/IMUL
// write T. Unsigned arithmetic wraps as the CPU's two's complement does.
template <typename T>
__global__ void k_mask_op(int op, const T *a, const T *b, void *y, MaskDims m, int64_t n)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = i, ai = 0, bi = 0;
        for (int d = m.rank - 1; d >= 0; d--) {
            int64_t c = r % m.d[d];
            r /= m.d[d];
            ai += c * m.as[d];
            bi += c * m.bs[d];
        }
        T x = a[ai], z = b ? b[bi] : T(0);
        if (op >= OX_CK_IADD) {
            if constexpr (std::is_integral<T>::value) {
                typedef typename std::make_unsigned<T>::type U;
                U ux = (U)x, uz = (U)z;
                U v = op == OX_CK_IADD ? ux + uz : op == OX_CK_ISUB ? ux - uz : ux * uz;
                ((T *)y)[i] = (T)v;
            }
        } else if (op >= OX_CK_AND) {
            bool p = x != T(0), q = z != T(0);
            ((uint8_t *)y)[i] = op == OX_CK_AND ? p && q : op == OX_CK_OR ? p || q
                                : op == OX_CK_XOR ? p != q : !p;
        } else {
            ((uint8_t *)y)[i] = cmp_op(op, x, z);
        }
    }
}

} // namespace

extern "C" {

int ox_ck_mask_op(int op, int dt, const void *a, const void *b, void *y, int rank,
                  const int64_t *dims, const int64_t *astr, const int64_t *bstr, int64_t n,
                  void *stream)
{
    if (n <= 0)
        return 0;
    if (rank > 8 || rank < 0)
        return (int)cudaErrorInvalidValue;
    MaskDims m{};
    m.rank = rank;
    for (int d = 0; d < rank; d++) {
        m.d[d] = dims[d];
        m.as[d] = astr[d];
        m.bs[d] = bstr ? bstr[d] : 0;
    }
    cudaStream_t s = (cudaStream_t)stream;
    switch (dt) {
    case 1:   // float32: comparisons only
        if (op >= OX_CK_AND)
            return (int)cudaErrorInvalidValue;
        k_mask_op<<<grid_for(n), kThreads, 0, s>>>(op, (const float *)a, (const float *)b, y,
                                                   m, n);
        break;
    case 6:
        k_mask_op<<<grid_for(n), kThreads, 0, s>>>(op, (const int32_t *)a, (const int32_t *)b,
                                                   y, m, n);
        break;
    case 7:
        k_mask_op<<<grid_for(n), kThreads, 0, s>>>(op, (const int64_t *)a, (const int64_t *)b,
                                                   y, m, n);
        break;
    case 9:   // bool: Equal and the logical ops
        k_mask_op<<<grid_for(n), kThreads, 0, s>>>(op, (const uint8_t *)a, (const uint8_t *)b,
                                                   y, m, n);
        break;
    default:
        return (int)cudaErrorInvalidValue;
    }
    return done();
}

int ox_ck_bias_gelu(const float *x, const float *bias, float *y, int64_t n, int64_t h,
                    int form, float alpha, void *stream)
{
    if (n <= 0)
        return 0;
    if (bias && h <= 0)
        return (int)cudaErrorInvalidValue;
    k_bias_gelu<<<grid_for(n), kThreads, 0, (cudaStream_t)stream>>>(x, bias, y, n, h, form,
                                                                     alpha);
    return done();
}

int ox_ck_embed_sum(const void *ids, int ids32, const void *seg, int seg32, const void *pid,
                    int pid32, int pid_row, const float *word, int64_t n_word, const float *pos,
                    int64_t n_pos, const float *segw, int64_t n_seg, float *y, int64_t b,
                    int64_t s, int64_t h, void *stream)
{
    if (b * s * h <= 0)
        return 0;
    k_embed_sum<<<grid_for(b * s * h), kThreads, 0, (cudaStream_t)stream>>>(
        ids, ids32, seg, seg32, pid, pid32, pid_row, word, n_word, pos, n_pos, segw, n_seg, y,
        b * s, s, h);
    return done();
}

int ox_ck_mask_count(const void *mask, int mask32, int32_t *y, int64_t b, int64_t s,
                     void *stream)
{
    if (b <= 0)
        return 0;
    k_mask_count<<<grid_for(b), kThreads, 0, (cudaStream_t)stream>>>(mask, mask32, y, b, s);
    return done();
}

int ox_ck_mha(const float *q, const float *k, const float *v, const float *bias,
              const int32_t *kpm, const float *ab, int64_t ab_b, int64_t ab_h, float *y,
              int64_t b, int64_t heads, int64_t sq, int64_t sk, int64_t hs, int64_t vs,
              float scale, float mfv, int causal, void *stream)
{
    if (b * heads * sq <= 0 || vs <= 0)
        return 0;
    if (hs <= 0 || hs > kMhaD || vs > kMhaD || b * heads > 65535)
        return (int)cudaErrorInvalidValue;
    MhaArgs a{q, k, v, bias, ab, kpm, y, heads, sq, sk, ab_b, ab_h, (int)hs, (int)vs,
              scale, mfv, causal};
    dim3 grid((unsigned)((sq + kMhaQ - 1) / kMhaQ), (unsigned)(b * heads));
    k_mha<<<grid, 128, 0, (cudaStream_t)stream>>>(a);
    return done();
}

} // extern "C"
