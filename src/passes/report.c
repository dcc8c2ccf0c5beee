/* The text of a pass report entry: one line per pass that changed
 * something, the form `optimize` prints and the TUI shows. Unknown figures
 * print as "?", never as a number. */
#include <inttypes.h>
#include <stdio.h>

#include "onnxscope/cost.h"
#include "onnxscope/passes.h"
#include "onnxscope/profile.h"

const char *ox_fmt_delta(int64_t v, bool known, bool bytes, char *buf, size_t len)
{
    char m[48];
    if (!buf || !len)
        return "";
    if (!known) {
        snprintf(buf, len, "?");
        return buf;
    }
    if (v == 0) {
        snprintf(buf, len, bytes ? "0 B" : "0");
        return buf;
    }
    int64_t mag = v < 0 ? (v == INT64_MIN ? INT64_MAX : -v) : v;
    if (bytes)
        ox_fmt_bytes(mag, true, m, sizeof m);
    else
        ox_fmt_cost(mag, 0, true, false, 0, m, sizeof m);
    snprintf(buf, len, "%c%s", v < 0 ? '-' : '+', m);
    return buf;
}

/* What one rewrite of a pass of this category is called. */
static const char *verb(ox_pass_category c)
{
    switch (c) {
    case OX_PASS_FUSION: return "fused";
    case OX_PASS_FOLDING: return "folded";
    case OX_PASS_ELIMINATION: return "eliminated";
    default: return "rewrites";
    }
}

const char *ox_pass_stat_line(const ox_pass_stat *s, char *buf, size_t len)
{
    char nodes[32], macs[48], flops[48], w[48], peak[48];
    if (!buf || !len)
        return "";
    if (!s) {
        buf[0] = 0;
        return buf;
    }
    int dn = s->nodes_added - s->nodes_removed;
    snprintf(nodes, sizeof nodes, dn ? "%+d" : "%d", dn);
    snprintf(buf, len, "%s: %d %s, %s nodes, MACs %s, FLOPs %s, weights %s, peak %s", s->name,
             s->rewrites, verb(s->category), nodes,
             ox_fmt_delta(s->macs_delta, s->cost_known, false, macs, sizeof macs),
             ox_fmt_delta(s->flops_delta, s->cost_known, false, flops, sizeof flops),
             ox_fmt_delta(s->weight_bytes_delta, true, true, w, sizeof w),
             ox_fmt_delta(s->peak_delta, s->peak_known, true, peak, sizeof peak));
    return buf;
}
