/*
 * test_quiesce.c — channel quiesce / is_stable / resume (PM's context
 * switch steps C1-C4 and C8) under both flow-control policies: nothing new
 * leaves a quiesced engine, it still acknowledges and retransmits so it
 * drains, it becomes stable exactly when nothing of its own is in flight
 * or owed, and resuming loses and duplicates nothing. A seeded run does at
 * least 50 switches per seed at random points over a lossy, duplicating
 * network with traffic in every direction.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"
#include "flowctl/chan.h"
#include "harness.h"
#include "testnet.h"

static testnet T;
static uint64_t now_ns;

static void setup(int n, uint32_t flow)
{
    quay_config c;
    tn_config(&c, 0, n);
    c.flow = flow;
    c.rto_init_ns = 1000;
    c.rto_max_ns = 16000;
    c.retry_limit = 1000; /* losses here are heavy on purpose */
    c.flow_window = 8;
    c.max_requests = 1024;
    is_int(tn_init(&T, n, &c), 0);
    now_ns = 0;
}

static int tick(void)
{
    return tn_tick(&T, &now_ns);
}

static void settle(void)
{
    tn_settle(&T, &now_ns, 2000);
}

/* Sequence numbers handed out to peer p so far (white-box: nothing new
 * may leave a quiesced engine). */
static uint32_t next_seq(int r, int p)
{
    return chan_peer(chan_state(T.e[r]), p)->tx.next;
}

static void t_api(void)
{
    quay_config c;
    quay_engine *e;
    tn_config(&c, 0, 2);
    is_int(quay_engine_new(&c, &e), 0);
    is_int(quay_channel_quiesce(e), QUAY_ESTATE); /* no flow control */
    is_int(quay_channel_is_stable(e), QUAY_ESTATE);
    is_int(quay_channel_resume(e), QUAY_ESTATE);
    quay_engine_free(e);
    is_int(quay_channel_quiesce(NULL), QUAY_EINVAL);
    setup(2, QUAY_FLOW_ACKNACK);
    is_int(quay_channel_is_stable(T.e[0]), 0); /* not quiesced */
    is_int(quay_channel_quiesce(T.e[0]), 0);
    is_int(quay_channel_is_stable(T.e[0]), 1); /* idle: stable at once */
    is_int(quay_channel_resume(T.e[0]), 0);
    tn_fini(&T);
}

/* Quiesced before anything is sent: nothing leaves; self traffic and
 * arrivals still work; resume sends it all. */
static void t_hold_back(void)
{
    setup(2, QUAY_FLOW_ACKNACK);
    uint8_t sb[4][8], rb[4][8], me[8] = {9}, mr[8];
    quay_req *s[4], *r[4], *ss, *sr;
    is_int(quay_channel_quiesce(T.e[0]), 0);
    for (int i = 0; i < 4; i++) {
        memset(sb[i], i + 1, 8);
        is_int(quay_irecv(T.e[1], T.world[1], rb[i], 8, 0, 1, &r[i]), 0);
        is_int(quay_isend(T.e[0], T.world[0], sb[i], 8, 1, 1, QUAY_SEND_STANDARD, &s[i]), 0);
    }
    is_int(quay_isend(T.e[0], T.world[0], me, 8, 0, 2, QUAY_SEND_STANDARD, &ss), 0);
    is_int(quay_irecv(T.e[0], T.world[0], mr, 8, 0, 2, &sr), 0);
    settle();
    is_int(next_seq(0, 1), 0);
    ok(!quay_req_test(r[0], NULL));
    ok(tn_done(sr, NULL) && mr[0] == 9); /* self traffic never stops */
    is_int(quay_channel_is_stable(T.e[0]), 1);
    is_int(quay_channel_resume(T.e[0]), 0);
    settle();
    for (int i = 0; i < 4; i++) {
        ok_msg(tn_done(r[i], NULL) && rb[i][0] == i + 1, "message %d after resume", i);
        quay_req_free(T.e[0], s[i]);
        quay_req_free(T.e[1], r[i]);
    }
    quay_req_free(T.e[0], ss);
    quay_req_free(T.e[0], sr);
    tn_fini(&T);
}

