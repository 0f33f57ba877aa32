/*
 * rtr.h — receiver-initiated transfers (rtr.c): the sender's RTR tables
 * and the sequenced control queue, which ANY_SOURCE arbitration
 * (arbitrate.h) shares.
 */
#include "engine/internal.h" /* (outside the guard: internal.h includes this
                                 file after the engine's struct) */

#ifndef QUAY_ENGINE_RTR_H
#define QUAY_ENGINE_RTR_H

/* A sender's record of one RTR (rtr.c): a receive delegated to us. */
typedef struct rtr_ent {
    uint32_t ctx;
    int32_t src;      /* the receiver's comm rank (it claims) */
    int32_t tag;      /* tag or QUAY_ANY_TAG */
    uint32_t rreq;
    uint32_t x;       /* envelopes from x on may have been meant for it */
    uint8_t live;     /* 0: an envelope we sent may match it first */
    uint8_t any;      /* an ANY_SOURCE announcement (ENA_ANY): rreq is its
                         id; a send that meets it first raises a flag */
    uint64_t cap;
    uint64_t key;
} rtr_ent;

/* An envelope we sent, for RTRs that arrive after it (rtr.c). */
typedef struct rtr_logent {
    uint32_t seq;
    uint32_t ctx;
    int32_t tag;
} rtr_logent;
#define RTR_LOG 16

/* Sequenced control work (RTRs and the arbitration packets), numbered
 * when it goes out: pure data, encoded at pull. */
typedef struct rtr_item {
    uint8_t pkt;      /* QUAY_PKT_RTR, ENA_ANY, RTR_ANY, DISABLE_ANY */
    uint8_t flags;    /* RTR: 0 (delegate), WIRE_F_REVOKE, WIRE_F_CANCEL;
                         DISABLE_ANY: WIRE_F_DROP */
    int32_t peer;
    uint32_t rreq;
    uint32_t sreq;    /* RTR_ANY, DISABLE_ANY: the flag's send */
    uint32_t slot;    /* ENA_ANY, DISABLE_ANY: the announcement id */
    uint32_t ctx;
    int32_t src;      /* our comm rank */
    int32_t tag;
    uint64_t cap;
    uint64_t key;
} rtr_item;

/* Receiver-initiated transfers (rtr.c). */
int rtr_init(quay_engine *e);
void rtr_fini(quay_engine *e);
/** Point the peers at their tables, all empty (creation, context reset,
 *  restore: envelopes sent before make older RTRs dead on arrival). */
void rtr_attach(quay_engine *e);
/** Receiver: delegate the receive being posted to its source if allowed
 *  (sets RECV_RTR); else it stays RECV_POSTED. Call before posting. */
void rtr_delegate(quay_engine *e, quay_req *r);
/** Receiver: r (RECV_RTR) leaves the delegation (matched here, cancelled
 *  or failed): its region goes, the sender is told if it holds the RTR. */
void rtr_undelegate(quay_engine *e, quay_req *r);
/** Sender: a send being started; 1 if it took an RTR (SEND_WRITE, on its
 *  way), 0 if it goes as an envelope (logged, RTRs it may match killed). */
int rtr_send(quay_engine *e, quay_req *r);
/** Remove entry i of a sender's RTR table (RTR or announcement), keeping
 *  the order of the rest. */
void rtr_ent_remove(peer_state *ps, uint32_t i);
/** Sender: r writes into the receiver's buffer (key, capacity `cap`) and
 *  then sends SC: a taken RTR or a claim (RTR_ANY). */
void rtr_write_start(quay_engine *e, quay_req *r, uint32_t rreq, uint64_t key, uint64_t cap);
/** The header an RTR-queue item encodes (without its sequence number and,
 *  for a delegation, x): rtrq_emit and the snapshot's check share it. */
void rtr_item_hdr(const rtr_item *it, wire_hdr *h);
/** Sequenced RTR / SC in order from `peer` (their handlers, packets.h):
 *  0, QUAY_EAGAIN (an RTR's cancel waits for a control slot), or
 *  QUAY_ESTATE. */
int rtr_on_rtr(quay_engine *e, int32_t peer, const umsg *m);
int rtr_on_sc(quay_engine *e, int32_t peer, const umsg *m);
/** Receiver: the verdict on an RTR cancel. */
int rtr_on_cancel_rep(quay_engine *e, int32_t peer, const wire_hdr *h);
/** Receiver: cancel a delegated receive (asks the sender). */
void rtr_cancel(quay_engine *e, quay_req *r);
/** Sender: r's SC (after its writes) into o. */
void rtr_emit_sc(quay_req *r, qout *o);
/* Its line in QUAY_REQ_SENDS: the FIN of a send that wrote into an RTR's
 * buffer, under the send's number. */
static inline int rtr_sc_due(const quay_req *r)
{
    return (r->owe & REQ_OWES_SC) != 0;
}
static inline int64_t rtr_sc_number(const quay_req *r)
{
    return r->seq;
}
/** Build the next queued RTR into o; 0 if the item was moot (skipped). */
int rtrq_emit(quay_engine *e, qout *o);

/** Sender: an envelope is about to go to r->peer: kill the RTRs it may
 *  match and log it (no-op without rtr). */
void rtr_envelope(quay_engine *e, quay_req *r);

/** Receiver: a posted receive (RECV_POSTED, RECV_RTR or RECV_ANY) leaves
 *  the queue and completes cancelled (cancel.c). */
void recv_unpost_cancelled(quay_engine *e, quay_req *r);
/** Receiver: an SC wrote r's data (delegated or claimed): status from
 *  the SC (length, truncation, the sender's status), then complete. */
void rtr_sc_complete(quay_engine *e, quay_req *r, const umsg *m);
/** Queue a sequenced control item (caller checked rtrq space; a full
 *  queue is a quay bug: the engine turns fatal, nothing is overwritten). */
rtr_item *rtrq_push_item(quay_engine *e, uint8_t pkt, int32_t peer);
/* An item answering a peer's ANY_FLAG (arbitrate.c on_flag): its claim
 * (RTR_ANY) or its decline (DISABLE_ANY naming the flag's send). */
static inline int rtr_item_answers_flag(const rtr_item *it)
{
    return it->pkt == QUAY_PKT_RTR_ANY || (it->pkt == QUAY_PKT_DISABLE_ANY && it->sreq != 0);
}
/** Free places in the sequenced control queue. */
static inline uint32_t rtrq_room(const quay_engine *e) { return e->rtrq_cap - e->rtrq_count; }

#endif /* QUAY_ENGINE_RTR_H */
