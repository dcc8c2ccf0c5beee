/* Elementwise groups computed in one pass (src/exec/ew_fuse.c, plan_ew_fuse
 * in exec.c) against the same graphs run node by node
 * (ONNXSCOPE_NO_EW_FUSE=1): seeded random DAGs of Add/Sub/Mul/Div/Pow and
 * ten unary ops over operands of the output's shape, scalars and rows (with
 * and without leading 1s), NaN and infinities among the inputs; results
 * must be bit for bit the same. Also: intermediates that are graph outputs
 * or read by another op stay values; non-elementwise nodes between the
 * group's members and its root (the leaves must stay alive in the arena);
 * operands the one pass does not take (a [3,1] x [1,4] broadcast, two row
 * lengths, float64) fall back to the node kernels. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "onnxscope/exec.h"
#include "onnxscope/ir.h"

long ox_ew_slow_runs(void);

#define OX_TEST_SEED 0xe1e3e27f05e00001ull
#include "test_rand.h"

typedef struct gb {
    ox_model *m;
    ox_graph *g;
    int n;
    ox_tensor *in[8];
    int n_in;
} gb;

static ox_value *val(gb *b)
{
    char name[32];
    snprintf(name, sizeof name, "v%d", b->n++);
    return ox_graph_value(b->g, name);
}

static ox_value *op(gb *b, const char *type, ox_value *x, ox_value *y)
{
    ox_value *in[2] = {x, y}, *o = val(b);
    assert_non_null(ox_node_new(b->g, type, "", "", y ? 2 : 1, in, 1, &o));
    return o;
}

static ox_value *init(gb *b, ox_tensor *t)
{
    ox_value *v = val(b);
    assert_int_equal(ox_graph_set_initializer(b->g, v, t), OX_OK);
    return v;
}

static ox_value *input(gb *b, ox_tensor *t)
{
    ox_value *v = val(b);
    v->type = ox_type_new_tensor(t->dtype, t->rank, t->dims);
    assert_int_equal(ox_graph_add_input(b->g, v), OX_OK);
    b->in[b->n_in++] = t;
    return v;
}

static void gb_init(gb *b)
{
    memset(b, 0, sizeof *b);
    b->m = ox_model_new();
    ox_model_set_opset(b->m, "", 17);
    b->g = b->m->graph ? b->m->graph : ox_graph_new(b->m, NULL);
    b->m->graph = b->g;
}

static ox_tensor *rand_t(int rank, const int64_t *dims, bool specials)
{
    ox_tensor *t = ox_tensor_new(OX_DT_FLOAT, rank, dims);
    float *d = ox_tensor_data(t);
    for (int64_t i = 0; i < t->numel; i++)
        d[i] = (float)((int)(rnd() % 6001) - 3000) / 1000.0f;
    if (specials && t->numel > 4)
        d[0] = NAN, d[1] = INFINITY, d[2] = -INFINITY, d[3] = 0.0f, d[4] = -0.0f;
    return t;
}

static ox_tensor *scalar_t(float v, int rank)
{
    int64_t one[2] = {1, 1};
    ox_tensor *t = ox_tensor_new(OX_DT_FLOAT, rank, one);
    *(float *)ox_tensor_data(t) = v;
    return t;
}

/* Plans and runs twice (the second on the arena); returns the outputs and
 * the executor's count of nodes computed inside a group. */
