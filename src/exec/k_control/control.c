/* Control-flow kernels: If, Loop and Scan (opset 8 with its batch axis and
 * sequence_lens, and 9+ with per-input axes and directions). Bodies run
 * through ox_exec_subgraph, which resolves outer-scope values. */
#include <stdlib.h>
#include <string.h>

#include "exec/k_tensor/tk_util.h"
#include "exec/rv_util.h"

static const ox_graph *graph_attr(const ox_node *n, const char *name)
{
    const ox_attr *a = ox_node_attr(n, name);
    return (a && a->type == OX_ATTR_GRAPH) ? a->g : NULL;
}

static void free_vals(ox_rval **v, int n)
{
    for (int i = 0; v && i < n; i++) {
        ox_rval_free(v[i]);
        v[i] = NULL;
    }
}

/* ---- If --------------------------------------------------------------- */

static ox_status k_if(ox_kernel_ctx *c)
{
    const ox_tensor *cond = ox_kernel_in(c, 0);
    int64_t cv;
    if (!cond || !ox_rv_scalar_i64(cond, &cv))
        return ox_errorf(c->err, OX_EINVAL, "cond must be a 1-element tensor");
    const ox_graph *g = graph_attr(c->node, cv ? "then_branch" : "else_branch");
    if (!g)
        return ox_errorf(c->err, OX_EMODEL, "missing %s", cv ? "then_branch" : "else_branch");
    if (g->n_outputs < c->n_out)
        return ox_errorf(c->err, OX_EMODEL, "branch has %d outputs, node has %d",
                         g->n_outputs, c->n_out);
    return ox_exec_subgraph(c, g, 0, NULL, c->n_out, c->out);
}

/* ---- Loop ------------------------------------------------------------- */

/* Collected per-iteration values of one scan output. */
typedef struct collect {
    ox_tensor **items;
    int n, cap;
} collect;

static bool collect_push(collect *s, ox_tensor *t)
{
    if (s->n == s->cap) {
        int cap = s->cap ? s->cap * 2 : 16;
        ox_tensor **ni = realloc(s->items, (size_t)cap * sizeof *ni);
        if (!ni)
            return false;
        s->items = ni;
        s->cap = cap;
    }
    s->items[s->n++] = t;
    return true;
}

/* Bytes of the collected items: stacking them allocates as much again. */
static int64_t collect_bytes(const collect *s)
{
    int64_t b = 0;
    for (int i = 0; i < s->n; i++)
        b += (int64_t)s->items[i]->nbytes;
    return b;
}

static void collect_free(collect *s)
{
    for (int i = 0; i < s->n; i++)
        ox_tensor_free(s->items[i]);
    free(s->items);
    s->items = NULL;
    s->n = s->cap = 0;
}

/* Stacks the collected items along `axis` (reversed when `reverse`); with no
 * items the result is an empty tensor typed from the body output. */
static ox_status stack_output(ox_kernel_ctx *c, int out_i, collect *s, const ox_value *bv,
                              int axis, bool reverse)
{
    if (s->n == 0) {
        ox_dtype dt = OX_DT_FLOAT;
        int rank = 1;
        int64_t dims[OX_MAX_RANK] = {0};
        if (bv && bv->type && bv->type->kind == OX_TYPE_TENSOR) {
            if (bv->type->elem != OX_DT_UNDEFINED)
                dt = bv->type->elem;
            if (bv->type->has_shape && bv->type->rank < OX_MAX_RANK) {
                rank = bv->type->rank + 1;
                for (int d = 0; d < bv->type->rank; d++)
                    dims[d + 1] = bv->type->dims[d].value > 0 ? bv->type->dims[d].value : 0;
            }
        }
        return ox_kernel_output(c, out_i, dt, rank, dims) ? OX_OK : c->err->status;
    }
    ox_status st = ox_kernel_poll(c, collect_bytes(s));
    if (st)
        return st;
    if (reverse)
        for (int i = 0, j = s->n - 1; i < j; i++, j--) {
            ox_tensor *t = s->items[i];
            s->items[i] = s->items[j];
            s->items[j] = t;
        }
    int rank = s->items[0]->rank + 1;
    if (axis < 0)
        axis += rank;
    if (axis < 0 || axis >= rank)
        return ox_errorf(c->err, OX_EINVAL, "scan output axis out of range");
    ox_tensor *t = ox_rv_concat((const ox_tensor *const *)s->items, s->n, axis, true, c->err);
    if (!t)
        return c->err->status ? c->err->status : OX_ENOMEM;
    ox_kernel_set_output(c, out_i, t);
    return OX_OK;
}

