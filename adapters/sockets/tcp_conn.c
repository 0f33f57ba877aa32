/*
 * tcp_conn.c — start-up: the listening socket, address lists, and one
 * connection per pair of ranks (tcp.h).
 *
 * Each rank listens, publishes its address list and waits at the fence,
 * so every listener exists before anyone connects. Then, in one epoll
 * loop, it connects to every lower rank and accepts every higher one.
 * The connector tries its peer's addresses in order (an address may be
 * unreachable from here, or reach some other process: 127.0.0.1 in
 * another network namespace, a docker bridge present on every host) and
 * sends its hello; the acceptor checks it (magic, version, job, both
 * ranks, size) and answers with its own, which the connector checks in
 * turn. A refusal, a stranger's answer or a closed connection moves the
 * connector to the next address; after the last one it waits a little
 * (refused connections retry until the deadline). Strays and bad hellos
 * on the listener are closed and otherwise ignored.
 *
 * A rank that ends before it is connected would otherwise keep its peers
 * waiting for the whole connect limit: the lower ones for a connection
 * that never comes, the higher ones retrying a refused port. quayrun
 * names every rank that ends on the directory's dead_fd, so that such a
 * peer fails start-up at once.
 */
#include "tcp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

/* A connect that has not completed after this long moves on to the
 * peer's next address (only if it has another: SYNs to a black hole are
 * retried by the kernel for minutes). */
#define TCP_ATTEMPT_MS 2000
#define TCP_BACKOFF_MIN_MS 10
#define TCP_BACKOFF_MAX_MS 500
/* Accepted connections waiting for their hello, beyond one per peer:
 * strays beyond that evict the oldest. */
#define TCP_PEND_SPARE 16

/* ---- address lists ---------------------------------------------------------------------- */

/* One "a.b.c.d:port" of exactly len characters. */
static int parse_one(const char *s, size_t len, struct sockaddr_in *sa)
{
    char ip[16];
    size_t colon = len;
    unsigned long port = 0;
    while (colon > 0 && s[colon - 1] != ':')
        colon--;
    if (colon < 2 || colon - 1 >= sizeof ip)
        return 0;
    memcpy(ip, s, colon - 1);
    ip[colon - 1] = '\0';
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    if (inet_pton(AF_INET, ip, &sa->sin_addr) != 1)
        return 0;
    size_t nd = len - colon;
    if (nd < 1 || nd > 5 || (nd > 1 && s[colon] == '0'))
        return 0;
    for (size_t i = colon; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        port = port * 10 + (unsigned long)(s[i] - '0');
    }
    if (port < 1 || port > 65535)
        return 0;
    sa->sin_port = htons((uint16_t)port);
    return 1;
}

int tcp_parse_addrs(const char *s, size_t len, struct sockaddr_in *out, int max)
{
    int n = 0;
    size_t i = 0;
    if (len == 0)
        return -1;
    for (;;) {
        size_t j = i;
        while (j < len && s[j] != ',')
            j++;
        if (n >= max || !parse_one(s + i, j - i, &out[n]))
            return -1;
        n++;
        if (j == len)
            return n;
        i = j + 1;
    }
}

static int append_addr(char *addrs, size_t cap, size_t *len, struct in_addr a, uint16_t port)
{
    char ip[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &a, ip, sizeof ip);
    int n = snprintf(addrs + *len, cap - *len, "%s%s:%u", *len > 0 ? "," : "", ip,
                     (unsigned)port);
    if (n < 0 || (size_t)n >= cap - *len) {
        addrs[*len] = '\0';
        return -ENOSPC;
    }
    *len += (size_t)n;
    return 0;
}

static int seen(const struct in_addr *list, int n, struct in_addr a)
{
    for (int i = 0; i < n; i++)
        if (list[i].s_addr == a.s_addr)
            return 1;
    return 0;
}

