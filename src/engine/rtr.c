/*
 * rtr.c — receiver-initiated transfers [MPIN §3], beside the
 * sender-initiated protocols (config `rtr`).
 *
 *   receiver R                          sender P
 *   irecv(src=P): RTR(ctx, tag, cap,
 *     key, rreq, x = next seq from P) -->  kept in P's table for R, in order
 *                                          isend(to R): the first entry its
 *                                          envelope matches is live: take it
 *                                     <--  RDMA_PUT into key (fragments)
 *   complete, no matching, no copy    <--  SC(seq, env, sreq, rreq, len)
 *
 * Matching moves to the sender for delegated receives, so the two sides
 * must never both match one receive. The rules:
 *  - R delegates a receive only while no undelegated receive of its
 *    communicator is posted (comm->nplain == 0): a receive posted before
 *    it that P's message could also match would be owed that message
 *    first, and P cannot see it. A receive posted while one is pending
 *    stays sender-initiated. (MPIN's virtual list, conservatively.)
 *  - P keeps R's RTRs in post order and a send may take only the first
 *    entry its envelope matches; if that one is dead, the send goes as an
 *    envelope. Identical requests therefore advance in order (MPIN's sub
 *    lists): P's table is their sub list.
 *  - Any envelope P sends to R kills every entry it matches (R may match
 *    the envelope to that receive), and P logs its recent envelopes so an
 *    RTR arriving later whose x says R had not yet seen one of them that
 *    it matches is dead on arrival. A dead entry is never written to: R
 *    matches that receive with an envelope and then revokes the entry.
 *  - SC is sequenced with P's envelopes, so R sees P's messages in send
 *    order whichever way each travelled.
 * So a write into a receive's buffer happens only if no envelope can be
 * matched to it first, and a dead delegation costs only the zero copy.
 * Bounds: R keeps at most rtr_per_peer RTRs outstanding per sender (a
 * revoke or cancel frees one in order, before any later RTR), so P's
 * per-peer table never overflows; an RTR beyond it is a protocol error.
 * Cancelling a delegated receive asks P (RTR with CANCEL): P drops the
 * entry if it still has it (verdict 1), else it was taken and the SC is
 * on its way (verdict 0).
 */
#include "engine/internal.h"

/* ---- RTR and SC on the wire (registry: packets.h) ----------------------------- */

/* RTR: WIRE_RTR_LEN bytes, sequenced. */
enum {
    RTR_SEQ = WIRE_OFF_SEQ,
    RTR_CTX = 8,
    RTR_SRC = 12,  /* the receiver's comm rank */
    RTR_TAG = 16,  /* or QUAY_ANY_TAG */
    RTR_RREQ = 20,
    RTR_X = 24,    /* the receiver's next expected number from us */
    RTR_ZERO = 28, /* 4: 0 */
    RTR_CAP = 32,  /* 8: the buffer's capacity */
    RTR_KEY = 40   /* 8: the buffer's key */
};

int rtr_decode(const uint8_t *b, size_t payload, wire_hdr *h)
{
    QUAY_UNUSED(payload);
    h->seq = wire_get32(b + RTR_SEQ);
    h->ctx = wire_get32(b + RTR_CTX);
    h->src = (int32_t)wire_get32(b + RTR_SRC);
    h->tag = (int32_t)wire_get32(b + RTR_TAG);
    h->rreq = wire_get32(b + RTR_RREQ);
    h->x = wire_get32(b + RTR_X);
    h->len = wire_get64(b + RTR_CAP);
    h->key = wire_get64(b + RTR_KEY);
    /* revoke and cancel at once; a revoke or cancel names the delegation
     * by rreq alone */
    if (h->flags == (WIRE_F_REVOKE | WIRE_F_CANCEL) || h->src < 0 || h->tag < QUAY_ANY_TAG ||
        h->rreq == 0 || wire_get32(b + RTR_ZERO) != 0 ||
        (h->flags != 0 && (h->x != 0 || h->len != 0 || h->key != 0)))
        return QUAY_EPROTO;
    return 0;
}

