/*
 * link.h — the link layer under the engine: the one door between the
 * engine (src/engine) and flow control (src/flowctl).
 *
 * With no flow control there is no link: a built packet goes straight
 * into the adapter's SEND action (out.c's hand_out is the pass-through).
 * With a flow-control policy, every packet to another rank goes down
 * through that policy's table, which the composition root (src/quay.c)
 * picks by quay_config.flow; the engine never names a flowctl function,
 * and the link reaches back up only through the engine calls declared
 * below (and the engine's allocator, qalloc / qfree, for its state).
 */
#ifndef QUAY_ENGINE_LINK_H
#define QUAY_ENGINE_LINK_H

#include <quay/quay.h>

#include <stddef.h>
#include <stdint.h>

struct qout;
struct quay_req;

/* Bytes reserved in front of every engine header for a link's frame
 * (used only with flow control). */
#define CHAN_FRAME_LEN 20

/** link_ops.on_frame: the frame was taken by the link itself (ACK-only,
 *  duplicate, out of order, refused and NACKed): success, but no engine
 *  packet came in. */
#define LINK_CONSUMED 1
/** link_ops.on_frame: the frame was damaged in transit (its checksum
 *  fails): refused, nothing changed, and not held against the peer, whose
 *  frame it may not even be (a noisy link is not a hostile peer). */
#define LINK_DAMAGED 2

typedef struct link_ops {
    const char *name;
    /** The implementation's own description (flowctl: its policy), for
     *  its functions; the engine never reads it. */
    const void *impl;
    /** Check the link's knobs in the engine's copy of the config, filling
     *  in their defaults, after the engine's own check and before any
     *  channel exists: 0 or QUAY_EINVAL. */
    int (*config_check)(quay_config *c);
    /** 1: every message of a peer that the engine keeps (unexpected with a
     *  payload, held early) holds one of that peer's credits, counted in
     *  peer_state.credit_held, which the link grants from. 0: the engine
     *  counts nothing. */
    uint8_t holds_credit;
    /** Make the link's state (per peer, with qalloc) for a new channel and
     *  hang it on e->link_state, which the engine never reads: 0 or
     *  QUAY_ENOMEM. */
    int (*init)(quay_engine *e);
    /** Set the state up again for a new context (nothing queued). */
    void (*reset)(quay_engine *e);
    /** Free what init made (e->link_state may be NULL: init never ran). */
    void (*fini)(quay_engine *e);
    /** Queue a built packet for its peer; the link sends it in turn. */
    void (*submit)(quay_engine *e, struct qout *o);
    /** The link's next transmission: 1 with *a filled, else 0. */
    int (*pull)(quay_engine *e, quay_action *a);
    /** 1 if pull may have something to send. */
    int (*has_work)(const quay_engine *e);
    /** A framed packet from `peer`: 0 (its engine packet was taken),
     *  LINK_CONSUMED (*content: the engine's refusal of a sequenced
     *  frame's content, else 0), LINK_DAMAGED, or a QUAY_E* code (the
     *  intact frame was refused and nothing changed). */
    int (*on_frame)(quay_engine *e, int32_t peer, const uint8_t *b, size_t len, int *content);
    /** The adapter finished one transmission of o (o->framed). */
    void (*on_op_done)(quay_engine *e, struct qout *o, int status);
    /** Run timers; peers whose retry limit passed are failed. */
    void (*on_time)(quay_engine *e);
    /** Earliest timer, QUAY_TIME_NONE if none. */
    uint64_t (*deadline)(const quay_engine *e);
    /** Abandon everything queued for a failed peer. */
    void (*abandon)(quay_engine *e, int32_t peer);
    /** The channel a received frame names (b holds at least 4 bytes). */
    uint32_t (*frame_channel)(const uint8_t *b);
    /** The engine packet inside a received frame, for tracing: 1 with
     *  *pkt / *pkt_len set, 0 if the frame carries none. */
    int (*frame_content)(const uint8_t *b, size_t len, const uint8_t **pkt, size_t *pkt_len);
} link_ops;

/* ---- upward: the engine calls a link makes ---------------------------------- */

/** Deliver the engine packet b[0..len) from `peer`: its payload follows
 *  the header in b, or is at `payload` when non-NULL (loopback). 0 or a
 *  QUAY_E* refusal (QUAY_EAGAIN: no room now, offer it again). */
int engine_recv(quay_engine *e, int32_t peer, const uint8_t *b, size_t len,
                const uint8_t *payload);
/** Declare `peer` failed: abandon its packets, complete every request
 *  that depends on it with QUAY_EPEER; other peers are untouched. */
void engine_peer_failed(quay_engine *e, int32_t peer);
/** A free packet descriptor (the caller checked out_avail). */
struct qout *out_alloc(quay_engine *e);
/** The SEND action carrying o's frame, header and payload. */
void out_fill_send(quay_engine *e, struct qout *o, quay_action *a);
/** Release a descriptor whose packet is done (status 0) or abandoned
 *  (status < 0): the owning request makes progress. */
void out_release(quay_engine *e, struct qout *o, int status);
/** The peer whose failure would fail request r (its specific source, its
 *  destination, its transfer partner), or -1 (ANY_SOURCE, self, done). */
int32_t req_waits_on(const quay_engine *e, const struct quay_req *r);

#endif /* QUAY_ENGINE_LINK_H */
