/*
 * bench_engine.c — the engine's own cost per message, with no transport.
 *
 * Two engines (ranks 0 and 1) live in this process, joined by a
 * zero-latency in-memory "wire": every SEND action is copied (header +
 * payload) into one preallocated packet buffer, handed to the peer's
 * quay_on_packet, and its token is completed with quay_on_op_done right
 * after. Nothing in the measured loops allocates. Requests are completed
 * by polling quay_req_test (QUAY_CFG_COMPLETE_ACTIONS off) unless
 * --complete-actions is given; thresholds are the engine defaults
 * (eager up to 8 KiB, rendezvous with 64 KiB fragments above).
 *
 * --send inline: sends of up to QUAY_INLINE_MAX bytes by quay_send_inline
 * (payload copied behind the header, no send request, one-iovec packet,
 * handed to the peer as it is); larger ones by quay_isend.
 * --send copy: quay_isend on engines with QUAY_CFG_SEND_COPY (what the MPI
 * binding runs): a send quay_send_inline would take is copied the same
 * way and its request is complete at the call.
 *
 * Modes (--mode):
 *   pingpong  rank 1 has the ping's receive posted; rank 0 posts the
 *             pong's receive, sends the ping, pump; rank 1 sees it done
 *             and sends the pong, pump; rank 0 waits. ns/msg is half a
 *             round trip.
 *   stream    rank 1 pre-posts W receives, rank 0 posts W sends back to
 *             back, pump, everything is tested and freed; repeat.
 *
 * --callgrind: warm up, then bracket exactly --iters eager messages of
 * --size bytes (default 8) with CALLGRIND_START/STOP_INSTRUMENTATION and
 * a collection toggle: per message irecv (pre-posted) + isend + the pump
 * (next_action on both ends, on_packet, on_op_done) + test + free on both
 * ends. bench/callgrind.sh runs it under valgrind and does the arithmetic.
 * --no-copy makes the wire skip the payload copy (the header is still
 * copied; stale payload bytes are delivered), so only the engine's own
 * delivery memcpy of the payload remains.
 */
#include "bench_common.h"

#include "nicsim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the zero-latency wire ---------------------------------------------- */

/* The per-message helpers are inlined into the measured loops, so that
 * choosing the way to send costs the harness a branch, not a call. */
#if defined(__GNUC__) || defined(__clang__)
#define BENCH_INLINE inline __attribute__((always_inline))
#else
#define BENCH_INLINE inline
#endif

enum { SEND_ISEND, SEND_INLINE, SEND_PERSIST, SEND_COPY };
enum { RECV_IRECV, RECV_PERSIST, RECV_LATE, RECV_INLINE };

typedef struct bench {
    quay_engine *e[2];
    quay_comm *c[2];
    uint8_t *pkt;       /* the one packet buffer */
    size_t pkt_cap;
    int no_copy;        /* skip the wire's payload copy */
    int send_how;       /* SEND_*: --send */
    int recv_how;       /* RECV_*: --recv */
    int dirty[2];       /* engine may have actions to pull */
    uint64_t completes; /* COMPLETE actions seen */
    nicsim *sim;        /* --wire nicsim: the simulator carries the packets */
} bench;

/* Pull every action of engine r and execute it. */
static void drain(bench *b, int r)
{
    quay_action a;
    int rc;
    while ((rc = quay_next_action(b->e[r], &a)) == 1) {
        if (a.kind == QUAY_ACT_SEND) {
            /* One piece (an inline send's packet, a control packet) is
             * handed over as it is; header + payload go through the one
             * packet buffer. */
            const void *bytes = a.iov[0].base;
            size_t total = a.iov[0].len;
            if (a.iovcnt == 2) {
                size_t n = a.iov[0].len;
                total = n + a.iov[1].len;
                if (total > b->pkt_cap)
                    bench_die("SEND of %zu bytes exceeds the packet buffer", total);
                memcpy(b->pkt, a.iov[0].base, n);
                if (!b->no_copy)
                    memcpy(b->pkt + n, a.iov[1].base, a.iov[1].len);
                bytes = b->pkt;
            }
            rc = quay_on_packet(b->e[a.peer], r, bytes, total);
            if (rc != 0)
                bench_check(rc, "quay_on_packet");
            b->dirty[a.peer] = 1;
            rc = quay_on_op_done(b->e[r], a.token, 0);
            if (rc != 0)
                bench_check(rc, "quay_on_op_done");
        } else if (a.kind == QUAY_ACT_COMPLETE) {
            b->completes++;
        } else {
            bench_die("unexpected action kind %d", (int)a.kind);
        }
    }
    if (rc != 0)
        bench_check(rc, "quay_next_action");
}

