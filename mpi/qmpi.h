/*
 * qmpi.h — internals of the MPI binding (mpi.h): the process's MPI state,
 * handle tables, error raising and progress. Not installed.
 *
 * The binding is one per process, as MPI is: its state is the file-scope
 * `qmpi` below (the engine underneath keeps none). Every public function
 * starts with QMPI_ENTER, validates each argument before it touches
 * anything, and reports errors through qmpi_raise, which applies the
 * communicator's error handler.
 */
#ifndef QMPI_H
#define QMPI_H

#include <stddef.h>
#include <stdint.h>

#include <quay/quay.h>
#include <quay/quay_coll.h>

#include "mpi.h"
#include "quay_rt.h"

#if defined(__GNUC__) || defined(__clang__)
#define QMPI_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define QMPI_NORETURN __attribute__((noreturn))
/* The layers of one MPI call that every small message crosses: folded
 * into the call (each was a function's frame and argument copies). */
#define QMPI_INLINE inline __attribute__((always_inline))
#else
#define QMPI_PRINTF(a, b)
#define QMPI_NORETURN
#define QMPI_INLINE inline
#endif

/* ---- datatypes (dtype.c) ------------------------------------------------- */

/* What a datatype is for the reduction ops (MPI-3.1 §5.9.2 groups). */
enum qmpi_tclass {
    QMPI_TC_NONE = 0, /* no predefined op applies (MPI_CHAR, WCHAR, PACKED) */
    QMPI_TC_INT,      /* C integer: max/min, sum/prod, logical, bitwise */
    QMPI_TC_FLOAT,    /* floating point: max/min, sum/prod */
    QMPI_TC_COMPLEX,  /* complex: sum/prod */
    QMPI_TC_BOOL,     /* logical (C_BOOL): land/lor/lxor */
    QMPI_TC_BYTE,     /* MPI_BYTE: bitwise */
    QMPI_TC_PAIR,     /* {value, int}: minloc/maxloc */
};

typedef struct qmpi_type {
    const char *name; /* "MPI_INT" */
    uint32_t size;    /* bytes of one element */
    uint8_t tclass;   /* QMPI_TC_* */
    quay_dtype q;     /* the engine's element type with the same
                         arithmetic, 0 if none (long double, complex,
                         pairs, bytes) */
} qmpi_type;

/* The predefined type behind a handle, or NULL for a bad handle. */
const qmpi_type *qmpi_type_get(MPI_Datatype dt);

/* ---- reduction operations (op.c) ------------------------------------------- */

/* A reduction as the engine runs it: the engine's op, element type and
 * count, and the binding's context when the op is carried out here (a
 * user function, or a predefined op on a type the engine has no kernel
 * for). It lives as long as the collective: in the request slot, or on
 * the stack of a blocking call. */
typedef struct qmpi_reduction {
    quay_op op;
    quay_dtype qdt;
    size_t qcount;
    /* for op.kind == QUAY_OP_USER */
    MPI_User_function *user; /* the program's function, or NULL */
    void (*kernel)(const void *in, void *inout, size_t n); /* binding's */
    MPI_Datatype dt;
    uint32_t tsize; /* bytes per MPI element */
} qmpi_reduction;

/* Set *red for `count` elements of dt under op: MPI_SUCCESS, or
 * MPI_ERR_OP (bad handle, or the op is not defined on the type),
 * MPI_ERR_TYPE (bad type), MPI_ERR_COUNT (negative, or too many bytes).
 * red->op.ctx points at red itself: red must
 * not move while the collective runs. */
int qmpi_reduction_init(qmpi_reduction *red, MPI_Op op, MPI_Datatype dt, int count);
/* Free the program's ops (MPI_Finalize). */
void qmpi_ops_fini(void);

/* ---- communicators (comm.c) --------------------------------------------------- */

