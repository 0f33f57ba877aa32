/*
 * test_flow.c — flow control wired into the engine (QUAY_FLOW_ACKNACK):
 * normal traffic, lost data, lost ACKs, duplicates, corruption, NACK
 * back-pressure when the receiver has no buffer, retransmission timers
 * with backoff, and peer failure isolating one peer.
 */
#include <string.h>

#include <quay/quay_coll.h>

#include "harness.h"
#include "testnet.h"

static testnet T;

static void flow_config(quay_config *c, int n)
{
    tn_config(c, 0, n);
    c->flow = QUAY_FLOW_ACKNACK;
    c->rto_init_ns = 1000;
    c->rto_max_ns = 8000;
    c->retry_limit = 4;
}

static void setup(int n)
{
    quay_config c;
    flow_config(&c, n);
    is_int(tn_init(&T, n, &c), 0);
}

static uint64_t now_ns;

static int tick(void)
{
    return tn_tick(&T, &now_ns);
}

static void settle(void)
{
    tn_settle(&T, &now_ns, 1000);
}

static void check_clean(void)
{
    tn_check_clean(&T);
}

static void exchange(size_t len, quay_send_mode mode)
{
    static uint8_t sb[2000], rb[2000];
    for (size_t i = 0; i < len; i++)
        sb[i] = (uint8_t)(i * 13 + len);
    memset(rb, 0, sizeof rb);
    quay_req *s, *r;
    is_int(quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 1, &r), 0);
    is_int(quay_isend(T.e[0], T.world[0], sb, len, 1, 1, mode, &s), 0);
    settle();
    quay_status st;
    ok(quay_req_test(s, NULL));
    ok(quay_req_test(r, &st));
    is_size(st.count, len);
    ok(memcmp(sb, rb, len) == 0);
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);
}

static void t_normal(void)
{
    setup(2);
    exchange(10, QUAY_SEND_STANDARD);
    exchange(1000, QUAY_SEND_STANDARD);
    exchange(10, QUAY_SEND_SYNC);
    exchange(0, QUAY_SEND_STANDARD);
    settle();
    check_clean();
    is_int(T.rejects, 0);
    tn_fini(&T);
}

static void t_lost_data(void)
{
    setup(2);
    uint8_t sb[10] = {1, 2, 3}, rb[10];
    quay_req *s, *r;
    quay_irecv(T.e[1], T.world[1], rb, 10, 0, 0, &r);
    quay_isend(T.e[0], T.world[0], sb, 10, 1, 0, QUAY_SEND_STANDARD, &s);
    tn_pull_all(&T);
    is_int(T.nq, 1);
    tn_drop(&T, 0);
    ok(!quay_req_test(s, NULL)); /* not acknowledged: the send is not done */
    ok(quay_next_deadline(T.e[0]) != QUAY_TIME_NONE);
    settle();
    ok(quay_req_test(r, NULL));
    ok(quay_req_test(s, NULL));
    quay_stats st;
    quay_engine_stats(T.e[0], &st);
    ok(st.retransmits >= 1);
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);
    settle();
    check_clean();
    tn_fini(&T);
}

static void t_lost_ack_and_dup(void)
{
    setup(2);
    uint8_t sb[10] = {4}, rb[10];
    quay_req *s, *r;
    quay_irecv(T.e[1], T.world[1], rb, 10, 0, 0, &r);
    quay_isend(T.e[0], T.world[0], sb, 10, 1, 0, QUAY_SEND_STANDARD, &s);
    tn_pull_all(&T);
    tn_dup(&T, 0);
    is_int(tn_deliver(&T, 0), 0);
    is_int(tn_deliver(&T, 0), 0); /* the copy: suppressed */
    ok(quay_req_test(r, NULL));
    tn_pull_all(&T); /* the ACK-only packet(s) */
    while (T.nq > 0)
        tn_drop(&T, 0); /* ACKs lost */
    ok(!quay_req_test(s, NULL));
    settle(); /* timeout -> retransmit -> duplicate -> re-ACK */
    ok(quay_req_test(s, NULL));
    quay_stats st;
    quay_engine_stats(T.e[1], &st);
    ok_msg(st.dups_dropped >= 2, "duplicates suppressed: %llu",
           (unsigned long long)st.dups_dropped);
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);
    settle();
    check_clean();
    tn_fini(&T);
}

