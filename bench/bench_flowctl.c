/*
 * bench_flowctl — flow control on the simulator: ACK/NACK against credits.
 *
 *   bench_flowctl [--csv] [--msgs N] [--seed S]
 *
 * Table 1, loss: rank 0 streams N eager messages (512 B) to rank 1, whose
 * receives are all posted first; per-link loss 0, 0.1 %, 1 %, 5 %. Reports
 * simulated time to completion, goodput (messages per simulated ms),
 * retransmissions and NACKs per 1,000 messages, wall time.
 *
 * Table 2, receive buffers: 1..7 senders each send 2,000 messages (256 B)
 * to rank 0 before it posts any receive (posted at 20 simulated ms);
 * receiver bound 64 KiB / 1,024 messages. Reports the receiver's peak
 * buffer use, NACKs, packets thrown away (out of order behind a refusal),
 * retransmissions, and the simulated time from posting to completion.
 *
 * Simulated time: nicsim has no timed mode yet, so one simulator event (a
 * pull, a delivery, an op_done) counts as 1 us of network time, and the
 * clock jumps to the next retransmission deadline when nothing else can
 * happen. Links are FIFO (faults aside) and the scheduler is seeded, so
 * every figure is reproducible; compare modes and loss rates with each
 * other, not with real hardware.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "nicsim.h"

#define NS_PER_EVENT 1000u
#define MAX_RANKS 8

typedef struct run {
    nicsim *sim;
    quay_engine *e[MAX_RANKS];
    quay_comm *c[MAX_RANKS];
    int n;
    uint64_t jump;    /* events the clock jumped */
    uint64_t completes[MAX_RANKS];
} run;

static void on_complete(void *ctx, int32_t rank, quay_req *req, void *user)
{
    run *r = ctx;
    (void)req;
    (void)user;
    r->completes[rank]++;
}

static uint64_t run_now(const run *r)
{
    return (nicsim_now(r->sim) + r->jump) * NS_PER_EVENT;
}

/* Every engine learns the time after every event, as a pump loop that
 * calls quay_on_time each iteration does (its RTT samples need it). */
static void run_timers(run *r)
{
    uint64_t now = run_now(r);
    for (int i = 0; i < r->n; i++) {
        int due = quay_next_deadline(r->e[i]) <= now;
        bench_check(quay_on_time(r->e[i], now), "quay_on_time");
        if (due)
            nicsim_touch(r->sim, i);
    }
}

/* One event, or a jump to the next deadline when nothing can happen.
 * Returns 0 when nothing at all is left to do. */
static int run_step(run *r)
{
    int rc = nicsim_step(r->sim);
    if (rc < 0)
        bench_die("engine error %s", quay_strerror(rc));
    if (rc == 0) {
        uint64_t d = QUAY_TIME_NONE, now = run_now(r);
        for (int i = 0; i < r->n; i++) {
            uint64_t x = quay_next_deadline(r->e[i]);
            if (x < d)
                d = x;
        }
        if (d == QUAY_TIME_NONE)
            return 0;
        if (d > now)
            r->jump += (d - now + NS_PER_EVENT - 1) / NS_PER_EVENT;
    }
    run_timers(r);
    return 1;
}

static void run_new(run *r, int n, const quay_config *base, double loss, uint64_t seed)
{
    nicsim_config nc;
    memset(r, 0, sizeof *r);
    r->n = n;
    nicsim_config_default(&nc);
    nc.nranks = n;
    nc.seed = seed;
    nc.reorder = 0;
    nc.faults.drop_ppm = (uint32_t)(loss * 1e6 + 0.5);
    bench_check(nicsim_new(&nc, &r->sim), "nicsim_new");
    nicsim_set_completion_cb(r->sim, on_complete, r);
    for (int i = 0; i < n; i++) {
        quay_config c = *base;
        c.rank = i;
        c.nranks = n;
        bench_check(quay_engine_new(&c, &r->e[i]), "quay_engine_new");
        bench_check(quay_comm_create(r->e[i], 0, n, NULL, &r->c[i]), "quay_comm_create");
        bench_check(nicsim_attach(r->sim, i, r->e[i]), "nicsim_attach");
    }
}

static void run_free(run *r)
{
    nicsim_free(r->sim);
    for (int i = 0; i < r->n; i++)
        quay_engine_free(r->e[i]);
}

static void base_config(quay_config *c, uint32_t flow)
{
    quay_config_default(c);
    memset(c->key_secret, 0x5a, sizeof c->key_secret); /* (a simulation: any fixed secret) */
    c->nranks = 2;
    c->flow = flow;
    c->flow_window = 64;
    c->rto_init_ns = 200 * NS_PER_EVENT;
    c->rto_max_ns = 20000 * NS_PER_EVENT;
    c->retry_limit = 30;
    c->eager_max = 1024;
}

