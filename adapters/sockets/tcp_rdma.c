/*
 * tcp_rdma.c — software RDMA over the connections: the engine's
 * RDMA_GET / RDMA_PUT / RDMA_ATOMIC actions, executed by the TARGET
 * rank's transport (tcp.h).
 *
 * The initiator knows (peer, key, offset); only the target's engine knows
 * the address (<quay/quay_adapter.h>). So the initiator sends a request naming
 * the action by a cookie, the target's transport asks its engine
 * (sink->mem_resolve / mem_atomic) and answers:
 *
 *   GET   GET_REQ(cookie, key, offset, len) ->
 *         <- GET_REPLY(cookie, status) + len bytes written straight from
 *            the resolved region (no copy), or no data if refused
 *   PUT   PUT(cookie, key, offset) + len bytes from the action's buffer ->
 *            read straight into the resolved region (or read and dropped
 *            if refused)
 *         <- PUT_DONE(cookie, status)
 *   ATOMIC ATOMIC_REQ(cookie, key, offset, operand, compare, op) ->
 *         <- ATOMIC_REPLY(cookie, old, status)
 *
 * The initiator's op_done comes with the reply (a PUT's only once the
 * target has all of it). The cookie is (generation << 32 | slot) of the
 * table below; a reply naming nothing in flight toward its sender means a
 * broken peer (tcp_rx.c fails it): on one ordered connection no reply can
 * be stale.
 *
 * At most TCP_RDMA_DEPTH requests are in flight toward a peer; more wait
 * unsent (tcp_peer.whead), in order, each sent as a reply frees room. The
 * target may then bound the replies it queues for a peer (tcp.h,
 * TCP_REPLY_MAX) without ever stopping to read an honest one.
 */
#include "tcp.h"

#include <stdlib.h>
#include <string.h>


int tcp_rdma_start(tcp_t *t, const quay_action *a)
{
    int32_t peer = a->peer;
    uint8_t h[TCP_HDR_MAX];
    uint8_t *x = h + TCP_PREFIX;
    quay_iov data = {a->rdma.local, 0};
    uint32_t niov = 0, cap, idx;
    size_t hl;
    int rc;
    switch (a->kind) {
    case QUAY_ACT_RDMA_GET:
        cap = QUAY_CAP_RDMA_GET;
        break;
    case QUAY_ACT_RDMA_PUT:
        cap = QUAY_CAP_RDMA_PUT;
        break;
    case QUAY_ACT_RDMA_ATOMIC:
        cap = QUAY_CAP_RDMA_ATOMIC;
        break;
    default:
        return QUAY_EINVAL;
    }
    if (peer < 0 || peer >= t->base.size || peer == t->base.rank ||
        (a->rdma.local == NULL && (a->kind == QUAY_ACT_RDMA_ATOMIC || a->rdma.len != 0)) ||
        (uint64_t)(size_t)a->rdma.len != a->rdma.len)
        return QUAY_EINVAL;
    if (!(t->base.caps & cap))
        return QUAY_ENOTSUP;
    if (t->peers[peer].state != TCP_LIVE || t->peers[peer].fd < 0)
        return QUAY_EPEER;
    if (qrt_op_alloc(&t->optab, &idx) != 0)
        return QUAY_ENOMEM;
    qrt_op *o = &t->optab.ops[idx];
    uint64_t cookie = qrt_op_cookie(&t->optab, idx);
    o->token = a->token;
    o->local = a->rdma.local;
    o->len = a->rdma.len;
    o->peer = peer;
    tcp_put64(x, cookie);
    tcp_put64(x + 8, a->rdma.key);
    tcp_put64(x + 16, a->rdma.offset);
    switch (a->kind) {
    case QUAY_ACT_RDMA_GET:
        o->kind = TCP_GET_REPLY;
        tcp_prefix(h, TCP_GET_REQ, 0);
        tcp_put64(x + 24, a->rdma.len);
        break;
    case QUAY_ACT_RDMA_PUT:
        o->kind = TCP_PUT_DONE;
        tcp_prefix(h, TCP_PUT, a->rdma.len);
        data.len = (size_t)a->rdma.len;
        niov = 1;
        break;
    default:
        o->kind = TCP_ATOMIC_REPLY;
        o->len = 8;
        tcp_prefix(h, TCP_ATOMIC_REQ, 0);
        tcp_put64(x + 24, a->atomic.operand);
        tcp_put64(x + 32, a->atomic.compare);
        tcp_put32(x + 40, a->atomic.op);
        tcp_put32(x + 44, 0);
        break;
    }
    hl = TCP_PREFIX + tcp_ext_len(h[0]);
    /* A PUT's data is read from the action's buffer until written; its
     * op_done waits for PUT_DONE anyway, so no token on the frame. Past
     * the depth the frame waits, unsent. */
    tcp_peer *p = &t->peers[peer];
    if (p->rdma_out >= TCP_RDMA_DEPTH || p->whead != NULL) {
        tcp_item *it = tcp_item_frame(t, h, hl, &data, niov, 0, 0);
        if (it == NULL) {
            qrt_op_free(&t->optab, idx);
            return QUAY_ENOMEM;
        }
        o->held = 1;
        it->next = NULL;
        if (p->wtail != NULL)
            p->wtail->next = it;
        else
            p->whead = it;
        p->wtail = it;
        return 0;
    }
    rc = tcp_out_frame(t, peer, h, hl, &data, niov, 0, 0);
    if (rc < 0) {
        qrt_op_free(&t->optab, idx);
        return rc;
    }
    p->rdma_out++;
    return 0;
}

