/*
 * embed.c — the smallest complete embedding of quay: two engines in one
 * process, a "wire" that is a function call, one message from rank 0 to
 * rank 1. The README's embedding example is taken from this file (a CTest
 * test checks that it still is).
 *
 *   embed [BYTES]    message size, default 18 ("hello from rank 0");
 *                    above eager_max (8 KiB) the rendezvous protocol runs
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <quay/quay.h>

static quay_engine *eng[2];
static unsigned char *pkt; /* one packet: quay_engine_max_packet bytes */

/* Deliver every action of engine r: a transport would write the iovecs to
 * a socket or ring here; we concatenate them and hand them to the peer. */
static void pump(int r)
{
    quay_action a;
    while (quay_next_action(eng[r], &a) == 1) {
        if (a.kind != QUAY_ACT_SEND)
            continue;                 /* COMPLETE: we poll with quay_req_test */
        size_t n = 0;                 /* at most quay_engine_max_packet() */
        for (uint32_t i = 0; i < a.iovcnt; i++) {
            memcpy(pkt + n, a.iov[i].base, a.iov[i].len);
            n += a.iov[i].len;
        }
        quay_on_op_done(eng[r], a.token, 0);     /* iovecs may be reused */
        quay_on_packet(eng[a.peer], r, pkt, n);  /* arrival at the peer */
    }
}

int main(int argc, char **argv)
{
    size_t len = argc > 1 ? strtoul(argv[1], NULL, 10) : 18;
    quay_comm *world[2];
    for (int r = 0; r < 2; r++) {
        quay_config cfg;
        quay_config_default(&cfg);
        cfg.rank = r;
        cfg.nranks = 2;
        cfg.flags = 0; /* no COMPLETE actions: this example polls */
        if (quay_engine_new(&cfg, &eng[r]) != 0 ||
            quay_comm_create(eng[r], 0, 2, NULL, &world[r]) != 0)
            return 1;
    }
    pkt = malloc(quay_engine_max_packet(eng[0]));
    char *msg = malloc(len + 1), *buf = malloc(len + 1);
    if (pkt == NULL || msg == NULL || buf == NULL)
        return 1;
    for (size_t i = 0; i < len; i++)
        msg[i] = (char)('a' + i % 26);
    if (len == 18)
        memcpy(msg, "hello from rank 0", 18);
    quay_req *s, *rq;
    quay_irecv(eng[1], world[1], buf, len, QUAY_ANY_SOURCE, QUAY_ANY_TAG, &rq);
    quay_isend(eng[0], world[0], msg, len, 1, 7, QUAY_SEND_STANDARD, &s);
    quay_status st;
    while (!quay_req_test(rq, &st)) {
        pump(0);
        pump(1);
    }
    buf[len] = '\0';
    if (len == 18)
        printf("rank 1 got \"%s\" from rank %d, tag %d, %llu bytes\n", buf, st.source, st.tag,
               (unsigned long long)st.count);
    else
        printf("rank 1 got %llu bytes from rank %d, tag %d\n", (unsigned long long)st.count,
               st.source, st.tag);
    while (!quay_req_test(s, NULL)) { /* a rendezvous send ends after its data */
        pump(0);
        pump(1);
    }
    int rc = st.error == 0 && st.count == len && memcmp(buf, msg, len) == 0 ? 0 : 1;
    quay_req_free(eng[0], s);
    quay_req_free(eng[1], rq);
    quay_engine_free(eng[0]);
    quay_engine_free(eng[1]);
    free(pkt);
    free(msg);
    free(buf);
    return rc;
}
