/*
 * bypass.c — application-bypass broadcast [NIC ch. 6], eager and
 * rendezvous sizes alike (coll_bypass).
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
 * Arrivals are noted inside the packet path and acted on from the
 * engine's progress (no recursion); at most coll_max schedules run, so a
 * burst beyond it is simply not bypassed: the call takes those messages
 * the ordinary way. Senders ask, with a NOTIFY action, to wake the host
 * of a child that forwards in turn: signal-free for the engine, a hint
 * for an embedder whose host may be busy elsewhere.
 */
#include "collectives/coll.h"

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

static void bypass_arrival(quay_engine *e, quay_comm *twin, const struct quay_msg *m)
{
    struct coll_bypass *b = e->coll_byp;
    uint32_t sub = (uint32_t)m->tag & CS_SUBTAG_LIMIT;
    if (sub < CS_BYPASS_BCAST || b->count == b->cap)
        return; /* not a broadcast's, or too many at once: the call takes it */
    cand *c = &b->c[(b->head + b->count++) % b->cap];
    c->twin = twin;
    c->tag = m->tag;
    c->len = m->len;
    e->coll_npend++;
}

int bypass_attach(quay_engine *e)
{
    if (e->coll_byp != NULL)
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
    e->coll_byp = b;
    e->coll_arrival = bypass_arrival;
    return 0;
}

void bypass_fini(quay_engine *e)
{
    struct coll_bypass *b = e->coll_byp;
    if (b == NULL)
        return;
    qfree(e, b->c);
    qfree(e, b->notify);
    qfree(e, b);
    e->coll_byp = NULL;
    e->coll_arrival = NULL;
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
    for (qlink *n = ql_first(&e->coll_active); n != NULL; n = ql_next(&e->coll_active, n)) {
        coll_sched *s = QUAY_CONTAINER_OF(n, coll_sched, link);
        if (s->comm == twin && s->tagbase == tagbase)
            return s;
    }
    return NULL;
}

/* Start the broadcasts whose data came before their call. */
void bypass_dispatch(quay_engine *e)
{
    struct coll_bypass *b = e->coll_byp;
    while (b != NULL && b->count != 0) {
        cand c = b->c[b->head];
        b->head = (b->head + 1) % b->cap;
        b->count--;
        e->coll_npend--;
        uint32_t tagbase = (uint32_t)c.tag & ~CS_SUBTAG_LIMIT;
        int32_t root = (int32_t)(((uint32_t)c.tag & CS_SUBTAG_LIMIT) - CS_BYPASS_BCAST);
        quay_comm *user = parent_of(e, c.twin);
        /* (the length comes from the wire: staging is bounded like any
         * unexpected data) */
        if (user == NULL || root >= user->size || root == user->myrank ||
            c.len > e->cfg.unexpected_bytes_max ||
            find_sched(e, c.twin, tagbase) != NULL || e->coll_nactive >= e->cfg.coll_max)
            continue; /* taken, not ours to forward, or no room: the call does it */
        int rc;
        coll_sched *s = sched_new(e, user, &rc);
        if (s == NULL)
            continue;
        s->bypass_len = (size_t)c.len;
        s->bypass_root = root;
        coll_build_bcast_bypass(s, (size_t)c.len, root, 1);
        sched_start_early(s, tagbase);
    }
}

/* The call of a broadcast: the early schedule of its sequence number, if
 * its data came first. 1 and *req if claimed; 0 if there is none;
 * QUAY_EINVAL if the arrival disagrees with the call (root, length). */
int bypass_claim(quay_engine *e, quay_comm *c, void *buf, size_t len, int32_t root,
                 quay_req **req)
{
    if (c->coll == NULL)
        return 0;
    uint32_t tagbase = (c->coll_seq & 0xFFFFu) << 15;
    for (qlink *n = ql_first(&e->coll_early); n != NULL; n = ql_next(&e->coll_early, n)) {
        coll_sched *s = QUAY_CONTAINER_OF(n, coll_sched, elink);
        if (s->comm != c->coll || s->tagbase != tagbase)
            continue;
        if (s->bypass_root != root || s->bypass_len != len)
            return QUAY_EINVAL; /* the members disagree: an erroneous program */
        *req = s->ureq;
        sched_claim(s, buf);
        return 1;
    }
    return 0;
}

void coll_notify(quay_engine *e, int32_t peer)
{
    struct coll_bypass *b = e->coll_byp;
    if (b == NULL || b->ncount == b->cap)
        return; /* a hint */
    b->notify[(b->nhead + b->ncount++) % b->cap] = peer;
    e->coll_nemit++;
}

int bypass_emit(quay_engine *e, quay_action *a)
{
    struct coll_bypass *b = e->coll_byp;
    if (b == NULL || b->ncount == 0)
        return 0;
    memset(a, 0, sizeof *a);
    a->kind = QUAY_ACT_NOTIFY;
    a->peer = b->notify[b->nhead];
    b->nhead = (b->nhead + 1) % b->cap;
    b->ncount--;
    e->coll_nemit--;
    return 1;
}
