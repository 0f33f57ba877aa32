/*
 * bench_match.c — matching cost against queue depth, through the public API.
 *
 * Rank 0 produces real EAGER packets with its own engine (quay_isend, then
 * the SEND actions are captured and their tokens completed); rank 1's
 * engine receives them with quay_on_packet. Packet production is outside
 * the timed region; what is timed is everything rank 1 does per message:
 * post (quay_irecv), arrival (quay_on_packet: decode, sequence, match,
 * deliver, complete), quay_req_test and quay_req_free. Only the matching
 * part depends on the depth, so a flat matcher gives a flat line.
 *
 * Experiments (McMPI's ReverseOrderTags shape, the worst case for a
 * linear queue: every match is at the far end):
 *   posted  D receives with distinct tags 0..D-1 are posted, then D
 *           messages arrive with tags D-1..0 (last-posted first).
 *   unexp   D messages with tags 0..D-1 arrive first (unexpected queue of
 *           depth D), then receives are posted with tags D-1..0.
 * Each round is repeated until at least --msgs messages were matched.
 * --wild P makes P % of the receives ANY_SOURCE (with their own tag, so
 * every message still has exactly one matching receive). Each experiment
 * runs with the fast matcher and with QUAY_CFG_LINEAR_MATCH (the linear
 * oracle as the matcher) for contrast. Each measurement is repeated
 * --reps times, interleaved across the depths of a table, and the minimum
 * is reported (the machine is noisy).
 *
 * --callgrind: one configuration (--exp, one --depth, --wild, --matcher);
 * one warm-up round set, then the timed region of one measurement is
 * bracketed with CALLGRIND_TOGGLE_COLLECT. bench/callgrind.sh divides the
 * instruction counts by the "callgrind_msgs=" line this prints.
 */
#include "bench_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { EXP_POSTED = 1, EXP_UNEXP = 2 };
enum { M_FAST = 1, M_LINEAR = 2 };

#define MAX_DEPTH 10000u
#define POOL 32768u /* requests / descriptors / outs per engine (>= 2 x depth) */

typedef struct run {
    int exp;
    uint32_t depth;
    uint32_t wild_pct;
    int matcher;
    size_t size;
    quay_engine *e[2];
    quay_comm *c[2];
    uint8_t *pkts;   /* nmsgs packets of `stride` bytes */
    size_t stride;
    uint32_t *lens;
    uint64_t nmsgs;  /* per measurement: rounds * depth */
    quay_req **reqs; /* depth receive requests */
    uint8_t *sbuf, *rbuf;
} run;

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL)
        bench_die("out of memory (%zu bytes)", n);
    memset(p, 0, n ? n : 1);
    return p;
}

/* Receive j (tag j) is a wildcard: spread pct % of them evenly, none at
 * depth 1 for pct < 100. */
static int is_wild(uint32_t j, uint32_t pct)
{
    return (uint64_t)(j + 1) * pct / 100 > (uint64_t)j * pct / 100;
}

static void run_open(run *rn, int exp, uint32_t depth, uint32_t wild_pct,
                     int matcher, size_t size, uint64_t want_msgs)
{
    memset(rn, 0, sizeof *rn);
    rn->exp = exp;
    rn->depth = depth;
    rn->wild_pct = wild_pct;
    rn->matcher = matcher;
    rn->size = size;
    quay_config cfg;
    quay_config_default(&cfg);
    memset(cfg.key_secret, 0x5a, sizeof cfg.key_secret); /* (a simulation: any fixed secret) */
    cfg.flags = matcher == M_LINEAR ? QUAY_CFG_LINEAR_MATCH : 0;
    cfg.max_requests = POOL;
    cfg.max_unexpected = POOL;
    cfg.max_out = POOL;
    bench_engines_new(&cfg, rn->e, rn->c);
    uint64_t rounds = (want_msgs + depth - 1) / depth;
    rn->nmsgs = rounds * depth;
    rn->stride = (QUAY_MAX_HEADER + size + 7) & ~(size_t)7;
    rn->pkts = xmalloc((size_t)rn->nmsgs * rn->stride);
    rn->lens = xmalloc((size_t)rn->nmsgs * sizeof *rn->lens);
    rn->reqs = xmalloc(depth * sizeof *rn->reqs);
    rn->sbuf = xmalloc(size);
    rn->rbuf = xmalloc(size);
}

static void run_close(run *rn)
{
    quay_stats st;
    for (int r = 0; r < 2; r++) {
        quay_engine_stats(rn->e[r], &st);
        if (st.reqs_in_use != 0 || st.umsgs_in_use != 0 || st.outs_in_use != 0)
            bench_die("rank %d leaks: %u requests, %u messages, %u outs", r,
                      st.reqs_in_use, st.umsgs_in_use, st.outs_in_use);
        quay_engine_free(rn->e[r]);
    }
    free(rn->pkts);
    free(rn->lens);
    free(rn->reqs);
    free(rn->sbuf);
    free(rn->rbuf);
}

