/*
 * scn_check.c — the checks made on a finished run (the runner itself checks
 * exactly-once completion, buffered-send completion, engine statistics and
 * error codes while it runs):
 *
 *  (b) payload: each receive holds the first min(size, cap) bytes of the
 *      send it matched and nothing else was written, guard bytes included;
 *      status source / tag / count / error (ETRUNCATE iff size > cap);
 *  (c) MPI non-overtaking, as properties of the MATCH order at each
 *      receiver: for sends m1 before m2 (same sender, comm, receiver), if
 *      the receive that got m2 also matches m1 then m1 was matched first;
 *      for receives r1 posted before r2, if r2's message also matches r1
 *      then r1 was matched (or cancelled) before;
 *  (d) a cancelled send was received by nobody, any other send by exactly
 *      one receive; a cancelled receive got nothing;
 *  (e) ready send: ENOTPOSTED at the sender iff at the receive that got it
 *      (with count 0);
 *  plus probe results and explicit `expect` lines; collectives (their
 *  statuses, buffers, timing and the traffic on collective twins) are
 *  checked in scn_coll.c.
 */
#include "scn_int.h"

#include <inttypes.h>
#include <string.h>

static const char *kname(int kind)
{
    switch (kind) {
    case SLOT_SEND: return "send";
    case SLOT_RECV: return "receive";
    case SLOT_MPROBE: return "mprobe";
    case SLOT_MRECV: return "mrecv";
    case SLOT_COLL: return "collective";
    default: return "probe";
    }
}

/* The send slot whose PKT_OUT announced the message a MATCH names, or -1
 * (a bad peer, or no such message). */
static int match_send(const scn_runner *run, const match_rec *m)
{
    const seq_list *l;
    int j;
    if (m->peer < 0 || m->peer >= run->s->nranks)
        return -1;
    l = &run->seqs[m->peer][m->rank];
    for (j = 0; j < l->n; j++)
        if (l->v[j].ctx == m->ctx && l->v[j].seq == m->seq)
            return l->v[j].slot;
    return -1;
}

/* Resolve every MATCH to the send it names. */
static void resolve(scn_runner *run)
{
    const scn *s = run->s;
    int i;
    for (i = 0; i < run->nmatches && !run->failed; i++) {
        match_rec *m = &run->matches[i];
        const scn_slot *rs = &s->slots[m->slot];
        const scn_slot *ss;
        slot_dyn *sd;
        if (m->peer < 0 || m->peer >= s->nranks) {
            scn_fail(run, "rank %d: MATCH names bad peer %d", m->rank, m->peer);
            return;
        }
        m->send = match_send(run, m);
        if (m->send < 0) {
            scn_fail(run,
                     "rank %d: %s '%s' (line %d) matched (rank %d, ctx %u, "
                     "seq %u) but no such message was sent (no PKT_OUT)",
                     m->rank, kname(rs->kind), rs->name, rs->line, m->peer,
                     m->ctx, m->seq);
            return;
        }
        ss = &s->slots[m->send];
        sd = &run->dyn[m->send];
        if (ss->my_crank != m->src || ss->tag != m->tag ||
            ss->peer_world != m->rank) {
            scn_fail(run,
                     "rank %d: MATCH envelope (src %d tag %d) differs from "
                     "send '%s' of rank %d (src %d tag %d to rank %d)",
                     m->rank, m->src, m->tag, ss->name, ss->rank,
                     ss->my_crank, ss->tag, ss->peer_world);
            return;
        }
        if (rs->kind == SLOT_MRECV) {
            /* imrecv re-announcing the message its mprobe took */
            const slot_dyn *pd = &run->dyn[rs->link];
            if (pd->match < 0 || run->matches[pd->match].send != m->send)
                scn_fail(run,
                         "rank %d: mrecv '%s' (line %d) matched send '%s', "
                         "not the message its mprobe took",
                         m->rank, rs->name, rs->line, ss->name);
            continue;
        }
        if (!scn_slot_matches(s, rs, ss)) {
            scn_fail(run,
                     "rank %d: %s '%s' (line %d) got send '%s' (rank %d tag "
                     "%d comm %u), which it does not match",
                     m->rank, kname(rs->kind), rs->name, rs->line, ss->name,
                     ss->rank, ss->tag, s->comms[ss->comm].ctx);
            return;
        }
        run->dyn[m->slot].got = m->send;
        sd->nrecv++;
        sd->recv_by = m->slot;
        if (sd->nrecv > 1) {
            scn_fail(run, "rank %d: send '%s' (line %d) was received twice",
                     ss->rank, ss->name, ss->line);
            return;
        }
    }
    /* an mrecv gets what its mprobe took */
    for (i = 0; i < s->nslots; i++)
        if (s->slots[i].kind == SLOT_MRECV)
            run->dyn[i].got = run->dyn[s->slots[i].link].got;
}

