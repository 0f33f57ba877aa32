/*
 * init.c — the MPI environment: Init / Init_thread / Finalize, their
 * queries, Abort, versions, the processor name and the clock.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <quay/quay_version.h>

#include "qmpi.h"

qmpi_state qmpi = {.phase = QMPI_BEFORE, .rank = -1};

static pthread_t main_thread;

/* Pools sized for MPI programs, which may keep thousands of requests
 * outstanding and create many communicators; the rest is the engine's
 * default (and the runtime's QUAY_* knobs). */
static void binding_config(quay_config *cfg)
{
    quay_config_default(cfg);
    cfg->max_requests = 16384;
    cfg->max_unexpected = 16384;
    cfg->max_comms = 1024;
    cfg->frag_size = 0; /* the runtime picks it for its transport */
    /* MPI_Isend of a small standard message is over at the call (MPI lets
     * a standard send complete once buffered): no request to progress,
     * and a burst may leave as one packet. */
    cfg->flags |= QUAY_CFG_SEND_COPY;
}

static int init_common(const char *fn, int required, int *provided)
{
    quay_config cfg;
    if (qmpi.phase != QMPI_BEFORE)
        qmpi_die(fn, qmpi.phase == QMPI_RUNNING ? "MPI is already initialized"
                                                : "called after MPI_Finalize");
    binding_config(&cfg);
    int rc = qrt_init(&cfg, &qmpi.rt);
    if (rc == QUAY_EPEER)
        qmpi_die(fn, "could not start: a rank ended during start-up (%s)", quay_strerror(rc));
    if (rc != 0)
        qmpi_die(fn, "could not start: %s (is the program started by quayrun or mpiexec?)",
                 quay_strerror(rc));
    qmpi.e = qrt_engine(qmpi.rt);
    qmpi.send_copy = (qrt_config_flags(qmpi.rt) & QUAY_CFG_SEND_COPY) != 0;
    qmpi.rank = qrt_rank(qmpi.rt);
    qmpi.size = qrt_size(qmpi.rt);
    qmpi.t0 = qmpi_now();
    rc = qmpi_comms_init();
    if (rc != 0)
        qmpi_die(fn, "could not create MPI_COMM_SELF: %s", quay_strerror(rc));
    /* One thread drives the engine: FUNNELED is the most we can promise. */
    qmpi.thread_level = required < MPI_THREAD_FUNNELED ? required : MPI_THREAD_FUNNELED;
    if (qmpi.thread_level < MPI_THREAD_SINGLE)
        qmpi.thread_level = MPI_THREAD_SINGLE;
    if (provided != NULL)
        *provided = qmpi.thread_level;
    main_thread = pthread_self();
    /* QUAY_ASYNC_PROGRESS=1: the runtime's thread progresses between
     * calls; from here on every call locks (QMPI_ENTER). The level
     * provided stays: only this thread may call MPI. */
    if (QMPI_HAVE_GUARD && qrt_async_requested(qmpi.rt)) {
        rc = qrt_async_start(qmpi.rt);
        if (rc != 0)
            qmpi_die(fn, "could not start asynchronous progress: %s", quay_strerror(rc));
        qmpi.async = 1;
    }
    qmpi.phase = QMPI_RUNNING;
    return MPI_SUCCESS;
}

int MPI_Init(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return init_common(__func__, MPI_THREAD_SINGLE, NULL);
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    (void)argc;
    (void)argv;
    if (provided == NULL)
        qmpi_die(__func__, "provided is NULL");
    if (required < MPI_THREAD_SINGLE || required > MPI_THREAD_MULTIPLE)
        qmpi_die(__func__, "invalid thread level %d", required);
    return init_common(__func__, required, provided);
}

