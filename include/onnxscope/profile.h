/* Per-node profile rows for `onnxscope info --profile`: name, op, output
 * shapes, MACs and their share of the total, parameters and memory, with
 * totals; sortable by any column and printable as a table or JSON. */
#ifndef ONNXSCOPE_PROFILE_H
#define ONNXSCOPE_PROFILE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "onnxscope/cost.h"
#include "onnxscope/ir.h"

typedef enum {
    OX_PCOL_INDEX = 0,   /* position in the topological order */
    OX_PCOL_NAME,
    OX_PCOL_OP,
    OX_PCOL_SHAPES,
    OX_PCOL_MACS,        /* also the order of the % column */
    OX_PCOL_FLOPS,
    OX_PCOL_PARAMS,
    OX_PCOL_MEMORY,
    OX_PCOL_COUNT
} ox_profile_col;

typedef struct ox_profile_row {
    const ox_node *node;
    int index;              /* position in the main graph's node list */
    char *name;             /* node name, or "<op>_<index>" when unnamed */
    char *op;               /* "Conv", or "domain.Op" outside the default domain */
    char *out_shapes;       /* "1x64x112x112", several joined by ", "; "?" unknown dims */
    int64_t macs, flops, params;
    double macs_pct;        /* share of the summed MACs, 0..100 */
    int64_t memory_bytes;   /* output bytes + bytes of the weights it reads */
    int64_t bytes_read, bytes_written; /* every input / output tensor */
    bool known;             /* macs/flops known */
    bool upper;             /* macs/flops an upper bound (larger If branch) */
    char *note;             /* how a control-flow node was costed, or NULL */
    bool memory_known;
} ox_profile_row;

typedef struct ox_profile {
    ox_profile_row *rows;
    int n_rows;
    /* Column sums over the rows (shared weights counted once per reader). */
    int64_t sum_macs, sum_flops, sum_params, sum_memory;
    /* Model totals (params deduplicated, peak activations, ...). */
    ox_model_cost model;
} ox_profile;

/* Builds one row per node of m's main graph, in node order. *out is owned
 * by the caller (ox_profile_free). */
ox_status ox_profile_build(const ox_model *m, ox_profile **out, ox_error *err);
void ox_profile_free(ox_profile *p);

/* Stable sort of the rows by col (ties keep node order). */
void ox_profile_sort(ox_profile *p, ox_profile_col col, bool descending);
/* Column from its name: index, name, op, shapes, macs (or "%"), flops,
 * params, memory. Returns false for anything else. */
bool ox_profile_col_from_name(const char *s, ox_profile_col *out);
const char *ox_profile_col_name(ox_profile_col c);

/* Prints the table and a totals line. max_rows <= 0 prints every row. */
void ox_profile_print(FILE *f, const ox_profile *p, int max_rows);

/* {"nodes":[{index,name,op,output_shapes,macs,flops,macs_pct,params,
 * memory_bytes,bytes_read,bytes_written,known[,upper_bound,cost_note]}...],
 * "totals":{macs,flops,params,params_dedup,weights_bytes,
 * peak_activation_bytes,memory_bytes,unknown_nodes,macs_lower_bound,
 * upper_bound_nodes}}.
 * Unknown numbers are null. New reference, or NULL on out of memory. */
json_t *ox_profile_to_json(const ox_profile *p);

/* Formats n with a K/M/G/T suffix ("4.09G"), or "?" when !known. */
const char *ox_fmt_count(int64_t n, bool known, char *buf, size_t len);
/* Terminal columns of UTF-8 text (East Asian wide characters count two;
 * bytes that are not UTF-8 one each): printf pads by bytes. */
int ox_text_cols(const char *s);
/* Formats bytes as "12.3 MiB", or "?" when !known. */
const char *ox_fmt_bytes(int64_t n, bool known, char *buf, size_t len);

#endif
