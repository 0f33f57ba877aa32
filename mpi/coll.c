/*
 * coll.c — the collectives: Barrier, Bcast, Reduce, Allreduce, their
 * non-blocking forms, and Reduce_local.
 *
 * Each I-form validates every argument, then reserves a request slot,
 * builds the reduction inside it (the engine's op points at it for as long
 * as the collective runs), posts the engine's collective and attaches it
 * to the slot. The blocking forms are the I-form's body (so that errors
 * name the blocking call), given COLL_BLOCKING for the request: the
 * collective then runs to its end with its reduction context on the
 * stack, no request slot or handle in between.
 */
#include <stddef.h>
#include <stdint.h>

#include "qmpi.h"

enum coll_kind { COLL_BARRIER, COLL_BCAST, COLL_REDUCE, COLL_ALLREDUCE };

/* A validated collective call, as the engine takes it. */
typedef struct coll_call {
    enum coll_kind kind;
    const void *sbuf; /* reductions: MPI_IN_PLACE already QUAY_IN_PLACE */
    void *buf;        /* bcast: the buffer; reductions: the receive buffer */
    size_t len;       /* bcast: bytes */
    int count;        /* reductions: MPI elements */
    MPI_Datatype dt;
    MPI_Op op;
    int32_t root;
} coll_call;

/* The engine's call for a (reduction already built in red). */
static int engine_post(qmpi_comm *c, const coll_call *a, const qmpi_reduction *red,
                       quay_req **q)
{
    switch (a->kind) {
    case COLL_BARRIER: return quay_ibarrier(qmpi.e, c->q, q);
    case COLL_BCAST: return quay_ibcast(qmpi.e, c->q, a->buf, a->len, a->root, q);
    case COLL_REDUCE:
        return quay_ireduce(qmpi.e, c->q, a->sbuf, a->buf, red->qcount, red->qdt, &red->op,
                            a->root, q);
    case COLL_ALLREDUCE:
        return quay_iallreduce(qmpi.e, c->q, a->sbuf, a->buf, red->qcount, red->qdt, &red->op,
                               q);
    }
    return QUAY_EINVAL;
}

/* The `request` of a blocking form's call to its I-form body: run the
 * collective to its end instead of handing out a request. */
static MPI_Request coll_blocking_tag;
#define COLL_BLOCKING (&coll_blocking_tag)

/* Build a's reduction (if any) in red, which must stay put while the
 * collective runs, and post a: MPI_SUCCESS and *q, or the raise's answer. */
static int coll_post(const char *fn, MPI_Comm comm, qmpi_comm *c, const coll_call *a,
                     qmpi_reduction *red, quay_req **q)
{
    int rc;
    if (a->kind == COLL_REDUCE || a->kind == COLL_ALLREDUCE) {
        /* (validated by the caller on a local copy: cannot fail here) */
        rc = qmpi_reduction_init(red, a->op, a->dt, a->count);
        if (rc != MPI_SUCCESS)
            return qmpi_raise(comm, rc, fn, "invalid reduction");
    }
    qmpi_retry rt = QMPI_RETRY_INIT;
    while ((rc = engine_post(c, a, red, q)) == QUAY_EAGAIN && qmpi_again(&rt, rc))
        ;
    if (rc != QUAY_OK)
        return qmpi_raise(comm, qmpi_class_of(rc), fn, "%s", quay_strerror(rc));
    /* Its first messages leave now: a step the engine took by copy is
     * done at once, and a call that finds its request complete would
     * otherwise return with them still queued. */
    qmpi_flush();
    return MPI_SUCCESS;
}

/* Start validated call a and hand its request to the program, or, for
 * COLL_BLOCKING, run it to its end with its reduction context in this
 * frame (which outlives the collective): no request slot, no handle. */
