/*
 * test_tcp_bound — a peer that floods the TCP transport with RDMA
 * requests (GET, PUT, atomic: 1M of them, a thousand times what the
 * target may queue replies for) and does not read the replies: the
 * target's queue of replies toward it never passes TCP_REPLY_MAX, the
 * target stops reading it (the flooder's writes block in its kernel),
 * and once the flooder reads, everything drains, the target reads again
 * and every request is answered, in order and correctly.
 *
 * Rank 0 is a real transport, rank 1 a raw socket (tcptest.h); two pipes
 * carry the steps between them. Then two real ranks start four times
 * TCP_RDMA_DEPTH actions toward each other at once, through tiny socket
 * buffers: the rest wait for the depth, neither ever stops reading the
 * other, all complete in order. Every wait is bounded by a deadline or
 * the children's alarm; nothing is timed.
 */
#include "harness.h"
#include "tcptest.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tcp.h"

#define F_TOTAL (1u << 20)
#define F_LEN 8u /* GET / PUT bytes */
#define F_SPAN (TT_MEM - 64u)
#define F_WAIT_MS 120000

enum { K_GET = 0, K_GET2, K_ATOMIC, K_PUT };

typedef struct f_arg {
    int to_raw[2]; /* target -> flooder: 'P' (paused), 'G' (go on, read) */
    int to_tgt[2]; /* flooder -> target: f_report once its writes block */
} f_arg;

typedef struct f_report {
    uint64_t sent;   /* requests made (the last few perhaps not written yet) */
    int32_t blocked; /* the first write after 'P' found no room */
} f_report;

static uint64_t f_off(uint64_t i)
{
    return i * 8u % F_SPAN;
}

/* The word at off of rank's registered memory, as initialised. */
static uint64_t mem_word(int32_t rank, size_t off)
{
    uint8_t b[8];
    uint64_t w;
    for (int i = 0; i < 8; i++)
        b[i] = tt_mem_byte(rank, off + (size_t)i);
    memcpy(&w, b, 8);
    return w;
}

/* ---- the target: rank 0 ------------------------------------------------------------------ */

typedef struct f_watch {
    size_t most;    /* largest reply queue seen (bytes) */
    int miscount;   /* the transport's count differed from its queue */
    uint64_t polls; /* checks made */
} f_watch;

static f_watch watch;

static uint64_t served(const tt_rank *r)
{
    return (uint64_t)r->nresolve + (uint64_t)r->natomic;
}

/* Replies queued toward the flooder, in queue bytes, counted here by
 * walking the queue (up to just past the bound). */
static size_t queued_replies(const tcp_peer *p)
{
    size_t n = 0;
    for (const tcp_item *it = p->qhead; it != NULL && n <= TCP_REPLY_MAX; it = it->next) {
        unsigned type = it->hdr[0];
        if (type == TCP_GET_REPLY || type == TCP_PUT_DONE || type == TCP_ATOMIC_REPLY)
            n += sizeof *it;
    }
    return n;
}

static void f_most(size_t q)
{
    if (q > watch.most)
        watch.most = q;
}

/* After every poll: the queue, counted here, against its bound and the
 * transport's count. Returns 1. */
static int f_check(const tt_rank *r)
{
    const tcp_peer *p = &((const tcp_t *)r->t)->peers[1];
    size_t q = queued_replies(p);
    f_most(q);
    if (q <= TCP_REPLY_MAX && q != p->reply_bytes)
        watch.miscount++;
    watch.polls++;
    return 1;
}

/* Before every request is served: the transport's count. */
static int (*base_resolve)(void *, int32_t, uint64_t, uint64_t, uint64_t, uint32_t, void **);
static int (*base_atomic)(void *, int32_t, uint64_t, uint64_t, uint32_t, uint64_t, uint64_t,
                          uint64_t *);

static void f_count(const tt_rank *r)
{
    f_most(((const tcp_t *)r->t)->peers[1].reply_bytes);
}

