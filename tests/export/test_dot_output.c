/* `onnxscope dot -o` on what is not a plain new file: devices and FIFOs are
 * written in place (never replaced), links are kept, and a full disk is
 * "No space left on device" with exit 3 and no temporary file left, for
 * every format. Uses samples/tiny_cnn.onnx; the full-disk case mounts a
 * small tmpfs (skipped where mounting is not allowed). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <cmocka.h>

#include "testutil.h"

static char dir[64];
static char mnt[128];
static bool mounted;
static const char *formats[] = {"dot", "svg", "png", "pdf"};

static int setup(void **state)
{
    (void)state;
    strcpy(dir, "/tmp/oxdotoutXXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    if (mounted)
        umount(mnt);
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

/* Under LeakSanitizer, fontconfig (loaded by Graphviz for SVG/PNG/PDF)
 * leaks at exit and turns every exit code into 1: these tests check files
 * and exit codes, not leaks, so leak detection is off for the binary. */
#define NO_LSAN "LSAN_OPTIONS=detect_leaks=0 "

static int dot_to(const char *target, char **out)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, NO_LSAN "'%s' dot '%s/samples/tiny_cnn.onnx' -o '%s'",
             ox_test_bin(), ox_test_source(), target);
    return ox_test_run(cmd, out);
}

static int count_temps(const char *d)
{
    DIR *dp = opendir(d);
    int n = 0;
    struct dirent *e;
    while (dp && (e = readdir(dp)))
        if (strstr(e->d_name, ".tmp"))
            n++;
    if (dp)
        closedir(dp);
    return n;
}

static void test_device_targets(void **state)
{
    (void)state;
    if (!have_bin())
        skip();
    char p[256], *out = NULL;
    struct stat st;
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s/null.%s", dir, formats[i]);
        if (mknod(p, S_IFCHR | 0666, makedev(1, 3)) != 0) {
            print_message("skipped: mknod: %s (needs root)\n", strerror(errno));
            skip();
        }
        assert_int_equal(dot_to(p, &out), 0);
        free(out);
        assert_int_equal(lstat(p, &st), 0);
        assert_true(S_ISCHR(st.st_mode));
        /* /dev/full's numbers: the write error, exit 3, still a device. */
        snprintf(p, sizeof p, "%s/full.%s", dir, formats[i]);
        assert_int_equal(mknod(p, S_IFCHR | 0666, makedev(1, 7)), 0);
        assert_int_equal(dot_to(p, &out), 3);
        assert_non_null(strstr(out, "No space left on device"));
        free(out);
        assert_int_equal(lstat(p, &st), 0);
        assert_true(S_ISCHR(st.st_mode));
    }
    assert_int_equal(count_temps(dir), 0);
}

static void test_fifo_and_link_targets(void **state)
{
    (void)state;
    if (!have_bin())
        skip();
    char p[256], got[300], cmd[2048], *out = NULL;
    struct stat st;
    snprintf(p, sizeof p, "%s/pipe.dot", dir);
    assert_int_equal(mkfifo(p, 0644), 0);
    /* Nobody reads: an error at once, not a hang. */
    assert_int_equal(dot_to(p, &out), 3);
    assert_non_null(strstr(out, "FIFO"));
    free(out);
    /* With a reader the DOT text flows through. */
    snprintf(got, sizeof got, "%s/got.txt", dir);
    snprintf(cmd, sizeof cmd,
             "cat '%s' > '%s' & sleep 0.3; " NO_LSAN "'%s' dot '%s/samples/tiny_cnn.onnx' -o '%s'; "
             "r=$?; wait; exit $r",
             p, got, ox_test_bin(), ox_test_source(), p);
    assert_int_equal(ox_test_run(cmd, &out), 0);
    free(out);
    FILE *f = fopen(got, "r");
    assert_non_null(f);
    char head[64] = "";
    assert_non_null(fgets(head, sizeof head, f));
    fclose(f);
    assert_non_null(strstr(head, "digraph"));
    assert_int_equal(lstat(p, &st), 0);
    assert_true(S_ISFIFO(st.st_mode));

    /* A symbolic link stays a link; its target gets the file, even when it
     * does not exist yet. */
    char link[256], real[256];
    snprintf(link, sizeof link, "%s/link.svg", dir);
    snprintf(real, sizeof real, "%s/real.svg", dir);
    assert_int_equal(symlink("real.svg", link), 0);
    assert_int_equal(dot_to(link, &out), 0);
    free(out);
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_int_equal(stat(real, &st), 0);
    assert_true(S_ISREG(st.st_mode) && st.st_size > 0);
    /* A directory is refused. */
    assert_int_equal(dot_to(dir, &out), 2); /* no extension: usage */
    free(out);
    snprintf(p, sizeof p, "%s/adir.svg", dir);
    assert_int_equal(mkdir(p, 0755), 0);
    assert_int_equal(dot_to(p, &out), 3);
    free(out);
}

/* A model file named like an export (x.svg) is still the input: an export
 * over it, or over the --diff model, is refused and both stay models. */
static void test_never_over_the_input(void **state)
{
    (void)state;
    if (!have_bin())
        skip();
    char model[256], cmd[2048], *out = NULL;
    snprintf(model, sizeof model, "%s/model.svg", dir);
    snprintf(cmd, sizeof cmd, "cp '%s/samples/tiny_cnn.onnx' '%s'", ox_test_source(), model);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, NO_LSAN "'%s' dot '%s' -o '%s'", ox_test_bin(), model, model);
    assert_int_equal(ox_test_run(cmd, &out), 3);
    assert_non_null(strstr(out, "input model"));
    free(out);
    snprintf(cmd, sizeof cmd, NO_LSAN "'%s' dot '%s/samples/tiny_cnn.onnx' --diff '%s' -o '%s'",
             ox_test_bin(), ox_test_source(), model, model);
    assert_int_equal(ox_test_run(cmd, &out), 3);
    free(out);
    snprintf(cmd, sizeof cmd, "'%s' check '%s'", ox_test_bin(), model);
    assert_int_equal(ox_test_run(cmd, &out), 0);
    free(out);
}

static void test_full_disk(void **state)
{
    (void)state;
    if (!have_bin())
        skip();
    snprintf(mnt, sizeof mnt, "%s/full", dir);
    assert_int_equal(mkdir(mnt, 0755), 0);
    if (mount("tmpfs", mnt, "tmpfs", 0, "size=64k") != 0) {
        print_message("skipped: cannot mount a tmpfs to fill: %s\n", strerror(errno));
        skip();
    }
    mounted = true;
    /* Fill it: every later write fails, while creating names still works. */
    char p[256];
    snprintf(p, sizeof p, "%s/filler", mnt);
    int fd = open(p, O_WRONLY | O_CREAT, 0644);
    assert_true(fd >= 0);
    char block[4096] = {0};
    while (write(fd, block, sizeof block) > 0)
        ;
    close(fd);
    for (int i = 0; i < 4; i++) {
        char target[300], *out = NULL;
        snprintf(target, sizeof target, "%s/x.%s", mnt, formats[i]);
        assert_int_equal(dot_to(target, &out), 3);
        assert_non_null(strstr(out, "No space left on device"));
        assert_non_null(strstr(out, target));
        free(out);
        assert_int_not_equal(access(target, F_OK), 0);
        assert_int_equal(count_temps(mnt), 0);
    }
    umount(mnt);
    mounted = false;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_device_targets),
        cmocka_unit_test(test_fifo_and_link_targets),
        cmocka_unit_test(test_never_over_the_input),
        cmocka_unit_test(test_full_disk),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
