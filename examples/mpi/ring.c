/*
 * ring.c — pass a token around a ring of processes.
 *
 *   ring [laps]          (default: 1000 laps)
 *
 * The ranks form a ring: rank r sends to r+1 and receives from r-1
 * (wrapping around at the ends). Two exercises:
 *
 *  1. Blocking token ring. Rank 0 starts a token; every rank adds
 *     (its rank + 1) to it and passes it on, `laps` times round. At the end
 *     rank 0 holds laps * (1 + 2 + ... + N) = laps * N(N+1)/2.
 *
 *  2. Non-blocking shift. Every rank at once sends a value to its right
 *     neighbour and receives one from its left (MPI_Irecv + MPI_Isend +
 *     MPI_Waitall), N times. Each rank adds up what it receives: after N
 *     shifts it has seen every rank's value once (sum = N(N+1)/2) and its
 *     own value is back where it started.
 *
 * Works with any number of ranks, 1 included (rank 0 is then its own
 * neighbour). Exits with MPI_Abort (non-zero status) if a check fails.
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>

enum { TAG_TOKEN = 1, TAG_SHIFT = 2 };

/* Report a failed check and end the whole job with a non-zero status. */
static void check(int ok, int rank, const char *what)
{
    if (!ok) {
        fprintf(stderr, "ring: rank %d: check failed: %s\n", rank, what);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);

    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    long laps = argc > 1 ? strtol(argv[1], NULL, 10) : 1000;
    if (laps < 1) {
        if (rank == 0)
            fprintf(stderr, "usage: ring [laps >= 1]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    int next = (rank + 1) % size;        /* right neighbour */
    int prev = (rank + size - 1) % size; /* left neighbour */

    /* ---- 1. blocking token ring ------------------------------------- */
    MPI_Barrier(MPI_COMM_WORLD); /* start the clock together */
    double t0 = MPI_Wtime();
    long long token = 0;
    for (long lap = 0; lap < laps; lap++) {
        if (rank == 0) {
            /* Rank 0 adds its share, sends the token on and waits for it
             * to come back. MPI_Sendrecv does both at once, so it works
             * even when rank 0 is its own neighbour (a single rank): a
             * plain MPI_Send to ourselves could wait forever for a
             * receive that was never posted. Its send and receive
             * buffers must not overlap (MPI_Sendrecv_replace is the
             * in-place form). */
            long long outgoing = token + rank + 1;
            MPI_Sendrecv(&outgoing, 1, MPI_LONG_LONG, next, TAG_TOKEN,
                         &token, 1, MPI_LONG_LONG, prev, TAG_TOKEN,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            /* Everyone else: wait for the token, add, pass it on. */
            MPI_Recv(&token, 1, MPI_LONG_LONG, prev, TAG_TOKEN, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            token += rank + 1;
            MPI_Send(&token, 1, MPI_LONG_LONG, next, TAG_TOKEN, MPI_COMM_WORLD);
        }
    }
    double t_ring = MPI_Wtime() - t0;
    long long expected = (long long)laps * size * (size + 1) / 2;
    if (rank == 0)
        check(token == expected, rank, "token after the last lap");

    /* ---- 2. non-blocking shift ---------------------------------------- */
    long long mine = rank + 1;  /* the value that travels */
    long long carried = mine;   /* what this rank holds now */
    long long seen = 0;         /* sum of everything received */
    for (int step = 0; step < size; step++) {
        long long incoming;
        MPI_Request reqs[2];
        /* Post the receive first, then the send: neither call blocks, so
         * no rank can deadlock waiting for its neighbour. The send buffer
         * must not be changed until MPI_Waitall says the send is done. */
        MPI_Irecv(&incoming, 1, MPI_LONG_LONG, prev, TAG_SHIFT, MPI_COMM_WORLD, &reqs[0]);
        MPI_Isend(&carried, 1, MPI_LONG_LONG, next, TAG_SHIFT, MPI_COMM_WORLD, &reqs[1]);
        /* (A real program would compute something useful here.) */
        MPI_Status stats[2]; /* unused: MPI_STATUSES_IGNORE would do, but
                                GCC warns about it with MPICH's mpi.h */
        MPI_Waitall(2, reqs, stats);
        carried = incoming;
        seen += incoming;
    }
    check(seen == (long long)size * (size + 1) / 2, rank, "sum of shifted values");
    check(carried == mine, rank, "own value back after N shifts");

    if (rank == 0) {
        double hops = (double)laps * size;
        printf("ring: %d ranks, %ld laps: token %lld (expected %lld), "
               "shift sum %lld: OK, %.2f us per hop\n",
               size, laps, token, expected, seen, 1e6 * t_ring / hops);
    }

    MPI_Finalize();
    return 0;
}
