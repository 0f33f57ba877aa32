/*
 * uds.c — an example quay transport adapter, written as an outside
 * project would write one: UNIX-domain stream sockets between the ranks
 * of one host. It uses only the installed headers (<quay/quay.h>,
 * <quay/quay_adapter.h>) and POSIX; docs/adapters.md walks through it.
 *
 *   quayrun -n 4 --transport ./libquay_uds.so ./prog
 *
 * Start-up: rank r listens on DIR/r.sock (bound under another name, then
 * renamed: once the name exists, it accepts), connects to every lower
 * rank, sending a hello (magic, its rank, the rank it wants, the size),
 * then accepts every higher rank. DIR is QUAY_UDS_DIR, else quayrun's
 * QUAY_JOB_DIR; it must be fresh for each job (quayrun's is), and private
 * (quayrun's is mode 0700): whoever can reach the sockets can pass for a
 * rank. Once connected, the name is removed.
 *
 * Wire, host byte order (all ranks are on one host): a frame is an 8-byte
 * header (u32 body length, u8 type, three zero bytes) and the body.
 * PKT carries one engine packet (at most UDS_PKT_MAX bytes: a larger
 * length from a peer fails it, nothing is allocated for it); BYE has no
 * body. A peer that closes its socket without a BYE has failed.
 *
 * Caps: QUAY_CAP_ORDERED only (a stream per pair keeps order). No RDMA:
 * the engine then moves rendezvous data in packets.
 *
 * Bounds: what this rank queues is bounded by its engine (one item per
 * send it started, until op_done). From each peer it keeps at most one
 * packet: one the engine refused (QUAY_EAGAIN) is held, and that peer is
 * not read again until the engine takes it, so the peer's writes wait in
 * its kernel (back-pressure), not in memory here.
 *
 * Knobs: QUAY_UDS_DIR (above), QUAY_UDS_CONNECT_MS (start-up limit,
 * default 30000).
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <quay/quay.h>
#include <quay/quay_adapter.h>

#include "uds_meet.h"

/* The runtime's contract version whose sink this adapter uses. */
#define UDS_NEEDS_ABI 1
#define UDS_HDR 8u
enum { UDS_PKT = 1, UDS_BYE = 2 };
/* Largest packet (as shm's and tcp's): 64 MiB of payload plus headers. */
#define UDS_PKT_MAX ((64u << 20) + (64u << 10))
/* Frames read from one peer per poll: one busy peer cannot starve the
 * others. */
#define UDS_BATCH 16
/* A receive buffer larger than this is freed after its packet. */
#define UDS_KEEP (256u << 10)
#define UDS_IOV_BATCH 64

/* A frame waiting for room in its socket: the header is copied, the data
 * iovecs point at the engine's memory (valid until op_done). */
typedef struct uds_item {
    struct uds_item *next;
    uint64_t token;
    int has_token;
    int first, niov; /* iov[first..niov) are left to write */
    struct iovec iov[1 + QUAY_ACTION_IOV_MAX];
    uint8_t hdr[UDS_HDR];
} uds_item;

enum { PEER_LIVE = 0, PEER_DONE = 1, PEER_FAILED = 2 };

typedef struct uds_peer {
    int fd;        /* -1 once closed (and for this rank) */
    int state;     /* PEER_* */
    int got_bye;   /* its BYE came (and was told to the sink) */
    int wr_err;    /* errno of a failed write, until poll settles it */
    uds_item *qhead, *qtail;
    /* in: a header, then a body into buf */
    uint8_t hdr[UDS_HDR];
    size_t hdr_got;
    int in_body;
    uint8_t *buf;
    size_t cap, len, got;
    int held;      /* buf[0..len) is a packet the engine refused */
    int fail_owed; /* peer_failed waits for the held packet */
} uds_peer;

typedef struct uds {
    quay_transport base; /* first: the runtime sees this part */
    uds_peer *peers;
    struct pollfd *pfd;  /* [0] the wake pipe, then peers */
    int32_t *pfd_peer;
    int wake[2];         /* wake writes a byte, poll reads them */
    int woke;
    int nqueued;         /* peers with frames queued */
    int nwr_err;         /* peers with wr_err set */
} uds;

