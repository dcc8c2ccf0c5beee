/* `onnxscope test-backend DIR...`: runs ONNX backend test cases (folders
 * with model.onnx and test_data_set_N/) and compares every output with the
 * suite's tolerance. Each case runs in a child process with a time limit,
 * so a crash or a hang is reported as a failure instead of ending the run. */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/commands.h"
#include "onnxscope/exec.h"
#include "onnxscope/io.h"
#include "onnxscope/opset.h"
#include "onnxscope/testdata.h"

typedef struct tb_opts {
    double rtol, atol;
    int timeout_s;
    int threads;
    ox_device device;   /* --device cuda: runs without fork (see usage) */
    bool verbose, no_fork;
    /* --opset A,B,...: convert each model to opset A, then B ... before
     * running it (a conversion the converter refuses skips the case). */
    int64_t opsets[8];
    int n_opsets;
} tb_opts;

typedef struct strvec {
    char **v;
    int n, cap;
} strvec;

static bool strvec_push(strvec *s, char *str)
{
    if (!str)
        return false;
    if (s->n == s->cap) {
        int cap = s->cap ? s->cap * 2 : 64;
        char **nv = realloc(s->v, (size_t)cap * sizeof *nv);
        if (!nv) {
            free(str);
            return false;
        }
        s->v = nv;
        s->cap = cap;
    }
    s->v[s->n++] = str;
    return true;
}

static void strvec_free(strvec *s)
{
    for (int i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *path_join(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    char *p = malloc(la + lb + 2);
    if (!p)
        return NULL;
    memcpy(p, a, la);
    size_t k = la;
    if (k > 0 && p[k - 1] != '/')
        p[k++] = '/';
    memcpy(p + k, b, lb + 1);
    return p;
}

static bool is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static bool is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Sorted names of the entries of dir (directories only when dirs_only). */
static void list_dir(const char *dir, bool dirs_only, strvec *out)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        if (dirs_only) {
            char *p = path_join(dir, de->d_name);
            bool ok = p && is_dir(p);
            free(p);
            if (!ok)
                continue;
        }
        strvec_push(out, ox_strdup(de->d_name));
    }
    closedir(d);
    if (out->n > 1)   /* out->v is NULL when the folder is empty */
        qsort(out->v, (size_t)out->n, sizeof *out->v, cmp_str);
}

static void find_cases(const char *dir, int depth, strvec *cases)
{
    char *model = path_join(dir, "model.onnx");
    bool here = model && is_file(model);
    free(model);
    if (here) {
        strvec_push(cases, ox_strdup(dir));
        return;
    }
    if (depth > 8)
        return;
    strvec sub = {0};
    list_dir(dir, true, &sub);
    for (int i = 0; i < sub.n; i++) {
        char *p = path_join(dir, sub.v[i]);
        if (p)
            find_cases(p, depth + 1, cases);
        free(p);
    }
    strvec_free(&sub);
}

/* ---- one case ------------------------------------------------------------ */

typedef enum { R_PASS = 'P', R_FAIL = 'F', R_SKIP = 'S' } result_kind;

static const char *const random_ops[] = {
    "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
    "Bernoulli", "Multinomial", NULL,
};

static const char *find_random_op(const ox_graph *g, int depth)
{
    if (depth > 32)
        return NULL;
    for (int i = 0; i < g->n_nodes; i++) {
        const ox_node *n = g->nodes[i];
        for (int k = 0; random_ops[k]; k++)
            if (ox_node_is(n, random_ops[k]))
                return random_ops[k];
        for (int a = 0; a < n->n_attrs; a++) {
            const ox_attr *at = &n->attrs[a];
            const char *r = NULL;
            if (at->type == OX_ATTR_GRAPH && at->g)
                r = find_random_op(at->g, depth + 1);
            for (int j = 0; !r && at->type == OX_ATTR_GRAPHS && j < at->n; j++)
                if (at->graphs[j])
                    r = find_random_op(at->graphs[j], depth + 1);
            if (r)
                return r;
        }
    }
    return NULL;
}

/* Dropout in training mode draws a random mask: its outputs are only
 * comparable when the ratio is 0. */
static bool has_training_dropout(const ox_graph *g)
{
    for (int i = 0; i < g->n_nodes; i++) {
        const ox_node *n = g->nodes[i];
        if (ox_node_is(n, "Dropout") && n->n_inputs >= 3 && n->inputs[2])
            return true;
    }
    return false;
}

