/*
 * errors.c — error classes, their strings, the error handlers, and the
 * ways a job ends (MPI_Abort, a fatal error).
 *
 * An error code here is always its class (no extra codes are created),
 * so MPI_Error_class is the identity on valid codes.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "qmpi.h"

typedef struct class_info {
    int cls;
    const char *name;
    const char *text;
} class_info;

static const class_info classes[] = {
    {MPI_SUCCESS, "MPI_SUCCESS", "no error"},
    {MPI_ERR_BUFFER, "MPI_ERR_BUFFER", "invalid buffer pointer"},
    {MPI_ERR_COUNT, "MPI_ERR_COUNT", "invalid count argument"},
    {MPI_ERR_TYPE, "MPI_ERR_TYPE", "invalid datatype"},
    {MPI_ERR_TAG, "MPI_ERR_TAG", "invalid tag"},
    {MPI_ERR_COMM, "MPI_ERR_COMM", "invalid communicator"},
    {MPI_ERR_RANK, "MPI_ERR_RANK", "invalid rank"},
    {MPI_ERR_ROOT, "MPI_ERR_ROOT", "invalid root"},
    {MPI_ERR_GROUP, "MPI_ERR_GROUP", "invalid group"},
    {MPI_ERR_OP, "MPI_ERR_OP", "invalid reduce operation"},
    {MPI_ERR_TOPOLOGY, "MPI_ERR_TOPOLOGY", "invalid topology"},
    {MPI_ERR_DIMS, "MPI_ERR_DIMS", "invalid dimension argument"},
    {MPI_ERR_ARG, "MPI_ERR_ARG", "invalid argument of some other kind"},
    {MPI_ERR_UNKNOWN, "MPI_ERR_UNKNOWN", "unknown error"},
    {MPI_ERR_TRUNCATE, "MPI_ERR_TRUNCATE", "message truncated on receive"},
    {MPI_ERR_OTHER, "MPI_ERR_OTHER", "known error not in this list"},
    {MPI_ERR_INTERN, "MPI_ERR_INTERN", "internal MPI (implementation) error"},
    {MPI_ERR_IN_STATUS, "MPI_ERR_IN_STATUS", "error code is in status"},
    {MPI_ERR_PENDING, "MPI_ERR_PENDING", "pending request"},
    {MPI_ERR_REQUEST, "MPI_ERR_REQUEST", "invalid request (handle)"},
    {MPI_ERR_ACCESS, "MPI_ERR_ACCESS", "permission denied"},
    {MPI_ERR_AMODE, "MPI_ERR_AMODE", "error related to the amode passed to MPI_FILE_OPEN"},
    {MPI_ERR_BAD_FILE, "MPI_ERR_BAD_FILE", "invalid file name"},
    {MPI_ERR_CONVERSION, "MPI_ERR_CONVERSION", "an error in a user data conversion function"},
    {MPI_ERR_DUP_DATAREP, "MPI_ERR_DUP_DATAREP", "data representation already defined"},
    {MPI_ERR_FILE_EXISTS, "MPI_ERR_FILE_EXISTS", "file exists"},
    {MPI_ERR_FILE_IN_USE, "MPI_ERR_FILE_IN_USE", "file in use by some process"},
    {MPI_ERR_FILE, "MPI_ERR_FILE", "invalid file handle"},
    {MPI_ERR_INFO, "MPI_ERR_INFO", "invalid info argument"},
    {MPI_ERR_INFO_KEY, "MPI_ERR_INFO_KEY", "key longer than MPI_MAX_INFO_KEY"},
    {MPI_ERR_INFO_VALUE, "MPI_ERR_INFO_VALUE", "value longer than MPI_MAX_INFO_VAL"},
    {MPI_ERR_INFO_NOKEY, "MPI_ERR_INFO_NOKEY", "key not defined in the info object"},
    {MPI_ERR_IO, "MPI_ERR_IO", "other I/O error"},
    {MPI_ERR_NAME, "MPI_ERR_NAME", "invalid service name"},
    {MPI_ERR_NO_MEM, "MPI_ERR_NO_MEM", "out of memory"},
    {MPI_ERR_NOT_SAME, "MPI_ERR_NOT_SAME", "collective argument not identical on all processes"},
    {MPI_ERR_NO_SPACE, "MPI_ERR_NO_SPACE", "not enough space"},
    {MPI_ERR_NO_SUCH_FILE, "MPI_ERR_NO_SUCH_FILE", "file does not exist"},
    {MPI_ERR_PORT, "MPI_ERR_PORT", "invalid port name"},
    {MPI_ERR_QUOTA, "MPI_ERR_QUOTA", "quota exceeded"},
    {MPI_ERR_READ_ONLY, "MPI_ERR_READ_ONLY", "read-only file or file system"},
    {MPI_ERR_SERVICE, "MPI_ERR_SERVICE", "invalid service name"},
    {MPI_ERR_SPAWN, "MPI_ERR_SPAWN", "error in spawning processes"},
    {MPI_ERR_UNSUPPORTED_DATAREP, "MPI_ERR_UNSUPPORTED_DATAREP", "unsupported data representation"},
    {MPI_ERR_UNSUPPORTED_OPERATION, "MPI_ERR_UNSUPPORTED_OPERATION", "unsupported operation"},
    {MPI_ERR_WIN, "MPI_ERR_WIN", "invalid window"},
    {MPI_ERR_BASE, "MPI_ERR_BASE", "invalid base"},
    {MPI_ERR_LOCKTYPE, "MPI_ERR_LOCKTYPE", "invalid lock type"},
    {MPI_ERR_KEYVAL, "MPI_ERR_KEYVAL", "invalid keyval"},
    {MPI_ERR_RMA_CONFLICT, "MPI_ERR_RMA_CONFLICT", "conflicting accesses to window"},
    {MPI_ERR_RMA_SYNC, "MPI_ERR_RMA_SYNC", "wrong synchronization of RMA calls"},
    {MPI_ERR_SIZE, "MPI_ERR_SIZE", "invalid size"},
    {MPI_ERR_DISP, "MPI_ERR_DISP", "invalid displacement"},
    {MPI_ERR_ASSERT, "MPI_ERR_ASSERT", "invalid assert"},
    {MPI_ERR_RMA_RANGE, "MPI_ERR_RMA_RANGE", "target memory is not part of the window"},
    {MPI_ERR_RMA_ATTACH, "MPI_ERR_RMA_ATTACH", "memory cannot be attached"},
    {MPI_ERR_RMA_SHARED, "MPI_ERR_RMA_SHARED", "memory cannot be shared"},
    {MPI_ERR_RMA_FLAVOR, "MPI_ERR_RMA_FLAVOR", "wrong window flavor"},
    {MPI_ERR_PROC_FAILED, "MPI_ERR_PROC_FAILED", "a process the operation depends on has failed"},
};

static const class_info *class_find(int cls)
{
    for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++)
        if (classes[i].cls == cls)
            return &classes[i];
    return NULL;
}

const char *qmpi_class_name(int cls)
{
    const class_info *c = class_find(cls);
    return c != NULL ? c->name : "MPI_ERR_UNKNOWN";
}

int qmpi_class_of(int rc)
{
    switch (rc) {
    case QUAY_OK:
    case QUAY_ECANCELLED:
        return MPI_SUCCESS;
    case QUAY_EINVAL:
        return MPI_ERR_ARG;
    case QUAY_ERANK:
        return MPI_ERR_RANK;
    case QUAY_ETAG:
        return MPI_ERR_TAG;
    case QUAY_ECOMM:
        return MPI_ERR_COMM;
    case QUAY_ETRUNCATE:
        return MPI_ERR_TRUNCATE;
    case QUAY_EPEER:
        return MPI_ERR_PROC_FAILED;
    case QUAY_ENOBUFS:
        return MPI_ERR_BUFFER; /* a buffered send found no room */
    case QUAY_EAGAIN:
    case QUAY_ENOMEM:
        return MPI_ERR_NO_MEM;
    case QUAY_ENOTPOSTED: /* a ready send met no posted receive */
        return MPI_ERR_OTHER;
    default:
        return MPI_ERR_INTERN;
    }
}

