/*
 * test_states.c — the request state machines of docs/protocols.md, proved
 * through the trace hook (quay_set_trace, QUAY_TR_STATE): every state and
 * every documented transition is reached, and each scenario asserts the
 * exact transition sequence of its requests. Also: PKT_OUT / PKT_IN /
 * MATCH events of a rendezvous, COMPLETE actions on and off, quay_req_free
 * before completion, and the allocator hooks (allocation-free hot path;
 * every allocation failure during quay_engine_new gives QUAY_ENOMEM and
 * leaks nothing).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <quay/quay_coll.h>

#include "engine/internal.h"
#include "harness.h"
#include "testnet.h"

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

static testnet T;

/* ---- trace recorder --------------------------------------------------------------- */

#define REC_MAX 65536

typedef struct rev {
    int rank;
    quay_trace_event ev;
} rev;

static rev REC[REC_MAX];
static int nrec;
static int rec_overflow;
static int ranks_of[TN_MAX_RANKS];
/* Transitions seen across the whole run: seen[from][to]. */
static int seen[QUAY_RS_COUNT_][QUAY_RS_COUNT_];

static void on_trace(void *ctx, const quay_trace_event *ev)
{
    int rank = *(const int *)ctx;
    if (ev->kind == QUAY_TR_STATE && ev->from >= 0 && ev->from < QUAY_RS_COUNT_ &&
        ev->to >= 0 && ev->to < QUAY_RS_COUNT_)
        seen[ev->from][ev->to]++;
    if (nrec == REC_MAX) {
        rec_overflow = 1;
        return;
    }
    REC[nrec].rank = rank;
    REC[nrec].ev = *ev;
    nrec++;
}

static void trace_on(void)
{
    nrec = 0;
    for (int r = 0; r < T.n; r++) {
        ranks_of[r] = r;
        quay_set_trace(T.e[r], on_trace, &ranks_of[r]);
    }
}

/* op_done tokens held back by deliver_nodone() */
typedef struct pend {
    int from;
    uint64_t token;
} pend;
static pend PEND[64];
static int npend;

static int setup_cfg(int n, const quay_config *cfg)
{
    quay_config def;
    if (cfg == NULL) {
        tn_config(&def, 0, n);
        cfg = &def;
    }
    int rc = tn_init(&T, n, cfg);
    npend = 0;
    if (rc == 0)
        trace_on();
    return ok_msg(rc == 0, "setup %d engines: %s", n, quay_strerror(rc));
}

static int setup(int n) { return setup_cfg(n, NULL); }

static int find(int type, int from, int to)
{
    for (int i = 0; i < T.nq; i++)
        if ((type == 0 || tn_type(&T, i) == type) && T.q[i].from == from &&
            T.q[i].to == to)
            return i;
    return -1;
}

/* Deliver in-flight packet i, keeping its sender's op_done pending. */
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

static void flush_pending(int status)
{
    for (int i = 0; i < npend; i++)
        quay_on_op_done(T.e[PEND[i].from], PEND[i].token, status);
    npend = 0;
}

static void clean(void)
{
    int all = 1;
    for (int r = 0; r < T.n; r++) {
        quay_stats st;
        quay_engine_stats(T.e[r], &st);
        if (st.reqs_in_use || st.umsgs_in_use || st.outs_in_use || st.bytes_unexpected ||
            st.held_out_of_order || st.ctrl_queued || st.ctrl_reserved) {
            all = 0;
            note("rank %d: reqs %u umsgs %u outs %u bytes %llu held %u ctrl %u", r,
                 st.reqs_in_use, st.umsgs_in_use, st.outs_in_use,
                 (unsigned long long)st.bytes_unexpected, st.held_out_of_order,
                 st.ctrl_queued);
        }
    }
    ok_msg(all, "engines clean");
    ok_msg(T.rejects == 0 && !rec_overflow, "no packet rejected (%d)", T.rejects);
}

static void finish(void)
{
    T.auto_done = 1;
    flush_pending(0);
    tn_done_all(&T);
    tn_pump(&T);
    clean();
    tn_fini(&T);
}

/* ---- transition sequences --------------------------------------------------------- */

/* States of request `id` at `rank`: the first event's `from`, then each
 * `to`. Returns the count, or -1 if an event's `from` is not the previous
 * `to` (the trace contradicts itself). */
static int states_of(int rank, uint32_t id, int *out, int max)
{
    int n = 0;
    for (int i = 0; i < nrec; i++) {
        const quay_trace_event *e = &REC[i].ev;
        if (REC[i].rank != rank || e->kind != QUAY_TR_STATE || e->req_id != id)
            continue;
        if (n == 0) {
            out[n++] = e->from;
        } else if (out[n - 1] != e->from) {
            return -1;
        }
        if (n < max)
            out[n++] = e->to;
    }
    return n;
}

static void fmt_states(const int *s, int n, char *buf, size_t cap)
{
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        size_t l = strlen(buf);
        if (l + 20 >= cap)
            break;
        snprintf(buf + l, cap - l, "%s%s", i ? "->" : "", quay_state_name(s[i]));
    }
}

static int expect_states(int rank, uint32_t id, const int *want, int nwant, const char *what)
{
    int got[32];
    int n = states_of(rank, id, got, 32);
    int pass = n == nwant && memcmp(got, want, (size_t)n * sizeof *got) == 0;
    char gbuf[400], wbuf[400];
    fmt_states(want, nwant, wbuf, sizeof wbuf);
    if (!ok_msg(pass, "%s: %s", what, wbuf)) {
        if (n < 0)
            note("inconsistent trace (from != previous to)");
        else {
            fmt_states(got, n, gbuf, sizeof gbuf);
            note("got: %s", gbuf);
        }
    }
    return pass;
}

#define STATES(rank, req, what, ...)                                              \
    expect_states((rank), quay_req_id(req), (const int[]){__VA_ARGS__},           \
                  (int)(sizeof((const int[]){__VA_ARGS__}) / sizeof(int)), (what))

enum {
    F = QUAY_RS_FREE,
    SE = QUAY_RS_SEND_EAGER,
    SW = QUAY_RS_SEND_WAIT_ACK,
    SR = QUAY_RS_SEND_RTS,
    SD = QUAY_RS_SEND_DATA,
    SP = QUAY_RS_SEND_PUT,
    SWR = QUAY_RS_SEND_WRITE,
    RT = QUAY_RS_RECV_RTR,
    RA = QUAY_RS_RECV_ANY,
    SA = QUAY_RS_SEND_ANY,
    SQ = QUAY_RS_SEND_QUEUED,
    SC = QUAY_RS_SEND_CANCEL,
    RP = QUAY_RS_RECV_POSTED,
    RR = QUAY_RS_RECV_RNDV,
    RG = QUAY_RS_RECV_GET,
    RU = QUAY_RS_RECV_PUT,
    RD = QUAY_RS_RDMA,
    CO = QUAY_RS_COLL,
    D = QUAY_RS_DONE
};

/* ---- eager -------------------------------------------------------------------------- */

static void t_eager_standard(void)
{
    if (!setup(2))
        return;
    uint8_t sb[50], rb[50];
    tn_fill(sb, sizeof sb, 1);
    quay_req *s, *r;
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 1, &r);
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 1, QUAY_SEND_STANDARD, &s);
    tn_pump(&T);
    ok(tn_good(s, 50) && tn_good(r, 50));
    STATES(0, s, "standard eager send", F, SE, D);
    STATES(1, r, "receive posted, then EAGER", F, RP, D);
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);

    /* Completion waits for op_done. */
    T.auto_done = 0;
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 1, &r);
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 1, QUAY_SEND_STANDARD, &s);
    tn_pull_all(&T);
    deliver_nodone(0);
    ok(tn_good(r, 50) && !tn_done(s, NULL));
    STATES(0, s, "standard eager before op_done", F, SE);
    flush_pending(0);
    ok(tn_good(s, 50));
    STATES(0, s, "standard eager after op_done", F, SE, D);
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);
    finish();
}

static void t_eager_sync(void)
{
    if (!setup(2))
        return;
    uint8_t sb[50], rb[50];
    tn_fill(sb, sizeof sb, 2);
    quay_req *s, *r;
    /* op_done before the ACK. */
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 1, &r);
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 1, QUAY_SEND_SYNC, &s);
    tn_pull_all(&T); /* auto op_done */
    STATES(0, s, "sync eager, wire done, no ACK yet", F, SE, SW);
    tn_pump(&T);
    ok(tn_good(s, 50) && tn_good(r, 50));
    STATES(0, s, "sync eager, op_done before ACK", F, SE, SW, D);
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);

    /* ACK before op_done. */
    T.auto_done = 0;
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 1, &r);
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 1, QUAY_SEND_SYNC, &s);
    tn_pull_all(&T);
    deliver_nodone(find(QUAY_PKT_EAGER, 0, 1));
    tn_pull_all(&T);
    deliver_nodone(find(QUAY_PKT_ACK, 1, 0));
    ok(!tn_done(s, NULL));
    flush_pending(0);
    ok(tn_good(s, 50));
    STATES(0, s, "sync eager, ACK before op_done", F, SE, D);
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);

    /* Unexpected, then received: the ACK comes from quay_irecv. */
    T.auto_done = 1;
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 2, QUAY_SEND_SYNC, &s);
    tn_pump(&T);
    ok(!tn_done(s, NULL));
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 2, &r);
    STATES(1, r, "receive of an unexpected EAGER", F, D);
    tn_pump(&T);
    STATES(0, s, "sync eager, late receive", F, SE, SW, D);
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);
    finish();
}

static void t_eager_ready(void)
{
    if (!setup(2))
        return;
    uint8_t sb[50], rb[50];
    tn_fill(sb, sizeof sb, 3);
    quay_req *s, *r;
    quay_status st;
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 1, &r);
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 1, QUAY_SEND_READY, &s);
    tn_pump(&T);
    ok(tn_good(s, 50) && tn_good(r, 50));
    STATES(0, s, "ready eager, receive posted", F, SE, SW, D);
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);

    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 2, QUAY_SEND_READY, &s);
    tn_pump(&T);
    ok(tn_done(s, &st) && st.error == QUAY_ENOTPOSTED);
    STATES(0, s, "ready eager, nothing posted", F, SE, SW, D);
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 2, &r);
    ok(tn_done(r, &st) && st.error == QUAY_ENOTPOSTED && st.count == 0);
    STATES(1, r, "receive of a poisoned ready message", F, D);
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);
    finish();
}

/* ---- rendezvous ---------------------------------------------------------------------- */

