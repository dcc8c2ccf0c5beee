/* Conversions between protobuf-c messages and IR tensors/types, and the
 * resolution of external data (mapped lazily, confined to the model folder). */
#include "io/convert.h"
#include "onnxscope/io.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- mapped files ------------------------------------------------------ */

/* A mapping remembers which file it shows, so that a saver can copy the
 * bytes file to file and refuse to replace a file the model references. */
typedef struct mapped_file {
    ox_buffer b; /* first: the buffer handed out */
    char *path;  /* absolute, NULL when it could not be resolved */
    uint64_t dev, ino;
} mapped_file;

static void release_mapping(ox_buffer *b)
{
    if (b->data && b->size)
        munmap(b->data, b->size);
    free(((mapped_file *)b)->path);
    free(b);
}

ox_status ox_map_file(const char *path, ox_buffer **out, ox_error *err)
{
    int fd = ox_open_regular(path, err);
    if (fd < 0)
        return err ? err->status : OX_EIO;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return ox_errorf(err, OX_EIO, "cannot stat: %s", strerror(e));
    }
    mapped_file *mf = calloc(1, sizeof *mf);
    if (!mf) {
        close(fd);
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    }
    ox_buffer *b = &mf->b;
    b->refcount = 1;
    b->release = release_mapping;
    b->size = (size_t)st.st_size;
    mf->dev = (uint64_t)st.st_dev;
    mf->ino = (uint64_t)st.st_ino;
    mf->path = realpath(path, NULL);
    if (b->size) {
        void *p = mmap(NULL, b->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int e = errno;
            close(fd);
            free(mf->path);
            free(mf);
            return ox_errorf(err, OX_EIO, "cannot map: %s", strerror(e));
        }
        b->data = p;
    }
    close(fd);
    *out = b;
    return OX_OK;
}

bool ox_buffer_file_ref(const ox_buffer *b, const void *data, size_t len, ox_file_ref *ref)
{
    /* Views keep their parent in owner; the root of the chain is the
     * allocation that holds the bytes. */
    while (b && b->release != release_mapping)
        b = b->owner;
    if (!b)
        return false;
    const mapped_file *mf = (const mapped_file *)b;
    const char *base = b->data, *p = data;
    if (len > 0 && (!base || p < base || (size_t)(p - base) > b->size ||
                    len > b->size - (size_t)(p - base)))
        return false;
    ref->path = mf->path;
    ref->dev = mf->dev;
    ref->ino = mf->ino;
    ref->offset = len > 0 ? (uint64_t)(p - base) : 0;
    return true;
}

/* ---- external data --------------------------------------------------------- */

typedef struct ext_file {
    char *real;
    ox_buffer *buf;
} ext_file;

struct ox_extctx {
    char *dir;      /* as given */
    char *realdir;  /* resolved, NULL if it could not be */
    ext_file *files;
    int n_files;
};

ox_extctx *ox_extctx_new(const char *dir)
{
    ox_extctx *x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    x->dir = strdup(dir ? dir : ".");
    x->realdir = realpath(x->dir, NULL);
    return x;
}

void ox_extctx_free(ox_extctx *x)
{
    if (!x)
        return;
    for (int i = 0; i < x->n_files; i++) {
        free(x->files[i].real);
        ox_buffer_release(x->files[i].buf);
    }
    free(x->files);
    free(x->dir);
    free(x->realdir);
    free(x);
}

ox_buffer **ox_extctx_take_files(ox_extctx *x, int *n)
{
    *n = 0;
    if (!x || x->n_files == 0)
        return NULL;
    ox_buffer **r = malloc(sizeof *r * (size_t)x->n_files);
    if (!r)
        return NULL;
    for (int i = 0; i < x->n_files; i++)
        r[i] = ox_buffer_retain(x->files[i].buf);
    *n = x->n_files;
    return r;
}

static bool has_dotdot(const char *s)
{
    const char *p = s;
    while (*p) {
        const char *q = p;
        while (*q && *q != '/' && *q != '\\')
            q++;
        if (q - p == 2 && p[0] == '.' && p[1] == '.')
            return true;
        p = *q ? q + 1 : q;
    }
    return false;
}

