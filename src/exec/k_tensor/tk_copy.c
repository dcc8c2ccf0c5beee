/* Kernels that rearrange elements without looking at their values:
 * Transpose, Concat, Split, Slice, Tile, Expand, Pad, DepthToSpace,
 * SpaceToDepth, Trilu, ReverseSequence, Compress. Most reduce to one call
 * of the strided copy engine (ox_tk_copy_nd) with suitable strides. */
#include "tk_util.h"

#include <stdlib.h>
#include <string.h>

ox_status ox_tk_transpose(ox_kernel_ctx *c)
{
    const ox_tensor *x;
    ox_status st = ox_tk_need(c, 0, &x);
    if (st)
        return st;
    int r = x->rank;
    int64_t perm[OX_MAX_RANK];
    const int64_t *p;
    int n = ox_node_attr_ints(c->node, "perm", &p);
    if (n < 0) {
        for (int i = 0; i < r; i++)
            perm[i] = r - 1 - i;
    } else {
        if (n != r)
            return ox_errorf(c->err, OX_EINVAL, "Transpose: perm has %d entries for rank %d",
                             n, r);
        bool seen[OX_MAX_RANK] = {false};
        for (int i = 0; i < r; i++) {
            int a;
            if ((st = ox_tk_axis(c, p[i], r, &a)))
                return st;
            if (seen[a])
                return ox_errorf(c->err, OX_EINVAL, "Transpose: perm repeats axis %d", a);
            seen[a] = true;
            perm[i] = a;
        }
    }
    int64_t od[OX_MAX_RANK], xs[OX_MAX_RANK], ss[OX_MAX_RANK], ds[OX_MAX_RANK];
    ox_tk_strides(r, x->dims, xs);
    for (int i = 0; i < r; i++) {
        od[i] = x->dims[perm[i]];
        ss[i] = xs[perm[i]];
    }
    ox_tensor *y;
    if ((st = ox_tk_out(c, 0, x->dtype, r, od, &y)))
        return st;
    ox_tk_strides(r, od, ds);
    ox_tk_copy_nd(y, 0, ds, x, 0, ss, r, od);
    return OX_OK;
}

ox_status ox_tk_concat(ox_kernel_ctx *c)
{
    const ox_tensor *x0;
    ox_status st = ox_tk_need(c, 0, &x0);
    if (st)
        return st;
    int r = x0->rank, axis;
    if ((st = ox_tk_axis(c, ox_node_attr_i(c->node, "axis", 1), r, &axis)))
        return st;
    int64_t od[OX_MAX_RANK];
    memcpy(od, x0->dims, sizeof(int64_t) * (size_t)r);
    od[axis] = 0;
    for (int i = 0; i < c->n_in; i++) {
        const ox_tensor *x;
        if ((st = ox_tk_need(c, i, &x)))
            return st;
        if (x->rank != r || x->dtype != x0->dtype)
            return ox_errorf(c->err, OX_ESHAPE, "Concat: input %d differs in rank or type", i);
        for (int k = 0; k < r; k++)
            if (k != axis && x->dims[k] != x0->dims[k])
                return ox_errorf(c->err, OX_ESHAPE, "Concat: input %d differs in dim %d", i, k);
        od[axis] += x->dims[axis];
    }
    ox_tensor *y;
    if ((st = ox_tk_out(c, 0, x0->dtype, r, od, &y)))
        return st;
    int64_t ys[OX_MAX_RANK], xs[OX_MAX_RANK];
    ox_tk_strides(r, od, ys);
    int64_t pos = 0;
    for (int i = 0; i < c->n_in; i++) {
        const ox_tensor *x = ox_kernel_in(c, i);
        ox_tk_strides(r, x->dims, xs);
        ox_tk_copy_nd(y, pos * ys[axis], ys, x, 0, xs, r, x->dims);
        pos += x->dims[axis];
    }
    return OX_OK;
}

