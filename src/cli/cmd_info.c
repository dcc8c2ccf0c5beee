/* `onnxscope info`: a model summary (text or one JSON object), optionally
 * with the per-node cost profile. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "onnxscope/cost.h"
#include "onnxscope/infer.h"
#include "onnxscope/io.h"
#include "onnxscope/profile.h"

typedef struct op_count {
    const char *op;
    int count;
} op_count;

static int cmp_count(const void *a, const void *b)
{
    const op_count *x = a, *y = b;
    if (x->count != y->count)
        return y->count - x->count;
    return strcmp(x->op, y->op);
}

/* Histogram of the top-level graph's op types, most frequent first. */
static op_count *histogram(const ox_graph *g, int *n_out)
{
    op_count *h = calloc((size_t)g->n_nodes + 1, sizeof *h);
    int n = 0;
    if (!h)
        return NULL;
    for (int i = 0; i < g->n_nodes; i++) {
        const char *op = g->nodes[i]->op_type;
        int k = 0;
        while (k < n && strcmp(h[k].op, op) != 0)
            k++;
        if (k == n)
            h[n++].op = op;
        h[k].count++;
    }
    qsort(h, (size_t)n, sizeof *h, cmp_count);
    *n_out = n;
    return h;
}

static json_t *shape_json(const ox_type *t)
{
    if (!t || !t->has_shape)
        return json_null();
    json_t *a = json_array();
    for (int i = 0; i < t->rank; i++) {
        if (t->dims[i].value >= 0)
            json_array_append_new(a, json_integer(t->dims[i].value));
        else if (t->dims[i].param)
            json_array_append_new(a, json_string(t->dims[i].param));
        else
            json_array_append_new(a, json_null());
    }
    return a;
}

static json_t *values_json(ox_value *const *v, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++) {
        const ox_type *t = v[i]->type;
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(v[i]->name));
        if (t && t->kind == OX_TYPE_TENSOR)
            json_object_set_new(o, "dtype", json_string(ox_dtype_name(t->elem)));
        else if (t) {
            char buf[128];
            json_object_set_new(o, "dtype", json_string(ox_type_str(t, buf, sizeof buf)));
        } else
            json_object_set_new(o, "dtype", json_null());
        json_object_set_new(o, "shape", shape_json(t));
        /* Axes whose dim the file declared negative (null in "shape"). */
        int axis = 0;
        if (ox_type_declared_neg(t, &axis, NULL)) {
            json_t *ax = json_array();
            const ox_type *u = t;
            for (int depth = 0; u->inner && depth < 64; depth++)
                u = u->inner;
            for (int d = 0; d < u->rank; d++)
                if (u->dims[d].declared_neg < 0 && u->dims[d].value < 0 &&
                    !(u->dims[d].param && *u->dims[d].param))
                    json_array_append_new(ax, json_integer(d));
            json_object_set_new(o, "declared_negative_axes", ax);
        }
        json_array_append_new(a, o);
    }
    return a;
}

static json_t *maybe_int(bool known, int64_t v)
{
    return known ? json_integer(v) : json_null();
}

/* The info object; also used by `optimize --json` for before/after. */
json_t *ox_cli_info_json(const ox_model *m, const ox_model_cost *c);
json_t *ox_cli_info_json(const ox_model *m, const ox_model_cost *c)
{
    const ox_graph *g = m->graph;
    json_t *o = json_object();
    json_object_set_new(o, "file", m->path ? json_string(m->path) : json_null());
    json_object_set_new(o, "file_bytes", json_integer((json_int_t)m->file_size));
    json_object_set_new(o, "external_bytes",
                        json_integer((json_int_t)ox_model_external_bytes(m)));
    json_object_set_new(o, "ir_version", json_integer(m->ir_version));
    json_object_set_new(o, "producer", json_string(m->producer_name ? m->producer_name : ""));
    json_object_set_new(o, "producer_version",
                        json_string(m->producer_version ? m->producer_version : ""));
    json_t *ops = json_object();
    for (int i = 0; i < m->n_opsets; i++)
        json_object_set_new(ops, *m->opsets[i].domain ? m->opsets[i].domain : "ai.onnx",
                            json_integer(m->opsets[i].version));
    json_object_set_new(o, "opsets", ops);
    json_object_set_new(o, "graph", json_string(g->name ? g->name : ""));
    json_object_set_new(o, "nodes", json_integer(g->n_nodes));
    json_object_set_new(o, "nodes_with_subgraphs", json_integer(ox_graph_count_nodes(g, true)));
    int nh = 0;
    op_count *h = histogram(g, &nh);
    json_t *hist = json_object();
    for (int i = 0; h && i < nh; i++)
        json_object_set_new(hist, h[i].op, json_integer(h[i].count));
    free(h);
    json_object_set_new(o, "op_histogram", hist);
    int n_init = 0;
    for (int i = 0; i < g->n_values; i++)
        if (g->values[i]->init)
            n_init++;
    json_object_set_new(o, "initializers", json_integer(n_init));
    json_object_set_new(o, "functions", json_integer(m->n_functions));
    json_object_set_new(o, "params", json_integer(c->params));
    json_object_set_new(o, "params_dedup", json_integer(c->params_dedup));
    json_object_set_new(o, "weights_bytes", json_integer(c->weights_bytes));
    json_object_set_new(o, "weights_bytes_by_dtype", ox_cli_dtype_bytes_json(c));
    json_object_set_new(o, "macs", maybe_int(c->known, c->macs));
    json_object_set_new(o, "flops", maybe_int(c->known, c->flops));
    json_object_set_new(o, "peak_activation_bytes",
                        maybe_int(c->peak_known, c->peak_activation_bytes));
    json_object_set_new(o, "memory_bytes", maybe_int(c->peak_known, c->memory_bytes));
    json_object_set_new(o, "inputs", values_json(g->inputs, g->n_inputs));
    json_object_set_new(o, "outputs", values_json(g->outputs, g->n_outputs));
    json_t *meta = json_object();
    for (int i = 0; i < m->n_meta; i++)
        json_object_set_new(meta, m->meta[i].key, json_string(m->meta[i].value));
    json_object_set_new(o, "metadata", meta);
    return o;
}

