/*
 * comm_snap.c — the context blob's COMM section (snap.h): the live
 * communicators (slot, context id, size, rank, collective sequence, rank
 * map) and, after them, each collective twin linked to its user
 * communicator.
 */
#include "engine/snap.h"

/* A collective twin (context | QUAY_CTX_COLL) belongs to the user
 * communicator of its context, with the same size and rank: CHECK that
 * it has one, APPLY links it. */
static void comms_link_twins(snap *s)
{
    quay_engine *e = s->e;
    if (s->mode == SNAP_SAVE || s->err != 0)
        return;
    uint32_t nuser = 0;
    for (uint32_t i = 0; i < e->ncomms_max; i++)
        nuser += s->mode == SNAP_CHECK && s->comm_live[i] && !(s->comm_ctx[i] & QUAY_CTX_COLL);
    if (nuser > e->cfg.max_comms)
        snap_corrupt(s);
    for (uint32_t i = 0; i < e->ncomms_max; i++) {
        uint32_t ctx;
        int32_t size;
        if (s->mode == SNAP_CHECK) {
            if (!s->comm_live[i] || !(s->comm_ctx[i] & QUAY_CTX_COLL))
                continue;
            ctx = s->comm_ctx[i];
            size = s->comm_size[i];
        } else {
            if (!e->comms[i].in_use || !e->comms[i].internal)
                continue;
            ctx = e->comms[i].ctx;
            size = e->comms[i].size;
        }
        uint32_t p = 0;
        for (; p < e->ncomms_max; p++) {
            int live = s->mode == SNAP_CHECK ? s->comm_live[p] : e->comms[p].in_use;
            uint32_t pctx = s->mode == SNAP_CHECK ? s->comm_ctx[p] : e->comms[p].ctx;
            if (live && pctx == (ctx & ~QUAY_CTX_COLL))
                break;
        }
        int32_t psize = p == e->ncomms_max ? 0
                        : s->mode == SNAP_CHECK ? s->comm_size[p] : e->comms[p].size;
        if (psize != size)
            snap_corrupt(s);
        else if (s->mode == SNAP_APPLY)
            e->comms[p].coll = &e->comms[i];
    }
}

void snap_comms(snap *s)
{
    quay_engine *e = s->e;
    uint32_t n = 0;
    if (s->mode == SNAP_SAVE)
        n = e->ncomms;
    n = sx_count(s, n, e->ncomms_max);
    uint32_t slot = 0;
    for (uint32_t k = 0; k < n && s->err == 0; k++) {
        quay_comm tmp, *c = &tmp;
        memset(&tmp, 0, sizeof tmp);
        if (s->mode == SNAP_SAVE) {
            while (!e->comms[slot].in_use)
                slot++;
            c = &e->comms[slot];
        }
        uint32_t idx = slot++;
        sx_u32(s, &idx);
        sx_u32(s, &c->ctx);
        sx_i32(s, &c->size);
        sx_i32(s, &c->myrank);
        sx_u32(s, &c->coll_seq);
        if (s->mode == SNAP_SAVE) {
            for (int32_t i = 0; i < c->size; i++)
                sx_i32(s, &c->world[i]);
            continue;
        }
        if (idx >= e->ncomms_max || c->size <= 0 || c->size > e->nranks ||
            c->myrank < 0 || c->myrank >= c->size) {
            snap_corrupt(s);
            return;
        }
        if (s->mode == SNAP_CHECK) {
            if (s->comm_live[idx])
                snap_corrupt(s);
            for (uint32_t j = 0; j < e->ncomms_max; j++)
                if (s->comm_live[j] && s->comm_ctx[j] == c->ctx)
                    snap_corrupt(s); /* context ids are unique */
            s->comm_live[idx] = 1;
            s->comm_size[idx] = c->size;
            s->comm_ctx[idx] = c->ctx;
            /* The map: in range, each world rank once, ours at myrank. */
            uint8_t *seen = s->rank_seen;
            memset(seen, 0, (size_t)e->nranks);
            for (int32_t i = 0; i < c->size; i++) {
                int32_t w = 0;
                sx_i32(s, &w);
                if (w < 0 || w >= e->nranks || seen[w] ||
                    (i == c->myrank) != (w == e->rank))
                    snap_corrupt(s);
                else
                    seen[w] = 1;
            }
            continue;
        }
        /* APPLY */
        quay_comm *d = &e->comms[idx];
        d->world = qalloc(e, (size_t)c->size * sizeof *d->world);
        d->unexp_src = qalloc(e, (size_t)c->size * sizeof *d->unexp_src);
        if (d->world == NULL || d->unexp_src == NULL) {
            s->err = QUAY_ENOMEM;
            return;
        }
        d->ctx = c->ctx;
        d->hkey = comm_hkey(e->cfg.seed, c->ctx);
        d->size = c->size;
        d->myrank = c->myrank;
        d->coll_seq = c->coll_seq;
        d->internal = (c->ctx & QUAY_CTX_COLL) != 0;
        for (int32_t i = 0; i < c->size; i++) {
            sx_i32(s, &d->world[i]);
            ql_init(&d->unexp_src[i]);
        }
        comm_note_identity(d);
        ql_init(&d->posted_wild);
        ql_init(&d->unexp_all);
        d->in_use = 1;
        comm_index_add(e, d);
        e->ncomms++;
        e->ncomms_user += !d->internal;
    }
    comms_link_twins(s);
}
