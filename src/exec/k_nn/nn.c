/* The k_nn kernel table: neural-network operators (matrix products,
 * convolutions, pooling, normalization, recurrent, quantization, attention)
 * generated from the list in nn_kernels.h. */
#include "nn_common.h"
#include "nn_kernels.h"


#define NN_ENTRY(dom, op, ver, fn) {dom, op, ver, ox_nn_k_##fn},
const ox_kernel_entry ox_kernels_nn[] = {
    NN_KERNEL_LIST(NN_ENTRY)
    {NULL, NULL, 0, NULL},
};
#undef NN_ENTRY
