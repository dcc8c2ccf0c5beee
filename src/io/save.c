/* Saving the IR as a .onnx file: build protobuf-c messages that reference
 * (never copy) tensor bytes, stream them into a temporary file and rename it
 * into place. Large models put big tensors into an external data file,
 * copied file to file from the input's external data when unchanged. */
#include "onnxscope/io.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/convert.h"
#include "onnxscope/outfile.h"

/* Protobuf messages cannot exceed 2 GiB; leave room for the graph itself. */
#define PROTO_LIMIT ((uint64_t)2 * 1024 * 1024 * 1024 - ((uint64_t)64 << 20))
#define DEFAULT_EXTERNAL_THRESHOLD 1024
#define EXTERNAL_ALIGN 64

/* Tensors at least this big that sit in a mapped file are copied file to
 * file (smaller ones are cheaper to write from memory). */
#define COPY_MIN ((size_t)64 << 10)
#define STAGE_SIZE ((size_t)256 << 10)
#define MAX_SOURCES 64

/* An input file tensors are copied from: opened once per save, and only
 * used while it is still the file that was mapped. */
typedef struct src_file {
    uint64_t dev, ino;
    int fd; /* -1: cannot be used, write from memory */
} src_file;

typedef struct saver {
    ox_pool *p;
    bool external;          /* put big tensors into the external file */
    size_t threshold;
    const char *ext_loc;    /* location written into the model */
    ox_outfile ext_out;     /* the external data file being written */
    bool ext_open;
    uint64_t ext_off;       /* bytes written to it so far (staged included) */
    uint8_t *stage;         /* small writes are gathered here */
    size_t n_stage;
    src_file srcs[MAX_SOURCES];
    int n_srcs;
    int copy_mode;          /* 0 copy_file_range, 1 sendfile, 2 read/write */
    ox_error *err;
    ox_status st;
    /* Messages unpacked from blobs, freed after packing. */
    ProtobufCMessage **unpacked;
    int n_unpacked;
} saver;

static Onnx__GraphProto *graph_to_proto(saver *S, const ox_graph *g);

static char **str_array(ox_pool *p, size_t n)
{
    return ox_pool_alloc(p, sizeof(char *) * (n ? n : 1));
}

static Onnx__StringStringEntryProto **kvs_to_proto(ox_pool *p, const ox_kv *kv, int n)
{
    Onnx__StringStringEntryProto **r = ox_pool_alloc(p, sizeof(void *) * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) {
        Onnx__StringStringEntryProto *e = ox_pool_alloc(p, sizeof *e);
        onnx__string_string_entry_proto__init(e);
        e->key = ox_pool_strdup(p, kv[i].key);
        e->value = ox_pool_strdup(p, kv[i].value);
        r[i] = e;
    }
    return r;
}

static bool stage_flush(saver *S)
{
    if (S->n_stage == 0)
        return true;
    ox_status st = ox_outfile_write(&S->ext_out, S->stage, S->n_stage, S->err);
    S->n_stage = 0;
    if (st != OX_OK && S->st == OX_OK)
        S->st = st;
    return st == OX_OK;
}

static bool ext_write(saver *S, const void *data, size_t len)
{
    if (S->n_stage + len > STAGE_SIZE && !stage_flush(S))
        return false;
    if (len >= STAGE_SIZE) {
        ox_status st = ox_outfile_write(&S->ext_out, data, len, S->err);
        if (st != OX_OK && S->st == OX_OK)
            S->st = st;
        return st == OX_OK;
    }
    memcpy(S->stage + S->n_stage, data, len);
    S->n_stage += len;
    return true;
}

/* An open descriptor on the file behind ref, or -1 when that file is no
 * longer the one that was mapped (replaced since loading) or cannot be
 * opened: the caller then writes from the mapping. */
static int source_fd(saver *S, const ox_file_ref *ref)
{
    for (int i = 0; i < S->n_srcs; i++)
        if (S->srcs[i].dev == ref->dev && S->srcs[i].ino == ref->ino)
            return S->srcs[i].fd;
    if (S->n_srcs == MAX_SOURCES || !ref->path)
        return -1;
    int fd = open(ref->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
                    (uint64_t)st.st_dev != ref->dev || (uint64_t)st.st_ino != ref->ino)) {
        close(fd);
        fd = -1;
    }
    S->srcs[S->n_srcs++] = (src_file){.dev = ref->dev, .ino = ref->ino, .fd = fd};
    return fd;
}

static bool copy_fallback_errno(int e)
{
    return e == EXDEV || e == EINVAL || e == ENOSYS || e == EOPNOTSUPP || e == EBADF ||
           e == EPERM || e == ETXTBSY;
}

/* n < 0: errno says why; n == 0: the source ended early (truncated since
 * loading). */
static bool copy_failed(saver *S, ssize_t n)
{
    if (S->st == OX_OK)
        S->st = ox_errorf(S->err, OX_EIO, "writing %s: %s", S->ext_out.name,
                          n < 0 ? strerror(errno) : "the input's external data file shrank");
    return false;
}

/* Appends len bytes at off of src to the external file, in the kernel when
 * it can (copy_file_range, then sendfile), else through a bounded buffer:
 * the bytes never all pass through this process's memory. */
