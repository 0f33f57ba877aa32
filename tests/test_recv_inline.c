/*
 * test_recv_inline.c — quay_recv_inline: a receive taken at the call, by
 * copy, from a message that arrived first; and the small-payload pool
 * that keeps such messages (payload.h).
 *
 * Every subtest runs twice: with the linear oracle checking the matcher
 * (the general path: match.c's facade) and without it (the inline exact
 * path, and eager_fast.h's eager_keep on arrival). Covered: payloads
 * pooled and allocated, zero bytes, status; nothing here (QUAY_EBUSY) and
 * quay_irecv then taking the message; a posted receive taking a message
 * first; MPI order with wildcards against the arrival order; truncation
 * with no write past cap; a rendezvous message (EBUSY, quay_irecv takes
 * it); a synchronous send acknowledged, and EBUSY while the control queue
 * is full; a ready send that found no receive; argument errors and
 * PROC_NULL; the trace's MATCH; credit flow control (the held credit
 * comes back); and that nothing leaks.
 */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "testnet.h"

static testnet T;
static int with_oracle;
static uint64_t now_ns;

static void init2(quay_config *cfg)
{
    quay_config c;
    if (cfg == NULL) {
        tn_config(&c, 0, 3);
        cfg = &c;
    }
    if (!with_oracle)
        cfg->flags &= ~(uint32_t)QUAY_CFG_CHECK_ORACLE;
    is_int(tn_init(&T, 3, cfg), 0);
}

static void check_clean(void)
{
    quay_stats st;
    quay_engine_stats(T.e[1], &st);
    is_int((int)st.bytes_unexpected, 0);
    tn_check_clean(&T);
    is_int(T.rejects, 0);
}

static void send_std(int from, int to, const uint8_t *b, size_t n, int32_t tag)
{
    quay_req *s;
    is_int(quay_isend(T.e[from], T.world[from], b, n, to, tag, QUAY_SEND_STANDARD, &s), 0);
    tn_pump(&T);
    ok(tn_good(s, n));
    quay_req_free(T.e[from], s);
}

/* Pooled (8, 64 bytes), allocated (100) and empty payloads, taken in an
 * order of their tags unlike their arrival; no request is used. */
static void t_take(void)
{
    init2(NULL);
    uint8_t a[8], b[64], c[100], rb[128];
    tn_fill(a, sizeof a, 1);
    tn_fill(b, sizeof b, 2);
    tn_fill(c, sizeof c, 3);
    send_std(0, 1, a, sizeof a, 1);
    send_std(0, 1, b, sizeof b, 2);
    send_std(0, 1, c, sizeof c, 3);
    send_std(0, 1, NULL, 0, 4);
    quay_stats st;
    quay_engine_stats(T.e[1], &st);
    is_int(st.umsgs_in_use, 4);
    is_int((int)st.bytes_unexpected, 8 + 64 + 100);
    const uint8_t *want[] = {c, b, a, NULL};
    size_t len[] = {100, 64, 8, 0};
    int32_t tags[] = {3, 2, 1, 4};
    for (int i = 0; i < 4; i++) {
        quay_status s;
        memset(rb, 0, sizeof rb);
        is_int(quay_recv_inline(T.e[1], T.world[1], rb, sizeof rb, 0, tags[i], &s), 0);
        is_int(s.source, 0);
        is_int(s.tag, tags[i]);
        is_int(s.error, 0);
        is_int(s.cancelled, 0);
        is_size(s.count, len[i]);
        ok(len[i] == 0 || memcmp(rb, want[i], len[i]) == 0);
        quay_engine_stats(T.e[1], &st);
        is_int(st.reqs_in_use, 0);
        is_int(st.umsgs_in_use, 3 - i);
    }
    is_int(quay_recv_inline(T.e[1], T.world[1], rb, sizeof rb, 0, 1, NULL), QUAY_EBUSY);

    /* On a communicator of its own: once its message is taken it holds
     * nothing, and may be freed. */
    quay_comm *c0, *c1;
    is_int(quay_comm_create(T.e[0], 5, 3, NULL, &c0), 0);
    is_int(quay_comm_create(T.e[1], 5, 3, NULL, &c1), 0);
    quay_req *s;
    is_int(quay_isend(T.e[0], c0, a, sizeof a, 1, 1, QUAY_SEND_STANDARD, &s), 0);
    tn_pump(&T);
    is_int(quay_comm_free(T.e[1], c1), QUAY_EBUSY);
    is_int(quay_recv_inline(T.e[1], c1, rb, sizeof rb, 0, 1, NULL), 0);
    ok(memcmp(rb, a, sizeof a) == 0);
    is_int(quay_comm_free(T.e[1], c1), 0);
    ok(tn_good(s, sizeof a));
    quay_req_free(T.e[0], s);
    is_int(quay_comm_free(T.e[0], c0), 0);
    check_clean();
    tn_fini(&T);
}