/* Quiesced with packets lost in flight: it retransmits (C2), is not stable
 * until they are acknowledged (C4), hands out no new sequence number. */
static void t_drain(void)
{
    setup(2, QUAY_FLOW_ACKNACK);
    uint8_t sb[6][8] = {{1}, {2}, {3}, {4}, {5}, {6}}, rb[6][8];
    quay_req *s[6], *r[6];
    for (int i = 0; i < 6; i++) {
        is_int(quay_irecv(T.e[1], T.world[1], rb[i], 8, 0, 1, &r[i]), 0);
        is_int(quay_isend(T.e[0], T.world[0], sb[i], 8, 1, 1, QUAY_SEND_STANDARD, &s[i]), 0);
    }
    quay_action a;
    int sent = 0;
    while (sent < 3 && quay_next_action(T.e[0], &a) == 1)
        if (a.kind == QUAY_ACT_SEND) {
            quay_on_op_done(T.e[0], a.token, 0); /* and lost */
            sent++;
        }
    is_int(quay_channel_quiesce(T.e[0]), 0);
    is_int(quay_channel_is_stable(T.e[0]), 0); /* 3 unacknowledged */
    uint32_t n0 = next_seq(0, 1);
    is_int(n0, 3);
    settle();
    is_int(next_seq(0, 1), n0);
    is_int(quay_channel_is_stable(T.e[0]), 1);
    for (int i = 0; i < 3; i++)
        ok_msg(tn_done(r[i], NULL) && rb[i][0] == i + 1, "message %d retransmitted", i);
    ok(!quay_req_test(r[3], NULL));
    quay_channel_resume(T.e[0]);
    settle();
    for (int i = 0; i < 6; i++) {
        ok_msg(tn_done(r[i], NULL) && rb[i][0] == i + 1, "message %d", i);
        quay_req_free(T.e[0], s[i]);
        quay_req_free(T.e[1], r[i]);
    }
    tn_fini(&T);
}

/* ---- seeded switches -------------------------------------------------------- */

#define NR 3
#define PER 40 /* messages per ordered pair */

static uint64_t rng;

static uint32_t rnd(uint32_t n)
{
    return tn_rnd(&rng, n);
}

static void net_step(int loss_pct)
{
    tn_lossy_step(&T, &rng, loss_pct, 0);
}

