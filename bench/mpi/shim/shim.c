/*
 * shim.c — the benchmarks' minimal MPI over quay_rt (mpi.h says what it
 * is and is not). One runtime per process, held in file-scope state as
 * MPI's is; every call checks that MPI_Init ran and its arguments.
 */
#include "mpi.h"

#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <quay/quay.h>
#include <quay/quay_coll.h>
#include <quay/quay_version.h>

#include "quay_rt.h"

_Static_assert(MPI_ANY_SOURCE == QUAY_ANY_SOURCE, "MPI_ANY_SOURCE");
_Static_assert(MPI_ANY_TAG == QUAY_ANY_TAG, "MPI_ANY_TAG");
_Static_assert(MPI_PROC_NULL == QUAY_PROC_NULL, "MPI_PROC_NULL");
_Static_assert(sizeof(int) == 4 && sizeof(long long) == 8, "int / long long widths");

/* A call that keeps answering QUAY_EAGAIN for this long while the engine
 * makes progress is a resource the program itself holds (e.g. more
 * requests outstanding than the pool): an error, not a wait. */
#define SHIM_EAGAIN_LIMIT_S 10.0
/* Idle retries before a retry blocks in the transport (1 ms at most). */
#define SHIM_EAGAIN_SPIN 64
#define SHIM_BLOCK_NS (1000 * 1000)

enum { SHIM_BEFORE = 0, SHIM_RUNNING = 1, SHIM_FINALIZED = 2 };

static int shim_state = SHIM_BEFORE;
static qrt *shim_rt;
static quay_engine *shim_e;
static quay_comm *shim_world;
static int shim_rank = -1;
static int shim_size;

/* ---- errors --------------------------------------------------------------- */

#if defined(__GNUC__) || defined(__clang__)
__attribute__((noreturn, format(printf, 2, 3)))
#endif
static void shim_fail(const char *fn, const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    fprintf(stderr, "quay mpi shim, rank %d: %s: ", shim_rank, fn);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    _exit(1); /* MPI_ERRORS_ARE_FATAL; quayrun ends the other ranks */
}

/* A quay call's return code: 0 or the end of the process. */
static void shim_check(const char *fn, const char *what, int rc)
{
    if (rc != 0)
        shim_fail(fn, "%s: %s", what, quay_strerror(rc));
}

static void shim_running(const char *fn)
{
    if (shim_state != SHIM_RUNNING)
        shim_fail(fn, shim_state == SHIM_BEFORE ? "called before MPI_Init"
                                                : "called after MPI_Finalize");
}

static void shim_comm(const char *fn, MPI_Comm comm)
{
    shim_running(fn);
    if (comm != MPI_COMM_WORLD)
        shim_fail(fn, "invalid communicator (only MPI_COMM_WORLD exists)");
}

static double shim_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- datatypes and ops ---------------------------------------------------- */

typedef struct shim_type {
    size_t size;
    quay_dtype q; /* 0: not for reductions */
} shim_type;

static const shim_type shim_types[] = {
    [MPI_BYTE] = {1, 0},
    [MPI_CHAR] = {1, 0},
    [MPI_INT] = {sizeof(int), QUAY_INT32},
    [MPI_UNSIGNED] = {sizeof(unsigned), QUAY_UINT32},
    [MPI_LONG] = {sizeof(long), sizeof(long) == 8 ? QUAY_INT64 : QUAY_INT32},
    [MPI_LONG_LONG] = {sizeof(long long), QUAY_INT64},
    [MPI_FLOAT] = {sizeof(float), QUAY_FLOAT},
    [MPI_DOUBLE] = {sizeof(double), QUAY_DOUBLE},
};

static const shim_type *shim_type_of(const char *fn, MPI_Datatype dt)
{
    if (dt <= 0 || (size_t)dt >= sizeof shim_types / sizeof shim_types[0])
        shim_fail(fn, "invalid datatype %d", dt);
    return &shim_types[dt];
}

