/*
 * scn_int.h — internal structures of the scenario library (parser,
 * runner, checker). Not installed.
 */
#ifndef QUAY_SCN_INT_H
#define QUAY_SCN_INT_H

#include "scn.h"

#include <quay/quay.h>
#include <quay/quay_coll.h>

#include "nicsim.h"

#define SCN_MAX_RANKS 8
#define SCN_MIN_RANKS 2
#define SCN_MAX_COMMS 16
#define SCN_NAME_MAX 32
/* Guard bytes after every receive buffer. */
#define SCN_GUARD 32
/* Value of untouched receive-buffer bytes. */
#define SCN_FILL 0xA5u
/* A communicator's collective twin: context id | 2^31 (docs/collectives.md).
 * In the per-sender sequence lists, the context of a collective message
 * (the sender's PKT_OUT does not name the context). */
#define SCN_CTX_COLL 0x80000000u
/* An algorithm / tree degree / segment drawn per seed (config ...=mixed). */
#define SCN_MIXED (-1)

typedef enum scn_opk {
    SOP_ISEND = 1,
    SOP_IRECV,
    SOP_IPROBE,
    SOP_PROBE,
    SOP_MPROBE,
    SOP_MRECV,
    SOP_CANCEL,
    SOP_FREE,
    SOP_WAIT,
    SOP_WAITALL,
    SOP_ATTACH,
    SOP_DETACH,
    SOP_SYNC,
    SOP_COMM_CREATE,
    SOP_COLL      /* ibarrier / ibcast / ireduce / iallreduce */
} scn_opk;

/* Collective kinds (scn_slot.ckind). */
typedef enum scn_collk {
    SCOLL_BARRIER = 0,
    SCOLL_BCAST,
    SCOLL_REDUCE,
    SCOLL_ALLREDUCE,
    SCOLL_NKINDS
} scn_collk;

/* Reduction ops: quay_op_kind's predefined ones, and the scenario's user
 * op `affine` (non-commutative, uint64 only). */
#define SCN_OP_AFFINE QUAY_OP_USER

/* Kinds of slots (objects with per-run state). */
typedef enum scn_slotk {
    SLOT_SEND = 1,
    SLOT_RECV,   /* irecv */
    SLOT_MPROBE, /* a message taken by mprobe */
    SLOT_MRECV,  /* imrecv of a taken message */
    SLOT_PROBE,  /* iprobe / probe result */
    SLOT_COLL    /* a collective call's request */
} scn_slotk;

/* Slots that are requests (wait / free / waitall / the completion checks). */
static inline int scn_is_req(int kind)
{
    return kind == SLOT_SEND || kind == SLOT_RECV || kind == SLOT_MRECV ||
           kind == SLOT_COLL;
}

typedef struct scn_op {
    int kind;     /* scn_opk */
    int line;     /* source line */
    int slot;     /* slot made (ISEND, IRECV, MPROBE, MRECV, (I)PROBE) or
                     acted on (CANCEL, FREE, WAIT), else -1 */
    uint64_t size;/* ATTACH */
    int sync_idx; /* SYNC: which barrier; COMM_CREATE: comm index */
} scn_op;

typedef struct scn_slot {
    int kind;   /* scn_slotk */
    int rank;   /* world rank that owns it */
    int op;     /* index of the op that creates it */
    int line;
    char name[SCN_NAME_MAX]; /* "a", or "L12" for anonymous ones */
    int comm;   /* index in scn.comms */
    int32_t peer; /* comm rank / QUAY_ANY_SOURCE / QUAY_PROC_NULL */
    int32_t tag;  /* tag / QUAY_ANY_TAG */
    uint64_t size;/* SEND: length; RECV/MRECV: capacity */
    int mode;     /* SEND: quay_send_mode */
    int send_k;   /* SEND: k-th send of this rank (payload pattern) */
    int32_t peer_world; /* SEND: destination world rank; RECV: source
                           world rank; -1 any, -2 PROC_NULL */
    int32_t my_crank;   /* owner's rank in `comm` */
    int link;     /* MRECV: its MPROBE slot; MPROBE: its MRECV slot;
                     PROBE: receive slot that must get the probed message
                     (-1 none) */
    int waited;   /* some op waits for it explicitly */
    int cancelled;/* some `cancel` op names it (a send is then never sent
                     inline: there would be no request to cancel) */
    int has_expect;
    int expect_any;
    int32_t expect_err;
    int64_t expect_count; /* -1: not checked */
    int has_expect_src;   /* RECV / MRECV: status source checked */
    int has_expect_tag;   /* RECV / MRECV: status tag checked */
    int32_t expect_src;   /* comm rank or QUAY_PROC_NULL */
    int32_t expect_tag;
    size_t off;   /* SEND: offset of the payload in scn.payload;
                     RECV/MRECV: offset in the owner's receive arena;
                     COLL: its buffer (bcast) / receive buffer (reductions)
                     in the owner's arena */
    /* COLL */
    int ckind;    /* scn_collk */
    int cinst;    /* index in scn.cinst: the collective instance */
    int inplace;  /* reductions: QUAY_IN_PLACE at this rank */
    size_t off2;  /* reductions not in place: the send buffer (arena) */
} scn_slot;

