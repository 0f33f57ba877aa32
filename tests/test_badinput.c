/*
 * test_badinput.c — design.md §9 "Bad input": malformed, truncated,
 * oversized, replayed and out-of-state packets fed to quay_on_packet of
 * live engines on the FIFO test network, plus misuse of the call API.
 *
 * Every bad packet is checked for its exact code (QUAY_EPROTO syntax,
 * QUAY_ESTATE semantics, QUAY_EINVAL bad peer argument, QUAY_EAGAIN a bound
 * was hit: not consumed), for being counted once (pkts_rejected /
 * pkts_deferred) and traced (QUAY_TR_REJECT with its code and peer), and
 * for leaving no trace in the engine (requests, descriptors, held packets,
 * unexpected bytes, control queue and reserved slots, registered regions
 * unchanged; where a scenario names the requests a packet aims at, those
 * byte-for-byte unchanged). Each scenario then finishes its own
 * legitimate traffic and runs a normal eager + rendezvous exchange between
 * every pair of ranks, which must complete with correct data and leave
 * every engine's counters clean, with no legitimate packet rejected.
 *
 * Subtests named "regression: ..." reproduce engine bugs found while
 * writing this file (each comment says where and why); they failed on the
 * engine before those fixes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"
#include "engine/wire.h"
#include "harness.h"
#include "testnet.h"

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))
#define GEN1 (1u << REQ_IDX_BITS) /* one generation step of a request id */

static testnet T;
static int n_bad; /* distinct bad packets fed so far */

/* ---- trace: remember REJECT events per rank -------------------------------- */

typedef struct trec {
    int nrej;
    int code;
    int peer;
} trec;
static trec TR[TN_MAX_RANKS];

static void on_trace(void *ctx, const quay_trace_event *ev)
{
    trec *t = ctx;
    if (ev->kind == QUAY_TR_REJECT) {
        t->nrej++;
        t->code = ev->code;
        t->peer = ev->peer;
    }
}

/* op_done tokens held back by deliver_nodone() */
typedef struct pend {
    int from;
    uint64_t token;
} pend;
static pend PEND[64];
static int npend;

/* Requests a bad packet must leave byte-for-byte untouched: expect_raw
 * compares them (watch() sets them, setup and finish clear them). */
static quay_req *WATCH[4];
static size_t nwatch;

static void watch(quay_req *a, quay_req *b, quay_req *c)
{
    quay_req *w[] = {a, b, c};
    nwatch = 0;
    for (size_t k = 0; k < COUNT_OF(w); k++)
        if (w[k] != NULL)
            WATCH[nwatch++] = w[k];
}

/* ---- setup and teardown ---------------------------------------------------------- */

static size_t max_packet_of(const quay_config *c)
{
    size_t body = c->eager_max > c->frag_size ? c->eager_max : c->frag_size;
    return c->max_packet ? c->max_packet : body + QUAY_MAX_HEADER;
}

/* cfg[0..n) when per_rank, else cfg[0] for every rank. */
static int setup_each(int n, const quay_config *cfg, int per_rank)
{
    int rc = tn_init_each(&T, n, cfg, per_rank);
    memset(TR, 0, sizeof TR);
    npend = 0;
    nwatch = 0;
    for (int r = 0; r < T.n; r++)
        if (T.e[r])
            quay_set_trace(T.e[r], on_trace, &TR[r]);
    return ok_msg(rc == 0, "setup %d engines: %s", n, quay_strerror(rc));
}

static int setup_cfg(int n, const quay_config *cfg)
{
    quay_config def;
    if (cfg == NULL) {
        tn_config(&def, 0, n);
        def.malformed_limit = 0; /* (refusals are this test's subject) */
        cfg = &def;
    }
    return setup_each(n, cfg, 0);
}

static int setup(int n) { return setup_cfg(n, NULL); }

/* A normal eager + rendezvous exchange between every ordered pair of the
 * ranks in `mask`. */
static void exchange_among(unsigned mask)
{
    static uint8_t sb[1000], rb[1000], eb[100], erb[100];
    int all = 1;
    for (int a = 0; a < T.n; a++) {
        for (int b = 0; b < T.n; b++) {
            if (a == b || !(mask >> a & 1u) || !(mask >> b & 1u))
                continue;
            tn_fill(sb, sizeof sb, a * 8 + b);
            tn_fill(eb, sizeof eb, a * 8 + b + 100);
            memset(rb, 0, sizeof rb);
            memset(erb, 0, sizeof erb);
            quay_req *rr = NULL, *re = NULL, *sr = NULL, *se = NULL;
            int rc = 0;
            rc |= quay_irecv(T.e[b], T.world[b], rb, sizeof rb, a, 30001, &rr);
            rc |= quay_isend(T.e[a], T.world[a], eb, sizeof eb, b, 30000,
                             QUAY_SEND_STANDARD, &se);
            rc |= quay_isend(T.e[a], T.world[a], sb, sizeof sb, b, 30001,
                             QUAY_SEND_STANDARD, &sr);
            tn_pump(&T);
            rc |= quay_irecv(T.e[b], T.world[b], erb, sizeof erb, a, 30000, &re);
            tn_pump(&T);
            int pass = rc == 0 && tn_good(rr, sizeof rb) && tn_good(re, sizeof erb) &&
                       tn_good(sr, sizeof sb) && tn_good(se, sizeof eb) &&
                       memcmp(sb, rb, sizeof sb) == 0 && memcmp(eb, erb, sizeof eb) == 0;
            if (!pass) {
                all = 0;
                note("exchange %d -> %d failed: rc %d, done %d %d %d %d", a, b, rc,
                     tn_done(rr, NULL), tn_done(re, NULL), tn_done(sr, NULL), tn_done(se, NULL));
            }
            quay_req_free(T.e[b], rr);
            quay_req_free(T.e[b], re);
            quay_req_free(T.e[a], sr);
            quay_req_free(T.e[a], se);
        }
    }
    ok_msg(all, "normal eager + rendezvous exchange between ranks %#x completes", mask);
}

static void exchange(void) { exchange_among((1u << T.n) - 1); }

/* Every engine idle: nothing held, queued or allocated; no legit packet
 * was rejected; not fatal. */
static void clean(void)
{
    int all = 1;
    for (int r = 0; r < T.n; r++) {
        quay_stats st;
        quay_action a;
        quay_engine_stats(T.e[r], &st);
        int next = quay_next_action(T.e[r], &a);
        if (st.reqs_in_use || st.umsgs_in_use || st.outs_in_use || st.bytes_unexpected ||
            st.held_out_of_order || st.ctrl_queued || st.ctrl_reserved ||
            st.regions_in_use || next != 0) {
            all = 0;
            note("rank %d: reqs %u umsgs %u outs %u bytes %llu held %u ctrl %u+%u regions %u "
                 "next %d",
                 r, st.reqs_in_use, st.umsgs_in_use, st.outs_in_use,
                 (unsigned long long)st.bytes_unexpected, st.held_out_of_order,
                 st.ctrl_queued, st.ctrl_reserved, st.regions_in_use, next);
        }
    }
    ok_msg(all, "every engine clean afterwards");
    ok_msg(T.rejects == 0, "no legitimate packet rejected (%d)", T.rejects);
}

static void flush_pending(void);

static void finish(void)
{
    T.auto_done = 1;
    nwatch = 0;
    flush_pending();
    tn_done_all(&T);
    tn_pump(&T);
    exchange();
    clean();
    tn_fini(&T);
}

/* ---- packets ---------------------------------------------------------------------- */

typedef struct pkt {
    uint8_t *b;
    size_t len;
    int from, to;
} pkt;

static int find(int type, int from, int to)
{
    for (int i = 0; i < T.nq; i++)
        if ((type == 0 || tn_type(&T, i) == type) && T.q[i].from == from &&
            T.q[i].to == to)
            return i;
    return -1;
}

/* A copy of in-flight packet i (left in flight). */
static pkt grab(int i)
{
    pkt p = {NULL, 0, -1, -1};
    if (i < 0 || i >= T.nq)
        return p;
    p.len = T.q[i].len;
    p.b = malloc(p.len ? p.len : 1);
    memcpy(p.b, T.q[i].bytes, p.len);
    p.from = T.q[i].from;
    p.to = T.q[i].to;
    return p;
}

/* Remove in-flight packet i from the network (its sender gets op_done)
 * and hand it to the test. */
static pkt take(int i)
{
    pkt p = {NULL, 0, -1, -1};
    if (i < 0 || i >= T.nq)
        return p;
    tn_pkt q = T.q[i];
    memmove(&T.q[i], &T.q[i + 1], (size_t)(T.nq - i - 1) * sizeof T.q[0]);
    T.nq--;
    if (!q.done)
        quay_on_op_done(T.e[q.from], q.token, 0);
    p.b = q.bytes;
    p.len = q.len;
    p.from = q.from;
    p.to = q.to;
    return p;
}

/* Deliver in-flight packet i but keep its sender's op_done pending (the
 * wire has not "finished" with it yet); flush_pending() gives it later. */
static int deliver_nodone(int i)
{
    tn_pkt q = T.q[i];
    memmove(&T.q[i], &T.q[i + 1], (size_t)(T.nq - i - 1) * sizeof T.q[0]);
    T.nq--;
    if (!q.done && npend < (int)COUNT_OF(PEND)) {
        PEND[npend].from = q.from;
        PEND[npend++].token = q.token;
    }
    int rc = quay_on_packet(T.e[q.to], q.from, q.bytes, q.len);
    if (rc == QUAY_EPROTO || rc == QUAY_ESTATE)
        T.rejects++;
    free(q.bytes);
    return rc;
}

static void flush_pending(void)
{
    for (int i = 0; i < npend; i++)
        quay_on_op_done(T.e[PEND[i].from], PEND[i].token, 0);
    npend = 0;
}

static void pkt_free(pkt *p)
{
    free(p->b);
    p->b = NULL;
}

/* Feed bytes from an exact-size heap copy (ASan sees any over-read). */
static int inj_raw(int to, int from, const void *b, size_t len)
{
    uint8_t *c = malloc(len ? len : 1);
    if (len)
        memcpy(c, b, len);
    int rc = quay_on_packet(T.e[to], from, c, len);
    free(c);
    return rc;
}

static int offer(const pkt *p) { return inj_raw(p->to, p->from, p->b, p->len); }

static size_t encode(const wire_hdr *h, const void *pl, size_t plen, uint8_t *out)
{
    size_t hl = wire_encode(h, out);
    if (plen)
        memcpy(out + hl, pl, plen);
    return hl + plen;
}

static int inj(int to, int from, const wire_hdr *h, const void *pl, size_t plen)
{
    static uint8_t buf[QUAY_MAX_HEADER + 2048];
    return inj_raw(to, from, buf, encode(h, pl, plen, buf));
}

/* Pull exactly one action of rank r into the network (tn_pull takes all). */
static int pull_one(int r)
{
    quay_action a;
    int rc = quay_next_action(T.e[r], &a);
    if (rc != 1)
        return rc;
    if (a.kind == QUAY_ACT_COMPLETE) {
        T.ncomplete[r]++;
        return 1;
    }
    tn_pkt *p = &T.q[T.nq++];
    p->from = r;
    p->to = a.peer;
    p->len = 0;
    for (uint32_t i = 0; i < a.iovcnt; i++)
        p->len += a.iov[i].len;
    p->bytes = malloc(p->len ? p->len : 1);
    size_t off = 0;
    for (uint32_t i = 0; i < a.iovcnt; i++) {
        memcpy(p->bytes + off, a.iov[i].base, a.iov[i].len);
        off += a.iov[i].len;
    }
    p->token = a.token;
    p->done = 0;
    if (T.auto_done) {
        quay_on_op_done(T.e[r], a.token, 0);
        p->done = 1;
    }
    return 1;
}

/*
 * Feed one bad packet and check the verdict: the exact code, counted once
 * as rejected (EPROTO/ESTATE) or deferred (EAGAIN) or not at all (EINVAL),
 * a REJECT trace event for rejections, and no change to the engine's
 * resources.
 */
static void expect_raw(int to, int from, const void *b, size_t len, int want,
                       const char *what)
{
    quay_stats a, z;
    static quay_req snap[COUNT_OF(WATCH)];
    for (size_t k = 0; k < nwatch; k++)
        memcpy(&snap[k], WATCH[k], sizeof snap[k]);
    quay_engine_stats(T.e[to], &a);
    trec tr0 = TR[to];
    int rc = inj_raw(to, from, b, len);
    quay_engine_stats(T.e[to], &z);
    n_bad++;
    if (!ok_msg(rc == want, "%s: %s", what, quay_strerror(rc)))
        note("got %d (%s), want %d (%s)", rc, quay_strerror(rc), want, quay_strerror(want));
    int rejected = want == QUAY_EPROTO || want == QUAY_ESTATE;
    int counted = z.pkts_rejected - a.pkts_rejected == (uint64_t)rejected &&
                  z.pkts_deferred - a.pkts_deferred == (uint64_t)(want == QUAY_EAGAIN) &&
                  z.pkts_in == a.pkts_in;
    int traced = rejected ? TR[to].nrej == tr0.nrej + 1 && TR[to].code == want &&
                                TR[to].peer == from
                          : TR[to].nrej == tr0.nrej;
    int unchanged = z.reqs_in_use == a.reqs_in_use && z.umsgs_in_use == a.umsgs_in_use &&
                    z.bytes_unexpected == a.bytes_unexpected &&
                    z.held_out_of_order == a.held_out_of_order &&
                    z.ctrl_queued == a.ctrl_queued && z.outs_in_use == a.outs_in_use &&
                    z.ctrl_reserved == a.ctrl_reserved && z.regions_in_use == a.regions_in_use;
    if (!ok_msg(counted && traced && unchanged, "%s: accounted, traced, no side effect", what))
        note("counted %d traced %d unchanged %d", counted, traced, unchanged);
    if (nwatch == 0)
        return;
    size_t k = 0;
    while (k < nwatch && memcmp(&snap[k], WATCH[k], sizeof snap[k]) == 0)
        k++;
    if (!ok_msg(k == nwatch, "%s: requests untouched", what))
        note("request %#x: state %s -> %s, flags %#x -> %#x, error %d -> %d", WATCH[k]->id,
             quay_state_name(snap[k].state), quay_state_name(WATCH[k]->state),
             snap[k].flags, WATCH[k]->flags, snap[k].status.error, WATCH[k]->status.error);
}

static void expect(int to, int from, const wire_hdr *h, const void *pl, size_t plen,
                   int want, const char *what)
{
    static uint8_t buf[QUAY_MAX_HEADER + 2048];
    expect_raw(to, from, buf, encode(h, pl, plen, buf), want, what);
}

static void expect_pkt(const pkt *p, int want, const char *what)
{
    expect_raw(p->to, p->from, p->b, p->len, want, what);
}

/* ---- header builders ------------------------------------------------------------------ */

static wire_hdr mk(uint8_t type)
{
    wire_hdr h;
    memset(&h, 0, sizeof h);
    h.type = type;
    return h;
}

static wire_hdr env(uint8_t type, uint32_t seq, uint32_t ctx, int32_t src, int32_t tag,
                    uint32_t sreq, uint64_t len)
{
    wire_hdr h = mk(type);
    h.seq = seq;
    h.ctx = ctx;
    h.src = src;
    h.tag = tag;
    h.sreq = sreq;
    h.len = len;
    return h;
}

static wire_hdr cts(uint32_t sreq, uint32_t rreq, uint32_t grant, uint32_t frag,
                    uint32_t index, uint64_t len)
{
    wire_hdr h = mk(QUAY_PKT_CTS);
    h.sreq = sreq;
    h.rreq = rreq;
    h.grant = grant;
    h.frag = frag;
    h.index = index;
    h.len = len;
    return h;
}

static wire_hdr data(uint32_t rreq, uint64_t off)
{
    wire_hdr h = mk(QUAY_PKT_DATA);
    h.rreq = rreq;
    h.offset = off;
    return h;
}

static wire_hdr ack(uint8_t type, uint32_t sreq, int32_t status)
{
    wire_hdr h = mk(type);
    h.sreq = sreq;
    h.status = status;
    return h;
}

static wire_hdr creq(uint32_t seq, uint32_t ctx, uint32_t sreq, uint32_t target)
{
    wire_hdr h = mk(QUAY_PKT_CANCEL_REQ);
    h.seq = seq;
    h.ctx = ctx;
    h.sreq = sreq;
    h.target = target;
    return h;
}

/* A CTS carrying the receiver's key (PUT rendezvous). */
static wire_hdr kcts(uint32_t sreq, uint32_t rreq, uint32_t grant, uint32_t frag,
                     uint32_t index, uint64_t len, uint64_t key)
{
    wire_hdr h = cts(sreq, rreq, grant, frag, index, len);
    h.flags = WIRE_F_KEY;
    h.key = key;
    return h;
}

/* flags: WIRE_F_TO_RECV (from the PUT sender) or 0 (from the GET receiver). */
static wire_hdr fin(uint32_t sreq, uint32_t rreq, int32_t status, uint16_t flags)
{
    wire_hdr h = mk(QUAY_PKT_FIN);
    h.flags = flags;
    h.sreq = sreq;
    h.rreq = rreq;
    h.status = status;
    return h;
}

/* ---- quay_on_packet arguments --------------------------------------------------------- */

static void t_peer_args(void)
{
    if (!setup(3))
        return;
    uint8_t b[QUAY_MAX_HEADER];
    wire_hdr h = ack(QUAY_PKT_ACK, GEN1 | 3, 0);
    size_t n = wire_encode(&h, b);
    expect_raw(1, -1, b, n, QUAY_EINVAL, "peer -1");
    expect_raw(1, 3, b, n, QUAY_EINVAL, "peer == nranks");
    expect_raw(1, INT32_MIN, b, n, QUAY_EINVAL, "peer INT32_MIN");
    expect_raw(1, INT32_MAX, b, n, QUAY_EINVAL, "peer INT32_MAX");
    is_int(quay_on_packet(T.e[1], 0, NULL, 12), QUAY_EINVAL);
    is_int(quay_on_packet(NULL, 0, b, n), QUAY_EINVAL);
    is_int(quay_on_packet(T.e[1], 0, NULL, 0), QUAY_EPROTO);
    finish();
}

/* ---- syntax: one malformed packet per case, fresh engines each ------------------------ */

