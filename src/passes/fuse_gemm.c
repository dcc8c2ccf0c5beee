/* Matrix-product folds: MatMul + Add -> Gemm (2-D), MatMul/Gemm +
 * BatchNormalization into the weights, a 2-D Transpose into Gemm's
 * transA/transB (and a batch Transpose into com.microsoft FusedMatMul under
 * --target ort), and a constant Mul/Div on either side of a MatMul/Gemm
 * into its weights or alpha. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes/fuse_util.h"

/* Static dim k of v, or -1. */
static int64_t dim_of(const ox_value *v, int k)
{
    if (v && v->init)
        return k < v->init->rank ? v->init->dims[k] : -1;
    if (!v || !v->type || v->type->kind != OX_TYPE_TENSOR || !v->type->has_shape ||
        k >= v->type->rank)
        return -1;
    return v->type->dims[k].value;
}

/* C (of static shape) broadcasts unidirectionally to (M, N) without growing
 * it; M or N may be -1 (unknown), then that dim of C must be 1. */
static bool gemm_bias_ok(const ox_value *cv, int64_t M, int64_t N)
{
    int64_t d[OX_MAX_RANK];
    int r = ox__pass_static_shape(cv, d);
    if (r < 0 || r > 2)
        return false;
    int64_t want[2] = {M, N};
    for (int j = 0; j < r; j++) {
        int64_t w = want[2 - r + j];
        if (d[j] != 1 && (w < 0 || d[j] != w))
            return false;
    }
    return true;
}

static ox_status pass_matmul_add(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    if (ox_model_opset(c->m, "") < 7)
        return OX_OK;
    for (int i = 0; i < g->n_nodes && ox__pass_may(c); i++) {
        ox_node *add = g->nodes[i];
        if (ox__pass_gone(add))
            continue;
        if (!ox_node_is(add, "Add") || add->n_inputs != 2 || add->n_outputs != 1)
            continue;
        for (int k = 0; k < 2; k++) {
            ox_node *mm = ox__fuse_prod(g, add->inputs[k], "MatMul");
            if (!mm || mm->n_inputs != 2 || !ox__fuse_single(add->inputs[k]))
                continue;
            ox_value *a = mm->inputs[0], *b = mm->inputs[1], *cv = add->inputs[1 - k];
            ox_dtype dt = ox__pass_elem(a);
            if (!ox__fuse_float(dt) || ox__pass_elem(b) != dt || ox__pass_elem(cv) != dt ||
                ox__fuse_rank(a) != 2 || ox__fuse_rank(b) != 2 || !gemm_bias_ok(cv, dim_of(a, 0), dim_of(b, 1)))
                continue;
            ox_value *in[3] = {a, b, cv}, *y = add->outputs[0], *mid = add->inputs[k];
            ox__pass_drop(c, add);
            ox__pass_drop(c, mm);
            ox__pass_drop_value(c, mid);
            if (!ox__fuse_node(c, g, "Gemm", "", 3, in, y))
                return ox_errorf(err, OX_ENOMEM, "out of memory");
            ox__pass_did(c);
            i--; /* look at node i again: indexes do not move */
            break;
        }
    }
    return OX_OK;
}

/* ---- MatMul / Gemm + BatchNormalization ----------------------------------- */

