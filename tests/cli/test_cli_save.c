/* `optimize -o` through the binary: it never replaces a file the input
 * reads (exit 3, input intact), writes devices in place, and leaves no
 * temporary file behind when killed by SIGTERM or SIGINT mid-save. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "extmodel.h"
#include "testutil.h"

static char dir[64];

static int setup(void **state)
{
    (void)state;
    strcpy(dir, "/tmp/oxclisaveXXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static bool have_bin(void)
{
    const char *b = ox_test_bin();
    if (!b || access(b, X_OK) != 0) {
        print_message("skipped: ONNXSCOPE_BIN not set or not executable\n");
        return false;
    }
    return true;
}

/* Runs `onnxscope ARGS` in dir; returns the exit code, output in *out. */
static int run_in_dir(const char *args, char **out)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s", dir, ox_test_bin(), args);
    return ox_test_run(cmd, out);
}

static void write_random(const char *name, size_t n, uint32_t seed)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        fputc((int)(seed >> 16) & 0xff, f);
    }
    fclose(f);
}

static void ext_model(const char *name, const char *loc, int n, const long *offs,
                      const long *lens)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    assert_true(ox_test_write_ext_model(p, loc, n, offs, lens));
}

/* Contents of dir/name (malloc'ed, *n bytes), NULL when missing. */
static uint8_t *slurp(const char *name, size_t *n)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)len + 1);
    assert_int_equal(fread(b, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return b;
}

static void assert_unchanged(const char *name, const uint8_t *want, size_t n)
{
    size_t have;
    uint8_t *b = slurp(name, &have);
    assert_non_null(b);
    assert_int_equal(have, n);
    assert_memory_equal(b, want, n);
    free(b);
}

static bool exists(const char *name)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

static void test_refuses_files_the_input_reads(void **state)
{
    (void)state;
    if (!have_bin())
        skip();
    /* 4000-byte tensors: above the 1 KiB external threshold. */
    long offs[2] = {0, 4000}, lens[2] = {1000, 1000};
    write_random("b.onnx.data", 8000, 1);
    ext_model("a.onnx", "b.onnx.data", 2, offs, lens);
    write_random("w.bin", 4000, 2);
    ext_model("m.data", "w.bin", 1, offs, lens);
    size_t na, nd, nm;
    uint8_t *a = slurp("a.onnx", &na), *d = slurp("b.onnx.data", &nd),
            *m = slurp("m.data", &nm);
    char *out = NULL;

    /* 1: OUT.data would be the input's data file. */
    assert_int_equal(run_in_dir("optimize a.onnx -o b.onnx", &out), 3);
    assert_true(strncmp(out, "onnxscope: b.onnx: ", 19) == 0);
    assert_non_null(strstr(out, "b.onnx.data"));
    assert_non_null(strstr(out, "reads external data"));
    assert_false(exists("b.onnx"));
    free(out);
    /* 2: OUT is the input's data file. */
    assert_int_equal(run_in_dir("optimize a.onnx -o b.onnx.data", &out), 3);
    free(out);
    /* 3: OUT.data would be the input model (named m.data). */
    assert_int_equal(run_in_dir("optimize m.data -o m", &out), 3);
    assert_non_null(strstr(out, "input model"));
    assert_false(exists("m"));
    free(out);
    /* And the model itself, as before. */
    assert_int_equal(run_in_dir("optimize a.onnx -o a.onnx", &out), 3);
    free(out);

    assert_unchanged("a.onnx", a, na);
    assert_unchanged("b.onnx.data", d, nd);
    assert_unchanged("m.data", m, nm);
    assert_int_equal(run_in_dir("check a.onnx", &out), 0);
    free(out);
    assert_int_equal(run_in_dir("check m.data", &out), 0);
    free(out);
    /* A free name works, with its own data file. */
    assert_int_equal(run_in_dir("optimize a.onnx -o c.onnx", &out), 0);
    free(out);
    assert_true(exists("c.onnx.data"));
    assert_int_equal(run_in_dir("check c.onnx", &out), 0);
    free(out);
    free(a);
    free(d);
    free(m);
}

/* `run --save-outputs DIR` names its files itself: it must not write over
 * a model that happens to be DIR/output_0.pb; `bench --trace` likewise. */
static void test_run_outputs_spare_the_model(void **state)
{
    (void)state;
    if (!have_bin())
        skip();
    char cmd[1024], *out = NULL;
    snprintf(cmd, sizeof cmd, "cp '%s/samples/tiny_cnn.onnx' '%s/output_0.pb'",
             ox_test_source(), dir);
    assert_int_equal(system(cmd), 0);
    size_t n0;
    uint8_t *m0 = slurp("output_0.pb", &n0);
    assert_int_equal(run_in_dir("run output_0.pb --random --save-outputs .", &out), 3);
    assert_non_null(strstr(out, "input model"));
    free(out);
    assert_unchanged("output_0.pb", m0, n0);
    /* Nor `bench --trace` over the model it times. */
    assert_int_equal(run_in_dir("bench output_0.pb --iters 1 --trace output_0.pb", &out), 3);
    assert_non_null(strstr(out, "input model"));
    free(out);
    assert_unchanged("output_0.pb", m0, n0);
    free(m0);
}

static void test_device_target(void **state)
{
    (void)state;
    if (!have_bin())
        skip();
    char p[256], args[1024], *out = NULL;
    snprintf(p, sizeof p, "%s/nulldev", dir);
    if (mknod(p, S_IFCHR | 0666, makedev(1, 3)) != 0) {
        print_message("skipped: mknod: %s (needs root)\n", strerror(errno));
        skip();
    }
    snprintf(args, sizeof args, "optimize '%s/samples/tiny_cnn.onnx' -o nulldev",
             ox_test_source());
    assert_int_equal(run_in_dir(args, &out), 0);
    free(out);
    struct stat st;
    assert_int_equal(lstat(p, &st), 0);
    assert_true(S_ISCHR(st.st_mode));
    assert_int_equal(major(st.st_rdev), 1);
    assert_int_equal(minor(st.st_rdev), 3);
    /* A model with external data cannot go to a device: refused, and no
     * nulldev.data appears. */
    long offs[1] = {0}, lens[1] = {1000};
    write_random("e.bin", 4000, 3);
    ext_model("e.onnx", "e.bin", 1, offs, lens);
    assert_int_equal(run_in_dir("optimize e.onnx -o nulldev", &out), 3);
    assert_non_null(strstr(out, "regular file"));
    free(out);
    assert_false(exists("nulldev.data"));
    assert_int_equal(lstat(p, &st), 0);
    assert_true(S_ISCHR(st.st_mode));
}

/* Names in dir containing ".tmp". */
static int count_temps(void)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strstr(e->d_name, ".tmp"))
            n++;
    if (d)
        closedir(d);
    return n;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Starts a save of 2 GiB (a sparse source: cheap to make, seconds to
 * copy), signals it once its temporary files exist, and checks they are
 * gone and the process died by the signal. */
