/*
 * chan.h — the flow-control channel as the engine uses it (the declared
 * hooks between src/engine and src/flowctl). Under QUAY_FLOW_ACKNACK every
 * packet to another rank travels in a channel frame:
 *
 *   0  u8  0xC1 (frame version)        8  u32 ack: every seq < ack arrived
 *   1  u8  kind: 1 DATA, 2 ACK-only   12  u32 credit mode: the credit limit
 *   2  u16 flags: bit 0 NACK (the             (send seqs before it); else
 *          ack field is also refused),        the NACKed seq (= ack) or 0
 *          bit 1 CREDIT, bit 2 BLOCKED 16  u32 CRC32C of the whole packet,
 *          bit 3 PING (answer me)
 *   4  u32 seq (DATA)                          computed with this field 0
 *
 * followed, for DATA, by the engine packet. The sender keeps each packet
 * (its descriptor: header and user-memory slice) until it is acknowledged,
 * retransmits on NACK or timeout; the receiver hands packets to the engine
 * strictly in sequence and NACKs one the engine refuses (QUAY_EAGAIN: no
 * buffer), per [PM §3.3] as implemented in ackn.c.
 */
#ifndef QUAY_FLOWCTL_CHAN_H
#define QUAY_FLOWCTL_CHAN_H

#include "engine/internal.h"
#include "flowctl/ackn.h"

#define CHAN_VERSION 0xC1
#define CHAN_DATA 1
#define CHAN_ACK 2
#define CHAN_F_NACK 0x1u
#define CHAN_F_CREDIT 0x2u  /* field 12 is the credit limit (QUAY_FLOW_CREDIT) */
#define CHAN_F_BLOCKED 0x4u /* the sender is out of credit (credit mode) */
#define CHAN_F_PING 0x8u    /* answer this frame (keepalive probe) */
#define CHAN_F_CHAN_SHIFT 8  /* bits 8-10: the channel (quay_config.channels) */
#define CHAN_F_CHAN_MASK (0x7u << CHAN_F_CHAN_SHIFT)
#define CHAN_F_ALL (CHAN_F_NACK | CHAN_F_CREDIT | CHAN_F_BLOCKED | CHAN_F_PING | \
                    CHAN_F_CHAN_MASK)

/** The channel a frame claims to be for (b holds at least 4 bytes). */
static inline uint32_t chan_frame_channel(const uint8_t *b)
{
    return (wire_get16(b + 2) & CHAN_F_CHAN_MASK) >> CHAN_F_CHAN_SHIFT;
}

/** chan_on_packet: the frame was taken by the channel itself (ACK-only,
 *  duplicate, out of order, refused and NACKed): success, but no engine
 *  packet came in. */
#define CHAN_CONSUMED LINK_CONSUMED

/* ---- the link's state: the engine holds it as e->link_state, unread ---------- */

/* What the channel keeps per peer. */
typedef struct fc_peer {
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
} fc_peer;

typedef struct fc_link {
    fc_params fcp;
    fc_peer *peers;  /* nranks + 1 of them: the last is fc_snap.c's
                        scratch, where a blob's record is checked */
} fc_link;

/** The link's state of engine e (chan_init made it). */
static inline fc_link *chan_state(const quay_engine *e)
{
    return (fc_link *)e->link_state;
}

/** Peer p's state (p == nranks: the scratch record). */
static inline fc_peer *chan_peer(const fc_link *l, int32_t p)
{
    return &l->peers[p];
}

/* The link_ops (link.h): chan_link below. */
int chan_init(quay_engine *e);
void chan_reset(quay_engine *e);
void chan_fini(quay_engine *e);
void chan_submit(quay_engine *e, qout *o);
int chan_pull(quay_engine *e, quay_action *a);
int chan_has_work(const quay_engine *e);
int chan_on_packet(quay_engine *e, int32_t peer, const uint8_t *b, size_t len, int *content);
void chan_on_op_done(quay_engine *e, qout *o, int status);
void chan_on_time(quay_engine *e);
uint64_t chan_deadline(const quay_engine *e);
void chan_abandon(quay_engine *e, int32_t peer);

/** The link the engine reaches these through (link.h): both policies,
 *  ACK/NACK and credits, chosen by e->flow. */
extern const link_ops chan_link;

/** 1 if fp has something to say that needs no sequence number (ACK, NACK,
 *  grant, probe, ping answer): then the channel is not stable. `held`:
 *  the engine's credit_held for that peer. */
int chan_peer_owes(const quay_engine *e, const fc_peer *fp, uint32_t held);
/** The packets queued for p, waiting for a sequence number: the first
 *  (prev NULL) or the one after prev; NULL after the last. */
const qout *chan_queued(const quay_engine *e, int32_t p, const qout *prev);
/** Queue o for its peer again, last, as chan_submit left it (a restored
 *  context's queued packet). */
void chan_requeue(quay_engine *e, qout *o);

#endif /* QUAY_FLOWCTL_CHAN_H */
