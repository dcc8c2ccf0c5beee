/* Fusion passes on standard ops: consecutive Transposes, Reshapes, Concats
 * and lossless Casts collapse into one node; Log(Softmax) becomes
 * LogSoftmax; a keepdims=0 Reduce followed by the matching Unsqueeze
 * becomes a keepdims=1 Reduce. */
#include <stdlib.h>
#include <string.h>

#include "passes/pass_internal.h"

/* The producer of n's input k when it is in n's graph, of type op. */
/* The producer of n's input k when it is an `op` node of n's graph that
 * has its own input 0 (every rewrite here reads it): a producer without
 * inputs, which only a malformed model has, is never a match. */
static ox_node *producer_is(const ox_node *n, int k, const char *op)
{
    if (k >= n->n_inputs || !n->inputs[k])
        return NULL;
    ox_node *p = n->inputs[k]->producer;
    return p && p->graph == n->graph && ox_node_is(p, op) && p->n_inputs > 0 && p->inputs[0]
           ? p : NULL;
}

static bool single_reader(const ox_value *v)
{
    return v && v->n_uses == 1 && v->uses[0].input >= 0 && !v->is_output;
}

static int perm_of(const ox_node *t, int64_t *perm)
{
    const int64_t *p;
    int np = ox_node_attr_ints(t, "perm", &p);
    if (np > OX_MAX_RANK)
        return -1;
    if (np >= 0) {
        for (int i = 0; i < np; i++) {
            if (p[i] < 0 || p[i] >= np)
                return -1;
            perm[i] = p[i];
        }
        return np;
    }
    int64_t d[OX_MAX_RANK];
    const ox_value *x = t->n_inputs > 0 ? t->inputs[0] : NULL;
    int r = x ? ox__pass_static_shape(x, d) : -1;
    if (r < 0 && x && x->type && x->type->has_shape)
        r = x->type->rank;
    for (int i = 0; i < r; i++)
        perm[i] = r - 1 - i;
    return r;
}

static ox_status pass_transposes(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    (void)err;
    for (int i = 0; i < g->n_nodes && ox__pass_may(c); i++) {
        ox_node *t2 = g->nodes[i];
        if (ox__pass_gone(t2))
            continue;
        if (!ox_node_is(t2, "Transpose"))
            continue;
        ox_node *t1 = producer_is(t2, 0, "Transpose");
        int64_t p1[OX_MAX_RANK], p2[OX_MAX_RANK], p[OX_MAX_RANK];
        if (!t1 || !t1->inputs[0])
            continue;
        int r1 = perm_of(t1, p1), r2 = perm_of(t2, p2);
        if (r1 < 0 || r1 != r2)
            continue;
        for (int k = 0; k < r2; k++)
            p[k] = p1[p2[k]];
        ox_node_set_attr_ints(t2, "perm", r2, p);
        ox__pass_set_input(c, t2, 0, t1->inputs[0]);
        ox__pass_did(c);
    }
    return OX_OK;
}

static ox_status pass_reshapes(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    (void)err;
    for (int i = 0; i < g->n_nodes && ox__pass_may(c); i++) {
        ox_node *r2 = g->nodes[i];
        if (ox__pass_gone(r2))
            continue;
        if (!ox_node_is(r2, "Reshape") || r2->n_inputs < 2)
            continue;
        ox_node *r1 = producer_is(r2, 0, "Reshape");
        if (!r1 || !r1->inputs[0])
            r1 = producer_is(r2, 0, "Flatten");
        if (!r1 || !r1->inputs[0])
            continue;
        /* A 0 in the second shape copies a dim of the first result. */
        int64_t s[OX_MAX_RANK];
        int k = ox__pass_const_ints(r2->inputs[1], s, OX_MAX_RANK);
        bool zero = false;
        for (int j = 0; j < k; j++)
            zero |= s[j] == 0;
        if (k < 0 || zero)
            continue;
        ox__pass_set_input(c, r2, 0, r1->inputs[0]);
        ox__pass_did(c);
    }
    return OX_OK;
}

