/*
 * engine_snap.c — the context blob's IDNT and ENGN sections (snap.h):
 * that the blob fits this channel, and the engine's own scalars.
 */
#include "engine/snap.h"

/* ---- identity: the blob fits this channel ------------------------------------ */

void snap_ident(snap *s)
{
    quay_engine *e = s->e;
    const quay_config *c = &e->cfg;
    /* Every field that shapes the state or the wire, as saved. */
    uint64_t v[30] = {
        (uint64_t)(uint32_t)c->rank, (uint64_t)(uint32_t)c->nranks, e->chan_id,
        c->channels, c->flags, c->seed, c->eager_max, c->frag_size,
        c->pipeline_depth, c->max_packet, c->max_requests, c->max_unexpected,
        c->unexpected_bytes_max, c->max_out, c->max_ctrl, c->max_comms,
        c->reorder_window, c->transport_caps, c->flow, c->flow_window,
        c->rto_init_ns, c->rto_max_ns, c->retry_limit, c->flow_credits,
        c->max_regions, c->rndv_mode, c->rtr, c->rtr_per_peer,
        c->rtr_any, c->any_slots,
    };
    uint32_t n = 30;
    sx_u32(s, &n);
    if (s->mode != SNAP_SAVE && s->err == 0 && n != 30) {
        s->err = QUAY_EFOREIGN;
        return;
    }
    for (uint32_t i = 0; i < 30; i++) {
        uint64_t x = v[i];
        sx_u64(s, &x);
        if (s->mode != SNAP_SAVE && s->err == 0 && x != v[i])
            s->err = QUAY_EFOREIGN;
    }
}

/* ---- engine scalars ------------------------------------------------------------ */

void snap_engine(snap *s)
{
    quay_engine *e = s->e;
    int apply = s->mode == SNAP_APPLY;
    uint32_t key = e->ctx_key, rr = e->chan_rr;
    uint64_t stamp = e->stamp, now = e->now, allocs = e->reqs_allocs;
    uint64_t idle = e->ka_idle_at, ka = e->ka_next;
    sx_u32(s, &key);
    sx_u64(s, &stamp);
    sx_u64(s, &now);
    sx_u64(s, &allocs);
    sx_u64(s, &idle);
    sx_u64(s, &ka);
    sx_u32(s, &rr);
    uint8_t *bbuf = e->bs.buf;
    size_t blen = e->bs.len;
    uint32_t bused = e->bs.nused;
    SX_PTR(s, bbuf, uint8_t *);
    sx_size(s, &blen);
    sx_u32(s, &bused);
    if (rr > (uint32_t)e->nranks || (bbuf == NULL && (blen != 0 || bused != 0)))
        snap_corrupt(s);
    s->saved_now = now;
    s->saved_stamp = stamp;
    s->bs_len = blen;
    s->bs_nused = bused;
    if (!apply)
        return;
    /* Timers restart from the channel's clock (it ran on meanwhile). */
    e->ctx_key = key;
    if (now > e->now)
        e->now = now;
    e->stamp = stamp;
    e->reqs_allocs = allocs > e->reqs_allocs ? allocs : e->reqs_allocs;
    e->ka_idle_at = idle;
    e->ka_next = ka != 0 ? ka + (e->now - now) : 0;
    e->chan_rr = rr;
    e->bs.buf = bbuf;
    e->bs.len = blen;
    e->bs.nused = bused;
}
