/*
 * qbench.c — MPI point-to-point and collective benchmarks, one source for
 * every MPI: built with MPICH's mpicc (qbench_mpich, bench/compare.sh)
 * and with quay's MPI binding (qbench_quay, mpi/), so that both run
 * exactly the same loops. Standard MPI only (<mpi.h>).
 *
 *   mpiexec -n 2 qbench_mpich [options] [bench...]
 *   quayrun -n 2 [--transport tcp] qbench_quay [options] [bench...]
 *
 * Benchmarks (all by default, in this order):
 *   latency    ping-pong with MPI_Send / MPI_Recv between ranks 0 and 1;
 *              half the round trip, us. Sizes 0 B .. 4 MiB.
 *   bw         streaming: rank 0 posts a window of MPI_Isend, rank 1 a
 *              window of MPI_Irecv, both MPI_Waitall, then rank 1 sends a
 *              4-byte ack; MB/s (10^6 B/s) of payload. Sizes 1 B .. 4 MiB.
 *   bibw       both directions at once: each of ranks 0 and 1 posts a
 *              window of MPI_Irecv and then of MPI_Isend and waits for
 *              all; no ack (each window waits for the peer's); MB/s of
 *              payload both ways together.
 *   rate       bw's loop with 8-byte messages; messages per second.
 *   barrier    MPI_Barrier back to back; us per barrier.
 *   bcast      MPI_Bcast from rank 0, each call timed alone and followed
 *              by an untimed MPI_Barrier (as the OSU benchmarks do: a
 *              broadcast does not synchronise); us. 8 B .. 1 MiB.
 *   allreduce  MPI_Allreduce of doubles, MPI_SUM, back to back; us.
 *              8 B (one double) .. 1 MiB.
 *   reduce     MPI_Reduce of doubles, MPI_SUM, to rank 0, each call timed
 *              alone and followed by an untimed MPI_Barrier (as bcast,
 *              and as OSU's osu_reduce: a reduce does not synchronise the
 *              root with the others); us. 8 B .. 1 MiB.
 *   match      McMPI's InOrderTags / ReverseOrderTags: the cost of one
 *              receive against the depth D of the posted or of the
 *              unexpected queue; us per receive. Rank 1 sends D 8-byte
 *              messages with tags T, T+1, .., T+D-1 (T = 1000) to rank 0,
 *              which posts D MPI_Irecv, one per tag, in the same order
 *              ("in": every message or receive matches the head of the
 *              other queue) or in reverse ("rev": every one matches its
 *              tail, so a linear queue is searched through: D(D-1)/2
 *              failed compares per batch), then MPI_Waitall. Four
 *              variants, each at depths 1, 10, 100, 1000, 10000 (--quick:
 *              1, 100, 10000; --depth):
 *                match_posted_in, match_posted_rev: rank 0 posts the D
 *                  receives, then sends rank 1 a 0-byte "go"; rank 1
 *                  sends the D messages, which all find their receive
 *                  posted. Timed at rank 0: posting, go, Waitall (so the
 *                  sender's cost and one message's latency are in it).
 *                match_unexp_in, match_unexp_rev: rank 0 sends "go";
 *                  rank 1 sends the D messages and then a sentinel with
 *                  another tag, which rank 0 receives first (McMPI's
 *                  Ch. 5 set-up): by then all D sit in the unexpected
 *                  queue (delivery is in order per peer). Timed at rank
 *                  0: posting the D receives and Waitall, all local.
 *              Value: a batch's time / D. rev - in is the matching's
 *              share: a linear queue costs (rev - in) = t_u (D-1)/2 per
 *              receive, t_u the cost of one failed compare (McMPI's
 *              t_u = 2(t_r - t_i) / (D(D-1)) with batch times); a hashed
 *              one stays flat in D. Up to 16,000 receives outstanding.
 * Point-to-point tests run between ranks 0 and 1 (others only join the
 * bookkeeping); collectives use every rank and report the average of the
 * ranks' times.
 *
 * Window: --window (64) messages, but at most 16 MiB of them (4 at 4
 * MiB, 16 at 1 MiB), each in its own buffer slot on both sides.
 *
 * Method, per benchmark and size: a data check (below); a warm-up that
 * doubles its iteration count (or multiplies it by 8 while far off)
 * until one run takes >= 1/8 of a repetition (rank 0's clock decides for
 * everyone; the first, cold run never decides); then --reps repetitions
 * (7; 3 with --quick) of a timed loop sized from the warm-up to last
 * about --rep-ms (150; 30 with --quick; at least 2 iterations, or 1
 * batch for match), each started after an MPI_Barrier. Printed: the
 * median and the best of the repetitions' time per iteration, converted
 * to the unit ("best" is the fastest repetition: the lowest latency, the
 * highest bandwidth); CSV carries the median (or the best with --stat
 * min). On a small, noisy machine
 * the median is the honest figure, the best the one least touched by
 * other work.
 *
 * Data check, once per size and outside the timed loops: messages (each
 * window slot its own) and broadcasts carry a seeded pattern that the
 * receiver checks byte for byte together with the received count;
 * allreduce and reduce inputs are small integers in doubles, so the sums
 * are exact and are compared exactly (reduce at root 0 and at the last
 * rank, allreduce and reduce in place too); match checks one batch per
 * depth: each receive's tag (the match order), count and pattern. A
 * mismatch aborts the run (MPI_Abort, 2).
 *
 * Output: a table per benchmark (match: one per variant, "size" is the
 * depth), or with --csv the lines "bench,size,value,unit" (after a header
 * line and '#' comments; the last line is "# done"; match's bench is the
 * variant, e.g. match_unexp_rev, and its size the depth).
 */