int MPI_Finalize(void)
{
    QMPI_ENTER(__func__);
    /* Communicators freed while busy go now if they can; the engine
     * frees the rest with itself. */
    qmpi_comms_reap();
    /* The progress thread ends first, outside the lock; then one thread
     * drives the runtime to its end. */
    qmpi_guard_leave(&qmpi_guard_);
    if (qmpi.async) {
        qrt_async_stop(qmpi.rt);
        qmpi.async = 0;
    }
    int rc = qrt_finalize(qmpi.rt);
    qmpi.rt = NULL;
    qmpi.e = NULL;
    qmpi_comms_fini();
    qmpi_reqs_fini();
    qmpi_msgs_fini();
    qmpi_ops_fini();
    qmpi.phase = QMPI_FINALIZED;
    if (rc != 0) {
        fprintf(stderr, "quay mpi, rank %d: MPI_Finalize: %s\n", (int)qmpi.rank,
                quay_strerror(rc));
        return MPI_ERR_INTERN;
    }
    return MPI_SUCCESS;
}

int MPI_Initialized(int *flag)
{
    if (flag == NULL)
        return MPI_ERR_ARG;
    *flag = qmpi.phase != QMPI_BEFORE;
    return MPI_SUCCESS;
}

int MPI_Finalized(int *flag)
{
    if (flag == NULL)
        return MPI_ERR_ARG;
    *flag = qmpi.phase == QMPI_FINALIZED;
    return MPI_SUCCESS;
}

int MPI_Abort(MPI_Comm comm, int errorcode)
{
    fflush(stdout);
    fprintf(stderr, "quay mpi, rank %d: MPI_Abort(comm 0x%x, %d) called: ending the job\n",
            (int)qmpi.rank, (unsigned)comm, errorcode);
    /* The exit status is the errorcode (mod 256); 0 would read as success
     * and leave the other ranks running, so it becomes 1. */
    int code = errorcode & 0xff;
    qmpi_exit_job(code != 0 ? code : 1);
}

int MPI_Query_thread(int *provided)
{
    QMPI_ENTER(__func__);
    if (provided == NULL)
        return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, __func__, "provided is NULL");
    *provided = qmpi.thread_level;
    return MPI_SUCCESS;
}

int MPI_Is_thread_main(int *flag)
{
    QMPI_ENTER(__func__);
    if (flag == NULL)
        return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, __func__, "flag is NULL");
    *flag = pthread_equal(pthread_self(), main_thread) != 0;
    return MPI_SUCCESS;
}

int MPI_Get_version(int *version, int *subversion)
{
    if (version == NULL || subversion == NULL)
        return MPI_ERR_ARG;
    *version = MPI_VERSION;
    *subversion = MPI_SUBVERSION;
    return MPI_SUCCESS;
}

int MPI_Get_library_version(char *version, int *resultlen)
{
    if (version == NULL || resultlen == NULL)
        return MPI_ERR_ARG;
    int n = snprintf(version, MPI_MAX_LIBRARY_VERSION_STRING,
                     "quay MPI binding (MPI %d.%d subset), quay %s", MPI_VERSION, MPI_SUBVERSION,
                     QUAY_VERSION);
    *resultlen = n < MPI_MAX_LIBRARY_VERSION_STRING ? n : MPI_MAX_LIBRARY_VERSION_STRING - 1;
    return MPI_SUCCESS;
}

int MPI_Get_processor_name(char *name, int *resultlen)
{
    QMPI_ENTER(__func__);
    if (name == NULL || resultlen == NULL)
        return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, __func__, "name or resultlen is NULL");
    if (gethostname(name, MPI_MAX_PROCESSOR_NAME) != 0)
        strcpy(name, "localhost");
    name[MPI_MAX_PROCESSOR_NAME - 1] = '\0';
    *resultlen = (int)strlen(name);
    return MPI_SUCCESS;
}

double MPI_Wtime(void)
{
    return qmpi_now() - qmpi.t0;
}

double MPI_Wtick(void)
{
    struct timespec ts;
    if (clock_getres(CLOCK_MONOTONIC, &ts) != 0 || (ts.tv_sec == 0 && ts.tv_nsec == 0))
        return 1e-9;
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
