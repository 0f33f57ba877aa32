/*
 * test_untouched.c — "rejected means untouched" (docs/threats.md): a
 * packet quay_on_packet answers with an error leaves every piece of engine
 * state as it was. Checked against a twin: two identical worlds run the
 * same seeded workload; hostile packets (real packets of the run,
 * mutated, re-addressed, fed back to their sender, with the frame CRC
 * forged as a hostile rank can) go to world A, and only those A takes
 * also go to world B. From then on both must emit byte-identical packets
 * in the same order, complete the same requests with the same data and
 * end with the same counters, and where the channel can be saved, the
 * same saved context. Each rejection is also checked at once: the
 * receiving engine's state (snapshot_state, what a saved context holds)
 * is the same bytes before and after. Also the reflected-frame reproducer: a frame of
 * rank 1's fed back to rank 1 as if from rank 0 cost rank 0's next
 * sequence number, and rank 0's real message was then dropped.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"
#include "flowctl/crc32c.h"
#include "harness.h"
#include "testnet.h"

#define NR 3
#define NMSG 6
#define FRAME 20

static uint32_t crc_table[256];

/* The frame CRC a rank would compute for a frame from `from` to `to`
 * (docs/flowctl.md): what a hostile rank, knowing the protocol, forges. */
static void forge_crc(uint8_t *b, size_t len, int32_t from, int32_t to)
{
    uint8_t ends[4], zero[4] = {0, 0, 0, 0};
    uint32_t w = (uint32_t)from | (uint32_t)to << 16;
    for (int i = 0; i < 4; i++)
        ends[i] = (uint8_t)(w >> (8 * i));
    uint32_t c = crc32c_update(crc_table, 0, ends, 4);
    c = crc32c_update(crc_table, c, b, 16);
    c = crc32c_update(crc_table, c, zero, 4);
    c = crc32c_update(crc_table, c, b + FRAME, len - FRAME);
    for (int i = 0; i < 4; i++)
        b[16 + i] = (uint8_t)(c >> (8 * i));
}

typedef struct world {
    testnet t;
    uint32_t flow;
    quay_req *req[NR][2 * NMSG * NR];
    int nreq[NR];
    uint8_t rbuf[NR][NMSG * NR][600];
} world;

static world wa, wb;

static void w_start(world *w, uint32_t flow, uint32_t flags, uint64_t seed)
{
    quay_config cfg[NR];
    for (int r = 0; r < NR; r++) {
        tn_config(&cfg[r], r, NR);
        cfg[r].flow = flow;
        cfg[r].flags |= flags;
        cfg[r].malformed_limit = 0; /* (the test feeds many) */
    }
    memset(w->nreq, 0, sizeof w->nreq);
    w->flow = flow;
    memset(w->rbuf, 0, sizeof w->rbuf);
    if (tn_init_each(&w->t, NR, cfg, 1) != 0)
        abort();
    uint64_t rng = seed;
    static uint8_t sbuf[NR][600];
    for (int r = 0; r < NR; r++)
        tn_fill(sbuf[r], sizeof sbuf[r], r);
    for (int r = 0; r < NR; r++) {
        for (int k = 0; k < NMSG * (NR - 1); k++) {
            int32_t src = tn_rnd(&rng, 3) == 0 ? QUAY_ANY_SOURCE : (int32_t)((r + 1 + k % 2) % NR);
            quay_irecv(w->t.e[r], w->t.world[r], w->rbuf[r][k], sizeof w->rbuf[r][k], src,
                       k % 3 == 0 ? QUAY_ANY_TAG : k % 3, &w->req[r][w->nreq[r]++]);
        }
        for (int d = 0; d < NR; d++)
            for (int k = 0; k < NMSG; k++) {
                if (d == r)
                    continue;
                size_t len = tn_rnd(&rng, 4) == 0 ? 300 + tn_rnd(&rng, 300) : tn_rnd(&rng, 40);
                quay_isend(w->t.e[r], w->t.world[r], sbuf[r], len, d, k % 3,
                           tn_rnd(&rng, 4) == 0 ? QUAY_SEND_SYNC : QUAY_SEND_STANDARD,
                           &w->req[r][w->nreq[r]++]);
            }
    }
}

/* Both worlds hold the same packets in flight, byte for byte. */
static int same_flight(void)
{
    if (wa.t.nq != wb.t.nq)
        return 0;
    for (int i = 0; i < wa.t.nq; i++) {
        const tn_pkt *a = &wa.t.q[i], *b = &wb.t.q[i];
        if (a->from != b->from || a->to != b->to || a->len != b->len ||
            memcmp(a->bytes, b->bytes, a->len) != 0)
            return 0;
    }
    return 1;
}

static int trains; /* coalesced packets seen (QUAY_CFG_SEND_COPY) */