/* --wire nicsim: both engines were called; the simulator (FIFO links,
 * no faults, auto_pull, untimed: every link has zero latency) pulls,
 * delivers and completes until nothing is left in flight. */
static void pump_nicsim(bench *b)
{
    b->dirty[0] = b->dirty[1] = 0;
    nicsim_touch(b->sim, 0);
    nicsim_touch(b->sim, 1);
    int rc = nicsim_run(b->sim, UINT64_MAX);
    if (rc != NICSIM_RUN_IDLE)
        bench_die("nicsim_run: %d (not idle)", rc);
}

/* Run both engines until neither has anything to do. An engine is pulled
 * again only when a packet was delivered to it (or the caller called it). */
static BENCH_INLINE void pump(bench *b)
{
    if (b->sim != NULL) {
        pump_nicsim(b);
        return;
    }
    while (b->dirty[0] | b->dirty[1]) {
        for (int r = 0; r < 2; r++) {
            if (b->dirty[r]) {
                b->dirty[r] = 0;
                drain(b, r);
            }
        }
    }
}

static void bench_open(bench *b, int complete_actions, int no_copy, int wire_nicsim,
                       int send_copy)
{
    memset(b, 0, sizeof *b);
    quay_config cfg;
    quay_config_default(&cfg);
    memset(cfg.key_secret, 0x5a, sizeof cfg.key_secret); /* (a simulation: any fixed secret) */
    cfg.flags = complete_actions ? QUAY_CFG_COMPLETE_ACTIONS : 0;
    if (send_copy)
        cfg.flags |= QUAY_CFG_SEND_COPY;
    bench_engines_new(&cfg, b->e, b->c);
    size_t body = cfg.eager_max > cfg.frag_size ? cfg.eager_max : cfg.frag_size;
    b->pkt_cap = QUAY_MAX_HEADER + body;
    b->pkt = malloc(b->pkt_cap);
    if (b->pkt == NULL)
        bench_die("out of memory");
    memset(b->pkt, 0, b->pkt_cap);
    b->no_copy = no_copy;
    if (wire_nicsim) {
        nicsim_config sc;
        nicsim_config_default(&sc);
        sc.nranks = 2;
        sc.auto_pull = 1;
        if (nicsim_new(&sc, &b->sim) != 0 || nicsim_attach(b->sim, 0, b->e[0]) != 0 ||
            nicsim_attach(b->sim, 1, b->e[1]) != 0)
            bench_die("nicsim setup failed");
    }
}

static void bench_close(bench *b)
{
    quay_stats st;
    for (int r = 0; r < 2; r++) {
        quay_engine_stats(b->e[r], &st);
        if (st.reqs_in_use != 0 || st.umsgs_in_use != 0 || st.outs_in_use != 0)
            bench_die("rank %d leaks: %u requests, %u messages, %u outs", r,
                      st.reqs_in_use, st.umsgs_in_use, st.outs_in_use);
        quay_engine_free(b->e[r]);
    }
    nicsim_free(b->sim);
    free(b->pkt);
}

/* ---- the measured loops -------------------------------------------------- */

/* Buffers for one (mode, size): send buffers per rank, receive buffers,
 * and the persistent requests made for them (--send/--recv persistent). */
typedef struct bufs {
    size_t size;
    uint32_t window;
    uint8_t *sbuf[2];
    uint8_t *rbuf[2];   /* rank 1: window buffers of `size`; rank 0: one */
    quay_req **rreq;    /* window receive requests */
    quay_req **sreq;    /* window send requests */
    quay_req **psend[2];/* per rank, per window slot: made at first use */
    quay_req **precv[2];
} bufs;