#include <mpi.h>

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QB_KIB 1024u
#define QB_MIB (1024u * 1024u)
/* Window slots on each side together hold at most this. */
#define QB_SLOT_AREA (16u * QB_MIB)
#define QB_ITERS_MAX 100000000L
#define QB_ITERS_MIN 2L
/* match: payload of each message; most receives outstanding (quay's MPI
 * binding pools 16,384 requests and 16,384 unexpected messages). */
#define QB_MATCH_SIZE 8u
#define QB_DEPTH_MAX 16000

enum { TAG_PING = 11, TAG_STREAM = 12, TAG_ACK = 13, TAG_BI = 14 };
/* match: TAG_MATCH .. TAG_MATCH + depth - 1 (MPI_TAG_UB >= 32767) */
enum { TAG_GO = 15, TAG_SENTINEL = 16, TAG_MATCH = 1000 };

enum {
    B_LATENCY,
    B_BW,
    B_BIBW,
    B_RATE,
    B_BARRIER,
    B_BCAST,
    B_ALLREDUCE,
    B_REDUCE,
    B_MATCH,
    B_COUNT
};

static const char *const bench_names[B_COUNT] = {
    "latency", "bw", "bibw", "rate", "barrier", "bcast", "allreduce", "reduce", "match"};

/* match's variants: bit 0 reverse, bit 1 unexpected. */
enum { M_POSTED_IN, M_POSTED_REV, M_UNEXP_IN, M_UNEXP_REV, M_COUNT };
static const char *const match_names[M_COUNT] = {"match_posted_in", "match_posted_rev",
                                                 "match_unexp_in", "match_unexp_rev"};
static const size_t match_depths[] = {1, 10, 100, 1000, 10000};
static const size_t match_depths_quick[] = {1, 100, 10000};

/* Keep bw_sizes in step with raw_tcp.c. */
static const size_t lat_sizes[] = {0,     1,          8,          64,        512,
                                   4096,  32768,      262144,     1048576,   4194304};
static const size_t bw_sizes[] = {1, 8, 64, 512, 4096, 32768, 262144, 1048576, 4194304};
static const size_t coll_sizes[] = {8, 64, 512, 4096, 32768, 262144, 1048576};

typedef struct qb_opts {
    int csv;
    int use_min;   /* CSV value: 0 median, 1 minimum */
    int reps;
    double rep_s;  /* target duration of one repetition */
    int window;
    size_t max_size;
    size_t only[16]; /* --size: run these sizes only (nonly of them) */
    int nonly;
    int quick;
    size_t depths[16]; /* --depth: match at these depths (ndepths) */
    int ndepths;
    unsigned which; /* bit per B_* */
    unsigned mwhich; /* match: bit per M_* */
} qb_opts;

typedef struct qb {
    qb_opts o;
    int rank, size;
    unsigned char *sbuf, *rbuf; /* QB_SLOT_AREA each */
    MPI_Request *reqs;          /* 2 * window */
    MPI_Status *sts;            /* 2 * window */
    /* MPI_STATUSES_IGNORE, passed through memory: gcc 12 takes MPICH's
     * ((MPI_Status *)1) for an empty array (-Wstringop-overflow). */
    MPI_Status *no_sts;
    double *vals;               /* reps */
    int variant;                /* match: the M_* being run */
    MPI_Request *mreqs;         /* match: QB_DEPTH_MAX + 1 */
    MPI_Status *msts;           /* match: QB_DEPTH_MAX */
} qb;

/* A benchmark's timed loop: `iters` iterations, returns this rank's
 * seconds (only the timed part of each iteration). */
typedef double (*qb_kernel)(qb *b, size_t size, long iters);

/* ---- small helpers ---------------------------------------------------------- */

#if defined(__GNUC__) || defined(__clang__)
__attribute__((noreturn, format(printf, 2, 3)))
#endif
static void qb_fail(const qb *b, const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    fprintf(stderr, "qbench rank %d: ", b != NULL ? b->rank : -1);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 2);
    exit(2); /* not reached */
}

/* xorshift64*: the pattern of `len` bytes for `seed`. */
static uint64_t qb_next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1Dull;
}

static void qb_fill(unsigned char *p, size_t len, uint64_t seed)
{
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < len; i += 8) {
        uint64_t v = qb_next(&s);
        size_t n = len - i < 8 ? len - i : 8;
        memcpy(p + i, &v, n);
    }
}

/* Index of the first byte that differs from the pattern, or -1. */
static long qb_check(const unsigned char *p, size_t len, uint64_t seed)
{
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < len; i += 8) {
        uint64_t v = qb_next(&s);
        size_t n = len - i < 8 ? len - i : 8;
        unsigned char e[8];
        memcpy(e, &v, 8);
        for (size_t k = 0; k < n; k++)
            if (p[i + k] != e[k])
                return (long)(i + k);
    }
    return -1;
}

static int qb_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int qb_window(const qb *b, size_t size)
{
    size_t w = QB_SLOT_AREA / (size > 0 ? size : 1);
    if (w > (size_t)b->o.window)
        w = (size_t)b->o.window;
    return w < 1 ? 1 : (int)w;
}

static int qb_pt2pt(const qb *b)
{
    return b->rank <= 1;
}

