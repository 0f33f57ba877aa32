/*
 * rndv_rdma.c — rendezvous whose data moves by RDMA instead of DATA
 * packets (design.md §4): the sender offers, the receiver chooses.
 *
 *   GET   sender                          receiver
 *         RTS(env, len, key=K_s)    -->   match; RDMA_GET fragments of K_s
 *                                         (pipeline_depth in flight), then
 *                                   <--   FIN(sreq, rreq, status)
 *   PUT   RTS(env, len, PUT_OK)     -->   match; register the buffer
 *                                   <--   CTS(key=K_r, every fragment granted)
 *         RDMA_PUT fragments of K_r
 *         (pipeline_depth in flight)
 *         FIN(sreq, rreq, status)   -->   complete
 *
 * One handshake per message either way (GET: none beyond the RTS), no
 * copy through the engine. The side that exposes memory registers it as
 * an internal region for exactly the transfer and deregisters it when its
 * request completes; the key is checked by the peer's adapter against
 * this engine's table on every access (quay_mem_resolve), so a late or
 * forged access finds no region. An offer is only an offer: a receiver in
 * COPY mode, whose transport cannot, or that has no region (PUT) or
 * control slot (GET) free answers with a plain CTS and the DATA packets
 * of rndv.c carry the message; a sender that cannot register offers
 * nothing. The receiver of a GET completes as its last read lands and
 * queues the FIN as a control reply (the slot was reserved at the match,
 * so completion never waits for room); the PUT sender completes when its
 * FIN is done, the PUT receiver when the FIN arrives.
 */
#include "engine/internal.h"

/* ---- FIN on the wire (registry: packets.h) ------------------------------------ */

/* FIN: WIRE_FIN_LEN bytes. */
enum {
    FIN_SREQ = 4,
    FIN_RREQ = 8,
    FIN_STATUS = 12 /* 0 or the transfer's error (rndv_fin_status) */
};

int fin_decode(const uint8_t *b, size_t payload, wire_hdr *h)
{
    QUAY_UNUSED(payload);
    h->sreq = wire_get32(b + FIN_SREQ);
    h->rreq = wire_get32(b + FIN_RREQ);
    h->status = (int32_t)wire_get32(b + FIN_STATUS);
    return h->sreq == 0 || h->rreq == 0 || !rndv_fin_status_ok(h->status) ? QUAY_EPROTO : 0;
}

void fin_encode(const wire_hdr *h, uint8_t *o)
{
    wire_put32(o + FIN_SREQ, h->sreq);
    wire_put32(o + FIN_RREQ, h->rreq);
    wire_put32(o + FIN_STATUS, (uint32_t)h->status);
}

/* A PUT sender's FIN: its writes are done (TO_RECV: to the receiver). */
void rndv_emit_fin(quay_req *r, qout *o)
{
    wire_hdr h;
    memset(&h, 0, sizeof h);
    h.type = QUAY_PKT_FIN;
    h.flags = WIRE_F_TO_RECV;
    h.sreq = r->id;
    h.rreq = r->rreq;
    h.status = rndv_fin_status(r->status.error);
    r->owe &= ~(uint32_t)REQ_OWES_FIN;
    r->flags |= RF_FIN_SENT;
    out_encode(o, &h);
}

int rndv_fin_sent(quay_engine *e, quay_req *r, int status)
{
    (void)e;
    if (status >= 0)
        r->flags |= RF_WIRE_DONE;
    return status;
}

int rndv_rdma_on_done(quay_engine *e, quay_req *r, int status)
{
    if (status >= 0) {
        r->rv.frags_done++;
        if (r->rv.next_frag < r->rv.nfrags && !(r->flags & (RF_FAILED | RF_ON_TXQ)))
            rdmaq_add(e, r);
    }
    return status;
}

/* ---- the protocol --------------------------------------------------------------- */

/* The FIN status: what the peer should report for the transfer. */
int32_t rndv_fin_status(int32_t err)
{
    if (err == 0 || err == QUAY_ETRUNCATE)
        return 0; /* truncation is the receive's business alone */
    if (err == QUAY_EPROTO || err == QUAY_ESTATE)
        return err; /* a key refused */
    return QUAY_EPEER;
}

static uint32_t effective_mode(const quay_engine *e)
{
    uint32_t caps = e->cfg.transport_caps;
    if (e->cfg.rndv_mode != QUAY_RNDV_AUTO)
        return e->cfg.rndv_mode;
    return (caps & QUAY_CAP_RDMA_GET)   ? QUAY_RNDV_GET
           : (caps & QUAY_CAP_RDMA_PUT) ? QUAY_RNDV_PUT
                                        : QUAY_RNDV_COPY;
}

