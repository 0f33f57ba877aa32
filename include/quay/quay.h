/*
 * quay.h — the quay engine: a sans-I/O protocol engine for MPI-class
 * message passing.
 *
 * One engine serves one rank. It never performs I/O, never reads a clock,
 * never starts a thread and keeps no global state; two engines in one
 * process never interfere. The embedder (adapter) feeds it three kinds of
 * input and pulls one kind of output:
 *
 *   calls     quay_isend / quay_irecv / quay_iprobe / quay_improbe /
 *             quay_imrecv / quay_cancel / quay_comm_create ...
 *   arrivals  quay_on_packet  (bytes from peer P)
 *             quay_on_op_done (an action the adapter was given is finished)
 *   time      quay_on_time    (now, in ns; quay_next_deadline says when)
 *   output    quay_next_action: SEND iovecs to a peer, RDMA put/get,
 *             NOTIFY, request COMPLETE.
 *
 * The pump loop an adapter writes:
 *
 *   for (;;) {
 *       while (quay_next_action(e, &a) == 1) execute(&a);   // may call on_op_done later
 *       wait_for_io_or(quay_next_deadline(e));
 *       for each received packet p from peer P:
 *           if (quay_on_packet(e, P, p, n) == QUAY_EAGAIN) keep p, offer it again later;
 *       quay_on_time(e, now_ns());
 *   }
 *
 * Re-entry: no quay function calls back into the embedder except the
 * allocator hooks and the trace hook; neither may call into the engine.
 * An engine is not thread-safe: the embedder serialises calls on it.
 *
 * Every function that can fail returns int: 0 (QUAY_OK) or a negative
 * QUAY_E* code. Codes at or below QUAY_ERR_FATAL mean the engine is no
 * longer usable. No function aborts on bad input.
 */
#ifndef QUAY_H
#define QUAY_H

#include <stddef.h>
#include <stdint.h>

#include <quay/quay_version.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(QUAY_BUILDING) && (defined(__GNUC__) || defined(__clang__))
#define QUAY_API __attribute__((visibility("default")))
#else
#define QUAY_API
#endif

/* ------------------------------------------------------------------ */
/* Error codes                                                          */
/* ------------------------------------------------------------------ */

#define QUAY_OK 0
/** An argument is invalid (NULL handle, negative length, bad mode ...). */
#define QUAY_EINVAL (-201)
/** A rank is outside the communicator. */
#define QUAY_ERANK (-202)
/** A tag is negative (and not QUAY_ANY_TAG where a wildcard is allowed). */
#define QUAY_ETAG (-203)
/** Unknown or invalid communicator / context id. */
#define QUAY_ECOMM (-204)
/** A bounded resource is exhausted (request pool, reorder or unexpected
 *  budget, control queue). Nothing was done; retry after the engine made
 *  progress (pull actions, complete ops, post receives). For quay_on_packet:
 *  the packet was NOT consumed; offer it again later. */
#define QUAY_EAGAIN (-205)
/** Receive status: the message was longer than the buffer; the first
 *  `cap` bytes were delivered. */
#define QUAY_ETRUNCATE (-206)
/** Request status: the request was cancelled. */
#define QUAY_ECANCELLED (-207)
/** Request status: the peer failed (or its transport reported failure). */
#define QUAY_EPEER (-208)
/** Request status: a ready-mode send found no posted receive. Reported to
 *  the sender's request and to the receive that later matches it. */
#define QUAY_ENOTPOSTED (-209)
/** quay_on_packet: malformed packet (length, type, version, field range).
 *  The packet was dropped; the engine is unaffected. */
#define QUAY_EPROTO (-210)
/** quay_on_packet / quay_on_op_done: well-formed input that is not valid
 *  in the current state (unknown or stale request id, duplicate sequence
 *  number, out-of-window fragment, sender rank mismatch). Dropped. */
