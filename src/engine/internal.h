/*
 * internal.h — the engine's objects and the interfaces between its files.
 *
 * Ownership: the engine owns fixed pools (requests, message descriptors,
 * outgoing descriptors, control ring) allocated at creation through the
 * configured hooks. Objects move between intrusive lists; nothing on the
 * small-message hot path allocates. Files:
 *   engine.c   create/free, packet dispatch, time, stats, trace
 *   config.c   defaults and validation      errors.c  names and codes
 *   comm.c     communicators, context lookup, orphaned messages
 *   request.c  request pool, completion, test/free
 *   match*.c   posted/unexpected queues (fast) and the linear oracle
 *   seq.c      per-peer sequencing, held out-of-order packets, umsg pool
 *   p2p.c      isend/irecv/probe/mprobe API entry points
 *   eager.c    eager delivery, sync/ready acknowledgements
 *   rndv.c     rendezvous RTS/CTS/DATA (pipelined)
 *   rndv_rdma.c  RDMA rendezvous: GET / PUT fragments, FIN
 *   rtr.c      receiver-initiated transfers: RTR tables, SC [MPIN]
 *   arbitrate.c  ANY_SOURCE arbitration: announcements, flags, claims
 *   cancel.c   receive and send cancellation
 *   bsend.c    attached buffer for buffered sends
 *   out.c      outgoing descriptors, control ring, action queue, op_done
 */
#ifndef QUAY_ENGINE_INTERNAL_H
#define QUAY_ENGINE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <quay/quay.h>

#include "engine/list.h"
#include "engine/mem.h"

/* Keeps a rare path out of its caller, so the common one stays short (no
 * register spills for what it never does). */
#if defined(__GNUC__) || defined(__clang__)
#define QUAY_NOINLINE __attribute__((noinline))
#else
#define QUAY_NOINLINE
#endif
/* ... and keeps a hot helper inside its caller, where the compiler's
 * size heuristics would call it (a call is a third of a short path). */
#if defined(__GNUC__) || defined(__clang__)
#define QUAY_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define QUAY_ALWAYS_INLINE inline
#endif
#include "engine/wire.h"
#include "flowctl/ackn.h"

/* Bytes reserved in front of every engine header for the flow-control
 * channel frame (used only under QUAY_FLOW_ACKNACK). */
#define CHAN_FRAME_LEN 20

#define QUAY_UNUSED(x) ((void)(x))

/* ---- request ids: index in the pool | generation, never 0 ------------ */
#define REQ_IDX_BITS 20u
#define REQ_IDX_MASK ((1u << REQ_IDX_BITS) - 1u)
#define REQ_MAX ((1u << REQ_IDX_BITS) - 1u)

/* Request kinds. */
enum {
    RK_SEND = 1,
    RK_RECV = 2,
    RK_RDMA = 3, /* one-sided put / get */
    RK_COLL = 4  /* a collective call's request (src/collectives) */
};

/* Request flags. */
enum {
    RF_USER_FREED = 1u << 0,   /* quay_req_free before completion */
    RF_ON_TXQ = 1u << 1,       /* on e->txq: has packets to emit */
    RF_ON_CQ = 1u << 2,        /* on e->cq: COMPLETE action pending */
    RF_ENV_SENT = 1u << 3,     /* send: EAGER/RTS emitted */
    RF_WIRE_DONE = 1u << 4,    /* send eager: packet op_done */
    RF_NEED_ACK = 1u << 5,     /* send: completion waits for an ACK */
    RF_ACKED = 1u << 6,        /* send: ACK received */
    RF_CANCEL_WANTED = 1u << 7,/* send: CANCEL_REQ to emit */
    RF_CANCEL_PENDING = 1u << 8,/* send: verdict not yet received */
    RF_CANCELLED = 1u << 9,    /* send: receiver agreed to cancel */
    RF_NEED_CTS = 1u << 10,    /* recv rndv: a (new) grant to emit */
    RF_CTS_SEEN = 1u << 11,    /* send rndv: first CTS processed */
    RF_INTERNAL = 1u << 12,    /* engine-owned (buffered send carrier) */
    RF_RNDV = 1u << 13,        /* send: uses rendezvous */
    RF_FAILED = 1u << 14,      /* transport reported failure of an action */
    RF_GET_OFFER = 1u << 15,   /* send rndv: RTS carries our key (lkey) */
    RF_PUT_OFFER = 1u << 16,   /* send rndv: RTS says we can write to a key */
    RF_NEED_FIN = 1u << 17,    /* send PUT: FIN to emit (all data written) */
    RF_FIN_OWED = 1u << 18,    /* recv GET: holds a control slot for its FIN */
    RF_FIN_SEEN = 1u << 19,    /* FIN received (send GET, recv PUT) */
    RF_ON_RDMAQ = 1u << 20,    /* on e->rdmaq: RDMA actions to issue */
    RF_FIN_SENT = 1u << 21,    /* send PUT: FIN emitted */
    RF_RTR_SENT = 1u << 22,    /* recv RTR: the RTR went out (the sender may
                                  hold it: a revoke or cancel must follow) */
    RF_RTR_TAKEN = 1u << 23,   /* recv RTR: a cancel's verdict says the sender
                                  took the RTR: its SC is on its way */
    RF_ANY_CLAIMED = 1u << 24, /* recv ANY: matched by r->peer's flag for its
                                  send r->sreq (not posted any more): RTR_ANY
                                  given, awaiting the data and SC */
    RF_ANY_CANCEL = 1u << 25,  /* send ANY: cancelled while its flag is out:
                                  cancelled if declined, fails if claimed */
    RF_COLL = 1u << 26,        /* engine-owned step of a collective schedule:
                                  completion goes to e->coll_hook, then it is
                                  released (src/collectives/sched.c) */
    RF_PERSIST = 1u << 27,     /* persistent (quay_send_init / recv_init):
                                  DONE means inactive; quay_start renews it */
};
#define RF_ALL_FLAGS ((1u << 28) - 1u)

