/*
 * test_inline.c — quay_send_inline: the small standard send taken by copy.
 *
 * The packet's shape (one iovec: envelope + payload), delivery to posted
 * and late receives, truncation, order against quay_isend before and
 * after it, when it answers QUAY_EBUSY (and quay_isend then takes the
 * message), argument errors, failed peers (refused; queued packets
 * dropped), the trace, and that nothing leaks. Every subtest runs with
 * QUAY_CFG_NO_COALESCE: coalesced sends (trains) are test_train.c's.
 */
#include <string.h>

#include "harness.h"
#include "testnet.h"

static testnet T;

static void check_clean(void)
{
    tn_check_clean(&T);
    is_int(T.rejects, 0);
}

/* n engines that send one packet per inline send. */
static void init_single(int n)
{
    quay_config cfg;
    tn_config(&cfg, 0, n);
    cfg.flags |= QUAY_CFG_NO_COALESCE;
    tn_init(&T, n, &cfg);
}

/* The SEND action: one iovec of envelope + payload; the buffer may change
 * right after the call; the receive gets the bytes of the call. */
static void t_shape_and_delivery(void)
{
    tn_init(&T, 2, NULL);
    uint8_t sb[QUAY_INLINE_MAX], rb[QUAY_INLINE_MAX + 8];
    tn_fill(sb, sizeof sb, 4);
    uint8_t want[sizeof sb];
    memcpy(want, sb, sizeof sb);
    quay_req *r;
    is_int(quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 9, &r), 0);
    is_int(quay_send_inline(T.e[0], T.world[0], sb, sizeof sb, 1, 9), 0);
    memset(sb, 0xee, sizeof sb); /* the copy is taken: the buffer is free */
    is_int(tn_outs_in_use(T.e[0]), 1);
    quay_action a;
    is_int(quay_next_action(T.e[0], &a), 1);
    is_int(a.kind, QUAY_ACT_SEND);
    is_int(a.peer, 1);
    is_int(a.iovcnt, 1);
    is_size(a.iov[0].len, 32 + sizeof sb);
    ok(a.req == NULL);
    is_int(quay_next_action(T.e[0], &a), 0);
    /* deliver it by hand, then the token */
    is_int(quay_on_packet(T.e[1], 0, a.iov[0].base, a.iov[0].len), 0);
    is_int(quay_on_op_done(T.e[0], a.token, 0), 0);
    is_int(quay_on_op_done(T.e[0], a.token, 0), QUAY_ESTATE); /* once only */
    quay_status st;
    ok(tn_done(r, &st));
    is_int(st.source, 0);
    is_int(st.tag, 9);
    is_int(st.error, 0);
    is_size(st.count, sizeof want);
    ok(memcmp(rb, want, sizeof want) == 0);
    quay_req_free(T.e[1], r);
    tn_pump(&T);
    check_clean();
    tn_fini(&T);
}

/* Receive posted after the arrival (unexpected), zero bytes, truncation. */
static void t_late_zero_truncate(void)
{
    tn_init(&T, 2, NULL);
    uint8_t sb[40], rb[16];
    tn_fill(sb, sizeof sb, 7);
    is_int(quay_send_inline(T.e[0], T.world[0], sb, 40, 1, 1), 0);
    is_int(quay_send_inline(T.e[0], T.world[0], NULL, 0, 1, 2), 0);
    tn_pump(&T);
    quay_req *r1, *r2;
    quay_status st;
    is_int(quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 1, &r1), 0);
    is_int(quay_irecv(T.e[1], T.world[1], NULL, 0, QUAY_ANY_SOURCE, QUAY_ANY_TAG, &r2), 0);
    tn_pump(&T);
    ok(tn_done(r1, &st));
    is_int(st.error, QUAY_ETRUNCATE);
    is_size(st.count, sizeof rb);
    ok(memcmp(rb, sb, sizeof rb) == 0);
    ok(tn_done(r2, &st));
    is_int(st.tag, 2);
    is_size(st.count, 0);
    quay_req_free(T.e[1], r1);
    quay_req_free(T.e[1], r2);
    check_clean();
    tn_fini(&T);
}