static void t_corrupt(void)
{
    setup(2);
    uint8_t sb[100], rb[100];
    memset(sb, 7, sizeof sb);
    quay_req *s, *r;
    quay_irecv(T.e[1], T.world[1], rb, 100, 0, 0, &r);
    quay_isend(T.e[0], T.world[0], sb, 100, 1, 0, QUAY_SEND_STANDARD, &s);
    tn_pull_all(&T);
    T.q[0].bytes[T.q[0].len - 1] ^= 0x10; /* a payload bit */
    is_int(tn_deliver(&T, 0), QUAY_EPROTO);
    ok(!quay_req_test(r, NULL));
    settle();
    ok(quay_req_test(r, NULL));
    ok(memcmp(rb, sb, 100) == 0);
    quay_stats st;
    quay_engine_stats(T.e[1], &st);
    ok(st.bad_checksum == 1);
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);
    settle();
    check_clean();
    tn_fini(&T);
}

/* Every 8-byte message i of rank 0 (sb) arrived in rb and both ends
 * completed; then the engines are clean and freed. */
static void finish_delivered(int n, quay_req **s, quay_req **r, uint8_t (*sb)[8],
                             uint8_t (*rb)[8], const char *what)
{
    for (int i = 0; i < n; i++) {
        ok_msg(quay_req_test(r[i], NULL) && memcmp(rb[i], sb[i], 8) == 0, "%smessage %d",
               what, i);
        ok(quay_req_test(s[i], NULL));
        quay_req_free(T.e[0], s[i]);
        quay_req_free(T.e[1], r[i]);
    }
    settle();
    check_clean();
    tn_fini(&T);
}

/* The receiver has room for 2 unexpected messages; 6 arrive before any
 * receive is posted: NACK, NOT_TO_SEND, retransmission, FIFO kept. */
static void t_nack_backpressure(void)
{
    quay_config c;
    flow_config(&c, 2);
    c.max_unexpected = 4; /* half may be held out of order: 2 in order */
    is_int(tn_init(&T, 2, &c), 0);
    uint8_t sb[6][8], rb[6][8];
    quay_req *s[6], *r[6];
    for (int i = 0; i < 6; i++) {
        memset(sb[i], i + 1, 8);
        is_int(quay_isend(T.e[0], T.world[0], sb[i], 8, 1, 5, QUAY_SEND_STANDARD, &s[i]), 0);
    }
    settle();
    quay_stats st;
    quay_engine_stats(T.e[1], &st);
    ok_msg(st.nacks_sent >= 1, "NACKs sent: %llu", (unsigned long long)st.nacks_sent);
    ok(st.umsgs_in_use <= 4);
    for (int i = 0; i < 6; i++) {
        is_int(quay_irecv(T.e[1], T.world[1], rb[i], 8, 0, 5, &r[i]), 0);
        settle();
    }
    finish_delivered(6, s, r, sb, rb, "in order: ");
}

/* Data holds its descriptor until acknowledged. With two descriptors and
 * traffic both ways, data must never take the last one: each side needs
 * it to acknowledge the other's data. (max_out 1 is refused.) */
static void t_acks_never_starve(void)
{
    quay_config c;
    quay_engine *e1;
    flow_config(&c, 2);
    c.max_out = 1;
    is_int(quay_engine_new(&c, &e1), QUAY_EINVAL);
    c.max_out = 2;
    is_int(tn_init(&T, 2, &c), 0);
    uint8_t sb[2][8][16], rb[2][8][16];
    quay_req *s[2][8], *r[2][8];
    for (int i = 0; i < 8; i++)
        for (int a = 0; a < 2; a++) {
            memset(sb[a][i], 16 * a + i, 16);
            is_int(quay_isend(T.e[a], T.world[a], sb[a][i], 16, 1 - a, 2,
                              QUAY_SEND_STANDARD, &s[a][i]), 0);
            is_int(quay_irecv(T.e[a], T.world[a], rb[a][i], 16, 1 - a, 2,
                              &r[a][i]), 0);
        }
    settle();
    for (int a = 0; a < 2; a++)
        for (int i = 0; i < 8; i++) {
            ok_msg(quay_req_test(s[a][i], NULL) == 1 && quay_req_test(r[a][i], NULL) == 1,
                   "rank %d message %d both ways", a, i);
            ok(memcmp(rb[a][i], sb[1 - a][i], 16) == 0);
            quay_req_free(T.e[a], s[a][i]);
            quay_req_free(T.e[a], r[a][i]);
        }
    quay_stats st;
    quay_engine_stats(T.e[0], &st);
    is_int((int)st.peers_failed, 0);
    settle();
    check_clean();
    tn_fini(&T);
}