#define QUAY_ESTATE (-211)
/** Buffered send: the attached buffer has no room for this message. */
#define QUAY_ENOBUFS (-212)
/** The object is still in use (detach with buffered sends in flight,
 *  communicator free with requests pending). Retry after progress. */
#define QUAY_EBUSY (-213)
/** Unsupported config or blob version. */
#define QUAY_EVERSION (-214)
/** Requested feature or mode is not supported by this engine / transport. */
#define QUAY_ENOTSUP (-215)
/** quay_engine_restore: the blob is damaged (checksum, truncation, or a
 *  structure that quay_engine_save cannot have written). Nothing changed. */
#define QUAY_ECORRUPT (-216)
/** quay_engine_restore: the blob is intact but was saved by another kind
 *  of engine (another rank, world size, channel or configuration). */
#define QUAY_EFOREIGN (-217)

/** Codes at or below this are fatal: the engine must be freed. */
#define QUAY_ERR_FATAL (-500)
/** The allocator hook returned NULL during creation or a mandatory step. */
#define QUAY_ENOMEM (-501)
/** An internal invariant failed (e.g. the fast matcher disagreed with the
 *  oracle under QUAY_CFG_CHECK_ORACLE). Always a quay bug. */
#define QUAY_EINTERNAL (-502)

/** Human-readable name of a QUAY_E* code (never NULL). */
QUAY_API const char *quay_strerror(int code);
/** 1 if `code` is fatal (engine unusable), else 0. */
QUAY_API int quay_err_is_fatal(int code);

/* ------------------------------------------------------------------ */
/* Constants                                                            */
/* ------------------------------------------------------------------ */

/** Receive from any source. */
#define QUAY_ANY_SOURCE (-1)
/** Receive any tag. */
#define QUAY_ANY_TAG (-1)
/** The null process: sends and receives complete at once, move nothing. */
#define QUAY_PROC_NULL (-2)
/** Largest valid tag. Tags are 0..QUAY_TAG_MAX. */
#define QUAY_TAG_MAX INT32_MAX
/** quay_next_deadline: no deadline pending. */
#define QUAY_TIME_NONE UINT64_MAX
/** Bytes of bookkeeping a buffered send takes in the attached buffer, in
 *  addition to its payload (as MPI_BSEND_OVERHEAD). */
#define QUAY_BSEND_OVERHEAD 64

/* ------------------------------------------------------------------ */
/* Handles                                                              */
/* ------------------------------------------------------------------ */

typedef struct quay_engine quay_engine; /**< one rank's protocol engine */
typedef struct quay_comm quay_comm;     /**< communicator: context + rank map */
typedef struct quay_req quay_req;       /**< a send or receive request */
typedef struct quay_msg quay_msg;       /**< a message taken by quay_improbe */

/** quay_improbe on QUAY_PROC_NULL yields this message handle; quay_imrecv
 *  on it completes at once as a receive from QUAY_PROC_NULL. */
#define QUAY_MSG_NO_PROC ((quay_msg *)(uintptr_t)1)

#ifdef __cplusplus
}
#endif

#include <quay/quay_config.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Engine                                                               */
/* ------------------------------------------------------------------ */

/**
 * Create an engine. `cfg` is copied; it may be freed afterwards. All pools
 * are allocated here through cfg->alloc, so a successful create means the
 * engine will not allocate on the small-message hot path.
 * Returns 0, QUAY_EINVAL (inconsistent config), QUAY_EVERSION, QUAY_ENOMEM.
 */
QUAY_API int quay_engine_new(const quay_config *cfg, quay_engine **pengine);

/** Free an engine and everything it holds. Outstanding requests, messages
 *  and communicators are released; pending actions are forgotten. NULL ok. */
QUAY_API void quay_engine_free(quay_engine *e);

/** This engine's world rank / world size. */
QUAY_API int32_t quay_engine_rank(const quay_engine *e);
QUAY_API int32_t quay_engine_size(const quay_engine *e);