static ox_status pass_matmul_bn(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    if (ox_model_opset(c->m, "") < 7)
        return OX_OK;
    for (int i = 0; i < g->n_nodes && ox__pass_may(c); i++) {
        ox_node *bn = g->nodes[i];
        if (ox__pass_gone(bn))
            continue;
        if (!ox_node_is(bn, "BatchNormalization") || bn->n_inputs != 5 || !bn->inputs[0] ||
            !ox__fuse_only_out0(bn) || ox_node_attr_i(bn, "training_mode", 0) ||
            ox_node_attr_i(bn, "spatial", 1) != 1)
            continue;
        ox_node *mm = ox__fuse_prod(g, bn->inputs[0], "MatMul");
        bool gemm = false;
        if (!mm) {
            mm = ox__fuse_prod(g, bn->inputs[0], "Gemm");
            gemm = mm != NULL;
        }
        if (!mm || mm->n_inputs < 2 || mm->n_outputs != 1 || !ox__fuse_single(bn->inputs[0]) ||
            ox__fuse_rank(mm->inputs[0]) != 2)
            continue;
        const ox_tensor *w = ox__fuse_const(mm->inputs[1]);
        bool tb = gemm && ox_node_attr_i(mm, "transB", 0);
        if (!w || w->rank != 2 || !ox__fuse_float(w->dtype) ||
            ox__pass_elem(mm->inputs[0]) != w->dtype)
            continue;
        int64_t N = tb ? w->dims[0] : w->dims[1];
        ox_value *cv = gemm ? ox__fuse_in(mm, 2) : NULL;
        const ox_tensor *ct = cv ? ox__fuse_const(cv) : NULL;
        if (cv && (!ct || ct->dtype != w->dtype || ct->rank > 2 ||
                   (ct->numel != 1 && ct->dims[ct->rank - 1] != N) ||
                   (ct->rank == 2 && ct->dims[0] != 1)))
            continue; /* only a constant row or scalar C folds */
        double *s = malloc((size_t)N * 3 * sizeof *s), *d = ox__fuse_f64(w);
        if (!s || !d) {
            free(s);
            free(d);
            return ox_errorf(err, OX_ENOMEM, "out of memory");
        }
        double *t = s + N, *nc = t + N;
        const ox_tensor *p0 = ox__fuse_const(bn->inputs[1]);
        bool ok = p0 && p0->dtype == w->dtype && ox__fuse_bn(bn, N, s, t);
        if (!ok) {
            free(s);
            free(d);
            continue;
        }
        double beta = gemm ? ox_node_attr_f(mm, "beta", 1.0f) : 0.0;
        for (int64_t q = 0; q < w->numel; q++)
            d[q] *= s[tb ? q / w->dims[1] : q % w->dims[1]];
        for (int64_t j = 0; j < N; j++)
            nc[j] = (ct ? beta * ox_tensor_get_f64(ct, ct->numel == 1 ? 0 : j) * s[j] : 0) + t[j];
        ox_value *wv = mm->inputs[1];
        ox_value *nw = ox__fuse_new_init(g, wv->name, w->dtype, 2, w->dims, d);
        ox_value *ncv = nw ? ox__fuse_new_init(g, "bias", w->dtype, 1, &N, nc) : NULL;
        free(s);
        free(d);
        if (!ncv)
            return ox_errorf(err, OX_ENOMEM, "out of memory");
        ox_value *params[4] = {bn->inputs[1], bn->inputs[2], bn->inputs[3], bn->inputs[4]};
        ox_value *y = bn->outputs[0], *mid = bn->inputs[0];
        if (gemm) {
            ox__pass_set_input(c, mm, 1, nw);
            ox__pass_set_input(c, mm, 2, ncv);
            ox_node_set_attr_f(mm, "beta", 1.0f);
            ox__fuse_retarget(c, mm, bn);
        } else {
            ox_value *in[3] = {mm->inputs[0], nw, ncv};
            ox__pass_drop(c, bn);
            ox__pass_drop(c, mm);
            ox__pass_drop_value(c, mid);
            if (!ox__fuse_node(c, g, "Gemm", "", 3, in, y))
                return ox_errorf(err, OX_ENOMEM, "out of memory");
        }
        ox__fuse_drop_dead(c, wv);
        ox__fuse_drop_dead(c, cv);
        for (int k = 0; k < 4; k++)
            ox__fuse_drop_dead(c, params[k]);
        ox__pass_did(c);
        i--; /* look at node i again: indexes do not move */
    }
    return OX_OK;
}

/* BatchNormalization (2-D, channels = K) feeding input A of a MatMul/Gemm
 * (transA = 0) with a constant 2-D B: alpha*(x*s + t) B + beta*C =
 * alpha*x (s B) + (alpha*t B + beta*C), a Gemm with B's rows scaled. */
