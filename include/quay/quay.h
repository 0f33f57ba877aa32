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

/* ------------------------------------------------------------------ */
/* Configuration                                                        */
/* ------------------------------------------------------------------ */

/** Allocator hooks. Every byte the engine holds comes from here. */
typedef struct quay_allocator {
    /** Return `size` bytes aligned for any type, or NULL. */
    void *(*alloc)(size_t size, void *ctx);
    /** Release memory from `alloc` (never called with NULL). */
    void (*release)(void *ptr, void *ctx);
    /** Passed to both hooks. */
    void *ctx;
} quay_allocator;

/** Engine flags (quay_config.flags). */
enum {
    /** Emit a QUAY_ACT_COMPLETE action for every completed request (in
     *  addition to quay_req_test). Default on. */
    QUAY_CFG_COMPLETE_ACTIONS = 1u << 0,
    /** Run the linear oracle matcher in lockstep with the fast matcher and
     *  fail with QUAY_EINTERNAL on any disagreement (tests, fuzzing). */
    QUAY_CFG_CHECK_ORACLE = 1u << 1,
    /** Use the linear oracle as the matcher (for comparison benchmarks). */
    QUAY_CFG_LINEAR_MATCH = 1u << 2,
    /** Never coalesce quay_send_inline messages into one packet (see
     *  quay_send_inline): one SEND action per message. */
    QUAY_CFG_NO_COALESCE = 1u << 3,
    /** quay_isend of a standard-mode message that quay_send_inline would
     *  take copies it the same way and returns a request already complete
     *  (MPI lets a standard send complete once its message is buffered):
     *  the buffer is free at once, the message may join a coalesced packet,
     *  and cancelling the request has no effect. Off: the request
     *  completes when the transport is done with the buffer. The MPI
     *  binding turns it on. */
    QUAY_CFG_SEND_COPY = 1u << 4,
};

/** The layout of quay_config this header declares. Each new version only
 *  appends fields; quay_engine_new takes every layout from
 *  QUAY_CONFIG_VERSION_MIN on and gives the fields an older program never
 *  knew their defaults, so a library with new knobs runs programs built
 *  before them (docs/design.md, "Engine API"). */
#define QUAY_CONFIG_VERSION 7
#define QUAY_CONFIG_VERSION_MIN 7

/**
 * Engine configuration. Fill with quay_config_default(), change what you
 * need, pass to quay_engine_new() (which copies it).
 */