static ox_status k_loop(ox_kernel_ctx *c)
{
    const ox_graph *body = graph_attr(c->node, "body");
    if (!body)
        return ox_errorf(c->err, OX_EMODEL, "Loop without body");
    int n_carried = c->n_in - 2;
    if (n_carried < 0)
        return ox_errorf(c->err, OX_EMODEL, "Loop needs M and cond inputs (may be empty)");
    if (body->n_inputs != n_carried + 2 || body->n_outputs < n_carried + 1)
        return ox_errorf(c->err, OX_EMODEL,
                         "Loop body signature (%d in, %d out) does not match %d carried values",
                         body->n_inputs, body->n_outputs, n_carried);
    int n_scan = body->n_outputs - 1 - n_carried;
    if (c->n_out > n_carried + n_scan)
        return ox_errorf(c->err, OX_EMODEL, "Loop has more outputs than its body");

    int64_t max_trip = INT64_MAX;
    const ox_tensor *mt = ox_kernel_in(c, 0);
    if (mt && !ox_rv_scalar_i64(mt, &max_trip))
        return ox_errorf(c->err, OX_EINVAL, "M must be a 1-element tensor");
    int64_t cond = 1;
    const ox_tensor *ct = ox_kernel_in(c, 1);
    if (ct && !ox_rv_scalar_i64(ct, &cond))
        return ox_errorf(c->err, OX_EINVAL, "cond must be a 1-element tensor");

    ox_status st = OX_OK;
    int nb_in = n_carried + 2, nb_out = body->n_outputs;
    ox_rval **carried = calloc((size_t)n_carried + 1, sizeof *carried);
    ox_rval **bin = calloc((size_t)nb_in + 1, sizeof *bin);
    ox_rval **bout = calloc((size_t)nb_out + 1, sizeof *bout);
    collect *scans = calloc((size_t)n_scan + 1, sizeof *scans);
    int64_t iter_dims[1] = {0};
    ox_tensor *it_t = ox_tensor_new(OX_DT_INT64, 0, iter_dims);
    ox_tensor *cond_t = ox_tensor_new(OX_DT_BOOL, 0, iter_dims);
    ox_rval *it_v = it_t ? ox_rval_tensor(it_t) : NULL;
    ox_rval *cond_v = cond_t ? ox_rval_tensor(cond_t) : NULL;
    if (!carried || !bin || !bout || !scans || !it_v || !cond_v) {
        if (!it_v)
            ox_tensor_free(it_t);
        if (!cond_v)
            ox_tensor_free(cond_t);
        st = ox_errorf(c->err, OX_ENOMEM, "out of memory");
        goto out;
    }
    for (int i = 0; i < n_carried; i++) {
        if (!c->in[i + 2]) {
            st = ox_errorf(c->err, OX_EINVAL, "loop-carried input %d is missing", i);
            goto out;
        }
        carried[i] = ox_rval_clone(c->in[i + 2]);
        if (!carried[i]) {
            st = ox_errorf(c->err, OX_ENOMEM, "out of memory");
            goto out;
        }
    }
    for (int64_t it = 0; it < max_trip && cond; it++) {
        int64_t one = it;
        memcpy(ox_tensor_mutable_data(it_v->t), &one, 8);
        *(uint8_t *)ox_tensor_mutable_data(cond_v->t) = 1;
        bin[0] = it_v;
        bin[1] = cond_v;
        for (int i = 0; i < n_carried; i++)
            bin[i + 2] = carried[i];
        st = ox_exec_subgraph(c, body, nb_in, bin, nb_out, bout);
        if (st) {
            ox_error sub = *c->err;
            ox_error_clear(c->err);
            ox_errorf(c->err, st, "iteration %lld: %s", (long long)it, sub.msg);
            goto out;
        }
        if (!bout[0] || bout[0]->kind != OX_RV_TENSOR || !ox_rv_scalar_i64(bout[0]->t, &cond)) {
            st = ox_errorf(c->err, OX_EINVAL, "body condition output is not a scalar");
            goto out;
        }
        for (int i = 0; i < n_carried; i++) {
            ox_rval_free(carried[i]);
            carried[i] = bout[1 + i];
            bout[1 + i] = NULL;
        }
        for (int k = 0; k < n_scan; k++) {
            ox_rval *v = bout[1 + n_carried + k];
            if (!v || v->kind != OX_RV_TENSOR) {
                st = ox_errorf(c->err, OX_EUNSUPPORTED, "scan output %d is not a tensor", k);
                goto out;
            }
            if (!collect_push(&scans[k], v->t)) {
                st = ox_errorf(c->err, OX_ENOMEM, "out of memory");
                goto out;
            }
            v->t = NULL;
        }
        free_vals(bout, nb_out);
        /* A missing or huge trip count must stay interruptible and within
         * the memory ceiling: the body alone may run no node at all. */
        if ((st = ox_kernel_poll(c, 0)) != OX_OK) {
            ox_error sub = *c->err;
            ox_error_clear(c->err);
            ox_errorf(c->err, st, "%s after %lld iteration(s)", sub.msg, (long long)it + 1);
            goto out;
        }
    }
    for (int i = 0; i < n_carried && i < c->n_out; i++) {
        c->out[i] = carried[i];
        carried[i] = NULL;
    }
    for (int k = 0; k < n_scan && n_carried + k < c->n_out; k++) {
        st = stack_output(c, n_carried + k, &scans[k], body->outputs[1 + n_carried + k], 0,
                          false);
        if (st)
            goto out;
    }
out:
    if (carried)
        free_vals(carried, n_carried);
    if (bout)
        free_vals(bout, nb_out);
    for (int k = 0; scans && k < n_scan; k++)
        collect_free(&scans[k]);
    free(carried);
    free(bin);
    free(bout);
    free(scans);
    ox_rval_free(it_v);
    ox_rval_free(cond_v);
    return st;
}

