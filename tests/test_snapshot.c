/*
 * test_snapshot.c — channels, quay_engine_save / quay_engine_restore /
 * quay_channel_reset: preconditions and errors, a round trip through
 * every kind of state a context holds (posted receives of each pattern,
 * unexpected eager and rendezvous messages, a taken message, completed
 * requests, packets queued while quiesced), an unrelated context run in
 * between, and the rejection of damaged, forged and foreign blobs with
 * the channel left exactly as it was.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"
#include "flowctl/crc32c.h"
#include "harness.h"
#include "testnet.h"

static testnet T;
static uint64_t now_ns;

static void setup(int n, uint32_t channels)
{
    quay_config c;
    tn_config(&c, 0, n);
    c.flow = QUAY_FLOW_ACKNACK;
    c.channels = channels;
    c.rto_init_ns = 1000;
    c.rto_max_ns = 16000;
    c.max_requests = 64;
    c.max_unexpected = 64;
    c.max_out = 64;
    is_int(tn_init(&T, n, &c), 0);
    now_ns = 0;
}

static void settle(void)
{
    tn_settle(&T, &now_ns, 2000);
}

/* Save channel e into a fresh malloc'd blob. */
static unsigned char *save(quay_engine *e, size_t *len)
{
    size_t need = 0;
    if (quay_engine_save(e, NULL, 0, &need) != QUAY_ENOBUFS)
        return NULL;
    unsigned char *b = malloc(need);
    if (b != NULL && quay_engine_save(e, b, need, len) != 0) {
        free(b);
        return NULL;
    }
    return b;
}

/* 1 if channel e saves to exactly `want`. */
static int saves_as(quay_engine *e, const unsigned char *want, size_t len)
{
    size_t l2 = 0;
    unsigned char *b = save(e, &l2);
    int same = b != NULL && l2 == len && memcmp(b, want, len) == 0;
    free(b);
    return same;
}

static void fix_crc(unsigned char *b, size_t len)
{
    uint32_t table[256];
    crc32c_table_init(table);
    uint32_t c = crc32c_update(table, 0, b, len - 4);
    for (int i = 0; i < 4; i++)
        b[len - 4 + (size_t)i] = (uint8_t)(c >> (8 * i));
}

static void t_api(void)
{
    quay_config c;
    quay_engine *e;
    size_t len = 0;
    unsigned char buf[8];
    tn_config(&c, 0, 2);
    is_int(quay_engine_new(&c, &e), 0);
    is_int(quay_engine_save(e, buf, sizeof buf, &len), QUAY_ESTATE); /* no flow control */
    is_int(quay_engine_restore(e, buf, sizeof buf), QUAY_ESTATE);
    is_int(quay_channel_reset(e, 1), QUAY_ESTATE);
    ok(quay_engine_channel(e, 0) == e);
    ok(quay_engine_channel(e, 1) == NULL);
    quay_engine_free(e);

    c.channels = 2; /* only a frame can say which channel */
    is_int(quay_engine_new(&c, &e), QUAY_EINVAL);
    c.flow = QUAY_FLOW_ACKNACK;
    c.channels = QUAY_MAX_CHANNELS + 1;
    is_int(quay_engine_new(&c, &e), QUAY_EINVAL);
    c.channels = 0;
    is_int(quay_engine_new(&c, &e), QUAY_EINVAL);
    c.channels = 3;
    is_int(quay_engine_new(&c, &e), 0);
    quay_engine *ch2 = quay_engine_channel(e, 2);
    ok(ch2 != NULL && ch2 != e && quay_engine_channel(e, 3) == NULL);
    ok(quay_engine_channel(ch2, 0) == e); /* any handle finds its siblings */
    quay_engine_free(ch2);                 /* ignored: not the engine */

    is_int(quay_engine_save(ch2, NULL, 0, NULL), QUAY_EINVAL);
    is_int(quay_engine_save(ch2, NULL, 0, &len), QUAY_EBUSY); /* not quiesced */
    is_int(quay_engine_restore(ch2, buf, sizeof buf), QUAY_EBUSY);
    is_int(quay_channel_reset(ch2, 1), QUAY_EBUSY);
    is_int(quay_channel_quiesce(ch2), 0);
    is_int(quay_channel_is_stable(ch2), 1);
    is_int(quay_channel_is_stable(e), 0); /* channel 0 still runs */
    is_int(quay_engine_save(ch2, NULL, 0, &len), QUAY_ENOBUFS);
    ok(len > 16);
    unsigned char *b = malloc(len);
    size_t got = 0;
    is_int(quay_engine_save(ch2, b, len - 1, &got), QUAY_ENOBUFS);
    is_size(got, len);
    is_int(quay_engine_save(ch2, b, len, &got), 0);
    is_int(quay_engine_restore(ch2, b, got), 0);
    ok(saves_as(ch2, b, got));
    is_int(quay_engine_restore(ch2, NULL, 4), QUAY_EINVAL);
    is_int(quay_engine_restore(ch2, b, 0), QUAY_ECORRUPT);
    free(b);
    quay_engine_free(e);
}