/* Fill b with syntax case i; returns its length, or -1 past the last. */
static long syntax_case(int i, uint8_t *b, const char **what)
{
    static const uint8_t pl[10] = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0};
    wire_hdr e = env(QUAY_PKT_EAGER, 0, 0, 0, 1, 0, sizeof pl);
    wire_hdr r = env(QUAY_PKT_RTS, 0, 0, 0, 1, GEN1 | 1, 5000);
    wire_hdr c = cts(GEN1 | 1, GEN1 | 2, 1, 128, 1, 1000);
    wire_hdr d = data(GEN1 | 2, 0);
    wire_hdr a = ack(QUAY_PKT_ACK, GEN1 | 1, 0);
    wire_hdr q = creq(0, 0, GEN1 | 1, 0);
    wire_hdr p = ack(QUAY_PKT_CANCEL_REP, GEN1 | 1, 0);
    wire_hdr f = fin(GEN1 | 1, GEN1 | 2, 0, 0);
    size_t n;
    switch (i) {
    case 0: *what = "empty packet"; return 0;
    case 1: *what = "1 byte"; b[0] = 1; return 1;
    case 2: *what = "3 bytes"; b[0] = 1; b[1] = 1; b[2] = 0; return 3;
    case 3: *what = "version 0"; n = encode(&e, pl, 10, b); b[0] = 0; return (long)n;
    case 4: *what = "version 2"; n = encode(&e, pl, 10, b); b[0] = 2; return (long)n;
    case 5: *what = "type 0"; memset(b, 0, 48); b[0] = 1; return 48;
    case 6: *what = "type 8 (FIN) with zero ids and a payload"; memset(b, 0, 48); b[0] = 1; b[1] = 8; return 48;
    case 7: *what = "type 255"; memset(b, 0, 48); b[0] = 1; b[1] = 255; return 48;
    case 8: *what = "EAGER header truncated"; encode(&e, NULL, 0, b); return 31;
    case 9: *what = "EAGER len > payload"; e.len = 11; return (long)encode(&e, pl, 10, b);
    case 10: *what = "EAGER len < payload"; e.len = 9; return (long)encode(&e, pl, 10, b);
    case 11: *what = "EAGER len UINT64_MAX"; e.len = UINT64_MAX; return (long)encode(&e, pl, 10, b);
    case 12: *what = "EAGER len 2^32 + payload"; e.len = (1ull << 32) + 10; return (long)encode(&e, pl, 10, b);
    case 13: *what = "EAGER src -1"; e.src = -1; return (long)encode(&e, pl, 10, b);
    case 14: *what = "EAGER tag INT32_MIN"; e.tag = INT32_MIN; return (long)encode(&e, pl, 10, b);
    case 15: *what = "EAGER unknown flag 0x4"; e.flags = 4; return (long)encode(&e, pl, 10, b);
    case 16: *what = "sync EAGER with sreq 0"; e.flags = WIRE_F_SYNC; return (long)encode(&e, pl, 10, b);
    case 17: *what = "RTS with sreq 0"; r.sreq = 0; return (long)encode(&r, NULL, 0, b);
    case 18: *what = "RTS with a payload byte"; n = encode(&r, NULL, 0, b); b[n] = 0; return (long)n + 1;
    case 19: *what = "RTS tag -1"; r.tag = -1; return (long)encode(&r, NULL, 0, b);
    case 20: *what = "CTS rreq 0"; c.rreq = 0; return (long)encode(&c, NULL, 0, b);
    case 21: *what = "CTS frag 0"; c.frag = 0; return (long)encode(&c, NULL, 0, b);
    case 22: *what = "CTS index 0"; c.index = 0; return (long)encode(&c, NULL, 0, b);
    case 23: *what = "CTS flags 1"; c.flags = 1; return (long)encode(&c, NULL, 0, b);
    case 24: *what = "CTS truncated"; encode(&c, NULL, 0, b); return 31;
    case 25: *what = "DATA with empty payload"; return (long)encode(&d, NULL, 0, b);
    case 26: *what = "DATA rreq 0"; d.rreq = 0; return (long)encode(&d, pl, 10, b);
    case 27: *what = "DATA header truncated"; encode(&d, NULL, 0, b); return 15;
    case 28: *what = "ACK status 1"; a.status = 1; return (long)encode(&a, NULL, 0, b);
    case 29: *what = "ACK status QUAY_EPEER"; a.status = QUAY_EPEER; return (long)encode(&a, NULL, 0, b);
    case 30: *what = "ACK with one extra byte"; n = encode(&a, NULL, 0, b); b[n] = 0; return (long)n + 1;
    case 31: *what = "ACK sreq 0"; a.sreq = 0; return (long)encode(&a, NULL, 0, b);
    case 32: *what = "CANCEL_REQ sreq 0"; q.sreq = 0; return (long)encode(&q, NULL, 0, b);
    case 33: *what = "CANCEL_REQ truncated"; encode(&q, NULL, 0, b); return 19;
    case 34: *what = "CANCEL_REP status 2"; p.status = 2; return (long)encode(&p, NULL, 0, b);
    case 35: *what = "CANCEL_REP status -1"; p.status = -1; return (long)encode(&p, NULL, 0, b);
    case 36: *what = "CANCEL_REP with one extra byte"; n = encode(&p, NULL, 0, b); b[n] = 0; return (long)n + 1;
    case 37: *what = "EAGER with flag KEY"; e.flags = WIRE_F_KEY; return (long)encode(&e, pl, 10, b);
    case 38: *what = "EAGER with flag PUT_OK"; e.flags = WIRE_F_PUT_OK; return (long)encode(&e, pl, 10, b);
    case 39: *what = "RTS unknown flag 0x10"; r.flags = 0x10; return (long)encode(&r, NULL, 0, b);
    case 40: *what = "keyed RTS without its key"; r.flags = WIRE_F_KEY; encode(&r, NULL, 0, b); return WIRE_ENV_LEN;
    case 41: *what = "keyed RTS, key truncated"; r.flags = WIRE_F_KEY; r.key = 5; encode(&r, NULL, 0, b); return WIRE_ENV_LEN + 7;
    case 42: *what = "RTS: key bytes without flag KEY"; r.key = 5; n = encode(&r, NULL, 0, b); memset(b + n, 1, 8); return (long)n + 8;
    case 43: *what = "keyed RTS, sync and ready"; r.flags = WIRE_F_KEY | WIRE_F_SYNC | WIRE_F_READY; r.key = 5; return (long)encode(&r, NULL, 0, b);
    case 44: *what = "keyed CTS without its key"; c.flags = WIRE_F_KEY; encode(&c, NULL, 0, b); return WIRE_CTS_LEN;
    case 45: *what = "CTS with flag PUT_OK"; c.flags = WIRE_F_PUT_OK; return (long)encode(&c, NULL, 0, b);
    case 46: *what = "keyed CTS with one extra byte"; c.flags = WIRE_F_KEY; c.key = 5; n = encode(&c, NULL, 0, b); b[n] = 0; return (long)n + 1;
    case 47: *what = "keyed CTS, rreq 0"; c.flags = WIRE_F_KEY; c.key = 5; c.rreq = 0; return (long)encode(&c, NULL, 0, b);
    case 48: *what = "FIN sreq 0"; f.sreq = 0; return (long)encode(&f, NULL, 0, b);
    case 49: *what = "FIN rreq 0"; f.rreq = 0; return (long)encode(&f, NULL, 0, b);
    case 50: *what = "FIN flag 0x2"; f.flags = 2; return (long)encode(&f, NULL, 0, b);
    case 51: *what = "FIN flag KEY"; f.flags = WIRE_F_KEY; return (long)encode(&f, NULL, 0, b);
    case 52: *what = "FIN status 1"; f.status = 1; return (long)encode(&f, NULL, 0, b);
    case 53: *what = "FIN status QUAY_ETRUNCATE"; f.status = QUAY_ETRUNCATE; return (long)encode(&f, NULL, 0, b);
    case 54: *what = "FIN status QUAY_ENOTPOSTED"; f.status = QUAY_ENOTPOSTED; return (long)encode(&f, NULL, 0, b);
    case 55: *what = "FIN truncated"; encode(&f, NULL, 0, b); return WIRE_FIN_LEN - 1;
    case 56: *what = "FIN with one extra byte"; n = encode(&f, NULL, 0, b); b[n] = 0; return (long)n + 1;
    default: return -1;
    }
}

/* Each case twice: with nothing posted, and with receives posted that
 * the packet's envelope would match (the in-order EAGER fast path only
 * runs when a receive is waiting). */
static void t_syntax(void)
{
    uint8_t b[128], rb[3][64];
    const char *what = "";
    long n;
    for (int posted = 0; posted < 2; posted++) {
        for (int i = 0; (n = syntax_case(i, b, &what)) >= 0; i++) {
            if (!setup(2))
                return;
            quay_req *r[3] = {NULL, NULL, NULL};
            if (posted) {
                quay_irecv(T.e[1], T.world[1], rb[0], 64, 0, 1, &r[0]);
                quay_irecv(T.e[1], T.world[1], rb[1], 64, QUAY_ANY_SOURCE, 1, &r[1]);
                quay_irecv(T.e[1], T.world[1], rb[2], 64, QUAY_ANY_SOURCE, QUAY_ANY_TAG,
                           &r[2]);
            }
            char w[120];
            snprintf(w, sizeof w, "%s%s", what, posted ? " (receives posted)" : "");
            expect_raw(1, 0, b, (size_t)n, QUAY_EPROTO, w);
            for (int k = 0; k < 3 && posted; k++) {
                ok_msg(!tn_done(r[k], NULL), "%s: receive %d untouched", w, k);
                quay_cancel(T.e[1], r[k]);
                quay_req_free(T.e[1], r[k]);
            }
            finish();
        }
    }
}

/* ---- sequencing: replays, duplicates, window ---------------------------------------- */

static void t_replay_eager(void)
{
    if (!setup(2))
        return;
    uint8_t sb[50], rb[64], rb2[64];
    tn_fill(sb, sizeof sb, 1);
    quay_req *r, *s, *r2;
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 1, &r);
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 1, QUAY_SEND_STANDARD, &s);
    tn_pull_all(&T);
    int i = find(QUAY_PKT_EAGER, 0, 1);
    pkt p = grab(i);
    is_int(tn_deliver(&T, i), 0);
    ok(tn_good(r, sizeof sb));
    expect_pkt(&p, QUAY_ESTATE, "replayed EAGER (it had matched a posted receive)");
    quay_irecv(T.e[1], T.world[1], rb2, sizeof rb2, 0, 1, &r2);
    ok_msg(!tn_done(r2, NULL), "the replay was not delivered a second time");
    quay_cancel(T.e[1], r2);
    quay_req_free(T.e[1], r2);
    quay_req_free(T.e[1], r);
    quay_req_free(T.e[0], s);
    pkt_free(&p);

    /* The same while the original waits as an unexpected message. */
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 2, QUAY_SEND_SYNC, &s);
    tn_pull_all(&T);
    i = find(QUAY_PKT_EAGER, 0, 1);
    p = grab(i);
    is_int(tn_deliver(&T, i), 0);
    expect_pkt(&p, QUAY_ESTATE, "replayed sync EAGER (still unexpected)");
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 2, &r);
    ok(tn_good(r, sizeof sb));
    int flag = 1;
    quay_iprobe(T.e[1], T.world[1], QUAY_ANY_SOURCE, QUAY_ANY_TAG, &flag, NULL);
    ok_msg(!flag, "no second copy to probe");
    tn_pump(&T);
    ok(tn_good(s, sizeof sb));
    expect_pkt(&p, QUAY_ESTATE, "replayed sync EAGER after its ACK");
    quay_req_free(T.e[1], r);
    quay_req_free(T.e[0], s);
    pkt_free(&p);
    finish();
}

static void t_replay_rts(void)
{
    if (!setup(2))
        return;
    static uint8_t sb[1000], rb[1000];
    tn_fill(sb, sizeof sb, 2);
    quay_req *s, *r;
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 3, QUAY_SEND_STANDARD, &s);
    tn_pull_all(&T);
    int i = find(QUAY_PKT_RTS, 0, 1);
    pkt p = grab(i);
    is_int(tn_deliver(&T, i), 0);
    expect_pkt(&p, QUAY_ESTATE, "replayed RTS (unexpected)");
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 3, &r);
    tn_pump(&T);
    ok(tn_good(r, sizeof rb) && memcmp(sb, rb, sizeof sb) == 0);
    ok(tn_good(s, sizeof sb));
    expect_pkt(&p, QUAY_ESTATE, "replayed RTS after the transfer");
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);
    pkt_free(&p);
    finish();
}

static void t_replay_cancel_req(void)
{
    if (!setup(2))
        return;
    uint8_t sb[50];
    tn_fill(sb, sizeof sb, 3);
    quay_req *s;
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 2, QUAY_SEND_STANDARD, &s);
    is_int(quay_cancel(T.e[0], s), 0);
    tn_pull_all(&T);
    pkt p = grab(find(QUAY_PKT_CANCEL_REQ, 0, 1));
    ok(p.b != NULL);
    tn_pump(&T);
    quay_status st;
    ok(tn_done(s, &st) && st.cancelled);
    expect_pkt(&p, QUAY_ESTATE, "replayed CANCEL_REQ");
    quay_req_free(T.e[0], s);
    pkt_free(&p);
    finish();
}

static void t_duplicate_held(void)
{
    if (!setup(2))
        return;
    uint8_t sb[2][40], rb[2][40];
    quay_req *s[2], *r[2];
    for (int k = 0; k < 2; k++) {
        tn_fill(sb[k], 40, 10 + k);
        quay_isend(T.e[0], T.world[0], sb[k], 40, 1, 4, QUAY_SEND_STANDARD, &s[k]);
    }
    tn_pull_all(&T);
    is_int(T.nq, 2);
    pkt second = grab(1);
    is_int(tn_deliver(&T, 1), 0); /* held: its predecessor is missing */
    quay_stats st;
    quay_engine_stats(T.e[1], &st);
    is_int(st.held_out_of_order, 1);
    expect_pkt(&second, QUAY_ESTATE, "duplicate of a held out-of-order EAGER");
    is_int(tn_deliver(&T, 0), 0);
    quay_engine_stats(T.e[1], &st);
    ok(st.held_out_of_order == 0 && st.umsgs_in_use == 2);
    for (int k = 0; k < 2; k++) {
        quay_irecv(T.e[1], T.world[1], rb[k], 40, 0, 4, &r[k]);
        ok(tn_good(r[k], 40) && memcmp(rb[k], sb[k], 40) == 0);
        quay_req_free(T.e[1], r[k]);
        quay_req_free(T.e[0], s[k]);
    }
    pkt_free(&second);
    finish();
}

static void t_window(void)
{
    if (!setup(3))
        return;
    uint8_t pl[4] = {1, 2, 3, 4};
    static const struct {
        uint32_t seq;
        int want;
        const char *what;
    } cases[] = {
        {256, QUAY_EAGAIN, "EAGER exactly reorder_window ahead"},
        {1000, QUAY_EAGAIN, "EAGER far ahead"},
        {0x7fffffffu, QUAY_EAGAIN, "EAGER 2^31-1 ahead"},
        {0x80000000u, QUAY_ESTATE, "EAGER 2^31 away (behind the window)"},
        {UINT32_MAX, QUAY_ESTATE, "EAGER one behind (a replay of seq -1)"},
    };
    for (size_t i = 0; i < COUNT_OF(cases); i++) {
        wire_hdr h = env(QUAY_PKT_EAGER, cases[i].seq, 0, 2, 1, 0, sizeof pl);
        expect(1, 2, &h, pl, sizeof pl, cases[i].want, cases[i].what);
    }
    wire_hdr h = env(QUAY_PKT_RTS, 300, 0, 2, 1, GEN1 | 1, 5000);
    expect(1, 2, &h, NULL, 0, QUAY_EAGAIN, "RTS beyond the reorder window");
    h = creq(300, 0, GEN1 | 1, 0);
    expect(1, 2, &h, NULL, 0, QUAY_EAGAIN, "CANCEL_REQ beyond the reorder window");
    finish();

    /* The boundary, with reorder_window = 4: seq 3 is held, seq 4 refused. */
    quay_config cfg;
    tn_config(&cfg, 0, 2);
    cfg.malformed_limit = 0; /* (refusals are this test's subject) */
    cfg.reorder_window = 4;
    if (!setup_cfg(2, &cfg))
        return;
    uint8_t sb[5][10], rb[5][10];
    quay_req *s[5], *r[5];
    for (int k = 0; k < 5; k++) {
        tn_fill(sb[k], 10, k);
        quay_isend(T.e[0], T.world[0], sb[k], 10, 1, 1, QUAY_SEND_STANDARD, &s[k]);
    }
    tn_pull_all(&T);
    is_int(tn_deliver(&T, 3), 0); /* seq 3 = window - 1: held */
    pkt p4 = grab(3);             /* seq 4 */
    expect_pkt(&p4, QUAY_EAGAIN, "EAGER at reorder_window (4) ahead");
    for (int k = 0; k < 4; k++)
        is_int(tn_deliver(&T, 0), 0); /* seq 0, 1, 2, then 4 */
    for (int k = 0; k < 5; k++) {
        quay_irecv(T.e[1], T.world[1], rb[k], 10, 0, 1, &r[k]);
        ok(tn_good(r[k], 10) && memcmp(rb[k], sb[k], 10) == 0);
        quay_req_free(T.e[1], r[k]);
        quay_req_free(T.e[0], s[k]);
    }
    pkt_free(&p4);
    finish();
}

static void t_held_descriptors(void)
{
    quay_config cfg;
    tn_config(&cfg, 0, 2);
    cfg.malformed_limit = 0; /* (refusals are this test's subject) */
    cfg.max_unexpected = 8; /* held packets may use 4 */
    if (!setup_cfg(2, &cfg))
        return;
    uint8_t sb[7][10], rb[7][10];
    quay_req *s[7], *r[7];
    for (int k = 0; k < 7; k++) {
        tn_fill(sb[k], 10, 20 + k);
        quay_isend(T.e[0], T.world[0], sb[k], 10, 1, 1, QUAY_SEND_STANDARD, &s[k]);
    }
    tn_pull_all(&T);
    for (int k = 1; k <= 4; k++)
        is_int(tn_deliver(&T, 1), 0); /* seq 1..4 held */
    pkt p5 = grab(1);
    expect_pkt(&p5, QUAY_EAGAIN, "out-of-order EAGER with half the descriptors held");
    while (T.nq > 0)
        is_int(tn_deliver(&T, 0), 0);
    for (int k = 0; k < 7; k++) {
        quay_irecv(T.e[1], T.world[1], rb[k], 10, 0, 1, &r[k]);
        ok(tn_good(r[k], 10) && memcmp(rb[k], sb[k], 10) == 0);
        quay_req_free(T.e[1], r[k]);
        quay_req_free(T.e[0], s[k]);
    }
    pkt_free(&p5);
    finish();
}

static void t_held_bytes(void)
{
    quay_config cfg;
    tn_config(&cfg, 0, 2);
    cfg.malformed_limit = 0; /* (refusals are this test's subject) */
    cfg.unexpected_bytes_max = 600; /* held payload may use 300 */
    if (!setup_cfg(2, &cfg))
        return;
    uint8_t sb[3][200], rb[3][200];
    quay_req *s[3], *r[3];
    for (int k = 0; k < 3; k++) {
        tn_fill(sb[k], 200, 30 + k);
        quay_isend(T.e[0], T.world[0], sb[k], 200, 1, 1, QUAY_SEND_STANDARD, &s[k]);
    }
    tn_pull_all(&T);
    is_int(tn_deliver(&T, 1), 0); /* seq 1 held: 200 of 300 */
    pkt p2 = grab(1);
    expect_pkt(&p2, QUAY_EAGAIN, "held EAGER beyond half the unexpected byte budget");
    is_int(tn_deliver(&T, 0), 0); /* seq 0, then 1 drains: 400 bytes */
    is_int(tn_deliver(&T, 0), 0); /* seq 2 in order: 600 bytes */
    for (int k = 0; k < 3; k++) {
        quay_irecv(T.e[1], T.world[1], rb[k], 200, 0, 1, &r[k]);
        ok(tn_good(r[k], 200) && memcmp(rb[k], sb[k], 200) == 0);
        quay_req_free(T.e[1], r[k]);
        quay_req_free(T.e[0], s[k]);
    }
    pkt_free(&p2);
    finish();
}

