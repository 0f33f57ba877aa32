/*
 * arbitrate.c — ANY_SOURCE arbitration [MPIN §3.4] (config rtr_any).
 *
 * A wildcard receive cannot be delegated to one sender: data must not
 * move into it before the receiver has chosen whose message it takes.
 *
 *   receiver R                               sender P (every member)
 *   irecv(ANY, t): ENA_ANY(slot, ctx, t) -->  entry in P's RTR table,
 *     (once per pattern: it stays)            in post order
 *                                             isend(to R, tag t, large):
 *                                             the entry is first in line
 *   match the flag like an envelope     <--  ANY_FLAG(seq, envelope)
 *   it takes the wildcard receive W:          (later sends to R wait)
 *     claim W: matched, RTR_ANY(W,      -->  write (RDMA_PUT), then
 *     cap, key)                          <--  SC: W completes
 *   anything else (an earlier receive,
 *     W gone): DISABLE_ANY              -->  send the envelope instead
 *     (DROP: no wildcard of the pattern is pending: forget the entry)
 *   a new pattern, every slot in use: evict an idle one, DISABLE_ANY to
 *   its holders; all busy: the receive is matched the ordinary way.
 *
 * Why it is exactly-once and in MPI order:
 *  - The flag is sequenced like an envelope and carries one, so R decides
 *    with its own matcher, in P's send order, against every receive posted
 *    before (specific, delegated or wildcard) and after: the flag wins W
 *    only if W is the first posted receive P's message matches.
 *  - A claim is the match: W leaves the posted queue at once and later
 *    envelopes match what was posted after it. A cancel of either side
 *    after the claim fails (MPI: the message was matched). MPIN instead
 *    keeps W posted as a barrier until SC, so that a cancelled send can
 *    give W back (UNA_ANY); quay did too until messages held behind the
 *    barrier were found to fill the unexpected room and deadlock ranks
 *    under flow control (fuzz/crashes/sim/claim-barrier-*).
 *  - P has at most one flag out per receiver and queues later sends to it
 *    (SEND_QUEUED) until R answers: no later message of P overtakes the
 *    flagged one.
 *  - A W is announced only under the delegation rule (no undelegated
 *    receive of its communicator pending) and only if every member can
 *    hold the entry (bounded tables: rtr_per_peer, any_slots); otherwise
 *    it stays an ordinary receive (counted any_plain), which keeps later
 *    receives from being delegated. Envelopes from any sender still match
 *    an unclaimed W: arbitration is an offer, never a requirement.
 * The state table is in docs/arbitration.md.
 */
#include "engine/internal.h"

/* ---- the arbitration packets on the wire (registry: packets.h) ---------------- */

/* ENA_ANY, ANY_FLAG, RTR_ANY and DISABLE_ANY: one layout, WIRE_ANY_LEN
 * bytes, sequenced; each type uses some of the fields and the rest must
 * be zero (docs/wire.md). */
enum {
    ANY_SEQ = WIRE_OFF_SEQ,
    ANY_CTX = 8,
    ANY_SRC = 12,  /* the packet sender's comm rank */
    ANY_TAG = 16,
    ANY_RREQ = 20, /* the wildcard receive */
    ANY_SREQ = 24, /* the send that raised the flag */
    ANY_SLOT = 28, /* the announcement: ANY_ID */
    ANY_LEN = 32,  /* 8 */
    ANY_KEY = 40   /* 8 */
};

