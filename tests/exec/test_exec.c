/* Unit tests of the executor core: the thread pool, the kernel registry's
 * opset choice, value comparison, test-data round trips, and running a
 * small hand-built model with If and Loop bodies that read outer-scope
 * values. Expected numbers are derived by hand in the comments. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "onnx.pb-c.h"
#include "onnxscope/exec.h"
#include "onnxscope/io.h"
#include "onnxscope/testdata.h"

/* ---- thread pool ---------------------------------------------------------- */

typedef struct sum_ctx {
    int64_t *out;
    ox_thread_pool *pool;
} sum_ctx;

static void square_range(void *ctx, int64_t b, int64_t e)
{
    sum_ctx *s = ctx;
    for (int64_t i = b; i < e; i++)
        s->out[i] = i * i;
}

static void nested_range(void *ctx, int64_t b, int64_t e)
{
    sum_ctx *s = ctx;
    /* A nested call from a worker must run inline and still be complete. */
    for (int64_t i = b; i < e; i++) {
        sum_ctx inner = {s->out + i * 10, s->pool};
        ox_parallel_for(s->pool, 10, 1, square_range, &inner);
    }
}

static void test_pool(void **state)
{
    (void)state;
    ox_thread_pool *p = ox_thread_pool_new(4);
    assert_non_null(p);
    assert_int_equal(ox_thread_pool_size(p), 4);
    enum { N = 100003 };
    int64_t *v = calloc(N, sizeof *v);
    assert_non_null(v);
    for (int rep = 0; rep < 20; rep++) {
        memset(v, 0xff, N * sizeof *v);
        sum_ctx s = {v, p};
        ox_parallel_for(p, N, 7, square_range, &s);
        for (int64_t i = 0; i < N; i++)
            assert_true(v[i] == i * i);
    }
    memset(v, 0xff, 1000 * sizeof *v);
    sum_ctx s = {v, p};
    ox_parallel_for(p, 100, 1, nested_range, &s);
    for (int64_t i = 0; i < 1000; i++)
        assert_true(v[i] == (i % 10) * (i % 10));
    /* NULL pool: serial. */
    ox_parallel_for(NULL, 50, 1, square_range, &s);
    assert_true(v[49] == 49 * 49);
    free(v);
    ox_thread_pool_free(p);
}

/* ---- registry ------------------------------------------------------------- */

/* The load guard's rule: cores other processes keep busy (this process's
 * own threads never count) leave the rest free, a half-used core counting
 * as free; never below 1 or above the machine. */
static void test_load_guard_rule(void **state)
{
    (void)state;
    assert_int_equal(ox_threads_free_cores(2, 0.0), 2);
    assert_int_equal(ox_threads_free_cores(2, 0.49), 2);
    assert_int_equal(ox_threads_free_cores(2, 0.6), 1);
    assert_int_equal(ox_threads_free_cores(2, 1.0), 1);
    assert_int_equal(ox_threads_free_cores(2, 7.5), 1);
    assert_int_equal(ox_threads_free_cores(8, 2.2), 6);
    assert_int_equal(ox_threads_free_cores(8, -0.3), 8);   /* accounting jitter */
    assert_int_equal(ox_threads_free_cores(0, 0.0), 1);
    assert_int_equal(ox_threads_free_cores(4, 0.0 / 0.0), 4);
    /* Whatever the machine's state, a team is never larger than asked
     * nor smaller than 1. */
    for (int want = 1; want <= 4; want++) {
        int t = ox_threads_team(want);
        assert_true(t >= 1 && t <= want);
    }
}

static void test_registry(void **state)
{
    (void)state;
    int n = ox_kernel_count();
    assert_true(n > 0);
    /* For every op with several versions, each version's own opset picks it,
     * and the opset just below it picks the previous one. */
    for (int i = 1; i < n; i++) {
        const ox_kernel_entry *a = ox_kernel_at(i - 1), *b = ox_kernel_at(i);
        if (strcmp(a->op_type, b->op_type) != 0 || strcmp(a->domain, b->domain) != 0 ||
            a->since_version == b->since_version)
            continue;
        assert_ptr_equal(ox_kernel_find(b->domain, b->op_type, b->since_version), b);
        assert_ptr_equal(ox_kernel_find(b->domain, b->op_type, b->since_version - 1), a);
    }
    /* Before the first version there is none; "ai.onnx" is the default domain. */
    assert_null(ox_kernel_lookup("", "Scan", 7));
    assert_non_null(ox_kernel_lookup("ai.onnx", "Scan", 8));
    assert_non_null(ox_kernel_lookup("", "Loop", 21));
    assert_null(ox_kernel_lookup("", "NoSuchOp", 21));
    assert_false(ox_kernel_exists("com.example", "Loop"));
}

