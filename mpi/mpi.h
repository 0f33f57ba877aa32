/*
 * mpi.h — quay's MPI binding: a subset of MPI-3.1 for C programs, on the
 * quay engine and the shm / TCP runtime (adapters/rt/quay_rt.h).
 *
 * Compile with `quaycc prog.c -o prog` (as mpicc) and start with
 * `quayrun -n N ./prog` (shared memory; `--transport tcp` for TCP) or with
 * Hydra's `mpiexec -n N ./prog` (TCP, rank and addresses through PMI-1).
 *
 * What is here is implemented as the standard says; what is not here is
 * absent (a compile error), never a stub. The subset (docs/mpi.md):
 *   environment   Init, Init_thread (SINGLE, FUNNELED), Finalize,
 *                 Initialized, Finalized, Abort, Query_thread,
 *                 Is_thread_main, Get_version, Get_library_version,
 *                 Get_processor_name, Wtime, Wtick
 *   communicators COMM_WORLD, COMM_SELF, Comm_rank, Comm_size, Comm_dup,
 *                 Comm_split, Comm_free, Comm_compare, Comm_get_attr
 *                 (TAG_UB, HOST, IO, WTIME_IS_GLOBAL, UNIVERSE_SIZE,
 *                 APPNUM), Comm_set_name, Comm_get_name
 *   errors        Comm_set_errhandler, Comm_get_errhandler,
 *                 Errhandler_free, ERRORS_ARE_FATAL (default),
 *                 ERRORS_RETURN, ERRORS_ABORT, Error_string, Error_class
 *   point to point Send, Recv, Isend, Irecv, Ssend, Issend, Rsend, Irsend,
 *                 Bsend, Ibsend, Buffer_attach, Buffer_detach, Sendrecv,
 *                 Sendrecv_replace, Probe, Iprobe, Mprobe, Improbe, Mrecv,
 *                 Imrecv, Get_count, Get_elements
 *   persistent    Send_init, Bsend_init, Ssend_init, Rsend_init, Recv_init,
 *                 Start, Startall
 *   requests      Wait, Test, Waitall, Testall, Waitany, Testany,
 *                 Waitsome, Testsome, Request_free, Request_get_status,
 *                 Cancel, Test_cancelled
 *   collectives   Barrier, Bcast, Reduce, Allreduce, Ibarrier, Ibcast,
 *                 Ireduce, Iallreduce (MPI_IN_PLACE where the standard
 *                 allows it), Reduce_local
 *   datatypes     the predefined basic C types (contiguous only), the
 *                 MINLOC / MAXLOC pair types, Type_size
 *   operations    the predefined reduction ops, Op_create, Op_free,
 *                 Op_commutative
 *
 * Errors: a call returns MPI_SUCCESS or an error code, which here is
 * always the error class itself. Under MPI_ERRORS_ARE_FATAL (the default
 * on every communicator) an error prints "quay mpi, rank R: MPI_Xxx: what
 * (MPI_ERR_CLASS)" on stderr and ends the job (MPI_Abort). An operation
 * that depends on a process that died fails with MPI_ERR_PROC_FAILED.
 * Errors not tied to a communicator (a bad request, datatype or op, an
 * invalid communicator handle) go to MPI_COMM_WORLD's handler.
 *
 * Threads: MPI_THREAD_FUNNELED at most (only the thread that called
 * MPI_Init may make MPI calls).
 */
#ifndef QUAY_MPI_H
#define QUAY_MPI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(QMPI_BUILDING) && (defined(__GNUC__) || defined(__clang__))
#define QMPI_API __attribute__((visibility("default")))
#else
#define QMPI_API
#endif

#define MPI_VERSION 3
#define MPI_SUBVERSION 1
/** quay's binding (lets a program tell it apart from other MPIs). */
#define QUAY_MPI 1

/* ---- handles ---------------------------------------------------------- */

/* Handles are integers: a stale or forged one is detected, never
 * dereferenced. */
typedef int MPI_Comm;
typedef int MPI_Datatype;
typedef int MPI_Op;
typedef int MPI_Request;
typedef int MPI_Errhandler;
typedef int MPI_Message;

typedef intptr_t MPI_Aint;
typedef long long MPI_Offset;
typedef long long MPI_Count;
typedef int MPI_Fint;

/** Status of a completed receive (or send). MPI_SOURCE, MPI_TAG and
 *  MPI_ERROR are the standard's public fields; the rest is private. */