static void t_rndv(void)
{
    if (!setup(2))
        return;
    static uint8_t sb[1000], rb[1000];
    tn_fill(sb, sizeof sb, 4);
    quay_req *s, *r;
    quay_status st;
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 1, &r);
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 1, QUAY_SEND_STANDARD, &s);
    tn_pump(&T);
    ok(tn_good(s, 1000) && tn_good(r, 1000) && memcmp(sb, rb, sizeof sb) == 0);
    STATES(0, s, "rendezvous send", F, SR, SD, D);
    STATES(1, r, "receive posted, then RTS", F, RP, RR, D);
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);

    /* Unexpected RTS, then the receive. */
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 2, QUAY_SEND_SYNC, &s);
    tn_pump(&T);
    STATES(0, s, "sync rendezvous waiting for its receive", F, SR);
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 2, &r);
    STATES(1, r, "receive of an unexpected RTS, granting", F, RR);
    tn_pump(&T);
    ok(tn_good(s, 1000) && tn_good(r, 1000));
    STATES(1, r, "receive of an unexpected RTS", F, RR, D);
    STATES(0, s, "sync rendezvous send", F, SR, SD, D);
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);

    /* Ready rendezvous with nothing posted: the NAK ends it. */
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 3, QUAY_SEND_READY, &s);
    tn_pump(&T);
    ok(tn_done(s, &st) && st.error == QUAY_ENOTPOSTED);
    STATES(0, s, "ready rendezvous, nothing posted", F, SR, D);
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 3, &r);
    ok(tn_done(r, &st) && st.error == QUAY_ENOTPOSTED);
    STATES(1, r, "receive of a poisoned ready RTS", F, D);
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);

    /* Truncated: accepted bytes only. */
    quay_irecv(T.e[1], T.world[1], rb, 300, 0, 4, &r);
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 4, QUAY_SEND_STANDARD, &s);
    tn_pump(&T);
    ok(tn_done(r, &st) && st.error == QUAY_ETRUNCATE && st.count == 300);
    STATES(1, r, "truncated rendezvous receive", F, RP, RR, D);
    STATES(0, s, "rendezvous send to a short receive", F, SR, SD, D);
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);
    finish();
}

/* Two engines with RDMA rendezvous: `smode` at rank 0, `rmode` at 1. */
static int setup_rdma(uint32_t smode, uint32_t rmode)
{
    quay_config c[2];
    for (int r = 0; r < 2; r++) {
        tn_config(&c[r], r, 2);
        c[r].transport_caps = QUAY_CAP_RDMA_GET | QUAY_CAP_RDMA_PUT;
        c[r].rndv_mode = r == 0 ? smode : rmode;
    }
    int rc = tn_init_each(&T, 2, c, 1);
    npend = 0;
    if (rc == 0)
        trace_on();
    return ok_msg(rc == 0, "setup RDMA engines: %s", quay_strerror(rc));
}

static int regions_in_use(int r)
{
    quay_stats st;
    quay_engine_stats(T.e[r], &st);
    return (int)st.regions_in_use;
}

static void t_rndv_rdma(void)
{
    static uint8_t sb[1000], rb[1000];
    tn_fill(sb, sizeof sb, 6);
    quay_req *s, *r;
    quay_status st;
    quay_stats ss;

    /* GET: the RTS carries the sender's key, the receiver reads, FIN. */
    if (!setup_rdma(QUAY_RNDV_GET, QUAY_RNDV_AUTO))
        return;
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 1, &r);
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 1, QUAY_SEND_STANDARD, &s);
    is_int(regions_in_use(0), 1);
    tn_pull_all(&T);
    ok(tn_deliver(&T, find(QUAY_PKT_RTS, 0, 1)) == 0);
    STATES(1, r, "GET: receive posted, then a keyed RTS", F, RP, RG);
    tn_pull_all(&T);
    int reads = 0;
    for (int i = 0; i < T.nq; i++)
        reads += tn_type(&T, i) == TN_RDMA;
    is_int(reads, 2); /* pipeline_depth fragments in flight, not more */
    tn_pump(&T);
    ok(tn_good(s, 1000) && tn_good(r, 1000) && memcmp(sb, rb, sizeof sb) == 0);
    STATES(0, s, "GET send: RTS, then FIN", F, SR, D);
    STATES(1, r, "GET receive", F, RP, RG, D);
    is_int(regions_in_use(0), 0);
    quay_engine_stats(T.e[1], &ss);
    ok(ss.rndv_get == 1 && ss.rndv_copy == 0);
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);

    /* GET, unexpected RTS, truncated: only the accepted bytes are read. */
    memset(rb, 0, sizeof rb);
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 2, QUAY_SEND_SYNC, &s);
    tn_pump(&T);
    quay_irecv(T.e[1], T.world[1], rb, 300, 0, 2, &r);
    tn_pump(&T);
    ok(tn_done(r, &st) && st.error == QUAY_ETRUNCATE && st.count == 300 &&
       memcmp(rb, sb, 300) == 0 && rb[300] == 0);
    ok(tn_good(s, 1000));
    STATES(1, r, "GET receive of an unexpected RTS", F, RG, D);
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);

    /* GET: a read the target refuses (the key's region is gone) fails the
     * receive, and the FIN carries the error to the sender. */
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 3, QUAY_SEND_STANDARD, &s);
    tn_pump(&T);
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 3, &r);
    tn_pull(&T, 1);
    int i = find(TN_RDMA, 1, 0);
    ok(i >= 0);
    if (i >= 0)
        T.q[i].key ^= 1; /* forged in flight */
    tn_pump(&T);
    ok(tn_done(r, &st) && st.error == QUAY_ESTATE);
    ok(tn_done(s, &st) && st.error == QUAY_ESTATE);
    is_int(regions_in_use(0), 0);
    T.rejects = 0; /* the refused read */
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);
    finish();

    /* GET offered, receiver in COPY mode: a plain CTS, DATA packets. */
    if (!setup_rdma(QUAY_RNDV_GET, QUAY_RNDV_COPY))
        return;
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 1, &r);
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 1, QUAY_SEND_STANDARD, &s);
    tn_pump(&T);
    ok(tn_good(s, 1000) && tn_good(r, 1000) && memcmp(sb, rb, sizeof sb) == 0);
    STATES(0, s, "GET offer declined", F, SR, SD, D);
    STATES(1, r, "COPY receive of a keyed RTS", F, RP, RR, D);
    is_int(regions_in_use(0), 0);
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);
    finish();

    /* PUT: the CTS carries the receiver's key, the sender writes, FIN. */
    if (!setup_rdma(QUAY_RNDV_PUT, QUAY_RNDV_AUTO))
        return;
    memset(rb, 0, sizeof rb);
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 1, &r);
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 1, QUAY_SEND_STANDARD, &s);
    tn_pull_all(&T);
    tn_deliver(&T, find(QUAY_PKT_RTS, 0, 1));
    STATES(1, r, "PUT: receive posted, then an RTS offering to write", F, RP, RU);
    is_int(regions_in_use(1), 1);
    tn_pump(&T);
    ok(tn_good(s, 1000) && tn_good(r, 1000) && memcmp(sb, rb, sizeof sb) == 0);
    STATES(0, s, "PUT send", F, SR, SP, D);
    STATES(1, r, "PUT receive", F, RP, RU, D);
    is_int(regions_in_use(1), 0);
    quay_engine_stats(T.e[1], &ss);
    ok(ss.rndv_put == 1 && ss.rndv_copy == 0);
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);

    /* PUT, unexpected RTS. */
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 2, QUAY_SEND_STANDARD, &s);
    tn_pump(&T);
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 2, &r);
    tn_pump(&T);
    ok(tn_good(s, 1000) && tn_good(r, 1000));
    STATES(1, r, "PUT receive of an unexpected RTS", F, RU, D);
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);

    /* PUT: cancel asked while the keyed CTS is on its way; the CTS proves
     * the match, the writes go on and the cancel fails. */
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 3, &r);
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 3, QUAY_SEND_STANDARD, &s);
    tn_pull_all(&T);
    tn_deliver(&T, find(QUAY_PKT_RTS, 0, 1));
    tn_pull(&T, 1);
    is_int(quay_cancel(T.e[0], s), 0);
    tn_deliver(&T, find(QUAY_PKT_CTS, 1, 0));
    tn_pump(&T);
    ok(tn_good(s, 1000) && tn_good(r, 1000));
    STATES(0, s, "PUT send, cancel overtaken by the CTS", F, SR, SC, SP, D);
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);

    /* PUT: a refused write fails both ends through the FIN. */
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 4, &r);
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 4, QUAY_SEND_STANDARD, &s);
    tn_pull_all(&T);
    tn_deliver(&T, find(QUAY_PKT_RTS, 0, 1));
    tn_pull_all(&T);
    tn_deliver(&T, find(QUAY_PKT_CTS, 1, 0));
    tn_pull_all(&T);
    i = find(TN_RDMA, 0, 1);
    ok(i >= 0);
    if (i >= 0)
        T.q[i].off = 1u << 20; /* outside the region */
    tn_pump(&T);
    ok(tn_done(s, &st) && st.error == QUAY_EPROTO);
    ok(tn_done(r, &st) && st.error == QUAY_EPROTO);
    is_int(regions_in_use(1), 0);
    T.rejects = 0;
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);

    /* Self-sends never offer: loopback runs the packet protocol. */
    quay_irecv(T.e[0], T.world[0], rb, sizeof rb, 0, 5, &r);
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 0, 5, QUAY_SEND_STANDARD, &s);
    tn_pump(&T);
    ok(tn_good(s, 1000) && tn_good(r, 1000));
    STATES(0, r, "self rendezvous", F, RP, RR, D);
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[0], r);
    finish();
}

static void t_rtr(void)
{
    static uint8_t sb[1000], rb[1000];
    tn_fill(sb, sizeof sb, 7);
    quay_req *s, *r, *r2;
    quay_status st;
    quay_stats ss;
    quay_config c;
    tn_config(&c, 0, 2);
    c.transport_caps = QUAY_CAP_RDMA_PUT;
    c.rtr = 1;
    if (!setup_cfg(2, &c))
        return;

    /* Receive first: RTR, the sender writes and sends SC. */
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 1, &r);
    tn_pump(&T);
    is_int(regions_in_use(1), 1);
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 1, QUAY_SEND_SYNC, &s);
    tn_pump(&T);
    ok(tn_good(s, 1000) && tn_good(r, 1000) && memcmp(sb, rb, sizeof sb) == 0);
    STATES(1, r, "delegated receive, SC", F, RT, D);
    STATES(0, s, "send into an RTR", F, SWR, D);
    is_int(regions_in_use(1), 0);
    quay_engine_stats(T.e[0], &ss);
    ok(ss.rtr_used == 1 && ss.pkts_out >= 1);
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);

    /* Truncated: only cap bytes are written, the SC says how many came. */
    memset(rb, 0, sizeof rb);
    quay_irecv(T.e[1], T.world[1], rb, 100, 0, 2, &r);
    tn_pump(&T);
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 2, QUAY_SEND_STANDARD, &s);
    tn_pump(&T);
    ok(tn_done(r, &st) && st.error == QUAY_ETRUNCATE && st.count == 100 && rb[100] == 0 &&
       memcmp(rb, sb, 100) == 0);
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);

    /* The send overtakes the RTR: its envelope is matched at the receiver,
     * the RTR is dead on arrival (the sender's log) and then revoked. */
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 3, &r);
    tn_pull(&T, 1); /* the RTR is in flight */
    quay_isend(T.e[0], T.world[0], sb, 40, 1, 3, QUAY_SEND_STANDARD, &s);
    tn_pull(&T, 0);
    tn_deliver(&T, find(QUAY_PKT_RTR, 1, 0));
    quay_engine_stats(T.e[0], &ss);
    is_int((int)ss.rtr_dead, 1);
    tn_pump(&T);
    ok(tn_good(s, 40) && tn_good(r, 40));
    STATES(1, r, "delegated receive matched by an envelope", F, RT, D);
    quay_engine_stats(T.e[1], &ss);
    is_int((int)ss.rtr_revoked, 1);
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);
    /* ... and a rendezvous one: RTS matched, DATA packets. */
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 4, &r);
    tn_pull(&T, 1);
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 4, QUAY_SEND_STANDARD, &s);
    tn_pump(&T);
    ok(tn_good(s, 1000) && tn_good(r, 1000));
    STATES(1, r, "delegated receive matched by an RTS (PUT rendezvous)", F, RT, RU, D);
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);

    /* A wildcard receive pending: a specific one is not delegated (it
     * could be owed a message the sender cannot see). */
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, QUAY_ANY_SOURCE, 5, &r);
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 5, &r2);
    STATES(1, r2, "specific receive behind a wildcard", F, RP);
    quay_isend(T.e[0], T.world[0], sb, 10, 1, 5, QUAY_SEND_STANDARD, &s);
    tn_pump(&T);
    ok(tn_good(r, 10));
    quay_req_free(T.e[0], s);
    quay_isend(T.e[0], T.world[0], sb, 10, 1, 5, QUAY_SEND_STANDARD, &s);
    tn_pump(&T);
    ok(tn_good(r2, 10));
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);
    quay_req_free(T.e[1], r2);

    /* Cancel before the RTR left: local. */
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 6, &r);
    is_int(quay_cancel(T.e[1], r), 0);
    ok(tn_done(r, &st) && st.cancelled);
    STATES(1, r, "delegated receive cancelled at once", F, RT, D);
    quay_req_free(T.e[1], r);
    tn_pump(&T);
    /* Cancel after: the sender drops the RTR, verdict 1. */
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 7, &r);
    tn_pump(&T);
    is_int(quay_cancel(T.e[1], r), 0);
    ok(!tn_done(r, NULL));
    tn_pump(&T);
    ok(tn_done(r, &st) && st.cancelled && st.error == QUAY_ECANCELLED);
    quay_req_free(T.e[1], r);
    /* Cancel too late: the sender took the RTR, verdict 0, SC completes it. */
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 8, &r);
    tn_pump(&T);
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 8, QUAY_SEND_STANDARD, &s);
    is_int(s->state, QUAY_RS_SEND_WRITE);
    is_int(quay_cancel(T.e[1], r), 0);
    tn_pump(&T);
    ok(tn_good(r, 1000) && tn_good(s, 1000));
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);
    is_int(regions_in_use(1), 0);
    finish();
}