typedef struct quay_config {
    /** QUAY_CONFIG_VERSION of the caller; set by quay_config_default. */
    uint32_t version;
    /** QUAY_CFG_* flags. Default: QUAY_CFG_COMPLETE_ACTIONS. */
    uint32_t flags;
    /** This engine's rank in the world, 0 <= rank < nranks. Default 0. */
    int32_t rank;
    /** Number of ranks in the world (peers are 0..nranks-1). Default 1. */
    int32_t nranks;
    /** Seed for internal hashing (keeps peers from aiming at one bin). */
    uint64_t seed;
    /** Largest payload sent eagerly (header + payload in one packet).
     *  Larger messages use rendezvous. Default 8192. */
    size_t eager_max;
    /** Rendezvous DATA fragment size. Default 65536. */
    size_t frag_size;
    /** Rendezvous fragments granted ahead of the data (1..64). With depth
     *  >= 2 the grant for fragment k+depth travels while fragment k's data
     *  does: one handshake per message, not per fragment. Default 8. */
    uint32_t pipeline_depth;
    /** Largest SEND action (header + payload) the transport can carry.
     *  Must be >= QUAY_MAX_HEADER + max(eager_max, frag_size).
     *  0 (default) means exactly that minimum. */
    size_t max_packet;
    /** Request pool size (sends + receives outstanding). Default 4096. */
    uint32_t max_requests;
    /** Descriptors for unexpected, held-out-of-order and taken (mprobe)
     *  messages. Default 4096. The first 1,024 of them each come with a
     *  64-byte payload slot made with the engine, so small messages that
     *  arrive before their receives are kept without allocating. */
    uint32_t max_unexpected;
    /** Bound on payload bytes held for unexpected / out-of-order eager
     *  messages. Beyond it quay_on_packet answers QUAY_EAGAIN (flow control
     *  applies back-pressure). Default 64 MiB. */
    size_t unexpected_bytes_max;
    /** Outstanding SEND actions (engine-owned headers not yet returned by
     *  quay_on_op_done; under flow control, until acknowledged as well).
     *  Default 1024. Flow control keeps one of them for ACK-only packets,
     *  so that acknowledgements never wait for data to be acknowledged:
     *  it needs at least 2. */
    uint32_t max_out;
    /** Queued control replies (CTS grants excluded). Default 1024. */
    uint32_t max_ctrl;
    /** Communicators alive at once. Default 64. */
    uint32_t max_comms;
    /** How far (in sequence numbers) past the next expected one a
     *  matchable packet from a peer may arrive and be held. Default 256. */
    uint32_t reorder_window;
    /** QUAY_CAP_* transport capabilities. Default 0. */
    uint32_t transport_caps;
    /** Allocator; all-NULL (default) means libc malloc/free. */
    quay_allocator alloc;
    /** Flow control and reliability (QUAY_FLOW_*). Default QUAY_FLOW_NONE:
     *  the transport is trusted to deliver every packet once. */
    uint32_t flow;
    /** Flow control: unacknowledged packets in flight per peer (the
     *  sender's retransmission store). Default 256. */
    uint32_t flow_window;
    /** First retransmission timeout, ns; doubles per expiry up to
     *  rto_max_ns and resets on progress. Defaults 1 ms and 1 s. */
    uint64_t rto_init_ns;
    uint64_t rto_max_ns;
    /** Consecutive timeouts without a sign of life from the peer before it
     *  is declared failed (its requests complete with QUAY_EPEER); a peer
     *  that answers but never acknowledges fails after 4x as many.
     *  Default 10. */
    uint32_t retry_limit;
    /** QUAY_FLOW_CREDIT: packets a peer may have sent us that we still
     *  hold (unexpected messages it sent, packets in flight). 0 (default):
     *  derived so that every peer at its limit at once fits the receive
     *  bounds: min(flow_window, max_unexpected / (nranks - 1),
     *  unexpected_bytes_max / eager_max / (nranks - 1)), at least 1. */
    uint32_t flow_credits;
    /** Logical channels on this engine, 1..QUAY_MAX_CHANNELS (e.g. a
     *  "system" and a "user" channel, PM's channels): each has its own
     *  pools (sized by this config), communicators, sequence spaces and
     *  flow control, and can be quiesced, saved and restored on its own
     *  (context switch) while the others run. More than one needs flow
     *  control (the frame carries the channel). Default 1. */
    uint32_t channels;
    /** Registered memory regions alive at once per channel (user
     *  registrations and the remote-memory protocols' own), at most 2^17.
     *  Default 256. */
    uint32_t max_regions;
    /** How rendezvous data moves (QUAY_RNDV_*), docs/protocols.md. The
     *  sender offers: GET puts a key to its buffer in the RTS, PUT asks
     *  for the receiver's key in the CTS; the receiver takes the offer if
     *  its own mode is not COPY and its transport can, else answers with
     *  a plain CTS (DATA packets). Each side needs a free region
     *  (max_regions) and a control slot for its FIN; without one it falls
     *  back to DATA packets. RDMA fragments are frag_size bytes, at most
     *  pipeline_depth in flight per message. Default QUAY_RNDV_AUTO. */
    uint32_t rndv_mode;
    /** Receiver-initiated transfers [MPIN], docs/protocols.md: 1 turns
     *  them on (every engine of the job must agree; needs
     *  QUAY_CAP_RDMA_PUT). A receive for a specific source, posted while
     *  no other receive of its communicator is pending undelegated, sends
     *  that source an RTR with a key to its buffer; a send that finds the
     *  receiver's RTR first in line for its envelope writes the data there
     *  (RDMA_PUT) and sends SC: no envelope, no matching at the receiver,
     *  no copy. Sends that find none use the sender-initiated protocols.
     *  Default 0. */
    uint32_t rtr;
    /** RTRs a receiver keeps outstanding at one sender (1..64): the size
     *  of each sender's per-peer RTR table, which therefore never
     *  overflows; past it, receives are matched the sender-initiated way.
     *  Default 8. */
    uint32_t rtr_per_peer;
    /** ANY_SOURCE arbitration [MPIN §3.4], docs/arbitration.md: 1 turns
     *  it on (needs rtr = 1; every engine of the job must agree). A
     *  wildcard receive (ANY_SOURCE, any tag or ANY_TAG) posted under the
     *  same rule as a delegation announces its pattern (ENA_ANY) to every
     *  member of its communicator; a rendezvous-size send that finds the
     *  announcement first in line raises its interest flag (ANY_FLAG) and
     *  waits; the receiver matches the flag like an envelope and either
     *  claims the receive for that sender (RTR_ANY with the buffer's key:
     *  the sender writes, then SC) or declines (DISABLE_ANY: the sender
     *  sends its envelope). Announcements stay in place and serve later
     *  wildcard receives of the same pattern. Default 0. */
    uint32_t rtr_any;
    /** Wildcard patterns (communicator, tag) a receiver keeps announced
     *  at once (1..255). A new pattern evicts an idle one (DISABLE_ANY to
     *  its holders); when every slot is busy the receive is matched the
     *  sender-initiated way: back-pressure, never failure. Default 8. */
    uint32_t any_slots;
    /** Collective algorithms, one per operation, each a value of that
     *  operation's enum in quay_coll.h (held as uint32_t: the struct's
     *  layout is versioned). QUAY_COLL_AUTO (0, default): the decision by
     *  size and rank count in docs/collectives.md. quay_engine_new refuses
     *  a value that names no algorithm of its operation (QUAY_EINVAL).
     *  Every member of a communicator must use the same settings. */
    uint32_t coll_barrier;   /**< a quay_barrier_alg */
    uint32_t coll_bcast;     /**< a quay_bcast_alg */
    uint32_t coll_reduce;    /**< a quay_reduce_alg */
    uint32_t coll_allreduce; /**< a quay_allreduce_alg */
    /** Degree of the gather-broadcast barrier's tree (2..64). Default 4. */
    uint32_t coll_tree_degree;
    /** The collectives' cost model: a message's latency from the start of
     *  its send until the receiver can pass it on (ns), the sender's busy
     *  time per message (ns), and the time per byte (ps). They choose the
     *  optimal broadcast tree (lambda = latency / gap) and the chain's
     *  segment size. Defaults 2000, 500, 100 (10 GB/s). */
    uint64_t coll_latency_ns;
    uint64_t coll_gap_ns;
    uint64_t coll_ps_per_byte;
    /** Segment of the pipelined chain broadcast in bytes; 0 (default):
     *  from the cost model. */
    size_t coll_segment;
    /** Collective schedules running at once per channel (1..65536);
     *  beyond it a collective call answers QUAY_EAGAIN. Default 64. */
    uint32_t coll_max;
    /** 1: collectives are offloaded to this rank's NIC agent [NIC ch.
     *  3-5]: a call emits one QUAY_ACT_OFFLOAD and its request completes
     *  at quay_on_offload_done; the agent (another engine, see
     *  quay_agent_post) runs the schedule with the other agents. Every
     *  member must agree. Default 0. */
    uint32_t coll_offload;
    /** 1: application bypass [NIC ch. 6], for eager and rendezvous
     *  sizes. Broadcast: a rank forwards (binomial tree) as soon as its
     *  data arrives, into a staging buffer, before its own application
     *  calls quay_ibcast; the call then only copies out. Reduce with a
     *  predefined op: a rank takes in and combines its children's results
     *  as they arrive (binomial tree rooted at rank 0); the call only adds
     *  its own operand and sends on. A sender emits QUAY_ACT_NOTIFY for a
     *  receiver that forwards in turn (broadcast) or must answer a
     *  rendezvous (reduce), so that an embedder can wake a host that is
     *  not polling. Every member must agree.
     *  Default 0. */
    uint32_t coll_bypass;
    /** This engine's secret for memory keys (docs/wire.md, "Memory
     *  keys"): 16 bytes from a real random source (getrandom(2)), never
     *  shared with another engine nor sent anywhere. Keys are this secret's
     *  encryption of a region's slot and generation, so a peer cannot make
     *  a valid key that was not handed to it. All zero (default): the
     *  engine makes no keys (quay_mem_register answers QUAY_ENOTSUP, and
     *  rendezvous and receiver-initiated transfers use DATA packets);
     *  an engine with an RDMA capability (QUAY_CAP_RDMA_*) must have one. */
    uint8_t key_secret[16];
    /** Forged memory keys (ones this engine never made for the peer
     *  presenting them) a peer may present before it is declared failed;
     *  each is counted (stats forged_keys) and traced
     *  (QUAY_TR_FORGED_KEY). Default 8. */
    uint32_t forged_key_limit;
    /** Rejected packets (QUAY_EPROTO / QUAY_ESTATE from quay_on_packet)
     *  a peer may send before it is declared failed. An honest peer sends
     *  none. Under flow control a frame that fails its checksum is not
     *  counted: it was damaged in transit (stats bad_checksum). 0 means
     *  no limit. Default 64. */
    uint32_t malformed_limit;
} quay_config;

