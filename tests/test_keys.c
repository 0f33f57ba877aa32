/*
 * test_keys.c — memory keys against a hostile rank (docs/threats.md): the
 * key cipher's known answer, the secret an engine must be given, keys
 * honoured only for the peers they were made for (one peer, a
 * communicator, the world; a rendezvous key for its one peer and message,
 * revoked at its FIN), forged keys counted and traced, and a peer that
 * keeps forging failed; stale keys are not forgeries.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/mem.h"
#include "harness.h"
#include "testnet.h"

static void t_cipher(void)
{
    /* Speck64/128's test vector (Beaulieu et al., appendix C). */
    uint32_t k[4] = {0x03020100u, 0x0b0a0908u, 0x13121110u, 0x1b1a1918u}, rk[MEM_KEY_ROUNDS];
    mem_cipher_schedule(rk, k);
    uint64_t pt = 0x3b7265747475432dull, ct = 0x8c6fa548454e028bull;
    ok_msg(mem_cipher_encrypt(rk, pt) == ct, "known answer");
    ok_msg(mem_cipher_decrypt(rk, ct) == pt, "decrypts back");
    int round_trip = 1;
    uint64_t x = 1;
    for (int i = 0; i < 10000; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        round_trip &= mem_cipher_decrypt(rk, mem_cipher_encrypt(rk, x)) == x;
    }
    ok_msg(round_trip, "10,000 blocks round-trip");
}

static quay_engine *mk(int rank, int n, uint32_t caps, int secret)
{
    quay_config c;
    quay_config_default(&c);
    if (secret)
        memset(c.key_secret, 0x5a, sizeof c.key_secret);
    c.rank = rank;
    c.nranks = n;
    c.transport_caps = caps;
    c.forged_key_limit = 3;
    quay_engine *e = NULL;
    if (quay_engine_new(&c, &e) != 0)
        return NULL;
    return e;
}

static void t_secret(void)
{
    quay_engine *e = mk(0, 2, QUAY_CAP_RDMA_GET, 0);
    ok_msg(e == NULL, "an RDMA transport without a key secret is refused");
    e = mk(0, 2, 0, 0);
    ok(e != NULL);
    static uint8_t buf[16];
    uint64_t k = 1;
    is_int(quay_mem_register(e, buf, sizeof buf, QUAY_MEM_READ, &k), QUAY_ENOTSUP);
    ok(k == 0);
    quay_engine_free(e);
    /* One secret, two ranks: neither's keys open the other's regions. */
    quay_engine *a = mk(0, 2, 0, 1), *b = mk(1, 2, 0, 1);
    uint64_t ka, kb;
    void *p;
    is_int(quay_mem_register(a, buf, sizeof buf, QUAY_MEM_READ, &ka), 0);
    is_int(quay_mem_register(b, buf, sizeof buf, QUAY_MEM_READ, &kb), 0);
    ok(ka != kb);
    is_int(quay_mem_resolve(b, 0, ka, 0, 1, QUAY_MEM_READ, &p), QUAY_ESTATE);
    quay_engine_free(a);
    quay_engine_free(b);
}

static uint32_t forged_traced;
static void on_trace(void *ctx, const quay_trace_event *ev)
{
    (void)ctx;
    if (ev->kind == QUAY_TR_FORGED_KEY)
        forged_traced++;
}

