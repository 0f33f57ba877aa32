/*
 * test_ackn.c — the Modified ACK/NACK channel state machine
 * (src/flowctl/ackn.{h,c}, docs/flowctl.md).
 *
 *   (a) every state and transition of both sides: NORMAL / NOT_TO_SEND,
 *       NORMAL / NOT_TO_RECEIVE, ACK coalescing, stale ACK/NACK, ACK or
 *       NACK beyond what was sent, window limit, timer arm / disarm,
 *       backoff doubling capped at rto_max, retry limit -> failed, all
 *       across the 2^32 wrap as well;
 *   (b) the PM paper's own example (Fig. 4) step by step, and the cases
 *       PM never had: lost NACK, lost ACK, duplicated and reordered NACK;
 *   (c) a seeded simulation, virtual time only: two endpoints exchanging
 *       messages both ways over links that lose, duplicate, reorder and
 *       delay data and ACK/NACK packets, with small randomly busy receive
 *       buffer pools (refusals -> NACK), ACKs piggybacked on data the way
 *       the engine will carry them. Every message is delivered exactly
 *       once and in order, nothing is freed before the receiver accepted
 *       it, every sender ends with everything acknowledged; and over links
 *       that go dead, each sender with unacknowledged messages declares
 *       failure after exactly retry_limit + 1 expiries, at the time the
 *       backoff series predicts.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "flowctl/ackn.h"
#include "harness.h"

/* ---- helpers ------------------------------------------------------------ */

static const fc_params P = {
    .rto_init_ns = 1000, .rto_max_ns = 8000, .retry_limit = 3, .window = 4};

static int same_tx(const fc_tx *a, const fc_tx *b)
{
    return a->next == b->next && a->una == b->una && a->resend == b->resend &&
           a->retries == b->retries && a->rto == b->rto &&
           a->deadline == b->deadline && a->state == b->state &&
           a->failed == b->failed;
}

static int same_rx(const fc_rx *a, const fc_rx *b)
{
    return a->expected == b->expected && a->refused == b->refused &&
           a->state == b->state && a->ack_owed == b->ack_owed &&
           a->nack_owed == b->nack_owed;
}

/* Drain the resend pointer; store up to cap seqs; return how many. */
static int drain(fc_tx *t, uint32_t *out, int cap)
{
    int n = 0;
    uint32_t s;
    while (fc_tx_resend_due(t, &s)) {
        if (n < cap)
            out[n] = s;
        n++;
    }
    return n;
}

/* ---- (a) parameters ------------------------------------------------------ */

static void test_params(void)
{
    fc_params p = P;
    ok(fc_params_valid(&p));
    ok(!fc_params_valid(NULL));
    p.rto_init_ns = 0;
    ok(!fc_params_valid(&p));
    p = P;
    p.rto_max_ns = p.rto_init_ns - 1;
    ok(!fc_params_valid(&p));
    p = P;
    p.window = 0;
    ok(!fc_params_valid(&p));
    p.window = FC_WINDOW_MAX;
    ok(fc_params_valid(&p));
    p.window = FC_WINDOW_MAX + 1;
    ok(!fc_params_valid(&p));
    p = P;
    p.retry_limit = 0;
    ok(fc_params_valid(&p));
}

/* ---- (a) sender ------------------------------------------------------------ */

static void test_tx_init_assign(void)
{
    fc_tx t;
    uint32_t s;
    fc_tx_init(&t, &P, 100);
    is_int(t.next, 100);
    is_int(t.una, 100);
    is_int(t.resend, 100);
    is_int(t.state, FC_TX_NORMAL);
    is_int(t.failed, 0);
    is_size(fc_tx_deadline(&t), UINT64_MAX);
    is_int(fc_tx_unacked(&t), 0);
    ok(fc_tx_can_send_new(&t, &P));
    ok(!fc_tx_resend_due(&t, &s));
    ok(fc_tx_on_time(&t, &P, UINT64_MAX - 1) == 0); /* idle: never fires */

    /* The first message arms the timer; the second leaves it alone. */
    is_int(fc_tx_assign(&t, &P, 50), 100);
    is_size(fc_tx_deadline(&t), 50 + 1000);
    is_int(t.next, 101);
    is_int(t.resend, 101);
    is_int(fc_tx_assign(&t, &P, 70), 101);
    is_size(fc_tx_deadline(&t), 1050);
    is_int(fc_tx_unacked(&t), 2);
    ok(!fc_tx_resend_due(&t, &s)); /* new messages are not retransmissions */
}

static void test_tx_window(void)
{
    fc_tx t;
    uint32_t ff, ft;
    fc_tx_init(&t, &P, 7);
    for (int i = 0; i < 4; i++) {
        ok(fc_tx_can_send_new(&t, &P));
        fc_tx_assign(&t, &P, 0);
    }
    ok_msg(!fc_tx_can_send_new(&t, &P), "window of 4 full");
    is_int(fc_tx_on_ack(&t, &P, 8, 10, &ff, &ft), 0);
    ok_msg(fc_tx_can_send_new(&t, &P), "one acked: one more may go");
    fc_tx_assign(&t, &P, 10);
    ok(!fc_tx_can_send_new(&t, &P));

    fc_params w1 = P;
    w1.window = 1;
    fc_tx_init(&t, &w1, 0);
    fc_tx_assign(&t, &w1, 0);
    ok_msg(!fc_tx_can_send_new(&t, &w1), "window 1: stop and wait");
    is_int(fc_tx_on_ack(&t, &w1, 1, 5, &ff, &ft), 0);
    ok(fc_tx_can_send_new(&t, &w1));
}

static void test_tx_ack(void)
{
    fc_tx t, before;
    uint32_t ff = 0, ft = 0;
    fc_params p = P;
    p.window = 16;
    fc_tx_init(&t, &p, 10);
    for (int i = 0; i < 6; i++)
        fc_tx_assign(&t, &p, 0); /* 10..15, deadline 1000 */

    /* Cumulative ACK: frees [una, ack), re-arms from now. */
    is_int(fc_tx_on_ack(&t, &p, 13, 400, &ff, &ft), 0);
    is_int(ff, 10);
    is_int(ft, 13);
    is_int(t.una, 13);
    is_size(fc_tx_deadline(&t), 400 + 1000);

    /* Stale (behind una) and repeated (== una) ACKs change nothing. */
    before = t;
    is_int(fc_tx_on_ack(&t, &p, 11, 500, &ff, &ft), 0);
    ok(ff == ft);
    ok(same_tx(&t, &before));
    is_int(fc_tx_on_ack(&t, &p, 13, 500, &ff, &ft), 0);
    ok(ff == ft);
    ok(same_tx(&t, &before));

    /* An ACK for what was never sent is rejected, nothing changes. */
    is_int(fc_tx_on_ack(&t, &p, 17, 500, &ff, &ft), FC_ESTATE);
    ok(ff == ft);
    ok(same_tx(&t, &before));

    /* Everything acknowledged: timer off. */
    is_int(fc_tx_on_ack(&t, &p, 16, 600, &ff, &ft), 0);
    is_int(ff, 13);
    is_int(ft, 16);
    is_size(fc_tx_deadline(&t), UINT64_MAX);
    is_int(fc_tx_unacked(&t), 0);
    is_int(fc_tx_on_time(&t, &p, 1u << 30), 0);
    /* ACK == next on an idle channel is repeated, not beyond. */
    is_int(fc_tx_on_ack(&t, &p, 16, 700, &ff, &ft), 0);
    is_int(fc_tx_on_ack(&t, &p, 17, 700, &ff, &ft), FC_ESTATE);

    /* Next message re-arms from its own send time. */
    fc_tx_assign(&t, &p, 5000);
    is_size(fc_tx_deadline(&t), 6000);
}

