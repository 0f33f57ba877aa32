/*
 * train.c — trains (train.h): the pool of train buffers the sender
 * coalesces inline sends into, and the receiver's split of a train into
 * its messages.
 *
 * Sending (inline.c, inline_fast.h): a send on the communicator and to
 * the peer of the inline queue's last packet, while that packet still
 * waits for a pull, is appended to it as a piece (tag, length, payload: 8
 * bytes of header where a packet of its own has 32; the first message
 * gets WIRE_F_MORE) in a buffer of the train pool, which the SEND hands
 * out as its payload iovec. Order is unchanged (the train is the queue's
 * tail, its numbers consecutive: a piece's is implied). Nothing waits to
 * fill a train: a pull takes it as it is.
 *
 * Receiving (engine.c's on_packet_general, for a packet train_is names):
 * the whole train's shape is checked before anything is taken, then each
 * message goes the way a packet of its own would: the hot path
 * (eager_fast.h: eager_arrival, eager_piece), lean while nothing could
 * tell (train_lean), else the general path (engine_recv_decoded).
 */
#include "engine/eager_fast.h"

/* ---- the pool ------------------------------------------------------------ */

/* Train buffers per engine: trains pulled but not yet op_done'd, plus the
 * one filling. When all are out, sends go one per packet. */
#define TRAIN_BUFS 16u

int train_init(quay_engine *e)
{
    size_t limit = e->cfg.max_packet < QUAY_TRAIN_MAX ? e->cfg.max_packet : QUAY_TRAIN_MAX;
    if (!e->inline_plain || (e->cfg.flags & QUAY_CFG_NO_COALESCE) ||
        limit < 2 * WIRE_ENV_LEN)
        return 0; /* no room for two messages: no trains */
    e->train_limit = (uint32_t)limit;
    e->train_room = (uint32_t)(limit - WIRE_ENV_LEN);
    e->train_mem = qalloc(e, (size_t)TRAIN_BUFS * e->train_room);
    e->train_free = qalloc(e, TRAIN_BUFS * sizeof *e->train_free);
    if (e->train_mem == NULL || e->train_free == NULL)
        return QUAY_ENOMEM;
    for (uint32_t i = 0; i < TRAIN_BUFS; i++)
        e->train_free[i] = e->train_mem + (size_t)(TRAIN_BUFS - 1 - i) * e->train_room;
    e->ntrain_free = TRAIN_BUFS;
    return 0;
}

void train_fini(quay_engine *e)
{
    qfree(e, e->train_mem);
    qfree(e, e->train_free);
    e->train_mem = NULL;
    e->train_free = NULL;
    e->ntrain_free = 0;
}

/* ---- arrivals ------------------------------------------------------------ */

/* A piece as the header it stands for: an EAGER of (seq, ctx, src) —
 * what its place in the train gives it — with the piece's tag and
 * length. Returns WIRE_PIECE_LEN (the payload follows), or QUAY_EPROTO
 * for a negative source or tag, as wire_decode would. */
static int piece_hdr(const uint8_t *p, uint32_t seq, uint32_t ctx, int32_t src, wire_hdr *h)
{
    memset(h, 0, sizeof *h);
    h->type = QUAY_PKT_EAGER;
    h->seq = seq;
    h->ctx = ctx;
    h->src = src;
    h->tag = piece_tag(p);
    h->len = piece_len(p);
    return h->src < 0 || h->tag < 0 ? QUAY_EPROTO : WIRE_PIECE_LEN;
}

/* The train's shape, before anything is taken (train_shape), and
 * the packet within max_packet. */
static int train_check(const quay_engine *e, const uint8_t *b, size_t len)
{
    if (len > e->cfg.max_packet)
        return QUAY_EPROTO;
    int n = train_shape(b, len);
    return n < 0 ? n : 0;
}

/* A message of a train offered again (the train was answered QUAY_EAGAIN)
 * that an earlier offer took: behind the peer's next expected number, in
 * its turn but held (a blocked drain), or held ahead of its turn. */
static int train_taken(const quay_engine *e, int32_t peer, uint32_t seq)
{
    const peer_state *ps = &e->peers[peer];
    uint32_t d = seq - ps->rx_seq;
    if (d == 0)
        return ps->drain_blocked;
    if (d >= 0x80000000u)
        return 1;
    for (const qlink *n = ps->held.next; n != &ps->held; n = n->next)
        if (QUAY_CONTAINER_OF(n, umsg, blink)->seq == seq)
            return 1;
    return 0;
}