/* ---- claimed source ranks ------------------------------------------------------------- */

static void src_claim_cases(void);

static void t_src_claim(void)
{
    for (int posted = 0; posted < 2; posted++) {
        if (!setup(3))
            return;
        uint8_t rb[4][16];
        quay_req *r[4] = {NULL, NULL, NULL, NULL};
        if (posted) {
            /* Receives the false claims would match. */
            quay_irecv(T.e[1], T.world[1], rb[0], 16, 0, 1, &r[0]);
            quay_irecv(T.e[1], T.world[1], rb[1], 16, 1, 1, &r[1]);
            quay_irecv(T.e[1], T.world[1], rb[2], 16, QUAY_ANY_SOURCE, 1, &r[2]);
            quay_irecv(T.e[1], T.world[1], rb[3], 16, QUAY_ANY_SOURCE, QUAY_ANY_TAG, &r[3]);
        }
        src_claim_cases();
        for (int k = 0; k < 4 && posted; k++) {
            ok_msg(!tn_done(r[k], NULL), "receive %d matched no false claim", k);
            quay_cancel(T.e[1], r[k]);
            quay_req_free(T.e[1], r[k]);
        }
        finish(); /* 2 -> 1 traffic still starts at seq 0: nothing was consumed */
    }
}

static void src_claim_cases(void)
{
    uint8_t pl[8] = {0};
    wire_hdr h = env(QUAY_PKT_EAGER, 0, 0, 0, 1, 0, sizeof pl);
    expect(1, 2, &h, pl, sizeof pl, QUAY_ESTATE, "EAGER from peer 2 claiming comm rank 0");
    h.src = 3;
    expect(1, 2, &h, pl, sizeof pl, QUAY_ESTATE, "EAGER claiming a rank outside the comm");
    h.src = 1;
    h.seq = 1;
    expect(1, 2, &h, pl, sizeof pl, QUAY_ESTATE, "held EAGER claiming another rank");
    h = env(QUAY_PKT_RTS, 0, 0, 1, 1, GEN1 | 1, 5000);
    expect(1, 2, &h, NULL, 0, QUAY_ESTATE, "RTS from peer 2 claiming comm rank 1");
    h = env(QUAY_PKT_EAGER, 0, 0, 1, 1, GEN1 | 1, sizeof pl);
    h.flags = WIRE_F_SYNC;
    expect(1, 2, &h, pl, sizeof pl, QUAY_ESTATE, "sync EAGER from peer 2 claiming rank 1");
}

/* Messages for a context not created yet: a false claim is dropped when the
 * communicator appears. The forged packets replace rank 2's own, so its
 * sequence numbers stay consistent. */
static void t_orphans(void)
{
    if (!setup(3))
        return;
    uint8_t sb[20], rb[20];
    quay_req *s[4], *r, *rx;
    for (int k = 0; k < 4; k++) {
        tn_fill(sb, sizeof sb, 40);
        quay_isend(T.e[2], T.world[2], sb, sizeof sb, 1, 5, QUAY_SEND_STANDARD, &s[k]);
    }
    tn_pull_all(&T);
    pkt p[4];
    for (int k = 0; k < 4; k++)
        p[k] = take(find(QUAY_PKT_EAGER, 2, 1));
    wire_hdr h;
    quay_stats a, z;
    quay_engine_stats(T.e[1], &a);

    /* ctx 50: seq 0 claims comm rank 0 (world 0): false; seq 1 is honest. */
    ok(wire_decode(p[0].b, p[0].len, &h) == WIRE_ENV_LEN);
    h.ctx = 50;
    h.src = 0;
    is_int(inj(1, 2, &h, p[0].b + WIRE_ENV_LEN, p[0].len - WIRE_ENV_LEN), 0);
    h.seq = 1;
    h.src = 2;
    is_int(inj(1, 2, &h, p[1].b + WIRE_ENV_LEN, p[1].len - WIRE_ENV_LEN), 0);
    quay_engine_stats(T.e[1], &z);
    is_int(z.umsgs_in_use, 2);
    quay_comm *c50;
    is_int(quay_comm_create(T.e[1], 50, 3, NULL, &c50), 0);
    n_bad++;
    quay_engine_stats(T.e[1], &z);
    ok_msg(z.pkts_rejected == a.pkts_rejected + 1 && z.umsgs_in_use == 1,
           "orphan with a false source claim dropped at comm creation (rejected %llu)",
           (unsigned long long)(z.pkts_rejected - a.pkts_rejected));
    quay_irecv(T.e[1], c50, rb, sizeof rb, 2, 5, &r);
    ok(tn_good(r, sizeof rb) && memcmp(rb, sb, sizeof sb) == 0);
    quay_irecv(T.e[1], c50, rb, sizeof rb, 0, 5, &rx);
    ok_msg(!tn_done(rx, NULL), "nothing from comm rank 0 was kept");
    quay_cancel(T.e[1], rx);
    quay_req_free(T.e[1], rx);
    quay_req_free(T.e[1], r);

    /* ctx 51: seq 3 held while 51 is unknown, claim false; the comm is then
     * created; seq 2 (honest) arrives and seq 3 is dropped when drained. */
    quay_engine_stats(T.e[1], &a);
    ok(wire_decode(p[3].b, p[3].len, &h) == WIRE_ENV_LEN);
    h.ctx = 51;
    h.src = 0;
    is_int(inj(1, 2, &h, p[3].b + WIRE_ENV_LEN, p[3].len - WIRE_ENV_LEN), 0);
    quay_comm *c51;
    is_int(quay_comm_create(T.e[1], 51, 3, NULL, &c51), 0);
    ok(wire_decode(p[2].b, p[2].len, &h) == WIRE_ENV_LEN);
    h.ctx = 51;
    is_int(inj(1, 2, &h, p[2].b + WIRE_ENV_LEN, p[2].len - WIRE_ENV_LEN), 0);
    n_bad++;
    quay_engine_stats(T.e[1], &z);
    ok_msg(z.pkts_rejected == a.pkts_rejected + 1 && z.umsgs_in_use == 1 &&
               z.held_out_of_order == 0,
           "held packet with a false claim dropped when its turn came");
    quay_irecv(T.e[1], c51, rb, sizeof rb, 2, 5, &r);
    ok(tn_good(r, sizeof rb));
    quay_req_free(T.e[1], r);
    is_int(quay_comm_free(T.e[1], c50), 0);
    is_int(quay_comm_free(T.e[1], c51), 0);
    for (int k = 0; k < 4; k++) {
        ok(tn_good(s[k], sizeof sb));
        quay_req_free(T.e[2], s[k]);
        pkt_free(&p[k]);
    }
    finish();
}

/* ---- CTS ---------------------------------------------------------------------------- */

/* A rendezvous send whose RTS is in flight, and forged CTSs at it. */
static void cts_pending_case(int v)
{
    if (!setup(3))
        return;
    quay_config cfg;
    tn_config(&cfg, 0, 3);
    cfg.malformed_limit = 0; /* (refusals are this test's subject) */
    size_t maxpkt = max_packet_of(&cfg);
    static uint8_t big[1000], big2[1000], rbig[1000], rbig2[1000];
    uint8_t small[50], rsmall[50], r0buf[50];
    tn_fill(big, sizeof big, 1);
    tn_fill(big2, sizeof big2, 2);
    tn_fill(small, sizeof small, 3);
    quay_req *s, *e0, *rcv, *s2, *r1, *r2, *r3, *s3;
    T.auto_done = 0;
    quay_isend(T.e[0], T.world[0], big, sizeof big, 1, 7, QUAY_SEND_STANDARD, &s);
    quay_isend(T.e[0], T.world[0], small, sizeof small, 1, 8, QUAY_SEND_STANDARD, &e0);
    quay_irecv(T.e[0], T.world[0], r0buf, sizeof r0buf, 1, 9, &rcv);
    tn_pull_all(&T);
    quay_isend(T.e[0], T.world[0], big2, sizeof big2, 1, 7, QUAY_SEND_STANDARD, &s2);
    uint32_t sid = quay_req_id(s);
    wire_hdr h = cts(sid, GEN1 | 1, 2, 128, 1, 1000);
    int from = 1, want = QUAY_ESTATE;
    const char *what = "?";
    switch (v) {
    case 0: h.sreq = GEN1 | 200; what = "CTS for an unknown request id"; break;
    case 1: h.sreq = sid + GEN1; what = "CTS with a stale generation"; break;
    case 2: h.sreq = GEN1 | REQ_IDX_MASK; what = "CTS with an index beyond the pool"; break;
    case 3: h.sreq = 0; want = QUAY_EPROTO; what = "CTS with request id 0"; break;
    case 4: from = 2; what = "CTS from the wrong peer"; break;
    case 5: h.len = 1001; what = "CTS accepting more than the message"; break;
    case 6: h.frag = (uint32_t)(maxpkt - WIRE_DATA_LEN + 1); what = "CTS fragment beyond max_packet"; break;
    case 7: h.frag = UINT32_MAX; h.grant = 1; what = "CTS fragment UINT32_MAX"; break;
    case 8: h.grant = 9; what = "CTS grant beyond the fragment count"; break;
    case 9: h.grant = 0; what = "CTS granting nothing of a non-empty message"; break;
    case 10: h.len = 0; h.grant = 1; what = "CTS grant beyond zero fragments"; break;
    case 11: h.sreq = quay_req_id(e0); what = "CTS for an eager send"; break;
    case 12: h.sreq = quay_req_id(rcv); what = "CTS addressed to a receive"; break;
    case 13: h.sreq = quay_req_id(s2); what = "CTS before the RTS was sent"; break;
    default: break;
    }
    expect(0, from, &h, NULL, 0, want, what);

    /* Finish the legitimate traffic. */
    T.auto_done = 1;
    tn_done_all(&T);
    quay_irecv(T.e[1], T.world[1], rbig, sizeof rbig, 0, 7, &r1);
    quay_irecv(T.e[1], T.world[1], rbig2, sizeof rbig2, 0, 7, &r2);
    quay_irecv(T.e[1], T.world[1], rsmall, sizeof rsmall, 0, 8, &r3);
    quay_isend(T.e[1], T.world[1], small, sizeof small, 0, 9, QUAY_SEND_STANDARD, &s3);
    tn_pump(&T);
    ok_msg(tn_good(s, 1000) && tn_good(s2, 1000) && tn_good(e0, 50) && tn_good(rcv, 50) &&
               tn_good(r1, 1000) && tn_good(r2, 1000) && tn_good(r3, 50) && tn_good(s3, 50) &&
               memcmp(big, rbig, 1000) == 0 && memcmp(big2, rbig2, 1000) == 0,
           "%s: the legitimate transfers complete", what);
    quay_req *all0[] = {s, e0, rcv, s2}, *all1[] = {r1, r2, r3, s3};
    for (size_t i = 0; i < 4; i++) {
        quay_req_free(T.e[0], all0[i]);
        quay_req_free(T.e[1], all1[i]);
    }
    finish();
}

static void t_cts_pending(void)
{
    for (int v = 0; v <= 13; v++)
        cts_pending_case(v);
}

static void t_cts_after_completion(void)
{
    if (!setup(2))
        return;
    static uint8_t sb[1000], rb[1000];
    tn_fill(sb, sizeof sb, 5);
    quay_req *s, *r;
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 7, &r);
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 7, QUAY_SEND_STANDARD, &s);
    pkt last = {NULL, 0, -1, -1};
    for (;;) {
        tn_pull_all(&T);
        if (T.nq == 0)
            break;
        if (tn_type(&T, 0) == QUAY_PKT_CTS) {
            pkt_free(&last);
            last = grab(0);
        }
        tn_deliver(&T, 0);
    }
    ok(tn_good(s, 1000) && tn_good(r, 1000));
    uint32_t old = quay_req_id(s);
    expect_pkt(&last, QUAY_ESTATE, "CTS replayed after the send completed");
    quay_req_free(T.e[0], s);
    expect_pkt(&last, QUAY_ESTATE, "CTS for a released request");
    /* The slot is reused with a new generation; the old id stays dead. */
    quay_req_free(T.e[1], r);
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 7, QUAY_SEND_STANDARD, &s);
    tn_pull_all(&T);
    ok_msg((quay_req_id(s) & REQ_IDX_MASK) == (old & REQ_IDX_MASK) && quay_req_id(s) != old,
           "slot reused with a new id (%#x -> %#x)", old, quay_req_id(s));
    expect_pkt(&last, QUAY_ESTATE, "CTS naming the previous generation of a reused slot");
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 7, &r);
    tn_pump(&T);
    ok(tn_good(s, 1000) && tn_good(r, 1000));
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);
    pkt_free(&last);
    finish();
}

/* A CTS whose accepted length and fragment size imply more fragments than
 * a 32-bit count holds: the sender must not truncate the count. The send
 * is zero-copy and only its RTS leaves here, so a small buffer stands in
 * for the 4 GiB message. */
static void t_cts_huge(void)
{
#if SIZE_MAX > UINT32_MAX
    if (!setup(2))
        return;
    static uint8_t stand_in[64];
    const uint64_t len = ((uint64_t)1 << 32) + 5;
    quay_req *s;
    is_int(quay_isend(T.e[0], T.world[0], stand_in, (size_t)len, 1, 1, QUAY_SEND_STANDARD, &s),
           0);
    tn_pull_all(&T);
    ok(find(QUAY_PKT_RTS, 0, 1) >= 0);
    wire_hdr h = cts(quay_req_id(s), GEN1 | 1, 1, 1, 1, len);
    expect(0, 1, &h, NULL, 0, QUAY_ESTATE, "CTS implying 2^32 + 5 fragments of 1 byte");
    h.len = (uint64_t)1 << 32;
    expect(0, 1, &h, NULL, 0, QUAY_ESTATE, "CTS implying exactly 2^32 fragments");
    h.len = len;
    h.frag = 2;
    h.grant = UINT32_MAX;
    expect(0, 1, &h, NULL, 0, QUAY_ESTATE, "CTS with 2^31 + 3 fragments, grant UINT32_MAX");
    is_int(quay_cancel(T.e[0], s), 0); /* the RTS is unmatched: cancel succeeds */
    tn_pump(&T);
    quay_status st;
    ok(tn_done(s, &st) && st.cancelled);
    quay_req_free(T.e[0], s);
    finish();
#else
    ok_msg(1, "# SKIP size_t is 32 bits");
#endif
}

/*
 * A rendezvous in progress: the sender has processed the first CTS (grant 2
 * of 8 fragments). Variant v forges a further CTS.
 */
static void cts_mid_case(int v)
{
    if (!setup(3))
        return;
    static uint8_t sb[1000], rb[1000];
    tn_fill(sb, sizeof sb, 6);
    memset(rb, 0, sizeof rb);
    quay_req *s, *r;
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 7, &r);
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 7, QUAY_SEND_STANDARD, &s);
    tn_pull_all(&T);
    is_int(tn_deliver(&T, find(QUAY_PKT_RTS, 0, 1)), 0);
    tn_pull_all(&T);
    int i = find(QUAY_PKT_CTS, 1, 0);
    pkt c1 = grab(i);
    is_int(tn_deliver(&T, i), 0);
    wire_hdr h;
    ok(wire_decode(c1.b, c1.len, &h) == WIRE_CTS_LEN);
    ok(h.grant == 2 && h.index == 1 && h.frag == 128 && h.len == 1000);
    int from = 1;
    const char *what = "?";
    switch (v) {
    case 0: h.rreq += GEN1; what = "CTS naming another receive request"; break;
    case 1: h.frag = 64; what = "CTS changing the fragment size"; break;
    case 2: h.len = 999; what = "CTS changing the accepted length"; break;
    case 3: h.grant = 9; what = "later CTS granting beyond the fragment count"; break;
    case 4: from = 2; what = "later CTS from the wrong peer"; break;
    case 5: h.grant = 8; h.index = 1; what = "final-grant CTS repeating index 1"; break;
    default: break;
    }
    if (v <= 5) {
        expect(0, from, &h, NULL, 0, QUAY_ESTATE, what);
    } else {
        /* v == 6: the first CTS, delivered twice. A duplicate cannot be told
         * from a late straggler, so accepting it is fine; it must not
         * hurt. */
        what = "duplicate of the first CTS";
        int rc = offer(&c1);
        n_bad++;
        ok_msg(rc == 0 || rc == QUAY_ESTATE, "%s: %s", what, quay_strerror(rc));
    }
    tn_pump(&T);
    ok_msg(tn_good(s, 1000) && tn_good(r, 1000) && memcmp(sb, rb, sizeof sb) == 0,
           "%s: the transfer still completes", what);
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);
    pkt_free(&c1);
    finish();
}

static void t_cts_mid(void)
{
    for (int v = 0; v <= 4; v++)
        cts_mid_case(v);
}

/*
 * Regression (src/engine/rndv.c, rndv_on_cts): a later CTS whose grant
 * equals nfrags used to set r->cts_total = h->index *before* the check
 * that rejected it (index already seen). The packet was answered
 * QUAY_ESTATE but the request kept cts_total = 1, so the receiver's next
 * real CTS was rejected too and the transfer stalled forever. A rejected
 * packet must not change state.
 */
static void t_reg_cts_final_stale_index(void) { cts_mid_case(5); }

/*
 * Regression (src/engine/rndv.c, rndv_on_cts): the sender used to count
 * CTS *arrivals* and complete when the count reached the final CTS's
 * index. A duplicated CTS was accepted as a "straggler" and still counted,
 * so the real final CTS was then rejected as "more CTS than the receiver
 * sent" and the transfer stalled. Seen indices are now tracked.
 */
static void t_reg_cts_duplicate(void) { cts_mid_case(6); }

/* ---- DATA --------------------------------------------------------------------------- */

