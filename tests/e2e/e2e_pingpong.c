/*
 * e2e_pingpong — two ranks bounce messages of every protocol size (empty,
 * eager, at the eager limit, rendezvous, several fragments) in standard
 * and synchronous mode and check every byte, source, tag and count.
 * Ranks beyond two pair up the same way (0-1, 2-3, ...).
 */
#include <stdio.h>
#include <stdlib.h>

#include "e2e.h"

static const size_t sizes[] = {0,     1,      8,      1000,    8192,    8193,
                               65536, 65601, 300000, 1 << 20, 3 << 20};

int main(void)
{
    e2e t;
    e2e_init(&t);
    int32_t peer = t.rank ^ 1;
    int iters = e2e_sanitized() ? 2 : 5;
    size_t max = 3 << 20;
    uint8_t *buf = malloc(max);
    E2E_CHECK(buf != NULL);
    if (peer >= t.size) /* odd count: the last rank has no partner */
        peer = -1;
    for (size_t k = 0; peer >= 0 && k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        for (int i = 0; i < iters; i++) {
            uint64_t seed = n * 131 + (uint64_t)i;
            int32_t tag = (int32_t)(k * 100 + (size_t)i);
            quay_send_mode mode = (i & 1) ? QUAY_SEND_SYNC : QUAY_SEND_STANDARD;
            if ((t.rank & 1) == 0) {
                quay_req *r;
                e2e_fill(buf, n, seed);
                E2E_OK(quay_isend(t.e, t.world, buf, n, peer, tag, mode, &r));
                quay_status st = e2e_wait(&t, r);
                E2E_CHECK(st.error == 0);
                st = e2e_recv(&t, buf, max, peer, tag);
                E2E_CHECK(st.error == 0 && st.source == peer && st.tag == tag && st.count == n);
                E2E_CHECK(e2e_verify(buf, n, seed + 1) < 0);
            } else {
                quay_status st = e2e_recv(&t, buf, n, peer, tag);
                E2E_CHECK(st.error == 0 && st.source == peer && st.tag == tag && st.count == n);
                E2E_CHECK(e2e_verify(buf, n, seed) < 0);
                e2e_fill(buf, n, seed + 1);
                e2e_send(&t, buf, n, peer, tag);
            }
        }
    }
    quay_stats s;
    quay_engine_stats(t.e, &s);
    printf("rank %d: pingpong done (caps 0x%x, rndv get %llu put %llu copy %llu)\n",
           (int)t.rank, qrt_caps(t.rt), (unsigned long long)s.rndv_get,
           (unsigned long long)s.rndv_put, (unsigned long long)s.rndv_copy);
    free(buf);
    return e2e_finish(&t);
}
