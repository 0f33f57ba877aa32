/*
 * cancel.c — cancellation of receives and sends.
 *
 * A posted receive is cancelled locally. A send needs the receiver's word:
 * the sender emits CANCEL_REQ, sequenced after the message itself, so when
 * the receiver processes it the message has been processed too: either it
 * is still unmatched (unexpected or orphaned: removed, verdict 1) or it was
 * matched (verdict 0). The send then completes cancelled, or normally.
 */
#include "engine/internal.h"

/* ---- CANCEL_REQ and CANCEL_REP on the wire (registry: packets.h) ------------- */

/* CANCEL_REQ: WIRE_CANCEL_REQ_LEN bytes, sequenced. */
enum {
    CREQ_SEQ = WIRE_OFF_SEQ,
    CREQ_CTX = 8,   /* the message's context */
    CREQ_SREQ = 12, /* the send to cancel */
    CREQ_TARGET = 16 /* the message's number */
};

int cancel_req_decode(const uint8_t *b, size_t payload, wire_hdr *h)
{
    QUAY_UNUSED(payload);
    h->seq = wire_get32(b + CREQ_SEQ);
    h->ctx = wire_get32(b + CREQ_CTX);
    h->sreq = wire_get32(b + CREQ_SREQ);
    h->target = wire_get32(b + CREQ_TARGET);
    return h->sreq == 0 ? QUAY_EPROTO : 0;
}

void cancel_req_encode(const wire_hdr *h, uint8_t *o)
{
    wire_put32(o + CREQ_SEQ, h->seq);
    wire_put32(o + CREQ_CTX, h->ctx);
    wire_put32(o + CREQ_SREQ, h->sreq);
    wire_put32(o + CREQ_TARGET, h->target);
}

/* CANCEL_REP: WIRE_CANCEL_REP_LEN bytes. */
enum {
    CREP_SREQ = 4,  /* the send; with WIRE_F_FOR_RECV the delegated receive */
    CREP_STATUS = 8 /* 1 cancelled, 0 not */
};

int cancel_rep_decode(const uint8_t *b, size_t payload, wire_hdr *h)
{
    QUAY_UNUSED(payload);
    h->sreq = wire_get32(b + CREP_SREQ);
    h->status = (int32_t)wire_get32(b + CREP_STATUS);
    return h->sreq == 0 || (h->status != 0 && h->status != 1) ? QUAY_EPROTO : 0;
}

void cancel_rep_encode(const wire_hdr *h, uint8_t *o)
{
    wire_put32(o + CREP_SREQ, h->sreq);
    wire_put32(o + CREP_STATUS, (uint32_t)h->status);
}

/* A send's CANCEL_REQ, under the number cancel took for it. */
void cancel_emit_req(quay_req *r, qout *o)
{
    wire_hdr h;
    memset(&h, 0, sizeof h);
    h.type = QUAY_PKT_CANCEL_REQ;
    h.seq = r->cancel_seq;
    h.ctx = r->ctx;
    h.sreq = r->id;
    h.target = r->seq;
    o->seq = r->cancel_seq;
    r->flags &= ~(uint32_t)RF_CANCEL_WANTED;
    out_encode(o, &h);
}

/* ---- the protocol --------------------------------------------------------------- */

void recv_unpost_cancelled(quay_engine *e, quay_req *r)
{
    match_remove_posted(e, r);
    arb_release(e, r); /* a delegation's or an announcement's region, slot */
    r->flags &= ~(uint32_t)RF_CANCEL_PENDING;
    r->status.cancelled = 1;
    r->status.error = QUAY_ECANCELLED;
    r->status.count = 0;
    req_complete(e, r);
}

int quay_cancel(quay_engine *e, quay_req *r)
{
    if (e == NULL || !req_valid_ptr(e, r) || (r->flags & (RF_INTERNAL | RF_COLL)))
        return QUAY_EINVAL;
    if (e->fatal)
        return e->fatal;
    if (r->kind == RK_COLL)
        return QUAY_EINVAL; /* MPI: collectives cannot be cancelled */
    return req_cancel(e, r);
}

