/*
 * test_nicsim.c — the adversarial simulator itself: configuration checks,
 * bit-for-bit determinism per seed, per-link FIFO versus reordering, the
 * choice numbering used by exhaustive enumeration, and QUAY_EAGAIN
 * handling (a deferred packet is not offered again until something
 * happened at its destination; a network with only deferred packets is
 * reported stuck, not spun on).
 */
#include <stdlib.h>
#include <string.h>

#include <quay/quay.h>

#include "harness.h"
#include "nicsim.h"

#define NR 3
#define NMSG 4

typedef struct world {
    nicsim *sim;
    quay_engine *e[NR];
    quay_comm *c[NR];
    int n;
    int completes;
    uint64_t hash;        /* FNV-1a over every observed event */
    uint64_t last_pkt[NR][NR];
    int out_of_order;     /* a link delivered a later packet first */
    unsigned char sbuf[NR][NR][NMSG][512];
    unsigned char rbuf[NR][NR * NMSG][512];
    quay_req *rq[NR][NR * NMSG];
    quay_req *sq[NR][NR * NMSG];
} world;

static void mix(world *w, const void *p, size_t n)
{
    const unsigned char *b = p;
    size_t i;
    for (i = 0; i < n; i++) {
        w->hash ^= b[i];
        w->hash *= 0x100000001b3ull;
    }
}

static void on_event(void *ctx, const nicsim_event *ev)
{
    world *w = ctx;
    mix(w, &ev->kind, sizeof ev->kind);
    mix(w, &ev->rank, sizeof ev->rank);
    mix(w, &ev->peer, sizeof ev->peer);
    mix(w, &ev->rc, sizeof ev->rc);
    mix(w, &ev->token, sizeof ev->token);
    mix(w, &ev->pkt_id, sizeof ev->pkt_id);
    mix(w, &ev->len, sizeof ev->len);
    if (ev->data != NULL)
        mix(w, ev->data, (size_t)ev->len);
    if (ev->kind == NICSIM_EV_DELIVER) {
        uint64_t id1 = ev->pkt_id + 1;
        if (id1 < w->last_pkt[ev->peer][ev->rank])
            w->out_of_order = 1;
        if (id1 > w->last_pkt[ev->peer][ev->rank])
            w->last_pkt[ev->peer][ev->rank] = id1;
    }
}

static void on_complete(void *ctx, int32_t rank, quay_req *req, void *user)
{
    world *w = ctx;
    (void)rank;
    (void)req;
    (void)user;
    w->completes++;
}

static int world_new(world *w, int n, uint64_t seed, uint32_t reorder,
                     size_t unexpected_bytes)
{
    nicsim_config nc;
    int r;
    memset(w, 0, sizeof *w);
    w->n = n;
    w->hash = 0xcbf29ce484222325ull;
    nicsim_config_default(&nc);
    nc.nranks = n;
    nc.seed = seed;
    nc.reorder = reorder;
    if (nicsim_new(&nc, &w->sim) != 0)
        return -1;
    nicsim_set_event_cb(w->sim, on_event, w);
    nicsim_set_completion_cb(w->sim, on_complete, w);
    for (r = 0; r < n; r++) {
        quay_config qc;
        quay_config_default(&qc);
        qc.rank = r;
        qc.nranks = n;
        qc.eager_max = 256;
        qc.frag_size = 128;
        qc.pipeline_depth = 2;
        qc.flags = QUAY_CFG_COMPLETE_ACTIONS | QUAY_CFG_CHECK_ORACLE;
        if (unexpected_bytes)
            qc.unexpected_bytes_max = unexpected_bytes;
        if (quay_engine_new(&qc, &w->e[r]) != 0 ||
            quay_comm_create(w->e[r], 0, n, NULL, &w->c[r]) != 0 ||
            nicsim_attach(w->sim, r, w->e[r]) != 0)
            return -1;
    }
    return 0;
}

static void world_free(world *w)
{
    int r;
    nicsim_free(w->sim);
    for (r = 0; r < w->n; r++)
        quay_engine_free(w->e[r]);
}

/* Every rank sends NMSG messages (eager and rendezvous) to every other
 * rank and receives them with ANY_SOURCE. */
