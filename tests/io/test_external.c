/* External data: saving splits tensors into a data file and loads back;
 * every attempt to reach outside the model folder is refused; a save never
 * replaces a file the input reads, and copies unchanged bytes exactly. Also
 * the loader's progress callback (ox_load_opts). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <cmocka.h>

#include "onnx.pb-c.h"
#include "onnxscope/io.h"
#include "extmodel.h"
#include "testutil.h"

static char dir[64];

static int setup(void **state)
{
    (void)state;
    strcpy(dir, "/tmp/oxextXXXXXX");
    if (!mkdtemp(dir))
        return -1;
    char p[256];
    snprintf(p, sizeof p, "%s/sub", dir);
    mkdir(p, 0755);
    /* A data file outside the model folder, and 64 bytes inside. */
    snprintf(p, sizeof p, "%s.outside.bin", dir);
    FILE *f = fopen(p, "wb");
    for (int i = 0; i < 64; i++)
        fputc(i, f);
    fclose(f);
    snprintf(p, sizeof p, "%s/sub/w.bin", dir);
    f = fopen(p, "wb");
    for (int i = 0; i < 64; i++)
        fputc(i, f);
    fclose(f);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s.outside.bin'", dir, dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Writes dir/name: a model with one 4x4 float initializer stored externally
 * at (loc, off, len); off/len < 0 leave the key out. */
static void write_model(const char *name, const char *loc, long off, long len)
{
    Onnx__StringStringEntryProto kv[3], *kvp[3];
    char offs[32], lens[32];
    int n = 0;
    onnx__string_string_entry_proto__init(&kv[n]);
    kv[n].key = "location";
    kv[n].value = (char *)loc;
    kvp[n] = &kv[n];
    n++;
    if (off >= 0) {
        snprintf(offs, sizeof offs, "%ld", off);
        onnx__string_string_entry_proto__init(&kv[n]);
        kv[n].key = "offset";
        kv[n].value = offs;
        kvp[n] = &kv[n];
        n++;
    }
    if (len >= 0) {
        snprintf(lens, sizeof lens, "%ld", len);
        onnx__string_string_entry_proto__init(&kv[n]);
        kv[n].key = "length";
        kv[n].value = lens;
        kvp[n] = &kv[n];
        n++;
    }
    int64_t dims[2] = {4, 4};
    Onnx__TensorProto t = ONNX__TENSOR_PROTO__INIT, *tp = &t;
    t.n_dims = 2;
    t.dims = dims;
    t.has_data_type = 1;
    t.data_type = 1;
    t.name = "w";
    t.has_data_location = 1;
    t.data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    t.n_external_data = (size_t)n;
    t.external_data = kvp;
    Onnx__ValueInfoProto out = ONNX__VALUE_INFO_PROTO__INIT, *outp = &out;
    out.name = "w";
    Onnx__GraphProto g = ONNX__GRAPH_PROTO__INIT;
    g.name = "g";
    g.n_initializer = 1;
    g.initializer = &tp;
    g.n_output = 1;
    g.output = &outp;
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
    onnx__model_proto__pack(&m, buf);
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    fwrite(buf, 1, sz, f);
    fclose(f);
    free(buf);
}

static ox_status try_load(const char *name, ox_error *err, ox_model **out)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    memset(err, 0, sizeof *err);
    ox_model *m = NULL;
    ox_status st = ox_load(p, NULL, &m, err);
    if (out)
        *out = m;
    else
        ox_model_free(m);
    return st;
}

static void test_valid_external(void **state)
{
    (void)state;
    write_model("ok.onnx", "sub/w.bin", -1, -1);
    ox_error err;
    ox_model *m;
    assert_int_equal(try_load("ok.onnx", &err, &m), OX_OK);
    ox_value *v = ox_graph_find(m->graph, "w");
    assert_non_null(v);
    assert_non_null(v->init);
    const uint8_t *d = ox_tensor_data(v->init);
    for (int i = 0; i < 64; i++)
        assert_int_equal(d[i], i);
    ox_model_free(m);
}

