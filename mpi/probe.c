/*
 * probe.c — probe and matched probe: MPI_Probe, MPI_Iprobe, MPI_Mprobe,
 * MPI_Improbe, the MPI_Message handles they make, and MPI_Mrecv /
 * MPI_Imrecv, which receive a message so taken.
 */
#include <stdlib.h>
#include <string.h>

#include "p2p_args.h"

/* ---- probes --------------------------------------------------------------------------- */

typedef struct probe {
    qmpi_comm *c;
    int source, tag, matched; /* matched: take the message (Mprobe) */
    int found, rc;
    quay_status st;
    quay_msg *msg;
} probe;

/* One look for the message; found or an error ends the wait. */
static int probe_once(void *ctx)
{
    probe *p = ctx;
    if (p->matched) {
        p->rc = quay_improbe(qmpi.e, p->c->q, p->source, p->tag, &p->msg, &p->st);
        if (p->rc == QUAY_EAGAIN) { /* a pool is full: progress frees it */
            p->rc = 0;
            return 0;
        }
        p->found = p->rc == 0 && p->msg != NULL;
    } else {
        p->rc = quay_iprobe(qmpi.e, p->c->q, p->source, p->tag, &p->found, &p->st);
    }
    if (p->rc != 0 || p->found)
        return 1;
    /* A probe for a process that failed (or for anyone, once a member
     * failed) would wait forever. */
    if (p->source == MPI_ANY_SOURCE ? qmpi_comm_has_failed(p->c)
                                    : qrt_peer_failed(qmpi.rt,
                                                      quay_comm_world_rank(p->c->q, p->source))) {
        p->rc = QUAY_EPEER;
        return 1;
    }
    return 0;
}

static int probe_common(const char *fn, int source, int tag, MPI_Comm comm, int block,
                        int matched, int *flag, MPI_Message *message, MPI_Status *status)
{
    probe p;
    memset(&p, 0, sizeof p);
    int rc = check_recv(fn, NULL, 0, MPI_DATATYPE_NULL, source, tag, comm, &p.c, NULL);
    if (rc != MPI_SUCCESS)
        return rc;
    if ((!block && flag == NULL) || (matched && message == NULL))
        return qmpi_raise(comm, MPI_ERR_ARG, fn, "flag or message is NULL");
    p.source = source;
    p.tag = tag;
    p.matched = matched;
    if (!probe_once(&p)) {
        if (block) {
            qmpi_wait_until(fn, probe_once, &p);
        } else {
            qmpi_poll();
            probe_once(&p);
        }
    }
    if (p.rc != 0)
        return qmpi_raise(comm, qmpi_class_of(p.rc), fn, "%s", quay_strerror(p.rc));
    if (flag != NULL)
        *flag = p.found;
    if (!p.found)
        return MPI_SUCCESS;
    if (status != MPI_STATUS_IGNORE && status != NULL)
        qmpi_status_set(status, &p.st);
    if (matched) {
        if (p.msg == QUAY_MSG_NO_PROC) {
            *message = MPI_MESSAGE_NO_PROC;
        } else if ((rc = qmpi_msg_new(p.msg, comm, message)) != MPI_SUCCESS) {
            return qmpi_raise(comm, rc, fn, "out of message handles");
        }
    }
    return MPI_SUCCESS;
}

int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    QMPI_ENTER(__func__);
    return probe_common(__func__, source, tag, comm, 1, 0, NULL, NULL, status);
}

int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status)
{
    QMPI_ENTER(__func__);
    return probe_common(__func__, source, tag, comm, 0, 0, flag, NULL, status);
}

int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status)
{
    QMPI_ENTER(__func__);
    return probe_common(__func__, source, tag, comm, 1, 1, NULL, message, status);
}

int MPI_Improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message,
                MPI_Status *status)
{
    QMPI_ENTER(__func__);
    int rc = probe_common(__func__, source, tag, comm, 0, 1, flag, message, status);
    if (rc == MPI_SUCCESS && flag != NULL && !*flag && message != NULL)
        *message = MPI_MESSAGE_NULL;
    return rc;
}

/* ---- MPI_Message handles ----------------------------------------------------------------- */

#define MSG_BASE 0x30000000
#define MSG_MAX (1 << 20)

typedef struct msg_slot {
    quay_msg *m; /* NULL: free */
    MPI_Comm comm;
} msg_slot;

static msg_slot *msgs;
static int32_t nmsgs;