static void run(gb *b, bool fuse, int threads, int n_out, ox_rval **out, int *fused)
{
    if (fuse) unsetenv("ONNXSCOPE_NO_EW_FUSE");
    else setenv("ONNXSCOPE_NO_EW_FUSE", "1", 1);
    ox_exec_opts o = {.threads = threads};
    ox_exec *e = NULL;
    ox_error err = {0};
    if (ox_exec_new(b->m, &o, &e, &err)) fail_msg("plan: %s", err.msg);
    ox_rval *in[8];
    for (int i = 0; i < b->n_in; i++) in[i] = ox_rval_tensor(ox_tensor_share(b->in[i]));
    for (int r = 0; r < 2; r++) {
        for (int i = 0; i < n_out; i++) {
            ox_rval_free(out[i]);
            out[i] = NULL;
        }
        if (ox_exec_run(e, b->n_in, in, n_out, out, &err)) fail_msg("run: %s", err.msg);
    }
    ox_exec_stats s;
    ox_exec_get_stats(e, &s);
    *fused = s.ew_fused_nodes;
    for (int i = 0; i < b->n_in; i++) ox_rval_free(in[i]);
    ox_exec_free(e);
    unsetenv("ONNXSCOPE_NO_EW_FUSE");
}

static void same_bits(const ox_rval *a, const ox_rval *b, const char *what, int cs)
{
    assert_int_equal(a->kind, OX_RV_TENSOR);
    assert_int_equal(b->kind, OX_RV_TENSOR);
    assert_int_equal(a->t->rank, b->t->rank);
    for (int i = 0; i < a->t->rank; i++) assert_int_equal(a->t->dims[i], b->t->dims[i]);
    assert_int_equal(a->t->dtype, b->t->dtype);
    size_t es = a->t->dtype == OX_DT_DOUBLE ? 8 : 4;
    const unsigned char *x = ox_tensor_data(a->t), *y = ox_tensor_data(b->t);
    for (int64_t i = 0; i < a->t->numel; i++) {
        bool nan = es == 4 ? isnan(((const float *)x)[i]) && isnan(((const float *)y)[i])
                           : isnan(((const double *)x)[i]) && isnan(((const double *)y)[i]);
        if (!nan && memcmp(x + i * es, y + i * es, es))
            fail_msg("case %d %s: element %lld differs (fused %.9g, node by node %.9g)", cs, what,
                     (long long)i, es == 4 ? ((const float *)x)[i] : ((const double *)x)[i],
                     es == 4 ? ((const float *)y)[i] : ((const double *)y)[i]);
    }
}

static const char *const unary[] = {"Relu", "Neg", "Abs", "Exp", "Log", "Sqrt",
                                    "Reciprocal", "Tanh", "Sigmoid", "Erf"};
static const char *const binary[] = {"Add", "Sub", "Mul", "Div", "Pow"};

