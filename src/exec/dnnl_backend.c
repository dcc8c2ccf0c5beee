/* The oneDNN backend (dnnl_backend.h): the only file that includes dnnl.h.
 *
 * Written against the oneDNN 2.x C API (Debian 12's libdnnl-dev 2.6.3):
 * operation descriptors (dnnl_convolution_forward_desc_init, dnnl_matmul_
 * desc_init) turned into primitive descriptors, output scales and the
 * four-argument dnnl_post_ops_append_eltwise. oneDNN 3.x (Debian 13)
 * removed the op descriptors (primitive descriptors are created directly),
 * dropped the eltwise post-op's scale argument and renamed algorithms, so a
 * port touches this file only.
 *
 * Shapes are known at run time only in general (symbolic batch), so a
 * node's primitives are created on its first run with a given input shape
 * and cached by that shape (a few per node); constant weights are reordered
 * once per cached primitive into the layout it prefers (format "any").
 * Activations stay plain NCHW / row-major so that every neighbour, ours or
 * oneDNN's, reads them directly.
 *
 * Threads: Debian's oneDNN runs on OpenMP only. The executor's own pool and
 * OpenMP never run at once (kernels run one after the other on the calling
 * thread; the pool only works inside our kernels); before each primitive
 * the calling thread's OpenMP thread count is set to the pool's size, so
 * --threads drives both. */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dnnl_backend.h"
#include "onnxscope/threadpool.h"

#ifdef OX_HAVE_DNNL
#include <dnnl.h>
#include <omp.h>

#include "k_nn/nn_common.h"
#include "env_flag.h"

#define MAXD 12     /* DNNL_MAX_NDIMS */
#define NCACHE 4    /* shapes cached per node */
#define MAXPO 3     /* post-ops in one chain */

typedef enum { K_CONV, K_MATMUL, K_GEMM } kind_t;

/* One activation as oneDNN eltwise post-ops (HardSigmoid takes two). */
typedef struct act_ops {
    int n;
    dnnl_alg_kind_t alg[2];
    float a[2], b[2];
} act_ops;

typedef struct entry {
    bool used, declined;       /* declined: oneDNN refused this shape */
    int n_key;
    int64_t key[3 * (MAXD + 2) + 2];   /* per input: dtype, rank, dims; + NHWC flag, team */
    dnnl_primitive_t prim;
    dnnl_memory_desc_t src_md, wei_md, bias_md, dst_md;
    bool has_bias;
    void *packed;              /* constant weights in the primitive's layout */
    const void *wsrc;          /* the data they were packed from */
    float *bias_copy;          /* Gemm: beta * C when beta != 1 */
    const void *csrc;          /* the data it was copied from */
    int out_rank;
    int64_t out_dims[MAXD];
    /* Conv in a blocked layout: src/dst_md are the primitive's, usrc/udst
     * the plain NCHW tensors'; reorders in and out through bsrc/bdst. */
    bool blocked;
    dnnl_memory_desc_t usrc_md, udst_md;
    dnnl_primitive_t r_src, r_dst;
    void *bsrc, *bdst;
    /* FusedConv's Z (plain NCHW) into the primitive's dst layout when that
     * is not NCHW (channels-last): the sum post-op's seed. */
    dnnl_primitive_t r_z;
    dnnl_memory_desc_t z_md;
    bool big_gemm;             /* MatMul/Gemm large enough for gemm:jit (prefer_gemm_jit) */
} entry;

struct ox_dnnl_node {
    kind_t kind;
    const ox_node *node;
    bool w_const, b_const;     /* inputs given by initializers */
    act_ops act;               /* fused activation (n == 0: none) */
    bool z_input;              /* FusedConv: input 3 (Z) added as a sum post-op */
    /* 2-D Conv whose readers are all oneDNN convolutions (the executor
     * decides, ox_dnnl_set_out_nhwc): its output is written channels-last
     * (NHWC), the layout oneDNN's direct convolutions read without a
     * reorder or im2col; the readers take it as is. */
    bool out_nhwc;
    /* Conv */
    int64_t group;
    const char *auto_pad;
    int n_k, n_s, n_d, n_p;
    int64_t ks[3], st[3], dl[3], pads[6];
    /* MatMul: a fused constant bias row (ox_dnnl_set_bias), or NULL */
    const ox_tensor *mm_bias;
    /* Gemm */
    bool ta, tb;
    float alpha, beta;
    struct parts_cache *pc;    /* lazy Concat input: one primitive per part */
    pthread_mutex_t lock;
    entry cache[NCACHE];
    int next_victim;
};

static dnnl_engine_t g_engine;
static atomic_long g_runs, g_runs_act;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static _Thread_local dnnl_stream_t tl_stream;
static _Thread_local int tl_threads;
static _Thread_local bool tl_in_nhwc;   /* input 0 of the node being run is NHWC */
static _Thread_local bool tl_z_nhwc;    /* its Z (input 3) is NHWC */

static void engine_init(void)
{
    if (dnnl_engine_create(&g_engine, dnnl_cpu, 0) != dnnl_success)
        g_engine = NULL;
}

bool ox_dnnl_enabled(void)
{
    if (ox__env_on("ONNXSCOPE_NO_DNNL"))
        return false;
    pthread_once(&g_once, engine_init);
    return g_engine != NULL;
}

void ox_dnnl_counts(long *runs, long *with_act)
{
    *runs = atomic_load(&g_runs);
    *with_act = atomic_load(&g_runs_act);
}

const char *ox_dnnl_version(void)
{
    static char buf[48];
    const dnnl_version_t *v = dnnl_version();
    snprintf(buf, sizeof buf, "oneDNN %d.%d.%d", v->major, v->minor, v->patch);
    return buf;
}

/* ---- attributes ------------------------------------------------------------ */

static const ox_attr *attr(const ox_node *n, const char *name, ox_attr_type t)
{
    const ox_attr *a = ox_node_attr(n, name);
    return a && a->type == t ? a : NULL;
}

static int64_t attr_i(const ox_node *n, const char *name, int64_t dflt)
{
    const ox_attr *a = attr(n, name, OX_ATTR_INT);
    return a ? a->i : dflt;
}

static float attr_f(const ox_node *n, const char *name, float dflt)
{
    const ox_attr *a = attr(n, name, OX_ATTR_FLOAT);
    return a ? a->f : dflt;
}

/* Length of an ints attribute copied to out (-1 when absent, -2 when longer
 * than max). */
static int attr_ints(const ox_node *n, const char *name, int64_t *out, int max)
{
    const ox_attr *a = attr(n, name, OX_ATTR_INTS);
    if (!a)
        return -1;
    if (a->n > max)
        return -2;
    for (int i = 0; i < a->n; i++)
        out[i] = a->ints[i];
    return a->n;
}

/* An initializer. Under IR < 4 initializers are also graph inputs a caller
 * may override: data packed from one is only used while the run hands the
 * very same tensor data (entry.wsrc / entry.csrc; the plan keeps the
 * initializer alive, so no other tensor can sit at that address). */
static bool is_const(const ox_value *v)
{
    return v && v->init;
}

/* A scalar float initializer (Clip bounds), or dflt when the input is omitted.
 * `given`, when not NULL, is the input's plan-constant value (a Constant
 * node's output or a folded value), taken like an initializer. */
static bool const_scalar(const ox_node *n, int i, float dflt, float *out, const ox_tensor *given)
{
    *out = dflt;
    if (i >= n->n_inputs || !n->inputs[i])
        return true;
    const ox_value *v = n->inputs[i];
    const ox_tensor *t = given;
    if (!t) {
        if (!is_const(v) || v->is_input)
            return false;
        t = v->init;
    }
    if (t->dtype != OX_DT_FLOAT || t->numel != 1)
        return false;
    const float *p = ox_tensor_data(t);
    if (!p)
        return false;
    *out = p[0];
    return true;
}

/* An activation by name and parameters as post-ops. */
static bool act_by_name(const char *name, bool ha, float a, bool hb, float b, act_ops *o)
{
    memset(o, 0, sizeof *o);
    if (!strcmp(name, "Relu")) {
        o->n = 1, o->alg[0] = dnnl_eltwise_relu;
    } else if (!strcmp(name, "LeakyRelu")) {
        o->n = 1, o->alg[0] = dnnl_eltwise_relu, o->a[0] = ha ? a : 0.01f;
    } else if (!strcmp(name, "Sigmoid")) {
        o->n = 1, o->alg[0] = dnnl_eltwise_logistic;
    } else if (!strcmp(name, "Tanh")) {
        o->n = 1, o->alg[0] = dnnl_eltwise_tanh;
    } else if (!strcmp(name, "HardSwish")) {
        /* 2.x's hardswish has no parameters: x * relu6(x + 3) / 6, which is
         * ONNX's (alpha 1/6, beta 1/2). 3.x takes alpha and beta. */
        o->n = 1, o->alg[0] = dnnl_eltwise_hardswish;
    } else if (!strcmp(name, "HardSigmoid")) {
        /* 2.x has no hardsigmoid: linear then clip. */
        o->n = 2;
        o->alg[0] = dnnl_eltwise_linear, o->a[0] = ha ? a : 0.2f, o->b[0] = hb ? b : 0.5f;
        o->alg[1] = dnnl_eltwise_clip_v2, o->a[1] = 0.0f, o->b[1] = 1.0f;
    } else if (!strcmp(name, "Clip")) {
        o->n = 1, o->alg[0] = dnnl_eltwise_clip_v2;
        o->a[0] = ha ? a : -FLT_MAX, o->b[0] = hb ? b : FLT_MAX;
        if (!(o->a[0] <= o->b[0]))
            return false;   /* min > max or NaN: ONNX semantics differ */
    } else {
        return false;
    }
    return true;
}

