/* Adapters for the default-domain operators whose signature or semantics
 * changed between opsets 7 and 23 (ONNX docs/Changelog.md). Each adapter
 * takes the node as written for opset c->from and rewrites it for c->to,
 * in either direction, refusing what the target cannot express. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnxscope/infer.h"
#include "passes/opset_internal.h"
#include "passes/pass_internal.h"

#define CAP (OX_MAX_RANK * 2 + 64)

/* ---- negative axes: allowed from opset 11 ------------------------------- */

/* Below 11 an axis must be non-negative: makes `axis` / `axes` of n
 * non-negative using the rank of value `ref` (the input whose dims they
 * index; Unsqueeze indexes its output). */
static ox_status fix_negative_axes(ox__cv *c, ox_node *n, const ox_value *ref)
{
    if (c->to >= 11)
        return OX_OK;
    int r = ox__cv_rank(ref);
    ox_attr *a = ox_node_attr(n, "axis");
    if (a && a->type == OX_ATTR_INT && a->i < 0) {
        if (r < 0)
            return ox__cv_refuse(c, n, "axis %lld is negative and the input's rank is unknown",
                                 (long long)a->i);
        a->i += r;
    }
    a = ox_node_attr(n, "axes");
    for (int i = 0; a && a->type == OX_ATTR_INTS && i < a->n; i++)
        if (a->ints[i] < 0) {
            if (r < 0)
                return ox__cv_refuse(c, n, "axes are negative and the input's rank is unknown");
            a->ints[i] += r;
        }
    return OX_OK;
}

static ox_status adapt_axis_only(ox__cv *c, ox_node *n)
{
    /* OneHot's axis indexes its output (one dim more than the indices). */
    return fix_negative_axes(c, n, ox_node_is(n, "OneHot") ? ox__cv_out(n, 0) : ox__cv_in(n, 0));
}

/* ---- axes: attribute <-> input -------------------------------------------- */

/* The opset at which op's `axes` attribute became input 1. */
static int axes_boundary(const char *op)
{
    if (!strcmp(op, "ReduceSum") || !strcmp(op, "Squeeze") || !strcmp(op, "Unsqueeze"))
        return 13;
    return 18;
}

static ox_status adapt_axes(ox__cv *c, ox_node *n)
{
    int b = axes_boundary(n->op_type);
    bool reduce = !strncmp(n->op_type, "Reduce", 6);
    ox_status st;
    if (ox__cv_up(c, b)) {
        ox__cv_attr_to_input(c, n, "axes", 1);
    } else if (ox__cv_down(c, b)) {
        if (reduce && ox_node_attr_i(n, "noop_with_empty_axes", 0)) {
            int64_t ax[CAP];
            ox_value *x = ox__cv_in(n, 1);
            int k = x ? ox__cv_ints(x, ax, CAP) : 0;
            if (k == 0) {
                /* Reducing over no axis is the identity. */
                ox__cv_rename(n, "Identity");
                ox_node_remove_attr(n, "noop_with_empty_axes");
                ox_node_remove_attr(n, "keepdims");
                ox_node_set_input(n, 1, NULL);
                ox__cv_trim(n);
                return OX_OK;
            }
        }
        if (reduce)
            ox_node_remove_attr(n, "noop_with_empty_axes");
        if ((st = ox__cv_input_to_attr(c, n, 1, "axes")))
            return st;
    }
    const ox_value *ref = ox__cv_in(n, 0);
    if (!strcmp(n->op_type, "Unsqueeze"))
        ref = ox__cv_out(n, 0);
    if (!strcmp(n->op_type, "Identity"))
        return OX_OK;
    return fix_negative_axes(c, n, ref);
}

/* ---- Split: split attribute (< 13) / input (13); num_outputs (18) -------- */

static ox_status adapt_split(ox__cv *c, ox_node *n)
{
    ox_status st;
    int64_t axis = ox_node_attr_i(n, "axis", 0);
    if (ox__cv_down(c, 18) && ox_node_attr(n, "num_outputs")) {
        int64_t k = ox_node_attr_i(n, "num_outputs", 1);
        if (k <= 0)
            return ox__cv_refuse(c, n, "num_outputs %lld is not positive", (long long)k);
        ox_node_remove_attr(n, "num_outputs");
        if (!ox__cv_in(n, 1)) {
            int r = ox__cv_rank(ox__cv_in(n, 0));
            int64_t d = r > 0 ? ox__cv_dim(ox__cv_in(n, 0), (int)(axis < 0 ? axis + r : axis)) : -1;
            if (d < 0)
                return ox__cv_refuse(c, n, "num_outputs needs opset 18 when the split "
                                     "dimension is unknown");
            if (d % k) {
                /* Opset 18 makes the last part smaller; before, explicit sizes. */
                int64_t sz[CAP], part = (d + k - 1) / k, left = d;
                if (k > CAP)
                    return ox__cv_refuse(c, n, "too many outputs");
                for (int i = 0; i < k; i++) {
                    sz[i] = left < part ? left : part;
                    left -= sz[i];
                }
                ox_node_set_input(n, 1, ox__cv_i64(c, n, "split", (int)k, sz));
            }
        }
    }
    if (ox__cv_up(c, 13))
        ox__cv_attr_to_input(c, n, "split", 1);
    else if (ox__cv_down(c, 13) && (st = ox__cv_input_to_attr(c, n, 1, "split")))
        return st;
    if (ox__cv_up(c, 18) && !ox__cv_in(n, 1))
        ox_node_set_attr_i(n, "num_outputs", n->n_outputs);
    return fix_negative_axes(c, n, ox__cv_in(n, 0));
}

/* ---- Clip: min/max attributes (< 11) / inputs (11) ------------------------ */