static void check_expect(scn_runner *run, int i)
{
    const scn_slot *x = &run->s->slots[i];
    const slot_dyn *d = &run->dyn[i];
    if (!x->has_expect)
        return;
    if (!d->have_status) {
        scn_fail(run, "rank %d: expect on '%s': no status (freed early?)",
                 x->rank, x->name);
        return;
    }
    if (!x->expect_any && d->st.error != x->expect_err)
        scn_fail(run, "rank %d: '%s' (line %d) ended with err %s, expected %s",
                 x->rank, x->name, x->line, scn_errname(d->st.error),
                 scn_errname(x->expect_err));
    else if (x->expect_count >= 0 && d->st.count != (uint64_t)x->expect_count)
        scn_fail(run,
                 "rank %d: '%s' (line %d) count %" PRIu64 ", expected %" PRId64,
                 x->rank, x->name, x->line, d->st.count, x->expect_count);
    else if (x->has_expect_src && d->st.source != x->expect_src)
        scn_fail(run, "rank %d: '%s' (line %d) source %d, expected %d",
                 x->rank, x->name, x->line, d->st.source, x->expect_src);
    else if (x->has_expect_tag && d->st.tag != x->expect_tag)
        scn_fail(run, "rank %d: '%s' (line %d) tag %d, expected %d", x->rank,
                 x->name, x->line, d->st.tag, x->expect_tag);
}

static void check_send(scn_runner *run, int i)
{
    const scn_slot *x = &run->s->slots[i];
    const slot_dyn *d = &run->dyn[i];
    if (!d->posted)
        return;
    if (d->have_status) {
        if (d->st.cancelled) {
            if (d->nrecv != 0)
                scn_fail(run,
                         "rank %d: send '%s' (line %d) reports cancelled but "
                         "was received by '%s'",
                         x->rank, x->name, x->line,
                         run->s->slots[d->recv_by].name);
            else if (d->st.error != QUAY_ECANCELLED)
                scn_fail(run,
                         "rank %d: cancelled send '%s' has err %s, not "
                         "ECANCELLED",
                         x->rank, x->name, scn_errname(d->st.error));
            return;
        }
        if (x->peer == QUAY_PROC_NULL) {
            if (d->nrecv != 0 || d->st.error != 0)
                scn_fail(run, "rank %d: send '%s' to PROC_NULL: err %s",
                         x->rank, x->name, scn_errname(d->st.error));
            return;
        }
        if (d->nrecv != 1) {
            scn_fail(run,
                     "rank %d: send '%s' (line %d) completed (err %s) but was "
                     "received by nobody",
                     x->rank, x->name, x->line, scn_errname(d->st.error));
            return;
        }
        if (d->st.error != 0 &&
            !(x->mode == QUAY_SEND_READY && d->st.error == QUAY_ENOTPOSTED)) {
            scn_fail(run, "rank %d: send '%s' (line %d) ended with err %s",
                     x->rank, x->name, x->line, scn_errname(d->st.error));
            return;
        }
        /* a send's count is the message length, truncated or not */
        if (d->st.error == 0 && d->st.count != x->size)
            scn_fail(run,
                     "rank %d: send '%s' (line %d) status count %" PRIu64
                     ", sent %" PRIu64,
                     x->rank, x->name, x->line, d->st.count, x->size);
    } else if (x->peer != QUAY_PROC_NULL) {
        /* freed before completion: no status to look at */
        if (d->nrecv != 1 && !d->cancel_called)
            scn_fail(run,
                     "rank %d: freed send '%s' (line %d) was received by "
                     "nobody",
                     x->rank, x->name, x->line);
    }
}

