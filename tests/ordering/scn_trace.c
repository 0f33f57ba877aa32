/*
 * scn_trace.c — what the runner learns from the engines and the simulator:
 * the trace hook (message identity: PKT_OUT binds (sender, receiver, ctx,
 * seq) to the sending request, or with request id 0 to the sender's oldest
 * inline send whose packet had not left; MATCH names the receive and the
 * message), COMPLETE actions, nicsim events, failure messages and trace
 * printing.
 * Trace events that arrive while a call is in progress (when the new
 * request's id is not known yet) are deferred until the call returns.
 */
#include "scn_int.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Failure, names                                                       */
/* ------------------------------------------------------------------ */

void scn_fail(scn_runner *run, const char *fmt, ...)
{
    va_list ap;
    if (run->failed)
        return;
    run->failed = 1;
    va_start(ap, fmt);
    vsnprintf(run->err, sizeof run->err, fmt, ap);
    va_end(ap);
    if (run->trace != NULL)
        fprintf(run->trace, "t=%" PRIu64 " FAIL: %s\n", run->step, run->err);
}

const char *scn_errname(int code)
{
    switch (code) {
    case 0: return "0";
    case QUAY_EINVAL: return "EINVAL";
    case QUAY_ERANK: return "ERANK";
    case QUAY_ETAG: return "ETAG";
    case QUAY_ECOMM: return "ECOMM";
    case QUAY_EAGAIN: return "EAGAIN";
    case QUAY_ETRUNCATE: return "ETRUNCATE";
    case QUAY_ECANCELLED: return "ECANCELLED";
    case QUAY_EPEER: return "EPEER";
    case QUAY_ENOTPOSTED: return "ENOTPOSTED";
    case QUAY_EPROTO: return "EPROTO";
    case QUAY_ESTATE: return "ESTATE";
    case QUAY_ENOBUFS: return "ENOBUFS";
    case QUAY_EBUSY: return "EBUSY";
    case QUAY_EVERSION: return "EVERSION";
    case QUAY_ENOTSUP: return "ENOTSUP";
    case QUAY_ENOMEM: return "ENOMEM";
    case QUAY_EINTERNAL: return "EINTERNAL";
    case QUAY_ECORRUPT: return "ECORRUPT";
    case QUAY_EFOREIGN: return "EFOREIGN";
    default: return "E?";
    }
}

const char *scn_mode_name(int m)
{
    switch (m) {
    case QUAY_SEND_SYNC: return "sync";
    case QUAY_SEND_READY: return "ready";
    case QUAY_SEND_BUFFERED: return "buf";
    default: return "std";
    }
}

void scn_fmt_rt(char *b, size_t n, int32_t v)
{
    if (v == QUAY_ANY_SOURCE)
        snprintf(b, n, "any");
    else if (v == QUAY_PROC_NULL)
        snprintf(b, n, "null");
    else
        snprintf(b, n, "%d", v);
}

/* ------------------------------------------------------------------ */
/* Request id map (per rank)                                            */
/* ------------------------------------------------------------------ */

static uint32_t idhash(uint32_t id)
{
    return id * 0x9e3779b1u;
}

void scn_idmap_put(rank_rt *rk, uint32_t id, int slot)
{
    uint32_t mask = rk->idmap_cap - 1, i = idhash(id) & mask;
    while (rk->idmap_val[i] >= 0 && rk->idmap_key[i] != id)
        i = (i + 1) & mask;
    rk->idmap_key[i] = id;
    rk->idmap_val[i] = slot;
}

static int idmap_get(const rank_rt *rk, uint32_t id)
{
    uint32_t mask = rk->idmap_cap - 1, i = idhash(id) & mask;
    while (rk->idmap_val[i] >= 0) {
        if (rk->idmap_key[i] == id)
            return rk->idmap_val[i];
        i = (i + 1) & mask;
    }
    return -1;
}

/* ------------------------------------------------------------------ */
/* Trace events                                                         */
/* ------------------------------------------------------------------ */

static const char *slot_name_by_id(const rank_rt *rk, uint32_t id)
{
    int sl = id ? idmap_get(rk, id) : -1;
    if (sl >= 0)
        return rk->run->s->slots[sl].name;
    /* The engine's own requests: the steps of collective schedules. */
    return rk->run->s->ncinst > 0 ? "coll" : "?";
}

