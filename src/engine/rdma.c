/*
 * rdma.c — one-sided transfers (quay_iput / quay_iget): a request that
 * becomes one RDMA_PUT or RDMA_GET action and completes at its op_done.
 *
 * They wait on e->rdmaq (not the packet queue) so that a quiesced channel
 * holds them back like any other sending (context switch C1), and take an
 * outgoing descriptor each, whose token the adapter completes. The peer's
 * key is not checked here: it is the peer's, and the adapter checks it
 * against the peer's table, for this rank (quay_mem_resolve), when it
 * executes the action.
 * To this rank itself nothing travels: the engine resolves its own key
 * and copies at once.
 *
 * Remote atomics (quay_iatomic) ride the same path as an RDMA_ATOMIC
 * action: the target's memory is changed where it lives, by whoever
 * executes the action (a NIC, an adapter), never by the target's host
 * engine; the old value comes back through `local` (8 bytes). The
 * operand and compare value wait in the request's rendezvous fields,
 * which a one-sided request does not otherwise use.
 */
#include "engine/internal.h"

#define ATOMIC_OPERAND(r) ((r)->os.operand)
#define ATOMIC_COMPARE(r) ((r)->os.compare)
#define ATOMIC_OP(r) ((uint32_t)(r)->tag)

static int rdma_post(quay_engine *e, int32_t peer, void *local, size_t len, uint64_t key,
                     uint64_t offset, int mode, quay_req **preq)
{
    if (e == NULL || preq == NULL || (local == NULL && len != 0))
        return QUAY_EINVAL;
    *preq = NULL;
    if (e->fatal)
        return e->fatal;
    if (peer < 0 || peer >= e->nranks)
        return QUAY_ERANK;
    uint32_t cap = mode == RDMA_PUT   ? QUAY_CAP_RDMA_PUT
                   : mode == RDMA_GET ? QUAY_CAP_RDMA_GET
                                      : QUAY_CAP_RDMA_ATOMIC;
    if (peer != e->rank && !(e->cfg.transport_caps & cap))
        return QUAY_ENOTSUP;
    quay_req *r = req_alloc(e, RK_RDMA, NULL);
    if (r == NULL)
        return QUAY_EAGAIN;
    r->peer = peer;
    r->rank = -1;
    r->tag = 0;
    r->mode = (uint8_t)mode;
    r->u.rbuf = local;
    r->len = len;
    r->os.rkey = key;
    r->os.roff = offset;
    r->status.source = peer;
    req_set_state(e, r, QUAY_RS_RDMA);
    *preq = r;
    return 0;
}

/* Queue the action, or to this rank itself do it now. */
static void rdma_go(quay_engine *e, quay_req *r)
{
    if (r->peer != e->rank) {
        rdmaq_add(e, r);
        return;
    }
    void *addr, *local = r->u.rbuf;
    size_t len = r->len;
    int rc;
    if (r->mode == RDMA_ATOMIC) {
        uint64_t old = 0;
        rc = quay_mem_atomic(e, e->rank, r->os.rkey, r->os.roff, ATOMIC_OP(r), ATOMIC_OPERAND(r),
                             ATOMIC_COMPARE(r), &old);
        if (rc == 0)
            memcpy(local, &old, sizeof old);
    } else {
        int put = r->mode == RDMA_PUT;
        rc = quay_mem_resolve(e, e->rank, r->os.rkey, r->os.roff, len,
                              put ? QUAY_MEM_WRITE : QUAY_MEM_READ, &addr);
        if (rc == 0 && len != 0) {
            if (put)
                memmove(addr, local, len);
            else
                memmove(local, addr, len);
        }
    }
    r->status.error = rc;
    r->status.count = rc == 0 ? len : 0;
    req_complete(e, r);
}

int quay_iput(quay_engine *e, int32_t peer, const void *local, size_t len, uint64_t key,
              uint64_t offset, quay_req **preq)
{
    /* The engine never writes through `local` for a put. */
    int rc = rdma_post(e, peer, (void *)(uintptr_t)local, len, key, offset, RDMA_PUT, preq);
    if (rc == 0)
        rdma_go(e, *preq);
    return rc;
}