/* ---- comparison ----------------------------------------------------------- */

static ox_rval *vec(int n, const float *v)
{
    int64_t d = n;
    ox_tensor *t = ox_tensor_new(OX_DT_FLOAT, 1, &d);
    memcpy(ox_tensor_data(t), v, (size_t)n * sizeof *v);
    return ox_rval_tensor(t);
}

static void test_allclose(void **state)
{
    (void)state;
    char why[256];
    float a[] = {1.0f, NAN, 100.0f}, b[] = {1.0f, NAN, 100.09f}, c[] = {1.0f, NAN, 100.2f};
    ox_rval *ra = vec(3, a), *rb = vec(3, b), *rc = vec(3, c), *rs = vec(2, a);
    /* |100.09-100| = 0.09 <= 1e-7 + 1e-3*100.09; 0.2 is not. */
    assert_true(ox_rval_allclose(ra, rb, 1e-3, 1e-7, why, sizeof why));
    assert_false(ox_rval_allclose(ra, rc, 1e-3, 1e-7, why, sizeof why));
    assert_non_null(strstr(why, "element 2"));
    assert_false(ox_rval_allclose(ra, rs, 1e-3, 1e-7, why, sizeof why));
    assert_non_null(strstr(why, "shape"));
    ox_rval *seq1 = ox_rval_sequence(), *seq2 = ox_rval_sequence();
    ox_rval_seq_push(seq1, ox_rval_clone(ra));
    ox_rval_seq_push(seq2, ox_rval_clone(rb));
    assert_true(ox_rval_allclose(seq1, seq2, 1e-3, 1e-7, why, sizeof why));
    ox_rval_seq_push(seq2, ox_rval_clone(rb));
    assert_false(ox_rval_allclose(seq1, seq2, 1e-3, 1e-7, why, sizeof why));
    assert_false(ox_rval_allclose(seq1, ra, 1e-3, 1e-7, why, sizeof why));
    ox_rval_free(ra);
    ox_rval_free(rb);
    ox_rval_free(rc);
    ox_rval_free(rs);
    ox_rval_free(seq1);
    ox_rval_free(seq2);
}

/* ---- test data -------------------------------------------------------------- */

static void test_testdata_sequence(void **state)
{
    (void)state;
    char path[] = "/tmp/ox_test_seqXXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    float a[] = {1, 2, 3}, b[] = {4};
    ox_rval *s = ox_rval_sequence();
    ox_rval_seq_push(s, vec(3, a));
    ox_rval_seq_push(s, vec(1, b));
    ox_error err = {0};
    assert_int_equal(ox_testdata_save(s, "seq", path, &err), OX_OK);
    ox_type seq_t = {.kind = OX_TYPE_SEQUENCE};
    ox_rval *back = NULL;
    char *name = NULL;
    assert_int_equal(ox_testdata_load(path, &seq_t, &back, &name, &err), OX_OK);
    assert_string_equal(name, "seq");
    assert_int_equal(back->kind, OX_RV_SEQUENCE);
    assert_int_equal(back->n_items, 2);
    assert_true(ox_rval_allclose(back, s, 0, 0, NULL, 0));
    free(name);
    ox_rval_free(back);
    /* Garbage is an error, not a crash. */
    FILE *f = fopen(path, "wb");
    fwrite("\xff\xff\xff\xff\x0f", 1, 5, f);
    fclose(f);
    assert_int_not_equal(ox_testdata_load(path, &seq_t, &back, NULL, &err), OX_OK);
    assert_null(back);
    unlink(path);
    ox_rval_free(s);
}

/* ---- a hand-built model --------------------------------------------------- */

/* protobuf-c builders; every allocation is recorded and freed at once. */
static void *allocs[256];
static int n_allocs;

static void *talloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    assert_non_null(p);
    assert_true(n_allocs < 256);
    allocs[n_allocs++] = p;
    return p;
}