void rndv_offer(quay_engine *e, quay_req *r)
{
    uint32_t mode = effective_mode(e), caps = e->cfg.transport_caps;
    r->lkey = 0;
    if (r->peer == e->rank || mode == QUAY_RNDV_COPY)
        return; /* self-sends run the packet protocol through loopback */
    if (mode == QUAY_RNDV_GET &&
        mem_register(e, (void *)(uintptr_t)r->u.sbuf, r->len, QUAY_MEM_READ, 1, r->peer, 0,
                     &r->lkey) == 0) {
        r->flags |= RF_GET_OFFER;
        return;
    }
    if (caps & QUAY_CAP_RDMA_PUT)
        r->flags |= RF_PUT_OFFER; /* PUT mode, or GET without a free region */
}

int rndv_rdma_matched(quay_engine *e, quay_req *r, const umsg *env)
{
    uint32_t caps = e->cfg.transport_caps;
    if (env->peer == e->rank || e->cfg.rndv_mode == QUAY_RNDV_COPY ||
        !(env->flags & (UMF_KEY | UMF_PUT_OK)))
        return 0;
    int get = (env->flags & UMF_KEY) && (caps & QUAY_CAP_RDMA_GET);
    int put = !get && (env->flags & UMF_PUT_OK) && (caps & QUAY_CAP_RDMA_PUT) &&
              r->rv.accepted != 0;
    if (get && !ctrl_reserve(e))
        return 0;
    if (put && mem_register(e, r->u.rbuf, r->rv.accepted, QUAY_MEM_WRITE, 1, env->peer, 0, &r->lkey) != 0)
        return 0;
    if (!get && !put)
        return 0;
    r->rv.nfrags = rndv_split(r->rv.accepted, e->cfg.frag_size, &r->rv.frag);
    r->rv.grant = r->rv.nfrags;
    r->rv.next_frag = 0;
    r->rv.frags_done = 0;
    r->rv.received = 0;
    r->rv.base = 0;
    r->rv.bitmap = 0;
    r->rv.ncts = 0;
    r->status.count = r->rv.accepted;
    if (put) {
        e->st.rndv_put++;
        r->owe |= REQ_OWES_CTS;
        req_set_state(e, r, QUAY_RS_RECV_PUT);
        txq_add(e, r);
        return 1;
    }
    e->st.rndv_get++;
    r->flags |= RF_FIN_OWED;
    r->rv.rkey = env->key;
    req_set_state(e, r, QUAY_RS_RECV_GET);
    if (r->rv.nfrags == 0)
        req_complete(e, r); /* nothing to read: the FIN goes at once */
    else
        rdmaq_add(e, r);
    return 1;
}

int rndv_put_start(quay_engine *e, quay_req *r, const wire_hdr *h)
{
    uint64_t nf = h->len == 0 ? 0 : (h->len - 1) / h->frag + 1;
    /* A keyed CTS is the only one: index 1, every fragment granted. */
    if (!(r->flags & RF_PUT_OFFER) || h->len > r->len || h->index != 1 ||
        nf > UINT32_MAX || h->grant != nf)
        return QUAY_ESTATE;
    r->rv.ncts = 2;
    r->rv.cts_bits = 0;
    r->rv.cts_total = 1;
    rndv_write_begin(e, r, QUAY_RS_SEND_PUT, h->rreq, h->key, h->len, h->frag,
                     (uint32_t)nf);
    return 0;
}

void rndv_write_begin(quay_engine *e, quay_req *r, int state, uint32_t rreq, uint64_t key,
                      uint64_t accepted, uint32_t frag, uint32_t nfrags)
{
    r->rreq = rreq;
    r->rv.rkey = key;
    r->rv.accepted = accepted;
    r->rv.frag = frag;
    r->rv.nfrags = nfrags;
    r->rv.grant = nfrags;
    r->rv.next_frag = 0;
    r->rv.frags_done = 0;
    r->flags |= RF_CTS_SEEN; /* the match is proven: a cancel fails now */
    req_set_state(e, r, state);
    if (nfrags == 0)
        rndv_rdma_progress(e, r);
    else if (!(r->flags & RF_ON_TXQ))
        rdmaq_add(e, r); /* else queued when its CANCEL_REQ has gone */
}