static ox_status pass_bn_matmul(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    if (ox_model_opset(c->m, "") < 7)
        return OX_OK;
    for (int i = 0; i < g->n_nodes && ox__pass_may(c); i++) {
        ox_node *mm = g->nodes[i];
        if (ox__pass_gone(mm))
            continue;
        bool gemm = ox_node_is(mm, "Gemm");
        if (!(gemm || ox_node_is(mm, "MatMul")) || mm->n_inputs < 2 || mm->n_outputs != 1 ||
            (gemm && ox_node_attr_i(mm, "transA", 0)))
            continue;
        ox_node *bn = ox__fuse_prod(g, mm->inputs[0], "BatchNormalization");
        const ox_tensor *w = ox__fuse_const(mm->inputs[1]);
        if (!bn || bn->n_inputs != 5 || !bn->inputs[0] || !ox__fuse_single(mm->inputs[0]) ||
            ox__fuse_rank(bn->inputs[0]) != 2 || !w || w->rank != 2 || !ox__fuse_float(w->dtype) ||
            ox__pass_elem(bn->inputs[0]) != w->dtype)
            continue;
        bool tb = gemm && ox_node_attr_i(mm, "transB", 0);
        int64_t K = tb ? w->dims[1] : w->dims[0], N = tb ? w->dims[0] : w->dims[1];
        ox_value *cv = gemm ? ox__fuse_in(mm, 2) : NULL;
        const ox_tensor *ct = cv ? ox__fuse_const(cv) : NULL;
        if (cv && (!ct || ct->dtype != w->dtype || ct->rank > 2 ||
                   (ct->numel != 1 && ct->dims[ct->rank - 1] != N) ||
                   (ct->rank == 2 && ct->dims[0] != 1)))
            continue;
        double *s = malloc((size_t)(2 * K + N) * sizeof *s), *d = ox__fuse_f64(w);
        if (!s || !d) {
            free(s);
            free(d);
            return ox_errorf(err, OX_ENOMEM, "out of memory");
        }
        double *t = s + K, *nc = t + K;
        if (!ox__fuse_bn(bn, K, s, t)) {
            free(s);
            free(d);
            continue;
        }
        double alpha = gemm ? ox_node_attr_f(mm, "alpha", 1.0f) : 1.0;
        double beta = gemm ? ox_node_attr_f(mm, "beta", 1.0f) : 0.0;
        for (int64_t j = 0; j < N; j++)
            nc[j] = ct ? beta * ox_tensor_get_f64(ct, ct->numel == 1 ? 0 : j) : 0.0;
        for (int64_t q = 0; q < w->numel; q++) {
            int64_t k = tb ? q % K : q / N, j = tb ? q / K : q % N;
            nc[j] += alpha * t[k] * d[q];
            d[q] *= s[k];
        }
        ox_value *wv = mm->inputs[1];
        ox_value *nw = ox__fuse_new_init(g, wv->name, w->dtype, 2, w->dims, d);
        ox_value *ncv = nw ? ox__fuse_new_init(g, "bias", w->dtype, 1, &N, nc) : NULL;
        free(s);
        free(d);
        if (!ncv)
            return ox_errorf(err, OX_ENOMEM, "out of memory");
        ox_value *params[4] = {bn->inputs[1], bn->inputs[2], bn->inputs[3], bn->inputs[4]};
        ox_value *x = bn->inputs[0], *mid = mm->inputs[0], *y = mm->outputs[0];
        ox__pass_drop(c, bn);
        ox__pass_drop_value(c, mid);
        if (gemm) {
            ox__pass_set_input(c, mm, 0, x);
            ox__pass_set_input(c, mm, 1, nw);
            ox__pass_set_input(c, mm, 2, ncv);
            ox_node_set_attr_f(mm, "beta", 1.0f);
        } else {
            ox_value *in[3] = {x, nw, ncv};
            ox__pass_drop(c, mm);
            if (!ox__fuse_node(c, g, "Gemm", "", 3, in, y))
                return ox_errorf(err, OX_ENOMEM, "out of memory");
        }
        ox__fuse_drop_dead(c, wv);
        ox__fuse_drop_dead(c, cv);
        for (int k = 0; k < 4; k++)
            ox__fuse_drop_dead(c, params[k]);
        ox__pass_did(c);
        i--; /* look at node i again: indexes do not move */
    }
    return OX_OK;
}

/* ---- Transpose into Gemm / MatMul ------------------------------------------ */

/* A Transpose in g producing v that swaps the last two of r axes only
 * (r >= 2; for r == 2 the default perm too). */
static ox_node *swap_last2(const ox_graph *g, const ox_value *v, int r)
{
    ox_node *t = ox__fuse_prod(g, v, "Transpose");
    if (!t || !t->inputs[0] || t->n_outputs != 1 || r < 2)
        return NULL;
    const int64_t *p;
    int np = ox_node_attr_ints(t, "perm", &p);
    if (np < 0)
        return r == 2 ? t : NULL;
    if (np != r)
        return NULL;
    for (int k = 0; k < r - 2; k++)
        if (p[k] != k)
            return NULL;
    return p[r - 2] == r - 1 && p[r - 1] == r - 2 ? t : NULL;
}

