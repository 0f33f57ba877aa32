/*
 * bench_ctxswitch — cost of a channel context switch's save (C6) and
 * restore (C7) against what the context holds, in the spirit of PM's
 * Table 2 (save / restore of an empty channel, a full send buffer of 511
 * messages, a full receive buffer of 2,730 messages, both).
 *
 * Two engines (ACK/NACK flow control, default pools) are wired back to
 * back by a lossless in-process pump. "send full": the saving rank posted
 * N sends while quiesced, so N packets wait built but unsent in its
 * context. "receive full": M eager messages arrived for which no receive
 * is posted, so M unexpected messages with their payload copies wait in
 * its context. The channel is quiesced and stable; quay_engine_save and
 * quay_engine_restore (of that same blob, in place) are timed, median of
 * repeats. Restore includes the full validation pass.
 *
 *   bench_ctxswitch [--csv] [--reps N]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"

#define SEND_FULL 511   /* PM: send buffer full, 511 messages in 12 KB */
#define RECV_FULL 2730  /* PM: receive buffer full, 2,730 messages in 32 KB */
#define SEND_BYTES 24   /* 12 KB / 511 */
#define RECV_BYTES 12   /* 32 KB / 2,730 */

typedef struct pair {
    quay_engine *e[2];
    quay_comm *c[2];
    uint64_t now;
} pair;

static void pair_new(pair *p)
{
    memset(p, 0, sizeof *p);
    for (int r = 0; r < 2; r++) {
        quay_config c;
        quay_config_default(&c);
        memset(c.key_secret, 0x5a, sizeof c.key_secret); /* (a simulation: any fixed secret) */
        c.rank = r;
        c.nranks = 2;
        c.flow = QUAY_FLOW_ACKNACK;
        c.flags = 0;
        c.max_out = 1024;
        c.max_unexpected = 4096;
        c.flow_window = 4096;
        bench_check(quay_engine_new(&c, &p->e[r]), "engine");
        bench_check(quay_comm_create(p->e[r], 0, 2, NULL, &p->c[r]), "comm");
    }
}

static void pair_free(pair *p)
{
    for (int r = 0; r < 2; r++)
        quay_engine_free(p->e[r]);
}

/* Move packets both ways until neither engine has anything to do. */
static void pump(pair *p)
{
    static uint8_t pkt[1 << 17];
    for (int moved = 1; moved;) {
        moved = 0;
        for (int r = 0; r < 2; r++) {
            quay_action a;
            while (quay_next_action(p->e[r], &a) == 1) {
                if (a.kind != QUAY_ACT_SEND)
                    continue;
                size_t len = 0;
                for (uint32_t i = 0; i < (uint32_t)a.iovcnt; i++) {
                    memcpy(pkt + len, a.iov[i].base, a.iov[i].len);
                    len += a.iov[i].len;
                }
                bench_check(quay_on_op_done(p->e[r], a.token, 0), "op_done");
                int rc = quay_on_packet(p->e[1 - r], r, pkt, len);
                if (rc != 0 && rc != QUAY_EAGAIN)
                    bench_check(rc, "packet");
                moved = 1;
            }
        }
        p->now += 1000;
        for (int r = 0; r < 2; r++)
            quay_on_time(p->e[r], p->now);
    }
}

/* Build the case on rank 0: `nsend` sends queued while quiesced, `nrecv`
 * unexpected messages received. Leaves rank 0 quiesced and stable. */
static void build(pair *p, int nsend, int nrecv)
{
    static uint8_t payload[SEND_BYTES > RECV_BYTES ? SEND_BYTES : RECV_BYTES];
    quay_req *r;
    for (int i = 0; i < nrecv; i++) {
        bench_check(quay_isend(p->e[1], p->c[1], payload, RECV_BYTES, 0, 1,
                               QUAY_SEND_STANDARD, &r), "isend");
        bench_check(quay_req_free(p->e[1], r), "free");
        if (i % 256 == 255)
            pump(p);
    }
    pump(p);
    bench_check(quay_channel_quiesce(p->e[0]), "quiesce");
    for (int i = 0; i < nsend; i++) {
        bench_check(quay_isend(p->e[0], p->c[0], payload, SEND_BYTES, 1, 2,
                               QUAY_SEND_STANDARD, &r), "isend");
        bench_check(quay_req_free(p->e[0], r), "free");
    }
    pump(p);
    if (quay_channel_is_stable(p->e[0]) != 1)
        bench_die("rank 0 did not become stable");
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

static void one_case(const char *name, int nsend, int nrecv, int reps, int csv)
{
    pair p;
    pair_new(&p);
    build(&p, nsend, nrecv);
    quay_engine *e = p.e[0];
    size_t len = 0;
    if (quay_engine_save(e, NULL, 0, &len) != QUAY_ENOBUFS)
        bench_die("save size");
    unsigned char *blob = malloc(len);
    double *ts = malloc(sizeof *ts * (size_t)reps), *tr = malloc(sizeof *tr * (size_t)reps);
    if (blob == NULL || ts == NULL || tr == NULL)
        bench_die("out of memory");
    for (int i = 0; i < reps; i++) {
        uint64_t t0 = bench_now_ns();
        bench_check(quay_engine_save(e, blob, len, &len), "save");
        uint64_t t1 = bench_now_ns();
        bench_check(quay_engine_restore(e, blob, len), "restore");
        uint64_t t2 = bench_now_ns();
        ts[i] = (double)(t1 - t0) / 1e3;
        tr[i] = (double)(t2 - t1) / 1e3;
    }
    quay_stats st;
    quay_engine_stats(e, &st);
    double ms = median(ts, reps), mr = median(tr, reps);
    if (csv)
        printf("%s,%d,%d,%zu,%.1f,%.1f\n", name, nsend, nrecv, len, ms, mr);
    else
        printf("| %-22s | %5d | %5d | %9zu | %9.1f | %9.1f |\n", name, nsend, nrecv, len, ms,
               mr);
    /* The restored context still works: resume and let it drain. */
    bench_check(quay_channel_resume(e), "resume");
    pump(&p);
    if (st.umsgs_in_use != (uint32_t)nrecv)
        bench_die("%s: %u unexpected messages held, wanted %d", name, st.umsgs_in_use, nrecv);
    free(blob);
    free(ts);
    free(tr);
    pair_free(&p);
}

int main(int argc, char **argv)
{
    int csv = 0;
    uint64_t reps = 101;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--csv") == 0)
            csv = 1;
        else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc &&
                 bench_parse_u64(argv[++i], &reps) == 0 && reps > 0 && reps < 100000)
            ;
        else
            bench_die("usage: bench_ctxswitch [--csv] [--reps N]");
    }
    if (csv)
        printf("case,queued_sends,unexpected_msgs,blob_bytes,save_us,restore_us\n");
    else {
        printf("Channel context save / restore (median of %d; default pools: 4096 requests,\n"
               "4096 message descriptors, 1024 out descriptors; restore validates, then rebuilds)\n\n",
               (int)reps);
        printf("| %-22s | %5s | %5s | %9s | %9s | %9s |\n", "case", "sends", "unexp", "blob B",
               "save us", "restore us");
        printf("|%s|%s|%s|%s|%s|%s|\n", "------------------------", "-------", "-------",
               "-----------", "-----------", "-----------");
    }
    one_case("empty", 0, 0, (int)reps, csv);
    one_case("send side full", SEND_FULL, 0, (int)reps, csv);
    one_case("receive side full", 0, RECV_FULL, (int)reps, csv);
    one_case("both full", SEND_FULL, RECV_FULL, (int)reps, csv);
    return 0;
}
