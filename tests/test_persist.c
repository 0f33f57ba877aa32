/*
 * test_persist.c — persistent requests: quay_send_init, quay_recv_init,
 * quay_start. Inactive status, many rounds (eager, rendezvous, every send
 * mode, posted early and late), a new wire id per round, start while
 * active / after free / on a plain request, free while active, cancel,
 * PROC_NULL, a failed peer, the round over only when its packets are done (EAGAIN),
 * a pending COMPLETE action withdrawn, the communicator held.
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

static void t_inactive(void)
{
    tn_init(&T, 2, NULL);
    uint8_t b[8];
    quay_req *s, *r;
    quay_status st;
    is_int(quay_send_init(T.e[0], T.world[0], b, 8, 1, 3, QUAY_SEND_STANDARD, &s), 0);
    is_int(quay_recv_init(T.e[1], T.world[1], b, 8, 0, 3, &r), 0);
    memset(&st, 0x55, sizeof st);
    ok(quay_req_test(s, &st)); /* inactive: complete, empty status */
    is_int(st.source, QUAY_ANY_SOURCE);
    is_int(st.tag, QUAY_ANY_TAG);
    is_int(st.error, 0);
    is_int(st.cancelled, 0);
    is_size(st.count, 0);
    ok(quay_req_test(r, NULL));
    quay_action a;
    is_int(quay_next_action(T.e[0], &a), 0); /* nothing sent, nothing completed */
    is_int(quay_next_action(T.e[1], &a), 0);
    is_int(quay_comm_free(T.e[0], T.world[0]), QUAY_EBUSY); /* held */
    is_int(quay_req_free(T.e[0], s), 0);
    is_int(quay_req_free(T.e[1], r), 0);
    is_int(quay_req_free(T.e[1], r), QUAY_EINVAL);
    /* argument checks as quay_isend / quay_irecv */
    is_int(quay_send_init(T.e[0], T.world[0], b, 8, 2, 3, QUAY_SEND_STANDARD, &s), QUAY_ERANK);
    is_int(quay_send_init(T.e[0], T.world[0], b, 8, 1, -3, QUAY_SEND_STANDARD, &s), QUAY_ETAG);
    is_int(quay_send_init(T.e[0], T.world[0], NULL, 8, 1, 3, QUAY_SEND_STANDARD, &s),
           QUAY_EINVAL);
    is_int(quay_send_init(T.e[0], T.world[0], b, 8, 1, 3, (quay_send_mode)9, &s), QUAY_EINVAL);
    is_int(quay_recv_init(T.e[1], T.world[1], b, 8, 5, 3, &r), QUAY_ERANK);
    is_int(quay_recv_init(T.e[1], T.world[1], b, 8, 0, -7, &r), QUAY_ETAG);
    is_int(quay_recv_init(T.e[1], NULL, b, 8, 0, 3, &r), QUAY_EINVAL);
    is_int(quay_recv_init(NULL, T.world[1], b, 8, 0, 3, &r), QUAY_EINVAL);
    check_clean();
    tn_fini(&T);
}

/* `rounds` rounds of one persistent send and receive of `len` bytes in
 * `mode`, the receive started before the send (early) or after the send
 * arrived (late, odd rounds when `mix`); new data and a new wire id each
 * round. */
static void rounds(size_t len, quay_send_mode mode, int nrounds, int mix)
{
    static uint8_t sb[2048], rb[2048];
    quay_req *s, *r;
    if (!is_int(quay_send_init(T.e[0], T.world[0], sb, len, 1, 7, mode, &s), 0) ||
        !is_int(quay_recv_init(T.e[1], T.world[1], rb, sizeof rb, QUAY_ANY_SOURCE, 7, &r), 0))
        return;
    uint32_t last_s = 0, last_r = 0;
    int good = 1;
    for (int k = 0; k < nrounds; k++) {
        int late = mix && (k & 1);
        tn_fill(sb, len, k + 1);
        memset(rb, 0, sizeof rb);
        if (!late)
            good &= quay_start(T.e[1], r) == 0;
        good &= quay_start(T.e[0], s) == 0;
        if (mode != QUAY_SEND_BUFFERED) /* (a buffered send is over at once) */
            good &= quay_start(T.e[0], s) == QUAY_ESTATE; /* active */
        tn_pump(&T);
        if (late) {
            good &= quay_start(T.e[1], r) == 0;
            tn_pump(&T);
        }
        quay_status st;
        good &= quay_req_test(s, &st) && st.error == 0 && st.count == len;
        good &= quay_req_test(r, &st) && st.error == 0 && st.count == len &&
                st.source == 0 && st.tag == 7;
        uint8_t want[2048];
        tn_fill(want, len, k + 1);
        good &= memcmp(rb, want, len) == 0;
        /* a new wire id per round: stale packets cannot reach this one */
        good &= quay_req_id(s) != last_s && quay_req_id(r) != last_r;
        last_s = quay_req_id(s);
        last_r = quay_req_id(r);
    }
    ok_msg(good, "%d rounds of %zu bytes, mode %d%s", nrounds, len, (int)mode,
           mix ? ", receive early and late" : "");
    is_int(quay_req_free(T.e[0], s), 0);
    is_int(quay_req_free(T.e[1], r), 0);
    check_clean();
}