/* An activation node (default domain) as post-ops; act_in as in
 * ox_dnnl_epilogue (NULL: initializers only). */
static bool act_of_node(const ox_node *act, act_ops *o, const ox_tensor *const *act_in)
{
    if (!act || (act->domain && act->domain[0]) || act->n_outputs < 1 || !act->outputs[0])
        return false;
    const char *op = act->op_type;
    if (!strcmp(op, "Clip")) {
        float lo, hi;
        const ox_attr *amin = attr(act, "min", OX_ATTR_FLOAT);
        const ox_attr *amax = attr(act, "max", OX_ATTR_FLOAT);
        if (act->n_inputs > 1) {
            if (!const_scalar(act, 1, -FLT_MAX, &lo, act_in ? act_in[1] : NULL) ||
                !const_scalar(act, 2, FLT_MAX, &hi, act_in ? act_in[2] : NULL))
                return false;
        } else {
            lo = amin ? amin->f : -FLT_MAX;
            hi = amax ? amax->f : FLT_MAX;
        }
        return act_by_name("Clip", true, lo, true, hi, o);
    }
    if (!strcmp(op, "LeakyRelu") || !strcmp(op, "HardSigmoid")) {
        const ox_attr *a = attr(act, "alpha", OX_ATTR_FLOAT), *b = attr(act, "beta", OX_ATTR_FLOAT);
        return act_by_name(op, a != NULL, a ? a->f : 0, b != NULL, b ? b->f : 0, o);
    }
    if (!strcmp(op, "HardSwish") || !strcmp(op, "Relu") || !strcmp(op, "Sigmoid") ||
        !strcmp(op, "Tanh"))
        return act_by_name(op, false, 0, false, 0, o);
    return false;
}

bool ox_dnnl_act_fusable(const ox_node *act)
{
    act_ops o;
    return act_of_node(act, &o, NULL);
}

bool ox_dnnl_act_fusable_ex(const ox_node *act, const ox_tensor *const *act_in)
{
    act_ops o;
    return act_of_node(act, &o, act_in);
}

/* ---- planning ---------------------------------------------------------------- */

ox_dnnl_node *ox_dnnl_plan(const ox_node *n, const ox_node *act, unsigned const_in)
{
    ox_dnnl_epilogue ep = {.act = act};
    return ox_dnnl_plan_ex(n, &ep, const_in);
}

ox_dnnl_node *ox_dnnl_plan_ex(const ox_node *n, const ox_dnnl_epilogue *ep, unsigned const_in)
{
    const ox_node *act = ep->act;
#define IN_CONST(i) ((i) < n->n_inputs && n->inputs[i] && ((const_in >> (i)) & 1u))
    if (!ox_dnnl_enabled() || n->n_outputs < 1 || !n->outputs[0])
        return NULL;
    ox_dnnl_node d;
    memset(&d, 0, sizeof d);
    d.node = n;
    bool ms = n->domain && !strcmp(n->domain, "com.microsoft");
    const char *op = n->op_type;
    if ((ox_node_is_default_domain(n) && !strcmp(op, "Conv")) || (ms && !strcmp(op, "FusedConv"))) {
        d.kind = K_CONV;
        if (n->n_inputs < 2 || !IN_CONST(1))
            return NULL;   /* runtime weights: our kernel (rare, no prepacking) */
        d.w_const = true;
        d.group = attr_i(n, "group", 1);
        const ox_attr *ap = attr(n, "auto_pad", OX_ATTR_STRING);
        d.auto_pad = ap && ap->s.len ? (const char *)ap->s.data : "NOTSET";
        if (strcmp(d.auto_pad, "NOTSET") && strcmp(d.auto_pad, "VALID") &&
            strcmp(d.auto_pad, "SAME_UPPER") && strcmp(d.auto_pad, "SAME_LOWER"))
            return NULL;
        d.n_k = attr_ints(n, "kernel_shape", d.ks, 3);
        d.n_s = attr_ints(n, "strides", d.st, 3);
        d.n_d = attr_ints(n, "dilations", d.dl, 3);
        d.n_p = attr_ints(n, "pads", d.pads, 6);
        if (d.n_k == -2 || d.n_s == -2 || d.n_d == -2 || d.n_p == -2 || d.group < 1)
            return NULL;
        if (ms) {
            const ox_attr *an = attr(n, "activation", OX_ATTR_STRING);
            const ox_attr *pp = attr(n, "activation_params", OX_ATTR_FLOATS);
            if (an && an->s.len) {
                if (act)
                    return NULL;
                char name[32];
                snprintf(name, sizeof name, "%.*s", (int)an->s.len, (const char *)an->s.data);
                int np = pp ? pp->n : 0;
                if (!act_by_name(name, np >= 1, np >= 1 ? pp->floats[0] : 0, np >= 2,
                                 np >= 2 ? pp->floats[1] : 0, &d.act))
                    return NULL;
            }
            d.z_input = n->n_inputs > 3 && n->inputs[3];
        }
        if (ep->sum) {
            /* A residual Add fused into a plain Conv: Z comes as input 3. */
            if (ms || d.z_input)
                return NULL;
            d.z_input = true;
        }
    } else if (ox_node_is_default_domain(n) && !strcmp(op, "MatMul")) {
        d.kind = K_MATMUL;
        if (n->n_inputs != 2)
            return NULL;
        d.w_const = IN_CONST(1);
        d.alpha = 1.0f, d.beta = 1.0f;
    } else if ((ox_node_is_default_domain(n) && !strcmp(op, "Gemm")) || (ms && !strcmp(op, "FusedGemm"))) {
        d.kind = K_GEMM;
        if (n->n_inputs < 2)
            return NULL;
        d.ta = attr_i(n, "transA", 0) != 0;
        d.tb = attr_i(n, "transB", 0) != 0;
        d.alpha = attr_f(n, "alpha", 1.0f);
        d.beta = attr_f(n, "beta", 1.0f);
        d.w_const = IN_CONST(1);
        d.b_const = IN_CONST(2);
        /* alpha and beta are folded into packed copies of constant B and C;
         * with runtime operands our kernel keeps them. */
        if (d.alpha != 1.0f && !d.w_const)
            return NULL;
        if (n->n_inputs > 2 && n->inputs[2] && d.beta != 1.0f && d.beta != 0.0f && !d.b_const)
            return NULL;
        if (ms) {
            const ox_attr *an = attr(n, "activation", OX_ATTR_STRING);
            if (an && an->s.len) {
                if (act)
                    return NULL;
                char name[32];
                snprintf(name, sizeof name, "%.*s", (int)an->s.len, (const char *)an->s.data);
                const ox_attr *aa = attr(n, "activation_alpha", OX_ATTR_FLOAT);
                const ox_attr *ab = attr(n, "activation_beta", OX_ATTR_FLOAT);
                if (!act_by_name(name, aa != NULL, aa ? aa->f : 0, ab != NULL, ab ? ab->f : 0,
                                 &d.act))
                    return NULL;
            }
        }
    } else {
        return NULL;
    }
    if (ep->sum && d.kind != K_CONV)
        return NULL;
    if (act && !act_of_node(act, &d.act, ep->act_in))
        return NULL;
    ox_dnnl_node *p = malloc(sizeof *p);
    if (!p)
        return NULL;
    *p = d;
    pthread_mutex_init(&p->lock, NULL);
    return p;
}

static void entry_clear(entry *e)
{
    if (e->prim)
        dnnl_primitive_destroy(e->prim);
    if (e->r_src)
        dnnl_primitive_destroy(e->r_src);
    if (e->r_dst)
        dnnl_primitive_destroy(e->r_dst);
    if (e->r_z)
        dnnl_primitive_destroy(e->r_z);
    free(e->bsrc);
    free(e->bdst);
    free(e->packed);
    free(e->bias_copy);
    memset(e, 0, sizeof *e);
}

static void parts_free(ox_dnnl_node *d);

void ox_dnnl_free(ox_dnnl_node *d)
{
    if (!d)
        return;
    for (int i = 0; i < NCACHE; i++)
        entry_clear(&d->cache[i]);
    parts_free(d);
    pthread_mutex_destroy(&d->lock);
    free(d);
}

/* ---- primitive creation ---------------------------------------------------------- */

static const ox_tensor *in_f32(const ox_kernel_ctx *c, int i)
{
    const ox_tensor *t = ox_kernel_in(c, i);
    return t && t->dtype == OX_DT_FLOAT && ox_tensor_data(t) ? t : NULL;
}

