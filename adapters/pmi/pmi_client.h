/*
 * pmi_client.h — a PMI-1 client (the "simple" wire protocol that MPICH's
 * Hydra mpiexec serves), standalone: POSIX sockets, no MPICH code.
 *
 * A process started by a PMI-1 process manager learns its rank and the
 * world size, publishes small strings (its address, a business card) in
 * the job's key-value space, waits for everyone at a barrier, then reads
 * the others' strings:
 *
 *     qpmi *pmi;
 *     if (qpmi_init(&pmi) != QPMI_OK) return 1;
 *     int me = qpmi_rank(pmi), n = qpmi_size(pmi);
 *     qpmi_put_rank(pmi, "addr", "10.0.0.2:41234");   key "addr-<me>"
 *     qpmi_barrier(pmi);                             puts now visible
 *     char addr[256];
 *     for (int r = 0; r < n; r++)
 *         qpmi_get_rank(pmi, "addr", r, addr, sizeof addr, NULL);
 *     qpmi_finalize(pmi);
 *
 * Environment (read by qpmi_init, as MPICH's client reads it):
 *   PMI_FD        an inherited, connected stream socket to the process
 *                 manager (Hydra's default); with it PMI_RANK and PMI_SIZE
 *                 (absent: rank 0 of 1, as MPICH does)
 *   PMI_PORT      host:port of the process manager to connect to, if
 *                 PMI_FD is not set (mpiexec -pmi-port); with it PMI_ID,
 *                 which is sent in an "initack" handshake whose answer
 *                 gives rank and size (without PMI_ID, PMI_RANK/PMI_SIZE)
 *   neither       a singleton: rank 0 of 1, with a private in-memory
 *                 key-value space, so the same program runs without mpiexec
 *   QPMI_TIMEOUT_MS  optional: the initial value of qpmi_set_timeout
 *   QPMI_DEBUG    optional: nonzero traces every line sent and received
 *                 to stderr (otherwise the library never prints)
 *
 * Keys and values: the wire protocol is "cmd=x key=value key=value\n", with
 * no quoting, so keys are 1 or more printable ASCII characters other than
 * space, '=' and '\', and values are 1 or more bytes other than controls
 * (0x00-0x1f, 0x7f), space and '\'. ("10.0.0.2:41234" and
 * "tcp=10.0.0.2:41234;shm=/quay-1234" are fine.) Lengths are bounded by
 * the process manager's maxes (get_maxes; Hydra: 64 for keys, 1024 for
 * values, counting a terminating NUL, as MPICH counts them):
 * qpmi_key_max / qpmi_val_max give the longest string accepted. Keys
 * starting with "PMI_" belong to the process manager: qpmi_get may read
 * them (e.g. "PMI_process_mapping"); do not put them (Hydra 4.1+ refuses
 * with QPMI_ESERVER, Hydra 4.0 accepts).
 *
 * Errors: every call returns QPMI_OK (0) or a negative QPMI_E* code; none
 * aborts, exits or prints. Responses are checked line by line (cmd=, rc=,
 * every field's syntax and length); a malformed answer, a socket error, a
 * closed connection or a timeout leaves the connection unusable, and later
 * calls that need the server return QPMI_EDEAD. A refused request (rc != 0)
 * or a missing key leaves it usable. qpmi_errmsg says more about the last
 * error. Blocking calls retry on EINTR; writes never raise SIGPIPE on a
 * socket.
 *
 * Not thread-safe: one handle per process, used by one thread at a time.
 */
#ifndef QUAY_PMI_CLIENT_H
#define QUAY_PMI_CLIENT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct qpmi qpmi;

enum {
    QPMI_OK = 0,
    QPMI_EINVAL = -1,    /* bad argument, or bad PMI_* environment */
    QPMI_ENOMEM = -2,    /* out of memory */
    QPMI_EIO = -3,       /* socket error, or the server closed the connection */
    QPMI_EPROTO = -4,    /* malformed or unexpected answer from the server */
    QPMI_ESERVER = -5,   /* the server refused the request (rc != 0) */
    QPMI_ENOTFOUND = -6, /* qpmi_get: no such key (yet) */
    QPMI_ERANGE = -7,    /* qpmi_get: value longer than the caller's buffer */
    QPMI_ETIMEDOUT = -8, /* no answer within the timeout (qpmi_set_timeout) */
    QPMI_EDEAD = -9      /* the connection failed earlier; handle unusable */
};

