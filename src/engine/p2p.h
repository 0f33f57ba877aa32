/*
 * p2p.h — the point-to-point protocols' entry points between files:
 * engine-owned sends and receives (p2p.c), rendezvous
 * (rndv.c, rndv_rdma.c), cancellation (cancel.c), buffered sends
 * (bsend.c).
 */
#include "engine/internal.h" /* (outside the guard: internal.h includes this
                                 file after the engine's struct) */

#ifndef QUAY_ENGINE_P2P_H
#define QUAY_ENGINE_P2P_H

/* ---- engine-internal sends and receives (p2p.c) -------------------------- */
/** Post a send on c (arguments already valid, dst not PROC_NULL) as an
 *  engine-owned request: rflags (e.g. RF_COLL), user and step are set
 *  before anything can complete it. *preq may be released by the time
 *  this returns if it completed at once (RF_COLL: its hook has run). */
int p2p_send_post(quay_engine *e, quay_comm *c, const void *buf, size_t len, int32_t dst,
                  int32_t tag, quay_send_mode mode, uint32_t rflags, void *user, uint32_t step,
                  quay_req **preq);
/** An engine-owned standard send taken by copy as quay_send_inline takes
 *  one (arguments already valid; c may be a collective twin): 0 once
 *  queued (nothing to complete), QUAY_EBUSY when it cannot be taken so
 *  now (too long, earlier sends queued, a failed peer...): post it with
 *  p2p_send_post, which keeps the order. */
int p2p_send_copy(quay_engine *e, quay_comm *c, const void *buf, size_t len, int32_t dst,
                  int32_t tag);
/** The same for a receive (src a comm rank or QUAY_ANY_SOURCE). */
/* The front of iprobe, improbe and recv_inline: the arguments checked,
 * PROC_NULL answered, the oldest kept message matching (src, tag) found.
 * < 0 an error, 1 for PROC_NULL (st filled), else 0 with *pm (NULL when
 * nothing matched). */
int p2p_probe_lookup(quay_engine *e, quay_comm *c, int32_t src, int32_t tag,
                     quay_status *st, umsg **pm);
int p2p_recv_post(quay_engine *e, quay_comm *c, void *buf, size_t cap, int32_t src,
                  int32_t tag, uint32_t rflags, void *user, uint32_t step, quay_req **preq);
/** A receive's (src, tag) pattern is valid on c: 0, QUAY_ERANK or
 *  QUAY_ETAG. */
static inline int recv_pattern_ok(const quay_comm *c, int32_t src, int32_t tag)
{
    if (src != QUAY_ANY_SOURCE && src != QUAY_PROC_NULL &&
        (src < 0 || src >= c->size))
        return QUAY_ERANK;
    if (tag < 0 && tag != QUAY_ANY_TAG)
        return QUAY_ETAG;
    return 0;
}
/** Cancel r (arguments checked by the caller), as quay_cancel. */
int req_cancel(quay_engine *e, quay_req *r);

/* ---- protocols ------------------------------------------------------------ */
/** A matchable message (EAGER or RTS) meets receive r (from arrival, post,
 *  or imrecv). `data` is the eager payload (arrival or held copy). */
void p2p_deliver(quay_engine *e, quay_req *r, const umsg *env,
                 const uint8_t *data);
void rndv_recv_matched(quay_engine *e, quay_req *r, const umsg *env);
/** Rendezvous fragment count for `bytes` (frag shrunk for absurd sizes so
 *  the count fits in 32 bits). */
uint32_t rndv_split(uint64_t bytes, uint64_t frag_size, uint32_t *frag);

/* RDMA rendezvous (rndv_rdma.c). */
/** Sender: offer a key (GET) or to write (PUT) in the RTS, per rndv_mode,
 *  caps and free regions / slots. */
void rndv_offer(quay_engine *e, quay_req *r);
/** Receiver: take the RTS's offer if this side can; 1 if it did (the
 *  request is in RECV_GET or RECV_PUT), 0 for DATA packets. */
int rndv_rdma_matched(quay_engine *e, quay_req *r, const umsg *env);
/** Sender: a CTS carrying the receiver's key (validated by rndv_on_cts). */
int rndv_put_start(quay_engine *e, quay_req *r, const wire_hdr *h);
/** Sender: the match is known and so is where to write (a keyed CTS or an
 *  RTR): set up the RDMA_PUT fragments into `key` and enter `state`
 *  (SEND_PUT or SEND_WRITE). */
