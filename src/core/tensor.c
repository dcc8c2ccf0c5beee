/* Tensors and their reference-counted byte buffers: creation, sharing,
 * copy-on-write, element access for every numeric dtype (sub-byte types
 * packed low bits first) and summary statistics for the UI. */
#include "onnxscope/tensor.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnxscope/ir.h"

/* ---- buffers -------------------------------------------------------------- */

/* Bytes of live heap and accounted buffers, process-wide: the executor's
 * memory ceiling reads it (atomic: the TUI's bench worker allocates too). */
static int64_t live_bytes;

void ox_buffer_account(int64_t delta)
{
    __atomic_add_fetch(&live_bytes, delta, __ATOMIC_RELAXED);
}

static int64_t n_allocs;

int64_t ox_buffer_allocs(void)
{
    return __atomic_load_n(&n_allocs, __ATOMIC_RELAXED);
}

int64_t ox_buffer_live_bytes(void)
{
    return __atomic_load_n(&live_bytes, __ATOMIC_RELAXED);
}

static void heap_release(ox_buffer *b)
{
    ox_buffer_account(-(int64_t)b->size);
    free(b->data);
    free(b);
}

static void view_release(ox_buffer *b)
{
    ox_buffer_release((ox_buffer *)b->owner);
    free(b);
}

ox_buffer *ox_buffer_new(size_t size)
{
    ox_buffer *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->data = calloc(size ? size : 1, 1);
    if (!b->data) {
        free(b);
        return NULL;
    }
    b->refcount = 1;
    b->size = size;
    b->release = heap_release;
    ox_buffer_account((int64_t)size);
    __atomic_add_fetch(&n_allocs, 1, __ATOMIC_RELAXED);
    return b;
}

ox_buffer *ox_buffer_view(ox_buffer *parent, void *data, size_t size)
{
    ox_buffer *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->refcount = 1;
    b->data = data;
    b->size = size;
    b->release = view_release;
    b->owner = parent ? ox_buffer_retain(parent) : NULL;
    return b;
}

/* Same as a view, but a distinct release function marks it writable in
 * place by ox_tensor_mutable_data (the executor's activation arena). */
static void writable_view_release(ox_buffer *b)
{
    view_release(b);
}

ox_buffer *ox_buffer_writable_view(ox_buffer *parent, void *data, size_t size)
{
    ox_buffer *b = ox_buffer_view(parent, data, size);
    if (b)
        b->release = writable_view_release;
    return b;
}

ox_buffer *ox_buffer_retain(ox_buffer *b)
{
    /* Atomic: the bench worker thread and the UI share models. */
    if (b)
        __atomic_add_fetch(&b->refcount, 1, __ATOMIC_RELAXED);
    return b;
}

void ox_buffer_release(ox_buffer *b)
{
    if (!b)
        return;
    if (__atomic_sub_fetch(&b->refcount, 1, __ATOMIC_ACQ_REL) == 0) {
        if (b->release)
            b->release(b);
        else
            free(b);
    }
}

/* ---- shapes --------------------------------------------------------------- */

bool ox_shape_numel(int rank, const int64_t *dims, int64_t *out)
{
    if (rank < 0 || rank > OX_MAX_RANK || (rank > 0 && !dims))
        return false;
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0)
            return false;
        if (dims[i] != 0 && n > INT64_MAX / dims[i])
            return false;
        n *= dims[i];
    }
    if (out)
        *out = n;
    return true;
}

const char *ox_shape_str(int rank, const int64_t *dims, char *buf, size_t len)
{
    if (!buf || len == 0)
        return "";
    buf[0] = '\0';
    if (rank <= 0 || !dims) {
        snprintf(buf, len, "scalar");
        return buf;
    }
    size_t pos = 0;
    for (int i = 0; i < rank && pos < len; i++) {
        int w = snprintf(buf + pos, len - pos, "%s%lld", i ? "x" : "", (long long)dims[i]);
        if (w < 0)
            break;
        pos += (size_t)w;
    }
    return buf;
}

