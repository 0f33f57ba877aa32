/*
 * p2p.c — point-to-point entry points: isend, irecv, persistent requests
 * (probe.c has iprobe, improbe and imrecv). Arguments are validated here; protocol work is in eager.c,
 * rndv.c, cancel.c and bsend.c. MPI rules applied here: PROC_NULL
 * completes at once, a receive that finds an unexpected message takes the
 * oldest match (match.c), otherwise it is posted with a post stamp.
 */
#include "engine/internal.h"
#include "engine/payload.h"
#include "engine/inline_fast.h"
#include "engine/match_fast.h"

/* A request that completes at once as a transfer with the null process. */
static int proc_null_req(quay_engine *e, quay_comm *c, int kind, int32_t tag,
                         quay_req **preq)
{
    quay_req *r = req_alloc(e, kind, c);
    if (r == NULL)
        return QUAY_EAGAIN;
    r->status.source = QUAY_PROC_NULL;
    r->status.tag = kind == RK_RECV ? QUAY_ANY_TAG : tag;
    r->status.count = 0;
    req_complete(e, r);
    *preq = r;
    return 0;
}

static int send_args(quay_engine *e, quay_comm *c, const void *buf, size_t len,
                     int32_t dst, int32_t tag, quay_send_mode mode,
                     quay_req **preq)
{
    if (e == NULL || preq == NULL)
        return QUAY_EINVAL;
    *preq = NULL;
    if (e->fatal)
        return e->fatal;
    if (!comm_ok(e, c) || (buf == NULL && len != 0))
        return QUAY_EINVAL;
    if ((unsigned)mode > QUAY_SEND_BUFFERED)
        return QUAY_EINVAL;
    if (tag < 0)
        return QUAY_ETAG;
    if (dst != QUAY_PROC_NULL && (dst < 0 || dst >= c->size))
        return QUAY_ERANK;
    return 0;
}

void send_envelope(quay_engine *e, quay_req *r)
{
    if (e->rtr_pool != NULL)
        rtr_envelope(e, r);
    if (r->len > e->cfg.eager_max) {
        r->flags |= RF_RNDV;
        r->rv.next_frag = 0;
        r->rv.frags_done = 0;
        r->rv.cts_total = 0;
        rndv_offer(e, r);
        req_set_state(e, r, QUAY_RS_SEND_RTS);
    } else {
        if (r->mode == QUAY_SEND_SYNC || r->mode == QUAY_SEND_READY)
            r->flags |= RF_NEED_ACK;
        req_set_state(e, r, QUAY_RS_SEND_EAGER);
    }
    txq_add(e, r);
}

void send_go(quay_engine *e, quay_req *r)
{
    r->seq = seq_assign(e, r->peer);
    if (e->rtr_pool != NULL && rtr_send(e, r))
        return; /* an RTR first in line (write, then SC) or a flag raised */
    send_envelope(e, r);
}

/* Send request r carries message (buf, len) to dst (world rank peer). */
static QUAY_ALWAYS_INLINE void send_req_message(quay_req *r, const void *buf, size_t len,
                                                int32_t dst, int32_t peer, int32_t tag,
                                                quay_send_mode mode)
{
    r->mode = (uint8_t)mode;
    r->rank = dst;
    r->tag = tag;
    r->peer = peer;
    r->u.sbuf = buf;
    r->len = len;
    r->status.source = dst;
    r->status.tag = tag;
    r->status.count = len;
}

/* Prepare send request r for message (buf, len) to dst and start it. */
static void send_start(quay_engine *e, quay_req *r, const void *buf, size_t len,
                       int32_t dst, int32_t peer, int32_t tag, quay_send_mode mode)
{
    send_req_message(r, buf, len, dst, peer, tag, mode);
    if (e->aslots != NULL && arb_must_queue(e, r))
        return; /* behind a send of the same peer in arbitration */
    send_go(e, r);
}

static inline int send_post(quay_engine *e, quay_comm *c, const void *buf, size_t len,
                            int32_t dst, int32_t tag, quay_send_mode mode, uint32_t rflags,
                            void *user, uint32_t step, quay_req **preq);
