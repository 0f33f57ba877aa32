/*
 * test_tcp — the TCP transport (adapters/sockets) between forked
 * processes on loopback: traffic of every size with RDMA, partial writes
 * through tiny socket buffers, peers that send garbage or vanish without
 * a bye, a packet the engine refuses with RDMA served behind it, the
 * start-up handshake against strays and wrong addresses, its deadline,
 * and quayrun's directory and the address helpers in-process.
 *
 * Ranks are children (tcptest.h); some are raw sockets that speak the
 * wire format by hand. Every wait has a deadline and every child an
 * alarm; nothing is timed.
 */
#include "harness.h"
#include "tcptest.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "qrt_tcp.h"
#include "tcp.h"

#define ALL_CAPS (QUAY_CAP_ORDERED | QUAY_CAP_RDMA_GET | QUAY_CAP_RDMA_PUT | QUAY_CAP_RDMA_ATOMIC)

static int open_or_say(tt_rank *r, tt_dir *d, int32_t rank)
{
    int rc = tt_open(r, d, rank);
    if (rc != 0)
        fprintf(stderr, "  rank %d: qrt_tcp_open: %d\n", (int)rank, rc);
    return rc;
}

static const tcp_peer *peer_of(const tt_rank *r, int32_t p)
{
    return &((const tcp_t *)r->t)->peers[p];
}

static uint64_t mem_word(int32_t rank, size_t off)
{
    uint8_t b[8];
    uint64_t w;
    for (int i = 0; i < 8; i++)
        b[i] = tt_mem_byte(rank, off + (size_t)i);
    memcpy(&w, b, 8);
    return w;
}

/* What the transport holds, for a failed wait. */
static void dump(const tt_rank *r)
{
    const tcp_t *t = (const tcp_t *)r->t;
    fprintf(stderr, "  rank %d: outstanding %llu, queued peers %u\n", (int)r->rank,
            (unsigned long long)r->outstanding, t->nqueued);
    for (int32_t p = 0; p < r->size; p++) {
        const tcp_peer *q = &t->peers[p];
        int nq = 0;
        for (const tcp_item *it = q->qhead; it != NULL; it = it->next)
            nq++;
        if (p == r->rank)
            continue;
        fprintf(stderr,
                "    peer %d: fd %d state %d ep %#x queue %d rx_mode %d left %llu carry %zu "
                "held %u paused %d got %llu\n",
                (int)p, q->fd, q->state, q->ep_events, nq, q->rx_mode,
                (unsigned long long)q->rx_left, q->carry_len, q->hold_n, q->rx_paused,
                (unsigned long long)r->next_seq[p]);
    }
}

/* Run one job of d->n ranks and check each exited 0. */
static void run_job(tt_dir *d, const tt_fn *fn, void *arg, int timeout_s)
{
    int st[TT_MAX];
    tt_run(d, fn, arg, timeout_s, st);
    for (int r = 0; r < d->n; r++)
        ok_msg(st[r] == 0, "rank %d passed its checks (status %d)", r, st[r]);
    tt_dir_close(d);
}

/* ---- traffic of every size, RDMA, bad keys ----------------------------------------------- */

static const size_t a_sizes[] = {16, 100, 5000, TCP_PKT_INLINE + 1, 70000, 300000, 3u << 20};
#define A_NSIZES (sizeof a_sizes / sizeof a_sizes[0])
#define A_ROUNDS 3
#define A_AFTER 5
#define A_GET_OFF 1000u
#define A_GET_LEN 200000u
#define A_PUT_OFF 400000u
#define A_PUT_LEN 300000u
#define A_WORD 800000u

static int all_in(const tt_rank *r, uint64_t want)
{
    for (int32_t p = 0; p < r->size; p++)
        if (p != r->rank && r->next_seq[p] != want)
            return 0;
    return r->outstanding == 0;
}

