/* Convolution folds on standard ops: BatchNormalization, a per-channel Add
 * (bias) or Mul (scale) into the Conv/ConvTranspose weights, a
 * BatchNormalization before an unpadded Conv into its weights, a zero (or
 * -inf) Pad into Conv/AveragePool/MaxPool pads, and a lone
 * BatchNormalization into Mul + Add. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes/fuse_util.h"

/* A Conv or ConvTranspose producing v (in g) whose output only the fused
 * consumer reads, with constant float weights of rank >= 3. Sets M (output
 * channels). */
static ox_node *conv_of(const ox_graph *g, const ox_value *v, int64_t *M)
{
    ox_node *cv = ox__fuse_prod(g, v, "Conv");
    if (!cv)
        cv = ox__fuse_prod(g, v, "ConvTranspose");
    if (!cv || cv->n_outputs != 1 || !ox__fuse_single(v) || cv->n_inputs < 2)
        return NULL;
    const ox_tensor *w = ox__fuse_const(cv->inputs[1]);
    if (!w || w->rank < 3 || !ox__fuse_float(w->dtype))
        return NULL;
    ox_value *b = ox__fuse_in(cv, 2);
    const ox_tensor *bt = b ? ox__fuse_const(b) : NULL;
    if (b && (!bt || bt->dtype != w->dtype))
        return NULL;
    int64_t grp = ox_node_attr_i(cv, "group", 1);
    if (grp < 1 || w->dims[0] % grp)
        return NULL;
    *M = ox_node_is(cv, "Conv") ? w->dims[0] : w->dims[1] * grp;
    if (bt && bt->numel != *M)
        return NULL;
    return cv;
}

/* Gives cv the weights W * s[o] (per output channel o) and the bias
 * B * s + add (B absent: add). s or add may be NULL (1 and 0). */
static bool conv_rescale(ox_pass_ctx *c, ox_node *cv, int64_t M, const double *s,
                         const double *add)
{
    ox_graph *g = cv->graph;
    ox_value *wv = cv->inputs[1], *bv = ox__fuse_in(cv, 2);
    const ox_tensor *w = ox__fuse_const(wv);
    const ox_tensor *b = bv ? ox__fuse_const(bv) : NULL;
    ox_value *nw = NULL;
    if (s) {
        double *d = ox__fuse_f64(w);
        if (!d)
            return false;
        int64_t grp = ox_node_attr_i(cv, "group", 1);
        if (ox_node_is(cv, "Conv")) {
            int64_t per = w->numel / w->dims[0];
            for (int64_t i = 0; i < w->numel; i++)
                d[i] *= s[i / per];
        } else {
            /* ConvTranspose W is (C, M/group, k...): channel o = g*(M/group)+j. */
            int64_t C = w->dims[0], Mg = w->dims[1], per = w->numel / (C * Mg), Cg = C / grp;
            for (int64_t i = 0; i < w->numel; i++) {
                int64_t c = i / (Mg * per), j = (i / per) % Mg;
                d[i] *= s[(c / Cg) * Mg + j];
            }
        }
        nw = ox__fuse_new_init(g, wv->name, w->dtype, w->rank, w->dims, d);
        free(d);
        if (!nw)
            return false;
    }
    double *nb = malloc((size_t)M * sizeof *nb);
    if (!nb)
        return false;
    for (int64_t o = 0; o < M; o++) {
        double v = b ? ox_tensor_get_f64(b, o) : 0.0;
        nb[o] = v * (s ? s[o] : 1.0) + (add ? add[o] : 0.0);
    }
    ox_value *nbv = ox__fuse_new_init(g, bv ? bv->name : "bias", w->dtype, 1, &M, nb);
    free(nb);
    if (!nbv)
        return false;
    if (nw) {
        ox__pass_set_input(c, cv, 1, nw);
        ox__fuse_drop_dead(c, wv);
    }
    ox__pass_set_input(c, cv, 2, nbv);
    ox__fuse_drop_dead(c, bv);
    return true;
}

/* Drops the parameters of a removed BatchNormalization that nothing else reads. */
static void drop_params(ox_pass_ctx *c, ox_value **v, int n)
{
    for (int k = 0; k < n; k++)
        ox__fuse_drop_dead(c, v[k]);
}

