/*
 * test_p2p.c — point-to-point protocols end to end on the FIFO test
 * network: eager and rendezvous in all four McMPI scenarios, pipelining,
 * wildcards, truncation, sync/ready/buffered modes, probe, mprobe, cancel,
 * self, PROC_NULL, zero bytes, out-of-order arrival, late communicators.
 */
#include <string.h>

#include "harness.h"
#include "testnet.h"

static testnet T;

static void fill(uint8_t *b, size_t n, int seed)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)(seed * 31 + i * 7);
}

static int done(quay_req *r, quay_status *st) { return quay_req_test(r, st); }

static void check_clean(void)
{
    tn_check_clean(&T);
    is_int(T.rejects, 0);
}

/* One message of `len` bytes, receive posted before (early) or after. */
static void one_message(size_t len, int recv_early)
{
    static uint8_t sbuf[4096], rbuf[4096];
    fill(sbuf, len, 3);
    memset(rbuf, 0, sizeof rbuf);
    quay_req *s = NULL, *r = NULL;
    if (recv_early)
        is_int(quay_irecv(T.e[1], T.world[1], rbuf, sizeof rbuf, 0, 5, &r), 0);
    is_int(quay_isend(T.e[0], T.world[0], sbuf, len, 1, 5, QUAY_SEND_STANDARD, &s), 0);
    tn_pump(&T);
    if (!recv_early)
        is_int(quay_irecv(T.e[1], T.world[1], rbuf, sizeof rbuf, 0, 5, &r), 0);
    tn_pump(&T);
    quay_status st;
    ok(done(s, NULL));
    ok(done(r, &st));
    is_int(st.source, 0);
    is_int(st.tag, 5);
    is_int(st.error, 0);
    is_size(st.count, len);
    ok(memcmp(sbuf, rbuf, len) == 0);
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);
    check_clean();
}

static void t_eager_early(void) { tn_init(&T, 2, NULL); one_message(100, 1); tn_fini(&T); }
static void t_eager_late(void) { tn_init(&T, 2, NULL); one_message(100, 0); tn_fini(&T); }
static void t_rndv_early(void) { tn_init(&T, 2, NULL); one_message(1000, 1); tn_fini(&T); }
static void t_rndv_late(void) { tn_init(&T, 2, NULL); one_message(1000, 0); tn_fini(&T); }
static void t_zero(void) { tn_init(&T, 2, NULL); one_message(0, 1); one_message(0, 0); tn_fini(&T); }

static void t_wildcard_order(void)
{
    tn_init(&T, 3, NULL);
    uint8_t b[6][300];
    quay_req *r[4], *s[4];
    /* rank 2 posts: ANY_SOURCE tag 1, specific 0 tag 1, ANY/ANY, specific 1 any */
    is_int(quay_irecv(T.e[2], T.world[2], b[0], 300, QUAY_ANY_SOURCE, 1, &r[0]), 0);
    is_int(quay_irecv(T.e[2], T.world[2], b[1], 300, 0, 1, &r[1]), 0);
    is_int(quay_irecv(T.e[2], T.world[2], b[2], 300, QUAY_ANY_SOURCE, QUAY_ANY_TAG, &r[2]), 0);
    is_int(quay_irecv(T.e[2], T.world[2], b[3], 300, 1, QUAY_ANY_TAG, &r[3]), 0);
    uint8_t m[4][300];
    for (int i = 0; i < 4; i++)
        fill(m[i], 300, i);
    /* rank 0 sends tag 1 twice (eager, rndv); rank 1 sends tag 9 twice */
    quay_isend(T.e[0], T.world[0], m[0], 10, 2, 1, QUAY_SEND_STANDARD, &s[0]);
    quay_isend(T.e[0], T.world[0], m[1], 300, 2, 1, QUAY_SEND_STANDARD, &s[1]);
    quay_isend(T.e[1], T.world[1], m[2], 20, 2, 9, QUAY_SEND_STANDARD, &s[2]);
    quay_isend(T.e[1], T.world[1], m[3], 290, 2, 9, QUAY_SEND_STANDARD, &s[3]);
    tn_pump(&T);
    quay_status st[4];
    for (int i = 0; i < 4; i++)
        ok(done(r[i], &st[i]));
    /* r0 gets 0's first, r1 gets 0's second; r2 gets 1's first, r3 1's second */
    is_int(st[0].source, 0); is_size(st[0].count, 10);
    is_int(st[1].source, 0); is_size(st[1].count, 300);
    is_int(st[2].source, 1); is_size(st[2].count, 20);
    is_int(st[3].source, 1); is_size(st[3].count, 290);
    ok(memcmp(b[1], m[1], 300) == 0);
    ok(memcmp(b[3], m[3], 290) == 0);
    for (int i = 0; i < 4; i++) {
        quay_req_free(T.e[2], r[i]);
        quay_req_free(T.e[i < 2 ? 0 : 1], s[i]);
    }
    check_clean();
    tn_fini(&T);
}