static void send_post_go(quay_engine *e, quay_req *r, const void *buf, size_t len,
                         int32_t dst, int32_t tag, quay_send_mode mode, uint32_t rflags);
static int bsend_carry(quay_engine *e, quay_comm *c, const void *buf, size_t len,
                       int32_t dst, int32_t tag, uint32_t spare);
static void bsend_done(quay_engine *e, quay_req *r, size_t len, int32_t dst, int32_t tag);

/* isend_eager's work on request r (new, or a persistent one started). */
static QUAY_ALWAYS_INLINE void send_eager_go(quay_engine *e, quay_req *r, const void *buf,
                                             size_t len, int32_t dst, int32_t tag,
                                             quay_send_mode mode, uint32_t rflags)
{
    int32_t peer = comm_world(r->comm, dst);
    r->flags = rflags | RF_ON_TXQ | (mode != QUAY_SEND_STANDARD ? RF_NEED_ACK : 0);
    send_req_message(r, buf, len, dst, peer, tag, mode);
    r->seq = e->peers[peer].tx_seq++;
    req_set_state(e, r, QUAY_RS_SEND_EAGER);
    ql_push_tail(&e->txq, &r->link);
}

/* The small-message hot path [design.md §10]: an eager-size send (not
 * buffered) to a real rank of an engine without RTRs, arbitration or
 * failed peers. Does what req_alloc + send_start + send_go +
 * send_envelope do for it, and nothing they would test and skip. */
static QUAY_ALWAYS_INLINE int isend_eager(quay_engine *e, quay_comm *c, const void *buf,
                                          size_t len, int32_t dst, int32_t tag,
                                          quay_send_mode mode, uint32_t rflags, void *user,
                                          uint32_t step, quay_req **preq)
{
    quay_req *r = req_alloc(e, RK_SEND, c);
    *preq = r;
    if (r == NULL)
        return QUAY_EAGAIN;
    r->user = user;
    r->coll_step = step;
    send_eager_go(e, r, buf, len, dst, tag, mode, rflags);
    return 0;
}

/* isend_eager's conditions beyond the arguments' validity. */
static inline int send_short_ok(const quay_engine *e, size_t len, int32_t dst,
                                quay_send_mode mode)
{
    return len <= e->eager_max && e->p2p_plain && e->nfailed == 0 && dst >= 0 &&
           mode != QUAY_SEND_BUFFERED;
}

static QUAY_NOINLINE int isend_general(quay_engine *e, quay_comm *c, const void *buf,
                                       size_t len, int32_t dst, int32_t tag,
                                       quay_send_mode mode, quay_req **preq);

/* Every argument check of send_args, passed, and isend_eager's
 * conditions: one branch each, no call. */
static QUAY_ALWAYS_INLINE int isend_short_ok(const quay_engine *e, const quay_comm *c,
                                             const void *buf, size_t len, int32_t dst,
                                             int32_t tag, quay_send_mode mode,
                                             quay_req *const *preq)
{
    return preq != NULL && e->fatal == 0 && comm_ok(e, c) && (buf != NULL || len == 0) &&
           (unsigned)mode < QUAY_SEND_BUFFERED && tag >= 0 && dst < c->size &&
           send_short_ok(e, len, dst, mode);
}

/* QUAY_CFG_SEND_COPY: a standard send that the inline way takes is over
 * at the call, like a buffered one (bsend_done); any other is posted as
 * isend_eager would (the request is the same one). quay_isend of such an
 * engine comes here whole, so the default path keeps its own frame. */
static QUAY_NOINLINE int isend_copy(quay_engine *e, quay_comm *c, const void *buf, size_t len,
                                    int32_t dst, int32_t tag, quay_send_mode mode,
                                    quay_req **preq)
{
    if (!isend_short_ok(e, c, buf, len, dst, tag, mode, preq))
        return isend_general(e, c, buf, len, dst, tag, mode, preq);
    if (mode != QUAY_SEND_STANDARD || len > QUAY_INLINE_MAX)
        return isend_eager(e, c, buf, len, dst, tag, mode, 0, NULL, 0, preq);
    quay_req *r = req_alloc(e, RK_SEND, c);
    *preq = r;
    if (r == NULL)
        return QUAY_EAGAIN;
    r->coll_step = 0;
    if (inline_take(e, c, buf, len, dst, tag) == 0) {
        send_req_message(r, buf, len, dst, comm_world(c, dst), tag, QUAY_SEND_STANDARD);
        req_complete(e, r);
        return 0;
    }
    send_eager_go(e, r, buf, len, dst, tag, QUAY_SEND_STANDARD, 0);
    return 0;
}

