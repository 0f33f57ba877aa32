/*
 * chan.h — the framed channel, the core every flow-control link shares
 * (chan.c), and the table a policy plugs into it (fc_policy). Every packet
 * to another rank travels in a channel frame:
 *
 *   0  u8  0xC1 (frame version)        8  u32 ack: every seq < ack arrived
 *   1  u8  kind: 1 DATA, 2 ACK-only   12  u32 the policy's: the credit limit
 *   2  u16 flags: bit 0 NACK (the             (send seqs before it) with
 *          ack field is also refused),        CREDIT; else the NACKed seq
 *          bit 1 CREDIT, bit 2 BLOCKED        (= ack) or 0
 *          (the policy's), bit 3 PING  16  u32 CRC32C of the whole packet,
 *          (answer me)                         computed with this field 0
 *   4  u32 seq (DATA)
 *
 * followed, for DATA, by the engine packet. The sender keeps each packet
 * (its descriptor: header and user-memory slice) until it is acknowledged,
 * retransmits on NACK or timeout; the receiver hands packets to the engine
 * strictly in sequence and NACKs one the engine refuses (QUAY_EAGAIN: no
 * buffer), per [PM §3.3] as implemented in ackn.c.
 *
 * A policy (policy_acknack.c, policy_credit.c) decides what the window
 * alone does not: whether a new packet may take a sequence number, what a
 * frame says in its own flags and field, what it owes the peer. It keeps
 * its per-peer state right behind the core's (fc_pol) and exports one
 * link_ops, built with CHAN_LINK; the composition root picks it by
 * quay_config.flow.
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
/* The bits the core itself reads; a policy adds its own (fc_policy.flags). */
#define CHAN_F_CORE (CHAN_F_NACK | CHAN_F_PING | CHAN_F_CHAN_MASK)

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

/* What the channel keeps per peer; the policy's own state follows each
 * one (fc_pol). */
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
    uint8_t probe_due;     /* send it a probe (ACK-only; PING) */
    uint8_t heard;         /* a frame came since the last keepalive tick */
    uint8_t ping_owed;     /* it pinged us: answer with any frame */
    uint8_t ka_wanted;     /* keepalive tick: a request waits on it */
    uint32_t probes;       /* probes since we last heard from it */
    uint64_t probe_at;     /* the policy holds us back, nothing unacked:
                              probe then (0: not armed) */
    uint64_t probe_rto;
} fc_peer;

struct fc_policy;

typedef struct fc_link {
    const struct fc_policy *pol;
    fc_params fcp;
    size_t stride;   /* bytes per peer: its fc_peer and the policy's state */
    uint8_t *peers;  /* nranks + 1 of them: the last is fc_snap.c's
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
    return (fc_peer *)(void *)(l->peers + (size_t)p * l->stride);
}

/** The policy's state of a peer, right behind the core's (writable: the
 *  policy's own, whatever its caller may change of the core's). */
static inline void *fc_pol(const fc_peer *fp)
{
    return (void *)(uintptr_t)(fp + 1);
}

/* ---- a policy ------------------------------------------------------------------ */

struct snap;

/* What a policy adds to the channel. NULL hooks do nothing (or allow). */
typedef struct fc_policy {
    /** Bytes of its own state per peer (fc_pol), zeroed by chan_reset. */
    size_t peer_size;
    /** The frame flags it uses beyond CHAN_F_CORE (any others: EPROTO). */
    uint16_t flags;
    /** Set up a peer's state (creation, context reset). */
    void (*peer_init)(quay_engine *e, fc_peer *fp);
    /** Beyond the window: may a new packet take sequence fp->tx.next? */
    int (*may_send)(const quay_engine *e, const fc_peer *fp);
    /** Something to say to the peer that needs no sequence number; `held`
     *  is how many of its messages the engine keeps (credit_held). */
    int (*owes)(const quay_engine *e, const fc_peer *fp, uint32_t held);
    /** A frame to peer p is written: add its flags, and set the field at
     *  offset 12 (the core put the NACKed seq there, or 0). */
    void (*frame_out)(quay_engine *e, int32_t p, fc_peer *fp, uint16_t *flags,
                      uint32_t *field);
    /** An intact frame's flags and field 12, before anything changes:
     *  0, or QUAY_EPROTO (the two ends must run the same policy). With
     *  NACK set, the core takes the ack field as the NACKed seq. */
    int (*frame_check)(uint16_t flags, uint32_t ack, uint32_t field);
    /** A checked frame from fp's peer, after its ACK/NACK was taken. */
    void (*frame_in)(quay_engine *e, fc_peer *fp, uint16_t flags, uint32_t field);
    /** Its run of a peer's context record (fc_snap.c calls it at its
     *  place) in every mode; on load, 0 if what it read is not sane. */
    int (*sx)(struct snap *s, fc_peer *fp);
} fc_policy;

/* ---- the core: the link_ops every policy shares (chan.c) ---------------------- */

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
uint32_t chan_link_frame_channel(const uint8_t *b);
int chan_frame_content(const uint8_t *b, size_t len, const uint8_t **pkt, size_t *pkt_len);
/** The knobs every channel has (window, timers, a descriptor kept for
 *  ACK-only frames): 0 or QUAY_EINVAL. A policy's config_check starts
 *  here, or is this. */
int chan_config_check(quay_config *c);

/** A policy's link table: the core's functions around its fc_policy. */
#define CHAN_LINK(name_, policy_, config_check_, holds_credit_)                         \
    {                                                                                   \
        .name = (name_), .impl = (policy_), .config_check = (config_check_),            \
        .holds_credit = (holds_credit_), .init = chan_init, .reset = chan_reset,        \
        .fini = chan_fini, .submit = chan_submit, .pull = chan_pull,                    \
        .has_work = chan_has_work, .on_frame = chan_on_packet,                          \
        .on_op_done = chan_on_op_done, .on_time = chan_on_time,                         \
        .deadline = chan_deadline, .abandon = chan_abandon,                             \
        .frame_channel = chan_link_frame_channel, .frame_content = chan_frame_content,  \
    }

/* ---- for the policies and fc_snap.c ------------------------------------------- */

/** 1 if the policy holds back a packet the window would let go. */
int chan_blocked(const quay_engine *e, const fc_peer *fp);
/** 1 if fp has something to say that needs no sequence number (ACK, NACK,
 *  the policy's, probe, ping answer): then the channel is not stable.
 *  `held`: the engine's credit_held for that peer. */
int chan_peer_owes(const quay_engine *e, const fc_peer *fp, uint32_t held);
/** The packets queued for p, waiting for a sequence number: the first
 *  (prev NULL) or the one after prev; NULL after the last. */
const qout *chan_queued(const quay_engine *e, int32_t p, const qout *prev);
/** Queue o for its peer again, last, as chan_submit left it (a restored
 *  context's queued packet). */
void chan_requeue(quay_engine *e, qout *o);

#endif /* QUAY_FLOWCTL_CHAN_H */
