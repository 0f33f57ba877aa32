/*
 * failure.c — a peer declared failed (flow control's retry limit passed,
 * or the transport said so: quay_on_peer_failed).
 *
 * Everything that depends on that peer ends with QUAY_EPEER and nothing
 * else is touched: its queued and unacknowledged packets are abandoned,
 * sends to it and transfers with it complete with the error, receives
 * posted for it specifically complete with the error, packets it sent and
 * we hold out of order are dropped, and later packets from it are rejected
 * (chan.c). Messages it delivered before failing stay receivable, and
 * wildcard receives stay posted: another sender may still satisfy them.
 */
#include "engine/internal.h"

static void fail_req(quay_engine *e, quay_req *r)
{
    if (r->status.error == 0)
        r->status.error = QUAY_EPEER;
    r->flags |= RF_FAILED;
    r->flags &= ~(uint32_t)RF_CANCEL_PENDING;
    r->owe &= ~(uint32_t)(REQ_OWES_CTS | REQ_OWES_FIN | REQ_OWES_SC);
    req_progress(e, r);
}

int32_t req_waits_on(const quay_engine *e, const quay_req *r)
{
    if (r->state == QUAY_RS_FREE || r->state == QUAY_RS_DONE)
        return -1;
    /* One-sided: the adapter owns the transfer and reports its failure
     * through op_done (the local memory is in use until then). */
    if (r->kind == RK_RDMA)
        return -1;
    if (r->state == QUAY_RS_RECV_POSTED || r->state == QUAY_RS_RECV_RTR)
        return r->rank != QUAY_ANY_SOURCE ? comm_world(r->comm, r->rank) : -1;
    if (r->state == QUAY_RS_RECV_ANY) /* a claim waits on its sender */
        return (r->flags & RF_ANY_CLAIMED) ? r->peer : -1;
    return r->peer != e->rank ? r->peer : -1;
}

void engine_peer_failed(quay_engine *e, int32_t peer)
{
    peer_state *ps = &e->peers[peer];
    if (ps->failed)
        return;
    ps->failed = 1;
    e->nfailed++;
    e->st.peers_failed++;

    qlink *n;
    while ((n = ql_first(&ps->held)) != NULL) {
        umsg *m = QUAY_CONTAINER_OF(n, umsg, blink);
        ql_remove(&m->blink);
        ps->nheld--;
        e->held_total--;
        if (m->type == QUAY_PKT_EAGER)
            e->held_bytes -= m->len;
        umsg_free(e, m);
    }
    if (ps->drain_blocked) {
        ps->drain_blocked = 0;
        e->ndrain_blocked--;
    }

    for (uint32_t i = 0; i < e->nreqs; i++) {
        quay_req *r = &e->reqs[i];
        if (req_waits_on(e, r) != peer)
            continue;
        if (r->state == QUAY_RS_RECV_POSTED || r->state == QUAY_RS_RECV_RTR ||
            r->state == QUAY_RS_RECV_ANY) {
            if (!(r->flags & RF_ANY_CLAIMED)) /* a claimed one left at the claim */
                match_remove_posted(e, r);
            if (r->state == QUAY_RS_RECV_RTR) {
                rtr_undelegate(e, r); /* the peer is gone: nothing to tell */
            } else if (r->state == QUAY_RS_RECV_ANY) {
                /* Claimed by the failed peer: its data may be half
                 * written. status.source is the claimant, set at the claim. */
                r->flags &= ~(uint32_t)RF_ANY_CLAIMED;
                arb_release(e, r);
            }
            if (r->state != QUAY_RS_RECV_ANY)
                r->status.source = r->rank;
            r->status.tag = r->tag;
            r->status.error = QUAY_EPEER;
            req_complete(e, r);
            continue;
        }
        fail_req(e, r);
    }
    inq_drop_peer(e, peer); /* inline sends' packets: nobody waits on them */
    ps->nrtr = 0; /* its receives will never take our writes */
    arb_peer_failed(e, peer);
    /* Last: releasing descriptors lets the failed requests complete. */
    if (e->link != NULL)
        e->link->abandon(e, peer); /* its queued and unacknowledged packets */
}

void engine_peer_hostile(quay_engine *root, int32_t peer, int code)
{
    if (peer_failed(root, peer))
        return;
    root->st.peers_hostile++;
    if (root->trace_fn)
        trace_pkt(root, QUAY_TR_PEER_HOSTILE, 0, peer, 0, 0, code);
    quay_on_peer_failed(root, peer);
}

int quay_on_peer_failed(quay_engine *e, int32_t peer)
{
    if (e == NULL)
        return QUAY_EINVAL;
    e = e->root;
    if (peer < 0 || peer >= e->nranks || peer == e->rank)
        return QUAY_ERANK;
    for (uint32_t k = 0; k < e->nchans; k++) {
        quay_engine *ch = e->chans[k];
        if (ch->fatal)
            continue;
        engine_peer_failed(ch, peer);
        if (coll_has_ready(&ch->coll))
            ch->coll.hooks->progress(ch); /* failed steps end their schedules */
    }
    return e->fatal;
}
