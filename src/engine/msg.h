/*
 * msg.h — message descriptors (unexpected, held, orphaned, taken), per-peer
 * sequencing (seq.c) and the matcher's facade (match.c).
 */
#include "engine/internal.h" /* (outside the guard: internal.h includes this
                                 file after the engine's struct) */

#ifndef QUAY_ENGINE_MSG_H
#define QUAY_ENGINE_MSG_H

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
    uint8_t type;     /* a sequenced quay_pkt_type (packets.h: PK_SEQ) */
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
/** Handle a sequenced packet (packets.h: PK_SEQ) from `peer`: the
 *  on_packet of every sequenced type. */
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

/** 1 if the eager message `m` owes its sender an ACK when matched. */
static inline int msg_needs_ack(const umsg *m)
{
    return m->type == QUAY_PKT_EAGER && (m->flags & (UMF_SYNC | UMF_READY)) &&
           !(m->flags & UMF_POISON);
}

#endif /* QUAY_ENGINE_MSG_H */