/** The largest SEND action this engine emits, in bytes (header and
 *  payload together): quay_config.max_packet as quay_engine_new settled
 *  it (0 there means QUAY_MAX_HEADER + max(eager_max, frag_size)). Size a
 *  transport's packet buffers from it. 0 for NULL. */
QUAY_API size_t quay_engine_max_packet(const quay_engine *e);

/**
 * Handle of channel `ch` (0 <= ch < cfg.channels) of engine `e`; channel 0
 * is `e` itself. NULL if out of range. A channel handle is a quay_engine *
 * for every call that concerns the program: communicators, sends,
 * receives, buffers, quiesce / stable / save / restore / reset, stats and
 * trace act on that channel only (a communicator belongs to the channel
 * it was created on and is used with that channel's handle). The
 * transport-facing calls (quay_on_packet, quay_on_op_done, quay_on_time,
 * quay_next_deadline, quay_has_actions, quay_next_action) act on the
 * whole engine, whichever handle they are given. quay_engine_free frees
 * the whole engine when given channel 0 and ignores other handles.
 */
QUAY_API quay_engine *quay_engine_channel(quay_engine *e, uint32_t ch);

/* ------------------------------------------------------------------ */
/* Communicators                                                        */
/* ------------------------------------------------------------------ */

/**
 * Create a communicator with an agreed `context_id` (the same on every
 * member; unique among this engine's live communicators) and a map
 * comm rank -> world rank. `world_ranks` may be NULL for the identity map
 * (then nranks must equal the world size). This engine must be a member.
 * The map is copied. Messages that arrived for `context_id` before this
 * call are kept and become matchable now (in arrival order).
 * Context ids are below 2^31: collectives use context_id | 2^31 (the
 * communicator's collective twin, created at its first collective).
 * Returns 0, QUAY_EINVAL (also: a world rank listed twice), QUAY_ERANK
 * (not a member / rank out of world), QUAY_ECOMM (context id in use, or
 * >= 2^31), QUAY_EAGAIN (max_comms reached, or the allocator refused the
 * map).
 */
QUAY_API int quay_comm_create(quay_engine *e, uint32_t context_id,
                              int32_t nranks, const int32_t *world_ranks,
                              quay_comm **pcomm);

/** Free a communicator. QUAY_EBUSY while requests on it are pending or
 *  unexpected messages for it are held (nothing is freed then). */
QUAY_API int quay_comm_free(quay_engine *e, quay_comm *c);

/** This engine's rank in `c`, the size of `c`, its context id. */
QUAY_API int32_t quay_comm_rank(const quay_comm *c);
QUAY_API int32_t quay_comm_size(const quay_comm *c);
QUAY_API uint32_t quay_comm_context(const quay_comm *c);
/** World rank of comm rank `r`, or -1 if out of range. */
QUAY_API int32_t quay_comm_world_rank(const quay_comm *c, int32_t r);

/* ------------------------------------------------------------------ */
/* Point-to-point                                                       */
/* ------------------------------------------------------------------ */

/** Send modes (MPI's four). */
typedef enum quay_send_mode {
    QUAY_SEND_STANDARD = 0, /**< eager below eager_max, else rendezvous */
    QUAY_SEND_SYNC = 1,     /**< completes only after the receiver matched */
    QUAY_SEND_READY = 2,    /**< receiver must have posted: else QUAY_ENOTPOSTED
                                 at both ends */
    QUAY_SEND_BUFFERED = 3  /**< copied to the attached buffer; completes
                                 locally at once; an internal request, whose
                                 id appears in trace events, carries the
                                 copy */
} quay_send_mode;