int any_decode(const uint8_t *b, size_t payload, wire_hdr *h)
{
    QUAY_UNUSED(payload);
    h->seq = wire_get32(b + ANY_SEQ);
    h->ctx = wire_get32(b + ANY_CTX);
    h->src = (int32_t)wire_get32(b + ANY_SRC);
    h->tag = (int32_t)wire_get32(b + ANY_TAG);
    h->rreq = wire_get32(b + ANY_RREQ);
    h->sreq = wire_get32(b + ANY_SREQ);
    h->slot = wire_get32(b + ANY_SLOT);
    h->len = wire_get64(b + ANY_LEN);
    h->key = wire_get64(b + ANY_KEY);
    if (h->src < 0)
        return QUAY_EPROTO;
    switch (h->type) {
    case QUAY_PKT_ENA_ANY: /* a pattern: tag or ANY_TAG */
        return h->tag < QUAY_ANY_TAG || h->slot == 0 || h->rreq != 0 || h->sreq != 0 ||
                       h->len != 0 || h->key != 0
                   ? QUAY_EPROTO
                   : 0;
    case QUAY_PKT_ANY_FLAG: /* an envelope: a real tag, the send's length */
        return h->tag < 0 || h->slot == 0 || h->sreq == 0 || h->rreq != 0 || h->key != 0
                   ? QUAY_EPROTO
                   : 0;
    case QUAY_PKT_RTR_ANY: /* the receive, its capacity and key */
        return h->tag != 0 || h->rreq == 0 || h->sreq == 0 || h->slot != 0 ? QUAY_EPROTO : 0;
    default: /* DISABLE_ANY: a flag's send (may drop) or none (drops) */
        return (h->sreq == 0 && h->flags != 0) || h->tag != 0 || h->slot == 0 ||
                       h->rreq != 0 || h->len != 0 || h->key != 0
                   ? QUAY_EPROTO
                   : 0;
    }
}

void any_encode(const wire_hdr *h, uint8_t *o)
{
    wire_put32(o + ANY_SEQ, h->seq);
    wire_put32(o + ANY_CTX, h->ctx);
    wire_put32(o + ANY_SRC, (uint32_t)h->src);
    wire_put32(o + ANY_TAG, (uint32_t)h->tag);
    wire_put32(o + ANY_RREQ, h->rreq);
    wire_put32(o + ANY_SREQ, h->sreq);
    wire_put32(o + ANY_SLOT, h->slot);
    wire_put64(o + ANY_LEN, h->len);
    wire_put64(o + ANY_KEY, h->key);
}

void arb_emit_flag(quay_req *r, qout *o)
{
    wire_hdr h;
    memset(&h, 0, sizeof h);
    h.type = QUAY_PKT_ANY_FLAG;
    h.seq = r->seq;
    h.ctx = r->ctx;
    h.src = r->comm->myrank;
    h.tag = r->tag;
    h.sreq = r->id;
    h.slot = r->slot;
    h.len = r->len;
    o->seq = r->seq;
    r->flags |= RF_ENV_SENT;
    out_encode(o, &h);
}

/* ---- the protocol --------------------------------------------------------------- */

#define NO_SLOT UINT32_MAX

static uint64_t *slot_bits(const quay_engine *e, uint32_t i)
{
    return e->aslot_bits + (size_t)i * e->any_words;
}
static int bit_get(const uint64_t *b, int32_t p) { return (int)((b[p >> 6] >> (p & 63)) & 1u); }
static void bit_set(uint64_t *b, int32_t p) { b[p >> 6] |= (uint64_t)1 << (p & 63); }
static void bit_clr(uint64_t *b, int32_t p) { b[p >> 6] &= ~((uint64_t)1 << (p & 63)); }

int arb_init(quay_engine *e)
{
    if (!e->cfg.rtr_any)
        return 0;
    e->any_words = ((uint32_t)e->nranks + 63) / 64;
    e->aslots = qalloc(e, (size_t)e->cfg.any_slots * sizeof *e->aslots);
    e->aslot_bits = qalloc(e, (size_t)e->cfg.any_slots * e->any_words * sizeof(uint64_t));
    if (e->aslots == NULL || e->aslot_bits == NULL)
        return QUAY_ENOMEM;
    memset(e->aslots, 0, (size_t)e->cfg.any_slots * sizeof *e->aslots);
    arb_reset(e);
    return 0;
}

void arb_fini(quay_engine *e)
{
    qfree(e, e->aslots);
    qfree(e, e->aslot_bits);
    e->aslots = NULL;
    e->aslot_bits = NULL;
}

void arb_reset(quay_engine *e)
{
    for (int32_t p = 0; p < e->nranks; p++) {
        e->peers[p].any_send = NULL;
        ql_init(&e->peers[p].any_waitq);
    }
    if (e->aslots == NULL)
        return;
    /* Generations go on counting: an id from before never names a slot. */
    for (uint32_t i = 0; i < e->cfg.any_slots; i++) {
        any_slot *s = &e->aslots[i];
        s->in_use = 0;
        s->npending = 0;
        s->used = 0;
    }
    memset(e->aslot_bits, 0, (size_t)e->cfg.any_slots * e->any_words * sizeof(uint64_t));
}

