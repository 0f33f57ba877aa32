/*
 * quay_trace.h — introspection: the trace hook, request states, statistics.
 * Part of quay.h, which includes it; include <quay/quay.h>.
 */
#include <quay/quay.h>

#ifndef QUAY_TRACE_H
#define QUAY_TRACE_H

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Introspection: trace hook, states, statistics                        */
/* ------------------------------------------------------------------ */

/** Request states (the protocol state machines; see docs/protocols.md). */
typedef enum quay_req_state {
    QUAY_RS_FREE = 0,
    /* send side */
    QUAY_RS_SEND_EAGER,    /**< eager packet queued / on the wire */
    QUAY_RS_SEND_WAIT_ACK, /**< sync/ready eager: wire done, awaiting reply */
    QUAY_RS_SEND_RTS,      /**< rendezvous: RTS sent, awaiting the first CTS
                                (or, having offered its key, the FIN) */
    QUAY_RS_SEND_DATA,     /**< rendezvous: sending granted fragments */
    QUAY_RS_SEND_PUT,      /**< RDMA rendezvous: writing into the receiver's
                                key (RDMA_PUT), then FIN */
    QUAY_RS_SEND_WRITE,    /**< receiver-initiated: took the receiver's RTR;
                                writing into its buffer (RDMA_PUT), then SC */
    QUAY_RS_SEND_CANCEL,   /**< cancel requested, awaiting the verdict */
    QUAY_RS_SEND_ANY,      /**< interest flag sent for a receiver's wildcard
                                announcement: awaiting RTR_ANY (write) or
                                DISABLE_ANY (send the envelope) */
    QUAY_RS_SEND_QUEUED,   /**< waiting behind an earlier send to the same
                                peer that is in arbitration (order) */
    /* receive side */
    QUAY_RS_RECV_POSTED,   /**< in the posted queue */
    QUAY_RS_RECV_RNDV,     /**< matched an RTS: granting, receiving data */
    QUAY_RS_RECV_GET,      /**< RDMA rendezvous: reading the sender's key
                                (RDMA_GET), then FIN */
    QUAY_RS_RECV_PUT,      /**< RDMA rendezvous: key sent in the CTS,
                                awaiting the sender's FIN */
    QUAY_RS_RECV_RTR,      /**< posted and delegated to its source: RTR with
                                the buffer's key sent (or queued); awaiting
                                SC, or an envelope matched here */
    QUAY_RS_RECV_ANY,      /**< posted wildcard receive, its pattern
                                announced: an envelope may match it, or a
                                sender's flag may claim it (matched, out of
                                the posted queue, RTR_ANY sent: awaiting
                                the data and SC) */
    /* one-sided */
    QUAY_RS_RDMA,          /**< put / get issued, awaiting its op_done */
    /* collective (quay_coll.h) */
    QUAY_RS_COLL,          /**< its schedule is running */
    /* all */
    QUAY_RS_DONE,
    QUAY_RS_COUNT_
} quay_req_state;

/** Name of a state ("SEND_EAGER", ...). */
QUAY_API const char *quay_state_name(int state);

/** Trace event kinds. */
typedef enum quay_trace_kind {
    QUAY_TR_STATE = 1,   /**< request `req_id` moved `from` -> `to` */
    QUAY_TR_PKT_IN = 2,  /**< packet of `pkt` type accepted from `peer`
                              (after the events it caused; `seq` set for
                              sequenced types) */
    QUAY_TR_PKT_OUT = 3, /**< packet of `pkt` type emitted to `peer` */
    QUAY_TR_REJECT = 4,  /**< packet from `peer` rejected with `code` */
    QUAY_TR_MATCH = 5,   /**< receive `req_id` matched message (`peer`,
                              `seq`, ctx, src, tag) */
    QUAY_TR_FORGED_KEY = 6, /**< `peer` presented a memory key this engine
                                 never made for it (`code`: the refusal) */
    QUAY_TR_PEER_HOSTILE = 7 /**< `peer` declared failed for what it sent
                                  (`code`: QUAY_ESTATE past
                                  forged_key_limit, QUAY_EPROTO past
                                  malformed_limit) */
} quay_trace_kind;

