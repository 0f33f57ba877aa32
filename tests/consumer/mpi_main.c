/*
 * mpi_main.c — smallest user of an installed quay MPI binding (<mpi.h>,
 * libquaympi), built by CI with find_package(quay) (quay::mpi and
 * quay::mpi_static), pkg-config quay-mpi and the installed quaycc, and
 * run alone: a program started without quayrun or mpiexec is rank 0 of
 * a world of 1 (CI also runs it with the installed quayrun). Init, a
 * message to itself, an Allreduce, Finalize; exit status 0 on success.
 */
#include <stdio.h>
#include <string.h>

#include <mpi.h>

int main(int argc, char **argv)
{
    int rank = -1, size = -1, len = 0;
    char version[MPI_MAX_LIBRARY_VERSION_STRING];

    if (MPI_Init(&argc, &argv) != MPI_SUCCESS)
        return 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_library_version(version, &len);

    /* A message to itself: post the receive, send, wait. */
    const char sent[] = "to myself";
    char got[sizeof sent] = {0};
    MPI_Request rq;
    MPI_Status st;
    int count = -1;
    MPI_Irecv(got, (int)sizeof got, MPI_CHAR, rank, 5, MPI_COMM_WORLD, &rq);
    MPI_Send(sent, (int)sizeof sent, MPI_CHAR, rank, 5, MPI_COMM_WORLD);
    MPI_Wait(&rq, &st);
    MPI_Get_count(&st, MPI_CHAR, &count);

    double x = 2.5, sum = 0.0;
    MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);

    int ok = size >= 1 && rank >= 0 && rank < size && memcmp(got, sent, sizeof sent) == 0 &&
             count == (int)sizeof sent && st.MPI_SOURCE == rank && st.MPI_TAG == 5 &&
             sum == 2.5 * size;
    printf("%s: rank %d of %d, self message \"%s\" (%d bytes), allreduce %g: %s\n", version,
           rank, size, got, count, sum, ok ? "ok" : "FAILED");
    if (MPI_Finalize() != MPI_SUCCESS)
        return 1;
    return ok ? 0 : 1;
}
