/*
 * test_atomic.c — remote atomics (quay_iatomic, quay_mem_atomic) and the
 * MCS queue lock built on them (quay_lock_*), over nicsim's adversarial
 * scheduler: fetch-and-add from every rank at once returns each old value
 * exactly once; compare-and-swap hits and misses; keys are checked; and
 * under contention from up to 8 ranks, over many seeds, no two ranks are
 * ever inside the critical section together and every acquire completes.
 */
#include <stdlib.h>
#include <string.h>

#include <quay/quay_coll.h>

#include "harness.h"
#include "simworld.h"

#define MAXN 8

typedef simworld world;

/* Small pools; the transport capabilities under test. */
static void atomic_cfg(quay_config *c, void *arg)
{
    c->max_requests = 64;
    c->max_unexpected = 64;
    c->flags &= ~(uint32_t)QUAY_CFG_CHECK_ORACLE;
    c->transport_caps = *(const uint32_t *)arg;
}

static int world_new(world *w, int n, uint64_t seed, uint32_t caps)
{
    return sw_new(w, n, seed, atomic_cfg, &caps, 0);
}

#define ALL_CAPS (QUAY_CAP_RDMA_PUT | QUAY_CAP_RDMA_GET | QUAY_CAP_RDMA_ATOMIC)

static void t_local(void)
{
    world w;
    ok(world_new(&w, 1, 1, 0) == 0);
    quay_engine *e = w.e[0];
    uint64_t mem[4] = {10, 20, 30, 40}, ro[2] = {7, 8}, key, rokey, old;
    is_int(quay_mem_register(e, mem, sizeof mem, QUAY_MEM_READ | QUAY_MEM_WRITE, &key), 0);
    is_int(quay_mem_register(e, ro, sizeof ro, QUAY_MEM_READ, &rokey), 0);
    is_int(quay_mem_atomic(e, key, 8, QUAY_ATOMIC_FADD, 5, 0, &old), 0);
    ok(old == 20 && mem[1] == 25);
    is_int(quay_mem_atomic(e, key, 16, QUAY_ATOMIC_SWAP, 99, 0, &old), 0);
    ok(old == 30 && mem[2] == 99);
    is_int(quay_mem_atomic(e, key, 0, QUAY_ATOMIC_CAS, 1, 11, &old), 0);
    ok(old == 10 && mem[0] == 10); /* miss: unchanged */
    is_int(quay_mem_atomic(e, key, 0, QUAY_ATOMIC_CAS, 1, 10, &old), 0);
    ok(old == 10 && mem[0] == 1); /* hit */
    /* Wrapping add. */
    mem[3] = UINT64_MAX;
    is_int(quay_mem_atomic(e, key, 24, QUAY_ATOMIC_FADD, 2, 0, &old), 0);
    ok(mem[3] == 1);
    /* Refused: beyond the region, read-only, forged, bad op. */
    is_int(quay_mem_atomic(e, key, 25, QUAY_ATOMIC_FADD, 1, 0, &old), QUAY_EPROTO);
    is_int(quay_mem_atomic(e, rokey, 0, QUAY_ATOMIC_FADD, 1, 0, &old), QUAY_EPROTO);
    ok(ro[0] == 7);
    is_int(quay_mem_atomic(e, key ^ 0x5A5A0000ull, 0, QUAY_ATOMIC_FADD, 1, 0, &old),
           QUAY_ESTATE);
    is_int(quay_mem_atomic(e, key, 0, 9, 1, 0, &old), QUAY_EINVAL);
    /* To this rank itself: done at once, through the same checks. */
    quay_req *q;
    uint64_t res = 0;
    is_int(quay_iatomic(e, 0, QUAY_ATOMIC_FADD, key, 8, 100, 0, &res, &q), 0);
    quay_status st;
    ok(quay_req_test(q, &st) && st.error == 0 && res == 25 && mem[1] == 125);
    quay_req_free(e, q);
    is_int(quay_iatomic(e, 0, QUAY_ATOMIC_FADD, rokey, 0, 1, 0, &res, &q), 0);
    ok(quay_req_test(q, &st) && st.error == QUAY_EPROTO);
    quay_req_free(e, q);
    is_int(quay_iatomic(e, 0, 0, key, 0, 1, 0, &res, &q), QUAY_EINVAL);
    is_int(quay_iatomic(e, 0, QUAY_ATOMIC_SWAP, key, 0, 1, 0, NULL, &q), QUAY_EINVAL);
    is_int(quay_iatomic(e, 3, QUAY_ATOMIC_SWAP, key, 0, 1, 0, &res, &q), QUAY_ERANK);
    sw_free(&w);
    /* A remote atomic needs the transport to do it. */
    ok(world_new(&w, 2, 1, QUAY_CAP_RDMA_PUT) == 0);
    is_int(quay_iatomic(w.e[0], 1, QUAY_ATOMIC_FADD, 1, 0, 1, 0, &res, &q), QUAY_ENOTSUP);
    sw_free(&w);
}

/* Every rank adds to one counter k times at once: the old values are
 * exactly 0 .. n k - 1, each once. */