/* ---- Scan ------------------------------------------------------------- */

/* One Scan over `states` (N, owned, replaced in place) and scan inputs
 * (M tensors), for opset 9+ semantics; opset 8 calls it per batch row. */
static ox_status scan_run(ox_kernel_ctx *c, const ox_graph *body, int N, ox_rval **states,
                          int M, const ox_tensor *const *xs, const int *in_axes,
                          const int *in_rev, int64_t seq_len, collect *scans, int K)
{
    ox_status st = OX_OK;
    ox_rval **bin = calloc((size_t)(N + M) + 1, sizeof *bin);
    ox_rval **slices = calloc((size_t)M + 1, sizeof *slices);
    ox_rval **bout = calloc((size_t)(N + K) + 1, sizeof *bout);
    if (!bin || !slices || !bout) {
        st = ox_errorf(c->err, OX_ENOMEM, "out of memory");
        goto out;
    }
    for (int64_t t = 0; t < seq_len; t++) {
        for (int j = 0; j < M; j++) {
            int64_t idx = in_rev[j] ? seq_len - 1 - t : t;
            ox_tensor *s = ox_rv_slice(xs[j], in_axes[j], idx, c->err);
            slices[j] = s ? ox_rval_tensor(s) : NULL;
            if (!slices[j]) {
                st = c->err->status ? c->err->status : OX_ENOMEM;
                goto out;
            }
        }
        for (int i = 0; i < N; i++)
            bin[i] = states[i];
        for (int j = 0; j < M; j++)
            bin[N + j] = slices[j];
        st = ox_exec_subgraph(c, body, N + M, bin, N + K, bout);
        free_vals(slices, M);
        if (st)
            goto out;
        for (int i = 0; i < N; i++) {
            ox_rval_free(states[i]);
            states[i] = bout[i];
            bout[i] = NULL;
        }
        for (int k = 0; k < K; k++) {
            ox_rval *v = bout[N + k];
            if (!v || v->kind != OX_RV_TENSOR) {
                st = ox_errorf(c->err, OX_EINVAL, "scan output %d is not a tensor", k);
                goto out;
            }
            if (!collect_push(&scans[k], v->t)) {
                st = ox_errorf(c->err, OX_ENOMEM, "out of memory");
                goto out;
            }
            v->t = NULL;
        }
        free_vals(bout, N + K);
        if ((st = ox_kernel_poll(c, 0)) != OX_OK)
            goto out;
    }
out:
    if (slices)
        free_vals(slices, M);
    if (bout)
        free_vals(bout, N + K);
    free(bin);
    free(slices);
    free(bout);
    return st;
}