ox_status ox_tk_split(ox_kernel_ctx *c)
{
    const ox_tensor *x;
    ox_status st = ox_tk_need(c, 0, &x);
    if (st)
        return st;
    int r = x->rank, axis;
    if ((st = ox_tk_axis(c, ox_node_attr_i(c->node, "axis", 0), r, &axis)))
        return st;
    int nout = c->n_out;
    int64_t *sp = NULL, nsp = 0;
    const ox_tensor *st_in = c->n_in > 1 ? ox_kernel_in(c, 1) : NULL;
    if (st_in && st_in->numel > 0) {
        if ((st = ox_tk_read_ints_alloc(c, st_in, "split", &sp, &nsp)))
            return st;
    } else {
        const int64_t *a;
        int k = ox_node_attr_ints(c->node, "split", &a);
        if (k >= 0) {
            sp = malloc(sizeof(int64_t) * (size_t)(k ? k : 1));
            if (!sp)
                return ox_errorf(c->err, OX_ENOMEM, "Split: out of memory");
            memcpy(sp, a, sizeof(int64_t) * (size_t)k);
            nsp = k;
        }
    }
    int64_t dim = x->dims[axis];
    if (sp) {
        int64_t sum = 0;
        for (int64_t i = 0; i < nsp; i++) {
            if (sp[i] < 0)
                break;
            sum += sp[i];
        }
        if (nsp != nout || sum != dim) {
            free(sp);
            return ox_errorf(c->err, OX_ESHAPE, "Split: split sizes do not match outputs/dim");
        }
    } else {
        int64_t parts = ox_node_attr_i(c->node, "num_outputs", nout);
        if (parts != nout || nout <= 0)
            return ox_errorf(c->err, OX_EINVAL, "Split: num_outputs does not match outputs");
        sp = malloc(sizeof(int64_t) * (size_t)nout);
        if (!sp)
            return ox_errorf(c->err, OX_ENOMEM, "Split: out of memory");
        /* Opset 18: chunks of ceil(dim/n), the last one smaller. */
        int64_t chunk = (dim + nout - 1) / nout, left = dim;
        for (int i = 0; i < nout; i++) {
            sp[i] = chunk < left ? chunk : left;
            left -= sp[i];
        }
    }
    int64_t xs[OX_MAX_RANK], od[OX_MAX_RANK], ys[OX_MAX_RANK];
    ox_tk_strides(r, x->dims, xs);
    int64_t pos = 0;
    for (int i = 0; i < nout; i++) {
        memcpy(od, x->dims, sizeof(int64_t) * (size_t)r);
        od[axis] = sp[i];
        if (c->node->outputs && !c->node->outputs[i]) {
            pos += sp[i];
            continue;
        }
        ox_tensor *y;
        if ((st = ox_tk_out(c, i, x->dtype, r, od, &y))) {
            free(sp);
            return st;
        }
        ox_tk_strides(r, od, ys);
        ox_tk_copy_nd(y, 0, ys, x, pos * xs[axis], xs, r, od);
        pos += sp[i];
    }
    free(sp);
    return OX_OK;
}