/* A send of slot k from rank `from` to the other rank, the way --send
 * says: quay_isend; quay_send_inline where it takes it (*s = NULL:
 * nothing to test or free), else quay_isend; or the slot's persistent
 * request started. */
static BENCH_INLINE int post_send(bench *b, bufs *bf, int from, uint32_t k, const void *buf,
                                  size_t n, quay_req **s)
{
    *s = NULL;
    if (b->send_how == SEND_INLINE) {
        int rc = quay_send_inline(b->e[from], b->c[from], buf, n, 1 - from, 0);
        if (rc != QUAY_EBUSY)
            return rc;
    } else if (b->send_how == SEND_PERSIST) {
        quay_req **p = &bf->psend[from][k];
        if (*p == NULL) {
            int rc = quay_send_init(b->e[from], b->c[from], buf, n, 1 - from, 0,
                                    QUAY_SEND_STANDARD, p);
            if (rc != 0)
                return rc;
        }
        *s = *p;
        return quay_start(b->e[from], *p);
    }
    return quay_isend(b->e[from], b->c[from], buf, n, 1 - from, 0, QUAY_SEND_STANDARD, s);
}

/* A receive of slot k at rank `at` from the other rank, the way --recv
 * says: quay_irecv, or the slot's persistent request started. */
static BENCH_INLINE int post_recv(bench *b, bufs *bf, int at, uint32_t k, void *buf, size_t n,
                                  quay_req **r)
{
    if (b->recv_how == RECV_PERSIST) {
        quay_req **p = &bf->precv[at][k];
        if (*p == NULL) {
            int rc = quay_recv_init(b->e[at], b->c[at], buf, n, 1 - at, 0, p);
            if (rc != 0)
                return rc;
        }
        *r = *p;
        return quay_start(b->e[at], *p);
    }
    return quay_irecv(b->e[at], b->c[at], buf, n, 1 - at, 0, r);
}

static void done_or_die(const quay_req *r)
{
    if (!quay_req_test(r, NULL))
        bench_die("a request did not complete after the pump (engine stuck)");
}

/* A send / receive is over: freed unless persistent (kept for the next
 * round) or inline (nothing to free). */
static BENCH_INLINE void send_done(bench *b, int from, quay_req *s)
{
    if (s == NULL)
        return;
    done_or_die(s);
    if (b->send_how != SEND_PERSIST)
        quay_req_free(b->e[from], s);
}

static BENCH_INLINE void recv_done(bench *b, int at, quay_req *r)
{
    done_or_die(r);
    if (b->recv_how != RECV_PERSIST)
        quay_req_free(b->e[at], r);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL)
        bench_die("out of memory (%zu bytes)", n);
    return p;
}

static void bufs_open(bufs *bf, size_t size, uint32_t window)
{
    bf->size = size;
    bf->window = window;
    for (int r = 0; r < 2; r++) {
        bf->sbuf[r] = xmalloc(size);
        memset(bf->sbuf[r], 0x5a, size);
        bf->psend[r] = xmalloc(window * sizeof *bf->psend[r]);
        bf->precv[r] = xmalloc(window * sizeof *bf->precv[r]);
        memset(bf->psend[r], 0, window * sizeof *bf->psend[r]);
        memset(bf->precv[r], 0, window * sizeof *bf->precv[r]);
    }
    bf->rbuf[0] = xmalloc(size);
    bf->rbuf[1] = xmalloc(size * window);
    memset(bf->rbuf[0], 0, size);
    memset(bf->rbuf[1], 0, size * window);
    bf->rreq = xmalloc(window * sizeof *bf->rreq);
    bf->sreq = xmalloc(window * sizeof *bf->sreq);
}

static void bufs_close(bench *b, bufs *bf)
{
    for (int r = 0; r < 2; r++) {
        for (uint32_t k = 0; k < bf->window; k++) {
            if (bf->psend[r][k] != NULL)
                quay_req_free(b->e[r], bf->psend[r][k]);
            if (bf->precv[r][k] != NULL)
                quay_req_free(b->e[r], bf->precv[r][k]);
        }
        free(bf->psend[r]);
        free(bf->precv[r]);
        free(bf->sbuf[r]);
        free(bf->rbuf[r]);
    }
    free(bf->rreq);
    free(bf->sreq);
}

