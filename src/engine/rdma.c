/*
 * rdma.c — one-sided transfers (quay_iput / quay_iget): a request that
 * becomes one RDMA_PUT or RDMA_GET action and completes at its op_done.
 *
 * They wait on e->rdmaq (not the packet queue) so that a quiesced channel
 * holds them back like any other sending (context switch C1), and take an
 * outgoing descriptor each, whose token the adapter completes. The peer's
 * key is not checked here: it is the peer's, and the adapter checks it
 * against the peer's table (quay_mem_resolve) when it executes the action.
 * To this rank itself nothing travels: the engine resolves its own key
 * and copies at once.
 */
#include "engine/internal.h"

static int rdma_post(quay_engine *e, int32_t peer, void *local, size_t len, uint64_t key,
                     uint64_t offset, int put, quay_req **preq)
{
    if (e == NULL || preq == NULL || (local == NULL && len != 0))
        return QUAY_EINVAL;
    *preq = NULL;
    if (e->fatal)
        return e->fatal;
    if (peer < 0 || peer >= e->nranks)
        return QUAY_ERANK;
    uint32_t cap = put ? QUAY_CAP_RDMA_PUT : QUAY_CAP_RDMA_GET;
    if (peer != e->rank && !(e->cfg.transport_caps & cap))
        return QUAY_ENOTSUP;
    quay_req *r = req_alloc(e, RK_RDMA, NULL);
    if (r == NULL)
        return QUAY_EAGAIN;
    r->peer = peer;
    r->rank = -1;
    r->tag = 0;
    r->mode = (uint8_t)put;
    r->u.rbuf = local;
    r->len = len;
    r->rkey = key;
    r->roff = offset;
    r->status.source = peer;
    req_set_state(e, r, QUAY_RS_RDMA);
    *preq = r;
    if (peer != e->rank) {
        rdmaq_add(e, r);
        return 0;
    }
    void *addr;
    int rc = quay_mem_resolve(e, key, offset, len, put ? QUAY_MEM_WRITE : QUAY_MEM_READ, &addr);
    if (rc == 0 && len != 0) {
        if (put)
            memmove(addr, local, len);
        else
            memmove(local, addr, len);
    }
    r->status.error = rc;
    r->status.count = rc == 0 ? len : 0;
    req_complete(e, r);
    return 0;
}

int quay_iput(quay_engine *e, int32_t peer, const void *local, size_t len, uint64_t key,
              uint64_t offset, quay_req **preq)
{
    /* The engine never writes through `local` for a put. */
    return rdma_post(e, peer, (void *)(uintptr_t)local, len, key, offset, 1, preq);
}

int quay_iget(quay_engine *e, int32_t peer, void *local, size_t len, uint64_t key,
              uint64_t offset, quay_req **preq)
{
    return rdma_post(e, peer, local, len, key, offset, 0, preq);
}

void rdma_emit(quay_req *r, qout *o)
{
    o->peer = r->peer;
    o->req = r;
    r->nout++;
    o->pkt = r->mode ? QOUT_RDMA_PUT : QOUT_RDMA_GET;
    o->hdr_len = 0;
    o->payload = r->u.rbuf;
    o->payload_len = r->len;
    o->rkey = r->rkey;
    o->roff = r->roff;
    r->flags |= RF_ENV_SENT;
}

void rdma_fill(quay_engine *e, qout *o, quay_action *a)
{
    memset(a, 0, sizeof *a);
    a->kind = o->pkt == QOUT_RDMA_PUT ? QUAY_ACT_RDMA_PUT : QUAY_ACT_RDMA_GET;
    a->peer = o->peer;
    a->token = out_token(e, o);
    a->rdma.key = o->rkey;
    a->rdma.offset = o->roff;
    a->rdma.local = (void *)(uintptr_t)o->payload;
    a->rdma.len = o->payload_len;
}

void rdma_progress(quay_engine *e, quay_req *r)
{
    if (!(r->flags & RF_WIRE_DONE))
        return;
    r->status.count = r->status.error == 0 ? r->len : 0;
    req_complete(e, r);
}
