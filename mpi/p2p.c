/*
 * p2p.c — point-to-point: the four send modes (blocking, nonblocking and
 * persistent), receive, sendrecv, Get_count, and the buffered-send
 * buffer (probes: probe.c).
 *
 * A blocking call posts the engine request and waits on it without
 * making an MPI_Request (qmpi_wait_q); the I-forms wrap it in a handle.
 * A persistent request is one engine persistent request in a handle, made
 * by *_init and started by MPI_Start / MPI_Startall (quay_start): nothing
 * is allocated per round.
 */
#include <stdlib.h>
#include <string.h>

#include "p2p_args.h"

/* ---- posting ------------------------------------------------------------------------ */

static int post_send(const char *fn, const void *buf, size_t bytes, int dest, int tag,
                     MPI_Comm comm, qmpi_comm *c, quay_send_mode mode, quay_req **q)
{
    qmpi_retry rt = QMPI_RETRY_INIT;
    int rc;
    while ((rc = quay_isend(qmpi.e, c->q, buf, bytes, dest, tag, mode, q)) == QUAY_EAGAIN &&
           qmpi_again(&rt, rc))
        ;
    if (rc == QUAY_ENOBUFS)
        return qmpi_raise(comm, MPI_ERR_BUFFER, fn,
                          "no room in the attached buffer for %zu bytes (plus "
                          "MPI_BSEND_OVERHEAD)",
                          bytes);
    if (rc != 0)
        return qmpi_raise(comm, qmpi_class_of(rc), fn, "%s", quay_strerror(rc));
    return MPI_SUCCESS;
}

static QMPI_INLINE int post_recv(const char *fn, void *buf, size_t bytes, int source, int tag,
                     MPI_Comm comm, qmpi_comm *c, quay_req **q)
{
    qmpi_retry rt = QMPI_RETRY_INIT;
    int rc;
    while ((rc = quay_irecv(qmpi.e, c->q, buf, bytes, source, tag, q)) == QUAY_EAGAIN &&
           qmpi_again(&rt, rc))
        ;
    if (rc != 0)
        return qmpi_raise(comm, qmpi_class_of(rc), fn, "%s", quay_strerror(rc));
    return MPI_SUCCESS;
}

/* Small MPI_Isends in a row that may wait for one packet (below). */
#define BURST_HOLD 64

/* A standard send small enough to be copied into its packet at the call
 * (quay_send_inline): *sent 1 if it went so (complete, no engine
 * request), 0 if it must be posted (another mode, too long, the engine is
 * busy, or `copy` 0: the nonblocking form with QUAY_SEND_COPY=0). Returns
 * MPI_SUCCESS or the raised error.
 *
 * `burst` (the nonblocking form): the first send since the program last
 * waited or tested leaves at once; the ones right behind it join the
 * engine's waiting packet as a train, one transport send for many
 * messages, and leave at the next call that waits or tests, or with every
 * BURST_HOLD-th send. A program that sends a burst and then computes
 * without an MPI call holds the burst's tail until its next call (with
 * QUAY_ASYNC_PROGRESS, the runtime's thread sends it). */
static QMPI_INLINE int send_at_call(const char *fn, const void *buf, size_t bytes, int dest, int tag,
                        MPI_Comm comm, qmpi_comm *c, quay_send_mode mode, int copy,
                        int burst, int *sent)
{
    *sent = 0;
    if (mode != QUAY_SEND_STANDARD || bytes > QUAY_INLINE_MAX || !copy)
        return MPI_SUCCESS;
    int rc = quay_send_inline(qmpi.e, c->q, buf, bytes, dest, tag);
    if (rc == QUAY_EBUSY)
        return MPI_SUCCESS;
    if (rc != 0)
        return qmpi_raise(comm, qmpi_class_of(rc), fn, "%s", quay_strerror(rc));
    *sent = 1;
    if (burst && qmpi.burst++ % BURST_HOLD != 0)
        return MPI_SUCCESS;
    qmpi_flush(); /* it leaves now; arrivals wait for a call that waits */
    return MPI_SUCCESS;
}

