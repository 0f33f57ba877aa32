/*
 * test_persist.c — persistent requests: quay_send_init, quay_recv_init,
 * quay_start. Inactive status, many rounds (eager, rendezvous, every send
 * mode, posted early and late), a new wire id per round, start while
 * active / after free / on a plain request, free while active, cancel,
 * PROC_NULL, a failed peer, quay_startall (post order, a refused request), the round over only when its packets are done (EAGAIN),
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

/* ---- quay_startall ---------------------------------------------------------- */

enum { SA_NR = 10, SA_N1 = 9 };

/* Rank 1's window: six receives of (0, tag 1), one of tag 2, one more of
 * tag 1, one of (ANY_SOURCE, 1), one of (0, ANY_TAG); rank 0 sends tag 2
 * (payload 100) and tag 1 (payloads 1..9) by persistent sends started
 * together. Round `late`: four tag-1 messages arrive before the window
 * starts (the first starts take them, in order, inside the call). Every
 * round each receive must hold the payload post order gives it, whatever
 * path (oracle or fast matcher, cached bin or not) posted it. */
static int startall_rounds(const quay_config *cfg1)
{
    testnet *t = &T;
    tn_init_each(t, 2, cfg1, 0);
    static const int32_t rsrc[SA_NR] = {0, 0, 0, 0, 0, 0, 0, 0, QUAY_ANY_SOURCE, 0};
    static const int32_t rtag[SA_NR] = {1, 1, 1, 1, 1, 1, 2, 1, 1, QUAY_ANY_TAG};
    /* post order: tag 2 -> R6; tag 1 in order -> R0..R5, R7, R8, R9 */
    static const uint8_t want[SA_NR] = {1, 2, 3, 4, 5, 6, 100, 7, 8, 9};
    uint8_t rb[SA_NR], sv[SA_N1 + 1];
    quay_req *r[SA_NR], *s[SA_N1 + 1];
    int good = 1;
    for (int i = 0; i < SA_NR; i++)
        good &= quay_recv_init(t->e[1], t->world[1], &rb[i], 1, rsrc[i], rtag[i], &r[i]) == 0;
    /* s[0..8]: tag 1, payloads 1..9; s[9]: tag 2, 100 */
    for (int i = 0; i <= SA_N1; i++) {
        sv[i] = i < SA_N1 ? (uint8_t)(i + 1) : 100;
        good &= quay_send_init(t->e[0], t->world[0], &sv[i], 1, 1, i < SA_N1 ? 1 : 2,
                               QUAY_SEND_STANDARD, &s[i]) == 0;
    }
    for (int round = 0; round < 4 && good; round++) {
        int late = round & 1;
        size_t n = 99;
        memset(rb, 0, sizeof rb);
        if (late) {
            /* the tag-1 sends 1..4 first, alone: unexpected at rank 1 */
            good &= quay_startall(t->e[0], 4, s, &n) == 0 && n == 4;
            tn_pump(t);
        }
        good &= quay_startall(t->e[1], SA_NR, r, &n) == 0 && n == SA_NR;
        if (late) {
            for (int i = 0; i < 4; i++)
                good &= quay_req_test(r[i], NULL) && rb[i] == i + 1; /* taken at the start */
            /* then tag 2 ahead of tag-1 5..9 */
            quay_req *rest[6] = {s[9], s[4], s[5], s[6], s[7], s[8]};
            good &= quay_startall(t->e[0], 6, rest, &n) == 0 && n == 6;
        } else {
            quay_req *all[SA_N1 + 1] = {s[9], s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7],
                                         s[8]};
            good &= quay_startall(t->e[0], SA_N1 + 1, all, &n) == 0 && n == SA_N1 + 1;
        }
        tn_pump(t);
        for (int i = 0; i < SA_NR; i++) {
            quay_status st;
            int done = quay_req_test(r[i], &st);
            good &= done && st.error == 0 && st.source == 0 && st.count == 1;
            if (!(done && rb[i] == want[i]))
                note("round %d: receive %d holds %d, want %d", round, i, rb[i], want[i]);
            good &= rb[i] == want[i];
        }
        for (int i = 0; i <= SA_N1; i++)
            good &= quay_req_test(s[i], NULL);
    }
    for (int i = 0; i < SA_NR; i++)
        good &= quay_req_free(t->e[1], r[i]) == 0;
    for (int i = 0; i <= SA_N1; i++)
        good &= quay_req_free(t->e[0], s[i]) == 0;
    check_clean();
    tn_fini(t);
    return good;
}

