/*
 * coll.h — collective schedules (internal to src/collectives).
 *
 * A collective call builds a schedule: an array of steps (send, receive,
 * local reduce, copy, join) and the edges "step a before step b". Each
 * step starts when every step before it is done; the schedule completes
 * its user request when every step is done. Sends and receives are engine
 * requests (RF_COLL) on the communicator's collective twin, tagged with
 * the schedule's sequence number and the step's sub-tag, so that messages
 * of different collectives, and of different rounds of one, never match
 * each other. Their completion marks the step done (coll_hooks.on_req_done)
 * and queues the schedule on e->coll.ready; coll_hooks.progress starts
 * what became ready, outside the packet path (no recursion). The steps
 * that move no message (a reduction, a copy) run at the completion that
 * makes them ready, and one that leaves every step done finishes the
 * schedule there: neither starts a message, and the user's request
 * completes as a receive's would.
 *
 * Buffers are named, not pointed to, while building (the schedule owns a
 * temporary area allocated once it is finalized): CB_SEND (the caller's
 * send buffer, read only), CB_RECV (the caller's receive buffer) and
 * CB_TMP.
 */
#ifndef QUAY_COLL_INTERNAL_H
#define QUAY_COLL_INTERNAL_H

#include <quay/quay_coll.h>

#include "engine/internal.h"

/* What the collectives keep per engine, behind e->coll.st (the engine
 * sees only coll_port's doorbell). */
struct coll_state {
    qlink active;      /* every running schedule */
    uint32_t nactive;
    qlink early;       /* schedules started by an arrival, not yet called */
    qlink spare;       /* finished schedules kept with their arrays, so
                          back-to-back collectives do not allocate */
    uint32_t nspare;
    struct coll_bypass *byp;  /* application bypass state, or NULL */
    struct coll_offload *off; /* offloading state (offload.c), or NULL */
};

enum { CS_SEND = 1, CS_RECV, CS_REDUCE, CS_COPY, CS_JOIN };
enum { CB_SEND = 0, CB_RECV = 1, CB_TMP = 2 };
enum { CST_WAIT = 0, CST_READY, CST_RUNNING, CST_DONE };

/* No step (an edge to or from it is ignored). */
#define CS_NONE UINT32_MAX
/* Sub-tags: 15 bits; the schedule's sequence number takes the 16 above.
 * Algorithms use 0 .. CS_SUBTAG_MAX. Application bypass: a broadcast's
 * messages CS_BYPASS_BCAST + root (root < CS_BYPASS_REDUCE -
 * CS_BYPASS_BCAST), a reduce's partial results CS_BYPASS_REDUCE | op << 4
 * | dtype: an arrival alone says what to do with it. */
#define CS_SUBTAG_MAX 0x3FFFu
#define CS_BYPASS_BCAST 0x4000u
#define CS_BYPASS_REDUCE 0x6000u
#define CS_SUBTAG_LIMIT 0x7FFFu

typedef struct coll_step {
    uint8_t kind;      /* CS_* */
    uint8_t state;     /* CST_* */
    uint8_t buf;       /* CB_*: send source, receive target, reduce/copy target */
    uint8_t buf2;      /* CB_*: reduce/copy source */
    uint8_t notify;    /* send: wake the receiver's host (bypass) */
    uint32_t ndeps;    /* steps before it not yet done */
    uint32_t ndeps0;   /* ... when the schedule starts (a reuse restarts it) */
    uint32_t succ;     /* its successors: s->succ[succ .. succ + nsucc) */
    uint32_t nsucc;
    int32_t peer;      /* comm rank */
    uint32_t subtag;
    size_t off, off2;  /* byte offsets in buf / buf2 */
    size_t len;        /* bytes (reduce: count * element size) */
    quay_req *req;     /* send / receive while running */
} coll_step;

/* What a schedule was built for: the call's arguments that the decision
 * and the build read. A call of the same shape reuses a spare schedule's
 * steps as they are, without deciding or building again: the graph names
 * buffers (CB_*), never addresses, and depends on nothing else (the
 * engine's config is fixed). */
typedef struct coll_shape {
    uint32_t kind;     /* QUAY_OFF_*; 0: not reusable (bypass schedules) */
    uint32_t alg;      /* the algorithm asked for (QUAY_COLL_AUTO or an id) */
    uint32_t ctx;      /* the user communicator's context */
    int32_t size, rank;
    int32_t root;
    uint32_t dt;
    size_t count;
    uint8_t in_place;
    uint8_t commutative;
} coll_shape;

