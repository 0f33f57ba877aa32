/* sim_runs.c — see sim_runs.h. */
#include "sim_runs.h"

#include <stdlib.h>
#include <string.h>

#include <quay/quay_coll.h>

#include "sim_util.h"

/* ---- collectives ---------------------------------------------------------------- */

typedef struct coll_job {
    const sim_coll_spec *s;
    uint8_t **bbuf;
    quay_engine **h, **a; /* host engine, NIC agent (offload only) */
    quay_comm **c;
    int *step;            /* the next step of each rank's application */
    quay_req **q;
    int64_t *val, *out;
    uint64_t *entered, *inside; /* when it called, total time inside */
    uint64_t rng;
} coll_job;

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Barrier, compute U(0, D) (not the root), broadcast or reduce: 3 steps a
 * round. */
static void bcast_app(tsim *t, int32_t r, coll_job *j, int s)
{
    if (j->q[r] != NULL) {
        if (s % 3 == 0) /* the broadcast just completed */
            j->inside[r] += tsim_now(t) - j->entered[r];
        quay_req_free(j->h[r], j->q[r]);
        j->q[r] = NULL;
    }
    if (s / 3 >= j->s->reps) {
        tsim_finish(t, r);
        return;
    }
    switch (s % 3) {
    case 0:
        sim_check(quay_ibarrier(j->h[r], j->c[r], &j->q[r]), "ibarrier");
        tsim_wait(t, r, j->q[r]);
        return;
    case 1:
        tsim_compute(t, r, r == 0 ? 0 : rnd(&j->rng) % (j->s->skew_max + 1));
        return;
    default:
        j->entered[r] = tsim_now(t);
        if (j->s->kind == SIM_SKEWED_REDUCE)
            sim_check(quay_ireduce(j->h[r], j->c[r], r == 0 ? QUAY_IN_PLACE : j->bbuf[r],
                                   j->bbuf[r], j->s->bcast_len / 8, QUAY_INT64,
                                   &(quay_op){QUAY_OP_SUM, 1, NULL, NULL}, 0, &j->q[r]),
                      "ireduce");
        else
            sim_check(quay_ibcast(j->h[r], j->c[r], j->bbuf[r], j->s->bcast_len, 0, &j->q[r]),
                      "ibcast");
        tsim_wait(t, r, j->q[r]);
        return;
    }
}

static void coll_app(tsim *t, int32_t r, void *ctx)
{
    coll_job *j = ctx;
    const sim_coll_spec *s = j->s;
    int step = j->step[r]++;
    if (s->kind == SIM_SKEWED_BCAST || s->kind == SIM_SKEWED_REDUCE) {
        bcast_app(t, r, j, step);
        return;
    }
    if (j->q[r] != NULL) {
        j->inside[r] += tsim_now(t) - j->entered[r];
        quay_req_free(j->h[r], j->q[r]);
        j->q[r] = NULL;
    }
    int rep = s->skew_max ? step / 2 : step;
    if (rep >= s->reps) {
        tsim_finish(t, r);
        return;
    }
    if (s->skew_max && step % 2 == 0) {
        tsim_compute(t, r, rnd(&j->rng) % s->skew_max);
        return;
    }
    j->entered[r] = tsim_now(t);
    if (s->kind == SIM_BARRIER) {
        sim_check(quay_ibarrier(j->h[r], j->c[r], &j->q[r]), "ibarrier");
    } else {
        j->val[r] = r;
        sim_check(quay_iallreduce(j->h[r], j->c[r], &j->val[r], &j->out[r], 1, QUAY_INT64,
                                  &(quay_op){QUAY_OP_SUM, 1, NULL, NULL}, &j->q[r]),
                  "iallreduce");
    }
    tsim_wait(t, r, j->q[r]);
}

static void coll_engines_new(const sim_coll_spec *s, coll_job *j, tsim *t)
{
    for (int r = 0; r < s->n; r++) {
        quay_config c;
        quay_config_default(&c);
        memset(c.key_secret, 0x5a, sizeof c.key_secret); /* (a simulation: any fixed secret) */
        c.rank = r;
        c.nranks = s->n;
        c.max_requests = 128;
        c.max_unexpected = 128;
        c.max_out = 128;
        c.max_ctrl = 64;
        c.max_comms = 2;
        c.coll_barrier = s->barrier_alg;
        c.coll_offload = (uint32_t)s->offload;
        c.coll_bypass = (uint32_t)s->bypass;
        if (s->kind == SIM_SKEWED_BCAST) /* binomial: application bypass's tree */
            c.coll_bcast = s->bcast_alg ? s->bcast_alg : QUAY_BCAST_BINOMIAL;
        if (s->multi_send)
            c.transport_caps |= QUAY_CAP_MULTI_SEND;
        sim_check(quay_engine_new(&c, &j->h[r]), "engine");
        if (s->offload) {
            c.coll_offload = 0;
            sim_check(quay_engine_new(&c, &j->a[r]), "agent");
        }
        sim_check(tsim_attach(t, r, j->h[r], j->a[r]), "attach");
        sim_check(quay_comm_create(j->h[r], 1, s->n, NULL, &j->c[r]), "comm");
    }
}