/* Moves a swapping Transpose feeding input k (0 or 1) of n into n's
 * transA/transB attribute. */
static bool absorb_transpose(ox_pass_ctx *c, ox_node *n, int k, int r)
{
    ox_value *v = n->inputs[k];
    ox_node *t = swap_last2(n->graph, v, r);
    if (!t)
        return false;
    const char *attr = k == 0 ? "transA" : "transB";
    ox_node_set_attr_i(n, attr, !ox_node_attr_i(n, attr, 0));
    ox__pass_set_input(c, n, k, t->inputs[0]);
    if (!v->n_uses && !v->is_output) {
        ox__pass_drop(c, t);
        ox__pass_drop_value(c, v);
    }
    return true;
}

static ox_status pass_transpose_gemm(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    int64_t opset = ox_model_opset(c->m, "");
    for (int i = 0; i < g->n_nodes && ox__pass_may(c); i++) {
        ox_node *n = g->nodes[i];
        if (ox__pass_gone(n))
            continue;
        bool gemm = ox_node_is(n, "Gemm"), mm = ox_node_is(n, "MatMul");
        if (!(gemm || mm) || n->n_inputs < 2 || n->n_outputs != 1 || !n->outputs[0])
            continue;
        bool fired = false;
        for (int k = 0; k < 2 && !fired; k++) {
            ox_value *v = n->inputs[k];
            if (!v || !swap_last2(g, v, 2) || ox__fuse_rank(v->producer->inputs[0]) != 2)
                continue;
            if (mm) {
                /* A 2-D MatMul becomes a Gemm without C (optional from opset 11). */
                ox_value *o = n->inputs[1 - k];
                if (opset < 11 || ox__fuse_rank(o) != 2 || !ox__fuse_float(ox__pass_elem(v)))
                    break;
                ox_value *in[2] = {n->inputs[0], n->inputs[1]}, *y = n->outputs[0];
                ox__pass_drop(c, n);
                n = ox__fuse_node(c, g, "Gemm", "", 2, in, y);
                if (!n)
                    return ox_errorf(err, OX_ENOMEM, "out of memory");
            }
            fired = absorb_transpose(c, n, k, 2);
        }
        if (fired) {
            ox__pass_did(c);
            i--; /* look at node i again: indexes do not move */
        }
    }
    return OX_OK;
}

static void ms_opset(ox_model *m)
{
    if (ox_model_opset(m, "com.microsoft") < 1)
        ox_model_set_opset(m, "com.microsoft", 1);
}

static ox_status pass_transpose_matmul_ort(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    for (int i = 0; i < g->n_nodes && ox__pass_may(c); i++) {
        ox_node *n = g->nodes[i];
        if (ox__pass_gone(n))
            continue;
        bool mm = ox_node_is(n, "MatMul");
        bool fm = n->domain && !strcmp(n->domain, "com.microsoft") &&
                  !strcmp(n->op_type, "FusedMatMul");
        if (!(mm || fm) || n->n_inputs != 2 || n->n_outputs != 1 || !n->outputs[0])
            continue;
        int ra = ox__fuse_rank(n->inputs[0]), rb = ox__fuse_rank(n->inputs[1]);
        if (ra < 2 || rb < 2 || !ox__fuse_float(ox__pass_elem(n->inputs[0])))
            continue;
        int k = swap_last2(g, n->inputs[0], ra) ? 0 : swap_last2(g, n->inputs[1], rb) ? 1 : -1;
        if (k < 0)
            continue;
        if (mm) {
            ox_value *in[2] = {n->inputs[0], n->inputs[1]}, *y = n->outputs[0];
            ox__pass_drop(c, n);
            n = ox__fuse_node(c, g, "FusedMatMul", "com.microsoft", 2, in, y);
            if (!n)
                return ox_errorf(err, OX_ENOMEM, "out of memory");
            ox_node_set_attr_f(n, "alpha", 1.0f);
            ms_opset(c->m);
        }
        absorb_transpose(c, n, k, k ? rb : ra);
        ox__pass_did(c);
        i--; /* look at node i again: indexes do not move */
    }
    return OX_OK;
}

/* ---- constant scale into MatMul / Gemm -------------------------------------- */

