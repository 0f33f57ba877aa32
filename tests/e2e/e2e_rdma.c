/*
 * e2e_rdma — one-sided operations between processes: every rank registers
 * a window and publishes its key; then puts into its right neighbour's,
 * gets from the one after, and every rank adds to a counter on rank 0
 * with remote atomics (fetch-and-add; one compare-and-swap race, one
 * winner). A forged key is refused, not dereferenced. Put / get need
 * single copy (QUAY_CAP_RDMA_GET / PUT); atomics always work.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"

#define WIN 8192
#define SLOT 64
#define COUNTER 4096 /* offset of the counter word in rank 0's window */
#define FLAG 4104    /* offset of the compare-and-swap word */
#define ADDS 50

int main(void)
{
    e2e t;
    e2e_init(&t);
    int32_t n = t.size, me = t.rank;
    E2E_CHECK(n >= 2 && n * SLOT <= COUNTER);
    uint8_t *win = calloc(1, WIN);
    uint64_t *keys = calloc((size_t)n, sizeof *keys);
    E2E_CHECK(win != NULL && keys != NULL);
    E2E_OK(quay_mem_register(t.e, win, WIN, QUAY_MEM_READ | QUAY_MEM_WRITE, &keys[me]));
    e2e_fill(win, SLOT, (uint64_t)(1000 + me)); /* slot 0: what others get */

    /* Everyone's key, by broadcast from each rank. */
    for (int32_t r = 0; r < n; r++) {
        quay_req *q;
        E2E_OK(quay_ibcast(t.e, t.world, &keys[r], sizeof keys[r], r, &q));
        E2E_CHECK(e2e_wait(&t, q).error == 0);
    }

    quay_req *q;
    quay_status st;
    uint32_t caps = qrt_caps(t.rt);
    if (caps & QUAY_CAP_RDMA_PUT) {
        int32_t right = (me + 1) % n;
        uint8_t src[SLOT];
        e2e_fill(src, SLOT, (uint64_t)(2000 + me));
        E2E_OK(quay_iput(t.e, right, src, SLOT, keys[right], (uint64_t)(me + 1) * SLOT, &q));
        st = e2e_wait(&t, q);
        E2E_CHECK(st.error == 0 && st.count == SLOT);
    }
    if (caps & QUAY_CAP_RDMA_GET) {
        int32_t far = (me + 2) % n;
        uint8_t dst[SLOT];
        E2E_OK(quay_iget(t.e, far, dst, SLOT, keys[far], 0, &q));
        st = e2e_wait(&t, q);
        E2E_CHECK(st.error == 0 && e2e_verify(dst, SLOT, (uint64_t)(1000 + far)) < 0);
        /* A forged key: refused by the target's engine. */
        E2E_OK(quay_iget(t.e, far, dst, SLOT, keys[far] ^ 0x5a5a0000u, 0, &q));
        st = e2e_wait(&t, q);
        E2E_CHECK(st.error == QUAY_ESTATE || st.error == QUAY_EPROTO);
    }

    /* Atomics on rank 0's counter; rank 0 takes part too (to itself:
     * done at once by its engine). */
    uint64_t old, winners = 0;
    for (int i = 0; i < ADDS; i++) {
        E2E_OK(quay_iatomic(t.e, 0, QUAY_ATOMIC_FADD, keys[0], COUNTER, 1, 0, &old, &q));
        st = e2e_wait(&t, q);
        E2E_CHECK(st.error == 0 && old < (uint64_t)n * ADDS);
    }
    E2E_OK(quay_iatomic(t.e, 0, QUAY_ATOMIC_CAS, keys[0], FLAG, (uint64_t)me + 1, 0, &old, &q));
    st = e2e_wait(&t, q);
    E2E_CHECK(st.error == 0);
    winners = old == 0;
    uint64_t total = 0;
    E2E_OK(quay_iallreduce(t.e, t.world, &winners, &total, 1, QUAY_UINT64,
                           &(quay_op){QUAY_OP_SUM, 1, NULL, NULL}, &q));
    E2E_CHECK(e2e_wait(&t, q).error == 0 && total == 1);
    e2e_barrier(&t); /* every operation on every window is done */

    if (caps & QUAY_CAP_RDMA_PUT) {
        int32_t left = (me + n - 1) % n;
        E2E_CHECK(e2e_verify(win + (size_t)(left + 1) * SLOT, SLOT, (uint64_t)(2000 + left)) < 0);
    }
    if (me == 0) {
        uint64_t c, f;
        memcpy(&c, win + COUNTER, 8);
        memcpy(&f, win + FLAG, 8);
        E2E_CHECK(c == (uint64_t)n * ADDS && f >= 1 && f <= (uint64_t)n);
    }
    e2e_barrier(&t); /* nobody touches a window after it is gone */
    E2E_OK(quay_mem_deregister(t.e, keys[me]));
    printf("rank %d: rdma done (caps 0x%x)\n", (int)me, caps);
    free(keys);
    free(win);
    return e2e_finish(&t);
}
