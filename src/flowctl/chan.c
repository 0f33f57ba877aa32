/*
 * chan.c — the flow-control channel between the engine and the wire, the
 * core every flow-control policy shares: framing, the CRC, the per-peer
 * queues, retransmission, NACK pacing, keepalive and probes, quiesce.
 * The Modified ACK/NACK decisions are ackn.c's; what a policy adds (a
 * credit limit, its frame flags and field) comes through its fc_policy
 * (policy_acknack.c, policy_credit.c). See chan.h for the frame.
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

/* ---- the link's knobs and state ---------------------------------------------------- */

int chan_config_check(quay_config *c)
{
    /* The window keeps serial arithmetic sound (FC_WINDOW_MAX); one
     * descriptor stays for ACK-only frames (out.c), so two are the least. */
    if (c->flow_window == 0 || c->flow_window > FC_WINDOW_MAX || c->rto_init_ns == 0 ||
        c->rto_max_ns < c->rto_init_ns || c->max_out < 2)
        return QUAY_EINVAL;
    return 0;
}

void chan_reset(quay_engine *e)
{
    fc_link *l = chan_state(e);
    /* (the scratch record too: it starts clean for every check) */
    memset(l->peers, 0, ((size_t)e->nranks + 1) * l->stride);
    for (int32_t p = 0; p < e->nranks; p++) {
        fc_peer *fp = chan_peer(l, p);
        fc_tx_init(&fp->tx, &l->fcp, 0);
        fc_rx_init(&fp->rx, 0);
        fp->probe_rto = l->fcp.rto_init_ns;
        if (l->pol->peer_init != NULL)
            l->pol->peer_init(e, fp);
    }
}

int chan_init(quay_engine *e)
{
    fc_link *l = qalloc(e, sizeof *l);
    if (l == NULL)
        return QUAY_ENOMEM;
    l->pol = e->link->impl;
    /* The policy's state right behind each fc_peer, as aligned as it. */
    size_t a = _Alignof(fc_peer);
    l->stride = sizeof(fc_peer) + (l->pol->peer_size + a - 1) / a * a;
    l->peers = qalloc(e, ((size_t)e->nranks + 1) * l->stride);
    e->link_state = l;
    if (l->peers == NULL)
        return QUAY_ENOMEM; /* (chan_fini frees l) */
    l->fcp.rto_init_ns = e->cfg.rto_init_ns;
    l->fcp.rto_max_ns = e->cfg.rto_max_ns;
    l->fcp.retry_limit = e->cfg.retry_limit;
    l->fcp.window = e->cfg.flow_window;
    crc32c_table_init(e->crc_table);
    chan_reset(e);
    return 0;
}

void chan_fini(quay_engine *e)
{
    fc_link *l = chan_state(e);
    if (l == NULL)
        return;
    qfree(e, l->peers);
    qfree(e, l);
    e->link_state = NULL;
}

/* ---- what the policy holds back ------------------------------------------------ */

/* A packet waits that the window would let take a sequence number now. */
static int would_send_new(const quay_engine *e, const fc_peer *fp)
{
    return fp->pend_head != NULL && fc_tx_can_send_new(&fp->tx, &chan_state(e)->fcp);
}

int chan_blocked(const quay_engine *e, const fc_peer *fp)
{
    const fc_policy *pol = chan_state(e)->pol;
    return pol->may_send != NULL && would_send_new(e, fp) && !pol->may_send(e, fp);
}

/* Held back with nothing unacknowledged, no timer would ever run: a lost
 * grant would stall us. Arm the probe timer then; disarm it once the
 * policy lets us go (or an unacknowledged packet, whose timer covers us,
 * is there). */
