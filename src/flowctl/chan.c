/*
 * chan.c — the flow-control channel between the engine and the wire
 * (QUAY_FLOW_ACKNACK). Framing and the per-peer queues live here; the
 * Modified ACK/NACK decisions are ackn.c's. See chan.h for the frame.
 *
 * Per peer, packets the engine built wait on `pend` until the channel may
 * give them a sequence number (NORMAL, window not full, no retransmission
 * pending), then move to `unack` in sequence order and stay there, with
 * their header and user-memory slice, until a cumulative ACK covers them.
 * A descriptor is released (and its request progresses) only when it is
 * acknowledged AND the adapter has op_done'd every transmission of it:
 * a retransmission may be issued while an earlier one is still in the
 * adapter, so `refs` counts them. The frame (seq, ack, nack, CRC) is
 * written once, at the first transmission, and never rewritten, because
 * the adapter may still be reading it; a stale cumulative ACK in a
 * retransmitted frame is harmless.
 *
 * Retransmission storms [PM's own admitted limitation]: a receiver that
 * stays short of buffers NACKs every re-sent copy. The first NACK of a
 * message is answered at once, as PM does; each further NACK of the same
 * message holds (re)sending to that peer for rto_init·2^(n-1), capped at
 * rto_max. A NACK proves the peer alive, so this never counts toward
 * declaring it failed.
 */
#include "flowctl/chan.h"

#include "flowctl/crc32c.h"

void chan_init(quay_engine *e)
{
    if (!e->flow)
        return;
    e->fcp.rto_init_ns = e->cfg.rto_init_ns;
    e->fcp.rto_max_ns = e->cfg.rto_max_ns;
    e->fcp.retry_limit = e->cfg.retry_limit;
    e->fcp.window = e->cfg.flow_window;
    crc32c_table_init(e->crc_table);
    for (int32_t p = 0; p < e->nranks; p++) {
        peer_state *ps = &e->peers[p];
        fc_tx_init(&ps->tx, &e->fcp, 0);
        fc_rx_init(&ps->rx, 0);
        /* Both ends start from the same configured grant; a peer with a
         * smaller one refuses (NACK) what it cannot hold, until its first
         * frame corrects us. */
        ps->credit_limit = e->cfg.flow_credits;
        ps->credit_sent = e->cfg.flow_credits;
        ps->probe_rto = e->fcp.rto_init_ns;
    }
}

/* ---- credits (QUAY_FLOW_CREDIT) ---------------------------------------------- */

/* The peer's share: it may have sent every seq we accepted, plus
 * flow_credits more than the messages of it that we still hold. Never
 * decreases: accepting a kept message moves both terms. */
static uint32_t credit_share(const quay_engine *e, const peer_state *ps)
{
    return ps->rx.expected + e->cfg.flow_credits - ps->credit_held;
}

/* The limit we grant `ps`: its share, never below a grant already sent
 * (a loan, below, is repaid as the share catches up with it). */
static uint32_t credit_grant(const quay_engine *e, const peer_state *ps)
{
    uint32_t share = credit_share(e, ps);
    return fc_seq_lt(share, ps->credit_sent) ? ps->credit_sent : share;
}

static int comm_has_world(const quay_comm *c, int32_t peer)
{
    if (c->identity)
        return peer < c->size;
    for (int32_t i = 0; i < c->size; i++)
        if (comm_world(c, i) == peer)
            return 1;
    return 0;
}

/* 1 if a request of ours waits for something from `peer`: a receive
 * posted for it (or for any source of a communicator it is in), a
 * transfer with it. */
static int waits_on_peer(const quay_engine *e, int32_t peer)
{
    for (uint32_t i = 0; i < e->nreqs; i++) {
        const quay_req *r = &e->reqs[i];
        if (req_waits_on(e, r) == peer)
            return 1;
        if (r->kind == RK_RECV && r->rank == QUAY_ANY_SOURCE &&
            (r->state == QUAY_RS_RECV_POSTED || r->state == QUAY_RS_RECV_ANY) &&
            r->comm != NULL && comm_has_world(r->comm, peer))
            return 1;
    }
    return 0;
}