/* ---- keepalive ------------------------------------------------------------- */

/* Tick timers and pump, losing everything sent to or by `dead` (-1: none). */
static void run_ticks(int dead, int n)
{
    for (int i = 0; i < n; i++) {
        tn_pull_all(&T);
        for (int k = 0; k < T.nq;) {
            if (T.q[k].from == dead || T.q[k].to == dead)
                tn_drop(&T, k);
            else
                tn_deliver(&T, k);
        }
        if (!tick())
            return;
    }
}

/* A peer we only receive from is pinged while it is silent: alive, it
 * answers and nothing fails however long it stays quiet; dead, the
 * receive posted for it completes with QUAY_EPEER. */
static void t_keepalive_receiver(void)
{
    setup(3);
    uint8_t rb[8], sb[8] = {7};
    quay_req *r, *r2, *s;
    quay_status st;
    is_int(quay_irecv(T.e[1], T.world[1], rb, 8, 0, 1, &r), 0);
    is_int(quay_irecv(T.e[1], T.world[1], rb, 8, 2, 1, &r2), 0);
    ok(quay_next_deadline(T.e[1]) != QUAY_TIME_NONE); /* keepalive armed */
    run_ticks(-1, 50); /* both alive and silent */
    ok(!quay_req_test(r, NULL) && !quay_req_test(r2, NULL));
    quay_stats qs;
    quay_engine_stats(T.e[1], &qs);
    ok_msg(qs.pings > 0, "pings sent: %llu", (unsigned long long)qs.pings);
    is_int((int)qs.peers_failed, 0);
    /* Rank 2 dies; rank 0 speaks late and is received. */
    run_ticks(2, 60);
    ok(tn_done(r2, &st) && st.error == QUAY_EPEER);
    ok(!quay_req_test(r, NULL));
    is_int(quay_isend(T.e[0], T.world[0], sb, 8, 1, 1, QUAY_SEND_STANDARD, &s), 0);
    run_ticks(2, 60);
    ok(tn_done(r, &st) && st.error == 0 && rb[0] == 7);
    quay_engine_stats(T.e[1], &qs);
    is_int((int)qs.peers_failed, 1);
    quay_req_free(T.e[1], r);
    quay_req_free(T.e[1], r2);
    quay_req_free(T.e[0], s);
    tn_fini(&T);
}

/* A rendezvous send whose RTS was acknowledged waits for a CTS: if the
 * receiver dies before posting, the send completes with QUAY_EPEER. */
static void t_keepalive_sender(void)
{
    setup(2);
    static uint8_t big[4000];
    quay_req *s;
    quay_status st;
    is_int(quay_isend(T.e[0], T.world[0], big, sizeof big, 1, 1, QUAY_SEND_STANDARD, &s), 0);
    run_ticks(-1, 3); /* RTS delivered and acknowledged */
    ok(!quay_req_test(s, NULL));
    run_ticks(1, 80);
    ok(tn_done(s, &st) && st.error == QUAY_EPEER);
    quay_req_free(T.e[0], s);
    tn_fini(&T);
}

/* ---- credit mode ---------------------------------------------------------- */

static void credit_setup(uint32_t credits)
{
    quay_config c;
    flow_config(&c, 2);
    c.flow = QUAY_FLOW_CREDIT;
    c.flow_credits = credits;
    is_int(tn_init(&T, 2, &c), 0);
}

/* Run timers and deliver until nothing moves, dropping every packet from
 * rank `lose` (-1: none) for the first `rounds` rounds. */
static void pump_losing(int lose, int rounds)
{
    for (int i = 0; i < 1000; i++) {
        tn_pull_all(&T);
        for (int k = 0; k < T.nq;) {
            if (i < rounds && T.q[k].from == lose)
                tn_drop(&T, k);
            else
                k++;
        }
        tn_pump(&T);
        if (!tick())
            return;
    }
}

