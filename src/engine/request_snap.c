/*
 * request_snap.c — the context blob's RIDS and REQS sections (snap.h):
 * every request slot's id, then each live request with every field, then
 * the posted receives (post order), the emit, completion and one-sided
 * queues as slot lists. CHECK holds each request to what its kind and
 * state allow and counts what later sections must agree with (queued
 * packets per request, FINs owed, arbitration's flags and queues).
 */
#include "engine/snap.h"

#include <stdlib.h> /* qsort */

/* ---- request ids (generations of every slot) ------------------------------------ */

void snap_reqids(snap *s)
{
    quay_engine *e = s->e;
    uint32_t n = sx_count(s, e->nreqs, e->nreqs);
    if (n != e->nreqs)
        snap_corrupt(s);
    for (uint32_t i = 0; i < n && s->err == 0; i++) {
        uint32_t id = e->reqs[i].id;
        sx_u32(s, &id);
        if ((id & REQ_IDX_MASK) != i)
            snap_corrupt(s);
        if (s->mode == SNAP_APPLY)
            e->reqs[i].id = id;
    }
}

/* ---- requests ------------------------------------------------------------------- */

static int req_state_ok(const quay_req *r)
{
    if (r->state == QUAY_RS_DONE)
        return 1;
    if (r->kind == RK_SEND)
        return r->state >= QUAY_RS_SEND_EAGER && r->state <= QUAY_RS_SEND_QUEUED;
    if (r->kind == RK_RDMA)
        return r->state == QUAY_RS_RDMA;
    return r->state >= QUAY_RS_RECV_POSTED && r->state <= QUAY_RS_RECV_ANY;
}

/* In the posted queue (delegated or not). */
static int req_posted(const quay_req *r)
{
    return r->state == QUAY_RS_RECV_POSTED || r->state == QUAY_RS_RECV_RTR ||
           (r->state == QUAY_RS_RECV_ANY && !(r->flags & RF_ANY_CLAIMED));
}

/* An internal region key of this channel, live in the blob (CHECK). */
static int lkey_ok(const snap *s, uint64_t key)
{
    uint32_t idx, gen;
    if (mem_key_parse(s->e, key, &idx, &gen) != 0)
        return 0;
    return s->region_seen[idx] && s->region_int[idx] && s->region_gen[idx] == gen;
}