static bool md_plain(dnnl_memory_desc_t *md, int rank, const int64_t *dims)
{
    static const dnnl_format_tag_t tags[] = {dnnl_a, dnnl_a, dnnl_ab, dnnl_abc, dnnl_abcd,
                                             dnnl_abcde, dnnl_abcdef};
    if (rank < 1 || rank > 6)
        return false;
    dnnl_dims_t d;
    for (int i = 0; i < rank; i++)
        d[i] = dims[i];
    return dnnl_memory_desc_init_by_tag(md, rank, d, dnnl_f32, tags[rank]) == dnnl_success;
}

static bool make_attr(const ox_dnnl_node *d, dnnl_primitive_attr_t *out)
{
    dnnl_primitive_attr_t a = NULL;
    dnnl_post_ops_t po = NULL;
    if (dnnl_primitive_attr_create(&a) != dnnl_success)
        return false;
    if (d->z_input || d->act.n) {
        if (dnnl_post_ops_create(&po) != dnnl_success)
            goto fail;
        if (d->z_input && dnnl_post_ops_append_sum(po, 1.0f) != dnnl_success)
            goto fail;
        for (int i = 0; i < d->act.n; i++)
            if (dnnl_post_ops_append_eltwise(po, 1.0f, d->act.alg[i], d->act.a[i],
                                             d->act.b[i]) != dnnl_success)
                goto fail;
        if (dnnl_primitive_attr_set_post_ops(a, po) != dnnl_success)
            goto fail;
        dnnl_post_ops_destroy(po);
    }
    *out = a;
    return true;
fail:
    if (po)
        dnnl_post_ops_destroy(po);
    dnnl_primitive_attr_destroy(a);
    return false;
}

/* Reorders constant weights (user layout `umd` at `src`, times `scale`) into
 * the layout `pmd` the primitive chose. */
static void *pack_weights(const dnnl_memory_desc_t *umd, const float *src, float scale,
                          const dnnl_memory_desc_t *pmd)
{
    size_t bytes = dnnl_memory_desc_get_size(pmd);
    size_t ubytes = dnnl_memory_desc_get_size(umd);
    void *dst = NULL, *scaled = NULL;
    dnnl_memory_t um = NULL, pm = NULL;
    dnnl_primitive_desc_t rpd = NULL;
    dnnl_primitive_t r = NULL;
    bool ok = false;
    if (posix_memalign(&dst, 64, bytes ? bytes : 64))
        return NULL;
    if (scale != 1.0f) {
        size_t n = ubytes / sizeof(float);
        float *s = malloc(ubytes ? ubytes : 1);
        if (!s)
            goto done;
        for (size_t i = 0; i < n; i++)
            s[i] = src[i] * scale;
        src = scaled = s;
    }
    if (dnnl_memory_create(&um, umd, g_engine, (void *)src) != dnnl_success ||
        dnnl_memory_create(&pm, pmd, g_engine, dst) != dnnl_success ||
        dnnl_reorder_primitive_desc_create(&rpd, umd, g_engine, pmd, g_engine, NULL) !=
            dnnl_success ||
        dnnl_primitive_create(&r, rpd) != dnnl_success)
        goto done;
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, um}, {DNNL_ARG_TO, pm}};
    ok = dnnl_primitive_execute(r, tl_stream, 2, args) == dnnl_success &&
         dnnl_stream_wait(tl_stream) == dnnl_success;
done:
    if (r)
        dnnl_primitive_destroy(r);
    if (rpd)
        dnnl_primitive_desc_destroy(rpd);
    if (um)
        dnnl_memory_destroy(um);
    if (pm)
        dnnl_memory_destroy(pm);
    free(scaled);
    if (!ok) {
        free(dst);
        return NULL;
    }
    return dst;
}

/* A reorder from `from` to `to` when they differ (else *r stays NULL), and
 * a buffer for the blocked side of the two. */
static bool make_reorder(const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to,
                         dnnl_primitive_t *r, void **buf)
{
    *r = NULL;
    *buf = NULL;
    if (dnnl_memory_desc_equal(from, to))
        return true;
    dnnl_primitive_desc_t rpd = NULL;
    if (dnnl_reorder_primitive_desc_create(&rpd, from, g_engine, to, g_engine, NULL) !=
        dnnl_success)
        return false;
    bool ok = dnnl_primitive_create(r, rpd) == dnnl_success;
    dnnl_primitive_desc_destroy(rpd);
    /* The buffer holds the blocked md, whichever side it is on. */
    size_t bytes = dnnl_memory_desc_get_size(from) > dnnl_memory_desc_get_size(to)
                       ? dnnl_memory_desc_get_size(from)
                       : dnnl_memory_desc_get_size(to);
    if (ok && posix_memalign(buf, 64, bytes ? bytes : 64))
        *buf = NULL;
    return ok && *buf;
}

/* Creates the primitive for `op_desc`, querying the chosen md's, and packs
 * constant weights. */
/* A single (unbatched) MatMul/Gemm whose M, N and K are all at least 512,
 * or a one-row product (a batch-1 fully connected layer) with at least 2^20
 * weights, run by a 1-thread executor: oneDNN 2.6 ranks its brgemm matmul
 * first, which reached 85-92 % of its own gemm:jit kernel (the one
 * dnnl_sgemm runs) on 1024^3 and 2048^3 on this machine and 70-80 % on
 * 1x3072x768, while other shapes (M = 2-128 transformer layers, 512^3,
 * small one-row products) tie or favour brgemm. With 2 threads the two
 * could only be compared on an oversubscribed machine, where brgemm did
 * better, so larger teams keep oneDNN's choice (docs/PERFORMANCE.md,
 * "Kernel classes"). ONNXSCOPE_DNNL_MATMUL_IMPL=brg or =gemm forces either
 * for every shape and team, for measuring. */
static bool prefer_gemm_jit(int threads, int64_t batch, int64_t M, int64_t N, int64_t K)
{
    const char *f = getenv("ONNXSCOPE_DNNL_MATMUL_IMPL");
    if (f && !strcmp(f, "brg"))
        return false;
    if (f && !strcmp(f, "gemm"))
        return true;
    return threads == 1 && batch == 1 &&
           ((M >= 512 && N >= 512 && K >= 512) || (M == 1 && N * K >= (1 << 20)));
}

/* The primitive descriptor: oneDNN's first choice, or with prefer_gemm its
 * gemm:jit implementation when it offers one for these descriptors. */
static dnnl_status_t make_pd(dnnl_primitive_desc_t *pd, const void *op_desc,
                             dnnl_primitive_attr_t a, bool prefer_gemm)
{
    dnnl_primitive_desc_iterator_t it = NULL;
    if (prefer_gemm &&
        dnnl_primitive_desc_iterator_create(&it, op_desc, a, g_engine, NULL) == dnnl_success) {
        do {
            dnnl_primitive_desc_t p = dnnl_primitive_desc_iterator_fetch(it);
            const char *impl = NULL;
            if (p && dnnl_primitive_desc_query(p, dnnl_query_impl_info_str, 0, &impl) ==
                         dnnl_success && impl && strstr(impl, "gemm:jit")) {
                dnnl_primitive_desc_iterator_destroy(it);
                *pd = p;
                return dnnl_success;
            }
            if (p)
                dnnl_primitive_desc_destroy(p);
        } while (dnnl_primitive_desc_iterator_next(it) == dnnl_success);
        dnnl_primitive_desc_iterator_destroy(it);
    }
    return dnnl_primitive_desc_create(pd, op_desc, a, g_engine, NULL);
}

static bool finish_entry(const ox_dnnl_node *d, entry *e, const void *op_desc,
                         const dnnl_memory_desc_t *wei_user, const float *wei, float wscale)
{
    dnnl_primitive_attr_t a;
    dnnl_primitive_desc_t pd = NULL;
    if (!make_attr(d, &a))
        return false;
    dnnl_status_t s = make_pd(&pd, op_desc, a, e->big_gemm);
    dnnl_primitive_attr_destroy(a);
    if (s != dnnl_success)
        return false;
    bool ok = false;
    if (getenv("ONNXSCOPE_DNNL_VERBOSE")) {
        /* Which oneDNN implementation took the node (brgconv, jit:avx512...). */
        const char *impl = NULL;
        dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
        fprintf(stderr, "dnnl: %s '%s': %s\n", d->node->op_type,
                d->node->name ? d->node->name : "", impl ? impl : "?");
    }
    const dnnl_memory_desc_t *wmd = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    if (!wmd)
        goto done;
    e->wei_md = *wmd;
    if (d->w_const) {
        if (dnnl_memory_desc_equal(wmd, wei_user) && wscale == 1.0f) {
            e->packed = NULL;   /* the initializer itself is in the right layout */
        } else {
            e->packed = pack_weights(wei_user, wei, wscale, wmd);
            if (!e->packed)
                goto done;
            e->wsrc = wei;
        }
    } else if (!dnnl_memory_desc_equal(wmd, wei_user)) {
        goto done;
    }
    if (e->blocked) {
        /* The layouts the primitive chose for src and dst, and reorders
         * from/to the plain tensors when they differ. */
        const dnnl_memory_desc_t *smd = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
        const dnnl_memory_desc_t *dmd = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
        if (!smd || !dmd)
            goto done;
        e->src_md = *smd;
        e->dst_md = *dmd;
        if (!make_reorder(&e->usrc_md, &e->src_md, &e->r_src, &e->bsrc) ||
            !make_reorder(&e->dst_md, &e->udst_md, &e->r_dst, &e->bdst))
            goto done;
        /* bdst is the primitive's output buffer (the reorder's source). */
        if (e->r_dst && e->bdst == NULL)
            goto done;
    }
    /* Z seeds the sum post-op in the primitive's own dst layout: a reorder
     * when Z's layout (NCHW, or NHWC on a channels-last edge) differs. */
    if (d->z_input && !dnnl_memory_desc_equal(&e->z_md, &e->dst_md)) {
        void *unused = NULL;
        if (!make_reorder(&e->z_md, &e->dst_md, &e->r_z, &unused))
            goto done;
        free(unused);
    }
    ok = dnnl_primitive_create(&e->prim, pd) == dnnl_success;
done:
    dnnl_primitive_desc_destroy(pd);
    return ok;
}