static void kill_mid_save(int sig)
{
    char args[512];
    snprintf(args, sizeof args, "%s/big.onnx", dir);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* A test runner may start us with SIGINT ignored; the binary keeps
         * ignored signals ignored, so give it the default. */
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        int nul = open("/dev/null", O_WRONLY);
        dup2(nul, 1);
        dup2(nul, 2);
        char outp[256];
        snprintf(outp, sizeof outp, "%s/out.onnx", dir);
        execl(ox_test_bin(), ox_test_bin(), "optimize", args, "-o", outp, (char *)NULL);
        _exit(127);
    }
    double t0 = now_s();
    int status = 0;
    bool signalled = false, exited = false;
    while (now_s() - t0 < 120) {
        if (waitpid(pid, &status, WNOHANG) == pid) {
            exited = true;
            break;
        }
        if (!signalled && count_temps() >= 2) {
            kill(pid, sig);
            signalled = true;
        }
        usleep(1000);
    }
    if (!signalled && exited && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        /* A file system that clones extents copies 2 GiB at once. */
        print_message("skipped: the save finished before it could be signalled\n");
        skip();
    }
    if (!signalled) {
        if (!exited) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
        }
        fail_msg("the save failed or hung before its temporary files were seen");
    }
    if (!exited) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        fail_msg("the signalled save did not end");
    }
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), sig);
    assert_int_equal(count_temps(), 0);
    assert_false(exists("out.onnx"));
    assert_false(exists("out.onnx.data"));
}

static void test_signal_removes_temp_files(void **state)
{
    (void)state;
    if (!have_bin())
        skip();
    char p[256];
    snprintf(p, sizeof p, "%s/big.bin", dir);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)2 << 30), 0);
    close(fd);
    long offs[1] = {0}, lens[1] = {(2L << 30) / 4};
    ext_model("big.onnx", "big.bin", 1, offs, lens);
    kill_mid_save(SIGTERM);
    kill_mid_save(SIGINT);
    unlink(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refuses_files_the_input_reads),
        cmocka_unit_test(test_run_outputs_spare_the_model),
        cmocka_unit_test(test_device_target),
        cmocka_unit_test(test_signal_removes_temp_files),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