typedef struct quay_req {
    qlink link;       /* posted bin / wildcard list, or e->txq */
    qlink clink;      /* e->cq */
    uint32_t id;
    uint8_t kind;     /* RK_* */
    uint8_t state;    /* quay_req_state */
    uint8_t mode;     /* quay_send_mode (send) */
    uint8_t saved_state; /* send: state before SEND_CANCEL */
    uint32_t flags;   /* RF_* */
    uint32_t nout;    /* outgoing descriptors referencing this request */
    quay_comm *comm;
    int32_t rank;     /* send: dst comm rank; recv: src pattern */
    int32_t tag;      /* send: tag; recv: tag pattern */
    int32_t peer;     /* world rank of the peer (recv: once matched) */
    uint32_t ctx;
    union {
        const uint8_t *sbuf;
        uint8_t *rbuf;
    } u;
    size_t len;       /* send: message length; recv: capacity */
    uint64_t stamp;   /* recv: post order */
    quay_status status;
    void *user;
    /* send: envelope sequence, receiver's request id, rendezvous progress */
    uint32_t seq;
    uint32_t cancel_seq; /* send: sequence of its CANCEL_REQ */
    uint32_t rreq;
    /* recv: sender's request id and message length */
    uint32_t sreq;
    uint64_t msg_len;
    uint64_t lkey;      /* RDMA rendezvous: our internal region's key, or 0 */
    uint32_t slot;      /* recv ANY: its announcement's slot index + 1;
                           send ANY: the announcement id it flagged */
    uint32_t coll_step; /* RF_COLL: its step in the schedule (user) */
    /* Everything an eager message reads is above (three cache lines);
     * below, rendezvous and one-sided state. */
    uint64_t accepted;  /* bytes the receiver takes */
    uint32_t frag;      /* fragment size (receiver's choice) */
    uint32_t nfrags;
    uint32_t grant;     /* fragments [0, grant) allowed */
    uint32_t next_frag; /* send: next to emit */
    uint32_t frags_done;/* send: op_done count */
    uint32_t base;      /* recv: first fragment not yet received */
    uint64_t bitmap;    /* recv: received fragments in [base, base + 64) */
    uint64_t received;  /* recv: bytes received */
    uint32_t ncts;      /* recv: CTS emitted; send: every index < ncts seen */
    uint32_t cts_total; /* send: index of the final CTS (grant == nfrags) */
    uint64_t cts_bits;  /* send: CTS indices seen in [ncts, ncts + 64) */
    void *bsend_block;  /* internal buffered-send carrier: its block */
    uint64_t rkey;      /* one-sided, RDMA rendezvous: the peer's key */
    uint64_t roff;      /* one-sided: offset in the peer's region */
} quay_req;

/* Message descriptor: unexpected, held out of order, orphaned or taken. */
enum { UM_FREE = 0, UM_HELD, UM_UNEXP, UM_ORPHAN, UM_TAKEN };
enum {
    UMF_SYNC = 1u << 0,
    UMF_READY = 1u << 1,
    UMF_POISON = 1u << 2,
    UMF_CREDIT = 1u << 3, /* counted in its peer's credit_held */
    UMF_KEY = 1u << 4,    /* RTS: the sender's key is in `key` (GET offer) */
    UMF_PUT_OK = 1u << 5  /* RTS: the sender can write into our key */
};
#define UMF_ALL 0x3Fu

struct quay_msg {
    qlink blink;      /* unexpected bin list; held list of its peer */
    qlink alink;      /* comm arrival-order list; orphans list */
    qlink slink;      /* comm per-source list (comm->unexp_by_src) */
    qlink tlink;      /* engine-wide (ctx, tag) bin, for ANY_SOURCE receives
                         (comm->unexp_by_tag) */
    uint8_t where;    /* UM_* */
    uint8_t type;     /* QUAY_PKT_EAGER / RTS / CANCEL_REQ */
    uint8_t flags;    /* UMF_* */
    int32_t peer;     /* sender world rank */
    uint32_t ctx;
    int32_t src;      /* sender comm rank (claimed until validated) */
    int32_t tag;
    uint32_t seq;
    uint32_t sreq;
    uint32_t target;  /* CANCEL_REQ: sequence to cancel */
    uint64_t len;     /* message length */
    uint64_t key;     /* RTS with UMF_KEY, RTR: the receiver's buffer key */
    uint32_t rreq;    /* RTR, SC: the receive request */
    uint32_t x;       /* RTR: next sequence the receiver expected from us */
    int32_t status;   /* SC: the transfer's outcome */
    uint8_t rflags;   /* RTR: WIRE_F_REVOKE / WIRE_F_CANCEL; DISABLE_ANY */
    uint32_t slot;    /* arbitration packets: the announcement id */
    uint8_t *data;    /* eager payload copy (len bytes) or NULL */
    uint8_t pooled;   /* data is a slot of the small-payload pool */
    quay_comm *comm;  /* NULL while orphaned or held */
};
typedef struct quay_msg umsg;

/* Communicator. */
struct quay_comm {
    uint32_t ctx;
    int32_t size;
    int32_t myrank;
    int in_use;
    int32_t *world;      /* comm rank -> world rank */
    uint8_t identity;    /* world[i] == i for every i: hot paths skip the map */
    qlink posted_wild;   /* (ANY_SOURCE, ANY_TAG) receives in post order */
    uint32_t nwild;      /* receives on posted_wild */
    uint32_t n_anysrc;   /* posted (ANY_SOURCE, tag) receives (in bins) */
    uint32_t n_anytag;   /* posted (src, ANY_TAG) receives (in bins) */
    qlink unexp_all;     /* unexpected messages in arrival order */
    qlink *unexp_src;    /* per source, arrival order (if unexp_by_src) */
    uint8_t unexp_by_src;/* the per-source lists and the (ctx, tag) bins hold */
    uint8_t unexp_by_tag;/* every unexpected message of the comm: made at
                            its first (src, ANY_TAG) / (ANY_SOURCE, tag)
                            lookup, kept from then on (match.c) */
    uint32_t nunexp;
    uint32_t nreqs;      /* requests referencing this comm */
    uint32_t nplain;     /* posted receives not delegated by an RTR: while
                            any is pending no receive of the comm may be
                            delegated (it could be owed a message first) */
    struct quay_comm *coll; /* its collective twin (context | QUAY_CTX_COLL),
                               created at its first collective, or NULL */
    uint8_t internal;    /* a collective twin: not the user's to use */
    uint32_t coll_seq;   /* collectives called on it so far */
    uint64_t hkey;       /* its context mixed with the engine's seed: the
                            posted bins' hash term (match_fast.h) */
};
/* A communicator's hkey for context ctx under the engine's seed. */
static inline uint64_t comm_hkey(uint64_t seed, uint32_t ctx)
{
    return seed ^ ((uint64_t)ctx * 0xff51afd7ed558ccdull);
}
/* The bit that makes a communicator's context id its collective twin's.
 * User context ids are below it. */
