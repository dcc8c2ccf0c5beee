/* Grouped bar charts for reports (the evaluation matrix's --chart): an upper
 * panel with one bar per series in each group (latency per configuration)
 * and a lower panel with one bar per group (accuracy loss), written as SVG
 * directly or as PNG through cairo when the build has it (OX_HAVE_CAIRO). */
#ifndef ONNXSCOPE_CHART_H
#define ONNXSCOPE_CHART_H

#include <stdbool.h>

#include "onnxscope/status.h"

typedef struct ox_chart {
    const char *title;
    int n_groups;
    const char *const *groups;   /* x-axis labels, one bar group each */
    int n_series;
    const char *const *series;   /* legend of the upper panel */
    const double *top;           /* [group * n_series + series]; NAN: no bar */
    const char *top_label;       /* "p50 latency (ms)" */
    const double *bottom;        /* [group]; NAN: no bar ("n/a") */
    const char *bottom_label;    /* "accuracy loss (1 - cosine)" */
    double bottom_min_top;       /* the lower axis reaches at least this (so
                                  * that float rounding is not drawn as a
                                  * full bar); 0: the data's maximum */
} ox_chart;

/* Whether PNG output is built in (cairo). */
bool ox_chart_png_supported(void);

/* Writes the chart to path: SVG when it ends in .svg, PNG when .png
 * (OX_EUNSUPPORTED without cairo), OX_EINVAL for another extension;
 * OX_EIO when the file cannot be written (through ox_outfile: temp and
 * rename). */
ox_status ox_chart_write(const ox_chart *c, const char *path, ox_error *err);

#endif
