/*
 * train.h — trains: several standard messages to one peer on one
 * communicator in one packet (docs/wire.md, "Trains"), both sides. The
 * sender coalesces: an inline send that finds the packet at the inline
 * queue's tail going to its peer on its communicator appends itself to
 * it as a piece (train_append, on inline_fast.h's paths), in a buffer of
 * the engine's train pool (train.c). The receiver splits: it checks the
 * train's shape and takes each message as a packet of its own
 * (train_arrival, train.c). A piece's layout is named here once.
 */
#include "engine/internal.h" /* (outside the guard: internal.h includes this
                                 file after the engine's struct) */

#ifndef QUAY_ENGINE_TRAIN_H
#define QUAY_ENGINE_TRAIN_H

/* A piece: WIRE_PIECE_LEN bytes, then its payload. It stands for a
 * standard EAGER of the train's context and source, numbered one after
 * the message before it, sreq 0. */
enum {
    PIECE_TAG = 0, /* 4 */
    PIECE_LEN = 4  /* 4: the payload's length */
};

static inline int32_t piece_tag(const uint8_t *p) { return (int32_t)wire_get32(p + PIECE_TAG); }
static inline uint32_t piece_len(const uint8_t *p) { return wire_get32(p + PIECE_LEN); }
static inline const uint8_t *piece_payload(const uint8_t *p) { return p + WIRE_PIECE_LEN; }
/* A piece's bytes on the wire, header and payload. */
static inline size_t piece_size(const uint8_t *p) { return WIRE_PIECE_LEN + (size_t)piece_len(p); }

static inline void piece_encode(uint8_t *o, int32_t tag, uint32_t len)
{
    wire_put32(o + PIECE_TAG, (uint32_t)tag);
    wire_put32(o + PIECE_LEN, len);
}

/* 1 if the packet is a train: an EAGER flagged WIRE_F_MORE. */
static inline int train_is(const uint8_t *b, size_t len)
{
    return len >= WIRE_COMMON_LEN && wire_type(b) == QUAY_PKT_EAGER &&
           (wire_flags(b) & WIRE_F_MORE);
}

/* The bytes of a train's first message: its envelope and its payload. */
static inline size_t train_first_size(const uint8_t *b)
{
    return WIRE_ENV_LEN + (size_t)env_len(b);
}

/** A train's shape: bytes[0..len) is an EAGER flagged WIRE_F_MORE of this
 *  version whose length fits the packet, then at least one piece, each
 *  piece's length within what is left, the last ending the packet exactly.
 *  Returns the number of messages (2 or more), or QUAY_EPROTO. Fields are
 *  the decoders' to check (wire_decode_train; a piece's tag where it is
 *  taken). */
static inline int train_shape(const uint8_t *b, size_t len)
{
    if (len < WIRE_ENV_LEN || wire_version(b) != WIRE_VERSION ||
        wire_type(b) != QUAY_PKT_EAGER || !(wire_flags(b) & WIRE_F_MORE) ||
        env_len(b) >= len - WIRE_ENV_LEN)
        return QUAY_EPROTO; /* (>=: no room left for a piece either) */
    size_t off = train_first_size(b);
    int n = 1;
    do {
        size_t rem = len - off;
        if (rem < WIRE_PIECE_LEN || piece_len(b + off) > rem - WIRE_PIECE_LEN)
            return QUAY_EPROTO;
        off += piece_size(b + off);
        n++;
    } while (off != len);
    return n;
}

/* Append the message to o, the queue's tail packet to the same peer, as a
 * train's piece: 0, or -1 if it cannot go there (another communicator, a
 * number between, no train buffer, no room left). `small` (a constant):
 * len is at most 16, copied with no call. */
static QUAY_ALWAYS_INLINE int train_append(quay_engine *e, qout *o, const quay_comm *c,
                                           const void *buf, size_t len, int32_t tag,
                                           peer_state *ps, int small)
{
    size_t need = WIRE_PIECE_LEN + len;
    uint8_t *first = OUT_HDR(o);
    /* a piece is numbered one after the message before it, and has the
     * first one's context (so source) */
    if ((int32_t)need > o->train_room || o->train_next != ps->tx_seq ||
        env_ctx(first) != c->ctx)
        return -1;
    if (o->train == NULL) {
        if (e->ntrain_free == 0 || e->train_mem == NULL)
            return -1;
        o->train = e->train_free[--e->ntrain_free];
        o->payload = o->train;
        wire_put_flags(first, WIRE_F_MORE); /* it heads a train now */
    }
    uint8_t *h = o->train + o->payload_len;
    ps->tx_seq++;
    piece_encode(h, tag, (uint32_t)len);
    if (small)
        copy_small(h + WIRE_PIECE_LEN, buf, len);
    else if (len != 0)
        copy_payload(h + WIRE_PIECE_LEN, buf, len);
    o->train_next++;
    o->train_room = (int16_t)(o->train_room - (int32_t)need);
    o->payload_len += need;
    return 0;
}

/** The train pool, made once the engine's kind is known (no trains without
 *  inline sends, or under QUAY_CFG_NO_COALESCE); freed by train_fini. */
int train_init(quay_engine *e);
void train_fini(quay_engine *e);

/** A train from `peer` (engine without flow control, healthy, peer neither
 *  us nor failed), each message taken as a packet of its own: 0 (all
 *  taken), QUAY_EAGAIN (one found no room: it and those behind it were
 *  not taken; offered again, those already taken are skipped), the first
 *  rejection's code (the others were still taken), or a fatal code. */
int train_arrival(quay_engine *e, int32_t peer, const uint8_t *b, size_t len);

#endif /* QUAY_ENGINE_TRAIN_H */
