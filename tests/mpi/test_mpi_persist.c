/*
 * test_mpi_persist.c — persistent communication as the MPI standard
 * states it (MPI-4.0 §3.9): Send_init / Bsend_init / Ssend_init /
 * Rsend_init / Recv_init, Start, Startall; rounds of eager and rendezvous
 * sizes with the data checked each round; every send mode; what the
 * completion calls do with active and inactive persistent requests (the
 * handle stays, a round is reported once, inactive ones give an empty
 * status or are ignored); Request_free of inactive and active ones;
 * Cancel of a round, then a new round; MPI_PROC_NULL; starting an active
 * or a non-persistent request is an error. Standard MPI only; needs at
 * least 2 ranks (ranks past 1 take part in the ring and the barriers).
 */
#include "mpitest.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Two message sizes: eager and rendezvous on quay's defaults (8 KiB). */
enum { SMALL = 25, LARGE = 25000 }; /* ints: 100 and 100,000 bytes */

/* The value of element i of the message `from` sends in round k. */
static int val(int from, int k, int i)
{
    return from * 1000003 + k * 7919 + i;
}

static void fill(int *b, int n, int from, int k)
{
    for (int i = 0; i < n; i++)
        b[i] = val(from, k, i);
}

static int good(const int *b, int n, int from, int k)
{
    for (int i = 0; i < n; i++)
        if (b[i] != val(from, k, i))
            return 0;
    return 1;
}

static void garbage(MPI_Status *st)
{
    st->MPI_SOURCE = 12345;
    st->MPI_TAG = 678;
    st->MPI_ERROR = MPI_ERR_OTHER;
}

/* The standard's empty status (MPI-4.0 §3.7.3): ANY_SOURCE, ANY_TAG,
 * MPI_SUCCESS, count 0, not cancelled. Its MPI_ERROR is checked on quay
 * only: §3.2.5 lets only the calls that return MPI_ERR_IN_STATUS write
 * that field, and MPICH, reading it so, leaves it alone. */
static int empty(const MPI_Status *st)
{
    int count = -1, cancelled = -1;
    MPI_Get_count(st, MPI_INT, &count);
    MPI_Test_cancelled(st, &cancelled);
#ifdef QUAY_MPI
    if (st->MPI_ERROR != MPI_SUCCESS)
        return 0;
#endif
    return st->MPI_SOURCE == MPI_ANY_SOURCE && st->MPI_TAG == MPI_ANY_TAG && count == 0 &&
           !cancelled;
}

/* Never started, or completed and reported: complete at once, empty
 * status, the handle kept. */
static void inactive(void)
{
    int b[4] = {0}, flag;
    MPI_Request r[2], keep[2];
    MPI_Status st, sts[2];
    MPI_Send_init(b, 4, MPI_INT, (rank + 1) % size, 1, MPI_COMM_WORLD, &r[0]);
    MPI_Recv_init(b, 4, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &r[1]);
    CHECK(r[0] != MPI_REQUEST_NULL && r[1] != MPI_REQUEST_NULL && r[0] != r[1]);
    keep[0] = r[0];
    keep[1] = r[1];
    for (int i = 0; i < 2; i++) {
        garbage(&st);
        MPI_Wait(&r[i], &st);
        CHECK(r[i] == keep[i] && empty(&st));
        garbage(&st);
        flag = 0;
        MPI_Test(&r[i], &flag, &st);
        CHECK(flag && r[i] == keep[i] && empty(&st));
        garbage(&st);
        flag = 0;
        MPI_Request_get_status(r[i], &flag, &st);
        CHECK(flag && empty(&st));
    }
    garbage(&sts[0]);
    garbage(&sts[1]);
    MPI_Waitall(2, r, sts);
    CHECK(r[0] == keep[0] && r[1] == keep[1] && empty(&sts[0]) && empty(&sts[1]));
    garbage(&sts[0]);
    garbage(&sts[1]);
    flag = 0;
    MPI_Testall(2, r, &flag, sts);
    CHECK(flag && r[0] == keep[0] && r[1] == keep[1] && empty(&sts[0]) && empty(&sts[1]));
#ifdef QUAY_MPI
    /* Cancel of an inactive request: the standard leaves it undefined
     * (MPICH raises MPI_ERR_REQUEST); quay ignores it. */
    CHECK(MPI_Cancel(&r[1]) == MPI_SUCCESS);
    garbage(&st);
    MPI_Wait(&r[1], &st);
    CHECK(r[1] == keep[1] && empty(&st));
#endif
    MPI_Request_free(&r[0]);
    MPI_Request_free(&r[1]);
    CHECK(r[0] == MPI_REQUEST_NULL && r[1] == MPI_REQUEST_NULL);
}