ox_status ox_tk_slice(ox_kernel_ctx *c)
{
    const ox_tensor *x;
    ox_status st = ox_tk_need(c, 0, &x);
    if (st)
        return st;
    int r = x->rank;
    int64_t *starts = NULL, *ends = NULL, *axes = NULL, *steps = NULL;
    int64_t ns = 0, ne = 0, na = -1, nst = -1;
    if (c->opset < 10) {
        const int64_t *a;
        int k;
        int64_t **dst[3] = {&starts, &ends, &axes};
        int64_t *cnt[3] = {&ns, &ne, &na};
        const char *names[3] = {"starts", "ends", "axes"};
        for (int j = 0; j < 3; j++) {
            k = ox_node_attr_ints(c->node, names[j], &a);
            if (k < 0)
                continue;
            *dst[j] = malloc(sizeof(int64_t) * (size_t)(k ? k : 1));
            if (!*dst[j]) {
                st = ox_errorf(c->err, OX_ENOMEM, "Slice: out of memory");
                goto out;
            }
            memcpy(*dst[j], a, sizeof(int64_t) * (size_t)k);
            *cnt[j] = k;
        }
        if (!starts || !ends) {
            st = ox_errorf(c->err, OX_EINVAL, "Slice: starts and ends are required");
            goto out;
        }
    } else {
        const ox_tensor *t;
        if ((st = ox_tk_need(c, 1, &t)) ||
            (st = ox_tk_read_ints_alloc(c, t, "starts", &starts, &ns)) ||
            (st = ox_tk_need(c, 2, &t)) ||
            (st = ox_tk_read_ints_alloc(c, t, "ends", &ends, &ne)))
            goto out;
        if ((t = c->n_in > 3 ? ox_kernel_in(c, 3) : NULL) &&
            (st = ox_tk_read_ints_alloc(c, t, "axes", &axes, &na)))
            goto out;
        if ((t = c->n_in > 4 ? ox_kernel_in(c, 4) : NULL) &&
            (st = ox_tk_read_ints_alloc(c, t, "steps", &steps, &nst)))
            goto out;
    }
    if (ns != ne || (axes && na != ns) || (steps && nst != ns) || ns > r) {
        st = ox_errorf(c->err, OX_EINVAL, "Slice: starts/ends/axes/steps lengths differ");
        goto out;
    }
    int64_t xs[OX_MAX_RANK], od[OX_MAX_RANK], ss[OX_MAX_RANK], ds[OX_MAX_RANK];
    ox_tk_strides(r, x->dims, xs);
    int64_t off = 0;
    bool done[OX_MAX_RANK] = {false};
    for (int i = 0; i < r; i++) {
        od[i] = x->dims[i];
        ss[i] = xs[i];
    }
    for (int64_t k = 0; k < ns; k++) {
        int a;
        if ((st = ox_tk_axis(c, axes ? axes[k] : k, r, &a)))
            goto out;
        if (done[a]) {
            st = ox_errorf(c->err, OX_EINVAL, "Slice: axis %d repeated", a);
            goto out;
        }
        done[a] = true;
        int64_t d = x->dims[a], step = steps ? steps[k] : 1;
        if (step == 0) {
            st = ox_errorf(c->err, OX_EINVAL, "Slice: step is zero");
            goto out;
        }
        int64_t s = starts[k], e = ends[k];
        if (s < 0)
            s = s < -d ? 0 : s + d;  /* written to avoid overflow at INT64_MIN */
        if (e < 0)
            e = e < -d ? -1 : e + d;
        int64_t len;
        /* Lengths as (span - 1) / |step| + 1 so that extreme steps such as
         * INT64_MIN cannot overflow. */
        if (step > 0) {
            s = s > d ? d : s;
            e = e < 0 ? 0 : (e > d ? d : e);
            len = e > s ? (e - s - 1) / step + 1 : 0;
        } else {
            s = s > d - 1 ? d - 1 : s;
            e = e > d - 1 ? d - 1 : e;
            int64_t mstep = step == INT64_MIN ? INT64_MAX : -step;
            len = s > e ? (s - e - 1) / mstep + 1 : 0;
        }
        od[a] = len;
        ss[a] = xs[a] * step;
        if (len > 0)
            off += s * xs[a];
    }
    ox_tensor *y;
    if ((st = ox_tk_out(c, 0, x->dtype, r, od, &y)))
        goto out;
    ox_tk_strides(r, od, ds);
    ox_tk_copy_nd(y, 0, ds, x, off, ss, r, od);
out:
    free(starts);
    free(ends);
    free(axes);
    free(steps);
    return st;
}

