/*
 * request.h — requests (request.c): the pool, ids, kinds and flags, the
 * request object with every protocol's fields, and the life cycle every
 * protocol drives (alloc, state, progress, complete, release).
 */
#include "engine/internal.h" /* (outside the guard: internal.h includes this
                                 file after the engine's struct) */

#ifndef QUAY_ENGINE_REQUEST_H
#define QUAY_ENGINE_REQUEST_H

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

/* Request flags. The packets a request owes are its owe bits instead
 * (REQ_OWES_*, packets.h), but for CANCEL_WANTED, which the eager paths
 * read with the other flags. */
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
    RF_CTS_SEEN = 1u << 10,    /* send rndv: first CTS processed */
    RF_INTERNAL = 1u << 11,    /* engine-owned (buffered send carrier) */
    RF_RNDV = 1u << 12,        /* send: uses rendezvous */
    RF_FAILED = 1u << 13,      /* transport reported failure of an action */
    RF_GET_OFFER = 1u << 14,   /* send rndv: RTS carries our key (lkey) */
    RF_PUT_OFFER = 1u << 15,   /* send rndv: RTS says we can write to a key */
    RF_FIN_OWED = 1u << 16,    /* recv GET: holds a control slot for its FIN */
    RF_FIN_SEEN = 1u << 17,    /* FIN received (send GET, recv PUT) */
    RF_ON_RDMAQ = 1u << 18,    /* on e->rdmaq: RDMA actions to issue */
    RF_FIN_SENT = 1u << 19,    /* send PUT: FIN emitted */
    RF_RTR_SENT = 1u << 20,    /* recv RTR: the RTR went out (the sender may
                                  hold it: a revoke or cancel must follow) */
    RF_RTR_TAKEN = 1u << 21,   /* recv RTR: a cancel's verdict says the sender
                                  took the RTR: its SC is on its way */
    RF_ANY_CLAIMED = 1u << 22, /* recv ANY: matched by r->peer's flag for its
                                  send r->sreq (not posted any more): RTR_ANY
                                  given, awaiting the data and SC */
    RF_ANY_CANCEL = 1u << 23,  /* send ANY: cancelled while its flag is out:
                                  cancelled if declined, fails if claimed */
    RF_COLL = 1u << 24,        /* engine-owned step of a collective schedule:
                                  completion goes to coll_hooks.on_req_done, then it is
                                  released (src/collectives/sched.c) */
    RF_PERSIST = 1u << 25,     /* persistent (quay_send_init / recv_init):
                                  DONE means inactive; quay_start renews it */
};
#define RF_ALL_FLAGS ((1u << 26) - 1u)

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
    uint32_t owe;       /* REQ_OWES_* (packets.h): packets r must send */
    uint32_t coll_step; /* RF_COLL: its step in the schedule (user) */
    /* Everything an eager message reads is above (three cache lines);
     * below, what one protocol keeps, by kind: a reused slot keeps the
     * last protocol's values, so a protocol sets its part when it starts. */
    union {
        struct {                /* rendezvous: sends and receives (RF_RNDV,
                                   RECV_RNDV and the RDMA states) */
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
            uint64_t rkey;      /* RDMA rendezvous: the peer's key */
        } rv;
        struct {                /* one-sided (RK_RDMA) */
            uint64_t rkey;      /* the peer's region */
            uint64_t roff;      /* offset in it */
            uint64_t operand;   /* atomic: the operand */
            uint64_t compare;   /* atomic: compare-and-swap's comparand */
        } os;
    };
    void *bsend_block;  /* internal buffered-send carrier: its block */
} quay_req;
/* A power of two: a request pointer's check (pool_slot) is one AND. */
_Static_assert((sizeof(quay_req) & (sizeof(quay_req) - 1)) == 0,
               "quay_req's size is a power of two");

static inline void req_set_state(quay_engine *e, quay_req *r, int to)
{
    if (e->trace_fn)
        trace_state(e, r, to);
    r->state = (uint8_t)to;
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
    r->owe = 0;
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
 *  train, train.c). */
static QUAY_ALWAYS_INLINE void req_complete_untraced(quay_engine *e, quay_req *r)
{
    r->state = QUAY_RS_DONE;
    req_complete_done(e, r);
}
/** Request for a wire id (index + generation), or NULL if stale/forged. */
quay_req *req_by_id(quay_engine *e, uint32_t id);
/** r is a live request of e's pool (a handle from the user, checked on
 *  every call that takes one). */
static inline int req_valid_ptr(const quay_engine *e, const quay_req *r)
{
    return pool_slot(e->reqs, e->nreqs, sizeof *r, r) && r->state != QUAY_RS_FREE;
}
void txq_add(quay_engine *e, quay_req *r);

/** Check whether a send or receive has finished and complete it. */
void req_progress(quay_engine *e, quay_req *r);
/** Build request r's next packet into o; 1 if r has more to emit. Each
 *  packet is built by its protocol's emitter (env_emit, rndv_emit_cts,
 *  rndv_emit_data, rndv_emit_fin, rtr_emit_sc, cancel_emit_req,
 *  arb_emit_flag), which encodes its header and marks r. */
int req_emit(quay_req *r, qout *o);

#endif /* QUAY_ENGINE_REQUEST_H */
