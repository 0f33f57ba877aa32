/*
 * rtr_snap.c — the context blob's RTRS section (snap.h), present with
 * rtr on: the sequenced control queue (each item must encode to a packet
 * wire_decode admits), each peer's table of delegated receives and
 * announcements, its envelope log and counters, then arbitration's
 * announcement slots (pattern, generation, pending receives, holders).
 * Flagged and queued sends are request states: rebuilt from REQS.
 */
#include "engine/snap.h"

#include <stdlib.h> /* qsort */

static void sx_rtr_ent(snap *s, rtr_ent *t)
{
    sx_u32(s, &t->ctx);
    sx_i32(s, &t->src);
    sx_i32(s, &t->tag);
    sx_u32(s, &t->rreq);
    sx_u32(s, &t->x);
    sx_u8(s, &t->live);
    sx_u8(s, &t->any);
    sx_u64(s, &t->cap);
    sx_u64(s, &t->key);
    if (s->mode != SNAP_SAVE && (t->src < 0 || t->tag < QUAY_ANY_TAG || t->rreq == 0 ||
                                 t->live > 1 || t->any > 1 ||
                                 (t->any && (s->e->aslots == NULL || !t->live || t->cap != 0 ||
                                             t->key != 0 || ANY_IDX(t->rreq) >= 255u))))
        snap_corrupt(s);
}

/* Arbitration: the announced patterns and who holds them. Flags and
 * queued sends are request states: rebuilt from the requests. */
static void sx_arb(snap *s)
{
    quay_engine *e = s->e;
    if (e->aslots == NULL || s->err != 0)
        return;
    int apply = s->mode == SNAP_APPLY;
    uint32_t nw = e->any_words;
    for (uint32_t i = 0; i < e->cfg.any_slots && s->err == 0; i++) {
        any_slot t = e->aslots[i];
        sx_u32(s, &t.ctx);
        sx_i32(s, &t.tag);
        sx_i32(s, &t.src);
        sx_u32(s, &t.gen);
        sx_u32(s, &t.npending);
        sx_u64(s, &t.used);
        sx_u8(s, &t.in_use);
        for (uint32_t w = 0; w < nw; w++) {
            uint64_t b = e->aslot_bits[(size_t)i * nw + w];
            sx_u64(s, &b);
            if (s->mode != SNAP_SAVE && w == nw - 1 && (e->nranks & 63) != 0 &&
                (b >> (e->nranks & 63)) != 0)
                snap_corrupt(s); /* bits past the last rank */
            if (apply)
                e->aslot_bits[(size_t)i * nw + w] = b;
        }
        if (s->mode == SNAP_SAVE)
            continue;
        /* The receives that use a slot say how many it has. */
        if (t.in_use > SLOT_STALE || t.gen > 0xFFFFFFu || t.src < 0 || t.tag < QUAY_ANY_TAG ||
            (t.in_use != SLOT_LIVE && t.npending != 0) ||
            (s->mode == SNAP_CHECK && s->slot_users[i] != t.npending))
            snap_corrupt(s);
        else if (apply)
            e->aslots[i] = t;
    }
    if (s->mode == SNAP_CHECK) {
        /* A peer's queued sends wait behind its flagged one. */
        for (int32_t p = 0; p < e->nranks && s->err == 0; p++)
            if (s->peer_arb[p] == ARB_QUEUED)
                snap_corrupt(s);
        return;
    }
    if (!apply || s->err != 0)
        return;
    /* Per peer: its send whose flag is out, its queued sends in order. */
    quay_req **order = NULL;
    uint32_t nq = 0;
    for (uint32_t k = 0; k < e->nreqs; k++)
        nq += e->reqs[k].state == QUAY_RS_SEND_QUEUED;
    if (nq != 0 && (order = qalloc(e, (size_t)nq * sizeof *order)) == NULL) {
        s->err = QUAY_ENOMEM;
        return;
    }
    nq = 0;
    for (uint32_t k = 0; k < e->nreqs; k++) {
        quay_req *r = &e->reqs[k];
        if (r->state == QUAY_RS_SEND_QUEUED) {
            order[nq++] = r;
        } else if (r->state == QUAY_RS_SEND_ANY) {
            e->peers[r->peer].any_send = r; /* one per peer: checked */
        }
    }
    if (nq > 1)
        qsort(order, nq, sizeof *order, snap_cmp_stamp);
    for (uint32_t k = 0; k < nq; k++) {
        ql_push_tail(&e->peers[order[k]->peer].any_waitq, &order[k]->link);
    }
    qfree(e, order);
}