static void t_truncate(void)
{
    tn_init(&T, 2, NULL);
    for (int pass = 0; pass < 2; pass++) {
        size_t len = pass ? 1000 : 200;
        uint8_t sb[1000], rb[110];
        fill(sb, len, 9);
        memset(rb, 0xee, sizeof rb);
        quay_req *s, *r;
        quay_irecv(T.e[1], T.world[1], rb, 100, 0, 0, &r);
        quay_isend(T.e[0], T.world[0], sb, len, 1, 0, QUAY_SEND_STANDARD, &s);
        tn_pump(&T);
        quay_status st;
        ok(done(r, &st));
        is_int(st.error, QUAY_ETRUNCATE);
        is_size(st.count, 100);
        ok(memcmp(rb, sb, 100) == 0);
        ok(rb[100] == 0xee && rb[109] == 0xee);
        ok(done(s, NULL));
        quay_req_free(T.e[0], s);
        quay_req_free(T.e[1], r);
    }
    check_clean();
    tn_fini(&T);
}

static void t_sync(void)
{
    tn_init(&T, 2, NULL);
    uint8_t sb[10] = {1}, rb[10];
    quay_req *s, *r;
    quay_isend(T.e[0], T.world[0], sb, 10, 1, 0, QUAY_SEND_SYNC, &s);
    tn_pump(&T);
    ok(!done(s, NULL)); /* not matched yet */
    quay_irecv(T.e[1], T.world[1], rb, 10, 0, 0, &r);
    tn_pump(&T);
    ok(done(s, NULL));
    ok(done(r, NULL));
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);
    check_clean();
    tn_fini(&T);
}

static void t_ready(void)
{
    tn_init(&T, 2, NULL);
    for (int large = 0; large < 2; large++) {
        size_t len = large ? 600 : 10;
        uint8_t sb[600] = {1}, rb[600];
        quay_req *s, *r;
        quay_status st;
        /* not posted: error at both ends */
        quay_isend(T.e[0], T.world[0], sb, len, 1, 0, QUAY_SEND_READY, &s);
        tn_pump(&T);
        ok(done(s, &st));
        is_int(st.error, QUAY_ENOTPOSTED);
        quay_irecv(T.e[1], T.world[1], rb, 600, 0, 0, &r);
        ok(done(r, &st));
        is_int(st.error, QUAY_ENOTPOSTED);
        quay_req_free(T.e[0], s);
        quay_req_free(T.e[1], r);
        /* posted: fine */
        quay_irecv(T.e[1], T.world[1], rb, 600, 0, 0, &r);
        quay_isend(T.e[0], T.world[0], sb, len, 1, 0, QUAY_SEND_READY, &s);
        tn_pump(&T);
        ok(done(s, &st));
        is_int(st.error, 0);
        ok(done(r, &st));
        is_int(st.error, 0);
        is_size(st.count, len);
        quay_req_free(T.e[0], s);
        quay_req_free(T.e[1], r);
    }
    tn_pump(&T);
    check_clean();
    tn_fini(&T);
}