/* The RDMA rendezvous fields of r are consistent with its state. */
static int req_rdma_ok(const snap *s, const quay_req *r)
{
    int rdma_state = r->state == QUAY_RS_SEND_PUT || r->state == QUAY_RS_RECV_GET ||
                     r->state == QUAY_RS_RECV_PUT || r->state == QUAY_RS_SEND_WRITE;
    if (r->state == QUAY_RS_RECV_RTR &&
        (r->lkey == 0 || r->rank < 0 || s->e->rtr_pool == NULL))
        return 0; /* delegated: a specific source, its buffer exposed */
    /* Arbitration: an announced wildcard exposes its buffer and names its
     * slot; a claim names its sender; flags and queues need it on. */
    if (r->state == QUAY_RS_RECV_ANY &&
        (r->lkey == 0 || r->rank != QUAY_ANY_SOURCE || s->e->aslots == NULL ||
         r->slot == 0 || r->slot > s->e->cfg.any_slots ||
         ((r->flags & RF_ANY_CLAIMED) && (r->peer < 0 || r->peer == s->e->rank))))
        return 0;
    if (r->state != QUAY_RS_RECV_ANY && r->kind == RK_RECV && r->slot != 0)
        return 0;
    if ((r->flags & RF_ANY_CLAIMED) && r->state != QUAY_RS_RECV_ANY)
        return 0;
    if ((r->state == QUAY_RS_SEND_ANY || r->state == QUAY_RS_SEND_QUEUED) &&
        (s->e->aslots == NULL || r->peer < 0 || r->peer == s->e->rank ||
         (r->flags & (RF_ON_RDMAQ | RF_RNDV))))
        return 0;
    if ((r->flags & RF_ANY_CANCEL) && r->state != QUAY_RS_SEND_ANY)
        return 0;
    int saved = r->state == QUAY_RS_SEND_CANCEL ? r->saved_state : r->state;
    if (r->lkey != 0 && !(((r->flags & RF_GET_OFFER) && saved == QUAY_RS_SEND_RTS) ||
                          r->state == QUAY_RS_RECV_PUT || r->state == QUAY_RS_RECV_RTR ||
                          r->state == QUAY_RS_RECV_ANY))
        return 0;
    if (r->lkey != 0 && !lkey_ok(s, r->lkey))
        return 0;
    if (r->state == QUAY_RS_RECV_PUT && r->lkey == 0)
        return 0;
    if (((r->flags & RF_FIN_OWED) != 0) != (r->state == QUAY_RS_RECV_GET))
        return 0;
    if ((r->flags & RF_ON_RDMAQ) &&
        !(r->state == QUAY_RS_RDMA || r->state == QUAY_RS_SEND_PUT ||
          r->state == QUAY_RS_SEND_WRITE || r->state == QUAY_RS_RECV_GET))
        return 0;
    if (r->state == QUAY_RS_RDMA && !(r->flags & RF_ON_RDMAQ))
        return 0; /* stable: an unissued action waits on the queue */
    if (rdma_state &&
        (r->rv.accepted > r->len || r->rv.next_frag > r->rv.nfrags || r->rv.frags_done > r->rv.next_frag ||
         (r->rv.nfrags != 0 && (r->rv.frag == 0 || (uint64_t)r->rv.frag * r->rv.nfrags < r->rv.accepted))))
        return 0;
    return 1;
}

/* The packets r owes are its kind's: a grant for a receive, a FIN or SC
 * for a send. */
static int req_owe_ok(const quay_req *r)
{
    uint32_t mine = r->kind == RK_RECV   ? (uint32_t)REQ_OWES_CTS
                    : r->kind == RK_SEND ? (uint32_t)(REQ_OWES_FIN | REQ_OWES_SC)
                                         : 0u;
    return (r->owe & ~mine) == 0;
}