static void data_case(int v)
{
    if (!setup(3))
        return;
    static uint8_t sb[1000], rb[1000], s1b[1000], r0b[1000];
    uint8_t pb[50], prb[50];
    tn_fill(sb, sizeof sb, 7);
    tn_fill(s1b, sizeof s1b, 8);
    tn_fill(pb, sizeof pb, 9);
    memset(rb, 0, sizeof rb);
    quay_req *r, *p, *s1, *s, *r0, *s2;
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 7, &r);
    quay_irecv(T.e[1], T.world[1], prb, sizeof prb, 2, 3, &p);
    quay_isend(T.e[1], T.world[1], s1b, sizeof s1b, 0, 9, QUAY_SEND_STANDARD, &s1);
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 7, QUAY_SEND_STANDARD, &s);
    tn_pull_all(&T);
    is_int(tn_deliver(&T, find(QUAY_PKT_RTS, 0, 1)), 0); /* r: grant 2 of 8 */
    uint32_t rid = quay_req_id(r);
    wire_hdr h = data(rid, 0);
    static uint8_t junk[200];
    memset(junk, 0xee, sizeof junk);
    size_t plen = 128;
    int from = 0, want = QUAY_ESTATE;
    const char *what = "?";
    switch (v) {
    case 0: h.rreq = GEN1 | 200; what = "DATA for an unknown request"; break;
    case 1: h.rreq = 0; want = QUAY_EPROTO; what = "DATA with request id 0"; break;
    case 2: h.offset = 1; what = "DATA offset not a multiple of the fragment"; break;
    case 3: h.offset = 2 * 128; what = "DATA just beyond the granted window"; break;
    case 4: h.offset = 7 * 128; plen = 1000 - 7 * 128; what = "DATA for the last fragment, not granted"; break;
    case 5: h.offset = UINT64_MAX - 127; what = "DATA offset near UINT64_MAX"; break;
    case 6: plen = 127; what = "DATA shorter than its fragment"; break;
    case 7: plen = 129; what = "DATA longer than its fragment"; break;
    case 8: from = 2; what = "DATA from the wrong peer"; break;
    case 9: h.rreq = quay_req_id(s1); what = "DATA addressed to a send request"; break;
    case 10: h.rreq = quay_req_id(p); what = "DATA for a receive not matched yet"; break;
    case 11: h.rreq = rid + GEN1; what = "DATA with a stale generation"; break;
    case 12: h.offset = 8 * 128; what = "DATA past the end of the message"; break;
    default: break;
    }
    expect(1, from, &h, junk, plen, want, what);

    quay_irecv(T.e[0], T.world[0], r0b, sizeof r0b, 1, 9, &r0);
    quay_isend(T.e[2], T.world[2], pb, sizeof pb, 1, 3, QUAY_SEND_STANDARD, &s2);
    tn_pump(&T);
    ok_msg(tn_good(r, 1000) && tn_good(s, 1000) && memcmp(rb, sb, sizeof sb) == 0 &&
               tn_good(p, 50) && tn_good(r0, 1000) && tn_good(s1, 1000) && tn_good(s2, 50) &&
               memcmp(r0b, s1b, sizeof s1b) == 0,
           "%s: legitimate transfers complete with correct data", what);
    quay_req_free(T.e[1], r);
    quay_req_free(T.e[1], p);
    quay_req_free(T.e[1], s1);
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[0], r0);
    quay_req_free(T.e[2], s2);
    finish();
}

static void t_data(void)
{
    for (int v = 0; v <= 12; v++)
        data_case(v);
}

static void t_data_duplicate(void)
{
    if (!setup(2))
        return;
    static uint8_t sb[1000], rb[1000];
    tn_fill(sb, sizeof sb, 11);
    quay_req *s, *r;
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 7, &r);
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 7, QUAY_SEND_STANDARD, &s);
    tn_pull_all(&T);
    tn_deliver(&T, find(QUAY_PKT_RTS, 0, 1));
    tn_pull_all(&T);
    tn_deliver(&T, find(QUAY_PKT_CTS, 1, 0));
    tn_pull_all(&T);
    is_int(T.nq, 2);
    ok(tn_type(&T, 0) == QUAY_PKT_DATA && tn_type(&T, 1) == QUAY_PKT_DATA);
    pkt d0 = grab(0), d1 = grab(1);
    is_int(tn_deliver(&T, 1), 0); /* fragment 1 before fragment 0 */
    expect_pkt(&d1, QUAY_ESTATE, "duplicate DATA fragment inside the window");
    is_int(tn_deliver(&T, 0), 0);
    expect_pkt(&d0, QUAY_ESTATE, "duplicate DATA fragment below the window base");
    tn_pump(&T);
    ok(tn_good(r, 1000) && tn_good(s, 1000) && memcmp(sb, rb, sizeof sb) == 0);
    expect_pkt(&d1, QUAY_ESTATE, "DATA after the receive completed");
    quay_req_free(T.e[1], r);
    expect_pkt(&d0, QUAY_ESTATE, "DATA for a released receive");
    quay_req_free(T.e[0], s);
    pkt_free(&d0);
    pkt_free(&d1);
    finish();
}

/* ---- ACK ------------------------------------------------------------------------------ */

static void ack_case(int v)
{
    if (!setup(3))
        return;
    static uint8_t big[1000], rbig[1000];
    uint8_t small[50], rs[4][50], r0b[50];
    tn_fill(small, sizeof small, 12);
    tn_fill(big, sizeof big, 13);
    quay_req *std, *syn, *rsync, *rcv, *unsent, *r[4], *s4;
    T.auto_done = 0;
    quay_isend(T.e[0], T.world[0], small, 50, 1, 1, QUAY_SEND_STANDARD, &std);
    quay_isend(T.e[0], T.world[0], small, 50, 1, 2, QUAY_SEND_SYNC, &syn);
    quay_isend(T.e[0], T.world[0], big, 1000, 1, 3, QUAY_SEND_SYNC, &rsync);
    quay_irecv(T.e[0], T.world[0], r0b, sizeof r0b, 1, 4, &rcv);
    tn_pull_all(&T);
    quay_isend(T.e[0], T.world[0], small, 50, 1, 5, QUAY_SEND_SYNC, &unsent);
    wire_hdr h = ack(QUAY_PKT_ACK, quay_req_id(syn), 0);
    int from = 1, want = QUAY_ESTATE;
    const char *what = "?";
    switch (v) {
    case 0: h.sreq = quay_req_id(std); what = "ACK for a standard send"; break;
    case 1: h.status = QUAY_ENOTPOSTED; what = "ACK ENOTPOSTED for a synchronous send"; break;
    case 2: h.sreq = quay_req_id(rsync); what = "ACK 0 for a rendezvous send"; break;
    case 3: h.sreq = quay_req_id(rsync); h.status = QUAY_ENOTPOSTED; what = "ACK ENOTPOSTED for a sync rendezvous send"; break;
    case 4: from = 2; what = "ACK from the wrong peer"; break;
    case 5: h.sreq = GEN1 | 200; what = "ACK for an unknown request"; break;
    case 6: h.sreq = quay_req_id(unsent); what = "ACK before the envelope was sent"; break;
    case 7: h.sreq = quay_req_id(rcv); what = "ACK addressed to a receive"; break;
    case 8: h.sreq += GEN1; what = "ACK with a stale generation"; break;
    case 9: h.status = 1; want = QUAY_EPROTO; what = "ACK with status 1"; break;
    default: break;
    }
    expect(0, from, &h, NULL, 0, want, what);

    T.auto_done = 1;
    tn_done_all(&T);
    static const int tags[4] = {1, 2, 3, 5};
    for (int k = 0; k < 4; k++)
        quay_irecv(T.e[1], T.world[1], k == 2 ? rbig : rs[k], k == 2 ? 1000 : 50, 0,
                   tags[k], &r[k]);
    quay_isend(T.e[1], T.world[1], small, 50, 0, 4, QUAY_SEND_STANDARD, &s4);
    tn_pump(&T);
    ok_msg(tn_good(std, 50) && tn_good(syn, 50) && tn_good(rsync, 1000) && tn_good(rcv, 50) &&
               tn_good(unsent, 50) && tn_good(r[0], 50) && tn_good(r[1], 50) && tn_good(r[2], 1000) &&
               tn_good(r[3], 50) && tn_good(s4, 50),
           "%s: the legitimate transfers complete", what);
    quay_req *all0[] = {std, syn, rsync, rcv, unsent};
    for (size_t k = 0; k < COUNT_OF(all0); k++)
        quay_req_free(T.e[0], all0[k]);
    for (int k = 0; k < 4; k++)
        quay_req_free(T.e[1], r[k]);
    quay_req_free(T.e[1], s4);
    finish();
}

static void t_ack(void)
{
    for (int v = 0; v <= 9; v++)
        ack_case(v);
}

static void t_ack_twice(void)
{
    if (!setup(2))
        return;
    uint8_t sb[50], rb[50];
    tn_fill(sb, sizeof sb, 14);
    quay_req *s, *r;
    T.auto_done = 0;
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 2, &r);
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 2, QUAY_SEND_SYNC, &s);
    tn_pull_all(&T);
    is_int(deliver_nodone(find(QUAY_PKT_EAGER, 0, 1)), 0);
    tn_pull_all(&T);
    int i = find(QUAY_PKT_ACK, 1, 0);
    pkt a = grab(i);
    is_int(tn_deliver(&T, i), 0);
    ok_msg(!tn_done(s, NULL), "ACK before op_done: not complete yet");
    expect_pkt(&a, QUAY_ESTATE, "second ACK before op_done");
    flush_pending();
    ok(tn_good(s, 50));
    expect_pkt(&a, QUAY_ESTATE, "ACK after completion");
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);
    pkt_free(&a);
    finish();
}

static void t_ack_ready_rndv(void)
{
    if (!setup(2))
        return;
    static uint8_t sb[1000], rb[1000];
    tn_fill(sb, sizeof sb, 15);
    quay_req *s, *r;
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 6, &r);
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 6, QUAY_SEND_READY, &s);
    tn_pull_all(&T);
    tn_deliver(&T, find(QUAY_PKT_RTS, 0, 1));
    tn_pull_all(&T);
    tn_deliver(&T, find(QUAY_PKT_CTS, 1, 0));
    wire_hdr h = ack(QUAY_PKT_ACK, quay_req_id(s), QUAY_ENOTPOSTED);
    expect(0, 1, &h, NULL, 0, QUAY_ESTATE, "ACK ENOTPOSTED for a ready rendezvous after its CTS");
    h.status = 0;
    expect(0, 1, &h, NULL, 0, QUAY_ESTATE, "ACK 0 for a ready rendezvous send");
    tn_pump(&T);
    ok(tn_good(s, 1000) && tn_good(r, 1000) && memcmp(sb, rb, sizeof sb) == 0);
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);
    finish();
}

/* ---- cancellation -------------------------------------------------------------------- */

static void cancel_rep_case(int v)
{
    if (!setup(3))
        return;
    uint8_t sb[50], rb[50];
    tn_fill(sb, sizeof sb, 16);
    quay_req *a, *b, *r;
    T.auto_done = 0;
    quay_isend(T.e[0], T.world[0], sb, 50, 1, 1, QUAY_SEND_SYNC, &a);
    tn_pull_all(&T);
    quay_isend(T.e[0], T.world[0], sb, 50, 1, 2, QUAY_SEND_STANDARD, &b);
    is_int(quay_cancel(T.e[0], b), 0); /* CANCEL_REQ not emitted yet */
    wire_hdr h = ack(QUAY_PKT_CANCEL_REP, quay_req_id(a), 0);
    int want = QUAY_ESTATE;
    const char *what = "?";
    switch (v) {
    case 0: what = "CANCEL_REP 0 without a pending cancel"; break;
    case 1: h.status = 1; what = "CANCEL_REP 1 without a pending cancel"; break;
    case 2: h.sreq = quay_req_id(b); h.status = 1; what = "CANCEL_REP before the CANCEL_REQ was sent"; break;
    case 3: h.sreq = quay_req_id(b); h.status = 2; want = QUAY_EPROTO; what = "CANCEL_REP status 2"; break;
    case 4: h.sreq = GEN1 | 200; h.status = 1; what = "CANCEL_REP for an unknown request"; break;
    case 5: h.sreq = quay_req_id(b) + GEN1; h.status = 1; what = "CANCEL_REP with a stale generation"; break;
    default: break;
    }
    expect(0, 1, &h, NULL, 0, want, what);
    T.auto_done = 1;
    tn_done_all(&T);
    tn_pump(&T); /* b: EAGER + CANCEL_REQ, unmatched: cancelled */
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 1, &r);
    tn_pump(&T);
    quay_status st;
    ok_msg(tn_done(b, &st) && st.cancelled && tn_good(a, 50) && tn_good(r, 50),
           "%s: the cancel and the sync send complete", what);
    quay_req_free(T.e[0], a);
    quay_req_free(T.e[0], b);
    quay_req_free(T.e[1], r);
    finish();
}

static void t_cancel_rep(void)
{
    for (int v = 0; v <= 5; v++)
        cancel_rep_case(v);
}

/* CTS arrives while the cancel is pending: the cancel can only fail. */
static void t_cancel_rep_after_cts(void)
{
    if (!setup(3))
        return;
    static uint8_t sb[1000], rb[1000];
    tn_fill(sb, sizeof sb, 17);
    quay_req *s, *r;
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 7, &r);
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 7, QUAY_SEND_STANDARD, &s);
    tn_pull_all(&T);
    tn_deliver(&T, find(QUAY_PKT_RTS, 0, 1));
    is_int(quay_cancel(T.e[0], s), 0);
    tn_pull(&T, 1);
    tn_deliver(&T, find(QUAY_PKT_CTS, 1, 0)); /* SEND_CANCEL -> SEND_DATA */
    tn_pull(&T, 0);                           /* CANCEL_REQ and DATA leave */
    ok(find(QUAY_PKT_CANCEL_REQ, 0, 1) >= 0);
    wire_hdr h = ack(QUAY_PKT_CANCEL_REP, quay_req_id(s), 1);
    expect(0, 1, &h, NULL, 0, QUAY_ESTATE, "CANCEL_REP 1 after a CTS proved the match");
    h.status = 0;
    expect(0, 2, &h, NULL, 0, QUAY_ESTATE, "CANCEL_REP from the wrong peer");
    pkt rep = {NULL, 0, -1, -1};
    for (;;) {
        tn_pull_all(&T);
        if (T.nq == 0)
            break;
        if (tn_type(&T, 0) == QUAY_PKT_CANCEL_REP)
            rep = grab(0);
        tn_deliver(&T, 0);
    }
    quay_status st;
    ok(tn_done(s, &st) && !st.cancelled && st.error == 0);
    ok(tn_good(r, 1000) && memcmp(sb, rb, sizeof sb) == 0);
    ok(rep.b != NULL);
    if (rep.b)
        expect_pkt(&rep, QUAY_ESTATE, "CANCEL_REP delivered twice");
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);
    pkt_free(&rep);
    finish();
}

/* ---- RDMA rendezvous: FIN and keyed CTS out of state --------------------------------- */

/* n engines whose transport has RDMA_GET and RDMA_PUT; rank 0 in rndv_mode
 * m0, the others in m1. */
static int setup_rdma(int n, uint32_t m0, uint32_t m1)
{
    quay_config c[TN_MAX_RANKS];
    for (int r = 0; r < n; r++) {
        tn_config(&c[r], r, n);
        c[r].malformed_limit = 0; /* (refusals are this test's subject) */
        c[r].transport_caps = QUAY_CAP_RDMA_GET | QUAY_CAP_RDMA_PUT;
        c[r].rndv_mode = r == 0 ? m0 : m1;
    }
    return setup_each(n, c, 1);
}

static quay_stats stats_of(int r)
{
    quay_stats st;
    quay_engine_stats(T.e[r], &st);
    return st;
}

/* Deliver in FIFO order until a packet of `type` from -> to is in flight:
 * its index, or -1 if the network ran dry first. */
static int run_until(int type, int from, int to)
{
    for (int steps = 0; steps < 1000; steps++) {
        tn_pull_all(&T);
        int i = find(type, from, to);
        if (i >= 0 || T.nq == 0)
            return i;
        tn_deliver(&T, 0);
    }
    return -1;
}

/*
 * GET: rank 0 offers its key in the RTS, rank 1 reads and answers with a
 * FIN. Forged FINs, a keyed CTS and DATA while the receive is in RECV_GET;
 * then the real FIN twice: before the send completes (it still waits for
 * its RTS's op_done), after, and once the request is released.
 */
static void rdma_get_case(void)
{
    if (!setup_rdma(3, QUAY_RNDV_GET, QUAY_RNDV_AUTO))
        return;
    static uint8_t sb[1000], rb[1000], junk[128];
    uint8_t pb[50];
    tn_fill(sb, sizeof sb, 90);
    memset(rb, 0, sizeof rb);
    memset(junk, 0xee, sizeof junk);
    quay_req *s, *r, *p;
    T.auto_done = 0;
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 7, &r);
    quay_irecv(T.e[1], T.world[1], pb, sizeof pb, 0, 8, &p); /* stays posted */
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 7, QUAY_SEND_STANDARD, &s);
    is_int(stats_of(0).regions_in_use, 1);
    tn_pull_all(&T);
    int i = find(QUAY_PKT_RTS, 0, 1);
    pkt rts = grab(i);
    wire_hdr h;
    ok_msg(rts.b != NULL && wire_decode(rts.b, rts.len, &h) == WIRE_ENV_LEN + WIRE_KEY_LEN &&
               h.flags == WIRE_F_KEY && h.key != 0,
           "the RTS carries the sender's key (40 bytes)");
    is_int(deliver_nodone(i), 0); /* its op_done held back: the send waits for it */
    is_int(r->state, QUAY_RS_RECV_GET);
    is_int(stats_of(1).ctrl_reserved, 1);
    uint32_t sid = quay_req_id(s), rid = quay_req_id(r);
    watch(s, r, p);
    h = fin(sid, rid, 0, 0);
    expect(0, 2, &h, NULL, 0, QUAY_ESTATE, "FIN from the wrong peer");
    h.sreq = sid + GEN1;
    expect(0, 1, &h, NULL, 0, QUAY_ESTATE, "FIN with a stale sreq generation");
    h.sreq = GEN1 | 200;
    expect(0, 1, &h, NULL, 0, QUAY_ESTATE, "FIN for an unknown sreq");
    h = fin(rid, sid, QUAY_EPEER, 0);
    expect(1, 0, &h, NULL, 0, QUAY_ESTATE, "FIN to a sender naming a receive request");
    h = fin(sid, rid, 0, WIRE_F_TO_RECV);
    expect(1, 0, &h, NULL, 0, QUAY_ESTATE, "FIN to the receiver of a GET (RECV_GET)");
    h.rreq = quay_req_id(p);
    expect(1, 0, &h, NULL, 0, QUAY_ESTATE, "FIN to a posted receive");
    h = kcts(sid, rid, 8, 128, 1, sizeof sb, 0x1234);
    expect(0, 1, &h, NULL, 0, QUAY_ESTATE, "keyed CTS to a sender that offered its key, not PUT");
    h = data(rid, 0);
    expect(1, 0, &h, junk, sizeof junk, QUAY_ESTATE, "DATA for a receive in RECV_GET");
    expect_pkt(&rts, QUAY_ESTATE, "keyed RTS replayed");

    pkt f = {NULL, 0, -1, -1};
    i = run_until(QUAY_PKT_FIN, 1, 0);
    if (ok_msg(i >= 0, "the receiver sends its FIN")) {
        f = grab(i);
        ok_msg(wire_decode(f.b, f.len, &h) == WIRE_FIN_LEN && h.flags == 0 && h.sreq == sid &&
                   h.rreq == rid && h.status == 0,
               "FIN(sreq, rreq, 0) to the sender");
        ok_msg(tn_good(r, sizeof rb) && memcmp(sb, rb, sizeof sb) == 0,
               "the receive completed as its last read landed");
        is_int(stats_of(1).ctrl_reserved, 0);
        is_int(tn_deliver(&T, i), 0);
        ok_msg(!tn_done(s, NULL), "FIN seen, RTS op_done not yet: the send waits");
        watch(s, NULL, NULL);
        expect_pkt(&f, QUAY_ESTATE, "duplicate FIN before the send completed");
        flush_pending();
        ok(tn_good(s, sizeof sb));
        expect_pkt(&f, QUAY_ESTATE, "duplicate FIN after the send completed");
        nwatch = 0;
    }
    is_int(stats_of(0).regions_in_use, 0);
    quay_req_free(T.e[0], s);
    if (f.b != NULL)
        expect_pkt(&f, QUAY_ESTATE, "FIN for a released send");
    quay_cancel(T.e[1], p);
    quay_req_free(T.e[1], p);
    quay_req_free(T.e[1], r);
    ok(stats_of(1).rndv_get == 1 && stats_of(1).rndv_copy == 0);
    pkt_free(&rts);
    pkt_free(&f);
    finish();
}

