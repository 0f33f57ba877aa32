/*
 * rt_main.c — smallest user of an installed quay runtime (<quay/quay_rt.h>,
 * libquay_rt), built by CI with find_package(quay) (quay::rt and
 * quay::rt_static) and pkg-config quay-rt, and run alone (rank 0 of 1,
 * every message to itself) and under the installed quayrun -n 2 on both
 * transports. Around the ring: a token (eager) and 1 MiB (rendezvous,
 * single-copy where the transport can). Exit status 0 on success.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <quay/quay_rt.h>

#define BIG ((size_t)1 << 20)

static unsigned char pattern(size_t i, int32_t rank)
{
    return (unsigned char)(i * 7u + (size_t)rank);
}

int main(void)
{
    qrt *rt;
    if (qrt_init(NULL, &rt) != 0)
        return 1;
    quay_engine *e = qrt_engine(rt);
    quay_comm *world = qrt_world(rt);
    int32_t me = qrt_rank(rt), n = qrt_size(rt);
    int32_t next = (me + 1) % n, prev = (me + n - 1) % n;

    int32_t token = me, got = -1;
    unsigned char *out = malloc(BIG), *in = calloc(1, BIG);
    if (out == NULL || in == NULL) {
        fprintf(stderr, "rank %d: out of memory\n", (int)me);
        qrt_abort(rt, 1, "out of memory");
    }
    for (size_t i = 0; i < BIG; i++)
        out[i] = pattern(i, me);

    /* Receives first, so that nothing waits in the unexpected queue. */
    quay_req *rq[4];
    quay_status st[4];
    int rc = quay_irecv(e, world, &got, sizeof got, prev, 1, &rq[0]);
    if (rc == QUAY_OK)
        rc = quay_irecv(e, world, in, BIG, prev, 2, &rq[1]);
    if (rc == QUAY_OK)
        rc = quay_isend(e, world, &token, sizeof token, next, 1, QUAY_SEND_STANDARD, &rq[2]);
    if (rc == QUAY_OK)
        rc = quay_isend(e, world, out, BIG, next, 2, QUAY_SEND_STANDARD, &rq[3]);
    if (rc == QUAY_OK)
        rc = qrt_wait_all(rt, 4, rq, st);
    if (rc != QUAY_OK) {
        fprintf(stderr, "rank %d: %s\n", (int)me, quay_strerror(rc));
        qrt_abort(rt, 1, "ring failed");
    }
    for (int i = 0; i < 4; i++)
        quay_req_free(e, rq[i]);

    size_t bad = 0;
    for (size_t i = 0; i < BIG; i++)
        bad += in[i] != pattern(i, prev);
    int ok = got == prev && st[0].error == 0 && st[0].source == prev && st[1].error == 0 &&
             st[1].source == prev && st[1].count == BIG && bad == 0;
    printf("quay %s runtime, %s: rank %d of %d, token %d from rank %d, %zu bytes (%zu wrong): "
           "%s\n",
           QUAY_VERSION, qrt_transport_name(rt), (int)me, (int)n, (int)got, (int)prev,
           (size_t)st[1].count, bad, ok ? "ok" : "FAILED");
    free(out);
    free(in);
    if (qrt_finalize(rt) != 0)
        return 1;
    return ok ? 0 : 1;
}