#define QUAY_CTX_COLL 0x80000000u

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

/* Registered memory region: engine/mem.h. */

/* Outgoing descriptor kinds beyond wire packet types: RDMA actions. */
enum { QOUT_RDMA_PUT = 0x40, QOUT_RDMA_GET = 0x41, QOUT_RDMA_ATOMIC = 0x42 };
/* A one-sided request's r->mode: what its action is. */
enum { RDMA_GET = 0, RDMA_PUT = 1, RDMA_ATOMIC = 2 };

/* Outgoing descriptor: one SEND action until its op_done. */
/* Room for a packet's headers in a descriptor: the largest header, or an
 * envelope with an inline payload (quay_send_inline). */
#define QOUT_HDR_MAX \
    (QUAY_MAX_HEADER > WIRE_ENV_LEN + QUAY_INLINE_MAX ? QUAY_MAX_HEADER \
                                                      : WIRE_ENV_LEN + QUAY_INLINE_MAX)

typedef struct qout {
    uint32_t gen;
    uint8_t in_use;
    uint8_t pkt;      /* quay_pkt_type */
    uint16_t hdr_len;
    int32_t peer;
    uint32_t train_next; /* train (below): the number of its next piece */
    quay_req *req;    /* owner, or NULL for a control reply */
    const void *payload;
    size_t payload_len;
    struct qout *next; /* free list / loopback queue / channel lists */
    uint32_t seq;     /* for tracing */
    /* flow control: the channel keeps the packet until it is acknowledged */
    uint32_t chan_seq;
    uint16_t refs;    /* transmissions the adapter has not op_done'd */
    uint8_t framed;   /* hdr[0..CHAN_FRAME_LEN) holds a channel frame */
    uint8_t acked;    /* acknowledged (or abandoned): release at refs 0 */
    uint8_t failed;   /* abandoned because the peer failed */
    uint8_t resent;   /* retransmitted at least once: no RTT sample (Karn) */
    uint64_t sent_ns; /* first transmission (engine time) */
    /* RDMA actions: the peer's key and offset (payload is the local side) */
    uint64_t rkey;
    uint64_t roff;
    /* quay_send_inline's train (inline.c): the pieces coalesced behind
     * the first message, in a buffer of the engine's train pool, sent as
     * the payload iovec; the bytes the packet may still grow by
     * (negative: none; never positive without trains). train_next is the
     * number the next piece would carry (seq + 1 while there is none). */
    uint8_t *train;
    int16_t train_room;
    /* channel frame, then the engine header at OUT_HDR(o); an inline
     * send's payload right behind its header (one iovec) */
    uint8_t hdr[CHAN_FRAME_LEN + QOUT_HDR_MAX];
} qout;

#define OUT_HDR(o) ((o)->hdr + CHAN_FRAME_LEN)

/* Queued control reply (ACK, CANCEL_REP, FIN to a sender): pure data,
 * encoded at pull. */
typedef struct ctrl_item {
    uint8_t pkt;
    int32_t peer;
    uint32_t sreq;
    int32_t status;
    uint32_t rreq;   /* FIN: the receive it comes from */
    uint8_t flags;   /* CANCEL_REP: WIRE_F_FOR_RECV */
} ctrl_item;

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

/* Matching state (match.c), engine-wide exact bins. */
typedef struct match_state {
    qlink *posted_bins;
    uint32_t posted_mask;
    qlink *unexp_bins;   /* by (ctx, src, tag) */
    qlink *unexp_tbins;  /* by (ctx, tag): ANY_SOURCE receives look here */
    uint32_t unexp_mask;
    uint64_t seed;
    struct oracle *oracle; /* linear matcher (CHECK_ORACLE / LINEAR_MATCH) */
    int use_fast;          /* 0 under LINEAR_MATCH */
    int check;             /* compare fast and oracle on every operation */
} match_state;

/* Attached buffer for buffered sends (bsend.c). */
typedef struct bsend_state {
    uint8_t *buf;
    size_t len;
    uint32_t nused; /* blocks in use */
} bsend_state;

struct quay_engine {
    /* ---- hot: what every eager message, completion and idle pull reads,
     * packed into the first few cache lines. With many engines in one
     * process (nicsim at 1024 ranks) each visit to an engine finds it
     * cold, so every line these fields would otherwise spread over is a
     * miss. Keep rarely-read fields below its end (after st and cfg). */
    struct quay_engine *root;
    int fatal;           /* sticky fatal code, 0 when healthy */
    int flow;            /* quay_config.flow */
    uint8_t rare;        /* a source of work the hot path seldom has (out.c
                            rare_ready) may hold something: set where one
                            is filled (work_rare), cleared by an idle pull
                            that finds them all empty */
    uint8_t quiesced;    /* quay_channel_quiesce: no new packets out */
    uint8_t chan_id;     /* this channel's id, in every frame it sends */
    uint8_t tx_plain;    /* no flow control, no RTRs, no multi-send: an
                            eager send may leave by out.c's short path */
    uint8_t p2p_plain;   /* no RTRs, no ANY_SOURCE arbitration: isend of
                            an eager size takes p2p.c's short path (both
                            set once at creation) */
    uint8_t inline_plain;/* tx_plain and p2p_plain: quay_send_inline may
                            take a message (inline.c) */
    uint8_t send_copy;   /* inline_plain and QUAY_CFG_SEND_COPY: quay_isend
                            goes to isend_copy (p2p.c) */
    uint32_t nchans;     /* root only */
    uint32_t nfailed;    /* peers declared failed: 0 lets hot paths skip
                            reading the peer's state */
    int32_t rank;
    int32_t nranks;
    quay_trace_fn trace_fn;
    size_t eager_max;    /* cfg.eager_max, here for the hot path */
    size_t inline_lim;   /* quay_send_inline takes fewer bytes than this:
                            min(QUAY_INLINE_MAX, eager_max) + 1, or 0
                            without inline_plain (one compare says both) */
    size_t inline_small_lim; /* min(inline_lim, 17): its leaf path's */
    uint8_t complete_actions; /* cfg.flags & QUAY_CFG_COMPLETE_ACTIONS */