int quay_isend(quay_engine *e, quay_comm *c, const void *buf, size_t len,
               int32_t dst, int32_t tag, quay_send_mode mode, quay_req **preq)
{
    if (e != NULL && e->send_copy)
        return isend_copy(e, c, buf, len, dst, tag, mode, preq);
    if (e != NULL && isend_short_ok(e, c, buf, len, dst, tag, mode, preq))
        return isend_eager(e, c, buf, len, dst, tag, mode, 0, NULL, 0, preq);
    return isend_general(e, c, buf, len, dst, tag, mode, preq);
}

static QUAY_NOINLINE int isend_general(quay_engine *e, quay_comm *c, const void *buf,
                                       size_t len, int32_t dst, int32_t tag,
                                       quay_send_mode mode, quay_req **preq)
{
    int rc = send_args(e, c, buf, len, dst, tag, mode, preq);
    if (rc != 0)
        return rc;
    if (dst == QUAY_PROC_NULL)
        return proc_null_req(e, c, RK_SEND, tag, preq);

    if (mode == QUAY_SEND_BUFFERED) {
        rc = bsend_carry(e, c, buf, len, dst, tag, 1);
        if (rc != 0)
            return rc;
        quay_req *r = req_alloc(e, RK_SEND, c);
        bsend_done(e, r, len, dst, tag);
        *preq = r;
        return 0;
    }

    return send_post(e, c, buf, len, dst, tag, mode, 0, NULL, 0, preq);
}

/* A buffered send's message: an internal request carries a copy from the
 * attached buffer and releases it when done. `spare` more requests must
 * be free beside it (the user's own). */
static int bsend_carry(quay_engine *e, quay_comm *c, const void *buf, size_t len,
                       int32_t dst, int32_t tag, uint32_t spare)
{
    if (e->reqs_used + 1 + spare > e->nreqs)
        return QUAY_EAGAIN;
    void *copy = bsend_alloc(e, len);
    if (copy == NULL)
        return QUAY_ENOBUFS;
    if (len != 0)
        memcpy(copy, buf, len);
    quay_req *carrier = req_alloc(e, RK_SEND, c);
    carrier->flags |= RF_INTERNAL;
    carrier->bsend_block = copy;
    send_start(e, carrier, copy, len, dst, comm_world(c, dst), tag, QUAY_SEND_STANDARD);
    return 0;
}

/* The user's request of a buffered send completes at once. */
static void bsend_done(quay_engine *e, quay_req *r, size_t len, int32_t dst, int32_t tag)
{
    r->mode = QUAY_SEND_BUFFERED;
    r->peer = comm_world(r->comm, dst);
    r->status.source = dst;
    r->status.tag = tag;
    r->status.count = len;
    req_complete(e, r);
}

int p2p_send_post(quay_engine *e, quay_comm *c, const void *buf, size_t len, int32_t dst,
                  int32_t tag, quay_send_mode mode, uint32_t rflags, void *user, uint32_t step,
                  quay_req **preq)
{
    if (send_short_ok(e, len, dst, mode))
        return isend_eager(e, c, buf, len, dst, tag, mode, rflags, user, step, preq);
    return send_post(e, c, buf, len, dst, tag, mode, rflags, user, step, preq);
}

/* The body of p2p_send_post, inlined into quay_isend (the hot path needs
 * no call with eleven arguments). */
static inline int send_post(quay_engine *e, quay_comm *c, const void *buf, size_t len,
                            int32_t dst, int32_t tag, quay_send_mode mode, uint32_t rflags,
                            void *user, uint32_t step, quay_req **preq)
{
    quay_req *r = req_alloc(e, RK_SEND, c);
    if (r == NULL)
        return QUAY_EAGAIN;
    r->user = user;
    r->coll_step = step;
    *preq = r;
    send_post_go(e, r, buf, len, dst, tag, mode, rflags);
    return 0;
}