/** Rendezvous data movement (quay_config.rndv_mode). */
enum {
    /** GET if the transport has QUAY_CAP_RDMA_GET, else PUT if it has
     *  QUAY_CAP_RDMA_PUT, else COPY. */
    QUAY_RNDV_AUTO = 0,
    /** DATA packets granted by CTS (pipelined); never RDMA. */
    QUAY_RNDV_COPY = 1,
    /** RTS carries the sender's key; the receiver reads the data with
     *  RDMA_GET actions, then sends FIN. Needs QUAY_CAP_RDMA_GET. */
    QUAY_RNDV_GET = 2,
    /** CTS carries the receiver's key; the sender writes the data with
     *  RDMA_PUT actions, then sends FIN. Needs QUAY_CAP_RDMA_PUT. */
    QUAY_RNDV_PUT = 3,
};

/** Most channels an engine may have (quay_config.channels). */
#define QUAY_MAX_CHANNELS 8

/** Flow-control policies (quay_config.flow), docs/flowctl.md. */
enum {
    /** None: the transport is reliable and delivers each packet once. */
    QUAY_FLOW_NONE = 0,
    /** Modified ACK/NACK [PM §3.3] with retransmission timers, duplicate
     *  suppression, CRC32C per packet and peer-failure detection. Every
     *  packet to another rank carries a 20-byte channel frame. */
    QUAY_FLOW_ACKNACK = 1,
    /** Credits: the same reliable channel, but a sender sends only while
     *  the receiver has granted room for it (flow_credits per peer, grants
     *  carried in every frame, also on ACK-only frames, which never take
     *  credit themselves); a sender out of credit probes on a timer so
     *  that a lost grant cannot stall it. A sender whose whole share is
     *  held in messages the receiver has not matched yet, while the
     *  receiver waits on it, is lent one more credit if a descriptor is
     *  free, or after it has asked four times with nothing arriving
     *  (stats credit_loans). A receiver refuses (NACK, the safety net)
     *  only a lent message that finds no room. */
    QUAY_FLOW_CREDIT = 2,
};