/* A first layer (a few input channels, plain NCHW source: an image): with a
 * plain dst oneDNN takes im2col + its GEMM (gemm:jit, about 27 GFLOP/s on
 * ResNet-50's 7x7 stride-2 conv1 here), with a blocked dst its direct AVX-512
 * kernel; the dst is then reordered to the tensor's layout (finish_entry).
 * Kept only when the implementation is neither a reference nor a GEMM one.
 * ONNXSCOPE_DNNL_NO_FIRST=1 turns it off. */
static void first_layer_dst(dnnl_convolution_desc_t *cd, const ox_tensor *x, int64_t G, int nsp,
                            const dnnl_dim_t *yd, const dnnl_memory_desc_t *sp,
                            dnnl_memory_desc_t *dp, const dnnl_memory_desc_t *bias,
                            const dnnl_memory_desc_t *wany, const dnnl_dim_t *strides,
                            const dnnl_dim_t *dil, const dnnl_dim_t *pl, const dnnl_dim_t *pr)
{
    const char *off = getenv("ONNXSCOPE_DNNL_NO_FIRST");
    if ((off && off[0] && strcmp(off, "0")) || nsp != 2 || G != 1 || x->dims[1] > 4 ||
        tl_in_nhwc || sp->format_desc.blocking.strides[1] == 1)
        return;
    dnnl_memory_desc_t dany;
    dnnl_convolution_desc_t td;
    dnnl_primitive_desc_t pd = NULL;
    const char *impl = NULL;
    if (dnnl_memory_desc_init_by_tag(&dany, x->rank, yd, dnnl_f32, dnnl_format_tag_any) ||
        dnnl_dilated_convolution_forward_desc_init(&td, dnnl_forward_inference,
                                                   dnnl_convolution_direct, sp, wany, bias,
                                                   &dany, strides, dil, pl, pr) != dnnl_success)
        return;
    bool ok = dnnl_primitive_desc_create(&pd, &td, NULL, g_engine, NULL) == dnnl_success &&
              dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success &&
              impl && strncmp(impl, "ref", 3) && !strstr(impl, "gemm");
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    if (ok) {
        *dp = dany;
        *cd = td;
    }
}

/* A depthwise 2-D convolution between plain NCHW edges (its neighbours are
 * not oneDNN convolutions: an EfficientNet's Swish and squeeze-excitation,
 * a lone depthwise node) runs channels-last inside, with a reorder at each
 * end: oneDNN's NCHW depthwise kernel made about 1.7 GFLOP/s on a 144-channel
 * 56x56 3x3 (PERFORMANCE.md, kernel classes), brdgmm_dw on NHWC about 10
 * (the reorders are two passes over the activation; the stencil does 9
 * multiply-adds per element). ONNXSCOPE_DNNL_DW_PLAIN=1 keeps NCHW. */
static bool dw_inside_nhwc(const ox_dnnl_node *d, int64_t G, int64_t C, int nsp, bool decided)
{
    return !decided && !d->z_input && nsp == 2 && G > 1 && G == C &&
           !ox__env_on("ONNXSCOPE_DNNL_DW_PLAIN");
}

static bool build_conv(const ox_dnnl_node *d, const ox_kernel_ctx *c, entry *e)
{
    const ox_tensor *x = in_f32(c, 0), *w = in_f32(c, 1), *b = in_f32(c, 2);
    if (!x || !w || x->rank < 3 || x->rank > 5 || w->rank != x->rank)
        return false;
    if (c->n_in > 2 && c->in[2] && !b)
        return false;
    int nsp = x->rank - 2;
    int64_t G = d->group, N = x->dims[0], C = x->dims[1], M = w->dims[0];
    if (C % G || M % G || w->dims[1] != C / G || (b && b->numel != M))
        return false;
    if ((d->n_k >= 0 && d->n_k != nsp) || (d->n_s >= 0 && d->n_s != nsp) ||
        (d->n_d >= 0 && d->n_d != nsp) || (d->n_p >= 0 && d->n_p != 2 * nsp))
        return false;
    dnnl_dims_t strides, dil, pl, pr, xd, yd, wd, bd;
    xd[0] = N, xd[1] = C;
    yd[0] = N, yd[1] = M;
    for (int i = 0; i < nsp; i++) {
        int64_t k = w->dims[2 + i];
        if (d->n_k >= 0 && d->ks[i] != k)
            return false;
        int64_t s = d->n_s >= 0 ? d->st[i] : 1, dl = d->n_d >= 0 ? d->dl[i] : 1;
        int64_t pb = 0, pe = 0, out = 0;
        if (nn_window_dim(d->auto_pad, x->dims[2 + i], k, s, dl, d->n_p >= 0,
                          d->n_p >= 0 ? d->pads[i] : 0, d->n_p >= 0 ? d->pads[i + nsp] : 0,
                          false, &pb, &pe, &out))
            return false;
        if (out < 1)
            return false;
        strides[i] = s, dil[i] = dl - 1, pl[i] = pb, pr[i] = pe;
        /* oneDNN wants the right padding that makes its own output size
         * formula land on ours (SAME_* may leave a trailing pad unused). */
        pr[i] = (out - 1) * s + (k - 1) * dl + 1 - x->dims[2 + i] - pb;
        xd[2 + i] = x->dims[2 + i];
        yd[2 + i] = out;
    }
    static const dnnl_format_tag_t act_tag[] = {0, dnnl_ncw, dnnl_nchw, dnnl_ncdhw};
    static const dnnl_format_tag_t w_tag[] = {0, dnnl_oiw, dnnl_oihw, dnnl_oidhw};
    static const dnnl_format_tag_t gw_tag[] = {0, dnnl_goiw, dnnl_goihw, dnnl_goidhw};
    int wr;
    if (G == 1) {
        wr = x->rank;
        for (int i = 0; i < wr; i++)
            wd[i] = w->dims[i];
    } else {
        wr = x->rank + 1;
        wd[0] = G, wd[1] = M / G;
        for (int i = 1; i < x->rank; i++)
            wd[1 + i] = w->dims[i];
    }
    dnnl_memory_desc_t wuser, wany;
    bd[0] = M;
    if (tl_in_nhwc && nsp != 2)
        return false;
    bool onhwc = d->out_nhwc && nsp == 2;
    /* e->src_md/dst_md: the tensors' layouts (NHWC on a channels-last edge). */
    if (dnnl_memory_desc_init_by_tag(&e->src_md, x->rank, xd, dnnl_f32,
                                     tl_in_nhwc ? dnnl_nhwc : act_tag[nsp]) ||
        dnnl_memory_desc_init_by_tag(&e->dst_md, x->rank, yd, dnnl_f32,
                                     onhwc ? dnnl_nhwc : act_tag[nsp]) ||
        dnnl_memory_desc_init_by_tag(&wuser, wr, wd, dnnl_f32,
                                     G == 1 ? w_tag[nsp] : gw_tag[nsp]) ||
        dnnl_memory_desc_init_by_tag(&wany, wr, wd, dnnl_f32, dnnl_format_tag_any) ||
        (b && dnnl_memory_desc_init_by_tag(&e->bias_md, 1, bd, dnnl_f32, dnnl_a)))
        return false;
    e->has_bias = b != NULL;
    /* oneDNN's fast direct convolutions (brgconv) want blocked or NHWC
     * activations; given NCHW it takes im2col + its GEMM (gemm:jit).
     * ONNXSCOPE_DNNL_BLOCKED=1 lets it choose ("any") and reorders around
     * each call; measured about even with plain NCHW end to end here
     * (PERFORMANCE.md), so plain stays the default until the executor keeps
     * blocked tensors between consecutive oneDNN ops. Not with a Z input,
     * which must seed the output (FusedConv). */
    const char *bl = getenv("ONNXSCOPE_DNNL_BLOCKED");
    bool any = !d->z_input && bl && bl[0] && strcmp(bl, "0");
    e->usrc_md = e->src_md;
    e->udst_md = e->dst_md;
    if (tl_z_nhwc && nsp != 2)
        return false;
    if (dnnl_memory_desc_init_by_tag(&e->z_md, x->rank, yd, dnnl_f32,
                                     tl_z_nhwc ? dnnl_nhwc : act_tag[nsp]))
        return false;
    dnnl_memory_desc_t sp, dp;   /* the primitive's src/dst layouts */
    bool dw = dw_inside_nhwc(d, G, C, nsp, any || tl_in_nhwc || onhwc);
    if (any) {
        if (dnnl_memory_desc_init_by_tag(&sp, x->rank, xd, dnnl_f32, dnnl_format_tag_any) ||
            dnnl_memory_desc_init_by_tag(&dp, x->rank, yd, dnnl_f32, dnnl_format_tag_any))
            return false;
    } else if (tl_in_nhwc || onhwc || dw) {
        /* One layout on both sides (mixing NCHW and NHWC got oneDNN's
         * reference kernel, 100x slower); reorders at a plain end. */
        if (dnnl_memory_desc_init_by_tag(&sp, x->rank, xd, dnnl_f32, dnnl_nhwc) ||
            dnnl_memory_desc_init_by_tag(&dp, x->rank, yd, dnnl_f32, dnnl_nhwc))
            return false;
    } else {
        sp = e->src_md, dp = e->dst_md;
    }
    dnnl_convolution_desc_t cd;
    for (int attempt = 0;; attempt++) {
        if (dnnl_dilated_convolution_forward_desc_init(
                &cd, dnnl_forward_inference, dnnl_convolution_direct, &sp, &wany,
                b ? &e->bias_md : NULL, &dp, strides, dil, pl, pr) != dnnl_success)
            return false;
        if (attempt > 0 || any || !(tl_in_nhwc || onhwc || dw))
            break;
        /* Channels-last without a direct kernel (3-channel input, say):
         * its reference fallback is far slower than reordering to NCHW. */
        dnnl_primitive_desc_t pd = NULL;
        const char *impl = NULL;
        bool ref = dnnl_primitive_desc_create(&pd, &cd, NULL, g_engine, NULL) != dnnl_success ||
                   dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) !=
                       dnnl_success ||
                   !impl || !strncmp(impl, "ref", 3);
        if (pd)
            dnnl_primitive_desc_destroy(pd);
        if (!ref)
            break;
        if (dnnl_memory_desc_init_by_tag(&sp, x->rank, xd, dnnl_f32, act_tag[nsp]) ||
            dnnl_memory_desc_init_by_tag(&dp, x->rank, yd, dnnl_f32, act_tag[nsp]))
            return false;
    }
    first_layer_dst(&cd, x, G, nsp, yd, &sp, &dp, e->has_bias ? &e->bias_md : NULL, &wany,
                    strides, dil, pl, pr);
    /* finish_entry puts reorders where the tensors' layouts differ. */
    e->blocked = !dnnl_memory_desc_equal(&sp, &e->src_md) ||
                 !dnnl_memory_desc_equal(&dp, &e->dst_md);
    e->out_rank = x->rank;
    for (int i = 0; i < x->rank; i++)
        e->out_dims[i] = yd[i];
    return finish_entry(d, e, &cd, &wuser, ox_tensor_data(w), 1.0f);
}

