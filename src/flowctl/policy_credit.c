/*
 * policy_credit.c — QUAY_FLOW_CREDIT: the channel (chan.c) with credits.
 * A sender gives a new packet a sequence number only below the limit its
 * peer granted; the receiver grants each peer its share of the room it
 * keeps for it, and lends one more to a blocked sender it waits on.
 * Every frame carries the grant (flag CREDIT, field 12); a sender out of
 * credit says BLOCKED. Rules and the livelocks they avoid:
 * docs/flowctl.md, "Credit mode".
 */
#include "engine/snap.h"
#include "flowctl/chan.h"

/* The channel's knobs, and the credits each peer gets: by default as many
 * as every peer's messages of eager_max bytes fit in the unexpected room
 * (bytes and descriptors), at most the window, at least 1. */
static int credit_config_check(quay_config *c)
{
    int rc = chan_config_check(c);
    if (rc != 0)
        return rc;
    if (c->flow_credits == 0) {
        uint64_t peers = c->nranks > 1 ? (uint64_t)c->nranks - 1 : 1;
        uint64_t by_bytes = c->unexpected_bytes_max / (c->eager_max ? c->eager_max : 1) / peers;
        uint64_t cr = c->flow_window;
        if (c->max_unexpected / peers < cr)
            cr = c->max_unexpected / peers;
        if (by_bytes < cr)
            cr = by_bytes;
        c->flow_credits = cr ? (uint32_t)cr : 1;
    }
    return c->flow_credits > (1u << 30) ? QUAY_EINVAL : 0;
}

/* Per peer, behind the channel's own state. */
typedef struct credit_peer {
    uint32_t limit;      /* we may send seqs before this */
    uint32_t sent;       /* the limit we last granted the peer */
    uint8_t blocked;     /* the peer said it is out of our credit */
    uint8_t stall_asks;  /* its asks with no room to lend, at stall_seq */
    uint32_t stall_seq;  /* (not saved: a restored channel counts anew) */
} credit_peer;

static credit_peer *cp_of(const fc_peer *fp)
{
    return fc_pol(fp);
}

static void credit_peer_init(quay_engine *e, fc_peer *fp)
{
    /* Both ends start from the same configured grant; a peer with a
     * smaller one refuses (NACK) what it cannot hold, until its first
     * frame corrects us. */
    credit_peer *cp = cp_of(fp);
    cp->limit = e->cfg.flow_credits;
    cp->sent = e->cfg.flow_credits;
}

/* The peer's share: it may have sent every seq we accepted, plus
 * flow_credits more than the messages of it that we still hold. Never
 * decreases: accepting a kept message moves both terms. */
static uint32_t credit_share(const quay_engine *e, const fc_peer *fp, uint32_t held)
{
    return fp->rx.expected + e->cfg.flow_credits - held;
}

/* The limit we grant fp's peer: its share, never below a grant already
 * sent (a loan, below, is repaid as the share catches up with it). */
