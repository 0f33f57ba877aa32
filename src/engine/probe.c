/*
 * probe.c — quay_iprobe, quay_improbe and quay_imrecv: looking at kept
 * messages without receiving them, taking one out of matching, and
 * receiving a taken one.
 */
#include "engine/internal.h"

static void probe_status(const umsg *m, quay_status *st)
{
    if (st == NULL)
        return;
    st->source = m->src;
    st->tag = m->tag;
    st->error = (m->flags & UMF_POISON) ? QUAY_ENOTPOSTED : 0;
    st->cancelled = 0;
    st->count = (m->flags & UMF_POISON) ? 0 : m->len;
}

static void null_status(quay_status *st)
{
    if (st == NULL)
        return;
    memset(st, 0, sizeof *st);
    st->source = QUAY_PROC_NULL;
    st->tag = QUAY_ANY_TAG;
}

int p2p_probe_lookup(quay_engine *e, quay_comm *c, int32_t src, int32_t tag,
                     quay_status *st, umsg **pm)
{
    *pm = NULL;
    if (e == NULL)
        return QUAY_EINVAL;
    if (e->fatal)
        return e->fatal;
    if (!comm_ok(e, c))
        return QUAY_EINVAL;
    int rc = recv_pattern_ok(c, src, tag);
    if (rc != 0)
        return rc;
    if (src == QUAY_PROC_NULL) {
        null_status(st);
        return 1;
    }
    *pm = match_find_unexp(e, c, src, tag);
    return e->fatal;
}

int quay_iprobe(quay_engine *e, quay_comm *c, int32_t src, int32_t tag,
                int *flag, quay_status *st)
{
    if (flag == NULL)
        return QUAY_EINVAL;
    umsg *m;
    int rc = p2p_probe_lookup(e, c, src, tag, st, &m);
    *flag = rc == 1 || m != NULL;
    if (m != NULL)
        probe_status(m, st);
    return rc < 0 ? rc : 0;
}

int quay_improbe(quay_engine *e, quay_comm *c, int32_t src, int32_t tag,
                 quay_msg **pmsg, quay_status *st)
{
    if (pmsg == NULL)
        return QUAY_EINVAL;
    *pmsg = NULL;
    umsg *m;
    int rc = p2p_probe_lookup(e, c, src, tag, st, &m);
    if (rc == 1)
        *pmsg = QUAY_MSG_NO_PROC;
    if (m == NULL)
        return rc < 0 ? rc : 0;
    if (msg_needs_ack(m)) {
        /* Taking the message is the match a synchronous send waits for. */
        if (!ctrl_space(e))
            return QUAY_EAGAIN;
        ctrl_push(e, QUAY_PKT_ACK, m->peer, m->sreq, 0, 0);
        m->flags &= (uint8_t)~(UMF_SYNC | UMF_READY);
    }
    match_remove_unexp(e, m);
    m->where = UM_TAKEN;
    c->nreqs++; /* the taken message keeps its communicator alive */
    if (e->trace_fn)
        trace_match(e, NULL, m, m->peer, m->seq, m->ctx, m->src, m->tag);
    probe_status(m, st);
    *pmsg = m;
    return e->fatal;
}

int quay_imrecv(quay_engine *e, quay_msg *msg, void *buf, size_t cap,
                quay_req **preq)
{
    if (e == NULL || preq == NULL || msg == NULL || (buf == NULL && cap != 0))
        return QUAY_EINVAL;
    *preq = NULL;
    if (e->fatal)
        return e->fatal;
    if (msg == QUAY_MSG_NO_PROC) {
        quay_req *r = req_alloc(e, RK_RECV, NULL);
        if (r == NULL)
            return QUAY_EAGAIN;
        null_status(&r->status);
        req_complete(e, r);
        *preq = r;
        return 0;
    }
    if (msg < e->msgs || msg >= e->msgs + e->nmsgs ||
        ((uintptr_t)msg - (uintptr_t)e->msgs) % sizeof *msg != 0 ||
        msg->where != UM_TAKEN)
        return QUAY_EINVAL;
    quay_comm *c = msg->comm;
    quay_req *r = req_alloc(e, RK_RECV, c);
    if (r == NULL)
        return QUAY_EAGAIN;
    c->nreqs--; /* the request now holds the communicator */
    r->rank = msg->src;
    r->tag = msg->tag;
    r->u.rbuf = buf;
    r->len = cap;
    *preq = r;
    p2p_deliver(e, r, msg, msg->data);
    umsg_free(e, msg);
    return 0;
}

