/* Fast 2-D pooling loops (pool_fast.c), shared by pool.c's NCHW kernels and
 * the channels-last kernels (nhwc.c). Geometry of one 2-D window: a 1-D
 * pooling is the H == 1, kh == 1 case. Executor-private. */
#ifndef ONNXSCOPE_EXEC_K_NN_POOL_FAST_H
#define ONNXSCOPE_EXEC_K_NN_POOL_FAST_H

#include <stdbool.h>
#include <stdint.h>

#include "onnxscope/exec.h"

typedef struct nn_pool2d {
    int64_t H, W, OH, OW;
    int64_t kh, kw, sh, sw, dh, dw;
    int64_t pt, pl;      /* leading pads (top, left) */
    int64_t peh, pew;    /* trailing pads: taps past H + peh / W + pew are not counted */
    bool avg;            /* AveragePool, else MaxPool */
    bool include_pad;    /* AveragePool's count_include_pad */
    int64_t planes;      /* NCHW: H x W planes in the tensor X points to (0: unknown); the
                          * row passes read up to 15 floats past a row only inside it */
} nn_pool2d;

/* NCHW: pools the planes [p0, p1) of X (H x W each) into Y (OH x OW each),
 * separably (rows, then columns, vectorized). False (nothing written) when
 * it cannot take the geometry: the caller runs its generic loop. MaxPool
 * propagates NaN; ties between +0 and -0 may pick either (the values compare
 * equal). AveragePool sums in a different order than the generic loop (same
 * value within float rounding). */
bool nn_pool2d_nchw(const nn_pool2d *g, const float *X, float *Y, int64_t p0, int64_t p1);

/* NHWC (the data of an [N, C, H, W] tensor stored channels-last): output
 * rows r = n * OH + oy in [r0, r1), vectorized over the C channels. */
void nn_pool2d_nhwc(const nn_pool2d *g, int64_t C, const float *X, float *Y, int64_t r0,
                    int64_t r1);
void nn_pool2d_nhwc_ys(const nn_pool2d *g, int64_t C, const float *X, float *Y, int64_t ys,
                       int64_t r0, int64_t r1);

/* The 2-D geometry of a MaxPool/AveragePool node for a rank-4 input x, from
 * the node's attributes (pool.c; same rules as the kernels). Errors are
 * reported through c (the node would fail in its plain kernel too). */
ox_status nn_pool2d_geom(ox_kernel_ctx *c, const ox_tensor *x, bool avg, nn_pool2d *g);

/* ONNXSCOPE_NO_FAST_POOL=1: pool.c's generic loops only (tests compare). */
bool nn_fast_pool_enabled(void);

#endif
