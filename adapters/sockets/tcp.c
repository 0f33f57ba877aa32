/*
 * tcp.c — the TCP transport: open / close, frames out (a queue per peer
 * behind its socket), poll and blocking (tcp.h).
 *
 * Sending writes at once when nothing is queued toward the peer: most
 * packets leave inside send, and the engine may reuse its iovecs at once.
 * What the socket does not take waits in the peer's queue, pointing at
 * the engine's iovecs, and poll moves it out when epoll says the socket
 * is writable (EPOLLOUT is asked for only while a queue is non-empty),
 * many frames per sendmsg.
 */
#include "tcp.h"

#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "qrt_env.h"

#define TCP_CONNECT_MS_DEFAULT 30000
#define TCP_EVENTS 64
#define TCP_WAKE_KEY UINT64_MAX

uint64_t tcp_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void tcp_sock_opts(const tcp_t *t, int fd, int accepted)
{
    int one = 1;
    /* Failures only cost speed: the connection works without them. */
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (t->buf_bytes > 0) {
        (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &t->buf_bytes, sizeof t->buf_bytes);
        /* Not on an established connection: its receive buffer came from
         * the listener, and shrinking the window under the peer's segment
         * size would leave it sending by zero-window probes only. */
        if (!accepted)
            (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &t->buf_bytes, sizeof t->buf_bytes);
    }
}

/* ---- queue items ---------------------------------------------------------------------- */

static tcp_item *item_get(tcp_t *t)
{
    tcp_item *it = t->free_items;
    if (it != NULL) {
        t->free_items = it->next;
        t->nfree_items--;
        return it;
    }
    return malloc(sizeof *it);
}

static void item_put(tcp_t *t, tcp_item *it)
{
    if (t->nfree_items >= TCP_ITEM_CACHE) {
        free(it);
        return;
    }
    it->next = t->free_items;
    t->free_items = it;
    t->nfree_items++;
}

/* Take up to n written bytes off the front of the item; returns how many
 * it took. */
static size_t item_consume(tcp_item *it, size_t n)
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

static void queue_push(tcp_t *t, tcp_peer *p, tcp_item *it)
{
    it->next = NULL;
    if (p->qtail != NULL) {
        p->qtail->next = it;
    } else {
        p->qhead = it;
        t->nqueued++;
    }
    p->qtail = it;
}

static tcp_item *queue_pop(tcp_t *t, tcp_peer *p)
{
    tcp_item *it = p->qhead;
    if (it != NULL) {
        p->qhead = it->next;
        if (p->qhead == NULL) {
            p->qtail = NULL;
            t->nqueued--;
        }
    }
    return it;
}

/* ---- frames out ----------------------------------------------------------------------- */

void tcp_peer_arm(tcp_t *t, int32_t peer)
{
    tcp_peer *p = &t->peers[peer];
    uint32_t want = 0;
    if (p->fd < 0)
        return;
    if (!p->rx_paused)
        want |= EPOLLIN;
    if (p->qhead != NULL && p->wr_err == 0)
        want |= EPOLLOUT;
    if (want == p->ep_events)
        return;
    /* Not registered at all while nothing is wanted: epoll reports
     * EPOLLHUP / EPOLLERR regardless of the mask, and a paused peer's
     * hang-up would make every wait return at once. */
    struct epoll_event ev = {.events = want, .data.u64 = (uint64_t)peer};
    int op = p->ep_events == 0 ? EPOLL_CTL_ADD : want == 0 ? EPOLL_CTL_DEL : EPOLL_CTL_MOD;
    if (epoll_ctl(t->ep, op, p->fd, &ev) == 0)
        p->ep_events = want;
}