static void print_values(const char *title, ox_value *const *v, int n)
{
    printf("%s:\n", title);
    for (int i = 0; i < n; i++) {
        char buf[256], note[128];
        /* A dim the file declared negative shows as '?' with a note. */
        ox_type_neg_note(v[i]->type, note, sizeof note);
        int pad = 32 - ox_text_cols(v[i]->name);   /* columns, not bytes */
        printf("  %s%*s %s%s%s\n", v[i]->name ? v[i]->name : "", pad > 0 ? pad : 0, "",
               v[i]->type ? ox_type_str(v[i]->type, buf, sizeof buf) : "?", *note ? "   " : "",
               note);
    }
}

static void print_text(const ox_model *m, const ox_model_cost *c)
{
    const ox_graph *g = m->graph;
    char a[64], b[64];
    uint64_t ext = ox_model_external_bytes(m);
    printf("file:        %s (%s", m->path ? m->path : "-",
           ox_cli_bytes((double)m->file_size, a, sizeof a));
    if (ext)
        printf(" +%s external", ox_cli_bytes((double)ext, b, sizeof b));
    printf(")\n");
    printf("ir_version:  %lld\n", (long long)m->ir_version);
    printf("producer:    %s %s\n", m->producer_name ? m->producer_name : "",
           m->producer_version ? m->producer_version : "");
    printf("opsets:     ");
    for (int i = 0; i < m->n_opsets; i++)
        printf(" %s=%lld", *m->opsets[i].domain ? m->opsets[i].domain : "ai.onnx",
               (long long)m->opsets[i].version);
    printf("\ngraph:       %s\n", g->name ? g->name : "");
    int total = ox_graph_count_nodes(g, true);
    printf("nodes:       %d", g->n_nodes);
    if (total != g->n_nodes)
        printf(" (%d with subgraphs)", total);
    int n_init = 0;
    for (int i = 0; i < g->n_values; i++)
        if (g->values[i]->init)
            n_init++;
    printf("\ninitializers: %d, params %s", n_init, ox_cli_si((double)c->params, a, sizeof a));
    if (c->params_dedup != c->params)
        printf(" (%s distinct)", ox_cli_si((double)c->params_dedup, b, sizeof b));
    printf(", weights %s\n", ox_cli_bytes((double)c->weights_bytes, a, sizeof a));
    if (c->weights_bytes) {
        char dt[512];
        printf("weights by dtype: %s\n", ox_cli_dtype_bytes(c, dt, sizeof dt));
    }
    if (c->known)
        printf("MACs:        %s (FLOPs %s)%s\n", ox_fmt_model_macs(c, a, sizeof a),
               ox_fmt_model_flops(c, b, sizeof b),
               c->n_upper ? "; <= : If nodes counted by their larger branch" : "");
    else
        printf("MACs:        %s; use --shape/--dim for the unknown dims\n",
               ox_fmt_model_macs(c, a, sizeof a));
    if (c->peak_known)
        printf("activations: peak %s\n",
               ox_cli_bytes((double)c->peak_activation_bytes, a, sizeof a));
    else
        printf("activations: unknown (dynamic shapes)\n");
    int nh = 0;
    op_count *h = histogram(g, &nh);
    printf("ops:        ");
    for (int i = 0; h && i < nh; i++)
        printf(" %s\u00d7%d%s", h[i].op, h[i].count, i + 1 < nh ? "," : "");
    printf("\n");
    free(h);
    print_values("inputs", g->inputs, g->n_inputs);
    print_values("outputs", g->outputs, g->n_outputs);
    for (int i = 0; i < m->n_meta; i++)
        printf("metadata:    %s = %s\n", m->meta[i].key, m->meta[i].value);
}

