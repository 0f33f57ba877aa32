/*
 * packets.h — the packet types' registry: one line per type, the only
 * list of them. The table (packets.c) gives each type its name
 * (quay_pkt_name), what the engine may assume of it (its properties),
 * its header length and flag bits, its decoder and encoder, and the
 * handlers that take it. wire.c checks the common header from it and
 * calls the decoder; engine.c dispatches every decoded packet through
 * it, seq.c every sequenced one in its turn; the saved context's checks
 * (out_snap.c, peer_snap.c, match_snap.c) read its properties instead of
 * listing types. out.c builds what requests send from QUAY_REQ_SENDS
 * (below). A packet type is its value in quay_trace.h, its line here (and
 * in QUAY_REQ_SENDS if a request sends it) and its protocol's file pair,
 * which owns its fields' offsets, its codec, its emitter and its
 * handlers (docs/architecture.md, "What a change touches").
 */
#include "engine/internal.h" /* (outside the guard: internal.h includes this
                                 file after the engine's struct, before
                                 request.h, which needs the owe bits) */

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
/* r's packet of this type is over (quay_on_op_done; status < 0: its
 * transmission failed): what the protocol notes on success; returns the
 * status that stands (a failure that lost nothing may become 0). */
typedef int pkt_on_sent_fn(quay_engine *e, quay_req *r, int status);

typedef struct pkt_type {
    const char *name;             /* quay_pkt_name; NULL: not a type */
    uint16_t props;               /* PK_* */
    uint16_t flags;               /* the wire flag bits it may carry */
    uint8_t hlen;                 /* header length (PK_KEY_EXT: keyless) */
    pkt_decode_fn *decode;
    pkt_encode_fn *encode;
    pkt_on_packet_fn *on_packet;  /* engine_recv: every type has one */
    pkt_on_turn_fn *on_turn;      /* sequenced, not PK_MATCH: in its turn */
    pkt_on_sent_fn *on_sent;      /* sent by a request: its op_done */
} pkt_type;

/*
 * The registry: X(type, name, props, hlen, flags, decode, encode,
 * on_packet, on_turn, on_sent). The decoder and encoder (declared below)
 * and the handlers (declared in the protocol's header: p2p.h, eager.h,
 * rtr.h, arbitrate.h; seq_on_packet in seq.h) live in the protocol's
 * file, with the named offsets of its fields; NULL where a type has no
 * handler of that kind.
 */
#define QUAY_PACKETS(X)                                                                       \
    X(QUAY_PKT_EAGER, "EAGER", PK_SEQ | PK_MATCH | PK_SRC | PK_PAYLOAD | PK_TRAIN,           \
      WIRE_ENV_LEN, WIRE_ENV_FLAGS, eager_decode, env_encode_hdr, seq_on_packet, NULL,        \
      eager_on_sent)                                                                          \
    X(QUAY_PKT_RTS, "RTS", PK_SEQ | PK_MATCH | PK_SRC | PK_KEY_EXT, WIRE_ENV_LEN,            \
      WIRE_RTS_FLAGS, rts_decode, env_encode_hdr, seq_on_packet, NULL, NULL)                  \
    X(QUAY_PKT_CTS, "CTS", PK_KEY_EXT, WIRE_CTS_LEN, WIRE_F_KEY, cts_decode, cts_encode,     \
      rndv_on_cts, NULL, rndv_cts_sent)                                                       \
    X(QUAY_PKT_DATA, "DATA", PK_PAYLOAD, WIRE_DATA_LEN, 0, data_decode, data_encode,         \
      rndv_on_data, NULL, rndv_data_sent)                                                     \
    X(QUAY_PKT_ACK, "ACK", PK_CTRL, WIRE_ACK_LEN, 0, ack_decode, ack_encode, eager_on_ack,   \
      NULL, NULL)                                                                             \
    X(QUAY_PKT_CANCEL_REQ, "CANCEL_REQ", PK_SEQ, WIRE_CANCEL_REQ_LEN, 0, cancel_req_decode,  \
      cancel_req_encode, seq_on_packet, cancel_on_req, NULL)                                  \
    X(QUAY_PKT_CANCEL_REP, "CANCEL_REP", PK_CTRL | PK_CTRL_FLAGS, WIRE_CANCEL_REP_LEN,       \
      WIRE_F_FOR_RECV, cancel_rep_decode, cancel_rep_encode, cancel_on_rep, NULL, NULL)       \
    X(QUAY_PKT_FIN, "FIN", PK_CTRL, WIRE_FIN_LEN, WIRE_F_TO_RECV, fin_decode, fin_encode,    \
      rndv_on_fin, NULL, rndv_fin_sent)                                                       \
    X(QUAY_PKT_RTR, "RTR", PK_SEQ | PK_SRC | PK_KEY, WIRE_RTR_LEN,                           \
      WIRE_F_REVOKE | WIRE_F_CANCEL, rtr_decode, rtr_encode, seq_on_packet, rtr_on_rtr,       \
      NULL)                                                                                   \
    X(QUAY_PKT_SC, "SC", PK_SEQ | PK_SRC, WIRE_SC_LEN, 0, sc_decode, sc_encode,              \
      seq_on_packet, rtr_on_sc, NULL)                                                         \
    X(QUAY_PKT_ENA_ANY, "ENA_ANY", PK_SEQ | PK_SRC, WIRE_ANY_LEN, 0, any_decode, any_encode, \
      seq_on_packet, arb_on_ena, NULL)                                                        \
    X(QUAY_PKT_ANY_FLAG, "ANY_FLAG", PK_SEQ | PK_SRC, WIRE_ANY_LEN, 0, any_decode,           \
      any_encode, seq_on_packet, arb_on_flag, NULL)                                           \
    X(QUAY_PKT_RTR_ANY, "RTR_ANY", PK_SEQ | PK_SRC | PK_KEY, WIRE_ANY_LEN, 0, any_decode,    \
      any_encode, seq_on_packet, arb_on_rtr_any, NULL)                                        \
    X(QUAY_PKT_DISABLE_ANY, "DISABLE_ANY", PK_SEQ | PK_SRC, WIRE_ANY_LEN, WIRE_F_DROP,       \
      any_decode, any_encode, seq_on_packet, arb_on_disable, NULL)

