/*
 * e2e_tcp_cookie — under quayrun --transport tcp, the job cookie must not
 * be readable from /proc by another process of the same user once the
 * job runs: not in this rank's environment or command line, not in
 * quayrun's. The rank learns it from an inherited descriptor
 * (QUAY_TCP_JOB_FD), which the runtime reads and closes at start-up.
 *
 * Before starting the runtime, this program copies the cookie out of that
 * pipe without consuming it (tee) and looks for it in /proc/self and
 * /proc/<quayrun>; after start-up it checks that the descriptor is gone,
 * then talks to every other rank (a ring and a barrier).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "e2e.h"

#define FILE_MAX (1 << 20)

static int rank_env(void)
{
    const char *s = getenv("QUAY_RANK");
    return s != NULL ? atoi(s) : -1;
}

#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        if (!(cond)) {                                                     \
            fprintf(stderr, "rank %d: ", rank_env());                     \
            fprintf(stderr, __VA_ARGS__);                                  \
            fputc('\n', stderr);                                           \
            exit(1);                                                       \
        }                                                                  \
    } while (0)

/* The whole of a /proc file (environ, cmdline: NUL-separated). */
static size_t slurp(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    size_t len = 0;
    CHECK(fd >= 0, "open %s: %s", path, strerror(errno));
    for (;;) {
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        CHECK(n >= 0, "read %s: %s", path, strerror(errno));
        if (n == 0)
            break;
        len += (size_t)n;
        CHECK(len < cap, "%s is too large", path);
    }
    close(fd);
    return len;
}

/* needle (case-insensitive) anywhere in buf[0, len), NULs included. */
static int contains(const char *buf, size_t len, const char *needle)
{
    size_t m = strlen(needle);
    for (size_t i = 0; m > 0 && i + m <= len; i++) {
        size_t k = 0;
        while (k < m && tolower((unsigned char)buf[i + k]) == tolower((unsigned char)needle[k]))
            k++;
        if (k == m)
            return 1;
    }
    return 0;
}

static void check_proc(const char *path, const char *cookie, char *buf)
{
    size_t len = slurp(path, buf, FILE_MAX);
    CHECK(!contains(buf, len, "QUAY_TCP_JOB="), "%s has QUAY_TCP_JOB=", path);
    CHECK(!contains(buf, len, cookie), "%s has the job cookie %s", path, cookie);
}

/* The cookie in the pipe at fd, copied out with tee (the pipe keeps it):
 * hex digits, without the newline. */
static void peek_cookie(int fd, char *out, size_t cap)
{
    int p[2];
    CHECK(pipe(p) == 0, "pipe: %s", strerror(errno));
    ssize_t n = tee(fd, p[1], cap - 1, SPLICE_F_NONBLOCK);
    CHECK(n > 0, "QUAY_TCP_JOB_FD=%d: no cookie to copy (%s)", fd,
          n < 0 ? strerror(errno) : "empty");
    n = read(p[0], out, (size_t)n);
    CHECK(n > 0, "read: %s", strerror(errno));
    out[n] = '\0';
    out[strspn(out, "0123456789abcdefABCDEF")] = '\0';
    CHECK(strlen(out) >= 8, "QUAY_TCP_JOB_FD=%d: \"%s\" is not a cookie", fd, out);
    close(p[0]);
    close(p[1]);
}

int main(void)
{
    char cookie[64], path[64];
    char *buf = malloc(FILE_MAX);
    CHECK(buf != NULL, "out of memory");
    CHECK(getenv("QUAY_TCP_JOB") == NULL, "QUAY_TCP_JOB is in the environment");
    const char *s = getenv("QUAY_TCP_JOB_FD");
    CHECK(s != NULL, "QUAY_TCP_JOB_FD is not set");
    int fd = atoi(s);
    struct stat before, after;
    CHECK(fstat(fd, &before) == 0 && S_ISFIFO(before.st_mode),
          "QUAY_TCP_JOB_FD=%d is not an open pipe", fd);
    peek_cookie(fd, cookie, sizeof cookie);

    check_proc("/proc/self/environ", cookie, buf);
    check_proc("/proc/self/cmdline", cookie, buf);
    snprintf(path, sizeof path, "/proc/%d/environ", (int)getppid());
    check_proc(path, cookie, buf);
    snprintf(path, sizeof path, "/proc/%d/cmdline", (int)getppid());
    check_proc(path, cookie, buf);

    e2e t;
    e2e_init(&t);
    /* Read once and closed: the number may be reused, not the pipe. */
    CHECK(fstat(fd, &after) != 0 || after.st_ino != before.st_ino ||
              after.st_dev != before.st_dev,
          "QUAY_TCP_JOB_FD=%d is still open after start-up", fd);

    int32_t next = (t.rank + 1) % t.size, prev = (t.rank + t.size - 1) % t.size;
    int32_t token = t.rank, got = -1;
    quay_req *r;
    E2E_OK(quay_irecv(t.e, t.world, &got, sizeof got, prev, 5, &r));
    e2e_send(&t, &token, sizeof token, next, 5);
    quay_status st = e2e_wait(&t, r);
    E2E_CHECK(st.error == 0 && got == prev);
    e2e_barrier(&t);
    free(buf);
    printf("rank %d: no cookie in sight, ring done\n", (int)t.rank);
    return e2e_finish(&t);
}
