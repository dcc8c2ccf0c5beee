// What the float32 kernels (kernels.cu) and the float16 ones
// (kernels_half.cu) share: launch shapes, the elementwise operators in
// float32 math and the elementwise kernels templated on the element type
// (float16 widens on load and rounds once on store). Included inside each
// file's anonymous namespace; needs kern.h's operator codes, <cuda_fp16.h>
// and <math.h>.
#ifndef ONNXSCOPE_EXEC_CUDA_KERN_OPS_CUH
#define ONNXSCOPE_EXEC_CUDA_KERN_OPS_CUH

constexpr int kThreads = 256;

// Shapes and strides travel by value in a kernel parameter (no device
// allocation per launch).
struct Dims {
    int rank;
    int64_t d[OX_CK_MAX_RANK];
};
struct Strides {
    int64_t s[OX_CK_MAX_RANK];
};

Dims make_dims(int rank, const int64_t *d)
{
    Dims r{};
    r.rank = rank;
    for (int i = 0; i < rank && i < OX_CK_MAX_RANK; i++)
        r.d[i] = d[i];
    return r;
}

Strides make_str(int rank, const int64_t *s)
{
    Strides r{};
    for (int i = 0; i < rank && i < OX_CK_MAX_RANK; i++)
        r.s[i] = s ? s[i] : 0;
    return r;
}

unsigned grid_for(int64_t n)
{
    int64_t b = (n + kThreads - 1) / kThreads;
    if (b < 1)
        b = 1;
    // Grid-stride loops cover the rest.
    return (unsigned)(b > 65535 * 16 ? 65535 * 16 : b);
}

__device__ __forceinline__ float unary_op(int op, float x, float a, float b)
{
    switch (op) {
    case OX_CK_RELU: return x > 0.f ? x : 0.f;
    case OX_CK_SIGMOID: return 1.f / (1.f + expf(-x));
    case OX_CK_TANH: return tanhf(x);
    case OX_CK_EXP: return expf(x);
    case OX_CK_LOG: return logf(x);
    case OX_CK_SQRT: return sqrtf(x);
    case OX_CK_ERF: return erff(x);
    case OX_CK_NEG: return -x;
    case OX_CK_ABS: return fabsf(x);
    case OX_CK_RECIPROCAL: return 1.f / x;
    case OX_CK_CLIP: return fminf(fmaxf(x, a), b);
    case OX_CK_LEAKYRELU: return x < 0.f ? a * x : x;
    case OX_CK_GELU: return 0.5f * x * (1.f + erff(x * 0.70710678118654752f));
    case OX_CK_HARDSIGMOID: return fmaxf(0.f, fminf(1.f, a * x + b));
    case OX_CK_HARDSWISH: return x * fmaxf(0.f, fminf(1.f, x / 6.f + 0.5f));
    case OX_CK_FLOOR: return floorf(x);
    case OX_CK_GELU_TANH:
        return 0.5f * x * (1.f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
    case OX_CK_CEIL: return ceilf(x);
    default: return x;
    }
}

__device__ __forceinline__ float binary_op(int op, float x, float y)
{
    switch (op) {
    case OX_CK_ADD: return x + y;
    case OX_CK_SUB: return x - y;
    case OX_CK_MUL: return x * y;
    case OX_CK_DIV: return x / y;
    case OX_CK_POW: return y == 2.f ? x * x : powf(x, y);
    case OX_CK_MAX: return fmaxf(x, y);
    case OX_CK_MIN: return fminf(x, y);
    default: return x;
    }
}
// Elementwise kernels for both element types: loads widen to float32
// (to_f32), the math is the operators above, stores round once (from_f32).
__device__ __forceinline__ float to_f32(float v) { return v; }
__device__ __forceinline__ float to_f32(__half v) { return __half2float(v); }
template <typename T> __device__ __forceinline__ T from_f32(float v);
template <> __device__ __forceinline__ float from_f32<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_f32<__half>(float v)
{
    return __float2half_rn(v);
}

template <typename T>
__global__ void k_unary(int op, const T *x, T *y, int64_t n, float a, float b)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] = from_f32<T>(unary_op(op, to_f32(x[i]), a, b));
}

template <typename T>
__global__ void k_binary(int op, const T *a, const T *b, T *y, Dims d, Strides as, Strides bs,
                         int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = i, ia = 0, ib = 0;
        for (int k = d.rank - 1; k >= 0; k--) {
            int64_t q = r % d.d[k];
            r /= d.d[k];
            ia += q * as.s[k];
            ib += q * bs.s[k];
        }
        y[i] = from_f32<T>(binary_op(op, to_f32(a[ia]), to_f32(b[ib])));
    }
}

// Same-shape operands: no index decomposition.
template <typename T>
__global__ void k_binary_flat(int op, const T *a, const T *b, T *y, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] = from_f32<T>(binary_op(op, to_f32(a[i]), to_f32(b[i])));
}

// Where moves raw words (W: uint32_t for 4-byte elements, uint16_t for 2).
template <typename W>
__global__ void k_where(const uint8_t *c, const W *x, const W *z, W *y, Dims d, Strides cs,
                        Strides xs, Strides zs, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = i, ic = 0, ix = 0, iz = 0;
        for (int k = d.rank - 1; k >= 0; k--) {
            int64_t q = r % d.d[k];
            r /= d.d[k];
            ic += q * cs.s[k];
            ix += q * xs.s[k];
            iz += q * zs.s[k];
        }
        y[i] = c[ic] ? x[ix] : z[iz];
    }
}

#endif