/* A ring of `rounds` rounds: each rank sends to the right and receives
 * from the left, two request pairs on two buffers in turn (double
 * buffering), new data every round, Startall + Waitall. */
static void ring(int n, int rounds)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int *sb[2], *rb[2];
    MPI_Request rq[2][2];
    for (int b = 0; b < 2; b++) {
        sb[b] = malloc((size_t)n * sizeof(int));
        rb[b] = malloc((size_t)n * sizeof(int));
        MPI_Recv_init(rb[b], n, MPI_INT, left, 10 + b, MPI_COMM_WORLD, &rq[b][0]);
        MPI_Send_init(sb[b], n, MPI_INT, right, 10 + b, MPI_COMM_WORLD, &rq[b][1]);
    }
    MPI_Request keep[2][2];
    memcpy(keep, rq, sizeof keep);
    for (int k = 0; k < rounds; k++) {
        int b = k % 2;
        fill(sb[b], n, rank, k);
        memset(rb[b], 0xff, (size_t)n * sizeof(int));
        MPI_Startall(2, rq[b]);
        MPI_Status sts[2];
        garbage(&sts[0]);
        MPI_Waitall(2, rq[b], sts);
        int count = -1;
        MPI_Get_count(&sts[0], MPI_INT, &count);
        CHECK(sts[0].MPI_SOURCE == left && sts[0].MPI_TAG == 10 + b && count == n);
        CHECK(good(rb[b], n, left, k));
        CHECK(rq[b][0] == keep[b][0] && rq[b][1] == keep[b][1]);
        /* Reported once: now inactive, empty at once. */
        garbage(&sts[0]);
        MPI_Wait(&rq[b][0], &sts[0]);
        CHECK(rq[b][0] == keep[b][0] && empty(&sts[0]));
    }
    for (int b = 0; b < 2; b++) {
        MPI_Request_free(&rq[b][0]);
        MPI_Request_free(&rq[b][1]);
        free(sb[b]);
        free(rb[b]);
    }
}

/* Ping-pong between ranks 0 and 1 with single Start / Wait / Test: a
 * wildcard receive, the receive started before and after the message
 * arrived. */