/* Every up IPv4 address of this machine, loopback last. */
static int interface_addrs(uint16_t port, char *addrs, size_t cap)
{
    struct in_addr other[TCP_ADDRS_MAX], loop[TCP_ADDRS_MAX];
    int nother = 0, nloop = 0;
    struct ifaddrs *ifs = NULL;
    size_t len = 0;
    if (getifaddrs(&ifs) == 0) {
        for (struct ifaddrs *i = ifs; i != NULL; i = i->ifa_next) {
            if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_INET ||
                !(i->ifa_flags & IFF_UP))
                continue;
            struct sockaddr_in sin;
            memcpy(&sin, i->ifa_addr, sizeof sin);
            int lo = (i->ifa_flags & IFF_LOOPBACK) != 0;
            struct in_addr *list = lo ? loop : other;
            int *n = lo ? &nloop : &nother;
            if (*n < TCP_ADDRS_MAX && !seen(list, *n, sin.sin_addr))
                list[(*n)++] = sin.sin_addr;
        }
        freeifaddrs(ifs);
    }
    if (nother + nloop == 0) {
        loop[0].s_addr = htonl(INADDR_LOOPBACK);
        nloop = 1;
    }
    /* Room for one loopback address is kept: a peer on this host can
     * always reach us that way. */
    size_t reserve = nloop > 0 ? sizeof "127.255.255.255:65535," : 0;
    addrs[0] = '\0';
    for (int i = 0; i < nother && len + reserve < cap; i++) {
        size_t before = len;
        if (append_addr(addrs, cap, &len, other[i], port) != 0 || len + reserve >= cap) {
            len = before;
            addrs[len] = '\0';
            break;
        }
    }
    for (int i = 0; i < nloop; i++)
        if (append_addr(addrs, cap, &len, loop[i], port) != 0)
            break;
    return len > 0 ? 0 : -ENOSPC;
}

/* The address list of a bound socket. */
static int fd_addrs(int fd, char *addrs, size_t cap)
{
    struct sockaddr_in sa;
    socklen_t sl = sizeof sa;
    size_t len = 0;
    if (cap == 0)
        return -ENOSPC;
    if (getsockname(fd, (struct sockaddr *)&sa, &sl) != 0)
        return -errno;
    if (sa.sin_family != AF_INET)
        return -EAFNOSUPPORT;
    if (sa.sin_addr.s_addr == htonl(INADDR_ANY))
        return interface_addrs(ntohs(sa.sin_port), addrs, cap);
    return append_addr(addrs, cap, &len, sa.sin_addr, ntohs(sa.sin_port));
}

int qrt_tcp_listen(const char *host, char *addrs, size_t cap)
{
    struct sockaddr_in sa;
    int fd, rc;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_ANY);
    if (addrs == NULL || cap == 0)
        return -EINVAL;
    if (host != NULL && *host != '\0' && inet_pton(AF_INET, host, &sa.sin_addr) != 1)
        return -EINVAL;
    int buf = 0;
    if (tcp_env_buf(&buf) != 0)
        return -EINVAL;
    fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    /* Before listen: an accepted connection takes its buffer sizes (and
     * the window scale it announces) from the listener when its SYN
     * arrives, possibly before the rank runs. Shrinking them later leaves
     * the peer's segment size fitted to the larger window, and a window
     * smaller than one segment moves data by zero-window probes only. */
    if (buf > 0) {
        (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
    }
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, SOMAXCONN) != 0) {
        rc = -errno;
        close(fd);
        return rc;
    }
    rc = fd_addrs(fd, addrs, cap);
    if (rc != 0) {
        close(fd);
        return rc;
    }
    return fd;
}

/* ---- the handshake ---------------------------------------------------------------------- */

static void hello_make(uint8_t *b, uint64_t job, int32_t from, int32_t to, int32_t size)
{
    tcp_put32(b, TCP_MAGIC);
    tcp_put16(b + 4, TCP_VERSION);
    tcp_put16(b + 6, 0);
    tcp_put64(b + 8, job);
    tcp_put32(b + 16, (uint32_t)from);
    tcp_put32(b + 20, (uint32_t)to);
    tcp_put32(b + 24, (uint32_t)size);
    tcp_put32(b + 28, 0);
}

/* A hello for `to` in this job: its sender, or -1. */
static int32_t hello_check(const uint8_t *b, uint64_t job, int32_t to, int32_t size)
{
    uint32_t from = tcp_get32(b + 16);
    if (tcp_get32(b) != TCP_MAGIC || tcp_get16(b + 4) != TCP_VERSION || tcp_get16(b + 6) != 0 ||
        tcp_get64(b + 8) != job || tcp_get32(b + 20) != (uint32_t)to ||
        tcp_get32(b + 24) != (uint32_t)size || tcp_get32(b + 28) != 0 || from >= (uint32_t)size)
        return -1;
    return (int32_t)from;
}