/* The sender never has more than flow_credits messages held by the
 * receiver; grants come back as receives consume them; no NACK ever. */
static void t_credit_window(void)
{
    credit_setup(2);
    uint8_t sb[6][8], rb[6][8];
    quay_req *s[6], *r[6];
    quay_stats st;
    for (int i = 0; i < 6; i++) {
        memset(sb[i], 0x40 + i, 8);
        is_int(quay_isend(T.e[0], T.world[0], sb[i], 8, 1, 1, QUAY_SEND_STANDARD, &s[i]), 0);
    }
    settle();
    quay_engine_stats(T.e[1], &st);
    is_int(st.umsgs_in_use, 2); /* exactly the grant */
    is_int((int)st.nacks_sent, 0);
    ok(quay_req_test(s[1], NULL) && !quay_req_test(s[2], NULL));
    for (int i = 0; i < 6; i++) {
        is_int(quay_irecv(T.e[1], T.world[1], rb[i], 8, 0, 1, &r[i]), 0);
        settle();
        quay_engine_stats(T.e[1], &st);
        ok_msg(st.umsgs_in_use <= 2, "held %u <= 2 credits", st.umsgs_in_use);
    }
    quay_engine_stats(T.e[1], &st);
    is_int((int)st.nacks_sent, 0);
    finish_delivered(6, s, r, sb, rb, "");
}

/* Grants lost on the way back: the blocked sender probes on its timer
 * and the receiver answers, even when it has no new credit, so a full
 * receiver is never taken for a dead one. */
static void t_credit_lost_grants(void)
{
    credit_setup(1);
    uint8_t sb[3][8] = {{1}, {2}, {3}}, rb[3][8];
    quay_req *s[3], *r[3];
    for (int i = 0; i < 3; i++)
        is_int(quay_isend(T.e[0], T.world[0], sb[i], 8, 1, 1, QUAY_SEND_STANDARD, &s[i]), 0);
    /* Nobody receives for a long time: the sender probes, the receiver
     * answers "still full", and nobody fails. */
    for (int i = 0; i < 40; i++) {
        tn_pump(&T);
        tick();
    }
    quay_stats st;
    quay_engine_stats(T.e[0], &st);
    is_int((int)st.peers_failed, 0);
    ok(quay_next_deadline(T.e[0]) != QUAY_TIME_NONE); /* still probing */
    for (int i = 0; i < 3; i++)
        is_int(quay_irecv(T.e[1], T.world[1], rb[i], 8, 0, 1, &r[i]), 0);
    pump_losing(1, 3); /* every grant and ACK of the first rounds is lost */
    for (int i = 0; i < 3; i++) {
        ok_msg(quay_req_test(r[i], NULL) && rb[i][0] == i + 1, "message %d", i);
        ok(quay_req_test(s[i], NULL));
        quay_req_free(T.e[0], s[i]);
        quay_req_free(T.e[1], r[i]);
    }
    quay_engine_stats(T.e[0], &st);
    is_int((int)st.peers_failed, 0);
    settle();
    check_clean();
    tn_fini(&T);
}

/*
 * Credits held by messages matched only later: one credit, three tag-1
 * messages kept unexpected, and the receiver waits for the tag 2 behind
 * them (legal MPI). The blocked sender is lent one more credit each time
 * it asks while the receiver waits on it and a descriptor is free. With
 * the room full (max_unexpected 2) it is lent one only after it has asked
 * four times with nothing moving: that message finds no room and is
 * refused (NACK) until receives drain the room. A receiver that waits on
 * nothing from the sender lends nothing (t_credit_window).
 */
