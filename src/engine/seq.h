/*
 * seq.h — per-peer sequencing (seq.c): numbers to each peer, sequenced
 * packets taken in their turn (held while early), the message
 * descriptors' pool.
 */
#include "engine/internal.h" /* (outside the guard: internal.h includes this
                                 file after the engine's struct) */

#ifndef QUAY_ENGINE_SEQ_H
#define QUAY_ENGINE_SEQ_H

/** Was `peer` declared failed? Reads the peer's (cold) state only when
 *  some peer has failed. */
static inline int peer_failed(const quay_engine *e, int32_t peer)
{
    return e->nfailed != 0 && e->peers[peer].failed;
}

/** Next sequence number to `peer` for a packet that is built and emitted
 *  later (envelope, flag, SC, CANCEL_REQ). With rtr on it counts as unsent
 *  until it leaves: RTRs, numbered when they go out, wait for it. */
static inline uint32_t seq_assign(quay_engine *e, int32_t peer)
{
    peer_state *ps = &e->peers[peer];
    if (e->rtr_pool != NULL)
        ps->tx_unsent++;
    return ps->tx_seq++;
}

umsg *umsg_alloc(quay_engine *e);
void umsg_free(quay_engine *e, umsg *m);
/** Handle a sequenced packet (packets.h: PK_SEQ) from `peer`: the
 *  on_packet of every sequenced type. */
int seq_on_packet(quay_engine *e, int32_t peer, const wire_hdr *h,
                  const uint8_t *payload, size_t plen);
/** Retry draining peers whose due held packets were blocked. */
void seq_retry_blocked(quay_engine *e);
/** Find an unmatched (unexpected or orphaned) message by sender and
 *  sequence number, or NULL. */
umsg *msg_find_by_seq(quay_engine *e, int32_t peer, uint32_t seq);

#endif /* QUAY_ENGINE_SEQ_H */