/* Tag of message i in arrival order. */
static int32_t msg_tag(const run *rn, uint64_t i)
{
    uint32_t j = (uint32_t)(i % rn->depth);
    return (int32_t)(rn->exp == EXP_POSTED ? rn->depth - 1 - j : j);
}

/* Rank 0 produces the next nmsgs EAGER packets (untimed). */
static void gen_packets(run *rn)
{
    quay_engine *e = rn->e[0];
    for (uint64_t i = 0; i < rn->nmsgs; i++) {
        quay_req *s;
        bench_check(quay_isend(e, rn->c[0], rn->sbuf, rn->size, 1, msg_tag(rn, i),
                               QUAY_SEND_STANDARD, &s),
                    "quay_isend");
        quay_action a;
        int got = 0;
        while (quay_next_action(e, &a) == 1) {
            if (a.kind != QUAY_ACT_SEND || got++)
                bench_die("sender: expected exactly one SEND per message");
            size_t n = a.iov[0].len + (a.iovcnt == 2 ? a.iov[1].len : 0);
            if (n > rn->stride)
                bench_die("packet of %zu bytes exceeds the stride", n);
            uint8_t *p = rn->pkts + (size_t)i * rn->stride;
            memcpy(p, a.iov[0].base, a.iov[0].len);
            if (a.iovcnt == 2)
                memcpy(p + a.iov[0].len, a.iov[1].base, a.iov[1].len);
            rn->lens[i] = (uint32_t)n;
            bench_check(quay_on_op_done(e, a.token, 0), "quay_on_op_done");
        }
        if (!got || !quay_req_test(s, NULL))
            bench_die("sender: eager send did not complete");
        quay_req_free(e, s);
    }
}

static void post(run *rn, uint32_t j)
{
    int32_t src = is_wild(j, rn->wild_pct) ? QUAY_ANY_SOURCE : 0;
    int rc = quay_irecv(rn->e[1], rn->c[1], rn->rbuf, rn->size, src, (int32_t)j,
                        &rn->reqs[j]);
    if (rc != 0)
        bench_check(rc, "quay_irecv");
}

static void arrive(run *rn, uint64_t i)
{
    int rc = quay_on_packet(rn->e[1], 0, rn->pkts + (size_t)i * rn->stride,
                            rn->lens[i]);
    if (rc != 0)
        bench_check(rc, "quay_on_packet");
}

static void reap(run *rn, uint32_t j)
{
    quay_status st;
    if (!quay_req_test(rn->reqs[j], &st) || st.tag != (int32_t)j || st.source != 0 ||
        st.error != 0)
        bench_die("receive %u: not complete or wrong match (tag %d)", j, st.tag);
    quay_req_free(rn->e[1], rn->reqs[j]);
}

/* The timed region: every round of one measurement. */
static void run_rounds(run *rn)
{
    uint32_t d = rn->depth;
    uint64_t rounds = rn->nmsgs / d;
    for (uint64_t k = 0; k < rounds; k++) {
        uint64_t base = k * d;
        if (rn->exp == EXP_POSTED) {
            for (uint32_t j = 0; j < d; j++)
                post(rn, j);
            for (uint32_t i = 0; i < d; i++)
                arrive(rn, base + i);
        } else {
            for (uint32_t i = 0; i < d; i++)
                arrive(rn, base + i);
            for (uint32_t j = d; j-- > 0;)
                post(rn, j);
        }
        for (uint32_t j = 0; j < d; j++)
            reap(rn, j);
    }
}

/* One measurement: produce packets, then time rank 1's work. ns/msg. */
static double measure(run *rn, int collect)
{
    gen_packets(rn);
    if (collect)
        bench_cg_toggle();
    uint64_t t0 = bench_now_ns();
    run_rounds(rn);
    uint64_t t1 = bench_now_ns();
    if (collect)
        bench_cg_toggle();
    quay_action a;
    if (quay_next_action(rn->e[1], &a) != 0)
        bench_die("receiver: unexpected action");
    return (double)(t1 - t0) / (double)rn->nmsgs;
}

/* ---- options and the driver ------------------------------------------------ */

typedef struct mopts {
    int exps;
    uint32_t depths[8];
    int ndepths;
    uint32_t wilds[4];
    int nwilds;
    int matchers;
    uint64_t msgs;
    uint64_t linear_work; /* cap on depth * msgs for the linear matcher */
    uint32_t reps;
    size_t size;
    int csv;
    int callgrind;
} mopts;