void rtr_encode(const wire_hdr *h, uint8_t *o)
{
    wire_put32(o + RTR_SEQ, h->seq);
    wire_put32(o + RTR_CTX, h->ctx);
    wire_put32(o + RTR_SRC, (uint32_t)h->src);
    wire_put32(o + RTR_TAG, (uint32_t)h->tag);
    wire_put32(o + RTR_RREQ, h->rreq);
    wire_put32(o + RTR_X, h->x);
    wire_put64(o + RTR_CAP, h->len);
    wire_put64(o + RTR_KEY, h->key);
}

/* SC: WIRE_SC_LEN bytes, sequenced with the sender's envelopes. */
enum {
    SC_SEQ = WIRE_OFF_SEQ,
    SC_CTX = 8,
    SC_SRC = 12,
    SC_TAG = 16,
    SC_SREQ = 20,
    SC_RREQ = 24,   /* the receive written into */
    SC_STATUS = 28, /* rndv_fin_status */
    SC_LEN = 32     /* 8: the message's length */
};

int sc_decode(const uint8_t *b, size_t payload, wire_hdr *h)
{
    QUAY_UNUSED(payload);
    h->seq = wire_get32(b + SC_SEQ);
    h->ctx = wire_get32(b + SC_CTX);
    h->src = (int32_t)wire_get32(b + SC_SRC);
    h->tag = (int32_t)wire_get32(b + SC_TAG);
    h->sreq = wire_get32(b + SC_SREQ);
    h->rreq = wire_get32(b + SC_RREQ);
    h->status = (int32_t)wire_get32(b + SC_STATUS);
    h->len = wire_get64(b + SC_LEN);
    return h->src < 0 || h->tag < 0 || h->sreq == 0 || h->rreq == 0 ||
                   !rndv_fin_status_ok(h->status)
               ? QUAY_EPROTO
               : 0;
}

void sc_encode(const wire_hdr *h, uint8_t *o)
{
    wire_put32(o + SC_SEQ, h->seq);
    wire_put32(o + SC_CTX, h->ctx);
    wire_put32(o + SC_SRC, (uint32_t)h->src);
    wire_put32(o + SC_TAG, (uint32_t)h->tag);
    wire_put32(o + SC_SREQ, h->sreq);
    wire_put32(o + SC_RREQ, h->rreq);
    wire_put32(o + SC_STATUS, (uint32_t)h->status);
    wire_put64(o + SC_LEN, h->len);
}

/* A writer's SC: sequenced with its envelopes, under the send's number. */
void rtr_emit_sc(quay_req *r, qout *o)
{
    wire_hdr h;
    memset(&h, 0, sizeof h);
    h.type = QUAY_PKT_SC;
    h.seq = r->seq;
    h.ctx = r->ctx;
    h.src = r->comm->myrank;
    h.tag = r->tag;
    h.sreq = r->id;
    h.rreq = r->rreq;
    h.len = r->len;
    h.status = rndv_fin_status(r->status.error);
    o->seq = r->seq;
    r->owe &= ~(uint32_t)REQ_OWES_SC;
    r->flags |= RF_FIN_SENT;
    out_encode(o, &h);
}

/* ---- the protocol --------------------------------------------------------------- */

static int seq_before(uint32_t a, uint32_t b) { return (uint32_t)(a - b) >= 0x80000000u; }

void rtr_attach(quay_engine *e)
{
    if (e->rtr_pool == NULL)
        return;
    for (int32_t p = 0; p < e->nranks; p++) {
        peer_state *ps = &e->peers[p];
        ps->rtr = e->rtr_pool + (size_t)p * e->cfg.rtr_per_peer;
        ps->nrtr = 0;
        ps->rlog = e->rlog_pool + (size_t)p * RTR_LOG;
        ps->rlog_head = ps->rlog_count = 0;
        /* Envelopes sent before now are unknown: RTRs older than them
         * are dead on arrival. */
        ps->rlog_lost = ps->tx_seq;
        ps->rtr_out = 0;
        ps->flag_answer = 0;
    }
    e->rtrq_head = e->rtrq_count = 0;
    arb_reset(e);
}

