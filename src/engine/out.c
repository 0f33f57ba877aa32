/*
 * out.c — output: outgoing descriptors, the control ring, the action queue
 * (quay_next_action) and quay_on_op_done.
 *
 * Packets are built lazily, when the adapter pulls: a request with
 * something to send sits on e->txq and its next packet is encoded into a
 * free outgoing descriptor (engine-owned header + a slice of user memory).
 * The descriptor lives until quay_on_op_done(token); its generation is in
 * the token, so a stale or forged token is rejected. Control replies (ACK,
 * CANCEL_REP) wait in a bounded ring as plain data. SENDs to this engine's
 * own rank never leave: they are fed back through the packet path in FIFO
 * order (loopback), so self-sends run the same protocols.
 */
#include "engine/internal.h"

int out_init(quay_engine *e)
{
    e->nouts = e->cfg.max_out;
    e->outs = qalloc(e, (size_t)e->nouts * sizeof *e->outs);
    uint32_t cap = 1;
    while (cap < e->cfg.max_ctrl)
        cap <<= 1;
    e->ctrl = qalloc(e, (size_t)cap * sizeof *e->ctrl);
    if (e->outs == NULL || e->ctrl == NULL)
        return QUAY_ENOMEM;
    memset(e->outs, 0, (size_t)e->nouts * sizeof *e->outs);
    for (uint32_t i = e->nouts; i-- > 0;) {
        e->outs[i].next = e->out_free;
        e->out_free = &e->outs[i];
    }
    e->ctrl_cap = e->cfg.max_ctrl;
    e->ctrl_mask = cap - 1;
    /* Data holds descriptors until the peer acknowledges it; if data could
     * take them all, two peers could each wait for an ACK the other has
     * no descriptor to send. */
    e->outs_reserved = e->flow ? 1 : 0;
    return 0;
}

void out_fini(quay_engine *e)
{
    qfree(e, e->outs);
    qfree(e, e->ctrl);
    e->outs = NULL;
    e->ctrl = NULL;
}

/* ---- control ring ------------------------------------------------------------------ */

ctrl_item *ctrl_push(quay_engine *e, uint8_t pkt, int32_t peer, uint32_t sreq,
                     int32_t status, uint32_t rreq)
{
    uint32_t i = (e->ctrl_head + e->ctrl_count) & e->ctrl_mask;
    e->ctrl[i] = (ctrl_item){pkt, peer, sreq, status, rreq, 0};
    e->ctrl_count++;
    return &e->ctrl[i];
}

int ctrl_reserve(quay_engine *e)
{
    if (e->ctrl_reserved >= e->ctrl_cap / 2 || !ctrl_space(e))
        return 0;
    e->ctrl_reserved++;
    return 1;
}

static ctrl_item ctrl_pop(quay_engine *e)
{
    ctrl_item it = e->ctrl[e->ctrl_head];
    e->ctrl_head = (e->ctrl_head + 1) & e->ctrl_mask;
    e->ctrl_count--;
    return it;
}

/* Schedules wait for a request and a control slot (sched.c): both free? */
static int coll_unblockable(const quay_engine *e)
{
    return !ql_empty(&e->coll.blocked) && e->req_free != NULL && ctrl_space(e);
}

/* ---- descriptors ------------------------------------------------------------------- */

qout *out_alloc(quay_engine *e)
{
    return out_take(e);
}

void out_release(quay_engine *e, qout *o, int status)
{
    quay_req *r = o->req;
    uint8_t pkt = o->pkt;
    out_put(e, o);
    if (r == NULL)
        return;
    r->nout--;
    if (pkt >= QOUT_RDMA_PUT) /* an RDMA action: one-sided, or a fragment */
        status = r->kind == RK_RDMA ? rdma_on_done(e, r, status)
                                    : rndv_rdma_on_done(e, r, status);
    else if (pkt_info(pkt)->on_sent != NULL)
        status = pkt_info(pkt)->on_sent(e, r, status);
    if (status < 0) {
        r->flags |= RF_FAILED | RF_WIRE_DONE;
        if (r->status.error == 0)
            r->status.error = quay_err_is_fatal(status) ? QUAY_EPEER : status;
    }
    req_progress(e, r);
}