static result_kind run_data_set(ox_model *m, ox_exec *e, const char *ds,
                                const tb_opts *o, char *why, size_t wn)
{
    const ox_graph *g = m->graph;
    int ni = g->n_inputs, no = g->n_outputs;
    ox_rval **in = calloc((size_t)ni + 1, sizeof *in);
    ox_rval **out = calloc((size_t)no + 1, sizeof *out);
    result_kind r = R_PASS;
    ox_error err = {0};
    if (!in || !out) {
        snprintf(why, wn, "out of memory");
        r = R_FAIL;
        goto done;
    }
    /* input_K goes to the K-th graph input that is not an initializer,
     * unless the file names a graph input. */
    int *feed = calloc((size_t)ni + 1, sizeof *feed);
    int nfeed = 0;
    if (!feed) {
        snprintf(why, wn, "out of memory");
        r = R_FAIL;
        goto done;
    }
    for (int i = 0; i < ni; i++)
        if (!g->inputs[i]->init)
            feed[nfeed++] = i;
    for (int k = 0;; k++) {
        char fname[64];
        snprintf(fname, sizeof fname, "input_%d.pb", k);
        char *p = path_join(ds, fname);
        if (!p || !is_file(p)) {
            free(p);
            break;
        }
        int target = k < nfeed ? feed[k] : (k < ni ? k : -1);
        if (target < 0) {
            free(p);
            snprintf(why, wn, "%s: more input files than graph inputs", fname);
            r = R_FAIL;
            break;
        }
        ox_rval *v = NULL;
        char *name = NULL;
        ox_status st = ox_testdata_load(p, g->inputs[target]->type, &v, &name, &err);
        free(p);
        if (st) {
            snprintf(why, wn, "%s: %s", fname, err.msg);
            r = R_FAIL;
            free(name);
            break;
        }
        if (name) {
            for (int i = 0; i < ni; i++)
                if (g->inputs[i]->name && strcmp(g->inputs[i]->name, name) == 0) {
                    target = i;
                    break;
                }
            free(name);
        }
        ox_rval_free(in[target]);
        in[target] = v;
    }
    free(feed);
    if (r != R_PASS)
        goto done;
    if (ox_exec_run(e, ni, in, no, out, &err) != OX_OK) {
        snprintf(why, wn, "%s", err.msg);
        r = err.status == OX_EUNSUPPORTED ? R_SKIP : R_FAIL;
        goto done;
    }
    for (int k = 0; k < no; k++) {
        char fname[64];
        snprintf(fname, sizeof fname, "output_%d.pb", k);
        char *p = path_join(ds, fname);
        if (!p || !is_file(p)) {
            free(p);
            continue;   /* not every output has reference data */
        }
        ox_rval *x = NULL;
        ox_status st = ox_testdata_load(p, g->outputs[k]->type, &x, NULL, &err);
        free(p);
        if (st) {
            snprintf(why, wn, "%s: %s", fname, err.msg);
            r = R_FAIL;
            break;
        }
        char diff[400];
        bool ok = ox_rval_allclose(out[k], x, o->rtol, o->atol, diff, sizeof diff);
        ox_rval_free(x);
        if (!ok) {
            snprintf(why, wn, "output '%s': %s",
                     g->outputs[k]->name ? g->outputs[k]->name : "", diff);
            r = R_FAIL;
            break;
        }
    }
done:
    if (in)
        for (int i = 0; i < ni; i++)
            ox_rval_free(in[i]);
    if (out)
        for (int i = 0; i < no; i++)
            ox_rval_free(out[i]);
    free(in);
    free(out);
    return r;
}

