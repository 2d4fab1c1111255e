/*
 * fsmeta: create, stat and unlink many small files, fs_mark style, timing each phase.
 * Used by scripts/bench-mount.sh (compiled there with cc; no dependency beyond libc).
 *
 * usage: fsmeta DIR FILES BYTES DIRS
 *   Makes DIRS subdirectories d0..d(DIRS-1) of DIR (which must exist and be empty),
 *   then, spreading FILES files over them round-robin:
 *     create  open(O_CREAT|O_EXCL|O_WRONLY), write BYTES bytes, close (no fsync)
 *     stat    stat(2) of every file, in creation order
 *     unlink  unlink(2) of every file, in creation order, then rmdir of the directories
 *   and prints one line per phase: "PHASE SECONDS" (wall clock, CLOCK_MONOTONIC).
 * Exits 1 with one line on stderr at the first failing call.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void fail(const char *what, const char *path) {
    fprintf(stderr, "fsmeta: %s %s: %s\n", what, path, strerror(errno));
    exit(1);
}

static void file_path(char *buf, size_t len, const char *dir, long i, long dirs) {
    snprintf(buf, len, "%s/d%ld/f%08ld", dir, i % dirs, i);
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: fsmeta DIR FILES BYTES DIRS\n");
        return 2;
    }
    const char *dir = argv[1];
    long files = atol(argv[2]), bytes = atol(argv[3]), dirs = atol(argv[4]);
    if (files < 1 || bytes < 0 || bytes > 1 << 20 || dirs < 1) {
        fprintf(stderr, "fsmeta: FILES >= 1, 0 <= BYTES <= 1 MiB, DIRS >= 1\n");
        return 2;
    }
    char *data = malloc(bytes ? (size_t)bytes : 1);
    if (!data) {
        fprintf(stderr, "fsmeta: out of memory\n");
        return 1;
    }
    for (long i = 0; i < bytes; i++) data[i] = (char)('a' + i % 26);
    char path[4096];
    for (long d = 0; d < dirs; d++) {
        snprintf(path, sizeof path, "%s/d%ld", dir, d);
        if (mkdir(path, 0755) != 0) fail("mkdir", path);
    }

    double t0 = now();
    for (long i = 0; i < files; i++) {
        file_path(path, sizeof path, dir, i, dirs);
        int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
        if (fd < 0) fail("create", path);
        if (bytes && write(fd, data, (size_t)bytes) != bytes) fail("write", path);
        if (close(fd) != 0) fail("close", path);
    }
    double t1 = now();
    struct stat st;
    for (long i = 0; i < files; i++) {
        file_path(path, sizeof path, dir, i, dirs);
        if (stat(path, &st) != 0) fail("stat", path);
        if (st.st_size != bytes) {
            errno = EIO;
            fail("size after create of", path);
        }
    }
    double t2 = now();
    for (long i = 0; i < files; i++) {
        file_path(path, sizeof path, dir, i, dirs);
        if (unlink(path) != 0) fail("unlink", path);
    }
    for (long d = 0; d < dirs; d++) {
        snprintf(path, sizeof path, "%s/d%ld", dir, d);
        if (rmdir(path) != 0) fail("rmdir", path);
    }
    double t3 = now();
    printf("create %.6f\nstat %.6f\nunlink %.6f\n", t1 - t0, t2 - t1, t3 - t2);
    free(data);
    return 0;
}