/*
 * The GET offer declined: rank 1 (COPY mode) answers with a plain CTS and
 * DATA packets carry the message; a FIN may no longer come. Rank 1's own
 * rendezvous send offers nothing: no keyed CTS or FIN may reach it.
 */
static void rdma_get_declined_case(void)
{
    if (!setup_rdma(3, QUAY_RNDV_GET, QUAY_RNDV_COPY))
        return;
    static uint8_t sb[1000], rb[1000], s1b[1000], r0b[1000];
    tn_fill(sb, sizeof sb, 91);
    tn_fill(s1b, sizeof s1b, 92);
    quay_req *s, *r, *s1, *r0;
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 7, &r);
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 7, QUAY_SEND_STANDARD, &s);
    quay_isend(T.e[1], T.world[1], s1b, sizeof s1b, 0, 9, QUAY_SEND_STANDARD, &s1);
    tn_pull_all(&T);
    int i = find(QUAY_PKT_RTS, 1, 0);
    wire_hdr h;
    ok_msg(i >= 0 && wire_decode(T.q[i].bytes, T.q[i].len, &h) == WIRE_ENV_LEN && h.flags == 0,
           "a COPY-mode sender's RTS offers nothing");
    is_int(tn_deliver(&T, i), 0); /* unexpected at rank 0 */
    is_int(tn_deliver(&T, find(QUAY_PKT_RTS, 0, 1)), 0);
    is_int(r->state, QUAY_RS_RECV_RNDV);
    tn_pull_all(&T);
    i = find(QUAY_PKT_CTS, 1, 0);
    ok_msg(i >= 0 && wire_decode(T.q[i].bytes, T.q[i].len, &h) == WIRE_CTS_LEN && h.flags == 0,
           "the GET offer is answered by a plain CTS");
    is_int(tn_deliver(&T, i), 0);
    is_int(s->state, QUAY_RS_SEND_DATA);
    is_int(stats_of(0).regions_in_use, 0); /* declined: the key is withdrawn */
    uint32_t sid = quay_req_id(s), rid = quay_req_id(r), s1id = quay_req_id(s1);
    watch(s, r, s1);
    h = fin(sid, rid, 0, 0);
    expect(0, 1, &h, NULL, 0, QUAY_ESTATE, "FIN to a GET-offer sender after a plain CTS");
    h = fin(sid, rid, 0, WIRE_F_TO_RECV);
    expect(1, 0, &h, NULL, 0, QUAY_ESTATE, "FIN to a receive in RECV_RNDV");
    h = kcts(s1id, GEN1 | 5, 8, 128, 1, sizeof s1b, 0x1234);
    expect(1, 0, &h, NULL, 0, QUAY_ESTATE, "keyed CTS to a sender that offered nothing (COPY)");
    h = fin(s1id, GEN1 | 5, 0, 0);
    expect(1, 0, &h, NULL, 0, QUAY_ESTATE, "FIN to a sender that offered nothing (COPY)");
    quay_irecv(T.e[0], T.world[0], r0b, sizeof r0b, 1, 9, &r0);
    tn_pump(&T);
    ok_msg(tn_good(s, 1000) && tn_good(r, 1000) && tn_good(s1, 1000) && tn_good(r0, 1000) &&
               memcmp(sb, rb, sizeof sb) == 0 && memcmp(s1b, r0b, sizeof s1b) == 0,
           "both messages arrive by DATA packets");
    quay_stats st = stats_of(1);
    ok(st.rndv_get == 0 && st.rndv_put == 0 && st.rndv_copy == 1);
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[0], r0);
    quay_req_free(T.e[1], r);
    quay_req_free(T.e[1], s1);
    finish();
}

/*
 * PUT: rank 0 offers to write, rank 1 registers its buffer and answers
 * with a keyed CTS (every fragment granted, index 1); rank 0 writes, then
 * FIN. Forged FINs and keyed CTSs before and after the real CTS; the real
 * CTS and FIN twice.
 */
static void rdma_put_case(void)
{
    if (!setup_rdma(3, QUAY_RNDV_PUT, QUAY_RNDV_AUTO))
        return;
    static uint8_t sb[1000], rb[1000], s2b[1000], r2b[1000], junk[128];
    tn_fill(sb, sizeof sb, 93);
    tn_fill(s2b, sizeof s2b, 94);
    memset(rb, 0, sizeof rb);
    memset(junk, 0xee, sizeof junk);
    quay_req *s, *r, *s2, *r2;
    T.auto_done = 0;
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 7, &r);
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 7, QUAY_SEND_STANDARD, &s);
    tn_pull_all(&T);
    quay_isend(T.e[0], T.world[0], s2b, sizeof s2b, 1, 9, QUAY_SEND_STANDARD, &s2);
    int i = find(QUAY_PKT_RTS, 0, 1);
    wire_hdr h;
    ok_msg(i >= 0 && wire_decode(T.q[i].bytes, T.q[i].len, &h) == WIRE_ENV_LEN &&
               h.flags == WIRE_F_PUT_OK,
           "the RTS offers to write (PUT_OK, no key)");
    uint32_t sid = quay_req_id(s), s2id = quay_req_id(s2), rid = quay_req_id(r);
    watch(s, s2, r);
    h = fin(sid, rid, 0, 0);
    expect(0, 1, &h, NULL, 0, QUAY_ESTATE, "FIN to a sender that offered no key (PUT offer)");
    h = kcts(s2id, rid, 8, 128, 1, sizeof s2b, 0x1234);
    expect(0, 1, &h, NULL, 0, QUAY_ESTATE, "keyed CTS before the RTS was sent");
    is_int(tn_deliver(&T, i), 0);
    is_int(r->state, QUAY_RS_RECV_PUT);
    is_int(stats_of(1).regions_in_use, 1);
    tn_pull_all(&T); /* the keyed CTS, and s2's RTS */
    i = find(QUAY_PKT_CTS, 1, 0);
    pkt c = grab(i);
    wire_hdr k;
    memset(&k, 0, sizeof k);
    ok_msg(c.b != NULL && wire_decode(c.b, c.len, &k) == WIRE_CTS_LEN + WIRE_KEY_LEN &&
               k.flags == WIRE_F_KEY && k.sreq == sid && k.rreq == rid && k.index == 1 &&
               k.grant == 8 && k.frag == 128 && k.len == 1000 && k.key != 0,
           "keyed CTS (40 bytes): index 1, all 8 fragments granted");
    h = k;
    h.index = 2;
    expect(0, 1, &h, NULL, 0, QUAY_ESTATE, "keyed CTS with index 2");
    h = k;
    h.grant = 7;
    expect(0, 1, &h, NULL, 0, QUAY_ESTATE, "keyed CTS granting 7 of 8 fragments");
    h.grant = 9;
    expect(0, 1, &h, NULL, 0, QUAY_ESTATE, "keyed CTS granting 9 of 8 fragments");
    h.grant = 0;
    expect(0, 1, &h, NULL, 0, QUAY_ESTATE, "keyed CTS granting nothing");
    h = k;
    h.len = 1001; /* still 8 fragments */
    expect(0, 1, &h, NULL, 0, QUAY_ESTATE, "keyed CTS accepting more than the message");
    h = k;
    h.sreq = sid + GEN1;
    expect(0, 1, &h, NULL, 0, QUAY_ESTATE, "keyed CTS with a stale sreq generation");
    h = k;
    expect(0, 2, &h, NULL, 0, QUAY_ESTATE, "keyed CTS from the wrong peer");
    is_int(deliver_nodone(i), 0); /* its op_done held back: the receive waits for it */
    is_int(s->state, QUAY_RS_SEND_PUT);
    watch(s, r, NULL);
    expect_pkt(&c, QUAY_ESTATE, "the keyed CTS again (a second keyed CTS)");
    h = k;
    h.index = 2;
    expect(0, 1, &h, NULL, 0, QUAY_ESTATE, "a second keyed CTS, index 2");
    h.flags = 0;
    expect(0, 1, &h, NULL, 0, QUAY_ESTATE, "a plain CTS after the keyed one");
    h = fin(s2id, rid, 0, WIRE_F_TO_RECV);
    expect(1, 0, &h, NULL, 0, QUAY_ESTATE, "FIN to the receiver with another send's sreq");
    h = fin(sid, rid + GEN1, 0, WIRE_F_TO_RECV);
    expect(1, 0, &h, NULL, 0, QUAY_ESTATE, "FIN to the receiver with a stale rreq");
    h = fin(sid, rid, QUAY_EPROTO, WIRE_F_TO_RECV);
    expect(1, 2, &h, NULL, 0, QUAY_ESTATE, "FIN to the receiver from the wrong peer");
    h = fin(sid, sid, 0, WIRE_F_TO_RECV);
    expect(0, 1, &h, NULL, 0, QUAY_ESTATE, "FIN to the receiver naming a send request");
    h = fin(sid, rid, 0, 0);
    expect(0, 1, &h, NULL, 0, QUAY_ESTATE, "FIN to the sender of a PUT (SEND_PUT)");
    h = data(rid, 0);
    expect(1, 0, &h, junk, sizeof junk, QUAY_ESTATE, "DATA for a receive in RECV_PUT");

    pkt f = {NULL, 0, -1, -1};
    i = run_until(QUAY_PKT_FIN, 0, 1);
    if (ok_msg(i >= 0, "the sender sends its FIN")) {
        f = grab(i);
        ok_msg(wire_decode(f.b, f.len, &h) == WIRE_FIN_LEN && h.flags == WIRE_F_TO_RECV &&
                   h.sreq == sid && h.rreq == rid && h.status == 0,
               "FIN(sreq, rreq, 0) with TO_RECV");
        ok_msg(memcmp(sb, rb, sizeof sb) == 0, "the data was written before the FIN");
        is_int(tn_deliver(&T, i), 0); /* the FIN's op_done completes the send */
        ok(tn_good(s, sizeof sb));
        ok_msg(!tn_done(r, NULL), "FIN seen, CTS op_done not yet: the receive waits");
        watch(r, NULL, NULL);
        expect_pkt(&f, QUAY_ESTATE, "duplicate FIN before the receive completed");
        flush_pending();
        ok(tn_good(r, sizeof rb));
        expect_pkt(&f, QUAY_ESTATE, "duplicate FIN after the receive completed");
        nwatch = 0;
    }
    is_int(stats_of(1).regions_in_use, 0);
    quay_req_free(T.e[1], r);
    if (f.b != NULL)
        expect_pkt(&f, QUAY_ESTATE, "FIN for a released receive");
    ok(stats_of(1).rndv_put == 1 && stats_of(1).rndv_copy == 0);
    T.auto_done = 1;
    quay_irecv(T.e[1], T.world[1], r2b, sizeof r2b, 0, 9, &r2);
    tn_pump(&T);
    ok_msg(tn_good(s2, 1000) && tn_good(r2, 1000) && memcmp(s2b, r2b, sizeof s2b) == 0,
           "the second PUT rendezvous completes");
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[0], s2);
    quay_req_free(T.e[1], r2);
    pkt_free(&c);
    pkt_free(&f);
    finish();
}

/* The PUT offer declined (rank 1 in COPY mode): after the plain CTS no
 * keyed CTS and no FIN may come. */
static void rdma_put_declined_case(void)
{
    if (!setup_rdma(2, QUAY_RNDV_PUT, QUAY_RNDV_COPY))
        return;
    static uint8_t sb[1000], rb[1000];
    tn_fill(sb, sizeof sb, 95);
    quay_req *s, *r;
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 7, &r);
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 7, QUAY_SEND_STANDARD, &s);
    tn_pull_all(&T);
    is_int(tn_deliver(&T, find(QUAY_PKT_RTS, 0, 1)), 0);
    tn_pull_all(&T);
    int i = find(QUAY_PKT_CTS, 1, 0);
    wire_hdr h;
    ok_msg(i >= 0 && wire_decode(T.q[i].bytes, T.q[i].len, &h) == WIRE_CTS_LEN && h.flags == 0,
           "the PUT offer is answered by a plain CTS");
    is_int(tn_deliver(&T, i), 0);
    is_int(s->state, QUAY_RS_SEND_DATA);
    uint32_t sid = quay_req_id(s), rid = quay_req_id(r);
    watch(s, r, NULL);
    h = kcts(sid, rid, 8, 128, 1, sizeof sb, 0x1234);
    expect(0, 1, &h, NULL, 0, QUAY_ESTATE, "keyed CTS after a plain CTS");
    h.index = 2;
    expect(0, 1, &h, NULL, 0, QUAY_ESTATE, "keyed CTS after a plain CTS, index 2");
    h = fin(sid, rid, 0, 0);
    expect(0, 1, &h, NULL, 0, QUAY_ESTATE, "FIN to a PUT-offer sender after a plain CTS");
    tn_pump(&T);
    ok_msg(tn_good(s, 1000) && tn_good(r, 1000) && memcmp(sb, rb, sizeof sb) == 0,
           "the message arrives by DATA packets");
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);
    finish();
}

static void t_rdma_out_of_state(void)
{
    subtest("GET: FIN, keyed CTS and DATA out of state", rdma_get_case);
    subtest("GET offer declined; COPY sender", rdma_get_declined_case);
    subtest("PUT: keyed CTS and FIN out of state", rdma_put_case);
    subtest("PUT offer declined", rdma_put_declined_case);
}

/* ---- ANY_SOURCE arbitration: packets out of state ------------------------------------ */

/* n engines with receiver-initiated transfers (rtr) and, with `any`,
 * ANY_SOURCE arbitration; the transport has RDMA_PUT and RDMA_GET. */
static int setup_arb(int n, uint32_t rtr, uint32_t any, uint32_t per_peer, uint32_t slots)
{
    quay_config c[TN_MAX_RANKS];
    for (int r = 0; r < n; r++) {
        tn_config(&c[r], r, n);
        c[r].malformed_limit = 0; /* (refusals are this test's subject) */
        c[r].transport_caps = QUAY_CAP_RDMA_PUT | QUAY_CAP_RDMA_GET;
        c[r].rtr = rtr;
        c[r].rtr_any = any;
        c[r].rtr_per_peer = per_peer;
        c[r].any_slots = slots;
    }
    return setup_each(n, c, 1);
}

/* An arbitration packet (shared layout) from `from` to `to`, carrying the
 * sequence number `to` expects next from `from`: it is processed at once,
 * not held, and a rejection leaves that number to the real packet. */
static wire_hdr arbp(uint8_t type, int to, int from, uint32_t ctx, int32_t src, int32_t tag,
                     uint32_t rreq, uint32_t sreq, uint32_t slot, uint64_t len, uint64_t key)
{
    wire_hdr h = mk(type);
    h.seq = T.e[to]->peers[from].rx_seq;
    h.ctx = ctx;
    h.src = src;
    h.tag = tag;
    h.rreq = rreq;
    h.sreq = sreq;
    h.slot = slot;
    h.len = len;
    h.key = key;
    return h;
}

/* An SC from `from` to `to`, in its turn. */
static wire_hdr scp(int to, int from, uint32_t ctx, int32_t src, int32_t tag, uint32_t sreq,
                    uint32_t rreq, uint64_t len)
{
    wire_hdr h = mk(QUAY_PKT_SC);
    h.seq = T.e[to]->peers[from].rx_seq;
    h.ctx = ctx;
    h.src = src;
    h.tag = tag;
    h.sreq = sreq;
    h.rreq = rreq;
    h.len = len;
    return h;
}

/*
 * Rank 0 (R) receives with ANY_SOURCE, rank 1 (P) sends, rank 2 is a third
 * member that only forges; rtr_per_peer 2, any_slots 2. Forged, well-formed
 * ENA_ANY, ANY_FLAG, RTR_ANY, DISABLE_ANY and SC in every state of
 * the exchange (announced, table full, flag in flight, claim in flight,
 * written), each in its turn; then the real exchange and further wildcard
 * transfers complete.
 */