void rndv_write_begin(quay_engine *e, quay_req *r, int state, uint32_t rreq, uint64_t key,
                      uint64_t accepted, uint32_t frag, uint32_t nfrags);
/** Build r's next RDMA fragment action into o; 1 if r may issue another
 *  one now. */
int rndv_rdma_emit(quay_engine *e, quay_req *r, qout *o);
/** Progress of a request in SEND_PUT, RECV_GET or RECV_PUT. */
void rndv_rdma_progress(quay_engine *e, quay_req *r);
/** Sender: a PUT's FIN into o; due (QUAY_REQ_SENDS) once every
 *  fragment is written (an SC replaces it after an RTR's writes). */
void rndv_emit_fin(quay_req *r, qout *o);
static inline int rndv_fin_due(const quay_req *r)
{
    return (r->owe & REQ_OWES_FIN) != 0;
}
/** The op_done of a request's FIN (packets.h: on_sent). */
int rndv_fin_sent(quay_engine *e, quay_req *r, int status);
/** The op_done of an RDMA rendezvous fragment: its pipeline slot frees. */
int rndv_rdma_on_done(quay_engine *e, quay_req *r, int status);
/* The handlers of the packet types these protocols own (packets.h). */
int rndv_on_fin(quay_engine *e, int32_t peer, const wire_hdr *h, const uint8_t *payload,
                size_t plen);
/** The status a FIN or SC reports for a transfer that ended with err. */
int32_t rndv_fin_status(int32_t err);
/** A status a FIN or SC may carry (what rndv_fin_status gives). */
static inline int rndv_fin_status_ok(int32_t s)
{
    return s == 0 || s == QUAY_EPEER || s == QUAY_EPROTO || s == QUAY_ESTATE;
}
/** At completion: owed FIN out, internal region released. */
void rndv_rdma_release(quay_engine *e, quay_req *r);
/** Queue r for RDMA actions (no-op if queued). */
void rdmaq_add(quay_engine *e, quay_req *r);


/* p2p.c: a send (seq assigned) leaves as EAGER or RTS. */
void send_envelope(quay_engine *e, quay_req *r);
/** A send whose peer was free of arbitration starts: seq, RTR, flag or
 *  envelope. */
void send_go(quay_engine *e, quay_req *r);

/** Receiver: r's next CTS into o. Sender: r's next DATA fragment. */
void rndv_emit_cts(quay_req *r, qout *o);
void rndv_emit_data(quay_req *r, qout *o);
/* Their lines in QUAY_REQ_SENDS: a grant to give, fragments granted. */
static inline int rndv_cts_due(const quay_req *r)
{
    return (r->owe & REQ_OWES_CTS) != 0;
}
static inline int rndv_data_due(const quay_req *r)
{
    return r->state == QUAY_RS_SEND_DATA && r->rv.next_frag < r->rv.grant;
}
/** Their op_dones (packets.h: on_sent). */
int rndv_cts_sent(quay_engine *e, quay_req *r, int status);
int rndv_data_sent(quay_engine *e, quay_req *r, int status);
/** Sender: r's CANCEL_REQ into o; due (QUAY_REQ_SENDS) once asked for,
 *  under the number quay_cancel took. */
void cancel_emit_req(quay_req *r, qout *o);
static inline int cancel_req_due(const quay_req *r)
{
    return (r->flags & RF_CANCEL_WANTED) != 0;
}
static inline int64_t cancel_req_number(const quay_req *r)
{
    return r->cancel_seq;
}
int rndv_on_cts(quay_engine *e, int32_t peer, const wire_hdr *h, const uint8_t *payload,
                size_t plen);
int rndv_on_data(quay_engine *e, int32_t peer, const wire_hdr *h,
                 const uint8_t *payload, size_t plen);
/** A CANCEL_REQ in its turn: answered (CANCEL_REP), or QUAY_EAGAIN while
 *  the control ring has no room for the answer. */
int cancel_on_req(quay_engine *e, int32_t peer, const umsg *m);
int cancel_on_rep(quay_engine *e, int32_t peer, const wire_hdr *h, const uint8_t *payload,
                  size_t plen);

/* ---- buffered send (bsend.c) ---------------------------------------------- */
void *bsend_alloc(quay_engine *e, size_t len);
void bsend_release(quay_engine *e, void *block);

#endif /* QUAY_ENGINE_P2P_H */