static result_kind run_case(const char *dir, const tb_opts *o, char *why, size_t wn)
{
    why[0] = 0;
    char *mp = path_join(dir, "model.onnx");
    if (!mp) {
        snprintf(why, wn, "out of memory");
        return R_FAIL;
    }
    ox_model *m = NULL;
    ox_error err = {0};
    ox_status st = ox_load(mp, NULL, &m, &err);
    free(mp);
    if (st) {
        snprintf(why, wn, "load: %s", err.msg);
        return st == OX_EUNSUPPORTED ? R_SKIP : R_FAIL;
    }
    for (int k = 0; k < o->n_opsets; k++) {
        st = ox_opset_convert(m, o->opsets[k], NULL, &err);
        if (st) {
            snprintf(why, wn, "convert to opset %lld: %s", (long long)o->opsets[k], err.msg);
            ox_model_free(m);
            return st == OX_ENOMEM ? R_FAIL : R_SKIP;
        }
    }
    const char *rnd = find_random_op(m->graph, 0);
    if (rnd) {
        snprintf(why, wn, "random operator %s", rnd);
        ox_model_free(m);
        return R_SKIP;
    }
    ox_exec_opts eo = {.threads = o->threads, .device = o->device};
    ox_exec *e = NULL;
    st = ox_exec_new(m, &eo, &e, &err);
    if (st) {
        snprintf(why, wn, "%s", err.msg);
        ox_model_free(m);
        return st == OX_EUNSUPPORTED ? R_SKIP : R_FAIL;
    }
    strvec sets = {0};
    list_dir(dir, true, &sets);
    result_kind r = R_PASS;
    int n_sets = 0;
    for (int i = 0; i < sets.n && r == R_PASS; i++) {
        if (strncmp(sets.v[i], "test_data_set_", 14) != 0)
            continue;
        char *ds = path_join(dir, sets.v[i]);
        if (!ds)
            break;
        char sub[600];
        r = run_data_set(m, e, ds, o, sub, sizeof sub);
        if (r != R_PASS)
            snprintf(why, wn, "%s: %s", sets.v[i], sub);
        free(ds);
        n_sets++;
    }
    if (r == R_FAIL && has_training_dropout(m->graph)) {
        r = R_SKIP;
        snprintf(why, wn, "random (training-mode Dropout)");
    }
    if (r == R_PASS && n_sets == 0) {
        r = R_SKIP;
        snprintf(why, wn, "no test_data_set_* folder");
    }
    strvec_free(&sets);
    ox_exec_free(e);
    ox_model_free(m);
    return r;
}

/* Runs one case in a child process; the result comes back through a pipe
 * as one kind byte and the reason. */
static result_kind run_case_isolated(const char *dir, const tb_opts *o, char *why,
                                     size_t wn)
{
    if (o->no_fork)
        return run_case(dir, o, why, wn);
    int fds[2];
    if (pipe(fds) != 0) {
        snprintf(why, wn, "pipe: %s", strerror(errno));
        return R_FAIL;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        snprintf(why, wn, "fork: %s", strerror(errno));
        return R_FAIL;
    }
    if (pid == 0) {
        close(fds[0]);
        if (o->timeout_s > 0)
            alarm((unsigned)o->timeout_s);
        char buf[1024];
        buf[0] = (char)run_case(dir, o, buf + 1, sizeof buf - 1);
        size_t len = 1 + strlen(buf + 1);
        ssize_t w = write(fds[1], buf, len);
        (void)w;
        close(fds[1]);
        _exit(0);
    }
    close(fds[1]);
    char buf[1024];
    size_t len = 0;
    for (;;) {
        ssize_t r = read(fds[0], buf + len, sizeof buf - 1 - len);
        if (r > 0) {
            len += (size_t)r;
            if (len >= sizeof buf - 1)
                break;
        } else if (r == 0 || errno != EINTR) {
            break;
        }
    }
    close(fds[0]);
    buf[len] = 0;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (len > 0 && (buf[0] == R_PASS || buf[0] == R_FAIL || buf[0] == R_SKIP)) {
        snprintf(why, wn, "%s", buf + 1);
        return (result_kind)buf[0];
    }
    if (WIFSIGNALED(status)) {
        if (WTERMSIG(status) == SIGALRM)
            snprintf(why, wn, "timed out after %d s", o->timeout_s);
        else
            snprintf(why, wn, "crashed (signal %d: %s)", WTERMSIG(status),
                     strsignal(WTERMSIG(status)));
    } else {
        snprintf(why, wn, "child exited with status %d", WEXITSTATUS(status));
    }
    return R_FAIL;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: onnxscope test-backend DIR... [--filter REGEX] [--verbose]\n"
            "          [--rtol R] [--atol A] [--timeout SEC] [--threads N] [--no-fork]\n"
            "          [--device cpu|cuda]\n"
            "          [--opset N[,N...]]\n"
            "Runs every ONNX backend test case (a folder with model.onnx and\n"
            "test_data_set_N/) found under the DIRs. Default tolerance rtol 1e-3,\n"
            "atol 1e-7. Last line: \"N passed, N failed, N skipped\".\n"
            "--device cuda runs each case with the CUDA backend, in this process (as\n"
            "--no-fork: a CUDA context does not survive fork); exit 4 without a GPU.\n"
            "--opset 17,13 converts each model to opset 17, then 13, before running it\n"
            "(a case the converter refuses is skipped, with the refusal as reason).\n");
}

static bool parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || v < 0)
        return false;
    *out = v;
    return true;
}