static ox_status ext_resolve(ox_extctx *x, const char *loc, ox_buffer **out,
                             ox_error *err)
{
    if (!loc || !*loc)
        return ox_errorf(err, OX_EMODEL, "external data without a location");
    if (loc[0] == '/' || loc[0] == '\\' || (loc[0] && loc[1] == ':'))
        return ox_errorf(err, OX_EMODEL,
                         "external data location '%s' is absolute (refused)", loc);
    if (has_dotdot(loc))
        return ox_errorf(err, OX_EMODEL,
                         "external data location '%s' contains '..' (refused)", loc);
    if (!x->realdir)
        return ox_errorf(err, OX_EIO, "cannot resolve model folder '%s'", x->dir);
    size_t n = strlen(x->dir) + strlen(loc) + 2;
    char *path = malloc(n);
    if (!path)
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    snprintf(path, n, "%s/%s", x->dir, loc);
    char *real = realpath(path, NULL);
    if (!real) {
        ox_status st = ox_errorf(err, OX_EIO, "external data file '%s': %s",
                                 loc, strerror(errno));
        free(path);
        return st;
    }
    free(path);
    size_t rl = strlen(x->realdir);
    if (strncmp(real, x->realdir, rl) != 0 ||
        (real[rl] != '/' && !(rl == 1 && x->realdir[0] == '/'))) {
        free(real);
        return ox_errorf(err, OX_EMODEL,
                         "external data location '%s' resolves outside the model folder (refused)",
                         loc);
    }
    for (int i = 0; i < x->n_files; i++) {
        if (strcmp(x->files[i].real, real) == 0) {
            free(real);
            *out = x->files[i].buf;
            return OX_OK;
        }
    }
    ox_buffer *b;
    ox_error e2 = {0};
    if (ox_map_file(real, &b, &e2) != OX_OK) {
        free(real);
        return ox_errorf(err, e2.status, "external data file '%s': %s", loc, e2.msg);
    }
    ext_file *nf = realloc(x->files, (size_t)(x->n_files + 1) * sizeof *nf);
    if (!nf) {
        free(real);
        ox_buffer_release(b);
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    }
    x->files = nf;
    x->files[x->n_files].real = real;
    x->files[x->n_files].buf = b;
    x->n_files++;
    *out = b;
    return OX_OK;
}

static bool parse_i64(const char *s, int64_t *out)
{
    if (!s || !*s)
        return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < 0)
        return false;
    *out = v;
    return true;
}

/* ---- tensors -------------------------------------------------------------- */

static const char *tname(const Onnx__TensorProto *tp)
{
    return tp->name && *tp->name ? tp->name : "(unnamed)";
}

/* Resolves a tensor's external data into a view buffer of exactly nbytes. */
static ox_status load_external(const Onnx__TensorProto *tp, ox_extctx *ext,
                               ox_dtype dt, size_t nbytes, ox_external **ext_out,
                               ox_buffer **buf_out, ox_error *err)
{
    ox_external *e = calloc(1, sizeof *e);
    if (!e)
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    e->offset = -1;
    e->length = -1;
    *ext_out = e;
    for (size_t i = 0; i < tp->n_external_data; i++) {
        const Onnx__StringStringEntryProto *kv = tp->external_data[i];
        const char *k = kv->key ? kv->key : "", *v = kv->value ? kv->value : "";
        if (strcmp(k, "location") == 0) {
            free(e->location);
            e->location = strdup(v);
        } else if (strcmp(k, "offset") == 0) {
            if (!parse_i64(v, &e->offset))
                return ox_errorf(err, OX_EMODEL, "tensor '%s': bad external offset '%s'",
                                 tname(tp), v);
        } else if (strcmp(k, "length") == 0) {
            if (!parse_i64(v, &e->length))
                return ox_errorf(err, OX_EMODEL, "tensor '%s': bad external length '%s'",
                                 tname(tp), v);
        } else if (strcmp(k, "checksum") == 0) {
            free(e->checksum);
            e->checksum = strdup(v);
        }
    }
    if (dt == OX_DT_STRING)
        return ox_errorf(err, OX_EMODEL, "tensor '%s': string tensors cannot be external",
                         tname(tp));
    if (!ext)
        return ox_errorf(err, OX_EMODEL, "tensor '%s': external data not allowed here",
                         tname(tp));
    ox_buffer *fb = NULL;
    ox_error e2 = {0};
    if (ext_resolve(ext, e->location, &fb, &e2) != OX_OK)
        return ox_errorf(err, e2.status, "tensor '%s': %s", tname(tp), e2.msg);
    uint64_t off = e->offset < 0 ? 0 : (uint64_t)e->offset;
    uint64_t len = e->length < 0 ? (uint64_t)nbytes : (uint64_t)e->length;
    if (off > fb->size || len > fb->size - off)
        return ox_errorf(err, OX_EMODEL,
                         "tensor '%s': external range [%llu, +%llu) is outside '%s' (%zu bytes)",
                         tname(tp), (unsigned long long)off, (unsigned long long)len,
                         e->location, fb->size);
    if (len != nbytes)
        return ox_errorf(err, OX_EMODEL,
                         "tensor '%s': external length %llu does not match its shape (%zu bytes)",
                         tname(tp), (unsigned long long)len, nbytes);
    *buf_out = ox_buffer_view(fb, (char *)fb->data + off, len);
    return *buf_out ? OX_OK : ox_errorf(err, OX_ENOMEM, "out of memory");
}

