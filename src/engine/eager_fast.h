/*
 * eager_fast.h — the small-message hot path of an arrival, inline: an
 * in-order standard EAGER that meets a posted receive (design.md §10).
 * quay_on_packet (engine.c) runs it in its own frame; the general path
 * calls eager_fast_arrival (eager.c), the same code out of line.
 */
#ifndef QUAY_ENGINE_EAGER_FAST_H
#define QUAY_ENGINE_EAGER_FAST_H

#include "engine/internal.h"
#include "engine/match_fast.h"
#include "engine/payload.h"

/*
 * The hot path's other half: the message of eager_arrival (in its turn,
 * standard mode, checked) meets no posted receive. On a communicator
 * whose arrivals nobody watches (a collective twin under application
 * bypass is watched: match_add_unexp), with no oracle alongside, a
 * payload of up to UPAY_SLOT bytes, a free descriptor and room in the
 * unexpected budget, it is kept here as
 * seq_process keeps one (an engine without flow control holds no credit
 * for it), its payload in a pool slot; else EAGER_NOT_FAST and the general
 * path decides (nothing is changed before the decision).
 */
static QUAY_ALWAYS_INLINE int eager_keep(quay_engine *e, peer_state *ps, quay_comm *c,
                                         const uint8_t *payload, const uint8_t *env,
                                         int32_t peer, int32_t src, int32_t tag, uint64_t mlen)
{
    umsg *m = e->msg_free;
    if (m == NULL || (c->internal && coll_watches_arrivals(&e->coll)) || e->m.oracle != NULL ||
        mlen > UPAY_SLOT ||
        mlen > e->cfg.unexpected_bytes_max - e->ubytes)
        return EAGER_NOT_FAST;
    uint8_t *d = NULL;
    if (mlen != 0) {
        d = upay_get(e);
        if (d == NULL)
            return EAGER_NOT_FAST;
        copy_payload(d, payload, (size_t)mlen);
        ubytes_add(e, (size_t)mlen);
    }
    e->msg_free = (umsg *)m->blink.next;
    e->msgs_used++;
    m->where = UM_UNEXP;
    m->type = QUAY_PKT_EAGER;
    m->flags = 0;
    m->peer = peer;
    m->ctx = c->ctx;
    m->src = src;
    m->tag = tag;
    m->seq = ps->rx_seq++;
    m->sreq = env != NULL ? env_sreq(env) : 0; /* (a piece: none) */
    m->target = 0;
    m->len = mlen;
    m->key = 0;
    m->rreq = 0;
    m->x = 0;
    m->status = 0;
    m->rflags = 0;
    m->slot = 0;
    m->data = d;
    m->pooled = d != NULL;
    m->comm = c;
    c->nunexp++;
    match_unexp_link(&e->m, c, m);
    return 0;
}

/*
 * What a train's previous message found (train_arrival, train.c): its
 * communicator and envelope, checked (source in range and the peer's),
 * matched on the exact path (no oracle, no wildcard posted), and the
 * posted bin of that pattern. A message of the same envelope next reuses
 * all of it: the bins are made once with the engine and a pattern's bin
 * never changes; what could change the exact path's condition (a
 * wildcard receive posted or matched) happens only on the general path,
 * after which train_arrival forgets the memo. c == NULL: nothing known.
 */
typedef struct arrival_memo {
    const quay_comm *c;
    int32_t src, tag;
    qlink *bin;
} arrival_memo;

/*
 * The small-message hot path [design.md §10], once the message is known to be
 * the peer's next (nothing held), standard mode, its envelope well formed
 * (source and tag not negative) and its communicator c found: matches
 * through the same facade as the general path (so the oracle check still
 * applies), copies, completes; with no posted receive, eager_keep keeps
 * it. The payload is mlen bytes at `payload`; env is the message's EAGER
 * envelope (the sender's request id is read from it only if the message
 * is kept), NULL for a train's piece (which has none).
 * `lean` (a constant at every call): the caller has made sure of
 * train_lean's conditions (train.c: no trace hook or oracle; no RTRs or
 * arbitration; c's source src checked and no wildcard posted on c), and
 * memo, if set, is for (c, src).
 */
