/*
 * bypass.c — application-bypass broadcast [NIC ch. 6] and reduce, eager
 * and rendezvous sizes alike (coll_bypass).
 *
 * A broadcast's messages carry the sub-tag CS_BYPASS_BCAST + root. When
 * one arrives on a communicator's collective twin for a broadcast this
 * rank has not called yet (no schedule with its sequence number), the
 * engine starts the rank's part of the broadcast from the arrival alone:
 * the message length sizes a staging buffer, the root gives the tree, the
 * receive is posted (an eager message is already here; a rendezvous one
 * is pulled now, without the application), and the data is forwarded to
 * the children as soon as it is in. The copy into the application's
 * buffer waits for its call (the schedule's gate); the call finds the
 * early schedule by sequence number and only opens the gate.
 *
 * A reduce's partial results carry CS_BYPASS_REDUCE | op << 4 | type
 * (predefined ops only: a user function comes with the call). The first
 * one to arrive at a rank not yet called starts the rank's part: the
 * children's results are received (pulled, if rendezvous) and folded as
 * they come; the call puts its own operand in front and sends the result
 * on (reduce.c).
 *
 * An early schedule that fails before its call (a peer died) stays where
 * the call finds it, which then completes at once with the error.
 *
 * Arrivals are noted inside the packet path and acted on from the
 * engine's progress (no recursion); at most coll_max schedules run, so a
 * burst beyond it is simply not bypassed: the call takes those messages
 * the ordinary way. Senders ask, with a NOTIFY action, to wake the host
 * of a child that forwards in turn: signal-free for the engine, a hint
 * for an embedder whose host may be busy elsewhere.
 */
#include "collectives/coll.h"

#include "collectives/ops.h"
#include "collectives/tree.h"

typedef struct cand {
    quay_comm *twin;
    int32_t tag;
    uint64_t len;
} cand;

struct coll_bypass {
    cand *c;              /* arrivals to act on, a ring */
    uint32_t head, count, cap;
    int32_t *notify;      /* NOTIFY actions to emit, a ring */
    uint32_t nhead, ncount;
};

void bypass_arrival(quay_engine *e, quay_comm *twin, const struct quay_msg *m)
{
    struct coll_bypass *b = e->coll.st->byp;
    uint32_t sub = (uint32_t)m->tag & CS_SUBTAG_LIMIT;
    if (sub < CS_BYPASS_BCAST || b->count == b->cap)
        return; /* not a broadcast's, or too many at once: the call takes it */
    cand *c = &b->c[(b->head + b->count++) % b->cap];
    c->twin = twin;
    c->tag = m->tag;
    c->len = m->len;
    e->coll.npend++;
    work_rare(e);
}

int bypass_attach(quay_engine *e)
{
    if (e->coll.st->byp != NULL)
        return 0;
    struct coll_bypass *b = qalloc(e, sizeof *b);
    uint32_t cap = 2 * e->cfg.coll_max;
    cand *c = qalloc(e, (size_t)cap * sizeof *c);
    int32_t *nt = qalloc(e, (size_t)cap * sizeof *nt);
    if (b == NULL || c == NULL || nt == NULL) {
        qfree(e, b);
        qfree(e, c);
        qfree(e, nt);
        return QUAY_ENOMEM;
    }
    memset(b, 0, sizeof *b);
    b->c = c;
    b->notify = nt;
    b->cap = cap;
    e->coll.st->byp = b;
    return 0;
}

void bypass_fini(quay_engine *e)
{
    struct coll_bypass *b = e->coll.st->byp;
    if (b == NULL)
        return;
    qfree(e, b->c);
    qfree(e, b->notify);
    qfree(e, b);
    e->coll.st->byp = NULL;
}

static quay_comm *parent_of(quay_engine *e, const quay_comm *twin)
{
    for (uint32_t i = 0; i < e->ncomms_max; i++)
        if (e->comms[i].in_use && e->comms[i].coll == twin)
            return &e->comms[i];
    return NULL;
}

static coll_sched *find_sched(quay_engine *e, const quay_comm *twin, uint32_t tagbase)
{
    for (qlink *n = ql_first(&e->coll.st->active); n != NULL; n = ql_next(&e->coll.st->active, n)) {
        coll_sched *s = QUAY_CONTAINER_OF(n, coll_sched, link);
        if (s->comm == twin && s->tagbase == tagbase)
            return s;
    }
    return NULL;
}

/* An early schedule takes a collective slot before its call. It may
 * not take the last one: the application's own earlier call could then
 * never start, and the early schedule waits for a later call of that
 * same application — a deadlock. Without room the arrival just waits
 * for its call, as without bypass. */
static int early_room(const quay_engine *e)
{
    return e->coll.st->nactive + 1 < e->cfg.coll_max;
}

/* An early broadcast: the root from the sub-tag, the length from the
 * arrival. NULL if it is not ours to forward. */
static coll_sched *early_bcast(quay_engine *e, quay_comm *user, uint32_t sub, uint64_t len)
{
    int32_t root = (int32_t)(sub - CS_BYPASS_BCAST);
    if (root >= user->size || root == user->myrank || !early_room(e))
        return NULL;
    int rc;
    coll_sched *s = sched_new(e, user, &rc);
    if (s == NULL)
        return NULL;
    s->bypass_kind = QUAY_OFF_BCAST;
    s->bypass_len = (size_t)len;
    s->bypass_root = root;
    coll_build_bcast_bypass(s, (size_t)len, root, 1);
    return s;
}

