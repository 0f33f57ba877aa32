/*
 * inline.c — quay_send_inline: a small standard send taken by copy.
 *
 * The payload is copied behind the EAGER header in an outgoing descriptor
 * at the call, so the send is over when the call returns: no request, no
 * completion to report, and the packet leaves as one contiguous iovec.
 * The descriptor waits on the engine's inline queue (inq), which the pull
 * serves before the txq; a send is taken only while the txq is empty, so
 * packets still leave in send order (the sequence numbers would restore
 * it at the receiver anyway). Engines whose packets need more than this
 * (flow control's channel, RTR numbering, arbitration, multi-send) answer
 * QUAY_EBUSY and the caller posts with quay_isend.
 */
#include "engine/internal.h"

static QUAY_NOINLINE int send_inline_slow(quay_engine *e, quay_comm *c, const void *buf,
                                          size_t len, int32_t dst, int32_t tag);

/* What quay_isend's checks would pass, and what the copy needs. */
static inline int inline_ok(const quay_engine *e, const quay_comm *c, const void *buf,
                            size_t len, int32_t dst, int32_t tag)
{
    /* (tx_plain: no flow control, so no descriptor is reserved and a free
     * one is one on the free list) */
    return e != NULL && e->fatal == 0 && comm_ok(e, c) && (buf != NULL || len == 0) &&
           tag >= 0 && dst >= 0 && dst < c->size && len <= QUAY_INLINE_MAX &&
           len <= e->eager_max && e->inline_plain && ql_empty(&e->txq) &&
           e->out_free != NULL;
}

int quay_send_inline(quay_engine *e, quay_comm *c, const void *buf, size_t len,
                     int32_t dst, int32_t tag)
{
    if (!inline_ok(e, c, buf, len, dst, tag))
        return send_inline_slow(e, c, buf, len, dst, tag);
    int32_t peer = comm_world(c, dst);
    if (peer == e->rank || (e->nfailed != 0 && e->peers[peer].failed))
        return send_inline_slow(e, c, buf, len, dst, tag);
    qout *o = out_take(e);
    uint32_t seq = e->peers[peer].tx_seq++;
    o->peer = peer;
    o->pkt = QUAY_PKT_EAGER;
    o->seq = seq;
    uint8_t *h = OUT_HDR(o);
    /* sreq 0: a standard send expects no reply addressed to a request */
    wire_encode_env(h, QUAY_PKT_EAGER, 0, seq, c->ctx, c->myrank, tag, 0, len);
    if (len != 0)
        memcpy(h + WIRE_ENV_LEN, buf, len);
    o->hdr_len = (uint16_t)(WIRE_ENV_LEN + len);
    if (e->inq_tail != NULL)
        e->inq_tail->next = o;
    else
        e->inq_head = o;
    e->inq_tail = o;
    return 0;
}

/* The arguments' errors in quay_isend's order, then why not inline. */
static QUAY_NOINLINE int send_inline_slow(quay_engine *e, quay_comm *c, const void *buf,
                                          size_t len, int32_t dst, int32_t tag)
{
    if (e == NULL)
        return QUAY_EINVAL;
    if (e->fatal)
        return e->fatal;
    if (!comm_ok(e, c) || (buf == NULL && len != 0))
        return QUAY_EINVAL;
    if (tag < 0)
        return QUAY_ETAG;
    if (dst == QUAY_PROC_NULL)
        return 0; /* complete at once, nothing to send */
    if (dst < 0 || dst >= c->size)
        return QUAY_ERANK;
    int32_t peer = comm_world(c, dst);
    if (e->nfailed != 0 && e->peers[peer].failed)
        return QUAY_EPEER; /* nothing will reach it */
    /* Too long, to ourselves (self-sends take the loopback's requests),
     * earlier sends queued, no descriptor, or an engine whose packets
     * need more than a copy. */
    return QUAY_EBUSY;
}

void inq_drop_peer(quay_engine *e, int32_t peer)
{
    qout *keep_head = NULL, *keep_tail = NULL;
    qout *o = e->inq_head;
    while (o != NULL) {
        qout *next = o->next;
        o->next = NULL;
        if (o->peer == peer) {
            out_put(e, o);
        } else {
            if (keep_tail != NULL)
                keep_tail->next = o;
            else
                keep_head = o;
            keep_tail = o;
        }
        o = next;
    }
    e->inq_head = keep_head;
    e->inq_tail = keep_tail;
}