/*
 * A loan beyond the share. A sender whose every credit is held here by
 * messages we will match only later (early messages of a later
 * collective, say) cannot send the one we may be waiting for: a livelock
 * with a small share (docs/flowctl.md). So when `ps` says it is blocked,
 * every seq we granted it has arrived, a request of ours waits on it, and
 * the unexpected room has a free descriptor beyond the loans not yet
 * arrived, it gets one more. With no descriptor free it gets one only
 * after asking CREDIT_STALL_ASKS times with nothing from it arriving: the
 * message may be one we match at once, which needs no room (if not, it is
 * refused and resent until the room drains, as under ACK/NACK, one such
 * message per sender at a time: its grant is then ahead of what arrived).
 * A receiver that waits on nothing from the sender lends nothing: the
 * share holds, as the window test checks. A loan may take room another
 * peer's share counted on; if the room is gone when a message arrives it
 * is refused (NACK), the safety net credits keep.
 */
#define CREDIT_STALL_ASKS 4
static uint32_t credit_lend(quay_engine *e, peer_state *ps, uint32_t grant)
{
    if (!ps->peer_blocked || grant != ps->rx.expected)
        return grant;
    /* Loans not yet arrived (one that arrived and is kept already holds
     * its descriptor). */
    uint32_t due = 0;
    for (int32_t p = 0; p < e->nranks; p++) {
        const peer_state *q = &e->peers[p];
        uint32_t share = credit_share(e, q);
        if (fc_seq_lt(share, q->credit_sent) && fc_seq_lt(q->rx.expected, q->credit_sent)) {
            uint32_t lent = q->credit_sent - share, unarrived = q->credit_sent - q->rx.expected;
            due += lent < unarrived ? lent : unarrived;
        }
    }
    if (!waits_on_peer(e, (int32_t)(ps - e->peers)))
        return grant;
    if (e->nmsgs - e->msgs_used <= due) {
        if (ps->stall_seq != ps->rx.expected) {
            ps->stall_seq = ps->rx.expected;
            ps->stall_asks = 0;
        }
        if (++ps->stall_asks < CREDIT_STALL_ASKS)
            return grant;
        ps->stall_asks = 0;
    }
    e->st.credit_loans++;
    return grant + 1;
}

/* A grant worth a frame of its own: half the credits came back, or the
 * peer told us it is waiting (it probes: answer even with no new credit,
 * so that a full receiver is not taken for a dead one). */
static int credit_owed(const quay_engine *e, const peer_state *ps)
{
    if (e->flow != QUAY_FLOW_CREDIT)
        return 0;
    uint32_t more = credit_grant(e, ps) - ps->credit_sent;
    uint32_t half = e->cfg.flow_credits / 2 ? e->cfg.flow_credits / 2 : 1;
    return ps->peer_blocked || more >= half;
}

/* The channel would send something new but has no credit for it. */
static int credit_blocked(const quay_engine *e, const peer_state *ps)
{
    return e->flow == QUAY_FLOW_CREDIT && ps->pend_head != NULL &&
           fc_tx_can_send_new(&ps->tx, &e->fcp) &&
           !fc_seq_lt(ps->tx.next, ps->credit_limit);
}

/* Out of credit with nothing unacknowledged, no timer would ever run: a
 * lost grant would stall us. Arm the probe timer then; disarm it once
 * credit (or an unacknowledged packet, whose timer covers us) is there. */
static void credit_watch(quay_engine *e, peer_state *ps)
{
    if (credit_blocked(e, ps) && ps->tx.una == ps->tx.next) {
        if (ps->probe_at == 0)
            ps->probe_at = e->now + ps->probe_rto;
    } else {
        ps->probe_at = 0;
    }
}

/* ---- per-peer lists (singly linked through qout.next) ------------------- */

static void list_push(qout **head, qout **tail, qout *o)
{
    o->next = NULL;
    if (*tail != NULL)
        (*tail)->next = o;
    else
        *head = o;
    *tail = o;
}

static qout *list_pop(qout **head, qout **tail)
{
    qout *o = *head;
    if (o != NULL) {
        *head = o->next;
        if (*head == NULL)
            *tail = NULL;
        o->next = NULL;
    }
    return o;
}

void chan_submit(quay_engine *e, qout *o)
{
    peer_state *ps = &e->peers[o->peer];
    o->framed = 1;
    list_push(&ps->pend_head, &ps->pend_tail, o);
    if (e->flow == QUAY_FLOW_CREDIT)
        credit_watch(e, ps);
}

/* ---- frames ----------------------------------------------------------------- */