typedef struct qmpi_comm {
    quay_comm *q;       /* NULL: the slot is free */
    MPI_Errhandler eh;  /* MPI_ERRORS_* */
    int32_t rank, size;
    int freed;          /* MPI_Comm_free'd; the engine still holds it */
    int32_t link;       /* next slot on the free or the held list (comm.c) */
    uint32_t ctx_next;  /* context ids agreed for this one's dups: */
    uint32_t ctx_end;   /* [ctx_next, ctx_end) are still unused */
    uint32_t ctx_batch; /* how many the next agreement takes */
    char name[MPI_MAX_OBJECT_NAME];
} qmpi_comm;

/* The communicator behind a handle (not freed by the program), or NULL. */
qmpi_comm *qmpi_comm_get(MPI_Comm comm);
/* A communicator argument of MPI function `fn`: the communicator, or NULL
 * after raising MPI_ERR_COMM (a bad handle) or MPI_ERR_ARG (`out`, the
 * call's output argument named `out_name`, is NULL; out_name NULL: none
 * to check), the raise's result in *rc. */
qmpi_comm *qmpi_comm_arg(const char *fn, MPI_Comm comm, const void *out, const char *out_name,
                         int *rc);
/* The same, also while freed by the program but still held by pending
 * requests (for those requests). */
qmpi_comm *qmpi_comm_held(MPI_Comm comm);
/* The error handler errors on `comm` go to: its own, or MPI_COMM_WORLD's
 * for a bad handle. */
MPI_Errhandler qmpi_comm_errhandler(MPI_Comm comm);
/* Create COMM_WORLD and COMM_SELF (MPI_Init); free everything (Finalize). */
int qmpi_comms_init(void);
void qmpi_comms_fini(void);
/* Retry quay_comm_free of communicators freed while still busy. */
void qmpi_comms_reap(void);
/* 1 if some member of `c` has failed (wildcard operations cannot
 * complete reliably then). */
int qmpi_comm_has_failed(const qmpi_comm *c);

/* ---- requests (request.c) ------------------------------------------------------ */

enum qmpi_req_kind { QMPI_REQ_SEND = 1, QMPI_REQ_RECV, QMPI_REQ_COLL };

typedef struct qmpi_req {
    quay_req *q;   /* the engine's request (NULL while reserved) */
    MPI_Comm comm; /* for its error handler and failure checks */
    uint16_t gen;  /* bumped at release: stale handles are detected */
    uint8_t kind;  /* QMPI_REQ_*, 0: the slot is free */
    uint8_t wild;  /* an ANY_SOURCE receive; 2: the binding cancelled it
                      because a member of its communicator failed */
    uint8_t ucancel; /* MPI_Cancel was called on it */
    uint8_t orphan;  /* MPI_Request_free'd while running a reduction whose
                        context lives here: freed when it completes */
    uint8_t persist; /* a persistent request (MPI_Send_init ...): the engine
                        request lives until MPI_Request_free */
    uint8_t active;  /* persistent: started, completion not yet reported;
                        inactive ones count as MPI_REQUEST_NULL in the
                        completion calls */
    uint8_t sent;    /* a send the engine took whole at the call
                        (quay_send_inline): complete, no engine request */
    int32_t next_free;
    int32_t idx;        /* its own slot index (set once, kept) */
    qmpi_reduction red; /* a reduction's context (QMPI_REQ_COLL) */
} qmpi_req;

/* A new slot for engine request q (the slot then owns it), or a reserved
 * slot when q is NULL (a collective whose reduction context must live in
 * the slot before the engine call; attach the request with qmpi_req_set).
 * Returns MPI_SUCCESS and *h, *slot (slot may be NULL), or MPI_ERR_NO_MEM
 * (q is freed then). The slot's address is stable until released. */
int qmpi_req_new(quay_req *q, MPI_Comm comm, int kind, MPI_Request *h, qmpi_req **slot);
void qmpi_req_set(qmpi_req *r, quay_req *q);
/* The slot behind a live handle (inactive persistent ones included), or
 * NULL. */
