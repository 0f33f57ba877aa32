/*
 * engine.c — engine lifetime, packet dispatch, time, statistics.
 *
 * quay_on_packet decodes the header (syntax) and hands the packet to the
 * protocol module that owns its type, through the registry (packets.h);
 * that module checks semantics (ids, ranks, state). A train is split by
 * train.c. A rejected packet never changes engine state.
 */
#include "engine/eager_fast.h"
#include "engine/engine.h"
#include "engine/internal.h"
#include "engine/payload.h"

/* ---- create / free --------------------------------------------------------- */

static int engine_pools(quay_engine *e)
{
    const quay_config *c = &e->cfg;

    e->nreqs = c->max_requests;
    e->reqs = qcalloc(e, e->nreqs, sizeof *e->reqs);
    e->nmsgs = c->max_unexpected;
    e->msgs = qcalloc(e, e->nmsgs, sizeof *e->msgs);
    e->peers = qcalloc(e, (size_t)e->nranks, sizeof *e->peers);
    e->strikes = qcalloc(e, (size_t)e->nranks, sizeof *e->strikes);
    if (!e->reqs || !e->msgs || !e->peers || !e->strikes || comm_table_new(e, c->max_comms) != 0)
        return QUAY_ENOMEM;

    /* Free lists in index order so allocation is deterministic. */
    for (uint32_t i = e->nreqs; i-- > 0;) {
        quay_req *r = &e->reqs[i];
        ql_init(&r->link);
        ql_init(&r->clink);
        r->id = i; /* generation 0: ids handed out start at generation 1 */
        r->link.next = (qlink *)e->req_free;
        e->req_free = r;
    }
    for (uint32_t i = e->nmsgs; i-- > 0;) {
        umsg *m = &e->msgs[i];
        m->blink.next = (qlink *)e->msg_free;
        e->msg_free = m;
    }
    for (int32_t p = 0; p < e->nranks; p++)
        ql_init(&e->peers[p].held);
    return 0;
}

/* Create one channel: the whole engine state for one logical network. */
static int channel_new(const quay_config *c, const quay_allocator *a, const engine_parts *parts,
                       const link_ops *link, uint8_t id, quay_engine *root, quay_engine **pe)
{
    quay_engine *e = a->alloc(sizeof *e, a->ctx);
    if (e == NULL)
        return QUAY_ENOMEM;
    memset(e, 0, sizeof *e);
    e->cfg = *c;
    e->a = *a;
    e->rank = c->rank;
    e->nranks = c->nranks;
    e->flow = (int)c->flow;
    e->chan_id = id;
    e->root = root != NULL ? root : e;
    ql_init(&e->txq);
    ql_init(&e->rdmaq);
    ql_init(&e->cq);
    ql_init(&e->orphans);
    ql_init(&e->coll.ready);
    ql_init(&e->coll.blocked);
    e->rare = 1; /* the first idle pull looks everywhere */
    e->link = link;

    int rc = engine_pools(e);
    if (rc == 0 && e->link != NULL)
        rc = e->link->init(e);
    if (rc == 0)
        rc = out_init(e);
    if (rc == 0)
        rc = upay_init(e);
    if (rc == 0)
        rc = match_init(e);
    if (rc == 0)
        rc = mem_init(e);
    if (rc == 0)
        rc = rtr_init(e);
    if (rc == 0)
        rc = arb_init(e);
    if (rc == 0 && c->coll_bypass)
        rc = parts->coll_attach(e);
    e->tx_plain = !e->flow && e->rtr_pool == NULL &&
                  !(c->transport_caps & QUAY_CAP_MULTI_SEND);
    e->p2p_plain = e->rtr_pool == NULL && e->aslots == NULL;
    e->inline_plain = e->tx_plain && e->p2p_plain;
    e->send_copy = e->inline_plain && (c->flags & QUAY_CFG_SEND_COPY);
    if (rc == 0)
        rc = train_init(e);
    e->eager_max = c->eager_max;
    e->inline_lim = !e->inline_plain           ? 0
                    : c->eager_max < QUAY_INLINE_MAX ? c->eager_max + 1
                                                     : (size_t)QUAY_INLINE_MAX + 1;
    e->inline_small_lim = e->inline_lim < 17 ? e->inline_lim : 17;
    e->complete_actions = (c->flags & QUAY_CFG_COMPLETE_ACTIONS) != 0;
    *pe = e; /* even on failure: the caller frees it */
    return rc;
}