static const char *const text[] = {"posted-exact", "posted-anysrc", "posted-wild",
                                   "unexpected", "taken", "queued"};

/* A context holding every kind of state goes out, an unrelated context
 * runs to completion in its place, and it comes back and finishes. */
static void t_roundtrip(void)
{
    setup(2, 1);
    quay_engine *a = T.e[0], *b = T.e[1];
    quay_comm *ca = T.world[0], *cb = T.world[1];
    char r_exact[32] = "", r_any[32] = "", r_wild[32] = "", r_unexp[32] = "", r_taken[32] = "";
    static uint8_t big[1000], rbig[1000];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (uint8_t)(i * 7 + 1);
    quay_req *q[12] = {0}, *s[8] = {0};
    quay_msg *taken = NULL;
    quay_status st;
    is_int(quay_irecv(b, cb, r_exact, sizeof r_exact, 0, 1, &q[0]), 0);
    is_int(quay_irecv(b, cb, r_any, sizeof r_any, QUAY_ANY_SOURCE, 2, &q[1]), 0);
    /* The wildcard waits on a communicator of its own (it would take the
     * unexpected messages below). */
    quay_comm *ca2, *cb2;
    is_int(quay_comm_create(a, 9, 2, NULL, &ca2), 0);
    is_int(quay_comm_create(b, 9, 2, NULL, &cb2), 0);
    is_int(quay_irecv(b, cb2, r_wild, sizeof r_wild, QUAY_ANY_SOURCE, QUAY_ANY_TAG, &q[2]), 0);
    is_int(quay_isend(a, ca, text[3], 11, 1, 5, QUAY_SEND_STANDARD, &s[0]), 0);
    is_int(quay_isend(a, ca, big, sizeof big, 1, 6, QUAY_SEND_STANDARD, &s[1]), 0);
    is_int(quay_isend(a, ca, text[4], 6, 1, 7, QUAY_SEND_SYNC, &s[2]), 0);
    settle(); /* tags 5, 6, 7 wait unexpected at b (6 as an RTS) */
    is_int(quay_improbe(b, cb, 0, 7, &taken, &st), 0);
    ok(taken != NULL);
    is_int(quay_channel_quiesce(a), 0);
    is_int(quay_channel_quiesce(b), 0);
    /* Posted while quiesced: built, queued, not sent. */
    is_int(quay_isend(a, ca, text[0], 13, 1, 1, QUAY_SEND_STANDARD, &s[3]), 0);
    is_int(quay_isend(a, ca, text[1], 14, 1, 2, QUAY_SEND_STANDARD, &s[4]), 0);
    is_int(quay_isend(a, ca2, text[2], 12, 1, 9, QUAY_SEND_STANDARD, &s[5]), 0);
    settle();
    is_int(quay_channel_is_stable(a), 1);
    is_int(quay_channel_is_stable(b), 1);
    /* A registered region belongs to the context too. */
    static uint8_t win[64];
    uint64_t key;
    void *addr;
    is_int(quay_mem_register(b, win, sizeof win, QUAY_MEM_READ, &key), 0);
    quay_stats sa, sb;
    quay_engine_stats(a, &sa);
    quay_engine_stats(b, &sb);
    size_t la = 0, lb = 0;
    unsigned char *ba = save(a, &la), *bb = save(b, &lb);
    ok(ba != NULL && bb != NULL);

    /* C7 with a new context: empty, its own key; run something in it. */
    is_int(quay_channel_reset(a, 0x77), 0);
    is_int(quay_channel_reset(b, 0x77), 0);
    is_int(quay_mem_resolve(b, 0, key, 0, 1, QUAY_MEM_READ, &addr), QUAY_ESTATE);
    quay_stats e0;
    quay_engine_stats(b, &e0);
    is_int(e0.reqs_in_use, 0);
    is_int(e0.umsgs_in_use, 0);
    is_int(e0.comms_in_use, 0);
    quay_comm *xa, *xb;
    is_int(quay_comm_create(a, 0, 2, NULL, &xa), 0);
    is_int(quay_comm_create(b, 0, 2, NULL, &xb), 0);
    is_int(quay_channel_resume(a), 0);
    is_int(quay_channel_resume(b), 0);
    char other[16] = "";
    quay_req *o1, *o2;
    is_int(quay_isend(a, xa, "other job", 10, 1, 1, QUAY_SEND_STANDARD, &o1), 0);
    is_int(quay_irecv(b, xb, other, sizeof other, 0, QUAY_ANY_TAG, &o2), 0);
    settle();
    ok(tn_good(o2, 10) && strcmp(other, "other job") == 0);
    ok(r_exact[0] == 0 && r_any[0] == 0 && r_wild[0] == 0); /* nothing crossed */
    quay_req_free(a, o1);
    quay_req_free(b, o2);
    is_int(quay_comm_free(a, xa), 0);
    is_int(quay_comm_free(b, xb), 0);
    is_int(quay_channel_quiesce(a), 0);
    is_int(quay_channel_quiesce(b), 0);
    settle();

    /* C7 with the saved context, C8: it finishes as if never away. */
    is_int(quay_engine_restore(a, ba, la), 0);
    is_int(quay_engine_restore(b, bb, lb), 0);
    is_int(quay_mem_resolve(b, 0, key, 8, 8, QUAY_MEM_READ, &addr), 0);
    ok(addr == win + 8);
    is_int(quay_mem_deregister(b, key), 0);
    quay_stats ra, rb;
    quay_engine_stats(a, &ra);
    quay_engine_stats(b, &rb);
    is_int(ra.reqs_in_use, sa.reqs_in_use);
    is_int(rb.reqs_in_use, sb.reqs_in_use);
    is_int(rb.umsgs_in_use, sb.umsgs_in_use);
    is_int(rb.bytes_unexpected, sb.bytes_unexpected);
    is_int(quay_channel_resume(a), 0);
    is_int(quay_channel_resume(b), 0);
    is_int(quay_irecv(b, cb, r_unexp, sizeof r_unexp, 0, 5, &q[3]), 0);
    is_int(quay_irecv(b, cb, rbig, sizeof rbig, 0, 6, &q[4]), 0);
    is_int(quay_imrecv(b, taken, r_taken, sizeof r_taken, &q[5]), 0);
    settle();
    ok(tn_good(q[0], 13) && strcmp(r_exact, text[0]) == 0);
    ok(tn_good(q[1], 14) && strcmp(r_any, text[1]) == 0);
    ok(tn_good(q[2], 12) && strcmp(r_wild, text[2]) == 0);
    ok(tn_good(q[3], 11) && strcmp(r_unexp, text[3]) == 0);
    ok(tn_good(q[4], sizeof big) && memcmp(rbig, big, sizeof big) == 0);
    ok(tn_good(q[5], 6) && strcmp(r_taken, text[4]) == 0);
    for (int i = 0; i < 6; i++) {
        ok_msg(tn_done(s[i], NULL), "send %d complete", i);
        quay_req_free(a, s[i]);
        quay_req_free(b, q[i]);
    }
    quay_engine_stats(b, &rb);
    is_int(rb.reqs_in_use, 0);
    is_int(rb.umsgs_in_use, 0);
    is_int(rb.peers_failed, 0);
    free(ba);
    free(bb);
    tn_fini(&T);
}