/* Blocking send in one of the four modes. */
static int send_blocking(const char *fn, const void *buf, int count, MPI_Datatype dt,
                         int dest, int tag, MPI_Comm comm, quay_send_mode mode)
{
    qmpi_comm *c;
    size_t bytes;
    quay_req *q;
    int rc = check_send(fn, buf, count, dt, dest, tag, comm, &c, &bytes);
    if (rc != MPI_SUCCESS)
        return rc;
    int sent;
    if ((rc = send_at_call(fn, buf, bytes, dest, tag, comm, c, mode, 1, 0, &sent)) !=
            MPI_SUCCESS ||
        sent)
        return rc;
    if ((rc = post_send(fn, buf, bytes, dest, tag, comm, c, mode, &q)) != MPI_SUCCESS)
        return rc;
    /* An eager send is usually complete once its packet has left. */
    qmpi_flush();
    return qmpi_wait_q(fn, q, comm, 0, MPI_STATUS_IGNORE);
}

static QMPI_INLINE int send_nonblocking(const char *fn, const void *buf, int count, MPI_Datatype dt,
                            int dest, int tag, MPI_Comm comm, quay_send_mode mode,
                            MPI_Request *request)
{
    qmpi_comm *c;
    size_t bytes;
    quay_req *q;
    int rc = check_send(fn, buf, count, dt, dest, tag, comm, &c, &bytes);
    if (rc == MPI_SUCCESS)
        rc = check_req_ptr(fn, comm, request);
    if (rc != MPI_SUCCESS)
        return rc;
    /* The handle first: a send that goes at the call has nothing to undo. */
    MPI_Request h;
    qmpi_req *r;
    if ((rc = qmpi_req_new(NULL, comm, QMPI_REQ_SEND, &h, &r)) != MPI_SUCCESS)
        return qmpi_raise(comm, rc, fn, "out of request handles");
    int sent;
    if ((rc = send_at_call(fn, buf, bytes, dest, tag, comm, c, mode, qmpi.send_copy, 1,
                           &sent)) == MPI_SUCCESS &&
        !sent)
        rc = post_send(fn, buf, bytes, dest, tag, comm, c, mode, &q);
    if (rc != MPI_SUCCESS) {
        qmpi_req_release(r);
        return rc;
    }
    if (sent) {
        r->sent = 1;
    } else {
        qmpi_req_set(r, q);
        qmpi_flush(); /* the send leaves now; arrivals wait for a call that waits */
    }
    *request = h;
    return MPI_SUCCESS;
}

int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
             MPI_Comm comm)
{
    QMPI_ENTER(__func__);
    return send_blocking(__func__, buf, count, datatype, dest, tag, comm, QUAY_SEND_STANDARD);
}

int MPI_Ssend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
              MPI_Comm comm)
{
    QMPI_ENTER(__func__);
    return send_blocking(__func__, buf, count, datatype, dest, tag, comm, QUAY_SEND_SYNC);
}

int MPI_Rsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
              MPI_Comm comm)
{
    QMPI_ENTER(__func__);
    return send_blocking(__func__, buf, count, datatype, dest, tag, comm, QUAY_SEND_READY);
}

int MPI_Bsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
              MPI_Comm comm)
{
    QMPI_ENTER(__func__);
    return send_blocking(__func__, buf, count, datatype, dest, tag, comm, QUAY_SEND_BUFFERED);
}

int MPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
              MPI_Comm comm, MPI_Request *request)
{
    QMPI_ENTER(__func__);
    return send_nonblocking(__func__, buf, count, datatype, dest, tag, comm, QUAY_SEND_STANDARD,
                            request);
}

int MPI_Issend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
               MPI_Comm comm, MPI_Request *request)
{
    QMPI_ENTER(__func__);
    return send_nonblocking(__func__, buf, count, datatype, dest, tag, comm, QUAY_SEND_SYNC,
                            request);
}

int MPI_Irsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
               MPI_Comm comm, MPI_Request *request)
{
    QMPI_ENTER(__func__);
    return send_nonblocking(__func__, buf, count, datatype, dest, tag, comm, QUAY_SEND_READY,
                            request);
}

int MPI_Ibsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
               MPI_Comm comm, MPI_Request *request)
{
    QMPI_ENTER(__func__);
    return send_nonblocking(__func__, buf, count, datatype, dest, tag, comm,
                            QUAY_SEND_BUFFERED, request);
}