enum { K_LISTEN = 1, K_TRY = 2, K_PEND = 3, K_DEAD = 4 };
enum { C_IDLE = 0, C_CONNECTING, C_HELLO, C_DONE };

/* Connecting to one lower rank. */
typedef struct ctry {
    struct sockaddr_in addr[TCP_ADDRS_MAX];
    int naddr;
    int idx;    /* the address tried now */
    int fd;
    int phase;  /* C_* */
    size_t got; /* reply bytes */
    uint8_t buf[TCP_HELLO_LEN];
    uint64_t at_ms; /* C_IDLE: next try; C_CONNECTING: started */
    uint32_t backoff_ms;
    int last_err;
} ctry;

/* An accepted connection waiting for its hello. */
typedef struct pend {
    int fd; /* -1: free */
    size_t got;
    uint64_t seq;
    uint8_t buf[TCP_HELLO_LEN];
} pend;

typedef struct conn {
    tcp_t *t;
    uint64_t job;
    int ep;
    int lfd;
    int dfd; /* the launcher's news of ended ranks, or -1 */
    ctry *tries; /* [0, rank) */
    pend *pends;
    int npends;
    uint64_t seq;
    int32_t missing;
} conn;

static uint64_t key(int kind, uint32_t idx)
{
    return ((uint64_t)kind << 32) | idx;
}

static int ep_add(conn *c, int fd, uint32_t events, uint64_t k)
{
    struct epoll_event ev = {.events = events, .data.u64 = k};
    return epoll_ctl(c->ep, EPOLL_CTL_ADD, fd, &ev);
}

/* This attempt failed: the next address now, or after the last one the
 * first again after a pause. */
static void next_addr(conn *c, ctry *x, int err, uint64_t now)
{
    if (x->fd >= 0)
        close(x->fd); /* also leaves the epoll set */
    x->fd = -1;
    x->last_err = err;
    x->phase = C_IDLE;
    x->got = 0;
    x->at_ms = now;
    if (++x->idx >= x->naddr) {
        x->idx = 0;
        x->at_ms = now + x->backoff_ms;
        x->backoff_ms = x->backoff_ms * 2 > TCP_BACKOFF_MAX_MS ? TCP_BACKOFF_MAX_MS
                                                              : x->backoff_ms * 2;
    }
    (void)c;
}

static int send_hello(conn *c, int fd, int32_t to)
{
    uint8_t b[TCP_HELLO_LEN];
    hello_make(b, c->job, c->t->base.rank, to, c->t->base.size);
    /* A fresh connection's buffer takes 32 bytes at once. */
    return send(fd, b, sizeof b, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)sizeof b ? 0 : -1;
}

static void try_start(conn *c, int32_t r, uint64_t now)
{
    ctry *x = &c->tries[r];
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        next_addr(c, x, errno, now);
        return;
    }
    tcp_sock_opts(c->t, fd, 0); /* before connect: the window scale is fixed then */
    x->fd = fd;
    x->at_ms = now;
    x->got = 0;
    if (connect(fd, (struct sockaddr *)&x->addr[x->idx], sizeof x->addr[0]) == 0) {
        if (send_hello(c, fd, r) != 0 || ep_add(c, fd, EPOLLIN, key(K_TRY, (uint32_t)r)) != 0) {
            next_addr(c, x, errno, now);
            return;
        }
        x->phase = C_HELLO;
        return;
    }
    if (errno != EINPROGRESS || ep_add(c, fd, EPOLLOUT, key(K_TRY, (uint32_t)r)) != 0) {
        next_addr(c, x, errno, now);
        return;
    }
    x->phase = C_CONNECTING;
}

