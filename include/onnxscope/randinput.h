/* Inputs for running a model (`run`, `bench`, `optimize --check`, the TUI's
 * benchmark): values from .pb files (--input), a scalar broadcast to the
 * input's shape (--fill), or seeded random data shaped so that index inputs
 * stay in range; dims the model leaves unknown are an error unless
 * --default-dim says what to use. */
#ifndef ONNXSCOPE_RANDINPUT_H
#define ONNXSCOPE_RANDINPUT_H

#include <stdbool.h>
#include <stdint.h>

#include "onnxscope/exec.h"
#include "onnxscope/infer.h"
#include "onnxscope/ir.h"

/* mulberry32: the PRNG the shared test models' inputs were drawn with. */
uint32_t ox_rand_u32(uint32_t *state);

/* Where one graph input's value comes from. */
typedef struct ox_input_src {
    char *name;   /* NULL: a positional --input FILE (the next input not given) */
    char *file;   /* --input: a serialized TensorProto, or NULL */
    char *fill;   /* --fill: the scalar's text, or NULL */
} ox_input_src;

/* The input options every command that runs a model shares. Zero-init is
 * "all random, int_max 100, unknown dims refused". */
typedef struct ox_input_opts {
    const ox_infer_opts *shapes;  /* --shape / --dim (borrowed, may be NULL) */
    ox_input_src *src;            /* --input and --fill in command-line order (owned) */
    int n_src;
    int64_t int_max;              /* --int-max: random non-index integers in [0, int_max); <= 0: 100 */
    bool has_default_dim;         /* --default-dim N: unknown dims become N */
    int64_t default_dim;
    bool no_random;               /* `run` without --random: inputs not given are an error */
} ox_input_opts;

/* Handles one command-line option (its long name without "--") for the
 * commands and the TUI alike: "shape" and "dim" go to shapes (may be NULL
 * when the caller takes neither), "input", "fill", "int-max" and
 * "default-dim" to in (may be NULL likewise). Syntax only; the model is
 * checked by ox_input_opts_validate. OX_EINVAL with a message that starts
 * with the option and its argument ("--fill sr: expected NAME=VALUE");
 * OX_EUNSUPPORTED for an option name it does not handle. */
ox_status ox_input_option(ox_infer_opts *shapes, ox_input_opts *in, const char *opt,
                          const char *arg, ox_error *err);
void ox_input_opts_free(ox_input_opts *in);

/* Checks in (and in->shapes, with ox_infer_opts_validate) against m before
 * anything is read or run: --input/--fill name an input, once; --fill
 * values fit the input's element type (numbers for float, integers within
 * range, true/false/0/1 for bool); with no_random every input is given;
 * every dim of an input to be filled or drawn is known, or --default-dim
 * is set. OX_EINVAL (a usage error) with a one-line message naming the
 * option or input. in may be NULL (nothing but the shapes to check). */
ox_status ox_input_opts_validate(const ox_input_opts *in, const ox_model *m, ox_error *err);

/* The dims --default-dim sets, as "x dim 0 ('batch'), y dim 1" in buf;
 * returns how many (0 when none or no default is set). */
int ox_input_opts_defaulted(const ox_input_opts *in, const ox_model *m, char *buf, size_t n);

/* Makes every graph input of m's main graph: from its --input file, its
 * --fill value, else random (seeded: floats uniform in [-1, 1], booleans
 * 0/1, integers feeding Gather indices within the gathered axis, other
 * integers in [0, int_max)). in[] has m->graph->n_inputs entries; inputs
 * that are initializers stay NULL. On failure nothing is left allocated.
 * in_opts may be NULL (all random). Errors: OX_EINVAL (what validate
 * reports), OX_EIO/OX_EPARSE (an --input file), OX_ENOMEM. */
ox_status ox_inputs_make(const ox_model *m, const ox_input_opts *in_opts, uint32_t seed,
                         ox_rval **in, ox_error *err);

/* All random inputs, unknown dims 1, shapes from io (may be NULL): for
 * tests and tools that do not take options. */
ox_status ox_random_inputs(const ox_model *m, const ox_infer_opts *io, uint32_t seed,
                           int64_t int_max, ox_rval **in, ox_error *err);

#endif