static int post_all_to_all(world *w)
{
    int r, d, k, nr;
    static const size_t sizes[NMSG] = {10, 300, 256, 0};
    for (r = 0; r < w->n; r++) {
        nr = 0;
        for (d = 0; d < w->n; d++) {
            if (d == r)
                continue;
            for (k = 0; k < NMSG; k++) {
                memset(w->sbuf[r][d][k], r * 16 + d * 4 + k, sizeof w->sbuf[r][d][k]);
                if (quay_isend(w->e[r], w->c[r], w->sbuf[r][d][k], sizes[k], d,
                               5, QUAY_SEND_STANDARD, &w->sq[r][nr]) != 0)
                    return -1;
                if (quay_irecv(w->e[r], w->c[r], w->rbuf[r][nr], 512,
                               QUAY_ANY_SOURCE, 5, &w->rq[r][nr]) != 0)
                    return -1;
                nr++;
            }
        }
        nicsim_touch(w->sim, r);
    }
    return 0;
}

static int all_complete(world *w)
{
    int r, i;
    for (r = 0; r < w->n; r++)
        for (i = 0; i < (w->n - 1) * NMSG; i++)
            if (quay_req_test(w->rq[r][i], NULL) != 1 ||
                quay_req_test(w->sq[r][i], NULL) != 1)
                return 0;
    return 1;
}

static uint64_t run_hash(uint64_t seed, uint32_t reorder, int *ooo, int *okp)
{
    world w;
    uint64_t h = 0;
    *okp = 0;
    if (world_new(&w, NR, seed, reorder, 0) == 0 && post_all_to_all(&w) == 0 &&
        nicsim_run(w.sim, 1000000) == NICSIM_RUN_IDLE && all_complete(&w)) {
        nicsim_stats st;
        nicsim_get_stats(w.sim, &st);
        *okp = st.deliveries == st.sends && st.op_dones == st.sends &&
               st.rejects == 0 && st.errors == 0 && st.fatal == 0 &&
               w.completes == 2 * NR * (NR - 1) * NMSG;
        h = w.hash;
        *ooo = w.out_of_order;
    }
    world_free(&w);
    return h;
}

static void test_config(void)
{
    nicsim_config nc;
    nicsim *sim = NULL;
    quay_config qc;
    quay_engine *e = NULL;

    nicsim_config_default(&nc);
    is_int(nc.version, NICSIM_CONFIG_VERSION);
    is_int(nc.nranks, 2);
    is_int(nc.reorder, 0);
    nc.nranks = 0;
    is_int(nicsim_new(&nc, &sim), QUAY_EINVAL);
    nc.nranks = 2;
    nc.drop_ppm = 10;
    is_int(nicsim_new(&nc, &sim), QUAY_ENOTSUP);
    nc.drop_ppm = 0;
    nc.version = 99;
    is_int(nicsim_new(&nc, &sim), QUAY_EVERSION);
    nc.version = NICSIM_CONFIG_VERSION;
    if (!is_int(nicsim_new(&nc, &sim), 0))
        return;
    ok(nicsim_idle(sim));
    is_int(nicsim_enabled_events(sim), 0);
    is_int(nicsim_step(sim), 0);
    is_int(nicsim_step_choose(sim, 0), QUAY_EINVAL);

    quay_config_default(&qc);
    qc.rank = 1;
    qc.nranks = 3; /* disagrees with the simulator */
    if (is_int(quay_engine_new(&qc, &e), 0)) {
        is_int(nicsim_attach(sim, 1, e), QUAY_EINVAL);
        is_int(nicsim_attach(sim, 5, e), QUAY_ERANK);
        quay_engine_free(e);
    }
    nicsim_free(sim);
    nicsim_free(NULL);
}

static void test_determinism(void)
{
    uint64_t a, b, first = 0;
    int ooo, oka, okb, distinct = 0;
    uint64_t seed;
    for (seed = 1; seed <= 20; seed++) {
        a = run_hash(seed, 1, &ooo, &oka);
        b = run_hash(seed, 1, &ooo, &okb);
        if (!ok_msg(oka && okb, "seed %llu runs to idle, all complete",
                    (unsigned long long)seed))
            return;
        if (!ok_msg(a == b, "seed %llu is reproducible", (unsigned long long)seed))
            return;
        if (seed == 1)
            first = a;
        else if (a != first)
            distinct++;
    }
    ok_msg(distinct > 0, "different seeds give different runs (%d of 19)",
           distinct);
}

static void test_fifo_and_reorder(void)
{
    int seed, ooo, okr, any_fifo_ooo = 0, any_reorder_ooo = 0;
    for (seed = 1; seed <= 30; seed++) {
        ooo = 0;
        run_hash((uint64_t)seed, 0, &ooo, &okr);
        ok(okr);
        any_fifo_ooo |= ooo;
        ooo = 0;
        run_hash((uint64_t)seed, 1, &ooo, &okr);
        ok(okr);
        any_reorder_ooo |= ooo;
    }
    ok_msg(!any_fifo_ooo, "reorder=0 delivers every link in send order");
    ok_msg(any_reorder_ooo, "reorder=1 delivers some link out of order");
}

