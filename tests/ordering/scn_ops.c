/*
 * scn_ops.c — the ranks' programs: when a rank's next op is enabled, and
 * executing it against the engine (posting, probing, cancelling, waiting,
 * buffer attach/detach, barriers, communicator creation).
 */
#include "scn_int.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Program steps                                                        */
/* ------------------------------------------------------------------ */

/* Has request `sl` completed (COMPLETE action seen, or req_test)? */
int scn_slot_finished(const scn_runner *run, int sl)
{
    const slot_dyn *d = &run->dyn[sl];
    if (!d->posted || d->released || d->user_freed)
        return 0;
    if (d->inline_sent)
        return 1; /* over when quay_send_inline returned */
    if (run->complete_actions)
        return d->completes > 0;
    return quay_req_test(d->req, NULL) == 1;
}

static int sync_ready(const scn_runner *run, int k)
{
    const scn *s = run->s;
    int q;
    for (q = 0; q < s->nranks; q++) {
        const rank_rt *o = &run->rk[q];
        if (o->syncs > k)
            continue;
        if (o->syncs == k && o->pc < s->nops[q] &&
            s->ops[q][o->pc].kind == SOP_SYNC)
            continue;
        return 0;
    }
    return 1;
}

static int waitall_ready(const scn_runner *run, int r)
{
    int i;
    if (run->complete_actions)
        return run->outstanding[r] == 0;
    for (i = 0; i < run->nrank_slots[r]; i++) {
        int sl = run->rank_slots[r][i];
        const slot_dyn *d = &run->dyn[sl];
        if (d->posted && !d->released && !d->user_freed && !d->inline_sent &&
            run->s->slots[sl].kind != SLOT_MPROBE &&
            run->s->slots[sl].kind != SLOT_PROBE &&
            quay_req_test(d->req, NULL) != 1)
            return 0;
    }
    return 1;
}

int scn_rank_enabled(const scn_runner *run, int r)
{
    const scn *s = run->s;
    const rank_rt *rk = &run->rk[r];
    const scn_op *op;
    if (rk->pc >= s->nops[r])
        return 0;
    op = &s->ops[r][rk->pc];
    /* An attempt that failed for lack of progress (EAGAIN, nothing found)
     * is repeated only once something happened at this engine. */
    if (rk->blocked_epoch != SCN_NEVER &&
        nicsim_epoch(run->sim, r) == rk->blocked_epoch)
        return 0;
    switch (op->kind) {
    case SOP_WAIT:
        return scn_slot_finished(run, op->slot);
    case SOP_WAITALL:
        return waitall_ready(run, r);
    case SOP_SYNC:
        return sync_ready(run, op->sync_idx);
    default:
        return 1;
    }
}

/* Record the status of a completed request and release it. */
void scn_finalize(scn_runner *run, int sl)
{
    const scn *s = run->s;
    slot_dyn *d = &run->dyn[sl];
    rank_rt *rk = &run->rk[s->slots[sl].rank];
    int rc;
    if (d->inline_sent) {
        /* No request: its status was recorded at the call. */
        d->released = 1;
        if (run->trace != NULL)
            fprintf(run->trace,
                    "t=%" PRIu64 " rank %d: done '%s' (inline, no request): "
                    "src %d tag %d count %" PRIu64 " err %s\n",
                    run->step, rk->rank, s->slots[sl].name, d->st.source,
                    d->st.tag, d->st.count, scn_errname(d->st.error));
        return;
    }
    if (quay_req_test(d->req, &d->st) != 1) {
        scn_fail(run,
                 "rank %d: '%s' (line %d): COMPLETE seen but quay_req_test "
                 "says incomplete",
                 rk->rank, s->slots[sl].name, s->slots[sl].line);
        return;
    }
    d->have_status = 1;
    if (run->complete_actions && d->completes != 1) {
        scn_fail(run, "rank %d: '%s' (line %d): %u COMPLETE actions", rk->rank,
                 s->slots[sl].name, s->slots[sl].line, d->completes);
        return;
    }
    rc = quay_req_free(rk->e, d->req);
    if (rc != 0) {
        scn_fail(run, "rank %d: quay_req_free('%s'): %s", rk->rank,
                 s->slots[sl].name, scn_errname(rc));
        return;
    }
    d->released = 1;
    if (!run->complete_actions)
        run->outstanding[rk->rank]--;
    if (run->trace != NULL)
        fprintf(run->trace,
                "t=%" PRIu64 " rank %d: done '%s' req %u: src %d tag %d "
                "count %" PRIu64 " err %s%s\n",
                run->step, rk->rank, s->slots[sl].name, d->id, d->st.source,
                d->st.tag, d->st.count, scn_errname(d->st.error),
                d->st.cancelled ? " cancelled" : "");
}