typedef struct coll_sched {
    /* What finishing a step and starting the next reads, in the first two
     * cache lines: with many engines each visit finds a schedule cold. */
    qlink rlink;       /* e->coll.ready while it has ready steps (or .blocked) */
    quay_engine *e;
    quay_comm *comm;   /* the collective twin: every message goes here */
    coll_step *steps;
    uint32_t *succ;
    uint32_t *ready;   /* stack of steps ready to start */
    uint8_t *tmp;
    uint32_t nsteps;

    /* One call's state, from nready up to (not including) run_end: zeroed
     * whenever a schedule is taken for a call (sched_blank), reused or
     * not. A field that a call sets or changes belongs here. */
    uint32_t nready;
    uint32_t ndone;
    uint32_t nrunning; /* sends and receives in flight */
    uint32_t tagbase;  /* (sequence number & 0xFFFF) << 15 */
    int error;         /* first failure: no more steps start */
    const uint8_t *sbuf;
    uint8_t *rbuf;
    quay_req *ureq;    /* the user's request (RK_COLL) */
    int32_t rank, size;/* our rank and the size of the communicator */
    uint8_t offloaded; /* an agent's: its end is reported with cookie */
    uint8_t reused;    /* taken spare with its steps: nothing to build */
    uint8_t bypass_kind; /* early: QUAY_OFF_BCAST or QUAY_OFF_REDUCE */
    uint8_t ended;     /* early, failed before its call: kept for the call */
    uint8_t running;   /* sched_run is on the stack: completions queue it */
    int cancelled;     /* after it: the pending receives were cancelled */
    int err;           /* building: out of memory */
    qlink link;        /* coll_state.active (or .spare) */
    qlink elink;       /* coll_state.early: started by an arrival, not yet called */
    uint32_t gate;     /* a step that waits for the local call, or CS_NONE */
    uint32_t byp_own;  /* bypass reduce: "mine op children's", or CS_NONE */
    uint32_t byp_final;/* bypass reduce: the result's last move (a placeholder
                          until coll_reduce_bypass_claim) */
    int32_t bypass_root; /* early bcast: the root the arrival said */
    size_t bypass_len; /* early: the length the arrival said (bypass reduce: always) */
    quay_op op;
    quay_dtype dt;
    size_t esize;      /* element size of dt (reductions) */
    uint64_t cookie;
    uint32_t nedges;   /* building: edges so far (0 once linked) */

    /* Kept while spare: the arrays, their capacities, and what the steps
     * were built for. */
    uint32_t run_end;  /* (marks the end of the call's state; unused) */
    uint32_t cap;
    uint32_t *edges;   /* building: pairs (before, after); then succ lists */
    uint32_t ecap;
    uint32_t succ_cap, ready_cap; /* allocated lengths */
    size_t tmp_cap;
    size_t tmp_len;
    coll_shape shape;  /* what the steps were built for (kind 0: unknown) */
} coll_sched;

/* ---- building (build.c) ---------------------------------------------------- */

uint32_t cs_send(coll_sched *s, int32_t peer, int buf, size_t off, size_t len,
                 uint32_t subtag);
uint32_t cs_recv(coll_sched *s, int32_t peer, int buf, size_t off, size_t len,
                 uint32_t subtag);
/** buf[off ..] = src[soff ..] op buf[off ..] over count elements: src holds
 *  the operand of the lower ranks (quay_op's in, inout). */
uint32_t cs_reduce(coll_sched *s, int src, size_t soff, int buf, size_t off, size_t count);
uint32_t cs_copy(coll_sched *s, int buf, size_t off, int src, size_t soff, size_t len);
/** A step that does nothing: joins many edges into one. */
uint32_t cs_join(coll_sched *s);
/** A step done once both a and b are (either may be CS_NONE): receives
 *  are posted early and may finish in any order, so "all of the earlier
 *  rounds" is a chain of these, not the last receive. */
uint32_t cs_after(coll_sched *s, uint32_t a, uint32_t b);
/** before happens before after (CS_NONE on either side: no edge). */
void cs_dep(coll_sched *s, uint32_t before, uint32_t after);
/** Size the temporary area (bytes); the schedule allocates it at start. */
void sched_tmp(coll_sched *s, size_t len);

/* ---- application bypass schedules (bcast.c, reduce.c) ------------------------ */

/* (The algorithms a config selects are in the registry, algs.h.) */

/** Application-bypass broadcast (binomial, staged); early: built at an
 *  arrival, the copy-out waits for the call (s->gate). */