static void usage(void)
{
    fputs("usage: bench_match [--exp posted|unexp|all] [--depth D]... [--wild P]...\n"
          "                   [--matcher fast|linear|both] [--msgs M] [--reps R]\n"
          "                   [--size S] [--csv] [--callgrind]\n"
          "  --depth D   queue depth, repeatable (default 1 10 100 1000 10000; max 10000)\n"
          "  --wild P    percent of ANY_SOURCE receives, repeatable (default 0 10)\n"
          "  --msgs M    messages matched per measurement, at least (default 100000;\n"
          "              the linear matcher does fewer at large depth)\n"
          "  --reps R    measurements per point, minimum reported (default 5)\n"
          "  --size S    payload bytes per message (default 0: matching, not copying)\n"
          "  --callgrind one configuration: --exp, --depth, --wild, --matcher each once\n",
          stderr);
    exit(2);
}

static void parse(int argc, char **argv, mopts *o)
{
    memset(o, 0, sizeof *o);
    o->exps = EXP_POSTED | EXP_UNEXP;
    o->matchers = M_FAST | M_LINEAR;
    o->msgs = 100000;
    o->linear_work = 400000000ull;
    o->reps = 5;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t u;
        if (strcmp(a, "--exp") == 0 && v) {
            i++;
            if (strcmp(v, "posted") == 0)
                o->exps = EXP_POSTED;
            else if (strcmp(v, "unexp") == 0)
                o->exps = EXP_UNEXP;
            else if (strcmp(v, "all") == 0)
                o->exps = EXP_POSTED | EXP_UNEXP;
            else
                usage();
        } else if (strcmp(a, "--matcher") == 0 && v) {
            i++;
            if (strcmp(v, "fast") == 0)
                o->matchers = M_FAST;
            else if (strcmp(v, "linear") == 0)
                o->matchers = M_LINEAR;
            else if (strcmp(v, "both") == 0)
                o->matchers = M_FAST | M_LINEAR;
            else
                usage();
        } else if (strcmp(a, "--depth") == 0 && v && bench_parse_u64(v, &u) == 0 &&
                   u >= 1 && u <= MAX_DEPTH && o->ndepths < 8) {
            i++;
            o->depths[o->ndepths++] = (uint32_t)u;
        } else if (strcmp(a, "--wild") == 0 && v && bench_parse_u64(v, &u) == 0 &&
                   u <= 100 && o->nwilds < 4) {
            i++;
            o->wilds[o->nwilds++] = (uint32_t)u;
        } else if (strcmp(a, "--msgs") == 0 && v && bench_parse_u64(v, &u) == 0 &&
                   u > 0 && u <= 10000000) {
            i++;
            o->msgs = u;
        } else if (strcmp(a, "--reps") == 0 && v && bench_parse_u64(v, &u) == 0 &&
                   u > 0 && u <= 100) {
            i++;
            o->reps = (uint32_t)u;
        } else if (strcmp(a, "--size") == 0 && v && bench_parse_size(v, &o->size) == 0 &&
                   o->size <= 8192) {
            i++;
        } else if (strcmp(a, "--csv") == 0) {
            o->csv = 1;
        } else if (strcmp(a, "--callgrind") == 0) {
            o->callgrind = 1;
        } else {
            usage();
        }
    }
    if (o->ndepths == 0) {
        static const uint32_t d[] = {1, 10, 100, 1000, 10000};
        o->ndepths = 5;
        memcpy(o->depths, d, sizeof d);
    }
    if (o->nwilds == 0) {
        o->wilds[0] = 0;
        o->wilds[1] = 10;
        o->nwilds = 2;
    }
}

/* Messages per measurement: --msgs, but the linear matcher's quadratic
 * rounds are capped at about linear_work queue steps. */
static uint64_t msgs_for(const mopts *o, int matcher, uint32_t depth)
{
    uint64_t m = o->msgs;
    if (matcher == M_LINEAR) {
        uint64_t cap = o->linear_work / depth;
        if (cap < m)
            m = cap;
    }
    return m < depth ? depth : m;
}

static const char *exp_name(int exp) { return exp == EXP_POSTED ? "posted" : "unexp"; }

static int run_callgrind(const mopts *o)
{
    int exp = o->exps == EXP_UNEXP ? EXP_UNEXP : EXP_POSTED;
    int matcher = o->matchers == M_LINEAR ? M_LINEAR : M_FAST;
    uint32_t depth = o->depths[0];
    uint32_t wild = o->wilds[0];
    run rn;
    run_open(&rn, exp, depth, wild, matcher, o->size, msgs_for(o, matcher, depth));
    measure(&rn, 0); /* warm-up */
    bench_cg_start();
    measure(&rn, 1);
    bench_cg_stop();
    printf("callgrind: exp %s depth %u wild %u%% matcher %s size %zu: %llu messages "
           "collected (callgrind.h %s)\n",
           exp_name(exp), depth, wild, matcher == M_FAST ? "fast" : "linear", o->size,
           (unsigned long long)rn.nmsgs, BENCH_HAVE_CALLGRIND ? "yes" : "no");
    printf("callgrind_msgs=%llu\n", (unsigned long long)rn.nmsgs);
    run_close(&rn);
    return 0;
}