/* The Concat producing v when the Concat n (axis `axis`) may take over its
 * inputs: same graph and axis, at least one input, v read only by n. */
static ox_node *absorbable(const ox_node *n, const ox_value *v, int64_t axis)
{
    ox_node *p = v ? v->producer : NULL;
    if (!p || p->graph != n->graph || !ox_node_is(p, "Concat") || p->n_inputs < 1 ||
        !single_reader(v) || v->uses[0].node != n || ox_node_attr_i(p, "axis", 0) != axis)
        return NULL;
    return p;
}

typedef struct vstack {
    void **v;
    size_t n, cap;
} vstack;

static bool vpush(vstack *s, void *v)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        void **t = realloc(s->v, cap * sizeof *t);
        if (!t)
            return false;
        s->v = t;
        s->cap = cap;
    }
    s->v[s->n++] = v;
    return true;
}

/* Flattens each tree of single-use, same-axis Concats in one go from its
 * root (a Concat no such Concat reads): every input moves once, where
 * merging one producer at a time would copy a chain's inputs again at each
 * step (quadratic on a deep chain). */
static ox_status pass_concats(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    vstack todo = {0}, flat = {0}, gone = {0};
    ox_status st = OX_OK;
    for (int i = 0; i < g->n_nodes && ox__pass_may(c) && !st; i++) {
        ox_node *n = g->nodes[i];
        if (ox__pass_gone(n) || !ox_node_is(n, "Concat") || n->n_outputs != 1)
            continue;
        int64_t axis = ox_node_attr_i(n, "axis", 0);
        if (axis < 0)
            continue;
        const ox_value *o = n->outputs[0];
        const ox_node *r = o && o->n_uses == 1 ? o->uses[0].node : NULL;
        if (r && ox_node_is(r, "Concat") && ox_node_attr_i(r, "axis", 0) == axis &&
            absorbable(r, o, axis))
            continue;  /* its reader will take it over */
        bool any = false;
        for (int k = 0; k < n->n_inputs && !any; k++)
            any = absorbable(n, n->inputs[k], axis) != NULL;
        if (!any)
            continue;
        /* Depth first, inputs pushed in reverse so they come out in order. */
        todo.n = flat.n = gone.n = 0;
        for (int k = n->n_inputs - 1; k >= 0 && !st; k--)
            if (!vpush(&todo, n->inputs[k]))
                st = ox_errorf(err, OX_ENOMEM, "out of memory");
        while (todo.n && !st) {
            ox_value *v = todo.v[--todo.n];
            ox_node *p = absorbable(v && v->uses ? v->uses[0].node : n, v, axis);
            if (!p || !ox__pass_may(c)) {
                if (!vpush(&flat, v))
                    st = ox_errorf(err, OX_ENOMEM, "out of memory");
                continue;
            }
            for (int k = p->n_inputs - 1; k >= 0 && !st; k--)
                if (!vpush(&todo, p->inputs[k]))
                    st = ox_errorf(err, OX_ENOMEM, "out of memory");
            /* Its inputs are on the stack: drop it once n reads them. */
            if (!vpush(&gone, p))
                st = ox_errorf(err, OX_ENOMEM, "out of memory");
            ox__pass_did(c);
        }
        if (st || flat.n > (size_t)1 << 30)
            break;
        for (size_t j = 0; j < flat.n; j++)
            ox__pass_set_input(c, n, (int)j, flat.v[j]);
        for (size_t j = 0; j < gone.n; j++) {
            ox_node *p = gone.v[j];
            ox__pass_drop_value(c, p->outputs[0]);
            ox__pass_drop(c, p);
        }
    }
    free(todo.v);
    free(flat.v);
    free(gone.v);
    return st;
}