/**
 * Connect to the process manager named by the environment (see above) and
 * do the start-up exchange: [initack,] init (PMI 1.1), get_maxes,
 * get_appnum, get_my_kvsname. On QPMI_OK *out is a new handle; on error
 * *out is NULL, nothing is left open except an inherited PMI_FD, and
 * QPMI_EINVAL means the environment was malformed (PMI_FD not an open
 * descriptor, PMI_RANK outside [0, PMI_SIZE), ...).
 */
int qpmi_init(qpmi **out);

/** Details of the last qpmi_init failure ("" if none); a static buffer,
 *  overwritten by the next qpmi_init. */
const char *qpmi_init_errmsg(void);

/** This process's rank in [0, size). */
int qpmi_rank(const qpmi *p);
/** Number of processes in the job (the PMI "size"). */
int qpmi_size(const qpmi *p);
/** The application number (MPMD: which "-n N prog" block); -1 singleton. */
int qpmi_appnum(const qpmi *p);
/** The name of the job's key-value space (owned by the handle). */
const char *qpmi_kvsname(const qpmi *p);
/** 1 when started without a process manager (rank 0 of 1), else 0. */
int qpmi_is_singleton(const qpmi *p);
/** Longest key / value (in bytes, without the NUL) that put accepts. */
size_t qpmi_key_max(const qpmi *p);
size_t qpmi_val_max(const qpmi *p);
/** The socket to the process manager, or -1 for a singleton. */
int qpmi_fd(const qpmi *p);

/**
 * Timeout in milliseconds for each wait on the server (a negative value:
 * wait forever, the default unless QPMI_TIMEOUT_MS is set). A barrier
 * waits for the slowest process, so keep it generous.
 */
void qpmi_set_timeout(qpmi *p, int ms);

/**
 * Publish key=value in the job's key-value space. Hydra makes a put
 * visible to other processes (and to this one) only after the next
 * qpmi_barrier completes; do not count on seeing it earlier. Put each key
 * once: process managers disagree on a second put of a key (Hydra 4.0
 * keeps the first value, later Hydra and the singleton space the last).
 * QPMI_EINVAL: key or value empty, too long, or holding a character the
 * wire cannot carry (nothing is sent).
 */
int qpmi_put(qpmi *p, const char *key, const char *value);

/** qpmi_put of key "<name>-<this rank>". */
int qpmi_put_rank(qpmi *p, const char *name, const char *value);

/**
 * PMI_KVS_Commit: nothing to send on the PMI-1 wire (MPICH's client does
 * nothing either; Hydra flushes puts at the barrier). Kept so that callers
 * can be written against PMI-2 style put / commit / barrier.
 */
int qpmi_commit(qpmi *p);

/** Wait until every process of the job has entered the barrier. */
int qpmi_barrier(qpmi *p);

/**
 * Read key's value into buf (NUL-terminated). If len is not NULL it gets
 * the value's length (also on QPMI_ERANGE, where nothing is copied).
 * QPMI_ENOTFOUND: the server has no such key (the connection stays
 * usable).
 */
int qpmi_get(qpmi *p, const char *key, char *buf, size_t bufsize, size_t *len);

/** qpmi_get of key "<name>-<rank>". */
int qpmi_get_rank(qpmi *p, const char *name, int rank, char *buf,
                  size_t bufsize, size_t *len);

/**
 * Ask the process manager to abort the whole job with exit code `code`.
 * msg (may be NULL) is sent along, with characters the wire cannot carry
 * replaced by '_'. No answer is awaited: Hydra kills every process,
 * possibly this one before the call returns. It does not exit: a caller
 * that gets control back should _exit(code) itself. A singleton has no
 * process manager: QPMI_OK, nothing sent. The handle stays allocated;
 * qpmi_finalize may still free it.
 */
int qpmi_abort(qpmi *p, int code, const char *msg);

/**
 * Tell the process manager that this process is done (finalize, awaiting
 * finalize_ack), close the connection and free the handle, even when the
 * exchange fails (then its error is returned). NULL is a no-op.
 */
int qpmi_finalize(qpmi *p);

/** A static English name for a QPMI_* code. */
const char *qpmi_strerror(int rc);

/** Details of the last error on this handle ("" if none). */
const char *qpmi_errmsg(const qpmi *p);

#ifdef __cplusplus
}
#endif

#endif /* QUAY_PMI_CLIENT_H */
