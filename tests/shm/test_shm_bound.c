/*
 * test_shm_bound — the shm transport's bounds against its peers, between
 * two forked ranks on a segment made here (as quayrun makes it):
 *
 *   - a peer that floods RDMA requests past its depth and does not take
 *     the replies: the target's queue of replies toward it never passes
 *     SHM_REPLY_MAX, the target stops reading its ctl ring (the flooder's
 *     requests wait there), and once the flooder reads, all drains and
 *     every request is answered, in order;
 *   - two honest ranks, each with four times SHM_RDMA_DEPTH atomics toward
 *     the other at once: the rest wait for the depth, neither ever stops
 *     reading the other, all complete in order;
 *   - a peer whose fragments add up past SHM_PKT_MAX: it is failed, and
 *     the packet being put together never passes the limit.
 *
 * The flooder is a real transport whose depth count is reset before each
 * request (shm.h internals), and which moves its requests into the ring
 * with shm_flush_peer, never polling, until told. Every wait has a
 * deadline and every child an alarm; nothing is timed.
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "qrt_shm.h"
#include "shm.h"
#include "shm_futex.h"

#define S_RING (64u << 10)
#define S_BIG_RING (1u << 20)
#define S_CTL (4u << 10) /* 64 replies: the queue behind it fills soon */
#define S_FLOOD (16u * SHM_RDMA_DEPTH)
#define S_MUTUAL (4u * SHM_RDMA_DEPTH)
#define S_WAIT_MS 60000u
#define S_KEY 1u

typedef struct s_rank {
    quay_transport *t;
    quay_transport_sink sink;
    int32_t rank;
    uint64_t word;    /* the registered word (S_KEY, offset 0) */
    uint64_t served;  /* atomics served */
    uint64_t done;    /* op_done calls */
    uint64_t errors;  /* op_done with an error */
    size_t most;      /* largest reply queue seen toward the peer */
    int bye, failed;
    uint64_t *old;    /* the atomics' old values, by token */
} s_rank;

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static shm_peer *peer_of(const s_rank *r)
{
    return &((shm_t *)r->t)->peers[1 - r->rank];
}

/* ---- the sink --------------------------------------------------------------------------- */

static int sk_packet(void *ctx, int32_t peer, const void *b, size_t n)
{
    (void)ctx, (void)peer, (void)b, (void)n;
    return 0;
}

static void sk_done(void *ctx, uint64_t token, int status)
{
    s_rank *r = ctx;
    (void)token;
    r->done++;
    r->errors += status != 0;
}

static int sk_resolve(void *ctx, int32_t peer, uint64_t key, uint64_t offset, uint64_t len,
                      uint32_t access, void **addr)
{
    (void)ctx, (void)peer, (void)key, (void)offset, (void)len, (void)access, (void)addr;
    return QUAY_ESTATE;
}

/* Before each request is served: the replies queued toward its sender. */
static int sk_atomic(void *ctx, int32_t peer, uint64_t key, uint64_t offset, uint32_t op,
                     uint64_t operand, uint64_t compare, uint64_t *old)
{
    s_rank *r = ctx;
    size_t q = ((shm_t *)r->t)->peers[peer].reply_bytes;
    (void)compare;
    if (q > r->most)
        r->most = q;
    r->served++;
    if (key != S_KEY || offset != 0 || op != QUAY_ATOMIC_FADD)
        return QUAY_EPROTO;
    *old = r->word;
    r->word += operand;
    return 0;
}

static void sk_bye(void *ctx, int32_t peer)
{
    (void)peer;
    ((s_rank *)ctx)->bye++;
}

static void sk_failed(void *ctx, int32_t peer)
{
    (void)peer;
    ((s_rank *)ctx)->failed++;
}

static int s_open(s_rank *r, int32_t rank, uint32_t n)
{
    memset(r, 0, sizeof *r);
    r->rank = rank;
    r->old = calloc(n, sizeof *r->old);
    r->sink = (quay_transport_sink){r, sk_packet, sk_done, sk_resolve, sk_atomic, sk_bye, sk_failed};
    int rc = qrt_shm_open(rank, 2, &r->sink, &r->t);
    if (rc != 0 || r->old == NULL) {
        fprintf(stderr, "  rank %d: qrt_shm_open: %d\n", (int)rank, rc);
        return -1;
    }
    return 0;
}