typedef struct MPI_Status {
    int MPI_SOURCE;
    int MPI_TAG;
    int MPI_ERROR;
    int quay_cancelled;   /* private: Test_cancelled */
    long long quay_bytes; /* private: bytes received (Get_count) */
} MPI_Status;

#define MPI_STATUS_IGNORE ((MPI_Status *)1)
#define MPI_STATUSES_IGNORE ((MPI_Status *)1)

#define MPI_COMM_NULL ((MPI_Comm)0x04000000)
#define MPI_COMM_WORLD ((MPI_Comm)0x44000000)
#define MPI_COMM_SELF ((MPI_Comm)0x44000001)

#define MPI_REQUEST_NULL ((MPI_Request)0x2c000000)
#define MPI_MESSAGE_NULL ((MPI_Message)0x30000000)
#define MPI_MESSAGE_NO_PROC ((MPI_Message)0x70000000)

#define MPI_ERRHANDLER_NULL ((MPI_Errhandler)0x14000000)
#define MPI_ERRORS_ARE_FATAL ((MPI_Errhandler)0x54000000)
#define MPI_ERRORS_RETURN ((MPI_Errhandler)0x54000001)
#define MPI_ERRORS_ABORT ((MPI_Errhandler)0x54000002)

/* ---- datatypes (predefined, contiguous) -------------------------------- */

#define MPI_DATATYPE_NULL ((MPI_Datatype)0x0c000000)
#define MPI_CHAR ((MPI_Datatype)0x4c000001)
#define MPI_SIGNED_CHAR ((MPI_Datatype)0x4c000002)
#define MPI_UNSIGNED_CHAR ((MPI_Datatype)0x4c000003)
#define MPI_BYTE ((MPI_Datatype)0x4c000004)
#define MPI_WCHAR ((MPI_Datatype)0x4c000005)
#define MPI_SHORT ((MPI_Datatype)0x4c000006)
#define MPI_UNSIGNED_SHORT ((MPI_Datatype)0x4c000007)
#define MPI_INT ((MPI_Datatype)0x4c000008)
#define MPI_UNSIGNED ((MPI_Datatype)0x4c000009)
#define MPI_LONG ((MPI_Datatype)0x4c00000a)
#define MPI_UNSIGNED_LONG ((MPI_Datatype)0x4c00000b)
#define MPI_LONG_LONG_INT ((MPI_Datatype)0x4c00000c)
#define MPI_LONG_LONG MPI_LONG_LONG_INT
#define MPI_UNSIGNED_LONG_LONG ((MPI_Datatype)0x4c00000d)
#define MPI_FLOAT ((MPI_Datatype)0x4c00000e)
#define MPI_DOUBLE ((MPI_Datatype)0x4c00000f)
#define MPI_LONG_DOUBLE ((MPI_Datatype)0x4c000010)
#define MPI_C_BOOL ((MPI_Datatype)0x4c000011)
#define MPI_INT8_T ((MPI_Datatype)0x4c000012)
#define MPI_INT16_T ((MPI_Datatype)0x4c000013)
#define MPI_INT32_T ((MPI_Datatype)0x4c000014)
#define MPI_INT64_T ((MPI_Datatype)0x4c000015)
#define MPI_UINT8_T ((MPI_Datatype)0x4c000016)
#define MPI_UINT16_T ((MPI_Datatype)0x4c000017)
#define MPI_UINT32_T ((MPI_Datatype)0x4c000018)
#define MPI_UINT64_T ((MPI_Datatype)0x4c000019)
#define MPI_AINT ((MPI_Datatype)0x4c00001a)
#define MPI_OFFSET ((MPI_Datatype)0x4c00001b)
#define MPI_COUNT ((MPI_Datatype)0x4c00001c)
#define MPI_C_FLOAT_COMPLEX ((MPI_Datatype)0x4c00001d)
#define MPI_C_COMPLEX MPI_C_FLOAT_COMPLEX
#define MPI_C_DOUBLE_COMPLEX ((MPI_Datatype)0x4c00001e)
#define MPI_C_LONG_DOUBLE_COMPLEX ((MPI_Datatype)0x4c00001f)
#define MPI_PACKED ((MPI_Datatype)0x4c000020)
/* Pair types for MPI_MINLOC / MPI_MAXLOC: {value, int index}. */
#define MPI_FLOAT_INT ((MPI_Datatype)0x4c000021)
#define MPI_DOUBLE_INT ((MPI_Datatype)0x4c000022)
#define MPI_LONG_INT ((MPI_Datatype)0x4c000023)
#define MPI_2INT ((MPI_Datatype)0x4c000024)
#define MPI_SHORT_INT ((MPI_Datatype)0x4c000025)
#define MPI_LONG_DOUBLE_INT ((MPI_Datatype)0x4c000026)