/* Non-overtaking across the two ways of sending: an inline send waits
 * (EBUSY) while an isend is queued; an isend posted after inline sends
 * leaves after them. Receives by ANY_TAG see the send order. */
static void t_order_with_isend(void)
{
    init_single(2);
    uint8_t v[6];
    quay_req *s[6] = {0};
    for (int i = 0; i < 6; i++)
        v[i] = (uint8_t)(10 + i);
    /* 0: inline, 1: inline, 2: isend (queued), 3: inline refused -> isend,
     * then pull: 4 inline again, 5 isend behind it */
    is_int(quay_send_inline(T.e[0], T.world[0], &v[0], 1, 1, 0), 0);
    is_int(quay_send_inline(T.e[0], T.world[0], &v[1], 1, 1, 1), 0);
    is_int(quay_isend(T.e[0], T.world[0], &v[2], 1, 1, 2, QUAY_SEND_STANDARD, &s[2]), 0);
    is_int(quay_send_inline(T.e[0], T.world[0], &v[3], 1, 1, 3), QUAY_EBUSY);
    is_int(quay_isend(T.e[0], T.world[0], &v[3], 1, 1, 3, QUAY_SEND_STANDARD, &s[3]), 0);
    is_int(tn_pull(&T, 0), 4);
    is_int(quay_send_inline(T.e[0], T.world[0], &v[4], 1, 1, 4), 0);
    is_int(quay_isend(T.e[0], T.world[0], &v[5], 1, 1, 5, QUAY_SEND_STANDARD, &s[5]), 0);
    is_int(tn_pull(&T, 0), 2);
    /* on the wire in send order */
    for (int i = 0; i < T.nq; i++)
        is_int(T.q[i].bytes[32], 10 + i);
    tn_pump(&T);
    for (int i = 0; i < 6; i++) {
        uint8_t b = 0;
        quay_req *r;
        quay_status st;
        is_int(quay_irecv(T.e[1], T.world[1], &b, 1, 0, QUAY_ANY_TAG, &r), 0);
        tn_pump(&T);
        ok(tn_done(r, &st));
        is_int(st.tag, i);
        is_int(b, 10 + i);
        quay_req_free(T.e[1], r);
        if (s[i] != NULL) {
            ok(tn_done(s[i], NULL));
            quay_req_free(T.e[0], s[i]);
        }
    }
    check_clean();
    tn_fini(&T);
}

/* Reordered on the wire: the receiver still matches in send order. */
static void t_reordered(void)
{
    init_single(2);
    uint8_t v[3] = {1, 2, 3}, b[3] = {0};
    for (int i = 0; i < 3; i++)
        is_int(quay_send_inline(T.e[0], T.world[0], &v[i], 1, 1, 7), 0);
    is_int(tn_pull(&T, 0), 3);
    is_int(tn_deliver(&T, 2), 0); /* held: ahead of its turn */
    is_int(tn_deliver(&T, 1), 0);
    is_int(tn_deliver(&T, 0), 0);
    quay_req *r[3];
    for (int i = 0; i < 3; i++)
        is_int(quay_irecv(T.e[1], T.world[1], &b[i], 1, 0, 7, &r[i]), 0);
    tn_pump(&T);
    for (int i = 0; i < 3; i++) {
        ok(tn_done(r[i], NULL));
        is_int(b[i], i + 1);
        quay_req_free(T.e[1], r[i]);
    }
    check_clean();
    tn_fini(&T);
}

