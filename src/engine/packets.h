/*
 * packets.h — the packet types' registry: one line per type, the only
 * list of them. The table (packets.c) gives each type its name
 * (quay_pkt_name), what the engine may assume of it (its properties),
 * its header length and flag bits, its decoder and encoder, and the
 * handlers that take it. wire.c checks the common header from it and
 * calls the decoder; engine.c dispatches every decoded packet through
 * it, seq.c every sequenced one in its turn; the saved context's checks
 * (out_snap.c, peer_snap.c, match_snap.c) read its properties instead of
 * listing types. A packet type is its value in quay_trace.h, its line
 * here and its protocol's file pair, which owns its fields' offsets, its
 * codec, its emitter and its handler (docs/architecture.md, "What a
 * change touches").
 */
#include "engine/internal.h" /* (outside the guard: internal.h includes this
                                 file after the engine's struct) */

#ifndef QUAY_ENGINE_PACKETS_H
#define QUAY_ENGINE_PACKETS_H

/* What a type is (a set of PK_* bits in its line). */
enum {
    /* Sequenced: it carries the sender's per-peer number (wire_seq) and
     * seq.c takes it in that order (its on_packet is seq_on_packet). */
    PK_SEQ = 1u << 0,
    /* An envelope: matched to receives, kept as an unexpected message
     * while none is posted (seq.c). A sequenced type without it has an
     * on_turn handler, and is held only until its turn. */
    PK_MATCH = 1u << 1,
    /* Carries the sender's comm rank (src): a held one is checked against
     * the sending peer's rank when its context is known. */
    PK_SRC = 1u << 2,
    /* Carries a registered-memory key whatever its flags (a held one's
     * key may be non-zero without WIRE_F_KEY). */
    PK_KEY = 1u << 3,
    /* May wait in the control ring as pure data (ctrl_push): a saved
     * control item; with PK_CTRL_FLAGS it keeps its wire flags there. */
    PK_CTRL = 1u << 4,
    PK_CTRL_FLAGS = 1u << 5,
    /* WIRE_F_KEY appends an 8-byte key (WIRE_KEY_LEN) to its header. */
    PK_KEY_EXT = 1u << 6,
    /* May carry a payload behind its header (else any byte there is
     * malformed); its decoder checks the payload's length. */
    PK_PAYLOAD = 1u << 7,
    /* May head a train: wire_decode_train admits WIRE_F_MORE on it. */
    PK_TRAIN = 1u << 8,
};

/* The fields behind the common header, checked (its type's flags, and no
 * payload unless PK_PAYLOAD, already): 0, or QUAY_EPROTO. payload is the
 * payload's length. */
typedef int pkt_decode_fn(const uint8_t *b, size_t payload, wire_hdr *h);
/* The fields behind the common header, into the header's bytes (zeroed,
 * the common header written: wire_encode). */
typedef void pkt_encode_fn(const wire_hdr *h, uint8_t *o);
/* A packet straight off the wire, decoded (h: its header; the payload is
 * payload[0..plen)): 0 (consumed), QUAY_EAGAIN (offer it again), or a
 * rejection (QUAY_EPROTO, QUAY_ESTATE) that changed nothing. */
typedef int pkt_on_packet_fn(quay_engine *e, int32_t peer, const wire_hdr *h,
                             const uint8_t *payload, size_t plen);
/* A sequenced packet in its turn (seq.c), as the descriptor it was held
 * in or read into: 0, QUAY_EAGAIN (it waits: nothing changed) or
 * QUAY_ESTATE. */
typedef int pkt_on_turn_fn(quay_engine *e, int32_t peer, const umsg *m);

typedef struct pkt_type {
    const char *name;             /* quay_pkt_name; NULL: not a type */
    uint16_t props;               /* PK_* */
    uint16_t flags;               /* the wire flag bits it may carry */
    uint8_t hlen;                 /* header length (PK_KEY_EXT: keyless) */
    pkt_decode_fn *decode;
    pkt_encode_fn *encode;
    pkt_on_packet_fn *on_packet;  /* engine_recv: every type has one */
    pkt_on_turn_fn *on_turn;      /* sequenced, not PK_MATCH: in its turn */
} pkt_type;

/*
 * The registry: X(type, name, props, hlen, flags, decode, encode,
 * on_packet, on_turn). The decoder and encoder (declared below) and the
 * handlers (declared in the protocol's header: p2p.h, eager.h, rtr.h;
 * seq_on_packet in msg.h) live in the protocol's file, with the named
 * offsets of its fields; NULL where a type has no handler of that kind.
 */