/* Nothing here: EBUSY, nothing changed; the receive posted then takes the
 * message. A posted receive takes its message first; the next one of the
 * same envelope is kept, and taken at the call. */
static void t_busy_then_irecv(void)
{
    init2(NULL);
    uint8_t sb[2][16], rb[16];
    tn_fill(sb[0], 16, 5);
    tn_fill(sb[1], 16, 6);
    quay_status s;
    is_int(quay_recv_inline(T.e[1], T.world[1], rb, sizeof rb, 0, 5, &s), QUAY_EBUSY);
    quay_req *r;
    is_int(quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 5, &r), 0);
    send_std(0, 1, sb[0], 16, 5);
    ok(tn_good(r, 16) && memcmp(rb, sb[0], 16) == 0);
    quay_req_free(T.e[1], r);

    uint8_t r2[16];
    is_int(quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 5, &r), 0);
    send_std(0, 1, sb[0], 16, 5);
    send_std(0, 1, sb[1], 16, 5);
    ok(tn_good(r, 16) && memcmp(rb, sb[0], 16) == 0);
    is_int(quay_recv_inline(T.e[1], T.world[1], r2, sizeof r2, 0, 5, &s), 0);
    ok(s.count == 16 && memcmp(r2, sb[1], 16) == 0);
    quay_req_free(T.e[1], r);
    check_clean();
    tn_fini(&T);
}

/* Index of the first packet in flight from `from`. */
static int pkt_from(int from)
{
    for (int i = 0; i < T.nq; i++)
        if (T.q[i].from == from)
            return i;
    return -1;
}

/* Wildcards take the oldest kept message in arrival order, as quay_irecv
 * would: rank 2's tag 7 arrives before rank 1's, then rank 1's tag 8. */
static void t_wildcards(void)
{
    init2(NULL);
    uint8_t a[4] = {1, 1, 1, 1}, b[4] = {2, 2, 2, 2}, c[4] = {3, 3, 3, 3}, d[4] = {4, 4, 4, 4};
    quay_req *s[4];
    is_int(quay_isend(T.e[1], T.world[1], a, 4, 0, 7, QUAY_SEND_STANDARD, &s[0]), 0);
    is_int(quay_isend(T.e[2], T.world[2], b, 4, 0, 7, QUAY_SEND_STANDARD, &s[1]), 0);
    is_int(quay_isend(T.e[1], T.world[1], c, 4, 0, 8, QUAY_SEND_STANDARD, &s[2]), 0);
    is_int(quay_isend(T.e[2], T.world[2], d, 4, 0, 9, QUAY_SEND_STANDARD, &s[3]), 0);
    tn_pull_all(&T);
    is_int(tn_deliver(&T, pkt_from(2)), 0); /* b */
    is_int(tn_deliver(&T, pkt_from(1)), 0); /* a */
    is_int(tn_deliver(&T, pkt_from(1)), 0); /* c */
    is_int(tn_deliver(&T, pkt_from(2)), 0); /* d */
    tn_pump(&T);
    uint8_t rb[4];
    quay_status st;
    is_int(quay_recv_inline(T.e[0], T.world[0], rb, 4, QUAY_ANY_SOURCE, 7, &st), 0);
    ok(st.source == 2 && st.tag == 7 && rb[0] == 2);
    is_int(quay_recv_inline(T.e[0], T.world[0], rb, 4, 1, QUAY_ANY_TAG, &st), 0);
    ok(st.source == 1 && st.tag == 7 && rb[0] == 1);
    is_int(quay_recv_inline(T.e[0], T.world[0], rb, 4, QUAY_ANY_SOURCE, QUAY_ANY_TAG, &st), 0);
    ok(st.source == 1 && st.tag == 8 && rb[0] == 3);
    is_int(quay_recv_inline(T.e[0], T.world[0], rb, 4, 2, 9, &st), 0);
    ok(st.source == 2 && st.tag == 9 && rb[0] == 4);
    is_int(quay_recv_inline(T.e[0], T.world[0], rb, 4, QUAY_ANY_SOURCE, QUAY_ANY_TAG, &st),
           QUAY_EBUSY);
    is_int(quay_recv_inline(T.e[0], T.world[0], rb, 4, QUAY_ANY_SOURCE, 7, &st), QUAY_EBUSY);
    is_int(quay_recv_inline(T.e[0], T.world[0], rb, 4, 1, QUAY_ANY_TAG, &st), QUAY_EBUSY);
    /* the lists made for the wildcards are kept: later arrivals join them */
    uint8_t e5[4] = {5, 5, 5, 5}, e6[4] = {6, 6, 6, 6};
    send_std(1, 0, e5, 4, 7);
    send_std(2, 0, e6, 4, 7);
    is_int(quay_recv_inline(T.e[0], T.world[0], rb, 4, QUAY_ANY_SOURCE, 7, &st), 0);
    ok(st.source == 1 && rb[0] == 5);
    is_int(quay_recv_inline(T.e[0], T.world[0], rb, 4, 2, QUAY_ANY_TAG, &st), 0);
    ok(st.source == 2 && rb[0] == 6);
    is_int(quay_recv_inline(T.e[0], T.world[0], rb, 4, QUAY_ANY_SOURCE, 7, &st), QUAY_EBUSY);
    for (int i = 0; i < 4; i++) {
        ok(tn_good(s[i], 4));
        quay_req_free(T.e[i % 2 ? 2 : 1], s[i]);
    }
    check_clean();
    tn_fini(&T);
}