static void channel_free(quay_engine *e)
{
    if (e->coll.hooks != NULL)
        e->coll.hooks->fini(e);
    context_free_heap(e);
    match_fini(e);
    out_fini(e);
    train_fini(e);
    upay_fini(e);
    mem_fini(e);
    rtr_fini(e);
    arb_fini(e);
    if (e->link != NULL)
        e->link->fini(e);
    qfree(e, e->reqs);
    qfree(e, e->msgs);
    qfree(e, e->peers);
    qfree(e, e->strikes);
    comm_table_free(e);
    quay_allocator a = e->a;
    a.release(e, a.ctx);
}

int engine_new(const quay_config *cfg, const engine_parts *parts, quay_engine **pe)
{
    if (pe == NULL)
        return QUAY_EINVAL;
    *pe = NULL;
    if (cfg == NULL)
        return QUAY_EINVAL;
    quay_config c;
    int rc = quay_config_upgrade(cfg, &c);
    if (rc == 0)
        rc = config_check(&c);
    if (rc == 0 && parts->coll_config_check != NULL)
        rc = parts->coll_config_check(&c);
    const link_ops *link = NULL;
    if (rc == 0)
        rc = parts->link_for(c.flow, &link);
    if (rc == 0 && link != NULL)
        rc = link->config_check(&c);
    if (rc != 0)
        return rc;
    quay_allocator a = c.alloc;
    if (a.alloc == NULL) {
        a = alloc_libc();
    }
    quay_engine *root = NULL;
    rc = channel_new(&c, &a, parts, link, 0, NULL, &root);
    if (root == NULL)
        return rc;
    root->chans[0] = root;
    root->nchans = 1;
    for (uint32_t k = 1; rc == 0 && k < c.channels; k++) {
        quay_engine *ch = NULL;
        rc = channel_new(&c, &a, parts, link, (uint8_t)k, root, &ch);
        if (ch != NULL)
            root->chans[root->nchans++] = ch;
    }
    if (rc != 0) {
        quay_engine_free(root);
        return rc;
    }
    *pe = root;
    return 0;
}

void quay_engine_free(quay_engine *e)
{
    if (e == NULL || e->root != e)
        return;
    for (uint32_t k = e->nchans; k-- > 1;)
        channel_free(e->chans[k]);
    channel_free(e);
}

quay_engine *quay_engine_channel(quay_engine *e, uint32_t ch)
{
    if (e == NULL)
        return NULL;
    quay_engine *root = e->root;
    return ch < root->nchans ? root->chans[ch] : NULL;
}

int32_t quay_engine_rank(const quay_engine *e) { return e ? e->rank : -1; }
int32_t quay_engine_size(const quay_engine *e) { return e ? e->nranks : -1; }
size_t quay_engine_max_packet(const quay_engine *e) { return e ? e->cfg.max_packet : 0; }

/* ---- arrivals --------------------------------------------------------------- */

int engine_recv(quay_engine *e, int32_t peer, const uint8_t *b, size_t len,
                const uint8_t *payload)
{
    wire_hdr h;
    int hl = wire_decode(b, len, &h);
    if (hl < 0)
        return hl;
    return engine_recv_decoded(e, peer, &h, hl, b, len, payload);
}

int engine_recv_decoded(quay_engine *e, int32_t peer, const wire_hdr *h, int hl,
                        const uint8_t *b, size_t len, const uint8_t *payload)
{
    size_t plen = len - (size_t)hl;
    if (plen > e->cfg.max_packet - (size_t)hl)
        return QUAY_EPROTO; /* larger than this transport's packets */
    if (payload == NULL)
        payload = b + hl;
    /* The type's protocol takes it (packets.h); a sequenced type's
     * handler is seq_on_packet, which takes it in its turn. */
    pkt_on_packet_fn *on_packet = pkt_info(h->type)->on_packet;
    if (on_packet == NULL)
        return QUAY_EPROTO; /* wire_decode admits no other type */
    return on_packet(e, peer, h, payload, plen);
}

/* Trace a packet from the wire: its type and, if sequenced, its seq. */
static void trace_wire(quay_engine *e, int kind, int32_t peer,
                       const uint8_t *b, size_t len, int code)
{
    if (e->flow && !e->link->frame_content(b, len, &b, &len)) {
        /* An ACK-only frame (or one too short to tell) names no engine
         * packet: type 0. */
        trace_pkt(e, kind, 0, peer, 0, 0, code);
        return;
    }
    int type = len >= 2 ? wire_type(b) : 0;
    uint32_t seq = 0;
    if (len >= 8 && pkt_is((unsigned)type, PK_SEQ))
        seq = wire_seq(b);
    trace_pkt(e, kind, type, peer, 0, seq, code);
}