/* When the copy cannot be taken: QUAY_EBUSY, nothing changed. */
static void t_busy(void)
{
    quay_config cfg[2];
    for (int r = 0; r < 2; r++) {
        tn_config(&cfg[r], r, 2);
        cfg[r].eager_max = 16;
        cfg[r].max_out = 2;
        cfg[r].flags |= QUAY_CFG_NO_COALESCE;
    }
    tn_init_each(&T, 2, cfg, 1);
    uint8_t b[QUAY_INLINE_MAX + 1] = {0};
    is_int(quay_send_inline(T.e[0], T.world[0], b, 17, 1, 0), QUAY_EBUSY); /* > eager_max */
    is_int(quay_send_inline(T.e[0], T.world[0], b, 0, 0, 0), QUAY_EBUSY);  /* self */
    is_int(quay_send_inline(T.e[0], T.world[0], b, 16, 1, 0), 0);
    is_int(quay_send_inline(T.e[0], T.world[0], b, 16, 1, 0), 0);
    is_int(quay_send_inline(T.e[0], T.world[0], b, 16, 1, 0), QUAY_EBUSY); /* max_out */
    is_int(tn_outs_in_use(T.e[0]), 2);
    tn_pump(&T);
    is_int(tn_outs_in_use(T.e[0]), 0);
    quay_req *r[2];
    for (int i = 0; i < 2; i++)
        is_int(quay_irecv(T.e[1], T.world[1], b, 16, 0, 0, &r[i]), 0);
    tn_pump(&T);
    for (int i = 0; i < 2; i++) {
        ok(tn_good(r[i], 16));
        quay_req_free(T.e[1], r[i]);
    }
    check_clean();
    tn_fini(&T);

    /* longer than QUAY_INLINE_MAX; an engine with flow control */
    for (int r = 0; r < 2; r++) {
        tn_config(&cfg[r], r, 2);
        cfg[r].flow = QUAY_FLOW_ACKNACK;
    }
    tn_init_each(&T, 2, cfg, 1);
    is_int(quay_send_inline(T.e[0], T.world[0], b, 8, 1, 0), QUAY_EBUSY);
    tn_fini(&T);
    tn_init(&T, 2, NULL);
    is_int(quay_send_inline(T.e[0], T.world[0], b, QUAY_INLINE_MAX + 1, 1, 0), QUAY_EBUSY);
    is_int(tn_outs_in_use(T.e[0]), 0);
    tn_fini(&T);
}

static void t_args(void)
{
    tn_init(&T, 3, NULL);
    uint8_t b[8] = {0};
    is_int(quay_send_inline(NULL, T.world[0], b, 8, 1, 0), QUAY_EINVAL);
    is_int(quay_send_inline(T.e[0], NULL, b, 8, 1, 0), QUAY_EINVAL);
    is_int(quay_send_inline(T.e[0], T.world[1], b, 8, 1, 0), QUAY_EINVAL); /* not e's */
    is_int(quay_send_inline(T.e[0], T.world[0], NULL, 8, 1, 0), QUAY_EINVAL);
    is_int(quay_send_inline(T.e[0], T.world[0], b, 8, 1, -1), QUAY_ETAG);
    is_int(quay_send_inline(T.e[0], T.world[0], b, 8, 3, 0), QUAY_ERANK);
    is_int(quay_send_inline(T.e[0], T.world[0], b, 8, -5, 0), QUAY_ERANK);
    is_int(quay_send_inline(T.e[0], T.world[0], b, 8, QUAY_PROC_NULL, 0), 0);
    quay_action a;
    is_int(quay_next_action(T.e[0], &a), 0); /* PROC_NULL: nothing to send */
    is_int(tn_outs_in_use(T.e[0]), 0);
    /* on a sub-communicator: comm ranks are mapped to world ranks */
    int32_t map[2] = {2, 0};
    quay_comm *sub[3] = {0};
    is_int(quay_comm_create(T.e[2], 77, 2, map, &sub[2]), 0);
    is_int(quay_comm_create(T.e[0], 77, 2, map, &sub[0]), 0);
    uint8_t rb[8] = {0};
    quay_req *r;
    quay_status st;
    is_int(quay_irecv(T.e[2], sub[2], rb, 8, 1, 3, &r), 0);
    b[0] = 42;
    is_int(quay_send_inline(T.e[0], sub[0], b, 8, 0, 3), 0); /* comm rank 0 = world 2 */
    tn_pump(&T);
    ok(tn_done(r, &st));
    is_int(st.source, 1);
    is_int(rb[0], 42);
    quay_req_free(T.e[2], r);
    quay_comm_free(T.e[2], sub[2]);
    quay_comm_free(T.e[0], sub[0]);
    check_clean();
    tn_fini(&T);
}