/* Longer than cap: cap bytes, QUAY_ETRUNCATE, nothing past cap. */
static void t_truncate(void)
{
    init2(NULL);
    uint8_t sb[40], rb[24];
    tn_fill(sb, sizeof sb, 9);
    memset(rb, 0x77, sizeof rb);
    send_std(0, 1, sb, sizeof sb, 2);
    quay_status st;
    is_int(quay_recv_inline(T.e[1], T.world[1], rb, 16, 0, 2, &st), 0);
    is_int(st.error, QUAY_ETRUNCATE);
    is_size(st.count, 16);
    ok(memcmp(rb, sb, 16) == 0);
    ok(rb[16] == 0x77 && rb[23] == 0x77);
    check_clean();
    tn_fini(&T);
}

/* A rendezvous message needs a request: EBUSY, the RTS stays kept, and
 * quay_irecv takes it. */
static void t_rendezvous(void)
{
    init2(NULL);
    static uint8_t sb[1000], rb[1000];
    tn_fill(sb, sizeof sb, 11);
    quay_req *s, *r;
    is_int(quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 3, QUAY_SEND_STANDARD, &s), 0);
    tn_pump(&T);
    quay_status st;
    is_int(quay_recv_inline(T.e[1], T.world[1], rb, sizeof rb, 0, 3, &st), QUAY_EBUSY);
    is_int(quay_recv_inline(T.e[1], T.world[1], rb, sizeof rb, QUAY_ANY_SOURCE, QUAY_ANY_TAG,
                            &st),
           QUAY_EBUSY);
    is_int(quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 3, &r), 0);
    tn_pump(&T);
    ok(tn_good(s, sizeof sb) && tn_good(r, sizeof sb) && memcmp(rb, sb, sizeof sb) == 0);
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);
    check_clean();
    tn_fini(&T);
}

/* A synchronous send completes once the receive takes it at the call (its
 * ACK); with the control queue full the call answers EBUSY, changing
 * nothing, until actions are pulled. */
static void t_sync(void)
{
    quay_config c;
    tn_config(&c, 0, 3);
    c.max_ctrl = 2;
    init2(&c);
    uint8_t sb[3][8], rb[8];
    quay_req *s[3];
    for (int i = 0; i < 3; i++) {
        tn_fill(sb[i], 8, 20 + i);
        is_int(quay_isend(T.e[0], T.world[0], sb[i], 8, 1, 4, QUAY_SEND_SYNC, &s[i]), 0);
    }
    tn_pump(&T);
    ok(!quay_req_test(s[0], NULL) && !quay_req_test(s[2], NULL));
    quay_status st;
    for (int i = 0; i < 2; i++) {
        is_int(quay_recv_inline(T.e[1], T.world[1], rb, 8, 0, 4, &st), 0);
        ok(st.count == 8 && memcmp(rb, sb[i], 8) == 0);
    }
    /* two ACKs queued, none pulled: no room for the third */
    is_int(quay_recv_inline(T.e[1], T.world[1], rb, 8, 0, 4, &st), QUAY_EBUSY);
    quay_stats qs;
    quay_engine_stats(T.e[1], &qs);
    is_int(qs.umsgs_in_use, 1);
    tn_pump(&T);
    ok(tn_good(s[0], 8) && tn_good(s[1], 8) && !quay_req_test(s[2], NULL));
    is_int(quay_recv_inline(T.e[1], T.world[1], rb, 8, 0, 4, &st), 0);
    ok(st.count == 8 && memcmp(rb, sb[2], 8) == 0);
    tn_pump(&T);
    ok(tn_good(s[2], 8));
    for (int i = 0; i < 3; i++)
        quay_req_free(T.e[0], s[i]);
    check_clean();
    tn_fini(&T);
}

