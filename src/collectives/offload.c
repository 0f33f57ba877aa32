/*
 * offload.c — collectives run by a NIC agent [NIC ch. 3-5].
 *
 * Host (coll_offload = 1): a collective call allocates a record holding
 * its description, emits it once as QUAY_ACT_OFFLOAD and waits; the
 * adapter hands it to the rank's agent (quay_agent_post). The agent is an
 * engine like any other, whose peers are the other ranks' agents: it runs
 * the very schedule the host would have run (coll_launch), progressing on
 * packet arrivals alone, and reports the end with QUAY_ACT_OFFLOAD_DONE,
 * which the adapter gives back to the host (quay_on_offload_done). The
 * host posts once and is told once.
 *
 * Both sides are bounded by coll_max: records on the host, running
 * schedules and pending reports on the agent.
 */
#include "collectives/algs.h"

#include "collectives/ops.h"

typedef struct off_rec {
    qlink link;         /* st->out until emitted, then st->wait */
    quay_offload d;
    quay_req *ureq;
} off_rec;

typedef struct off_report {
    uint64_t cookie;
    int32_t status;
} off_report;

struct coll_offload {
    qlink out, wait;    /* host: records to emit, records emitted */
    off_report *rep;    /* agent: reports to emit, a ring of rep_cap */
    uint32_t rep_head, rep_count, rep_cap;
};


static struct coll_offload *off_state(quay_engine *e)
{
    struct coll_state *cs = coll_install(e);
    if (cs == NULL)
        return NULL;
    if (cs->off != NULL)
        return cs->off;
    struct coll_offload *st = qalloc(e, sizeof *st);
    if (st == NULL)
        return NULL;
    memset(st, 0, sizeof *st);
    ql_init(&st->out);
    ql_init(&st->wait);
    cs->off = st;
    return st;
}

/* The offloading state, NULL if there is none. */
static struct coll_offload *off_find(const quay_engine *e)
{
    return e->coll.st != NULL ? e->coll.st->off : NULL;
}

void offload_fini(quay_engine *e)
{
    struct coll_offload *st = e->coll.st->off;
    if (st == NULL)
        return;
    qlink *n;
    while ((n = ql_first(&st->out)) != NULL || (n = ql_first(&st->wait)) != NULL) {
        ql_remove(n);
        qfree(e, QUAY_CONTAINER_OF(n, off_rec, link));
    }
    qfree(e, st->rep);
    qfree(e, st);
    e->coll.st->off = NULL;
}

/* ---- host ------------------------------------------------------------------------ */

int offload_post(quay_engine *e, quay_comm *c, const quay_offload *d, quay_req **req)
{
    struct coll_offload *st = off_state(e);
    if (st != NULL && e->coll.st->nactive >= e->cfg.coll_max)
        return QUAY_EAGAIN;
    off_rec *rec = st != NULL ? qalloc(e, sizeof *rec) : NULL;
    quay_req *u = rec != NULL ? req_alloc(e, RK_COLL, c) : NULL;
    if (u == NULL) {
        qfree(e, rec);
        return QUAY_EAGAIN;
    }
    ql_init(&rec->link);
    rec->d = *d;
    rec->d.cookie = u->id;
    rec->ureq = u;
    req_set_state(e, u, QUAY_RS_COLL);
    ql_push_tail(&st->out, &rec->link);
    e->coll.nemit++;
    work_rare(e);
    e->coll.st->nactive++; /* the channel is busy until it is done */
    e->st.coll_started++;
    *req = u;
    return 0;
}

int quay_on_offload_done(quay_engine *e, uint64_t cookie, int status)
{
    if (e == NULL)
        return QUAY_EINVAL;
    struct coll_offload *st = off_find(e);
    if (st == NULL)
        return QUAY_ESTATE;
    for (qlink *n = ql_first(&st->wait); n != NULL; n = ql_next(&st->wait, n)) {
        off_rec *rec = QUAY_CONTAINER_OF(n, off_rec, link);
        if (rec->d.cookie != cookie)
            continue;
        ql_remove(&rec->link);
        quay_req *u = rec->ureq;
        qfree(e, rec);
        e->coll.st->nactive--;
        u->status.error = status > 0 ? QUAY_EINVAL : status;
        u->status.count = 0;
        if (u->status.error != 0)
            e->st.coll_failed++;
        req_complete(e, u);
        return 0;
    }
    return QUAY_ESTATE;
}