/* Persistent requests, inactive and active, survive a context switch and
 * go on with their rounds (their arguments travel in the blob). */
static void t_persistent(void)
{
    setup(2, 1);
    quay_engine *a = T.e[0], *b = T.e[1];
    char r1[16] = "", r2[16] = "";
    char msg[16] = "round one";
    quay_req *ps, *pr1, *pr2, *o;
    is_int(quay_send_init(a, T.world[0], msg, 10, 1, 4, QUAY_SEND_STANDARD, &ps), 0);
    is_int(quay_recv_init(b, T.world[1], r1, sizeof r1, 0, 4, &pr1), 0);
    is_int(quay_recv_init(b, T.world[1], r2, sizeof r2, QUAY_ANY_SOURCE, 5, &pr2), 0);
    is_int(quay_start(b, pr2), 0); /* active, posted */
    is_int(quay_channel_quiesce(a), 0);
    is_int(quay_channel_quiesce(b), 0);
    settle();
    size_t la = 0, lb = 0;
    unsigned char *ba = save(a, &la), *bb = save(b, &lb);
    ok(ba != NULL && bb != NULL);
    is_int(quay_channel_reset(a, 0x55), 0);
    is_int(quay_channel_reset(b, 0x55), 0);
    is_int(quay_engine_restore(a, ba, la), 0);
    is_int(quay_engine_restore(b, bb, lb), 0);
    is_int(quay_channel_resume(a), 0);
    is_int(quay_channel_resume(b), 0);
    ok(quay_req_test(ps, NULL) && quay_req_test(pr1, NULL)); /* still inactive */
    ok(!quay_req_test(pr2, NULL));                           /* still active */
    is_int(quay_start(b, pr2), QUAY_ESTATE);
    for (int k = 0; k < 3; k++) {
        msg[6] = (char)('a' + k);
        is_int(quay_start(b, pr1), 0);
        is_int(quay_start(a, ps), 0);
        settle();
        ok(tn_good(ps, 10) && tn_good(pr1, 10) && strcmp(r1, msg) == 0);
    }
    is_int(quay_isend(a, T.world[0], "to pr2", 7, 1, 5, QUAY_SEND_STANDARD, &o), 0);
    settle();
    ok(tn_good(pr2, 7) && strcmp(r2, "to pr2") == 0);
    quay_req_free(a, o);
    quay_req_free(a, ps);
    quay_req_free(b, pr1);
    quay_req_free(b, pr2);
    quay_stats st;
    quay_engine_stats(b, &st);
    is_int(st.reqs_in_use, 0);
    free(ba);
    free(bb);
    tn_fini(&T);
}