/* What train_arrival does with a message of the train after the fast
 * path's verdict rc: a message the fast path refused goes the general way
 * (unless an earlier offer of the train took it); its outcome is traced
 * and the first rejection kept in *first. Returns 0 to go on, or the code
 * the train stops with (QUAY_EAGAIN, fatal). The message is seq at
 * p[0..n): the first (an EAGER) when piece is 0, else a piece of (ctx,
 * src). */
static QUAY_ALWAYS_INLINE int train_settle(quay_engine *e, int32_t peer, const uint8_t *p,
                                           size_t n, int piece, uint32_t seq, uint32_t ctx,
                                           int32_t src, int rc, arrival_memo *memo, int *first)
{
    if (rc == EAGER_NOT_FAST) {
        /* (The fast path takes only the peer's next number with nothing
         * held: never one taken before.) */
        const peer_state *ps = &e->peers[peer];
        if ((seq != ps->rx_seq || ps->drain_blocked) && train_taken(e, peer, seq))
            return 0;
        wire_hdr h;
        int hl = piece ? piece_hdr(p, seq, ctx, src, &h) : wire_decode_train(p, n, &h);
        rc = hl < 0 ? hl : engine_recv_decoded(e, peer, &h, hl, p, n, NULL);
        memo->c = NULL; /* (what the general path did may void it) */
    }
    if (e->fatal)
        return e->fatal;
    if (rc == QUAY_EAGAIN)
        return rc;
    if (rc == 0 && e->trace_fn)
        trace_pkt(e, QUAY_TR_PKT_IN, QUAY_PKT_EAGER, peer, 0, seq, 0);
    if (rc != 0 && *first == 0)
        *first = rc;
    return 0;
}

/* A train's pieces may be taken lean (eager_take): nothing to trace, no
 * oracle to keep in step, no RTRs or arbitration; the
 * train's communicator c is ours, its source src is the peer's rank in it,
 * and no wildcard receive is posted on it. Only the general path changes
 * any of it while the train is taken: asked again after each message that
 * went there. */
static int train_lean(const quay_engine *e, const quay_comm *c, int32_t src, int32_t peer)
{
    return e->trace_fn == NULL && e->m.oracle == NULL && e->p2p_plain && c != NULL &&
           comm_src_ok(c, src, peer) && match_exact_only(e, c);
}

/* Each message taken in order: the first as the EAGER it is, each piece
 * as the EAGER it stands for (train.h). An EAGAIN'd train's messages
 * already taken are recognised by their numbers (train_settle). */
int train_arrival(quay_engine *e, int32_t peer, const uint8_t *b, size_t len)
{
    int rc = train_check(e, b, len);
    if (rc != 0)
        return rc;
    /* what every piece shares with the first message */
    uint32_t seq = env_seq(b);
    uint32_t ctx = env_ctx(b);
    int32_t src = env_src(b);
    quay_comm *c = comm_lookup(e, ctx);
    peer_state *ps = &e->peers[peer];
    int first = 0;
    arrival_memo memo = {NULL, 0, 0, NULL};
    size_t n = train_first_size(b);
    rc = eager_arrival(e, peer, b, n, WIRE_F_MORE, &memo);
    if ((rc = train_settle(e, peer, b, n, 0, seq, ctx, src, rc, &memo, &first)) != 0)
        return rc;
    for (size_t off = n; off < len;) {
        const uint8_t *p = b + off;
        n = piece_size(p);
        if (train_lean(e, c, src, peer)) {
            /* a run taken lean (nothing to settle; a lean take sets
             * nothing fatal), until one is not taken */
            while ((rc = eager_piece(e, peer, ps, c, seq + 1, src, p, &memo, 1)) == 0) {
                seq++;
                if ((off += n) == len)
                    return first;
                p = b + off;
                n = piece_size(p);
            }
        } else {
            rc = eager_piece(e, peer, ps, c, seq + 1, src, p, &memo, 0);
        }
        seq++;
        if ((rc = train_settle(e, peer, p, n, 1, seq, ctx, src, rc, &memo, &first)) != 0)
            return rc;
        off += n;
    }
    return first;
}