static const char *mode_name(uint32_t flow)
{
    return flow == QUAY_FLOW_CREDIT ? "credit" : flow == QUAY_FLOW_ACKNACK ? "acknack" : "none";
}

static void stats_sum(const run *r, quay_stats *sum)
{
    memset(sum, 0, sizeof *sum);
    for (int i = 0; i < r->n; i++) {
        quay_stats st;
        quay_engine_stats(r->e[i], &st);
        sum->retransmits += st.retransmits;
        sum->nacks_sent += st.nacks_sent;
        sum->gap_nacks += st.gap_nacks;
        sum->out_of_order_dropped += st.out_of_order_dropped;
        sum->dups_dropped += st.dups_dropped;
        sum->acks_only += st.acks_only;
    }
}

/* ---- table 1: a stream under loss ---------------------------------------- */

static void stream(uint32_t flow, double loss, uint32_t nmsg, uint64_t seed, int csv)
{
    quay_config c;
    run r;
    static uint8_t sbuf[512], rbuf[512];
    base_config(&c, flow);
    c.max_requests = nmsg + 16;
    run_new(&r, 2, &c, loss, seed);
    for (uint32_t i = 0; i < nmsg; i++) {
        quay_req *q;
        bench_check(quay_irecv(r.e[1], r.c[1], rbuf, sizeof rbuf, 0, 1, &q), "irecv");
    }
    for (uint32_t i = 0; i < nmsg; i++) {
        quay_req *q;
        bench_check(quay_isend(r.e[0], r.c[0], sbuf, sizeof sbuf, 1, 1, QUAY_SEND_STANDARD, &q),
                    "isend");
    }
    nicsim_touch(r.sim, 0);
    nicsim_touch(r.sim, 1);
    uint64_t t0 = bench_now_ns();
    while ((r.completes[0] < nmsg || r.completes[1] < nmsg) && run_step(&r))
        ;
    double wall_ms = (double)(bench_now_ns() - t0) / 1e6;
    if (r.completes[0] < nmsg || r.completes[1] < nmsg)
        bench_die("%s at loss %g: stuck at %" PRIu64 "/%" PRIu64, mode_name(flow), loss,
                  r.completes[0], r.completes[1]);
    double sim_ms = (double)run_now(&r) / 1e6;
    quay_stats s;
    stats_sum(&r, &s);
    nicsim_stats ns;
    nicsim_get_stats(r.sim, &ns);
    double k = 1000.0 / nmsg;
    if (csv)
        printf("stream,%s,%g,%u,%.3f,%.1f,%.2f,%.2f,%.2f,%.2f,%" PRIu64 ",%.1f\n",
               mode_name(flow), loss, nmsg, sim_ms, nmsg / sim_ms, (double)s.retransmits * k,
               (double)s.nacks_sent * k, (double)s.gap_nacks * k, (double)s.acks_only * k,
               ns.drops, wall_ms);
    else
        printf("| %-7s | %5.1f %% | %9.2f | %8.0f | %8.2f | %6.2f | %6.2f | %8.1f | %6" PRIu64
               " | %7.1f |\n",
               mode_name(flow), loss * 100, sim_ms, nmsg / sim_ms, (double)s.retransmits * k,
               (double)s.nacks_sent * k, (double)s.gap_nacks * k, (double)s.acks_only * k,
               ns.drops, wall_ms);
    run_free(&r);
}

/* ---- table 2: receive buffers against senders ----------------------------- */

