/*
 * bench_timed.c — collectives on nicsim's timed mode (adapters/nicsim/
 * timed.h): the NIC dissertation's comparisons of host-based and
 * NIC-based (offloaded) operations, in simulated time, and the
 * simulator's own speed.
 *
 *   bench_timed [--model FILE] [--max-n N] [--reps R] [--csv]
 *
 * Tables:
 *   1. barrier latency vs N (2 .. max-n): host-based dissemination,
 *      pairwise exchange and tree, and the same offloaded to NIC agents;
 *      factor of improvement (FoI) = host / NIC per algorithm.
 *   2. allreduce of one int64 vs N: latency and host CPU time per call.
 *   3. barrier under skew: every rank computes a random 0 .. D before
 *      each barrier; time spent in the barrier, host vs NIC.
 *   4. the MCS lock on remote atomics [NIC ch. 5]: one acquire + release
 *      vs contenders, atomics on the target NIC vs on a host server thread.
 *   5. the simulator: events and packet deliveries per wall second, the
 *      wall time of a max-n-rank barrier.
 *   6. application-bypass broadcast under skew [NIC ch. 6]: after a
 *      barrier the root broadcasts at once, the others compute U(0, D)
 *      first; mean time inside the broadcast call, with and without
 *      bypass, eager and rendezvous sizes.
 *   7. multi-send [NIC ch. 2]: a 4 KiB broadcast (binomial, and the
 *      postal-model tree) with and without the transport's multi-send.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <quay/quay_coll.h>

#include "bench_common.h"
#include "timed.h"

typedef struct job {
    int n, reps, kind;
    size_t bcast_len;
    uint8_t **bbuf;
    uint64_t skew_max;
    tsim *t;
    quay_engine **h, **a;
    quay_comm **c;
    int *step;
    quay_req **q;
    int64_t *val, *out;
    uint64_t *entered, *inside; /* skew: when it called, total time inside */
    uint64_t rng;
} job;

enum { K_BARRIER, K_ALLREDUCE, K_SKEWED_BCAST };

static nicsim_model M;
static int g_multi;            /* engines get QUAY_CAP_MULTI_SEND */
static uint32_t g_bcast_alg;   /* for K_SKEWED_BCAST runs; 0: binomial */

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Barrier, compute U(0, D) (not the root), broadcast: 3 steps a round. */
static void bcast_app(tsim *t, int32_t r, job *j, int s)
{
    if (j->q[r] != NULL) {
        if (s % 3 == 0) /* the broadcast just completed */
            j->inside[r] += tsim_now(t) - j->entered[r];
        quay_req_free(j->h[r], j->q[r]);
        j->q[r] = NULL;
    }
    if (s / 3 >= j->reps) {
        tsim_finish(t, r);
        return;
    }
    switch (s % 3) {
    case 0:
        bench_check(quay_ibarrier(j->h[r], j->c[r], &j->q[r]), "ibarrier");
        tsim_wait(t, r, j->q[r]);
        return;
    case 1:
        tsim_compute(t, r, r == 0 ? 0 : rnd(&j->rng) % (j->skew_max + 1));
        return;
    default:
        j->entered[r] = tsim_now(t);
        bench_check(quay_ibcast(j->h[r], j->c[r], j->bbuf[r], j->bcast_len, 0, &j->q[r]),
                    "ibcast");
        tsim_wait(t, r, j->q[r]);
        return;
    }
}

