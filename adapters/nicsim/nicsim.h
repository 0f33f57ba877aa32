/*
 * nicsim.h — N quay engines in one process, wired by a simulated network.
 *
 * Adversarial mode (this file): a seeded, deterministic scheduler picks,
 * one event at a time, among everything that could legally happen next:
 *
 *   PULL     drain the actions of an engine that may have some
 *            (quay_next_action until 0). A SEND is copied into one
 *            contiguous in-flight packet on the link (rank -> peer) and its
 *            token joins the pending op_done set; a COMPLETE is handed to
 *            the completion callback.
 *   DELIVER  offer one in-flight packet to its destination
 *            (quay_on_packet). Per-link FIFO by default; with
 *            nicsim_config.reorder any packet on a link may go next.
 *            QUAY_EAGAIN leaves the packet where it was; it becomes
 *            eligible again only after some other event happened at that
 *            engine (so the scheduler never spins on it).
 *   OP_DONE  fire one pending quay_on_op_done(token, 0). op_done is
 *            deliberately delayed and randomly ordered against delivery:
 *            an engine may see its peer's reply before its own send's
 *            op_done.
 *
 * The simulator only uses include/quay/quay.h. It does not create
 * engines: the caller creates them, attaches one per rank, and calls
 * nicsim_touch() after calling into an engine itself (posting a send,
 * a receive ...), so that the engine's new actions become a PULL choice.
 *
 * Determinism: the same config (seed) and the same sequence of calls give
 * the same run, bit for bit. Nothing depends on pointer values or on the
 * addresses of buffers; the PRNG state lives in the nicsim object; the
 * library keeps no global state.
 *
 * Choice numbering (nicsim_step_choose): the enabled events are numbered
 * 0 .. nicsim_enabled_events()-1 as [PULLs][DELIVERs][OP_DONEs]
 * (counts from nicsim_enabled_detail), each group in a deterministic order.
 * Exhaustive explorers and fuzzers drive the simulator with it.
 *
 * Faults (drop, duplicate, delay, reorder, corrupt, NIC-buffer stall,
 * black-holed links, killed ranks): nicsim_faults and the functions
 * below nicsim_get_stats; fault_spec.h sets them from one string. They
 * never change the choice numbering: a held (delayed) packet is simply
 * not on its link, a stalled destination's packets are not deliverable,
 * a dropped packet is a DELIVER choice that ends in a DROP event.
 *
 * RDMA_PUT / RDMA_GET actions travel the link like packets (delivery is
 * a choice; delay, reorder and stalls apply; drop, duplicate and corrupt
 * do not: RDMA transports are reliable) and are executed on delivery
 * against the target engine's registered memory (quay_mem_resolve), then
 * the initiator's op_done is queued with the result. They emit no events.
 *
 * The timed (LogGP-style) mode of design.md §8 is in timed.h.
 */
#ifndef QUAY_NICSIM_H
#define QUAY_NICSIM_H

#include <stddef.h>
#include <stdint.h>

#include <quay/quay.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nicsim nicsim;

#define NICSIM_CONFIG_VERSION 2
/** Largest number of simulated ranks. */
#define NICSIM_MAX_RANKS 65535
/** Probability 1 in the *_ppm knobs (parts per million). */
#define NICSIM_PPM_ONE 1000000u
/** delay_max / stall_max used when the field is 0. */
#define NICSIM_HOLD_MAX_DEFAULT 16u
/** Largest delay_max / stall_max. */
#define NICSIM_HOLD_MAX_LIMIT (1u << 30)
/** "Never" for nicsim_blackhole_link / nicsim_kill_rank times. */
#define NICSIM_NEVER UINT64_MAX