static ox_status adapt_clip(ox__cv *c, ox_node *n)
{
    if (ox__cv_up(c, 11)) {
        ox_dtype dt = ox__cv_elem(ox__cv_in(n, 0));
        const char *names[2] = {"min", "max"};
        for (int i = 0; i < 2; i++) {
            ox_attr *a = ox_node_attr(n, names[i]);
            if (!a)
                continue;
            ox_node_set_input(n, 1 + i, ox__cv_scalar(c, n, names[i], dt, a->f));
            ox_node_remove_attr(n, names[i]);
        }
    } else if (ox__cv_down(c, 11)) {
        const char *names[2] = {"min", "max"};
        for (int i = 0; i < 2; i++) {
            ox_value *x = ox__cv_in(n, 1 + i);
            if (!x)
                continue;
            float f[1];
            if (ox__cv_floats(x, f, 1) != 1)
                return ox__cv_refuse(c, n, "'%s' is computed at run time, and opset %d needs "
                                     "it as a constant attribute", names[i], c->to);
            ox_node_set_attr_f(n, names[i], f[0]);
            ox_node_set_input(n, 1 + i, NULL);
        }
        ox__cv_trim(n);
    }
    return OX_OK;
}

/* ---- Pad: attributes (< 11), inputs (11), axes (18), wrap (19) ------------ */

static ox_status adapt_pad(ox__cv *c, ox_node *n)
{
    ox_status st;
    if ((st = ox__cv_need_s(c, n, "mode", "constant", "wrap", 19)))
        return st;
    if (ox__cv_down(c, 18) && ox__cv_in(n, 3)) {
        int64_t axes[CAP], pads[CAP], full[CAP] = {0};
        int r = ox__cv_rank(ox__cv_in(n, 0));
        int ka = ox__cv_ints(ox__cv_in(n, 3), axes, CAP);
        int kp = ox__cv_ints(ox__cv_in(n, 1), pads, CAP);
        if (r < 0 || ka < 0 || kp != 2 * ka)
            return ox__cv_refuse(c, n, "the 'axes' input needs opset 18 unless axes and pads "
                                 "are constants and the rank is known");
        for (int i = 0; i < ka; i++) {
            int64_t a = axes[i] < 0 ? axes[i] + r : axes[i];
            if (a < 0 || a >= r)
                return ox__cv_refuse(c, n, "axis %lld out of range", (long long)axes[i]);
            full[a] = pads[i];
            full[a + r] = pads[i + ka];
        }
        ox_node_set_input(n, 1, ox__cv_i64(c, n, "pads", 2 * r, full));
        ox_node_set_input(n, 3, NULL);
        ox__cv_trim(n);
    }
    if (ox__cv_up(c, 11)) {
        const int64_t *p;
        int k = ox_node_attr_ints(n, "pads", &p);
        if (k >= 0)
            ox__cv_attr_to_input(c, n, "pads", 1);
        float v = ox_node_attr_f(n, "value", 0.0f);
        if (ox_node_attr(n, "value")) {
            if (v != 0.0f)
                ox_node_set_input(n, 2, ox__cv_scalar(c, n, "value",
                                                      ox__cv_elem(ox__cv_in(n, 0)), v));
            ox_node_remove_attr(n, "value");
        }
    } else if (ox__cv_down(c, 11)) {
        if ((st = ox__cv_input_to_attr(c, n, 1, "pads")))
            return st;
        ox_value *cv = ox__cv_in(n, 2);
        if (cv) {
            float f[1];
            if (ox__cv_floats(cv, f, 1) != 1)
                return ox__cv_refuse(c, n, "constant_value is computed at run time");
            ox_node_set_attr_f(n, "value", f[0]);
            ox_node_set_input(n, 2, NULL);
            ox__cv_trim(n);
        }
    }
    return OX_OK;
}

/* ---- Slice: attributes (< 10) / inputs (10) -------------------------------- */

static ox_status adapt_slice(ox__cv *c, ox_node *n)
{
    ox_status st;
    if (ox__cv_up(c, 10)) {
        const int64_t *s, *e;
        int ks = ox_node_attr_ints(n, "starts", &s), ke = ox_node_attr_ints(n, "ends", &e);
        if (ks < 0 || ke < 0)
            return ox__cv_refuse(c, n, "starts/ends missing");
        ox__cv_attr_to_input(c, n, "starts", 1);
        ox__cv_attr_to_input(c, n, "ends", 2);
        ox__cv_attr_to_input(c, n, "axes", 3);
    } else if (ox__cv_down(c, 10)) {
        int64_t steps[CAP];
        ox_value *sv = ox__cv_in(n, 4);
        if (sv) {
            int k = ox__cv_ints(sv, steps, CAP);
            if (k < 0)
                return ox__cv_refuse(c, n, "steps are computed at run time (opset 10 added steps)");
            for (int i = 0; i < k; i++)
                if (steps[i] != 1)
                    return ox__cv_refuse(c, n, "a step other than 1 needs opset 10");
            ox_node_set_input(n, 4, NULL);
        }
        if ((st = ox__cv_input_to_attr(c, n, 3, "axes")) ||
            (st = ox__cv_input_to_attr(c, n, 2, "ends")) ||
            (st = ox__cv_input_to_attr(c, n, 1, "starts")))
            return st;
    }
    return fix_negative_axes(c, n, ox__cv_in(n, 0));
}

/* ---- TopK: k attribute (< 10) / input (10); largest, sorted (11) ----------- */

static ox_status adapt_topk(ox__cv *c, ox_node *n)
{
    ox_status st;
    if (ox__cv_down(c, 11)) {
        if ((st = ox__cv_need_i(c, n, "largest", 1, 11)))
            return st;
        /* sorted=0 leaves the order unspecified: a sorted result is one. */
        ox_node_remove_attr(n, "sorted");
    }
    if (ox__cv_up(c, 10)) {
        ox_attr *a = ox_node_attr(n, "k");
        if (!a)
            return ox__cv_refuse(c, n, "attribute k missing");
        int64_t k = a->i;
        ox_node_set_input(n, 1, ox__cv_i64(c, n, "k", 1, &k));
        ox_node_remove_attr(n, "k");
    } else if (ox__cv_down(c, 10)) {
        int64_t k[2];
        if (ox__cv_ints(ox__cv_in(n, 1), k, 2) != 1)
            return ox__cv_refuse(c, n, "k is computed at run time, and opset %d needs it as a "
                                 "constant attribute", c->to);
        ox_node_set_attr_i(n, "k", k[0]);
        ox_node_set_input(n, 1, NULL);
        ox__cv_trim(n);
    }
    return fix_negative_axes(c, n, ox__cv_in(n, 0));
}

