/*
 * test_flood.c — the receiver memory bound under flow control (issue 3,
 * point 5): one receiver, 7 senders, 100,000 eager messages sent before any
 * receive is posted. The receiver's unexpected data must stay within
 * unexpected_bytes_max (and its descriptors within max_unexpected): beyond
 * them it refuses (NACKs) and the senders stall, instead of the receiver
 * growing. Then the receives are posted late, in batches mixing ANY_SOURCE
 * and specific ones, and every message must arrive exactly once, intact,
 * in order per sender. The receiver's allocator hook proves its engine
 * memory never exceeds what creation took plus unexpected_bytes_max (the
 * pools are made at creation; only unexpected payload is allocated later,
 * within that budget).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "testnet.h"

#define NSEND 7
#ifndef NMSG
#define NMSG 100000
#endif
#define BOUND_BYTES (32u * 1024u)
#define BOUND_MSGS 512u
#define BATCH 256

/* Counting allocator for the receiver. */
typedef struct counting {
    size_t cur, peak;
    uint64_t calls;
} counting;

typedef struct hdr {
    size_t size;
} hdr;

static void *count_alloc(size_t size, void *ctx)
{
    counting *c = ctx;
    hdr *h = malloc(sizeof(hdr) + size);
    if (h == NULL)
        return NULL;
    h->size = size;
    c->cur += size;
    if (c->cur > c->peak)
        c->peak = c->cur;
    c->calls++;
    return h + 1;
}

static void count_release(void *p, void *ctx)
{
    counting *c = ctx;
    hdr *h = (hdr *)p - 1;
    c->cur -= h->size;
    free(h);
}

/* Stop the whole test: the remaining checks would only cascade. */
#define BAIL_OUT(...)                                                     \
    do {                                                                  \
        printf("Bail out! ");                                             \
        printf(__VA_ARGS__);                                              \
        printf("\n");                                                     \
        exit(1);                                                          \
    } while (0)

static testnet T;
static uint64_t now_ns;

/* Message i of sender s: 8..200 bytes, starting with (s, i). */
static size_t msg_size(uint32_t i)
{
    return 8 + (i * 37u) % 193u;
}

static void msg_fill(uint8_t *b, int s, uint32_t i)
{
    size_t n = msg_size(i);
    b[0] = (uint8_t)s;
    memcpy(b + 1, &i, 4);
    for (size_t k = 5; k < n; k++)
        b[k] = (uint8_t)(s * 31 + i * 7 + k);
}

static int msg_check(const uint8_t *b, size_t n, int s, uint32_t i)
{
    uint8_t want[256];
    if (n != msg_size(i))
        return 0;
    msg_fill(want, s, i);
    return memcmp(b, want, n) == 0;
}

static int tick(void)
{
    return tn_tick(&T, &now_ns);
}

static uint64_t peak_bytes, peak_msgs;

static void sample_receiver(void)
{
    quay_stats st;
    quay_engine_stats(T.e[0], &st);
    if (st.bytes_unexpected > peak_bytes)
        peak_bytes = st.bytes_unexpected;
    if (st.umsgs_in_use > peak_msgs)
        peak_msgs = st.umsgs_in_use;
}

static void round_trip(void)
{
    tn_pump(&T);
    sample_receiver();
    tick();
}

static int flow_mode;