static void ping_pong(int n, int rounds)
{
    if (rank > 1) {
        for (int k = 0; k < rounds; k++)
            MPI_Barrier(MPI_COMM_WORLD);
        return;
    }
    int peer = 1 - rank, flag;
    int *sb = calloc((size_t)n, sizeof(int)), *rb = calloc((size_t)n, sizeof(int));
    MPI_Request s, r;
    MPI_Send_init(sb, n, MPI_INT, peer, 20, MPI_COMM_WORLD, &s);
    MPI_Recv_init(rb, n, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &r);
    for (int k = 0; k < rounds; k++) {
        MPI_Status st;
        memset(rb, 0, (size_t)n * sizeof(int));
        int late = k % 3 == 2; /* the receive started after the barrier */
        if (rank == 0) {
            if (!late)
                MPI_Start(&r);
            MPI_Barrier(MPI_COMM_WORLD);
            fill(sb, n, 0, k);
            MPI_Start(&s);
            MPI_Wait(&s, MPI_STATUS_IGNORE);
            if (late)
                MPI_Start(&r);
            do
                MPI_Test(&r, &flag, &st);
            while (!flag);
            CHECK(good(rb, n, 1, k) && st.MPI_SOURCE == 1 && st.MPI_TAG == 20);
        } else {
            MPI_Start(&r);
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Wait(&r, &st);
            CHECK(good(rb, n, 0, k) && st.MPI_SOURCE == 0 && st.MPI_TAG == 20);
            fill(sb, n, 1, k);
            MPI_Start(&s);
            MPI_Wait(&s, MPI_STATUS_IGNORE);
        }
        /* The round was reported: Test now sees an inactive request. */
        garbage(&st);
        flag = 0;
        MPI_Test(&r, &flag, &st);
        CHECK(flag && empty(&st) && r != MPI_REQUEST_NULL);
    }
    MPI_Request_free(&s);
    MPI_Request_free(&r);
    free(sb);
    free(rb);
}

/* Ssend_init: a round does not complete before the receiver matched it. */
static void synchronous(int n)
{
    int *b = calloc((size_t)n, sizeof(int));
    MPI_Request r;
    if (rank == 0)
        MPI_Ssend_init(b, n, MPI_INT, 1, 30, MPI_COMM_WORLD, &r);
    for (int k = 0; k < 3; k++) {
        if (rank == 0) {
            int flag;
            fill(b, n, 0, k);
            MPI_Start(&r);
            for (int i = 0; i < 100; i++) {
                MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
                CHECK(!flag); /* rank 1 is still in the barrier below */
            }
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
        } else {
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 1) {
                MPI_Recv(b, n, MPI_INT, 0, 30, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                CHECK(good(b, n, 0, k));
            }
        }
    }
    if (rank == 0)
        MPI_Request_free(&r);
    free(b);
}

/* Rsend_init: each round's receive is started before the barrier, the
 * ready send after it. */