ox_status ox_tk_tile(ox_kernel_ctx *c)
{
    const ox_tensor *x, *rt;
    ox_status st = ox_tk_need(c, 0, &x);
    if (st || (st = ox_tk_need(c, 1, &rt)))
        return st;
    int r = x->rank;
    int64_t rep[OX_MAX_RANK];
    if (c->opset < 6) {
        /* Tile-1: scalar `tiles` along scalar `axis` (third input). */
        const ox_tensor *at;
        if ((st = ox_tk_need(c, 2, &at)))
            return st;
        int a;
        if (rt->numel != 1 || at->numel != 1 ||
            (st = ox_tk_axis(c, ox_tk_i64(at, 0), r, &a)))
            return st ? st : ox_errorf(c->err, OX_EINVAL, "Tile: tiles/axis must be scalars");
        for (int i = 0; i < r; i++)
            rep[i] = 1;
        rep[a] = ox_tk_i64(rt, 0);
    } else {
        int n;
        if ((st = ox_tk_read_ints(c, rt, "repeats", rep, OX_MAX_RANK, &n)))
            return st;
        if (n != r)
            return ox_errorf(c->err, OX_ESHAPE, "Tile: %d repeats for rank %d", n, r);
    }
    int64_t od[OX_MAX_RANK], xs[OX_MAX_RANK], ys[OX_MAX_RANK];
    for (int i = 0; i < r; i++) {
        if (rep[i] < 0 || (rep[i] > 0 && x->dims[i] > INT64_MAX / rep[i]))
            return ox_errorf(c->err, OX_EINVAL, "Tile: bad repeat %lld", (long long)rep[i]);
        od[i] = x->dims[i] * rep[i];
    }
    ox_tensor *y;
    if ((st = ox_tk_out(c, 0, x->dtype, r, od, &y)))
        return st;
    if (y->numel == 0)
        return OX_OK;
    ox_tk_strides(r, x->dims, xs);
    ox_tk_strides(r, od, ys);
    if (2 * r <= OX_MAX_RANK) {
        /* View the output as [rep0, d0, rep1, d1, ...]; the repeat dims
         * read with stride 0. */
        int64_t vd[OX_MAX_RANK], vs[OX_MAX_RANK], vy[OX_MAX_RANK];
        for (int i = 0; i < r; i++) {
            vd[2 * i] = rep[i];
            vd[2 * i + 1] = x->dims[i];
            vs[2 * i] = 0;
            vs[2 * i + 1] = xs[i];
            vy[2 * i] = ys[i] * x->dims[i];
            vy[2 * i + 1] = ys[i];
        }
        ox_tk_copy_nd(y, 0, vy, x, 0, vs, 2 * r, vd);
        return OX_OK;
    }
    /* Very high rank: one copy per tile. */
    int64_t t[OX_MAX_RANK] = {0};
    for (;;) {
        int64_t off = 0;
        for (int i = 0; i < r; i++)
            off += t[i] * x->dims[i] * ys[i];
        ox_tk_copy_nd(y, off, ys, x, 0, xs, r, x->dims);
        int k = r - 1;
        while (k >= 0 && ++t[k] == rep[k])
            t[k--] = 0;
        if (k < 0)
            break;
    }
    return OX_OK;
}

ox_status ox_tk_expand(ox_kernel_ctx *c)
{
    const ox_tensor *x, *s;
    int64_t shp[OX_MAX_RANK];
    int n;
    ox_status st = ox_tk_need(c, 0, &x);
    if (st || (st = ox_tk_need(c, 1, &s)) ||
        (st = ox_tk_read_ints(c, s, "shape", shp, OX_MAX_RANK, &n)))
        return st;
    int r = n > x->rank ? n : x->rank;
    int64_t od[OX_MAX_RANK], ss[OX_MAX_RANK], xs[OX_MAX_RANK], ys[OX_MAX_RANK];
    ox_tk_strides(x->rank, x->dims, xs);
    for (int i = 0; i < r; i++) {
        int xi = i - (r - x->rank), si = i - (r - n);
        int64_t xd = xi >= 0 ? x->dims[xi] : 1, sd = si >= 0 ? shp[si] : 1;
        if (xd != sd && xd != 1 && sd != 1)
            return ox_errorf(c->err, OX_ESHAPE, "Expand: dims %lld and %lld do not broadcast",
                             (long long)xd, (long long)sd);
        if (sd < 0)
            return ox_errorf(c->err, OX_ESHAPE, "Expand: negative dim");
        od[i] = xd == 1 ? sd : xd;
        ss[i] = (xi >= 0 && xd != 1) ? xs[xi] : 0;
    }
    ox_tensor *y;
    if ((st = ox_tk_out(c, 0, x->dtype, r, od, &y)))
        return st;
    ox_tk_strides(r, od, ys);
    ox_tk_copy_nd(y, 0, ys, x, 0, ss, r, od);
    return OX_OK;
}