int req_cancel(quay_engine *e, quay_req *r)
{
    if (r->state == QUAY_RS_DONE)
        return 0;
    if (r->kind == RK_RECV) {
        if (r->state == QUAY_RS_RECV_RTR) {
            rtr_cancel(e, r); /* the sender may hold it: ask */
            return 0;
        }
        if (r->state == QUAY_RS_RECV_ANY) {
            arb_cancel(e, r); /* a claim decides first */
            return 0;
        }
        if (r->state == QUAY_RS_RECV_POSTED)
            recv_unpost_cancelled(e, r);
        return 0;
    }
    if (r->state == QUAY_RS_SEND_ANY || r->state == QUAY_RS_SEND_QUEUED) {
        arb_cancel_send(e, r); /* nothing sent yet but perhaps a flag */
        return 0;
    }
    /* Send: only while the receiver may not have matched it yet. */
    if (r->flags & (RF_CANCEL_PENDING | RF_ACKED | RF_CTS_SEEN | RF_FIN_SEEN))
        return 0;
    if (r->state != QUAY_RS_SEND_EAGER && r->state != QUAY_RS_SEND_WAIT_ACK &&
        r->state != QUAY_RS_SEND_RTS)
        return 0;
    r->cancel_seq = seq_assign(e, r->peer);
    r->flags |= RF_CANCEL_WANTED | RF_CANCEL_PENDING;
    r->saved_state = r->state;
    req_set_state(e, r, QUAY_RS_SEND_CANCEL);
    txq_add(e, r);
    return 0;
}

int cancel_on_req(quay_engine *e, int32_t peer, const umsg *req)
{
    if (!ctrl_space(e))
        return QUAY_EAGAIN; /* the verdict needs a control slot */
    umsg *m = msg_find_by_seq(e, peer, req->target);
    int32_t verdict = 0;
    /* A poisoned ready message already got its verdict (ENOTPOSTED): it
     * counts as matched, so its sender waits for that ACK, not a cancel. */
    if (m != NULL && m->ctx == req->ctx && !(m->flags & UMF_POISON)) {
        if (m->where == UM_UNEXP) {
            match_remove_unexp(e, m);
        } else {
            ql_remove(&m->alink);
            e->norphans--;
        }
        umsg_free(e, m);
        verdict = 1;
    }
    ctrl_push(e, QUAY_PKT_CANCEL_REP, peer, req->sreq, verdict, 0);
    return 0;
}

int cancel_on_rep(quay_engine *e, int32_t peer, const wire_hdr *h, const uint8_t *payload,
                  size_t plen)
{
    QUAY_UNUSED(payload);
    QUAY_UNUSED(plen);
    if (h->flags & WIRE_F_FOR_RECV)
        return rtr_on_cancel_rep(e, peer, h);
    quay_req *r = req_by_id(e, h->sreq);
    if (r == NULL || r->kind != RK_SEND || r->peer != peer ||
        !(r->flags & RF_CANCEL_PENDING) || (r->flags & RF_CANCEL_WANTED))
        return QUAY_ESTATE;
    if (h->status == 1 && (r->flags & (RF_CTS_SEEN | RF_ACKED | RF_FIN_SEEN)))
        return QUAY_ESTATE; /* it was matched: it cannot have been cancelled */
    r->flags &= ~(uint32_t)RF_CANCEL_PENDING;
    if (h->status == 1) {
        r->flags |= RF_CANCELLED;
        r->status.cancelled = 1;
        r->status.error = QUAY_ECANCELLED;
        r->status.count = 0;
    } else if (r->state == QUAY_RS_SEND_CANCEL) {
        req_set_state(e, r, r->saved_state);
    }
    req_progress(e, r);
    return 0;
}
