/* Test helpers: see testutil.h. */
#include "testutil.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

static bool is_dir(const char *p)
{
    struct stat st;
    return p && stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

const char *ox_test_shared(void)
{
    const char *s = getenv("ONNXSCOPE_SHARED");
    if (!is_dir(s)) {
        printf("# ../shared not found (ONNXSCOPE_SHARED=%s): skipping\n", s ? s : "");
        return NULL;
    }
    return s;
}

const char *ox_test_source(void)
{
    const char *s = getenv("ONNXSCOPE_SOURCE");
    return s ? s : ".";
}

const char *ox_test_bin(void)
{
    return getenv("ONNXSCOPE_BIN");
}

static void push(ox_test_paths *p, const char *s)
{
    if (p->n == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 256;
        p->v = realloc(p->v, sizeof(char *) * (size_t)p->cap);
    }
    p->v[p->n++] = strdup(s);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void ox_test_find(const char *dir, const char *name, ox_test_paths *out)
{
    struct dirent **ents;
    int n = scandir(dir, &ents, NULL, alphasort);
    if (n < 0)
        return;
    for (int i = 0; i < n; i++) {
        const char *e = ents[i]->d_name;
        if (e[0] == '.') {
            free(ents[i]);
            continue;
        }
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e);
        if (name && is_dir(path)) {
            ox_test_find(path, name, out);
        } else if (name ? strcmp(e, name) == 0
                        : (strlen(e) > 5 && strcmp(e + strlen(e) - 5, ".onnx") == 0)) {
            push(out, path);
        }
        free(ents[i]);
    }
    free(ents);
}

void ox_test_all_shared_models(const char *shared, ox_test_paths *out)
{
    static const char *dirs[] = {"onnx-backend/node", "onnx-backend/simple",
                                 "onnx-backend/pytorch-converted",
                                 "onnx-backend/pytorch-operator", "models"};
    char path[4096];
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
        snprintf(path, sizeof path, "%s/%s", shared, dirs[i]);
        ox_test_find(path, "model.onnx", out);
    }
    snprintf(path, sizeof path, "%s/onnx-backend/light", shared);
    ox_test_find(path, NULL, out);
    qsort(out->v, (size_t)out->n, sizeof(char *), cmp_str);
}

void ox_test_paths_free(ox_test_paths *p)
{
    for (int i = 0; i < p->n; i++)
        free(p->v[i]);
    free(p->v);
    memset(p, 0, sizeof *p);
}

int ox_test_run(const char *cmd, char **out)
{
    char full[8192];
    snprintf(full, sizeof full, "%s 2>&1", cmd);
    FILE *fp = popen(full, "r");
    if (!fp)
        return -1;
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap);
    size_t r;
    while (buf && (r = fread(buf + len, 1, cap - len - 1, fp)) > 0) {
        len += r;
        if (cap - len < 2) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
    }
    if (buf)
        buf[len] = 0;
    int st = pclose(fp);
    if (out)
        *out = buf;
    else
        free(buf);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
