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
#include <unistd.h>

#include "cli/commands.h"
#include "onnxscope/exec.h"
#include "onnxscope/io.h"
#include "onnxscope/testdata.h"

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
            "usage: onnxscope run MODEL [--input NAME=FILE.pb ...] [--fill NAME=VALUE ...]\n"
            "          [--random] [--seed S] [--int-max M] [--default-dim D]\n"
            "          [--shape NAME=1x3x224x224] [--dim SYM=VALUE]\n"
            "          [--save-outputs DIR] [--threads N] [--device cpu|cuda] [--precision fp32|fp16]\n"
            "          [--max-memory SIZE] [--timeout SECONDS]\n"
            "Each input comes from --input (a TensorProto file), --fill (one value\n"
            "broadcast to the input's shape: a number, an integer or true/false), or with\n"
            "--random from a seeded PRNG: floats uniform in [-1, 1], integers feeding\n"
            "Gather indices within the gathered axis, other integers in [0, int-max)\n"
            "(default 100). A dim that neither the model, --shape nor --dim fixes is an\n"
            "error unless --default-dim D gives it. --max-memory caps the tensor memory\n"
            "of the run (default 3/4 of RAM; K/M/G suffixes); --timeout stops it after\n"
            "SECONDS. Either stops it with exit 1. --device cuda runs the nodes the CUDA\n"
            "backend takes on the GPU and the rest on the CPU; it exits 4 when no GPU is\n"
            "usable (no toolkit in this build, no driver, no device).\n");
}

/* mkdir -p: creates dir and its missing parents. */
static int make_dirs(const char *dir)
{
    char p[4096];
    if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = 0;
        if (mkdir(p, 0777) != 0 && errno != EEXIST)
            return -1;
        *s = '/';
    }
    if (mkdir(p, 0777) != 0 && errno != EEXIST)
        return -1;
    struct stat st;
    if (stat(p, &st) != 0)
        return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return access(p, W_OK | X_OK);
}

