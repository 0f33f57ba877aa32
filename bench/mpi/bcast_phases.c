/*
 * bcast_phases.c — what osu_bcast times, taken apart. OSU's loop
 * (MPI_Bcast from a root, then MPI_Barrier) with the root chosen; every
 * rank stamps when it enters and leaves MPI_Bcast and when it leaves the
 * barrier, on the host's monotonic clock (so all ranks on one host).
 * Standard MPI only: built with quaycc (bcast_phases_quay) and with
 * MPICH's mpicc (bench/bcast_phases.sh).
 *
 *   quayrun -n N bcast_phases_quay [-i ITERS] [-s SIZE] [-r ROOT]
 *
 * Prints one CSV line (no header; bench/bcast_phases.sh names the
 * columns), medians over the measured iterations, in nanoseconds:
 *   osu       the time inside MPI_Bcast, averaged over the ranks: what
 *             osu_bcast reports
 *   root      the root's time inside MPI_Bcast
 *   recv      the slowest receiver's time inside MPI_Bcast
 *   delivery  from the root entering MPI_Bcast to the last receiver
 *             leaving it: how long the data took to reach everyone
 *   lead      how long before the root the first receiver entered
 *             MPI_Bcast, having left the previous barrier earlier (that
 *             receiver waits so much longer inside MPI_Bcast: osu and recv
 *             grow with it, delivery does not; negative: the root left the
 *             barrier first)
 *   period    from the root entering MPI_Bcast to its entering the next
 *             one: what a program looping broadcast and barrier waits per
 *             round, whichever rank the barrier lets go first
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { WARMUP = 1000, MAX_SIZE = 1 << 20 };

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, long n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static long parse(const char *s, long lo, long hi, const char *what)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "bcast_phases: %s must be %ld..%ld\n", what, lo, hi);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return v;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long iters = 20000, len = 8, root = 0;
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "-i") == 0)
            iters = parse(argv[++i], 1, 10000000, "-i");
        else if (i + 1 < argc && strcmp(argv[i], "-s") == 0)
            len = parse(argv[++i], 0, MAX_SIZE, "-s");
        else if (i + 1 < argc && strcmp(argv[i], "-r") == 0)
            root = parse(argv[++i], 0, size - 1, "-r");
        else {
            if (rank == 0)
                fprintf(stderr, "usage: bcast_phases [-i ITERS] [-s SIZE] [-r ROOT]\n");
            MPI_Finalize();
            return 2;
        }
    }
    if (size < 2) {
        if (rank == 0)
            fprintf(stderr, "bcast_phases: needs 2 ranks or more\n");
        MPI_Finalize();
        return 2;
    }

    /* stamps[3i]: entering MPI_Bcast; +1 leaving it; +2 leaving the barrier */
    char *buf = calloc((size_t)len + 1, 1);
    double *stamps = malloc((size_t)iters * 3 * sizeof *stamps);
    double *all = rank == 0 ? malloc((size_t)iters * 3 * (size_t)size * sizeof *all) : NULL;
    if (buf == NULL || stamps == NULL || (rank == 0 && all == NULL)) {
        fprintf(stderr, "bcast_phases: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (long i = 0; i < WARMUP; i++) {
        MPI_Bcast(buf, (int)len, MPI_CHAR, (int)root, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    for (long i = 0; i < iters; i++) {
        stamps[3 * i] = now_ns();
        MPI_Bcast(buf, (int)len, MPI_CHAR, (int)root, MPI_COMM_WORLD);
        stamps[3 * i + 1] = now_ns();
        MPI_Barrier(MPI_COMM_WORLD);
        stamps[3 * i + 2] = now_ns();
    }
    /* (point to point: quay's binding has no MPI_Gather yet) */
    if (rank != 0) {
        MPI_Send(stamps, (int)(3 * iters), MPI_DOUBLE, 0, 7, MPI_COMM_WORLD);
    } else {
        memcpy(all, stamps, (size_t)iters * 3 * sizeof *stamps);
        for (int r = 1; r < size; r++)
            MPI_Recv(all + (size_t)r * (size_t)iters * 3, (int)(3 * iters), MPI_DOUBLE, r, 7,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }

    if (rank == 0) {
        double *col[6];
        for (int k = 0; k < 6; k++)
            if ((col[k] = malloc((size_t)iters * sizeof *col[k])) == NULL) {
                fprintf(stderr, "bcast_phases: out of memory\n");
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
#define IN(r, i) all[((size_t)(r) * (size_t)iters + (size_t)(i)) * 3]
#define OUT(r, i) all[((size_t)(r) * (size_t)iters + (size_t)(i)) * 3 + 1]
        for (long i = 0; i < iters; i++) {
            double sum = 0, recv = 0, last_out = 0, first_in = 0;
            int seen = 0;
            for (int r = 0; r < size; r++) {
                double t = OUT(r, i) - IN(r, i);
                sum += t;
                if (r == root)
                    continue;
                if (t > recv)
                    recv = t;
                if (OUT(r, i) > last_out)
                    last_out = OUT(r, i);
                if (!seen++ || IN(r, i) < first_in)
                    first_in = IN(r, i);
            }
            col[0][i] = sum / size;
            col[1][i] = OUT(root, i) - IN(root, i);
            col[2][i] = recv;
            col[3][i] = last_out - IN(root, i);
            col[4][i] = IN(root, i) - first_in;
            if (i + 1 < iters)
                col[5][i] = IN(root, i + 1) - IN(root, i);
        }
#undef IN
#undef OUT
        printf("%d,%ld,%ld,%ld", size, len, root, iters);
        for (int k = 0; k < 5; k++)
            printf(",%.0f", median(col[k], iters));
        printf(",%.0f\n", iters > 1 ? median(col[5], iters - 1) : 0.0);
        for (int k = 0; k < 6; k++)
            free(col[k]);
    }
    free(all);
    free(stamps);
    free(buf);
    MPI_Finalize();
    return 0;
}