static void test_tx_nack(void)
{
    fc_tx t, before;
    uint32_t ff = 0, ft = 0, seqs[8];
    fc_tx_init(&t, &P, 100);
    for (int i = 0; i < 4; i++)
        fc_tx_assign(&t, &P, 0); /* 100..103 */

    /* NORMAL --NACK(101)--> NOT_TO_SEND: free 100, resend 101..103. */
    is_int(fc_tx_on_nack(&t, &P, 101, 200, &ff, &ft), 0);
    is_int(ff, 100);
    is_int(ft, 101);
    is_int(t.state, FC_TX_NOT_TO_SEND);
    is_int(t.una, 101);
    is_int(t.resend, 101);
    is_size(fc_tx_deadline(&t), 1200);
    ok_msg(!fc_tx_can_send_new(&t, &P), "NOT_TO_SEND: nothing new");
    if (is_int(drain(&t, seqs, 8), 3)) {
        is_int(seqs[0], 101);
        is_int(seqs[1], 102);
        is_int(seqs[2], 103);
    }
    ok_msg(!fc_tx_can_send_new(&t, &P), "still NOT_TO_SEND after resending");

    /* NOT_TO_SEND --NACK(101) again--> retransmit 101..103 again. */
    is_int(fc_tx_on_nack(&t, &P, 101, 300, &ff, &ft), 0);
    ok(ff == ft);
    is_int(t.state, FC_TX_NOT_TO_SEND);
    is_int(t.resend, 101);
    is_int(drain(&t, seqs, 8), 3);

    /* NOT_TO_SEND --ACK(101), i.e. nothing new--> stays. */
    before = t;
    is_int(fc_tx_on_ack(&t, &P, 101, 400, &ff, &ft), 0);
    ok(same_tx(&t, &before));

    /* NOT_TO_SEND --NACK(102)--> 101 was accepted, 102 refused. */
    is_int(fc_tx_on_nack(&t, &P, 102, 450, &ff, &ft), 0);
    is_int(ff, 101);
    is_int(ft, 102);
    is_int(t.state, FC_TX_NOT_TO_SEND);
    is_int(t.resend, 102);

    /* Resend only 102, then ACK(103): back to NORMAL; 103 still has to be
     * retransmitted (the receiver discarded it) before anything new. */
    ok(fc_tx_resend_due(&t, &seqs[0]) && seqs[0] == 102);
    is_int(fc_tx_on_ack(&t, &P, 103, 500, &ff, &ft), 0);
    is_int(ff, 102);
    is_int(ft, 103);
    is_int(t.state, FC_TX_NORMAL);
    ok_msg(!fc_tx_can_send_new(&t, &P), "retransmission of 103 first");
    if (is_int(drain(&t, seqs, 8), 1))
        is_int(seqs[0], 103);
    ok(fc_tx_can_send_new(&t, &P));

    /* An ACK past the resend pointer pulls it along: no retransmission of
     * what is known received. */
    fc_tx_assign(&t, &P, 600); /* 104 */
    is_int(fc_tx_on_nack(&t, &P, 103, 610, &ff, &ft), 0);
    is_int(t.resend, 103);
    is_int(fc_tx_on_ack(&t, &P, 105, 620, &ff, &ft), 0);
    is_int(t.resend, 105);
    is_int(t.state, FC_TX_NORMAL);
    ok(!fc_tx_resend_due(&t, &seqs[0]));
    is_size(fc_tx_deadline(&t), UINT64_MAX);

    /* Stale NACK (k < una): ignored. NACK at or beyond next: rejected. */
    fc_tx_assign(&t, &P, 700); /* 105 */
    before = t;
    is_int(fc_tx_on_nack(&t, &P, 103, 710, &ff, &ft), 0);
    ok(ff == ft);
    ok(same_tx(&t, &before));
    is_int(fc_tx_on_nack(&t, &P, 106, 710, &ff, &ft), FC_ESTATE);
    ok(same_tx(&t, &before));
    is_int(fc_tx_on_nack(&t, &P, 200, 710, &ff, &ft), FC_ESTATE);
    ok(same_tx(&t, &before));
    is_int(fc_tx_on_ack(&t, &P, 106, 720, &ff, &ft), 0);
    is_int(fc_tx_on_nack(&t, &P, 106, 730, &ff, &ft), FC_ESTATE);
    ok_msg(t.state == FC_TX_NORMAL, "NACK on an idle channel rejected");
}

static void test_tx_timer(void)
{
    fc_tx t;
    uint32_t ff, ft, seqs[8];
    fc_tx_init(&t, &P, 1);
    fc_tx_assign(&t, &P, 0);
    fc_tx_assign(&t, &P, 0); /* 1, 2: deadline 1000 */

    is_int(fc_tx_on_time(&t, &P, 999), 0);
    is_int(t.retries, 0);
    /* Expiry 1: go back N, rto 1000 -> 2000. */
    is_int(fc_tx_on_time(&t, &P, 1000), 1);
    is_int(t.retries, 1);
    is_size(t.rto, 2000);
    is_size(fc_tx_deadline(&t), 3000);
    is_int(t.state, FC_TX_NORMAL);
    ok_msg(!fc_tx_can_send_new(&t, &P), "go-back-N pending: nothing new");
    if (is_int(drain(&t, seqs, 8), 2)) {
        is_int(seqs[0], 1);
        is_int(seqs[1], 2);
    }
    ok(fc_tx_can_send_new(&t, &P));
    /* Expiries 2, 3: 4000, 8000 (= rto_max). */
    is_int(fc_tx_on_time(&t, &P, 3000), 1);
    is_size(t.rto, 4000);
    is_size(fc_tx_deadline(&t), 7000);
    is_int(fc_tx_on_time(&t, &P, 7000), 1);
    is_size(t.rto, 8000);
    is_size(fc_tx_deadline(&t), 15000);
    is_int(t.retries, 3);
    /* Expiry 4 = retry_limit + 1: failed, reported once. */
    is_int(fc_tx_on_time(&t, &P, 15000), FC_EPEER);
    is_int(t.failed, 1);
    is_size(fc_tx_deadline(&t), UINT64_MAX);
    ok(!fc_tx_can_send_new(&t, &P));
    ok(!fc_tx_resend_due(&t, &seqs[0]));
    is_int(fc_tx_on_time(&t, &P, 99999), 0);
    is_int(fc_tx_on_ack(&t, &P, 2, 99999, &ff, &ft), FC_EPEER);
    ok(ff == ft);
    is_int(fc_tx_on_nack(&t, &P, 1, 99999, &ff, &ft), FC_EPEER);
    is_int(t.una, 1);
}