int out_on_op_done(quay_engine *e, uint64_t token, int status)
{
    if (e->fatal)
        return e->fatal;
    uint32_t idx = (uint32_t)token & OUT_TOKEN_IDX_MASK;
    if (idx >= e->nouts)
        return QUAY_ESTATE;
    qout *o = &e->outs[idx];
    if (!o->in_use || o->gen != (uint32_t)(token >> 32) || o->peer == e->rank)
        return QUAY_ESTATE;
    if (o->framed) {
        if (o->refs == 0)
            return QUAY_ESTATE; /* more op_dones than transmissions */
        e->link->on_op_done(e, o, status);
    } else if (o->req == NULL && o->pkt == QUAY_PKT_EAGER) {
        inline_out_put(e, o); /* an inline send's: nothing waits on it */
    } else if (o->pkt == QUAY_PKT_EAGER && status >= 0 && o->req != NULL) {
        /* The hot path [design.md §10]: out_release + req_progress for an
         * eager send's packet, req_progress's common case first. */
        quay_req *r = o->req;
        out_put(e, o);
        r->nout--;
        r->flags |= RF_WIRE_DONE;
        if (eager_send_over(r))
            req_complete(e, r);
        else
            req_progress(e, r);
    } else {
        out_release(e, o, status);
    }
    return e->fatal;
}

/* ---- building packets ----------------------------------------------------------------- */

/* r has a packet to send (its lines in packets.h: QUAY_REQ_SENDS). */
#define SEND_DUE(name, due, number, emit) || due(r)
static inline int req_has_work(const quay_req *r)
{
    return 0 QUAY_REQ_SENDS(SEND_DUE);
}
#undef SEND_DUE

/* With RTRs, numbers are assigned before packets can go (an SC waits for
 * its write): 1 if r's next packet is unnumbered or carries the lowest
 * number not yet sent to its peer. Sending a later one first could leave
 * it holding the last descriptor while the receiver, missing the earlier
 * one, never acknowledges it. */
static int seq_in_turn(const quay_engine *e, const quay_req *r, int64_t seq)
{
    const peer_state *ps = &e->peers[r->peer];
    return seq < 0 || (uint32_t)seq == ps->tx_seq - ps->tx_unsent;
}

#define SEND_TURN(name, due, number, emit)                                                    \
    if (due(r))                                                                               \
        return seq_in_turn(e, r, number(r));
static int req_in_seq_turn(const quay_engine *e, const quay_req *r)
{
    QUAY_REQ_SENDS(SEND_TURN)
    return 1;
}
#undef SEND_TURN

/* r's next packet into o, built by the protocol that owns it (its
 * emitter encodes the header and sets o's type, number and payload); 1 if
 * r has more to emit. Called only when req_has_work(r). */
#define SEND_EMIT(name, due, number, emit)                                                    \
    if (due(r))                                                                               \
        emit(r, o);                                                                           \
    else
int req_emit(quay_req *r, qout *o)
{
    o->peer = r->peer;
    o->req = r;
    r->nout++;
    QUAY_REQ_SENDS(SEND_EMIT) { }
    return req_has_work(r);
}
#undef SEND_EMIT

/* A control reply: its fields as the header of its type (packets.h:
 * PK_CTRL). */
static void ctrl_emit(const ctrl_item *it, qout *o)
{
    wire_hdr h;
    memset(&h, 0, sizeof h);
    h.type = it->pkt;
    h.flags = it->flags;
    h.sreq = it->sreq;
    h.rreq = it->rreq;
    h.status = it->status;
    o->peer = it->peer;
    out_encode(o, &h);
}

/* ---- loopback ---------------------------------------------------------------------------- */

static void loop_push(quay_engine *e, qout *o)
{
    o->next = NULL;
    if (e->loop_tail != NULL)
        e->loop_tail->next = o;
    else
        e->loop_head = o;
    e->loop_tail = o;
}

