/* The operator registry: the one table of operator schemas (cONNXr/sqlite
 * style). Each line is (domain, op, since_version, inputs, outputs, attrs,
 * type constraints, summary, inference); lookup picks the highest
 * since_version not above the model's opset. Docs and --help read it too. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "onnxscope/ops.h"
#include "analysis/infer_internal.h"

/* Frequent type-constraint strings. */
#define TF   "T: float16|float|double|bfloat16"
#define TN   "T: numeric (int8..uint64, float16|float|double|bfloat16)"
#define TA   "T: any tensor type"
#define TI   "T: int8|int16|int32|int64|uint8|uint16|uint32|uint64"
#define TB   "T: bool"
#define TCMP "T: numeric; T1: bool"
#define TQ   "T1: float|float16|bfloat16|int32; T2: int8|uint8|int16|uint16|int4|uint4|float8*"

#define POOL_ATTRS "auto_pad:s=NOTSET, kernel_shape:ints!, pads:ints, strides:ints"
#define CONV_ATTRS "auto_pad:s=NOTSET, dilations:ints, group:i=1, kernel_shape:ints, pads:ints, strides:ints"
#define RNN_ATTRS "activation_alpha:floats, activation_beta:floats, activations:strings, clip:f, direction:s=forward, hidden_size:i"

#define U(op, v, doc) { "", op, v, "X:T", "Y:T", "", TF, doc, ox__infer_unary }
#define UA(op, v, attrs, doc) { "", op, v, "X:T", "Y:T", attrs, TF, doc, ox__infer_unary }
#define BIN(op, v, t, doc) { "", op, v, "A:T, B:T", "C:T", "", t, doc, ox__infer_binary }
#define BIN_LEGACY(op, t, doc) { "", op, 1, "A:T, B:T", "C:T", "axis:i, broadcast:i=0", t, doc, ox__infer_binary }
#define CMP(op, v, doc) { "", op, v, "A:T, B:T", "C:T1", "", TCMP, doc, ox__infer_compare }
#define LOGIC(op, v, doc) { "", op, v, "A:T, B:T", "C:T1", "", "T: bool; T1: bool", doc, ox__infer_logical }
#define VAR(op, v, doc) { "", op, v, "data_0:T...", "result:T", "", TF, doc, ox__infer_variadic }
#define RED_ATTR(op, v, doc) { "", op, v, "data:T", "reduced:T", "axes:ints, keepdims:i=1", TN, doc, ox__infer_reduce }
#define RED_IN(op, v, doc) { "", op, v, "data:T, axes:int64?", "reduced:T", "keepdims:i=1, noop_with_empty_axes:i=0", TN, doc, ox__infer_reduce }
#define REDUCE(op, doc) RED_ATTR(op, 1, doc), RED_ATTR(op, 11, doc), \
    RED_ATTR(op, 13, doc), RED_IN(op, 18, doc)