int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
             MPI_Status *status)
{
    qmpi_comm *c;
    size_t bytes;
    quay_req *q;
    QMPI_ENTER(__func__);
    int rc = check_recv(__func__, buf, count, datatype, source, tag, comm, &c, &bytes);
    if (rc != MPI_SUCCESS)
        return rc;
    /* A message that came first is taken now, with no request to wait on. */
    quay_status qs;
    rc = quay_recv_inline(qmpi.e, c->q, buf, bytes, source, tag, &qs);
    if (rc == 0)
        return qmpi_status_raise(__func__, comm, qmpi_status_set(status, &qs));
    if (rc != QUAY_EBUSY)
        return qmpi_raise(comm, qmpi_class_of(rc), __func__, "%s", quay_strerror(rc));
    if ((rc = post_recv(__func__, buf, bytes, source, tag, comm, c, &q)) != MPI_SUCCESS)
        return rc;
    return qmpi_wait_q(__func__, q, comm, source == MPI_ANY_SOURCE, status);
}

int MPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
              MPI_Request *request)
{
    qmpi_comm *c;
    size_t bytes;
    quay_req *q;
    qmpi_req *r;
    QMPI_ENTER(__func__);
    int rc = check_recv(__func__, buf, count, datatype, source, tag, comm, &c, &bytes);
    if (rc == MPI_SUCCESS)
        rc = check_req_ptr(__func__, comm, request);
    if (rc != MPI_SUCCESS)
        return rc;
    if ((rc = post_recv(__func__, buf, bytes, source, tag, comm, c, &q)) != MPI_SUCCESS)
        return rc;
    if ((rc = qmpi_req_new(q, comm, QMPI_REQ_RECV, request, &r)) != MPI_SUCCESS)
        return qmpi_raise(comm, rc, __func__, "out of request handles");
    r->wild = source == MPI_ANY_SOURCE;
    return MPI_SUCCESS;
}

/* ---- persistent requests ------------------------------------------------------------ */

/* The handle of persistent request q, which quay_send_init / quay_recv_init
 * answered with rc. */
static int persist_handle(const char *fn, int rc, quay_req *q, MPI_Comm comm, int kind,
                          int wild, MPI_Request *request)
{
    qmpi_req *r;
    if (rc != 0)
        return qmpi_raise(comm, qmpi_class_of(rc), fn, "%s", quay_strerror(rc));
    if ((rc = qmpi_req_new(q, comm, kind, request, &r)) != MPI_SUCCESS)
        return qmpi_raise(comm, rc, fn, "out of request handles");
    r->persist = 1;
    r->wild = (uint8_t)wild;
    return MPI_SUCCESS;
}

static int send_init(const char *fn, const void *buf, int count, MPI_Datatype dt, int dest,
                     int tag, MPI_Comm comm, quay_send_mode mode, MPI_Request *request)
{
    qmpi_retry rt = QMPI_RETRY_INIT;
    qmpi_comm *c;
    size_t bytes;
    quay_req *q;
    int rc = check_send(fn, buf, count, dt, dest, tag, comm, &c, &bytes);
    if (rc == MPI_SUCCESS)
        rc = check_req_ptr(fn, comm, request);
    if (rc != MPI_SUCCESS)
        return rc;
    while ((rc = quay_send_init(qmpi.e, c->q, buf, bytes, dest, tag, mode, &q)) == QUAY_EAGAIN &&
           qmpi_again(&rt, rc))
        ;
    return persist_handle(fn, rc, q, comm, QMPI_REQ_SEND, 0, request);
}

int MPI_Send_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                  MPI_Comm comm, MPI_Request *request)
{
    QMPI_ENTER(__func__);
    return send_init(__func__, buf, count, datatype, dest, tag, comm, QUAY_SEND_STANDARD,
                     request);
}

int MPI_Ssend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                   MPI_Comm comm, MPI_Request *request)
{
    QMPI_ENTER(__func__);
    return send_init(__func__, buf, count, datatype, dest, tag, comm, QUAY_SEND_SYNC, request);
}

int MPI_Rsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                   MPI_Comm comm, MPI_Request *request)
{
    QMPI_ENTER(__func__);
    return send_init(__func__, buf, count, datatype, dest, tag, comm, QUAY_SEND_READY, request);
}

int MPI_Bsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                   MPI_Comm comm, MPI_Request *request)
{
    QMPI_ENTER(__func__);
    return send_init(__func__, buf, count, datatype, dest, tag, comm, QUAY_SEND_BUFFERED,
                     request);
}