/* Number of typed-field entries expected for n elements of dt, and which
 * field holds them. */
static ox_status from_typed(const Onnx__TensorProto *tp, ox_tensor *t, ox_error *err)
{
    int64_t n = t->numel;
    uint8_t *d = ox_tensor_data(t);
    ox_dtype dt = t->dtype;
    size_t have = 0, want = (size_t)n;
#define CHECK_COUNT(field)                                                       \
    do {                                                                         \
        have = tp->n_##field;                                                    \
        if (have != want)                                                        \
            return ox_errorf(err, OX_EMODEL,                                     \
                             "tensor '%s': %zu values in " #field " for %zu elements", \
                             tname(tp), have, want);                             \
    } while (0)
    switch (dt) {
    case OX_DT_FLOAT:
        CHECK_COUNT(float_data);
        memcpy(d, tp->float_data, want * 4);
        break;
    case OX_DT_COMPLEX64:
        want *= 2;
        CHECK_COUNT(float_data);
        memcpy(d, tp->float_data, want * 4);
        break;
    case OX_DT_DOUBLE:
        CHECK_COUNT(double_data);
        memcpy(d, tp->double_data, want * 8);
        break;
    case OX_DT_COMPLEX128:
        want *= 2;
        CHECK_COUNT(double_data);
        memcpy(d, tp->double_data, want * 8);
        break;
    case OX_DT_INT64:
        CHECK_COUNT(int64_data);
        memcpy(d, tp->int64_data, want * 8);
        break;
    case OX_DT_UINT32:
        CHECK_COUNT(uint64_data);
        for (size_t i = 0; i < want; i++)
            ((uint32_t *)d)[i] = (uint32_t)tp->uint64_data[i];
        break;
    case OX_DT_UINT64:
        CHECK_COUNT(uint64_data);
        memcpy(d, tp->uint64_data, want * 8);
        break;
    case OX_DT_INT32:
        CHECK_COUNT(int32_data);
        memcpy(d, tp->int32_data, want * 4);
        break;
    case OX_DT_INT16:
    case OX_DT_UINT16:
    case OX_DT_FLOAT16:
    case OX_DT_BFLOAT16:
        CHECK_COUNT(int32_data);
        for (size_t i = 0; i < want; i++)
            ((uint16_t *)d)[i] = (uint16_t)tp->int32_data[i];
        break;
    case OX_DT_INT8:
    case OX_DT_UINT8:
    case OX_DT_BOOL:
    case OX_DT_FLOAT8E4M3FN:
    case OX_DT_FLOAT8E4M3FNUZ:
    case OX_DT_FLOAT8E5M2:
    case OX_DT_FLOAT8E5M2FNUZ:
    case OX_DT_FLOAT8E8M0:
        CHECK_COUNT(int32_data);
        for (size_t i = 0; i < want; i++)
            d[i] = (uint8_t)tp->int32_data[i];
        break;
    case OX_DT_INT4:
    case OX_DT_UINT4:
    case OX_DT_FLOAT4E2M1:
    case OX_DT_INT2:
    case OX_DT_UINT2: {
        /* int32_data holds the packed bytes, one byte per entry. */
        want = t->nbytes;
        if (tp->n_int32_data == (size_t)n && want != (size_t)n) {
            /* Also accept one element per entry and pack it ourselves. */
            int bits = ox_dtype_bits(dt);
            int per = 8 / bits;
            memset(d, 0, t->nbytes);
            for (int64_t i = 0; i < n; i++)
                d[i / per] |= (uint8_t)((tp->int32_data[i] & ((1 << bits) - 1))
                                        << (bits * (i % per)));
            break;
        }
        CHECK_COUNT(int32_data);
        for (size_t i = 0; i < want; i++)
            d[i] = (uint8_t)tp->int32_data[i];
        break;
    }
    default:
        return ox_errorf(err, OX_EMODEL, "tensor '%s': unsupported data type %d",
                         tname(tp), (int)dt);
    }
#undef CHECK_COUNT
    return OX_OK;
}