static int a_rank(tt_dir *d, int32_t rank, void *arg)
{
    tt_rank r;
    int fail = 0, ok;
    (void)arg;
    if (open_or_say(&r, d, rank) != 0)
        return 1;
    TT_CHECK(fail, r.t->caps == ALL_CAPS);
    int32_t n = r.size, next = (rank + 1) % n, prev = (rank + n - 1) % n;
    for (int k = 0; k < A_ROUNDS; k++)
        for (size_t i = 0; i < A_NSIZES; i++)
            for (int32_t p = 0; p < n; p++)
                if (p != rank)
                    TT_CHECK(fail, tt_send(&r, p, a_sizes[i]) >= 0);
    uint8_t *get = malloc(A_GET_LEN), *put = malloc(A_PUT_LEN), small[128];
    uint64_t old1 = 0, old2 = 0, old3 = 0;
    for (size_t i = 0; i < A_PUT_LEN; i++)
        put[i] = (uint8_t)(rank + 7 * i);
    TT_CHECK(fail, tt_rdma(&r, QUAY_ACT_RDMA_GET, next, 1, TT_KEY_RW, A_GET_OFF, get, A_GET_LEN,
                           0, 0, 0) == 0);
    TT_CHECK(fail, tt_rdma(&r, QUAY_ACT_RDMA_GET, next, 2, TT_KEY_RW, 0, NULL, 0, 0, 0, 0) == 0);
    TT_CHECK(fail, tt_rdma(&r, QUAY_ACT_RDMA_PUT, next, 3, TT_KEY_RW, A_PUT_OFF, put, A_PUT_LEN,
                           0, 0, 0) == 0);
    TT_CHECK(fail, tt_rdma(&r, QUAY_ACT_RDMA_ATOMIC, next, 4, TT_KEY_RW, A_WORD, &old1, 8,
                           QUAY_ATOMIC_FADD, 5, 0) == 0);
    /* Refused by the target: the status comes back; a refused PUT's body
     * is read past, so the frames behind it stay in step. */
    TT_CHECK(fail, tt_rdma(&r, QUAY_ACT_RDMA_GET, next, 10, 77, 0, small, 100, 0, 0, 0) == 0);
    TT_CHECK(fail, tt_rdma(&r, QUAY_ACT_RDMA_GET, next, 11, TT_KEY_RW, TT_MEM - 10, small, 100,
                           0, 0, 0) == 0);
    TT_CHECK(fail, tt_rdma(&r, QUAY_ACT_RDMA_PUT, next, 12, TT_KEY_RO, 0, put, 100000, 0, 0,
                           0) == 0);
    TT_CHECK(fail, tt_rdma(&r, QUAY_ACT_RDMA_PUT, next, 13, 55, 0, put, 10, 0, 0, 0) == 0);
    TT_CHECK(fail, tt_rdma(&r, QUAY_ACT_RDMA_ATOMIC, next, 14, 9, 0, &old2, 8, QUAY_ATOMIC_FADD,
                           1, 0) == 0);
    TT_POLL_UNTIL(&r, r.outstanding == 0, 30000, ok);
    TT_CHECK(fail, ok);
    for (uint64_t id = 1; id <= 4; id++)
        TT_CHECK(fail, tt_rdma_status(&r, id) == 0);
    TT_CHECK(fail, tt_rdma_status(&r, 10) == QUAY_ESTATE);
    TT_CHECK(fail, tt_rdma_status(&r, 11) == QUAY_EPROTO);
    TT_CHECK(fail, tt_rdma_status(&r, 12) == QUAY_EPROTO);
    TT_CHECK(fail, tt_rdma_status(&r, 13) == QUAY_ESTATE);
    TT_CHECK(fail, tt_rdma_status(&r, 14) == QUAY_ESTATE);
    int same = 1;
    for (size_t i = 0; i < A_GET_LEN; i++)
        same &= get[i] == tt_mem_byte(next, A_GET_OFF + i);
    TT_CHECK(fail, same);
    TT_CHECK(fail, old1 == mem_word(next, A_WORD));
    TT_CHECK(fail, tt_rdma(&r, QUAY_ACT_RDMA_ATOMIC, next, 5, TT_KEY_RW, A_WORD, &old3, 8,
                           QUAY_ATOMIC_SWAP, 99, 0) == 0);
    TT_POLL_UNTIL(&r, r.outstanding == 0, 30000, ok);
    TT_CHECK(fail, ok && tt_rdma_status(&r, 5) == 0 && old3 == old1 + 5);
    for (int k = 0; k < A_AFTER; k++)
        for (int32_t p = 0; p < n; p++)
            if (p != rank)
                TT_CHECK(fail, tt_send(&r, p, 50) >= 0);
    TT_POLL_UNTIL(&r, all_in(&r, A_ROUNDS * A_NSIZES + A_AFTER), 60000, ok);
    TT_CHECK(fail, ok);
    /* prev's PUT and atomics came before its last packets. */
    same = 1;
    for (size_t i = 0; i < A_PUT_LEN; i++)
        same &= r.mem[A_PUT_OFF + i] == (uint8_t)(prev + 7 * i);
    TT_CHECK(fail, same);
    uint64_t w;
    memcpy(&w, r.mem + A_WORD, 8);
    TT_CHECK(fail, w == 99);
    for (int32_t p = 0; p < n; p++)
        TT_CHECK(fail, !r.failed[p]);
    TT_CHECK(fail, r.bad == 0 && r.refused == 0);
    TT_CHECK(fail, tt_finish(&r) == 0);
    free(get);
    free(put);
    return fail;
}

static void test_traffic(void)
{
    tt_dir d;
    tt_fn fn[3] = {a_rank, a_rank, a_rank};
    if (!ok(tt_dir_make(&d, 3) == 0))
        return;
    run_job(&d, fn, NULL, 90);
}

/* ---- partial writes ------------------------------------------------------------------------ */

#define B_PKTS 40
#define B_LEN (1u << 20)

static int b_rank(tt_dir *d, int32_t rank, void *arg)
{
    tt_rank r;
    int fail = 0, ok;
    (void)arg;
    setenv("QUAY_TCP_BUF_KB", "4", 1);
    if (open_or_say(&r, d, rank) != 0)
        return 1;
    int32_t peer = 1 - rank;
    uint8_t *get = malloc(B_LEN), *src = malloc(B_LEN);
    for (size_t i = 0; i < B_LEN; i++)
        src[i] = (uint8_t)(i * 5 + 1);
    TT_CHECK(fail, tt_rdma(&r, QUAY_ACT_RDMA_GET, peer, 1, TT_KEY_RW, 0, get, B_LEN, 0, 0, 0) == 0);
    if (rank == 0)
        TT_CHECK(fail, tt_rdma(&r, QUAY_ACT_RDMA_PUT, peer, 2, TT_KEY_RW, B_LEN, src, B_LEN, 0, 0,
                               0) == 0);
    for (int i = 0; i < B_PKTS; i++) {
        TT_CHECK(fail, tt_send(&r, peer, 60000) >= 0);
        TT_CHECK(fail, tt_send(&r, peer, 100) >= 0);
    }
    /* 8 KiB of socket buffer cannot take 60 KB: sends were queued. */
    TT_CHECK(fail, r.queued > 0);
    TT_CHECK(fail, r.t->ops->busy(r.t) == 1);
    TT_POLL_UNTIL(&r, r.outstanding == 0 && r.next_seq[peer] == 2 * B_PKTS, 60000, ok);
    TT_CHECK(fail, ok);
    if (!ok)
        dump(&r);
    for (int i = 0; i < r.ndone; i++)
        TT_CHECK(fail, r.done[i].status == 0);
    int same = 1;
    for (size_t i = 0; i < B_LEN; i++)
        same &= get[i] == tt_mem_byte(peer, i);
    TT_CHECK(fail, same);
    if (rank == 1) {
        same = 1;
        for (size_t i = 0; i < B_LEN; i++)
            same &= r.mem[B_LEN + i] == src[i];
        TT_CHECK(fail, same);
    }
    TT_CHECK(fail, r.bad == 0);
    TT_CHECK(fail, tt_finish(&r) == 0);
    free(get);
    free(src);
    return fail;
}