static QUAY_ALWAYS_INLINE int eager_take(quay_engine *e, peer_state *ps, quay_comm *c,
                                         int32_t peer, int32_t src, int32_t tag,
                                         const uint8_t *env, const uint8_t *payload,
                                         uint64_t mlen, arrival_memo *memo, int lean)
{
    quay_req *r;
    int exact = 1; /* the commonest case, match.c's work inline: no
                      wildcard can be older, nothing else to keep in step */
    if (lean) {
        qlink *bin = memo->bin;
        if (memo->c == NULL || memo->tag != tag) {
            bin = match_posted_bin(&e->m, c, src, tag);
            memo->c = c;
            memo->src = src;
            memo->tag = tag;
            memo->bin = bin;
        }
        r = match_bin_first(bin, c->ctx, src, tag);
    } else if (memo != NULL && memo->c == c && memo->src == src && memo->tag == tag) {
        r = match_bin_first(memo->bin, c->ctx, src, tag); /* (all checked) */
    } else if (!comm_src_ok(c, src, peer)) {
        return QUAY_ESTATE;
    } else if (match_exact_only(e, c)) {
        qlink *bin = match_posted_bin(&e->m, c, src, tag);
        if (memo != NULL) {
            memo->c = c;
            memo->src = src;
            memo->tag = tag;
            memo->bin = bin;
        }
        r = match_bin_first(bin, c->ctx, src, tag);
    } else {
        exact = 0;
        r = match_find_posted(e, c, src, tag);
    }
    if (r == NULL)
        return eager_keep(e, ps, c, payload, env, peer, src, tag, mlen);
    if (lean) {
        ql_remove(&r->link); /* (no RTRs or arbitration: a plain receive) */
        c->nplain--;
    } else if (exact) {
        ql_remove(&r->link);
        if (r->state != QUAY_RS_RECV_RTR && r->state != QUAY_RS_RECV_ANY)
            c->nplain--;
    } else {
        match_remove_posted(e, r);
    }
    if (lean) {
    } else if (r->state == QUAY_RS_RECV_RTR) {
        rtr_undelegate(e, r); /* the envelope got there first */
    } else if (r->state == QUAY_RS_RECV_ANY) {
        arb_release(e, r);
    }
    if (!lean && e->trace_fn)
        trace_match(e, r, NULL, peer, ps->rx_seq, c->ctx, src, tag);
    ps->rx_seq++;
    r->peer = peer;
    r->status.source = src;
    r->status.tag = tag;
    size_t n = (size_t)mlen;
    if (n > r->len) {
        n = r->len;
        r->status.error = QUAY_ETRUNCATE;
    }
    if (n != 0)
        copy_payload(r->u.rbuf, payload, n);
    r->status.count = n;
    if (lean)
        req_complete_untraced(e, r);
    else
        req_complete(e, r);
    return 0;
}

/*
 * An EAGER on the hot path: in order, standard mode, a receive posted or
 * room to keep it (eager_take). Decodes only what matching needs straight
 * from the bytes (the same checks wire_decode makes). Anything else —
 * held packets pending, flags, unknown context — takes the general path,
 * which re-reads the packet from scratch; nothing is changed before the
 * decision.
 * `flags_ok` (a constant at every call): 0 for a packet on its own;
 * WIRE_F_MORE for a train's first message, its length within the train
 * (train_shape has passed: version, type, lengths; the train within
 * max_packet), so only what that check leaves is checked here.
 */
static QUAY_ALWAYS_INLINE int eager_arrival(quay_engine *e, int32_t peer, const uint8_t *b,
                                            size_t len, uint16_t flags_ok, arrival_memo *memo)
{
    if (flags_ok == 0 ? len < WIRE_ENV_LEN || wire_version(b) != WIRE_VERSION ||
                            wire_type(b) != QUAY_PKT_EAGER || wire_flags(b) != 0
                      : (wire_flags(b) & (uint16_t)~flags_ok) != 0)
        return EAGER_NOT_FAST;
    peer_state *ps = &e->peers[peer];
    if (env_seq(b) != ps->rx_seq || ps->nheld != 0)
        return EAGER_NOT_FAST;
    int32_t src = env_src(b);
    int32_t tag = env_tag(b);
    uint64_t mlen = env_len(b);
    if (src < 0 || tag < 0 ||
        (flags_ok == 0 && (mlen != len - WIRE_ENV_LEN || len > e->cfg.max_packet)))
        return QUAY_EPROTO;
    quay_comm *c = comm_lookup(e, env_ctx(b));
    if (c == NULL)
        return EAGER_NOT_FAST;
    return eager_take(e, ps, c, peer, src, tag, b, b + WIRE_ENV_LEN, mlen, memo, 0);
}

/*
 * A train's piece on the hot path (train.h: tag, length, payload), the
 * train's shape checked: message number seq of (c, src) — the first
 * message's communicator (NULL: not one of ours) and source — from the
 * peer whose state is ps; `lean` as eager_take's. As eager_arrival:
 * EAGER_NOT_FAST leaves everything as it was.
 */
static QUAY_ALWAYS_INLINE int eager_piece(quay_engine *e, int32_t peer, peer_state *ps,
                                          quay_comm *c, uint32_t seq, int32_t src,
                                          const uint8_t *piece, arrival_memo *memo, int lean)
{
    if (seq != ps->rx_seq || ps->nheld != 0 || c == NULL)
        return EAGER_NOT_FAST;
    int32_t tag = piece_tag(piece);
    if ((src | tag) < 0)
        return QUAY_EPROTO;
    return eager_take(e, ps, c, peer, src, tag, NULL, piece_payload(piece), piece_len(piece),
                      memo, lean);
}

#endif
