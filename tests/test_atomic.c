/*
 * test_atomic.c — remote atomics (quay_iatomic, quay_mem_atomic) and the
 * MCS queue lock built on them (quay_lock_*), over nicsim's adversarial
 * scheduler: fetch-and-add from every rank at once returns each old value
 * exactly once; compare-and-swap hits and misses; keys are checked; and
 * under contention from up to 8 ranks, over many seeds, no two ranks are
 * ever inside the critical section together and every acquire completes.
 * Random histories of fetch-and-add, swap and compare-and-swap from 2..8
 * ranks, several in flight per rank, on one or two words, are checked to
 * be linearizable (a Wing-Gong search against the sequential
 * specification, itself checked to reject non-linearizable histories).
 */
#include <stdio.h>
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
    is_int(quay_mem_atomic(e, 0, key, 8, QUAY_ATOMIC_FADD, 5, 0, &old), 0);
    ok(old == 20 && mem[1] == 25);
    is_int(quay_mem_atomic(e, 0, key, 16, QUAY_ATOMIC_SWAP, 99, 0, &old), 0);
    ok(old == 30 && mem[2] == 99);
    is_int(quay_mem_atomic(e, 0, key, 0, QUAY_ATOMIC_CAS, 1, 11, &old), 0);
    ok(old == 10 && mem[0] == 10); /* miss: unchanged */
    is_int(quay_mem_atomic(e, 0, key, 0, QUAY_ATOMIC_CAS, 1, 10, &old), 0);
    ok(old == 10 && mem[0] == 1); /* hit */
    /* Wrapping add. */
    mem[3] = UINT64_MAX;
    is_int(quay_mem_atomic(e, 0, key, 24, QUAY_ATOMIC_FADD, 2, 0, &old), 0);
    ok(mem[3] == 1);
    /* Refused: beyond the region, read-only, forged, bad op. */
    is_int(quay_mem_atomic(e, 0, key, 25, QUAY_ATOMIC_FADD, 1, 0, &old), QUAY_EPROTO);
    is_int(quay_mem_atomic(e, 0, rokey, 0, QUAY_ATOMIC_FADD, 1, 0, &old), QUAY_EPROTO);
    ok(ro[0] == 7);
    is_int(quay_mem_atomic(e, 0, key ^ 0x5A5A0000ull, 0, QUAY_ATOMIC_FADD, 1, 0, &old),
           QUAY_ESTATE);
    is_int(quay_mem_atomic(e, 0, key, 0, 9, 1, 0, &old), QUAY_EINVAL);
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

/* ---- linearizability -------------------------------------------------------- */

/* One operation of a history on one word: what was asked, what came
 * back, and when on the test's logical clock it was invoked (the
 * quay_iatomic call) and responded (the first quay_req_test that saw it
 * done). A before B in real time iff A.resp < B.inv. */
typedef struct lin_op {
    uint32_t kind; /* QUAY_ATOMIC_* */
    uint64_t operand, compare, result;
    uint64_t inv, resp;
} lin_op;

enum { LIN_MAXOPS = 16 };

typedef struct lin_hist {
    int m;
    uint64_t init, final; /* the word before the first op and at the end */
    lin_op op[LIN_MAXOPS];
} lin_hist;

/* The sequential specification: the word after o is applied to s (o
 * returns s). */
static uint64_t lin_apply(const lin_op *o, uint64_t s)
{
    switch (o->kind) {
    case QUAY_ATOMIC_FADD: return s + o->operand;
    case QUAY_ATOMIC_SWAP: return o->operand;
    default: return s == o->compare ? o->operand : s;
    }
}

/* Memo of (linearized set, word) states already found to lead nowhere;
 * entries of older searches are told apart by generation. */
typedef struct lin_memo_ent {
    uint32_t gen, mask;
    uint64_t val;
} lin_memo_ent;

#define LIN_MEMO (1u << 16)
static lin_memo_ent lin_memo[LIN_MEMO];
static uint32_t lin_gen;
static uint64_t lin_nodes;

/* 1 if (mask, val) was visited in this search; else records it (when the
 * neighbourhood is crowded it records nothing: slower, still right). */
