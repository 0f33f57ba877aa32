/*
 * e2e_big — 64 MiB from rank 0 to rank 1, checked by a checksum sent
 * ahead, and by the pattern itself. When the transport can move data
 * single-copy (QUAY_CAP_RDMA_GET / PUT), the rendezvous must have used it
 * (engine stats rndv_get / rndv_put); otherwise the DATA-packet path
 * (rndv_copy).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"

#define LEN (64u << 20)

static uint64_t checksum(const uint8_t *b, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a over 8-byte words */
    for (size_t i = 0; i + 8 <= n; i += 8) {
        uint64_t v;
        memcpy(&v, b + i, 8);
        h = (h ^ v) * 1099511628211ull;
    }
    return h;
}

int main(void)
{
    e2e t;
    e2e_init(&t);
    E2E_CHECK(t.size == 2);
    uint8_t *buf = malloc(LEN);
    E2E_CHECK(buf != NULL);
    uint64_t sum;
    if (t.rank == 0) {
        e2e_fill(buf, LEN, 64);
        sum = checksum(buf, LEN);
        e2e_send(&t, &sum, sizeof sum, 1, 1);
        e2e_send(&t, buf, LEN, 1, 2);
    } else {
        quay_status st = e2e_recv(&t, &sum, sizeof sum, 0, 1);
        E2E_CHECK(st.error == 0 && st.count == sizeof sum);
        memset(buf, 0, LEN);
        st = e2e_recv(&t, buf, LEN, 0, 2);
        E2E_CHECK(st.error == 0 && st.count == LEN);
        E2E_CHECK(checksum(buf, LEN) == sum);
        E2E_CHECK(e2e_verify(buf, LEN, 64) < 0);
        quay_stats s;
        quay_engine_stats(t.e, &s);
        uint32_t caps = qrt_caps(t.rt);
        printf("rank 1: 64 MiB received (caps 0x%x: rndv get %llu put %llu copy %llu)\n", caps,
               (unsigned long long)s.rndv_get, (unsigned long long)s.rndv_put,
               (unsigned long long)s.rndv_copy);
        if (caps & (QUAY_CAP_RDMA_GET | QUAY_CAP_RDMA_PUT))
            E2E_CHECK(s.rndv_get + s.rndv_put > 0 && s.rndv_copy == 0);
        else
            E2E_CHECK(s.rndv_copy > 0);
    }
    e2e_barrier(&t);
    free(buf);
    return e2e_finish(&t);
}
