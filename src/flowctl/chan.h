/*
 * chan.h — the flow-control channel as the engine uses it (the declared
 * hooks between src/engine and src/flowctl). Under QUAY_FLOW_ACKNACK every
 * packet to another rank travels in a channel frame:
 *
 *   0  u8  0xC1 (frame version)        8  u32 ack: every seq < ack arrived
 *   1  u8  kind: 1 DATA, 2 ACK-only   12  u32 credit mode: the credit limit
 *   2  u16 flags: bit 0 NACK (the             (send seqs before it); else
 *          ack field is also refused),        the NACKed seq (= ack) or 0
 *          bit 1 CREDIT, bit 2 BLOCKED 16  u32 CRC32C of the whole packet,
 *          bit 3 PING (answer me)
 *   4  u32 seq (DATA)                          computed with this field 0
 *
 * followed, for DATA, by the engine packet. The sender keeps each packet
 * (its descriptor: header and user-memory slice) until it is acknowledged,
 * retransmits on NACK or timeout; the receiver hands packets to the engine
 * strictly in sequence and NACKs one the engine refuses (QUAY_EAGAIN: no
 * buffer), per [PM §3.3] as implemented in ackn.c.
 */
#ifndef QUAY_FLOWCTL_CHAN_H
#define QUAY_FLOWCTL_CHAN_H

#include "engine/internal.h"

#define CHAN_VERSION 0xC1
#define CHAN_DATA 1
#define CHAN_ACK 2
#define CHAN_F_NACK 0x1u
#define CHAN_F_CREDIT 0x2u  /* field 12 is the credit limit (QUAY_FLOW_CREDIT) */
#define CHAN_F_BLOCKED 0x4u /* the sender is out of credit (credit mode) */
#define CHAN_F_PING 0x8u    /* answer this frame (keepalive probe) */
#define CHAN_F_CHAN_SHIFT 8  /* bits 8-10: the channel (quay_config.channels) */
#define CHAN_F_CHAN_MASK (0x7u << CHAN_F_CHAN_SHIFT)
#define CHAN_F_ALL (CHAN_F_NACK | CHAN_F_CREDIT | CHAN_F_BLOCKED | CHAN_F_PING | \
                    CHAN_F_CHAN_MASK)

/** The channel a frame claims to be for (b holds at least 4 bytes). */
static inline uint32_t chan_frame_channel(const uint8_t *b)
{
    return (wire_get16(b + 2) & CHAN_F_CHAN_MASK) >> CHAN_F_CHAN_SHIFT;
}

/** Set up per-peer channels (engine creation). */
void chan_init(quay_engine *e);
/** Queue a built packet for its peer (instead of handing it out). */
void chan_submit(quay_engine *e, qout *o);
/** Produce the next channel transmission: 1 with *a filled, else 0. */
int chan_pull(quay_engine *e, quay_action *a);
/** 1 if chan_pull may have something to send. */
int chan_has_work(const quay_engine *e);
/** chan_on_packet: the frame was taken by the channel itself (ACK-only,
 *  duplicate, out of order, refused and NACKed): success, but no engine
 *  packet came in. */
#define CHAN_CONSUMED LINK_CONSUMED

/** The link the engine reaches these through (link.h): both policies,
 *  ACK/NACK and credits, chosen by e->flow. */
extern const link_ops chan_link;

/** A framed packet arrived from `peer`: 0 (its engine packet was taken),
 *  CHAN_CONSUMED (with *content the engine's refusal of a sequenced
 *  frame's content, else 0), or a QUAY_E* code (the frame was refused and
 *  nothing changed). */
int chan_on_packet(quay_engine *e, int32_t peer, const uint8_t *b, size_t len, int *content);
/** The adapter finished one transmission of o. */
void chan_on_op_done(quay_engine *e, qout *o, int status);
/** Run timers; peers whose retry limit passed are failed. */
void chan_on_time(quay_engine *e);
/** Earliest retransmission deadline, QUAY_TIME_NONE if none. */
uint64_t chan_deadline(const quay_engine *e);
/** Abandon every packet of a failed peer. */
void chan_abandon(quay_engine *e, int32_t peer);
/** 1 if `ps` has something to say that needs no sequence number (ACK,
 *  NACK, grant, probe, ping answer): then the channel is not stable. */
int chan_peer_owes(const quay_engine *e, const peer_state *ps);

#endif /* QUAY_FLOWCTL_CHAN_H */