/** Transport capabilities (quay_config.transport_caps). */
enum {
    /** The transport never reorders packets between two peers. */
    QUAY_CAP_ORDERED = 1u << 0,
    /** The transport can execute RDMA_GET / RDMA_PUT actions. */
    QUAY_CAP_RDMA_GET = 1u << 1,
    QUAY_CAP_RDMA_PUT = 1u << 2,
    /** The transport executes QUAY_ACT_RDMA_ATOMIC at the target (its NIC
     *  or an adapter thread), one at a time per target engine. */
    QUAY_CAP_RDMA_ATOMIC = 1u << 3,
    /** The transport takes QUAY_ACT_SEND_MULTI: one payload to several
     *  peers, each with its own header [NIC ch. 2 multi-send]. Used only
     *  without flow control (QUAY_FLOW_NONE). */
    QUAY_CAP_MULTI_SEND = 1u << 4,
};

/** Size of the largest header (channel frame + engine header) on a
 *  packet: a 48-byte RTR or wildcard-arbitration header in a 20-byte
 *  channel frame. max_packet must leave room for it. */
#define QUAY_MAX_HEADER 68

/**
 * Fill the fields that quay_config's layout `version` has with their
 * defaults (documented per field) and stamp the version: bytes past that
 * layout are not touched. Call it through quay_config_default, which
 * passes the version the program was compiled with. Unknown versions
 * (outside QUAY_CONFIG_VERSION_MIN .. the library's own) leave *cfg
 * unchanged; quay_engine_new then refuses it (QUAY_EVERSION).
 */
