/*
 * snap.h — the context blob's walker: its state, its primitives and the
 * sections (layout in docs/flowctl.md).
 *
 * One walker describes the format once and runs in three modes: SAVE reads
 * the channel and writes the blob; CHECK reads the blob into scratch
 * objects and validates every field and cross-reference without touching
 * the channel; APPLY runs only after a clean CHECK, on an emptied channel,
 * and rebuilds the context in place. Objects the user holds (requests,
 * communicators, taken messages) return to the pool slots they had, so
 * their handles stay valid; lists are saved in order as slot indices and
 * rebuilt through the same insertion calls the protocols use.
 *
 * Integers are little-endian. Pointers to user memory (buffers, user
 * data, the attached buffer) are saved as addresses: a blob belongs to the
 * process that saved it. Everything else is checked.
 *
 * The machinery is engine/snap.c; each section lives beside the module it
 * serialises (engine/<module>_snap.c), the link's part of a peer record in
 * flowctl/fc_snap.c (reached through s->link, never called by name from
 * the engine); src/snapshot.c orders the sections, frames the blob
 * and runs the modes.
 */
#ifndef QUAY_ENGINE_SNAP_H
#define QUAY_ENGINE_SNAP_H

#include "engine/internal.h"

#define SNAP_NONE UINT32_MAX

enum { SNAP_SAVE, SNAP_CHECK, SNAP_APPLY };
/* Per peer (CHECK): what its arbitrated sends are (request_snap.c counts,
 * rtr_snap.c judges). */
enum { ARB_FLAG = 1, ARB_QUEUED = 2 };