#define QUAY_PACKETS(X)                                                                       \
    X(QUAY_PKT_EAGER, "EAGER", PK_SEQ | PK_MATCH | PK_SRC | PK_PAYLOAD | PK_TRAIN,           \
      WIRE_ENV_LEN, WIRE_ENV_FLAGS, eager_decode, env_encode_hdr, seq_on_packet, NULL)        \
    X(QUAY_PKT_RTS, "RTS", PK_SEQ | PK_MATCH | PK_SRC | PK_KEY_EXT, WIRE_ENV_LEN,            \
      WIRE_RTS_FLAGS, rts_decode, env_encode_hdr, seq_on_packet, NULL)                        \
    X(QUAY_PKT_CTS, "CTS", PK_KEY_EXT, WIRE_CTS_LEN, WIRE_F_KEY, cts_decode, cts_encode,     \
      rndv_on_cts, NULL)                                                                      \
    X(QUAY_PKT_DATA, "DATA", PK_PAYLOAD, WIRE_DATA_LEN, 0, data_decode, data_encode,         \
      rndv_on_data, NULL)                                                                     \
    X(QUAY_PKT_ACK, "ACK", PK_CTRL, WIRE_ACK_LEN, 0, ack_decode, ack_encode, eager_on_ack,   \
      NULL)                                                                                   \
    X(QUAY_PKT_CANCEL_REQ, "CANCEL_REQ", PK_SEQ, WIRE_CANCEL_REQ_LEN, 0, cancel_req_decode,  \
      cancel_req_encode, seq_on_packet, cancel_on_req)                                        \
    X(QUAY_PKT_CANCEL_REP, "CANCEL_REP", PK_CTRL | PK_CTRL_FLAGS, WIRE_CANCEL_REP_LEN,       \
      WIRE_F_FOR_RECV, cancel_rep_decode, cancel_rep_encode, cancel_on_rep, NULL)             \
    X(QUAY_PKT_FIN, "FIN", PK_CTRL, WIRE_FIN_LEN, WIRE_F_TO_RECV, fin_decode, fin_encode,    \
      rndv_on_fin, NULL)                                                                      \
    X(QUAY_PKT_RTR, "RTR", PK_SEQ | PK_SRC | PK_KEY, WIRE_RTR_LEN,                           \
      WIRE_F_REVOKE | WIRE_F_CANCEL, rtr_decode, rtr_encode, seq_on_packet, rtr_on_rtr)       \
    X(QUAY_PKT_SC, "SC", PK_SEQ | PK_SRC, WIRE_SC_LEN, 0, sc_decode, sc_encode,              \
      seq_on_packet, rtr_on_sc)                                                               \
    X(QUAY_PKT_ENA_ANY, "ENA_ANY", PK_SEQ | PK_SRC, WIRE_ANY_LEN, 0, any_decode, any_encode, \
      seq_on_packet, arb_on_ena)                                                              \
    X(QUAY_PKT_ANY_FLAG, "ANY_FLAG", PK_SEQ | PK_SRC, WIRE_ANY_LEN, 0, any_decode,           \
      any_encode, seq_on_packet, arb_on_flag)                                                 \
    X(QUAY_PKT_RTR_ANY, "RTR_ANY", PK_SEQ | PK_SRC | PK_KEY, WIRE_ANY_LEN, 0, any_decode,    \
      any_encode, seq_on_packet, arb_on_rtr_any)                                              \
    X(QUAY_PKT_DISABLE_ANY, "DISABLE_ANY", PK_SEQ | PK_SRC, WIRE_ANY_LEN, WIRE_F_DROP,       \
      any_decode, any_encode, seq_on_packet, arb_on_disable)

/* Every decoder's and encoder's prototype (a shared one repeats). */
#define PKT_DECLARE(type, name, props, hlen, flags, decode, encode, on_packet, on_turn)       \
    pkt_decode_fn decode;                                                                     \
    pkt_encode_fn encode;
QUAY_PACKETS(PKT_DECLARE)
#undef PKT_DECLARE

/* Types are small numbers (the table is indexed by them). */
#define PKT_TYPES 32

extern const pkt_type pkt_table[PKT_TYPES];

/* A type's line; an unknown type's is all zero (no name, no handler). */
static inline const pkt_type *pkt_info(unsigned type)
{
    return &pkt_table[type < PKT_TYPES ? type : 0];
}

/* 1 if `type` is a known type with every property in `props`. */
static inline int pkt_is(unsigned type, unsigned props)
{
    const pkt_type *t = pkt_info(type);
    return t->name != NULL && (t->props & props) == props;
}

#endif /* QUAY_ENGINE_PACKETS_H */