static void t_rounds(void)
{
    tn_init(&T, 2, NULL);
    rounds(0, QUAY_SEND_STANDARD, 5, 1);
    rounds(100, QUAY_SEND_STANDARD, 20, 1);
    rounds(1000, QUAY_SEND_STANDARD, 10, 1); /* rendezvous, pipelined */
    rounds(100, QUAY_SEND_SYNC, 10, 1);
    rounds(1000, QUAY_SEND_SYNC, 5, 1);
    rounds(100, QUAY_SEND_READY, 10, 0); /* ready: the receive must be posted */
    rounds(1000, QUAY_SEND_READY, 5, 0);
    tn_fini(&T);
}

static void t_buffered(void)
{
    tn_init(&T, 2, NULL);
    static uint8_t attach[4096];
    is_int(quay_buffer_attach(T.e[0], attach, sizeof attach), 0);
    rounds(100, QUAY_SEND_BUFFERED, 10, 1);
    rounds(1000, QUAY_SEND_BUFFERED, 3, 1);
    /* no room: ENOBUFS, the request stays inactive and can start later */
    uint8_t big[8192] = {0};
    quay_req *s;
    is_int(quay_send_init(T.e[0], T.world[0], big, sizeof big, 1, 1, QUAY_SEND_BUFFERED, &s),
           0);
    is_int(quay_start(T.e[0], s), QUAY_ENOBUFS);
    ok(quay_req_test(s, NULL));
    is_int(quay_start(T.e[0], s), QUAY_ENOBUFS);
    is_int(quay_req_free(T.e[0], s), 0);
    void *addr;
    size_t sz;
    is_int(quay_buffer_detach(T.e[0], &addr, &sz), 0);
    check_clean();
    tn_fini(&T);
}

/* Messages that arrive before the receive's rounds start: each start takes
 * the oldest (non-overtaking); and a plain receive posted between rounds. */
static void t_unexpected_order(void)
{
    tn_init(&T, 2, NULL);
    uint8_t v[4] = {1, 2, 3, 4}, b = 0, c = 0;
    quay_req *s[4], *r, *q;
    for (int i = 0; i < 4; i++)
        is_int(quay_isend(T.e[0], T.world[0], &v[i], 1, 1, 2, QUAY_SEND_STANDARD, &s[i]), 0);
    tn_pump(&T);
    is_int(quay_recv_init(T.e[1], T.world[1], &b, 1, 0, 2, &r), 0);
    for (int k = 0; k < 2; k++) {
        is_int(quay_start(T.e[1], r), 0);
        ok(quay_req_test(r, NULL)); /* matched in the call */
        is_int(b, k + 1);
    }
    is_int(quay_irecv(T.e[1], T.world[1], &c, 1, 0, 2, &q), 0);
    is_int(c, 3);
    is_int(quay_start(T.e[1], r), 0);
    is_int(b, 4);
    quay_req_free(T.e[1], q);
    quay_req_free(T.e[1], r);
    for (int i = 0; i < 4; i++)
        quay_req_free(T.e[0], s[i]);
    check_clean();
    tn_fini(&T);
}

