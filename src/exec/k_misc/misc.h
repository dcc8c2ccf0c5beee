/* Internal: kernels of the "misc" family (everything no other family
 * covers), split over a few files and listed in one table (misc.c). */
#ifndef ONNXSCOPE_K_MISC_H
#define ONNXSCOPE_K_MISC_H

#include "onnxscope/exec.h"

#define OX_MISC_KERNELS(X) \
    X(string_normalizer) X(string_concat) X(string_split) X(regex_full_match) \
    X(hann_window) X(hamming_window) X(blackman_window) X(dft) X(stft) \
    X(mel_weight_matrix) \
    X(adagrad) X(momentum) X(adam) \
    X(center_crop_pad) X(det) X(nms) X(grid_sample) X(affine_grid) X(col2im) \
    X(binarizer) X(array_feature_extractor) X(label_encoder) X(tfidf) X(roi_align) X(tree_ensemble) \
    X(random_normal) X(random_uniform) X(random_normal_like) X(random_uniform_like) \
    X(bernoulli) X(multinomial)

#define X(name) ox_status ox_misc_##name(ox_kernel_ctx *c);
OX_MISC_KERNELS(X)
#undef X

/* Numpy broadcasting of two shapes into out (rank = max); false if they
 * do not broadcast. */
bool ox_misc_broadcast(int ra, const int64_t *da, int rb, const int64_t *db, int *ro,
                       int64_t *dout);
/* Index into an input of shape (r, d) for output multi-index idx (rank ro). */
int64_t ox_misc_bcast_index(int ro, const int64_t *idx, int r, const int64_t *d);
/* A float output of the input's dtype from double values computed per
 * element (float16/bfloat16/double/float). */
double ox_misc_getf(const ox_tensor *t, int64_t i);

#endif