static int coll_start(const char *fn, MPI_Comm comm, qmpi_comm *c, const coll_call *a,
                      MPI_Request *request)
{
    quay_req *q = NULL;
    int rc;
    if (request == COLL_BLOCKING) {
        qmpi_reduction red;
        if ((rc = coll_post(fn, comm, c, a, &red, &q)) != MPI_SUCCESS)
            return rc;
        return qmpi_wait_q(fn, q, comm, 0, MPI_STATUS_IGNORE);
    }
    qmpi_req *slot = NULL;
    rc = qmpi_req_new(NULL, comm, QMPI_REQ_COLL, request, &slot);
    if (rc != MPI_SUCCESS)
        return qmpi_raise(comm, rc, fn, "no room for another request");
    if ((rc = coll_post(fn, comm, c, a, &slot->red, &q)) != MPI_SUCCESS) {
        qmpi_req_release(slot);
        *request = MPI_REQUEST_NULL;
        return rc;
    }
    qmpi_req_set(slot, q);
    return MPI_SUCCESS;
}

/* The predefined ops' names, from MPI_MAX on (mpi.h's order). */
static const char *const predef_name[] = {
    "MPI_MAX",  "MPI_MIN", "MPI_SUM",  "MPI_PROD", "MPI_LAND",   "MPI_BAND",
    "MPI_LOR",  "MPI_BOR", "MPI_LXOR", "MPI_BXOR", "MPI_MINLOC", "MPI_MAXLOC",
};
_Static_assert(sizeof predef_name / sizeof predef_name[0] == MPI_MAXLOC - MPI_MAX + 1,
               "one name per predefined op");

/* Validate the type and op of a reduction: MPI_SUCCESS or the raise's
 * answer. */
static int check_reduction(const char *fn, MPI_Comm comm, int count, MPI_Datatype dt,
                           MPI_Op op)
{
    if (count < 0)
        return qmpi_raise(comm, MPI_ERR_COUNT, fn, "negative count %d", count);
    if (qmpi_type_get(dt) == NULL)
        return qmpi_raise(comm, MPI_ERR_TYPE, fn, "invalid datatype %#x", (unsigned)dt);
    qmpi_reduction red;
    int rc = qmpi_reduction_init(&red, op, dt, count);
    if (rc == MPI_ERR_OP && op >= MPI_MAX && op <= MPI_MAXLOC)
        return qmpi_raise(comm, rc, fn, "%s is not defined on %s", predef_name[op - MPI_MAX],
                          qmpi_type_get(dt)->name);
    if (rc == MPI_ERR_OP) /* (a user op applies to any type) */
        return qmpi_raise(comm, rc, fn, "invalid op %#x", (unsigned)op);
    if (rc != MPI_SUCCESS)
        return qmpi_raise(comm, rc, fn, "count %d of %s is too large", count,
                          qmpi_type_get(dt)->name);
    return MPI_SUCCESS;
}

/* ---- the I-forms' bodies (fn: the public call errors are reported in) ---- */

static int ibarrier(const char *fn, MPI_Comm comm, MPI_Request *request)
{
    int rc = MPI_SUCCESS;
    qmpi_comm *c = qmpi_comm_arg(fn, comm, NULL, NULL, &rc);
    if (c == NULL)
        return rc;
    if (request == NULL)
        return qmpi_raise(comm, MPI_ERR_ARG, fn, "request is NULL");
    coll_call a = {.kind = COLL_BARRIER};
    return coll_start(fn, comm, c, &a, request);
}

static int ibcast(const char *fn, void *buffer, int count, MPI_Datatype datatype, int root,
                  MPI_Comm comm, MPI_Request *request)
{
    int rc = MPI_SUCCESS;
    qmpi_comm *c = qmpi_comm_arg(fn, comm, NULL, NULL, &rc);
    if (c == NULL)
        return rc;
    size_t len;
    rc = qmpi_check_buf(buffer, count, datatype, &len);
    if (rc == MPI_ERR_COUNT)
        return qmpi_raise(comm, rc, fn, "negative count %d", count);
    if (rc == MPI_ERR_TYPE)
        return qmpi_raise(comm, rc, fn, "invalid datatype %#x", (unsigned)datatype);
    if (rc != MPI_SUCCESS)
        return qmpi_raise(comm, rc, fn, "buffer is NULL");
    if (buffer == MPI_IN_PLACE)
        return qmpi_raise(comm, MPI_ERR_BUFFER, fn, "MPI_IN_PLACE is not a buffer here");
    if (root < 0 || root >= c->size)
        return qmpi_raise(comm, MPI_ERR_ROOT, fn, "invalid root %d (size %d)", root,
                          (int)c->size);
    if (request == NULL)
        return qmpi_raise(comm, MPI_ERR_ARG, fn, "request is NULL");
    coll_call a = {.kind = COLL_BCAST, .buf = buffer, .len = len, .root = root};
    return coll_start(fn, comm, c, &a, request);
}