/** Completion status of a request. */
typedef struct quay_status {
    /** Receive: comm rank of the sender (QUAY_PROC_NULL for the null
     *  process). Send: the destination. */
    int32_t source;
    /** Receive: tag of the message (QUAY_ANY_TAG for PROC_NULL). */
    int32_t tag;
    /** 0, or QUAY_ETRUNCATE, QUAY_ECANCELLED, QUAY_EPEER, QUAY_ENOTPOSTED. */
    int32_t error;
    /** 1 if the request was cancelled (then error is QUAY_ECANCELLED). */
    int32_t cancelled;
    /** Receive: bytes delivered into the buffer. Send: the message length
     *  (also when the receiver truncated it). */
    uint64_t count;
} quay_status;

/**
 * Post a send of `len` bytes at `buf` to comm rank `dst` (or
 * QUAY_PROC_NULL) with `tag` >= 0. Zero-copy: the engine reads `buf` until
 * the request completes (BUFFERED: until this call returns). Returns 0 and
 * a request in *preq; QUAY_EINVAL, QUAY_ERANK, QUAY_ETAG, QUAY_EAGAIN
 * (request pool exhausted), QUAY_ENOBUFS (buffered: no room).
 */
QUAY_API int quay_isend(quay_engine *e, quay_comm *c, const void *buf,
                        size_t len, int32_t dst, int32_t tag,
                        quay_send_mode mode, quay_req **preq);

/** Largest payload quay_send_inline takes (bytes). */
#define QUAY_INLINE_MAX 64
/** Largest coalesced packet of quay_send_inline messages (bytes; further
 *  capped by max_packet). */
#define QUAY_TRAIN_MAX 2048

/**
 * Send a small standard-mode message by copy, with no request: the engine
 * copies the `len` bytes at `buf` behind the packet's header now, so when
 * this returns 0 the send is over — the buffer may be reused and there is
 * nothing to test or free. The packet leaves as a SEND action with one
 * iovec, in send order with the sends posted before and after it. The
 * cheapest way to send a small message (the MPI binding's MPI_Send of up to
 * QUAY_INLINE_MAX bytes). A send to QUAY_PROC_NULL returns 0 at once.
 *
 * Returns 0; QUAY_EBUSY when the message cannot be taken this way now —
 * longer than QUAY_INLINE_MAX or eager_max, to this rank itself, earlier
 * sends of this engine still waiting to leave, no free descriptor
 * (max_out), or an engine with flow control, receiver-initiated transfers,
 * ANY_SOURCE arbitration or QUAY_CAP_MULTI_SEND: post it with quay_isend,
 * which takes any message (and keeps the order); QUAY_EPEER (the peer was
 * declared failed), QUAY_EINVAL, QUAY_ERANK, QUAY_ETAG, or the engine's
 * fatal code. Like MPI's standard send once it has returned, the sender
 * hears nothing more about the message (a peer failing later included).
 *
 * Coalescing: a message to the same peer, on the same communicator, as
 * the last inline packet still waiting for quay_next_action is appended to
 * that packet (a "train": the later messages as 8-byte pieces of tag and
 * length behind the first message's envelope, docs/wire.md; up to
 * QUAY_TRAIN_MAX bytes and max_packet), so a burst of small sends costs
 * one SEND action, one transport send and one op_done. The train's second
 * and later messages are its SEND's iov[1]. Nothing waits to fill a train: a pull takes what
 * is there. The receiver takes a train as that many packets in a row.
 * QUAY_CFG_NO_COALESCE turns this off.
 */
QUAY_API int quay_send_inline(quay_engine *e, quay_comm *c, const void *buf,
                              size_t len, int32_t dst, int32_t tag);

/**
 * Post a receive of at most `cap` bytes into `buf` from comm rank `src`
 * (or QUAY_ANY_SOURCE / QUAY_PROC_NULL) with `tag` (or QUAY_ANY_TAG).
 * MPI order: receives that match the same message are satisfied in post
 * order; messages from one sender that match the same receive are received
 * in send order. The engine never writes past buf+cap. Returns 0,
 * QUAY_EINVAL, QUAY_ERANK, QUAY_ETAG, QUAY_EAGAIN (request pool exhausted,
 * or the matched message owes its sender an ACK and the control queue is
 * full: retry after pulling actions).
 */