static ox_status pass_conv_bn(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    for (int i = 0; i < g->n_nodes && ox__pass_may(c); i++) {
        ox_node *bn = g->nodes[i];
        if (ox__pass_gone(bn))
            continue;
        int64_t M;
        if (!ox_node_is(bn, "BatchNormalization") || bn->n_inputs != 5)
            continue;
        ox_node *cv = conv_of(g, bn->inputs[0], &M);
        if (!cv || M <= 0)
            continue;
        double *s = malloc((size_t)M * 2 * sizeof *s);
        if (!s)
            return ox_errorf(err, OX_ENOMEM, "out of memory");
        bool ok = ox__fuse_bn(bn, M, s, s + M) && conv_rescale(c, cv, M, s, s + M);
        free(s);
        if (!ok)
            continue;
        ox_value *params[4] = {bn->inputs[1], bn->inputs[2], bn->inputs[3], bn->inputs[4]};
        ox__fuse_retarget(c, cv, bn);
        drop_params(c, params, 4);
        ox__pass_did(c);
        i--; /* look at node i again: indexes do not move */
    }
    return OX_OK;
}

/* Conv -> Add or Mul by a per-output-channel constant. */
static ox_status conv_binary(ox_pass_ctx *c, ox_graph *g, ox_error *err, const char *op)
{
    bool mul = !strcmp(op, "Mul");
    for (int i = 0; i < g->n_nodes && ox__pass_may(c); i++) {
        ox_node *n = g->nodes[i];
        if (ox__pass_gone(n))
            continue;
        if (!ox_node_is(n, op) || n->n_inputs != 2 || n->n_outputs != 1)
            continue;
        for (int k = 0; k < 2; k++) {
            int64_t M;
            ox_node *cv = conv_of(g, n->inputs[k], &M);
            const ox_tensor *ct = ox__fuse_const(n->inputs[1 - k]);
            if (!cv || !ct || M <= 0 || ct->dtype != ox__fuse_const(cv->inputs[1])->dtype)
                continue;
            int r = ox__fuse_const(cv->inputs[1])->rank;
            double *v = malloc((size_t)M * sizeof *v);
            if (!v)
                return ox_errorf(err, OX_ENOMEM, "out of memory");
            bool ok = ox__fuse_per_channel(ct, r, 1, M, v) &&
                      conv_rescale(c, cv, M, mul ? v : NULL, mul ? NULL : v);
            free(v);
            if (!ok)
                continue;
            ox_value *cval = n->inputs[1 - k];
            ox__fuse_retarget(c, cv, n);
            ox__fuse_drop_dead(c, cval);
            ox__pass_did(c);
            i--; /* look at node i again: indexes do not move */
            break;
        }
    }
    return OX_OK;
}

static ox_status pass_conv_add(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    return conv_binary(c, g, err, "Add");
}

static ox_status pass_conv_mul(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    return conv_binary(c, g, err, "Mul");
}

/* ---- Pad into Conv / pooling ------------------------------------------- */

/* A constant-mode Pad of a rank-r input: its pads (2r, begins then ends,
 * every axis) and pad value. */
static bool pad_parts(const ox_node *p, int r, int64_t *pads, double *value)
{
    if (strcmp(ox_node_attr_s(p, "mode", "constant"), "constant"))
        return false;
    int64_t raw[2 * OX_MAX_RANK], axes[OX_MAX_RANK];
    int np, na = r;
    *value = 0;
    if (p->n_inputs <= 1) {
        const int64_t *a;
        np = ox_node_attr_ints(p, "pads", &a);
        if (np != 2 * r)
            return false;
        memcpy(raw, a, (size_t)np * sizeof *raw);
        *value = ox_node_attr_f(p, "value", 0.0f);
    } else {
        np = ox__pass_const_ints(p->inputs[1], raw, 2 * OX_MAX_RANK);
        ox_value *cv = ox__fuse_in(p, 2), *av = ox__fuse_in(p, 3);
        if (cv && !ox__fuse_scalar(cv, value))
            return false;
        if (av) {
            na = ox__pass_const_ints(av, axes, OX_MAX_RANK);
            if (na < 0)
                return false;
        }
        if (np != 2 * na)
            return false;
    }
    if (p->n_inputs <= 3 || !p->inputs[3]) {
        for (int k = 0; k < r; k++)
            axes[k] = k;
    }
    memset(pads, 0, 2 * (size_t)r * sizeof *pads);
    for (int k = 0; k < na; k++) {
        int64_t a = axes[k] < 0 ? axes[k] + r : axes[k];
        if (a < 0 || a >= r)
            return false;
        pads[a] = raw[k];
        pads[a + r] = raw[k + na];
    }
    return true;
}