/* A reduction's operand: at the root of a reduce (or anywhere in an
 * allreduce) MPI_IN_PLACE is allowed; count 0 moves nothing, so nothing
 * is passed (the engine would want a receive buffer for in place). */
static const void *engine_sbuf(const void *sendbuf, int count)
{
    if (count == 0)
        return NULL;
    return sendbuf == MPI_IN_PLACE ? QUAY_IN_PLACE : sendbuf;
}

static int ireduce(const char *fn, const void *sendbuf, void *recvbuf, int count,
                   MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm,
                   MPI_Request *request)
{
    int rc = MPI_SUCCESS;
    qmpi_comm *c = qmpi_comm_arg(fn, comm, NULL, NULL, &rc);
    if (c == NULL)
        return rc;
    rc = check_reduction(fn, comm, count, datatype, op);
    if (rc != MPI_SUCCESS)
        return rc;
    if (root < 0 || root >= c->size)
        return qmpi_raise(comm, MPI_ERR_ROOT, fn, "invalid root %d (size %d)", root,
                          (int)c->size);
    if (request == NULL)
        return qmpi_raise(comm, MPI_ERR_ARG, fn, "request is NULL");
    int at_root = root == c->rank;
    if (sendbuf == MPI_IN_PLACE && !at_root)
        return qmpi_raise(comm, MPI_ERR_BUFFER, fn, "MPI_IN_PLACE at a rank other than the root");
    if (sendbuf == NULL && count > 0)
        return qmpi_raise(comm, MPI_ERR_BUFFER, fn, "sendbuf is NULL");
    /* recvbuf matters at the root only */
    if (at_root && recvbuf == MPI_IN_PLACE)
        return qmpi_raise(comm, MPI_ERR_BUFFER, fn, "MPI_IN_PLACE as recvbuf");
    if (at_root && recvbuf == NULL && count > 0)
        return qmpi_raise(comm, MPI_ERR_BUFFER, fn, "recvbuf is NULL");
    if (at_root && sendbuf == recvbuf && count > 0)
        return qmpi_raise(comm, MPI_ERR_BUFFER, fn, "aliased buffers (use MPI_IN_PLACE)");
    coll_call a = {.kind = COLL_REDUCE, .sbuf = engine_sbuf(sendbuf, count), .buf = recvbuf,
                   .count = count, .dt = datatype, .op = op, .root = root};
    return coll_start(fn, comm, c, &a, request);
}

static int iallreduce(const char *fn, const void *sendbuf, void *recvbuf, int count,
                      MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    int rc = MPI_SUCCESS;
    qmpi_comm *c = qmpi_comm_arg(fn, comm, NULL, NULL, &rc);
    if (c == NULL)
        return rc;
    rc = check_reduction(fn, comm, count, datatype, op);
    if (rc != MPI_SUCCESS)
        return rc;
    if (request == NULL)
        return qmpi_raise(comm, MPI_ERR_ARG, fn, "request is NULL");
    if (sendbuf == NULL && count > 0)
        return qmpi_raise(comm, MPI_ERR_BUFFER, fn, "sendbuf is NULL");
    if (recvbuf == MPI_IN_PLACE)
        return qmpi_raise(comm, MPI_ERR_BUFFER, fn, "MPI_IN_PLACE as recvbuf");
    if (recvbuf == NULL && count > 0)
        return qmpi_raise(comm, MPI_ERR_BUFFER, fn, "recvbuf is NULL");
    if (sendbuf == recvbuf && count > 0)
        return qmpi_raise(comm, MPI_ERR_BUFFER, fn, "aliased buffers (use MPI_IN_PLACE)");
    coll_call a = {.kind = COLL_ALLREDUCE, .sbuf = engine_sbuf(sendbuf, count), .buf = recvbuf,
                   .count = count, .dt = datatype, .op = op};
    return coll_start(fn, comm, c, &a, request);
}