static int f_resolve(void *ctx, int32_t peer, uint64_t key, uint64_t offset, uint64_t len,
                     uint32_t access, void **addr)
{
    f_count(ctx);
    return base_resolve(ctx, peer, key, offset, len, access, addr);
}

static int f_atomic(void *ctx, int32_t peer, uint64_t key, uint64_t offset, uint32_t op,
                    uint64_t operand, uint64_t compare, uint64_t *old)
{
    f_count(ctx);
    return base_atomic(ctx, peer, key, offset, op, operand, compare, old);
}

static int reply_paused(const tt_rank *r)
{
    return (((const tcp_t *)r->t)->peers[1].rx_paused & TCP_PAUSE_REPLY) != 0;
}

/* Can the socket take more? (Toward a peer that does not read: no,
 * once its buffers are full, and from then on.) */
static int writable(int fd)
{
    struct pollfd w = {fd, POLLOUT, 0};
    return poll(&w, 1, 0) == 1 && (w.revents & POLLOUT);
}

static int got_report(int fd, f_report *rep)
{
    return read(fd, rep, sizeof *rep) == (ssize_t)sizeof *rep;
}

static int f_target(tt_dir *d, int32_t rank, void *arg)
{
    f_arg *a = arg;
    tt_rank r;
    f_report rep = {0, 0};
    int fail = 0, ok;
    close(a->to_raw[0]);
    close(a->to_tgt[1]);
    fcntl(a->to_tgt[0], F_SETFL, fcntl(a->to_tgt[0], F_GETFL) | O_NONBLOCK);
    setenv("QUAY_TCP_BUF_KB", "64", 1);
    if (tt_open(&r, d, rank) != 0)
        return 1;
    base_resolve = r.sink.mem_resolve;
    base_atomic = r.sink.mem_atomic;
    r.sink.mem_resolve = f_resolve;
    r.sink.mem_atomic = f_atomic;
    const tcp_peer *p = &((const tcp_t *)r.t)->peers[1];
    /* 1. The flood, unread: the queue reaches its bound and reading stops
     *    (on a transport without a bound: it passes the bound). */
    TT_POLL_UNTIL(&r, f_check(&r) && (reply_paused(&r) || watch.most > TCP_REPLY_MAX ||
                                           served(&r) == F_TOTAL),
                  F_WAIT_MS, ok);
    TT_CHECK(fail, ok);
    TT_CHECK(fail, watch.most <= TCP_REPLY_MAX);
    TT_CHECK(fail, reply_paused(&r));
    if (reply_paused(&r)) {
        TT_CHECK(fail, write(a->to_raw[1], "P", 1) == 1);
        /* 2. The flooder's writes block. While the kernel still takes
         *    replies toward it the queue may drain and reading resume,
         *    but once the flooder's buffers are full, reading stops for
         *    good: unread requests wait in the socket, none is served. */
        TT_POLL_UNTIL(&r, f_check(&r) && got_report(a->to_tgt[0], &rep), F_WAIT_MS, ok);
        TT_CHECK(fail, ok && rep.blocked);
        TT_POLL_UNTIL(&r, f_check(&r) && reply_paused(&r) && !writable(p->fd), F_WAIT_MS,
                      ok);
        TT_CHECK(fail, ok);
        uint64_t at_pause = served(&r);
        for (int i = 0; i < 20; i++)
            (void)r.t->ops->poll(r.t, 5000000);
        int unread = 0;
        TT_CHECK(fail, ioctl(p->fd, FIONREAD, &unread) == 0 && unread > 0);
        TT_CHECK(fail, reply_paused(&r) && served(&r) == at_pause);
        TT_CHECK(fail, p->carry_len <= TCP_RBUF && p->hold_n == 0);
        note("stopped after %llu of %llu requests made, %zu bytes of replies queued (bound "
             "%zu), %d bytes unread in the socket",
             (unsigned long long)at_pause, (unsigned long long)rep.sent, watch.most,
             (size_t)TCP_REPLY_MAX, unread);
    }
    /* 3. The flooder reads: all of it drains, reading resumes. */
    TT_CHECK(fail, write(a->to_raw[1], "G", 1) == 1);
    TT_POLL_UNTIL(&r, f_check(&r) && served(&r) == F_TOTAL && p->qhead == NULL,
                  F_WAIT_MS, ok);
    TT_CHECK(fail, ok);
    TT_CHECK(fail, watch.most <= TCP_REPLY_MAX && watch.miscount == 0);
    TT_CHECK(fail, p->rx_paused == 0 && p->reply_bytes == 0 && p->state == TCP_LIVE);
    TT_CHECK(fail, r.failed[1] == 0 && r.bad == 0);
    note("served %llu requests; the reply queue never held more than %zu bytes (%llu checks)",
         (unsigned long long)served(&r), watch.most, (unsigned long long)watch.polls);
    TT_CHECK(fail, tt_finish(&r) == 0);
    return fail;
}

