/*
 * e2e_coll — collectives across processes, with results checked: barriers,
 * broadcasts from every root (eager and rendezvous sizes), reduce and
 * allreduce (int64 sum, double max, in place), run at 2..8 ranks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"

static const size_t bcast_sizes[] = {1, 100, 10000, 300000};
static const size_t counts[] = {1, 1000, 100000};

static void wait_ok(e2e *t, quay_req *r)
{
    quay_status st = e2e_wait(t, r);
    E2E_CHECK(st.error == 0);
}

int main(void)
{
    e2e t;
    e2e_init(&t);
    int64_t n = t.size, me = t.rank;
    quay_req *r;
    uint8_t *buf = malloc(300000);
    int64_t *a = malloc(100000 * sizeof *a), *b = malloc(100000 * sizeof *b);
    double *d = malloc(1000 * sizeof *d);
    E2E_CHECK(buf != NULL && a != NULL && b != NULL && d != NULL);

    for (int i = 0; i < 3; i++)
        e2e_barrier(&t);

    for (size_t k = 0; k < sizeof bcast_sizes / sizeof bcast_sizes[0]; k++) {
        size_t len = bcast_sizes[k];
        for (int32_t root = 0; root < t.size; root++) {
            uint64_t seed = len * 17 + (uint64_t)root;
            if (me == root)
                e2e_fill(buf, len, seed);
            else
                memset(buf, 0, len);
            E2E_OK(quay_ibcast(t.e, t.world, buf, len, root, &r));
            wait_ok(&t, r);
            E2E_CHECK(e2e_verify(buf, len, seed) < 0);
        }
    }

    const quay_op sum = {QUAY_OP_SUM, 1, NULL, NULL};
    const quay_op max = {QUAY_OP_MAX, 1, NULL, NULL};
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
        size_t c = counts[k];
        for (size_t i = 0; i < c; i++)
            a[i] = me * (int64_t)i + 1;
        E2E_OK(quay_iallreduce(t.e, t.world, a, b, c, QUAY_INT64, &sum, &r));
        wait_ok(&t, r);
        for (size_t i = 0; i < c; i++)
            E2E_CHECK(b[i] == (int64_t)i * n * (n - 1) / 2 + n);
        /* In place: the input is the receive buffer. */
        for (size_t i = 0; i < c; i++)
            b[i] = me + (int64_t)i;
        E2E_OK(quay_iallreduce(t.e, t.world, QUAY_IN_PLACE, b, c, QUAY_INT64, &sum, &r));
        wait_ok(&t, r);
        for (size_t i = 0; i < c; i++)
            E2E_CHECK(b[i] == n * (n - 1) / 2 + n * (int64_t)i);
        /* Reduce to the last rank. */
        memset(b, 0, c * sizeof *b);
        for (size_t i = 0; i < c; i++)
            a[i] = me * (int64_t)i + 1;
        E2E_OK(quay_ireduce(t.e, t.world, a, b, c, QUAY_INT64, &sum, t.size - 1, &r));
        wait_ok(&t, r);
        if (me == n - 1)
            for (size_t i = 0; i < c; i++)
                E2E_CHECK(b[i] == (int64_t)i * n * (n - 1) / 2 + n);
    }
    for (int i = 0; i < 1000; i++)
        d[i] = (double)((me + i) % n) + 0.5;
    E2E_OK(quay_iallreduce(t.e, t.world, QUAY_IN_PLACE, d, 1000, QUAY_DOUBLE, &max, &r));
    wait_ok(&t, r);
    for (int i = 0; i < 1000; i++)
        E2E_CHECK(d[i] == (double)(n - 1) + 0.5);

    /* Several at once on one communicator: they must not cross. */
    quay_req *rs[3];
    int64_t x = me + 1, y = 0, z[2] = {me, -me};
    E2E_OK(quay_ibarrier(t.e, t.world, &rs[0]));
    E2E_OK(quay_iallreduce(t.e, t.world, &x, &y, 1, QUAY_INT64, &sum, &rs[1]));
    E2E_OK(quay_iallreduce(t.e, t.world, QUAY_IN_PLACE, z, 2, QUAY_INT64, &max, &rs[2]));
    for (int i = 0; i < 3; i++)
        wait_ok(&t, rs[i]);
    E2E_CHECK(y == n * (n + 1) / 2 && z[0] == n - 1 && z[1] == 0);

    printf("rank %d of %d: collectives done\n", (int)me, (int)n);
    free(buf);
    free(a);
    free(b);
    free(d);
    return e2e_finish(&t);
}