/* ---- Dropout: mask type (10), ratio/training_mode inputs (12) -------------- */

static ox_status adapt_dropout(ox__cv *c, ox_node *n)
{
    if ((ox__cv_up(c, 10) || ox__cv_down(c, 10)) && ox__cv_out_used(n, 1))
        return ox__cv_refuse(c, n, "the mask output changes type at opset 10 (bool) and is used");
    if ((ox__cv_up(c, 10) || ox__cv_down(c, 10)) && ox__cv_out(n, 1)) {
        ox_value *mask = n->outputs[1];
        ox_node_set_output(n, 1, NULL);
        ox_graph_remove_value(n->graph, mask);
        ox__cv_trim(n);
    }
    if (ox__cv_up(c, 12)) {
        ox_attr *a = ox_node_attr(n, "ratio");
        if (a) {
            ox_node_set_input(n, 1, ox__cv_scalar(c, n, "ratio", OX_DT_FLOAT, a->f));
            ox_node_remove_attr(n, "ratio");
        }
        ox_node_remove_attr(n, "is_test");
    } else if (ox__cv_down(c, 12)) {
        ox_value *t = ox__cv_in(n, 2);
        if (t) {
            int64_t v[1];
            if (ox__cv_ints(t, v, 1) != 1 || v[0] != 0)
                return ox__cv_refuse(c, n, "training_mode needs opset 12");
            ox_node_set_input(n, 2, NULL);
        }
        ox_value *r = ox__cv_in(n, 1);
        if (r) {
            float f[1];
            if (ox__cv_floats(r, f, 1) != 1)
                return ox__cv_refuse(c, n, "ratio is computed at run time");
            ox_node_set_attr_f(n, "ratio", f[0]);
            ox_node_set_input(n, 1, NULL);
        }
        ox_node_remove_attr(n, "seed");
        ox__cv_trim(n);
    }
    return OX_OK;
}

/* ---- BatchNormalization: spatial (< 9), training outputs (14) ------------- */

static ox_status adapt_batchnorm(ox__cv *c, ox_node *n)
{
    if (ox__cv_up(c, 9)) {
        if (ox_node_attr_i(n, "spatial", 1) != 1)
            return ox__cv_refuse(c, n, "spatial=0 was removed in opset 9");
        ox_node_remove_attr(n, "spatial");
    }
    if (ox__cv_up(c, 14) || ox__cv_down(c, 14)) {
        for (int i = 1; i < n->n_outputs; i++)
            if (ox__cv_out_used(n, i))
                return ox__cv_refuse(c, n, "its training outputs (used here) changed meaning "
                                     "in opset 14");
        for (int i = 1; i < n->n_outputs; i++) {
            ox_value *v = n->outputs[i];
            ox_node_set_output(n, i, NULL);
            if (v)
                ox_graph_remove_value(n->graph, v);
        }
        ox__cv_trim(n);
        ox_status st = ox__cv_need_i(c, n, "training_mode", 0, 14);
        if (st)
            return st;
    }
    return OX_OK;
}

/* ---- Scatter (9, deprecated 11) / ScatterElements (11; reduction 16, 18) -- */

static ox_status adapt_scatter(ox__cv *c, ox_node *n)
{
    ox_status st;
    if (!strcmp(n->op_type, "Scatter")) {
        if (c->to >= 11)
            ox__cv_rename(n, "ScatterElements");
        return fix_negative_axes(c, n, ox__cv_in(n, 0));
    }
    if ((st = ox__cv_need_s(c, n, "reduction", "none", "max", 18)) ||
        (st = ox__cv_need_s(c, n, "reduction", "none", "min", 18)) ||
        (st = ox__cv_need_s(c, n, "reduction", "none", "add", 16)) ||
        (st = ox__cv_need_s(c, n, "reduction", "none", "mul", 16)))
        return st;
    if (c->to < 16)
        ox_node_remove_attr(n, "reduction");
    if (c->to < 11) {
        if (c->to < 9)
            return ox__cv_refuse(c, n, "Scatter was introduced in opset 9");
        ox__cv_rename(n, "Scatter");
    }
    return fix_negative_axes(c, n, ox__cv_in(n, 0));
}

static ox_status adapt_scatternd(ox__cv *c, ox_node *n)
{
    ox_status st;
    if ((st = ox__cv_need_s(c, n, "reduction", "none", "max", 18)) ||
        (st = ox__cv_need_s(c, n, "reduction", "none", "min", 18)) ||
        (st = ox__cv_need_s(c, n, "reduction", "none", "add", 16)) ||
        (st = ox__cv_need_s(c, n, "reduction", "none", "mul", 16)))
        return st;
    if (c->to < 16)
        ox_node_remove_attr(n, "reduction");
    return OX_OK;
}

/* ---- Softmax, LogSoftmax, Hardmax: axis semantics (13) --------------------- */

/* Before 13 the input is coerced to 2-D at `axis` (default 1) and the
 * operation runs over the second dim; from 13 it runs along `axis`
 * (default -1). Equal when axis is the last dim. */