/* Random groups over x (and a second full operand, rows and scalars). */
static void test_random_groups(void **state)
{
    (void)state;
    int fused_cases = 0;
    for (int cs = 0; cs < 120; cs++) {
        gb b;
        gb_init(&b);
        int rank = (int)rint_in(1, 4);
        int64_t dims[4];
        for (int i = 0; i < rank; i++) dims[i] = rint_in(1, i == rank - 1 ? 300 : 6);
        if (cs % 10 == 1) rank = 2, dims[0] = 64, dims[1] = 1027;   /* several chunks */
        ox_value *pool[24];
        int np = 0;
        pool[np++] = input(&b, rand_t(rank, dims, true));
        if (rnd() % 2) pool[np++] = rnd() % 2 ? input(&b, rand_t(rank, dims, false))
                                              : init(&b, rand_t(rank, dims, false));
        /* A row: the trailing dims, sometimes with leading 1s. */
        int rr = (int)rint_in(1, rank);
        int64_t rd[4];
        int lead = rnd() % 2 && rr < rank ? 1 : 0;
        for (int i = 0; i < lead; i++) rd[i] = 1;
        for (int i = 0; i < rr; i++) rd[lead + i] = dims[rank - rr + i];
        ox_value *row = rnd() % 2 ? init(&b, rand_t(lead + rr, rd, false))
                                  : input(&b, rand_t(lead + rr, rd, false));
        /* A column: the leading dims, then 1s (a reduction with keepdims). */
        int64_t cd[4];
        int keep = (int)rint_in(0, rank - 1);
        for (int i = 0; i < rank; i++) cd[i] = i < keep ? dims[i] : 1;
        ox_value *col = rnd() % 2 ? init(&b, rand_t(rank, cd, false)) : input(&b, rand_t(rank, cd, false));
        /* Operations on the row, the column or a scalar alone (fed, so not
         * folded at plan time) run on their own domain. */
        if (cs % 3 == 0) pool[np++] = row;
        if (cs % 3 == 1) pool[np++] = col;
        if (cs % 3 == 2) pool[np++] = input(&b, scalar_t(1.5f, (int)(rnd() % 2)));
        int n_ops = (int)rint_in(2, 12);
        ox_value *extra_out = NULL, *last = NULL;
        for (int k = 0; k < n_ops; k++) {
            ox_value *a = pool[rnd() % (uint32_t)np];
            if (rnd() % 3 == 0) {
                last = op(&b, unary[rnd() % 10], a, NULL);
            } else {
                const char *t = binary[rnd() % 5];
                ox_value *c;
                uint32_t w = rnd() % 4;
                if (!strcmp(t, "Pow")) {
                    static const float ex[] = {2.0f, 3.0f, 0.5f, -1.0f};
                    c = w == 3 ? row : init(&b, scalar_t(ex[rnd() % 4], (int)(rnd() % 2)));
                } else {
                    c = w == 0 ? (rnd() % 2 ? row : col)
                        : w == 1 ? init(&b, scalar_t((float)(rnd() % 9) - 4.0f, (int)(rnd() % 2)))
                                 : pool[rnd() % (uint32_t)np];
                }
                last = rnd() % 2 ? op(&b, t, a, c) : op(&b, t, c, a);
            }
            pool[np++] = last;
            /* Now and then an intermediate is also a graph output, or is
             * read by a non-elementwise op that joins back. */
            if (k == n_ops / 2 && cs % 5 == 2) extra_out = last;
            if (k == n_ops / 2 && cs % 5 == 3) pool[np++] = op(&b, "Identity", last, NULL);
        }
        assert_int_equal(ox_graph_add_output(b.g, last), OX_OK);
        int n_out = 1;
        if (extra_out && extra_out != last) {
            assert_int_equal(ox_graph_add_output(b.g, extra_out), OX_OK);
            n_out = 2;
        }
        int threads = (int)rint_in(1, 2), fa = 0, fb = 0;
        ox_rval *fast[2] = {0}, *plain[2] = {0};
        run(&b, true, threads, n_out, fast, &fa);
        run(&b, false, threads, n_out, plain, &fb);
        assert_int_equal(fb, 0);
        for (int i = 0; i < n_out; i++) {
            same_bits(fast[i], plain[i], i ? "intermediate output" : "output", cs);
            ox_rval_free(fast[i]);
            ox_rval_free(plain[i]);
        }
        fused_cases += fa > 0;
        for (int i = 0; i < b.n_in; i++) ox_tensor_free(b.in[i]);
        ox_model_free(b.m);
    }
    /* Most random graphs have a group to fuse. */
    printf("%d of 120 random graphs had a group\n", fused_cases);
    assert_true(fused_cases >= 60);
}

/* GPT-2's exported tanh GELU, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))):
 * one group of 8 nodes (x read by three of them), and a LayerNorm's tail,
 * (x - mean) / sqrt(var + eps) * gamma + beta, with the reductions outside
 * the group and gamma/beta as rows. */