static uint32_t credit_grant(const quay_engine *e, const fc_peer *fp, uint32_t held)
{
    uint32_t share = credit_share(e, fp, held);
    uint32_t sent = cp_of(fp)->sent;
    return fc_seq_lt(share, sent) ? sent : share;
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
 * with a small share (docs/flowctl.md). So when the peer says it is
 * blocked, every seq we granted it has arrived, a request of ours waits on
 * it, and the unexpected room has a free descriptor beyond the loans not
 * yet arrived, it gets one more. With no descriptor free it gets one only
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
static uint32_t credit_lend(quay_engine *e, int32_t peer, fc_peer *fp, uint32_t grant)
{
    credit_peer *cp = cp_of(fp);
    if (!cp->blocked || grant != fp->rx.expected)
        return grant;
    /* Loans not yet arrived (one that arrived and is kept already holds
     * its descriptor). */
    const fc_link *l = chan_state(e);
    uint32_t due = 0;
    for (int32_t p = 0; p < e->nranks; p++) {
        const fc_peer *q = chan_peer(l, p);
        uint32_t share = credit_share(e, q, e->peers[p].credit_held);
        uint32_t sent = cp_of(q)->sent;
        if (fc_seq_lt(share, sent) && fc_seq_lt(q->rx.expected, sent)) {
            uint32_t lent = sent - share, unarrived = sent - q->rx.expected;
            due += lent < unarrived ? lent : unarrived;
        }
    }
    if (!waits_on_peer(e, peer))
        return grant;
    if (e->nmsgs - e->msgs_used <= due) {
        if (cp->stall_seq != fp->rx.expected) {
            cp->stall_seq = fp->rx.expected;
            cp->stall_asks = 0;
        }
        if (++cp->stall_asks < CREDIT_STALL_ASKS)
            return grant;
        cp->stall_asks = 0;
    }
    e->st.credit_loans++;
    return grant + 1;
}

static int credit_may_send(const quay_engine *e, const fc_peer *fp)
{
    QUAY_UNUSED(e);
    return fc_seq_lt(fp->tx.next, cp_of(fp)->limit);
}

/* A grant worth a frame of its own: half the credits came back, or the
 * peer told us it is waiting (it probes: answer even with no new credit,
 * so that a full receiver is not taken for a dead one). */
static int credit_owes(const quay_engine *e, const fc_peer *fp, uint32_t held)
{
    uint32_t more = credit_grant(e, fp, held) - cp_of(fp)->sent;
    uint32_t half = e->cfg.flow_credits / 2 ? e->cfg.flow_credits / 2 : 1;
    return cp_of(fp)->blocked || more >= half;
}

/* Every frame carries our current grant (a NACK's seq is its ack field,
 * so field 12 is free) and says whether we are out of the peer's. */
static void credit_frame_out(quay_engine *e, int32_t p, fc_peer *fp, uint16_t *flags,
                             uint32_t *field)
{
    credit_peer *cp = cp_of(fp);
    *flags |= CHAN_F_CREDIT;
    *field = credit_lend(e, p, fp, credit_grant(e, fp, e->peers[p].credit_held));
    cp->sent = *field;
    cp->blocked = 0;
    if (chan_blocked(e, fp))
        *flags |= CHAN_F_BLOCKED;
}

/* Both ends must run the same policy: every frame has CREDIT. */
static int credit_frame_check(uint16_t flags, uint32_t ack, uint32_t field)
{
    QUAY_UNUSED(ack);
    QUAY_UNUSED(field); /* (any grant: frame_in weighs it) */
    return (flags & CHAN_F_CREDIT) ? 0 : QUAY_EPROTO;
}

static void credit_frame_in(quay_engine *e, fc_peer *fp, uint16_t flags, uint32_t limit)
{
    QUAY_UNUSED(e);
    credit_peer *cp = cp_of(fp);
    /* Grants only grow; one that would let us run more than 2^30 ahead
     * of what the peer acknowledged is not a grant but garbage. */
    if (fc_seq_lt(cp->limit, limit) && limit - fp->tx.una <= (1u << 30))
        cp->limit = limit;
    if (flags & CHAN_F_BLOCKED)
        cp->blocked = 1;
}

/* Its run of the peer record: the limits both ways and the peer's ask. */
static int credit_sx(snap *s, fc_peer *fp)
{
    credit_peer *cp = cp_of(fp);
    sx_u32(s, &cp->limit);
    sx_u32(s, &cp->sent);
    sx_u8(s, &cp->blocked);
    return cp->blocked <= 1;
}

static const fc_policy credit_policy = {
    .peer_size = sizeof(credit_peer),
    .flags = CHAN_F_CREDIT | CHAN_F_BLOCKED,
    .peer_init = credit_peer_init,
    .may_send = credit_may_send,
    .owes = credit_owes,
    .frame_out = credit_frame_out,
    .frame_check = credit_frame_check,
    .frame_in = credit_frame_in,
    .sx = credit_sx,
};

const link_ops credit_link = CHAN_LINK("credit", &credit_policy, credit_config_check, 1);