/* ---- receiver ------------------------------------------------------------------ */

static uint32_t slot_find(const quay_engine *e, uint32_t ctx, int32_t tag)
{
    for (uint32_t i = 0; i < e->cfg.any_slots; i++) {
        const any_slot *s = &e->aslots[i];
        if (s->in_use == SLOT_LIVE && s->ctx == ctx && s->tag == tag)
            return i;
    }
    return NO_SLOT;
}

/* Tell every holder of slot i to drop it; the slot is then free. -1 if
 * the queue has no room for the withdrawals. */
static int slot_withdraw(quay_engine *e, uint32_t i)
{
    any_slot *s = &e->aslots[i];
    uint64_t *b = slot_bits(e, i);
    uint32_t holders = 0;
    for (uint32_t w = 0; w < e->any_words; w++)
        holders += (uint32_t)__builtin_popcountll(b[w]);
    if (rtrq_room(e) < holders)
        return -1;
    for (int32_t p = 0; p < e->nranks; p++) {
        if (!bit_get(b, p))
            continue;
        rtr_item *it = rtrq_push_item(e, QUAY_PKT_DISABLE_ANY, p);
        it->ctx = s->ctx;
        it->src = s->src;
        it->slot = ANY_ID(i, s->gen);
        e->peers[p].rtr_out--;
    }
    memset(b, 0, e->any_words * sizeof *b);
    s->in_use = 0;
    return 0;
}

/* A slot for a new pattern: a free one, else the idle one used longest
 * ago (a stale one first), whose holders are told to drop it. NO_SLOT if
 * every slot has receives pending or the queue has no room for the
 * withdrawals. */
static uint32_t slot_take(quay_engine *e, uint32_t ctx, int32_t tag, int32_t myrank)
{
    uint32_t best = NO_SLOT;
    for (uint32_t i = 0; i < e->cfg.any_slots; i++) {
        const any_slot *s = &e->aslots[i];
        if (!s->in_use) {
            best = i;
            break;
        }
        if (s->npending == 0 && (best == NO_SLOT || s->used < e->aslots[best].used))
            best = i;
    }
    if (best == NO_SLOT)
        return NO_SLOT;
    any_slot *s = &e->aslots[best];
    if (s->in_use) {
        if (slot_withdraw(e, best) != 0)
            return NO_SLOT;
        e->st.any_evicted++;
    }
    s->gen = (s->gen + 1) & 0xFFFFFFu;
    s->in_use = SLOT_LIVE;
    s->ctx = ctx;
    s->tag = tag;
    s->src = myrank;
    s->npending = 0;
    return best;
}

/* A communicator is freed: its announcements are stale. Withdraw them
 * now, or (no queue room) mark them to be evicted before any other. */
void arb_comm_freed(quay_engine *e, uint32_t ctx)
{
    if (e->aslots == NULL)
        return;
    for (uint32_t i = 0; i < e->cfg.any_slots; i++) {
        any_slot *s = &e->aslots[i];
        if (s->in_use != SLOT_LIVE || s->ctx != ctx)
            continue;
        if (slot_withdraw(e, i) == 0) {
            e->st.any_evicted++;
        } else {
            s->in_use = SLOT_STALE;
            s->used = 0;
        }
    }
}

