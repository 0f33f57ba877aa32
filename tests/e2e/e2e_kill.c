/*
 * e2e_kill — the last rank kills itself (SIGKILL) in the middle of a run,
 * right after offering rank 0 a large message (its RTS is out, the data
 * is not). Nothing may hang:
 *
 *   - every survivor's pending receive from it ends with QUAY_EPEER;
 *   - what it sent before dying is still received (rank 0, tag 1);
 *   - rank 0's receive of the large message, whose RTS arrived but whose
 *     data the dead rank can no longer serve, ends with QUAY_EPEER;
 *   - the survivors still talk to each other, finalize and exit 0;
 *   - quayrun reports the killed rank and exits 128 + 9.
 *
 * The test script counts the "survived" lines and checks quayrun's status.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"

#define BIG (8u << 20)

int main(void)
{
    e2e t;
    e2e_init(&t);
    E2E_CHECK(t.size >= 2);
    int32_t victim = t.size - 1;
    uint8_t *buf = malloc(BIG);
    E2E_CHECK(buf != NULL);
    quay_req *last;
    e2e_barrier(&t); /* everyone is up */

    if (t.rank == victim) {
        quay_req *r;
        quay_stats s0, s;
        e2e_send(&t, "before", 6, 0, 1);
        e2e_fill(buf, BIG, 3);
        quay_engine_stats(t.e, &s0);
        E2E_OK(quay_isend(t.e, t.world, buf, BIG, 0, 3, QUAY_SEND_STANDARD, &r));
        do { /* until the RTS has left */
            E2E_CHECK(qrt_progress(t.rt, 0) >= 0);
            quay_engine_stats(t.e, &s);
        } while (s.pkts_out == s0.pkts_out);
        raise(SIGKILL);
        e2e_fail(__FILE__, __LINE__, "still alive after SIGKILL");
    }

    char small[16];
    E2E_OK(quay_irecv(t.e, t.world, small, sizeof small, victim, 2, &last));
    quay_status st = e2e_wait(&t, last);
    E2E_CHECK(st.error == QUAY_EPEER);
    if (t.rank == 0) {
        /* Sent before it died: still there. */
        st = e2e_recv(&t, small, sizeof small, victim, 1);
        E2E_CHECK(st.error == 0 && st.count == 6 && memcmp(small, "before", 6) == 0);
        /* Its RTS came too, but the data cannot: only posted now, so that
         * the victim surely never served a byte of it. */
        st = e2e_recv(&t, buf, BIG, victim, 3);
        if (st.error != QUAY_EPEER)
            e2e_fail(__FILE__, __LINE__, "big receive: %s, %llu bytes",
                     quay_strerror(st.error), (unsigned long long)st.count);
    }

    /* The survivors still work together: a ring among them. */
    int32_t n = t.size - 1;
    if (n > 1) {
        int32_t right = (t.rank + 1) % n, left = (t.rank + n - 1) % n;
        quay_req *r;
        int32_t got = -1;
        E2E_OK(quay_irecv(t.e, t.world, &got, sizeof got, left, 4, &r));
        e2e_send(&t, &t.rank, sizeof t.rank, right, 4);
        st = e2e_wait(&t, r);
        E2E_CHECK(st.error == 0 && got == left);
    }
    printf("rank %d survived\n", (int)t.rank);
    fflush(stdout);
    free(buf);
    return e2e_finish(&t);
}
