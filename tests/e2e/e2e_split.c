/*
 * e2e_split — one-sided gets and puts of lengths around the shm
 * transport's split threshold (QUAY_SHM_SPLIT_KB, default 32: from there
 * on the target and the initiator each copy a share), at odd offsets and
 * from odd local addresses, each checked byte for byte with guard bytes
 * on both sides; then transfers that fault in one share or the other
 * (the initiator's buffer, or the target's registered memory, ends or
 * starts in an inaccessible page) must fail with QUAY_EINVAL, and the
 * transport must work on afterwards. Rank r works on rank r+1's windows,
 * one rank at a time (a target with actions of its own in flight toward
 * its initiator does not split); without single copy (QUAY_CAP_RDMA_GET /
 * PUT) there is nothing to do.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "e2e.h"

#define AREA (2u << 20) /* window: pattern to get [0, AREA), puts [AREA, 2 AREA) */
#define GUARD 64
#define FILL 0xee

static size_t page;

static void *map_pages(size_t n)
{
    void *p = mmap(NULL, n * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    E2E_CHECK(p != MAP_FAILED);
    return p;
}

static quay_status get(e2e *t, int32_t peer, void *local, size_t len, uint64_t key,
                       uint64_t off)
{
    quay_req *r;
    E2E_OK(quay_iget(t->e, peer, local, len, key, off, &r));
    return e2e_wait(t, r);
}

static quay_status put(e2e *t, int32_t peer, const void *local, size_t len, uint64_t key,
                       uint64_t off)
{
    quay_req *r;
    E2E_OK(quay_iput(t->e, peer, local, len, key, off, &r));
    return e2e_wait(t, r);
}

static int guards_ok(const uint8_t *b, size_t len)
{
    for (size_t i = 0; i < GUARD; i++)
        if (b[i] != FILL || b[GUARD + len + i] != FILL)
            return 0;
    return 1;
}

/* The window's pattern, byte `off` on: what e2e_fill(seed) put there. */
static long verify_at(const uint8_t *b, size_t len, const uint8_t *ref, size_t off)
{
    for (size_t i = 0; i < len; i++)
        if (b[i] != ref[off + i])
            return (long)i;
    return -1;
}

/* Rank `me`'s turn: every transfer with its right neighbour, checked.
 * Returns how many. */
static int transfers(e2e *t, int32_t right, uint64_t wkey, uint64_t tkey, const uint8_t *ref,
                     size_t thr, size_t tp)
{
    /* Lengths: small ones, then around the threshold, then multiples. */
    const size_t lens[] = {1,       63,          64,          65,         127,
                           128,     129,         4095,        4097,       thr - 65,
                           thr - 1, thr,         thr + 1,     thr + 63,   thr + 64,
                           thr + 65, 2 * thr - 1, 2 * thr + 1, 3 * thr + 7, AREA - 13,
                           AREA};
    const size_t offs[] = {0, 1, 7, 4093};
    uint8_t *buf = malloc(AREA + 2 * GUARD + 8), *src = malloc(AREA + 8);
    E2E_CHECK(buf != NULL && src != NULL);
    int count = 0;
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        for (size_t oi = 0; oi < sizeof offs / sizeof offs[0]; oi++) {
            size_t len = lens[li], off = offs[oi], la = oi; /* local misalignment */
            if (off + len > AREA)
                off = AREA - len; /* ends at the area's last byte */
            uint8_t *l = buf + la;
            quay_status st;
            /* GET: exactly [off, off + len) of the pattern, nothing around. */
            memset(l, FILL, len + 2 * GUARD);
            st = get(t, right, l + GUARD, len, wkey, off);
            E2E_CHECK(st.error == 0 && st.count == len);
            E2E_CHECK(guards_ok(l, len));
            long bad = verify_at(l + GUARD, len, ref, off);
            if (bad >= 0)
                e2e_fail(__FILE__, __LINE__, "get len %zu off %zu: byte %ld differs", len,
                         off, bad);
            /* PUT into the neighbour's put area, then read it back. */
            uint64_t seed = len * 7 + off;
            e2e_fill(src + la, len, seed);
            st = put(t, right, src + la, len, wkey, AREA + off);
            E2E_CHECK(st.error == 0 && st.count == len);
            memset(l, FILL, len + 2 * GUARD);
            st = get(t, right, l + GUARD, len, wkey, AREA + off);
            E2E_CHECK(st.error == 0 && guards_ok(l, len));
            bad = e2e_verify(l + GUARD, len, seed);
            if (bad >= 0)
                e2e_fail(__FILE__, __LINE__, "put len %zu off %zu: byte %ld differs", len,
                         off, bad);
            count += 3;
        }
    }

    /* Faults. The length is at least the threshold, so a split copy's
     * two shares sit on either side of the middle: an inaccessible page
     * at the end falls in the initiator's share, one at the start in the
     * target's. Either way the action fails, whoever copied what. */
    size_t flen = tp * page - page / 2; /* >= thr + 2.5 pages */
    uint8_t *mine = map_pages(2 * tp + 1);
    E2E_CHECK(mprotect(mine + tp * page, page, PROT_NONE) == 0);
    uint8_t *ends_bad = mine + tp * page - (flen - 100);  /* its last 100 bytes */
    uint8_t *starts_bad = mine + (tp + 1) * page - 100;   /* its first 100 bytes */
    quay_status st;
    st = get(t, right, ends_bad, flen, wkey, 3);
    E2E_CHECK(st.error == QUAY_EINVAL);
    st = get(t, right, starts_bad, flen, wkey, 3);
    E2E_CHECK(st.error == QUAY_EINVAL);
    st = put(t, right, ends_bad, flen, wkey, AREA + 5);
    E2E_CHECK(st.error == QUAY_EINVAL);
    st = put(t, right, starts_bad, flen, wkey, AREA + 5);
    E2E_CHECK(st.error == QUAY_EINVAL);
    /* The target's memory: its trap page at the end of the transfer, then
     * at the start. */
    size_t tend = tp * page + 100 - flen, tstart = (tp + 1) * page - 100;
    st = get(t, right, buf, flen, tkey, tend);
    E2E_CHECK(st.error == QUAY_EINVAL);
    st = get(t, right, buf, flen, tkey, tstart);
    E2E_CHECK(st.error == QUAY_EINVAL);
    st = put(t, right, src, flen, tkey, tend);
    E2E_CHECK(st.error == QUAY_EINVAL);
    st = put(t, right, src, flen, tkey, tstart);
    E2E_CHECK(st.error == QUAY_EINVAL);
    /* Accessible parts of the same memory still work. */
    memset(mine, 0, tp * page);
    st = get(t, right, mine, flen, wkey, 11);
    E2E_CHECK(st.error == 0 && verify_at(mine, flen, ref, 11) < 0);
    count += 9;
    munmap(mine, (2 * tp + 1) * page);
    free(src);
    free(buf);
    return count;
}