static const ox_op_schema ops_table[] = {
    /* ---- elementwise unary ------------------------------------------- */
    U("Abs", 6, "Absolute value, elementwise"),
    U("Abs", 13, "Absolute value, elementwise"),
    U("Acos", 7, "Arc cosine, elementwise"),
    U("Acosh", 9, "Inverse hyperbolic cosine, elementwise"),
    U("Asin", 7, "Arc sine, elementwise"),
    U("Asinh", 9, "Inverse hyperbolic sine, elementwise"),
    U("Atan", 7, "Arc tangent, elementwise"),
    U("Atanh", 9, "Inverse hyperbolic tangent, elementwise"),
    U("Ceil", 6, "Ceiling, elementwise"),
    U("Ceil", 13, "Ceiling, elementwise"),
    UA("Celu", 12, "alpha:f=1.0", "Continuously differentiable ELU"),
    UA("Clip", 1, "max:f, min:f", "Clamp to [min, max] given as attributes"),
    { "", "Clip", 11, "input:T, min:T?, max:T?", "output:T", "", TN,
      "Clamp to [min, max] given as optional scalar inputs", ox__infer_unary },
    { "", "Clip", 13, "input:T, min:T?, max:T?", "output:T", "", TN,
      "Clamp to [min, max] given as optional scalar inputs", ox__infer_unary },
    U("Cos", 7, "Cosine, elementwise"),
    U("Cosh", 9, "Hyperbolic cosine, elementwise"),
    UA("Elu", 6, "alpha:f=1.0", "Exponential linear unit"),
    U("Erf", 9, "Error function, elementwise"),
    U("Erf", 13, "Error function, elementwise"),
    U("Exp", 6, "Exponential, elementwise"),
    U("Exp", 13, "Exponential, elementwise"),
    U("Floor", 6, "Floor, elementwise"),
    U("Floor", 13, "Floor, elementwise"),
    UA("Gelu", 20, "approximate:s=none", "Gaussian error linear unit (erf or tanh form)"),
    UA("HardSigmoid", 6, "alpha:f=0.2, beta:f=0.5", "max(0, min(1, alpha*x+beta))"),
    U("HardSwish", 14, "x * HardSigmoid(x; 1/6, 0.5)"),
    UA("Hardmax", 1, "axis:i=1", "One-hot of the max along axis (2-D coerced)"),
    UA("Hardmax", 13, "axis:i=-1", "One-hot of the max along axis"),
    { "", "Identity", 1, "input:V", "output:V", "", TA, "Copy of the input", ox__infer_unary },
    { "", "Identity", 16, "input:V", "output:V", "", "V: any tensor, sequence or optional",
      "Copy of the input (also sequences and optionals)", ox__infer_unary },
    { "", "IsInf", 10, "X:T1", "Y:T2", "detect_negative:i=1, detect_positive:i=1",
      "T1: float types; T2: bool", "True where x is +/-inf", ox__infer_unary_bool },
    { "", "IsNaN", 9, "X:T1", "Y:T2", "", "T1: float types; T2: bool",
      "True where x is NaN", ox__infer_unary_bool },
    UA("LeakyRelu", 6, "alpha:f=0.01", "x if x >= 0 else alpha*x"),
    UA("LeakyRelu", 16, "alpha:f=0.01", "x if x >= 0 else alpha*x"),
    U("Log", 6, "Natural logarithm, elementwise"),
    U("Log", 13, "Natural logarithm, elementwise"),
    UA("LogSoftmax", 1, "axis:i=1", "Log of softmax (input coerced to 2-D at axis)"),
    UA("LogSoftmax", 13, "axis:i=-1", "Log of softmax along axis"),
    UA("LpNormalization", 1, "axis:i=-1, p:i=2", "Lp-normalize along axis"),
    UA("LRN", 1, "alpha:f=0.0001, beta:f=0.75, bias:f=1.0, size:i!",
       "Local response normalization across channels"),
    U("Mish", 18, "x * tanh(softplus(x))"),
    U("Neg", 6, "Negation, elementwise"),
    U("Neg", 13, "Negation, elementwise"),
    { "", "Not", 1, "X:T", "Y:T", "", TB, "Logical not", ox__infer_unary },
    U("Reciprocal", 6, "1/x, elementwise"),
    U("Reciprocal", 13, "1/x, elementwise"),
    U("Relu", 6, "max(0, x)"),
    U("Relu", 14, "max(0, x)"),
    U("Round", 11, "Round half to even, elementwise"),
    UA("Selu", 6, "alpha:f=1.67326, gamma:f=1.0507", "Scaled exponential linear unit"),
    UA("Shrink", 9, "bias:f=0.0, lambd:f=0.5", "Soft/hard shrinkage"),
    U("Sigmoid", 6, "1/(1+exp(-x))"),
    U("Sigmoid", 13, "1/(1+exp(-x))"),
    U("Sign", 9, "Sign of x (-1, 0, 1)"),
    U("Sin", 7, "Sine, elementwise"),
    U("Sinh", 9, "Hyperbolic sine, elementwise"),
    UA("Softmax", 1, "axis:i=1", "Softmax (input coerced to 2-D at axis)"),
    UA("Softmax", 13, "axis:i=-1", "Softmax along axis"),
    U("Softplus", 1, "log(exp(x)+1)"),
    U("Softsign", 1, "x/(1+|x|)"),
    U("Sqrt", 6, "Square root, elementwise"),
    U("Sqrt", 13, "Square root, elementwise"),
    UA("Swish", 24, "alpha:f=1.0", "x * sigmoid(alpha*x)"),
    U("Tan", 7, "Tangent, elementwise"),
    U("Tanh", 6, "Hyperbolic tangent, elementwise"),
    U("Tanh", 13, "Hyperbolic tangent, elementwise"),
    UA("ThresholdedRelu", 10, "alpha:f=1.0", "x if x > alpha else 0"),
    { "", "BitwiseNot", 18, "X:T", "Y:T", "", TI, "Bitwise not", ox__infer_unary },
    { "", "CumSum", 11, "x:T, axis:T2", "y:T", "exclusive:i=0, reverse:i=0", TN,
      "Cumulative sum along axis", ox__infer_cum },
    { "", "CumProd", 26, "x:T, axis:T2", "y:T", "exclusive:i=0, reverse:i=0", TN,
      "Cumulative product along axis", ox__infer_cum },
    { "", "Trilu", 14, "input:T, k:int64?", "output:T", "upper:i=1", TA,
      "Upper or lower triangular part of matrices", ox__infer_trilu },
    { "", "MeanVarianceNormalization", 9, "X:T", "Y:T", "axes:ints=[0,2,3]", TF,
      "(x - mean) / std over axes", ox__infer_mean_var_norm },
    { "", "InstanceNormalization", 6, "input:T, scale:T, B:T", "output:T",
      "epsilon:f=1e-05", TF, "Per-instance, per-channel normalization", ox__infer_unary },
    { "", "BatchNormalization", 9, "X:T, scale:T, B:T, input_mean:T, input_var:T",
      "Y:T, out_mean:T?, out_var:T?, saved_mean:T?, saved_var:T?",
      "epsilon:f=1e-05, momentum:f=0.9", TF, "Batch normalization (inference form)",
      ox__infer_batch_norm },
    { "", "BatchNormalization", 14, "X:T, scale:T1, B:T1, input_mean:T2, input_var:T2",
      "Y:T, running_mean:T2?, running_var:T2?",
      "epsilon:f=1e-05, momentum:f=0.9, training_mode:i=0", TF,
      "Batch normalization; training_mode adds running stats outputs", ox__infer_batch_norm },

    /* ---- elementwise binary ------------------------------------------ */
    BIN_LEGACY("Add", TN, "Sum with legacy broadcast attribute"),
    BIN("Add", 7, TN, "A + B with numpy broadcasting"),
    BIN("Add", 14, TN, "A + B with numpy broadcasting"),
    BIN_LEGACY("Sub", TN, "Difference with legacy broadcast attribute"),
    BIN("Sub", 7, TN, "A - B with numpy broadcasting"),
    BIN("Sub", 14, TN, "A - B with numpy broadcasting"),
    BIN_LEGACY("Mul", TN, "Product with legacy broadcast attribute"),
    BIN("Mul", 7, TN, "A * B with numpy broadcasting"),
    BIN("Mul", 14, TN, "A * B with numpy broadcasting"),
    BIN_LEGACY("Div", TN, "Quotient with legacy broadcast attribute"),
    BIN("Div", 7, TN, "A / B with numpy broadcasting"),
    BIN("Div", 14, TN, "A / B with numpy broadcasting"),
    { "", "Pow", 7, "X:T, Y:T1", "Z:T", "", "T: numeric; T1: numeric", "X ^ Y, broadcast",
      ox__infer_binary },
    { "", "Pow", 15, "X:T, Y:T1", "Z:T", "", "T: numeric; T1: numeric", "X ^ Y, broadcast",
      ox__infer_binary },
    { "", "Mod", 10, "A:T, B:T", "C:T", "fmod:i=0", TN, "Remainder, broadcast",
      ox__infer_binary },
    { "", "BitShift", 11, "X:T, Y:T", "Z:T", "direction:s!", TI, "Bit shift, broadcast",
      ox__infer_binary },
    BIN("BitwiseAnd", 18, TI, "Bitwise and, broadcast"),
    BIN("BitwiseOr", 18, TI, "Bitwise or, broadcast"),
    BIN("BitwiseXor", 18, TI, "Bitwise xor, broadcast"),
    { "", "PRelu", 7, "X:T, slope:T", "Y:T", "", TN,
      "x if x >= 0 else slope*x (slope broadcast to x)", ox__infer_binary },
    { "", "PRelu", 16, "X:T, slope:T", "Y:T", "", TN,
      "x if x >= 0 else slope*x (slope broadcast to x)", ox__infer_binary },
    LOGIC("And", 7, "Logical and, broadcast"),
    LOGIC("Or", 7, "Logical or, broadcast"),
    LOGIC("Xor", 7, "Logical xor, broadcast"),
    CMP("Equal", 7, "A == B, broadcast"),
    CMP("Equal", 11, "A == B, broadcast"),
    CMP("Equal", 19, "A == B, broadcast (also strings)"),
    CMP("Greater", 7, "A > B, broadcast"),
    CMP("Greater", 13, "A > B, broadcast"),
    CMP("GreaterOrEqual", 12, "A >= B, broadcast"),
    CMP("GreaterOrEqual", 16, "A >= B, broadcast"),
    CMP("Less", 7, "A < B, broadcast"),
    CMP("Less", 13, "A < B, broadcast"),
    CMP("LessOrEqual", 12, "A <= B, broadcast"),
    CMP("LessOrEqual", 16, "A <= B, broadcast"),
    VAR("Max", 8, "Elementwise max of the inputs, broadcast"),
    VAR("Max", 13, "Elementwise max of the inputs, broadcast"),
    VAR("Min", 8, "Elementwise min of the inputs, broadcast"),
    VAR("Min", 13, "Elementwise min of the inputs, broadcast"),
    VAR("Mean", 8, "Elementwise mean of the inputs, broadcast"),
    VAR("Mean", 13, "Elementwise mean of the inputs, broadcast"),
    VAR("Sum", 8, "Elementwise sum of the inputs, broadcast"),
    VAR("Sum", 13, "Elementwise sum of the inputs, broadcast"),
    { "", "Where", 9, "condition:B, X:T, Y:T", "output:T", "", "B: bool; T: any",
      "Select X where condition else Y, broadcast", ox__infer_where },
    { "", "Where", 16, "condition:B, X:T, Y:T", "output:T", "", "B: bool; T: any",
      "Select X where condition else Y, broadcast", ox__infer_where },

    /* ---- type conversion ------------------------------------------------ */
    { "", "Cast", 6, "input:T1", "output:T2", "to:i!", "T1, T2: numeric, bool, string",
      "Convert element type", ox__infer_cast },
    { "", "Cast", 19, "input:T1", "output:T2", "round_mode:s=up, saturate:i=1, to:i!",
      "T1, T2: numeric, bool, string, float8", "Convert element type (saturate for float8)",
      ox__infer_cast },
    { "", "CastLike", 15, "input:T1, target_type:T2", "output:T2", "",
      "T1, T2: numeric, bool, string", "Convert to the element type of target_type",
      ox__infer_castlike },
    { "", "CastLike", 19, "input:T1, target_type:T2", "output:T2",
      "round_mode:s=up, saturate:i=1", "T1, T2: numeric, bool, string, float8",
      "Convert to the element type of target_type", ox__infer_castlike },
    { "", "BitCast", 26, "input:T1", "output:T2", "to:i!", "T1, T2: fixed-width types",
      "Reinterpret bits as another type of the same width", ox__infer_bitcast },

    /* ---- shape manipulation ---------------------------------------------- */
    { "", "Shape", 1, "data:T", "shape:int64", "", TA, "Shape of the input as 1-D int64",
      ox__infer_shape },
    { "", "Shape", 15, "data:T", "shape:int64", "end:i, start:i=0", TA,
      "Slice [start, end) of the input's shape", ox__infer_shape },
    { "", "Size", 1, "data:T", "size:int64", "", TA, "Number of elements (int64 scalar)",
      ox__infer_size },
    { "", "Reshape", 1, "data:T", "reshaped:T", "shape:ints", TA,
      "Reshape to the shape attribute (0 copies, -1 infers)", ox__infer_reshape },
    { "", "Reshape", 5, "data:T, shape:int64", "reshaped:T", "", TA,
      "Reshape (0 copies the input dim, -1 infers)", ox__infer_reshape },
    { "", "Reshape", 14, "data:T, shape:int64", "reshaped:T", "allowzero:i=0", TA,
      "Reshape; allowzero=1 makes 0 a real zero-size dim", ox__infer_reshape },
    { "", "Flatten", 1, "input:T", "output:T", "axis:i=1", TA,
      "Flatten to 2-D at axis", ox__infer_flatten },
    { "", "Flatten", 11, "input:T", "output:T", "axis:i=1", TA,
      "Flatten to 2-D at axis (negative axis allowed)", ox__infer_flatten },
    { "", "Squeeze", 1, "data:T", "squeezed:T", "axes:ints", TA,
      "Remove size-1 dims listed in axes (all if absent)", ox__infer_squeeze },
    { "", "Squeeze", 13, "data:T, axes:int64?", "squeezed:T", "", TA,
      "Remove size-1 dims listed in the axes input (all if absent)", ox__infer_squeeze },
    { "", "Unsqueeze", 1, "data:T", "expanded:T", "axes:ints!", TA,
      "Insert size-1 dims at axes (attribute)", ox__infer_unsqueeze },
    { "", "Unsqueeze", 13, "data:T, axes:int64", "expanded:T", "", TA,
      "Insert size-1 dims at axes (input)", ox__infer_unsqueeze },
    { "", "Transpose", 1, "data:T", "transposed:T", "perm:ints", TA,
      "Permute dims (reverse when perm absent)", ox__infer_transpose },
    { "", "Transpose", 13, "data:T", "transposed:T", "perm:ints", TA,
      "Permute dims (reverse when perm absent)", ox__infer_transpose },
    { "", "Concat", 4, "inputs:T...", "concat_result:T", "axis:i!", TA,
      "Concatenate along axis", ox__infer_concat },
    { "", "Concat", 11, "inputs:T...", "concat_result:T", "axis:i!", TA,
      "Concatenate along axis (negative allowed)", ox__infer_concat },
    { "", "Concat", 13, "inputs:T...", "concat_result:T", "axis:i!", TA,
      "Concatenate along axis (negative allowed)", ox__infer_concat },
    { "", "Split", 2, "input:T", "outputs:T...", "axis:i=0, split:ints", TA,
      "Split along axis by the split attribute (equal parts if absent)", ox__infer_split },
    { "", "Split", 13, "input:T, split:int64?", "outputs:T...", "axis:i=0", TA,
      "Split along axis by the split input (equal parts if absent)", ox__infer_split },
    { "", "Split", 18, "input:T, split:int64?", "outputs:T...", "axis:i=0, num_outputs:i", TA,
      "Split along axis by split input or into num_outputs parts", ox__infer_split },
    { "", "Slice", 1, "data:T", "output:T", "axes:ints, ends:ints!, starts:ints!", TA,
      "Slice with starts/ends/axes attributes", ox__infer_slice },
    { "", "Slice", 10, "data:T, starts:Tind, ends:Tind, axes:Tind?, steps:Tind?", "output:T",
      "", "T: any; Tind: int32|int64", "Slice with inputs (steps allowed)", ox__infer_slice },
    { "", "Slice", 13, "data:T, starts:Tind, ends:Tind, axes:Tind?, steps:Tind?", "output:T",
      "", "T: any; Tind: int32|int64", "Slice with inputs (steps allowed)", ox__infer_slice },
    { "", "Gather", 1, "data:T, indices:Tind", "output:T", "axis:i=0",
      "T: any; Tind: int32|int64", "Gather slices of data along axis", ox__infer_gather },
    { "", "Gather", 13, "data:T, indices:Tind", "output:T", "axis:i=0",
      "T: any; Tind: int32|int64", "Gather slices of data along axis", ox__infer_gather },
    { "", "GatherElements", 11, "data:T, indices:Tind", "output:T", "axis:i=0",
      "T: any; Tind: int32|int64", "Gather elements; output has the indices' shape",
      ox__infer_gather_elements },
    { "", "GatherND", 11, "data:T, indices:int64", "output:T", "", TA,
      "Gather slices by N-D indices", ox__infer_gather_nd },
    { "", "GatherND", 12, "data:T, indices:int64", "output:T", "batch_dims:i=0", TA,
      "Gather slices by N-D indices with batch dims", ox__infer_gather_nd },
    { "", "Scatter", 9, "data:T, indices:Tind, updates:T", "output:T", "axis:i=0", TA,
      "Deprecated alias of ScatterElements", ox__infer_scatter },
    { "", "ScatterElements", 11, "data:T, indices:Tind, updates:T", "output:T",
      "axis:i=0, reduction:s=none", TA, "Scatter updates into a copy of data",
      ox__infer_scatter },
    { "", "ScatterND", 11, "data:T, indices:int64, updates:T", "output:T",
      "reduction:s=none", TA, "Scatter slices into a copy of data", ox__infer_scatter },
    { "", "TensorScatter", 24, "past_cache:T, update:T, write_indices:int64?",
      "present_cache:T", "axis:i=-2, mode:s=linear", TA,
      "Write update into a KV cache at per-batch positions", ox__infer_tensor_scatter },
    { "", "Expand", 8, "input:T, shape:int64", "output:T", "", TA,
      "Broadcast input to shape", ox__infer_expand },
    { "", "Tile", 6, "input:T, repeats:int64", "output:T", "", TA,
      "Repeat input along each dim", ox__infer_tile },
    { "", "Pad", 2, "data:T", "output:T", "mode:s=constant, pads:ints!, value:f=0.0", TN,
      "Pad with pads attribute", ox__infer_pad },
    { "", "Pad", 11, "data:T, pads:int64, constant_value:T?", "output:T", "mode:s=constant",
      TN, "Pad with pads input", ox__infer_pad },
    { "", "Pad", 18, "data:T, pads:int64, constant_value:T?, axes:Tind?", "output:T",
      "mode:s=constant", TN, "Pad with pads input on selected axes", ox__infer_pad },
    { "", "Pad", 19, "data:T, pads:int64, constant_value:T?, axes:Tind?", "output:T",
      "mode:s=constant", TN, "Pad (constant, reflect, edge, wrap)", ox__infer_pad },
    { "", "CenterCropPad", 18, "input_data:T, shape:Tind", "output_data:T", "axes:ints",
      TA, "Center crop or pad to shape", ox__infer_center_crop_pad },
    { "", "DepthToSpace", 1, "input:T", "output:T", "blocksize:i!", TA,
      "Move depth blocks to spatial dims", ox__infer_depth_to_space },
    { "", "DepthToSpace", 11, "input:T", "output:T", "blocksize:i!, mode:s=DCR", TA,
      "Move depth blocks to spatial dims (DCR or CRD)", ox__infer_depth_to_space },
    { "", "SpaceToDepth", 1, "input:T", "output:T", "blocksize:i!", TA,
      "Move spatial blocks to depth", ox__infer_space_to_depth },
    { "", "ReverseSequence", 10, "input:T, sequence_lens:int64", "Y:T",
      "batch_axis:i=1, time_axis:i=0", TA, "Reverse batch sequences along time",
      ox__infer_reverse_sequence },
    { "", "Compress", 9, "input:T, condition:bool", "output:T", "axis:i", TA,
      "Select slices where condition is true", ox__infer_compress },
    { "", "NonZero", 9, "X:T", "Y:int64", "", TA, "Indices of non-zero elements",
      ox__infer_nonzero },
    { "", "Unique", 11, "X:T", "Y:T, indices:int64?, inverse_indices:int64?, counts:int64?",
      "axis:i, sorted:i=1", TA, "Unique elements or slices", ox__infer_unique },

    /* ---- generators ------------------------------------------------------ */
    { "", "Constant", 1, "", "output:T", "value:t!", TA, "A constant tensor",
      ox__infer_constant },
    { "", "Constant", 12, "", "output:T",
      "sparse_value:sparse, value:t, value_float:f, value_floats:floats, value_int:i, "
      "value_ints:ints, value_string:s, value_strings:strings", TA,
      "A constant tensor from one of the value attributes", ox__infer_constant },
    { "", "ConstantOfShape", 9, "input:int64", "output:T", "value:t", TN,
      "Tensor of the given shape filled with value (default float 0)",
      ox__infer_constant_of_shape },
    { "", "Range", 11, "start:T, limit:T, delta:T", "output:T", "", TN,
      "1-D sequence start, start+delta, ... below limit", ox__infer_range },
    { "", "EyeLike", 9, "input:T1", "output:T2", "dtype:i, k:i=0", TN,
      "2-D identity-like matrix", ox__infer_eye_like },
    { "", "OneHot", 9, "indices:T1, depth:T2, values:T3", "output:T3", "axis:i=-1",
      "T1, T2: numeric; T3: any", "One-hot encoding", ox__infer_one_hot },
    { "", "OneHot", 11, "indices:T1, depth:T2, values:T3", "output:T3", "axis:i=-1",
      "T1, T2: numeric; T3: any", "One-hot encoding (negative indices)", ox__infer_one_hot },
    { "", "RandomUniformLike", 1, "input:T1", "output:T2", "dtype:i, high:f=1.0, low:f=0.0, seed:f",
      "T1: any; T2: float types", "Uniform random tensor shaped like input",
      ox__infer_random_like },
    { "", "RandomNormalLike", 1, "input:T1", "output:T2",
      "dtype:i, mean:f=0.0, scale:f=1.0, seed:f", "T1: any; T2: float types",
      "Normal random tensor shaped like input", ox__infer_random_like },
    { "", "RandomUniform", 1, "", "output:T", "dtype:i=1, high:f=1.0, low:f=0.0, seed:f, shape:ints!",
      "T: float types", "Uniform random tensor", ox__infer_random },
    { "", "RandomNormal", 1, "", "output:T", "dtype:i=1, mean:f=0.0, scale:f=1.0, seed:f, shape:ints!",
      "T: float types", "Normal random tensor", ox__infer_random },
    { "", "Multinomial", 7, "input:T1", "output:T2", "dtype:i=6, sample_size:i=1, seed:f",
      "T1: float types; T2: int32|int64", "Class indices drawn from unnormalized log-probabilities",
      ox__infer_multinomial },
    { "", "Bernoulli", 15, "input:T1", "output:T2", "dtype:i, seed:f",
      "T1: float types; T2: numeric, bool", "Bernoulli draws with probabilities input",
      ox__infer_bernoulli },
    { "", "BlackmanWindow", 17, "size:T1", "output:T2", "output_datatype:i=1, periodic:i=1",
      "T1: int32|int64; T2: numeric", "Blackman window", ox__infer_window },
    { "", "HammingWindow", 17, "size:T1", "output:T2", "output_datatype:i=1, periodic:i=1",
      "T1: int32|int64; T2: numeric", "Hamming window", ox__infer_window },
    { "", "HannWindow", 17, "size:T1", "output:T2", "output_datatype:i=1, periodic:i=1",
      "T1: int32|int64; T2: numeric", "Hann window", ox__infer_window },
    { "", "MelWeightMatrix", 17,
      "num_mel_bins:T1, dft_length:T1, sample_rate:T1, lower_edge_hertz:T2, upper_edge_hertz:T2",
      "output:T3", "output_datatype:i=1", "T1: int32|int64; T2: float types; T3: numeric",
      "Mel filter bank matrix [dft_length/2+1, num_mel_bins]", ox__infer_mel },

    /* ---- reductions ------------------------------------------------------ */
    { "", "ArgMax", 1, "data:T", "reduced:int64", "axis:i=0, keepdims:i=1", TN,
      "Index of the max along axis", ox__infer_argreduce },
    { "", "ArgMax", 12, "data:T", "reduced:int64",
      "axis:i=0, keepdims:i=1, select_last_index:i=0", TN,
      "Index of the max along axis", ox__infer_argreduce },
    { "", "ArgMin", 1, "data:T", "reduced:int64", "axis:i=0, keepdims:i=1", TN,
      "Index of the min along axis", ox__infer_argreduce },
    { "", "ArgMin", 12, "data:T", "reduced:int64",
      "axis:i=0, keepdims:i=1, select_last_index:i=0", TN,
      "Index of the min along axis", ox__infer_argreduce },
    REDUCE("ReduceL1", "L1 norm over axes"),
    REDUCE("ReduceL2", "L2 norm over axes"),
    REDUCE("ReduceLogSum", "log(sum) over axes"),
    REDUCE("ReduceLogSumExp", "log(sum(exp)) over axes"),
    REDUCE("ReduceMax", "Max over axes"),
    RED_IN("ReduceMax", 20, "Max over axes (also bool)"),
    REDUCE("ReduceMean", "Mean over axes"),
    REDUCE("ReduceMin", "Min over axes"),
    RED_IN("ReduceMin", 20, "Min over axes (also bool)"),
    REDUCE("ReduceProd", "Product over axes"),
    RED_ATTR("ReduceSum", 1, "Sum over axes (attribute)"),
    RED_ATTR("ReduceSum", 11, "Sum over axes (attribute)"),
    RED_IN("ReduceSum", 13, "Sum over axes (input)"),
    REDUCE("ReduceSumSquare", "Sum of squares over axes"),
    { "", "TopK", 1, "X:T", "Values:T, Indices:int64", "axis:i=-1, k:i!", TN,
      "Top k values along axis (k attribute)", ox__infer_topk },
    { "", "TopK", 10, "X:T, K:int64", "Values:T, Indices:int64", "axis:i=-1", TN,
      "Top k values along axis (k input)", ox__infer_topk },
    { "", "TopK", 11, "X:T, K:int64", "Values:T, Indices:int64",
      "axis:i=-1, largest:i=1, sorted:i=1", TN, "Top or bottom k values along axis",
      ox__infer_topk },
    { "", "Det", 11, "X:T", "Y:T", "", TF, "Determinant of square matrices", ox__infer_det },

    /* ---- linear algebra, convolution, pooling ------------------------------ */
    { "", "MatMul", 1, "A:T, B:T", "Y:T", "", TN, "Matrix product (numpy matmul)",
      ox__infer_matmul },
    { "", "MatMul", 13, "A:T, B:T", "Y:T", "", TN, "Matrix product (numpy matmul)",
      ox__infer_matmul },
    { "", "MatMulInteger", 10, "A:T1, B:T2, a_zero_point:T1?, b_zero_point:T2?", "Y:int32",
      "", "T1, T2: int8|uint8", "Integer matmul with zero points", ox__infer_int_matmul },
    { "", "QLinearMatMul", 10,
      "a:T1, a_scale:TS, a_zero_point:T1, b:T2, b_scale:TS, b_zero_point:T2, y_scale:TS, y_zero_point:T3",
      "y:T3", "", "T1, T2, T3: int8|uint8|float8", "Quantized matmul",
      ox__infer_qlinear_matmul },
    { "", "Gemm", 7, "A:T, B:T, C:T", "Y:T", "alpha:f=1.0, beta:f=1.0, transA:i=0, transB:i=0",
      TN, "alpha*A'*B' + beta*C", ox__infer_gemm },
    { "", "Gemm", 11, "A:T, B:T, C:T?", "Y:T", "alpha:f=1.0, beta:f=1.0, transA:i=0, transB:i=0",
      TN, "alpha*A'*B' + beta*C (C optional)", ox__infer_gemm },
    { "", "Einsum", 12, "Inputs:T...", "Output:T", "equation:s!", TN,
      "Einstein summation", ox__infer_einsum },
    { "", "Conv", 1, "X:T, W:T, B:T?", "Y:T", CONV_ATTRS, TF, "N-D convolution",
      ox__infer_conv },
    { "", "ConvInteger", 10, "x:T1, w:T2, x_zero_point:T1?, w_zero_point:T2?", "y:int32",
      CONV_ATTRS, "T1, T2: int8|uint8", "Integer convolution", ox__infer_conv_integer },
    { "", "QLinearConv", 10,
      "x:T1, x_scale:float, x_zero_point:T1, w:T2, w_scale:float, w_zero_point:T2, y_scale:float, y_zero_point:T3, B:int32?",
      "y:T3", CONV_ATTRS, "T1, T2, T3: int8|uint8", "Quantized convolution",
      ox__infer_qlinear_conv },
    { "", "ConvTranspose", 1, "X:T, W:T, B:T?", "Y:T",
      "auto_pad:s=NOTSET, dilations:ints, group:i=1, kernel_shape:ints, output_padding:ints, "
      "output_shape:ints, pads:ints, strides:ints", TF, "Transposed convolution",
      ox__infer_conv_transpose },
    { "", "DeformConv", 19, "X:T, W:T, offset:T, B:T?, mask:T?", "Y:T",
      "dilations:ints, group:i=1, kernel_shape:ints, offset_group:i=1, pads:ints, strides:ints",
      TF, "Deformable convolution", ox__infer_deform_conv },
    { "", "AveragePool", 1, "X:T", "Y:T", POOL_ATTRS ", count_include_pad:i=0", TF,
      "Average pooling", ox__infer_pool },
    { "", "AveragePool", 10, "X:T", "Y:T", POOL_ATTRS ", ceil_mode:i=0, count_include_pad:i=0",
      TF, "Average pooling (ceil_mode)", ox__infer_pool },
    { "", "AveragePool", 19, "X:T", "Y:T",
      POOL_ATTRS ", ceil_mode:i=0, count_include_pad:i=0, dilations:ints", TF,
      "Average pooling (dilations)", ox__infer_pool },
    { "", "MaxPool", 1, "X:T", "Y:T", POOL_ATTRS, TF, "Max pooling", ox__infer_pool },
    { "", "MaxPool", 8, "X:T", "Y:T, Indices:int64?", POOL_ATTRS ", storage_order:i=0", TF,
      "Max pooling with optional indices", ox__infer_pool },
    { "", "MaxPool", 10, "X:T", "Y:T, Indices:int64?",
      POOL_ATTRS ", ceil_mode:i=0, dilations:ints, storage_order:i=0", TF,
      "Max pooling (ceil_mode, dilations)", ox__infer_pool },
    { "", "LpPool", 2, "X:T", "Y:T", POOL_ATTRS ", p:i=2", TF, "Lp pooling", ox__infer_pool },
    { "", "LpPool", 18, "X:T", "Y:T", POOL_ATTRS ", ceil_mode:i=0, dilations:ints, p:i=2", TF,
      "Lp pooling (ceil_mode, dilations)", ox__infer_pool },
    { "", "MaxUnpool", 9, "X:T1, I:int64, output_shape:int64?", "output:T1",
      "kernel_shape:ints!, pads:ints, strides:ints", TF, "Inverse of MaxPool",
      ox__infer_max_unpool },
    { "", "GlobalAveragePool", 1, "X:T", "Y:T", "", TF, "Average over spatial dims",
      ox__infer_global_pool },
    { "", "GlobalMaxPool", 1, "X:T", "Y:T", "", TF, "Max over spatial dims",
      ox__infer_global_pool },
    { "", "GlobalLpPool", 2, "X:T", "Y:T", "p:i=2", TF, "Lp norm over spatial dims",
      ox__infer_global_pool },
    { "", "Col2Im", 18, "input:T, image_shape:int64, block_shape:int64", "output:T",
      "dilations:ints, pads:ints, strides:ints", TA, "Rearrange column blocks into an image",
      ox__infer_col2im },
    { "", "MaxRoiPool", 1, "X:T, rois:T", "Y:T", "pooled_shape:ints!, spatial_scale:f=1.0", TF,
      "Max pooling over regions of interest (rois: num_rois x [batch, x1, y1, x2, y2])",
      ox__infer_max_roi_pool },
    { "", "RoiAlign", 10, "X:T1, rois:T1, batch_indices:int64", "Y:T1",
      "mode:s=avg, output_height:i=1, output_width:i=1, sampling_ratio:i=0, spatial_scale:f=1.0",
      TF, "Region-of-interest align", ox__infer_roi_align },
    { "", "RoiAlign", 16, "X:T1, rois:T1, batch_indices:int64", "Y:T1",
      "coordinate_transformation_mode:s=half_pixel, mode:s=avg, output_height:i=1, "
      "output_width:i=1, sampling_ratio:i=0, spatial_scale:f=1.0",
      TF, "Region-of-interest align", ox__infer_roi_align },
    { "", "GridSample", 16, "X:T1, grid:T2", "Y:T1",
      "align_corners:i=0, mode:s=bilinear, padding_mode:s=zeros", TF,
      "Sample X at grid locations", ox__infer_grid_sample },
    { "", "GridSample", 20, "X:T1, grid:T2", "Y:T1",
      "align_corners:i=0, mode:s=linear, padding_mode:s=zeros", TF,
      "Sample X at grid locations (N-D)", ox__infer_grid_sample },
    { "", "AffineGrid", 20, "theta:T1, size:int64", "grid:T1", "align_corners:i=0", TF,
      "Sampling grid from affine matrices", ox__infer_affine_grid },
    { "", "Resize", 10, "X:T, scales:float", "Y:T", "mode:s=nearest", TA,
      "Resize by scales", ox__infer_resize },
    /* Resize-11: roi and scales required (an empty tensor for "none"). */
    { "", "Resize", 11, "X:T1, roi:T2, scales:float, sizes:int64?", "Y:T1",
      "coordinate_transformation_mode:s=half_pixel, cubic_coeff_a:f=-0.75, exclude_outside:i=0, "
      "extrapolation_value:f=0.0, mode:s=nearest, nearest_mode:s=round_prefer_floor", TA,
      "Resize by scales or to sizes", ox__infer_resize },
    { "", "Resize", 13, "X:T1, roi:T2?, scales:float?, sizes:int64?", "Y:T1",
      "coordinate_transformation_mode:s=half_pixel, cubic_coeff_a:f=-0.75, exclude_outside:i=0, "
      "extrapolation_value:f=0.0, mode:s=nearest, nearest_mode:s=round_prefer_floor", TA,
      "Resize by scales or to sizes (roi, scales optional)", ox__infer_resize },
    { "", "Resize", 18, "X:T1, roi:T2?, scales:float?, sizes:int64?", "Y:T1",
      "antialias:i=0, axes:ints, coordinate_transformation_mode:s=half_pixel, "
      "cubic_coeff_a:f=-0.75, exclude_outside:i=0, extrapolation_value:f=0.0, "
      "keep_aspect_ratio_policy:s=stretch, mode:s=nearest, nearest_mode:s=round_prefer_floor",
      TA, "Resize on selected axes (antialias, aspect-ratio policy)", ox__infer_resize },
    { "", "Upsample", 7, "X:T", "Y:T", "mode:s=nearest, scales:floats!", TA,
      "Upsample by the scales attribute", ox__infer_upsample },
    { "", "Upsample", 9, "X:T, scales:float", "Y:T", "mode:s=nearest", TA,
      "Upsample by the scales input", ox__infer_upsample },

    /* ---- normalization, activations with parameters, attention ------------- */
    { "", "LayerNormalization", 17, "X:T, Scale:T, B:T?", "Y:T, Mean:U?, InvStdDev:U?",
      "axis:i=-1, epsilon:f=1e-05, stash_type:i=1", "T: float types; U: float|bfloat16",
      "Layer normalization over the dims from axis on", ox__infer_layer_norm },
    /* ONNX Runtime also takes LayerNormalization and its RMS form in the
     * ONNX domain below opset 17 (its own fusions emit them); the ort
     * target of fuse_layernorm / fuse_rmsnorm does too. */
    { "", "LayerNormalization", 1, "X:T, Scale:T, B:T?", "Y:T, Mean:U?, InvStdDev:U?",
      "axis:i=-1, epsilon:f=1e-05, stash_type:i=1", "T: float types; U: float|bfloat16",
      "Layer normalization (ONNX Runtime's form below opset 17)", ox__infer_layer_norm },
    { "", "SimplifiedLayerNormalization", 1, "X:T, scale:V", "Y:V, inv_std_var:U?",
      "axis:i=-1, epsilon:f=1e-05, stash_type:i=1", "T, V: float types; U: float",
      "RMS normalization (ONNX Runtime's form, ONNX domain)", ox__infer_layer_norm },
    { "", "GroupNormalization", 18, "X:T, scale:T, bias:T", "Y:T",
      "epsilon:f=1e-05, num_groups:i!", TF, "Group normalization", ox__infer_group_norm },
    { "", "GroupNormalization", 21, "X:T, scale:T, bias:T", "Y:T",
      "epsilon:f=1e-05, num_groups:i!, stash_type:i=1", TF,
      "Group normalization (per-channel scale)", ox__infer_group_norm },
    { "", "RMSNormalization", 23, "X:T, scale:V", "Y:V", "axis:i=-1, epsilon:f=1e-05, stash_type:i=1",
      "T, V: float types", "Root-mean-square normalization", ox__infer_layer_norm },
    { "", "LpNormalization", 22, "input:T", "output:T", "axis:i=-1, p:i=2", TF,
      "Lp-normalize along axis", ox__infer_lp_norm },
    { "", "Dropout", 1, "data:T", "output:T, mask:T?", "is_test:i=0, ratio:f=0.5", TF,
      "Dropout (identity in inference)", ox__infer_dropout },
    { "", "Dropout", 7, "data:T", "output:T, mask:T?", "ratio:f=0.5", TF,
      "Dropout (identity in inference)", ox__infer_dropout },
    { "", "Dropout", 10, "data:T", "output:T, mask:bool?", "ratio:f=0.5", TF,
      "Dropout with a bool mask", ox__infer_dropout },
    { "", "Dropout", 12, "data:T, ratio:T1?, training_mode:bool?", "output:T, mask:bool?",
      "seed:i", TF, "Dropout with ratio and training_mode inputs", ox__infer_dropout },
    { "", "Attention", 23,
      "Q:T1, K:T1, V:T2, attn_mask:U?, past_key:T1?, past_value:T2?",
      "Y:T1, present_key:T1?, present_value:T2?, qk_matmul_output:T1?",
      "is_causal:i=0, kv_num_heads:i, q_num_heads:i, qk_matmul_output_mode:i=0, scale:f, "
      "softcap:f=0.0, softmax_precision:i", "T1, T2: float types; U: bool or T1",
      "Scaled dot-product attention (3-D or 4-D inputs, GQA, KV cache)", ox__infer_attention },
    { "", "Attention", 24,
      "Q:T1, K:T1, V:T2, attn_mask:U?, past_key:T1?, past_value:T2?, nonpad_kv_seqlen:int64?",
      "Y:T1, present_key:T1?, present_value:T2?, qk_matmul_output:T1?",
      "is_causal:i=0, kv_num_heads:i, q_num_heads:i, qk_matmul_output_mode:i=0, scale:f, "
      "softcap:f=0.0, softmax_precision:i", "T1, T2: float types; U: bool or T1",
      "Scaled dot-product attention (adds nonpad_kv_seqlen)", ox__infer_attention },
    { "", "RotaryEmbedding", 23, "X:T, cos_cache:T, sin_cache:T, position_ids:M?", "Y:T",
      "interleaved:i=0, num_heads:i, rotary_embedding_dim:i=0", "T: float types; M: int64",
      "Rotary position embedding", ox__infer_rotary },
    { "", "CausalConvWithState", 27, "input:T, weight:T, bias:T?, past_state:T?",
      "output:T, present_state:T", "activation:s=none, ndim:i=1", TF,
      "Depthwise causal convolution carrying a state window", ox__infer_causal_conv },
    { "", "LinearAttention", 27,
      "query:T, key:T, value:T, past_state:T?, decay:T?, beta:T?",
      "output:T, present_state:T",
      "chunk_size:i=64, kv_num_heads:i, q_num_heads:i, scale:f, update_rule:s=gated_delta",
      TF, "Linear attention with a recurrent state", ox__infer_linear_attention },
    { "", "SwiGLU", 28, "A:T, B:T", "Y:T", "alpha:f=1.0", TF,
      "Swish(A) * B (gate A, value B of identical shapes)", ox__infer_swiglu },

    /* ---- recurrent ------------------------------------------------------- */
    { "", "RNN", 7, "X:T, W:T, R:T, B:T?, sequence_lens:int32?, initial_h:T?", "Y:T?, Y_h:T?",
      RNN_ATTRS, TF, "Simple recurrent network", ox__infer_rnn },
    { "", "RNN", 14, "X:T, W:T, R:T, B:T?, sequence_lens:int32?, initial_h:T?", "Y:T?, Y_h:T?",
      RNN_ATTRS ", layout:i=0", TF, "Simple recurrent network (layout)", ox__infer_rnn },
    { "", "GRU", 7, "X:T, W:T, R:T, B:T?, sequence_lens:int32?, initial_h:T?", "Y:T?, Y_h:T?",
      RNN_ATTRS ", linear_before_reset:i=0", TF, "Gated recurrent unit", ox__infer_rnn },
    { "", "GRU", 14, "X:T, W:T, R:T, B:T?, sequence_lens:int32?, initial_h:T?", "Y:T?, Y_h:T?",
      RNN_ATTRS ", layout:i=0, linear_before_reset:i=0", TF, "Gated recurrent unit (layout)",
      ox__infer_rnn },
    { "", "LSTM", 7,
      "X:T, W:T, R:T, B:T?, sequence_lens:int32?, initial_h:T?, initial_c:T?, P:T?",
      "Y:T?, Y_h:T?, Y_c:T?", RNN_ATTRS ", input_forget:i=0", TF, "Long short-term memory",
      ox__infer_rnn },
    { "", "LSTM", 14,
      "X:T, W:T, R:T, B:T?, sequence_lens:int32?, initial_h:T?, initial_c:T?, P:T?",
      "Y:T?, Y_h:T?, Y_c:T?", RNN_ATTRS ", input_forget:i=0, layout:i=0", TF,
      "Long short-term memory (layout)", ox__infer_rnn },

    /* ---- control flow ------------------------------------------------------ */
    { "", "If", 1, "cond:B", "outputs:V...", "else_branch:g!, then_branch:g!", "B: bool; V: any",
      "Run then_branch or else_branch", ox__infer_if_ },
    { "", "Loop", 1, "M:I?, cond:B?, v_initial:V...", "v_final_and_scan_outputs:V...",
      "body:g!", "I: int64; B: bool; V: any", "Loop with carried and scan outputs",
      ox__infer_loop },
    { "", "Scan", 8, "sequence_lens:I?, initial_state_and_scan_inputs:V...",
      "final_state_and_scan_outputs:V...",
      "body:g!, directions:ints, num_scan_inputs:i!", "I: int64; V: any tensor",
      "Scan over axis 1 of batched inputs", ox__infer_scan },
    { "", "Scan", 9, "initial_state_and_scan_inputs:V...", "final_state_and_scan_outputs:V...",
      "body:g!, num_scan_inputs:i!, scan_input_axes:ints, scan_input_directions:ints, "
      "scan_output_axes:ints, scan_output_directions:ints", "V: any tensor",
      "Scan over sequence axes of inputs", ox__infer_scan },

    /* ---- sequences and optionals -------------------------------------------- */
    { "", "SequenceConstruct", 11, "inputs:T...", "output_sequence:S", "", "T: tensor; S: seq(T)",
      "Sequence of the input tensors", ox__infer_sequence_construct },
    { "", "SequenceEmpty", 11, "", "output:S", "dtype:i", "S: seq(tensor)",
      "Empty sequence", ox__infer_sequence_empty },
    { "", "SequenceAt", 11, "input_sequence:S, position:I", "tensor:T", "",
      "S: seq(tensor); I: int32|int64", "Element at position", ox__infer_sequence_at },
    { "", "SequenceInsert", 11, "input_sequence:S, tensor:T, position:I?", "output_sequence:S",
      "", "S: seq(tensor); I: int32|int64", "Insert a tensor", ox__infer_sequence_insert },
    { "", "SequenceErase", 11, "input_sequence:S, position:I?", "output_sequence:S", "",
      "S: seq(tensor); I: int32|int64", "Remove an element", ox__infer_sequence_erase },
    { "", "SequenceLength", 11, "input_sequence:S", "length:int64", "", "S: seq(tensor)",
      "Number of elements (int64 scalar)", ox__infer_sequence_length },
    { "", "SplitToSequence", 11, "input:T, split:I?", "output_sequence:S",
      "axis:i=0, keepdims:i=1", "T: tensor; I: int32|int64; S: seq(T)",
      "Split into a sequence", ox__infer_split_to_sequence },
    { "", "ConcatFromSequence", 11, "input_sequence:S", "concat_result:T",
      "axis:i!, new_axis:i=0", "S: seq(tensor)", "Concatenate a sequence",
      ox__infer_concat_from_sequence },
    { "", "SequenceMap", 17, "input_sequence:S, additional_inputs:V?...", "out_sequence:S...",
      "body:g!", "S: seq(tensor); V: any", "Apply body to each element",
      ox__infer_sequence_map },
    { "", "Optional", 15, "input:V?", "output:O", "type:tp", "V: any; O: optional(V)",
      "Optional holding input, or empty of the given type", ox__infer_optional },
    { "", "OptionalGetElement", 15, "input:O", "output:V", "", "O: optional(V)",
      "Payload of an optional", ox__infer_optional_get },
    { "", "OptionalGetElement", 18, "input:O", "output:V", "", "O: optional(V) or V",
      "Payload of an optional (plain values pass through)", ox__infer_optional_get },
    { "", "OptionalHasElement", 15, "input:O", "output:bool", "", "O: optional",
      "Whether the optional holds a value", ox__infer_optional_has },
    { "", "OptionalHasElement", 18, "input:O?", "output:bool", "", "O: optional or any",
      "Whether the input is present and non-empty", ox__infer_optional_has },

    /* ---- quantization ------------------------------------------------------ */
    { "", "QuantizeLinear", 10, "x:T1, y_scale:float, y_zero_point:T2?", "y:T2", "", TQ,
      "Quantize with scale and zero point", ox__infer_quantize },
    { "", "QuantizeLinear", 13, "x:T1, y_scale:float, y_zero_point:T2?", "y:T2", "axis:i=1",
      TQ, "Quantize (per-axis)", ox__infer_quantize },
    { "", "QuantizeLinear", 19, "x:T1, y_scale:T1, y_zero_point:T2?", "y:T2",
      "axis:i=1, saturate:i=1", TQ, "Quantize (float8)", ox__infer_quantize },
    { "", "QuantizeLinear", 21, "x:T1, y_scale:T1, y_zero_point:T2?", "y:T2",
      "axis:i=1, block_size:i=0, output_dtype:i=0, saturate:i=1", TQ,
      "Quantize (blocked, output_dtype)", ox__infer_quantize },
    { "", "QuantizeLinear", 23, "x:T1, y_scale:T2, y_zero_point:T3?", "y:T3",
      "axis:i=1, block_size:i=0, output_dtype:i=0, precision:i=0, saturate:i=1", TQ,
      "Quantize (precision)", ox__infer_quantize },
    { "", "DequantizeLinear", 10, "x:T, x_scale:float, x_zero_point:T?", "y:float", "",
      "T: int8|uint8|int32", "Dequantize", ox__infer_dequantize },
    { "", "DequantizeLinear", 13, "x:T, x_scale:float, x_zero_point:T?", "y:float", "axis:i=1",
      "T: int8|uint8|int32", "Dequantize (per-axis)", ox__infer_dequantize },
    { "", "DequantizeLinear", 19, "x:T1, x_scale:T2, x_zero_point:T1?", "y:T2", "axis:i=1",
      "T1: int/float8; T2: float|float16|bfloat16", "Dequantize (output type of scale)",
      ox__infer_dequantize },
    { "", "DequantizeLinear", 21, "x:T1, x_scale:T2, x_zero_point:T1?", "y:T2",
      "axis:i=1, block_size:i=0", "T1: int/float8/int4; T2: float types",
      "Dequantize (blocked)", ox__infer_dequantize },
    { "", "DequantizeLinear", 23, "x:T1, x_scale:T2, x_zero_point:T1?", "y:T3",
      "axis:i=1, block_size:i=0, output_dtype:i=0", "T1: int/float8/int4; T2, T3: float types",
      "Dequantize (output_dtype)", ox__infer_dequantize },
    { "", "DynamicQuantizeLinear", 11, "x:float", "y:uint8, y_scale:float, y_zero_point:uint8",
      "", "", "Quantize to uint8 computing scale and zero point", ox__infer_dynamic_quantize },

    /* ---- detection, signal, misc ------------------------------------------ */
    { "", "NonMaxSuppression", 10,
      "boxes:float, scores:float, max_output_boxes_per_class:int64?, iou_threshold:float?, "
      "score_threshold:float?", "selected_indices:int64", "center_point_box:i=0", "",
      "Select boxes by non-max suppression", ox__infer_nms },
    { "", "DFT", 17, "input:T1, dft_length:T2?", "output:T1", "axis:i=1, inverse:i=0, onesided:i=0",
      "T1: float types; T2: int32|int64", "Discrete Fourier transform (axis attribute)",
      ox__infer_dft },
    { "", "DFT", 20, "input:T1, dft_length:T2?, axis:int64?", "output:T1",
      "inverse:i=0, onesided:i=0", "T1: float types; T2: int32|int64",
      "Discrete Fourier transform (axis input)", ox__infer_dft },
    { "", "STFT", 17, "signal:T1, frame_step:T2, window:T1?, frame_length:T2?", "output:T1",
      "onesided:i=1", "T1: float types; T2: int32|int64", "Short-time Fourier transform",
      ox__infer_stft },
    { "", "ImageDecoder", 20, "encoded_stream:uint8", "image:uint8", "pixel_format:s=RGB", "",
      "Decode an image file", ox__infer_image_decoder },
    { "", "NegativeLogLikelihoodLoss", 12, "input:T, target:Tind, weight:T?", "loss:T",
      "ignore_index:i, reduction:s=mean", TF, "Negative log likelihood loss",
      ox__infer_nll_loss },
    { "", "SoftmaxCrossEntropyLoss", 12, "scores:T, labels:Tind, weights:T?",
      "output:T, log_prob:T?", "ignore_index:i, reduction:s=mean", TF,
      "Softmax cross-entropy loss", ox__infer_sce_loss },
    { "", "TfIdfVectorizer", 9, "X:T", "Y:float",
      "max_gram_length:i!, max_skip_count:i!, min_gram_length:i!, mode:s!, ngram_counts:ints!, "
      "ngram_indexes:ints!, pool_int64s:ints, pool_strings:strings, weights:floats",
      "T: string|int32|int64", "N-gram TF-IDF vectorization", ox__infer_tfidf },
    { "", "StringNormalizer", 10, "X:string", "Y:string",
      "case_change_action:s=NONE, is_case_sensitive:i=0, locale:s, stopwords:strings", "",
      "Case change and stopword removal", ox__infer_string_normalizer },
    { "", "StringConcat", 20, "X:string, Y:string", "Z:string", "", "",
      "Concatenate strings, broadcast", ox__infer_string_concat },
    { "", "StringSplit", 20, "X:string", "Y:string, Z:int64", "delimiter:s, maxsplit:i", "",
      "Split strings into substrings", ox__infer_string_split },
    { "", "RegexFullMatch", 20, "X:string", "Y:bool", "pattern:s", "",
      "Whether each string fully matches pattern", ox__infer_regex_full_match },

    /* ---- ai.onnx.ml ------------------------------------------------------------ */
    { "ai.onnx.ml", "ArrayFeatureExtractor", 1, "X:T, Y:int64", "Z:T", "", TA,
      "Select elements of the last axis", ox__infer_array_feature_extractor },
    { "ai.onnx.ml", "Binarizer", 1, "X:T", "Y:T", "threshold:f=0.0", TN,
      "1 where x > threshold else 0", ox__infer_binarizer },
    { "ai.onnx.ml", "LabelEncoder", 2, "X:T1", "Y:T2",
      "default_float:f=-0.0, default_int64:i=-1, default_string:s=_Unused, keys_floats:floats, "
      "keys_int64s:ints, keys_strings:strings, values_floats:floats, values_int64s:ints, "
      "values_strings:strings", "T1, T2: string|int64|float", "Map keys to values",
      ox__infer_label_encoder },
    { "ai.onnx.ml", "LabelEncoder", 4, "X:T1", "Y:T2",
      "default_float:f=-0.0, default_int64:i=-1, default_string:s=_Unused, default_tensor:t, "
      "keys_floats:floats, keys_int64s:ints, keys_strings:strings, keys_tensor:t, "
      "values_floats:floats, values_int64s:ints, values_strings:strings, values_tensor:t",
      "T1, T2: string|int16|int32|int64|float|double", "Map keys to values (tensor attrs)",
      ox__infer_label_encoder },
    { "ai.onnx.ml", "TreeEnsemble", 5, "X:T", "Y:T",
      "aggregate_function:i=1, leaf_targetids:ints!, leaf_weights:t!, membership_values:t, "
      "n_targets:i!, nodes_falseleafs:ints!, nodes_falsenodeids:ints!, nodes_featureids:ints!, "
      "nodes_modes:t!, nodes_splits:t!, nodes_trueleafs:ints!, nodes_truenodeids:ints!, "
      "post_transform:i=0, tree_roots:ints!", TF, "Tree ensemble regressor/classifier scores",
      ox__infer_tree_ensemble },

    /* ---- ai.onnx.preview(.training) ------------------------------------------ */
    { "ai.onnx.preview", "FlexAttention", 1,
      "Q:T, K:T, V:T", "Y:T",
      "enable_gqa:i=0, prob_mod:g, scale:f, score_mod:g", TF,
      "Attention with score/probability modifier subgraphs", ox__infer_flex_attention },
    { "ai.onnx.preview.training", "Adagrad", 1, "R:T1, T:T2, inputs:T3...", "outputs:T3...",
      "decay_factor:f=0.0, epsilon:f=1e-06, norm_coefficient:f=0.0", "T3: float|double",
      "Adagrad optimizer step", ox__infer_training_opt },
    { "ai.onnx.preview.training", "Adam", 1, "R:T1, T:T2, inputs:T3...", "outputs:T3...",
      "alpha:f=0.9, beta:f=0.999, epsilon:f=1e-06, norm_coefficient:f=0.0, "
      "norm_coefficient_post:f=0.0", "T3: float|double", "Adam optimizer step",
      ox__infer_training_opt },
    { "ai.onnx.preview.training", "Momentum", 1, "R:T1, T:T2, inputs:T3...", "outputs:T3...",
      "alpha:f!, beta:f!, mode:s!, norm_coefficient:f!", "T3: float|double",
      "Momentum optimizer step", ox__infer_training_opt },

    /* ---- com.microsoft (emitted by our fusions) ------------------------------ */
    { "com.microsoft", "FusedConv", 1, "X:T, W:T, B:T?, Z:T?", "Y:T",
      "activation:s, activation_params:floats, " CONV_ATTRS, TF,
      "Conv + bias + optional residual Z + activation", ox__infer_conv },
    { "com.microsoft", "FusedGemm", 1, "A:T, B:T, C:T?", "Y:T",
      "activation:s, activation_alpha:f, activation_beta:f, activation_gamma:f, alpha:f=1.0, "
      "beta:f=1.0, transA:i=0, transB:i=0", TF, "Gemm + activation", ox__infer_gemm },
    { "com.microsoft", "FusedMatMul", 1, "A:T, B:T", "Y:T",
      "alpha:f=1.0, transA:i=0, transB:i=0, transBatchA:i=0, transBatchB:i=0", TF,
      "alpha * op(A) x op(B) with transposes", ox__infer_fused_matmul },
    { "com.microsoft", "Gelu", 1, "X:T", "Y:T", "", TF, "GELU (erf form)",
      ox__infer_unary },
    { "com.microsoft", "FastGelu", 1, "X:T, bias:T?", "Y:T", "", TF,
      "GELU (tanh approximation) with optional bias", ox__infer_gelu_bias },
    { "com.microsoft", "BiasGelu", 1, "A:T, B:T", "C:T", "", TF, "GELU(A + bias B)",
      ox__infer_gelu_bias },
    { "com.microsoft", "QuickGelu", 1, "X:T", "Y:T", "alpha:f=1.702", TF,
      "x * sigmoid(alpha * x)", ox__infer_unary },
    { "com.microsoft", "GemmFastGelu", 1, "X:T, W:T, bias:T?", "Y:T", "", TF,
      "FastGelu(X x W + bias)", ox__infer_matmul },
    { "com.microsoft", "SimplifiedLayerNormalization", 1, "X:T, scale:V", "Y:V, inv_std_var:U?",
      "axis:i=-1, epsilon:f=1e-05, stash_type:i=1", TF,
      "RMS normalization (contrib form of RMSNormalization)", ox__infer_layer_norm },
    { "com.microsoft", "SkipSimplifiedLayerNormalization", 1, "input:T, skip:T, gamma:T, bias:T?",
      "output:T, mean:U?, inv_std_var:U?, input_skip_bias_sum:T?", "epsilon:f=1e-12", TF,
      "RMS normalization of input + skip + bias", ox__infer_skip_ln_ms },
    { "com.microsoft", "LayerNormalization", 1, "X:T, Scale:T, B:T?",
      "Y:T, Mean:U?, InvStdDev:U?", "axis:i=-1, epsilon:f=1e-05, stash_type:i=1", TF,
      "Layer normalization (contrib form)", ox__infer_layer_norm },
    { "com.microsoft", "EmbedLayerNormalization", 1,
      "input_ids:M, segment_ids:M?, word_embedding:T, position_embedding:T, "
      "segment_embedding:T?, gamma:T, beta:T, mask:M?, position_ids:M?",
      "output:T, mask_index:M?, embedding_sum:T?", "epsilon:f=1e-12, mask_index_type:i=1", TF,
      "LayerNorm(word[ids] + position[pos] + segment[seg]); mask_index = mask row sums",
      ox__infer_embed_ln_ms },
    { "com.microsoft", "SkipLayerNormalization", 1, "input:T, skip:T, gamma:T, beta:T?, bias:T?",
      "output:T, mean:U?, inv_std_var:U?, input_skip_bias_sum:T?", "epsilon:f=1e-12", TF,
      "LayerNorm(input + skip + bias)", ox__infer_skip_ln_ms },
    { "com.microsoft", "Attention", 1,
      "input:T, weights:T, bias:T?, mask_index:M?, past:T?, attention_bias:T?, "
      "past_sequence_length:M?", "output:T, present:T?",
      "do_rotary:i=0, mask_filter_value:f=-10000.0, num_heads:i!, past_present_share_buffer:i=0, "
      "qkv_hidden_sizes:ints, rotary_embedding_dim:i=0, scale:f, unidirectional:i=0", TF,
      "Multi-head self-attention with packed QKV projection", ox__infer_attention_ms },
    { "com.microsoft", "DynamicQuantizeMatMul", 1, "A:T1, B:T2, b_scale:T1, b_zero_point:T2?, bias:T1?",
      "Y:T1", "", "T1: float, T2: int8|uint8",
      "MatMul of float A (quantized to uint8 at run time) by int8 B with per-column scales",
      ox__infer_matmul },
    { "com.microsoft", "MultiHeadAttention", 1,
      "query:T, key:T?, value:T?, bias:T?, key_padding_mask:M?, attention_bias:T?, "
      "past_key:T?, past_value:T?", "output:T, present_key:T?, present_value:T?",
      "mask_filter_value:f=-10000.0, num_heads:i!, scale:f, unidirectional:i=0", TF,
      "Multi-head attention on projected Q, K, V", ox__infer_mha_ms },
};