/* One collective instance: the seq-th collective called on a communicator,
 * the same call at every member (checked at parse time). */
typedef struct scn_cinst {
    int comm;      /* index in scn.comms */
    int seq;       /* its number among the collectives on `comm` */
    int ckind;     /* scn_collk */
    int32_t root;  /* comm rank (bcast, reduce), else 0 */
    uint64_t size; /* bcast: bytes; reductions: elements */
    int dtype;     /* quay_dtype (reductions) */
    int opk;       /* quay_op_kind or SCN_OP_AFFINE (reductions) */
    int line;      /* the first statement that calls it ... */
    int first_rank;/* ... for this world rank */
    unsigned callers; /* bit w: world rank w calls it */
} scn_cinst;

typedef struct scn_comm {
    uint32_t ctx;
    unsigned lazy; /* bit r: rank r creates it with a comm_create op */
    int n;
    int32_t world[SCN_MAX_RANKS];   /* comm rank -> world rank */
    int32_t crank[SCN_MAX_RANKS];   /* world rank -> comm rank or -1 */
} scn_comm;

struct scn {
    char name[128];
    int nranks;
    /* engine configuration */
    size_t eager_max;
    size_t frag_size;
    uint32_t depth;
    uint32_t max_unexpected;   /* 0: automatic */
    size_t unexpected_bytes;   /* 0: engine default */
    uint32_t reorder_window;   /* 0: engine default */
    uint32_t max_requests;     /* 0: automatic */
    uint32_t max_out;          /* 0: automatic */
    uint32_t max_ctrl;         /* 0: automatic */
    uint32_t flags;
    int reorder;
    nicsim_fault_spec faults; /* config faults=...; zero: none */
    int flow;                 /* config flow=: QUAY_FLOW_NONE / _ACKNACK */
    int rndv;                 /* config rndv=: SCN_RNDV_* (0: copy, no RDMA caps) */
    int rtr;                  /* config rtr=1: receiver-initiated transfers;
                                 rtr=2: and ANY_SOURCE arbitration */
    /* collectives: config coll_*= (SCN_MIXED: drawn per seed) */
    int coll_alg[SCOLL_NKINDS]; /* QUAY_BARRIER_* ... (0: automatic) */
    int coll_degree;          /* 0: engine default */
    int64_t coll_segment;     /* bytes, 0: cost model */
    int coll_bypass;          /* config coll_bypass=0|1 (SCN_MIXED: drawn) */
    uint32_t coll_max;        /* 0: engine default */

    scn_cinst *cinst;         /* collective instances, in order of first call */
    int ncinst;
    int capcinst;
    int ncoll[SCN_MAX_COMMS][SCN_MAX_RANKS]; /* collectives called so far */
    uint32_t coll_reqs[SCN_MAX_RANKS]; /* engine requests the collectives
                                          of a rank may hold (sizing) */
    uint32_t coll_msgs;       /* messages of all collectives (sizing) */

    scn_comm comms[SCN_MAX_COMMS];
    int ncomms;

    scn_op *ops[SCN_MAX_RANKS];
    int nops[SCN_MAX_RANKS];
    int capops[SCN_MAX_RANKS];

    scn_slot *slots;
    int nslots;
    int capslots;

    int nsyncs;
    int nsends[SCN_MAX_RANKS];
    int nslots_rank[SCN_MAX_RANKS];
    int nincoming[SCN_MAX_RANKS];

    unsigned char *payload; /* all send payloads, precomputed */
    size_t payload_len;
    size_t arena_len[SCN_MAX_RANKS]; /* receive arena per rank */
    size_t attach_max[SCN_MAX_RANKS];
};

