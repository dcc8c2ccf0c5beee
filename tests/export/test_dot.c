/* Conformance of the graph export on every model of ../shared/models and
 * ../shared/onnx-backend/light (plus the control-flow node tests): the DOT
 * text parses back with libcgraph and with Graphviz's `dot`, and its node
 * and edge counts equal those computed independently from the protobuf.
 * Also renders SVG/PNG/PDF and checks the files are well formed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <cgraph.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifdef OX_HAVE_LIBXML2
#include <libxml/parser.h>
#include <libxml/tree.h>
#endif

#include "onnx.pb-c.h"
#include "onnxscope/export.h"
#include "onnxscope/io.h"
#include "testutil.h"

/* ---- reference counts straight from the protobuf ------------------------ */

/* What the export must contain, per docs/EXPORT.md "What is counted":
 * one DOT node per ONNX node (all graphs, bodies included), per graph input
 * that is not an initializer, per graph output entry and, when shown, per
 * initializer; one edge per node input slot whose name resolves (through
 * enclosing scopes) to a node output, a graph input or a shown initializer,
 * one per graph output that so resolves, and one per body cluster that is
 * not empty (control-flow node -> body). */
typedef struct ref_counts {
    int ops, inputs, outputs, inits;
    int edges_init, edges_noinit;   /* with / without initializers shown */
    int bodies_init, bodies_noinit;
} ref_counts;

typedef enum { SRC_NONE, SRC_NODE, SRC_INPUT, SRC_INIT } src_kind;

typedef struct scope {
    const Onnx__GraphProto *g;
    const struct scope *parent;
} scope;

static bool is_init(const Onnx__GraphProto *g, const char *name)
{
    for (size_t i = 0; i < g->n_initializer; i++)
        if (g->initializer[i]->name && strcmp(g->initializer[i]->name, name) == 0)
            return true;
    return false;
}

/* How `name` is defined, looking outwards through the scopes. Within a
 * graph an initializer wins over an input of the same name (IR < 4 models
 * list weights as inputs too). */
static src_kind resolve(const scope *s, const char *name)
{
    if (!name || !*name)
        return SRC_NONE;
    for (; s; s = s->parent) {
        const Onnx__GraphProto *g = s->g;
        for (size_t i = 0; i < g->n_node; i++)
            for (size_t k = 0; k < g->node[i]->n_output; k++)
                if (strcmp(g->node[i]->output[k], name) == 0)
                    return SRC_NODE;
        if (is_init(g, name))
            return SRC_INIT;
        for (size_t i = 0; i < g->n_input; i++)
            if (g->input[i]->name && strcmp(g->input[i]->name, name) == 0)
                return SRC_INPUT;
    }
    return SRC_NONE;
}

static void count_graph(const Onnx__GraphProto *g, const scope *parent, ref_counts *rc,
                        int *shown_init, int *shown_noinit)
{
    scope s = {g, parent};
    int ops = (int)g->n_node, ins = 0, outs = (int)g->n_output;
    for (size_t i = 0; i < g->n_input; i++)
        if (!is_init(g, g->input[i]->name ? g->input[i]->name : ""))
            ins++;
    rc->ops += ops;
    rc->inputs += ins;
    rc->outputs += outs;
    rc->inits += (int)g->n_initializer;
    *shown_init = ops + ins + outs + (int)g->n_initializer;
    *shown_noinit = ops + ins + outs;
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        for (size_t k = 0; k < n->n_input; k++) {
            src_kind sk = resolve(&s, n->input[k]);
            if (sk != SRC_NONE)
                rc->edges_init++;
            if (sk == SRC_NODE || sk == SRC_INPUT)
                rc->edges_noinit++;
        }
    }
    for (size_t k = 0; k < g->n_output; k++) {
        src_kind sk = resolve(&s, g->output[k]->name);
        if (sk != SRC_NONE)
            rc->edges_init++;
        if (sk == SRC_NODE || sk == SRC_INPUT)
            rc->edges_noinit++;
    }
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        for (size_t a = 0; a < n->n_attribute; a++) {
            const Onnx__AttributeProto *at = n->attribute[a];
            const Onnx__GraphProto *bodies[64];
            size_t nb = 0;
            if (at->g)
                bodies[nb++] = at->g;
            for (size_t k = 0; k < at->n_graphs && nb < 64; k++)
                bodies[nb++] = at->graphs[k];
            for (size_t k = 0; k < nb; k++) {
                int si, sn;
                count_graph(bodies[k], &s, rc, &si, &sn);
                /* A body cluster contains its own nodes and nested ones;
                 * the body edge exists when the cluster is not empty. */
                if (si > 0)
                    rc->bodies_init++;
                if (sn > 0)
                    rc->bodies_noinit++;
            }
        }
    }
}

