/*
 * eager.h — the eager protocol's entry points (eager.c; the arrival hot
 * path is eager_fast.h) and the envelope's layout, which EAGER and RTS
 * share (docs/wire.md). Each field's offset is named here once and read
 * or written through these inline accessors: by the decoders (eager.c,
 * rndv.c), the hot paths (eager_fast.h, train.c, inline_fast.h) and the
 * builders (p2p.c, out.c).
 */
#include "engine/internal.h" /* (outside the guard: internal.h includes this
                                 file after the engine's struct) */

#ifndef QUAY_ENGINE_EAGER_H
#define QUAY_ENGINE_EAGER_H

/* The envelope, behind the common header (wire.h): WIRE_ENV_LEN bytes,
 * then an RTS's key (WIRE_F_KEY) or an EAGER's payload. */
enum {
    ENV_SEQ = WIRE_OFF_SEQ, /* 4: the sender's per-destination number */
    ENV_CTX = 8,            /* 4: context id */
    ENV_SRC = 12,           /* 4: the sender's comm rank */
    ENV_TAG = 16,           /* 4 */
    ENV_SREQ = 20,          /* 4: the sender's request id */
    ENV_LEN = 24,           /* 8: the message's length */
    ENV_KEY = WIRE_ENV_LEN  /* 8, an RTS with WIRE_F_KEY: its buffer's key */
};

static inline uint32_t env_seq(const uint8_t *b) { return wire_get32(b + ENV_SEQ); }
static inline uint32_t env_ctx(const uint8_t *b) { return wire_get32(b + ENV_CTX); }
static inline int32_t env_src(const uint8_t *b) { return (int32_t)wire_get32(b + ENV_SRC); }
static inline int32_t env_tag(const uint8_t *b) { return (int32_t)wire_get32(b + ENV_TAG); }
static inline uint32_t env_sreq(const uint8_t *b) { return wire_get32(b + ENV_SREQ); }
static inline uint64_t env_len(const uint8_t *b) { return wire_get64(b + ENV_LEN); }
static inline uint64_t env_key(const uint8_t *b) { return wire_get64(b + ENV_KEY); }

/* The envelope's fields into h (the EAGER and RTS decoders). */
static inline void env_read(const uint8_t *b, wire_hdr *h)
{
    h->seq = env_seq(b);
    h->ctx = env_ctx(b);
    h->src = env_src(b);
    h->tag = env_tag(b);
    h->sreq = env_sreq(b);
    h->len = env_len(b);
}

/** Encode an EAGER or RTS header (the hot path: no intermediate struct);
 *  byte-for-byte what wire_encode writes. Returns WIRE_ENV_LEN (an RTS
 *  with WIRE_F_KEY: the caller appends the key, env_put_key). */
static inline size_t env_encode(uint8_t *o, uint8_t type, uint16_t flags, uint32_t seq,
                                uint32_t ctx, int32_t src, int32_t tag, uint32_t sreq,
                                uint64_t len)
{
    wire_put_common(o, type, flags);
    wire_put32(o + ENV_SEQ, seq);
    wire_put32(o + ENV_CTX, ctx);
    wire_put32(o + ENV_SRC, (uint32_t)src);
    wire_put32(o + ENV_TAG, (uint32_t)tag);
    wire_put32(o + ENV_SREQ, sreq);
    wire_put64(o + ENV_LEN, len);
    return WIRE_ENV_LEN;
}

static inline void env_put_key(uint8_t *o, uint64_t key)
{
    wire_put64(o + ENV_KEY, key);
}

/* The envelope flags a send's mode asks for. */
static inline uint16_t send_wire_flags(const quay_req *r)
{
    return r->mode == QUAY_SEND_SYNC    ? WIRE_F_SYNC
           : r->mode == QUAY_SEND_READY ? WIRE_F_READY
                                        : 0;
}

/* ---- eager (eager.c) ----------------------------------------------------- */
/** A send's envelope (EAGER, or RTS with its offer) into o: the payload
 *  of an EAGER rides behind it; r's envelope is sent. */
void env_emit(quay_req *r, qout *o);
/* Its line in QUAY_REQ_SENDS: every send's first packet, under its
 * number. */
static inline int env_due(const quay_req *r)
{
    return r->kind == RK_SEND && !(r->flags & RF_ENV_SENT);
}
static inline int64_t env_number(const quay_req *r)
{
    return r->seq;
}
/** An EAGER's op_done (packets.h: on_sent): its payload is out. */
int eager_on_sent(quay_engine *e, quay_req *r, int status);
/** The ACK's handler (packets.h). */
int eager_on_ack(quay_engine *e, int32_t peer, const wire_hdr *h, const uint8_t *payload,
                 size_t plen);
/** quay_on_packet's fast path: an in-order standard EAGER that meets a
 *  posted receive. Returns EAGER_NOT_FAST (nothing done: take the general
 *  path) or the packet's result. */
#define EAGER_NOT_FAST 1
int eager_fast_arrival(quay_engine *e, int32_t peer, const uint8_t *b, size_t len);

#endif /* QUAY_ENGINE_EAGER_H */