/* FADD 1 on the peer's word; its old value lands in old[id]. */
static int s_atomic(s_rank *r, uint32_t id)
{
    quay_action a;
    memset(&a, 0, sizeof a);
    a.kind = QUAY_ACT_RDMA_ATOMIC;
    a.peer = 1 - r->rank;
    a.token = id;
    a.rdma.key = S_KEY;
    a.rdma.local = &r->old[id];
    a.rdma.len = 8;
    a.atomic.op = QUAY_ATOMIC_FADD;
    a.atomic.operand = 1;
    return r->t->ops->rdma(r->t, &a);
}

/* After a poll: the replies queued toward the peer, and whether its
 * depth was kept and its ctl ring read all along. Returns 1. */
static int s_watch(s_rank *r, int *over)
{
    const shm_peer *p = peer_of(r);
    if (p->reply_bytes > r->most)
        r->most = p->reply_bytes;
    if (p->rdma_out - p->rdma_wait > SHM_RDMA_DEPTH || p->ctl_paused)
        (*over)++;
    return 1;
}

/* The old values, in the order the requests were made: 0, 1, 2, ... */
static int s_in_order(const s_rank *r, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (r->old[i] != i)
            return 0;
    return 1;
}

/* Bye, then poll until the peer's and nothing is queued; close. */
static int s_finish(s_rank *r)
{
    uint64_t dl = now_ms() + S_WAIT_MS;
    int rc = r->t->ops->bye(r->t);
    while (rc == 0 && (!(r->bye || r->failed) || r->t->ops->busy(r->t))) {
        if (now_ms() > dl || r->t->ops->poll(r->t, 5000000) < 0)
            rc = -1;
    }
    r->t->ops->close(r->t);
    free(r->old);
    return rc == 0 && r->failed == 0 ? 0 : -1;
}

#define S_CHECK(fail, cond) HARNESS_CHILD_CHECK(fail, cond)

/* Poll r until cond holds: ok = 1, or 0 after the deadline. */
#define S_POLL_UNTIL(r, cond, ok)                                               \
    do {                                                                        \
        uint64_t dl_ = now_ms() + S_WAIT_MS;                                    \
        (ok) = 1;                                                               \
        while (!(cond)) {                                                       \
            if (now_ms() > dl_ || (r)->t->ops->poll((r)->t, 5000000) < 0) {     \
                (ok) = 0;                                                       \
                break;                                                          \
            }                                                                   \
        }                                                                       \
    } while (0)

/* ---- two ranks in processes ------------------------------------------------------------- */

typedef int (*s_fn)(int32_t rank, int *pipes);

/* Fork rank 0 and rank 1 over a new segment (pkt rings of `ring` bytes);
 * both must exit 0. pipes: [0..1] rank 0 -> rank 1, [2..3] rank 1 ->
 * rank 0. */
static void s_run(s_fn fn0, s_fn fn1, uint64_t ring)
{
    qshm_seg seg;
    int fd = -1, pipes[4], st[2] = {-1, -1};
    pid_t pid[2];
    char buf[16];
    if (!ok(qshm_seg_create(2, ring, S_CTL, &seg, &fd) == 0) ||
        !ok(pipe(pipes) == 0 && pipe(pipes + 2) == 0))
        return;
    snprintf(buf, sizeof buf, "%d", fd);
    setenv("QUAY_SHM_FD", buf, 1);
    fflush(stdout);
    fflush(stderr);
    for (int r = 0; r < 2; r++) {
        pid[r] = fork();
        if (pid[r] == 0) {
            alarm(120);
            exit((r == 0 ? fn0 : fn1)(r, pipes) == 0 ? 0 : 1);
        }
    }
    for (int r = 0; r < 2; r++) {
        int s = 0;
        while (pid[r] > 0 && waitpid(pid[r], &s, 0) < 0 && errno == EINTR)
            ;
        st[r] = pid[r] > 0 && WIFEXITED(s) && WEXITSTATUS(s) == 0 ? 0 : (s != 0 ? s : -1);
        ok_msg(st[r] == 0, "rank %d passed its checks (status %d)", r, st[r]);
    }
    unsetenv("QUAY_SHM_FD");
    for (int k = 0; k < 4; k++)
        close(pipes[k]);
    close(fd);
    qshm_seg_detach(&seg);
}