static int req_fields_ok(const snap *s, const quay_req *r, uint32_t ci, uint32_t boff)
{
    const quay_engine *e = s->e;
    if ((r->kind != RK_SEND && r->kind != RK_RECV && r->kind != RK_RDMA &&
         !(r->kind == RK_COLL && r->state == QUAY_RS_DONE)) ||
        (r->flags & RF_COLL) || !req_state_ok(r) ||
        r->mode > QUAY_SEND_BUFFERED || r->saved_state >= QUAY_RS_COUNT_ ||
        (r->flags & ~RF_ALL_FLAGS) || !req_owe_ok(r) || r->peer < -1 || r->peer >= e->nranks ||
        r->stamp > s->saved_stamp)
        return 0;
    /* Persistent: the user's point-to-point requests only. */
    if ((r->flags & RF_PERSIST) &&
        ((r->kind != RK_SEND && r->kind != RK_RECV) || (r->flags & RF_INTERNAL)))
        return 0;
    if (ci != SNAP_NONE) {
        if (ci >= e->ncomms_max || !s->comm_live[ci] || s->comm_ctx[ci] != r->ctx)
            return 0;
        int32_t size = s->comm_size[ci];
        if (req_posted(r) &&
            !(r->rank == QUAY_ANY_SOURCE || (r->rank >= 0 && r->rank < size)))
            return 0;
        if (req_posted(r) && r->tag < QUAY_ANY_TAG)
            return 0;
        if (r->kind == RK_SEND && r->state != QUAY_RS_DONE &&
            (r->rank < 0 || r->rank >= size))
            return 0;
    } else if (r->kind == RK_RDMA) {
        if (r->state != QUAY_RS_DONE && (r->peer < 0 || r->peer == e->rank))
            return 0; /* one-sided to self completes at once */
    } else if (r->state != QUAY_RS_DONE) {
        return 0; /* only completed requests (PROC_NULL) lack a comm */
    }
    /* Rendezvous bookkeeping stays inside the buffer and its fragments
     * while transferring (a reused slot keeps old values otherwise, and
     * each side uses its own subset of the fields). */
    int sending = r->state == QUAY_RS_SEND_DATA ||
                  (r->state == QUAY_RS_SEND_CANCEL && r->saved_state == QUAY_RS_SEND_DATA);
    if ((sending || r->state == QUAY_RS_RECV_RNDV) &&
        (r->rv.accepted > r->len || r->rv.grant > r->rv.nfrags ||
         (r->rv.nfrags != 0 && (r->rv.frag == 0 || (uint64_t)r->rv.frag * r->rv.nfrags < r->rv.accepted))))
        return 0;
    if (sending && (r->rv.next_frag > r->rv.nfrags || r->rv.frags_done > r->rv.nfrags ||
                    r->rv.cts_total > (r->rv.nfrags != 0 ? r->rv.nfrags : 1u)))
        return 0;
    if (r->state == QUAY_RS_RECV_RNDV && (r->rv.received > r->rv.accepted || r->rv.base > r->rv.nfrags))
        return 0;
    if (!req_rdma_ok(s, r))
        return 0;
    /* A buffered-send carrier owns a block of the attached buffer. */
    if (((r->flags & RF_INTERNAL) != 0) != (boff != SNAP_NONE))
        return 0;
    if (boff != SNAP_NONE &&
        (boff < QUAY_BSEND_OVERHEAD || boff > s->bs_len || r->len > s->bs_len - boff))
        return 0;
    return 1;
}

static void sx_req(snap *s, quay_req *r, uint32_t *ci, uint32_t *boff)
{
    sx_u8(s, &r->kind);
    sx_u8(s, &r->state);
    sx_u8(s, &r->mode);
    sx_u8(s, &r->saved_state);
    sx_u32(s, &r->flags);
    sx_u32(s, &r->owe);
    sx_u32(s, &r->nout);
    sx_u32(s, ci);
    sx_i32(s, &r->rank);
    sx_i32(s, &r->tag);
    sx_i32(s, &r->peer);
    sx_u32(s, &r->ctx);
    SX_PTR(s, r->u.rbuf, uint8_t *);
    sx_size(s, &r->len);
    sx_u64(s, &r->stamp);
    sx_i32(s, &r->status.source);
    sx_i32(s, &r->status.tag);
    sx_i32(s, &r->status.error);
    sx_i32(s, &r->status.cancelled);
    sx_u64(s, &r->status.count);
    SX_PTR(s, r->user, void *);
    sx_u32(s, &r->seq);
    sx_u32(s, &r->cancel_seq);
    sx_u32(s, &r->rreq);
    sx_u32(s, &r->sreq);
    sx_u64(s, &r->msg_len);
    if (r->kind == RK_RDMA) {
        sx_u64(s, &r->os.rkey);
        sx_u64(s, &r->os.roff);
        sx_u64(s, &r->os.operand);
        sx_u64(s, &r->os.compare);
    } else {
        sx_u64(s, &r->rv.accepted);
        sx_u32(s, &r->rv.frag);
        sx_u32(s, &r->rv.nfrags);
        sx_u32(s, &r->rv.grant);
        sx_u32(s, &r->rv.next_frag);
        sx_u32(s, &r->rv.frags_done);
        sx_u32(s, &r->rv.base);
        sx_u64(s, &r->rv.bitmap);
        sx_u64(s, &r->rv.received);
        sx_u32(s, &r->rv.ncts);
        sx_u64(s, &r->rv.cts_bits);
        sx_u32(s, &r->rv.cts_total);
        sx_u64(s, &r->rv.rkey);
    }
    sx_u64(s, &r->lkey);
    sx_u32(s, &r->slot);
    sx_u32(s, boff);
}