static void test_partial(void)
{
    tt_dir d;
    tt_fn fn[2] = {b_rank, b_rank};
    /* Set before the listeners exist, as quayrun's environment is. */
    setenv("QUAY_TCP_BUF_KB", "4", 1);
    int made = tt_dir_make(&d, 2);
    unsetenv("QUAY_TCP_BUF_KB");
    if (!ok(made == 0))
        return;
    run_job(&d, fn, NULL, 120);
}

/* ---- garbage ----------------------------------------------------------------------------------- */

enum { G_TYPE = 0, G_FLAGS, G_BIG, G_COOKIE, G_REPLYLEN, G_AFTERBYE, G_BODY, G_COUNT };
static const char *const g_names[G_COUNT] = {
    "unknown frame type",         "flags set",          "packet over the limit",
    "reply with unknown cookie",  "reply length differs", "packet after its bye",
    "body on a request",
};

/* Rank 2: well-behaved toward rank 1 (a packet, bye, close), a packet
 * then garbage toward rank 0. */
static int g_raw(tt_dir *d, int32_t rank, void *arg)
{
    int kind = *(const int *)arg;
    uint8_t h[256], bye[TCP_PREFIX];
    size_t hl = TCP_PREFIX, flen;
    tt_dir_close(d);
    int f0 = tt_raw_connect(d, rank, 0, 3), f1 = tt_raw_connect(d, rank, 1, 3);
    uint8_t *pkt = tt_raw_pkt(rank, 0, 100, &flen);
    if (f0 < 0 || f1 < 0 || pkt == NULL)
        return 1;
    tcp_prefix(bye, TCP_BYE, 0);
    if (tt_raw_write(f1, pkt, flen) != 0 || tt_raw_write(f1, bye, sizeof bye) != 0)
        return 1;
    close(f1);
    if (tt_raw_write(f0, pkt, flen) != 0)
        return 1;
    memset(h, 0, sizeof h);
    switch (kind) {
    case G_TYPE:
        tcp_prefix(h, 99, 0);
        break;
    case G_FLAGS:
        tcp_prefix(h, TCP_PKT, 16);
        h[1] = 1;
        hl += 16;
        break;
    case G_BIG:
        tcp_prefix(h, TCP_PKT, (uint64_t)TCP_PKT_MAX + 1);
        break;
    case G_COOKIE:
        tcp_prefix(h, TCP_PUT_DONE, 0);
        tcp_put64(h + TCP_PREFIX, 0xdead);
        hl += 16;
        break;
    case G_REPLYLEN: {
        /* Wait for rank 0's 100-byte GET, answer with 50 bytes. */
        int type;
        while ((type = tt_raw_frame(f0, h)) != TCP_GET_REQ)
            if (type < 0)
                return 1;
        uint64_t cookie = tcp_get64(h + TCP_PREFIX);
        memset(h, 0, sizeof h);
        tcp_prefix(h, TCP_GET_REPLY, 50);
        tcp_put64(h + TCP_PREFIX, cookie);
        hl += 16 + 50;
        break;
    }
    case G_AFTERBYE:
        memcpy(h, bye, sizeof bye);
        memcpy(h + TCP_PREFIX, pkt, flen < 100 ? flen : 100);
        tcp_prefix(h + TCP_PREFIX, TCP_PKT, 88);
        hl = TCP_PREFIX + 100;
        break;
    default:
        tcp_prefix(h, TCP_GET_REQ, 8);
        hl += 32 + 8;
        break;
    }
    free(pkt);
    if (tt_raw_write(f0, h, hl) != 0)
        return 1;
    /* Rank 0 closes on us: read until then (a close of ours would be an
     * EOF, not garbage). */
    uint8_t junk[4096];
    while (recv(f0, junk, sizeof junk, 0) > 0)
        ;
    close(f0);
    return 0;
}

static int g_rank0(tt_dir *d, int32_t rank, void *arg)
{
    int kind = *(const int *)arg;
    tt_rank r;
    int fail = 0, ok;
    uint8_t buf[100];
    tt_stderr_capture();
    if (open_or_say(&r, d, rank) != 0)
        return 1;
    if (kind == G_REPLYLEN)
        TT_CHECK(fail, tt_rdma(&r, QUAY_ACT_RDMA_GET, 2, 1, TT_KEY_RW, 0, buf, 100, 0, 0, 0) == 0);
    TT_POLL_UNTIL(&r, peer_of(&r, 2)->state == TCP_FAILED, 20000, ok);
    TT_CHECK(fail, ok);
    TT_CHECK(fail, r.next_seq[2] == 1); /* what came before the garbage */
    if (kind == G_AFTERBYE) {
        TT_CHECK(fail, r.bye[2] == 1 && r.failed[2] == 0);
    } else {
        TT_CHECK(fail, r.failed[2] == 1 && r.bye[2] == 0);
    }
    if (kind == G_REPLYLEN) {
        TT_CHECK(fail, tt_rdma_status(&r, 1) == QUAY_EPEER);
        TT_CHECK(fail, r.ndone == 1 && r.done[0].ev < r.fail_ev[2]);
    }
    TT_CHECK(fail, tt_send(&r, 2, 50) == QUAY_EPEER);
    TT_CHECK(fail, tt_rdma(&r, QUAY_ACT_RDMA_GET, 2, 9, TT_KEY_RW, 0, buf, 100, 0, 0, 0) ==
                       QUAY_EPEER);
    /* Rank 1 is untouched. */
    for (int i = 0; i < 5; i++)
        TT_CHECK(fail, tt_send(&r, 1, 1000) >= 0);
    TT_POLL_UNTIL(&r, r.next_seq[1] == 5 && r.outstanding == 0, 20000, ok);
    TT_CHECK(fail, ok && r.failed[1] == 0 && r.bad == 0);
    TT_CHECK(fail, tt_finish(&r) == 0);
    char *err = tt_stderr_end();
    TT_CHECK(fail, strstr(err, "quay rank 0: tcp: peer 2 sent garbage (") != NULL);
    free(err);
    return fail;
}

