/* to_fp16's pieces that unit tests check on their own (src/passes/to_fp16.c,
 * docs/PASSES.md "to_fp16"). */
#ifndef ONNXSCOPE_TO_FP16_H
#define ONNXSCOPE_TO_FP16_H

#include <stdbool.h>
#include <stdint.h>

#include "onnxscope/tensor.h"

/* The largest finite float16 and the smallest positive (subnormal) one. */
#define OX_FP16_MAX 65504.0
#define OX_FP16_MIN_POS 5.9604644775390625e-08

/* True when op_type is on the default block list (the ops onnxconverter-
 * common's float16 converter keeps in float32 by default). */
bool ox__fp16_default_blocked(const char *op_type);
/* The default block list, NULL-terminated (for `passes` and the docs). */
const char *const *ox__fp16_block_list(void);

/* Clamping counts of a conversion. */
typedef struct ox_fp16_clamp {
    int64_t over;    /* finite values beyond +-65504, made +-65504 */
    int64_t under;   /* non-zero values that would round to 0, made +-2^-24 */
} ox_fp16_clamp;

/* A float16 copy of a float32 tensor, values clamped into the finite
 * float16 range (inf and NaN kept), counts added to *cl (may be NULL).
 * NULL on OOM or when t is not float32. */
ox_tensor *ox__fp16_tensor(const ox_tensor *t, ox_fp16_clamp *cl);

#endif
