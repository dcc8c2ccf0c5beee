/* Helpers shared by the k_nn kernels: attribute lookups with defaults,
 * staging of non-float32 tensors through float32 (the kernels compute in
 * float), and activation functions named by string attributes. */
#include <stdarg.h>
#include <stdio.h>
#include <strings.h>

#include <pthread.h>

#include "nn_common.h"

/* ---- per-thread scratch ------------------------------------------------------ */

typedef struct nn_scratch_set {
    float *buf[NN_SCRATCH_SLOTS];
    size_t cap[NN_SCRATCH_SLOTS];
} nn_scratch_set;

static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static pthread_key_t scratch_key;
static bool scratch_key_ok;

static void scratch_free(void *p)
{
    nn_scratch_set *s = p;
    for (int i = 0; i < NN_SCRATCH_SLOTS; i++) free(s->buf[i]);
    free(s);
}

static void scratch_init(void)
{
    scratch_key_ok = pthread_key_create(&scratch_key, scratch_free) == 0;
}

float *nn_scratch(int slot, size_t nfloats)
{
    if (slot < 0 || slot >= NN_SCRATCH_SLOTS) return NULL;
    if (nfloats == 0) nfloats = 1;
    pthread_once(&scratch_once, scratch_init);
    if (!scratch_key_ok) return NULL;
    nn_scratch_set *s = pthread_getspecific(scratch_key);
    if (!s) {
        s = calloc(1, sizeof *s);
        if (!s) return NULL;
        if (pthread_setspecific(scratch_key, s) != 0) {
            free(s);
            return NULL;
        }
    }
    if (s->cap[slot] < nfloats) {
        /* Grow by half again so a slowly rising size does not reallocate
         * (and refault) on every call. */
        size_t want = nfloats + nfloats / 2;
        void *nb = NULL;
        if (posix_memalign(&nb, 64, want * sizeof(float)) != 0) return NULL;
        free(s->buf[slot]);
        s->buf[slot] = nb;
        s->cap[slot] = want;
    }
    return s->buf[slot];
}

