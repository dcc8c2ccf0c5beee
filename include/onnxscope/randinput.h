/* Random inputs for running a model without test data (`run --random`, the
 * TUI's benchmark): seeded, reproducible, and shaped so that index inputs
 * stay in range. */
#ifndef ONNXSCOPE_RANDINPUT_H
#define ONNXSCOPE_RANDINPUT_H

#include <stdint.h>

#include "onnxscope/exec.h"
#include "onnxscope/infer.h"
#include "onnxscope/ir.h"

/* mulberry32: the PRNG the shared test models' inputs were drawn with. */
uint32_t ox_rand_u32(uint32_t *state);

/* A random tensor for graph input v of m: floats uniform in [-1, 1], booleans
 * 0/1, integers feeding Gather indices within the gathered axis, other
 * integers in [0, int_max). Dims come from io's shape overrides, else v's
 * type, symbols resolved through io's --dim list; unknown dims become 1.
 * io may be NULL. Returns a new tensor (caller frees) or NULL with err set. */
ox_tensor *ox_random_input(const ox_model *m, const ox_value *v, const ox_infer_opts *io,
                           uint32_t *seed, int64_t int_max, ox_error *err);

/* Fills in[i] for every graph input of m's main graph (NULL for inputs that
 * are initializers). in has m->graph->n_inputs entries; on failure the ones
 * already made are freed and set to NULL. */
ox_status ox_random_inputs(const ox_model *m, const ox_infer_opts *io, uint32_t seed,
                           int64_t int_max, ox_rval **in, ox_error *err);

#endif
