/*
 * test_shm_ring.c — the shared-memory ring (adapters/shm/shm_ring.c) on
 * plain memory, producer and consumer views side by side: records come
 * out whole and in order across many laps (padding, wrap, full ring), a
 * consumer never takes a record of an earlier lap or zeroed memory for a
 * new one (the stamps), a header that cannot be is refused, and every
 * record starts on a cache line.
 */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

#include "shm_ring.h"

#define CAP 1024u

typedef struct rig {
    qshm_ring_ctl ctl;
    _Alignas(64) uint8_t data[CAP];
    qshm_ring prod, cons;
} rig;

static rig *rig_new(void)
{
    rig *g = aligned_alloc(64, sizeof(rig));
    memset(g, 0, sizeof *g);
    qshm_ring_init(&g->prod, &g->ctl, g->data, CAP, 1);
    qshm_ring_init(&g->cons, &g->ctl, g->data, CAP, 0);
    return g;
}

static uint8_t byte_of(uint32_t n, uint32_t i) { return (uint8_t)(n * 131u + i * 7u + 1u); }

static int put(rig *g, uint32_t n, uint32_t len)
{
    uint8_t *p = qshm_ring_reserve(&g->prod, len);
    if (p == NULL)
        return 0;
    for (uint32_t i = 0; i < len; i++)
        p[i] = byte_of(n, i);
    qshm_ring_commit(&g->prod, (uint8_t)(1 + n % 200), (uint8_t)n, len);
    return 1;
}

/* Take record n (of length len): 1 if whole and right. */
static int take(rig *g, uint32_t n, uint32_t len)
{
    qshm_rec rec;
    if (qshm_ring_peek(&g->cons, &rec) != 1)
        return 0;
    int good = rec.len == len && rec.type == (uint8_t)(1 + n % 200) && rec.flags == (uint8_t)n &&
               (size_t)(rec.data - QSHM_REC_HDR - g->data) % QSHM_REC_ALIGN == 0;
    for (uint32_t i = 0; good && i < len; i++)
        good = rec.data[i] == byte_of(n, i);
    qshm_ring_consume(&g->cons, &rec);
    return good;
}

static void t_empty(void)
{
    rig *g = rig_new();
    qshm_rec rec;
    is_int(qshm_ring_peek(&g->cons, &rec), 0); /* zeroed memory holds nothing */
    ok(qshm_ring_max_record(&g->prod) == CAP / 2 - QSHM_REC_HDR);
    ok(put(g, 0, 0));
    ok(take(g, 0, 0));
    is_int(qshm_ring_peek(&g->cons, &rec), 0);
    free(g);
}

/* Random sizes, random batches, thousands of laps of a 1 KiB ring. */
static void t_laps(void)
{
    rig *g = rig_new();
    uint64_t x = 12345;
    uint32_t lens[64];
    uint32_t sent = 0, got = 0, bad = 0, fulls = 0;
    uint32_t maxrec = qshm_ring_max_record(&g->prod);
    while (got < 200000) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t burst = 1 + (uint32_t)(x >> 60);
        for (uint32_t k = 0; k < burst && sent - got < 64; k++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            uint32_t len = (x >> 40) % 4 == 0 ? (uint32_t)(x >> 33) % (maxrec + 1)
                                              : (uint32_t)(x >> 33) % 100;
            if (!put(g, sent, len)) {
                fulls++;
                break;
            }
            lens[sent % 64] = len;
            sent++;
        }
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t drain = 1 + (uint32_t)(x >> 61);
        for (uint32_t k = 0; k < drain && got < sent; k++, got++)
            bad += !take(g, got, lens[got % 64]);
    }
    is_int(bad, 0);
    ok_msg(fulls > 0, "the ring was full %u times (back-pressure exercised)", fulls);
    qshm_rec rec;
    while (got < sent) {
        bad += !take(g, got, lens[got % 64]);
        got++;
    }
    is_int(bad, 0);
    /* Everything consumed: the bytes of old laps are still there, but no
     * stamp in them is the one the consumer waits for. */
    is_int(qshm_ring_peek(&g->cons, &rec), 0);
    free(g);
}

/* A record taken whole, its space reused: the next lap's consumer does
 * not see the old record at the same place before it is rewritten. */
static void t_stale_lap(void)
{
    rig *g = rig_new();
    qshm_rec rec;
    uint32_t n = 0;
    while (put(g, n, 40))
        n++;
    ok(n == CAP / 64); /* 40 + 16 bytes: one line each */
    for (uint32_t i = 0; i < n; i++)
        ok(take(g, i, 40));
    is_int(qshm_ring_peek(&g->cons, &rec), 0);
    ok(put(g, n, 8)); /* over the first record of the old lap */
    ok(take(g, n, 8));
    is_int(qshm_ring_peek(&g->cons, &rec), 0); /* the old lap's second: not taken */
    free(g);
}

/* A published header whose length runs past the data area: -1. */
static void t_garbage(void)
{
    rig *g = rig_new();
    ok(put(g, 0, 8));
    qshm_rec rec;
    is_int(qshm_ring_peek(&g->cons, &rec), 1);
    uint32_t big = CAP; /* the header's first field */
    memcpy(g->data, &big, sizeof big);
    is_int(qshm_ring_peek(&g->cons, &rec), -1);
    free(g);
}

static void t_holds(void)
{
    rig *g = rig_new();
    ok(put(g, 4, 8));  /* type 5 */
    ok(put(g, 9, 70)); /* type 10 */
    ok(qshm_ring_holds(&g->cons, 5));
    ok(qshm_ring_holds(&g->cons, 10));
    ok(!qshm_ring_holds(&g->cons, 6));
    ok(take(g, 4, 8));
    ok(!qshm_ring_holds(&g->cons, 5));
    ok(qshm_ring_holds(&g->cons, 10));
    free(g);
}

int main(void)
{
    subtest("an empty ring", t_empty);
    subtest("200,000 records over many laps", t_laps);
    subtest("an earlier lap's record is not taken again", t_stale_lap);
    subtest("a header that cannot be is refused", t_garbage);
    subtest("holds (a dead producer's ring)", t_holds);
    return done_testing();
}
