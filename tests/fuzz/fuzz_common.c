/* The harnesses' shared helpers: the external-data folder and oxf_fail. */
#include "fuzz_common.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[64];
static char weights[96];

static void remove_dir(void)
{
    if (weights[0])
        unlink(weights);
    if (dir[0])
        rmdir(dir);
}

const char *oxf_dir(void)
{
    if (dir[0])
        return dir;
    snprintf(dir, sizeof dir, "/tmp/oxfuzz.XXXXXX");
    if (!mkdtemp(dir)) {
        perror("fuzz: mkdtemp");
        abort();
    }
    atexit(remove_dir);
    snprintf(weights, sizeof weights, "%s/weights.bin", dir);
    FILE *f = fopen(weights, "wb");
    if (!f) {
        perror("fuzz: weights.bin");
        abort();
    }
    /* Small float values (0.0 .. 0.25) in every 4-byte lane: folded and
     * fused arithmetic on them stays finite. */
    for (int i = 0; i < 16384; i++) {
        float v = (float)(i % 64) / 256.0f;
        fwrite(&v, sizeof v, 1, f);
    }
    fclose(f);
    return dir;
}

void oxf_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("fuzz invariant broken: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}
