/*
 * recv_inline.c — quay_recv_inline: a receive taken at the call, by copy,
 * from a message that arrived first.
 *
 * An eager message that finds no posted receive is kept (seq.c, or
 * eager_fast.h's eager_keep with its payload in a pool slot). A receive
 * posted later matches it at once; quay_irecv then makes a request only to
 * complete it, and the caller tests and frees it. This call does what that
 * receive would do — the same matching (the oldest kept message matching
 * the pattern, through match.c's facade or its exact-key lookup), the same
 * delivery (payload, truncation, a ready send's error, a synchronous
 * send's ACK) — and hands the status back instead of a request. A message
 * that needs a request (an RTS: the transfer runs after the match) is left
 * where it is: QUAY_EBUSY, and quay_irecv takes it.
 */
#include "engine/eager_fast.h"

static QUAY_NOINLINE int recv_inline_general(quay_engine *e, quay_comm *c, void *buf,
                                             size_t cap, int32_t src, int32_t tag,
                                             quay_status *st);

/* The message's payload into (buf, cap) and the status a receive of it
 * gets. */
static QUAY_ALWAYS_INLINE void take_message(const umsg *m, void *buf, size_t cap,
                                            quay_status *st)
{
    size_t n = (size_t)m->len;
    int32_t err = 0;
    if (m->flags & UMF_POISON) {
        n = 0;
        err = QUAY_ENOTPOSTED;
    } else if (n > cap) {
        n = cap;
        err = QUAY_ETRUNCATE;
    }
    if (n != 0)
        copy_payload(buf, m->data, n);
    if (st != NULL) {
        st->source = m->src;
        st->tag = m->tag;
        st->error = err;
        st->cancelled = 0;
        st->count = n;
    }
}

int quay_recv_inline(quay_engine *e, quay_comm *c, void *buf, size_t cap, int32_t src,
                     int32_t tag, quay_status *st)
{
    /* The commonest case inline: valid arguments, an exact pattern, no
     * oracle alongside, a plain kept eager message (standard mode, no
     * credit held). Anything else goes the general way. */
    if (e != NULL && e->fatal == 0 && comm_ok(e, c) && (buf != NULL || cap == 0) &&
        (src | tag) >= 0 && src < c->size && e->m.oracle == NULL) {
        if (c->nunexp == 0)
            return QUAY_EBUSY;
        umsg *m = match_unexp_exact(&e->m, c, src, tag);
        if (m == NULL)
            return QUAY_EBUSY;
        if (m->type == QUAY_PKT_EAGER && m->flags == 0) {
            match_unexp_take(c, m);
            if (e->trace_fn)
                trace_match(e, NULL, m, m->peer, m->seq, m->ctx, m->src, m->tag);
            take_message(m, buf, cap, st);
            umsg_put(e, m);
            return 0;
        }
    }
    return recv_inline_general(e, c, buf, cap, src, tag, st);
}

/* The arguments' errors (as quay_iprobe's, a bad buffer first), then the
 * match through the facade (wildcards, the oracle's check, the trace). */
static QUAY_NOINLINE int recv_inline_general(quay_engine *e, quay_comm *c, void *buf,
                                             size_t cap, int32_t src, int32_t tag,
                                             quay_status *st)
{
    if (buf == NULL && cap != 0)
        return QUAY_EINVAL;
    umsg *m;
    int rc = p2p_probe_lookup(e, c, src, tag, st, &m);
    if (rc != 0)
        return rc == 1 ? 0 : rc; /* PROC_NULL: received at once */
    if (m == NULL || m->type != QUAY_PKT_EAGER)
        return QUAY_EBUSY;
    if (msg_needs_ack(m)) {
        /* The match a synchronous send waits for: acknowledged here. */
        if (!ctrl_space(e))
            return QUAY_EBUSY;
        ctrl_push(e, QUAY_PKT_ACK, m->peer, m->sreq, 0, 0);
    }
    match_remove_unexp(e, m);
    if (e->trace_fn)
        trace_match(e, NULL, m, m->peer, m->seq, m->ctx, m->src, m->tag);
    take_message(m, buf, cap, st);
    umsg_free(e, m);
    return e->fatal;
}