static void try_event(conn *c, int32_t r, uint64_t now)
{
    ctry *x = &c->tries[r];
    if (x->phase == C_CONNECTING) {
        int err = 0;
        socklen_t el = sizeof err;
        if (getsockopt(x->fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0)
            err = errno;
        if (err == 0 && send_hello(c, x->fd, r) != 0)
            err = errno != 0 ? errno : EIO;
        if (err != 0) {
            next_addr(c, x, err, now);
            return;
        }
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = key(K_TRY, (uint32_t)r)};
        if (epoll_ctl(c->ep, EPOLL_CTL_MOD, x->fd, &ev) != 0) {
            next_addr(c, x, errno, now);
            return;
        }
        x->phase = C_HELLO;
        return;
    }
    if (x->phase != C_HELLO)
        return;
    /* Exactly the reply: frames may follow it at once. */
    ssize_t n = recv(x->fd, x->buf + x->got, TCP_HELLO_LEN - x->got, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    if (n <= 0) {
        /* Closed on us: a rank that does not take our hello, or not a
         * rank at all. */
        next_addr(c, x, n == 0 ? ECONNRESET : errno, now);
        return;
    }
    x->got += (size_t)n;
    if (x->got < TCP_HELLO_LEN)
        return;
    if (hello_check(x->buf, c->job, c->t->base.rank, c->t->base.size) != r) {
        next_addr(c, x, EPROTO, now);
        return;
    }
    (void)epoll_ctl(c->ep, EPOLL_CTL_DEL, x->fd, NULL);
    c->t->peers[r].fd = x->fd;
    x->fd = -1;
    x->phase = C_DONE;
    c->missing--;
}

static void pend_drop(conn *c, int slot)
{
    if (c->pends[slot].fd >= 0)
        close(c->pends[slot].fd);
    c->pends[slot].fd = -1;
}

static void accept_all(conn *c)
{
    for (;;) {
        int fd = accept4(c->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            return; /* EAGAIN; or out of descriptors: the next event retries */
        }
        int slot = -1;
        for (int i = 0; i < c->npends && slot < 0; i++)
            if (c->pends[i].fd < 0)
                slot = i;
        if (slot < 0) {
            slot = 0;
            for (int i = 1; i < c->npends; i++)
                if (c->pends[i].seq < c->pends[slot].seq)
                    slot = i;
            pend_drop(c, slot);
        }
        tcp_sock_opts(c->t, fd, 1);
        c->pends[slot].fd = fd;
        c->pends[slot].got = 0;
        c->pends[slot].seq = c->seq++;
        if (ep_add(c, fd, EPOLLIN, key(K_PEND, (uint32_t)slot)) != 0)
            pend_drop(c, slot);
    }
}

static void pend_event(conn *c, int slot)
{
    pend *q = &c->pends[slot];
    tcp_t *t = c->t;
    if (q->fd < 0)
        return;
    ssize_t n = recv(q->fd, q->buf + q->got, TCP_HELLO_LEN - q->got, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    if (n <= 0) {
        pend_drop(c, slot);
        return;
    }
    q->got += (size_t)n;
    if (q->got < TCP_HELLO_LEN)
        return;
    int32_t from = hello_check(q->buf, c->job, t->base.rank, t->base.size);
    /* Only higher ranks connect to us, each once. */
    if (from <= t->base.rank || t->peers[from].fd >= 0 || send_hello(c, q->fd, from) != 0) {
        pend_drop(c, slot);
        return;
    }
    (void)epoll_ctl(c->ep, EPOLL_CTL_DEL, q->fd, NULL);
    t->peers[from].fd = q->fd;
    q->fd = -1;
    c->missing--;
}

/* News from the launcher: ranks that ended. One not connected to us yet
 * never will be. 0, or QUAY_EPEER. */
static int dead_event(conn *c)
{
    tcp_t *t = c->t;
    uint32_t r[64];
    for (;;) {
        ssize_t n = read(c->dfd, r, sizeof r);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            /* EOF: the launcher is gone (and we with it, soon); it must
             * not stay in the set, where it would be ready for ever. */
            if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
                (void)epoll_ctl(c->ep, EPOLL_CTL_DEL, c->dfd, NULL);
            return 0;
        }
        /* Every record is written whole (4 bytes, below PIPE_BUF). */
        for (size_t i = 0; i < (size_t)n / sizeof r[0]; i++) {
            if (r[i] >= (uint32_t)t->base.size || (int32_t)r[i] == t->base.rank ||
                t->peers[r[i]].fd >= 0)
                continue;
            fprintf(stderr, "quay rank %d: tcp: rank %u exited during start-up\n",
                    (int)t->base.rank, (unsigned)r[i]);
            return QUAY_EPEER;
        }
    }
}

/* "1, 4, 7" of the ranks not connected, for the message. */
static void missing_list(const conn *c, char *buf, size_t cap)
{
    size_t len = 0;
    int shown = 0, more = 0;
    buf[0] = '\0';
    for (int32_t r = 0; r < c->t->base.size; r++) {
        if (r == c->t->base.rank || c->t->peers[r].fd >= 0)
            continue;
        if (shown == 16 || len + 16 >= cap) {
            more++;
            continue;
        }
        len += (size_t)snprintf(buf + len, cap - len, "%s%d", shown ? ", " : "", (int)r);
        shown++;
    }
    if (more > 0)
        snprintf(buf + len, cap - len, " and %d more", more);
}

static void report_timeout(const conn *c)
{
    char list[200];
    tcp_t *t = c->t;
    missing_list(c, list, sizeof list);
    fprintf(stderr,
            "quay rank %d: tcp: no connection with rank(s) %s within %llu ms "
            "(QUAY_TCP_CONNECT_MS)\n",
            (int)t->base.rank, list, (unsigned long long)t->connect_ms);
    for (int32_t r = 0; r < t->base.rank; r++) {
        const ctry *x = &c->tries[r];
        if (x->phase == C_DONE)
            continue;
        char ip[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &x->addr[x->idx].sin_addr, ip, sizeof ip);
        fprintf(stderr, "quay rank %d: tcp:   rank %d (%s:%u, %d address%s): %s\n",
                (int)t->base.rank, (int)r, ip, (unsigned)ntohs(x->addr[x->idx].sin_port),
                x->naddr, x->naddr == 1 ? "" : "es",
                x->last_err == EPROTO  ? "a stranger answered"
                : x->last_err != 0     ? strerror(x->last_err)
                : x->phase == C_HELLO ? "connected, no answer to our hello"
                                       : "no answer");
        break; /* the lowest one says enough */
    }
}

/* Set up the listener: the launcher's, or our own. Publishes its list. */
static int listener(conn *c, const qrt_tcp_dir *dir)
{
    char addrs[QRT_TCP_ADDR_MAX];
    int rank = (int)c->t->base.rank, rc;
    if (dir->listen_fd >= 0) {
        c->lfd = dir->listen_fd;
        /* accept_all takes connections until EAGAIN. */
        int fl = fcntl(c->lfd, F_GETFL);
        if (fl < 0 || fcntl(c->lfd, F_SETFL, fl | O_NONBLOCK) != 0 ||
            fcntl(c->lfd, F_SETFD, FD_CLOEXEC) != 0)
            rc = -errno;
        else
            rc = fd_addrs(c->lfd, addrs, sizeof addrs);
    } else {
        const char *host = getenv("QUAY_TCP_ADDR");
        rc = qrt_tcp_listen(host, addrs, sizeof addrs);
        c->lfd = rc >= 0 ? rc : -1;
        if (rc < 0) {
            fprintf(stderr, "quay rank %d: tcp: cannot listen on %s: %s\n", rank,
                    host != NULL && *host != '\0' ? host : "all interfaces",
                    rc == -EINVAL ? "QUAY_TCP_ADDR must be an IPv4 address" : strerror(-rc));
            return QUAY_EINVAL;
        }
        rc = 0;
    }
    if (rc != 0) {
        fprintf(stderr, "quay rank %d: tcp: the listening socket: %s\n", rank, strerror(-rc));
        return QUAY_EINVAL;
    }
    /* Accepted sockets inherit the buffer sizes: a launcher's listener
     * may not have them yet (qrt_tcp_listen sets them before listen). */
    tcp_sock_opts(c->t, c->lfd, 0);
    return dir->publish(dir->ctx, addrs);
}

/* Every lower rank's address list, from the directory. */
static int lookup_all(conn *c, const qrt_tcp_dir *dir)
{
    char buf[QRT_TCP_ADDR_MAX];
    for (int32_t r = 0; r < c->t->base.rank; r++) {
        ctry *x = &c->tries[r];
        int rc = dir->lookup(dir->ctx, r, buf, sizeof buf);
        if (rc != 0)
            return rc;
        buf[sizeof buf - 1] = '\0';
        x->naddr = tcp_parse_addrs(buf, strlen(buf), x->addr, TCP_ADDRS_MAX);
        if (x->naddr < 1) {
            fprintf(stderr, "quay rank %d: tcp: rank %d published a bad address list \"%s\"\n",
                    (int)c->t->base.rank, (int)r, buf);
            return QUAY_EINVAL;
        }
        x->backoff_ms = TCP_BACKOFF_MIN_MS;
    }
    return 0;
}

static int loop(conn *c)
{
    tcp_t *t = c->t;
    uint64_t deadline = tcp_now_ms() + t->connect_ms;
    struct epoll_event ev[64];
    while (c->missing > 0) {
        uint64_t now = tcp_now_ms(), wake = deadline;
        if (now >= deadline) {
            report_timeout(c);
            return QUAY_EPEER;
        }
        for (int32_t r = 0; r < t->base.rank; r++) {
            ctry *x = &c->tries[r];
            if (x->phase == C_IDLE && x->at_ms <= now)
                try_start(c, r, now);
            if (x->phase == C_CONNECTING && x->naddr > 1 && now - x->at_ms >= TCP_ATTEMPT_MS)
                next_addr(c, x, ETIMEDOUT, now);
            if (x->phase == C_IDLE && x->at_ms < wake)
                wake = x->at_ms;
            if (x->phase == C_CONNECTING && x->naddr > 1 && x->at_ms + TCP_ATTEMPT_MS < wake)
                wake = x->at_ms + TCP_ATTEMPT_MS;
        }
        int ms = wake > now ? (int)(wake - now) : 0;
        int n = epoll_wait(c->ep, ev, 64, ms);
        if (n < 0 && errno != EINTR) {
            fprintf(stderr, "quay rank %d: tcp: epoll_wait: %s\n", (int)t->base.rank,
                    strerror(errno));
            return QUAY_EINVAL;
        }
        now = tcp_now_ms();
        int dead = 0;
        for (int i = 0; i < n; i++) {
            uint32_t kind = (uint32_t)(ev[i].data.u64 >> 32), idx = (uint32_t)ev[i].data.u64;
            if (kind == K_LISTEN)
                accept_all(c);
            else if (kind == K_TRY)
                try_event(c, (int32_t)idx, now);
            else if (kind == K_PEND)
                pend_event(c, (int)idx);
            else
                dead = 1;
        }
        /* After the others: a rank that connected, then ended, is not a
         * start-up failure (the transport sees its connection close). */
        if (dead && dead_event(c) != 0)
            return QUAY_EPEER;
    }
    return 0;
}

int tcp_connect_all(tcp_t *t, const qrt_tcp_dir *dir)
{
    conn c;
    int rc;
    memset(&c, 0, sizeof c);
    c.t = t;
    c.job = dir->job;
    c.ep = -1;
    c.lfd = -1;
    c.dfd = dir->dead_fd;
    c.missing = t->base.size - 1;
    c.npends = t->base.size + TCP_PEND_SPARE;
    c.tries = calloc((size_t)t->base.rank + 1, sizeof *c.tries);
    c.pends = calloc((size_t)c.npends, sizeof *c.pends);
    if (c.tries == NULL || c.pends == NULL) {
        rc = QUAY_ENOMEM;
        if (dir->listen_fd >= 0)
            close(dir->listen_fd);
        goto out;
    }
    for (int32_t r = 0; r < t->base.rank; r++)
        c.tries[r].fd = -1;
    for (int i = 0; i < c.npends; i++)
        c.pends[i].fd = -1;
    rc = listener(&c, dir);
    if (rc == 0)
        rc = dir->fence(dir->ctx);
    if (rc == 0)
        rc = lookup_all(&c, dir);
    if (rc == 0) {
        c.ep = epoll_create1(EPOLL_CLOEXEC);
        if (c.ep < 0 || ep_add(&c, c.lfd, EPOLLIN, key(K_LISTEN, 0)) != 0 ||
            (c.dfd >= 0 && ep_add(&c, c.dfd, EPOLLIN, key(K_DEAD, 0)) != 0)) {
            fprintf(stderr, "quay rank %d: tcp: epoll: %s\n", (int)t->base.rank,
                    strerror(errno));
            rc = QUAY_EINVAL;
        }
    }
    if (rc == 0)
        rc = loop(&c);
out:
    /* The listener goes: every peer is connected (or start-up failed). */
    if (c.lfd >= 0)
        close(c.lfd);
    /* Once connected, each peer's connection tells of its end. */
    if (c.dfd >= 0)
        close(c.dfd);
    if (c.tries != NULL)
        for (int32_t r = 0; r < t->base.rank; r++)
            if (c.tries[r].fd >= 0)
                close(c.tries[r].fd);
    if (c.pends != NULL)
        for (int i = 0; i < c.npends; i++)
            pend_drop(&c, i);
    if (c.ep >= 0)
        close(c.ep);
    free(c.tries);
    free(c.pends);
    return rc;
}