/* Offer in-flight packet i; an EAGAIN answer keeps it in flight. */
static int offer(int i)
{
    tn_pkt p = T.q[i];
    if (!p.done) {
        quay_on_op_done(T.e[p.from], p.token, 0);
        T.q[i].done = 1;
    }
    int rc = quay_on_packet(T.e[p.to], p.from, p.bytes, p.len);
    if (rc == QUAY_EAGAIN)
        return rc;
    memmove(&T.q[i], &T.q[i + 1], (size_t)(T.nq - i - 1) * sizeof T.q[0]);
    T.nq--;
    free(p.bytes);
    return rc;
}

static void t_arbitrate(void)
{
    static uint8_t sb[3000], rb[3000], rb2[3000], rb3[3000];
    tn_fill(sb, sizeof sb, 11);
    quay_req *s, *s2, *s3, *r, *r2;
    quay_status st;
    quay_stats ss;
    quay_config c;
    tn_config(&c, 0, 3);
    c.transport_caps = QUAY_CAP_RDMA_PUT;
    c.rtr = 1;
    c.rtr_any = 1;
    if (!setup_cfg(3, &c))
        return;
    T.keep_eagain = 1;
    quay_comm *w0 = T.world[0], *w1 = T.world[1], *w2 = T.world[2];

    /* Announce, flag, claim, write, SC. */
    quay_irecv(T.e[0], w0, rb, sizeof rb, QUAY_ANY_SOURCE, 1, &r);
    tn_pump(&T);
    quay_engine_stats(T.e[0], &ss);
    ok(ss.any_announced == 2 && ss.any_reused == 0);
    quay_isend(T.e[1], w1, sb, 1000, 0, 1, QUAY_SEND_STANDARD, &s);
    is_int(s->state, QUAY_RS_SEND_ANY);
    tn_pump(&T);
    ok(tn_good(r, 1000) && tn_good(s, 1000) && memcmp(rb, sb, 1000) == 0);
    ok(tn_done(r, &st) && st.source == 1 && st.tag == 1);
    STATES(0, r, "wildcard claimed by a flag, SC", F, RA, D);
    STATES(1, s, "flag, claim, write", F, SA, SWR, D);
    is_int(regions_in_use(0), 0);
    quay_req_free(T.e[0], r);
    quay_req_free(T.e[1], s);

    /* Reused announcement; two flags race: one wins, the other is declined
     * and sends its RTS, which the next wildcard takes. */
    quay_irecv(T.e[0], w0, rb, sizeof rb, QUAY_ANY_SOURCE, 1, &r);
    quay_engine_stats(T.e[0], &ss);
    ok(ss.any_announced == 2 && ss.any_reused == 1);
    quay_isend(T.e[1], w1, sb, 1000, 0, 1, QUAY_SEND_STANDARD, &s);
    quay_isend(T.e[2], w2, sb, 2000, 0, 1, QUAY_SEND_STANDARD, &s2);
    tn_pull(&T, 1);
    tn_pull(&T, 2);
    tn_deliver(&T, find(QUAY_PKT_ANY_FLAG, 2, 0)); /* rank 2's flag first */
    tn_deliver(&T, find(QUAY_PKT_ANY_FLAG, 1, 0));
    tn_pump(&T);
    ok(tn_good(r, 2000) && tn_good(s2, 2000));
    STATES(2, s2, "flag that wins", F, SA, SWR, D);
    ok(!tn_done(s, NULL));
    quay_irecv(T.e[0], w0, rb2, sizeof rb2, QUAY_ANY_SOURCE, 1, &r2);
    tn_pump(&T);
    ok(tn_good(r2, 1000) && tn_good(s, 1000) && memcmp(rb2, sb, 1000) == 0);
    STATES(1, s, "flag declined: RTS, PUT rendezvous", F, SA, SR, SP, D);
    STATES(0, r2, "wildcard that found the RTS waiting", F, RU, D);
    quay_engine_stats(T.e[0], &ss);
    ok(ss.any_claimed == 2 && ss.any_declined == 1);
    quay_req_free(T.e[0], r);
    quay_req_free(T.e[0], r2);
    quay_req_free(T.e[1], s);
    quay_req_free(T.e[2], s2);

    /* Later sends to a peer wait behind its flag, then go in order: the
     * next large one flags again (declined: nothing pending), the small
     * one is an envelope. */
    quay_irecv(T.e[0], w0, rb, sizeof rb, QUAY_ANY_SOURCE, 1, &r);
    tn_pump(&T);
    quay_isend(T.e[1], w1, sb, 1000, 0, 1, QUAY_SEND_STANDARD, &s);
    quay_isend(T.e[1], w1, sb, 1500, 0, 1, QUAY_SEND_STANDARD, &s2);
    quay_isend(T.e[1], w1, sb, 10, 0, 2, QUAY_SEND_STANDARD, &s3);
    is_int(s2->state, QUAY_RS_SEND_QUEUED);
    is_int(s3->state, QUAY_RS_SEND_QUEUED);
    tn_pump(&T);
    ok(tn_good(r, 1000) && tn_good(s, 1000));
    quay_irecv(T.e[0], w0, rb2, sizeof rb2, 1, 1, &r2);
    tn_pump(&T);
    ok(tn_good(r2, 1500) && tn_good(s2, 1500) && memcmp(rb2, sb, 1500) == 0);
    STATES(1, s2, "queued, flag declined, RTS", F, SQ, SA, SR, SP, D);
    quay_req_free(T.e[0], r2);
    quay_irecv(T.e[0], w0, rb2, sizeof rb2, 1, 2, &r2);
    tn_pump(&T);
    ok(tn_good(r2, 10) && tn_good(s3, 10));
    STATES(1, s3, "queued small send: eager", F, SQ, SE, D);
    quay_engine_stats(T.e[1], &ss);
    is_int((int)ss.any_flags, 4);
    quay_req_free(T.e[0], r);
    quay_req_free(T.e[0], r2);
    quay_req_free(T.e[1], s);
    quay_req_free(T.e[1], s2);
    quay_req_free(T.e[1], s3);

    /* A send cancelled with its flag out: the receiver's answer decides.
     * Claimed, the message was matched, so the cancel fails and the data
     * goes. A queued send is cancelled at once. */
    quay_irecv(T.e[0], w0, rb, sizeof rb, QUAY_ANY_SOURCE, 1, &r);
    tn_pump(&T);
    quay_isend(T.e[1], w1, sb, 1000, 0, 1, QUAY_SEND_STANDARD, &s);
    quay_isend(T.e[1], w1, sb, 1000, 0, 1, QUAY_SEND_STANDARD, &s3);
    is_int(quay_cancel(T.e[1], s3), 0);
    ok(tn_done(s3, &st) && st.cancelled);
    STATES(1, s3, "queued send cancelled", F, SQ, SC, D);
    quay_req_free(T.e[1], s3);
    is_int(quay_cancel(T.e[1], s), 0);
    ok(!tn_done(s, NULL));
    tn_pump(&T);
    ok(tn_good(s, 1000) && !s->status.cancelled);
    ok(tn_good(r, 1000) && memcmp(rb, sb, 1000) == 0);
    STATES(1, s, "flag out, cancel asked, claimed: not cancelled", F, SA, SWR, D);
    quay_req_free(T.e[0], r);
    quay_req_free(T.e[1], s);

    /* Declined, nothing of it reached the receiver: cancelled. (An
     * envelope from rank 2 takes the wildcard before the flag gets
     * there.) */
    quay_irecv(T.e[0], w0, rb, sizeof rb, QUAY_ANY_SOURCE, 1, &r);
    tn_pump(&T);
    quay_isend(T.e[1], w1, sb, 1000, 0, 1, QUAY_SEND_STANDARD, &s);
    tn_pull(&T, 1);
    is_int(quay_cancel(T.e[1], s), 0);
    quay_isend(T.e[2], w2, sb, 20, 0, 1, QUAY_SEND_STANDARD, &s2);
    tn_pull(&T, 2);
    is_int(tn_deliver(&T, find(QUAY_PKT_EAGER, 2, 0)), 0);
    ok(tn_good(r, 20) && tn_good(s2, 20));
    tn_pump(&T);
    ok(tn_done(s, &st) && st.cancelled && st.error == QUAY_ECANCELLED);
    STATES(1, s, "flag out, cancelled: flag declined", F, SA, SC, D);
    quay_req_free(T.e[0], r);
    quay_req_free(T.e[1], s);
    quay_req_free(T.e[2], s2);

    /* A claim is the match: the claimed wildcard leaves the posted queue,
     * so an envelope it would have matched goes to the next receive at
     * once (nothing waits behind a claim), and a cancel of the claimed
     * wildcard fails: its SC completes it. */
    quay_irecv(T.e[0], w0, rb, sizeof rb, QUAY_ANY_SOURCE, 1, &r);
    quay_irecv(T.e[0], w0, rb2, sizeof rb2, QUAY_ANY_SOURCE, QUAY_ANY_TAG, &r2);
    tn_pump(&T);
    quay_isend(T.e[1], w1, sb, 1000, 0, 1, QUAY_SEND_STANDARD, &s);
    tn_pull(&T, 1);
    tn_deliver(&T, find(QUAY_PKT_ANY_FLAG, 1, 0)); /* claimed */
    ok(r->flags & RF_ANY_CLAIMED);
    is_int(quay_cancel(T.e[0], r), 0);
    ok(!tn_done(r, NULL));
    quay_isend(T.e[2], w2, sb, 20, 0, 1, QUAY_SEND_STANDARD, &s2);
    tn_pull(&T, 2);
    is_int(offer(find(QUAY_PKT_EAGER, 2, 0)), 0);
    ok(tn_good(r2, 20) && tn_done(r2, &st) && st.source == 2);
    ok(!tn_done(r, NULL));
    tn_pump(&T);
    ok(tn_good(r, 1000) && !r->status.cancelled && memcmp(rb, sb, 1000) == 0);
    ok(tn_good(s2, 20) && tn_good(s, 1000));
    STATES(0, r2, "wildcard after a claimed one, taken by an envelope", F, RA, D);
    STATES(0, r, "claimed, cancel failed, SC", F, RA, D);
    quay_req_free(T.e[0], r);
    quay_req_free(T.e[0], r2);
    quay_req_free(T.e[1], s);
    quay_req_free(T.e[2], s2);

    /* Unclaimed: cancelled at once; an RTS matched before any flag. */
    quay_irecv(T.e[0], w0, rb, sizeof rb, QUAY_ANY_SOURCE, 3, &r);
    is_int(quay_cancel(T.e[0], r), 0);
    ok(tn_done(r, &st) && st.cancelled);
    STATES(0, r, "wildcard cancelled unclaimed", F, RA, D);
    quay_req_free(T.e[0], r);
    tn_pump(&T);
    /* (a communicator of its own: the ANY_TAG pattern above stands on
     * the world and would catch the send) */
    quay_comm *x[3];
    for (int k = 0; k < 3; k++)
        is_int(quay_comm_create(T.e[k], 7, 3, NULL, &x[k]), 0);
    quay_isend(T.e[2], x[2], sb, 3000, 0, 4, QUAY_SEND_STANDARD, &s);
    tn_pull(&T, 2); /* the RTS is on its way before the wildcard */
    quay_irecv(T.e[0], x[0], rb3, sizeof rb3, QUAY_ANY_SOURCE, 4, &r);
    tn_pump(&T);
    ok(tn_good(r, 3000) && tn_good(s, 3000) && memcmp(rb3, sb, 3000) == 0);
    STATES(0, r, "announced wildcard matched by an RTS", F, RA, RU, D);
    STATES(2, s, "the RTS", F, SR, SP, D);
    quay_req_free(T.e[0], r);
    quay_req_free(T.e[2], s);
    is_int(regions_in_use(0), 0);
    is_int(regions_in_use(1), 0);
    finish();
}

