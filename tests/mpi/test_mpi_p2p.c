/*
 * test_mpi_p2p.c — point-to-point semantics of the binding, as the MPI
 * standard states them: the four send modes, non-overtaking with
 * wildcards, probes and matched probes, sendrecv, the multiple-completion
 * calls, cancel, request free, counts, communicator isolation, and the
 * environment queries. Standard MPI only; needs at least 2 ranks.
 */
#include "mpitest.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Synchronous send: not complete before the receiver matched. */
static void modes(void)
{
    int x = 11, y = 0, flag;
    MPI_Request r;
    if (rank == 0) {
        MPI_Issend(&x, 1, MPI_INT, 1, 1, MPI_COMM_WORLD, &r);
        for (int i = 0; i < 100; i++) {
            MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
            CHECK(!flag); /* rank 1 is still in the barrier below */
        }
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 1) {
            MPI_Recv(&y, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(y == 11);
        }
    }

    /* Ready sends, blocking and not: the receives are posted before the
     * barrier. */
    int y2 = 0;
    MPI_Request r2;
    if (rank == 1) {
        MPI_Irecv(&y, 1, MPI_INT, 0, 2, MPI_COMM_WORLD, &r);
        MPI_Irecv(&y2, 1, MPI_INT, 0, 12, MPI_COMM_WORLD, &r2);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        x = 22;
        MPI_Rsend(&x, 1, MPI_INT, 1, 2, MPI_COMM_WORLD);
        int x2 = 23;
        MPI_Irsend(&x2, 1, MPI_INT, 1, 12, MPI_COMM_WORLD, &r2);
        MPI_Wait(&r2, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
        MPI_Status st;
        int n;
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        MPI_Wait(&r2, &st);
        MPI_Get_elements(&st, MPI_INT, &n);
        CHECK(y == 22 && y2 == 23 && n == 1);
    }

    /* Buffered sends: complete locally; detach waits until they left. */
    if (rank == 0) {
        int n = 3 * (MPI_BSEND_OVERHEAD + 1000 * (int)sizeof(int));
        char *bb = malloc((size_t)n);
        int *v = malloc(3000 * sizeof(int));
        for (int i = 0; i < 3000; i++)
            v[i] = i;
        MPI_Buffer_attach(bb, n);
        MPI_Bsend(v, 1000, MPI_INT, 1, 3, MPI_COMM_WORLD);
        MPI_Ibsend(v + 1000, 1000, MPI_INT, 1, 3, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        memset(v, 0, 3000 * sizeof(int)); /* the copies are in bb */
        void *back;
        int backn;
        MPI_Buffer_detach(&back, &backn);
        CHECK(back == bb && backn == n);
        free(bb);
        free(v);
    } else if (rank == 1) {
        int *v = malloc(1000 * sizeof(int));
        for (int k = 0; k < 2; k++) {
            MPI_Recv(v, 1000, MPI_INT, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(v[0] == 1000 * k && v[999] == 1000 * k + 999);
        }
        free(v);
    }
}

/* Messages from one sender are received in send order, whatever mix of
 * specific and wildcard receives takes them; sizes straddle eager and
 * rendezvous. */
static void ordering(void)
{
    enum { N = 40 };
    static const int lens[] = {1, 100, 3000, 70000, 300000};
    if (rank == 0) {
        MPI_Request rs[N];
        int *bufs[N];
        for (int i = 0; i < N; i++) {
            int len = lens[i % 5];
            bufs[i] = malloc((size_t)len * sizeof(int));
            for (int k = 0; k < len; k++)
                bufs[i][k] = i * 7 + k;
            MPI_Isend(bufs[i], len, MPI_INT, 1, i % 3, MPI_COMM_WORLD, &rs[i]);
        }
        MPI_Waitall(N, rs, MPI_STATUSES_IGNORE);
        for (int i = 0; i < N; i++)
            free(bufs[i]);
    } else if (rank == 1) {
        int *b = malloc(300000 * sizeof(int));
        for (int i = 0; i < N; i++) {
            MPI_Status st;
            int src = i % 2 ? MPI_ANY_SOURCE : 0, tag = i % 4 == 0 ? MPI_ANY_TAG : i % 3;
            MPI_Recv(b, 300000, MPI_INT, src, tag, MPI_COMM_WORLD, &st);
            int count;
            MPI_Get_count(&st, MPI_INT, &count);
            CHECK(st.MPI_SOURCE == 0 && st.MPI_TAG == i % 3 && count == lens[i % 5]);
            CHECK(b[0] == i * 7 && b[count - 1] == i * 7 + count - 1);
        }
        free(b);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static void probes(void)
{
    MPI_Status st;
    MPI_Message m;
    int flag, count;
    if (rank == 0) {
        double d[5] = {1, 2, 3, 4, 5};
        MPI_Send(d, 5, MPI_DOUBLE, 1, 9, MPI_COMM_WORLD);
        MPI_Send(d, 3, MPI_DOUBLE, 1, 10, MPI_COMM_WORLD);
        MPI_Send(d, 2, MPI_DOUBLE, 1, 11, MPI_COMM_WORLD);
    } else if (rank == 1) {
        double d[5] = {0};
        MPI_Probe(0, 9, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_DOUBLE, &count);
        CHECK(count == 5 && st.MPI_TAG == 9 && st.MPI_SOURCE == 0);
        MPI_Get_count(&st, MPI_INT, &count);
        CHECK(count == 10);
        MPI_Get_count(&st, MPI_2INT, &count);
        CHECK(count == 5);
        MPI_Get_count(&st, MPI_C_DOUBLE_COMPLEX, &count);
        CHECK(count == MPI_UNDEFINED); /* 40 bytes are not whole 16-byte elements */
        MPI_Recv(d, 5, MPI_DOUBLE, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        /* Matched probe: the message is ours; a plain receive can't take it. */
        MPI_Mprobe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &m, &st);
        CHECK(st.MPI_TAG == 10 && m != MPI_MESSAGE_NULL);
        do
            MPI_Iprobe(0, 11, MPI_COMM_WORLD, &flag, &st);
        while (!flag);
        MPI_Iprobe(0, 10, MPI_COMM_WORLD, &flag, &st);
        CHECK(!flag);
        MPI_Mrecv(d, 5, MPI_DOUBLE, &m, &st);
        MPI_Get_count(&st, MPI_DOUBLE, &count);
        CHECK(m == MPI_MESSAGE_NULL && count == 3 && d[2] == 3);
        MPI_Request r;
        do
            MPI_Improbe(0, 11, MPI_COMM_WORLD, &flag, &m, &st);
        while (!flag);
        MPI_Imrecv(d, 5, MPI_DOUBLE, &m, &r);
        MPI_Wait(&r, &st);
        CHECK(st.MPI_TAG == 11);
    }
    /* The null process: found at once, receives nothing. */
    MPI_Improbe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &flag, &m, &st);
    CHECK(flag && m == MPI_MESSAGE_NO_PROC && st.MPI_SOURCE == MPI_PROC_NULL);
    MPI_Mrecv(NULL, 0, MPI_INT, &m, &st);
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(m == MPI_MESSAGE_NULL && count == 0 && st.MPI_SOURCE == MPI_PROC_NULL);
    MPI_Probe(MPI_PROC_NULL, 3, MPI_COMM_WORLD, &st);
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void sendrecv_ring(void)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    long v[100], w[100];
    for (int i = 0; i < 100; i++)
        v[i] = rank * 1000L + i;
    MPI_Status st;
    MPI_Sendrecv(v, 100, MPI_LONG, right, 4, w, 100, MPI_LONG, left, 4, MPI_COMM_WORLD, &st);
    CHECK(st.MPI_SOURCE == left && w[99] == left * 1000L + 99);
    MPI_Sendrecv_replace(v, 100, MPI_LONG, right, 5, MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, &st);
    CHECK(st.MPI_SOURCE == left && v[0] == left * 1000L);
}

/* Waitany / Testany / Waitsome / Testsome / Testall. */
static void completion(void)
{
    enum { N = 6 };
    int in[N], out[N];
    MPI_Request rs[N];
    MPI_Status sts[N];
    int peer = rank ^ 1, idx, flag, outcount, indices[N];
    if (peer >= size) { /* the odd one out: only the barriers */
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        return;
    }
    for (int i = 0; i < N; i++) {
        out[i] = rank * 100 + i;
        MPI_Irecv(&in[i], 1, MPI_INT, peer, i, MPI_COMM_WORLD, &rs[i]);
    }
    /* Nothing sent yet: nothing may complete. */
    MPI_Testany(N, rs, &idx, &flag, MPI_STATUS_IGNORE);
    CHECK(!flag && idx == MPI_UNDEFINED);
    MPI_Testall(N, rs, &flag, MPI_STATUSES_IGNORE);
    CHECK(!flag);
    MPI_Testsome(N, rs, &outcount, indices, sts);
    CHECK(outcount == 0);
    MPI_Barrier(MPI_COMM_WORLD);
    /* Send 3 first; the receiver takes them with Waitany. */
    MPI_Send(&out[3], 1, MPI_INT, peer, 3, MPI_COMM_WORLD);
    MPI_Waitany(N, rs, &idx, &sts[0]);
    CHECK(idx == 3 && rs[3] == MPI_REQUEST_NULL && in[3] == peer * 100 + 3 &&
          sts[0].MPI_TAG == 3);
    MPI_Barrier(MPI_COMM_WORLD); /* the rest only once the peer has taken 3 */
    for (int i = 0; i < N; i++)
        if (i != 3)
            MPI_Send(&out[i], 1, MPI_INT, peer, i, MPI_COMM_WORLD);
    int done = 1;
    while (done < N) {
        MPI_Waitsome(N, rs, &outcount, indices, sts);
        CHECK(outcount != MPI_UNDEFINED && outcount >= 1);
        for (int k = 0; k < outcount; k++) {
            CHECK(rs[indices[k]] == MPI_REQUEST_NULL && sts[k].MPI_TAG == indices[k]);
            CHECK(in[indices[k]] == peer * 100 + indices[k]);
        }
        done += outcount;
    }
    MPI_Waitsome(N, rs, &outcount, indices, sts);
    CHECK(outcount == MPI_UNDEFINED);
    MPI_Waitany(N, rs, &idx, &sts[0]);
    CHECK(idx == MPI_UNDEFINED);
    MPI_Testall(N, rs, &flag, MPI_STATUSES_IGNORE);
    CHECK(flag);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void cancel_and_free(void)
{
    int x = 5, y;
    MPI_Request r;
    MPI_Status st;
    int flag;
    /* An unmatched receive cancels. */
    MPI_Irecv(&y, 1, MPI_INT, 0, 77, MPI_COMM_WORLD, &r);
    MPI_Cancel(&r);
    MPI_Wait(&r, &st);
    MPI_Test_cancelled(&st, &flag);
    CHECK(flag);
    /* A send nobody receives: cancel succeeds, or (if already matched)
     * the message is delivered; either way both ends agree. */
    if (rank == 0) {
        MPI_Issend(&x, 1, MPI_INT, 1, 78, MPI_COMM_WORLD, &r);
        MPI_Cancel(&r);
        MPI_Wait(&r, &st);
        MPI_Test_cancelled(&st, &flag);
        MPI_Send(&flag, 1, MPI_INT, 1, 79, MPI_COMM_WORLD);
    } else if (rank == 1) {
        MPI_Recv(&flag, 1, MPI_INT, 0, 79, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (!flag)
            MPI_Recv(&y, 1, MPI_INT, 0, 78, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Iprobe(0, 78, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        CHECK(!flag);
    }
    /* A freed send still gets delivered. */
    if (rank == 0) {
        MPI_Isend(&x, 1, MPI_INT, 1, 80, MPI_COMM_WORLD, &r);
        MPI_Request_free(&r);
        CHECK(r == MPI_REQUEST_NULL);
    } else if (rank == 1) {
        MPI_Recv(&y, 1, MPI_INT, 0, 80, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(y == 5);
    }
    /* Request_get_status does not free. */
    MPI_Isend(&x, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &r);
    do
        MPI_Request_get_status(r, &flag, &st);
    while (!flag);
    CHECK(r != MPI_REQUEST_NULL);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* A message on a dup'd communicator is not seen on its parent. */
static void isolation(void)
{
    MPI_Comm dup, rev;
    int res, flag, x = 1;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_compare(MPI_COMM_WORLD, dup, &res);
    CHECK(res == MPI_CONGRUENT);
    MPI_Comm_compare(dup, dup, &res);
    CHECK(res == MPI_IDENT);
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &rev);
    MPI_Comm_compare(MPI_COMM_WORLD, rev, &res);
    CHECK(res == (size == 1 ? MPI_CONGRUENT : MPI_SIMILAR));
    MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_SELF, &res);
    CHECK(res == (size == 1 ? MPI_CONGRUENT : MPI_UNEQUAL));
    int rr;
    MPI_Comm_rank(rev, &rr);
    CHECK(rr == size - 1 - rank);
    if (rank == 0)
        MPI_Send(&x, 1, MPI_INT, 1, 0, dup);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        MPI_Status st;
        MPI_Probe(0, 0, dup, &st); /* arrived */
        MPI_Iprobe(0, 0, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        CHECK(!flag);
        MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, dup, MPI_STATUS_IGNORE);
    }
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    MPI_Comm_set_name(dup, "my dup");
    MPI_Comm_get_name(dup, name, &len);
    CHECK(strcmp(name, "my dup") == 0 && len == 6);
    MPI_Comm_get_name(MPI_COMM_WORLD, name, &len);
    CHECK(strcmp(name, "MPI_COMM_WORLD") == 0);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&rev);
    CHECK(dup == MPI_COMM_NULL && rev == MPI_COMM_NULL);
    /* MPI_Comm_free with a receive still pending on it: the receive
     * completes normally (MPI-3.1 §6.4.3). */
    MPI_Comm tmp;
    MPI_Request r;
    MPI_Comm_dup(MPI_COMM_WORLD, &tmp);
    if (rank == 1) {
        int got = 0;
        MPI_Irecv(&got, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, tmp, &r);
        MPI_Comm_free(&tmp);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Status st;
        CHECK(MPI_Wait(&r, &st) == MPI_SUCCESS && got == 31 && st.MPI_SOURCE == 0);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            x = 31;
            MPI_Send(&x, 1, MPI_INT, 1, 3, tmp);
        }
        MPI_Comm_free(&tmp);
    }
    /* Many communicators made and freed: ids and slots are reused well. */
    for (int i = 0; i < 300; i++) {
        MPI_Comm c;
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &c);
        MPI_Comm_free(&c);
    }
}

static void environment(void)
{
    int flag, provided, v, sv, len;
    MPI_Initialized(&flag);
    CHECK(flag);
    MPI_Finalized(&flag);
    CHECK(!flag);
    MPI_Query_thread(&provided);
    CHECK(provided == MPI_THREAD_FUNNELED);
    MPI_Is_thread_main(&flag);
    CHECK(flag);
    MPI_Get_version(&v, &sv);
    CHECK(v == MPI_VERSION && sv == MPI_SUBVERSION);
    char name[MPI_MAX_PROCESSOR_NAME];
    MPI_Get_processor_name(name, &len);
    CHECK(len > 0 && len == (int)strlen(name));
    double t0 = MPI_Wtime(), t1 = MPI_Wtime();
    CHECK(t1 >= t0 && MPI_Wtick() > 0 && MPI_Wtick() < 1);
}

/* Interleaved specific and wildcard receives, all posted before anything
 * arrives: each message goes to the first posted receive it matches
 * (MPI-3.1 §3.5), whatever its size (eager or rendezvous). */
static void interleaved(void)
{
    enum { BIG = 200000 };
    if (rank == 0) {
        int *m = malloc(BIG * sizeof(int));
        for (int i = 0; i < BIG; i++)
            m[i] = i;
        MPI_Barrier(MPI_COMM_WORLD);
        m[0] = 1;
        MPI_Send(m, BIG, MPI_INT, 1, 22, MPI_COMM_WORLD); /* -> R1 (wildcard) */
        m[0] = 2;
        MPI_Send(m, 3, MPI_INT, 1, 21, MPI_COMM_WORLD); /* -> R0 */
        m[0] = 3;
        MPI_Send(m, BIG, MPI_INT, 1, 21, MPI_COMM_WORLD); /* -> R2 */
        m[0] = 4;
        MPI_Send(m, 1, MPI_INT, 1, 22, MPI_COMM_WORLD); /* -> R3 */
        free(m);
    } else if (rank == 1) {
        int *b[4];
        MPI_Request r[4];
        MPI_Status st[4];
        for (int i = 0; i < 4; i++)
            b[i] = calloc(BIG, sizeof(int));
        MPI_Irecv(b[0], BIG, MPI_INT, 0, 21, MPI_COMM_WORLD, &r[0]);
        MPI_Irecv(b[1], BIG, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &r[1]);
        MPI_Irecv(b[2], BIG, MPI_INT, 0, 21, MPI_COMM_WORLD, &r[2]);
        MPI_Irecv(b[3], BIG, MPI_INT, MPI_ANY_SOURCE, 22, MPI_COMM_WORLD, &r[3]);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Waitall(4, r, st);
        CHECK(b[0][0] == 2 && b[1][0] == 1 && b[2][0] == 3 && b[3][0] == 4);
        CHECK(st[1].MPI_TAG == 22 && st[1].MPI_SOURCE == 0 && b[1][BIG - 1] == BIG - 1);
        CHECK(b[2][BIG - 1] == BIG - 1);
        for (int i = 0; i < 4; i++)
            free(b[i]);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
    }
}

/* A message taken by MPI_Mprobe belongs to its MPI_Message: a wildcard
 * receive posted afterwards gets the next message, not that one. */
static void mprobe_not_stolen(void)
{
    if (rank == 0) {
        int a = 100, b = 200;
        MPI_Send(&a, 1, MPI_INT, 1, 30, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Send(&b, 1, MPI_INT, 1, 30, MPI_COMM_WORLD);
    } else if (rank == 1) {
        MPI_Message m;
        MPI_Request r;
        int x = 0, y = 0;
        MPI_Mprobe(0, 30, MPI_COMM_WORLD, &m, MPI_STATUS_IGNORE);
        MPI_Irecv(&y, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &r);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        MPI_Mrecv(&x, 1, MPI_INT, &m, MPI_STATUS_IGNORE);
        CHECK(x == 100 && y == 200);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
    }
}

/* Zero bytes, self-sends (eager and rendezvous, receive posted before and
 * after), the null process, and a buffered send completing before its
 * receiver even posts (bsend is local). */
static void edges(void)
{
    MPI_Status st;
    MPI_Request r;
    int count, right = (rank + 1) % size, left = (rank + size - 1) % size;
    /* Zero bytes (NULL buffer allowed). */
    MPI_Sendrecv(NULL, 0, MPI_INT, right, 40, NULL, 0, MPI_INT, left, 40, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == 0 && st.MPI_SOURCE == left && st.MPI_TAG == 40);
    /* Self, rendezvous size, send first: Isend then Recv. */
    enum { N = 100000 };
    double *a = malloc(N * sizeof(double)), *b = calloc(N, sizeof(double));
    for (int i = 0; i < N; i++)
        a[i] = i * 0.5;
    MPI_Isend(a, N, MPI_DOUBLE, rank, 41, MPI_COMM_WORLD, &r);
    MPI_Recv(b, N, MPI_DOUBLE, rank, 41, MPI_COMM_WORLD, &st);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    CHECK(b[N - 1] == (N - 1) * 0.5 && st.MPI_SOURCE == rank);
    /* Self, receive first, eager and synchronous. */
    int x = 7, y = 0;
    MPI_Irecv(&y, 1, MPI_INT, MPI_ANY_SOURCE, 42, MPI_COMM_WORLD, &r);
    MPI_Ssend(&x, 1, MPI_INT, rank, 42, MPI_COMM_WORLD);
    MPI_Wait(&r, &st);
    CHECK(y == 7 && st.MPI_SOURCE == rank);
    free(a);
    free(b);
    /* The null process. */
    MPI_Send(&x, 1, MPI_INT, MPI_PROC_NULL, 43, MPI_COMM_WORLD);
    y = -1;
    MPI_Recv(&y, 1, MPI_INT, MPI_PROC_NULL, 43, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(y == -1 && count == 0 && st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG);
    /* Bsend is local: rank 0's completes while rank 1 is in the barrier
     * (were it not, the barrier would never end). */
    if (rank == 0) {
        int n = MPI_BSEND_OVERHEAD + 64 * (int)sizeof(int);
        void *bb = malloc((size_t)n), *back;
        int v[64] = {9};
        MPI_Buffer_attach(bb, n);
        MPI_Bsend(v, 64, MPI_INT, 1, 44, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Buffer_detach(&back, &n);
        free(bb);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 1) {
            int v[64];
            MPI_Recv(v, 64, MPI_INT, 0, 44, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(v[0] == 9);
        }
    }
}

/* A ready send that finds no posted receive is erroneous; the binding
 * reports it at the sender (MPI_ERR_OTHER) and at the receive that takes
 * the message. */
static void ready_without_receive(void)
{
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    int x = 1, y = 0, cls;
    if (rank == 0) {
        int rc = MPI_Rsend(&x, 1, MPI_INT, 1, 50, c);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_OTHER);
        MPI_Barrier(c);
    } else {
        MPI_Barrier(c);
        if (rank == 1) {
            int rc = MPI_Recv(&y, 1, MPI_INT, 0, 50, c, MPI_STATUS_IGNORE);
            MPI_Error_class(rc, &cls);
            CHECK(cls == MPI_ERR_OTHER && y == 0);
        }
    }
    MPI_Comm_free(&c);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        fprintf(stderr, "test_mpi_p2p needs at least 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    environment();
    modes();
    ordering();
    probes();
    sendrecv_ring();
    completion();
    cancel_and_free();
    isolation();
    interleaved();
    mprobe_not_stolen();
    edges();
    ready_without_receive();
    int all = mpitest_total("test_mpi_p2p");
    MPI_Finalize();
    int fin;
    MPI_Finalized(&fin);
    return all != 0 || !fin;
}
