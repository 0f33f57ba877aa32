/*
 * mpitest.h — what the binding's MPI tests share: a failure count, CHECK
 * (a condition) and EXPECT (a call's error class), and the final tally
 * over all ranks. Standard MPI only, so a test also builds with another
 * MPI's mpicc. One test program is one translation unit.
 */
#ifndef QUAY_MPITEST_H
#define QUAY_MPITEST_H

#include <mpi.h>
#include <stdio.h>

static int rank, size, errs;

#define CHECK(cond)                                                                        \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            errs++;                                                                        \
            fprintf(stderr, "rank %d, line %d: failed: %s\n", rank, __LINE__, #cond);       \
        }                                                                                  \
    } while (0)

/* `call` answers error class `cls` (MPI_SUCCESS for success). */
#define EXPECT(call, cls)                                                                  \
    do {                                                                                   \
        int rc_ = (call);                                                                  \
        int c_ = MPI_SUCCESS;                                                              \
        if (rc_ != MPI_SUCCESS)                                                            \
            MPI_Error_class(rc_, &c_);                                                     \
        if (c_ != (cls)) {                                                                 \
            errs++;                                                                        \
            fprintf(stderr, "rank %d, line %d: %s gave class %d, expected %s (%d)\n", rank,  \
                    __LINE__, #call, c_, #cls, cls);                                       \
        }                                                                                  \
    } while (0)

/* Every rank's failures summed; rank 0 prints "<name>: OK" or the count.
 * Returns the total (before MPI_Finalize, which the caller makes). */
static inline int mpitest_total(const char *name)
{
    int all;
    MPI_Allreduce(&errs, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        if (all == 0)
            printf("%s: OK\n", name);
        else
            printf("%s: %d errors\n", name, all);
    }
    return all;
}

#endif