/* Scales the constant operand k of MatMul n by f, or its columns (last
 * axis, N values) by col when given. */
static bool scale_operand(ox_pass_ctx *c, ox_node *n, int k, double f, const double *col)
{
    ox_value *wv = n->inputs[k];
    const ox_tensor *w = ox__fuse_const(wv);
    double *d = ox__fuse_f64(w);
    if (!d)
        return false;
    int64_t last = w->rank ? w->dims[w->rank - 1] : 1;
    for (int64_t q = 0; q < w->numel; q++)
        d[q] *= col ? col[q % last] : f;
    ox_value *nw = ox__fuse_new_init(n->graph, wv->name, w->dtype, w->rank, w->dims, d);
    free(d);
    if (!nw)
        return false;
    ox__pass_set_input(c, n, k, nw);
    ox__fuse_drop_dead(c, wv);
    return true;
}

/* The constant float operand of MatMul n (index), or -1. */
static int const_operand(const ox_node *n)
{
    for (int k = 1; k >= 0; k--) {
        const ox_tensor *t = ox__fuse_const(n->inputs[k]);
        if (t && ox__fuse_float(t->dtype) && t->rank >= 1)
            return k;
    }
    return -1;
}

/* A Mul or Div node scaling one value by a constant scalar: returns the
 * scaled operand's index and sets the factor (1/k for a Div). */
static int scaled(const ox_node *n, double *f)
{
    bool mul = ox_node_is(n, "Mul"), div = ox_node_is(n, "Div");
    if (!(mul || div) || n->n_inputs != 2 || n->n_outputs != 1)
        return -1;
    for (int k = 0; k < 2; k++) {
        if (div && k == 1)
            break;
        double v;
        const ox_tensor *t = ox__fuse_const(n->inputs[1 - k]);
        if (!t || !ox__fuse_float(t->dtype) || !ox__fuse_scalar(n->inputs[1 - k], &v))
            continue;
        if (div && v == 0)
            return -1;
        int rv = ox__fuse_rank(n->inputs[k]);
        if (rv < 0 || t->rank > rv) /* the constant must not add axes */
            continue;
        *f = div ? 1.0 / v : v;
        return k;
    }
    return -1;
}

/* MatMul(A, W) -> Mul/Div by a constant that varies along the last axis
 * only (a per-column scale, e.g. what fuse_bn_mul_add leaves): scales W's
 * columns when W is a 2-D constant. */
static bool per_column(ox_pass_ctx *c, ox_node *n, ox_node *s)
{
    ox_value *y = n->outputs[0];
    bool div = ox_node_is(s, "Div");
    if (!(div || ox_node_is(s, "Mul")) || s->n_inputs != 2 || s->n_outputs != 1 ||
        !ox_node_is_default_domain(s) || (div && s->inputs[0] != y))
        return false;
    int yi = s->inputs[0] == y ? 0 : 1;
    const ox_tensor *t = ox__fuse_const(s->inputs[1 - yi]), *w = ox__fuse_const(n->inputs[1]);
    int r = ox__fuse_rank(y);
    if (!t || !w || w->rank != 2 || !ox__fuse_float(w->dtype) || t->dtype != w->dtype || r < 1)
        return false;
    int64_t N = w->dims[1];
    double *col = malloc((size_t)N * sizeof *col);
    bool ok = col && ox__fuse_per_channel(t, r, r - 1, N, col);
    for (int64_t j = 0; ok && div && j < N; j++) {
        ok = col[j] != 0;
        col[j] = ok ? 1.0 / col[j] : 0;
    }
    ok = ok && scale_operand(c, n, 1, 1.0, col);
    free(col);
    if (ok) {
        ox_value *cval = s->inputs[1 - yi];
        ox__fuse_retarget(c, n, s);
        ox__fuse_drop_dead(c, cval);
    }
    return ok;
}

/* v = Mul(u, Add(Erf(..) | Tanh(..), c)) (either order): the tail of a
 * decomposed GELU left unfused (fuse_gelu needs opset 20 under --target
 * onnx). Its last * 0.5 stays out of the next MatMul's weights: ONNX
 * Runtime fuses the whole GELU (+ bias) only while it is there, which
 * saves far more than the one Mul. */
