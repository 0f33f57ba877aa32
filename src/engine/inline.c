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
 * Coalescing: a send on the communicator and to the peer of the inline
 * queue's last packet, while that packet still waits for a pull, is
 * appended to it as a piece (tag, length, payload: 8 bytes of header
 * where a packet of its own has 32; the first message gets WIRE_F_MORE)
 * in a buffer of the train pool, which the SEND hands out as its payload
 * iovec. Order is unchanged (the train is the queue's tail, its numbers
 * consecutive: a piece's is implied); the receiver splits it (engine.c)
 * and takes each message as a packet of its own. Nothing waits to fill a
 * train: a pull takes it as it is.
 */
#include "engine/inline_fast.h"

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

static QUAY_NOINLINE int send_inline_slow(quay_engine *e, quay_comm *c, const void *buf,
                                          size_t len, int32_t dst, int32_t tag);

/* The arguments' validity as quay_isend checks it (dst not PROC_NULL). */
static inline int inline_args_ok(const quay_engine *e, const quay_comm *c, const void *buf,
                                 size_t len, int32_t dst, int32_t tag)
{
    return e != NULL && e->fatal == 0 && comm_ok(e, c) && (buf != NULL || len == 0) &&
           tag >= 0 && dst >= 0 && dst < c->size;
}

/* quay_send_inline but for its leaf path. */
static QUAY_NOINLINE int send_inline_any(quay_engine *e, quay_comm *c, const void *buf,
                                         size_t len, int32_t dst, int32_t tag)
{
    int rc;
    if (!inline_args_ok(e, c, buf, len, dst, tag) ||
        (rc = inline_take(e, c, buf, len, dst, tag)) == INLINE_NOT_HERE)
        return send_inline_slow(e, c, buf, len, dst, tag);
    return rc;
}

int quay_send_inline(quay_engine *e, quay_comm *c, const void *buf, size_t len,
                     int32_t dst, int32_t tag)
{
    /* The small-message hot path [design.md §10]: one more message behind
     * the train waiting for a pull, on a path that calls nothing (so
     * sets up no frame); anything else, from the start, out of line. */
    if (e != NULL && e->inq_tail != NULL && inline_args_ok(e, c, buf, len, dst, tag) &&
        inline_append_small(e, c, buf, len, dst, tag) == 0)
        return 0;
    return send_inline_any(e, c, buf, len, dst, tag);
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
