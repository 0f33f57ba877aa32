/*
 * mpi.h — a MINIMAL MPI-like layer over quay_rt, for the benchmarks only.
 *
 * This is a stand-in so that bench/mpi/qbench.c, written against standard
 * MPI, builds unchanged against quay (target qbench_quay) as well as
 * against MPICH (mpicc). It implements exactly what qbench uses and no
 * more: one communicator (MPI_COMM_WORLD), contiguous predefined
 * datatypes, blocking and non-blocking point-to-point, Wait/Waitall,
 * Barrier, Bcast, Allreduce with the predefined arithmetic ops, Wtime,
 * Abort. It is NOT quay's MPI binding: that is a later issue (mpi/mpi.h)
 * and replaces this file; nothing outside bench/ may include it.
 *
 * Semantics kept from MPI: MPI-3 signatures (const send buffers), the
 * MPI_ERRORS_ARE_FATAL default — any error (bad argument, truncated
 * message, failed peer, engine error) prints "quay mpi shim, rank R:
 * FUNCTION: what" on stderr and ends the process with status 1, so calls
 * return MPI_SUCCESS or do not return. Blocking calls post the matching
 * quay request and wait with qrt_wait (a bounded spin, then a block in
 * the transport until something arrives). A quay call that answers
 * QUAY_EAGAIN (a bounded pool is full) is retried after progress.
 *
 * Start programs with quayrun (tools/quayrun.c): the runtime reads its
 * rank, size and transport from the environment quayrun sets.
 */
#ifndef QUAY_BENCH_MPI_SHIM_H
#define QUAY_BENCH_MPI_SHIM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- handles and constants ---------------------------------------------- */

typedef int MPI_Comm;
typedef int MPI_Datatype;
typedef int MPI_Op;
/** A pending request is the engine's own request (quay.h). */
typedef struct quay_req *MPI_Request;

typedef struct MPI_Status {
    int MPI_SOURCE;
    int MPI_TAG;
    int MPI_ERROR;
    size_t qshim_bytes; /**< private: bytes received (MPI_Get_count) */
} MPI_Status;

#define MPI_SUCCESS 0
#define MPI_ERR_OTHER 15
#define MPI_UNDEFINED (-32766)

#define MPI_COMM_NULL ((MPI_Comm)0)
#define MPI_COMM_WORLD ((MPI_Comm)1)

/* Same values as QUAY_ANY_SOURCE, QUAY_ANY_TAG, QUAY_PROC_NULL. */
#define MPI_ANY_SOURCE (-1)
#define MPI_ANY_TAG (-1)
#define MPI_PROC_NULL (-2)

#define MPI_REQUEST_NULL ((MPI_Request)0)
#define MPI_STATUS_IGNORE ((MPI_Status *)0)
#define MPI_STATUSES_IGNORE ((MPI_Status *)0)
/** Allreduce: the input is already in the receive buffer. */
#define MPI_IN_PLACE ((void *)1)

#define MPI_MAX_LIBRARY_VERSION_STRING 256

/* Contiguous predefined datatypes (MPI_BYTE and MPI_CHAR only move data;
 * the others also reduce). */
#define MPI_DATATYPE_NULL ((MPI_Datatype)0)
#define MPI_BYTE ((MPI_Datatype)1)
#define MPI_CHAR ((MPI_Datatype)2)
#define MPI_INT ((MPI_Datatype)3)
#define MPI_UNSIGNED ((MPI_Datatype)4)
#define MPI_LONG ((MPI_Datatype)5)
#define MPI_LONG_LONG ((MPI_Datatype)6)
#define MPI_LONG_LONG_INT MPI_LONG_LONG
#define MPI_FLOAT ((MPI_Datatype)7)
#define MPI_DOUBLE ((MPI_Datatype)8)

#define MPI_OP_NULL ((MPI_Op)0)
#define MPI_SUM ((MPI_Op)1)
#define MPI_PROD ((MPI_Op)2)
#define MPI_MIN ((MPI_Op)3)
#define MPI_MAX ((MPI_Op)4)

/* ---- functions ------------------------------------------------------------ */

int MPI_Init(int *argc, char ***argv);
int MPI_Finalize(void);
/** Ends this process with `errorcode` (1 if it is not 1..255); quayrun
 *  then ends the others after its grace period (their peer failed). */
int MPI_Abort(MPI_Comm comm, int errorcode);
int MPI_Comm_rank(MPI_Comm comm, int *rank);
int MPI_Comm_size(MPI_Comm comm, int *size);
/** Usable before MPI_Init; names the transport after it. */
int MPI_Get_library_version(char *version, int *resultlen);

int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
             MPI_Comm comm);
int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
             MPI_Status *status);
int MPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
              MPI_Comm comm, MPI_Request *request);
int MPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
              MPI_Request *request);
int MPI_Wait(MPI_Request *request, MPI_Status *status);
int MPI_Waitall(int count, MPI_Request array_of_requests[], MPI_Status array_of_statuses[]);
int MPI_Get_count(const MPI_Status *status, MPI_Datatype datatype, int *count);

int MPI_Barrier(MPI_Comm comm);
int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm);
int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                  MPI_Op op, MPI_Comm comm);

double MPI_Wtime(void);

#ifdef __cplusplus
}
#endif

#endif /* QUAY_BENCH_MPI_SHIM_H */