/* One round trip: two messages. */
static void pingpong_round(bench *b, bufs *bf)
{
    quay_req *ping_r, *pong_r, *ping_s, *pong_s;
    size_t n = bf->size;
    if (post_recv(b, bf, 1, 0, bf->rbuf[1], n, &ping_r) != 0 ||
        post_recv(b, bf, 0, 0, bf->rbuf[0], n, &pong_r) != 0 ||
        post_send(b, bf, 0, 0, bf->sbuf[0], n, &ping_s) != 0)
        bench_die("ping: post failed");
    b->dirty[0] = b->dirty[1] = 1;
    pump(b);
    done_or_die(ping_r);
    if (post_send(b, bf, 1, 0, bf->sbuf[1], n, &pong_s) != 0)
        bench_die("pong: post failed");
    b->dirty[1] = 1;
    pump(b);
    recv_done(b, 0, pong_r);
    recv_done(b, 1, ping_r);
    send_done(b, 0, ping_s);
    send_done(b, 1, pong_s);
}

/* The stream's window of sends from rank 0 to rank 1, then the pump. */
static BENCH_INLINE void send_window(bench *b, bufs *bf)
{
    size_t n = bf->size;
    uint32_t w = bf->window;
    for (uint32_t k = 0; k < w; k++)
        if (post_send(b, bf, 0, k, bf->sbuf[0], n, &bf->sreq[k]) != 0)
            bench_die("stream: send failed");
    b->dirty[0] = b->dirty[1] = 1;
    pump(b);
}

/* --recv late / inline: W messages from rank 0 to rank 1 arrive before
 * their receives (they are kept as unexpected messages); then each is
 * received by quay_irecv (late: complete at the call, tested and freed)
 * or by quay_recv_inline (inline: no request). */
static void stream_round_late(bench *b, bufs *bf)
{
    size_t n = bf->size;
    uint32_t w = bf->window;
    send_window(b, bf);
    for (uint32_t k = 0; k < w; k++) {
        uint8_t *buf = bf->rbuf[1] + (size_t)k * n;
        if (b->recv_how == RECV_INLINE) {
            quay_status st;
            if (quay_recv_inline(b->e[1], b->c[1], buf, n, 0, 0, &st) != 0 || st.count != n)
                bench_die("stream: quay_recv_inline did not take an arrived message");
        } else {
            if (quay_irecv(b->e[1], b->c[1], buf, n, 0, 0, &bf->rreq[k]) != 0)
                bench_die("stream: late receive failed");
            recv_done(b, 1, bf->rreq[k]);
        }
        send_done(b, 0, bf->sreq[k]);
    }
}

/* W messages from rank 0 to rank 1, receives pre-posted. */
static void stream_round(bench *b, bufs *bf)
{
    size_t n = bf->size;
    uint32_t w = bf->window;
    if (b->recv_how == RECV_LATE || b->recv_how == RECV_INLINE) {
        stream_round_late(b, bf);
        return;
    }
    if (b->recv_how == RECV_PERSIST && bf->precv[1][0] != NULL) {
        /* The window's persistent receives (made by the first round), as
         * MPI_Startall starts them. */
        if (quay_startall(b->e[1], w, bf->precv[1], NULL) != 0)
            bench_die("stream: quay_startall failed");
        memcpy(bf->rreq, bf->precv[1], w * sizeof bf->rreq[0]);
    } else {
        for (uint32_t k = 0; k < w; k++)
            if (post_recv(b, bf, 1, k, bf->rbuf[1] + (size_t)k * n, n, &bf->rreq[k]) != 0)
                bench_die("stream: receive failed");
    }
    send_window(b, bf);
    for (uint32_t k = 0; k < w; k++) {
        recv_done(b, 1, bf->rreq[k]);
        send_done(b, 0, bf->sreq[k]);
    }
}

/* One eager message 0 -> 1, sent and received the ways --send / --recv
 * say (the callgrind unit for those). */