/* One-row products (a batch-1 classifier, a decoder step) decline to our
 * kernel's matrix-vector loop (k_nn/gemv.c): a primitive's per-call cost and
 * its N padded to a block dominated them (a [1, 8192] x [8192, 10] Gemm:
 * 39 us on oneDNN, PERFORMANCE.md). ONNXSCOPE_NO_GEMV=1 keeps them here. */
static bool one_row_ours(int64_t rows, int64_t N, int64_t K, bool ta)
{
    /* Measured (PERFORMANCE.md): ours wins by 2-3x below a block of N or a
     * 64K-element B; oneDNN's packed weights win on larger ones (1x512 x
     * 512x1000: 35 vs 48 us), so those stay on the primitive. */
    if (rows != 1 || ta || (N > 32 && N * K > 65536))
        return false;
    return !ox__env_on("ONNXSCOPE_NO_GEMV");
}

/* Gemm: Y = alpha * A' B' + beta * C as a 2-D matmul; alpha scales the
 * packed weights, beta a private copy of C. */
static bool build_gemm(const ox_dnnl_node *d, const ox_kernel_ctx *c, entry *e)
{
    const ox_tensor *a = in_f32(c, 0), *b = in_f32(c, 1), *cc = in_f32(c, 2);
    if (!a || !b || a->rank != 2 || b->rank != 2)
        return false;
    if (c->n_in > 2 && c->in[2] && !cc)
        return false;
    int64_t M = d->ta ? a->dims[1] : a->dims[0], K = d->ta ? a->dims[0] : a->dims[1];
    int64_t Kb = d->tb ? b->dims[1] : b->dims[0], N = d->tb ? b->dims[0] : b->dims[1];
    if (K != Kb || M < 1 || N < 1 || K < 1)
        return false;
    if (one_row_ours(M, N, K, d->ta))
        return false;
    if (d->beta == 0.0f)
        cc = NULL;
    dnnl_dims_t ad = {M, K}, as = {d->ta ? 1 : K, d->ta ? M : 1};
    dnnl_dims_t wd = {K, N}, ws = {d->tb ? 1 : N, d->tb ? K : 1};
    dnnl_dims_t yd = {M, N}, bd = {1, 1};
    if (cc) {
        /* C broadcast to (M, N): scalar, (N), (1, N), (M, 1), (M, N). */
        int64_t r = cc->rank, c0 = r == 2 ? cc->dims[0] : 1, c1 = r >= 1 ? cc->dims[r - 1] : 1;
        if (r > 2 || (c0 != 1 && c0 != M) || (c1 != 1 && c1 != N))
            return false;
        bd[0] = c0, bd[1] = c1;
        if (dnnl_memory_desc_init_by_tag(&e->bias_md, 2, bd, dnnl_f32, dnnl_ab))
            return false;
        e->has_bias = true;
        if (d->beta != 1.0f) {
            e->bias_copy = malloc((size_t)cc->numel * sizeof(float));
            if (!e->bias_copy)
                return false;
            const float *src = ox_tensor_data(cc);
            e->csrc = src;
            for (int64_t i = 0; i < cc->numel; i++)
                e->bias_copy[i] = d->beta * src[i];
        }
    }
    dnnl_memory_desc_t wuser, wany;
    if (dnnl_memory_desc_init_by_strides(&e->src_md, 2, ad, dnnl_f32, as) ||
        dnnl_memory_desc_init_by_strides(&wuser, 2, wd, dnnl_f32, ws) ||
        dnnl_memory_desc_init_by_tag(&wany, 2, wd, dnnl_f32, dnnl_format_tag_any) ||
        dnnl_memory_desc_init_by_tag(&e->dst_md, 2, yd, dnnl_f32, dnnl_ab))
        return false;
    dnnl_matmul_desc_t md;
    if (dnnl_matmul_desc_init(&md, &e->src_md, d->w_const ? &wany : &wuser,
                              e->has_bias ? &e->bias_md : NULL, &e->dst_md) != dnnl_success)
        return false;
    e->out_rank = 2;
    e->out_dims[0] = M, e->out_dims[1] = N;
    e->big_gemm = prefer_gemm_jit(c->pool ? ox_thread_pool_size(c->pool) : 1, 1, M, N, K);
    return finish_entry(d, e, &md, &wuser, ox_tensor_data(b), d->alpha);
}

/* True when a rank-r MatMul (dims already padded to rank r) is one 2-D
 * product of A's rows: B has no batch (all its batch dims 1) and A has one
 * (r > 2). A torch encoder as exported multiplies a [seq, 1, 256]
 * activation by a [256, 768] weight: as a batch that is 128 one-row
 * products against an unpacked B (oneDNN ran it at 28 GFLOP/s), as rows
 * one [128, 256] x [256, 768] product with B packed once. Both operands
 * are dense row-major, so the bytes are the same either way. */
static bool matmul_rows_2d(int r, const dnnl_dim_t *bdm)
{
    if (r <= 2)
        return false;
    for (int i = 0; i < r - 2; i++)
        if (bdm[i] != 1)
            return false;
    return true;
}

/* MatMul with numpy batching: both ranks >= 2, batch dims broadcast
 * (oneDNN takes size-1 batch dims as broadcast); 1-D operands decline. */
