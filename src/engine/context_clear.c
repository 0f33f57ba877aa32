/*
 * context_clear.c — a channel's context as the engine's pools hold it:
 * freeing what its objects hold outside the pools, rebuilding the free
 * lists from the slots, and emptying it for the next context (PM's C7
 * starts from an empty channel, or from a saved context that
 * src/snapshot.c puts back into the emptied one).
 *
 * The channel (pools, match bins, allocator, statistics, clock) outlives
 * its contexts; what a context owns is everything in those pools. Request
 * ids keep their generations across contexts, so an id from a context
 * that ran before can never name a request of this one.
 */
#include "engine/context_clear.h"

#include "engine/payload.h"

void context_free_heap(quay_engine *e)
{
    if (e->msgs != NULL)
        for (uint32_t i = 0; i < e->nmsgs; i++)
            if (e->msgs[i].where != UM_FREE)
                umsg_drop_payload(e, &e->msgs[i]);
    if (e->comms != NULL)
        for (uint32_t i = 0; i < e->ncomms_max; i++) {
            qfree(e, e->comms[i].world);
            qfree(e, e->comms[i].unexp_src);
            e->comms[i].world = NULL;
            e->comms[i].unexp_src = NULL;
        }
}

void context_rebuild_free(quay_engine *e)
{
    e->req_free = NULL;
    for (uint32_t i = e->nreqs; i-- > 0;) {
        quay_req *r = &e->reqs[i];
        if (r->state != QUAY_RS_FREE)
            continue;
        r->link.next = (qlink *)e->req_free;
        e->req_free = r;
    }
    e->msg_free = NULL;
    for (uint32_t i = e->nmsgs; i-- > 0;) {
        umsg *m = &e->msgs[i];
        if (m->where != UM_FREE)
            continue;
        m->blink.next = (qlink *)e->msg_free;
        e->msg_free = m;
    }
    mem_table *t = &e->mem;
    t->free = UINT32_MAX;
    for (uint32_t i = t->nregions; i-- > 0;) {
        if (t->regions[i].in_use)
            continue;
        t->regions[i].next_free = t->free;
        t->free = i;
    }
}

void context_clear(quay_engine *e, uint32_t key)
{
    context_free_heap(e);
    memset(e->comms, 0, (size_t)e->ncomms_max * sizeof *e->comms);
    comm_index_clear(e);
    e->ncomms = 0;
    e->ncomms_user = 0;
    e->last_comm = NULL;

    /* Free slots are already clean (req_release, umsg_free); only live
     * ones need clearing. Request ids and region generations stay, so
     * ids and keys of this context never name anything of the next. */
    for (uint32_t i = 0; i < e->nreqs; i++) {
        quay_req *r = &e->reqs[i];
        if (r->state != QUAY_RS_FREE) {
            uint32_t id = r->id;
            memset(r, 0, sizeof *r);
            r->id = id;
            ql_init(&r->clink);
        }
    }
    for (uint32_t i = 0; i < e->nmsgs; i++)
        if (e->msgs[i].where != UM_FREE)
            memset(&e->msgs[i], 0, sizeof e->msgs[i]);
    for (uint32_t i = 0; i < e->mem.nregions; i++) {
        mregion *m = &e->mem.regions[i];
        m->in_use = 0;
        m->base = NULL;
        m->len = 0;
    }
    context_rebuild_free(e);
    e->reqs_used = 0;
    e->mem.used = 0;
    e->mem.comm_scoped = 0;
    e->msgs_used = 0;
    e->ubytes = 0;
    e->held_bytes = 0;
    e->held_total = 0;

    /* Descriptors keep their generations (tokens stay unique). */
    e->out_free = NULL;
    for (uint32_t i = e->nouts; i-- > 0;) {
        qout *o = &e->outs[i];
        o->in_use = 0;
        o->next = e->out_free;
        e->out_free = o;
    }
    e->outs_used = 0;
    e->loop_head = e->loop_tail = NULL;
    e->ctrl_head = 0;
    e->ctrl_count = 0;
    e->ctrl_reserved = 0;

    ql_init(&e->txq);
    ql_init(&e->rdmaq);
    ql_init(&e->cq);
    ql_init(&e->orphans);
    e->norphans = 0;
    e->ndrain_blocked = 0;
    e->nfailed = 0;
    match_reset(e);
    memset(&e->bs, 0, sizeof e->bs);

    memset(e->peers, 0, (size_t)e->nranks * sizeof *e->peers);
    rtr_attach(e);
    for (int32_t p = 0; p < e->nranks; p++)
        ql_init(&e->peers[p].held);
    e->stamp = 0;
    e->chan_rr = 0;
    e->ka_next = 0;
    e->ka_idle_at = e->reqs_allocs;
    e->quiesced = 1;
    e->rare = 1;
    e->ctx_key = key;
}