static void app(tsim *t, int32_t r, void *ctx)
{
    job *j = ctx;
    int s = j->step[r]++;
    if (j->kind == K_SKEWED_BCAST) {
        bcast_app(t, r, j, s);
        return;
    }
    if (j->q[r] != NULL) {
        j->inside[r] += tsim_now(t) - j->entered[r];
        quay_req_free(j->h[r], j->q[r]);
        j->q[r] = NULL;
    }
    int rep = j->skew_max ? s / 2 : s;
    if (rep >= j->reps) {
        tsim_finish(t, r);
        return;
    }
    if (j->skew_max && s % 2 == 0) {
        tsim_compute(t, r, rnd(&j->rng) % j->skew_max);
        return;
    }
    j->entered[r] = tsim_now(t);
    if (j->kind == K_BARRIER) {
        bench_check(quay_ibarrier(j->h[r], j->c[r], &j->q[r]), "ibarrier");
    } else {
        j->val[r] = r;
        bench_check(quay_iallreduce(j->h[r], j->c[r], &j->val[r], &j->out[r], 1, QUAY_INT64,
                                    &(quay_op){QUAY_OP_SUM, 1, NULL, NULL}, &j->q[r]),
                    "iallreduce");
    }
    tsim_wait(t, r, j->q[r]);
}

typedef struct result {
    double per_op_us;  /* simulated time per operation */
    double host_us;    /* host library time per operation (rank 1) */
    double inside_us;  /* mean time inside the call per operation (skew) */
    double wall_s;
    tsim_stats st;
} result;

static result run_ex(int n, int offload, uint32_t barrier_alg, int kind, int reps,
                     uint64_t skew_max, int bypass, size_t bcast_len);

static result run(int n, int offload, uint32_t barrier_alg, int kind, int reps,
                  uint64_t skew_max)
{
    return run_ex(n, offload, barrier_alg, kind, reps, skew_max, 0, 0);
}

static result run_ex(int n, int offload, uint32_t barrier_alg, int kind, int reps,
                     uint64_t skew_max, int bypass, size_t bcast_len)
{
    job j;
    memset(&j, 0, sizeof j);
    j.n = n;
    j.reps = reps;
    j.kind = kind;
    j.skew_max = skew_max;
    j.rng = 0x9E3779B97F4A7C15ull;
    j.h = calloc((size_t)n, sizeof *j.h);
    j.a = calloc((size_t)n, sizeof *j.a);
    j.c = calloc((size_t)n, sizeof *j.c);
    j.step = calloc((size_t)n, sizeof *j.step);
    j.q = calloc((size_t)n, sizeof *j.q);
    j.val = calloc((size_t)n, sizeof *j.val);
    j.out = calloc((size_t)n, sizeof *j.out);
    j.entered = calloc((size_t)n, sizeof *j.entered);
    j.inside = calloc((size_t)n, sizeof *j.inside);
    j.bcast_len = bcast_len;
    j.bbuf = calloc((size_t)n, sizeof *j.bbuf);
    for (int r = 0; r < n && bcast_len != 0; r++)
        if ((j.bbuf[r] = calloc(1, bcast_len)) == NULL)
            bench_die("out of memory");
    if (!j.h || !j.a || !j.c || !j.step || !j.q || !j.val || !j.out || !j.entered || !j.inside)
        bench_die("out of memory");
    bench_check(tsim_new(n, &M, &j.t), "tsim_new");
    for (int r = 0; r < n; r++) {
        quay_config c;
        quay_config_default(&c);
        c.rank = r;
        c.nranks = n;
        c.max_requests = 128;
        c.max_unexpected = 128;
        c.max_out = 128;
        c.max_ctrl = 64;
        c.max_comms = 2;
        c.coll_barrier = barrier_alg;
        c.coll_offload = (uint32_t)offload;
        c.coll_bypass = (uint32_t)bypass;
        if (kind == K_SKEWED_BCAST)
            c.coll_bcast = g_bcast_alg ? g_bcast_alg : QUAY_BCAST_BINOMIAL; /* bypass's tree */
        if (g_multi)
            c.transport_caps |= QUAY_CAP_MULTI_SEND;
        bench_check(quay_engine_new(&c, &j.h[r]), "engine");
        if (offload) {
            c.coll_offload = 0;
            bench_check(quay_engine_new(&c, &j.a[r]), "agent");
        }
        bench_check(tsim_attach(j.t, r, j.h[r], j.a[r]), "attach");
        bench_check(quay_comm_create(j.h[r], 1, n, NULL, &j.c[r]), "comm");
    }
    tsim_set_app(j.t, app, &j);
    uint64_t w0 = bench_now_ns();
    int rc = tsim_run(j.t);
    uint64_t w1 = bench_now_ns();
    if (rc != 0)
        bench_die("tsim_run: %d at n=%d", rc, n);
    if (kind == K_ALLREDUCE)
        for (int r = 0; r < n; r++)
            if (j.out[r] != (int64_t)n * (n - 1) / 2)
                bench_die("allreduce result wrong at rank %d", r);
    result res;
    res.per_op_us = (double)tsim_now(j.t) / 1000.0 / reps;
    res.host_us = (double)tsim_host_busy(j.t, n > 1 ? 1 : 0) / 1000.0 / reps;
    double inside = 0;
    for (int r = 0; r < n; r++)
        inside += (double)j.inside[r];
    res.inside_us = inside / (kind == K_SKEWED_BCAST ? n - 1 : n) / reps / 1000.0;
    if (kind == K_SKEWED_BCAST)
        inside -= (double)j.inside[0]; /* the root's own call is not a wait */
    res.wall_s = (double)(w1 - w0) / 1e9;
    tsim_get_stats(j.t, &res.st);
    tsim_free(j.t);
    for (int r = 0; r < n; r++) {
        quay_engine_free(j.h[r]);
        quay_engine_free(j.a[r]);
    }
    free(j.h);
    free(j.a);
    free(j.c);
    free(j.step);
    free(j.q);
    free(j.val);
    free(j.out);
    free(j.entered);
    free(j.inside);
    for (int r = 0; r < n; r++)
        free(j.bbuf[r]);
    free(j.bbuf);
    return res;
}