static void probe_watch(quay_engine *e, fc_peer *fp)
{
    if (chan_blocked(e, fp) && fp->tx.una == fp->tx.next) {
        if (fp->probe_at == 0)
            fp->probe_at = e->now + fp->probe_rto;
    } else {
        fp->probe_at = 0;
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
    const fc_link *l = chan_state(e);
    fc_peer *fp = chan_peer(l, o->peer);
    o->framed = 1;
    list_push(&fp->pend_head, &fp->pend_tail, o);
    if (l->pol->may_send != NULL)
        probe_watch(e, fp);
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
static void write_frame(quay_engine *e, fc_peer *fp, qout *o, uint8_t kind, uint32_t seq)
{
    uint8_t *f = o->hdr;
    uint32_t ack, nack = 0;
    uint16_t flags = (uint16_t)((uint32_t)e->chan_id << CHAN_F_CHAN_SHIFT);
    if (fc_rx_take_nack(&fp->rx, &nack)) {
        flags |= CHAN_F_NACK;
        ack = nack;
        if (fp->gap_nack_owed)
            e->st.gap_nacks++;
        else
            e->st.nacks_sent++;
        fp->gap_nack_owed = 0;
    } else {
        fc_rx_take_ack(&fp->rx, &ack);
    }
    if (fp->probe_due)
        flags |= CHAN_F_PING; /* keepalive: the peer answers any frame */
    fp->ping_owed = 0;        /* this frame answers its ping */
    const fc_policy *pol = chan_state(e)->pol;
    if (pol->frame_out != NULL)
        pol->frame_out(e, o->peer, fp, &flags, &nack);
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

static int peer_may_send(const quay_engine *e, const fc_peer *fp)
{
    return e->now >= fp->hold_until;
}

/* A new packet may take a sequence number now. */
static int peer_may_send_new(const quay_engine *e, const fc_peer *fp)
{
    const fc_policy *pol = chan_state(e)->pol;
    return !e->quiesced && would_send_new(e, fp) &&
           (pol->may_send == NULL || pol->may_send(e, fp));
}

/* Something to say that needs no sequence number: ACK, NACK, grant, probe. */
int chan_peer_owes(const quay_engine *e, const fc_peer *fp, uint32_t held)
{
    const fc_policy *pol = chan_state(e)->pol;
    return fc_rx_owes(&fp->rx) || (pol->owes != NULL && pol->owes(e, fp, held)) ||
           fp->probe_due || fp->ping_owed;
}

/* chan_peer_owes of peer p, with the engine's count of its messages. */
static int peer_owes(const quay_engine *e, int32_t p, const fc_peer *fp)
{
    return chan_peer_owes(e, fp, e->peers[p].credit_held);
}

static int peer_has_work(const quay_engine *e, int32_t p, const fc_peer *fp)
{
    if (e->peers[p].failed)
        return 0;
    if (peer_owes(e, p, fp) && e->out_free != NULL)
        return 1;
    return peer_may_send(e, fp) &&
           (fp->tx.resend != fp->tx.next || peer_may_send_new(e, fp));
}

int chan_has_work(const quay_engine *e)
{
    const fc_link *l = chan_state(e);
    for (int32_t p = 0; p < e->nranks; p++)
        if (p != e->rank && peer_has_work(e, p, chan_peer(l, p)))
            return 1;
    return 0;
}

static qout *find_unacked(fc_peer *fp, uint32_t seq)
{
    for (qout *o = fp->unack_head; o != NULL; o = o->next)
        if (o->chan_seq == seq)
            return o;
    return NULL;
}

static int peer_pull(quay_engine *e, int32_t p, quay_action *a)
{
    fc_link *l = chan_state(e);
    fc_peer *fp = chan_peer(l, p);
    uint32_t seq;
    if (e->peers[p].failed)
        return 0;
    while (peer_may_send(e, fp) && fc_tx_resend_due(&fp->tx, &seq)) {
        qout *o = find_unacked(fp, seq);
        if (o == NULL)
            continue; /* cannot happen: unacked seqs are all on the list */
        e->st.retransmits++;
        o->resent = 1;
        transmit(e, o, a);
        return 1;
    }
    if (peer_may_send(e, fp) && peer_may_send_new(e, fp)) {
        qout *o = list_pop(&fp->pend_head, &fp->pend_tail);
        o->chan_seq = fc_tx_assign(&fp->tx, &l->fcp, e->now);
        o->sent_ns = e->now;
        o->resent = 0;
        write_frame(e, fp, o, CHAN_DATA, o->chan_seq);
        fp->probe_due = 0; /* this frame says BLOCKED if we are */
        list_push(&fp->unack_head, &fp->unack_tail, o);
        transmit(e, o, a);
        return 1;
    }
    if (peer_owes(e, p, fp) && e->out_free != NULL) {
        /* Nothing to piggyback on: an ACK-only packet (also a grant or a
         * probe), never acknowledged, released at its op_done; it takes no
         * sequence number and so no credit. */
        qout *o = out_alloc(e);
        o->peer = p;
        o->framed = 1;
        o->acked = 1;
        o->pkt = 0;
        o->hdr_len = 0;
        write_frame(e, fp, o, CHAN_ACK, 0);
        fp->probe_due = 0; /* written into this frame as PING */
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
static void release_acked(quay_engine *e, fc_peer *fp, uint32_t to)
{
    int sampled = 0;
    uint64_t sent = 0;
    while (fp->unack_head != NULL && fc_seq_lt(fp->unack_head->chan_seq, to)) {
        qout *o = list_pop(&fp->unack_head, &fp->unack_tail);
        if (!o->resent) {
            sampled = 1;
            sent = o->sent_ns;
        }
        o->acked = 1;
        maybe_release(e, o);
    }
    if (sampled)
        fc_tx_rtt_sample(&fp->tx, &chan_state(e)->fcp, e->now > sent ? e->now - sent : 0);
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
    /* (a failed peer's packets never get here: quay_on_packet) */
    fc_link *l = chan_state(e);
    const fc_policy *pol = l->pol;
    /* Both ends must run the same policy: no flag it does not use. */
    if (b[0] != CHAN_VERSION || (b[1] != CHAN_DATA && b[1] != CHAN_ACK) ||
        (wire_get16(b + 2) & ~(CHAN_F_CORE | pol->flags)) || chan_frame_channel(b) != e->chan_id)
        return QUAY_EPROTO;
    fc_peer *fp = chan_peer(l, peer);
    uint8_t kind = b[1];
    uint16_t flags = wire_get16(b + 2);
    uint32_t seq = wire_get32(b + 4);
    uint32_t ack = wire_get32(b + 8);
    uint32_t field = wire_get32(b + 12);
    if (kind == CHAN_ACK && (len != CHAN_FRAME_LEN || seq != 0))
        return QUAY_EPROTO;
    if (pol->frame_check != NULL && pol->frame_check(flags, ack, field) != 0)
        return QUAY_EPROTO;
    /* A NACK names the next expected seq, i.e. it equals the ACK value
     * (field 12 is the policy's). */
    uint32_t nack = ack;
    /* What the peer says about our packets to it, checked before
     * anything changes: a rejected frame leaves every state as it was. */
    if (fc_tx_check(&fp->tx, (flags & CHAN_F_NACK) != 0, (flags & CHAN_F_NACK) ? nack : ack) != 0)
        return QUAY_ESTATE; /* acknowledges what we never sent */
    fc_tx_heard(&fp->tx); /* an intact frame: the peer is alive */
    fp->heard = 1;
    fp->probes = 0;
    fp->probe_rto = l->fcp.rto_init_ns;
    if (flags & CHAN_F_PING)
        fp->ping_owed = 1;

    uint32_t from, to;
    int rc = (flags & CHAN_F_NACK)
                 ? fc_tx_on_nack(&fp->tx, &l->fcp, nack, e->now, &from, &to)
                 : fc_tx_on_ack(&fp->tx, &l->fcp, ack, e->now, &from, &to);
    (void)rc; /* (fc_tx_check passed: it cannot fail) */
    if (flags & CHAN_F_NACK) {
        if (fp->nack_repeats != 0 && nack == fp->nack_seq) {
            fp->nack_repeats++;
            uint32_t shift = fp->nack_repeats - 1 < 20 ? fp->nack_repeats - 1 : 20;
            uint64_t hold = l->fcp.rto_init_ns << shift;
            if (hold > l->fcp.rto_max_ns)
                hold = l->fcp.rto_max_ns;
            fp->hold_until = e->now + hold;
        } else {
            fp->nack_seq = nack;
            fp->nack_repeats = 1;
            fp->hold_until = 0;
        }
    } else if (fp->nack_repeats != 0 && fc_seq_lt(fp->nack_seq, ack)) {
        fp->nack_repeats = 0; /* the refused message got through */
        fp->hold_until = 0;
    }
    release_acked(e, fp, to);
    if (pol->frame_in != NULL)
        pol->frame_in(e, fp, flags, field);
    if (pol->may_send != NULL)
        probe_watch(e, fp); /* (what it let go may have changed) */
    if (kind == CHAN_ACK)
        return CHAN_CONSUMED;

    switch (fc_rx_classify(&fp->rx, seq)) {
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
        if (fp->rx.state == FC_RX_NORMAL &&
            !(fp->gap_nacked && fp->gap_seq == fp->rx.expected)) {
            fc_rx_refused(&fp->rx, fp->rx.expected);
            fp->gap_nacked = 1;
            fp->gap_seq = fp->rx.expected;
            fp->gap_nack_owed = 1;
        }
        return CHAN_CONSUMED;
    default:
        break;
    }
    rc = engine_recv(e, peer, b + CHAN_FRAME_LEN, len - CHAN_FRAME_LEN, NULL);
    if (rc == QUAY_EAGAIN) {
        /* No buffer: discard and NACK it; the sender re-sends from here
         * and sends nothing new until it is accepted [PM §3.3]. */
        fc_rx_refused(&fp->rx, seq);
        fp->gap_nack_owed = 0;
        return CHAN_CONSUMED;
    }
    /* Taken by the channel even if the engine refused its content (the
     * frame is consumed; *content says why): re-sending the same bytes
     * could never succeed. Only the sender's own stream is spent. */
    fc_rx_accepted(&fp->rx, seq);
    fp->gap_nack_owed = 0; /* a gap NACK still owed is withdrawn with it */
    if (rc != 0 && !quay_err_is_fatal(rc)) {
        *content = rc;
        return CHAN_CONSUMED;
    }
    return rc;
}

/* ---- time and failure --------------------------------------------------------------- */

/* Held back by the policy with nothing unacknowledged (probe_watch): ask
 * the peer (an ACK-only frame, PING, and whatever the policy says: BLOCKED
 * under credits), backing off like a retransmission; a peer silent for
 * retry_limit probes has failed. */
static int blocked_probe(quay_engine *e, const fc_link *l, fc_peer *fp)
{
    if (fp->probe_at == 0 || e->now < fp->probe_at)
        return 0;
    if (++fp->probes > l->fcp.retry_limit)
        return FC_EPEER;
    fp->probe_due = 1;
    fp->probe_rto = fp->probe_rto > l->fcp.rto_max_ns / 2 ? l->fcp.rto_max_ns
                                                          : 2 * fp->probe_rto;
    fp->probe_at = e->now + fp->probe_rto;
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
    const fc_link *l = chan_state(e);
    uint64_t i = l->fcp.rto_max_ns / 8;
    return i < l->fcp.rto_init_ns ? l->fcp.rto_init_ns : i;
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
    fc_link *l = chan_state(e);
    for (int32_t p = 0; p < e->nranks; p++)
        chan_peer(l, p)->ka_wanted = 0;
    int any = 0;
    for (uint32_t i = 0; i < e->nreqs; i++) {
        int32_t p = req_waits_on(e, &e->reqs[i]);
        if (p >= 0 && !e->peers[p].failed) {
            chan_peer(l, p)->ka_wanted = 1;
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
        fc_peer *fp = chan_peer(l, p);
        if (p == e->rank || e->peers[p].failed)
            continue;
        if (fp->ka_wanted && !fp->heard) {
            if (++fp->probes > l->fcp.retry_limit) {
                engine_peer_failed(e, p);
                continue;
            }
            fp->probe_due = 1;
            e->st.pings++;
        }
        fp->heard = 0;
    }
}

void chan_on_time(quay_engine *e)
{
    keepalive(e);
    const fc_link *l = chan_state(e);
    for (int32_t p = 0; p < e->nranks; p++) {
        fc_peer *fp = chan_peer(l, p);
        if (p == e->rank || e->peers[p].failed)
            continue;
        if (fc_tx_on_time(&fp->tx, &l->fcp, e->now) == FC_EPEER ||
            blocked_probe(e, l, fp) == FC_EPEER)
            engine_peer_failed(e, p);
    }
}

uint64_t chan_deadline(const quay_engine *e)
{
    const fc_link *l = chan_state(e);
    uint64_t d = QUAY_TIME_NONE;
    if (ka_armed(e))
        d = e->ka_next != 0 ? e->ka_next : e->now + ka_interval(e);
    for (int32_t p = 0; p < e->nranks; p++) {
        if (p == e->rank || e->peers[p].failed)
            continue;
        const fc_peer *fp = chan_peer(l, p);
        uint64_t t = fc_tx_deadline(&fp->tx);
        if (fp->hold_until > e->now && fp->hold_until < t)
            t = fp->hold_until; /* a held re-send becomes due then */
        if (fp->probe_at != 0 && fp->probe_at < t)
            t = fp->probe_at;
        if (t < d)
            d = t;
    }
    return d;
}

void chan_abandon(quay_engine *e, int32_t peer)
{
    fc_peer *fp = chan_peer(chan_state(e), peer);
    qout *o;
    while ((o = list_pop(&fp->pend_head, &fp->pend_tail)) != NULL ||
           (o = list_pop(&fp->unack_head, &fp->unack_tail)) != NULL) {
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
    const fc_link *l = chan_state(e);
    for (int32_t p = 0; p < e->nranks; p++) {
        const fc_peer *fp = chan_peer(l, p);
        if (p == e->rank || e->peers[p].failed)
            continue;
        if (fp->unack_head != NULL || peer_owes(e, p, fp))
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

uint32_t chan_link_frame_channel(const uint8_t *b)
{
    return chan_frame_channel(b);
}

/* ---- the context's record: the packets queued for a sequence number ------------ */

const qout *chan_queued(const quay_engine *e, int32_t p, const qout *prev)
{
    const fc_link *l = chan_state(e);
    if (prev != NULL)
        return prev->next;
    return l != NULL ? chan_peer(l, p)->pend_head : NULL; /* (none: no link) */
}

void chan_requeue(quay_engine *e, qout *o)
{
    fc_peer *fp = chan_peer(chan_state(e), o->peer);
    o->framed = 1; /* as chan_submit left it */
    list_push(&fp->pend_head, &fp->pend_tail, o);
}

int chan_frame_content(const uint8_t *b, size_t len, const uint8_t **pkt, size_t *pkt_len)
{
    if (len <= CHAN_FRAME_LEN || b[1] != CHAN_DATA)
        return 0;
    *pkt = b + CHAN_FRAME_LEN;
    *pkt_len = len - CHAN_FRAME_LEN;
    return 1;
}
