/*
 * test_coll_bypass.c — application-bypass reduce (coll_bypass) on N
 * engines over nicsim (reordering links, seeded scheduler).
 *
 * The leaves of the reduce tree (rank 0's binomial tree) and the root call
 * first; every rank with children calls only after the simulator ran
 * idle. By then each of those ranks must have started its part from the
 * arrivals alone (an early schedule) and taken in its children's results:
 * a rendezvous-size leaf's send can only complete once its parent pulled
 * the data, so "every leaf done before its parent called" is checked at
 * both sizes. The late calls then complete the reduction; results are
 * compared with a reduction computed here in rank order. Also: every
 * predefined op on a type it allows, in place at the root, every root,
 * a user op (no bypass: the ordinary tree), and a call that disagrees
 * with what arrived (QUAY_EINVAL), and no context save while an early
 * schedule that failed awaits its call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <quay/quay_coll.h>

#include "harness.h"
#include "simworld.h"

#define MAXN SW_MAX_RANKS

static uint64_t g_seed = 1000;

static void bypass_cfg(quay_config *c, void *arg)
{
    (void)arg;
    c->coll_bypass = 1;
}

/* ---- a reference reduction -------------------------------------------------------- */

typedef struct opcase {
    quay_op_kind op;
    quay_dtype dt;
} opcase;

/* Every predefined op, each on a type it is defined on. */
static const opcase cases[] = {
    {QUAY_OP_SUM, QUAY_INT32},  {QUAY_OP_PROD, QUAY_INT64},   {QUAY_OP_MIN, QUAY_FLOAT},
    {QUAY_OP_MAX, QUAY_DOUBLE}, {QUAY_OP_BAND, QUAY_UINT32},  {QUAY_OP_BOR, QUAY_UINT16},
    {QUAY_OP_BXOR, QUAY_UINT64}, {QUAY_OP_LAND, QUAY_INT8},   {QUAY_OP_LOR, QUAY_UINT8},
    {QUAY_OP_LXOR, QUAY_INT16}, {QUAY_OP_SUM, QUAY_DOUBLE},   {QUAY_OP_MAX, QUAY_INT16},
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

static int is_float(quay_dtype dt) { return dt == QUAY_FLOAT || dt == QUAY_DOUBLE; }
static int is_signed(quay_dtype dt)
{
    return dt == QUAY_INT8 || dt == QUAY_INT16 || dt == QUAY_INT32 || dt == QUAY_INT64;
}

/* Rank r's element i, as a small value every type holds exactly (so that
 * sums and products of floats do not depend on the order). */
static int64_t value(int r, size_t i, const opcase *c)
{
    uint64_t h = (uint64_t)(r + 3) * 0x9E3779B97F4A7C15ull ^ (uint64_t)(i + 1) * 0xD1B54A32D192ED03ull;
    h ^= h >> 31;
    if (c->op == QUAY_OP_LAND || c->op == QUAY_OP_LOR || c->op == QUAY_OP_LXOR)
        return (int64_t)(h % 5 == 0 ? 0 : h % 3); /* zeros and non-zeros */
    if (c->op == QUAY_OP_PROD)
        return (int64_t)(h % 3) + 1 - (int64_t)(h % 2); /* 0 .. 3: small products */
    if (is_float(c->dt))
        return (int64_t)(h % 2001) - 1000;
    return is_signed(c->dt) ? (int64_t)(h % 255) - 127 : (int64_t)(h % 255);
}

static void store(quay_dtype dt, int64_t v, uint8_t *p)
{
    switch (dt) {
    case QUAY_INT8: case QUAY_UINT8: { uint8_t x = (uint8_t)v; memcpy(p, &x, 1); break; }
    case QUAY_INT16: case QUAY_UINT16: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); break; }
    case QUAY_INT32: case QUAY_UINT32: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); break; }
    case QUAY_FLOAT: { float x = (float)v; memcpy(p, &x, 4); break; }
    case QUAY_DOUBLE: { double x = (double)v; memcpy(p, &x, 8); break; }
    default: { uint64_t x = (uint64_t)v; memcpy(p, &x, 8); break; }
    }
}

/* The type's value of v, sign-extended or not as the type is (what the
 * wrapped arithmetic of the library reads back). */
static int64_t as_type(quay_dtype dt, int64_t v)
{
    switch (dt) {
    case QUAY_INT8: return (int8_t)v;
    case QUAY_UINT8: return (uint8_t)v;
    case QUAY_INT16: return (int16_t)v;
    case QUAY_UINT16: return (uint16_t)v;
    case QUAY_INT32: return (int32_t)v;
    case QUAY_UINT32: return (uint32_t)v;
    default: return v;
    }
}