/* count elements of dt in bytes. */
static size_t shim_bytes(const char *fn, int count, MPI_Datatype dt)
{
    const shim_type *t = shim_type_of(fn, dt);
    if (count < 0)
        shim_fail(fn, "negative count %d", count);
    return (size_t)count * t->size;
}

static quay_op shim_op(const char *fn, MPI_Op op)
{
    quay_op q = {QUAY_OP_SUM, 1, NULL, NULL};
    switch (op) {
    case MPI_SUM:
        q.kind = QUAY_OP_SUM;
        break;
    case MPI_PROD:
        q.kind = QUAY_OP_PROD;
        break;
    case MPI_MIN:
        q.kind = QUAY_OP_MIN;
        break;
    case MPI_MAX:
        q.kind = QUAY_OP_MAX;
        break;
    default:
        shim_fail(fn, "invalid op %d", op);
    }
    return q;
}

/* ---- posting and waiting -------------------------------------------------- */

/* Retry bookkeeping for QUAY_EAGAIN. */
typedef struct shim_retry {
    uint32_t idle;
    double since; /* 0: no EAGAIN yet */
} shim_retry;

/* 1 if the call that returned rc should be retried (after progress has
 * been made here), 0 if rc is its final answer. */
static int shim_again(const char *fn, shim_retry *r, int rc)
{
    if (rc != QUAY_EAGAIN)
        return 0;
    if (r->since == 0)
        r->since = shim_now();
    else if (shim_now() - r->since > SHIM_EAGAIN_LIMIT_S)
        shim_fail(fn, "the engine answered %s for %.0f s (more requests outstanding "
                      "than its pools hold?)",
                  quay_strerror(rc), SHIM_EAGAIN_LIMIT_S);
    int p = qrt_progress(shim_rt, r->idle >= SHIM_EAGAIN_SPIN ? SHIM_BLOCK_NS : 0);
    if (p < 0)
        shim_check(fn, "progress", p);
    r->idle = p > 0 ? 0 : r->idle + 1;
    return 1;
}

/* Wait for *req, free it, fill *status (may be MPI_STATUS_IGNORE), set
 * *req to MPI_REQUEST_NULL. A failed request ends the process. */
static void shim_wait(const char *fn, MPI_Request *req, MPI_Status *status)
{
    quay_status st;
    if (*req == MPI_REQUEST_NULL) { /* MPI: an empty status */
        if (status != MPI_STATUS_IGNORE) {
            status->MPI_SOURCE = MPI_ANY_SOURCE;
            status->MPI_TAG = MPI_ANY_TAG;
            status->MPI_ERROR = MPI_SUCCESS;
            status->qshim_bytes = 0;
        }
        return;
    }
    shim_check(fn, "qrt_wait", qrt_wait(shim_rt, *req, &st));
    shim_check(fn, "quay_req_free", quay_req_free(shim_e, *req));
    *req = MPI_REQUEST_NULL;
    if (st.error == QUAY_ETRUNCATE)
        shim_fail(fn, "message truncated (MPI_ERR_TRUNCATE): from rank %d tag %d",
                  (int)st.source, (int)st.tag);
    if (st.error != 0)
        shim_fail(fn, "request failed: %s", quay_strerror(st.error));
    if (status != MPI_STATUS_IGNORE) {
        status->MPI_SOURCE = (int)st.source;
        status->MPI_TAG = (int)st.tag;
        status->MPI_ERROR = MPI_SUCCESS;
        status->qshim_bytes = (size_t)st.count;
    }
}

static void shim_isend(const char *fn, const void *buf, int count, MPI_Datatype dt, int dest,
                       int tag, MPI_Comm comm, MPI_Request *req)
{
    shim_retry r = {0, 0};
    int rc;
    shim_comm(fn, comm);
    size_t len = shim_bytes(fn, count, dt);
    if (req == NULL)
        shim_fail(fn, "request is NULL");
    do
        rc = quay_isend(shim_e, shim_world, buf, len, dest, tag, QUAY_SEND_STANDARD, req);
    while (shim_again(fn, &r, rc));
    shim_check(fn, "quay_isend", rc);
}

