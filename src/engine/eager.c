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
