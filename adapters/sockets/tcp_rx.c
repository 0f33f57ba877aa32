/*
 * tcp_rx.c — frames in (tcp.h).
 *
 * Each readable peer is read into one receive buffer shared by all peers
 * (TCP_RBUF: many small frames per recv); whole frames are handled at
 * once and a partial one is carried over in the peer's own small buffer.
 * Bodies that go somewhere else — a large packet's own buffer, a GET
 * reply's destination, a PUT's target region — are read straight there
 * once what the buffer already holds is copied (direct placement: no
 * staging copy for bulk data).
 *
 * A packet the engine refuses (QUAY_EAGAIN) is held, and every later
 * packet from that peer joins it in a FIFO, but RDMA requests and replies
 * behind it are still served: they may be what lets the engine take the
 * packet. Only a full FIFO stops reading the peer, as do too many replies
 * queued toward it (tcp.h, TCP_REPLY_MAX): each bound is checked before
 * every frame, frames already received wait in the carry (at most one
 * receive buffer), and the socket is left unread, so the peer's writes
 * block in its kernel rather than growing anything here.
 */
#include "tcp.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

void tcp_peer_fail(tcp_t *t, int32_t peer, const char *fmt, ...)
{
    tcp_peer *p = &t->peers[peer];
    char why[200];
    va_list ap;
    if (p->state != TCP_LIVE)
        return;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    fprintf(stderr, "quay rank %d: tcp: peer %d %s\n", (int)t->base.rank, (int)peer, why);
    tcp_peer_close(t, peer, TCP_FAILED);
    if (p->got_bye)
        return; /* it finished first: its bye is told after its packets */
    if (p->hold_head != NULL)
        p->fail_owed = 1; /* everything it sent goes to the engine first */
    else
        t->base.sink->peer_failed(t->base.sink->ctx, peer);
}

static void tell_bye(tcp_t *t, int32_t peer)
{
    t->peers[peer].bye_told = 1;
    t->base.sink->peer_bye(t->base.sink->ctx, peer);
}

static int hold_full(const tcp_peer *p)
{
    return p->hold_bytes >= TCP_HOLD_BYTES || p->hold_n >= TCP_HOLD_FRAMES;
}

/* Between frames: is a bound reached? Then the peer is not read (until
 * tcp_rx_resume). Within a body nothing stops: it goes where it was
 * already bound for. */
static int rx_stop(tcp_peer *p)
{
    if (p->rx_mode == RX_HDR) {
        if (hold_full(p))
            p->rx_paused |= TCP_PAUSE_HOLD;
        if (p->reply_bytes + sizeof(tcp_item) > TCP_REPLY_MAX)
            p->rx_paused |= TCP_PAUSE_REPLY;
    }
    return p->rx_paused != 0;
}

/* A whole packet: to the engine, unless it refuses or packets are held
 * already; then it joins the FIFO (`own`, the peer's big buffer holding
 * it, is taken over instead of copied). 0, or QUAY_ENOMEM. */
static int take_pkt(tcp_t *t, int32_t peer, const uint8_t *b, size_t len, tcp_held *own)
{
    tcp_peer *p = &t->peers[peer];
    tcp_held *h = own;
    if (p->hold_head == NULL &&
        t->base.sink->packet(t->base.sink->ctx, peer, b, len) != QUAY_EAGAIN)
        return 0;
    if (h == NULL) {
        h = malloc(sizeof *h + len);
        if (h == NULL)
            return QUAY_ENOMEM;
        memcpy(h->data, b, len);
        h->len = h->cap = len;
    } else {
        p->big = NULL;
    }
    h->next = NULL;
    if (p->hold_tail != NULL) {
        p->hold_tail->next = h;
    } else {
        p->hold_head = h;
        t->nheld++;
    }
    p->hold_tail = h;
    p->hold_bytes += len;
    p->hold_n++;
    return 0;
}

int tcp_rx_held(tcp_t *t, int32_t peer)
{
    tcp_peer *p = &t->peers[peer];
    tcp_held *h;
    int work = 0;
    while ((h = p->hold_head) != NULL) {
        if (t->base.sink->packet(t->base.sink->ctx, peer, h->data, h->len) == QUAY_EAGAIN)
            break;
        p->hold_head = h->next;
        if (p->hold_head == NULL) {
            p->hold_tail = NULL;
            t->nheld--;
        }
        p->hold_bytes -= h->len;
        p->hold_n--;
        free(h);
        work++;
    }
    if (p->hold_head != NULL)
        return work;
    /* Nothing held any more: what waited behind the packets comes now. */
    if (p->got_bye && !p->bye_told)
        tell_bye(t, peer);
    if (p->fail_owed) {
        p->fail_owed = 0;
        t->base.sink->peer_failed(t->base.sink->ctx, peer);
    }
    if (p->rx_paused & TCP_PAUSE_HOLD)
        work += tcp_rx_resume(t, peer, TCP_PAUSE_HOLD);
    return work;
}