static bool build_matmul(const ox_dnnl_node *d, const ox_kernel_ctx *c, entry *e)
{
    const ox_tensor *a = in_f32(c, 0), *b = in_f32(c, 1);
    if (!a || !b || a->rank < 2 || b->rank < 2 || a->rank > 6 || b->rank > 6)
        return false;
    int r = a->rank > b->rank ? a->rank : b->rank;
    dnnl_dims_t ad, bdm, yd;
    for (int i = 0; i < r; i++) {
        int ia = i - (r - a->rank), ib = i - (r - b->rank);
        ad[i] = ia >= 0 ? a->dims[ia] : 1;
        bdm[i] = ib >= 0 ? b->dims[ib] : 1;
    }
    for (int i = 0; i < r - 2; i++) {
        if (ad[i] != bdm[i] && ad[i] != 1 && bdm[i] != 1)
            return false;
        yd[i] = ad[i] > bdm[i] ? ad[i] : bdm[i];
        if (ad[i] == 0 || bdm[i] == 0)
            return false;
    }
    int64_t M = ad[r - 2], K = ad[r - 1], N = bdm[r - 1];
    if (bdm[r - 2] != K || M < 1 || N < 1 || K < 1)
        return false;
    yd[r - 2] = M, yd[r - 1] = N;
    e->out_rank = r;
    for (int i = 0; i < r; i++)
        e->out_dims[i] = yd[i];
    /* B without batch (a 2-D weight, or leading 1s): A's batch dims are
     * rows of one 2-D product (matmul_rows_2d), never a batch of M-row
     * products against a broadcast B. */
    int rr = r;
    if (matmul_rows_2d(r, bdm)) {
        int64_t rows = 1;
        for (int i = 0; i < r - 1; i++)
            rows *= ad[i];
        rr = 2;
        ad[0] = rows, ad[1] = K;
        bdm[0] = K, bdm[1] = N;
        yd[0] = rows, yd[1] = N;
    }
    r = rr;
    if (r == 2 && one_row_ours(ad[0], N, K, false))
        return false;
    dnnl_memory_desc_t wuser, wany;
    if (!md_plain(&e->src_md, r, ad) || !md_plain(&wuser, r, bdm) ||
        !md_plain(&e->dst_md, r, yd) ||
        dnnl_memory_desc_init_by_tag(&wany, r, bdm, dnnl_f32, dnnl_format_tag_any))
        return false;
    /* Constant weights broadcast over a batch keep the plain layout. */
    bool pack = d->w_const;
    for (int i = 0; i < r - 2; i++)
        if (bdm[i] != yd[i])
            pack = false;
    if (d->mm_bias) {
        /* The fused Add's output must be the product's shape: a row of N
         * whose other dims are 1 and whose rank is not above the output's. */
        const ox_tensor *bt = d->mm_bias;
        if (bt->dtype != OX_DT_FLOAT || !ox_tensor_data(bt) || bt->rank > e->out_rank ||
            bt->rank < 1 || bt->dims[bt->rank - 1] != N || bt->numel != N)
            return false;
        dnnl_dims_t bd;
        for (int i = 0; i < r; i++)
            bd[i] = i == r - 1 ? N : 1;
        if (!md_plain(&e->bias_md, r, bd))
            return false;
        e->has_bias = true;
    }
    dnnl_matmul_desc_t md;
    if (dnnl_matmul_desc_init(&md, &e->src_md, pack ? &wany : &wuser,
                              e->has_bias ? &e->bias_md : NULL, &e->dst_md) != dnnl_success)
        return false;
    int64_t batch = 1;   /* after matmul_rows_2d folded A's batch into rows */
    for (int i = 0; i < r - 2; i++)
        batch *= yd[i];
    e->big_gemm = prefer_gemm_jit(c->pool ? ox_thread_pool_size(c->pool) : 1, batch, yd[r - 2], N, K);
    ox_dnnl_node dd = *d;
    dd.w_const = pack;
    return finish_entry(&dd, e, &md, &wuser, ox_tensor_data(b), 1.0f);
}

/* ---- running ------------------------------------------------------------------- */

static int make_key(const ox_kernel_ctx *c, int64_t *key)
{
    int n = 0;
    for (int i = 0; i < c->n_in && i < 3; i++) {
        const ox_tensor *t = ox_kernel_in(c, i);
        if (!t) {
            key[n++] = -1;
            continue;
        }
        if (t->rank > MAXD)
            return -1;
        /* The element type too: a primitive built for float32 must not
         * read a float16 input of the same shape (an untyped graph input
         * may change type between runs); float16 declines and stays on
         * our kernels. */
        key[n++] = t->dtype;
        key[n++] = t->rank;
        for (int j = 0; j < t->rank; j++)
            key[n++] = t->dims[j];
    }
    key[n++] = tl_in_nhwc | (tl_z_nhwc << 1);
    /* The team size the primitive is made for: oneDNN fixes its work split
     * (and runs that many threads, whatever omp_set_num_threads says later)
     * at creation, so a primitive made while the load guard ran a team of 1
     * stayed serial for the executor's life, and one made for 2 ignored a
     * later cap (threadpool.c). */
    key[n++] = tl_threads;
    return n;
}

static entry *lookup(ox_dnnl_node *d, const ox_kernel_ctx *c)
{
    int64_t key[3 * (MAXD + 2) + 2];   /* per input: dtype, rank, dims; + NHWC flag, team */
    int n = make_key(c, key);
    if (n < 0)
        return NULL;
    for (int i = 0; i < NCACHE; i++) {
        entry *e = &d->cache[i];
        if (e->used && e->n_key == n && !memcmp(e->key, key, (size_t)n * sizeof *key))
            return e;
    }
    entry *e = &d->cache[d->next_victim];
    d->next_victim = (d->next_victim + 1) % NCACHE;
    entry_clear(e);
    e->used = true;
    e->n_key = n;
    memcpy(e->key, key, (size_t)n * sizeof *key);
    bool ok = d->kind == K_CONV ? build_conv(d, c, e)
              : d->kind == K_GEMM ? build_gemm(d, c, e)
                                  : build_matmul(d, c, e);
    if (!ok) {
        entry_clear(e);
        e->used = true;
        e->n_key = n;
        memcpy(e->key, key, (size_t)n * sizeof *key);
        e->declined = true;
    }
    return e;
}

static bool stream_ready(void)
{
    if (!tl_stream && dnnl_stream_create(&tl_stream, g_engine, dnnl_stream_default_flags) !=
                          dnnl_success) {
        tl_stream = NULL;
        return false;
    }
    return true;
}

static bool run_locked(ox_dnnl_node *d, ox_kernel_ctx *c, ox_status *st)
{
    entry *e = lookup(d, c);
    if (!e || e->declined)
        return false;
    /* FusedConv's Z must already have the output's shape to seed the sum. */
    const ox_tensor *z = NULL;
    if (d->z_input) {
        z = in_f32(c, 3);
        int64_t n = 1;
        for (int i = 0; i < e->out_rank; i++)
            n *= e->out_dims[i];
        if (!z || z->numel != n)
            return false;
        /* The exact shape too (a residual Add fused at plan time: equal
         * element counts of different shapes would broadcast to more). */
        bool same = z->rank == e->out_rank;
        for (int i = 0; same && i < z->rank; i++)
            same = z->dims[i] == e->out_dims[i];
        if (!same)
            return false;
    }
    const ox_tensor *x = ox_kernel_in(c, 0), *w = ox_kernel_in(c, 1);
    const ox_tensor *b = !e->has_bias ? NULL : d->mm_bias ? d->mm_bias : ox_kernel_in(c, 2);
    const void *bp = e->bias_copy ? (const void *)e->bias_copy : b ? ox_tensor_data(b) : NULL;
    const void *wp = e->packed ? e->packed : ox_tensor_data(w);
    if ((e->packed && ox_tensor_data(w) != e->wsrc) ||
        (e->bias_copy && (!b || ox_tensor_data(b) != e->csrc))) {
        /* An overridden initializer: our kernel takes it. */
        return false;
    }
    ox_tensor *y = ox_kernel_output(c, 0, OX_DT_FLOAT, e->out_rank, e->out_dims);
    if (!y) {
        *st = c->err && c->err->status ? c->err->status : OX_ENOMEM;
        return true;
    }
    float *yp = ox_tensor_mutable_data(y);
    /* Z in the primitive's dst layout already: copied into its dst buffer
     * (the blocked one when a reorder to the tensor follows), unless the
     * executor placed the output on Z's own bytes (exec.c
     * chain_direct_slot): then it already is there. A reorder of Z into the
     * very buffer it reads gets a private copy of Z first. */
    const void *zsrc = z ? ox_tensor_data(z) : NULL;
    void *ztmp = NULL;
    if (z && yp && !e->r_z && zsrc != (e->r_dst ? e->bdst : yp))
        memcpy(e->r_dst ? e->bdst : yp, zsrc, (size_t)z->numel * sizeof(float));
    if (z && yp && e->r_z && !e->r_dst && zsrc == yp) {
        ztmp = malloc((size_t)z->numel * sizeof(float) + 1);
        if (!ztmp) {
            *st = ox_errorf(c->err, OX_ENOMEM, "out of memory");
            return true;
        }
        memcpy(ztmp, zsrc, (size_t)z->numel * sizeof(float));
        zsrc = ztmp;
    }
    dnnl_memory_t ms[4] = {0};
    dnnl_exec_arg_t args[4];
    int na = 0;
    bool ok = yp != NULL || y->numel == 0;
    dnnl_memory_t ux = NULL, uy = NULL;
    if (e->r_src) {
        ok = ok && dnnl_memory_create(&ux, &e->usrc_md, g_engine, (void *)ox_tensor_data(x)) ==
                       dnnl_success;
        ok = ok && dnnl_memory_create(&ms[0], &e->src_md, g_engine, e->bsrc) == dnnl_success;
    } else {
        ok = ok && dnnl_memory_create(&ms[0], &e->src_md, g_engine,
                                      (void *)ox_tensor_data(x)) == dnnl_success;
    }
    if (e->r_dst) {
        ok = ok && dnnl_memory_create(&uy, &e->udst_md, g_engine, yp) == dnnl_success;
        yp = e->bdst;
    }
    ok = ok && dnnl_memory_create(&ms[1], &e->wei_md, g_engine, (void *)wp) == dnnl_success;
    ok = ok && dnnl_memory_create(&ms[2], &e->dst_md, g_engine, yp) == dnnl_success;
    ok = ok && (!bp || dnnl_memory_create(&ms[3], &e->bias_md, g_engine, (void *)bp) ==
                           dnnl_success);
    if (ok) {
        args[na++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, ms[0]};
        args[na++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, ms[1]};
        args[na++] = (dnnl_exec_arg_t){DNNL_ARG_DST, ms[2]};
        if (bp)
            args[na++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, ms[3]};
        if (e->r_src) {
            dnnl_exec_arg_t ra[2] = {{DNNL_ARG_FROM, ux}, {DNNL_ARG_TO, ms[0]}};
            ok = dnnl_primitive_execute(e->r_src, tl_stream, 2, ra) == dnnl_success;
        }
        if (ok && z && e->r_z) {
            /* Z seeds the sum post-op in the primitive's own dst layout. */
            dnnl_memory_t zm = NULL;
            ok = dnnl_memory_create(&zm, &e->z_md, g_engine, (void *)zsrc) == dnnl_success;
            dnnl_exec_arg_t ra[2] = {{DNNL_ARG_FROM, zm}, {DNNL_ARG_TO, ms[2]}};
            ok = ok && dnnl_primitive_execute(e->r_z, tl_stream, 2, ra) == dnnl_success;
            if (zm)
                dnnl_memory_destroy(zm);
        }
        ok = ok && dnnl_primitive_execute(e->prim, tl_stream, na, args) == dnnl_success;
        if (ok && e->r_dst) {
            dnnl_exec_arg_t ra[2] = {{DNNL_ARG_FROM, ms[2]}, {DNNL_ARG_TO, uy}};
            ok = dnnl_primitive_execute(e->r_dst, tl_stream, 2, ra) == dnnl_success;
        }
        ok = ok && dnnl_stream_wait(tl_stream) == dnnl_success;
    }
    free(ztmp);
    if (ux)
        dnnl_memory_destroy(ux);
    if (uy)
        dnnl_memory_destroy(uy);
    for (int i = 0; i < 4; i++)
        if (ms[i])
            dnnl_memory_destroy(ms[i]);
    if (!ok)
        *st = ox_errorf(c->err, OX_EINVAL, "oneDNN primitive failed");
    atomic_fetch_add(&g_runs, 1);
    if (d->act.n)
        atomic_fetch_add(&g_runs_act, 1);
    return true;
}


