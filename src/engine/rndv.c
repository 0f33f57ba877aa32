/*
 * rndv.c — sender-initiated rendezvous, pipelined [McMPI R1/R2, DMPI].
 *
 *   sender                         receiver
 *   RTS(seq, env, len, sreq)  -->  match (now or when a receive is posted)
 *                             <--  CTS(sreq, rreq, frag, accepted, grant)
 *   DATA(rreq, off) x grant   -->  copy at off; as fragments land, the
 *                             <--  CTS(grant + k) ... (grants overlap data)
 *
 * The receiver chooses the fragment size and how many bytes it accepts
 * (min(len, cap): truncated bytes never travel). It keeps up to
 * pipeline_depth fragments granted ahead of the first missing one and
 * re-grants in batches of depth/2, so the handshake for later fragments
 * travels while earlier data does: one exposed handshake per message.
 * Grants are cumulative, so a late CTS is harmless; each CTS is numbered
 * and the final one (grant == nfrags) says how many there were, so the
 * sender completes only once every CTS addressed to it has arrived (a
 * duplicate index is rejected) and no reordered straggler can hit a
 * completed (or reused) request. The
 * receiver tracks arrivals in a 64-bit window and rejects duplicates and
 * fragments outside [base, grant).
 */
#include "engine/internal.h"

/* ---- RTS, CTS and DATA on the wire (registry: packets.h) --------------------- */

/* RTS: the envelope (eager.h), with WIRE_F_KEY its key; no payload. */
int rts_decode(const uint8_t *b, size_t payload, wire_hdr *h)
{
    QUAY_UNUSED(payload);
    env_read(b, h);
    if ((h->flags & WIRE_ENV_FLAGS) == WIRE_ENV_FLAGS || h->src < 0 || h->tag < 0 ||
        h->sreq == 0)
        return QUAY_EPROTO; /* sync and ready at once; no request to answer */
    h->key = (h->flags & WIRE_F_KEY) ? env_key(b) : 0;
    return 0;
}

/* CTS: WIRE_CTS_LEN bytes, with WIRE_F_KEY a key behind them. */
enum {
    CTS_SREQ = 4,
    CTS_RREQ = 8,
    CTS_GRANT = 12,        /* fragments [0, grant) may be sent */
    CTS_FRAG = 16,         /* fragment size */
    CTS_INDEX = 20,        /* 1-based number of this CTS for the message */
    CTS_ACCEPTED = 24,     /* 8: bytes the receiver takes */
    CTS_KEY = WIRE_CTS_LEN /* 8, with WIRE_F_KEY: the receiver's buffer */
};

int cts_decode(const uint8_t *b, size_t payload, wire_hdr *h)
{
    QUAY_UNUSED(payload);
    h->sreq = wire_get32(b + CTS_SREQ);
    h->rreq = wire_get32(b + CTS_RREQ);
    h->grant = wire_get32(b + CTS_GRANT);
    h->frag = wire_get32(b + CTS_FRAG);
    h->index = wire_get32(b + CTS_INDEX);
    h->len = wire_get64(b + CTS_ACCEPTED);
    if (h->sreq == 0 || h->rreq == 0 || h->frag == 0 || h->index == 0)
        return QUAY_EPROTO;
    h->key = (h->flags & WIRE_F_KEY) ? wire_get64(b + CTS_KEY) : 0;
    return 0;
}

void cts_encode(const wire_hdr *h, uint8_t *o)
{
    wire_put32(o + CTS_SREQ, h->sreq);
    wire_put32(o + CTS_RREQ, h->rreq);
    wire_put32(o + CTS_GRANT, h->grant);
    wire_put32(o + CTS_FRAG, h->frag);
    wire_put32(o + CTS_INDEX, h->index);
    wire_put64(o + CTS_ACCEPTED, h->len);
    if (h->flags & WIRE_F_KEY)
        wire_put64(o + CTS_KEY, h->key);
}

/* DATA: WIRE_DATA_LEN bytes, then a fragment (never empty). */
enum {
    DATA_RREQ = 4,
    DATA_OFFSET = 8 /* 8: k * frag for fragment k */
};

int data_decode(const uint8_t *b, size_t payload, wire_hdr *h)
{
    h->rreq = wire_get32(b + DATA_RREQ);
    h->offset = wire_get64(b + DATA_OFFSET);
    return payload == 0 || h->rreq == 0 ? QUAY_EPROTO : 0;
}