static void t_bsend(void)
{
    tn_init(&T, 2, NULL);
    static uint8_t abuf[4096];
    is_int(quay_buffer_attach(T.e[0], abuf, sizeof abuf), 0);
    uint8_t sb[700], rb[700];
    fill(sb, 700, 4);
    quay_req *s1, *s2, *r1, *r2;
    is_int(quay_isend(T.e[0], T.world[0], sb, 100, 1, 0, QUAY_SEND_BUFFERED, &s1), 0);
    ok(done(s1, NULL));
    is_int(quay_isend(T.e[0], T.world[0], sb, 700, 1, 0, QUAY_SEND_BUFFERED, &s2), 0);
    ok(done(s2, NULL));
    memset(sb, 0, sizeof sb); /* the copies must be what travels */
    void *p;
    size_t n;
    is_int(quay_buffer_detach(T.e[0], &p, &n), QUAY_EBUSY);
    quay_irecv(T.e[1], T.world[1], rb, 700, 0, 0, &r1);
    tn_pump(&T);
    quay_irecv(T.e[1], T.world[1], rb, 700, 0, 0, &r2);
    tn_pump(&T);
    quay_status st;
    ok(done(r2, &st));
    is_size(st.count, 700);
    fill(sb, 700, 4);
    ok(memcmp(rb, sb, 700) == 0);
    is_int(quay_buffer_detach(T.e[0], &p, &n), 0);
    ok(p == abuf && n == sizeof abuf);
    quay_req *s3;
    is_int(quay_isend(T.e[0], T.world[0], sb, 10, 1, 0, QUAY_SEND_BUFFERED, &s3), QUAY_ENOBUFS);
    ok(s3 == NULL);
    quay_req_free(T.e[0], s1);
    quay_req_free(T.e[0], s2);
    quay_req_free(T.e[1], r1);
    quay_req_free(T.e[1], r2);
    check_clean();
    tn_fini(&T);
}

static void t_probe_mprobe(void)
{
    tn_init(&T, 2, NULL);
    uint8_t sb[500], rb[500];
    fill(sb, 500, 2);
    quay_req *s1, *s2, *r, *w;
    quay_isend(T.e[0], T.world[0], sb, 50, 1, 7, QUAY_SEND_SYNC, &s1);
    quay_isend(T.e[0], T.world[0], sb, 500, 1, 7, QUAY_SEND_STANDARD, &s2);
    tn_pump(&T);
    int flag;
    quay_status st;
    is_int(quay_iprobe(T.e[1], T.world[1], QUAY_ANY_SOURCE, 7, &flag, &st), 0);
    ok(flag);
    is_size(st.count, 50);
    quay_msg *m;
    is_int(quay_improbe(T.e[1], T.world[1], 0, QUAY_ANY_TAG, &m, &st), 0);
    ok(m != NULL);
    is_size(st.count, 50);
    tn_pump(&T);
    ok(done(s1, NULL)); /* taking the message completes the ssend */
    /* a wildcard receive posted now must get the second message, not m */
    is_int(quay_irecv(T.e[1], T.world[1], rb, 500, QUAY_ANY_SOURCE, QUAY_ANY_TAG, &w), 0);
    tn_pump(&T);
    ok(done(w, &st));
    is_size(st.count, 500);
    is_int(quay_imrecv(T.e[1], m, rb, 500, &r), 0);
    ok(done(r, &st));
    is_size(st.count, 50);
    quay_req_free(T.e[0], s1);
    quay_req_free(T.e[0], s2);
    quay_req_free(T.e[1], r);
    quay_req_free(T.e[1], w);
    check_clean();
    tn_fini(&T);
}