/* send_post's work on request r (new, or a persistent one started). */
static void send_post_go(quay_engine *e, quay_req *r, const void *buf, size_t len,
                         int32_t dst, int32_t tag, quay_send_mode mode, uint32_t rflags)
{
    r->flags = rflags;
    int32_t peer = comm_world(r->comm, dst);
    if (peer_failed(e, peer)) {
        /* The peer was declared failed: nothing will reach it. */
        r->peer = peer;
        r->status.source = dst;
        r->status.tag = tag;
        r->status.error = QUAY_EPEER;
        req_complete(e, r);
        return;
    }
    send_start(e, r, buf, len, dst, peer, tag, mode);
}

/* Every argument check of a receive (irecv, recv_init), as send_args. */
static int recv_args(quay_engine *e, quay_comm *c, void *buf, size_t cap, int32_t src,
                     int32_t tag, quay_req **preq)
{
    if (e == NULL || preq == NULL)
        return QUAY_EINVAL;
    *preq = NULL;
    if (e->fatal)
        return e->fatal;
    if (!comm_ok(e, c) || (buf == NULL && cap != 0))
        return QUAY_EINVAL;
    return recv_pattern_ok(c, src, tag);
}

void p2p_deliver(quay_engine *e, quay_req *r, const umsg *env,
                 const uint8_t *data)
{
    if (r->state == QUAY_RS_RECV_RTR)
        rtr_undelegate(e, r); /* an envelope got there first */
    else if (r->state == QUAY_RS_RECV_ANY)
        arb_release(e, r); /* an envelope matched before any flag */
    r->peer = env->peer;
    r->sreq = env->sreq;
    r->msg_len = env->len;
    r->status.source = env->src;
    r->status.tag = env->tag;
    if (env->flags & UMF_POISON) {
        r->status.error = QUAY_ENOTPOSTED;
        r->status.count = 0;
        req_complete(e, r);
        return;
    }
    if (env->type == QUAY_PKT_RTS) {
        rndv_recv_matched(e, r, env);
        return;
    }
    size_t n = env->len;
    if (n > r->len) {
        n = r->len;
        r->status.error = QUAY_ETRUNCATE;
    }
    if (n != 0)
        memcpy(r->u.rbuf, data, n);
    r->status.count = n;
    if (msg_needs_ack(env))
        ctrl_push(e, QUAY_PKT_ACK, env->peer, env->sreq, 0, 0);
    req_complete(e, r);
}

static inline int recv_post(quay_engine *e, quay_comm *c, void *buf, size_t cap, int32_t src,
                            int32_t tag, uint32_t rflags, void *user, uint32_t step,
                            quay_req **preq);
static void recv_post_go(quay_engine *e, quay_comm *c, quay_req *r, umsg *m);

/* A receive request for (buf, cap) from pattern (src, tag), or NULL when
 * the pool is empty. */
static QUAY_ALWAYS_INLINE quay_req *recv_req_new(quay_engine *e, quay_comm *c, void *buf,
                                                 size_t cap, int32_t src, int32_t tag,
                                                 uint32_t rflags, void *user, uint32_t step)
{
    quay_req *r = req_alloc(e, RK_RECV, c);
    if (r == NULL)
        return NULL;
    r->flags = rflags;
    r->user = user;
    r->coll_step = step;
    r->rank = src;
    r->tag = tag;
    r->u.rbuf = buf;
    r->len = cap;
    return r;
}

/* irecv_posted's work on request r (new, or a persistent one started). */
static QUAY_ALWAYS_INLINE void recv_posted_go(quay_engine *e, quay_comm *c, quay_req *r)
{
    req_set_state(e, r, QUAY_RS_RECV_POSTED);
    if (e->m.oracle == NULL)
        match_post_one_source(e, c, r);
    else
        match_add_posted(e, r);
}

