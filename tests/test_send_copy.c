/*
 * test_send_copy.c — QUAY_CFG_SEND_COPY: quay_isend of a small standard
 * message is taken the way quay_send_inline takes it (p2p.c isend_copy,
 * inline.c inline_take) and its request is complete at the call.
 *
 * Checked here: the request is DONE with the send's status before any
 * packet moves, and the buffer may change at once; the message arrives
 * intact, also joined to a coalesced packet; cancelling it has no effect;
 * every send it may not take (synchronous, ready, too long, to ourselves,
 * behind a queued send, no descriptor, an engine with flow control) is
 * posted as usual and send order holds across the two kinds; the flag
 * off leaves quay_isend as it was; the COMPLETE action (withdrawn when
 * the request is freed first) and the trace.
 */
#include <string.h>

#include "harness.h"
#include "testnet.h"

static testnet T;

static void init_copy(int n, uint32_t extra_flags)
{
    quay_config cfg;
    tn_config(&cfg, 0, n);
    cfg.flags |= QUAY_CFG_SEND_COPY | extra_flags;
    is_int(tn_init(&T, n, &cfg), 0);
}

/* Complete at the call; the status is the send's; the buffer is free at
 * once; two sends ride one packet; the receiver gets the call's bytes. */
static void t_complete_at_call(void)
{
    init_copy(2, 0);
    uint8_t a[8], b[64];
    tn_fill(a, sizeof a, 1);
    tn_fill(b, sizeof b, 2);
    quay_req *s[2];
    is_int(quay_isend(T.e[0], T.world[0], a, sizeof a, 1, 5, QUAY_SEND_STANDARD, &s[0]), 0);
    is_int(quay_isend(T.e[0], T.world[0], b, sizeof b, 1, 6, QUAY_SEND_STANDARD, &s[1]), 0);
    quay_status st;
    ok(quay_req_test(s[0], &st));
    is_int(st.source, 1);
    is_int(st.tag, 5);
    is_int(st.error, 0);
    is_int(st.cancelled, 0);
    is_int((int)st.count, 8);
    ok(quay_req_test(s[1], &st));
    is_int((int)st.count, 64);
    memset(a, 0xee, sizeof a); /* copied at the call */
    memset(b, 0xee, sizeof b);
    /* cancel: nothing left to cancel */
    is_int(quay_cancel(T.e[0], s[0]), 0);
    ok(quay_req_test(s[0], &st) && st.cancelled == 0 && st.error == 0);
    is_int(quay_req_free(T.e[0], s[0]), 0);
    is_int(quay_req_free(T.e[0], s[1]), 0);
    /* one packet of two messages */
    is_int(tn_pull(&T, 0), 1);
    uint8_t ra[8], rb[64];
    quay_req *r[2];
    is_int(quay_irecv(T.e[1], T.world[1], ra, sizeof ra, 0, 5, &r[0]), 0);
    is_int(quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 6, &r[1]), 0);
    tn_pump(&T);
    tn_fill(a, sizeof a, 1);
    tn_fill(b, sizeof b, 2);
    ok(tn_good(r[0], 8) && memcmp(ra, a, 8) == 0);
    ok(tn_good(r[1], 64) && memcmp(rb, b, 64) == 0);
    quay_req_free(T.e[1], r[0]);
    quay_req_free(T.e[1], r[1]);
    tn_check_clean(&T);
    is_int(T.rejects, 0);
    tn_fini(&T);
}

/* What the copy may not take is posted as usual (and completes later);
 * messages arrive in send order across both kinds. */
