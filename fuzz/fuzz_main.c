/*
 * fuzz_main.c — the driver of a harness that is not linked to libFuzzer.
 *
 * Replay (always): every argument is a file, run once, or a directory,
 * whose regular files are run once each in name order. Exit 0 when all
 * ran (a violated invariant aborts), 2 on a usage or I/O error, including
 * a path that does not exist or a directory without files, so that a
 * CTest pointed at the wrong place fails.
 *
 * AFL++ (built by afl-clang-fast with -DQUAY_FUZZ_AFL): with no argument,
 * persistent mode over shared-memory test cases (__AFL_FUZZ_TESTCASE_BUF,
 * __AFL_LOOP); with arguments, replay as above (triage of a crash file).
 *
 * Every input is copied into a heap block of exactly its size, so that
 * ASan reports a read one byte past the end.
 */
#include "fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Larger inputs are cut: every harness caps what it reads anyway. */
#define FZ_MAX_FILE (1u << 20)

static int run_buffer(const uint8_t *data, size_t len)
{
    uint8_t *copy = malloc(len ? len : 1);
    if (copy == NULL) {
        fprintf(stderr, "out of memory\n");
        return -1;
    }
    if (len != 0)
        memcpy(copy, data, len);
    LLVMFuzzerTestOneInput(copy, len);
    free(copy);
    return 0;
}

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf;
    size_t len;
    int rc;
    if (f == NULL) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return -1;
    }
    buf = malloc(FZ_MAX_FILE);
    if (buf == NULL) {
        fclose(f);
        return -1;
    }
    len = fread(buf, 1, FZ_MAX_FILE, f);
    if (ferror(f)) {
        fprintf(stderr, "%s: read error\n", path);
        fclose(f);
        free(buf);
        return -1;
    }
    fclose(f);
    if (fz_verbose())
        fprintf(stderr, "== %s (%zu bytes)\n", path, len);
    rc = run_buffer(buf, len);
    free(buf);
    return rc;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Run every regular file of `dir` (not recursive). Returns files run or -1. */
static long run_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char **names = NULL;
    size_t n = 0, cap = 0, i;
    long ran = 0;
    if (d == NULL) {
        fprintf(stderr, "%s: %s\n", dir, strerror(errno));
        return -1;
    }
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        if (n == cap) {
            char **nn = realloc(names, (cap ? cap * 2 : 64) * sizeof *nn);
            if (nn == NULL)
                break;
            names = nn;
            cap = cap ? cap * 2 : 64;
        }
        names[n] = malloc(strlen(dir) + strlen(de->d_name) + 2);
        if (names[n] == NULL)
            break;
        sprintf(names[n], "%s/%s", dir, de->d_name);
        n++;
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_names);
    for (i = 0; i < n; i++) {
        struct stat st;
        if (ran >= 0 && stat(names[i], &st) == 0 && S_ISREG(st.st_mode))
            ran = run_file(names[i]) == 0 ? ran + 1 : -1;
        free(names[i]);
    }
    free(names);
    return ran;
}

static int replay(int argc, char **argv)
{
    long total = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        long ran;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
            return 2;
        }
        if (S_ISDIR(st.st_mode)) {
            ran = run_dir(argv[i]);
            if (ran == 0) {
                fprintf(stderr, "%s: no input files\n", argv[i]);
                return 2;
            }
        } else {
            ran = run_file(argv[i]) == 0 ? 1 : -1;
        }
        if (ran < 0)
            return 2;
        total += ran;
    }
    printf("%s: %ld input(s) replayed, no invariant violated\n", fz_harness, total);
    return 0;
}

#ifdef QUAY_FUZZ_AFL
#ifndef __AFL_FUZZ_TESTCASE_LEN
#error "QUAY_FUZZ_AFL needs afl-clang-fast (or afl-clang-lto / afl-cc in LLVM mode)"
#endif

#include <unistd.h> /* read(), used by __AFL_FUZZ_TESTCASE_LEN outside afl-fuzz */

__AFL_FUZZ_INIT();

int main(int argc, char **argv)
{
    const unsigned char *buf;
    if (argc > 1)
        return replay(argc, argv);
#ifdef __AFL_HAVE_MANUAL_CONTROL
    __AFL_INIT();
#endif
    buf = __AFL_FUZZ_TESTCASE_BUF;
    while (__AFL_LOOP(10000)) {
        size_t len = (size_t)__AFL_FUZZ_TESTCASE_LEN;
        if (run_buffer(buf, len) != 0)
            return 1;
    }
    return 0;
}

#else

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE|DIR...  (replay each input once)\n", argv[0]);
        return 2;
    }
    return replay(argc, argv);
}

#endif
