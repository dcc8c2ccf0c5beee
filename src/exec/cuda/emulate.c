/* A CPU stand-in for the CUDA device, for tests only (ONNXSCOPE_CUDA_EMULATE=1;
 * docs/EXECUTOR.md "CUDA backend"). Everything of a CUDA run except the CUDA
 * kernels themselves runs as on a GPU: the placement plan, the device arena
 * laid out by the device memory plan (host memory here), weights uploaded
 * once, uploads before GPU nodes, downloads before CPU nodes and for the
 * graph outputs, the per-node residency the executor keeps. A GPU node runs
 * our CPU kernel on copies of its inputs taken out of the arena and writes
 * its outputs back into their slots, after checking they have the planned
 * shape. The arena starts poisoned (NaN bytes) and a slot is poisoned again
 * when its value dies, so a wrong lifetime or a missing upload shows as a
 * wrong result instead of passing by luck.
 *
 * The backend's other paths have host equivalents here, so their
 * bookkeeping is exercised on any machine: fp16 plans round the GEMM
 * operands to float16 (weights once, on upload, with the same conversion
 * as the real upload) and compute in float32; a GEMM epilogue head runs
 * its fused Add/activation nodes itself and writes the last one's slot
 * (the fused nodes do nothing); CUDA Graphs use graph.c's tape: "capture"
 * keeps it, "launch" re-runs it at the first flush, and in a replaying run
 * dead values are not poisoned until then (a real device does not touch
 * memory on release either). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emulate.h"
#include "graph.h"
#include "onnxscope/dtype.h"
#include "exec/env_flag.h"

typedef struct emu_rt {
    bool emu, fp16, graphs;   /* first, as in ox_cuda_rt (runtime.c's rt_head) */
    ox_cuda_graphs gr;
    int n_slots;
    unsigned char *arena;
    int64_t arena_cap;
    const ox_cuda_plan *plan; /* of the run in progress */
    ox_tensor **w;            /* per slot: uploaded weight */
    const void **wsrc;
    uint64_t *wplan;          /* per slot: plan of a plan constant's upload */
    unsigned char *dev_valid, *host_has;
    int64_t h2d, d2h;
} emu_rt;

bool ox_cuda_emu_enabled(void)
{
    return ox__env_on("ONNXSCOPE_CUDA_EMULATE");
}

ox_status ox_cuda_emu_new(int n_slots, void **out, ox_error *err)
{
    emu_rt *r = calloc(1, sizeof *r);
    if (!r)
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    r->emu = true;
    r->n_slots = n_slots;
    r->w = calloc((size_t)n_slots + 1, sizeof *r->w);
    r->wsrc = calloc((size_t)n_slots + 1, sizeof *r->wsrc);
    r->wplan = calloc((size_t)n_slots + 1, sizeof *r->wplan);
    r->dev_valid = calloc((size_t)n_slots + 1, 1);
    r->host_has = calloc((size_t)n_slots + 1, 1);
    if (!r->w || !r->wsrc || !r->wplan || !r->dev_valid || !r->host_has) {
        ox_cuda_emu_free(r);
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    }
    *out = r;
    return OX_OK;
}

void ox_cuda_emu_free(void *rp)
{
    emu_rt *r = rp;
    if (!r)
        return;
    for (int s = 0; r->w && s < r->n_slots; s++)
        ox_tensor_free(r->w[s]);
    free(r->w);
    free(r->wsrc);
    free(r->wplan);
    free(r->dev_valid);
    free(r->host_has);
    free(r->arena);
    ox_cuda_graphs_free(&r->gr);
    free(r);
}

void ox_cuda_emu_configure(void *rp, bool fp16, bool graphs)
{
    emu_rt *r = rp;
    r->fp16 = fp16;
    r->graphs = r->gr.allowed = graphs;
}

bool ox_cuda_emu_fp16(const void *rp)
{
    return ((const emu_rt *)rp)->fp16;
}

ox_status ox_cuda_emu_begin(void *rp, const ox_cuda_plan *p, ox_error *err)
{
    emu_rt *r = rp;
    if (p->n_slots > r->n_slots)
        return ox_errorf(err, OX_EINVAL, "CUDA plan has more slots than the runtime");
    if (p->arena_bytes > r->arena_cap) {
        free(r->arena);
        r->arena = malloc((size_t)p->arena_bytes);
        r->arena_cap = r->arena ? p->arena_bytes : 0;
        if (!r->arena)
            return ox_errorf(err, OX_ENOMEM, "emulated device arena");
    }
    memset(r->arena, 0xff, (size_t)r->arena_cap);   /* NaN floats, -1 integers */
    memset(r->dev_valid, 0, (size_t)r->n_slots);
    memset(r->host_has, 0, (size_t)r->n_slots);
    r->plan = p;
    r->h2d = r->d2h = 0;
    bool reset;
    ox_cuda_graphs_begin(&r->gr, p, &reset);   /* the emulated "graph" is the tape */
    return OX_OK;
}

