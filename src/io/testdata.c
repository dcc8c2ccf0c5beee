/* Reader and writer for the backend suite's test data: TensorProto,
 * SequenceProto, OptionalProto and MapProto files become executor values
 * (ox_rval), using the loader's TensorProto conversion for the tensors. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "onnxscope/io.h"
#include "onnxscope/testdata.h"
#include "io/convert.h"

#define MAX_DEPTH 16

/* SequenceProto/OptionalProto.DataType of onnx-data.proto (our .proto
 * keeps elem_type a plain int32). */
enum { ELEM_UNDEFINED = 0, ELEM_TENSOR = 1, ELEM_SPARSE = 2, ELEM_SEQUENCE = 3,
       ELEM_MAP = 4, ELEM_OPTIONAL = 5 };

static ox_status seq_from_proto(const Onnx__SequenceProto *sp, int depth, ox_rval **out,
                                ox_error *err);
static ox_status map_from_proto(const Onnx__MapProto *mp, int depth, ox_rval **out,
                                ox_error *err);

static ox_status tensor_val(const Onnx__TensorProto *tp, ox_rval **out, ox_error *err)
{
    ox_tensor *t;
    ox_status st = ox_tensor_from_proto(tp, NULL, NULL, NULL, &t, err);
    if (st)
        return st;
    *out = ox_rval_tensor(t);
    return *out ? OX_OK : ox_errorf(err, OX_ENOMEM, "out of memory");
}

static ox_status opt_from_proto(const Onnx__OptionalProto *op, int depth, ox_rval **out,
                                ox_error *err)
{
    *out = NULL;
    if (depth > MAX_DEPTH)
        return ox_errorf(err, OX_EPARSE, "test data nests too deeply");
    ox_rval *v = ox_rval_optional_none(NULL);
    if (!v)
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    ox_rval *item = NULL;
    ox_status st = OX_OK;
    if (op->tensor_value)
        st = tensor_val(op->tensor_value, &item, err);
    else if (op->sequence_value)
        st = seq_from_proto(op->sequence_value, depth + 1, &item, err);
    else if (op->map_value)
        st = map_from_proto(op->map_value, depth + 1, &item, err);
    else if (op->optional_value)
        st = opt_from_proto(op->optional_value, depth + 1, &item, err);
    else if (op->sparse_tensor_value)
        st = ox_errorf(err, OX_EUNSUPPORTED, "sparse tensors in test data");
    if (!st && item)
        st = ox_rval_seq_push(v, item) ? ox_errorf(err, OX_ENOMEM, "out of memory") : OX_OK;
    if (st) {
        ox_rval_free(item);
        ox_rval_free(v);
        return st;
    }
    *out = v;
    return OX_OK;
}

static ox_status seq_from_proto(const Onnx__SequenceProto *sp, int depth, ox_rval **out,
                                ox_error *err)
{
    *out = NULL;
    if (depth > MAX_DEPTH)
        return ox_errorf(err, OX_EPARSE, "test data nests too deeply");
    ox_rval *v = ox_rval_sequence();
    if (!v)
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    ox_status st = OX_OK;
    for (size_t i = 0; !st && i < sp->n_tensor_values; i++) {
        ox_rval *it;
        st = tensor_val(sp->tensor_values[i], &it, err);
        if (!st && ox_rval_seq_push(v, it)) {
            ox_rval_free(it);
            st = ox_errorf(err, OX_ENOMEM, "out of memory");
        }
    }
    for (size_t i = 0; !st && i < sp->n_sequence_values; i++) {
        ox_rval *it;
        st = seq_from_proto(sp->sequence_values[i], depth + 1, &it, err);
        if (!st && ox_rval_seq_push(v, it)) {
            ox_rval_free(it);
            st = ox_errorf(err, OX_ENOMEM, "out of memory");
        }
    }
    for (size_t i = 0; !st && i < sp->n_map_values; i++) {
        ox_rval *it;
        st = map_from_proto(sp->map_values[i], depth + 1, &it, err);
        if (!st && ox_rval_seq_push(v, it)) {
            ox_rval_free(it);
            st = ox_errorf(err, OX_ENOMEM, "out of memory");
        }
    }
    for (size_t i = 0; !st && i < sp->n_optional_values; i++) {
        ox_rval *it;
        st = opt_from_proto(sp->optional_values[i], depth + 1, &it, err);
        if (!st && ox_rval_seq_push(v, it)) {
            ox_rval_free(it);
            st = ox_errorf(err, OX_ENOMEM, "out of memory");
        }
    }
    if (!st && sp->n_sparse_tensor_values)
        st = ox_errorf(err, OX_EUNSUPPORTED, "sparse tensors in test data");
    /* An empty sequence still knows its element type. */
    if (!st && v->n_items == 0 && sp->has_elem_type &&
        sp->elem_type == ELEM_TENSOR)
        v->elem_type = ox_type_new_tensor(OX_DT_UNDEFINED, 0, NULL);
    if (st) {
        ox_rval_free(v);
        return st;
    }
    *out = v;
    return OX_OK;
}