static void check_bytes(scn_runner *run, int i, uint64_t n, int got)
{
    const scn *s = run->s;
    const scn_slot *x = &s->slots[i];
    const unsigned char *b = run->rk[x->rank].arena + x->off;
    uint64_t j, end = x->size + SCN_GUARD;
    if (got >= 0) {
        const scn_slot *m = &s->slots[got];
        for (j = 0; j < n; j++) {
            if (b[j] != scn_pattern(m->rank, m->send_k, j)) {
                scn_fail(run,
                         "rank %d: %s '%s' (line %d): byte %" PRIu64
                         " is 0x%02x, send '%s' of rank %d has 0x%02x",
                         x->rank, kname(x->kind), x->name, x->line, j, b[j],
                         m->name, m->rank,
                         scn_pattern(m->rank, m->send_k, j));
                return;
            }
        }
    }
    for (j = n; j < end; j++) {
        if (b[j] != SCN_FILL) {
            scn_fail(run,
                     "rank %d: %s '%s' (line %d, cap %" PRIu64
                     "): byte %" PRIu64 " written (%s %" PRIu64 " bytes)",
                     x->rank, kname(x->kind), x->name, x->line, x->size, j,
                     j >= x->size ? "past cap; delivered" : "delivered only",
                     n);
            return;
        }
    }
}

static void check_recv(scn_runner *run, int i)
{
    const scn *s = run->s;
    const scn_slot *x = &s->slots[i];
    const slot_dyn *d = &run->dyn[i];
    const quay_status *st = &d->st;
    int got = d->got;
    if (!d->posted)
        return;
    if (got < 0) {
        if (x->peer == QUAY_PROC_NULL) {
            if (d->have_status &&
                (st->source != QUAY_PROC_NULL || st->tag != QUAY_ANY_TAG ||
                 st->count != 0 || st->error != 0))
                scn_fail(run,
                         "rank %d: %s '%s' from PROC_NULL: status src %d tag "
                         "%d count %" PRIu64 " err %s",
                         x->rank, kname(x->kind), x->name, st->source, st->tag,
                         st->count, scn_errname(st->error));
        } else if (!d->have_status || !st->cancelled) {
            scn_fail(run,
                     "rank %d: %s '%s' (line %d) completed without a MATCH "
                     "and was not cancelled",
                     x->rank, kname(x->kind), x->name, x->line);
            return;
        } else if (st->error != QUAY_ECANCELLED || st->count != 0) {
            scn_fail(run,
                     "rank %d: cancelled receive '%s': err %s count %" PRIu64,
                     x->rank, x->name, scn_errname(st->error), st->count);
        }
        check_bytes(run, i, 0, -1);
        return;
    }
    {
        const scn_slot *m = &s->slots[got];
        const slot_dyn *md = &run->dyn[got];
        int np;
        uint64_t n;
        int32_t want_err;
        if (d->have_status)
            np = st->error == QUAY_ENOTPOSTED;
        else
            np = md->have_status && md->st.error == QUAY_ENOTPOSTED;
        if (np && m->mode != QUAY_SEND_READY) {
            scn_fail(run,
                     "rank %d: %s '%s' got ENOTPOSTED from a non-ready send "
                     "'%s'",
                     x->rank, kname(x->kind), x->name, m->name);
            return;
        }
        /* (e) */
        if (m->mode == QUAY_SEND_READY && d->have_status && md->have_status &&
            (md->st.error == QUAY_ENOTPOSTED) != np) {
            scn_fail(run,
                     "ready send '%s' (rank %d) ended with %s but the receive "
                     "'%s' (rank %d) that got it with %s",
                     m->name, m->rank, scn_errname(md->st.error), x->name,
                     x->rank, scn_errname(st->error));
            return;
        }
        n = np ? 0 : (m->size < x->size ? m->size : x->size);
        want_err = np ? QUAY_ENOTPOSTED
                      : (m->size > x->size ? QUAY_ETRUNCATE : 0);
        if (d->have_status) {
            if (st->cancelled) {
                scn_fail(run,
                         "rank %d: receive '%s' (line %d) reports cancelled "
                         "but matched send '%s'",
                         x->rank, x->name, x->line, m->name);
                return;
            }
            if (st->source != m->my_crank || st->tag != m->tag ||
                st->count != n || st->error != want_err) {
                scn_fail(run,
                         "rank %d: %s '%s' (line %d) got send '%s' of rank %d "
                         "(%" PRIu64 " bytes, tag %d): status src %d tag %d "
                         "count %" PRIu64 " err %s, expected src %d tag %d "
                         "count %" PRIu64 " err %s",
                         x->rank, kname(x->kind), x->name, x->line, m->name,
                         m->rank, m->size, m->tag, st->source, st->tag,
                         st->count, scn_errname(st->error), m->my_crank,
                         m->tag, n, scn_errname(want_err));
                return;
            }
        }
        check_bytes(run, i, n, got);
    }
}