static void arb_states_case(void)
{
    if (!setup_arb(3, 1, 1, 2, 2))
        return;
    static uint8_t sb[2000], rb1[2000], rb2[2000], rb3[2000], s99b[1000], r99b[1000];
    tn_fill(sb, sizeof sb, 70);
    tn_fill(s99b, sizeof s99b, 71);
    quay_req *w1, *w2, *w3, *s1, *s2, *s3, *s99, *r99;
    wire_hdr h;
    peer_state *p_of_r = &T.e[1]->peers[0]; /* P's view of R */

    /* R announces (ANY_SOURCE, 1): ENA_ANY to P, which keeps it. */
    is_int(quay_irecv(T.e[0], T.world[0], rb1, sizeof rb1, QUAY_ANY_SOURCE, 1, &w1), 0);
    is_int(w1->state, QUAY_RS_RECV_ANY);
    tn_pull_all(&T);
    int i = find(QUAY_PKT_ENA_ANY, 0, 1);
    wire_hdr ena;
    memset(&ena, 0, sizeof ena);
    ok_msg(i >= 0 && wire_decode(T.q[i].bytes, T.q[i].len, &ena) == WIRE_ANY_LEN &&
               ena.ctx == 0 && ena.src == 0 && ena.tag == 1 && (ena.slot & 0xFFu) == 1,
           "ENA_ANY(ctx 0, src 0, tag 1, slot index 0) to the sender");
    tn_pump(&T);
    uint32_t A = ena.slot;
    ok_msg(p_of_r->nrtr == 1 && p_of_r->rtr[0].any && p_of_r->rtr[0].rreq == A,
           "the sender holds the announcement");

    /* ENA_ANY at the sender. */
    h = arbp(QUAY_PKT_ENA_ANY, 1, 0, 0, 0, 1, 0, 0, A, 0, 0);
    expect(1, 0, &h, NULL, 0, QUAY_ESTATE, "ENA_ANY repeating a held announcement id");
    h.tag = 5;
    expect(1, 0, &h, NULL, 0, QUAY_ESTATE, "ENA_ANY with a held id, another pattern");
    h = arbp(QUAY_PKT_ENA_ANY, 1, 0, 0, 1, 3, 0, 0, A + 1, 0, 0);
    expect(1, 0, &h, NULL, 0, QUAY_ESTATE, "ENA_ANY from peer 0 claiming comm rank 1");
    h.src = 2;
    expect(1, 0, &h, NULL, 0, QUAY_ESTATE, "ENA_ANY from peer 0 claiming comm rank 2");
    h.src = 3;
    expect(1, 0, &h, NULL, 0, QUAY_ESTATE, "ENA_ANY claiming a rank outside the comm");
    h = arbp(QUAY_PKT_ENA_ANY, 1, 0, 0, 0, 3, 0, 0, 0x500u, 0, 0);
    expect(1, 0, &h, NULL, 0, QUAY_ESTATE, "ENA_ANY whose slot id has index byte 0");
    h = arbp(QUAY_PKT_ENA_ANY, 1, 1, 0, 1, 3, 0, 0, A + 1, 0, 0);
    expect(1, 1, &h, NULL, 0, QUAY_ESTATE, "ENA_ANY from the engine itself");

    /* A second pattern fills the sender's table (rtr_per_peer 2). */
    is_int(quay_irecv(T.e[0], T.world[0], rb2, sizeof rb2, QUAY_ANY_SOURCE, 2, &w2), 0);
    is_int(w2->state, QUAY_RS_RECV_ANY);
    tn_pump(&T);
    ok_msg(p_of_r->nrtr == 2 && T.e[0]->peers[1].rtr_out == 2, "the sender's table is full");
    h = arbp(QUAY_PKT_ENA_ANY, 1, 0, 0, 0, 3, 0, 0, 0x103u, 0, 0);
    expect(1, 0, &h, NULL, 0, QUAY_ESTATE, "ENA_ANY beyond rtr_per_peer");
    h.slot = (A & 0xFFu) | 0x7700u;
    expect(1, 0, &h, NULL, 0, QUAY_ESTATE, "ENA_ANY beyond rtr_per_peer (a slot's new generation)");

    /* A send with no flag out: its RTS waits at R (tag 99 meets no
     * announcement). */
    is_int(quay_isend(T.e[1], T.world[1], s99b, sizeof s99b, 0, 99, QUAY_SEND_STANDARD, &s99),
           0);
    tn_pump(&T);
    is_int(s99->state, QUAY_RS_SEND_RTS);
    uint32_t w1id = quay_req_id(w1), w2id = quay_req_id(w2), s99id = quay_req_id(s99);
    watch(s99, w1, w2);
    h = arbp(QUAY_PKT_RTR_ANY, 1, 0, 0, 0, 0, w1id, s99id, 0, sizeof rb1, 0x1234);
    expect(1, 0, &h, NULL, 0, QUAY_ESTATE, "RTR_ANY naming a send with no flag out");
    h.sreq = GEN1 | 200;
    expect(1, 0, &h, NULL, 0, QUAY_ESTATE, "RTR_ANY naming an unknown send");
    h.sreq = w1id;
    expect(1, 0, &h, NULL, 0, QUAY_ESTATE, "RTR_ANY naming a receive request");
    h = arbp(QUAY_PKT_DISABLE_ANY, 1, 0, 0, 0, 0, 0, s99id, A, 0, 0);
    expect(1, 0, &h, NULL, 0, QUAY_ESTATE, "DISABLE_ANY declining a send with no flag out");
    h.flags = WIRE_F_DROP;
    expect(1, 0, &h, NULL, 0, QUAY_ESTATE, "DISABLE_ANY+DROP declining a send with no flag out");

    /* A large send to R meets announcement A first: its flag goes out. */
    is_int(quay_isend(T.e[1], T.world[1], sb, 1000, 0, 1, QUAY_SEND_STANDARD, &s1), 0);
    is_int(s1->state, QUAY_RS_SEND_ANY);
    tn_pull_all(&T);
    i = find(QUAY_PKT_ANY_FLAG, 1, 0);
    wire_hdr flag;
    memset(&flag, 0, sizeof flag);
    uint32_t s1id = quay_req_id(s1);
    ok_msg(i >= 0 && wire_decode(T.q[i].bytes, T.q[i].len, &flag) == WIRE_ANY_LEN &&
               flag.sreq == s1id && flag.slot == A && flag.tag == 1 && flag.src == 1 &&
               flag.len == 1000 && flag.seq == T.e[0]->peers[1].rx_seq,
           "ANY_FLAG(sreq, slot A, tag 1, len 1000) in flight, next in R's sequence");
    pkt fl = grab(i);
    /* The forging helper, given the real flag's fields, rebuilds it byte
     * for byte: the forgeries below differ from it only where they say. */
    uint8_t fb[QUAY_MAX_HEADER];
    h = arbp(QUAY_PKT_ANY_FLAG, 0, 1, 0, 1, 1, 0, s1id, A, 1000, 0);
    ok_msg(fl.b != NULL && encode(&h, NULL, 0, fb) == fl.len && memcmp(fb, fl.b, fl.len) == 0,
           "a forged ANY_FLAG in R's sequence equals the real one");
    watch(s1, s99, NULL);
    h = arbp(QUAY_PKT_RTR_ANY, 1, 0, 0, 0, 0, w1id, s1id + GEN1, 0, sizeof rb1, 0x1234);
    expect(1, 0, &h, NULL, 0, QUAY_ESTATE, "RTR_ANY with a stale sreq generation");
    h.sreq = s1id;
    h.ctx = 7;
    expect(1, 0, &h, NULL, 0, QUAY_ESTATE, "RTR_ANY for the flagged send, another ctx");
    h.ctx = 0;
    h.src = 1;
    expect(1, 0, &h, NULL, 0, QUAY_ESTATE, "RTR_ANY for the flagged send, src not its receiver");
    h = arbp(QUAY_PKT_RTR_ANY, 1, 1, 0, 0, 0, w1id, s1id, 0, sizeof rb1, 0x1234);
    expect(1, 1, &h, NULL, 0, QUAY_ESTATE, "RTR_ANY from the engine itself");
    h = arbp(QUAY_PKT_RTR_ANY, 1, 2, 0, 2, 0, w1id, s1id, 0, sizeof rb1, 0x1234);
    expect(1, 2, &h, NULL, 0, QUAY_ESTATE, "RTR_ANY from a peer the flag did not go to");
    h = arbp(QUAY_PKT_DISABLE_ANY, 1, 2, 0, 2, 0, 0, s1id, A, 0, 0);
    expect(1, 2, &h, NULL, 0, QUAY_ESTATE, "DISABLE_ANY from a peer the flag did not go to");
    h = arbp(QUAY_PKT_DISABLE_ANY, 1, 2, 0, 2, 0, 0, 0, A, 0, 0);
    expect(1, 2, &h, NULL, 0, QUAY_ESTATE,
           "DISABLE_ANY withdrawing another receiver's announcement id");
    h = arbp(QUAY_PKT_DISABLE_ANY, 1, 0, 0, 0, 0, 0, s1id + GEN1, A, 0, 0);
    expect(1, 0, &h, NULL, 0, QUAY_ESTATE, "DISABLE_ANY with a stale sreq generation");
    h = arbp(QUAY_PKT_DISABLE_ANY, 1, 0, 0, 0, 0, 0, s1id, 0x103u, 0, 0);
    h.flags = WIRE_F_DROP;
    expect(1, 0, &h, NULL, 0, QUAY_ESTATE,
           "DISABLE_ANY+DROP for the flagged send, announcement not held");
    h = arbp(QUAY_PKT_DISABLE_ANY, 1, 0, 0, 0, 0, 0, 0, 0x103u, 0, 0);
    expect(1, 0, &h, NULL, 0, QUAY_ESTATE, "DISABLE_ANY withdrawing an id never announced");
    h.slot = A + 0x100u;
    expect(1, 0, &h, NULL, 0, QUAY_ESTATE,
           "DISABLE_ANY withdrawing a held slot's other generation");
    ok_msg(p_of_r->nrtr == 2 && T.e[1]->peers[0].any_send == s1,
           "the sender's table and flag are unchanged");

    /* ANY_FLAG and SC at R while the flag is in flight. */
    watch(w1, w2, NULL);
    h = arbp(QUAY_PKT_ANY_FLAG, 0, 1, 0, 1, 1, 0, s1id, 0x103u, 1000, 0);
    expect(0, 1, &h, NULL, 0, QUAY_ESTATE, "ANY_FLAG for slot index 2 (any_slots 2)");
    h.slot = 0x1FFu;
    expect(0, 1, &h, NULL, 0, QUAY_ESTATE, "ANY_FLAG for slot index 254");
    h.slot = 0x100u;
    expect(0, 1, &h, NULL, 0, QUAY_ESTATE, "ANY_FLAG whose slot id has index byte 0");
    h.slot = A;
    h.src = 0;
    expect(0, 1, &h, NULL, 0, QUAY_ESTATE, "ANY_FLAG from peer 1 claiming comm rank 0");
    h.src = 5;
    expect(0, 1, &h, NULL, 0, QUAY_ESTATE, "ANY_FLAG claiming a rank outside the comm");
    h = arbp(QUAY_PKT_ANY_FLAG, 0, 0, 0, 0, 1, 0, s1id, A, 1000, 0);
    expect(0, 0, &h, NULL, 0, QUAY_ESTATE, "ANY_FLAG from the engine itself");
    h = scp(0, 1, 0, 1, 1, s1id, w1id, 1000);
    expect(0, 1, &h, NULL, 0, QUAY_ESTATE, "SC into an unclaimed wildcard receive");

    /* The real flag: R claims w1 for s1 (RTR_ANY). */
    is_int(tn_deliver(&T, find(QUAY_PKT_ANY_FLAG, 1, 0)), 0);
    expect_pkt(&fl, QUAY_ESTATE, "the ANY_FLAG replayed");
    tn_pull_all(&T);
    i = find(QUAY_PKT_RTR_ANY, 0, 1);
    wire_hdr claim;
    memset(&claim, 0, sizeof claim);
    ok_msg(i >= 0 && wire_decode(T.q[i].bytes, T.q[i].len, &claim) == WIRE_ANY_LEN &&
               claim.rreq == w1id && claim.sreq == s1id && claim.len == sizeof rb1 &&
               claim.key != 0 && (w1->flags & RF_ANY_CLAIMED),
           "w1 claimed for s1: RTR_ANY(rreq, sreq, cap, key) in flight");
    watch(w1, w2, NULL);
    h = scp(0, 2, 0, 2, 1, s1id, w1id, 1000);
    expect(0, 2, &h, NULL, 0, QUAY_ESTATE, "SC into the claimed receive from another peer");
    h = scp(0, 1, 0, 1, 1, s1id + GEN1, w1id, 1000);
    expect(0, 1, &h, NULL, 0, QUAY_ESTATE, "SC into the claimed receive from another send");
    h = scp(0, 1, 0, 0, 1, s1id, w1id, 1000);
    expect(0, 1, &h, NULL, 0, QUAY_ESTATE, "SC into the claimed receive, false src");
    h = scp(0, 1, 0, 1, 2, s1id, w1id, 1000);
    expect(0, 1, &h, NULL, 0, QUAY_ESTATE, "SC into the claimed receive, another tag");
    h = scp(0, 1, 0, 1, 2, s1id, w2id, 1000);
    expect(0, 1, &h, NULL, 0, QUAY_ESTATE, "SC into the other, unclaimed wildcard");

    /* The claim reaches P: it writes, then SC. */
    pkt cl = grab(i);
    h = arbp(QUAY_PKT_RTR_ANY, 1, 0, 0, 0, 0, w1id, s1id, 0, sizeof rb1, claim.key);
    ok_msg(cl.b != NULL && encode(&h, NULL, 0, fb) == cl.len && memcmp(fb, cl.b, cl.len) == 0,
           "a forged RTR_ANY in P's sequence equals the real one");
    is_int(tn_deliver(&T, i), 0);
    is_int(s1->state, QUAY_RS_SEND_WRITE);
    ok_msg(T.e[1]->peers[0].any_send == NULL, "the flag is answered");
    watch(s1, s99, NULL);
    h = arbp(QUAY_PKT_RTR_ANY, 1, 0, 0, 0, 0, w1id, s1id, 0, sizeof rb1, claim.key);
    expect(1, 0, &h, NULL, 0, QUAY_ESTATE, "RTR_ANY again after the claim was taken");
    h = arbp(QUAY_PKT_DISABLE_ANY, 1, 0, 0, 0, 0, 0, s1id, A, 0, 0);
    expect(1, 0, &h, NULL, 0, QUAY_ESTATE, "DISABLE_ANY for a send already writing");
    expect_pkt(&cl, QUAY_ESTATE, "the RTR_ANY replayed");
    tn_pump(&T);
    ok_msg(tn_good(w1, 1000) && tn_good(s1, 1000) && memcmp(rb1, sb, 1000) == 0,
           "the claimed wildcard receive completes with s1's data");
    quay_status st;
    ok(tn_done(w1, &st) && st.source == 1 && st.tag == 1);
    nwatch = 0;
    h = scp(0, 1, 0, 1, 1, s1id, w1id, 1000);
    expect(0, 1, &h, NULL, 0, QUAY_ESTATE, "SC again for the completed receive");
    quay_req_free(T.e[0], w1);
    quay_req_free(T.e[1], s1);
    pkt_free(&fl);
    pkt_free(&cl);

    /* The engines are healthy: wildcard transfers through both
     * announcements (reused), and the waiting RTS. */
    quay_stats before = stats_of(0);
    is_int(quay_irecv(T.e[0], T.world[0], rb3, sizeof rb3, QUAY_ANY_SOURCE, 1, &w3), 0);
    is_int(quay_isend(T.e[1], T.world[1], sb, 2000, 0, 1, QUAY_SEND_STANDARD, &s2), 0);
    is_int(quay_isend(T.e[1], T.world[1], sb + 7, 600, 0, 2, QUAY_SEND_STANDARD, &s3), 0);
    is_int(quay_irecv(T.e[0], T.world[0], r99b, sizeof r99b, 1, 99, &r99), 0);
    tn_pump(&T);
    ok_msg(tn_good(w3, 2000) && tn_good(s2, 2000) && memcmp(rb3, sb, 2000) == 0,
           "a new wildcard receive on the reused announcement completes");
    ok_msg(tn_good(w2, 600) && tn_good(s3, 600) && memcmp(rb2, sb + 7, 600) == 0,
           "the second wildcard receive completes");
    ok_msg(tn_good(r99, sizeof r99b) && tn_good(s99, sizeof s99b) &&
               memcmp(r99b, s99b, sizeof s99b) == 0,
           "the waiting rendezvous completes");
    quay_stats after = stats_of(0);
    ok_msg(after.any_claimed - before.any_claimed == 2 && after.any_reused > before.any_reused,
           "both went through arbitration (claimed %llu, reused %llu)",
           (unsigned long long)(after.any_claimed - before.any_claimed),
           (unsigned long long)(after.any_reused - before.any_reused));
    quay_req_free(T.e[0], w2);
    quay_req_free(T.e[0], w3);
    quay_req_free(T.e[0], r99);
    quay_req_free(T.e[1], s2);
    quay_req_free(T.e[1], s3);
    quay_req_free(T.e[1], s99);
    finish();
}

/* Arbitration packets (and RTR / SC) to engines that do not run the
 * protocol: rtr_any 0 (rtr 1), then rtr 0. */
static void arb_off_case(void)
{
    for (int rtr = 1; rtr >= 0; rtr--) {
        if (!setup_arb(2, (uint32_t)rtr, 0, 2, 2))
            return;
        static uint8_t sb[1000], rb[1000];
        tn_fill(sb, sizeof sb, 72);
        quay_req *w, *s;
        is_int(quay_irecv(T.e[1], T.world[1], rb, sizeof rb, QUAY_ANY_SOURCE, 1, &w), 0);
        ok_msg(w->state != QUAY_RS_RECV_ANY, "rtr %d, rtr_any 0: no announcement", rtr);
        tn_pump(&T);
        uint32_t wid = quay_req_id(w);
        watch(w, NULL, NULL);
        char what[96];
        wire_hdr h = arbp(QUAY_PKT_ENA_ANY, 1, 0, 0, 0, 1, 0, 0, 0x101u, 0, 0);
        snprintf(what, sizeof what, "ENA_ANY to an engine with rtr %d, rtr_any 0", rtr);
        expect(1, 0, &h, NULL, 0, QUAY_ESTATE, what);
        h = arbp(QUAY_PKT_ANY_FLAG, 1, 0, 0, 0, 1, 0, GEN1 | 3, 0x101u, 1000, 0);
        snprintf(what, sizeof what, "ANY_FLAG to an engine with rtr %d, rtr_any 0", rtr);
        expect(1, 0, &h, NULL, 0, QUAY_ESTATE, what);
        h = arbp(QUAY_PKT_RTR_ANY, 1, 0, 0, 0, 0, GEN1 | 4, GEN1 | 3, 0, 1000, 0x1234);
        snprintf(what, sizeof what, "RTR_ANY to an engine with rtr %d, rtr_any 0", rtr);
        expect(1, 0, &h, NULL, 0, QUAY_ESTATE, what);
        h = arbp(QUAY_PKT_DISABLE_ANY, 1, 0, 0, 0, 0, 0, GEN1 | 3, 0x101u, 0, 0);
        h.flags = WIRE_F_DROP;
        snprintf(what, sizeof what, "DISABLE_ANY+DROP to an engine with rtr %d, rtr_any 0", rtr);
        expect(1, 0, &h, NULL, 0, QUAY_ESTATE, what);
        h = arbp(QUAY_PKT_DISABLE_ANY, 1, 0, 0, 0, 0, 0, 0, 0x101u, 0, 0);
        snprintf(what, sizeof what, "DISABLE_ANY withdrawal to an engine with rtr %d, rtr_any 0",
                 rtr);
        expect(1, 0, &h, NULL, 0, QUAY_ESTATE, what);
        h = scp(1, 0, 0, 0, 1, GEN1 | 3, wid, 1000);
        snprintf(what, sizeof what, "SC into a plain wildcard receive (rtr %d)", rtr);
        expect(1, 0, &h, NULL, 0, QUAY_ESTATE, what);
        if (rtr == 0) {
            h = mk(QUAY_PKT_RTR);
            h.seq = T.e[1]->peers[0].rx_seq;
            h.ctx = 0;
            h.src = 0;
            h.tag = 1;
            h.rreq = GEN1 | 4;
            h.len = 1000;
            h.key = 0x1234;
            expect(1, 0, &h, NULL, 0, QUAY_ESTATE, "RTR to an engine with rtr 0");
            h.flags = WIRE_F_CANCEL;
            h.len = 0;
            h.key = 0;
            expect(1, 0, &h, NULL, 0, QUAY_ESTATE, "RTR cancel to an engine with rtr 0");
        }
        nwatch = 0;
        is_int(quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 1, QUAY_SEND_STANDARD, &s), 0);
        tn_pump(&T);
        ok_msg(tn_good(w, sizeof rb) && tn_good(s, sizeof sb) && memcmp(rb, sb, sizeof sb) == 0,
               "a wildcard transfer completes afterwards (rtr %d)", rtr);
        quay_req_free(T.e[1], w);
        quay_req_free(T.e[0], s);
        finish();
    }
}