static ox_status map_from_proto(const Onnx__MapProto *mp, int depth, ox_rval **out,
                                ox_error *err)
{
    *out = NULL;
    if (depth > MAX_DEPTH)
        return ox_errorf(err, OX_EPARSE, "test data nests too deeply");
    ox_rval *v = calloc(1, sizeof *v);
    if (!v)
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    v->kind = OX_RV_MAP;
    ox_status st = OX_OK;
    int64_t n;
    if (mp->n_string_keys) {
        n = (int64_t)mp->n_string_keys;
        v->t = ox_tensor_new(OX_DT_STRING, 1, &n);
        if (!v->t)
            st = ox_errorf(err, OX_ENOMEM, "out of memory");
        for (int64_t i = 0; !st && i < n; i++) {
            ox_bytes *b = &v->t->strings[i];
            free(b->data);
            b->data = malloc(mp->string_keys[i].len + 1);
            if (!b->data) {
                st = ox_errorf(err, OX_ENOMEM, "out of memory");
                break;
            }
            memcpy(b->data, mp->string_keys[i].data, mp->string_keys[i].len);
            b->data[mp->string_keys[i].len] = 0;
            b->len = mp->string_keys[i].len;
        }
    } else {
        n = (int64_t)mp->n_keys;
        ox_dtype kt = mp->has_key_type && ox_dtype_valid(mp->key_type) &&
                              mp->key_type != OX_DT_STRING && mp->key_type != 0
                          ? (ox_dtype)mp->key_type
                          : OX_DT_INT64;
        v->t = ox_tensor_new(kt, 1, &n);
        if (!v->t)
            st = ox_errorf(err, OX_ENOMEM, "out of memory");
        for (int64_t i = 0; !st && i < n; i++)
            ox_tensor_set_i64(v->t, i, mp->keys[i]);
    }
    if (!st && mp->values) {
        ox_rval *vals;
        st = seq_from_proto(mp->values, depth + 1, &vals, err);
        if (!st && ox_rval_seq_push(v, vals)) {
            ox_rval_free(vals);
            st = ox_errorf(err, OX_ENOMEM, "out of memory");
        }
    }
    if (st) {
        ox_rval_free(v);
        return st;
    }
    *out = v;
    return OX_OK;
}

static char *dup_name(const char *s)
{
    return (s && s[0]) ? ox_strdup(s) : NULL;
}