static bool gelu_tail(const ox_graph *g, const ox_value *v)
{
    ox_node *m = ox__fuse_prod(g, v, "Mul");
    for (int k = 0; m && m->n_inputs == 2 && k < 2; k++) {
        ox_node *a = ox__fuse_prod(g, m->inputs[k], "Add");
        for (int j = 0; a && a->n_inputs == 2 && j < 2; j++) {
            ox_node *e = ox__fuse_prod(g, a->inputs[j], NULL);
            if (e && (ox_node_is(e, "Erf") || ox_node_is(e, "Tanh")))
                return true;
        }
    }
    return false;
}

static ox_status pass_matmul_scale(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    (void)err;
    for (int i = 0; i < g->n_nodes && ox__pass_may(c); i++) {
        ox_node *n = g->nodes[i];
        if (ox__pass_gone(n))
            continue;
        bool gemm = ox_node_is(n, "Gemm"), mm = ox_node_is(n, "MatMul");
        if (!(gemm || mm) || n->n_inputs < 2 || n->n_outputs != 1 || !n->outputs[0])
            continue;
        double f;
        bool done = false;
        /* Output side: MatMul/Gemm -> Mul/Div by a constant scalar. */
        ox_value *y = n->outputs[0];
        if (ox__fuse_single(y)) {
            ox_node *s = y->uses[0].node;
            int k = scaled(s, &f);
            if (k >= 0 && s->inputs[k] == y && ox_node_is_default_domain(s) &&
                ox__pass_elem(y) == ox__pass_elem(s->outputs[0])) {
                ox_value *cval = s->inputs[1 - k];
                if (gemm) {
                    ox_node_set_attr_f(n, "alpha", (float)(ox_node_attr_f(n, "alpha", 1.0f) * f));
                    if (ox__fuse_in(n, 2))
                        ox_node_set_attr_f(n, "beta", (float)(ox_node_attr_f(n, "beta", 1.0f) * f));
                    done = true;
                } else {
                    int w = const_operand(n);
                    done = w >= 0 && scale_operand(c, n, w, f, NULL);
                }
                if (done) {
                    ox__fuse_retarget(c, n, s);
                    ox__fuse_drop_dead(c, cval);
                }
            } else if (mm && k < 0) {
                done = per_column(c, n, s);
            }
        }
        /* Input side: Mul/Div(x, k) -> MatMul/Gemm. */
        for (int q = 0; q < 2 && !done; q++) {
            ox_value *v = n->inputs[q];
            ox_node *s = ox__fuse_prod(g, v, NULL);
            int k = s && ox__fuse_single(v) ? scaled(s, &f) : -1;
            if (k < 0 || gelu_tail(g, s->inputs[k]))
                continue;
            if (gemm) {
                ox_node_set_attr_f(n, "alpha", (float)(ox_node_attr_f(n, "alpha", 1.0f) * f));
            } else {
                int w = const_operand(n);
                if (w < 0 || w == q || !scale_operand(c, n, w, f, NULL))
                    continue;
            }
            ox_value *cval = s->inputs[1 - k];
            ox__pass_set_input(c, n, q, s->inputs[k]);
            ox__pass_drop(c, s);
            ox__pass_drop_value(c, v);
            ox__fuse_drop_dead(c, cval);
            done = true;
        }
        if (done) {
            ox__pass_did(c);
            i--; /* look at node i again: indexes do not move */
        }
    }
    return OX_OK;
}

/* ---- a row-wise Gemm between two token-order Transposes ---------------- */

/* PyTorch's nn.MultiheadAttention runs its output projection
 * sequence-first: Transpose(x [B, S, D], [1, 0, 2]) -> Reshape([S*B, D])
 * -> Gemm -> Reshape([S, B, N]) -> Transpose([1, 0, 2]), the reshape
 * shapes read from Shape at run time. A Gemm maps each row alone, so the
 * order of the rows does not matter: MatMul(x, W) [+ Add(bias)] gives the
 * same [B, S, N] without the two copies and the shape chains. Once
 * fuse_attention made x the Attention output ([B, S, D]) this is the
 * layout work left around the block. */

static bool is_swap01(const ox_node *n)
{
    const int64_t *perm;
    return n && n->n_inputs == 1 && ox_node_attr_ints(n, "perm", &perm) == 3 && perm[0] == 1 &&
           perm[1] == 0 && perm[2] == 2;
}

/* Dim i of a and dim j of b are the same: equal known values or the same
 * symbol. */