static void test_tx_backoff(void)
{
    fc_tx t;
    uint32_t ff, ft;
    fc_params p = P;
    p.retry_limit = 10;
    fc_tx_init(&t, &p, 0);
    fc_tx_assign(&t, &p, 0);
    fc_tx_assign(&t, &p, 0);
    fc_tx_assign(&t, &p, 0);
    uint64_t now = 1000, want[] = {2000, 4000, 8000, 8000, 8000};
    for (int i = 0; i < 5; i++) {
        is_int(fc_tx_on_time(&t, &p, now), 1);
        is_size(t.rto, want[i]);
        is_size(fc_tx_deadline(&t), now + want[i]);
        now += want[i];
    }
    /* A late call re-arms from when it ran, not from the old deadline. */
    is_int(fc_tx_on_time(&t, &p, now + 12345), 1);
    is_size(fc_tx_deadline(&t), now + 12345 + 8000);
    is_int(t.retries, 6);

    /* Progress resets retries; the backed-off timeout stays until a
     * message sent once is timed again (Karn). */
    ok(t.backed_off);
    is_int(fc_tx_on_ack(&t, &p, 1, 50000, &ff, &ft), 0);
    is_int(t.retries, 0);
    is_size(t.rto, 8000);
    is_size(fc_tx_deadline(&t), 58000);
    /* An RTT sample ends it: rto_base (here rto_init) from then on. */
    fc_tx_rtt_sample(&t, &p, 100);
    ok(!t.backed_off);
    is_size(t.rto, 1000);
    is_int(fc_tx_on_ack(&t, &p, 1, 50000, &ff, &ft), 0); /* stale: no change */
    is_size(fc_tx_deadline(&t), 58000);
    is_int(fc_tx_on_time(&t, &p, 58000), 1);
    is_size(t.rto, 2000);
    /* A NACK resets retries too (the peer answered). */
    is_int(fc_tx_on_nack(&t, &p, 1, 59000, &ff, &ft), 0);
    is_int(t.retries, 0);
    is_size(t.rto, 2000); /* backed off again, no sample since */
    fc_tx_rtt_sample(&t, &p, 100);
    is_int(fc_tx_on_nack(&t, &p, 1, 52000, &ff, &ft), 0);
    is_size(t.rto, 1000);
    is_size(fc_tx_deadline(&t), 53000);
    /* The timer in NOT_TO_SEND: go back to una, state kept. */
    is_int(fc_tx_on_time(&t, &p, 53000), 1);
    is_int(t.state, FC_TX_NOT_TO_SEND);
    is_int(t.resend, 1);

    /* Odd rto_max: the cap is exact, no overflow. */
    fc_params q = {.rto_init_ns = 3, .rto_max_ns = 7, .retry_limit = 9,
                   .window = 2};
    fc_tx_init(&t, &q, 0);
    fc_tx_assign(&t, &q, 0);
    is_int(fc_tx_on_time(&t, &q, 3), 1);
    is_size(t.rto, 6);
    is_int(fc_tx_on_time(&t, &q, 9), 1);
    is_size(t.rto, 7);
    /* Huge rto_max: doubling saturates at the cap, never wraps. */
    fc_params h = {.rto_init_ns = UINT64_MAX / 3, .rto_max_ns = UINT64_MAX - 5,
                   .retry_limit = 9, .window = 2};
    fc_tx_init(&t, &h, 0);
    fc_tx_assign(&t, &h, 0);
    is_size(fc_tx_deadline(&t), UINT64_MAX / 3);
    is_int(fc_tx_on_time(&t, &h, UINT64_MAX / 3), 1);
    is_size(t.rto, 2 * (UINT64_MAX / 3));
    is_int(fc_tx_on_time(&t, &h, UINT64_MAX - 1), 1);
    is_size(t.rto, UINT64_MAX - 5);
    ok_msg(fc_tx_deadline(&t) == UINT64_MAX - 1,
           "deadline saturates below 'off'");
}

static void test_tx_retry_limit_zero(void)
{
    fc_tx t;
    fc_params p = P;
    p.retry_limit = 0;
    fc_tx_init(&t, &p, 0);
    fc_tx_assign(&t, &p, 10);
    is_int(fc_tx_on_time(&t, &p, 1010), FC_EPEER);
    ok(t.failed);
}

/* A live peer (any frame from it) keeps the channel up however many
 * expiries it takes; a peer that talks but never acknowledges does not. */
static void test_tx_heard_and_stuck(void)
{
    fc_tx t;
    uint64_t now = 0;
    uint32_t i, seqs[4];
    int rc = 0;
    fc_tx_init(&t, &P, 0);
    fc_tx_assign(&t, &P, 0);
    /* retry_limit 3: without sign of life, expiry 4 fails it. With a
     * frame heard after every expiry, it survives up to
     * FC_STUCK_FACTOR * retry_limit = 12 expiries without progress. */
    for (i = 1; i <= FC_STUCK_FACTOR * P.retry_limit; i++) {
        now = fc_tx_deadline(&t);
        rc = fc_tx_on_time(&t, &P, now);
        if (rc != 1)
            break;
        drain(&t, seqs, 4);
        fc_tx_heard(&t);
        if (t.retries != 0)
            break;
    }
    is_int(rc, 1);
    is_int(t.stuck, FC_STUCK_FACTOR * P.retry_limit);
    is_int(t.failed, 0);
    now = fc_tx_deadline(&t);
    is_int(fc_tx_on_time(&t, &P, now), FC_EPEER);
    is_int(t.failed, 1);

    /* A NACK is progress for this bound: the receiver is alive and says
     * why it does not take the message. */
    fc_tx_init(&t, &P, 0);
    fc_tx_assign(&t, &P, 0);
    fc_tx_assign(&t, &P, 0);
    for (i = 0; i < 40; i++) {
        uint32_t ff, ft;
        now = fc_tx_deadline(&t);
        if (fc_tx_on_time(&t, &P, now) != 1)
            break;
        drain(&t, seqs, 4);
        if (fc_tx_on_nack(&t, &P, 0, now, &ff, &ft) != 0)
            break;
        drain(&t, seqs, 4);
    }
    is_int(i, 40);
    is_int(t.failed, 0);
    is_int(t.stuck, 0);
}

/* RTT samples (RFC 6298 smoothing) set the timeout used after progress,
 * clamped to [rto_init, rto_max]. */
static void test_tx_rtt(void)
{
    fc_tx t;
    uint32_t ff, ft;
    fc_tx_init(&t, &P, 0);
    is_int(t.has_rtt, 0);
    is_size(t.rto_base, 1000);
    fc_tx_rtt_sample(&t, &P, 400); /* srtt 400, rttvar 200: 1200 */
    is_size(t.srtt, 400);
    is_size(t.rttvar, 200);
    is_size(t.rto_base, 1200);
    fc_tx_rtt_sample(&t, &P, 400); /* rttvar 150, srtt 400: 1000 */
    is_size(t.rttvar, 150);
    is_size(t.rto_base, 1000);
    fc_tx_rtt_sample(&t, &P, 100); /* rttvar (450+300)/4=187, srtt 362 */
    is_size(t.rto_base, 362 + 4 * 187);
    /* Below rto_init: clamped up. */
    fc_tx_init(&t, &P, 0);
    fc_tx_rtt_sample(&t, &P, 10);
    is_size(t.rto_base, 1000);
    /* Far above rto_max: clamped down, no overflow. */
    fc_tx_rtt_sample(&t, &P, UINT64_MAX);
    is_size(t.rto_base, 8000);
    /* Used from the next assignment / progress on. */
    fc_tx_assign(&t, &P, 100);
    is_size(fc_tx_deadline(&t), 8100);
    fc_tx_assign(&t, &P, 100);
    is_int(fc_tx_on_ack(&t, &P, 1, 200, &ff, &ft), 0);
    is_size(fc_tx_deadline(&t), 8200);
}