static bool any_typed(const Onnx__TensorProto *tp)
{
    return tp->n_float_data || tp->n_int32_data || tp->n_int64_data ||
           tp->n_double_data || tp->n_uint64_data || tp->n_string_data;
}

ox_status ox_tensor_from_proto(const Onnx__TensorProto *tp,
                               const ox_wire_view *view, ox_buffer *owner,
                               ox_extctx *ext, ox_tensor **out, ox_error *err)
{
    *out = NULL;
    if (!tp->has_data_type || !ox_dtype_valid(tp->data_type) ||
        tp->data_type == OX_DT_UNDEFINED)
        return ox_errorf(err, OX_EMODEL, "tensor '%s': invalid data type %d",
                         tname(tp), tp->has_data_type ? (int)tp->data_type : 0);
    if (tp->n_dims > OX_MAX_RANK)
        return ox_errorf(err, OX_EMODEL, "tensor '%s': rank %zu exceeds %d",
                         tname(tp), tp->n_dims, OX_MAX_RANK);
    int64_t numel;
    if (!ox_shape_numel((int)tp->n_dims, tp->dims, &numel))
        return ox_errorf(err, OX_EMODEL, "tensor '%s': invalid or overflowing dimensions",
                         tname(tp));
    ox_dtype dt = (ox_dtype)tp->data_type;
    size_t nbytes = 0;
    if (dt != OX_DT_STRING && !ox_dtype_nbytes(dt, numel, &nbytes))
        return ox_errorf(err, OX_EMODEL, "tensor '%s': byte size overflows", tname(tp));

    bool external = tp->has_data_location &&
                    tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    const uint8_t *raw = NULL;
    size_t raw_len = 0;
    bool has_raw = false;
    if (view && view->data) {
        raw = view->data;
        raw_len = view->len;
        has_raw = true;
    } else if (tp->has_raw_data) {
        raw = tp->raw_data.data;
        raw_len = tp->raw_data.len;
        has_raw = true;
    }
    /* Never allocate more than the file can justify: the data must be present. */
    if (!external && dt != OX_DT_STRING) {
        if (has_raw && raw_len != nbytes)
            return ox_errorf(err, OX_EMODEL,
                             "tensor '%s': raw_data has %zu bytes, shape needs %zu",
                             tname(tp), raw_len, nbytes);
        if (!has_raw && numel > 0 && !any_typed(tp))
            return ox_errorf(err, OX_EMODEL, "tensor '%s': no data for %lld elements",
                             tname(tp), (long long)numel);
    }
    /* Typed fields hold at most two elements per entry (packed 4-bit types):
     * refuse before allocating for a count the file cannot back. */
    if (!external && !has_raw && dt != OX_DT_STRING) {
        uint64_t typed = (uint64_t)tp->n_float_data + tp->n_int32_data + tp->n_int64_data +
                         tp->n_double_data + tp->n_uint64_data;
        if ((uint64_t)numel > 4 * typed)
            return ox_errorf(err, OX_EMODEL, "tensor '%s': %llu typed values for %lld elements",
                             tname(tp), (unsigned long long)typed, (long long)numel);
    }
    if (dt == OX_DT_STRING && !external && (int64_t)tp->n_string_data != numel)
        return ox_errorf(err, OX_EMODEL, "tensor '%s': %zu strings for %lld elements",
                         tname(tp), tp->n_string_data, (long long)numel);

    ox_tensor *t = NULL;
    ox_status st = OX_OK;
    if (external || (has_raw && view && view->data && owner)) {
        /* The bytes stay where they are: a view into the file. */
        ox_buffer *vb = NULL;
        ox_external *xe = NULL;
        if (external)
            st = load_external(tp, ext, dt, nbytes, &xe, &vb, err);
        else if (!(vb = ox_buffer_view(owner, (void *)raw, raw_len)))
            st = ox_errorf(err, OX_ENOMEM, "out of memory");
        if (st == OX_OK) {
            t = ox_tensor_new_view(dt, (int)tp->n_dims, tp->dims, vb, 0);
            if (!t)
                st = ox_errorf(err, OX_ENOMEM, "out of memory");
            else
                t->external = xe;
        }
        ox_buffer_release(vb);
        if (st != OX_OK) {
            if (xe) {
                free(xe->location);
                free(xe->checksum);
                free(xe);
            }
            return st;
        }
    } else {
        t = ox_tensor_new(dt, (int)tp->n_dims, tp->dims);
        if (!t)
            return ox_errorf(err, OX_ENOMEM, "tensor '%s': cannot allocate %zu bytes",
                             tname(tp), nbytes);
    }
    if (tp->name && *tp->name)
        ox_tensor_set_name(t, tp->name);
    if (tp->doc_string && *tp->doc_string)
        t->doc_string = ox_strdup(tp->doc_string);
    if (dt == OX_DT_STRING) {
        for (int64_t i = 0; i < numel; i++) {
            const ProtobufCBinaryData *b = &tp->string_data[i];
            char *d = malloc(b->len + 1);
            if (!d) {
                st = ox_errorf(err, OX_ENOMEM, "out of memory");
                goto out;
            }
            if (b->len)
                memcpy(d, b->data, b->len);
            d[b->len] = 0;
            free(t->strings[i].data);
            t->strings[i].data = d;
            t->strings[i].len = b->len;
        }
    } else if (external || (has_raw && view && view->data && owner)) {
        /* already viewed */
    } else if (has_raw) {
        if (raw_len)
            memcpy(ox_tensor_data(t), raw, raw_len);
    } else if (numel > 0) {
        st = from_typed(tp, t, err);
    }
out:
    if (st != OX_OK) {
        ox_tensor_free(t);
        return st;
    }
    *out = t;
    return OX_OK;
}