/* Feed queued self-packets back in order; stop at one that must wait. */
static void loop_run(quay_engine *e)
{
    qout *o;
    while ((o = e->loop_head) != NULL) {
        int rc = engine_recv(e, e->rank, OUT_HDR(o), o->hdr_len + o->payload_len,
                             o->payload);
        if (rc == QUAY_EAGAIN)
            return;
        e->loop_head = o->next;
        if (e->loop_head == NULL)
            e->loop_tail = NULL;
        if (rc == 0) {
            e->st.pkts_in++;
            if (e->trace_fn)
                trace_pkt(e, QUAY_TR_PKT_IN, o->pkt, e->rank, 0, o->seq, 0);
        } else {
            e->st.pkts_rejected++; /* our own packet: a quay bug */
            if (!e->fatal)
                e->fatal = QUAY_EINTERNAL;
        }
        out_release(e, o, 0);
    }
}

/* ---- the action queue -------------------------------------------------------------------- */

/* r has no packet left to emit; a PUT sender whose CANCEL_REQ kept it
 * here goes on writing. */
static void txq_leave(quay_engine *e, quay_req *r)
{
    r->flags &= ~(uint32_t)RF_ON_TXQ;
    if (r->state == QUAY_RS_SEND_PUT && r->rv.next_frag < r->rv.nfrags && !(r->flags & RF_FAILED))
        rdmaq_add(e, r);
}

static inline void fill_send(quay_engine *e, qout *o, quay_action *a);

void out_fill_send(quay_engine *e, qout *o, quay_action *a)
{
    fill_send(e, o, a);
}

static inline void fill_send(quay_engine *e, qout *o, quay_action *a)
{
    a->kind = QUAY_ACT_SEND;
    a->peer = o->peer;
    a->token = out_token(e, o);
    a->nmulti = 0;
    if (o->framed) {
        a->iov[0].base = o->hdr;
        a->iov[0].len = (size_t)CHAN_FRAME_LEN + o->hdr_len;
    } else {
        a->iov[0].base = OUT_HDR(o);
        a->iov[0].len = o->hdr_len;
    }
    a->iovcnt = 1;
    if (o->payload_len != 0) {
        a->iov[1].base = o->payload;
        a->iov[1].len = o->payload_len;
        a->iovcnt = 2;
    }
    a->req = NULL;
    a->user = NULL;
}

/* A packet was built into o: hand it to the adapter (1, *a filled) or,
 * addressed to ourselves, queue it for loopback (0). */
static int hand_out(quay_engine *e, qout *o, quay_action *a)
{
    e->st.pkts_out++;
    if (e->trace_fn)
        trace_pkt(e, QUAY_TR_PKT_OUT, o->pkt, o->peer, o->req ? o->req->id : 0,
                  o->seq, 0);
    if (o->peer == e->rank) {
        loop_push(e, o);
        return 0;
    }
    if (e->flow) {
        e->link->submit(e, o); /* the link sends it when its turn comes */
        return 0;
    }
    fill_send(e, o, a);
    return 1;
}

/* The sources of work point-to-point eager traffic never uses, ready to
 * give an action now ... */
static int rare_ready(const quay_engine *e)
{
    return e->ndrain_blocked != 0 || coll_has_ready(&e->coll) || coll_unblockable(e) ||
           e->coll.nemit != 0 || e->rtrq_count != 0 ||
           (!e->quiesced && !ql_empty(&e->rdmaq)) || (e->flow && e->link->has_work(e));
}

/* ... or holding anything at all, ready or not (e->rare stays set while
 * they do: a blocked schedule becomes ready when a request is freed). */
static int rare_pending(const quay_engine *e)
{
    return e->flow || e->ndrain_blocked != 0 || coll_has_ready(&e->coll) ||
           !ql_empty(&e->coll.blocked) || e->coll.nemit != 0 ||
           e->rtrq_count != 0 || !ql_empty(&e->rdmaq);
}

