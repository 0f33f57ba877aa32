/*
 * request.c — the request pool, completion and the user-facing
 * test / free calls.
 *
 * A request completes exactly once (req_complete) and is released only
 * when it is complete, no outgoing descriptor references it (nout == 0)
 * and the user has freed it. Its wire id changes on every reuse
 * (generation), so a stale id from the wire is rejected, never followed.
 */
#include "engine/internal.h"

static QUAY_ALWAYS_INLINE void release(quay_engine *e, quay_req *r);

void req_release(quay_engine *e, quay_req *r)
{
    release(e, r);
}

/* req_release, inline in quay_req_free. */
static QUAY_ALWAYS_INLINE void release(quay_engine *e, quay_req *r)
{
    if (ql_linked(&r->clink))
        ql_remove(&r->clink);
    if (ql_linked(&r->link))
        ql_remove(&r->link);
    if (r->comm != NULL)
        r->comm->nreqs--;
    r->comm = NULL;
    r->state = QUAY_RS_FREE;
    r->flags = 0;
    r->link.next = (qlink *)e->req_free;
    e->req_free = r;
    e->reqs_used--;
}

/* req_complete's flagged case: queues, releases, the hook, the action. */
void req_complete_rest(quay_engine *e, quay_req *r)
{
    if ((r->flags & RF_COMPLETE_WORK) || r->lkey != 0) {
        /* A cancel of an interest flag still awaiting the receiver's
         * answer is moot once the send is over (it failed): nothing
         * waits on it. */
        r->flags &= ~(uint32_t)RF_ANY_CANCEL;
        if (r->flags & (RF_ON_TXQ | RF_ON_RDMAQ)) {
            /* A failed transfer may complete with packets still unsent. */
            ql_remove(&r->link);
            r->flags &= ~(uint32_t)(RF_ON_TXQ | RF_ON_RDMAQ);
        }
        if (r->lkey != 0 || (r->flags & RF_FIN_OWED))
            rndv_rdma_release(e, r);
        if (r->flags & RF_INTERNAL)
            bsend_release(e, r->bsend_block);
        if (r->flags & RF_COLL) {
            e->coll.hooks->on_req_done(e, r); /* reads the status, then lets it go */
            req_release(e, r);
            return;
        }
        if (r->flags & (RF_USER_FREED | RF_INTERNAL)) {
            req_release(e, r);
            return;
        }
    }
    if (e->complete_actions) {
        r->flags |= RF_ON_CQ;
        ql_push_tail(&e->cq, &r->clink);
    }
}

quay_req *req_by_id(quay_engine *e, uint32_t id)
{
    uint32_t idx = id & REQ_IDX_MASK;
    if (id == 0 || idx >= e->nreqs)
        return NULL;
    quay_req *r = &e->reqs[idx];
    if (r->id != id || r->state == QUAY_RS_FREE)
        return NULL;
    return r;
}

void txq_add(quay_engine *e, quay_req *r)
{
    if (r->flags & RF_ON_TXQ)
        return;
    r->flags |= RF_ON_TXQ;
    ql_push_tail(&e->txq, &r->link);
}

void rdmaq_add(quay_engine *e, quay_req *r)
{
    if (r->flags & RF_ON_RDMAQ)
        return;
    r->flags |= RF_ON_RDMAQ;
    ql_push_tail(&e->rdmaq, &r->link);
    work_rare(e);
}

/* ---- public ------------------------------------------------------------------ */

int quay_req_test(const quay_req *r, quay_status *st)
{
    if (r == NULL || r->state != QUAY_RS_DONE)
        return 0;
    if (st != NULL)
        *st = r->status;
    return 1;
}

int quay_req_free(quay_engine *e, quay_req *r)
{
    if (e == NULL || !req_valid_ptr(e, r) || (r->flags & (RF_INTERNAL | RF_COLL)))
        return QUAY_EINVAL;
    if (r->flags & RF_USER_FREED)
        return QUAY_EINVAL;
    if (r->state == QUAY_RS_DONE) {
        release(e, r);
        return 0;
    }
    r->flags |= RF_USER_FREED;
    return 0;
}

void quay_req_set_user(quay_req *r, void *user)
{
    if (r != NULL)
        r->user = user;
}

void *quay_req_user(const quay_req *r) { return r ? r->user : NULL; }

uint32_t quay_req_id(const quay_req *r) { return r ? r->id : 0; }