static void ready(int n)
{
    int *b = calloc((size_t)n, sizeof(int));
    MPI_Request r = MPI_REQUEST_NULL;
    if (rank == 0)
        MPI_Rsend_init(b, n, MPI_INT, 1, 31, MPI_COMM_WORLD, &r);
    else if (rank == 1)
        MPI_Recv_init(b, n, MPI_INT, 0, 31, MPI_COMM_WORLD, &r);
    for (int k = 0; k < 3; k++) {
        if (rank == 1) {
            memset(b, 0, (size_t)n * sizeof(int));
            MPI_Start(&r);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            fill(b, n, 0, k);
            MPI_Start(&r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Status st;
            MPI_Wait(&r, &st);
            CHECK(good(b, n, 0, k) && st.MPI_SOURCE == 0 && st.MPI_TAG == 31);
        }
    }
    if (rank <= 1)
        MPI_Request_free(&r);
    free(b);
}

/* Bsend_init: each start copies the message into the attached buffer and
 * the round completes locally (rank 1 is in the barrier meanwhile); the
 * program may then overwrite its buffer. */
static void buffered(void)
{
    enum { R_SMALL = 4, R_LARGE = 2 };
    if (rank == 0) {
        int nb = R_SMALL * (SMALL * (int)sizeof(int) + MPI_BSEND_OVERHEAD) +
                 R_LARGE * (LARGE * (int)sizeof(int) + MPI_BSEND_OVERHEAD);
        char *attach = malloc((size_t)nb);
        int *small = malloc(SMALL * sizeof(int)), *large = malloc(LARGE * sizeof(int));
        MPI_Request rs, rl;
        MPI_Buffer_attach(attach, nb);
        MPI_Bsend_init(small, SMALL, MPI_INT, 1, 32, MPI_COMM_WORLD, &rs);
        MPI_Bsend_init(large, LARGE, MPI_INT, 1, 33, MPI_COMM_WORLD, &rl);
        for (int k = 0; k < R_SMALL; k++) {
            fill(small, SMALL, 0, k);
            MPI_Start(&rs);
            MPI_Wait(&rs, MPI_STATUS_IGNORE);
            memset(small, 0, SMALL * sizeof(int)); /* the copy is in the buffer */
            if (k < R_LARGE) {
                fill(large, LARGE, 0, k);
                MPI_Start(&rl);
                MPI_Wait(&rl, MPI_STATUS_IGNORE);
                memset(large, 0, LARGE * sizeof(int));
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
        void *back;
        int backn;
        MPI_Buffer_detach(&back, &backn); /* waits until the copies left */
        CHECK(back == attach && backn == nb);
        MPI_Request_free(&rs);
        MPI_Request_free(&rl);
        free(attach);
        free(small);
        free(large);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 1) {
            int *b = malloc(LARGE * sizeof(int));
            for (int k = 0; k < R_SMALL; k++) {
                MPI_Recv(b, SMALL, MPI_INT, 0, 32, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                CHECK(good(b, SMALL, 0, k));
            }
            for (int k = 0; k < R_LARGE; k++) {
                MPI_Recv(b, LARGE, MPI_INT, 0, 33, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                CHECK(good(b, LARGE, 0, k));
            }
            free(b);
        }
    }
}

/* Waitany / Testany / Waitsome / Testsome / Waitall / Request_get_status
 * over a mix: inactive persistent (never started, and completed), null,
 * active persistent, active nonpersistent. Rank 1 receives, rank 0 sends
 * one message per barrier. */
static void mixed(void)
{
    enum { N = 5 };
    int in[N] = {0}, idx, flag, outcount, indices[N];
    MPI_Request rs[N], keep[N];
    MPI_Status st, sts[N];
    int x = 0;
    if (rank != 1) {
        for (int step = 0; step < 6; step++) {
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank != 0)
                continue;
            x = 100 + step;
            if (step == 0)
                MPI_Send(&x, 1, MPI_INT, 1, 61, MPI_COMM_WORLD);
            else if (step == 1)
                MPI_Send(&x, 1, MPI_INT, 1, 62, MPI_COMM_WORLD);
            else if (step == 2 || step == 4 || step == 5)
                MPI_Send(&x, 1, MPI_INT, 1, 61, MPI_COMM_WORLD);
            if (step == 2)
                MPI_Send(&x, 1, MPI_INT, 1, 60, MPI_COMM_WORLD);
        }
        return;
    }
    MPI_Recv_init(&in[0], 1, MPI_INT, 0, 60, MPI_COMM_WORLD, &rs[0]); /* never started */
    rs[1] = MPI_REQUEST_NULL;
    MPI_Recv_init(&in[2], 1, MPI_INT, 0, 61, MPI_COMM_WORLD, &rs[2]);
    MPI_Irecv(&in[3], 1, MPI_INT, 0, 62, MPI_COMM_WORLD, &rs[3]);
    MPI_Recv_init(&in[4], 1, MPI_INT, MPI_PROC_NULL, 63, MPI_COMM_WORLD, &rs[4]);
    MPI_Start(&rs[4]);
    MPI_Wait(&rs[4], &st); /* completed and reported: inactive */
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL);
    MPI_Start(&rs[2]);
    memcpy(keep, rs, sizeof keep);

    /* Nothing sent yet: nothing completes. */
    MPI_Testany(N, rs, &idx, &flag, &st);
    CHECK(!flag && idx == MPI_UNDEFINED);
    MPI_Testsome(N, rs, &outcount, indices, sts);
    CHECK(outcount == 0);
    MPI_Testall(N, rs, &flag, sts);
    CHECK(!flag);

    /* step 0: tag 61 -> the active persistent one; its handle stays. */
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Waitany(N, rs, &idx, &st);
    CHECK(idx == 2 && rs[2] == keep[2] && in[2] == 100 && st.MPI_TAG == 61);
    /* step 1: tag 62 -> the Irecv; index 2 is inactive now, not again. */
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Waitany(N, rs, &idx, &st);
    CHECK(idx == 3 && rs[3] == MPI_REQUEST_NULL && in[3] == 101 && st.MPI_TAG == 62);

    /* Only null and inactive left. */
    garbage(&st);
    MPI_Waitany(N, rs, &idx, &st);
    CHECK(idx == MPI_UNDEFINED && empty(&st));
    flag = 0;
    garbage(&st);
    MPI_Testany(N, rs, &idx, &flag, &st);
    CHECK(flag && idx == MPI_UNDEFINED && empty(&st));
    MPI_Waitsome(N, rs, &outcount, indices, sts);
    CHECK(outcount == MPI_UNDEFINED);
    MPI_Testsome(N, rs, &outcount, indices, sts);
    CHECK(outcount == MPI_UNDEFINED);
    for (int i = 0; i < N; i++)
        garbage(&sts[i]);
    MPI_Waitall(N, rs, sts);
    for (int i = 0; i < N; i++)
        CHECK(empty(&sts[i]));
    CHECK(rs[0] == keep[0] && rs[1] == MPI_REQUEST_NULL && rs[2] == keep[2] &&
          rs[3] == MPI_REQUEST_NULL && rs[4] == keep[4]);

    /* step 2: tags 61 and 60 -> both persistent ones, started again. */
    MPI_Start(&rs[0]);
    MPI_Start(&rs[2]);
    MPI_Barrier(MPI_COMM_WORLD);
    int got = 0, seen[N] = {0};
    while (got < 2) {
        MPI_Waitsome(N, rs, &outcount, indices, sts);
        CHECK(outcount >= 1 && outcount <= 2);
        for (int k = 0; k < outcount; k++) {
            int i = indices[k];
            CHECK((i == 0 || i == 2) && !seen[i] && rs[i] == keep[i]);
            CHECK(in[i] == 102 && sts[k].MPI_TAG == (i == 0 ? 60 : 61));
            seen[i] = 1;
        }
        got += outcount;
    }
    MPI_Testsome(N, rs, &outcount, indices, sts);
    CHECK(outcount == MPI_UNDEFINED);

    /* step 3: nothing sent; step 4: tag 61, found by Testany. */
    MPI_Start(&rs[2]);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    do
        MPI_Testany(N, rs, &idx, &flag, &st);
    while (!flag);
    CHECK(idx == 2 && rs[2] == keep[2] && in[2] == 104 && st.MPI_SOURCE == 0);
    MPI_Testany(N, rs, &idx, &flag, &st);
    CHECK(flag && idx == MPI_UNDEFINED);

    /* step 5: Request_get_status neither frees nor deactivates: the next
     * Wait reports the round, the one after finds it inactive. */
    MPI_Start(&rs[2]);
    MPI_Barrier(MPI_COMM_WORLD);
    do
        MPI_Request_get_status(rs[2], &flag, &st);
    while (!flag);
    CHECK(st.MPI_TAG == 61 && st.MPI_SOURCE == 0 && in[2] == 105);
    MPI_Request_get_status(rs[2], &flag, &st);
    CHECK(flag && st.MPI_TAG == 61);
    garbage(&st);
    MPI_Wait(&rs[2], &st);
    CHECK(st.MPI_TAG == 61 && st.MPI_SOURCE == 0 && rs[2] == keep[2]);
    garbage(&st);
    MPI_Wait(&rs[2], &st);
    CHECK(empty(&st));

    MPI_Request_free(&rs[0]);
    MPI_Request_free(&rs[2]);
    MPI_Request_free(&rs[4]);
}

/* Request_free of inactive and active requests; Cancel of a round. */
static void free_and_cancel(void)
{
    /* The freed active requests' buffers: nothing says when they are
     * done with them. */
    static int freed_send = 7, freed_recv;
    int x = 0, y = 0, flag;
    MPI_Request r;
    MPI_Status st;
    /* Inactive: gone at once. */
    MPI_Send_init(&x, 1, MPI_INT, 0, 70, MPI_COMM_WORLD, &r);
    MPI_Request_free(&r);
    CHECK(r == MPI_REQUEST_NULL);
    /* Active send, freed: still delivered. */
    if (rank == 0) {
        MPI_Send_init(&freed_send, 1, MPI_INT, 1, 71, MPI_COMM_WORLD, &r);
        MPI_Start(&r);
        MPI_Request_free(&r);
        CHECK(r == MPI_REQUEST_NULL);
    } else if (rank == 1) {
        MPI_Recv(&y, 1, MPI_INT, 0, 71, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(y == 7);
    }
    /* Active receive, freed: it still takes its message (nothing else
     * receives tag 72), though nothing can tell when. */
    if (rank == 1) {
        MPI_Recv_init(&freed_recv, 1, MPI_INT, 0, 72, MPI_COMM_WORLD, &r);
        MPI_Start(&r);
        MPI_Request_free(&r);
        CHECK(r == MPI_REQUEST_NULL);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        x = 8;
        MPI_Send(&x, 1, MPI_INT, 1, 72, MPI_COMM_WORLD);
    }
    /* Cancel of an active receive: the round completes cancelled, the
     * request stays and its next round receives. */
    if (rank == 1) {
        y = -1;
        MPI_Recv_init(&y, 1, MPI_INT, 0, 73, MPI_COMM_WORLD, &r);
        MPI_Start(&r);
        MPI_Cancel(&r);
        MPI_Wait(&r, &st);
        MPI_Test_cancelled(&st, &flag);
        CHECK(flag && r != MPI_REQUEST_NULL && y == -1);
        garbage(&st);
        MPI_Wait(&r, &st); /* inactive now */
        CHECK(empty(&st));
        MPI_Start(&r);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        x = 9;
        MPI_Send(&x, 1, MPI_INT, 1, 73, MPI_COMM_WORLD);
    } else if (rank == 1) {
        MPI_Wait(&r, &st);
        MPI_Test_cancelled(&st, &flag);
        CHECK(!flag && y == 9 && st.MPI_SOURCE == 0 && st.MPI_TAG == 73);
        MPI_Request_free(&r);
    }
    /* Cancel of an active synchronous send nobody receives yet: it is
     * cancelled, or (matched already) delivered; both ends agree, and the
     * request's next round is delivered. */
    if (rank == 0) {
        x = 1;
        MPI_Ssend_init(&x, 1, MPI_INT, 1, 74, MPI_COMM_WORLD, &r);
        MPI_Start(&r);
        MPI_Cancel(&r);
        MPI_Wait(&r, &st);
        MPI_Test_cancelled(&st, &flag);
        MPI_Send(&flag, 1, MPI_INT, 1, 75, MPI_COMM_WORLD);
        x = 2;
        MPI_Start(&r);
        MPI_Wait(&r, &st);
        MPI_Test_cancelled(&st, &flag);
        CHECK(!flag);
        MPI_Request_free(&r);
    } else if (rank == 1) {
        MPI_Recv(&flag, 1, MPI_INT, 0, 75, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (!flag) {
            MPI_Recv(&y, 1, MPI_INT, 0, 74, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(y == 1);
        }
        MPI_Recv(&y, 1, MPI_INT, 0, 74, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(y == 2);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* The null process: every round completes at once, receives nothing. */
static void proc_null(void)
{
    int s[3] = {1, 2, 3}, b[3] = {-1, -1, -1};
    MPI_Request r[2];
    MPI_Status sts[2];
    MPI_Send_init(s, 3, MPI_INT, MPI_PROC_NULL, 80, MPI_COMM_WORLD, &r[0]);
    MPI_Recv_init(b, 3, MPI_INT, MPI_PROC_NULL, 80, MPI_COMM_WORLD, &r[1]);
    for (int k = 0; k < 3; k++) {
        MPI_Startall(2, r);
        garbage(&sts[1]);
        MPI_Waitall(2, r, sts);
        int count = -1;
        MPI_Get_count(&sts[1], MPI_INT, &count);
        CHECK(sts[1].MPI_SOURCE == MPI_PROC_NULL && sts[1].MPI_TAG == MPI_ANY_TAG &&
              count == 0 && b[0] == -1);
        CHECK(r[0] != MPI_REQUEST_NULL && r[1] != MPI_REQUEST_NULL);
    }
    MPI_Request_free(&r[0]);
    MPI_Request_free(&r[1]);
}

/* Errors, under MPI_ERRORS_RETURN: the init calls check their arguments
 * as the nonblocking calls do; a start needs an inactive persistent
 * request. */
static void errors(void)
{
    int b[4] = {0}, flag;
    MPI_Request r, p, two[2], none[1];
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    EXPECT(MPI_Send_init(b, 1, MPI_INT, size, 0, MPI_COMM_WORLD, &r), MPI_ERR_RANK);
    EXPECT(MPI_Ssend_init(b, 1, MPI_INT, 0, -1, MPI_COMM_WORLD, &r), MPI_ERR_TAG);
    EXPECT(MPI_Rsend_init(b, -1, MPI_INT, 0, 0, MPI_COMM_WORLD, &r), MPI_ERR_COUNT);
    EXPECT(MPI_Bsend_init(b, 1, MPI_INT, 0, 0, MPI_COMM_NULL, &r), MPI_ERR_COMM);
    EXPECT(MPI_Recv_init(b, 1, MPI_INT, size + 1, 0, MPI_COMM_WORLD, &r), MPI_ERR_RANK);
    EXPECT(MPI_Recv_init(b, 1, MPI_INT, 0, -5, MPI_COMM_WORLD, &r), MPI_ERR_TAG);
    EXPECT(MPI_Recv_init(b, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD, &r), MPI_ERR_TYPE);

    /* Start on an active request. */
    EXPECT(MPI_Recv_init(b, 1, MPI_INT, rank, 90, MPI_COMM_WORLD, &r), MPI_SUCCESS);
    EXPECT(MPI_Start(&r), MPI_SUCCESS);
    EXPECT(MPI_Start(&r), MPI_ERR_REQUEST);
    EXPECT(MPI_Startall(1, &r), MPI_ERR_REQUEST);
    /* Start on a nonblocking (not persistent) request, and on null. */
    EXPECT(MPI_Irecv(b + 1, 1, MPI_INT, rank, 91, MPI_COMM_WORLD, &p), MPI_SUCCESS);
    EXPECT(MPI_Start(&p), MPI_ERR_REQUEST);
    two[0] = p;
    two[1] = r;
    EXPECT(MPI_Startall(2, two), MPI_ERR_REQUEST);
    none[0] = MPI_REQUEST_NULL;
    EXPECT(MPI_Start(&none[0]), MPI_ERR_REQUEST);
    EXPECT(MPI_Startall(0, none), MPI_SUCCESS);
    /* The requests are as they were: both complete normally. */
    MPI_Send(&rank, 1, MPI_INT, rank, 90, MPI_COMM_WORLD);
    MPI_Send(&size, 1, MPI_INT, rank, 91, MPI_COMM_WORLD);
    EXPECT(MPI_Wait(&r, MPI_STATUS_IGNORE), MPI_SUCCESS);
    EXPECT(MPI_Wait(&p, MPI_STATUS_IGNORE), MPI_SUCCESS);
    CHECK(b[0] == rank && b[1] == size && p == MPI_REQUEST_NULL && r != MPI_REQUEST_NULL);
    EXPECT(MPI_Start(&p), MPI_ERR_REQUEST); /* MPI_REQUEST_NULL now */
    EXPECT(MPI_Request_free(&r), MPI_SUCCESS);

#ifdef QUAY_MPI
    /* Beyond the standard (a freed handle is erroneous to use; after an
     * error a request's state is the implementation's): quay detects the
     * stale handle, and a start of Bsend_init that finds no room in the
     * attached buffer (MPI_ERR_BUFFER) leaves the request inactive. */
    EXPECT(MPI_Start(&two[1]), MPI_ERR_REQUEST);
    /* The same inactive handle twice in one Startall (erroneous): the
     * first starts it, the second is refused; the round it started
     * completes as usual. */
    EXPECT(MPI_Recv_init(b, 1, MPI_INT, rank, 92, MPI_COMM_WORLD, &r), MPI_SUCCESS);
    two[0] = two[1] = r;
    EXPECT(MPI_Startall(2, two), MPI_ERR_REQUEST);
    MPI_Send(&size, 1, MPI_INT, rank, 92, MPI_COMM_WORLD);
    EXPECT(MPI_Wait(&r, MPI_STATUS_IGNORE), MPI_SUCCESS);
    CHECK(b[0] == size);
    EXPECT(MPI_Request_free(&r), MPI_SUCCESS);
    static char little[MPI_BSEND_OVERHEAD + 8], enough[MPI_BSEND_OVERHEAD + 16];
    void *back;
    int backn;
    MPI_Buffer_attach(little, (int)sizeof little);
    EXPECT(MPI_Bsend_init(b, 4, MPI_INT, rank, 92, MPI_COMM_WORLD, &r), MPI_SUCCESS);
    EXPECT(MPI_Start(&r), MPI_ERR_BUFFER);
    flag = 0;
    MPI_Status st;
    garbage(&st);
    EXPECT(MPI_Test(&r, &flag, &st), MPI_SUCCESS);
    CHECK(flag && empty(&st));
    MPI_Buffer_detach(&back, &backn);
    MPI_Buffer_attach(enough, (int)sizeof enough);
    b[0] = 5;
    EXPECT(MPI_Start(&r), MPI_SUCCESS);
    EXPECT(MPI_Wait(&r, MPI_STATUS_IGNORE), MPI_SUCCESS);
    b[0] = 0;
    MPI_Recv(b, 4, MPI_INT, rank, 92, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(b[0] == 5);
    MPI_Buffer_detach(&back, &backn);
    CHECK(back == enough);
    MPI_Request_free(&r);
#else
    (void)flag;
#endif
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

/* Many requests made, run and freed: handles and engine requests are
 * reused, never leaked (a leak would exhaust a pool). */
static void churn(void)
{
    int x = 0, y = 0;
    for (int i = 0; i < 20000; i++) {
        MPI_Request r[2];
        MPI_Recv_init(&y, 1, MPI_INT, rank, 95, MPI_COMM_WORLD, &r[0]);
        MPI_Send_init(&x, 1, MPI_INT, rank, 95, MPI_COMM_WORLD, &r[1]);
        x = i;
        MPI_Startall(2, r);
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
        if (y != i) {
            CHECK(y == i);
            break;
        }
        MPI_Request_free(&r[i % 2]);
        MPI_Request_free(&r[1 - i % 2]);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        fprintf(stderr, "test_mpi_persist needs at least 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    inactive();
    ring(SMALL, 20);
    ring(LARGE, 6);
    ping_pong(SMALL, 9);
    ping_pong(LARGE, 6);
    synchronous(SMALL);
    synchronous(LARGE);
    ready(SMALL);
    ready(LARGE);
    buffered();
    mixed();
    free_and_cancel();
    proc_null();
    errors();
    churn();
    int all = mpitest_total("test_mpi_persist");
    MPI_Finalize();
    return all != 0;
}