ox_status ox_testdata_load_buffer(const void *data, size_t len, const ox_type *type,
                                  ox_rval **out, char **name, ox_error *err)
{
    *out = NULL;
    if (name)
        *name = NULL;
    ox_type_kind kind = type ? type->kind : OX_TYPE_TENSOR;
    ox_status st;
    if (kind == OX_TYPE_SEQUENCE) {
        if (!ox_wire_depth_ok(&onnx__sequence_proto__descriptor, data, len, 3 * MAX_DEPTH))
            return ox_errorf(err, OX_EPARSE, "malformed SequenceProto");
        Onnx__SequenceProto *sp = onnx__sequence_proto__unpack(NULL, len, data);
        if (!sp)
            return ox_errorf(err, OX_EPARSE, "not a valid SequenceProto");
        st = seq_from_proto(sp, 0, out, err);
        if (!st && name)
            *name = dup_name(sp->name);
        onnx__sequence_proto__free_unpacked(sp, NULL);
    } else if (kind == OX_TYPE_OPTIONAL) {
        if (!ox_wire_depth_ok(&onnx__optional_proto__descriptor, data, len, 3 * MAX_DEPTH))
            return ox_errorf(err, OX_EPARSE, "malformed OptionalProto");
        Onnx__OptionalProto *op = onnx__optional_proto__unpack(NULL, len, data);
        if (!op)
            return ox_errorf(err, OX_EPARSE, "not a valid OptionalProto");
        st = opt_from_proto(op, 0, out, err);
        if (!st && type->inner && *out)
            (*out)->elem_type = ox_type_clone(type->inner);
        if (!st && name)
            *name = dup_name(op->name);
        onnx__optional_proto__free_unpacked(op, NULL);
    } else if (kind == OX_TYPE_MAP) {
        if (!ox_wire_depth_ok(&onnx__map_proto__descriptor, data, len, 3 * MAX_DEPTH))
            return ox_errorf(err, OX_EPARSE, "malformed MapProto");
        Onnx__MapProto *mp = onnx__map_proto__unpack(NULL, len, data);
        if (!mp)
            return ox_errorf(err, OX_EPARSE, "not a valid MapProto");
        st = map_from_proto(mp, 0, out, err);
        if (!st && name)
            *name = dup_name(mp->name);
        onnx__map_proto__free_unpacked(mp, NULL);
    } else {
        if (!ox_wire_depth_ok(&onnx__tensor_proto__descriptor, data, len, 8))
            return ox_errorf(err, OX_EPARSE, "malformed TensorProto");
        Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, len, data);
        if (!tp)
            return ox_errorf(err, OX_EPARSE, "not a valid TensorProto");
        st = tensor_val(tp, out, err);
        if (!st && name)
            *name = dup_name(tp->name);
        onnx__tensor_proto__free_unpacked(tp, NULL);
    }
    if (st && *out) {
        ox_rval_free(*out);
        *out = NULL;
    }
    return st;
}

ox_status ox_testdata_load(const char *path, const ox_type *type, ox_rval **out,
                           char **name, ox_error *err)
{
    *out = NULL;
    if (name)
        *name = NULL;
    ox_error oe = {0};
    int fd = ox_open_regular(path, &oe);   /* a FIFO would block */
    FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
    if (!f) {
        if (fd >= 0)
            close(fd);
        return ox_errorf(err, OX_EIO, "cannot open %s: %s", path,
                         fd < 0 ? oe.msg : strerror(errno));
    }
    size_t cap = 1 << 16, len = 0;
    unsigned char *buf = malloc(cap);
    while (buf) {
        size_t r = fread(buf + len, 1, cap - len, f);
        len += r;
        if (len < cap)
            break;
        if (cap > ((size_t)1 << 34))
            break;
        unsigned char *nb = realloc(buf, cap * 2);
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    bool bad = ferror(f);
    fclose(f);
    if (!buf)
        return ox_errorf(err, OX_ENOMEM, "out of memory reading %s", path);
    if (bad) {
        free(buf);
        return ox_errorf(err, OX_EIO, "reading %s failed", path);
    }
    ox_status st = ox_testdata_load_buffer(buf, len, type, out, name, err);
    free(buf);
    return st;
}

/* ---- writing ------------------------------------------------------------ */

static Onnx__SequenceProto *seq_to_proto(ox_pool *p, const ox_rval *v, int depth);
static Onnx__OptionalProto *opt_to_proto(ox_pool *p, const ox_rval *v, int depth);

static Onnx__TensorProto *tensor_to_proto(ox_pool *p, const ox_tensor *t)
{
    Onnx__TensorProto *tp = ox_pool_alloc(p, sizeof *tp);
    if (!tp)
        return NULL;
    onnx__tensor_proto__init(tp);
    ox_tensor_to_proto(p, t, tp, NULL, 0);
    return tp;
}

static bool fill_elem(ox_pool *p, const ox_rval *it, int depth, int32_t *kind,
                      Onnx__TensorProto **t, Onnx__SequenceProto **s,
                      Onnx__OptionalProto **o)
{
    if (it->kind == OX_RV_TENSOR) {
        *kind = ELEM_TENSOR;
        return (*t = tensor_to_proto(p, it->t)) != NULL;
    }
    if (it->kind == OX_RV_SEQUENCE) {
        *kind = ELEM_SEQUENCE;
        return (*s = seq_to_proto(p, it, depth + 1)) != NULL;
    }
    if (it->kind == OX_RV_OPTIONAL) {
        *kind = ELEM_OPTIONAL;
        return (*o = opt_to_proto(p, it, depth + 1)) != NULL;
    }
    return false;
}

static Onnx__SequenceProto *seq_to_proto(ox_pool *p, const ox_rval *v, int depth)
{
    if (depth > MAX_DEPTH)
        return NULL;
    Onnx__SequenceProto *sp = ox_pool_alloc(p, sizeof *sp);
    if (!sp)
        return NULL;
    onnx__sequence_proto__init(sp);
    sp->has_elem_type = 1;
    sp->elem_type = ELEM_TENSOR;
    size_t n = (size_t)v->n_items;
    sp->tensor_values = ox_pool_alloc(p, (n + 1) * sizeof *sp->tensor_values);
    sp->sequence_values = ox_pool_alloc(p, (n + 1) * sizeof *sp->sequence_values);
    sp->optional_values = ox_pool_alloc(p, (n + 1) * sizeof *sp->optional_values);
    if (!sp->tensor_values || !sp->sequence_values || !sp->optional_values)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        Onnx__TensorProto *t = NULL;
        Onnx__SequenceProto *s = NULL;
        Onnx__OptionalProto *o = NULL;
        if (!fill_elem(p, v->items[i], depth, &sp->elem_type, &t, &s, &o))
            return NULL;
        if (t)
            sp->tensor_values[sp->n_tensor_values++] = t;
        if (s)
            sp->sequence_values[sp->n_sequence_values++] = s;
        if (o)
            sp->optional_values[sp->n_optional_values++] = o;
    }
    return sp;
}