static void t_misuse(void)
{
    tn_init(&T, 2, NULL);
    uint8_t b[8];
    quay_req *p, *r;
    is_int(quay_irecv(T.e[1], T.world[1], b, 8, 0, 1, &p), 0);
    is_int(quay_start(T.e[1], p), QUAY_EINVAL); /* not persistent */
    is_int(quay_start(NULL, p), QUAY_EINVAL);
    is_int(quay_start(T.e[1], NULL), QUAY_EINVAL);
    is_int(quay_recv_init(T.e[1], T.world[1], b, 8, 0, 1, &r), 0);
    is_int(quay_start(T.e[0], r), QUAY_EINVAL); /* another engine's */
    is_int(quay_start(T.e[1], r), 0);
    /* freed while active: released when it completes; no more starts */
    is_int(quay_req_free(T.e[1], r), 0);
    is_int(quay_start(T.e[1], r), QUAY_EINVAL);
    quay_req *s1, *s2;
    is_int(quay_isend(T.e[0], T.world[0], b, 8, 1, 1, QUAY_SEND_STANDARD, &s1), 0);
    is_int(quay_isend(T.e[0], T.world[0], b, 8, 1, 1, QUAY_SEND_STANDARD, &s2), 0);
    tn_pump(&T);
    quay_req_free(T.e[0], s1);
    quay_req_free(T.e[0], s2);
    ok(quay_req_test(p, NULL));
    quay_req_free(T.e[1], p);
    check_clean(); /* the persistent receive was released at completion */
    tn_fini(&T);
}

static void t_cancel(void)
{
    tn_init(&T, 2, NULL);
    uint8_t b = 0, v = 9;
    quay_req *r, *s;
    quay_status st;
    is_int(quay_recv_init(T.e[1], T.world[1], &b, 1, 0, 4, &r), 0);
    is_int(quay_cancel(T.e[1], r), 0); /* inactive: unaffected */
    ok(quay_req_test(r, &st));
    is_int(st.cancelled, 0);
    is_int(quay_start(T.e[1], r), 0);
    is_int(quay_cancel(T.e[1], r), 0);
    tn_pump(&T);
    ok(quay_req_test(r, &st));
    is_int(st.cancelled, 1);
    /* the next round is a fresh one */
    is_int(quay_start(T.e[1], r), 0);
    is_int(quay_isend(T.e[0], T.world[0], &v, 1, 1, 4, QUAY_SEND_STANDARD, &s), 0);
    tn_pump(&T);
    ok(quay_req_test(r, &st));
    is_int(st.cancelled, 0);
    is_int(st.error, 0);
    is_int(b, 9);
    quay_req_free(T.e[1], r);
    quay_req_free(T.e[0], s);
    check_clean();
    tn_fini(&T);
}

static void t_proc_null_and_failed(void)
{
    tn_init(&T, 3, NULL);
    uint8_t b[4] = {0};
    quay_req *s, *r, *f, *g;
    quay_status st;
    is_int(quay_send_init(T.e[0], T.world[0], b, 4, QUAY_PROC_NULL, 1, QUAY_SEND_STANDARD, &s),
           0);
    is_int(quay_recv_init(T.e[0], T.world[0], b, 4, QUAY_PROC_NULL, 1, &r), 0);
    for (int k = 0; k < 3; k++) {
        is_int(quay_start(T.e[0], s), 0);
        is_int(quay_start(T.e[0], r), 0);
        ok(quay_req_test(s, &st));
        is_int(st.source, QUAY_PROC_NULL);
        ok(quay_req_test(r, &st));
        is_int(st.source, QUAY_PROC_NULL);
        is_int(st.tag, QUAY_ANY_TAG);
        is_size(st.count, 0);
    }
    /* a failed peer: each round completes with QUAY_EPEER */
    is_int(quay_send_init(T.e[0], T.world[0], b, 4, 2, 1, QUAY_SEND_STANDARD, &f), 0);
    is_int(quay_recv_init(T.e[0], T.world[0], b, 4, 2, 1, &g), 0);
    is_int(quay_start(T.e[0], g), 0);
    is_int(quay_on_peer_failed(T.e[0], 2), 0);
    ok(quay_req_test(g, &st));
    is_int(st.error, QUAY_EPEER);
    for (int k = 0; k < 2; k++) {
        is_int(quay_start(T.e[0], f), 0);
        is_int(quay_start(T.e[0], g), 0);
        tn_pump(&T);
        ok(quay_req_test(f, &st));
        is_int(st.error, QUAY_EPEER);
        ok(quay_req_test(g, &st));
        is_int(st.error, QUAY_EPEER);
    }
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[0], r);
    quay_req_free(T.e[0], f);
    quay_req_free(T.e[0], g);
    tn_pump(&T);
    quay_stats sts;
    quay_engine_stats(T.e[0], &sts);
    is_int(sts.reqs_in_use, 0);
    tn_fini(&T);
}