int snap_cmp_stamp(const void *a, const void *b)
{
    const quay_req *x = *(quay_req *const *)a, *y = *(quay_req *const *)b;
    return x->stamp < y->stamp ? -1 : x->stamp > y->stamp;
}

/* Index lists: posted receives in post order, txq, cq. */
static void sx_req_list(snap *s, int which, quay_req **order, uint32_t n_save)
{
    quay_engine *e = s->e;
    uint32_t n = sx_count(s, n_save, e->nreqs);
    uint16_t bit = (uint16_t)(2u << which);
    uint64_t last_stamp = 0;
    for (uint32_t k = 0; k < n && s->err == 0; k++) {
        uint32_t i = s->mode == SNAP_SAVE ? snap_req_index(e, order[k]) : 0;
        sx_u32(s, &i);
        if (s->mode == SNAP_SAVE)
            continue;
        if (i >= e->nreqs) {
            snap_corrupt(s);
            return;
        }
        if (s->mode == SNAP_CHECK) {
            if (!(s->req_live[i] & (32u << which)) || (s->req_live[i] & bit))
                snap_corrupt(s); /* listed once, and only if its state says so */
            s->req_live[i] |= bit;
            if (which == 0) { /* posted receives, oldest first */
                if (s->req_stamp[i] <= last_stamp)
                    snap_corrupt(s);
                last_stamp = s->req_stamp[i];
            }
            continue;
        }
        quay_req *r = &e->reqs[i];
        if (which == 0) {
            uint64_t st = r->stamp;
            match_add_posted(e, r); /* sets a new stamp: put the saved back */
            r->stamp = st;
        } else if (which == 1) {
            ql_push_tail(&e->txq, &r->link);
        } else if (which == 3) {
            ql_push_tail(&e->rdmaq, &r->link);
        } else {
            ql_push_tail(&e->cq, &r->clink);
        }
    }
    if (s->mode == SNAP_APPLY && which == 0)
        e->stamp = s->saved_stamp; /* match_add_posted counted on */
    if (s->mode == SNAP_CHECK) {
        uint32_t want = which == 0 ? s->nposted : which == 1 ? s->ntxq
                      : which == 2           ? s->ncq
                                             : s->nrdma;
        if (n != want)
            snap_corrupt(s);
    }
}

/* CHECK: count what arbitration's tables must agree with (rtr_snap.c). */
static void check_arb_req(snap *s, const quay_req *r)
{
    if (r->state == QUAY_RS_RECV_ANY) {
        s->slot_users[r->slot - 1]++; /* slot range: req_rdma_ok */
    } else if (r->state == QUAY_RS_SEND_ANY || r->state == QUAY_RS_SEND_QUEUED) {
        if (r->peer >= s->e->nranks) {
            snap_corrupt(s);
            return;
        }
        uint8_t bit = r->state == QUAY_RS_SEND_ANY ? ARB_FLAG : ARB_QUEUED;
        if (bit == ARB_FLAG && (s->peer_arb[r->peer] & ARB_FLAG))
            snap_corrupt(s); /* one flag per peer */
        s->peer_arb[r->peer] |= bit;
    }
}

