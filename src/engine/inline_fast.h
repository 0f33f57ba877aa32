/*
 * inline_fast.h — taking a small standard send by copy, inline: the body
 * of quay_send_inline (inline.c) after its argument checks, shared with
 * quay_isend under QUAY_CFG_SEND_COPY (p2p.c) so neither pays a call.
 * inline.c's header comment has the design (the inline queue, trains).
 */
#ifndef QUAY_ENGINE_INLINE_FAST_H
#define QUAY_ENGINE_INLINE_FAST_H

#include "engine/internal.h"
#include "engine/wire.h"

/* Append the message to o, the queue's tail packet to the same peer: 0, or
 * -1 if it does not fit (no train buffer, or no room left). */
static QUAY_ALWAYS_INLINE int train_append(quay_engine *e, qout *o, const quay_comm *c,
                                           const void *buf, size_t len, int32_t tag,
                                           int32_t peer)
{
    size_t need = WIRE_ENV_LEN + len;
    if (o->hdr_len + o->payload_len + need > e->train_limit)
        return -1;
    uint8_t *last;
    if (o->train != NULL) {
        last = o->train + o->train_last;
    } else {
        if (e->ntrain_free == 0 || e->train_mem == NULL)
            return -1;
        o->train = e->train_free[--e->ntrain_free];
        o->payload = o->train;
        last = OUT_HDR(o);
    }
    wire_put16(last + 2, (uint16_t)(wire_get16(last + 2) | WIRE_F_MORE));
    uint8_t *h = o->train + o->payload_len;
    uint32_t seq = e->peers[peer].tx_seq++;
    wire_encode_env(h, QUAY_PKT_EAGER, 0, seq, c->ctx, c->myrank, tag, 0, len);
    if (len != 0)
        memcpy(h + WIRE_ENV_LEN, buf, len);
    o->train_last = (uint16_t)o->payload_len;
    o->payload_len += need;
    return 0;
}

/* The message taken by copy, its arguments valid: 0; INLINE_NOT_HERE
 * when this way cannot take it (too long, earlier sends queued, an engine
 * whose packets need more than a copy, to ourselves or a failed peer);
 * QUAY_EBUSY when no descriptor is free (max_out). */
#define INLINE_NOT_HERE 1
static QUAY_ALWAYS_INLINE int inline_take(quay_engine *e, quay_comm *c, const void *buf,
                                          size_t len, int32_t dst, int32_t tag)
{
    /* (inline_plain: no flow control, so no descriptor is reserved and a
     * free one is one on the free list) */
    if (len > QUAY_INLINE_MAX || len > e->eager_max || !e->inline_plain || !ql_empty(&e->txq))
        return INLINE_NOT_HERE;
    int32_t peer = comm_world(c, dst);
    if (peer == e->rank || (e->nfailed != 0 && e->peers[peer].failed))
        return INLINE_NOT_HERE;
    qout *t = e->inq_tail;
    if (t != NULL && t->peer == peer && train_append(e, t, c, buf, len, tag, peer) == 0)
        return 0;
    if (e->out_free == NULL)
        return QUAY_EBUSY;
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

#endif
