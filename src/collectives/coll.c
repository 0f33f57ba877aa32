/*
 * coll.c — the collective calls: argument checks, then the algorithm the
 * registry decides (algs.c), built and started.
 */
#include "collectives/algs.h"

#include "collectives/ops.h"

static int comm_usable(const quay_engine *e, const quay_comm *c)
{
    return c != NULL && c >= e->comms && c < e->comms + e->ncomms_max && c->in_use &&
           !c->internal;
}

static int common_args(quay_engine *e, quay_comm *c, quay_req **req)
{
    if (e == NULL || req == NULL)
        return QUAY_EINVAL;
    *req = NULL;
    if (e->fatal)
        return e->fatal;
    if (!comm_usable(e, c))
        return QUAY_EINVAL;
    return 0;
}

/* ---- building from a description ------------------------------------------------ */

/* Build and start the schedule of collective d on communicator c (the
 * host's own, or an agent's). offloaded: an agent's schedule, whose end
 * is reported with d->cookie instead of completing a user request. A
 * spare schedule built for the same shape is started as it is. */
int coll_launch(quay_engine *e, quay_comm *c, const quay_offload *d, int offloaded,
                quay_req **req)
{
    int in_place = d->sbuf == QUAY_IN_PLACE;
    int bypass = !offloaded && bypass_applies(e, c, d);
    int reduction = d->kind == QUAY_OFF_REDUCE || d->kind == QUAY_OFF_ALLREDUCE;
    coll_args args = {
        .count = d->count,
        .esize = reduction ? op_dtype_size(d->dt) : 0,
        .size = c->size,
        .root = d->kind == QUAY_OFF_BARRIER ? 0 : d->root,
        .degree = e->cfg.coll_tree_degree,
        .in_place = (uint8_t)in_place,
        .commutative = (uint8_t)(reduction && op_commutative(&d->op)),
    };
    const coll_alg *g = coll_alg_decide(d->kind, d->alg, &args);
    if (g == NULL)
        return QUAY_EINVAL; /* (config and agent posts are checked before) */

    coll_shape shape;
    memset(&shape, 0, sizeof shape);
    shape.kind = d->kind;
    shape.alg = g->id;
    shape.ctx = c->ctx;
    shape.size = c->size;
    shape.rank = c->myrank;
    shape.count = d->count;
    if (d->kind != QUAY_OFF_BARRIER) {
        shape.root = d->root;
        shape.dt = d->dt;
        shape.in_place = (uint8_t)in_place;
        shape.commutative = args.commutative;
    }

    int rc;
    /* Bypass schedules are never reused: their gate and early start
     * depend on arrivals. */
    coll_sched *s = sched_new_shaped(e, c, bypass ? NULL : &shape, &rc);
    if (s == NULL)
        return rc;
    s->offloaded = (uint8_t)offloaded;
    s->cookie = d->cookie;
    if (d->kind == QUAY_OFF_BCAST) {
        s->rbuf = d->rbuf;
        s->sbuf = d->rbuf;
    } else if (d->kind != QUAY_OFF_BARRIER) {
        s->op = d->op;
        s->dt = d->dt;
        s->esize = args.esize;
        s->sbuf = in_place ? NULL : d->sbuf;
        s->rbuf = d->rbuf;
    }
    if (!s->reused) {
        if (bypass && d->kind == QUAY_OFF_BCAST)
            coll_build_bcast_bypass(s, d->count, d->root, 0);
        else if (bypass)
            coll_build_reduce_bypass(s, d->count, d->root, in_place, 0);
        else
            coll_alg_build(g, s, &args);
        if (!bypass)
            s->shape = shape; /* (a build that failed is discarded with it) */
    }
    return sched_start(s, req);
}

/* The call's description: run here, or hand it to the NIC agent. */
static int coll_call(quay_engine *e, quay_comm *c, quay_offload *d, quay_req **req)
{
    d->ctx = c->ctx;
    d->size = c->size;
    d->world = c->world;
    if (e->cfg.coll_offload)
        return offload_post(e, c, d, req);
    if (d->count != 0 && bypass_applies(e, c, d)) {
        int rc = bypass_claim(e, c, d, req);
        if (rc != 0)
            return rc < 0 ? rc : 0; /* its data came first: already on its way */
    }
    return coll_launch(e, c, d, 0, req);
}

/* ---- calls ---------------------------------------------------------------------- */

int quay_ibarrier(quay_engine *e, quay_comm *c, quay_req **req)
{
    int rc = common_args(e, c, req);
    if (rc != 0)
        return rc;
    quay_offload d = {.kind = QUAY_OFF_BARRIER, .alg = e->cfg.coll_barrier};
    return coll_call(e, c, &d, req);
}

int quay_ibcast(quay_engine *e, quay_comm *c, void *buf, size_t len, int32_t root,
                quay_req **req)
{
    int rc = common_args(e, c, req);
    if (rc != 0)
        return rc;
    if (buf == NULL && len != 0)
        return QUAY_EINVAL;
    if (root < 0 || root >= c->size)
        return QUAY_ERANK;
    quay_offload d = {.kind = QUAY_OFF_BCAST, .root = root, .rbuf = buf, .count = len,
                      .alg = e->cfg.coll_bcast};
    return coll_call(e, c, &d, req);
}

/* Checks shared by reduce and allreduce. */
static int reduce_args(quay_engine *e, quay_comm *c, const void *sbuf, const void *rbuf,
                       size_t count, quay_dtype dt, const quay_op *op, int need_rbuf,
                       quay_req **req)
{
    int rc = common_args(e, c, req);
    if (rc != 0)
        return rc;
    if (op == NULL || op_check(op, dt) != 0)
        return QUAY_EINVAL;
    size_t es = op_dtype_size(dt);
    if (count > SIZE_MAX / es / 4)
        return QUAY_EINVAL; /* temporaries are a few times the data */
    if (count != 0 && (sbuf == NULL || (need_rbuf && rbuf == NULL)))
        return QUAY_EINVAL;
    if (sbuf == QUAY_IN_PLACE && (!need_rbuf || rbuf == NULL))
        return QUAY_EINVAL;
    return 0;
}

int quay_ireduce(quay_engine *e, quay_comm *c, const void *sbuf, void *rbuf, size_t count,
                 quay_dtype dt, const quay_op *op, int32_t root, quay_req **req)
{
    int rc = common_args(e, c, req);
    if (rc != 0)
        return rc;
    if (root < 0 || root >= c->size)
        return QUAY_ERANK;
    rc = reduce_args(e, c, sbuf, rbuf, count, dt, op, root == c->myrank, req);
    if (rc != 0)
        return rc;
    quay_offload d = {.kind = QUAY_OFF_REDUCE, .root = root, .sbuf = sbuf, .rbuf = rbuf,
                      .count = count, .dt = dt, .op = *op, .alg = e->cfg.coll_reduce};
    return coll_call(e, c, &d, req);
}

int quay_iallreduce(quay_engine *e, quay_comm *c, const void *sbuf, void *rbuf, size_t count,
                    quay_dtype dt, const quay_op *op, quay_req **req)
{
    int rc = reduce_args(e, c, sbuf, rbuf, count, dt, op, 1, req);
    if (rc != 0)
        return rc;
    quay_offload d = {.kind = QUAY_OFF_ALLREDUCE, .sbuf = sbuf, .rbuf = rbuf,
                      .count = count, .dt = dt, .op = *op, .alg = e->cfg.coll_allreduce};
    return coll_call(e, c, &d, req);
}
