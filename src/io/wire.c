/* A minimal protobuf wire-format walker. It serves two jobs protobuf-c
 * cannot do for us: bounding message nesting depth before protobuf-c
 * recurses into hostile input, and lifting large `raw_data` payloads of the
 * main graph's initializers out of the byte stream so they can be viewed in
 * the mapped file instead of being copied by the unpacker. */
#include "io/wire.h"

#include <stdlib.h>
#include <string.h>

#include "onnx.pb-c.h"

/* Field numbers from the ONNX IR specification. */
enum {
    MODEL_GRAPH = 7,
    GRAPH_INITIALIZER = 5,
    TENSOR_RAW_DATA = 9,
    TENSOR_EXTERNAL_DATA = 13,
};

static bool read_varint(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*p >= end)
            return false;
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return true;
        }
    }
    return false;
}

typedef struct field {
    uint32_t number;
    int wire;
    const uint8_t *start;   /* first byte of the key */
    const uint8_t *payload; /* length-delimited payload */
    size_t len;
    const uint8_t *end;     /* one past the whole field */
} field;

/* Reads the next field at *p; false on malformed input. */
static bool next_field(const uint8_t **p, const uint8_t *end, field *f)
{
    uint64_t key, v;
    f->start = *p;
    if (!read_varint(p, end, &key))
        return false;
    f->number = (uint32_t)(key >> 3);
    f->wire = (int)(key & 7);
    if (f->number == 0 || key >> 32)
        return false;
    f->payload = NULL;
    f->len = 0;
    switch (f->wire) {
    case 0:
        if (!read_varint(p, end, &v))
            return false;
        break;
    case 1:
        if (end - *p < 8)
            return false;
        *p += 8;
        break;
    case 5:
        if (end - *p < 4)
            return false;
        *p += 4;
        break;
    case 2:
        if (!read_varint(p, end, &v) || v > (uint64_t)(end - *p))
            return false;
        f->payload = *p;
        f->len = (size_t)v;
        *p += v;
        break;
    default:
        return false; /* groups (3, 4) are not used by ONNX */
    }
    f->end = *p;
    return true;
}

/* ---- depth check driven by protobuf-c descriptors ---------------------- */

enum { WALK_OK, WALK_TOO_DEEP, WALK_NUL };

/* An external_data entry (StringStringEntryProto) of a TensorProto: a NUL
 * in its key or value would silently cut the C string protobuf-c makes
 * ("w.bin\0../x" would read w.bin), so it is refused instead. */
static bool entry_has_nul(const uint8_t *p, const uint8_t *end)
{
    field f;
    while (p < end) {
        if (!next_field(&p, end, &f))
            return false;
        if (f.wire == 2 && memchr(f.payload, 0, f.len))
            return true;
    }
    return false;
}

static int walk(const ProtobufCMessageDescriptor *d, const uint8_t *p, const uint8_t *end,
                int depth, int max_depth)
{
    if (depth > max_depth)
        return WALK_TOO_DEEP;
    field f;
    while (p < end) {
        if (!next_field(&p, end, &f))
            return WALK_OK; /* malformed bytes: protobuf-c reports it */
        if (f.wire != 2)
            continue;
        const ProtobufCFieldDescriptor *fd =
            protobuf_c_message_descriptor_get_field(d, f.number);
        if (!fd || fd->type != PROTOBUF_C_TYPE_MESSAGE)
            continue;
        if (d == &onnx__tensor_proto__descriptor && f.number == TENSOR_EXTERNAL_DATA &&
            entry_has_nul(f.payload, f.payload + f.len))
            return WALK_NUL;
        int r = walk(fd->descriptor, f.payload, f.payload + f.len, depth + 1, max_depth);
        if (r != WALK_OK)
            return r;
    }
    return WALK_OK;
}

const char *ox_wire_check(const ProtobufCMessageDescriptor *d, const void *data, size_t len,
                          int max_depth)
{
    switch (walk(d, data, (const uint8_t *)data + len, 0, max_depth)) {
    case WALK_TOO_DEEP:
        return "protobuf messages nested too deeply (hostile file?)";
    case WALK_NUL:
        return "an external data entry contains a NUL byte (refused: the location would be "
               "truncated)";
    default:
        return NULL;
    }
}

bool ox_wire_depth_ok(const ProtobufCMessageDescriptor *d, const void *data,
                      size_t len, int max_depth)
{
    return ox_wire_check(d, data, len, max_depth) == NULL;
}

/* ---- stripping ------------------------------------------------------------ */

typedef struct sbuf {
    uint8_t *data;
    size_t len, cap;
    bool oom;
} sbuf;