/* x rounded to float16 precision (the device computes with those values). */
static void round_half(float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = ox_f16_to_f32(ox_f32_to_f16(x[i]));
}

/* A float32 tensor holding t's values rounded through float16. */
static ox_tensor *halved(const ox_tensor *t)
{
    ox_tensor *c = ox_tensor_clone(t);
    if (c)
        round_half(ox_tensor_mutable_data(c), c->numel);
    return c;
}

/* A host tensor of slot s's planned type holding its arena bytes. */
static ox_tensor *from_arena(emu_rt *r, const ox_cuda_slot *sl)
{
    ox_tensor *t = ox_tensor_new(sl->dtype, sl->rank, sl->dims);
    if (t && sl->nbytes)
        memcpy(ox_tensor_mutable_data(t), r->arena + sl->off, (size_t)sl->nbytes);
    return t;
}

/* The value a GPU kernel would read for input slot s. */
static ox_status emu_input(emu_rt *r, const ox_cuda_plan *p, int s, const ox_rval *host,
                           ox_rval **out, ox_error *err)
{
    *out = NULL;
    const ox_cuda_slot *sl = &p->slot[s];
    const ox_tensor *t = host && host->kind == OX_RV_TENSOR ? host->t : NULL;
    if (sl->off < 0) {
        if (!t && !r->w[s])
            return ox_errorf(err, OX_EINVAL, "weight of slot %d has no host value", s);
        const void *src = t ? ox_tensor_data(t) : NULL;
        if (!t && r->w[s]) {
            t = r->w[s];   /* a re-issued node: the uploaded copy */
            src = r->wsrc[s];
        }
        if (!r->w[s] || (sl->init && r->wsrc[s] != src) || r->w[s]->nbytes != t->nbytes ||
            (sl->pconst && r->wplan[s] != p->id) || (sl->fed && host && !r->dev_valid[s])) {
            ox_tensor_free(r->w[s]);
            /* fp16 weights: converted once, as the real upload does. */
            r->w[s] = sl->half && t->dtype == OX_DT_FLOAT ? halved(t) : ox_tensor_clone(t);
            r->wsrc[s] = src;
            r->wplan[s] = p->id;
            if (sl->fed)   /* this run's upload is there (and the host has it) */
                r->dev_valid[s] = r->host_has[s] = 1;
            if (!r->w[s])
                return ox_errorf(err, OX_ENOMEM, "out of memory");
            r->h2d++;
        }
        *out = ox_rval_tensor(ox_tensor_share(r->w[s]));
        return *out ? OX_OK : ox_errorf(err, OX_ENOMEM, "out of memory");
    }
    if (!r->dev_valid[s]) {
        if (!t || (int64_t)t->nbytes != sl->nbytes || t->dtype != sl->dtype)
            return ox_errorf(err, OX_EINVAL,
                             "value of slot %d is not where the CUDA plan expects it", s);
        if (sl->nbytes)
            memcpy(r->arena + sl->off, ox_tensor_data(t), (size_t)sl->nbytes);
        r->dev_valid[s] = 1;
        r->host_has[s] = 1;   /* it came from the host: never downloaded */
        r->h2d++;
        if (getenv("ONNXSCOPE_CUDA_VERBOSE"))
            fprintf(stderr, "cuda: upload slot %d (%lld bytes)\n", s, (long long)sl->nbytes);
    }
    ox_tensor *c = from_arena(r, sl);
    *out = c ? ox_rval_tensor(c) : NULL;
    return *out ? OX_OK : ox_errorf(err, OX_ENOMEM, "out of memory");
}

/* Runs node k as the device would: inputs from the arena and the weight
 * copies (parameters from host_in), outputs into their slots. reissue: a
 * replay of the tape (every device input is in place; nothing uploads). */