/* Send waiting requests while the depth has room. One that cannot go
 * (the connection broke) is dropped: the poll that closes the peer ends
 * its action with QUAY_EPEER. */
static void send_waiting(tcp_t *t, int32_t peer)
{
    tcp_peer *p = &t->peers[peer];
    while (p->whead != NULL && p->rdma_out < TCP_RDMA_DEPTH) {
        tcp_item *it = p->whead;
        p->whead = it->next;
        if (p->whead == NULL)
            p->wtail = NULL;
        qrt_op *o = qrt_op_find(&t->optab, tcp_get64(it->hdr + TCP_PREFIX), peer);
        if (o == NULL) {
            tcp_item_free(t, it);
            continue;
        }
        o->held = 0;
        if (tcp_out_item(t, peer, it) >= 0)
            p->rdma_out++;
    }
}

/* ---- target side ------------------------------------------------------------------------ */

int tcp_rdma_serve_get(tcp_t *t, int32_t peer, uint64_t cookie, uint64_t key, uint64_t offset,
                       uint64_t len)
{
    const quay_transport_sink *k = t->base.sink;
    uint8_t h[TCP_PREFIX + 16];
    void *addr = NULL;
    int rc = QUAY_EINVAL;
    if ((uint64_t)(size_t)len == len)
        rc = k->mem_resolve(k->ctx, peer, key, offset, len, QUAY_MEM_READ, &addr);
    quay_iov data = {addr, rc == 0 ? (size_t)len : 0};
    tcp_prefix(h, TCP_GET_REPLY, data.len);
    tcp_put64(h + TCP_PREFIX, cookie);
    tcp_put32(h + TCP_PREFIX + 8, (uint32_t)rc);
    tcp_put32(h + TCP_PREFIX + 12, 0);
    /* Written straight from the region: no copy. */
    rc = tcp_out_reply(t, peer, h, sizeof h, &data, 1);
    return rc < 0 ? rc : 0;
}

int tcp_rdma_serve_atomic(tcp_t *t, int32_t peer, uint64_t cookie, uint64_t key,
                          uint64_t offset, uint64_t operand, uint64_t compare, uint32_t op)
{
    const quay_transport_sink *k = t->base.sink;
    uint8_t h[TCP_PREFIX + 24];
    uint64_t old = 0;
    int rc = k->mem_atomic(k->ctx, peer, key, offset, op, operand, compare, &old);
    tcp_prefix(h, TCP_ATOMIC_REPLY, 0);
    tcp_put64(h + TCP_PREFIX, cookie);
    tcp_put64(h + TCP_PREFIX + 8, rc == 0 ? old : 0);
    tcp_put32(h + TCP_PREFIX + 16, (uint32_t)rc);
    tcp_put32(h + TCP_PREFIX + 20, 0);
    rc = tcp_out_reply(t, peer, h, sizeof h, NULL, 0);
    return rc < 0 ? rc : 0;
}

int tcp_rdma_put_done(tcp_t *t, int32_t peer, uint64_t cookie, int32_t status)
{
    uint8_t h[TCP_PREFIX + 16];
    tcp_prefix(h, TCP_PUT_DONE, 0);
    tcp_put64(h + TCP_PREFIX, cookie);
    tcp_put32(h + TCP_PREFIX + 8, (uint32_t)status);
    tcp_put32(h + TCP_PREFIX + 12, 0);
    int rc = tcp_out_reply(t, peer, h, sizeof h, NULL, 0);
    return rc < 0 ? rc : 0;
}

/* ---- initiator side --------------------------------------------------------------------- */

int64_t tcp_rdma_find(tcp_t *t, int32_t peer, uint64_t cookie, unsigned type)
{
    const qrt_op *o = qrt_op_find(&t->optab, cookie, peer);
    if (o == NULL || o->kind != type || o->held)
        return -1;
    return o - t->optab.ops;
}

void tcp_rdma_finish(tcp_t *t, uint32_t idx, int status)
{
    const qrt_op *o = &t->optab.ops[idx];
    uint64_t token = o->token;
    int32_t peer = o->peer;
    int sent = !o->held;
    qrt_op_free(&t->optab, idx);
    if (sent && t->peers[peer].rdma_out > 0) {
        t->peers[peer].rdma_out--;
        send_waiting(t, peer);
    }
    t->base.sink->op_done(t->base.sink->ctx, token, status);
}

void tcp_rdma_fail_peer(tcp_t *t, int32_t peer)
{
    tcp_peer *p = &t->peers[peer];
    while (p->whead != NULL) {
        tcp_item *it = p->whead;
        p->whead = it->next;
        tcp_item_free(t, it);
    }
    p->wtail = NULL;
    p->rdma_out = 0;
    for (uint32_t i = 0; i < t->optab.nops; i++)
        if (t->optab.ops[i].used && t->optab.ops[i].peer == peer)
            tcp_rdma_finish(t, i, QUAY_EPEER);
}

void tcp_rdma_free(tcp_t *t)
{
    qrt_optab_fini(&t->optab);
}