static Onnx__OptionalProto *opt_to_proto(ox_pool *p, const ox_rval *v, int depth)
{
    if (depth > MAX_DEPTH)
        return NULL;
    Onnx__OptionalProto *op = ox_pool_alloc(p, sizeof *op);
    if (!op)
        return NULL;
    onnx__optional_proto__init(op);
    op->has_elem_type = 1;
    op->elem_type = ELEM_UNDEFINED;
    if (v->n_items > 0 && v->items[0]) {
        int32_t kind;
        if (!fill_elem(p, v->items[0], depth, &kind, &op->tensor_value, &op->sequence_value,
                       &op->optional_value))
            return NULL;
        op->elem_type = kind;
    }
    return op;
}

ox_status ox_testdata_save(const ox_rval *v, const char *name, const char *path,
                           ox_error *err)
{
    if (!v)
        return ox_errorf(err, OX_EINVAL, "no value to save");
    if (v->kind == OX_RV_TENSOR) {
        if (!name)
            return ox_tensor_save_pb(v->t, path, err);
        ox_tensor *t = ox_tensor_share(v->t);
        if (!t)
            return ox_errorf(err, OX_ENOMEM, "out of memory");
        ox_tensor_set_name(t, name);
        ox_status st = ox_tensor_save_pb(t, path, err);
        ox_tensor_free(t);
        return st;
    }
    if (v->kind == OX_RV_MAP)
        return ox_errorf(err, OX_EUNSUPPORTED, "saving maps is not supported");
    ox_pool *p = ox_pool_new();
    if (!p)
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    ProtobufCMessage *msg = NULL;
    if (v->kind == OX_RV_SEQUENCE) {
        Onnx__SequenceProto *sp = seq_to_proto(p, v, 0);
        if (sp) {
            sp->name = name ? ox_pool_strdup(p, name) : NULL;
            msg = &sp->base;
        }
    } else {
        Onnx__OptionalProto *op = opt_to_proto(p, v, 0);
        if (op) {
            op->name = name ? ox_pool_strdup(p, name) : NULL;
            msg = &op->base;
        }
    }
    ox_status st = msg ? ox_save_message(msg, path, err)
                       : ox_errorf(err, OX_ENOMEM, "cannot encode value");
    ox_pool_free(p);
    return st;
}