static void t_credit_loans(void)
{
    for (int full = 0; full <= 1; full++) {
        quay_config c;
        flow_config(&c, 2);
        c.flow = QUAY_FLOW_CREDIT;
        c.flow_credits = 1;
        c.max_unexpected = full ? 2 : 64;
        is_int(tn_init(&T, 2, &c), 0);
        uint8_t sb[4][8], rb[4][8];
        quay_req *s[4], *r[4];
        for (int i = 0; i < 4; i++) {
            memset(sb[i], 0x60 + i, 8);
            is_int(quay_isend(T.e[0], T.world[0], sb[i], 8, 1, i < 3 ? 1 : 2,
                              QUAY_SEND_STANDARD, &s[i]),
                   0);
        }
        settle();
        quay_stats st;
        quay_engine_stats(T.e[1], &st);
        is_int((int)st.credit_loans, 0); /* nothing waits on the sender yet */
        is_int(st.umsgs_in_use, 1);
        is_int(quay_irecv(T.e[1], T.world[1], rb[3], 8, 0, 2, &r[3]), 0);
        settle();
        quay_engine_stats(T.e[1], &st);
        if (!full) {
            ok_msg(quay_req_test(r[3], NULL) && memcmp(rb[3], sb[3], 8) == 0,
                   "tag 2 got past the three kept messages");
            is_int((int)st.credit_loans, 3);
            is_int(st.umsgs_in_use, 3);
            is_int((int)st.nacks_sent, 0);
        } else {
            /* one loan with a descriptor free, then stalled ones: the
             * third tag-1 message is lent credit but refused for room */
            ok_msg(!quay_req_test(r[3], NULL), "room full: tag 2 waits");
            ok_msg(st.credit_loans >= 2, "room full: %llu loans",
                   (unsigned long long)st.credit_loans);
            is_int(st.umsgs_in_use, 2);
            ok_msg(st.nacks_sent >= 1, "room full: the stalled loan's message refused (%llu)",
                   (unsigned long long)st.nacks_sent);
        }
        for (int i = 0; i < 3; i++)
            is_int(quay_irecv(T.e[1], T.world[1], rb[i], 8, 0, 1, &r[i]), 0);
        settle();
        finish_delivered(4, s, r, sb, rb, full ? "room full: " : "room free: ");
    }
}

/* Both ends must run the same policy: a frame of the other is malformed. */
static void t_credit_policy_mismatch(void)
{
    quay_config c[2];
    flow_config(&c[0], 2);
    flow_config(&c[1], 2);
    c[1].flow = QUAY_FLOW_CREDIT;
    is_int(tn_init_each(&T, 2, c, 1), 0);
    uint8_t b[4] = {0};
    quay_req *s;
    is_int(quay_isend(T.e[0], T.world[0], b, 4, 1, 1, QUAY_SEND_STANDARD, &s), 0);
    tn_pull_all(&T);
    is_int(tn_deliver(&T, 0), QUAY_EPROTO);
    quay_req_free(T.e[0], s);
    tn_fini(&T);
}

static void t_peer_failure(void)
{
    setup(3);
    uint8_t b[1000] = {0};
    quay_req *s_dead, *s_live, *r_dead, *r_live, *rs_live;
    quay_isend(T.e[0], T.world[0], b, 1000, 1, 0, QUAY_SEND_STANDARD, &s_dead);
    quay_irecv(T.e[0], T.world[0], b, 10, 1, 0, &r_dead);
    quay_isend(T.e[0], T.world[0], b, 10, 2, 0, QUAY_SEND_STANDARD, &s_live);
    quay_irecv(T.e[2], T.world[2], b, 10, 0, 0, &rs_live);
    quay_irecv(T.e[0], T.world[0], b, 10, QUAY_ANY_SOURCE, 9, &r_live);
    /* Rank 1 is dead: everything to it is lost, it never answers. */
    for (int step = 0; step < 200; step++) {
        tn_pull_all(&T);
        for (int i = 0; i < T.nq;) {
            if (T.q[i].to == 1 || T.q[i].from == 1)
                tn_drop(&T, i);
            else
                tn_deliver(&T, i);
        }
        if (!tick())
            break;
    }
    quay_status st;
    ok(quay_req_test(s_dead, &st));
    is_int(st.error, QUAY_EPEER);
    ok(quay_req_test(r_dead, &st));
    is_int(st.error, QUAY_EPEER);
    ok(quay_req_test(s_live, &st));
    is_int(st.error, 0);
    ok(quay_req_test(rs_live, &st));
    is_int(st.error, 0);
    ok(!quay_req_test(r_live, NULL)); /* a wildcard receive stays posted */
    quay_stats es;
    quay_engine_stats(T.e[0], &es);
    is_int(es.peers_failed, 1);
    /* New traffic to the failed peer fails at once; rank 2 still works. */
    quay_req *s2;
    is_int(quay_isend(T.e[0], T.world[0], b, 10, 1, 0, QUAY_SEND_STANDARD, &s2), 0);
    ok(quay_req_test(s2, &st) && st.error == QUAY_EPEER);
    quay_req_free(T.e[0], s2);
    quay_req *s3;
    quay_isend(T.e[2], T.world[2], b, 10, 0, 9, QUAY_SEND_STANDARD, &s3);
    for (int step = 0; step < 50 && !quay_req_test(r_live, NULL); step++) {
        tn_pull_all(&T);
        for (int i = 0; i < T.nq;) {
            if (T.q[i].to == 1 || T.q[i].from == 1)
                tn_drop(&T, i);
            else
                tn_deliver(&T, i);
        }
        tick();
    }
    ok(quay_req_test(r_live, NULL));
    quay_req_free(T.e[0], s_dead);
    quay_req_free(T.e[0], r_dead);
    quay_req_free(T.e[0], s_live);
    quay_req_free(T.e[0], r_live);
    quay_req_free(T.e[2], rs_live);
    quay_req_free(T.e[2], s3);
    tn_fini(&T);
}