/* ---- lazy channel Concat: a Conv on the parts of its input ---------------------- */

#define MAXPARTS 8

typedef struct parts_cache {
    int n;
    int64_t key[MAXPARTS * 4 + 3];
    bool declined;
    const void *wfrom;         /* the weights the slices were cut from */
    /* Weight slices: plain structs over malloc'd floats (read by build_conv
     * only; no tensor buffer, so steady-state runs count no allocation). */
    ox_tensor wslice[MAXPARTS];
    ox_buffer wbuf[MAXPARTS];
    entry e[MAXPARTS];
} parts_cache;

static _Thread_local const ox_tensor *const *tl_parts;
static _Thread_local int tl_parts_n;
static _Thread_local ox_dnnl_fill_fn tl_fill;
static _Thread_local void *tl_fill_user;
static atomic_long g_parts_runs;

long ox_dnnl_parts_runs(void)
{
    return atomic_load(&g_parts_runs);
}

void ox_dnnl_set_parts(const ox_tensor *const *parts, int n, ox_dnnl_fill_fn fill, void *user)
{
    tl_parts = parts;
    tl_parts_n = parts && fill ? n : 0;
    tl_fill = fill;
    tl_fill_user = user;
}

bool ox_dnnl_conv_splittable(const ox_dnnl_node *d)
{
    return d && d->kind == K_CONV && !d->z_input && d->group == 1 && d->w_const &&
           d->node->n_inputs >= 2;
}

/* The parts path declined: the concatenation is written into input 0 and
 * the node runs as usual. True (with *st) only when that failed. */
static bool parts_fill(ox_status *st)
{
    if (!tl_parts_n)
        return false;
    ox_dnnl_fill_fn fill = tl_fill;
    void *user = tl_fill_user;
    ox_dnnl_set_parts(NULL, 0, NULL, NULL);
    ox_status s = fill(user);
    if (s == OX_OK)
        return false;
    *st = s;
    return true;
}

static void parts_clear(parts_cache *pc)
{
    for (int i = 0; i < MAXPARTS; i++) {
        entry_clear(&pc->e[i]);
        free(pc->wbuf[i].data);
        memset(&pc->wbuf[i], 0, sizeof pc->wbuf[i]);
        memset(&pc->wslice[i], 0, sizeof pc->wslice[i]);
    }
    pc->n = 0;
    pc->declined = false;
    pc->wfrom = NULL;
}

static void parts_free(ox_dnnl_node *d)
{
    if (d->pc) {
        parts_clear(d->pc);
        free(d->pc);
        d->pc = NULL;
    }
}

/* One primitive per part: part i reads its NHWC part and the weights of its
 * input channels [off, off + C_i) (a private copy, packed once), and all
 * write the one NHWC output, the later ones through a `sum` post-op on it;
 * the bias and the activation go with the last. Built when the parts'
 * shapes change; declined (false) unless every primitive is NHWC to NHWC
 * without reorders. */
static bool parts_build(ox_dnnl_node *d, const ox_kernel_ctx *c, parts_cache *pc)
{
    const ox_tensor *w = in_f32(c, 1), *b = in_f32(c, 2);
    int n = tl_parts_n;
    if (!w || w->rank != 4 || (c->n_in > 2 && c->in[2] && !b) || n > MAXPARTS)
        return false;
    int64_t M = w->dims[0], Ct = w->dims[1], kk = w->dims[2] * w->dims[3], off = 0;
    const float *wd = ox_tensor_data(w);
    for (int i = 0; i < n; i++) {
        const ox_tensor *x = tl_parts[i];
        if (!x || x->dtype != OX_DT_FLOAT || x->rank != 4 || !ox_tensor_data(x))
            return false;
        int64_t Ci = x->dims[1], dims[4] = {M, Ci, w->dims[2], w->dims[3]};
        if (off + Ci > Ct)
            return false;
        size_t nb = (size_t)(M * Ci * kk) * sizeof(float);
        float *wp = malloc(nb ? nb : 1);
        if (!wp)
            return false;
        for (int64_t m = 0; m < M; m++)
            memcpy(wp + m * Ci * kk, wd + (m * Ct + off) * kk, (size_t)(Ci * kk) * sizeof(float));
        pc->wbuf[i] = (ox_buffer){.refcount = 1, .data = wp, .size = nb};
        ox_tensor *ws = &pc->wslice[i];
        *ws = (ox_tensor){.dtype = OX_DT_FLOAT, .rank = 4, .numel = M * Ci * kk,
                          .buf = &pc->wbuf[i], .nbytes = nb};
        memcpy(ws->dims, dims, sizeof dims);
        off += Ci;
        ox_rval rx = {.kind = OX_RV_TENSOR, .t = (ox_tensor *)x};
        ox_rval rw = {.kind = OX_RV_TENSOR, .t = ws};
        ox_rval rb = {.kind = OX_RV_TENSOR, .t = (ox_tensor *)b};
        ox_rval *fin[3] = {&rx, &rw, b ? &rb : NULL};
        ox_kernel_ctx fc = *c;
        fc.in = fin;
        fc.n_in = i == n - 1 && b ? 3 : 2;
        ox_dnnl_node dd = *d;
        dd.z_input = i > 0;     /* the sum of the parts so far */
        if (i < n - 1)
            dd.act.n = 0;
        tl_in_nhwc = true;
        tl_z_nhwc = true;
        entry *e = &pc->e[i];
        bool ok = build_conv(&dd, &fc, e) && e->prim && !e->blocked && !e->r_z;
        tl_z_nhwc = false;
        if (!ok)
            return false;
        if (i > 0 && memcmp(e->out_dims, pc->e[0].out_dims, sizeof e->out_dims))
            return false;
    }
    pc->wfrom = wd;
    return off == Ct;
}