int ox_cmd_test_backend(int argc, char **argv)
{
    tb_opts o = {.rtol = 1e-3, .atol = 1e-7, .timeout_s = 60, .threads = 1};
    const char *filter = NULL;
    static const struct option longopts[] = {
        {"filter", required_argument, NULL, 'f'},
        {"verbose", no_argument, NULL, 'v'},
        {"rtol", required_argument, NULL, 'r'},
        {"atol", required_argument, NULL, 'a'},
        {"timeout", required_argument, NULL, 't'},
        {"threads", required_argument, NULL, 'j'},
        {"no-fork", no_argument, NULL, 'n'},
        {"device", required_argument, NULL, 'D'},
        {"opset", required_argument, NULL, 'O'},
        {"help", no_argument, NULL, 'h'},
        {0, 0, 0, 0},
    };
    optind = 1;
    int c;
    long v;
    while ((c = ox_cli_getopt(argc, argv, "test-backend", "f:vh", longopts)) != -1) {
        switch (c) {
        case 'f': filter = optarg; break;
        case 'v': o.verbose = true; break;
        case 'n': o.no_fork = true; break;
        case 'r':
            if (!parse_double(optarg, &o.rtol)) {
                ox_cli_error(NULL, "--rtol: not a non-negative number: %s", optarg);
                return 2;
            }
            break;
        case 'a':
            if (!parse_double(optarg, &o.atol)) {
                ox_cli_error(NULL, "--atol: not a non-negative number: %s", optarg);
                return 2;
            }
            break;
        case 't':
            if (!ox_cli_parse_long("--timeout", optarg, 0, 86400, &v))
                return 2;
            o.timeout_s = (int)v;
            break;
        case 'j':
            if (!ox_cli_parse_long("--threads", optarg, 0, 4096, &v))
                return 2;
            o.threads = (int)v;
            break;
        case 'D': {
            int drc = ox_cli_device(optarg, &o.device);
            if (drc)
                return drc;
            if (o.device == OX_DEVICE_CUDA)
                o.no_fork = true;
            break;
        }
        case 'O': {
            /* A comma-separated chain of target opsets. */
            char buf[128];
            snprintf(buf, sizeof buf, "%s", optarg);
            o.n_opsets = 0;
            for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
                 tok = strtok_r(NULL, ",", &save)) {
                if (o.n_opsets == 8) {
                    ox_cli_error(NULL, "--opset: at most 8 conversions");
                    return 2;
                }
                if (!ox_cli_parse_long("--opset", tok, OX_OPSET_MIN, OX_OPSET_MAX, &v))
                    return 2;
                o.opsets[o.n_opsets++] = v;
            }
            if (!o.n_opsets) {
                ox_cli_error(NULL, "--opset: expected N or N,M,...");
                return 2;
            }
            break;
        }
        case 'h': usage(stdout); return 0;
        default: return 2;   /* ox_cli_getopt said why */
        }
    }
    if (optind >= argc) {
        ox_cli_error(NULL, "test-backend: no folder given (usage: onnxscope test-backend DIR...)");
        return 2;
    }
    regex_t re;
    if (filter && regcomp(&re, filter, REG_EXTENDED | REG_NOSUB) != 0) {
        ox_cli_error(NULL, "--filter: invalid regular expression: %s", filter);
        return 2;
    }
    strvec cases = {0};
    for (int i = optind; i < argc; i++) {
        if (!is_dir(argv[i])) {
            ox_cli_error(argv[i], "not a directory");
            if (filter)
                regfree(&re);
            strvec_free(&cases);
            return 3;
        }
        int before = cases.n;
        find_cases(argv[i], 0, &cases);
        if (cases.n == before) {
            /* Nothing to run is a usage error, not "0 passed". */
            ox_cli_error(argv[i], "no test cases found: expected CASE/model.onnx with "
                         "CASE/test_data_set_N/{input,output}_K.pb below this folder");
            if (filter)
                regfree(&re);
            strvec_free(&cases);
            return 2;
        }
    }
    int passed = 0, failed = 0, skipped = 0;
    for (int i = 0; i < cases.n; i++) {
        const char *cs = cases.v[i];
        if (filter && regexec(&re, cs, 0, NULL, 0) != 0)
            continue;
        char why[1024];
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        result_kind r = run_case_isolated(cs, &o, why, sizeof why);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
        if (r == R_PASS) {
            passed++;
            if (o.verbose)
                printf("PASS %s (%.0f ms)\n", cs, ms);
        } else if (r == R_SKIP) {
            skipped++;
            printf("SKIP %s: %s\n", cs, why);
        } else {
            failed++;
            printf("FAIL %s: %s\n", cs, why);
        }
        fflush(stdout);
    }
    if (filter)
        regfree(&re);
    strvec_free(&cases);
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    return failed ? 1 : 0;
}