ox_status nn_fail(ox_kernel_ctx *c, ox_status st, const char *fmt, ...)
{
    char buf[OX_ERROR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    const char *name = c->node && c->node->name && c->node->name[0] ? c->node->name : "";
    return ox_errorf(c->err, st, "%s%s%s: %s", NN_OPNAME(c), name[0] ? " " : "", name, buf);
}

int64_t nn_attr_i(const ox_kernel_ctx *c, const char *name, int64_t dflt)
{
    return c->node ? ox_node_attr_i(c->node, name, dflt) : dflt;
}

float nn_attr_f(const ox_kernel_ctx *c, const char *name, float dflt)
{
    return c->node ? ox_node_attr_f(c->node, name, dflt) : dflt;
}

const char *nn_attr_s(const ox_kernel_ctx *c, const char *name, const char *dflt)
{
    return c->node ? ox_node_attr_s(c->node, name, dflt) : dflt;
}

int nn_attr_ints(const ox_kernel_ctx *c, const char *name, int64_t *out, int max)
{
    if (!c->node) return -1;
    const int64_t *v = NULL;
    int n = ox_node_attr_ints(c->node, name, &v);
    if (n < 0) return -1;
    if (n > max) return -2;
    for (int i = 0; i < n; i++) out[i] = v[i];
    return n;
}

int nn_attr_floats(const ox_kernel_ctx *c, const char *name, const float **out)
{
    if (!c->node) return -1;
    ox_attr *a = ox_node_attr(c->node, name);
    if (!a || a->type != OX_ATTR_FLOATS) return -1;
    if (out) *out = a->floats;
    return a->n;
}

bool nn_is_float_dt(ox_dtype dt)
{
    return dt == OX_DT_FLOAT || dt == OX_DT_FLOAT16 || dt == OX_DT_BFLOAT16 ||
           dt == OX_DT_DOUBLE;
}

/* Typed reads through memcpy: tensor views into a mapped model file need
 * not be aligned for their element type (raw_data sits at any offset). */
#define DEFINE_LOAD(T)                                                  \
    static inline T load_##T(const void *d, int64_t i)                  \
    {                                                                   \
        T v;                                                            \
        memcpy(&v, (const char *)d + (size_t)i * sizeof(T), sizeof(T)); \
        return v;                                                       \
    }
DEFINE_LOAD(int16_t)
DEFINE_LOAD(uint16_t)
DEFINE_LOAD(int32_t)
DEFINE_LOAD(uint32_t)
DEFINE_LOAD(int64_t)
DEFINE_LOAD(uint64_t)
DEFINE_LOAD(double)
#define LOAD_AS(T, d, i) load_##T((d), (i))

int64_t nn_get_i(const ox_tensor *t, int64_t i)
{
    const void *d = ox_tensor_data(t);
    if (!d || i < 0 || i >= t->numel) return 0;
    switch (t->dtype) {
    case OX_DT_INT8: return ((const int8_t *)d)[i];
    case OX_DT_UINT8: return ((const uint8_t *)d)[i];
    case OX_DT_INT16: return LOAD_AS(int16_t, d, i);
    case OX_DT_UINT16: return LOAD_AS(uint16_t, d, i);
    case OX_DT_INT32: return LOAD_AS(int32_t, d, i);
    case OX_DT_INT64: return LOAD_AS(int64_t, d, i);
    case OX_DT_UINT32: return LOAD_AS(uint32_t, d, i);
    case OX_DT_UINT64: return (int64_t)LOAD_AS(uint64_t, d, i);
    case OX_DT_BOOL: return ((const uint8_t *)d)[i] != 0;
    case OX_DT_INT4: case OX_DT_UINT4: {
        uint8_t b = ((const uint8_t *)d)[i >> 1];
        int v = (i & 1) ? (b >> 4) : (b & 15);
        if (t->dtype == OX_DT_INT4 && v >= 8) v -= 16;
        return v;
    }
    case OX_DT_INT2: case OX_DT_UINT2: {
        uint8_t b = ((const uint8_t *)d)[i >> 2];
        int v = (b >> ((i & 3) * 2)) & 3;
        if (t->dtype == OX_DT_INT2 && v >= 2) v -= 4;
        return v;
    }
    default: return ox_tensor_get_i64(t, i);
    }
}

const float *nn_load_f32(ox_kernel_ctx *c, const ox_tensor *t, float **tmp)
{
    *tmp = NULL;
    if (!t) {
        NN_FAIL(c, "missing input");
        return NULL;
    }
    if (t->dtype == OX_DT_STRING || !ox_dtype_valid(t->dtype) || t->dtype == OX_DT_UNDEFINED) {
        NN_FAIL(c, "unsupported element type %s", ox_dtype_name(t->dtype));
        return NULL;
    }
    const void *d = ox_tensor_data(t);
    if (t->dtype == OX_DT_FLOAT && (d || t->numel == 0) && ((uintptr_t)d % _Alignof(float)) == 0) {
        static const float empty[1];
        return d ? (const float *)d : empty;
    }
    size_t n = (size_t)(t->numel > 0 ? t->numel : 1);
    float *f = malloc(n * sizeof(float));
    if (!f) {
        NN_NOMEM(c);
        return NULL;
    }
    if (!d) {
        memset(f, 0, n * sizeof(float));
    } else if (t->dtype == OX_DT_FLOAT) {
        memcpy(f, d, (size_t)t->numel * sizeof(float)); /* misaligned view */
    } else if (t->dtype == OX_DT_FLOAT16) {
        for (int64_t i = 0; i < t->numel; i++) f[i] = ox_f16_to_f32(LOAD_AS(uint16_t, d, i));
    } else if (t->dtype == OX_DT_BFLOAT16) {
        for (int64_t i = 0; i < t->numel; i++) f[i] = ox_bf16_to_f32(LOAD_AS(uint16_t, d, i));
    } else if (t->dtype == OX_DT_DOUBLE) {
        for (int64_t i = 0; i < t->numel; i++) f[i] = (float)LOAD_AS(double, d, i);
    } else if (ox_dtype_is_int(t->dtype) || t->dtype == OX_DT_BOOL) {
        for (int64_t i = 0; i < t->numel; i++) f[i] = (float)nn_get_i(t, i);
    } else {
        for (int64_t i = 0; i < t->numel; i++) f[i] = (float)ox_tensor_get_f64(t, i);
    }
    *tmp = f;
    return f;
}

ox_tensor *nn_out(ox_kernel_ctx *c, int i, ox_dtype dt, int rank, const int64_t *dims)
{
    if (i >= c->n_out) return NULL;
    ox_tensor *t = ox_kernel_output(c, i, dt, rank, dims);
    if (!t) NN_NOMEM(c);
    return t;
}

ox_status nn_fout_new(ox_kernel_ctx *c, int i, ox_dtype dt, int rank,
                      const int64_t *dims, nn_fout *o)
{
    memset(o, 0, sizeof *o);
    o->t = nn_out(c, i, dt, rank, dims);
    if (!o->t) return NN_ST(c);
    if (dt == OX_DT_FLOAT) {
        static float empty[1];
        o->f = o->t->numel ? (float *)ox_tensor_data(o->t) : empty;
        if (!o->f) return NN_NOMEM(c);
        return OX_OK;
    }
    o->f = malloc((size_t)(o->t->numel > 0 ? o->t->numel : 1) * sizeof(float));
    if (!o->f) return NN_NOMEM(c);
    o->tmp = true;
    return OX_OK;
}

void nn_store_f32(ox_tensor *t, const float *src, int64_t n)
{
    void *d = ox_tensor_data(t);
    if (!d) return;
    if (n > t->numel) n = t->numel;
    switch (t->dtype) {
    case OX_DT_FLOAT: if ((const void *)src != d) memcpy(d, src, (size_t)n * sizeof(float)); break;
    case OX_DT_FLOAT16:
        for (int64_t i = 0; i < n; i++) ((uint16_t *)d)[i] = ox_f32_to_f16(src[i]);
        break;
    case OX_DT_BFLOAT16:
        for (int64_t i = 0; i < n; i++) ((uint16_t *)d)[i] = ox_f32_to_bf16(src[i]);
        break;
    case OX_DT_DOUBLE:
        for (int64_t i = 0; i < n; i++) ((double *)d)[i] = src[i];
        break;
    default:
        for (int64_t i = 0; i < n; i++) ox_tensor_set_f64(t, i, src[i]);
        break;
    }
}

void nn_fout_done(nn_fout *o)
{
    if (o->tmp && o->t) nn_store_f32(o->t, o->f, o->t->numel);
    nn_fout_drop(o);
}

void nn_fout_drop(nn_fout *o)
{
    if (o->tmp) free(o->f);
    o->f = NULL;
    o->tmp = false;
}

/* ---- activations --------------------------------------------------------------- */

enum { A_RELU, A_TANH, A_SIGMOID, A_AFFINE, A_LEAKY, A_THRELU, A_STANH, A_HSIG,
       A_ELU, A_SOFTSIGN, A_SOFTPLUS, A_CLIP, A_NONE };

bool nn_act_parse(const char *name, float alpha, float beta, bool has_alpha,
                  bool has_beta, nn_act *out)
{
    static const struct { const char *n; int k; float a, b; } tab[] = {
        {"Relu", A_RELU, 0, 0}, {"Tanh", A_TANH, 0, 0}, {"Sigmoid", A_SIGMOID, 0, 0},
        {"Affine", A_AFFINE, 1.0f, 0}, {"LeakyRelu", A_LEAKY, 0.01f, 0},
        {"ThresholdedRelu", A_THRELU, 1.0f, 0}, {"ScaledTanh", A_STANH, 1.0f, 1.0f},
        {"HardSigmoid", A_HSIG, 0.2f, 0.5f}, {"Elu", A_ELU, 1.0f, 0},
        {"Softsign", A_SOFTSIGN, 0, 0}, {"Softplus", A_SOFTPLUS, 0, 0},
        {"Clip", A_CLIP, -INFINITY, INFINITY}, {"", A_NONE, 0, 0},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
        if (strcasecmp(name, tab[i].n) == 0) {
            out->kind = tab[i].k;
            out->alpha = has_alpha ? alpha : tab[i].a;
            out->beta = has_beta ? beta : tab[i].b;
            return true;
        }
    }
    return false;
}

float nn_act_apply(const nn_act *a, float x)
{
    switch (a->kind) {
    case A_RELU: return x > 0 ? x : 0;
    case A_TANH: return tanhf(x);
    case A_SIGMOID: return x >= 0 ? 1.0f / (1.0f + expf(-x)) : expf(x) / (1.0f + expf(x));
    case A_AFFINE: return a->alpha * x + a->beta;
    case A_LEAKY: return x >= 0 ? x : a->alpha * x;
    case A_THRELU: return x > a->alpha ? x : 0;
    case A_STANH: return a->alpha * tanhf(a->beta * x);
    case A_HSIG: { float v = a->alpha * x + a->beta; return v < 0 ? 0 : v > 1 ? 1 : v; }
    case A_ELU: return x >= 0 ? x : a->alpha * (expf(x) - 1.0f);
    case A_SOFTSIGN: return x / (1.0f + fabsf(x));
    case A_SOFTPLUS: return x > 20 ? x : log1pf(expf(x));
    case A_CLIP: return x < a->alpha ? a->alpha : x > a->beta ? a->beta : x;
    default: return x;
    }
}

void nn_set_i(ox_tensor *t, int64_t i, int64_t v)
{
    void *d = ox_tensor_data(t);
    if (!d || i < 0 || i >= t->numel) return;
    switch (t->dtype) {
    case OX_DT_INT8: ((int8_t *)d)[i] = (int8_t)v; break;
    case OX_DT_UINT8: ((uint8_t *)d)[i] = (uint8_t)v; break;
    case OX_DT_INT16: ((int16_t *)d)[i] = (int16_t)v; break;
    case OX_DT_UINT16: ((uint16_t *)d)[i] = (uint16_t)v; break;
    case OX_DT_INT32: ((int32_t *)d)[i] = (int32_t)v; break;
    case OX_DT_INT64: ((int64_t *)d)[i] = v; break;
    case OX_DT_UINT32: ((uint32_t *)d)[i] = (uint32_t)v; break;
    case OX_DT_UINT64: ((uint64_t *)d)[i] = (uint64_t)v; break;
    case OX_DT_BOOL: ((uint8_t *)d)[i] = v != 0; break;
    case OX_DT_INT4: case OX_DT_UINT4: {
        uint8_t *b = (uint8_t *)d + (i >> 1);
        if (i & 1) *b = (uint8_t)((*b & 0x0F) | ((v & 15) << 4));
        else *b = (uint8_t)((*b & 0xF0) | (v & 15));
        break;
    }
    case OX_DT_INT2: case OX_DT_UINT2: {
        uint8_t *b = (uint8_t *)d + (i >> 2);
        int sh = (int)(i & 3) * 2;
        *b = (uint8_t)((*b & ~(3 << sh)) | ((v & 3) << sh));
        break;
    }
    default: ox_tensor_set_i64(t, i, v); break;
    }
}

float *nn_expand(ox_kernel_ctx *c, const ox_tensor *t, const float *f, int rank,
                 const int64_t *dims)
{
    if (t->rank > rank) {
        NN_FAIL(c, "operand of rank %d does not broadcast to rank %d", t->rank, rank);
        return NULL;
    }
    int64_t n = nn_prod(dims, rank);
    int64_t strides[OX_MAX_RANK];
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        int ti = i - (rank - t->rank);
        int64_t d = ti >= 0 ? t->dims[ti] : 1;
        if (d != 1 && d != dims[i]) {
            NN_FAIL(c, "operand dim %lld does not broadcast to %lld", (long long)d, (long long)dims[i]);
            return NULL;
        }
        strides[i] = d == 1 ? 0 : s;
        s *= d;
    }
    float *out = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    if (!out) {
        NN_NOMEM(c);
        return NULL;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t r = i, off = 0;
        for (int k = rank - 1; k >= 0; k--) {
            off += (r % dims[k]) * strides[k];
            r /= dims[k];
        }
        out[i] = f[off];
    }
    return out;
}

