/* The model checker on reproducers written as raw protobuf: every class it
 * must catch (zero-output nodes, empty names, invalid element types,
 * negative dims, graphs and If branches without outputs, unknown ops as a
 * warning, Conv/pool attribute sizes against the input rank, load-level
 * problems listed together), nesting bounds, and `onnxscope check`'s
 * listing and exit codes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <cmocka.h>

#include "onnx.pb-c.h"
#include "onnxscope/check.h"
#include "onnxscope/infer.h"
#include "onnxscope/io.h"
#include "testutil.h"

/* ---- building messages (all allocations freed by arena_free) ---------- */

static void *arena[16384];
static int n_arena;

static void *A(size_t n)
{
    void *p = calloc(1, n);
    assert_non_null(p);
    assert_true(n_arena < (int)(sizeof arena / sizeof *arena));
    arena[n_arena++] = p;
    return p;
}

static void arena_free(void)
{
    while (n_arena)
        free(arena[--n_arena]);
}

static char **strs(int n, ...)
{
    char **v = A(sizeof(char *) * (size_t)(n ? n : 1));
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        v[i] = va_arg(ap, char *);
    va_end(ap);
    return v;
}

/* Tensor type elem[dims...]; dims < -1 are written as negative dim_values,
 * -1 as a dim_param "N". */
static Onnx__ValueInfoProto *vi(const char *name, int elem, int rank, const int64_t *dims)
{
    Onnx__ValueInfoProto *v = A(sizeof *v);
    onnx__value_info_proto__init(v);
    v->name = (char *)name;
    if (elem < 0)
        return v;
    Onnx__TypeProto *t = A(sizeof *t);
    onnx__type_proto__init(t);
    Onnx__TypeProto__Tensor *tt = A(sizeof *tt);
    onnx__type_proto__tensor__init(tt);
    tt->has_elem_type = 1;
    tt->elem_type = elem;
    if (rank >= 0) {
        Onnx__TensorShapeProto *sh = A(sizeof *sh);
        onnx__tensor_shape_proto__init(sh);
        sh->n_dim = (size_t)rank;
        sh->dim = A(sizeof *sh->dim * (size_t)(rank ? rank : 1));
        for (int i = 0; i < rank; i++) {
            Onnx__TensorShapeProto__Dimension *d = A(sizeof *d);
            onnx__tensor_shape_proto__dimension__init(d);
            if (dims[i] == -1) {
                d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
                d->dim_param = "N";
            } else {
                d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
                d->dim_value = dims[i];
            }
            sh->dim[i] = d;
        }
        tt->shape = sh;
    }
    t->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    t->tensor_type = tt;
    v->type = t;
    return v;
}

