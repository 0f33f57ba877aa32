/*
 * peer.h — what the engine keeps per peer: sequencing, the link's
 * per-peer flow-control state, RTR tables and arbitration.
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
    /* flow control (QUAY_FLOW_ACKNACK) */
    fc_tx tx;
    fc_rx rx;
    qout *pend_head, *pend_tail;  /* built, waiting for a sequence number */
    qout *unack_head, *unack_tail;/* sent, kept until acknowledged */
    uint64_t hold_until;  /* repeated NACK: no (re)sending before this */
    uint32_t nack_seq;    /* last NACKed seq and how often in a row */
    uint32_t nack_repeats;
    uint32_t gap_seq;      /* the expected seq we NACKed for a gap */
    uint8_t gap_nacked;    /* gap_seq is valid */
    uint8_t gap_nack_owed; /* the NACK owed is for a gap, not a refusal */
    /* credits (QUAY_FLOW_CREDIT) */
    uint32_t credit_limit; /* we may send seqs before this */
    uint32_t credit_sent;  /* the limit we last granted the peer */
    uint32_t credit_held;  /* unexpected / held messages from the peer */
    uint8_t peer_blocked;  /* the peer said it is out of our credit */
    uint8_t stall_asks;    /* its asks with no room to lend, at stall_seq */
    uint32_t stall_seq;    /* (not saved: a restored channel counts anew) */
    uint8_t probe_due;     /* send it a probe (ACK-only, BLOCKED) */
    uint32_t probes;       /* probes since we last heard from it */
    uint8_t heard;         /* a frame came since the last keepalive tick */
    uint8_t ping_owed;     /* it pinged us: answer with any frame */
    uint8_t ka_wanted;     /* keepalive tick: a request waits on it */
    uint64_t probe_at;     /* out of credit, nothing unacked: probe then */
    uint64_t probe_rto;
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

#endif /* QUAY_ENGINE_PEER_H */