static ox_status adapt_softmax(ox__cv *c, ox_node *n)
{
    ox_value *x = ox__cv_in(n, 0);
    int r = ox__cv_rank(x);
    if (ox__cv_up(c, 13)) {
        int64_t a = ox_node_attr_i(n, "axis", 1);
        if (r >= 0 && a < 0)
            a += r;
        if (r >= 0 && a == r - 1) {
            ox_node_set_attr_i(n, "axis", a);
            return OX_OK;
        }
        /* Flatten to 2-D at axis, run along the last dim, reshape back. */
        ox_node *f = ox__cv_node(c, n, "Flatten", 1, &x, 1);
        ox_value *shape = ox__cv_op(c, n, "Shape", 1, &x);
        if (!f || !shape)
            return OX_ENOMEM;
        ox_node_set_attr_i(f, "axis", a);
        ox_node *s = ox__cv_node(c, n, n->op_type, 1, &f->outputs[0], 1);
        if (!s)
            return OX_ENOMEM;
        ox_node_set_attr_i(s, "axis", -1);
        ox_value *rin[2] = {s->outputs[0], shape};
        ox_node *rs = ox__cv_node(c, n, "Reshape", 2, rin, 1);
        if (!rs)
            return OX_ENOMEM;
        ox__cv_take_output(n, 0, rs, 0);
        ox__cv_kill(c, n);
        return OX_OK;
    }
    if (ox__cv_down(c, 13)) {
        int64_t a = ox_node_attr_i(n, "axis", -1);
        if (r < 0) {
            if (a == -1 && c->to >= 11)
                return OX_OK;   /* coerced at the last dim: the same */
            return ox__cv_refuse(c, n, "the input's rank is unknown, so axis %lld cannot be "
                                 "expressed with the 2-D coercion of opset %d", (long long)a,
                                 c->to);
        }
        if (a < 0)
            a += r;
        if (a < 0 || a >= r || r > OX_MAX_RANK)
            return ox__cv_refuse(c, n, "axis %lld out of range for rank %d", (long long)a, r);
        if (a == r - 1) {
            ox_node_set_attr_i(n, "axis", a);
            return OX_OK;
        }
        /* Move the axis last, run there, move it back. */
        int64_t perm[OX_MAX_RANK];
        for (int i = 0; i < r; i++)
            perm[i] = i;
        perm[a] = r - 1;
        perm[r - 1] = a;
        ox_node *t1 = ox__cv_node(c, n, "Transpose", 1, &x, 1);
        if (!t1)
            return OX_ENOMEM;
        ox_node_set_attr_ints(t1, "perm", r, perm);
        ox_node *s = ox__cv_node(c, n, n->op_type, 1, &t1->outputs[0], 1);
        if (!s)
            return OX_ENOMEM;
        ox_node_set_attr_i(s, "axis", r - 1);
        ox_node *t2 = ox__cv_node(c, n, "Transpose", 1, &s->outputs[0], 1);
        if (!t2)
            return OX_ENOMEM;
        ox_node_set_attr_ints(t2, "perm", r, perm);
        ox__cv_take_output(n, 0, t2, 0);
        ox__cv_kill(c, n);
        return OX_OK;
    }
    return fix_negative_axes(c, n, x);
}

/* ---- Resize and Upsample ------------------------------------------------------ */

/* What a Resize/Upsample node computes, read from any of its versions
 * (strings copied: the adapter replaces the attributes they come from). */
typedef struct resize_spec {
    char mode[24];              /* nearest, linear, cubic */
    char ctm[32];               /* coordinate_transformation_mode */
    char nearest[24];           /* nearest_mode */
    ox_value *x, *roi, *scales, *sizes;
    float scale_attr[OX_MAX_RANK];
    int n_scale_attr;           /* Upsample-7's attribute; -1 when none */
} resize_spec;

static void read_resize(const ox__cv *c, ox_node *n, resize_spec *s)
{
    memset(s, 0, sizeof *s);
    s->n_scale_attr = -1;
    s->x = ox__cv_in(n, 0);
    snprintf(s->mode, sizeof s->mode, "%s", ox_node_attr_s(n, "mode", "nearest"));
    if (!strcmp(s->mode, "bilinear"))
        snprintf(s->mode, sizeof s->mode, "linear");
    if (!strcmp(n->op_type, "Upsample") || c->from < 11) {
        /* Upsample and Resize-10: asymmetric coordinates; nearest rounds
         * down when upsampling and up when downsampling (ONNX Runtime's
         * behaviour, which the reference outputs follow). */
        snprintf(s->ctm, sizeof s->ctm, "asymmetric");
        snprintf(s->nearest, sizeof s->nearest, "simple");
        if (!strcmp(n->op_type, "Upsample") && c->from < 9) {
            const ox_attr *a = ox_node_attr(n, "scales");
            if (a && a->type == OX_ATTR_FLOATS && a->n <= OX_MAX_RANK) {
                s->n_scale_attr = a->n;
                memcpy(s->scale_attr, a->floats, (size_t)a->n * sizeof(float));
            }
        } else {
            s->scales = ox__cv_in(n, 1);
        }
        return;
    }
    snprintf(s->ctm, sizeof s->ctm, "%s",
             ox_node_attr_s(n, "coordinate_transformation_mode", "half_pixel"));
    snprintf(s->nearest, sizeof s->nearest, "%s",
             ox_node_attr_s(n, "nearest_mode", "round_prefer_floor"));
    s->roi = ox__cv_in(n, 1);
    s->scales = ox__cv_in(n, 2);
    s->sizes = ox__cv_in(n, 3);
}

/* The nearest_mode of Resize-11 that rounds like Upsample/Resize-10 for
 * these scales: floor when upsampling, ceil when downsampling; either when
 * the scale's inverse is an integer (positions fall on integers). NULL
 * when the scales mix both or are unknown. */
static const char *simple_nearest(const float *sc, int n)
{
    bool up = false, down = false;
    for (int i = 0; i < n; i++) {
        if (sc[i] > 1)
            up = true;
        else if (sc[i] < 1 && fabsf(1.0f / sc[i] - roundf(1.0f / sc[i])) > 1e-6f)
            down = true;
    }
    if (n < 0 || (up && down))
        return NULL;
    return down ? "ceil" : "floor";
}

/* An empty float tensor, for Resize-11's required roi/scales. */
static ox_value *empty_floats(ox__cv *c, ox_node *n, const char *hint)
{
    return ox__cv_floats_1d(c, n, hint, 0, NULL);
}