int MPI_Recv_init(void *buf, int count, MPI_Datatype datatype, int source, int tag,
                  MPI_Comm comm, MPI_Request *request)
{
    qmpi_retry rt = QMPI_RETRY_INIT;
    qmpi_comm *c;
    size_t bytes;
    quay_req *q;
    QMPI_ENTER(__func__);
    int rc = check_recv(__func__, buf, count, datatype, source, tag, comm, &c, &bytes);
    if (rc == MPI_SUCCESS)
        rc = check_req_ptr(__func__, comm, request);
    if (rc != MPI_SUCCESS)
        return rc;
    while ((rc = quay_recv_init(qmpi.e, c->q, buf, bytes, source, tag, &q)) == QUAY_EAGAIN &&
           qmpi_again(&rt, rc))
        ;
    return persist_handle(__func__, rc, q, comm, QMPI_REQ_RECV, source == MPI_ANY_SOURCE,
                          request);
}

/* The inactive persistent request behind handle h, or NULL after raising
 * MPI_ERR_REQUEST (a bad handle, MPI_REQUEST_NULL, not persistent, or
 * active: MPI-4.0 §3.9 allows a start only on an inactive one). */
static qmpi_req *startable(const char *fn, MPI_Request h, int *rc)
{
    qmpi_req *r = h != MPI_REQUEST_NULL ? qmpi_req_get(h) : NULL;
    if (r == NULL)
        *rc = qmpi_raise(MPI_COMM_WORLD, MPI_ERR_REQUEST, fn, "invalid request");
    else if (!r->persist)
        *rc = qmpi_raise(r->comm, MPI_ERR_REQUEST, fn, "not a persistent request");
    else if (r->active)
        *rc = qmpi_raise(r->comm, MPI_ERR_REQUEST, fn,
                         "the request is active (started, completion not yet reported)");
    else
        return r;
    return NULL;
}

/* A round of r just started. */
static void started(qmpi_req *r)
{
    r->active = 1;
    r->ucancel = 0;
    if (r->wild)
        r->wild = 1; /* a failure seen by the last round is checked anew */
}

/* MPI's error for quay_start's (or quay_startall's) refusal rc. */
static int start_refused(const char *fn, const qmpi_req *r, int rc)
{
    if (rc == QUAY_ENOBUFS) /* the round did not start: still inactive */
        return qmpi_raise(r->comm, MPI_ERR_BUFFER, fn,
                          "no room in the attached buffer for the message (plus "
                          "MPI_BSEND_OVERHEAD)");
    if (rc == QUAY_ESTATE) /* (MPI_Startall: the handle given twice) */
        return qmpi_raise(r->comm, MPI_ERR_REQUEST, fn,
                          "the request is active (given twice in the array)");
    return qmpi_raise(r->comm, qmpi_class_of(rc), fn, "%s", quay_strerror(rc));
}

/* Start round of inactive persistent request r. */
static int start_one(const char *fn, qmpi_req *r)
{
    qmpi_retry rt = QMPI_RETRY_INIT;
    int rc;
    while ((rc = quay_start(qmpi.e, r->q)) == QUAY_EAGAIN && qmpi_again(&rt, rc))
        ;
    if (rc != 0)
        return start_refused(fn, r, rc);
    started(r);
    return MPI_SUCCESS;
}

int MPI_Start(MPI_Request *request)
{
    int rc;
    QMPI_ENTER(__func__);
    if (request == NULL)
        return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, __func__, "request is NULL");
    qmpi_req *r = startable(__func__, *request, &rc);
    if (r == NULL)
        return rc;
    if ((rc = start_one(__func__, r)) != MPI_SUCCESS)
        return rc;
    if (r->kind == QMPI_REQ_SEND)
        qmpi_flush(); /* the send leaves now; arrivals wait for a call that waits */
    return MPI_SUCCESS;
}

/* Start n requests (each checked startable; one given twice is refused
 * the second time) by quay_startall, in order, retrying what EAGAIN left;
 * *sends counts the sends started. */
static int start_batch(const char *fn, qmpi_req *const m[], quay_req *const q[], size_t n,
                       int *sends)
{
    qmpi_retry rt = QMPI_RETRY_INIT;
    size_t done = 0;
    while (done < n) {
        size_t k = 0;
        int rc = quay_startall(qmpi.e, n - done, q + done, &k);
        for (size_t j = done; j < done + k; j++) {
            started(m[j]);
            *sends += m[j]->kind == QMPI_REQ_SEND;
        }
        done += k;
        if (rc == QUAY_EAGAIN && qmpi_again(&rt, rc))
            continue;
        if (rc != 0)
            return start_refused(fn, m[done], rc);
    }
    return MPI_SUCCESS;
}