/* Every decoder's and encoder's prototype (a shared one repeats). */
#define PKT_DECLARE(type, name, props, hlen, flags, decode, encode, on_packet, on_turn,       \
                    on_sent)                                                                  \
    pkt_decode_fn decode;                                                                     \
    pkt_encode_fn encode;
QUAY_PACKETS(PKT_DECLARE)
#undef PKT_DECLARE


/*
 * What a request sends, first due first: X(name, due, number, emit). One
 * line per packet a request builds from its own state (control replies
 * wait in the control ring instead: PK_CTRL). due(r): r has that packet
 * to send now (out.c emits the first due line's, and keeps r on the txq
 * while any line is due); number(r): the sequence number it will carry,
 * or -1 (pkt_unnumbered): with RTRs a numbered packet goes only in its
 * turn; emit(r, o): builds it into o (type, number, header, payload) and
 * notes on r that it left. Each lives in the protocol's file pair, as its
 * codec does; the type's on_sent (above) takes its op_done.
 */
#define QUAY_REQ_SENDS(X)                                                                     \
    X(ANY_FLAG, arb_flag_due, arb_flag_number, arb_emit_flag)                                 \
    X(ENVELOPE, env_due, env_number, env_emit)                                                \
    X(CTS, rndv_cts_due, pkt_unnumbered, rndv_emit_cts)                                       \
    X(SC, rtr_sc_due, rtr_sc_number, rtr_emit_sc)                                             \
    X(FIN, rndv_fin_due, pkt_unnumbered, rndv_emit_fin)                                       \
    X(CANCEL_REQ, cancel_req_due, cancel_req_number, cancel_emit_req)                         \
    X(DATA, rndv_data_due, pkt_unnumbered, rndv_emit_data)

/* One bit per line, REQ_OWES_<name>, for r->owe: a protocol that owes a
 * packet sets its bit, its due reads it and its emitter clears it (a line
 * may instead be due by state the request has anyway: the envelope until
 * it is sent, DATA while fragments are granted). */
#define REQ_SEND_INDEX(name, due, number, emit) REQ_SEND_##name,
enum { QUAY_REQ_SENDS(REQ_SEND_INDEX) REQ_SEND_LINES };
#undef REQ_SEND_INDEX
#define REQ_SEND_BIT(name, due, number, emit) REQ_OWES_##name = 1u << REQ_SEND_##name,
enum { QUAY_REQ_SENDS(REQ_SEND_BIT) };
#undef REQ_SEND_BIT
#define REQ_OWES_ALL ((1u << REQ_SEND_LINES) - 1u)
_Static_assert(REQ_SEND_LINES <= 32, "a request's owe bits are 32");

/* A request's number for a packet that carries none (its line in
 * QUAY_REQ_SENDS). */
static inline int64_t pkt_unnumbered(const quay_req *r)
{
    (void)r;
    return -1;
}

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