sim_result sim_coll_run(const sim_coll_spec *s)
{
    size_t n = (size_t)s->n;
    coll_job j;
    memset(&j, 0, sizeof j);
    j.s = s;
    j.rng = 0x9E3779B97F4A7C15ull;
    j.h = sim_calloc(n, sizeof *j.h);
    j.a = sim_calloc(n, sizeof *j.a);
    j.c = sim_calloc(n, sizeof *j.c);
    j.step = sim_calloc(n, sizeof *j.step);
    j.q = sim_calloc(n, sizeof *j.q);
    j.val = sim_calloc(n, sizeof *j.val);
    j.out = sim_calloc(n, sizeof *j.out);
    j.entered = sim_calloc(n, sizeof *j.entered);
    j.inside = sim_calloc(n, sizeof *j.inside);
    j.bbuf = sim_calloc(n, sizeof *j.bbuf);
    for (size_t r = 0; r < n && s->bcast_len != 0; r++)
        j.bbuf[r] = sim_calloc(1, s->bcast_len);

    tsim *t;
    sim_check(tsim_new(s->n, s->model, &t), "tsim_new");
    coll_engines_new(s, &j, t);
    tsim_set_app(t, coll_app, &j);
    uint64_t w0 = sim_now_ns();
    int rc = tsim_run(t);
    uint64_t w1 = sim_now_ns();
    if (rc != 0)
        sim_die("tsim_run: %d at n=%d", rc, s->n);
    if (s->kind == SIM_ALLREDUCE)
        for (int r = 0; r < s->n; r++)
            if (j.out[r] != (int64_t)s->n * (s->n - 1) / 2)
                sim_die("allreduce result wrong at rank %d", r);

    sim_result res;
    uint64_t now = tsim_now(t), busy = tsim_host_busy(t, s->n > 1 ? 1 : 0);
    res.per_op_us = (double)now / 1000.0 / s->reps;
    res.host_us = (double)busy / 1000.0 / s->reps;
    res.host_util = now != 0 ? (double)busy / (double)now : 0.0;
    double inside = 0;
    for (size_t r = 0; r < n; r++)
        inside += (double)j.inside[r];
    int callers = s->n;
    if ((s->kind == SIM_SKEWED_BCAST || s->kind == SIM_SKEWED_REDUCE) && s->n > 1) {
        inside -= (double)j.inside[0]; /* the root's own call is not a wait */
        callers = s->n - 1;
    }
    res.inside_us = inside / callers / s->reps / 1000.0;
    res.wall_s = (double)(w1 - w0) / 1e9;
    tsim_get_stats(t, &res.st);

    tsim_free(t);
    for (size_t r = 0; r < n; r++) {
        quay_engine_free(j.h[r]);
        quay_engine_free(j.a[r]);
        free(j.bbuf[r]);
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
    free(j.bbuf);
    return res;
}

/* ---- RDMA-capable engines: the lock and single atomics ---------------------------- */

/* n engines with RDMA put / get / atomics attached to a new simulator. */
static tsim *rdma_world_new(const nicsim_model *m, int atomic_host, int n, quay_engine **e)
{
    nicsim_model mm = *m;
    mm.atomic_host = (uint32_t)atomic_host;
    tsim *t;
    sim_check(tsim_new(n, &mm, &t), "tsim_new");
    for (int r = 0; r < n; r++) {
        quay_config c;
        quay_config_default(&c);
        memset(c.key_secret, 0x5a, sizeof c.key_secret); /* (a simulation: any fixed secret) */
        c.rank = r;
        c.nranks = n;
        c.max_requests = 64;
        c.max_unexpected = 64;
        c.transport_caps = QUAY_CAP_RDMA_PUT | QUAY_CAP_RDMA_GET | QUAY_CAP_RDMA_ATOMIC;
        sim_check(quay_engine_new(&c, &e[r]), "engine");
        sim_check(tsim_attach(t, r, e[r], NULL), "attach");
    }
    return t;
}

typedef struct lock_job {
    int cycles;
    quay_lock *l;
    int *phase, *done;
    uint64_t *start, *sum;
} lock_job;

enum { L_IDLE, L_ACQ, L_HELD, L_REL, L_THINK };

static void lock_app(tsim *t, int32_t r, void *ctx)
{
    lock_job *j = ctx;
    if (r == 0 || j->done[r] == j->cycles) {
        tsim_finish(t, r); /* the home only holds the word */
        return;
    }
    quay_lock *l = &j->l[r];
    for (;;) {
        switch (j->phase[r]) {
        case L_IDLE:
            j->start[r] = tsim_now(t);
            sim_check(quay_lock_acquire(l), "lock_acquire");
            j->phase[r] = L_ACQ;
            continue;
        case L_ACQ:
        case L_REL: {
            int rc = quay_lock_test(l);
            if (rc < 0)
                sim_die("lock: %s", quay_strerror(rc));
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
            sim_check(quay_lock_release(l), "lock_release");
            j->phase[r] = L_REL;
            continue;
        default:
            j->phase[r] = L_IDLE;
            continue;
        }
    }
}

double sim_lock_run(const nicsim_model *m, int contenders, int atomic_host, int cycles)
{
    int n = contenders + 1;
    size_t nn = (size_t)n;
    lock_job j;
    memset(&j, 0, sizeof j);
    j.cycles = cycles;
    quay_engine **e = sim_calloc(nn, sizeof *e);
    quay_lock_rec *recs = sim_calloc(nn, sizeof *recs);
    uint64_t(*rec)[2] = sim_calloc(nn, sizeof *rec);
    uint64_t word = 0, lkey = 0;
    j.l = sim_calloc(nn, sizeof *j.l);
    j.phase = sim_calloc(nn, sizeof *j.phase);
    j.done = sim_calloc(nn, sizeof *j.done);
    j.start = sim_calloc(nn, sizeof *j.start);
    j.sum = sim_calloc(nn, sizeof *j.sum);

    tsim *t = rdma_world_new(m, atomic_host, n, e);
    for (int r = 0; r < n; r++)
        sim_check(quay_mem_register(e[r], rec[r], sizeof rec[r], QUAY_MEM_READ | QUAY_MEM_WRITE,
                                    &recs[r].key),
                  "register");
    sim_check(quay_mem_register(e[0], &word, 8, QUAY_MEM_READ | QUAY_MEM_WRITE, &lkey),
              "register");
    for (int r = 0; r < n; r++)
        sim_check(quay_lock_init(&j.l[r], e[r], 0, lkey, 0, recs, rec[r]), "init");
    tsim_set_app(t, lock_app, &j);
    if (tsim_run(t) != 0)
        sim_die("lock run stuck");
    double us = (double)j.sum[1] / cycles / 1000.0;

    tsim_free(t);
    for (int r = 0; r < n; r++)
        quay_engine_free(e[r]);
    free(e);
    free(recs);
    free(rec);
    free(j.l);
    free(j.phase);
    free(j.done);
    free(j.start);
    free(j.sum);
    return us;
}

typedef struct atomic_job {
    quay_engine *e;     /* the issuer's engine (rank 1) */
    uint32_t op;
    uint64_t key;       /* the word on rank 0 */
    int reps, done;
    quay_req *q;
    uint64_t result, start, sum;
} atomic_job;

/* Op i adds 1, or sets i + 1 (CAS: if the word is i): with every op the
 * word goes 0, 1, 2, ..., so op i's old value must be i. */
static void atomic_app(tsim *t, int32_t r, void *ctx)
{
    atomic_job *j = ctx;
    if (r == 0) {
        tsim_finish(t, r); /* the target only holds the word */
        return;
    }
    if (j->q != NULL) {
        j->sum += tsim_now(t) - j->start;
        quay_status st;
        sim_check(quay_req_test(j->q, &st) == 1 ? st.error : QUAY_ESTATE, "atomic");
        quay_req_free(j->e, j->q);
        j->q = NULL;
        if (j->result != (uint64_t)j->done)
            sim_die("atomic op %u: old value %llu, expected %d", j->op,
                    (unsigned long long)j->result, j->done);
        j->done++;
    }
    if (j->done == j->reps) {
        tsim_finish(t, r);
        return;
    }
    uint64_t i = (uint64_t)j->done;
    j->start = tsim_now(t);
    uint64_t operand = j->op == QUAY_ATOMIC_FADD ? 1 : i + 1;
    sim_check(quay_iatomic(j->e, 0, j->op, j->key, 0, operand, i, &j->result, &j->q),
              "iatomic");
    tsim_wait(t, r, j->q);
}

double sim_atomic_run(const nicsim_model *m, uint32_t op, int atomic_host, int reps)
{
    quay_engine *e[2];
    uint64_t word = 0;
    atomic_job j;
    memset(&j, 0, sizeof j);
    tsim *t = rdma_world_new(m, atomic_host, 2, e);
    sim_check(quay_mem_register(e[0], &word, 8, QUAY_MEM_READ | QUAY_MEM_WRITE, &j.key),
              "register");
    j.e = e[1];
    j.op = op;
    j.reps = reps;
    tsim_set_app(t, atomic_app, &j);
    if (tsim_run(t) != 0)
        sim_die("atomic run stuck");
    if (word != (uint64_t)reps)
        sim_die("atomic op %u: word %llu after %d ops", op, (unsigned long long)word, reps);
    double us = (double)j.sum / reps / 1000.0;
    tsim_free(t);
    quay_engine_free(e[0]);
    quay_engine_free(e[1]);
    return us;
}