/* ---- a flood of requests, replies unread ------------------------------------------------ */

typedef struct f_report {
    uint32_t sent;   /* requests made */
    int32_t blocked; /* its ring toward the target was full */
} f_report;

static int f_target(int32_t rank, int *pipes)
{
    s_rank r;
    f_report rep = {0, 0};
    int fail = 0, okk, over = 0;
    close(pipes[0]);
    close(pipes[3]);
    fcntl(pipes[2], F_SETFL, fcntl(pipes[2], F_GETFL) | O_NONBLOCK);
    if (s_open(&r, rank, 1) != 0)
        return 1;
    shm_peer *p = peer_of(&r);
    /* 1. Replies pile up until no other fits: the ctl ring is left unread. */
    S_POLL_UNTIL(&r,
                 s_watch(&r, &over) &&
                     (p->ctl_paused || r.most > SHM_REPLY_MAX || r.served == S_FLOOD),
                 okk);
    S_CHECK(fail, okk && p->ctl_paused && r.most <= SHM_REPLY_MAX);
    if (p->ctl_paused) {
        S_CHECK(fail, write(pipes[1], "P", 1) == 1);
        S_POLL_UNTIL(&r,
                     s_watch(&r, &over) &&
                         read(pipes[2], &rep, sizeof rep) == (ssize_t)sizeof rep,
                     okk);
        S_CHECK(fail, okk && rep.blocked && rep.sent == S_FLOOD);
        /* 2. It stays so: nothing more is served, requests wait unread. */
        uint64_t at = r.served;
        for (int i = 0; i < 20; i++)
            (void)r.t->ops->poll(r.t, 5000000);
        S_CHECK(fail, p->ctl_paused && r.served == at && qshm_ring_ready(&p->in_ctl));
        note("stopped after %llu of %u requests; %zu bytes of replies queued (bound %zu)",
             (unsigned long long)at, (unsigned)S_FLOOD, r.most, (size_t)SHM_REPLY_MAX);
    }
    /* 3. The flooder reads: all drains, the rest is served. */
    S_CHECK(fail, write(pipes[1], "G", 1) == 1);
    S_POLL_UNTIL(&r, s_watch(&r, &over) && r.served == S_FLOOD && p->q_ctl.head == NULL, okk);
    S_CHECK(fail, okk && r.most <= SHM_REPLY_MAX && r.word == S_FLOOD);
    S_CHECK(fail, !p->ctl_paused && p->reply_bytes == 0 && p->state == SHM_LIVE);
    S_CHECK(fail, s_finish(&r) == 0);
    return fail;
}

static int f_flooder(int32_t rank, int *pipes)
{
    s_rank r;
    f_report rep = {0, 0};
    int fail = 0, okk, paused = 0, told = 0;
    char c = 0;
    close(pipes[1]);
    close(pipes[2]);
    if (s_open(&r, rank, S_FLOOD) != 0)
        return 1;
    shm_t *t = (shm_t *)r.t;
    shm_peer *p = peer_of(&r);
    /* 1. Every request at once, its depth ignored; into the ring as room
     *    comes, replies never taken, until 'G'. */
    for (uint32_t i = 0; i < S_FLOOD; i++) {
        p->rdma_out = p->rdma_wait = 0;
        S_CHECK(fail, s_atomic(&r, i) == 0);
    }
    rep.sent = S_FLOOD;
    for (;;) {
        struct pollfd w = {pipes[0], POLLIN, 0};
        (void)shm_flush_peer(t, 0);
        if (paused && !told) {
            /* Flushed after the target stopped: the ring is full now. */
            rep.blocked = p->q_ctl.head != NULL;
            S_CHECK(fail, write(pipes[3], &rep, sizeof rep) == (ssize_t)sizeof rep);
            told = 1;
        }
        if (poll(&w, 1, 5) == 1) {
            if (read(pipes[0], &c, 1) != 1 || c == 'G')
                break;
            paused = 1;
        }
    }
    S_CHECK(fail, c == 'G');
    /* 2. Reading now: every reply comes, in order. */
    p->rdma_out = S_FLOOD;
    S_POLL_UNTIL(&r, r.done == S_FLOOD, okk);
    S_CHECK(fail, okk && r.errors == 0 && s_in_order(&r, S_FLOOD));
    S_CHECK(fail, s_finish(&r) == 0);
    return fail;
}