int MPI_Startall(int count, MPI_Request *array_of_requests)
{
    int rc, sends = 0;
    QMPI_ENTER(__func__);
    if (count < 0)
        return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_COUNT, __func__, "negative count %d", count);
    if (count > 0 && array_of_requests == NULL)
        return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, __func__, "array_of_requests is NULL");
    /* Every handle checked first: a bad one starts nothing. */
    for (int i = 0; i < count; i++)
        if (startable(__func__, array_of_requests[i], &rc) == NULL)
            return rc;
    /* Then started in order, a batch of them per quay_startall (receives
     * of one pattern in a row cost less so). A handle given twice is
     * active when met again: quay_startall refuses it (ESTATE). */
    enum { BATCH = 64 };
    qmpi_req *m[BATCH];
    quay_req *q[BATCH];
    rc = MPI_SUCCESS;
    for (int i = 0; i < count && rc == MPI_SUCCESS;) {
        size_t n = 0;
        for (; n < BATCH && i < count; n++, i++) {
            m[n] = qmpi_req_get(array_of_requests[i]);
            q[n] = m[n]->q;
        }
        rc = start_batch(__func__, m, q, n, &sends);
    }
    if (sends > 0)
        qmpi_flush(); /* the sends leave now */
    return rc;
}

/* ---- sendrecv ----------------------------------------------------------------------- */

int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest,
                 int sendtag, void *recvbuf, int recvcount, MPI_Datatype recvtype, int source,
                 int recvtag, MPI_Comm comm, MPI_Status *status)
{
    qmpi_comm *c;
    size_t sbytes, rbytes;
    quay_req *sq, *rq;
    QMPI_ENTER(__func__);
    int rc = check_send(__func__, sendbuf, sendcount, sendtype, dest, sendtag, comm, &c, &sbytes);
    if (rc == MPI_SUCCESS)
        rc = check_recv(__func__, recvbuf, recvcount, recvtype, source, recvtag, comm, &c,
                        &rbytes);
    if (rc != MPI_SUCCESS)
        return rc;
    /* MPI-3.1 §3.10: the buffers must be disjoint (Sendrecv_replace is for
     * one buffer); an overlap would receive into what is being sent. */
    if (sbytes > 0 && rbytes > 0 && dest != MPI_PROC_NULL && source != MPI_PROC_NULL) {
        uintptr_t s0 = (uintptr_t)sendbuf, r0 = (uintptr_t)recvbuf;
        if (s0 < r0 + rbytes && r0 < s0 + sbytes)
            return qmpi_raise(comm, MPI_ERR_BUFFER, __func__,
                              "send and receive buffers overlap (use MPI_Sendrecv_replace)");
    }
    /* The receive first: a message from ourselves then finds it. */
    if ((rc = post_recv(__func__, recvbuf, rbytes, source, recvtag, comm, c, &rq)) != MPI_SUCCESS)
        return rc;
    rc = post_send(__func__, sendbuf, sbytes, dest, sendtag, comm, c, QUAY_SEND_STANDARD, &sq);
    if (rc != MPI_SUCCESS) {
        quay_cancel(qmpi.e, rq);
        quay_req_free(qmpi.e, rq);
        return rc;
    }
    int src = qmpi_wait_q(__func__, sq, comm, 0, MPI_STATUS_IGNORE);
    int rrc = qmpi_wait_q(__func__, rq, comm, source == MPI_ANY_SOURCE, status);
    return src != MPI_SUCCESS ? src : rrc;
}