/* ---- the lock ------------------------------------------------------------------ */

typedef struct ljob {
    int n, cycles;
    quay_engine **e;
    quay_lock *l;
    quay_lock_rec *recs;
    uint64_t (*rec)[2];
    uint64_t word;
    int *phase, *done;
    uint64_t *start, *sum;
} ljob;

enum { L_IDLE, L_ACQ, L_HELD, L_REL, L_THINK };

static void lock_app(tsim *t, int32_t r, void *ctx)
{
    ljob *j = ctx;
    if (r == 0 || j->done[r] == j->cycles) {
        tsim_finish(t, r); /* the home only holds the word */
        return;
    }
    quay_lock *l = &j->l[r];
    for (;;) {
        switch (j->phase[r]) {
        case L_IDLE:
            j->start[r] = tsim_now(t);
            bench_check(quay_lock_acquire(l), "lock_acquire");
            j->phase[r] = L_ACQ;
            continue;
        case L_ACQ:
        case L_REL: {
            int rc = quay_lock_test(l);
            if (rc < 0)
                bench_die("lock: %s", quay_strerror(rc));
            if (rc == 0) {
                if (l->op != NULL)
                    tsim_wait(t, r, l->op);
                else
                    tsim_compute(t, r, 100); /* spin on the local word */
                return;
            }
            if (j->phase[r] == L_ACQ) {
                j->phase[r] = L_HELD;
                tsim_compute(t, r, 1000); /* the critical section */
                return;
            }
            j->sum[r] += tsim_now(t) - j->start[r];
            j->phase[r] = L_THINK;
            if (++j->done[r] == j->cycles) {
                tsim_finish(t, r);
                return;
            }
            tsim_compute(t, r, 2000); /* before the next attempt */
            return;
        }
        case L_HELD:
            bench_check(quay_lock_release(l), "lock_release");
            j->phase[r] = L_REL;
            continue;
        default:
            j->phase[r] = L_IDLE;
            continue;
        }
    }
}