static void say(const uds *t, const char *what, const char *detail)
{
    fprintf(stderr, "quay rank %d: uds: %s%s%s\n", (int)t->base.rank, what,
            detail != NULL ? ": " : "", detail != NULL ? detail : "");
}

/* ---- frames out --------------------------------------------------------------------- */

static uds_item *item_new(int type, size_t len, const quay_iov *iov, uint32_t iovcnt,
                          int has_token, uint64_t token)
{
    uds_item *it = malloc(sizeof *it);
    uint32_t len32 = (uint32_t)len;
    if (it == NULL)
        return NULL;
    memset(it->hdr, 0, sizeof it->hdr);
    memcpy(it->hdr, &len32, 4);
    it->hdr[4] = (uint8_t)type;
    it->next = NULL;
    it->token = token;
    it->has_token = has_token;
    it->first = 0;
    it->niov = 1;
    it->iov[0] = (struct iovec){it->hdr, UDS_HDR};
    for (uint32_t i = 0; i < iovcnt; i++)
        if (iov[i].len > 0)
            it->iov[it->niov++] = (struct iovec){(void *)(uintptr_t)iov[i].base, iov[i].len};
    return it;
}

/* Take n written bytes off the front of the item. Returns what it took. */
static size_t item_consume(uds_item *it, size_t n)
{
    size_t took = 0;
    while (it->first < it->niov && n > 0) {
        struct iovec *v = &it->iov[it->first];
        size_t c = v->iov_len < n ? v->iov_len : n;
        v->iov_base = (uint8_t *)v->iov_base + c;
        v->iov_len -= c;
        n -= c;
        took += c;
        if (v->iov_len == 0)
            it->first++;
    }
    return took;
}

static ssize_t write_iov(int fd, struct iovec *v, int n)
{
    struct msghdr m;
    ssize_t w;
    memset(&m, 0, sizeof m);
    m.msg_iov = v;
    m.msg_iovlen = (size_t)n;
    do /* MSG_NOSIGNAL: a closed peer is EPIPE here, not SIGPIPE */
        w = sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
    while (w < 0 && errno == EINTR);
    return w;
}

/* Write the item now if nothing waits before it (1: all written), else
 * queue the rest (0). QUAY_EPEER: the write failed (poll settles it: the
 * sink may not be called from here). Takes the item in every case. */
static int out_item(uds *t, int32_t peer, uds_item *it)
{
    uds_peer *p = &t->peers[peer];
    if (p->qhead == NULL) {
        size_t total = 0;
        for (int k = 0; k < it->niov; k++)
            total += it->iov[k].iov_len;
        ssize_t n = write_iov(p->fd, it->iov, it->niov);
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
            p->wr_err = errno;
            t->nwr_err++;
            free(it);
            return QUAY_EPEER;
        }
        if (n > 0 && (size_t)n == total) {
            free(it);
            return 1;
        }
        item_consume(it, n > 0 ? (size_t)n : 0);
        p->qhead = it;
        t->nqueued++;
    } else {
        p->qtail->next = it;
    }
    p->qtail = it;
    return 0;
}

static void peer_fail(uds *t, int32_t peer, const char *why);
static void peer_broke(uds *t, int32_t peer, int err);
static int rx_peer(uds *t, int32_t peer);

/* Close peer's socket; queued sends end with QUAY_EPEER. A held packet
 * stays (it is still delivered). */
static void close_peer(uds *t, int32_t peer, int state)
{
    uds_peer *p = &t->peers[peer];
    uds_item *it;
    if (p->fd >= 0)
        close(p->fd);
    p->fd = -1;
    p->state = state;
    if (p->wr_err != 0) {
        p->wr_err = 0;
        t->nwr_err--;
    }
    if (p->qhead != NULL)
        t->nqueued--;
    while ((it = p->qhead) != NULL) {
        p->qhead = it->next;
        if (it->has_token)
            t->base.sink->op_done(t->base.sink->ctx, it->token, QUAY_EPEER);
        free(it);
    }
    p->qtail = NULL;
    p->hdr_got = 0;
    p->in_body = 0;
}

