/*
 * mpicolltest.h — quay's stand-in for the collective wrappers of MPICH's
 * test harness: MTest_<Coll>(is_blocking, args...) runs MPI_<Coll>, or
 * MPI_I<coll> and a wait. Written for quay; no MPICH text.
 *
 * Only the collectives in the binding's subset have a wrapper. Each of
 * the others is a macro for its blocking call, so a test that needs one
 * fails to build naming the MPI function it lacks, not the harness.
 */
#ifndef QUAY_MPICH_MPICOLLTEST_H
#define QUAY_MPICH_MPICOLLTEST_H

#include "mpitestconf.h"
#include <mpi.h>

/* The wait of a nonblocking collective, or the error that started it. */
static inline int mtest_coll_wait(int rc, MPI_Request *req)
{
    return rc != MPI_SUCCESS ? rc : MPI_Wait(req, MPI_STATUS_IGNORE);
}

static inline int MTest_Barrier(int is_blocking, MPI_Comm comm)
{
    MPI_Request req = MPI_REQUEST_NULL;
    if (is_blocking)
        return MPI_Barrier(comm);
    return mtest_coll_wait(MPI_Ibarrier(comm, &req), &req);
}

static inline int MTest_Bcast(int is_blocking, void *buf, int count, MPI_Datatype type, int root,
                              MPI_Comm comm)
{
    MPI_Request req = MPI_REQUEST_NULL;
    if (is_blocking)
        return MPI_Bcast(buf, count, type, root, comm);
    return mtest_coll_wait(MPI_Ibcast(buf, count, type, root, comm, &req), &req);
}

static inline int MTest_Reduce(int is_blocking, const void *sbuf, void *rbuf, int count,
                               MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm)
{
    MPI_Request req = MPI_REQUEST_NULL;
    if (is_blocking)
        return MPI_Reduce(sbuf, rbuf, count, type, op, root, comm);
    return mtest_coll_wait(MPI_Ireduce(sbuf, rbuf, count, type, op, root, comm, &req), &req);
}

static inline int MTest_Allreduce(int is_blocking, const void *sbuf, void *rbuf, int count,
                                  MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    MPI_Request req = MPI_REQUEST_NULL;
    if (is_blocking)
        return MPI_Allreduce(sbuf, rbuf, count, type, op, comm);
    return mtest_coll_wait(MPI_Iallreduce(sbuf, rbuf, count, type, op, comm, &req), &req);
}

/* Outside the subset: the build names the missing MPI function. */
#define MTest_Gather(b, ...) MPI_Gather(__VA_ARGS__)
#define MTest_Gatherv(b, ...) MPI_Gatherv(__VA_ARGS__)
#define MTest_Scatter(b, ...) MPI_Scatter(__VA_ARGS__)
#define MTest_Scatterv(b, ...) MPI_Scatterv(__VA_ARGS__)
#define MTest_Allgather(b, ...) MPI_Allgather(__VA_ARGS__)
#define MTest_Allgatherv(b, ...) MPI_Allgatherv(__VA_ARGS__)
#define MTest_Alltoall(b, ...) MPI_Alltoall(__VA_ARGS__)
#define MTest_Alltoallv(b, ...) MPI_Alltoallv(__VA_ARGS__)
#define MTest_Alltoallw(b, ...) MPI_Alltoallw(__VA_ARGS__)
#define MTest_Reduce_scatter(b, ...) MPI_Reduce_scatter(__VA_ARGS__)
#define MTest_Reduce_scatter_block(b, ...) MPI_Reduce_scatter_block(__VA_ARGS__)
#define MTest_Scan(b, ...) MPI_Scan(__VA_ARGS__)
#define MTest_Exscan(b, ...) MPI_Exscan(__VA_ARGS__)

#endif /* QUAY_MPICH_MPICOLLTEST_H */
