/*
 * mpi_loops.c — the loops of the calls OSU's micro-benchmarks time, a
 * fixed number of times, for instruction counts (bench/callgrind_mpi.sh):
 * standard MPI only, so it builds with quaycc and with mpicc alike.
 *
 *   quayrun -n 2 mpi_loops LOOP [ITERS [SIZE]]
 *
 * LOOP (rank 0 and 1 take part in the point-to-point ones; every rank in
 * the collectives), run ten times first, then ITERS times inside
 * measured(), the bracket for callgrind's --toggle-collect:
 *   window     osu_mbw_mr / osu_bw: rank 0 posts 64 MPI_Isend of one
 *              buffer, rank 1 64 MPI_Irecv into one buffer, both
 *              MPI_Waitall with statuses, then a 4-byte ack back; ITERS
 *              windows
 *   pingpong   osu_latency: MPI_Send / MPI_Recv there and back; ITERS
 *              round trips
 *   bcast      osu_bcast: MPI_Bcast from rank 0, then MPI_Barrier
 *   allreduce  osu_allreduce: MPI_Allreduce of SIZE / 4 floats, MPI_SUM
 *   barrier    osu_barrier: MPI_Barrier
 * SIZE: bytes per message (default 8). Prints nothing but errors.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { WINDOW = 64, MAX_SIZE = 1 << 16 };

static char sbuf[MAX_SIZE], rbuf[MAX_SIZE];
static int rank;

/* Not inlined: the bracket stays a function of its own. */
#define LOOP __attribute__((noinline))

LOOP static void loop_window(long iters, int size)
{
    MPI_Request req[WINDOW];
    MPI_Status st[WINDOW];
    for (long i = 0; i < iters; i++) {
        if (rank == 0) {
            for (int j = 0; j < WINDOW; j++)
                MPI_Isend(sbuf, size, MPI_CHAR, 1, 100, MPI_COMM_WORLD, &req[j]);
            MPI_Waitall(WINDOW, req, st);
            MPI_Recv(rbuf, 4, MPI_CHAR, 1, 101, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            for (int j = 0; j < WINDOW; j++)
                MPI_Irecv(rbuf, size, MPI_CHAR, 0, 100, MPI_COMM_WORLD, &req[j]);
            MPI_Waitall(WINDOW, req, st);
            MPI_Send(sbuf, 4, MPI_CHAR, 0, 101, MPI_COMM_WORLD);
        }
    }
}

LOOP static void loop_pingpong(long iters, int size)
{
    for (long i = 0; i < iters; i++) {
        if (rank == 0) {
            MPI_Send(sbuf, size, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(rbuf, size, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(rbuf, size, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(sbuf, size, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
        }
    }
}

LOOP static void loop_bcast(long iters, int size)
{
    for (long i = 0; i < iters; i++) {
        MPI_Bcast(sbuf, size, MPI_CHAR, 0, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
    }
}

LOOP static void loop_allreduce(long iters, int size)
{
    int n = size / (int)sizeof(float) > 0 ? size / (int)sizeof(float) : 1;
    for (long i = 0; i < iters; i++)
        MPI_Allreduce(sbuf, rbuf, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

LOOP static void loop_barrier(long iters, int size)
{
    (void)size;
    for (long i = 0; i < iters; i++)
        MPI_Barrier(MPI_COMM_WORLD);
}

/* The bracket: callgrind --toggle-collect=measured counts what runs
 * inside it. */
LOOP static void measured(void (*run)(long, int), long iters, int size)
{
    run(iters, size);
}

static const struct {
    const char *name;
    void (*run)(long iters, int size);
} loops[] = {{"window", loop_window},     {"pingpong", loop_pingpong}, {"bcast", loop_bcast},
             {"allreduce", loop_allreduce}, {"barrier", loop_barrier}};

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    long iters = argc > 2 ? atol(argv[2]) : 1000;
    int size = argc > 3 ? atoi(argv[3]) : 8;
    int found = -1;
    for (int i = 0; argc > 1 && i < (int)(sizeof loops / sizeof loops[0]); i++)
        if (strcmp(argv[1], loops[i].name) == 0)
            found = i;
    if (found < 0 || iters < 1 || size < 0 || size > MAX_SIZE) {
        if (rank == 0)
            fprintf(stderr, "usage: mpi_loops window|pingpong|bcast|allreduce|barrier "
                            "[ITERS [SIZE <= 65536]]\n");
        MPI_Finalize();
        return 2;
    }
    /* A few rounds first: what the first calls set up is not counted. */
    loops[found].run(iters < 10 ? iters : 10, size);
    MPI_Barrier(MPI_COMM_WORLD);
    measured(loops[found].run, iters, size);
    MPI_Finalize();
    return 0;
}