int main(void)
{
    e2e t;
    e2e_init(&t);
    page = (size_t)sysconf(_SC_PAGESIZE);
    int32_t n = t.size, me = t.rank, right = (me + 1) % n;
    E2E_CHECK(n >= 2);
    uint32_t caps = qrt_caps(t.rt);
    if ((caps & (QUAY_CAP_RDMA_GET | QUAY_CAP_RDMA_PUT)) !=
        (QUAY_CAP_RDMA_GET | QUAY_CAP_RDMA_PUT)) {
        printf("rank %d: no single copy (caps 0x%x): nothing to do\n", (int)me, caps);
        return e2e_finish(&t);
    }

    /* The threshold the transport uses (the same environment). */
    size_t thr = 32 << 10; /* adapters/shm/shm_rdma.c: SPLIT_KB_DEFAULT */
    const char *s = getenv("QUAY_SHM_SPLIT_KB");
    if (s != NULL && *s != '\0')
        thr = (size_t)strtoull(s, NULL, 0) << 10;
    if (thr == 0 || thr > AREA / 4)
        thr = AREA / 4; /* off or huge: the same lengths, none split */

    /* Window: [0, AREA) a pattern seeded by the rank, [AREA, 2 AREA) for
     * the left neighbour's puts. Trap: `tp` accessible pages, then one
     * that is not, then `tp` more (registered as one region). */
    uint8_t *win = malloc(2 * AREA), *ref = malloc(AREA);
    size_t tp = (thr + 3 * page) / page;
    uint8_t *trap = map_pages(2 * tp + 1);
    E2E_CHECK(win != NULL && ref != NULL);
    E2E_CHECK(mprotect(trap + tp * page, page, PROT_NONE) == 0);
    e2e_fill(win, AREA, (uint64_t)(100 + me));
    memset(win + AREA, 0, AREA);
    uint64_t *keys = calloc(2 * (size_t)n, sizeof *keys);
    E2E_CHECK(keys != NULL);
    E2E_OK(quay_mem_register(t.e, win, 2 * AREA, QUAY_MEM_READ | QUAY_MEM_WRITE, &keys[2 * me]));
    E2E_OK(quay_mem_register(t.e, trap, (2 * tp + 1) * page, QUAY_MEM_READ | QUAY_MEM_WRITE,
                             &keys[2 * me + 1]));
    for (int32_t r = 0; r < n; r++) {
        quay_req *q;
        E2E_OK(quay_ibcast(t.e, t.world, &keys[2 * r], 2 * sizeof keys[0], r, &q));
        E2E_CHECK(e2e_wait(&t, q).error == 0);
    }
    uint64_t wkey = keys[2 * right], tkey = keys[2 * right + 1];
    e2e_fill(ref, AREA, (uint64_t)(100 + right)); /* the right neighbour's pattern */

    /* One rank at a time: the target serves and has no action of its own
     * in flight toward its initiator, so it splits what is long enough. */
    int count = 0;
    for (int32_t turn = 0; turn < n; turn++) {
        if (turn == me)
            count = transfers(&t, right, wkey, tkey, ref, thr, tp);
        e2e_barrier(&t);
    }
    /* The last barrier: nobody touches a window after it is gone. */
    E2E_OK(quay_mem_deregister(t.e, keys[2 * me]));
    E2E_OK(quay_mem_deregister(t.e, keys[2 * me + 1]));
    printf("rank %d: split checks done (%d transfers, threshold %zu)\n", (int)me, count, thr);
    munmap(trap, (2 * tp + 1) * page);
    free(keys);
    free(ref);
    free(win);
    return e2e_finish(&t);
}
