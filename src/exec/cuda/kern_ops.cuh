// The elementwise operators of our CUDA kernels in float32 math, shared by
// the float32 kernels (kernels.cu) and the float16 ones (kernels_half.cu,
// which widen, call these and round once). Included inside each file's
// anonymous namespace; needs kern.h's operator codes and <math.h>.
#ifndef ONNXSCOPE_EXEC_CUDA_KERN_OPS_CUH
#define ONNXSCOPE_EXEC_CUDA_KERN_OPS_CUH

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

#endif