static void test_exporter_patterns(void **state)
{
    (void)state;
    for (int cs = 0; cs < 3; cs++) {
        gb b;
        gb_init(&b);
        int64_t d[3] = {2, 17, 96}, r[1] = {96};
        ox_value *x = input(&b, rand_t(3, d, true)), *y;
        int want;
        if (cs == 0) {
            ox_value *c3 = op(&b, "Pow", x, init(&b, scalar_t(3.0f, 0)));
            ox_value *in = op(&b, "Add", x, op(&b, "Mul", c3, init(&b, scalar_t(0.044715f, 0))));
            ox_value *th = op(&b, "Tanh", op(&b, "Mul", in, init(&b, scalar_t(0.7978846f, 0))), NULL);
            ox_value *h = op(&b, "Mul", op(&b, "Mul", x, init(&b, scalar_t(0.5f, 0))),
                             op(&b, "Add", th, init(&b, scalar_t(1.0f, 0))));
            y = h;
            want = 8;   /* Pow, Mul, Add, Mul, Tanh, Mul, Add into the last Mul */
        } else if (cs == 2) {
            /* A gate computed from a fed row alone: on the row's domain. */
            ox_value *g = input(&b, rand_t(1, r, false));
            ox_value *gate = op(&b, "Sigmoid", op(&b, "Mul", g, init(&b, scalar_t(2.0f, 0))), NULL);
            y = op(&b, "Add", op(&b, "Mul", x, gate), g);
            want = 4;   /* Mul, Sigmoid, Mul into the Add */
        } else {
            ox_value *ax[1];
            ox_tensor *axes = ox_tensor_new(OX_DT_INT64, 1, (int64_t[1]){1});
            *(int64_t *)ox_tensor_data(axes) = -1;
            ax[0] = init(&b, axes);
            ox_value *in2[2] = {x, ax[0]}, *mean = val(&b);
            ox_node *rm = ox_node_new(b.g, "ReduceMean", "", "", 2, in2, 1, &mean);
            ox_node_set_attr_i(rm, "keepdims", 1);
            ox_value *dx = op(&b, "Sub", x, mean);
            ox_value *in3[2] = {op(&b, "Pow", dx, init(&b, scalar_t(2.0f, 0))), ax[0]}, *var = val(&b);
            ox_node *rv = ox_node_new(b.g, "ReduceMean", "", "", 2, in3, 1, &var);
            ox_node_set_attr_i(rv, "keepdims", 1);
            ox_value *den = op(&b, "Sqrt", op(&b, "Add", var, init(&b, scalar_t(1e-5f, 0))), NULL);
            y = op(&b, "Add", op(&b, "Mul", op(&b, "Div", dx, den), init(&b, rand_t(1, r, false))),
                   init(&b, rand_t(1, r, false)));
            want = 5;   /* Add eps, Sqrt, Div, Mul into the last Add (var a column) */
        }
        assert_int_equal(ox_graph_add_output(b.g, y), OX_OK);
        ox_rval *fast = NULL, *plain = NULL;
        int fa = 0, fb = 0;
        long slow0 = ox_ew_slow_runs();
        run(&b, true, 2, 1, &fast, &fa);
        assert_int_equal(ox_ew_slow_runs(), slow0);   /* the one pass ran */
        run(&b, false, 2, 1, &plain, &fb);
        if (fa != want - 1)
            fail_msg("pattern %d: %d nodes fused away", cs, fa);
        same_bits(fast, plain, cs == 2 ? "row gate" : cs ? "LayerNorm tail" : "tanh GELU", cs);
        ox_rval_free(fast);
        ox_rval_free(plain);
        for (int i = 0; i < b.n_in; i++) ox_tensor_free(b.in[i]);
        ox_model_free(b.m);
    }
}

/* Leaves read only by early members stay alive until the root runs: a
 * Transpose's output feeds Exp, then large values are made (and take
 * arena bytes) before the root reads the Exp's result. */
static void test_leaf_lifetime(void **state)
{
    (void)state;
    gb b;
    int64_t d[2] = {32, 48}, wd[2] = {32, 32};
    ox_rval *fast = NULL, *plain = NULL;
    int fa = 0, fb = 0;
    gb_init(&b);
    ox_value *x = input(&b, rand_t(2, d, false));
    ox_value *t = op(&b, "Neg", op(&b, "Transpose", x, NULL), NULL);   /* [48, 32] */
    ox_value *s = op(&b, "Mul", op(&b, "Exp", t, NULL), init(&b, scalar_t(0.5f, 0)));
    ox_value *w = init(&b, rand_t(2, wd, false)), *u = t;
    for (int i = 0; i < 4; i++)
        u = op(&b, "MatMul", op(&b, "Transpose", op(&b, "Transpose", u, NULL), NULL), w);
    ox_value *y = op(&b, "Add", s, op(&b, "Sigmoid", u, NULL));
    ox_value *z = op(&b, "Div", y, init(&b, scalar_t(3.0f, 1)));
    assert_int_equal(ox_graph_add_output(b.g, z), OX_OK);
    run(&b, true, 1, 1, &fast, &fa);
    run(&b, false, 1, 1, &plain, &fb);
    assert_true(fa >= 3);   /* Exp, Mul, Sigmoid, Add into the Div */
    same_bits(fast, plain, "leaf lifetime", 0);
    ox_rval_free(fast);
    ox_rval_free(plain);
    for (int i = 0; i < b.n_in; i++) ox_tensor_free(b.in[i]);
    ox_model_free(b.m);
}