int rtr_init(quay_engine *e)
{
    if (!e->cfg.rtr)
        return 0;
    size_t n = (size_t)e->nranks;
    e->rtr_pool = qalloc(e, n * e->cfg.rtr_per_peer * sizeof *e->rtr_pool);
    e->rlog_pool = qalloc(e, n * RTR_LOG * sizeof *e->rlog_pool);
    /* One delegation per request; per entry a sender may hold (RTR or
     * announcement), its announcement and its withdrawal; one answer per
     * peer (a flag's, or a decline of a claim: a peer has one out). */
    e->rtrq_cap = e->cfg.max_requests + (uint32_t)n * (2 * e->cfg.rtr_per_peer + 1);
    /* (+1: rtrq_push_item's sink, should the bound above ever fail) */
    e->rtrq = qalloc(e, ((size_t)e->rtrq_cap + 1) * sizeof *e->rtrq);
    if (e->rtr_pool == NULL || e->rlog_pool == NULL || e->rtrq == NULL)
        return QUAY_ENOMEM;
    rtr_attach(e);
    return 0;
}

void rtr_fini(quay_engine *e)
{
    qfree(e, e->rtr_pool);
    qfree(e, e->rlog_pool);
    qfree(e, e->rtrq);
    e->rtr_pool = NULL;
    e->rlog_pool = NULL;
    e->rtrq = NULL;
}

/* ---- receiver ------------------------------------------------------------------ */

rtr_item *rtrq_push_item(quay_engine *e, uint8_t pkt, int32_t peer)
{
    if (e->rtrq_count == e->rtrq_cap) {
        /* rtr_init's bound broken: a quay bug. Never overwrite a queued
         * item: the engine stops, the caller writes into the sink. */
        e->fatal = QUAY_EINTERNAL;
        return memset(&e->rtrq[e->rtrq_cap], 0, sizeof *e->rtrq);
    }
    rtr_item *it = &e->rtrq[(e->rtrq_head + e->rtrq_count) % e->rtrq_cap];
    memset(it, 0, sizeof *it);
    it->pkt = pkt;
    it->peer = peer;
    e->rtrq_count++;
    work_rare(e);
    return it;
}

static void rtrq_push(quay_engine *e, uint8_t flags, int32_t peer, const quay_req *r)
{
    rtr_item *it = rtrq_push_item(e, QUAY_PKT_RTR, peer);
    it->flags = flags;
    it->rreq = r->id;
    it->ctx = r->ctx;
    it->src = r->comm->myrank;
    it->tag = flags ? 0 : r->tag;
    it->cap = flags ? 0 : r->len;
    it->key = flags ? 0 : r->lkey;
}

void rtr_delegate(quay_engine *e, quay_req *r)
{
    quay_comm *c = r->comm;
    if (e->rtrq == NULL || r->rank < 0 || c->nplain != 0)
        return;
    int32_t peer = comm_world(c, r->rank);
    peer_state *ps = &e->peers[peer];
    if (peer == e->rank || ps->failed || ps->rtr_out >= e->cfg.rtr_per_peer ||
        e->rtrq_count == e->rtrq_cap)
        return;
    if (mem_register(e, r->u.rbuf, r->len, QUAY_MEM_WRITE, 1, peer, 0, &r->lkey) != 0)
        return; /* no region: the sender-initiated way */
    r->peer = peer;
    ps->rtr_out++; /* the queued item holds it until it goes out */
    rtrq_push(e, 0, peer, r);
    req_set_state(e, r, QUAY_RS_RECV_RTR);
}

/* The sender holds r's RTR: free its slot there, in order (revoke or
 * cancel), unless the sender is gone. The slot stays counted in rtr_out
 * until the withdrawal leaves (rtrq_emit): the sender holds it until
 * then, and it bounds what the queue holds per peer (a withdrawal freed
 * at once let receives matched one after another each leave one queued
 * behind a new delegation, past rtrq_cap: fuzz/RESULTS.md bug 25). */