/* A member dies during a barrier and an allreduce: the members that wait
 * on it complete with QUAY_EPEER, and so do those that only wait on them
 * (they learn it from the aborts); nobody hangs, the schedules cancel
 * what they still had posted, and nothing is left in use. */
static void t_collective_peer_failure(void)
{
    setup(3);
    quay_req *b[2], *a[2];
    int64_t v[2] = {1, 2}, out[2];
    for (int r = 0; r < 2; r++) {
        is_int(quay_ibarrier(T.e[r], T.world[r], &b[r]), 0);
        is_int(quay_iallreduce(T.e[r], T.world[r], &v[r], &out[r], 1, QUAY_INT64,
                               &(quay_op){QUAY_OP_SUM, 1, NULL, NULL}, &a[r]),
               0);
    }
    run_ticks(2, 200);
    for (int r = 0; r < 2; r++) {
        quay_status st;
        ok(tn_done(b[r], &st) && st.error == QUAY_EPEER);
        ok(tn_done(a[r], &st) && st.error == QUAY_EPEER);
        quay_req_free(T.e[r], b[r]);
        quay_req_free(T.e[r], a[r]);
        quay_stats qs;
        quay_engine_stats(T.e[r], &qs);
        ok(qs.peers_failed <= 1);
        is_int((int)qs.coll_failed, 2);
        is_int((int)qs.reqs_in_use, 0);
    }
    tn_fini(&T);
}

/* Application bypass, a member dead: rank 4 (children 5 and 6 in the
 * reduce tree of 8 rooted at rank 0) has not called when rank 5's result
 * arrives, so it starts its part early; rank 6 is dead, so that part
 * fails before the call. It waits for the call, which completes at once
 * with QUAY_EPEER; rank 0, waiting on rank 4, fails too (its abort);
 * nothing is left in use anywhere. */
static void t_collective_bypass_failure(void)
{
    quay_config c;
    flow_config(&c, 8);
    c.coll_bypass = 1;
    is_int(tn_init(&T, 8, &c), 0);
    quay_op sum = {QUAY_OP_SUM, 1, NULL, NULL};
    int32_t v[8][4], out[4];
    quay_req *q[8] = {0};
    for (int r = 0; r < 8; r++) {
        for (int i = 0; i < 4; i++)
            v[r][i] = r + i;
        if (r != 4 && r != 6)
            is_int(quay_ireduce(T.e[r], T.world[r], v[r], out, 4, QUAY_INT32, &sum, 0, &q[r]),
                   0);
    }
    run_ticks(6, 400);
    quay_stats st;
    quay_engine_stats(T.e[4], &st);
    is_int((int)st.coll_bypassed, 1);
    is_int((int)st.coll_failed, 1);
    is_int(quay_ireduce(T.e[4], T.world[4], v[4], NULL, 4, QUAY_INT32, &sum, 0, &q[4]), 0);
    quay_status s;
    ok(tn_done(q[4], &s) && s.error == QUAY_EPEER);
    ok(tn_done(q[0], &s) && s.error == QUAY_EPEER);
    for (int r = 0; r < 8; r++) {
        if (r == 6)
            continue;
        ok_msg(tn_done(q[r], NULL), "rank %d done", r);
        quay_req_free(T.e[r], q[r]);
        quay_engine_stats(T.e[r], &st);
        is_int((int)st.reqs_in_use, 0);
    }
    tn_fini(&T);
}

