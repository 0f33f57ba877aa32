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
 * The timed (LogGP) mode of DESIGN §7 is not here yet.
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

#define NICSIM_CONFIG_VERSION 1
/** Largest number of simulated ranks. */
#define NICSIM_MAX_RANKS 65535

/** Simulator configuration: nicsim_config_default(), then change fields. */
typedef struct nicsim_config {
    /** NICSIM_CONFIG_VERSION; set by nicsim_config_default. */
    uint32_t version;
    /** Number of ranks (1..NICSIM_MAX_RANKS). Default 2. */
    int32_t nranks;
    /** Seed of the scheduler's PRNG (nicsim_step). Default 0. */
    uint64_t seed;
    /** 0: each link (a -> b) delivers in send order (FIFO).
     *  1: any in-flight packet on a link may be delivered next.
     *  Default 0. */
    uint32_t reorder;
    /** 1: an engine's actions are pulled at once after every event at it
     *  (and after nicsim_touch), so PULL is never a choice. Shrinks the
     *  choice tree for exhaustive enumeration. Default 0. */
    uint32_t auto_pull;
    /* Fault knobs, in parts per million of delivered packets. All zero
     * by default. drop / dup / corrupt arrive with flow control (a later
     * issue: the engine has no retransmission yet, so a dropped packet
     * would hang a run); nicsim_new answers QUAY_ENOTSUP while they are
     * non-zero. Reordering is `reorder` above. */
    uint32_t drop_ppm;
    uint32_t dup_ppm;
    uint32_t corrupt_ppm;
} nicsim_config;

/** Fill `cfg` with the defaults above. */
void nicsim_config_default(nicsim_config *cfg);

/** Create a simulator. Returns 0, QUAY_EINVAL, QUAY_EVERSION,
 *  QUAY_ENOTSUP (fault knob not available yet), QUAY_ENOMEM. */
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
                                 is the code (or QUAY_ENOTSUP for an RDMA
                                 action the simulator cannot run yet) */
    NICSIM_EV_NOTIFY = 8    /**< NOTIFY pulled from `rank` for `peer` */
} nicsim_event_kind;

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
    uint64_t deliveries;     /**< packets consumed (quay_on_packet == 0) */
    uint64_t eagain;         /**< quay_on_packet == QUAY_EAGAIN */
    uint64_t rejects;        /**< quay_on_packet == EPROTO / ESTATE */
    uint64_t op_dones;       /**< quay_on_op_done calls */
    uint64_t errors;         /**< op_done refused, bad action, bad peer,
                                  RDMA action (not simulated yet),
                                  unexpected return code */
    uint64_t fatal;          /**< fatal codes returned by engines */
    int32_t first_fatal;     /**< the first of them, or 0 */
    int32_t first_error;     /**< code of the first `errors`, or 0 */
    uint64_t bytes_delivered;/**< bytes of consumed packets */
    uint64_t inflight;       /**< packets in flight now */
    uint64_t inflight_peak;
    uint64_t pending_op_done;/**< op_done calls pending now */
} nicsim_stats;

void nicsim_get_stats(const nicsim *sim, nicsim_stats *st);

#ifdef __cplusplus
}
#endif

#endif /* QUAY_NICSIM_H */