/* A cast from a to b that keeps every value of a exactly. */
static bool lossless(ox_dtype a, ox_dtype b)
{
    if (a == b)
        return true;
    switch (a) {
    case OX_DT_FLOAT16:
    case OX_DT_BFLOAT16: return b == OX_DT_FLOAT || b == OX_DT_DOUBLE;
    case OX_DT_FLOAT: return b == OX_DT_DOUBLE;
    case OX_DT_INT8: return b == OX_DT_INT16 || b == OX_DT_INT32 || b == OX_DT_INT64;
    case OX_DT_INT16: return b == OX_DT_INT32 || b == OX_DT_INT64;
    case OX_DT_INT32: return b == OX_DT_INT64;
    case OX_DT_UINT8:
        return b == OX_DT_UINT16 || b == OX_DT_UINT32 || b == OX_DT_UINT64 || b == OX_DT_INT16 ||
               b == OX_DT_INT32 || b == OX_DT_INT64;
    case OX_DT_UINT16:
        return b == OX_DT_UINT32 || b == OX_DT_UINT64 || b == OX_DT_INT32 || b == OX_DT_INT64;
    case OX_DT_UINT32: return b == OX_DT_UINT64 || b == OX_DT_INT64;
    default: return false;
    }
}

static ox_status pass_casts(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    (void)err;
    for (int i = 0; i < g->n_nodes && ox__pass_may(c); i++) {
        ox_node *c2 = g->nodes[i];
        if (ox__pass_gone(c2))
            continue;
        if (!ox_node_is(c2, "Cast"))
            continue;
        ox_node *c1 = producer_is(c2, 0, "Cast");
        if (!c1 || !c1->inputs[0])
            continue;
        ox_dtype x = ox__pass_elem(c1->inputs[0]);
        ox_dtype mid = (ox_dtype)ox_node_attr_i(c1, "to", 0);
        if (x == OX_DT_UNDEFINED || !lossless(x, mid))
            continue;
        ox__pass_set_input(c, c2, 0, c1->inputs[0]);
        ox__pass_did(c);
    }
    return OX_OK;
}

static ox_status pass_log_softmax(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    for (int i = 0; i < g->n_nodes && ox__pass_may(c); i++) {
        ox_node *lg = g->nodes[i];
        if (ox__pass_gone(lg))
            continue;
        if (!ox_node_is(lg, "Log") || lg->n_outputs != 1 || !lg->outputs[0])
            continue;
        ox_node *sm = producer_is(lg, 0, "Softmax");
        if (!sm || !sm->inputs[0] || !single_reader(lg->inputs[0]))
            continue;
        ox_value *x = sm->inputs[0], *mid = lg->inputs[0], *y = lg->outputs[0];
        const ox_attr *axis = ox_node_attr(sm, "axis");
        ox_attr copy = {0};
        if (axis)
            ox_attr_copy(&copy, axis, NULL);
        char *name = ox_model_unique_node_name(c->m, "LogSoftmax");
        ox__pass_drop(c, lg);
        ox__pass_drop(c, sm);
        ox__pass_drop_value(c, mid);
        ox_node *n = ox_node_new(g, "LogSoftmax", "", name, 1, &x, 1, &y);
        free(name);
        if (axis) {
            if (n)
                ox_node_set_attr(n, &copy);
            ox_attr_free_contents(&copy);
        }
        if (!n)
            return ox_errorf(err, OX_ENOMEM, "out of memory");
        ox__pass_did(c);  /* the new node is appended: no restart needed */
    }
    return OX_OK;
}

static int norm_axes(int64_t *a, int n, int rank)
{
    for (int i = 0; i < n; i++) {
        if (a[i] < 0)
            a[i] += rank;
        if (a[i] < 0 || a[i] >= rank)
            return -1;
    }
    for (int i = 1; i < n; i++) /* insertion sort: few axes */
        for (int j = i; j > 0 && a[j] < a[j - 1]; j--) {
            int64_t t = a[j];
            a[j] = a[j - 1];
            a[j - 1] = t;
        }
    return n;
}

