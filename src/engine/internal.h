/*
 * internal.h — the engine object, and the door to the engine's modules.
 *
 * Ownership: the engine owns fixed pools (requests, message descriptors,
 * outgoing descriptors, control ring) allocated at creation through the
 * configured hooks. Objects move between intrusive lists; nothing on the
 * small-message hot path allocates. Each module's types, functions and
 * hot inline helpers are in its own header, included at the end:
 *   alloc.h    allocation through the embedder's hooks (alloc.c)
 *   trace.h    trace events (trace.c)
 *   request.h  request pool, ids, life cycle (request.c)
 *   comm.h     communicators, context lookup (comm.c)
 *   peer.h     per-peer state (seq.c, rtr.c, arbitrate.c)
 *   msg.h      message descriptors
 *   seq.h      per-peer sequencing, the descriptors' pool (seq.c)
 *   match.h    the matcher's facade (match.c)
 *   out.h      descriptors, control ring, actions, op_done (out.c),
 *              inline sends (inline.c), one-sided (rdma.c)
 *   rtr.h      receiver-initiated transfers, the sequenced control
 *              queue (rtr.c)
 *   arbitrate.h  ANY_SOURCE arbitration (arbitrate.c)
 *   p2p.h      point-to-point protocols (p2p.c, rndv*.c, cancel.c,
 *              bsend.c)
 *   eager.h    the eager protocol (eager.c) and the envelope's layout
 *   train.h    trains: a piece's layout, coalescing, splitting (train.c)
 *   mem.h      registered memory and keys (mem.c)
 *   packets.h  the packet types' registry: names, properties, handlers
 *              (packets.c)
 * Below the engine, flow control is a link (link.h); above it, the
 * collectives reach in through coll_port.h. engine.c creates, frees and
 * dispatches (through packets.h); config.c, abi.c and errors.c are the
 * public contract's.
 */
#ifndef QUAY_ENGINE_INTERNAL_H
#define QUAY_ENGINE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <quay/quay.h>

#include "engine/attrs.h"
#include "engine/coll_port.h"
#include "engine/copy.h"
#include "engine/link.h"
#include "engine/list.h"
#include "engine/mem.h"
#include "engine/wire.h"

/* The objects the engine points to; each module's header (included at
 * the end, once the engine's struct is complete) defines its own. */
typedef struct quay_msg umsg;
typedef struct qout qout;
typedef struct ctrl_item ctrl_item;
typedef struct peer_state peer_state;
typedef struct rtr_ent rtr_ent;
typedef struct rtr_logent rtr_logent;
typedef struct rtr_item rtr_item;
typedef struct any_slot any_slot;

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
                            train_room bytes (train.c); NULL: no trains */
    uint8_t **train_free;
    uint32_t ntrain_free;
    uint32_t train_room; /* bytes a train may add behind its first message */
    uint32_t train_limit;/* largest train packet: min(QUAY_TRAIN_MAX, max_packet) */
    qlink txq;           /* requests with packets to emit */
    qlink cq;            /* completed requests awaiting a COMPLETE action */
    qlink rdmaq;         /* one-sided requests waiting for their action */
    uint32_t rtrq_count;
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
    uint32_t *ctx_index;  /* context id -> communicator slot + 1 (0: empty):
                             open addressing, linear probes, at most half
                             full (comm.c) */
    uint32_t ctx_index_mask;
    uint32_t comm_hint;   /* every communicator slot below it is in use */

    coll_port coll;      /* collectives: their doorbell and hooks */
    const link_ops *link;/* flow control (NULL: none), set at creation */

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

    uint32_t ncomms_user;/* communicators the user created (twins aside) */

    quay_comm *comms;
    uint32_t ncomms_max;
    uint32_t ncomms;
    qlink orphans;       /* messages for contexts not created yet */
    uint32_t norphans;

    bsend_state bs;
    void *trace_ctx;

    /* flow control: the link's own state (link_ops.init), opaque here;
     * the few scalars below are the link's too, kept here because the
     * context's ENGN section saves them */
    void *link_state;
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

/* ---- config (config.c) ---------------------------------------------------- */
/** Validate and normalise the engine's copy of the caller's config
 *  (already in the latest layout: quay_config_upgrade). */
int config_check(quay_config *c);
/** Every field's default, in the latest layout. */
void config_default(quay_config *cfg);
/** Engine e's counters, whole (abi.c copies each layout's share). */
void engine_stats(const quay_engine *e, quay_stats *st);

/* ---- arrivals (engine.c) ------------------------------------------------ */
/** engine_recv after decoding: h's header is hl bytes of b[0..len); the
 *  payload is at `payload`, or b + hl when NULL. */
int engine_recv_decoded(quay_engine *e, int32_t peer, const wire_hdr *h, int hl,
                        const uint8_t *b, size_t len, const uint8_t *payload);

/* p is the start of one of the n slots of `size` bytes at base: as an
 * offset from the pool, one unsigned compare takes the range (NULL and
 * anything below the pool wrap to above it) and a whole number of slots
 * in is one AND when size is a power of two (requests 256, comms 128). */
static inline int pool_slot(const void *base, size_t n, size_t size, const void *p)
{
    uintptr_t off = (uintptr_t)p - (uintptr_t)base;
    return off < (uintptr_t)n * size && off % size == 0;
}

/* Something went on a queue that out_has_actions checks only when this
 * is set: collective schedules, held packets, RTR work, RDMA actions. */
static inline void work_rare(quay_engine *e)
{
    e->rare = 1;
}

/* Collective schedules have steps ready to start (coll_hooks.progress). */
static inline int coll_due(const quay_engine *e)
{
    return e->rare && coll_has_ready(&e->coll);
}

/* ---- peer failure (failure.c) ------------------------------------------- */
/** Declare `peer` failed on every channel for what it sent (root engine):
 *  counted, traced (QUAY_TR_PEER_HOSTILE with `code`). */
void engine_peer_hostile(quay_engine *root, int32_t peer, int code);

/* ---- channel contexts (engine/context_clear.c, snapshot.c) ---------------- */
/** Free what the context holds outside the pools: payload copies of live
 *  messages, communicators' rank maps (arrays may be NULL). */
void context_free_heap(quay_engine *e);
/** The channel's state as a context blob's body would hold it, whatever
 *  the channel is doing (no preconditions; read only), into buf[0..cap):
 *  the length it takes, or 0 if some state has no blob form. For tests
 *  and fuzzing: equal bytes before and after a call mean the call changed
 *  nothing a context holds. */
size_t snapshot_state(const quay_engine *e, void *buf, size_t cap);

/* The modules' own headers, in the order their types depend on each
 * other; each may also be included alone. */
#include "engine/alloc.h"
#include "engine/trace.h"
#include "engine/comm.h"
#include "engine/packets.h"
#include "engine/request.h"
#include "engine/peer.h"
#include "engine/msg.h"
#include "engine/seq.h"
#include "engine/match.h"
#include "engine/out.h"
#include "engine/rtr.h"
#include "engine/arbitrate.h"
#include "engine/p2p.h"
#include "engine/eager.h"
#include "engine/train.h"

#endif /* QUAY_ENGINE_INTERNAL_H */
