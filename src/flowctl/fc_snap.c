/*
 * fc_snap.c — the link's part of each peer record of a context blob
 * (layout in docs/flowctl.md): the ACK/NACK state machine's sender and
 * receiver (fc_tx, fc_rx), then what chan.c keeps per peer (retransmit
 * hold, NACK pacing, keepalive probes) with the policy's own run in its
 * place (fc_policy.sx: credits). One contiguous run of the record,
 * written, checked and rebuilt here; the engine's PEER section calls it
 * through the snap_link table at its place. A record is read into the
 * link's scratch peer (the one past the last) and checked there, so CHECK
 * changes nothing the channel runs on.
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

/* The record; 0 if the policy's run (pol NULL: no link, zeros) is not
 * sane. */
static int sx_peer(snap *s, const fc_policy *pol, fc_peer *fp)
{
    sx_fc(s, &fp->tx, &fp->rx);
    sx_u64(s, &fp->hold_until);
    sx_u32(s, &fp->nack_seq);
    sx_u32(s, &fp->nack_repeats);
    sx_u32(s, &fp->gap_seq);
    sx_u8(s, &fp->gap_nacked);
    sx_u8(s, &fp->gap_nack_owed);
    int ok = 1;
    if (pol != NULL) {
        ok = pol->sx(s, fp);
    } else { /* (the run every policy of version 5 has: u32, u32, u8) */
        uint32_t z32 = 0;
        uint8_t z8 = 0;
        sx_u32(s, &z32);
        sx_u32(s, &z32);
        sx_u8(s, &z8);
    }
    sx_u8(s, &fp->probe_due);
    sx_u32(s, &fp->probes);
    sx_u8(s, &fp->heard);
    sx_u8(s, &fp->ping_owed);
    sx_u8(s, &fp->ka_wanted);
    sx_u64(s, &fp->probe_at);
    sx_u64(s, &fp->probe_rto);
    return ok;
}

static int peer_ok(const fc_params *p, const fc_peer *fp, uint8_t failed)
{
    const fc_tx *t = &fp->tx;
    /* Stable when saved: nothing unacknowledged, no timer running (a
     * failed peer's abandoned packets aside: nothing waits for them). */
    return (failed ||
            (t->una == t->next && t->resend == t->next && t->deadline == UINT64_MAX)) &&
           t->state <= 1 && t->failed <= 1 && t->has_rtt <= 1 && t->backed_off <= 1 &&
           t->rto >= p->rto_init_ns && t->rto <= p->rto_max_ns &&
           t->rto_base >= p->rto_init_ns && t->rto_base <= p->rto_max_ns &&
           fp->rx.state <= 1 && fp->rx.ack_owed <= 1 && fp->rx.nack_owed <= 1 &&
           fp->gap_nacked <= 1 && fp->gap_nack_owed <= 1 &&
           fp->probe_due <= 1 && fp->heard <= 1 && fp->ping_owed <= 1 &&
           fp->ka_wanted <= 1 && fp->probe_rto >= p->rto_init_ns &&
           fp->probe_rto <= p->rto_max_ns;
}

/* A time t moved on by delta, unless it is `off` (the timer not set). */
static uint64_t rebase(uint64_t t, uint64_t delta, uint64_t off)
{
    return t == off ? off : t + delta;
}

static void fc_snap_sx(snap *s, int32_t p, uint8_t failed, uint64_t delta)
{
    fc_link *l = chan_state(s->e);
    if (l == NULL) {
        /* No flow control: snapshot_state still shows the channel, as
         * zeros; nothing of it is ever restored (not switchable). */
        fc_peer zero;
        memset(&zero, 0, sizeof zero);
        sx_peer(s, NULL, &zero);
        if (s->mode != SNAP_SAVE)
            snap_corrupt(s);
        return;
    }
    if (s->mode == SNAP_SAVE) {
        sx_peer(s, l->pol, chan_peer(l, p));
        return;
    }
    fc_peer *fp = chan_peer(l, s->e->nranks); /* the scratch */
    memset(fp, 0, l->stride);
    int pol_ok = sx_peer(s, l->pol, fp);
    if (s->err != 0 || !pol_ok || !peer_ok(&l->fcp, fp, failed)) {
        snap_corrupt(s);
        return;
    }
    if (s->mode != SNAP_APPLY)
        return;
    /* Nothing queued yet (PEER requeues its packets), nothing in flight:
     * it was saved stable. */
    fp->hold_until = rebase(fp->hold_until, delta, 0);
    fp->probe_at = rebase(fp->probe_at, delta, 0);
    fp->tx.deadline = rebase(fp->tx.deadline, delta, UINT64_MAX);
    memcpy(chan_peer(l, p), fp, l->stride); /* (with the policy's state) */
}

static int fc_snap_owes(const snap *s, int32_t p, uint32_t held)
{
    QUAY_UNUSED(p); /* (the record sx read last, in the scratch) */
    const quay_engine *e = s->e;
    return chan_peer_owes(e, chan_peer(chan_state(e), e->nranks), held);
}

const snap_link fc_snap_link = {
    fc_snap_sx,
    fc_snap_owes,
    chan_queued,
    chan_requeue,
};
