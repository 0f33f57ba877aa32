/*
 * rt.c — the runtime: one engine, one transport, the pump loop between
 * them (quay_rt.h).
 */
#include "quay_rt.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "pmi_client.h"
#include "qrt_adapter.h"
#include "qrt_async.h"
#include "qrt_env.h"
#include "qrt_shm.h"
#include "qrt_tcp.h"
#include "qrt_wait.h"

#include <quay/quay_coll.h>

/* A blocked wait sleeps at most this long per step; the transport wakes
 * it earlier on any arrival (and caps it at its own liveness interval). */
#define RT_BLOCK_NS (100 * 1000 * 1000LL)
/* A polling wait tests the engine's deadline on one idle step in this
 * many (and always before it blocks). */
#define RT_TICK_EVERY 8
/* Single-copy transports move rendezvous data in frag_size pieces, one
 * request/reply each: larger pieces, fewer round trips. */
#define RT_FRAG_RDMA (512u * 1024u)
/* qrt_abort under PMI waits at most this many 100 ms steps to be killed. */
#define RT_ABORT_WAIT_STEPS 50

enum { PEER_OPEN = 0, PEER_BYE = 1, PEER_FAILED = 2 };

struct qrt {
    quay_engine *e;
    quay_comm *world;
    quay_transport *t;
    quay_transport_sink sink;
    void *adapter;        /* the transport's library (QUAY_TRANSPORT=path) */
    int32_t rank;
    int32_t size;
    uint32_t cfg_flags;   /* the engine's quay_config.flags */
    qrt_waitpol wait;     /* how long an idle wait polls (qrt_wait.h) */
    uint64_t outstanding; /* SEND / RDMA actions the transport still holds */
    int finalizing;       /* refused packets are dropped, not kept */
    uint64_t dropped;
    uint8_t *peer;        /* PEER_* per world rank */
    int32_t peers_open;   /* peers that neither said bye nor failed */
    int32_t peers_failed; /* peers that failed */
    int fatal;            /* the engine's fatal code, once seen */
    qpmi *pmi;            /* started by a PMI-1 process manager (Hydra) */
    qrt_async *async;     /* the progress thread (async.c), NULL: none */
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void note_rc(qrt *rt, int rc)
{
    if (rc <= QUAY_ERR_FATAL && rt->fatal == 0)
        rt->fatal = rc;
}

/* ---- the sink: what the transport tells us ------------------------------------------ */

static int sink_packet(void *ctx, int32_t peer, const void *bytes, size_t len)
{
    qrt *rt = ctx;
    int rc = quay_on_packet(rt->e, peer, bytes, len);
    if (rc == QUAY_EAGAIN) {
        /* Nobody will receive after finalize: keeping it would only
         * block the peer's bye behind it. */
        if (!rt->finalizing)
            return QUAY_EAGAIN;
        rt->dropped++;
        return 0;
    }
    note_rc(rt, rc); /* EPROTO / ESTATE: the engine dropped it */
    return 0;
}

static void sink_op_done(void *ctx, uint64_t token, int status)
{
    qrt *rt = ctx;
    rt->outstanding--;
    note_rc(rt, quay_on_op_done(rt->e, token, status));
}

/* The engine's memory keys need a secret nobody else can know: from the
 * OS's random source, unless the embedder gave one. */
static int key_secret(quay_config *cfg)
{
    uint8_t any = 0;
    for (size_t i = 0; i < sizeof cfg->key_secret; i++)
        any |= cfg->key_secret[i];
    if (any)
        return 0;
    size_t got = 0;
    while (got < sizeof cfg->key_secret) {
        ssize_t n = getrandom(cfg->key_secret + got, sizeof cfg->key_secret - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            fprintf(stderr, "quay: no random source for memory keys: %s\n", strerror(errno));
            return QUAY_EINTERNAL;
        }
        got += (size_t)n;
    }
    return 0;
}

static int sink_mem_resolve(void *ctx, int32_t peer, uint64_t key, uint64_t offset,
                            uint64_t len, uint32_t access, void **addr)
{
    qrt *rt = ctx;
    return quay_mem_resolve(rt->e, peer, key, offset, len, access, addr);
}

static int sink_mem_atomic(void *ctx, int32_t peer, uint64_t key, uint64_t offset, uint32_t op,
                           uint64_t operand, uint64_t compare, uint64_t *old)
{
    qrt *rt = ctx;
    return quay_mem_atomic(rt->e, peer, key, offset, op, operand, compare, old);
}

static void peer_close(qrt *rt, int32_t peer, uint8_t how)
{
    if (peer < 0 || peer >= rt->size || peer == rt->rank || rt->peer[peer] != PEER_OPEN)
        return;
    rt->peer[peer] = how;
    rt->peers_open--;
    if (how == PEER_FAILED)
        rt->peers_failed++;
}

static void sink_peer_bye(void *ctx, int32_t peer)
{
    peer_close(ctx, peer, PEER_BYE);
}

static void sink_peer_failed(void *ctx, int32_t peer)
{
    qrt *rt = ctx;
    peer_close(rt, peer, PEER_FAILED);
    note_rc(rt, quay_on_peer_failed(rt->e, peer));
}

/* ---- executing actions -------------------------------------------------------------- */

static void do_send(qrt *rt, int32_t peer, const quay_iov *iov, uint32_t iovcnt,
                    uint64_t token)
{
    int rc = rt->t->ops->send(rt->t, peer, iov, iovcnt, token);
    if (rc == 0) {
        rt->outstanding++;
        return;
    }
    note_rc(rt, quay_on_op_done(rt->e, token, rc == 1 ? 0 : rc));
}

static void run_action(qrt *rt, const quay_action *a)
{
    switch (a->kind) {
    case QUAY_ACT_SEND:
        do_send(rt, a->peer, a->iov, a->iovcnt, a->token);
        break;
    case QUAY_ACT_SEND_MULTI: {
        /* Not advertised (no QUAY_CAP_MULTI_SEND), but cheap to honour:
         * one packet per destination, same payload. */
        quay_iov iov[QUAY_ACTION_IOV_MAX];
        uint32_t extra = a->nmulti < QUAY_MULTI_MAX ? a->nmulti : QUAY_MULTI_MAX;
        do_send(rt, a->peer, a->iov, a->iovcnt, a->token);
        for (uint32_t i = 0; i < extra; i++) {
            iov[0] = a->multi[i].hdr;
            if (a->iovcnt > 1)
                iov[1] = a->iov[1];
            do_send(rt, a->multi[i].peer, iov, a->iovcnt, a->multi[i].token);
        }
        break;
    }
    case QUAY_ACT_RDMA_GET:
    case QUAY_ACT_RDMA_PUT:
    case QUAY_ACT_RDMA_ATOMIC: {
        int rc = rt->t->ops->rdma(rt->t, a);
        if (rc < 0)
            note_rc(rt, quay_on_op_done(rt->e, a->token, rc));
        else
            rt->outstanding++;
        break;
    }
    default:
        /* COMPLETE: waiters use quay_req_test. NOTIFY: every frame
         * already rings the receiver's doorbell. */
        break;
    }
}

/* Execute every action the engine has now. Returns how many, or fatal. */
static int pump(qrt *rt)
{
    quay_action a;
    int n = 0, rc;
    while ((rc = quay_next_action(rt->e, &a)) == 1) {
        run_action(rt, &a);
        n++;
    }
    note_rc(rt, rc);
    return n;
}

/* quay_on_time once the engine's deadline has passed. */
static void tick(qrt *rt)
{
    uint64_t dl = quay_next_deadline(rt->e);
    if (dl == QUAY_TIME_NONE)
        return;
    uint64_t now = now_ns();
    if (now >= dl)
        note_rc(rt, quay_on_time(rt->e, now));
}

int qrt_flush(qrt *rt)
{
    if (rt == NULL)
        return QUAY_EINVAL;
    if (rt->fatal)
        return rt->fatal;
    int n = pump(rt);
    return rt->fatal ? rt->fatal : n;
}

/* One step of progress (qrt_progress). `timed` 0: skip the deadline
 * test, which a wait that polls does on one idle step in RT_TICK_EVERY
 * only (a step is well under a microsecond; the engine's timers are
 * much longer), keeping the loop that watches for arrivals short. */
static int progress(qrt *rt, int64_t timeout_ns, int timed)
{
    int work = 0, rc;
    if (rt->fatal)
        return rt->fatal;
    if (quay_has_actions(rt->e))
        work = pump(rt);
    /* The time before the arrivals: a packet that arrives is then
     * handed on at once (a waiting call returns without the test). */
    if (timed)
        tick(rt);
    rc = rt->t->ops->poll(rt->t, 0);
    work += rc > 0 ? rc : 0;
    /* What the time and the arrivals produced. */
    if (quay_has_actions(rt->e))
        work += pump(rt);
    if (work == 0 && timeout_ns > 0 && !rt->fatal) {
        int64_t block = timeout_ns;
        uint64_t dl = quay_next_deadline(rt->e);
        if (dl != QUAY_TIME_NONE) {
            uint64_t now = now_ns();
            uint64_t left = dl > now ? dl - now : 0;
            if ((uint64_t)block > left)
                block = (int64_t)left;
        }
        rc = rt->t->ops->poll(rt->t, block);
        work += rc > 0 ? rc : 0;
        tick(rt);
        work += pump(rt);
    }
    if (rt->fatal)
        return rt->fatal;
    return work > 0;
}

int qrt_progress(qrt *rt, int64_t timeout_ns)
{
    if (rt == NULL)
        return QUAY_EINVAL;
    return progress(rt, timeout_ns, 1);
}

/* Where a wait is in its idleness: polling (perhaps yielding between
 * polls), or blocking in the transport once its idle budget is spent. */
typedef struct idle_state {
    uint32_t steps;  /* idle steps in a row */
    uint32_t phase;  /* IDLE_* */
    uint64_t since;  /* when the idleness began */
    uint64_t budget; /* idle time to poll, or QRT_WAIT_SHARE */
} idle_state;

enum { IDLE_POLL = 0, IDLE_YIELD = 1, IDLE_BLOCK = 2 };

#define IDLE_INIT {0, IDLE_POLL, 0, 0}

/* One idle step of a wait: poll for the budget the wait policy gives
 * (qrt_wait.h), then block. Only in "share" (our ranks outnumber the
 * cores, nothing else runs) does it yield between polls: there a yield
 * hands the core to another of our ranks; beside other programs it would
 * hand it to one of theirs for a whole slice. */
static int wait_step(qrt *rt, idle_state *w)
{
    int rc = progress(rt, w->phase == IDLE_BLOCK ? RT_BLOCK_NS : 0,
                      w->steps % RT_TICK_EVERY == 0);
    if (rc < 0)
        return rc;
    if (rc > 0) {
        if (w->phase == IDLE_BLOCK)
            qrt_waitpol_woke(&rt->wait, now_ns()); /* (did it find its core taken?) */
        else if (w->steps > 0 && w->budget != QRT_WAIT_SHARE)
            qrt_waitpol_polled(&rt->wait, 1, 0); /* (a hit needs no time) */
        w->steps = 0;
        w->phase = IDLE_POLL;
        return 0;
    }
    if (w->phase == IDLE_BLOCK)
        return 0;
    w->steps++;
    if (w->steps == 1) {
        w->since = now_ns();
        w->budget = qrt_waitpol_budget(&rt->wait, w->since);
        if (w->budget == 0)
            w->phase = IDLE_BLOCK;
    } else if (w->budget != QRT_WAIT_SHARE && (w->steps & 15) == 0) {
        /* The clock is read every 16th step: a poll costs little more. */
        uint64_t now = now_ns();
        if (now - w->since >= w->budget) {
            w->phase = IDLE_BLOCK;
            qrt_waitpol_polled(&rt->wait, 0, now);
        }
    }
    if (w->budget == QRT_WAIT_SHARE) {
        uint32_t n = rt->wait.spin_polls;
        w->phase = w->steps >= n ? IDLE_BLOCK : w->steps > n / 2 ? IDLE_YIELD : IDLE_POLL;
        if (w->phase == IDLE_YIELD) {
            uint64_t t0 = now_ns();
            sched_yield();
            uint64_t t1 = now_ns();
            qrt_waitpol_yielded(&rt->wait, t1 - t0, t1);
        }
    }
    return 0;
}

int qrt_wait(qrt *rt, quay_req *req, quay_status *st)
{
    idle_state w = IDLE_INIT;
    if (rt == NULL || req == NULL)
        return QUAY_EINVAL;
    while (!quay_req_test(req, st)) {
        int rc = wait_step(rt, &w);
        if (rc < 0)
            return rc;
    }
    return 0;
}

int qrt_wait_until(qrt *rt, int (*ready)(void *ctx), void *ctx)
{
    idle_state w = IDLE_INIT;
    if (rt == NULL || ready == NULL)
        return QUAY_EINVAL;
    while (!ready(ctx)) {
        int rc = wait_step(rt, &w);
        if (rc < 0)
            return rc;
    }
    return 0;
}

int qrt_wait_all(qrt *rt, int n, quay_req *const *reqs, quay_status *sts)
{
    for (int i = 0; i < n; i++) {
        int rc = qrt_wait(rt, reqs[i], sts != NULL ? &sts[i] : NULL);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* ---- creation and shutdown ---------------------------------------------------------- */

/* Started by a PMI-1 process manager (Hydra's mpiexec) rather than by
 * quayrun: it says so with PMI_FD or PMI_PORT. */
static int under_pmi(void)
{
    const char *fd = getenv("PMI_FD"), *port = getenv("PMI_PORT");
    return (fd != NULL && *fd != '\0') || (port != NULL && *port != '\0');
}

static int pmi_rank(qrt *rt)
{
    int rc = qpmi_init(&rt->pmi);
    if (rc != QPMI_OK) {
        fprintf(stderr, "quay: cannot talk to the process manager (PMI-1): %s%s%s\n",
                qpmi_strerror(rc), *qpmi_init_errmsg() ? ": " : "", qpmi_init_errmsg());
        return rc == QPMI_ENOMEM ? QUAY_ENOMEM : QUAY_EINVAL;
    }
    rt->rank = qpmi_rank(rt->pmi);
    rt->size = qpmi_size(rt->pmi);
    return 0;
}

/* Rank and size: quayrun's QUAY_RANK / QUAY_SIZE, else a PMI-1 process
 * manager's, else a singleton. */
static int env_rank(qrt *rt)
{
    uint64_t r = 0, n = 1;
    int hr = qrt_env_u64("QUAY_RANK", 0, INT32_MAX - 1, &r);
    int hn = qrt_env_u64("QUAY_SIZE", 1, INT32_MAX, &n);
    if (hr < 0 || hn < 0)
        return QUAY_EINVAL;
    if (hr == 1 && hn == 1 && under_pmi())
        return pmi_rank(rt);
    if (hr != hn || r >= n) {
        fprintf(stderr, "quay: QUAY_RANK and QUAY_SIZE must both be set, with rank < size "
                        "(start the program with quayrun or mpiexec)\n");
        return QUAY_EINVAL;
    }
    rt->rank = (int32_t)r;
    rt->size = (int32_t)n;
    return 0;
}

/* Ranks on this host: Hydra says (MPI_LOCALNRANKS); quayrun starts them
 * all here. */
static uint64_t local_ranks(const qrt *rt)
{
    uint64_t n = (uint64_t)rt->size;
    if (rt->pmi != NULL && qrt_env_u64("MPI_LOCALNRANKS", 1, INT32_MAX, &n) < 0)
        n = (uint64_t)rt->size;
    return n;
}

/* The wait policy's knobs, with the ranks on this host. */
static int spin_policy(qrt *rt)
{
    uint64_t n = local_ranks(rt);
    return qrt_waitpol_init(&rt->wait, n > INT32_MAX ? INT32_MAX : (int32_t)n);
}

static int env_config(quay_config *cfg)
{
    uint64_t v;
    int h;
    if ((h = qrt_env_u64("QUAY_EAGER_MAX", 0, 1u << 30, &v)) < 0)
        return QUAY_EINVAL;
    if (h == 0)
        cfg->eager_max = (size_t)v;
    if ((h = qrt_env_u64("QUAY_FRAG_SIZE", 1, 1u << 30, &v)) < 0)
        return QUAY_EINVAL;
    if (h == 0)
        cfg->frag_size = (size_t)v;
    if ((h = qrt_env_u64("QUAY_SEND_COPY", 0, 1, &v)) < 0)
        return QUAY_EINVAL;
    if (h == 0)
        cfg->flags = v ? cfg->flags | QUAY_CFG_SEND_COPY
                       : cfg->flags & ~(uint32_t)QUAY_CFG_SEND_COPY;
    const char *m = getenv("QUAY_RNDV");
    if (m != NULL && *m != '\0') {
        static const char *const names[] = {"auto", "copy", "get", "put"};
        static const uint32_t modes[] = {QUAY_RNDV_AUTO, QUAY_RNDV_COPY, QUAY_RNDV_GET,
                                         QUAY_RNDV_PUT};
        size_t i;
        for (i = 0; i < 4 && strcmp(m, names[i]) != 0; i++)
            ;
        if (i == 4) {
            fprintf(stderr, "quay: QUAY_RNDV=\"%s\": expected auto, copy, get or put\n", m);
            return QUAY_EINVAL;
        }
        cfg->rndv_mode = modes[i];
    }
    if (qrt_env_coll_alg("QUAY_COLL_BARRIER", QUAY_OFF_BARRIER, &cfg->coll_barrier) < 0 ||
        qrt_env_coll_alg("QUAY_COLL_BCAST", QUAY_OFF_BCAST, &cfg->coll_bcast) < 0 ||
        qrt_env_coll_alg("QUAY_COLL_REDUCE", QUAY_OFF_REDUCE, &cfg->coll_reduce) < 0 ||
        qrt_env_coll_alg("QUAY_COLL_ALLREDUCE", QUAY_OFF_ALLREDUCE, &cfg->coll_allreduce) < 0)
        return QUAY_EINVAL;
    return 0;
}

static int open_tcp(qrt *rt)
{
    qrt_tcp_dir dir;
    int rc = rt->pmi != NULL ? qrt_tcp_dir_pmi(rt->pmi, &dir) : qrt_tcp_dir_env(rt->size, &dir);
    if (rc != 0)
        return rc;
    return qrt_tcp_open(rt->rank, rt->size, &dir, &rt->sink, &rt->t);
}

/* QUAY_TRANSPORT, or what the launcher implies: quayrun sets it; under a
 * PMI process manager ranks may be on several hosts, so TCP. A value with
 * a '/' is an adapter library (qrt_adapter.h). */
static int open_transport(qrt *rt)
{
    const char *name = getenv("QUAY_TRANSPORT");
    if (name == NULL || *name == '\0')
        name = rt->pmi != NULL && rt->size > 1 ? "tcp" : "shm";
    if (qrt_adapter_is_path(name))
        return qrt_adapter_open(name, rt->rank, rt->size, &rt->sink, &rt->t, &rt->adapter);
    if (strcmp(name, "tcp") == 0)
        return open_tcp(rt);
    if (strcmp(name, "shm") == 0) {
        if (rt->pmi != NULL && rt->size > 1) {
            fprintf(stderr, "quay: QUAY_TRANSPORT=shm needs quayrun (it makes the segment); "
                            "under mpiexec use tcp\n");
            return QUAY_EINVAL;
        }
        return qrt_shm_open(rt->rank, rt->size, &rt->sink, &rt->t);
    }
    fprintf(stderr,
            "quay: QUAY_TRANSPORT=\"%s\": unknown transport (known: shm, tcp, or the path "
            "of an adapter library, such as ./libquay_uds.so)\n",
            name);
    return QUAY_EINVAL;
}

static void rt_free(qrt *rt)
{
    if (rt->t != NULL)
        rt->t->ops->close(rt->t);
    qrt_adapter_unload(rt->adapter); /* (after close: its code is in there) */
    quay_engine_free(rt->e); /* frees the world communicator too */
    if (rt->pmi != NULL)
        qpmi_finalize(rt->pmi);
    qrt_waitpol_fini(&rt->wait);
    free(rt->peer);
    free(rt);
}

int qrt_init(const quay_config *base, qrt **prt)
{
    quay_config cfg;
    qrt *rt;
    int rc;
    if (prt == NULL)
        return QUAY_EINVAL;
    *prt = NULL;
    rt = calloc(1, sizeof *rt);
    if (rt == NULL)
        return QUAY_ENOMEM;
    rt->wait.fd = -1;
    rc = env_rank(rt);
    if (rc == 0)
        rc = spin_policy(rt);
    if (rc == 0)
        rc = qrt_async_env_check();
    if (rc == 0) {
        rt->peer = calloc((size_t)rt->size, 1);
        rt->peers_open = rt->size - 1;
        if (rt->peer == NULL)
            rc = QUAY_ENOMEM;
    }
    rt->sink = (quay_transport_sink){.ctx = rt,
                                     .packet = sink_packet,
                                     .op_done = sink_op_done,
                                     .mem_resolve = sink_mem_resolve,
                                     .mem_atomic = sink_mem_atomic,
                                     .peer_bye = sink_peer_bye,
                                     .peer_failed = sink_peer_failed};
    if (rc == 0)
        rc = open_transport(rt);
    if (rc == 0) {
        /* (the program's layout of it may be older than ours) */
        if (base != NULL)
            rc = quay_config_upgrade(base, &cfg);
        else
            quay_config_default(&cfg);
    }
    if (rc == 0) {
        if (base == NULL || base->frag_size == 0)
            cfg.frag_size = rt->t->caps & (QUAY_CAP_RDMA_GET | QUAY_CAP_RDMA_PUT)
                                ? RT_FRAG_RDMA
                                : (size_t)65536;
        cfg.rank = rt->rank;
        cfg.nranks = rt->size;
        cfg.flags &= ~(uint32_t)QUAY_CFG_COMPLETE_ACTIONS;
        cfg.transport_caps = rt->t->caps;
        rc = env_config(&cfg);
    }
    if (rc == 0)
        rc = key_secret(&cfg);
    rt->cfg_flags = cfg.flags;
    if (rc == 0)
        rc = quay_engine_new(&cfg, &rt->e);
    if (rc == 0)
        rc = quay_comm_create(rt->e, 0, rt->size, NULL, &rt->world);
    if (rc != 0) {
        if (rc != QUAY_EINVAL && rc != QUAY_ENOTSUP)
            fprintf(stderr, "quay rank %d: start-up failed: %s\n", (int)rt->rank,
                    quay_strerror(rc));
        rt_free(rt);
        return rc;
    }
    *prt = rt;
    return 0;
}

quay_engine *qrt_engine(qrt *rt)
{
    return rt != NULL ? rt->e : NULL;
}

quay_comm *qrt_world(qrt *rt)
{
    return rt != NULL ? rt->world : NULL;
}

int32_t qrt_rank(const qrt *rt)
{
    return rt != NULL ? rt->rank : -1;
}

int32_t qrt_size(const qrt *rt)
{
    return rt != NULL ? rt->size : -1;
}

uint32_t qrt_caps(const qrt *rt)
{
    return rt != NULL ? rt->t->caps : 0;
}

uint32_t qrt_config_flags(const qrt *rt)
{
    return rt != NULL ? rt->cfg_flags : 0;
}

void qrt_abort(qrt *rt, int code, const char *msg)
{
    fflush(stdout);
    fflush(stderr);
    if (rt != NULL && rt->pmi != NULL && qpmi_abort(rt->pmi, code, msg != NULL ? msg : "aborted") == 0) {
        /* The process manager now ends the job with this code. Exiting
         * first would close our links: a peer could fail on them and
         * send its own abort, whose code might win. Wait (bounded) to
         * be killed instead. */
        for (int i = 0; i < RT_ABORT_WAIT_STEPS; i++) {
            struct timespec ts = {0, 100 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    _exit(code);
}

int qrt_peer_failed(const qrt *rt, int32_t peer)
{
    if (rt == NULL || peer < 0 || peer >= rt->size)
        return 0;
    return rt->peer[peer] == PEER_FAILED;
}

int32_t qrt_peers_failed(const qrt *rt)
{
    return rt != NULL ? rt->peers_failed : 0;
}

qrt_async **qrt_async_slot(qrt *rt)
{
    return &rt->async;
}

int qrt_cores_spare(const qrt *rt)
{
    const qrt_waitpol *p = &rt->wait;
    return p->local > 0 && p->allowed / 2 >= p->local;
}

const char *qrt_transport_name(const qrt *rt)
{
    return rt != NULL ? rt->t->ops->name : "";
}

int qrt_finalize(qrt *rt)
{
    idle_state w = IDLE_INIT;
    int rc = 0;
    if (rt == NULL)
        return 0;
    /* The progress thread first: from here on one thread drives. */
    (void)qrt_async_stop(rt);
    rt->finalizing = 1;
    /* 1. Everything this rank still has to send leaves (or its peer
     *    fails): a bye must come after the last frame. (Each step ends
     *    with a pump, so nothing is left in the engine either.) */
    do
        rc = wait_step(rt, &w);
    while (rc == 0 && rt->outstanding > 0);
    /* 2. Bye, then serve the peers until each has said bye or failed:
     *    none of them still needs this rank after that. Our own byes
     *    must be out too, or a peer would take our exit for a failure. */
    if (rc == 0)
        rc = rt->t->ops->bye(rt->t);
    w = (idle_state)IDLE_INIT;
    while (rc == 0 && (rt->peers_open > 0 || rt->t->ops->busy(rt->t)))
        rc = wait_step(rt, &w);
    if (rt->dropped > 0)
        fprintf(stderr,
                "quay rank %d: finalize dropped %llu packets nobody received "
                "(unexpected-message budget full)\n",
                (int)rt->rank, (unsigned long long)rt->dropped);
    if (rc == 0)
        rc = rt->fatal;
    rt_free(rt);
    return rc;
}