/* Source index along an axis of length d for virtual index v (which may be
 * outside [0, d)) under a non-constant pad mode. */
static int64_t pad_map(int mode, int64_t v, int64_t d)
{
    if (mode == 1) { /* reflect */
        if (d == 1)
            return 0;
        int64_t p = 2 * (d - 1);
        v %= p;
        if (v < 0)
            v += p;
        return v < d ? v : p - v;
    }
    if (mode == 2) /* edge */
        return v < 0 ? 0 : (v >= d ? d - 1 : v);
    v %= d; /* wrap */
    return v < 0 ? v + d : v;
}

ox_status ox_tk_pad(ox_kernel_ctx *c)
{
    const ox_tensor *x;
    ox_status st = ox_tk_need(c, 0, &x);
    if (st)
        return st;
    int r = x->rank;
    int64_t pads[2 * OX_MAX_RANK], axes[OX_MAX_RANK];
    int np = 0, na = r;
    for (int i = 0; i < r; i++)
        axes[i] = i;
    const ox_tensor *cv = NULL;
    ox_tensor *cv_own = NULL;
    if (c->opset < 11) {
        const int64_t *a;
        np = ox_node_attr_ints(c->node, c->opset < 2 ? "paddings" : "pads", &a);
        if (np < 0 || np > 2 * OX_MAX_RANK)
            return ox_errorf(c->err, OX_EINVAL, "Pad: missing or bad pads attribute");
        memcpy(pads, a, sizeof(int64_t) * (size_t)np);
        if (ox_tk_is_numeric(x->dtype)) {
            cv = cv_own = ox_tensor_new(x->dtype, 0, NULL);
            if (!cv_own)
                return ox_errorf(c->err, OX_ENOMEM, "Pad: out of memory");
            ox_tensor_set_f64(cv_own, 0, ox_node_attr_f(c->node, "value", 0.0f));
        }
    } else {
        const ox_tensor *t;
        if ((st = ox_tk_need(c, 1, &t)) ||
            (st = ox_tk_read_ints(c, t, "pads", pads, 2 * OX_MAX_RANK, &np)))
            return st;
        cv = c->n_in > 2 ? ox_kernel_in(c, 2) : NULL;
        if (cv && (cv->numel < 1 || cv->dtype != x->dtype))
            cv = NULL; /* an empty constant_value means the default 0 */
        t = c->n_in > 3 ? ox_kernel_in(c, 3) : NULL;
        if (t) {
            if ((st = ox_tk_read_ints(c, t, "axes", axes, OX_MAX_RANK, &na)))
                return st;
            for (int i = 0; i < na; i++) {
                int a;
                if ((st = ox_tk_axis(c, axes[i], r, &a)))
                    return st;
                axes[i] = a;
            }
        }
    }
    if (np != 2 * na) {
        ox_tensor_free(cv_own);
        return ox_errorf(c->err, OX_EINVAL, "Pad: %d pads for %d axes", np, na);
    }
    const char *ms = ox_node_attr_s(c->node, "mode", "constant");
    int mode = !strcmp(ms, "constant") ? 0 : !strcmp(ms, "reflect") ? 1
             : !strcmp(ms, "edge") ? 2 : !strcmp(ms, "wrap") ? 3 : -1;
    if (mode < 0) {
        ox_tensor_free(cv_own);
        return ox_errorf(c->err, OX_EINVAL, "Pad: unknown mode '%s'", ms);
    }
    int64_t b[OX_MAX_RANK] = {0}, e[OX_MAX_RANK] = {0}, od[OX_MAX_RANK];
    for (int i = 0; i < np; i++) {
        if (pads[i] > ((int64_t)1 << 40) || pads[i] < -((int64_t)1 << 40)) {
            ox_tensor_free(cv_own);
            return ox_errorf(c->err, OX_EINVAL, "Pad: pad %lld out of range",
                             (long long)pads[i]);
        }
    }
    for (int i = 0; i < na; i++) {
        b[axes[i]] = pads[i];
        e[axes[i]] = pads[na + i];
    }
    for (int i = 0; i < r; i++) {
        od[i] = x->dims[i] + b[i] + e[i];
        if (od[i] < 0 || (mode && x->dims[i] == 0 && od[i] > 0)) {
            ox_tensor_free(cv_own);
            return ox_errorf(c->err, OX_ESHAPE, "Pad: invalid pads for dim %d", i);
        }
    }
    ox_tensor *y;
    if ((st = ox_tk_out(c, 0, x->dtype, r, od, &y))) {
        ox_tensor_free(cv_own);
        return st;
    }
    if (y->numel == 0) {
        ox_tensor_free(cv_own);
        return OX_OK;
    }
    int64_t xs[OX_MAX_RANK], ys[OX_MAX_RANK], cd[OX_MAX_RANK];
    ox_tk_strides(r, x->dims, xs);
    ox_tk_strides(r, od, ys);
    if (mode == 0) {
        if (!cv) {
            cv = cv_own = ox_tensor_new(x->dtype, 0, NULL);
            if (!cv_own)
                return ox_errorf(c->err, OX_ENOMEM, "Pad: out of memory");
        }
        ox_tk_fill(y, 0, y->numel, cv, 0);
    }
    ox_tensor_free(cv_own);
    /* The part of x that survives (negative pads crop). */
    int64_t yo = 0, xo = 0;
    bool empty = false;
    for (int i = 0; i < r; i++) {
        int64_t lo = b[i] > 0 ? b[i] : 0, xlo = b[i] < 0 ? -b[i] : 0;
        int64_t hi = b[i] + x->dims[i] < od[i] ? b[i] + x->dims[i] : od[i];
        cd[i] = hi - lo;
        if (cd[i] <= 0)
            empty = true;
        yo += lo * ys[i];
        xo += xlo * xs[i];
    }
    if (!empty)
        ox_tk_copy_nd(y, yo, ys, x, xo, xs, r, cd);
    if (mode == 0)
        return OX_OK;
    if (empty)
        return ox_errorf(c->err, OX_ESHAPE, "Pad: nothing left to reflect after cropping");
    /* Fill the borders axis by axis from the output itself: each pass copies
     * whole hyperslabs, so corners are right once every axis is done. */
    for (int a = 0; a < r; a++) {
        if (b[a] <= 0 && e[a] <= 0)
            continue;
        int64_t slab[OX_MAX_RANK];
        memcpy(slab, od, sizeof(int64_t) * (size_t)r);
        slab[a] = 1;
        int64_t lo = b[a] > 0 ? b[a] : 0, hi = lo + cd[a];
        for (int64_t j = 0; j < od[a]; j++) {
            if (j >= lo && j < hi)
                continue;
            int64_t src = pad_map(mode, j - b[a], x->dims[a]) + b[a];
            if (src < lo)
                src = lo; /* source cropped away: nearest surviving row */
            if (src >= hi)
                src = hi - 1;
            ox_tk_copy_nd(y, j * ys[a], ys, y, src * ys[a], ys, r, slab);
        }
    }
    return OX_OK;
}

