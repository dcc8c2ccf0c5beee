/* Reshape of a runtime shape: Reshape(X, Concat(..., Unsqueeze(Gather(
 * Shape(X), i)), ...)) copies dim i of X into position i, which a constant 0
 * says as well (allowzero = 0), so the shape becomes a constant and the
 * Shape/Gather/Unsqueeze/Concat chain dies (ONNX Runtime's ReshapeFusion;
 * it works with a dynamic batch, where fold_shape_chains needs a static one). */
#include <stdlib.h>
#include <string.h>

#include "passes/fuse_util.h"

/* Whether v (1-D, one element) is dim `pos` of x read at run time:
 * Gather(Shape(x), [pos]) or Unsqueeze(Gather(Shape(x), pos), [0]). */
static bool copies_dim(const ox_graph *g, const ox_value *v, const ox_value *x, int64_t pos)
{
    int64_t a[OX_MAX_RANK], idx[2];
    ox_node *u = ox__fuse_prod(g, v, "Unsqueeze");
    const ox_value *gv = v;
    if (u) {
        int na;
        const int64_t *p;
        if (u->n_inputs > 1)
            na = ox__pass_const_ints(u->inputs[1], a, OX_MAX_RANK);
        else if ((na = ox_node_attr_ints(u, "axes", &p)) == 1)
            a[0] = p[0];
        if (na != 1 || a[0] != 0)
            return false;
        gv = u->inputs[0];
    }
    ox_node *ga = ox__fuse_prod(g, gv, "Gather");
    if (!ga || ga->n_inputs != 2 || ox_node_attr_i(ga, "axis", 0) != 0)
        return false;
    const ox_tensor *it = ox__fuse_const(ga->inputs[1]);
    /* A scalar index needs the Unsqueeze, a one-element list must not have it. */
    if (!it || it->numel != 1 || it->rank != (u ? 0 : 1) ||
        ox__pass_const_ints(ga->inputs[1], idx, 1) != 1)
        return false;
    int r = ox__fuse_rank(x);
    if (idx[0] < 0 && r > 0)
        idx[0] += r;
    ox_node *sh = ox__fuse_prod(g, ga->inputs[0], "Shape");
    return sh && sh->inputs[0] == x && idx[0] == pos && !ox_node_attr(sh, "start") &&
           !ox_node_attr(sh, "end");
}

static ox_status pass_reshape_shape(ox_pass_ctx *c, ox_graph *g, ox_error *err)
{
    for (int i = 0; i < g->n_nodes && ox__pass_may(c); i++) {
        ox_node *r = g->nodes[i];
        if (!ox_node_is(r, "Reshape") || r->n_inputs != 2 || !r->inputs[0] || !r->inputs[1] ||
            ox_node_attr_i(r, "allowzero", 0))
            continue;
        ox_node *cat = ox__fuse_prod(g, r->inputs[1], "Concat");
        if (!cat || ox_node_attr_i(cat, "axis", 0) != 0 || cat->n_inputs < 1)
            continue;
        int64_t shape[OX_MAX_RANK];
        int pos = 0; /* position in the shape of the current part */
        bool ok = true, any = false;
        for (int k = 0; k < cat->n_inputs && ok; k++) {
            const ox_tensor *t = ox__fuse_const(cat->inputs[k]);
            if (t && t->rank == 1 && ox_dtype_is_int(t->dtype) && t->numel <= OX_MAX_RANK - pos) {
                for (int64_t q = 0; q < t->numel; q++)
                    shape[pos++] = ox_tensor_get_i64(t, q);
            } else if (pos < OX_MAX_RANK && copies_dim(g, cat->inputs[k], r->inputs[0], pos)) {
                shape[pos++] = 0;
                any = true;
            } else {
                ok = false;
            }
        }
        if (!ok || !any)
            continue;
        ox_value *sv = ox__pass_new_init(g, "shape", ox__pass_i64_tensor(pos, shape));
        if (!sv)
            return ox_errorf(err, OX_ENOMEM, "out of memory");
        ox__pass_set_input(c, r, 1, sv);
        ox__pass_did(c);
    }
    return OX_OK;
}

const ox_pass ox__passes_fuse_reshape[] = {
    {"fuse_reshape_shape",
     "a Reshape whose shape copies dims of its input at run time gets a constant shape (0s)",
     OX_PASS_FUSION, OX_TARGET_ONNX, OX_LEVEL_BASIC, true, pass_reshape_shape},
    {0},
};
