/*
 * test_coll_algs.c — the collective algorithms' registry
 * (src/collectives/algs.h): every public algorithm value is registered
 * under its name and nothing else is; the config check and
 * quay_agent_post accept exactly the registered values (and AUTO) of
 * each operation; fallbacks end; and every registered algorithm, taken
 * from the registry itself, runs a collective correctly at 5 and 8
 * ranks. (tests/test_coll.c runs each algorithm at every rank count, root
 * and size; this one makes sure a newly registered algorithm runs at all
 * without anyone adding it to a list.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <quay/quay_coll.h>

#include "collectives/algs.h"
#include "harness.h"
#include "simworld.h"

/* The public values, as quay_coll.h spells them: the binary interface. */
static const struct {
    uint32_t kind, id, value;
    const char *name;
} pub[] = {
    {QUAY_OFF_BARRIER, QUAY_BARRIER_DISSEMINATION, 1, "dissemination"},
    {QUAY_OFF_BARRIER, QUAY_BARRIER_PAIRWISE, 2, "pairwise"},
    {QUAY_OFF_BARRIER, QUAY_BARRIER_TREE, 3, "tree"},
    {QUAY_OFF_BCAST, QUAY_BCAST_BINOMIAL, 1, "binomial"},
    {QUAY_OFF_BCAST, QUAY_BCAST_OPTIMAL_TREE, 2, "optimal_tree"},
    {QUAY_OFF_BCAST, QUAY_BCAST_CHAIN, 3, "chain"},
    {QUAY_OFF_BCAST, QUAY_BCAST_SCATTER_ALLGATHER, 4, "scatter_allgather"},
    {QUAY_OFF_REDUCE, QUAY_REDUCE_BINOMIAL, 1, "binomial"},
    {QUAY_OFF_ALLREDUCE, QUAY_ALLREDUCE_RECURSIVE_DOUBLING, 1, "recursive_doubling"},
    {QUAY_OFF_ALLREDUCE, QUAY_ALLREDUCE_RABENSEIFNER, 2, "rabenseifner"},
    {QUAY_OFF_ALLREDUCE, QUAY_ALLREDUCE_RING, 3, "ring"},
};
#define NPUB (sizeof pub / sizeof pub[0])
#define NKINDS 4

/* The largest registered id of kind. */
static uint32_t max_id(uint32_t kind)
{
    uint32_t m = 0;
    for (size_t i = 0; i < coll_nalgs; i++)
        if (coll_algs[i].kind == kind && coll_algs[i].id > m)
            m = coll_algs[i].id;
    return m;
}

static void t_public(void)
{
    ok(QUAY_COLL_AUTO == 0);
    for (size_t i = 0; i < NPUB; i++) {
        const coll_alg *g = coll_alg_find(pub[i].kind, pub[i].id);
        ok_msg(pub[i].id == pub[i].value && g != NULL && g->id == pub[i].id &&
                   strcmp(g->name, pub[i].name) == 0 &&
                   strcmp(quay_coll_alg_name(pub[i].kind, pub[i].id), pub[i].name) == 0,
               "kind %u %s = %u: registered under its name", pub[i].kind, pub[i].name,
               pub[i].value);
    }
    is_size(coll_nalgs, NPUB); /* nothing registered that quay_coll.h lacks */
    for (uint32_t k = QUAY_OFF_BARRIER; k <= QUAY_OFF_ALLREDUCE; k++) {
        is_str(quay_coll_alg_name(k, QUAY_COLL_AUTO), "auto");
        ok_msg(quay_coll_alg_name(k, max_id(k) + 1) == NULL, "kind %u: no id %u", k,
               max_id(k) + 1);
        ok(quay_coll_alg_name(k, UINT32_MAX) == NULL);
    }
    ok(quay_coll_alg_name(0, QUAY_COLL_AUTO) == NULL);
    ok(quay_coll_alg_name(QUAY_OFF_ALLREDUCE + 1, 1) == NULL);
    ok(quay_coll_alg_name(QUAY_OFF_REDUCE, QUAY_BCAST_CHAIN) == NULL);
}