#define N_OPS ((int)(sizeof ops_table / sizeof ops_table[0]))

static int sorted_idx[N_OPS];
static pthread_once_t sort_once = PTHREAD_ONCE_INIT;

static const char *norm_domain(const char *d)
{
    if (!d || !strcmp(d, "ai.onnx"))
        return "";
    return d;
}

static int cmp_entry(const void *a, const void *b)
{
    const ox_op_schema *x = &ops_table[*(const int *)a];
    const ox_op_schema *y = &ops_table[*(const int *)b];
    int c = strcmp(x->domain, y->domain);
    if (c)
        return c;
    c = strcmp(x->op_type, y->op_type);
    if (c)
        return c;
    return (x->since_version > y->since_version) - (x->since_version < y->since_version);
}

static void sort_table(void)
{
    for (int i = 0; i < N_OPS; i++)
        sorted_idx[i] = i;
    qsort(sorted_idx, N_OPS, sizeof sorted_idx[0], cmp_entry);
}

static int key_cmp(const char *dom, const char *op, const ox_op_schema *s)
{
    int c = strcmp(dom, s->domain);
    return c ? c : strcmp(op, s->op_type);
}

const ox_op_schema *ox_op_find(const char *domain, const char *op_type, int64_t opset)
{
    if (!op_type)
        return NULL;
    pthread_once(&sort_once, sort_table);
    const char *dom = norm_domain(domain);
    /* Binary search for the last entry <= (dom, op, opset). */
    int lo = 0, hi = N_OPS - 1, found = -1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        const ox_op_schema *s = &ops_table[sorted_idx[mid]];
        int c = key_cmp(dom, op_type, s);
        if (c > 0 || (c == 0 && s->since_version <= opset)) {
            if (c == 0)
                found = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    return found >= 0 ? &ops_table[sorted_idx[found]] : NULL;
}

const ox_op_schema *ox_op_for_node(const ox_model *m, const ox_node *n)
{
    if (!n)
        return NULL;
    const char *dom = norm_domain(n->domain);
    int64_t v = m ? ox_model_opset(m, dom) : -1;
    if (v < 0 && m && !*dom)
        v = ox_model_opset(m, "ai.onnx");
    if (v < 0) {
        /* A model that forgets to import the domain of a contrib op still
         * deserves its schema; default-domain nodes without an import are
         * treated as the newest opset. */
        v = INT32_MAX;
    }
    return ox_op_find(dom, n->op_type, v);
}

int ox_op_count(void)
{
    return N_OPS;
}

const ox_op_schema *ox_op_at(int i)
{
    pthread_once(&sort_once, sort_table);
    if (i < 0 || i >= N_OPS)
        return NULL;
    return &ops_table[sorted_idx[i]];
}

void ox_op_each(ox_op_each_fn fn, void *ctx)
{
    const ox_op_schema *s;
    for (int i = 0; (s = ox_op_at(i)); i++)
        fn(s, ctx);
}

const ox_op_schema *ox_op_next_version(const ox_op_schema *s)
{
    if (!s)
        return NULL;
    pthread_once(&sort_once, sort_table);
    for (int i = 0; i < N_OPS - 1; i++) {
        if (&ops_table[sorted_idx[i]] == s) {
            const ox_op_schema *t = &ops_table[sorted_idx[i + 1]];
            if (!strcmp(t->domain, s->domain) && !strcmp(t->op_type, s->op_type))
                return t;
            return NULL;
        }
    }
    return NULL;
}

/* Counts the comma-separated parameters of a signature string. */
static void sig_arity(const char *sig, int *min, int *max)
{
    *min = 0;
    *max = 0;
    if (!sig || !*sig)
        return;
    const char *p = sig;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        bool opt = len > 0 && memchr(p, '?', len) != NULL;
        bool var = len >= 3 && memmem(p, len, "...", 3) != NULL;
        if (var) {
            if (!opt)
                *min += 1;
            *max = -1;
        } else {
            if (*max >= 0)
                *max += 1;
            if (!opt)
                *min = (*max >= 0) ? *max : *min + 1;
        }
        if (!e)
            break;
        p = e + 1;
    }
}