ox_type *ox_type_from_proto(const Onnx__TypeProto *tp, int depth)
{
    if (!tp || depth > 32)
        return NULL;
    ox_type *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    if (tp->denotation && *tp->denotation)
        t->denotation = ox_strdup(tp->denotation);
    const Onnx__TensorShapeProto *shape = NULL;
    switch (tp->value_case) {
    case ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE:
        t->kind = OX_TYPE_TENSOR;
        t->elem = tp->tensor_type->has_elem_type && ox_dtype_valid(tp->tensor_type->elem_type)
                      ? (ox_dtype)tp->tensor_type->elem_type : OX_DT_UNDEFINED;
        shape = tp->tensor_type->shape;
        break;
    case ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE:
        t->kind = OX_TYPE_SPARSE_TENSOR;
        t->elem = tp->sparse_tensor_type->has_elem_type &&
                          ox_dtype_valid(tp->sparse_tensor_type->elem_type)
                      ? (ox_dtype)tp->sparse_tensor_type->elem_type : OX_DT_UNDEFINED;
        shape = tp->sparse_tensor_type->shape;
        break;
    case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE:
        t->kind = OX_TYPE_SEQUENCE;
        t->inner = ox_type_from_proto(tp->sequence_type->elem_type, depth + 1);
        break;
    case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE:
        t->kind = OX_TYPE_OPTIONAL;
        t->inner = ox_type_from_proto(tp->optional_type->elem_type, depth + 1);
        break;
    case ONNX__TYPE_PROTO__VALUE_MAP_TYPE:
        t->kind = OX_TYPE_MAP;
        t->elem = tp->map_type->has_key_type && ox_dtype_valid(tp->map_type->key_type)
                      ? (ox_dtype)tp->map_type->key_type : OX_DT_UNDEFINED;
        t->inner = ox_type_from_proto(tp->map_type->value_type, depth + 1);
        break;
    default:
        t->kind = OX_TYPE_NONE;
        break;
    }
    if (shape) {
        t->has_shape = true;
        t->rank = (int)shape->n_dim;
        if (shape->n_dim) {
            t->dims = calloc(shape->n_dim, sizeof *t->dims);
            if (!t->dims) {
                ox_type_free(t);
                return NULL;
            }
        }
        for (size_t i = 0; i < shape->n_dim; i++) {
            const Onnx__TensorShapeProto__Dimension *d = shape->dim[i];
            t->dims[i].value = -1;
            if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
                d->dim_value >= 0)
                t->dims[i].value = d->dim_value;
            else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
                t->dims[i].declared_neg = d->dim_value;   /* unknown; kept for the saver */
            else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                     d->dim_param)
                t->dims[i].param = ox_strdup(d->dim_param);
            if (d->denotation && *d->denotation)
                t->dims[i].denotation = ox_strdup(d->denotation);
        }
    }
    return t;
}

