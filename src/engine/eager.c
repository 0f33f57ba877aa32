/*
 * eager.c — the eager protocol's reply path.
 *
 * An eager message (header + whole payload, one packet) is delivered by
 * p2p_deliver when it meets a receive. Synchronous and ready sends wait for
 * an ACK: status 0 once the receiver matched (sync) or found the receive
 * posted (ready), QUAY_ENOTPOSTED when a ready send found none. A ready
 * rendezvous send gets the ACK only in the failure case; its CTS is the
 * positive answer.
 */
#include "engine/internal.h"
#include "engine/eager_fast.h"

/* ---- EAGER and ACK on the wire (registry: packets.h) ------------------------ */

/* The common header, then the envelope (eager.h), then the payload. */
int eager_decode(const uint8_t *b, size_t payload, wire_hdr *h)
{
    env_read(b, h);
    /* sync and ready at once, a negative source or tag, a length not the
     * payload's; only sync/ready sends need a reply addressed to a
     * request */
    if ((h->flags & WIRE_ENV_FLAGS) == WIRE_ENV_FLAGS || h->src < 0 || h->tag < 0 ||
        h->len != payload || ((h->flags & WIRE_ENV_FLAGS) && h->sreq == 0))
        return QUAY_EPROTO;
    return 0;
}

/* EAGER and RTS (an RTS's key behind the envelope). */
void env_encode_hdr(const wire_hdr *h, uint8_t *o)
{
    env_encode(o, h->type, h->flags, h->seq, h->ctx, h->src, h->tag, h->sreq, h->len);
    if (h->flags & WIRE_F_KEY)
        env_put_key(o, h->key);
}

/* ACK: WIRE_ACK_LEN bytes. */
enum {
    ACK_SREQ = 4,  /* 4: the send it answers */
    ACK_STATUS = 8 /* 4: 0 matched, or QUAY_ENOTPOSTED */
};

int ack_decode(const uint8_t *b, size_t payload, wire_hdr *h)
{
    QUAY_UNUSED(payload);
    h->sreq = wire_get32(b + ACK_SREQ);
    h->status = (int32_t)wire_get32(b + ACK_STATUS);
    return h->sreq == 0 || (h->status != 0 && h->status != QUAY_ENOTPOSTED) ? QUAY_EPROTO : 0;
}

void ack_encode(const wire_hdr *h, uint8_t *o)
{
    wire_put32(o + ACK_SREQ, h->sreq);
    wire_put32(o + ACK_STATUS, (uint32_t)h->status);
}

void env_emit(quay_req *r, qout *o)
{
    int rndv = (r->flags & RF_RNDV) != 0;
    uint16_t fl = send_wire_flags(r);
    o->pkt = rndv ? QUAY_PKT_RTS : QUAY_PKT_EAGER;
    if (r->flags & RF_PUT_OFFER)
        fl |= WIRE_F_PUT_OK;
    if (r->flags & RF_GET_OFFER)
        fl |= WIRE_F_KEY;
    o->hdr_len = (uint16_t)env_encode(OUT_HDR(o), o->pkt, fl, r->seq, r->ctx, r->comm->myrank,
                                      r->tag, r->id, r->len);
    if (r->flags & RF_GET_OFFER) {
        env_put_key(OUT_HDR(o), r->lkey);
        o->hdr_len += WIRE_KEY_LEN;
    }
    if (!rndv) {
        o->payload = r->u.sbuf;
        o->payload_len = r->len;
    }
    o->seq = r->seq;
    r->flags |= RF_ENV_SENT;
}

int eager_on_sent(quay_engine *e, quay_req *r, int status)
{
    (void)e;
    if (status >= 0)
        r->flags |= RF_WIRE_DONE;
    return status;
}

/* ---- the protocol --------------------------------------------------------------- */

int eager_fast_arrival(quay_engine *e, int32_t peer, const uint8_t *b, size_t len)
{
    return eager_arrival(e, peer, b, len, 0, NULL);
}

int eager_on_ack(quay_engine *e, int32_t peer, const wire_hdr *h, const uint8_t *payload,
                 size_t plen)
{
    QUAY_UNUSED(payload);
    QUAY_UNUSED(plen);
    quay_req *r = req_by_id(e, h->sreq);
    if (r == NULL || r->kind != RK_SEND || r->peer != peer ||
        !(r->flags & RF_ENV_SENT) || (r->flags & (RF_ACKED | RF_CANCELLED | RF_FIN_SEEN)) ||
        r->state == QUAY_RS_DONE)
        return QUAY_ESTATE;
    if (r->mode != QUAY_SEND_SYNC && r->mode != QUAY_SEND_READY)
        return QUAY_ESTATE;
    if (h->status == QUAY_ENOTPOSTED && r->mode != QUAY_SEND_READY)
        return QUAY_ESTATE;
    if (r->flags & RF_RNDV) {
        /* Only the negative verdict travels as an ACK for rendezvous. */
        if (h->status == 0 || (r->flags & RF_CTS_SEEN))
            return QUAY_ESTATE;
    }
    r->flags |= RF_ACKED;
    if (h->status != 0) {
        r->status.error = h->status;
        r->status.count = 0;
    }
    req_progress(e, r);
    return 0;
}