void arb_post(quay_engine *e, quay_req *r)
{
    quay_comm *c = r->comm;
    if (e->aslots == NULL || c->nplain != 0 || c->size < 2)
        return;
    uint32_t i = slot_find(e, r->ctx, r->tag);
    if (i == NO_SLOT)
        i = slot_take(e, r->ctx, r->tag, c->myrank);
    if (i == NO_SLOT) {
        e->st.any_plain++;
        return;
    }
    any_slot *s = &e->aslots[i];
    uint64_t *b = slot_bits(e, i);
    /* Every member must hold the announcement: one that does not could
     * write a receive posted after this one ahead of it. */
    uint32_t need = 0;
    for (int32_t m = 0; m < c->size; m++) {
        int32_t p = comm_world(c, m);
        if (p == e->rank || e->peers[p].failed || bit_get(b, p))
            continue;
        if (e->peers[p].rtr_out >= e->cfg.rtr_per_peer) {
            e->st.any_plain++;
            return;
        }
        need++;
    }
    if (rtrq_room(e) < need ||
        mem_register(e, r->u.rbuf, r->len, QUAY_MEM_WRITE, 1, MEM_SCOPE_NONE, 0, &r->lkey) != 0) {
        e->st.any_plain++;
        return;
    }
    for (int32_t m = 0; m < c->size; m++) {
        int32_t p = comm_world(c, m);
        if (p == e->rank || e->peers[p].failed || bit_get(b, p))
            continue;
        rtr_item *it = rtrq_push_item(e, QUAY_PKT_ENA_ANY, p);
        it->ctx = r->ctx;
        it->src = c->myrank;
        it->tag = r->tag;
        it->slot = ANY_ID(i, s->gen);
        e->peers[p].rtr_out++;
        bit_set(b, p);
    }
    e->st.any_announced += need;
    if (need == 0)
        e->st.any_reused++;
    s->npending++;
    s->used = e->stamp + 1;
    r->slot = i + 1;
    req_set_state(e, r, QUAY_RS_RECV_ANY);
}

void arb_release(quay_engine *e, quay_req *r)
{
    mem_release_internal(e, &r->lkey);
    if (r->slot != 0) {
        e->aslots[r->slot - 1].npending--;
        r->slot = 0;
    }
}

void arb_cancel(quay_engine *e, quay_req *r)
{
    /* Claimed is matched: too late to cancel, its SC completes it. */
    if (!(r->flags & RF_ANY_CLAIMED))
        recv_unpost_cancelled(e, r);
}

/* A flag: match it as the envelope it carries. */
static int on_flag(quay_engine *e, int32_t peer, const umsg *m)
{
    uint32_t idx = ANY_IDX(m->slot);
    if (idx >= e->cfg.any_slots)
        return QUAY_ESTATE;
    quay_comm *c = comm_lookup(e, m->ctx);
    if (c != NULL && !comm_src_ok(c, m->src, peer))
        return QUAY_ESTATE;
    /* one answer queued per peer (the rtrq's bound, rtr_init): a flag
     * behind an unsent answer waits, as one with no room does */
    if (rtrq_room(e) == 0 || e->peers[peer].flag_answer)
        return QUAY_EAGAIN;
    e->peers[peer].flag_answer = 1; /* (both ways below answer) */
    quay_req *r = c != NULL ? match_find_posted(e, c, m->src, m->tag) : NULL;
    if (r != NULL && r->state == QUAY_RS_RECV_ANY) {
        /* The flag's message matches W: W leaves the posted queue now, as
         * it would for its envelope; the data and SC complete it. */
        match_remove_posted(e, r);
        if (e->trace_fn)
            trace_match(e, r, m, peer, m->seq, m->ctx, m->src, m->tag);
        r->flags |= RF_ANY_CLAIMED;
        r->peer = peer;
        r->sreq = m->sreq;
        r->msg_len = m->len;
        r->status.source = m->src;
        r->status.tag = m->tag;
        rtr_item *it = rtrq_push_item(e, QUAY_PKT_RTR_ANY, peer);
        it->ctx = r->ctx;
        it->src = c->myrank;
        it->rreq = r->id;
        it->sreq = m->sreq;
        it->cap = r->len;
        it->key = r->lkey;
        mem_bind(e, r->lkey, peer); /* the key is good for the claimant alone */
        e->st.any_claimed++;
        return 0;
    }
    /* Not for W now: the sender sends its envelope, which our matcher
     * places. With nothing of the pattern
     * pending, the sender forgets the announcement too. */
    any_slot *s = &e->aslots[idx];
    uint64_t *b = slot_bits(e, idx);
    int current = s->in_use && ANY_ID(idx, s->gen) == m->slot;
    rtr_item *it = rtrq_push_item(e, QUAY_PKT_DISABLE_ANY, peer);
    it->ctx = m->ctx;
    /* (communicator freed and the slot since reused: our rank in it is
     * unknown; the sender goes by sreq and ctx) */
    it->src = c != NULL ? c->myrank : current ? s->src : 0;
    it->sreq = m->sreq;
    it->slot = m->slot;
    if (current && s->npending == 0 && bit_get(b, peer)) {
        bit_clr(b, peer);
        e->peers[peer].rtr_out--;
        it->flags = WIRE_F_DROP;
    }
    e->st.any_declined++;
    return 0;
}