qmpi_req *qmpi_req_get(MPI_Request h);
/* Free the engine request (if any) and the slot. */
void qmpi_req_release(qmpi_req *r);
void qmpi_reqs_fini(void);
/* 1 if the request is complete, or can never complete (a wildcard receive
 * on a communicator with a failed member, which is then cancelled). */
int qmpi_req_ready(qmpi_req *r);
/* Complete a ready request: fill *st (may be MPI_STATUS_IGNORE) and
 * return its error class (not raised). A persistent request becomes
 * inactive and keeps its handle; any other is released and *h becomes
 * MPI_REQUEST_NULL. */
int qmpi_req_finish(qmpi_req *r, MPI_Request *h, MPI_Status *st);

/* quay_status -> MPI_Status (st may be MPI_STATUS_IGNORE); returns the
 * error class the completion carries (MPI_SUCCESS for a cancelled one). */
int qmpi_status_set(MPI_Status *st, const quay_status *qs);
/* A blocking call's return for the error class its message carried
 * (qmpi_status_set's): MPI_SUCCESS, or the error raised on comm. */
int qmpi_status_raise(const char *fn, MPI_Comm comm, int cls);
/* The empty status of a null or inactive request. */
void qmpi_status_empty(MPI_Status *st);
/* quay error code -> MPI error class. */
int qmpi_class_of(int quay_rc);

/* ---- messages (p2p.c) ------------------------------------------------------------ */

/* MPI_Message handles: taken messages waiting for Mrecv / Imrecv. */
int qmpi_msg_new(quay_msg *m, MPI_Comm comm, MPI_Message *h);
quay_msg *qmpi_msg_take(MPI_Message h, MPI_Comm *comm);
void qmpi_msgs_fini(void);

/* ---- the process's state (init.c) ---------------------------------------------- */

enum { QMPI_BEFORE = 0, QMPI_RUNNING = 1, QMPI_FINALIZED = 2 };

typedef struct qmpi_state {
    int phase;          /* QMPI_BEFORE / RUNNING / FINALIZED */
    int thread_level;   /* provided */
    int send_copy;      /* QUAY_CFG_SEND_COPY: a small MPI_Isend goes at the call */
    uint32_t burst;     /* small MPI_Isends since the program last waited or
                           tested (p2p.c: send_at_call) */
    qrt *rt;
    quay_engine *e;
    int32_t rank, size; /* in MPI_COMM_WORLD */
    uint32_t next_ctx;  /* lowest context id this process has not used */
    double t0;          /* MPI_Wtime's origin */
    int async;          /* the runtime's progress thread runs: calls lock */
    uint32_t lock_depth; /* MPI calls inside MPI calls (the lock is not
                            recursive) */
} qmpi_state;

extern qmpi_state qmpi;

/* ---- errors (errors.c) ------------------------------------------------------------ */

/* Report error class `cls` in function `fn` on `comm` (MPI_COMM_NULL or a
 * bad handle: MPI_COMM_WORLD's handler): under ERRORS_ARE_FATAL /
 * ERRORS_ABORT print "quay mpi, rank R: fn: what (MPI_ERR_X)" and end the
 * job; under ERRORS_RETURN return cls. cls == MPI_SUCCESS returns at
 * once. */
int qmpi_raise(MPI_Comm comm, int cls, const char *fn, const char *fmt, ...) QMPI_PRINTF(4, 5);
/* End the job after a message (a call outside Init..Finalize, an engine
 * failure with no handler to report to). */
QMPI_NORETURN void qmpi_die(const char *fn, const char *fmt, ...) QMPI_PRINTF(2, 3);
/* MPI_Abort's exit. */
QMPI_NORETURN void qmpi_exit_job(int code);
/* "MPI_ERR_RANK" for a class. */
const char *qmpi_class_name(int cls);

