/* Replays inputs through a harness's LLVMFuzzerTestOneInput without
 * libFuzzer: the `fuzz` suite runs every file of tests/fuzz/regress/<harness>/
 * (each a crash the fuzzer once found) plus the seed files given, in the
 * ordinary build and under ASan+UBSan in CI (tools/sanitize.sh --ci).
 * Arguments are files or folders (one level, sorted, dot files skipped).
 * A broken input aborts the process, so the test fails on it; the name of
 * the file being replayed is printed first. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_common.h"

static int n_run;

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: %s: cannot open\n", path);
        return 1;
    }
    size_t cap = 1 << 16, len = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            uint8_t *nb = realloc(buf, cap *= 2);
            if (!nb)
                free(buf);
            buf = nb;
        }
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "replay: %s: out of memory\n", path);
        return 1;
    }
    printf("replay %s (%zu bytes)\n", path, len);
    fflush(stdout);
    /* Exactly len bytes, like libFuzzer: a copy of that size lets ASan see
     * a read past the end. */
    uint8_t *exact = malloc(len ? len : 1);
    if (exact) {
        memcpy(exact, buf, len);
        LLVMFuzzerTestOneInput(exact, len);
    }
    free(exact);
    free(buf);
    n_run++;
    return exact ? 0 : 1;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int replay_dir(const char *path)
{
    DIR *d = opendir(path);
    if (!d) {
        fprintf(stderr, "replay: %s: cannot open folder\n", path);
        return 1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    int bad = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 32;
            char **nn = realloc(names, cap * sizeof *nn);
            if (!nn) {
                bad = 1;
                break;
            }
            names = nn;
        }
        size_t l = strlen(path) + strlen(e->d_name) + 2;
        if (!(names[n] = malloc(l))) {
            bad = 1;
            break;
        }
        snprintf(names[n++], l, "%s/%s", path, e->d_name);
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (!bad && stat(names[i], &st) == 0 && S_ISREG(st.st_mode))
            bad |= replay_file(names[i]);
        free(names[i]);
    }
    free(names);
    return bad;
}

int main(int argc, char **argv)
{
    LLVMFuzzerInitialize(&argc, &argv);
    int bad = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: %s: no such file or folder\n", argv[i]);
            bad = 1;
        } else if (S_ISDIR(st.st_mode)) {
            bad |= replay_dir(argv[i]);
        } else {
            bad |= replay_file(argv[i]);
        }
    }
    printf("replayed %d input(s)%s\n", n_run, bad ? ", with errors" : "");
    return bad ? 1 : 0;
}
