/*
 * inline_fast.h — taking a small standard send by copy, inline: the body
 * of quay_send_inline (inline.c) after its argument checks, shared with
 * quay_isend under QUAY_CFG_SEND_COPY (p2p.c) so neither pays a call.
 * inline.c's header comment has the design (the inline queue); a message
 * joins the queue's last packet as a train's piece (train.h).
 */
#ifndef QUAY_ENGINE_INLINE_FAST_H
#define QUAY_ENGINE_INLINE_FAST_H

#include "engine/internal.h"
#include "engine/wire.h"

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
    if (len >= e->inline_lim || !ql_empty(&e->txq))
        return INLINE_NOT_HERE;
    int32_t peer = comm_world(c, dst);
    if (peer == e->rank || (e->nfailed != 0 && e->peers[peer].failed))
        return INLINE_NOT_HERE;
    peer_state *ps = &e->peers[peer];
    qout *t = e->inq_tail;
    if (t != NULL && t->peer == peer && train_append(e, t, c, buf, len, tag, ps, 0) == 0)
        return 0;
    if (e->out_free == NULL)
        return QUAY_EBUSY;
    qout *o = out_take(e);
    uint32_t seq = ps->tx_seq++;
    o->peer = peer;
    o->pkt = QUAY_PKT_EAGER;
    o->seq = seq;
    o->train_next = seq + 1;
    /* what the packet may grow by (e->train_room: 0 without trains) */
    o->train_room = (int16_t)((int32_t)e->train_room - (int32_t)len);
    uint8_t *h = OUT_HDR(o);
    /* sreq 0: a standard send expects no reply addressed to a request */
    env_encode(h, QUAY_PKT_EAGER, 0, seq, c->ctx, c->myrank, tag, 0, len);
    if (len != 0)
        copy_payload(h + WIRE_ENV_LEN, buf, len);
    o->hdr_len = (uint16_t)(WIRE_ENV_LEN + len); /* the payload behind the envelope */
    if (e->inq_tail != NULL)
        e->inq_tail->next = o;
    else
        e->inq_head = o;
    e->inq_tail = o;
    return 0;
}

/* The commonest send of a burst, its arguments valid: a message of up to
 * 16 bytes appended to the train still waiting for a pull (0), with no
 * call on the way; INLINE_NOT_HERE for anything else (nothing changed).
 * The tail's peer is never this rank (inline_take sends none to itself). */
static QUAY_ALWAYS_INLINE int inline_append_small(quay_engine *e, const quay_comm *c,
                                                  const void *buf, size_t len, int32_t dst,
                                                  int32_t tag)
{
    qout *t = e->inq_tail;
    if (len >= e->inline_small_lim || t == NULL || !ql_empty(&e->txq) || e->nfailed != 0)
        return INLINE_NOT_HERE;
    int32_t peer = comm_world(c, dst);
    if (t->peer != peer || train_append(e, t, c, buf, len, tag, &e->peers[peer], 1) != 0)
        return INLINE_NOT_HERE;
    return 0;
}

#endif