static void t_table(void)
{
    int good = 1;
    uint32_t count[NKINDS + 1] = {0};
    for (size_t i = 0; i < coll_nalgs; i++) {
        const coll_alg *g = &coll_algs[i];
        if (g->kind < QUAY_OFF_BARRIER || g->kind > QUAY_OFF_ALLREDUCE || g->id == 0 ||
            g->build == NULL || g->usable == NULL || g->name == NULL) {
            note("entry %zu: kind %u id %u malformed", i, g->kind, g->id);
            good = 0;
            continue;
        }
        count[g->kind]++;
        for (size_t j = 0; j < i; j++)
            if (coll_algs[j].kind == g->kind &&
                (coll_algs[j].id == g->id || strcmp(coll_algs[j].name, g->name) == 0)) {
                note("entries %zu and %zu: same id or name", j, i);
                good = 0;
            }
        /* A fallback chain stays in its kind and ends at an always-usable
         * algorithm. */
        const coll_alg *f = g;
        size_t hops = 0;
        while (f != NULL && f->usable != coll_usable_any && hops++ < coll_nalgs)
            f = coll_alg_find(g->kind, f->fallback);
        if (f == NULL || f->usable != coll_usable_any) {
            note("%s: its fallbacks do not end", g->name);
            good = 0;
        }
    }
    ok_msg(good, "%zu entries: well formed, (kind, id) and (kind, name) unique, "
                 "fallbacks end", coll_nalgs);
    for (uint32_t k = QUAY_OFF_BARRIER; k <= QUAY_OFF_ALLREDUCE; k++)
        ok_msg(count[k] > 0 && count[k] == max_id(k), "kind %u: ids 1..%u, no gap", k,
               count[k]);
}

/* Every operation is registered once under its kind, with what the
 * generic code calls unconditionally, and its config field is the one
 * the config check reads; its automatic choice is one of its own
 * algorithms for any arguments. */
static void t_ops(void)
{
    static const char *names[NKINDS + 1] = {NULL, "barrier", "bcast", "reduce", "allreduce"};
    for (uint32_t k = QUAY_OFF_BARRIER; k <= QUAY_OFF_ALLREDUCE; k++) {
        const coll_op *op = coll_op_find(k);
        ok_msg(op != NULL && op->kind == k && strcmp(op->name, names[k]) == 0 &&
                   op->configured != NULL && op->choose != NULL,
               "kind %u: registered as %s", k, names[k]);
        if (op == NULL)
            continue;
        quay_config c;
        quay_config_default(&c);
        c.coll_barrier = 11;
        c.coll_bcast = 12;
        c.coll_reduce = 13;
        c.coll_allreduce = 14;
        ok_msg(op->configured(&c) == 10 + k, "%s: reads its own config field", op->name);
        int good = 1;
        for (int32_t size = 1; size <= 64; size = size * 2 + 1)
            for (size_t count = 0; count <= ((size_t)1 << 22); count = count * 3 + 1)
                for (size_t esize = 1; esize <= 8; esize *= 2) {
                    coll_args a = {.count = count, .esize = esize, .size = size,
                                   .degree = 2, .commutative = 1};
                    const coll_alg *g = coll_alg_find(k, op->choose(&a));
                    if (g == NULL || coll_alg_decide(op, QUAY_COLL_AUTO, &a) == NULL)
                        good = 0;
                }
        ok_msg(good, "%s: its automatic choice is registered for it", op->name);
    }
    ok(coll_op_find(0) == NULL && coll_op_find(QUAY_OFF_ALLREDUCE + 1) == NULL);
}

/* ---- the config check and the agent's --------------------------------------------- */

static quay_config base_cfg(void)
{
    quay_config c;
    quay_config_default(&c);
    memset(c.key_secret, 0x5a, sizeof c.key_secret); /* (tests: any fixed secret) */
    c.rank = 0;
    c.nranks = 2;
    return c;
}

static uint32_t *field(quay_config *c, uint32_t kind)
{
    switch (kind) {
    case QUAY_OFF_BARRIER: return &c->coll_barrier;
    case QUAY_OFF_BCAST: return &c->coll_bcast;
    case QUAY_OFF_REDUCE: return &c->coll_reduce;
    default: return &c->coll_allreduce;
    }
}

static int engine_accepts(const quay_config *c)
{
    quay_engine *e = NULL;
    int rc = quay_engine_new(c, &e);
    quay_engine_free(e);
    return rc == 0 ? 1 : rc == QUAY_EINVAL ? 0 : -1;
}