static bool ref_from_file(const char *path, ref_counts *rc)
{
    memset(rc, 0, sizeof *rc);
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc((size_t)sz);
    bool ok = buf && fread(buf, 1, (size_t)sz, f) == (size_t)sz;
    fclose(f);
    Onnx__ModelProto *mp = ok ? onnx__model_proto__unpack(NULL, (size_t)sz, buf) : NULL;
    free(buf);
    if (!mp || !mp->graph) {
        if (mp)
            onnx__model_proto__free_unpacked(mp, NULL);
        return false;
    }
    int si, sn;
    count_graph(mp->graph, NULL, rc, &si, &sn);
    onnx__model_proto__free_unpacked(mp, NULL);
    return true;
}

/* ---- reading the export back ----------------------------------------------- */

typedef struct dot_counts {
    int nodes, edges, ops, inputs, outputs, inits, body_edges;
} dot_counts;

static bool read_dot(const char *path, dot_counts *dc)
{
    memset(dc, 0, sizeof *dc);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    Agraph_t *g = agread(f, NULL);
    fclose(f);
    if (!g)
        return false;
    dc->nodes = agnnodes(g);
    dc->edges = agnedges(g);
    for (Agnode_t *n = agfstnode(g); n; n = agnxtnode(g, n)) {
        char *k = agget(n, "ox_kind");
        if (!k)
            continue;
        dc->ops += strcmp(k, "op") == 0;
        dc->inputs += strcmp(k, "input") == 0;
        dc->outputs += strcmp(k, "output") == 0;
        dc->inits += strcmp(k, "initializer") == 0;
        for (Agedge_t *e = agfstout(g, n); e; e = agnxtout(g, e)) {
            char *ek = agget(e, "ox_kind");
            dc->body_edges += ek && strcmp(ek, "body") == 0;
        }
    }
    agclose(g);
    return true;
}

/* ---- file checks ----------------------------------------------------------- */

