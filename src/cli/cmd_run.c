/* `onnxscope run MODEL`: runs a model once on inputs read from .pb files or
 * drawn from a seeded PRNG, prints each output's name, type, shape and
 * summary statistics, and optionally saves the outputs as output_K.pb. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli/commands.h"
#include "onnxscope/exec.h"
#include "onnxscope/io.h"
#include "onnxscope/randinput.h"
#include "onnxscope/testdata.h"

/* Says which dims of v the random input guesses as 1 (ox_random_input's
 * rule), so that a surprising output shape has an explanation. */
static void note_unknown_dims(const ox_value *v, const ox_infer_opts *io)
{
    const ox_type *t = v->type;
    if (!t || t->kind != OX_TYPE_TENSOR || !t->has_shape)
        return;
    for (int i = 0; i < io->n_shapes; i++)
        if (strcmp(io->shapes[i].name, v->name) == 0)
            return;   /* --shape decides (its symbols go through --dim) */
    for (int d = 0; d < t->rank; d++) {
        if (t->dims[d].value >= 0 || ox_infer_opts_dim(io, t->dims[d].param) >= 0)
            continue;
        const char *sym = t->dims[d].param;
        fprintf(stderr, "onnxscope: note: input '%s' dim %d%s%s%s is unknown, using 1 "
                "(set it with --shape or --dim)\n", v->name, d, sym ? " ('" : "",
                sym ? sym : "", sym ? "')" : "");
    }
}

static void print_value(const char *name, const ox_rval *v, int indent)
{
    char buf[256], tb[64];
    if (!v) {
        printf("%*s%s: (none)\n", indent, "", name);
        return;
    }
    if (v->kind == OX_RV_TENSOR) {
        const ox_tensor *t = v->t;
        printf("%*s%s: %s[%s]", indent, "", name, ox_dtype_name(t->dtype),
               ox_shape_str(t->rank, t->dims, buf, sizeof buf));
        ox_tensor_stats st;
        if (t->dtype != OX_DT_STRING && t->numel > 0 && ox_tensor_stats_compute(t, &st))
            printf("  min %.6g  max %.6g  mean %.6g  std %.6g%s", st.min, st.max, st.mean,
                   st.std, st.nan_count || st.inf_count ? "  (non-finite values)" : "");
        else if (t->dtype == OX_DT_STRING && t->numel > 0)
            printf("  first \"%.40s\"", t->strings[0].data ? t->strings[0].data : "");
        printf("\n");
        return;
    }
    const char *kind = v->kind == OX_RV_SEQUENCE ? "sequence"
                       : v->kind == OX_RV_OPTIONAL ? "optional" : "map";
    printf("%*s%s: %s of %d item(s)\n", indent, "", name, kind, v->n_items);
    for (int i = 0; i < v->n_items && i < 16; i++) {
        snprintf(tb, sizeof tb, "[%d]", i);
        print_value(tb, v->items[i], indent + 2);
    }
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: onnxscope run MODEL [--input NAME=FILE.pb ...] [--random] [--seed S]\n"
            "          [--shape NAME=1x3x224x224] [--dim SYM=VALUE] [--int-max M]\n"
            "          [--save-outputs DIR] [--threads N] [--device cpu]\n"
            "          [--max-memory SIZE] [--timeout SECONDS]\n"
            "Inputs not given by --input are drawn with --random: floats uniform in\n"
            "[-1, 1], integers feeding Gather indices within the gathered axis, other\n"
            "integers in [0, int-max) (default 100). Unknown dims default to 1.\n"
            "--max-memory caps the tensor memory of the run (default 3/4 of RAM; K/M/G\n"
            "suffixes); --timeout stops it after SECONDS. Either stops it with exit 1.\n");
}