/* Mean us of one acquire + release at rank 1 with `contenders` ranks. */
static double lock_run(int contenders, int atomic_host, int cycles)
{
    int n = contenders + 1;
    ljob j;
    memset(&j, 0, sizeof j);
    j.n = n;
    j.cycles = cycles;
    j.e = calloc((size_t)n, sizeof *j.e);
    j.l = calloc((size_t)n, sizeof *j.l);
    j.recs = calloc((size_t)n, sizeof *j.recs);
    j.rec = calloc((size_t)n, sizeof *j.rec);
    j.phase = calloc((size_t)n, sizeof *j.phase);
    j.done = calloc((size_t)n, sizeof *j.done);
    j.start = calloc((size_t)n, sizeof *j.start);
    j.sum = calloc((size_t)n, sizeof *j.sum);
    nicsim_model m = M;
    m.atomic_host = (uint32_t)atomic_host;
    tsim *t;
    bench_check(tsim_new(n, &m, &t), "tsim_new");
    uint64_t lkey = 0;
    for (int r = 0; r < n; r++) {
        quay_config c;
        quay_config_default(&c);
        c.rank = r;
        c.nranks = n;
        c.max_requests = 64;
        c.max_unexpected = 64;
        c.transport_caps = QUAY_CAP_RDMA_PUT | QUAY_CAP_RDMA_GET | QUAY_CAP_RDMA_ATOMIC;
        bench_check(quay_engine_new(&c, &j.e[r]), "engine");
        bench_check(tsim_attach(t, r, j.e[r], NULL), "attach");
        bench_check(quay_mem_register(j.e[r], j.rec[r], sizeof j.rec[r],
                                      QUAY_MEM_READ | QUAY_MEM_WRITE, &j.recs[r].key),
                    "register");
    }
    bench_check(quay_mem_register(j.e[0], &j.word, 8, QUAY_MEM_READ | QUAY_MEM_WRITE, &lkey),
                "register");
    for (int r = 0; r < n; r++)
        bench_check(quay_lock_init(&j.l[r], j.e[r], 0, lkey, 0, j.recs, j.rec[r]), "init");
    tsim_set_app(t, lock_app, &j);
    if (tsim_run(t) != 0)
        bench_die("lock run stuck");
    double us = (double)j.sum[1] / cycles / 1000.0;
    tsim_free(t);
    for (int r = 0; r < n; r++)
        quay_engine_free(j.e[r]);
    free(j.e);
    free(j.l);
    free(j.recs);
    free(j.rec);
    free(j.phase);
    free(j.done);
    free(j.start);
    free(j.sum);
    return us;
}