static int g_rank1(tt_dir *d, int32_t rank, void *arg)
{
    tt_rank r;
    int fail = 0, ok;
    (void)arg;
    if (open_or_say(&r, d, rank) != 0)
        return 1;
    /* A packet, a bye, then EOF: a normal end. */
    TT_POLL_UNTIL(&r, r.bye[2] && peer_of(&r, 2)->state == TCP_DONE, 20000, ok);
    TT_CHECK(fail, ok && r.next_seq[2] == 1 && r.bye_seq[2] == 1 && r.failed[2] == 0);
    for (int i = 0; i < 5; i++)
        TT_CHECK(fail, tt_send(&r, 0, 1000) >= 0);
    TT_POLL_UNTIL(&r, r.next_seq[0] == 5 && r.outstanding == 0, 20000, ok);
    TT_CHECK(fail, ok && r.bad == 0);
    TT_CHECK(fail, tt_finish(&r) == 0);
    return fail;
}

static void test_garbage(void)
{
    tt_fn fn[3] = {g_rank0, g_rank1, g_raw};
    for (int kind = 0; kind < G_COUNT; kind++) {
        tt_dir d;
        note("garbage: %s", g_names[kind]);
        if (!ok(tt_dir_make(&d, 3) == 0))
            return;
        run_job(&d, fn, &kind, 60);
    }
}

/* ---- a peer gone without a bye ------------------------------------------------------------- */

typedef struct nb_arg {
    int rst;     /* close with unread data (RST) rather than shutdown (FIN) */
    int pipe[2]; /* rank 0 -> raw rank 1: "your sends are queued now" */
} nb_arg;

static int nb_rank0(tt_dir *d, int32_t rank, void *arg)
{
    nb_arg *a = arg;
    tt_rank r;
    int fail = 0, ok;
    uint8_t buf[1000];
    close(a->pipe[0]);
    setenv("QUAY_TCP_BUF_KB", "4", 1);
    tt_stderr_capture();
    if (open_or_say(&r, d, rank) != 0)
        return 1;
    TT_POLL_UNTIL(&r, r.next_seq[1] == 1, 20000, ok);
    TT_CHECK(fail, ok);
    TT_CHECK(fail, tt_rdma(&r, QUAY_ACT_RDMA_GET, 1, 1, TT_KEY_RW, 0, buf, sizeof buf, 0, 0, 0) ==
                       0);
    for (int i = 0; i < 30; i++)
        TT_CHECK(fail, tt_send(&r, 1, 60000) >= 0);
    TT_CHECK(fail, r.queued > 0);
    TT_CHECK(fail, write(a->pipe[1], "x", 1) == 1);
    TT_POLL_UNTIL(&r, r.failed[1], 20000, ok);
    TT_CHECK(fail, ok && r.failed[1] == 1 && r.bye[1] == 0);
    /* Every action toward it was answered, before peer_failed. */
    TT_CHECK(fail, r.outstanding == 0);
    TT_CHECK(fail, tt_rdma_status(&r, 1) == QUAY_EPEER);
    int epeer = 0;
    for (int i = 0; i < r.ndone; i++) {
        TT_CHECK(fail, r.done[i].ev < r.fail_ev[1]);
        epeer += r.done[i].status == QUAY_EPEER;
    }
    TT_CHECK(fail, epeer >= 2); /* the GET and queued sends */
    TT_CHECK(fail, tt_send(&r, 1, 100) == QUAY_EPEER);
    TT_CHECK(fail, tt_finish(&r) == 0);
    char *err = tt_stderr_end();
    /* A reset reads as EOF on Linux (the error waits for the next call)
     * unless a write meets it first. */
    TT_CHECK(fail, strstr(err, "quay rank 0: tcp: peer 1 closed the connection without a bye") ||
                       (a->rst && strstr(err, "quay rank 0: tcp: peer 1 broke the connection")));
    free(err);
    return fail;
}

static int nb_raw(tt_dir *d, int32_t rank, void *arg)
{
    nb_arg *a = arg;
    size_t flen;
    char c;
    close(a->pipe[1]);
    tt_dir_close(d);
    int fd = tt_raw_connect(d, rank, 0, 2);
    uint8_t *pkt = tt_raw_pkt(rank, 0, 100, &flen);
    if (fd < 0 || pkt == NULL || tt_raw_write(fd, pkt, flen) != 0)
        return 1;
    free(pkt);
    if (read(a->pipe[0], &c, 1) != 1)
        return 1;
    if (a->rst) {
        close(fd); /* unread data: the kernel answers with a reset */
        return 0;
    }
    shutdown(fd, SHUT_WR);
    uint8_t junk[4096];
    while (recv(fd, junk, sizeof junk, 0) > 0)
        ;
    close(fd);
    return 0;
}

static void test_no_bye(void)
{
    tt_fn fn[2] = {nb_rank0, nb_raw};
    for (int rst = 0; rst < 2; rst++) {
        nb_arg a = {rst, {-1, -1}};
        tt_dir d;
        note(rst ? "connection reset" : "EOF without a bye");
        setenv("QUAY_TCP_BUF_KB", "4", 1);
        int made = tt_dir_make(&d, 2);
        unsetenv("QUAY_TCP_BUF_KB");
        if (!ok(made == 0) || !ok(pipe(a.pipe) == 0))
            return;
        run_job(&d, fn, &a, 60);
        close(a.pipe[0]);
        close(a.pipe[1]);
    }
}

/* ---- a held packet does not stop RDMA ------------------------------------------------------ */

#define E_MORE (TCP_HOLD_FRAMES + 1000u)
#define E_GET_LEN 100000u
#define E_PUT_OFF 120000u /* past the GET's bytes */
#define E_PUT_LEN 50000u
#define E_WORD 200000u