static void check_call(scn_runner *run, int r, const scn_op *op,
                       const char *what, int rc)
{
    if (rc == 0)
        return;
    scn_fail(run, "rank %d line %d: %s returned %s%s", r, op->line, what,
             scn_errname(rc),
             quay_err_is_fatal(rc) ? " (fatal)" : "");
}

static void trace_op(scn_runner *run, int r, const scn_op *op,
                     const char *extra)
{
    const scn *s = run->s;
    const scn_slot *x = op->slot >= 0 ? &s->slots[op->slot] : NULL;
    char a[16], b[16];
    FILE *f = run->trace;
    if (f == NULL)
        return;
    fprintf(f, "t=%" PRIu64 " rank %d: L%d ", run->step, r, op->line);
    switch (op->kind) {
    case SOP_ISEND:
        scn_fmt_rt(a, sizeof a, x->peer);
        fprintf(f, "isend to=%s tag=%d size=%" PRIu64 " mode=%s comm=%u as %s",
                a, x->tag, x->size, scn_mode_name(x->mode), s->comms[x->comm].ctx,
                x->name);
        break;
    case SOP_IRECV:
    case SOP_IPROBE:
    case SOP_PROBE:
    case SOP_MPROBE:
        scn_fmt_rt(a, sizeof a, x->peer);
        scn_fmt_rt(b, sizeof b, x->tag);
        fprintf(f, "%s from=%s tag=%s",
                op->kind == SOP_IRECV    ? "irecv"
                : op->kind == SOP_IPROBE ? "iprobe"
                : op->kind == SOP_PROBE  ? "probe"
                                         : "mprobe",
                a, b);
        if (op->kind == SOP_IRECV)
            fprintf(f, " cap=%" PRIu64, x->size);
        fprintf(f, " comm=%u as %s", s->comms[x->comm].ctx, x->name);
        break;
    case SOP_MRECV:
        fprintf(f, "mrecv %s cap=%" PRIu64 " as %s", s->slots[x->link].name,
                x->size, x->name);
        break;
    case SOP_CANCEL:
        fprintf(f, "cancel %s", x->name);
        break;
    case SOP_FREE:
        fprintf(f, "free %s", x->name);
        break;
    case SOP_WAIT:
        fprintf(f, "wait %s", x->name);
        break;
    case SOP_WAITALL:
        fprintf(f, "waitall");
        break;
    case SOP_ATTACH:
        fprintf(f, "attach size=%" PRIu64, op->size);
        break;
    case SOP_DETACH:
        fprintf(f, "detach");
        break;
    case SOP_SYNC:
        fprintf(f, "sync #%d", op->sync_idx);
        break;
    case SOP_COMM_CREATE:
        fprintf(f, "comm_create %u", s->comms[op->sync_idx].ctx);
        break;
    case SOP_COLL: {
        const scn_cinst *ci = &s->cinst[x->cinst];
        fprintf(f, "%s", scn_coll_name(x->ckind));
        if (x->ckind == SCOLL_BCAST || x->ckind == SCOLL_REDUCE)
            fprintf(f, " root=%d", ci->root);
        if (x->ckind == SCOLL_BCAST)
            fprintf(f, " size=%" PRIu64, ci->size);
        else if (x->ckind != SCOLL_BARRIER)
            fprintf(f, " count=%" PRIu64 " type=%s op=%s%s", ci->size,
                    scn_dtype_name(ci->dtype), scn_op_name(ci->opk),
                    x->inplace ? " inplace" : "");
        fprintf(f, " comm=%u #%d as %s", s->comms[x->comm].ctx, ci->seq,
                x->name);
        break;
    }
    default:
        break;
    }
    fprintf(f, "%s\n", extra ? extra : "");
}

/* The call answered QUAY_EAGAIN (a bounded resource is exhausted, nothing
 * was done): retry the op after progress at this engine. */