static int lin_seen(uint32_t mask, uint64_t val)
{
    uint64_t h = (uint64_t)mask * 0x9E3779B97F4A7C15ull ^ val * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
    for (uint32_t i = 0; i < 32; i++) {
        lin_memo_ent *x = &lin_memo[(h + i) & (LIN_MEMO - 1)];
        if (x->gen != lin_gen) {
            x->gen = lin_gen;
            x->mask = mask;
            x->val = val;
            return 0;
        }
        if (x->mask == mask && x->val == val)
            return 1;
    }
    return 0;
}

/* Can the ops not in `done` be linearized after those in it, the word
 * being `val`? An op may come next iff no other pending op responded
 * before it was invoked, and it returned exactly the current word. */
static int lin_dfs(const lin_hist *h, uint32_t done, uint64_t val)
{
    uint32_t all = (1u << h->m) - 1;
    if (done == all)
        return val == h->final;
    if (lin_seen(done, val))
        return 0;
    lin_nodes++;
    uint64_t minresp = UINT64_MAX;
    for (int i = 0; i < h->m; i++)
        if (!(done >> i & 1) && h->op[i].resp < minresp)
            minresp = h->op[i].resp;
    for (int i = 0; i < h->m; i++) {
        const lin_op *o = &h->op[i];
        if (done >> i & 1 || o->inv > minresp || o->result != val)
            continue;
        if (lin_dfs(h, done | 1u << i, lin_apply(o, val)))
            return 1;
    }
    return 0;
}

/* 1 if h is linearizable: some total order of its ops that respects
 * real-time order, in which each op returns the word as the sequential
 * specification has it (from h->init), ending at h->final. */
static int lin_check(const lin_hist *h)
{
    if (h->m < 0 || h->m > LIN_MAXOPS)
        return 0;
    if (++lin_gen == 0) { /* wrapped: stale entries could match */
        memset(lin_memo, 0, sizeof lin_memo);
        lin_gen = 1;
    }
    return lin_dfs(h, 0, h->init);
}

static void lin_dump(const lin_hist *h)
{
    static const char *names[] = {"?", "fadd", "swap", "cas"};
    note("history: init %llu final %llu", (unsigned long long)h->init,
         (unsigned long long)h->final);
    for (int i = 0; i < h->m; i++) {
        const lin_op *o = &h->op[i];
        note("  [%llu, %llu] %s(%llu, %llu) -> %llu", (unsigned long long)o->inv,
             (unsigned long long)o->resp, names[o->kind & 3], (unsigned long long)o->operand,
             (unsigned long long)o->compare, (unsigned long long)o->result);
    }
}

/* Adds op (kind, operand, compare) -> result over [inv, resp] to h. */
static void lin_add(lin_hist *h, uint32_t kind, uint64_t operand, uint64_t compare,
                    uint64_t result, uint64_t inv, uint64_t resp)
{
    h->op[h->m++] = (lin_op){kind, operand, compare, result, inv, resp};
}

/* The checker on hand-built histories: it must accept the linearizable
 * ones and reject the others, or the random test below proves nothing. */