static void t_config(void)
{
    static const uint32_t extra[] = {UINT32_MAX, 0x80000000u, 0x101u};
    for (uint32_t k = QUAY_OFF_BARRIER; k <= QUAY_OFF_ALLREDUCE; k++) {
        int good = 1;
        uint32_t top = max_id(k) + 3;
        for (uint32_t v = 0; v < top + (uint32_t)(sizeof extra / sizeof extra[0]); v++) {
            quay_config c = base_cfg();
            *field(&c, k) = v < top ? v : extra[v - top];
            int want = *field(&c, k) == 0 || coll_alg_find(k, *field(&c, k)) != NULL;
            if (engine_accepts(&c) != want ||
                (coll_config_check(&c) == 0) != want) {
                note("kind %u value %u: %s, expected %s", k, *field(&c, k),
                     want ? "refused" : "accepted", want ? "accepted" : "refused");
                good = 0;
            }
        }
        ok_msg(good, "kind %u: the config takes AUTO and ids 1..%u, refuses %u.. and others",
               k, max_id(k), max_id(k) + 1);
    }
    /* Another operation's values are not this one's (e.g. bcast's
     * QUAY_BCAST_SCATTER_ALLGATHER as coll_barrier). */
    for (uint32_t k = QUAY_OFF_BARRIER; k <= QUAY_OFF_ALLREDUCE; k++)
        for (size_t i = 0; i < coll_nalgs; i++) {
            const coll_alg *g = &coll_algs[i];
            if (g->kind == k || coll_alg_find(k, g->id) != NULL)
                continue;
            quay_config c = base_cfg();
            *field(&c, k) = g->id;
            ok_msg(engine_accepts(&c) == 0, "kind %u refuses %u (kind %u's %s)", k, g->id,
                   g->kind, g->name);
        }
    quay_config c = base_cfg();
    c.coll_barrier = QUAY_BARRIER_TREE;
    c.coll_bcast = QUAY_BCAST_SCATTER_ALLGATHER;
    c.coll_reduce = QUAY_REDUCE_BINOMIAL;
    c.coll_allreduce = QUAY_ALLREDUCE_RING;
    is_int(engine_accepts(&c), 1);
}

/* An agent takes a description's algorithm as the config would. */
static void t_agent(void)
{
    quay_config cfg = base_cfg();
    quay_engine *agent;
    if (!is_int(quay_engine_new(&cfg, &agent), 0))
        return;
    int32_t me = 0;
    int32_t buf[4] = {1, 2, 3, 4}, out[4];
    quay_offload d;
    memset(&d, 0, sizeof d);
    d.ctx = 7;
    d.size = 1; /* done at the post: nothing to pull */
    d.world = &me;
    d.sbuf = buf;
    d.rbuf = out;
    d.count = 4;
    d.dt = QUAY_INT32;
    d.op.kind = QUAY_OP_SUM;
    int good = 1;
    for (uint32_t k = QUAY_OFF_BARRIER; k <= QUAY_OFF_ALLREDUCE; k++) {
        d.kind = (quay_offload_kind)k;
        if (k == QUAY_OFF_BCAST)
            d.count = sizeof buf;
        else
            d.count = 4;
        for (uint32_t v = 0; v <= max_id(k) + 2; v++) {
            d.alg = v;
            d.cookie = k * 100 + v;
            int rc = quay_agent_post(agent, &d);
            int want = v == 0 || coll_alg_find(k, v) != NULL ? 0 : QUAY_EINVAL;
            if (rc != want) {
                note("kind %u alg %u: %s, expected %s", k, v, quay_strerror(rc),
                     quay_strerror(want));
                good = 0;
            }
        }
        d.alg = UINT32_MAX;
        good &= quay_agent_post(agent, &d) == QUAY_EINVAL;
        for (size_t i = 0; i < coll_nalgs; i++) /* another operation's */
            if (coll_algs[i].kind != k && coll_alg_find(k, coll_algs[i].id) == NULL) {
                d.alg = coll_algs[i].id;
                good &= quay_agent_post(agent, &d) == QUAY_EINVAL;
            }
    }
    ok_msg(good, "quay_agent_post takes AUTO and the registered ids, refuses the others");
    quay_action a;
    while (quay_next_action(agent, &a) == 1) {
    }
    quay_engine_free(agent);
}

/* ---- every registered algorithm runs ---------------------------------------------- */

static void set_alg(quay_config *c, void *arg)
{
    const coll_alg *g = arg;
    *field(c, g->kind) = g->id;
    c->coll_tree_degree = 3;
    c->coll_segment = 700; /* the chain: several segments */
}

