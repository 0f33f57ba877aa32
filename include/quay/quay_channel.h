/*
 * quay_channel.h — channel contexts under flow control: quiesce, stability, save,
 * restore and reset (PM's context switch).
 * Part of quay.h, which includes it; include <quay/quay.h>.
 */
#include <quay/quay.h>

#ifndef QUAY_CHANNEL_H
#define QUAY_CHANNEL_H

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A channel (cfg.channels) is one context of an engine: its own sequence
 * numbers, flow control, communicators and pools. quay_channel names a
 * channel as the object that is quiesced, saved, restored and reset; the
 * calls that post work on it take its engine handle (quay_channel_engine,
 * the same as quay_engine_channel). The engine-handle forms below
 * (quay_channel_quiesce(quay_engine *), quay_engine_save, ...) stay as
 * they are: given a channel's engine handle they act on that channel.
 */

/** A channel of an engine: opaque, valid as long as its engine. */
typedef struct quay_channel quay_channel;

/** Channel `ch` (0 <= ch < cfg.channels) of the engine `e` belongs to
 *  (any of its handles); NULL if `e` is NULL or `ch` out of range. */
QUAY_API quay_channel *quay_channel_get(quay_engine *e, uint32_t ch);

/** The handle that posts calls on channel `c` (communicators, sends,
 *  receives, stats, trace): quay_engine_channel(e, ch). NULL for NULL. */
QUAY_API quay_engine *quay_channel_engine(quay_channel *c);

/** Channel `c`'s index (what quay_channel_get took); UINT32_MAX for
 *  NULL. */
QUAY_API uint32_t quay_channel_id(const quay_channel *c);

/** Save channel `c`'s context: quay_engine_save of its engine handle
 *  (same blob, same preconditions and codes; QUAY_EINVAL for NULL). */
QUAY_API int quay_channel_save(const quay_channel *c, void *buf, size_t cap, size_t *len);

/** Restore a saved context into channel `c`: quay_engine_restore of its
 *  engine handle (same preconditions and codes; QUAY_EINVAL for NULL). */
QUAY_API int quay_channel_restore(quay_channel *c, const void *blob, size_t len);

/*
 * Channel quiesce (flow control only), PM's context-switch steps C1-C4:
 * quiesce stops every new packet to other ranks (C1: they wait, built or
 * not, and nothing is lost); retransmissions, ACKs, NACKs, credit grants
 * and keepalive answers go on, so the channel drains (C2-C4). Poll
 * quay_channel_is_stable; once every rank is stable (C5, a synchronisation
 * outside quay) nothing of this engine's is in flight. resume (C8) lets
 * the queued packets go. Calls, arrivals and self traffic keep working
 * while quiesced. Then save the channel's context (C6), restore or start
 * another one in its place (C7) and resume (C8); see quay_engine_save.
 * With several channels each is quiesced on its own handle, so the C5
 * synchronisation can run over another channel of the same engines.
 */

/** Stop new packets to other ranks. QUAY_ESTATE without flow control. */
QUAY_API int quay_channel_quiesce(quay_engine *e);

/** Send again what quiesce held back. QUAY_ESTATE without flow control. */
QUAY_API int quay_channel_resume(quay_engine *e);

/**
 * 1 when quiesced and stable: for every live peer, every packet sent is
 * acknowledged, no ACK, NACK, grant or ping answer is owed, and the
 * adapter holds no transmission (every SEND op_done'd); 0 otherwise (also
 * when not quiesced); QUAY_ESTATE without flow control. PM also counts a
 * NACKed message as settled ("known to need retransmission"); quay does
 * not, because on a network that loses and duplicates, a copy of it or of
 * a later one may still be on the wire. So a receiver that keeps refusing
 * (full) keeps its senders unstable until it takes the message.
 */
QUAY_API int quay_channel_is_stable(const quay_engine *e);

/*
 * Context switch, C6-C7 [PM §3.4]. A channel's *context* is everything it
 * holds for the program: communicators, requests (posted, in transfer,
 * completed but not freed), unexpected and held messages with their
 * payload copies, packets built but not yet sent, flow-control and
 * sequence state per peer, statistics. quay_engine_save writes it to a
 * versioned, self-describing byte blob (docs/flowctl.md has the layout);
 * quay_engine_restore puts a saved context back in place of the running
 * one, after which the channel continues exactly where the saved one
 * stopped: the same request, communicator and message handles (they are
 * slots of the channel's pools, restored at the same places), the same
 * sequence numbers and request ids on the wire. Every rank of a job
 * switches together (PM's C5), so peers find each other's state as they
 * left it.
 *
 * Each context has a 32-bit key that seeds the CRC of every frame its
 * channel sends and checks, so a delayed frame of one context can never be
 * taken by another (it fails the check and counts as bad_checksum).
 * Engines start with key 0; quay_channel_reset starts a new, empty context
 * with the key given (every rank of the job must use the same), and a
 * restored context brings its own back.
 *
 * Buffers and user pointers inside requests are saved as addresses: the
 * blob is for the same process (or one whose memory was restored at the
 * same addresses). Everything else in it is checked before anything is
 * changed: CRC32C over the whole blob, the version, that it was saved by a
 * channel of the same rank, world size, channel id and configuration, and
 * every index, count, length, state and list in it.
 */

/**
 * Save the context of channel `e`. It must be quiesced and stable
 * (quay_channel_is_stable) with no self traffic waiting (pull actions
 * until there are none). `*len` receives the blob's size; if `buf` is NULL
 * or `cap` is smaller, nothing is written and QUAY_ENOBUFS is returned.
 * Returns 0, QUAY_EINVAL, QUAY_ESTATE (no flow control), QUAY_EBUSY (not
 * stable; or a collective is under way: a schedule running, or one that
 * arrivals started (application bypass) not yet called, since schedules
 * are not part of a blob), QUAY_ENOBUFS, or the engine's fatal code. The
 * channel is unchanged: resuming it continues this context.
 */
QUAY_API int quay_engine_save(const quay_engine *e, void *buf, size_t cap,
                              size_t *len);

/**
 * Replace the running context of channel `e` by the saved one in `blob`.
 * The channel must be quiesced and stable: its running context is
 * discarded (save it first). The restored context is quiesced; resume it
 * once every rank has restored (C8). Timers restart from the engine's
 * current time. Returns 0; QUAY_EINVAL; QUAY_ESTATE (no flow control);
 * QUAY_EBUSY (not stable); QUAY_EVERSION; QUAY_ECORRUPT or QUAY_EFOREIGN
 * (nothing changed); QUAY_ENOMEM when payload copies cannot be allocated,
 * in which case the channel is left with an empty context (key 0) and the
 * blob can be restored again later.
 */
QUAY_API int quay_engine_restore(quay_engine *e, const void *blob, size_t len);

/**
 * Discard the running context of channel `e` and start an empty one with
 * context key `key` (as a fresh engine's channel, but quiesced: resume it
 * once every rank has reset). Same preconditions as quay_engine_restore.
 */
QUAY_API int quay_channel_reset(quay_engine *e, uint32_t key);

#ifdef __cplusplus
}
#endif

#endif /* QUAY_CHANNEL_H */