/* With asynchronous progress (QUAY_ASYNC_PROGRESS=1) the runtime's
 * thread drives the engine between MPI calls, and every MPI call holds
 * the runtime's lock from QMPI_ENTER to its return: the scope of a guard
 * that unlocks on every return path. One lock per call, not one around
 * each engine call: the binding's own state (request slots holding
 * reduction contexts the engine calls back into) is then covered too,
 * and no path can forget it. Off, the cost is one test of qmpi.async at
 * entry and one of g->held at return. */
typedef struct qmpi_guard {
    int held;
} qmpi_guard;

static inline qmpi_guard qmpi_guard_enter(void)
{
    qmpi_guard g = {0};
    if (qmpi.async) {
        g.held = 1;
        if (qmpi.lock_depth++ == 0)
            qrt_lock(qmpi.rt);
    }
    return g;
}

static inline void qmpi_guard_leave(qmpi_guard *g)
{
    if (g->held) {
        g->held = 0;
        if (--qmpi.lock_depth == 0)
            qrt_unlock(qmpi.rt);
    }
}

#if defined(__GNUC__) || defined(__clang__)
#define QMPI_HAVE_GUARD 1
#define QMPI_GUARD __attribute__((cleanup(qmpi_guard_leave), unused))
#else
#define QMPI_HAVE_GUARD 0 /* no scoped lock: asynchronous progress stays off */
#define QMPI_GUARD
#endif

/* Every public function except the few allowed before Init / after
 * Finalize starts with this; with asynchronous progress the call holds
 * the runtime's lock until it returns (qmpi_guard_ is the guard). */
#define QMPI_ENTER(fn)                                                                      \
    do {                                                                                    \
        if (qmpi.phase != QMPI_RUNNING)                                                     \
            qmpi_die(fn, qmpi.phase == QMPI_BEFORE ? "called before MPI_Init"               \
                                                   : "called after MPI_Finalize");          \
    } while (0);                                                                            \
    QMPI_GUARD qmpi_guard qmpi_guard_ = qmpi_guard_enter()

/* ---- progress (progress.c) ---------------------------------------------------------- */

/* One step of progress without blocking; an engine failure ends the job. */
void qmpi_poll(void);
/* Execute what the engine has to send now (qrt_flush); no arrivals. */
void qmpi_flush(void);
/* Progress until ready(ctx). */
void qmpi_wait_until(const char *fn, int (*ready)(void *ctx), void *ctx);

/* Retry bookkeeping for a quay call that answered QUAY_EAGAIN (a bounded
 * pool is full): progress is made and the call repeated; after
 * QMPI_EAGAIN_LIMIT_S seconds of it the resource is one the program
 * itself holds (more requests outstanding than the pool). */
typedef struct qmpi_retry {
    uint32_t idle;
    double since;
} qmpi_retry;
#define QMPI_RETRY_INIT {0, 0.0}
#define QMPI_EAGAIN_LIMIT_S 30.0
/* 1: retry the call; 0: rc is its answer (QUAY_EAGAIN after the limit). */
int qmpi_again(qmpi_retry *r, int rc);

/* Seconds since an arbitrary origin (CLOCK_MONOTONIC). */
double qmpi_now(void);

/* ---- shared helpers ----------------------------------------------------------------- */

/* Validate a buffer of `count` elements of dt: MPI_SUCCESS and *bytes, or
 * MPI_ERR_COUNT / MPI_ERR_TYPE / MPI_ERR_BUFFER (NULL with count > 0). */
int qmpi_check_buf(const void *buf, int count, MPI_Datatype dt, size_t *bytes);

/* Complete the request behind *h in the MPI way (blocking), as MPI_Wait
 * does; used by the blocking calls built on their I-forms. */
int qmpi_wait_one(const char *fn, MPI_Request *h, MPI_Status *st);
/* Wait for an engine request that has no handle (a blocking call's),
 * fill *st, free it, raise its error on comm. wild: an ANY_SOURCE
 * receive. */
int qmpi_wait_q(const char *fn, quay_req *q, MPI_Comm comm, int wild, MPI_Status *st);

#endif /* QMPI_H */
