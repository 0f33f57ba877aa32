/*
 * test_mpi_abort.c — MPI_Abort ends the whole job and its error code
 * becomes the launcher's exit status: rank 1 aborts with code 7 while
 * every other rank is blocked in a receive that nothing will satisfy.
 * The test passes only if the job ends (no hang) with status 7 (the
 * CTest wrapper checks it; "unreachable" must never be printed).
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, x;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1)
        MPI_Abort(MPI_COMM_WORLD, 7);
    MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    printf("unreachable\n");
    MPI_Finalize();
    return 0;
}