int quay_iget(quay_engine *e, int32_t peer, void *local, size_t len, uint64_t key,
              uint64_t offset, quay_req **preq)
{
    int rc = rdma_post(e, peer, local, len, key, offset, RDMA_GET, preq);
    if (rc == 0)
        rdma_go(e, *preq);
    return rc;
}

int quay_iatomic(quay_engine *e, int32_t peer, uint32_t op, uint64_t key, uint64_t offset,
                 uint64_t operand, uint64_t compare, uint64_t *result, quay_req **preq)
{
    if (op < QUAY_ATOMIC_FADD || op > QUAY_ATOMIC_CAS || result == NULL) {
        if (preq != NULL)
            *preq = NULL;
        return QUAY_EINVAL;
    }
    int rc = rdma_post(e, peer, result, sizeof *result, key, offset, RDMA_ATOMIC, preq);
    if (rc != 0)
        return rc;
    quay_req *r = *preq;
    r->tag = (int32_t)op;
    ATOMIC_OPERAND(r) = operand;
    ATOMIC_COMPARE(r) = compare;
    rdma_go(e, r);
    return 0;
}

int quay_mem_atomic(quay_engine *e, int32_t peer, uint64_t key, uint64_t offset, uint32_t op,
                    uint64_t operand, uint64_t compare, uint64_t *old)
{
    if (old == NULL || op < QUAY_ATOMIC_FADD || op > QUAY_ATOMIC_CAS)
        return QUAY_EINVAL;
    void *addr;
    int rc = quay_mem_resolve(e, peer, key, offset, sizeof *old,
                              QUAY_MEM_READ | QUAY_MEM_WRITE, &addr);
    if (rc != 0)
        return rc;
    uint64_t w;
    memcpy(&w, addr, sizeof w);
    *old = w;
    if (op == QUAY_ATOMIC_FADD)
        w += operand;
    else if (op == QUAY_ATOMIC_SWAP || w == compare)
        w = operand;
    memcpy(addr, &w, sizeof w);
    return 0;
}

void rdma_emit(quay_req *r, qout *o)
{
    o->peer = r->peer;
    o->req = r;
    r->nout++;
    o->pkt = r->mode == RDMA_PUT   ? QOUT_RDMA_PUT
             : r->mode == RDMA_GET ? QOUT_RDMA_GET
                                   : QOUT_RDMA_ATOMIC;
    o->hdr_len = 0;
    o->payload = r->u.rbuf;
    o->payload_len = r->len;
    o->rkey = r->os.rkey;
    o->roff = r->os.roff;
    r->flags |= RF_ENV_SENT;
}

int rdma_on_done(quay_engine *e, quay_req *r, int status)
{
    (void)e;
    if (status >= 0)
        r->flags |= RF_WIRE_DONE;
    return status;
}

void rdma_fill(quay_engine *e, qout *o, quay_action *a)
{
    memset(a, 0, sizeof *a);
    a->kind = o->pkt == QOUT_RDMA_PUT   ? QUAY_ACT_RDMA_PUT
              : o->pkt == QOUT_RDMA_GET ? QUAY_ACT_RDMA_GET
                                        : QUAY_ACT_RDMA_ATOMIC;
    a->peer = o->peer;
    a->token = out_token(e, o);
    a->rdma.key = o->rkey;
    a->rdma.offset = o->roff;
    a->rdma.local = (void *)(uintptr_t)o->payload;
    a->rdma.len = o->payload_len;
    if (o->pkt == QOUT_RDMA_ATOMIC) {
        const quay_req *r = o->req;
        a->atomic.op = ATOMIC_OP(r);
        a->atomic.operand = ATOMIC_OPERAND(r);
        a->atomic.compare = ATOMIC_COMPARE(r);
    }
}

void rdma_progress(quay_engine *e, quay_req *r)
{
    if (!(r->flags & RF_WIRE_DONE))
        return;
    r->status.count = r->status.error == 0 ? r->len : 0;
    req_complete(e, r);
}