static void t_arb_out_of_state(void)
{
    subtest("arbitration packets in wrong states", arb_states_case);
    subtest("arbitration packets to engines without rtr_any", arb_off_case);
}

/* ---- quay_on_op_done ----------------------------------------------------------------- */

static void t_op_done(void)
{
    if (!setup(2))
        return;
    uint8_t sb[50];
    tn_fill(sb, sizeof sb, 18);
    quay_req *s;
    T.auto_done = 0;
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 1, QUAY_SEND_STANDARD, &s);
    tn_pull(&T, 0);
    is_int(T.nq, 1);
    uint64_t tok = T.q[0].token;
    uint64_t hi = tok & ~(uint64_t)UINT32_MAX;
    is_int(quay_on_op_done(T.e[0], tok + (1ull << 32), 0), QUAY_ESTATE);
    is_int(quay_on_op_done(T.e[0], tok - (1ull << 32), 0), QUAY_ESTATE);
    is_int(quay_on_op_done(T.e[0], hi | 999, 0), QUAY_ESTATE);  /* beyond max_out */
    is_int(quay_on_op_done(T.e[0], hi | 200, 0), QUAY_ESTATE);  /* not in use */
    is_int(quay_on_op_done(T.e[0], UINT64_MAX, 0), QUAY_ESTATE);
    is_int(quay_on_op_done(T.e[0], 0, 0), QUAY_ESTATE);
    is_int(quay_on_op_done(NULL, tok, 0), QUAY_EINVAL);
    is_int(quay_on_op_done(T.e[1], tok, 0), QUAY_ESTATE); /* another engine's token */
    ok(!tn_done(s, NULL));
    is_int(quay_on_op_done(T.e[0], tok, 0), 0);
    T.q[0].done = 1;
    ok(tn_good(s, 50));
    is_int(quay_on_op_done(T.e[0], tok, 0), QUAY_ESTATE); /* twice */
    uint8_t rb[50];
    quay_req *r;
    tn_pump(&T);
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 1, &r);
    ok(tn_good(r, 50) && memcmp(rb, sb, sizeof sb) == 0);
    quay_req_free(T.e[1], r);
    quay_req_free(T.e[0], s);
    finish();
}

/* ---- bounds ---------------------------------------------------------------------------- */

static void t_unexpected_bytes(void)
{
    quay_config cfg;
    tn_config(&cfg, 0, 2);
    cfg.malformed_limit = 0; /* (refusals are this test's subject) */
    cfg.unexpected_bytes_max = 200;
    if (!setup_cfg(2, &cfg))
        return;
    uint8_t sb[250], rb[250];
    tn_fill(sb, sizeof sb, 19);
    quay_req *s[5], *r[5];
    quay_isend(T.e[0], T.world[0], sb, 250, 1, 1, QUAY_SEND_STANDARD, &s[0]);
    tn_pull_all(&T);
    pkt p0 = take(0);
    expect_pkt(&p0, QUAY_EAGAIN, "unexpected EAGER larger than unexpected_bytes_max");
    quay_irecv(T.e[1], T.world[1], rb, 250, 0, 1, &r[0]);
    is_int(offer(&p0), 0);
    ok(tn_good(r[0], 250) && memcmp(rb, sb, 250) == 0);

    quay_isend(T.e[0], T.world[0], sb, 150, 1, 2, QUAY_SEND_STANDARD, &s[1]);
    quay_isend(T.e[0], T.world[0], sb + 50, 150, 1, 2, QUAY_SEND_STANDARD, &s[2]);
    tn_pull_all(&T);
    pkt p1 = take(0), p2 = take(0);
    is_int(offer(&p1), 0);
    expect_pkt(&p2, QUAY_EAGAIN, "second unexpected EAGER beyond the byte budget");
    quay_irecv(T.e[1], T.world[1], rb, 250, 0, 2, &r[1]);
    ok(tn_good(r[1], 150) && memcmp(rb, sb, 150) == 0);
    is_int(offer(&p2), 0);
    quay_irecv(T.e[1], T.world[1], rb, 250, 0, 2, &r[2]);
    ok(tn_good(r[2], 150) && memcmp(rb, sb + 50, 150) == 0);

    quay_isend(T.e[0], T.world[0], sb, 150, 1, 3, QUAY_SEND_STANDARD, &s[3]);
    quay_isend(T.e[0], T.world[0], sb + 100, 150, 1, 3, QUAY_SEND_STANDARD, &s[4]);
    tn_pull_all(&T);
    pkt p3 = take(0), p4 = take(0);
    expect_pkt(&p4, QUAY_EAGAIN, "held EAGER beyond half the byte budget");
    is_int(offer(&p3), 0);
    expect_pkt(&p4, QUAY_EAGAIN, "in-order EAGER beyond the byte budget");
    quay_irecv(T.e[1], T.world[1], rb, 250, 0, 3, &r[3]);
    ok(tn_good(r[3], 150));
    is_int(offer(&p4), 0);
    quay_irecv(T.e[1], T.world[1], rb, 250, 0, 3, &r[4]);
    ok(tn_good(r[4], 150) && memcmp(rb, sb + 100, 150) == 0);
    for (int k = 0; k < 5; k++) {
        quay_req_free(T.e[0], s[k]);
        quay_req_free(T.e[1], r[k]);
    }
    pkt *all[] = {&p0, &p1, &p2, &p3, &p4};
    for (size_t k = 0; k < COUNT_OF(all); k++)
        pkt_free(all[k]);
    finish();
}

static void t_descriptor_pool(void)
{
    quay_config cfg;
    tn_config(&cfg, 0, 2);
    cfg.malformed_limit = 0; /* (refusals are this test's subject) */
    cfg.max_unexpected = 4;
    if (!setup_cfg(2, &cfg))
        return;
    static uint8_t sb[6][1000], rb[6][1000];
    quay_req *s[6], *r[6];
    for (int k = 0; k < 6; k++) {
        tn_fill(sb[k], 1000, 50 + k);
        quay_isend(T.e[0], T.world[0], sb[k], k == 5 ? 1000 : 20, 1, 1, QUAY_SEND_STANDARD,
                   &s[k]);
    }
    tn_pull_all(&T);
    pkt p[6];
    for (int k = 0; k < 6; k++)
        p[k] = take(0);
    for (int k = 0; k < 4; k++)
        is_int(offer(&p[k]), 0);
    expect_pkt(&p[4], QUAY_EAGAIN, "EAGER with the descriptor pool exhausted");
    quay_irecv(T.e[1], T.world[1], rb[0], 1000, 0, 1, &r[0]);
    is_int(offer(&p[4]), 0);
    expect_pkt(&p[5], QUAY_EAGAIN, "RTS with the descriptor pool exhausted");
    quay_irecv(T.e[1], T.world[1], rb[1], 1000, 0, 1, &r[1]);
    is_int(offer(&p[5]), 0);
    for (int k = 2; k < 6; k++)
        quay_irecv(T.e[1], T.world[1], rb[k], 1000, 0, 1, &r[k]);
    tn_pump(&T);
    int all = 1;
    for (int k = 0; k < 6; k++) {
        size_t len = k == 5 ? 1000 : 20;
        all &= tn_good(r[k], len) && tn_good(s[k], len) && memcmp(rb[k], sb[k], len) == 0;
        quay_req_free(T.e[0], s[k]);
        quay_req_free(T.e[1], r[k]);
        pkt_free(&p[k]);
    }
    ok_msg(all, "all six messages received in order after the back-pressure");
    finish();
}

static void t_ctrl_ring(void)
{
    quay_config cfg;
    tn_config(&cfg, 0, 2);
    cfg.malformed_limit = 0; /* (refusals are this test's subject) */
    cfg.max_ctrl = 1;
    if (!setup_cfg(2, &cfg))
        return;
    uint8_t sb[3][10], rb[3][10];
    quay_req *s[3], *r[3];
    for (int k = 0; k < 3; k++) {
        tn_fill(sb[k], 10, 60 + k);
        quay_irecv(T.e[1], T.world[1], rb[k], 10, 0, 1, &r[k]);
    }
    for (int k = 0; k < 3; k++)
        quay_isend(T.e[0], T.world[0], sb[k], 10, 1, 1, QUAY_SEND_SYNC, &s[k]);
    tn_pull_all(&T);
    is_int(tn_deliver(&T, 0), 0); /* seq 0 matched: its ACK fills the ring */
    /* seq 1 needs a reply slot too: kept, not refused, and processed when
     * the ring drains; seq 2 is held behind it. */
    is_int(tn_deliver(&T, 0), 0);
    quay_stats st;
    quay_engine_stats(T.e[1], &st);
    is_int(st.held_out_of_order, 1);
    is_int(st.pkts_deferred, 0);
    ok(!tn_done(r[1], NULL));
    is_int(tn_deliver(&T, 0), 0);
    tn_pump(&T);
    int all = 1;
    for (int k = 0; k < 3; k++) {
        all &= tn_good(s[k], 10) && tn_good(r[k], 10) && memcmp(rb[k], sb[k], 10) == 0;
        quay_req_free(T.e[0], s[k]);
        quay_req_free(T.e[1], r[k]);
    }
    ok_msg(all, "no message or ACK lost after the ring drained");

    /* Receives that would owe an ACK also wait for the ring. */
    for (int k = 0; k < 2; k++)
        quay_isend(T.e[0], T.world[0], sb[k], 10, 1, 2, QUAY_SEND_SYNC, &s[k]);
    tn_pump(&T);
    is_int(quay_irecv(T.e[1], T.world[1], rb[0], 10, 0, 2, &r[0]), 0);
    ok(tn_good(r[0], 10));
    quay_req *x = (quay_req *)&x;
    is_int(quay_irecv(T.e[1], T.world[1], rb[1], 10, 0, 2, &x), QUAY_EAGAIN);
    ok(x == NULL);
    quay_msg *m = (quay_msg *)&m;
    is_int(quay_improbe(T.e[1], T.world[1], 0, 2, &m, NULL), QUAY_EAGAIN);
    ok(m == NULL);
    int flag = 0;
    is_int(quay_iprobe(T.e[1], T.world[1], 0, 2, &flag, NULL), 0);
    ok(flag);
    tn_pump(&T);
    is_int(quay_irecv(T.e[1], T.world[1], rb[1], 10, 0, 2, &r[1]), 0);
    tn_pump(&T);
    for (int k = 0; k < 2; k++) {
        ok(tn_good(r[k], 10) && tn_good(s[k], 10) && memcmp(rb[k], sb[k], 10) == 0);
        quay_req_free(T.e[0], s[k]);
        quay_req_free(T.e[1], r[k]);
    }
    finish();
}

/*
 * Regression (src/engine/seq.c, seq_on_packet): when the held packet whose
 * turn has come could not be processed (control ring full: drain_blocked),
 * a copy of that packet offered again was taken by the `d == 0` path as a
 * new in-order packet once the ring had room: the replay was delivered,
 * rx_seq moved past the held original, which was never drained (a
 * descriptor and its payload leaked).
 */
static void t_reg_replay_of_blocked_held(void)
{
    quay_config cfg;
    tn_config(&cfg, 0, 2);
    cfg.malformed_limit = 0; /* (refusals are this test's subject) */
    cfg.max_ctrl = 1;
    if (!setup_cfg(2, &cfg))
        return;
    uint8_t sb[2][10], rb[2][10];
    quay_req *s[2], *r[2];
    for (int k = 0; k < 2; k++) {
        tn_fill(sb[k], 10, 70 + k);
        quay_irecv(T.e[1], T.world[1], rb[k], 10, 0, 1, &r[k]);
        quay_isend(T.e[0], T.world[0], sb[k], 10, 1, 1, QUAY_SEND_SYNC, &s[k]);
    }
    tn_pull_all(&T);
    pkt b = grab(1);
    is_int(tn_deliver(&T, 1), 0); /* B (seq 1) held */
    is_int(tn_deliver(&T, 0), 0); /* A: matched, ACK fills the ring, B blocked */
    quay_stats st;
    quay_engine_stats(T.e[1], &st);
    is_int(st.held_out_of_order, 1);
    is_int(pull_one(1), 1); /* the ACK leaves: the ring has room again */
    int rc = offer(&b);
    n_bad++;
    ok_msg(rc == QUAY_ESTATE || rc == QUAY_EAGAIN,
           "copy of the blocked held packet not taken as new: %s", quay_strerror(rc));
    tn_pump(&T);
    int all = 1;
    for (int k = 0; k < 2; k++) {
        all &= tn_good(s[k], 10) && tn_good(r[k], 10) && memcmp(rb[k], sb[k], 10) == 0;
        quay_req_free(T.e[0], s[k]);
        quay_req_free(T.e[1], r[k]);
    }
    ok(all);
    pkt_free(&b);
    finish();
}

static void t_request_pool(void)
{
    quay_config cfg;
    tn_config(&cfg, 0, 2);
    cfg.malformed_limit = 0; /* (refusals are this test's subject) */
    cfg.max_requests = 4;
    if (!setup_cfg(2, &cfg))
        return;
    static uint8_t abuf[1024];
    uint8_t b[4][10];
    quay_req *r[4], *x;
    for (int k = 0; k < 4; k++)
        is_int(quay_irecv(T.e[1], T.world[1], b[k], 10, 0, k, &r[k]), 0);
    x = (quay_req *)&x;
    is_int(quay_isend(T.e[1], T.world[1], b[0], 10, 0, 1, QUAY_SEND_STANDARD, &x), QUAY_EAGAIN);
    ok(x == NULL);
    is_int(quay_irecv(T.e[1], T.world[1], b[0], 10, 0, 9, &x), QUAY_EAGAIN);
    is_int(quay_isend(T.e[1], T.world[1], b[0], 10, QUAY_PROC_NULL, 1, QUAY_SEND_STANDARD, &x),
           QUAY_EAGAIN);
    is_int(quay_irecv(T.e[1], T.world[1], b[0], 10, QUAY_PROC_NULL, 1, &x), QUAY_EAGAIN);
    is_int(quay_imrecv(T.e[1], QUAY_MSG_NO_PROC, b[0], 10, &x), QUAY_EAGAIN);
    quay_stats st;
    quay_engine_stats(T.e[1], &st);
    is_int(st.reqs_in_use, 4);
    /* One slot free: a buffered send needs two (user + carrier). */
    quay_cancel(T.e[1], r[3]);
    quay_req_free(T.e[1], r[3]);
    is_int(quay_buffer_attach(T.e[1], abuf, sizeof abuf), 0);
    is_int(quay_isend(T.e[1], T.world[1], b[0], 10, 0, 1, QUAY_SEND_BUFFERED, &x), QUAY_EAGAIN);
    is_int(quay_isend(T.e[1], T.world[1], b[0], 10, 0, 1, QUAY_SEND_STANDARD, &x), 0);
    quay_req *rr;
    uint8_t rb[10];
    quay_irecv(T.e[0], T.world[0], rb, 10, 1, 1, &rr);
    tn_pump(&T);
    ok(tn_good(x, 10) && tn_good(rr, 10));
    quay_req_free(T.e[1], x);
    quay_req_free(T.e[0], rr);
    for (int k = 0; k < 3; k++) {
        quay_cancel(T.e[1], r[k]);
        quay_req_free(T.e[1], r[k]);
    }
    void *pb;
    size_t pl;
    is_int(quay_buffer_detach(T.e[1], &pb, &pl), 0);
    finish();
}

/* ---- differential fuzz through quay_on_packet -------------------------------------------- */

typedef struct xrng {
    uint64_t s;
} xrng;

static uint32_t xr(xrng *r, uint32_t n)
{
    uint64_t x = r->s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    r->s = x;
    return (uint32_t)((x * 0x2545f4914f6cdd1dull) >> 32) % n;
}

/*
 * 20,000 packets from peer 0 to a live engine that keeps receives posted:
 * mostly in-order standard EAGERs (the fast path), some synchronous, some
 * other types, three in four with one random byte changed, truncated or
 * extended. quay_on_packet must answer QUAY_EPROTO exactly when
 * wire_decode rejects the bytes, otherwise 0, QUAY_ESTATE or QUAY_EAGAIN;
 * never a fatal code (the oracle check is on). Ranks 1 and 2 must then
 * still exchange normally.
 */
