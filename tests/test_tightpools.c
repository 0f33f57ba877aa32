/*
 * test_tightpools.c — progress with pools at their smallest: the engine's
 * own bounded resources (outgoing descriptors, the control ring, message
 * descriptors) must not lock each other. Each case is a shape fuzz_sim
 * found livelocking (fuzz/crashes/README.md), reduced to one engine or
 * two on the deterministic test network.
 */
#include <string.h>

#include "harness.h"
#include "testnet.h"

static testnet T;

static void check_clean(void)
{
    tn_check_clean(&T);
}

/* Self-sends that cannot be delivered yet (no descriptor for an
 * unexpected message) wait in the loopback. Only the first may hold an
 * outgoing descriptor: were each to take one, they would leave none for
 * a packet to another rank, which may be the one that unblocks them. */
static void t_loopback_one_descriptor(void)
{
    enum { NSELF = 6 };
    quay_config c[2];
    for (int r = 0; r < 2; r++) {
        tn_config(&c[r], r, 2);
        c[r].max_out = 3;
        c[r].max_unexpected = 1;
    }
    if (!is_int(tn_init_each(&T, 2, c, 1), 0))
        return;
    static uint8_t sb[NSELF][8], rb[NSELF][8], pb[8], qb[8];
    quay_req *s[NSELF], *r[NSELF], *ps, *pr;
    for (int i = 0; i < NSELF; i++) {
        tn_fill(sb[i], sizeof sb[i], i);
        is_int(quay_isend(T.e[0], T.world[0], sb[i], 8, 0, i, QUAY_SEND_STANDARD, &s[i]), 0);
    }
    tn_fill(pb, sizeof pb, 99);
    is_int(quay_isend(T.e[0], T.world[0], pb, 8, 1, 7, QUAY_SEND_STANDARD, &ps), 0);
    tn_pull(&T, 0);
    quay_stats st;
    quay_engine_stats(T.e[0], &st);
    /* One self-send unexpected (the only descriptor), one waiting in the
     * loopback with its outgoing descriptor, the rest not yet built. */
    is_int(st.umsgs_in_use, 1);
    ok_msg(st.outs_in_use <= 2, "self traffic holds %u of 3 descriptors", st.outs_in_use);
    ok_msg(tn_find(&T, QUAY_PKT_EAGER) >= 0, "the send to rank 1 left");

    is_int(quay_irecv(T.e[1], T.world[1], qb, sizeof qb, 0, 7, &pr), 0);
    tn_pump(&T);
    ok(tn_good(pr, 8) && memcmp(pb, qb, 8) == 0);
    ok(tn_good(ps, 8));
    for (int i = 0; i < NSELF; i++) {
        is_int(quay_irecv(T.e[0], T.world[0], rb[i], sizeof rb[i], 0, i, &r[i]), 0);
        tn_pump(&T);
    }
    for (int i = 0; i < NSELF; i++) {
        ok_msg(tn_good(s[i], 8) && tn_good(r[i], 8) && memcmp(sb[i], rb[i], 8) == 0,
               "self-send %d delivered", i);
        quay_req_free(T.e[0], s[i]);
        quay_req_free(T.e[0], r[i]);
    }
    quay_req_free(T.e[0], ps);
    quay_req_free(T.e[1], pr);
    tn_pump(&T);
    check_clean();
    tn_fini(&T);
}

/* A packet in its turn that cannot be processed yet (a synchronous send
 * whose receive is posted, but no control slot is free for the reply)
 * is kept and retried, not refused: a refusal would leave it, and every
 * later packet of that peer, in the sender's retransmission store. */
static void t_in_turn_packet_held(void)
{
    quay_config c[2];
    for (int r = 0; r < 2; r++)
        tn_config(&c[r], r, 2);
    c[1].max_ctrl = 1;
    if (!is_int(tn_init_each(&T, 2, c, 1), 0))
        return;
    static uint8_t sb[2][8], rb[2][8];
    quay_req *s[2], *r[2];
    for (int i = 0; i < 2; i++) {
        tn_fill(sb[i], 8, 10 + i);
        is_int(quay_irecv(T.e[1], T.world[1], rb[i], 8, 0, i, &r[i]), 0);
        is_int(quay_isend(T.e[0], T.world[0], sb[i], 8, 1, i, QUAY_SEND_SYNC, &s[i]), 0);
    }
    tn_pull(&T, 0);
    if (!is_int(T.nq, 2))
        return;
    /* The first takes the only control slot (its ACK, not yet pulled);
     * the second finds none. */
    is_int(tn_deliver(&T, 0), 0);
    is_int(tn_deliver(&T, 0), 0);
    is_int(T.nq, 0);
    ok(tn_good(r[0], 8));
    ok(!quay_req_test(r[1], NULL)); /* kept, not matched yet */
    quay_stats st;
    quay_engine_stats(T.e[1], &st);
    is_int(st.pkts_deferred, 0);
    is_int(st.umsgs_in_use, 1);
    tn_pump(&T); /* the first ACK leaves; the kept packet goes on */
    for (int i = 0; i < 2; i++) {
        ok_msg(tn_good(s[i], 8) && tn_good(r[i], 8) && memcmp(sb[i], rb[i], 8) == 0,
               "synchronous send %d completed both ends", i);
        quay_req_free(T.e[0], s[i]);
        quay_req_free(T.e[1], r[i]);
    }
    check_clean();
    tn_fini(&T);
}

int main(void)
{
    subtest("loopback holds one outgoing descriptor", t_loopback_one_descriptor);
    subtest("a packet in its turn is kept, not refused", t_in_turn_packet_held);
    return done_testing();
}