/* A model whose external data exceeds 2 GiB loads (the data file is sparse:
 * mapping it costs nothing, and it is never read). */
static void test_above_2gib(void **state)
{
    (void)state;
    char p[256];
    snprintf(p, sizeof p, "%s/big.bin", dir);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    assert_int_equal(ftruncate(fileno(f), (off_t)3 << 30), 0);
    fclose(f);
    /* 4x4 floats at an offset beyond 2 GiB, then the whole 3 GiB as bytes. */
    write_model("big.onnx", "big.bin", (2L << 30) + 4096, 64);
    ox_error err;
    ox_model *m;
    assert_int_equal(try_load("big.onnx", &err, &m), OX_OK);
    ox_value *v = ox_graph_find(m->graph, "w");
    assert_int_equal(v->init->nbytes, 64);
    assert_int_equal(((const float *)ox_tensor_data(v->init))[15], 0.0f);
    /* The size beyond the .onnx file is the data file's. */
    assert_true(ox_model_external_bytes(m) == (uint64_t)3 << 30);
    ox_model_free(m);
    const char *bin = ox_test_bin();
    if (bin) {
        char cmd[600], *out = NULL;
        snprintf(cmd, sizeof cmd, "%s info %s/big.onnx", bin, dir);
        assert_int_equal(ox_test_run(cmd, &out), 0);
        if (!strstr(out, " +3.0 GiB external)"))
            fail_msg("info: no '+3.0 GiB external' in:\n%s", out);
        free(out);
        snprintf(cmd, sizeof cmd, "%s info --json %s/big.onnx", bin, dir);
        assert_int_equal(ox_test_run(cmd, &out), 0);
        assert_non_null(strstr(out, "\"external_bytes\": 3221225472"));
        free(out);
    }
    unlink(p);
}

static void test_offset_and_length(void **state)
{
    (void)state;
    ox_error err;
    /* 16 floats need 64 bytes: an offset of 8 leaves only 56. */
    write_model("off.onnx", "sub/w.bin", 8, 64);
    assert_int_equal(try_load("off.onnx", &err, NULL), OX_EMODEL);
    assert_non_null(strstr(err.msg, "outside"));
    write_model("len.onnx", "sub/w.bin", 0, 32);
    assert_int_equal(try_load("len.onnx", &err, NULL), OX_EMODEL);
    assert_non_null(strstr(err.msg, "length"));
    write_model("huge.onnx", "sub/w.bin", 9223372036854775000L, 64);
    assert_int_not_equal(try_load("huge.onnx", &err, NULL), OX_OK);
}

static void test_traversal_refused(void **state)
{
    (void)state;
    ox_error err;
    char abs[256];
    snprintf(abs, sizeof abs, "%s.outside.bin", dir);
    write_model("abs.onnx", abs, -1, -1);
    assert_int_equal(try_load("abs.onnx", &err, NULL), OX_EMODEL);
    assert_non_null(strstr(err.msg, "absolute"));

    const char *base = strrchr(dir, '/') + 1;
    char rel[256];
    snprintf(rel, sizeof rel, "../%s.outside.bin", base);
    write_model("dotdot.onnx", rel, -1, -1);
    assert_int_equal(try_load("dotdot.onnx", &err, NULL), OX_EMODEL);
    assert_non_null(strstr(err.msg, ".."));

    write_model("dotdot2.onnx", "sub/../../etc/passwd", -1, -1);
    assert_int_equal(try_load("dotdot2.onnx", &err, NULL), OX_EMODEL);

    write_model("backslash.onnx", "sub\\..\\..\\x", -1, -1);
    assert_int_not_equal(try_load("backslash.onnx", &err, NULL), OX_OK);

    /* A symlink inside the folder that points outside it. */
    char link[256];
    snprintf(link, sizeof link, "%s/sub/escape.bin", dir);
    assert_int_equal(symlink(abs, link), 0);
    write_model("symlink.onnx", "sub/escape.bin", -1, -1);
    assert_int_equal(try_load("symlink.onnx", &err, NULL), OX_EMODEL);
    assert_non_null(strstr(err.msg, "outside the model folder"));

    write_model("missing.onnx", "sub/nope.bin", -1, -1);
    assert_int_equal(try_load("missing.onnx", &err, NULL), OX_EIO);
    assert_non_null(strstr(err.msg, "nope.bin"));

    write_model("empty.onnx", "", -1, -1);
    assert_int_not_equal(try_load("empty.onnx", &err, NULL), OX_OK);
}