/* "4K", "1M", "12" */
static const char *qb_size_str(size_t n, char *buf, size_t cap)
{
    if (n >= QB_MIB && n % QB_MIB == 0)
        snprintf(buf, cap, "%zuM", n / QB_MIB);
    else if (n >= QB_KIB && n % QB_KIB == 0)
        snprintf(buf, cap, "%zuK", n / QB_KIB);
    else
        snprintf(buf, cap, "%zu", n);
    return buf;
}

/* ---- data checks -------------------------------------------------------------- */

static void qb_expect_count(const qb *b, const char *what, const MPI_Status *st, size_t size)
{
    int n = -1;
    MPI_Get_count(st, MPI_BYTE, &n);
    if (n < 0 || (size_t)n != size)
        qb_fail(b, "%s: received %d bytes, expected %zu", what, n, size);
}

static void qb_expect_pattern(const qb *b, const char *what, const unsigned char *p,
                              size_t size, uint64_t seed)
{
    long bad = qb_check(p, size, seed);
    if (bad >= 0)
        qb_fail(b, "%s: %zu-byte message wrong at byte %ld", what, size, bad);
}

static void qb_verify_latency(qb *b, size_t size)
{
    MPI_Status st;
    uint64_t seed = size * 7919u + 1;
    int n = (int)size;
    if (b->rank == 0) {
        qb_fill(b->sbuf, size, seed);
        memset(b->rbuf, 0xEE, size);
        MPI_Send(b->sbuf, n, MPI_BYTE, 1, TAG_PING, MPI_COMM_WORLD);
        MPI_Recv(b->rbuf, n, MPI_BYTE, 1, TAG_PING, MPI_COMM_WORLD, &st);
        qb_expect_count(b, "latency pong", &st, size);
        qb_expect_pattern(b, "latency pong", b->rbuf, size, seed + 1);
    } else if (b->rank == 1) {
        memset(b->rbuf, 0xEE, size);
        MPI_Recv(b->rbuf, n, MPI_BYTE, 0, TAG_PING, MPI_COMM_WORLD, &st);
        qb_expect_count(b, "latency ping", &st, size);
        if (st.MPI_SOURCE != 0 || st.MPI_TAG != TAG_PING)
            qb_fail(b, "latency ping: status source %d tag %d", st.MPI_SOURCE, st.MPI_TAG);
        qb_expect_pattern(b, "latency ping", b->rbuf, size, seed);
        qb_fill(b->sbuf, size, seed + 1);
        MPI_Send(b->sbuf, n, MPI_BYTE, 0, TAG_PING, MPI_COMM_WORLD);
    }
}

/* One window as the timed loops post it, every slot its own pattern:
 * rank 0 -> rank 1 (and back too when `both`). */