static void count_trains(int framed)
{
    for (int i = 0; i < wa.t.nq; i++) {
        const tn_pkt *p = &wa.t.q[i];
        size_t at = framed ? FRAME : 0;
        if (!p->rdma && p->len >= at + 4 && p->bytes[at + 1] == QUAY_PKT_EAGER &&
            (p->bytes[at + 2] & 0x10)) /* WIRE_F_MORE */
            trains++;
    }
}

/* One step on both: pull everything, deliver the first packet. */
static int step_both(void)
{
    tn_pull_all(&wa.t);
    tn_pull_all(&wb.t);
    if (!same_flight())
        return -1;
    count_trains(wa.flow != QUAY_FLOW_NONE);
    if (wa.t.nq == 0)
        return 0;
    int ra = tn_deliver(&wa.t, 0), rb = tn_deliver(&wb.t, 0);
    return ra == rb ? 1 : -1;
}

static void stats_masked(quay_engine *e, quay_stats *st)
{
    quay_engine_stats(e, st);
    st->pkts_rejected = 0;
    st->bad_checksum = 0;
    st->forged_keys = 0;
}

/* A hostile packet made from in-flight packet i of world A. */
static size_t mutate(uint8_t *out, const tn_pkt *p, uint64_t *rng, int framed, int32_t *from,
                     int32_t *to)
{
    size_t len = p->len;
    memcpy(out, p->bytes, len);
    *from = p->from;
    *to = p->to;
    uint32_t how = tn_rnd(rng, 6);
    switch (how) {
    case 0: /* fed back to its sender, as if from its receiver */
        *from = p->to;
        *to = p->from;
        break;
    case 1: /* to its receiver, as if from the third rank */
        *from = 3 - p->from - p->to;
        break;
    case 2: /* truncated */
        len = tn_rnd(rng, (uint32_t)len);
        break;
    default: { /* bytes of its header changed */
        int n = 1 + (int)tn_rnd(rng, 3);
        size_t hdr = len < 64 ? len : 64;
        for (int k = 0; k < n && hdr != 0; k++)
            out[tn_rnd(rng, (uint32_t)hdr)] ^= (uint8_t)(1u << tn_rnd(rng, 8));
        break;
    }
    }
    /* A hostile rank forges the CRC for the ends it claims, except when
     * the point is a frame fed back (its CRC names the real ends). */
    if (framed && len >= FRAME && how != 0 && tn_rnd(rng, 4) != 0)
        forge_crc(out, len, *from, *to);
    return len;
}

/* Seeds x hostile packets: every rejected one leaves A equal to B. */
static void twin_run(uint32_t flow, uint32_t flags, int seeds)
{
    int rejected = 0, taken = 0, diverged = 0;
    trains = 0;
    static uint8_t hostile[70000];
    for (int s = 1; s <= seeds && !diverged; s++) {
        w_start(&wa, flow, flags, (uint64_t)s);
        w_start(&wb, flow, flags, (uint64_t)s);
        uint64_t rng = (uint64_t)s * 7919u;
        int steps = (int)tn_rnd(&rng, 40);
        for (int k = 0; k < steps && !diverged; k++)
            diverged |= step_both() < 0;
        for (int h = 0; h < 20 && !diverged; h++) {
            tn_pull_all(&wa.t);
            tn_pull_all(&wb.t);
            if (wa.t.nq == 0)
                break;
            const tn_pkt *p = &wa.t.q[tn_rnd(&rng, (uint32_t)wa.t.nq)];
            if (p->rdma || p->len > sizeof hostile)
                continue;
            int32_t from, to;
            size_t len = mutate(hostile, p, &rng, flow != QUAY_FLOW_NONE, &from, &to);
            static uint8_t before[1u << 18], after[1u << 18];
            size_t nb = snapshot_state(wa.t.e[to], before, sizeof before);
            int ra = quay_on_packet(wa.t.e[to], from, hostile, len);
            if (ra != 0 && ra != QUAY_EAGAIN) {
                size_t na = snapshot_state(wa.t.e[to], after, sizeof after);
                if (nb == 0 || nb > sizeof before || na != nb || memcmp(before, after, nb) != 0) {
                    harness_note("seed %d: a rejected packet changed rank %d's state", s, to);
                    diverged = 1;
                }
                rejected++;
                continue; /* B never sees it */
            }
            int rb = quay_on_packet(wb.t.e[to], from, hostile, len);
            taken++;
            if (ra != rb)
                diverged = 1;
        }
        for (int k = 0; k < 20000 && !diverged; k++) {
            int r = step_both();
            if (r < 0)
                diverged = 1;
            if (r == 0)
                break;
        }
        for (int r = 0; r < NR && !diverged; r++) {
            quay_stats sa, sb;
            stats_masked(wa.t.e[r], &sa);
            stats_masked(wb.t.e[r], &sb);
            if (memcmp(&sa, &sb, sizeof sa) != 0 || memcmp(wa.rbuf[r], wb.rbuf[r],
                                                           sizeof wa.rbuf[r]) != 0)
                diverged = 1;
            for (int i = 0; i < wa.nreq[r] && !diverged; i++) {
                quay_status x, y;
                int da = quay_req_test(wa.req[r][i], &x), db = quay_req_test(wb.req[r][i], &y);
                if (da != db || (da && memcmp(&x, &y, sizeof x) != 0))
                    diverged = 1;
            }
        }
        if (diverged)
            harness_note("seed %d: world A left world B after a rejected packet", s);
        tn_fini(&wa.t);
        tn_fini(&wb.t);
    }
    ok_msg(!diverged, "%d rejected hostile packets changed nothing (%d taken on both)", rejected,
           taken);
    ok_msg(rejected > seeds, "enough packets were rejected for the test to mean something");
    if (flags & QUAY_CFG_SEND_COPY)
        ok_msg(trains > seeds, "coalesced packets were in the run (%d)", trains);
}