/* A FIFO as the model or as its external data is refused at once: opening
 * one for reading would wait for a writer forever (alarm() turns a hang
 * into a failure). Other readers of user-named files share the rule. */
static void test_fifo_refused(void **state)
{
    (void)state;
    alarm(60);
    ox_error err;
    char p[256];
    snprintf(p, sizeof p, "%s/fifo.onnx", dir);
    assert_int_equal(mkfifo(p, 0600), 0);
    assert_int_equal(try_load("fifo.onnx", &err, NULL), OX_EIO);
    assert_non_null(strstr(err.msg, "not a regular file (a FIFO)"));
    snprintf(p, sizeof p, "%s/sub/pipe.bin", dir);
    assert_int_equal(mkfifo(p, 0600), 0);
    write_model("pipe.onnx", "sub/pipe.bin", -1, -1);
    assert_int_equal(try_load("pipe.onnx", &err, NULL), OX_EIO);
    assert_non_null(strstr(err.msg, "not a regular file"));
    ox_tensor *t = NULL;
    assert_int_equal(ox_tensor_load_pb(p, &t, &err), OX_EIO);
    memset(&err, 0, sizeof err);
    assert_int_equal(ox_open_regular(dir, &err), -1);
    assert_non_null(strstr(err.msg, "a folder"));
    alarm(0);
}

/* "sub/w.bin\0zz": protobuf-c would hand us "sub/w.bin" and we would read
 * a file the location does not name; refused instead. */
static void test_nul_in_location(void **state)
{
    (void)state;
    ox_error err;
    write_model("nul.onnx", "sub/w.binXzz", -1, -1);
    char p[256];
    snprintf(p, sizeof p, "%s/nul.onnx", dir);
    FILE *f = fopen(p, "r+b");
    assert_non_null(f);
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf, f);
    char *x = memmem(buf, n, "w.binXzz", 8);
    assert_non_null(x);
    x[5] = 0;
    fseek(f, 0, SEEK_SET);
    assert_int_equal(fwrite(buf, 1, n, f), n);
    fclose(f);
    assert_int_equal(try_load("nul.onnx", &err, NULL), OX_EPARSE);
    assert_non_null(strstr(err.msg, "NUL"));
    /* The same file without the NUL loads. */
    write_model("nonul.onnx", "sub/w.bin", -1, -1);
    assert_int_equal(try_load("nonul.onnx", &err, NULL), OX_OK);
}

static void test_save_external_roundtrip(void **state)
{
    (void)state;
    ox_error err;
    ox_model *m;
    write_model("src.onnx", "sub/w.bin", -1, -1);
    assert_int_equal(try_load("src.onnx", &err, &m), OX_OK);
    char out[256];
    snprintf(out, sizeof out, "%s/copy.onnx", dir);
    ox_save_opts so = {.force_external = true, .external_threshold = 16};
    assert_int_equal(ox_save(m, out, &so, &err), OX_OK);
    char data[300];
    snprintf(data, sizeof data, "%s/copy.onnx.data", dir);
    struct stat st;
    assert_int_equal(stat(data, &st), 0);
    assert_int_equal(st.st_size, 64);
    ox_model *b;
    assert_int_equal(try_load("copy.onnx", &err, &b), OX_OK);
    assert_true(ox_model_equal(m, b, &err));
    /* The input is never overwritten unless asked. */
    char src[256];
    snprintf(src, sizeof src, "%s/src.onnx", dir);
    assert_int_equal(ox_save(m, src, NULL, &err), OX_EIO);
    ox_model_free(m);
    ox_model_free(b);
}