static void one_message_as(bench *b, bufs *bf)
{
    quay_req *r, *s;
    if (post_recv(b, bf, 1, 0, bf->rbuf[1], bf->size, &r) != 0 ||
        post_send(b, bf, 0, 0, bf->sbuf[0], bf->size, &s) != 0)
        bench_die("post failed");
    b->dirty[0] = b->dirty[1] = 1;
    pump(b);
    recv_done(b, 1, r);
    send_done(b, 0, s);
}

/* One eager message 0 -> 1 by quay_isend / quay_irecv (the callgrind
 * unit: the calls spelled out, as measured since the first session). */
static void one_message(bench *b, bufs *bf)
{
    quay_req *r, *s;
    if (quay_irecv(b->e[1], b->c[1], bf->rbuf[1], bf->size, 0, 0, &r) != 0 ||
        quay_isend(b->e[0], b->c[0], bf->sbuf[0], bf->size, 1, 0,
                   QUAY_SEND_STANDARD, &s) != 0)
        bench_die("post failed");
    b->dirty[0] = b->dirty[1] = 1;
    pump(b);
    done_or_die(r);
    done_or_die(s);
    quay_req_free(b->e[1], r);
    quay_req_free(b->e[0], s);
}

enum { MODE_PINGPONG = 1, MODE_STREAM = 2 };

static uint64_t msgs_per_round(int mode, uint32_t window)
{
    return mode == MODE_PINGPONG ? 2 : window;
}

static void run_rounds(bench *b, bufs *bf, int mode, uint64_t rounds)
{
    if (mode == MODE_PINGPONG)
        for (uint64_t i = 0; i < rounds; i++)
            pingpong_round(b, bf);
    else
        for (uint64_t i = 0; i < rounds; i++)
            stream_round(b, bf);
}

/* Check once that the data and statuses are right before timing. */
static void verify(bench *b, bufs *bf, int mode)
{
    size_t n = bf->size;
    for (size_t i = 0; i < n; i++) {
        bf->sbuf[0][i] = (uint8_t)(i * 7 + 1);
        bf->sbuf[1][i] = (uint8_t)(i * 13 + 5);
    }
    memset(bf->rbuf[0], 0, n);
    memset(bf->rbuf[1], 0, n * bf->window);
    run_rounds(b, bf, mode, 1);
    if (b->no_copy)
        return; /* stale payloads by design */
    if (mode == MODE_PINGPONG) {
        if (memcmp(bf->rbuf[1], bf->sbuf[0], n) != 0 ||
            memcmp(bf->rbuf[0], bf->sbuf[1], n) != 0)
            bench_die("pingpong: payload corrupted (size %zu)", n);
    } else {
        for (uint32_t k = 0; k < bf->window; k++)
            if (memcmp(bf->rbuf[1] + (size_t)k * n, bf->sbuf[0], n) != 0)
                bench_die("stream: payload %u corrupted (size %zu)", k, n);
    }
}

/* ---- options and the driver ------------------------------------------------ */

typedef struct opts {
    int modes;            /* MODE_* mask */
    size_t sizes[16];
    int nsizes;
    uint64_t iters;       /* messages per measurement; 0 = by size */
    uint32_t reps;
    uint32_t window;
    int csv;
    int complete_actions;
    int callgrind;
    int no_copy;
    int send_how;
    int recv_how;
    int wire_nicsim;      /* --wire nicsim */
} opts;

static const char *send_name(int how)
{
    return how == SEND_INLINE    ? "quay_send_inline"
           : how == SEND_PERSIST ? "persistent requests"
           : how == SEND_COPY    ? "quay_isend with QUAY_CFG_SEND_COPY"
                                 : "quay_isend";
}

static const char *recv_name(int how)
{
    return how == RECV_PERSIST ? "persistent requests"
           : how == RECV_LATE   ? "quay_irecv after the arrival"
           : how == RECV_INLINE ? "quay_recv_inline after the arrival"
                                : "quay_irecv";
}

static const size_t default_sizes[] = {0, 8, 64, 1024, 8192, 65536, 1048576};