/* A blob with state in it, saved from rank 1 (which stays quiesced). */
static unsigned char *busy_blob(size_t *len)
{
    setup(2, 1);
    static char rb[4][16];
    quay_req *r;
    for (int i = 0; i < 4; i++)
        quay_irecv(T.e[1], T.world[1], rb[i], sizeof rb[i], i % 2 ? QUAY_ANY_SOURCE : 0, i,
                   &r);
    for (int i = 0; i < 3; i++)
        quay_isend(T.e[0], T.world[0], "unexpected", 11, 1, 10 + i, QUAY_SEND_STANDARD, &r);
    settle();
    quay_channel_quiesce(T.e[1]);
    quay_isend(T.e[1], T.world[1], "queued", 7, 0, 3, QUAY_SEND_STANDARD, &r);
    settle();
    return save(T.e[1], len);
}

/* Forged: any byte of the body changed and the checksum made right.
 * Restore must take it or refuse it without harm; a refusal leaves the
 * channel as it was (`cur`: what it saves as now; a forged blob that was
 * taken may have moved its clock or counters on). */
static void forge_every_byte(quay_engine *e, const unsigned char *blob, size_t len)
{
    unsigned char *m = malloc(len);
    int unharmed = 1, refused = 0, taken_n = 0;
    size_t lc = 0;
    unsigned char *cur = save(e, &lc);
    for (size_t i = 16; i + 4 < len && cur != NULL && m != NULL; i++) {
        static const uint8_t xors[3] = {0x01, 0x80, 0xFF};
        for (int x = 0; x < 3; x++) {
            memcpy(m, blob, len);
            m[i] ^= xors[x];
            fix_crc(m, len);
            int rc = quay_engine_restore(e, m, len);
            if (rc == 0) {
                taken_n++;
                unharmed &= quay_engine_restore(e, blob, len) == 0;
                free(cur);
                cur = save(e, &lc);
            } else {
                refused++;
                unharmed &= (rc == QUAY_ECORRUPT || rc == QUAY_EFOREIGN) &&
                            (refused % 16 != 0 || saves_as(e, cur, lc));
            }
        }
    }
    note("forged blobs: %d refused, %d taken (addresses, tags, counters, times)", refused,
         taken_n);
    ok(unharmed);
    ok(cur != NULL && saves_as(e, cur, lc));
    free(cur);
    free(m);
}