/* Shared by DepthToSpace and SpaceToDepth: reads the 4-D input through a
 * 6-D view with the given source strides into the contiguous output. */
static ox_status space_depth(ox_kernel_ctx *c, bool to_space)
{
    const ox_tensor *x;
    ox_status st = ox_tk_need(c, 0, &x);
    if (st)
        return st;
    int64_t bs = ox_node_attr_i(c->node, "blocksize", 0);
    if (x->rank != 4 || bs <= 0 || bs > (1 << 20))
        return ox_errorf(c->err, OX_EINVAL, "%s: needs a 4-D input and blocksize > 0",
                         ox_tk_op(c));
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
    int64_t od[4], vd[6], vs[6], vy[6];
    if (to_space) {
        if (C % (bs * bs))
            return ox_errorf(c->err, OX_ESHAPE, "DepthToSpace: channels not divisible");
        int64_t Cp = C / (bs * bs);
        bool crd = !strcmp(ox_node_attr_s(c->node, "mode", "DCR"), "CRD");
        int64_t sC = crd ? bs * bs * H * W : H * W;
        int64_t sb1 = crd ? bs * H * W : bs * Cp * H * W;
        int64_t sb2 = crd ? H * W : Cp * H * W;
        int64_t d6[6] = {N, Cp, H, bs, W, bs};
        int64_t s6[6] = {C * H * W, sC, W, sb1, 1, sb2};
        memcpy(vd, d6, sizeof d6);
        memcpy(vs, s6, sizeof s6);
        od[0] = N, od[1] = Cp, od[2] = H * bs, od[3] = W * bs;
    } else {
        if (H % bs || W % bs)
            return ox_errorf(c->err, OX_ESHAPE, "SpaceToDepth: spatial dims not divisible");
        int64_t Hp = H / bs, Wp = W / bs;
        int64_t d6[6] = {N, bs, bs, C, Hp, Wp};
        int64_t s6[6] = {C * H * W, W, 1, H * W, bs * W, bs};
        memcpy(vd, d6, sizeof d6);
        memcpy(vs, s6, sizeof s6);
        od[0] = N, od[1] = C * bs * bs, od[2] = Hp, od[3] = Wp;
    }
    ox_tensor *y;
    if ((st = ox_tk_out(c, 0, x->dtype, 4, od, &y)))
        return st;
    ox_tk_strides(6, vd, vy);
    ox_tk_copy_nd(y, 0, vy, x, 0, vs, 6, vd);
    return OX_OK;
}

