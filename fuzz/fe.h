/*
 * fe.h — the parts of fuzz_engine (fuzz_engine.c: set-up, checks, actions;
 * fe_peer.c: the fake peers; fe_calls.c: the API calls) share: bounds,
 * the harness state, and the functions one part calls in another.
 * fuzz_engine.h is the input language.
 */
#ifndef QUAY_FUZZ_FE_H
#define QUAY_FUZZ_FE_H

#include "fuzz.h"
#include "fuzz_engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <quay/quay_coll.h>

#include "engine/internal.h"
#include "engine/wire.h"
#include "flowctl/chan.h"
#include "flowctl/crc32c.h"

#define FE_MAX_REQS 48   /* requests the harness holds at once */
#define FE_MAX_MSGS 8    /* messages taken by improbe, not yet received */
#define FE_MAX_OUTS 32   /* packets the engine sent, remembered */
#define FE_OUT_MAX 1600  /* bytes remembered of each */
#define FE_MAX_PEND 512  /* op_done tokens held back */
#define FE_MAX_IDS 32    /* request ids, sequence numbers, slots harvested */
#define FE_MAX_KEYS 16   /* memory keys harvested */
#define FE_MAX_HIST 16   /* packets injected, for replays */
#define FE_RETX 16       /* a fake peer's retransmission store */
#define FE_MAX_KEEP 2048 /* buffers handed to the engine (freed at the end) */
#define FE_MAX_COMMS 4   /* communicators: the world and three more */
#define FE_GUARD 16      /* bytes checked after every receive buffer */
#define FE_FILL 0xA5     /* their value */
#define FE_PKT_MAX 2048  /* largest packet a fake peer builds */
#define FE_TRACE_MAP 512 /* request states followed per channel (power of two) */

enum { FR_SEND = 1, FR_RECV, FR_COLL, FR_RMA }; /* kinds of requests held */

typedef struct fe_req {
    quay_req *r; /* NULL: slot free */
    uint64_t serial;
    int kind;
    uint8_t *buf; /* receive: cap + FE_GUARD bytes */
    size_t cap;
    int completes;
    int persist;  /* quay_send_init / quay_recv_init: FE_TEST starts it again */
} fe_req;

typedef struct fe_out { /* a packet the engine sent */
    int32_t peer;
    size_t len;      /* engine packet bytes in b (frame stripped) */
    uint8_t b[FE_OUT_MAX];
    int ok;          /* wire_decode accepted it */
    wire_hdr h;
} fe_out;

typedef struct fe_hist { /* a packet injected */
    int32_t peer;
    size_t len;
    uint8_t *b;
} fe_hist;

typedef struct fe_peer {
    uint32_t tx_seq;    /* next envelope sequence it sends us */
    uint32_t chan_next; /* next channel sequence of its DATA frames */
    uint32_t eng_ack;   /* the engine's cumulative ACK to it */
    uint32_t rx_hi;     /* 1 + highest channel sequence the engine sent it */
    uint32_t next_id;   /* its fake request ids */
    uint8_t *retx[FE_RETX]; /* its last DATA frames, by seq % FE_RETX */
    size_t retx_len[FE_RETX];
    uint32_t retx_seq[FE_RETX];
} fe_peer;

typedef struct fe_rid { /* the receive id a fake receiver gave a send */
    int32_t peer;
    uint32_t sreq;
    uint32_t rreq;
} fe_rid;

typedef struct fe_grant { /* DATA a fake sender has sent for a CTS */
    int32_t peer;
    uint32_t rreq;
    uint32_t upto; /* fragments [0, upto) sent */
} fe_grant;

typedef struct fe_comm {
    quay_comm *c; /* NULL: free */
    uint32_t ctx;
    int32_t size;
    int32_t world[8];
} fe_comm;

/* Per-channel trace bookkeeping. */
typedef struct fe_trace {
    uint32_t id[FE_TRACE_MAP];
    int8_t state[FE_TRACE_MAP];
    uint8_t done[FE_TRACE_MAP];
    uint64_t rejects;
} fe_trace;

/* What a save captured besides the blob: the harness's view at that time. */
typedef struct fe_snap {
    uint8_t *blob;
    size_t len;
    uint32_t key;
    int ch;
    fe_req reqs[FE_MAX_REQS];
    quay_msg *msgs[FE_MAX_MSGS];
    fe_comm comms[FE_MAX_COMMS];
    uint32_t tx_seq[8], chan_next[8], eng_ack[8], rx_hi[8];
} fe_snap;