static ox_status emu_exec(emu_rt *r, const ox_cuda_plan *p, int k, const int *in_slot,
                          const int *out_slot, ox_rval *const *host_in, bool reissue,
                          ox_error *err)
{
    const ox_node *n = p->cnode[k];
    ox_rval *in[16] = {0}, *out[8] = {0};
    ox_status st = OX_OK;
    if (n->n_inputs > 16 || n->n_outputs > 8)
        return ox_errorf(err, OX_EINVAL, "too many inputs for the CUDA backend");
    if (p->kind[k] == OX_CK_K_FUSED)
        return OX_OK;   /* the epilogue head wrote its output */
    for (int i = 0; i < n->n_inputs && !st; i++) {
        if (in_slot[i] < 0)
            continue;
        if (ox_cuda_input_on_host((ox_cuda_kind)p->kind[k], i)) {
            /* A parameter the real kernel reads on the host. */
            if (host_in[i])
                in[i] = ox_rval_clone(host_in[i]);
            else if (p->slot[in_slot[i]].off >= 0 && r->dev_valid[in_slot[i]])
                in[i] = ox_rval_tensor(from_arena(r, &p->slot[in_slot[i]]));  /* ignored */
            else
                st = ox_errorf(err, OX_EINVAL, "input %d is not on the host", i);
            continue;
        }
        if (reissue && p->slot[in_slot[i]].off >= 0) {
            ox_tensor *c = from_arena(r, &p->slot[in_slot[i]]);
            in[i] = c ? ox_rval_tensor(c) : NULL;
            if (!in[i])
                st = ox_errorf(err, OX_ENOMEM, "out of memory");
            continue;
        }
        st = emu_input(r, p, in_slot[i], reissue ? NULL : host_in[i], &in[i], err);
    }
    /* fp16: the GEMM operands (activation and weight) as float16 values;
     * weights converted on upload already, a second rounding is exact. */
    for (int i = 0; p->half[k] && !st && i < 2; i++)
        if (in[i] && in[i]->kind == OX_RV_TENSOR && in[i]->t->dtype == OX_DT_FLOAT) {
            ox_tensor *h = halved(in[i]->t);
            if (!h) {
                st = ox_errorf(err, OX_ENOMEM, "out of memory");
                break;
            }
            ox_rval_free(in[i]);
            in[i] = ox_rval_tensor(h);
        }
    if (!st)
        st = ox_exec_node(p->clone, n, n->n_inputs, in, n->n_outputs, out, err);
    int oslot[8];
    for (int i = 0; i < n->n_outputs; i++)
        oslot[i] = out_slot[i];
    /* An epilogue head: the fused nodes' CPU kernels on its product (the
     * bias is the plan's initializer), the last one's value to its slot. */
    for (int j = k + 1; p->ep[k] && !st && j < p->n_nodes && p->kind[j] == OX_CK_K_FUSED; j++) {
        const ox_node *fn = p->cnode[j];
        ox_rval *fin[2] = {out[0], NULL}, *fout[1] = {NULL}, *bias = NULL;
        if (fn->n_inputs == 2) {
            ox_tensor *bt = ox_tensor_share(p->ep_bias_host[k]);
            bias = bt ? ox_rval_tensor(bt) : NULL;
            if (!bias) {
                st = ox_errorf(err, OX_ENOMEM, "out of memory");
                break;
            }
            int prev = fn->inputs[0] == p->cnode[j - 1]->outputs[0] ? 0 : 1;
            fin[prev] = out[0];
            fin[1 - prev] = bias;
        }
        st = ox_exec_node(p->clone, fn, fn->n_inputs, fin, 1, fout, err);
        ox_rval_free(bias);
        ox_rval_free(out[0]);
        out[0] = fout[0];
        oslot[0] = p->ep_out[k];
    }
    for (int i = 0; i < n->n_outputs && !st; i++) {
        int s = oslot[i];
        if (s < 0 || p->slot[s].off < 0 || !out[i])
            continue;
        const ox_cuda_slot *sl = &p->slot[s];
        const ox_tensor *t = out[i]->kind == OX_RV_TENSOR ? out[i]->t : NULL;
        bool same = t && t->dtype == sl->dtype && t->rank == sl->rank &&
                    (int64_t)t->nbytes == sl->nbytes;
        for (int d = 0; same && d < sl->rank; d++)
            same = t->dims[d] == sl->dims[d];
        if (!same) {
            st = ox_errorf(err, OX_ESHAPE, "output %d differs from the CUDA plan's shape", i);
            break;
        }
        if (sl->nbytes)
            memcpy(r->arena + sl->off, ox_tensor_data(t), (size_t)sl->nbytes);
    }
    for (int i = 0; i < 16; i++)
        ox_rval_free(in[i]);
    for (int i = 0; i < 8; i++)
        ox_rval_free(out[i]);
    return st;
}

