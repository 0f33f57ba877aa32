/*
 * tcp_dir.c — where the ranks' addresses come from (qrt_tcp.h):
 * quayrun's environment, or a PMI-1 process manager's key-value space.
 */
#include "tcp.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pmi_client.h"
#include "qrt_env.h"

/* ---- quayrun's directory ------------------------------------------------------------------ */

/* quayrun knew every address before the ranks started: nothing to publish
 * and nobody to wait for. */
static int env_publish(void *ctx, const char *addrs)
{
    (void)ctx;
    (void)addrs;
    return 0;
}

static int env_fence(void *ctx)
{
    (void)ctx;
    return 0;
}

/* Entry r of QUAY_TCP_PEERS (ctx), checked by qrt_tcp_dir_env. */
static int env_lookup(void *ctx, int32_t r, char *buf, size_t cap)
{
    const char *s = ctx;
    for (int32_t i = 0; i < r; i++) {
        s = strchr(s, ';');
        if (s == NULL)
            return QUAY_EINVAL;
        s++;
    }
    size_t len = strcspn(s, ";");
    if (len >= cap)
        return QUAY_EINVAL;
    memcpy(buf, s, len);
    buf[len] = '\0';
    return 0;
}

static int set(const char *s)
{
    return s != NULL && *s != '\0';
}

/* 1..16 hex digits, "0x" allowed in front. */
static int parse_job(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    size_t n = 0;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        s += 2;
    for (; s[n] != '\0'; n++) {
        char c = s[n];
        unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
                     : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                     : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
                                            : 16u;
        if (d == 16 || n == 16)
            return -1;
        v = (v << 4) | d;
    }
    if (n == 0)
        return -1;
    *out = v;
    return 0;
}

/* QUAY_TCP_PEERS: exactly `size` entries, each an address list. */
static int check_peers(const char *peers, int32_t size)
{
    struct sockaddr_in tmp[TCP_ADDRS_MAX];
    const char *s = peers;
    for (int32_t r = 0; r < size; r++) {
        size_t len = strcspn(s, ";");
        if (len >= QRT_TCP_ADDR_MAX || tcp_parse_addrs(s, len, tmp, TCP_ADDRS_MAX) < 1) {
            fprintf(stderr,
                    "quay: QUAY_TCP_PEERS: entry %d (\"%.*s\") is not a list of "
                    "a.b.c.d:port separated by ','\n",
                    (int)r, (int)(len > 80 ? 80 : len), s);
            return QUAY_EINVAL;
        }
        s += len;
        if (r + 1 < size) {
            if (*s != ';') {
                fprintf(stderr, "quay: QUAY_TCP_PEERS has %d entries, expected %d (one per rank)\n",
                        (int)r + 1, (int)size);
                return QUAY_EINVAL;
            }
            s++;
        }
    }
    if (*s != '\0') {
        fprintf(stderr, "quay: QUAY_TCP_PEERS has more than %d entries (one per rank)\n",
                (int)size);
        return QUAY_EINVAL;
    }
    return 0;
}

/* The cookie from the pipe at QUAY_TCP_JOB_FD (hex digits, a newline
 * allowed after them), then the descriptor closed: read once, it is gone
 * from this process's descriptors and from the pipe. */
static int read_job(int fd, uint64_t *job)
{
    char buf[40];
    size_t len = 0;
    struct stat st;
    int rc = QUAY_EINVAL;
    if (fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode)) {
        fprintf(stderr, "quay: QUAY_TCP_JOB_FD=%d is not a pipe\n", fd);
        return QUAY_EINVAL;
    }
    /* quayrun wrote it before the rank started: it is all there, and
     * a stray writer cannot make us wait. */
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        (void)fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    while (len < sizeof buf - 1) {
        ssize_t n = read(fd, buf + len, sizeof buf - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    while (len > 0 && buf[len - 1] == '\n')
        len--;
    buf[len] = '\0';
    if (len > 0 && parse_job(buf, job) == 0)
        rc = 0;
    else
        fprintf(stderr, "quay: QUAY_TCP_JOB_FD=%d: expected 1 to 16 hex digits\n", fd);
    return rc;
}

/* QUAY_TCP_DEAD_FD: a pipe; read without blocking, and not passed on to
 * the rank's own children. */
static int check_dead_fd(int fd)
{
    struct stat st;
    int fl = fcntl(fd, F_GETFL);
    if (fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode) || fl < 0 ||
        fcntl(fd, F_SETFD, FD_CLOEXEC) != 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0) {
        fprintf(stderr, "quay: QUAY_TCP_DEAD_FD=%d is not a pipe\n", fd);
        return QUAY_EINVAL;
    }
    return 0;
}

/* QUAY_TCP_FD: an open, listening IPv4 TCP socket; made close-on-exec
 * (the rank's own children must not keep the port) and non-blocking. */