/* A freed communicator's announcements are withdrawn; a flag still in
 * flight for it is declined even when its slot already serves another
 * communicator, where the receiver's rank differs (the sender goes by
 * its send and ctx), and the envelope waits for the context to return. */
static void t_arbitrate_comm_freed(void)
{
    static uint8_t sb[3000], rb[3000], rb2[3000];
    tn_fill(sb, sizeof sb, 12);
    quay_req *s, *s2, *r, *r2;
    quay_stats ss;
    quay_config c;
    tn_config(&c, 0, 3);
    c.transport_caps = QUAY_CAP_RDMA_PUT;
    c.rtr = 1;
    c.rtr_any = 1;
    if (!setup_cfg(3, &c))
        return;
    T.keep_eagain = 1;
    quay_comm *y[3], *z[3];
    for (int k = 0; k < 3; k++)
        is_int(quay_comm_create(T.e[k], 9, 3, NULL, &y[k]), 0);
    /* Announced on y, then taken by an eager message: idle, held by 1, 2. */
    quay_irecv(T.e[0], y[0], rb, sizeof rb, QUAY_ANY_SOURCE, 5, &r);
    tn_pump(&T);
    is_int((int)T.e[1]->peers[0].nrtr, 1);
    quay_isend(T.e[2], y[2], sb, 10, 0, 5, QUAY_SEND_STANDARD, &s);
    tn_pump(&T);
    ok(tn_good(r, 10) && tn_good(s, 10));
    quay_req_free(T.e[0], r);
    quay_req_free(T.e[2], s);
    is_int(quay_comm_free(T.e[0], y[0]), 0);
    tn_pump(&T);
    is_int((int)T.e[1]->peers[0].nrtr, 0);
    is_int((int)T.e[2]->peers[0].nrtr, 0);
    quay_engine_stats(T.e[0], &ss);
    is_int((int)ss.any_evicted, 1);

    /* Again, but rank 1's flag is in flight while y is freed and its slot
     * is reused by z, where rank 0 is rank 1. */
    is_int(quay_comm_create(T.e[0], 9, 3, NULL, &y[0]), 0);
    quay_irecv(T.e[0], y[0], rb, sizeof rb, QUAY_ANY_SOURCE, 5, &r);
    tn_pump(&T);
    quay_isend(T.e[2], y[2], sb, 10, 0, 5, QUAY_SEND_STANDARD, &s);
    tn_pump(&T);
    ok(tn_good(r, 10) && tn_good(s, 10));
    quay_req_free(T.e[0], r);
    quay_req_free(T.e[2], s);
    quay_isend(T.e[1], y[1], sb, 2000, 0, 5, QUAY_SEND_STANDARD, &s);
    is_int(s->state, QUAY_RS_SEND_ANY);
    tn_pull(&T, 1); /* the flag is in flight */
    is_int(quay_comm_free(T.e[0], y[0]), 0);
    const int32_t zmap[3] = {1, 0, 2};
    for (int k = 0; k < 3; k++)
        is_int(quay_comm_create(T.e[k], 10, 3, zmap, &z[k]), 0);
    quay_irecv(T.e[0], z[0], rb2, sizeof rb2, QUAY_ANY_SOURCE, 6, &r2);
    is_int(r2->state, QUAY_RS_RECV_ANY);
    is_int(T.e[0]->aslots[0].src, 1);
    tn_pump(&T);
    is_int(s->state, QUAY_RS_SEND_RTS);
    quay_engine_stats(T.e[0], &ss);
    is_int((int)ss.any_declined, 1);
    /* The RTS waits for context 9; y again takes it. */
    is_int(quay_comm_create(T.e[0], 9, 3, NULL, &y[0]), 0);
    quay_irecv(T.e[0], y[0], rb, sizeof rb, 1, 5, &r);
    tn_pump(&T);
    ok(tn_good(r, 2000) && tn_good(s, 2000) && memcmp(rb, sb, 2000) == 0);
    STATES(1, s, "flag declined for a freed communicator", F, SA, SR, SP, D);
    quay_req_free(T.e[0], r);
    quay_req_free(T.e[1], s);
    quay_isend(T.e[2], z[2], sb, 1200, 1, 6, QUAY_SEND_STANDARD, &s2);
    tn_pump(&T);
    ok(tn_good(r2, 1200) && tn_good(s2, 1200));
    quay_req_free(T.e[0], r2);
    quay_req_free(T.e[2], s2);
    finish();
}

/* A collective's request runs (COLL) until its schedule is done; the
 * schedule's own sends and receives go through the ordinary states. */
static void t_collective(void)
{
    if (!setup(3))
        return;
    quay_req *q[3];
    for (int r = 0; r < 2; r++)
        is_int(quay_ibarrier(T.e[r], T.world[r], &q[r]), 0);
    tn_pump(&T);
    ok(!tn_done(q[0], NULL) && !tn_done(q[1], NULL));
    is_int(quay_ibarrier(T.e[2], T.world[2], &q[2]), 0);
    tn_pump(&T);
    for (int r = 0; r < 3; r++) {
        ok(tn_good(q[r], 0));
        STATES(r, q[r], "barrier", F, CO, D);
        quay_req_free(T.e[r], q[r]);
    }
    finish();
}

static void t_mprobe(void)
{
    if (!setup(2))
        return;
    static uint8_t sb[1000], rb[1000];
    tn_fill(sb, sizeof sb, 5);
    quay_req *s1, *s2, *r1, *r2;
    quay_msg *m1, *m2;
    quay_isend(T.e[0], T.world[0], sb, 40, 1, 1, QUAY_SEND_STANDARD, &s1);
    quay_isend(T.e[0], T.world[0], sb, 1000, 1, 2, QUAY_SEND_STANDARD, &s2);
    tn_pump(&T);
    quay_improbe(T.e[1], T.world[1], 0, 1, &m1, NULL);
    quay_improbe(T.e[1], T.world[1], 0, 2, &m2, NULL);
    ok(m1 && m2);
    quay_imrecv(T.e[1], m1, rb, sizeof rb, &r1);
    quay_imrecv(T.e[1], m2, rb, sizeof rb, &r2);
    tn_pump(&T);
    ok(tn_good(r1, 40) && tn_good(r2, 1000));
    STATES(1, r1, "imrecv of an eager message", F, D);
    STATES(1, r2, "imrecv of an RTS", F, RR, D);
    quay_req_free(T.e[0], s1);
    quay_req_free(T.e[0], s2);
    quay_req_free(T.e[1], r1);
    quay_req_free(T.e[1], r2);
    finish();
}

static void t_null_buffered(void)
{
    if (!setup(2))
        return;
    static uint8_t abuf[2048];
    uint8_t sb[50], rb[50];
    tn_fill(sb, sizeof sb, 6);
    quay_req *s, *r, *b;
    quay_isend(T.e[0], T.world[0], sb, 5, QUAY_PROC_NULL, 1, QUAY_SEND_STANDARD, &s);
    quay_irecv(T.e[0], T.world[0], rb, 5, QUAY_PROC_NULL, 1, &r);
    STATES(0, s, "send to PROC_NULL", F, D);
    STATES(0, r, "receive from PROC_NULL", F, D);
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[0], r);

    quay_buffer_attach(T.e[0], abuf, sizeof abuf);
    int before = nrec;
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 2, QUAY_SEND_BUFFERED, &b);
    STATES(0, b, "buffered send (user request)", F, D);
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 2, &r);
    tn_pump(&T);
    ok(tn_good(r, 50) && memcmp(rb, sb, sizeof sb) == 0);
    /* The carrier is the one other request of rank 0 since `before`. */
    uint32_t carrier = 0;
    for (int i = before; i < nrec; i++)
        if (REC[i].rank == 0 && REC[i].ev.kind == QUAY_TR_STATE &&
            REC[i].ev.req_id != quay_req_id(b))
            carrier = REC[i].ev.req_id;
    ok(carrier != 0);
    static const int want[] = {F, SE, D};
    expect_states(0, carrier, want, 3, "buffered send (internal carrier)");
    quay_req_free(T.e[0], b);
    quay_req_free(T.e[1], r);
    void *p;
    size_t n;
    is_int(quay_buffer_detach(T.e[0], &p, &n), 0);
    finish();
}

/* ---- cancellation ---------------------------------------------------------------------- */