static int axes_of(const ox_node *n, int64_t *a)
{
    const int64_t *p;
    int k = ox_node_attr_ints(n, "axes", &p);
    if (k >= 0) {
        if (k > OX_MAX_RANK)
            return -1;
        memcpy(a, p, (size_t)k * sizeof *a);
        return k;
    }
    if (n->n_inputs > 1 && n->inputs[1])
        return ox__pass_const_ints(n->inputs[1], a, OX_MAX_RANK);
    return -1;
}

static ox_status pass_reduce_unsqueeze(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    (void)err;
    for (int i = 0; i < g->n_nodes && ox__pass_may(c); i++) {
        ox_node *u = g->nodes[i];
        if (ox__pass_gone(u))
            continue;
        if (!ox_node_is(u, "Unsqueeze") || u->n_inputs < 1 || !u->inputs[0] || u->n_outputs < 1 ||
            !u->outputs[0])
            continue;
        ox_node *r = u->inputs[0]->producer;
        if (!r || r->graph != g || r->n_inputs < 1 || !r->inputs[0] ||
            !ox_node_is_default_domain(r) || strncmp(r->op_type, "Reduce", 6) ||
            ox_node_attr_i(r, "keepdims", 1) != 0 || !single_reader(u->inputs[0]) ||
            r->n_outputs != 1)
            continue;
        int64_t d[OX_MAX_RANK], ra[OX_MAX_RANK], ua[OX_MAX_RANK];
        int rank = ox__pass_static_shape(r->inputs[0], d);
        if (rank < 0 && r->inputs[0]->type && r->inputs[0]->type->has_shape)
            rank = r->inputs[0]->type->rank;
        int nr = axes_of(r, ra), nu = axes_of(u, ua);
        if (rank < 0 || nr <= 0 || nr != nu || norm_axes(ra, nr, rank) < 0 ||
            norm_axes(ua, nu, rank) < 0 || memcmp(ra, ua, (size_t)nr * sizeof *ra))
            continue;
        ox_value *mid = u->inputs[0], *y = u->outputs[0];
        if (y->is_output && (mid->is_output))
            continue;
        /* Let the Reduce produce y with keepdims=1. */
        ox__pass_drop(c, u);
        ox_node_set_output(r, 0, y);
        ox__pass_drop_value(c, mid);
        ox_node_set_attr_i(r, "keepdims", 1);
        ox__pass_did(c);
    }
    return OX_OK;
}


/* ---- Squeeze / Unsqueeze ------------------------------------------------- */

static int rank_of(const ox_value *v)
{
    if (v && v->init)
        return v->init->rank;
    return v && v->type && v->type->kind == OX_TYPE_TENSOR && v->type->has_shape
               ? v->type->rank
               : -1;
}

/* Sets the axes of a Squeeze/Unsqueeze the way its opset wants them. */
static bool set_axes(ox_pass_ctx *c, ox_node *n, int k, const int64_t *a)
{
    if (ox_model_opset(c->m, "") >= 13) {
        ox_value *v = ox__pass_new_init(n->graph, "axes", ox__pass_i64_tensor(k, a));
        if (!v)
            return false;
        ox__pass_set_input(c, n, 1, v);
        return true;
    }
    return ox_node_set_attr_ints(n, "axes", k, a) != NULL;
}