static bool dims_same(const ox_value *a, int i, const ox_value *b, int j)
{
    const ox_type *x = a->type, *y = b->type;
    if (!x || !y || x->kind != OX_TYPE_TENSOR || y->kind != OX_TYPE_TENSOR || !x->has_shape ||
        !y->has_shape || i >= x->rank || j >= y->rank)
        return false;
    const ox_dim *p = &x->dims[i], *q = &y->dims[j];
    if (p->value > 0 || q->value > 0)
        return p->value == q->value;
    return p->param && q->param && !strcmp(p->param, q->param);
}

/* v is no graph output and its readers are r (once) and Shape nodes of g:
 * the runtime reshape shapes read the transposed tensor's dims. */
static bool read_by_and_shapes(const ox_graph *g, const ox_value *v, const ox_node *r)
{
    int by_r = 0;
    if (v->is_output)
        return false;
    for (int i = 0; i < v->n_uses; i++) {
        const ox_node *u = v->uses[i].node;
        if (v->uses[i].input < 0 || u->graph != g)
            return false;
        if (u == r)
            by_r++;
        else if (!ox_node_is(u, "Shape"))
            return false;
    }
    return by_r == 1;
}

static int rank_of(const ox_value *v)
{
    const ox_type *t = v->type;
    return t && t->kind == OX_TYPE_TENSOR && t->has_shape ? t->rank : -1;
}

static ox_status pass_token_transpose_gemm(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    for (int i = 0; i < g->n_nodes && ox__pass_may(c); i++) {
        ox_node *t2 = g->nodes[i];
        if (ox__pass_gone(t2) || !ox_node_is(t2, "Transpose") || !ox_node_is_default_domain(t2) ||
            !is_swap01(t2) || t2->n_outputs != 1)
            continue;
        ox_node *r2 = ox__fuse_prod(g, t2->inputs[0], "Reshape");
        ox_node *gm = r2 && ox__fuse_single(t2->inputs[0]) ? ox__fuse_prod(g, r2->inputs[0], "Gemm")
                                                           : NULL;
        ox_node *r1 = gm && gm->n_inputs >= 2 && ox__fuse_single(r2->inputs[0])
                          ? ox__fuse_prod(g, gm->inputs[0], "Reshape")
                          : NULL;
        ox_node *t1 = r1 && ox__fuse_single(gm->inputs[0]) ? ox__fuse_prod(g, r1->inputs[0], "Transpose")
                                                           : NULL;
        if (!t1 || !is_swap01(t1) || !t1->inputs[0] || !read_by_and_shapes(g, r1->inputs[0], r1))
            continue;
        /* Shape nodes reading the transposed x keep it (they mostly feed
         * the second Reshape's shape and go with it, at dce). */
        bool keep_t1 = !ox__fuse_single(r1->inputs[0]);
        ox_value *x = t1->inputs[0], *xt = t1->outputs[0], *y = t2->outputs[0];
        ox_value *mid = r2->outputs[0];
        const ox_tensor *w = ox__fuse_const(gm->inputs[1]);
        ox_value *cv = ox__fuse_in(gm, 2);
        const ox_tensor *ct = cv ? ox__fuse_const(cv) : NULL;
        int64_t d = dim_of(x, 2);
        bool tb = ox_node_attr_i(gm, "transB", 0) != 0;
        if (!w || w->rank != 2 || !ox__fuse_float(w->dtype) || w->dtype != ox__pass_elem(x) ||
            ox_node_attr_i(gm, "transA", 0) || ox_node_attr_f(gm, "alpha", 1.0f) != 1.0f ||
            (cv && (!ct || ct->dtype != w->dtype || ox_node_attr_f(gm, "beta", 1.0f) != 1.0f)) ||
            rank_of(x) != 3 || d <= 0 || w->dims[tb ? 1 : 0] != d)
            continue;
        int64_t n = w->dims[tb ? 0 : 1];
        /* The first Reshape flattens the token dims ([S*B, D]); the second
         * restores them ([S, B, N]) in the same order. */
        if (rank_of(r1->outputs[0]) != 2 || dim_of(r1->outputs[0], 1) != d ||
            rank_of(mid) != 3 || dim_of(mid, 2) != n || !dims_same(mid, 0, xt, 0) ||
            !dims_same(mid, 1, xt, 1))
            continue;
        /* A bias of one row: [N], [1, N] or a scalar. */
        if (ct && !(ct->numel == 1 || (ct->numel == n && ct->dims[ct->rank - 1] == n)))
            continue;
        double *wv = ox__fuse_f64(w), *wt = NULL;
        if (!wv)
            return ox_errorf(err, OX_ENOMEM, "out of memory");
        ox_value *wnew = gm->inputs[1];
        if (tb) {
            wt = malloc((size_t)(d * n) * sizeof *wt);
            if (!wt) {
                free(wv);
                return ox_errorf(err, OX_ENOMEM, "out of memory");
            }
            for (int64_t r = 0; r < d; r++)
                for (int64_t k = 0; k < n; k++)
                    wt[r * n + k] = wv[k * d + r];
            int64_t wd[2] = {d, n};
            wnew = ox__fuse_new_init(g, "proj_weight", w->dtype, 2, wd, wt);
        }
        ox_value *bnew = NULL;
        if (ct && wnew) {
            double *bv = malloc((size_t)n * sizeof *bv);
            if (bv)
                for (int64_t k = 0; k < n; k++)
                    bv[k] = ox_tensor_get_f64(ct, ct->numel == 1 ? 0 : k);
            bnew = bv ? ox__fuse_new_init(g, "proj_bias", w->dtype, 1, &n, bv) : NULL;
            free(bv);
        }
        free(wv);
        free(wt);
        ox_value *mm_out = ct ? ox_graph_new_value(g, "proj") : y;
        if (!wnew || (ct && (!bnew || !mm_out)))
            return ox_errorf(err, OX_ENOMEM, "out of memory");
        char site[256];
        ox__fuse_site_name(gm, "MatMul", site, sizeof site);
        ox_node *nodes[5] = {r1, gm, r2, t2, t1};
        ox__fuse_drop_all(c, nodes, keep_t1 ? 4 : 5);
        ox_value *mi[2] = {x, wnew}, *ai[2] = {mm_out, bnew};
        if (!ox__fuse_node_named(c, g, site, "MatMul", "", 2, mi, mm_out) ||
            (ct && !ox__fuse_node(c, g, "Add", "", 2, ai, y)))
            return ox_errorf(err, OX_ENOMEM, "out of memory");
        ox_infer_forget_value(y);
        ox__pass_did(c);
    }
    return OX_OK;
}