static ox_status pass_pad_conv(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    (void)err;
    for (int i = 0; i < g->n_nodes && ox__pass_may(c); i++) {
        ox_node *n = g->nodes[i];
        if (ox__pass_gone(n))
            continue;
        bool conv = ox_node_is(n, "Conv"), avg = ox_node_is(n, "AveragePool"),
             mx = ox_node_is(n, "MaxPool");
        if (!(conv || avg || mx) || n->n_inputs < 1)
            continue;
        ox_node *p = ox__fuse_prod(g, n->inputs[0], "Pad");
        if (!p || !p->inputs[0] || p->n_outputs != 1 || !ox__fuse_single(n->inputs[0]))
            continue;
        /* auto_pad would recompute the pads from the new input size. */
        if (strcmp(ox_node_attr_s(n, "auto_pad", "NOTSET"), "NOTSET"))
            continue;
        int64_t d[OX_MAX_RANK];
        int r = ox__pass_static_shape(p->inputs[0], d);
        if (r < 0 && p->inputs[0]->type && p->inputs[0]->type->kind == OX_TYPE_TENSOR &&
            p->inputs[0]->type->has_shape)
            r = p->inputs[0]->type->rank;
        if (conv && r < 0 && n->n_inputs > 1 && ox__fuse_const(n->inputs[1]))
            r = ox__fuse_const(n->inputs[1])->rank;
        int64_t pads[2 * OX_MAX_RANK];
        double value;
        if (r < 3 || !pad_parts(p, r, pads, &value))
            continue;
        /* Zeros match Conv's and (counted) AveragePool's implicit padding;
         * MaxPool ignores its padding, which only -inf matches. */
        if (conv && value != 0)
            continue;
        if (avg && (value != 0 || !ox_node_attr_i(n, "count_include_pad", 0) ||
                    ox_node_attr_i(n, "ceil_mode", 0)))
            continue;
        if (mx && (!(isinf(value) && value < 0) ||
                   (n->n_outputs > 1 && n->outputs[1] &&
                    (n->outputs[1]->n_uses || n->outputs[1]->is_output))))
            continue;
        bool ok = pads[0] == 0 && pads[1] == 0 && pads[r] == 0 && pads[r + 1] == 0;
        for (int k = 0; k < 2 * r; k++)
            ok &= pads[k] >= 0;
        if (!ok)
            continue;
        int ns = r - 2;
        int64_t cur[2 * OX_MAX_RANK] = {0};
        const int64_t *a;
        int na = ox_node_attr_ints(n, "pads", &a);
        if (na >= 0 && na != 2 * ns)
            continue;
        for (int k = 0; k < na; k++)
            cur[k] = a[k];
        for (int k = 0; k < ns; k++) {
            cur[k] += pads[2 + k];
            cur[ns + k] += pads[r + 2 + k];
        }
        ox_value *mid = n->inputs[0], *pv = ox__fuse_in(p, 1), *vv = ox__fuse_in(p, 2),
                 *av = ox__fuse_in(p, 3);
        ox_node_set_attr_ints(n, "pads", 2 * ns, cur);
        ox__pass_set_input(c, n, 0, p->inputs[0]);
        ox__pass_drop(c, p);
        ox__pass_drop_value(c, mid);
        ox__fuse_drop_dead(c, pv);
        ox__fuse_drop_dead(c, vv);
        ox__fuse_drop_dead(c, av);
        ox__pass_did(c);
        i--; /* look at node i again: indexes do not move */
    }
    return OX_OK;
}