QUAY_API int quay_irecv(quay_engine *e, quay_comm *c, void *buf, size_t cap,
                        int32_t src, int32_t tag, quay_req **preq);

/**
 * Receive a message that has already arrived, by copy, with no request:
 * the receive quay_irecv(e, c, buf, cap, src, tag) would post now, when
 * that receive would match at once an eager message kept here (one that
 * arrived before any receive took it). The payload (at most `cap` bytes)
 * is copied into `buf` and the message is gone when this returns 0; *st
 * (may be NULL) gets what a request's status would: source, tag, count,
 * and error 0, QUAY_ETRUNCATE (longer than cap: cap bytes delivered) or
 * QUAY_ENOTPOSTED (a ready-mode send that arrived before its receive). A
 * synchronous sender is acknowledged as by the receive. A receive from
 * QUAY_PROC_NULL returns 0 at once with the null status. Matching is
 * quay_irecv's: the oldest message that matches (src, tag), wildcards
 * included, in the same MPI order. Nothing is completed and no COMPLETE
 * action is emitted (there is no request). The cheapest way to receive a
 * message that came first (the MPI binding's MPI_Recv tries it first).
 *
 * Returns 0; QUAY_EBUSY when nothing can be taken this way now — no
 * matching message is here, or the one that would match needs a request
 * (a rendezvous transfer; a synchronous one whose acknowledgement finds
 * the control queue full): post it with quay_irecv, which matches exactly
 * the message this call would have; QUAY_EINVAL, QUAY_ERANK, QUAY_ETAG,
 * or the engine's fatal code.
 */
QUAY_API int quay_recv_inline(quay_engine *e, quay_comm *c, void *buf, size_t cap,
                              int32_t src, int32_t tag, quay_status *st);

/**
 * Persistent requests (MPI_Send_init, MPI_Recv_init, MPI_Start): a request
 * made once with its arguments and started any number of times; each
 * start is the quay_isend / quay_irecv of those arguments, without a
 * request's allocation and release per message. The arguments are checked
 * here as quay_isend / quay_irecv check them (QUAY_EINVAL, QUAY_ERANK,
 * QUAY_ETAG; QUAY_EAGAIN: request pool exhausted); `buf` is read (send) or
 * written (receive) while the request is active.
 *
 * A new persistent request is inactive: quay_req_test answers 1 with an
 * empty status (source QUAY_ANY_SOURCE, tag QUAY_ANY_TAG, count 0).
 * quay_start makes it active; once it completes it is inactive again,
 * quay_req_test answering 1 with that round's status, and may be started
 * again. quay_cancel affects only an active one. quay_req_free releases an
 * inactive one at once, an active one when it completes. It holds its
 * communicator (quay_comm_free: QUAY_EBUSY) until it is freed.
 */
QUAY_API int quay_send_init(quay_engine *e, quay_comm *c, const void *buf,
                            size_t len, int32_t dst, int32_t tag,
                            quay_send_mode mode, quay_req **preq);
QUAY_API int quay_recv_init(quay_engine *e, quay_comm *c, void *buf, size_t cap,
                            int32_t src, int32_t tag, quay_req **preq);

/**
 * Start an inactive persistent request. Returns 0; QUAY_EINVAL (not a
 * persistent request of `e`, or freed), QUAY_ESTATE (active: a round is
 * over only when the adapter is done with its packets too), QUAY_EAGAIN
 * (nothing done: a matched message owes its sender an ACK and the control
 * queue is full, or a buffered send finds no request for its carrier;
 * retry after pulling actions), QUAY_ENOBUFS (buffered: no room in the
 * attached buffer), or the engine's fatal code. A COMPLETE action of the
 * last round not yet pulled is withdrawn.
 */