static void t_not_taken(void)
{
    init_copy(2, 0);
    uint8_t big[QUAY_INLINE_MAX + 1], v[6];
    memset(big, 7, sizeof big);
    for (int i = 0; i < 6; i++)
        v[i] = (uint8_t)(20 + i);
    quay_req *s[8];
    /* 0 copied; 1 too long (queued); 2 small but behind 1 (queued);
     * 3 synchronous, 4 ready (modes the copy leaves alone) */
    is_int(quay_isend(T.e[0], T.world[0], &v[0], 1, 1, 0, QUAY_SEND_STANDARD, &s[0]), 0);
    ok(quay_req_test(s[0], NULL));
    is_int(quay_isend(T.e[0], T.world[0], big, sizeof big, 1, 0, QUAY_SEND_STANDARD, &s[1]),
           0);
    ok(!quay_req_test(s[1], NULL));
    is_int(quay_isend(T.e[0], T.world[0], &v[2], 1, 1, 0, QUAY_SEND_STANDARD, &s[2]), 0);
    ok(!quay_req_test(s[2], NULL));
    /* the ready send needs its receive posted first: post all receives */
    uint8_t rbuf[5][QUAY_INLINE_MAX + 1];
    quay_req *r[5];
    for (int i = 0; i < 5; i++)
        is_int(quay_irecv(T.e[1], T.world[1], rbuf[i], sizeof rbuf[i], 0, 0, &r[i]), 0);
    is_int(quay_isend(T.e[0], T.world[0], &v[3], 1, 1, 0, QUAY_SEND_SYNC, &s[3]), 0);
    ok(!quay_req_test(s[3], NULL));
    tn_pump(&T);
    is_int(quay_isend(T.e[0], T.world[0], &v[4], 1, 1, 0, QUAY_SEND_READY, &s[4]), 0);
    ok(!quay_req_test(s[4], NULL));
    tn_pump(&T);
    /* order: v0, big, v2, v3, v4 */
    ok(tn_good(r[0], 1) && rbuf[0][0] == 20);
    ok(tn_good(r[1], sizeof big) && rbuf[1][QUAY_INLINE_MAX] == 7);
    ok(tn_good(r[2], 1) && rbuf[2][0] == 22);
    ok(tn_good(r[3], 1) && rbuf[3][0] == 23);
    ok(tn_good(r[4], 1) && rbuf[4][0] == 24);
    for (int i = 0; i < 5; i++) {
        ok(tn_done(s[i], NULL));
        quay_req_free(T.e[0], s[i]);
        quay_req_free(T.e[1], r[i]);
    }
    /* to ourselves: the loopback's requests, completed by the match */
    uint8_t self_in = 0, self_out = 42;
    quay_req *ss, *sr;
    is_int(quay_isend(T.e[0], T.world[0], &self_out, 1, 0, 3, QUAY_SEND_STANDARD, &ss), 0);
    is_int(quay_irecv(T.e[0], T.world[0], &self_in, 1, 0, 3, &sr), 0);
    tn_pump(&T);
    ok(tn_good(sr, 1) && self_in == 42);
    ok(tn_done(ss, NULL));
    quay_req_free(T.e[0], ss);
    quay_req_free(T.e[0], sr);
    /* PROC_NULL: complete at once, as without the flag */
    is_int(quay_isend(T.e[0], T.world[0], &v[0], 1, QUAY_PROC_NULL, 0, QUAY_SEND_STANDARD,
                      &ss),
           0);
    ok(quay_req_test(ss, NULL));
    quay_req_free(T.e[0], ss);
    tn_check_clean(&T);
    is_int(T.rejects, 0);
    tn_fini(&T);
}

/* No free descriptor: the request is posted and leaves when one is back. */
static void t_no_descriptor(void)
{
    quay_config cfg;
    tn_config(&cfg, 0, 2);
    cfg.flags |= QUAY_CFG_SEND_COPY | QUAY_CFG_NO_COALESCE;
    cfg.max_out = 2;
    is_int(tn_init(&T, 2, &cfg), 0);
    uint8_t v[3] = {1, 2, 3};
    quay_req *s[3];
    for (int i = 0; i < 3; i++)
        is_int(quay_isend(T.e[0], T.world[0], &v[i], 1, 1, 9, QUAY_SEND_STANDARD, &s[i]), 0);
    ok(quay_req_test(s[0], NULL));
    ok(quay_req_test(s[1], NULL));
    ok(!quay_req_test(s[2], NULL)); /* posted: no descriptor was free */
    uint8_t rb[3];
    quay_req *r[3];
    for (int i = 0; i < 3; i++)
        is_int(quay_irecv(T.e[1], T.world[1], &rb[i], 1, 0, 9, &r[i]), 0);
    tn_pump(&T);
    for (int i = 0; i < 3; i++) {
        ok(tn_good(r[i], 1) && rb[i] == v[i]);
        ok(tn_done(s[i], NULL));
        quay_req_free(T.e[0], s[i]);
        quay_req_free(T.e[1], r[i]);
    }
    tn_check_clean(&T);
    tn_fini(&T);
}

/* The flag is accepted everywhere but takes effect only where inline
 * sends do: with flow control a send completes when acknowledged. */
static void t_flow_engine_ignores(void)
{
    quay_config cfg;
    tn_config(&cfg, 0, 2);
    cfg.flags |= QUAY_CFG_SEND_COPY;
    cfg.flow = QUAY_FLOW_ACKNACK;
    is_int(tn_init(&T, 2, &cfg), 0);
    uint8_t v = 5, rb = 0;
    quay_req *s, *r;
    is_int(quay_isend(T.e[0], T.world[0], &v, 1, 1, 1, QUAY_SEND_STANDARD, &s), 0);
    ok(!quay_req_test(s, NULL));
    is_int(quay_irecv(T.e[1], T.world[1], &rb, 1, 0, 1, &r), 0);
    uint64_t now = 0;
    tn_settle(&T, &now, 50);
    ok(tn_good(r, 1) && rb == 5);
    ok(tn_done(s, NULL));
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);
    tn_fini(&T);
}

/* Without the flag, quay_isend's request completes at op_done. */
static void t_flag_off(void)
{
    is_int(tn_init(&T, 2, NULL), 0);
    uint8_t v = 1;
    quay_req *s;
    is_int(quay_isend(T.e[0], T.world[0], &v, 1, 1, 1, QUAY_SEND_STANDARD, &s), 0);
    ok(!quay_req_test(s, NULL));
    uint8_t rb;
    quay_req *r;
    is_int(quay_irecv(T.e[1], T.world[1], &rb, 1, 0, 1, &r), 0);
    tn_pump(&T);
    ok(tn_good(r, 1) && tn_done(s, NULL));
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);
    tn_check_clean(&T);
    tn_fini(&T);
}