static void t_lin_checker(void)
{
    lin_hist h;
    /* Two concurrent fetch-and-adds of 1 from 0: 0 and 1, final 2. */
    h = (lin_hist){.init = 0, .final = 2};
    lin_add(&h, QUAY_ATOMIC_FADD, 1, 0, 1, 1, 4);
    lin_add(&h, QUAY_ATOMIC_FADD, 1, 0, 0, 2, 3);
    ok_msg(lin_check(&h), "accepted: concurrent fadds returning 1 and 0");
    /* ... both returning the same old value. */
    h.op[0].result = 0;
    ok_msg(!lin_check(&h), "rejected: two fadds returning the same old value");
    /* ... returning 1 and 0 where the one returning 1 finished before
     * the other started (real-time order violated); overlapping, fine. */
    h = (lin_hist){.init = 0, .final = 2};
    lin_add(&h, QUAY_ATOMIC_FADD, 1, 0, 1, 1, 2);
    lin_add(&h, QUAY_ATOMIC_FADD, 1, 0, 0, 3, 4);
    ok_msg(!lin_check(&h), "rejected: a later op's effect seen by an earlier one");
    h.op[0].resp = 3;
    h.op[1].inv = 2;
    ok_msg(lin_check(&h), "accepted: the same ops overlapping");
    /* The final value must match. */
    h = (lin_hist){.init = 0, .final = 0};
    lin_add(&h, QUAY_ATOMIC_SWAP, 5, 0, 0, 1, 2);
    ok_msg(!lin_check(&h), "rejected: a swap that left no trace");
    h.final = 5;
    ok_msg(lin_check(&h), "accepted: the swap's value at the end");
    /* A compare-and-swap that claims to have hit, followed by a read
     * (fadd 0) of the old value; a miss that changed the word. */
    h = (lin_hist){.init = 0, .final = 7};
    lin_add(&h, QUAY_ATOMIC_CAS, 7, 0, 0, 1, 2);
    lin_add(&h, QUAY_ATOMIC_FADD, 0, 0, 0, 3, 4);
    ok_msg(!lin_check(&h), "rejected: a cas hit that a later read does not see");
    h.op[1].result = 7;
    ok_msg(lin_check(&h), "accepted: the read sees it");
    h = (lin_hist){.init = 3, .final = 9};
    lin_add(&h, QUAY_ATOMIC_CAS, 9, 4, 3, 1, 2);
    ok_msg(!lin_check(&h), "rejected: a cas miss that changed the word");
    /* Sixteen concurrent fadds returning 0..15: accepted; with two equal
     * results the whole search space is exhausted and it is rejected. */
    h = (lin_hist){.init = 0, .final = 16};
    for (int i = 0; i < 16; i++)
        lin_add(&h, QUAY_ATOMIC_FADD, 1, 0, (uint64_t)(15 - i), (uint64_t)i, 100);
    lin_nodes = 0;
    ok_msg(lin_check(&h), "accepted: 16 concurrent fadds, each old value once");
    h.op[3].result = h.op[4].result;
    lin_nodes = 0;
    int accepted = lin_check(&h);
    ok_msg(!accepted, "rejected: 16 concurrent fadds with a duplicate (%llu states searched)",
           (unsigned long long)lin_nodes);
    /* Fourteen concurrent reads (fadd 0) of 0 and a final 1: every one of
     * the orders is tried; the memo folds them into the 2^14 - 1 proper
     * subsets of ops linearized so far. */
    h = (lin_hist){.init = 0, .final = 1};
    for (int i = 0; i < 14; i++)
        lin_add(&h, QUAY_ATOMIC_FADD, 0, 0, 0, (uint64_t)i, 100);
    lin_nodes = 0;
    accepted = lin_check(&h);
    ok_msg(!accepted && lin_nodes >= (1u << 14) - 1,
           "rejected: 14 concurrent reads and a final value nobody wrote (%llu states searched)",
           (unsigned long long)lin_nodes);
    h.final = 0;
    ok_msg(lin_check(&h), "accepted: the same with the final value unchanged");
    /* Concurrent swaps and cas: any order fits iff the results chain. */
    h = (lin_hist){.init = 1, .final = 3};
    lin_add(&h, QUAY_ATOMIC_SWAP, 2, 0, 1, 1, 10); /* 1 -> 2 */
    lin_add(&h, QUAY_ATOMIC_CAS, 3, 2, 2, 2, 9);   /* 2 -> 3 */
    lin_add(&h, QUAY_ATOMIC_CAS, 5, 1, 3, 3, 8);   /* miss at 3 */
    ok_msg(lin_check(&h), "accepted: swap, cas hit, cas miss in the one order that fits");
    h.op[2].result = 1; /* a cas with compare 1 that saw 1 hit: the word would be 5 */
    ok_msg(!lin_check(&h), "rejected: a cas that saw its compare value but did not write");
}

/* Random histories: each rank issues fetch-and-adds, swaps and
 * compare-and-swaps (compare values it has seen, so that some hit) to
 * one or two words on random ranks, up to four in flight, while the
 * simulator delivers in its seeded adversarial order; the test polls at
 * random moments. Every word's history must be linearizable. */
#ifdef QUAY_TEST_SANITIZED
#define LIN_SEEDS 200
#else
#define LIN_SEEDS 1000
#endif

typedef struct lin_live {
    int rank, word;
    quay_req *q;
    lin_op o;
    int issued, done;
} lin_live;