/* A ready send that found no receive: its error at both ends; the receive
 * taken at the call reports QUAY_ENOTPOSTED with nothing delivered. */
static void t_ready(void)
{
    init2(NULL);
    uint8_t sb[8] = {1, 2, 3, 4, 5, 6, 7, 8}, rb[8] = {0};
    quay_req *s;
    is_int(quay_isend(T.e[0], T.world[0], sb, 8, 1, 6, QUAY_SEND_READY, &s), 0);
    tn_pump(&T);
    quay_status st;
    ok(tn_done(s, &st) && st.error == QUAY_ENOTPOSTED);
    quay_req_free(T.e[0], s);
    is_int(quay_recv_inline(T.e[1], T.world[1], rb, 8, 0, 6, &st), 0);
    is_int(st.error, QUAY_ENOTPOSTED);
    is_size(st.count, 0);
    ok(rb[0] == 0);
    check_clean();
    tn_fini(&T);
}

/* Argument errors in quay_irecv's order; PROC_NULL at once. */
static void t_args(void)
{
    init2(NULL);
    uint8_t rb[8];
    quay_status st;
    is_int(quay_recv_inline(NULL, T.world[1], rb, 8, 0, 0, &st), QUAY_EINVAL);
    is_int(quay_recv_inline(T.e[1], NULL, rb, 8, 0, 0, &st), QUAY_EINVAL);
    is_int(quay_recv_inline(T.e[1], T.world[0], rb, 8, 0, 0, &st), QUAY_EINVAL);
    is_int(quay_recv_inline(T.e[1], (quay_comm *)((char *)T.world[1] + 1), rb, 8, 0, 0, &st),
           QUAY_EINVAL);
    is_int(quay_recv_inline(T.e[1], T.world[1], NULL, 8, 0, 0, &st), QUAY_EINVAL);
    is_int(quay_recv_inline(T.e[1], T.world[1], rb, 8, 3, 0, &st), QUAY_ERANK);
    is_int(quay_recv_inline(T.e[1], T.world[1], rb, 8, -7, 0, &st), QUAY_ERANK);
    is_int(quay_recv_inline(T.e[1], T.world[1], rb, 8, 0, -5, &st), QUAY_ETAG);
    is_int(quay_recv_inline(T.e[1], T.world[1], NULL, 0, 0, 0, &st), QUAY_EBUSY);
    memset(&st, 0x5a, sizeof st);
    is_int(quay_recv_inline(T.e[1], T.world[1], rb, 8, QUAY_PROC_NULL, 3, &st), 0);
    ok(st.source == QUAY_PROC_NULL && st.tag == QUAY_ANY_TAG && st.count == 0 &&
       st.error == 0);
    is_int(quay_recv_inline(T.e[1], T.world[1], rb, 8, QUAY_PROC_NULL, 3, NULL), 0);
    check_clean();
    tn_fini(&T);
}

typedef struct match_log {
    int matches;
    uint32_t req_id;
    int32_t src, tag;
} match_log;

static void on_trace(void *ctx, const quay_trace_event *ev)
{
    match_log *l = ctx;
    if (ev->kind == QUAY_TR_MATCH) {
        l->matches++;
        l->req_id = ev->req_id;
        l->src = ev->src;
        l->tag = ev->tag;
    }
}

/* The take is traced as a MATCH of request 0 (no request), as an
 * improbe's. */
static void t_trace(void)
{
    init2(NULL);
    uint8_t sb[8] = {9}, rb[8];
    send_std(0, 1, sb, 8, 12);
    match_log l = {0, 99, -1, -1};
    quay_set_trace(T.e[1], on_trace, &l);
    quay_status st;
    is_int(quay_recv_inline(T.e[1], T.world[1], rb, 8, 0, 12, &st), 0);
    is_int(l.matches, 1);
    ok(l.req_id == 0 && l.src == 0 && l.tag == 12);
    is_int(quay_recv_inline(T.e[1], T.world[1], rb, 8, 0, 12, &st), QUAY_EBUSY);
    is_int(l.matches, 1);
    quay_set_trace(T.e[1], NULL, NULL);
    check_clean();
    tn_fini(&T);
}

/* Credit flow control: each kept message holds one of its sender's
 * credits; taking it at the call gives the credit back, so a stream longer
 * than the credits gets through in order with nothing refused. */