static void usage(void)
{
    fputs(
        "usage: bench_engine [--mode pingpong|stream|all] [--size S]... [--iters N]\n"
        "                    [--reps R] [--window W] [--csv] [--complete-actions]\n"
        "                    [--send isend|inline|copy|persistent] [--recv irecv|persistent|late|inline]\n"
        "                    [--wire mem|nicsim]\n"
        "       bench_engine --callgrind [--iters N] [--size S] [--no-copy]\n"
        "                    [--mode stream [--window W]] [--wire mem|nicsim]\n"
        "                    [--send isend|inline|copy|persistent]\n"
        "                    [--recv irecv|persistent|late|inline]\n"
        "  --size S       message size (repeatable; K/M suffixes); default\n"
        "                 0 8 64 1K 8K 64K 1M\n"
        "  --iters N      messages per measurement (default: by size); with\n"
        "                 --callgrind: messages bracketed (default 10000)\n"
        "  --reps R       measurements per row; min and median reported (5)\n"
        "  --window W     stream: messages in flight per round (64)\n"
        "  --send inline  sends by quay_send_inline (no send request) where it\n"
        "                 takes them (<= QUAY_INLINE_MAX bytes), else quay_isend\n"
        "  --send copy    quay_isend on engines with QUAY_CFG_SEND_COPY: the sends\n"
        "                 --send inline would take complete at the call\n"
        "  --send persistent, --recv persistent\n"
        "                 persistent requests (quay_send_init / quay_recv_init),\n"
        "                 made once per buffer and started by quay_start (a\n"
        "                 stream's receive window: one quay_startall)\n"
        "  --recv late    (stream) the window's messages arrive first, then each\n"
        "                 is received by quay_irecv (complete at the call)\n"
        "  --recv inline  (stream) as late, received by quay_recv_inline (no\n"
        "                 request)\n"
        "  --wire nicsim  carry the packets through the simulator (adapters/nicsim:\n"
        "                 FIFO links, no faults, untimed = zero latency) instead of\n"
        "                 the bench's own one-buffer wire (mem, the default)\n",
        stderr);
    exit(2);
}

static void parse(int argc, char **argv, opts *o)
{
    memset(o, 0, sizeof *o);
    o->modes = MODE_PINGPONG | MODE_STREAM;
    o->reps = 5;
    o->window = 64;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t u;
        if (strcmp(a, "--mode") == 0 && v) {
            i++;
            if (strcmp(v, "pingpong") == 0)
                o->modes = MODE_PINGPONG;
            else if (strcmp(v, "stream") == 0)
                o->modes = MODE_STREAM;
            else if (strcmp(v, "all") == 0)
                o->modes = MODE_PINGPONG | MODE_STREAM;
            else
                usage();
        } else if (strcmp(a, "--size") == 0 && v) {
            i++;
            if (o->nsizes == 16 || bench_parse_size(v, &o->sizes[o->nsizes]) != 0)
                usage();
            o->nsizes++;
        } else if (strcmp(a, "--iters") == 0 && v && bench_parse_u64(v, &u) == 0 && u > 0) {
            i++;
            o->iters = u;
        } else if (strcmp(a, "--reps") == 0 && v && bench_parse_u64(v, &u) == 0 &&
                   u > 0 && u <= 1000) {
            i++;
            o->reps = (uint32_t)u;
        } else if (strcmp(a, "--window") == 0 && v && bench_parse_u64(v, &u) == 0 &&
                   u > 0 && u <= 1024) {
            i++;
            o->window = (uint32_t)u;
        } else if (strcmp(a, "--csv") == 0) {
            o->csv = 1;
        } else if (strcmp(a, "--complete-actions") == 0) {
            o->complete_actions = 1;
        } else if (strcmp(a, "--callgrind") == 0) {
            o->callgrind = 1;
        } else if (strcmp(a, "--no-copy") == 0) {
            o->no_copy = 1;
        } else if (strcmp(a, "--send") == 0 && v) {
            i++;
            if (strcmp(v, "inline") == 0)
                o->send_how = SEND_INLINE;
            else if (strcmp(v, "persistent") == 0)
                o->send_how = SEND_PERSIST;
            else if (strcmp(v, "copy") == 0)
                o->send_how = SEND_COPY;
            else if (strcmp(v, "isend") != 0)
                usage();
        } else if (strcmp(a, "--wire") == 0 && v) {
            i++;
            if (strcmp(v, "nicsim") == 0)
                o->wire_nicsim = 1;
            else if (strcmp(v, "mem") != 0)
                usage();
        } else if (strcmp(a, "--recv") == 0 && v) {
            i++;
            if (strcmp(v, "persistent") == 0)
                o->recv_how = RECV_PERSIST;
            else if (strcmp(v, "late") == 0)
                o->recv_how = RECV_LATE;
            else if (strcmp(v, "inline") == 0)
                o->recv_how = RECV_INLINE;
            else if (strcmp(v, "irecv") != 0)
                usage();
        } else {
            usage();
        }
    }
    if (o->wire_nicsim && o->no_copy)
        usage(); /* the simulator always copies a packet onto its link */
    if ((o->recv_how == RECV_LATE || o->recv_how == RECV_INLINE) && o->modes != MODE_STREAM)
        usage(); /* a receive after the arrival is a stream's */
}

