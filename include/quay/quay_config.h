/*
 * quay_config.h — an engine's configuration: quay_config, its versioned
 * defaults and upgrade, flow-control policies, rendezvous modes.
 * Part of quay.h, which includes it; include <quay/quay.h>.
 */
#include <quay/quay.h>

#ifndef QUAY_CONFIG_H
#define QUAY_CONFIG_H

#ifdef __cplusplus
extern "C" {
#endif

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

#ifdef __cplusplus
}
#endif

#endif /* QUAY_CONFIG_H */