static int retry_later(scn_runner *run, rank_rt *rk, const scn_op *op, int rc)
{
    if (rc != QUAY_EAGAIN)
        return 0;
    trace_op(run, rk->rank, op, " -> EAGAIN (retried after progress)");
    scn_call_end(run, rk);
    rk->blocked_epoch = nicsim_epoch(run->sim, rk->rank);
    return 1;
}

/* A new request for slot `sl` came back from a call. */
static void posted(scn_runner *run, rank_rt *rk, int sl, quay_req *req)
{
    slot_dyn *d = &run->dyn[sl];
    d->req = req;
    d->id = quay_req_id(req);
    d->posted = 1;
    quay_req_set_user(req, d);
    scn_idmap_put(rk, d->id, sl);
    run->outstanding[rk->rank]++;
}

/* Seeds with bit 1 set try quay_send_inline first for the sends it may
 * take: standard mode, small, and never cancelled (an inline send has no
 * request to cancel). Whatever else keeps it from the inline path (flow
 * control, RTR, self, queued sends) is the engine's EBUSY. */
static int try_inline(const scn_runner *run, const scn_slot *x)
{
    return (run->seed & 2) && x->mode == QUAY_SEND_STANDARD &&
           x->size <= QUAY_INLINE_MAX && !x->cancelled;
}

/* quay_send_inline took send slot `sl`: the send is over, with the status
 * a quay_isend request would have reported (source: the destination);
 * its packet, still to leave, is bound at its PKT_OUT (scn_trace.c). */
static void sent_inline(scn_runner *run, rank_rt *rk, int sl)
{
    const scn_slot *x = &run->s->slots[sl];
    slot_dyn *d = &run->dyn[sl];
    d->posted = 1;
    d->inline_sent = 1;
    d->have_status = 1;
    memset(&d->st, 0, sizeof d->st);
    d->st.source = x->peer;
    d->st.tag = x->tag;
    d->st.count = x->peer == QUAY_PROC_NULL ? 0 : x->size;
    if (x->peer != QUAY_PROC_NULL) /* PROC_NULL: nothing leaves */
        rk->inl[rk->inl_tail++] = sl;
    run->inline_sends++;
}

/* Seeds with bit 2 set post every isend / irecv as a persistent request
 * started once (quay_send_init / quay_recv_init, then quay_start; with bit
 * 4 too, quay_startall of the one request): the start of a round under
 * every ordering the scenarios make. A start that fails frees the
 * (inactive) request and answers the code, so EAGAIN retries the whole op
 * as it would quay_isend's. */
static int start_persistent(scn_runner *run, rank_rt *rk, int rc, quay_req **req)
{
    if (rc != 0)
        return rc;
    if (run->seed & 16) {
        size_t n = 2;
        rc = quay_startall(rk->e, 1, req, &n);
        if (n != (rc == 0 ? 1u : 0u))
            scn_fail(run, "rank %d: quay_startall answered %s with %zu started", rk->rank,
                     quay_strerror(rc), n);
    } else {
        rc = quay_start(rk->e, *req);
    }
    if (rc != 0) {
        quay_req_free(rk->e, *req);
        *req = NULL;
    }
    return rc;
}

static int post_isend(scn_runner *run, rank_rt *rk, const scn_slot *x, quay_req **req)
{
    quay_comm *c = rk->comms[x->comm];
    const unsigned char *buf = run->s->payload + x->off;
    if (run->seed & 4)
        return start_persistent(run, rk,
                                quay_send_init(rk->e, c, buf, (size_t)x->size, x->peer,
                                               x->tag, (quay_send_mode)x->mode, req),
                                req);
    return quay_isend(rk->e, c, buf, (size_t)x->size, x->peer, x->tag,
                      (quay_send_mode)x->mode, req);
}

/* Seeds with bit 3 set run engines with QUAY_CFG_SEND_COPY: a standard
 * isend to another rank whose request is complete when quay_isend returns
 * was taken by copy (only PROC_NULL's completes at once otherwise). */
static int copied_at_call(const scn_runner *run, const scn_slot *x, quay_req *req)
{
    return (run->seed & 8) && !(run->seed & 4) && x->mode == QUAY_SEND_STANDARD &&
           x->peer != QUAY_PROC_NULL && quay_req_test(req, NULL) == 1;
}