const ox_pass ox__passes_fuse_gemm[] = {
    {"fuse_matmul_add", "2-D MatMul + Add of a broadcastable bias -> Gemm", OX_PASS_FUSION,
     OX_TARGET_ONNX, OX_LEVEL_BASIC, true, pass_matmul_add},
    {"fuse_matmul_bn", "fold BatchNormalization into the preceding 2-D MatMul/Gemm (-> Gemm)",
     OX_PASS_FUSION, OX_TARGET_ONNX, OX_LEVEL_EXTENDED, true, pass_matmul_bn},
    {"fuse_bn_matmul",
     "fold a 2-D BatchNormalization into the following MatMul/Gemm weights and bias (-> Gemm)",
     OX_PASS_FUSION, OX_TARGET_ONNX, OX_LEVEL_EXTENDED, true, pass_bn_matmul},
    {"fuse_transpose_gemm", "fold a 2-D Transpose into Gemm transA/transB (2-D MatMul -> Gemm)",
     OX_PASS_FUSION, OX_TARGET_ONNX, OX_LEVEL_EXTENDED, true, pass_transpose_gemm},
    {"fuse_matmul_scale", "fold a constant Mul/Div (scalar, or per column after a MatMul) into the weights or alpha",
     OX_PASS_FUSION, OX_TARGET_ONNX, OX_LEVEL_EXTENDED, true, pass_matmul_scale},
    {"fuse_token_transpose_gemm",
     "Transpose(x, [1,0,2]) + flatten Reshape + Gemm + Reshape + Transpose([1,0,2]) -> "
     "MatMul(x, W) [+ bias] (a row-wise product ignores the token order)",
     OX_PASS_FUSION, OX_TARGET_ONNX, OX_LEVEL_EXTENDED, true, pass_token_transpose_gemm},
    {"fuse_transpose_matmul", "fold a last-two-axes Transpose into com.microsoft FusedMatMul",
     OX_PASS_FUSION, OX_TARGET_ORT, OX_LEVEL_ALL, true, pass_transpose_matmul_ort},
    {0},
};
