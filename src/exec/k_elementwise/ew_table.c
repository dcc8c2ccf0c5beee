/* The elementwise kernel table. Each kernel handles every opset from its
 * since_version on, branching on ctx->opset where semantics changed (legacy
 * broadcast before 7, Clip attributes before 11, Cast's string `to`). */
#include "exec/k_elementwise/ew.h"

#define E(op, since) {"", #op, since, ox__k_##op},

const ox_kernel_entry ox_kernels_elementwise[] = {
    E(Abs, 1) E(Neg, 1) E(Reciprocal, 1) E(Floor, 1) E(Ceil, 1) E(Round, 11)
    E(Sqrt, 1) E(Exp, 1) E(Log, 1) E(Sin, 7) E(Cos, 7) E(Tan, 7) E(Asin, 7)
    E(Acos, 7) E(Atan, 7) E(Sinh, 9) E(Cosh, 9) E(Asinh, 9) E(Acosh, 9)
    E(Atanh, 9) E(Erf, 9) E(Sign, 9) E(IsNaN, 9) E(IsInf, 10) E(Not, 1)
    E(BitwiseNot, 18) E(Relu, 1) E(LeakyRelu, 1) E(Elu, 1) E(Selu, 1)
    E(Celu, 12) E(Sigmoid, 1) E(HardSigmoid, 1) E(HardSwish, 14)
    E(Softplus, 1) E(Softsign, 1) E(Tanh, 1) E(ThresholdedRelu, 1) E(Mish, 18)
    E(Gelu, 20) E(Shrink, 9) E(Clip, 1)
    E(Add, 1) E(Sub, 1) E(Mul, 1) E(Div, 1) E(Pow, 1) E(Mod, 10) E(Max, 1)
    E(Min, 1) E(Sum, 1) E(Mean, 1) E(BitShift, 11) E(BitwiseAnd, 18)
    E(BitwiseOr, 18) E(BitwiseXor, 18) E(And, 1) E(Or, 1) E(Xor, 1)
    E(Equal, 1) E(Greater, 1) E(GreaterOrEqual, 12) E(Less, 1)
    E(LessOrEqual, 12) E(PRelu, 1) E(Where, 9) E(Cast, 1) E(CastLike, 15)
    E(Swish, 24) E(SwiGLU, 28)
    {0, 0, 0, 0},
};