/** One trace event; valid only during the callback. */
typedef struct quay_trace_event {
    int32_t kind;    /**< quay_trace_kind */
    uint32_t req_id; /**< request concerned (0 if none) */
    int32_t from;    /**< STATE: previous quay_req_state */
    int32_t to;      /**< STATE: new quay_req_state */
    int32_t peer;    /**< world rank of the peer concerned, or -1 */
    int32_t pkt;     /**< packet type (PKT_*, REJECT), see quay_pkt_name */
    int32_t code;    /**< REJECT: the error code */
    uint32_t ctx;    /**< MATCH: context id; PKT_OUT of a message sent
                          with no request (req_id 0: quay_send_inline's,
                          or a collective's step taken by copy): its
                          context id */
    int32_t src;     /**< MATCH: source comm rank */
    int32_t tag;     /**< MATCH: tag */
    uint32_t seq;    /**< MATCH / PKT: the peer's envelope sequence number */
} quay_trace_event;

typedef void (*quay_trace_fn)(void *ctx, const quay_trace_event *ev);

/** Install (or with fn = NULL remove) the trace hook, called synchronously
 *  on every state transition, packet in/out, rejection and match. */
QUAY_API void quay_set_trace(quay_engine *e, quay_trace_fn fn, void *ctx);

/** Wire packet types (trace events carry them; docs/wire.md has layouts). */
typedef enum quay_pkt_type {
    QUAY_PKT_EAGER = 1,      /**< envelope + whole payload (sequenced) */
    QUAY_PKT_RTS = 2,        /**< rendezvous request to send (sequenced) */
    QUAY_PKT_CTS = 3,        /**< rendezvous clear to send / fragment grant */
    QUAY_PKT_DATA = 4,       /**< rendezvous data fragment */
    QUAY_PKT_ACK = 5,        /**< sync-send matched / ready-send verdict */
    QUAY_PKT_CANCEL_REQ = 6, /**< sender asks to cancel a message (sequenced) */
    QUAY_PKT_CANCEL_REP = 7, /**< receiver's cancel verdict */
    QUAY_PKT_FIN = 8,        /**< RDMA rendezvous: the data has moved */
    QUAY_PKT_RTR = 9,        /**< receiver-initiated: request to receive, with
                                  a key; also revoke / cancel (sequenced) */
    QUAY_PKT_SC = 10,        /**< receiver-initiated: send complete, the data
                                  is in the RTR's buffer (sequenced) */
    QUAY_PKT_ENA_ANY = 11,   /**< arbitration: a wildcard pattern announced
                                  to a sender (sequenced) */
    QUAY_PKT_ANY_FLAG = 12,  /**< arbitration: a sender's interest, with its
                                  envelope (sequenced) */
    QUAY_PKT_RTR_ANY = 13,   /**< arbitration: the wildcard receive is
                                  claimed for the flag's send (sequenced) */
    /* 14 is retired (UNA_ANY: a sender declining a claim; a claim is a
     * match now): a packet of type 14 is malformed. */
    QUAY_PKT_DISABLE_ANY = 15 /**< arbitration: a flag declined, or an
                                  announcement withdrawn (sequenced) */
} quay_pkt_type;

/** Name of a wire packet type ("EAGER", "RTS", ...), "?" if unknown. */
QUAY_API const char *quay_pkt_name(int type);