static void rtr_withdraw(quay_engine *e, quay_req *r, uint8_t flags)
{
    peer_state *ps = &e->peers[r->peer];
    r->flags &= ~(uint32_t)RF_RTR_SENT;
    if (ps->failed)
        ps->rtr_out--;
    else
        rtrq_push(e, flags, r->peer, r);
}

void rtr_undelegate(quay_engine *e, quay_req *r)
{
    mem_release_internal(e, &r->lkey);
    if (r->flags & RF_RTR_SENT) {
        rtr_withdraw(e, r, WIRE_F_REVOKE);
        e->st.rtr_revoked++;
    }
    /* A pending cancel's verdict will find nothing left to cancel. */
    r->flags &= ~(uint32_t)RF_CANCEL_PENDING;
}

void rtr_cancel(quay_engine *e, quay_req *r)
{
    if (r->flags & RF_CANCEL_PENDING)
        return;
    if (!(r->flags & RF_RTR_SENT)) {
        recv_unpost_cancelled(e, r); /* never left: its queued RTR is moot */
        return;
    }
    rtr_withdraw(e, r, WIRE_F_CANCEL);
    r->flags |= RF_CANCEL_PENDING;
}

int rtr_on_cancel_rep(quay_engine *e, int32_t peer, const wire_hdr *h)
{
    quay_req *r = req_by_id(e, h->sreq);
    /* The receive may have been matched by an envelope meanwhile (and be
     * gone): then the verdict has nothing left to decide. */
    if (r == NULL || r->kind != RK_RECV || !(r->flags & RF_CANCEL_PENDING))
        return 0;
    if (r->peer != peer || r->state != QUAY_RS_RECV_RTR)
        return QUAY_ESTATE;
    r->flags &= ~(uint32_t)RF_CANCEL_PENDING;
    if (h->status == 1)
        recv_unpost_cancelled(e, r);
    else
        r->flags |= RF_RTR_TAKEN; /* its SC completes the receive */
    return 0;
}

int rtr_on_sc(quay_engine *e, int32_t peer, const umsg *m)
{
    quay_req *r = req_by_id(e, m->rreq);
    if (r != NULL && r->kind == RK_RECV && r->state == QUAY_RS_RECV_ANY)
        return arb_on_sc(e, peer, r, m);
    if (r == NULL || r->kind != RK_RECV || r->state != QUAY_RS_RECV_RTR || r->peer != peer ||
        r->ctx != m->ctx || r->rank != m->src || !comm_src_ok(r->comm, m->src, peer) ||
        (r->tag != QUAY_ANY_TAG && r->tag != m->tag) ||
        !(r->flags & (RF_RTR_SENT | RF_CANCEL_PENDING | RF_RTR_TAKEN)))
        return QUAY_ESTATE;
    match_remove_posted(e, r);
    if (e->trace_fn)
        trace_match(e, r, m, peer, m->seq, m->ctx, m->src, m->tag);
    if (r->flags & RF_RTR_SENT) {
        r->flags &= ~(uint32_t)RF_RTR_SENT;
        e->peers[peer].rtr_out--; /* the sender dropped it when it took it */
    }
    r->flags &= ~(uint32_t)RF_CANCEL_PENDING; /* its verdict will be 0 */
    mem_release_internal(e, &r->lkey);
    r->sreq = m->sreq;
    rtr_sc_complete(e, r, m);
    return 0;
}

void rtr_sc_complete(quay_engine *e, quay_req *r, const umsg *m)
{
    r->msg_len = m->len;
    r->status.source = m->src;
    r->status.tag = m->tag;
    r->status.count = m->len < r->len ? m->len : r->len;
    if (m->len > r->len)
        r->status.error = QUAY_ETRUNCATE;
    if (m->status != 0)
        r->status.error = m->status;
    req_complete(e, r);
}

