/*
 * test_timed.c — nicsim's timed mode (adapters/nicsim/timed.h): the
 * simulated time of a message is exactly the model's sum of stages;
 * contention on a resource serialises; runs are deterministic; a host
 * that computes handles nothing until it waits; collectives run to the
 * right results at 64 ranks on hosts and offloaded to NIC agents, and the
 * offloaded barrier costs its hosts one post and one completion.
 */
#include <stdlib.h>
#include <string.h>

#include <quay/quay_coll.h>

#include "harness.h"
#include "timed.h"

#define MAXN 128

typedef struct job {
    int n;
    tsim *t;
    quay_engine *h[MAXN], *a[MAXN];
    quay_comm *c[MAXN];
    /* per-rank program state */
    int step[MAXN];
    quay_req *q[MAXN];
    uint64_t stamp[MAXN][8];
    int kind;        /* what the program does */
    int reps;
    uint8_t buf[MAXN][4096];
    int64_t val[MAXN], out[MAXN];
    uint64_t skew[MAXN];
} job;

static nicsim_model M;

static int job_new(job *j, int n, int agents, uint32_t offload)
{
    memset(j, 0, sizeof *j);
    j->n = n;
    if (tsim_new(n, &M, &j->t) != 0)
        return -1;
    for (int r = 0; r < n; r++) {
        quay_config c;
        quay_config_default(&c);
        memset(c.key_secret, 0x5a, sizeof c.key_secret); /* (tests: any fixed secret) */
        c.rank = r;
        c.nranks = n;
        c.max_requests = 256;
        c.max_unexpected = 256;
        c.coll_offload = offload;
        if (quay_engine_new(&c, &j->h[r]) != 0)
            return -1;
        c.coll_offload = 0;
        if (agents && quay_engine_new(&c, &j->a[r]) != 0)
            return -1;
        if (tsim_attach(j->t, r, j->h[r], j->a[r]) != 0 ||
            quay_comm_create(j->h[r], 1, n, NULL, &j->c[r]) != 0)
            return -1;
    }
    return 0;
}

static void job_free(job *j)
{
    tsim_free(j->t);
    for (int r = 0; r < j->n; r++) {
        quay_engine_free(j->h[r]);
        quay_engine_free(j->a[r]);
    }
}

enum { PINGPONG = 1, BARRIERS, ALLREDUCE, BCAST, COMPUTE_THEN_RECV };

static void app(tsim *t, int32_t r, void *ctx)
{
    job *j = ctx;
    quay_engine *e = j->h[r];
    quay_comm *c = j->c[r];
    int s = j->step[r]++;
    if (j->q[r] != NULL && quay_req_test(j->q[r], NULL)) {
        quay_req_free(e, j->q[r]);
        j->q[r] = NULL;
    }
    if (s < 8)
        j->stamp[r][s] = tsim_now(t);
    switch (j->kind) {
    case PINGPONG: /* rank 0 sends 8 bytes, rank 1 answers */
        if (s == 0 && r == 0)
            quay_isend(e, c, j->buf[r], 8, 1, 0, QUAY_SEND_STANDARD, &j->q[r]);
        else if (s == 0)
            quay_irecv(e, c, j->buf[r], 8, 0, 0, &j->q[r]);
        else if (s == 1 && r == 0)
            quay_irecv(e, c, j->buf[r], 8, 1, 0, &j->q[r]);
        else if (s == 1)
            quay_isend(e, c, j->buf[r], 8, 0, 0, QUAY_SEND_STANDARD, &j->q[r]);
        if (s < 2)
            tsim_wait(t, r, j->q[r]);
        else
            tsim_finish(t, r);
        return;
    case COMPUTE_THEN_RECV: /* rank 1 computes 1 ms before it waits */
        if (r == 0 && s == 0) {
            quay_isend(e, c, j->buf[r], 8, 1, 0, QUAY_SEND_STANDARD, &j->q[r]);
            tsim_wait(t, r, j->q[r]);
        } else if (r == 1 && s == 0) {
            quay_irecv(e, c, j->buf[r], 8, 0, 0, &j->q[r]);
            tsim_compute(t, r, 1000000);
        } else if (r == 1 && s == 1) {
            tsim_wait(t, r, j->q[r]);
        } else {
            tsim_finish(t, r);
        }
        return;
    case BARRIERS:
        if (s == 0 && j->skew[r] != 0) {
            tsim_compute(t, r, j->skew[r]);
            return;
        }
        if (s - (j->skew[r] != 0) < j->reps) {
            quay_ibarrier(e, c, &j->q[r]);
            tsim_wait(t, r, j->q[r]);
        } else {
            tsim_finish(t, r);
        }
        return;
    case ALLREDUCE:
        if (s == 0) {
            j->val[r] = r + 1;
            quay_iallreduce(e, c, &j->val[r], &j->out[r], 1, QUAY_INT64,
                            &(quay_op){QUAY_OP_SUM, 1, NULL, NULL}, &j->q[r]);
            tsim_wait(t, r, j->q[r]);
        } else {
            tsim_finish(t, r);
        }
        return;
    case BCAST:
        if (s == 0) {
            if (r == 3)
                for (int i = 0; i < 4096; i++)
                    j->buf[r][i] = (uint8_t)(i * 7);
            quay_ibcast(e, c, j->buf[r], 4096, 3, &j->q[r]);
            tsim_wait(t, r, j->q[r]);
        } else {
            tsim_finish(t, r);
        }
        return;
    default:
        tsim_finish(t, r);
    }
}