/** Engine counters (for tests, leak checks and benchmarks). */
typedef struct quay_stats {
    uint64_t pkts_in;          /**< packets accepted */
    uint64_t pkts_out;         /**< SEND actions emitted */
    uint64_t pkts_rejected;    /**< packets rejected (EPROTO / ESTATE) */
    uint64_t pkts_deferred;    /**< packets answered with QUAY_EAGAIN */
    uint64_t bytes_unexpected; /**< payload bytes held now */
    uint64_t bytes_unexpected_peak;
    uint32_t reqs_in_use;      /**< requests allocated (incl. completed, unfreed) */
    uint32_t umsgs_in_use;     /**< unexpected / held / taken descriptors */
    uint32_t outs_in_use;      /**< SEND actions not yet op_done */
    uint32_t held_out_of_order;/**< packets held waiting for their turn */
    uint32_t comms_in_use;
    uint32_t ctrl_queued;
    /* flow control (QUAY_FLOW_ACKNACK) */
    uint64_t retransmits;      /**< packets sent again (timeout or NACK) */
    uint64_t dups_dropped;     /**< duplicates suppressed */
    uint64_t out_of_order_dropped; /**< discarded: ahead of their turn */
    uint64_t nacks_sent;       /**< packets refused for lack of buffers */
    uint64_t gap_nacks;        /**< NACKs for a gap (fast retransmit) */
    uint64_t pings;            /**< keepalive pings to silent peers */
    uint64_t acks_only;        /**< ACK-only packets emitted */
    uint64_t bad_checksum;     /**< packets dropped for a CRC mismatch */
    uint64_t credit_loans;     /**< QUAY_FLOW_CREDIT: credits lent to a
                                    blocked peer beyond its share */
    uint32_t peers_failed;
    /* registered memory and RDMA rendezvous */
    uint32_t regions_in_use;   /**< registered regions (user and internal) */
    uint32_t ctrl_reserved;    /**< control slots promised to FINs */
    uint64_t rndv_get;         /**< rendezvous receives read by RDMA_GET */
    uint64_t rndv_put;         /**< rendezvous receives written by RDMA_PUT */
    uint64_t rndv_copy;        /**< rendezvous receives carried by DATA packets */
    /* receiver-initiated (quay_config.rtr) */
    uint64_t rtr_sent;         /**< receives delegated (RTR emitted) */
    uint64_t rtr_used;         /**< sends that wrote into an RTR (sender side) */
    uint64_t rtr_dead;         /**< RTRs an envelope made unusable (sender side) */
    uint64_t rtr_revoked;      /**< delegated receives matched by an envelope */
    /* ANY_SOURCE arbitration (quay_config.rtr_any) */
    uint64_t any_announced;    /**< ENA_ANY emitted (receiver side) */
    uint64_t any_reused;       /**< wildcard receives served by a standing
                                    announcement (no ENA_ANY needed) */
    uint64_t any_claimed;      /**< RTR_ANY emitted: a flag won a receive */
    uint64_t any_declined;     /**< flags answered DISABLE_ANY */
    uint64_t any_evicted;      /**< patterns evicted (DISABLE_ANY to holders) */
    uint64_t any_plain;        /**< wildcard receives not arbitrated (no slot,
                                    a peer's table full, or a pending
                                    undelegated receive) */
    uint64_t any_flags;        /**< interest flags raised (sender side) */
    uint64_t coll_started;     /**< collective schedules started */
    uint64_t coll_failed;      /**< ... that completed with an error */
    uint64_t coll_bypassed;    /**< broadcasts and reduces started by their
                                    data's arrival, before the local call
                                    (application bypass) */
    /* hostile peers (docs/threats.md) */
    uint64_t forged_keys;      /**< memory keys refused as forged */
    uint32_t peers_hostile;    /**< peers failed past forged_key_limit or
                                    malformed_limit (also in peers_failed) */
} quay_stats;

/** The layout of quay_stats this header declares; each version only
 *  appends counters (2: forged_keys, peers_hostile). */
#define QUAY_STATS_VERSION 2

/** Copy engine e's counters into *st, as far as quay_stats' layout
 *  `version` goes (bytes past it are not touched): 0, or QUAY_EINVAL
 *  (NULL), QUAY_EVERSION (a layout this library does not know). Call it
 *  through quay_engine_stats, which passes the layout this header
 *  declares. */
QUAY_API int quay_engine_stats_versioned(const quay_engine *e, int version, quay_stats *st);
QUAY_API void quay_engine_stats(const quay_engine *e, quay_stats *st);
#define quay_engine_stats(e, st) ((void)quay_engine_stats_versioned((e), QUAY_STATS_VERSION, (st)))

#ifdef __cplusplus
}
#endif

#endif /* QUAY_TRACE_H */