tcp_item *tcp_item_frame(tcp_t *t, const uint8_t *hdr, size_t hlen, const quay_iov *iov,
                         uint32_t iovcnt, int has_token, uint64_t token)
{
    tcp_item *it = item_get(t);
    if (it == NULL)
        return NULL;
    memcpy(it->hdr, hdr, hlen);
    it->has_token = (uint8_t)(has_token != 0);
    it->reply = 0;
    it->token = token;
    it->first = 0;
    it->niov = 1;
    it->iov[0] = (struct iovec){it->hdr, hlen};
    for (uint32_t i = 0; i < iovcnt; i++) {
        if (iov[i].len == 0)
            continue;
        it->iov[it->niov++] = (struct iovec){(void *)(uintptr_t)iov[i].base, iov[i].len};
    }
    return it;
}

void tcp_item_free(tcp_t *t, tcp_item *it)
{
    item_put(t, it);
}

int tcp_out_item(tcp_t *t, int32_t peer, tcp_item *it)
{
    tcp_peer *p = &t->peers[peer];
    if (p->state != TCP_LIVE || p->fd < 0 || p->wr_err != 0) {
        item_put(t, it);
        return QUAY_EPEER;
    }
    if (p->qhead == NULL) {
        struct msghdr m;
        size_t total = 0;
        ssize_t n;
        for (int k = 0; k < it->niov; k++)
            total += it->iov[k].iov_len;
        memset(&m, 0, sizeof m);
        m.msg_iov = it->iov;
        m.msg_iovlen = it->niov;
        do
            n = sendmsg(p->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
        while (n < 0 && errno == EINTR);
        if (n < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK) {
                /* Settled by the next poll (the sink is called from there
                 * only): it reads what the peer sent, then fails it. */
                p->wr_err = errno;
                t->nwr_err++;
                item_put(t, it);
                return QUAY_EPEER;
            }
            n = 0;
        }
        if ((size_t)n == total) {
            item_put(t, it);
            return 1;
        }
        item_consume(it, (size_t)n);
    }
    if (it->reply)
        p->reply_bytes += sizeof *it;
    queue_push(t, p, it);
    tcp_peer_arm(t, peer);
    return 0;
}

int tcp_out_frame(tcp_t *t, int32_t peer, const uint8_t *hdr, size_t hlen, const quay_iov *iov,
                  uint32_t iovcnt, int has_token, uint64_t token)
{
    tcp_peer *p = &t->peers[peer];
    if (p->state != TCP_LIVE || p->fd < 0 || p->wr_err != 0)
        return QUAY_EPEER;
    /* Taken before writing: once part of a frame is on the wire, the rest
     * must have a place to wait. */
    tcp_item *it = tcp_item_frame(t, hdr, hlen, iov, iovcnt, has_token, token);
    if (it == NULL)
        return QUAY_ENOMEM;
    return tcp_out_item(t, peer, it);
}

int tcp_out_reply(tcp_t *t, int32_t peer, const uint8_t *hdr, size_t hlen, const quay_iov *iov,
                  uint32_t iovcnt)
{
    tcp_peer *p = &t->peers[peer];
    if (p->state != TCP_LIVE || p->fd < 0 || p->wr_err != 0)
        return QUAY_EPEER;
    tcp_item *it = tcp_item_frame(t, hdr, hlen, iov, iovcnt, 0, 0);
    if (it == NULL)
        return QUAY_ENOMEM;
    it->reply = 1;
    return tcp_out_item(t, peer, it);
}

static void write_failed(tcp_t *t, int32_t peer, int err);

/* Move peer's queue into its socket while it takes it. Returns the frames
 * finished. */
