/* PyTorch's exported GELU chain as one pass (gelu_chain.h). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "no-trapping-math", "no-math-errno")
#endif

#include "exec/gelu_chain.h"

#include <string.h>

#include "exec/k_elementwise/ew.h"
#include "exec/k_elementwise/fastmath.h"
#include "onnxscope/threadpool.h"

/* The single reader of v, when v has exactly one use and is no output. */
static bool only_use_is(const ox_value *v, const ox_node *reader)
{
    return v && !v->is_output && v->n_uses == 1 && v->uses[0].node == reader;
}

bool ox_gelu_chain_match(const ox_node *mul, ox_gelu_chain *m)
{
    memset(m, 0, sizeof *m);
    if (!ox_node_is(mul, "Mul") || mul->n_inputs != 2 || mul->n_outputs != 1 ||
        !mul->inputs[0] || !mul->inputs[1])
        return false;
    for (int ia = 0; ia < 2; ia++) {
        const ox_value *a = mul->inputs[ia], *x = mul->inputs[1 - ia];
        const ox_node *add = a->producer;
        if (a == x || !ox_node_is(add, "Add") || add->n_inputs != 2 || !only_use_is(a, mul))
            continue;
        for (int ie = 0; ie < 2; ie++) {
            const ox_value *e = add->inputs[ie], *c2 = add->inputs[1 - ie];
            const ox_node *erf = e ? e->producer : NULL;
            if (!c2 || c2 == e || !ox_node_is(erf, "Erf") || erf->n_inputs != 1 ||
                !only_use_is(e, add))
                continue;
            const ox_value *t = erf->inputs[0];
            const ox_node *first = t ? t->producer : NULL;
            if (!only_use_is(t, erf) || !first || first->n_inputs != 2 ||
                !first->inputs[0] || !first->inputs[1])
                continue;
            bool div = ox_node_is(first, "Div");
            if (!div && !ox_node_is(first, "Mul"))
                continue;
            /* x / c1 (x first), or x * c1 in either order. */
            int ix = first->inputs[0] == x ? 0 : first->inputs[1] == x ? 1 : -1;
            if (ix < 0 || (div && ix != 0) || first->inputs[1 - ix] == x)
                continue;
            if (c2 == x)
                continue;
            m->first = first, m->erf = erf, m->add = add;
            m->x = x, m->c1 = first->inputs[1 - ix], m->c2 = c2;
            m->div = div;
            return true;
        }
    }
    return false;
}

/* ---- the fused pass --------------------------------------------------------------- */

#if defined(__GNUC__)
#define CHAIN_FLATTEN __attribute__((flatten))
#else
#define CHAIN_FLATTEN
#endif

/* The chain's float operations in the graph's order (x / c1 or x * c1,
 * the same erf as the Erf kernel, + c2, x *), each rounded to float. */
CHAIN_FLATTEN OX__EW_CLONES static void chain_span(const float *x, float *y, int64_t n,
                                                   bool div, float c1, float c2)
{
    if (div)
        for (int64_t i = 0; i < n; i++) {
            float v = x[i];
            float t = v / c1;
            float a = ox__erff(t) + c2;
            y[i] = v * a;
        }
    else
        for (int64_t i = 0; i < n; i++) {
            float v = x[i];
            float t = v * c1;
            float a = ox__erff(t) + c2;
            y[i] = v * a;
        }
}

typedef struct chain_job {
    const float *x;
    float *y;
    bool div;
    float c1, c2;
} chain_job;

static void chain_chunk(void *ctx, int64_t b, int64_t e)
{
    const chain_job *j = ctx;
    chain_span(j->x + b, j->y + b, e - b, j->div, j->c1, j->c2);
}

static bool scalar_f32(const ox_tensor *t, int max_rank)
{
    return t && t->dtype == OX_DT_FLOAT && t->numel == 1 && t->rank <= max_rank &&
           ox_tensor_data(t);
}