    quay_req *reqs;
    quay_req *req_free;  /* free list through link.next */
    uint32_t nreqs;
    uint32_t reqs_used;
    uint64_t reqs_allocs;/* requests ever allocated (keepalive re-arming) */
    uint64_t stamp;      /* receive post counter */

    qout *outs;
    qout *out_free;
    uint32_t nouts;
    uint32_t outs_used;
    uint32_t outs_reserved; /* kept for ACK-only frames (flow control) */
    uint32_t ctrl_count;
    qout *loop_head, *loop_tail; /* SENDs to self, processed in order */
    qout *inq_head, *inq_tail;   /* quay_send_inline packets, in send order,
                                    pulled before the txq (inline.c) */
    uint8_t *train_mem;  /* the train pool: TRAIN_BUFS buffers of
                            train_room bytes (inline.c); NULL: no trains */
    uint8_t **train_free;
    uint32_t ntrain_free;
    uint32_t train_room; /* bytes a train may add behind its first message */
    uint32_t train_limit;/* largest train packet: min(QUAY_TRAIN_MAX, max_packet) */
    qlink txq;           /* requests with packets to emit */
    qlink cq;            /* completed requests awaiting a COMPLETE action */
    qlink rdmaq;         /* one-sided requests waiting for their action */
    uint32_t rtrq_count;
    uint32_t coll_npend; /* arrivals the collectives want to look at */
    uint32_t coll_nemit; /* offload actions waiting to be pulled */
    uint32_t ndrain_blocked;
    rtr_ent *rtr_pool;   /* rtr_per_peer entries per peer */
    any_slot *aslots;    /* cfg.any_slots announced patterns (arbitrate.c) */
    peer_state *peers;
    /* What each peer sent that we refused, against the limits that fail
     * it (root only: forged keys, mem.c; refused packets, engine.c). Apart
     * from peer_state, whose size the hot paths index by. */
    struct peer_strikes {
        uint32_t forged;
        uint32_t rejected;
    } *strikes;
    quay_comm *last_comm; /* lookup cache */

    /* collectives (src/collectives): the engine only calls these hooks */
    void (*coll_hook)(quay_engine *e, quay_req *r); /* an RF_COLL request is done */
    void (*coll_progress)(quay_engine *e);          /* run schedules with work */
    qlink coll_ready;    /* schedules with steps to start */
    qlink coll_blocked;  /* ... that found no request or control slot */

    match_state m;
    /* ---- end of the hot part */

    quay_stats st;       /* pkts_in, pkts_out first: next to the hot part */
    quay_config cfg;
    quay_allocator a;
    uint64_t now;

    umsg *msgs;
    uint32_t nmsgs;
    umsg *msg_free;      /* free list through blink.next */
    uint32_t msgs_used;
    uint8_t *upay_free;  /* small-payload slots (payload.h) */
    uint8_t *upay_mem;
    uint32_t upay_nslots;
    size_t ubytes;       /* payload bytes held in descriptors */
    size_t ubytes_peak;
    size_t held_bytes;
    uint32_t held_total;

    ctrl_item *ctrl;
    uint32_t ctrl_cap, ctrl_mask, ctrl_head;
    uint32_t ctrl_reserved; /* slots promised to FINs of RDMA reads */

    rtr_item *rtrq;      /* RTR work to emit, a ring (rtr.c) */
    uint32_t rtrq_cap, rtrq_head;
    rtr_logent *rlog_pool;
    uint64_t *aslot_bits;/* per slot: peers holding it, any_words words */
    uint32_t any_words;

    void (*coll_fini)(quay_engine *e);              /* free them (engine free) */
    int (*coll_emit)(quay_engine *e, quay_action *a); /* an offload action */
    void (*coll_arrival)(quay_engine *e, quay_comm *twin, const struct quay_msg *m);
    qlink coll_early;    /* schedules started by an arrival, not yet called */
    struct coll_bypass *coll_byp; /* application bypass state, or NULL */
    struct coll_offload *coll_off; /* offloading state (offload.c), or NULL */
    qlink coll_active;   /* every running schedule */
    uint32_t coll_nactive;
    qlink coll_spare;    /* finished schedules kept with their arrays, so
                            back-to-back collectives do not allocate */
    uint32_t coll_nspare;
    uint32_t ncomms_user;/* communicators the user created (twins aside) */

    quay_comm *comms;
    uint32_t ncomms_max;
    uint32_t ncomms;
    qlink orphans;       /* messages for contexts not created yet */
    uint32_t norphans;

    bsend_state bs;
    void *trace_ctx;

    /* flow control (src/flowctl/chan.c) */
    fc_params fcp;
    uint32_t chan_rr;    /* round-robin start for channel pulls */
    uint64_t ka_next;    /* next keepalive tick, 0 = not armed */
    uint64_t ka_idle_at; /* reqs_allocs when a tick found no one waiting */

    /* registered memory (mem.c) */
    mem_table mem;

    /* channels: channel 0 is the engine the user created (the root); it
     * owns the others and faces the transport (engine.c dispatches) */
    uint32_t ctx_key;    /* the running context's key: seeds every frame
                            CRC, so a frame of another context is refused */
    uint32_t act_rr;     /* root only: channel to pull actions from first */
    struct quay_engine *chans[QUAY_MAX_CHANNELS]; /* root only */
    uint32_t crc_table[256];
};

/* Channel handles: the root for transport calls, channel k for the rest. */
static inline quay_engine *engine_root(quay_engine *e) { return e->root; }

/* ---- engine-internal sends and receives (p2p.c) -------------------------- */
/** Post a send on c (arguments already valid, dst not PROC_NULL) as an
 *  engine-owned request: rflags (e.g. RF_COLL), user and step are set
 *  before anything can complete it. *preq may be released by the time
 *  this returns if it completed at once (RF_COLL: its hook has run). */
