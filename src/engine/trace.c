/*
 * trace.c — trace events (trace.h) and quay_set_trace.
 */
#include "engine/trace.h"

void quay_set_trace(quay_engine *e, quay_trace_fn fn, void *ctx)
{
    if (e == NULL)
        return;
    e->trace_fn = fn;
    e->trace_ctx = ctx;
}

void trace_state(quay_engine *e, quay_req *r, int to)
{
    quay_trace_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = QUAY_TR_STATE;
    ev.req_id = r->id;
    ev.from = r->state;
    ev.to = to;
    ev.peer = -1;
    e->trace_fn(e->trace_ctx, &ev);
}

/* A packet event; ctx is set only where the event's contract has it. */
static void pkt_event(quay_engine *e, int kind, int pkt, int32_t peer, uint32_t req,
                      uint32_t seq, int code, uint32_t ctx)
{
    quay_trace_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = kind;
    ev.pkt = pkt;
    ev.peer = peer;
    ev.req_id = req;
    ev.seq = seq;
    ev.code = code;
    ev.ctx = ctx;
    e->trace_fn(e->trace_ctx, &ev);
}

void trace_pkt(quay_engine *e, int kind, int pkt, int32_t peer, uint32_t req,
               uint32_t seq, int code)
{
    pkt_event(e, kind, pkt, peer, req, seq, code, 0);
}

void trace_inline_out(quay_engine *e, int32_t peer, uint32_t seq, uint32_t ctx)
{
    pkt_event(e, QUAY_TR_PKT_OUT, QUAY_PKT_EAGER, peer, 0, seq, 0, ctx);
}

void trace_match(quay_engine *e, quay_req *r, const umsg *m, int32_t peer,
                 uint32_t seq, uint32_t ctx, int32_t src, int32_t tag)
{
    QUAY_UNUSED(m);
    quay_trace_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = QUAY_TR_MATCH;
    ev.req_id = r ? r->id : 0;
    ev.peer = peer;
    ev.seq = seq;
    ev.ctx = ctx;
    ev.src = src;
    ev.tag = tag;
    e->trace_fn(e->trace_ctx, &ev);
}