void ox_op_schema_arity(const ox_op_schema *s, ox_op_arity *a)
{
    sig_arity(s->inputs, &a->min_in, &a->max_in);
    sig_arity(s->outputs, &a->min_out, &a->max_out);
}

static ox_attr_type attr_type_of(const char *t, size_t len)
{
    static const struct { const char *n; ox_attr_type t; } map[] = {
        { "i", OX_ATTR_INT }, { "f", OX_ATTR_FLOAT }, { "s", OX_ATTR_STRING },
        { "t", OX_ATTR_TENSOR }, { "g", OX_ATTR_GRAPH }, { "ints", OX_ATTR_INTS },
        { "floats", OX_ATTR_FLOATS }, { "strings", OX_ATTR_STRINGS },
        { "tensors", OX_ATTR_TENSORS }, { "graphs", OX_ATTR_GRAPHS },
        { "sparse", OX_ATTR_SPARSE_TENSOR }, { "tp", OX_ATTR_TYPE_PROTO },
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strlen(map[i].n) == len && !strncmp(map[i].n, t, len))
            return map[i].t;
    return OX_ATTR_UNDEFINED;
}

bool ox_op_schema_attr(const ox_op_schema *s, int k, ox_op_attr_info *out)
{
    if (!s || !s->attrs || k < 0)
        return false;
    const char *p = s->attrs;
    /* Skip k entries; commas inside [..] defaults belong to the default. */
    for (int i = 0; i < k; i++) {
        int depth = 0;
        while (*p && !(*p == ',' && depth == 0)) {
            if (*p == '[')
                depth++;
            else if (*p == ']')
                depth--;
            p++;
        }
        if (!*p)
            return false;
        p++;
    }
    while (*p == ' ')
        p++;
    if (!*p)
        return false;
    const char *end = p;
    int depth = 0;
    while (*end && !(*end == ',' && depth == 0)) {
        if (*end == '[')
            depth++;
        else if (*end == ']')
            depth--;
        end++;
    }
    memset(out, 0, sizeof *out);
    const char *colon = memchr(p, ':', (size_t)(end - p));
    if (!colon)
        return false;
    size_t nl = (size_t)(colon - p);
    if (nl >= sizeof out->name)
        nl = sizeof out->name - 1;
    memcpy(out->name, p, nl);
    const char *t = colon + 1;
    const char *te = t;
    while (te < end && *te != '=' && *te != '!')
        te++;
    out->type = attr_type_of(t, (size_t)(te - t));
    if (te < end && *te == '!') {
        out->required = true;
    } else if (te < end && *te == '=') {
        out->has_default = true;
        size_t dl = (size_t)(end - te - 1);
        if (dl >= sizeof out->dflt)
            dl = sizeof out->dflt - 1;
        memcpy(out->dflt, te + 1, dl);
    }
    return true;
}

typedef struct align_ctx {
    int64_t theirs, mine;
    bool same;
} align_ctx;

static void align_graph(ox_graph *g, void *ctx)
{
    align_ctx *a = ctx;
    for (int i = 0; i < g->n_nodes && a->same; i++) {
        const ox_node *n = g->nodes[i];
        if (*norm_domain(n->domain))
            continue;
        if (ox_op_find("", n->op_type, a->theirs) != ox_op_find("", n->op_type, a->mine))
            a->same = false;
    }
}

int ox_op_align_function_opsets(ox_model *m)
{
    int64_t mine = m ? ox_model_opset(m, "") : -1;
    int left = 0;
    for (int i = 0; mine >= 0 && i < m->n_functions; i++) {
        ox_function *f = &m->functions[i];
        ox_opset *imp = NULL;
        for (int k = 0; k < f->n_opsets; k++)
            if (!*norm_domain(f->opsets[k].domain))
                imp = &f->opsets[k];
        if (!imp || imp->version == mine || !f->body)
            continue;
        align_ctx a = {imp->version, mine, true};
        ox_graph_visit(f->body, align_graph, &a);
        if (a.same)
            imp->version = mine;
        else
            left++;
    }
    return left;
}