static void check_probe(scn_runner *run, int i)
{
    const scn *s = run->s;
    const scn_slot *x = &s->slots[i];
    const slot_dyn *d = &run->dyn[i];
    int j, found = 0, poisoned;
    if (!d->probe_flag)
        return;
    if (x->peer == QUAY_PROC_NULL) {
        if (d->st.source != QUAY_PROC_NULL)
            scn_fail(run, "rank %d: probe '%s' of PROC_NULL: source %d",
                     x->rank, x->name, d->st.source);
        return;
    }
    /* A ready send that found no receive posted is probed as the receive
     * will get it: ENOTPOSTED, count 0 (quay_iprobe). */
    poisoned = d->st.error == QUAY_ENOTPOSTED && d->st.count == 0;
    for (j = 0; j < s->nslots && !found; j++) {
        const scn_slot *m = &s->slots[j];
        found = m->kind == SLOT_SEND && scn_slot_matches(s, x, m) &&
                m->my_crank == d->st.source && m->tag == d->st.tag &&
                (m->size == d->st.count || (poisoned && m->mode == QUAY_SEND_READY));
    }
    if (!found) {
        scn_fail(run,
                 "rank %d: probe '%s' (line %d) found src %d tag %d count "
                 "%" PRIu64 ": no such message is sent",
                 x->rank, x->name, x->line, d->st.source, d->st.tag,
                 d->st.count);
        return;
    }
    if (x->link >= 0) {
        int got = run->dyn[x->link].got;
        const scn_slot *m = got >= 0 ? &s->slots[got] : NULL;
        if (m == NULL || m->my_crank != d->st.source || m->tag != d->st.tag ||
            (poisoned ? m->mode != QUAY_SEND_READY : m->size != d->st.count))
            scn_fail(run,
                     "rank %d: probe '%s' (line %d) saw src %d tag %d count "
                     "%" PRIu64 " but the next receive '%s' got %s%s",
                     x->rank, x->name, x->line, d->st.source, d->st.tag,
                     d->st.count, s->slots[x->link].name,
                     m ? "send " : "nothing", m ? m->name : "");
    }
}

/* (c) */
static void check_order(scn_runner *run)
{
    const scn *s = run->s;
    int i, j;
    for (i = 0; i < run->nmatches && !run->failed; i++) {
        const match_rec *m = &run->matches[i];
        const scn_slot *r2 = &s->slots[m->slot];
        const scn_slot *s2;
        int snd;
        if (r2->kind == SLOT_MRECV || m->send < 0)
            continue;
        s2 = &s->slots[m->send];
        snd = s2->rank;
        /* earlier sends of the same sender */
        for (j = 0; j < run->nrank_slots[snd]; j++) {
            int k = run->rank_slots[snd][j];
            const scn_slot *s1 = &s->slots[k];
            const slot_dyn *d1 = &run->dyn[k];
            if (s1->kind != SLOT_SEND || s1->send_k >= s2->send_k ||
                s1->comm != s2->comm || s1->peer_world != s2->peer_world ||
                !scn_slot_matches(s, r2, s1))
                continue;
            if (d1->nrecv > 0) {
                uint64_t t1 = run->dyn[d1->recv_by].match_t;
                if (t1 > m->t) {
                    scn_fail(run,
                             "non-overtaking: rank %d: %s '%s' (line %d) got "
                             "send '%s' (line %d) while the earlier send '%s' "
                             "(line %d) of rank %d, which it also matches, was "
                             "matched later (by '%s')",
                             m->rank, kname(r2->kind), r2->name, r2->line,
                             s2->name, s2->line, s1->name, s1->line, snd,
                             s->slots[d1->recv_by].name);
                    return;
                }
            } else if (!(d1->have_status && d1->st.cancelled) &&
                       !d1->cancel_called) {
                scn_fail(run,
                         "non-overtaking: rank %d: %s '%s' (line %d) got send "
                         "'%s' while the earlier matching send '%s' (line %d) "
                         "was never received",
                         m->rank, kname(r2->kind), r2->name, r2->line,
                         s2->name, s1->name, s1->line);
                return;
            }
        }
        /* earlier posted receives of the same receiver */
        for (j = 0; j < run->nrank_slots[m->rank]; j++) {
            int k = run->rank_slots[m->rank][j];
            const scn_slot *r1 = &s->slots[k];
            const slot_dyn *d1 = &run->dyn[k];
            if (r1->kind != SLOT_RECV || k == m->slot || !d1->posted ||
                d1->post_t >= run->dyn[m->slot].post_t ||
                !scn_slot_matches(s, r1, s2))
                continue;
            if (d1->match_t < m->t)
                continue;
            if (d1->match < 0 && d1->cancel_t < m->t)
                continue;
            scn_fail(run,
                     "receive order: rank %d: receive '%s' (line %d) was "
                     "posted before %s '%s' (line %d) and matches send '%s' "
                     "(rank %d, line %d), but '%s' got it%s",
                     m->rank, r1->name, r1->line, kname(r2->kind), r2->name,
                     r2->line, s2->name, snd, s2->line, r2->name,
                     d1->match >= 0 ? " and the earlier one matched later"
                                    : "");
            return;
        }
    }
}

