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
 *
 * Coalescing: a send to the peer of the inline queue's last packet, while
 * that packet still waits for a pull, is appended to it as one more EAGER
 * (the previous one gets WIRE_F_MORE) in a buffer of the train pool, which
 * the SEND hands out as its payload iovec. Order is unchanged (the train
 * is the queue's tail, its sequence numbers consecutive); the receiver
 * splits it (engine.c) and takes each message as a packet of its own.
 * Nothing waits to fill a train: a pull takes it as it is.
 */
#include "engine/internal.h"

/* Train buffers per engine: trains pulled but not yet op_done'd, plus the
 * one filling. When all are out, sends go one per packet. */
#define TRAIN_BUFS 16u

int train_init(quay_engine *e)
{
    size_t limit = e->cfg.max_packet < QUAY_TRAIN_MAX ? e->cfg.max_packet : QUAY_TRAIN_MAX;
    if (!e->inline_plain || (e->cfg.flags & QUAY_CFG_NO_COALESCE) ||
        limit < 2 * WIRE_ENV_LEN)
        return 0; /* no room for two messages: no trains */
    e->train_limit = (uint32_t)limit;
    e->train_room = (uint32_t)(limit - WIRE_ENV_LEN);
    e->train_mem = qalloc(e, (size_t)TRAIN_BUFS * e->train_room);
    e->train_free = qalloc(e, TRAIN_BUFS * sizeof *e->train_free);
    if (e->train_mem == NULL || e->train_free == NULL)
        return QUAY_ENOMEM;
    for (uint32_t i = 0; i < TRAIN_BUFS; i++)
        e->train_free[i] = e->train_mem + (size_t)(TRAIN_BUFS - 1 - i) * e->train_room;
    e->ntrain_free = TRAIN_BUFS;
    return 0;
}

void train_fini(quay_engine *e)
{
    qfree(e, e->train_mem);
    qfree(e, e->train_free);
    e->train_mem = NULL;
    e->train_free = NULL;
    e->ntrain_free = 0;
}

/* Append the message to o, the queue's tail packet to the same peer: 0, or
 * -1 if it does not fit (no train buffer, or no room left). */
static inline int train_append(quay_engine *e, qout *o, const quay_comm *c, const void *buf,
                               size_t len, int32_t tag, int32_t peer)
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
           len <= e->eager_max && e->inline_plain && ql_empty(&e->txq);
}

int quay_send_inline(quay_engine *e, quay_comm *c, const void *buf, size_t len,
                     int32_t dst, int32_t tag)
{
    if (!inline_ok(e, c, buf, len, dst, tag))
        return send_inline_slow(e, c, buf, len, dst, tag);
    int32_t peer = comm_world(c, dst);
    if (peer == e->rank || (e->nfailed != 0 && e->peers[peer].failed))
        return send_inline_slow(e, c, buf, len, dst, tag);
    qout *t = e->inq_tail;
    if (t != NULL && t->peer == peer && train_append(e, t, c, buf, len, tag, peer) == 0)
        return 0;
    if (e->out_free == NULL)
        return QUAY_EBUSY; /* no descriptor (max_out) */
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
            inline_out_put(e, o);
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