/* ---- tensors -------------------------------------------------------------- */

static ox_tensor *tensor_header(ox_dtype dt, int rank, const int64_t *dims)
{
    if (!ox_dtype_valid(dt))
        return NULL;
    int64_t n;
    if (!ox_shape_numel(rank, dims, &n))
        return NULL;
    size_t nb;
    if (!ox_dtype_nbytes(dt, n, &nb))
        return NULL;
    ox_tensor *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->dtype = dt;
    t->rank = rank;
    for (int i = 0; i < rank; i++)
        t->dims[i] = dims[i];
    t->numel = n;
    t->nbytes = nb;
    return t;
}

static bool alloc_strings(ox_tensor *t)
{
    t->strings = ox_xcalloc((size_t)t->numel, sizeof(ox_bytes));
    if (!t->strings)
        return false;
    for (int64_t i = 0; i < t->numel; i++) {
        t->strings[i].data = calloc(1, 1);
        if (!t->strings[i].data)
            return false;
    }
    return true;
}

ox_tensor *ox_tensor_new(ox_dtype dt, int rank, const int64_t *dims)
{
    ox_tensor *t = tensor_header(dt, rank, dims);
    if (!t)
        return NULL;
    if (dt == OX_DT_STRING) {
        if (!alloc_strings(t)) {
            ox_tensor_free(t);
            return NULL;
        }
        return t;
    }
    t->buf = ox_buffer_new(t->nbytes);
    if (!t->buf) {
        free(t);
        return NULL;
    }
    return t;
}

ox_tensor *ox_tensor_new_view(ox_dtype dt, int rank, const int64_t *dims,
                              ox_buffer *buf, size_t offset)
{
    if (!buf || dt == OX_DT_STRING)
        return NULL;
    ox_tensor *t = tensor_header(dt, rank, dims);
    if (!t)
        return NULL;
    if (offset > buf->size || buf->size - offset < t->nbytes) {
        free(t);
        return NULL;
    }
    t->buf = ox_buffer_retain(buf);
    t->offset = offset;
    return t;
}

static bool copy_strings(ox_tensor *d, const ox_tensor *s)
{
    if (!s->strings)
        return true;
    d->strings = ox_xcalloc((size_t)s->numel, sizeof(ox_bytes));
    if (!d->strings)
        return false;
    for (int64_t i = 0; i < s->numel; i++) {
        size_t len = s->strings[i].len;
        d->strings[i].data = malloc(len + 1);
        if (!d->strings[i].data)
            return false;
        if (len && s->strings[i].data)
            memcpy(d->strings[i].data, s->strings[i].data, len);
        d->strings[i].data[len] = '\0';
        d->strings[i].len = len;
    }
    return true;
}

static bool copy_meta(ox_tensor *d, const ox_tensor *s)
{
    d->name = NULL;
    d->doc_string = NULL;
    d->external = NULL;
    d->strings = NULL;
    d->buf = NULL;
    if (s->name && !(d->name = ox_strdup(s->name)))
        return false;
    if (s->doc_string && !(d->doc_string = ox_strdup(s->doc_string)))
        return false;
    if (s->external) {
        d->external = calloc(1, sizeof *d->external);
        if (!d->external)
            return false;
        *d->external = *s->external;
        d->external->location = ox_strdup(s->external->location);
        d->external->checksum = ox_strdup(s->external->checksum);
    }
    return copy_strings(d, s);
}

ox_tensor *ox_tensor_share(const ox_tensor *t)
{
    if (!t)
        return NULL;
    ox_tensor *d = malloc(sizeof *d);
    if (!d)
        return NULL;
    *d = *t;
    if (!copy_meta(d, t)) {
        ox_tensor_free(d);
        return NULL;
    }
    d->buf = ox_buffer_retain(t->buf);
    return d;
}

