/*
 * out_snap.c — the context blob's CTRL section (snap.h): the queued
 * control replies (ACK, CANCEL_REP, FIN), in queue order. The slots
 * reserved for FINs that requests owe must still fit beside them.
 */
#include "engine/snap.h"

void snap_ctrl(snap *s)
{
    quay_engine *e = s->e;
    uint32_t n = sx_count(s, e->ctrl_count, e->ctrl_cap);
    if (s->mode == SNAP_CHECK &&
        (n + s->fin_owed > e->ctrl_cap || s->fin_owed > e->ctrl_cap / 2))
        snap_corrupt(s); /* the reserved slots must still fit */
    for (uint32_t k = 0; k < n && s->err == 0; k++) {
        ctrl_item it = {0, 0, 0, 0, 0, 0};
        if (s->mode == SNAP_SAVE)
            it = e->ctrl[(e->ctrl_head + k) & e->ctrl_mask];
        sx_u8(s, &it.pkt);
        sx_i32(s, &it.peer);
        sx_u32(s, &it.sreq);
        sx_i32(s, &it.status);
        sx_u32(s, &it.rreq);
        sx_u8(s, &it.flags);
        if (s->mode == SNAP_SAVE)
            continue;
        /* a type that waits in the ring, with flags only if it keeps them
         * there (packets.h) */
        const pkt_type *t = pkt_info(it.pkt);
        if (it.flags & ~(t->props & PK_CTRL_FLAGS ? t->flags : 0))
            snap_corrupt(s);
        if (!pkt_is(it.pkt, PK_CTRL) || it.peer < 0 || it.peer >= e->nranks)
            snap_corrupt(s);
        else if (s->mode == SNAP_APPLY) {
            ctrl_push(e, it.pkt, it.peer, it.sreq, it.status, it.rreq)->flags = it.flags;
        }
    }
}