static void t_fuzz_on_packet(void)
{
    quay_config cfg;
    tn_config(&cfg, 0, 3);
    cfg.malformed_limit = 0; /* (refusals are this test's subject) */
    cfg.max_unexpected = 4096;
    if (!setup_cfg(3, &cfg))
        return;
    quay_comm *c5;
    is_int(quay_comm_create(T.e[1], 5, 3, NULL, &c5), 0);
    xrng g = {0x0123456789abcdefull};
    quay_req *posted[8] = {NULL};
    static uint8_t pbuf[8][64];
    long n_proto = 0, n_ok = 0, n_state = 0, n_again = 0, mism = 0, fatal = 0;
    for (int it = 0; it < 20000 && !fatal; it++) {
        quay_stats st;
        quay_engine_stats(T.e[1], &st);
        for (int k = 0; k < 8; k++) {
            if (posted[k] != NULL && posted[k]->state == QUAY_RS_RECV_RNDV)
                posted[k] = NULL; /* matched a mutated RTS: no DATA will come */
            if (posted[k] != NULL && !tn_done(posted[k], NULL))
                continue;
            if (posted[k] != NULL)
                quay_req_free(T.e[1], posted[k]);
            posted[k] = NULL;
            if (st.reqs_in_use < 200)
                quay_irecv(T.e[1], T.world[1], pbuf[k], 64, k % 2 ? QUAY_ANY_SOURCE : 0,
                           k % 3 ? QUAY_ANY_TAG : k % 4, &posted[k]);
        }
        uint8_t b[128], pl[48];
        for (size_t i = 0; i < sizeof pl; i++)
            pl[i] = (uint8_t)xr(&g, 256);
        uint32_t rx = T.e[1]->peers[0].rx_seq;
        uint32_t kind = xr(&g, 10);
        wire_hdr h;
        size_t n;
        if (kind < 8) {
            h = env(QUAY_PKT_EAGER, rx, 0, 0, (int32_t)xr(&g, 4), 0, xr(&g, 41));
            if (kind == 7) {
                h.flags = WIRE_F_SYNC;
                h.sreq = GEN1 | (1 + xr(&g, 100));
            }
            n = encode(&h, pl, (size_t)h.len, b);
        } else {
            static const uint8_t types[] = {QUAY_PKT_RTS, QUAY_PKT_CTS, QUAY_PKT_DATA,
                                            QUAY_PKT_ACK, QUAY_PKT_CANCEL_REQ,
                                            QUAY_PKT_CANCEL_REP};
            h = mk(types[xr(&g, 6)]);
            h.seq = rx;
            h.ctx = 5; /* RTS / CANCEL_REQ: a comm with no receives posted */
            h.sreq = h.rreq = GEN1 | xr(&g, 256);
            h.frag = 128;
            h.index = 1;
            h.grant = 1;
            h.len = 1000;
            h.tag = 1;
            n = encode(&h, pl, h.type == QUAY_PKT_DATA ? 128 > sizeof pl ? sizeof pl : 128 : 0,
                       b);
        }
        uint32_t how = xr(&g, 8);
        if (how < 4) {
            b[xr(&g, (uint32_t)n)] = (uint8_t)xr(&g, 256);
        } else if (how == 4) {
            b[xr(&g, (uint32_t)n)] ^= (uint8_t)(1u << xr(&g, 8));
        } else if (how == 5 && n > 0) {
            n -= 1 + xr(&g, (uint32_t)n);
        } else if (how == 6) {
            size_t more = 1 + xr(&g, 8);
            for (size_t i = 0; i < more; i++)
                b[n + i] = (uint8_t)xr(&g, 256);
            n += more;
        }
        wire_hdr dh;
        int dec = wire_decode(b, n, &dh);
        int rc = inj_raw(1, 0, b, n);
        if (quay_err_is_fatal(rc)) {
            fatal = rc;
            note("fatal %s at packet %d", quay_strerror(rc), it);
            break;
        }
        int consistent = dec < 0 ? rc == QUAY_EPROTO
                                 : rc == 0 || rc == QUAY_ESTATE || rc == QUAY_EAGAIN;
        if (!consistent && mism++ < 5)
            note("packet %d (%zu bytes, type %u): decoder %d, engine %s", it, n,
                 n > 1 ? b[1] : 0, dec, quay_strerror(rc));
        n_proto += rc == QUAY_EPROTO;
        n_ok += rc == 0;
        n_state += rc == QUAY_ESTATE;
        n_again += rc == QUAY_EAGAIN;
        /* Rank 1's replies go nowhere; its completions are polled. */
        quay_action a;
        while (quay_next_action(T.e[1], &a) == 1)
            if (a.kind == QUAY_ACT_SEND)
                quay_on_op_done(T.e[1], a.token, 0);
    }
    note("accepted %ld, EPROTO %ld, ESTATE %ld, EAGAIN %ld", n_ok, n_proto, n_state, n_again);
    is_int(fatal, 0);
    is_int(mism, 0);
    ok(n_ok > 5000 && n_proto > 1000 && n_state > 100);
    quay_stats st;
    quay_engine_stats(T.e[1], &st);
    ok(st.bytes_unexpected <= cfg.unexpected_bytes_max && st.umsgs_in_use <= 4096 &&
       st.reqs_in_use <= 256);
    for (int k = 0; k < 8; k++)
        if (posted[k] != NULL) {
            quay_cancel(T.e[1], posted[k]);
            quay_req_free(T.e[1], posted[k]);
        }
    /* Take what peer 0's garbage left unexpected on the world comm (messages
     * for unknown contexts stay orphaned), so the exchange finds room. */
    int left = 0, flag = 1;
    for (int tries = 0; flag && tries < 5000; tries++) {
        quay_req *x = NULL;
        quay_iprobe(T.e[1], T.world[1], 0, QUAY_ANY_TAG, &flag, NULL);
        if (flag && quay_irecv(T.e[1], T.world[1], pbuf[0], 64, 0, QUAY_ANY_TAG, &x) != 0)
            break; /* request pool full of receives stuck on garbage RTSs */
        if (flag) {
            quay_req_free(T.e[1], x);
            left++;
        }
        quay_action a;
        while (quay_next_action(T.e[1], &a) == 1)
            if (a.kind == QUAY_ACT_SEND)
                quay_on_op_done(T.e[1], a.token, 0);
    }
    quay_engine_stats(T.e[1], &st);
    note("%d messages left unexpected; %u descriptors in use (orphans, stuck)", left,
         st.umsgs_in_use);
    ok(st.umsgs_in_use < 4000);
    exchange_among(0x6); /* ranks 1 and 2 */
    tn_fini(&T);
}

/* ---- call API misuse ------------------------------------------------------------------- */

static void t_imrecv_forged(void)
{
    if (!setup(2))
        return;
    uint8_t sb[20], rb[20];
    tn_fill(sb, sizeof sb, 80);
    quay_req *s, *r, *x;
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 3, QUAY_SEND_STANDARD, &s);
    tn_pump(&T);
    quay_msg *m = NULL;
    is_int(quay_improbe(T.e[1], T.world[1], 0, 3, &m, NULL), 0);
    if (!ok(m != NULL))
        return;
    quay_msg fake;
    memset(&fake, 0, sizeof fake);
    fake.where = UM_TAKEN;
    fake.comm = T.world[1];
    is_int(quay_imrecv(T.e[1], &fake, rb, sizeof rb, &x), QUAY_EINVAL);
    is_int(quay_imrecv(T.e[1], (quay_msg *)(void *)((char *)m + 8), rb, sizeof rb, &x),
           QUAY_EINVAL);
    is_int(quay_imrecv(T.e[0], m, rb, sizeof rb, &x), QUAY_EINVAL);
    is_int(quay_imrecv(T.e[1], &T.e[1]->msgs[100], rb, sizeof rb, &x), QUAY_EINVAL);
    is_int(quay_imrecv(T.e[1], T.e[1]->msgs + T.e[1]->nmsgs, rb, sizeof rb, &x), QUAY_EINVAL);
    is_int(quay_imrecv(T.e[1], NULL, rb, sizeof rb, &x), QUAY_EINVAL);
    is_int(quay_imrecv(T.e[1], m, NULL, sizeof rb, &x), QUAY_EINVAL);
    is_int(quay_imrecv(T.e[1], m, rb, sizeof rb, NULL), QUAY_EINVAL);
    is_int(quay_imrecv(T.e[1], m, rb, sizeof rb, &r), 0);
    ok(tn_good(r, sizeof rb) && memcmp(rb, sb, sizeof sb) == 0);
    is_int(quay_imrecv(T.e[1], m, rb, sizeof rb, &x), QUAY_EINVAL); /* consumed */
    quay_req_free(T.e[1], r);
    quay_req_free(T.e[0], s);
    finish();
}

static void t_req_pointer_misuse(void)
{
    if (!setup(2))
        return;
    uint8_t b[10];
    quay_req fake;
    memset(&fake, 0, sizeof fake);
    fake.state = QUAY_RS_RECV_POSTED;
    fake.kind = RK_RECV;
    quay_req *r0, *r1, *rp;
    quay_irecv(T.e[0], T.world[0], b, sizeof b, 1, 1, &r0);
    quay_irecv(T.e[1], T.world[1], b, sizeof b, 0, 1, &r1);
    quay_req *mid = (quay_req *)(void *)((char *)r0 + 8);
    quay_req *freeslot = &T.e[0]->reqs[200];
    quay_req *past = T.e[0]->reqs + T.e[0]->nreqs;
    quay_req *bad[] = {NULL, &fake, r1, mid, freeslot, past};
    static const char *names[] = {"NULL", "a stack object", "another engine's request",
                                  "a pointer inside a request", "a free pool slot",
                                  "one past the pool"};
    for (size_t i = 0; i < COUNT_OF(bad); i++) {
        ok_msg(quay_req_free(T.e[0], bad[i]) == QUAY_EINVAL, "quay_req_free(%s)", names[i]);
        ok_msg(quay_cancel(T.e[0], bad[i]) == QUAY_EINVAL, "quay_cancel(%s)", names[i]);
    }
    is_int(quay_cancel(NULL, r0), QUAY_EINVAL);
    is_int(quay_req_free(NULL, r0), QUAY_EINVAL);
    ok(!tn_done(r0, NULL) && !tn_done(r1, NULL));
    /* Released: every later use is refused. */
    is_int(quay_cancel(T.e[0], r0), 0);
    is_int(quay_req_free(T.e[0], r0), 0);
    is_int(quay_req_free(T.e[0], r0), QUAY_EINVAL);
    is_int(quay_cancel(T.e[0], r0), QUAY_EINVAL);
    /* Freed while pending: a second free is refused; cancel still works
     * and releases it. */
    quay_irecv(T.e[0], T.world[0], b, sizeof b, 1, 2, &rp);
    is_int(quay_req_free(T.e[0], rp), 0);
    is_int(quay_req_free(T.e[0], rp), QUAY_EINVAL);
    is_int(quay_cancel(T.e[0], rp), 0);
    quay_stats st;
    quay_engine_stats(T.e[0], &st);
    is_int(st.reqs_in_use, 0);
    quay_cancel(T.e[1], r1);
    quay_req_free(T.e[1], r1);
    is_int(quay_req_test(NULL, NULL), 0);
    finish();
}

static void t_comm_create_errors(void)
{
    quay_config cfg;
    tn_config(&cfg, 0, 3);
    cfg.malformed_limit = 0; /* (refusals are this test's subject) */
    cfg.max_comms = 3;
    if (!setup_cfg(3, &cfg))
        return;
    quay_engine *e = T.e[1];
    quay_comm *c = (quay_comm *)&c;
    is_int(quay_comm_create(e, 0, 3, NULL, &c), QUAY_ECOMM);
    ok(c == NULL);
    static const int32_t nonmember[2] = {0, 2}, outside[3] = {0, 1, 3},
                         negative[2] = {1, -1}, huge[2] = {1, INT32_MAX};
    is_int(quay_comm_create(e, 5, 2, nonmember, &c), QUAY_ERANK);
    is_int(quay_comm_create(e, 5, 3, outside, &c), QUAY_ERANK);
    is_int(quay_comm_create(e, 5, 2, negative, &c), QUAY_ERANK);
    is_int(quay_comm_create(e, 5, 2, huge, &c), QUAY_ERANK);
    is_int(quay_comm_create(e, 5, 0, outside, &c), QUAY_EINVAL);
    is_int(quay_comm_create(e, 5, -1, outside, &c), QUAY_EINVAL);
    is_int(quay_comm_create(e, 5, 2, NULL, &c), QUAY_EINVAL); /* identity needs world size */
    is_int(quay_comm_create(e, 5, 3, NULL, NULL), QUAY_EINVAL);
    is_int(quay_comm_create(NULL, 5, 3, NULL, &c), QUAY_EINVAL);
    quay_stats st;
    quay_engine_stats(e, &st);
    is_int(st.comms_in_use, 1);
    static const int32_t pair[2] = {1, 0};
    quay_comm *c5, *c6;
    is_int(quay_comm_create(e, 5, 2, pair, &c5), 0);
    is_int(quay_comm_create(e, 6, 3, NULL, &c6), 0);
    is_int(quay_comm_create(e, 7, 3, NULL, &c), QUAY_EAGAIN); /* max_comms */
    is_int(quay_comm_create(e, 5, 3, NULL, &c), QUAY_ECOMM);
    is_int(quay_comm_rank(c5), 0);
    /* Free: busy with a pending receive; garbage refused. */
    uint8_t b[4];
    quay_req *r;
    quay_irecv(e, c5, b, sizeof b, 1, 0, &r);
    is_int(quay_comm_free(e, c5), QUAY_EBUSY);
    is_int(quay_comm_free(e, NULL), QUAY_EINVAL);
    is_int(quay_comm_free(e, T.world[0]), QUAY_EINVAL);
    is_int(quay_comm_free(NULL, c5), QUAY_EINVAL);
    quay_cancel(e, r);
    quay_req_free(e, r);
    is_int(quay_comm_free(e, c5), 0);
    is_int(quay_comm_free(e, c5), QUAY_EINVAL);
    is_int(quay_comm_free(e, c6), 0);
    finish();
}

static void t_p2p_args(void)
{
    if (!setup(3))
        return;
    quay_engine *e = T.e[0];
    quay_comm *w = T.world[0];
    uint8_t b[8] = {0};
    quay_req *x;
#define SEND_IS(want, ...)                                                   \
    do {                                                                     \
        x = (quay_req *)&x;                                                  \
        ok_msg(quay_isend(__VA_ARGS__, &x) == (want) && x == NULL,           \
               "isend(%s) -> %s", #__VA_ARGS__, quay_strerror(want));        \
    } while (0)
#define RECV_IS(want, ...)                                                   \
    do {                                                                     \
        x = (quay_req *)&x;                                                  \
        ok_msg(quay_irecv(__VA_ARGS__, &x) == (want) && x == NULL,           \
               "irecv(%s) -> %s", #__VA_ARGS__, quay_strerror(want));        \
    } while (0)
    SEND_IS(QUAY_ERANK, e, w, b, 8, 3, 0, QUAY_SEND_STANDARD);
    SEND_IS(QUAY_ERANK, e, w, b, 8, -3, 0, QUAY_SEND_STANDARD);
    SEND_IS(QUAY_ERANK, e, w, b, 8, QUAY_ANY_SOURCE, 0, QUAY_SEND_STANDARD);
    SEND_IS(QUAY_ERANK, e, w, b, 8, INT32_MAX, 0, QUAY_SEND_STANDARD);
    SEND_IS(QUAY_ETAG, e, w, b, 8, 1, -1, QUAY_SEND_STANDARD);
    SEND_IS(QUAY_ETAG, e, w, b, 8, 1, INT32_MIN, QUAY_SEND_SYNC);
    SEND_IS(QUAY_EINVAL, e, w, NULL, 8, 1, 0, QUAY_SEND_STANDARD);
    SEND_IS(QUAY_EINVAL, e, w, b, 8, 1, 0, (quay_send_mode)4);
    SEND_IS(QUAY_EINVAL, e, w, b, 8, 1, 0, (quay_send_mode)99);
    SEND_IS(QUAY_EINVAL, e, NULL, b, 8, 1, 0, QUAY_SEND_STANDARD);
    SEND_IS(QUAY_EINVAL, e, T.world[1], b, 8, 1, 0, QUAY_SEND_STANDARD);
    SEND_IS(QUAY_ENOBUFS, e, w, b, 8, 1, 0, QUAY_SEND_BUFFERED); /* nothing attached */
    is_int(quay_isend(e, w, b, 8, 1, 0, QUAY_SEND_STANDARD, NULL), QUAY_EINVAL);
    is_int(quay_isend(NULL, w, b, 8, 1, 0, QUAY_SEND_STANDARD, &x), QUAY_EINVAL);
    RECV_IS(QUAY_ERANK, e, w, b, 8, 3, 0);
    RECV_IS(QUAY_ERANK, e, w, b, 8, -3, 0);
    RECV_IS(QUAY_ERANK, e, w, b, 8, INT32_MIN, 0);
    RECV_IS(QUAY_ETAG, e, w, b, 8, 1, -2);
    RECV_IS(QUAY_ETAG, e, w, b, 8, QUAY_ANY_SOURCE, INT32_MIN);
    RECV_IS(QUAY_EINVAL, e, w, NULL, 8, 1, 0);
    RECV_IS(QUAY_EINVAL, e, NULL, b, 8, 1, 0);
    RECV_IS(QUAY_EINVAL, e, T.world[2], b, 8, 1, 0);
    is_int(quay_irecv(e, w, b, 8, 1, 0, NULL), QUAY_EINVAL);
    int flag = 7;
    quay_msg *m = (quay_msg *)&m;
    is_int(quay_iprobe(e, w, 1, 0, NULL, NULL), QUAY_EINVAL);
    is_int(quay_iprobe(e, w, 3, 0, &flag, NULL), QUAY_ERANK);
    ok(flag == 0);
    is_int(quay_iprobe(e, w, 1, -7, &flag, NULL), QUAY_ETAG);
    is_int(quay_improbe(e, w, 1, 0, NULL, NULL), QUAY_EINVAL);
    is_int(quay_improbe(e, w, 5, 0, &m, NULL), QUAY_ERANK);
    ok(m == NULL);
    is_int(quay_improbe(e, NULL, 1, 0, &m, NULL), QUAY_EINVAL);
    /* Zero bytes with a NULL buffer are fine. */
    is_int(quay_isend(e, w, NULL, 0, QUAY_PROC_NULL, 0, QUAY_SEND_STANDARD, &x), 0);
    ok(tn_good(x, 0));
    quay_req_free(e, x);
    quay_stats st;
    quay_engine_stats(e, &st);
    is_int(st.reqs_in_use, 0);
#undef SEND_IS
#undef RECV_IS
    finish();
}

int main(void)
{
    subtest("quay_on_packet peer and buffer arguments", t_peer_args);
    subtest("malformed packets (syntax)", t_syntax);
    subtest("replayed EAGER", t_replay_eager);
    subtest("replayed RTS", t_replay_rts);
    subtest("replayed CANCEL_REQ", t_replay_cancel_req);
    subtest("duplicate of a held packet", t_duplicate_held);
    subtest("sequence window", t_window);
    subtest("held packets: descriptor bound", t_held_descriptors);
    subtest("held packets: byte bound", t_held_bytes);
    subtest("false source rank claims (known comm)", t_src_claim);
    subtest("false source rank claims (orphans)", t_orphans);
    subtest("forged CTS while the RTS is in flight", t_cts_pending);
    subtest("CTS after completion", t_cts_after_completion);
    subtest("CTS implying more than 2^32 fragments", t_cts_huge);
    subtest("forged CTS during the transfer", t_cts_mid);
    subtest("regression: rejected final CTS must not set cts_total (rndv.c)",
            t_reg_cts_final_stale_index);
    subtest("regression: duplicate CTS must not stall the transfer (rndv.c)",
            t_reg_cts_duplicate);
    subtest("forged DATA", t_data);
    subtest("duplicate DATA", t_data_duplicate);
    subtest("forged ACK", t_ack);
    subtest("ACK twice", t_ack_twice);
    subtest("ACK for a ready rendezvous", t_ack_ready_rndv);
    subtest("forged CANCEL_REP", t_cancel_rep);
    subtest("CANCEL_REP after a CTS", t_cancel_rep_after_cts);
    subtest("RDMA rendezvous: FIN and keyed CTS out of state", t_rdma_out_of_state);
    subtest("ANY_SOURCE arbitration packets out of state", t_arb_out_of_state);
    subtest("quay_on_op_done tokens", t_op_done);
    subtest("unexpected byte budget", t_unexpected_bytes);
    subtest("descriptor pool exhaustion", t_descriptor_pool);
    subtest("control ring full", t_ctrl_ring);
    subtest("regression: replay of a blocked held packet (seq.c)",
            t_reg_replay_of_blocked_held);
    subtest("request pool exhaustion", t_request_pool);
    subtest("differential fuzz through quay_on_packet", t_fuzz_on_packet);
    subtest("imrecv with forged message handles", t_imrecv_forged);
    subtest("request pointer misuse", t_req_pointer_misuse);
    subtest("quay_comm_create / quay_comm_free errors", t_comm_create_errors);
    subtest("isend / irecv / probe argument errors", t_p2p_args);
    note("%d distinct bad packets fed to live engines", n_bad);
    ok_msg(n_bad >= 50, "at least 50 distinct bad packets (%d)", n_bad);
    return done_testing();
}