void scn_check_run(scn_runner *run)
{
    const scn *s = run->s;
    int i;
    resolve(run);
    for (i = 0; i < s->nslots && !run->failed; i++) {
        switch (s->slots[i].kind) {
        case SLOT_SEND:
            check_send(run, i);
            break;
        case SLOT_RECV:
        case SLOT_MRECV:
            check_recv(run, i);
            break;
        case SLOT_MPROBE:
            if (run->dyn[i].got < 0 && s->slots[i].peer != QUAY_PROC_NULL)
                scn_fail(run, "rank %d: mprobe '%s' took no message",
                         s->slots[i].rank, s->slots[i].name);
            break;
        default:
            break;
        }
    }
    for (i = 0; i < s->nslots && !run->failed; i++) {
        if (s->slots[i].kind == SLOT_PROBE)
            check_probe(run, i);
        check_expect(run, i);
    }
    if (!run->failed)
        check_order(run);
    if (!run->failed)
        scn_coll_check_run(run);
}

/* ------------------------------------------------------------------ */
/* Summary of the last run                                              */
/* ------------------------------------------------------------------ */

void scn_settle(scn_runner *run)
{
    int i;
    for (i = 0; i < run->s->nslots; i++) {
        slot_dyn *d = &run->dyn[i];
        if (scn_is_req(run->s->slots[i].kind) && d->posted && d->req != NULL &&
            !d->have_status && !d->released && !d->user_freed &&
            !d->inline_sent && quay_req_test(d->req, &d->st) == 1) {
            d->have_status = 1;
            d->settled = 1;
        }
    }
}

/* "ok", "ETRUNCATE", "incomplete" ...; "(not waited)" when only
 * scn_settle saw it complete. */
static const char *outcome(const slot_dyn *d, char *buf, size_t len)
{
    const char *o;
    if (!d->posted)
        return "not posted";
    if (!d->have_status)
        return d->user_freed ? "freed before completion" : "incomplete";
    if (d->st.cancelled)
        o = "cancelled";
    else
        o = d->st.error == 0 ? "ok" : scn_errname(d->st.error);
    snprintf(buf, len, "%s%s", o, d->settled ? " (not waited)" : "");
    return buf;
}

/* The send receive-like slot i got, read from the MATCH records: a run
 * that stopped before its checks never resolved them into `got`. An mrecv
 * gets what its mprobe took. */
static int got_of(const scn_runner *run, int i)
{
    const scn_slot *x = &run->s->slots[i];
    const slot_dyn *d = &run->dyn[x->kind == SLOT_MRECV ? x->link : i];
    return d->match >= 0 ? match_send(run, &run->matches[d->match]) : -1;
}

/* How many receives (not mrecvs: their mprobe counts) got send slot i. */
static int receivers_of(const scn_runner *run, int i)
{
    int k, n = 0;
    for (k = 0; k < run->nmatches; k++)
        if (run->s->slots[run->matches[k].slot].kind != SLOT_MRECV &&
            match_send(run, &run->matches[k]) == i)
            n++;
    return n;
}