/* An EAGER packet with request id 0 is a quay_send_inline packet (the
 * schedules' messages have requests of their own): the rank's inline
 * sends leave in call order, so it is the oldest one not out yet; -1 if
 * there is none. */
static int inline_next(const rank_rt *rk)
{
    return rk->inl_head < rk->inl_tail ? rk->inl[rk->inl_head] : -1;
}

static int is_inline_pkt(const quay_trace_event *ev)
{
    return ev->kind == QUAY_TR_PKT_OUT && ev->pkt == QUAY_PKT_EAGER &&
           ev->req_id == 0;
}

/* Packet types that carry the sender's envelope sequence number. */
static int sequenced(int pkt)
{
    return pkt == QUAY_PKT_EAGER || pkt == QUAY_PKT_RTS ||
           pkt == QUAY_PKT_CANCEL_REQ || pkt == QUAY_PKT_RTR || pkt == QUAY_PKT_SC;
}

static void print_trace(const scn_runner *run, const rank_rt *rk,
                        const quay_trace_event *ev)
{
    FILE *f = run->trace;
    fprintf(f, "t=%" PRIu64 " rank %d: ", run->step, rk->rank);
    switch (ev->kind) {
    case QUAY_TR_STATE:
        fprintf(f, "STATE req %u (%s) %s->%s\n", ev->req_id,
                slot_name_by_id(rk, ev->req_id), quay_state_name(ev->from),
                quay_state_name(ev->to));
        break;
    case QUAY_TR_PKT_IN:
        /* (the engine does not report seq on PKT_IN; MATCH has it) */
        fprintf(f, "PKT_IN %s from %d", quay_pkt_name(ev->pkt), ev->peer);
        if (ev->req_id != 0)
            fprintf(f, " req %u (%s)", ev->req_id,
                    slot_name_by_id(rk, ev->req_id));
        fputc('\n', f);
        break;
    case QUAY_TR_PKT_OUT:
        fprintf(f, "PKT_OUT %s to %d", quay_pkt_name(ev->pkt), ev->peer);
        if (sequenced(ev->pkt))
            fprintf(f, " seq %u", ev->seq);
        if (ev->req_id != 0)
            fprintf(f, " req %u (%s)", ev->req_id,
                    slot_name_by_id(rk, ev->req_id));
        else if (is_inline_pkt(ev))
            fprintf(f, " inline (%s)", inline_next(rk) >= 0
                                           ? run->s->slots[inline_next(rk)].name
                                           : "none waiting");
        fputc('\n', f);
        break;
    case QUAY_TR_REJECT:
        fprintf(f, "REJECT %s from %d: %s\n", quay_pkt_name(ev->pkt), ev->peer,
                scn_errname(ev->code));
        break;
    case QUAY_TR_MATCH:
        fprintf(f, "MATCH req %u (%s) <- rank %d seq %u ctx %u%s src %d tag ",
                ev->req_id,
                ev->req_id ? slot_name_by_id(rk, ev->req_id)
                           : (rk->improbe_slot >= 0
                                  ? run->s->slots[rk->improbe_slot].name
                                  : "improbe?"),
                ev->peer, ev->seq, ev->ctx & ~SCN_CTX_COLL,
                (ev->ctx & SCN_CTX_COLL) ? "|coll" : "", ev->src);
        if (ev->ctx & SCN_CTX_COLL) /* collective #, sub-tag */
            fprintf(f, "#%d.%d\n", ev->tag >> 15, ev->tag & 0x7FFF);
        else
            fprintf(f, "%d\n", ev->tag);
        break;
    default:
        fprintf(f, "trace kind %d req %u\n", ev->kind, ev->req_id);
        break;
    }
}

/* A message leaves: send slot `slot` (ctx its communicator's), or with
 * slot -1 and ctx SCN_CTX_COLL a collective step's message (engine
 * request req_id). */