int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest, int sendtag,
                         int source, int recvtag, MPI_Comm comm, MPI_Status *status)
{
    qmpi_comm *c;
    size_t bytes;
    quay_req *sq, *rq;
    QMPI_ENTER(__func__);
    int rc = check_send(__func__, buf, count, datatype, dest, sendtag, comm, &c, &bytes);
    if (rc == MPI_SUCCESS)
        rc = check_recv(__func__, buf, count, datatype, source, recvtag, comm, &c, &bytes);
    if (rc != MPI_SUCCESS)
        return rc;
    /* Receive into a copy, send from buf, then replace. */
    void *tmp = malloc(bytes > 0 ? bytes : 1);
    if (tmp == NULL)
        return qmpi_raise(comm, MPI_ERR_NO_MEM, __func__, "no memory for %zu bytes", bytes);
    if ((rc = post_recv(__func__, tmp, bytes, source, recvtag, comm, c, &rq)) != MPI_SUCCESS) {
        free(tmp);
        return rc;
    }
    rc = post_send(__func__, buf, bytes, dest, sendtag, comm, c, QUAY_SEND_STANDARD, &sq);
    if (rc != MPI_SUCCESS) {
        quay_cancel(qmpi.e, rq);
        quay_req_free(qmpi.e, rq);
        free(tmp);
        return rc;
    }
    MPI_Status st;
    int src = qmpi_wait_q(__func__, sq, comm, 0, MPI_STATUS_IGNORE);
    int rrc = qmpi_wait_q(__func__, rq, comm, source == MPI_ANY_SOURCE, &st);
    if (src == MPI_SUCCESS && rrc == MPI_SUCCESS)
        memcpy(buf, tmp, (size_t)st.quay_bytes);
    free(tmp);
    if (status != MPI_STATUS_IGNORE && status != NULL) {
        int err = status->MPI_ERROR;
        *status = st;
        status->MPI_ERROR = err;
    }
    return src != MPI_SUCCESS ? src : rrc;
}

/* ---- counts ------------------------------------------------------------------------------ */

int MPI_Get_count(const MPI_Status *status, MPI_Datatype datatype, int *count)
{
    QMPI_ENTER(__func__);
    const qmpi_type *t = qmpi_type_get(datatype);
    if (status == NULL || status == MPI_STATUS_IGNORE || count == NULL)
        return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, __func__, "status or count is NULL");
    if (t == NULL)
        return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_TYPE, __func__, "invalid datatype");
    long long b = status->quay_bytes;
    if (t->size == 0)
        *count = b == 0 ? 0 : MPI_UNDEFINED;
    else if (b % t->size != 0 || b / t->size > 0x7fffffff)
        *count = MPI_UNDEFINED;
    else
        *count = (int)(b / t->size);
    return MPI_SUCCESS;
}

int MPI_Get_elements(const MPI_Status *status, MPI_Datatype datatype, int *count)
{
    /* Predefined types only: elements are whole datatypes. */
    return MPI_Get_count(status, datatype, count);
}

/* ---- buffered sends --------------------------------------------------------------------- */

int MPI_Buffer_attach(void *buffer, int size)
{
    QMPI_ENTER(__func__);
    if (size < 0)
        return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, __func__, "negative size %d", size);
    if (buffer == NULL && size > 0)
        return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_BUFFER, __func__, "buffer is NULL");
    int rc = quay_buffer_attach(qmpi.e, buffer, (size_t)size);
    if (rc == QUAY_EBUSY)
        return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_BUFFER, __func__,
                          "a buffer is already attached");
    if (rc != 0)
        return qmpi_raise(MPI_COMM_WORLD, qmpi_class_of(rc), __func__, "%s", quay_strerror(rc));
    return MPI_SUCCESS;
}

static int buffer_free(void *ctx)
{
    int *rc = ctx;
    void *b;
    size_t n;
    /* Probe: detach fails with EBUSY while messages still use it, and
     * succeeds (detaching) otherwise; the caller re-reads the result. */
    *rc = quay_buffer_detach(qmpi.e, &b, &n);
    if (*rc == 0)
        quay_buffer_attach(qmpi.e, b, n);
    return *rc != QUAY_EBUSY;
}

int MPI_Buffer_detach(void *buffer_addr, int *size)
{
    QMPI_ENTER(__func__);
    if (buffer_addr == NULL || size == NULL)
        return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, __func__, "buffer_addr or size is NULL");
    /* MPI: blocks until the buffered messages have gone. */
    int rc;
    if (!buffer_free(&rc))
        qmpi_wait_until(__func__, buffer_free, &rc);
    void *b = NULL;
    size_t n = 0;
    rc = quay_buffer_detach(qmpi.e, &b, &n);
    if (rc != 0 && rc != QUAY_EINVAL) /* EINVAL: none attached */
        return qmpi_raise(MPI_COMM_WORLD, qmpi_class_of(rc), __func__, "%s", quay_strerror(rc));
    *(void **)buffer_addr = b;
    *size = (int)n;
    return MPI_SUCCESS;
}