/* The channel a packet is for: its frame says (chan.c checks the rest). */
static quay_engine *packet_channel(quay_engine *root, const uint8_t *b, size_t len)
{
    if (root->nchans == 1 || len < 4)
        return root;
    uint32_t ch = root->link != NULL ? root->link->frame_channel(b) : 0;
    return ch < root->nchans ? root->chans[ch] : root;
}

/* A packet (or a sequenced frame's content) from `peer` was refused with
 * rc: counted and traced. With `strike`: an honest peer sends nothing we
 * refuse; past the limit, one that keeps doing it is failed (counted on
 * the root: the limit is per peer, whatever channel its packets name). */
static void packet_refused(quay_engine *e, int32_t peer, const void *bytes, size_t len, int rc,
                           int strike)
{
    e->st.pkts_rejected++;
    if (e->trace_fn)
        trace_wire(e, QUAY_TR_REJECT, peer, bytes, len, rc);
    if (!strike)
        return;
    quay_engine *root = e->root;
    uint32_t limit = root->cfg.malformed_limit;
    if (limit != 0 && peer != root->rank && !peer_failed(root, peer) &&
        ++root->strikes[peer].rejected > limit)
        engine_peer_hostile(root, peer, QUAY_EPROTO);
}

/* Count, trace and follow up a packet's verdict rc (0: consumed). */
static int packet_done(quay_engine *e, int32_t peer, const void *bytes, size_t len, int rc)
{
    if (rc == 0) {
        e->st.pkts_in++;
        if (e->trace_fn && !train_is(bytes, len)) /* (a train's: train_arrival) */
            trace_wire(e, QUAY_TR_PKT_IN, peer, bytes, len, 0);
    } else if (rc == QUAY_EAGAIN) {
        e->st.pkts_deferred++;
    } else if (!quay_err_is_fatal(rc)) {
        packet_refused(e, peer, bytes, len, rc, 1);
        return e->fatal ? e->fatal : rc; /* refused: it moved nothing */
    }
    if (coll_due(e))
        e->coll.hooks->progress(e); /* the arrival finished steps: start the next */
    if (e->fatal)
        return e->fatal;
    return rc;
}

/* quay_on_packet, all of it; `tried`: eager_fast_arrival already said
 * EAGER_NOT_FAST. */
static QUAY_NOINLINE int on_packet_general(quay_engine *e, int32_t peer, const void *bytes,
                                           size_t len, int tried)
{
    if (e == NULL || (bytes == NULL && len != 0))
        return QUAY_EINVAL;
    e = packet_channel(e->root, bytes, len);
    if (e->fatal)
        return e->fatal;
    if (peer < 0 || peer >= e->nranks)
        return QUAY_EINVAL;
    int rc;
    if (peer_failed(e, peer)) {
        rc = QUAY_ESTATE; /* declared failed: nothing more from it counts */
    } else if (e->flow) {
        int content;
        rc = e->link->on_frame(e, peer, bytes, len, &content);
        if (rc == LINK_DAMAGED) {
            /* No strike: damage is the link's, not the peer's. */
            packet_refused(e, peer, bytes, len, QUAY_EPROTO, 0);
            return e->fatal ? e->fatal : QUAY_EPROTO;
        }
        if (rc == LINK_CONSUMED) {
            e->st.pkts_in++;
            if (content != 0) /* the frame was taken, its content refused */
                packet_refused(e, peer, bytes, len, content, 1);
            if (coll_due(e))
                e->coll.hooks->progress(e); /* (an ACK may have finished steps) */
            return e->fatal ? e->fatal : 0;
        }
    } else if (peer == e->rank) {
        rc = QUAY_ESTATE; /* self traffic never travels (a link: EPROTO) */
    } else if (train_is(bytes, len)) {
        rc = train_arrival(e, peer, bytes, len);
    } else {
        rc = tried ? EAGER_NOT_FAST : eager_fast_arrival(e, peer, bytes, len);
        if (rc == EAGER_NOT_FAST)
            rc = engine_recv(e, peer, bytes, len, NULL);
    }
    return packet_done(e, peer, bytes, len, rc);
}

int quay_on_packet(quay_engine *e, int32_t peer, const void *bytes, size_t len)
{
    /* The small-message hot path [design.md §10]: one channel, no flow
     * control, a healthy engine, a peer in range that is neither us nor
     * failed (the general path's checks, passed): an in-order EAGER for
     * a posted receive is consumed by eager_fast_arrival. */
    int tried = 0;
    if (e != NULL && bytes != NULL && e->nchans == 1 && !e->flow && e->fatal == 0 &&
        peer >= 0 && peer < e->nranks && peer != e->rank && e->nfailed == 0) {
        tried = 1;
        int rc = eager_arrival(e, peer, bytes, len, 0, NULL);
        if (rc == 0 && !e->trace_fn && !coll_due(e)) {
            e->st.pkts_in++;
            return e->fatal;
        }
        if (rc != EAGER_NOT_FAST)
            return packet_done(e, peer, bytes, len, rc);
    }
    return on_packet_general(e, peer, bytes, len, tried);
}

