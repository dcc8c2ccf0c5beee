/* Shared by the libFuzzer harnesses (tests/fuzz/fuzz_*.c) and the replay
 * main that runs them over the regression corpus in the ordinary build.
 * Each harness defines LLVMFuzzerTestOneInput; a finding is a sanitizer
 * report or an abort() from oxf_fail (a broken invariant). */
#ifndef ONNXSCOPE_FUZZ_COMMON_H
#define ONNXSCOPE_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A private folder (created once, removed at exit) holding "weights.bin",
 * 64 KiB of a fixed pattern: models loaded from memory resolve external
 * data against it, so the external-data code runs without reading
 * anything of the user's. */
const char *oxf_dir(void);
/* Prints "fuzz invariant broken: ..." and aborts (libFuzzer saves the
 * input as a crash). */
void oxf_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
