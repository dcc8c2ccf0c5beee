/* ONNX element types (TensorProto.DataType values) and their properties,
 * plus conversions between float and the reduced-precision formats. */
#ifndef ONNXSCOPE_DTYPE_H
#define ONNXSCOPE_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    OX_DT_UNDEFINED = 0,
    OX_DT_FLOAT = 1,
    OX_DT_UINT8 = 2,
    OX_DT_INT8 = 3,
    OX_DT_UINT16 = 4,
    OX_DT_INT16 = 5,
    OX_DT_INT32 = 6,
    OX_DT_INT64 = 7,
    OX_DT_STRING = 8,
    OX_DT_BOOL = 9,
    OX_DT_FLOAT16 = 10,
    OX_DT_DOUBLE = 11,
    OX_DT_UINT32 = 12,
    OX_DT_UINT64 = 13,
    OX_DT_COMPLEX64 = 14,
    OX_DT_COMPLEX128 = 15,
    OX_DT_BFLOAT16 = 16,
    OX_DT_FLOAT8E4M3FN = 17,
    OX_DT_FLOAT8E4M3FNUZ = 18,
    OX_DT_FLOAT8E5M2 = 19,
    OX_DT_FLOAT8E5M2FNUZ = 20,
    OX_DT_UINT4 = 21,
    OX_DT_INT4 = 22,
    OX_DT_FLOAT4E2M1 = 23,
    OX_DT_FLOAT8E8M0 = 24,
    OX_DT_UINT2 = 25,
    OX_DT_INT2 = 26,
    OX_DT_COUNT
} ox_dtype;

bool ox_dtype_valid(int dt);
const char *ox_dtype_name(ox_dtype dt);      /* "float32", "int64", ... */
ox_dtype ox_dtype_from_name(const char *s);  /* OX_DT_UNDEFINED if unknown */
/* Bits per element in raw_data layout (4 for int4/uint4/float4, 2 for int2).
 * 0 for string and undefined. */
int ox_dtype_bits(ox_dtype dt);
/* Bytes needed for n elements in raw_data layout (sub-byte types packed,
 * rounded up). Returns false on overflow. */
bool ox_dtype_nbytes(ox_dtype dt, int64_t n, size_t *out);
bool ox_dtype_is_float(ox_dtype dt);   /* any floating type incl. f16/bf16/f8 */
bool ox_dtype_is_int(ox_dtype dt);     /* signed or unsigned integers, incl. 4/2-bit */
bool ox_dtype_is_signed(ox_dtype dt);

float ox_f16_to_f32(uint16_t h);
uint16_t ox_f32_to_f16(float f);
float ox_bf16_to_f32(uint16_t h);
uint16_t ox_f32_to_bf16(float f);
/* float8 variants; saturate selects saturating conversion (the Cast default). */
float ox_f8_to_f32(ox_dtype dt, uint8_t v);
uint8_t ox_f32_to_f8(ox_dtype dt, float f, bool saturate);

#endif
