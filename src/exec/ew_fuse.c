/* Elementwise groups in one pass (ew_fuse.h). */
/* Vectorized like the unary/binary kernels (unary.c): no trapping math,
 * no errno, so the selects are branch-free and the loops vectorize. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "no-trapping-math", "no-math-errno")
#endif

#include "exec/ew_fuse.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exec/k_elementwise/ew.h"
#include "exec/k_elementwise/fastmath.h"
#include "onnxscope/threadpool.h"

typedef enum ew_op {
    EW_ADD, EW_SUB, EW_MUL, EW_DIV, EW_POW,
    EW_RELU, EW_NEG, EW_ABS, EW_EXP, EW_LOG, EW_SQRT, EW_RECIP, EW_TANH, EW_SIGMOID, EW_ERF,
} ew_op;

static const struct {
    const char *name;
    ew_op op;
    int arity;
} ew_ops[] = {
    {"Add", EW_ADD, 2},       {"Sub", EW_SUB, 2},     {"Mul", EW_MUL, 2},
    {"Div", EW_DIV, 2},       {"Pow", EW_POW, 2},     {"Relu", EW_RELU, 1},
    {"Neg", EW_NEG, 1},       {"Abs", EW_ABS, 1},     {"Exp", EW_EXP, 1},
    {"Log", EW_LOG, 1},       {"Sqrt", EW_SQRT, 1},   {"Reciprocal", EW_RECIP, 1},
    {"Tanh", EW_TANH, 1},     {"Sigmoid", EW_SIGMOID, 1}, {"Erf", EW_ERF, 1},
};

struct ox_ew_prog {
    int n, n_leaves;
    ox_ew_member m[OX_EW_MAX_MEMBERS];
    ew_op op[OX_EW_MAX_MEMBERS];
    /* Buffers of the members computed on a smaller domain, kept for the
     * next run (taken with `busy`: a concurrent run allocates its own). */
    float *cache;
    size_t cache_n;
    int busy;
};

static int op_index(const ox_node *n)
{
    if (!n || !n->op_type || (n->domain && n->domain[0]))
        return -1;
    for (size_t i = 0; i < sizeof ew_ops / sizeof ew_ops[0]; i++)
        if (!strcmp(n->op_type, ew_ops[i].name))
            return (int)i;
    return -1;
}

bool ox_ew_fusable(const ox_node *n, int64_t opset)
{
    int i = op_index(n);
    if (i < 0 || opset < 7 || n->n_inputs != ew_ops[i].arity || n->n_outputs != 1 ||
        !n->outputs[0])
        return false;
    for (int k = 0; k < n->n_inputs; k++)
        if (!n->inputs[k])
            return false;
    return true;
}

ox_ew_prog *ox_ew_prog_new(int n_members, const ox_ew_member *m, int n_leaves)
{
    if (n_members < 1 || n_members > OX_EW_MAX_MEMBERS || n_leaves < 1 ||
        n_leaves > OX_EW_MAX_LEAVES)
        return NULL;
    ox_ew_prog *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->n = n_members;
    p->n_leaves = n_leaves;
    for (int i = 0; i < n_members; i++) {
        int oi = op_index(m[i].node);
        if (oi < 0 || !m[i].fn) {
            free(p);
            return NULL;
        }
        p->m[i] = m[i];
        p->op[i] = ew_ops[oi].op;
        for (int k = 0; k < ew_ops[oi].arity; k++) {
            int s = m[i].src[k];
            if (s >= n_leaves || (s < 0 && -1 - s >= i)) {   /* reads a later member */
                free(p);
                return NULL;
            }
        }
    }
    return p;
}

void ox_ew_prog_free(ox_ew_prog *p)
{
    if (p)
        free(p->cache);
    free(p);
}

int ox_ew_prog_members(const ox_ew_prog *p)
{
    return p ? p->n : 0;
}

/* ---- the loops: the kernels' float expressions (unary.c, binary.c) ---------- */

#define BIN(NAME, EXPR)                                                       \
    static inline __attribute__((always_inline)) void NAME(const float *a, const float *b, float *y, int64_t n) \
    {                                                                         \
        for (int64_t i = 0; i < n; i++) {                                     \
            float x = a[i], z = b[i];                                         \
            (void)z;                                                          \
            y[i] = (EXPR);                                                    \
        }                                                                     \
    }
