/*
 * bench_any.c — ANY_SOURCE arbitration on nicsim (issue 4, point 6).
 *
 * Part 1: control messages per wildcard receive against the number of
 * candidate senders N (ranks 1..N send to rank 0). Every packet an engine
 * emits is counted by type through the trace hook; DATA payload packets
 * are not control messages (RDMA writes and reads are actions, not
 * packets). Three schemes on the same engine:
 *   envelope   rtr_any = 0: the wildcard is an ordinary receive, the
 *              sender's RTS is the "interest" and the receiver's matcher
 *              the arbiter (RDMA rendezvous, rndv_mode as given)
 *   announce   rtr_any = 1: ENA_ANY to every member, ANY_FLAG, RTR_ANY,
 *              write, SC [MPIN baseline, with quay's rules]
 *   MPIN       the paper's count for comparison: N+3 first, 3 reused
 * Rounds: "cold" is the first wildcard of a pattern (announcements go
 * out), "warm" the average of the following rounds (announcement reused);
 * one sender per round, rotating. "race" posts N wildcards and lets all N
 * senders send at once: messages per receive.
 *
 * Part 2: MPIN §4.3's experiment — time to receive from ANY_SOURCE with
 * 1..4 senders — as nicsim steps (deliveries and pulls; the simulator has
 * no timed mode yet) and wall-clock µs of the whole in-process run per
 * receive on this machine.
 *
 *   bench_any [--max-n N] [--rounds R] [--size BYTES] [--csv]
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "nicsim.h"

#define NTYPES 16

typedef struct net {
    int n;
    nicsim *sim;
    quay_engine **e;
    quay_comm **c;
    uint64_t pkts[NTYPES];
    uint64_t done;
} net;

static void on_trace(void *ctx, const quay_trace_event *ev)
{
    net *t = ctx;
    if (ev->kind == QUAY_TR_PKT_OUT && ev->pkt > 0 && ev->pkt < NTYPES)
        t->pkts[ev->pkt]++;
}

static void on_complete(void *ctx, int32_t rank, quay_req *req, void *user)
{
    (void)rank;
    (void)user;
    net *t = ctx;
    t->done++;
    quay_req_free(t->e[rank], req);
}

static void net_new(net *t, int n, int any, uint32_t rndv_mode)
{
    nicsim_config nc;
    memset(t, 0, sizeof *t);
    t->n = n;
    t->e = calloc((size_t)n, sizeof *t->e);
    t->c = calloc((size_t)n, sizeof *t->c);
    if (t->e == NULL || t->c == NULL)
        bench_die("out of memory");
    nicsim_config_default(&nc);
    nc.nranks = n;
    nc.seed = 1;
    bench_check(nicsim_new(&nc, &t->sim), "nicsim_new");
    nicsim_set_completion_cb(t->sim, on_complete, t);
    for (int i = 0; i < n; i++) {
        quay_config c;
        quay_config_default(&c);
        memset(c.key_secret, 0x5a, sizeof c.key_secret); /* (a simulation: any fixed secret) */
        c.rank = i;
        c.nranks = n;
        c.transport_caps = QUAY_CAP_RDMA_GET | QUAY_CAP_RDMA_PUT;
        c.rndv_mode = rndv_mode;
        c.rtr = 1;
        c.rtr_any = (uint32_t)any;
        c.max_requests = 4096;
        bench_check(quay_engine_new(&c, &t->e[i]), "quay_engine_new");
        bench_check(quay_comm_create(t->e[i], 0, n, NULL, &t->c[i]), "quay_comm_create");
        bench_check(nicsim_attach(t->sim, i, t->e[i]), "nicsim_attach");
        quay_set_trace(t->e[i], on_trace, t);
    }
}

static void net_free(net *t)
{
    nicsim_free(t->sim);
    for (int i = 0; i < t->n; i++)
        quay_engine_free(t->e[i]);
    free(t->e);
    free(t->c);
}

static uint64_t settle(net *t)
{
    uint64_t steps = 0;
    for (int i = 0; i < t->n; i++)
        nicsim_touch(t->sim, i);
    while (!nicsim_idle(t->sim)) {
        int rc = nicsim_step(t->sim);
        if (rc < 0)
            bench_check(rc, "nicsim_step");
        if (rc == 0)
            bench_die("simulator stuck");
        steps++;
    }
    return steps;
}

static uint64_t control(const net *t)
{
    uint64_t s = 0;
    for (int k = 1; k < NTYPES; k++)
        if (k != QUAY_PKT_DATA)
            s += t->pkts[k];
    return s;
}

static uint8_t *sbuf, *rbuf;

/* One round: `nrecv` wildcard receives posted (and announced), then senders
 * [first, first + nsend) send one message each. Returns the control
 * messages of the round (the announcement included). */
static uint64_t round_msgs(net *t, int nrecv, int first, int nsend, size_t size)
{
    uint64_t before = control(t);
    uint64_t want = t->done + (uint64_t)nrecv + (uint64_t)nsend;
    for (int k = 0; k < nrecv; k++) {
        quay_req *r;
        bench_check(quay_irecv(t->e[0], t->c[0], rbuf + (size_t)k * size, size,
                               QUAY_ANY_SOURCE, 1, &r),
                    "quay_irecv");
    }
    settle(t);
    for (int k = 0; k < nsend; k++) {
        int s = 1 + (first + k) % (t->n - 1);
        quay_req *q;
        bench_check(quay_isend(t->e[s], t->c[s], sbuf, size, 0, 1, QUAY_SEND_STANDARD, &q),
                    "quay_isend");
    }
    settle(t);
    if (t->done != want)
        bench_die("round did not complete");
    return control(t) - before;
}