void snap_reqs(snap *s)
{
    quay_engine *e = s->e;
    uint32_t n = sx_count(s, e->reqs_used, e->nreqs);
    uint32_t slot = 0;
    for (uint32_t k = 0; k < n && s->err == 0; k++) {
        quay_req tmp, *r = &tmp;
        memset(&tmp, 0, sizeof tmp);
        uint32_t ci = SNAP_NONE, boff = SNAP_NONE;
        if (s->mode == SNAP_SAVE) {
            while (e->reqs[slot].state == QUAY_RS_FREE)
                slot++;
            r = &e->reqs[slot];
            ci = r->comm ? (uint32_t)(r->comm - e->comms) : SNAP_NONE;
            if ((r->flags & RF_INTERNAL) && r->bsend_block != NULL)
                boff = (uint32_t)((uint8_t *)r->bsend_block - e->bs.buf);
        }
        uint32_t idx = slot++;
        sx_u32(s, &idx);
        sx_req(s, r, &ci, &boff);
        if (s->mode == SNAP_SAVE)
            continue;
        if (s->err != 0 || idx >= e->nreqs ||
            (s->mode == SNAP_CHECK && !req_fields_ok(s, r, ci, boff))) {
            snap_corrupt(s);
            return;
        }
        if (s->mode == SNAP_CHECK) {
            if (s->req_live[idx])
                snap_corrupt(s);
            s->req_live[idx] = (uint16_t)(1u | (req_posted(r) ? 32u : 0u) |
                                          ((r->flags & RF_ON_TXQ) ? 64u : 0u) |
                                          ((r->flags & RF_ON_CQ) ? 128u : 0u) |
                                          ((r->flags & RF_ON_RDMAQ) ? 256u : 0u));
            s->req_nout[idx] = r->nout;
            s->req_stamp[idx] = r->stamp;
            s->nposted += req_posted(r);
            s->ntxq += (r->flags & RF_ON_TXQ) != 0;
            s->ncq += (r->flags & RF_ON_CQ) != 0;
            s->nrdma += (r->flags & RF_ON_RDMAQ) != 0;
            s->fin_owed += (r->flags & RF_FIN_OWED) != 0;
            s->bs_blocks += boff != SNAP_NONE;
            check_arb_req(s, r);
            if ((req_posted(r) && (r->flags & (RF_ON_TXQ | RF_ON_RDMAQ))) ||
                (r->flags & (RF_ON_TXQ | RF_ON_RDMAQ)) == (RF_ON_TXQ | RF_ON_RDMAQ))
                snap_corrupt(s); /* one link, one list */
            continue;
        }
        quay_req *d = &e->reqs[idx];
        uint32_t id = d->id;
        *d = tmp;
        d->id = id;
        ql_init(&d->link);
        ql_init(&d->clink);
        d->comm = ci == SNAP_NONE ? NULL : &e->comms[ci];
        if (d->comm != NULL)
            d->comm->nreqs++;
        if (d->flags & RF_FIN_OWED)
            e->ctrl_reserved++;
        d->bsend_block = boff == SNAP_NONE ? NULL : e->bs.buf + boff;
        e->reqs_used++;
    }
    if (s->mode == SNAP_CHECK && s->bs_blocks != s->bs_nused)
        snap_corrupt(s);

    /* Lists, in order. */
    quay_req **order = NULL;
    uint32_t cnt[4] = {0, 0, 0, 0};
    if (s->mode == SNAP_SAVE && e->reqs_used != 0) {
        order = qalloc(e, (size_t)e->reqs_used * sizeof *order);
        if (order == NULL) {
            s->err = QUAY_ENOMEM;
            return;
        }
    }
    for (int which = 0; which < 4; which++) {
        if (s->mode == SNAP_SAVE) {
            uint32_t m = 0;
            if (which == 0) {
                for (uint32_t i = 0; i < e->nreqs; i++)
                    if (req_posted(&e->reqs[i]))
                        order[m++] = &e->reqs[i];
                if (m > 1)
                    qsort(order, m, sizeof *order, snap_cmp_stamp);
            } else {
                qlink *h = which == 1 ? &e->txq : which == 2 ? &e->cq : &e->rdmaq;
                for (qlink *l = ql_first(h); l != NULL; l = ql_next(h, l))
                    order[m++] = which != 2 ? QUAY_CONTAINER_OF(l, quay_req, link)
                                            : QUAY_CONTAINER_OF(l, quay_req, clink);
            }
            cnt[which] = m;
        }
        sx_req_list(s, which, order, cnt[which]);
    }
    qfree(e, order);
}