/* Byte i of the k-th send of rank s. */
static inline unsigned char scn_pattern(int s, int k, uint64_t i)
{
    uint64_t x = ((uint64_t)(unsigned)s << 56) ^ ((uint64_t)(unsigned)k << 40) ^ i;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 29;
    return (unsigned char)(x ^ (x >> 8));
}

/* Does the pattern (comm, src comm rank or ANY, tag or ANY) of receive-like
 * slot `r` match the envelope of send slot `m`? */
int scn_slot_matches(const scn *s, const scn_slot *r, const scn_slot *m);

/* ------------------------------------------------------------------ */
/* Run state                                                            */
/* ------------------------------------------------------------------ */

#define SCN_NEVER UINT64_MAX

typedef struct slot_dyn {
    quay_req *req;
    quay_msg *msg;       /* MPROBE: the taken message until mrecv */
    uint32_t id;
    uint8_t posted;
    uint8_t user_freed;  /* `free` op ran */
    uint8_t done_at_free;/* quay_req_test said complete at `free` */
    uint8_t released;    /* quay_req_free called after completion */
    uint8_t have_status;
    uint8_t cancel_called;
    uint8_t inline_sent; /* quay_send_inline / quay_recv_inline took it: no
                            request, it was over when the call returned */
    uint8_t probe_flag;  /* PROBE: found */
    uint8_t settled;     /* status read by scn_settle: the request was
                            complete when the run stopped, never waited */
    uint32_t completes;  /* COMPLETE actions seen */
    uint64_t post_t;
    uint64_t match_t;    /* RECV / MPROBE: time of the MATCH, or NEVER */
    uint64_t cancel_t;
    int match;           /* RECV / MPROBE / MRECV: index in run matches */
    int got;             /* RECV / MPROBE / MRECV: send slot received */
    int nrecv;           /* SEND: receives that got it */
    int recv_by;         /* SEND: the (last) receive slot that got it */
    uint32_t coll_done;  /* COLL: STATE -> DONE trace events (the schedule
                            finished; seen even when freed early) */
    uint64_t done_t;     /* COLL: time of that event */
    quay_status st;
} slot_dyn;

typedef struct match_rec {
    uint64_t t;
    int rank;   /* receiver */
    int slot;   /* RECV / MPROBE / MRECV slot */
    int32_t peer;
    uint32_t seq;
    uint32_t ctx;
    int32_t src;
    int32_t tag;
    int send;   /* resolved send slot, -1 */
    int in_call;/* matched inside the receive's own call (unexpected) */
} match_rec;

typedef struct seq_ent {
    uint32_t ctx;   /* SCN_CTX_COLL: a collective message */
    uint32_t seq;
    int slot;       /* send slot; -1: a collective message */
    uint32_t req_id;/* collective message: the engine's sending request */
    int nmatch;     /* collective message: MATCHes that named it */
} seq_ent;

/* A MATCH on a collective twin: an engine-owned receive of a schedule. */
typedef struct coll_match {
    uint64_t t;
    int rank;       /* receiver */
    int32_t peer;   /* sender (world rank) */
    uint32_t seq;
    uint32_t ctx;   /* the twin's context id */
    int32_t src;    /* comm rank */
    int32_t tag;
} coll_match;

/* The collective settings of one run (mixed ones drawn per seed). */
typedef struct coll_cfg {
    uint32_t alg[SCOLL_NKINDS];
    uint32_t degree; /* 0: engine default */
    size_t segment;
    uint32_t bypass; /* application bypass (quay_config.coll_bypass) */
} coll_cfg;

typedef struct seq_list {
    seq_ent *v;
    int n;
    int cap;
} seq_list;

typedef struct defer_ev {
    quay_trace_event ev;
    uint64_t t;
} defer_ev;

typedef struct rank_rt {
    struct scn_runner *run;
    int rank;
    quay_engine *e;
    quay_comm *comms[SCN_MAX_COMMS];
    int pc;
    int syncs;             /* barriers passed */
    uint64_t blocked_epoch;/* PROBE / MPROBE / DETACH retry gate */
    int in_call;
    int replaying;         /* handling the events deferred during a call */
    int improbe_slot;      /* MPROBE slot of the improbe in progress, or
                              RECV slot of a quay_recv_inline (their MATCH
                              events carry request id 0) */
    int call_slot;         /* SEND slot whose quay_isend is in progress */
    defer_ev *defer;
    int ndefer;
    int capdefer;
    unsigned char *arena;
    unsigned char *attach_buf;
    int attached;
    int quiesced;          /* context switch in progress (flow control) */
    int32_t seq_hi[SCN_MAX_RANKS]; /* highest channel seq sent to each peer
                                      (-1: none), frozen while quiesced */
    int *inl;              /* inline sends in call order (SEND slots) ... */
    int inl_head, inl_tail;/* ... [inl_head, inl_tail): packet not out yet */
    uint32_t *idmap_key;   /* open addressing: req id -> slot + 1 */
    int *idmap_val;
    uint32_t idmap_cap;    /* power of two */
} rank_rt;