QUAY_API int quay_start(quay_engine *e, quay_req *r);

/**
 * Start `count` persistent requests: quay_start of reqs[0], reqs[1], ...
 * in that order (so receives are posted, and match, in array order). Stops
 * at the first that quay_start refuses and returns its code: the ones
 * before it are started, it and the ones after are not. *pstarted (may be
 * NULL) is the number started. Receives of one pattern in a row cost less
 * than as many quay_start calls (the posted bin is found once). Returns 0,
 * QUAY_EINVAL (`reqs` NULL with count > 0), or quay_start's codes.
 */
QUAY_API int quay_startall(quay_engine *e, size_t count, quay_req *const reqs[],
                           size_t *pstarted);

/**
 * Non-blocking probe: *flag = 1 and *st filled if a message matching
 * (src, tag) is available to a receive posted now, else *flag = 0. `st`
 * may be NULL. st->count is the full message length.
 */
QUAY_API int quay_iprobe(quay_engine *e, quay_comm *c, int32_t src,
                         int32_t tag, int *flag, quay_status *st);

/**
 * Matched probe: as quay_iprobe, but a found message is removed from
 * matching (no other receive can take it) and returned in *pmsg, to be
 * received with quay_imrecv. *pmsg = NULL when nothing matched.
 */
QUAY_API int quay_improbe(quay_engine *e, quay_comm *c, int32_t src,
                          int32_t tag, quay_msg **pmsg, quay_status *st);

/** Receive a message taken by quay_improbe (consumes `msg`). QUAY_EAGAIN
 *  when the request pool is exhausted (msg stays valid); quay_improbe
 *  itself may answer QUAY_EAGAIN like quay_irecv. */
QUAY_API int quay_imrecv(quay_engine *e, quay_msg *msg, void *buf, size_t cap,
                         quay_req **preq);

/**
 * Request cancellation. A receive not yet matched completes with
 * status.cancelled = 1. A send is cancelled only if the receiver has not
 * matched it yet, which takes a protocol exchange: the send then completes
 * either cancelled or normally. A completed request is unaffected.
 * Returns 0 (the outcome is in the status), QUAY_EINVAL.
 */
QUAY_API int quay_cancel(quay_engine *e, quay_req *r);

/** 1 if `r` is complete (and *st filled when st != NULL), else 0. */
QUAY_API int quay_req_test(const quay_req *r, quay_status *st);

/** Release a request. If it is not complete yet, it is released when it
 *  completes (as MPI_Request_free), and no COMPLETE action is emitted. */
QUAY_API int quay_req_free(quay_engine *e, quay_req *r);

/** Attach an opaque pointer to a request (returned in COMPLETE actions). */
QUAY_API void quay_req_set_user(quay_req *r, void *user);
QUAY_API void *quay_req_user(const quay_req *r);
/** Stable id of a request (as it appears in trace events). */
QUAY_API uint32_t quay_req_id(const quay_req *r);

/** Attach the buffer used by buffered sends (one at a time). */
QUAY_API int quay_buffer_attach(quay_engine *e, void *buf, size_t len);
/** Detach it: QUAY_EBUSY while buffered messages still use it. */
QUAY_API int quay_buffer_detach(quay_engine *e, void **pbuf, size_t *plen);

/* ------------------------------------------------------------------ */
/* Arrivals, time, output                                               */
/* ------------------------------------------------------------------ */

/**
 * Feed a packet that arrived from world rank `peer`. The bytes are only
 * read during the call. Returns 0 (consumed), QUAY_EAGAIN (not consumed:
 * a bound was reached; offer it again after progress), QUAY_EPROTO or
 * QUAY_ESTATE (rejected and dropped; the engine and other peers are
 * unaffected), or a fatal code.
 */
QUAY_API int quay_on_packet(quay_engine *e, int32_t peer, const void *bytes,
                            size_t len);