/* A round is over only when the adapter is done with its packets (a
 * rendezvous receive's last CTS): until then the request stays active. */
static void t_packets_out(void)
{
    tn_init(&T, 2, NULL);
    T.auto_done = 0;
    static uint8_t sb[1000], rb[1000];
    quay_req *s, *r;
    is_int(quay_recv_init(T.e[1], T.world[1], rb, sizeof rb, 0, 1, &r), 0);
    is_int(quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 1, QUAY_SEND_STANDARD, &s), 0);
    is_int(quay_start(T.e[1], r), 0);
    /* deliver everything; rank 1's newest packet (a CTS) keeps its op_done
     * (the one before gets it when the next leaves: grants follow them) */
    uint64_t held = 0;
    int nheld = 0;
    for (int guard = 0; guard < 200; guard++) {
        tn_pull_all(&T);
        if (T.nq == 0)
            break;
        if (T.q[0].from == 1) {
            is_int(quay_on_packet(T.e[0], 1, T.q[0].bytes, T.q[0].len), 0);
            if (nheld++ > 0)
                is_int(quay_on_op_done(T.e[1], held, 0), 0);
            held = T.q[0].token;
            T.q[0].done = 1; /* its op_done comes later, from here */
            tn_drop(&T, 0);
        } else {
            tn_deliver(&T, 0);
        }
    }
    ok(nheld > 1);
    /* every byte is in, but a round is over only when its packets are */
    ok(!quay_req_test(r, NULL));
    is_int(quay_start(T.e[1], r), QUAY_ESTATE);
    is_int(quay_on_op_done(T.e[1], held, 0), 0);
    ok(quay_req_test(r, NULL));
    tn_pump(&T);
    ok(quay_req_test(s, NULL));
    quay_req_free(T.e[0], s);
    is_int(quay_req_free(T.e[1], r), 0);
    check_clean();
    tn_fini(&T);
}

/* With COMPLETE actions on: each round yields one; one not yet pulled
 * when the request starts again is withdrawn (it would name the new
 * round). */
static void t_complete_actions(void)
{
    tn_init(&T, 2, NULL);
    uint8_t b = 0, v = 1;
    quay_req *r, *s;
    is_int(quay_recv_init(T.e[1], T.world[1], &b, 1, 0, 0, &r), 0);
    is_int(quay_start(T.e[1], r), 0);
    is_int(quay_isend(T.e[0], T.world[0], &v, 1, 1, 0, QUAY_SEND_STANDARD, &s), 0);
    tn_pump(&T);
    is_int(T.ncomplete[1], 1);
    /* round 2: completed by an unexpected message inside quay_start */
    quay_req_free(T.e[0], s);
    is_int(quay_isend(T.e[0], T.world[0], &v, 1, 1, 0, QUAY_SEND_STANDARD, &s), 0);
    tn_pump(&T);
    is_int(quay_start(T.e[1], r), 0);
    ok(quay_req_test(r, NULL));
    ok(quay_has_actions(T.e[1])); /* its COMPLETE */
    /* round 3 before that COMPLETE is pulled: withdrawn */
    is_int(quay_start(T.e[1], r), 0);
    ok(!quay_has_actions(T.e[1]));
    quay_action a;
    is_int(quay_next_action(T.e[1], &a), 0);
    quay_req_free(T.e[0], s);
    is_int(quay_isend(T.e[0], T.world[0], &v, 1, 1, 0, QUAY_SEND_STANDARD, &s), 0);
    tn_pump(&T);
    is_int(T.ncomplete[1], 2);
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);
    check_clean();
    tn_fini(&T);
}

int main(void)
{
    subtest("inactive: empty status, free, argument checks", t_inactive);
    subtest("rounds: eager, rendezvous, sync, ready", t_rounds);
    subtest("buffered", t_buffered);
    subtest("unexpected messages taken in order", t_unexpected_order);
    subtest("misuse: not persistent, other engine, active, freed", t_misuse);
    subtest("cancel", t_cancel);
    subtest("PROC_NULL and a failed peer", t_proc_null_and_failed);
    subtest("round over only when its packets are done", t_packets_out);
    subtest("COMPLETE actions", t_complete_actions);
    return done_testing();
}