void data_encode(const wire_hdr *h, uint8_t *o)
{
    wire_put32(o + DATA_RREQ, h->rreq);
    wire_put64(o + DATA_OFFSET, h->offset);
}

/* The receiver's next CTS for r (a keyed one for a PUT: every fragment
 * granted, write here). */
void rndv_emit_cts(quay_req *r, qout *o)
{
    wire_hdr h;
    memset(&h, 0, sizeof h);
    h.type = QUAY_PKT_CTS;
    h.sreq = r->sreq;
    h.rreq = r->id;
    h.grant = r->rv.grant;
    h.frag = r->rv.frag;
    h.index = ++r->rv.ncts;
    h.len = r->rv.accepted;
    if (r->state == QUAY_RS_RECV_PUT) {
        h.flags = WIRE_F_KEY;
        h.key = r->lkey;
    }
    r->owe &= ~(uint32_t)REQ_OWES_CTS;
    out_encode(o, &h);
}

/* A CTS whose transmission failed after every byte it asked for has
 * arrived changed nothing: the receive is complete and intact. */
int rndv_cts_sent(quay_engine *e, quay_req *r, int status)
{
    (void)e;
    return status < 0 && r->kind == RK_RECV && r->rv.received == r->rv.accepted ? 0 : status;
}

int rndv_data_sent(quay_engine *e, quay_req *r, int status)
{
    (void)e;
    if (status >= 0)
        r->rv.frags_done++;
    return status;
}

/* The sender's next fragment: DATA at next_frag * frag. */
void rndv_emit_data(quay_req *r, qout *o)
{
    uint64_t off = (uint64_t)r->rv.next_frag * r->rv.frag;
    uint64_t n = r->rv.accepted - off;
    if (n > r->rv.frag)
        n = r->rv.frag;
    wire_hdr h;
    memset(&h, 0, sizeof h);
    h.type = QUAY_PKT_DATA;
    h.rreq = r->rreq;
    h.offset = off;
    o->payload = r->u.sbuf + off;
    o->payload_len = (size_t)n;
    r->rv.next_frag++;
    out_encode(o, &h);
}

/* ---- the protocol --------------------------------------------------------------- */

uint32_t rndv_split(uint64_t bytes, uint64_t frag_size, uint32_t *frag)
{
    uint64_t f = frag_size;
    /* Keep the fragment count within 32 bits for absurd sizes. */
    if (bytes / f >= UINT32_MAX)
        f = bytes / (UINT32_MAX - 1) + 1;
    *frag = (uint32_t)f;
    return (uint32_t)((bytes + f - 1) / f);
}

void rndv_recv_matched(quay_engine *e, quay_req *r, const umsg *env)
{
    uint64_t accepted = env->len;
    if (accepted > r->len) {
        accepted = r->len;
        r->status.error = QUAY_ETRUNCATE;
    }
    r->rv.accepted = accepted;
    if (rndv_rdma_matched(e, r, env))
        return; /* the data moves by RDMA (rndv_rdma.c) */
    e->st.rndv_copy++;
    r->rv.nfrags = rndv_split(accepted, e->cfg.frag_size, &r->rv.frag);
    r->rv.grant = r->rv.nfrags < e->cfg.pipeline_depth ? r->rv.nfrags : e->cfg.pipeline_depth;
    r->rv.base = 0;
    r->rv.bitmap = 0;
    r->rv.received = 0;
    r->rv.ncts = 0;
    r->status.count = accepted;
    r->owe |= REQ_OWES_CTS;
    req_set_state(e, r, QUAY_RS_RECV_RNDV);
    txq_add(e, r);
}

/*
 * CTS indices seen by the sender: every index below ncts, plus a 64-bit
 * window `bits` above it (a receiver never has more CTSs in flight than
 * fragments granted, <= 64). Returns the window bit for `index`, or 0 if
 * the index is a duplicate or out of the window.
 */
static uint64_t cts_bit(uint32_t ncts, uint64_t bits, uint32_t index)
{
    uint32_t d = index - ncts;
    if (index < ncts || d >= 64)
        return 0;
    uint64_t bit = 1ull << d;
    return (bits & bit) ? 0 : bit;
}