/* ---- the flooder: rank 1 ------------------------------------------------------------------ */

typedef struct f_raw {
    int fd;
    uint64_t next;   /* next request to put in obuf */
    uint64_t answered;
    uint8_t obuf[1u << 16];
    size_t olen, opos;
    uint8_t ibuf[1u << 16];
    size_t ilen;
    int bad;
} f_raw;

/* Request i's frame at f: its length. */
static size_t f_request(uint64_t i, uint8_t *f)
{
    uint8_t *x = f + TCP_PREFIX;
    uint64_t off = f_off(i);
    tcp_put64(x, i);
    tcp_put64(x + 8, TT_KEY_RW);
    tcp_put64(x + 16, off);
    switch (i % 4) {
    case K_ATOMIC: /* adds 0: the old word comes back, nothing changes */
        tcp_prefix(f, TCP_ATOMIC_REQ, 0);
        tcp_put64(x + 24, 0);
        tcp_put64(x + 32, 0);
        tcp_put32(x + 40, QUAY_ATOMIC_FADD);
        tcp_put32(x + 44, 0);
        return TCP_PREFIX + 48;
    case K_PUT: /* writes what is there already */
        tcp_prefix(f, TCP_PUT, F_LEN);
        for (size_t k = 0; k < F_LEN; k++)
            x[24 + k] = tt_mem_byte(0, off + k);
        return TCP_PREFIX + 24 + F_LEN;
    default:
        tcp_prefix(f, TCP_GET_REQ, 0);
        tcp_put64(x + 24, F_LEN);
        return TCP_PREFIX + 32;
    }
}

/* Write requests while the socket takes them: 1 if all are out, 0 if
 * it is full, -1 on error. */