static Onnx__NodeProto *node(const char *op, const char *name, int nin, char **in, int nout,
                             char **out)
{
    Onnx__NodeProto *n = A(sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = (char *)op;
    n->name = (char *)name;
    n->n_input = (size_t)nin;
    n->input = in;
    n->n_output = (size_t)nout;
    n->output = out;
    return n;
}

static void add_attr(Onnx__NodeProto *n, Onnx__AttributeProto *a)
{
    Onnx__AttributeProto **v = A(sizeof *v * (n->n_attribute + 1));
    for (size_t i = 0; i < n->n_attribute; i++)
        v[i] = n->attribute[i];
    v[n->n_attribute++] = a;
    n->attribute = v;
}

static void attr_ints(Onnx__NodeProto *n, const char *name, int count, int64_t *vals)
{
    Onnx__AttributeProto *a = A(sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = (char *)name;
    a->has_type = 1;
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    a->n_ints = (size_t)count;
    a->ints = vals;
    add_attr(n, a);
}

static void attr_graph(Onnx__NodeProto *n, const char *name, Onnx__GraphProto *g)
{
    Onnx__AttributeProto *a = A(sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = (char *)name;
    a->has_type = 1;
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
    a->g = g;
    add_attr(n, a);
}

static Onnx__GraphProto *graph(const char *name)
{
    Onnx__GraphProto *g = A(sizeof *g);
    onnx__graph_proto__init(g);
    g->name = (char *)name;
    g->node = A(sizeof *g->node * 16);
    g->input = A(sizeof *g->input * 16);
    g->output = A(sizeof *g->output * 16);
    g->initializer = A(sizeof *g->initializer * 16);
    return g;
}

static Onnx__TensorProto *init_f(const char *name, int rank, const int64_t *dims)
{
    Onnx__TensorProto *t = A(sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = (char *)name;
    t->has_data_type = 1;
    t->data_type = 1;
    t->n_dims = (size_t)rank;
    t->dims = (int64_t *)dims;
    size_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= (size_t)dims[i];
    t->n_float_data = n;
    t->float_data = A(sizeof(float) * n);
    return t;
}

/* Packs a model with opset 17 around g into a malloc'ed buffer. */
static uint8_t *pack(Onnx__GraphProto *g, size_t *len)
{
    Onnx__OperatorSetIdProto *os = A(sizeof *os);
    onnx__operator_set_id_proto__init(os);
    os->domain = "";
    os->has_version = 1;
    os->version = 17;
    Onnx__OperatorSetIdProto **osp = A(sizeof *osp);
    osp[0] = os;
    Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
    m.has_ir_version = 1;
    m.ir_version = 8;
    m.n_opset_import = 1;
    m.opset_import = osp;
    m.graph = g;
    *len = onnx__model_proto__get_packed_size(&m);
    uint8_t *buf = malloc(*len);
    onnx__model_proto__pack(&m, buf);
    return buf;
}

static const int64_t d4[4] = {1, 1, 5, 5};

/* x:float[1,1,5,5] -> Relu -> y, the base most cases edit. */
static Onnx__GraphProto *base(void)
{
    Onnx__GraphProto *g = graph("main");
    g->input[g->n_input++] = vi("x", 1, 4, d4);
    g->node[g->n_node++] = node("Relu", "relu", 1, strs(1, "x"), 1, strs(1, "y"));
    g->output[g->n_output++] = vi("y", 1, -1, NULL);
    return g;
}

/* ---- running the checker ------------------------------------------------ */

typedef struct result {
    ox_status load, check;
    char load_msg[600];
    char text[8192];     /* every issue, one per line, "W: " for warnings */
    int errors, warnings;
} result;

static void run(Onnx__GraphProto *g, bool keep_going, result *r)
{
    memset(r, 0, sizeof *r);
    size_t len;
    uint8_t *buf = pack(g, &len);
    char path[] = "/tmp/oxcheckXXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, buf, len), (ssize_t)len);
    close(fd);
    free(buf);
    ox_load_opts lo = {.keep_going = keep_going};
    ox_model *m = NULL;
    ox_error err = {0};
    r->load = ox_load(path, &lo, &m, &err);
    unlink(path);
    snprintf(r->load_msg, sizeof r->load_msg, "%s", err.msg);
    if (r->load != OX_OK)
        return;
    ox_infer_model(m, NULL, NULL);
    ox_check_report rep;
    r->check = ox_check_model(m, &rep);
    size_t off = 0;
    for (int i = 0; i < rep.n_issues && off < sizeof r->text; i++) {
        off += (size_t)snprintf(r->text + off, sizeof r->text - off, "%s%s\n",
                                rep.issues[i].warning ? "W: " : "", rep.issues[i].msg);
        if (rep.issues[i].warning)
            r->warnings++;
        else
            r->errors++;
        /* errors come first */
        if (i > 0 && !rep.issues[i].warning)
            assert_false(rep.issues[i - 1].warning);
    }
    assert_int_equal(r->errors, rep.n_errors);
    ox_check_report_free(&rep);
    ox_model_free(m);
}

static void expect(const result *r, const char *what)
{
    if (!strstr(r->text, what)) {
        printf("expected '%s' among the issues:\n%s", what, r->text);
        fail();
    }
}

/* ---- the classes ---------------------------------------------------------- */

static void test_zero_output_node(void **state)
{
    (void)state;
    Onnx__GraphProto *g = base();
    g->node[g->n_node++] = node("Relu", "sink", 1, strs(1, "x"), 0, NULL);
    result r;
    run(g, false, &r);
    assert_int_equal(r.load, OX_OK);
    assert_int_equal(r.check, OX_EMODEL);
    expect(&r, "node 'sink' (Relu) has no outputs");
    /* An omitted required output: "" where Relu's Y must be. */
    g = base();
    g->node[g->n_node++] = node("Relu", "empty", 1, strs(1, "x"), 1, strs(1, ""));
    run(g, false, &r);
    assert_int_equal(r.check, OX_EMODEL);
    expect(&r, "node 'empty' (Relu): output 0 is required but empty");
    arena_free();
}

static void test_empty_input_name(void **state)
{
    (void)state;
    Onnx__GraphProto *g = base();
    g->input[g->n_input++] = vi("", 1, 4, d4);
    result r;
    run(g, false, &r);
    assert_int_equal(r.load, OX_EMODEL);
    assert_null(strstr(r.load_msg, "out of memory"));
    assert_non_null(strstr(r.load_msg, "graph input 1 has an empty name"));
    run(g, true, &r);
    assert_int_equal(r.load, OX_OK);
    expect(&r, "graph input 1 has an empty name");
    arena_free();
}

static void test_elem_types_and_dims(void **state)
{
    (void)state;
    Onnx__GraphProto *g = base();
    static const int64_t neg[2] = {2, -3};
    g->input[g->n_input++] = vi("bad_type", 99, 1, d4);
    g->input[g->n_input++] = vi("bad_dim", 1, 2, neg);
    g->input[g->n_input++] = vi("no_type", 0, 1, d4);
    g->output[g->n_output++] = vi("bad_type", 99, -1, NULL);
    /* Cast to an element type that does not exist. */
    Onnx__NodeProto *c = node("Cast", "cast", 1, strs(1, "x"), 1, strs(1, "z"));
    Onnx__AttributeProto *to = A(sizeof *to);
    onnx__attribute_proto__init(to);
    to->name = "to";
    to->has_type = 1;
    to->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    to->has_i = 1;
    to->i = 77;
    add_attr(c, to);
    g->node[g->n_node++] = c;
    g->output[g->n_output++] = vi("z", -1, -1, NULL);
    result r;
    run(g, false, &r);
    assert_int_equal(r.load, OX_OK);
    assert_int_equal(r.check, OX_EMODEL);
    expect(&r, "main: input 'bad_type' has an invalid element type 99");
    expect(&r, "main: output 'bad_type' has an invalid element type 99");
    /* A warning (onnx's checker and ONNX Runtime take it), see below. */
    expect(&r, "W: main: input 'bad_dim' declares dim -3 at axis 1: a negative size, read as unknown");
    expect(&r, "main: input 'no_type' has no element type");
    expect(&r, "node 'cast' (Cast): attribute 'to' = 77 is not a valid element type");
    arena_free();
}

/* A negative declared dim alone: onnx 1.12's checker (full_check) and ONNX
 * Runtime both take the model, ORT reading the dim as unknown; so a warning,
 * no error (tests/cli/test_spec_edges.py: what info, run and optimize make
 * of it). */
static void test_negative_dim_warns(void **state)
{
    (void)state;
    Onnx__GraphProto *g = base();
    static const int64_t neg[2] = {2, -3};
    g->input[g->n_input++] = vi("bad_dim", 1, 2, neg);
    result r;
    run(g, false, &r);
    assert_int_equal(r.load, OX_OK);
    assert_int_equal(r.check, OX_OK);
    expect(&r, "W: main: input 'bad_dim' declares dim -3 at axis 1");
    arena_free();
}

static void test_graphs_without_outputs(void **state)
{
    (void)state;
    Onnx__GraphProto *g = base();
    g->n_output = 0;
    result r;
    run(g, false, &r);
    assert_int_equal(r.check, OX_EMODEL);
    expect(&r, "main: the graph has no outputs");
    /* If whose branches have no outputs (then) or too few (else). */
    g = base();
    Onnx__GraphProto *then_g = graph("then"), *else_g = graph("else");
    else_g->node[else_g->n_node++] = node("Identity", "id", 1, strs(1, "x"), 1, strs(1, "e"));
    else_g->output[else_g->n_output++] = vi("e", -1, -1, NULL);
    g->input[g->n_input++] = vi("c", 9, 0, NULL);
    Onnx__NodeProto *n = node("If", "if", 1, strs(1, "c"), 2, strs(2, "o1", "o2"));
    attr_graph(n, "then_branch", then_g);
    attr_graph(n, "else_branch", else_g);
    g->node[g->n_node++] = n;
    g->output[g->n_output++] = vi("o1", -1, -1, NULL);
    run(g, false, &r);
    assert_int_equal(r.check, OX_EMODEL);
    expect(&r, "main/if.then_branch: the graph has no outputs");
    expect(&r, "node 'if' (If): then_branch has 0 outputs, the node 2");
    expect(&r, "node 'if' (If): else_branch has 1 output, the node 2");
    arena_free();
}

static void test_unknown_ops_warn(void **state)
{
    (void)state;
    Onnx__GraphProto *g = base();
    g->node[g->n_node++] = node("FrobnicateX", "f1", 1, strs(1, "y"), 1, strs(1, "f1"));
    g->node[g->n_node++] = node("FrobnicateX", "f2", 1, strs(1, "f1"), 1, strs(1, "f2"));
    g->node[g->n_node++] = node("Quux", "q", 1, strs(1, "f2"), 1, strs(1, "q"));
    g->output[g->n_output++] = vi("q", -1, -1, NULL);
    result r;
    run(g, false, &r);
    assert_int_equal(r.check, OX_OK);   /* a warning, not an error */
    assert_int_equal(r.errors, 0);
    assert_int_equal(r.warnings, 1);
    expect(&r, "W: operators of the default domain unknown at the model's opset");
    expect(&r, "FrobnicateX (2 nodes)");
    expect(&r, "Quux (1 node)");
    arena_free();
}

static void test_conv_attr_sizes(void **state)
{
    (void)state;
    static const int64_t wd[4] = {1, 1, 3, 3};
    static int64_t three[3] = {1, 1, 1}, one[1] = {1}, two[2] = {2, 2};
    Onnx__GraphProto *g = base();
    g->initializer[g->n_initializer++] = init_f("w", 4, wd);
    Onnx__NodeProto *c = node("Conv", "conv", 2, strs(2, "y", "w"), 1, strs(1, "c"));
    attr_ints(c, "dilations", 3, three);
    attr_ints(c, "strides", 1, one);
    attr_ints(c, "pads", 2, two);
    g->node[g->n_node++] = c;
    Onnx__NodeProto *p = node("MaxPool", "pool", 1, strs(1, "y"), 1, strs(1, "p"));
    attr_ints(p, "kernel_shape", 3, three);
    g->node[g->n_node++] = p;
    g->output[g->n_output++] = vi("c", -1, -1, NULL);
    g->output[g->n_output++] = vi("p", -1, -1, NULL);
    result r;
    run(g, false, &r);
    assert_int_equal(r.check, OX_EMODEL);
    /* y is Relu's output: its rank comes from inference. */
    expect(&r, "node 'conv' (Conv): attribute 'dilations' has 3 values, expected 2");
    expect(&r, "node 'conv' (Conv): attribute 'strides' has 1 value, expected 2");
    expect(&r, "node 'conv' (Conv): attribute 'pads' has 2 values, expected 4");
    expect(&r, "node 'pool' (MaxPool): attribute 'kernel_shape' has 3 values, expected 2");
    arena_free();
}

/* Problems the loader stops at by default are all listed with keep_going,
 * together with the checker's own findings. */
static void test_all_problems_listed(void **state)
{
    (void)state;
    static const int64_t d1[1] = {2};
    Onnx__GraphProto *g = base();
    g->node[g->n_node++] = node("Relu", "again", 1, strs(1, "x"), 1, strs(1, "y"));
    g->initializer[g->n_initializer++] = init_f("k", 1, d1);
    g->initializer[g->n_initializer++] = init_f("k", 1, d1);
    g->input[g->n_input++] = vi("x", 1, 4, d4);
    g->node[g->n_node++] = node("Relu", "undef", 1, strs(1, "nowhere"), 1, strs(1, "u"));
    g->output[g->n_output++] = vi("u", -1, -1, NULL);
    /* A tensor whose raw_data does not match its dims, read by a node. */
    static const int64_t d3[1] = {3};
    static uint8_t five[5];
    Onnx__TensorProto *bad = init_f("bad", 1, d3);
    bad->n_float_data = 0;
    bad->has_raw_data = 1;
    bad->raw_data.len = sizeof five;
    bad->raw_data.data = five;
    g->initializer[g->n_initializer++] = bad;
    g->node[g->n_node++] = node("Relu", "reads_bad", 1, strs(1, "bad"), 1, strs(1, "rb"));
    g->output[g->n_output++] = vi("rb", -1, -1, NULL);
    result r;
    run(g, false, &r);
    assert_int_equal(r.load, OX_EMODEL);
    run(g, true, &r);
    assert_int_equal(r.load, OX_OK);
    assert_int_equal(r.check, OX_EMODEL);
    expect(&r, "value 'y' is assigned more than once (again by node 'again' (Relu))");
    expect(&r, "main: initializer 'k' is defined twice");
    expect(&r, "main: graph input 'x' is listed twice");
    expect(&r, "node 'undef' (Relu): input 'nowhere' is not defined");
    expect(&r, "main: initializer 'bad': ");
    assert_null(strstr(r.text, "input 'bad' is not defined"));
    assert_true(r.errors >= 5);
    arena_free();
}

/* ---- nesting bounds --------------------------------------------------------- */

/* `levels` If nodes nested through then/else branches around an Identity. */
static Onnx__GraphProto *nested(int levels)
{
    Onnx__GraphProto *g = graph("main");
    g->input[g->n_input++] = vi("c", 9, 0, NULL);
    g->input[g->n_input++] = vi("x", 1, 4, d4);
    Onnx__GraphProto *cur = g;
    for (int k = 0; k < levels; k++) {
        Onnx__GraphProto *b = graph("branch"), *leaf = graph("leaf");
        leaf->node[leaf->n_node++] = node("Identity", "id", 1, strs(1, "x"), 1, strs(1, "o"));
        leaf->output[leaf->n_output++] = vi("o", -1, -1, NULL);
        Onnx__NodeProto *n = node("If", "if", 1, strs(1, "c"), 1, strs(1, "o"));
        attr_graph(n, "then_branch", b);
        attr_graph(n, "else_branch", leaf);
        cur->node[cur->n_node++] = n;
        cur->output[cur->n_output++] = vi("o", -1, -1, NULL);
        cur = b;
    }
    cur->node[cur->n_node++] = node("Identity", "id", 1, strs(1, "x"), 1, strs(1, "o"));
    cur->output[cur->n_output++] = vi("o", -1, -1, NULL);
    return g;
}

static void test_nesting_bounds(void **state)
{
    (void)state;
    result r;
    /* 30 levels: about 100 messages deep, past the old bound of 64. */
    run(nested(30), false, &r);
    if (r.load != OX_OK)
        printf("%s\n", r.load_msg);
    assert_int_equal(r.load, OX_OK);
    assert_int_equal(r.check, OX_OK);
    /* Exactly at the documented subgraph bound: loads, infers, checks,
     * saves and reloads (ASan's larger frames make this a stack test). */
    run(nested(64), false, &r);
    if (r.load != OX_OK)
        printf("%s\n", r.load_msg);
    assert_int_equal(r.load, OX_OK);
    assert_int_equal(r.check, OX_OK);
    {
        size_t len;
        uint8_t *buf = pack(nested(64), &len);
        ox_model *m = NULL, *m2 = NULL;
        ox_error err = {0};
        assert_int_equal(ox_load_buffer(buf, len, NULL, &m, &err), OX_OK);
        free(buf);
        assert_int_equal(ox_infer_model(m, NULL, &err), OX_OK);
        void *out = NULL;
        size_t n = 0;
        assert_int_equal(ox_save_buffer(m, &out, &n, &err), OX_OK);
        assert_int_equal(ox_load_buffer(out, n, NULL, &m2, &err), OX_OK);
        free(out);
        ox_model_free(m2);
        ox_model_free(m);
    }
    /* Past the subgraph bound, then past the message bound. */
    run(nested(70), false, &r);
    assert_int_equal(r.load, OX_EPARSE);
    assert_non_null(strstr(r.load_msg, "subgraphs nested more than 64 levels"));
    run(nested(120), false, &r);
    assert_int_equal(r.load, OX_EPARSE);
    assert_non_null(strstr(r.load_msg, "nested too deeply"));
    arena_free();
}

/* ---- the command ------------------------------------------------------------ */

static void test_cli_lists_all(void **state)
{
    (void)state;
    const char *bin = ox_test_bin();
    if (!bin) {
        printf("# onnxscope binary not found: skipping\n");
        skip();
    }
    Onnx__GraphProto *g = base();
    g->node[g->n_node++] = node("Relu", "again", 1, strs(1, "x"), 1, strs(1, "y"));
    g->node[g->n_node++] = node("Relu", "sink", 1, strs(1, "x"), 0, NULL);
    g->node[g->n_node++] = node("NotAnOp", "na", 1, strs(1, "x"), 1, strs(1, "na"));
    size_t len;
    uint8_t *buf = pack(g, &len);
    char path[] = "/tmp/oxcheckcliXXXXXX";
    int fd = mkstemp(path);
    assert_int_equal(write(fd, buf, len), (ssize_t)len);
    close(fd);
    free(buf);
    char cmd[512], *out = NULL;
    snprintf(cmd, sizeof cmd, "'%s' check '%s'", bin, path);
    int rc = ox_test_run(cmd, &out);
    printf("%s", out);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "is assigned more than once"));
    assert_non_null(strstr(out, "has no outputs"));
    assert_non_null(strstr(out, ": warning: operator of the default domain unknown"));
    assert_non_null(strstr(out, "2 errors, 1 warning"));
    free(out);
    /* Only a warning: exit 0. */
    g = base();
    g->node[g->n_node++] = node("NotAnOp", "na", 1, strs(1, "x"), 1, strs(1, "na"));
    buf = pack(g, &len);
    fd = open(path, O_WRONLY | O_TRUNC);
    assert_int_equal(write(fd, buf, len), (ssize_t)len);
    close(fd);
    free(buf);
    rc = ox_test_run(cmd, &out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "ok (2 nodes), with warnings"));
    free(out);
    /* Shape inconsistencies are errors, every one listed (ONNX's checker
     * with full_check refuses them too): 25 elements into [7], twice. */
    static int64_t seven[1] = {7};
    static const int64_t d1[1] = {1};
    g = base();
    Onnx__TensorProto *shp = A(sizeof *shp);
    onnx__tensor_proto__init(shp);
    shp->name = "shp";
    shp->has_data_type = 1;
    shp->data_type = 7;
    shp->n_dims = 1;
    shp->dims = (int64_t *)d1;
    shp->n_int64_data = 1;
    shp->int64_data = seven;
    g->initializer[g->n_initializer++] = shp;
    g->node[g->n_node++] = node("Reshape", "r1", 2, strs(2, "x", "shp"), 1, strs(1, "r1"));
    g->node[g->n_node++] = node("Reshape", "r2", 2, strs(2, "y", "shp"), 1, strs(1, "r2"));
    g->output[g->n_output++] = vi("r1", -1, -1, NULL);
    g->output[g->n_output++] = vi("r2", -1, -1, NULL);
    buf = pack(g, &len);
    fd = open(path, O_WRONLY | O_TRUNC);
    assert_int_equal(write(fd, buf, len), (ssize_t)len);
    close(fd);
    free(buf);
    rc = ox_test_run(cmd, &out);
    printf("%s", out);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "shape inference: node 'r1' (Reshape)"));
    assert_non_null(strstr(out, "shape inference: node 'r2' (Reshape)"));
    assert_non_null(strstr(out, "2 errors, 0 warnings"));
    free(out);
    unlink(path);
    arena_free();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_zero_output_node),
        cmocka_unit_test(test_empty_input_name),
        cmocka_unit_test(test_elem_types_and_dims),
        cmocka_unit_test(test_negative_dim_warns),
        cmocka_unit_test(test_graphs_without_outputs),
        cmocka_unit_test(test_unknown_ops_warn),
        cmocka_unit_test(test_conv_attr_sizes),
        cmocka_unit_test(test_all_problems_listed),
        cmocka_unit_test(test_nesting_bounds),
        cmocka_unit_test(test_cli_lists_all),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