QUAY_API void quay_config_default_versioned(int version, quay_config *cfg);

/** Fill `cfg` with defaults (documented per field) and stamp the version:
 *  a macro, so that the layout stamped is the one this header declares. */
QUAY_API void quay_config_default(quay_config *cfg);
#define quay_config_default(cfg) quay_config_default_versioned(QUAY_CONFIG_VERSION, (cfg))

/** Copy a config of any layout this library takes (its version field
 *  says which) into *out in the latest layout, the fields its version
 *  lacks at their defaults: what quay_engine_new does with its argument.
 *  For code that keeps a config a program handed it (a runtime). 0,
 *  QUAY_EINVAL, QUAY_EVERSION. */
QUAY_API int quay_config_upgrade(const quay_config *in, quay_config *out);

/** The library's version at run time (QUAY_VERSION_NUM of the library the
 *  program runs with, which may be newer than the header it was built
 *  with), and its string in *str unless str is NULL. */
QUAY_API uint32_t quay_version(const char **str);

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
/* Registered memory and one-sided transfers                            */
/* ------------------------------------------------------------------ */

/** Access rights of a registered region (quay_mem_register). */
enum {
    QUAY_MEM_READ = 1u << 0,  /**< peers may read it (RDMA_GET) */
    QUAY_MEM_WRITE = 1u << 1  /**< peers may write it (RDMA_PUT) */
};

/**
 * Register `len` bytes at `base` for remote access by every rank of the
 * world, with `access` (QUAY_MEM_*). *key receives an opaque 64-bit key to
 * give to peers; it names this channel's region, is honoured only for the
 * peers the registration names, and is refused once the region is
 * deregistered (keys are never reused). The memory must stay valid until
 * quay_mem_deregister. Returns 0, QUAY_EINVAL, QUAY_EAGAIN (the
 * max_regions table is full), QUAY_ENOTSUP (no key_secret configured).
 * quay_mem_register_peer and quay_mem_register_comm grant less.
 */
QUAY_API int quay_mem_register(quay_engine *e, void *base, size_t len, uint32_t access,
                               uint64_t *key);

/** As quay_mem_register, but the key is honoured only for world rank
 *  `peer` (QUAY_ERANK if out of range). */
QUAY_API int quay_mem_register_peer(quay_engine *e, void *base, size_t len, uint32_t access,
                                    int32_t peer, uint64_t *key);

/** As quay_mem_register, but the key is honoured only for the members of
 *  communicator `comm` (a group). quay_comm_free answers QUAY_EBUSY while
 *  such a region is registered. */
QUAY_API int quay_mem_register_comm(quay_engine *e, void *base, size_t len, uint32_t access,
                                    const quay_comm *comm, uint64_t *key);

/** Deregister a region registered by quay_mem_register. QUAY_EINVAL for
 *  an unknown, stale or engine-internal key. Transfers already executing
 *  on it are the caller's business (as with verbs). */
QUAY_API int quay_mem_deregister(quay_engine *e, uint64_t key);

