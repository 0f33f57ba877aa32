/*
 * e2e_cancel — cancelling posted receives: a receive nobody sends to, a
 * wildcard one, and one posted ahead of a message that must then go to
 * the next matching receive; cancelling a completed receive changes
 * nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"

static void cancelled(e2e *t, quay_req *r)
{
    E2E_OK(quay_cancel(t->e, r));
    quay_status st = e2e_wait(t, r);
    E2E_CHECK(st.cancelled == 1 && st.error == QUAY_ECANCELLED);
}

int main(void)
{
    e2e t;
    e2e_init(&t);
    E2E_CHECK(t.size == 2);
    char buf[64], big[100000];
    quay_req *r, *r2;
    if (t.rank == 1) {
        /* Nobody ever sends tag 99, nor anything to an ANY_SOURCE tag 98. */
        E2E_OK(quay_irecv(t.e, t.world, buf, sizeof buf, 0, 99, &r));
        cancelled(&t, r);
        E2E_OK(quay_irecv(t.e, t.world, buf, sizeof buf, QUAY_ANY_SOURCE, 98, &r));
        cancelled(&t, r);
        /* Two receives for tag 7; the first is cancelled before the
         * message comes, so the second gets it. */
        E2E_OK(quay_irecv(t.e, t.world, buf, sizeof buf, 0, 7, &r));
        E2E_OK(quay_irecv(t.e, t.world, big, sizeof big, 0, 7, &r2));
        cancelled(&t, r);
        e2e_barrier(&t);
        quay_status st = e2e_wait(&t, r2);
        E2E_CHECK(st.error == 0 && st.count == sizeof big && st.tag == 7 && st.cancelled == 0);
        E2E_CHECK(e2e_verify(big, sizeof big, 7) < 0);
        /* A completed receive cannot be cancelled. */
        E2E_OK(quay_irecv(t.e, t.world, buf, sizeof buf, 0, 8, &r));
        E2E_OK(qrt_wait(t.rt, r, &st));
        E2E_OK(quay_cancel(t.e, r));
        st = e2e_wait(&t, r);
        E2E_CHECK(st.error == 0 && st.cancelled == 0 && st.count == 5 &&
                  memcmp(buf, "hello", 5) == 0);
    } else {
        e2e_barrier(&t);
        e2e_fill(big, sizeof big, 7);
        e2e_send(&t, big, sizeof big, 1, 7);
        e2e_send(&t, "hello", 5, 1, 8);
    }
    e2e_barrier(&t);
    printf("rank %d: cancel done\n", (int)t.rank);
    return e2e_finish(&t);
}