/* The small-message hot path [design.md §10]: a receive from one rank of a
 * communicator with no unexpected message, on an engine without RTRs,
 * arbitration or failed peers: posted, as recv_post would. */
static QUAY_ALWAYS_INLINE int irecv_posted(quay_engine *e, quay_comm *c, void *buf,
                                           size_t cap, int32_t src, int32_t tag,
                                           uint32_t rflags, void *user, uint32_t step,
                                           quay_req **preq)
{
    quay_req *r = recv_req_new(e, c, buf, cap, src, tag, rflags, user, step);
    *preq = r;
    if (r == NULL)
        return QUAY_EAGAIN;
    recv_posted_go(e, c, r);
    return e->fatal;
}

/* irecv_posted's conditions beyond the arguments' validity. */
static inline int recv_short_ok(const quay_engine *e, const quay_comm *c, int32_t src)
{
    return src >= 0 && c->nunexp == 0 && e->p2p_plain && e->nfailed == 0;
}

static QUAY_NOINLINE int irecv_general(quay_engine *e, quay_comm *c, void *buf, size_t cap,
                                       int32_t src, int32_t tag, quay_req **preq);

/* The other short path: an exact receive (arguments valid) on a
 * communicator with kept messages, no oracle alongside, whose message is
 * here as a plain eager one (standard mode, no credit held): taken into a
 * new request, complete at the call, as recv_post_go would take it. Else
 * the general path. */
static QUAY_NOINLINE int irecv_kept(quay_engine *e, quay_comm *c, void *buf, size_t cap,
                                    int32_t src, int32_t tag, quay_req **preq)
{
    umsg *m = match_unexp_exact(&e->m, c, src, tag);
    if (m == NULL || m->type != QUAY_PKT_EAGER || m->flags != 0)
        return irecv_general(e, c, buf, cap, src, tag, preq);
    quay_req *r = recv_req_new(e, c, buf, cap, src, tag, 0, NULL, 0);
    *preq = r;
    if (r == NULL)
        return QUAY_EAGAIN;
    match_unexp_take(c, m);
    if (e->trace_fn)
        trace_match(e, r, m, m->peer, m->seq, m->ctx, m->src, m->tag);
    p2p_deliver(e, r, m, m->data);
    umsg_put(e, m);
    return e->fatal;
}

int quay_irecv(quay_engine *e, quay_comm *c, void *buf, size_t cap,
               int32_t src, int32_t tag, quay_req **preq)
{
    /* Every argument check below, passed, and the short paths'
     * conditions: one branch each, no call. */
    if (e != NULL && preq != NULL && e->fatal == 0 && comm_ok(e, c) &&
        (buf != NULL || cap == 0) && src < c->size && (tag >= 0 || tag == QUAY_ANY_TAG)) {
        if (recv_short_ok(e, c, src))
            return irecv_posted(e, c, buf, cap, src, tag, 0, NULL, 0, preq);
        if ((src | tag) >= 0 && c->nunexp != 0 && e->m.oracle == NULL)
            return irecv_kept(e, c, buf, cap, src, tag, preq);
    }
    return irecv_general(e, c, buf, cap, src, tag, preq);
}

static QUAY_NOINLINE int irecv_general(quay_engine *e, quay_comm *c, void *buf, size_t cap,
                                       int32_t src, int32_t tag, quay_req **preq)
{
    int rc = recv_args(e, c, buf, cap, src, tag, preq);
    if (rc != 0)
        return rc;
    if (src == QUAY_PROC_NULL)
        return proc_null_req(e, c, RK_RECV, tag, preq);
    return recv_post(e, c, buf, cap, src, tag, 0, NULL, 0, preq);
}

int p2p_recv_post(quay_engine *e, quay_comm *c, void *buf, size_t cap, int32_t src,
                  int32_t tag, uint32_t rflags, void *user, uint32_t step, quay_req **preq)
{
    if (recv_short_ok(e, c, src))
        return irecv_posted(e, c, buf, cap, src, tag, rflags, user, step, preq);
    return recv_post(e, c, buf, cap, src, tag, rflags, user, step, preq);
}