static ox_status pass_squeezes(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    (void)err;
    for (int i = 0; i < g->n_nodes && ox__pass_may(c); i++) {
        ox_node *n2 = g->nodes[i];
        if (ox__pass_gone(n2))
            continue;
        bool sq = ox_node_is(n2, "Squeeze"), un = ox_node_is(n2, "Unsqueeze");
        if (!(sq || un) || n2->n_outputs != 1 || !n2->outputs[0])
            continue;
        ox_node *n1 = producer_is(n2, 0, "Squeeze");
        bool sq1 = n1 != NULL;
        if (!n1)
            n1 = producer_is(n2, 0, "Unsqueeze");
        if (!n1 || !n1->inputs[0])
            continue;
        ox_value *x = n1->inputs[0];
        int64_t a1[OX_MAX_RANK], a2[OX_MAX_RANK], out[OX_MAX_RANK];
        int k1 = axes_of(n1, a1), k2 = axes_of(n2, a2), r = rank_of(x);
        if (r < 0 || k1 <= 0 || k2 <= 0)
            continue;
        int r1 = sq1 ? r - k1 : r + k1;
        int r2 = sq ? r1 - k2 : r1 + k2;
        if (r1 < 0 || r2 < 0 || r1 > OX_MAX_RANK || r2 > OX_MAX_RANK ||
            norm_axes(a1, k1, sq1 ? r : r1) < 0 || norm_axes(a2, k2, sq ? r1 : r2) < 0)
            continue;
        if (sq1 != sq) {
            /* A pair undoes itself when both name the same axes of the
             * larger shape. */
            if (k1 != k2 || memcmp(a1, a2, (size_t)k1 * sizeof *a1))
                continue;
            if (ox__pass_bypass(c, n2, x, n2->outputs[0]))
                ox__pass_did(c);
            continue;
        }
        int k = 0;
        if (un) {
            /* Slots of the final shape not made by n2 are n1's output in order. */
            int p = 0;
            for (int j = 0; j < r2; j++) {
                bool mine = false;
                for (int q = 0; q < k2; q++)
                    mine |= a2[q] == j;
                bool theirs = false;
                if (!mine) {
                    for (int q = 0; q < k1; q++)
                        theirs |= a1[q] == p;
                    p++;
                }
                if (mine || theirs)
                    out[k++] = j;
            }
        } else {
            /* n2's axes index the dims of x that n1 kept. */
            int64_t kept[OX_MAX_RANK];
            int nk = 0;
            for (int j = 0; j < r; j++) {
                bool gone = false;
                for (int q = 0; q < k1; q++)
                    gone |= a1[q] == j;
                if (!gone)
                    kept[nk++] = j;
                else
                    out[k++] = j;
            }
            for (int q = 0; q < k2; q++)
                out[k++] = kept[a2[q]];
            norm_axes(out, k, r);
        }
        if (!set_axes(c, n2, k, out))
            continue;
        ox__pass_set_input(c, n2, 0, x);
        ox__pass_did(c);
    }
    return OX_OK;
}


/* ---- Slice of a Slice ----------------------------------------------------- */

/* Reads a Slice (opset >= 10) with constant starts/ends/axes and unit
 * steps into s/e/a (axes normalized); returns the axis count or -1. */
static int slice_parts(const ox_node *n, int rank, int64_t *s, int64_t *e, int64_t *a)
{
    if (n->n_inputs < 3 || !n->inputs[1] || !n->inputs[2])
        return -1;
    int k = ox__pass_const_ints(n->inputs[1], s, OX_MAX_RANK);
    if (k <= 0 || ox__pass_const_ints(n->inputs[2], e, OX_MAX_RANK) != k)
        return -1;
    if (n->n_inputs > 3 && n->inputs[3]) {
        if (ox__pass_const_ints(n->inputs[3], a, OX_MAX_RANK) != k)
            return -1;
    } else {
        for (int i = 0; i < k; i++)
            a[i] = i;
    }
    if (n->n_inputs > 4 && n->inputs[4]) {
        int64_t st[OX_MAX_RANK];
        if (ox__pass_const_ints(n->inputs[4], st, OX_MAX_RANK) != k)
            return -1;
        for (int i = 0; i < k; i++)
            if (st[i] != 1)
                return -1;
    }
    for (int i = 0; i < k; i++) {
        if (a[i] < 0)
            a[i] += rank;
        if (a[i] < 0 || a[i] >= rank)
            return -1;
    }
    return k;
}