int qmpi_msg_new(quay_msg *m, MPI_Comm comm, MPI_Message *h)
{
    int32_t i;
    for (i = 1; i < nmsgs; i++)
        if (msgs[i].m == NULL)
            break;
    if (i >= nmsgs) {
        int32_t n = nmsgs > 0 ? 2 * nmsgs : 16;
        if (n > MSG_MAX)
            return MPI_ERR_NO_MEM;
        msg_slot *s = realloc(msgs, (size_t)n * sizeof *s);
        if (s == NULL)
            return MPI_ERR_NO_MEM;
        memset(s + nmsgs, 0, (size_t)(n - nmsgs) * sizeof *s);
        msgs = s;
        i = nmsgs > 0 ? nmsgs : 1;
        nmsgs = n;
    }
    msgs[i].m = m;
    msgs[i].comm = comm;
    *h = MSG_BASE + i;
    return MPI_SUCCESS;
}

quay_msg *qmpi_msg_take(MPI_Message h, MPI_Comm *comm)
{
    if (h <= MSG_BASE || h - MSG_BASE >= nmsgs || msgs[h - MSG_BASE].m == NULL)
        return NULL;
    msg_slot *s = &msgs[h - MSG_BASE];
    quay_msg *m = s->m;
    *comm = s->comm;
    s->m = NULL;
    return m;
}

void qmpi_msgs_fini(void)
{
    free(msgs);
    msgs = NULL;
    nmsgs = 0;
}

/* Resolve *message for Mrecv / Imrecv: the engine message (or
 * QUAY_MSG_NO_PROC) and its communicator. */
static int message_take(const char *fn, const MPI_Message *message, quay_msg **m, MPI_Comm *comm)
{
    if (message == NULL)
        return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "message is NULL");
    if (*message == MPI_MESSAGE_NO_PROC) {
        *m = QUAY_MSG_NO_PROC;
        *comm = MPI_COMM_WORLD;
        return MPI_SUCCESS;
    }
    /* Checked before taking, so that a bad buffer leaves it in place. */
    if (*message <= MSG_BASE || *message - MSG_BASE >= nmsgs || msgs[*message - MSG_BASE].m == NULL)
        return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_REQUEST, fn, "invalid message handle");
    *comm = msgs[*message - MSG_BASE].comm;
    *m = NULL;
    return MPI_SUCCESS;
}

static int mrecv_post(const char *fn, void *buf, int count, MPI_Datatype dt,
                      MPI_Message *message, quay_req **q, MPI_Comm *comm)
{
    quay_msg *m = NULL;
    size_t bytes;
    int rc = message_take(fn, message, &m, comm);
    if (rc != MPI_SUCCESS)
        return rc;
    if ((rc = qmpi_check_buf(buf, count, dt, &bytes)) != MPI_SUCCESS)
        return qmpi_raise(*comm, rc, fn, "invalid buffer, count %d or datatype", count);
    if (m == NULL)
        m = qmpi_msg_take(*message, comm);
    qmpi_retry rt = QMPI_RETRY_INIT;
    while ((rc = quay_imrecv(qmpi.e, m, buf, bytes, q)) == QUAY_EAGAIN && qmpi_again(&rt, rc))
        ;
    if (rc != 0)
        return qmpi_raise(*comm, qmpi_class_of(rc), fn, "%s", quay_strerror(rc));
    *message = MPI_MESSAGE_NULL;
    return MPI_SUCCESS;
}

int MPI_Mrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message,
              MPI_Status *status)
{
    quay_req *q;
    MPI_Comm comm;
    QMPI_ENTER(__func__);
    int rc = mrecv_post(__func__, buf, count, datatype, message, &q, &comm);
    if (rc != MPI_SUCCESS)
        return rc;
    return qmpi_wait_q(__func__, q, comm, 0, status);
}

int MPI_Imrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message,
               MPI_Request *request)
{
    quay_req *q;
    MPI_Comm comm;
    QMPI_ENTER(__func__);
    if (request == NULL)
        return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, __func__, "request is NULL");
    int rc = mrecv_post(__func__, buf, count, datatype, message, &q, &comm);
    if (rc != MPI_SUCCESS)
        return rc;
    if ((rc = qmpi_req_new(q, comm, QMPI_REQ_RECV, request, NULL)) != MPI_SUCCESS)
        return qmpi_raise(comm, rc, __func__, "out of request handles");
    return MPI_SUCCESS;
}
