/*
 * msg.h — message descriptors (unexpected, held, orphaned, taken); their
 * pool and per-peer sequencing are seq.h's, the matcher's facade match.h.
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

/** 1 if the eager message `m` owes its sender an ACK when matched. */
static inline int msg_needs_ack(const umsg *m)
{
    return m->type == QUAY_PKT_EAGER && (m->flags & (UMF_SYNC | UMF_READY)) &&
           !(m->flags & UMF_POISON);
}

#endif /* QUAY_ENGINE_MSG_H */