static void seq_add(scn_runner *run, int sender, int32_t receiver,
                    uint32_t ctx, uint32_t seq, int slot, uint32_t req_id)
{
    seq_list *l;
    int i;
    if (receiver < 0 || receiver >= run->s->nranks) {
        scn_fail(run, "rank %d: PKT_OUT to bad peer %d", sender, receiver);
        return;
    }
    l = &run->seqs[sender][receiver];
    for (i = l->n - 1; i >= 0; i--) {
        if (l->v[i].ctx == ctx && l->v[i].seq == seq) {
            if (l->v[i].slot != slot || l->v[i].req_id != req_id)
                scn_fail(run,
                         "rank %d: seq %u to rank %d (ctx %#x) used by two "
                         "sends (%s, %s)",
                         sender, seq, receiver, ctx,
                         l->v[i].slot < 0 ? "a collective step"
                                          : run->s->slots[l->v[i].slot].name,
                         slot < 0 ? "a collective step"
                                  : run->s->slots[slot].name);
            return; /* a resend of the same message */
        }
    }
    if (l->n == l->cap) {
        int ncap = l->cap ? l->cap * 2 : 16;
        seq_ent *nv = realloc(l->v, (size_t)ncap * sizeof *nv);
        if (nv == NULL) {
            scn_fail(run, "out of memory");
            return;
        }
        l->v = nv;
        l->cap = ncap;
    }
    l->v[l->n].ctx = ctx;
    l->v[l->n].seq = seq;
    l->v[l->n].slot = slot;
    l->v[l->n].req_id = req_id;
    l->v[l->n].nmatch = 0;
    l->n++;
}

static void add_match(scn_runner *run, rank_rt *rk, int slot,
                      const quay_trace_event *ev, uint64_t t)
{
    slot_dyn *d = &run->dyn[slot];
    match_rec *m;
    if (run->nmatches == run->capmatches) {
        int ncap = run->capmatches ? run->capmatches * 2 : 64;
        match_rec *nm = realloc(run->matches, (size_t)ncap * sizeof *nm);
        if (nm == NULL) {
            scn_fail(run, "out of memory");
            return;
        }
        run->matches = nm;
        run->capmatches = ncap;
    }
    if (d->match >= 0) {
        scn_fail(run, "rank %d: %s '%s' (line %d) matched twice", rk->rank,
                 run->s->slots[slot].kind == SLOT_MPROBE ? "mprobe" : "receive",
                 run->s->slots[slot].name, run->s->slots[slot].line);
        return;
    }
    m = &run->matches[run->nmatches];
    m->t = t;
    m->rank = rk->rank;
    m->slot = slot;
    m->peer = ev->peer;
    m->seq = ev->seq;
    m->ctx = ev->ctx;
    m->src = ev->src;
    m->tag = ev->tag;
    m->send = -1;
    m->in_call = rk->replaying || ev->req_id == 0;
    d->match = run->nmatches++;
    d->match_t = t;
}