static void test_tx_wrap(void)
{
    fc_tx t, before;
    uint32_t ff, ft, s;
    fc_params p = P;
    p.window = 64;
    fc_tx_init(&t, &p, 0xFFFFFFF0u);
    for (uint32_t i = 0; i < 40; i++)
        is_int(fc_tx_assign(&t, &p, 0) == 0xFFFFFFF0u + i, 1);
    is_int(t.next, 0x18);
    is_int(fc_tx_unacked(&t), 40);
    is_int(fc_tx_on_ack(&t, &p, 5, 10, &ff, &ft), 0);
    is_int(ff, 0xFFFFFFF0u);
    is_int(ft, 5);
    is_int(fc_tx_unacked(&t), 19);
    before = t;
    is_int(fc_tx_on_ack(&t, &p, 0xFFFFFFFAu, 10, &ff, &ft), 0);
    ok_msg(same_tx(&t, &before), "ACK from before the wrap is stale");
    is_int(fc_tx_on_nack(&t, &p, 0xFFFFFFF8u, 10, &ff, &ft), 0);
    ok_msg(same_tx(&t, &before), "NACK from before the wrap is stale");
    is_int(fc_tx_on_ack(&t, &p, 0x19, 10, &ff, &ft), FC_ESTATE);
    is_int(fc_tx_on_nack(&t, &p, 0x18, 10, &ff, &ft), FC_ESTATE);
    is_int(fc_tx_on_nack(&t, &p, 0x10, 10, &ff, &ft), 0);
    is_int(t.resend, 0x10);
    is_int(fc_tx_on_time(&t, &p, 100000), 1);
    ok(fc_tx_resend_due(&t, &s) && s == 0x10);
    is_int(fc_tx_on_ack(&t, &p, 0x18, 10, &ff, &ft), 0);
    is_int(fc_tx_unacked(&t), 0);

    /* The window counts across the wrap. */
    fc_params w = P; /* window 4 */
    fc_tx_init(&t, &w, 0xFFFFFFFEu);
    for (int i = 0; i < 4; i++)
        fc_tx_assign(&t, &w, 0);
    is_int(t.next, 2);
    ok(!fc_tx_can_send_new(&t, &w));
    is_int(fc_tx_on_ack(&t, &w, 0xFFFFFFFFu, 0, &ff, &ft), 0);
    ok(fc_tx_can_send_new(&t, &w));
    is_int(fc_tx_on_nack(&t, &w, 0, 0, &ff, &ft), 0);
    is_int(ff, 0xFFFFFFFFu);
    is_int(ft, 0);
    if (is_int(drain(&t, (uint32_t[4]){0}, 0), 2))
        is_int(t.resend, 2);
}

/* ---- (a) receiver ------------------------------------------------------ */

static void test_rx_normal(void)
{
    fc_rx r, before;
    uint32_t a = 0, k = 0;
    fc_rx_init(&r, 100);
    is_int(r.state, FC_RX_NORMAL);
    ok(!fc_rx_owes(&r));
    ok_msg(!fc_rx_take_ack(&r, &a) && a == 100, "nothing owed, value valid");

    is_int(fc_rx_classify(&r, 100), FC_RX_DELIVER);
    ok_msg(!fc_rx_owes(&r), "classify DELIVER owes nothing by itself");
    is_int(fc_rx_accepted(&r, 100), 0);
    is_int(r.expected, 101);
    ok(r.ack_owed && fc_rx_owes(&r));

    /* Coalescing: three more accepted, one ACK covers all four. */
    for (uint32_t s = 101; s <= 103; s++) {
        is_int(fc_rx_classify(&r, s), FC_RX_DELIVER);
        is_int(fc_rx_accepted(&r, s), 0);
    }
    ok(fc_rx_take_ack(&r, &a));
    is_int(a, 104);
    ok(!fc_rx_take_ack(&r, &a));
    is_int(a, 104);
    ok(!fc_rx_take_nack(&r, &k));
    ok(!fc_rx_owes(&r));

    /* Duplicate: dropped, but owes an ACK (a lost ACK is re-sent). */
    is_int(fc_rx_classify(&r, 101), FC_RX_DUPLICATE);
    ok(fc_rx_take_ack(&r, &a) && a == 104);
    /* Ahead of expected (something before it was lost): silent drop. */
    before = r;
    is_int(fc_rx_classify(&r, 105), FC_RX_DISCARD);
    is_int(fc_rx_classify(&r, 104 + 1000), FC_RX_DISCARD);
    ok(same_rx(&r, &before));

    /* Handing back the wrong seq is the caller's bug. */
    is_int(fc_rx_accepted(&r, 105), FC_EINVAL);
    is_int(fc_rx_refused(&r, 103), FC_EINVAL);
    ok(same_rx(&r, &before));
}

static void test_rx_not_to_receive(void)
{
    fc_rx r, before;
    uint32_t a = 0, k = 0;
    fc_rx_init(&r, 1);
    fc_rx_classify(&r, 1);
    fc_rx_accepted(&r, 1); /* ACK(2) owed */

    /* NORMAL --no buffer for 2--> NOT_TO_RECEIVE, NACK(2) owed. */
    is_int(fc_rx_classify(&r, 2), FC_RX_DELIVER);
    is_int(fc_rx_refused(&r, 2), 0);
    is_int(r.state, FC_RX_NOT_TO_RECEIVE);
    is_int(r.refused, 2);
    is_int(r.expected, 2);
    ok(r.nack_owed && fc_rx_owes(&r));

    /* Others from this sender are discarded without reply. */
    before = r;
    is_int(fc_rx_classify(&r, 3), FC_RX_DISCARD);
    is_int(fc_rx_classify(&r, 4), FC_RX_DISCARD);
    ok(same_rx(&r, &before));
    is_int(fc_rx_accepted(&r, 3), FC_EINVAL);

    /* The NACK also carries the cumulative ACK: both cleared. */
    ok(fc_rx_take_nack(&r, &k));
    is_int(k, 2);
    ok(!fc_rx_take_ack(&r, &a));
    is_int(a, 2);
    ok(!fc_rx_take_nack(&r, &k));
    ok(!fc_rx_owes(&r));

    /* A duplicate of an accepted one still gets an ACK (beyond PM). */
    is_int(fc_rx_classify(&r, 1), FC_RX_DUPLICATE);
    is_int(r.state, FC_RX_NOT_TO_RECEIVE);
    ok(fc_rx_take_ack(&r, &a) && a == 2);

    /* Retransmitted 2 arrives while still short of buffers: NACK again. */
    is_int(fc_rx_classify(&r, 2), FC_RX_DELIVER);
    is_int(fc_rx_refused(&r, 2), 0);
    is_int(r.state, FC_RX_NOT_TO_RECEIVE);
    ok(r.nack_owed);

    /* It arrives again and is taken: NORMAL, pending NACK withdrawn. */
    is_int(fc_rx_classify(&r, 2), FC_RX_DELIVER);
    is_int(fc_rx_accepted(&r, 2), 0);
    is_int(r.state, FC_RX_NORMAL);
    ok(!fc_rx_take_nack(&r, &k));
    ok(fc_rx_take_ack(&r, &a) && a == 3);
    is_int(fc_rx_classify(&r, 3), FC_RX_DELIVER);
}

static void test_rx_wrap(void)
{
    fc_rx r;
    uint32_t a = 0, k = 0;
    fc_rx_init(&r, 0xFFFFFFFEu);
    for (uint32_t s = 0xFFFFFFFEu; s != 2; s++) {
        is_int(fc_rx_classify(&r, s), FC_RX_DELIVER);
        is_int(fc_rx_accepted(&r, s), 0);
    }
    ok(fc_rx_take_ack(&r, &a) && a == 2);
    is_int(fc_rx_classify(&r, 0xFFFFFFFFu), FC_RX_DUPLICATE);
    is_int(fc_rx_classify(&r, 0xFFFFFFF0u), FC_RX_DUPLICATE);
    is_int(fc_rx_classify(&r, 3), FC_RX_DISCARD);
    is_int(fc_rx_refused(&r, 2), 0);
    ok(fc_rx_take_nack(&r, &k) && k == 2);
    is_int(fc_rx_classify(&r, 0xFFFFFFFFu), FC_RX_DUPLICATE);
    ok(fc_rx_take_ack(&r, &a) && a == 2);
}

/* ---- (b) PM's example and the cases PM never had ------------------------ */

/* PM Fig. 4: sender sends 1,2,3,4; receiver accepts 1, has no buffer for
 * 2 -> NACK(2), ignores 3 and 4; sender on NACK(2) frees 1, resends 2,3,4
 * and stops new sends; receiver accepts 2 -> ACK(2) -> sender NORMAL; 3
 * and 4 accepted and ACKed. PM's Ack(2) is the cumulative value 3 here. */
