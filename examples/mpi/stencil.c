/*
 * stencil.c — 2-D heat diffusion (Jacobi iteration) with a row
 * decomposition and a non-blocking halo exchange.
 *
 *   stencil [n [max_iters [tol]]]      (defaults: 31, 5000, 1e-4)
 *
 * A square plate of n x n interior points: the top edge is held at 100
 * degrees, the other edges at 0. Each Jacobi step replaces every interior
 * point by the average of its four neighbours, until the largest change
 * in one step is below tol (or after max_iters steps). The printed centre
 * value (odd n) approaches the steady state, 25 degrees (by symmetry).
 *
 * Decomposition: the n rows are split into contiguous blocks, one per
 * rank. Each rank stores its block plus one "ghost" row above and below,
 * holding copies of its neighbours' edge rows (or the plate's fixed edge
 * at the top and bottom of the plate). Every step:
 *
 *   1. post MPI_Irecv for both ghost rows and MPI_Isend of both edge rows;
 *   2. while those messages travel, update the rows that need no ghost
 *      data (the inner rows of the block): communication overlaps work;
 *   3. MPI_Waitall, then update the two edge rows;
 *   4. MPI_Allreduce (MAX) of the largest change, so every rank sees the
 *      same value and all stop at the same step.
 *
 * Check: rank 0 collects the blocks (MPI_Recv from each rank) and compares
 * them with the same computation done sequentially on the whole plate.
 * The arithmetic is the same point by point and MAX does not depend on
 * the order of reduction, so they agree exactly, whatever the number of
 * ranks. Any number of ranks up to n works.
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>

enum { TAG_UP = 1, TAG_DOWN = 2, TAG_GATHER = 3 };

static void fail(int rank, const char *what)
{
    fprintf(stderr, "stencil: rank %d: %s\n", rank, what);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* Rows [*first, *first + *count) of the n go to rank r of p. */
static void block(int r, int p, int n, int *first, int *count)
{
    *first = (int)((long long)r * n / p);
    *count = (int)((long long)(r + 1) * n / p) - *first;
}

/* A grid of rows + 2 rows (ghosts included) by n + 2 columns (the plate's
 * left and right edges included), all zero; the top ghost row is the hot
 * edge (100 degrees) if `top` is set. */
static double *new_grid(int rows, int n, int top, int rank)
{
    double *g = calloc((size_t)(rows + 2) * (size_t)(n + 2), sizeof *g);
    if (!g)
        fail(rank, "out of memory");
    if (top)
        for (int j = 1; j <= n; j++)
            g[j] = 100.0;
    return g;
}

static double max2(double a, double b)
{
    return a > b ? a : b;
}

/* One Jacobi update of row i: unew = average of u's four neighbours.
 * Returns the largest change in the row. Used by the parallel and the
 * sequential solver alike. */
static double relax_row(const double *u, double *unew, int i, int n)
{
    int w = n + 2; /* row length */
    double change = 0.0;
    for (int j = 1; j <= n; j++) {
        double v = 0.25 * (u[(i - 1) * w + j] + u[(i + 1) * w + j] + u[i * w + j - 1] +
                           u[i * w + j + 1]);
        change = max2(change, max2(v - u[i * w + j], u[i * w + j] - v)); /* |v - u| */
        unew[i * w + j] = v;
    }
    return change;
}

/* The reference: the whole plate on one process. Sets *steps to the steps
 * taken and returns the buffer (u or unew) that holds the result. */