static int run_job(job *j, int kind)
{
    j->kind = kind;
    tsim_set_app(j->t, app, j);
    return tsim_run(j->t);
}

/* One way, 8 bytes: every stage of timed.h in turn. */
static uint64_t one_way(size_t len)
{
    return M.host_call_ns + M.host_send_ns + len * M.host_send_ps / 1000 + len * M.bus_ps / 1000 +
           M.bus_ns + M.nic_ns + len * M.wire_ps / 1000 + M.wire_ns + M.nic_ns +
           len * M.bus_ps / 1000 + M.bus_ns + M.host_recv_ns + len * M.host_recv_ps / 1000;
}

static void t_stages(void)
{
    job j;
    ok(job_new(&j, 2, 0, 0) == 0);
    is_int(run_job(&j, PINGPONG), 0);
    /* The EAGER packet is 8 bytes of payload after a 32-byte header. */
    uint64_t ow = one_way(40);
    /* (a stamp is taken inside the app's step: after its call overhead) */
    is_int((long long)j.stamp[1][1], (long long)(ow + M.host_call_ns));
    note("one way %llu ns; round trip %llu ns", (unsigned long long)ow,
         (unsigned long long)j.stamp[0][2]);
    /* Rank 1's answer leaves after its own app step: one more call. */
    is_int((long long)j.stamp[0][2], (long long)(ow + M.host_call_ns + ow));
    tsim_stats st;
    tsim_get_stats(j.t, &st);
    is_int((int)st.host_pkts, 2);
    job_free(&j);

    /* A host that computes handles nothing: the message waits in host
     * memory until the receiver waits (1 ms later), then costs o_r. */
    ok(job_new(&j, 2, 0, 0) == 0);
    is_int(run_job(&j, COMPUTE_THEN_RECV), 0);
    uint64_t wait_at = M.host_call_ns + 1000000;
    is_int((long long)j.stamp[1][2],
           (long long)(wait_at + M.host_call_ns + M.host_recv_ns + 40 * M.host_recv_ps / 1000 +
                       M.host_call_ns));
    job_free(&j);
}

static void t_determinism(void)
{
    uint64_t t1 = 0, t2 = 0;
    tsim_stats s1, s2;
    for (int k = 0; k < 2; k++) {
        job j;
        ok(job_new(&j, 37, 0, 0) == 0);
        j.reps = 5;
        for (int r = 0; r < 37; r++)
            j.skew[r] = (uint64_t)((r * 7919) % 13) * 1000;
        is_int(run_job(&j, BARRIERS), 0);
        *(k ? &t2 : &t1) = tsim_now(j.t);
        tsim_get_stats(j.t, k ? &s2 : &s1);
        job_free(&j);
    }
    ok(t1 == t2 && t1 != 0 && memcmp(&s1, &s2, sizeof s1) == 0);
    note("37 ranks, 5 skewed barriers: %llu ns, %llu events", (unsigned long long)t1,
         (unsigned long long)s1.events);
}