/* A failed peer: refused with QUAY_EPEER; packets already queued for it
 * are dropped (nobody waits on them), those for others still leave. */
static void t_failed_peer(void)
{
    init_single(3);
    uint8_t b[4] = {1, 2, 3, 4};
    is_int(quay_send_inline(T.e[0], T.world[0], b, 4, 1, 0), 0);
    is_int(quay_send_inline(T.e[0], T.world[0], b, 4, 2, 0), 0);
    is_int(quay_send_inline(T.e[0], T.world[0], b, 4, 1, 0), 0);
    is_int(tn_outs_in_use(T.e[0]), 3);
    is_int(quay_on_peer_failed(T.e[0], 1), 0);
    is_int(tn_outs_in_use(T.e[0]), 1);
    is_int(quay_send_inline(T.e[0], T.world[0], b, 4, 1, 0), QUAY_EPEER);
    is_int(quay_send_inline(T.e[0], T.world[0], b, 4, 2, 1), 0); /* others: fine */
    is_int(tn_pull(&T, 0), 2);
    is_int(T.q[0].to, 2);
    is_int(T.q[1].to, 2);
    tn_pump(&T);
    quay_req *r[2];
    for (int i = 0; i < 2; i++)
        is_int(quay_irecv(T.e[2], T.world[2], b, 4, 0, i, &r[i]), 0);
    tn_pump(&T);
    for (int i = 0; i < 2; i++) {
        ok(tn_good(r[i], 4));
        quay_req_free(T.e[2], r[i]);
    }
    is_int(tn_outs_in_use(T.e[0]), 0);
    tn_fini(&T);
}

typedef struct trace_log {
    int pkt_out;
    uint32_t req;
} trace_log;

static void on_trace(void *ctx, const quay_trace_event *ev)
{
    trace_log *l = ctx;
    if (ev->kind == QUAY_TR_PKT_OUT) {
        l->pkt_out++;
        l->req = ev->req_id;
    }
}

static void t_trace(void)
{
    tn_init(&T, 2, NULL);
    trace_log l = {0, 99};
    quay_set_trace(T.e[0], on_trace, &l);
    uint8_t b = 5;
    is_int(quay_send_inline(T.e[0], T.world[0], &b, 1, 1, 0), 0);
    is_int(l.pkt_out, 0); /* traced when it leaves */
    tn_pull(&T, 0);
    is_int(l.pkt_out, 1);
    is_int(l.req, 0); /* no request */
    quay_set_trace(T.e[0], NULL, NULL);
    tn_pump(&T);
    quay_req *r;
    is_int(quay_irecv(T.e[1], T.world[1], &b, 1, 0, 0, &r), 0);
    ok(tn_good(r, 1));
    quay_req_free(T.e[1], r);
    check_clean();
    tn_fini(&T);
}

int main(void)
{
    subtest("one iovec, buffer free at return, delivered", t_shape_and_delivery);
    subtest("late receive, zero bytes, truncation", t_late_zero_truncate);
    subtest("order with quay_isend before and after", t_order_with_isend);
    subtest("reordered on the wire", t_reordered);
    subtest("QUAY_EBUSY cases", t_busy);
    subtest("argument errors, PROC_NULL, sub-communicator", t_args);
    subtest("failed peer", t_failed_peer);
    subtest("trace", t_trace);
    return done_testing();
}
