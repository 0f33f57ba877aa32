/*
 * coll.c — what every collective call shares: argument checks, the
 * decision (algs.c) and the schedule built and started, here or on the
 * NIC agent. Each operation's own call, checks and choice live in its
 * file (barrier.c, bcast.c, reduce.c, allreduce.c), reached through its
 * coll_op.
 */
#include "collectives/algs.h"

#include "collectives/ops.h"

static int comm_usable(const quay_engine *e, const quay_comm *c)
{
    return c != NULL && c >= e->comms && c < e->comms + e->ncomms_max && c->in_use &&
           !c->internal;
}

int coll_call_args(quay_engine *e, quay_comm *c, quay_req **req)
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
int coll_launch(quay_engine *e, quay_comm *c, const coll_op *op, const quay_offload *d,
                int offloaded, quay_req **req)
{
    int bypass = !offloaded && bypass_applies(e, c, d);
    coll_args args = {
        .count = d->count,
        .size = c->size,
        .degree = e->cfg.coll_tree_degree,
    };
    if (op->args != NULL)
        op->args(d, &args);

    /* The shape is what the call asked for: the decision and the build
     * are functions of it, so a spare schedule of the same shape skips
     * both. */
    coll_shape shape;
    memset(&shape, 0, sizeof shape);
    shape.kind = d->kind;
    shape.alg = d->alg;
    shape.ctx = c->ctx;
    shape.size = c->size;
    shape.rank = c->myrank;
    shape.count = d->count;
    shape.root = args.root;
    shape.dt = args.dt;
    shape.in_place = args.in_place;
    shape.commutative = args.commutative;

    int rc;
    /* Bypass schedules are never reused: their gate and early start
     * depend on arrivals. */
    coll_sched *s = sched_new_shaped(e, c, bypass ? NULL : &shape, &rc);
    if (s == NULL)
        return rc;
    s->offloaded = (uint8_t)offloaded;
    s->cookie = d->cookie;
    if (op->bind != NULL)
        op->bind(s, d, &args);
    if (!s->reused) {
        const coll_alg *g = coll_alg_decide(op, d->alg, &args);
        if (g == NULL) {
            sched_discard(s);
            return QUAY_EINVAL; /* (config and agent posts are checked before) */
        }
        if (bypass && d->kind == QUAY_OFF_BCAST)
            coll_build_bcast_bypass(s, d->count, d->root, 0);
        else if (bypass)
            coll_build_reduce_bypass(s, d->count, d->root, args.in_place, 0);
        else
            coll_alg_build(op, g, s, &args);
        if (!bypass)
            s->shape = shape; /* (a build that failed is discarded with it) */
    }
    return sched_start(s, req);
}

int coll_call(quay_engine *e, quay_comm *c, const coll_op *op, quay_offload *d,
              quay_req **req)
{
    d->kind = (quay_offload_kind)op->kind;
    d->alg = op->configured(&e->cfg);
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
    return coll_launch(e, c, op, d, 0, req);
}

/* ---- what the reductions share ------------------------------------------------ */

int coll_reduce_args(quay_engine *e, quay_comm *c, const void *sbuf, const void *rbuf,
                     size_t count, quay_dtype dt, const quay_op *op, int need_rbuf,
                     quay_req **req)
{
    int rc = coll_call_args(e, c, req);
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

/* The operand, as quay_ireduce / quay_iallreduce want it: there, or
 * QUAY_IN_PLACE where the result lands. */
int coll_reduce_post_check(const quay_offload *d, int need_rbuf)
{
    if ((d->count != 0 && d->sbuf == NULL) ||
        (d->sbuf == QUAY_IN_PLACE && (!need_rbuf || d->rbuf == NULL)))
        return QUAY_EINVAL;
    return 0;
}

void coll_reduce_fill_args(const quay_offload *d, coll_args *a)
{
    a->dt = d->dt;
    a->esize = op_dtype_size(d->dt);
    a->in_place = d->sbuf == QUAY_IN_PLACE;
    a->commutative = (uint8_t)op_commutative(&d->op);
}

void coll_reduce_bind(coll_sched *s, const quay_offload *d, const coll_args *a)
{
    s->op = d->op;
    s->dt = d->dt;
    s->esize = a->esize;
    s->sbuf = a->in_place ? NULL : d->sbuf;
    s->rbuf = d->rbuf;
}

void coll_reduce_trivial(coll_sched *s, const coll_args *a)
{
    if (!a->in_place && a->count != 0)
        cs_copy(s, CB_RECV, 0, CB_SEND, 0, a->count * s->esize);
}