static ox_status adapt_resize(ox__cv *c, ox_node *n)
{
    ox_status st;
    bool upsample = !strcmp(n->op_type, "Upsample");
    if (c->to >= 11 && !upsample && c->from >= 11) {
        /* Within the Resize-11 family. */
        if ((st = ox__cv_need_s(c, n, "coordinate_transformation_mode", "half_pixel",
                                "half_pixel_symmetric", 19)) ||
            (st = ox__cv_need_i(c, n, "antialias", 0, 18)))
            return st;
        if (c->to < 18) {
            const char *k = ox_node_attr_s(n, "keep_aspect_ratio_policy", "stretch");
            if (strcmp(k, "stretch") && ox__cv_in(n, 3))
                return ox__cv_refuse(c, n, "keep_aspect_ratio_policy=%s needs opset 18", k);
            ox_node_remove_attr(n, "keep_aspect_ratio_policy");
            if (ox_node_attr(n, "axes"))
                return ox__cv_refuse(c, n, "the axes attribute needs opset 18");
        }
        if (c->to < 13) {
            /* roi and scales are required inputs before 13. */
            if (!ox__cv_in(n, 1))
                ox_node_set_input(n, 1, empty_floats(c, n, "roi"));
            if (!ox__cv_in(n, 2))
                ox_node_set_input(n, 2, empty_floats(c, n, "scales"));
        }
        return OX_OK;
    }
    resize_spec s;
    read_resize(c, n, &s);
    if (c->to >= 11) {
        /* Upsample or Resize-10 up to the Resize-11 form. */
        ox_value *scales = s.scales;
        float sc[OX_MAX_RANK];
        int nsc = s.n_scale_attr;
        if (nsc >= 0) {
            memcpy(sc, s.scale_attr, (size_t)nsc * sizeof(float));
            scales = ox__cv_floats_1d(c, n, "scales", nsc, sc);
        } else {
            nsc = ox__cv_floats(scales, sc, OX_MAX_RANK);
        }
        /* Run-time scales: assumed upsampling (the op's name says so). */
        const char *nm = nsc < 0 ? "floor" : simple_nearest(sc, nsc);
        if (!strcmp(s.mode, "nearest") && !nm)
            return ox__cv_refuse(c, n, "nearest rounding of scales that both up- and "
                                 "downsample has no Resize-11 equivalent");
        ox_node_set_input(n, 1, c->to >= 13 ? NULL : empty_floats(c, n, "roi"));
        ox_node_set_input(n, 2, scales);
        ox_node_remove_attr(n, "scales");
        ox_node_set_attr_s(n, "mode", s.mode);
        ox_node_set_attr_s(n, "coordinate_transformation_mode", "asymmetric");
        if (!strcmp(s.mode, "nearest"))
            ox_node_set_attr_s(n, "nearest_mode", nm);
        ox__cv_rename(n, "Resize");
        return OX_OK;
    }
    /* Down to Resize-10 / Upsample: only what they compute. */
    if (strcmp(s.mode, "nearest") && strcmp(s.mode, "linear"))
        return ox__cv_refuse(c, n, "mode=%s needs opset 11", s.mode);
    if (strcmp(s.ctm, "asymmetric"))
        return ox__cv_refuse(c, n, "coordinate_transformation_mode=%s needs opset 11", s.ctm);
    if (ox_node_attr_i(n, "antialias", 0) || ox_node_attr(n, "axes"))
        return ox__cv_refuse(c, n, "antialias/axes need opset 18");
    ox_value *scales = s.scales;
    float sc[OX_MAX_RANK];
    int nsc = -1;
    if (s.n_scale_attr >= 0) {
        nsc = s.n_scale_attr;
        memcpy(sc, s.scale_attr, (size_t)nsc * sizeof(float));
    } else if (scales && ox__cv_const(scales) && ox__cv_const(scales)->numel == 0) {
        scales = NULL;
    }
    if (!scales && nsc < 0) {
        /* sizes -> scales when both the sizes and the input dims are known. */
        int64_t sz[OX_MAX_RANK];
        int k = ox__cv_ints(s.sizes, sz, OX_MAX_RANK);
        if (k <= 0 || ox__cv_rank(s.x) != k)
            return ox__cv_refuse(c, n, "output sizes need opset 11 unless they are constants "
                                 "and the input's shape is known");
        for (int i = 0; i < k; i++) {
            int64_t d = ox__cv_dim(s.x, i);
            if (d <= 0)
                return ox__cv_refuse(c, n, "output sizes need opset 11 unless the input's "
                                     "shape is known");
            sc[i] = (float)sz[i] / (float)d;
            if ((int64_t)floorf((float)d * sc[i]) != sz[i])
                return ox__cv_refuse(c, n, "sizes cannot be expressed as exact scales");
        }
        nsc = k;
    }
    if (nsc < 0)
        nsc = ox__cv_floats(scales, sc, OX_MAX_RANK);
    if (c->to < 9 && nsc < 0)
        return ox__cv_refuse(c, n, "scales are computed at run time, and opset %d needs "
                             "them as a constant attribute", c->to);
    if (!strcmp(s.mode, "nearest")) {
        const char *want = nsc < 0 ? NULL : simple_nearest(sc, nsc);
        if (strcmp(s.nearest, "simple") && (!want || strcmp(s.nearest, want)))
            return ox__cv_refuse(c, n, "nearest_mode=%s needs opset 11 (opset %d rounds down "
                                 "when upsampling, up when downsampling)", s.nearest, c->to);
    }
    bool scales_const = ox__cv_const(scales) != NULL;
    for (int i = n->n_inputs - 1; i >= 1; i--)
        ox_node_set_input(n, i, NULL);
    ox__cv_trim(n);
    ox_node_remove_attr(n, "coordinate_transformation_mode");
    ox_node_remove_attr(n, "nearest_mode");
    ox_node_remove_attr(n, "cubic_coeff_a");
    ox_node_remove_attr(n, "exclude_outside");
    ox_node_remove_attr(n, "extrapolation_value");
    ox_node_remove_attr(n, "antialias");
    ox_node_remove_attr(n, "keep_aspect_ratio_policy");
    ox_node_remove_attr(n, "scales");
    ox_node_set_attr_s(n, "mode", s.mode);
    if (c->to < 9) {
        ox_attr a = {.name = "scales", .type = OX_ATTR_FLOATS, .n = nsc, .floats = sc};
        ox_node_set_attr(n, &a);
    } else {
        ox_node_set_input(n, 1, nsc >= 0 && !scales_const ? ox__cv_floats_1d(c, n, "scales", nsc, sc)
                                : scales);
    }
    ox__cv_rename(n, c->to >= 10 ? "Resize" : "Upsample");
    return OX_OK;
}