/**
 * For adapters executing an RDMA action whose target is this engine
 * (any channel handle), requested by world rank `peer` (the initiator, as
 * the transport knows it, never as the request claims): check (key,
 * offset, len) against the registered regions, the peers each region's
 * key was made for, and the access the action needs (QUAY_MEM_READ for a
 * GET, QUAY_MEM_WRITE for a PUT). 0 and *addr = the local address;
 * QUAY_ESTATE (stale key, or one not valid for `peer`: nothing is
 * dereferenced); QUAY_EPROTO (outside the region, or access not granted);
 * QUAY_EINVAL; QUAY_ERANK. A key this engine never made for `peer` is
 * forged: counted, traced, and past forged_key_limit the peer is declared
 * failed here (as by quay_on_peer_failed). This engine's own rank may use
 * every key. Report a refusal to the initiator as the action's op_done
 * status.
 */
QUAY_API int quay_mem_resolve(quay_engine *e, int32_t peer, uint64_t key, uint64_t offset,
                              uint64_t len, uint32_t access, void **addr);

/**
 * One-sided transfers to or from world rank `peer`'s registered memory
 * (key and offset as the peer registered and published them): put writes
 * `len` bytes from `local` there, get reads them into `local`. They
 * become an RDMA_PUT / RDMA_GET action (to this rank itself: done at
 * once); the request completes at its op_done, with status.error the
 * adapter's status (e.g. QUAY_ESTATE for a key the peer refused) and
 * status.count = len on success. `local` must stay valid until then.
 * Needs the transport capability (QUAY_CAP_RDMA_PUT / _GET) unless peer
 * is this rank. Returns 0, QUAY_EINVAL, QUAY_ERANK, QUAY_ENOTSUP,
 * QUAY_EAGAIN.
 */
QUAY_API int quay_iput(quay_engine *e, int32_t peer, const void *local, size_t len,
                       uint64_t key, uint64_t offset, quay_req **preq);
QUAY_API int quay_iget(quay_engine *e, int32_t peer, void *local, size_t len, uint64_t key,
                       uint64_t offset, quay_req **preq);

/** Remote atomic operations on a 64-bit word [NIC ch. 5]. */
enum {
    QUAY_ATOMIC_FADD = 1, /**< word += operand; returns the old word */
    QUAY_ATOMIC_SWAP = 2, /**< word = operand (fetch-and-write) */
    QUAY_ATOMIC_CAS = 3   /**< if word == compare: word = operand; returns the old word */
};

/**
 * A remote atomic on the 8-byte word at (key, offset) of world rank
 * `peer`'s registered memory (registered with QUAY_MEM_READ |
 * QUAY_MEM_WRITE): it becomes one QUAY_ACT_RDMA_ATOMIC action, executed
 * where the memory is without its host (to this rank itself: at once);
 * the old value lands in *result (host byte order) and the request
 * completes at the op_done (status.error: e.g. QUAY_ESTATE / QUAY_EPROTO
 * when the peer refused the key). Operations on one engine's memory are
 * executed one at a time, so each is atomic against the others. *result
 * must stay valid until completion. Needs QUAY_CAP_RDMA_ATOMIC unless
 * peer is this rank. 0, QUAY_EINVAL, QUAY_ERANK, QUAY_ENOTSUP,
 * QUAY_EAGAIN.
 */
QUAY_API int quay_iatomic(quay_engine *e, int32_t peer, uint32_t op, uint64_t key,
                          uint64_t offset, uint64_t operand, uint64_t compare,
                          uint64_t *result, quay_req **preq);

/**
 * For adapters executing QUAY_ACT_RDMA_ATOMIC on target engine e for world
 * rank `peer`: check the key as quay_mem_resolve does (8 bytes, read and
 * write access, forged keys counted), then
 * apply op to the word and store its previous value in *old. The word is
 * read and written with memcpy (no alignment needed); the caller
 * serialises calls on one engine (the engine contract), which is what
 * makes the operation atomic against every other remote atomic there.
 * 0, QUAY_ESTATE, QUAY_EPROTO, QUAY_EINVAL (unknown op), QUAY_ERANK.
 */
QUAY_API int quay_mem_atomic(quay_engine *e, int32_t peer, uint64_t key, uint64_t offset,
                             uint32_t op, uint64_t operand, uint64_t compare, uint64_t *old);

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
    uint32_t ctx;    /**< MATCH: context id */
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

#endif /* QUAY_H */