static void t_cancel(void)
{
    tn_init(&T, 2, NULL);
    uint8_t b[600];
    quay_req *r, *s;
    quay_status st;
    quay_irecv(T.e[1], T.world[1], b, 10, 0, 0, &r);
    is_int(quay_cancel(T.e[1], r), 0);
    ok(done(r, &st));
    ok(st.cancelled);
    quay_req_free(T.e[1], r);
    for (int large = 0; large < 2; large++) {
        /* unmatched send: cancel succeeds */
        quay_isend(T.e[0], T.world[0], b, large ? 600 : 10, 1, 0, QUAY_SEND_STANDARD, &s);
        if (large) {
            tn_pump(&T);
        }
        is_int(quay_cancel(T.e[0], s), 0);
        tn_pump(&T);
        ok(done(s, &st));
        ok(st.cancelled);
        quay_req_free(T.e[0], s);
        /* matched send: cancel fails, message delivered */
        quay_irecv(T.e[1], T.world[1], b, 600, 0, 0, &r);
        quay_isend(T.e[0], T.world[0], b, large ? 600 : 10, 1, 0, QUAY_SEND_SYNC, &s);
        tn_pull_all(&T);
        tn_deliver(&T, 0); /* EAGER/RTS matched at rank 1 */
        quay_cancel(T.e[0], s);
        tn_pump(&T);
        ok(done(s, &st));
        ok(!st.cancelled);
        ok(done(r, &st));
        quay_req_free(T.e[0], s);
        quay_req_free(T.e[1], r);
    }
    int flag;
    quay_iprobe(T.e[1], T.world[1], QUAY_ANY_SOURCE, QUAY_ANY_TAG, &flag, NULL);
    ok(!flag);
    check_clean();
    tn_fini(&T);
}

static void t_self_null(void)
{
    tn_init(&T, 2, NULL);
    uint8_t sb[700], rb[700];
    fill(sb, 700, 6);
    for (int large = 0; large < 2; large++) {
        size_t len = large ? 700 : 70;
        quay_req *s, *r;
        quay_isend(T.e[0], T.world[0], sb, len, 0, 3, QUAY_SEND_SYNC, &s);
        tn_pump(&T);
        quay_irecv(T.e[0], T.world[0], rb, 700, 0, 3, &r);
        tn_pump(&T);
        quay_status st;
        ok(done(s, NULL));
        ok(done(r, &st));
        is_size(st.count, len);
        ok(memcmp(rb, sb, len) == 0);
        quay_req_free(T.e[0], s);
        quay_req_free(T.e[0], r);
    }
    quay_req *s, *r;
    quay_status st;
    is_int(quay_isend(T.e[0], T.world[0], sb, 5, QUAY_PROC_NULL, 1, QUAY_SEND_STANDARD, &s), 0);
    ok(done(s, NULL));
    is_int(quay_irecv(T.e[0], T.world[0], rb, 5, QUAY_PROC_NULL, 1, &r), 0);
    ok(done(r, &st));
    is_int(st.source, QUAY_PROC_NULL);
    is_int(st.tag, QUAY_ANY_TAG);
    is_size(st.count, 0);
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[0], r);
    tn_pump(&T);
    check_clean();
    tn_fini(&T);
}

static void t_out_of_order(void)
{
    tn_init(&T, 2, NULL);
    uint8_t sb[3][50], rb[3][50];
    quay_req *s[3], *r[3];
    for (int i = 0; i < 3; i++) {
        fill(sb[i], 50, i + 10);
        quay_isend(T.e[0], T.world[0], sb[i], 50, 1, 4, QUAY_SEND_STANDARD, &s[i]);
    }
    tn_pull_all(&T);
    is_int(T.nq, 3);
    is_int(tn_deliver(&T, 2), 0); /* third first: held */
    is_int(tn_deliver(&T, 1), 0); /* second: held */
    for (int i = 0; i < 3; i++)
        quay_irecv(T.e[1], T.world[1], rb[i], 50, 0, 4, &r[i]);
    is_int(tn_deliver(&T, 0), 0);
    for (int i = 0; i < 3; i++) {
        ok(done(r[i], NULL));
        ok(memcmp(rb[i], sb[i], 50) == 0);
        quay_req_free(T.e[1], r[i]);
        quay_req_free(T.e[0], s[i]);
    }
    tn_pump(&T);
    check_clean();
    tn_fini(&T);
}