static void t_scope(void)
{
    quay_engine *e = mk(0, 3, 0, 1);
    static uint8_t one[32], grp[32], all[32];
    uint64_t k1, kg, kw;
    void *p;
    quay_stats st;
    quay_set_trace(e, on_trace, NULL);
    forged_traced = 0;
    is_int(quay_mem_register_peer(e, one, sizeof one, QUAY_MEM_READ, 1, &k1), 0);
    is_int(quay_mem_register_peer(e, one, sizeof one, QUAY_MEM_READ, 3, &kw), QUAY_ERANK);
    is_int(quay_mem_resolve(e, 1, k1, 0, 8, QUAY_MEM_READ, &p), 0);
    ok(p == one);
    is_int(quay_mem_resolve(e, 0, k1, 0, 8, QUAY_MEM_READ, &p), 0); /* its owner */
    is_int(quay_mem_resolve(e, 2, k1, 0, 8, QUAY_MEM_READ, &p), QUAY_ESTATE);
    ok(p == NULL);
    quay_engine_stats(e, &st);
    ok_msg(st.forged_keys == 1 && forged_traced == 1, "another peer's key: a forgery");
    is_int(quay_mem_resolve(e, 3, k1, 0, 8, QUAY_MEM_READ, &p), QUAY_ERANK);

    /* A group: the members of a communicator. */
    quay_comm *c;
    int32_t members[2] = {0, 1};
    is_int(quay_comm_create(e, 9, 2, members, &c), 0);
    is_int(quay_mem_register_comm(e, grp, sizeof grp, QUAY_MEM_WRITE, c, &kg), 0);
    is_int(quay_mem_resolve(e, 1, kg, 0, 32, QUAY_MEM_WRITE, &p), 0);
    is_int(quay_mem_resolve(e, 2, kg, 0, 32, QUAY_MEM_WRITE, &p), QUAY_ESTATE);
    is_int(quay_comm_free(e, c), QUAY_EBUSY); /* the region names it */
    is_int(quay_mem_deregister(e, kg), 0);
    is_int(quay_comm_free(e, c), 0);

    /* The world. */
    is_int(quay_mem_register(e, all, sizeof all, QUAY_MEM_READ, &kw), 0);
    is_int(quay_mem_resolve(e, 2, kw, 0, 1, QUAY_MEM_READ, &p), 0);

    /* Stale (deregistered, the slot reused): refused, not a forgery. */
    quay_engine_stats(e, &st);
    uint64_t before = st.forged_keys;
    is_int(quay_mem_deregister(e, k1), 0);
    is_int(quay_mem_resolve(e, 1, k1, 0, 1, QUAY_MEM_READ, &p), QUAY_ESTATE);
    uint64_t k1b;
    is_int(quay_mem_register_peer(e, one, sizeof one, QUAY_MEM_READ, 1, &k1b), 0);
    is_int(quay_mem_resolve(e, 1, k1, 0, 1, QUAY_MEM_READ, &p), QUAY_ESTATE);
    quay_engine_stats(e, &st);
    is_int(st.forged_keys, before);
    quay_engine_free(e);
}

static void t_strikes(void)
{
    quay_engine *e = mk(0, 3, 0, 1);
    static uint8_t all[32], rbuf[8];
    uint64_t kw;
    void *p;
    quay_comm *w;
    quay_req *r;
    quay_status rs;
    quay_stats st;
    is_int(quay_comm_create(e, 0, 3, NULL, &w), 0);
    is_int(quay_mem_register(e, all, sizeof all, QUAY_MEM_READ, &kw), 0);
    is_int(quay_irecv(e, w, rbuf, sizeof rbuf, 2, 0, &r), 0);
    /* forged_key_limit 3: the fourth forgery fails the peer. */
    uint64_t x = 99;
    for (int i = 0; i < 3; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        is_int(quay_mem_resolve(e, 2, x, 0, 1, QUAY_MEM_READ, &p), QUAY_ESTATE);
    }
    quay_engine_stats(e, &st);
    ok(st.forged_keys == 3 && st.peers_failed == 0 && !quay_req_test(r, &rs));
    is_int(quay_mem_resolve(e, 2, kw ^ 1, 0, 1, QUAY_MEM_READ, &p), QUAY_ESTATE);
    quay_engine_stats(e, &st);
    ok_msg(st.peers_hostile == 1 && st.peers_failed == 1, "the fourth forgery fails it");
    ok_msg(quay_req_test(r, &rs) == 1 && rs.error == QUAY_EPEER, "its receive ends EPEER");
    /* A failed peer's keys count for nothing, not even a valid one. */
    is_int(quay_mem_resolve(e, 2, kw, 0, 1, QUAY_MEM_READ, &p), QUAY_ESTATE);
    is_int(quay_mem_resolve(e, 1, kw, 0, 1, QUAY_MEM_READ, &p), 0); /* others: untouched */
    quay_req_free(e, r);
    quay_engine_free(e);
}