/* ---- smaller changes ------------------------------------------------------ */

/* ArgMax/ArgMin: select_last_index (12). */
static ox_status adapt_arg(ox__cv *c, ox_node *n)
{
    ox_status st = ox__cv_need_i(c, n, "select_last_index", 0, 12);
    return st ? st : fix_negative_axes(c, n, ox__cv_in(n, 0));
}

/* Reshape: allowzero (14). */
static ox_status adapt_reshape(ox__cv *c, ox_node *n)
{
    if (c->to >= 14 || !ox_node_attr(n, "allowzero"))
        return OX_OK;
    if (ox_node_attr_i(n, "allowzero", 0)) {
        int64_t s[CAP];
        int k = ox__cv_ints(ox__cv_in(n, 1), s, CAP);
        for (int i = 0; i < k; i++)
            if (s[i] == 0)
                k = -1;
        if (k < 0)
            return ox__cv_refuse(c, n, "allowzero=1 needs opset 14 when the shape may hold 0");
    }
    ox_node_remove_attr(n, "allowzero");
    return OX_OK;
}

/* Shape: start/end (15) become a Slice of the shape. */
static ox_status adapt_shape(ox__cv *c, ox_node *n)
{
    if (c->to >= 15)
        return OX_OK;
    ox_attr *sa = ox_node_attr(n, "start"), *ea = ox_node_attr(n, "end");
    if (!sa && !ea)
        return OX_OK;
    int64_t start = sa ? sa->i : 0, end = ea ? ea->i : INT64_MAX;
    ox_node_remove_attr(n, "start");
    ox_node_remove_attr(n, "end");
    if (start == 0 && end == INT64_MAX)
        return OX_OK;
    ox_value *full = ox_graph_new_value(n->graph, "shape_full");
    ox_value *out = n->outputs[0];
    ox_node_set_output(n, 0, full);
    ox_node *sl;
    if (c->to >= 10) {
        ox_value *in[4] = {full, ox__cv_i64(c, n, "start", 1, &start),
                           ox__cv_i64(c, n, "end", 1, &end), NULL};
        int64_t zero = 0;
        in[3] = ox__cv_i64(c, n, "axes", 1, &zero);
        sl = ox__cv_node(c, n, "Slice", 4, in, 1);
    } else {
        sl = ox__cv_node(c, n, "Slice", 1, &full, 1);
        if (sl) {
            ox_node_set_attr_ints(sl, "starts", 1, &start);
            ox_node_set_attr_ints(sl, "ends", 1, &end);
        }
    }
    if (!sl)
        return OX_ENOMEM;
    ox_value *tmp = sl->outputs[0];
    ox_node_set_output(sl, 0, out);
    ox_graph_remove_value(n->graph, tmp);
    return OX_OK;
}

/* MaxPool: Indices and storage_order (8), ceil_mode/dilations (10). */
static ox_status no_dilations(ox__cv *c, ox_node *n, int since)
{
    const int64_t *d;
    int k = ox_node_attr_ints(n, "dilations", &d);
    if (c->to >= since || k < 0)
        return OX_OK;
    for (int i = 0; i < k; i++)
        if (d[i] != 1)
            return ox__cv_refuse(c, n, "dilations need opset %d", since);
    ox_node_remove_attr(n, "dilations");
    return OX_OK;
}

static ox_status adapt_maxpool(ox__cv *c, ox_node *n)
{
    ox_status st;
    if ((st = ox__cv_need_i(c, n, "ceil_mode", 0, 10)) || (st = no_dilations(c, n, 10)) ||
        (st = ox__cv_need_i(c, n, "storage_order", 0, 8)))
        return st;
    if (c->to < 8 && ox__cv_out(n, 1))
        return ox__cv_refuse(c, n, "the Indices output needs opset 8");
    return OX_OK;
}

static ox_status adapt_avgpool(ox__cv *c, ox_node *n)
{
    ox_status st;
    if ((st = ox__cv_need_i(c, n, "ceil_mode", 0, 10)) || (st = no_dilations(c, n, 19)))
        return st;
    return OX_OK;
}

static ox_status adapt_lppool(ox__cv *c, ox_node *n)
{
    ox_status st;
    if ((st = ox__cv_need_i(c, n, "ceil_mode", 0, 18)) || (st = no_dilations(c, n, 18)))
        return st;
    return OX_OK;
}

/* DepthToSpace: mode (11; DCR is the older behaviour). */
static ox_status adapt_d2s(ox__cv *c, ox_node *n)
{
    ox_status st = ox__cv_need_s(c, n, "mode", "DCR", "CRD", 11);
    if (!st && c->to < 11)
        ox_node_remove_attr(n, "mode");
    return st;
}

/* RNN, GRU, LSTM: layout (14). */
static ox_status adapt_rnn(ox__cv *c, ox_node *n)
{
    return ox__cv_need_i(c, n, "layout", 0, 14);
}

/* Gemm: C optional from 11. */
static ox_status adapt_gemm(ox__cv *c, ox_node *n)
{
    if (c->to < 11 && !ox__cv_in(n, 2))
        ox_node_set_input(n, 2, ox__cv_scalar(c, n, "C", ox__cv_elem(ox__cv_in(n, 0)), 0.0));
    return OX_OK;
}