static void t_cancel_succeeds(void)
{
    if (!setup(2))
        return;
    static uint8_t sb[1000];
    tn_fill(sb, sizeof sb, 7);
    quay_req *s, *r;
    quay_status st;
    /* Eager, cancelled before it left. */
    quay_isend(T.e[0], T.world[0], sb, 50, 1, 1, QUAY_SEND_STANDARD, &s);
    quay_cancel(T.e[0], s);
    tn_pump(&T);
    ok(tn_done(s, &st) && st.cancelled && st.error == QUAY_ECANCELLED && st.count == 0);
    STATES(0, s, "eager send cancelled", F, SE, SC, D);
    quay_req_free(T.e[0], s);

    /* Sync eager waiting for its ACK, cancelled. */
    quay_isend(T.e[0], T.world[0], sb, 50, 1, 2, QUAY_SEND_SYNC, &s);
    tn_pump(&T);
    quay_cancel(T.e[0], s);
    tn_pump(&T);
    ok(tn_done(s, &st) && st.cancelled);
    STATES(0, s, "sync eager cancelled while waiting for its ACK", F, SE, SW, SC, D);
    quay_req_free(T.e[0], s);

    /* Rendezvous whose RTS waits unexpected. */
    quay_isend(T.e[0], T.world[0], sb, 1000, 1, 3, QUAY_SEND_STANDARD, &s);
    tn_pump(&T);
    quay_cancel(T.e[0], s);
    tn_pump(&T);
    ok(tn_done(s, &st) && st.cancelled);
    STATES(0, s, "rendezvous send cancelled", F, SR, SC, D);
    quay_req_free(T.e[0], s);

    int flag = 1;
    quay_iprobe(T.e[1], T.world[1], QUAY_ANY_SOURCE, QUAY_ANY_TAG, &flag, NULL);
    ok_msg(!flag, "no cancelled message left at the receiver");

    /* A posted receive. */
    uint8_t rb[10];
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 9, &r);
    is_int(quay_cancel(T.e[1], r), 0);
    ok(tn_done(r, &st) && st.cancelled && st.error == QUAY_ECANCELLED);
    STATES(1, r, "posted receive cancelled", F, RP, D);
    quay_req_free(T.e[1], r);
    finish();
}

static void t_cancel_fails(void)
{
    if (!setup(2))
        return;
    static uint8_t sb[1000], rb[1000];
    tn_fill(sb, sizeof sb, 8);
    quay_req *s, *r;
    quay_status st;

    /* Standard eager matched before the cancel; op_done still pending:
     * the state goes back to SEND_EAGER and completes at op_done. */
    T.auto_done = 0;
    quay_irecv(T.e[1], T.world[1], rb, 50, 0, 1, &r);
    quay_isend(T.e[0], T.world[0], sb, 50, 1, 1, QUAY_SEND_STANDARD, &s);
    tn_pull_all(&T);
    deliver_nodone(find(QUAY_PKT_EAGER, 0, 1));
    quay_cancel(T.e[0], s);
    tn_pull_all(&T);
    deliver_nodone(find(QUAY_PKT_CANCEL_REQ, 0, 1));
    tn_pull_all(&T);
    deliver_nodone(find(QUAY_PKT_CANCEL_REP, 1, 0));
    STATES(0, s, "failed cancel restores SEND_EAGER", F, SE, SC, SE);
    flush_pending(0);
    ok(tn_done(s, &st) && !st.cancelled && st.error == 0);
    STATES(0, s, "eager send, cancel failed", F, SE, SC, SE, D);
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);
    T.auto_done = 1;

    /* Sync eager matched; cancel while waiting for the ACK. */
    quay_irecv(T.e[1], T.world[1], rb, 50, 0, 2, &r);
    quay_isend(T.e[0], T.world[0], sb, 50, 1, 2, QUAY_SEND_SYNC, &s);
    tn_pull_all(&T);
    tn_deliver(&T, find(QUAY_PKT_EAGER, 0, 1)); /* matched; ACK queued */
    quay_cancel(T.e[0], s);
    tn_pump(&T);
    ok(tn_done(s, &st) && !st.cancelled && st.error == 0);
    STATES(0, s, "sync eager, cancel failed", F, SE, SW, SC, SW, D);
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);

    /* Rendezvous matched; the verdict overtakes the CTS (the receiver
     * emits control replies first): SEND_CANCEL -> SEND_RTS -> SEND_DATA. */
    quay_irecv(T.e[1], T.world[1], rb, 1000, 0, 3, &r);
    quay_isend(T.e[0], T.world[0], sb, 1000, 1, 3, QUAY_SEND_STANDARD, &s);
    tn_pull_all(&T);
    tn_deliver(&T, find(QUAY_PKT_RTS, 0, 1)); /* matched; CTS not pulled yet */
    quay_cancel(T.e[0], s);
    tn_pull(&T, 0);
    tn_deliver(&T, find(QUAY_PKT_CANCEL_REQ, 0, 1));
    tn_pull(&T, 1);
    ok(T.nq == 2 && tn_type(&T, 0) == QUAY_PKT_CANCEL_REP && tn_type(&T, 1) == QUAY_PKT_CTS);
    tn_pump(&T);
    ok(tn_done(s, &st) && !st.cancelled && tn_good(r, 1000) && memcmp(rb, sb, 1000) == 0);
    STATES(0, s, "rendezvous, cancel failed before the CTS", F, SR, SC, SR, SD, D);
    STATES(1, r, "its receive", F, RP, RR, D);
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);

    /* Rendezvous matched; the CTS arrives while the cancel is pending. */
    quay_irecv(T.e[1], T.world[1], rb, 1000, 0, 4, &r);
    quay_isend(T.e[0], T.world[0], sb, 1000, 1, 4, QUAY_SEND_STANDARD, &s);
    tn_pull_all(&T);
    tn_deliver(&T, find(QUAY_PKT_RTS, 0, 1));
    quay_cancel(T.e[0], s);
    tn_pull(&T, 1);
    tn_deliver(&T, find(QUAY_PKT_CTS, 1, 0));
    STATES(0, s, "CTS during a pending cancel", F, SR, SC, SD);
    tn_pump(&T);
    ok(tn_done(s, &st) && !st.cancelled && tn_good(r, 1000));
    STATES(0, s, "rendezvous, CTS during the cancel", F, SR, SC, SD, D);
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);

    /* Cancel of a completed request changes nothing. */
    quay_irecv(T.e[1], T.world[1], rb, 50, 0, 5, &r);
    quay_isend(T.e[0], T.world[0], sb, 50, 1, 5, QUAY_SEND_STANDARD, &s);
    tn_pump(&T);
    is_int(quay_cancel(T.e[0], s), 0);
    is_int(quay_cancel(T.e[1], r), 0);
    STATES(0, s, "cancel after completion: send unchanged", F, SE, D);
    STATES(1, r, "cancel after completion: receive unchanged", F, RP, D);
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);
    finish();
}

/* ---- transport failures ------------------------------------------------------------------ */

static void t_failures(void)
{
    if (!setup(2))
        return;
    static uint8_t sb[1000], rb[1000];
    tn_fill(sb, sizeof sb, 9);
    quay_req *s, *r;
    quay_status st;
    T.auto_done = 0;

    /* Eager whose packet the transport fails. */
    quay_isend(T.e[0], T.world[0], sb, 50, 1, 1, QUAY_SEND_STANDARD, &s);
    tn_pull_all(&T);
    is_int(quay_on_op_done(T.e[0], T.q[0].token, QUAY_EPEER), 0);
    T.q[0].done = 1;
    ok(tn_done(s, &st) && st.error == QUAY_EPEER);
    STATES(0, s, "eager send, transport failed", F, SE, D);
    quay_req_free(T.e[0], s);
    tn_deliver(&T, 0);
    quay_irecv(T.e[1], T.world[1], rb, 50, 0, 1, &r); /* the bytes did arrive */
    quay_req_free(T.e[1], r);

    /* Rendezvous: the DATA fragments fail (a fatal code maps to EPEER). */
    quay_irecv(T.e[1], T.world[1], rb, 1000, 0, 2, &r);
    quay_isend(T.e[0], T.world[0], sb, 1000, 1, 2, QUAY_SEND_STANDARD, &s);
    tn_pull_all(&T);
    tn_deliver(&T, find(QUAY_PKT_RTS, 0, 1));
    tn_pull_all(&T);
    tn_deliver(&T, find(QUAY_PKT_CTS, 1, 0));
    tn_pull_all(&T);
    int ndata = 0;
    for (int i = 0; i < T.nq; i++) {
        if (tn_type(&T, i) == QUAY_PKT_DATA && !T.q[i].done) {
            quay_on_op_done(T.e[0], T.q[i].token, QUAY_ENOMEM);
            T.q[i].done = 1;
            ndata++;
        }
    }
    ok(ndata == 2);
    ok(tn_done(s, &st) && st.error == QUAY_EPEER);
    STATES(0, s, "rendezvous send, DATA failed", F, SR, SD, D);
    quay_req_free(T.e[0], s);

    /* The receive's CTS fails. */
    quay_req *r2, *s2;
    quay_irecv(T.e[1], T.world[1], rb, 1000, 0, 3, &r2);
    quay_isend(T.e[0], T.world[0], sb, 1000, 1, 3, QUAY_SEND_STANDARD, &s2);
    tn_pull(&T, 0);
    deliver_nodone(find(QUAY_PKT_RTS, 0, 1));
    tn_pull(&T, 1);
    int i = find(QUAY_PKT_CTS, 1, 0);
    quay_on_op_done(T.e[1], T.q[i].token, QUAY_EPEER);
    T.q[i].done = 1;
    ok(tn_done(r2, &st) && st.error == QUAY_EPEER);
    STATES(1, r2, "rendezvous receive, CTS failed", F, RP, RR, D);
    flush_pending(0);
    flush_pending(1);
    quay_req_free(T.e[1], r2);
    quay_req_free(T.e[0], s2);
    tn_fini(&T);

    /* The CTS's transmission is reported failed only after all the data it
     * asked for arrived (a peer killed late): the receive stays good. */
    if (!setup(2))
        return;
    T.auto_done = 0;
    quay_req *r3, *s3;
    static uint8_t rb3[300];
    is_int(quay_irecv(T.e[1], T.world[1], rb3, 300, 0, 4, &r3), 0);
    is_int(quay_isend(T.e[0], T.world[0], sb, 300, 1, 4, QUAY_SEND_STANDARD, &s3), 0);
    for (int round = 0; round < 10 && !quay_req_test(s3, NULL); round++) {
        tn_pull_all(&T);
        for (int k = 0; k < T.nq;) {
            if (T.q[k].from == 0 && !T.q[k].done) {
                quay_on_op_done(T.e[0], T.q[k].token, 0);
                T.q[k].done = 1;
            }
            deliver_nodone(k);
        }
    }
    ok(!quay_req_test(r3, NULL)); /* its CTS descriptors are still out */
    int nfail = 0;
    for (int k = 0; k < npend; k++)
        if (PEND[k].from == 1 &&
            quay_on_op_done(T.e[1], PEND[k].token, QUAY_EPEER) == 0)
            nfail++;
    npend = 0;
    ok_msg(nfail > 0, "%d CTS transmissions reported failed", nfail);
    ok(tn_done(r3, &st) && st.error == 0 && st.count == 300 && memcmp(rb3, sb, 300) == 0);
    quay_req_free(T.e[1], r3);
    quay_req_free(T.e[0], s3);
    /* The peers cannot finish these transfers; free without pumping. */
    flush_pending(0);
    tn_fini(&T);
}

/* ---- packets and matches in the trace ---------------------------------------------------- */