/* ---- agent ----------------------------------------------------------------------- */

/* Room in the report ring for `need` reports: one for every schedule that
 * may still report and those not yet emitted, made before a schedule
 * starts. It grows by doubling up to coll_max, so an agent's memory
 * follows what it runs, not the configured bound (a ring of coll_max made
 * at once was 1 MiB with coll_max = 65,536: fuzz_engine). */
static int rep_reserve(quay_engine *e, struct coll_offload *st, uint32_t need)
{
    if (need <= st->rep_cap)
        return 0;
    uint32_t cap = st->rep_cap ? st->rep_cap : 8;
    while (cap < need)
        cap = cap > UINT32_MAX / 2 ? UINT32_MAX : cap * 2;
    if (cap > e->cfg.coll_max)
        cap = e->cfg.coll_max;
    if (cap < need)
        return -1; /* (the caller's coll_max check comes first) */
    off_report *rep = qalloc(e, (size_t)cap * sizeof *rep);
    if (rep == NULL)
        return -1;
    for (uint32_t i = 0; i < st->rep_count; i++)
        rep[i] = st->rep[(st->rep_head + i) % st->rep_cap];
    qfree(e, st->rep);
    st->rep = rep;
    st->rep_head = 0;
    st->rep_cap = cap;
    return 0;
}

void offload_report(quay_engine *e, uint64_t cookie, int status)
{
    struct coll_offload *st = e->coll.st->off;
    /* A slot per running schedule (rep_reserve at the post): never full. */
    off_report *r = &st->rep[(st->rep_head + st->rep_count) % st->rep_cap];
    r->cookie = cookie;
    r->status = status;
    st->rep_count++;
    e->coll.nemit++;
    work_rare(e);
}

int quay_agent_post(quay_engine *e, const quay_offload *d)
{
    /* The algorithm as a config's: AUTO or registered for the kind. */
    if (e == NULL || d == NULL || !coll_alg_known(d->kind, d->alg) || d->size <= 0 ||
        d->size > e->nranks || d->world == NULL || (d->ctx & QUAY_CTX_COLL))
        return QUAY_EINVAL;
    if (e->fatal)
        return e->fatal;
    const coll_op *op = coll_op_find(d->kind);
    int rc = op->check != NULL ? op->check(e, d) : 0;
    if (rc != 0)
        return rc;
    struct coll_offload *st = off_state(e);
    if (st == NULL || e->coll.st->nactive + st->rep_count >= e->cfg.coll_max ||
        rep_reserve(e, st, e->coll.st->nactive + st->rep_count + 1) != 0)
        return QUAY_EAGAIN;
    quay_comm *c = comm_lookup(e, d->ctx);
    if (c == NULL) {
        rc = comm_create(e, d->ctx, d->size, d->world, 0, &c);
        if (rc != 0)
            return rc;
    } else if (c->size != d->size) {
        return QUAY_ECOMM;
    }
    quay_req *u;
    return coll_launch(e, c, op, d, 1, &u);
}

/* ---- actions (both sides) -------------------------------------------------------- */

int offload_emit(quay_engine *e, quay_action *a)
{
    struct coll_offload *st = e->coll.st->off;
    if (st == NULL)
        return 0;
    qlink *n = ql_first(&st->out);
    memset(a, 0, sizeof *a);
    if (n != NULL) {
        off_rec *rec = QUAY_CONTAINER_OF(n, off_rec, link);
        ql_remove(n);
        ql_push_tail(&st->wait, n);
        a->kind = QUAY_ACT_OFFLOAD;
        a->peer = e->rank;
        a->offload.desc = &rec->d;
        a->offload.cookie = rec->d.cookie;
    } else if (st->rep_count != 0) {
        off_report *r = &st->rep[st->rep_head];
        st->rep_head = (st->rep_head + 1) % st->rep_cap;
        st->rep_count--;
        a->kind = QUAY_ACT_OFFLOAD_DONE;
        a->peer = e->rank;
        a->offload.cookie = r->cookie;
        a->offload.status = r->status;
    } else {
        return 0;
    }
    e->coll.nemit--;
    return 1;
}