int out_rare_ready(const quay_engine *e)
{
    return rare_ready(e);
}

/* Build r's next packet (r just left the txq) into a new descriptor: r
 * goes back to the txq's tail if it has more to send. Keeps the count of
 * numbered packets not yet sent per peer (RTR ordering). */
static qout *txq_emit(quay_engine *e, quay_req *r)
{
    qout *o = out_alloc(e);
    if (req_emit(r, o))
        ql_push_tail(&e->txq, &r->link); /* round-robin */
    else
        txq_leave(e, r);
    if (e->rtr_pool != NULL && pkt_is(o->pkt, PK_SEQ))
        e->peers[o->peer].tx_unsent--; /* a numbered packet left */
    return o;
}

/* An eager send at the head of the txq that carries `payload` too, in
 * its turn, with a descriptor free: the next destination of a multi-send. */
static quay_req *multi_next(quay_engine *e, const qout *o)
{
    qlink *n = ql_first(&e->txq);
    if (n == NULL || !out_avail(e))
        return NULL;
    quay_req *r = QUAY_CONTAINER_OF(n, quay_req, link);
    if (r->kind != RK_SEND || (r->flags & (RF_ENV_SENT | RF_RNDV | RF_CANCEL_WANTED)) ||
        r->state != QUAY_RS_SEND_EAGER || r->u.sbuf != o->payload ||
        r->len != o->payload_len || r->peer == e->rank ||
        (e->rtr_pool != NULL && !req_in_seq_turn(e, r)))
        return NULL;
    return r;
}

/* The SEND in *a (descriptor o) goes out; eager sends of the same payload
 * queued right behind it join it as one SEND_MULTI [NIC ch. 2]: a
 * broadcast tree's copies to its children leave as one descriptor. */
static void multi_send(quay_engine *e, const qout *o, quay_action *a)
{
    if (e->flow || o->payload_len == 0)
        return;
    quay_req *r;
    while (a->nmulti < QUAY_MULTI_MAX && (r = multi_next(e, o)) != NULL) {
        ql_remove(&r->link);
        qout *m = txq_emit(e, r);
        e->st.pkts_out++;
        if (e->trace_fn)
            trace_pkt(e, QUAY_TR_PKT_OUT, m->pkt, m->peer, r->id, m->seq, 0);
        a->multi[a->nmulti].peer = m->peer;
        a->multi[a->nmulti].token = out_token(e, m);
        a->multi[a->nmulti].hdr.base = OUT_HDR(m);
        a->multi[a->nmulti].hdr.len = m->hdr_len;
        a->nmulti++;
        a->kind = QUAY_ACT_SEND_MULTI;
    }
}

static inline int eager_req_ok(const quay_engine *e, const quay_req *r);
static QUAY_NOINLINE int eager_emit(quay_engine *e, quay_req *r, quay_action *a);

/* The first request on the txq that may build a packet now. A self-packet
 * waiting in the loopback keeps its descriptor; more would only queue
 * behind it, each holding one, until none were left for packets to other
 * ranks, which may be what unblocks it (fuzz_sim: self-sends behind a
 * claimed wildcard receive took every descriptor, so the RTR_ANY that
 * completes the claim never left). So self requests wait in place while
 * the loopback is blocked: skipped, not rotated, their order is their
 * sequence order. */
static qlink *txq_first(quay_engine *e)
{
    qlink *n = ql_first(&e->txq);
    if (e->loop_head == NULL)
        return n;
    for (; n != NULL; n = ql_next(&e->txq, n))
        if (QUAY_CONTAINER_OF(n, quay_req, link)->peer != e->rank)
            return n;
    return NULL;
}

static QUAY_NOINLINE int inq_pull(quay_engine *e, quay_action *a);