static void test_choices(void)
{
    world w;
    uint32_t np, nd, no, steps = 0;
    int bad = 0;
    if (!is_int(world_new(&w, NR, 7, 1, 0), 0) ||
        !is_int(post_all_to_all(&w), 0)) {
        world_free(&w);
        return;
    }
    while (!nicsim_idle(w.sim) && steps < 100000) {
        uint32_t n = nicsim_enabled_events(w.sim);
        nicsim_enabled_detail(w.sim, &np, &nd, &no);
        if (n != np + nd + no || n == 0)
            bad++;
        if (nicsim_step_choose(w.sim, n) != QUAY_EINVAL)
            bad++;
        /* always the last choice: op_dones first, deliveries late */
        if (nicsim_step_choose(w.sim, n - 1) != 1)
            bad++;
        steps++;
    }
    is_int(bad, 0);
    ok(nicsim_idle(w.sim));
    ok(all_complete(&w));
    world_free(&w);
}

static void test_eagain(void)
{
    world w;
    unsigned char s[3][100], r[3][100];
    quay_req *sq[3], *rq[3];
    nicsim_stats st;
    int i;
    /* receiver budget: one 100-byte unexpected message, not two */
    if (!is_int(world_new(&w, 2, 3, 0, 150), 0)) {
        world_free(&w);
        return;
    }
    for (i = 0; i < 3; i++) {
        memset(s[i], 'a' + i, sizeof s[i]);
        is_int(quay_isend(w.e[0], w.c[0], s[i], 100, 1, 9, QUAY_SEND_STANDARD,
                          &sq[i]),
               0);
    }
    nicsim_touch(w.sim, 0);
    is_int(nicsim_run(w.sim, 100000), NICSIM_RUN_STUCK);
    nicsim_get_stats(w.sim, &st);
    ok(st.eagain >= 1);
    ok(st.inflight >= 1);
    is_int(nicsim_enabled_events(w.sim), 0);
    ok(!nicsim_idle(w.sim));
    for (i = 0; i < 3; i++)
        is_int(quay_irecv(w.e[1], w.c[1], r[i], sizeof r[i], 0, 9, &rq[i]), 0);
    nicsim_touch(w.sim, 1);
    ok(nicsim_enabled_events(w.sim) > 0);
    is_int(nicsim_run(w.sim, 100000), NICSIM_RUN_IDLE);
    for (i = 0; i < 3; i++) {
        quay_status rs;
        is_int(quay_req_test(rq[i], &rs), 1);
        is_int(rs.count, 100);
        ok(memcmp(r[i], s[i], 100) == 0);
        is_int(quay_req_test(sq[i], NULL), 1);
    }
    nicsim_get_stats(w.sim, &st);
    is_int(st.deliveries, st.sends);
    is_int(st.rejects, 0);
    is_int(st.errors, 0);
    world_free(&w);
}

static void test_auto_pull(void)
{
    nicsim_config nc;
    world w;
    uint32_t np;
    if (!is_int(world_new(&w, NR, 11, 1, 0), 0)) {
        world_free(&w);
        return;
    }
    /* rebuild the simulator in auto_pull mode around the same engines */
    nicsim_free(w.sim);
    nicsim_config_default(&nc);
    nc.nranks = NR;
    nc.seed = 11;
    nc.reorder = 1;
    nc.auto_pull = 1;
    if (!is_int(nicsim_new(&nc, &w.sim), 0))
        return;
    nicsim_set_completion_cb(w.sim, on_complete, &w);
    for (int r = 0; r < NR; r++)
        is_int(nicsim_attach(w.sim, r, w.e[r]), 0);
    is_int(post_all_to_all(&w), 0);
    nicsim_enabled_detail(w.sim, &np, NULL, NULL);
    is_int(np, 0);
    is_int(nicsim_run(w.sim, 1000000), NICSIM_RUN_IDLE);
    ok(all_complete(&w));
    is_int(w.completes, 2 * NR * (NR - 1) * NMSG);
    world_free(&w);
}

int main(void)
{
    subtest("config", test_config);
    subtest("determinism", test_determinism);
    subtest("fifo_and_reorder", test_fifo_and_reorder);
    subtest("choices", test_choices);
    subtest("eagain", test_eagain);
    subtest("auto_pull", test_auto_pull);
    return done_testing();
}