static int64_t combine(const opcase *c, int64_t a, int64_t b)
{
    switch (c->op) {
    case QUAY_OP_SUM: return as_type(c->dt, (int64_t)((uint64_t)a + (uint64_t)b));
    case QUAY_OP_PROD: return as_type(c->dt, (int64_t)((uint64_t)a * (uint64_t)b));
    case QUAY_OP_MIN: return a < b ? a : b;
    case QUAY_OP_MAX: return a > b ? a : b;
    case QUAY_OP_BAND: return as_type(c->dt, a & b);
    case QUAY_OP_BOR: return as_type(c->dt, a | b);
    case QUAY_OP_BXOR: return as_type(c->dt, a ^ b);
    case QUAY_OP_LAND: return (a != 0) && (b != 0);
    case QUAY_OP_LOR: return (a != 0) || (b != 0);
    default: return (a != 0) != (b != 0);
    }
}

static uint8_t *operands(int r, size_t count, const opcase *c)
{
    size_t es = quay_dtype_size(c->dt);
    uint8_t *b = malloc(count * es + 1);
    for (size_t i = 0; i < count; i++)
        store(c->dt, as_type(c->dt, value(r, i, c)), b + i * es);
    return b;
}

static int check(int n, const uint8_t *got, size_t count, const opcase *c)
{
    size_t es = quay_dtype_size(c->dt);
    uint8_t want[8];
    for (size_t i = 0; i < count; i++) {
        int64_t acc = as_type(c->dt, value(0, i, c));
        for (int r = 1; r < n; r++)
            acc = combine(c, acc, as_type(c->dt, value(r, i, c)));
        store(c->dt, acc, want);
        if (memcmp(got + i * es, want, es) != 0) {
            note("op %d type %d: element %zu differs", c->op, c->dt, i);
            return 0;
        }
    }
    return 1;
}

/* ---- the tree --------------------------------------------------------------------- */

/* Rank v has children in the binomial tree rooted at rank 0 of n ranks
 * (v + 1 exists and v is even: its lowest set bit is above bit 0). */
static int has_children(int v, int n) { return v % 2 == 0 && v + 1 < n; }

/* ---- the cases -------------------------------------------------------------------- */

typedef struct run_args {
    int n, root, in_place;
    size_t count;
    const opcase *c;
} run_args;

/* One reduction: leaves and the root first, the others after a run. */
static int run_case(const run_args *a, uint64_t *bypassed)
{
    int n = a->n, root = a->root, good = 1;
    simworld w;
    if (sw_new(&w, n, g_seed++, bypass_cfg, NULL, 1) != 0)
        return 0;
    size_t es = quay_dtype_size(a->c->dt), len = a->count * es;
    quay_op op = {a->c->op, 1, NULL, NULL};
    uint8_t *sb[MAXN] = {0}, *rb = malloc(len + 1);
    quay_req *q[MAXN] = {0};
    memset(rb, 0xA5, len + 1);
    for (int r = 0; r < n; r++)
        sb[r] = operands(r, a->count, a->c);
    if (a->in_place)
        memcpy(rb, sb[root], len);
    for (int pass = 0; pass < 2 && good; pass++) {
        for (int r = n - 1; r >= 0; r--) {
            int late = has_children(r, n) && r != root;
            if (late != pass)
                continue;
            const void *s = a->in_place && r == root ? QUAY_IN_PLACE : sb[r];
            int rc = quay_ireduce(w.e[r], w.c[r], s, r == root ? rb : NULL, a->count,
                                  a->c->dt, &op, root, &q[r]);
            if (rc != 0) {
                note("rank %d: %s", r, quay_strerror(rc));
                good = 0;
            }
        }
        good &= sw_run(&w) == NICSIM_RUN_IDLE;
        if (pass == 0) {
            /* Every rank that has not called, and has children, started
             * from their results; every leaf's send is done. */
            for (int r = 0; r < n; r++) {
                quay_stats st;
                quay_engine_stats(w.e[r], &st);
                int late = has_children(r, n) && r != root;
                if (late && st.coll_bypassed != 1) {
                    note("n %d root %d: rank %d did not start early", n, root, r);
                    good = 0;
                }
                *bypassed += st.coll_bypassed;
                if (!has_children(r, n) && r != root &&
                    (q[r] == NULL || !quay_req_test(q[r], NULL))) {
                    note("n %d root %d len %zu: leaf %d waits for its parent's call", n, root,
                         len, r);
                    good = 0;
                }
            }
        }
    }
    for (int r = 0; r < n; r++) {
        quay_status st;
        if (q[r] == NULL || !quay_req_test(q[r], &st) || st.error != 0) {
            note("n %d root %d: rank %d not done or failed", n, root, r);
            good = 0;
        }
        if (q[r] != NULL)
            quay_req_free(w.e[r], q[r]);
    }
    if (good && !check(n, rb, a->count, a->c))
        good = 0;
    if (rb[len] != 0xA5) {
        note("written past the result");
        good = 0;
    }
    for (int r = 0; r < n; r++) {
        quay_stats st;
        quay_engine_stats(w.e[r], &st);
        good &= st.reqs_in_use == 0 && st.umsgs_in_use == 0;
        free(sb[r]);
    }
    free(rb);
    sw_free(&w);
    return good;
}

