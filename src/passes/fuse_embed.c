/* BERT-style embeddings to com.microsoft EmbedLayerNormalization (under
 * --target ort):
 *   LayerNormalization(Gather(W, ids) + Gather(P, pos) [+ Gather(T, seg)])
 * the Adds in any nesting and operand order, the LayerNorm over the last
 * axis with 1-D gamma (and beta), W, P, T constant [rows, H] tables read
 * by Gather on axis 0. pos must be the positions 0..S-1 of the ids, which
 * the fused op computes itself: Unsqueeze(Range(0, S, 1), [0]) with S the
 * ids' dim 1 (from Shape at run time, or a constant equal to the static
 * dim), or a constant [1, S] row 0..S-1. The ids and segment ids become
 * int32 (one Cast per input, shared). The attention mask is left to
 * fuse_attention: the op's mask_index output counts ones per row, which
 * equals Attention's 2-D mask only for right-padded masks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/fuse_util.h"

typedef struct embed_match {
    ox_node *nodes[8];
    int nn;
    ox_node *gathers[3];
    int ng;
} embed_match;

/* Collects the Gather leaves of a tree of single-use Adds under v. */
static bool add_leaves(const ox_graph *g, ox_value *v, embed_match *m, bool root)
{
    ox_node *n = ox__fuse_prod(g, v, NULL);
    if (!n || (!root && !ox__fuse_single(v)) || n->n_outputs != 1)
        return false;
    /* A two-input Sum is residual_sum's form of the Add. */
    if ((ox_node_is(n, "Add") || ox_node_is(n, "Sum")) && n->n_inputs == 2 && m->nn < 4) {
        m->nodes[m->nn++] = n;
        return add_leaves(g, n->inputs[0], m, false) && add_leaves(g, n->inputs[1], m, false);
    }
    if (ox_node_is(n, "Gather") && n->n_inputs == 2 && m->ng < 3 &&
        ox_node_attr_i(n, "axis", 0) == 0) {
        m->gathers[m->ng++] = n;
        m->nodes[m->nn++] = n;
        return true;
    }
    return false;
}

/* A constant float [rows, H] table. */
static bool table_h(const ox_value *v, int64_t h, ox_dtype dt)
{
    const ox_tensor *t = ox__fuse_const(v);
    return t && t->rank == 2 && t->dims[1] == h && t->dtype == dt && t->dims[0] > 0;
}

/* Unsqueeze axes (attribute, or a constant input from opset 13). */
static int unsq_axes(const ox_node *u, int64_t *ax)
{
    if (u->n_inputs >= 2)
        return ox__pass_const_ints(u->inputs[1], ax, 4);
    const int64_t *p;
    int n = ox_node_attr_ints(u, "axes", &p);
    for (int i = 0; i < n && i < 4; i++)
        ax[i] = p[i];
    return n > 4 ? -1 : n;
}

/* v is dim 1 of ids: [Cast](Gather(Shape(ids), 1)) or the static dim. */
static bool is_seq_len(const ox_graph *g, const ox_value *v, const ox_value *ids)
{
    int64_t k;
    if (ox__pass_const_ints(v, &k, 1) == 1)
        return ids->type && ids->type->rank == 2 && ids->type->dims[1].value == k && k > 0;
    ox_node *c = ox__fuse_prod(g, v, "Cast");
    if (c && c->n_inputs == 1)
        v = c->inputs[0];
    ox_node *ga = ox__fuse_prod(g, v, "Gather");
    ox_node *sh = ga && ga->n_inputs == 2 ? ox__fuse_prod(g, ga->inputs[0], "Shape") : NULL;
    return sh && sh->n_inputs == 1 && sh->inputs[0] == ids &&
           ox_node_attr_i(sh, "start", 0) == 0 && !ox_node_attr(sh, "end") &&
           ox__pass_const_ints(ga->inputs[1], &k, 2) == 1 && k == 1 &&
           !ox__fuse_const(ga->inputs[1])->rank;
}

/* pos holds 0..S-1 as [1, S] for ids [B, S]. */
static bool is_positions(const ox_graph *g, const ox_value *pos, const ox_value *ids)
{
    const ox_tensor *t = ox__fuse_const(pos);
    if (t) {
        if (t->rank != 2 || t->dims[0] != 1 || !ids->type || ids->type->rank != 2 ||
            ids->type->dims[1].value != t->dims[1])
            return false;
        for (int64_t i = 0; i < t->numel; i++)
            if (ox_tensor_get_i64(t, i) != i)
                return false;
        return true;
    }
    ox_node *u = ox__fuse_prod(g, pos, "Unsqueeze");
    int64_t ax[4], v;
    if (!u || unsq_axes(u, ax) != 1 || ax[0] != 0)
        return false;
    ox_node *r = ox__fuse_prod(g, u->inputs[0], "Range");
    return r && r->n_inputs == 3 && ox__pass_const_ints(r->inputs[0], &v, 1) == 1 && v == 0 &&
           ox__pass_const_ints(r->inputs[2], &v, 1) == 1 && v == 1 &&
           is_seq_len(g, r->inputs[1], ids);
}

/* Integer ids of rank 2, not constant. */
static bool ids_ok(const ox_value *v)
{
    ox_dtype dt = ox__pass_elem(v);
    return v && !ox__fuse_const(v) && ox__fuse_rank(v) == 2 &&
           (dt == OX_DT_INT64 || dt == OX_DT_INT32);
}