/* The CRC of a frame from world rank `from` to `to`. */
static uint32_t packet_crc(const quay_engine *e, int32_t from, int32_t to, const uint8_t *frame,
                           const uint8_t *rest, size_t rest_len,
                           const void *payload, size_t plen)
{
    static const uint8_t zero[4] = {0, 0, 0, 0};
    /* Seeded with the context key: a frame of another context fails the
     * check (for a given length, two seeds always give different CRCs).
     * Then its two ends, so that a frame delivered to anyone but its
     * receiver, or as if from anyone but its sender (fed back to it, say),
     * fails too: in one 32-bit word while ranks fit 16 bits, where any two
     * pairs always differ in the CRC. */
    uint8_t ends[8];
    size_t nends = 4;
    if (e->nranks <= 65536) {
        wire_put32(ends, (uint32_t)from | (uint32_t)to << 16);
    } else {
        wire_put32(ends, (uint32_t)from);
        wire_put32(ends + 4, (uint32_t)to);
        nends = 8;
    }
    uint32_t c = crc32c_update(e->crc_table, e->ctx_key, ends, nends);
    c = crc32c_update(e->crc_table, c, frame, 16);
    c = crc32c_update(e->crc_table, c, zero, 4);
    c = crc32c_update(e->crc_table, c, rest, rest_len);
    if (plen != 0)
        c = crc32c_update(e->crc_table, c, payload, plen);
    return c;
}

/* Write the frame of o (kind, seq) with the ACK/NACK owed to its peer. */
static void write_frame(quay_engine *e, qout *o, uint8_t kind, uint32_t seq)
{
    peer_state *ps = &e->peers[o->peer];
    uint8_t *f = o->hdr;
    uint32_t ack, nack = 0;
    uint16_t flags = (uint16_t)((uint32_t)e->chan_id << CHAN_F_CHAN_SHIFT);
    if (fc_rx_take_nack(&ps->rx, &nack)) {
        flags |= CHAN_F_NACK;
        ack = nack;
        if (ps->gap_nack_owed)
            e->st.gap_nacks++;
        else
            e->st.nacks_sent++;
        ps->gap_nack_owed = 0;
    } else {
        fc_rx_take_ack(&ps->rx, &ack);
    }
    if (ps->probe_due)
        flags |= CHAN_F_PING; /* keepalive: the peer answers any frame */
    ps->ping_owed = 0;        /* this frame answers its ping */
    if (e->flow == QUAY_FLOW_CREDIT) {
        /* Every frame carries our current grant (a NACK's seq is its ack
         * field, so the field is free). */
        flags |= CHAN_F_CREDIT;
        nack = credit_lend(e, ps, credit_grant(e, ps));
        ps->credit_sent = nack;
        ps->peer_blocked = 0;
        if (credit_blocked(e, ps))
            flags |= CHAN_F_BLOCKED;
    }
    f[0] = CHAN_VERSION;
    f[1] = kind;
    wire_put16(f + 2, flags);
    wire_put32(f + 4, seq);
    wire_put32(f + 8, ack);
    wire_put32(f + 12, nack);
    wire_put32(f + 16, packet_crc(e, e->rank, o->peer, f, OUT_HDR(o), o->hdr_len, o->payload,
                                  o->payload_len));
}

static void transmit(quay_engine *e, qout *o, quay_action *a)
{
    o->refs++;
    out_fill_send(e, o, a);
}

/* ---- pulling ------------------------------------------------------------------ */

static int peer_may_send(const quay_engine *e, const peer_state *ps)
{
    return e->now >= ps->hold_until;
}

/* A new packet may take a sequence number now. */
static int peer_may_send_new(const quay_engine *e, const peer_state *ps)
{
    return !e->quiesced && ps->pend_head != NULL && fc_tx_can_send_new(&ps->tx, &e->fcp) &&
           (e->flow != QUAY_FLOW_CREDIT || fc_seq_lt(ps->tx.next, ps->credit_limit));
}

/* Something to say that needs no sequence number: ACK, NACK, grant, probe. */
int chan_peer_owes(const quay_engine *e, const peer_state *ps)
{
    return fc_rx_owes(&ps->rx) || credit_owed(e, ps) || ps->probe_due || ps->ping_owed;
}

static int peer_has_work(const quay_engine *e, const peer_state *ps)
{
    if (ps->failed)
        return 0;
    if (chan_peer_owes(e, ps) && e->out_free != NULL)
        return 1;
    return peer_may_send(e, ps) &&
           (ps->tx.resend != ps->tx.next || peer_may_send_new(e, ps));
}