static uint32_t crc32_buf(const uint8_t *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
    }
    return c ^ 0xffffffffu;
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* PNG signature, then an IHDR chunk of 13 bytes with a correct CRC and
 * plausible dimensions (non-zero, within cairo's 32767 limit). */
static bool png_ok(const char *path, uint32_t *w, uint32_t *h)
{
    uint8_t b[33];
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    size_t n = fread(b, 1, sizeof b, f);
    fclose(f);
    static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (n < 33 || memcmp(b, sig, 8) != 0 || be32(b + 8) != 13 || memcmp(b + 12, "IHDR", 4))
        return false;
    if (crc32_buf(b + 12, 17) != be32(b + 29))
        return false;
    *w = be32(b + 16);
    *h = be32(b + 20);
    return *w > 0 && *h > 0 && *w <= 32767 && *h <= 32767;
}

static bool pdf_ok(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    char head[8] = {0}, tail[64] = {0};
    size_t n = fread(head, 1, 5, f);
    fseek(f, -(long)sizeof tail + 1, SEEK_END);
    size_t m = fread(tail, 1, sizeof tail - 1, f);
    fclose(f);
    tail[m] = '\0';
    return n == 5 && memcmp(head, "%PDF-", 5) == 0 && strstr(tail, "%%EOF") != NULL;
}

/* The SVG parses as XML and its root element is <svg>. */
static bool svg_ok(const char *path)
{
#ifdef OX_HAVE_LIBXML2
    xmlDocPtr doc = xmlReadFile(path, NULL, XML_PARSE_NONET | XML_PARSE_NOERROR |
                                               XML_PARSE_NOWARNING | XML_PARSE_HUGE);
    if (!doc)
        return false;
    xmlNodePtr root = xmlDocGetRootElement(doc);
    bool ok = root && strcmp((const char *)root->name, "svg") == 0;
    xmlFreeDoc(doc);
    return ok;
#else
    if (access("/usr/bin/xmllint", X_OK) == 0) {
        char cmd[4200];
        snprintf(cmd, sizeof cmd, "/usr/bin/xmllint --noout --nonet '%s' 2>/dev/null", path);
        return system(cmd) == 0;
    }
    /* Last resort: header and closing root tag. */
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return strstr(buf, "<svg") != NULL;
#endif
}

/* ---- the sweep ---------------------------------------------------------------- */

static char tmpdir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/oxexport.XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static void collect(const char *shared, ox_test_paths *p)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/models", shared);
    ox_test_find(dir, "model.onnx", p);
    snprintf(dir, sizeof dir, "%s/onnx-backend/light", shared);
    ox_test_find(dir, NULL, p);
    /* Control-flow bodies (If/Loop/Scan/SequenceMap) for the cluster rules. */
    static const char *const cf[] = {
        "test_if", "test_if_seq", "test_loop11", "test_loop13_seq",
        "test_scan9_sum", "test_scan_sum", "test_sequence_map_add_2_sequences",
    };
    for (size_t i = 0; i < sizeof cf / sizeof cf[0]; i++) {
        snprintf(dir, sizeof dir, "%s/onnx-backend/node/%s", shared, cf[i]);
        ox_test_find(dir, "model.onnx", p);
    }
}

static bool have_dot_cmd(void)
{
    return access("/usr/bin/dot", X_OK) == 0;
}

static void test_counts_all_models(void **state)
{
    (void)state;
    const char *shared = ox_test_shared();
    if (!shared) {
        print_message("skipped: ONNXSCOPE_SHARED not set or missing\n");
        skip();
    }
    ox_test_paths p = {0};
    collect(shared, &p);
    assert_true(p.n >= 16);
    bool dotcmd = have_dot_cmd();
    bool nopcmd = access("/usr/bin/nop", X_OK) == 0;
    if (!dotcmd)
        print_message("note: /usr/bin/dot absent, `dot` command check skipped\n");
    if (!nopcmd)
        print_message("note: /usr/bin/nop absent, its parse check skipped\n");
    int checked = 0;
    for (int i = 0; i < p.n; i++) {
        const char *path = p.v[i];
        ref_counts rc;
        if (!ref_from_file(path, &rc))
            fail_msg("%s: reference protobuf parse failed", path);
        ox_model *m = NULL;
        ox_error err = {0};
        if (ox_load(path, NULL, &m, &err) != OX_OK)
            fail_msg("%s: load failed: %s", path, err.msg);
        for (int inits = 0; inits <= 1; inits++) {
            ox_export_opts o;
            ox_export_opts_init(&o);
            o.show_initializers = inits;
            char out[512];
            snprintf(out, sizeof out, "%s/m%d_%d.dot", tmpdir, i, inits);
            ox_export_stats st;
            if (ox_export_dot(m, &o, out, &st, &err) != OX_OK)
                fail_msg("%s: export failed: %s", path, err.msg);
            dot_counts dc;
            if (!read_dot(out, &dc))
                fail_msg("%s: agread failed on %s", path, out);
            int want_nodes = rc.ops + rc.inputs + rc.outputs + (inits ? rc.inits : 0);
            int want_edges = inits ? rc.edges_init + rc.bodies_init
                                   : rc.edges_noinit + rc.bodies_noinit;
            if (dc.nodes != want_nodes || dc.edges != want_edges || dc.ops != rc.ops ||
                dc.inputs != rc.inputs || dc.outputs != rc.outputs ||
                dc.inits != (inits ? rc.inits : 0) ||
                dc.body_edges != (inits ? rc.bodies_init : rc.bodies_noinit))
                fail_msg("%s (initializers %s): DOT has %d nodes (%d op, %d in, %d out, "
                         "%d init) %d edges (%d body); expected %d nodes (%d op, %d in, "
                         "%d out, %d init) %d edges",
                         path, inits ? "on" : "off", dc.nodes, dc.ops, dc.inputs,
                         dc.outputs, dc.inits, dc.edges, dc.body_edges, want_nodes, rc.ops,
                         rc.inputs, rc.outputs, inits ? rc.inits : 0, want_edges);
            assert_int_equal(st.nodes, dc.nodes);
            assert_int_equal(st.edges, dc.edges);
            if (nopcmd) {
                /* nop is Graphviz's pretty-printer: its parser, no layout. */
                char cmd[1200];
                snprintf(cmd, sizeof cmd, "/usr/bin/nop '%s' > /dev/null", out);
                if (system(cmd) != 0)
                    fail_msg("%s: Graphviz `nop` rejected %s", path, out);
            }
            if (dotcmd && !inits) {
                /* The `dot` command itself (parse + layout); once per model,
                 * as layout is the slow part. */
                char cmd[1200];
                snprintf(cmd, sizeof cmd, "/usr/bin/dot -Tsvg '%s' -o /dev/null", out);
                if (system(cmd) != 0)
                    fail_msg("%s: `dot` rejected %s", path, out);
            }
            unlink(out);
            checked++;
        }
        ox_model_free(m);
    }
    print_message("checked %d exports of %d models\n", checked, p.n);
    ox_test_paths_free(&p);
}