static void t_late_comm(void)
{
    tn_init(&T, 2, NULL);
    int32_t map[2] = {0, 1};
    quay_comm *c0, *c1;
    is_int(quay_comm_create(T.e[0], 42, 2, map, &c0), 0);
    uint8_t sb[20] = {7}, rb[20];
    quay_req *s, *r;
    quay_isend(T.e[0], c0, sb, 20, 1, 0, QUAY_SEND_STANDARD, &s);
    tn_pump(&T); /* arrives before rank 1 created context 42 */
    is_int(quay_comm_create(T.e[1], 42, 2, map, &c1), 0);
    quay_irecv(T.e[1], c1, rb, 20, 0, 0, &r);
    ok(done(r, NULL));
    ok(memcmp(sb, rb, 20) == 0);
    /* world comm with the same tag must not see it */
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);
    is_int(quay_comm_free(T.e[1], c1), 0);
    is_int(quay_comm_free(T.e[0], c0), 0);
    check_clean();
    tn_fini(&T);
}

static void t_pipeline(void)
{
    quay_config cfg;
    tn_config(&cfg, 0, 2);
    cfg.pipeline_depth = 4;
    tn_init(&T, 2, &cfg);
    static uint8_t sb[128 * 20 + 17], rb[sizeof sb];
    fill(sb, sizeof sb, 1);
    quay_req *s, *r;
    quay_irecv(T.e[1], T.world[1], rb, sizeof rb, 0, 0, &r);
    quay_isend(T.e[0], T.world[0], sb, sizeof sb, 1, 0, QUAY_SEND_STANDARD, &s);
    /* count CTS packets: with depth 4 and batch 2 there must be far fewer
     * than fragments */
    int cts = 0, data = 0;
    for (;;) {
        tn_pull_all(&T);
        if (T.nq == 0)
            break;
        int ty = tn_type(&T, 0);
        cts += ty == QUAY_PKT_CTS;
        data += ty == QUAY_PKT_DATA;
        tn_deliver(&T, 0);
    }
    is_int(data, 21);
    ok_msg(cts <= 11, "CTS count %d <= 11 for 21 fragments", cts);
    ok(done(r, NULL) && done(s, NULL));
    ok(memcmp(sb, rb, sizeof sb) == 0);
    quay_req_free(T.e[0], s);
    quay_req_free(T.e[1], r);
    check_clean();
    tn_fini(&T);
}

int main(void)
{
    subtest("eager, receive posted early (E2)", t_eager_early);
    subtest("eager, receive posted late (E1)", t_eager_late);
    subtest("rendezvous, receive early (R2)", t_rndv_early);
    subtest("rendezvous, receive late (R1)", t_rndv_late);
    subtest("zero bytes", t_zero);
    subtest("wildcard and specific receives interleaved", t_wildcard_order);
    subtest("truncation eager and rendezvous", t_truncate);
    subtest("synchronous send", t_sync);
    subtest("ready send", t_ready);
    subtest("buffered send", t_bsend);
    subtest("probe and matched probe", t_probe_mprobe);
    subtest("cancel", t_cancel);
    subtest("self and PROC_NULL", t_self_null);
    subtest("out-of-order arrival", t_out_of_order);
    subtest("late communicator", t_late_comm);
    subtest("pipelined rendezvous", t_pipeline);
    return done_testing();
}
