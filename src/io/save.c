/* Saving the IR as a .onnx file: build protobuf-c messages that reference
 * (never copy) tensor bytes, stream them into a temporary file and rename it
 * into place. Large models put big tensors into an external data file. */
#include "onnxscope/io.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/convert.h"

/* Protobuf messages cannot exceed 2 GiB; leave room for the graph itself. */
#define PROTO_LIMIT ((uint64_t)2 * 1024 * 1024 * 1024 - ((uint64_t)64 << 20))
#define DEFAULT_EXTERNAL_THRESHOLD 1024
#define EXTERNAL_ALIGN 64

typedef struct saver {
    ox_pool *p;
    bool external;          /* put big tensors into the external file */
    size_t threshold;
    const char *ext_loc;    /* location written into the model */
    FILE *ext_fp;           /* open external data temp file */
    uint64_t ext_off;
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

static void write_external(saver *S, const ox_tensor *t, Onnx__TensorProto *tp)
{
    static const char zeros[EXTERNAL_ALIGN];
    uint64_t pad = (EXTERNAL_ALIGN - S->ext_off % EXTERNAL_ALIGN) % EXTERNAL_ALIGN;
    if (pad && fwrite(zeros, 1, pad, S->ext_fp) != pad)
        goto fail;
    S->ext_off += pad;
    if (t->nbytes && fwrite(ox_tensor_data(t), 1, t->nbytes, S->ext_fp) != t->nbytes)
        goto fail;
    ox_tensor_to_proto(S->p, t, tp, S->ext_loc, (int64_t)S->ext_off);
    S->ext_off += t->nbytes;
    return;
fail:
    if (S->st == OX_OK)
        S->st = ox_errorf(S->err, OX_EIO, "writing external data: %s", strerror(errno));
}

static Onnx__TensorProto *tensor_msg(saver *S, const ox_tensor *t, bool may_external)
{
    Onnx__TensorProto *tp = ox_pool_alloc(S->p, sizeof *tp);
    onnx__tensor_proto__init(tp);
    if (may_external && S->external && t->dtype != OX_DT_STRING &&
        t->nbytes >= S->threshold && ox_tensor_data(t))
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
    if (v->type && v->type->kind != OX_TYPE_NONE)
        vi->type = ox_type_to_proto(S->p, v->type);
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
        if (v->has_value_info && !v->is_input && !v->is_output && v->type)
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
        if (v->has_value_info && !v->is_input && !v->is_output && v->type)
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
        if (b->values[i]->has_value_info && b->values[i]->type)
            n_vi++;
    fp->value_info = ox_pool_alloc(p, sizeof(void *) * (n_vi + 1));
    for (int i = 0; i < b->n_values; i++)
        if (b->values[i]->has_value_info && b->values[i]->type)
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

typedef struct file_sink {
    ProtobufCBuffer base;
    FILE *fp;
    bool failed;
} file_sink;

static void sink_append(ProtobufCBuffer *b, size_t len, const uint8_t *data)
{
    file_sink *s = (file_sink *)b;
    if (!s->failed && len && fwrite(data, 1, len, s->fp) != len)
        s->failed = true;
}

static bool same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (!a || !b || stat(a, &sa) != 0 || stat(b, &sb) != 0)
        return false;
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* Opens a temporary file next to path. */
static FILE *open_temp(const char *path, char **tmp_out)
{
    size_t n = strlen(path) + 16;
    char *tmp = malloc(n);
    if (!tmp)
        return NULL;
    snprintf(tmp, n, "%s.tmpXXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        free(tmp);
        return NULL;
    }
    fchmod(fd, 0644);
    FILE *fp = fdopen(fd, "wb");
    if (!fp) {
        close(fd);
        unlink(tmp);
        free(tmp);
        return NULL;
    }
    *tmp_out = tmp;
    return fp;
}

static bool finish_file(FILE *fp)
{
    bool ok = fflush(fp) == 0 && fsync(fileno(fp)) == 0;
    return fclose(fp) == 0 && ok;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
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
    if (!opts->overwrite_input && m->path && same_file(path, m->path))
        return ox_errorf(err, OX_EIO, "refusing to overwrite the input model (%s)", path);

    saver S = {.p = ox_pool_new(), .err = err};
    if (!S.p)
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    bool src_external = false;
    uint64_t bytes = model_tensor_bytes(m, &src_external);
    S.threshold = opts->external_threshold ? opts->external_threshold
                                           : DEFAULT_EXTERNAL_THRESHOLD;
    S.external = opts->force_external || src_external || bytes > PROTO_LIMIT;

    char *ext_name = NULL, *ext_path = NULL, *ext_tmp = NULL, *tmp = NULL;
    ox_status st = OX_OK;
    if (S.external) {
        if (opts->external_name) {
            ext_name = ox_strdup(opts->external_name);
        } else {
            size_t n = strlen(base_name(path)) + 6;
            ext_name = malloc(n);
            if (ext_name)
                snprintf(ext_name, n, "%s.data", base_name(path));
        }
        size_t dl = (size_t)(base_name(path) - path);
        ext_path = malloc(dl + strlen(ext_name ? ext_name : "") + 1);
        if (!ext_name || !ext_path) {
            st = ox_errorf(err, OX_ENOMEM, "out of memory");
            goto out;
        }
        memcpy(ext_path, path, dl);
        strcpy(ext_path + dl, ext_name);
        S.ext_loc = ext_name;
        S.ext_fp = open_temp(ext_path, &ext_tmp);
        if (!S.ext_fp) {
            st = ox_errorf(err, OX_EIO, "cannot create %s: %s", ext_path, strerror(errno));
            goto out;
        }
    }

    Onnx__ModelProto *mp = model_msg(&S, m);
    if (S.ext_fp) {
        bool ok = finish_file(S.ext_fp);
        S.ext_fp = NULL;
        if (!ok && S.st == OX_OK)
            S.st = ox_errorf(err, OX_EIO, "writing %s: %s", ext_path, strerror(errno));
    }
    if (S.st != OX_OK) {
        st = S.st;
        goto out;
    }
    if (protobuf_c_message_get_packed_size(&mp->base) > PROTO_LIMIT + ((uint64_t)63 << 20)) {
        st = ox_errorf(err, OX_ERANGE, "serialized model exceeds 2 GiB even with external data");
        goto out;
    }
    FILE *fp = open_temp(path, &tmp);
    if (!fp) {
        st = ox_errorf(err, OX_EIO, "cannot create a file next to %s: %s", path,
                       strerror(errno));
        goto out;
    }
    file_sink sink = {.base = {.append = sink_append}, .fp = fp};
    protobuf_c_message_pack_to_buffer(&mp->base, &sink.base);
    bool ok = finish_file(fp) && !sink.failed;
    if (!ok) {
        st = ox_errorf(err, OX_EIO, "writing %s: %s", path, strerror(errno));
        goto out;
    }
    if (ext_tmp) {
        if (rename(ext_tmp, ext_path) != 0) {
            st = ox_errorf(err, OX_EIO, "cannot rename to %s: %s", ext_path, strerror(errno));
            goto out;
        }
        free(ext_tmp);
        ext_tmp = NULL;
    }
    if (rename(tmp, path) != 0) {
        st = ox_errorf(err, OX_EIO, "cannot rename to %s: %s", path, strerror(errno));
        goto out;
    }
    free(tmp);
    tmp = NULL;
out:
    if (S.ext_fp)
        fclose(S.ext_fp);
    if (ext_tmp) {
        unlink(ext_tmp);
        free(ext_tmp);
    }
    if (tmp) {
        unlink(tmp);
        free(tmp);
    }
    free(ext_name);
    free(ext_path);
    saver_cleanup(&S);
    return st;
}

ox_status ox_tensor_save_pb(const ox_tensor *t, const char *path, ox_error *err)
{
    saver S = {.p = ox_pool_new(), .err = err};
    if (!S.p)
        return ox_errorf(err, OX_ENOMEM, "out of memory");
    Onnx__TensorProto *tp = tensor_msg(&S, t, false);
    char *tmp = NULL;
    ox_status st = OX_OK;
    FILE *fp = open_temp(path, &tmp);
    if (!fp) {
        st = ox_errorf(err, OX_EIO, "cannot create %s: %s", path, strerror(errno));
    } else {
        file_sink sink = {.base = {.append = sink_append}, .fp = fp};
        protobuf_c_message_pack_to_buffer(&tp->base, &sink.base);
        if (!finish_file(fp) || sink.failed || rename(tmp, path) != 0) {
            st = ox_errorf(err, OX_EIO, "writing %s: %s", path, strerror(errno));
            unlink(tmp);
        }
        free(tmp);
    }
    saver_cleanup(&S);
    return st;
}