int arb_on_sc(quay_engine *e, int32_t peer, quay_req *r, const umsg *m)
{
    if (!(r->flags & RF_ANY_CLAIMED) || r->peer != peer || r->sreq != m->sreq ||
        r->ctx != m->ctx || !comm_src_ok(r->comm, m->src, peer) ||
        (r->tag != QUAY_ANY_TAG && r->tag != m->tag))
        return QUAY_ESTATE;
    r->flags &= ~(uint32_t)RF_ANY_CLAIMED; /* matched at the claim */
    arb_release(e, r);
    rtr_sc_complete(e, r, m);
    return 0;
}

void arb_peer_failed(quay_engine *e, int32_t peer)
{
    if (e->aslots == NULL)
        return;
    peer_state *ps = &e->peers[peer];
    /* Its sends fail in the caller's sweep; they leave the queue now. */
    ps->any_send = NULL;
    qlink *n;
    while ((n = ql_first(&ps->any_waitq)) != NULL)
        ql_remove(n);
    for (uint32_t i = 0; i < e->cfg.any_slots; i++)
        bit_clr(slot_bits(e, i), peer);
}

/* ---- sender -------------------------------------------------------------------- */

int arb_must_queue(quay_engine *e, quay_req *r)
{
    if (e->aslots == NULL || r->peer == e->rank)
        return 0;
    peer_state *ps = &e->peers[r->peer];
    if (ps->any_send == NULL && ql_empty(&ps->any_waitq))
        return 0;
    r->stamp = ++e->stamp; /* order of the queue, for a snapshot */
    req_set_state(e, r, QUAY_RS_SEND_QUEUED);
    ql_push_tail(&ps->any_waitq, &r->link);
    return 1;
}

int arb_flag(quay_engine *e, quay_req *r, const rtr_ent *t)
{
    /* Up to eager_max the envelope carries the data: cheaper than asking. */
    if (e->aslots == NULL || r->len <= e->cfg.eager_max)
        return 0;
    e->peers[r->peer].any_send = r;
    r->slot = t->rreq;
    req_set_state(e, r, QUAY_RS_SEND_ANY);
    txq_add(e, r); /* the flag goes out with r's sequence number */
    e->st.any_flags++;
    return 1;
}

/* The peer answered r's flag: its later sends go, in order, until one of
 * them raises a flag again. */
static void release_queue(quay_engine *e, int32_t peer)
{
    peer_state *ps = &e->peers[peer];
    qlink *n;
    while (ps->any_send == NULL && (n = ql_first(&ps->any_waitq)) != NULL) {
        quay_req *q = QUAY_CONTAINER_OF(n, quay_req, link);
        ql_remove(&q->link);
        send_go(e, q);
    }
}

/* r never left (queued), or its flag was declined. */
static void send_cancelled(quay_engine *e, quay_req *r)
{
    r->flags |= RF_CANCELLED;
    r->flags &= ~(uint32_t)RF_ANY_CANCEL;
    r->status.cancelled = 1;
    r->status.error = QUAY_ECANCELLED;
    r->status.count = 0;
    r->saved_state = r->state;
    req_set_state(e, r, QUAY_RS_SEND_CANCEL);
    req_progress(e, r); /* completes once the flag's op_done is in */
}

void arb_cancel_send(quay_engine *e, quay_req *r)
{
    if (r->state == QUAY_RS_SEND_QUEUED) {
        ql_remove(&r->link);
        send_cancelled(e, r);
    } else {
        r->flags |= RF_ANY_CANCEL; /* decided by the receiver's answer */
    }
}

void arb_detach(quay_engine *e, quay_req *r)
{
    peer_state *ps = &e->peers[r->peer];
    if (r->state == QUAY_RS_SEND_QUEUED) {
        ql_remove(&r->link);
    } else if (ps->any_send == r) {
        ps->any_send = NULL;
        if (!ps->failed)
            release_queue(e, r->peer);
    }
}

static int find_any(const peer_state *ps, uint32_t id)
{
    for (uint32_t i = 0; i < ps->nrtr; i++)
        if (ps->rtr[i].any && ps->rtr[i].rreq == id)
            return (int)i;
    return -1;
}