static bool copy_from_file(saver *S, int src, uint64_t off, uint64_t len)
{
    int dst = S->ext_out.fd;
    /* Bounded chunks keep Ctrl-C prompt during a multi-GB copy. */
    const size_t chunk = (size_t)64 << 20;
    if (!stage_flush(S))
        return false;
    while (len > 0 && S->copy_mode == 0) {
        loff_t so = (loff_t)off;
        ssize_t n = copy_file_range(src, &so, dst, NULL, len < chunk ? len : chunk, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && copy_fallback_errno(errno))
            S->copy_mode = 1;
        else if (n <= 0)
            return copy_failed(S, n);
        else {
            off += (uint64_t)n;
            len -= (uint64_t)n;
        }
    }
    while (len > 0 && S->copy_mode == 1) {
        off_t so = (off_t)off;
        ssize_t n = sendfile(dst, src, &so, len < chunk ? len : chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && copy_fallback_errno(errno))
            S->copy_mode = 2;
        else if (n <= 0)
            return copy_failed(S, n);
        else {
            off += (uint64_t)n;
            len -= (uint64_t)n;
        }
    }
    while (len > 0) {
        /* The staging buffer is empty (flushed above): reuse it. */
        ssize_t n = pread(src, S->stage, len < STAGE_SIZE ? len : STAGE_SIZE, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return copy_failed(S, n);
        ox_status w = ox_outfile_write(&S->ext_out, S->stage, (size_t)n, S->err);
        if (w != OX_OK) {
            if (S->st == OX_OK)
                S->st = w;
            return false;
        }
        off += (uint64_t)n;
        len -= (uint64_t)n;
    }
    return true;
}

static void write_external(saver *S, const ox_tensor *t, Onnx__TensorProto *tp)
{
    static const char zeros[EXTERNAL_ALIGN];
    if (S->st != OX_OK)
        return;
    uint64_t pad = (EXTERNAL_ALIGN - S->ext_off % EXTERNAL_ALIGN) % EXTERNAL_ALIGN;
    if (pad && !ext_write(S, zeros, (size_t)pad))
        return;
    S->ext_off += pad;
    const void *data = ox_tensor_data(t);
    ox_file_ref ref;
    int src = -1;
    if (t->nbytes >= COPY_MIN && ox_buffer_file_ref(t->buf, data, t->nbytes, &ref))
        src = source_fd(S, &ref);
    if (src >= 0 ? !copy_from_file(S, src, ref.offset, t->nbytes)
                 : (t->nbytes && !ext_write(S, data, t->nbytes)))
        return;
    ox_tensor_to_proto(S->p, t, tp, S->ext_loc, (int64_t)S->ext_off);
    S->ext_off += t->nbytes;
}

/* The one rule for what goes to the external file (main graph
 * initializers only: other tensors cannot be external). */
static bool goes_external(const saver *S, const ox_tensor *t)
{
    return S->external && t->dtype != OX_DT_STRING && t->nbytes >= S->threshold &&
           ox_tensor_data(t);
}

static Onnx__TensorProto *tensor_msg(saver *S, const ox_tensor *t, bool may_external)
{
    Onnx__TensorProto *tp = ox_pool_alloc(S->p, sizeof *tp);
    onnx__tensor_proto__init(tp);
    if (may_external && goes_external(S, t))
        write_external(S, t, tp);
    else
        ox_tensor_to_proto(S->p, t, tp, NULL, 0);
    return tp;
}

static Onnx__SparseTensorProto *sparse_msg(saver *S, const ox_sparse *s)
{
    Onnx__SparseTensorProto *sp = ox_pool_alloc(S->p, sizeof *sp);
    onnx__sparse_tensor_proto__init(sp);
    if (s->values)
        sp->values = tensor_msg(S, s->values, false);
    if (s->indices)
        sp->indices = tensor_msg(S, s->indices, false);
    sp->n_dims = (size_t)s->rank;
    sp->dims = ox_pool_alloc(S->p, sizeof(int64_t) * (size_t)(s->rank ? s->rank : 1));
    memcpy(sp->dims, s->dims, sizeof(int64_t) * (size_t)s->rank);
    return sp;
}

static Onnx__AttributeProto *attr_msg(saver *S, const ox_attr *a)
{
    ox_pool *p = S->p;
    Onnx__AttributeProto *ap = ox_pool_alloc(p, sizeof *ap);
    onnx__attribute_proto__init(ap);
    ap->name = ox_pool_strdup(p, a->name);
    if (a->ref_attr_name)
        ap->ref_attr_name = ox_pool_strdup(p, a->ref_attr_name);
    if (a->doc_string)
        ap->doc_string = ox_pool_strdup(p, a->doc_string);
    ap->has_type = 1;
    ap->type = (Onnx__AttributeProto__AttributeType)a->type;
    if (a->ref_attr_name)
        return ap; /* a reference carries no value */
    size_t n = (size_t)a->n;
    switch (a->type) {
    case OX_ATTR_FLOAT:
        ap->has_f = 1;
        ap->f = a->f;
        break;
    case OX_ATTR_INT:
        ap->has_i = 1;
        ap->i = a->i;
        break;
    case OX_ATTR_STRING:
        ap->has_s = 1;
        ap->s.len = a->s.len;
        ap->s.data = (uint8_t *)a->s.data;
        break;
    case OX_ATTR_TENSOR:
        if (a->t)
            ap->t = tensor_msg(S, a->t, false);
        break;
    case OX_ATTR_GRAPH:
        if (a->g)
            ap->g = graph_to_proto(S, a->g);
        break;
    case OX_ATTR_SPARSE_TENSOR:
        if (a->sparse)
            ap->sparse_tensor = sparse_msg(S, a->sparse);
        break;
    case OX_ATTR_TYPE_PROTO:
        ap->tp = ox_type_to_proto(p, a->tp);
        break;
    case OX_ATTR_FLOATS:
        ap->n_floats = n;
        ap->floats = a->floats;
        break;
    case OX_ATTR_INTS:
        ap->n_ints = n;
        ap->ints = a->ints;
        break;
    case OX_ATTR_STRINGS:
        ap->n_strings = n;
        ap->strings = ox_pool_alloc(p, sizeof(ProtobufCBinaryData) * (n ? n : 1));
        for (size_t i = 0; i < n; i++) {
            ap->strings[i].len = a->strings[i].len;
            ap->strings[i].data = (uint8_t *)a->strings[i].data;
        }
        break;
    case OX_ATTR_TENSORS:
        ap->n_tensors = n;
        ap->tensors = ox_pool_alloc(p, sizeof(void *) * (n ? n : 1));
        for (size_t i = 0; i < n; i++)
            ap->tensors[i] = tensor_msg(S, a->tensors[i], false);
        break;
    case OX_ATTR_GRAPHS:
        ap->n_graphs = n;
        ap->graphs = ox_pool_alloc(p, sizeof(void *) * (n ? n : 1));
        for (size_t i = 0; i < n; i++)
            ap->graphs[i] = graph_to_proto(S, a->graphs[i]);
        break;
    case OX_ATTR_SPARSE_TENSORS:
        ap->n_sparse_tensors = n;
        ap->sparse_tensors = ox_pool_alloc(p, sizeof(void *) * (n ? n : 1));
        for (size_t i = 0; i < n; i++)
            ap->sparse_tensors[i] = sparse_msg(S, a->sparses[i]);
        break;
    case OX_ATTR_TYPE_PROTOS:
        ap->n_type_protos = n;
        ap->type_protos = ox_pool_alloc(p, sizeof(void *) * (n ? n : 1));
        for (size_t i = 0; i < n; i++)
            ap->type_protos[i] = ox_type_to_proto(p, a->tps[i]);
        break;
    default:
        ap->has_type = 0;
        break;
    }
    return ap;
}

static Onnx__NodeProto *node_msg(saver *S, const ox_node *n)
{
    ox_pool *p = S->p;
    Onnx__NodeProto *np = ox_pool_alloc(p, sizeof *np);
    onnx__node_proto__init(np);
    np->n_input = (size_t)n->n_inputs;
    np->input = str_array(p, np->n_input);
    for (int i = 0; i < n->n_inputs; i++)
        np->input[i] = ox_pool_strdup(p, n->inputs[i] ? n->inputs[i]->name : "");
    np->n_output = (size_t)n->n_outputs;
    np->output = str_array(p, np->n_output);
    for (int i = 0; i < n->n_outputs; i++)
        np->output[i] = ox_pool_strdup(p, n->outputs[i] ? n->outputs[i]->name : "");
    if (n->name && *n->name)
        np->name = ox_pool_strdup(p, n->name);
    np->op_type = ox_pool_strdup(p, n->op_type);
    if (n->domain && *n->domain)
        np->domain = ox_pool_strdup(p, n->domain);
    if (n->overload)
        np->overload = ox_pool_strdup(p, n->overload);
    if (n->doc_string)
        np->doc_string = ox_pool_strdup(p, n->doc_string);
    np->n_attribute = (size_t)n->n_attrs;
    np->attribute = ox_pool_alloc(p, sizeof(void *) * (size_t)(n->n_attrs ? n->n_attrs : 1));
    for (int i = 0; i < n->n_attrs; i++)
        np->attribute[i] = attr_msg(S, &n->attrs[i]);
    np->n_metadata_props = (size_t)n->n_meta;
    np->metadata_props = kvs_to_proto(p, n->meta, n->n_meta);
    return np;
}

static Onnx__ValueInfoProto *vi_msg(saver *S, const ox_value *v)
{
    Onnx__ValueInfoProto *vi = ox_pool_alloc(S->p, sizeof *vi);
    onnx__value_info_proto__init(vi);
    vi->name = ox_pool_strdup(S->p, v->name);
    /* What the file declared, refined by inference (ir.h). */
    ox_type *t = ox_value_saved_type(v);
    if (t && t->kind != OX_TYPE_NONE)
        vi->type = ox_type_to_proto(S->p, t);
    ox_type_free(t);
    if (v->doc_string)
        vi->doc_string = ox_pool_strdup(S->p, v->doc_string);
    return vi;
}

static void unpack_annotations(saver *S, const ox_graph *g, Onnx__GraphProto *gp)
{
    const uint8_t *d = g->quant_annotations, *end = d + g->quant_annotations_len;
    size_t cap = 0;
    for (const uint8_t *q = d; q < end;) {
        uint64_t len = 0;
        int shift = 0;
        while (q < end && (*q & 0x80)) {
            len |= (uint64_t)(*q++ & 0x7f) << shift;
            shift += 7;
        }
        if (q >= end)
            break;
        len |= (uint64_t)(*q++ & 0x7f) << shift;
        if (len > (uint64_t)(end - q))
            break;
        q += len;
        cap++;
    }
    gp->quantization_annotation = ox_pool_alloc(S->p, sizeof(void *) * (cap ? cap : 1));
    for (const uint8_t *q = d; q < end && gp->n_quantization_annotation < cap;) {
        uint64_t len = 0;
        int shift = 0;
        while (*q & 0x80) {
            len |= (uint64_t)(*q++ & 0x7f) << shift;
            shift += 7;
        }
        len |= (uint64_t)(*q++ & 0x7f) << shift;
        Onnx__TensorAnnotation *ta = onnx__tensor_annotation__unpack(NULL, len, q);
        q += len;
        if (!ta)
            continue;
        ProtobufCMessage **nu = realloc(S->unpacked, (size_t)(S->n_unpacked + 1) * sizeof *nu);
        if (!nu) {
            protobuf_c_message_free_unpacked(&ta->base, NULL);
            continue;
        }
        S->unpacked = nu;
        S->unpacked[S->n_unpacked++] = &ta->base;
        gp->quantization_annotation[gp->n_quantization_annotation++] = ta;
    }
}

static Onnx__GraphProto *graph_to_proto(saver *S, const ox_graph *g)
{
    ox_pool *p = S->p;
    Onnx__GraphProto *gp = ox_pool_alloc(p, sizeof *gp);
    onnx__graph_proto__init(gp);
    if (g->name)
        gp->name = ox_pool_strdup(p, g->name);
    if (g->doc_string)
        gp->doc_string = ox_pool_strdup(p, g->doc_string);
    gp->n_node = (size_t)g->n_nodes;
    gp->node = ox_pool_alloc(p, sizeof(void *) * (size_t)(g->n_nodes ? g->n_nodes : 1));
    for (int i = 0; i < g->n_nodes; i++)
        gp->node[i] = node_msg(S, g->nodes[i]);
    gp->n_input = (size_t)g->n_inputs;
    gp->input = ox_pool_alloc(p, sizeof(void *) * (size_t)(g->n_inputs ? g->n_inputs : 1));
    for (int i = 0; i < g->n_inputs; i++)
        gp->input[i] = vi_msg(S, g->inputs[i]);
    gp->n_output = (size_t)g->n_outputs;
    gp->output = ox_pool_alloc(p, sizeof(void *) * (size_t)(g->n_outputs ? g->n_outputs : 1));
    for (int i = 0; i < g->n_outputs; i++)
        gp->output[i] = vi_msg(S, g->outputs[i]);
    size_t n_init = 0, n_vi = 0;
    for (int i = 0; i < g->n_values; i++) {
        const ox_value *v = g->values[i];
        if (v->init)
            n_init++;
        if (v->has_value_info && !v->is_input && !v->is_output && (v->type || v->decl))
            n_vi++;
    }
    gp->initializer = ox_pool_alloc(p, sizeof(void *) * (n_init ? n_init : 1));
    gp->value_info = ox_pool_alloc(p, sizeof(void *) * (n_vi ? n_vi : 1));
    bool main_graph = !g->parent && g->model && g->model->graph == g;
    for (int i = 0; i < g->n_values; i++) {
        const ox_value *v = g->values[i];
        if (v->init) {
            Onnx__TensorProto *tp = tensor_msg(S, v->init, main_graph);
            tp->name = ox_pool_strdup(p, v->name); /* the value's name is authoritative */
            gp->initializer[gp->n_initializer++] = tp;
        }
        if (v->has_value_info && !v->is_input && !v->is_output && (v->type || v->decl))
            gp->value_info[gp->n_value_info++] = vi_msg(S, v);
    }
    gp->n_sparse_initializer = (size_t)g->n_sparse;
    gp->sparse_initializer = ox_pool_alloc(p, sizeof(void *) * (size_t)(g->n_sparse ? g->n_sparse : 1));
    for (int i = 0; i < g->n_sparse; i++)
        gp->sparse_initializer[i] = sparse_msg(S, g->sparse_inits[i]);
    gp->n_metadata_props = (size_t)g->n_meta;
    gp->metadata_props = kvs_to_proto(p, g->meta, g->n_meta);
    if (g->quant_annotations_len)
        unpack_annotations(S, g, gp);
    return gp;
}

static Onnx__FunctionProto *function_msg(saver *S, const ox_function *f)
{
    ox_pool *p = S->p;
    Onnx__FunctionProto *fp = ox_pool_alloc(p, sizeof *fp);
    onnx__function_proto__init(fp);
    fp->name = ox_pool_strdup(p, f->name);
    fp->domain = ox_pool_strdup(p, f->domain);
    if (f->overload)
        fp->overload = ox_pool_strdup(p, f->overload);
    if (f->doc_string)
        fp->doc_string = ox_pool_strdup(p, f->doc_string);
    const ox_graph *b = f->body;
    fp->n_input = (size_t)b->n_inputs;
    fp->input = str_array(p, fp->n_input);
    for (int i = 0; i < b->n_inputs; i++)
        fp->input[i] = ox_pool_strdup(p, b->inputs[i]->name);
    fp->n_output = (size_t)b->n_outputs;
    fp->output = str_array(p, fp->n_output);
    for (int i = 0; i < b->n_outputs; i++)
        fp->output[i] = ox_pool_strdup(p, b->outputs[i]->name);
    fp->n_attribute = (size_t)f->n_attr_names;
    fp->attribute = str_array(p, fp->n_attribute);
    for (int i = 0; i < f->n_attr_names; i++)
        fp->attribute[i] = ox_pool_strdup(p, f->attr_names[i]);
    fp->n_attribute_proto = (size_t)f->n_attr_defaults;
    fp->attribute_proto = ox_pool_alloc(p, sizeof(void *) * (fp->n_attribute_proto + 1));
    for (int i = 0; i < f->n_attr_defaults; i++)
        fp->attribute_proto[i] = attr_msg(S, &f->attr_defaults[i]);
    fp->n_node = (size_t)b->n_nodes;
    fp->node = ox_pool_alloc(p, sizeof(void *) * (fp->n_node + 1));
    for (int i = 0; i < b->n_nodes; i++)
        fp->node[i] = node_msg(S, b->nodes[i]);
    size_t n_vi = 0;
    for (int i = 0; i < b->n_values; i++)
        if (b->values[i]->has_value_info && (b->values[i]->type || b->values[i]->decl))
            n_vi++;
    fp->value_info = ox_pool_alloc(p, sizeof(void *) * (n_vi + 1));
    for (int i = 0; i < b->n_values; i++)
        if (b->values[i]->has_value_info && (b->values[i]->type || b->values[i]->decl))
            fp->value_info[fp->n_value_info++] = vi_msg(S, b->values[i]);
    fp->n_opset_import = (size_t)f->n_opsets;
    fp->opset_import = ox_pool_alloc(p, sizeof(void *) * (fp->n_opset_import + 1));
    for (int i = 0; i < f->n_opsets; i++) {
        Onnx__OperatorSetIdProto *o = ox_pool_alloc(p, sizeof *o);
        onnx__operator_set_id_proto__init(o);
        o->domain = ox_pool_strdup(p, f->opsets[i].domain);
        o->has_version = 1;
        o->version = f->opsets[i].version;
        fp->opset_import[i] = o;
    }
    fp->n_metadata_props = (size_t)f->n_meta;
    fp->metadata_props = kvs_to_proto(p, f->meta, f->n_meta);
    return fp;
}

static void *unpack_blob(saver *S, const ProtobufCMessageDescriptor *d, const ox_blob *b)
{
    ProtobufCMessage *msg = protobuf_c_message_unpack(d, NULL, b->len, b->data);
    if (!msg)
        return NULL;
    ProtobufCMessage **nu = realloc(S->unpacked, (size_t)(S->n_unpacked + 1) * sizeof *nu);
    if (!nu) {
        protobuf_c_message_free_unpacked(msg, NULL);
        return NULL;
    }
    S->unpacked = nu;
    S->unpacked[S->n_unpacked++] = msg;
    return msg;
}

static Onnx__ModelProto *model_msg(saver *S, const ox_model *m)
{
    ox_pool *p = S->p;
    Onnx__ModelProto *mp = ox_pool_alloc(p, sizeof *mp);
    onnx__model_proto__init(mp);
    mp->has_ir_version = 1;
    mp->ir_version = m->ir_version;
    if (m->producer_name && *m->producer_name)
        mp->producer_name = ox_pool_strdup(p, m->producer_name);
    if (m->producer_version && *m->producer_version)
        mp->producer_version = ox_pool_strdup(p, m->producer_version);
    if (m->domain && *m->domain)
        mp->domain = ox_pool_strdup(p, m->domain);
    if (m->doc_string && *m->doc_string)
        mp->doc_string = ox_pool_strdup(p, m->doc_string);
    if (m->model_version) {
        mp->has_model_version = 1;
        mp->model_version = m->model_version;
    }
    mp->n_opset_import = (size_t)m->n_opsets;
    mp->opset_import = ox_pool_alloc(p, sizeof(void *) * (size_t)(m->n_opsets + 1));
    for (int i = 0; i < m->n_opsets; i++) {
        Onnx__OperatorSetIdProto *o = ox_pool_alloc(p, sizeof *o);
        onnx__operator_set_id_proto__init(o);
        o->domain = ox_pool_strdup(p, m->opsets[i].domain);
        o->has_version = 1;
        o->version = m->opsets[i].version;
        mp->opset_import[i] = o;
    }
    mp->n_metadata_props = (size_t)m->n_meta;
    mp->metadata_props = kvs_to_proto(p, m->meta, m->n_meta);
    if (m->graph)
        mp->graph = graph_to_proto(S, m->graph);
    mp->functions = ox_pool_alloc(p, sizeof(void *) * (size_t)(m->n_functions + 1));
    for (int i = 0; i < m->n_functions; i++)
        mp->functions[mp->n_functions++] = function_msg(S, &m->functions[i]);
    mp->training_info = ox_pool_alloc(p, sizeof(void *) * (size_t)(m->n_training_info + 1));
    for (int i = 0; i < m->n_training_info; i++) {
        Onnx__TrainingInfoProto *t =
            unpack_blob(S, &onnx__training_info_proto__descriptor, &m->training_info[i]);
        if (t)
            mp->training_info[mp->n_training_info++] = t;
    }
    mp->configuration = ox_pool_alloc(p, sizeof(void *) * (size_t)(m->n_configuration + 1));
    for (int i = 0; i < m->n_configuration; i++) {
        Onnx__DeviceConfigurationProto *c = unpack_blob(
            S, &onnx__device_configuration_proto__descriptor, &m->configuration[i]);
        if (c)
            mp->configuration[mp->n_configuration++] = c;
    }
    return mp;
}

static void saver_cleanup(saver *S)
{
    for (int i = 0; i < S->n_srcs; i++)
        if (S->srcs[i].fd >= 0)
            close(S->srcs[i].fd);
    free(S->stage);
    if (S->ext_open)
        ox_outfile_abort(&S->ext_out);
    for (int i = 0; i < S->n_unpacked; i++)
        protobuf_c_message_free_unpacked(S->unpacked[i], NULL);
    free(S->unpacked);
    ox_pool_free(S->p);
}

static uint64_t model_tensor_bytes(const ox_model *m, bool *has_external)
{
    uint64_t total = 0;
    const ox_graph *g = m->graph;
    for (int i = 0; g && i < g->n_values; i++) {
        const ox_tensor *t = g->values[i]->init;
        if (t) {
            total += t->nbytes;
            if (t->external)
                *has_external = true;
        }
    }
    return total;
}

ox_status ox_save_buffer(const ox_model *m, void **data, size_t *len, ox_error *err)
{
    if (ox_model_check_oom(m, "save", err) != OX_OK)
        return OX_ENOMEM;
    saver S = {.p = ox_pool_new(), .err = err};
    if (!S.p)
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    bool ext = false;
    if (model_tensor_bytes(m, &ext) > PROTO_LIMIT) {
        saver_cleanup(&S);
        return ox_errorf(err, OX_ERANGE, "model exceeds 2 GiB: save to a file with external data");
    }
    Onnx__ModelProto *mp = model_msg(&S, m);
    ox_status st = OX_OK;
    size_t n = protobuf_c_message_get_packed_size(&mp->base);
    void *buf = malloc(n ? n : 1);
    if (!buf) {
        st = ox_errorf(err, OX_ENOMEM, "out of memory");
    } else {
        protobuf_c_message_pack(&mp->base, buf);
        *data = buf;
        *len = n;
    }
    saver_cleanup(&S);
    return st;
}

/* Protobuf output gathered into large writes. */
typedef struct file_sink {
    ProtobufCBuffer base;
    ox_outfile *out;
    ox_error *err;
    ox_status st;
    size_t n;
    uint8_t buf[64 << 10];
} file_sink;

static void sink_flush(file_sink *s)
{
    if (s->st == OX_OK && s->n)
        s->st = ox_outfile_write(s->out, s->buf, s->n, s->err);
    s->n = 0;
}

static void sink_append(ProtobufCBuffer *b, size_t len, const uint8_t *data)
{
    file_sink *s = (file_sink *)b;
    if (s->st != OX_OK)
        return;
    if (s->n + len > sizeof s->buf)
        sink_flush(s);
    if (len >= sizeof s->buf) {
        if (s->st == OX_OK)
            s->st = ox_outfile_write(s->out, data, len, s->err);
        return;
    }
    memcpy(s->buf + s->n, data, len);
    s->n += len;
}

/* Packs msg into a new file at path (see ox_outfile_open for what path may
 * be). Returns the status; errors name the file. */
static ox_status pack_to_file(const ProtobufCMessage *msg, const char *path, ox_error *err)
{
    ox_outfile out;
    ox_status st = ox_outfile_open(&out, path, 0, err);
    if (st != OX_OK)
        return st;
    file_sink *sink = malloc(sizeof *sink);
    if (!sink) {
        ox_outfile_abort(&out);
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    }
    *sink = (file_sink){.base = {.append = sink_append}, .out = &out, .err = err};
    protobuf_c_message_pack_to_buffer(msg, &sink->base);
    sink_flush(sink);
    st = sink->st;
    free(sink);
    if (st != OX_OK) {
        ox_outfile_abort(&out);
        return st;
    }
    return ox_outfile_commit(&out, err);
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* ---- which files a save may replace ------------------------------------ */

/* A file the model references: its identity (when it was mapped, or now)
 * and its absolute path. */
typedef struct ref_file {
    bool model;  /* the model file itself (rather than external data) */
    bool has_id;
    uint64_t dev, ino;
    const char *path;
    char *owned; /* path storage owned by the list */
} ref_file;

typedef struct ref_list {
    ref_file *v;
    int n, cap;
} ref_list;

static void refs_push(ref_list *l, ref_file r)
{
    for (int i = 0; i < l->n && r.has_id; i++)
        if (l->v[i].has_id && l->v[i].dev == r.dev && l->v[i].ino == r.ino &&
            (!r.path || (l->v[i].path && strcmp(l->v[i].path, r.path) == 0))) {
            free(r.owned);
            return;
        }
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 8;
        ref_file *nv = realloc(l->v, sizeof *nv * (size_t)cap);
        if (!nv) {
            free(r.owned);
            return;
        }
        l->v = nv;
        l->cap = cap;
    }
    l->v[l->n++] = r;
}

/* Adds the file behind buffer b (a mapping or a view into one). */
static void refs_add_buffer(ref_list *l, bool model, const ox_buffer *b)
{
    ox_file_ref fr;
    if (b && ox_buffer_file_ref(b, NULL, 0, &fr))
        refs_push(l, (ref_file){.model = model, .has_id = true, .dev = fr.dev, .ino = fr.ino,
                                .path = fr.path});
}

/* Adds the file at path as it is now. */
static void refs_add_path(ref_list *l, bool model, const char *path)
{
    ref_file r = {.model = model};
    struct stat st;
    if (stat(path, &st) == 0) {
        r.has_id = true;
        r.dev = (uint64_t)st.st_dev;
        r.ino = (uint64_t)st.st_ino;
    }
    r.owned = realpath(path, NULL);
    r.path = r.owned;
    if (r.has_id || r.path)
        refs_push(l, r);
}

static void refs_free(ref_list *l)
{
    for (int i = 0; i < l->n; i++)
        free(l->v[i].owned);
    free(l->v);
}

/* Absolute form of path for comparing names: realpath when it exists,
 * else its folder's realpath plus its last component. */
static char *resolve_name(const char *path)
{
    char *r = realpath(path, NULL);
    if (r)
        return r;
    const char *b = base_name(path);
    size_t dl = (size_t)(b - path);
    char *dir = malloc(dl + 2);
    if (!dir)
        return NULL;
    if (dl == 0)
        strcpy(dir, ".");
    else {
        memcpy(dir, path, dl);
        dir[dl] = '\0';
    }
    char *rd = realpath(dir, NULL);
    free(dir);
    if (!rd)
        return NULL;
    size_t n = strlen(rd) + strlen(b) + 2;
    r = malloc(n);
    if (r)
        snprintf(r, n, "%s%s%s", rd, rd[strlen(rd) - 1] == '/' ? "" : "/", b);
    free(rd);
    return r;
}

static bool same_id(const struct stat *st, uint64_t dev, uint64_t ino)
{
    return (uint64_t)st->st_dev == dev && (uint64_t)st->st_ino == ino;
}

/* True when writing target would create or replace r. */
static bool hits(const char *target, const char *target_real, const ref_file *r)
{
    struct stat ts, rs;
    bool exists = stat(target, &ts) == 0;
    if (exists && r->has_id && same_id(&ts, r->dev, r->ino))
        return true;
    /* The name the model uses may now hold another file: still the
     * model's, since a reload would read it. */
    if (exists && r->path && stat(r->path, &rs) == 0 && same_id(&ts, (uint64_t)rs.st_dev,
                                                             (uint64_t)rs.st_ino))
        return true;
    return target_real && r->path && strcmp(target_real, r->path) == 0;
}

static ox_status check_target(const ref_list *refs, const char *target, bool is_ext,
                              bool overwrite_input, ox_error *err)
{
    char *real = resolve_name(target);
    ox_status st = OX_OK;
    for (int i = 0; i < refs->n && st == OX_OK; i++) {
        const ref_file *r = &refs->v[i];
        if (r->model && overwrite_input && !is_ext)
            continue;
        if (!hits(target, real, r))
            continue;
        if (r->model && !is_ext)
            st = ox_errorf(err, OX_EIO, "refusing to overwrite the input model (%s)", target);
        else if (r->model)
            st = ox_errorf(err, OX_EIO,
                           "refusing to write external data to %s: it is the input model "
                           "(choose another output name)", target);
        else
            st = ox_errorf(err, OX_EIO,
                           "refusing to %s %s: the input model reads external data from it "
                           "(choose another output name)",
                           is_ext ? "write external data to" : "overwrite", target);
    }
    free(real);
    return st;
}

/* The external data plan: whether any tensor goes to an external file, and
 * that file's location (as written into the model) and path. */
typedef struct ext_plan {
    bool needed;
    char *name, *path;
} ext_plan;

static ox_status plan_external(saver *S, const ox_model *m, const char *path,
                               const ox_save_opts *opts, ext_plan *pl, ox_error *err)
{
    memset(pl, 0, sizeof *pl);
    bool src_external = false;
    uint64_t bytes = model_tensor_bytes(m, &src_external);
    S->threshold = opts->external_threshold ? opts->external_threshold
                                            : DEFAULT_EXTERNAL_THRESHOLD;
    S->external = opts->force_external || src_external || bytes > PROTO_LIMIT;
    const ox_graph *g = m->graph;
    for (int i = 0; S->external && g && i < g->n_values && !pl->needed; i++)
        pl->needed = g->values[i]->init && goes_external(S, g->values[i]->init);
    /* No empty external file when nothing goes there. */
    S->external = pl->needed;
    if (!pl->needed)
        return OX_OK;
    if (opts->external_name) {
        pl->name = ox_strdup(opts->external_name);
    } else {
        size_t n = strlen(base_name(path)) + 6;
        pl->name = malloc(n);
        if (pl->name)
            snprintf(pl->name, n, "%s.data", base_name(path));
    }
    size_t dl = (size_t)(base_name(path) - path);
    pl->path = malloc(dl + strlen(pl->name ? pl->name : "") + 1);
    if (!pl->name || !pl->path)
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    memcpy(pl->path, path, dl);
    strcpy(pl->path + dl, pl->name);
    return OX_OK;
}

/* Every file m reads: its own file first, so that tensor views into it
 * below count as the model, then its external data files. */
static void collect_refs(const ox_model *m, ref_list *refs)
{
    refs_add_buffer(refs, true, m->file_buf);
    if (m->path)
        refs_add_path(refs, true, m->path);
    for (int i = 0; i < m->n_ext_files; i++) {
        refs_add_buffer(refs, false, m->ext_files[i]);
        ox_file_ref fr;
        if (ox_buffer_file_ref(m->ext_files[i], NULL, 0, &fr) && fr.path)
            refs_add_path(refs, false, fr.path);
    }
    /* Tensors may also view files the model did not load itself. */
    const ox_graph *g = m->graph;
    for (int i = 0; g && i < g->n_values; i++)
        if (g->values[i]->init)
            refs_add_buffer(refs, false, g->values[i]->init->buf);
}

static ox_status check_plan(const ox_model *m, const char *path, const ox_save_opts *opts,
                            const ext_plan *pl, ox_error *err)
{
    ref_list refs = {0};
    collect_refs(m, &refs);
    ox_status st = check_target(&refs, path, false, opts->overwrite_input, err);
    if (st == OX_OK && pl->needed) {
        char *a = resolve_name(path), *b = resolve_name(pl->path);
        if (a && b && strcmp(a, b) == 0)
            st = ox_errorf(err, OX_EINVAL, "the external data file would be %s itself", path);
        else
            st = check_target(&refs, pl->path, true, opts->overwrite_input, err);
        free(a);
        free(b);
    }
    refs_free(&refs);
    return st;
}

ox_status ox_model_check_output(const ox_model *m, const char *path, ox_error *err)
{
    if (!m || !path)
        return OX_OK;
    ref_list refs = {0};
    collect_refs(m, &refs);
    ox_status st = check_target(&refs, path, false, false, err);
    refs_free(&refs);
    return st;
}

ox_status ox_save_check_targets(const ox_model *m, const char *path, const ox_save_opts *opts,
                                ox_error *err)
{
    ox_save_opts dflt = {0};
    if (!opts)
        opts = &dflt;
    saver S = {0};
    ext_plan pl;
    ox_status st = plan_external(&S, m, path, opts, &pl, err);
    if (st == OX_OK)
        st = check_plan(m, path, opts, &pl, err);
    free(pl.name);
    free(pl.path);
    return st;
}

ox_status ox_save(const ox_model *m, const char *path, const ox_save_opts *opts,
                  ox_error *err)
{
    ox_save_opts dflt = {0};
    if (!opts)
        opts = &dflt;
    /* An IR that lost an edit to out of memory would be saved wrong. */
    if (ox_model_check_oom(m, "save", err) != OX_OK)
        return OX_ENOMEM;
    saver S = {.p = ox_pool_new(), .err = err};
    if (!S.p)
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    ext_plan pl;
    ox_outfile out = {.fd = -1, .slot = -1};
    bool out_open = false;
    ox_status st = plan_external(&S, m, path, opts, &pl, err);
    if (st == OX_OK)
        st = check_plan(m, path, opts, &pl, err);
    if (st != OX_OK)
        goto out;
    /* Open the model file first: what it is decides whether external data
     * is possible at all. */
    st = ox_outfile_open(&out, path, 0, err);
    if (st != OX_OK)
        goto out;
    out_open = true;
    if (pl.needed) {
        if (out.direct) {
            st = ox_errorf(err, OX_EIO,
                           "%s is not a regular file: a model with external data (%s) must be "
                           "saved to a regular file", path, pl.name);
            goto out;
        }
        S.stage = malloc(STAGE_SIZE);
        if (!S.stage) {
            st = ox_errorf(err, OX_ENOMEM, "out of memory");
            goto out;
        }
        st = ox_outfile_open(&S.ext_out, pl.path, OX_OUTFILE_REGULAR_ONLY, err);
        if (st != OX_OK)
            goto out;
        S.ext_open = true;
        S.ext_loc = pl.name;
    }

    Onnx__ModelProto *mp = model_msg(&S, m);
    if (S.ext_open && S.st == OX_OK)
        stage_flush(&S);
    if (S.st != OX_OK) {
        st = S.st;
        goto out;
    }
    if (protobuf_c_message_get_packed_size(&mp->base) > PROTO_LIMIT + ((uint64_t)63 << 20)) {
        st = ox_errorf(err, OX_ERANGE, "serialized model exceeds 2 GiB even with external data");
        goto out;
    }
    file_sink *sink = malloc(sizeof *sink);
    if (!sink) {
        st = ox_errorf(err, OX_ENOMEM, "out of memory");
        goto out;
    }
    *sink = (file_sink){.base = {.append = sink_append}, .out = &out, .err = err};
    protobuf_c_message_pack_to_buffer(&mp->base, &sink->base);
    sink_flush(sink);
    st = sink->st;
    free(sink);
    if (st != OX_OK)
        goto out;
    /* The data file first: a model is never in place before its data. */
    if (S.ext_open) {
        S.ext_open = false;
        st = ox_outfile_commit(&S.ext_out, err);
        if (st != OX_OK)
            goto out;
    }
    out_open = false;
    st = ox_outfile_commit(&out, err);
out:
    if (out_open)
        ox_outfile_abort(&out);
    free(pl.name);
    free(pl.path);
    saver_cleanup(&S);
    return st;
}

ox_status ox_tensor_save_pb(const ox_tensor *t, const char *path, ox_error *err)
{
    saver S = {.p = ox_pool_new(), .err = err};
    if (!S.p)
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    Onnx__TensorProto *tp = tensor_msg(&S, t, false);
    ox_status st = pack_to_file(&tp->base, path, err);
    saver_cleanup(&S);
    return st;
}

ox_status ox_save_message(const ProtobufCMessage *msg, const char *path, ox_error *err)
{
    return pack_to_file(msg, path, err);
}