QMPI_NORETURN void qmpi_exit_job(int code)
{
    /* No finalize: the process manager (Hydra, through PMI abort) or
     * quayrun (seeing the exit status) ends the other ranks. */
    qrt_abort(qmpi.rt, code, "MPI job aborted");
}

static void vreport(const char *fn, const char *fmt, va_list ap, const char *cls)
{
    char msg[512], who[32] = "quay mpi";
    vsnprintf(msg, sizeof msg, fmt, ap);
    fflush(stdout);
    if (qmpi.rank >= 0) /* (not yet known when MPI_Init fails) */
        snprintf(who, sizeof who, "quay mpi, rank %d", (int)qmpi.rank);
    if (cls != NULL)
        fprintf(stderr, "%s: %s: %s (%s)\n", who, fn, msg, cls);
    else
        fprintf(stderr, "%s: %s: %s\n", who, fn, msg);
    fflush(stderr);
}

QMPI_NORETURN void qmpi_die(const char *fn, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(fn, fmt, ap, NULL);
    va_end(ap);
    qmpi_exit_job(1);
}

int qmpi_raise(MPI_Comm comm, int cls, const char *fn, const char *fmt, ...)
{
    va_list ap;
    if (cls == MPI_SUCCESS)
        return MPI_SUCCESS;
    if (qmpi_comm_errhandler(comm) == MPI_ERRORS_RETURN)
        return cls;
    va_start(ap, fmt);
    vreport(fn, fmt, ap, qmpi_class_name(cls));
    va_end(ap);
    /* MPI_ERRORS_ARE_FATAL and MPI_ERRORS_ABORT: the job ends, with a
     * non-zero status the launcher passes on. */
    if (cls == MPI_ERR_PROC_FAILED) {
        /* A consequence of another rank's end: let the launcher see that
         * one first (quayrun reports the first failure it reaps, and ends
         * the rest after its grace period), so the job's status is the
         * cause (e.g. MPI_Abort's code), not this. */
        struct timespec ts = {0, 500 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    qmpi_exit_job(cls > 0 && cls < 128 ? cls : 1);
}

int MPI_Error_class(int errorcode, int *errorclass)
{
    /* Allowed before MPI_Init and after MPI_Finalize (MPI-3.1 §8.7). */
    if (errorclass == NULL)
        return qmpi.phase == QMPI_RUNNING
                   ? qmpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, __func__, "errorclass is NULL")
                   : MPI_ERR_ARG;
    if (class_find(errorcode) == NULL)
        return qmpi.phase == QMPI_RUNNING
                   ? qmpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, __func__,
                                "%d is not an error code", errorcode)
                   : MPI_ERR_ARG;
    *errorclass = errorcode;
    return MPI_SUCCESS;
}