/* Operands the one pass does not take: the member kernels run instead. */
static void test_fallbacks(void **state)
{
    (void)state;
    for (int cs = 0; cs < 3; cs++) {
        gb b;
        gb_init(&b);
        ox_value *y;
        if (cs == 0) {   /* [3,1] x [1,4] -> [3,4]: no operand has the output's shape */
            int64_t a[2] = {3, 1}, c[2] = {1, 4};
            ox_value *p = input(&b, rand_t(2, a, false)), *q = input(&b, rand_t(2, c, false));
            y = op(&b, "Relu", op(&b, "Add", p, q), NULL);
        } else if (cs == 1) {   /* rows of two lengths */
            int64_t a[2] = {5, 6}, r1[1] = {6}, r2[2] = {5, 6};
            int64_t f3[3] = {2, 5, 6};
            ox_value *q = init(&b, rand_t(1, r1, false)), *r = init(&b, rand_t(2, r2, false));
            ox_value *f = input(&b, rand_t(3, f3, false));
            (void)a;
            y = op(&b, "Add", op(&b, "Mul", f, q), op(&b, "Tanh", r, NULL));
        } else {   /* float64 fed to an input whose type the graph does not say */
            int64_t a[2] = {4, 7};
            ox_tensor *t = ox_tensor_new(OX_DT_DOUBLE, 2, a);
            for (int64_t i = 0; i < t->numel; i++) ((double *)ox_tensor_data(t))[i] = (double)i / 7 - 2;
            ox_value *p = input(&b, t);
            ox_type_free(p->type);
            p->type = NULL;
            y = op(&b, "Exp", op(&b, "Neg", op(&b, "Abs", p, NULL), NULL), NULL);
        }
        assert_int_equal(ox_graph_add_output(b.g, y), OX_OK);
        ox_rval *fast = NULL, *plain = NULL;
        int fa = 0, fb = 0;
        long slow0 = ox_ew_slow_runs();
        run(&b, true, 2, 1, &fast, &fa);
        assert_true(fa > 0);   /* planned as a group; ran the kernels */
        assert_true(ox_ew_slow_runs() > slow0);
        run(&b, false, 2, 1, &plain, &fb);
        same_bits(fast, plain, "fallback", cs);
        ox_rval_free(fast);
        ox_rval_free(plain);
        for (int i = 0; i < b.n_in; i++) ox_tensor_free(b.in[i]);
        ox_model_free(b.m);
    }
}

/* Values known not to be float32 (an int64 initializer, a declared int64
 * or float64 input, a value typed int64) never join a group: shape
 * arithmetic would take the slow path on every run. */