typedef struct chooser {
    int script_mode;
    int diverged;    /* a script named a choice that did not exist */
    uint64_t rng[4];
    uint32_t wrank[SCN_MAX_RANKS];
    uint32_t wpull, wdeliver, wopdone;
    uint32_t wtimer; /* firing a due retransmission timer */
    uint32_t wswitch;/* quiescing a rank / resuming a stable one */
    const uint32_t *script;
    size_t nscript;
    /* fuzzing (scn_run_bytes): choices from these bytes, then from rng */
    const uint8_t *bytes;
    size_t nbytes;
    size_t bpos;
    /* recording (exhaustive) */
    uint32_t *taken;
    uint32_t *width;
    size_t depth;
    size_t cap;
} chooser;

struct scn_runner {
    const scn *s;
    nicsim *sim;
    rank_rt rk[SCN_MAX_RANKS];
    slot_dyn *dyn;
    match_rec *matches;
    int nmatches;
    int capmatches;
    seq_list seqs[SCN_MAX_RANKS][SCN_MAX_RANKS]; /* [sender][receiver] */
    uint64_t t;      /* event clock (orders everything) */
    uint64_t step;   /* scheduler steps */
    uint64_t seed;
    FILE *trace;
    int failed;
    char err[1024];
    chooser ch;
    uint32_t *fail_script; /* exhaustive: the failing run's choices */
    size_t fail_len;
    int *rank_slots[SCN_MAX_RANKS]; /* slots owned by each rank */
    int nrank_slots[SCN_MAX_RANKS];
    int outstanding[SCN_MAX_RANKS]; /* requests posted, not freed, no
                                       COMPLETE yet */
    int complete_actions; /* QUAY_CFG_COMPLETE_ACTIONS in use */
    uint64_t max_steps;
    uint64_t deferred; /* EAGAIN answers in the last run */
    uint64_t any_claimed, any_declined; /* arbitration, last run */
    nicsim_fault_spec faults_override; /* scn_runner_set_faults */
    int has_faults_override;
    nicsim_stats net; /* nicsim counters of the last run */
    int flow_override; /* scn_runner_set_flow: -1 none, else the mode */
    int flow;          /* flow-control mode of the current run */
    int rndv_override; /* scn_runner_set_rndv: -1 none, else SCN_RNDV_* */
    int rtr_override;  /* scn_runner_set_rtr: -1 none, else 0 / 1 */
    uint64_t rto_ns;   /* retransmission timeout of the current run */
    uint64_t tjump;    /* steps the clock jumped to reach a deadline */
    uint64_t timer_fires;    /* quay_on_time calls of the last run */
    uint64_t engine_rejects; /* packets the engines rejected (flow: only
                                corrupted ones may be) */
    uint64_t retransmits, nacks, dups_dropped; /* engines' flow counters */
    int switches_on;          /* scn_runner_set_switches */
    uint64_t switches;        /* quiesce -> stable -> resume, last run */
    uint64_t switches_forced; /* resumed unstable: nothing else could move */
    uint64_t restores;        /* contexts saved, replaced and restored */
    int qjumps;               /* clock jumps while a rank is quiesced */
    coll_match *cmatches;     /* MATCHes on collective twins, last run */
    int ncmatches;
    int capcmatches;
    coll_cfg coll;            /* collective algorithms of the current run */
    unsigned char *arena_image[SCN_MAX_RANKS]; /* a rank's arena as every
                                  run starts it: SCN_FILL, the collectives'
                                  root data and operands (NULL: all fill) */
    unsigned char *coll_expect;  /* the collectives' expected results ... */
    size_t *coll_expect_off;     /* ... instance g's at coll_expect_off[g] */
    uint64_t switches_refused;/* saves refused: a collective schedule ran */
    scn_config_fn cfg_hook;   /* scn_runner_set_config_hook */
    void *cfg_hook_ctx;
    uint32_t sends;           /* sends posted (inline or not), last run */
    uint32_t inline_sends;    /* of which quay_send_inline took */
    uint32_t inline_busy;     /* inline tries answered QUAY_EBUSY */
    uint32_t recv_inlines;    /* receives quay_recv_inline took */
    uint32_t recv_inline_busy;/* quay_recv_inline tries answered QUAY_EBUSY */
    uint32_t copied_sends;    /* isends QUAY_CFG_SEND_COPY took, last run */
};

