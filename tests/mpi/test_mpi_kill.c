/*
 * test_mpi_kill.c — the last rank dies (SIGKILL) mid-run; under
 * MPI_ERRORS_RETURN nothing hangs and every survivor sees
 * MPI_ERR_PROC_FAILED where it depends on the dead rank:
 *
 *   - a receive from it (blocking, and non-blocking via MPI_Wait);
 *   - an ANY_SOURCE receive that only it could have satisfied;
 *   - a probe for it;
 *   - a collective on a communicator it belongs to;
 *   - a dup of a communicator it belongs to, even with context ids left
 *     from an earlier agreement on it;
 *   - what it sent before dying is still received (rank 0, tag 1);
 *   - the survivors' own communicator (split before the death) still
 *     works; they finalize and print "survived".
 *
 * Run through tests/e2e/expect_kill.sh, which checks quayrun's report and
 * exit status (137) and counts the "survived" lines.
 */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

static int rank, size, errs;

static void expect_failed(int rc, const char *what)
{
    int cls = MPI_SUCCESS;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &cls);
    if (cls != MPI_ERR_PROC_FAILED) {
        errs++;
        fprintf(stderr, "rank %d: %s gave class %d, expected MPI_ERR_PROC_FAILED\n", rank, what,
                cls);
    }
}

int main(int argc, char **argv)
{
    MPI_Comm survivors;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int victim = size - 1;
    MPI_Comm_split(MPI_COMM_WORLD, rank == victim ? MPI_UNDEFINED : 0, rank, &survivors);
    /* Two dups: the second agreement leaves WORLD ids for later dups. */
    MPI_Comm d[2];
    MPI_Comm_dup(MPI_COMM_WORLD, &d[0]);
    MPI_Comm_dup(MPI_COMM_WORLD, &d[1]);
    MPI_Comm_free(&d[0]);
    MPI_Comm_free(&d[1]);
    if (rank == victim) {
        MPI_Send("before", 7, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        raise(SIGKILL);
        return 1;
    }
    MPI_Comm_set_errhandler(survivors, MPI_ERRORS_RETURN);
    MPI_Barrier(MPI_COMM_WORLD); /* the victim is past its send */

    char buf[16];
    MPI_Status st;
    MPI_Request r;
    expect_failed(MPI_Recv(buf, sizeof buf, MPI_CHAR, victim, 2, MPI_COMM_WORLD, &st),
                  "MPI_Recv from the dead rank");
    MPI_Irecv(buf, sizeof buf, MPI_CHAR, victim, 3, MPI_COMM_WORLD, &r);
    expect_failed(MPI_Wait(&r, &st), "MPI_Wait on an MPI_Irecv from the dead rank");
    if (r != MPI_REQUEST_NULL) {
        errs++;
        fprintf(stderr, "rank %d: a failed request was not released\n", rank);
    }
    /* Tag 4 comes from nobody else: only the dead rank could send it. */
    expect_failed(MPI_Recv(buf, sizeof buf, MPI_CHAR, MPI_ANY_SOURCE, 4, MPI_COMM_WORLD, &st),
                  "MPI_Recv from MPI_ANY_SOURCE");
    expect_failed(MPI_Probe(victim, 5, MPI_COMM_WORLD, &st), "MPI_Probe of the dead rank");
    expect_failed(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier with the dead rank");
    expect_failed(MPI_Comm_dup(MPI_COMM_WORLD, &d[0]), "MPI_Comm_dup with the dead rank");
    if (rank == 0) {
        int rc = MPI_Recv(buf, sizeof buf, MPI_CHAR, victim, 1, MPI_COMM_WORLD, &st);
        if (rc != MPI_SUCCESS || strcmp(buf, "before") != 0) {
            errs++;
            fprintf(stderr, "rank 0: the message sent before the death is lost\n");
        }
    }
    /* The living carry on among themselves. */
    int one = 1, n = 0;
    if (MPI_Allreduce(&one, &n, 1, MPI_INT, MPI_SUM, survivors) != MPI_SUCCESS ||
        n != size - 1) {
        errs++;
        fprintf(stderr, "rank %d: the survivors' allreduce gave %d\n", rank, n);
    }
    MPI_Comm_free(&survivors);
    MPI_Finalize();
    if (errs == 0)
        printf("rank %d survived\n", rank);
    return errs != 0;
}