static void qb_verify_window(qb *b, size_t size, int both)
{
    int w = qb_window(b, size), n = (int)size, k = 0, ack = 0;
    int peer = 1 - b->rank;
    int sends = b->rank == 0 || both, recvs = b->rank == 1 || both;
    uint64_t seed = size * 104729u + (both ? 77u : 0u);
    if (!qb_pt2pt(b))
        return;
    if (recvs) {
        memset(b->rbuf, 0xEE, (size_t)w * size);
        for (int i = 0; i < w; i++)
            MPI_Irecv(b->rbuf + (size_t)i * size, n, MPI_BYTE, peer, both ? TAG_BI : TAG_STREAM,
                      MPI_COMM_WORLD, &b->reqs[k++]);
    }
    if (sends) {
        for (int i = 0; i < w; i++) {
            qb_fill(b->sbuf + (size_t)i * size, size, seed + (uint64_t)(b->rank * w + i));
            MPI_Isend(b->sbuf + (size_t)i * size, n, MPI_BYTE, peer, both ? TAG_BI : TAG_STREAM,
                      MPI_COMM_WORLD, &b->reqs[k++]);
        }
    }
    MPI_Waitall(k, b->reqs, b->sts);
    if (recvs) {
        for (int i = 0; i < w; i++) {
            qb_expect_count(b, both ? "bibw" : "bw", &b->sts[i], size);
            qb_expect_pattern(b, both ? "bibw" : "bw", b->rbuf + (size_t)i * size, size,
                              seed + (uint64_t)(peer * w + i));
        }
    }
    if (!both) {
        if (b->rank == 1)
            MPI_Send(&ack, 1, MPI_INT, 0, TAG_ACK, MPI_COMM_WORLD);
        else
            MPI_Recv(&ack, 1, MPI_INT, 1, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
}

static void qb_verify_bcast(qb *b, size_t size)
{
    for (int pass = 0; pass < 2; pass++) {
        int root = pass == 0 ? 0 : b->size - 1;
        uint64_t seed = size * 31337u + (uint64_t)root;
        if (b->rank == root)
            qb_fill(b->rbuf, size, seed);
        else
            memset(b->rbuf, 0xEE, size);
        MPI_Bcast(b->rbuf, (int)size, MPI_BYTE, root, MPI_COMM_WORLD);
        qb_expect_pattern(b, "bcast", b->rbuf, size, seed);
    }
}

/* Inputs (rank + 1) * (i % 1021 + 1): every partial sum is an integer
 * below 2^53, so the result is exact whatever the order of additions. */
static void qb_verify_allreduce(qb *b, size_t size)
{
    size_t count = size / sizeof(double);
    double *x = (double *)(void *)b->sbuf, *y = (double *)(void *)b->rbuf;
    double n = (double)b->size;
    for (size_t i = 0; i < count; i++) {
        x[i] = (double)(b->rank + 1) * (double)(i % 1021 + 1);
        y[i] = -1;
    }
    MPI_Allreduce(x, y, (int)count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    for (size_t i = 0; i < count; i++)
        if (y[i] != n * (n + 1) / 2 * (double)(i % 1021 + 1))
            qb_fail(b, "allreduce: element %zu of %zu is %.17g, expected %.17g", i, count, y[i],
                    n * (n + 1) / 2 * (double)(i % 1021 + 1));
    /* In place as well. */
    for (size_t i = 0; i < count; i++)
        y[i] = (double)(b->rank + 1);
    MPI_Allreduce(MPI_IN_PLACE, y, (int)count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    for (size_t i = 0; i < count; i++)
        if (y[i] != n * (n + 1) / 2)
            qb_fail(b, "allreduce (in place): element %zu is %.17g", i, y[i]);
}

/* As allreduce's, at root 0 and at the last rank; the root in place too. */
static void qb_verify_reduce(qb *b, size_t size)
{
    size_t count = size / sizeof(double);
    double *x = (double *)(void *)b->sbuf, *y = (double *)(void *)b->rbuf;
    double n = (double)b->size;
    for (int pass = 0; pass < 2; pass++) {
        int root = pass == 0 ? 0 : b->size - 1;
        for (size_t i = 0; i < count; i++) {
            x[i] = (double)(b->rank + 1) * (double)(i % 1021 + 1);
            y[i] = -1;
        }
        MPI_Reduce(x, y, (int)count, MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD);
        if (b->rank == root)
            for (size_t i = 0; i < count; i++)
                if (y[i] != n * (n + 1) / 2 * (double)(i % 1021 + 1))
                    qb_fail(b, "reduce (root %d): element %zu of %zu is %.17g, expected %.17g",
                            root, i, count, y[i], n * (n + 1) / 2 * (double)(i % 1021 + 1));
    }
    for (size_t i = 0; i < count; i++) {
        x[i] = (double)(b->rank + 1);
        y[i] = (double)(b->rank + 1);
    }
    MPI_Reduce(b->rank == 0 ? MPI_IN_PLACE : (const void *)x, y, (int)count, MPI_DOUBLE, MPI_SUM,
               0, MPI_COMM_WORLD);
    if (b->rank == 0)
        for (size_t i = 0; i < count; i++)
            if (y[i] != n * (n + 1) / 2)
                qb_fail(b, "reduce (root 0 in place): element %zu is %.17g", i, y[i]);
}

/* One batch of match's variant b->variant at `depth` between ranks 0
 * (receiver) and 1 (sender); returns rank 0's timed seconds. `check`:
 * the verifying batch (patterns filled, every receive's tag, count and
 * bytes compared after the timing). */
static double qb_match_batch(qb *b, size_t depth, int check)
{
    int d = (int)depth, rev = b->variant & 1, unexp = (b->variant & 2) != 0;
    double t = 0;
    if (b->rank == 0) {
        double t0 = 0;
        if (check)
            memset(b->rbuf, 0xEE, depth * QB_MATCH_SIZE);
        if (unexp) {
            MPI_Send(NULL, 0, MPI_BYTE, 1, TAG_GO, MPI_COMM_WORLD);
            MPI_Recv(NULL, 0, MPI_BYTE, 1, TAG_SENTINEL, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        t0 = MPI_Wtime();
        for (int i = 0; i < d; i++)
            MPI_Irecv(b->rbuf + (size_t)i * QB_MATCH_SIZE, QB_MATCH_SIZE, MPI_BYTE, 1,
                      TAG_MATCH + (rev ? d - 1 - i : i), MPI_COMM_WORLD, &b->mreqs[i]);
        if (!unexp)
            MPI_Send(NULL, 0, MPI_BYTE, 1, TAG_GO, MPI_COMM_WORLD);
        MPI_Waitall(d, b->mreqs, check ? b->msts : b->no_sts);
        t = MPI_Wtime() - t0;
        if (check) {
            for (int i = 0; i < d; i++) {
                int tag = TAG_MATCH + (rev ? d - 1 - i : i);
                if (b->msts[i].MPI_TAG != tag || b->msts[i].MPI_SOURCE != 1)
                    qb_fail(b, "%s depth %d: receive %d has source %d tag %d, expected 1, %d",
                            match_names[b->variant], d, i, b->msts[i].MPI_SOURCE,
                            b->msts[i].MPI_TAG, tag);
                qb_expect_count(b, match_names[b->variant], &b->msts[i], QB_MATCH_SIZE);
                qb_expect_pattern(b, match_names[b->variant],
                                  b->rbuf + (size_t)i * QB_MATCH_SIZE, QB_MATCH_SIZE,
                                  depth * 4099u + (uint64_t)(tag - TAG_MATCH));
            }
        }
    } else if (b->rank == 1) {
        if (check)
            for (int k = 0; k < d; k++)
                qb_fill(b->sbuf + (size_t)k * QB_MATCH_SIZE, QB_MATCH_SIZE,
                        depth * 4099u + (uint64_t)k);
        MPI_Recv(NULL, 0, MPI_BYTE, 0, TAG_GO, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int k = 0; k < d; k++)
            MPI_Isend(b->sbuf + (size_t)k * QB_MATCH_SIZE, QB_MATCH_SIZE, MPI_BYTE, 0,
                      TAG_MATCH + k, MPI_COMM_WORLD, &b->mreqs[k]);
        if (unexp)
            MPI_Isend(NULL, 0, MPI_BYTE, 0, TAG_SENTINEL, MPI_COMM_WORLD, &b->mreqs[d++]);
        MPI_Waitall(d, b->mreqs, b->no_sts);
    }
    return t;
}

static void qb_verify_match(qb *b, size_t depth)
{
    (void)qb_match_batch(b, depth, 1);
}

/* ---- timed loops -------------------------------------------------------------- */

static double qb_k_latency(qb *b, size_t size, long iters)
{
    int n = (int)size;
    double t0 = MPI_Wtime();
    if (b->rank == 0) {
        for (long i = 0; i < iters; i++) {
            MPI_Send(b->sbuf, n, MPI_BYTE, 1, TAG_PING, MPI_COMM_WORLD);
            MPI_Recv(b->rbuf, n, MPI_BYTE, 1, TAG_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    } else if (b->rank == 1) {
        for (long i = 0; i < iters; i++) {
            MPI_Recv(b->rbuf, n, MPI_BYTE, 0, TAG_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(b->sbuf, n, MPI_BYTE, 0, TAG_PING, MPI_COMM_WORLD);
        }
    }
    return MPI_Wtime() - t0;
}

/* bw and rate: one iteration is one window and its ack. */
static double qb_k_stream(qb *b, size_t size, long iters)
{
    int w = qb_window(b, size), n = (int)size, ack = 0;
    double t0 = MPI_Wtime();
    if (b->rank == 0) {
        for (long it = 0; it < iters; it++) {
            for (int i = 0; i < w; i++)
                MPI_Isend(b->sbuf + (size_t)i * size, n, MPI_BYTE, 1, TAG_STREAM,
                          MPI_COMM_WORLD, &b->reqs[i]);
            MPI_Waitall(w, b->reqs, b->no_sts);
            MPI_Recv(&ack, 1, MPI_INT, 1, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    } else if (b->rank == 1) {
        for (long it = 0; it < iters; it++) {
            for (int i = 0; i < w; i++)
                MPI_Irecv(b->rbuf + (size_t)i * size, n, MPI_BYTE, 0, TAG_STREAM,
                          MPI_COMM_WORLD, &b->reqs[i]);
            MPI_Waitall(w, b->reqs, b->no_sts);
            MPI_Send(&ack, 1, MPI_INT, 0, TAG_ACK, MPI_COMM_WORLD);
        }
    }
    return MPI_Wtime() - t0;
}

static double qb_k_bibw(qb *b, size_t size, long iters)
{
    int w = qb_window(b, size), n = (int)size, peer = 1 - b->rank;
    double t0 = MPI_Wtime();
    if (qb_pt2pt(b)) {
        for (long it = 0; it < iters; it++) {
            for (int i = 0; i < w; i++)
                MPI_Irecv(b->rbuf + (size_t)i * size, n, MPI_BYTE, peer, TAG_BI,
                          MPI_COMM_WORLD, &b->reqs[i]);
            for (int i = 0; i < w; i++)
                MPI_Isend(b->sbuf + (size_t)i * size, n, MPI_BYTE, peer, TAG_BI,
                          MPI_COMM_WORLD, &b->reqs[w + i]);
            MPI_Waitall(2 * w, b->reqs, b->no_sts);
        }
    }
    return MPI_Wtime() - t0;
}

static double qb_k_barrier(qb *b, size_t size, long iters)
{
    (void)b;
    (void)size;
    double t0 = MPI_Wtime();
    for (long i = 0; i < iters; i++)
        MPI_Barrier(MPI_COMM_WORLD);
    return MPI_Wtime() - t0;
}

static double qb_k_bcast(qb *b, size_t size, long iters)
{
    double t = 0;
    for (long i = 0; i < iters; i++) {
        double t0 = MPI_Wtime();
        MPI_Bcast(b->rbuf, (int)size, MPI_BYTE, 0, MPI_COMM_WORLD);
        t += MPI_Wtime() - t0;
        MPI_Barrier(MPI_COMM_WORLD);
    }
    return t;
}

static double qb_k_allreduce(qb *b, size_t size, long iters)
{
    int count = (int)(size / sizeof(double));
    double t0 = MPI_Wtime();
    for (long i = 0; i < iters; i++)
        MPI_Allreduce(b->sbuf, b->rbuf, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return MPI_Wtime() - t0;
}

static double qb_k_reduce(qb *b, size_t size, long iters)
{
    int count = (int)(size / sizeof(double));
    double t = 0;
    for (long i = 0; i < iters; i++) {
        double t0 = MPI_Wtime();
        MPI_Reduce(b->sbuf, b->rbuf, count, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        t += MPI_Wtime() - t0;
        MPI_Barrier(MPI_COMM_WORLD);
    }
    return t;
}

/* match: one iteration is one batch of `size` (= depth) receives. */
static double qb_k_match(qb *b, size_t size, long iters)
{
    double t = 0;
    if (qb_pt2pt(b))
        for (long i = 0; i < iters; i++)
            t += qb_match_batch(b, size, 0);
    return t;
}

/* ---- measurement and output --------------------------------------------------- */

typedef struct qb_result {
    double med_s, min_s; /* seconds per iteration */
    long iters;
} qb_result;

/* Warm up and calibrate, then the repetitions. `coll`: average the ranks'
 * times; else rank 0's time counts. Meaningful at rank 0. */
static qb_result qb_measure(qb *b, qb_kernel k, size_t size, int coll)
{
    qb_result r = {0, 0, 0};
    long w = 1;
    double t0;
    /* The first round is cold (first contact, page faults): it never
     * decides. */
    for (int round = 0;; round++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double start = MPI_Wtime();
        k(b, size, w);
        t0 = MPI_Wtime() - start;
        MPI_Bcast(&t0, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD); /* rank 0 decides */
        if (round == 0)
            continue;
        if (t0 >= b->o.rep_s / 8 || w >= QB_ITERS_MAX / 2)
            break;
        w *= t0 < b->o.rep_s / 256 ? 8 : 2;
    }
    double est = t0 > 0 ? b->o.rep_s * (double)w / t0 : (double)QB_ITERS_MAX;
    /* A match batch is itself many receives (up to a second each for a
     * linear queue at depth 10000): one per repetition will do. */
    long min_iters = k == qb_k_match ? 1 : QB_ITERS_MIN;
    r.iters = est < (double)min_iters      ? min_iters
              : est > (double)QB_ITERS_MAX ? QB_ITERS_MAX
                                            : (long)est;
    for (int i = 0; i < b->o.reps; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t = k(b, size, r.iters);
        if (coll) {
            double sum = 0;
            MPI_Allreduce(&t, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            t = sum / b->size;
        }
        b->vals[i] = t / (double)r.iters;
    }
    qsort(b->vals, (size_t)b->o.reps, sizeof b->vals[0], qb_cmp_double);
    r.min_s = b->vals[0];
    int m = b->o.reps;
    r.med_s = m % 2 ? b->vals[m / 2] : (b->vals[m / 2 - 1] + b->vals[m / 2]) / 2;
    return r;
}

/* Seconds per iteration -> the benchmark's unit. */
static double qb_value(const qb *b, int id, size_t size, double s)
{
    double w = (double)qb_window(b, size);
    switch (id) {
    case B_LATENCY:
        return s / 2 * 1e6;
    case B_BW:
        return w * (double)size / s / 1e6;
    case B_BIBW:
        return 2 * w * (double)size / s / 1e6;
    case B_RATE:
        return w / s;
    case B_MATCH:
        return s / (double)size * 1e6; /* per receive */
    default:
        return s * 1e6;
    }
}

static const char *qb_name(const qb *b, int id)
{
    return id == B_MATCH ? match_names[b->variant] : bench_names[id];
}

static const char *qb_unit(int id)
{
    switch (id) {
    case B_BW:
    case B_BIBW:
        return "MB/s";
    case B_RATE:
        return "msg/s";
    default:
        return "us";
    }
}

static void qb_section(const qb *b, int id)
{
    static const char *const what[B_COUNT] = {
        "ping-pong, half round trip (lower is better)",
        "streaming, window of MPI_Isend + ack (higher is better)",
        "both directions at once, payload of both (higher is better)",
        "8-byte messages, window + ack (higher is better)",
        "MPI_Barrier back to back (lower is better)",
        "MPI_Bcast from rank 0, barrier between calls (lower is better)",
        "MPI_Allreduce, doubles, MPI_SUM (lower is better)",
        "MPI_Reduce to rank 0, doubles, MPI_SUM, barrier between calls (lower is better)",
        NULL,
    };
    static const char *const mwhat[M_COUNT] = {
        "receives posted first, messages in post order; per receive (lower is better)",
        "receives posted first, messages in reverse post order; per receive (lower is "
        "better)",
        "messages unexpected, receives posted in arrival order; per receive (lower is better)",
        "messages unexpected, receives posted in reverse arrival order; per receive (lower is "
        "better)",
    };
    if (b->rank != 0 || b->o.csv)
        return;
    printf("\n## %s [%s]: %s\n", qb_name(b, id), qb_unit(id),
           id == B_MATCH ? mwhat[b->variant] : what[id]);
    printf("%8s %12s %12s %10s%s\n", id == B_MATCH ? "depth" : "size", "median", "best", "iters",
           id == B_BW || id == B_BIBW || id == B_RATE ? "  window" : "");
    fflush(stdout);
}

static void qb_row(const qb *b, int id, size_t size, const qb_result *r)
{
    char sz[32];
    double med = qb_value(b, id, size, r->med_s), mn = qb_value(b, id, size, r->min_s);
    if (b->rank != 0)
        return;
    if (b->o.csv) {
        printf("%s,%zu,%.6g,%s\n", qb_name(b, id), size, b->o.use_min ? mn : med, qb_unit(id));
    } else {
        int prec = id == B_RATE ? 0 : id == B_BW || id == B_BIBW ? 1 : 3;
        printf("%8s %12.*f %12.*f %10ld", qb_size_str(size, sz, sizeof sz), prec, med, prec, mn,
               r->iters);
        if (id == B_BW || id == B_BIBW || id == B_RATE)
            printf("  %6d", qb_window(b, size));
        printf("\n");
    }
    fflush(stdout);
}

static void qb_run(qb *b, int id)
{
    const size_t *sizes = lat_sizes;
    size_t nsizes = sizeof lat_sizes / sizeof lat_sizes[0];
    qb_kernel k = qb_k_latency;
    int coll = 0;
    switch (id) {
    case B_LATENCY:
        break;
    case B_BW:
    case B_BIBW:
        sizes = bw_sizes;
        nsizes = sizeof bw_sizes / sizeof bw_sizes[0];
        k = id == B_BW ? qb_k_stream : qb_k_bibw;
        break;
    case B_RATE:
        sizes = bw_sizes + 1; /* 8 B */
        nsizes = 1;
        k = qb_k_stream;
        break;
    case B_BARRIER:
        sizes = lat_sizes; /* size 0 */
        nsizes = 1;
        k = qb_k_barrier;
        coll = 1;
        break;
    case B_MATCH:
        if (b->o.ndepths > 0) {
            sizes = b->o.depths;
            nsizes = (size_t)b->o.ndepths;
        } else if (b->o.quick) {
            sizes = match_depths_quick;
            nsizes = sizeof match_depths_quick / sizeof match_depths_quick[0];
        } else {
            sizes = match_depths;
            nsizes = sizeof match_depths / sizeof match_depths[0];
        }
        k = qb_k_match;
        break;
    default:
        sizes = coll_sizes;
        nsizes = sizeof coll_sizes / sizeof coll_sizes[0];
        k = id == B_BCAST ? qb_k_bcast : id == B_REDUCE ? qb_k_reduce : qb_k_allreduce;
        coll = 1;
        break;
    }
    if (!coll && b->size < 2) {
        if (b->rank == 0 && !b->o.csv)
            printf("\n## %s: skipped (needs 2 ranks)\n", bench_names[id]);
        return;
    }
    qb_section(b, id);
    for (size_t i = 0; i < nsizes; i++) {
        size_t size = sizes[i];
        int listed = b->o.nonly == 0 || id == B_MATCH; /* match: --depth */
        for (int j = 0; j < b->o.nonly; j++)
            listed |= b->o.only[j] == size;
        if ((size > b->o.max_size && id != B_MATCH) || !listed)
            continue;
        switch (id) {
        case B_LATENCY:
            qb_verify_latency(b, size);
            break;
        case B_BW:
        case B_RATE:
            qb_verify_window(b, size, 0);
            break;
        case B_BIBW:
            qb_verify_window(b, size, 1);
            break;
        case B_BCAST:
            qb_verify_bcast(b, size);
            break;
        case B_ALLREDUCE:
            qb_verify_allreduce(b, size);
            break;
        case B_REDUCE:
            qb_verify_reduce(b, size);
            break;
        case B_MATCH:
            qb_verify_match(b, size);
            break;
        default:
            break;
        }
        qb_result r = qb_measure(b, k, size, coll);
        qb_row(b, id, size, &r);
    }
}

/* ---- options ------------------------------------------------------------------ */

static void qb_usage(FILE *f)
{
    fprintf(f,
            "usage: qbench [options] [BENCH ...]\n"
            "  BENCH: latency bw bibw rate barrier bcast allreduce reduce match (all by\n"
            "  default), or one variant of match: match_posted_in match_posted_rev\n"
            "  match_unexp_in match_unexp_rev\n"
            "  --csv           print bench,size,value,unit lines instead of tables\n"
            "  --quick         3 repetitions of ~30 ms (default: 7 of ~150 ms); match at\n"
            "                  depths 1, 100, 10000 (default: 1, 10, 100, 1000, 10000)\n"
            "  --reps N        repetitions per point (median and best of them)\n"
            "  --rep-ms MS     target duration of one repetition\n"
            "  --stat S        value in CSV: median (default) or min (the best repetition)\n"
            "  --window W      messages per window in bw / bibw / rate (default 64)\n"
            "  --max-size B    skip sizes above B bytes (K and M suffixes)\n"
            "  --size B        run this size only (repeatable; barrier's size is 0)\n"
            "  --depth D       match at this depth only (repeatable; 1..16000)\n");
}

static int qb_parse_size(const char *s, size_t *out)
{
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s)
        return -1;
    if (*end == 'K' || *end == 'k')
        v *= QB_KIB, end++;
    else if (*end == 'M' || *end == 'm')
        v *= QB_MIB, end++;
    if (*end != '\0')
        return -1;
    *out = (size_t)v;
    return 0;
}

/* 0: run; 1: --help; 2: error (message printed to err: rank 0's
 * stderr, /dev/null at the others). */
static int qb_parse(qb_opts *o, int argc, char **argv, FILE *err)
{
    o->csv = 0;
    o->use_min = 0;
    o->reps = 7;
    o->rep_s = 0.15;
    o->window = 64;
    o->max_size = (size_t)-1;
    o->nonly = 0;
    o->quick = 0;
    o->ndepths = 0;
    o->which = 0;
    o->mwhich = 0;
    int reps = 0;
    double rep_ms = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
            return 1;
        if (strcmp(a, "--csv") == 0) {
            o->csv = 1;
        } else if (strcmp(a, "--quick") == 0) {
            o->reps = 3;
            o->rep_s = 0.03;
            o->quick = 1;
        } else if (strcmp(a, "--reps") == 0 && v != NULL) {
            reps = atoi(v), i++;
            if (reps < 1 || reps > 1000) {
                fprintf(err, "qbench: --reps %s: expected 1..1000\n", v);
                return 2;
            }
        } else if (strcmp(a, "--rep-ms") == 0 && v != NULL) {
            rep_ms = atof(v), i++;
            if (!(rep_ms > 0 && rep_ms <= 60000)) {
                fprintf(err, "qbench: --rep-ms %s: expected 0..60000\n", v);
                return 2;
            }
        } else if (strcmp(a, "--stat") == 0 && v != NULL) {
            i++;
            if (strcmp(v, "median") == 0 || strcmp(v, "min") == 0) {
                o->use_min = strcmp(v, "min") == 0;
            } else {
                fprintf(err, "qbench: --stat %s: expected median or min\n", v);
                return 2;
            }
        } else if (strcmp(a, "--window") == 0 && v != NULL) {
            o->window = atoi(v), i++;
            if (o->window < 1 || o->window > 4096) {
                fprintf(err, "qbench: --window %s: expected 1..4096\n", v);
                return 2;
            }
        } else if (strcmp(a, "--max-size") == 0 && v != NULL) {
            i++;
            if (qb_parse_size(v, &o->max_size) != 0) {
                fprintf(err, "qbench: --max-size %s: expected bytes (K, M suffixes)\n", v);
                return 2;
            }
        } else if (strcmp(a, "--size") == 0 && v != NULL) {
            i++;
            if (o->nonly == (int)(sizeof o->only / sizeof o->only[0]) ||
                qb_parse_size(v, &o->only[o->nonly]) != 0) {
                fprintf(err, "qbench: --size %s: expected bytes (K, M suffixes), 16 at most\n",
                        v);
                return 2;
            }
            o->nonly++;
        } else if (strcmp(a, "--depth") == 0 && v != NULL) {
            char *end = NULL;
            long dv = strtol(v, &end, 10);
            i++;
            if (o->ndepths == (int)(sizeof o->depths / sizeof o->depths[0]) || end == v ||
                *end != '\0' || dv < 1 || dv > QB_DEPTH_MAX) {
                fprintf(err, "qbench: --depth %s: expected 1..%d, 16 at most\n", v,
                        QB_DEPTH_MAX);
                return 2;
            }
            o->depths[o->ndepths++] = (size_t)dv;
        } else if (a[0] != '-') {
            int id, m;
            for (id = 0; id < B_COUNT && strcmp(a, bench_names[id]) != 0; id++)
                ;
            for (m = 0; m < M_COUNT && strcmp(a, match_names[m]) != 0; m++)
                ;
            if (id == B_COUNT && m == M_COUNT) {
                fprintf(err, "qbench: unknown benchmark %s\n", a);
                return 2;
            }
            if (id == B_COUNT) {
                o->which |= 1u << B_MATCH;
                o->mwhich |= 1u << m;
            } else {
                o->which |= 1u << id;
                if (id == B_MATCH)
                    o->mwhich = (1u << M_COUNT) - 1;
            }
        } else {
            fprintf(err, "qbench: unknown option or missing value: %s\n", a);
            qb_usage(err);
            return 2;
        }
    }
    if (reps > 0)
        o->reps = reps;
    if (rep_ms > 0)
        o->rep_s = rep_ms / 1000;
    if (o->which == 0)
        o->which = (1u << B_COUNT) - 1;
    if (o->mwhich == 0)
        o->mwhich = (1u << M_COUNT) - 1;
    return 0;
}

int main(int argc, char **argv)
{
    qb b;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    memset(&b, 0, sizeof b);
    b.no_sts = MPI_STATUSES_IGNORE;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &b.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &b.size);
    FILE *err = stderr, *null = NULL;
    if (b.rank != 0 && (null = fopen("/dev/null", "w")) != NULL)
        err = null;
    int p = qb_parse(&b.o, argc, argv, err);
    if (null != NULL)
        fclose(null);
    if (p != 0) {
        if (b.rank == 0 && p == 1)
            qb_usage(stdout);
        MPI_Finalize();
        return p == 1 ? 0 : 2;
    }
    b.sbuf = malloc(QB_SLOT_AREA);
    b.rbuf = malloc(QB_SLOT_AREA);
    b.reqs = malloc(2 * (size_t)b.o.window * sizeof *b.reqs);
    b.sts = malloc(2 * (size_t)b.o.window * sizeof *b.sts);
    b.vals = malloc((size_t)b.o.reps * sizeof *b.vals);
    b.mreqs = malloc(((size_t)QB_DEPTH_MAX + 1) * sizeof *b.mreqs);
    b.msts = malloc((size_t)QB_DEPTH_MAX * sizeof *b.msts);
    if (b.sbuf == NULL || b.rbuf == NULL || b.reqs == NULL || b.sts == NULL || b.vals == NULL ||
        b.mreqs == NULL || b.msts == NULL)
        qb_fail(&b, "out of memory");
    /* Touch every page now, not in the first timed loop. */
    memset(b.sbuf, 0, QB_SLOT_AREA);
    memset(b.rbuf, 0, QB_SLOT_AREA);

    MPI_Get_library_version(lib, &len);
    lib[strcspn(lib, "\n")] = '\0'; /* MPICH's has several lines */
    if (b.rank == 0) {
        const char *c = b.o.csv ? "# " : "";
        printf("%sqbench: %s\n", c, lib);
        printf("%sranks %d; point-to-point between ranks 0 and 1; each point: median and best "
               "(fastest) of %d repetitions of ~%.0f ms; CSV value: %s\n",
               c, b.size, b.o.reps, b.o.rep_s * 1000, b.o.use_min ? "best" : "median");
        if (b.o.csv)
            printf("bench,size,value,unit\n");
        fflush(stdout);
    }
    for (int id = 0; id < B_COUNT; id++) {
        if (!(b.o.which & (1u << id)))
            continue;
        if (id != B_MATCH) {
            qb_run(&b, id);
            continue;
        }
        for (b.variant = 0; b.variant < M_COUNT; b.variant++)
            if (b.o.mwhich & (1u << b.variant))
                qb_run(&b, id);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (b.rank == 0 && b.o.csv) {
        printf("# done\n"); /* compare.sh: the output is complete */
        fflush(stdout);
    }
    free(b.sbuf);
    free(b.rbuf);
    free(b.reqs);
    free(b.sts);
    free(b.vals);
    free(b.mreqs);
    free(b.msts);
    MPI_Finalize();
    return 0;
}