/* Rank 0's actions taken by hand: each SEND's iovecs delivered to rank 1
 * as one packet and op_done'd; COMPLETE actions counted, each for one of
 * reqs[0..nreqs). */
static void pull_by_hand(int *completes, int *sends, quay_req *const *reqs, int nreqs)
{
    quay_action a;
    *completes = *sends = 0;
    while (quay_next_action(T.e[0], &a) == 1) {
        if (a.kind == QUAY_ACT_COMPLETE) {
            int known = 0;
            for (int i = 0; i < nreqs; i++)
                known |= a.req == reqs[i];
            ok(known);
            (*completes)++;
        } else if (a.kind == QUAY_ACT_SEND) {
            (*sends)++;
            uint8_t pkt[256];
            size_t len = 0;
            for (uint32_t i = 0; i < a.iovcnt; i++) {
                memcpy(pkt + len, a.iov[i].base, a.iov[i].len);
                len += a.iov[i].len;
            }
            is_int(quay_on_packet(T.e[1], 0, pkt, len), 0);
            is_int(quay_on_op_done(T.e[0], a.token, 0), 0);
        }
    }
}

typedef struct tr_log {
    int n;
    int state_to[16];
    int pkt_out;
} tr_log;

static void tr_fn(void *ctx, const quay_trace_event *ev)
{
    tr_log *l = ctx;
    if (ev->kind == QUAY_TR_STATE && l->n < 16)
        l->state_to[l->n++] = ev->to;
    if (ev->kind == QUAY_TR_PKT_OUT)
        l->pkt_out++;
}

/* A COMPLETE action for the request (default config), and the trace: the
 * request goes straight to DONE; one PKT_OUT per message. */
static void t_actions_and_trace(void)
{
    quay_config cfg;
    tn_config(&cfg, 0, 2);
    cfg.flags |= QUAY_CFG_SEND_COPY | QUAY_CFG_COMPLETE_ACTIONS;
    is_int(tn_init(&T, 2, &cfg), 0);
    tr_log lg = {0};
    quay_set_trace(T.e[0], tr_fn, &lg);
    uint8_t v[2] = {3, 4};
    quay_req *s[2];
    for (int i = 0; i < 2; i++)
        is_int(quay_isend(T.e[0], T.world[0], &v[i], 1, 1, 2, QUAY_SEND_STANDARD, &s[i]), 0);
    int completes, sends;
    pull_by_hand(&completes, &sends, s, 2);
    is_int(completes, 2);
    is_int(sends, 1);
    is_int(lg.n, 2);
    is_int(lg.state_to[0], QUAY_RS_DONE);
    is_int(lg.state_to[1], QUAY_RS_DONE);
    is_int(lg.pkt_out, 2);
    quay_set_trace(T.e[0], NULL, NULL);
    for (int i = 0; i < 2; i++) {
        quay_req *r;
        uint8_t rb = 0;
        is_int(quay_irecv(T.e[1], T.world[1], &rb, 1, 0, 2, &r), 0);
        ok(tn_good(r, 1) && rb == v[i]);
        quay_req_free(T.e[1], r);
        quay_req_free(T.e[0], s[i]);
    }
    tn_pump(&T);
    tn_check_clean(&T);
    tn_fini(&T);
}

/* Freed before its COMPLETE action was pulled: the action is withdrawn
 * (the request is gone), the message still leaves. */
static void t_freed_before_action(void)
{
    quay_config cfg;
    tn_config(&cfg, 0, 2);
    cfg.flags |= QUAY_CFG_SEND_COPY | QUAY_CFG_COMPLETE_ACTIONS;
    is_int(tn_init(&T, 2, &cfg), 0);
    uint8_t v = 77, rb = 0;
    quay_req *s, *r;
    is_int(quay_isend(T.e[0], T.world[0], &v, 1, 1, 4, QUAY_SEND_STANDARD, &s), 0);
    is_int(quay_req_free(T.e[0], s), 0);
    int completes, sends;
    pull_by_hand(&completes, &sends, NULL, 0);
    is_int(completes, 0);
    is_int(sends, 1);
    is_int(quay_irecv(T.e[1], T.world[1], &rb, 1, 0, 4, &r), 0);
    ok(tn_good(r, 1) && rb == 77);
    quay_req_free(T.e[1], r);
    tn_pump(&T);
    tn_check_clean(&T);
    tn_fini(&T);
}

int main(void)
{
    subtest("complete at the call, buffer free, one packet, cancel", t_complete_at_call);
    subtest("sends it may not take are posted; send order", t_not_taken);
    subtest("no free descriptor", t_no_descriptor);
    subtest("flow-controlled engine: no effect", t_flow_engine_ignores);
    subtest("flag off", t_flag_off);
    subtest("COMPLETE actions and trace", t_actions_and_trace);
    subtest("freed before its COMPLETE action", t_freed_before_action);
    return done_testing();
}