/* ---- queue ------------------------------------------------------------------------ */

void rtr_item_hdr(const rtr_item *it, wire_hdr *h)
{
    h->type = it->pkt;
    h->flags = it->flags;
    h->ctx = it->ctx;
    h->src = it->src;
    h->tag = it->tag;
    h->rreq = it->rreq;
    h->sreq = it->sreq;
    h->slot = it->slot;
    h->len = it->cap;
    h->key = it->key;
}

int rtrq_emit(quay_engine *e, qout *o)
{
    rtr_item it = e->rtrq[e->rtrq_head];
    e->rtrq_head = (e->rtrq_head + 1) % e->rtrq_cap;
    e->rtrq_count--;
    peer_state *ps = &e->peers[it.peer];
    wire_hdr h;
    memset(&h, 0, sizeof h);
    if (rtr_item_answers_flag(&it))
        ps->flag_answer = 0; /* its next flag may come in */
    if (it.pkt == QUAY_PKT_RTR && it.flags != 0)
        ps->rtr_out--; /* a withdrawal: the slot is free once it leaves */
    if (ps->failed) {
        /* Nothing reaches it; a delegation gives back its place. */
        if (it.pkt == QUAY_PKT_RTR && it.flags == 0)
            ps->rtr_out--;
        return 0;
    }
    if (it.pkt == QUAY_PKT_RTR && it.flags == 0) {
        /* A delegation goes out only if its receive still waits for it. */
        quay_req *r = req_by_id(e, it.rreq);
        if (r == NULL || r->state != QUAY_RS_RECV_RTR ||
            (r->flags & (RF_RTR_SENT | RF_CANCEL_PENDING))) {
            ps->rtr_out--;
            return 0;
        }
        r->flags |= RF_RTR_SENT;
        h.x = ps->rx_seq;
        e->st.rtr_sent++;
    }
    rtr_item_hdr(&it, &h);
    h.seq = ps->tx_seq++;
    o->peer = it.peer;
    o->req = NULL;
    o->seq = h.seq;
    out_encode(o, &h);
    return 1;
}

/* ---- sender ------------------------------------------------------------------------ */

static int ent_matches(const rtr_ent *t, uint32_t ctx, int32_t src, int32_t tag)
{
    return t->ctx == ctx && t->src == src && (t->tag == QUAY_ANY_TAG || t->tag == tag);
}

void rtr_write_start(quay_engine *e, quay_req *r, uint32_t rreq, uint64_t key, uint64_t cap)
{
    uint64_t accepted = r->len < cap ? r->len : cap;
    uint32_t frag, nf = rndv_split(accepted, e->cfg.frag_size, &frag);
    e->st.rtr_used++;
    r->flags |= RF_ENV_SENT; /* no envelope will go */
    rndv_write_begin(e, r, QUAY_RS_SEND_WRITE, rreq, key, accepted, frag, nf);
}

void rtr_ent_remove(peer_state *ps, uint32_t i)
{
    memmove(&ps->rtr[i], &ps->rtr[i + 1], (size_t)(ps->nrtr - i - 1) * sizeof ps->rtr[0]);
    ps->nrtr--;
}

int rtr_send(quay_engine *e, quay_req *r)
{
    if (e->rtr_pool == NULL || r->peer == e->rank)
        return 0;
    peer_state *ps = &e->peers[r->peer];
    for (uint32_t i = 0; i < ps->nrtr; i++) {
        rtr_ent *t = &ps->rtr[i];
        if (!ent_matches(t, r->ctx, r->rank, r->tag))
            continue;
        if (t->any)
            return arb_flag(e, r, t); /* the receiver decides */
        if (!t->live)
            break; /* first in line, but an envelope may be matched to it */
        rtr_ent taken = *t;
        rtr_ent_remove(ps, i);
        rtr_write_start(e, r, taken.rreq, taken.key, taken.cap);
        return 1;
    }
    return 0;
}

