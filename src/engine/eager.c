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
#include "engine/match_fast.h"

/* A small payload (8 to 16 bytes: two overlapping words) without a
 * library call; the rest through memcpy. */
static inline void copy_payload(void *dst, const uint8_t *src, size_t n)
{
    if (n >= 8 && n <= 16) {
        uint64_t a, z;
        memcpy(&a, src, 8);
        memcpy(&z, src + n - 8, 8);
        memcpy(dst, &a, 8);
        memcpy((uint8_t *)dst + n - 8, &z, 8);
        return;
    }
    memcpy(dst, src, n);
}

/*
 * The small-message hot path [DESIGN §9]: an in-order, standard-mode EAGER
 * whose receive is already posted. Decodes only what matching needs
 * straight from the bytes (the same checks wire_decode makes), matches
 * through the same facade (so the oracle check still applies), copies,
 * completes. Anything else — held packets pending, flags, no posted
 * receive, unknown context — takes the general path, which re-reads the
 * packet from scratch; nothing is changed before the decision.
 */
int eager_fast_arrival(quay_engine *e, int32_t peer, const uint8_t *b,
                       size_t len)
{
    if (len < WIRE_ENV_LEN || b[0] != WIRE_VERSION || b[1] != QUAY_PKT_EAGER ||
        wire_get16(b + 2) != 0)
        return EAGER_NOT_FAST;
    peer_state *ps = &e->peers[peer];
    if (wire_get32(b + 4) != ps->rx_seq || ps->nheld != 0)
        return EAGER_NOT_FAST;
    int32_t src = (int32_t)wire_get32(b + 12);
    int32_t tag = (int32_t)wire_get32(b + 16);
    uint64_t mlen = wire_get64(b + 24);
    if (src < 0 || tag < 0 || mlen != len - WIRE_ENV_LEN ||
        len > e->cfg.max_packet)
        return QUAY_EPROTO;
    quay_comm *c = comm_lookup(e, wire_get32(b + 8));
    if (c == NULL)
        return EAGER_NOT_FAST;
    if (!comm_src_ok(c, src, peer))
        return QUAY_ESTATE;
    quay_req *r;
    if (match_exact_only(e, c)) {
        /* The commonest case, match.c's work inline: no wildcard can be
         * older, nothing else to keep in step. */
        r = match_bin_head(&e->m, c->ctx, src, tag);
        if (r == NULL)
            return EAGER_NOT_FAST;
        ql_remove(&r->link);
        if (r->state != QUAY_RS_RECV_RTR && r->state != QUAY_RS_RECV_ANY)
            c->nplain--;
    } else {
        r = match_find_posted(e, c, src, tag);
        if (r == NULL || (r->flags & RF_ANY_CLAIMED))
            return EAGER_NOT_FAST; /* a claimed wildcard: the general path waits */
        match_remove_posted(e, r);
    }
    if (r->state == QUAY_RS_RECV_RTR)
        rtr_undelegate(e, r); /* the envelope got there first */
    else if (r->state == QUAY_RS_RECV_ANY)
        arb_release(e, r);
    if (e->trace_fn)
        trace_match(e, r, NULL, peer, ps->rx_seq, c->ctx, src, tag);
    ps->rx_seq++;
    r->peer = peer;
    r->status.source = src;
    r->status.tag = tag;
    size_t n = (size_t)mlen;
    if (n > r->len) {
        n = r->len;
        r->status.error = QUAY_ETRUNCATE;
    }
    if (n != 0)
        copy_payload(r->u.rbuf, b + WIRE_ENV_LEN, n);
    r->status.count = n;
    req_complete(e, r);
    return 0;
}

int eager_on_ack(quay_engine *e, int32_t peer, const wire_hdr *h)
{
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