/* A write toward peer failed: what it sent before still counts (its bye
 * among it, perhaps), so read all of that first; then it is done or has
 * failed. While a packet of it is held, this waits for the engine. */
static void write_failed(uds *t, int32_t peer, int err)
{
    uds_peer *p = &t->peers[peer];
    if (p->wr_err == 0) {
        p->wr_err = err;
        t->nwr_err++;
    }
    while (p->fd >= 0 && !p->held && rx_peer(t, peer) > 0)
        ;
    if (p->held || p->state != PEER_LIVE)
        return;
    if (p->got_bye)
        close_peer(t, peer, PEER_DONE);
    else
        peer_broke(t, peer, err);
}

/* Move peer's queue into its socket while it takes it. Returns the frames
 * finished. */
static int flush_peer(uds *t, int32_t peer)
{
    uds_peer *p = &t->peers[peer];
    struct iovec v[UDS_IOV_BATCH];
    int work = 0;
    while (p->qhead != NULL && p->wr_err == 0) {
        int nv = 0;
        size_t total = 0;
        for (uds_item *it = p->qhead; it != NULL; it = it->next) {
            if (nv + (it->niov - it->first) > UDS_IOV_BATCH)
                break;
            for (int k = it->first; k < it->niov; k++) {
                v[nv++] = it->iov[k];
                total += it->iov[k].iov_len;
            }
        }
        ssize_t n = write_iov(p->fd, v, nv);
        if (n < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                write_failed(t, peer, errno);
            break;
        }
        size_t left = (size_t)n;
        while (p->qhead != NULL) {
            uds_item *it = p->qhead;
            left -= item_consume(it, left);
            if (it->first < it->niov)
                break;
            p->qhead = it->next;
            if (p->qhead == NULL) {
                p->qtail = NULL;
                t->nqueued--;
            }
            /* In queue order: the runtime may rely on it. */
            if (it->has_token)
                t->base.sink->op_done(t->base.sink->ctx, it->token, 0);
            free(it);
            work++;
        }
        if ((size_t)n < total)
            break; /* the socket is full */
    }
    return work;
}

/* ---- frames in ---------------------------------------------------------------------- */

/* The peer broke the protocol or went away without a bye. */
static void peer_fail(uds *t, int32_t peer, const char *why)
{
    uds_peer *p = &t->peers[peer];
    if (p->state != PEER_LIVE)
        return;
    fprintf(stderr, "quay rank %d: uds: peer %d %s\n", (int)t->base.rank, (int)peer, why);
    close_peer(t, peer, PEER_FAILED);
    if (p->got_bye)
        return; /* it said bye: nothing is owed (never both) */
    if (p->held)
        p->fail_owed = 1; /* what it sent goes to the engine first */
    else
        t->base.sink->peer_failed(t->base.sink->ctx, peer);
}

static void peer_broke(uds *t, int32_t peer, int err)
{
    char why[128];
    snprintf(why, sizeof why, "broke the connection (%s)", strerror(err));
    peer_fail(t, peer, why);
}

/* The peer's socket ended (err 0: EOF): the normal end after its bye. */
static void rx_end(uds *t, int32_t peer, int err)
{
    uds_peer *p = &t->peers[peer];
    if (err == 0 && p->got_bye && p->hdr_got == 0 && !p->in_body)
        close_peer(t, peer, PEER_DONE);
    else if (err != 0)
        peer_broke(t, peer, err);
    else if (p->hdr_got != 0 || p->in_body)
        peer_fail(t, peer, "closed the connection in the middle of a frame");
    else
        peer_fail(t, peer, "closed the connection without a bye (did it exit?)");
}

/* recv into dst[0..want): > 0 bytes, 0 nothing now, -1 the socket ended
 * (the peer is closed). */