/**
 * Fault knobs of one directed link (src -> dst). Probabilities are in
 * parts per million (0 .. NICSIM_PPM_ONE); all zero = a perfect link.
 *
 * Every random decision comes from the simulator's own fault PRNG, a
 * xoshiro256** stream seeded from nicsim_config.seed (separate from the
 * scheduler's stream), so a run is reproducible bit for bit. A knob at 0
 * never draws from it, and a knob at NICSIM_PPM_ONE never draws for its
 * yes/no decision either: with every knob at 0 the simulator behaves
 * exactly as without fault injection (same choices, same packet ids).
 *
 * When a packet goes on the wire (a SEND action is pulled), in this order:
 *   - `dup_ppm`: the wire duplicates it. A copy (new pkt_id, the same
 *     bytes) is queued on the same link right behind the original. The
 *     sender gets one op_done only. A copy gets its own delay / reorder /
 *     drop / corrupt decisions below but is never duplicated again.
 *     Models a link layer that retransmits a frame whose ack it lost.
 *   - `delay_ppm`: the packet is held off the link for K events (K uniform
 *     in 1..delay_max; see nicsim_now for what counts as an event), then
 *     queued at the tail of its link: packets sent meanwhile overtake it,
 *     even on a FIFO link. Models a packet that took a longer route.
 *   - otherwise `reorder_ppm`: the packet is inserted at a uniformly
 *     random position among the packets already queued on its link
 *     (ahead of at least one of them; nothing happens on an empty link).
 *     Useful on FIFO links (nicsim_config.reorder = 0); on reordering
 *     links it only skews the scheduler.
 * When the scheduler first offers a packet for delivery (a packet
 * answered QUAY_EAGAIN and offered again is not decided again):
 *   - `drop_ppm`: the packet disappears. The sender's op_done is not
 *     affected (the wire took it; it was queued at send time).
 *   - otherwise `corrupt_ppm`: 1 to 3 distinct bits (count and positions
 *     uniform) anywhere in the packet, header included, are flipped
 *     before quay_on_packet sees it; it stays corrupted if deferred.
 *     Models corruption that a link CRC did not catch; catching it is
 *     the engine's business (decoder checks or an end-to-end checksum).
 */
typedef struct nicsim_faults {
    uint32_t drop_ppm;
    uint32_t dup_ppm;
    uint32_t corrupt_ppm;
    uint32_t delay_ppm;
    uint32_t delay_max;   /**< K <= this; 0 = NICSIM_HOLD_MAX_DEFAULT */
    uint32_t reorder_ppm;
} nicsim_faults;

/** Simulator configuration: nicsim_config_default(), then change fields. */
typedef struct nicsim_config {
    /** NICSIM_CONFIG_VERSION; set by nicsim_config_default. */
    uint32_t version;
    /** Number of ranks (1..NICSIM_MAX_RANKS). Default 2. */
    int32_t nranks;
    /** Seed of the scheduler's PRNG (nicsim_step) and of the fault PRNG.
     *  Default 0. */
    uint64_t seed;
    /** 0: each link (a -> b) delivers in send order (FIFO).
     *  1: any in-flight packet on a link may be delivered next.
     *  Default 0. */
    uint32_t reorder;
    /** 1: an engine's actions are pulled at once after every event at it
     *  (and after nicsim_touch), so PULL is never a choice. Shrinks the
     *  choice tree for exhaustive enumeration. Default 0. */
    uint32_t auto_pull;
    /** Fault knobs of every link without a nicsim_set_link_faults
     *  override. All zero by default. */
    nicsim_faults faults;
    /**
     * Receive-buffer exhaustion ("NIC buffer full" stall) of every
     * destination without a nicsim_set_rank_stall override: each time the
     * scheduler picks a packet for delivery to a destination that is not
     * stalled, with probability stall_ppm that destination's NIC declares
     * its receive buffers full instead: the pick becomes a STALL event,
     * and for the next K events (K uniform in 1..stall_max) no packet from
     * any source is delivered to it. The packets wait on the wire; none is
     * lost (lossless link-level back-pressure, as Myrinet or InfiniBand
     * credits; a NIC that drops when full is `drop_ppm`). quay_on_packet
     * answering QUAY_EAGAIN is the engine's own back-pressure and is
     * separate (see DELIVER above). Default 0.
     */
    uint32_t stall_ppm;
    uint32_t stall_max; /**< 0 = NICSIM_HOLD_MAX_DEFAULT */
} nicsim_config;

/** Fill `cfg` with the defaults above. */
void nicsim_config_default(nicsim_config *cfg);

/** Create a simulator. Returns 0, QUAY_EINVAL (a ppm above
 *  NICSIM_PPM_ONE, a hold above NICSIM_HOLD_MAX_LIMIT ...), QUAY_EVERSION,
 *  QUAY_ENOMEM. */
int nicsim_new(const nicsim_config *cfg, nicsim **psim);

/** Free the simulator, its packets and queues. Attached engines are not
 *  touched (the caller frees them, before or after). NULL ok. */
void nicsim_free(nicsim *sim);

/** Attach the engine of `rank` (its quay_engine_rank / _size must agree
 *  with `rank` / nranks). Returns 0, QUAY_EINVAL, QUAY_ERANK. */