/* out_next_action with something to do. */
static QUAY_NOINLINE int out_pull(quay_engine *e, quay_action *a)
{
    if (e->rare) {
        if (e->ndrain_blocked)
            seq_retry_blocked(e);
        if (coll_unblockable(e) || coll_due(e))
            e->coll.hooks->progress(e); /* (it takes the unblocked back) */
    }
    const quay_req *first_waiting = NULL; /* txq: first one not in turn */
    int txq_waits = 0;                    /* ... met again: the rest wait */
    for (;;) {
        if (e->loop_head != NULL)
            loop_run(e);
        /* The collectives' progress (above, or after a loopback arrival)
         * may have queued an inline packet, a step taken by copy: it goes
         * first, as in out_next_action. */
        if (e->inq_head != NULL)
            return inq_pull(e, a);
        if (e->flow && e->link->pull(e, a))
            return 1;
        if (out_avail(e) && e->ctrl_count != 0) {
            ctrl_item it = ctrl_pop(e);
            qout *o = out_alloc(e);
            ctrl_emit(&it, o);
            if (hand_out(e, o, a))
                return 1;
            continue;
        }
        if (e->rtrq_count != 0 && out_avail(e) &&
            e->peers[e->rtrq[e->rtrq_head].peer].tx_unsent == 0) {
            qout *o = out_alloc(e);
            if (!rtrq_emit(e, o)) {
                out_put(e, o); /* moot: its receive was matched meanwhile */
                continue;
            }
            if (hand_out(e, o, a))
                return 1;
            continue;
        }
        qlink *n;
        if (e->rare && !e->quiesced && out_avail(e) && (n = ql_first(&e->rdmaq)) != NULL) {
            /* An RDMA action (one-sided, or a rendezvous fragment);
             * quiesce holds them (C1). */
            quay_req *r = QUAY_CONTAINER_OF(n, quay_req, link);
            ql_remove(&r->link);
            r->flags &= ~(uint32_t)RF_ON_RDMAQ;
            if (r->flags & RF_FAILED)
                continue; /* a fragment failed: issue no more */
            qout *o = out_alloc(e);
            if (r->kind == RK_RDMA)
                rdma_emit(r, o);
            else if (rndv_rdma_emit(e, r, o))
                rdmaq_add(e, r); /* round-robin with other transfers */
            e->st.pkts_out++;
            rdma_fill(e, o, a);
            return 1;
        }
        if (!txq_waits && out_avail(e) && (n = txq_first(e)) != NULL) {
            quay_req *r = QUAY_CONTAINER_OF(n, quay_req, link);
            ql_remove(&r->link);
            if (!req_has_work(r)) {
                txq_leave(e, r);
                continue;
            }
            if (e->rtr_pool != NULL && !req_in_seq_turn(e, r)) {
                /* Not its turn: try the others once round. */
                ql_push_tail(&e->txq, &r->link);
                if (r == first_waiting)
                    txq_waits = 1;
                else if (first_waiting == NULL)
                    first_waiting = r;
                continue;
            }
            first_waiting = NULL; /* a number left: turns move on */
            if (e->tx_plain && e->loop_head == NULL && eager_req_ok(e, r))
                return eager_emit(e, r, a); /* the short way, as out_next_action's */
            qout *o = txq_emit(e, r);
            if (hand_out(e, o, a)) {
                if (a->kind == QUAY_ACT_SEND && (e->cfg.transport_caps & QUAY_CAP_MULTI_SEND))
                    multi_send(e, o, a);
                return 1;
            }
            continue;
        }
        if (e->coll.nemit != 0 && e->coll.hooks->pull(e, a))
            return 1;
        if ((n = ql_first(&e->cq)) != NULL) {
            quay_req *r = QUAY_CONTAINER_OF(n, quay_req, clink);
            ql_remove(&r->clink);
            r->flags &= ~(uint32_t)RF_ON_CQ;
            /* The fields COMPLETE has, not the whole (large) action. */
            a->kind = QUAY_ACT_COMPLETE;
            a->peer = 0;
            a->token = 0;
            a->iovcnt = 0;
            a->req = r;
            a->user = r->user;
            return 1;
        }
        return e->fatal;
    }
}

