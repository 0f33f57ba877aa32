/*
 * arbitrate.h — ANY_SOURCE arbitration (arbitrate.c): a wildcard receive
 * announced to the senders, their interest flags, the receiver's claim
 * (docs/arbitration.md). Its packets go through rtr.h's sequenced
 * control queue.
 */
#include "engine/internal.h" /* (outside the guard: internal.h includes this
                                 file after the engine's struct) */

#ifndef QUAY_ENGINE_ARBITRATE_H
#define QUAY_ENGINE_ARBITRATE_H

/* A receiver's announced wildcard pattern (arbitrate.c). */
typedef struct any_slot {
    uint32_t ctx;
    int32_t tag;       /* tag or QUAY_ANY_TAG */
    int32_t src;       /* our rank in the communicator */
    uint32_t gen;      /* in its id (24 bits): a reused slot is new */
    uint32_t npending; /* RECV_ANY receives that use it */
    uint64_t used;     /* post stamp of its last receive (evict the oldest) */
    uint8_t in_use;    /* 0, SLOT_LIVE, or SLOT_STALE: its communicator
                          was freed; it awaits withdrawal, first to go */
} any_slot;
#define SLOT_LIVE 1
#define SLOT_STALE 2
#define ANY_ID(i, gen) ((uint32_t)(gen) << 8 | (uint32_t)((i) + 1))
#define ANY_IDX(id) (((id) & 0xFFu) - 1u)

int arb_init(quay_engine *e);
void arb_fini(quay_engine *e);
/** Forget every announcement and flag (with rtr_attach). */
void arb_reset(quay_engine *e);
/** Receiver: announce the wildcard receive being posted if allowed (sets
 *  RECV_ANY); else it stays RECV_POSTED. Call before posting. */
void arb_post(quay_engine *e, quay_req *r);
/** Receiver: r leaves the posted queue's remote-memory duties (matched
 *  by an envelope, cancelled, failed): its internal region (delegated or
 *  announced) goes and its announcement slot, if any, is told. */
void arb_release(quay_engine *e, quay_req *r);
/** Receiver: cancel r (RECV_ANY): now if unclaimed; a claimed one was
 *  matched, so the cancel fails (its SC completes it). */
void arb_cancel(quay_engine *e, quay_req *r);
/** Sender: 1 if r must wait behind a send of its peer in arbitration
 *  (then it is queued, SEND_QUEUED). */
int arb_must_queue(quay_engine *e, quay_req *r);
/** Sender: r meets announcement t first in line: raise the flag (1), or
 *  0 if r goes as an envelope (eager sizes). */
int arb_flag(quay_engine *e, quay_req *r, const rtr_ent *t);
/** Sender: r (SEND_ANY or SEND_QUEUED) ends without an answer (failed):
 *  its place goes to the next send. */
void arb_detach(quay_engine *e, quay_req *r);
/** Sender: r's interest flag (ANY_FLAG: its envelope under its number)
 *  into o. */
void arb_emit_flag(quay_req *r, qout *o);
/* Its line in QUAY_REQ_SENDS: due until it leaves, under the send's
 * number. */
static inline int arb_flag_due(const quay_req *r)
{
    return r->state == QUAY_RS_SEND_ANY && !(r->flags & RF_ENV_SENT);
}
static inline int64_t arb_flag_number(const quay_req *r)
{
    return r->seq;
}
/** Sender: cancel r (SEND_ANY or SEND_QUEUED). */
void arb_cancel_send(quay_engine *e, quay_req *r);
/** Sequenced arbitration packets from peer, in order (their handlers,
 *  packets.h): 0, QUAY_EAGAIN (no room to answer: offer again) or
 *  QUAY_ESTATE. */
int arb_on_ena(quay_engine *e, int32_t peer, const umsg *m);
int arb_on_flag(quay_engine *e, int32_t peer, const umsg *m);
int arb_on_rtr_any(quay_engine *e, int32_t peer, const umsg *m);
int arb_on_disable(quay_engine *e, int32_t peer, const umsg *m);
/** An SC for a claimed receive (rtr_on_sc). */
int arb_on_sc(quay_engine *e, int32_t peer, quay_req *r, const umsg *m);
/** Receiver: communicator ctx is freed: withdraw its announcements. */
void arb_comm_freed(quay_engine *e, uint32_t ctx);
/** Peer failure: its flags, claims and announcements go. */
void arb_peer_failed(quay_engine *e, int32_t peer);
#endif /* QUAY_ENGINE_ARBITRATE_H */