int main(int argc, char **argv)
{
    const char *model = NULL;
    int max_n = 1024, reps = 20, csv = 0, only_sim = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--model") == 0 && i + 1 < argc)
            model = argv[++i];
        else if (strcmp(argv[i], "--max-n") == 0 && i + 1 < argc)
            max_n = atoi(argv[++i]);
        else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--csv") == 0)
            csv = 1;
        else if (strcmp(argv[i], "--only-sim") == 0)
            only_sim = 1;
        else
            bench_die("usage: bench_timed [--model FILE] [--max-n N] [--reps R] [--csv] "
                      "[--only-sim]");
    }
    nicsim_model_default(&M);
    if (model != NULL) {
        char err[256];
        if (nicsim_model_load(model, &M, err, sizeof err) != 0)
            bench_die("%s", err);
    }
    printf("# model: host send %llu ns + %llu ps/B, recv %llu ns + %llu ps/B, call %llu ns, "
           "offload post %llu ns, completion %llu ns; "
           "bus %llu ns + %llu ps/B; NIC %llu ns/packet, agent step %llu ns; wire %llu ns + "
           "%llu ps/B\n",
           (unsigned long long)M.host_send_ns, (unsigned long long)M.host_send_ps,
           (unsigned long long)M.host_recv_ns, (unsigned long long)M.host_recv_ps,
           (unsigned long long)M.host_call_ns, (unsigned long long)M.host_post_ns,
           (unsigned long long)M.host_notify_ns, (unsigned long long)M.bus_ns,
           (unsigned long long)M.bus_ps, (unsigned long long)M.nic_ns,
           (unsigned long long)M.agent_step_ns, (unsigned long long)M.wire_ns,
           (unsigned long long)M.wire_ps);

    static const char *algname[] = {"", "dissemination", "pairwise", "tree"};
    if (only_sim)
        goto sim;
    printf("\n## 1. Barrier latency (simulated us per barrier, %d barriers)\n\n", reps);
    if (csv)
        printf("csv,barrier,n,alg,host_us,nic_us,foi\n");
    else
        printf("| N | algorithm | host-based | NIC-based | FoI |\n|---:|---|---:|---:|---:|\n");
    for (int n = 2; n <= max_n; n *= 2)
        for (uint32_t alg = 1; alg <= 3; alg++) {
            result h = run(n, 0, alg, K_BARRIER, reps, 0);
            result x = run(n, 1, alg, K_BARRIER, reps, 0);
            if (csv)
                printf("csv,barrier,%d,%s,%.2f,%.2f,%.2f\n", n, algname[alg], h.per_op_us,
                       x.per_op_us, h.per_op_us / x.per_op_us);
            else
                printf("| %d | %s | %.2f | %.2f | %.2f |\n", n, algname[alg], h.per_op_us,
                       x.per_op_us, h.per_op_us / x.per_op_us);
        }

    printf("\n## 2. Allreduce of one int64 (us per call; host CPU us per call, rank 1)\n\n");
    if (csv)
        printf("csv,allreduce,n,host_us,nic_us,host_cpu_us,nic_cpu_us\n");
    else
        printf("| N | host-based | NIC-based | host CPU, host-based | host CPU, NIC-based | "
               "CPU FoI |\n|---:|---:|---:|---:|---:|---:|\n");
    for (int n = 2; n <= max_n; n *= 4) {
        result h = run(n, 0, 0, K_ALLREDUCE, reps, 0);
        result x = run(n, 1, 0, K_ALLREDUCE, reps, 0);
        if (csv)
            printf("csv,allreduce,%d,%.2f,%.2f,%.2f,%.2f\n", n, h.per_op_us, x.per_op_us,
                   h.host_us, x.host_us);
        else
            printf("| %d | %.2f | %.2f | %.2f | %.2f | %.2f |\n", n, h.per_op_us, x.per_op_us,
                   h.host_us, x.host_us, h.host_us / x.host_us);
    }

    printf("\n## 3. Barrier under skew (%d barriers, each rank computes U(0, D) before each; "
           "mean us inside the barrier call)\n\n", reps);
    if (csv)
        printf("csv,skew,n,d_us,host_inside_us,nic_inside_us\n");
    else
        printf("| N | D (us) | host-based | NIC-based | FoI |\n|---:|---:|---:|---:|---:|\n");
    int sn = max_n < 64 ? max_n : 64;
    for (uint64_t d = 0; d <= 1000000; d = d ? d * 10 : 10000) {
        result h = run(sn, 0, QUAY_BARRIER_PAIRWISE, K_BARRIER, reps, d);
        result x = run(sn, 1, QUAY_BARRIER_PAIRWISE, K_BARRIER, reps, d);
        if (csv)
            printf("csv,skew,%d,%llu,%.2f,%.2f\n", sn, (unsigned long long)(d / 1000),
                   h.inside_us, x.inside_us);
        else
            printf("| %d | %llu | %.2f | %.2f | %.2f |\n", sn, (unsigned long long)(d / 1000),
                   h.inside_us, x.inside_us, h.inside_us / x.inside_us);
        if (d == 0)
            d = 1000; /* then 10 us, 100 us, 1 ms */
    }

    printf("\n## 4. MCS lock: us per acquire + release at one rank (1 us critical section, 2 "
           "us between attempts)\n\n");
    if (csv)
        printf("csv,lock,contenders,nic_us,host_us\n");
    else
        printf("| contenders | atomics on the NIC | atomics on a host server | FoI |\n"
               "|---:|---:|---:|---:|\n");
    for (int c = 1; c <= 15; c += c < 4 ? 1 : 4) {
        double nic = lock_run(c, 0, reps), host = lock_run(c, 1, reps);
        if (csv)
            printf("csv,lock,%d,%.2f,%.2f\n", c, nic, host);
        else
            printf("| %d | %.2f | %.2f | %.2f |\n", c, nic, host, host / nic);
    }

    printf("\n## 6. Broadcast under skew, application bypass (N = 32, %d rounds; mean us "
           "inside the broadcast call, non-root ranks)\n\n", reps);
    if (csv)
        printf("csv,bypass,len,d_us,plain_us,bypass_us\n");
    else
        printf("| size | D (us) | plain | bypass | FoI |\n|---:|---:|---:|---:|---:|\n");
    int bn = max_n < 32 ? max_n : 32;
    static const size_t blens[] = {8, 2048, 16384, 65536};
    for (size_t z = 0; z < 4; z++)
        for (uint64_t d = 0; d <= 1000000; d = d ? d * 20 : 50000) {
            result p0 = run_ex(bn, 0, 0, K_SKEWED_BCAST, reps, d, 0, blens[z]);
            result p1 = run_ex(bn, 0, 0, K_SKEWED_BCAST, reps, d, 1, blens[z]);
            if (csv)
                printf("csv,bypass,%zu,%llu,%.2f,%.2f\n", blens[z],
                       (unsigned long long)(d / 1000), p0.inside_us, p1.inside_us);
            else
                printf("| %zu | %llu | %.2f | %.2f | %.2f |\n", blens[z],
                       (unsigned long long)(d / 1000), p0.inside_us, p1.inside_us,
                       p0.inside_us / p1.inside_us);
        }

    printf("\n## 7. Multi-send: 4 KiB broadcast, mean us inside the call (non-root ranks, "
           "%d rounds, no skew)\n\n", reps);
    if (!csv)
        printf("| N | tree | unicast copies | multi-send | FoI |\n|---:|---|---:|---:|---:|\n");
    for (int n = 4; n <= max_n && n <= 256; n *= 4)
        for (uint32_t alg = QUAY_BCAST_BINOMIAL; alg <= QUAY_BCAST_OPTIMAL_TREE; alg++) {
            g_bcast_alg = alg;
            g_multi = 0;
            result u = run_ex(n, 0, 0, K_SKEWED_BCAST, reps, 0, 0, 4096);
            g_multi = 1;
            result x = run_ex(n, 0, 0, K_SKEWED_BCAST, reps, 0, 0, 4096);
            g_multi = 0;
            g_bcast_alg = 0;
            if (csv)
                printf("csv,multi,%d,%u,%.2f,%.2f\n", n, alg, u.inside_us, x.inside_us);
            else
                printf("| %d | %s | %.2f | %.2f | %.2f |\n", n,
                       alg == QUAY_BCAST_BINOMIAL ? "binomial" : "postal optimal", u.inside_us,
                       x.inside_us, u.inside_us / x.inside_us);
        }

