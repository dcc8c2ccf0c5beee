/* INT8 dynamic quantization (the quantize_dynamic pass, docs/PASSES.md):
 * its options, set on a pass manager, and what it reports per weight so
 * that a user sees which layers suffer. The report entries land in
 * ox_pass_report.quant after a run. */
#ifndef ONNXSCOPE_QUANTIZE_H
#define ONNXSCOPE_QUANTIZE_H

#include <stdbool.h>
#include <stdint.h>

#include "onnxscope/passes.h"

typedef enum {
    /* DynamicQuantizeLinear + MatMulInteger/ConvInteger + Cast + Mul
     * (standard ONNX); com.microsoft DynamicQuantizeMatMul for MatMul/Gemm
     * under --target ort. */
    OX_QUANT_INTEGER = 0,
    /* QuantizeLinear'd weights behind DequantizeLinear, activations through
     * DynamicQuantizeLinear + DequantizeLinear; the float op stays. */
    OX_QUANT_QDQ,
} ox_quant_format;

/* Weights with fewer elements than this stay float by default: the
 * DynamicQuantizeLinear/Cast/Mul around a tiny product cost more than
 * they save (docs/PASSES.md). */
#define OX_QUANT_MIN_ELEMS_DEFAULT 4096

typedef struct ox_quant_opts {
    ox_quant_format format;
    bool conv;          /* quantize Conv weights too (off by default) */
    bool per_tensor;    /* one scale per weight instead of per output channel */
    int64_t min_elems;  /* weights with fewer elements stay float */
} ox_quant_opts;

void ox_quant_opts_default(ox_quant_opts *o);
/* Parses "integer"/"qdq"; false if unknown. */
bool ox_quant_format_parse(const char *s, ox_quant_format *out);
const char *ox_quant_format_name(ox_quant_format f);
/* Copies o into the manager (NULL: the defaults). */
void ox_pm_set_quant_opts(ox_pass_manager *pm, const ox_quant_opts *o);

/* One quantized weight. Scales are symmetric (zero point 0, int8 in
 * [-127, 127]); the error compares the float weight with its dequantized
 * int8 form. */
typedef struct ox_quant_entry {
    int node_id;        /* the node doing the product after the pass */
    char *node;         /* name of the original MatMul/Gemm/Conv */
    char *op;           /* its op type */
    char *weight;       /* the float weight's name */
    const char *form;   /* "MatMulInteger", "ConvInteger", "QDQ", "DynamicQuantizeMatMul" */
    int64_t elems;      /* weight elements */
    int64_t channels;   /* scales: 1 (per tensor) or the output channels */
    float scale_min, scale_max;
    int zero_point;     /* always 0 (symmetric) */
    double max_abs_err; /* max |w - dequant(quant(w))| */
    double snr_db;      /* 10 log10(sum w^2 / sum err^2); HUGE_VAL when exact */
    int64_t bytes_before, bytes_after;  /* the weight, then int8 + scales */
} ox_quant_entry;

#endif