/* The body of p2p_recv_post, inlined into quay_irecv. */
static inline int recv_post(quay_engine *e, quay_comm *c, void *buf, size_t cap, int32_t src,
                            int32_t tag, uint32_t rflags, void *user, uint32_t step,
                            quay_req **preq)
{
    umsg *m = c->nunexp != 0 ? match_find_unexp(e, c, src, tag) : NULL;
    if (m != NULL && msg_needs_ack(m) && !ctrl_space(e))
        return QUAY_EAGAIN;
    quay_req *r = recv_req_new(e, c, buf, cap, src, tag, rflags, user, step);
    if (r == NULL)
        return QUAY_EAGAIN;
    *preq = r;
    recv_post_go(e, c, r, m);
    return e->fatal;
}

/* recv_post's work on request r (new, or a persistent one started): deliver
 * m (its oldest unexpected match, already checked for an ACK's room), or
 * post it. */
static void recv_post_go(quay_engine *e, quay_comm *c, quay_req *r, umsg *m)
{
    int32_t src = r->rank, tag = r->tag;
    if (m != NULL) {
        match_remove_unexp(e, m);
        if (e->trace_fn)
            trace_match(e, r, m, m->peer, m->seq, m->ctx, m->src, m->tag);
        p2p_deliver(e, r, m, m->data);
        umsg_free(e, m);
    } else if (src != QUAY_ANY_SOURCE && peer_failed(e, comm_world(c, src))) {
        r->status.source = src;
        r->status.tag = tag;
        r->status.error = QUAY_EPEER; /* nothing will come from it */
        req_complete(e, r);
    } else {
        /* Receiver-initiated if allowed: RECV_RTR, or RECV_ANY. */
        if (src == QUAY_ANY_SOURCE)
            arb_post(e, r);
        else
            rtr_delegate(e, r);
        if (r->state != QUAY_RS_RECV_RTR && r->state != QUAY_RS_RECV_ANY)
            req_set_state(e, r, QUAY_RS_RECV_POSTED);
        match_add_posted(e, r);
    }
}

void req_progress(quay_engine *e, quay_req *r)
{
    /* The common case first: a standard eager send whose packet is out
     * (the tests below would reach the same verdict, the long way). */
    if (eager_send_over(r)) {
        req_complete(e, r);
        return;
    }
    if (r->state == QUAY_RS_SEND_ANY || r->state == QUAY_RS_SEND_QUEUED) {
        /* The flag's op_done changes nothing: the receiver's word does. */
        if ((r->flags & RF_FAILED) && r->nout == 0) {
            arb_detach(e, r);
            req_complete(e, r);
        }
        return;
    }
    if (r->state == QUAY_RS_SEND_PUT || r->state == QUAY_RS_SEND_WRITE ||
        r->state == QUAY_RS_RECV_GET || r->state == QUAY_RS_RECV_PUT) {
        rndv_rdma_progress(e, r);
        return;
    }
    if (r->state == QUAY_RS_DONE || r->nout != 0)
        return;
    if (r->flags & RF_FAILED) {
        req_complete(e, r);
        return;
    }
    if (r->kind == RK_RDMA) {
        rdma_progress(e, r);
        return;
    }
    if (r->kind == RK_RECV) {
        if (r->state == QUAY_RS_RECV_RNDV && r->rv.received == r->rv.accepted &&
            !(r->owe & REQ_OWES_CTS))
            req_complete(e, r);
        return;
    }
    if (r->flags & RF_CANCEL_PENDING)
        return;
    if (r->flags & RF_CANCELLED) {
        req_complete(e, r);
        return;
    }
    if (r->flags & RF_RNDV) {
        /* A NAK (ready send, nothing posted) ends it; else all data out. */
        if ((r->flags & (RF_ACKED | RF_FIN_SEEN)) ||
            ((r->flags & RF_CTS_SEEN) && r->rv.frags_done == r->rv.nfrags &&
             r->rv.cts_total != 0 && r->rv.ncts > r->rv.cts_total))
            req_complete(e, r);
        return;
    }
    if (!(r->flags & RF_WIRE_DONE))
        return;
    if ((r->flags & RF_NEED_ACK) && !(r->flags & RF_ACKED)) {
        if (r->state != QUAY_RS_SEND_WAIT_ACK)
            req_set_state(e, r, QUAY_RS_SEND_WAIT_ACK);
        return;
    }
    req_complete(e, r);
}