/* An early reduce: op and type from the sub-tag (checked: they come from
 * the wire), the count from the length. Only a rank with children in the
 * tree receives partial results. */
static coll_sched *early_reduce(quay_engine *e, quay_comm *user, uint32_t sub, uint64_t len)
{
    uint32_t code = sub - CS_BYPASS_REDUCE;
    quay_op op = {(quay_op_kind)(code >> 4), 1, NULL, NULL};
    quay_dtype dt = (quay_dtype)(code & 0xF);
    int32_t kids[32];
    if (code > 0xFF || op.kind == QUAY_OP_USER || op_check(&op, dt) != 0 || len == 0 ||
        len % op_dtype_size(dt) != 0 ||
        tree_binomial_children(user->myrank, user->size, kids, 32) == 0 || !early_room(e))
        return NULL;
    int rc;
    coll_sched *s = sched_new(e, user, &rc);
    if (s == NULL)
        return NULL;
    s->bypass_kind = QUAY_OFF_REDUCE;
    s->bypass_len = (size_t)len;
    s->op = op;
    s->dt = dt;
    s->esize = op_dtype_size(dt);
    coll_build_reduce_bypass(s, (size_t)len / s->esize, -1, 0, 1);
    return s;
}

/* Start the collectives whose data came before their call. */
void bypass_dispatch(quay_engine *e)
{
    struct coll_bypass *b = e->coll.st->byp;
    while (b != NULL && b->count != 0) {
        cand c = b->c[b->head];
        b->head = (b->head + 1) % b->cap;
        b->count--;
        e->coll.npend--;
        uint32_t tagbase = (uint32_t)c.tag & ~CS_SUBTAG_LIMIT;
        uint32_t sub = (uint32_t)c.tag & CS_SUBTAG_LIMIT;
        quay_comm *user = parent_of(e, c.twin);
        /* (the length comes from the wire: staging is bounded like any
         * unexpected data) */
        if (user == NULL || c.len > e->cfg.unexpected_bytes_max ||
            find_sched(e, c.twin, tagbase) != NULL || e->coll.st->nactive >= e->cfg.coll_max)
            continue; /* taken, or no room: the call does it */
        coll_sched *s = sub >= CS_BYPASS_REDUCE ? early_reduce(e, user, sub, c.len)
                                                : early_bcast(e, user, sub, c.len);
        if (s != NULL)
            sched_start_early(s, tagbase);
    }
}

int bypass_applies(const quay_engine *e, const quay_comm *c, const quay_offload *d)
{
    if (!e->cfg.coll_bypass)
        return 0;
    if (d->kind == QUAY_OFF_BCAST)
        return (uint32_t)c->size <= CS_BYPASS_REDUCE - CS_BYPASS_BCAST; /* root in the sub-tag */
    return d->kind == QUAY_OFF_REDUCE && d->op.kind != QUAY_OP_USER;
}

/* The call agrees with what the arrival said. */
static int bypass_agrees(const coll_sched *s, const quay_offload *d)
{
    if (s->bypass_kind != d->kind)
        return 0;
    if (d->kind == QUAY_OFF_BCAST)
        return s->bypass_root == d->root && s->bypass_len == d->count;
    return s->op.kind == d->op.kind && s->dt == d->dt &&
           s->bypass_len / s->esize == d->count && s->bypass_len % s->esize == 0;
}

/* The call of a broadcast or reduce: the early schedule of its sequence
 * number, if its data came first. */
int bypass_claim(quay_engine *e, quay_comm *c, const quay_offload *d, quay_req **req)
{
    if (c->coll == NULL)
        return 0;
    uint32_t tagbase = (c->coll_seq & 0xFFFFu) << 15;
    for (qlink *n = ql_first(&e->coll.st->early); n != NULL; n = ql_next(&e->coll.st->early, n)) {
        coll_sched *s = QUAY_CONTAINER_OF(n, coll_sched, elink);
        if (s->comm != c->coll || s->tagbase != tagbase)
            continue;
        if (!bypass_agrees(s, d))
            return QUAY_EINVAL; /* the members disagree: an erroneous program */
        *req = s->ureq;
        if (d->kind == QUAY_OFF_REDUCE) {
            s->sbuf = d->sbuf == QUAY_IN_PLACE ? NULL : d->sbuf;
            if (!s->ended)
                coll_reduce_bypass_claim(s, d->root, d->sbuf == QUAY_IN_PLACE);
        }
        sched_claim(s, d->rbuf);
        return 1;
    }
    return 0;
}

void coll_notify(quay_engine *e, int32_t peer)
{
    struct coll_bypass *b = e->coll.st->byp;
    if (b == NULL || b->ncount == b->cap)
        return; /* a hint */
    b->notify[(b->nhead + b->ncount++) % b->cap] = peer;
    e->coll.nemit++;
    work_rare(e);
}

int bypass_emit(quay_engine *e, quay_action *a)
{
    struct coll_bypass *b = e->coll.st->byp;
    if (b == NULL || b->ncount == 0)
        return 0;
    memset(a, 0, sizeof *a);
    a->kind = QUAY_ACT_NOTIFY;
    a->peer = b->notify[b->nhead];
    b->nhead = (b->nhead + 1) % b->cap;
    b->ncount--;
    e->coll.nemit--;
    return 1;
}