int nicsim_attach(nicsim *sim, int32_t rank, quay_engine *e);

/** Called for every COMPLETE action pulled from rank `rank`, from inside
 *  nicsim_step / nicsim_step_choose / nicsim_touch (auto_pull). It may
 *  query the request (quay_req_test) but must not call into any engine
 *  that changes state. */
typedef void (*nicsim_complete_fn)(void *ctx, int32_t rank, quay_req *req,
                                   void *user);
void nicsim_set_completion_cb(nicsim *sim, nicsim_complete_fn fn, void *ctx);

/** Observation hook (tracing, corpus recording). */
typedef enum nicsim_event_kind {
    NICSIM_EV_SEND = 1,     /**< SEND pulled from `rank`: packet `pkt_id`
                                 (`len` bytes at `data`) now in flight to
                                 `peer`; `token` pending op_done */
    NICSIM_EV_COMPLETE = 2, /**< COMPLETE pulled from `rank` for `req` */
    NICSIM_EV_DELIVER = 3,  /**< about to offer packet `pkt_id` from `peer`
                                 to `rank` (`data`, `len`) */
    NICSIM_EV_DEFER = 4,    /**< ... and `rank` answered QUAY_EAGAIN */
    NICSIM_EV_REJECT = 5,   /**< ... and `rank` answered `rc` (EPROTO,
                                 ESTATE, or a fatal code) */
    NICSIM_EV_OP_DONE = 6,  /**< about to call quay_on_op_done(`token`) */
    NICSIM_EV_ERROR = 7,    /**< an engine call or action was wrong: `rc`
                                 is the code */
    NICSIM_EV_NOTIFY = 8,   /**< NOTIFY pulled from `rank` for `peer` */
    /* Faults. Send-side ones (DUP, DELAY, REORDER) name the sender as
     * `rank`, like SEND; delivery-side ones (DROP, CORRUPT, STALL) name
     * the destination, like DELIVER. */
    NICSIM_EV_DROP = 9,     /**< packet `pkt_id` from `peer` to `rank`
                                 vanished; `aux` is a NICSIM_DROP_* reason;
                                 `data`/`len` what was lost */
    NICSIM_EV_DUP = 10,     /**< `rank` -> `peer`: packet `pkt_id` is a
                                 copy of packet `aux` */
    NICSIM_EV_DELAY = 11,   /**< `rank` -> `peer`: packet `pkt_id` held off
                                 its link for `aux` events */
    NICSIM_EV_REORDER = 12, /**< `rank` -> `peer`: packet `pkt_id` queued
                                 ahead of `aux` packets of its link */
    NICSIM_EV_CORRUPT = 13, /**< packet `pkt_id` from `peer` to `rank`:
                                 `aux` bits flipped; `data` the corrupted
                                 bytes (the DELIVER that follows has them
                                 too) */
    NICSIM_EV_STALL = 14,   /**< `rank`'s NIC is full for `aux` events;
                                 the packet picked (`pkt_id`, from `peer`)
                                 stays on the wire */
    NICSIM_EV_KILL = 15     /**< `rank` was killed (nicsim_kill_rank) */
} nicsim_event_kind;

/** DELIVER / DEFER / REJECT: nicsim_event.aux flags (0 without faults),
 *  so that a checker can tell a fault's consequence from a bug. */
enum {
    NICSIM_PKT_COPY = 1,     /**< the packet is a dup_ppm copy */
    NICSIM_PKT_CORRUPTED = 2 /**< corrupt_ppm flipped bits in it */
};

/** NICSIM_EV_DROP reasons (nicsim_event.aux). */
enum {
    NICSIM_DROP_RANDOM = 0,    /**< drop_ppm */
    NICSIM_DROP_BLACKHOLE = 1, /**< the link is black-holed */
    NICSIM_DROP_KILLED = 2     /**< its source or destination was killed */
};

typedef struct nicsim_event {
    int32_t kind;    /**< nicsim_event_kind */
    int32_t rank;    /**< the engine concerned */
    int32_t peer;    /**< the other end, or -1 */
    int32_t rc;      /**< DEFER / REJECT / ERROR: the code */
    uint64_t token;  /**< SEND / OP_DONE */
    uint64_t pkt_id; /**< SEND / DELIVER / DEFER / REJECT: packet number */
    uint64_t len;    /**< packet length */
    const void *data;/**< packet bytes, valid during the callback only */
    quay_req *req;   /**< COMPLETE */
    uint64_t aux;    /**< fault events: see the kinds; DELIVER, DEFER,
                          REJECT: NICSIM_PKT_* flags */
} nicsim_event;