/* ---- pool ------------------------------------------------------------------ */

typedef struct pool_chunk {
    struct pool_chunk *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
} pool_chunk;

struct ox_pool {
    pool_chunk *head;
    bool oom;
};

ox_pool *ox_pool_new(void)
{
    return calloc(1, sizeof(ox_pool));
}

void *ox_pool_alloc(ox_pool *p, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    if (!p->head || p->head->cap - p->head->used < size) {
        size_t cap = size > 65536 ? size : 65536;
        pool_chunk *c = malloc(sizeof *c + cap);
        if (!c) {
            p->oom = true;
            return NULL;
        }
        c->next = p->head;
        c->used = 0;
        c->cap = cap;
        p->head = c;
    }
    void *r = p->head->data + p->head->used;
    p->head->used += size;
    memset(r, 0, size);
    return r;
}

char *ox_pool_strdup(ox_pool *p, const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *r = ox_pool_alloc(p, n);
    if (r)
        memcpy(r, s, n);
    return r;
}

void ox_pool_free(ox_pool *p)
{
    if (!p)
        return;
    pool_chunk *c = p->head;
    while (c) {
        pool_chunk *n = c->next;
        free(c);
        c = n;
    }
    free(p);
}

/* ---- IR to protobuf ----------------------------------------------------------- */

static Onnx__StringStringEntryProto *kv_new(ox_pool *p, const char *k, const char *v)
{
    Onnx__StringStringEntryProto *e = ox_pool_alloc(p, sizeof *e);
    onnx__string_string_entry_proto__init(e);
    e->key = ox_pool_strdup(p, k);
    e->value = ox_pool_strdup(p, v);
    return e;
}

void ox_tensor_to_proto(ox_pool *p, const ox_tensor *t, Onnx__TensorProto *tp,
                        const char *ext_loc, int64_t ext_off)
{
    tp->n_dims = (size_t)t->rank;
    tp->dims = ox_pool_alloc(p, sizeof(int64_t) * (size_t)(t->rank ? t->rank : 1));
    memcpy(tp->dims, t->dims, sizeof(int64_t) * (size_t)t->rank);
    tp->has_data_type = 1;
    tp->data_type = (int32_t)t->dtype;
    if (t->name && *t->name)
        tp->name = ox_pool_strdup(p, t->name);
    if (t->doc_string)
        tp->doc_string = ox_pool_strdup(p, t->doc_string);
    if (t->dtype == OX_DT_STRING) {
        tp->n_string_data = (size_t)t->numel;
        tp->string_data = ox_pool_alloc(p, sizeof(ProtobufCBinaryData) *
                                               (size_t)(t->numel ? t->numel : 1));
        for (int64_t i = 0; i < t->numel && t->strings; i++) {
            tp->string_data[i].len = t->strings[i].len;
            tp->string_data[i].data = (uint8_t *)t->strings[i].data;
        }
        return;
    }
    if (ext_loc) {
        char buf[32];
        tp->has_data_location = 1;
        tp->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
        tp->n_external_data = 3;
        tp->external_data = ox_pool_alloc(p, 3 * sizeof(void *));
        tp->external_data[0] = kv_new(p, "location", ext_loc);
        snprintf(buf, sizeof buf, "%lld", (long long)ext_off);
        tp->external_data[1] = kv_new(p, "offset", buf);
        snprintf(buf, sizeof buf, "%zu", t->nbytes);
        tp->external_data[2] = kv_new(p, "length", buf);
        return;
    }
    tp->has_raw_data = 1;
    tp->raw_data.len = t->nbytes;
    tp->raw_data.data = ox_tensor_data(t);
}