/* Messages per measurement for a size: about 256 MiB of payload, clamped. */
static uint64_t auto_iters(size_t size)
{
    uint64_t n = ((uint64_t)1 << 28) / (size > 256 ? size : 256);
    if (n > 500000)
        n = 500000;
    if (n < 500)
        n = 500;
    return n;
}

/* The callgrind unit of --mode stream: one round of W messages. */
static void stream_unit(bench *b, bufs *bf)
{
    stream_round(b, bf);
}

static int run_callgrind(const opts *o)
{
    size_t size = o->nsizes ? o->sizes[0] : 8;
    uint64_t n = o->iters ? o->iters : 10000;
    /* --mode stream: rounds of W back-to-back messages (W receives posted,
     * W sends, one pump, everything tested and freed); else one message
     * at a time, its receive posted first. */
    int stream = o->modes == MODE_STREAM;
    uint32_t w = stream ? o->window : 1;
    uint64_t units = (n + w - 1) / w;
    n = units * w;
    bench b;
    bufs bf;
    bench_open(&b, o->complete_actions, o->no_copy, o->wire_nicsim, o->send_how == SEND_COPY);
    b.send_how = o->send_how;
    b.recv_how = o->recv_how;
    bufs_open(&bf, size, w);
    verify(&b, &bf, MODE_STREAM);
    void (*unit)(bench *, bufs *) =
        stream ? stream_unit
        : o->send_how == SEND_ISEND && o->recv_how == RECV_IRECV ? one_message
                                                                 : one_message_as;
    if (o->send_how == SEND_INLINE && size > QUAY_INLINE_MAX)
        bench_die("--send inline takes at most %d bytes", QUAY_INLINE_MAX);
    for (uint64_t i = 0; i < 1000 / w + 1; i++) /* warm-up: pools, branch history */
        unit(&b, &bf);
    bench_cg_start();
    bench_cg_toggle();
    for (uint64_t i = 0; i < units; i++)
        unit(&b, &bf);
    bench_cg_toggle();
    bench_cg_stop();
    printf("callgrind: %llu messages of %zu bytes bracketed (%s; callgrind.h %s, "
           "wire %s, wire payload copy %s, sends by %s, receives by %s)\n",
           (unsigned long long)n, size, stream ? "stream" : "one at a time",
           BENCH_HAVE_CALLGRIND ? "yes" : "no", o->wire_nicsim ? "nicsim" : "mem",
           o->no_copy ? "off" : "on", send_name(o->send_how), recv_name(o->recv_how));
    printf("callgrind_msgs=%llu\n", (unsigned long long)n);
    bufs_close(&b, &bf);
    bench_close(&b);
    return 0;
}