static const double *sequential(double *u, double *unew, int n, int max_iters, double tol,
                                int *steps)
{
    int iter = 0;
    while (iter < max_iters) {
        double change = 0.0;
        for (int i = 1; i <= n; i++)
            change = max2(change, relax_row(u, unew, i, n));
        double *t = u; u = unew; unew = t;
        iter++;
        if (change < tol)
            break;
    }
    *steps = iter;
    return u;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);

    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    int n = argc > 1 ? atoi(argv[1]) : 31;
    int max_iters = argc > 2 ? atoi(argv[2]) : 5000;
    double tol = argc > 3 ? atof(argv[3]) : 1e-4;
    if (n < size || n > 10000 || max_iters < 1) {
        if (rank == 0)
            fprintf(stderr, "usage: stencil [n (>= ranks, <= 10000) [max_iters [tol]]]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    int first, rows;
    block(rank, size, n, &first, &rows);
    int up = rank > 0 ? rank - 1 : MPI_PROC_NULL; /* no neighbour: no message */
    int down = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
    int w = n + 2;
    double *u = new_grid(rows, n, rank == 0, rank);
    double *unew = new_grid(rows, n, rank == 0, rank);

    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    int iter = 0;
    double change = 0.0;
    while (iter < max_iters) {
        /* 1. Halo exchange, non-blocking. A send or receive with
         *    MPI_PROC_NULL completes at once and moves nothing, so the
         *    first and last rank need no special case. */
        MPI_Request reqs[4];
        MPI_Irecv(&u[0], n + 2, MPI_DOUBLE, up, TAG_DOWN, MPI_COMM_WORLD, &reqs[0]);
        MPI_Irecv(&u[(rows + 1) * w], n + 2, MPI_DOUBLE, down, TAG_UP, MPI_COMM_WORLD,
                  &reqs[1]);
        MPI_Isend(&u[1 * w], n + 2, MPI_DOUBLE, up, TAG_UP, MPI_COMM_WORLD, &reqs[2]);
        MPI_Isend(&u[rows * w], n + 2, MPI_DOUBLE, down, TAG_DOWN, MPI_COMM_WORLD, &reqs[3]);

        /* 2. Inner rows 2 .. rows-1 only read rows of this block. */
        double local = 0.0;
        for (int i = 2; i < rows; i++)
            local = max2(local, relax_row(u, unew, i, n));

        /* 3. The ghost rows have arrived: update the edge rows. */
        MPI_Status stats[4]; /* unused (on MPI_STATUSES_IGNORE see ring.c) */
        MPI_Waitall(4, reqs, stats);
        local = max2(local, relax_row(u, unew, 1, n)); /* top row of the block */
        if (rows > 1)
            local = max2(local, relax_row(u, unew, rows, n)); /* bottom row */

        /* 4. The largest change anywhere on the plate. */
        MPI_Allreduce(&local, &change, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        double *t = u; u = unew; unew = t;
        iter++;
        if (change < tol)
            break;
    }
    double elapsed = MPI_Wtime() - t0;

    /* ---- check against the sequential computation on rank 0 ------------- */
    if (rank != 0) {
        MPI_Send(&u[1 * w], rows * w, MPI_DOUBLE, 0, TAG_GATHER, MPI_COMM_WORLD);
    } else {
        /* Assemble the plate: rank 0's rows, then each rank's block. */
        double *plate = new_grid(n, n, 1, rank);
        for (int k = 0; k < rows * w; k++)
            plate[w + k] = u[w + k];
        for (int r = 1; r < size; r++) {
            int f, c;
            block(r, size, n, &f, &c);
            MPI_Recv(&plate[(f + 1) * w], c * w, MPI_DOUBLE, r, TAG_GATHER, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        }
        double *ref = new_grid(n, n, 1, rank), *scratch = new_grid(n, n, 1, rank);
        int ref_iters; /* the steps the sequential run takes */
        const double *seq = sequential(ref, scratch, n, max_iters, tol, &ref_iters);
        if (ref_iters != iter)
            fail(rank, "step count differs from the sequential run");
        for (int k = 0; k < (n + 2) * (n + 2); k++)
            if (plate[k] != seq[k])
                fail(rank, "plate differs from the sequential run");
        printf("stencil: %d ranks, %dx%d plate: %d steps (%s), last change %.2e, "
               "centre %.4f; matches sequential exactly: OK in %.3f s\n",
               size, n, n, iter, change < tol ? "converged" : "step limit", change,
               plate[(n + 1) / 2 * w + (n + 1) / 2], elapsed);
        free(plate);
        free(ref);
        free(scratch);
    }

    free(u);
    free(unew);
    MPI_Finalize();
    return 0;
}