static void flood(void)
{
    static quay_config cfg[NSEND + 1];
    static counting mem;
    uint8_t *arena[NSEND + 1];
    uint32_t nper[NSEND + 1], next[NSEND + 1], left[NSEND + 1];
    quay_req **sreq[NSEND + 1];
    size_t created_bytes;
    uint64_t created_calls;

    for (int r = 0; r <= NSEND; r++) {
        tn_config(&cfg[r], r, NSEND + 1);
        cfg[r].flow = (uint32_t)flow_mode;
        cfg[r].flow_window = 32;
        cfg[r].rto_init_ns = 1000;
        cfg[r].rto_max_ns = 64000;
        cfg[r].retry_limit = 8;
        cfg[r].flags &= ~(uint32_t)QUAY_CFG_CHECK_ORACLE; /* 100k x 512 */
        cfg[r].max_requests = r == 0 ? 2 * BATCH : NMSG / NSEND + 8;
    }
    cfg[0].unexpected_bytes_max = BOUND_BYTES;
    cfg[0].max_unexpected = BOUND_MSGS;
    cfg[0].alloc.alloc = count_alloc;
    cfg[0].alloc.release = count_release;
    cfg[0].alloc.ctx = &mem;
    memset(&mem, 0, sizeof mem);
    now_ns = 0;
    peak_bytes = peak_msgs = 0;
    if (!is_int(tn_init_each(&T, NSEND + 1, cfg, 1), 0))
        return;
    created_bytes = mem.cur;
    created_calls = mem.calls;
    note("receiver engine: %zu bytes in %llu allocations at creation",
         created_bytes, (unsigned long long)created_calls);

    /* Phase 1: every sender posts all its messages; nobody receives. */
    for (int s = 1; s <= NSEND; s++) {
        nper[s] = NMSG / NSEND + (s <= NMSG % NSEND ? 1u : 0u);
        next[s] = 0;
        left[s] = nper[s];
        arena[s] = malloc((size_t)nper[s] * 200);
        sreq[s] = calloc(nper[s], sizeof *sreq[s]);
        if (arena[s] == NULL || sreq[s] == NULL)
            BAIL_OUT("out of memory");
        for (uint32_t i = 0; i < nper[s]; i++) {
            uint8_t *b = arena[s] + (size_t)i * 200;
            msg_fill(b, s, i);
            if (quay_isend(T.e[s], T.world[s], b, msg_size(i), 0, (int32_t)(i % 5),
                           QUAY_SEND_STANDARD, &sreq[s][i]) != 0)
                BAIL_OUT("isend %d/%u failed", s, i);
        }
    }
    for (int i = 0; i < 200; i++)
        round_trip();
    {
        quay_stats st;
        quay_engine_stats(T.e[0], &st);
        note("flooded: receiver holds %llu bytes in %u messages; %llu NACKs",
             (unsigned long long)st.bytes_unexpected, st.umsgs_in_use,
             (unsigned long long)st.nacks_sent);
        if (flow_mode == QUAY_FLOW_CREDIT)
            ok_msg(st.nacks_sent == 0, "credits: the senders stopped by themselves");
        else
            ok_msg(st.nacks_sent > 0, "ACK/NACK: the receiver refused (NACK) once full");
        ok_msg(st.umsgs_in_use > BOUND_MSGS / 4 || st.bytes_unexpected > BOUND_BYTES / 2,
               "and it did fill up first");
    }

    /* Phase 2: receives posted late, in batches; 1 in 4 names a source. */
    uint32_t total = 0, bad = 0, order = 0, batches = 0;
    quay_req *rr[BATCH];
    int want_src[BATCH];
    static uint8_t rb[BATCH][256];
    while (total < NMSG) {
        uint32_t n = NMSG - total < BATCH ? NMSG - total : BATCH;
        uint32_t claimed[NSEND + 1] = {0};
        for (uint32_t k = 0; k < n; k++) {
            int src = -1;
            if (k % 4 == 3) {
                /* a sender certain to still have a message for it, even
                 * if every ANY_SOURCE receive of the batch took one of
                 * its messages (near the end there may be none) */
                for (int j = 0, s = 1 + (int)(k % NSEND); j < NSEND && src < 0;
                     j++, s = s % NSEND + 1)
                    if (left[s] > claimed[s] + n)
                        src = s;
            }
            want_src[k] = src;
            if (src > 0)
                claimed[src]++;
            if (quay_irecv(T.e[0], T.world[0], rb[k], sizeof rb[k],
                           src > 0 ? src : QUAY_ANY_SOURCE, QUAY_ANY_TAG, &rr[k]) != 0)
                BAIL_OUT("irecv failed");
        }
        int spins = 0;
        for (;;) {
            uint32_t done = 0;
            round_trip();
            for (uint32_t k = 0; k < n; k++)
                done += quay_req_test(rr[k], NULL) == 1;
            if (done == n)
                break;
            if (++spins > 100000)
                BAIL_OUT("batch %u stuck: %u of %u receives complete", batches, done, n);
        }
        /* In post order, messages of one sender must come in send order. */
        for (uint32_t k = 0; k < n; k++) {
            quay_status st;
            uint32_t idx;
            quay_req_test(rr[k], &st);
            int s = st.source;
            if (s < 1 || s > NSEND || st.error != 0 || st.count < 5 ||
                (want_src[k] > 0 && s != want_src[k])) {
                bad++;
            } else {
                memcpy(&idx, rb[k] + 1, 4);
                if (idx != next[s])
                    order++;
                else if (!msg_check(rb[k], st.count, s, idx) || st.tag != (int32_t)(idx % 5))
                    bad++;
                next[s] = idx + 1;
                left[s]--;
            }
            quay_req_free(T.e[0], rr[k]);
        }
        total += n;
        batches++;
    }
    is_int(bad, 0);
    is_int(order, 0);
    for (int s = 1; s <= NSEND; s++)
        ok_msg(next[s] == nper[s], "sender %d: %u of %u messages, in order", s, next[s],
               nper[s]);

    /* Senders complete once acknowledged; then everything is clean. */
    for (int i = 0; i < 1000 && tick(); i++)
        tn_pump(&T);
    tn_pump(&T);
    uint32_t incomplete = 0;
    quay_stats st;
    for (int s = 1; s <= NSEND; s++)
        for (uint32_t i = 0; i < nper[s]; i++) {
            if (quay_req_test(sreq[s][i], NULL) != 1)
                incomplete++;
            quay_req_free(T.e[s], sreq[s][i]);
        }
    is_int(incomplete, 0);

    quay_engine_stats(T.e[0], &st);
    note("receiver: peak %llu unexpected bytes (bound %u), peak %llu descriptors "
         "(bound %u), %llu NACKs, %llu duplicates / %llu out-of-order dropped; "
         "%u batches",
         (unsigned long long)peak_bytes, BOUND_BYTES, (unsigned long long)peak_msgs,
         BOUND_MSGS, (unsigned long long)st.nacks_sent,
         (unsigned long long)st.dups_dropped, (unsigned long long)st.out_of_order_dropped,
         batches);
    ok_msg(st.bytes_unexpected_peak <= BOUND_BYTES, "engine's own peak %llu <= %u",
           (unsigned long long)st.bytes_unexpected_peak, BOUND_BYTES);
    ok(peak_bytes <= BOUND_BYTES);
    ok(peak_msgs <= BOUND_MSGS);
    note("receiver memory: %zu bytes at creation, peak %zu (%llu allocations after "
         "creation)",
         created_bytes, mem.peak, (unsigned long long)(mem.calls - created_calls));
    ok_msg(mem.peak <= created_bytes + BOUND_BYTES,
           "receiver memory peak %zu <= %zu at creation + %u bound", mem.peak,
           created_bytes, BOUND_BYTES);
    is_int((int)st.peers_failed, 0);
    is_int(T.rejects, 0);
    for (int r = 0; r <= NSEND; r++) {
        quay_engine_stats(T.e[r], &st);
        ok_msg(st.reqs_in_use == 0 && st.umsgs_in_use == 0 && st.outs_in_use == 0,
               "rank %d clean", r);
    }
    if (flow_mode == QUAY_FLOW_CREDIT)
        is_int((int)st.nacks_sent, 0);
    tn_fini(&T);
    ok_msg(mem.cur == 0, "receiver memory all released");
    for (int s = 1; s <= NSEND; s++) {
        free(arena[s]);
        free(sreq[s]);
    }
}

int main(void)
{
    flow_mode = QUAY_FLOW_ACKNACK;
    subtest("ACK/NACK: 7 senders flood one receiver", flood);
    flow_mode = QUAY_FLOW_CREDIT;
    subtest("credits: 7 senders flood one receiver", flood);
    return done_testing();
}
