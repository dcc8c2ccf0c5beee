/* ai.onnx.preview.training optimizers: Adagrad, Momentum and Adam, one
 * update step over n tensors, computed in double per the operator spec. */
#include <math.h>
#include <string.h>

#include "exec/k_misc/misc.h"

double ox_misc_getf(const ox_tensor *t, int64_t i)
{
    if (t->dtype == OX_DT_FLOAT) {
        float v;
        memcpy(&v, (const char *)ox_tensor_data(t) + 4 * i, 4);
        return v;
    }
    if (t->dtype == OX_DT_DOUBLE) {
        double v;
        memcpy(&v, (const char *)ox_tensor_data(t) + 8 * i, 8);
        return v;
    }
    return ox_tensor_get_f64(t, i);
}

static ox_status scalars(ox_kernel_ctx *c, double *r, int64_t *t)
{
    const ox_tensor *R = ox_kernel_in(c, 0), *T = ox_kernel_in(c, 1);
    if (!R || !T || R->numel != 1 || T->numel != 1 || R->dtype == OX_DT_STRING ||
        T->dtype == OX_DT_STRING)
        return ox_errorf(c->err, OX_EINVAL, "R and T must be scalars");
    *r = ox_misc_getf(R, 0);
    *t = ox_tensor_get_i64(T, 0);
    return OX_OK;
}

/* Checks that inputs 2.. form `groups` groups of n same-shaped float tensors. */
static ox_status groups_ok(ox_kernel_ctx *c, int groups, int *n)
{
    int m = c->n_in - 2;
    if (m <= 0 || m % groups != 0)
        return ox_errorf(c->err, OX_EINVAL, "expected %d groups of tensors", groups);
    *n = m / groups;
    if (c->n_out < *n * (groups - 1))
        return ox_errorf(c->err, OX_EINVAL, "too few outputs");
    for (int i = 0; i < m; i++) {
        const ox_tensor *a = ox_kernel_in(c, 2 + i), *x = ox_kernel_in(c, 2 + i % *n);
        if (!a || !ox_dtype_is_float(a->dtype) || a->numel != x->numel)
            return ox_errorf(c->err, OX_EINVAL, "input %d: bad tensor", 2 + i);
    }
    return OX_OK;
}

ox_status ox_misc_adagrad(ox_kernel_ctx *c)
{
    double R;
    int64_t T;
    int n;
    ox_status st = scalars(c, &R, &T);
    if (st || (st = groups_ok(c, 3, &n)))
        return st;
    double decay = ox_node_attr_f(c->node, "decay_factor", 0.0f);
    double eps = ox_node_attr_f(c->node, "epsilon", 1e-6f);
    double norm = ox_node_attr_f(c->node, "norm_coefficient", 0.0f);
    double r = R / (1.0 + (double)T * decay);
    for (int k = 0; k < n; k++) {
        const ox_tensor *X = ox_kernel_in(c, 2 + k), *G = ox_kernel_in(c, 2 + n + k),
                        *H = ox_kernel_in(c, 2 + 2 * n + k);
        ox_tensor *Xn = ox_kernel_output(c, k, X->dtype, X->rank, X->dims);
        ox_tensor *Hn = ox_kernel_output(c, n + k, H->dtype, H->rank, H->dims);
        if (!Xn || !Hn)
            return c->err->status;
        for (int64_t i = 0; i < X->numel; i++) {
            double x = ox_misc_getf(X, i), g = norm * x + ox_misc_getf(G, i);
            double h = ox_misc_getf(H, i) + g * g;
            ox_tensor_set_f64(Hn, i, h);
            ox_tensor_set_f64(Xn, i, x - r * g / (sqrt(h) + eps));
        }
    }
    return OX_OK;
}

ox_status ox_misc_momentum(ox_kernel_ctx *c)
{
    double R;
    int64_t T;
    int n;
    ox_status st = scalars(c, &R, &T);
    if (st || (st = groups_ok(c, 3, &n)))
        return st;
    double alpha = ox_node_attr_f(c->node, "alpha", 0.0f);
    double beta = ox_node_attr_f(c->node, "beta", 0.0f);
    double norm = ox_node_attr_f(c->node, "norm_coefficient", 0.0f);
    bool nesterov = strcmp(ox_node_attr_s(c->node, "mode", "standard"), "nesterov") == 0;
    double beta_adj = T > 0 ? beta : 1.0;
    for (int k = 0; k < n; k++) {
        const ox_tensor *X = ox_kernel_in(c, 2 + k), *G = ox_kernel_in(c, 2 + n + k),
                        *V = ox_kernel_in(c, 2 + 2 * n + k);
        ox_tensor *Xn = ox_kernel_output(c, k, X->dtype, X->rank, X->dims);
        ox_tensor *Vn = ox_kernel_output(c, n + k, V->dtype, V->rank, V->dims);
        if (!Xn || !Vn)
            return c->err->status;
        for (int64_t i = 0; i < X->numel; i++) {
            double x = ox_misc_getf(X, i), g = norm * x + ox_misc_getf(G, i);
            double v = alpha * ox_misc_getf(V, i) + beta_adj * g;
            ox_tensor_set_f64(Vn, i, v);
            ox_tensor_set_f64(Xn, i, nesterov ? x - R * (g + alpha * v) : x - R * v);
        }
    }
    return OX_OK;
}

ox_status ox_misc_adam(ox_kernel_ctx *c)
{
    double R;
    int64_t T;
    int n;
    ox_status st = scalars(c, &R, &T);
    if (st || (st = groups_ok(c, 4, &n)))
        return st;
    double alpha = ox_node_attr_f(c->node, "alpha", 0.9f);
    double beta = ox_node_attr_f(c->node, "beta", 0.999f);
    double eps = ox_node_attr_f(c->node, "epsilon", 1e-6f);
    double norm = ox_node_attr_f(c->node, "norm_coefficient", 0.0f);
    double post = ox_node_attr_f(c->node, "norm_coefficient_post", 0.0f);
    double r_adj = T > 0 ? R * sqrt(1.0 - pow(beta, (double)T)) / (1.0 - pow(alpha, (double)T))
                         : R;
    for (int k = 0; k < n; k++) {
        const ox_tensor *X = ox_kernel_in(c, 2 + k), *G = ox_kernel_in(c, 2 + n + k),
                        *V = ox_kernel_in(c, 2 + 2 * n + k), *H = ox_kernel_in(c, 2 + 3 * n + k);
        ox_tensor *Xn = ox_kernel_output(c, k, X->dtype, X->rank, X->dims);
        ox_tensor *Vn = ox_kernel_output(c, n + k, V->dtype, V->rank, V->dims);
        ox_tensor *Hn = ox_kernel_output(c, 2 * n + k, H->dtype, H->rank, H->dims);
        if (!Xn || !Vn || !Hn)
            return c->err->status;
        for (int64_t i = 0; i < X->numel; i++) {
            double x = ox_misc_getf(X, i), g = norm * x + ox_misc_getf(G, i);
            double v = alpha * ox_misc_getf(V, i) + (1 - alpha) * g;
            double h = beta * ox_misc_getf(H, i) + (1 - beta) * g * g;
            double xn = x - r_adj * v / (sqrt(h) + eps);
            ox_tensor_set_f64(Vn, i, v);
            ox_tensor_set_f64(Hn, i, h);
            ox_tensor_set_f64(Xn, i, (1 - post) * xn);
        }
    }
    return OX_OK;
}