/* "index|name|op|shapes|macs|flops|params|memory": every key --sort takes. */
static const char *sort_keys(char *buf, size_t n, const char *sep)
{
    size_t off = 0;
    buf[0] = 0;
    for (int i = 0; i < OX_PCOL_COUNT && off < n; i++)
        off += (size_t)snprintf(buf + off, n - off, "%s%s", i ? sep : "",
                                ox_profile_col_name((ox_profile_col)i));
    return buf;
}

static void info_usage(FILE *fp)
{
    char keys[160];
    fprintf(fp, "usage: onnxscope info MODEL [--json] [--profile [--sort COLUMN]]\n"
                "                      [--shape NAME=1x3x224x224] [--dim SYMBOL=VALUE]\n"
                "  --json       one JSON object on stdout\n"
                "  --profile    per-node table: name, op, output shapes, MACs, %%, params, memory\n"
                "  --sort COL   sort the profile by %s\n"
                "               (numbers descending, names ascending)\n"
                "  --shape      fix an input's shape; --dim fixes a symbolic dimension\n",
            sort_keys(keys, sizeof keys, "|"));
}

int ox_cmd_info(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},   {"profile", no_argument, NULL, 'p'},
        OX_CLI_SHAPE_OPTIONS,
        {"sort", required_argument, NULL, 'o'}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    bool json = false, profile = false;
    ox_profile_col col = OX_PCOL_INDEX;
    const char *sort = NULL;
    ox_infer_opts io = {0};
    int c, rc = 0, h;
    char keys[160];
    optind = 1;
    while ((c = ox_cli_getopt(argc, argv, "info", "h", longopts)) != -1) {
        switch (c) {
        case 'j': json = true; break;
        case 'p': profile = true; break;
        case 'o':
            sort = optarg;
            if (!ox_profile_col_from_name(sort, &col)) {
                ox_cli_error(NULL, "--sort %s: unknown column (one of %s)", sort,
                             sort_keys(keys, sizeof keys, ", "));
                ox_infer_opts_free(&io);
                return 2;
            }
            break;
        case 'h':
            info_usage(stdout);
            ox_infer_opts_free(&io);
            return 0;
        default:
            h = ox_cli_input_opt(c, optarg, &io, NULL);
            if (h > 0)
                break;
            ox_infer_opts_free(&io);
            return 2;
        }
    }
    if (optind != argc - 1) {
        if (optind >= argc)
            ox_cli_error(NULL, "info: no model given (usage: onnxscope info MODEL [options])");
        else
            ox_cli_error(NULL, "info: one model only (got '%s' and '%s')", argv[optind],
                         argv[optind + 1]);
        ox_infer_opts_free(&io);
        return 2;
    }
    const char *path = argv[optind];
    ox_model *m = ox_cli_load(path, &rc);
    if (!m) {
        ox_infer_opts_free(&io);
        return rc;
    }
    if (!ox_cli_check_inputs(path, m, &io, NULL)) {
        rc = 2;
        goto out;
    }
    ox_error err = {0};
    ox_infer_stats stats = {0};
    io.stats = &stats;
    ox_status st = ox_infer_model(m, &io, &err);
    if (st != OX_OK) {
        ox_cli_error(path, "shape inference: %s", err.msg);
        rc = ox_status_exit_code(st);
        goto out;
    }
    ox_model_cost cost = {0};
    ox_error cerr = {0};
    if (ox_model_cost_compute(m, &cost, &cerr) != OX_OK) {
        ox_cli_error(path, "cost model: %s", cerr.msg);
        rc = 1;
        goto out;
    }
    ox_profile *prof = NULL;
    if (profile) {
        if (ox_profile_build(m, &prof, &cerr) != OX_OK) {
            ox_cli_error(path, "profile: %s", cerr.msg);
            rc = 1;
            goto out;
        }
        if (sort)
            ox_profile_sort(prof, col, col != OX_PCOL_INDEX && col != OX_PCOL_NAME &&
                                           col != OX_PCOL_OP);
    }
    if (json) {
        json_t *o = ox_cli_info_json(m, &cost);
        if (prof)
            json_object_set_new(o, "profile", ox_profile_to_json(prof));
        char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        if (s) {
            puts(s);
            free(s);
        }
        json_decref(o);
    } else {
        print_text(m, &cost);
        if (prof) {
            printf("\n");
            ox_profile_print(stdout, prof, 0);
        }
    }
    ox_profile_free(prof);
out:
    ox_model_free(m);
    ox_infer_opts_free(&io);
    return rc;
}