static bool run_parts_locked(ox_dnnl_node *d, ox_kernel_ctx *c, ox_status *st)
{
    int n = tl_parts_n;
    const ox_tensor *x = in_f32(c, 0), *w = in_f32(c, 1);
    if (!ox_dnnl_conv_splittable(d) || !tl_in_nhwc || !d->out_nhwc || n < 2 || n > MAXPARTS ||
        !x || !w)
        return false;
    int64_t key[MAXPARTS * 4 + 3];
    int nk = 0;
    key[nk++] = n;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < 4; j++)
            key[nk++] = tl_parts[i]->rank == 4 ? tl_parts[i]->dims[j] : -1;
    key[nk++] = (int64_t)(c->n_in > 2 && c->in[2]);
    /* oneDNN fixes a primitive's thread split when it is made: a team
     * capped by the load guard must not leave the node serial. */
    key[nk++] = tl_threads;
    if (!d->pc && !(d->pc = calloc(1, sizeof *d->pc)))
        return false;
    parts_cache *pc = d->pc;
    if (pc->n != nk || memcmp(pc->key, key, (size_t)nk * sizeof *key)) {
        parts_clear(pc);
        pc->n = nk;
        memcpy(pc->key, key, (size_t)nk * sizeof *key);
        pc->declined = !parts_build(d, c, pc);
    }
    /* An overridden weight initializer: the concatenation and our kernel. */
    if (pc->declined || ox_tensor_data(w) != pc->wfrom)
        return false;
    const entry *last = &pc->e[n - 1];
    ox_tensor *y = ox_kernel_output(c, 0, OX_DT_FLOAT, last->out_rank, last->out_dims);
    const ox_tensor *const *parts = tl_parts;
    ox_dnnl_set_parts(NULL, 0, NULL, NULL);   /* taken: nothing to fill any more */
    if (!y) {
        *st = c->err && c->err->status ? c->err->status : OX_ENOMEM;
        return true;
    }
    float *yp = ox_tensor_mutable_data(y);
    const ox_tensor *b = last->has_bias ? ox_kernel_in(c, 2) : NULL;
    bool ok = yp != NULL || y->numel == 0;
    for (int i = 0; ok && i < n; i++) {
        const entry *e = &pc->e[i];
        dnnl_memory_t ms[4] = {0};
        ok = dnnl_memory_create(&ms[0], &e->src_md, g_engine, (void *)ox_tensor_data(parts[i])) ==
                 dnnl_success &&
             dnnl_memory_create(&ms[1], &e->wei_md, g_engine,
                                e->packed ? e->packed : pc->wbuf[i].data) ==
                 dnnl_success &&
             dnnl_memory_create(&ms[2], &e->dst_md, g_engine, yp) == dnnl_success &&
             (!b || dnnl_memory_create(&ms[3], &e->bias_md, g_engine, (void *)ox_tensor_data(b)) ==
                        dnnl_success);
        dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, ms[0]}, {DNNL_ARG_WEIGHTS, ms[1]},
                                   {DNNL_ARG_DST, ms[2]}, {DNNL_ARG_BIAS, ms[3]}};
        ok = ok && dnnl_primitive_execute(e->prim, tl_stream, i == n - 1 && b ? 4 : 3, args) ==
                       dnnl_success;
        for (int j = 0; j < 4; j++)
            if (ms[j])
                dnnl_memory_destroy(ms[j]);
    }
    ok = ok && dnnl_stream_wait(tl_stream) == dnnl_success;
    if (!ok)
        *st = ox_errorf(c->err, OX_EINVAL, "oneDNN primitive failed");
    atomic_fetch_add(&g_runs, 1);
    atomic_fetch_add(&g_parts_runs, 1);
    if (d->act.n)
        atomic_fetch_add(&g_runs_act, 1);
    return true;
}

/* oneDNN's BLAS-like SGEMM (its JIT AVX-512 GEMM, row-major) for the GEMMs
 * our kernels issue themselves: com.microsoft Attention's projection and
 * per-head products, convolution fallbacks. Its OpenMP team is the pool's
 * size; called from inside one of our parallel loops (a nested region) it
 * runs on the calling thread alone. */
bool ox_dnnl_sgemm(int threads, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                   const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                   float *C, int64_t ldc)
{
    if (!ox_dnnl_enabled())
        return false;
    if (!omp_in_parallel()) {
        int nt = ox_threads_team(threads < 1 ? 1 : threads);
        if (nt != tl_threads) {
            omp_set_num_threads(nt);
            tl_threads = nt;
        }
    }
    return dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, alpha, A, lda, B, ldb, beta, C,
                      ldc) == dnnl_success;
}

/* One run of a node at a time: its cache entries and their reorder
 * buffers are shared (concurrent runs of one executor serialize here). */
bool ox_dnnl_conv2d_plain(const ox_dnnl_node *d)
{
    return d && d->kind == K_CONV && !d->z_input && d->node->n_inputs >= 1;
}

bool ox_dnnl_conv_reader(const ox_dnnl_node *d)
{
    return d && d->kind == K_CONV && d->node->n_inputs >= 1;
}

bool ox_dnnl_set_bias(ox_dnnl_node *d, const ox_tensor *bias)
{
    if (!d || d->kind != K_MATMUL || d->act.n || !bias || bias->dtype != OX_DT_FLOAT)
        return false;
    d->mm_bias = bias;
    return true;
}

void ox_dnnl_set_out_nhwc(ox_dnnl_node *d, bool on)
{
    /* With a Z input too: Z is reordered into the dst layout (finish_entry). */
    if (d && d->kind == K_CONV)
        d->out_nhwc = on;
}

bool ox_dnnl_conv_any(const ox_dnnl_node *d)
{
    return d && d->kind == K_CONV && d->node->n_inputs >= 1;
}

bool ox_dnnl_has_z(const ox_dnnl_node *d)
{
    return d && d->z_input;
}

bool ox_dnnl_run(ox_dnnl_node *d, ox_kernel_ctx *c, ox_status *st, bool in_nhwc,
                 bool *out_nhwc)
{
    return ox_dnnl_run_ex(d, c, st, in_nhwc, false, out_nhwc);
}

bool ox_dnnl_run_ex(ox_dnnl_node *d, ox_kernel_ctx *c, ox_status *st, bool in_nhwc, bool z_nhwc,
                    bool *out_nhwc)
{
    *st = OX_OK;
    *out_nhwc = false;
    if (!d || !g_engine || !stream_ready())
        return parts_fill(st);
    /* Before creating primitives too: oneDNN sizes its work split and
     * scratchpads by the thread count it sees then. The team is the pool's
     * size (the one thread policy, threadpool.h); our loops run on the same
     * OpenMP team, never at the same time as a primitive. */
    int nt = ox_threads_team(c->pool ? ox_thread_pool_size(c->pool) : 1);
    if (nt != tl_threads) {
        omp_set_num_threads(nt);
        tl_threads = nt;
    }
    pthread_mutex_lock(&d->lock);
    tl_in_nhwc = in_nhwc;
    tl_z_nhwc = z_nhwc && d->z_input;
    bool r = false;
    if (tl_parts_n && !(r = run_parts_locked(d, c, st)))
        r = parts_fill(st);   /* materialized; an error ends the node */
    if (!r)
        r = run_locked(d, c, st);
    tl_in_nhwc = false;
    tl_z_nhwc = false;
    pthread_mutex_unlock(&d->lock);
    /* Rank-4 outputs only (build_conv falls back to plain otherwise). */
    *out_nhwc = r && *st == OX_OK && d->out_nhwc && c->out[0] && c->out[0]->t &&
                c->out[0]->t->rank == 4;
    return r;
}

#else /* !OX_HAVE_DNNL: our own kernels run everything */

bool ox_dnnl_enabled(void) { return false; }
bool ox_dnnl_act_fusable(const ox_node *act) { (void)act; return false; }
ox_dnnl_node *ox_dnnl_plan(const ox_node *n, const ox_node *act, unsigned const_in)
{
    (void)n, (void)act, (void)const_in;
    return NULL;
}
bool ox_dnnl_run(ox_dnnl_node *d, ox_kernel_ctx *c, ox_status *st, bool in_nhwc,
                 bool *out_nhwc)
{
    (void)d, (void)c, (void)in_nhwc;
    *st = OX_OK;
    *out_nhwc = false;
    return false;
}
bool ox_dnnl_conv2d_plain(const ox_dnnl_node *d) { (void)d; return false; }
bool ox_dnnl_act_fusable_ex(const ox_node *act, const ox_tensor *const *act_in)
{
    (void)act, (void)act_in;
    return false;
}
ox_dnnl_node *ox_dnnl_plan_ex(const ox_node *n, const ox_dnnl_epilogue *ep, unsigned const_in)
{
    (void)n, (void)ep, (void)const_in;
    return NULL;
}
bool ox_dnnl_run_ex(ox_dnnl_node *d, ox_kernel_ctx *c, ox_status *st, bool in_nhwc, bool z_nhwc,
                    bool *out_nhwc)
{
    (void)d, (void)c, (void)in_nhwc, (void)z_nhwc;
    *st = OX_OK;
    *out_nhwc = false;
    return false;
}
bool ox_dnnl_conv_any(const ox_dnnl_node *d) { (void)d; return false; }
bool ox_dnnl_has_z(const ox_dnnl_node *d) { (void)d; return false; }
bool ox_dnnl_conv_reader(const ox_dnnl_node *d) { (void)d; return false; }
void ox_dnnl_set_out_nhwc(ox_dnnl_node *d, bool on) { (void)d, (void)on; }
bool ox_dnnl_set_bias(ox_dnnl_node *d, const ox_tensor *bias)
{
    (void)d, (void)bias;
    return false;
}
void ox_dnnl_free(ox_dnnl_node *d) { (void)d; }
void ox_dnnl_set_parts(const ox_tensor *const *parts, int n, ox_dnnl_fill_fn fill, void *user)
{
    (void)parts, (void)n, (void)fill, (void)user;
}
bool ox_dnnl_conv_splittable(const ox_dnnl_node *d) { (void)d; return false; }
long ox_dnnl_parts_runs(void) { return 0; }
bool ox_dnnl_sgemm(int threads, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                   const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                   float *C, int64_t ldc)
{
    (void)threads, (void)ta, (void)tb, (void)M, (void)N, (void)K, (void)alpha, (void)A;
    (void)lda, (void)B, (void)ldb, (void)beta, (void)C, (void)ldc;
    return false;
}
void ox_dnnl_counts(long *runs, long *with_act) { *runs = 0, *with_act = 0; }
const char *ox_dnnl_version(void) { return NULL; }

#endif