static void t_linearizable(void)
{
    int good = 1, seeds = 0, histories = 0, maxm = 0;
    uint64_t ops = 0, kinds[4] = {0}, cas_hits = 0, overlaps = 0, ordered = 0, inflight2 = 0;
    uint64_t nodes = 0;
    for (uint64_t seed = 1; seed <= LIN_SEEDS && good; seed++) {
        uint64_t rng = seed * 0x2545F4914F6CDD1Dull | 1;
#define LIN_RND() (rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17, rng)
        int n = 2 + (int)(seed % 7);
        world w;
        if (world_new(&w, n, seed, ALL_CAPS) != 0) {
            good = 0;
            break;
        }
        /* Rank r's memory: two words; word k of the test lives at word k
         * of rank tr[k]. */
        uint64_t mem[MAXN][2], key[MAXN];
        int nw = 1 + (int)(LIN_RND() % 2), tr[2];
        for (int k = 0; k < nw; k++)
            tr[k] = (int)(LIN_RND() % (uint64_t)n);
        for (int r = 0; r < n; r++) {
            mem[r][0] = LIN_RND() % 4;
            mem[r][1] = LIN_RND() % 4;
            good &= quay_mem_register(w.e[r], mem[r], sizeof mem[r],
                                      QUAY_MEM_READ | QUAY_MEM_WRITE, &key[r]) == 0;
        }
        uint64_t init[2], seen[MAXN][2];
        for (int k = 0; k < nw; k++) {
            init[k] = mem[tr[k]][k];
            for (int r = 0; r < n; r++)
                seen[r][k] = init[k];
        }
        /* The plan: 8..14 ops per word, each from a random rank; a rank
         * issues its own in plan order, at most lim[r] in flight. */
        enum { PLAN = 2 * 14 };
        lin_live op[PLAN];
        int total = 0, per_word[2] = {0};
        for (int k = 0; k < nw; k++) {
            int m = 8 + (int)(LIN_RND() % 7);
            for (int i = 0; i < m; i++, total++) {
                op[total] = (lin_live){.rank = (int)(LIN_RND() % (uint64_t)n), .word = k};
                op[total].o.kind = 1 + (uint32_t)(LIN_RND() % 3);
            }
            per_word[k] = m;
        }
        int lim[MAXN], out[MAXN] = {0}, next[MAXN] = {0};
        for (int r = 0; r < n; r++)
            lim[r] = 1 + (int)(LIN_RND() % 4);
        uint64_t clock = 0;
        int issued = 0, completed = 0;
        for (long it = 0; completed < total && good; it++) {
            if (it > 2000000) {
                note("seed %llu: %d of %d ops completed", (unsigned long long)seed, completed,
                     total);
                for (int i = 0; i < total; i++)
                    if (!op[i].done)
                        note("  op %d: rank %d, word %d on rank %d, kind %u, %s", i, op[i].rank,
                             op[i].word, tr[op[i].word], op[i].o.kind,
                             op[i].issued ? "in flight" : "not issued");
                note("  simulator idle %d, %u events enabled", nicsim_idle(w.sim),
                     nicsim_enabled_events(w.sim));
                good = 0;
                break;
            }
            uint64_t x = LIN_RND();
            int r = (int)((x >> 8) % (uint64_t)n);
            if (x % 10 < 4) {
                /* Rank r issues its next op, if it may. */
                if (out[r] >= lim[r])
                    continue;
                int i = next[r];
                while (i < total && op[i].rank != r)
                    i++;
                next[r] = i;
                if (i == total)
                    continue;
                next[r] = i + 1;
                lin_live *L = &op[i];
                int k = L->word;
                uint64_t y = LIN_RND();
                switch (L->o.kind) {
                case QUAY_ATOMIC_FADD:
                    /* Mostly small; now and then one that wraps. */
                    L->o.operand = y % 8 == 0 ? UINT64_MAX - (y >> 40) % 4 : (y >> 3) % 4;
                    break;
                case QUAY_ATOMIC_SWAP:
                    L->o.operand = (y >> 3) % 6;
                    break;
                default:
                    /* Compare with what this rank last saw (it often
                     * hits), the initial value, or a small guess. */
                    L->o.compare = y % 4 < 2   ? seen[r][k]
                                   : y % 4 < 3 ? init[k]
                                               : (y >> 8) % 6;
                    L->o.operand = (y >> 16) % 2 ? L->o.compare + 1 : (y >> 20) % 6;
                    break;
                }
                L->o.inv = ++clock;
                int rc = quay_iatomic(w.e[r], tr[k], L->o.kind, key[tr[k]], 8 * (uint64_t)k,
                                      L->o.operand, L->o.compare, &L->o.result, &L->q);
                if (rc != 0) {
                    note("seed %llu: quay_iatomic: %s", (unsigned long long)seed,
                         quay_strerror(rc));
                    good = 0;
                    break;
                }
                nicsim_touch(w.sim, r);
                L->issued = 1;
                issued++;
                if (++out[r] >= 2)
                    inflight2++;
            } else if (x % 10 < 7) {
                /* The network moves a few events. */
                for (int s = (int)(x >> 40) % 4; s >= 0; s--) {
                    int rc = nicsim_step(w.sim);
                    if (rc < 0) {
                        note("seed %llu: nicsim_step: %s", (unsigned long long)seed,
                             quay_strerror(rc));
                        good = 0;
                    }
                    if (rc <= 0)
                        break;
                }
            } else {
                /* The test looks at rank r's ops in flight. */
                for (int i = 0; i < total; i++) {
                    lin_live *L = &op[i];
                    if (L->rank != r || !L->issued || L->done)
                        continue;
                    quay_status st;
                    if (!quay_req_test(L->q, &st))
                        continue;
                    L->o.resp = ++clock;
                    L->done = 1;
                    completed++;
                    out[r]--;
                    if (st.error != 0) {
                        note("seed %llu: an atomic failed: %s", (unsigned long long)seed,
                             quay_strerror(st.error));
                        good = 0;
                    }
                    quay_req_free(w.e[r], L->q);
                    seen[r][L->word] = lin_apply(&L->o, L->o.result);
                }
            }
        }
        good &= sw_run(&w) == NICSIM_RUN_IDLE;
        for (int r = 0; r < n; r++) {
            quay_stats s;
            quay_engine_stats(w.e[r], &s);
            good &= s.reqs_in_use == 0;
        }
        /* Check each word's history. */
        for (int k = 0; k < nw && good; k++) {
            lin_hist h = {.init = init[k], .final = mem[tr[k]][k]};
            for (int i = 0; i < total; i++) {
                if (op[i].word != k)
                    continue;
                h.op[h.m++] = op[i].o;
                ops++;
                kinds[op[i].o.kind & 3]++;
                cas_hits += op[i].o.kind == QUAY_ATOMIC_CAS && op[i].o.result == op[i].o.compare;
            }
            for (int a = 0; a < h.m; a++)
                for (int b = a + 1; b < h.m; b++) {
                    const lin_op *A = &h.op[a], *B = &h.op[b];
                    if (A->resp < B->inv || B->resp < A->inv)
                        ordered++;
                    else
                        overlaps++;
                }
            lin_nodes = 0;
            if (!lin_check(&h)) {
                note("seed %llu (n %d): word %d on rank %d is not linearizable",
                     (unsigned long long)seed, n, k, tr[k]);
                lin_dump(&h);
                good = 0;
            }
            nodes += lin_nodes;
            if (h.m > maxm)
                maxm = h.m;
            histories++;
            (void)per_word;
        }
        sw_free(&w);
        seeds++;
#undef LIN_RND
    }
    ok_msg(good, "%d seeds, 2..8 ranks: %d histories (up to %d ops each, %llu ops: %llu fadd, "
                 "%llu swap, %llu cas) linearizable (%llu search states)",
           seeds, histories, maxm, (unsigned long long)ops, (unsigned long long)kinds[1],
           (unsigned long long)kinds[2], (unsigned long long)kinds[3],
           (unsigned long long)nodes);
    ok_msg(cas_hits > 0 && cas_hits < kinds[3], "compare-and-swap both hit (%llu) and missed",
           (unsigned long long)cas_hits);
    ok_msg(overlaps > 0 && ordered > 0,
           "the histories have concurrent (%llu) and real-time-ordered (%llu) pairs, and "
           "ranks had two or more ops in flight (%llu times)",
           (unsigned long long)overlaps, (unsigned long long)ordered,
           (unsigned long long)inflight2);
}

int main(void)
{
    subtest("quay_mem_atomic and local quay_iatomic", t_local);
    subtest("fetch-and-add from every rank", t_fadd);
    subtest("MCS lock under contention", t_lock);
    subtest("linearizability checker on hand-built histories", t_lin_checker);
    subtest("linearizable atomics on random histories", t_linearizable);
    return done_testing();
}
