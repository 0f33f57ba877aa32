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
 * Coalescing: a send that can join the inline queue's last packet as a
 * piece of a train does (train.h, train.c: the pool, the receiver's
 * split).
 */
#include "engine/inline_fast.h"

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

int p2p_send_copy(quay_engine *e, quay_comm *c, const void *buf, size_t len, int32_t dst,
                  int32_t tag)
{
    return inline_take(e, c, buf, len, dst, tag) == 0 ? 0 : QUAY_EBUSY;
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