int tcp_rx_resume(tcp_t *t, int32_t peer, uint8_t why)
{
    tcp_peer *p = &t->peers[peer];
    int work = 0;
    p->rx_paused &= (uint8_t)~why;
    if (p->rx_paused == 0 && p->fd >= 0)
        work = tcp_rx_peer(t, peer); /* frames carried over, then the socket */
    tcp_peer_arm(t, peer);
    return work;
}

/* A body has all come in. */
static void body_done(tcp_t *t, int32_t peer)
{
    tcp_peer *p = &t->peers[peer];
    uint8_t mode = p->rx_mode;
    p->rx_mode = RX_HDR;
    switch (mode) {
    case RX_BIG:
        if (take_pkt(t, peer, p->big->data, p->big->len, p->big) != 0)
            tcp_peer_fail(t, peer, "cannot be served: out of memory");
        break;
    case RX_GET:
        tcp_rdma_finish(t, p->rx_op, 0);
        break;
    case RX_PUT:
    case RX_DISCARD:
        if (tcp_rdma_put_done(t, peer, p->rx_cookie, p->rx_status) == QUAY_ENOMEM)
            tcp_peer_fail(t, peer, "cannot be served: out of memory");
        break;
    default:
        break;
    }
}

/* The reply a frame answers: its action's index, or -1 after failing the
 * peer (a reply length other than the request's, a status that is not an
 * error code, a cookie naming nothing). */
static int64_t reply_op(tcp_t *t, int32_t peer, unsigned type, uint64_t cookie, int32_t status,
                        uint32_t zero)
{
    int64_t idx;
    if (zero != 0 || status > 0) {
        tcp_peer_fail(t, peer, "sent garbage (a reply with status %d)", (int)status);
        return -1;
    }
    idx = tcp_rdma_find(t, peer, cookie, type);
    if (idx < 0)
        tcp_peer_fail(t, peer, "sent garbage (a reply of type %u to no request, cookie %#llx)",
                      type, (unsigned long long)cookie);
    return idx;
}

/* The frame at h (hl header bytes in, avail in all) other than PKT and
 * BYE. Returns the bytes consumed, or 0 after failing the peer. */
static size_t rx_rdma_frame(tcp_t *t, int32_t peer, const uint8_t *h, size_t hl, uint64_t body)
{
    tcp_peer *p = &t->peers[peer];
    const uint8_t *x = h + TCP_PREFIX;
    unsigned type = h[0];
    int64_t idx;
    int rc = 0;
    if (body != 0 && type != TCP_GET_REPLY && type != TCP_PUT) {
        tcp_peer_fail(t, peer, "sent garbage (a %llu-byte body on a type %u frame)",
                      (unsigned long long)body, type);
        return 0;
    }
    switch (type) {
    case TCP_GET_REQ:
        rc = tcp_rdma_serve_get(t, peer, tcp_get64(x), tcp_get64(x + 8), tcp_get64(x + 16),
                                tcp_get64(x + 24));
        break;
    case TCP_ATOMIC_REQ:
        if (tcp_get32(x + 44) != 0) {
            tcp_peer_fail(t, peer, "sent garbage (an atomic request with reserved bits)");
            return 0;
        }
        rc = tcp_rdma_serve_atomic(t, peer, tcp_get64(x), tcp_get64(x + 8), tcp_get64(x + 16),
                                   tcp_get64(x + 24), tcp_get64(x + 32), tcp_get32(x + 40));
        break;
    case TCP_PUT: {
        void *addr = NULL;
        rc = t->base.sink->mem_resolve(t->base.sink->ctx, peer, tcp_get64(x + 8),
                                       tcp_get64(x + 16), body, QUAY_MEM_WRITE, &addr);
        /* The body goes straight to the region, or nowhere if refused
         * (the stream must still be read past it). */
        p->rx_mode = rc == 0 ? RX_PUT : RX_DISCARD;
        p->rx_dst = addr;
        p->rx_left = body;
        p->rx_cookie = tcp_get64(x);
        p->rx_status = rc;
        return hl;
    }
    case TCP_GET_REPLY: {
        int32_t status = (int32_t)tcp_get32(x + 8);
        idx = reply_op(t, peer, type, tcp_get64(x), status, tcp_get32(x + 12));
        if (idx < 0)
            return 0;
        uint64_t want = status == 0 ? t->optab.ops[idx].len : 0;
        if (body != want) {
            tcp_peer_fail(t, peer, "sent garbage (a %llu-byte reply to a %llu-byte get)",
                          (unsigned long long)body, (unsigned long long)want);
            return 0;
        }
        if (body == 0) {
            tcp_rdma_finish(t, (uint32_t)idx, status);
        } else {
            p->rx_mode = RX_GET;
            p->rx_dst = t->optab.ops[idx].local;
            p->rx_left = body;
            p->rx_op = (uint32_t)idx;
        }
        return hl;
    }
    case TCP_PUT_DONE: {
        int32_t status = (int32_t)tcp_get32(x + 8);
        idx = reply_op(t, peer, type, tcp_get64(x), status, tcp_get32(x + 12));
        if (idx < 0)
            return 0;
        tcp_rdma_finish(t, (uint32_t)idx, status);
        return hl;
    }
    case TCP_ATOMIC_REPLY: {
        int32_t status = (int32_t)tcp_get32(x + 16);
        idx = reply_op(t, peer, type, tcp_get64(x), status, tcp_get32(x + 20));
        if (idx < 0)
            return 0;
        if (status == 0) {
            uint64_t old = tcp_get64(x + 8);
            memcpy(t->optab.ops[idx].local, &old, sizeof old);
        }
        tcp_rdma_finish(t, (uint32_t)idx, status);
        return hl;
    }
    default:
        break;
    }
    if (rc == QUAY_ENOMEM) {
        tcp_peer_fail(t, peer, "cannot be served: out of memory");
        return 0;
    }
    return hl;
}