static int seeded_run(uint64_t seed, uint32_t flow, int *switches_out)
{
    uint8_t sb[NR][NR][PER][4], rb[NR][NR][PER][4];
    quay_req *s[NR][NR][PER], *r[NR][NR][PER];
    int sent[NR][NR] = {{0}}, switches = 0, fail = 0;
    rng = seed * 0x9e3779b97f4a7c15ull | 1;
    setup(NR, flow);
    for (int a = 0; a < NR; a++)
        for (int b = 0; b < NR; b++)
            if (a != b)
                for (int k = 0; k < PER; k++) {
                    memset(rb[a][b][k], 0, 4);
                    if (quay_irecv(T.e[b], T.world[b], rb[a][b][k], 4, a, 7, &r[a][b][k]) != 0)
                        fail = 1;
                }
    /* Each rank in turn: run, quiesce, drain until stable (checking no new
     * sequence number is handed out), resume. Traffic keeps being posted
     * all along, also while quiesced. */
    int q = -1;
    uint32_t frozen[NR] = {0};
    for (long step = 0; step < 400000 && !fail; step++) {
        int a = (int)rnd(NR), b = (int)rnd(NR);
        if (a != b && sent[a][b] < PER && rnd(4) == 0) {
            int k = sent[a][b]++;
            memcpy(sb[a][b][k], &k, 4);
            sb[a][b][k][3] = (uint8_t)(a * 16 + b);
            if (quay_isend(T.e[a], T.world[a], sb[a][b][k], 4, b, 7, QUAY_SEND_STANDARD,
                           &s[a][b][k]) != 0)
                fail = 2;
        }
        net_step(10);
        net_step(10);
        /* Time moves 100 ns per step (a round trip is a few steps); when
         * the network is empty it jumps to the next deadline. */
        now_ns += 100;
        if (T.nq == 0)
            tick();
        else if (rnd(8) == 0)
            for (int x = 0; x < NR; x++)
                quay_on_time(T.e[x], now_ns);
        if (q < 0 && rnd(50) == 0) {
            q = (int)rnd(NR);
            quay_channel_quiesce(T.e[q]);
            for (int p = 0; p < NR; p++)
                frozen[p] = p == q ? 0 : next_seq(q, p);
        } else if (q >= 0) {
            for (int p = 0; p < NR; p++)
                if (p != q && next_seq(q, p) != frozen[p])
                    fail = 3; /* something new left a quiesced engine */
            if (quay_channel_is_stable(T.e[q]) == 1) {
                quay_channel_resume(T.e[q]);
                q = -1;
                switches++;
            }
        }
        int all = 1;
        for (int x = 0; x < NR; x++)
            for (int y = 0; y < NR; y++)
                all &= x == y || sent[x][y] == PER;
        if (all && switches >= 50 && q < 0)
            break;
    }
    if (q >= 0)
        quay_channel_resume(T.e[q]);
    for (int i = 0; i < 5000 && !fail; i++) {
        tn_pump(&T);
        if (!tick())
            break;
    }
    /* Every message exactly once, in order, every request complete. */
    for (int a = 0; a < NR && !fail; a++)
        for (int b = 0; b < NR && !fail; b++) {
            if (a == b)
                continue;
            if (sent[a][b] != PER)
                fail = 4;
            for (int k = 0; k < sent[a][b] && !fail; k++) {
                int got;
                memcpy(&got, rb[a][b][k], 4);
                got &= 0xFFFFFF;
                if (!tn_done(r[a][b][k], NULL) || !tn_done(s[a][b][k], NULL) ||
                    (got != k) || rb[a][b][k][3] != a * 16 + b)
                    fail = 5;
            }
        }
    for (int a = 0; a < NR; a++)
        for (int b = 0; b < NR; b++)
            if (a != b)
                for (int k = 0; k < PER; k++) {
                    quay_req_free(T.e[b], r[a][b][k]);
                    if (k < sent[a][b])
                        quay_req_free(T.e[a], s[a][b][k]);
                }
    for (int x = 0; x < NR && !fail; x++) {
        quay_stats st;
        quay_engine_stats(T.e[x], &st);
        if (st.peers_failed || st.pkts_rejected)
            fail = 6;
    }
    tn_fini(&T);
    *switches_out = switches;
    return fail;
}

static uint32_t flow_of_run;

static void t_seeded(void)
{
    int worst = 1 << 30, failed = 0;
    uint64_t bad_seed = 0;
    for (uint64_t seed = 1; seed <= 100 && !failed; seed++) {
        int sw = 0;
        int rc = seeded_run(seed, flow_of_run, &sw);
        if (rc) {
            failed = rc;
            bad_seed = seed;
        }
        if (sw < worst)
            worst = sw;
    }
    ok_msg(!failed, "100 seeds: every message once, in order, complete (seed %llu: code %d)",
           (unsigned long long)bad_seed, failed);
    ok_msg(worst >= 50, "at least 50 quiesce/stable/resume switches per seed (fewest %d)", worst);
}

int main(void)
{
    subtest("API and trivial stability", t_api);
    subtest("quiesced: nothing new leaves, resume sends it", t_hold_back);
    subtest("quiesced: retransmits until stable", t_drain);
    flow_of_run = QUAY_FLOW_ACKNACK;
    subtest("ACK/NACK: 100 seeds x 50+ switches, 10 % loss, 10 % dup", t_seeded);
    flow_of_run = QUAY_FLOW_CREDIT;
    subtest("credits: 100 seeds x 50+ switches, 10 % loss, 10 % dup", t_seeded);
    return done_testing();
}