static void t_packet_trace(void)
{
    if (!setup(2))
        return;
    static uint8_t sb[1000], rb[1000];
    tn_fill(sb, sizeof sb, 10);
    quay_req *s, *r;
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 5, &r);
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 5, QUAY_SEND_STANDARD, &s);
    tn_pump(&T);
    ok(tn_good(s, 1000) && tn_good(r, 1000));

    int out[64], nout = 0, in0[64], nin0 = 0, in1[64], nin1 = 0, out0[64], nout0 = 0,
        out1[64], nout1 = 0, bad = 0, nmatch = 0;
    for (int i = 0; i < nrec && nout < 64; i++) {
        const quay_trace_event *e = &REC[i].ev;
        int rank = REC[i].rank;
        if (e->kind == QUAY_TR_PKT_OUT) {
            out[nout++] = e->pkt;
            if (e->peer != 1 - rank)
                bad++;
            if (rank == 0)
                out0[nout0++] = e->pkt;
            else
                out1[nout1++] = e->pkt;
            if (e->pkt == QUAY_PKT_RTS && (e->seq != 0 || e->req_id != quay_req_id(s)))
                bad++;
        } else if (e->kind == QUAY_TR_PKT_IN) {
            if (e->peer != 1 - rank)
                bad++;
            if (rank == 0)
                in0[nin0++] = e->pkt;
            else
                in1[nin1++] = e->pkt;
        } else if (e->kind == QUAY_TR_MATCH) {
            nmatch++;
            ok(rank == 1 && e->req_id == quay_req_id(r) && e->peer == 0 && e->seq == 0 &&
               e->ctx == 0 && e->src == 0 && e->tag == 5);
        } else if (e->kind == QUAY_TR_REJECT) {
            bad++;
        }
    }
    is_int(nmatch, 1);
    is_int(bad, 0);
    ok_msg(nout >= 3 && out[0] == QUAY_PKT_RTS && out[1] == QUAY_PKT_CTS &&
               out[2] == QUAY_PKT_DATA,
           "packet sequence starts RTS, CTS, DATA");
    int ndata = 0, ncts = 0, other = 0, data_before_cts = 0, seen_cts = 0;
    for (int i = 0; i < nout; i++) {
        ndata += out[i] == QUAY_PKT_DATA;
        ncts += out[i] == QUAY_PKT_CTS;
        other += out[i] != QUAY_PKT_DATA && out[i] != QUAY_PKT_CTS && out[i] != QUAY_PKT_RTS;
        seen_cts |= out[i] == QUAY_PKT_CTS;
        data_before_cts += out[i] == QUAY_PKT_DATA && !seen_cts;
    }
    is_int(ndata, 8); /* 1000 bytes in 128-byte fragments */
    ok(ncts >= 1 && ncts < 8);
    is_int(other + data_before_cts, 0);
    /* FIFO links: each side accepts what the other emitted, in order. */
    ok(nout0 == nin1 && memcmp(out0, in1, (size_t)nout0 * sizeof(int)) == 0);
    ok(nout1 == nin0 && memcmp(out1, in0, (size_t)nout1 * sizeof(int)) == 0);
    ok(nout0 == 1 + ndata && nout1 == ncts);
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);

    /* MATCH on a communicator whose ranks differ from world ranks, for a
     * receive posted late (the match happens inside quay_irecv), and for
     * a matched probe (no request). */
    static const int32_t map[2] = {1, 0};
    quay_comm *c0, *c1;
    is_int(quay_comm_create(T.e[0], 9, 2, map, &c0), 0);
    is_int(quay_comm_create(T.e[1], 9, 2, map, &c1), 0);
    quay_isend(T.e[0], c0, sb, 20, 0, 6, QUAY_SEND_STANDARD, &s);
    quay_req *s2;
    quay_isend(T.e[0], c0, sb, 20, 0, 7, QUAY_SEND_STANDARD, &s2);
    tn_pump(&T);
    nrec = 0;
    quay_irecv(T.e[1], c1, rb, sizeof rb, QUAY_ANY_SOURCE, 6, &r);
    ok(tn_good(r, 20));
    ok_msg(nrec >= 1 && REC[0].ev.kind == QUAY_TR_MATCH && REC[0].rank == 1 &&
               REC[0].ev.req_id == quay_req_id(r) && REC[0].ev.peer == 0 &&
               REC[0].ev.seq == 1 && REC[0].ev.ctx == 9 && REC[0].ev.src == 1 &&
               REC[0].ev.tag == 6,
           "MATCH: world peer 0, seq 1, ctx 9, comm src 1, tag 6");
    nrec = 0;
    quay_msg *m;
    quay_improbe(T.e[1], c1, 1, QUAY_ANY_TAG, &m, NULL);
    ok_msg(nrec == 1 && REC[0].ev.kind == QUAY_TR_MATCH && REC[0].ev.req_id == 0 &&
               REC[0].ev.seq == 2 && REC[0].ev.tag == 7,
           "MATCH of a matched probe: no request, seq 2, tag 7");
    quay_req *r2;
    quay_imrecv(T.e[1], m, rb, sizeof rb, &r2);
    ok(tn_good(r2, 20));
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[0], s2);
    quay_req_free(T.e[1], r);
    quay_req_free(T.e[1], r2);
    quay_comm_free(T.e[0], c0);
    quay_comm_free(T.e[1], c1);
    finish();
}

/*
 * quay.h documents quay_trace_event.seq as "MATCH / PKT: the peer's
 * envelope sequence number". Regression (src/engine/engine.c,
 * quay_on_packet): PKT_IN events of packets from the wire used to carry
 * seq 0, so a PKT_IN could not be paired with its PKT_OUT.
 */
static void t_pkt_in_seq(void)
{
    if (!setup(2))
        return;
    uint8_t sb[20], rb[20];
    tn_fill(sb, sizeof sb, 11);
    quay_req *s[2], *r[2];
    for (int k = 0; k < 2; k++)
        quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 1, QUAY_SEND_STANDARD, &s[k]);
    tn_pull_all(&T);
    size_t rlen = T.q[1].len;
    uint8_t *replay = malloc(rlen);
    memcpy(replay, T.q[1].bytes, rlen);
    tn_pump(&T);
    uint32_t out_seq = UINT32_MAX, in_seq = UINT32_MAX;
    int nin = 0;
    for (int i = 0; i < nrec; i++) {
        const quay_trace_event *e = &REC[i].ev;
        if (e->kind == QUAY_TR_PKT_OUT && REC[i].rank == 0)
            out_seq = e->seq; /* the last: seq 1 */
        if (e->kind == QUAY_TR_PKT_IN && REC[i].rank == 1) {
            in_seq = e->seq;
            nin++;
        }
    }
    is_int(nin, 2);
    is_int(out_seq, 1);
    ok_msg(in_seq == out_seq, "PKT_IN of EAGER seq 1 reports seq %u", in_seq);
    /* A rejected copy is traced with its seq and code too. */
    nrec = 0;
    is_int(quay_on_packet(T.e[1], 0, replay, rlen), QUAY_ESTATE);
    ok(nrec == 1 && REC[0].ev.kind == QUAY_TR_REJECT && REC[0].ev.seq == 1 &&
       REC[0].ev.code == QUAY_ESTATE && REC[0].ev.pkt == QUAY_PKT_EAGER &&
       REC[0].ev.peer == 0);
    free(replay);
    for (int k = 0; k < 2; k++) {
        quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 1, &r[k]);
        quay_req_free(T.e[1], r[k]);
        quay_req_free(T.e[0], s[k]);
    }
    finish();
}

/* ---- COMPLETE actions and quay_req_free ----------------------------------------------------- */

typedef struct completes {
    int n;
    int rank[64];
    quay_req *req[64];
    void *user[64];
} completes;

/* tn_pull, but COMPLETE actions are recorded. */
static int pull_rec(int r, completes *c)
{
    quay_action a;
    int sends = 0;
    while (quay_next_action(T.e[r], &a) == 1) {
        if (a.kind == QUAY_ACT_COMPLETE) {
            if (c->n < 64) {
                c->rank[c->n] = r;
                c->req[c->n] = a.req;
                c->user[c->n] = a.user;
            }
            c->n++;
            continue;
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
        quay_on_op_done(T.e[r], a.token, 0);
        p->done = 1;
        sends++;
    }
    return sends;
}

static void pump_rec(completes *c)
{
    for (;;) {
        int moved = 0;
        for (int r = 0; r < T.n; r++)
            moved += pull_rec(r, c);
        if (moved == 0 && T.nq == 0)
            return;
        while (T.nq > 0)
            tn_deliver(&T, 0);
    }
}

static int count_for(const completes *c, int rank, const quay_req *r, void *user)
{
    int n = 0;
    for (int i = 0; i < c->n && i < 64; i++)
        if (c->rank[i] == rank && c->req[i] == r)
            n += c->user[i] == user ? 1 : 100;
    return n;
}

static void complete_actions_run(int on)
{
    quay_config cfg;
    tn_config(&cfg, 0, 2);
    if (!on)
        cfg.flags &= ~(uint32_t)QUAY_CFG_COMPLETE_ACTIONS;
    if (!setup_cfg(2, &cfg))
        return;
    static uint8_t abuf[2048], sb[1000], rb[6][1000];
    tn_fill(sb, sizeof sb, 12);
    completes c = {0, {0}, {0}, {0}};
    quay_req *s[5], *r[6], *early, *late;
    static char users[16];
    quay_buffer_attach(T.e[0], abuf, sizeof abuf);
    quay_isend(T.e[0], T.world[0], sb, 50, 1, 1, QUAY_SEND_STANDARD, &s[0]);
    quay_isend(T.e[0], T.world[0], sb, 1000, 1, 2, QUAY_SEND_STANDARD, &s[1]);
    quay_isend(T.e[0], T.world[0], sb, 50, 1, 3, QUAY_SEND_SYNC, &s[2]);
    quay_isend(T.e[0], T.world[0], sb, 50, QUAY_PROC_NULL, 4, QUAY_SEND_STANDARD, &s[3]);
    quay_isend(T.e[0], T.world[0], sb, 50, 1, 5, QUAY_SEND_BUFFERED, &s[4]);
    for (int k = 0; k < 5; k++)
        quay_req_set_user(s[k], &users[k]);
    for (int k = 0; k < 5; k++) {
        quay_irecv(T.e[1], T.world[1], rb[k], 1000, k == 3 ? QUAY_PROC_NULL : 0, k + 1,
                   &r[k]);
        quay_req_set_user(r[k], &users[5 + k]);
    }
    quay_irecv(T.e[1], T.world[1], rb[5], 10, 0, 99, &r[5]); /* cancelled */
    quay_req_set_user(r[5], &users[10]);
    quay_cancel(T.e[1], r[5]);
    /* Freed before completion: released at completion, no action. */
    quay_isend(T.e[0], T.world[0], sb, 1000, 1, 6, QUAY_SEND_STANDARD, &early);
    quay_req_set_user(early, &users[11]);
    quay_req_free(T.e[0], early);
    quay_req *rearly;
    quay_irecv(T.e[1], T.world[1], rb[0], 1000, 0, 6, &rearly);
    quay_req_free(T.e[1], rearly);
    pump_rec(&c);
    int all_done = 1;
    for (int k = 0; k < 5; k++)
        all_done &= tn_done(s[k], NULL) && tn_done(r[k], NULL);
    ok(memcmp(rb[1], sb, 1000) == 0 && memcmp(rb[4], sb, 50) == 0);
    ok_msg(all_done && tn_done(r[5], NULL), "every request complete");
    quay_stats st;
    quay_engine_stats(T.e[0], &st);
    is_int(st.reqs_in_use, 5); /* early and the buffered carrier released */
    quay_engine_stats(T.e[1], &st);
    is_int(st.reqs_in_use, 6);
    int want = on ? 1 : 0, exact = 1;
    for (int k = 0; k < 5; k++) {
        exact &= count_for(&c, 0, s[k], &users[k]) == want;
        exact &= count_for(&c, 1, r[k], &users[5 + k]) == want;
    }
    exact &= count_for(&c, 1, r[5], &users[10]) == want;
    ok_msg(exact, "one COMPLETE (with its user pointer) per request: %s", on ? "on" : "off");
    is_int(c.n, on ? 11 : 0);

    /* Completed but freed before its COMPLETE is pulled: no action. */
    quay_isend(T.e[0], T.world[0], sb, 10, QUAY_PROC_NULL, 0, QUAY_SEND_STANDARD, &late);
    ok(tn_done(late, NULL));
    quay_req_free(T.e[0], late);
    c.n = 0;
    pump_rec(&c);
    is_int(c.n, 0);
    for (int k = 0; k < 5; k++) {
        quay_req_free(T.e[0], s[k]);
        quay_req_free(T.e[1], r[k]);
    }
    quay_req_free(T.e[1], r[5]);
    void *p;
    size_t n;
    quay_buffer_detach(T.e[0], &p, &n);
    finish();
}

static void t_complete_on(void) { complete_actions_run(1); }
static void t_complete_off(void) { complete_actions_run(0); }

static void t_free_before_completion(void)
{
    if (!setup(2))
        return;
    static uint8_t sb[1000], rb[1000];
    tn_fill(sb, sizeof sb, 13);
    quay_req *s, *r;
    quay_stats st;
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 1, &r);
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 1, QUAY_SEND_STANDARD, &s);
    uint32_t sid = quay_req_id(s), rid = quay_req_id(r);
    is_int(quay_req_free(T.e[0], s), 0);
    is_int(quay_req_free(T.e[1], r), 0);
    quay_engine_stats(T.e[0], &st);
    is_int(st.reqs_in_use, 1); /* still in flight */
    tn_pump(&T);
    static const int ws[] = {F, SR, SD, D}, wr[] = {F, RP, RR, D};
    expect_states(0, sid, ws, 4, "freed send still runs to DONE");
    expect_states(1, rid, wr, 4, "freed receive still runs to DONE");
    ok(memcmp(sb, rb, sizeof sb) == 0);
    is_int(T.ncomplete[0] + T.ncomplete[1], 0);
    quay_engine_stats(T.e[0], &st);
    is_int(st.reqs_in_use, 0);
    quay_engine_stats(T.e[1], &st);
    is_int(st.reqs_in_use, 0);
    /* The slot comes back with a new id. */
    quay_isend(T.e[0], T.world[0], sb, 10, QUAY_PROC_NULL, 0, QUAY_SEND_STANDARD, &s);
    ok((quay_req_id(s) & REQ_IDX_MASK) == (sid & REQ_IDX_MASK) && quay_req_id(s) != sid);
    quay_req_free(T.e[0], s);
    finish();
}