static void write_model_n(const char *name, const char *loc, int n, const long *offs,
                          const long *lens)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    assert_true(ox_test_write_ext_model(p, loc, n, offs, lens));
}

/* Fills path with n pseudo-random bytes (seed picks the sequence). */
static void write_random(const char *path, size_t n, uint32_t seed)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        fputc((int)(seed >> 16) & 0xff, f);
    }
    fclose(f);
}

static uint8_t *read_all(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(len > 0 ? (size_t)len : 1);
    assert_int_equal(fread(b, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return b;
}

static bool same_bytes(const char *path, const uint8_t *want, size_t n)
{
    size_t have = 0;
    uint8_t *b = read_all(path, &have);
    bool ok = b && have == n && memcmp(b, want, n) == 0;
    free(b);
    return ok;
}

static void pathf(char *p, size_t n, const char *name)
{
    snprintf(p, n, "%s/%s", dir, name);
}

/* The three ways `optimize -o OUT` destroyed its input, plus links to the
 * same files: each save is refused before anything is written. */
static void test_save_never_replaces_input_files(void **state)
{
    (void)state;
    char data[512], model[512], out[512], tmp[600];
    long offs[2] = {0, 400}, lens[2] = {100, 100};
    pathf(data, sizeof data, "b.onnx.data");
    write_random(data, 800, 3);
    size_t n_data;
    uint8_t *data0 = read_all(data, &n_data);
    write_model_n("a.onnx", "b.onnx.data", 2, offs, lens);
    pathf(model, sizeof model, "a.onnx");
    size_t n_model;
    uint8_t *model0 = read_all(model, &n_model);
    ox_error err = {0};
    ox_model *m = NULL;
    assert_int_equal(ox_load(model, NULL, &m, &err), OX_OK);
    /* Small tensors would go inline: force the external file. */
    ox_save_opts so = {.force_external = true, .external_threshold = 16};

    /* 1: OUT.data is the input's external data file. */
    pathf(out, sizeof out, "b.onnx");
    assert_int_equal(ox_save(m, out, &so, &err), OX_EIO);
    assert_non_null(strstr(err.msg, "b.onnx.data"));
    assert_int_equal(ox_save_check_targets(m, out, &so, &err), OX_EIO);
    assert_int_not_equal(access(out, F_OK), 0);
    /* 2: OUT is the input's external data file. */
    assert_int_equal(ox_save(m, data, NULL, &err), OX_EIO);
    assert_int_equal(ox_save(m, data, &so, &err), OX_EIO);
    /* Through a symbolic link and a hard link to it. */
    pathf(out, sizeof out, "link.bin");
    assert_int_equal(symlink("b.onnx.data", out), 0);
    assert_int_equal(ox_save(m, out, NULL, &err), OX_EIO);
    pathf(out, sizeof out, "hard.onnx.data");
    assert_int_equal(link(data, out), 0);
    pathf(out, sizeof out, "hard.onnx");
    assert_int_equal(ox_save(m, out, &so, &err), OX_EIO);
    /* The input model itself, even when asked to overwrite it, may not
     * lose the data file it reads. */
    so.overwrite_input = true;
    so.external_name = "b.onnx.data";
    assert_int_equal(ox_save(m, model, &so, &err), OX_EIO);
    so.overwrite_input = false;
    so.external_name = NULL;
    ox_model_free(m);

    /* 3: OUT.data is the input model (a model named m.data). */
    long offs1[1] = {0}, lens1[1] = {100};
    pathf(tmp, sizeof tmp, "w.bin");
    write_random(tmp, 400, 5);
    write_model_n("m.data", "w.bin", 1, offs1, lens1);
    pathf(model, sizeof model, "m.data");
    size_t n_m2;
    uint8_t *m2 = read_all(model, &n_m2);
    assert_int_equal(ox_load(model, NULL, &m, &err), OX_OK);
    pathf(out, sizeof out, "m");
    ox_error_clear(&err);
    assert_int_equal(ox_save(m, out, &so, &err), OX_EIO);
    assert_non_null(strstr(err.msg, "it is the input model"));
    assert_int_not_equal(access(out, F_OK), 0);
    /* A data file renamed away after loading keeps its name reserved. */
    char moved[512];
    pathf(moved, sizeof moved, "w.moved");
    assert_int_equal(rename(tmp, moved), 0);
    so.external_name = "w.bin";
    pathf(out, sizeof out, "fresh.onnx");
    assert_int_equal(ox_save(m, out, &so, &err), OX_EIO);
    so.external_name = NULL;
    /* A free name still saves, copying from the mapping. */
    assert_int_equal(ox_save(m, out, &so, &err), OX_OK);
    assert_int_equal(rename(moved, tmp), 0);
    ox_model_free(m);

    /* Nothing the input reads changed. */
    pathf(model, sizeof model, "a.onnx");
    assert_true(same_bytes(model, model0, n_model));
    assert_true(same_bytes(data, data0, n_data));
    pathf(model, sizeof model, "m.data");
    assert_true(same_bytes(model, m2, n_m2));
    assert_int_equal(try_load("a.onnx", &err, NULL), OX_OK);
    assert_int_equal(try_load("m.data", &err, NULL), OX_OK);
    free(data0);
    free(model0);
    free(m2);
}

/* Saves dir/src_name (tensors at offs/lens in its data file `data`) to
 * out and checks every saved tensor against the source file's bytes. */
static void check_copied(const char *src_model, const char *data, const long *offs,
                         const long *lens, int n, const char *out)
{
    ox_error err = {0};
    ox_model *m = NULL;
    assert_int_equal(ox_load(src_model, NULL, &m, &err), OX_OK);
    size_t n_src;
    uint8_t *src = read_all(data, &n_src);
    assert_non_null(src);
    /* Replace the source file after loading: the save must still write the
     * bytes that were loaded (the mapping), not the new file's. */
    char other[600];
    snprintf(other, sizeof other, "%s.other", data);
    write_random(other, n_src, 99);
    assert_int_equal(rename(other, data), 0);
    ox_save_opts so = {.force_external = true, .external_threshold = 16};
    assert_int_equal(ox_save(m, out, &so, &err), OX_OK);
    ox_model_free(m);

    char out_data[600];
    snprintf(out_data, sizeof out_data, "%s.data", out);
    size_t n_out;
    uint8_t *od = read_all(out_data, &n_out);
    assert_non_null(od);
    ox_model *b = NULL;
    assert_int_equal(ox_load(out, NULL, &b, &err), OX_OK);
    for (int i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "t%d", i);
        ox_value *v = ox_graph_find(b->graph, name);
        assert_non_null(v);
        assert_non_null(v->init->external);
        int64_t off = v->init->external->offset;
        size_t len = (size_t)lens[i] * 4;
        assert_true(off >= 0 && (size_t)off + len <= n_out);
        assert_memory_equal(od + off, src + offs[i], len);
        assert_memory_equal(ox_tensor_data(v->init), src + offs[i], len);
    }
    ox_model_free(b);
    free(od);
    free(src);
}

/* Large unchanged tensors are copied file to file (copy_file_range or its
 * fallbacks); the bytes must be exactly the source's, at any offset. */
static void test_save_streams_exact_bytes(void **state)
{
    (void)state;
    /* Unaligned offsets, sizes above and below the file-copy threshold. */
    long offs[3] = {12, 400100, 700164}, lens[3] = {100000, 75000, 10};
    char data[512], model[512], out[512];
    pathf(data, sizeof data, "stream.bin");
    write_random(data, 1000000, 11);
    write_model_n("stream.onnx", "stream.bin", 3, offs, lens);
    pathf(model, sizeof model, "stream.onnx");
    pathf(out, sizeof out, "streamed.onnx");
    check_copied(model, data, offs, lens, 3, out);

    /* Across file systems (tmpfs to the test folder): other kernel paths. */
    struct stat a, b;
    char shm[] = "/dev/shm/oxstreamXXXXXX";
    if (stat("/dev/shm", &a) != 0 || stat(dir, &b) != 0 || a.st_dev == b.st_dev ||
        !mkdtemp(shm)) {
        print_message("cross-filesystem copy skipped: no separate /dev/shm\n");
        return;
    }
    char saved_dir[64];
    snprintf(saved_dir, sizeof saved_dir, "%s", dir);
    snprintf(dir, sizeof dir, "%s", shm);
    pathf(data, sizeof data, "stream.bin");
    write_random(data, 1000000, 12);
    write_model_n("stream.onnx", "stream.bin", 3, offs, lens);
    pathf(model, sizeof model, "stream.onnx");
    snprintf(dir, sizeof dir, "%s", saved_dir);
    pathf(out, sizeof out, "streamed_xfs.onnx");
    check_copied(model, data, offs, lens, 3, out);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", shm);
    assert_int_equal(system(cmd), 0);
}

static void *drain_fifo(void *arg)
{
    int fd = open((const char *)arg, O_RDONLY);
    size_t total = 0;
    char buf[4096];
    ssize_t n;
    while (fd >= 0 && (n = read(fd, buf, sizeof buf)) > 0)
        total += (size_t)n;
    if (fd >= 0)
        close(fd);
    return (void *)total;
}

/* Devices and FIFOs are written in place, never replaced; a FIFO nobody
 * reads is an error at once. */
static void test_save_special_targets(void **state)
{
    (void)state;
    ox_error err = {0};
    ox_model *m = NULL;
    write_model("plain.onnx", "sub/w.bin", -1, -1);
    ox_error_clear(&err);
    assert_int_equal(try_load("plain.onnx", &err, &m), OX_OK);
    char p[512];
    struct stat st;

    pathf(p, sizeof p, "fifo_target.onnx");
    assert_int_equal(mkfifo(p, 0644), 0);
    /* Tensors inline (the model has external data: keep them inline). */
    ox_save_opts inl = {.external_threshold = (size_t)1 << 40};
    assert_int_equal(ox_save(m, p, &inl, &err), OX_EIO);
    assert_non_null(strstr(err.msg, "FIFO"));
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, drain_fifo, p), 0);
    ox_status s = OX_EIO;
    /* The reader may not have opened yet: retry briefly. */
    for (int i = 0; i < 2000 && s != OX_OK; i++) {
        s = ox_save(m, p, &inl, &err);
        if (s != OX_OK)
            usleep(1000);
    }
    assert_int_equal(s, OX_OK);
    void *got;
    pthread_join(th, &got);
    void *buf = NULL;
    size_t len = 0;
    assert_int_equal(ox_save_buffer(m, &buf, &len, &err), OX_OK);
    free(buf);
    assert_int_equal((size_t)got, len);
    assert_int_equal(lstat(p, &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
    /* External data cannot go next to a FIFO. */
    ox_save_opts ext = {.force_external = true, .external_threshold = 16};
    assert_int_equal(ox_save(m, p, &ext, &err), OX_EIO);

    pathf(p, sizeof p, "null.onnx");
    if (mknod(p, S_IFCHR | 0666, makedev(1, 3)) != 0) {
        print_message("device targets skipped: mknod: %s (needs root)\n", strerror(errno));
        ox_model_free(m);
        return;
    }
    assert_int_equal(ox_save(m, p, &inl, &err), OX_OK);
    assert_int_equal(lstat(p, &st), 0);
    assert_true(S_ISCHR(st.st_mode));
    ox_error_clear(&err);
    assert_int_equal(ox_save(m, p, &ext, &err), OX_EIO);
    assert_non_null(strstr(err.msg, "regular file"));
    pathf(p, sizeof p, "null.onnx.data");
    assert_int_not_equal(access(p, F_OK), 0);
    /* /dev/full's numbers: a write error is reported, nothing replaced. */
    pathf(p, sizeof p, "full.onnx");
    assert_int_equal(mknod(p, S_IFCHR | 0666, makedev(1, 7)), 0);
    ox_error_clear(&err);
    assert_int_equal(ox_save(m, p, &inl, &err), OX_EIO);
    assert_non_null(strstr(err.msg, strerror(ENOSPC)));
    assert_int_equal(lstat(p, &st), 0);
    assert_true(S_ISCHR(st.st_mode));
    ox_model_free(m);
}

/* ---- ox_load_opts.progress ------------------------------------------------ */

typedef struct progress_log {
    double v[4096];
    int n;
} progress_log;

static void on_progress(void *ctx, double frac)
{
    progress_log *l = ctx;
    if (l->n < 4096)
        l->v[l->n++] = frac;
}

/* The callback sees 0 first, 1 last, never a step back, and intermediate
 * values while a model of many initializers and nodes is converted. */
static void test_load_progress(void **state)
{
    (void)state;
    ox_model *m = ox_model_new();
    assert_non_null(m);
    ox_model_set_opset(m, "", 17);
    ox_graph *g = m->graph;
    int64_t d = 64;
    ox_value *prev = ox_graph_value(g, "x");
    prev->type = ox_type_new_tensor(OX_DT_FLOAT, 1, &d);
    ox_graph_add_input(g, prev);
    for (int i = 0; i < 500; i++) {
        char name[16];
        snprintf(name, sizeof name, "w%d", i);
        ox_value *w = ox_graph_value(g, name);
        assert_int_equal(ox_graph_set_initializer(g, w, ox_tensor_new(OX_DT_FLOAT, 1, &d)), OX_OK);
        snprintf(name, sizeof name, "h%d", i);
        ox_value *in[2] = {prev, w}, *out = ox_graph_value(g, name);
        assert_non_null(ox_node_new(g, "Add", "", name, 2, in, 1, &out));
        prev = out;
    }
    ox_graph_add_output(g, prev);
    char p[256];
    snprintf(p, sizeof p, "%s/progress.onnx", dir);
    ox_error err = {0};
    assert_int_equal(ox_save(m, p, NULL, &err), OX_OK);
    ox_model_free(m);

    static progress_log log;
    log.n = 0;
    ox_load_opts o = {.progress = on_progress, .progress_ctx = &log};
    assert_int_equal(ox_load(p, &o, &m, &err), OX_OK);
    assert_int_equal(m->graph->n_nodes, 500);
    ox_model_free(m);
    assert_true(log.n > 20 && log.n < 1000);
    assert_true(log.v[0] == 0.0);
    assert_true(log.v[log.n - 1] == 1.0);
    int mid = 0;
    for (int i = 1; i < log.n; i++) {
        assert_true(log.v[i] >= log.v[i - 1]);
        mid += log.v[i] > 0.2 && log.v[i] < 1.0;
    }
    assert_true(mid > 10);

    /* A file that fails to load never reports completion. */
    snprintf(p, sizeof p, "%s/garbage.onnx", dir);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    fputs("not a model at all", f);
    fclose(f);
    log.n = 0;
    assert_int_not_equal(ox_load(p, &o, &m, &err), OX_OK);
    for (int i = 0; i < log.n; i++)
        assert_true(log.v[i] < 1.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_external),
        cmocka_unit_test(test_offset_and_length),
        cmocka_unit_test(test_above_2gib),
        cmocka_unit_test(test_traversal_refused),
        cmocka_unit_test(test_save_external_roundtrip),
        cmocka_unit_test(test_fifo_refused),
        cmocka_unit_test(test_nul_in_location),
        cmocka_unit_test(test_save_never_replaces_input_files),
        cmocka_unit_test(test_save_streams_exact_bytes),
        cmocka_unit_test(test_save_special_targets),
        cmocka_unit_test(test_load_progress),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