static void test_pm_fig4(void)
{
    fc_params p = P;
    p.window = 8;
    fc_tx t;
    fc_rx r;
    uint32_t s, a, k, ff, ft, seqs[8];
    fc_tx_init(&t, &p, 1);
    fc_rx_init(&r, 1);

    for (uint32_t i = 1; i <= 4; i++)
        is_int(fc_tx_assign(&t, &p, 0), i);
    is_int(t.state, FC_TX_NORMAL);
    is_int(fc_tx_unacked(&t), 4);

    /* Receiver: 1 accepted, no buffer for 2, 3 and 4 ignored. */
    is_int(fc_rx_classify(&r, 1), FC_RX_DELIVER);
    is_int(fc_rx_accepted(&r, 1), 0);
    is_int(fc_rx_classify(&r, 2), FC_RX_DELIVER);
    is_int(fc_rx_refused(&r, 2), 0);
    is_int(r.state, FC_RX_NOT_TO_RECEIVE);
    is_int(fc_rx_classify(&r, 3), FC_RX_DISCARD);
    is_int(fc_rx_classify(&r, 4), FC_RX_DISCARD);
    ok(fc_rx_take_nack(&r, &k));
    is_int(k, 2);
    ok_msg(!fc_rx_take_ack(&r, &a) && a == 2,
           "the NACK is the only reply (its ack field: 2)");

    /* Sender on NACK(2): frees 1, resends 2,3,4, no new sends. */
    is_int(fc_tx_on_nack(&t, &p, k, 10, &ff, &ft), 0);
    is_int(ff, 1);
    is_int(ft, 2);
    is_int(t.state, FC_TX_NOT_TO_SEND);
    ok(!fc_tx_can_send_new(&t, &p));
    if (is_int(drain(&t, seqs, 8), 3)) {
        is_int(seqs[0], 2);
        is_int(seqs[1], 3);
        is_int(seqs[2], 4);
    }
    ok(!fc_tx_can_send_new(&t, &p));

    /* Receiver now has a buffer: accepts 2 -> ACK(2). */
    is_int(fc_rx_classify(&r, 2), FC_RX_DELIVER);
    is_int(fc_rx_accepted(&r, 2), 0);
    is_int(r.state, FC_RX_NORMAL);
    ok(!fc_rx_take_nack(&r, &k));
    ok(fc_rx_take_ack(&r, &a));
    is_int(a, 3);

    /* Sender: frees 2, back to NORMAL, may send new messages again. */
    is_int(fc_tx_on_ack(&t, &p, a, 20, &ff, &ft), 0);
    is_int(ff, 2);
    is_int(ft, 3);
    is_int(t.state, FC_TX_NORMAL);
    ok(fc_tx_can_send_new(&t, &p));

    /* 3 and 4 accepted; one coalesced ACK (PM's Ack(4)). */
    for (s = 3; s <= 4; s++) {
        is_int(fc_rx_classify(&r, s), FC_RX_DELIVER);
        is_int(fc_rx_accepted(&r, s), 0);
    }
    ok(fc_rx_take_ack(&r, &a));
    is_int(a, 5);
    is_int(fc_tx_on_ack(&t, &p, a, 30, &ff, &ft), 0);
    is_int(ff, 3);
    is_int(ft, 5);
    is_int(fc_tx_unacked(&t), 0);
    is_size(fc_tx_deadline(&t), UINT64_MAX);
}

/* The NACK is lost: the sender's timer goes back to una; the receiver,
 * still short of buffers, NACKs the retransmission again. */
static void test_lost_nack(void)
{
    fc_tx t;
    fc_rx r;
    uint32_t a, k, ff, ft, seqs[8];
    fc_tx_init(&t, &P, 1);
    fc_rx_init(&r, 1);
    for (int i = 0; i < 3; i++)
        fc_tx_assign(&t, &P, 0); /* 1,2,3; deadline 1000 */
    fc_rx_classify(&r, 1);
    fc_rx_accepted(&r, 1);
    fc_rx_take_ack(&r, &a);
    is_int(fc_tx_on_ack(&t, &P, a, 100, &ff, &ft), 0); /* deadline 1100 */
    fc_rx_classify(&r, 2);
    fc_rx_refused(&r, 2);
    ok(fc_rx_take_nack(&r, &k)); /* ... and the packet is lost */
    fc_rx_classify(&r, 3);

    is_int(t.state, FC_TX_NORMAL);
    is_int(fc_tx_on_time(&t, &P, 1100), 1);
    if (is_int(drain(&t, seqs, 8), 2))
        is_int(seqs[0], 2);
    is_int(fc_rx_classify(&r, 2), FC_RX_DELIVER);
    is_int(fc_rx_refused(&r, 2), 0);
    ok_msg(fc_rx_owes(&r) && r.nack_owed, "still short: NACK owed again");
    is_int(fc_rx_classify(&r, 3), FC_RX_DISCARD);
    ok(fc_rx_take_nack(&r, &k) && k == 2);
    is_int(fc_tx_on_nack(&t, &P, k, 1200, &ff, &ft), 0);
    is_int(t.state, FC_TX_NOT_TO_SEND);
    is_int(t.retries, 0);
    is_int(drain(&t, seqs, 8), 2);
    fc_rx_classify(&r, 2);
    fc_rx_accepted(&r, 2);
    fc_rx_classify(&r, 3);
    fc_rx_accepted(&r, 3);
    ok(fc_rx_take_ack(&r, &a) && a == 4);
    is_int(fc_tx_on_ack(&t, &P, a, 1300, &ff, &ft), 0);
    is_int(t.state, FC_TX_NORMAL);
    is_int(fc_tx_unacked(&t), 0);
}

/* The ACK is lost: the timer retransmits, the receiver sees a duplicate
 * and ACKs again. */
static void test_lost_ack(void)
{
    fc_tx t;
    fc_rx r;
    uint32_t a, s, ff, ft;
    fc_tx_init(&t, &P, 0xFFFFFFFFu);
    fc_rx_init(&r, 0xFFFFFFFFu);
    s = fc_tx_assign(&t, &P, 0);
    fc_rx_classify(&r, s);
    fc_rx_accepted(&r, s);
    ok(fc_rx_take_ack(&r, &a)); /* lost */
    is_int(fc_tx_on_time(&t, &P, 1000), 1);
    ok(fc_tx_resend_due(&t, &s) && s == 0xFFFFFFFFu);
    is_int(fc_rx_classify(&r, s), FC_RX_DUPLICATE);
    ok(fc_rx_take_ack(&r, &a) && a == 0);
    is_int(fc_tx_on_ack(&t, &P, a, 1500, &ff, &ft), 0);
    is_int(ff, 0xFFFFFFFFu);
    is_int(ft, 0);
    is_size(fc_tx_deadline(&t), UINT64_MAX);
}

/* A NACK duplicated by the network restarts the retransmission (harmless:
 * duplicates are re-ACKed); one delayed past the ACK is stale. */
static void test_dup_and_late_nack(void)
{
    fc_tx t, before;
    fc_rx r;
    uint32_t a, k, ff, ft, seqs[8];
    fc_tx_init(&t, &P, 1);
    fc_rx_init(&r, 1);
    fc_tx_assign(&t, &P, 0);
    fc_tx_assign(&t, &P, 0);
    fc_rx_classify(&r, 1);
    fc_rx_refused(&r, 1);
    fc_rx_take_nack(&r, &k);
    is_int(fc_tx_on_nack(&t, &P, k, 10, &ff, &ft), 0);
    is_int(drain(&t, seqs, 8), 2);
    fc_rx_classify(&r, 1);
    fc_rx_accepted(&r, 1);
    is_int(fc_tx_on_nack(&t, &P, k, 11, &ff, &ft), 0); /* the duplicate */
    is_int(t.resend, 1);
    ok(fc_tx_resend_due(&t, &seqs[0]) && seqs[0] == 1);
    is_int(fc_rx_classify(&r, 1), FC_RX_DUPLICATE);
    fc_rx_classify(&r, 2);
    fc_rx_accepted(&r, 2);
    fc_rx_take_ack(&r, &a);
    is_int(fc_tx_on_ack(&t, &P, a, 20, &ff, &ft), 0);
    is_int(t.state, FC_TX_NORMAL);
    before = t;
    is_int(fc_tx_on_nack(&t, &P, k, 30, &ff, &ft), 0); /* late copy */
    ok(same_tx(&t, &before));
}