/* The harness: one engine, its fake peers and what the harness knows. */
typedef struct fe {
    quay_config cfg;
    fz_mem mem;      /* the engine's allocations */
    size_t base;     /* held right after creation (the memory bound's base) */
    int fail_armed;  /* an allocation may fail: fatal codes are allowed */
    int fail_create; /* this allocation of engine creation fails (0: none) */
    int dead;        /* a fatal code was returned: only free now */
    quay_engine *e;
    quay_engine *ch[QUAY_MAX_CHANNELS]; /* its channel handles */
    int nch;
    int n, me;       /* world size, this engine's rank */
    uint32_t crc[256];                  /* CRC32C table for frames */
    uint32_t key[QUAY_MAX_CHANNELS];    /* each channel's context key */
    uint64_t now;    /* the clock given to quay_on_time */
    uint64_t serial; /* user pointers of requests */
    fe_req reqs[FE_MAX_REQS];
    quay_msg *msgs[FE_MAX_MSGS];
    fe_comm comms[FE_MAX_COMMS];        /* [0]: the world */
    fe_peer peers[8];
    fe_out outs[FE_MAX_OUTS];           /* ring, outpos the next */
    int nouts, outpos;
    fe_hist hist[FE_MAX_HIST];          /* ring */
    int nhist, histpos;
    uint64_t pend[FE_MAX_PEND];         /* op_done tokens held back */
    int npend;
    uint64_t done_tok[8];               /* tokens already finished */
    int ndone_tok;
    fe_grant grants[8];
    int grantpos;
    fe_rid rids[8];
    int ridpos;
    uint32_t ids[FE_MAX_IDS];           /* harvested, ring */
    int nids, idpos;
    uint64_t keys[FE_MAX_KEYS];         /* harvested and registered, ring */
    int nkeys, keypos;
    void *keep[FE_MAX_KEEP];            /* buffers the engine may use */
    size_t keep_len[FE_MAX_KEEP];
    uint8_t keep_guard[FE_MAX_KEEP];    /* followed by FE_GUARD checked bytes */
    int nkeep;
    uint8_t *regbuf[4];                 /* memory for quay_mem_register */
    int attached;                       /* a buffered-send buffer is attached */
    fe_trace tr[QUAY_MAX_CHANNELS];
    fe_snap snap;                       /* the last save */
    int have_snap;
    uint64_t cookies[8]; /* OFFLOAD actions seen (host) */
    int ncookies;
    uint64_t agent_cookies[8]; /* quay_agent_post calls (agent) */
    int nagent;
    int32_t agent_world[8];
    uint64_t blob_fixed; /* saves compared after a restore */
    uint64_t ncompletes; /* COMPLETE actions */
} fe;

/** FUZZ_VERBOSE >= 2: print every operation, packet and trace event. */
extern int fe_verbose;

/** The codes the posting calls and the other calls may answer. */
extern const int fe_rc_post[];
extern const int fe_rc_inline[];
extern const int fe_rc_start[];
extern const int fe_rc_misc[];

/* fuzz_engine.c */
void fe_add_key(fe *f, uint64_t k);
void fe_check_rc(fe *f, const char *call, int rc, const int *allowed);
void fe_check_status(const fe_req *s, const quay_status *st);
fe_comm *fe_comm_pick(fe *f, uint8_t k);
int32_t fe_crank_of(const fe *f, uint32_t ctx, int32_t w);
uint8_t *fe_keep_alloc(fe *f, size_t n, int guard);
void fe_opdone(fe *f, uint64_t tok, int status);
void fe_pattern(uint8_t *b, size_t n, uint32_t seed);
int32_t fe_peer_of(const fe *f, uint8_t b);
uint32_t fe_pick32(fe *f, fz_in *in);
uint64_t fe_pick64(fe *f, fz_in *in);
fe_req *fe_req_pick(fe *f, fz_in *in);
fe_req *fe_req_slot(fe *f);
void fe_req_track(fe *f, fe_req *s, quay_req *r, int kind, uint8_t *buf, size_t cap);
void fe_start(fe *f, fe_req *s);
size_t fe_size_class(const fe *f, uint8_t c);
void fe_trace_clear(fe_trace *t);

/* fe_peer.c */
int fe_flow(const fe *f);
void fe_op_chan(fe *f, fz_in *in);
void fe_op_echo(fe *f, fz_in *in);
void fe_op_env(fe *f, fz_in *in);
void fe_op_forge(fe *f, fz_in *in);
void fe_op_raw(fe *f, fz_in *in);
void fe_op_replay(fe *f, fz_in *in);
void fe_op_respond(fe *f, fz_in *in);
uint32_t fe_frame_crc(const fe *f, int ch, int32_t from, int32_t to, const uint8_t *b, size_t n);
int fe_through_key(fe *f, int32_t p, uint64_t key, uint64_t off, uint64_t n, uint32_t access);

/* fe_calls.c */
void fe_op_buf(fe *f, fz_in *in);
void fe_op_coll(fe *f, fz_in *in);
void fe_op_comm(fe *f, fz_in *in);
void fe_op_ctx(fe *f, fz_in *in);
void fe_op_imrecv(fe *f, fz_in *in);
void fe_op_iprobe(fe *f, fz_in *in);
void fe_op_irecv(fe *f, fz_in *in);
void fe_op_isend(fe *f, fz_in *in);
void fe_op_mem(fe *f, fz_in *in);
void fe_op_opdone(fe *f, fz_in *in);
void fe_op_peerfail(fe *f, fz_in *in);
void fe_op_req(fe *f, fz_in *in, int what);
void fe_op_rma(fe *f, fz_in *in);
void fe_op_time(fe *f, fz_in *in);

#endif /* QUAY_FUZZ_FE_H */