/* Constant: value_* attributes (12), sparse_value (11). */
static ox_status adapt_constant(ox__cv *c, ox_node *n)
{
    if (c->to >= 12)
        return OX_OK;
    if (ox_node_attr(n, "sparse_value") && c->to < 11)
        return ox__cv_refuse(c, n, "sparse_value needs opset 11");
    ox_attr *a;
    ox_tensor *t = NULL;
    if ((a = ox_node_attr(n, "value_float"))) {
        t = ox_tensor_new(OX_DT_FLOAT, 0, NULL);
        if (t)
            ox_tensor_set_f64(t, 0, a->f);
    } else if ((a = ox_node_attr(n, "value_int"))) {
        t = ox_tensor_new(OX_DT_INT64, 0, NULL);
        if (t)
            ox_tensor_set_i64(t, 0, a->i);
    } else if ((a = ox_node_attr(n, "value_floats")) || (a = ox_node_attr(n, "value_ints"))) {
        int64_t d = a->n;
        bool f = a->type == OX_ATTR_FLOATS;
        t = ox_tensor_new(f ? OX_DT_FLOAT : OX_DT_INT64, 1, &d);
        for (int i = 0; t && i < a->n; i++) {
            if (f)
                ox_tensor_set_f64(t, i, a->floats[i]);
            else
                ox_tensor_set_i64(t, i, a->ints[i]);
        }
    } else if (ox_node_attr(n, "value_string") || ox_node_attr(n, "value_strings")) {
        return ox__cv_refuse(c, n, "string values need opset 12");
    } else {
        /* Before 12 `value` (or, at 11, sparse_value) is required. */
        if (!ox_node_attr(n, "value") && !ox_node_attr(n, "sparse_value"))
            return ox__cv_refuse(c, n, "it has no value attribute, which opset %d requires",
                                 c->to);
        return OX_OK;
    }
    if (!t)
        return OX_ENOMEM;
    char name[32];   /* a->name goes with the attribute */
    snprintf(name, sizeof name, "%s", a->name);
    ox_node_remove_attr(n, name);
    ox_node_set_attr_t(n, "value", t);
    return OX_OK;
}

/* Cast/CastLike: saturate (19). */
static ox_status adapt_cast(ox__cv *c, ox_node *n)
{
    if (c->to < 19)
        ox_node_remove_attr(n, "saturate");
    return OX_OK;
}

/* QuantizeLinear/DequantizeLinear: axis (13), saturate (19), block_size and
 * output_dtype (21). */
static ox_status adapt_qdq(ox__cv *c, ox_node *n)
{
    ox_status st;
    if ((st = ox__cv_need_i(c, n, "block_size", 0, 21)) ||
        (st = ox__cv_need_i(c, n, "output_dtype", 0, 21)))
        return st;
    if (c->to < 19)
        ox_node_remove_attr(n, "saturate");
    if (c->to < 13) {
        const ox_value *s = ox__cv_in(n, 1);
        int r = ox__cv_rank(s);
        if (r != 0 && !(r == 1 && ox__cv_dim(s, 0) == 1))
            return ox__cv_refuse(c, n, "a per-axis (or unknown-shape) scale needs opset 13");
        ox_node_remove_attr(n, "axis");
    }
    return OX_OK;
}

/* RoiAlign: coordinate_transformation_mode (16; before: output_half_pixel). */
static ox_status adapt_roialign(ox__cv *c, ox_node *n)
{
    if (ox__cv_up(c, 16))
        ox_node_set_attr_s(n, "coordinate_transformation_mode", "output_half_pixel");
    else if (ox__cv_down(c, 16)) {
        const char *m = ox_node_attr_s(n, "coordinate_transformation_mode", "half_pixel");
        if (strcmp(m, "output_half_pixel"))
            return ox__cv_refuse(c, n, "coordinate_transformation_mode=%s needs opset 16", m);
        ox_node_remove_attr(n, "coordinate_transformation_mode");
    }
    return OX_OK;
}

/* GridSample: modes renamed in 20 (bilinear -> linear, bicubic -> cubic). */
static ox_status adapt_gridsample(ox__cv *c, ox_node *n)
{
    const char *m = ox_node_attr_s(n, "mode", c->from >= 20 ? "linear" : "bilinear");
    const char *to = m;
    if (ox__cv_up(c, 20))
        to = !strcmp(m, "bilinear") ? "linear" : !strcmp(m, "bicubic") ? "cubic" : m;
    else if (ox__cv_down(c, 20)) {
        if (ox__cv_rank(ox__cv_in(n, 0)) != 4)
            return ox__cv_refuse(c, n, "inputs other than 4-D (or of unknown rank) need "
                                 "opset 20");
        to = !strcmp(m, "linear") ? "bilinear" : !strcmp(m, "cubic") ? "bicubic" : m;
    }
    if (to != m || ox_node_attr(n, "mode"))
        ox_node_set_attr_s(n, "mode", to);
    return OX_OK;
}

/* GatherND: batch_dims (12). */
static ox_status adapt_gathernd(ox__cv *c, ox_node *n)
{
    return ox__cv_need_i(c, n, "batch_dims", 0, 12);
}

/* Scan: opset 9 dropped the batch dim and sequence_lens of Scan-8. */
static ox_status adapt_scan(ox__cv *c, ox_node *n)
{
    if (ox__cv_up(c, 9) || ox__cv_down(c, 9))
        return ox__cv_refuse(c, n, "Scan-8 and Scan-9 differ in their inputs (batch dim)");
    if (c->to >= 11)
        return OX_OK;
    /* Below 11 the scan axes must be non-negative: scan_input_axes index
     * the last M inputs, scan_output_axes the outputs after the states. */
    int m_in = (int)ox_node_attr_i(n, "num_scan_inputs", 0);
    ox_attr *a = ox_node_attr(n, "scan_input_axes");
    for (int i = 0; a && a->type == OX_ATTR_INTS && i < a->n; i++) {
        if (a->ints[i] >= 0)
            continue;
        int k = n->n_inputs - m_in + i;
        int r = k >= 0 && k < n->n_inputs ? ox__cv_rank(n->inputs[k]) : -1;
        if (r < 0)
            return ox__cv_refuse(c, n, "scan_input_axes are negative and the input's rank "
                                 "is unknown");
        a->ints[i] += r;
    }
    a = ox_node_attr(n, "scan_output_axes");
    int n_states = n->n_inputs - m_in;
    for (int i = 0; a && a->type == OX_ATTR_INTS && i < a->n; i++) {
        if (a->ints[i] >= 0)
            continue;
        int k = n_states + i;
        int r = k >= 0 && k < n->n_outputs ? ox__cv_rank(n->outputs[k]) : -1;
        if (r < 0)
            return ox__cv_refuse(c, n, "scan_output_axes are negative and the output's rank "
                                 "is unknown");
        a->ints[i] += r;
    }
    return OX_OK;
}

