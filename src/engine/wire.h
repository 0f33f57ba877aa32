/*
 * wire.h — quay's wire format: versioned, fixed little-endian, explicit
 * sizes. Encoders write into a caller buffer of QUAY_MAX_HEADER bytes;
 * the decoder validates syntax (version, type, lengths, field ranges) and
 * never trusts a length. Semantics (ranks, ids, state) are checked by the
 * protocol module that handles the packet. Layouts: docs/wire.md.
 *
 * This file (with wire.c) owns the common header every packet starts
 * with (version, type, flags; and the number a sequenced packet carries
 * next), the header lengths and flag bits tests and fuzzers name, the
 * decoded header, and the byte helpers. The fields behind the common
 * header are each type's protocol's: its decoder, encoder and named
 * offsets live in its file (packets.h lists them), the envelope's
 * (EAGER, RTS) in eager.h for the hot paths.
 */
#ifndef QUAY_ENGINE_WIRE_H
#define QUAY_ENGINE_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <quay/quay.h>

#define WIRE_VERSION 1

/* Header sizes per packet type. */
#define WIRE_ENV_LEN 32    /* EAGER, RTS */
#define WIRE_CTS_LEN 32
#define WIRE_KEY_LEN 8     /* added to RTS and CTS by WIRE_F_KEY */
#define WIRE_FIN_LEN 16
#define WIRE_RTR_LEN 48
#define WIRE_SC_LEN 40
#define WIRE_ANY_LEN 48    /* ENA_ANY, ANY_FLAG, RTR_ANY, DISABLE_ANY */
#define WIRE_DATA_LEN 16
#define WIRE_ACK_LEN 12
#define WIRE_CANCEL_REQ_LEN 20
#define WIRE_CANCEL_REP_LEN 12

/* Envelope flags (EAGER, RTS). */
#define WIRE_F_SYNC 0x1u
#define WIRE_F_READY 0x2u
#define WIRE_ENV_FLAGS (WIRE_F_SYNC | WIRE_F_READY)
/* RTS: a key to the sender's buffer follows (the receiver may read it);
 * CTS: a key to the receiver's buffer follows (the sender writes). */
#define WIRE_F_KEY 0x4u
/* RTS: the sender can write into a key the receiver gives in its CTS. */
#define WIRE_F_PUT_OK 0x8u
#define WIRE_RTS_FLAGS (WIRE_ENV_FLAGS | WIRE_F_KEY | WIRE_F_PUT_OK)
/* EAGER: the first message of a train (coalesced standard sends): its
 * length field covers its own payload, and pieces follow it to the end of
 * the packet (train.h). Only the packet's top level splits a train
 * (engine.c, train.c), so inside a channel frame (flow control)
 * wire_decode rejects it. */
#define WIRE_F_MORE 0x10u
/* A train's piece: tag (4), payload length (4), then the payload (its
 * layout: train.h). */
#define WIRE_PIECE_LEN 8
/* FIN: from the sender (it wrote the data) to the receiver; without it,
 * from the receiver (it read the data) to the sender. */
#define WIRE_F_TO_RECV 0x1u
/* RTR: the delegation ends (the receive was matched here: the sender
 * drops the entry) / the receiver asks to cancel it (the sender answers
 * CANCEL_REP). Neither: a new delegation. */
#define WIRE_F_REVOKE 0x1u
#define WIRE_F_CANCEL 0x2u
/* DISABLE_ANY declining a flag: drop the announcement too (the pattern
 * has no receive pending). A DISABLE_ANY without a flag (sreq 0) always
 * drops it. */
#define WIRE_F_DROP 0x1u
/* CANCEL_REP: the verdict is for a receive (an RTR cancel), not a send. */
#define WIRE_F_FOR_RECV 0x1u

/** A decoded packet header. Which fields are meaningful depends on type. */
typedef struct wire_hdr {
    uint8_t type;    /* quay_pkt_type */
    uint16_t flags;
    uint32_t seq;    /* EAGER, RTS, CANCEL_REQ: sender's envelope sequence */
    uint32_t ctx;    /* EAGER, RTS, CANCEL_REQ */
    int32_t src;     /* EAGER, RTS: sender's comm rank */
    int32_t tag;     /* EAGER, RTS */
    uint32_t sreq;   /* sender request id: EAGER, RTS, CTS, ACK, CANCEL_*, FIN, SC */
    uint32_t rreq;   /* receiver request id: CTS, DATA, FIN, RTR, SC */
    uint64_t len;    /* EAGER, RTS: message length; CTS: accepted bytes */
    uint64_t offset; /* DATA */
    uint32_t grant;  /* CTS: fragments [0, grant) may be sent */
    uint32_t frag;   /* CTS: fragment size chosen by the receiver */
    uint32_t index;  /* CTS: 1-based count of CTS sent for this message */
    int32_t status;  /* ACK: 0 or QUAY_ENOTPOSTED; CANCEL_REP: 1 cancelled, 0 not;
                        FIN: 0 or the transfer's error (EPEER, EPROTO, ESTATE) */
    uint32_t target; /* CANCEL_REQ: sequence number of the message to cancel */
    uint64_t key;    /* RTS, CTS with WIRE_F_KEY, RTR: a registered-memory key */
    uint32_t x;      /* RTR: the receiver's next expected sequence number
                        from the sender when it sent the RTR */
    uint32_t slot;   /* ENA_ANY, ANY_FLAG, DISABLE_ANY: the announcement
                        (the receiver's slot index + 1 | generation << 8) */
} wire_hdr;

