/*
 * hello.c — the smallest whole MPI program: rank and size, a token
 * passed once around the ring, an MPI_Allreduce; one line per rank.
 * Built by the build tree's quaycc at test time (tests/mpi/quaycc.cmake)
 * and run with quayrun, and alone (rank 0 of 1). Exit status 0 when the
 * ring and the sum are right.
 *
 * HELLO_WORDS (a macro, default hello) starts the line: quaycc's test
 * passes -D'HELLO_WORDS=hello there' to show that an argument with a
 * space reaches the compiler whole.
 */
#include <mpi.h>

#include <stdio.h>

#ifndef HELLO_WORDS
#define HELLO_WORDS hello
#endif
#define HELLO_STR2(x) #x
#define HELLO_STR(x) HELLO_STR2(x)

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* Ring: rank 0 starts a token that every rank increments; it comes
     * back to rank 0 as size (with one rank it goes to itself). */
    int token = 0, next = (rank + 1) % size, prev = (rank + size - 1) % size;
    if (rank == 0) {
        MPI_Request rq;
        MPI_Irecv(&token, 1, MPI_INT, prev, 7, MPI_COMM_WORLD, &rq);
        int start = 1;
        MPI_Send(&start, 1, MPI_INT, next, 7, MPI_COMM_WORLD);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(&token, 1, MPI_INT, prev, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        token++;
        MPI_Send(&token, 1, MPI_INT, next, 7, MPI_COMM_WORLD);
    }
    int ring_ok = rank != 0 || token == size;

    /* Allreduce: sum of rank + 1 over all ranks, and AND of the checks. */
    long mine = rank + 1, sum = 0;
    int all_ok = 0;
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    int ok = ring_ok && sum == (long)size * (size + 1) / 2;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);

    printf("%s from rank %d of %d: ring %s, sum %ld, %s\n", HELLO_STR(HELLO_WORDS), rank, size,
           rank == 0 ? (ring_ok ? "ok" : "BAD") : "passed", sum, all_ok ? "ok" : "FAILED");
    fflush(stdout);
    MPI_Finalize();
    return all_ok ? 0 : 1;
}
