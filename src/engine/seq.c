/*
 * seq.c — per-peer envelope sequencing and message descriptors.
 *
 * Sequenced packets (packets.h: PK_SEQ) carry the sender's per-peer
 * sequence number and are processed strictly in that order, so matching
 * sees messages in send order even when the transport reorders (several
 * rails, the adversarial simulator): in its turn an envelope (EAGER, RTS)
 * is matched or kept, any other type goes to its protocol's on_turn
 * handler. A packet ahead of its turn is copied
 * into a descriptor and held, sorted by sequence; when the gap closes the
 * held run is processed in order. Bounds: a packet more than
 * reorder_window ahead is refused with QUAY_EAGAIN (not consumed); held
 * packets use at most half the descriptor pool and half the unexpected
 * byte budget, so an in-order packet always finds room that a flood of
 * early ones cannot take.
 */
#include "engine/payload.h"

/* ---- descriptor pool ------------------------------------------------------------ */

umsg *umsg_alloc(quay_engine *e)
{
    umsg *m = e->msg_free;
    if (m == NULL)
        return NULL;
    e->msg_free = (umsg *)m->blink.next;
    memset(m, 0, sizeof *m);
    ql_init(&m->blink);
    ql_init(&m->alink);
    ql_init(&m->slink);
    ql_init(&m->tlink);
    m->peer = -1;
    e->msgs_used++;
    return m;
}

/* When the link counts credit (peer_counts_credit) a message the engine
 * keeps holds one of its sender's credits until it is freed (the link
 * grants them back). */
static void umsg_take_credit(quay_engine *e, umsg *m, int32_t peer)
{
    if (peer_counts_credit(e) && peer != e->rank) {
        m->flags |= UMF_CREDIT;
        e->peers[peer].credit_held++;
    }
}

void umsg_free(quay_engine *e, umsg *m)
{
    if (m->flags & UMF_CREDIT) {
        e->peers[m->peer].credit_held--;
        m->flags &= (uint8_t)~UMF_CREDIT;
    }
    umsg_put(e, m);
}

/* Copy `len` payload bytes into m, within the unexpected budget. */
static int umsg_take_payload(quay_engine *e, umsg *m, const uint8_t *p, size_t len)
{
    m->len = len;
    if (len == 0)
        return 0;
    if (len > e->cfg.unexpected_bytes_max - e->ubytes)
        return QUAY_EAGAIN;
    m->data = len <= UPAY_SLOT ? upay_get(e) : NULL;
    m->pooled = m->data != NULL;
    if (m->data == NULL)
        m->data = qalloc(e, len);
    if (m->data == NULL)
        return QUAY_EAGAIN;
    memcpy(m->data, p, len);
    ubytes_add(e, len);
    return 0;
}

static void env_from_hdr(umsg *m, int32_t peer, const wire_hdr *h)
{
    m->type = h->type;
    m->flags = (uint8_t)(((h->flags & WIRE_F_SYNC) ? UMF_SYNC : 0) |
                         ((h->flags & WIRE_F_READY) ? UMF_READY : 0) |
                         ((h->flags & WIRE_F_KEY) ? UMF_KEY : 0) |
                         ((h->flags & WIRE_F_PUT_OK) ? UMF_PUT_OK : 0));
    m->key = h->key;
    m->peer = peer;
    m->ctx = h->ctx;
    m->src = h->src;
    m->tag = h->tag;
    m->seq = h->seq;
    m->sreq = h->sreq;
    m->target = h->target;
    m->len = h->type == QUAY_PKT_EAGER ? 0 : h->len;
    m->rreq = h->rreq;
    m->x = h->x;
    m->status = h->status;
    /* (an envelope's flags are in m->flags; the other types keep theirs) */
    m->rflags = pkt_is(h->type, PK_MATCH) ? 0 : (uint8_t)h->flags;
    m->slot = h->slot;
}

umsg *msg_find_by_seq(quay_engine *e, int32_t peer, uint32_t seq)
{
    for (uint32_t i = 0; i < e->nmsgs; i++) {
        umsg *m = &e->msgs[i];
        if ((m->where == UM_UNEXP || m->where == UM_ORPHAN) && m->peer == peer &&
            m->seq == seq && m->type != QUAY_PKT_CANCEL_REQ)
            return m;
    }
    return NULL;
}

/* ---- in-order processing ------------------------------------------------------------- */

/*
 * Process the in-order sequenced message `env` from `peer`. `data` is the
 * eager payload; `held` is env itself when it is a held descriptor (reused
 * or freed here), NULL for a packet straight off the wire (copied here if
 * it must wait). Returns 0 (consumed), QUAY_ESTATE (rejected; a held
 * descriptor is freed and counts consumed), or, nothing changed, either
 * QUAY_EAGAIN (no room to keep it as an unexpected message) or SEQ_WAIT
 * (it must wait for the engine's own progress: a reply slot; keeping it
 * costs a descriptor, not progress).
 */