static int e_rank0(tt_dir *d, int32_t rank, void *arg)
{
    tt_rank r;
    int fail = 0, ok;
    (void)arg;
    if (open_or_say(&r, d, rank) != 0)
        return 1;
    r.refuse = 1;
    /* Rank 1's GET, PUT and atomic are served while its first packet is
     * held. */
    TT_POLL_UNTIL(&r, r.nresolve >= 2 && r.natomic >= 1, 20000, ok);
    TT_CHECK(fail, ok && r.refused >= 1 && r.next_seq[1] == 0);
    /* Then its packets pile up until the FIFO is full. */
    TT_POLL_UNTIL(&r, peer_of(&r, 1)->rx_paused, 30000, ok);
    TT_CHECK(fail, ok && r.next_seq[1] == 0 && r.bye[1] == 0);
    r.refuse = 0;
    TT_POLL_UNTIL(&r, r.bye[1], 30000, ok);
    TT_CHECK(fail, ok);
    TT_CHECK(fail, r.next_seq[1] == 3 + E_MORE && r.bye_seq[1] == 3 + E_MORE && r.bad == 0);
    int same = 1;
    for (size_t i = 0; i < E_PUT_LEN; i++)
        same &= r.mem[E_PUT_OFF + i] == (uint8_t)(i ^ 0x5a);
    TT_CHECK(fail, same);
    uint64_t w;
    memcpy(&w, r.mem + E_WORD, 8);
    TT_CHECK(fail, w == mem_word(rank, E_WORD) + 3);
    TT_CHECK(fail, tt_finish(&r) == 0);
    return fail;
}

static int e_rank1(tt_dir *d, int32_t rank, void *arg)
{
    tt_rank r;
    int fail = 0, ok;
    uint64_t old = 0;
    (void)arg;
    if (open_or_say(&r, d, rank) != 0)
        return 1;
    uint8_t *get = malloc(E_GET_LEN), *src = malloc(E_PUT_LEN);
    for (size_t i = 0; i < E_PUT_LEN; i++)
        src[i] = (uint8_t)(i ^ 0x5a);
    TT_CHECK(fail, tt_send(&r, 0, 100) >= 0);
    TT_CHECK(fail, tt_rdma(&r, QUAY_ACT_RDMA_GET, 0, 1, TT_KEY_RW, 0, get, E_GET_LEN, 0, 0, 0) ==
                       0);
    TT_CHECK(fail, tt_rdma(&r, QUAY_ACT_RDMA_PUT, 0, 2, TT_KEY_RW, E_PUT_OFF, src, E_PUT_LEN, 0,
                           0, 0) == 0);
    TT_CHECK(fail, tt_rdma(&r, QUAY_ACT_RDMA_ATOMIC, 0, 3, TT_KEY_RW, E_WORD, &old, 8,
                           QUAY_ATOMIC_FADD, 3, 0) == 0);
    TT_POLL_UNTIL(&r, r.outstanding == 0, 20000, ok);
    TT_CHECK(fail, ok);
    for (uint64_t id = 1; id <= 3; id++)
        TT_CHECK(fail, tt_rdma_status(&r, id) == 0);
    int same = 1;
    for (size_t i = 0; i < E_GET_LEN; i++)
        same &= get[i] == tt_mem_byte(0, i);
    TT_CHECK(fail, same && old == mem_word(0, E_WORD));
    TT_CHECK(fail, tt_send(&r, 0, 100) >= 0 && tt_send(&r, 0, 100) >= 0);
    for (uint32_t i = 0; i < E_MORE; i++)
        TT_CHECK(fail, tt_send(&r, 0, 32) >= 0);
    TT_CHECK(fail, tt_finish(&r) == 0);
    free(get);
    free(src);
    return fail;
}

static void test_hold(void)
{
    tt_dir d;
    tt_fn fn[2] = {e_rank0, e_rank1};
    if (!ok(tt_dir_make(&d, 2) == 0))
        return;
    run_job(&d, fn, NULL, 90);
}

/* ---- start-up ----------------------------------------------------------------------------------- */

/* A port nobody listens on (probably: it was free a moment ago). */
static uint16_t closed_port(void)
{
    struct sockaddr_in sa = {.sin_family = AF_INET};
    socklen_t sl = sizeof sa;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &sl) != 0) {
        if (fd >= 0)
            close(fd);
        return 1;
    }
    close(fd);
    return ntohs(sa.sin_port);
}

/* A stranger on a port in rank 0's list: it answers every hello with a
 * hello of another job. */
static void stray_server(int lfd)
{
    uint8_t h[TCP_HELLO_LEN];
    alarm(60);
    for (;;) {
        struct pollfd p = {lfd, POLLIN, 0};
        if (poll(&p, 1, -1) < 0)
            continue;
        int fd = accept(lfd, NULL, NULL);
        if (fd < 0)
            continue;
        int fl = fcntl(fd, F_GETFL);
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
        if (tt_raw_read(fd, h, sizeof h) == 0) {
            tcp_put64(h + 8, TT_JOB ^ 1);
            uint32_t from = tcp_get32(h + 16);
            tcp_put32(h + 16, tcp_get32(h + 20));
            tcp_put32(h + 20, from);
            (void)tt_raw_write(fd, h, sizeof h);
        }
        close(fd);
    }
}

static int s_rank(tt_dir *d, int32_t rank, void *arg)
{
    tt_rank r;
    int fail = 0, ok;
    (void)arg;
    if (open_or_say(&r, d, rank) != 0)
        return 1;
    for (int i = 0; i < 3; i++)
        TT_CHECK(fail, tt_send(&r, 1 - rank, 500) >= 0);
    TT_POLL_UNTIL(&r, r.next_seq[1 - rank] == 3 && r.outstanding == 0, 20000, ok);
    TT_CHECK(fail, ok && r.bad == 0);
    TT_CHECK(fail, tt_finish(&r) == 0);
    return fail;
}