static void test_flood(void)
{
    s_run(f_target, f_flooder, S_RING);
}

/* ---- two honest ranks past their depth -------------------------------------------------- */

static int m_rank(int32_t rank, int *pipes)
{
    s_rank r;
    int fail = 0, okk, over = 0;
    (void)pipes;
    if (s_open(&r, rank, S_MUTUAL) != 0)
        return 1;
    shm_peer *p = peer_of(&r);
    for (uint32_t i = 0; i < S_MUTUAL; i++)
        S_CHECK(fail, s_atomic(&r, i) == 0);
    S_CHECK(fail, p->rdma_out - p->rdma_wait == SHM_RDMA_DEPTH && p->wait_head != NULL);
    /* Its peer never stops reading it: its replies never fill the bound. */
    S_POLL_UNTIL(&r, s_watch(&r, &over) && r.done == S_MUTUAL && r.served == S_MUTUAL, okk);
    S_CHECK(fail, okk && over == 0 && r.errors == 0 && s_in_order(&r, S_MUTUAL));
    S_CHECK(fail, p->rdma_out == 0 && p->wait_head == NULL && r.most < SHM_REPLY_MAX);
    S_CHECK(fail, s_finish(&r) == 0);
    return fail;
}

static void test_mutual(void)
{
    s_run(m_rank, m_rank, S_RING);
}

/* ---- a packet in fragments past SHM_PKT_MAX ---------------------------------------------- */

static int b_target(int32_t rank, int *pipes)
{
    s_rank r;
    int fail = 0, okk;
    close(pipes[0]);
    close(pipes[3]);
    if (s_open(&r, rank, 1) != 0)
        return 1;
    shm_peer *p = peer_of(&r);
    /* It is failed once its fragments would pass the limit; the packet
     * being put together never does. */
    S_POLL_UNTIL(&r, r.failed || p->asm_len > SHM_PKT_MAX, okk);
    S_CHECK(fail, okk && r.failed == 1 && p->state == SHM_FAILED);
    S_CHECK(fail, p->asm_len <= SHM_PKT_MAX && p->asm_cap <= SHM_PKT_MAX);
    S_CHECK(fail, write(pipes[1], "F", 1) == 1);
    S_CHECK(fail, s_finish(&r) != 0); /* its peer failed */
    return fail;
}

static int b_sender(int32_t rank, int *pipes)
{
    s_rank r;
    int fail = 0;
    uint64_t sent = 0;
    static const uint8_t byte[1] = {0};
    close(pipes[1]);
    close(pipes[2]);
    if (s_open(&r, rank, 1) != 0)
        return 1;
    shm_t *t = (shm_t *)r.t;
    shm_peer *p = peer_of(&r);
    /* Send refuses such a packet (nothing of it is read). */
    quay_iov big = {byte, (size_t)SHM_PKT_MAX + 1};
    S_CHECK(fail, r.t->ops->send(r.t, 0, &big, 1, 0) == QUAY_EINVAL);
    /* By hand: fragments that never end, somewhat past the limit. */
    while (sent <= (uint64_t)SHM_PKT_MAX + t->max_chunk) {
        struct pollfd w = {pipes[0], POLLIN, 0};
        uint8_t *dst = qshm_ring_reserve(&p->out_pkt, t->max_chunk);
        if (dst != NULL) {
            memset(dst, 0x5a, t->max_chunk);
            qshm_ring_commit(&p->out_pkt, SHM_PKT, SHM_F_MORE, t->max_chunk);
            qshm_doorbell_notify(p->slot);
            sent += t->max_chunk;
        } else if (poll(&w, 1, 5) == 1) {
            break; /* the target has seen enough */
        }
    }
    char c = 0;
    S_CHECK(fail, read(pipes[0], &c, 1) == 1 && c == 'F');
    r.t->ops->close(r.t);
    free(r.old);
    return fail;
}

static void test_big(void)
{
    s_run(b_target, b_sender, S_BIG_RING);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    subtest("RDMA requests from a peer that does not take its replies", test_flood);
    subtest("two ranks with atomics far past the depth toward each other", test_mutual);
    subtest("a packet in fragments past the limit fails its sender", test_big);
    return done_testing();
}