#define UN(NAME, EXPR)                                                        \
    static inline __attribute__((always_inline)) void NAME(const float *a, float *y, int64_t n)        \
    {                                                                         \
        for (int64_t i = 0; i < n; i++) {                                     \
            float x = a[i];                                                   \
            y[i] = (EXPR);                                                    \
        }                                                                     \
    }

BIN(l_add, x + z)
BIN(l_sub, x - z)
BIN(l_mul, x * z)
BIN(l_div, x / z)
BIN(l_pow, powf(x, z))
BIN(l_sq, x * x)
BIN(l_cube, x * x * x)
UN(l_relu, (x < 0 ? 0.0f : x))
UN(l_neg, -x)
UN(l_abs, fabsf(x))
UN(l_exp, ox__expf(x))
UN(l_log, logf(x))
UN(l_sqrt, sqrtf(x))
UN(l_recip, 1.0f / x)
UN(l_tanh, ox__tanhf(x))
UN(l_sigmoid, 1.0f / (1.0f + ox__expf(-x)))
UN(l_erf, ox__erff(x))

/* ---- running a group ------------------------------------------------------------ */

enum { BLK = 256, MAXS = OX_EW_MAX_LEAVES + OX_EW_MAX_MEMBERS };

/* How an operand is indexed by output element i: its own i (the output's
 * shape), i modulo the row length, i divided by the column's elements, or
 * a single value (L_NONE: not read by the pass). */
typedef enum lkind { L_FULL, L_ROW, L_COL, L_SCALAR, L_NONE } lkind;

/* One operation of a pass: operands a, b are sources (>= 0) or registers
 * of earlier operations of the pass (-1 - k); the result goes to `out` + i
 * when out is set, else to register k. */
typedef struct ew_ins {
    ew_op op;
    int pow_k;                      /* Pow: 2 (x*x), 3 (x*x*x) or 0 (powf) */
    int a, b;
    float *out;
} ew_ins;

typedef struct ew_job {
    int n;
    ew_ins ins[OX_EW_MAX_MEMBERS];
    int n_src;
    const float *lp[MAXS];
    lkind lk[MAXS];
    int64_t period;                 /* the rows' length; 0: no row operands */
    int64_t inner;                  /* elements per column value; 0: none */
} ew_job;

/* Elements b .. e of a pass's domain, in blocks that never cross a row or a
 * column. */
OX__EW_CLONES static void ew_chunk(void *ctx, int64_t b, int64_t e)
{
    const ew_job *j = ctx;
    float regs[OX_EW_MAX_MEMBERS][BLK] __attribute__((aligned(64)));
    float scal[MAXS][BLK] __attribute__((aligned(64)));
    for (int l = 0; l < j->n_src; l++)
        if (j->lk[l] == L_SCALAR)
            for (int t = 0; t < BLK; t++)
                scal[l][t] = j->lp[l][0];
    const float *src[MAXS];
    int64_t col_at = -1;   /* the column value scal holds for L_COL sources */
    for (int64_t i = b; i < e;) {
        int64_t off = j->period ? i % j->period : 0;
        int64_t len = e - i < BLK ? e - i : BLK;
        if (j->period && j->period - off < len)
            len = j->period - off;
        if (j->inner && j->inner - i % j->inner < len)
            len = j->inner - i % j->inner;
        if (j->inner && i / j->inner != col_at) {
            /* A block never crosses a column: its value fills what the
             * column's blocks read (at most the column's length). */
            col_at = i / j->inner;
            int64_t fill = j->inner < BLK ? j->inner : BLK;
            for (int l = 0; l < j->n_src; l++)
                if (j->lk[l] == L_COL)
                    for (int64_t t = 0; t < fill; t++)
                        scal[l][t] = j->lp[l][col_at];
        }
        for (int l = 0; l < j->n_src; l++)
            src[l] = j->lk[l] == L_FULL ? j->lp[l] + i : j->lk[l] == L_ROW ? j->lp[l] + off
                     : j->lk[l] == L_NONE ? NULL : scal[l];
        for (int m = 0; m < j->n; m++) {
            const ew_ins *in = &j->ins[m];
            float *y = in->out ? in->out + i : regs[m];
            const float *a = in->a >= 0 ? src[in->a] : regs[-1 - in->a];
            const float *c = in->op > EW_POW ? NULL : in->b >= 0 ? src[in->b] : regs[-1 - in->b];
            switch (in->op) {
            case EW_ADD: l_add(a, c, y, len); break;
            case EW_SUB: l_sub(a, c, y, len); break;
            case EW_MUL: l_mul(a, c, y, len); break;
            case EW_DIV: l_div(a, c, y, len); break;
            case EW_POW:
                if (in->pow_k == 2) l_sq(a, c, y, len);
                else if (in->pow_k == 3) l_cube(a, c, y, len);
                else l_pow(a, c, y, len);
                break;
            case EW_RELU: l_relu(a, y, len); break;
            case EW_NEG: l_neg(a, y, len); break;
            case EW_ABS: l_abs(a, y, len); break;
            case EW_EXP: l_exp(a, y, len); break;
            case EW_LOG: l_log(a, y, len); break;
            case EW_SQRT: l_sqrt(a, y, len); break;
            case EW_RECIP: l_recip(a, y, len); break;
            case EW_TANH: l_tanh(a, y, len); break;
            case EW_SIGMOID: l_sigmoid(a, y, len); break;
            case EW_ERF: l_erf(a, y, len); break;
            }
        }
        i += len;
    }
}

