/*
 * e2e_trunc — messages longer than the receive buffer, eager and
 * rendezvous: the receive completes with QUAY_ETRUNCATE, holds the first
 * `cap` bytes, and not one byte past `cap` is written (a guard zone after
 * the buffer keeps its fill).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"

#define GUARD 4096
#define FILL 0xAB

static const struct {
    size_t len, cap;
} cases[] = {
    {100, 50},          /* eager */
    {8192, 1},          /* eager at the limit */
    {100000, 60000},    /* rendezvous, cut inside a fragment */
    {2000000, 524288},  /* rendezvous, cut at a fragment boundary */
    {300000, 0},        /* nothing fits */
};

int main(void)
{
    e2e t;
    e2e_init(&t);
    E2E_CHECK(t.size == 2);
    uint8_t *buf = malloc(2000000 + GUARD);
    E2E_CHECK(buf != NULL);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        size_t len = cases[k].len, cap = cases[k].cap;
        if (t.rank == 0) {
            quay_req *r;
            e2e_fill(buf, len, k);
            E2E_OK(quay_isend(t.e, t.world, buf, len, 1, (int32_t)k, QUAY_SEND_STANDARD, &r));
            quay_status st = e2e_wait(&t, r);
            E2E_CHECK(st.error == 0 && st.count == len);
        } else {
            memset(buf, FILL, cap + GUARD);
            quay_status st = e2e_recv(&t, buf, cap, 0, (int32_t)k);
            E2E_CHECK(st.error == QUAY_ETRUNCATE);
            E2E_CHECK(st.count == cap && st.source == 0 && st.tag == (int32_t)k);
            E2E_CHECK(e2e_verify(buf, cap, k) < 0);
            for (size_t i = cap; i < cap + GUARD; i++)
                if (buf[i] != FILL)
                    e2e_fail(__FILE__, __LINE__, "case %zu: byte %zu past cap %zu written", k,
                             i, cap);
        }
    }
    e2e_barrier(&t);
    printf("rank %d: truncation done\n", (int)t.rank);
    free(buf);
    return e2e_finish(&t);
}