static void shim_irecv(const char *fn, void *buf, int count, MPI_Datatype dt, int source,
                       int tag, MPI_Comm comm, MPI_Request *req)
{
    shim_retry r = {0, 0};
    int rc;
    shim_comm(fn, comm);
    size_t len = shim_bytes(fn, count, dt);
    if (req == NULL)
        shim_fail(fn, "request is NULL");
    do
        rc = quay_irecv(shim_e, shim_world, buf, len, source, tag, req);
    while (shim_again(fn, &r, rc));
    shim_check(fn, "quay_irecv", rc);
}

/* ---- environment ---------------------------------------------------------- */

int MPI_Init(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (shim_state != SHIM_BEFORE)
        shim_fail("MPI_Init", "called twice");
    int rc = qrt_init(NULL, &shim_rt);
    if (rc != 0)
        shim_fail("MPI_Init", "qrt_init: %s (start the program with quayrun)",
                  quay_strerror(rc));
    shim_e = qrt_engine(shim_rt);
    shim_world = qrt_world(shim_rt);
    shim_rank = (int)qrt_rank(shim_rt);
    shim_size = (int)qrt_size(shim_rt);
    shim_state = SHIM_RUNNING;
    return MPI_SUCCESS;
}

int MPI_Finalize(void)
{
    shim_running("MPI_Finalize");
    int rc = qrt_finalize(shim_rt);
    shim_rt = NULL;
    shim_e = NULL;
    shim_world = NULL;
    shim_state = SHIM_FINALIZED;
    shim_check("MPI_Finalize", "qrt_finalize", rc);
    return MPI_SUCCESS;
}

int MPI_Abort(MPI_Comm comm, int errorcode)
{
    (void)comm;
    fflush(stdout);
    fprintf(stderr, "quay mpi shim, rank %d: MPI_Abort(%d)\n", shim_rank, errorcode);
    fflush(stderr);
    _exit(errorcode >= 1 && errorcode <= 255 ? errorcode : 1);
}

int MPI_Comm_rank(MPI_Comm comm, int *rank)
{
    shim_comm("MPI_Comm_rank", comm);
    *rank = shim_rank;
    return MPI_SUCCESS;
}

int MPI_Comm_size(MPI_Comm comm, int *size)
{
    shim_comm("MPI_Comm_size", comm);
    *size = shim_size;
    return MPI_SUCCESS;
}

int MPI_Get_library_version(char *version, int *resultlen)
{
    int n = snprintf(version, MPI_MAX_LIBRARY_VERSION_STRING,
                     "quay %s, bench/mpi shim over quay_rt%s%s", QUAY_VERSION,
                     shim_rt != NULL ? ", transport " : "",
                     shim_rt != NULL ? qrt_transport_name(shim_rt) : "");
    if (n >= MPI_MAX_LIBRARY_VERSION_STRING)
        n = MPI_MAX_LIBRARY_VERSION_STRING - 1;
    *resultlen = n < 0 ? 0 : n;
    return MPI_SUCCESS;
}

double MPI_Wtime(void)
{
    return shim_now();
}

/* ---- point to point ------------------------------------------------------- */

int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
             MPI_Comm comm)
{
    MPI_Request r;
    shim_isend("MPI_Send", buf, count, datatype, dest, tag, comm, &r);
    shim_wait("MPI_Send", &r, MPI_STATUS_IGNORE);
    return MPI_SUCCESS;
}

int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
             MPI_Status *status)
{
    MPI_Request r;
    shim_irecv("MPI_Recv", buf, count, datatype, source, tag, comm, &r);
    shim_wait("MPI_Recv", &r, status);
    return MPI_SUCCESS;
}

int MPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
              MPI_Comm comm, MPI_Request *request)
{
    shim_isend("MPI_Isend", buf, count, datatype, dest, tag, comm, request);
    return MPI_SUCCESS;
}

int MPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
              MPI_Request *request)
{
    shim_irecv("MPI_Irecv", buf, count, datatype, source, tag, comm, request);
    return MPI_SUCCESS;
}

int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    shim_running("MPI_Wait");
    if (request == NULL)
        shim_fail("MPI_Wait", "request is NULL");
    shim_wait("MPI_Wait", request, status);
    return MPI_SUCCESS;
}

int MPI_Waitall(int count, MPI_Request array_of_requests[], MPI_Status array_of_statuses[])
{
    shim_running("MPI_Waitall");
    if (count < 0 || (count > 0 && array_of_requests == NULL))
        shim_fail("MPI_Waitall", "invalid count %d or NULL array", count);
    /* In order: every wait drives the engine, so the later requests
     * progress while the first is waited for. */
    for (int i = 0; i < count; i++)
        shim_wait("MPI_Waitall", &array_of_requests[i],
                  array_of_statuses != MPI_STATUSES_IGNORE ? &array_of_statuses[i]
                                                           : MPI_STATUS_IGNORE);
    return MPI_SUCCESS;
}

int MPI_Get_count(const MPI_Status *status, MPI_Datatype datatype, int *count)
{
    const shim_type *t = shim_type_of("MPI_Get_count", datatype);
    if (status == NULL || count == NULL)
        shim_fail("MPI_Get_count", "NULL argument");
    size_t n = status->qshim_bytes / t->size;
    *count = (status->qshim_bytes % t->size != 0 || n > INT_MAX) ? MPI_UNDEFINED : (int)n;
    return MPI_SUCCESS;
}

/* ---- collectives ---------------------------------------------------------- */

int MPI_Barrier(MPI_Comm comm)
{
    shim_retry r = {0, 0};
    MPI_Request req;
    int rc;
    shim_comm("MPI_Barrier", comm);
    do
        rc = quay_ibarrier(shim_e, shim_world, &req);
    while (shim_again("MPI_Barrier", &r, rc));
    shim_check("MPI_Barrier", "quay_ibarrier", rc);
    shim_wait("MPI_Barrier", &req, MPI_STATUS_IGNORE);
    return MPI_SUCCESS;
}

int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
    shim_retry r = {0, 0};
    MPI_Request req;
    int rc;
    shim_comm("MPI_Bcast", comm);
    size_t len = shim_bytes("MPI_Bcast", count, datatype);
    do
        rc = quay_ibcast(shim_e, shim_world, buffer, len, root, &req);
    while (shim_again("MPI_Bcast", &r, rc));
    shim_check("MPI_Bcast", "quay_ibcast", rc);
    shim_wait("MPI_Bcast", &req, MPI_STATUS_IGNORE);
    return MPI_SUCCESS;
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                  MPI_Op op, MPI_Comm comm)
{
    shim_retry r = {0, 0};
    MPI_Request req;
    int rc;
    shim_comm("MPI_Allreduce", comm);
    const shim_type *t = shim_type_of("MPI_Allreduce", datatype);
    quay_op qop = shim_op("MPI_Allreduce", op);
    if (t->q == 0)
        shim_fail("MPI_Allreduce", "datatype %d cannot be reduced", datatype);
    if (count < 0)
        shim_fail("MPI_Allreduce", "negative count %d", count);
    const void *sb = sendbuf == MPI_IN_PLACE ? QUAY_IN_PLACE : sendbuf;
    do
        rc = quay_iallreduce(shim_e, shim_world, sb, recvbuf, (size_t)count, t->q, &qop, &req);
    while (shim_again("MPI_Allreduce", &r, rc));
    shim_check("MPI_Allreduce", "quay_iallreduce", rc);
    shim_wait("MPI_Allreduce", &req, MPI_STATUS_IGNORE);
    return MPI_SUCCESS;
}