int ox_cmd_run(int argc, char **argv)
{
    static const struct option longopts[] = {
        OX_CLI_INPUT_OPTIONS,
        OX_CLI_SHAPE_OPTIONS,
        {"random", no_argument, NULL, 'R'},
        {"seed", required_argument, NULL, 's'},
        {"save-outputs", required_argument, NULL, 'o'},
        {"threads", required_argument, NULL, 'j'},
        {"device", required_argument, NULL, 'd'},
        {"precision", required_argument, NULL, 'P'},
        {"max-memory", required_argument, NULL, 'M'},
        {"timeout", required_argument, NULL, 'T'},
        {"help", no_argument, NULL, 'h'},
        {0, 0, 0, 0},
    };
    ox_infer_opts io = {0};
    ox_input_opts inputs = {.shapes = &io, .no_random = true};
    int threads = 0, rc = 0;
    ox_device device = OX_DEVICE_CPU;
    bool fp16 = false;
    long v;
    uint32_t seed = 0;
    int64_t max_memory = 0;
    double timeout_s = 0;
    const char *save_dir = NULL;
    ox_model *m = NULL;
    ox_exec *e = NULL;
    ox_rval **in = NULL, **out = NULL;
    optind = 1;
    int c;
    while ((c = ox_cli_getopt(argc, argv, "run", "i:o:h", longopts)) != -1) {
        switch (c) {
        case 'R': inputs.no_random = false; break;
        case 's':
            if (!ox_cli_parse_long("--seed", optarg, 0, UINT32_MAX, &v)) {
                rc = 2;
                goto out;
            }
            seed = (uint32_t)v;
            break;
        case 'o': save_dir = optarg; break;
        case 'j':
            if (!ox_cli_parse_long("--threads", optarg, 0, 4096, &v)) {
                rc = 2;
                goto out;
            }
            threads = (int)v;
            break;
        case 'd':
            if ((rc = ox_cli_device(optarg, &device)) != 0)
                goto out;
            break;
        case 'P':
            if ((rc = ox_cli_precision(optarg, &fp16)) != 0)
                goto out;
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
        default:
            if (ox_cli_input_opt(c == 'i' ? OX_OPT_INPUT : c, optarg, &io, &inputs) > 0)
                break;
            rc = 2;
            goto out;
        }
    }
    if (optind != argc - 1) {
        if (optind >= argc)
            ox_cli_error(NULL, "run: no model given (usage: onnxscope run MODEL [options])");
        else
            ox_cli_error(NULL, "run: one model only (got '%s' and '%s')", argv[optind],
                         argv[optind + 1]);
        rc = 2;
        goto out;
    }
    if ((rc = ox_cli_precision_check(device, fp16)) != 0)
        goto out;
    const char *path = argv[optind];
    m = ox_cli_load(path, &rc);
    if (!m)
        goto out;
    if (!ox_cli_check_inputs(path, m, &io, &inputs)) {
        rc = 2;
        goto out;
    }
    /* Before running: a long run must not end in "cannot create DIR". */
    if (save_dir && make_dirs(save_dir) != 0) {
        ox_cli_error(save_dir, "cannot create or write to this folder: %s", strerror(errno));
        rc = 3;
        goto out;
    }
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
    ox_status st = ox_inputs_make(m, &inputs, seed, in, &err);
    if (st != OX_OK) {
        ox_cli_error(path, "%s", err.msg);
        rc = ox_status_exit_code(st);
        goto out;
    }
    ox_exec_opts eo = {.threads = threads, .max_memory = max_memory,
                       .deadline_ns = ox_cli_deadline(timeout_s), .device = device, .fp16 = fp16};
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
    if (device == OX_DEVICE_CUDA) {
        ox_exec_stats es;
        ox_exec_get_stats(e, &es);
        int64_t fl = es.flops_on[0] + es.flops_on[1];
        bool blas, dnn;
        char gpu[512];
        ox_cuda_probe(gpu, sizeof gpu);
        ox_cuda_libraries(&blas, &dnn);
        printf("device: cuda (%s; cuBLAS %s, cuDNN %s): %d of %d nodes on the GPU (%.1f%% of "
               "the FLOPs), %lld uploads, %lld downloads\n",
               gpu, blas ? "loaded" : "not found", dnn ? "loaded" : "not found", es.nodes_on[1],
               es.nodes_on[0] + es.nodes_on[1],
               fl > 0 ? 100.0 * (double)es.flops_on[1] / (double)fl : 0.0,
               (long long)es.h2d_copies, (long long)es.d2h_copies);
        if (es.plan_shape_nodes)
            printf("cuda: %d of the CPU nodes are shape arithmetic computed once at plan time\n",
                   es.plan_shape_nodes);
        printf("cuda: %s; %d fp16 node(s), %d float16 node(s) of the model, %d GEMM "
               "epilogue(s), %d tiled attention node(s); CUDA Graph %s%s%s\n",
               fp16 ? "fp16 (float16 GEMM/Conv operands, float32 accumulation)" : "fp32",
               es.fp16_nodes, es.float16_nodes, es.epilogue_nodes, es.flash_nodes,
               es.cuda_graph == OX_CUDA_GRAPH_REPLAYED   ? "replayed"
               : es.cuda_graph == OX_CUDA_GRAPH_CAPTURED ? "captured (replayed by later runs)"
                                                         : "not used",
               es.cuda_graph_note[0] ? ": " : "", es.cuda_graph_note);
    }
    if (save_dir) {
        for (int k = 0; k < no; k++) {
            char fname[64];
            snprintf(fname, sizeof fname, "/output_%d.pb", k);
            size_t len = strlen(save_dir) + strlen(fname) + 1;
            char *p = malloc(len);
            if (!p)
                break;
            snprintf(p, len, "%s%s", save_dir, fname);
            /* Never over the model or a file it reads (a model named
             * output_0.pb, or run inside its own folder). */
            st = ox_model_check_output(m, p, &err);
            if (st == OX_OK)
                st = ox_testdata_save(out[k], g->outputs[k]->name, p, &err);
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
    ox_input_opts_free(&inputs);
    return rc;
}