static void sb_put(sbuf *b, const void *src, size_t n)
{
    if (b->oom || n == 0)
        return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n)
            cap *= 2;
        uint8_t *nd = realloc(b->data, cap);
        if (!nd) {
            b->oom = true;
            return;
        }
        b->data = nd;
        b->cap = cap;
    }
    memcpy(b->data + b->len, src, n);
    b->len += n;
}

static void sb_varint(sbuf *b, uint64_t v)
{
    uint8_t tmp[10];
    int n = 0;
    do {
        tmp[n] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v)
            tmp[n] |= 0x80;
        n++;
    } while (v);
    sb_put(b, tmp, (size_t)n);
}

static void sb_key(sbuf *b, uint32_t number, int wire)
{
    sb_varint(b, ((uint64_t)number << 3) | (uint64_t)wire);
}

/* Copies a TensorProto without its raw_data field into out (as a
 * length-delimited field `number`), recording where raw_data was. */
static bool strip_tensor(sbuf *out, uint32_t number, const field *tf,
                         ox_wire_view *view, size_t threshold)
{
    const uint8_t *p = tf->payload, *end = tf->payload + tf->len;
    const uint8_t *raw = NULL;
    size_t raw_len = 0;
    field f;
    while (p < end) {
        if (!next_field(&p, end, &f))
            return false;
        if (f.number == TENSOR_RAW_DATA && f.wire == 2) {
            raw = f.payload;
            raw_len = f.len;
        }
    }
    if (!raw || raw_len < threshold) {
        sb_put(out, tf->start, (size_t)(tf->end - tf->start));
        view->data = NULL;
        view->len = 0;
        return true;
    }
    sbuf tmp = {0};
    p = tf->payload;
    while (p < end) {
        next_field(&p, end, &f);
        if (f.number == TENSOR_RAW_DATA && f.wire == 2)
            continue;
        sb_put(&tmp, f.start, (size_t)(f.end - f.start));
    }
    if (tmp.oom) {
        free(tmp.data);
        out->oom = true;
        return true;
    }
    sb_key(out, number, 2);
    sb_varint(out, tmp.len);
    sb_put(out, tmp.data, tmp.len);
    free(tmp.data);
    view->data = raw;
    view->len = raw_len;
    return true;
}

static bool push_view(ox_wire_strip *s, ox_wire_view v)
{
    if (s->n_views == s->cap_views) {
        int cap = s->cap_views ? s->cap_views * 2 : 64;
        ox_wire_view *nv = realloc(s->views, (size_t)cap * sizeof *nv);
        if (!nv)
            return false;
        s->views = nv;
        s->cap_views = cap;
    }
    s->views[s->n_views++] = v;
    return true;
}

static bool strip_graph(sbuf *out, const field *gf, ox_wire_strip *s,
                        size_t threshold)
{
    sbuf tmp = {0};
    const uint8_t *p = gf->payload, *end = gf->payload + gf->len;
    field f;
    while (p < end) {
        if (!next_field(&p, end, &f)) {
            free(tmp.data);
            return false;
        }
        if (f.number == GRAPH_INITIALIZER && f.wire == 2) {
            ox_wire_view v = {NULL, 0};
            if (!strip_tensor(&tmp, f.number, &f, &v, threshold) ||
                !push_view(s, v)) {
                free(tmp.data);
                return false;
            }
        } else {
            sb_put(&tmp, f.start, (size_t)(f.end - f.start));
        }
    }
    if (tmp.oom) {
        free(tmp.data);
        return false;
    }
    sb_key(out, gf->number, 2);
    sb_varint(out, tmp.len);
    sb_put(out, tmp.data, tmp.len);
    free(tmp.data);
    return true;
}

bool ox_wire_strip_model(const void *data, size_t len, size_t threshold,
                         ox_wire_strip *s)
{
    memset(s, 0, sizeof *s);
    sbuf out = {0};
    const uint8_t *p = data, *end = (const uint8_t *)data + len;
    field f;
    bool seen_graph = false;
    while (p < end) {
        if (!next_field(&p, end, &f))
            goto fail;
        /* Only the first graph field is stripped; protobuf merges repeated
         * occurrences of a singular message, which we do not emulate. */
        if (f.number == MODEL_GRAPH && f.wire == 2 && !seen_graph) {
            seen_graph = true;
            if (!strip_graph(&out, &f, s, threshold))
                goto fail;
        } else {
            sb_put(&out, f.start, (size_t)(f.end - f.start));
        }
    }
    if (out.oom)
        goto fail;
    s->data = out.data;
    s->len = out.len;
    return true;
fail:
    free(out.data);
    free(s->views);
    memset(s, 0, sizeof *s);
    return false;
}

void ox_wire_strip_free(ox_wire_strip *s)
{
    free(s->data);
    free(s->views);
    memset(s, 0, sizeof *s);
}
