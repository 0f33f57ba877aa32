/*
 * solver.c — conjugate gradient on a distributed 1-D Poisson problem.
 *
 *   solver [n [tol]]       (defaults: 1000, 1e-8)
 *
 * Solve -u''(t) = 2 on (0, 1) with u(0) = u(1) = 0, whose solution is
 * u(t) = t (1 - t). With n interior points t_i = (i + 1) h, h = 1/(n + 1),
 * the finite-difference equations are A x = b with
 *
 *     A = tridiag(-1, 2, -1)   (n x n, symmetric positive definite)
 *     b_i = 2 h^2
 *
 * and, because a second difference is exact on a parabola, the discrete
 * solution is exactly x_i = t_i (1 - t_i). CG stops when the residual
 * ||b - A x|| has shrunk by the factor tol. (In exact arithmetic it would
 * finish within n steps; here, b being symmetric, within n/2.)
 *
 * Distribution: each rank owns a contiguous block of rows of A and the
 * same entries of every vector. The two MPI ingredients of CG are
 *   - the matrix-vector product: row i needs v[i-1] and v[i+1], so each
 *     rank first swaps one "halo" value with each neighbour
 *     (MPI_Sendrecv; MPI_PROC_NULL at the ends of the line);
 *   - dot products: a local sum, then MPI_Allreduce(MPI_SUM), which gives
 *     every rank the same value, so all take the same decisions (step
 *     sizes, when to stop).
 *
 * Check: after convergence the residual ||b - A x|| / ||b|| is computed
 * afresh (not taken from the iteration) and must be below 10 * tol, and x
 * must match t (1 - t) to 1e-6. Rounding limits the attainable residual
 * to about 1e-16 n^2 (A's condition number is about 0.4 n^2): a tol below
 * that cannot be reached and the check fails. Any number of ranks up to n
 * works. Uses sqrt: link with -lm.
 */
#include <mpi.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { TAG_LEFT = 1, TAG_RIGHT = 2 };

static int rank, size;   /* this process, and how many there are */
static int m;            /* rows owned here */
static int left, right;  /* neighbour ranks, or MPI_PROC_NULL */

static void fail(const char *what)
{
    fprintf(stderr, "solver: rank %d: %s\n", rank, what);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static double *vec(void)
{
    /* m entries at [1..m], plus a ghost at [0] and [m+1] for the halo,
     * zero: the boundary values u(0) = u(1) = 0. */
    double *v = calloc((size_t)m + 2, sizeof *v);
    if (!v)
        fail("out of memory");
    return v;
}

/* The global dot product of a and b (entries 1..m of each rank). */
static double dot(const double *a, const double *b)
{
    double local = 0.0, global;
    for (int i = 1; i <= m; i++)
        local += a[i] * b[i];
    MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return global;
}

/* y = A v. First fill v's ghosts from the neighbours: send my first entry
 * left while receiving my right ghost from the right, and the reverse.
 * At the ends MPI_PROC_NULL leaves the ghost at 0. */
static void matvec(double *v, double *y)
{
    MPI_Sendrecv(&v[1], 1, MPI_DOUBLE, left, TAG_LEFT,
                 &v[m + 1], 1, MPI_DOUBLE, right, TAG_LEFT,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Sendrecv(&v[m], 1, MPI_DOUBLE, right, TAG_RIGHT,
                 &v[0], 1, MPI_DOUBLE, left, TAG_RIGHT,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int i = 1; i <= m; i++)
        y[i] = 2.0 * v[i] - v[i - 1] - v[i + 1];
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    int n = argc > 1 ? atoi(argv[1]) : 1000;
    double tol = argc > 2 ? atof(argv[2]) : 1e-8;
    if (n < size || n > 100000000 || !(tol > 0.0)) {
        if (rank == 0)
            fprintf(stderr, "usage: solver [n (>= ranks) [tol > 0]]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    /* Rows [first, first + m) are mine. */
    int first = (int)((long long)rank * n / size);
    m = (int)((long long)(rank + 1) * n / size) - first;
    left = rank > 0 ? rank - 1 : MPI_PROC_NULL;
    right = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;

    double h = 1.0 / (n + 1);
    double *x = vec(), *b = vec(), *r = vec(), *p = vec(), *ap = vec();
    for (int i = 1; i <= m; i++)
        b[i] = 2.0 * h * h;

    /* ---- conjugate gradient, starting from x = 0 ----------------------- */
    double t0 = MPI_Wtime();
    for (int i = 1; i <= m; i++)
        r[i] = p[i] = b[i]; /* r = b - A*0 */
    double bb = dot(b, b), rr = dot(r, r);
    int iter = 0, max_iters = 10 * n;
    while (rr > tol * tol * bb && iter < max_iters) {
        matvec(p, ap);
        double alpha = rr / dot(p, ap); /* step length along p */
        for (int i = 1; i <= m; i++) {
            x[i] += alpha * p[i];
            r[i] -= alpha * ap[i];
        }
        double rr_new = dot(r, r);
        double beta = rr_new / rr; /* keeps the directions A-orthogonal */
        for (int i = 1; i <= m; i++)
            p[i] = r[i] + beta * p[i];
        rr = rr_new;
        iter++;
    }
    double elapsed = MPI_Wtime() - t0;

    /* ---- check ------------------------------------------------------------ */
    matvec(x, ap); /* the true residual b - A x, not CG's running one */
    for (int i = 1; i <= m; i++)
        r[i] = b[i] - ap[i];
    double relres = sqrt(dot(r, r) / bb);
    double local_err = 0.0, err;
    for (int i = 1; i <= m; i++) {
        double t = (first + i) * h; /* entry i is global row first + i - 1 */
        double e = fabs(x[i] - t * (1.0 - t));
        if (e > local_err)
            local_err = e;
    }
    MPI_Allreduce(&local_err, &err, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);

    /* Every rank has the same rr, relres and err: all fail together or
     * not at all. */
    if (rr > tol * tol * bb)
        fail("no convergence within 10 n iterations");
    if (relres > 10.0 * tol)
        fail("residual ||b - Ax|| / ||b|| above 10 * tol");
    if (err > 1e-6)
        fail("solution differs from t (1 - t)");
    if (rank == 0)
        printf("solver: %d ranks, n = %d: CG converged in %d iterations, "
               "||b - Ax||/||b|| = %.2e, max error %.2e: OK in %.3f s\n",
               size, n, iter, relres, err, elapsed);

    free(x);
    free(b);
    free(r);
    free(p);
    free(ap);
    MPI_Finalize();
    return 0;
}