/**
 * The adapter finished the action whose token is `token`: a SEND's iovecs
 * were handed to the wire and may be reused (status 0), or the transport
 * failed (status < 0, e.g. QUAY_EPEER). Returns 0 or QUAY_ESTATE for an
 * unknown or already finished token.
 */
QUAY_API int quay_on_op_done(quay_engine *e, uint64_t token, int status);

/**
 * Tell the engine the time (ns, any monotonic clock; a smaller value than
 * before is ignored) and run what is due: retransmissions, credit probes,
 * keepalive pings, peer-failure detection (flow control only; without it
 * the engine keeps no timers). Call it at least when quay_next_deadline
 * has passed; calling it on every pump iteration is cheap and keeps the
 * round-trip estimate accurate, since the engine knows the time only
 * through this call. Returns 0 or a fatal code.
 */
QUAY_API int quay_on_time(quay_engine *e, uint64_t now_ns);

/**
 * The transport learned that world rank `peer` is gone: its process
 * exited, its connection closed, or it sent bytes that are not frames.
 * Everything that depends on it completes with QUAY_EPEER (sends to it,
 * receives posted for it, transfers with it, collectives waiting on it),
 * later packets from it are rejected, and nothing else is touched: the
 * same as when flow control's retry limit passes. Idempotent. Returns 0,
 * QUAY_ERANK (out of range, or this rank), QUAY_EINVAL, or a fatal code.
 */
QUAY_API int quay_on_peer_failed(quay_engine *e, int32_t peer);

/** Earliest time the engine wants quay_on_time, or QUAY_TIME_NONE. */
QUAY_API uint64_t quay_next_deadline(const quay_engine *e);

/** Action kinds. */
typedef enum quay_action_kind {
    QUAY_ACT_SEND = 1,     /**< send iov[0..iovcnt) to `peer` as one packet */
    QUAY_ACT_RDMA_PUT = 2, /**< write `rdma.local` to peer's (key, offset) */
    QUAY_ACT_RDMA_GET = 3, /**< read peer's (key, offset) into `rdma.local` */
    QUAY_ACT_NOTIFY = 4,   /**< wake the host of `peer` (application bypass);
                                `peer` = this rank: the engine wants progress
                                soon (a bypassed transfer is under way) */
    QUAY_ACT_COMPLETE = 5, /**< request `req` completed */
    /** Host engine (coll_offload): hand `offload.desc` to this rank's NIC
     *  agent (quay_agent_post); the descriptor stays valid until the
     *  agent's completion is given back (quay_on_offload_done). */
    QUAY_ACT_OFFLOAD = 6,
    /** Agent engine: the offloaded collective `offload.cookie` is done
     *  with `offload.status`: give it to the host (quay_on_offload_done). */
    QUAY_ACT_OFFLOAD_DONE = 7,
    /** A remote atomic on peer's registered word (rdma.key, rdma.offset,
     *  8 bytes): run quay_mem_atomic on the target engine with
     *  atomic.op / operand / compare, write the old value (8 bytes, host
     *  order) to rdma.local, then give op_done(token, status). */
    QUAY_ACT_RDMA_ATOMIC = 8,
    /** SEND's iov to `peer` (token), and the same payload iov[1] to each
     *  multi[i].peer with its own header multi[i].hdr and token
     *  multi[i].token: one descriptor, many destinations. Every token gets
     *  its own op_done. Only with QUAY_CAP_MULTI_SEND. */
    QUAY_ACT_SEND_MULTI = 9
} quay_action_kind;

/** A slice of memory. */
typedef struct quay_iov {
    const void *base;
    size_t len;
} quay_iov;

#define QUAY_ACTION_IOV_MAX 2
/** Most extra destinations of one QUAY_ACT_SEND_MULTI. */
#define QUAY_MULTI_MAX 15