static void t_reduce(void)
{
#ifdef QUAY_TEST_SANITIZED
    static const int ns[] = {1, 2, 3, 6, 9, 17, 33};
#else
    static const int ns[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17,
                             18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33};
#endif
    /* 24 elements are eager at every type (simworld: eager_max 256);
     * 4000 are rendezvous at every type. */
    static const size_t counts[] = {24, 4000};
    int good = 1, runs = 0, k = 0;
    uint64_t bypassed = 0;
    for (size_t i = 0; i < sizeof ns / sizeof ns[0] && good; i++) {
        int n = ns[i];
        int roots[3] = {0, n - 1, n / 2};
        for (int ri = 0; ri < 3 && good; ri++)
            for (int z = 0; z < 2 && good; z++) {
                run_args a = {n, roots[ri], (ri + z) % 2, counts[z], &cases[k++ % NCASES]};
                good &= run_case(&a, &bypassed);
                runs++;
            }
    }
    ok_msg(good, "%d reductions (n = 1..33, roots 0 / n-1 / n/2, eager and rendezvous, every "
                 "predefined op): %llu started before their call, every result right",
           runs, (unsigned long long)bypassed);
}

/* A user op cannot be applied before the call: it takes the ordinary tree
 * (nothing early) and is still right with bypass configured. */
static int user_calls;
static void user_sum(const void *in, void *inout, size_t count, quay_dtype dt, void *ctx)
{
    (void)dt;
    (void)ctx;
    user_calls++;
    const int32_t *a = in;
    int32_t *b = inout;
    for (size_t i = 0; i < count; i++)
        b[i] = (int32_t)((uint32_t)a[i] + (uint32_t)b[i]);
}

static void t_user_op(void)
{
    int n = 9, root = 4, good = 1;
    simworld w;
    is_int(sw_new(&w, n, g_seed++, bypass_cfg, NULL, 1), 0);
    quay_op op = {QUAY_OP_USER, 1, user_sum, NULL};
    int32_t sb[MAXN][3], rb[3] = {0};
    quay_req *q[MAXN] = {0};
    for (int r = 0; r < n; r++)
        for (int i = 0; i < 3; i++)
            sb[r][i] = r * 10 + i;
    for (int r = 0; r < n; r++)
        if (!has_children(r, n))
            good &= quay_ireduce(w.e[r], w.c[r], sb[r], rb, 3, QUAY_INT32, &op, root, &q[r]) == 0;
    good &= sw_run(&w) == NICSIM_RUN_IDLE;
    for (int r = 0; r < n; r++) {
        quay_stats st;
        quay_engine_stats(w.e[r], &st);
        good &= st.coll_bypassed == 0;
        if (has_children(r, n))
            good &= quay_ireduce(w.e[r], w.c[r], sb[r], rb, 3, QUAY_INT32, &op, root, &q[r]) == 0;
    }
    good &= sw_run(&w) == NICSIM_RUN_IDLE;
    for (int r = 0; r < n; r++) {
        quay_status st;
        good &= quay_req_test(q[r], &st) && st.error == 0;
        quay_req_free(w.e[r], q[r]);
    }
    for (int i = 0; i < 3; i++)
        good &= rb[i] == 10 * (n * (n - 1) / 2) + n * i;
    ok_msg(good && user_calls > 0, "a user op: no early start, result right");
    sw_free(&w);
}

/* The call disagrees with the arrival (another op, another count): the
 * members disagree, an erroneous program: QUAY_EINVAL, nothing changes;
 * the agreeing call then completes it. */