/* An engine in its sticky fatal state (only a quay bug gets it there: an
 * oracle mismatch, its own packet refused; set by hand here) says it has
 * actions, so that a loop which pulls only when quay_has_actions says so
 * (quay_rt's) still pulls and learns the code. */
static void t_fatal_has_actions(void)
{
    if (!setup(2))
        return;
    tn_pump(&T);
    quay_action a;
    is_int(quay_has_actions(T.e[0]), 0);
    T.e[0]->fatal = QUAY_EINTERNAL;
    is_int(quay_has_actions(T.e[0]), 1);
    is_int(quay_next_action(T.e[0], &a), QUAY_EINTERNAL);
    is_int(quay_has_actions(T.e[1]), 0); /* the other engine is not touched */
    T.e[0]->fatal = 0;
    finish();
}

/* quay_in_flight: a request in use (complete but not freed included) or a
 * packet the transport has not reported done; nothing else. */
static void t_in_flight(void)
{
    if (!setup(2))
        return;
    tn_pump(&T);
    tn_done_all(&T);
    is_int(quay_in_flight(NULL), 0);
    is_int(quay_in_flight(T.e[0]), 0);
    is_int(quay_in_flight(T.e[1]), 0);
    uint8_t sb[8] = {1, 2, 3}, rb[8];
    quay_req *s, *r;
    is_int(quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 3, &r), 0);
    is_int(quay_in_flight(T.e[1]), 1); /* a posted receive */
    is_int(quay_in_flight(T.e[0]), 0);
    is_int(quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 3, QUAY_SEND_STANDARD, &s), 0);
    quay_req_free(T.e[0], s); /* freed early: its packet is still the engine's */
    int auto_done = T.auto_done;
    T.auto_done = 0;
    tn_pull(&T, 0);
    T.auto_done = auto_done;
    is_int(quay_in_flight(T.e[0]), 1); /* the transport holds the packet */
    tn_done_all(&T);
    tn_pump(&T);
    tn_done_all(&T);
    is_int(quay_in_flight(T.e[0]), 0);
    ok(tn_done(r, NULL));
    is_int(quay_in_flight(T.e[1]), 1); /* complete, not yet freed */
    quay_req_free(T.e[1], r);
    is_int(quay_in_flight(T.e[1]), 0);
    finish();
}

/* The context index (comm.c) against a model: communicators created and
 * freed in a seeded order until the pool is full and empty again, every
 * context looked up after each change: a live one found in its slot, a
 * freed or never made one not; each creation takes the lowest free slot. */
static void t_comm_index(void)
{
    if (!setup(2))
        return;
    quay_engine *e = T.e[0];
    enum { NCTX = 400 };
    static quay_comm *live[NCTX];
    memset(live, 0, sizeof live);
    const int32_t me = 0;
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    int bad = 0, made = 0, full = 0;
    for (int step = 0; step < 4000 && !bad; step++) {
        uint32_t ctx = 1 + tn_rnd(&rng, NCTX - 1);
        if (live[ctx] != NULL) {
            bad |= quay_comm_free(e, live[ctx]) != 0;
            live[ctx] = NULL;
        } else {
            uint32_t lowest = 0;
            while (lowest < e->ncomms_max && e->comms[lowest].in_use)
                lowest++;
            quay_comm *c = NULL;
            int rc = quay_comm_create(e, ctx, 1, &me, &c);
            if (rc == QUAY_EAGAIN) {
                full++;
                continue;
            }
            bad |= rc != 0 || c != &e->comms[lowest];
            live[ctx] = c;
            made++;
        }
        for (uint32_t k = 1; k < NCTX && !bad; k++)
            bad |= comm_lookup(e, k) != live[k];
    }
    ok_msg(!bad, "lookups and slots agree with the model (%d made, %d refused full)", made,
           full);
    ok(full > 0); /* the pool filled up at least once */
    finish();
}

/* ---- allocator hooks ---------------------------------------------------------------------- */

typedef struct falloc {
    long calls;   /* alloc calls so far */
    long live;    /* blocks not yet released */
    long fail_at; /* 1-based call that returns NULL; 0 = never */
} falloc;

static void *fa_alloc(size_t size, void *ctx)
{
    falloc *fa = ctx;
    if (++fa->calls == fa->fail_at)
        return NULL;
    void *p = malloc(size ? size : 1);
    if (p)
        fa->live++;
    return p;
}

static void fa_release(void *p, void *ctx)
{
    falloc *fa = ctx;
    fa->live--;
    free(p);
}

static void use_falloc(quay_config *cfg, falloc *fa)
{
    cfg->alloc.alloc = fa_alloc;
    cfg->alloc.release = fa_release;
    cfg->alloc.ctx = fa;
}

/* With the oracle alongside (the general path) or not (the inline fast
 * paths: eager_fast.h). */
static int hot_path_oracle;

static void t_hot_path(void)
{
    falloc fa = {0, 0, 0};
    quay_config cfg;
    tn_config(&cfg, 0, 2);
    cfg.max_requests = 512;
    if (!hot_path_oracle)
        cfg.flags &= ~(uint32_t)QUAY_CFG_CHECK_ORACLE;
    use_falloc(&cfg, &fa);
    if (!is_int(tn_init(&T, 2, &cfg), 0))
        return;
    ok(fa.calls > 0 && fa.live > 0);
    static uint8_t sb[100][64], rb[100][64], big[1000], rbig[1000];
    quay_req *s[100], *r[100];
    int all = 1;
    long before = fa.calls;
    for (int batch = 0; batch < 10; batch++) {
        for (int k = 0; k < 100; k++) {
            tn_fill(sb[k], 64, batch * 100 + k);
            quay_irecv(T.e[1], T.world[1], rb[k], 64, 0, k % 7, &r[k]);
        }
        for (int k = 0; k < 100; k++)
            quay_isend(T.e[0], T.world[0], sb[k], 64, 1, k % 7,
                       batch % 2 ? QUAY_SEND_SYNC : QUAY_SEND_STANDARD, &s[k]);
        tn_pump(&T);
        for (int k = 0; k < 100; k++) {
            all &= tn_good(s[k], 64) && tn_good(r[k], 64) && memcmp(sb[k], rb[k], 64) == 0;
            quay_req_free(T.e[0], s[k]);
            quay_req_free(T.e[1], r[k]);
        }
    }
    ok_msg(all, "1,000 eager messages delivered");
    ok_msg(fa.calls == before, "no allocation on the eager hot path (%ld)", fa.calls - before);

    /* Rendezvous to a posted receive allocates nothing either. */
    before = fa.calls;
    for (int k = 0; k < 20; k++) {
        quay_irecv(T.e[1], T.world[1], rbig, sizeof rbig, 0, 1, &r[0]);
        quay_isend(T.e[0], T.world[0], big, sizeof big, 1, 1, QUAY_SEND_STANDARD, &s[0]);
        tn_pump(&T);
        all &= tn_good(s[0], 1000) && tn_good(r[0], 1000);
        quay_req_free(T.e[0], s[0]);
        quay_req_free(T.e[1], r[0]);
    }
    ok_msg(all && fa.calls == before, "no allocation for 20 rendezvous (%ld)",
           fa.calls - before);

    /* Small eager messages that arrive before their receives keep their
     * payloads in the pool's slots, standard or synchronous: nothing
     * allocated. */
    before = fa.calls;
    for (int batch = 0; batch < 4; batch++) {
        for (int k = 0; k < 100; k++) {
            tn_fill(sb[k], 64, 7000 + batch * 100 + k);
            quay_isend(T.e[0], T.world[0], sb[k], 1 + (size_t)k % 64, 1, k % 5,
                       batch % 2 ? QUAY_SEND_SYNC : QUAY_SEND_STANDARD, &s[k]);
        }
        tn_pump(&T);
        for (int k = 0; k < 100; k++)
            quay_irecv(T.e[1], T.world[1], rb[k], 64, 0, k % 5, &r[k]);
        tn_pump(&T);
        for (int k = 0; k < 100; k++) {
            size_t n = 1 + (size_t)k % 64;
            all &= tn_good(s[k], n) && tn_good(r[k], n) && memcmp(sb[k], rb[k], n) == 0;
            quay_req_free(T.e[0], s[k]);
            quay_req_free(T.e[1], r[k]);
        }
    }
    ok_msg(all && fa.calls == before, "no allocation for 400 small unexpected messages (%ld)",
           fa.calls - before);

    /* The counter is live: a longer unexpected eager payload is allocated. */
    before = fa.calls;
    quay_isend(T.e[0], T.world[0], big, 65, 1, 2, QUAY_SEND_STANDARD, &s[0]);
    tn_pump(&T);
    is_int(fa.calls - before, 1);
    quay_irecv(T.e[1], T.world[1], rbig, 65, 0, 2, &r[0]);
    ok(tn_good(r[0], 65) && memcmp(big, rbig, 65) == 0);
    quay_req_free(T.e[0], s[0]);
    quay_req_free(T.e[1], r[0]);
    clean();
    tn_fini(&T);
    is_int(fa.live, 0);
}