/**
 * Decode the header at bytes[0..len). On success returns the header length
 * (payload is bytes[ret..len)), else QUAY_EPROTO. Checks version, type,
 * exact header length, flag bits, field ranges and that the payload length
 * is consistent with the header (EAGER: equals len; DATA: > 0; others: 0):
 * the common part here, the rest by the type's decoder (packets.h).
 */
int wire_decode(const uint8_t *bytes, size_t len, wire_hdr *h);

/** A train's first message (its EAGER cut at its own length): wire_decode,
 *  with WIRE_F_MORE admitted on an EAGER. A packet on its own never
 *  carries it (wire_decode: QUAY_EPROTO). */
int wire_decode_train(const uint8_t *bytes, size_t len, wire_hdr *h);

/** Encode `h` (by h->type) into out[QUAY_MAX_HEADER]; returns its length. */
size_t wire_encode(const wire_hdr *h, uint8_t *out);

static inline void wire_put16(uint8_t *p, uint16_t v);
static inline void wire_put32(uint8_t *p, uint32_t v);
static inline void wire_put64(uint8_t *p, uint64_t v);

/*
 * Little-endian field access with no alignment or aliasing assumptions:
 * memcpy of a fixed size compiles to one load/store, and a byte swap is
 * added only on big-endian hosts.
 */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define WIRE_LE16(v) __builtin_bswap16(v)
#define WIRE_LE32(v) __builtin_bswap32(v)
#define WIRE_LE64(v) __builtin_bswap64(v)
#else
#define WIRE_LE16(v) (v)
#define WIRE_LE32(v) (v)
#define WIRE_LE64(v) (v)
#endif

/* ---- the common header: every packet starts with it ------------------- */

enum {
    WIRE_OFF_VERSION = 0, /* 1 byte: WIRE_VERSION */
    WIRE_OFF_TYPE = 1,    /* 1 byte: quay_pkt_type */
    WIRE_OFF_FLAGS = 2,   /* 2 bytes: the type's WIRE_F_* bits */
    WIRE_OFF_SEQ = 4,     /* 4 bytes, sequenced types: the sender's number */
    WIRE_COMMON_LEN = 4   /* version, type, flags */
};

static inline uint8_t wire_version(const uint8_t *b) { return b[WIRE_OFF_VERSION]; }
static inline uint8_t wire_type(const uint8_t *b) { return b[WIRE_OFF_TYPE]; }
static inline uint16_t wire_get16(const uint8_t *p);
static inline uint32_t wire_get32(const uint8_t *p);
static inline uint64_t wire_get64(const uint8_t *p);
static inline uint16_t wire_flags(const uint8_t *b) { return wire_get16(b + WIRE_OFF_FLAGS); }
/* A sequenced packet's number (its type has PK_SEQ; 8 bytes or more). */
static inline uint32_t wire_seq(const uint8_t *b) { return wire_get32(b + WIRE_OFF_SEQ); }
/* Write the common header. */
static inline void wire_put_common(uint8_t *o, uint8_t type, uint16_t flags)
{
    o[WIRE_OFF_VERSION] = WIRE_VERSION;
    o[WIRE_OFF_TYPE] = type;
    wire_put16(o + WIRE_OFF_FLAGS, flags);
}
static inline void wire_put_flags(uint8_t *o, uint16_t flags)
{
    wire_put16(o + WIRE_OFF_FLAGS, flags);
}

static inline void wire_put16(uint8_t *p, uint16_t v)
{
    v = WIRE_LE16(v);
    memcpy(p, &v, sizeof v);
}
static inline void wire_put32(uint8_t *p, uint32_t v)
{
    v = WIRE_LE32(v);
    memcpy(p, &v, sizeof v);
}
static inline void wire_put64(uint8_t *p, uint64_t v)
{
    v = WIRE_LE64(v);
    memcpy(p, &v, sizeof v);
}
static inline uint16_t wire_get16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return WIRE_LE16(v);
}
static inline uint32_t wire_get32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return WIRE_LE32(v);
}
static inline uint64_t wire_get64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return WIRE_LE64(v);
}

#endif /* QUAY_ENGINE_WIRE_H */