static int connect_to(const char *addrs)
{
    struct sockaddr_in sa[TCP_ADDRS_MAX];
    if (tcp_parse_addrs(addrs, strlen(addrs), sa, TCP_ADDRS_MAX) < 1)
        return -1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa[0], sizeof sa[0]) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

static void test_strays(void)
{
    tt_dir d;
    char stray_addrs[QRT_TCP_ADDR_MAX], real[QRT_TCP_ADDR_MAX];
    tt_fn fn[2] = {s_rank, s_rank};
    int strays[3];
    uint8_t h[TCP_HELLO_LEN];
    if (!ok(tt_dir_make(&d, 2) == 0))
        return;
    int sfd = qrt_tcp_listen("127.0.0.1", stray_addrs, sizeof stray_addrs);
    if (!ok(sfd >= 0))
        return;
    fflush(stdout);
    pid_t stray = fork();
    if (stray == 0) {
        tt_dir_close(&d);
        stray_server(sfd);
        _exit(0);
    }
    close(sfd);
    /* Rank 0's listener already holds strays when it starts: junk, a
     * hello from a rank that must not connect to it, and silence. */
    strays[0] = connect_to(d.addrs[0]);
    strays[1] = connect_to(d.addrs[0]);
    strays[2] = connect_to(d.addrs[0]);
    ok(strays[0] >= 0 && strays[1] >= 0 && strays[2] >= 0);
    memset(h, 0xab, sizeof h);
    (void)tt_raw_write(strays[0], h, sizeof h);
    tcp_put32(h, TCP_MAGIC);
    tcp_put16(h + 4, TCP_VERSION);
    tcp_put16(h + 6, 0);
    tcp_put64(h + 8, TT_JOB);
    tcp_put32(h + 16, 0);
    tcp_put32(h + 20, 0);
    tcp_put32(h + 24, 2);
    tcp_put32(h + 28, 0);
    (void)tt_raw_write(strays[1], h, sizeof h);
    /* Rank 1 finds rank 0 only at its third address. */
    char list[3 * QRT_TCP_ADDR_MAX];
    memcpy(real, d.addrs[0], sizeof real);
    snprintf(list, sizeof list, "127.0.0.1:%u,%s,%s", (unsigned)closed_port(), stray_addrs,
             real);
    if (!ok(strlen(list) < sizeof d.addrs[0]))
        return;
    memcpy(d.addrs[0], list, strlen(list) + 1);
    note("rank 0 published %s", d.addrs[0]);
    run_job(&d, fn, NULL, 60);
    kill(stray, SIGKILL);
    waitpid(stray, NULL, 0);
    for (int i = 0; i < 3; i++)
        if (strays[i] >= 0)
            close(strays[i]);
}

/* Rank 0 waits for rank 1, which never gets through (rank 0's address
 * is a closed port): both give up at the deadline, saying who is missing. */
static int dl_rank(tt_dir *d, int32_t rank, void *arg)
{
    tt_rank r;
    int fail = 0;
    (void)arg;
    setenv("QUAY_TCP_CONNECT_MS", "300", 1);
    tt_stderr_capture();
    int rc = tt_open(&r, d, rank);
    char *err = tt_stderr_end();
    TT_CHECK(fail, rc == QUAY_EPEER && r.t == NULL);
    TT_CHECK(fail, strstr(err, rank == 0 ? "quay rank 0: tcp: no connection with rank(s) 1 "
                                         : "quay rank 1: tcp: no connection with rank(s) 0 ") !=
                       NULL);
    if (rank == 1)
        TT_CHECK(fail, strstr(err, "refused") != NULL);
    free(err);
    free(r.mem);
    return fail;
}

static void test_deadline(void)
{
    tt_dir d;
    tt_fn fn[2] = {dl_rank, dl_rank};
    if (!ok(tt_dir_make(&d, 2) == 0))
        return;
    snprintf(d.addrs[0], sizeof d.addrs[0], "127.0.0.1:%u", (unsigned)closed_port());
    run_job(&d, fn, NULL, 30);
}

/* Rank 1 never runs, and the launcher says so on the dead-rank pipe.
 * Rank 0 (waiting for it to connect) and rank 2 (connected to its
 * listener, which nobody serves) fail start-up at once, an hour before
 * their connect limit, and close the pipe. */
static int gone_rank(tt_dir *d, int32_t rank, void *arg)
{
    tt_rank r;
    int fail = 0, p[2];
    uint32_t gone = 1;
    (void)arg;
    setenv("QUAY_TCP_CONNECT_MS", "3600000", 1);
    signal(SIGPIPE, SIG_IGN);
    TT_CHECK(fail, pipe(p) == 0 && write(p[1], &gone, sizeof gone) == (ssize_t)sizeof gone);
    if (fail)
        return fail;
    d->dead_fd[rank] = p[0];
    tt_stderr_capture();
    int rc = tt_open(&r, d, rank);
    char *err = tt_stderr_end();
    TT_CHECK(fail, rc == QUAY_EPEER && r.t == NULL);
    TT_CHECK(fail, strstr(err, "tcp: rank 1 exited during start-up") != NULL);
    /* The transport closed its end: nobody reads the pipe any more. */
    TT_CHECK(fail, write(p[1], &gone, sizeof gone) == -1 && errno == EPIPE);
    close(p[1]);
    free(err);
    free(r.mem);
    return fail;
}

static void test_gone(void)
{
    tt_dir d;
    tt_fn fn[3] = {gone_rank, NULL, gone_rank};
    if (!ok(tt_dir_make(&d, 3) == 0))
        return;
    run_job(&d, fn, NULL, 30);
}

/* ---- in-process: address helpers, quayrun's directory, a singleton ------------------------ */