static int check_fd(int fd)
{
    struct stat st;
    int v = 0;
    socklen_t l = sizeof v;
    if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode) ||
        getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &l) != 0 || v != 1 ||
        getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &l) != 0 || v != AF_INET) {
        fprintf(stderr, "quay: QUAY_TCP_FD=%d is not a listening IPv4 TCP socket\n", fd);
        return QUAY_EINVAL;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fcntl(fd, F_SETFD, FD_CLOEXEC) != 0 || fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0) {
        fprintf(stderr, "quay: QUAY_TCP_FD=%d: fcntl failed\n", fd);
        return QUAY_EINVAL;
    }
    return 0;
}

int qrt_tcp_dir_env(int32_t size, qrt_tcp_dir *d)
{
    const char *fds = getenv("QUAY_TCP_FD"), *peers = getenv("QUAY_TCP_PEERS"),
               *jobfd = getenv("QUAY_TCP_JOB_FD"), *dead = getenv("QUAY_TCP_DEAD_FD");
    uint64_t fd = 0, jfd = 0, dfd = 0;
    if (d == NULL || size < 1)
        return QUAY_EINVAL;
    memset(d, 0, sizeof *d);
    d->publish = env_publish;
    d->fence = env_fence;
    d->lookup = env_lookup;
    d->listen_fd = -1;
    d->dead_fd = -1;
    d->ctx = (void *)(uintptr_t)"";
    /* A singleton needs no connection, so no launcher either. */
    if (size == 1 && !set(fds) && !set(peers) && !set(jobfd))
        return 0;
    if (!set(fds) || !set(peers) || !set(jobfd)) {
        fprintf(stderr, "quay: QUAY_TCP_FD, QUAY_TCP_PEERS and QUAY_TCP_JOB_FD must all be set "
                        "(start the program with quayrun --transport tcp, or mpiexec)\n");
        return QUAY_EINVAL;
    }
    /* First, so that the cookie leaves the pipe whatever else is wrong. */
    if (qrt_env_u64("QUAY_TCP_JOB_FD", 0, INT_MAX, &jfd) < 0 || read_job((int)jfd, &d->job) != 0)
        return QUAY_EINVAL;
    if (qrt_env_u64("QUAY_TCP_FD", 0, INT_MAX, &fd) < 0 ||
        qrt_env_u64("QUAY_TCP_DEAD_FD", 0, INT_MAX, &dfd) < 0)
        return QUAY_EINVAL;
    if (check_peers(peers, size) != 0 || check_fd((int)fd) != 0 ||
        (set(dead) && check_dead_fd((int)dfd) != 0))
        return QUAY_EINVAL;
    d->ctx = (void *)(uintptr_t)peers;
    d->listen_fd = (int)fd;
    d->dead_fd = set(dead) ? (int)dfd : -1;
    return 0;
}

/* ---- PMI-1's directory -------------------------------------------------------------------- */

#define PMI_KEY "quay-tcp"

static int pmi_fail(qpmi *p, const char *what, int rc)
{
    const char *m = qpmi_errmsg(p);
    fprintf(stderr, "quay rank %d: tcp: PMI %s failed: %s%s%s\n", qpmi_rank(p), what,
            qpmi_strerror(rc), *m ? ": " : "", m);
    if (rc == QPMI_ENOMEM)
        return QUAY_ENOMEM;
    return rc == QPMI_EINVAL || rc == QPMI_ERANGE ? QUAY_EINVAL : QUAY_EPEER;
}

static int pmi_publish(void *ctx, const char *addrs)
{
    int rc = qpmi_put_rank(ctx, PMI_KEY, addrs);
    if (rc == QPMI_OK)
        rc = qpmi_commit(ctx);
    return rc == QPMI_OK ? 0 : pmi_fail(ctx, "put", rc);
}

static int pmi_fence(void *ctx)
{
    int rc = qpmi_barrier(ctx);
    return rc == QPMI_OK ? 0 : pmi_fail(ctx, "barrier", rc);
}

static int pmi_lookup(void *ctx, int32_t r, char *buf, size_t cap)
{
    int rc = qpmi_get_rank(ctx, PMI_KEY, (int)r, buf, cap, NULL);
    return rc == QPMI_OK ? 0 : pmi_fail(ctx, "get", rc);
}

/* FNV-1a, 64 bits: every rank hashes the same KVS name alike. */
static uint64_t fnv1a(const char *s)
{
    uint64_t h = 14695981039346656037ull;
    for (; *s != '\0'; s++) {
        h ^= (uint8_t)*s;
        h *= 1099511628211ull;
    }
    return h;
}

int qrt_tcp_dir_pmi(struct qpmi *p, qrt_tcp_dir *d)
{
    if (p == NULL || d == NULL)
        return QUAY_EINVAL;
    memset(d, 0, sizeof *d);
    d->ctx = p;
    d->job = fnv1a(qpmi_kvsname(p));
    d->publish = pmi_publish;
    d->fence = pmi_fence;
    d->lookup = pmi_lookup;
    d->listen_fd = -1;
    d->dead_fd = -1;
    return 0;
}