/* Section tags (four characters, little-endian). */
#define SNAP_TAG(a, b, c, d) \
    ((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | (uint32_t)(d) << 24)
#define SEC_IDENT SNAP_TAG('I', 'D', 'N', 'T')
#define SEC_ENGINE SNAP_TAG('E', 'N', 'G', 'N')
#define SEC_REQIDS SNAP_TAG('R', 'I', 'D', 'S')
#define SEC_REGIONS SNAP_TAG('R', 'E', 'G', 'N')
#define SEC_COMMS SNAP_TAG('C', 'O', 'M', 'M')
#define SEC_REQS SNAP_TAG('R', 'E', 'Q', 'S')
#define SEC_MSGS SNAP_TAG('M', 'S', 'G', 'S')
#define SEC_PEERS SNAP_TAG('P', 'E', 'E', 'R')
#define SEC_CTRL SNAP_TAG('C', 'T', 'R', 'L')
#define SEC_RTR SNAP_TAG('R', 'T', 'R', 'S')

struct snap;

/* The link's part of each peer record (flow control: ACK/NACK, NACK
 * pacing, credits, keepalive probes), one contiguous run of it, and the
 * packets the link queues for a peer. The state is the link's own: the
 * engine names neither its fields nor its scratch, it calls only through
 * this table, which the driver sets (flowctl/fc_snap.h). */
typedef struct snap_link {
    /** Walk the link's run of peer p's record at its place. SAVE: from
     *  the link's state. CHECK: into scratch of the link's own, checked
     *  there (snap_corrupt: not sane, or not saved stable; `failed`: the
     *  peer was saved failed). APPLY, after a clean CHECK: into peer p's
     *  state, nothing queued, its timers moved on by delta (the clock ran
     *  on meanwhile). */
    void (*sx)(struct snap *s, int32_t p, uint8_t failed, uint64_t delta);
    /** CHECK, after sx of p: 1 if p as read, holding `held` messages'
     *  credit, would owe its peer something. */
    int (*owes)(const struct snap *s, int32_t p, uint32_t held);
    /** SAVE: the packets queued for p waiting for a sequence number, in
     *  order: the first (prev NULL) or the one after prev; NULL after the
     *  last. */
    const qout *(*queued)(const quay_engine *e, int32_t p, const qout *prev);
    /** APPLY: queue the restored packet o for its peer again, last. */
    void (*requeue)(quay_engine *e, qout *o);
} snap_link;

typedef struct snap {
    int mode;
    quay_engine *e;
    const snap_link *link;
    uint8_t *out;       /* SAVE: bytes past cap are counted, not written */
    size_t cap;
    const uint8_t *in;  /* CHECK / APPLY */
    size_t end;         /* current section's end */
    size_t pos;
    int err;            /* sticky: QUAY_ECORRUPT / QUAY_EFOREIGN / ENOMEM */
    /* CHECK bookkeeping (allocated for the check, NULL otherwise) */
    uint16_t *req_live; /* per slot: 1 live; 2/4/8/16 listed as posted / on
                           txq / on cq / on rdmaq; 32/64/128/256 its state
                           says it must be */
    uint32_t *req_nout; /* per slot: saved nout, then minus outs found */
    uint64_t *req_stamp;
    uint8_t *msg_live;
    uint8_t *rank_seen;
    uint8_t *region_seen;
    uint32_t *region_gen; /* per slot: generation read (CHECK) */
    uint8_t *region_int;  /* per slot: live and internal (CHECK) */
    uint32_t fin_owed;    /* requests holding a control slot for a FIN */
    uint32_t *credit_held; /* per peer: restored messages holding credit */
    uint8_t *comm_live;
    int32_t *comm_size; /* per comm slot: size (0 when not live) */
    uint32_t *slot_users; /* per announcement slot: RECV_ANY naming it */
    uint8_t *peer_arb;    /* per peer: ARB_FLAG / ARB_QUEUED sends to it */
    uint32_t *comm_ctx;
    /* values read from the blob */
    uint64_t saved_now, saved_stamp;
    size_t bs_len;
    uint32_t bs_blocks;     /* internal requests holding a block */
    uint32_t bs_nused;
    uint64_t ubytes;
    uint32_t nposted, ntxq, ncq, nrdma; /* flags counted over live requests */
} snap;

/* ---- primitives (snap.c) ---------------------------------------------------- */

/** Mark the blob corrupt (the first error sticks). */
static inline void snap_corrupt(snap *s)
{
    if (s->err == 0)
        s->err = QUAY_ECORRUPT;
}

/** n bytes: SAVE writes them, CHECK / APPLY read them (zeros past the
 *  section's end, which is corrupt). */
void snap_raw(snap *s, uint8_t *b, size_t n);
/** CHECK: step over n bytes of the blob. */
void snap_skip(snap *s, uint64_t n);
/** One integer of the blob, written from or read into *v. */
void sx_u64(snap *s, uint64_t *v);
void sx_u32(snap *s, uint32_t *v);
/** A u16 travels as a u32: a larger value is corrupt. */
void sx_u16(snap *s, uint16_t *v);
/** A size_t travels as a u64: one that does not fit is corrupt. */
void sx_size(snap *s, size_t *v);

static inline void sx_i32(snap *s, int32_t *v)
{
    uint32_t u = (uint32_t)*v;
    sx_u32(s, &u);
    *v = (int32_t)u;
}

static inline void sx_u8(snap *s, uint8_t *v)
{
    snap_raw(s, v, 1);
}

/* A pointer into user memory, kept as its address. */
#define SX_PTR(s, lv, type)                                  \
    do {                                                     \
        uint64_t pv_ = (uint64_t)(uintptr_t)(lv);            \
        sx_u64((s), &pv_);                                   \
        if ((s)->mode != SNAP_SAVE)                          \
            (lv) = (type)(uintptr_t)pv_;                     \
    } while (0)

/** A count of at most `max` things: n as saved, the count read (0 when
 *  over max, which is corrupt). */
uint32_t sx_count(snap *s, uint32_t n, uint32_t max);

/** 1 if i is no index into a pool of n slots (SNAP_NONE is one if
 *  none_ok). */
static inline int snap_bad_index(uint32_t i, uint32_t n, int none_ok)
{
    return i == SNAP_NONE ? !none_ok : i >= n;
}

/** A request's slot index in the blob (SNAP_NONE for none). */
static inline uint32_t snap_req_index(const quay_engine *e, const quay_req *r)
{
    return r == NULL ? SNAP_NONE : (uint32_t)(r - e->reqs);
}

/** Open a section (tag, body length, body): returns where SAVE patches
 *  the length; *outer_end keeps the enclosing end for snap_sec_end. */
size_t snap_sec_begin(snap *s, uint32_t tag, size_t *outer_end);
/** Close it: SAVE writes the length, CHECK / APPLY insist the body was
 *  read exactly. */
void snap_sec_end(snap *s, size_t at, size_t outer_end);

/* ---- sections, in blob order (each runs in every mode) ------------------------ */

/** IDNT (engine_snap.c): the config shaping state and wire; else QUAY_EFOREIGN. */
void snap_ident(snap *s);
/** ENGN (engine_snap.c): key, stamp, clock, keepalive, attached buffer. */
void snap_engine(snap *s);
/** RIDS (request_snap.c): every request slot's id (its generation). */
void snap_reqids(snap *s);
/** COMM (comm_snap.c): live communicators, rank maps, collective twins. */
void snap_comms(snap *s);
/** REGN (mem_snap.c): region generations, live regions (after COMM: scopes). */
void snap_regions(snap *s);
/** REQS (request_snap.c): live requests, then posted/txq/cq/rdmaq in order. */
void snap_reqs(snap *s);
/** MSGS (match_snap.c): unexpected (per comm, arrival order), orphans, taken. */
void snap_msgs(snap *s);
/** PEER (peer_snap.c): sequencing and s->link's run, held, queued packets. */
void snap_peers(snap *s);
/** CTRL (out_snap.c): queued control replies, FIN reservations fitting. */
void snap_ctrl(snap *s);
/** RTRS (rtr_snap.c): rtr queue, per-peer tables and log, arbitration slots. */
void snap_rtr(snap *s);

/* ---- shared between sections ---------------------------------------------------- */

/** One held message of `peer` (match_snap.c, for PEER): *prev_seq is the
 *  previous one's seq (held runs are sorted, ahead of rx_seq). */
void snap_held_msg(snap *s, umsg *src, int32_t peer, uint32_t *prev_seq);
/** qsort order of quay_req pointers by post stamp (request_snap.c). */
int snap_cmp_stamp(const void *a, const void *b);

#endif /* QUAY_ENGINE_SNAP_H */