static void summary_line(const scn_runner *run, int i, FILE *out)
{
    const scn *s = run->s;
    const scn_slot *x = &s->slots[i];
    const slot_dyn *d = &run->dyn[i];
    char ob[48];
    int got;
    switch (x->kind) {
    case SLOT_SEND:
        if (x->peer == QUAY_PROC_NULL)
            fprintf(out, "rank %d %s -> PROC_NULL, %s\n", x->rank, x->name,
                    outcome(d, ob, sizeof ob));
        else
            fprintf(out,
                    "rank %d %s -> rank %d tag %d, %" PRIu64 " bytes, %s%s\n",
                    x->rank, x->name, x->peer_world, x->tag, x->size,
                    outcome(d, ob, sizeof ob),
                    !d->posted || receivers_of(run, i) == 1
                        ? ""
                        : " (not received)");
        break;
    case SLOT_RECV:
    case SLOT_MRECV:
        if ((got = got_of(run, i)) >= 0) {
            const scn_slot *m = &s->slots[got];
            fprintf(out, "rank %d %s <- rank %d tag %d, %" PRIu64 " bytes, %s\n",
                    x->rank, x->name, m->rank, m->tag,
                    d->have_status ? d->st.count
                                   : (m->size < x->size ? m->size : x->size),
                    outcome(d, ob, sizeof ob));
        } else if (x->peer == QUAY_PROC_NULL) {
            fprintf(out, "rank %d %s <- PROC_NULL, %s\n", x->rank, x->name,
                    outcome(d, ob, sizeof ob));
        } else {
            fprintf(out, "rank %d %s <- nothing, %s\n", x->rank, x->name,
                    outcome(d, ob, sizeof ob));
        }
        break;
    case SLOT_MPROBE:
        if ((got = got_of(run, i)) >= 0)
            fprintf(out, "rank %d %s: mprobe took rank %d tag %d (%" PRIu64
                         " bytes)\n",
                    x->rank, x->name, s->slots[got].rank, s->slots[got].tag,
                    s->slots[got].size);
        break;
    case SLOT_COLL:
        scn_coll_summary(run, i, out);
        break;
    case SLOT_PROBE:
        if (d->probe_flag)
            fprintf(out, "rank %d %s: probe saw src %d tag %d (%" PRIu64
                         " bytes)\n",
                    x->rank, x->name, d->st.source, d->st.tag, d->st.count);
        else
            fprintf(out, "rank %d %s: probe saw nothing\n", x->rank, x->name);
        break;
    default:
        break;
    }
}

void scn_print_summary(const scn_runner *run, FILE *out)
{
    const scn *s = run->s;
    int r, i;
    /* what every receive (and probe) got, rank by rank, then the sends */
    for (r = 0; r < s->nranks; r++)
        for (i = 0; i < s->nslots; i++)
            if (s->slots[i].rank == r && s->slots[i].kind != SLOT_SEND)
                summary_line(run, i, out);
    for (r = 0; r < s->nranks; r++)
        for (i = 0; i < s->nslots; i++)
            if (s->slots[i].rank == r && s->slots[i].kind == SLOT_SEND)
                summary_line(run, i, out);
}

void scn_runner_outcomes(const scn_runner *run, scn_outcomes *o)
{
    const scn *s = run->s;
    int i;
    memset(o, 0, sizeof *o);
    o->deferred = run->deferred;
    o->retransmits = run->retransmits;
    o->nacks = run->nacks;
    o->dups_dropped = run->dups_dropped;
    o->any_claimed = run->any_claimed;
    o->any_declined = run->any_declined;
    o->coll_msgs = (uint32_t)run->ncmatches;
    o->switches_refused = run->switches_refused;
    o->sends = run->sends;
    o->inline_sends = run->inline_sends;
    o->inline_busy = run->inline_busy;
    o->recv_inlines = run->recv_inlines;
    o->recv_inline_busy = run->recv_inline_busy;
    o->copied_sends = run->copied_sends;
    for (i = 0; i < run->nmatches; i++) {
        if (s->slots[run->matches[i].slot].kind == SLOT_MRECV)
            continue;
        if (run->matches[i].in_call)
            o->matched_unexpected++;
        else
            o->matched_posted++;
    }
    for (i = 0; i < s->nslots; i++) {
        const slot_dyn *d = &run->dyn[i];
        int k = s->slots[i].kind;
        if (!d->have_status)
            continue;
        if (k == SLOT_SEND && d->cancel_called) {
            if (d->st.cancelled)
                o->sends_cancelled++;
            else
                o->sends_cancel_lost++;
        }
        if ((k == SLOT_RECV || k == SLOT_MRECV) && d->st.cancelled)
            o->recvs_cancelled++;
        if (k == SLOT_SEND && d->st.error == QUAY_ENOTPOSTED)
            o->notposted++;
        if ((k == SLOT_RECV || k == SLOT_MRECV) &&
            d->st.error == QUAY_ETRUNCATE)
            o->truncated++;
    }
}