static void t_credit(void)
{
    quay_config c;
    tn_config(&c, 0, 3);
    c.flow = QUAY_FLOW_CREDIT;
    c.flow_credits = 2;
    c.rto_init_ns = 1000;
    c.rto_max_ns = 8000;
    init2(&c);
    enum { N = 12 };
    uint8_t sb[N][8], rb[8];
    quay_req *s[N];
    for (int i = 0; i < N; i++) {
        memset(sb[i], 0x30 + i, 8);
        is_int(quay_isend(T.e[0], T.world[0], sb[i], 8, 1, 1, QUAY_SEND_STANDARD, &s[i]), 0);
    }
    int got = 0, in_order = 1;
    for (int round = 0; round < 1000 && got < N; round++) {
        tn_pump(&T);
        quay_status st;
        while (got < N && quay_recv_inline(T.e[1], T.world[1], rb, 8, 0, 1, &st) == 0) {
            in_order &= st.count == 8 && memcmp(rb, sb[got], 8) == 0;
            got++;
        }
        tn_tick(&T, &now_ns);
    }
    is_int(got, N);
    ok_msg(in_order, "in send order");
    tn_settle(&T, &now_ns, 1000);
    quay_stats qs;
    quay_engine_stats(T.e[1], &qs);
    is_int((int)qs.nacks_sent, 0);
    for (int i = 0; i < N; i++) {
        ok(tn_good(s[i], 8));
        quay_req_free(T.e[0], s[i]);
    }
    check_clean();
    tn_fini(&T);
}

/* Allocations through the engine's hooks, counted. */
static long allocs;

static void *count_alloc(size_t n, void *ctx)
{
    (void)ctx;
    allocs++;
    return malloc(n);
}

static void count_release(void *p, void *ctx)
{
    (void)ctx;
    free(p);
}

/* Small payloads are kept in pool slots (1,024 at most, payload.h) with
 * nothing allocated; once every slot is taken the next ones are
 * allocated; taken at the call, all of them, in order. */
static void t_pool_bound(void)
{
    enum { N = 1100, SLOTS = 1024 };
    quay_config c;
    tn_config(&c, 0, 3);
    c.max_unexpected = 2048;
    c.alloc.alloc = count_alloc;
    c.alloc.release = count_release;
    c.alloc.ctx = NULL;
    init2(&c);
    static uint8_t sb[N][16];
    uint8_t rb[16];
    for (int i = 0; i < N; i++)
        tn_fill(sb[i], 16, 100 + i);
    long before = allocs;
    for (int i = 0; i < N; i++) {
        int rc;
        while ((rc = quay_send_inline(T.e[0], T.world[0], sb[i], 16, 1, 2)) == QUAY_EBUSY)
            tn_pump(&T);
        is_int(rc, 0);
        if (i == SLOTS - 1) {
            tn_pump(&T);
            ok_msg(allocs == before, "the first %d kept with nothing allocated (%ld)", SLOTS,
                   allocs - before);
        }
    }
    tn_pump(&T);
    ok_msg(allocs - before == N - SLOTS, "then one allocation each (%ld)", allocs - before);
    quay_stats qs;
    quay_engine_stats(T.e[1], &qs);
    is_int((int)qs.umsgs_in_use, N);
    is_int((int)qs.bytes_unexpected, N * 16);
    int got = 0, in_order = 1;
    quay_status st;
    while (quay_recv_inline(T.e[1], T.world[1], rb, 16, 0, 2, &st) == 0) {
        in_order &= got < N && st.count == 16 && memcmp(rb, sb[got], 16) == 0;
        got++;
    }
    is_int(got, N);
    ok_msg(in_order, "in send order");
    check_clean();
    tn_fini(&T);
}

/* Every subtest with the oracle alongside, then with the fast matcher
 * alone. */
#define both(name, fn) \
    subtest_both((name), (fn), &with_oracle, "oracle alongside", "fast matcher alone")

int main(void)
{
    both("taken at the call: pooled, allocated and empty payloads", t_take);
    both("nothing here: EBUSY, then quay_irecv; a posted receive first", t_busy_then_irecv);
    both("wildcards take the oldest kept message", t_wildcards);
    both("truncation", t_truncate);
    both("rendezvous: EBUSY, quay_irecv takes it", t_rendezvous);
    both("synchronous: acknowledged; EBUSY with the control queue full", t_sync);
    both("ready send without a receive: ENOTPOSTED", t_ready);
    both("argument errors, PROC_NULL", t_args);
    both("trace: MATCH of request 0", t_trace);
    both("credit flow control: the credit comes back", t_credit);
    both("the payload pool: slots, then allocations", t_pool_bound);
    return done_testing();
}