ox_tensor *ox_tensor_clone(const ox_tensor *t)
{
    if (!t)
        return NULL;
    ox_tensor *d = malloc(sizeof *d);
    if (!d)
        return NULL;
    *d = *t;
    if (!copy_meta(d, t)) {
        ox_tensor_free(d);
        return NULL;
    }
    if (t->buf) {
        d->buf = ox_buffer_new(t->nbytes);
        if (!d->buf) {
            ox_tensor_free(d);
            return NULL;
        }
        size_t avail = t->offset <= t->buf->size ? t->buf->size - t->offset : 0;
        memcpy(d->buf->data, (char *)t->buf->data + t->offset,
               t->nbytes < avail ? t->nbytes : avail);
        d->offset = 0;
    }
    return d;
}

void ox_tensor_free(ox_tensor *t)
{
    if (!t)
        return;
    free(t->name);
    free(t->doc_string);
    if (t->external) {
        free(t->external->location);
        free(t->external->checksum);
        free(t->external);
    }
    if (t->strings) {
        for (int64_t i = 0; i < t->numel; i++)
            free(t->strings[i].data);
        free(t->strings);
    }
    ox_buffer_release(t->buf);
    free(t);
}

void ox_tensor_set_name(ox_tensor *t, const char *name)
{
    if (!t)
        return;
    char *n = ox_strdup(name);
    if (name && !n)
        return;
    free(t->name);
    t->name = n;
}

void *ox_tensor_mutable_data(ox_tensor *t)
{
    if (!t || t->dtype == OX_DT_STRING)
        return NULL;
    if (!t->buf) {
        /* Data not materialized (external and not loaded): inventing zeros
         * would silently lose it. */
        if (t->external)
            return NULL;
        t->buf = ox_buffer_new(t->nbytes);
        t->offset = 0;
        return t->buf ? t->buf->data : NULL;
    }
    /* Only a heap buffer we alone hold may be written in place: views can
     * point into a read-only mapping of the model file. */
    if ((t->buf->release == heap_release || t->buf->release == writable_view_release) &&
        __atomic_load_n(&t->buf->refcount, __ATOMIC_ACQUIRE) == 1)
        return (char *)t->buf->data + t->offset;
    ox_buffer *nb = ox_buffer_new(t->nbytes);
    if (!nb)
        return NULL;
    size_t avail = t->offset <= t->buf->size ? t->buf->size - t->offset : 0;
    memcpy(nb->data, (char *)t->buf->data + t->offset, t->nbytes < avail ? t->nbytes : avail);
    ox_buffer_release(t->buf);
    t->buf = nb;
    t->offset = 0;
    return nb->data;
}

/* ---- element access --------------------------------------------------------- */

static bool elem_ok(const ox_tensor *t, int64_t i)
{
    if (!t || !t->buf || i < 0 || i >= t->numel || t->dtype == OX_DT_STRING)
        return false;
    /* Guard against a header that claims more bytes than the buffer has. */
    size_t need;
    if (!ox_dtype_nbytes(t->dtype, i + 1, &need))
        return false;
    return t->offset <= t->buf->size && need <= t->buf->size - t->offset;
}