/* Seeds with bit 1 set also try quay_recv_inline first for every irecv
 * never cancelled (a receive taken at the call has no request to cancel):
 * it takes the message if one that the receive would match at once has
 * arrived, else EBUSY and the receive is posted as without the try. */
static int try_recv_inline(const scn_runner *run, const scn_slot *x)
{
    return (run->seed & 2) && !x->cancelled;
}

/* The try: 1 if quay_recv_inline took the receive of slot `sl` (its status
 * recorded; the MATCH it traced is bound to the slot as an improbe's), 0
 * if not (EBUSY: nothing was changed). */
static int recv_inline_taken(scn_runner *run, rank_rt *rk, const scn_op *op, int sl)
{
    const scn_slot *x = &run->s->slots[sl];
    slot_dyn *d = &run->dyn[sl];
    quay_status st;
    memset(&st, 0xA5, sizeof st);
    rk->improbe_slot = sl;
    scn_call_begin(rk);
    int rc = quay_recv_inline(rk->e, rk->comms[x->comm], rk->arena + x->off, (size_t)x->size,
                              x->peer, x->tag, &st);
    if (rc == QUAY_EBUSY) {
        run->recv_inline_busy++;
        scn_call_end(run, rk);
        rk->improbe_slot = -1;
        return 0;
    }
    char extra[96];
    snprintf(extra, sizeof extra, " -> inline: src %d tag %d count %" PRIu64 " err %s",
             st.source, st.tag, st.count, scn_errname(st.error));
    trace_op(run, rk->rank, op, extra);
    check_call(run, rk->rank, op, "quay_recv_inline", rc);
    if (rc == 0) {
        d->posted = 1;
        d->inline_sent = 1;
        d->have_status = 1;
        d->st = st;
        run->recv_inlines++;
    }
    scn_call_end(run, rk);
    rk->improbe_slot = -1;
    return 1;
}

static int post_irecv(scn_runner *run, rank_rt *rk, const scn_slot *x, quay_req **req)
{
    quay_comm *c = rk->comms[x->comm];
    void *buf = rk->arena + x->off;
    if (run->seed & 4)
        return start_persistent(run,
            rk, quay_recv_init(rk->e, c, buf, (size_t)x->size, x->peer, x->tag, req), req);
    return quay_irecv(rk->e, c, buf, (size_t)x->size, x->peer, x->tag, req);
}

