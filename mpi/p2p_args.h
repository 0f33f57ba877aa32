/*
 * p2p_args.h — the argument checks of the point-to-point calls (p2p.c,
 * probe.c), folded into each call (QMPI_INLINE).
 */
#ifndef QMPI_P2P_ARGS_H
#define QMPI_P2P_ARGS_H

#include "qmpi.h"

/* ---- argument checks ---------------------------------------------------------------- */

/* Everything a send needs checked; *c and *bytes on success. */
static QMPI_INLINE int check_send(const char *fn, const void *buf, int count, MPI_Datatype dt, int dest,
                      int tag, MPI_Comm comm, qmpi_comm **c, size_t *bytes)
{
    int cls;
    int rc;
    if ((*c = qmpi_comm_arg(fn, comm, NULL, NULL, &rc)) == NULL)
        return rc;
    /* MPI_DATATYPE_NULL with count 0 is taken as "no data" (MPICH does). */
    if (count == 0 && dt == MPI_DATATYPE_NULL)
        *bytes = 0;
    else if ((cls = qmpi_check_buf(buf, count, dt, bytes)) != MPI_SUCCESS)
        return qmpi_raise(comm, cls, fn, "invalid buffer, count %d or datatype", count);
    if (dest != MPI_PROC_NULL && (dest < 0 || dest >= (*c)->size))
        return qmpi_raise(comm, MPI_ERR_RANK, fn, "invalid rank %d (communicator of %d)", dest,
                          (int)(*c)->size);
    if (tag < 0 || tag > QUAY_TAG_MAX)
        return qmpi_raise(comm, MPI_ERR_TAG, fn, "invalid tag %d", tag);
    return MPI_SUCCESS;
}

static QMPI_INLINE int check_recv(const char *fn, const void *buf, int count, MPI_Datatype dt, int source,
                      int tag, MPI_Comm comm, qmpi_comm **c, size_t *bytes)
{
    int cls;
    int rc;
    if ((*c = qmpi_comm_arg(fn, comm, NULL, NULL, &rc)) == NULL)
        return rc;
    if (count == 0 && dt == MPI_DATATYPE_NULL) {
        if (bytes != NULL)
            *bytes = 0;
    } else {
        if ((cls = qmpi_check_buf(buf, count, dt, bytes)) != MPI_SUCCESS)
            return qmpi_raise(comm, cls, fn, "invalid buffer, count %d or datatype", count);
    }
    if (source != MPI_PROC_NULL && source != MPI_ANY_SOURCE &&
        (source < 0 || source >= (*c)->size))
        return qmpi_raise(comm, MPI_ERR_RANK, fn, "invalid rank %d (communicator of %d)",
                          source, (int)(*c)->size);
    if (tag != MPI_ANY_TAG && (tag < 0 || tag > QUAY_TAG_MAX))
        return qmpi_raise(comm, MPI_ERR_TAG, fn, "invalid tag %d", tag);
    return MPI_SUCCESS;
}

static QMPI_INLINE int check_req_ptr(const char *fn, MPI_Comm comm, const MPI_Request *request)
{
    if (request == NULL)
        return qmpi_raise(comm, MPI_ERR_ARG, fn, "request is NULL");
    return MPI_SUCCESS;
}

#endif /* QMPI_P2P_ARGS_H */