int main(int argc, char **argv)
{
    mopts o;
    parse(argc, argv, &o);
    if (o.callgrind)
        return run_callgrind(&o);

    if (o.csv)
        printf("bench,exp,wild_pct,matcher,depth,msgs,reps,ns_per_msg_min,"
               "ns_per_msg_median,ratio_to_first_depth\n");
    else
        printf("# bench_match: rank 1's cost per matched message (irecv + on_packet +\n"
               "# test + free), %zu-byte payloads; receives and arrivals in reverse\n"
               "# order (ReverseOrderTags). ns/msg = min of %u runs (med = median), runs\n"
               "# interleaved across depths; ratio = min ns/msg at this depth / min at\n"
               "# depth %u. linear = QUAY_CFG_LINEAR_MATCH.\n",
               o.size, o.reps, o.depths[0]);

    for (int ei = 0; ei < 2; ei++) {
        int exp = ei == 0 ? EXP_POSTED : EXP_UNEXP;
        if (!(o.exps & exp))
            continue;
        for (int wi = 0; wi < o.nwilds; wi++) {
            uint32_t wild = o.wilds[wi];
            if (!o.csv) {
                printf("\n## %s queue, %u%% ANY_SOURCE receives\n", exp_name(exp), wild);
                printf("%7s %10s %10s %12s %12s %12s %12s %10s %10s\n", "depth",
                       "msgs fast", "msgs lin", "ns/msg fast", "ns/msg lin", "med fast",
                       "med lin", "fast/d1", "lin/d1");
            }
            /* All points of this table are open at once and their
             * measurements interleaved (rep 1 of every point, then rep 2,
             * ...), so a noisy stretch of machine time hits every depth
             * alike instead of skewing one row. */
            static run rns[8][3];
            static double ns[8][3][100];
            for (int di = 0; di < o.ndepths; di++)
                for (int m = M_FAST; m <= M_LINEAR; m++)
                    if (o.matchers & m) {
                        uint32_t depth = o.depths[di];
                        run_open(&rns[di][m], exp, depth, wild, m, o.size,
                                 msgs_for(&o, m, depth));
                        measure(&rns[di][m], 0); /* warm-up */
                    }
            for (uint32_t r = 0; r < o.reps; r++)
                for (int di = 0; di < o.ndepths; di++)
                    for (int m = M_FAST; m <= M_LINEAR; m++)
                        if (o.matchers & m)
                            ns[di][m][r] = measure(&rns[di][m], 0);
            double first[3] = {0, 0, 0};
            for (int di = 0; di < o.ndepths; di++) {
                uint32_t depth = o.depths[di];
                double best[3] = {0, 0, 0};
                double med[3] = {0, 0, 0};
                uint64_t nm[3] = {0, 0, 0};
                for (int m = M_FAST; m <= M_LINEAR; m++) {
                    if (!(o.matchers & m))
                        continue;
                    med[m] = bench_median(ns[di][m], o.reps);
                    best[m] = bench_min(ns[di][m], o.reps);
                    nm[m] = rns[di][m].nmsgs;
                    if (di == 0)
                        first[m] = best[m];
                    run_close(&rns[di][m]);
                    if (o.csv)
                        printf("match,%s,%u,%s,%u,%llu,%u,%.1f,%.1f,%.3f\n",
                               exp_name(exp), wild, m == M_FAST ? "fast" : "linear",
                               depth, (unsigned long long)nm[m], o.reps, best[m], med[m],
                               best[m] / first[m]);
                }
                if (!o.csv) {
                    printf("%7u", depth);
                    for (int m = M_FAST; m <= M_LINEAR; m++)
                        if (o.matchers & m)
                            printf(" %10llu", (unsigned long long)nm[m]);
                        else
                            printf(" %10s", "-");
                    for (int m = M_FAST; m <= M_LINEAR; m++)
                        if (o.matchers & m)
                            printf(" %12.1f", best[m]);
                        else
                            printf(" %12s", "-");
                    for (int m = M_FAST; m <= M_LINEAR; m++)
                        if (o.matchers & m)
                            printf(" %12.1f", med[m]);
                        else
                            printf(" %12s", "-");
                    for (int m = M_FAST; m <= M_LINEAR; m++)
                        if (o.matchers & m)
                            printf(" %9.2fx", best[m] / first[m]);
                        else
                            printf(" %10s", "-");
                    printf("\n");
                }
                fflush(stdout);
            }
        }
    }
    return 0;
}