int chan_has_work(const quay_engine *e)
{
    for (int32_t p = 0; p < e->nranks; p++)
        if (p != e->rank && peer_has_work(e, &e->peers[p]))
            return 1;
    return 0;
}

static qout *find_unacked(peer_state *ps, uint32_t seq)
{
    for (qout *o = ps->unack_head; o != NULL; o = o->next)
        if (o->chan_seq == seq)
            return o;
    return NULL;
}

static int peer_pull(quay_engine *e, int32_t p, quay_action *a)
{
    peer_state *ps = &e->peers[p];
    uint32_t seq;
    if (ps->failed)
        return 0;
    while (peer_may_send(e, ps) && fc_tx_resend_due(&ps->tx, &seq)) {
        qout *o = find_unacked(ps, seq);
        if (o == NULL)
            continue; /* cannot happen: unacked seqs are all on the list */
        e->st.retransmits++;
        o->resent = 1;
        transmit(e, o, a);
        return 1;
    }
    if (peer_may_send(e, ps) && peer_may_send_new(e, ps)) {
        qout *o = list_pop(&ps->pend_head, &ps->pend_tail);
        o->chan_seq = fc_tx_assign(&ps->tx, &e->fcp, e->now);
        o->sent_ns = e->now;
        o->resent = 0;
        write_frame(e, o, CHAN_DATA, o->chan_seq);
        ps->probe_due = 0; /* this frame says BLOCKED if we are */
        list_push(&ps->unack_head, &ps->unack_tail, o);
        transmit(e, o, a);
        return 1;
    }
    if (chan_peer_owes(e, ps) && e->out_free != NULL) {
        /* Nothing to piggyback on: an ACK-only packet (also a grant or a
         * probe), never acknowledged, released at its op_done; it takes no
         * sequence number and so no credit. */
        qout *o = out_alloc(e);
        o->peer = p;
        o->framed = 1;
        o->acked = 1;
        o->pkt = 0;
        o->hdr_len = 0;
        write_frame(e, o, CHAN_ACK, 0);
        ps->probe_due = 0; /* written into this frame as PING */
        e->st.acks_only++;
        transmit(e, o, a);
        return 1;
    }
    return 0;
}

int chan_pull(quay_engine *e, quay_action *a)
{
    uint32_t n = (uint32_t)e->nranks;
    for (uint32_t i = 0; i < n; i++) {
        int32_t p = (int32_t)((e->chan_rr + i) % n);
        if (p != e->rank && peer_pull(e, p, a)) {
            e->chan_rr = (uint32_t)p + 1; /* fairness between peers */
            return 1;
        }
    }
    return 0;
}

/* ---- acknowledgements ------------------------------------------------------------ */

/* Release o if acknowledged and no transmission of it is in the adapter. */
static void maybe_release(quay_engine *e, qout *o)
{
    if (o->acked && o->refs == 0)
        out_release(e, o, o->failed ? QUAY_EPEER : 0);
}

/* The peer acknowledged every seq before `to`. The newest of them that
 * went out only once times the round trip. */
static void release_acked(quay_engine *e, peer_state *ps, uint32_t to)
{
    int sampled = 0;
    uint64_t sent = 0;
    while (ps->unack_head != NULL && fc_seq_lt(ps->unack_head->chan_seq, to)) {
        qout *o = list_pop(&ps->unack_head, &ps->unack_tail);
        if (!o->resent) {
            sampled = 1;
            sent = o->sent_ns;
        }
        o->acked = 1;
        maybe_release(e, o);
    }
    if (sampled)
        fc_tx_rtt_sample(&ps->tx, &e->fcp, e->now > sent ? e->now - sent : 0);
}

void chan_on_op_done(quay_engine *e, qout *o, int status)
{
    QUAY_UNUSED(status); /* a failed transmission is a loss: the timer repairs it */
    o->refs--;
    maybe_release(e, o);
}

/* ---- arrivals --------------------------------------------------------------------- */