/* ---- persistent requests ------------------------------------------------------------ */

/* A new persistent request of kind `kind`: inactive (DONE) with MPI's
 * empty status, its arguments kept for every start. */
static quay_req *persist_new(quay_engine *e, quay_comm *c, int kind)
{
    quay_req *r = req_alloc(e, kind, c);
    if (r == NULL)
        return NULL;
    r->flags = RF_PERSIST;
    r->status.source = QUAY_ANY_SOURCE;
    r->status.tag = QUAY_ANY_TAG;
    req_set_state(e, r, QUAY_RS_DONE);
    return r;
}

int quay_send_init(quay_engine *e, quay_comm *c, const void *buf, size_t len,
                   int32_t dst, int32_t tag, quay_send_mode mode, quay_req **preq)
{
    int rc = send_args(e, c, buf, len, dst, tag, mode, preq);
    if (rc != 0)
        return rc;
    quay_req *r = persist_new(e, c, RK_SEND);
    if (r == NULL)
        return QUAY_EAGAIN;
    r->mode = (uint8_t)mode;
    r->rank = dst;
    r->tag = tag;
    r->u.sbuf = buf;
    r->len = len;
    *preq = r;
    return 0;
}

int quay_recv_init(quay_engine *e, quay_comm *c, void *buf, size_t cap, int32_t src,
                   int32_t tag, quay_req **preq)
{
    int rc = recv_args(e, c, buf, cap, src, tag, preq);
    if (rc != 0)
        return rc;
    quay_req *r = persist_new(e, c, RK_RECV);
    if (r == NULL)
        return QUAY_EAGAIN;
    r->rank = src;
    r->tag = tag;
    r->u.rbuf = buf;
    r->len = cap;
    *preq = r;
    return 0;
}

/* Past every check of a start: a new round of persistent request r. A
 * COMPLETE action of the last round not yet pulled is withdrawn. */
static QUAY_ALWAYS_INLINE void persist_round(quay_engine *e, quay_req *r)
{
    if (r->flags & RF_ON_CQ)
        ql_remove(&r->clink);
    req_renew(e, r);
    r->flags = RF_PERSIST;
}

static int start_send(quay_engine *e, quay_req *r)
{
    const uint8_t *buf = r->u.sbuf;
    size_t len = r->len;
    int32_t dst = r->rank, tag = r->tag;
    quay_send_mode mode = (quay_send_mode)r->mode;
    if (dst == QUAY_PROC_NULL) {
        persist_round(e, r);
        r->status.source = QUAY_PROC_NULL;
        r->status.tag = tag;
        req_complete(e, r);
        return 0;
    }
    if (mode == QUAY_SEND_BUFFERED) {
        int rc = bsend_carry(e, r->comm, buf, len, dst, tag, 0);
        if (rc != 0)
            return rc;
        persist_round(e, r);
        bsend_done(e, r, len, dst, tag);
        return 0;
    }
    persist_round(e, r);
    if (send_short_ok(e, len, dst, mode))
        send_eager_go(e, r, buf, len, dst, tag, mode, RF_PERSIST);
    else
        send_post_go(e, r, buf, len, dst, tag, mode, RF_PERSIST);
    return e->fatal;
}

static int start_recv(quay_engine *e, quay_req *r)
{
    quay_comm *c = r->comm;
    int32_t src = r->rank, tag = r->tag;
    if (src == QUAY_PROC_NULL) {
        persist_round(e, r);
        r->status.source = QUAY_PROC_NULL;
        r->status.tag = QUAY_ANY_TAG;
        req_complete(e, r);
        return 0;
    }
    if (recv_short_ok(e, c, src)) {
        persist_round(e, r);
        recv_posted_go(e, c, r);
        return e->fatal;
    }
    umsg *m = c->nunexp != 0 ? match_find_unexp(e, c, src, tag) : NULL;
    if (m != NULL && msg_needs_ack(m) && !ctrl_space(e))
        return QUAY_EAGAIN;
    persist_round(e, r);
    recv_post_go(e, c, r, m);
    return e->fatal;
}