/* Take in the frames of buf[*ppos, len): every whole one, and the start
 * of a body that is read straight to its destination. A partial frame is
 * left at *ppos. Returns the frames handled. */
static int rx_parse(tcp_t *t, int32_t peer, const uint8_t *buf, size_t len, size_t *ppos)
{
    tcp_peer *p = &t->peers[peer];
    size_t pos = *ppos;
    int work = 0;
    while (p->state == TCP_LIVE && !rx_stop(p)) {
        size_t avail = len - pos;
        if (p->rx_mode != RX_HDR) {
            size_t n = avail < p->rx_left ? avail : (size_t)p->rx_left;
            if (p->rx_mode != RX_DISCARD && n > 0) {
                memcpy(p->rx_dst, buf + pos, n);
                p->rx_dst += n;
            }
            p->rx_left -= n;
            pos += n;
            if (p->rx_left > 0)
                break;
            work++;
            body_done(t, peer);
            continue;
        }
        if (avail < TCP_PREFIX)
            break;
        const uint8_t *h = buf + pos;
        unsigned type = h[0];
        uint64_t body = tcp_get64(h + 4);
        if (type < TCP_PKT || type > TCP_TYPE_MAX || h[1] != 0 || tcp_get16(h + 2) != 0) {
            tcp_peer_fail(t, peer, "sent garbage (frame type %u, flags %#x, reserved %#x)", type,
                          h[1], tcp_get16(h + 2));
            break;
        }
        size_t hl = TCP_PREFIX + tcp_ext_len(type);
        if (avail < hl)
            break;
        if (type == TCP_PKT) {
            if (p->got_bye || body > TCP_PKT_MAX) {
                tcp_peer_fail(t, peer, "sent garbage (a %llu-byte packet%s; limit %u)",
                              (unsigned long long)body, p->got_bye ? " after its bye" : "",
                              TCP_PKT_MAX);
                break;
            }
            if (body <= TCP_PKT_INLINE) {
                if (avail - hl < body)
                    break; /* the rest is still to come */
                if (take_pkt(t, peer, h + hl, (size_t)body, NULL) != 0) {
                    tcp_peer_fail(t, peer, "cannot be served: out of memory");
                    break;
                }
                pos += hl + (size_t)body;
                work++;
                continue;
            }
            /* Too big for the buffer: into its own, read straight there. */
            if (p->big == NULL || p->big->cap < body) {
                free(p->big);
                p->big = malloc(sizeof *p->big + (size_t)body);
                if (p->big == NULL) {
                    tcp_peer_fail(t, peer, "cannot be served: no memory for a %llu-byte packet",
                                  (unsigned long long)body);
                    break;
                }
                p->big->cap = (size_t)body;
            }
            p->big->len = (size_t)body;
            p->rx_mode = RX_BIG;
            p->rx_dst = p->big->data;
            p->rx_left = body;
            pos += hl;
            continue;
        }
        if (type == TCP_BYE) {
            if (body != 0 || p->got_bye) {
                tcp_peer_fail(t, peer, "sent garbage (a bad bye)");
                break;
            }
            p->got_bye = 1;
            if (p->hold_head == NULL)
                tell_bye(t, peer);
            pos += hl;
            work++;
            continue;
        }
        size_t used = rx_rdma_frame(t, peer, h, hl, body);
        if (used == 0)
            break;
        pos += used;
        work++;
    }
    *ppos = pos;
    return work;
}