static void handle_trace(scn_runner *run, rank_rt *rk,
                         const quay_trace_event *ev, uint64_t t)
{
    const scn *s = run->s;
    int sl;
    if (ev->kind == QUAY_TR_STATE && ev->from == QUAY_RS_FREE &&
        rk->call_slot >= 0 && ev->req_id != 0 &&
        idmap_get(rk, ev->req_id) < 0) {
        /* A request born inside quay_isend other than the one returned:
         * the internal request of a buffered send, which carries the
         * message from the attached buffer. It stands for the same send. */
        scn_idmap_put(rk, ev->req_id, rk->call_slot);
    }
    if (run->trace != NULL)
        print_trace(run, rk, ev);
    switch (ev->kind) {
    case QUAY_TR_STATE:
        /* A collective's request is DONE: its schedule finished (seen
         * also when the request was freed before). */
        if (ev->to == QUAY_RS_DONE && ev->req_id != 0 &&
            (sl = idmap_get(rk, ev->req_id)) >= 0 &&
            s->slots[sl].kind == SLOT_COLL) {
            run->dyn[sl].coll_done++;
            run->dyn[sl].done_t = t;
        }
        return;
    case QUAY_TR_PKT_OUT:
        /* The message itself: its envelope, the SC of a send that wrote
         * into the receiver's RTR (receiver-initiated), or the flag that
         * carries its envelope to a wildcard's arbitration (the receiver
         * matches the flag itself). */
        if (ev->pkt != QUAY_PKT_EAGER && ev->pkt != QUAY_PKT_RTS && ev->pkt != QUAY_PKT_SC &&
            ev->pkt != QUAY_PKT_ANY_FLAG)
            return;
        if (is_inline_pkt(ev) && (ev->ctx & SCN_CTX_COLL) && s->ncinst > 0) {
            /* A collective step the engine took by copy: a schedule's
             * message with no request (scn_coll.c, as below). */
            seq_add(run, rk->rank, ev->peer, SCN_CTX_COLL, ev->seq, -1, 0);
            return;
        }
        if (is_inline_pkt(ev)) {
            sl = inline_next(rk);
            if (sl < 0) {
                scn_fail(run, "rank %d: PKT_OUT EAGER to rank %d (seq %u) with "
                              "req 0, but no inline send is waiting to leave",
                         rk->rank, ev->peer, ev->seq);
                return;
            }
            if (s->slots[sl].peer_world != ev->peer) {
                scn_fail(run, "rank %d: inline send '%s' (line %d) is for rank "
                              "%d, but the next inline packet (seq %u) went to "
                              "rank %d",
                         rk->rank, s->slots[sl].name, s->slots[sl].line,
                         s->slots[sl].peer_world, ev->seq, ev->peer);
                return;
            }
            rk->inl_head++;
            seq_add(run, rk->rank, ev->peer, s->comms[s->slots[sl].comm].ctx,
                    ev->seq, sl, 0);
            return;
        }
        sl = idmap_get(rk, ev->req_id);
        if (sl < 0 && s->ncinst > 0 && ev->req_id != 0) {
            /* A request the scenario did not make: in these runs the
             * engine makes its own only for the steps of collective
             * schedules, whose messages travel on collective twins. The
             * receiver's MATCH must name a twin (scn_coll.c). */
            seq_add(run, rk->rank, ev->peer, SCN_CTX_COLL, ev->seq, -1,
                    ev->req_id);
            return;
        }
        if (sl < 0 || s->slots[sl].kind != SLOT_SEND) {
            scn_fail(run, "rank %d: PKT_OUT %s for unknown send req %u",
                     rk->rank, quay_pkt_name(ev->pkt), ev->req_id);
            return;
        }
        seq_add(run, rk->rank, ev->peer, s->comms[s->slots[sl].comm].ctx,
                ev->seq, sl, 0);
        return;
    case QUAY_TR_MATCH:
        if (ev->ctx & SCN_CTX_COLL) {
            /* A collective twin's message: only a schedule's own receive
             * (a request the scenario did not make) may take it. */
            sl = ev->req_id != 0 ? idmap_get(rk, ev->req_id) : -1;
            if (ev->req_id == 0 || sl >= 0) {
                scn_fail(run,
                         "rank %d: %s took a collective message (ctx %#x, "
                         "rank %d, src %d, tag %#x)",
                         rk->rank,
                         sl >= 0 ? run->s->slots[sl].name
                                 : (rk->improbe_slot >= 0
                                        ? run->s->slots[rk->improbe_slot].name
                                        : "an improbe"),
                         ev->ctx, ev->peer, ev->src, (unsigned)ev->tag);
                return;
            }
            if (s->ncinst == 0) {
                scn_fail(run, "rank %d: MATCH on collective context %#x in a "
                              "scenario without collectives",
                         rk->rank, ev->ctx);
                return;
            }
            scn_coll_on_match(run, rk, ev, t);
            return;
        }
        if (ev->req_id == 0) {
            sl = rk->improbe_slot;
            if (sl < 0) {
                scn_fail(run, "rank %d: MATCH with req 0 outside improbe",
                         rk->rank);
                return;
            }
        } else {
            sl = idmap_get(rk, ev->req_id);
            if (sl < 0 || (s->slots[sl].kind != SLOT_RECV &&
                           s->slots[sl].kind != SLOT_MRECV)) {
                scn_fail(run, "rank %d: MATCH for unknown receive req %u "
                              "(ctx %u, rank %d, tag %d)%s",
                         rk->rank, ev->req_id, ev->ctx, ev->peer, ev->tag,
                         s->ncinst > 0 ? ": a collective step took a user "
                                         "message?"
                                       : "");
                return;
            }
        }
        add_match(run, rk, sl, ev, t);
        return;
    case QUAY_TR_REJECT:
        run->engine_rejects++;
        if (run->flow != QUAY_FLOW_NONE)
            return; /* judged by the NICSIM_EV_REJECT that follows */
        scn_fail(run, "rank %d rejected a %s packet from rank %d: %s",
                 rk->rank, quay_pkt_name(ev->pkt), ev->peer,
                 scn_errname(ev->code));
        return;
    default:
        return;
    }
}