/* ---- public calls ---------------------------------------------------------- */

int MPI_Ibarrier(MPI_Comm comm, MPI_Request *request)
{
    QMPI_ENTER("MPI_Ibarrier");
    return ibarrier("MPI_Ibarrier", comm, request);
}

int MPI_Ibcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
               MPI_Request *request)
{
    QMPI_ENTER("MPI_Ibcast");
    return ibcast("MPI_Ibcast", buffer, count, datatype, root, comm, request);
}

int MPI_Ireduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                MPI_Op op, int root, MPI_Comm comm, MPI_Request *request)
{
    QMPI_ENTER("MPI_Ireduce");
    return ireduce("MPI_Ireduce", sendbuf, recvbuf, count, datatype, op, root, comm, request);
}

int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                   MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    QMPI_ENTER("MPI_Iallreduce");
    return iallreduce("MPI_Iallreduce", sendbuf, recvbuf, count, datatype, op, comm, request);
}

int MPI_Barrier(MPI_Comm comm)
{
    static const char fn[] = "MPI_Barrier";
    QMPI_ENTER(fn);
    return ibarrier(fn, comm, COLL_BLOCKING);
}

int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
    static const char fn[] = "MPI_Bcast";
    QMPI_ENTER(fn);
    return ibcast(fn, buffer, count, datatype, root, comm, COLL_BLOCKING);
}

int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
               MPI_Op op, int root, MPI_Comm comm)
{
    static const char fn[] = "MPI_Reduce";
    QMPI_ENTER(fn);
    return ireduce(fn, sendbuf, recvbuf, count, datatype, op, root, comm, COLL_BLOCKING);
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                  MPI_Op op, MPI_Comm comm)
{
    static const char fn[] = "MPI_Allreduce";
    QMPI_ENTER(fn);
    return iallreduce(fn, sendbuf, recvbuf, count, datatype, op, comm, COLL_BLOCKING);
}

/* inoutbuf = inbuf op inoutbuf, here and now: the same reduction as the
 * collectives run (the engine's kernel, or the binding's function). */
int MPI_Reduce_local(const void *inbuf, void *inoutbuf, int count, MPI_Datatype datatype,
                     MPI_Op op)
{
    static const char fn[] = "MPI_Reduce_local";
    QMPI_ENTER(fn);
    int rc = check_reduction(fn, MPI_COMM_WORLD, count, datatype, op);
    if (rc != MPI_SUCCESS)
        return rc;
    if (inbuf == MPI_IN_PLACE || inoutbuf == MPI_IN_PLACE)
        return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_BUFFER, fn, "MPI_IN_PLACE is not a buffer here");
    if ((inbuf == NULL || inoutbuf == NULL) && count > 0)
        return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_BUFFER, fn, "%s is NULL",
                          inbuf == NULL ? "inbuf" : "inoutbuf");
    if (inbuf == inoutbuf && count > 0)
        return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_BUFFER, fn, "aliased buffers");
    qmpi_reduction red;
    rc = qmpi_reduction_init(&red, op, datatype, count);
    if (rc != MPI_SUCCESS) /* (validated above: not reached) */
        return qmpi_raise(MPI_COMM_WORLD, rc, fn, "invalid reduction");
    rc = quay_reduce_local(inbuf, inoutbuf, red.qcount, red.qdt, &red.op);
    if (rc != QUAY_OK)
        return qmpi_raise(MPI_COMM_WORLD, qmpi_class_of(rc), fn, "%s", quay_strerror(rc));
    return MPI_SUCCESS;
}