int chan_on_packet(quay_engine *e, int32_t peer, const uint8_t *b, size_t len, int *content)
{
    *content = 0;
    if (len < CHAN_FRAME_LEN || peer == e->rank)
        return QUAY_EPROTO; /* (self traffic never travels) */
    /* The checksum first: a frame that fails it was damaged on the way,
     * whatever its header now says, and is not held against the peer. */
    uint32_t crc = packet_crc(e, peer, e->rank, b, b + CHAN_FRAME_LEN, len - CHAN_FRAME_LEN,
                              NULL, 0);
    if (crc != wire_get32(b + 16)) {
        e->st.bad_checksum++;
        return LINK_DAMAGED;
    }
    if (b[0] != CHAN_VERSION || (b[1] != CHAN_DATA && b[1] != CHAN_ACK) ||
        (wire_get16(b + 2) & ~CHAN_F_ALL) || chan_frame_channel(b) != e->chan_id)
        return QUAY_EPROTO;
    /* (a failed peer's packets never get here: quay_on_packet) */
    peer_state *ps = &e->peers[peer];
    uint8_t kind = b[1];
    uint16_t flags = wire_get16(b + 2);
    uint32_t seq = wire_get32(b + 4);
    uint32_t ack = wire_get32(b + 8);
    uint32_t nack = wire_get32(b + 12);
    if (kind == CHAN_ACK && (len != CHAN_FRAME_LEN || seq != 0))
        return QUAY_EPROTO;
    /* Both ends must run the same policy. */
    int credit = e->flow == QUAY_FLOW_CREDIT;
    if (!(flags & CHAN_F_CREDIT) != !credit || (!credit && (flags & CHAN_F_BLOCKED)))
        return QUAY_EPROTO;
    /* A NACK names the next expected seq, i.e. it equals the ACK value;
     * in credit mode the field is the grant instead. */
    if (credit)
        nack = ack;
    else if ((flags & CHAN_F_NACK) ? nack != ack : nack != 0)
        return QUAY_EPROTO;
    /* What the peer says about our packets to it, checked before
     * anything changes: a rejected frame leaves every state as it was. */
    if (fc_tx_check(&ps->tx, (flags & CHAN_F_NACK) != 0, (flags & CHAN_F_NACK) ? nack : ack) != 0)
        return QUAY_ESTATE; /* acknowledges what we never sent */
    fc_tx_heard(&ps->tx); /* an intact frame: the peer is alive */
    ps->heard = 1;
    ps->probes = 0;
    ps->probe_rto = e->fcp.rto_init_ns;
    if (flags & CHAN_F_PING)
        ps->ping_owed = 1;

    uint32_t from, to;
    int rc = (flags & CHAN_F_NACK)
                 ? fc_tx_on_nack(&ps->tx, &e->fcp, nack, e->now, &from, &to)
                 : fc_tx_on_ack(&ps->tx, &e->fcp, ack, e->now, &from, &to);
    (void)rc; /* (fc_tx_check passed: it cannot fail) */
    if (flags & CHAN_F_NACK) {
        if (ps->nack_repeats != 0 && nack == ps->nack_seq) {
            ps->nack_repeats++;
            uint32_t shift = ps->nack_repeats - 1 < 20 ? ps->nack_repeats - 1 : 20;
            uint64_t hold = e->fcp.rto_init_ns << shift;
            if (hold > e->fcp.rto_max_ns)
                hold = e->fcp.rto_max_ns;
            ps->hold_until = e->now + hold;
        } else {
            ps->nack_seq = nack;
            ps->nack_repeats = 1;
            ps->hold_until = 0;
        }
    } else if (ps->nack_repeats != 0 && fc_seq_lt(ps->nack_seq, ack)) {
        ps->nack_repeats = 0; /* the refused message got through */
        ps->hold_until = 0;
    }
    release_acked(e, ps, to);
    if (credit) {
        /* Grants only grow; one that would let us run more than 2^30 ahead
         * of what the peer acknowledged is not a grant but garbage. */
        uint32_t limit = wire_get32(b + 12);
        if (fc_seq_lt(ps->credit_limit, limit) && limit - ps->tx.una <= (1u << 30))
            ps->credit_limit = limit;
        if (flags & CHAN_F_BLOCKED)
            ps->peer_blocked = 1;
        credit_watch(e, ps);
    }
    if (kind == CHAN_ACK)
        return CHAN_CONSUMED;

    switch (fc_rx_classify(&ps->rx, seq)) {
    case FC_RX_DUPLICATE:
        e->st.dups_dropped++;
        return CHAN_CONSUMED;
    case FC_RX_DISCARD:
        e->st.out_of_order_dropped++;
        /* Fast retransmit: a packet ahead of its turn means (on a FIFO
         * link, certainly) that the expected one was lost. NACK it once,
         * so the sender goes back now instead of at its timeout; a repeat
         * loss is left to the timer, so a reordering network costs at most
         * one spurious go-back per expected seq. */
        if (ps->rx.state == FC_RX_NORMAL &&
            !(ps->gap_nacked && ps->gap_seq == ps->rx.expected)) {
            fc_rx_refused(&ps->rx, ps->rx.expected);
            ps->gap_nacked = 1;
            ps->gap_seq = ps->rx.expected;
            ps->gap_nack_owed = 1;
        }
        return CHAN_CONSUMED;
    default:
        break;
    }
    rc = engine_recv(e, peer, b + CHAN_FRAME_LEN, len - CHAN_FRAME_LEN, NULL);
    if (rc == QUAY_EAGAIN) {
        /* No buffer: discard and NACK it; the sender re-sends from here
         * and sends nothing new until it is accepted [PM §3.3]. */
        fc_rx_refused(&ps->rx, seq);
        ps->gap_nack_owed = 0;
        return CHAN_CONSUMED;
    }
    /* Taken by the channel even if the engine refused its content (the
     * frame is consumed; *content says why): re-sending the same bytes
     * could never succeed. Only the sender's own stream is spent. */
    fc_rx_accepted(&ps->rx, seq);
    ps->gap_nack_owed = 0; /* a gap NACK still owed is withdrawn with it */
    if (rc != 0 && !quay_err_is_fatal(rc)) {
        *content = rc;
        return CHAN_CONSUMED;
    }
    return rc;
}