void scn_on_trace(void *ctx, const quay_trace_event *ev)
{
    rank_rt *rk = ctx;
    scn_runner *run = rk->run;
    uint64_t t = ++run->t;
    if (rk->in_call) {
        if (rk->ndefer == rk->capdefer) {
            int ncap = rk->capdefer ? rk->capdefer * 2 : 32;
            defer_ev *nd = realloc(rk->defer, (size_t)ncap * sizeof *nd);
            if (nd == NULL) {
                scn_fail(run, "out of memory");
                return;
            }
            rk->defer = nd;
            rk->capdefer = ncap;
        }
        rk->defer[rk->ndefer].ev = *ev;
        rk->defer[rk->ndefer].t = t;
        rk->ndefer++;
        return;
    }
    handle_trace(run, rk, ev, t);
}

void scn_call_begin(rank_rt *rk)
{
    rk->in_call = 1;
    rk->ndefer = 0;
}

void scn_call_end(scn_runner *run, rank_rt *rk)
{
    int i;
    rk->in_call = 0;
    rk->replaying = 1;
    for (i = 0; i < rk->ndefer; i++)
        handle_trace(run, rk, &rk->defer[i].ev, rk->defer[i].t);
    rk->replaying = 0;
    rk->ndefer = 0;
    rk->call_slot = -1;
}

/* ------------------------------------------------------------------ */
/* nicsim callbacks                                                     */
/* ------------------------------------------------------------------ */

static int slot_of_req(const scn_runner *run, int rank, const quay_req *req)
{
    int i;
    for (i = 0; i < run->nrank_slots[rank]; i++) {
        int sl = run->rank_slots[rank][i];
        if (run->dyn[sl].req == req && run->dyn[sl].posted &&
            !run->dyn[sl].released)
            return sl;
    }
    return -1;
}

void scn_on_complete(void *ctx, int32_t rank, quay_req *req, void *user)
{
    scn_runner *run = ctx;
    const scn *s = run->s;
    slot_dyn *d = user;
    int sl;
    if (d == NULL) {
        /* Completed inside the call that created it, before
         * quay_req_set_user: find it by handle. */
        sl = slot_of_req(run, rank, req);
    } else {
        sl = (d >= run->dyn && d < run->dyn + s->nslots)
                 ? (int)(d - run->dyn)
                 : -1;
    }
    if (sl < 0 || s->slots[sl].rank != rank) {
        scn_fail(run, "rank %d: COMPLETE for an unknown request", rank);
        return;
    }
    d = &run->dyn[sl];
    if (run->trace != NULL)
        fprintf(run->trace, "t=%" PRIu64 " rank %d: COMPLETE req %u (%s)\n",
                run->step, rank, d->id, s->slots[sl].name);
    d->completes++;
    if (d->completes > 1) {
        scn_fail(run, "rank %d: request '%s' (line %d) completed twice", rank,
                 s->slots[sl].name, s->slots[sl].line);
        return;
    }
    if (d->user_freed) {
        if (!d->done_at_free)
            scn_fail(run,
                     "rank %d: COMPLETE action for '%s' (line %d), freed "
                     "before it completed",
                     rank, s->slots[sl].name, s->slots[sl].line);
        return;
    }
    if (req != d->req) {
        scn_fail(run, "rank %d: COMPLETE for '%s' carries another handle",
                 rank, s->slots[sl].name);
        return;
    }
    if (quay_req_test(req, NULL) != 1)
        scn_fail(run,
                 "rank %d: COMPLETE for '%s' (line %d) but quay_req_test "
                 "says incomplete",
                 rank, s->slots[sl].name, s->slots[sl].line);
    run->outstanding[rank]--;
}