ox_status ox_tk_depth_to_space(ox_kernel_ctx *c)
{
    return space_depth(c, true);
}

ox_status ox_tk_space_to_depth(ox_kernel_ctx *c)
{
    return space_depth(c, false);
}

ox_status ox_tk_trilu(ox_kernel_ctx *c)
{
    const ox_tensor *x;
    ox_status st = ox_tk_need(c, 0, &x);
    if (st)
        return st;
    if (x->rank < 2)
        return ox_errorf(c->err, OX_ESHAPE, "Trilu: input rank must be >= 2");
    const ox_tensor *kt = c->n_in > 1 ? ox_kernel_in(c, 1) : NULL;
    int64_t k = kt && kt->numel > 0 ? ox_tk_i64(kt, 0) : 0;
    if (kt && !ox_dtype_is_int(kt->dtype))
        return ox_errorf(c->err, OX_EINVAL, "Trilu: k must be an integer");
    /* Clamped so i + k cannot overflow; beyond the matrix it changes nothing. */
    const int64_t lim_k = (int64_t)1 << 62;
    k = k > lim_k ? lim_k : (k < -lim_k ? -lim_k : k);
    bool upper = ox_node_attr_i(c->node, "upper", 1) != 0;
    ox_tensor *y;
    if ((st = ox_tk_out(c, 0, x->dtype, x->rank, x->dims, &y)))
        return st;
    ox_tk_copy(y, 0, x, 0, x->numel);
    ox_tensor *zero = ox_tensor_new(x->dtype, 0, NULL);
    if (!zero)
        return ox_errorf(c->err, OX_ENOMEM, "Trilu: out of memory");
    int64_t R = x->dims[x->rank - 2], C = x->dims[x->rank - 1];
    int64_t mats = (R > 0 && C > 0) ? x->numel / (R * C) : 0;
    for (int64_t m = 0; m < mats; m++) {
        for (int64_t i = 0; i < R; i++) {
            int64_t row = m * R * C + i * C;
            /* upper keeps j >= i + k; lower keeps j <= i + k */
            int64_t lim = i + k;
            if (upper) {
                int64_t nz = lim < 0 ? 0 : (lim > C ? C : lim);
                ox_tk_fill(y, row, nz, zero, 0);
            } else {
                int64_t from = lim + 1 < 0 ? 0 : (lim + 1 > C ? C : lim + 1);
                ox_tk_fill(y, row + from, C - from, zero, 0);
            }
        }
    }
    ox_tensor_free(zero);
    return OX_OK;
}

