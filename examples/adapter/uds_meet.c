/*
 * uds_meet.c — the example adapter's start-up (uds_meet.h): each rank
 * listens on DIR/<rank>.sock, connects to every lower rank and accepts
 * every higher one. Connecting never waits for an accept (the listener's
 * backlog holds it), so the ranks cannot wait on each other in a circle.
 */
#define _POSIX_C_SOURCE 200809L

#include "uds_meet.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <quay/quay.h>

#define UDS_HELLO_MAGIC 0x31534455u /* "UDS1" */
#define UDS_CONNECT_MS_DEFAULT 30000

/* What a connecting rank says first (host byte order). */
typedef struct hello {
    uint32_t magic, from, to, size;
} hello;

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* QUAY_UDS_CONNECT_MS: a malformed value is an error, not the default. */
static int connect_ms(int32_t me, uint64_t *ms)
{
    const char *s = getenv("QUAY_UDS_CONNECT_MS");
    char *end = NULL;
    *ms = UDS_CONNECT_MS_DEFAULT;
    if (s == NULL || *s == '\0')
        return 0;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || *s == '-' || v < 1 || v > 86400000u) {
        fprintf(stderr, "quay rank %d: uds: QUAY_UDS_CONNECT_MS=\"%s\": expected 1..86400000\n",
                (int)me, s);
        return QUAY_EINVAL;
    }
    *ms = v;
    return 0;
}

/* DIR/name as a socket address; -1 if it does not fit sun_path. */
static int sock_addr(struct sockaddr_un *a, const char *dir, int32_t rank, const char *suffix)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    int n = snprintf(a->sun_path, sizeof a->sun_path, "%s/%d.%s", dir, (int)rank, suffix);
    return n > 0 && (size_t)n < sizeof a->sun_path ? 0 : -1;
}

static int sock_new(void)
{
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd >= 0)
        (void)fcntl(fd, F_SETFD, FD_CLOEXEC); /* not the program's children's */
    return fd;
}

/* Wait until fd has `ev` or the deadline passes: 1 ready, 0 too late. */
static int wait_fd(int fd, short ev, uint64_t deadline)
{
    for (;;) {
        uint64_t now = now_ms();
        if (now >= deadline)
            return 0;
        struct pollfd p = {.fd = fd, .events = ev, .revents = 0};
        uint64_t left = deadline - now;
        int n = poll(&p, 1, left > 1000 ? 1000 : (int)left);
        if (n > 0)
            return 1;
        if (n < 0 && errno != EINTR)
            return 0;
    }
}

/* Connect to rank r (lower than me) and say hello: 0 with *pfd, or a
 * code after a message. */
static int dial(int32_t me, int32_t r, int32_t size, const char *dir, uint64_t deadline,
                uint64_t ms, int *pfd)
{
    struct sockaddr_un a;
    long nap_ns = 1000000;
    (void)sock_addr(&a, dir, r, "sock"); /* (fits: our own, no shorter, did) */
    for (;;) {
        int fd = sock_new();
        if (fd < 0) {
            fprintf(stderr, "quay rank %d: uds: socket: %s\n", (int)me, strerror(errno));
            return QUAY_EINVAL;
        }
        if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
            hello h = {UDS_HELLO_MAGIC, (uint32_t)me, (uint32_t)r, (uint32_t)size};
            /* 16 bytes into an empty socket buffer: all at once. */
            if (send(fd, &h, sizeof h, MSG_NOSIGNAL) != (ssize_t)sizeof h) {
                close(fd);
                fprintf(stderr, "quay rank %d: uds: rank %d exited during start-up\n", (int)me,
                        (int)r);
                return QUAY_EPEER;
            }
            *pfd = fd;
            return 0;
        }
        int err = errno;
        close(fd);
        if (err == ECONNREFUSED) {
            /* The name exists only while its rank listens. */
            fprintf(stderr, "quay rank %d: uds: rank %d exited during start-up\n", (int)me,
                    (int)r);
            return QUAY_EPEER;
        }
        if (err != ENOENT && err != EINTR) {
            fprintf(stderr, "quay rank %d: uds: connect %s: %s\n", (int)me, a.sun_path,
                    strerror(err));
            return QUAY_EINVAL;
        }
        if (now_ms() >= deadline) {
            fprintf(stderr, "quay rank %d: uds: rank %d did not show up within %llu ms\n",
                    (int)me, (int)r, (unsigned long long)ms);
            return QUAY_EPEER;
        }
        /* Not listening yet: look again soon, then less often. */
        struct timespec ts = {0, nap_ns};
        nanosleep(&ts, NULL);
        if (nap_ns < 20000000)
            nap_ns *= 2;
    }
}