static void test_known_dtypes_not_grouped(void **state)
{
    (void)state;
    for (int cs = 0; cs < 3; cs++) {
        gb b;
        gb_init(&b);
        ox_value *y;
        int64_t one = 1, d2[2] = {3, 5};
        if (cs == 0) {   /* Shape -> Gather-like arithmetic: int64 constants */
            ox_tensor *n = ox_tensor_new(OX_DT_INT64, 1, &one), *k = ox_tensor_new(OX_DT_INT64, 1, &one);
            ox_tensor_set_i64(n, 0, 7);
            ox_tensor_set_i64(k, 0, 2);
            ox_value *sh = op(&b, "Shape", input(&b, rand_t(2, d2, false)), NULL);
            y = op(&b, "Mul", op(&b, "Add", sh, init(&b, n)), init(&b, k));
        } else if (cs == 1) {   /* a declared float64 input */
            ox_tensor *t = ox_tensor_new(OX_DT_DOUBLE, 2, d2);
            y = op(&b, "Exp", op(&b, "Neg", input(&b, t), NULL), NULL);
        } else {   /* float32 in, but the value between is typed int32 (a Cast) */
            ox_value *x = input(&b, rand_t(2, d2, false)), *c = val(&b);
            ox_node *cn = ox_node_new(b.g, "Cast", "", "", 1, &x, 1, &c);
            ox_node_set_attr_i(cn, "to", OX_DT_INT32);
            c->type = ox_type_new_tensor(OX_DT_INT32, 2, d2);
            y = op(&b, "Abs", op(&b, "Neg", c, NULL), NULL);
        }
        assert_int_equal(ox_graph_add_output(b.g, y), OX_OK);
        ox_rval *fast = NULL, *plain = NULL;
        int fa = -1, fb = 0;
        long slow0 = ox_ew_slow_runs();
        run(&b, true, 1, 1, &fast, &fa);
        if (fa != 0)
            fail_msg("case %d: %d nodes grouped", cs, fa);
        assert_int_equal(ox_ew_slow_runs(), slow0);
        run(&b, false, 1, 1, &plain, &fb);
        assert_true(ox_tensor_equal(fast->t, plain->t));
        ox_rval_free(fast);
        ox_rval_free(plain);
        for (int i = 0; i < b.n_in; i++) ox_tensor_free(b.in[i]);
        ox_model_free(b.m);
    }
}

/* Cheap members only (Add, Relu, Mul) where some value of the group is
 * known to exceed 4 MiB run as kernels (one pass measured slower there);
 * the same chain on smaller or unknown sizes, or with a Tanh, is a group. */
static void test_size_rule(void **state)
{
    (void)state;
    for (int cs = 0; cs < 4; cs++) {
        gb b;
        gb_init(&b);
        int64_t big[2] = {1024, 1025}, small[2] = {64, 33}, r1[1] = {1025};
        const int64_t *d = cs == 1 ? small : big;
        if (cs == 1) r1[0] = 33;
        ox_value *x = input(&b, rand_t(2, d, false));
        if (cs == 2) {   /* nothing says how large */
            ox_type_free(x->type);
            x->type = NULL;
        }
        ox_value *a = op(&b, "Relu", op(&b, "Add", x, init(&b, rand_t(1, r1, false))), NULL);
        if (cs == 3) a = op(&b, "Tanh", a, NULL);
        ox_value *y = op(&b, "Mul", a, init(&b, scalar_t(0.5f, 0)));
        if (cs != 2) y->type = ox_type_new_tensor(OX_DT_FLOAT, 2, d);
        assert_int_equal(ox_graph_add_output(b.g, y), OX_OK);
        ox_rval *fast = NULL, *plain = NULL;
        int fa = -1, fb = 0;
        run(&b, true, 1, 1, &fast, &fa);
        run(&b, false, 1, 1, &plain, &fb);
        int want = cs == 0 ? 0 : cs == 3 ? 3 : 2;
        if (fa != want)
            fail_msg("case %d: %d nodes grouped, want %d", cs, fa, want);
        same_bits(fast, plain, "size rule", cs);
        ox_rval_free(fast);
        ox_rval_free(plain);
        for (int i = 0; i < b.n_in; i++) ox_tensor_free(b.in[i]);
        ox_model_free(b.m);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_groups),
        cmocka_unit_test(test_exporter_patterns),
        cmocka_unit_test(test_leaf_lifetime),
        cmocka_unit_test(test_fallbacks),
        cmocka_unit_test(test_known_dtypes_not_grouped),
        cmocka_unit_test(test_size_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
