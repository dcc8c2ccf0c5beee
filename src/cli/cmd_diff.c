/* `onnxscope diff A B`: compares two models: the totals `info` reports
 * (nodes, params, weights, MACs/FLOPs, peak activations, file size) side by
 * side, then the nodes removed, added and changed, matched as modeldiff.h
 * says. --json prints the two `info` objects and the node lists. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "onnxscope/cost.h"
#include "onnxscope/infer.h"
#include "onnxscope/io.h"
#include "onnxscope/modeldiff.h"
#include "onnxscope/profile.h"

static void diff_usage(FILE *f)
{
    fprintf(f, "usage: onnxscope diff A.onnx B.onnx [--json] [--list N]\n"
               "          [--shape NAME=1x3x224x224] [--dim SYM=VALUE]\n"
               "Compares two models: totals side by side, then the nodes removed (only\n"
               "in A), added (only in B) and changed (matched by name, then by position\n"
               "among the nodes of the same op type). --list N shows at most N nodes of\n"
               "each kind (default 20, 0 = all); --json prints everything.\n"
               "--shape/--dim apply to both models (docs/CLI.md, \"Input options\").\n");
}

/* Loads, checks the shape options against, infers and costs one model. */
static ox_model *load_costed(const char *path, ox_infer_opts *io, ox_model_cost *c, int *rc)
{
    ox_model *m = ox_cli_load(path, rc);
    if (!m)
        return NULL;
    if (!ox_cli_check_inputs(path, m, io, NULL)) {
        *rc = 2;
        ox_model_free(m);
        return NULL;
    }
    ox_error err = {0};
    ox_status st = ox_infer_model(m, io, &err);
    if (st != OX_OK) {
        ox_cli_error(path, "shape inference: %s", err.msg);
        *rc = ox_status_exit_code(st);
        ox_model_free(m);
        return NULL;
    }
    if (ox_model_cost_compute(m, c, &err) != OX_OK) {
        ox_cli_error(path, "cost model: %s", err.msg);
        *rc = 1;
        ox_model_free(m);
        return NULL;
    }
    return m;
}

static json_t *node_json(const ox_node *n)
{
    json_t *o = json_object();
    json_object_set_new(o, "index", json_integer(n->index));
    json_object_set_new(o, "name", json_string(n->name ? n->name : ""));
    json_object_set_new(o, "op_type", json_string(n->op_type ? n->op_type : ""));
    return o;
}

static json_t *diff_json(const ox_model *a, const ox_model_cost *ca, const ox_model *b,
                         const ox_model_cost *cb, const ox_model_diff *d)
{
    json_t *o = json_object();
    json_object_set_new(o, "a", ox_cli_info_json(a, ca));
    json_object_set_new(o, "b", ox_cli_info_json(b, cb));
    json_t *k = json_object();
    json_object_set_new(k, "same", json_integer(d->same));
    json_object_set_new(k, "changed", json_integer(d->changed));
    json_object_set_new(k, "added", json_integer(d->added));
    json_object_set_new(k, "removed", json_integer(d->removed));
    json_object_set_new(k, "matched_by_name", json_integer(d->by_name));
    json_object_set_new(k, "matched_by_position", json_integer(d->by_position));
    json_object_set_new(o, "nodes", k);
    json_t *rem = json_array(), *add = json_array(), *chg = json_array();
    for (int i = 0; i < d->n_items; i++) {
        const ox_node_diff *it = &d->items[i];
        if (it->kind == OX_NDIFF_REMOVED) {
            json_array_append_new(rem, node_json(it->a));
        } else if (it->kind == OX_NDIFF_ADDED) {
            json_array_append_new(add, node_json(it->b));
        } else {
            json_t *c = json_object();
            json_object_set_new(c, "a", node_json(it->a));
            json_object_set_new(c, "b", node_json(it->b));
            json_t *w = json_array();
            char buf[128];
            ox_node_diff_what(it->what, buf, sizeof buf);
            for (char *s = strtok(buf, ", "); s; s = strtok(NULL, ", "))
                json_array_append_new(w, json_string(s));
            json_object_set_new(c, "what", w);
            json_array_append_new(chg, c);
        }
    }
    json_object_set_new(o, "removed", rem);
    json_object_set_new(o, "added", add);
    json_object_set_new(o, "changed", chg);
    return o;
}

static void row(const char *label, const char *a, const char *b)
{
    printf("%-18s %16s %16s%s\n", label, a, b, strcmp(a, b) ? "  *" : "");
}

