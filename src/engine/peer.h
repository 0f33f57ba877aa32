/*
 * peer.h — what the engine keeps per peer: sequencing, the credit its
 * kept messages hold, RTR tables and arbitration.
 */
#include "engine/internal.h" /* (outside the guard: internal.h includes this
                                 file after the engine's struct) */

#ifndef QUAY_ENGINE_PEER_H
#define QUAY_ENGINE_PEER_H

/* Per-peer sequencing state. */
typedef struct peer_state {
    uint32_t tx_seq;   /* next envelope sequence to assign */
    uint32_t rx_seq;   /* next envelope sequence expected */
    qlink held;        /* held out-of-order messages, sorted by seq */
    uint32_t nheld;
    uint8_t drain_blocked; /* held head is due but could not be processed */
    uint8_t failed;    /* declared failed: its requests completed EPEER */
    /* Its messages we keep (unexpected with a payload, held early), each
     * holding one of its credits (UMF_CREDIT), counted when the link asks
     * for it (peer_counts_credit: credit flow control grants from it). The
     * link's own per-peer state is its own (link_ops.init). */
    uint32_t credit_held;
    /* receiver-initiated (rtr.c) */
    rtr_ent *rtr;          /* its RTRs to us, in arrival (post) order */
    uint32_t nrtr;
    rtr_logent *rlog;      /* envelopes we sent it, a ring of RTR_LOG */
    uint32_t rlog_head, rlog_count;
    uint32_t rlog_lost;    /* 1 + highest seq pushed out of the ring, or 0 */
    uint32_t rtr_out;      /* our RTRs it may hold (<= rtr_per_peer) */
    uint8_t flag_answer;   /* an answer to its ANY_FLAG waits on the rtrq:
                              its next flag waits (QUAY_EAGAIN), so answers
                              hold one queue place per peer (rtr_init) */
    uint32_t tx_unsent;    /* (rtr on) sequence numbers assigned to it, not
                              yet emitted: an RTR (numbered when it goes
                              out) waits for them, so numbers leave in order */
    /* arbitration, sender side (arbitrate.c) */
    quay_req *any_send;    /* our send whose flag is out to it, or NULL */
    qlink any_waitq;       /* later sends to it, waiting in order */
} peer_state;

/* 1 if the engine counts the credit its kept messages hold: the link
 * says so (link_ops.holds_credit). */
static inline int peer_counts_credit(const quay_engine *e)
{
    return e->link != NULL && e->link->holds_credit;
}

#endif /* QUAY_ENGINE_PEER_H */