/* One original kernel on heap temporaries (priv NULL: no arena slot). */
static ox_status run_one(ox_kernel_ctx *c, const char *op, int n_in, ox_rval **in, ox_rval **out)
{
    ox_kernel_fn fn = ox_kernel_lookup("", op, c->opset);
    if (!fn)
        return ox_errorf(c->err, OX_EUNSUPPORTED, "no kernel for %s", op);
    *out = NULL;
    ox_kernel_ctx k = {
        .node = c->node, .opset = c->opset, .n_in = n_in, .in = in, .n_out = 1, .out = out,
        .exec = c->exec, .pool = c->pool, .err = c->err, .priv = NULL,
    };
    ox_status st = fn(&k);
    if (st == OX_OK && !*out)
        st = ox_errorf(c->err, OX_EINVAL, "%s produced no value", op);
    return st;
}

/* The unfused chain, node by node in the graph's operand order; the last
 * Mul writes the real output (its arena slot). */
static ox_status chain_slow(ox_kernel_ctx *c)
{
    ox_gelu_chain m;
    if (!ox_gelu_chain_match(c->node, &m))
        return ox_errorf(c->err, OX_EINVAL, "fused GELU chain no longer matches its graph");
    ox_rval *x = c->in[0], *c1 = c->in[1], *c2 = c->in[2];
    ox_rval *t = NULL, *e = NULL, *a = NULL;
    ox_rval *in[2];
    in[0] = m.first->inputs[0] == m.x ? x : c1;
    in[1] = m.first->inputs[0] == m.x ? c1 : x;
    ox_status st = run_one(c, m.div ? "Div" : "Mul", 2, in, &t);
    if (st == OX_OK) {
        in[0] = t;
        st = run_one(c, "Erf", 1, in, &e);
    }
    if (st == OX_OK) {
        in[0] = m.add->inputs[0] == m.c2 ? c2 : e;
        in[1] = m.add->inputs[0] == m.c2 ? e : c2;
        st = run_one(c, "Add", 2, in, &a);
    }
    if (st == OX_OK) {
        ox_kernel_fn fn = ox_kernel_lookup("", "Mul", c->opset);
        in[0] = c->node->inputs[0] == m.x ? x : a;
        in[1] = c->node->inputs[0] == m.x ? a : x;
        ox_kernel_ctx k = *c;
        k.n_in = 2;
        k.in = in;
        st = fn ? fn(&k) : ox_errorf(c->err, OX_EUNSUPPORTED, "no kernel for Mul");
    }
    ox_rval_free(t);
    ox_rval_free(e);
    ox_rval_free(a);
    return st;
}

static ox_status chain_run(ox_kernel_ctx *c, bool div)
{
    if (c->n_in != 3 || !c->in[0] || !c->in[1] || !c->in[2])
        return ox_errorf(c->err, OX_EINVAL, "fused GELU chain needs 3 inputs");
    const ox_tensor *x = ox_kernel_in(c, 0);
    const ox_tensor *t1 = ox_kernel_in(c, 1), *t2 = ox_kernel_in(c, 2);
    if (!x || x->dtype != OX_DT_FLOAT || (x->numel && !ox_tensor_data(x)) ||
        !scalar_f32(t1, x->rank) || !scalar_f32(t2, x->rank))
        return chain_slow(c);
    ox_tensor *y = ox_kernel_output(c, 0, OX_DT_FLOAT, x->rank, x->dims);
    if (!y)
        return ox_errorf(c->err, OX_ENOMEM, "cannot allocate output");
    if (x->numel == 0)
        return OX_OK;
    float *yp = ox_tensor_mutable_data(y);
    if (!yp)
        return ox_errorf(c->err, OX_ENOMEM, "cannot allocate output");
    chain_job j = {ox_tensor_data(x), yp, div, *(const float *)ox_tensor_data(t1),
                   *(const float *)ox_tensor_data(t2)};
    ox_parallel_for(c->pool, x->numel, OX__EW_GRAIN, chain_chunk, &j);
    return OX_OK;
}

ox_status ox_gelu_chain_div(ox_kernel_ctx *c) { return chain_run(c, true); }
ox_status ox_gelu_chain_mul(ox_kernel_ctx *c) { return chain_run(c, false); }