static Onnx__TensorShapeProto *shape_to_proto(ox_pool *p, const ox_type *t)
{
    Onnx__TensorShapeProto *s = ox_pool_alloc(p, sizeof *s);
    onnx__tensor_shape_proto__init(s);
    s->n_dim = (size_t)t->rank;
    s->dim = ox_pool_alloc(p, sizeof(void *) * (size_t)(t->rank ? t->rank : 1));
    for (int i = 0; i < t->rank; i++) {
        Onnx__TensorShapeProto__Dimension *d = ox_pool_alloc(p, sizeof *d);
        onnx__tensor_shape_proto__dimension__init(d);
        if (t->dims[i].value >= 0) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d->dim_value = t->dims[i].value;
        } else if (t->dims[i].param) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            d->dim_param = ox_pool_strdup(p, t->dims[i].param);
        } else if (t->dims[i].declared_neg < 0) {
            /* Still unknown: the file's own negative value, as ONNX
             * Runtime writes it back (docs/INFERENCE.md). */
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d->dim_value = t->dims[i].declared_neg;
        }
        if (t->dims[i].denotation)
            d->denotation = ox_pool_strdup(p, t->dims[i].denotation);
        s->dim[i] = d;
    }
    return s;
}

Onnx__TypeProto *ox_type_to_proto(ox_pool *p, const ox_type *t)
{
    if (!t)
        return NULL;
    Onnx__TypeProto *tp = ox_pool_alloc(p, sizeof *tp);
    onnx__type_proto__init(tp);
    if (t->denotation)
        tp->denotation = ox_pool_strdup(p, t->denotation);
    switch (t->kind) {
    case OX_TYPE_TENSOR: {
        Onnx__TypeProto__Tensor *x = ox_pool_alloc(p, sizeof *x);
        onnx__type_proto__tensor__init(x);
        x->has_elem_type = 1;
        x->elem_type = (int32_t)t->elem;
        if (t->has_shape)
            x->shape = shape_to_proto(p, t);
        tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
        tp->tensor_type = x;
        break;
    }
    case OX_TYPE_SPARSE_TENSOR: {
        Onnx__TypeProto__SparseTensor *x = ox_pool_alloc(p, sizeof *x);
        onnx__type_proto__sparse_tensor__init(x);
        x->has_elem_type = 1;
        x->elem_type = (int32_t)t->elem;
        if (t->has_shape)
            x->shape = shape_to_proto(p, t);
        tp->value_case = ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE;
        tp->sparse_tensor_type = x;
        break;
    }
    case OX_TYPE_SEQUENCE: {
        Onnx__TypeProto__Sequence *x = ox_pool_alloc(p, sizeof *x);
        onnx__type_proto__sequence__init(x);
        x->elem_type = ox_type_to_proto(p, t->inner);
        tp->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
        tp->sequence_type = x;
        break;
    }
    case OX_TYPE_OPTIONAL: {
        Onnx__TypeProto__Optional *x = ox_pool_alloc(p, sizeof *x);
        onnx__type_proto__optional__init(x);
        x->elem_type = ox_type_to_proto(p, t->inner);
        tp->value_case = ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE;
        tp->optional_type = x;
        break;
    }
    case OX_TYPE_MAP: {
        Onnx__TypeProto__Map *x = ox_pool_alloc(p, sizeof *x);
        onnx__type_proto__map__init(x);
        x->has_key_type = 1;
        x->key_type = (int32_t)t->elem;
        x->value_type = ox_type_to_proto(p, t->inner);
        tp->value_case = ONNX__TYPE_PROTO__VALUE_MAP_TYPE;
        tp->map_type = x;
        break;
    }
    default:
        break;
    }
    return tp;
}