int rndv_rdma_emit(quay_engine *e, quay_req *r, qout *o)
{
    int put = r->state == QUAY_RS_SEND_PUT || r->state == QUAY_RS_SEND_WRITE;
    uint64_t off = (uint64_t)r->rv.next_frag * r->rv.frag;
    uint64_t n = r->rv.accepted - off;
    if (n > r->rv.frag)
        n = r->rv.frag;
    o->peer = r->peer;
    o->req = r;
    r->nout++;
    o->pkt = put ? QOUT_RDMA_PUT : QOUT_RDMA_GET;
    o->hdr_len = 0;
    o->payload = (put ? r->u.sbuf : r->u.rbuf) + off;
    o->payload_len = (size_t)n;
    o->rkey = r->rv.rkey;
    o->roff = off;
    r->rv.next_frag++;
    return r->rv.next_frag < r->rv.nfrags && r->rv.next_frag - r->rv.frags_done < e->cfg.pipeline_depth;
}

void rndv_rdma_progress(quay_engine *e, quay_req *r)
{
    if (r->state == QUAY_RS_DONE)
        return;
    if (r->nout == 0 && !(r->flags & RF_FAILED) && r->rv.next_frag < r->rv.nfrags &&
        (r->state == QUAY_RS_SEND_PUT || r->state == QUAY_RS_SEND_WRITE ||
         r->state == QUAY_RS_RECV_GET)) {
        if (!(r->flags & RF_ON_TXQ))
            rdmaq_add(e, r);
        return;
    }
    if (r->nout != 0)
        return;
    switch (r->state) {
    case QUAY_RS_RECV_GET:
        /* Every read landed, or one failed: the FIN says which. */
        req_complete(e, r);
        return;
    case QUAY_RS_RECV_PUT:
        if ((r->flags & RF_FAILED) || ((r->flags & RF_FIN_SEEN) && !(r->owe & REQ_OWES_CTS)))
            req_complete(e, r);
        return;
    case QUAY_RS_SEND_PUT:
    case QUAY_RS_SEND_WRITE: /* the same, ending with SC instead of FIN */
        if (r->flags & RF_FIN_SENT) {
            /* The FIN is done (or failed); a cancel asked while the CTS
             * was on its way still waits for its verdict (a refusal). */
            if (!(r->flags & RF_CANCEL_PENDING))
                req_complete(e, r);
        } else if (!(r->owe & (REQ_OWES_FIN | REQ_OWES_SC))) {
            if (e->peers[r->peer].failed) {
                req_complete(e, r);
                return;
            }
            if (r->flags & RF_ON_RDMAQ) { /* a failed write left it queued */
                ql_remove(&r->link);
                r->flags &= ~(uint32_t)RF_ON_RDMAQ;
            }
            r->owe |= r->state == QUAY_RS_SEND_WRITE ? REQ_OWES_SC : REQ_OWES_FIN;
            txq_add(e, r);
        }
        return;
    default:
        return;
    }
}

int rndv_on_fin(quay_engine *e, int32_t peer, const wire_hdr *h, const uint8_t *payload,
                size_t plen)
{
    QUAY_UNUSED(payload);
    QUAY_UNUSED(plen);
    quay_req *r;
    if (h->flags & WIRE_F_TO_RECV) {
        r = req_by_id(e, h->rreq);
        if (r == NULL || r->kind != RK_RECV || r->state != QUAY_RS_RECV_PUT ||
            r->peer != peer || r->sreq != h->sreq || (r->flags & RF_FIN_SEEN) ||
            r->rv.ncts == 0) /* its keyed CTS has not even gone out */
            return QUAY_ESTATE;
    } else {
        r = req_by_id(e, h->sreq);
        if (r == NULL || r->kind != RK_SEND || r->peer != peer || r->state == QUAY_RS_DONE ||
            !(r->flags & RF_GET_OFFER) || !(r->flags & RF_ENV_SENT) ||
            (r->flags & (RF_CTS_SEEN | RF_FIN_SEEN | RF_ACKED | RF_CANCELLED)))
            return QUAY_ESTATE;
        r->rreq = h->rreq;
    }
    r->flags |= RF_FIN_SEEN;
    if (h->status != 0)
        r->status.error = h->status;
    req_progress(e, r);
    return 0;
}

void rndv_rdma_release(quay_engine *e, quay_req *r)
{
    if (r->flags & RF_FIN_OWED) {
        r->flags &= ~(uint32_t)RF_FIN_OWED;
        e->ctrl_reserved--;
        if (!e->peers[r->peer].failed)
            ctrl_push(e, QUAY_PKT_FIN, r->peer, r->sreq, rndv_fin_status(r->status.error), r->id);
    }
    mem_release_internal(e, &r->lkey);
}
