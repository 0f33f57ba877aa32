/*
 * embed.c — the smallest complete embedding of quay: two engines in one
 * process, a "wire" that is a function call, one message each way.
 * The README's embedding example is this file's pump().
 */
#include <stdio.h>
#include <string.h>

#include <quay/quay.h>

static quay_engine *eng[2];

/* Deliver every action of engine r: a transport would write the iovecs to
 * a socket or ring here; we concatenate them and hand them to the peer. */
static void pump(int r)
{
    quay_action a;
    unsigned char pkt[QUAY_MAX_HEADER + 8192];
    while (quay_next_action(eng[r], &a) == 1) {
        if (a.kind != QUAY_ACT_SEND)
            continue;                 /* COMPLETE: we poll with quay_req_test */
        size_t n = 0;
        for (uint32_t i = 0; i < a.iovcnt; i++) {
            memcpy(pkt + n, a.iov[i].base, a.iov[i].len);
            n += a.iov[i].len;
        }
        quay_on_op_done(eng[r], a.token, 0);     /* iovecs may be reused */
        quay_on_packet(eng[a.peer], r, pkt, n);  /* arrival at the peer */
    }
}

int main(void)
{
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
    char msg[] = "hello from rank 0", buf[64];
    quay_req *s, *rq;
    quay_irecv(eng[1], world[1], buf, sizeof buf, QUAY_ANY_SOURCE, QUAY_ANY_TAG, &rq);
    quay_isend(eng[0], world[0], msg, sizeof msg, 1, 7, QUAY_SEND_STANDARD, &s);
    quay_status st;
    while (!quay_req_test(rq, &st)) {
        pump(0);
        pump(1);
    }
    printf("rank 1 got \"%s\" from rank %d, tag %d, %llu bytes\n", buf,
           st.source, st.tag, (unsigned long long)st.count);
    int rc = quay_req_test(s, NULL) && st.error == 0 ? 0 : 1;
    quay_req_free(eng[0], s);
    quay_req_free(eng[1], rq);
    quay_engine_free(eng[0]);
    quay_engine_free(eng[1]);
    return rc;
}