static void t_reject(void)
{
    size_t len = 0;
    unsigned char *blob = busy_blob(&len);
    ok(blob != NULL);
    if (blob == NULL)
        return;
    quay_engine *e = T.e[1];
    unsigned char *m = malloc(len);

    /* Every flipped bit anywhere: the checksum catches it. */
    int crc_caught = 1;
    for (size_t i = 0; i < len; i++) {
        memcpy(m, blob, len);
        m[i] ^= (uint8_t)(1u << (i % 8));
        crc_caught &= quay_engine_restore(e, m, len) == QUAY_ECORRUPT;
    }
    ok_msg(crc_caught, "each of %zu single-bit flips rejected (QUAY_ECORRUPT)", len);
    int cut = 1;
    for (size_t l = 0; l < len; l += 1 + l / 4)
        cut &= quay_engine_restore(e, blob, l) == QUAY_ECORRUPT;
    ok_msg(cut, "every truncation rejected");
    ok(saves_as(e, blob, len));

    memcpy(m, blob, len);
    m[8] = 99; /* version */
    fix_crc(m, len);
    is_int(quay_engine_restore(e, m, len), QUAY_EVERSION);

    forge_every_byte(e, blob, len);

    /* Foreign: another rank, another configuration, another channel. */
    size_t l0 = 0;
    quay_channel_quiesce(T.e[0]);
    settle();
    unsigned char *b0 = save(T.e[0], &l0);
    is_int(quay_engine_restore(e, b0, l0), QUAY_EFOREIGN);
    free(b0);
    quay_config c;
    tn_config(&c, 1, 2);
    c.flow = QUAY_FLOW_ACKNACK;
    c.channels = 2;
    c.max_requests = 64;
    c.max_unexpected = 64;
    c.max_out = 64;
    quay_engine *f;
    is_int(quay_engine_new(&c, &f), 0);
    quay_channel_quiesce(f);
    is_int(quay_engine_restore(f, blob, len), QUAY_EFOREIGN); /* 2 channels, not 1 */
    quay_engine *f1 = quay_engine_channel(f, 1);
    quay_channel_quiesce(f1);
    is_int(quay_engine_restore(f1, blob, len), QUAY_EFOREIGN);
    quay_engine_free(f);
    free(m);
    free(blob);
    tn_fini(&T);
}

/* Arbitration state in a blob: rank 1 has an announced wildcard (slot
 * with a pending receive), a flagged send to rank 0 and one queued
 * behind it. Forged counts (the slot's pending receives, two flags to a
 * peer, a queue with no flag ahead) are refused by the check, before the
 * channel is touched. */
static void t_reject_arb(void)
{
    quay_config c;
    tn_config(&c, 0, 3);
    c.flow = QUAY_FLOW_ACKNACK;
    c.rto_init_ns = 1000;
    c.rto_max_ns = 16000;
    c.max_requests = 64;
    c.max_unexpected = 64;
    c.max_out = 64;
    c.transport_caps = QUAY_CAP_RDMA_PUT;
    c.rtr = 1;
    c.rtr_any = 1;
    is_int(tn_init(&T, 3, &c), 0);
    now_ns = 0;
    static uint8_t rb[2][4096], sb[4096];
    quay_req *r, *s1, *s2;
    quay_irecv(T.e[0], T.world[0], rb[0], sizeof rb[0], QUAY_ANY_SOURCE, 5, &r);
    quay_irecv(T.e[1], T.world[1], rb[1], sizeof rb[1], QUAY_ANY_SOURCE, 6, &r);
    settle();
    quay_channel_quiesce(T.e[1]);
    quay_isend(T.e[1], T.world[1], sb, 3000, 0, 5, QUAY_SEND_STANDARD, &s1);
    quay_isend(T.e[1], T.world[1], sb, 3000, 0, 5, QUAY_SEND_STANDARD, &s2);
    settle();
    is_int(r->state, QUAY_RS_RECV_ANY);
    is_int(s1->state, QUAY_RS_SEND_ANY);
    is_int(s2->state, QUAY_RS_SEND_QUEUED);
    size_t len = 0;
    unsigned char *blob = save(T.e[1], &len);
    ok(blob != NULL);
    if (blob != NULL)
        forge_every_byte(T.e[1], blob, len);
    free(blob);
    tn_fini(&T);
}

