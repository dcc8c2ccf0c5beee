/* The k_nn kernel list, one X(domain, op_type, since_version, fn) line per
 * table entry: nn.c builds ox_kernels_nn from it and every kernel file
 * defines ox_nn_k_<fn> with NN_KERNEL(fn). */
#ifndef ONNXSCOPE_K_NN_KERNELS_H
#define ONNXSCOPE_K_NN_KERNELS_H

#define NN_KERNEL_LIST(X)                                   \
    X("", "MatMul", 1, matmul)                              \
    X("", "Gemm", 1, gemm)                                  \
    X("", "MatMulInteger", 10, matmul_integer)              \
    X("", "QLinearMatMul", 10, qlinear_matmul)              \
    X("com.microsoft", "DynamicQuantizeMatMul", 1, dynamic_quantize_matmul) \
    X("com.microsoft", "FusedMatMul", 1, fused_matmul)      \
    X("com.microsoft", "FusedGemm", 1, fused_gemm)          \
    X("com.microsoft", "GemmFastGelu", 1, gemm_fast_gelu)   \
    X("", "Conv", 1, conv)                                  \
    X("", "ConvTranspose", 1, conv_transpose)               \
    X("", "ConvInteger", 10, conv_integer)                  \
    X("", "QLinearConv", 10, qlinear_conv)                  \
    X("", "DeformConv", 19, deform_conv)                    \
    X("", "CausalConvWithState", 27, causal_conv_with_state) \
    X("com.microsoft", "FusedConv", 1, fused_conv)          \
    X("", "MaxPool", 1, max_pool)                           \
    X("", "AveragePool", 1, average_pool)                   \
    X("", "LpPool", 1, lp_pool)                             \
    X("", "GlobalMaxPool", 1, global_max_pool)              \
    X("", "GlobalAveragePool", 1, global_average_pool)      \
    X("", "GlobalLpPool", 1, global_lp_pool)                \
    X("", "MaxRoiPool", 1, max_roi_pool)                    \
    X("", "MaxUnpool", 9, max_unpool)                       \
    X("", "RoiAlign", 10, roi_align)                        \
    X("", "BatchNormalization", 1, batch_norm)              \
    X("", "InstanceNormalization", 1, instance_norm)        \
    X("", "LayerNormalization", 1, layer_norm)              \
    X("", "SimplifiedLayerNormalization", 1, rms_norm)      \
    X("", "RMSNormalization", 23, rms_norm)                 \
    X("", "GroupNormalization", 18, group_norm)             \
    X("", "LpNormalization", 1, lp_norm)                    \
    X("", "MeanVarianceNormalization", 9, mvn)              \
    X("", "LRN", 1, lrn)                                    \
    X("", "Dropout", 1, dropout)                            \
    X("com.microsoft", "LayerNormalization", 1, layer_norm) \
    X("com.microsoft", "SimplifiedLayerNormalization", 1, rms_norm) \
    X("com.microsoft", "SkipLayerNormalization", 1, skip_layer_norm) \
    X("com.microsoft", "EmbedLayerNormalization", 1, embed_layer_norm) \
    X("com.microsoft", "SkipSimplifiedLayerNormalization", 1, skip_simplified_layer_norm) \
    X("com.microsoft", "Gelu", 1, ms_gelu)                  \
    X("com.microsoft", "BiasGelu", 1, bias_gelu)            \
    X("com.microsoft", "FastGelu", 1, fast_gelu)            \
    X("com.microsoft", "QuickGelu", 1, quick_gelu)          \
    X("", "QuantizeLinear", 10, quantize_linear)            \
    X("", "DequantizeLinear", 10, dequantize_linear)        \
    X("", "DynamicQuantizeLinear", 11, dynamic_quantize_linear) \
    X("", "RNN", 1, rnn)                                    \
    X("", "GRU", 1, gru)                                    \
    X("", "LSTM", 1, lstm)                                  \
    X("", "Attention", 23, attention)                       \
    X("", "RotaryEmbedding", 23, rotary_embedding)          \
    X("", "LinearAttention", 27, linear_attention)          \
    X("ai.onnx.preview", "FlexAttention", 1, flex_attention) \
    X("", "Einsum", 12, einsum)                             \
    X("com.microsoft", "Attention", 1, ms_attention)        \
    X("com.microsoft", "MultiHeadAttention", 1, ms_multihead_attention)

#endif