static uint8_t byte_at(size_t i) { return (uint8_t)(i * 131 + 7); }

/* One collective of g's kind on w; its results checked. */
static int run_one(simworld *w, const coll_alg *g)
{
    enum { LEN = 5000, COUNT = 1000 };
    int n = w->n, good = 1, root = n / 2;
    quay_req *q[SW_MAX_RANKS] = {0};
    int32_t *sb[SW_MAX_RANKS], *rb[SW_MAX_RANKS];
    quay_op sum = {QUAY_OP_SUM, 1, NULL, NULL};
    for (int r = 0; r < n; r++) {
        sb[r] = malloc(LEN);
        rb[r] = malloc(LEN);
        for (size_t i = 0; i < COUNT; i++)
            sb[r][i] = (int32_t)(i * 3 + (size_t)r * 1000);
        memset(rb[r], 0xEE, LEN);
        if (g->kind == QUAY_OFF_BCAST && r == root)
            for (size_t i = 0; i < LEN; i++)
                ((uint8_t *)rb[r])[i] = byte_at(i);
    }
    for (int r = 0; r < n; r++) {
        int rc;
        switch (g->kind) {
        case QUAY_OFF_BARRIER: rc = quay_ibarrier(w->e[r], w->c[r], &q[r]); break;
        case QUAY_OFF_BCAST: rc = quay_ibcast(w->e[r], w->c[r], rb[r], LEN, root, &q[r]); break;
        case QUAY_OFF_REDUCE:
            rc = quay_ireduce(w->e[r], w->c[r], sb[r], rb[r], COUNT, QUAY_INT32, &sum, root,
                              &q[r]);
            break;
        default:
            rc = quay_iallreduce(w->e[r], w->c[r], sb[r], rb[r], COUNT, QUAY_INT32, &sum, &q[r]);
            break;
        }
        good &= rc == 0;
    }
    good &= sw_run(w) == NICSIM_RUN_IDLE;
    for (int r = 0; r < n; r++) {
        quay_status st;
        if (q[r] == NULL || !quay_req_test(q[r], &st) || st.error != 0)
            good = 0;
        if (q[r] != NULL)
            quay_req_free(w->e[r], q[r]);
        int has = g->kind == QUAY_OFF_BCAST || g->kind == QUAY_OFF_ALLREDUCE ||
                  (g->kind == QUAY_OFF_REDUCE && r == root);
        for (size_t i = 0; has && i < (g->kind == QUAY_OFF_BCAST ? (size_t)LEN : COUNT); i++) {
            int right = g->kind == QUAY_OFF_BCAST
                            ? ((uint8_t *)rb[r])[i] == byte_at(i)
                            : rb[r][i] == (int32_t)((size_t)n * i * 3 +
                                                    (size_t)n * (size_t)(n - 1) / 2 * 1000);
            if (!right) {
                note("rank %d element %zu wrong", r, i);
                good = 0;
                break;
            }
        }
        free(sb[r]);
        free(rb[r]);
    }
    return good;
}

static void t_run(void)
{
    static const int ns[] = {5, 8};
    for (size_t i = 0; i < coll_nalgs; i++) {
        const coll_alg *g = &coll_algs[i];
        int good = 1;
        for (size_t k = 0; k < sizeof ns / sizeof ns[0] && good; k++) {
            /* What these calls ask for is what runs: no fallback. */
            coll_args a = {.count = g->kind == QUAY_OFF_BCAST ? 5000 : 1000,
                           .esize = g->kind >= QUAY_OFF_REDUCE ? 4 : 0, .size = ns[k],
                           .degree = 3, .commutative = 1};
            good &= coll_alg_decide(coll_op_find(g->kind), g->id, &a) == g;
            simworld w;
            if (sw_new(&w, ns[k], 77 + i, set_alg, (void *)g, 1) != 0) {
                good = 0;
                break;
            }
            for (int rep = 0; rep < 2 && good; rep++) /* (the second reuses the schedule) */
                good &= run_one(&w, g);
            sw_free(&w);
        }
        ok_msg(good, "kind %u %s: runs at n = 5 and 8, results right", g->kind, g->name);
    }
}

int main(void)
{
    subtest("public values: registered, named", t_public);
    subtest("the table", t_table);
    subtest("the operations", t_ops);
    subtest("config check: the registered ids", t_config);
    subtest("agent posts: the registered ids", t_agent);
    subtest("every registered algorithm runs", t_run);
    return done_testing();
}