static QUAY_NOINLINE int start_general(quay_engine *e, quay_req *r)
{
    if (e == NULL || !req_valid_ptr(e, r) || (r->flags & (RF_PERSIST | RF_USER_FREED)) !=
                                                 RF_PERSIST)
        return QUAY_EINVAL;
    if (e->fatal)
        return e->fatal;
    if (r->state != QUAY_RS_DONE)
        return QUAY_ESTATE; /* active */
    if (r->nout != 0)
        return QUAY_EAGAIN; /* (defensive: a round completes only when its
                               packets are done) */
    return r->kind == RK_SEND ? start_send(e, r) : start_recv(e, r);
}

/* quay_start's fast path for a receive: the engine's side (healthy, no
 * RTRs or arbitration, no failed peer) ... */
static QUAY_ALWAYS_INLINE int start_engine_ok(const quay_engine *e)
{
    return e->fatal == 0 && e->p2p_plain && e->nfailed == 0;
}

/* ... and the request's (an inactive persistent receive from one source
 * of a communicator with no unexpected message). */
static QUAY_ALWAYS_INLINE int start_recv_fast_ok(const quay_engine *e, const quay_req *r)
{
    /* (a handle of the pool whose state is DONE is live: req_valid_ptr's
     * test of FREE is implied) */
    return pool_slot(e->reqs, e->nreqs, sizeof *r, r) && r->state == QUAY_RS_DONE &&
           r->kind == RK_RECV &&
           (r->flags & (RF_PERSIST | RF_USER_FREED | RF_ON_CQ)) == RF_PERSIST && r->nout == 0 &&
           r->rank >= 0 && r->comm->nunexp == 0;
}

int quay_start(quay_engine *e, quay_req *r)
{
    /* The small-message hot path [design.md §10]: an inactive persistent
     * receive that irecv_posted would post (every check of start_general,
     * passed, and recv_short_ok's). */
    if (e != NULL && start_recv_fast_ok(e, r) && start_engine_ok(e)) {
        req_renew(e, r);
        r->flags = RF_PERSIST;
        recv_posted_go(e, r->comm, r);
        return e->fatal;
    }
    return start_general(e, r);
}

/* quay_startall posts in its own loop only without the oracle (the
 * oracle's engines post through match.c, to keep it in lockstep). */
static int startall_plain(const quay_engine *e)
{
    return start_engine_ok(e) && e->m.oracle == NULL;
}

int quay_startall(quay_engine *e, size_t count, quay_req *const reqs[], size_t *pstarted)
{
    if (pstarted != NULL)
        *pstarted = 0;
    if (e == NULL || (count != 0 && reqs == NULL))
        return QUAY_EINVAL;
    /* Receives of one pattern in a row (a window of them, as a stream
     * posts) share a posted bin: its hash is made once. */
    const quay_comm *bc = NULL;
    int32_t bsrc = 0, btag = 0;
    qlink *bin = NULL;
    size_t i = 0;
    int rc = 0;
    while (i < count) {
        /* a run of receives this loop posts itself ... */
        for (int plain = startall_plain(e); plain && i < count; i++) {
            quay_req *r = reqs[i];
            if (!start_recv_fast_ok(e, r))
                break;
            quay_comm *c = r->comm;
            req_renew_to_post(e, r); /* (match_post_in_bin: link, stamp) */
            r->flags = RF_PERSIST;
            req_set_state(e, r, QUAY_RS_RECV_POSTED);
            if (c != bc || r->rank != bsrc || r->tag != btag) {
                bc = c;
                bsrc = r->rank;
                btag = r->tag;
                bin = match_posted_bin(&e->m, c, bsrc, btag);
            }
            match_post_in_bin(e, c, r, bin);
        }
        /* ... then one started as quay_start would */
        if (i == count || (rc = quay_start(e, reqs[i])) != 0)
            break;
        i++;
    }
    if (pstarted != NULL)
        *pstarted = i;
    return rc != 0 ? rc : e->fatal;
}