static void tfree_all(void)
{
    while (n_allocs > 0)
        free(allocs[--n_allocs]);
}

static Onnx__NodeProto *mk_node(const char *op, int n_in, const char **in, int n_out,
                                const char **out)
{
    Onnx__NodeProto *n = talloc(1, sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = (char *)op;
    n->n_input = (size_t)n_in;
    n->input = (char **)in;
    n->n_output = (size_t)n_out;
    n->output = (char **)out;
    return n;
}

static Onnx__ValueInfoProto *mk_vi(const char *name, int elem, int rank, const int64_t *dims)
{
    Onnx__ValueInfoProto *v = talloc(1, sizeof *v);
    onnx__value_info_proto__init(v);
    v->name = (char *)name;
    Onnx__TypeProto *tp = talloc(1, sizeof *tp);
    onnx__type_proto__init(tp);
    Onnx__TypeProto__Tensor *tt = talloc(1, sizeof *tt);
    onnx__type_proto__tensor__init(tt);
    tt->has_elem_type = 1;
    tt->elem_type = elem;
    Onnx__TensorShapeProto *sh = talloc(1, sizeof *sh);
    onnx__tensor_shape_proto__init(sh);
    sh->n_dim = (size_t)rank;
    sh->dim = talloc((size_t)rank + 1, sizeof *sh->dim);
    for (int i = 0; i < rank; i++) {
        sh->dim[i] = talloc(1, sizeof **sh->dim);
        onnx__tensor_shape_proto__dimension__init(sh->dim[i]);
        sh->dim[i]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        sh->dim[i]->dim_value = dims[i];
    }
    tt->shape = sh;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    v->type = tp;
    return v;
}

static Onnx__GraphProto *mk_graph(const char *name, int nn, Onnx__NodeProto **nodes, int ni,
                                  Onnx__ValueInfoProto **in, int no,
                                  Onnx__ValueInfoProto **out)
{
    Onnx__GraphProto *g = talloc(1, sizeof *g);
    onnx__graph_proto__init(g);
    g->name = (char *)name;
    g->n_node = (size_t)nn;
    g->node = nodes;
    g->n_input = (size_t)ni;
    g->input = in;
    g->n_output = (size_t)no;
    g->output = out;
    return g;
}

static Onnx__AttributeProto *mk_graph_attr(const char *name, Onnx__GraphProto *g)
{
    Onnx__AttributeProto *a = talloc(1, sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = (char *)name;
    a->has_type = 1;
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
    a->g = g;
    return a;
}

static void *model_bytes(size_t *len)
{
    static const int64_t d3[] = {3};
    /* then: t_out = Mul(y, w)   else: e_out = Sub(y, w)   (y, w outer) */
    static const char *mul_in[] = {"y", "w"}, *mul_out[] = {"t_out"};
    static const char *sub_in[] = {"y", "w"}, *sub_out[] = {"e_out"};
    Onnx__NodeProto **tn = talloc(1, sizeof *tn), **en = talloc(1, sizeof *en);
    tn[0] = mk_node("Mul", 2, mul_in, 1, mul_out);
    en[0] = mk_node("Sub", 2, sub_in, 1, sub_out);
    Onnx__ValueInfoProto **to = talloc(1, sizeof *to), **eo = talloc(1, sizeof *eo);
    to[0] = mk_vi("t_out", 1, 1, d3);
    eo[0] = mk_vi("e_out", 1, 1, d3);
    Onnx__GraphProto *then_g = mk_graph("then", 1, tn, 0, NULL, 1, to);
    Onnx__GraphProto *else_g = mk_graph("else", 1, en, 0, NULL, 1, eo);

    /* body(i, cond_in, acc): acc2 = Add(acc, y); cond_out = Identity(cond_in);
     * scan = Identity(acc2) */
    static const char *ba_in[] = {"acc", "y"}, *ba_out[] = {"acc2"};
    static const char *bc_in[] = {"cond_in"}, *bc_out[] = {"cond_out"};
    static const char *bs_in[] = {"acc2"}, *bs_out[] = {"scan"};
    Onnx__NodeProto **bn = talloc(3, sizeof *bn);
    bn[0] = mk_node("Add", 2, ba_in, 1, ba_out);
    bn[1] = mk_node("Identity", 1, bc_in, 1, bc_out);
    bn[2] = mk_node("Identity", 1, bs_in, 1, bs_out);
    Onnx__ValueInfoProto **bi = talloc(3, sizeof *bi), **bo = talloc(3, sizeof *bo);
    bi[0] = mk_vi("i", 7, 0, NULL);
    bi[1] = mk_vi("cond_in", 9, 0, NULL);
    bi[2] = mk_vi("acc", 1, 1, d3);
    bo[0] = mk_vi("cond_out", 9, 0, NULL);
    bo[1] = mk_vi("acc2", 1, 1, d3);
    bo[2] = mk_vi("scan", 1, 1, d3);
    Onnx__GraphProto *body = mk_graph("body", 3, bn, 3, bi, 3, bo);

    static const char *add_in[] = {"x", "w"}, *add_out[] = {"y"};
    static const char *if_in[] = {"c"}, *if_out[] = {"r"};
    static const char *loop_in[] = {"n", "", "x"}, *loop_out[] = {"acc_final", "scan_out"};
    Onnx__NodeProto **mn = talloc(3, sizeof *mn);
    /* The Loop comes first in the file: the planner must sort it after Add,
     * whose output its body reads from the outer scope. */
    mn[0] = mk_node("Loop", 3, loop_in, 2, loop_out);
    mn[1] = mk_node("Add", 2, add_in, 1, add_out);
    mn[2] = mk_node("If", 1, if_in, 1, if_out);
    Onnx__AttributeProto **ia = talloc(2, sizeof *ia), **la = talloc(1, sizeof *la);
    ia[0] = mk_graph_attr("then_branch", then_g);
    ia[1] = mk_graph_attr("else_branch", else_g);
    mn[2]->n_attribute = 2;
    mn[2]->attribute = ia;
    la[0] = mk_graph_attr("body", body);
    mn[0]->n_attribute = 1;
    mn[0]->attribute = la;

    Onnx__ValueInfoProto **gi = talloc(3, sizeof *gi), **go = talloc(4, sizeof *go);
    gi[0] = mk_vi("x", 1, 1, d3);
    gi[1] = mk_vi("c", 9, 0, NULL);
    gi[2] = mk_vi("n", 7, 0, NULL);
    static const int64_t d33[] = {3, 3};
    go[0] = mk_vi("r", 1, 1, d3);
    go[1] = mk_vi("acc_final", 1, 1, d3);
    go[2] = mk_vi("scan_out", 1, 2, d33);
    go[3] = mk_vi("y", 1, 1, d3);
    Onnx__GraphProto *g = mk_graph("main", 3, mn, 3, gi, 4, go);

    static float wv[] = {1, 2, 3};
    static int64_t wd[] = {3};
    Onnx__TensorProto *w = talloc(1, sizeof *w);
    onnx__tensor_proto__init(w);
    w->name = (char *)"w";
    w->has_data_type = 1;
    w->data_type = 1;
    w->n_dims = 1;
    w->dims = wd;
    w->has_raw_data = 1;
    w->raw_data.len = sizeof wv;
    w->raw_data.data = (uint8_t *)wv;
    g->n_initializer = 1;
    g->initializer = talloc(1, sizeof *g->initializer);
    g->initializer[0] = w;

    Onnx__ModelProto m;
    onnx__model_proto__init(&m);
    m.has_ir_version = 1;
    m.ir_version = 8;
    Onnx__OperatorSetIdProto op;
    onnx__operator_set_id_proto__init(&op);
    op.domain = (char *)"";
    op.has_version = 1;
    op.version = 17;
    Onnx__OperatorSetIdProto *ops[] = {&op};
    m.n_opset_import = 1;
    m.opset_import = ops;
    m.graph = g;
    *len = protobuf_c_message_get_packed_size(&m.base);
    void *buf = malloc(*len);
    protobuf_c_message_pack(&m.base, buf);
    tfree_all();
    return buf;
}

static ox_rval *scalar(ox_dtype dt, int64_t v)
{
    ox_tensor *t = ox_tensor_new(dt, 0, NULL);
    ox_tensor_set_i64(t, 0, v);
    return ox_rval_tensor(t);
}

static void expect_floats(const ox_rval *v, int rank, const int64_t *dims, const float *want,
                          int n)
{
    assert_non_null(v);
    assert_int_equal(v->kind, OX_RV_TENSOR);
    assert_int_equal(v->t->dtype, OX_DT_FLOAT);
    assert_int_equal(v->t->rank, rank);
    for (int d = 0; d < rank; d++)
        assert_int_equal(v->t->dims[d], dims[d]);
    const float *got = ox_tensor_data(v->t);
    for (int i = 0; i < n; i++)
        assert_float_equal(got[i], want[i], 1e-6);
}

static void count_node(void *ctx, const ox_node *n, int64_t t0, int64_t t1)
{
    (void)n;
    assert_true(t1 >= t0);
    (*(int *)ctx)++;
}

static void test_model_control_flow(void **state)
{
    (void)state;
    size_t len;
    void *bytes = model_bytes(&len);
    ox_model *m = NULL;
    ox_error err = {0};
    ox_status st = ox_load_buffer(bytes, len, NULL, &m, &err);
    free(bytes);
    if (st)
        fail_msg("load: %s", err.msg);
    ox_exec *e = NULL;
    int calls = 0;
    ox_exec_opts opts = {.threads = 2, .node_hook = count_node, .node_hook_user = &calls};
    st = ox_exec_new(m, &opts, &e, &err);
    if (st)
        fail_msg("exec_new: %s", err.msg);

    float xv[] = {1, -1, 0.5f};
    for (int c = 0; c < 2; c++) {
        ox_rval *in[3] = {vec(3, xv), scalar(OX_DT_BOOL, c), scalar(OX_DT_INT64, 3)};
        ox_rval *out[4] = {0};
        st = ox_exec_run(e, 3, in, 4, out, &err);
        if (st)
            fail_msg("run: %s", err.msg);
        static const int64_t d3[] = {3}, d33[] = {3, 3};
        /* y = x + w = {2, 1, 3.5} */
        const float y[] = {2, 1, 3.5f};
        /* then: y*w = {2, 2, 10.5}; else: y-w = {1, -1, 0.5} */
        const float r_then[] = {2, 2, 10.5f}, r_else[] = {1, -1, 0.5f};
        /* acc after k iterations: x + k*y */
        const float acc[] = {7, 2, 11};
        const float scan[] = {3, 0, 4, 5, 1, 7.5f, 7, 2, 11};
        expect_floats(out[0], 1, d3, c ? r_then : r_else, 3);
        expect_floats(out[1], 1, d3, acc, 3);
        expect_floats(out[2], 2, d33, scan, 9);
        expect_floats(out[3], 1, d3, y, 3);
        for (int i = 0; i < 4; i++)
            ox_rval_free(out[i]);
        for (int i = 0; i < 3; i++)
            ox_rval_free(in[i]);
        /* Add, If, Loop; one branch node; 3 body nodes x 3 iterations */
        assert_int_equal(calls, 13 * (c + 1));
    }
    /* Zero iterations: acc is x, the scan output is empty [0, 3]. */
    ox_rval *in[3] = {vec(3, xv), scalar(OX_DT_BOOL, 1), scalar(OX_DT_INT64, 0)};
    ox_rval *out[4] = {0};
    st = ox_exec_run(e, 3, in, 4, out, &err);
    if (st)
        fail_msg("run: %s", err.msg);
    static const int64_t d3[] = {3}, d03[] = {0, 3};
    expect_floats(out[1], 1, d3, xv, 3);
    expect_floats(out[2], 2, d03, NULL, 0);
    for (int i = 0; i < 4; i++)
        ox_rval_free(out[i]);
    /* A wrongly typed input is refused with a message naming it. */
    ox_rval_free(in[0]);
    in[0] = scalar(OX_DT_INT64, 1);
    ox_error e2 = {0};
    assert_int_not_equal(ox_exec_run(e, 3, in, 4, out, &e2), OX_OK);
    assert_non_null(strstr(e2.msg, "'x'"));
    for (int i = 0; i < 3; i++)
        ox_rval_free(in[i]);
    ox_exec_free(e);
    ox_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pool),
        cmocka_unit_test(test_load_guard_rule),
        cmocka_unit_test(test_registry),
        cmocka_unit_test(test_allclose),
        cmocka_unit_test(test_testdata_sequence),
        cmocka_unit_test(test_model_control_flow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