/* The small-message hot path [design.md §10]: r, first on the txq, is an
 * eager send to another rank whose envelope has not left, and nothing
 * out_pull looks at before the txq has work (no rare source, control
 * reply or loopback packet; a descriptor free; tx_plain). Emits what
 * txq_emit + hand_out would, without their general tests. */
static inline int eager_req_ok(const quay_engine *e, const quay_req *r)
{
    return r->state == QUAY_RS_SEND_EAGER && !(r->flags & (RF_ENV_SENT | RF_CANCEL_WANTED)) &&
           r->peer != e->rank;
}

static inline int eager_pull_ok(const quay_engine *e, const quay_req *r)
{
    return e->tx_plain && !e->rare && e->ctrl_count == 0 && e->loop_head == NULL &&
           e->out_free != NULL && eager_req_ok(e, r);
}

/* Emit r's EAGER packet into *a; r has left the txq. */
static QUAY_NOINLINE int eager_emit(quay_engine *e, quay_req *r, quay_action *a)
{
    r->flags = (r->flags | RF_ENV_SENT) & ~(uint32_t)RF_ON_TXQ;
    r->nout++;
    qout *o = out_take(e);
    o->peer = r->peer;
    o->req = r;
    o->pkt = QUAY_PKT_EAGER;
    o->seq = r->seq;
    o->hdr_len = (uint16_t)env_encode(OUT_HDR(o), QUAY_PKT_EAGER, send_wire_flags(r), r->seq,
                                      r->ctx, r->comm->myrank, r->tag, r->id, r->len);
    o->payload = r->u.sbuf;
    o->payload_len = r->len;
    e->st.pkts_out++;
    if (e->trace_fn)
        trace_pkt(e, QUAY_TR_PKT_OUT, QUAY_PKT_EAGER, o->peer, r->id, o->seq, 0);
    fill_send(e, o, a);
    return 1;
}

static int eager_pull(quay_engine *e, quay_req *r, quay_action *a)
{
    ql_remove(&r->link);
    return eager_emit(e, r, a);
}

/* out_next_action with nothing on the txq, the control ring, the
 * loopback or the completion queue, but a rare source marked. */
static QUAY_NOINLINE int rare_pull(quay_engine *e, quay_action *a)
{
    if (rare_ready(e))
        return out_pull(e, a);
    if (!rare_pending(e))
        e->rare = 0;
    return 0;
}

/* One PKT_OUT per message of an inline packet, a train's included. */
static QUAY_NOINLINE void trace_inline_packet(quay_engine *e, const qout *o)
{
    uint32_t ctx = env_ctx(OUT_HDR(o)); /* (a train is on one communicator) */
    for (uint32_t seq = o->seq; seq != o->train_next; seq++)
        trace_inline_out(e, o->peer, seq, ctx);
}

/* The oldest quay_send_inline packet (inline.c), header and payload in
 * one piece: queued only while the txq was empty, so it goes first. */
static QUAY_NOINLINE int inq_pull(quay_engine *e, quay_action *a)
{
    qout *o = e->inq_head;
    e->inq_head = o->next;
    if (e->inq_head == NULL)
        e->inq_tail = NULL;
    o->next = NULL;
    e->st.pkts_out++;
    if (e->trace_fn)
        trace_inline_packet(e, o);
    fill_send(e, o, a);
    return 1;
}

int out_next_action(quay_engine *e, quay_action *a)
{
    if (e->fatal)
        return e->fatal;
    if (e->inq_head != NULL)
        return inq_pull(e, a);
    if (!ql_empty(&e->txq)) {
        quay_req *r = QUAY_CONTAINER_OF(e->txq.next, quay_req, link);
        if (eager_pull_ok(e, r))
            return eager_pull(e, r, a);
        return out_pull(e, a);
    }
    if (e->ctrl_count != 0 || e->loop_head != NULL || !ql_empty(&e->cq))
        return out_pull(e, a);
    if (e->rare)
        return rare_pull(e, a);
    return 0; /* idle: the common empty pull, kept short */
}