int p2p_send_post(quay_engine *e, quay_comm *c, const void *buf, size_t len, int32_t dst,
                  int32_t tag, quay_send_mode mode, uint32_t rflags, void *user, uint32_t step,
                  quay_req **preq);
/** The same for a receive (src a comm rank or QUAY_ANY_SOURCE). */
/* The front of iprobe, improbe and recv_inline: the arguments checked,
 * PROC_NULL answered, the oldest kept message matching (src, tag) found.
 * < 0 an error, 1 for PROC_NULL (st filled), else 0 with *pm (NULL when
 * nothing matched). */
int p2p_probe_lookup(quay_engine *e, quay_comm *c, int32_t src, int32_t tag,
                     quay_status *st, umsg **pm);
int p2p_recv_post(quay_engine *e, quay_comm *c, void *buf, size_t cap, int32_t src,
                  int32_t tag, uint32_t rflags, void *user, uint32_t step, quay_req **preq);
/** Cancel r (arguments checked by the caller), as quay_cancel. */
int req_cancel(quay_engine *e, quay_req *r);
/** Collectives (src/collectives/sched.c): install the engine's hooks at
 *  creation when the config needs them before any collective call
 *  (coll_bypass: arrivals must be seen). 0 or QUAY_ENOMEM. */
int coll_attach(quay_engine *e);
/** Create a communicator (quay_comm_create without the user's checks on
 *  ctx); internal marks a collective twin. */
int comm_create(quay_engine *e, uint32_t ctx, int32_t nranks, const int32_t *world_ranks,
                int internal, quay_comm **pc);

/* ---- config (config.c) ---------------------------------------------------- */
/** Validate and normalise the engine's copy of the caller's config
 *  (already in the latest layout: quay_config_upgrade). */
int config_check(quay_config *c);
/** Every field's default, in the latest layout. */
void config_default(quay_config *cfg);
/** Engine e's counters, whole (abi.c copies each layout's share). */
void engine_stats(const quay_engine *e, quay_stats *st);

/* ---- allocation ------------------------------------------------------- */
void *qalloc(quay_engine *e, size_t n);
void qfree(quay_engine *e, void *p);

/* ---- trace ------------------------------------------------------------- */
void trace_state(quay_engine *e, quay_req *r, int to);
void trace_pkt(quay_engine *e, int kind, int pkt, int32_t peer, uint32_t req,
               uint32_t seq, int code);
void trace_match(quay_engine *e, quay_req *r, const umsg *m, int32_t peer,
                 uint32_t seq, uint32_t ctx, int32_t src, int32_t tag);

/* Something went on a queue that out_has_actions checks only when this
 * is set: collective schedules, held packets, RTR work, RDMA actions. */
static inline void work_rare(quay_engine *e)
{
    e->rare = 1;
}

/* Collective schedules have steps ready to start (e->coll_progress). */
static inline int coll_due(const quay_engine *e)
{
    return e->rare && (!ql_empty(&e->coll_ready) || e->coll_npend != 0);
}

static inline void req_set_state(quay_engine *e, quay_req *r, int to)
{
    if (e->trace_fn)
        trace_state(e, r, to);
    r->state = (uint8_t)to;
}

/* A payload of at most 16 bytes copied with no library call, so a path
 * that copies it may stay a leaf (no frame to set up): two overlapping
 * words, halves or bytes. */
static QUAY_ALWAYS_INLINE void copy_small(void *dst, const void *src, size_t n)
{
    uint8_t *d = dst;
    const uint8_t *s = src;
    if (n >= 8) {
        uint64_t a, z;
        memcpy(&a, s, 8);
        memcpy(&z, s + n - 8, 8);
        memcpy(d, &a, 8);
        memcpy(d + n - 8, &z, 8);
    } else if (n >= 4) {
        uint32_t a, z;
        memcpy(&a, s, 4);
        memcpy(&z, s + n - 4, 4);
        memcpy(d, &a, 4);
        memcpy(d + n - 4, &z, 4);
    } else if (n != 0) {
        uint8_t a = s[0], m = s[n / 2], z = s[n - 1];
        d[0] = a;
        d[n / 2] = m;
        d[n - 1] = z;
    }
}

/* A payload copy on a hot path: 8 to 16 bytes (copy_small's two
 * overlapping words) without a library call; the rest through memcpy. */
static QUAY_ALWAYS_INLINE void copy_payload(void *dst, const void *src, size_t n)
{
    if (n >= 8 && n <= 16)
        copy_small(dst, src, n);
    else
        memcpy(dst, src, n);
}

/* ---- requests (request.c) ---------------------------------------------- */
/* req_renew (below) for a receive posted next: all of it but the link and
 * the stamp, which the posting sets (match_post_in_bin). */
static QUAY_ALWAYS_INLINE void req_renew_to_post(quay_engine *e, quay_req *r)
{
    uint32_t idx = r->id & REQ_IDX_MASK;
    uint32_t gen = (r->id >> REQ_IDX_BITS) + 1u;
    if ((gen & ((1u << (32 - REQ_IDX_BITS)) - 1u)) == 0)
        gen = 1; /* generation 0 is never handed out: ids are never 0 */
    r->id = (gen << REQ_IDX_BITS) | idx; /* stale wire ids no longer match */
    r->peer = -1;
    r->lkey = 0;
    r->slot = 0;  /* a flagged send's announcement id would make a later
                     receive look arbitrated (the snapshot refuses it) */
    r->status.source = 0; /* field by field: memset here became rep stos */
    r->status.tag = 0;
    r->status.error = 0;
    r->status.cancelled = 0;
    r->status.count = 0;
    e->reqs_allocs++;
}
/* A new round of r (from the pool, or a persistent request started again):
 * a new id, and what every request reads reset; protocol fields are set by
 * the protocol that uses them (send_start, rndv_*, quay_cancel). r has no
 * packet out (nout 0), is on no list and has a self-linked clink. Kind,
 * communicator, user data, arguments and flags are the caller's. */
static QUAY_ALWAYS_INLINE void req_renew(quay_engine *e, quay_req *r)
{
    req_renew_to_post(e, r);
    ql_init(&r->link);
    r->stamp = 0; /* a reused slot's old stamp may be newer than a reset
                     engine's counter: only a posting sets one */
}
/* A request from the pool (NULL when none is free). Inline: two per
 * message on the hot path. */