typedef void (*nicsim_event_fn)(void *ctx, const nicsim_event *ev);
void nicsim_set_event_cb(nicsim *sim, nicsim_event_fn fn, void *ctx);

/** The caller called into the engine of `rank` (isend, irecv, cancel,
 *  iprobe ...): it may have new actions (PULL becomes enabled, or with
 *  auto_pull they are pulled now) and packets deferred at it become
 *  eligible again. */
void nicsim_touch(nicsim *sim, int32_t rank);

/** Number of "something happened at this engine" events so far (packet
 *  consumed, op_done, actions pulled, touch). Callers use it the same way
 *  the simulator does: an attempt that failed for lack of progress is
 *  worth repeating only once the epoch moved. */
uint64_t nicsim_epoch(const nicsim *sim, int32_t rank);

/** Number of events that can be performed now. */
uint32_t nicsim_enabled_events(const nicsim *sim);

/** The same, by group (any pointer may be NULL). */
void nicsim_enabled_detail(const nicsim *sim, uint32_t *npull,
                           uint32_t *ndeliver, uint32_t *nopdone);

/**
 * Perform the `choice`-th enabled event (see numbering above).
 * Returns 1 when an event was performed, QUAY_EINVAL when `choice` is out
 * of range, or the first fatal code (<= QUAY_ERR_FATAL) an engine
 * returned during this event (the event still counts as performed).
 */
int nicsim_step_choose(nicsim *sim, uint32_t choice);

/** Perform one event picked by the seeded PRNG. Returns 1 (performed),
 *  0 (nothing enabled) or a fatal engine code as nicsim_step_choose. */
int nicsim_step(nicsim *sim);

/** 1 when nothing is in flight, no op_done is pending and no engine may
 *  have actions left to pull. */
int nicsim_idle(const nicsim *sim);

/** nicsim_run results. */
enum {
    NICSIM_RUN_IDLE = 0,  /**< the simulator became idle */
    NICSIM_RUN_LIMIT = 1, /**< max_steps events performed, not idle */
    NICSIM_RUN_STUCK = 2  /**< not idle, but nothing enabled (every
                               in-flight packet deferred): deadlock */
};

/** Pump with nicsim_step until idle or `max_steps` events. Returns a
 *  NICSIM_RUN_* value or a fatal engine code. */
int nicsim_run(nicsim *sim, uint64_t max_steps);

/** Counters. */
typedef struct nicsim_stats {
    uint64_t steps;          /**< events performed */
    uint64_t pulls;          /**< PULL events */
    uint64_t actions;        /**< actions pulled (all kinds) */
    uint64_t sends;          /**< SEND actions (packets put in flight) */
    uint64_t completes;      /**< COMPLETE actions */
    uint64_t notifies;       /**< NOTIFY actions */
    uint64_t multi_sends;    /**< SEND_MULTI actions (each counted once) */
    uint64_t deliveries;     /**< packets consumed (quay_on_packet == 0) */
    uint64_t eagain;         /**< quay_on_packet == QUAY_EAGAIN */
    uint64_t rejects;        /**< quay_on_packet == EPROTO / ESTATE */
    uint64_t op_dones;       /**< quay_on_op_done calls */
    uint64_t errors;         /**< op_done refused, bad action, bad peer,
                                  unexpected return code */
    uint64_t fatal;          /**< fatal codes returned by engines */
    int32_t first_fatal;     /**< the first of them, or 0 */
    int32_t first_error;     /**< code of the first `errors`, or 0 */
    uint64_t bytes_delivered;/**< bytes of consumed packets */
    uint64_t inflight;       /**< packets in flight now */
    uint64_t inflight_peak;
    uint64_t pending_op_done;/**< op_done calls pending now */
    /* Faults (all zero when every knob is 0). */
    uint64_t now;            /**< nicsim_now() */
    uint64_t drops;          /**< packets dropped by drop_ppm */
    uint64_t blackholed;     /**< packets dropped by a black-holed link */
    uint64_t killed_pkts;    /**< packets discarded: an end was killed */
    uint64_t dups;           /**< copies put on the wire by dup_ppm */
    uint64_t dup_accepted;   /**< ... that quay_on_packet answered 0 */
    uint64_t dup_rejected;   /**< ... answered EPROTO / ESTATE */
    uint64_t corrupts;       /**< packets corrupted by corrupt_ppm */
    uint64_t corrupt_bits;   /**< bits flipped in them */
    uint64_t corrupt_accepted;/**< corrupted packets answered 0 (the
                                  engine did not notice) */
    uint64_t corrupt_rejected;/**< ... answered EPROTO / ESTATE */
    uint64_t delays;         /**< packets held off their link */
    uint64_t delayed;        /**< packets held off their link now */
    uint64_t reorders;       /**< packets queued ahead of others */
    uint64_t stalls;         /**< STALL events */
    uint64_t kills;          /**< ranks killed */
    uint64_t epeer_op_dones; /**< op_dones given QUAY_EPEER by a kill */
    /* RDMA actions (executed against the target's registered memory). */
    uint64_t rdma_ops;       /**< RDMA_PUT / RDMA_GET actions issued */
    uint64_t rdma_bytes;     /**< bytes moved by those that succeeded */
    uint64_t rdma_refused;   /**< ... refused by the target's key check */
} nicsim_stats;

