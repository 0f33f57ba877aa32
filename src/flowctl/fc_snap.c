/*
 * fc_snap.c — the link's part of each peer record of a context blob
 * (layout in docs/flowctl.md): the ACK/NACK state machine's sender and
 * receiver (fc_tx, fc_rx), then what chan.c keeps per peer (retransmit
 * hold, NACK pacing, credits, keepalive probes). One contiguous run of
 * the record, written, checked and rebuilt here; the engine's PEER
 * section calls it through the snap_link table at its place.
 */
#include "flowctl/fc_snap.h"

#include "flowctl/chan.h"

static void sx_fc(snap *s, fc_tx *t, fc_rx *r)
{
    sx_u32(s, &t->next);
    sx_u32(s, &t->una);
    sx_u32(s, &t->resend);
    sx_u32(s, &t->retries);
    sx_u32(s, &t->stuck);
    sx_u64(s, &t->rto);
    sx_u64(s, &t->rto_base);
    sx_u64(s, &t->srtt);
    sx_u64(s, &t->rttvar);
    sx_u8(s, &t->has_rtt);
    sx_u8(s, &t->backed_off);
    sx_u64(s, &t->deadline);
    sx_u8(s, &t->state);
    sx_u8(s, &t->failed);
    sx_u32(s, &r->expected);
    sx_u32(s, &r->refused);
    sx_u8(s, &r->state);
    sx_u8(s, &r->ack_owed);
    sx_u8(s, &r->nack_owed);
}

static void fc_snap_peer(snap *s, peer_state *ps)
{
    sx_fc(s, &ps->tx, &ps->rx);
    sx_u64(s, &ps->hold_until);
    sx_u32(s, &ps->nack_seq);
    sx_u32(s, &ps->nack_repeats);
    sx_u32(s, &ps->gap_seq);
    sx_u8(s, &ps->gap_nacked);
    sx_u8(s, &ps->gap_nack_owed);
    sx_u32(s, &ps->credit_limit);
    sx_u32(s, &ps->credit_sent);
    sx_u8(s, &ps->peer_blocked);
    sx_u8(s, &ps->probe_due);
    sx_u32(s, &ps->probes);
    sx_u8(s, &ps->heard);
    sx_u8(s, &ps->ping_owed);
    sx_u8(s, &ps->ka_wanted);
    sx_u64(s, &ps->probe_at);
    sx_u64(s, &ps->probe_rto);
}

static int fc_snap_peer_ok(const snap *s, const peer_state *ps)
{
    const fc_params *p = &s->e->fcp;
    const fc_tx *t = &ps->tx;
    /* Stable when saved: nothing unacknowledged, no timer running (a
     * failed peer's abandoned packets aside: nothing waits for them). */
    return (ps->failed ||
            (t->una == t->next && t->resend == t->next && t->deadline == UINT64_MAX)) &&
           t->state <= 1 && t->failed <= 1 && t->has_rtt <= 1 && t->backed_off <= 1 &&
           t->rto >= p->rto_init_ns && t->rto <= p->rto_max_ns &&
           t->rto_base >= p->rto_init_ns && t->rto_base <= p->rto_max_ns &&
           ps->rx.state <= 1 && ps->rx.ack_owed <= 1 && ps->rx.nack_owed <= 1 &&
           ps->gap_nacked <= 1 && ps->gap_nack_owed <= 1 && ps->peer_blocked <= 1 &&
           ps->probe_due <= 1 && ps->heard <= 1 && ps->ping_owed <= 1 &&
           ps->ka_wanted <= 1 && ps->probe_rto >= p->rto_init_ns &&
           ps->probe_rto <= p->rto_max_ns;
}

/* A time t moved on by delta, unless it is `off` (the timer not set). */
static uint64_t rebase(uint64_t t, uint64_t delta, uint64_t off)
{
    return t == off ? off : t + delta;
}

static void fc_snap_peer_retime(peer_state *ps, uint64_t delta)
{
    ps->hold_until = rebase(ps->hold_until, delta, 0);
    ps->probe_at = rebase(ps->probe_at, delta, 0);
    ps->tx.deadline = rebase(ps->tx.deadline, delta, UINT64_MAX);
}

const snap_link fc_snap_link = {
    fc_snap_peer,
    fc_snap_peer_ok,
    fc_snap_peer_retime,
    chan_peer_owes,
};