static int f_write(f_raw *s)
{
    for (;;) {
        if (s->opos == s->olen) {
            s->opos = s->olen = 0;
            while (s->next < F_TOTAL && s->olen + TCP_HDR_MAX <= sizeof s->obuf)
                s->olen += f_request(s->next++, s->obuf + s->olen);
            if (s->olen == 0)
                return 1;
        }
        ssize_t n = send(s->fd, s->obuf + s->opos, s->olen - s->opos, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        if (n <= 0)
            return -1;
        s->opos += (size_t)n;
    }
}

/* Check the reply at f (whole) against the request it must answer. */
static void f_reply(f_raw *s, const uint8_t *f)
{
    const uint8_t *x = f + TCP_PREFIX;
    uint64_t i = s->answered++, off = f_off(i);
    static const unsigned want[4] = {TCP_GET_REPLY, TCP_GET_REPLY, TCP_ATOMIC_REPLY, TCP_PUT_DONE};
    int good = f[0] == want[i % 4] && tcp_get64(x) == i;
    if (good && f[0] == TCP_GET_REPLY) {
        good = tcp_get32(x + 8) == 0 && tcp_get64(f + 4) == F_LEN;
        for (size_t k = 0; good && k < F_LEN; k++)
            good = x[16 + k] == tt_mem_byte(0, off + k);
    } else if (good && f[0] == TCP_ATOMIC_REPLY) {
        good = tcp_get32(x + 16) == 0 && tcp_get64(x + 8) == mem_word(0, off);
    } else if (good) {
        good = tcp_get32(x + 8) == 0;
    }
    if (!good && s->bad++ < 5)
        fprintf(stderr, "  flooder: reply %llu is wrong (type %u, cookie %llu)\n",
                (unsigned long long)i, f[0], (unsigned long long)tcp_get64(x));
}

/* Read what came and check every whole reply: 0, or -1 (EOF, error, a
 * frame that is no reply). A BYE sets *bye. */
static int f_read(f_raw *s, int *bye)
{
    ssize_t n = recv(s->fd, s->ibuf + s->ilen, sizeof s->ibuf - s->ilen, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
        return 0;
    if (n <= 0)
        return -1;
    s->ilen += (size_t)n;
    size_t pos = 0;
    while (s->ilen - pos >= TCP_PREFIX) {
        const uint8_t *f = s->ibuf + pos;
        size_t flen = TCP_PREFIX + tcp_ext_len(f[0]) + (size_t)tcp_get64(f + 4);
        if (f[0] < TCP_PKT || f[0] > TCP_TYPE_MAX || flen > 256)
            return -1;
        if (s->ilen - pos < flen)
            break;
        if (f[0] == TCP_BYE)
            *bye = 1;
        else
            f_reply(s, f);
        pos += flen;
    }
    memmove(s->ibuf, s->ibuf + pos, s->ilen - pos);
    s->ilen -= pos;
    return 0;
}

/* Wait for fd to be ready for `ev`, or for the pipe `pfd` (-1: none) to
 * be readable: 0, or -1 after the deadline. */
static int f_wait(int fd, short ev, int pfd)
{
    struct pollfd w[2] = {{fd, ev, 0}, {pfd, POLLIN, 0}};
    int n;
    do
        n = poll(w, pfd >= 0 ? 2 : 1, F_WAIT_MS);
    while (n < 0 && errno == EINTR);
    return n > 0 ? 0 : -1;
}

static int f_flooder(tt_dir *d, int32_t rank, void *arg)
{
    f_arg *a = arg;
    f_raw *s = calloc(1, sizeof *s);
    f_report rep = {0, 0};
    int paused = 0, told = 0, bye = 0, rc;
    char c = 0;
    close(a->to_raw[1]);
    close(a->to_tgt[0]);
    tt_dir_close(d);
    if (s == NULL || (s->fd = tt_raw_connect(d, rank, 0, 2)) < 0)
        return 1;
    fcntl(s->fd, F_SETFL, fcntl(s->fd, F_GETFL) | O_NONBLOCK);
    fcntl(a->to_raw[0], F_SETFL, fcntl(a->to_raw[0], F_GETFL) | O_NONBLOCK);
    /* 1. Requests whenever the socket takes them, none of the replies
     *    read, until the target says 'G'. Once it said it stopped reading
     *    ('P'), the first write that finds no room is reported. */
    for (;;) {
        rc = f_write(s);
        if (rc < 0)
            return 1;
        if (read(a->to_raw[0], &c, 1) == 1) {
            if (c == 'G')
                break;
            paused = 1;
            continue;
        }
        if (paused && !told) {
            rep.blocked = rc == 0; /* else all went in without blocking */
            rep.sent = s->next;
            if (write(a->to_tgt[1], &rep, sizeof rep) != (ssize_t)sizeof rep)
                return 1;
            told = 1;
        }
        if (f_wait(s->fd, rc == 0 ? POLLOUT : 0, a->to_raw[0]) != 0)
            return 1;
    }
    /* 2. Read every reply, writing the rest of the requests meanwhile. */
    while (s->answered < F_TOTAL) {
        int more = s->next < F_TOTAL || s->opos < s->olen;
        if (f_wait(s->fd, (short)(POLLIN | (more ? POLLOUT : 0)), -1) != 0 ||
            f_read(s, &bye) != 0 || (more && f_write(s) < 0) || bye)
            break;
    }
    fprintf(stderr, "  flooder: %llu requests answered\n", (unsigned long long)s->answered);
    int fail = s->answered != F_TOTAL || s->bad != 0;
    /* 3. Bye, then the target's, then its close. */
    uint8_t h[TCP_PREFIX];
    tcp_prefix(h, TCP_BYE, 0);
    fcntl(s->fd, F_SETFL, fcntl(s->fd, F_GETFL) & ~O_NONBLOCK);
    if (tt_raw_write(s->fd, h, sizeof h) != 0)
        fail = 1;
    while (!bye && f_read(s, &bye) == 0)
        ;
    fail |= !bye || s->ilen != 0 || s->answered != F_TOTAL;
    uint8_t junk[64];
    while (recv(s->fd, junk, sizeof junk, 0) > 0)
        fail = 1;
    close(s->fd);
    free(s);
    return fail;
}

static void test_flood(void)
{
    f_arg a;
    tt_dir d;
    tt_fn fn[2] = {f_target, f_flooder};
    int st[2];
    /* Set before the listeners exist, as quayrun's environment is. */
    setenv("QUAY_TCP_BUF_KB", "64", 1);
    int made = tt_dir_make(&d, 2);
    unsetenv("QUAY_TCP_BUF_KB");
    if (!ok(made == 0) || !ok(pipe(a.to_raw) == 0 && pipe(a.to_tgt) == 0))
        return;
    tt_run(&d, fn, &a, 280, st);
    ok_msg(st[0] == 0, "the target kept its bound and served everything (status %d)", st[0]);
    ok_msg(st[1] == 0, "the flooder got every reply, in order (status %d)", st[1]);
    tt_dir_close(&d);
    for (int k = 0; k < 2; k++) {
        close(a.to_raw[k]);
        close(a.to_tgt[k]);
    }
}

/* ---- two honest ranks, each far past its depth toward the other ----------------------- */

#define H_N (4u * TCP_RDMA_DEPTH)
#define H_LEN 64u
#define H_PUT_OFF (1u << 20) /* GETs read below, PUTs write from here */
#define H_WORD (TT_MEM - 8u)

/* After every poll: the depth kept, and this rank read by its peer all
 * along (its replies never fill the bound). Returns 1. */
static int h_check(const tt_rank *r, int32_t peer, int *bad)
{
    const tcp_peer *p = &((const tcp_t *)r->t)->peers[peer];
    if (p->rdma_out > TCP_RDMA_DEPTH || (p->rx_paused & TCP_PAUSE_REPLY))
        (*bad)++;
    return 1;
}

static int h_rank(tt_dir *d, int32_t rank, void *arg)
{
    tt_rank r;
    int fail = 0, ok, bad = 0;
    int32_t peer = 1 - rank;
    (void)arg;
    setenv("QUAY_TCP_BUF_KB", "4", 1);
    if (tt_open(&r, d, rank) != 0)
        return 1;
    const tcp_peer *p = &((const tcp_t *)r.t)->peers[peer];
    uint8_t *get = malloc(H_N * H_LEN), *src = malloc(H_N * H_LEN);
    uint64_t *old = calloc(H_N, sizeof *old);
    if (get == NULL || src == NULL || old == NULL)
        return 1;
    for (size_t i = 0; i < H_N * H_LEN; i++)
        src[i] = (uint8_t)(rank * 7 + i * 13);
    /* All at once, without a poll between: past the depth they wait. */
    for (uint32_t i = 0; i < H_N; i++) {
        int rc;
        if (i % 3 == 0)
            rc = tt_rdma(&r, QUAY_ACT_RDMA_GET, peer, i, TT_KEY_RW, (uint64_t)i * H_LEN,
                         get + (size_t)i * H_LEN, H_LEN, 0, 0, 0);
        else if (i % 3 == 1)
            rc = tt_rdma(&r, QUAY_ACT_RDMA_ATOMIC, peer, i, TT_KEY_RW, H_WORD, &old[i], 8,
                         QUAY_ATOMIC_FADD, 1, 0);
        else
            rc = tt_rdma(&r, QUAY_ACT_RDMA_PUT, peer, i, TT_KEY_RW,
                         H_PUT_OFF + (uint64_t)i * H_LEN, src + (size_t)i * H_LEN, H_LEN, 0, 0,
                         0);
        TT_CHECK(fail, rc == 0);
    }
    TT_CHECK(fail, p->rdma_out == TCP_RDMA_DEPTH && p->whead != NULL);
    TT_POLL_UNTIL(&r, h_check(&r, peer, &bad) && r.outstanding == 0, F_WAIT_MS, ok);
    TT_CHECK(fail, ok && bad == 0);
    TT_CHECK(fail, p->rdma_out == 0 && p->whead == NULL && r.ndone == (int)H_N);
    for (int i = 0; i < r.ndone; i++)
        TT_CHECK(fail, r.done[i].status == 0);
    /* In order: the atomics saw the word go up one by one. */
    uint64_t w0 = mem_word(peer, H_WORD), natomic = 0;
    int same = 1;
    for (uint32_t i = 0; i < H_N; i++) {
        if (i % 3 == 0)
            for (size_t k = 0; k < H_LEN; k++)
                same &= get[i * H_LEN + k] == tt_mem_byte(peer, i * H_LEN + k);
        else if (i % 3 == 1)
            same &= old[i] == w0 + natomic++;
    }
    TT_CHECK(fail, same);
    /* The peer is done with us once its packet comes (sent after its
     * last op_done): then its PUTs and atomics are all here. */
    TT_CHECK(fail, tt_send(&r, peer, 100) >= 0);
    TT_POLL_UNTIL(&r, h_check(&r, peer, &bad) && r.next_seq[peer] == 1 && r.outstanding == 0,
                  F_WAIT_MS, ok);
    TT_CHECK(fail, ok && bad == 0);
    same = 1;
    for (uint32_t i = 2; i < H_N; i += 3)
        for (size_t k = 0; k < H_LEN; k++)
            same &= r.mem[H_PUT_OFF + i * H_LEN + k] == (uint8_t)(peer * 7 + (i * H_LEN + k) * 13);
    uint64_t w;
    memcpy(&w, r.mem + H_WORD, 8);
    TT_CHECK(fail, same && w == mem_word(rank, H_WORD) + natomic);
    TT_CHECK(fail, r.failed[peer] == 0 && r.bad == 0);
    TT_CHECK(fail, tt_finish(&r) == 0);
    free(get);
    free(src);
    free(old);
    return fail;
}

static void test_depth(void)
{
    tt_dir d;
    tt_fn fn[2] = {h_rank, h_rank};
    int st[2];
    setenv("QUAY_TCP_BUF_KB", "4", 1);
    int made = tt_dir_make(&d, 2);
    unsetenv("QUAY_TCP_BUF_KB");
    if (!ok(made == 0))
        return;
    tt_run(&d, fn, NULL, 280, st);
    for (int r = 0; r < 2; r++)
        ok_msg(st[r] == 0, "rank %d: every action done, in order, its peer always read (status %d)",
               r, st[r]);
    tt_dir_close(&d);
}

int main(void)
{
    subtest("RDMA requests from a peer that does not read its replies", test_flood);
    subtest("two ranks with RDMA far past the depth toward each other", test_depth);
    return done_testing();
}
