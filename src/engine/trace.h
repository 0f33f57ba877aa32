/*
 * trace.h — trace events (quay_set_trace): the engine calls these only
 * when a trace function is set (e->trace_fn), so tracing costs an
 * untaken branch otherwise.
 */
#include "engine/internal.h" /* (outside the guard: internal.h includes this
                                 file after the engine's struct) */

#ifndef QUAY_ENGINE_TRACE_H
#define QUAY_ENGINE_TRACE_H

/** Request r goes from its state to `to` (QUAY_TR_STATE). */
void trace_state(quay_engine *e, quay_req *r, int to);
/** A packet event (QUAY_TR_PKT_IN, PKT_OUT, REJECT) of type pkt. */
void trace_pkt(quay_engine *e, int kind, int pkt, int32_t peer, uint32_t req,
               uint32_t seq, int code);
/** One message of an inline packet left for peer (QUAY_TR_PKT_OUT of an
 *  EAGER with no request), on context ctx. */
void trace_inline_out(quay_engine *e, int32_t peer, uint32_t seq, uint32_t ctx);
/** Request r (NULL: a probe or an inline receive) matched the envelope
 *  (peer, seq, ctx, src, tag) (QUAY_TR_MATCH). */
void trace_match(quay_engine *e, quay_req *r, const umsg *m, int32_t peer,
                 uint32_t seq, uint32_t ctx, int32_t src, int32_t tag);

#endif /* QUAY_ENGINE_TRACE_H */