void coll_build_bcast_bypass(coll_sched *s, size_t len, int32_t root, int early);
/** Application-bypass reduce (binomial tree rooted at rank 0, predefined
 *  ops): children's results are combined as they come; early: built at an
 *  arrival (root and in_place unknown), the call completes it with
 *  coll_reduce_bypass_claim. */
void coll_build_reduce_bypass(coll_sched *s, size_t count, int32_t root, int in_place,
                              int early);
/** A bypass reduce's own operand and result placement, on its
 *  placeholders: by the build when the call built it, by the call when an
 *  arrival did (before the gate opens). */
void coll_reduce_bypass_claim(coll_sched *s, int32_t root, int in_place);
/** The sub-tag of a bypass reduce's partial results. */
uint32_t coll_reduce_bypass_subtag(quay_op_kind op, quay_dtype dt);

/* ---- calls (coll.c) and offload (offload.c) --------------------------------- */

/** Host with coll_offload: hand d to the NIC agent (QUAY_ACT_OFFLOAD). */
int offload_post(quay_engine *e, quay_comm *c, const quay_offload *d, quay_req **req);
/** Agent: schedule `cookie` ended with `status`: queue the report. */
void offload_report(quay_engine *e, uint64_t cookie, int status);
/** Free what offloading holds (engine free). */
void offload_fini(quay_engine *e);
/** Create the collectives' state and install their hooks in the engine
 *  (idempotent): the state, or NULL (no memory). */
struct coll_state *coll_install(quay_engine *e);
/** Install the hooks at engine creation when the config needs them
 *  before any collective call (coll_bypass: arrivals must be seen): the
 *  composition root passes it to the engine. 0 or QUAY_ENOMEM. */
int coll_attach(quay_engine *e);
/** The config's collective algorithms (coll_barrier, coll_bcast,
 *  coll_reduce, coll_allreduce) are QUAY_COLL_AUTO or registered for
 *  their operation (algs.h): 0 or QUAY_EINVAL. The composition root
 *  passes it to the engine, which calls it after its own config check. */
int coll_config_check(const quay_config *c);

/* ---- running (sched.c) ---------------------------------------------------- */

/** A schedule for a collective on user communicator c (twin created if
 *  needed): NULL with *rc set if it cannot start now. */
coll_sched *sched_new(quay_engine *e, quay_comm *c, int *rc);
/** sched_new, preferring a spare schedule built for `shape` (then
 *  s->reused is set and the caller builds nothing). */
coll_sched *sched_new_shaped(quay_engine *e, quay_comm *c, const coll_shape *shape, int *rc);
/** Finish building and start: the user's request is returned in *req.
 *  On failure nothing remains (rc < 0). */
int sched_start(coll_sched *s, quay_req **req);
/** Discard a schedule that was not started. */
void sched_discard(coll_sched *s);
/** Start a schedule built at an arrival: sequence number from the
 *  message's tag, not the communicator's count; kept on coll_state.early. */
int sched_start_early(coll_sched *s, uint32_t tagbase);
/** The local call claims an early schedule: open its gate. */
void sched_claim(coll_sched *s, uint8_t *rbuf);
/** Queue a NOTIFY action for world rank peer (a hint: may be dropped). */
void coll_notify(quay_engine *e, int32_t peer);

/* ---- application bypass (bypass.c) ----------------------------------------- */

/** Set up application bypass (coll_attach; the state exists). */
int bypass_attach(quay_engine *e);
/** coll_hooks.on_arrival under bypass: a message on twin, uncalled. */
void bypass_arrival(quay_engine *e, quay_comm *twin, const struct quay_msg *m);
void bypass_fini(quay_engine *e);
/** Start early schedules for the broadcasts that arrived uncalled. */
void bypass_dispatch(quay_engine *e);
/** The call (bcast or reduce) finds its early schedule: 1 (claimed,
 *  *req), 0 (none), or QUAY_EINVAL (the arrival disagrees with d). */
int bypass_claim(quay_engine *e, quay_comm *c, const quay_offload *d, quay_req **req);
/** Application bypass applies to collective d on c. */
int bypass_applies(const quay_engine *e, const quay_comm *c, const quay_offload *d);
/** A NOTIFY action if one is queued (1), else 0. */
int bypass_emit(quay_engine *e, quay_action *a);
/** An OFFLOAD / OFFLOAD_DONE action if one is queued (1), else 0. */
int offload_emit(quay_engine *e, quay_action *a);

#endif /* QUAY_COLL_INTERNAL_H */