/* Read exactly n bytes before the deadline: 0, or -1. */
static int read_full(int fd, void *buf, size_t n, uint64_t deadline)
{
    size_t got = 0;
    while (got < n) {
        if (!wait_fd(fd, POLLIN, deadline))
            return -1;
        ssize_t k = recv(fd, (char *)buf + got, n - got, 0);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        got += (size_t)k;
    }
    return 0;
}

/* Accept every rank above me on lfd. A connection that is no rank of
 * this job (a bad or repeated hello) is closed and ignored. */
static int answer(int32_t me, int32_t size, int lfd, uint64_t deadline, uint64_t ms, int *fds)
{
    int32_t left = size - 1 - me;
    while (left > 0) {
        if (!wait_fd(lfd, POLLIN, deadline)) {
            int32_t r = me + 1;
            while (r < size && fds[r] >= 0)
                r++;
            fprintf(stderr, "quay rank %d: uds: rank %d did not connect within %llu ms\n",
                    (int)me, (int)r, (unsigned long long)ms);
            return QUAY_EPEER;
        }
        int fd = accept(lfd, NULL, NULL);
        if (fd < 0)
            continue; /* EINTR, ECONNABORTED: wait again */
        (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
        hello h;
        if (read_full(fd, &h, sizeof h, deadline) != 0 || h.magic != UDS_HELLO_MAGIC ||
            h.to != (uint32_t)me || h.size != (uint32_t)size || h.from <= (uint32_t)me ||
            h.from >= (uint32_t)size || fds[h.from] >= 0) {
            close(fd);
            continue;
        }
        fds[h.from] = fd;
        left--;
    }
    return 0;
}

int uds_meet(int32_t rank, int32_t size, int *fds)
{
    const char *dir = getenv("QUAY_UDS_DIR");
    struct sockaddr_un tmp, name;
    uint64_t ms;
    int rc = connect_ms(rank, &ms);
    if (rc != 0)
        return rc;
    if (dir == NULL || *dir == '\0')
        dir = getenv("QUAY_JOB_DIR");
    if (dir == NULL || *dir == '\0') {
        fprintf(stderr, "quay rank %d: uds: no directory to meet in: set QUAY_UDS_DIR, or "
                        "start the program with quayrun --transport (QUAY_JOB_DIR)\n",
                (int)rank);
        return QUAY_EINVAL;
    }
    if (sock_addr(&tmp, dir, rank, "new") != 0 || sock_addr(&name, dir, rank, "sock") != 0) {
        fprintf(stderr, "quay rank %d: uds: %s: too long for a socket name\n", (int)rank, dir);
        return QUAY_EINVAL;
    }
    uint64_t deadline = now_ms() + ms;
    int lfd = sock_new();
    (void)unlink(tmp.sun_path);
    /* Listening before the name appears: whoever finds it may connect. */
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&tmp, sizeof tmp) != 0 ||
        listen(lfd, size) != 0 || rename(tmp.sun_path, name.sun_path) != 0) {
        fprintf(stderr, "quay rank %d: uds: cannot listen on %s: %s\n", (int)rank,
                name.sun_path, strerror(errno));
        if (lfd >= 0)
            close(lfd);
        (void)unlink(tmp.sun_path);
        return QUAY_EINVAL;
    }
    for (int32_t r = 0; r < rank && rc == 0; r++)
        rc = dial(rank, r, size, dir, deadline, ms, &fds[r]);
    if (rc == 0)
        rc = answer(rank, size, lfd, deadline, ms, fds);
    /* Everyone is in (or it failed): nobody is to find us any more. */
    (void)unlink(name.sun_path);
    close(lfd);
    for (int32_t r = 0; r < size; r++) {
        if (fds[r] < 0)
            continue;
        if (rc == 0 && fcntl(fds[r], F_SETFL, O_NONBLOCK) != 0)
            rc = QUAY_EINVAL;
        if (rc != 0) {
            close(fds[r]);
            fds[r] = -1;
        }
    }
    return rc;
}