static ssize_t rx_some(uds *t, int32_t peer, void *dst, size_t want)
{
    ssize_t n;
    do
        n = recv(t->peers[peer].fd, dst, want, MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    if (n > 0)
        return n;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return 0;
    rx_end(t, peer, n == 0 ? 0 : errno);
    return -1;
}

/* A frame header is in: check it, then expect its body. 0, or -1 after
 * failing the peer. */
static int rx_header(uds *t, int32_t peer)
{
    uds_peer *p = &t->peers[peer];
    uint32_t len;
    memcpy(&len, p->hdr, 4);
    int type = p->hdr[4];
    p->hdr_got = 0;
    if (p->hdr[5] != 0 || p->hdr[6] != 0 || p->hdr[7] != 0 || p->got_bye ||
        (type != UDS_PKT && type != UDS_BYE) || (type == UDS_BYE && len != 0)) {
        peer_fail(t, peer, "sent garbage (a bad frame header)");
        return -1;
    }
    if (type == UDS_BYE) {
        p->got_bye = 1;
        t->base.sink->peer_bye(t->base.sink->ctx, peer);
        return 0;
    }
    if (len > UDS_PKT_MAX) {
        peer_fail(t, peer, "sent garbage (a packet over the limit)");
        return -1;
    }
    if (len > p->cap) {
        uint8_t *b = realloc(p->buf, len);
        if (b == NULL) {
            peer_fail(t, peer, "cannot be served: out of memory");
            return -1;
        }
        p->buf = b;
        p->cap = len;
    }
    p->in_body = 1;
    p->len = len;
    p->got = 0;
    return 0;
}

/* Read and deliver up to UDS_BATCH frames from peer. Returns frames. */
static int rx_peer(uds *t, int32_t peer)
{
    uds_peer *p = &t->peers[peer];
    int work = 0;
    while (work < UDS_BATCH && p->fd >= 0 && !p->held) {
        ssize_t n;
        if (!p->in_body) {
            n = rx_some(t, peer, p->hdr + p->hdr_got, UDS_HDR - p->hdr_got);
            if (n <= 0)
                break;
            p->hdr_got += (size_t)n;
            if (p->hdr_got < UDS_HDR)
                continue;
            if (rx_header(t, peer) != 0)
                break;
            work++;
            continue;
        }
        if (p->got < p->len) {
            n = rx_some(t, peer, p->buf + p->got, p->len - p->got);
            if (n <= 0)
                break;
            p->got += (size_t)n;
            if (p->got < p->len)
                continue;
        }
        p->in_body = 0;
        if (t->base.sink->packet(t->base.sink->ctx, peer, p->buf, p->len) == QUAY_EAGAIN) {
            p->held = 1; /* offered again by poll; the peer waits */
            break;
        }
        if (p->cap > UDS_KEEP) {
            free(p->buf);
            p->buf = NULL;
            p->cap = 0;
        }
    }
    return work;
}

/* Offer a held packet again; once taken, what waited behind it comes. */
static int rx_held(uds *t, int32_t peer)
{
    uds_peer *p = &t->peers[peer];
    if (t->base.sink->packet(t->base.sink->ctx, peer, p->buf, p->len) == QUAY_EAGAIN)
        return 0;
    p->held = 0;
    if (p->cap > UDS_KEEP) {
        free(p->buf);
        p->buf = NULL;
        p->cap = 0;
    }
    if (p->fail_owed) {
        p->fail_owed = 0;
        t->base.sink->peer_failed(t->base.sink->ctx, peer);
        return 1;
    }
    return 1 + rx_peer(t, peer);
}

/* ---- the operations ------------------------------------------------------------------ */

static int uds_send(quay_transport *tp, int32_t peer, const quay_iov *iov, uint32_t iovcnt,
                    uint64_t token)
{
    uds *t = (uds *)tp;
    size_t len = 0;
    if (peer < 0 || peer >= tp->size || peer == tp->rank || iovcnt < 1 ||
        iovcnt > QUAY_ACTION_IOV_MAX)
        return QUAY_EINVAL;
    uds_peer *p = &t->peers[peer];
    if (p->state != PEER_LIVE || p->wr_err != 0)
        return QUAY_EPEER;
    for (uint32_t i = 0; i < iovcnt; i++)
        len += iov[i].len;
    if (len > UDS_PKT_MAX) {
        say(t, "a packet exceeds the transport's limit of 64 MiB + 64 KiB",
            "lower QUAY_EAGER_MAX / QUAY_FRAG_SIZE");
        return QUAY_EINVAL;
    }
    /* Made before writing: once part of a frame is out, the rest must
     * have a place to wait. */
    uds_item *it = item_new(UDS_PKT, len, iov, iovcnt, 1, token);
    if (it == NULL)
        return QUAY_ENOMEM;
    return out_item(t, peer, it);
}

static int poll_once(uds *t, int timeout_ms)
{
    int work = 0, n = 1;
    for (int32_t r = 0; r < t->base.size && t->nwr_err > 0; r++)
        if (t->peers[r].wr_err != 0 && t->peers[r].state == PEER_LIVE)
            write_failed(t, r, t->peers[r].wr_err);
    /* Held packets first: they come before anything read now. */
    for (int32_t r = 0; r < t->base.size; r++)
        if (t->peers[r].held)
            work += rx_held(t, r);
    if (work > 0)
        timeout_ms = 0;
    for (int32_t r = 0; r < t->base.size; r++) {
        uds_peer *p = &t->peers[r];
        short ev = 0;
        if (p->fd < 0)
            continue;
        if (!p->held)
            ev |= POLLIN;
        if (p->qhead != NULL && p->wr_err == 0)
            ev |= POLLOUT;
        /* (no interest: left out, or its hang-up would end every wait) */
        if (ev != 0) {
            t->pfd[n] = (struct pollfd){.fd = p->fd, .events = ev, .revents = 0};
            t->pfd_peer[n++] = r;
        }
    }
    int got = poll(t->pfd, (nfds_t)n, timeout_ms);
    if (got < 0) {
        if (errno == EINTR)
            return work;
        say(t, "poll", strerror(errno));
        return QUAY_EINTERNAL;
    }
    if (t->pfd[0].revents != 0) {
        char drain[64];
        while (read(t->wake[0], drain, sizeof drain) > 0)
            ;
        t->woke = 1;
    }
    for (int i = 1; i < n && got > 0; i++) {
        int32_t r = t->pfd_peer[i];
        short re = t->pfd[i].revents;
        if ((re & (POLLOUT | POLLERR | POLLHUP)) && t->peers[r].qhead != NULL &&
            t->peers[r].fd >= 0)
            work += flush_peer(t, r);
        if ((re & (POLLIN | POLLERR | POLLHUP)) && t->peers[r].fd >= 0 && !t->peers[r].held)
            work += rx_peer(t, r);
    }
    return work;
}

static int uds_poll(quay_transport *tp, int64_t timeout_ns)
{
    uds *t = (uds *)tp;
    t->woke = 0;
    int work = poll_once(t, 0);
    /* (a wake since the last poll counts: no blocking then) */
    if (work != 0 || timeout_ns <= 0 || t->woke)
        return work;
    int64_t ms = timeout_ns / 1000000 + (timeout_ns % 1000000 != 0);
    return poll_once(t, ms > INT_MAX ? INT_MAX : (int)ms);
}

static void uds_wake(quay_transport *tp)
{
    char one = 1;
    ssize_t n = write(((uds *)tp)->wake[1], &one, 1); /* async-signal-safe */
    (void)n; /* full: a wake is pending anyway */
}

static int uds_bye(quay_transport *tp)
{
    uds *t = (uds *)tp;
    for (int32_t r = 0; r < tp->size; r++) {
        if (r == tp->rank || t->peers[r].state != PEER_LIVE || t->peers[r].wr_err != 0)
            continue;
        uds_item *it = item_new(UDS_BYE, 0, NULL, 0, 0, 0);
        if (it == NULL)
            return QUAY_ENOMEM;
        (void)out_item(t, r, it); /* QUAY_EPEER: it needs no bye */
    }
    return 0;
}

static int uds_busy(const quay_transport *tp)
{
    return ((const uds *)tp)->nqueued > 0;
}

static void uds_close(quay_transport *tp)
{
    uds *t = (uds *)tp;
    for (int32_t r = 0; t->peers != NULL && r < tp->size; r++) {
        uds_peer *p = &t->peers[r];
        uds_item *it;
        if (p->fd >= 0)
            close(p->fd);
        while ((it = p->qhead) != NULL) {
            p->qhead = it->next;
            free(it);
        }
        free(p->buf);
    }
    for (int k = 0; k < 2; k++)
        if (t->wake[k] >= 0)
            close(t->wake[k]);
    free(t->peers);
    free(t->pfd);
    free(t->pfd_peer);
    free(t);
}

static const quay_transport_ops uds_ops = {
    .abi_version = QUAY_TRANSPORT_ABI_VERSION,
    .name = "uds",
    .send = uds_send,
    .rdma = NULL, /* no RDMA caps */
    .poll = uds_poll,
    .wake = uds_wake,
    .bye = uds_bye,
    .busy = uds_busy,
    .close = uds_close,
};

/* ---- open --------------------------------------------------------------------------- */

QUAY_TRANSPORT_EXPORT int quay_transport_open(int abi_version, int32_t rank, int32_t size,
                                              const quay_transport_sink *sink,
                                              quay_transport **pt)
{
    if (pt == NULL)
        return QUAY_EINVAL;
    *pt = NULL;
    if (abi_version < UDS_NEEDS_ABI) {
        fprintf(stderr, "quay rank %d: uds: the runtime's transport ABI is %d; this adapter "
                        "needs %d or later\n", (int)rank, abi_version, UDS_NEEDS_ABI);
        return QUAY_EVERSION;
    }
    if (sink == NULL || size < 1 || rank < 0 || rank >= size)
        return QUAY_EINVAL;
    uds *t = calloc(1, sizeof *t);
    if (t == NULL)
        return QUAY_ENOMEM;
    t->base.ops = &uds_ops;
    t->base.sink = sink;
    t->base.rank = rank;
    t->base.size = size;
    t->wake[0] = t->wake[1] = -1;
    t->peers = calloc((size_t)size, sizeof *t->peers);
    t->pfd = calloc((size_t)size + 1, sizeof *t->pfd);
    t->pfd_peer = calloc((size_t)size + 1, sizeof *t->pfd_peer);
    int *fds = malloc((size_t)size * sizeof *fds);
    int rc = t->peers == NULL || t->pfd == NULL || t->pfd_peer == NULL || fds == NULL
                 ? QUAY_ENOMEM
                 : 0;
    if (rc == 0 && pipe(t->wake) != 0) {
        say(t, "pipe", strerror(errno));
        t->wake[0] = t->wake[1] = -1;
        rc = QUAY_EINVAL;
    }
    for (int k = 0; rc == 0 && k < 2; k++)
        if (fcntl(t->wake[k], F_SETFL, O_NONBLOCK) != 0 ||
            fcntl(t->wake[k], F_SETFD, FD_CLOEXEC) != 0)
            rc = QUAY_EINVAL;
    if (rc == 0) {
        t->pfd[0] = (struct pollfd){.fd = t->wake[0], .events = POLLIN, .revents = 0};
        for (int32_t r = 0; r < size; r++)
            t->peers[r].fd = fds[r] = -1;
        rc = size > 1 ? uds_meet(rank, size, fds) : 0;
        for (int32_t r = 0; rc == 0 && r < size; r++)
            t->peers[r].fd = fds[r];
    }
    free(fds);
    if (rc != 0) {
        uds_close(&t->base);
        return rc;
    }
    t->base.caps = QUAY_CAP_ORDERED;
    *pt = &t->base;
    return 0;
}