static float f4e2m1_to_f32(unsigned v)
{
    static const float T[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    float r = T[v & 7];
    return (v & 8) ? -r : r;
}

static unsigned f32_to_f4e2m1(double f)
{
    /* Saturating, round-to-nearest-even onto {0,.5,1,1.5,2,3,4,6}. */
    if (isnan(f))
        return 0x8; /* no NaN in the format: the ONNX reference writes -0 */
    unsigned sign = signbit(f) ? 8 : 0;
    double a = fabs(f);
    static const double T[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
    unsigned best = 7;
    for (unsigned k = 0; k < 7; k++) {
        double mid = (T[k] + T[k + 1]) / 2;
        if (a < mid || (a == mid && (k & 1) == 0)) {
            best = k;
            break;
        }
    }
    return sign | best;
}

static double e8m0_to_f64(uint8_t v)
{
    return v == 0xff ? NAN : ldexp(1.0, (int)v - 127);
}

static uint8_t f64_to_e8m0(double f)
{
    if (isnan(f) || f <= 0)
        return f > 0 ? 0xff : (isnan(f) ? 0xff : 0);
    if (isinf(f))
        return 0xfe;
    int e;
    double fr = frexp(f, &e); /* f = fr * 2^e, fr in [0.5,1): nearest power of two */
    int p = e - 1;
    if (fr > 0.75)
        p++;
    int code = p + 127;
    if (code < 0)
        code = 0;
    if (code > 0xfe)
        code = 0xfe;
    return (uint8_t)code;
}

static int64_t sub_byte_get(const uint8_t *d, int64_t i, int bits, bool sgn)
{
    int per = 8 / bits;
    unsigned v = (d[i / per] >> ((i % per) * bits)) & ((1u << bits) - 1);
    if (sgn && (v & (1u << (bits - 1))))
        return (int64_t)v - (1 << bits);
    return v;
}

static void sub_byte_set(uint8_t *d, int64_t i, int bits, unsigned v)
{
    int per = 8 / bits;
    int sh = (int)(i % per) * bits;
    unsigned mask = ((1u << bits) - 1) << sh;
    d[i / per] = (uint8_t)((d[i / per] & ~mask) | ((v << sh) & mask));
}

double ox_tensor_get_f64(const ox_tensor *t, int64_t i)
{
    if (!elem_ok(t, i))
        return NAN;
    const uint8_t *d = ox_tensor_data(t);
    switch (t->dtype) {
    case OX_DT_FLOAT: { float v; memcpy(&v, d + 4 * i, 4); return v; }
    case OX_DT_DOUBLE: { double v; memcpy(&v, d + 8 * i, 8); return v; }
    case OX_DT_FLOAT16: { uint16_t v; memcpy(&v, d + 2 * i, 2); return ox_f16_to_f32(v); }
    case OX_DT_BFLOAT16: { uint16_t v; memcpy(&v, d + 2 * i, 2); return ox_bf16_to_f32(v); }
    case OX_DT_FLOAT8E4M3FN: case OX_DT_FLOAT8E4M3FNUZ:
    case OX_DT_FLOAT8E5M2: case OX_DT_FLOAT8E5M2FNUZ:
        return ox_f8_to_f32(t->dtype, d[i]);
    case OX_DT_FLOAT8E8M0: return e8m0_to_f64(d[i]);
    case OX_DT_FLOAT4E2M1: return f4e2m1_to_f32((unsigned)sub_byte_get(d, i, 4, false));
    case OX_DT_COMPLEX64: { float v; memcpy(&v, d + 8 * i, 4); return v; }   /* real part */
    case OX_DT_COMPLEX128: { double v; memcpy(&v, d + 16 * i, 8); return v; }
    case OX_DT_UINT64: { uint64_t v; memcpy(&v, d + 8 * i, 8); return (double)v; }
    default:
        return (double)ox_tensor_get_i64(t, i);
    }
}

int64_t ox_tensor_get_i64(const ox_tensor *t, int64_t i)
{
    if (!elem_ok(t, i))
        return 0;
    const uint8_t *d = ox_tensor_data(t);
    switch (t->dtype) {
    case OX_DT_BOOL: return d[i] != 0;
    case OX_DT_UINT8: return d[i];
    case OX_DT_INT8: return (int8_t)d[i];
    case OX_DT_UINT16: { uint16_t v; memcpy(&v, d + 2 * i, 2); return v; }
    case OX_DT_INT16: { int16_t v; memcpy(&v, d + 2 * i, 2); return v; }
    case OX_DT_UINT32: { uint32_t v; memcpy(&v, d + 4 * i, 4); return v; }
    case OX_DT_INT32: { int32_t v; memcpy(&v, d + 4 * i, 4); return v; }
    case OX_DT_UINT64: { uint64_t v; memcpy(&v, d + 8 * i, 8); return (int64_t)v; }
    case OX_DT_INT64: { int64_t v; memcpy(&v, d + 8 * i, 8); return v; }
    case OX_DT_UINT4: return sub_byte_get(d, i, 4, false);
    case OX_DT_INT4: return sub_byte_get(d, i, 4, true);
    case OX_DT_UINT2: return sub_byte_get(d, i, 2, false);
    case OX_DT_INT2: return sub_byte_get(d, i, 2, true);
    default: {
        /* Floats: truncate toward zero like Cast, clamping what does not fit. */
        double v = ox_tensor_get_f64(t, i);
        if (isnan(v))
            return 0;
        if (v >= 9223372036854775807.0)
            return INT64_MAX;
        if (v <= -9223372036854775808.0)
            return INT64_MIN;
        return (int64_t)v;
    }
    }
}

static bool set_int(uint8_t *d, ox_dtype dt, int64_t i, int64_t v)
{
    switch (dt) {
    case OX_DT_BOOL: d[i] = v != 0; return true;
    case OX_DT_UINT8: d[i] = (uint8_t)v; return true;
    case OX_DT_INT8: d[i] = (uint8_t)(int8_t)v; return true;
    case OX_DT_UINT16: { uint16_t x = (uint16_t)v; memcpy(d + 2 * i, &x, 2); return true; }
    case OX_DT_INT16: { int16_t x = (int16_t)v; memcpy(d + 2 * i, &x, 2); return true; }
    case OX_DT_UINT32: { uint32_t x = (uint32_t)v; memcpy(d + 4 * i, &x, 4); return true; }
    case OX_DT_INT32: { int32_t x = (int32_t)v; memcpy(d + 4 * i, &x, 4); return true; }
    case OX_DT_UINT64: case OX_DT_INT64: memcpy(d + 8 * i, &v, 8); return true;
    /* Sub-byte integers wrap like the wider ones: the ONNX reference Cast
     * keeps the low bits (backend tests test_cast_FLOAT_to_INT4 etc.). */
    case OX_DT_UINT4: case OX_DT_INT4: sub_byte_set(d, i, 4, (unsigned)(v & 15)); return true;
    case OX_DT_UINT2: case OX_DT_INT2: sub_byte_set(d, i, 2, (unsigned)(v & 3)); return true;
    default: return false;
    }
}

/* double -> float rounding to odd: a later RNE rounding to a format with
 * fewer than 23 mantissa bits then equals direct RNE from double (no double
 * rounding error at ties). */
static float f32_round_odd(double v)
{
    float f = (float)v;
    if (isfinite(f) && (double)f != v) {
        uint32_t u;
        memcpy(&u, &f, 4);
        if (!(u & 1))
            f = nextafterf(f, v > (double)f ? INFINITY : -INFINITY);
    }
    return f;
}

static void set_float(uint8_t *d, ox_dtype dt, int64_t i, double v)
{
    switch (dt) {
    case OX_DT_FLOAT: { float x = (float)v; memcpy(d + 4 * i, &x, 4); break; }
    case OX_DT_DOUBLE: memcpy(d + 8 * i, &v, 8); break;
    case OX_DT_FLOAT16: { uint16_t x = ox_f32_to_f16(f32_round_odd(v)); memcpy(d + 2 * i, &x, 2); break; }
    case OX_DT_BFLOAT16: { uint16_t x = ox_f32_to_bf16(f32_round_odd(v)); memcpy(d + 2 * i, &x, 2); break; }
    case OX_DT_FLOAT8E4M3FN: case OX_DT_FLOAT8E4M3FNUZ:
    case OX_DT_FLOAT8E5M2: case OX_DT_FLOAT8E5M2FNUZ:
        d[i] = ox_f32_to_f8(dt, f32_round_odd(v), true);
        break;
    case OX_DT_FLOAT8E8M0: d[i] = f64_to_e8m0(v); break;
    case OX_DT_FLOAT4E2M1: sub_byte_set(d, i, 4, f32_to_f4e2m1(v)); break;
    case OX_DT_COMPLEX64: {
        float x[2] = {(float)v, 0.0f};
        memcpy(d + 8 * i, x, 8);
        break;
    }
    case OX_DT_COMPLEX128: {
        double x[2] = {v, 0.0};
        memcpy(d + 16 * i, x, 16);
        break;
    }
    default: break;
    }
}

static double f64_to_int_domain(double v)
{
    return isnan(v) ? 0 : trunc(v);
}

void ox_tensor_set_f64(ox_tensor *t, int64_t i, double v)
{
    if (!elem_ok(t, i))
        return;
    uint8_t *d = ox_tensor_mutable_data(t);
    if (!d)
        return;
    if (ox_dtype_is_int(t->dtype) || t->dtype == OX_DT_BOOL) {
        if (t->dtype == OX_DT_BOOL) {
            d[i] = v != 0;
            return;
        }
        double x = f64_to_int_domain(v);
        int64_t iv;
        if (t->dtype == OX_DT_UINT64 && x >= 9223372036854775808.0) {
            uint64_t u = x >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)x;
            memcpy(d + 8 * i, &u, 8);
            return;
        }
        iv = x >= 9223372036854775807.0 ? INT64_MAX
           : x <= -9223372036854775808.0 ? INT64_MIN : (int64_t)x;
        set_int(d, t->dtype, i, iv);
        return;
    }
    set_float(d, t->dtype, i, v);
}

void ox_tensor_set_i64(ox_tensor *t, int64_t i, int64_t v)
{
    if (!elem_ok(t, i))
        return;
    uint8_t *d = ox_tensor_mutable_data(t);
    if (!d)
        return;
    if (!set_int(d, t->dtype, i, v))
        set_float(d, t->dtype, i, (double)v);
}

bool ox_tensor_equal(const ox_tensor *a, const ox_tensor *b)
{
    if (a == b)
        return true;
    if (!a || !b || a->dtype != b->dtype || a->rank != b->rank)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i])
            return false;
    if (a->dtype == OX_DT_STRING) {
        if (!a->strings || !b->strings)
            return a->strings == b->strings || a->numel == 0;
        for (int64_t i = 0; i < a->numel; i++) {
            const ox_bytes *x = &a->strings[i], *y = &b->strings[i];
            if (x->len != y->len || (x->len && memcmp(x->data, y->data, x->len)))
                return false;
        }
        return true;
    }
    if (a->nbytes != b->nbytes)
        return false;
    const void *da = ox_tensor_data(a), *db = ox_tensor_data(b);
    if (!da || !db)
        return a->nbytes == 0 || da == db;
    return memcmp(da, db, a->nbytes) == 0;
}