void snap_rtr(snap *s)
{
    quay_engine *e = s->e;
    if (e->rtr_pool == NULL)
        return; /* the identity says whether the blob has any */
    int apply = s->mode == SNAP_APPLY;
    if (apply)
        rtr_attach(e); /* the peers' scalars were rewritten: re-point, empty */
    /* Queued work, in order. */
    uint32_t n = sx_count(s, e->rtrq_count, e->rtrq_cap);
    for (uint32_t k = 0; k < n && s->err == 0; k++) {
        rtr_item it;
        memset(&it, 0, sizeof it);
        if (s->mode == SNAP_SAVE)
            it = e->rtrq[(e->rtrq_head + k) % e->rtrq_cap];
        sx_u8(s, &it.pkt);
        sx_u8(s, &it.flags);
        sx_i32(s, &it.peer);
        sx_u32(s, &it.rreq);
        sx_u32(s, &it.sreq);
        sx_u32(s, &it.slot);
        sx_u32(s, &it.ctx);
        sx_i32(s, &it.src);
        sx_i32(s, &it.tag);
        sx_u64(s, &it.cap);
        sx_u64(s, &it.key);
        if (s->mode == SNAP_SAVE)
            continue;
        /* What the item will encode must be a packet wire_decode admits
         * (an RTR's fields carry nothing of arbitration). */
        int bad = it.peer < 0 || it.peer >= e->nranks || it.peer == e->rank;
        if (it.pkt == QUAY_PKT_RTR) {
            bad |= it.sreq != 0 || it.slot != 0;
        } else if (it.pkt < QUAY_PKT_ENA_ANY || it.pkt > QUAY_PKT_DISABLE_ANY ||
                   it.pkt == QUAY_PKT_ANY_FLAG || e->aslots == NULL) {
            bad = 1;
        }
        if (!bad) {
            wire_hdr h;
            uint8_t buf[QUAY_MAX_HEADER];
            memset(&h, 0, sizeof h);
            rtr_item_hdr(&it, &h);
            size_t hl = wire_encode(&h, buf);
            bad = wire_decode(buf, hl, &h) < 0;
        }
        if (bad)
            snap_corrupt(s);
        else if (apply) {
            e->rtrq[(e->rtrq_head + e->rtrq_count++) % e->rtrq_cap] = it;
            if (rtr_item_answers_flag(&it))
                e->peers[it.peer].flag_answer = 1;
        }
    }
    /* Per peer: its RTRs to us, our log of envelopes to it, our RTRs it
     * may hold. */
    for (int32_t p = 0; p < e->nranks && s->err == 0; p++) {
        peer_state *ps = &e->peers[p];
        uint32_t nr = sx_count(s, ps->nrtr, e->cfg.rtr_per_peer);
        for (uint32_t k = 0; k < nr && s->err == 0; k++) {
            rtr_ent t;
            memset(&t, 0, sizeof t);
            if (s->mode == SNAP_SAVE)
                t = ps->rtr[k];
            sx_rtr_ent(s, &t);
            if (apply)
                ps->rtr[ps->nrtr++] = t;
        }
        uint32_t nl = sx_count(s, ps->rlog_count, RTR_LOG);
        for (uint32_t k = 0; k < nl && s->err == 0; k++) {
            rtr_logent l = {0, 0, 0};
            if (s->mode == SNAP_SAVE)
                l = ps->rlog[(ps->rlog_head + k) % RTR_LOG];
            sx_u32(s, &l.seq);
            sx_u32(s, &l.ctx);
            sx_i32(s, &l.tag);
            if (apply)
                ps->rlog[(ps->rlog_head + ps->rlog_count++) % RTR_LOG] = l;
        }
        uint32_t lost = ps->rlog_lost, out = ps->rtr_out, unsent = ps->tx_unsent;
        sx_u32(s, &lost);
        sx_u32(s, &out);
        sx_u32(s, &unsent);
        if (apply)
            ps->tx_unsent = unsent;
        if (out > e->cfg.rtr_per_peer)
            snap_corrupt(s);
        if (apply) {
            ps->rlog_lost = lost;
            ps->rtr_out = out;
        }
    }
    sx_arb(s);
}