static void t_fadd(void)
{
    int good = 1;
    for (uint64_t seed = 1; seed <= 30 && good; seed++) {
        int n = 2 + (int)(seed % 7);
        enum { K = 6 };
        world w;
        good &= world_new(&w, n, seed, ALL_CAPS) == 0;
        uint64_t counter = 0, key;
        good &= quay_mem_register(w.e[0], &counter, 8, QUAY_MEM_READ | QUAY_MEM_WRITE, &key) ==
                0;
        uint64_t res[MAXN][K];
        quay_req *q[MAXN][K];
        for (int r = 0; r < n; r++)
            for (int k = 0; k < K; k++)
                good &= quay_iatomic(w.e[r], 0, QUAY_ATOMIC_FADD, key, 0, 1, 0, &res[r][k],
                                     &q[r][k]) == 0;
        good &= sw_run(&w) == NICSIM_RUN_IDLE;
        uint8_t seen[MAXN * K] = {0};
        for (int r = 0; r < n; r++)
            for (int k = 0; k < K; k++) {
                quay_status st;
                good &= quay_req_test(q[r][k], &st) && st.error == 0 && res[r][k] < (uint64_t)n * K &&
                        !seen[res[r][k]]++;
                quay_req_free(w.e[r], q[r][k]);
            }
        good &= counter == (uint64_t)n * K;
        sw_free(&w);
    }
    ok_msg(good, "30 seeds, 2..8 ranks, 6 fetch-and-adds each: every old value once");
}

/* ---- the lock ----------------------------------------------------------------- */

enum { T_IDLE, T_ACQ, T_CS, T_REL, T_DONE };

static void t_lock(void)
{
    int good = 1, seeds = 0;
    uint64_t total = 0, waits = 0;
    for (uint64_t seed = 1; seed <= 60 && good; seed++) {
        int n = 2 + (int)(seed % 7), K = 8;
        world w;
        good &= world_new(&w, n, seed, ALL_CAPS) == 0;
        uint64_t lockword = 0, lkey;
        uint64_t rec[MAXN][2];
        quay_lock_rec recs[MAXN];
        good &= quay_mem_register(w.e[0], &lockword, 8, QUAY_MEM_READ | QUAY_MEM_WRITE,
                                  &lkey) == 0;
        for (int r = 0; r < n; r++) {
            good &= quay_mem_register(w.e[r], rec[r], sizeof rec[r],
                                      QUAY_MEM_READ | QUAY_MEM_WRITE, &recs[r].key) == 0;
            recs[r].offset = 0;
        }
        quay_lock l[MAXN];
        int st[MAXN], done[MAXN], cs_left[MAXN];
        int owner = -1, finished = 0;
        for (int r = 0; r < n; r++) {
            good &= quay_lock_init(&l[r], w.e[r], 0, lkey, 0, recs, rec[r]) == 0;
            st[r] = T_IDLE;
            done[r] = 0;
        }
        uint64_t rng = seed * 0x9E3779B97F4A7C15ull;
        for (int it = 0; it < 2000000 && finished < n && good; it++) {
            rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
            int r = (int)(rng % (uint64_t)n);
            int rc;
            switch (st[r]) {
            case T_IDLE:
                if (quay_lock_acquire(&l[r]) == 0)
                    st[r] = T_ACQ;
                break;
            case T_ACQ:
                rc = quay_lock_test(&l[r]);
                if (rc < 0)
                    good = 0;
                if (rc == 1) {
                    if (owner != -1) {
                        note("seed %llu: rank %d entered while %d holds it",
                             (unsigned long long)seed, r, owner);
                        good = 0;
                    }
                    owner = r;
                    cs_left[r] = (int)(rng >> 40) % 5;
                    st[r] = T_CS;
                } else {
                    waits++;
                }
                break;
            case T_CS:
                if (cs_left[r]-- > 0)
                    break;
                owner = -1;
                good &= quay_lock_release(&l[r]) == 0;
                st[r] = T_REL;
                break;
            case T_REL:
                rc = quay_lock_test(&l[r]);
                if (rc < 0)
                    good = 0;
                if (rc == 1) {
                    total++;
                    st[r] = ++done[r] == K ? T_DONE : T_IDLE;
                    finished += st[r] == T_DONE;
                }
                break;
            default:
                break;
            }
            nicsim_touch(w.sim, r);
            for (int k = (int)(rng >> 60) % 4; k > 0; k--)
                if (nicsim_step(w.sim) <= 0)
                    break;
        }
        good &= finished == n && lockword == 0;
        if (finished != n)
            note("seed %llu: only %d of %d ranks finished", (unsigned long long)seed, finished,
                 n);
        good &= sw_run(&w) == NICSIM_RUN_IDLE;
        for (int r = 0; r < n; r++) {
            quay_stats s;
            quay_engine_stats(w.e[r], &s);
            good &= s.reqs_in_use == 0;
        }
        sw_free(&w);
        seeds++;
    }
    ok_msg(good, "%d seeds, 2..8 ranks, 8 acquisitions each (%llu in all, %llu waiting "
                 "polls): mutual exclusion, every acquire done, the lock word free at the end",
           seeds, (unsigned long long)total, (unsigned long long)waits);
}

int main(void)
{
    subtest("quay_mem_atomic and local quay_iatomic", t_local);
    subtest("fetch-and-add from every rank", t_fadd);
    subtest("MCS lock under contention", t_lock);
    return done_testing();
}
