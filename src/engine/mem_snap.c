/*
 * mem_snap.c — the context blob's REGN section (snap.h): every region
 * slot's generation (keys of this context never name a region of
 * another), then the registered regions.
 */
#include "engine/snap.h"

void snap_regions(snap *s)
{
    quay_engine *e = s->e;
    mem_table *t = &e->mem;
    uint32_t n = sx_count(s, t->nregions, t->nregions);
    if (n != t->nregions)
        snap_corrupt(s);
    for (uint32_t i = 0; i < n && s->err == 0; i++) {
        uint32_t gen = t->regions[i].gen;
        sx_u32(s, &gen);
        if (s->mode == SNAP_CHECK)
            s->region_gen[i] = gen;
        if (s->mode == SNAP_APPLY)
            t->regions[i].gen = gen;
    }
    uint32_t live = sx_count(s, t->used, t->nregions);
    uint32_t slot = 0;
    uint8_t *seen = s->mode == SNAP_CHECK ? s->region_seen : NULL;
    for (uint32_t k = 0; k < live && s->err == 0; k++) {
        mregion tmp, *m = &tmp;
        memset(&tmp, 0, sizeof tmp);
        if (s->mode == SNAP_SAVE) {
            while (!t->regions[slot].in_use)
                slot++;
            m = &t->regions[slot];
        }
        uint32_t idx = slot++;
        sx_u32(s, &idx);
        SX_PTR(s, m->base, void *);
        sx_u64(s, &m->len);
        sx_u8(s, &m->access);
        sx_u8(s, &m->internal);
        sx_i32(s, &m->scope);
        sx_u32(s, &m->scope_comm);
        if (s->mode == SNAP_SAVE)
            continue;
        /* A scope is a world rank, or a live user communicator (CHECK
         * knows which are: APPLY runs only on a blob CHECK passed). */
        int comm_ok = s->mode != SNAP_CHECK || m->scope != MEM_SCOPE_COMM ||
                      (m->scope_comm < e->ncomms_max && s->comm_live[m->scope_comm] &&
                       !(s->comm_ctx[m->scope_comm] & QUAY_CTX_COLL) && !m->internal);
        if (s->err != 0 || idx >= t->nregions || m->access == 0 ||
            (m->access & ~(uint32_t)(QUAY_MEM_READ | QUAY_MEM_WRITE)) || m->internal > 1 ||
            (m->base == NULL && m->len != 0) || m->scope < MEM_SCOPE_NONE ||
            m->scope >= e->nranks || !comm_ok) {
            snap_corrupt(s);
            return;
        }
        if (seen != NULL) {
            if (seen[idx])
                snap_corrupt(s);
            seen[idx] = 1;
            s->region_int[idx] = m->internal;
            continue;
        }
        mregion *d = &t->regions[idx];
        d->base = m->base;
        d->len = m->len;
        d->access = m->access;
        d->internal = m->internal;
        d->scope = m->scope;
        d->scope_comm = m->scope_comm;
        d->in_use = 1;
        t->used++;
        if (d->scope == MEM_SCOPE_COMM)
            t->comm_scoped++;
    }
}