/* ---- reduction operations --------------------------------------------- */

#define MPI_OP_NULL ((MPI_Op)0x18000000)
#define MPI_MAX ((MPI_Op)0x58000001)
#define MPI_MIN ((MPI_Op)0x58000002)
#define MPI_SUM ((MPI_Op)0x58000003)
#define MPI_PROD ((MPI_Op)0x58000004)
#define MPI_LAND ((MPI_Op)0x58000005)
#define MPI_BAND ((MPI_Op)0x58000006)
#define MPI_LOR ((MPI_Op)0x58000007)
#define MPI_BOR ((MPI_Op)0x58000008)
#define MPI_LXOR ((MPI_Op)0x58000009)
#define MPI_BXOR ((MPI_Op)0x5800000a)
#define MPI_MINLOC ((MPI_Op)0x5800000b)
#define MPI_MAXLOC ((MPI_Op)0x5800000c)

/** A user reduction: for i < *len, inoutvec[i] = invec[i] op inoutvec[i]
 *  (invec holds the lower ranks' operand). */
typedef void MPI_User_function(void *invec, void *inoutvec, int *len, MPI_Datatype *datatype);

/* ---- special values ----------------------------------------------------- */

#define MPI_ANY_SOURCE (-1)
#define MPI_ANY_TAG (-1)
#define MPI_PROC_NULL (-2)
#define MPI_ROOT (-3)
#define MPI_UNDEFINED (-32766)
#define MPI_IN_PLACE ((void *)-1)
#define MPI_BOTTOM ((void *)0)
#define MPI_BSEND_OVERHEAD 64

#define MPI_MAX_PROCESSOR_NAME 256
#define MPI_MAX_ERROR_STRING 512
#define MPI_MAX_OBJECT_NAME 128
#define MPI_MAX_LIBRARY_VERSION_STRING 256

/* Thread support levels. */
#define MPI_THREAD_SINGLE 0
#define MPI_THREAD_FUNNELED 1
#define MPI_THREAD_SERIALIZED 2
#define MPI_THREAD_MULTIPLE 3

/* MPI_Comm_compare results. */
#define MPI_IDENT 0
#define MPI_CONGRUENT 1
#define MPI_SIMILAR 2
#define MPI_UNEQUAL 3

/* Predefined attribute keys (MPI_Comm_get_attr). */
#define MPI_TAG_UB 0x64400001
#define MPI_HOST 0x64400003
#define MPI_IO 0x64400005
#define MPI_WTIME_IS_GLOBAL 0x64400007
#define MPI_UNIVERSE_SIZE 0x64400009
#define MPI_APPNUM 0x6440000b

/* ---- error classes (an error code here is its class) ------------------ */

#define MPI_SUCCESS 0
#define MPI_ERR_BUFFER 1
#define MPI_ERR_COUNT 2
#define MPI_ERR_TYPE 3
#define MPI_ERR_TAG 4
#define MPI_ERR_COMM 5
#define MPI_ERR_RANK 6
#define MPI_ERR_ROOT 7
#define MPI_ERR_GROUP 8
#define MPI_ERR_OP 9
#define MPI_ERR_TOPOLOGY 10
#define MPI_ERR_DIMS 11
#define MPI_ERR_ARG 12
#define MPI_ERR_UNKNOWN 13
#define MPI_ERR_TRUNCATE 14
#define MPI_ERR_OTHER 15
#define MPI_ERR_INTERN 16
#define MPI_ERR_IN_STATUS 17
#define MPI_ERR_PENDING 18
#define MPI_ERR_REQUEST 19
#define MPI_ERR_ACCESS 20
#define MPI_ERR_AMODE 21
#define MPI_ERR_BAD_FILE 22
#define MPI_ERR_CONVERSION 23
#define MPI_ERR_DUP_DATAREP 24
#define MPI_ERR_FILE_EXISTS 25
#define MPI_ERR_FILE_IN_USE 26
#define MPI_ERR_FILE 27
#define MPI_ERR_INFO 28
#define MPI_ERR_INFO_KEY 29
#define MPI_ERR_INFO_VALUE 30
#define MPI_ERR_INFO_NOKEY 31
#define MPI_ERR_IO 32
#define MPI_ERR_NAME 33
#define MPI_ERR_NO_MEM 34
#define MPI_ERR_NOT_SAME 35
#define MPI_ERR_NO_SPACE 36
#define MPI_ERR_NO_SUCH_FILE 37
#define MPI_ERR_PORT 38
#define MPI_ERR_QUOTA 39
#define MPI_ERR_READ_ONLY 40
#define MPI_ERR_SERVICE 41
#define MPI_ERR_SPAWN 42
#define MPI_ERR_UNSUPPORTED_DATAREP 43
#define MPI_ERR_UNSUPPORTED_OPERATION 44
#define MPI_ERR_WIN 45
#define MPI_ERR_BASE 46
#define MPI_ERR_LOCKTYPE 47
#define MPI_ERR_KEYVAL 48
#define MPI_ERR_RMA_CONFLICT 49
#define MPI_ERR_RMA_SYNC 50
#define MPI_ERR_SIZE 51
#define MPI_ERR_DISP 52
#define MPI_ERR_ASSERT 53
#define MPI_ERR_RMA_RANGE 55
#define MPI_ERR_RMA_ATTACH 56
#define MPI_ERR_RMA_SHARED 57
#define MPI_ERR_RMA_FLAVOR 58
/** A process this operation depends on has failed (as ULFM's). */
#define MPI_ERR_PROC_FAILED 75
#define MPIX_ERR_PROC_FAILED MPI_ERR_PROC_FAILED
#define MPI_ERR_LASTCODE 0x3fffffff