sim:
    printf("\n## 5. The simulator (wall clock of this machine)\n\n");
    printf("| run | events | deliveries | wall s | deliveries/s | events/s |\n"
           "|---|---:|---:|---:|---:|---:|\n");
    int big = max_n;
    result b1 = run(big, 0, 0, K_BARRIER, 1, 0);
    printf("| one %d-rank barrier, host-based | %llu | %llu | %.3f | %.0f | %.0f |\n", big,
           (unsigned long long)b1.st.events, (unsigned long long)b1.st.packets, b1.wall_s,
           (double)b1.st.packets / b1.wall_s, (double)b1.st.events / b1.wall_s);
    result b2 = run(big, 0, 0, K_BARRIER, reps, 0);
    printf("| %d %d-rank barriers, host-based | %llu | %llu | %.3f | %.0f | %.0f |\n", reps, big,
           (unsigned long long)b2.st.events, (unsigned long long)b2.st.packets, b2.wall_s,
           (double)b2.st.packets / b2.wall_s, (double)b2.st.events / b2.wall_s);
    result b3 = run(big, 1, 0, K_BARRIER, reps, 0);
    printf("| %d %d-rank barriers, offloaded | %llu | %llu | %.3f | %.0f | %.0f |\n", reps, big,
           (unsigned long long)b3.st.events, (unsigned long long)b3.st.packets, b3.wall_s,
           (double)b3.st.packets / b3.wall_s, (double)b3.st.events / b3.wall_s);
    return 0;
}