static ox_status pass_slices(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    (void)err;
    if (ox_model_opset(c->m, "") < 10)
        return OX_OK;
    for (int i = 0; i < g->n_nodes && ox__pass_may(c); i++) {
        ox_node *n2 = g->nodes[i];
        if (ox__pass_gone(n2))
            continue;
        if (!ox_node_is(n2, "Slice"))
            continue;
        ox_node *n1 = producer_is(n2, 0, "Slice");
        if (!n1 || !n1->inputs[0])
            continue;
        int r = rank_of(n1->inputs[0]);
        int64_t s1[OX_MAX_RANK], e1[OX_MAX_RANK], a1[OX_MAX_RANK];
        int64_t s2[OX_MAX_RANK], e2[OX_MAX_RANK], a2[OX_MAX_RANK];
        int k1 = r > 0 ? slice_parts(n1, r, s1, e1, a1) : -1;
        int k2 = k1 > 0 ? slice_parts(n2, r, s2, e2, a2) : -1;
        if (k2 <= 0 || k1 + k2 > OX_MAX_RANK)
            continue;
        /* Only slices of different axes compose by concatenation. */
        bool clash = false;
        for (int p = 0; p < k1; p++)
            for (int q = 0; q < k2; q++)
                clash |= a1[p] == a2[q];
        if (clash)
            continue;
        for (int q = 0; q < k2; q++) {
            s1[k1 + q] = s2[q];
            e1[k1 + q] = e2[q];
            a1[k1 + q] = a2[q];
        }
        int k = k1 + k2;
        ox_value *vs = ox__pass_new_init(g, "starts", ox__pass_i64_tensor(k, s1));
        ox_value *ve = ox__pass_new_init(g, "ends", ox__pass_i64_tensor(k, e1));
        ox_value *va = ox__pass_new_init(g, "axes", ox__pass_i64_tensor(k, a1));
        if (!vs || !ve || !va)
            return ox_errorf(err, OX_ENOMEM, "out of memory");
        ox__pass_set_input(c, n2, 0, n1->inputs[0]);
        ox__pass_set_input(c, n2, 1, vs);
        ox__pass_set_input(c, n2, 2, ve);
        ox__pass_set_input(c, n2, 3, va);
        if (n2->n_inputs > 4)
            ox__pass_set_input(c, n2, 4, NULL);
        ox__pass_did(c);
    }
    return OX_OK;
}

const ox_pass ox__passes_fuse[] = {
    {"fuse_transposes", "compose consecutive Transposes into one", OX_PASS_FUSION,
     OX_TARGET_ONNX, OX_LEVEL_BASIC, true, pass_transposes},
    {"fuse_reshapes", "a Reshape of a Reshape/Flatten reads the first input", OX_PASS_FUSION,
     OX_TARGET_ONNX, OX_LEVEL_BASIC, true, pass_reshapes},
    {"fuse_concats", "flatten a Concat of a single-use Concat on the same axis",
     OX_PASS_FUSION, OX_TARGET_ONNX, OX_LEVEL_BASIC, true, pass_concats},
    {"fuse_casts", "a Cast of a lossless Cast reads the first input", OX_PASS_FUSION,
     OX_TARGET_ONNX, OX_LEVEL_BASIC, true, pass_casts},
    {"fuse_log_softmax", "Log(Softmax(x)) -> LogSoftmax(x)", OX_PASS_FUSION, OX_TARGET_ONNX,
     OX_LEVEL_BASIC, true, pass_log_softmax},
    {"fuse_reduce_unsqueeze", "Reduce(keepdims=0) + matching Unsqueeze -> keepdims=1",
     OX_PASS_FUSION, OX_TARGET_ONNX, OX_LEVEL_BASIC, true, pass_reduce_unsqueeze},
    {"fuse_squeezes",
     "merge consecutive Squeezes or Unsqueezes; drop Squeeze/Unsqueeze pairs that cancel",
     OX_PASS_FUSION, OX_TARGET_ONNX, OX_LEVEL_BASIC, true, pass_squeezes},
    {"fuse_slices", "merge a Slice of a Slice over different axes (unit steps)",
     OX_PASS_FUSION, OX_TARGET_ONNX, OX_LEVEL_BASIC, true, pass_slices},
    {0},
};