bool ox_tensor_stats_compute(const ox_tensor *t, ox_tensor_stats *st)
{
    if (!t || !st || t->dtype == OX_DT_STRING || !ox_dtype_valid(t->dtype))
        return false;
    memset(st, 0, sizeof *st);
    if (!elem_ok(t, t->numel - 1) && t->numel > 0)
        return false;
    /* Welford over finite values; NaN/Inf are counted, not averaged. */
    double mean = 0, m2 = 0, mn = INFINITY, mx = -INFINITY;
    int64_t finite = 0, zeros = 0;
    /* float32 fast path; memcpy because mmap views need not be aligned. */
    const uint8_t *f32 = t->dtype == OX_DT_FLOAT ? ox_tensor_data(t) : NULL;
    for (int64_t i = 0; i < t->numel; i++) {
        double v;
        if (f32) {
            float x;
            memcpy(&x, f32 + 4 * i, 4);
            v = x;
        } else {
            v = ox_tensor_get_f64(t, i);
        }
        if (isnan(v)) {
            st->nan_count++;
            continue;
        }
        if (isinf(v)) {
            st->inf_count++;
            continue;
        }
        if (v == 0)
            zeros++;
        finite++;
        double dlt = v - mean;
        mean += dlt / (double)finite;
        m2 += dlt * (v - mean);
        if (v < mn)
            mn = v;
        if (v > mx)
            mx = v;
    }
    st->count = t->numel;
    st->mean = finite ? mean : NAN;
    st->std = finite ? sqrt(m2 / (double)finite) : NAN;
    st->min = finite ? mn : NAN;
    st->max = finite ? mx : NAN;
    st->zero_frac = t->numel ? (double)zeros / (double)t->numel : 0;
    return true;
}