static void print_text(const char *pa, const ox_model *a, const ox_model_cost *ca,
                       const char *pb, const ox_model *b, const ox_model_cost *cb,
                       const ox_model_diff *d, int list)
{
    char x[64], y[64];
    printf("A: %s\nB: %s\n%-18s %16s %16s\n", pa, pb, "", "A", "B");
    snprintf(x, sizeof x, "%d", a->graph->n_nodes);
    snprintf(y, sizeof y, "%d", b->graph->n_nodes);
    row("nodes", x, y);
    snprintf(x, sizeof x, "%lld", (long long)ca->params);
    snprintf(y, sizeof y, "%lld", (long long)cb->params);
    row("params", x, y);
    snprintf(x, sizeof x, "%lld", (long long)ca->weights_bytes);
    snprintf(y, sizeof y, "%lld", (long long)cb->weights_bytes);
    row("weights bytes", x, y);
    row("MACs", ox_fmt_model_macs(ca, x, sizeof x), ox_fmt_model_macs(cb, y, sizeof y));
    row("FLOPs", ox_fmt_model_flops(ca, x, sizeof x), ox_fmt_model_flops(cb, y, sizeof y));
    row("peak activations", ox_fmt_bytes(ca->peak_activation_bytes, ca->peak_known, x, sizeof x),
        ox_fmt_bytes(cb->peak_activation_bytes, cb->peak_known, y, sizeof y));
    row("file size", ox_fmt_bytes((int64_t)a->file_size, true, x, sizeof x),
        ox_fmt_bytes((int64_t)b->file_size, true, y, sizeof y));
    printf("nodes: %d same, %d changed, %d added, %d removed (matched %d by name, %d by "
           "position and op type)\n",
           d->same, d->changed, d->added, d->removed, d->by_name, d->by_position);
    static const struct { ox_ndiff_kind k; const char *title; } kinds[] = {
        {OX_NDIFF_REMOVED, "removed (only in A)"},
        {OX_NDIFF_ADDED, "added (only in B)"},
        {OX_NDIFF_CHANGED, "changed"},
    };
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
        int total = kinds[k].k == OX_NDIFF_REMOVED ? d->removed
                    : kinds[k].k == OX_NDIFF_ADDED ? d->added
                                                   : d->changed;
        if (!total)
            continue;
        printf("%s: %d\n", kinds[k].title, total);
        int shown = 0;
        for (int i = 0; i < d->n_items; i++) {
            const ox_node_diff *it = &d->items[i];
            if (it->kind != kinds[k].k)
                continue;
            if (list && shown == list) {
                printf("  ... %d more (--list 0 shows all)\n", total - shown);
                break;
            }
            shown++;
            const ox_node *n = it->b ? it->b : it->a;
            printf("  #%-6d %-20s %s", n->index, n->op_type ? n->op_type : "?",
                   n->name && n->name[0] ? n->name : "(unnamed)");
            if (it->kind == OX_NDIFF_CHANGED) {
                char w[128];
                printf("  [%s]", ox_node_diff_what(it->what, w, sizeof w));
                if (it->what & OX_NDIFF_NAME)
                    printf(" (A: #%d %s)", it->a->index,
                           it->a->name && it->a->name[0] ? it->a->name : "(unnamed)");
            }
            printf("\n");
        }
    }
}

int ox_cmd_diff(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'}, {"list", required_argument, NULL, 'l'},
        OX_CLI_SHAPE_OPTIONS, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    bool json = false;
    long list = 20;
    ox_infer_opts io = {0};
    int c, rc = 0;
    optind = 1;
    while ((c = ox_cli_getopt(argc, argv, "diff", "h", longopts)) != -1) {
        switch (c) {
        case 'j': json = true; break;
        case 'l':
            if (!ox_cli_parse_long("--list", optarg, 0, 1000000000, &list)) {
                ox_infer_opts_free(&io);
                return 2;
            }
            break;
        case 'h':
            diff_usage(stdout);
            ox_infer_opts_free(&io);
            return 0;
        default:
            if (ox_cli_input_opt(c, optarg, &io, NULL) > 0)
                break;
            ox_infer_opts_free(&io);
            return 2;
        }
    }
    if (argc - optind != 2) {
        ox_cli_error(NULL, "diff: two models needed (usage: onnxscope diff A.onnx B.onnx)");
        ox_infer_opts_free(&io);
        return 2;
    }
    const char *pa = argv[optind], *pb = argv[optind + 1];
    ox_model_cost ca = {0}, cb = {0};
    ox_model *a = NULL, *b = NULL;
    ox_model_diff d = {0};
    a = load_costed(pa, &io, &ca, &rc);
    if (a)
        b = load_costed(pb, &io, &cb, &rc);
    if (!a || !b)
        goto out;
    ox_error err = {0};
    if (ox_model_diff_compute(a, b, &d, &err) != OX_OK) {
        ox_cli_error(pb, "%s", err.msg);
        rc = 1;
        goto out;
    }
    if (json) {
        json_t *o = diff_json(a, &ca, b, &cb, &d);
        char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        if (s)
            puts(s);
        free(s);
        json_decref(o);
    } else {
        print_text(pa, a, &ca, pb, b, &cb, &d, (int)list);
    }
out:
    ox_model_diff_free(&d);
    ox_model_free(a);
    ox_model_free(b);
    ox_infer_opts_free(&io);
    return rc;
}