/* Fail allocation 1, 2, 3, ... of quay_engine_new until it succeeds. */
static void failmalloc_create(const char *what, uint32_t flags, int32_t nranks)
{
    falloc fa = {0, 0, 0};
    quay_config cfg;
    quay_config_default(&cfg);
    memset(cfg.key_secret, 0x5a, sizeof cfg.key_secret); /* (tests: any fixed secret) */
    cfg.flags |= flags;
    cfg.nranks = nranks;
    cfg.rank = nranks - 1;
    cfg.max_requests = 64;
    cfg.max_unexpected = 64;
    use_falloc(&cfg, &fa);
    int enomem = 1, noleak = 1;
    long k;
    for (k = 1; k < 1000; k++) {
        quay_engine *e = (quay_engine *)&e;
        fa.calls = 0;
        fa.live = 0;
        fa.fail_at = k;
        int rc = quay_engine_new(&cfg, &e);
        if (rc == 0) {
            quay_engine_free(e);
            noleak &= fa.live == 0;
            break;
        }
        if (rc != QUAY_ENOMEM || e != NULL) {
            enomem = 0;
            note("%s: failing allocation %ld: %s", what, k, quay_strerror(rc));
        }
        if (fa.live != 0) {
            noleak = 0;
            note("%s: failing allocation %ld leaks %ld blocks", what, k, fa.live);
        }
    }
    long clean_calls = fa.calls;
    ok_msg(k < 1000 && k == clean_calls + 1,
           "%s: %ld failure points, then success", what, k - 1);
    ok_msg(enomem, "%s: every failure is QUAY_ENOMEM with no engine", what);
    ok_msg(noleak, "%s: no failure leaks", what);
}

static void t_failmalloc(void)
{
    failmalloc_create("default", 0, 1);
    failmalloc_create("CHECK_ORACLE", QUAY_CFG_CHECK_ORACLE, 3);
    failmalloc_create("LINEAR_MATCH", QUAY_CFG_LINEAR_MATCH, 8);

    /* After creation: a communicator whose allocation fails is refused
     * with QUAY_EAGAIN and leaks nothing; an unexpected payload whose copy
     * fails is not consumed (QUAY_EAGAIN) and can be offered again. */
    falloc fa = {0, 0, 0};
    quay_config cfg;
    tn_config(&cfg, 0, 2);
    use_falloc(&cfg, &fa);
    if (!is_int(tn_init(&T, 2, &cfg), 0))
        return;
    quay_comm *c = NULL;
    for (int k = 1; k <= 2; k++) {
        long live = fa.live;
        fa.fail_at = fa.calls + k;
        ok_msg(quay_comm_create(T.e[1], 7, 2, NULL, &c) == QUAY_EAGAIN && c == NULL &&
                   fa.live == live,
               "comm_create with allocation %d failing: EAGAIN, no leak", k);
    }
    fa.fail_at = 0;
    is_int(quay_comm_create(T.e[1], 7, 2, NULL, &c), 0);
    quay_comm_free(T.e[1], c);

    /* (longer than a pool slot: payload.h) */
    uint8_t sb[100], rb[100];
    tn_fill(sb, sizeof sb, 14);
    quay_req *s, *r;
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 1, QUAY_SEND_STANDARD, &s);
    tn_pull_all(&T);
    tn_pkt p = T.q[0];
    fa.fail_at = fa.calls + 1;
    is_int(quay_on_packet(T.e[1], 0, p.bytes, p.len), QUAY_EAGAIN);
    quay_stats st;
    quay_engine_stats(T.e[1], &st);
    ok(st.umsgs_in_use == 0 && st.bytes_unexpected == 0);
    fa.fail_at = 0;
    is_int(tn_deliver(&T, 0), 0);
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 1, &r);
    ok(tn_good(r, 100) && memcmp(rb, sb, sizeof sb) == 0);
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);
    clean();
    tn_fini(&T);
    is_int(fa.live, 0);
}

/* ---- one-sided -------------------------------------------------------------------------- */

static void t_rdma(void)
{
    quay_config c;
    tn_config(&c, 0, 2);
    c.transport_caps = QUAY_CAP_RDMA_PUT | QUAY_CAP_RDMA_GET;
    if (!setup_cfg(2, &c))
        return;
    static uint8_t w[32], mine[32], buf[8] = "onesided";
    uint64_t kw, km;
    quay_mem_register(T.e[1], w, sizeof w, QUAY_MEM_READ | QUAY_MEM_WRITE, &kw);
    quay_mem_register(T.e[0], mine, sizeof mine, QUAY_MEM_WRITE, &km);
    quay_req *r1, *r2, *r3;
    quay_action a;
    quay_status st;
    /* FREE -> RDMA -> DONE: the action, its op_done. */
    is_int(quay_iput(T.e[0], 1, buf, 8, kw, 8, &r1), 0);
    is_int(r1->state, QUAY_RS_RDMA);
    is_int(quay_next_action(T.e[0], &a), 1);
    is_int(a.kind, QUAY_ACT_RDMA_PUT);
    void *p;
    is_int(quay_mem_resolve(T.e[1], 0, a.rdma.key, a.rdma.offset, a.rdma.len, QUAY_MEM_WRITE,
                            &p),
           0);
    memcpy(p, a.rdma.local, (size_t)a.rdma.len);
    is_int(quay_on_op_done(T.e[0], a.token, 0), 0);
    ok(quay_req_test(r1, &st) == 1 && st.error == 0 && st.count == 8);
    ok(memcmp(w + 8, "onesided", 8) == 0);
    /* ... failed: the adapter's status in the request. */
    is_int(quay_iget(T.e[0], 1, buf, 8, kw, 0, &r2), 0);
    is_int(quay_next_action(T.e[0], &a), 1);
    is_int(a.kind, QUAY_ACT_RDMA_GET);
    is_int(quay_on_op_done(T.e[0], a.token, QUAY_EPEER), 0);
    ok(quay_req_test(r2, &st) == 1 && st.error == QUAY_EPEER && st.count == 0);
    /* ... to self, at once. */
    is_int(quay_iput(T.e[0], 0, buf, 8, km, 0, &r3), 0);
    ok(quay_req_test(r3, &st) == 1 && st.error == 0 && memcmp(mine, "onesided", 8) == 0);
    quay_req_free(T.e[0], r1);
    quay_req_free(T.e[0], r2);
    quay_req_free(T.e[0], r3);
    while (quay_next_action(T.e[0], &a) == 1)
        ;
    clean();
    tn_fini(&T);
}

/* ---- coverage ------------------------------------------------------------------------------ */

static void t_coverage(void)
{
    /* docs/protocols.md, "Request states". */
    static const int allowed[][2] = {
        {F, SE},  {F, SR},  {F, D},   {SE, D},  {SE, SW}, {SW, D},  {SR, SD}, {SR, D},
        {SD, D},  {SE, SC}, {SW, SC}, {SR, SC}, {SC, D},  {SC, SE}, {SC, SW}, {SC, SR},
        {SC, SD}, {F, RP},  {F, RR},  {RP, D},  {RP, RR}, {RR, D},  {F, RD},  {RD, D},
        {SR, SP}, {SP, D},  {SC, SP}, {F, RG},  {RP, RG}, {RG, D},  {F, RU},  {RP, RU},
        {RU, D},  {F, SWR}, {SWR, D}, {F, RT},  {RT, D},  {RT, RU},
        /* ANY_SOURCE arbitration */
        {F, RA},  {RA, D},  {RA, RU}, {F, SA},  {SA, SWR}, {SA, SR}, {SA, SC},
        {F, SQ},  {SQ, SA}, {SQ, SE}, {SQ, SC},
        /* collectives */
        {F, CO},  {CO, D},
    };
    int allowed_m[QUAY_RS_COUNT_][QUAY_RS_COUNT_] = {{0}};
    for (size_t i = 0; i < COUNT_OF(allowed); i++) {
        allowed_m[allowed[i][0]][allowed[i][1]] = 1;
        ok_msg(seen[allowed[i][0]][allowed[i][1]] > 0, "transition %s -> %s reached (%d)",
               quay_state_name(allowed[i][0]), quay_state_name(allowed[i][1]),
               seen[allowed[i][0]][allowed[i][1]]);
    }
    int stray = 0;
    for (int a = 0; a < QUAY_RS_COUNT_; a++)
        for (int b = 0; b < QUAY_RS_COUNT_; b++)
            if (seen[a][b] && !allowed_m[a][b]) {
                stray++;
                note("undocumented transition %s -> %s (%d)", quay_state_name(a),
                     quay_state_name(b), seen[a][b]);
            }
    is_int(stray, 0);
    for (int s = 1; s < QUAY_RS_COUNT_; s++) {
        int reached = 0;
        for (int a = 0; a < QUAY_RS_COUNT_; a++)
            reached |= seen[a][s] > 0;
        ok_msg(reached, "state %s reached", quay_state_name(s));
    }
}

int main(void)
{
    subtest("eager, standard", t_eager_standard);
    subtest("eager, synchronous", t_eager_sync);
    subtest("eager, ready", t_eager_ready);
    subtest("rendezvous", t_rndv);
    subtest("RDMA rendezvous (GET, PUT)", t_rndv_rdma);
    subtest("receiver-initiated (RTR / SC)", t_rtr);
    subtest("ANY_SOURCE arbitration", t_arbitrate);
    subtest("arbitration: communicator freed", t_arbitrate_comm_freed);
    subtest("collective", t_collective);
    subtest("matched probe", t_mprobe);
    subtest("PROC_NULL and buffered", t_null_buffered);
    subtest("cancel succeeds", t_cancel_succeeds);
    subtest("cancel fails", t_cancel_fails);
    subtest("transport failures", t_failures);
    subtest("packet and match trace", t_packet_trace);
    subtest("PKT_IN trace events carry the envelope seq", t_pkt_in_seq);
    subtest("COMPLETE actions on", t_complete_on);
    subtest("COMPLETE actions off", t_complete_off);
    subtest("quay_req_free before completion", t_free_before_completion);
    subtest("a fatal engine has actions: its code", t_fatal_has_actions);
    subtest("work in flight", t_in_flight);
    subtest("communicators by context id", t_comm_index);
    subtest("one-sided put / get", t_rdma);
    hot_path_oracle = 1;
    subtest("allocator: hot path allocation-free (oracle alongside)", t_hot_path);
    hot_path_oracle = 0;
    subtest("allocator: hot path allocation-free (fast matcher alone)", t_hot_path);
    subtest("allocator: failure at every point", t_failmalloc);
    subtest("every documented transition reached", t_coverage);
    return done_testing();
}