int rndv_on_cts(quay_engine *e, int32_t peer, const wire_hdr *h, const uint8_t *payload,
                size_t plen)
{
    QUAY_UNUSED(payload);
    QUAY_UNUSED(plen);
    quay_req *r = req_by_id(e, h->sreq);
    if (r == NULL || r->kind != RK_SEND || r->peer != peer ||
        !(r->flags & RF_RNDV) || !(r->flags & RF_ENV_SENT) ||
        (r->flags & (RF_CANCELLED | RF_ACKED | RF_FIN_SEEN)) || r->state == QUAY_RS_DONE)
        return QUAY_ESTATE;
    int first = !(r->flags & RF_CTS_SEEN);
    if (h->flags & WIRE_F_KEY)
        return first ? rndv_put_start(e, r, h) : QUAY_ESTATE;
    uint64_t nf;
    if (first) {
        if (h->len > r->len || h->frag > e->cfg.max_packet - WIRE_DATA_LEN)
            return QUAY_ESTATE;
        nf = (h->len + h->frag - 1) / h->frag;
        if (nf > UINT32_MAX || (h->grant == 0 && nf != 0))
            return QUAY_ESTATE;
    } else {
        if (h->rreq != r->rreq || h->len != r->rv.accepted || h->frag != r->rv.frag)
            return QUAY_ESTATE;
        nf = r->rv.nfrags;
    }
    /* Validate everything before changing anything (the first CTS's
     * index window starts at 1). */
    uint64_t bit = first ? cts_bit(1, 0, h->index) : cts_bit(r->rv.ncts, r->rv.cts_bits, h->index);
    int final = h->grant == nf;
    /* A receiver sends a CTS only to raise its grant (one, granting
     * nothing, when it accepts no bytes): at most max(nf, 1) of them. A
     * higher index is forged. */
    if (h->grant > nf || h->index > (nf != 0 ? nf : 1) || bit == 0 ||
        (r->rv.cts_total != 0 && (final || h->index > r->rv.cts_total)))
        return QUAY_ESTATE;

    if (first) {
        r->rv.ncts = 1;
        r->rv.cts_bits = 0;
        r->rreq = h->rreq;
        r->rv.accepted = h->len;
        r->rv.frag = h->frag;
        r->rv.nfrags = (uint32_t)nf;
        r->rv.grant = h->grant;
        r->flags |= RF_CTS_SEEN;
        /* A CTS proves the match: a pending cancel can only fail now. */
        req_set_state(e, r, QUAY_RS_SEND_DATA);
        if (r->lkey != 0)
            rndv_rdma_release(e, r); /* the receiver declined to read */
    } else if (h->grant > r->rv.grant) {
        r->rv.grant = h->grant; /* else a straggler, superseded by a later grant */
    }
    if (final)
        r->rv.cts_total = h->index;
    r->rv.cts_bits |= bit;
    while (r->rv.cts_bits & 1u) {
        r->rv.cts_bits >>= 1;
        r->rv.ncts++;
    }
    if (r->rv.next_frag < r->rv.grant)
        txq_add(e, r);
    else
        req_progress(e, r);
    return 0;
}

int rndv_on_data(quay_engine *e, int32_t peer, const wire_hdr *h,
                 const uint8_t *payload, size_t plen)
{
    quay_req *r = req_by_id(e, h->rreq);
    if (r == NULL || r->kind != RK_RECV || r->state != QUAY_RS_RECV_RNDV ||
        r->peer != peer)
        return QUAY_ESTATE;
    if (h->offset % r->rv.frag != 0)
        return QUAY_ESTATE;
    uint64_t k = h->offset / r->rv.frag;
    if (k < r->rv.base || k >= r->rv.grant)
        return QUAY_ESTATE;
    uint64_t bit = 1ull << (k - r->rv.base);
    if (r->rv.bitmap & bit)
        return QUAY_ESTATE; /* duplicate fragment */
    uint64_t want = r->rv.accepted - h->offset;
    if (want > r->rv.frag)
        want = r->rv.frag;
    if (plen != want)
        return QUAY_ESTATE;
    memcpy(r->u.rbuf + h->offset, payload, plen);
    r->rv.received += plen;
    r->rv.bitmap |= bit;
    while (r->rv.bitmap & 1u) {
        r->rv.bitmap >>= 1;
        r->rv.base++;
    }
    uint32_t depth = e->cfg.pipeline_depth;
    uint64_t ng = (uint64_t)r->rv.base + depth;
    if (ng > r->rv.nfrags)
        ng = r->rv.nfrags;
    uint32_t batch = depth / 2 ? depth / 2 : 1;
    if (ng > r->rv.grant && (ng - r->rv.grant >= batch || ng == r->rv.nfrags)) {
        r->rv.grant = (uint32_t)ng;
        r->owe |= REQ_OWES_CTS;
        txq_add(e, r);
    }
    req_progress(e, r);
    return 0;
}