void nicsim_get_stats(const nicsim *sim, nicsim_stats *st);

/** For tests and fuzzers: recount, by scanning everything, what the
 *  simulator keeps incrementally (in-flight and held packets, per-node
 *  candidates, EAGAIN stamps, stalled destinations, the number of
 *  deliverable choices, the delay heap) and compare. Returns 0 when all
 *  agree, else a small positive number naming the first disagreement. */
int nicsim_selfcheck(const nicsim *sim);

/* ------------------------------------------------------------------ */
/* Faults                                                               */
/* ------------------------------------------------------------------ */

/**
 * The simulator's clock: the number of events performed (each
 * nicsim_step / nicsim_step_choose that did something counts 1), plus
 * jumps: when nothing at all is enabled but packets are held back (a
 * delay or a stall is running), the clock jumps to the first release,
 * so a held packet never deadlocks a run. Delays, stalls, black-hole and
 * kill times are in this clock.
 */
uint64_t nicsim_now(const nicsim *sim);

/* The setters below may be called between events, not from inside a
 * simulator callback (a kill there would free the packet being
 * delivered). */

/** Override the fault knobs of link src -> dst (NULL: back to
 *  nicsim_config.faults). Takes effect for decisions made from now on.
 *  Returns 0, QUAY_ERANK, QUAY_EINVAL (bad knob), QUAY_ENOMEM. */
int nicsim_set_link_faults(nicsim *sim, int32_t src, int32_t dst,
                           const nicsim_faults *f);

/** Override the stall knobs (nicsim_config.stall_ppm / stall_max) of
 *  destination `rank`. Returns 0, QUAY_ERANK, QUAY_EINVAL. */
int nicsim_set_rank_stall(nicsim *sim, int32_t rank, uint32_t stall_ppm,
                          uint32_t stall_max);

/**
 * Black-hole link src -> dst from clock time `at` on (at <= nicsim_now():
 * at once; NICSIM_NEVER: cancel): every packet of that link, in flight or
 * sent later, vanishes when it would be delivered (packets sent once the
 * link is black-holed vanish at once). Op_dones are unaffected: the
 * sender's NIC still puts them on the wire. Models a cut cable or a
 * routing black hole in one direction. Returns 0, QUAY_ERANK, QUAY_ENOMEM.
 */
int nicsim_blackhole_link(nicsim *sim, int32_t src, int32_t dst, uint64_t at);

/**
 * Kill `rank` at clock time `at` (at <= nicsim_now(): at once; a later
 * time is performed when the clock reaches it; NICSIM_NEVER cancels a
 * scheduled kill). Models the death of that rank's NIC (the network
 * partitions it away); its host still runs:
 *   - every packet in flight from or to it is discarded (DROP, reason
 *     KILLED), and so is every packet sent to it or by it afterwards;
 *   - its pending op_dones complete with QUAY_EPEER, and so do those of
 *     the SENDs it issues afterwards;
 *   - the other ranks' op_dones for packets sent to it complete normally
 *     (0): they learn of the failure only by silence (retry limit);
 *   - its actions are still pulled and its COMPLETEs handed on.
 * Returns 0, QUAY_ERANK, QUAY_ENOMEM.
 */
int nicsim_kill_rank(nicsim *sim, int32_t rank, uint64_t at);

/** 1 if `rank` has been killed. */
int nicsim_rank_killed(const nicsim *sim, int32_t rank);

#ifdef __cplusplus
}
#endif

#endif /* QUAY_NICSIM_H */
