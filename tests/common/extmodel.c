/* Test models with external data at chosen offsets, written with protobuf-c
 * so the tests do not depend on the saver they check. */
#include "extmodel.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "onnx.pb-c.h"

#define MAX_T 8

static Onnx__ValueInfoProto *float_vi(Onnx__ValueInfoProto *vi, Onnx__TypeProto *tp,
                                      Onnx__TypeProto__Tensor *tt, Onnx__TensorShapeProto *sh,
                                      Onnx__TensorShapeProto__Dimension *d,
                                      Onnx__TensorShapeProto__Dimension **dp, char *name,
                                      long len)
{
    onnx__value_info_proto__init(vi);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    onnx__tensor_shape_proto__init(sh);
    onnx__tensor_shape_proto__dimension__init(d);
    d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    d->dim_value = len;
    *dp = d;
    sh->n_dim = 1;
    sh->dim = dp;
    tt->has_elem_type = 1;
    tt->elem_type = 1;
    tt->shape = sh;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    vi->name = name;
    vi->type = tp;
    return vi;
}

bool ox_test_write_ext_model(const char *path, const char *loc, int n, const long *offs,
                             const long *lens)
{
    if (n < 1 || n > MAX_T)
        return false;
    Onnx__StringStringEntryProto kv[MAX_T][3], *kvp[MAX_T][3];
    char offs_s[MAX_T][32], lens_s[MAX_T][32], tn[MAX_T][8], xn[MAX_T][8], yn[MAX_T][8];
    Onnx__TensorProto t[MAX_T], *tp[MAX_T];
    int64_t dims[MAX_T];
    Onnx__NodeProto node[MAX_T], *np[MAX_T];
    char *ins[MAX_T][2], *outs[MAX_T][1];
    Onnx__ValueInfoProto vi[2][MAX_T], *vip[2][MAX_T];
    Onnx__TypeProto ty[2][MAX_T];
    Onnx__TypeProto__Tensor tt[2][MAX_T];
    Onnx__TensorShapeProto sh[2][MAX_T];
    Onnx__TensorShapeProto__Dimension dm[2][MAX_T], *dmp[2][MAX_T];
    for (int i = 0; i < n; i++) {
        snprintf(offs_s[i], 32, "%ld", offs[i]);
        snprintf(lens_s[i], 32, "%ld", lens[i] * 4);
        snprintf(tn[i], 8, "t%d", i);
        snprintf(xn[i], 8, "x%d", i);
        snprintf(yn[i], 8, "y%d", i);
        const char *keys[3] = {"location", "offset", "length"};
        const char *vals[3] = {loc, offs_s[i], lens_s[i]};
        for (int k = 0; k < 3; k++) {
            onnx__string_string_entry_proto__init(&kv[i][k]);
            kv[i][k].key = (char *)keys[k];
            kv[i][k].value = (char *)vals[k];
            kvp[i][k] = &kv[i][k];
        }
        onnx__tensor_proto__init(&t[i]);
        dims[i] = lens[i];
        t[i].n_dims = 1;
        t[i].dims = &dims[i];
        t[i].has_data_type = 1;
        t[i].data_type = 1;
        t[i].name = tn[i];
        t[i].has_data_location = 1;
        t[i].data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
        t[i].n_external_data = 3;
        t[i].external_data = kvp[i];
        tp[i] = &t[i];
        onnx__node_proto__init(&node[i]);
        ins[i][0] = xn[i];
        ins[i][1] = tn[i];
        outs[i][0] = yn[i];
        node[i].op_type = "Add";
        node[i].n_input = 2;
        node[i].input = ins[i];
        node[i].n_output = 1;
        node[i].output = outs[i];
        np[i] = &node[i];
        vip[0][i] = float_vi(&vi[0][i], &ty[0][i], &tt[0][i], &sh[0][i], &dm[0][i],
                             &dmp[0][i], xn[i], lens[i]);
        vip[1][i] = float_vi(&vi[1][i], &ty[1][i], &tt[1][i], &sh[1][i], &dm[1][i],
                             &dmp[1][i], yn[i], lens[i]);
    }
    Onnx__GraphProto g = ONNX__GRAPH_PROTO__INIT;
    g.name = "ext";
    g.n_node = (size_t)n;
    g.node = np;
    g.n_initializer = (size_t)n;
    g.initializer = tp;
    g.n_input = (size_t)n;
    g.input = vip[0];
    g.n_output = (size_t)n;
    g.output = vip[1];
    Onnx__OperatorSetIdProto os = ONNX__OPERATOR_SET_ID_PROTO__INIT, *osp = &os;
    os.domain = "";
    os.has_version = 1;
    os.version = 13;
    Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
    m.has_ir_version = 1;
    m.ir_version = 8;
    m.n_opset_import = 1;
    m.opset_import = &osp;
    m.graph = &g;
    size_t sz = onnx__model_proto__get_packed_size(&m);
    uint8_t *buf = malloc(sz);
    if (!buf)
        return false;
    onnx__model_proto__pack(&m, buf);
    FILE *f = fopen(path, "wb");
    bool ok = f && fwrite(buf, 1, sz, f) == sz;
    if (f)
        ok = fclose(f) == 0 && ok;
    free(buf);
    return ok;
}
