/*
 * out.h — outgoing descriptors, the control ring, the action queue and
 * op_done (out.c), inline sends' packets (inline.c; their trains: train.h),
 * one-sided actions (rdma.c).
 */
#include "engine/internal.h" /* (outside the guard: internal.h includes this
                                 file after the engine's struct) */

#ifndef QUAY_ENGINE_OUT_H
#define QUAY_ENGINE_OUT_H

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
    /* quay_send_inline's train (train.h): the pieces coalesced behind
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

/* Encode h (wire_encode) as o's packet. */
static inline void out_encode(qout *o, const wire_hdr *h)
{
    o->pkt = h->type;
    o->hdr_len = (uint16_t)wire_encode(h, OUT_HDR(o));
}

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

/* ---- one-sided transfers (rdma.c) ------------------------------------------ */
/** Build r's RDMA action into o. */
void rdma_emit(quay_req *r, qout *o);
/** Fill the RDMA action of o. */
void rdma_fill(quay_engine *e, qout *o, quay_action *a);
/** Complete r once its action is done. */
void rdma_progress(quay_engine *e, quay_req *r);
/** The op_done of r's RDMA action (before rdma_progress). */
int rdma_on_done(quay_engine *e, quay_req *r, int status);

#endif /* QUAY_ENGINE_OUT_H */