static long slow_runs;

long ox_ew_slow_runs(void)
{
    return __atomic_load_n(&slow_runs, __ATOMIC_RELAXED);
}

/* The members one after the other with their own kernels, intermediates on
 * the heap; the root writes the real output. */
static ox_status run_slow(ox_kernel_ctx *c, const ox_ew_prog *p)
{
    __atomic_add_fetch(&slow_runs, 1, __ATOMIC_RELAXED);
    ox_rval *tmp[OX_EW_MAX_MEMBERS] = {0};
    ox_status st = OX_OK;
    for (int m = 0; m < p->n && st == OX_OK; m++) {
        const ox_ew_member *mb = &p->m[m];
        int ar = mb->node->n_inputs;
        ox_rval *in[2] = {0};
        for (int k = 0; k < ar; k++)
            in[k] = mb->src[k] >= 0 ? c->in[mb->src[k]] : tmp[-1 - mb->src[k]];
        if (m == p->n - 1) {
            ox_kernel_ctx k = *c;
            k.n_in = ar;
            k.in = in;
            k.opset = mb->opset;
            st = mb->fn(&k);
        } else {
            ox_kernel_ctx k = {
                .node = mb->node, .opset = mb->opset, .n_in = ar, .in = in, .n_out = 1,
                .out = &tmp[m], .exec = c->exec, .pool = c->pool, .err = c->err, .priv = NULL,
            };
            st = mb->fn(&k);
            if (st == OX_OK && !tmp[m])
                st = ox_errorf(c->err, OX_EINVAL, "%s produced no value", mb->node->op_type);
        }
    }
    for (int m = 0; m < p->n; m++)
        ox_rval_free(tmp[m]);
    return st;
}

/* dims of t without its leading 1s are the trailing dims of f's. */
static bool is_row_of(const ox_tensor *t, const ox_tensor *f)
{
    if (t->rank > f->rank)
        return false;
    int lead = 0;
    while (lead < t->rank && t->dims[lead] == 1)
        lead++;
    int r = t->rank - lead;
    for (int i = 0; i < r; i++)
        if (t->dims[lead + i] != f->dims[f->rank - r + i])
            return false;
    return true;
}

/* t has f's rank and dims up to some axis, 1s after it (a reduction kept
 * with keepdims: LayerNorm's mean); *inner is how many elements of f share
 * one of t's. */
static bool is_col_of(const ox_tensor *t, const ox_tensor *f, int64_t *inner)
{
    if (t->rank != f->rank)
        return false;
    int k = t->rank;
    while (k > 0 && t->dims[k - 1] == 1)
        k--;
    *inner = 1;
    for (int i = 0; i < t->rank; i++) {
        if (i < k && t->dims[i] != f->dims[i])
            return false;
        if (i >= k)
            *inner *= f->dims[i];
    }
    return k < t->rank && *inner > 1;
}

