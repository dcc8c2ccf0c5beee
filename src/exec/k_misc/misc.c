/* The misc family's kernel table: ops no other family covers (strings,
 * signal processing, training optimizers, geometry, ai.onnx.ml). Random
 * ops are deliberately absent: their outputs cannot be checked, and the
 * backend runner reports their cases as skipped. */
#include "exec/k_misc/misc.h"

const ox_kernel_entry ox_kernels_misc[] = {
    {"", "StringNormalizer", 10, ox_misc_string_normalizer},
    {"", "StringConcat", 20, ox_misc_string_concat},
    {"", "StringSplit", 20, ox_misc_string_split},
    {"", "RegexFullMatch", 20, ox_misc_regex_full_match},
    {"", "HannWindow", 17, ox_misc_hann_window},
    {"", "HammingWindow", 17, ox_misc_hamming_window},
    {"", "BlackmanWindow", 17, ox_misc_blackman_window},
    {"", "DFT", 17, ox_misc_dft},
    {"", "STFT", 17, ox_misc_stft},
    {"", "MelWeightMatrix", 17, ox_misc_mel_weight_matrix},
    {"ai.onnx.preview.training", "Adagrad", 1, ox_misc_adagrad},
    {"ai.onnx.preview.training", "Momentum", 1, ox_misc_momentum},
    {"ai.onnx.preview.training", "Adam", 1, ox_misc_adam},
    {"", "CenterCropPad", 18, ox_misc_center_crop_pad},
    {"", "Det", 11, ox_misc_det},
    {"", "NonMaxSuppression", 10, ox_misc_nms},
    {"", "GridSample", 16, ox_misc_grid_sample},
    {"", "AffineGrid", 20, ox_misc_affine_grid},
    {"", "Col2Im", 18, ox_misc_col2im},
    {"ai.onnx.ml", "Binarizer", 1, ox_misc_binarizer},
    {"ai.onnx.ml", "ArrayFeatureExtractor", 1, ox_misc_array_feature_extractor},
    {"ai.onnx.ml", "LabelEncoder", 1, ox_misc_label_encoder},
    {"", "TfIdfVectorizer", 9, ox_misc_tfidf},
    {"", "RoiAlign", 10, ox_misc_roi_align},
    {"ai.onnx.ml", "TreeEnsemble", 5, ox_misc_tree_ensemble},
    {0},
};