/* No rank leaves a barrier before the last one arrives, host or NIC. */
static void t_barrier_semantics(void)
{
    for (int off = 0; off < 2; off++) {
        job j;
        ok(job_new(&j, 64, off, off) == 0);
        j.reps = 1;
        j.skew[17] = 5000000; /* 5 ms late */
        is_int(run_job(&j, BARRIERS), 0);
        uint64_t earliest = UINT64_MAX;
        for (int r = 0; r < 64; r++) {
            uint64_t left = j.stamp[r][1 + (j.skew[r] != 0)]; /* the step after it */
            if (left < earliest)
                earliest = left;
        }
        ok_msg(earliest > 5000000, "%s barrier: first leaves at %llu ns, after the late one",
               off ? "offloaded" : "host", (unsigned long long)earliest);
        job_free(&j);
    }
}

static void t_results(void)
{
    for (int off = 0; off < 2; off++) {
        job j;
        ok(job_new(&j, 64, off, off) == 0);
        is_int(run_job(&j, ALLREDUCE), 0);
        int good = 1;
        for (int r = 0; r < 64; r++)
            good &= j.out[r] == 64 * 65 / 2;
        ok_msg(good, "%s allreduce at 64 ranks", off ? "offloaded" : "host");
        job_free(&j);
        ok(job_new(&j, 64, off, off) == 0);
        is_int(run_job(&j, BCAST), 0);
        good = 1;
        for (int r = 0; r < 64; r++)
            for (int i = 0; i < 4096; i++)
                good &= j.buf[r][i] == (uint8_t)(i * 7);
        ok_msg(good, "%s bcast of 4 KiB at 64 ranks", off ? "offloaded" : "host");
        job_free(&j);
    }
}

/* Offloaded, a host posts once and hears once: its library time is one
 * call, one OFFLOAD and one completion per barrier. */
static void t_offload_cost(void)
{
    uint64_t busy[2], span[2];
    for (int off = 0; off < 2; off++) {
        job j;
        ok(job_new(&j, 64, off, off) == 0);
        j.reps = 10;
        is_int(run_job(&j, BARRIERS), 0);
        busy[off] = tsim_host_busy(j.t, 5);
        span[off] = tsim_now(j.t);
        job_free(&j);
    }
    uint64_t per = 10 * (M.host_call_ns + M.host_post_ns + M.host_notify_ns);
    is_int((long long)busy[1], (long long)(per + M.host_call_ns));
    ok(busy[0] > 3 * busy[1]);
    note("64 ranks, 10 barriers: host library time %llu ns (host-based) vs %llu ns "
         "(offloaded); run %llu vs %llu ns", (unsigned long long)busy[0],
         (unsigned long long)busy[1], (unsigned long long)span[0],
         (unsigned long long)span[1]);
}

/* With one NIC receive buffer everything still arrives, later. */
static void t_nic_buffers(void)
{
    uint64_t span[2];
    for (int b = 0; b < 2; b++) {
        M.nic_buffers = b ? 1 : 0;
        job j;
        ok(job_new(&j, 32, 0, 0) == 0);
        is_int(run_job(&j, BCAST), 0);
        int good = 1;
        for (int r = 0; r < 32; r++)
            good &= j.buf[r][100] == (uint8_t)(700);
        ok(good);
        span[b] = tsim_now(j.t);
        job_free(&j);
    }
    M.nic_buffers = 0;
    ok(span[1] >= span[0]);
}

int main(void)
{
    nicsim_model_default(&M);
    subtest("a message costs the sum of its stages", t_stages);
    subtest("same run, same time", t_determinism);
    subtest("barrier semantics with a late rank", t_barrier_semantics);
    subtest("collective results, host and offloaded", t_results);
    subtest("offload: one post, one completion", t_offload_cost);
    subtest("NIC receive buffers", t_nic_buffers);
    return done_testing();
}