int MPI_Error_string(int errorcode, char *string, int *resultlen)
{
    const class_info *c = class_find(errorcode);
    int n;
    if (string == NULL || resultlen == NULL)
        return qmpi.phase == QMPI_RUNNING
                   ? qmpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, __func__,
                                "string or resultlen is NULL")
                   : MPI_ERR_ARG;
    if (c == NULL)
        n = snprintf(string, MPI_MAX_ERROR_STRING, "unknown error code %d", errorcode);
    else
        n = snprintf(string, MPI_MAX_ERROR_STRING, "%s: %s", c->name, c->text);
    *resultlen = n < MPI_MAX_ERROR_STRING ? n : MPI_MAX_ERROR_STRING - 1;
    return c != NULL ? MPI_SUCCESS : MPI_ERR_ARG;
}

static int valid_errhandler(MPI_Errhandler eh)
{
    return eh == MPI_ERRORS_ARE_FATAL || eh == MPI_ERRORS_RETURN || eh == MPI_ERRORS_ABORT;
}

int MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler)
{
    QMPI_ENTER(__func__);
    int rc;
    qmpi_comm *c = qmpi_comm_arg(__func__, comm, NULL, NULL, &rc);
    if (c == NULL)
        return rc;
    if (!valid_errhandler(errhandler))
        return qmpi_raise(comm, MPI_ERR_ARG, __func__, "invalid error handler");
    c->eh = errhandler;
    return MPI_SUCCESS;
}

int MPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler *errhandler)
{
    QMPI_ENTER(__func__);
    int rc;
    qmpi_comm *c = qmpi_comm_arg(__func__, comm, errhandler, "errhandler", &rc);
    if (c == NULL)
        return rc;
    *errhandler = c->eh;
    return MPI_SUCCESS;
}

int MPI_Errhandler_free(MPI_Errhandler *errhandler)
{
    QMPI_ENTER(__func__);
    if (errhandler == NULL || !valid_errhandler(*errhandler))
        return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, __func__, "invalid error handler");
    /* The predefined handlers are never deallocated; the handle goes. */
    *errhandler = MPI_ERRHANDLER_NULL;
    return MPI_SUCCESS;
}