/* v as int32: itself, an existing Cast of it, or a new shared Cast. */
static ox_value *as_i32(ox_pass_ctx *c, ox_graph *g, ox_value *v)
{
    if (ox__pass_elem(v) == OX_DT_INT32)
        return v;
    for (int i = 0; i < v->n_uses; i++) {
        ox_node *n = v->uses[i].node;
        if (v->uses[i].input == 0 && n->graph == g && ox_node_is(n, "Cast") &&
            ox_node_is_default_domain(n) && !ox__pass_gone(n) &&
            ox_node_attr_i(n, "to", 0) == OX_DT_INT32 && n->n_outputs == 1 && n->outputs[0])
            return n->outputs[0];
    }
    char hint[256];
    snprintf(hint, sizeof hint, "%s_int32", v->name ? v->name : "ids");
    ox_value *o = ox_graph_new_value(g, hint);
    ox_node *n = o ? ox__fuse_node(c, g, "Cast", "", 1, &v, o) : NULL;
    return n && ox_node_set_attr_i(n, "to", OX_DT_INT32) ? o : NULL;
}

ox_status ox__fuse_embed_layernorm(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    for (int i = 0; i < g->n_nodes && ox__pass_may(c); i++) {
        ox_node *ln = g->nodes[i];
        if (ox__pass_gone(ln) || !ox_node_is(ln, "LayerNormalization") ||
            !ox_node_is_default_domain(ln) || ln->n_inputs < 2 || !ox__fuse_only_out0(ln))
            continue;
        ox_value *s = ln->inputs[0];
        ox_dtype dt = ox__pass_elem(s);
        int r = ox__fuse_rank(s);
        int64_t axis = ox_node_attr_i(ln, "axis", -1);
        if (r != 3 || (axis != -1 && axis != 2) || !s->type || s->type->dims[2].value <= 0 ||
            (dt != OX_DT_FLOAT && dt != OX_DT_FLOAT16) || !ox__fuse_single(s))
            continue;
        int64_t h = s->type->dims[2].value;
        const ox_tensor *gt = ox__fuse_const(ln->inputs[1]);
        ox_value *beta = ox__fuse_in(ln, 2);
        const ox_tensor *bt = beta ? ox__fuse_const(beta) : NULL;
        if (!gt || gt->rank != 1 || gt->dims[0] != h || gt->dtype != dt ||
            (beta && (!bt || bt->rank != 1 || bt->dims[0] != h || bt->dtype != dt)))
            continue;
        embed_match m = {0};
        if (!add_leaves(g, s, &m, true) || m.ng < 2 || m.nn != 2 * m.ng - 1)
            continue;
        /* Find the position Gather: indices 0..S-1 of another Gather's ids. */
        int pi = -1;
        bool ok = true;
        for (int k = 0; k < m.ng; k++)
            ok &= table_h(m.gathers[k]->inputs[0], h, dt);
        for (int k = 0; ok && k < m.ng && pi < 0; k++)
            for (int q = 0; q < m.ng && pi < 0; q++)
                if (q != k && ids_ok(m.gathers[q]->inputs[1]) &&
                    is_positions(g, m.gathers[k]->inputs[1], m.gathers[q]->inputs[1]))
                    pi = k;
        if (!ok || pi < 0)
            continue;
        /* The other one or two: word and segment (the sum is symmetric,
         * so which is which does not matter); same ids shape. */
        ox_node *other[2] = {NULL, NULL};
        int no = 0;
        for (int k = 0; k < m.ng; k++)
            if (k != pi)
                other[no++] = m.gathers[k];
        if (!ids_ok(other[0]->inputs[1]) || (other[1] && !ids_ok(other[1]->inputs[1])) ||
            (other[1] && !ox_type_equal(other[0]->inputs[1]->type, other[1]->inputs[1]->type)))
            continue;
        m.nodes[m.nn++] = ln;
        ox_value *y = ln->outputs[0];
        if (!ox__fuse_internal(m.nodes, m.nn, y))
            continue;
        ox_value *ids = as_i32(c, g, other[0]->inputs[1]);
        ox_value *seg = other[1] ? as_i32(c, g, other[1]->inputs[1]) : NULL;
        ox_value *bv = beta;
        if (!beta) {
            double *z = calloc((size_t)h, sizeof *z);
            bv = z ? ox__fuse_new_init(g, "embed_ln_beta", dt, 1, &h, z) : NULL;
            free(z);
        }
        if (!ids || (other[1] && !seg) || !bv)
            return ox_errorf(err, OX_ENOMEM, "out of memory");
        ox_value *in[7] = {ids,
                           seg,
                           other[0]->inputs[0],
                           m.gathers[pi]->inputs[0],
                           other[1] ? other[1]->inputs[0] : NULL,
                           ln->inputs[1],
                           bv};
        float eps = ox_node_attr_f(ln, "epsilon", 1e-5f);
        char site[256];
        ox__fuse_site_name(ln, "EmbedLayerNormalization", site, sizeof site);
        ox__fuse_drop_all(c, m.nodes, m.nn);
        /* ONNX Runtime's shape inference wants output 1 (mask_index) to
         * exist; without a mask it holds zeros and nothing reads it. */
        char mname[300];
        snprintf(mname, sizeof mname, "%s_mask_index", site);
        ox_value *mi = ox_graph_new_value(g, mname);
        char *name = mi ? ox_model_unique_node_name(c->m, site) : NULL;
        ox_value *outs[2] = {y, mi};
        ox_node *f = name ? ox_node_new(g, "EmbedLayerNormalization", "com.microsoft", name, 7, in,
                                        2, outs)
                          : NULL;
        free(name);
        if (!f || !ox_node_set_attr_f(f, "epsilon", eps))
            return ox_errorf(err, OX_ENOMEM, "out of memory");
        ox_infer_forget_value(y);
        if (ox_model_opset(c->m, "com.microsoft") < 1)
            ox_model_set_opset(c->m, "com.microsoft", 1);
        ox__pass_did(c);
    }
    return OX_OK;
}