const char *nn_window_dim(const char *auto_pad, int64_t in, int64_t k, int64_t s, int64_t d,
                          bool has_pads, int64_t pad_b, int64_t pad_e, bool ceil_mode,
                          int64_t *pb, int64_t *pe, int64_t *out)
{
    if (k < 1 || s < 1 || d < 1)
        return "bad kernel/stride/dilation";
    int64_t ek = (k - 1) * d + 1;
    if (!strcmp(auto_pad, "SAME_UPPER") || !strcmp(auto_pad, "SAME_LOWER")) {
        *out = (in + s - 1) / s;
        int64_t tot = (*out - 1) * s + ek - in;
        if (tot < 0)
            tot = 0;
        *pb = !strcmp(auto_pad, "SAME_UPPER") ? tot / 2 : tot - tot / 2;
        *pe = tot - *pb;
        return NULL;
    }
    if (!strcmp(auto_pad, "NOTSET") && has_pads) {
        *pb = pad_b;
        *pe = pad_e;
        if (*pb < 0 || *pe < 0)
            return "negative pads";
    }
    int64_t span = in + *pb + *pe - ek;
    if (span < 0)
        return "kernel larger than padded input";
    if (ceil_mode) {
        *out = (span + s - 1) / s + 1;
        if ((*out - 1) * s >= in + *pb)
            (*out)--;
    } else {
        *out = span / s + 1;
    }
    return NULL;
}