static bool same_dims(const ox_tensor *a, const ox_tensor *b)
{
    if (a->rank != b->rank)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i])
            return false;
    return true;
}

/* The shape class of a value made from operands of classes x and y: the
 * output's shape wins, a row with a column makes the output's shape too (a
 * broadcast the later operations carry anyway). */
static lkind join(lkind x, lkind y)
{
    if (x == L_SCALAR)
        return y;
    if (y == L_SCALAR || x == y)
        return x;
    return L_FULL;
}

static ew_ins member_ins(const ox_ew_prog *p, int m, const int *pow_k)
{
    return (ew_ins){p->op[m], pow_k[m], 0, 0, NULL};
}

/* Runs the members of one class on that class's own domain (n elements),
 * each into its buffer, before the main pass: a column's values once per
 * column instead of once per element (LayerNorm's sqrt(var + eps)).
 * Sources of the class read as the domain's own elements, scalars stay. */
static void small_pass(const ox_ew_prog *p, const ew_job *full, const lkind *lvl, lkind cls,
                       int64_t n, float *const *buf, const int *pow_k)
{
    ew_job j = {.n_src = full->n_src};
    for (int l = 0; l < full->n_src; l++) {
        j.lp[l] = full->lp[l];
        j.lk[l] = full->lk[l] == cls ? L_FULL : full->lk[l] == L_SCALAR ? L_SCALAR : L_NONE;
    }
    for (int m = 0; m < p->n; m++) {
        if (lvl[m] != cls)
            continue;
        ew_ins in = member_ins(p, m, pow_k);
        for (int k = 0; k < 2; k++) {
            int s = p->m[m].src[k];
            int ref = s >= 0 ? s : p->n_leaves + (-1 - s);
            if (k == 0) in.a = ref;
            else in.b = ref;
        }
        in.out = buf[m];
        j.ins[j.n++] = in;
    }
    if (j.n)
        ew_chunk(&j, 0, n);
}