static QUAY_ALWAYS_INLINE quay_req *req_alloc(quay_engine *e, int kind, quay_comm *c)
{
    quay_req *r = e->req_free;
    if (r == NULL)
        return NULL;
    e->req_free = (quay_req *)r->link.next;
    r->kind = (uint8_t)kind;
    r->comm = c;
    r->ctx = c != NULL ? c->ctx : 0;
    r->user = NULL;
    req_renew(e, r);
    r->flags = 0;
    if (c != NULL)
        c->nreqs++;
    e->reqs_used++;
    return r;
}
void req_release(quay_engine *e, quay_req *r);
void req_complete_rest(quay_engine *e, quay_req *r);
/* Request flags that make completion more than a state change. */
#define RF_COMPLETE_WORK                                                                 \
    (RF_ANY_CANCEL | RF_ON_TXQ | RF_ON_RDMAQ | RF_FIN_OWED | RF_INTERNAL | RF_COLL |    \
     RF_USER_FREED)
/* The common case of req_progress: a standard eager send whose packet
 * is out and that waits for nothing else (no ACK, cancel, failure). */
static inline int eager_send_over(const quay_req *r)
{
    return r->state == QUAY_RS_SEND_EAGER && r->nout == 0 &&
           (r->flags & (RF_WIRE_DONE | RF_NEED_ACK | RF_CANCEL_WANTED | RF_CANCEL_PENDING |
                        RF_CANCELLED | RF_FAILED | RF_RNDV)) == RF_WIRE_DONE;
}

/* What completion does once r is DONE: the common case (nothing queued,
 * nothing to release, owned by the user, no COMPLETE action wanted)
 * passes one test. */
static QUAY_ALWAYS_INLINE void req_complete_done(quay_engine *e, quay_req *r)
{
    if ((r->flags & RF_COMPLETE_WORK) || r->lkey != 0 || e->complete_actions)
        req_complete_rest(e, r);
}
/** Move r to DONE, queue its COMPLETE action or release it. */
static QUAY_ALWAYS_INLINE void req_complete(quay_engine *e, quay_req *r)
{
    req_set_state(e, r, QUAY_RS_DONE);
    req_complete_done(e, r);
}
/** req_complete where the caller knows there is no trace hook (a lean
 *  train, engine.c). */
static QUAY_ALWAYS_INLINE void req_complete_untraced(quay_engine *e, quay_req *r)
{
    r->state = QUAY_RS_DONE;
    req_complete_done(e, r);
}
/** Request for a wire id (index + generation), or NULL if stale/forged. */
quay_req *req_by_id(quay_engine *e, uint32_t id);
/** r is a live request of e's pool (a handle from the user, checked on
 *  every call that takes one). */
/* p is the start of one of the n slots of `size` bytes at base: as an
 * offset from the pool, one unsigned compare takes the range (NULL and
 * anything below the pool wrap to above it) and a whole number of slots
 * in is one AND when size is a power of two (requests 256, comms 128). */
static inline int pool_slot(const void *base, size_t n, size_t size, const void *p)
{
    uintptr_t off = (uintptr_t)p - (uintptr_t)base;
    return off < (uintptr_t)n * size && off % size == 0;
}
static inline int req_valid_ptr(const quay_engine *e, const quay_req *r)
{
    return pool_slot(e->reqs, e->nreqs, sizeof *r, r) && r->state != QUAY_RS_FREE;
}
void txq_add(quay_engine *e, quay_req *r);

/* ---- communicators (comm.c) -------------------------------------------- */
quay_comm *comm_lookup_scan(quay_engine *e, uint32_t ctx);
/* The communicator of context ctx, or NULL: the last one found first. */
static inline quay_comm *comm_lookup(quay_engine *e, uint32_t ctx)
{
    quay_comm *c = e->last_comm;
    if (c != NULL && c->ctx == ctx && c->in_use)
        return c;
    return comm_lookup_scan(e, ctx);
}
/* c is a user's live communicator of engine e (checked before any read of
 * it: a pointer outside the pool is refused). */
static inline int comm_ok(const quay_engine *e, const quay_comm *c)
{
    return pool_slot(e->comms, e->ncomms_max, sizeof *c, c) && c->in_use && !c->internal;
}
/** Set c->identity from its map (after the map is filled). */
void comm_note_identity(quay_comm *c);
/** World rank of comm rank `r` (in range). */
static inline int32_t comm_world(const quay_comm *c, int32_t r)
{
    return c->identity ? r : c->world[r];
}
/** Comm rank of world rank `peer` claimed as `src`: 1 if consistent. */
static inline int comm_src_ok(const quay_comm *c, int32_t src, int32_t peer)
{
    return src >= 0 && src < c->size && comm_world(c, src) == peer;
}

/* ---- messages and sequencing (seq.c) ------------------------------------ */
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
/** Handle a sequenced packet (EAGER, RTS, CANCEL_REQ) from `peer`. */
int seq_on_packet(quay_engine *e, int32_t peer, const wire_hdr *h,
                  const uint8_t *payload, size_t plen);
/** Retry draining peers whose due held packets were blocked. */
void seq_retry_blocked(quay_engine *e);
/** Find an unmatched (unexpected or orphaned) message by sender and
 *  sequence number, or NULL. */
umsg *msg_find_by_seq(quay_engine *e, int32_t peer, uint32_t seq);

/* ---- matching (match.c facade) ------------------------------------------ */
int match_init(quay_engine *e);
void match_fini(quay_engine *e);
/** Empty every queue (context reset); the bins stay allocated. */
void match_reset(quay_engine *e);
quay_req *match_find_posted(quay_engine *e, quay_comm *c, int32_t src,
                            int32_t tag);
void match_add_posted(quay_engine *e, quay_req *r);
void match_remove_posted(quay_engine *e, quay_req *r);
umsg *match_find_unexp(quay_engine *e, quay_comm *c, int32_t src, int32_t tag);
void match_add_unexp(quay_engine *e, quay_comm *c, umsg *m);
void match_remove_unexp(quay_engine *e, umsg *m);