/* ---- time ------------------------------------------------------------------- */

static int channel_on_time(quay_engine *e, uint64_t now_ns)
{
    if (e->fatal)
        return e->fatal;
    if (now_ns > e->now)
        e->now = now_ns;
    /* The core protocols keep no timers; flow control has retransmission. */
    if (e->flow)
        e->link->on_time(e);
    return e->fatal;
}

int quay_on_time(quay_engine *e, uint64_t now_ns)
{
    if (e == NULL)
        return QUAY_EINVAL;
    e = e->root;
    int rc = 0;
    for (uint32_t k = 0; k < e->nchans; k++) {
        int r = channel_on_time(e->chans[k], now_ns);
        if (rc == 0)
            rc = r;
    }
    return rc;
}

uint64_t quay_next_deadline(const quay_engine *e)
{
    if (e == NULL)
        return QUAY_TIME_NONE;
    e = e->root;
    uint64_t d = QUAY_TIME_NONE;
    for (uint32_t k = 0; k < e->nchans; k++) {
        const quay_engine *ch = e->chans[k];
        if (ch->flow && !ch->fatal) {
            uint64_t t = ch->link->deadline(ch);
            if (t < d)
                d = t;
        }
    }
    return d;
}

/* ---- the action queue and op_done across channels ------------------------------ */

int quay_has_actions(const quay_engine *e)
{
    if (e == NULL)
        return 0;
    e = e->root;
    for (uint32_t k = 0; k < e->nchans; k++)
        if (out_has_actions(e->chans[k]))
            return 1;
    return 0;
}

int quay_in_flight(const quay_engine *e)
{
    if (e == NULL)
        return 0;
    e = e->root;
    for (uint32_t k = 0; k < e->nchans; k++)
        if (e->chans[k]->reqs_used != 0 || e->chans[k]->outs_used != 0)
            return 1;
    return 0;
}

/* Channels take turns, one action each, so none starves another. Out of
 * line: the single-channel pull stays a tail call. */
static QUAY_NOINLINE int next_action_channels(quay_engine *e, quay_action *a)
{
    for (uint32_t i = 0; i < e->nchans; i++) {
        uint32_t k = (e->act_rr + i) % e->nchans;
        quay_engine *ch = e->chans[k];
        if (ch->fatal)
            return ch->fatal;
        if (!out_has_actions(ch))
            continue;
        int rc = out_next_action(ch, a);
        if (rc != 0) {
            e->act_rr = (k + 1) % e->nchans;
            return rc;
        }
    }
    return 0;
}

int quay_next_action(quay_engine *e, quay_action *a)
{
    if (e == NULL || a == NULL)
        return QUAY_EINVAL;
    e = e->root;
    if (e->nchans == 1)
        return out_next_action(e, a);
    return next_action_channels(e, a);
}

int quay_on_op_done(quay_engine *e, uint64_t token, int status)
{
    if (e == NULL)
        return QUAY_EINVAL;
    e = e->root;
    uint32_t ch = (uint32_t)(token >> OUT_TOKEN_CHAN_SHIFT) & OUT_TOKEN_CHAN_MASK;
    if (ch >= e->nchans)
        return e->fatal ? e->fatal : QUAY_ESTATE;
    if (ch != 0)
        e = e->chans[ch]; /* channel 0 is the root: no read of chans[] */
    int rc = out_on_op_done(e, token, status);
    if (coll_due(e))
        e->coll.hooks->progress(e);
    return e->fatal ? e->fatal : rc;
}

/* ---- introspection ----------------------------------------------------------- */

void engine_stats(const quay_engine *e, quay_stats *st)
{
    *st = e->st;
    st->bytes_unexpected = e->ubytes;
    st->bytes_unexpected_peak = e->ubytes_peak;
    st->reqs_in_use = e->reqs_used;
    st->umsgs_in_use = e->msgs_used;
    st->outs_in_use = e->outs_used;
    st->held_out_of_order = e->held_total;
    st->comms_in_use = e->ncomms;
    st->ctrl_queued = e->ctrl_count;
    st->regions_in_use = e->mem.used;
    st->ctrl_reserved = e->ctrl_reserved;
}