static void flood(uint32_t flow, int senders, uint64_t seed, int csv)
{
    enum { PER = 2000, SIZE = 256 };
    const uint64_t POST_AT_NS = 20000ull * NS_PER_EVENT;
    quay_config c;
    run r;
    static uint8_t sbuf[SIZE], rbuf[SIZE];
    base_config(&c, flow);
    c.unexpected_bytes_max = 64 * 1024;
    c.max_unexpected = 1024;
    c.eager_max = SIZE;
    c.max_requests = (uint32_t)(senders * PER + 16);
    run_new(&r, senders + 1, &c, 0, seed);
    for (int s = 1; s <= senders; s++)
        for (int i = 0; i < PER; i++) {
            quay_req *q;
            bench_check(quay_isend(r.e[s], r.c[s], sbuf, SIZE, 0, 1, QUAY_SEND_STANDARD, &q),
                        "isend");
        }
    for (int s = 1; s <= senders; s++)
        nicsim_touch(r.sim, s);
    /* The receiver is busy elsewhere for a while. */
    uint64_t peak_msgs = 0, peak_bytes = 0;
    while (run_now(&r) < POST_AT_NS && run_step(&r)) {
        quay_stats st;
        quay_engine_stats(r.e[0], &st);
        if (st.umsgs_in_use > peak_msgs)
            peak_msgs = st.umsgs_in_use;
    }
    for (int i = 0; i < senders * PER; i++) {
        quay_req *q;
        bench_check(quay_irecv(r.e[0], r.c[0], rbuf, SIZE, QUAY_ANY_SOURCE, 1, &q), "irecv");
    }
    nicsim_touch(r.sim, 0);
    uint64_t want = (uint64_t)senders * PER;
    for (;;) {
        int more = 0;
        for (int s = 1; s <= senders; s++)
            more |= r.completes[s] < PER;
        if (!more && r.completes[0] >= want)
            break;
        if (!run_step(&r))
            bench_die("flood stuck");
        quay_stats st;
        quay_engine_stats(r.e[0], &st);
        if (st.umsgs_in_use > peak_msgs)
            peak_msgs = st.umsgs_in_use;
    }
    quay_stats st0, s;
    quay_engine_stats(r.e[0], &st0);
    peak_bytes = st0.bytes_unexpected_peak;
    stats_sum(&r, &s);
    double sim_ms = (double)(run_now(&r) - POST_AT_NS) / 1e6;
    if (csv)
        printf("flood,%s,%d,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
               ",%" PRIu64 ",%.3f\n",
               mode_name(flow), senders, peak_msgs, peak_bytes, s.nacks_sent, s.gap_nacks,
               s.out_of_order_dropped, s.retransmits, sim_ms);
    else
        printf("| %-7s | %d | %5" PRIu64 " | %6" PRIu64 " | %6" PRIu64 " | %6" PRIu64
               " | %7" PRIu64 " | %7" PRIu64 " | %7.2f |\n",
               mode_name(flow), senders, peak_msgs, peak_bytes, s.nacks_sent, s.gap_nacks,
               s.out_of_order_dropped, s.retransmits, sim_ms);
    run_free(&r);
}

int main(int argc, char **argv)
{
    int csv = 0;
    uint64_t nmsg = 20000, seed = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--csv") == 0)
            csv = 1;
        else if (strcmp(argv[i], "--msgs") == 0 && i + 1 < argc)
            bench_parse_u64(argv[++i], &nmsg);
        else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
            bench_parse_u64(argv[++i], &seed);
        else
            bench_die("usage: bench_flowctl [--csv] [--msgs N] [--seed S]");
    }
    static const double loss[] = {0, 0.001, 0.01, 0.05};
    static const uint32_t modes[] = {QUAY_FLOW_ACKNACK, QUAY_FLOW_CREDIT};
    if (csv)
        printf("table,mode,loss,msgs,sim_ms,msgs_per_sim_ms,retx_per_1k,nacks_per_1k,"
               "gap_nacks_per_1k,ack_only_per_1k,drops,wall_ms\n");
    else {
        printf("Stream of %" PRIu64 " x 512 B, receives pre-posted, window 64, rto 200 us "
               "(1 event = 1 us)\n\n",
               nmsg);
        printf("| mode    | loss    | sim ms    | msg/ms   | retx/1k  | NACK/1k | gap NACK/1k | "
               "ACK-only/1k | drops  | wall ms |\n");
        printf("|---|---|---|---|---|---|---|---|---|---|\n");
    }
    stream(QUAY_FLOW_NONE, 0, (uint32_t)nmsg, seed, csv);
    for (size_t m = 0; m < 2; m++)
        for (size_t l = 0; l < sizeof loss / sizeof loss[0]; l++)
            stream(modes[m], loss[l], (uint32_t)nmsg, seed, csv);
    if (csv)
        printf("table,mode,senders,peak_msgs,peak_bytes,nacks,gap_nacks,discarded,retx,"
               "drain_sim_ms\n");
    else {
        printf("\nFlood: N senders x 2,000 x 256 B to one receiver, receives posted at "
               "20 ms; bound 64 KiB / 1,024 messages; drain = from posting to done\n\n");
        printf("| mode    | N | peak msgs | peak bytes | NACKs | gap NACKs | discarded | retx | "
               "drain ms |\n");
        printf("|---|---|---|---|---|---|---|---|---|\n");
    }
    static const int senders[] = {1, 2, 4, 7};
    for (size_t m = 0; m < 2; m++)
        for (size_t k = 0; k < 4; k++)
            flood(modes[m], senders[k], seed, csv);
    return 0;
}
