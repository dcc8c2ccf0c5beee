/* Grouped bar charts (chart.h). The layout is computed once and drawn
 * through a small canvas interface with two back ends: SVG text written
 * directly (no dependency), and cairo for PNG (cairo is what Graphviz
 * renders PNG with, so the library is on every machine that has Graphviz;
 * only its -dev package is new, and optional). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#ifdef OX_HAVE_CAIRO
#include <cairo.h>
#endif

#include "onnxscope/chart.h"
#include "onnxscope/outfile.h"

typedef enum { ANCHOR_START, ANCHOR_MIDDLE, ANCHOR_END } anchor;

typedef struct canvas canvas;
struct canvas {
    void (*rect)(canvas *c, double x, double y, double w, double h, unsigned rgb);
    void (*line)(canvas *c, double x1, double y1, double x2, double y2, unsigned rgb);
    void (*text)(canvas *c, double x, double y, double size, anchor a, unsigned rgb,
                 const char *s);
    void (*group)(canvas *c, const char *panel, const char *name, bool begin);
    void *impl;
};

static const unsigned palette[] = {0x4e79a7, 0xf28e2b, 0x59a14f, 0x76b7b2,
                                   0xedc948, 0xb07aa1, 0xff9da7, 0x9c755f};
#define LOSS_RGB 0xe15759
#define AXIS_RGB 0x333333
#define GRID_RGB 0xdddddd

/* The smallest "nice" (1, 2, 5 x 10^k) step with at most 5 ticks to max. */
static double nice_step(double max)
{
    if (!(max > 0))
        return 1;
    double raw = max / 5, p = pow(10, floor(log10(raw)));
    double m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

static void fmt_val(double v, char *buf, size_t n)
{
    if (isnan(v))
        snprintf(buf, n, "n/a");
    else if (v == 0)
        snprintf(buf, n, "0");
    else if (fabs(v) >= 0.01 && fabs(v) < 10000)
        snprintf(buf, n, "%.3g", v);
    else
        snprintf(buf, n, "%.1e", v);
}

/* One panel: bars per group, vertical axis from 0 to a nice maximum. */
static void panel(canvas *cv, const char *id, const char *const *names, double x0, double y0,
                  double w, double h, int n_groups, int per_group, const double *v,
                  bool single_colour, const char *label, bool values, double min_top)
{
    double max = min_top;
    for (int i = 0; i < n_groups * per_group; i++)
        if (isfinite(v[i]) && v[i] > max)
            max = v[i];
    double step = nice_step(max), top = step * ceil(max / step);
    if (top <= 0)
        top = step;
    char buf[32];
    /* Headroom above the highest tick for the value labels. */
    double scale = top * 1.12;
    for (double t = 0; t <= top * 1.0001; t += step) {
        double y = y0 + h - h * t / scale;
        cv->line(cv, x0, y, x0 + w, y, GRID_RGB);
        fmt_val(t, buf, sizeof buf);
        cv->text(cv, x0 - 6, y + 4, 11, ANCHOR_END, AXIS_RGB, buf);
    }
    cv->line(cv, x0, y0, x0, y0 + h, AXIS_RGB);
    cv->line(cv, x0, y0 + h, x0 + w, y0 + h, AXIS_RGB);
    cv->text(cv, x0, y0 - 12, 12, ANCHOR_START, AXIS_RGB, label);
    double gw = w / n_groups, bw = (gw * 0.8) / per_group;
    for (int g = 0; g < n_groups; g++) {
        cv->group(cv, id, names[g], true);
        for (int s = 0; s < per_group; s++) {
            double val = v[g * per_group + s];
            double x = x0 + g * gw + gw * 0.1 + s * bw;
            if (isnan(val)) {
                cv->text(cv, x + bw / 2, y0 + h - 4, 10, ANCHOR_MIDDLE, AXIS_RGB, "n/a");
                continue;
            }
            double bh = isfinite(val) ? h * (val > 0 ? val : 0) / scale : h;
            unsigned rgb = single_colour ? LOSS_RGB : palette[s % 8];
            cv->rect(cv, x + 1, y0 + h - bh, bw - 2, bh, rgb);
            if (values) {
                fmt_val(val, buf, sizeof buf);
                cv->text(cv, x + bw / 2, y0 + h - bh - 3, 10, ANCHOR_MIDDLE, AXIS_RGB, buf);
            }
        }
        cv->group(cv, id, names[g], false);
    }
}

/* Rows the legend wraps to: each entry a swatch and its text. */
static int legend_rows(const ox_chart *c, double W, double left, double right)
{
    int rows = 1;
    double x = left;
    for (int s = 0; s < c->n_series; s++) {
        double iw = 24 + 6.5 * (double)strlen(c->series[s]);
        if (x > left && x + iw > W - right) {
            x = left;
            rows++;
        }
        x += iw;
    }
    return rows;
}

static void draw(canvas *cv, const ox_chart *c, double W, double H)
{
    const double left = 70, right = 20, top_h = 220, bot_h = 100;
    int rows = legend_rows(c, W, left, right);
    double top_y = 64 + 16.0 * rows, bot_y = top_y + top_h + 50;
    double w = W - left - right;
    cv->rect(cv, 0, 0, W, H, 0xffffff);
    cv->text(cv, W / 2, 24, 15, ANCHOR_MIDDLE, AXIS_RGB, c->title ? c->title : "");
    /* Legend of the upper panel's series, wrapped to the width. */
    double lx = left, ly = 38;
    for (int s = 0; s < c->n_series; s++) {
        double iw = 24 + 6.5 * (double)strlen(c->series[s]);
        if (lx > left && lx + iw > W - right) {
            lx = left;
            ly += 16;
        }
        cv->rect(cv, lx, ly, 10, 10, palette[s % 8]);
        cv->text(cv, lx + 14, ly + 9, 11, ANCHOR_START, AXIS_RGB, c->series[s]);
        lx += iw;
    }
    panel(cv, "top", c->groups, left, top_y, w, top_h, c->n_groups, c->n_series, c->top, false,
          c->top_label ? c->top_label : "", false, 0);
    panel(cv, "bottom", c->groups, left, bot_y, w, bot_h, c->n_groups, 1, c->bottom, true,
          c->bottom_label ? c->bottom_label : "", true, c->bottom_min_top);
    double gw = w / c->n_groups;
    for (int g = 0; g < c->n_groups; g++)
        cv->text(cv, left + g * gw + gw / 2, bot_y + bot_h + 18, 12, ANCHOR_MIDDLE, AXIS_RGB,
                 c->groups[g]);
}

static void size_of(const ox_chart *c, double *W, double *H)
{
    double gw = 30 + 18.0 * c->n_series;
    if (gw < 90)
        gw = 90;
    *W = 90 + gw * c->n_groups;
    if (*W < 640)
        *W = 640;
    *H = 474 + 16.0 * legend_rows(c, *W, 70, 20);
}

/* ---- SVG ------------------------------------------------------------------- */

typedef struct sbuf {
    char *s;
    size_t n, cap;
    bool oom;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_printf(sbuf *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (k < 0)
        return;
    if (b->n + (size_t)k + 1 > b->cap) {
        size_t cap = (b->cap ? b->cap * 2 : 4096) + (size_t)k;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->oom = true;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(b->s + b->n, (size_t)k + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)k;
}

/* Text content and attribute values: the XML specials escaped. */
static void sb_escaped(sbuf *b, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': sb_printf(b, "&lt;"); break;
        case '>': sb_printf(b, "&gt;"); break;
        case '&': sb_printf(b, "&amp;"); break;
        case '"': sb_printf(b, "&quot;"); break;
        default:
            if ((unsigned char)*s >= 0x20 || *s == '\t')
                sb_printf(b, "%c", *s);
        }
    }
}

static void svg_rect(canvas *c, double x, double y, double w, double h, unsigned rgb)
{
    sb_printf(c->impl, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
              "fill=\"#%06x\"/>\n", x, y, w, h, rgb);
}

static void svg_line(canvas *c, double x1, double y1, double x2, double y2, unsigned rgb)
{
    sb_printf(c->impl, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
              "stroke=\"#%06x\"/>\n", x1, y1, x2, y2, rgb);
}

static void svg_text(canvas *c, double x, double y, double size, anchor a, unsigned rgb,
                     const char *s)
{
    static const char *const an[] = {"start", "middle", "end"};
    sb_printf(c->impl, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%.0f\" text-anchor=\"%s\" "
              "fill=\"#%06x\">", x, y, size, an[a], rgb);
    sb_escaped(c->impl, s);
    sb_printf(c->impl, "</text>\n");
}

/* Each bar group is a <g class="bars"> so that readers (and tests) find one
 * per strategy and panel. */
static void svg_group(canvas *c, const char *panel, const char *name, bool begin)
{
    if (begin) {
        sb_printf(c->impl, "<g class=\"bars\" data-panel=\"%s\" data-group=\"", panel);
        sb_escaped(c->impl, name);
        sb_printf(c->impl, "\">\n");
    } else
        sb_printf(c->impl, "</g>\n");
}

static ox_status write_all(const char *path, const void *data, size_t n, ox_error *err)
{
    ox_outfile of;
    ox_status st = ox_outfile_open(&of, path, 0, err);
    if (st)
        return st;
    if ((st = ox_outfile_write(&of, data, n, err))) {
        ox_outfile_abort(&of);
        return st;
    }
    return ox_outfile_commit(&of, err);
}

static ox_status write_svg(const ox_chart *c, const char *path, ox_error *err)
{
    sbuf b = {0};
    canvas cv = {svg_rect, svg_line, svg_text, svg_group, &b};
    double W, H;
    size_of(c, &W, &H);
    sb_printf(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
              "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
              "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\">\n", W, H, W, H);
    sb_printf(&b, "<title>");
    sb_escaped(&b, c->title ? c->title : "");
    sb_printf(&b, "</title>\n");
    draw(&cv, c, W, H);
    sb_printf(&b, "</svg>\n");
    ox_status st = b.oom ? ox_errorf(err, OX_ENOMEM, "out of memory") : write_all(path, b.s, b.n, err);
    free(b.s);
    return st;
}

/* ---- PNG through cairo ------------------------------------------------------- */

#ifdef OX_HAVE_CAIRO
static void set_rgb(cairo_t *cr, unsigned rgb)
{
    cairo_set_source_rgb(cr, ((rgb >> 16) & 255) / 255.0, ((rgb >> 8) & 255) / 255.0,
                         (rgb & 255) / 255.0);
}

static void cr_rect(canvas *c, double x, double y, double w, double h, unsigned rgb)
{
    cairo_t *cr = c->impl;
    set_rgb(cr, rgb);
    cairo_rectangle(cr, x, y, w, h);
    cairo_fill(cr);
}

static void cr_line(canvas *c, double x1, double y1, double x2, double y2, unsigned rgb)
{
    cairo_t *cr = c->impl;
    set_rgb(cr, rgb);
    cairo_set_line_width(cr, 1);
    cairo_move_to(cr, floor(x1) + 0.5, floor(y1) + 0.5);
    cairo_line_to(cr, floor(x2) + 0.5, floor(y2) + 0.5);
    cairo_stroke(cr);
}

static void cr_text(canvas *c, double x, double y, double size, anchor a, unsigned rgb,
                    const char *s)
{
    cairo_t *cr = c->impl;
    cairo_set_font_size(cr, size);
    cairo_text_extents_t ext;
    cairo_text_extents(cr, s, &ext);
    double dx = a == ANCHOR_START ? 0 : a == ANCHOR_MIDDLE ? ext.x_advance / 2 : ext.x_advance;
    set_rgb(cr, rgb);
    cairo_move_to(cr, x - dx, y);
    cairo_show_text(cr, s);
}

static void cr_group(canvas *c, const char *panel, const char *name, bool begin)
{
    (void)c;
    (void)panel;
    (void)name;
    (void)begin;
}

static cairo_status_t png_sink(void *closure, const unsigned char *data, unsigned int len)
{
    sbuf *b = closure;
    if (b->oom)
        return CAIRO_STATUS_NO_MEMORY;
    if (b->n + len > b->cap) {
        size_t cap = (b->cap ? b->cap * 2 : 65536) + len;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->oom = true;
            return CAIRO_STATUS_NO_MEMORY;
        }
        b->s = s;
        b->cap = cap;
    }
    memcpy(b->s + b->n, data, len);
    b->n += len;
    return CAIRO_STATUS_SUCCESS;
}