/* The transport says a peer is gone (quay_on_peer_failed), no flow
 * control: what waits on it fails at once with QUAY_EPEER, a packet it
 * sent afterwards is rejected, another peer's traffic and wildcard
 * receives carry on, a second call changes nothing, and bad ranks are
 * refused. */
static void t_transport_peer_failure(void)
{
    quay_config c;
    tn_config(&c, 0, 3);
    is_int(tn_init(&T, 3, &c), 0);
    uint8_t b[1000] = {0}, rb[16];
    quay_req *s_dead, *r_dead, *r_any, *s_live, *r_live;
    is_int(quay_isend(T.e[0], T.world[0], b, 1000, 1, 0, QUAY_SEND_STANDARD, &s_dead), 0);
    is_int(quay_irecv(T.e[0], T.world[0], rb, 16, 1, 0, &r_dead), 0);
    is_int(quay_irecv(T.e[0], T.world[0], rb, 16, QUAY_ANY_SOURCE, 5, &r_any), 0);
    tn_pull_all(&T); /* rank 1 will never answer the rendezvous */
    is_int(quay_on_peer_failed(T.e[0], 1), 0);
    quay_status st;
    ok(quay_req_test(s_dead, &st) && st.error == QUAY_EPEER);
    ok(quay_req_test(r_dead, &st) && st.error == QUAY_EPEER);
    ok(!quay_req_test(r_any, NULL));
    is_int(quay_on_peer_failed(T.e[0], 1), 0);
    quay_stats es;
    quay_engine_stats(T.e[0], &es);
    is_int((int)es.peers_failed, 1);
    is_int(quay_on_peer_failed(T.e[0], 0), QUAY_ERANK);
    is_int(quay_on_peer_failed(T.e[0], 3), QUAY_ERANK);
    is_int(quay_on_peer_failed(T.e[0], -1), QUAY_ERANK);
    is_int(quay_on_peer_failed(NULL, 1), QUAY_EINVAL);
    /* Rank 1's late packet is refused; rank 2 still satisfies the wildcard. */
    quay_req *late;
    is_int(quay_isend(T.e[1], T.world[1], b, 8, 0, 5, QUAY_SEND_STANDARD, &late), 0);
    is_int(quay_isend(T.e[2], T.world[2], b, 8, 0, 5, QUAY_SEND_STANDARD, &s_live), 0);
    is_int(quay_irecv(T.e[0], T.world[0], rb, 16, 2, 6, &r_live), 0);
    tn_pump(&T);
    /* (rank 1's packet went first: had it been taken, it would match) */
    ok(quay_req_test(r_any, &st) && st.error == 0 && st.source == 2);
    quay_req_free(T.e[0], s_dead);
    quay_req_free(T.e[0], r_dead);
    quay_req_free(T.e[0], r_any);
    quay_req_free(T.e[0], r_live);
    tn_fini(&T);
}

int main(void)
{
    subtest("normal traffic under ACK/NACK", t_normal);
    subtest("lost data is retransmitted on timeout", t_lost_data);
    subtest("lost ACKs and duplicates", t_lost_ack_and_dup);
    subtest("corruption caught by the checksum", t_corrupt);
    subtest("NACK back-pressure keeps FIFO", t_nack_backpressure);
    subtest("ACKs never starve for a descriptor", t_acks_never_starve);
    subtest("peer failure isolates one peer", t_peer_failure);
    subtest("the transport reports a peer failed", t_transport_peer_failure);
    subtest("keepalive: silent live peer kept, dead one failed", t_keepalive_receiver);
    subtest("keepalive: sender waiting for a CTS", t_keepalive_sender);
    subtest("collectives: a member dies", t_collective_peer_failure);
    subtest("collectives: bypass, a member dies before the call", t_collective_bypass_failure);
    subtest("credits: window held, grants returned, no NACK", t_credit_window);
    subtest("credits: lost grants, probes, full receiver alive", t_credit_lost_grants);
    subtest("credits: loans to a blocked sender the receiver waits on", t_credit_loans);
    subtest("credits: policy mismatch is malformed", t_credit_policy_mismatch);
    return done_testing();
}