/* Two channels, one context id on each: traffic stays on its channel, and
 * quiescing one leaves the other running. */
static void t_channels(void)
{
    setup(2, 2);
    quay_engine *a1 = quay_engine_channel(T.e[0], 1), *b1 = quay_engine_channel(T.e[1], 1);
    quay_comm *ca1, *cb1;
    is_int(quay_comm_create(a1, 0, 2, NULL, &ca1), 0); /* same context id as world */
    is_int(quay_comm_create(b1, 0, 2, NULL, &cb1), 0);
    char r0[8] = "", r1[8] = "";
    quay_req *s0, *s1, *q0, *q1;
    is_int(quay_isend(a1, ca1, "one", 4, 1, 3, QUAY_SEND_STANDARD, &s1), 0);
    is_int(quay_isend(T.e[0], T.world[0], "zero", 5, 1, 3, QUAY_SEND_STANDARD, &s0), 0);
    is_int(quay_irecv(T.e[1], T.world[1], r0, sizeof r0, 0, 3, &q0), 0);
    is_int(quay_irecv(b1, cb1, r1, sizeof r1, 0, 3, &q1), 0);
    is_int(quay_isend(a1, T.world[0], "x", 2, 1, 3, QUAY_SEND_STANDARD, &s0), QUAY_EINVAL);
    settle();
    ok(tn_good(q0, 5) && strcmp(r0, "zero") == 0);
    ok(tn_good(q1, 4) && strcmp(r1, "one") == 0);
    quay_req_free(T.e[1], q0);
    quay_req_free(b1, q1);
    quay_req_free(a1, s1);

    /* The user channel quiesced: the system channel goes on. */
    quay_channel_quiesce(a1);
    is_int(quay_isend(a1, ca1, "later", 6, 1, 4, QUAY_SEND_STANDARD, &s1), 0);
    is_int(quay_isend(T.e[0], T.world[0], "now", 4, 1, 4, QUAY_SEND_STANDARD, &s0), 0);
    is_int(quay_irecv(T.e[1], T.world[1], r0, sizeof r0, 0, 4, &q0), 0);
    is_int(quay_irecv(b1, cb1, r1, sizeof r1, 0, 4, &q1), 0);
    settle();
    ok(tn_good(q0, 4) && strcmp(r0, "now") == 0);
    ok(!tn_done(q1, NULL));
    quay_channel_resume(a1);
    settle();
    ok(tn_good(q1, 6) && strcmp(r1, "later") == 0);

    /* A frame naming a channel the engine does not have is refused. */
    is_int(quay_isend(T.e[0], T.world[0], "z", 2, 1, 5, QUAY_SEND_STANDARD, &s0), 0);
    tn_pull_all(&T);
    int i = tn_find(&T, QUAY_PKT_EAGER);
    ok(i >= 0);
    if (i >= 0) {
        uint8_t *p = T.q[i].bytes;
        uint8_t keep = p[3];
        p[3] = (uint8_t)((p[3] & ~7u) | 5u); /* flags bits 8-10: channel 5 */
        is_int(quay_on_packet(T.e[1], 0, p, T.q[i].len), QUAY_EPROTO);
        p[3] = (uint8_t)((p[3] & ~7u) | 1u); /* channel 1: its CRC was for 0 */
        is_int(quay_on_packet(T.e[1], 0, p, T.q[i].len), QUAY_EPROTO);
        p[3] = keep;
    }
    is_int(quay_on_op_done(T.e[0], (uint64_t)7 << OUT_TOKEN_CHAN_SHIFT, 0), QUAY_ESTATE);
    settle();
    quay_stats st;
    quay_engine_stats(b1, &st);
    is_int(st.peers_failed, 0);
    tn_fini(&T);
}

int main(void)
{
    subtest("API: channels, preconditions, sizing", t_api);
    subtest("round trip: every kind of state, another context in between", t_roundtrip);
    subtest("damaged, forged, truncated and foreign blobs rejected, nothing changed",
            t_reject);
    subtest("arbitration state: forged counts refused, nothing changed", t_reject_arb);
    subtest("persistent requests across a context switch", t_persistent);
    subtest("two channels: separate traffic, separate quiesce", t_channels);
    return harness_done_testing();
}