/* ---- protocols ------------------------------------------------------------ */
/** A matchable message (EAGER or RTS) meets receive r (from arrival, post,
 *  or imrecv). `data` is the eager payload (arrival or held copy). */
void p2p_deliver(quay_engine *e, quay_req *r, const umsg *env,
                 const uint8_t *data);
int eager_on_ack(quay_engine *e, int32_t peer, const wire_hdr *h);
/** quay_on_packet's fast path: an in-order standard EAGER that meets a
 *  posted receive. Returns EAGER_NOT_FAST (nothing done: take the general
 *  path) or the packet's result. */
#define EAGER_NOT_FAST 1
int eager_fast_arrival(quay_engine *e, int32_t peer, const uint8_t *b,
                       size_t len);
void rndv_recv_matched(quay_engine *e, quay_req *r, const umsg *env);
/** Rendezvous fragment count for `bytes` (frag shrunk for absurd sizes so
 *  the count fits in 32 bits). */
uint32_t rndv_split(uint64_t bytes, uint64_t frag_size, uint32_t *frag);

/* RDMA rendezvous (rndv_rdma.c). */
/** Sender: offer a key (GET) or to write (PUT) in the RTS, per rndv_mode,
 *  caps and free regions / slots. */
void rndv_offer(quay_engine *e, quay_req *r);
/** Receiver: take the RTS's offer if this side can; 1 if it did (the
 *  request is in RECV_GET or RECV_PUT), 0 for DATA packets. */
int rndv_rdma_matched(quay_engine *e, quay_req *r, const umsg *env);
/** Sender: a CTS carrying the receiver's key (validated by rndv_on_cts). */
int rndv_put_start(quay_engine *e, quay_req *r, const wire_hdr *h);
/** Sender: the match is known and so is where to write (a keyed CTS or an
 *  RTR): set up the RDMA_PUT fragments into `key` and enter `state`
 *  (SEND_PUT or SEND_WRITE). */
void rndv_write_begin(quay_engine *e, quay_req *r, int state, uint32_t rreq, uint64_t key,
                      uint64_t accepted, uint32_t frag, uint32_t nfrags);
/** Build r's next RDMA fragment action into o; 1 if r may issue another
 *  one now. */
int rndv_rdma_emit(quay_engine *e, quay_req *r, qout *o);
/** Progress of a request in SEND_PUT, RECV_GET or RECV_PUT. */
void rndv_rdma_progress(quay_engine *e, quay_req *r);
int rndv_on_fin(quay_engine *e, int32_t peer, const wire_hdr *h);
/** The status a FIN or SC reports for a transfer that ended with err. */
int32_t rndv_fin_status(int32_t err);
/** At completion: owed FIN out, internal region released. */
void rndv_rdma_release(quay_engine *e, quay_req *r);
/** Queue r for RDMA actions (no-op if queued). */
void rdmaq_add(quay_engine *e, quay_req *r);

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
/** Sequenced RTR / SC in order from `peer`: 0, or QUAY_ESTATE. */
int rtr_on_rtr(quay_engine *e, int32_t peer, const umsg *m);
int rtr_on_sc(quay_engine *e, int32_t peer, const umsg *m);
/** Receiver: the verdict on an RTR cancel. */
int rtr_on_cancel_rep(quay_engine *e, int32_t peer, const wire_hdr *h);
/** Receiver: cancel a delegated receive (asks the sender). */
void rtr_cancel(quay_engine *e, quay_req *r);
/** Build the next queued RTR into o; 0 if the item was moot (skipped). */
int rtrq_emit(quay_engine *e, qout *o);

/** Sender: an envelope is about to go to r->peer: kill the RTRs it may
 *  match and log it (no-op without rtr). */
void rtr_envelope(quay_engine *e, quay_req *r);

/* ANY_SOURCE arbitration (arbitrate.c). */
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
/** Receiver: a posted receive (RECV_POSTED, RECV_RTR or RECV_ANY) leaves
 *  the queue and completes cancelled (cancel.c). */
void recv_unpost_cancelled(quay_engine *e, quay_req *r);
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
/** Sender: cancel r (SEND_ANY or SEND_QUEUED). */
void arb_cancel_send(quay_engine *e, quay_req *r);
/** Sequenced arbitration packet (and SC for a claimed receive) from peer,
 *  in order: 0, QUAY_EAGAIN (no room to answer: offer again) or
 *  QUAY_ESTATE. */
int arb_on_packet(quay_engine *e, int32_t peer, const umsg *m);
int arb_on_sc(quay_engine *e, int32_t peer, quay_req *r, const umsg *m);
/** Receiver: communicator ctx is freed: withdraw its announcements. */
void arb_comm_freed(quay_engine *e, uint32_t ctx);
/** Peer failure: its flags, claims and announcements go. */
void arb_peer_failed(quay_engine *e, int32_t peer);
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

/* p2p.c: a send (seq assigned) leaves as EAGER or RTS. */
void send_envelope(quay_engine *e, quay_req *r);
/** A send whose peer was free of arbitration starts: seq, RTR, flag or
 *  envelope. */
void send_go(quay_engine *e, quay_req *r);

int rndv_on_cts(quay_engine *e, int32_t peer, const wire_hdr *h);
int rndv_on_data(quay_engine *e, int32_t peer, const wire_hdr *h,
                 const uint8_t *payload, size_t plen);
void cancel_on_req(quay_engine *e, int32_t peer, const umsg *m);
int cancel_on_rep(quay_engine *e, int32_t peer, const wire_hdr *h);
/** Check whether a send or receive has finished and complete it. */
void req_progress(quay_engine *e, quay_req *r);
/** 1 if the eager message `m` owes its sender an ACK when matched. */
static inline int msg_needs_ack(const umsg *m)
{
    return m->type == QUAY_PKT_EAGER && (m->flags & (UMF_SYNC | UMF_READY)) &&
           !(m->flags & UMF_POISON);
}

/* ---- output (out.c) ------------------------------------------------------- */
int out_init(quay_engine *e);
void out_fini(quay_engine *e);
static inline int ctrl_space(const quay_engine *e)
{
    return e->ctrl_count + e->ctrl_reserved < e->ctrl_cap;
}
/** Promise a control slot to a later FIN (at most half the ring, so that
 *  replies other protocols wait for always find room): 1 if granted. */
