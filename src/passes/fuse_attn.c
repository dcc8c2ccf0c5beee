/* Attention fusions (com.microsoft Attention / MultiHeadAttention under
 * --target ort): not implemented yet; the table is in the registry so the
 * pipeline order is fixed. */
#include "passes/fuse_util.h"

const ox_pass ox__passes_fuse_attn[] = {
    {0},
};