/* ---- (c) randomized simulation ------------------------------------------ */

#define SIM_TICK_NS 1000u
#define SIM_WHEEL 64u  /* > the largest link delay, in ticks */
#define SIM_SLOT 48    /* packets per wheel slot; a full slot drops */
#define SIM_POOL_MAX 4
#define SIM_BURST 3    /* packets an endpoint may emit per tick */
#define SIM_TICK_LIMIT 2000000u

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t rng_next(rng *g) /* splitmix64 */
{
    uint64_t z = (g->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint32_t rng_below(rng *g, uint32_t n) { return (uint32_t)(rng_next(g) % n); }

/* 1 with probability ppm / 1,000,000. */
static int rng_ppm(rng *g, uint32_t ppm) { return rng_below(g, 1000000u) < ppm; }

/* The channel header as the engine will carry it: seq (absent on an
 * ACK-only packet), the cumulative ack, and a NACK bit meaning "ack is
 * also refused". */
typedef struct simpkt {
    uint32_t seq, ack;
    uint8_t has_seq, nack;
} simpkt;

typedef struct simslot {
    int n;
    simpkt p[SIM_SLOT];
} simslot;

typedef struct simlink {
    simslot wheel[SIM_WHEEL];
    uint32_t loss_ppm, dup_ppm, dmin, dmax;
    int dead;
} simlink;

typedef struct simep {
    fc_tx tx;
    fc_rx rx;
    uint32_t first_out;   /* initial seq of our sending direction */
    uint32_t nmsg;        /* messages to send */
    uint32_t assigned;    /* messages given a seq so far */
    uint32_t delivered;   /* messages from the peer taken, in order */
    uint32_t freed_upto;  /* our messages freed: [first_out, freed_upto) */
    int pool, held;       /* receive buffers: size, in use */
    uint64_t release[SIM_POOL_MAX];
    uint32_t busy_ppm;    /* refuse at random even with a free buffer */
    uint32_t hold_max;    /* ticks the upper layer keeps a buffer */
    uint64_t series_base; /* first deadline of the current expiry series */
    uint64_t series_rto;  /* the timeout that armed it */
    uint32_t expiries;    /* expiries in the current series */
    int failed_rc;        /* fc_tx_on_time returned FC_EPEER */
    uint64_t failed_at;
    int nack_rx, nack_tx; /* NACKs sent / received */
} simep;

typedef struct sim {
    fc_params p;
    simlink link[2]; /* link[i]: from ep[i] to ep[1 - i] */
    simep ep[2];
    rng g;
    uint64_t tick;
    char err[200];
    int bad;
    /* totals for the notes */
    uint64_t pkts, drops, dups, retrans, nacks, refusals, expiries;
} sim;

static int sim_fail(sim *s, const char *fmt, ...) HARNESS_PRINTF(2, 3);
static int sim_fail(sim *s, const char *fmt, ...)
{
    if (!s->bad) {
        va_list ap;
        va_start(ap, fmt);
        int n = snprintf(s->err, sizeof s->err, "tick %llu: ",
                         (unsigned long long)s->tick);
        if (n > 0 && (size_t)n < sizeof s->err)
            vsnprintf(s->err + n, sizeof s->err - (size_t)n, fmt, ap);
        va_end(ap);
        s->bad = 1;
    }
    return 0;
}

static void sim_put(sim *s, int from, const simpkt *pk)
{
    simlink *l = &s->link[from];
    int copies = 1;
    s->pkts++;
    if (l->dead || rng_ppm(&s->g, l->loss_ppm)) {
        s->drops++;
        return;
    }
    if (rng_ppm(&s->g, l->dup_ppm)) {
        copies = 2;
        s->dups++;
    }
    for (int c = 0; c < copies; c++) {
        uint32_t d = l->dmin + rng_below(&s->g, l->dmax - l->dmin + 1);
        simslot *sl = &l->wheel[(s->tick + d) % SIM_WHEEL];
        if (sl->n == SIM_SLOT) {
            s->drops++; /* queue overflow: one more loss */
            continue;
        }
        sl->p[sl->n++] = *pk;
    }
}

/* Fill the channel-header fields our receive side owes the peer. */
static int sim_header(sim *s, simep *e, simpkt *pk)
{
    uint32_t k = 0, a = 0;
    pk->nack = (uint8_t)fc_rx_take_nack(&e->rx, &k);
    fc_rx_take_ack(&e->rx, &a);
    pk->ack = a;
    if (pk->nack) {
        e->nack_tx++;
        s->nacks++;
        if (k != a)
            return sim_fail(s, "NACK %u differs from the ack field %u", k, a);
    }
    return 1;
}

/* Record the start of an expiry series whenever the sender made progress. */
static void sim_note_series(simep *e)
{
    if (e->tx.retries == 0) {
        e->series_base = e->tx.deadline;
        e->series_rto = e->tx.rto;
        e->expiries = 0;
    }
}

/* Packet pk from the peer (ep[1 - me]) arrives at ep[me]. */
static int sim_arrive(sim *s, int me, const simpkt *pk)
{
    simep *e = &s->ep[me], *peer = &s->ep[1 - me];
    uint64_t now = s->tick * SIM_TICK_NS;
    uint32_t ff, ft;
    int rc;

    /* Our sending side: the ack / NACK fields. */
    if (pk->nack) {
        e->nack_rx++;
        rc = fc_tx_on_nack(&e->tx, &s->p, pk->ack, now, &ff, &ft);
    } else {
        rc = fc_tx_on_ack(&e->tx, &s->p, pk->ack, now, &ff, &ft);
    }
    if (rc != 0 && !(rc == FC_EPEER && e->tx.failed))
        return sim_fail(s, "ep%d: ack %u nack %u -> rc %d", me, pk->ack,
                        pk->nack, rc);
    if (ff != ft) {
        if (ff != e->freed_upto)
            return sim_fail(s, "ep%d: freed from %u, expected %u", me, ff,
                            e->freed_upto);
        /* Nothing freed before the receiver accepted it. */
        if (!fc_seq_le(ft, peer->rx.expected))
            return sim_fail(s, "ep%d: freed up to %u, peer accepted < %u",
                            me, ft, peer->rx.expected);
        e->freed_upto = ft;
    }
    sim_note_series(e);

    /* Our receiving side: the data. */
    if (!pk->has_seq)
        return 1;
    if (!fc_seq_lt(pk->seq, peer->tx.next))
        return sim_fail(s, "ep%d: seq %u never sent", me, pk->seq);
    if (fc_rx_classify(&e->rx, pk->seq) != FC_RX_DELIVER)
        return 1;
    for (int i = 0; i < e->held;) /* the upper layer released buffers */
        if (e->release[i] <= s->tick)
            e->release[i] = e->release[--e->held];
        else
            i++;
    if (e->held < e->pool && !rng_ppm(&s->g, e->busy_ppm)) {
        uint32_t want = peer->first_out + e->delivered;
        if (pk->seq != want)
            return sim_fail(s, "ep%d: delivered %u, FIFO wants %u", me,
                            pk->seq, want);
        if (e->delivered >= peer->nmsg)
            return sim_fail(s, "ep%d: message %u beyond the last", me,
                            pk->seq);
        e->release[e->held++] = s->tick + 1 + rng_below(&s->g, e->hold_max);
        e->delivered++;
        rc = fc_rx_accepted(&e->rx, pk->seq);
    } else {
        s->refusals++;
        rc = fc_rx_refused(&e->rx, pk->seq);
    }
    if (rc != 0)
        return sim_fail(s, "ep%d: accepted/refused rc %d", me, rc);
    return 1;
}

static int sim_transmit(sim *s, int me)
{
    simep *e = &s->ep[me];
    uint64_t now = s->tick * SIM_TICK_NS;
    int sent = 0;
    for (int b = 0; b < SIM_BURST; b++) {
        simpkt pk = {.has_seq = 1};
        if (fc_tx_resend_due(&e->tx, &pk.seq)) {
            s->retrans++;
            if (!fc_seq_le(e->freed_upto, pk.seq) ||
                !fc_seq_lt(pk.seq, e->tx.next))
                return sim_fail(s, "ep%d: resends %u outside [%u, %u)", me,
                                pk.seq, e->freed_upto, e->tx.next);
        } else if (e->assigned < e->nmsg && fc_tx_can_send_new(&e->tx, &s->p)) {
            pk.seq = fc_tx_assign(&e->tx, &s->p, now);
            if (pk.seq != e->first_out + e->assigned)
                return sim_fail(s, "ep%d: assigned %u", me, pk.seq);
            e->assigned++;
            sim_note_series(e);
        } else {
            break;
        }
        if (!sim_header(s, e, &pk))
            return 0;
        sim_put(s, me, &pk);
        sent++;
    }
    if (fc_rx_owes(&e->rx)) { /* nothing rode back: ACK-only packet */
        simpkt pk = {.has_seq = 0};
        if (!sim_header(s, e, &pk))
            return 0;
        sim_put(s, me, &pk);
    }
    return 1;
}

static int sim_invariants(sim *s, int me)
{
    const simep *e = &s->ep[me];
    const fc_tx *t = &e->tx;
    int armed = t->deadline != UINT64_MAX;
    if (!fc_seq_le(t->una, t->resend) || !fc_seq_le(t->resend, t->next))
        return sim_fail(s, "ep%d: una %u resend %u next %u", me, t->una,
                        t->resend, t->next);
    if (t->next - t->una > s->p.window)
        return sim_fail(s, "ep%d: %u unacked > window", me, t->next - t->una);
    if (t->una != e->freed_upto)
        return sim_fail(s, "ep%d: una %u != freed %u", me, t->una,
                        e->freed_upto);
    if (armed != (t->una != t->next && !t->failed))
        return sim_fail(s, "ep%d: timer armed %d with %u unacked", me, armed,
                        t->next - t->una);
    if (e->rx.state == FC_RX_NOT_TO_RECEIVE && e->rx.refused != e->rx.expected)
        return sim_fail(s, "ep%d: refused %u expected %u", me, e->rx.refused,
                        e->rx.expected);
    if (e->rx.expected != s->ep[1 - me].first_out + e->delivered)
        return sim_fail(s, "ep%d: expected %u after %u delivered", me,
                        e->rx.expected, e->delivered);
    return 1;
}

/* Sum of the timeouts between the first deadline of a series and the
 * expiry that fails: rto_1 .. rto_L, rto_i = min(rto_0 2^i, rto_max), rto_0
 * the timeout that armed the series (rto_init, or still backed off from
 * earlier expiries: no RTT sample here, so Karn keeps it). */
static uint64_t sim_series_span(const fc_params *p, uint64_t rto0)
{
    uint64_t sum = 0, rto = rto0;
    for (uint32_t i = 1; i <= p->retry_limit; i++) {
        rto = rto > p->rto_max_ns / 2 ? p->rto_max_ns : 2 * rto;
        sum += rto;
    }
    return sum;
}

static int sim_timers(sim *s, int me)
{
    simep *e = &s->ep[me];
    uint64_t now = s->tick * SIM_TICK_NS;
    uint64_t dl = fc_tx_deadline(&e->tx);
    int rc = fc_tx_on_time(&e->tx, &s->p, now);
    if (rc == 0)
        return 1;
    if (now != dl)
        return sim_fail(s, "ep%d: timer ran at %llu, deadline %llu", me,
                        (unsigned long long)now, (unsigned long long)dl);
    s->expiries++;
    e->expiries++;
    if (rc == 1)
        return 1;
    if (rc != FC_EPEER || e->failed_rc)
        return sim_fail(s, "ep%d: on_time rc %d", me, rc);
    e->failed_rc = 1;
    e->failed_at = now;
    if (e->expiries != s->p.retry_limit + 1)
        return sim_fail(s, "ep%d: failed after %u expiries, limit %u", me,
                        e->expiries, s->p.retry_limit);
    if (now != e->series_base + sim_series_span(&s->p, e->series_rto))
        return sim_fail(s, "ep%d: failed at %llu, series from %llu", me,
                        (unsigned long long)now,
                        (unsigned long long)e->series_base);
    return 1;
}

/* Earliest tick > s->tick at which anything can happen, or s->tick + 1 if
 * an endpoint still has packets to emit. */
static uint64_t sim_next_tick(const sim *s)
{
    uint64_t next = UINT64_MAX;
    for (int i = 0; i < 2; i++) {
        const simep *e = &s->ep[i];
        if (e->tx.resend != e->tx.next && !e->tx.failed)
            return s->tick + 1;
        if (e->assigned < e->nmsg && fc_tx_can_send_new(&e->tx, &s->p))
            return s->tick + 1;
        uint64_t dl = fc_tx_deadline(&e->tx);
        if (dl != UINT64_MAX) {
            uint64_t t = (dl + SIM_TICK_NS - 1) / SIM_TICK_NS;
            if (t <= s->tick)
                t = s->tick + 1;
            if (t < next)
                next = t;
        }
    }
    for (uint64_t d = 1; d < SIM_WHEEL && s->tick + d < next; d++)
        for (int i = 0; i < 2; i++)
            if (s->link[i].wheel[(s->tick + d) % SIM_WHEEL].n > 0)
                return s->tick + d;
    return next;
}

static int sim_done(const sim *s)
{
    for (int i = 0; i < 2; i++) {
        const simep *e = &s->ep[i];
        if (e->assigned != e->nmsg || fc_tx_unacked(&e->tx) != 0 ||
            s->ep[1 - i].delivered != e->nmsg)
            return 0;
    }
    return 1;
}

typedef struct simcfg {
    uint32_t nmsg;
    int kill;       /* links go dead at a random tick */
} simcfg;

/* One seeded run. Returns 1 on success; else s->err says why. */
static int sim_run(sim *s, uint64_t seed, const simcfg *cfg)
{
    rng *g = &s->g;
    memset(s, 0, sizeof *s);
    g->s = seed * 0x2545f4914f6cdd1dull + 1;

    static const uint32_t windows[] = {1, 2, 3, 8, 32};
    static const uint32_t loss[] = {0, 10000, 50000, 150000};
    static const uint32_t dup[] = {0, 20000, 100000};
    static const uint32_t dmax[] = {1, 3, 8, 20};
    static const uint32_t busy[] = {0, 20000, 300000};

    s->p.window = windows[rng_below(g, 5)];
    uint32_t dm = dmax[rng_below(g, 4)];
    uint32_t rtt = 2 * dm + 2; /* worst case, in ticks */
    /* rto_init from far below the round trip (spurious expiries) to well
     * above it; rto_max above the round trip so a live peer never looks
     * dead (docs/flowctl.md: choose rto_max > worst RTT). */
    uint64_t init = 1 + rng_below(g, 2 * rtt);
    uint64_t max = init << rng_below(g, 7);
    if (max < 2 * rtt)
        max = 2 * rtt;
    s->p.rto_init_ns = init * SIM_TICK_NS;
    s->p.rto_max_ns = max * SIM_TICK_NS;
    s->p.retry_limit = cfg->kill ? rng_below(g, 6) : 24 + rng_below(g, 8);
    if (!fc_params_valid(&s->p))
        return sim_fail(s, "invalid params");

    for (int i = 0; i < 2; i++) {
        simlink *l = &s->link[i];
        l->loss_ppm = loss[rng_below(g, 4)];
        l->dup_ppm = dup[rng_below(g, 3)];
        l->dmin = 1 + rng_below(g, dm);
        l->dmax = dm;
        simep *e = &s->ep[i];
        /* Half the runs cross the 2^32 wrap mid-stream. */
        e->first_out = rng_below(g, 2) ? 0xFFFFFFFFu - rng_below(g, cfg->nmsg)
                                       : (uint32_t)rng_next(g);
        e->nmsg = cfg->nmsg;
        e->pool = 1 + (int)rng_below(g, SIM_POOL_MAX);
        e->busy_ppm = busy[rng_below(g, 3)];
        e->hold_max = 1 + rng_below(g, 4 * dm);
        fc_tx_init(&e->tx, &s->p, e->first_out);
        e->freed_upto = e->first_out;
    }
    for (int i = 0; i < 2; i++)
        fc_rx_init(&s->ep[i].rx, s->ep[1 - i].first_out);
    uint64_t kill_at = cfg->kill ? rng_below(g, 40 * rtt) : UINT64_MAX;

    for (s->tick = 0; s->tick < SIM_TICK_LIMIT;) {
        if (s->tick >= kill_at)
            s->link[0].dead = s->link[1].dead = 1;
        for (int i = 0; i < 2; i++) {
            simslot *sl = &s->link[1 - i].wheel[s->tick % SIM_WHEEL];
            for (int j = 0; j < sl->n; j++)
                if (!sim_arrive(s, i, &sl->p[j]))
                    return 0;
            sl->n = 0;
        }
        for (int i = 0; i < 2; i++)
            if (!sim_timers(s, i))
                return 0;
        for (int i = 0; i < 2; i++)
            if (!sim_transmit(s, i) || !sim_invariants(s, i))
                return 0;
        if (!cfg->kill && sim_done(s))
            return 1;
        uint64_t next = sim_next_tick(s);
        if (next == UINT64_MAX) {
            if (!cfg->kill)
                return sim_fail(s, "stalled: nothing in flight, no timer");
            break; /* dead links: everyone idle or failed */
        }
        s->tick = next;
    }
    if (!cfg->kill)
        return sim_fail(s, "not done after %u ticks", SIM_TICK_LIMIT);
    for (int i = 0; i < 2; i++) {
        const simep *e = &s->ep[i];
        if (fc_tx_unacked(&e->tx) != 0 && !(e->failed_rc && e->tx.failed))
            return sim_fail(s, "ep%d: %u unacked over dead links, not failed",
                            i, fc_tx_unacked(&e->tx));
        if (fc_tx_unacked(&e->tx) == 0 && e->tx.failed)
            return sim_fail(s, "ep%d: failed with nothing unacked", i);
    }
    return 1;
}

static sim the_sim; /* large (wheels); test-only file-scope state */

static void test_sim_reliable(void)
{
    const simcfg cfg = {.nmsg = 300, .kill = 0};
    const uint64_t nseeds = 2000;
    uint64_t bad = 0, first_bad = 0, pkts = 0, drops = 0, dups = 0,
             retrans = 0, nacks = 0, refusals = 0, expiries = 0, ticks = 0;
    char first_err[sizeof the_sim.err] = "";
    for (uint64_t seed = 1; seed <= nseeds; seed++) {
        if (!sim_run(&the_sim, seed, &cfg)) {
            if (bad++ == 0) {
                first_bad = seed;
                memcpy(first_err, the_sim.err, sizeof first_err);
            }
            continue;
        }
        pkts += the_sim.pkts;
        drops += the_sim.drops;
        dups += the_sim.dups;
        retrans += the_sim.retrans;
        nacks += the_sim.nacks;
        refusals += the_sim.refusals;
        expiries += the_sim.expiries;
        ticks += the_sim.tick;
    }
    ok_msg(bad == 0,
           "%llu seeds x 2 x %u messages: exactly once, FIFO, freed only "
           "after acceptance, all acked (failing: %llu, first seed %llu: %s)",
           (unsigned long long)nseeds, cfg.nmsg, (unsigned long long)bad,
           (unsigned long long)first_bad, first_err);
    ok_msg(nacks > 0 && refusals > 0 && drops > 0 && dups > 0 &&
               expiries > 0 && retrans > 0,
           "every fault occurred");
    note("packets %llu, dropped %llu, duplicated %llu, retransmitted %llu, "
         "NACKs %llu, refusals %llu, expiries %llu, virtual ticks %llu",
         (unsigned long long)pkts, (unsigned long long)drops,
         (unsigned long long)dups, (unsigned long long)retrans,
         (unsigned long long)nacks, (unsigned long long)refusals,
         (unsigned long long)expiries, (unsigned long long)ticks);
}

static void test_sim_dead_link(void)
{
    const simcfg cfg = {.nmsg = 300, .kill = 1};
    const uint64_t nseeds = 500;
    uint64_t bad = 0, first_bad = 0, failed = 0;
    char first_err[sizeof the_sim.err] = "";
    for (uint64_t seed = 1; seed <= nseeds; seed++) {
        if (!sim_run(&the_sim, 1000003 + seed, &cfg)) {
            if (bad++ == 0) {
                first_bad = seed;
                memcpy(first_err, the_sim.err, sizeof first_err);
            }
            continue;
        }
        failed += (uint64_t)the_sim.ep[0].tx.failed +
                  (uint64_t)the_sim.ep[1].tx.failed;
    }
    ok_msg(bad == 0,
           "%llu seeds, links die: each sender with unacked messages fails "
           "after retry_limit + 1 expiries at the predicted time (failing: "
           "%llu, first seed %llu: %s)",
           (unsigned long long)nseeds, (unsigned long long)bad,
           (unsigned long long)first_bad, first_err);
    ok_msg(failed > nseeds / 2, "%llu senders declared failure",
           (unsigned long long)failed);
}

int main(void)
{
    subtest("params", test_params);
    subtest("tx init and assign", test_tx_init_assign);
    subtest("tx window", test_tx_window);
    subtest("tx cumulative, stale and bogus ACK", test_tx_ack);
    subtest("tx NORMAL / NOT_TO_SEND", test_tx_nack);
    subtest("tx timer and retry limit", test_tx_timer);
    subtest("tx backoff", test_tx_backoff);
    subtest("tx retry_limit 0", test_tx_retry_limit_zero);
    subtest("tx sign of life and stuck bound", test_tx_heard_and_stuck);
    subtest("tx RTT estimate", test_tx_rtt);
    subtest("tx across the wrap", test_tx_wrap);
    subtest("rx NORMAL, coalescing, duplicates", test_rx_normal);
    subtest("rx NORMAL / NOT_TO_RECEIVE", test_rx_not_to_receive);
    subtest("rx across the wrap", test_rx_wrap);
    subtest("PM Fig. 4", test_pm_fig4);
    subtest("lost NACK", test_lost_nack);
    subtest("lost ACK", test_lost_ack);
    subtest("duplicated and late NACK", test_dup_and_late_nack);
    subtest("simulation: faults", test_sim_reliable);
    subtest("simulation: dead links", test_sim_dead_link);
    return done_testing();
}