/* The peer closed its side (EOF), or the connection broke (err != 0):
 * the normal end after its bye, else a failure. */
static void rx_end(tcp_t *t, int32_t peer, size_t partial, int err)
{
    tcp_peer *p = &t->peers[peer];
    if (p->got_bye && partial == 0 && p->rx_mode == RX_HDR) {
        tcp_peer_close(t, peer, TCP_DONE);
        return;
    }
    if (err != 0)
        tcp_peer_fail(t, peer, "broke the connection (%s)", strerror(err));
    else if (partial != 0 || p->rx_mode != RX_HDR)
        tcp_peer_fail(t, peer, "closed the connection in the middle of a frame");
    else
        tcp_peer_fail(t, peer, "closed the connection without a bye (did it exit?)");
}

/* Keep buf[0..len) (a partial frame) for the next read. */
static int save_carry(tcp_peer *p, const uint8_t *buf, size_t len)
{
    if (len > p->carry_cap) {
        uint8_t *c = realloc(p->carry, len);
        if (c == NULL)
            return QUAY_ENOMEM;
        p->carry = c;
        p->carry_cap = len;
    }
    memcpy(p->carry, buf, len);
    p->carry_len = len;
    return 0;
}

int tcp_rx_peer(tcp_t *t, int32_t peer)
{
    tcp_peer *p = &t->peers[peer];
    uint8_t *buf = t->rbuf;
    size_t len = 0;
    int work = 0;
    if (p->carry_len > 0) {
        size_t pos = 0;
        memcpy(buf, p->carry, p->carry_len);
        len = p->carry_len;
        p->carry_len = 0;
        /* Whole frames first, if reading stopped before them. */
        work += rx_parse(t, peer, buf, len, &pos);
        if (p->fd < 0)
            len = pos = 0;
        memmove(buf, buf + pos, len - pos);
        len -= pos;
    }
    for (int k = 0; k < TCP_RX_RECVS && p->fd >= 0 && !rx_stop(p); k++) {
        size_t want;
        ssize_t n;
        int direct = len == 0 && p->rx_left >= TCP_DIRECT_MIN &&
                     (p->rx_mode == RX_BIG || p->rx_mode == RX_GET || p->rx_mode == RX_PUT);
        if (direct) {
            want = p->rx_left < (1u << 30) ? (size_t)p->rx_left : (1u << 30);
            n = recv(p->fd, p->rx_dst, want, MSG_DONTWAIT);
            if (n > 0) {
                p->rx_dst += n;
                p->rx_left -= (uint64_t)n;
                if (p->rx_left == 0) {
                    work++;
                    body_done(t, peer);
                }
            }
        } else {
            want = TCP_RBUF - len;
            n = recv(p->fd, buf + len, want, MSG_DONTWAIT);
            if (n > 0) {
                size_t pos = 0;
                len += (size_t)n;
                work += rx_parse(t, peer, buf, len, &pos);
                if (p->fd < 0) {
                    len = 0;
                    break;
                }
                memmove(buf, buf + pos, len - pos);
                len -= pos;
            }
        }
        if (n > 0) {
            if ((size_t)n < want)
                break; /* the socket is drained */
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        rx_end(t, peer, len, n == 0 ? 0 : errno);
        len = 0;
        break;
    }
    if (len > 0 && p->fd >= 0 && save_carry(p, buf, len) != 0)
        tcp_peer_fail(t, peer, "cannot be served: out of memory");
    tcp_peer_arm(t, peer);
    return work;
}

void tcp_rx_free(tcp_t *t)
{
    for (int32_t r = 0; r < t->base.size; r++) {
        tcp_peer *p = &t->peers[r];
        while (p->hold_head != NULL) {
            tcp_held *h = p->hold_head;
            p->hold_head = h->next;
            free(h);
        }
        p->hold_tail = NULL;
        free(p->big);
        free(p->carry);
        p->big = NULL;
        p->carry = NULL;
    }
}