/* A rendezvous key is good for the message's one peer, until its FIN:
 * rank 2 can neither read rank 0's send buffer (GET) nor write rank 1's
 * receive buffer (PUT), though it knows the key. */
static void rndv_bound(uint32_t mode)
{
    quay_config cfg[3];
    for (int r = 0; r < 3; r++) {
        tn_config(&cfg[r], r, 3);
        cfg[r].transport_caps = QUAY_CAP_RDMA_GET | QUAY_CAP_RDMA_PUT;
        cfg[r].rndv_mode = mode;
    }
    testnet t;
    is_int(tn_init_each(&t, 3, cfg, 1), 0);
    static uint8_t msg[1000], got[1000];
    tn_fill(msg, sizeof msg, 3);
    memset(got, 0, sizeof got);
    quay_req *s, *r;
    is_int(quay_isend(t.e[0], t.world[0], msg, sizeof msg, 1, 5, QUAY_SEND_STANDARD, &s), 0);
    is_int(quay_irecv(t.e[1], t.world[1], got, sizeof got, 0, 5, &r), 0);
    int i = -1;
    for (int step = 0; step < 100 && (i = tn_find(&t, TN_RDMA)) < 0; step++) {
        tn_pull_all(&t);
        if ((i = tn_find(&t, TN_RDMA)) >= 0)
            break;
        if (t.nq > 0)
            tn_deliver(&t, 0);
    }
    ok_msg(i >= 0, "an RDMA operation of the rendezvous");
    if (i < 0) {
        tn_fini(&t);
        return;
    }
    uint64_t key = t.q[i].key;
    int32_t owner = t.q[i].to, user = t.q[i].from;
    uint32_t access = mode == QUAY_RNDV_GET ? QUAY_MEM_READ : QUAY_MEM_WRITE;
    void *p;
    is_int(quay_mem_resolve(t.e[owner], 2, key, 0, 8, access, &p), QUAY_ESTATE);
    is_int(quay_mem_resolve(t.e[owner], user, key, 0, 8, access, &p), 0);
    tn_pump(&t);
    quay_status st;
    ok(tn_done(r, &st) && st.error == 0 && st.count == sizeof msg &&
       memcmp(got, msg, sizeof msg) == 0);
    ok(tn_done(s, &st) && st.error == 0);
    quay_stats qs;
    quay_engine_stats(t.e[owner], &qs);
    is_int(qs.forged_keys, 1);
    /* Revoked at the FIN: stale now, for its own peer too. */
    is_int(quay_mem_resolve(t.e[owner], user, key, 0, 8, access, &p), QUAY_ESTATE);
    quay_engine_stats(t.e[owner], &qs);
    is_int(qs.forged_keys, 1);
    quay_req_free(t.e[0], s);
    quay_req_free(t.e[1], r);
    tn_fini(&t);
}

static void t_rndv_get(void) { rndv_bound(QUAY_RNDV_GET); }
static void t_rndv_put(void) { rndv_bound(QUAY_RNDV_PUT); }

int main(void)
{
    subtest("the key cipher: Speck64/128", t_cipher);
    subtest("keys need a secret", t_secret);
    subtest("keys honoured for their peers only", t_scope);
    subtest("a peer that keeps forging is failed", t_strikes);
    subtest("a rendezvous GET key: its peer, its message", t_rndv_get);
    subtest("a rendezvous PUT key: its peer, its message", t_rndv_put);
    return harness_done_testing();
}