static void part1(int max_n, int rounds, size_t size, uint32_t mode, const char *mode_name,
                  int csv)
{
    if (!csv) {
        printf("\n## Control messages per wildcard receive (size %zu B, rndv %s)\n\n", size,
               mode_name);
        printf("| N senders | envelope cold | envelope warm | announce cold | announce warm | "
               "announce race | MPIN first | MPIN reused |\n");
        printf("|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    }
    for (int n = 2; n <= max_n; n *= 2) {
        double v[2][3];
        for (int any = 0; any <= 1; any++) {
            net t;
            net_new(&t, n + 1, any, mode);
            v[any][0] = (double)round_msgs(&t, 1, 0, 1, size);
            uint64_t w = 0;
            for (int k = 1; k <= rounds; k++)
                w += round_msgs(&t, 1, k, 1, size);
            v[any][1] = (double)w / rounds;
            int nr = n < 64 ? n : 64; /* receives posted at once (max_requests) */
            v[any][2] = (double)round_msgs(&t, nr, 0, nr, size) / nr;
            net_free(&t);
        }
        if (csv)
            printf("any_msgs,%s,%d,%.2f,%.2f,%.2f,%.2f,%.2f,%d,3\n", mode_name, n, v[0][0],
                   v[0][1], v[1][0], v[1][1], v[1][2], n + 3);
        else
            printf("| %d | %.0f | %.2f | %.0f | %.2f | %.2f | %d | 3 |\n", n, v[0][0], v[0][1],
                   v[1][0], v[1][1], v[1][2], n + 3);
    }
}

static void part2(int rounds, size_t size, int csv)
{
    if (!csv) {
        printf("\n## Time to receive from ANY_SOURCE, 1..4 senders (MPIN §4.3 shape; "
               "size %zu B)\n\n",
               size);
        printf("| senders | envelope steps/recv | announce steps/recv | envelope µs/recv | "
               "announce µs/recv |\n");
        printf("|---:|---:|---:|---:|---:|\n");
    }
    for (int ns = 1; ns <= 4; ns++) {
        double steps[2], us[2];
        for (int any = 0; any <= 1; any++) {
            net t;
            net_new(&t, ns + 1, any, QUAY_RNDV_AUTO);
            round_msgs(&t, ns, 0, ns, size); /* warm-up: announcements out */
            uint64_t st = 0, t0 = bench_now_ns();
            for (int k = 0; k < rounds; k++) {
                uint64_t want = t.done + 2u * (uint64_t)ns;
                for (int j = 0; j < ns; j++) {
                    quay_req *r;
                    bench_check(quay_irecv(t.e[0], t.c[0], rbuf + (size_t)j * size, size,
                                           QUAY_ANY_SOURCE, 1, &r),
                                "quay_irecv");
                }
                for (int j = 1; j <= ns; j++) {
                    quay_req *q;
                    bench_check(quay_isend(t.e[j], t.c[j], sbuf, size, 0, 1,
                                           QUAY_SEND_STANDARD, &q),
                                "quay_isend");
                }
                st += settle(&t);
                if (t.done != want)
                    bench_die("round did not complete");
            }
            uint64_t t1 = bench_now_ns();
            steps[any] = (double)st / ((double)rounds * ns);
            us[any] = (double)(t1 - t0) / 1e3 / ((double)rounds * ns);
            net_free(&t);
        }
        if (csv)
            printf("any_time,%d,%.1f,%.1f,%.2f,%.2f\n", ns, steps[0], steps[1], us[0], us[1]);
        else
            printf("| %d | %.1f | %.1f | %.2f | %.2f |\n", ns, steps[0], steps[1], us[0], us[1]);
    }
}

int main(int argc, char **argv)
{
    int max_n = 256, rounds = 20, csv = 0;
    size_t size = 16384;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--max-n") == 0 && i + 1 < argc)
            max_n = atoi(argv[++i]);
        else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--size") == 0 && i + 1 < argc)
            bench_check(bench_parse_size(argv[++i], &size), "--size");
        else if (strcmp(argv[i], "--csv") == 0)
            csv = 1;
        else {
            fprintf(stderr, "usage: bench_any [--max-n N] [--rounds R] [--size B] [--csv]\n");
            return 2;
        }
    }
    if (max_n < 2 || rounds < 1 || size <= 8192)
        bench_die("need --max-n >= 2, --rounds >= 1, --size > eager_max (8192)");
    sbuf = malloc(size);
    rbuf = malloc(size * 64);
    if (sbuf == NULL || rbuf == NULL)
        bench_die("out of memory");
    memset(sbuf, 7, size);
    if (csv)
        printf("# any_msgs,rndv,N,env_cold,env_warm,ann_cold,ann_warm,ann_race,mpin_first,"
               "mpin_reused\n# any_time,senders,env_steps,ann_steps,env_us,ann_us\n");
    part1(max_n, rounds, size, QUAY_RNDV_GET, "get", csv);
    part1(max_n, rounds, size, QUAY_RNDV_PUT, "put", csv);
    part2(rounds * 10, size, csv);
    free(sbuf);
    free(rbuf);
    return 0;
}