/* ---- BatchNormalization before a Conv ----------------------------------- */

static bool conv_unpadded(const ox_node *cv)
{
    const char *ap = ox_node_attr_s(cv, "auto_pad", "NOTSET");
    if (!strcmp(ap, "VALID"))
        return true;
    if (strcmp(ap, "NOTSET"))
        return false;
    const int64_t *p;
    int np = ox_node_attr_ints(cv, "pads", &p);
    for (int k = 0; k < np; k++)
        if (p[k])
            return false;
    return true;
}

static ox_status pass_bn_conv(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    for (int i = 0; i < g->n_nodes && ox__pass_may(c); i++) {
        ox_node *cv = g->nodes[i];
        if (ox__pass_gone(cv))
            continue;
        if (!ox_node_is(cv, "Conv") || cv->n_inputs < 2 || cv->n_outputs != 1)
            continue;
        ox_node *bn = ox__fuse_prod(g, cv->inputs[0], "BatchNormalization");
        const ox_tensor *w = ox__fuse_const(cv->inputs[1]);
        ox_value *bv = ox__fuse_in(cv, 2);
        const ox_tensor *b = bv ? ox__fuse_const(bv) : NULL;
        int64_t grp = ox_node_attr_i(cv, "group", 1);
        if (!bn || bn->n_inputs != 5 || !ox__fuse_single(cv->inputs[0]) || !w || w->rank < 3 ||
            !ox__fuse_float(w->dtype) || (bv && (!b || b->dtype != w->dtype)) || grp < 1 ||
            w->dims[0] % grp || !conv_unpadded(cv))
            continue;
        /* Padding would pad the normalized input with zeros, which the
         * unnormalized input cannot reproduce: hence unpadded only. */
        int64_t M = w->dims[0], Cg = w->dims[1], C = Cg * grp, Mg = M / grp;
        int64_t per = w->numel / (M * Cg);
        if (b && b->numel != M)
            continue;
        double *s = malloc((size_t)(2 * C + M) * sizeof *s), *d = ox__fuse_f64(w);
        if (!s || !d) {
            free(s);
            free(d);
            return ox_errorf(err, OX_ENOMEM, "out of memory");
        }
        double *t = s + C, *nb = t + C;
        if (!ox__fuse_bn(bn, C, s, t)) {
            free(s);
            free(d);
            continue;
        }
        for (int64_t o = 0; o < M; o++) {
            double acc = b ? ox_tensor_get_f64(b, o) : 0.0;
            for (int64_t ci = 0; ci < Cg; ci++) {
                int64_t ch = (o / Mg) * Cg + ci;
                double *row = d + (o * Cg + ci) * per;
                for (int64_t k = 0; k < per; k++) {
                    acc += row[k] * t[ch];
                    row[k] *= s[ch];
                }
            }
            nb[o] = acc;
        }
        ox_value *wv = cv->inputs[1];
        ox_value *nw = ox__fuse_new_init(g, wv->name, w->dtype, w->rank, w->dims, d);
        ox_value *nbv = nw ? ox__fuse_new_init(g, bv ? bv->name : "bias", w->dtype, 1, &M, nb)
                           : NULL;
        free(s);
        free(d);
        if (!nbv)
            return ox_errorf(err, OX_ENOMEM, "out of memory");
        ox_value *params[4] = {bn->inputs[1], bn->inputs[2], bn->inputs[3], bn->inputs[4]};
        ox_value *mid = cv->inputs[0];
        ox__pass_set_input(c, cv, 0, bn->inputs[0]);
        ox__pass_set_input(c, cv, 1, nw);
        ox__pass_set_input(c, cv, 2, nbv);
        ox__fuse_drop_dead(c, wv);
        ox__fuse_drop_dead(c, bv);
        ox__pass_drop(c, bn);
        ox__pass_drop_value(c, mid);
        drop_params(c, params, 4);
        ox__pass_did(c);
        i--; /* look at node i again: indexes do not move */
    }
    return OX_OK;
}

/* ---- lone BatchNormalization -> Mul + Add -------------------------------- */