int main(int argc, char **argv)
{
    opts o;
    parse(argc, argv, &o);
    if (o.callgrind)
        return run_callgrind(&o);
    if (o.nsizes == 0) {
        o.nsizes = (int)(sizeof default_sizes / sizeof default_sizes[0]);
        memcpy(o.sizes, default_sizes, sizeof default_sizes);
    }

    quay_config dflt;
    quay_config_default(&dflt);
    memset(dflt.key_secret, 0x5a, sizeof dflt.key_secret); /* (a simulation: any fixed secret) */
    if (o.csv) {
        printf("bench,mode,size,protocol,window,complete_actions,msgs,reps,"
               "ns_per_msg_min,ns_per_msg_median,msgs_per_s,mbytes_per_s\n");
    } else {
        printf("# bench_engine: 2 engines, %s, completion by %s;\n"
               "# eager_max %zu, frag %zu;\n"
               "# sends by %s, receives by %s.\n"
               "# ns/msg: best (min) and median of %u runs; pingpong ns/msg = RTT/2.\n",
               o.wire_nicsim ? "wired by nicsim (FIFO links, zero latency, auto_pull; the\n"
                               "# packet copied onto its link)"
                             : "zero-latency in-memory wire (header+payload\n"
                               "# copied once per SEND)",
               o.complete_actions ? "COMPLETE actions + quay_req_test" : "quay_req_test",
               dflt.eager_max, dflt.frag_size,
               o.send_how == SEND_INLINE
                   ? "quay_send_inline up to QUAY_INLINE_MAX bytes (proto inline)"
                   : send_name(o.send_how),
               recv_name(o.recv_how),
               o.reps);
        printf("%-9s %9s %-6s %6s %9s %12s %12s %13s %11s\n", "mode", "size", "proto",
               "window", "msgs", "ns/msg min", "ns/msg med", "msgs/s", "MB/s");
    }
    for (int mi = 0; mi < 2; mi++) {
        int mode = mi == 0 ? MODE_PINGPONG : MODE_STREAM;
        if (!(o.modes & mode))
            continue;
        for (int si = 0; si < o.nsizes; si++) {
            size_t size = o.sizes[si];
            uint32_t window = mode == MODE_STREAM ? o.window : 1;
            uint64_t per = msgs_per_round(mode, window);
            uint64_t want = o.iters ? o.iters : auto_iters(size);
            uint64_t rounds = (want + per - 1) / per;
            uint64_t msgs = rounds * per;
            bench b;
            bufs bf;
            bench_open(&b, o.complete_actions, o.no_copy, o.wire_nicsim,
                       o.send_how == SEND_COPY);
            b.send_how = o.send_how;
            b.recv_how = o.recv_how;
            bufs_open(&bf, size, window);
            verify(&b, &bf, mode);
            run_rounds(&b, &bf, mode, rounds / 10 + 1); /* warm-up */
            double ns[1000];
            for (uint32_t r = 0; r < o.reps; r++) {
                uint64_t t0 = bench_now_ns();
                run_rounds(&b, &bf, mode, rounds);
                uint64_t t1 = bench_now_ns();
                ns[r] = (double)(t1 - t0) / (double)msgs;
            }
            double med = bench_median(ns, o.reps);
            double best = bench_min(ns, o.reps);
            double mps = 1e9 / best;
            double mbs = mps * (double)size / 1e6;
            const char *proto = o.send_how == SEND_INLINE && size <= QUAY_INLINE_MAX ? "inline"
                                : o.send_how == SEND_COPY && size <= QUAY_INLINE_MAX ? "copy"
                                : size <= dflt.eager_max                 ? "eager"
                                                                         : "rndv";
            const char *mname = mode == MODE_PINGPONG ? "pingpong" : "stream";
            char lbl[32];
            if (o.csv)
                printf("%s,%s,%zu,%s,%u,%d,%llu,%u,%.1f,%.1f,%.0f,%.1f\n",
                       o.wire_nicsim ? "engine_nicsim" : "engine", mname,
                       size, proto, window, o.complete_actions,
                       (unsigned long long)msgs, o.reps, best, med, mps, mbs);
            else
                printf("%-9s %9s %-6s %6u %9llu %12.1f %12.1f %13.0f %11.1f\n", mname,
                       bench_size_label(size, lbl, sizeof lbl), proto, window,
                       (unsigned long long)msgs, best, med, mps, mbs);
            fflush(stdout);
            bufs_close(&b, &bf);
            bench_close(&b);
        }
    }
    return 0;
}