ox_status ox_tk_reverse_sequence(ox_kernel_ctx *c)
{
    const ox_tensor *x, *lt;
    ox_status st = ox_tk_need(c, 0, &x);
    if (st || (st = ox_tk_need(c, 1, &lt)))
        return st;
    int r = x->rank, ba, ta;
    if (r < 2 || (st = ox_tk_axis(c, ox_node_attr_i(c->node, "batch_axis", 1), r, &ba)) ||
        (st = ox_tk_axis(c, ox_node_attr_i(c->node, "time_axis", 0), r, &ta)) || ba == ta)
        return st ? st : ox_errorf(c->err, OX_EINVAL, "ReverseSequence: bad axes");
    int64_t B = x->dims[ba], T = x->dims[ta];
    if (lt->numel != B || !ox_dtype_is_int(lt->dtype))
        return ox_errorf(c->err, OX_EINVAL, "ReverseSequence: sequence_lens must have %lld ints",
                         (long long)B);
    ox_tensor *y;
    if ((st = ox_tk_out(c, 0, x->dtype, r, x->dims, &y)))
        return st;
    ox_tk_copy(y, 0, x, 0, x->numel);
    int64_t xs[OX_MAX_RANK], slab[OX_MAX_RANK];
    ox_tk_strides(r, x->dims, xs);
    memcpy(slab, x->dims, sizeof(int64_t) * (size_t)r);
    slab[ba] = slab[ta] = 1;
    for (int64_t b = 0; b < B; b++) {
        int64_t len = ox_tk_i64(lt, b);
        if (len < 0 || len > T)
            return ox_errorf(c->err, OX_ERANGE, "ReverseSequence: length %lld out of range",
                             (long long)len);
        for (int64_t t = 0; t < len; t++)
            ox_tk_copy_nd(y, b * xs[ba] + t * xs[ta], xs, x,
                          b * xs[ba] + (len - 1 - t) * xs[ta], xs, r, slab);
    }
    return OX_OK;
}

ox_status ox_tk_compress(ox_kernel_ctx *c)
{
    const ox_tensor *x, *cond;
    ox_status st = ox_tk_need(c, 0, &x);
    if (st || (st = ox_tk_need(c, 1, &cond)))
        return st;
    if (cond->rank != 1)
        return ox_errorf(c->err, OX_EINVAL, "Compress: condition must be 1-D");
    const ox_attr *aa = ox_node_attr(c->node, "axis");
    int r, axis = 0;
    int64_t dims[OX_MAX_RANK];
    if (aa) {
        r = x->rank;
        if ((st = ox_tk_axis(c, aa->i, r, &axis)))
            return st;
        memcpy(dims, x->dims, sizeof(int64_t) * (size_t)r);
    } else { /* no axis: work on the flattened input */
        r = 1;
        dims[0] = x->numel;
    }
    int64_t n = cond->numel < dims[axis] ? cond->numel : dims[axis], cnt = 0;
    for (int64_t i = 0; i < n; i++)
        cnt += ox_tensor_get_f64(cond, i) != 0;
    int64_t od[OX_MAX_RANK], xs[OX_MAX_RANK], ys[OX_MAX_RANK], slab[OX_MAX_RANK];
    memcpy(od, dims, sizeof(int64_t) * (size_t)r);
    od[axis] = cnt;
    ox_tensor *y;
    if ((st = ox_tk_out(c, 0, x->dtype, r, od, &y)))
        return st;
    ox_tk_strides(r, dims, xs);
    ox_tk_strides(r, od, ys);
    memcpy(slab, dims, sizeof(int64_t) * (size_t)r);
    slab[axis] = 1;
    for (int64_t i = 0, j = 0; i < n; i++) {
        if (ox_tensor_get_f64(cond, i) == 0)
            continue;
        ox_tk_copy_nd(y, j * ys[axis], ys, x, i * xs[axis], xs, r, slab);
        j++;
    }
    return OX_OK;
}