/* ---- environment ------------------------------------------------------------ */

QMPI_API int MPI_Init(int *argc, char ***argv);
QMPI_API int MPI_Init_thread(int *argc, char ***argv, int required, int *provided);
QMPI_API int MPI_Finalize(void);
QMPI_API int MPI_Initialized(int *flag);
QMPI_API int MPI_Finalized(int *flag);
QMPI_API int MPI_Abort(MPI_Comm comm, int errorcode);
QMPI_API int MPI_Query_thread(int *provided);
QMPI_API int MPI_Is_thread_main(int *flag);
QMPI_API int MPI_Get_version(int *version, int *subversion);
QMPI_API int MPI_Get_library_version(char *version, int *resultlen);
QMPI_API int MPI_Get_processor_name(char *name, int *resultlen);
QMPI_API double MPI_Wtime(void);
QMPI_API double MPI_Wtick(void);

/* ---- communicators ---------------------------------------------------- */

QMPI_API int MPI_Comm_rank(MPI_Comm comm, int *rank);
QMPI_API int MPI_Comm_size(MPI_Comm comm, int *size);
QMPI_API int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm);
QMPI_API int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm);
QMPI_API int MPI_Comm_free(MPI_Comm *comm);
QMPI_API int MPI_Comm_compare(MPI_Comm comm1, MPI_Comm comm2, int *result);
/** attribute_val is a void ** in disguise (the standard's signature). */
QMPI_API int MPI_Comm_get_attr(MPI_Comm comm, int comm_keyval, void *attribute_val, int *flag);
QMPI_API int MPI_Comm_set_name(MPI_Comm comm, const char *comm_name);
QMPI_API int MPI_Comm_get_name(MPI_Comm comm, char *comm_name, int *resultlen);

/* ---- errors --------------------------------------------------------------- */

QMPI_API int MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler);
QMPI_API int MPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler *errhandler);
QMPI_API int MPI_Errhandler_free(MPI_Errhandler *errhandler);
QMPI_API int MPI_Error_string(int errorcode, char *string, int *resultlen);
QMPI_API int MPI_Error_class(int errorcode, int *errorclass);

/* ---- point to point --------------------------------------------------------- */

QMPI_API int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                      MPI_Comm comm);
QMPI_API int MPI_Ssend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                       MPI_Comm comm);
QMPI_API int MPI_Rsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                       MPI_Comm comm);
QMPI_API int MPI_Bsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                       MPI_Comm comm);
QMPI_API int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag,
                      MPI_Comm comm, MPI_Status *status);
QMPI_API int MPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                       MPI_Comm comm, MPI_Request *request);
QMPI_API int MPI_Issend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                        MPI_Comm comm, MPI_Request *request);
QMPI_API int MPI_Irsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                        MPI_Comm comm, MPI_Request *request);
QMPI_API int MPI_Ibsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                        MPI_Comm comm, MPI_Request *request);
QMPI_API int MPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag,
                       MPI_Comm comm, MPI_Request *request);