/* Re-runs tape entries [0, n) (the graph's launch, or a catch-up). */
static ox_status emu_reissue(emu_rt *r, int n, ox_error *err)
{
    for (int t = 0; t < n; t++) {
        const ox_cuda_tape_ent *e = &r->gr.tape[t];
        ox_status st = emu_exec(r, r->plan, e->k, e->in_slot, e->out_slot,
                                (ox_rval *const *)e->param, true, err);
        if (st)
            return st;
    }
    return OX_OK;
}

static ox_status emu_flush(emu_rt *r, ox_error *err)
{
    int n = 0;
    if (ox_cuda_graphs_flush(&r->gr, &n))
        return emu_reissue(r, r->gr.n_tape, err);
    return emu_reissue(r, n, err);
}

ox_status ox_cuda_emu_run_node(void *rp, const ox_cuda_plan *p, int k, const int *in_slot,
                               const int *out_slot, ox_rval *const *host_in, ox_error *err)
{
    emu_rt *r = rp;
    const ox_node *n = p->cnode[k];
    int n_catch = 0;
    int act = ox_cuda_graphs_node(&r->gr, p, k, in_slot, out_slot, host_in, &n_catch);
    ox_status st = OX_OK;
    if (act == OX_CG_SKIP) {
        /* The graph will do the work: uploads and residency only. */
        for (int i = 0; i < n->n_inputs && !st; i++) {
            if (in_slot[i] < 0 || p->kind[k] == OX_CK_K_FUSED ||
                ox_cuda_input_on_host((ox_cuda_kind)p->kind[k], i))
                continue;
            ox_rval *v = NULL;
            st = emu_input(r, p, in_slot[i], host_in[i], &v, err);
            ox_rval_free(v);
        }
    } else {
        if (act == OX_CG_CATCHUP)
            st = emu_reissue(r, n_catch, err);
        if (!st)
            st = emu_exec(r, p, k, in_slot, out_slot, host_in, false, err);
    }
    for (int i = 0; i < n->n_outputs && !st; i++) {
        int s = out_slot[i];
        if (s < 0 || p->slot[s].off < 0)
            continue;
        r->dev_valid[s] = 1;
        r->host_has[s] = 0;
    }
    return st;
}

bool ox_cuda_emu_device_only(const void *rp, int s)
{
    const emu_rt *r = rp;
    return s >= 0 && s < r->n_slots && r->dev_valid[s] && !r->host_has[s];
}

ox_status ox_cuda_emu_fetch(void *rp, const ox_cuda_plan *p, int s, ox_rval **out,
                            ox_error *err)
{
    emu_rt *r = rp;
    *out = NULL;
    ox_status fst = emu_flush(r, err);
    if (fst)
        return fst;
    if (p->slot[s].off < 0 || !r->dev_valid[s])
        return ox_errorf(err, OX_EINVAL, "slot %d is not on the device", s);
    ox_tensor *t = from_arena(r, &p->slot[s]);
    *out = t ? ox_rval_tensor(t) : NULL;
    if (!*out)
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    r->host_has[s] = 1;
    r->d2h++;
    return OX_OK;
}

void ox_cuda_emu_release(void *rp, int s)
{
    emu_rt *r = rp;
    if (s < 0 || s >= r->n_slots)
        return;
    /* A dead value's bytes are poisoned: a reader planned past its death
     * would see NaNs. */
    bool pending = r->gr.mode == OX_CG_REPLAY && !r->gr.launched;
    if (r->dev_valid[s] && r->plan && r->plan->slot[s].off >= 0 && !pending)
        memset(r->arena + r->plan->slot[s].off, 0xff, (size_t)r->plan->slot[s].nbytes);
    r->dev_valid[s] = 0;
    r->host_has[s] = 0;
}

ox_status ox_cuda_emu_end(void *rp, ox_exec_stats *s, ox_error *err)
{
    emu_rt *r = rp;
    ox_status st = emu_flush(r, err);
    /* A complete recording (every GPU node of the plan ran) is "captured". */
    if (!st && r->gr.mode == OX_CG_RECORD && r->plan &&
        r->gr.n_tape == r->plan->nodes_on[1])
        ox_cuda_graphs_captured(&r->gr, true, NULL);
    s->h2d_copies = r->h2d;
    s->d2h_copies = r->d2h;
    ox_cuda_graphs_stats(&r->gr, s);
    r->plan = NULL;
    return st;
}