void rtr_envelope(quay_engine *e, quay_req *r)
{
    if (e->rtr_pool == NULL || r->peer == e->rank)
        return;
    peer_state *ps = &e->peers[r->peer];
    /* R may match the envelope to any receive whose RTR it matches. */
    for (uint32_t i = 0; i < ps->nrtr; i++) {
        rtr_ent *t = &ps->rtr[i];
        if (t->live && !t->any && ent_matches(t, r->ctx, r->rank, r->tag)) {
            t->live = 0;
            e->st.rtr_dead++;
        }
    }
    if (ps->rlog_count == RTR_LOG) {
        ps->rlog_lost = ps->rlog[ps->rlog_head].seq + 1;
        ps->rlog_head = (ps->rlog_head + 1) % RTR_LOG;
        ps->rlog_count--;
    }
    rtr_logent *l = &ps->rlog[(ps->rlog_head + ps->rlog_count) % RTR_LOG];
    l->seq = r->seq;
    l->ctx = r->ctx;
    l->tag = r->tag;
    ps->rlog_count++;
}

/* 1 if an envelope we sent from seq x on may be matched to an RTR of
 * (ctx, tag) from this peer. Entries before x are dropped (x never goes
 * back: RTRs come in order). */
static int log_conflict(peer_state *ps, uint32_t x, uint32_t ctx, int32_t tag)
{
    while (ps->rlog_count != 0 && seq_before(ps->rlog[ps->rlog_head].seq, x)) {
        ps->rlog_head = (ps->rlog_head + 1) % RTR_LOG;
        ps->rlog_count--;
    }
    if (ps->rlog_lost != 0 && seq_before(x, ps->rlog_lost))
        return 1; /* what we sent there is no longer known */
    for (uint32_t k = 0; k < ps->rlog_count; k++) {
        const rtr_logent *l = &ps->rlog[(ps->rlog_head + k) % RTR_LOG];
        if (l->ctx == ctx && (tag == QUAY_ANY_TAG || tag == l->tag))
            return 1;
    }
    return 0;
}

int rtr_on_rtr(quay_engine *e, int32_t peer, const umsg *m)
{
    if ((m->rflags & WIRE_F_CANCEL) && !ctrl_space(e))
        return QUAY_EAGAIN; /* its verdict needs a control slot */
    peer_state *ps = &e->peers[peer];
    if (e->rtr_pool == NULL || peer == e->rank)
        return QUAY_ESTATE;
    quay_comm *c = comm_lookup(e, m->ctx);
    if (c != NULL && !comm_src_ok(c, m->src, peer))
        return QUAY_ESTATE;
    uint32_t i;
    for (i = 0; i < ps->nrtr && (ps->rtr[i].any || ps->rtr[i].rreq != m->rreq); i++)
        ;
    if (m->rflags & WIRE_F_REVOKE) {
        if (i == ps->nrtr)
            return QUAY_ESTATE; /* only a receive we never wrote is revoked */
        rtr_ent_remove(ps, i);
        return 0;
    }
    if (m->rflags & WIRE_F_CANCEL) {
        int32_t verdict = i < ps->nrtr;
        if (verdict)
            rtr_ent_remove(ps, i);
        ctrl_push(e, QUAY_PKT_CANCEL_REP, peer, m->rreq, verdict, 0)->flags = WIRE_F_FOR_RECV;
        return 0;
    }
    if (i < ps->nrtr || ps->nrtr >= e->cfg.rtr_per_peer)
        return QUAY_ESTATE; /* a duplicate, or beyond the receiver's quota */
    rtr_ent *t = &ps->rtr[ps->nrtr++];
    t->ctx = m->ctx;
    t->src = m->src;
    t->tag = m->tag;
    t->rreq = m->rreq;
    t->x = m->x;
    t->cap = m->len;
    t->key = m->key;
    t->any = 0;
    t->live = !log_conflict(ps, m->x, m->ctx, m->tag);
    if (!t->live)
        e->st.rtr_dead++;
    return 0;
}