static ox_status pass_bn_mul_add(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    if (ox_model_opset(c->m, "") < 7) /* Mul/Add broadcast from opset 7 */
        return OX_OK;
    for (int i = 0; i < g->n_nodes && ox__pass_may(c); i++) {
        ox_node *bn = g->nodes[i];
        if (ox__pass_gone(bn))
            continue;
        if (!ox_node_is(bn, "BatchNormalization") || bn->n_inputs != 5 || !bn->inputs[0])
            continue;
        ox_value *x = bn->inputs[0];
        ox_dtype dt = ox__pass_elem(x);
        const ox_tensor *sc = ox__fuse_const(bn->inputs[1]);
        int r = x->type && x->type->kind == OX_TYPE_TENSOR && x->type->has_shape ? x->type->rank
                                                                                 : -1;
        if (r < 2 || !sc || !ox__fuse_float(dt) || sc->dtype != dt)
            continue;
        int64_t C = sc->numel;
        double *s = malloc((size_t)C * 2 * sizeof *s);
        if (!s)
            return ox_errorf(err, OX_ENOMEM, "out of memory");
        if (!ox__fuse_bn(bn, C, s, s + C)) {
            free(s);
            continue;
        }
        /* Per-channel constants of shape (C, 1, ..., 1) broadcast over axis 1. */
        int64_t dims[OX_MAX_RANK];
        dims[0] = C;
        for (int k = 1; k < r - 1; k++)
            dims[k] = 1;
        ox_value *sv = ox__fuse_new_init(g, "bn_scale", dt, r - 1, dims, s);
        ox_value *tv = sv ? ox__fuse_new_init(g, "bn_bias", dt, r - 1, dims, s + C) : NULL;
        free(s);
        ox_value *mid = tv ? ox_graph_new_value(g, "bn_scaled") : NULL;
        if (!mid)
            return ox_errorf(err, OX_ENOMEM, "out of memory");
        ox_value *y = bn->outputs[0];
        ox_value *params[4] = {bn->inputs[1], bn->inputs[2], bn->inputs[3], bn->inputs[4]};
        ox__pass_drop(c, bn);
        drop_params(c, params, 4);
        ox_value *mi[2] = {x, sv}, *ai[2] = {mid, tv};
        if (!ox__fuse_node(c, g, "Mul", "", 2, mi, mid) || !ox__fuse_node(c, g, "Add", "", 2, ai, y))
            return ox_errorf(err, OX_ENOMEM, "out of memory");
        ox__pass_did(c);
        i--; /* look at node i again: indexes do not move */
    }
    return OX_OK;
}

const ox_pass ox__passes_fuse_conv[] = {
    {"fuse_conv_bn", "fold BatchNormalization into the preceding Conv/ConvTranspose weights",
     OX_PASS_FUSION, OX_TARGET_ONNX, OX_LEVEL_BASIC, true, pass_conv_bn},
    {"fuse_conv_add", "fold a per-channel constant Add into the Conv/ConvTranspose bias",
     OX_PASS_FUSION, OX_TARGET_ONNX, OX_LEVEL_BASIC, true, pass_conv_add},
    {"fuse_conv_mul", "fold a per-channel constant Mul into the Conv/ConvTranspose weights",
     OX_PASS_FUSION, OX_TARGET_ONNX, OX_LEVEL_BASIC, true, pass_conv_mul},
    {"fuse_pad_conv", "fold a zero Pad into Conv/AveragePool pads (-inf Pad into MaxPool)",
     OX_PASS_FUSION, OX_TARGET_ONNX, OX_LEVEL_BASIC, true, pass_pad_conv},
    {"fuse_bn_conv", "fold BatchNormalization into the following unpadded Conv",
     OX_PASS_FUSION, OX_TARGET_ONNX, OX_LEVEL_EXTENDED, true, pass_bn_conv},
    {"fuse_bn_mul_add", "a lone BatchNormalization -> Mul + Add by per-channel constants",
     OX_PASS_FUSION, OX_TARGET_ONNX, OX_LEVEL_EXTENDED, true, pass_bn_mul_add},
    {0},
};