/* ---- time and failure --------------------------------------------------------------- */

/* Credit mode, out of credit with nothing unacknowledged: ask the peer
 * for its grant (an ACK-only frame flagged BLOCKED), backing off like a
 * retransmission; a peer silent for retry_limit probes has failed. */
static int credit_probe(quay_engine *e, peer_state *ps)
{
    if (ps->probe_at == 0 || e->now < ps->probe_at)
        return 0;
    if (++ps->probes > e->fcp.retry_limit)
        return FC_EPEER;
    ps->probe_due = 1;
    ps->probe_rto = ps->probe_rto > e->fcp.rto_max_ns / 2 ? e->fcp.rto_max_ns
                                                          : 2 * ps->probe_rto;
    ps->probe_at = e->now + ps->probe_rto;
    return 1;
}

/* ---- keepalive ------------------------------------------------------------------ */

/* A peer we only wait on (a receive posted for it, a send waiting for its
 * CTS) has no retransmission timer: if it dies, nothing would notice. So
 * every keepalive interval, each peer some request waits on and that said
 * nothing since the last tick is pinged (a PING frame, which it answers);
 * retry_limit unanswered pings fail it. The scan of the request pool runs
 * only at ticks, off the message path. */
static uint64_t ka_interval(const quay_engine *e)
{
    uint64_t i = e->fcp.rto_max_ns / 8;
    return i < e->fcp.rto_init_ns ? e->fcp.rto_init_ns : i;
}

/* Armed while requests exist, except after a tick found none waiting on a
 * peer and no request was made since (a request only starts waiting on a
 * peer when it is made, or by a transfer whose own packets are timed). */
static int ka_armed(const quay_engine *e)
{
    return e->reqs_used != 0 && (e->ka_next != 0 || e->reqs_allocs != e->ka_idle_at);
}

static void keepalive(quay_engine *e)
{
    if (!ka_armed(e)) {
        e->ka_next = 0;
        return;
    }
    if (e->ka_next == 0) {
        e->ka_next = e->now + ka_interval(e);
        return;
    }
    if (e->now < e->ka_next)
        return;
    for (int32_t p = 0; p < e->nranks; p++)
        e->peers[p].ka_wanted = 0;
    int any = 0;
    for (uint32_t i = 0; i < e->nreqs; i++) {
        int32_t p = req_waits_on(e, &e->reqs[i]);
        if (p >= 0 && !e->peers[p].failed) {
            e->peers[p].ka_wanted = 1;
            any = 1;
        }
    }
    if (!any) {
        e->ka_next = 0;
        e->ka_idle_at = e->reqs_allocs;
        return;
    }
    e->ka_next = e->now + ka_interval(e);
    for (int32_t p = 0; p < e->nranks; p++) {
        peer_state *ps = &e->peers[p];
        if (p == e->rank || ps->failed)
            continue;
        if (ps->ka_wanted && !ps->heard) {
            if (++ps->probes > e->fcp.retry_limit) {
                engine_peer_failed(e, p);
                continue;
            }
            ps->probe_due = 1;
            e->st.pings++;
        }
        ps->heard = 0;
    }
}