static int flush_peer(tcp_t *t, int32_t peer)
{
    tcp_peer *p = &t->peers[peer];
    struct iovec v[TCP_IOV_BATCH];
    int work = 0;
    while (p->qhead != NULL && p->fd >= 0) {
        int nv = 0;
        size_t total = 0;
        for (tcp_item *it = p->qhead; it != NULL; it = it->next) {
            if (nv + (it->niov - it->first) > TCP_IOV_BATCH)
                break;
            for (int k = it->first; k < it->niov; k++) {
                v[nv++] = it->iov[k];
                total += it->iov[k].iov_len;
            }
        }
        struct msghdr m;
        memset(&m, 0, sizeof m);
        m.msg_iov = v;
        m.msg_iovlen = (size_t)nv;
        ssize_t n = sendmsg(p->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                break;
            write_failed(t, peer, errno);
            return work;
        }
        size_t left = (size_t)n;
        while (p->qhead != NULL) {
            tcp_item *it = p->qhead;
            left -= item_consume(it, left);
            if (it->first < it->niov)
                break;
            queue_pop(t, p);
            if (it->reply)
                p->reply_bytes -= sizeof *it;
            if (it->has_token)
                t->base.sink->op_done(t->base.sink->ctx, it->token, 0);
            item_put(t, it);
            work++;
        }
        if ((size_t)n < total)
            break; /* the socket is full */
    }
    /* The peer reads its replies again: read it again too. */
    if ((p->rx_paused & TCP_PAUSE_REPLY) && p->reply_bytes <= TCP_REPLY_LOW)
        return work + tcp_rx_resume(t, peer, TCP_PAUSE_REPLY);
    tcp_peer_arm(t, peer);
    return work;
}

void tcp_peer_close(tcp_t *t, int32_t peer, uint8_t state)
{
    tcp_peer *p = &t->peers[peer];
    tcp_item *it;
    if (p->fd >= 0) {
        if (p->ep_events != 0)
            (void)epoll_ctl(t->ep, EPOLL_CTL_DEL, p->fd, NULL);
        close(p->fd);
        p->fd = -1;
        p->ep_events = 0;
    }
    p->state = state;
    if (p->wr_err != 0) {
        p->wr_err = 0;
        t->nwr_err--;
    }
    while ((it = queue_pop(t, p)) != NULL) {
        if (it->has_token)
            t->base.sink->op_done(t->base.sink->ctx, it->token, QUAY_EPEER);
        item_put(t, it);
    }
    p->reply_bytes = 0;
    p->rx_mode = RX_HDR;
    p->rx_left = 0;
    p->carry_len = 0;
    p->rx_paused = 0;
    tcp_rdma_fail_peer(t, peer);
}

/* A write failed: take in what the peer sent before (its bye among it,
 * perhaps), then it is gone. */
static void write_failed(tcp_t *t, int32_t peer, int err)
{
    tcp_peer *p = &t->peers[peer];
    if (p->wr_err == 0) {
        p->wr_err = err;
        t->nwr_err++;
    }
    if (!p->rx_paused)
        (void)tcp_rx_peer(t, peer);
    if (p->state != TCP_LIVE)
        return;
    if (p->got_bye)
        tcp_peer_close(t, peer, TCP_DONE);
    else
        tcp_peer_fail(t, peer, "broke the connection (%s)", strerror(err));
}

/* ---- the transport's operations ------------------------------------------------------- */

static int tcp_send(quay_transport *tp, int32_t peer, const quay_iov *iov, uint32_t iovcnt,
                    uint64_t token)
{
    tcp_t *t = (tcp_t *)tp;
    uint8_t h[TCP_PREFIX];
    uint64_t len = 0;
    if (peer < 0 || peer >= tp->size || peer == tp->rank || iovcnt < 1 ||
        iovcnt > QUAY_ACTION_IOV_MAX)
        return QUAY_EINVAL;
    for (uint32_t i = 0; i < iovcnt; i++)
        len += iov[i].len;
    if (len > TCP_PKT_MAX) {
        fprintf(stderr,
                "quay rank %d: tcp: a %llu-byte packet exceeds the transport's limit of %u "
                "bytes (lower QUAY_EAGER_MAX / QUAY_FRAG_SIZE)\n",
                (int)tp->rank, (unsigned long long)len, TCP_PKT_MAX);
        return QUAY_EINVAL;
    }
    tcp_prefix(h, TCP_PKT, len);
    return tcp_out_frame(t, peer, h, sizeof h, iov, iovcnt, 1, token);
}

static int tcp_rdma_op(quay_transport *tp, const quay_action *a)
{
    return tcp_rdma_start((tcp_t *)tp, a);
}

