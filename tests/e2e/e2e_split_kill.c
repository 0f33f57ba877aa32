/*
 * e2e_split_kill — the target of large one-sided gets dies while it
 * serves them (SIGKILL from a timer, wherever it is: most likely inside
 * its share of a split copy, with the initiator copying the other share).
 * Rank 0 gets 32 MiB from the last rank's window again and again: every
 * get before the death succeeds, the one in flight ends with QUAY_EPEER
 * (once: a second completion would upset the engine or hang finalize),
 * later ones fail at once; rank 0 finalizes and exits 0. Other ranks only
 * wait for the death. Run by expect_kill.sh: quayrun must report the last
 * rank killed by signal 9, and every other rank must say "survived".
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "e2e.h"

#define LEN (32u << 20)
#define KILL_MS 30

static void die(int sig)
{
    (void)sig;
    raise(SIGKILL);
}

int main(void)
{
    e2e t;
    e2e_init(&t);
    E2E_CHECK(t.size >= 2);
    int32_t victim = t.size - 1;
    uint32_t caps = qrt_caps(t.rt);
    uint8_t *buf = malloc(LEN);
    uint64_t key = 0;
    E2E_CHECK(buf != NULL);
    if (t.rank == victim) {
        e2e_fill(buf, LEN, 9);
        E2E_OK(quay_mem_register(t.e, buf, LEN, QUAY_MEM_READ, &key));
    } else {
        memset(buf, 0, LEN); /* touched now: the gets start right after the barrier */
    }
    quay_req *q;
    E2E_OK(quay_ibcast(t.e, t.world, &key, sizeof key, victim, &q));
    E2E_CHECK(e2e_wait(&t, q).error == 0);
    e2e_barrier(&t); /* everyone is up */

    if (t.rank == victim) {
        struct itimerval it = {{0, 0}, {0, KILL_MS * 1000}};
        signal(SIGALRM, die);
        E2E_CHECK(setitimer(ITIMER_REAL, &it, NULL) == 0);
        for (;;) /* serve until killed */
            E2E_CHECK(qrt_progress(t.rt, 1000000) >= 0);
    }

    if (t.rank == 0 && (caps & QUAY_CAP_RDMA_GET)) {
        int ok = 0;
        quay_status st;
        for (;;) {
            int rc = quay_iget(t.e, victim, buf, LEN, key, 0, &q);
            if (rc != 0) {
                E2E_CHECK(rc == QUAY_EPEER);
                break;
            }
            st = e2e_wait(&t, q);
            if (st.error != 0) {
                E2E_CHECK(st.error == QUAY_EPEER);
                break;
            }
            E2E_CHECK(st.count == LEN);
            ok++;
        }
        /* Checked once, at the end (meanwhile the target copies nearly
         * all the time, so that it dies in a copy): every get brings the
         * same bytes, and the failed one only some of them. */
        E2E_CHECK(ok == 0 || e2e_verify(buf, LEN, 9) < 0);
        /* After the death: refused, at once or by its op_done. */
        if (quay_iget(t.e, victim, buf, 64, key, 0, &q) == 0) {
            st = e2e_wait(&t, q);
            E2E_CHECK(st.error == QUAY_EPEER);
        }
        printf("rank 0: %d gets before the target died\n", ok);
    }
    /* Everyone: a receive from the dead rank ends with QUAY_EPEER. */
    char small[8];
    quay_status st = e2e_recv(&t, small, sizeof small, victim, 1);
    E2E_CHECK(st.error == QUAY_EPEER);
    E2E_OK(e2e_finish(&t));
    printf("rank %d: survived\n", (int)t.rank);
    fflush(stdout);
    free(buf);
    return 0;
}