static void t_disagree(void)
{
    int n = 4;
    simworld w;
    is_int(sw_new(&w, n, g_seed++, bypass_cfg, NULL, 1), 0);
    quay_op sum = {QUAY_OP_SUM, 1, NULL, NULL}, max = {QUAY_OP_MAX, 1, NULL, NULL};
    int32_t sb[MAXN][2], rb[2];
    quay_req *q[MAXN] = {0};
    for (int r = 0; r < n; r++)
        sb[r][0] = sb[r][1] = r + 1;
    /* rank 2 has child 3; root 0 */
    for (int r = 0; r < n; r++)
        if (r != 2)
            is_int(quay_ireduce(w.e[r], w.c[r], sb[r], rb, 2, QUAY_INT32, &sum, 0, &q[r]), 0);
    is_int(sw_run(&w), NICSIM_RUN_IDLE);
    quay_stats st;
    quay_engine_stats(w.e[2], &st);
    is_int((int)st.coll_bypassed, 1);
    is_int(quay_ireduce(w.e[2], w.c[2], sb[2], NULL, 2, QUAY_INT32, &max, 0, &q[2]),
           QUAY_EINVAL);
    is_int(quay_ireduce(w.e[2], w.c[2], sb[2], NULL, 1, QUAY_INT32, &sum, 0, &q[2]),
           QUAY_EINVAL);
    is_int(quay_ireduce(w.e[2], w.c[2], sb[2], NULL, 2, QUAY_UINT32, &sum, 0, &q[2]),
           QUAY_EINVAL);
    is_int(quay_ireduce(w.e[2], w.c[2], sb[2], NULL, 2, QUAY_INT32, &sum, 0, &q[2]), 0);
    is_int(sw_run(&w), NICSIM_RUN_IDLE);
    for (int r = 0; r < n; r++) {
        quay_status s;
        ok(quay_req_test(q[r], &s) && s.error == 0);
        quay_req_free(w.e[r], q[r]);
    }
    ok(rb[0] == 10 && rb[1] == 10);
    sw_free(&w);
}

static void bypass_flow_cfg(quay_config *c, void *arg)
{
    (void)arg;
    c->coll_bypass = 1;
    c->flow = QUAY_FLOW_ACKNACK; /* a channel context can be saved */
}

/* Save while an early schedule awaits its call (bug 19 in fuzz/RESULTS.md):
 * 8 ranks, root 0, rank 4's children 5 and 6. Rank 5's data starts rank
 * 4's part early; rank 6 then fails (as rank 4 learns it), which ends
 * that schedule with the error, kept for rank 4's call. Until the call
 * the channel may not save (its request is a running collective's and
 * schedules are not in a blob); after it, it saves and restores its own
 * blob. */
static void t_early_failed_save(void)
{
    int n = 8;
    simworld w;
    is_int(sw_new(&w, n, g_seed++, bypass_flow_cfg, NULL, 1), 0);
    quay_op sum = {QUAY_OP_SUM, 1, NULL, NULL};
    int32_t sb[MAXN][2], rb[2];
    quay_req *q[MAXN] = {0};
    for (int r = 0; r < n; r++)
        sb[r][0] = sb[r][1] = r + 1;
    for (int r = 0; r < n; r++)
        if (r != 4 && r != 6 && r != 7)
            is_int(quay_ireduce(w.e[r], w.c[r], sb[r], rb, 2, QUAY_INT32, &sum, 0, &q[r]), 0);
    is_int(sw_run(&w), NICSIM_RUN_IDLE);
    quay_stats st;
    quay_engine_stats(w.e[4], &st);
    is_int((int)st.coll_bypassed, 1);
    is_int(quay_on_peer_failed(w.e[4], 6), 0);
    is_int(sw_run(&w), NICSIM_RUN_IDLE);
    quay_engine_stats(w.e[4], &st);
    is_int((int)st.coll_failed, 1); /* ended: no longer running, awaiting the call */
    is_int(quay_channel_quiesce(w.e[4]), 0);
    is_int(sw_run(&w), NICSIM_RUN_IDLE);
    is_int(quay_channel_is_stable(w.e[4]), 1);
    size_t len = 0;
    is_int(quay_engine_save(w.e[4], NULL, 0, &len), QUAY_EBUSY);
    /* the call takes the schedule's error at once */
    is_int(quay_ireduce(w.e[4], w.c[4], sb[4], NULL, 2, QUAY_INT32, &sum, 0, &q[4]), 0);
    quay_status s;
    ok(quay_req_test(q[4], &s) && s.error == QUAY_EPEER);
    is_int(quay_req_free(w.e[4], q[4]), 0);
    is_int(quay_engine_save(w.e[4], NULL, 0, &len), QUAY_ENOBUFS);
    uint8_t *blob = malloc(len);
    size_t got = 0;
    if (ok(blob != NULL)) {
        is_int(quay_engine_save(w.e[4], blob, len, &got), 0);
        is_int(quay_engine_restore(w.e[4], blob, got), 0);
    }
    free(blob);
    sw_free(&w);
}

int main(void)
{
    subtest("bypass reduce: early start, every result right", t_reduce);
    subtest("bypass reduce: a user op takes the ordinary tree", t_user_op);
    subtest("bypass reduce: a call that disagrees", t_disagree);
    subtest("bypass reduce: no save while an ended early schedule awaits its call",
            t_early_failed_save);
    return done_testing();
}