static int poll_once(tcp_t *t, int timeout_ms)
{
    struct epoll_event ev[TCP_EVENTS];
    int work = 0, n;
    if (t->nwr_err > 0) {
        for (int32_t r = 0; r < t->base.size; r++)
            if (t->peers[r].wr_err != 0 && t->peers[r].state == TCP_LIVE)
                write_failed(t, r, t->peers[r].wr_err);
    }
    /* Held packets first: they come before anything read now. */
    if (t->nheld > 0) {
        for (int32_t r = 0; r < t->base.size; r++)
            if (t->peers[r].hold_head != NULL)
                work += tcp_rx_held(t, r);
    }
    if (work > 0)
        timeout_ms = 0;
    n = epoll_wait(t->ep, ev, TCP_EVENTS, timeout_ms);
    if (n < 0) {
        if (errno == EINTR)
            return work;
        fprintf(stderr, "quay rank %d: tcp: epoll_wait: %s\n", (int)t->base.rank,
                strerror(errno));
        return QUAY_EINTERNAL;
    }
    for (int i = 0; i < n; i++) {
        uint64_t key = ev[i].data.u64;
        if (key == TCP_WAKE_KEY) {
            uint64_t v;
            ssize_t got = read(t->evfd, &v, sizeof v);
            (void)got;
            t->woke = 1;
            continue;
        }
        int32_t r = (int32_t)key;
        tcp_peer *p = &t->peers[r];
        if ((ev[i].events & EPOLLOUT) && p->fd >= 0)
            work += flush_peer(t, r);
        if ((ev[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) && p->fd >= 0 && !p->rx_paused)
            work += tcp_rx_peer(t, r);
    }
    return work;
}

static int tcp_poll(quay_transport *tp, int64_t timeout_ns)
{
    tcp_t *t = (tcp_t *)tp;
    int work;
    t->woke = 0;
    work = poll_once(t, 0);
    /* A wake that came before this call counts as well: do not block. */
    if (work != 0 || timeout_ns <= 0 || t->woke)
        return work;
    int64_t ms = timeout_ns / 1000000 + (timeout_ns % 1000000 != 0);
    return poll_once(t, ms > INT_MAX ? INT_MAX : (int)ms);
}

static void tcp_wake(quay_transport *tp)
{
    uint64_t one = 1;
    ssize_t n = write(((tcp_t *)tp)->evfd, &one, sizeof one);
    (void)n; /* EAGAIN: the counter is already non-zero, a wake is pending */
}

static int tcp_bye(quay_transport *tp)
{
    tcp_t *t = (tcp_t *)tp;
    uint8_t h[TCP_PREFIX];
    tcp_prefix(h, TCP_BYE, 0);
    for (int32_t r = 0; r < tp->size; r++) {
        if (r == tp->rank)
            continue;
        /* Queued behind everything sent before; a peer already gone
         * needs none (QUAY_EPEER). */
        if (tcp_out_frame(t, r, h, sizeof h, NULL, 0, 0, 0) == QUAY_ENOMEM)
            return QUAY_ENOMEM;
    }
    return 0;
}

static int tcp_busy(const quay_transport *tp)
{
    return ((const tcp_t *)tp)->nqueued > 0;
}

static void tcp_close(quay_transport *tp)
{
    tcp_t *t = (tcp_t *)tp;
    if (t == NULL)
        return;
    if (t->peers != NULL) {
        for (int32_t r = 0; r < tp->size; r++) {
            tcp_peer *p = &t->peers[r];
            tcp_item *it;
            if (p->fd >= 0)
                close(p->fd);
            while ((it = p->qhead) != NULL) {
                p->qhead = it->next;
                free(it);
            }
            while ((it = p->whead) != NULL) {
                p->whead = it->next;
                free(it);
            }
        }
        tcp_rx_free(t);
    }
    while (t->free_items != NULL) {
        tcp_item *it = t->free_items;
        t->free_items = it->next;
        free(it);
    }
    tcp_rdma_free(t);
    if (t->ep >= 0)
        close(t->ep);
    if (t->evfd >= 0)
        close(t->evfd);
    free(t->rbuf);
    free(t->peers);
    free(t);
}

static const quay_transport_ops tcp_ops = {
    .abi_version = QUAY_TRANSPORT_ABI_VERSION,
    .name = "tcp",
    .send = tcp_send,
    .rdma = tcp_rdma_op,
    .poll = tcp_poll,
    .wake = tcp_wake,
    .bye = tcp_bye,
    .busy = tcp_busy,
    .close = tcp_close,
};

/* ---- open ------------------------------------------------------------------------------ */

int tcp_env_buf(int *bytes)
{
    uint64_t kb = 0;
    int h = qrt_env_u64("QUAY_TCP_BUF_KB", 1, 1u << 20, &kb);
    *bytes = h == 0 ? (int)(kb * 1024u) : 0;
    return h < 0 ? QUAY_EINVAL : 0;
}

static int read_knobs(tcp_t *t, uint64_t *rdma)
{
    t->connect_ms = TCP_CONNECT_MS_DEFAULT;
    *rdma = 1;
    if (qrt_env_u64("QUAY_TCP_CONNECT_MS", 1, 24u * 3600u * 1000u, &t->connect_ms) < 0 ||
        qrt_env_u64("QUAY_TCP_RDMA", 0, 1, rdma) < 0)
        return QUAY_EINVAL;
    return tcp_env_buf(&t->buf_bytes);
}

int qrt_tcp_open(int32_t rank, int32_t size, const qrt_tcp_dir *dir, const quay_transport_sink *sink,
                 quay_transport **pt)
{
    uint64_t rdma = 1;
    tcp_t *t;
    int rc;
    if (pt == NULL)
        return QUAY_EINVAL;
    *pt = NULL;
    if (size < 1 || rank < 0 || rank >= size || dir == NULL || sink == NULL)
        return QUAY_EINVAL;
    t = calloc(1, sizeof *t);
    if (t == NULL)
        return QUAY_ENOMEM;
    t->base.ops = &tcp_ops;
    t->base.sink = sink;
    t->base.rank = rank;
    t->base.size = size;
    t->ep = -1;
    t->evfd = -1;
    qrt_optab_init(&t->optab);
    rc = read_knobs(t, &rdma);
    if (rc == 0) {
        t->peers = calloc((size_t)size, sizeof *t->peers);
        t->rbuf = size > 1 ? malloc(TCP_RBUF) : NULL;
        if (t->peers == NULL || (size > 1 && t->rbuf == NULL))
            rc = QUAY_ENOMEM;
    }
    if (rc == 0) {
        for (int32_t r = 0; r < size; r++)
            t->peers[r].fd = -1;
        t->ep = epoll_create1(EPOLL_CLOEXEC);
        t->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = TCP_WAKE_KEY};
        if (t->ep < 0 || t->evfd < 0 || epoll_ctl(t->ep, EPOLL_CTL_ADD, t->evfd, &ev) != 0) {
            fprintf(stderr, "quay rank %d: tcp: epoll / eventfd: %s\n", (int)rank,
                    strerror(errno));
            rc = QUAY_EINVAL;
        }
    }
    if (rc == 0 && size > 1) {
        rc = tcp_connect_all(t, dir);
    } else {
        /* Ours to close, whatever happens. */
        if (dir->listen_fd >= 0)
            close(dir->listen_fd);
        if (dir->dead_fd >= 0)
            close(dir->dead_fd);
    }
    if (rc != 0) {
        tcp_close(&t->base);
        return rc;
    }
    for (int32_t r = 0; r < size; r++)
        tcp_peer_arm(t, r);
    /* Atomics stay without RDMA (as with shm): the engine has no other
     * way to do them, and they move no bulk data. */
    t->base.caps = QUAY_CAP_ORDERED | QUAY_CAP_RDMA_ATOMIC;
    if (rdma)
        t->base.caps |= QUAY_CAP_RDMA_GET | QUAY_CAP_RDMA_PUT;
    *pt = &t->base;
    return 0;
}