static int on_ena(quay_engine *e, int32_t peer, const umsg *m)
{
    peer_state *ps = &e->peers[peer];
    quay_comm *c = comm_lookup(e, m->ctx);
    if (c != NULL && !comm_src_ok(c, m->src, peer))
        return QUAY_ESTATE;
    if (ANY_IDX(m->slot) >= 255u || ps->nrtr >= e->cfg.rtr_per_peer || find_any(ps, m->slot) >= 0)
        return QUAY_ESTATE; /* beyond the receiver's quota, or a duplicate */
    rtr_ent *t = &ps->rtr[ps->nrtr++];
    memset(t, 0, sizeof *t);
    t->any = 1;
    t->live = 1;
    t->ctx = m->ctx;
    t->src = m->src;
    t->tag = m->tag;
    t->rreq = m->slot;
    return 0;
}

/* The answer to our flag must name the send whose flag is out (a claim
 * also our destination's rank: a decline may come from a receiver that
 * freed the communicator and no longer knows it). */
static quay_req *flagged_send(quay_engine *e, int32_t peer, const umsg *m, int check_src)
{
    quay_req *r = req_by_id(e, m->sreq);
    if (r == NULL || r != e->peers[peer].any_send || r->kind != RK_SEND ||
        r->state != QUAY_RS_SEND_ANY || r->ctx != m->ctx || (check_src && r->rank != m->src))
        return NULL;
    return r;
}

static int on_rtr_any(quay_engine *e, int32_t peer, const umsg *m)
{
    peer_state *ps = &e->peers[peer];
    quay_req *r = flagged_send(e, peer, m, 1);
    if (r == NULL)
        return QUAY_ESTATE;
    ps->any_send = NULL;
    /* Claimed: the receiver matched the message, so a cancel asked for
     * meanwhile fails. Write into W, then SC under a new number (the flag
     * used r's). */
    r->flags &= ~(uint32_t)RF_ANY_CANCEL;
    r->seq = seq_assign(e, peer);
    rtr_write_start(e, r, m->rreq, m->key, m->len);
    release_queue(e, peer);
    return 0;
}

static int on_disable(quay_engine *e, int32_t peer, const umsg *m)
{
    peer_state *ps = &e->peers[peer];
    quay_req *r = NULL;
    if (m->sreq != 0 && (r = flagged_send(e, peer, m, 0)) == NULL)
        return QUAY_ESTATE;
    if (m->sreq == 0 || (m->rflags & WIRE_F_DROP)) {
        int i = find_any(ps, m->slot);
        if (i >= 0 && (ps->rtr[i].ctx != m->ctx || ps->rtr[i].src != m->src))
            i = -1; /* the withdrawal names the announcement it withdraws */
        if (i < 0)
            return QUAY_ESTATE; /* we hold every announcement it withdraws */
        rtr_ent_remove(ps, (uint32_t)i);
    }
    if (r == NULL)
        return 0;
    ps->any_send = NULL;
    if (r->flags & RF_ANY_CANCEL) {
        send_cancelled(e, r); /* nothing of it ever reached the receiver */
    } else {
        r->seq = seq_assign(e, peer);
        r->flags &= ~(uint32_t)RF_ENV_SENT;
        send_envelope(e, r);
    }
    release_queue(e, peer);
    return 0;
}

/* Arbitration packets come only to an engine that arbitrates, and never
 * from itself. */
static int arb_takes(const quay_engine *e, int32_t peer)
{
    return e->aslots != NULL && peer != e->rank;
}

int arb_on_ena(quay_engine *e, int32_t peer, const umsg *m)
{
    return arb_takes(e, peer) ? on_ena(e, peer, m) : QUAY_ESTATE;
}

int arb_on_flag(quay_engine *e, int32_t peer, const umsg *m)
{
    return arb_takes(e, peer) ? on_flag(e, peer, m) : QUAY_ESTATE;
}

int arb_on_rtr_any(quay_engine *e, int32_t peer, const umsg *m)
{
    return arb_takes(e, peer) ? on_rtr_any(e, peer, m) : QUAY_ESTATE;
}

int arb_on_disable(quay_engine *e, int32_t peer, const umsg *m)
{
    return arb_takes(e, peer) ? on_disable(e, peer, m) : QUAY_ESTATE;
}