#define SEQ_WAIT 1
static int seq_process(quay_engine *e, int32_t peer, umsg *env,
                       const uint8_t *data, size_t dlen, umsg *held)
{
    /* A sync or ready envelope's ACK needs a control slot. (The same
     * flag bits of the other sequenced types, in env->flags too, make
     * them wait alike.) */
    if ((env->flags & (UMF_SYNC | UMF_READY)) && !ctrl_space(e))
        return SEQ_WAIT;

    pkt_on_turn_fn *on_turn = pkt_info(env->type)->on_turn;
    if (on_turn != NULL) { /* not an envelope: its protocol takes it */
        int rc = on_turn(e, peer, env);
        if (rc == QUAY_EAGAIN)
            return SEQ_WAIT; /* no room to answer: nothing changed */
        if (held != NULL) {
            if (rc != 0)
                e->st.pkts_rejected++; /* consumed: its turn is over */
            umsg_free(e, held);
            return 0;
        }
        return rc;
    }

    quay_comm *c = comm_lookup(e, env->ctx);
    if (c != NULL) {
        if (!comm_src_ok(c, env->src, peer)) {
            if (held == NULL)
                return QUAY_ESTATE;
            e->st.pkts_rejected++;
            umsg_free(e, held);
            return 0;
        }
        quay_req *r = match_find_posted(e, c, env->src, env->tag);
        if (r != NULL) {
            match_remove_posted(e, r);
            if (e->trace_fn)
                trace_match(e, r, env, peer, env->seq, env->ctx, env->src, env->tag);
            p2p_deliver(e, r, env, data);
            if (held != NULL)
                umsg_free(e, held);
            return 0;
        }
    }

    /* No receive is posted: the message waits, holding its payload. */
    umsg *m = held;
    if (m == NULL) {
        m = umsg_alloc(e);
        if (m == NULL)
            return QUAY_EAGAIN;
        uint64_t rlen = env->len;
        *m = *env;
        ql_init(&m->blink);
        ql_init(&m->alink);
        ql_init(&m->slink);
        ql_init(&m->tlink);
        m->data = NULL;
        m->pooled = 0;
        if (env->type == QUAY_PKT_EAGER && !(env->flags & UMF_READY)) {
            if (umsg_take_payload(e, m, data, dlen) != 0) {
                m->len = 0;
                umsg_free(e, m);
                return QUAY_EAGAIN;
            }
        }
        m->len = env->type == QUAY_PKT_EAGER ? dlen : rlen;
        /* An envelope without payload (an RTS) takes a descriptor, not
         * payload room: it holds no credit, else unmatched RTSs could
         * keep every credit while the data of a transfer already matched
         * waits for one (a livelock). max_unexpected still bounds them
         * (back-pressure: QUAY_EAGAIN). */
        if (m->data != NULL || env->type == QUAY_PKT_EAGER)
            umsg_take_credit(e, m, peer);
    }
    if (env->flags & UMF_READY) {
        /* Ready send without a posted receive: an error at both ends. The
         * payload is dropped; the receive that later matches it reports
         * QUAY_ENOTPOSTED [design.md §4]. */
        umsg_drop_payload(e, m);
        m->flags |= UMF_POISON;
        ctrl_push(e, QUAY_PKT_ACK, peer, env->sreq, QUAY_ENOTPOSTED, 0);
    }
    if (c != NULL) {
        match_add_unexp(e, c, m);
    } else {
        m->where = UM_ORPHAN;
        m->comm = NULL;
        ql_push_tail(&e->orphans, &m->alink);
        e->norphans++;
    }
    return 0;
}

/* ---- holding and draining ---------------------------------------------------------------- */

/* Hold a packet ahead of its turn (d > 0), or one in its turn that
 * cannot be processed yet (d == 0: the caller marks the drain blocked). */