/* Persistent requests: made inactive, started any number of times. */
QMPI_API int MPI_Send_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                           MPI_Comm comm, MPI_Request *request);
QMPI_API int MPI_Bsend_init(const void *buf, int count, MPI_Datatype datatype, int dest,
                            int tag, MPI_Comm comm, MPI_Request *request);
QMPI_API int MPI_Ssend_init(const void *buf, int count, MPI_Datatype datatype, int dest,
                            int tag, MPI_Comm comm, MPI_Request *request);
QMPI_API int MPI_Rsend_init(const void *buf, int count, MPI_Datatype datatype, int dest,
                            int tag, MPI_Comm comm, MPI_Request *request);
QMPI_API int MPI_Recv_init(void *buf, int count, MPI_Datatype datatype, int source, int tag,
                           MPI_Comm comm, MPI_Request *request);
QMPI_API int MPI_Start(MPI_Request *request);
QMPI_API int MPI_Startall(int count, MPI_Request *array_of_requests);
/** buffer_addr is a void ** in disguise (the standard's signature). */
QMPI_API int MPI_Buffer_attach(void *buffer, int size);
QMPI_API int MPI_Buffer_detach(void *buffer_addr, int *size);
QMPI_API int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest,
                          int sendtag, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                          int source, int recvtag, MPI_Comm comm, MPI_Status *status);
QMPI_API int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest,
                                  int sendtag, int source, int recvtag, MPI_Comm comm,
                                  MPI_Status *status);
QMPI_API int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status);
QMPI_API int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status);
QMPI_API int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message,
                        MPI_Status *status);
QMPI_API int MPI_Improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message,
                         MPI_Status *status);
QMPI_API int MPI_Mrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message,
                       MPI_Status *status);
QMPI_API int MPI_Imrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message,
                        MPI_Request *request);
QMPI_API int MPI_Get_count(const MPI_Status *status, MPI_Datatype datatype, int *count);
QMPI_API int MPI_Get_elements(const MPI_Status *status, MPI_Datatype datatype, int *count);

/* ---- requests ----------------------------------------------------------------- */

QMPI_API int MPI_Wait(MPI_Request *request, MPI_Status *status);
QMPI_API int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status);
QMPI_API int MPI_Waitall(int count, MPI_Request *array_of_requests,
                         MPI_Status *array_of_statuses);
QMPI_API int MPI_Testall(int count, MPI_Request *array_of_requests, int *flag,
                         MPI_Status *array_of_statuses);
QMPI_API int MPI_Waitany(int count, MPI_Request *array_of_requests, int *indx,
                         MPI_Status *status);
QMPI_API int MPI_Testany(int count, MPI_Request *array_of_requests, int *indx, int *flag,
                         MPI_Status *status);
QMPI_API int MPI_Waitsome(int incount, MPI_Request *array_of_requests, int *outcount,
                          int *array_of_indices, MPI_Status *array_of_statuses);
QMPI_API int MPI_Testsome(int incount, MPI_Request *array_of_requests, int *outcount,
                          int *array_of_indices, MPI_Status *array_of_statuses);
QMPI_API int MPI_Request_free(MPI_Request *request);
QMPI_API int MPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status);
QMPI_API int MPI_Cancel(MPI_Request *request);
QMPI_API int MPI_Test_cancelled(const MPI_Status *status, int *flag);

/* ---- collectives -------------------------------------------------------------- */

QMPI_API int MPI_Barrier(MPI_Comm comm);
QMPI_API int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm);
QMPI_API int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                        MPI_Op op, int root, MPI_Comm comm);
QMPI_API int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                           MPI_Op op, MPI_Comm comm);
QMPI_API int MPI_Ibarrier(MPI_Comm comm, MPI_Request *request);
QMPI_API int MPI_Ibcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
                        MPI_Request *request);
QMPI_API int MPI_Ireduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                         MPI_Op op, int root, MPI_Comm comm, MPI_Request *request);
QMPI_API int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count,
                            MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                            MPI_Request *request);
QMPI_API int MPI_Reduce_local(const void *inbuf, void *inoutbuf, int count,
                              MPI_Datatype datatype, MPI_Op op);

/* ---- datatypes and operations ---------------------------------------------- */

QMPI_API int MPI_Type_size(MPI_Datatype datatype, int *size);
QMPI_API int MPI_Op_create(MPI_User_function *user_fn, int commute, MPI_Op *op);
QMPI_API int MPI_Op_free(MPI_Op *op);
QMPI_API int MPI_Op_commutative(MPI_Op op, int *commute);

#ifdef __cplusplus
}
#endif

#endif /* QUAY_MPI_H */
