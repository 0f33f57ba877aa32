/*
 * peer_snap.c — the context blob's PEER section (snap.h): per peer, its
 * sequencing (seq.c: envelope numbers, drain, failure), the link's state
 * (through s->link: flowctl/fc_snap.c), its held packets in seq order
 * (match_snap.c's records) and the packets built for it but not yet given
 * a sequence number (quiesce held them; the link queues them).
 */
#include "engine/snap.h"

/* Sequencing, with the link's run of peer p's record in its place (the
 * link checks its own). */
static void sx_peer_scalars(snap *s, int32_t p, peer_state *ps, uint64_t delta)
{
    sx_u32(s, &ps->tx_seq);
    sx_u32(s, &ps->rx_seq);
    sx_u8(s, &ps->drain_blocked);
    sx_u8(s, &ps->failed);
    s->link->sx(s, p, ps->failed, delta);
}

static int peer_scalars_ok(const peer_state *ps)
{
    return ps->drain_blocked <= 1 && ps->failed <= 1;
}

/* A packet built but not yet given a sequence number (quiesce held it). */
static void sx_out(snap *s, const qout *src, int32_t peer, uint32_t *room)
{
    quay_engine *e = s->e;
    qout tmp, *o = &tmp;
    memset(&tmp, 0, sizeof tmp);
    uint32_t ri = SNAP_NONE;
    if (s->mode == SNAP_SAVE) {
        o = (qout *)(uintptr_t)src; /* (SAVE only reads it) */
        ri = snap_req_index(e, o->req);
    }
    sx_u8(s, &o->pkt);
    sx_u16(s, &o->hdr_len);
    sx_u32(s, &ri);
    SX_PTR(s, o->payload, const void *);
    sx_size(s, &o->payload_len);
    sx_u32(s, &o->seq);
    if (o->hdr_len > QUAY_MAX_HEADER) {
        snap_corrupt(s);
        return;
    }
    snap_raw(s, OUT_HDR(o), o->hdr_len);
    if (s->mode == SNAP_SAVE)
        return;
    if (s->err != 0 || !pkt_is(o->pkt, 0) ||
        o->hdr_len == 0 || snap_bad_index(ri, e->nreqs, 1) ||
        o->payload_len > e->cfg.max_packet - o->hdr_len ||
        (ri == SNAP_NONE && o->payload_len != 0) || *room == 0) {
        snap_corrupt(s);
        return;
    }
    (*room)--;
    if (s->mode == SNAP_CHECK) {
        if (ri != SNAP_NONE) {
            if (!(s->req_live[ri] & 1) || s->req_nout[ri] == 0)
                snap_corrupt(s);
            else
                s->req_nout[ri]--;
        }
        return;
    }
    qout *d = out_alloc(e);
    d->pkt = o->pkt;
    d->hdr_len = o->hdr_len;
    d->peer = peer;
    d->req = ri == SNAP_NONE ? NULL : &e->reqs[ri];
    d->payload = o->payload;
    d->payload_len = o->payload_len;
    d->seq = o->seq;
    memcpy(OUT_HDR(d), OUT_HDR(o), o->hdr_len);
    s->link->requeue(e, d);
}

void snap_peers(snap *s)
{
    quay_engine *e = s->e;
    uint32_t n = sx_count(s, (uint32_t)e->nranks, (uint32_t)e->nranks);
    if (n != (uint32_t)e->nranks)
        snap_corrupt(s);
    /* APPLY: snap_engine moved the clock to at least the saved time. */
    uint64_t delta = e->now > s->saved_now ? e->now - s->saved_now : 0;
    uint32_t room = e->nouts - e->outs_reserved;
    for (int32_t p = 0; p < e->nranks && s->err == 0; p++) {
        peer_state tmp, *ps = &tmp;
        memset(&tmp, 0, sizeof tmp);
        if (s->mode == SNAP_SAVE)
            ps = &e->peers[p];
        sx_peer_scalars(s, p, ps, delta);
        if (s->mode != SNAP_SAVE && (s->err != 0 || !peer_scalars_ok(ps))) {
            snap_corrupt(s);
            return;
        }
        if (s->mode == SNAP_APPLY) {
            peer_state *d = &e->peers[p];
            uint32_t credit_held = d->credit_held; /* messages restored so far */
            *d = tmp;
            ql_init(&d->held);
            d->nheld = 0;
            d->credit_held = credit_held;
            if (d->drain_blocked)
                e->ndrain_blocked++;
            if (d->failed)
                e->nfailed++;
        }
        /* held messages, sorted by seq, all ahead of rx_seq */
        uint32_t nh = 0;
        if (s->mode == SNAP_SAVE)
            nh = ps->nheld;
        nh = sx_count(s, nh, e->nmsgs);
        uint32_t prev = ps->rx_seq;
        if (s->mode == SNAP_SAVE) {
            for (qlink *l = ql_first(&ps->held); l != NULL; l = ql_next(&ps->held, l))
                snap_held_msg(s, QUAY_CONTAINER_OF(l, umsg, blink), p, &prev);
        } else {
            prev = tmp.rx_seq - 1u;
            for (uint32_t k = 0; k < nh && s->err == 0; k++)
                snap_held_msg(s, NULL, p, &prev);
        }
        /* Saved stable: nothing owed to the peer (with the credit its
         * messages hold, now all counted). */
        if (s->mode == SNAP_CHECK && p != e->rank && !tmp.failed &&
            s->link->owes(s, p, s->credit_held[p]))
            snap_corrupt(s);
        /* packets queued for a sequence number */
        uint32_t no = 0;
        if (s->mode == SNAP_SAVE)
            for (const qout *o = s->link->queued(e, p, NULL); o != NULL;
                 o = s->link->queued(e, p, o))
                no++;
        no = sx_count(s, no, e->nouts);
        if (s->mode == SNAP_SAVE) {
            for (const qout *o = s->link->queued(e, p, NULL); o != NULL;
                 o = s->link->queued(e, p, o))
                sx_out(s, o, p, &room);
        } else {
            for (uint32_t k = 0; k < no && s->err == 0; k++)
                sx_out(s, NULL, p, &room);
        }
    }
}