static void t_startall_order(void)
{
    quay_config cfg;
    tn_config(&cfg, 0, 2);
    ok_msg(startall_rounds(&cfg), "window in post order, with the oracle checking");
    cfg.flags &= ~(uint32_t)QUAY_CFG_CHECK_ORACLE; /* the fast matcher's own path */
    ok_msg(startall_rounds(&cfg), "the same without the oracle (the batched posting)");
    cfg.flags |= QUAY_CFG_LINEAR_MATCH;
    ok_msg(startall_rounds(&cfg), "the same with the linear matcher");
}

/* A refused request stops the batch there: the ones before are started,
 * it and the ones after are not; *pstarted says how many. */
static void t_startall_refused(void)
{
    quay_config cfg;
    tn_config(&cfg, 0, 2);
    cfg.flags &= ~(uint32_t)QUAY_CFG_CHECK_ORACLE;
    tn_init_each(&T, 2, &cfg, 0);
    uint8_t b[4] = {0}, v = 5;
    quay_req *r[3], *p, *s;
    for (int i = 0; i < 3; i++)
        is_int(quay_recv_init(T.e[1], T.world[1], &b[i], 1, 0, 4, &r[i]), 0);
    is_int(quay_irecv(T.e[1], T.world[1], &b[3], 1, 0, 5, &p), 0);
    size_t n = 99;
    is_int(quay_startall(T.e[1], 0, NULL, &n), 0);
    is_size(n, 0);
    is_int(quay_startall(T.e[1], 2, NULL, &n), QUAY_EINVAL);
    is_size(n, 0);
    is_int(quay_startall(NULL, 1, r, &n), QUAY_EINVAL);
    /* a plain request second: EINVAL, r[0] started, r[2] not */
    quay_req *mix[3] = {r[0], p, r[2]};
    is_int(quay_startall(T.e[1], 3, mix, &n), QUAY_EINVAL);
    is_size(n, 1);
    ok(!quay_req_test(r[0], NULL)); /* active */
    ok(quay_req_test(r[2], NULL));  /* still inactive */
    /* the same request twice: the second finds it active */
    quay_req *twice[3] = {r[1], r[2], r[1]};
    is_int(quay_startall(T.e[1], 3, twice, &n), QUAY_ESTATE);
    is_size(n, 2);
    /* another engine's request */
    is_int(quay_startall(T.e[0], 1, r, NULL), QUAY_EINVAL);
    /* the three rounds match three sends in post order */
    for (int i = 0; i < 3; i++) {
        v = (uint8_t)(10 + i);
        is_int(quay_isend(T.e[0], T.world[0], &v, 1, 1, 4, QUAY_SEND_STANDARD, &s), 0);
        tn_pump(&T);
        quay_req_free(T.e[0], s);
    }
    is_int(b[0], 10);
    is_int(b[1], 11);
    is_int(b[2], 12);
    for (int i = 0; i < 3; i++)
        is_int(quay_req_free(T.e[1], r[i]), 0);
    is_int(quay_cancel(T.e[1], p), 0);
    tn_pump(&T);
    is_int(quay_req_free(T.e[1], p), 0);
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
    subtest("startall: a window matches in post order (oracle, fast, linear)",
            t_startall_order);
    subtest("startall: stops at a refused request", t_startall_refused);
    return done_testing();
}