int ctrl_reserve(quay_engine *e);
/** Queue a control reply; caller checked ctrl_space() (or reserved).
 *  Returns the queued item (for flags beyond the common fields). */
ctrl_item *ctrl_push(quay_engine *e, uint8_t pkt, int32_t peer, uint32_t sreq,
                     int32_t status, uint32_t rreq);
/** Build request r's next packet into o; 1 if r has more to emit. */
int req_emit(quay_req *r, qout *o);

/** Release an outgoing descriptor whose packet is done (status 0) or
 *  abandoned (status < 0): the owning request makes progress. */
void out_release(quay_engine *e, qout *o, int status);
/** Fill a SEND action for o (framed or not). */
void out_fill_send(quay_engine *e, qout *o, quay_action *a);
qout *out_alloc(quay_engine *e);
/* Return a descriptor to the free list. */
static inline void out_put(quay_engine *e, qout *o)
{
    o->in_use = 0;
    o->next = e->out_free;
    e->out_free = o;
    e->outs_used--;
}
/* out_alloc, inline for the small-message paths; a descriptor must be free. */
static QUAY_ALWAYS_INLINE qout *out_take(quay_engine *e)
{
    qout *o = e->out_free;
    e->out_free = o->next;
    o->next = NULL;
    o->in_use = 1;
    o->gen++;
    o->req = NULL;
    o->payload = NULL;
    o->payload_len = 0;
    o->seq = 0;
    o->refs = 0;
    o->framed = 0;
    o->acked = 0;
    o->failed = 0;
    e->outs_used++;
    return o;
}
/* A descriptor may be taken for a packet (anything but an ACK-only frame). */
static inline int out_avail(const quay_engine *e)
{
    return e->outs_used + e->outs_reserved < e->nouts;
}
/* Token of a SEND action: generation << 32 | channel << 28 | index
 * (config_check keeps max_out below 2^24). */
#define OUT_TOKEN_CHAN_SHIFT 28
#define OUT_TOKEN_CHAN_MASK 0xFu
#define OUT_TOKEN_IDX_MASK 0x0FFFFFFFu
static inline uint64_t out_token(const quay_engine *e, const qout *o)
{
    return (uint64_t)o->gen << 32 | (uint64_t)e->chan_id << OUT_TOKEN_CHAN_SHIFT |
           (uint64_t)(o - e->outs);
}
/* One channel's share of quay_has_actions / next_action / on_op_done.
 * has_actions is inline: the runtime asks it on every idle turn. */
int out_rare_ready(const quay_engine *e);
static inline int out_has_actions(const quay_engine *e)
{
    if (e->fatal)
        return 1; /* next_action answers the fatal code */
    return e->inq_head != NULL || e->ctrl_count != 0 || e->loop_head != NULL ||
           !ql_empty(&e->txq) ||
           !ql_empty(&e->cq) || (e->rare && out_rare_ready(e));
}
int out_next_action(quay_engine *e, quay_action *a);
int out_on_op_done(quay_engine *e, uint64_t token, int status);

/* ---- inline sends (inline.c) --------------------------------------------- */
/** Drop the queued inline packets to `peer` (it failed). */
void inq_drop_peer(quay_engine *e, int32_t peer);
/** The train pool, made once the engine's kind is known (no trains without
 *  inline sends, or under QUAY_CFG_NO_COALESCE); freed by train_fini. */
int train_init(quay_engine *e);
void train_fini(quay_engine *e);
/** An inline send's packet is over (op_done, or its peer failed): its
 *  train buffer, if any, and the descriptor go back. */
static inline void inline_out_put(quay_engine *e, qout *o)
{
    if (o->train != NULL) {
        e->train_free[e->ntrain_free++] = o->train;
        o->train = NULL;
        o->payload = NULL;
        o->payload_len = 0;
    }
    out_put(e, o);
}

/* ---- peer failure (failure.c) ------------------------------------------- */
/** Declare `peer` failed: abandon its packets, complete every request that
 *  depends on it with QUAY_EPEER; other peers are untouched. */
void engine_peer_failed(quay_engine *e, int32_t peer);
/** Declare `peer` failed on every channel for what it sent (root engine):
 *  counted, traced (QUAY_TR_PEER_HOSTILE with `code`). */
void engine_peer_hostile(quay_engine *root, int32_t peer, int code);
/* The peer whose failure would fail request r (its specific source, its
 * destination, its transfer partner), or -1 (ANY_SOURCE, self, done). */
int32_t req_waits_on(const quay_engine *e, const quay_req *r);

/* ---- channel contexts (engine/context_clear.c, context/snapshot.c) -------- */
/** Free what the context holds outside the pools: payload copies of live
 *  messages, communicators' rank maps (arrays may be NULL). */
void context_free_heap(quay_engine *e);
/** The channel's state as a context blob's body would hold it, whatever
 *  the channel is doing (no preconditions; read only), into buf[0..cap):
 *  the length it takes, or 0 if some state has no blob form. For tests
 *  and fuzzing: equal bytes before and after a call mean the call changed
 *  nothing a context holds. */
size_t snapshot_state(const quay_engine *e, void *buf, size_t cap);

/* ---- registered memory: engine/mem.h ---------------------------------------- */

/* ---- one-sided transfers (rdma.c) ------------------------------------------ */
/** Build r's RDMA action into o. */
void rdma_emit(quay_req *r, qout *o);
/** Fill the RDMA action of o. */
void rdma_fill(quay_engine *e, qout *o, quay_action *a);
/** Complete r once its action is done. */
void rdma_progress(quay_engine *e, quay_req *r);

/* ---- buffered send (bsend.c) ---------------------------------------------- */
void *bsend_alloc(quay_engine *e, size_t len);
void bsend_release(quay_engine *e, void *block);

/* ---- internal dispatch used by quay_on_packet and loopback ---------------- */
/** Handle a packet of total length `len` whose header starts at `b`. The
 *  payload follows the header in `b`, or is at `payload` when non-NULL
 *  (loopback: header and payload live in different buffers). */
int engine_recv(quay_engine *e, int32_t peer, const uint8_t *b, size_t len,
                const uint8_t *payload);

#endif /* QUAY_ENGINE_INTERNAL_H */