/**
 * One unit of output. SEND: iov[0] is the engine-owned header, valid until
 * quay_on_op_done(token) is called; iov[1] (if iovcnt == 2) is a slice of
 * user (or attached-buffer) memory, equally valid until then. The adapter
 * must call quay_on_op_done(token, status) exactly once for every SEND and
 * RDMA action, when its memory may be reused.
 */
typedef struct quay_action {
    int32_t kind;    /**< quay_action_kind */
    int32_t peer;    /**< world rank (SEND, RDMA, NOTIFY) */
    uint64_t token;  /**< SEND / RDMA: for quay_on_op_done */
    uint32_t iovcnt; /**< SEND: number of valid iov entries (1 or 2) */
    quay_iov iov[QUAY_ACTION_IOV_MAX];
    quay_req *req; /**< COMPLETE: the request */
    void *user;    /**< COMPLETE: quay_req_user(req) */
    /** RDMA_PUT / RDMA_GET (remote-memory protocols). */
    struct {
        uint64_t key;    /**< peer's memory key */
        uint64_t offset; /**< offset within the peer's registered region */
        void *local;     /**< local memory (source for PUT, target for GET) */
        uint64_t len;    /**< bytes */
    } rdma;
    /** SEND_MULTI: the further destinations (nmulti of them). */
    uint32_t nmulti;
    struct {
        int32_t peer;
        uint64_t token;
        quay_iov hdr;
    } multi[QUAY_MULTI_MAX];
    /** RDMA_ATOMIC: QUAY_ATOMIC_*, the operand, CAS's compare value. */
    struct {
        uint32_t op;
        uint64_t operand;
        uint64_t compare;
    } atomic;
    /** OFFLOAD / OFFLOAD_DONE (quay_coll.h). */
    struct {
        const struct quay_offload *desc; /**< OFFLOAD: what to run */
        uint64_t cookie;                 /**< which host request */
        int32_t status;                  /**< OFFLOAD_DONE: 0 or an error */
    } offload;
} quay_action;

/** 1 if quay_next_action may have an action now, 0 if it certainly has
 *  none (nothing queued, nothing waiting for a pull). Cheap; no effect.
 *  A fatal engine answers 1: quay_next_action then returns the code, so
 *  a loop that pulls only when this says so still learns of it. */
QUAY_API int quay_has_actions(const quay_engine *e);

/** 1 while work is in flight on any channel: a request in use (a complete
 *  one not yet freed included) or a packet the transport has not
 *  reported done (quay_on_op_done); else 0 (and for NULL). Cheap; no
 *  effect. An embedder with a progress thread of its own asks it to know
 *  whether progress between the program's calls can move anything. */
QUAY_API int quay_in_flight(const quay_engine *e);

/**
 * Pull the next action: 1 and *a filled, 0 when there is none now, or a
 * negative code (QUAY_EINVAL for NULL arguments, or the engine's sticky
 * fatal code). Fields not listed for the action's kind are unspecified.
 * Order: control replies and protocol packets first, COMPLETE last.
 */
QUAY_API int quay_next_action(quay_engine *e, quay_action *a);

/** The layout of quay_action this header declares. A layout's version is
 *  in its entry point's name: quay_next_action fills layout 1. When the
 *  layout changes, quay_next_action becomes a macro over
 *  quay_next_action_v2 and the library keeps the old entry point for
 *  programs built before, so the hot call never tests a version. */
#define QUAY_ACTION_VERSION 1

/** quay_next_action for a layout chosen at run time (bindings): fills *a
 *  as layout `version` declares it. QUAY_EVERSION for a layout this
 *  library does not know; otherwise as quay_next_action. */
QUAY_API int quay_next_action_versioned(quay_engine *e, int version, quay_action *a);

#ifdef __cplusplus
}
#endif

/* The rest of the contract, by concern (each also works included alone). */
#include <quay/quay_mem.h>
#include <quay/quay_channel.h>
#include <quay/quay_trace.h>

#endif /* QUAY_H */