void chan_on_time(quay_engine *e)
{
    keepalive(e);
    for (int32_t p = 0; p < e->nranks; p++) {
        peer_state *ps = &e->peers[p];
        if (p == e->rank || ps->failed)
            continue;
        if (fc_tx_on_time(&ps->tx, &e->fcp, e->now) == FC_EPEER ||
            credit_probe(e, ps) == FC_EPEER)
            engine_peer_failed(e, p);
    }
}

uint64_t chan_deadline(const quay_engine *e)
{
    uint64_t d = QUAY_TIME_NONE;
    if (ka_armed(e))
        d = e->ka_next != 0 ? e->ka_next : e->now + ka_interval(e);
    for (int32_t p = 0; p < e->nranks; p++) {
        if (p == e->rank || e->peers[p].failed)
            continue;
        const peer_state *ps = &e->peers[p];
        uint64_t t = fc_tx_deadline(&ps->tx);
        if (ps->hold_until > e->now && ps->hold_until < t)
            t = ps->hold_until; /* a held re-send becomes due then */
        if (ps->probe_at != 0 && ps->probe_at < t)
            t = ps->probe_at;
        if (t < d)
            d = t;
    }
    return d;
}

void chan_abandon(quay_engine *e, int32_t peer)
{
    peer_state *ps = &e->peers[peer];
    qout *o;
    while ((o = list_pop(&ps->pend_head, &ps->pend_tail)) != NULL ||
           (o = list_pop(&ps->unack_head, &ps->unack_tail)) != NULL) {
        o->acked = 1;
        o->failed = 1;
        maybe_release(e, o);
    }
}

/* ---- quiesce (context switch C1-C4, C8) ---------------------------------------------- */

int quay_channel_quiesce(quay_engine *e)
{
    if (e == NULL)
        return QUAY_EINVAL;
    if (!e->flow)
        return QUAY_ESTATE;
    e->quiesced = 1;
    return 0;
}

int quay_channel_resume(quay_engine *e)
{
    if (e == NULL)
        return QUAY_EINVAL;
    if (!e->flow)
        return QUAY_ESTATE;
    e->quiesced = 0;
    return 0;
}

int quay_channel_is_stable(const quay_engine *e)
{
    if (e == NULL)
        return QUAY_EINVAL;
    if (!e->flow)
        return QUAY_ESTATE;
    if (!e->quiesced)
        return 0;
    for (int32_t p = 0; p < e->nranks; p++) {
        const peer_state *ps = &e->peers[p];
        if (p == e->rank || ps->failed)
            continue;
        if (ps->unack_head != NULL || chan_peer_owes(e, ps))
            return 0;
    }
    /* ACK-only frames live until their op_done; data until acknowledged
     * (checked above) and op_done'd. */
    for (uint32_t i = 0; i < e->nouts; i++) {
        const qout *o = &e->outs[i];
        if (o->in_use && ((o->framed && o->refs != 0) || o->pkt >= QOUT_RDMA_PUT))
            return 0; /* on the wire, or an RDMA action in the adapter */
    }
    return 1;
}

/* ---- the engine's view: the link table ------------------------------------------- */

static uint32_t frame_channel(const uint8_t *b)
{
    return chan_frame_channel(b);
}

static int frame_content(const uint8_t *b, size_t len, const uint8_t **pkt, size_t *pkt_len)
{
    if (len <= CHAN_FRAME_LEN || b[1] != CHAN_DATA)
        return 0;
    *pkt = b + CHAN_FRAME_LEN;
    *pkt_len = len - CHAN_FRAME_LEN;
    return 1;
}

const link_ops chan_link = {
    .name = "ack/nack+credit",
    .reset = chan_init,
    .submit = chan_submit,
    .pull = chan_pull,
    .has_work = chan_has_work,
    .on_frame = chan_on_packet,
    .on_op_done = chan_on_op_done,
    .on_time = chan_on_time,
    .deadline = chan_deadline,
    .abandon = chan_abandon,
    .frame_channel = frame_channel,
    .frame_content = frame_content,
};