/* Virtual time: every scheduler step is this many ns. */
#define SCN_NS_PER_STEP 1000u

/* A SEND event: fail the run if a quiesced rank sent a new channel seq. */
void scn_check_quiesced_send(scn_runner *run, int32_t rank, int32_t peer,
                             const void *data, uint64_t len);

/* The clock of the current run, in ns. */
uint64_t scn_now_ns(const scn_runner *run);

/* The fault spec in force for `run`. */
const nicsim_fault_spec *scn_run_faults(const scn_runner *run);
/* 0 if every rank named by `spec` is < nranks, else -1 with a message. */
int scn_faults_check(const nicsim_fault_spec *spec, int nranks, char *err,
                     size_t errlen);

/* Record the first failure of the current run (printf-style). */
void scn_fail(scn_runner *run, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Short name of a QUAY_E* code ("ETRUNCATE", "0"). */
const char *scn_errname(int code);

/* End-of-run checks (b)..(e) on the recorded run; calls scn_fail. */
void scn_check_run(scn_runner *run);
/* Before the engines go: record the status of every request that is
 * complete but was never waited for (a run that stopped early), so that
 * the summary shows the final state. */
void scn_settle(scn_runner *run);

/* scn_trace.c: bookkeeping of engine and simulator events */
const char *scn_mode_name(int mode);
void scn_fmt_rt(char *b, size_t n, int32_t v); /* rank/tag or any/null */
void scn_idmap_put(rank_rt *rk, uint32_t id, int slot);
void scn_call_begin(rank_rt *rk);   /* defer trace events ... */
void scn_call_end(scn_runner *run, rank_rt *rk); /* ... and handle them */
void scn_on_trace(void *ctx, const quay_trace_event *ev);
void scn_on_complete(void *ctx, int32_t rank, quay_req *req, void *user);
void scn_on_sim_event(void *ctx, const nicsim_event *ev);

/* scn_coll.c: collectives */
const char *scn_coll_name(int ckind);     /* "ibcast" */
const char *scn_dtype_name(int dtype);    /* "int32" */
const char *scn_op_name(int opk);         /* "sum", "affine" */
int scn_dtype_parse(const char *text, int *dtype);
int scn_op_parse(const char *text, int *opk);
size_t scn_dtype_size(int dtype);
/* Is op `opk` defined on `dtype`? */
int scn_op_valid(int opk, int dtype);
/* Algorithm of collective kind `ckind` by number or name ("tree",
 * "scatter", "rd", "mixed", ...); 0 or -1. */
int scn_coll_alg_parse(int ckind, const char *text, int *alg);
const char *scn_coll_alg_name(int ckind, uint32_t alg);
/* Bytes of a collective's buffer (bcast) or vector (reductions). */
uint64_t scn_coll_bytes(const scn *s, const scn_cinst *ci);
/* Runner creation: the arena images and the expected results (the same
 * for every seed). 0, or -1 (out of memory). */
int scn_coll_prepare(scn_runner *run);
/* Draw the run's collective settings (setup: before the engines). */
void scn_coll_setup(scn_runner *run, uint64_t seed);
/* Make the call of COLL slot `sl` (rank rk); the engine's return code. */
int scn_coll_call(scn_runner *run, rank_rt *rk, int sl, quay_req **req);
/* A MATCH on a collective twin (trace hook). */
void scn_coll_on_match(scn_runner *run, rank_rt *rk, const quay_trace_event *ev,
                       uint64_t t);
/* Is a schedule of rank r still running (a posted collective whose
 * request has not reached DONE)? */
int scn_coll_running(const scn_runner *run, int r);
/* End of run: the collectives' statuses, buffers and timing, and the
 * traffic on collective twins. */
void scn_coll_check_run(scn_runner *run);
void scn_coll_summary(const scn_runner *run, int sl, FILE *out);

/* scn_ops.c: the ranks' programs */
int scn_slot_finished(const scn_runner *run, int sl);
int scn_rank_enabled(const scn_runner *run, int r);
void scn_exec_op(scn_runner *run, int r);
void scn_finalize(scn_runner *run, int sl); /* record status, free */

#endif /* QUAY_SCN_INT_H */