static ox_status k_scan(ox_kernel_ctx *c)
{
    const ox_graph *body = graph_attr(c->node, "body");
    if (!body)
        return ox_errorf(c->err, OX_EMODEL, "Scan without body");
    int64_t M64 = ox_node_attr_i(c->node, "num_scan_inputs", -1);
    bool v8 = c->opset < 9;
    int first = v8 ? 1 : 0;          /* opset 8: input 0 is sequence_lens */
    int n_in = c->n_in - first;
    if (M64 < 1 || M64 > n_in)
        return ox_errorf(c->err, OX_EMODEL, "bad num_scan_inputs");
    int M = (int)M64, N = n_in - M;
    int K = body->n_outputs - N;
    if (body->n_inputs != N + M || K < 0 || c->n_out > N + K)
        return ox_errorf(c->err, OX_EMODEL, "Scan body signature does not match");

    int in_axes[64], in_rev[64], out_axes[64], out_rev[64];
    if (M > 64 || K > 64)
        return ox_errorf(c->err, OX_EUNSUPPORTED, "more than 64 scan inputs/outputs");
    const int64_t *a;
    int na;
    for (int j = 0; j < M; j++) {
        in_axes[j] = 0;
        in_rev[j] = 0;
    }
    for (int k = 0; k < K; k++) {
        out_axes[k] = 0;
        out_rev[k] = 0;
    }
    const ox_tensor *xs_in[64];
    for (int j = 0; j < M; j++) {
        xs_in[j] = ox_kernel_in(c, first + N + j);
        if (!xs_in[j])
            return ox_errorf(c->err, OX_EINVAL, "scan input %d missing or not a tensor", j);
    }
    if (v8) {
        na = ox_node_attr_ints(c->node, "directions", &a);
        for (int j = 0; j < M && j < na; j++)
            in_rev[j] = a[j] != 0;
    } else {
        na = ox_node_attr_ints(c->node, "scan_input_directions", &a);
        for (int j = 0; j < M && j < na; j++)
            in_rev[j] = a[j] != 0;
        na = ox_node_attr_ints(c->node, "scan_input_axes", &a);
        for (int j = 0; j < M && j < na; j++) {
            int r = xs_in[j]->rank;
            int64_t ax = a[j] < 0 ? a[j] + r : a[j];
            if (ax < 0 || ax >= r)
                return ox_errorf(c->err, OX_EINVAL, "scan_input_axes[%d] out of range", j);
            in_axes[j] = (int)ax;
        }
        na = ox_node_attr_ints(c->node, "scan_output_directions", &a);
        for (int k = 0; k < K && k < na; k++)
            out_rev[k] = a[k] != 0;
        na = ox_node_attr_ints(c->node, "scan_output_axes", &a);
        for (int k = 0; k < K && k < na; k++)
            out_axes[k] = (int)a[k];
    }

    ox_status st = OX_OK;
    ox_rval **states = calloc((size_t)N + 1, sizeof *states);
    collect *scans = calloc((size_t)K + 1, sizeof *scans);
    if (!states || !scans) {
        free(states);
        free(scans);
        return ox_errorf(c->err, OX_ENOMEM, "out of memory");
    }

    if (!v8) {
        int64_t L = -1;
        for (int j = 0; j < M; j++) {
            int64_t l = xs_in[j]->rank ? xs_in[j]->dims[in_axes[j]] : -1;
            if (l < 0 || (L >= 0 && l != L)) {
                st = ox_errorf(c->err, OX_ESHAPE, "scan inputs disagree on sequence length");
                goto out;
            }
            L = l;
        }
        for (int i = 0; i < N; i++) {
            states[i] = c->in[i] ? ox_rval_clone(c->in[i]) : NULL;
            if (!states[i]) {
                st = ox_errorf(c->err, OX_EINVAL, "state input %d missing", i);
                goto out;
            }
        }
        st = scan_run(c, body, N, states, M, xs_in, in_axes, in_rev, L, scans, K);
        if (st)
            goto out;
        for (int i = 0; i < N && i < c->n_out; i++) {
            c->out[i] = states[i];
            states[i] = NULL;
        }
        for (int k = 0; k < K && N + k < c->n_out; k++) {
            const ox_value *bv = body->outputs[N + k];
            int rank = scans[k].n ? scans[k].items[0]->rank + 1 : 1;
            int ax = out_axes[k] < 0 ? out_axes[k] + rank : out_axes[k];
            st = stack_output(c, N + k, &scans[k], bv, ax, out_rev[k]);
            if (st)
                goto out;
        }
        goto out;
    }

    /* Opset 8: axis 0 of every state and scan input is the batch; axis 1 of
     * scan inputs is the sequence; sequence_lens (optional) per batch row. */
    {
        const ox_tensor *lens = ox_kernel_in(c, 0);
        int64_t B = -1;
        for (int i = 0; i < N; i++) {
            const ox_tensor *s = ox_kernel_in(c, first + i);
            if (!s || s->rank < 1 || (B >= 0 && s->dims[0] != B)) {
                st = ox_errorf(c->err, OX_ESHAPE, "state %d: bad batch dimension", i);
                goto out;
            }
            B = s->dims[0];
        }
        for (int j = 0; j < M; j++) {
            if (xs_in[j]->rank < 2 || (B >= 0 && xs_in[j]->dims[0] != B)) {
                st = ox_errorf(c->err, OX_ESHAPE, "scan input %d: bad shape", j);
                goto out;
            }
            B = xs_in[j]->dims[0];
        }
        int64_t L = xs_in[0]->dims[1];
        ox_tensor **row_states = calloc((size_t)B * (size_t)(N ? N : 1) + 1, sizeof *row_states);
        collect *row_scans = calloc((size_t)B * (size_t)(K ? K : 1) + 1, sizeof *row_scans);
        if (!row_states || !row_scans) {
            free(row_states);
            free(row_scans);
            st = ox_errorf(c->err, OX_ENOMEM, "out of memory");
            goto out;
        }
        for (int64_t b = 0; b < B && !st; b++) {
            int64_t len = L;
            if (lens) {
                if (lens->numel != B) {
                    st = ox_errorf(c->err, OX_EINVAL, "sequence_lens must have batch entries");
                    break;
                }
                len = ox_tensor_get_i64(lens, b);
                if (len < 0 || len > L) {
                    st = ox_errorf(c->err, OX_EINVAL, "sequence_lens out of range");
                    break;
                }
            }
            const ox_tensor *rows[64];
            ox_tensor *rows_own[64] = {0};
            int axes1[64];
            for (int j = 0; j < M && !st; j++) {
                ox_tensor *r = ox_rv_slice(xs_in[j], 0, b, c->err);
                ox_tensor *rr = r && len != L ? ox_rv_range(r, 0, 0, len, c->err) : NULL;
                if (rr) {
                    ox_tensor_free(r);
                    r = rr;
                }
                if (!r)
                    st = c->err->status ? c->err->status : OX_ENOMEM;
                rows[j] = rows_own[j] = r;
                axes1[j] = 0;
            }
            for (int i = 0; i < N && !st; i++) {
                ox_tensor *s = ox_rv_slice(ox_kernel_in(c, first + i), 0, b, c->err);
                states[i] = s ? ox_rval_tensor(s) : NULL;
                if (!states[i])
                    st = c->err->status ? c->err->status : OX_ENOMEM;
            }
            if (!st)
                st = scan_run(c, body, N, states, M, rows, axes1, in_rev, len,
                              &row_scans[b * K], K);
            for (int j = 0; j < M; j++)
                ox_tensor_free(rows_own[j]);
            for (int i = 0; i < N; i++) {
                if (!st && states[i] && states[i]->kind == OX_RV_TENSOR) {
                    row_states[b * N + i] = states[i]->t;
                    states[i]->t = NULL;
                } else if (!st) {
                    st = ox_errorf(c->err, OX_EINVAL, "state output is not a tensor");
                }
                ox_rval_free(states[i]);
                states[i] = NULL;
            }
        }
        /* Re-assemble: stack rows along the batch axis. */
        for (int i = 0; !st && i < N && i < c->n_out; i++) {
            const ox_tensor **items = malloc((size_t)B * sizeof *items + 1);
            if (!items) {
                st = ox_errorf(c->err, OX_ENOMEM, "out of memory");
                break;
            }
            for (int64_t b = 0; b < B; b++)
                items[b] = row_states[b * N + i];
            ox_tensor *t = B > 0 ? ox_rv_concat(items, (int)B, 0, true, c->err) : NULL;
            free(items);
            if (!t) {
                st = c->err->status ? c->err->status : OX_EINVAL;
                break;
            }
            ox_kernel_set_output(c, i, t);
        }
        for (int k = 0; !st && k < K && N + k < c->n_out; k++) {
            /* Each row's output is [len, ...]; rows shorter than L are
             * zero-padded to L before stacking to [B, L, ...]. */
            const ox_tensor **items = calloc((size_t)B + 1, sizeof *items);
            ox_tensor **own = calloc((size_t)B + 1, sizeof *own);
            if (!items || !own) {
                free(items);
                free(own);
                st = ox_errorf(c->err, OX_ENOMEM, "out of memory");
                break;
            }
            for (int64_t b = 0; b < B && !st; b++) {
                collect *s = &row_scans[b * K + k];
                if (s->n == 0) {
                    st = ox_errorf(c->err, OX_EUNSUPPORTED, "empty scan row");
                    break;
                }
                if (in_rev[0])
                    for (int i2 = 0, j2 = s->n - 1; i2 < j2; i2++, j2--) {
                        ox_tensor *t = s->items[i2];
                        s->items[i2] = s->items[j2];
                        s->items[j2] = t;
                    }
                own[b] = ox_rv_concat((const ox_tensor *const *)s->items, s->n, 0, true, c->err);
                if (!own[b]) {
                    st = c->err->status ? c->err->status : OX_EINVAL;
                    break;
                }
                if (own[b]->dims[0] < L) {
                    int64_t dims[OX_MAX_RANK];
                    memcpy(dims, own[b]->dims, sizeof dims);
                    dims[0] = L;
                    ox_tensor *p = ox_tensor_new(own[b]->dtype, own[b]->rank, dims);
                    if (!p) {
                        st = ox_errorf(c->err, OX_ENOMEM, "out of memory");
                        break;
                    }
                    ox_tk_copy(p, 0, own[b], 0, own[b]->numel);
                    ox_tensor_free(own[b]);
                    own[b] = p;
                }
                items[b] = own[b];
            }
            ox_tensor *t = (!st && B > 0) ? ox_rv_concat(items, (int)B, 0, true, c->err) : NULL;
            for (int64_t b = 0; b < B; b++)
                ox_tensor_free(own[b]);
            free(items);
            free(own);
            if (!st && !t)
                st = c->err->status ? c->err->status : OX_EINVAL;
            if (!st)
                ox_kernel_set_output(c, N + k, t);
        }
        for (int64_t b = 0; b < B; b++) {
            for (int i = 0; i < N; i++)
                ox_tensor_free(row_states[b * N + i]);
            for (int k = 0; k < K; k++)
                collect_free(&row_scans[b * K + k]);
        }
        free(row_states);
        free(row_scans);
    }
out:
    free_vals(states, N);
    for (int k = 0; k < K; k++)
        collect_free(&scans[k]);
    free(states);
    free(scans);
    return st;
}

const ox_kernel_entry ox_kernels_control[] = {
    {"", "If", 1, k_if},
    {"", "Loop", 1, k_loop},
    {"", "Scan", 8, k_scan},
    {0},
};