static void test_listen(void)
{
    char addrs[QRT_TCP_ADDR_MAX];
    struct sockaddr_in sa[TCP_ADDRS_MAX];
    is_int(qrt_tcp_listen("bogus", addrs, sizeof addrs), -EINVAL);
    is_int(qrt_tcp_listen("1.2.3", addrs, sizeof addrs), -EINVAL);
    is_int(qrt_tcp_listen("127.0.0.1", addrs, 5), -ENOSPC);
    int fd = qrt_tcp_listen("127.0.0.1", addrs, sizeof addrs);
    if (ok(fd >= 0)) {
        ok((fcntl(fd, F_GETFD) & FD_CLOEXEC) && (fcntl(fd, F_GETFL) & O_NONBLOCK));
        is_int(tcp_parse_addrs(addrs, strlen(addrs), sa, TCP_ADDRS_MAX), 1);
        ok(strncmp(addrs, "127.0.0.1:", 10) == 0);
        close(fd);
    }
    /* All interfaces: every up IPv4 address, loopback last, one port. */
    fd = qrt_tcp_listen(NULL, addrs, sizeof addrs);
    if (ok(fd >= 0)) {
        int n = tcp_parse_addrs(addrs, strlen(addrs), sa, TCP_ADDRS_MAX);
        note("all interfaces: %s", addrs);
        ok(n >= 1);
        if (n >= 1) {
            ok((ntohl(sa[n - 1].sin_addr.s_addr) >> 24) == 127);
            for (int i = 0; i < n; i++)
                ok(sa[i].sin_port == sa[0].sin_port);
            for (int i = 0; i + 1 < n; i++)
                ok((ntohl(sa[i].sin_addr.s_addr) >> 24) != 127);
        }
        close(fd);
    }
    static const char *const good[] = {"1.2.3.4:1", "255.255.255.255:65535",
                                       "10.0.0.1:80,127.0.0.1:8080"};
    static const char *const bad[] = {"",           "1.2.3.4",       "1.2.3.4:",
                                      ":80",        "1.2.3.4:0",     "1.2.3.4:65536",
                                      "1.2.3.4:080", "01.2.3.4:80",  "256.1.1.1:80",
                                      "1.2.3.4:8a", " 1.2.3.4:80",   "1.2.3.4:80,",
                                      ",1.2.3.4:80", "host:80",      "1.2.3.4:80,,1.2.3.4:81",
                                      "1.2.3.4:-1", "1.2.3.4:123456"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        ok_msg(tcp_parse_addrs(good[i], strlen(good[i]), sa, TCP_ADDRS_MAX) >= 1, "good: %s",
               good[i]);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ok_msg(tcp_parse_addrs(bad[i], strlen(bad[i]), sa, TCP_ADDRS_MAX) == -1, "bad: \"%s\"",
               bad[i]);
}

static void unset_tcp_env(void)
{
    unsetenv("QUAY_TCP_FD");
    unsetenv("QUAY_TCP_PEERS");
    unsetenv("QUAY_TCP_JOB_FD");
    unsetenv("QUAY_TCP_DEAD_FD");
    unsetenv("QUAY_TCP_JOB");
}

/* The cookie goes in a pipe, as quayrun passes it; the directory must
 * read it and close the pipe, whatever else it finds wrong. */
static int dir_env_with(const char *fd, const char *peers, const char *job, qrt_tcp_dir *d)
{
    int p[2], rc;
    char js[16];
    if (!ok(pipe(p) == 0))
        return -1;
    ok(write(p[1], job, strlen(job)) == (ssize_t)strlen(job));
    close(p[1]);
    snprintf(js, sizeof js, "%d", p[0]);
    setenv("QUAY_TCP_FD", fd, 1);
    setenv("QUAY_TCP_PEERS", peers, 1);
    setenv("QUAY_TCP_JOB_FD", js, 1);
    rc = qrt_tcp_dir_env(2, d);
    if (!ok_msg(fcntl(p[0], F_GETFD) == -1 && errno == EBADF, "the job fd is closed"))
        close(p[0]);
    return rc;
}

static void test_dir_env(void)
{
    char addrs[QRT_TCP_ADDR_MAX], fdstr[16], peers[2 * QRT_TCP_ADDR_MAX], buf[QRT_TCP_ADDR_MAX];
    qrt_tcp_dir d;
    int lfd = qrt_tcp_listen("127.0.0.1", addrs, sizeof addrs);
    if (!ok(lfd >= 0))
        return;
    snprintf(fdstr, sizeof fdstr, "%d", lfd);
    snprintf(peers, sizeof peers, "%s;127.0.0.1:1,10.1.2.3:4", addrs);
    unset_tcp_env();
    is_int(qrt_tcp_dir_env(1, &d), 0); /* a singleton needs nothing */
    is_int(d.listen_fd, -1);
    is_int(d.dead_fd, -1);
    is_int(qrt_tcp_dir_env(2, &d), QUAY_EINVAL);
    if (is_int(dir_env_with(fdstr, peers, "00fF", &d), 0)) {
        is_int(d.listen_fd, lfd);
        is_int(d.dead_fd, -1);
        is_size(d.job, 0xff);
        is_int(d.publish(d.ctx, addrs), 0);
        is_int(d.fence(d.ctx), 0);
        is_int(d.lookup(d.ctx, 0, buf, sizeof buf), 0);
        is_str(buf, addrs);
        is_int(d.lookup(d.ctx, 1, buf, sizeof buf), 0);
        is_str(buf, "127.0.0.1:1,10.1.2.3:4");
    }
    /* quayrun writes a newline after the digits. */
    is_int(dir_env_with(fdstr, peers, "0123456789abcdef\n", &d), 0);
    is_size(d.job, 0x0123456789abcdefull);
    /* The cookie is never taken from the environment. */
    unset_tcp_env();
    setenv("QUAY_TCP_FD", fdstr, 1);
    setenv("QUAY_TCP_PEERS", peers, 1);
    setenv("QUAY_TCP_JOB", "1234", 1);
    is_int(qrt_tcp_dir_env(2, &d), QUAY_EINVAL);
    unset_tcp_env();
    /* The dead-rank pipe: taken, made close-on-exec and non-blocking. */
    int dp[2];
    if (ok(pipe(dp) == 0)) {
        char ds[16];
        snprintf(ds, sizeof ds, "%d", dp[0]);
        setenv("QUAY_TCP_DEAD_FD", ds, 1);
        if (is_int(dir_env_with(fdstr, peers, "1", &d), 0)) {
            is_int(d.dead_fd, dp[0]);
            ok((fcntl(dp[0], F_GETFD) & FD_CLOEXEC) && (fcntl(dp[0], F_GETFL) & O_NONBLOCK));
        }
        snprintf(ds, sizeof ds, "%d", lfd); /* not a pipe */
        setenv("QUAY_TCP_DEAD_FD", ds, 1);
        is_int(dir_env_with(fdstr, peers, "1", &d), QUAY_EINVAL);
        unsetenv("QUAY_TCP_DEAD_FD");
        close(dp[0]);
        close(dp[1]);
    }
    ok((fcntl(lfd, F_GETFD) & FD_CLOEXEC) && (fcntl(lfd, F_GETFL) & O_NONBLOCK));
    is_int(dir_env_with(fdstr, peers, "0xFFFFFFFFFFFFFFFF", &d), 0);
    is_size(d.job, UINT64_MAX);
    static const char *const bad_peers[] = {
        "127.0.0.1:1",          "127.0.0.1:1;127.0.0.1:2;127.0.0.1:3",
        "127.0.0.1:1;",         "127.0.0.1:1;256.0.0.1:2",
        "127.0.0.1:1;1.2.3.4",  "127.0.0.1:1;1.2.3.4:80,",
        ";127.0.0.1:1",         "127.0.0.1:1;1.2.3.4:80;",
    };
    for (size_t i = 0; i < sizeof bad_peers / sizeof bad_peers[0]; i++)
        ok_msg(dir_env_with(fdstr, bad_peers[i], "1", &d) == QUAY_EINVAL, "peers \"%s\"",
               bad_peers[i]);
    static const char *const bad_jobs[] = {"", "xyz", "0x", "12345678901234567", "-1", "1 "};
    for (size_t i = 0; i < sizeof bad_jobs / sizeof bad_jobs[0]; i++)
        ok_msg(dir_env_with(fdstr, peers, bad_jobs[i], &d) == QUAY_EINVAL, "job \"%s\"",
               bad_jobs[i]);
    /* Not a listening socket: garbage, closed, a pipe, a connected-less socket. */
    int p[2];
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (ok(pipe(p) == 0 && s >= 0)) {
        char ps[16], ss[16];
        snprintf(ps, sizeof ps, "%d", p[0]);
        snprintf(ss, sizeof ss, "%d", s);
        is_int(dir_env_with("abc", peers, "1", &d), QUAY_EINVAL);
        is_int(dir_env_with("99999", peers, "1", &d), QUAY_EINVAL);
        is_int(dir_env_with(ps, peers, "1", &d), QUAY_EINVAL);
        is_int(dir_env_with(ss, peers, "1", &d), QUAY_EINVAL);
        close(p[0]);
        close(p[1]);
        close(s);
    }
    unset_tcp_env();
    close(lfd);
}

static int q_packet(void *c, int32_t p, const void *b, size_t n)
{
    (void)c, (void)p, (void)b, (void)n;
    return 0;
}

static void q_done(void *c, uint64_t t, int s)
{
    (void)c, (void)t, (void)s;
}

static void q_peer(void *c, int32_t p)
{
    (void)c, (void)p;
}

static void test_single(void)
{
    quay_transport_sink sink = {NULL, q_packet, q_done, NULL, NULL, q_peer, q_peer};
    quay_transport *t = NULL;
    qrt_tcp_dir d;
    unset_tcp_env();
    if (!is_int(qrt_tcp_dir_env(1, &d), 0))
        return;
    if (!is_int(qrt_tcp_open(0, 1, &d, &sink, &t), 0))
        return;
    is_int(t->caps, ALL_CAPS);
    is_str(t->ops->name, "tcp");
    is_int(t->ops->busy(t), 0);
    is_int(t->ops->bye(t), 0);
    /* A wake makes even a very long wait return (the alarm catches a
     * lost one). */
    t->ops->wake(t);
    alarm(30);
    is_int(t->ops->poll(t, 60 * 1000000000LL), 0);
    alarm(0);
    t->ops->close(t);

    setenv("QUAY_TCP_RDMA", "0", 1);
    if (is_int(qrt_tcp_open(0, 1, &d, &sink, &t), 0)) {
        is_int(t->caps, QUAY_CAP_ORDERED | QUAY_CAP_RDMA_ATOMIC);
        t->ops->close(t);
    }
    unsetenv("QUAY_TCP_RDMA");
    setenv("QUAY_TCP_CONNECT_MS", "soon", 1);
    is_int(qrt_tcp_open(0, 1, &d, &sink, &t), QUAY_EINVAL);
    unsetenv("QUAY_TCP_CONNECT_MS");
    is_int(qrt_tcp_open(1, 1, &d, &sink, &t), QUAY_EINVAL);
}

int main(void)
{
    subtest("listen and address lists", test_listen);
    subtest("quayrun's directory (QUAY_TCP_*)", test_dir_env);
    subtest("a singleton: wake, knobs", test_single);
    subtest("traffic of every size, RDMA, bad keys (3 ranks)", test_traffic);
    subtest("partial writes (QUAY_TCP_BUF_KB=4)", test_partial);
    subtest("garbage fails its sender only", test_garbage);
    subtest("a peer gone without a bye", test_no_bye);
    subtest("a held packet does not hold RDMA back", test_hold);
    subtest("start-up: strays and wrong addresses", test_strays);
    subtest("start-up: the deadline", test_deadline);
    subtest("start-up: a rank the launcher saw end", test_gone);
    return done_testing();
}