void scn_exec_op(scn_runner *run, int r)
{
    const scn *s = run->s;
    rank_rt *rk = &run->rk[r];
    const scn_op *op = &s->ops[r][rk->pc];
    const scn_slot *x = op->slot >= 0 ? &s->slots[op->slot] : NULL;
    slot_dyn *d = op->slot >= 0 ? &run->dyn[op->slot] : NULL;
    quay_req *req = NULL;
    char extra[96];
    int rc, i;

    extra[0] = '\0';
    switch (op->kind) {
    case SOP_ISEND: {
        int busy = 0;
        d->post_t = ++run->t;
        scn_call_begin(rk);
        if (try_inline(run, x)) {
            /* From a scratch copy scribbled over after the call: the
             * receiver's byte check (b) then shows the copy was taken
             * at the call. */
            unsigned char tmp[QUAY_INLINE_MAX];
            if (x->size != 0)
                memcpy(tmp, s->payload + x->off, (size_t)x->size);
            rc = quay_send_inline(rk->e, rk->comms[x->comm], tmp,
                                  (size_t)x->size, x->peer, x->tag);
            memset(tmp, 0xEE, sizeof tmp);
            if (rc == 0)
                sent_inline(run, rk, op->slot);
            if (rc != QUAY_EBUSY) {
                run->sends += rc == 0;
                trace_op(run, r, op, rc == 0 ? " -> inline" : NULL);
                check_call(run, r, op, "quay_send_inline", rc);
                scn_call_end(run, rk);
                break;
            }
            busy = 1; /* post it with quay_isend, as without the try */
            run->inline_busy++;
        }
        if (x->mode == QUAY_SEND_BUFFERED)
            rk->call_slot = op->slot;
        rc = post_isend(run, rk, x, &req);
        if (retry_later(run, rk, op, rc))
            return;
        if (rc == 0) {
            posted(run, rk, op->slot, req);
            run->sends++;
            snprintf(extra, sizeof extra, " -> req %u%s", d->id,
                     busy ? " (inline: EBUSY)" : "");
            if (copied_at_call(run, x, req)) {
                /* its packet carries no request id: bound at its PKT_OUT
                 * like an inline send's (scn_trace.c) */
                rk->inl[rk->inl_tail++] = op->slot;
                run->copied_sends++;
                strncat(extra, " (copied, complete)", sizeof extra - strlen(extra) - 1);
            }
        }
        trace_op(run, r, op, extra);
        check_call(run, r, op, "quay_isend", rc);
        scn_call_end(run, rk);
        if (rc == 0 && x->mode == QUAY_SEND_BUFFERED &&
            quay_req_test(req, NULL) != 1)
            scn_fail(run,
                     "rank %d line %d: buffered send not complete when "
                     "quay_isend returned",
                     r, op->line);
        break;
    }
    case SOP_IRECV:
        d->post_t = ++run->t;
        if (try_recv_inline(run, x) && recv_inline_taken(run, rk, op, op->slot))
            break;
        scn_call_begin(rk);
        rc = post_irecv(run, rk, x, &req);
        if (retry_later(run, rk, op, rc))
            return;
        if (rc == 0) {
            posted(run, rk, op->slot, req);
            snprintf(extra, sizeof extra, " -> req %u", d->id);
        }
        trace_op(run, r, op, extra);
        check_call(run, r, op, "quay_irecv", rc);
        scn_call_end(run, rk);
        break;
    case SOP_IPROBE:
    case SOP_PROBE: {
        int flag = 0;
        quay_status st;
        memset(&st, 0, sizeof st);
        d->post_t = ++run->t;
        scn_call_begin(rk);
        rc = quay_iprobe(rk->e, rk->comms[x->comm], x->peer, x->tag, &flag,
                         &st);
        if (flag)
            snprintf(extra, sizeof extra,
                     " -> found src %d tag %d count %" PRIu64, st.source,
                     st.tag, st.count);
        else
            snprintf(extra, sizeof extra, " -> nothing");
        trace_op(run, r, op, extra);
        check_call(run, r, op, "quay_iprobe", rc);
        scn_call_end(run, rk);
        if (flag) {
            d->probe_flag = 1;
            d->st = st;
            d->have_status = 1;
        } else if (op->kind == SOP_PROBE) {
            rk->blocked_epoch = nicsim_epoch(run->sim, r);
            return; /* retry once something happened at this engine */
        }
        break;
    }
    case SOP_MPROBE: {
        quay_msg *msg = NULL;
        quay_status st;
        memset(&st, 0, sizeof st);
        d->post_t = ++run->t;
        rk->improbe_slot = op->slot;
        scn_call_begin(rk);
        rc = quay_improbe(rk->e, rk->comms[x->comm], x->peer, x->tag, &msg,
                          &st);
        if (retry_later(run, rk, op, rc)) {
            rk->improbe_slot = -1;
            return;
        }
        if (msg != NULL)
            snprintf(extra, sizeof extra,
                     " -> took src %d tag %d count %" PRIu64, st.source,
                     st.tag, st.count);
        else
            snprintf(extra, sizeof extra, " -> nothing");
        trace_op(run, r, op, extra);
        check_call(run, r, op, "quay_improbe", rc);
        scn_call_end(run, rk);
        rk->improbe_slot = -1;
        if (msg == NULL) {
            if (d->match >= 0)
                scn_fail(run,
                         "rank %d line %d: improbe found nothing but traced "
                         "a MATCH",
                         r, op->line);
            rk->blocked_epoch = nicsim_epoch(run->sim, r);
            return;
        }
        if (msg != QUAY_MSG_NO_PROC && d->match < 0)
            scn_fail(run,
                     "rank %d line %d: improbe took a message without a "
                     "MATCH trace event",
                     r, op->line);
        d->msg = msg;
        d->st = st;
        d->have_status = 1;
        d->posted = 1;
        break;
    }
    case SOP_MRECV: {
        slot_dyn *pd = &run->dyn[x->link];
        d->post_t = ++run->t;
        scn_call_begin(rk);
        rc = quay_imrecv(rk->e, pd->msg, rk->arena + x->off, (size_t)x->size,
                         &req);
        if (retry_later(run, rk, op, rc))
            return;
        if (rc == 0) {
            posted(run, rk, op->slot, req);
            snprintf(extra, sizeof extra, " -> req %u", d->id);
        }
        trace_op(run, r, op, extra);
        check_call(run, r, op, "quay_imrecv", rc);
        scn_call_end(run, rk);
        pd->msg = NULL;
        break;
    }
    case SOP_CANCEL:
        trace_op(run, r, op, NULL);
        scn_call_begin(rk);
        rc = quay_cancel(rk->e, d->req);
        if (retry_later(run, rk, op, rc))
            return;
        check_call(run, r, op, "quay_cancel", rc);
        scn_call_end(run, rk);
        d->cancel_called = 1;
        d->cancel_t = ++run->t;
        break;
    case SOP_FREE:
        if (d->inline_sent) {
            /* Nothing to free: as a request freed once complete. */
            trace_op(run, r, op, " (inline: no request)");
            d->done_at_free = 1;
            d->user_freed = 1;
            break;
        }
        trace_op(run, r, op, NULL);
        d->done_at_free = (uint8_t)(quay_req_test(d->req, &d->st) == 1);
        if (d->done_at_free)
            d->have_status = 1;
        scn_call_begin(rk);
        rc = quay_req_free(rk->e, d->req);
        check_call(run, r, op, "quay_req_free", rc);
        scn_call_end(run, rk);
        d->user_freed = 1;
        if (run->complete_actions ? d->completes == 0 : 1)
            run->outstanding[r]--;
        d->req = NULL;
        break;
    case SOP_WAIT:
        trace_op(run, r, op, NULL);
        scn_finalize(run, op->slot);
        break;
    case SOP_WAITALL:
        trace_op(run, r, op, NULL);
        for (i = 0; i < run->nrank_slots[r]; i++) {
            int sl = run->rank_slots[r][i];
            int k = s->slots[sl].kind;
            slot_dyn *e = &run->dyn[sl];
            if (scn_is_req(k) && e->posted && !e->released && !e->user_freed)
                scn_finalize(run, sl);
        }
        break;
    case SOP_ATTACH:
        trace_op(run, r, op, NULL);
        rc = quay_buffer_attach(rk->e, rk->attach_buf, (size_t)op->size);
        check_call(run, r, op, "quay_buffer_attach", rc);
        rk->attached = rc == 0;
        break;
    case SOP_DETACH: {
        void *pb = NULL;
        size_t plen = 0;
        scn_call_begin(rk);
        rc = quay_buffer_detach(rk->e, &pb, &plen);
        trace_op(run, r, op, rc == QUAY_EBUSY ? " -> EBUSY" : NULL);
        scn_call_end(run, rk);
        if (rc == QUAY_EBUSY) {
            rk->blocked_epoch = nicsim_epoch(run->sim, r);
            return;
        }
        check_call(run, r, op, "quay_buffer_detach", rc);
        if (rc == 0 && pb != (void *)rk->attach_buf)
            scn_fail(run, "rank %d line %d: detach returned another buffer", r,
                     op->line);
        rk->attached = 0;
        break;
    }
    case SOP_SYNC:
        trace_op(run, r, op, NULL);
        rk->syncs++;
        break;
    case SOP_COLL:
        d->post_t = ++run->t;
        scn_call_begin(rk);
        rc = scn_coll_call(run, rk, op->slot, &req);
        if (retry_later(run, rk, op, rc))
            return;
        if (rc == 0) {
            posted(run, rk, op->slot, req);
            snprintf(extra, sizeof extra, " -> req %u", d->id);
        }
        trace_op(run, r, op, extra);
        check_call(run, r, op, scn_coll_name(x->ckind), rc);
        scn_call_end(run, rk);
        break;
    case SOP_COMM_CREATE: {
        const scn_comm *cm = &s->comms[op->sync_idx];
        scn_call_begin(rk);
        rc = quay_comm_create(rk->e, cm->ctx, cm->n, cm->world,
                              &rk->comms[op->sync_idx]);
        if (retry_later(run, rk, op, rc))
            return;
        trace_op(run, r, op, NULL);
        check_call(run, r, op, "quay_comm_create", rc);
        scn_call_end(run, rk);
        break;
    }
    default:
        break;
    }
    rk->pc++;
    rk->blocked_epoch = SCN_NEVER;
    nicsim_touch(run->sim, r);
}