/* Max/Min/Sum/Mean: multidirectional broadcasting (8). */
static ox_status adapt_variadic(ox__cv *c, ox_node *n)
{
    if (c->to >= 8)
        return OX_OK;
    const ox_type *t0 = n->n_inputs ? (n->inputs[0] ? n->inputs[0]->type : NULL) : NULL;
    for (int i = 1; i < n->n_inputs; i++) {
        const ox_type *t = n->inputs[i] ? n->inputs[i]->type : NULL;
        if (!t0 || !t || !ox_type_is_static(t0) || !ox_type_equal(t0, t))
            return ox__cv_refuse(c, n, "inputs of different (or unknown) shapes need "
                                 "broadcasting (opset 8)");
    }
    return OX_OK;
}

/* DFT: axis attribute (17) became input 2 (20), its default 1 -> -2. */
static ox_status adapt_dft(ox__cv *c, ox_node *n)
{
    if (ox__cv_up(c, 20)) {
        int64_t a = ox_node_attr_i(n, "axis", 1);
        ox_node_remove_attr(n, "axis");
        ox_node_set_input(n, 2, ox__cv_i64_scalar(c, n, "axis", a));
    } else if (ox__cv_down(c, 20)) {
        int64_t a[1] = {-2};
        if (ox__cv_in(n, 2) && ox__cv_ints(ox__cv_in(n, 2), a, 1) != 1)
            return ox__cv_refuse(c, n, "axis is computed at run time");
        ox_node_set_attr_i(n, "axis", a[0]);
        ox_node_set_input(n, 2, NULL);
        ox__cv_trim(n);
    }
    return OX_OK;
}

/* GroupNormalization: scale/bias per group (18) or per channel (21). */
static ox_status adapt_groupnorm(ox__cv *c, ox_node *n)
{
    if (!ox__cv_up(c, 21) && !ox__cv_down(c, 21))
        return OX_OK;
    if (c->to < 21)
        ox_node_remove_attr(n, "stash_type");
    int64_t g = ox_node_attr_i(n, "num_groups", 0);
    int64_t ch = ox__cv_dim(ox__cv_in(n, 0), 1);
    const ox_tensor *s = ox__cv_const(ox__cv_in(n, 1)), *b = ox__cv_const(ox__cv_in(n, 2));
    if (g <= 0 || ch <= 0 || ch % g || !s || !b)
        return ox__cv_refuse(c, n, "scale and bias change from per group to per channel at "
                             "opset 21; converting needs them constant and the channels known");
    int64_t per = ch / g, len = c->to >= 21 ? ch : g;
    for (int k = 0; k < 2; k++) {
        const ox_tensor *src = k ? b : s;
        ox_tensor *t = ox_tensor_new(src->dtype, 1, &len);
        if (!t)
            return OX_ENOMEM;
        for (int64_t i = 0; i < len; i++) {
            if (c->to >= 21) {
                ox_tensor_set_f64(t, i, ox_tensor_get_f64(src, i / per));
            } else {
                double v = ox_tensor_get_f64(src, i * per);
                for (int64_t j = 1; j < per; j++)
                    if (ox_tensor_get_f64(src, i * per + j) != v) {
                        ox_tensor_free(t);
                        return ox__cv_refuse(c, n, "per-channel scale/bias differing within "
                                             "a group need opset 21");
                    }
                ox_tensor_set_f64(t, i, v);
            }
        }
        ox_value *v = ox__pass_new_init(n->graph, k ? "bias" : "scale", t);
        ox_node_set_input(n, 1 + k, v);
    }
    return OX_OK;
}

const ox__cv_adapter ox__cv_adapters[] = {
    {"ArgMax", adapt_arg},
    {"ArgMin", adapt_arg},
    {"AveragePool", adapt_avgpool},
    {"BatchNormalization", adapt_batchnorm},
    {"Cast", adapt_cast},
    {"CastLike", adapt_cast},
    {"Clip", adapt_clip},
    {"Compress", adapt_axis_only},
    {"Concat", adapt_axis_only},
    {"Constant", adapt_constant},
    {"DFT", adapt_dft},
    {"DepthToSpace", adapt_d2s},
    {"DequantizeLinear", adapt_qdq},
    {"Dropout", adapt_dropout},
    {"Flatten", adapt_axis_only},
    {"GRU", adapt_rnn},
    {"Gather", adapt_axis_only},
    {"GatherElements", adapt_axis_only},
    {"GatherND", adapt_gathernd},
    {"Gemm", adapt_gemm},
    {"GridSample", adapt_gridsample},
    {"GroupNormalization", adapt_groupnorm},
    {"Hardmax", adapt_softmax},
    {"LSTM", adapt_rnn},
    {"LogSoftmax", adapt_softmax},
    {"LpPool", adapt_lppool},
    {"Max", adapt_variadic},
    {"MaxPool", adapt_maxpool},
    {"Mean", adapt_variadic},
    {"Min", adapt_variadic},
    {"OneHot", adapt_axis_only},
    {"Pad", adapt_pad},
    {"QuantizeLinear", adapt_qdq},
    {"RNN", adapt_rnn},
    {"ReduceL1", adapt_axes},
    {"ReduceL2", adapt_axes},
    {"ReduceLogSum", adapt_axes},
    {"ReduceLogSumExp", adapt_axes},
    {"ReduceMax", adapt_axes},
    {"ReduceMean", adapt_axes},
    {"ReduceMin", adapt_axes},
    {"ReduceProd", adapt_axes},
    {"ReduceSum", adapt_axes},
    {"ReduceSumSquare", adapt_axes},
    {"Reshape", adapt_reshape},
    {"Resize", adapt_resize},
    {"RoiAlign", adapt_roialign},
    {"Scan", adapt_scan},
    {"Scatter", adapt_scatter},
    {"ScatterElements", adapt_scatter},
    {"ScatterND", adapt_scatternd},
    {"Shape", adapt_shape},
    {"Slice", adapt_slice},
    {"Softmax", adapt_softmax},
    {"Split", adapt_split},
    {"Squeeze", adapt_axes},
    {"Sum", adapt_variadic},
    {"TopK", adapt_topk},
    {"Unsqueeze", adapt_axes},
    {"Upsample", adapt_resize},
    {NULL, NULL},
};