static int seq_hold(quay_engine *e, int32_t peer, const wire_hdr *h,
                    const uint8_t *payload, size_t plen)
{
    peer_state *ps = &e->peers[peer];
    uint32_t d = h->seq - ps->rx_seq;

    /* A comm we know must agree with the claimed source rank. */
    if (pkt_is(h->type, PK_SRC)) {
        quay_comm *c = comm_lookup(e, h->ctx);
        if (c != NULL && !comm_src_ok(c, h->src, peer))
            return QUAY_ESTATE;
    }
    qlink *pos = &ps->held;
    for (qlink *n = ps->held.next; n != &ps->held; n = n->next) {
        umsg *o = QUAY_CONTAINER_OF(n, umsg, blink);
        uint32_t od = o->seq - ps->rx_seq;
        if (od == d)
            return QUAY_ESTATE; /* duplicate of a held packet */
        if (od > d) {
            pos = n;
            break;
        }
    }
    size_t bytes = h->type == QUAY_PKT_EAGER ? plen : 0;
    /* Early packets get half the pools; one in its turn may use any room
     * an unexpected message could. */
    if (d != 0 && (e->held_total >= e->nmsgs / 2 ||
                   bytes > e->cfg.unexpected_bytes_max / 2 - e->held_bytes))
        return QUAY_EAGAIN;
    umsg *m = umsg_alloc(e);
    if (m == NULL)
        return QUAY_EAGAIN;
    env_from_hdr(m, peer, h);
    if (h->type == QUAY_PKT_EAGER && umsg_take_payload(e, m, payload, plen) != 0) {
        m->len = 0;
        umsg_free(e, m);
        return QUAY_EAGAIN;
    }
    umsg_take_credit(e, m, peer);
    m->where = UM_HELD;
    ql_insert_before(pos, &m->blink);
    ps->nheld++;
    e->held_total++;
    e->held_bytes += bytes;
    return 0;
}

/* The packet at ps's turn is held and must be retried on later pulls. */
static void drain_block(quay_engine *e, peer_state *ps)
{
    if (!ps->drain_blocked) {
        ps->drain_blocked = 1;
        e->ndrain_blocked++;
        work_rare(e);
    }
}

static void seq_drain(quay_engine *e, int32_t peer)
{
    peer_state *ps = &e->peers[peer];
    qlink *n;
    while ((n = ql_first(&ps->held)) != NULL) {
        umsg *m = QUAY_CONTAINER_OF(n, umsg, blink);
        if (m->seq != ps->rx_seq)
            break;
        size_t bytes = m->type == QUAY_PKT_EAGER ? m->len : 0;
        ql_remove(&m->blink);
        ps->nheld--;
        e->held_total--;
        e->held_bytes -= bytes;
        m->where = UM_FREE;
        int rc = seq_process(e, peer, m, m->data, m->len, m);
        if (rc == QUAY_EAGAIN || rc == SEQ_WAIT) {
            /* Put it back at the head; retried on the next pull. */
            m->where = UM_HELD;
            ql_insert_before(ps->held.next, &m->blink);
            ps->nheld++;
            e->held_total++;
            e->held_bytes += bytes;
            drain_block(e, ps);
            return;
        }
        ps->rx_seq++;
    }
    if (ps->drain_blocked) {
        ps->drain_blocked = 0;
        e->ndrain_blocked--;
    }
}

void seq_retry_blocked(quay_engine *e)
{
    for (int32_t p = 0; p < e->nranks && e->ndrain_blocked > 0; p++)
        if (e->peers[p].drain_blocked)
            seq_drain(e, p);
}

int seq_on_packet(quay_engine *e, int32_t peer, const wire_hdr *h,
                  const uint8_t *payload, size_t plen)
{
    peer_state *ps = &e->peers[peer];
    uint32_t d = h->seq - ps->rx_seq;
    if (d >= 0x80000000u)
        return QUAY_ESTATE; /* behind the window: a duplicate or a replay */
    if (d >= e->cfg.reorder_window)
        return QUAY_EAGAIN; /* too far ahead: offer it again later */
    if (d > 0)
        return seq_hold(e, peer, h, payload, plen);
    if (ps->drain_blocked)
        return QUAY_ESTATE; /* its turn came while held: this is a copy */

    umsg env;
    memset(&env, 0, sizeof env);
    env_from_hdr(&env, peer, h);
    env.len = h->type == QUAY_PKT_EAGER ? plen : h->len;
    int rc = seq_process(e, peer, &env, payload, plen, NULL);
    if (rc == SEQ_WAIT) {
        if (seq_hold(e, peer, h, payload, plen) != 0)
            return QUAY_EAGAIN;
        /* It cannot be processed now (its first match waits on a claim,
         * no room for its reply): keep it and retry on later pulls rather
         * than refuse it. A refusal keeps the packet, and every later one,
         * in the sender's retransmission store, and on an ordered channel
         * blocks what follows it from that peer; with small pools two
         * ranks refusing each other while each waits for a descriptor
         * the other holds never recover (fuzz_sim, credit flow control:
         * an eager behind a wildcard claim whose RTR_ANY waited for a
         * descriptor, against a sync eager waiting for a reply slot). */
        drain_block(e, ps);
        return 0;
    }
    if (rc != 0)
        return rc;
    ps->rx_seq++;
    if (!ql_empty(&ps->held))
        seq_drain(e, peer);
    return 0;
}