static ox_status write_png(const ox_chart *c, const char *path, ox_error *err)
{
    double W, H;
    size_of(c, &W, &H);
    cairo_surface_t *sf = cairo_image_surface_create(CAIRO_FORMAT_RGB24, (int)W, (int)H);
    cairo_t *cr = cairo_create(sf);
    if (cairo_status(cr) != CAIRO_STATUS_SUCCESS) {
        cairo_destroy(cr);
        cairo_surface_destroy(sf);
        return ox_errorf(err, OX_ENOMEM, "cairo: out of memory");
    }
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    canvas cv = {cr_rect, cr_line, cr_text, cr_group, cr};
    draw(&cv, c, W, H);
    cairo_surface_flush(sf);
    sbuf b = {0};
    cairo_status_t cs = cairo_surface_write_to_png_stream(sf, png_sink, &b);
    cairo_destroy(cr);
    cairo_surface_destroy(sf);
    ox_status st = cs != CAIRO_STATUS_SUCCESS
                       ? ox_errorf(err, OX_ENOMEM, "cairo: %s", cairo_status_to_string(cs))
                       : write_all(path, b.s, b.n, err);
    free(b.s);
    return st;
}
#endif

bool ox_chart_png_supported(void)
{
#ifdef OX_HAVE_CAIRO
    return true;
#else
    return false;
#endif
}

static bool ends_with(const char *s, const char *ext)
{
    size_t n = strlen(s), k = strlen(ext);
    return n > k && strcasecmp(s + n - k, ext) == 0;
}

ox_status ox_chart_write(const ox_chart *c, const char *path, ox_error *err)
{
    if (!c || !path || c->n_groups < 1 || c->n_series < 1 || !c->groups || !c->series ||
        !c->top || !c->bottom)
        return ox_errorf(err, OX_EINVAL, "chart: nothing to draw");
    if (ends_with(path, ".svg"))
        return write_svg(c, path, err);
    if (ends_with(path, ".png")) {
#ifdef OX_HAVE_CAIRO
        return write_png(c, path, err);
#else
        return ox_errorf(err, OX_EUNSUPPORTED, "%s: PNG charts need cairo, which this build "
                         "lacks (libcairo2-dev; or write .svg)", path);
#endif
    }
    return ox_errorf(err, OX_EINVAL, "%s: the chart's file name must end in .svg or .png", path);
}
