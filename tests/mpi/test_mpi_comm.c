/*
 * test_mpi_comm.c — communicators made and freed in numbers. The binding
 * agrees on context ids for a parent's dups in batches, so most dups send
 * nothing; each must still be a context of its own, the same on every
 * member, whatever else is made on the parent in between (splits, dups of
 * dups) and however the batches fall:
 *
 *   - many dups of one parent, interleaved with splits, each carrying a
 *     message of its own (sent in reverse order, received by wildcard);
 *   - dups of dups (each parent's batch is its own);
 *   - communicators freed with a receive pending, made again later: the
 *     slot is reused only once the engine lets the old one go;
 *   - ctxalloc's pattern: batches of dups freed together, many rounds.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "mpitest.h"

#define NDUP 40

/* Rank 0 sends i on c[i] for every i, last first; rank 1 receives on
 * c[i] in order with wildcards: only c[i]'s message can match. */
static void exchange(MPI_Comm *c, int n, int tag)
{
    if (rank == 0) {
        for (int i = n - 1; i >= 0; i--)
            MPI_Send(&i, 1, MPI_INT, 1, tag, c[i]);
    } else if (rank == 1) {
        for (int i = 0; i < n; i++) {
            int v = -1;
            MPI_Status st;
            MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, c[i], &st);
            CHECK(v == i && st.MPI_SOURCE == 0 && st.MPI_TAG == tag);
        }
    }
}

static void dups_and_splits(void)
{
    MPI_Comm c[NDUP];
    int res;
    for (int i = 0; i < NDUP; i++) {
        if (i % 7 == 3) {
            /* A split on the parent between its dups: same members, same
             * order (key = rank), its own id. */
            MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &c[i]);
        } else {
            MPI_Comm_dup(MPI_COMM_WORLD, &c[i]);
        }
        MPI_Comm_compare(MPI_COMM_WORLD, c[i], &res);
        CHECK(res == MPI_CONGRUENT);
    }
    exchange(c, NDUP, 5);
    /* Nothing leaked onto the parent. */
    int flag;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    CHECK(!flag);
    /* Collectives on every one of them, in turn. */
    for (int i = 0; i < NDUP; i++) {
        int v = rank + i, sum = 0;
        MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, c[i]);
        CHECK(sum == size * (size - 1) / 2 + size * i);
    }
    for (int i = 0; i < NDUP; i++)
        MPI_Comm_free(&c[i]);
}

static void nested(void)
{
    MPI_Comm a, b[8], d[8];
    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    /* Alternate between two parents: each draws on its own batch. */
    for (int i = 0; i < 8; i++) {
        MPI_Comm_dup(a, &b[i]);
        MPI_Comm_dup(i % 2 ? b[i] : MPI_COMM_WORLD, &d[i]);
    }
    exchange(b, 8, 6);
    exchange(d, 8, 7);
    for (int i = 0; i < 8; i++) {
        MPI_Comm_free(&d[i]);
        MPI_Comm_free(&b[i]);
    }
    MPI_Comm_free(&a);
}

static void freed_busy(void)
{
    /* Rank 1 frees a communicator with a receive pending on it (the
     * engine keeps it until the receive ends), then new ones are made
     * around it; rank 0 sends on it only after that. */
    MPI_Comm held, more[4];
    MPI_Request r = MPI_REQUEST_NULL;
    int got = -1;
    MPI_Comm_dup(MPI_COMM_WORLD, &held);
    if (rank == 1) {
        MPI_Irecv(&got, 1, MPI_INT, 0, 9, held, &r);
        MPI_Comm_free(&held);
        CHECK(held == MPI_COMM_NULL);
    }
    for (int i = 0; i < 4; i++)
        MPI_Comm_dup(MPI_COMM_WORLD, &more[i]);
    exchange(more, 4, 8);
    if (rank == 0) {
        int x = 99;
        MPI_Send(&x, 1, MPI_INT, 1, 9, held);
    }
    if (rank != 1)
        MPI_Comm_free(&held);
    if (rank == 1) {
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        CHECK(got == 99);
    }
    for (int i = 0; i < 4; i++)
        MPI_Comm_free(&more[i]);
}

static void churn(void)
{
    MPI_Comm base, c[50];
    MPI_Comm_dup(MPI_COMM_WORLD, &base);
    for (int round = 0; round < 40; round++) {
        for (int j = 0; j < 50; j++)
            MPI_Comm_dup(base, &c[j]);
        if (round % 10 == 9)
            exchange(c, 50, round);
        for (int j = 0; j < 50; j++)
            MPI_Comm_free(&c[j]);
    }
    MPI_Comm_free(&base);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        fprintf(stderr, "test_mpi_comm needs at least 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    dups_and_splits();
    nested();
    freed_busy();
    churn();
    int all = mpitest_total("test_mpi_comm");
    MPI_Finalize();
    return all != 0;
}