static void t_twin_none(void) { twin_run(QUAY_FLOW_NONE, 0, 300); }
static void t_twin_coalesced(void) { twin_run(QUAY_FLOW_NONE, QUAY_CFG_SEND_COPY, 300); }
static void t_twin_acknack(void) { twin_run(QUAY_FLOW_ACKNACK, 0, 300); }
static void t_twin_credit(void) { twin_run(QUAY_FLOW_CREDIT, 0, 300); }

/* Issue 31, finding 4, as it was reported. */
static void t_reflected(void)
{
    quay_config cfg;
    tn_config(&cfg, 0, 2);
    cfg.flow = QUAY_FLOW_ACKNACK;
    static testnet t;
    is_int(tn_init(&t, 2, &cfg), 0);
    char in1[8] = "", in0[8] = "";
    quay_req *s1, *r0, *s0, *r1;
    is_int(quay_isend(t.e[1], t.world[1], "from1", 6, 0, 1, QUAY_SEND_STANDARD, &s1), 0);
    is_int(quay_irecv(t.e[0], t.world[0], in0, sizeof in0, 1, 1, &r0), 0);
    tn_pull(&t, 1);
    int i = tn_find(&t, QUAY_PKT_EAGER);
    ok(i >= 0 && t.q[i].from == 1);
    /* Fed back to rank 1 as if rank 0 had sent it. */
    int rc = quay_on_packet(t.e[1], 0, t.q[i].bytes, t.q[i].len);
    ok_msg(rc == QUAY_EPROTO, "a frame fed back to its sender is refused (%d)", rc);
    /* Rank 0's real message to rank 1 still arrives. */
    is_int(quay_isend(t.e[0], t.world[0], "from0", 6, 1, 2, QUAY_SEND_STANDARD, &s0), 0);
    is_int(quay_irecv(t.e[1], t.world[1], in1, sizeof in1, 0, 2, &r1), 0);
    tn_pump(&t);
    ok_msg(tn_good(r1, 6) && strcmp(in1, "from0") == 0, "rank 0's message is not lost");
    ok(tn_good(r0, 6) && strcmp(in0, "from1") == 0);
    quay_req_free(t.e[1], s1);
    quay_req_free(t.e[0], r0);
    quay_req_free(t.e[0], s0);
    quay_req_free(t.e[1], r1);
    tn_fini(&t);
}

/* A peer whose packets keep being refused is failed past malformed_limit. */
static void t_malformed_limit(void)
{
    quay_config cfg;
    tn_config(&cfg, 0, 2);
    cfg.malformed_limit = 5;
    static testnet t;
    is_int(tn_init(&t, 2, &cfg), 0);
    quay_req *r;
    char in[8];
    is_int(quay_irecv(t.e[0], t.world[0], in, sizeof in, 1, 0, &r), 0);
    static const uint8_t junk[40] = {0xee, 0xee};
    for (int k = 0; k < 5; k++)
        is_int(quay_on_packet(t.e[0], 1, junk, sizeof junk), QUAY_EPROTO);
    quay_stats st;
    quay_engine_stats(t.e[0], &st);
    ok(st.peers_failed == 0 && !tn_done(r, NULL));
    quay_on_packet(t.e[0], 1, junk, sizeof junk);
    quay_engine_stats(t.e[0], &st);
    ok_msg(st.peers_hostile == 1 && st.peers_failed == 1, "the sixth refusal fails the peer");
    quay_status rs;
    ok(tn_done(r, &rs) && rs.error == QUAY_EPEER);
    quay_req_free(t.e[0], r);
    tn_fini(&t);
}

int main(void)
{
    crc32c_table_init(crc_table);
    subtest("fed back to its sender: refused, nothing lost", t_reflected);
    subtest("a peer failed past malformed_limit", t_malformed_limit);
    subtest("twins, no flow control", t_twin_none);
    subtest("twins, no flow control, coalesced sends", t_twin_coalesced);
    subtest("twins, ACK/NACK", t_twin_acknack);
    subtest("twins, credits", t_twin_credit);
    return harness_done_testing();
}