ox_status ox_ew_prog_run(ox_kernel_ctx *c, const ox_ew_prog *cp)
{
    ox_ew_prog *p = (ox_ew_prog *)cp;   /* its buffer cache only */
    if (!p || c->n_in != p->n_leaves)
        return ox_errorf(c->err, OX_EINVAL, "fused elementwise group: %d inputs, want %d", c->n_in,
                         p ? p->n_leaves : 0);
    const ox_tensor *lt[OX_EW_MAX_LEAVES], *f = NULL;
    for (int l = 0; l < p->n_leaves; l++) {
        lt[l] = ox_kernel_in(c, l);
        if (!lt[l] || lt[l]->dtype != OX_DT_FLOAT || lt[l]->numel <= 0 || !ox_tensor_data(lt[l]))
            return run_slow(c, p);
        if (!f || lt[l]->numel > f->numel || (lt[l]->numel == f->numel && lt[l]->rank > f->rank))
            f = lt[l];
    }
    ew_job j = {.n_src = p->n_leaves + p->n};
    for (int l = p->n_leaves; l < j.n_src; l++)
        j.lk[l] = L_NONE;   /* members' buffers, set below for the small ones */
    int64_t inner = 0;
    for (int l = 0; l < p->n_leaves; l++) {
        const ox_tensor *t = lt[l];
        j.lp[l] = ox_tensor_data(t);
        if (same_dims(t, f)) {
            j.lk[l] = L_FULL;
        } else if (t->numel == 1 && t->rank <= f->rank) {
            j.lk[l] = L_SCALAR;
        } else if (is_row_of(t, f) && (!j.period || j.period == t->numel)) {
            j.lk[l] = L_ROW;
            j.period = t->numel;
        } else if (is_col_of(t, f, &inner) && (!j.inner || j.inner == inner)) {
            j.lk[l] = L_COL;
            j.inner = inner;
        } else {
            return run_slow(c, p);   /* another broadcast: the kernels handle it */
        }
    }
    int pow_k[OX_EW_MAX_MEMBERS] = {0};
    lkind lvl[OX_EW_MAX_MEMBERS];
    for (int m = 0; m < p->n; m++) {
        if (p->op[m] == EW_POW) {
            /* As the Pow kernel: a one-element exponent of 2 or 3 multiplies. */
            int s = p->m[m].src[1];
            if (s < 0)
                return run_slow(c, p);
            double e = lt[s]->numel == 1 ? ((const float *)ox_tensor_data(lt[s]))[0] : 0.0;
            pow_k[m] = lt[s]->numel == 1 && (e == 2.0 || e == 3.0) ? (int)e : 0;
        }
        int ar = p->op[m] <= EW_POW ? 2 : 1;
        lvl[m] = L_SCALAR;
        for (int k = 0; k < ar; k++) {
            int s = p->m[m].src[k];
            lvl[m] = join(lvl[m], s >= 0 ? j.lk[s] : lvl[-1 - s]);
        }
    }
    /* Members of a smaller class (scalar, row, column) get buffers on their
     * own domain; the main pass reads them as sources of that class. */
    int64_t ncol = j.inner ? f->numel / j.inner : 0, dom[4] = {f->numel, j.period, ncol, 1};
    size_t need = 0;
    for (int m = 0; m < p->n - 1; m++)
        if (lvl[m] != L_FULL)
            need += (size_t)dom[lvl[m]];
    float *mem = NULL, *own = NULL;
    if (need) {
        if (!__atomic_exchange_n(&p->busy, 1, __ATOMIC_ACQUIRE)) {
            if (p->cache_n < need) {
                free(p->cache);
                p->cache = malloc(need * sizeof(float));
                p->cache_n = p->cache ? need : 0;
            }
            mem = p->cache;
            if (!mem)
                __atomic_store_n(&p->busy, 0, __ATOMIC_RELEASE);
        }
        if (!mem && !(mem = own = malloc(need * sizeof(float))))
            return ox_errorf(c->err, OX_ENOMEM, "cannot allocate the group's buffers");
    }
    float *buf[OX_EW_MAX_MEMBERS] = {0};
    size_t at = 0;
    for (int m = 0; m < p->n - 1; m++)
        if (lvl[m] != L_FULL) {
            buf[m] = mem + at;
            at += (size_t)dom[lvl[m]];
            j.lp[p->n_leaves + m] = buf[m];
            j.lk[p->n_leaves + m] = lvl[m];
        }
    small_pass(p, &j, lvl, L_SCALAR, 1, buf, pow_k);
    if (j.inner)
        small_pass(p, &j, lvl, L_COL, ncol, buf, pow_k);
    if (j.period)
        small_pass(p, &j, lvl, L_ROW, j.period, buf, pow_k);
    ox_status st = OX_OK;
    ox_tensor *y = ox_kernel_output(c, 0, OX_DT_FLOAT, f->rank, f->dims);
    float *yp = y ? ox_tensor_mutable_data(y) : NULL;
    if (!yp) {
        st = ox_errorf(c->err, OX_ENOMEM, "cannot allocate output");
    } else {
        /* The main pass: the members of the output's shape, registers
         * between them, the last into the output. */
        int reg_of[OX_EW_MAX_MEMBERS];
        ew_job mj = j;
        mj.n = 0;
        for (int m = 0; m < p->n; m++) {
            if (lvl[m] != L_FULL && m != p->n - 1)
                continue;
            ew_ins in = member_ins(p, m, pow_k);
            for (int k = 0; k < 2; k++) {
                int s = p->m[m].src[k], ref;
                if (s >= 0) ref = s;
                else if (lvl[-1 - s] != L_FULL) ref = p->n_leaves + (-1 - s);
                else ref = -1 - reg_of[-1 - s];
                if (k == 0) in.a = ref;
                else in.b = ref;
            }
            reg_of[m] = mj.n;
            in.out = m == p->n - 1 ? yp : NULL;
            mj.ins[mj.n++] = in;
        }
        ox_parallel_for(c->pool, f->numel, OX__EW_GRAIN, ew_chunk, &mj);
    }
    if (mem && !own)
        __atomic_store_n(&p->busy, 0, __ATOMIC_RELEASE);
    free(own);
    return st;
}