void scn_on_sim_event(void *ctx, const nicsim_event *ev)
{
    scn_runner *run = ctx;
    FILE *f = run->trace;
    switch (ev->kind) {
    case NICSIM_EV_DEFER:
        run->deferred++;
        break;
    case NICSIM_EV_REJECT:
        if (run->flow != QUAY_FLOW_NONE && (ev->aux & NICSIM_PKT_CORRUPTED))
            break; /* the CRC caught it: the sender's timer repairs it */
        scn_fail(run, "rank %d: quay_on_packet(from %d, pkt#%" PRIu64
                      ") returned %s",
                 ev->rank, ev->peer, ev->pkt_id, scn_errname(ev->rc));
        break;

    case NICSIM_EV_ERROR:
        scn_fail(run, "rank %d: nicsim error %s (peer %d)", ev->rank,
                 scn_errname(ev->rc), ev->peer);
        break;
    case NICSIM_EV_SEND:
        scn_check_quiesced_send(run, ev->rank, ev->peer, ev->data, ev->len);
        break;
    default:
        break;
    }
    if (f == NULL)
        return;
    switch (ev->kind) {
    case NICSIM_EV_SEND:
        fprintf(f,
                "t=%" PRIu64 " rank %d: pull SEND to %d pkt#%" PRIu64
                " %" PRIu64 " B token %#" PRIx64 "\n",
                run->step, ev->rank, ev->peer, ev->pkt_id, ev->len, ev->token);
        break;
    case NICSIM_EV_DELIVER:
        fprintf(f, "t=%" PRIu64 " deliver pkt#%" PRIu64 " %d->%d %" PRIu64 " B\n",
                run->step, ev->pkt_id, ev->peer, ev->rank, ev->len);
        break;
    case NICSIM_EV_DEFER:
        fprintf(f, "t=%" PRIu64 " rank %d: pkt#%" PRIu64 " deferred (EAGAIN)\n",
                run->step, ev->rank, ev->pkt_id);
        break;
    case NICSIM_EV_REJECT:
        fprintf(f, "t=%" PRIu64 " rank %d: pkt#%" PRIu64 " rejected: %s\n",
                run->step, ev->rank, ev->pkt_id, scn_errname(ev->rc));
        break;
    case NICSIM_EV_OP_DONE:
        fprintf(f, "t=%" PRIu64 " rank %d: op_done token %#" PRIx64 "%s\n",
                run->step, ev->rank, ev->token, ev->rc ? " (failed)" : "");
        break;
    case NICSIM_EV_ERROR:
        fprintf(f, "t=%" PRIu64 " rank %d: nicsim error %s\n", run->step,
                ev->rank, scn_errname(ev->rc));
        break;
    case NICSIM_EV_NOTIFY:
        fprintf(f, "t=%" PRIu64 " rank %d: NOTIFY %d\n", run->step, ev->rank,
                ev->peer);
        break;
    case NICSIM_EV_DROP:
        fprintf(f, "t=%" PRIu64 " FAULT drop pkt#%" PRIu64 " %d->%d %" PRIu64
                   " B (%s)\n",
                run->step, ev->pkt_id, ev->peer, ev->rank, ev->len,
                ev->aux == NICSIM_DROP_RANDOM      ? "random"
                : ev->aux == NICSIM_DROP_BLACKHOLE ? "black hole"
                                                   : "rank killed");
        break;
    case NICSIM_EV_DUP:
        fprintf(f, "t=%" PRIu64 " FAULT dup pkt#%" PRIu64 " %d->%d is a copy "
                   "of pkt#%" PRIu64 "\n",
                run->step, ev->pkt_id, ev->rank, ev->peer, ev->aux);
        break;
    case NICSIM_EV_DELAY:
        fprintf(f, "t=%" PRIu64 " FAULT delay pkt#%" PRIu64 " %d->%d for %"
                   PRIu64 " events\n",
                run->step, ev->pkt_id, ev->rank, ev->peer, ev->aux);
        break;
    case NICSIM_EV_REORDER:
        fprintf(f, "t=%" PRIu64 " FAULT reorder pkt#%" PRIu64 " %d->%d ahead "
                   "of %" PRIu64 "\n",
                run->step, ev->pkt_id, ev->rank, ev->peer, ev->aux);
        break;
    case NICSIM_EV_CORRUPT:
        fprintf(f, "t=%" PRIu64 " FAULT corrupt pkt#%" PRIu64 " %d->%d: %"
                   PRIu64 " bit(s) flipped\n",
                run->step, ev->pkt_id, ev->peer, ev->rank, ev->aux);
        break;
    case NICSIM_EV_STALL:
        fprintf(f, "t=%" PRIu64 " FAULT stall rank %d NIC full for %" PRIu64
                   " events (pkt#%" PRIu64 " from %d waits)\n",
                run->step, ev->rank, ev->aux, ev->pkt_id, ev->peer);
        break;
    case NICSIM_EV_KILL:
        fprintf(f, "t=%" PRIu64 " FAULT rank %d killed\n", run->step,
                ev->rank);
        break;
    default:
        break; /* COMPLETE is printed by on_complete */
    }
}