int ox_cmd_run(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"input", required_argument, NULL, 'i'},
        {"random", no_argument, NULL, 'R'},
        {"seed", required_argument, NULL, 's'},
        {"shape", required_argument, NULL, 'S'},
        {"dim", required_argument, NULL, 'D'},
        {"save-outputs", required_argument, NULL, 'o'},
        {"threads", required_argument, NULL, 'j'},
        {"int-max", required_argument, NULL, 'I'},
        {"device", required_argument, NULL, 'd'},
        {"max-memory", required_argument, NULL, 'M'},
        {"timeout", required_argument, NULL, 'T'},
        {"help", no_argument, NULL, 'h'},
        {0, 0, 0, 0},
    };
    ox_infer_opts io = {0};
    const char **in_args = calloc((size_t)argc + 1, sizeof *in_args);
    int n_in_args = 0, threads = 0, rc = 0;
    bool random = false;
    uint32_t seed = 0;
    int64_t int_max = 100, max_memory = 0;
    double timeout_s = 0;
    const char *save_dir = NULL;
    ox_model *m = NULL;
    ox_exec *e = NULL;
    ox_rval **in = NULL, **out = NULL;
    if (!in_args) {
        ox_cli_error(NULL, "out of memory");
        return 1;
    }
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "i:o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'i': in_args[n_in_args++] = optarg; break;
        case 'R': random = true; break;
        case 's': seed = (uint32_t)strtoul(optarg, NULL, 10); break;
        case 'S':
            if (!ox_cli_add_shape(&io, optarg)) {
                rc = 2;
                goto out;
            }
            break;
        case 'D':
            if (!ox_cli_add_dim(&io, optarg)) {
                rc = 2;
                goto out;
            }
            break;
        case 'o': save_dir = optarg; break;
        case 'j': threads = atoi(optarg); break;
        case 'I':
            int_max = strtoll(optarg, NULL, 10);
            if (int_max <= 0) {
                ox_cli_error(NULL, "--int-max must be positive");
                rc = 2;
                goto out;
            }
            break;
        case 'd':
            if (strcmp(optarg, "cpu") != 0) {
                ox_cli_error(NULL, "--device %s: only cpu is available", optarg);
                rc = 2;
                goto out;
            }
            break;
        case 'M':
            if (!ox_cli_parse_size("--max-memory", optarg, &max_memory)) {
                rc = 2;
                goto out;
            }
            break;
        case 'T':
            if (!ox_cli_parse_seconds("--timeout", optarg, &timeout_s)) {
                rc = 2;
                goto out;
            }
            break;
        case 'h': usage(stdout); goto out;
        default: usage(stderr); rc = 2; goto out;
        }
    }
    if (optind != argc - 1) {
        usage(stderr);
        rc = 2;
        goto out;
    }
    const char *path = argv[optind];
    m = ox_cli_load(path, &rc);
    if (!m)
        goto out;
    const ox_graph *g = m->graph;
    int ni = g->n_inputs, no = g->n_outputs;
    in = calloc((size_t)ni + 1, sizeof *in);
    out = calloc((size_t)no + 1, sizeof *out);
    if (!in || !out) {
        ox_cli_error(NULL, "out of memory");
        rc = 1;
        goto out;
    }
    ox_error err = {0};
    int next_pos = 0;
    for (int a = 0; a < n_in_args; a++) {
        const char *arg = in_args[a];
        const char *eq = strchr(arg, '=');
        int target = -1;
        const char *file = arg;
        if (eq) {
            for (int i = 0; i < ni; i++)
                if (strlen(g->inputs[i]->name) == (size_t)(eq - arg) &&
                    strncmp(g->inputs[i]->name, arg, (size_t)(eq - arg)) == 0)
                    target = i;
            file = eq + 1;
            if (target < 0) {
                ox_cli_error(path, "--input %s: the model has no input '%.*s'", arg,
                             (int)(eq - arg), arg);
                rc = 2;
                goto out;
            }
        } else {
            while (next_pos < ni && (in[next_pos] || g->inputs[next_pos]->init))
                next_pos++;
            target = next_pos;
            if (target >= ni) {
                ox_cli_error(path, "--input %s: more inputs than the model has", arg);
                rc = 2;
                goto out;
            }
        }
        ox_rval *v = NULL;
        if (ox_testdata_load(file, g->inputs[target]->type, &v, NULL, &err) != OX_OK) {
            ox_cli_error(file, "%s", err.msg);
            rc = ox_status_exit_code(err.status);
            goto out;
        }
        ox_rval_free(in[target]);
        in[target] = v;
    }
    for (int i = 0; i < ni; i++) {
        const ox_value *v = g->inputs[i];
        if (in[i] || v->init)
            continue;
        if (!random) {
            ox_cli_error(path, "input '%s' not given (use --input %s=FILE.pb or --random)",
                         v->name, v->name);
            rc = 2;
            goto out;
        }
        note_unknown_dims(v, &io);
        ox_tensor *t = ox_random_input(m, v, &io, &seed, int_max, &err);
        if (!t) {
            ox_cli_error(path, "%s", err.msg);
            rc = 1;
            goto out;
        }
        in[i] = ox_rval_tensor(t);
    }
    ox_exec_opts eo = {.threads = threads, .max_memory = max_memory,
                       .deadline_ns = ox_cli_deadline(timeout_s)};
    if (ox_exec_new(m, &eo, &e, &err) != OX_OK) {
        ox_cli_error(path, "%s", err.msg);
        rc = 1;
        goto out;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (ox_exec_run(e, ni, in, no, out, &err) != OX_OK) {
        ox_cli_run_error(path, &err, timeout_s);
        rc = 1;
        goto out;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    for (int k = 0; k < no; k++)
        print_value(g->outputs[k]->name, out[k], 0);
    printf("time: %.3f ms\n",
           (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
    if (save_dir) {
        if (mkdir(save_dir, 0777) != 0 && errno != EEXIST) {
            ox_cli_error(save_dir, "cannot create: %s", strerror(errno));
            rc = 3;
            goto out;
        }
        for (int k = 0; k < no; k++) {
            char fname[64];
            snprintf(fname, sizeof fname, "/output_%d.pb", k);
            size_t len = strlen(save_dir) + strlen(fname) + 1;
            char *p = malloc(len);
            if (!p)
                break;
            snprintf(p, len, "%s%s", save_dir, fname);
            ox_status st = ox_testdata_save(out[k], g->outputs[k]->name, p, &err);
            if (st != OX_OK) {
                ox_cli_error(p, "%s", err.msg);
                free(p);
                rc = ox_status_exit_code(st);
                goto out;
            }
            free(p);
        }
    }
out:
    if (in)
        for (int i = 0; m && i < m->graph->n_inputs; i++)
            ox_rval_free(in[i]);
    if (out)
        for (int i = 0; m && i < m->graph->n_outputs; i++)
            ox_rval_free(out[i]);
    free(in);
    free(out);
    ox_exec_free(e);
    ox_model_free(m);
    ox_infer_opts_free(&io);
    free(in_args);
    return rc;
}