/* Every model is laid out and rendered as SVG and PNG (one layout each);
 * the smaller ones as PDF too, and through the `dot` command when present. */
static void test_render_all_models(void **state)
{
    (void)state;
    const char *shared = ox_test_shared();
    if (!shared) {
        print_message("skipped: ONNXSCOPE_SHARED not set or missing\n");
        skip();
    }
    ox_test_paths p = {0};
    collect(shared, &p);
    int rendered = 0;
    for (int i = 0; i < p.n; i++) {
        ox_model *m = NULL;
        ox_error err = {0};
        if (ox_load(p.v[i], NULL, &m, &err) != OX_OK)
            fail_msg("%s: load failed: %s", p.v[i], err.msg);
        ox_export_opts o;
        ox_export_opts_init(&o);
        struct Agraph_s *g = NULL;
        ox_export_stats st;
        if (ox_export_build(m, &o, &g, &st, &err) != OX_OK)
            fail_msg("%s: build failed: %s", p.v[i], err.msg);
        char svg[512], png[512], pdf[512];
        snprintf(svg, sizeof svg, "%s/r%d.svg", tmpdir, i);
        snprintf(png, sizeof png, "%s/r%d.png", tmpdir, i);
        snprintf(pdf, sizeof pdf, "%s/r%d.pdf", tmpdir, i);
        const char *paths[3] = {svg, png, pdf};
        int n = st.nodes <= 300 ? 3 : 2;
        clock_t t0 = clock();
        if (ox_export_render_graph(g, paths, n, &err) != OX_OK)
            fail_msg("%s: render failed: %s", p.v[i], err.msg);
        double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
        ox_export_free_graph(g);
        if (!svg_ok(svg))
            fail_msg("%s: %s is not valid SVG/XML", p.v[i], svg);
        uint32_t w = 0, h = 0;
        if (!png_ok(png, &w, &h))
            fail_msg("%s: %s has no valid PNG header/IHDR (%ux%u)", p.v[i], png, w, h);
        if (n == 3 && !pdf_ok(pdf))
            fail_msg("%s: %s is not a PDF", p.v[i], pdf);
        print_message("%-70s %5d nodes  png %ux%u  %.1fs\n", p.v[i], st.nodes, w, h, secs);
        unlink(svg);
        unlink(png);
        unlink(pdf);
        ox_model_free(m);
        rendered++;
    }
    assert_int_equal(rendered, p.n);
    ox_test_paths_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_all_models),
        cmocka_unit_test(test_render_all_models),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
